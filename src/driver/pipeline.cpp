// The compiler pipeline, in order: a table of contents of wavec (docs/internals.md, "Pipeline").
//
//   1. read      the .wave file
//   2. parse     text -> AST (syntax errors located, several per run)
//   3. sema      names, -D bindings, types and shapes, constraints -> kernel graph IR
//   4. distribute constraints -> grid, block, per-access index expressions; then legalize
//                (passes/legalize.h): what the code generator cannot generate for the target
//                is refused here, at --check too
//   5. emit      the requested dump, or the code object (MLIR, LLVM IR, ISA, HSACO, PTX, cubin)
//                through the code generator library, loaded on demand (codegen/codegen_api.h)
//   6. host API  the generated C header and stub around the code objects (--header, --stub):
//                for each --target its native code object and its emulator image
//                (src/codegen/emu_translate.h), so the host program also runs on `emu`
//   7. write     every output, the depfile (-MD) with them, all or nothing
//
// Nothing is written unless every stage succeeded, and no output may be an input, a directory or
// another output: the outputs are checked before the compilation starts and written all or
// nothing at the end (files.h has the rules). Around the stages: --print-ir-after / --dump-dir (the program
// after each stage), --time-passes, the compile cache for the code generator's output
// (cache.h), and the diagnostics format (text, JSON, SARIF).
#include "codegen/backend_loader.h"
#include "codegen/host_api.h"
#include "driver/cache.h"
#include "driver/files.h"
#include "driver/metadata.h"
#include "driver/options.h"
#include "frontend/parser.h"
#include "passes/distribution.h"
#include "passes/legalize.h"
#include "passes/pass_list.h"
#include "passes/size_limits.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>

