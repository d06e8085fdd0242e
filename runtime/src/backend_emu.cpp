// The `emu` back end: the CPU emulator (runtime/src/emu/) behind the runtime's Backend
// interface. Devices are the emulated targets (`emu:gfx942`, ...; `emu` = `emu:gfx942`); device
// memory is host memory whose every allocation the back end tracks, so the interpreter can
// check each global access against the live allocations. Launches run synchronously.
#include "emu/emu.h"
#include "internal.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace wave::rt {
namespace {

struct EmuTarget {
  const char *name;
  uint32_t waveSize;
  uint32_t sharedPerBlock;
  wave_vendor_t emulated;
};

const EmuTarget kTargets[] = {
    {"gfx942", 64, 65536, WAVE_VENDOR_AMD}, {"gfx90a", 64, 65536, WAVE_VENDOR_AMD},
    {"gfx1100", 32, 65536, WAVE_VENDOR_AMD}, {"sm_80", 32, 49152, WAVE_VENDOR_NVIDIA},
    {"sm_90", 32, 49152, WAVE_VENDOR_NVIDIA}, {"sm_90a", 32, 49152, WAVE_VENDOR_NVIDIA},
};

struct EmuDevice {
  const EmuTarget *target;
  // TMA tensor maps (tensorMap2d): request -> the map's allocation on this device.
  std::mutex mapMutex;
  std::map<TensorMapRequest, void *> maps;
};

// Device memory of every emulated device is one host heap: a buffer allocated on one emulated
// device is valid on the others (so `auto`, which may run a kernel on another emulator than the
// one it opened, works on buffers allocated on the device it gave). Each allocation remembers
// the device that owns it: wave_free takes it on that device only, and closing a device frees
// its allocations.
std::mutex heapMutex;
std::vector<emu::Allocation> &heap() {
  static auto *h = new std::vector<emu::Allocation>(); // sorted by base; leaked like the backend
  return *h;
}
std::vector<const EmuDevice *> &owners() { // parallel to heap()
  static auto *o = new std::vector<const EmuDevice *>();
  return *o;
}

struct EmuModule {
  emu::Program program;
};

class EmuBackend final : public Backend {
public:
  const char *name() const override { return "emu"; }

  wave_status_t deviceCount(int *count) override {
    *count = int(sizeof kTargets / sizeof kTargets[0]);
    return WAVE_SUCCESS;
  }

  wave_status_t openDevice(int ordinal, void **dev, wave_device_info_t *info) override {
    auto d = std::make_unique<EmuDevice>();
    d->target = &kTargets[ordinal];
    info->vendor = WAVE_VENDOR_EMULATOR;
    std::snprintf(info->arch, sizeof info->arch, "emu:%s", d->target->name);
    std::snprintf(info->name, sizeof info->name, "Wave CPU emulator (%s)", d->target->name);
    info->warp_size = d->target->waveSize;
    info->shared_memory_per_block = d->target->sharedPerBlock;
    info->multiprocessor_count = hostThreads();
    *dev = d.release();
    return WAVE_SUCCESS;
  }

  void closeDevice(void *dev) override {
    auto *d = static_cast<EmuDevice *>(dev);
    {
      std::lock_guard<std::mutex> lock(heapMutex);
      auto &h = heap();
      auto &o = owners();
      for (size_t i = h.size(); i-- > 0;)
        if (o[i] == d) {
          std::free(reinterpret_cast<void *>(h[i].base));
          h.erase(h.begin() + long(i));
          o.erase(o.begin() + long(i));
        }
    }
    delete d;
  }

  wave_status_t synchronize(void *) override { return WAVE_SUCCESS; }

  // A TMA tensor map for the emulator: the request in an emu::EmuTensorMap (emu_image.h), in an
  // allocation of the device, so a kernel's TMA instruction reads it through the global-memory
  // checks. Cached per request like the CUDA back end's maps (launches are synchronous, so the
  // cache may be emptied at any call); the maps go with the device.
  wave_status_t tensorMap(void *dev, const TensorMapRequest &r, void **out) override {
    constexpr size_t kMaxMaps = 1024;
    int type = 0;
    if (wave_status_t s = checkTensorMapRequest(r, &type))
      return s;
    auto *d = static_cast<EmuDevice *>(dev);
    std::lock_guard<std::mutex> lock(d->mapMutex);
    if (auto it = d->maps.find(r); it != d->maps.end()) {
      *out = it->second;
      return WAVE_SUCCESS;
    }
    if (d->maps.size() >= kMaxMaps) {
      for (auto &m : d->maps)
        release(dev, m.second);
      d->maps.clear();
    }
    void *p = nullptr;
    if (wave_status_t s = allocate(dev, emu::kTensorMapBytes, &p))
      return s;
    emu::EmuTensorMap map{};
    std::memcpy(map.magic, emu::kTensorMapMagic, sizeof map.magic);
    map.base = reinterpret_cast<uintptr_t>(r.base);
    map.rank = r.rank;
    for (uint32_t i = 0; i < r.rank; ++i) {
      map.dims[i] = r.dims[i];
      map.box[i] = r.box[i];
      if (i + 1 < r.rank)
        map.strides[i] = r.strides[i];
    }
    map.elementBytes = r.elementBytes;
    map.swizzleBytes = r.swizzleBytes;
    std::memset(p, 0, emu::kTensorMapBytes);
    std::memcpy(p, &map, sizeof map);
    d->maps[r] = p;
    *out = p;
    return WAVE_SUCCESS;
  }

