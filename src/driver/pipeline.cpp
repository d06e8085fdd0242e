// The compiler pipeline, in order: a table of contents of wavec (architecture.md).
//
//   1. read      the .wave file
//   2. parse     text -> AST (syntax errors located, several per run)
//   3. sema      names, -D bindings, types and shapes, constraints -> kernel graph IR
//   4. distribute constraints -> grid, block, per-access index expressions
//   5. emit      the requested dump, or the code object (MLIR, LLVM IR, ISA, HSACO, PTX, cubin)
//                through the code generator library, loaded on demand (codegen/codegen_api.h)
//   6. host API  the generated C header and stub around that code object (--header, --stub)
//
// Nothing is written unless every stage succeeded: outputs go to a temporary file that is
// renamed into place at the end.
#include "codegen/backend_loader.h"
#include "codegen/host_api.h"
#include "driver/options.h"
#include "frontend/parser.h"
#include "passes/distribution.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <memory>

namespace wave {

namespace {

bool readFile(const std::string &path, std::string &text, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    error = "read error";
    return false;
  }
  text = ss.str();
  return true;
}

// Writes several outputs all or nothing: every temporary file first, then the renames.
bool writeOutputs(const std::vector<std::pair<std::string, std::string>> &outputs,
                  std::string &failedPath, std::string &error) {
  std::vector<std::pair<std::string, std::string>> written; // temp, final
  auto cleanup = [&] {
    for (const auto &[tmp, path] : written)
      std::remove(tmp.c_str());
  };
  for (const auto &[path, text] : outputs) {
    if (path.empty() || path == "-") {
      std::fwrite(text.data(), 1, text.size(), stdout);
      continue;
    }
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      error = std::strerror(errno);
      failedPath = path;
      std::remove(tmp.c_str());
      cleanup();
      return false;
    }
    written.push_back({tmp, path});
  }
  for (const auto &[tmp, path] : written) {
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      error = std::strerror(errno);
      failedPath = path;
      cleanup();
      return false;
    }
  }
  return true;
}

std::string baseName(const std::string &path) { return path.substr(path.rfind('/') + 1); }

// The include guard of a generated header: WAVEC_<NAME>_ in upper case.
std::string includeGuard(const std::string &headerPath) {
  std::string g = "WAVEC_";
  for (char c : baseName(headerPath))
    g += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
  return g + "_";
}

bool isCodeOutput(EmitKind k) {
  return k == EmitKind::Default || k == EmitKind::MLIR || k == EmitKind::LLVM ||
         k == EmitKind::Asm || k == EmitKind::HSACO || k == EmitKind::PTX || k == EmitKind::Cubin;
}

// Step 5 for code outputs: the code generator library turns the kernels into `out`.
bool generateCode(const DriverOptions &opts, const Program &program,
                  const std::vector<CodegenKernel> &kernels, DiagnosticEngine &diags,
                  std::string &out) {
  const TargetInfo &target = *program.target;
  const bool amd = target.vendor == Vendor::AMD;
  CodegenOptions co;
  co.optLevel = opts.optLevel;
  co.insertBarriers = !opts.debugNoBarriers;
  co.codeObjectVersion = opts.codeObjectVersion;
  switch (opts.emit) {
  case EmitKind::MLIR: co.output = CodegenOutput::MLIR; break;
  case EmitKind::LLVM: co.output = CodegenOutput::LLVM; break;
  case EmitKind::Asm: co.output = amd ? CodegenOutput::Asm : CodegenOutput::PTX; break;
  case EmitKind::HSACO: co.output = CodegenOutput::HSACO; break;
  case EmitKind::PTX: co.output = CodegenOutput::PTX; break;
  case EmitKind::Cubin: co.output = CodegenOutput::Cubin; break;
  default: co.output = amd ? CodegenOutput::HSACO : CodegenOutput::PTX; break;
  }
  const bool needsAmd = co.output == CodegenOutput::HSACO;
  const bool needsNv = co.output == CodegenOutput::PTX || co.output == CodegenOutput::Cubin;
  if ((needsAmd && !amd) || (needsNv && amd)) {
    diags.report(DiagId::OutputKindTarget, {},
                 {needsAmd ? "HSACO" : co.output == CodegenOutput::PTX ? "PTX" : "cubin",
                  needsAmd ? "AMD" : "NVIDIA", target.name});
    return false;
  }
  std::string error;
  const WaveCodegenApi *api = loadCodegenBackend(error);
  if (!api) {
    diags.report(DiagId::CodegenUnavailable, {}, {error});
    return false;
  }
  return api->generate(kernels, target, co, diags, out);
}