namespace wave {

namespace {

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

std::string stemOf(const std::string &path) {
  std::string stem = baseName(path);
  auto dot = stem.rfind('.');
  return dot == std::string::npos || dot == 0 ? stem : stem.substr(0, dot);
}

// --time-passes: wall time of each stage, printed at the end.
class StageTimer {
public:
  explicit StageTimer(bool on) : on_(on), last_(Clock::now()) {}
  void lap(const std::string &stage) {
    auto now = Clock::now();
    if (on_)
      laps_.push_back({stage, std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }
  void add(const std::string &stage, double ms) {
    if (on_)
      laps_.push_back({stage, ms});
  }
  void print() const {
    if (!on_)
      return;
    double total = 0;
    std::fprintf(stderr, "wavec: time per stage (ms):\n");
    for (const auto &[stage, ms] : laps_) {
      std::fprintf(stderr, "  %-28s %8.2f\n", stage.c_str(), ms);
      if (stage.rfind("  ", 0) != 0)
        total += ms;
    }
    std::fprintf(stderr, "  %-28s %8.2f\n", "total", total);
  }

private:
  using Clock = std::chrono::steady_clock;
  bool on_;
  Clock::time_point last_;
  std::vector<std::pair<std::string, double>> laps_;
};

// --print-ir-after(-all) and --dump-dir: the program after a stage.
class StageDumps {
public:
  explicit StageDumps(const DriverOptions &o) : opts_(o) {}
  bool wants(const std::string &stage) const {
    return opts_.printAfterAll || !opts_.dumpDir.empty() ||
           std::find(opts_.printAfter.begin(), opts_.printAfter.end(), stage) !=
               opts_.printAfter.end();
  }
  void after(const std::string &stage, const std::string &text, const char *ext) {
    const int index = passIndex(stage);
    if (opts_.printAfterAll || std::find(opts_.printAfter.begin(), opts_.printAfter.end(),
                                         stage) != opts_.printAfter.end()) {
      std::string banner = "// ----- wavec: after " + stage + " -----\n";
      std::fwrite(banner.data(), 1, banner.size(), stderr);
      std::fwrite(text.data(), 1, text.size(), stderr);
    }
    if (!opts_.dumpDir.empty())
      files_.push_back({opts_.dumpDir + "/" + stemOf(opts_.input) + "." +
                            std::to_string(index + 1) + "-" + stage + ext,
                        "--dump-dir", text});
  }
  // The dump files, written with the outputs (and like them only when the compilation
  // succeeded... or failed: dumps of the stages that ran are written either way).
  const std::vector<OutputFile> &files() const { return files_; }

private:
  const DriverOptions &opts_;
  std::vector<OutputFile> files_;
};

// The code generator's passes whose dump is one of its outputs (printed by running it for that
// output) rather than text its passes print.
bool isOutputStage(const std::string &pass) {
  return pass == "mlir" || pass == "llvm" || pass == "asm";
}

// The code generator's output kind for the requested emit kind.
CodegenOutput codegenOutput(EmitKind emit, bool amd) {
  switch (emit) {
  case EmitKind::MLIR: return CodegenOutput::MLIR;
  case EmitKind::LLVM: return CodegenOutput::LLVM;
  case EmitKind::Asm: return amd ? CodegenOutput::Asm : CodegenOutput::PTX;
  case EmitKind::HSACO: return CodegenOutput::HSACO;
  case EmitKind::PTX: return CodegenOutput::PTX;
  case EmitKind::Cubin: return CodegenOutput::Cubin;
  case EmitKind::Emu: return CodegenOutput::Emu;
  default: return amd ? CodegenOutput::HSACO : CodegenOutput::PTX;
  }
}

// The identity of a file for the cache key: size and modification time (a rebuilt wavec or
// code generator never reuses the entries of the previous build).
std::string fileIdentity(const std::string &path) {
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0)
    return path + ":missing";
  return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

// Everything a code-generator output depends on (cache.h). Every CodegenOptions field that
// changes the output must be part of it.
std::string cacheKey(const DriverOptions &opts, const std::string &target,
                     const std::string &source, CodegenOutput output, bool withEmu) {
  std::string k = "wavec-cache-key 4\n";
  k += "version " WAVEC_VERSION "\n";
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  k += "wavec " + fileIdentity(n > 0 ? std::string(exe, static_cast<size_t>(n)) : "") + "\n";
  k += "codegen " + fileIdentity(codegenBackendPath()) + "\n";
  k += "target " + target + "\n";
  k += "emu " + std::to_string(withEmu) + "\n";
  k += "barriers " + std::to_string(!opts.debugNoBarriers) + "\n";
  k += "lines " + std::to_string(opts.debugLines) + "\n";
  k += "registers " + std::to_string(opts.emit == EmitKind::Metadata) + "\n";
  k += "output " + std::to_string(static_cast<int>(output)) + "\n";
  k += "opt " + std::to_string(opts.optLevel) + "\n";
  k += "cov " + std::to_string(opts.codeObjectVersion) + "\n";
  k += "kernel " + opts.kernel + "\n";
  if (output == CodegenOutput::Cubin) // made by the installed ptxas
    k += "ptxas " + fileIdentity("/usr/local/cuda/bin/ptxas") + "\n";
  for (const auto &d : opts.defines)
    k += "define " + d.name + "=" + d.value + "\n";
  k += "source " + std::to_string(source.size()) + "\n" + source;
  return sha256Hex(k);
}

// The kernels' resources as cache text: one line per kernel, "name shared registers agprs sgprs
// scratch spills dynamic-shared loops maps", loops the innermost loops' matrix instructions per
// trip ("n,n,..." or "-" for none), maps the TMA tensor maps ("param:dtype:rows:cols:swizzle"
// joined by commas, dtype a ScalarType number; "-" for none).
std::string resourcesText(const std::vector<KernelResources> &resources) {
  std::string out;
  for (const auto &r : resources) {
    std::string loops;
    for (int64_t n : r.loopMatrixOps)
      loops += (loops.empty() ? "" : ",") + std::to_string(n);
    out += r.name + " " + std::to_string(r.sharedBytes) + " " + std::to_string(r.registers) + " " +
           std::to_string(r.agprs) + " " + std::to_string(r.sgprs) + " " +
           std::to_string(r.scratchBytes) + " " + std::to_string(r.spills) + " " +
           std::to_string(r.dynamicSharedBytes) + " " + (loops.empty() ? "-" : loops) + " ";
    std::string maps;
    for (const TensorMapArg &m : r.tensorMaps)
      maps += (maps.empty() ? "" : ",") + std::to_string(m.param) + ":" +
              std::to_string(static_cast<int>(m.dtype)) + ":" + std::to_string(m.boxRows) +
              ":" + std::to_string(m.boxCols) + ":" + std::to_string(m.swizzleBytes) + ":" +
              std::to_string(m.rank);
    out += (maps.empty() ? "-" : maps) + " " + std::to_string(r.producerThreads) + " " +
           std::to_string(r.persistentPerSM) + "\n";
  }
  return out;
}

bool parseResources(const std::string &text, std::vector<KernelResources> &out) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    KernelResources r;
    std::string loops, maps;
    if (!(fields >> r.name >> r.sharedBytes >> r.registers >> r.agprs >> r.sgprs >>
          r.scratchBytes >> r.spills >> r.dynamicSharedBytes >> loops >> maps >>
          r.producerThreads >> r.persistentPerSM))
      return false;
    if (maps != "-") {
      std::istringstream list(maps);
      std::string one;
      while (std::getline(list, one, ',')) {
        TensorMapArg m;
        unsigned dtype = 0;
        char c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0;
        std::istringstream f(one);
        if (!(f >> m.param >> c1 >> dtype >> c2 >> m.boxRows >> c3 >> m.boxCols >> c4 >>
              m.swizzleBytes >> c5 >> m.rank) ||
            c1 != ':' || c2 != ':' || c3 != ':' || c4 != ':' || c5 != ':' || m.rank < 2 ||
            m.rank > 5 || dtype > static_cast<unsigned>(ScalarType::Index))
          return false;
        m.dtype = static_cast<ScalarType>(dtype);
        r.tensorMaps.push_back(m);
      }
    }
    if (loops != "-") {
      std::istringstream list(loops);
      std::string n;
      while (std::getline(list, n, ',')) {
        if (n.empty() || n.size() > 18 || n.find_first_not_of("0123456789") != std::string::npos)
          return false;
        r.loopMatrixOps.push_back(std::stoll(n));
      }
    }
    out.push_back(r);
  }
  return true;
}

// A cache entry holds the code output, the emulator image when a stub embeds it (or why there is
// none) and the kernels' resources: four length-prefixed fields.
std::string packCached(const std::string &code, const EmuImageResult &emu,
                       const std::vector<KernelResources> &resources) {
  std::string out;
  const std::string res = resourcesText(resources);
  for (const std::string *field : {&code, &emu.image, &emu.error, &res})
    out += std::to_string(field->size()) + "\n" + *field;
  return out;
}

bool unpackCached(const std::string &entry, std::string &code, EmuImageResult &emu,
                  std::vector<KernelResources> &resources) {
  size_t pos = 0;
  std::string res;
  for (std::string *field : {&code, &emu.image, &emu.error, &res}) {
    size_t nl = entry.find('\n', pos);
    if (nl == std::string::npos || nl == pos || nl - pos > 19)
      return false;
    size_t size = 0;
    for (size_t i = pos; i < nl; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(entry[i])))
        return false;
      size = size * 10 + static_cast<size_t>(entry[i] - '0');
    }
    if (size > entry.size() - nl - 1)
      return false;
    *field = entry.substr(nl + 1, size);
    pos = nl + 1 + size;
  }
  resources.clear();
  return pos == entry.size() && parseResources(res, resources);
}

