// wave-run: runs one kernel of a .wave file on a device or through the reference evaluator,
// on inputs from .npy files or seeded random data, and checks, saves or times the result.
//
//   wave-run FILE.wave [--kernel K] [-DSYM=V] [--size SYM=V] (--device URI | --reference)
//            [--input NAME=FILE.npy | NAME=NUMBER] [--seed N] [--output-dir DIR]
//            [--check] [--expect NAME=FILE.npy] [--rtol R] [--atol A] [--rel-norm T]
//            [--bench N] [--profile] [--profile-format text|json] [--profile-output FILE]
//            [--object CODE_OBJECT] [--target T]
//
// Exit status: 0 success; 1 a check failed, or compiling/launching failed; 2 bad command line
// or bad input (files, shapes, dtypes, kernel, device URI, program errors); 77 the device is not
// available here (no driver, no such device, back end not built) — CTest's "skipped".
//
// Device runs compile the kernel with the sibling `wavec` (or $WAVEC) into a temporary
// directory, pack the arguments by the kernel ABI (codegen/kernel_abi.h) and launch through
// libwave_runtime. Outputs are poisoned (NaN, integers 0xAB bytes) before each device run, and
// the reference evaluator starts from the same contents, so an element the kernel should have
// written and did not, or wrote and should not have, is a mismatch.
//
// --profile (emulator devices only): the emulator counts global sectors, shared-memory bank
// conflicts, the instruction mix and occupancy while it runs (runtime/src/emu/profile.h), and
// wave-run prints the report (docs/user-guide.md, "Profiling on the emulator").
#include "codegen/kernel_abi.h"
#include "driver/files.h"
#include "emu/profile.h"
#include "frontend/large_stack.h"
#include "frontend/parser.h"
#include "npy.h"
#include "passes/distribution.h"
#include "passes/size_limits.h"
#include "reference/reference.h"
#include "sema/sema.h"

#include <wave/kernel_api.h>
#include <wave/runtime.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace wave;
using ref::HostTensor;

namespace {

enum Exit { kOk = 0, kFailed = 1, kBadInput = 2, kUnavailable = 77 };

// Thrown to leave main with an exit status after printing a message.
struct ExitError {
  int code;
  std::string message;
};

[[noreturn]] void die(int code, const std::string &message) { throw ExitError{code, message}; }

struct Options {
  std::string file, kernel, device, target, object, outputDir;
  std::vector<std::string> defines, sizes, inputs, expects;
  bool reference = false, check = false, profile = false;
  std::string profileFormat = "text", profileOutput;
  std::optional<uint64_t> seed;
  std::optional<double> rtol, atol, relNorm;
  unsigned bench = 0;
};

// NAME=VALUE pairs of a repeated option.
std::vector<std::pair<std::string, std::string>> pairs(const std::vector<std::string> &items,
                                                       const char *option) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto &s : items) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      die(kBadInput, fmt::format("{} {}: expected NAME=VALUE", option, s));
    out.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  return out;
}

bool parseInt(const std::string &s, int64_t &v) {
  try {
    size_t used = 0;
    v = std::stoll(s, &used, 0);
    return used == s.size();
  } catch (...) {
    return false;
  }
}

bool parseDouble(const std::string &s, double &v) {
  try {
    size_t used = 0;
    v = std::stod(s, &used);
    return used == s.size();
  } catch (...) {
    return false;
  }
}

// ---- the program -----------------------------------------------------------------------------

struct Loaded {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<ast::Module> module;
  std::unique_ptr<Program> program;
  const ir::Kernel *kernel = nullptr;
};

Loaded loadProgram(const Options &o, const std::string &target) {
  Loaded l;
  std::string text, error;
  if (!readInputFile(o.file, text, error))
    die(kBadInput, fmt::format("{}: cannot open: {}", o.file, error));
  l.file = std::make_unique<SourceFile>(o.file, std::move(text));
  DiagnosticEngine diags;
  diags.setFile(l.file.get());
  l.module = parseModule(*l.file, diags);
  if (l.module && !diags.hasErrors()) {
    SemaOptions so;
    so.target = findTarget(target);
    if (!so.target)
      die(kBadInput, fmt::format("unknown target '{}'", target));
    so.onlyKernel = o.kernel;
    for (const auto &[name, value] : pairs(o.defines, "-D"))
      so.defines.push_back({name, value});
    l.program = analyze(*l.module, so, diags);
    if (l.program && !diags.hasErrors())
      for (const auto &k : l.program->kernels)
        checkStaticSizes(*k, diags);
  }
  if (diags.hasErrors() || !l.program) {
    diags.print(stderr, ColorMode::Auto);
    die(kBadInput, fmt::format("{} does not compile", o.file));
  }
  if (l.program->kernels.size() != 1) {
    std::string names;
    for (const auto &k : l.program->kernels)
      names += (names.empty() ? "" : ", ") + k->name;
    die(kBadInput, l.program->kernels.empty()
                       ? fmt::format("{} has no kernel", o.file)
                       : fmt::format("{} has several kernels ({}): choose one with --kernel",
                                     o.file, names));
  }
  l.kernel = l.program->kernels[0].get();
  return l;
}

// Parameters the kernel reads (so an output that is also read starts from data, not poison).
bool isRead(const ir::Kernel &k, const ir::Value *param) {
  bool read = false;
  ir::walk(k.body, [&](const ir::Op &op) {
    if (op.kind == ir::OpKind::Read && op.operands[0] == param)
      read = true;
    if ((op.kind == ir::OpKind::AtomicAdd || op.kind == ir::OpKind::AtomicMin ||
         op.kind == ir::OpKind::AtomicMax) &&
        op.operands[1] == param)
      read = true;
  });
  return read;
}