// Where a code output goes when -o is absent: binaries next to the input's stem in the current
// directory (copy.wave -> copy.hsaco), text dumps to stdout.
std::string defaultOutput(const DriverOptions &opts, const TargetInfo &target) {
  EmitKind k = opts.emit;
  if (k == EmitKind::Default)
    k = target.vendor == Vendor::AMD ? EmitKind::HSACO : EmitKind::PTX;
  const char *ext = k == EmitKind::HSACO ? ".hsaco"
                    : k == EmitKind::Cubin ? ".cubin"
                    : (k == EmitKind::PTX && opts.emit == EmitKind::Default) ? ".ptx"
                                                                             : nullptr;
  if (!ext)
    return "";
  std::string stem = opts.input.substr(opts.input.rfind('/') + 1);
  auto dot = stem.rfind('.');
  return (dot == std::string::npos ? stem : stem.substr(0, dot)) + ext;
}

} // namespace

int compile(const DriverOptions &opts) {
  DiagnosticEngine diags;
  diags.setWarningsAsErrors(opts.werror);
  diags.setErrorLimit(opts.errorLimit);
  for (const auto &[name, ov] : opts.warningOverrides) {
    DiagId id;
    if (diagIdFromName(name, id))
      diags.setOverride(id, ov);
  }
  auto finish = [&](int code) {
    diags.print(stderr, opts.color);
    return code;
  };

  // 1. read
  std::string text, error;
  if (!readFile(opts.input, text, error)) {
    diags.report(DiagId::CannotOpenFile, {}, {opts.input, error});
    return finish(1);
  }
  SourceFile file(opts.input, std::move(text));
  diags.setFile(&file);

  // 2. parse
  std::unique_ptr<ast::Module> module = parseModule(file, diags);
  if (diags.hasErrors() || !module)
    return finish(1);
  if (opts.emit == EmitKind::AST) {
    std::string failed;
    if (!writeOutputs({{opts.output, ast::dump(*module)}}, failed, error)) {
      diags.report(DiagId::CannotWriteFile, {}, {failed, error});
      return finish(1);
    }
    return finish(0);
  }

  // 3. sema
  SemaOptions semaOptions;
  semaOptions.target = findTarget(opts.target);
  semaOptions.defines = opts.defines;
  semaOptions.onlyKernel = opts.kernel;
  std::unique_ptr<Program> program = analyze(*module, semaOptions, diags);
  if (diags.hasErrors())
    return finish(1);

  // 4. distribute
  std::string irText, distText;
  std::vector<std::unique_ptr<Distribution>> dists;
  std::vector<CodegenKernel> codegenKernels;
  for (const auto &kernel : program->kernels) {
    auto dist = std::make_unique<Distribution>();
    if (!distribute(*kernel, *program->target, diags, *dist))
      continue;
    irText += ir::print(*kernel);
    distText += printDistribution(*kernel, *program->target, *dist);
    codegenKernels.push_back({kernel.get(), dist.get()});
    dists.push_back(std::move(dist));
  }
  if (diags.hasErrors())
    return finish(1);

  // 5. emit
  if (opts.check)
    return finish(0);
  const std::string *outText = nullptr;
  std::string codeText, outPath = opts.output;
  if (opts.emit == EmitKind::IR)
    outText = &irText;
  else if (opts.emit == EmitKind::Distribution)
    outText = &distText;
  else if (isCodeOutput(opts.emit)) {
    if (!generateCode(opts, *program, codegenKernels, diags, codeText))
      return finish(1);
    outText = &codeText;
    if (outPath.empty())
      outPath = defaultOutput(opts, *program->target);
  }
  std::vector<std::pair<std::string, std::string>> outputs{{outPath, *outText}};

  // 6. host API: the header and the stub that embeds the code object just made.
  if (!opts.header.empty() || !opts.stub.empty()) {
    bool binary = opts.emit == EmitKind::Default || opts.emit == EmitKind::HSACO ||
                  opts.emit == EmitKind::PTX || opts.emit == EmitKind::Cubin;
    if (!binary || opts.header.empty() || opts.stub.empty()) {
      diags.report(DiagId::HostApiNeedsCodeObject, {}, {});
      return finish(1);
    }
    std::vector<HostKernel> hostKernels;
    for (const auto &k : codegenKernels)
      hostKernels.push_back({k.kernel, k.dist});
    HostApiOptions ho;
    ho.sourceName = baseName(opts.input);
    ho.headerName = baseName(opts.header);
    ho.guard = includeGuard(opts.header);
    ho.objects = {{program->target->name, codeText}};
    outputs.push_back({opts.header, generateHeader(hostKernels, ho)});
    outputs.push_back({opts.stub, generateStub(hostKernels, ho)});
  }
  std::string failed;
  if (!writeOutputs(outputs, failed, error)) {
    diags.report(DiagId::CannotWriteFile, {}, {failed, error});
    return finish(1);
  }
  return finish(0);
}

} // namespace wave