// Step 5 for code outputs: the code generator library turns the kernels into `out`.
bool generateCode(const DriverOptions &opts, const Program &program,
                  const std::vector<CodegenKernel> &kernels, CodegenOutput output,
                  DiagnosticEngine &diags, StageTimer &timer, std::string &out,
                  EmuImageResult *emu, std::vector<KernelResources> *resources = nullptr,
                  StageDumps *dumps = nullptr) {
  const TargetInfo &target = *program.target;
  const bool amd = target.vendor == Vendor::AMD;
  CodegenOptions co;
  co.optLevel = opts.optLevel;
  co.insertBarriers = !opts.debugNoBarriers;
  co.debugInfo = opts.debugLines;
  co.codeObjectVersion = opts.codeObjectVersion;
  co.output = output;
  co.resources = resources;
  co.registerCounts = opts.emit == EmitKind::Metadata; // ptxas -v: only when asked for
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
  timer.lap("load code generator");
  if (!api) {
    diags.report(DiagId::CodegenUnavailable, {}, {error});
    return false;
  }
  std::vector<std::pair<std::string, double>> steps;
  co.timings = &steps;
  // The code generator's own passes print into passDumps when asked (mlir, llvm and asm are
  // outputs: the caller asks for those by running the generator for them).
  std::vector<std::pair<std::string, std::string>> passDumps;
  if (dumps)
    for (const PassInfo &p : passList())
      if (p.side == PassSide::CodeGenerator && dumps->wants(p.name) &&
          !isOutputStage(p.name))
        co.dumpPasses.push_back(p.name);
  co.passDumps = &passDumps;
  bool ok = api->generate(kernels, target, co, diags, out, emu);
  timer.lap("code generation");
  for (const auto &[step, ms] : steps)
    timer.add("  " + step, ms);
  for (const auto &[pass, text] : passDumps)
    dumps->after(pass, text, findPass(pass)->dumpExt);
  return ok;
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
  return stemOf(opts.input) + ext;
}

