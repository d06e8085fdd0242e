// wavec: the command line. Parses options with CLI11 and hands them to compile().
// Exit codes: 0 success, 1 compile error, 2 usage error.
#include "codegen/target_table.h"
#include "driver/options.h"

#include <CLI/CLI.hpp>

#include <cstdio>

using namespace wave;

namespace {

int usageError(const std::string &message) {
  std::fprintf(stderr, "wavec: error: %s\n", message.c_str());
  std::fprintf(stderr, "Run 'wavec --help' for the options.\n");
  return 2;
}

// -DSYM=VALUE (VALUE may be empty only as an error).
bool parseDefine(const std::string &text, Define &out, std::string &error) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    error = "-D" + text + ": expected -DSYMBOL=VALUE";
    return false;
  }
  out.name = text.substr(0, eq);
  out.value = text.substr(eq + 1);
  return true;
}

// -W<id>, -Wno-<id>, -Werror, -Werror=<id>.
bool parseWarning(const std::string &text, DriverOptions &opts, std::string &error) {
  using O = DiagnosticEngine::Override;
  std::string name = text;
  O mode = O::Enable;
  if (text == "error") {
    opts.werror = true;
    return true;
  }
  if (text.rfind("no-", 0) == 0) {
    name = text.substr(3);
    mode = O::Ignore;
  } else if (text.rfind("error=", 0) == 0) {
    name = text.substr(6);
    mode = O::AsError;
  }
  DiagId id;
  if (!diagIdFromName(name, id) || diagInfo(id).severity != Severity::Warning) {
    error = "-W" + text + ": no warning is named '" + name + "'";
    return false;
  }
  opts.warningOverrides.push_back({name, mode});
  return true;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"wavec: ahead-of-time compiler for the Wave GPU kernel language", "wavec"};
  app.set_version_flag("--version",
                       std::string("wavec ") + WAVEC_VERSION + " (LLVM/MLIR " +
                           WAVEC_LLVM_VERSION + ", default target " + defaultTarget().name + ")");
  DriverOptions opts;
  std::vector<std::string> defines, warnings;
  std::string emit, color = "auto", targetList;
  bool printTargets = false;

  app.add_option("file", opts.input, "the .wave source file");
  app.add_option("-o", opts.output, "output file (a dump goes to stdout when omitted)");
  app.add_option("--target", opts.target,
                 "target: gfx942 (default), gfx90a, gfx1100, sm_80, sm_90, sm_90a");
  app.add_option("-D", defines, "bind a symbol: -DSYM=VALUE (integer, float, global, shared or "
                                "a matrix kind)");
  app.add_option("--header", opts.header,
                 "write the generated C header (NAME_launch, NAME_launch_tensors, NAME_info)");
  app.add_option("--stub", opts.stub,
                 "write the generated C stub that embeds the code object and launches it");
  app.add_option("--kernel", opts.kernel, "check or compile only this kernel");
  app.add_flag("--check", opts.check, "check the program and report diagnostics; write nothing");
  app.add_option("--emit", emit,
                 "output kind: ast, ir, distribution, mlir, llvm, asm, hsaco, ptx, cubin "
                 "(default: -o's extension, else the target's code object)");
  std::string optFlag;
  app.add_option("-O", optFlag, "optimization level: -O0, -O1, -O2, -O3 (default)");
  app.add_option("--code-object-version", opts.codeObjectVersion,
                 "AMD code object version: 4 or 5 (default)");
  app.add_flag("--print-targets", printTargets,
               "list targets with their wave sizes, shared memory and matrix kinds");
  app.add_option("-W", warnings,
                 "-Werror (warnings are errors), -Werror=<id>, -W<id>, -Wno-<id>");
  app.add_option("--color", color, "colour diagnostics: auto (default), always, never");
  // Hidden (docs/internals.md): leaves out the shared-memory barriers the analysis places, so
  // that the emulator's race detector can be shown to catch the races.
  app.add_flag("--debug-no-barriers", opts.debugNoBarriers)->group("");
  app.add_option("--error-limit", opts.errorLimit,
                 "stop after this many errors (default 20, 0 = no limit)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return usageError(e.what());
  }

  if (printTargets) {
    std::fputs(describeTargets().c_str(), stdout);
    return 0;
  }
  if (opts.input.empty())
    return usageError("no input file");
  if (!findTarget(opts.target))
    return usageError("unknown target '" + opts.target + "'" +
                      didYouMean(opts.target, targetNames()) +
                      " (wavec --print-targets lists them)");
  static const std::pair<const char *, EmitKind> emitKinds[] = {
      {"ast", EmitKind::AST},   {"ir", EmitKind::IR},       {"distribution", EmitKind::Distribution},
      {"mlir", EmitKind::MLIR}, {"llvm", EmitKind::LLVM},   {"asm", EmitKind::Asm},
      {"hsaco", EmitKind::HSACO}, {"ptx", EmitKind::PTX},   {"cubin", EmitKind::Cubin}};
  bool emitKnown = emit.empty();
  for (const auto &[name, kind] : emitKinds)
    if (emit == name) {
      opts.emit = kind;
      emitKnown = true;
    }
  if (!emitKnown)
    return usageError("--emit=" + emit +
                      ": expected ast, ir, distribution, mlir, llvm, asm, hsaco, ptx or cubin");
  if (opts.emit == EmitKind::Default && !opts.output.empty()) {
    // The output kind follows -o's extension.
    static const std::pair<const char *, EmitKind> extensions[] = {
        {".hsaco", EmitKind::HSACO}, {".ptx", EmitKind::PTX}, {".cubin", EmitKind::Cubin},
        {".s", EmitKind::Asm},       {".ll", EmitKind::LLVM}, {".mlir", EmitKind::MLIR}};
    for (const auto &[ext, kind] : extensions) {
      const std::string e = ext;
      if (opts.output.size() > e.size() &&
          opts.output.compare(opts.output.size() - e.size(), e.size(), e) == 0)
        opts.emit = kind;
    }
  }
  if (!optFlag.empty()) {
    if (optFlag.size() != 1 || optFlag[0] < '0' || optFlag[0] > '3')
      return usageError("-O" + optFlag + ": expected -O0, -O1, -O2 or -O3");
    opts.optLevel = static_cast<unsigned>(optFlag[0] - '0');
  }
  if (opts.codeObjectVersion != 4 && opts.codeObjectVersion != 5)
    return usageError("--code-object-version=" + std::to_string(opts.codeObjectVersion) +
                      ": expected 4 or 5");
  if (color == "auto")
    opts.color = ColorMode::Auto;
  else if (color == "always")
    opts.color = ColorMode::Always;
  else if (color == "never")
    opts.color = ColorMode::Never;
  else
    return usageError("--color=" + color + ": expected auto, always or never");
  for (const auto &d : defines) {
    Define def;
    std::string error;
    if (!parseDefine(d, def, error))
      return usageError(error);
    opts.defines.push_back(def);
  }
  for (const auto &w : warnings) {
    std::string error;
    if (!parseWarning(w, opts, error))
      return usageError(error);
  }
  if (opts.check && opts.emit != EmitKind::Default)
    return usageError("--check and --emit cannot be combined");
  return compile(opts);
}