  wave_status_t allocate(void *dev, size_t bytes, void **out) override {
    auto *d = static_cast<EmuDevice *>(dev);
    size_t rounded = (bytes + 255) / 256 * 256;
    if (rounded < bytes)
      return failf(WAVE_ERROR_OUT_OF_MEMORY, "wave_malloc: %zu bytes", bytes);
    void *p = std::aligned_alloc(256, rounded);
    if (!p)
      return failf(WAVE_ERROR_OUT_OF_MEMORY, "wave_malloc: %zu bytes of emulator memory", bytes);
    std::lock_guard<std::mutex> lock(heapMutex);
    emu::Allocation a{reinterpret_cast<uintptr_t>(p), bytes};
    auto &h = heap();
    auto at = std::upper_bound(h.begin(), h.end(), a,
                               [](const emu::Allocation &x, const emu::Allocation &y) {
                                 return x.base < y.base;
                               });
    owners().insert(owners().begin() + (at - h.begin()), d);
    h.insert(at, a);
    *out = p;
    return WAVE_SUCCESS;
  }

  wave_status_t release(void *dev, void *ptr) override {
    auto *d = static_cast<EmuDevice *>(dev);
    std::lock_guard<std::mutex> lock(heapMutex);
    auto &h = heap();
    for (size_t i = 0; i < h.size(); ++i)
      if (h[i].base == reinterpret_cast<uintptr_t>(ptr) && owners()[i] == d) {
        std::free(ptr);
        h.erase(h.begin() + long(i));
        owners().erase(owners().begin() + long(i));
        return WAVE_SUCCESS;
      }
    return failf(WAVE_ERROR_INVALID_ARGUMENT,
                 "wave_free: %p is not an allocation of this emulator device", ptr);
  }

  wave_status_t copy(void *dev, CopyKind kind, void *dst, const void *src,
                     size_t bytes) override {
    auto *d = static_cast<EmuDevice *>(dev);
    if (kind != CopyKind::DeviceToHost)
      if (wave_status_t s = checkRange(d, dst, bytes, "destination"))
        return s;
    if (kind != CopyKind::HostToDevice)
      if (wave_status_t s = checkRange(d, src, bytes, "source"))
        return s;
    std::memmove(dst, src, bytes);
    return WAVE_SUCCESS;
  }

  wave_status_t fill(void *dev, void *dst, int value, size_t bytes) override {
    if (wave_status_t s = checkRange(static_cast<EmuDevice *>(dev), dst, bytes, "destination"))
      return s;
    std::memset(dst, value, bytes);
    return WAVE_SUCCESS;
  }

  wave_status_t streamCreate(void *, void **stream) override {
    *stream = new int(0); // launches are synchronous: a stream is only an identity
    return WAVE_SUCCESS;
  }
  wave_status_t streamDestroy(void *, void *stream) override {
    delete static_cast<int *>(stream);
    return WAVE_SUCCESS;
  }
  wave_status_t streamSynchronize(void *, void *) override { return WAVE_SUCCESS; }

  // Launches finish before they return, so an event is the host time of its recording.
  wave_status_t eventCreate(void *, void **event) override {
    *event = new double(-1.0);
    return WAVE_SUCCESS;
  }
  void eventDestroy(void *, void *event) override { delete static_cast<double *>(event); }
  wave_status_t eventRecord(void *, void *event, void *) override {
    auto now = std::chrono::steady_clock::now().time_since_epoch();
    *static_cast<double *>(event) = std::chrono::duration<double, std::milli>(now).count();
    return WAVE_SUCCESS;
  }
  wave_status_t eventSynchronize(void *, void *) override { return WAVE_SUCCESS; }
  wave_status_t eventElapsed(void *, void *start, void *end, float *ms) override {
    double a = *static_cast<double *>(start), b = *static_cast<double *>(end);
    if (a < 0 || b < 0)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_event_elapsed_ms: an event was never recorded");
    *ms = float(b - a);
    return WAVE_SUCCESS;
  }