// A path in a make rule: spaces, '#' and '$' escaped.
std::string makeEscape(const std::string &path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#')
      out += '\\';
    if (c == '$')
      out += '$';
    out += c;
  }
  return out;
}

// -MD: "targets: deps" (+ "dep:" lines with -MP). The targets are -MT's, else every file
// written; the dependencies every file the compilation read (the language has no includes: the
// source alone).
std::string depfileText(const DriverOptions &opts, const std::vector<std::string> &written,
                        const std::vector<std::string> &read) {
  const std::vector<std::string> &targets = opts.depTargets.empty() ? written : opts.depTargets;
  std::string out;
  for (size_t i = 0; i < targets.size(); ++i)
    out += (i ? " " : "") + (opts.depTargets.empty() ? makeEscape(targets[i]) : targets[i]);
  out += ":";
  for (const auto &r : read)
    out += " " + makeEscape(r);
  out += "\n";
  if (opts.depPhony)
    for (const auto &r : read)
      if (r != opts.input)
        out += "\n" + makeEscape(r) + ":\n";
  return out;
}

std::string depfilePath(const DriverOptions &opts, const std::string &output) {
  if (!opts.depfilePath.empty())
    return opts.depfilePath;
  if (!output.empty() && output != "-") {
    auto slash = output.rfind('/');
    auto dot = output.rfind('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1))
      return output.substr(0, dot) + ".d";
    return output + ".d";
  }
  return stemOf(opts.input) + ".d";
}


// One target's compilation: what the driver's passes make, in turn, and the code generator's
// output.
struct TargetRun {
  const TargetInfo *target = nullptr;
  const ast::Module *module = nullptr;
  std::unique_ptr<Program> program;
  // Each kernel and its distribution (null until the distribute pass has run).
  struct Kernel {
    const ir::Kernel *kernel = nullptr;
    std::unique_ptr<Distribution> dist;
  };
  std::vector<Kernel> kernels;
  std::vector<CodegenKernel> codegenKernels;
  std::string code;
  EmuImageResult emu;
  std::vector<KernelResources> resources;
};

std::string irText(const TargetRun &c) {
  std::string out;
  for (const auto &kernel : c.program->kernels)
    out += ir::print(*kernel);
  return out;
}

std::string distributionText(const TargetRun &c) {
  std::string out;
  for (const auto &k : c.kernels)
    out += printDistribution(*k.kernel, *c.target, *k.dist);
  return out;
}

// The driver's passes (pass_list.h gives their order and what each does), bound to what runs
// and prints them. A pass reports its errors; the driver stops after a pass that reported any.
struct DriverPass {
  const char *name;
  bool (*run)(const DriverOptions &, TargetRun &, DiagnosticEngine &);
  std::string (*print)(const TargetRun &);
  bool dumpOnFailure = false; // its dump shows why it failed (safe to print after a failure)
};

bool runSema(const DriverOptions &opts, TargetRun &c, DiagnosticEngine &diags) {
  SemaOptions semaOptions;
  semaOptions.target = c.target;
  semaOptions.defines = opts.defines;
  semaOptions.onlyKernel = opts.kernel;
  c.program = analyze(*c.module, semaOptions, diags);
  if (!c.program)
    return false;
  for (const auto &kernel : c.program->kernels)
    c.kernels.push_back({kernel.get(), nullptr});
  return true;
}

bool runSizeLimits(const DriverOptions &, TargetRun &c, DiagnosticEngine &diags) {
  bool ok = true;
  for (const auto &k : c.kernels)
    ok &= checkStaticSizes(*k.kernel, diags);
  return ok;
}

std::string printSizeLimits(const TargetRun &c) {
  std::string out;
  for (const auto &k : c.kernels)
    out += printStaticSizes(*k.kernel);
  return out;
}

bool runDistribute(const DriverOptions &, TargetRun &c, DiagnosticEngine &diags) {
  bool ok = true;
  for (auto &k : c.kernels) {
    k.dist = std::make_unique<Distribution>();
    ok &= distribute(*k.kernel, *c.target, diags, *k.dist);
  }
  return ok;
}

bool runUnrollLimits(const DriverOptions &, TargetRun &c, DiagnosticEngine &diags) {
  bool ok = true;
  for (const auto &k : c.kernels)
    ok &= checkUnroll(*k.kernel, *k.dist, diags);
  return ok;
}

std::string printUnrollLimits(const TargetRun &c) {
  std::string out;
  for (const auto &k : c.kernels)
    out += printUnroll(*k.kernel, *k.dist);
  return out;
}

// Legalize refuses what code generation cannot do: for code outputs, metadata and --check, not
// for the dumps (--emit=ir/distribution of a kernel code generation refuses still prints).
bool runLegalize(const DriverOptions &opts, TargetRun &c, DiagnosticEngine &diags) {
  if (!opts.check && !isCodeOutput(opts.emit) && opts.emit != EmitKind::Metadata)
    return true;
  bool ok = true;
  std::vector<std::pair<const ir::Kernel *, const Distribution *>> together;
  for (const auto &k : c.kernels) {
    const bool legal = legalize(*k.kernel, *k.dist, *c.target, diags);
    ok &= legal;
    if (legal)
      together.push_back({k.kernel, k.dist.get()});
  }
  return legalizeTogether(together, *c.target, diags) && ok;
}

std::string printLegalizeAll(const TargetRun &c) {
  std::string out;
  for (const auto &k : c.kernels)
    out += printLegalize(*k.kernel, *k.dist, *c.target);
  return out;
}

const std::vector<DriverPass> &driverPasses() {
  static const std::vector<DriverPass> passes{
      {"sema", runSema, irText},
      {"size-limits", runSizeLimits, printSizeLimits},
      {"distribute", runDistribute, distributionText},
      {"unroll-limits", runUnrollLimits, printUnrollLimits},
      {"legalize", runLegalize, printLegalizeAll, /*dumpOnFailure=*/true},
  };
  return passes;
}

// The files this run will write, checked before any work: none may be the input, a directory,
// or the same file as another (files.h). The dump directory is made now (its files are written
// whatever happens, failures included).
bool prepareOutputs(const DriverOptions &opts, const std::string &outPath,
                    const std::string &outRole, const std::string &depRole,
                    const std::vector<std::string> &filesRead, DiagnosticEngine &diags) {
  const size_t targetCount = opts.targets.empty() ? 1 : opts.targets.size();
  if (!opts.check) {
    std::vector<OutputFile> planned;
    if (targetCount == 1)
      planned.push_back({outPath.empty() ? "-" : outPath, outRole, ""});
    if (!opts.header.empty())
      planned.push_back({opts.header, "--header", ""});
    if (!opts.stub.empty())
      planned.push_back({opts.stub, "--stub", ""});
    if (opts.depfile)
      planned.push_back({depfilePath(opts, outPath), depRole, ""});
    OutputError failed;
    if (!checkOutputs(planned, filesRead, failed)) {
      diags.report(DiagId::CannotWriteFile, {}, {failed.path, failed.message});
      return false;
    }
  }
  if (!opts.dumpDir.empty()) {
    struct stat st;
    if (::mkdir(opts.dumpDir.c_str(), 0777) != 0 && errno != EEXIST) {
      diags.report(DiagId::CannotWriteFile, {}, {opts.dumpDir, std::strerror(errno)});
      return false;
    }
    if (::stat(opts.dumpDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      diags.report(DiagId::CannotWriteFile, {}, {opts.dumpDir, "--dump-dir names a file that is not a directory"});
      return false;
    }
  }
  return true;
}

// The driver's passes on one target, in order; false after one reported errors.
bool runDriverPasses(const DriverOptions &opts, TargetRun &c, bool primary,
                     DiagnosticEngine &diags, StageTimer &timer, StageDumps &dumps) {
  for (const DriverPass &pass : driverPasses()) {
    const bool ok = pass.run(opts, c, diags) && !diags.hasErrors();
    timer.lap(pass.name);
    if (primary && dumps.wants(pass.name) && (ok || pass.dumpOnFailure))
      dumps.after(pass.name, pass.print(c), findPass(pass.name)->dumpExt);
    if (!ok)
      return false;
  }
  return true;
}

// The code generator on one target: MLIR only for --check (when it is installed), else the
// requested output through the compile cache, and the mlir/llvm/asm dumps when asked for.
bool runCodeGenerator(const DriverOptions &opts, TargetRun &c, bool primary,
                      const std::string &text, bool hostApi, DiagnosticEngine &diags,
                      StageTimer &timer, StageDumps &dumps) {
  for (const auto &k : c.kernels)
    c.codegenKernels.push_back({k.kernel, k.dist.get()});
  // --check asks the code generator too, when it is installed: a kernel it cannot generate
  // for this target is refused here, at its .wave location, not later by a build. Only the
  // MLIR is produced (parsed and verified), not the code object. WAVEC_CHECK_NO_CODEGEN=1
  // leaves legalize alone to decide (tests/cli/check_matches_compile.py).
  if (opts.check) {
    const char *noCodegen = std::getenv("WAVEC_CHECK_NO_CODEGEN");
    std::string mlir;
    if (!(noCodegen && *noCodegen && std::strcmp(noCodegen, "0") != 0) &&
        !codegenBackendPath().empty() &&
        !generateCode(opts, *c.program, c.codegenKernels, CodegenOutput::MLIR, diags, timer,
                      mlir, nullptr, nullptr, primary ? &dumps : nullptr))
      return false;
    return true;
  }
  // Metadata describes the code object: its resources come from compiling it.
  if (!isCodeOutput(opts.emit) && opts.emit != EmitKind::Metadata)
    return true;

  const bool amd = c.program->target->vendor == Vendor::AMD;
  const CodegenOutput output = codegenOutput(opts.emit, amd);
  // The emulator image rides along whenever a stub embeds the code objects.
  const bool emuAlongside = hostApi && output != CodegenOutput::Emu;
  // A cached output has no pass dumps: a run that prints the code generator's passes skips
  // the cache.
  bool passDumps = false;
  for (const PassInfo &p : passList())
    passDumps |= primary && p.side == PassSide::CodeGenerator && dumps.wants(p.name) &&
                 !isOutputStage(p.name);
  CompileCache cache(passDumps ? std::string() : opts.cacheDir);
  const std::string key =
      cache.enabled() ? cacheKey(opts, c.program->target->name, text, output, emuAlongside)
                      : std::string();
  std::optional<std::string> cached = cache.load(key);
  timer.lap("cache lookup");
  if (!cached || !unpackCached(*cached, c.code, c.emu, c.resources)) {
    c.resources.clear();
    if (!generateCode(opts, *c.program, c.codegenKernels, output, diags, timer, c.code,
                      emuAlongside ? &c.emu : nullptr, &c.resources,
                      primary ? &dumps : nullptr))
      return false;
    cache.store(key, packCached(c.code, c.emu, c.resources));
    timer.lap("cache store");
  }
  if (emuAlongside && c.emu.image.empty())
    diags.report(DiagId::EmuUnsupported, {}, {c.program->target->name, c.emu.error});
  if (!primary)
    return true;
  // The intermediate stages, when asked for: each is one more run of the code generator.
  static const std::tuple<const char *, EmitKind, const char *> stages[] = {
      {"mlir", EmitKind::MLIR, ".mlir"}, {"llvm", EmitKind::LLVM, ".ll"},
      {"asm", EmitKind::Asm, ".s"}};
  for (const auto &[stage, kind, ext] : stages) {
    if (!dumps.wants(stage))
      continue;
    std::string stageText;
    if (codegenOutput(kind, amd) == output)
      stageText = c.code;
    else if (!generateCode(opts, *c.program, c.codegenKernels, codegenOutput(kind, amd), diags, timer,
                           stageText, nullptr))
      return false;
    dumps.after(stage, stageText, ext);
    if (output == codegenOutput(kind, amd))
      break; // nothing runs after the requested output
  }
  return true;
}

// The header and the stub that embed the code objects just made, and for each target its
// emulator image (arch "emu:<target>").
bool addHostApi(const DriverOptions &opts, const std::vector<TargetRun> &compiled,
                std::vector<HostKernel> &hostKernels, std::vector<OutputFile> &outputs,
                DiagnosticEngine &diags) {
  bool binary = opts.emit == EmitKind::Default || opts.emit == EmitKind::HSACO ||
                opts.emit == EmitKind::PTX || opts.emit == EmitKind::Cubin;
  if (!binary || opts.header.empty() || opts.stub.empty()) {
    diags.report(DiagId::HostApiNeedsCodeObject, {}, {});
    return false;
  }
  for (size_t k = 0; k < hostKernels.size(); ++k) {
    HostKernel &hk = hostKernels[k];
    for (const TargetRun &c : compiled) {
      if (k >= c.codegenKernels.size() || c.codegenKernels[k].kernel->name != hk.kernel->name) {
        diags.report(DiagId::CodegenFailed, {},
                     {c.program->target->name, "its kernels differ from the first target's"});
        return false;
      }
      hk.variants.push_back(c.codegenKernels[k].dist);
      uint64_t dynamic = 0, shared = 0;
      std::vector<TensorMapArg> maps;
      int64_t producers = 0, perSM = 0;
      for (const KernelResources &r : c.resources)
        if (r.name == hk.kernel->name) {
          dynamic = static_cast<uint64_t>(r.dynamicSharedBytes);
          shared = static_cast<uint64_t>(std::max<int64_t>(r.sharedBytes, 0)) + dynamic;
          maps = r.tensorMaps;
          producers = r.producerThreads;
          perSM = r.persistentPerSM;
        }
      hk.persistentPerSM.push_back(static_cast<uint32_t>(perSM));
      hk.producerThreads.push_back(static_cast<uint32_t>(producers));
      hk.tensorMaps.push_back(maps);
      hk.dynamicShared.push_back(dynamic);
      hk.variantShared.push_back(shared);
    }
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
  outputs.push_back({opts.header, "--header", generateHeader(hostKernels, ho)});
  outputs.push_back({opts.stub, "--stub", generateStub(hostKernels, ho)});
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
  StageTimer timer(opts.timePasses);
  StageDumps dumps(opts);
  auto finish = [&](int code) {
    // Stage dumps are written whatever happened: they are how a failure is looked at.
    if (!dumps.files().empty()) {
      OutputError failed;
      if (!writeOutputs(dumps.files(), {opts.input}, failed)) {
        diags.report(DiagId::CannotWriteFile, {}, {failed.path, failed.message});
        code = 1;
      }
    }
    diags.print(stderr, opts.color, opts.diagnosticsFormat, WAVEC_VERSION);
    timer.print();
    return code;
  };

  // 1. read
  std::string text, error;
  if (!readInputFile(opts.input, text, error)) {
    diags.report(DiagId::CannotOpenFile, {}, {opts.input, error});
    return finish(1);
  }
  const std::vector<std::string> filesRead{opts.input};
  SourceFile file(opts.input, text);
  diags.setFile(&file);

  // The files this run will write, checked now, before any work: none may be the input, a
  // directory, or the same file as another (files.h).
  const bool hostApi = !opts.header.empty() || !opts.stub.empty();
  const size_t targetCount = opts.targets.empty() ? 1 : opts.targets.size();
  std::string outPath = opts.output;
  if (isCodeOutput(opts.emit) && outPath.empty())
    outPath = defaultOutput(opts, *findTarget(opts.targets.empty() ? opts.target
                                                                   : opts.targets.front()));
  const std::string outRole = opts.output.empty() ? "the output" : "-o";
  const std::string depRole = opts.depfilePath.empty() ? "the depfile" : "-MF";
  if (!prepareOutputs(opts, outPath, outRole, depRole, filesRead, diags))
    return finish(1);
  timer.lap("read");

  // 2. parse
  std::unique_ptr<ast::Module> module = parseModule(file, diags);
  timer.lap("parse");
  if (diags.hasErrors() || !module)
    return finish(1);
  std::string astText;
  if (opts.emit == EmitKind::AST || dumps.wants("parse")) {
    astText = ast::dump(*module);
    dumps.after("parse", astText, ".ast.txt");
  }

  // 3.-5. per target (several with --target=a,b: one header and stub carry every code object):
  // the driver's passes in order, then the code generator. Dumps and metadata describe the
  // first target.
  std::vector<TargetRun> compiled(targetCount);
  for (size_t ti = 0; ti < compiled.size() && opts.emit != EmitKind::AST; ++ti) {
    TargetRun &c = compiled[ti];
    const bool primary = ti == 0;
    c.target = findTarget(opts.targets.empty() ? opts.target : opts.targets[ti]);
    c.module = module.get();
    if (!runDriverPasses(opts, c, primary, diags, timer, dumps) ||
        !runCodeGenerator(opts, c, primary, text, hostApi, diags, timer, dumps))
      return finish(1);
  }

  // 5. emit
  if (opts.check)
    return finish(0);
  TargetRun &first = compiled.front();
  std::vector<HostKernel> hostKernels;
  for (const CodegenKernel &k : first.codegenKernels) {
    hostKernels.push_back({k.kernel, k.dist});
    for (const KernelResources &r : first.resources)
      if (r.name == k.kernel->name)
        hostKernels.back().sharedBytes = static_cast<uint64_t>(
            std::max<int64_t>(r.sharedBytes, 0) + r.dynamicSharedBytes);
  }
  std::string outText;
  if (opts.emit == EmitKind::AST)
    outText = astText;
  else if (opts.emit == EmitKind::IR)
    outText = irText(first);
  else if (opts.emit == EmitKind::Distribution)
    outText = distributionText(first);
  else if (opts.emit == EmitKind::Metadata)
    outText = kernelMetadataJson(hostKernels, first.resources, *first.program->target,
                                 baseName(opts.input), WAVEC_VERSION);
  else if (isCodeOutput(opts.emit))
    outText = first.code;
  std::vector<OutputFile> outputs;
  if (compiled.size() == 1)
    outputs.push_back({outPath.empty() ? "-" : outPath, outRole, outText});

  // 6. host API
  if (hostApi) {
    if (!addHostApi(opts, compiled, hostKernels, outputs, diags))
      return finish(1);
    timer.lap("host API");
  }

  // 7. write, with the depfile.
  if (opts.depfile) {
    std::vector<std::string> written;
    for (const OutputFile &o : outputs)
      if (o.path != "-")
        written.push_back(o.path);
    if (written.empty() && opts.depTargets.empty()) {
      diags.report(DiagId::DepfileNoTarget, {}, {});
      return finish(1);
    }
    outputs.push_back({depfilePath(opts, outPath), depRole, depfileText(opts, written, filesRead)});
  }
  OutputError failed;
  if (!writeOutputs(outputs, filesRead, failed)) {
    diags.report(DiagId::CannotWriteFile, {}, {failed.path, failed.message});
    return finish(1);
  }
  timer.lap("write");
  return finish(0);
}

} // namespace wave
