// The compiler pipeline, in order: a table of contents of wavec (architecture.md).
//
//   1. read      the .wave file
//   2. parse     text -> AST (syntax errors located, several per run)
//   3. sema      names, -D bindings, types and shapes, constraints -> kernel graph IR
//   4. distribute constraints -> grid, block, per-access index expressions
//   5. emit      the requested dump, or (later) the code object and host API
//
// Nothing is written unless every stage succeeded: outputs go to a temporary file that is
// renamed into place at the end.
#include "driver/options.h"
#include "frontend/parser.h"
#include "passes/distribution.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

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

// Writes `text` to `path` atomically (temp file + rename), or to stdout for "" / "-".
bool writeOutput(const std::string &path, const std::string &text, std::string &error) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return true;
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      error = std::strerror(errno);
      return false;
    }
    out << text;
    out.close();
    if (!out) {
      error = "write error";
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
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
    if (!writeOutput(opts.output, ast::dump(*module), error)) {
      diags.report(DiagId::CannotWriteFile, {}, {opts.output, error});
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
  for (const auto &kernel : program->kernels) {
    Distribution dist;
    if (!distribute(*kernel, *program->target, diags, dist))
      continue;
    irText += ir::print(*kernel);
    distText += printDistribution(*kernel, *program->target, dist);
  }
  if (diags.hasErrors())
    return finish(1);

  // 5. emit
  if (opts.check)
    return finish(0);
  const std::string *outText = nullptr;
  if (opts.emit == EmitKind::IR)
    outText = &irText;
  else if (opts.emit == EmitKind::Distribution)
    outText = &distText;
  if (!outText) {
    diags.report(DiagId::NoCodegenYet, {}, {});
    return finish(1);
  }
  if (!writeOutput(opts.output, *outText, error)) {
    diags.report(DiagId::CannotWriteFile, {}, {opts.output, error});
    return finish(1);
  }
  return finish(0);
}

} // namespace wave