  wave_status_t validateImage(const void *image, size_t size) override {
    if (!emu::isEmuImage(image, size))
      return failf(WAVE_ERROR_INVALID_IMAGE,
                   "emulator device: not an emulator image (no WAVEEMU1 magic); compile with "
                   "wavec --emit=emu or use the generated stub, which embeds one per target");
    return WAVE_SUCCESS;
  }

  wave_status_t moduleLoad(void *dev, const void *image, size_t size, void **module) override {
    auto *d = static_cast<EmuDevice *>(dev);
    auto m = std::make_unique<EmuModule>();
    if (wave_status_t s = emu::loadProgram(image, size, m->program))
      return s;
    if (m->program.target != d->target->name)
      return failf(WAVE_ERROR_INVALID_IMAGE,
                   "emulator image compiled for %s cannot run on the emulated %s (open emu:%s)",
                   m->program.target.c_str(), d->target->name, m->program.target.c_str());
    *module = m.release();
    return WAVE_SUCCESS;
  }

  void moduleUnload(void *, void *module) override { delete static_cast<EmuModule *>(module); }

  wave_status_t getFunction(void *, void *module, const char *name, void **function) override {
    auto *m = static_cast<EmuModule *>(module);
    for (auto &k : m->program.kernels)
      if (k.name == name) {
        std::lock_guard<std::mutex> lock(functionsMutex_);
        functions_.push_back(std::make_unique<FunctionRef>(FunctionRef{m, &k}));
        *function = functions_.back().get();
        return WAVE_SUCCESS;
      }
    return failf(WAVE_ERROR_NOT_FOUND, "no kernel '%s' in the emulator image", name);
  }

  wave_status_t launch(void *dev, void *, void *function, const uint32_t grid[3],
                       const uint32_t block[3], uint32_t dynamicSharedBytes, const void *args,
                       size_t argsSize) override {
    auto *d = static_cast<EmuDevice *>(dev);
    auto *f = static_cast<FunctionRef *>(function);
    emu::LaunchParams p{};
    std::memcpy(p.grid, grid, sizeof p.grid);
    std::memcpy(p.block, block, sizeof p.block);
    p.dynamicShared = dynamicSharedBytes;
    p.args = args;
    p.argsSize = argsSize;
    p.waveSize = f->module->program.waveSize;
    p.archName = d->target->name;
    p.hostThreads = hostThreads();
    if (const char *env = std::getenv("WAVE_EMU_STEP_LIMIT"); env && *env) {
      char *end = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(env, &end, 10);
      if (*end || errno || n == 0 || env[0] == '-')
        return failf(WAVE_ERROR_INVALID_ARGUMENT,
                     "WAVE_EMU_STEP_LIMIT='%s' is not a positive number of instructions", env);
      p.stepLimit = n;
    }
    {
      std::lock_guard<std::mutex> lock(heapMutex);
      p.heap = heap();
    }
    return emu::runKernel(f->module->program, *f->kernel, p);
  }

private:
  struct FunctionRef {
    EmuModule *module;
    const emu::KernelCode *kernel;
  };
  std::mutex functionsMutex_;
  std::vector<std::unique_ptr<FunctionRef>> functions_;

  static unsigned hostThreads() {
    if (const char *env = std::getenv("WAVE_EMU_THREADS")) {
      long n = std::strtol(env, nullptr, 10);
      if (n >= 1 && n <= 256)
        return unsigned(n);
    }
    unsigned n = std::thread::hardware_concurrency();
    return std::max(1u, std::min(n, 8u));
  }

  static wave_status_t checkRange(EmuDevice *d, const void *p, size_t bytes, const char *what) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    (void)d;
    std::lock_guard<std::mutex> lock(heapMutex);
    for (const auto &h : heap())
      if (a >= h.base && a - h.base <= h.size && h.size - (a - h.base) >= bytes)
        return WAVE_SUCCESS;
    return failf(WAVE_ERROR_INVALID_ARGUMENT,
                 "the %s range [%p, +%zu) is not inside one allocation of emulator device memory",
                 what, p, bytes);
  }
};

} // namespace

Backend &emuBackend() {
  static EmuBackend *backend = new EmuBackend(); // leaked like the other back ends' state
  return *backend;
}

int emuOrdinal(const char *target) {
  for (size_t i = 0; i < sizeof kTargets / sizeof kTargets[0]; ++i)
    if (std::strcmp(kTargets[i].name, target) == 0)
      return int(i);
  return -1;
}

std::string emuTargetNames() {
  std::string s;
  for (const auto &t : kTargets)
    s += (s.empty() ? "" : ", ") + std::string("emu:") + t.name;
  return s;
}

} // namespace wave::rt