// ---- data ------------------------------------------------------------------------------------

void fillRandom(HostTensor &t, std::mt19937_64 &rng) {
  const ScalarType d = t.dtype;
  for (int64_t e = 0; e < t.numel(); ++e) {
    if (isFloat(d)) {
      t.setFloat(e, std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
      continue;
    }
    int64_t lo = -100, hi = 100;
    switch (d) {
    case ScalarType::I1: lo = 0, hi = 1; break;
    case ScalarType::I8: lo = -10, hi = 10; break;
    case ScalarType::U8: lo = 0, hi = 20; break;
    case ScalarType::U32: lo = 0, hi = 200; break;
    default: break;
    }
    t.setInt(e, std::uniform_int_distribution<int64_t>(lo, hi)(rng));
  }
}

void poison(HostTensor &t) {
  if (isFloat(t.dtype)) {
    for (int64_t e = 0; e < t.numel(); ++e)
      t.setFloat(e, std::numeric_limits<double>::quiet_NaN());
  } else {
    std::fill(t.data.begin(), t.data.end(), 0xAB);
  }
}

double defaultRtol(ScalarType t) {
  switch (t) {
  case ScalarType::F64: return 1e-9;
  case ScalarType::F32: return 1e-4;
  case ScalarType::F16: return 1e-2;
  case ScalarType::BF16: return 2e-2;
  case ScalarType::F8E4M3FN:
  case ScalarType::F8E4M3FNUZ: return 0.13;
  case ScalarType::F8E5M2:
  case ScalarType::F8E5M2FNUZ: return 0.26;
  default: return 0;
  }
}

double defaultAtol(ScalarType t) {
  switch (t) {
  case ScalarType::F64: return 1e-12;
  case ScalarType::F32: return 1e-5;
  case ScalarType::F16: return 1e-3;
  case ScalarType::BF16: return 1e-2;
  case ScalarType::F8E4M3FN:
  case ScalarType::F8E4M3FNUZ:
  case ScalarType::F8E5M2:
  case ScalarType::F8E5M2FNUZ: return 0.1;
  default: return 0;
  }
}

// Compares `got` with `want`; prints one line; returns true when every element is close.
bool compare(const std::string &name, const HostTensor &got, const HostTensor &want,
             const Options &o, const std::string &against) {
  if (got.shape != want.shape)
    die(kBadInput, fmt::format("{}: expected shape ({}) differs from the output's ({})", name,
                               fmt::join(want.shape, ", "), fmt::join(got.shape, ", ")));
  const double rtol = o.rtol.value_or(defaultRtol(got.dtype)),
               atol = o.atol.value_or(defaultAtol(got.dtype));
  double maxAbs = 0, maxRel = 0, diffSq = 0, wantSq = 0;
  bool nonFinite = false;
  int64_t bad = 0, firstBad = -1;
  for (int64_t e = 0; e < got.numel(); ++e) {
    double g, w;
    if (isFloat(got.dtype)) {
      g = got.getFloat(e);
      w = want.getFloat(e);
    } else {
      g = static_cast<double>(got.getInt(e));
      w = static_cast<double>(want.getInt(e));
    }
    bool ok;
    double diff = std::fabs(g - w);
    if (std::isnan(g) || std::isnan(w) || std::isinf(g) || std::isinf(w)) {
      ok = (std::isnan(g) && std::isnan(w)) || g == w;
      diff = ok ? 0 : std::numeric_limits<double>::infinity();
      nonFinite |= !ok;
    } else {
      ok = diff <= atol + rtol * std::fabs(w);
      diffSq += diff * diff;
      wantSq += w * w;
    }
    maxAbs = std::max(maxAbs, diff);
    if (w != 0 || diff != 0)
      maxRel = std::max(maxRel, w != 0 ? diff / std::fabs(w) : std::numeric_limits<double>::infinity());
    if (!ok) {
      if (firstBad < 0)
        firstBad = e;
      ++bad;
    }
  }
  // ||got - want|| / ||want|| over the finite elements (0 when both are zero vectors).
  const double relNorm = wantSq > 0 ? std::sqrt(diffSq / wantSq) : (diffSq > 0 ? std::numeric_limits<double>::infinity() : 0);
  if (o.relNorm) {
    // The whole-tensor criterion replaces the per-element one; non-finite mismatches still fail.
    const bool pass = !nonFinite && relNorm < *o.relNorm;
    std::printf("check %s vs %s: %lld elements, rel norm err %.3g (limit %g), max abs err %.3g, "
                "max rel err %.3g%s\n",
                name.c_str(), against.c_str(), static_cast<long long>(got.numel()), relNorm,
                *o.relNorm, maxAbs, maxRel, pass ? "  ok" : "  FAIL");
    return pass;
  }
  std::printf("check %s vs %s: %lld elements, max abs err %.3g, max rel err %.3g, %lld mismatches "
              "(rtol %g, atol %g)%s\n",
              name.c_str(), against.c_str(), static_cast<long long>(got.numel()), maxAbs, maxRel,
              static_cast<long long>(bad), rtol, atol, bad ? "  FAIL" : "  ok");
  if (firstBad >= 0) {
    std::string where;
    int64_t rest = firstBad;
    std::vector<int64_t> idx(got.shape.size());
    for (size_t k = got.shape.size(); k-- > 0;) {
      idx[k] = got.shape[k] ? rest % got.shape[k] : 0;
      rest = got.shape[k] ? rest / got.shape[k] : 0;
    }
    auto val = [&](const HostTensor &t) {
      return isFloat(t.dtype) ? fmt::format("{}", t.getFloat(firstBad))
                              : fmt::format("{}", t.getInt(firstBad));
    };
    std::printf("  first mismatch at [%s]: got %s, expected %s\n",
                fmt::format("{}", fmt::join(idx, ", ")).c_str(), val(got).c_str(),
                val(want).c_str());
  }
  return bad == 0;
}

// ---- devices ---------------------------------------------------------------------------------

void check(wave_status_t s, const char *what) {
  if (s != WAVE_SUCCESS)
    die(kFailed, fmt::format("{} failed: {} ({})", what, wave_last_error(), wave_status_name(s)));
}

std::string selfDir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// Runs wavec to make the code object (or, with `metadata`, the kernel metadata JSON); returns
// its path.
std::string compileWithWavec(const Options &o, const std::string &target, bool emu,
                             const std::string &dir, bool metadata = false) {
  const char *env = std::getenv("WAVEC");
  std::string wavec = env && *env ? env : selfDir() + "/wavec";
  if (::access(wavec.c_str(), X_OK) != 0)
    die(kFailed, fmt::format("cannot run the compiler '{}' (set $WAVEC to wavec's path)", wavec));
  const bool amd = target.rfind("gfx", 0) == 0;
  std::string out =
      dir + "/kernel" + (metadata ? ".json" : emu ? ".wemu" : amd ? ".hsaco" : ".ptx");
  std::vector<std::string> args{wavec, o.file, "--target=" + target, "-o", out};
  if (metadata)
    args.push_back("--emit=metadata");
  else if (emu)
    args.push_back("--emit=emu");
  if (!o.kernel.empty())
    args.push_back("--kernel=" + o.kernel);
  for (const auto &d : o.defines)
    args.push_back("-D" + d);
  std::vector<char *> argv;
  for (auto &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid < 0)
    die(kFailed, "cannot start wavec: fork failed");
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "wave-run: cannot execute %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (const auto &a : args)
      cmd += (cmd.empty() ? "" : " ") + a;
    die(kFailed, fmt::format("compiling with wavec failed (exit {}): {}",
                             WIFEXITED(status) ? WEXITSTATUS(status) : -1, cmd));
  }
  return out;
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/wave-run.XXXXXX";
    if (::mkdtemp(tmpl))
      path = tmpl;
  }
  ~TempDir() {
    if (path.empty())
      return;
    // Our own files, then the directory.
    for (const char *f : {"/kernel.wemu", "/kernel.hsaco", "/kernel.ptx", "/kernel.json"})
      std::remove((path + f).c_str());
    ::rmdir(path.c_str());
  }
};

