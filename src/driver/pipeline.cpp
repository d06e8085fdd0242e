// The compiler pipeline, in order: a table of contents of wavec (architecture.md).
//
//   1. read      the .wave file
//   2. parse     text -> AST (syntax errors located, several per run)
//   3. sema      names, -D bindings, types and shapes, constraints -> kernel graph IR
//   4. distribute constraints -> grid, block, per-access index expressions
//   5. emit      the requested dump, or the code object (MLIR, LLVM IR, ISA, HSACO, PTX, cubin)
//                through the code generator library, loaded on demand (codegen/codegen_api.h)
//   6. host API  the generated C header and stub around the code objects (--header, --stub):
//                for each --target its native code object and its emulator image
//                (src/codegen/emu_translate.h), so the host program also runs on `emu`
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
         k == EmitKind::Asm || k == EmitKind::HSACO || k == EmitKind::PTX ||
         k == EmitKind::Cubin || k == EmitKind::Emu;
}

// Step 5 for code outputs: the code generator library turns the kernels into `out`.
bool generateCode(const DriverOptions &opts, const Program &program,
                  const std::vector<CodegenKernel> &kernels, DiagnosticEngine &diags,
                  std::string &out, EmuImageResult *emu) {
  const TargetInfo &target = *program.target;
  const bool amd = target.vendor == Vendor::AMD;
  CodegenOptions co;
  co.optLevel = opts.optLevel;
  co.codeObjectVersion = opts.codeObjectVersion;
  switch (opts.emit) {
  case EmitKind::MLIR: co.output = CodegenOutput::MLIR; break;
  case EmitKind::LLVM: co.output = CodegenOutput::LLVM; break;
  case EmitKind::Asm: co.output = amd ? CodegenOutput::Asm : CodegenOutput::PTX; break;
  case EmitKind::HSACO: co.output = CodegenOutput::HSACO; break;
  case EmitKind::PTX: co.output = CodegenOutput::PTX; break;
  case EmitKind::Cubin: co.output = CodegenOutput::Cubin; break;
  case EmitKind::Emu: co.output = CodegenOutput::Emu; break;
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
  return api->generate(kernels, target, co, diags, out, emu);
}

// Where a code output goes when -o is absent: binaries next to the input's stem in the current
// directory (copy.wave -> copy.hsaco), text dumps to stdout.
std::string defaultOutput(const DriverOptions &opts, const TargetInfo &target) {
  EmitKind k = opts.emit;
  if (k == EmitKind::Default)
    k = target.vendor == Vendor::AMD ? EmitKind::HSACO : EmitKind::PTX;
  const char *ext = k == EmitKind::HSACO ? ".hsaco"
                    : k == EmitKind::Cubin ? ".cubin"
                    : k == EmitKind::Emu   ? ".wemu"
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

  // 3.-5. per target (several with --target=a,b: one header and stub carry every code object):
  // sema, distribution, code.
  struct Compiled {
    std::unique_ptr<Program> program;
    std::vector<std::unique_ptr<Distribution>> dists;
    std::vector<CodegenKernel> kernels;
    std::string irText, distText, code;
    EmuImageResult emu;
  };
  const bool hostApi = !opts.header.empty() || !opts.stub.empty();
  std::vector<Compiled> compiled(opts.targets.empty() ? 1 : opts.targets.size());
  for (size_t ti = 0; ti < compiled.size(); ++ti) {
    Compiled &c = compiled[ti];
    SemaOptions semaOptions;
    semaOptions.target = findTarget(opts.targets.empty() ? opts.target : opts.targets[ti]);
    semaOptions.defines = opts.defines;
    semaOptions.onlyKernel = opts.kernel;
    c.program = analyze(*module, semaOptions, diags);
    if (diags.hasErrors())
      return finish(1);
    for (const auto &kernel : c.program->kernels) {
      auto dist = std::make_unique<Distribution>();
      if (!distribute(*kernel, *c.program->target, diags, *dist))
        continue;
      c.irText += ir::print(*kernel);
      c.distText += printDistribution(*kernel, *c.program->target, *dist);
      c.kernels.push_back({kernel.get(), dist.get()});
      c.dists.push_back(std::move(dist));
    }
    if (diags.hasErrors())
      return finish(1);
    if (opts.check || !isCodeOutput(opts.emit))
      continue;
    // The emulator image rides along whenever a stub embeds the code objects.
    const bool emuAlongside = hostApi && opts.emit != EmitKind::Emu;
    if (!generateCode(opts, *c.program, c.kernels, diags, c.code,
                      emuAlongside ? &c.emu : nullptr))
      return finish(1);
    if (emuAlongside && c.emu.image.empty())
      diags.report(DiagId::EmuUnsupported, {}, {c.program->target->name, c.emu.error});
  }
  if (opts.check)
    return finish(0);
  Compiled &first = compiled.front();

  // 5. emit
  const std::string *outText = nullptr;
  std::string outPath = opts.output;
  if (opts.emit == EmitKind::IR)
    outText = &first.irText;
  else if (opts.emit == EmitKind::Distribution)
    outText = &first.distText;
  else if (isCodeOutput(opts.emit)) {
    outText = &first.code;
    if (outPath.empty())
      outPath = defaultOutput(opts, *first.program->target);
  }
  std::vector<std::pair<std::string, std::string>> outputs;
  if (compiled.size() == 1)
    outputs.push_back({outPath, *outText});

  // 6. host API: the header and the stub that embed the code objects just made, and for each
  // target its emulator image (arch "emu:<target>").
  if (hostApi) {
    bool binary = opts.emit == EmitKind::Default || opts.emit == EmitKind::HSACO ||
                  opts.emit == EmitKind::PTX || opts.emit == EmitKind::Cubin;
    if (!binary || opts.header.empty() || opts.stub.empty()) {
      diags.report(DiagId::HostApiNeedsCodeObject, {}, {});
      return finish(1);
    }
    std::vector<HostKernel> hostKernels;
    for (size_t k = 0; k < first.kernels.size(); ++k) {
      HostKernel hk{first.kernels[k].kernel, first.kernels[k].dist};
      for (const Compiled &c : compiled) {
        if (k >= c.kernels.size() || c.kernels[k].kernel->name != hk.kernel->name) {
          diags.report(DiagId::CodegenFailed, {},
                       {c.program->target->name, "its kernels differ from the first target's"});
          return finish(1);
        }
        hk.variants.push_back(c.kernels[k].dist);
      }
      hostKernels.push_back(std::move(hk));
    }
    HostApiOptions ho;
    ho.sourceName = baseName(opts.input);
    ho.headerName = baseName(opts.header);
    ho.guard = includeGuard(opts.header);
    for (size_t ti = 0; ti < compiled.size(); ++ti) {
      const std::string name = compiled[ti].program->target->name;
      ho.objects.push_back({name, compiled[ti].code, ti});
      if (!compiled[ti].emu.image.empty())
        ho.objects.push_back({"emu:" + name, compiled[ti].emu.image, ti});
    }
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