struct DeviceRun {
  wave_device_t dev = nullptr;
  wave_module_t module = nullptr;
  std::vector<void *> buffers;
  std::function<void()> launch; // one synchronized launch of the loaded kernel
  ~DeviceRun() {
    for (void *b : buffers)
      if (b)
        wave_free(dev, b);
    if (module)
      wave_module_unload(module);
    if (dev)
      wave_device_close(dev);
  }
};

// Opens the device; exits with 77 when it is not available, 2 for a bad URI.
wave_device_t openDevice(const std::string &uri) {
  wave_device_t dev = nullptr;
  wave_status_t s = wave_device_open(uri.c_str(), &dev);
  if (s == WAVE_SUCCESS)
    return dev;
  if (s == WAVE_ERROR_INVALID_ARGUMENT)
    die(kBadInput, fmt::format("--device {}: {}", uri, wave_last_error()));
  if (s == WAVE_ERROR_UNSUPPORTED || s == WAVE_ERROR_DRIVER_NOT_FOUND || s == WAVE_ERROR_NO_DEVICE)
    die(kUnavailable, fmt::format("device '{}' is not available here: {} ({}); skipped", uri,
                                  wave_last_error(), wave_status_name(s)));
  check(s, "wave_device_open");
  return nullptr;
}

// ---- --profile --------------------------------------------------------------------------------

// The kernel's register use from wavec's metadata JSON (docs/schemas/metadata.schema.json):
// fields that are null or absent stay -1 (unknown).
emu::profile::Registers readRegisters(const std::string &json, const std::string &kernel) {
  emu::profile::Registers r;
  size_t at = json.find("\"name\": \"" + kernel + "\"");
  size_t regs = at == std::string::npos ? at : json.find("\"registers\": ", at);
  if (regs == std::string::npos)
    return r;
  const size_t end = json.find('}', regs);
  auto field = [&](const std::string &name) {
    size_t f = json.find("\"" + name + "\": ", regs);
    if (f == std::string::npos || f > end)
      return -1;
    f += name.size() + 4;
    return f < json.size() && std::isdigit(static_cast<unsigned char>(json[f]))
               ? std::atoi(json.c_str() + f)
               : -1;
  };
  r.vgprs = field("vgprs");
  r.agprs = field("agprs");
  r.sgprs = field("sgprs");
  if (r.vgprs < 0)
    r.regs = field("registers");
  return r;
}

// The TMA tensor maps of `kernel` in wavec's metadata (`tensor_maps`, docs/user-guide.md): a
// launch passes each map's device address at `offset`, after the arguments; `box` has one
// extent per dim of the tensor.
struct TensorMapUse {
  std::string param;
  unsigned offset = 0, swizzle = 0;
  std::vector<uint32_t> box;
};
std::vector<TensorMapUse> readTensorMaps(const std::string &json, const std::string &kernel) {
  std::vector<TensorMapUse> out;
  size_t at = json.find("\"name\": \"" + kernel + "\"");
  at = at == std::string::npos ? at : json.find("\"tensor_maps\": [", at);
  if (at == std::string::npos)
    return out;
  const size_t end = json.find("],\n", at); // the list is one line
  const std::string list = json.substr(at, end == std::string::npos ? std::string::npos : end - at);
  const std::string key = "{\"param\": \"";
  for (size_t p = list.find(key); p != std::string::npos; p = list.find(key, p + 1)) {
    TensorMapUse m;
    const size_t name = p + key.size(), close = list.find('"', name);
    const size_t fields = list.find("\"offset\": ", name);
    const size_t box = list.find("\"box\": [", name);
    const size_t boxEnd = box == std::string::npos ? box : list.find(']', box);
    const size_t swizzle = boxEnd == std::string::npos ? boxEnd : list.find("\"swizzle_bytes\": ", boxEnd);
    bool ok = close != std::string::npos && fields != std::string::npos &&
              swizzle != std::string::npos &&
              std::sscanf(list.c_str() + fields, "\"offset\": %u", &m.offset) == 1 &&
              std::sscanf(list.c_str() + swizzle, "\"swizzle_bytes\": %u", &m.swizzle) == 1;
    if (ok) {
      std::istringstream extents(list.substr(box + 8, boxEnd - box - 8));
      std::string e;
      while (std::getline(extents, e, ','))
        m.box.push_back(static_cast<uint32_t>(std::stoul(e)));
    }
    if (!ok || m.box.size() < 2 || m.box.size() > 5)
      die(kFailed, "unreadable tensor_maps in the kernel metadata from wavec for " + kernel);
    m.param = list.substr(name, close - name);
    out.push_back(m);
  }
  return out;
}

// Prints (or writes to --profile-output) the profile of every launch of the run.
void reportProfile(const Options &o, std::vector<emu::profile::KernelProfile> kernels,
                   const emu::profile::Registers &regs) {
  for (auto &k : kernels)
    k.registers = regs;
  const std::string text = o.profileFormat == "json"
                               ? emu::profile::renderJson(kernels, o.device)
                               : emu::profile::renderText(kernels, o.device);
  if (o.profileOutput.empty()) {
    std::fputs(text.c_str(), stdout);
    return;
  }
  std::vector<OutputFile> out{{o.profileOutput, "--profile-output", text}};
  OutputError failed;
  if (!writeOutputs(out, {o.file}, failed))
    die(kFailed, fmt::format("{}: cannot write: {}", failed.path, failed.message));
}

// Runs the kernel on the device: `args` hold the initial contents, outputs are replaced by
// the device's results. With --profile, `regs` receives the code object's registers.
void runOnDevice(const Options &o, DeviceRun &run, const std::string &target, bool emu,
                 const ir::Kernel &kernel, const std::map<std::string, int64_t> &symbols,
                 std::vector<HostTensor> &args, emu::profile::Registers *regs = nullptr) {
  DiagnosticEngine diags;
  Distribution dist;
  const TargetInfo *ti = findTarget(target);
  if (!checkStaticSizes(kernel, diags) || !distribute(kernel, *ti, diags, dist) ||
      !checkUnroll(kernel, dist, diags)) {
    diags.print(stderr, ColorMode::Auto);
    die(kBadInput, "the kernel does not distribute on " + target);
  }
  TempDir tmp;
  if (tmp.path.empty())
    die(kFailed, "cannot create a temporary directory");
  std::string object = o.object.empty() ? compileWithWavec(o, target, emu, tmp.path) : o.object;
  // A GPU launch requests the dynamic shared memory the code object needs (an emulator image
  // counts it as its own): "dynamic_lds_bytes" of the kernel's metadata, written by wavec.
  // The metadata's block too: a warp-specialized sm_90a kernel launches a producer warpgroup
  // beyond the distribution's block. The emulator needs the metadata only on sm_90a (tensor
  // maps, the producer); its image counts the dynamic shared memory itself.
  uint32_t dynamicShared = 0;
  std::vector<TensorMapUse> maps;
  uint32_t producerBlock = 0;
  if (!emu || target == "sm_90a") {
    std::ifstream in(compileWithWavec(o, target, false, tmp.path, /*metadata=*/true));
    std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t named = json.find("\"name\": \"" + kernel.name + "\"");
    size_t at = named == std::string::npos ? named : json.find("\"dynamic_lds_bytes\": ", named);
    if (at == std::string::npos)
      die(kFailed, "the kernel metadata from wavec names no dynamic_lds_bytes for " + kernel.name);
    if (!emu)
      dynamicShared = static_cast<uint32_t>(std::stoul(json.substr(at + 21)));
    maps = readTensorMaps(json, kernel.name);
    at = json.find("\"block\": [", named);
    if (at == std::string::npos)
      die(kFailed, "the kernel metadata from wavec names no block for " + kernel.name);
    producerBlock = static_cast<uint32_t>(std::stoul(json.substr(at + 10)));
  }
  if (regs && emu) { // what the target's own code object uses (--profile's occupancy)
    std::ifstream in(compileWithWavec(o, target, false, tmp.path, /*metadata=*/true));
    std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    *regs = readRegisters(json, kernel.name);
  }
  check(wave_module_load_file(run.dev, object.c_str(), &run.module), "wave_module_load_file");
  wave_kernel_t k = nullptr;
  check(wave_module_get_kernel(run.module, kernel.name.c_str(), &k), "wave_module_get_kernel");

  KernelAbi abi = kernelAbi(kernel, dist);
  std::vector<uint8_t> packed(abi.size, 0);
  run.buffers.assign(args.size(), nullptr);
  for (size_t p = 0; p < args.size(); ++p) {
    if (!kernel.params[p].value->type.isMemory())
      continue;
    check(wave_malloc(run.dev, std::max<size_t>(args[p].data.size(), 1), &run.buffers[p]),
          "wave_malloc");
  }
  auto upload = [&] {
    for (size_t p = 0; p < args.size(); ++p)
      if (run.buffers[p] && !args[p].data.empty())
        check(wave_memcpy_htod(run.dev, run.buffers[p], args[p].data.data(), args[p].data.size()),
              "wave_memcpy_htod");
  };
  for (const AbiArg &a : abi.args) {
    size_t p = 0;
    while (p < kernel.params.size() && kernel.params[p].name != a.name)
      ++p;
    switch (a.kind) {
    case AbiArg::Pointer: std::memcpy(packed.data() + a.offset, &run.buffers[p], 8); break;
    case AbiArg::Scalar: std::memcpy(packed.data() + a.offset, args[p].data.data(), a.size); break;
    case AbiArg::DynamicDim: {
      int64_t v = symbols.at(a.name);
      std::memcpy(packed.data() + a.offset, &v, 8);
      break;
    }
    }
  }
  // TMA tensor maps, built like the generated stub builds them (host_api.cpp).
  for (const TensorMapUse &m : maps) {
    size_t p = 0;
    while (p < kernel.params.size() && kernel.params[p].name != m.param)
      ++p;
    if (p == kernel.params.size() ||
        kernel.params[p].value->type.shape.size() != m.box.size())
      die(kFailed, "the kernel metadata names a tensor map of an unknown tensor " + m.param);
    const ir::Type &t = kernel.params[p].value->type;
    const uint32_t rank = static_cast<uint32_t>(m.box.size());
    const unsigned bits = bitWidth(t.dtype);
    std::vector<uint64_t> dims(rank), strides(rank, 0);
    for (uint32_t i = 0; i < rank; ++i) {
      auto n = t.shape[i].size.evaluate(symbols);
      if (!n || *n < 0)
        die(kFailed, "the shape of " + m.param + " is out of range");
      dims[i] = uint64_t(*n);
    }
    uint64_t stride = bits / 8; // row-major: dim i's stride is the later dims' elements
    for (uint32_t i = rank; i-- > 1;) {
      stride *= dims[i];
      strides[i - 1] = stride;
    }
    const wave_dtype_t dtype = {static_cast<uint8_t>(t.dtype == ScalarType::BF16 ? 4 : 2),
                                static_cast<uint8_t>(bits), 1};
    uint64_t address = 0;
    check(wave_tensor_map(run.dev, run.buffers[p], dtype, rank, dims.data(), strides.data(),
                          m.box.data(), m.swizzle, &address),
          "wave_tensor_map");
    packed.resize(std::max<size_t>(packed.size(), m.offset + 8), 0);
    std::memcpy(packed.data() + m.offset, &address, 8);
  }
  std::array<uint32_t, 3> grid, block;
  bool empty = false;
  for (int i = 0; i < 3; ++i) {
    auto g = dist.grid[i].evaluate(symbols);
    if (!g || *g < 0 || *g > UINT32_MAX)
      die(kFailed, fmt::format("grid size {} = {} is out of range", i, dist.grid[i].str()));
    grid[i] = static_cast<uint32_t>(*g);
    block[i] = dist.block[i];
    empty |= *g == 0;
  }
  if (producerBlock > block[0] && block[1] == 1 && block[2] == 1)
    block[0] = producerBlock; // the producer warpgroup after the distribution's threads
  // Kept for --bench, so it owns copies of everything it uses.
  run.launch = [dev = run.dev, k, grid, block, empty, packed, dynamicShared] {
    if (!empty)
      check(wave_launch(dev, nullptr, k, grid.data(), block.data(), dynamicShared, packed.data(),
                        packed.size()),
            "wave_launch");
    check(wave_device_synchronize(dev), "wave_device_synchronize");
  };
  upload();
  run.launch();
  for (size_t p = 0; p < args.size(); ++p)
    if (kernel.params[p].isOutput && !args[p].data.empty())
      check(wave_memcpy_dtoh(run.dev, args[p].data.data(), run.buffers[p], args[p].data.size()),
            "wave_memcpy_dtoh");
}

// --bench: a warm-up, then N timed launches (each synchronized); prints the median.
void bench(const Options &o, DeviceRun &run, const ir::Kernel &kernel,
           const std::vector<HostTensor> &args) {
  const unsigned warm = std::max(1u, o.bench / 10);
  for (unsigned i = 0; i < warm; ++i)
    run.launch();
  std::vector<double> times;
  for (unsigned i = 0; i < o.bench; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run.launch();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  double bytes = 0;
  for (size_t p = 0; p < args.size(); ++p)
    if (kernel.params[p].value->type.isMemory())
      bytes += static_cast<double>(args[p].data.size()) *
               ((isRead(kernel, kernel.params[p].value) ? 1 : 0) + (kernel.params[p].isOutput ? 1 : 0));
  std::printf("bench %s on %s: %u runs after %u warm-up, median %.3f us, min %.3f us, "
              "%.2f GB/s (%.0f bytes read + written per run)\n",
              kernel.name.c_str(), o.device.c_str(), o.bench, warm, median * 1e6, times[0] * 1e6,
              median > 0 ? bytes / median / 1e9 : 0.0, bytes);
}

int runMain(const Options &o) {
  if (o.reference == !o.device.empty())
    die(kBadInput, o.reference ? "--reference and --device exclude each other"
                               : "give --device URI (emu, emu:gfx942, emu:sm_90, emu:sm_90a, hip://0, "
                                 "cuda://0) or --reference");
  if (o.reference && o.check)
    die(kBadInput, "--check compares a device run against the reference evaluator: give --device "
                   "(or compare the reference with --expect NAME=FILE.npy)");
  if (o.reference && o.bench)
    die(kBadInput, "--bench times a device run: give --device");
  if (o.profileFormat != "text" && o.profileFormat != "json")
    die(kBadInput, fmt::format("--profile-format {}: expected text or json", o.profileFormat));
  if (o.profile && o.reference)
    die(kBadInput, "--profile counts what the CPU emulator runs: give --device emu:TARGET");
  if (o.profile && o.bench)
    die(kBadInput, "--profile and --bench exclude each other (the profiled emulator is slower)");
  if (o.profile && !o.device.empty() && o.device != "auto" && o.device.rfind("emu", 0) != 0)
    die(kBadInput, fmt::format("--profile needs an emulator device (emu, emu:gfx942, emu:sm_90, "
                               "...): '{}' is a GPU, whose counters the profiler cannot read",
                               o.device));
  if (o.reference && !o.object.empty())
    die(kBadInput, "--object needs --device");
  if (o.check && !o.expects.empty())
    die(kBadInput, "--check and --expect exclude each other");
  if (o.rtol && *o.rtol < 0)
    die(kBadInput, "--rtol must be non-negative");
  if (o.atol && *o.atol < 0)
    die(kBadInput, "--atol must be non-negative");
  if (o.relNorm && !(*o.relNorm > 0))
    die(kBadInput, "--rel-norm must be positive");
  if (o.relNorm && (o.rtol || o.atol))
    die(kBadInput, "--rel-norm replaces the per-element check: give it without --rtol/--atol");

  // The device first: when it is not available there is nothing to do.
  DeviceRun run;
  std::string target = o.target.empty() ? "gfx942" : o.target;
  bool emu = false;
  if (!o.reference) {
    run.dev = openDevice(o.device);
    wave_device_info_t info;
    check(wave_device_info(run.dev, &info), "wave_device_info");
    std::string arch = info.arch;
    emu = arch.rfind("emu:", 0) == 0;
    std::string devTarget = emu ? arch.substr(4) : arch;
    if (o.profile && !emu)
      die(kBadInput, fmt::format("--profile needs an emulator device: '{}' opened the GPU {}",
                                 o.device, arch));
    if (!o.target.empty() && o.target != devTarget)
      die(kBadInput, fmt::format("--target {} differs from the device's target {}", o.target,
                                 devTarget));
    target = devTarget;
  }

  Loaded l = loadProgram(o, target);
  const ir::Kernel &k = *l.kernel;
  auto paramIndex = [&](const std::string &name, const char *option) {
    for (size_t p = 0; p < k.params.size(); ++p)
      if (k.params[p].name == name)
        return p;
    std::string names;
    for (const auto &p : k.params)
      names += (names.empty() ? "" : ", ") + p.name;
    die(kBadInput, fmt::format("{} {}: kernel '{}' has no parameter '{}' (it has {})", option,
                               name, k.name, name, names));
  };

  // Inputs given on the command line.
  std::vector<std::optional<HostTensor>> given(k.params.size());
  std::vector<std::string> source(k.params.size());
  for (const auto &[name, value] : pairs(o.inputs, "--input")) {
    size_t p = paramIndex(name, "--input");
    const ir::Type &ty = k.params[p].value->type;
    HostTensor t;
    if (ty.isMemory()) {
      std::string error;
      if (!npy::read(value, ty.dtype, t, error))
        die(kBadInput, error);
      if (t.shape.size() != ty.shape.size())
        die(kBadInput, fmt::format("{}: rank {} (shape ({})) does not match '{}: {}' of rank {}",
                                   value, t.shape.size(), fmt::join(t.shape, ", "), name,
                                   ty.str(), ty.shape.size()));
      source[p] = value;
    } else {
      t = HostTensor::zeros(ty.dtype, {});
      double d;
      int64_t i;
      if (isFloat(ty.dtype) && parseDouble(value, d))
        t.setFloat(0, d);
      else if (!isFloat(ty.dtype) && parseInt(value, i))
        t.setInt(0, i);
      else
        die(kBadInput, fmt::format("--input {}={}: '{}' is a scalar of type {}: expected a number",
                                   name, value, name, scalarTypeName(ty.dtype)));
      source[p] = "--input " + name;
    }
    given[p] = std::move(t);
  }

  // The output files, checked before anything runs: none may be an input, and each is written
  // through the rules of src/driver/files.h (all outputs or none, at the end).
  std::vector<OutputFile> outputFiles;
  std::vector<std::string> inputFiles{o.file};
  if (!o.object.empty())
    inputFiles.push_back(o.object);
  for (const auto &[name, value] : pairs(o.inputs, "--input"))
    inputFiles.push_back(value);
  for (const auto &[name, value] : pairs(o.expects, "--expect"))
    inputFiles.push_back(value);
  if (!o.outputDir.empty()) {
    struct stat st;
    if (::stat(o.outputDir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
      die(kBadInput, fmt::format("--output-dir {}: not a directory", o.outputDir));
    for (size_t p = 0; p < k.params.size(); ++p)
      if (k.params[p].isOutput)
        outputFiles.push_back({o.outputDir + "/" + k.params[p].name + ".npy", "--output-dir", ""});
    OutputError failed;
    // A directory still to be made holds no input.
    if (::stat(o.outputDir.c_str(), &st) == 0 && !checkOutputs(outputFiles, inputFiles, failed))
      die(kBadInput, fmt::format("{}: cannot write: {}", failed.path, failed.message));
  }

  // Dynamic symbols: --size, then the given tensors' shapes.
  std::map<std::string, int64_t> symbols;
  for (const auto &[name, value] : pairs(o.sizes, "--size")) {
    if (std::find(k.dynamicSymbols.begin(), k.dynamicSymbols.end(), name) == k.dynamicSymbols.end())
      die(kBadInput, fmt::format("--size {}: '{}' is not a dynamic symbol of kernel '{}'{}", name,
                                 name, k.name,
                                 k.dynamicSymbols.empty() ? std::string(" (it has none)")
                                                          : " (they are " +
                                                                fmt::format("{}", fmt::join(k.dynamicSymbols, ", ")) + ")"));
    int64_t v;
    if (!parseInt(value, v) || v < 0)
      die(kBadInput, fmt::format("--size {}={}: expected a non-negative integer", name, value));
    symbols[name] = v;
  }
  for (size_t p = 0; p < k.params.size(); ++p) {
    if (!given[p])
      continue;
    const ir::Type &ty = k.params[p].value->type;
    for (size_t d = 0; d < ty.shape.size(); ++d) {
      auto s = ty.shape[d].size.asSymbol();
      if (!s)
        continue;
      auto it = symbols.find(*s);
      if (it == symbols.end())
        symbols[*s] = given[p]->shape[d];
    }
  }
  for (const auto &s : k.dynamicSymbols)
    if (!symbols.count(s))
      die(kBadInput, fmt::format("the size of dynamic symbol '{}' is unknown: give --size {}=N "
                                 "(or -D{}=N to compile it in, or an --input with that dim)",
                                 s, s, s));

  // Where wave-run's own lines go: standard error when standard output holds the JSON profile.
  FILE *info = o.profile && o.profileFormat == "json" && o.profileOutput.empty() ? stderr : stdout;

  // Every argument: given, random, or poison (outputs the kernel does not read).
  uint64_t seed = o.seed ? *o.seed : std::random_device{}();
  std::mt19937_64 rng(seed);
  bool random = false;
  std::vector<HostTensor> args(k.params.size());
  for (size_t p = 0; p < k.params.size(); ++p) {
    if (given[p]) {
      args[p] = *given[p];
      continue;
    }
    std::vector<int64_t> shape;
    std::string error;
    if (!ref::paramShape(k, p, symbols, shape, error))
      die(kBadInput, error);
    double bytes = ref::elementBytes(k.params[p].value->type.dtype);
    for (int64_t d : shape)
      bytes *= static_cast<double>(d);
    if (bytes > 64.0 * (1ull << 30))
      die(kBadInput, fmt::format("parameter '{}' of shape [{}] would take {:.3g} GiB: too large",
                                 k.params[p].name, fmt::join(shape, ", "), bytes / (1ull << 30)));
    args[p] = HostTensor::zeros(k.params[p].value->type.dtype, shape);
    if (k.params[p].isOutput && !isRead(k, k.params[p].value)) {
      poison(args[p]);
    } else {
      fillRandom(args[p], rng);
      random = true;
    }
  }
  if (random)
    std::fprintf(info, "wave-run: random inputs with --seed %llu\n",
                 static_cast<unsigned long long>(seed));
  {
    std::map<std::string, int64_t> check = symbols;
    std::string error;
    if (!ref::bindShapes(k, args, check, error)) {
      for (size_t p = 0; p < k.params.size(); ++p)
        if (!source[p].empty() && error.find("'" + k.params[p].name + "'") != std::string::npos)
          error = source[p] + ": " + error;
      die(kBadInput, error);
    }
  }

  // Reference run (for --reference, and as the oracle of --check).
  std::vector<HostTensor> refArgs;
  std::vector<int64_t> written;
  if (o.reference || o.check) {
    refArgs = args;
    std::string error;
    if (!ref::evaluate(k, symbols, refArgs, error, &written))
      die(kFailed, fmt::format("{}: reference evaluation of kernel '{}' failed: {}", o.file,
                               k.name, error));
  }
  std::vector<HostTensor> result = o.reference ? refArgs : args;
  emu::profile::Collector collector;
  emu::profile::Registers regs;
  if (!o.reference) {
    struct Install { // the collector is installed for this run only
      explicit Install(emu::profile::Collector *c) { emu::profile::setCollector(c); }
      ~Install() { emu::profile::setCollector(nullptr); }
    } install(o.profile ? &collector : nullptr);
    runOnDevice(o, run, target, emu, k, symbols, result, o.profile ? &regs : nullptr);
  }

  bool pass = true;
  if (o.check) {
    for (size_t p = 0; p < k.params.size(); ++p)
      if (k.params[p].isOutput)
        pass &= compare(k.params[p].name, result[p], refArgs[p], o, "reference");
  }
  for (const auto &[name, file] : pairs(o.expects, "--expect")) {
    size_t p = paramIndex(name, "--expect");
    if (!k.params[p].isOutput)
      die(kBadInput, fmt::format("--expect {}: '{}' is not an output of kernel '{}'", name, name,
                                 k.name));
    HostTensor want;
    std::string error;
    if (!npy::read(file, result[p].dtype, want, error))
      die(kBadInput, error);
    if (want.shape != result[p].shape)
      die(kBadInput, fmt::format("{}: shape ({}) does not match output '{}' of shape ({})", file,
                                 fmt::join(want.shape, ", "), name, fmt::join(result[p].shape, ", ")));
    pass &= compare(name, result[p], want, o, file);
  }
  if (!o.outputDir.empty()) {
    if (::mkdir(o.outputDir.c_str(), 0777) != 0 && errno != EEXIST)
      die(kFailed, fmt::format("--output-dir {}: cannot create: {}", o.outputDir,
                               std::strerror(errno)));
    for (size_t p = 0, f = 0; p < k.params.size(); ++p)
      if (k.params[p].isOutput)
        outputFiles[f++].data = npy::encode(result[p]);
    OutputError failed;
    if (!writeOutputs(outputFiles, inputFiles, failed))
      die(kFailed, fmt::format("{}: cannot write: {}", failed.path, failed.message));
  }
  if (o.bench && !o.reference)
    bench(o, run, k, result);
  if (o.profile)
    reportProfile(o, collector.kernels(), regs);
  if (!o.check && o.expects.empty() && !o.bench)
    std::fprintf(info, "wave-run: %s ran on %s\n", k.name.c_str(),
                o.reference ? "the reference evaluator" : o.device.c_str());
  if (o.reference)
    for (size_t p = 0; p < k.params.size(); ++p)
      if (k.params[p].isOutput)
        std::printf("output %s: the kernel wrote %lld of %lld elements\n", k.params[p].name.c_str(),
                    static_cast<long long>(written[p]), static_cast<long long>(args[p].numel()));
  return pass ? kOk : kFailed;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"wave-run: run a Wave kernel on a device or the reference evaluator, check and "
               "time it", "wave-run"};
  Options o;
  uint64_t seed = 0;
  double rtol = 0, atol = 0, relNorm = 0;
  app.add_option("file", o.file, "the .wave source file")->required();
  app.add_option("--kernel", o.kernel, "the kernel to run (needed when the file has several)");
  app.add_option("-D", o.defines, "bind a symbol at compile time: -DSYM=VALUE");
  app.add_option("--size", o.sizes, "the run-time value of a dynamic symbol: --size SYM=N");
  app.add_option("--device", o.device,
                 "run on a device: emu, emu:gfx942, emu:sm_90, emu:sm_90a, hip://N, cuda://N, auto");
  app.add_flag("--reference", o.reference, "run through the reference evaluator");
  app.add_option("--target", o.target,
                 "target of the program (--reference: default gfx942; a device: its own)");
  app.add_option("--object", o.object,
                 "a code object compiled from FILE for the device (skips running wavec)");
  app.add_option("--input", o.inputs,
                 "NAME=FILE.npy for a tensor, NAME=NUMBER for a scalar (others: random)");
  auto *seedOpt = app.add_option("--seed", seed, "seed of the random inputs (default: fresh)");
  auto *outputDirOpt =
      app.add_option("--output-dir", o.outputDir, "write every output as DIR/NAME.npy");
  app.add_flag("--check", o.check, "compare the device's outputs with the reference evaluator's");
  app.add_option("--expect", o.expects, "compare output NAME with FILE.npy: --expect NAME=FILE");
  auto *rtolOpt = app.add_option("--rtol", rtol, "relative tolerance (default per dtype)");
  auto *atolOpt = app.add_option("--atol", atol, "absolute tolerance (default per dtype)");
  auto *relNormOpt = app.add_option(
      "--rel-norm", relNorm,
      "pass when ||out - want|| / ||want|| (2-norms over the tensor) is below TOL, instead of "
      "the per-element rtol/atol check");
  app.add_option("--bench", o.bench, "time N runs after a warm-up and print the median");
  app.add_flag("--profile", o.profile,
               "emulator devices: count global sectors, shared-memory bank conflicts, the "
               "instruction mix and occupancy, and print them per memory instruction and kernel");
  auto *profileFormatOpt = app.add_option("--profile-format", o.profileFormat,
                                          "the --profile report: text (default) or json");
  app.add_option("--profile-output", o.profileOutput,
                 "write the --profile report to FILE instead of standard output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::fprintf(stderr, "wave-run: error: %s\nRun 'wave-run --help' for the options.\n", e.what());
    return kBadInput;
  }
  if (*outputDirOpt && o.outputDir.empty()) {
    std::fprintf(stderr, "wave-run: error: --output-dir needs a directory\n"
                         "Run 'wave-run --help' for the options.\n");
    return kBadInput;
  }
  if (*seedOpt)
    o.seed = seed;
  if (*profileFormatOpt || !o.profileOutput.empty())
    o.profile = true; // --profile-format and --profile-output imply --profile
  if (*rtolOpt)
    o.rtol = rtol;
  if (*atolOpt)
    o.atol = atol;
  if (*relNormOpt)
    o.relNorm = relNorm;
  // What went to standard output must have arrived (a full disk, a closed pipe: an error).
  auto checkStdout = [](int status) {
    std::string error;
    if (flushStdout(error))
      return status;
    std::fprintf(stderr, "wave-run: error: cannot write to standard output: %s\n", error.c_str());
    return status == kOk ? kFailed : status;
  };
  try {
    // On a large stack: defence in depth behind the front end's nesting limits (large_stack.h).
    return checkStdout(wave::runOnLargeStack([&] { return runMain(o); }));
  } catch (const ExitError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "wave-run: %s%s\n", e.code == kUnavailable ? "" : "error: ",
                 e.message.c_str());
    return e.code;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "wave-run: error: %s\n", e.what());
    return kFailed;
  }
}
