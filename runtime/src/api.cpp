// The C API: handle bookkeeping, argument and launch-limit checks, the device registry and the
// per-device module cache. Everything vendor-specific is behind wave::rt::Backend.
//
// Every entry point runs its body through `guarded`, which turns any C++ exception into a status:
// no exception may cross the C boundary, and the runtime never exits or aborts.
#include "internal.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

using namespace wave::rt;

struct wave_device {
  Backend *backend = nullptr;
  void *native = nullptr;
  wave_device_info_t info{};
  int refs = 0; // guarded by the registry mutex
  // Set when `auto` fell back to this emulator device for want of a GPU driver: a kernel whose
  // artifact lacks this emulator's images then runs on an emulator of an arch it carries.
  bool autoEmulator = false;

  // The module cache: (content hash, size) -> module. Held across a driver load so that two
  // threads lazily loading the same image get one module.
  std::mutex moduleMutex;
  std::map<std::pair<uint64_t, size_t>, wave_module *> modules;
};

struct wave_kernel {
  wave_module *module = nullptr;
  void *native = nullptr;
  std::string name;
};

struct wave_module {
  wave_device *device = nullptr;
  void *native = nullptr;
  std::pair<uint64_t, size_t> key;
  std::vector<unsigned char> image; // to tell a hash collision from a cache hit
  int refs = 0;                     // guarded by device->moduleMutex
  bool cached = false;

  std::mutex kernelMutex;
  std::map<std::string, std::unique_ptr<wave_kernel>> kernels;
};

struct wave_stream {
  wave_device *device = nullptr;
  void *native = nullptr;
  bool wrapped = false; // wave_stream_wrap: the native stream belongs to someone else
};

struct wave_event {
  wave_device *device = nullptr;
  void *native = nullptr;
};

namespace {

constexpr uint32_t kMaxBlockThreads = 1024;
constexpr uint32_t kMaxBlockDim[3] = {1024, 1024, 64};
constexpr uint32_t kMaxGridDim[3] = {0x7fffffffu, 65535, 65535};

template <typename Body> wave_status_t guarded(const char *function, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return failf(WAVE_ERROR_OUT_OF_MEMORY, "%s: out of host memory", function);
  } catch (const std::exception &e) {
    return failf(WAVE_ERROR_DRIVER, "%s: internal error: %s", function, e.what());
  } catch (...) {
    return failf(WAVE_ERROR_DRIVER, "%s: internal error (unknown exception)", function);
  }
}

wave_status_t nullArgument(const char *function, const char *argument) {
  return failf(WAVE_ERROR_INVALID_ARGUMENT, "%s: `%s` is NULL", function, argument);
}

// ---- device registry ----------------------------------------------------------------------

// One wave_device per (back end, ordinal), so the module cache really is per device.
std::mutex registryMutex;
std::map<std::pair<Backend *, int>, wave_device *> &registry() {
  // Deliberately leaked: destroying it at exit would race with drivers' own teardown.
  static auto *devices = new std::map<std::pair<Backend *, int>, wave_device *>();
  return *devices;
}

wave_status_t openOrdinal(Backend &backend, int ordinal, wave_device_t *out) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto key = std::make_pair(&backend, ordinal);
  if (auto it = registry().find(key); it != registry().end()) {
    ++it->second->refs;
    *out = it->second;
    return WAVE_SUCCESS;
  }
  int count = 0;
  if (wave_status_t s = backend.deviceCount(&count))
    return s;
  if (ordinal >= count)
    return failf(WAVE_ERROR_NO_DEVICE, "%s://%d: no such device (the driver reports %d)",
                 backend.name(), ordinal, count);
  auto device = std::make_unique<wave_device>();
  device->backend = &backend;
  if (wave_status_t s = backend.openDevice(ordinal, &device->native, &device->info))
    return s;
  device->info.ordinal = ordinal;
  std::snprintf(device->info.backend, sizeof(device->info.backend), "%s", backend.name());
  device->refs = 1;
  *out = device.get();
  registry()[key] = device.release();
  return WAVE_SUCCESS;
}

/// `auto`: the first CUDA device, else the first HIP device, else (with a notice on stderr,
/// once per process) the CPU emulator of gfx942 when no GPU driver is installed at all.
wave_status_t openAutoDetected(wave_device_t *out) {
  wave_status_t cuda = openOrdinal(cudaBackend(), 0, out);
  if (cuda == WAVE_SUCCESS)
    return cuda;
  std::string cudaWhy = wave_last_error();
  wave_status_t hip = openOrdinal(hipBackend(), 0, out);
  if (hip == WAVE_SUCCESS)
    return hip;
  std::string hipWhy = wave_last_error();
  bool noDriver = cuda == WAVE_ERROR_DRIVER_NOT_FOUND && hip == WAVE_ERROR_DRIVER_NOT_FOUND;
  if (noDriver && openOrdinal(emuBackend(), 0, out) == WAVE_SUCCESS) {
    {
      std::lock_guard<std::mutex> lock(registryMutex);
      (*out)->autoEmulator = true;
    }
    static std::once_flag notice;
    std::call_once(notice, [] {
      std::fprintf(stderr, "wave: no GPU driver found; device 'auto' runs on the CPU emulator "
                           "(emu:gfx942)\n");
    });
    return WAVE_SUCCESS;
  }
  return failf(noDriver ? WAVE_ERROR_DRIVER_NOT_FOUND : WAVE_ERROR_NO_DEVICE,
               "auto: no GPU device found (%s; %s)", cudaWhy.c_str(), hipWhy.c_str());
}

/// Parses the N of `scheme://N`: decimal digits only, at most 9 of them.
bool parseOrdinal(const char *text, int *ordinal) {
  size_t n = std::strlen(text);
  if (n == 0 || n > 9)
    return false;
  int value = 0;
  for (size_t i = 0; i < n; ++i) {
    if (text[i] < '0' || text[i] > '9')
      return false;
    value = value * 10 + (text[i] - '0');
  }
  *ordinal = value;
  return true;
}

bool hasPrefix(const char *text, const char *prefix) {
  return std::strncmp(text, prefix, std::strlen(prefix)) == 0;
}

wave_status_t openUri(const char *uri, wave_device_t *out);

/// `auto`: the device named by the environment variable WAVE_DEVICE when it is set (and not
/// itself `auto`), else the first GPU found (openAutoDetected).
wave_status_t openAuto(wave_device_t *out) {
  const char *env = std::getenv("WAVE_DEVICE");
  if (env && *env && std::strcmp(env, "auto") != 0) {
    if (wave_status_t s = openUri(env, out))
      return fail(s, std::string("auto (WAVE_DEVICE=") + env + "): " + wave_last_error());
    return WAVE_SUCCESS;
  }
  return openAutoDetected(out);
}

wave_status_t openUri(const char *uri, wave_device_t *out) {
  if (std::strcmp(uri, "auto") == 0)
    return openAuto(out);
  if (std::strcmp(uri, "emu") == 0 || hasPrefix(uri, "emu:")) {
    const char *target = uri[3] ? uri + 4 : "gfx942";
    int ordinal = emuOrdinal(target);
    if (ordinal < 0)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_device_open: unknown emulated target in \"%s\" (expected emu or one of "
                   "%s)",
                   uri, emuTargetNames().c_str());
    return openOrdinal(emuBackend(), ordinal, out);
  }
  struct Scheme {
    const char *prefix;
    Backend &(*backend)();
  };
  const Scheme schemes[] = {{"cuda://", cudaBackend}, {"hip://", hipBackend}};
  for (const Scheme &scheme : schemes) {
    if (!hasPrefix(uri, scheme.prefix))
      continue;
    int ordinal = 0;
    if (!parseOrdinal(uri + std::strlen(scheme.prefix), &ordinal))
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_device_open: bad device URI \"%s\" (expected %sN with N a device number)",
                   uri, scheme.prefix);
    return openOrdinal(scheme.backend(), ordinal, out);
  }
  return failf(WAVE_ERROR_INVALID_ARGUMENT,
               "wave_device_open: unknown device URI \"%s\" (expected cuda://N, hip://N, auto, "
               "emu or emu:TARGET)",
               uri);
}

/// Unloads a module whose last reference is gone. Caller holds device->moduleMutex.
void destroyModule(wave_module *module) {
  wave_device *device = module->device;
  if (module->cached)
    device->modules.erase(module->key);
  device->backend->moduleUnload(device->native, module->native);
  delete module;
}

wave_status_t loadModule(wave_device_t device, const void *image, size_t size, wave_module_t *out) {
  Backend &backend = *device->backend;
  if (wave_status_t s = backend.validateImage(image, size))
    return s;
  auto key = std::make_pair(hashImage(image, size), size);
  auto *bytes = static_cast<const unsigned char *>(image);

  std::lock_guard<std::mutex> lock(device->moduleMutex);
  auto it = device->modules.find(key);
  if (it != device->modules.end() && std::memcmp(it->second->image.data(), bytes, size) == 0) {
    ++it->second->refs;
    *out = it->second;
    return WAVE_SUCCESS;
  }
  auto module = std::make_unique<wave_module>();
  module->device = device;
  module->key = key;
  module->image.assign(bytes, bytes + size);
  if (wave_status_t s = backend.moduleLoad(device->native, image, size, &module->native))
    return s;
  module->refs = 1;
  // A colliding hash of different bytes keeps the first entry; the newcomer is just uncached.
  module->cached = it == device->modules.end();
  if (module->cached)
    device->modules[key] = module.get();
  *out = module.release();
  return WAVE_SUCCESS;
}

wave_status_t readFile(const char *path, std::vector<unsigned char> *bytes) {
  FILE *file = std::fopen(path, "rb");
  if (!file)
    return failf(WAVE_ERROR_NOT_FOUND, "wave_module_load_file: cannot open '%s': %s", path,
                 std::strerror(errno));
  unsigned char chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), file)) > 0)
    bytes->insert(bytes->end(), chunk, chunk + n);
  bool failed = std::ferror(file);
  std::fclose(file);
  if (failed)
    return failf(WAVE_ERROR_NOT_FOUND, "wave_module_load_file: cannot read '%s'", path);
  return WAVE_SUCCESS;
}

} // namespace

namespace wave::rt {

wave_status_t defaultDevice(wave_device_t *out) {
  // Opened on first use and held for the life of the process; a failure is retried next time.
  static std::mutex mutex;
  static wave_device_t device = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!device) {
    wave_device_t opened = nullptr;
    if (wave_status_t s = openAuto(&opened))
      return fail(s, std::string("the default device (NULL stream): ") + wave_last_error());
    device = opened;
  }
  *out = device;
  return WAVE_SUCCESS;
}

bool isAutoEmulator(wave_device_t device) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return device && device->autoEmulator;
}

wave_status_t openEmulatorForAuto(const char *target, wave_device_t *out) {
  static std::mutex mutex;
  static std::map<std::string, wave_device_t> opened; // held for the life of the process
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = opened.find(target); it != opened.end()) {
    *out = it->second;
    return WAVE_SUCCESS;
  }
  int ordinal = emuOrdinal(target);
  if (ordinal < 0)
    return failf(WAVE_ERROR_NOT_FOUND, "no emulator of %s", target);
  if (wave_status_t s = openOrdinal(emuBackend(), ordinal, out))
    return s;
  opened[target] = *out;
  std::fprintf(stderr, "wave: device 'auto' runs kernels built without emu:gfx942 on the CPU "
                       "emulator of %s (emu:%s)\n", target, target);
  return WAVE_SUCCESS;
}

wave_device_t kernelDevice(wave_kernel_t kernel) { return kernel->module->device; }

wave_status_t checkLaunchShape(const char *kernel, const uint32_t grid[3],
                               const uint32_t block[3]) {
  static const char axis[] = "xyz";
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_launch(%s): empty launch: grid (%u, %u, %u), block (%u, %u, %u)", kernel,
                   grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    if (block[i] > kMaxBlockDim[i])
      return failf(WAVE_ERROR_INVALID_ARGUMENT, "wave_launch(%s): block.%c = %u exceeds %u", kernel,
                   axis[i], block[i], kMaxBlockDim[i]);
    if (grid[i] > kMaxGridDim[i])
      return failf(WAVE_ERROR_INVALID_ARGUMENT, "wave_launch(%s): grid.%c = %u exceeds %u", kernel,
                   axis[i], grid[i], kMaxGridDim[i]);
    // HIP counts work-items per dimension in 32 bits.
    if (uint64_t(grid[i]) * block[i] > 0xffffffffull)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_launch(%s): grid.%c * block.%c = %llu threads exceeds 2^32 - 1", kernel,
                   axis[i], axis[i], (unsigned long long)grid[i] * block[i]);
    threads *= block[i];
  }
  if (threads > kMaxBlockThreads)
    return failf(WAVE_ERROR_INVALID_ARGUMENT,
                 "wave_launch(%s): block (%u, %u, %u) has %llu threads, more than %u", kernel,
                 block[0], block[1], block[2], (unsigned long long)threads, kMaxBlockThreads);
  return WAVE_SUCCESS;
}

} // namespace wave::rt

// ---- devices --------------------------------------------------------------------------------

extern "C" wave_status_t wave_device_open(const char *uri, wave_device_t *out) {
  return guarded("wave_device_open", [&] {
    if (!out)
      return nullArgument("wave_device_open", "out");
    *out = nullptr;
    if (!uri)
      return nullArgument("wave_device_open", "uri");
    return openUri(uri, out);
  });
}

extern "C" wave_status_t wave_device_close(wave_device_t device) {
  return guarded("wave_device_close", [&] {
    if (!device)
      return nullArgument("wave_device_close", "device");
    std::lock_guard<std::mutex> lock(registryMutex);
    if (--device->refs > 0)
      return WAVE_SUCCESS;
    registry().erase(std::make_pair(device->backend, device->info.ordinal));
    forgetSelections(device);
    {
      std::lock_guard<std::mutex> modules(device->moduleMutex);
      // Unload what is still loaded, whatever its count: the device is going away.
      for (auto &entry : device->modules) {
        device->backend->moduleUnload(device->native, entry.second->native);
        delete entry.second;
      }
      device->modules.clear();
    }
    device->backend->closeDevice(device->native);
    delete device;
    return WAVE_SUCCESS;
  });
}

extern "C" wave_status_t wave_device_info(wave_device_t device, wave_device_info_t *out) {
  return guarded("wave_device_info", [&] {
    if (!device)
      return nullArgument("wave_device_info", "device");
    if (!out)
      return nullArgument("wave_device_info", "out");
    *out = device->info;
    return WAVE_SUCCESS;
  });
}

extern "C" wave_status_t wave_device_synchronize(wave_device_t device) {
  return guarded("wave_device_synchronize", [&] {
    if (!device)
      return nullArgument("wave_device_synchronize", "device");
    return device->backend->synchronize(device->native);
  });
}

// ---- memory ---------------------------------------------------------------------------------

extern "C" wave_status_t wave_malloc(wave_device_t device, size_t bytes, void **out) {
  return guarded("wave_malloc", [&] {
    if (!out)
      return nullArgument("wave_malloc", "out");
    *out = nullptr;
    if (!device)
      return nullArgument("wave_malloc", "device");
    if (bytes == 0)
      return failf(WAVE_ERROR_INVALID_ARGUMENT, "wave_malloc: zero-byte allocation");
    return device->backend->allocate(device->native, bytes, out);
  });
}

extern "C" wave_status_t wave_free(wave_device_t device, void *ptr) {
  return guarded("wave_free", [&] {
    if (!device)
      return nullArgument("wave_free", "device");
    if (!ptr)
      return WAVE_SUCCESS;
    return device->backend->release(device->native, ptr);
  });
}

static wave_status_t copyMemory(const char *function, wave_device_t device, CopyKind kind,
                                void *dst, const void *src, size_t bytes) {
  return guarded(function, [&] {
    if (!device)
      return nullArgument(function, "device");
    if (bytes == 0)
      return WAVE_SUCCESS;
    if (!dst)
      return nullArgument(function, "dst");
    if (!src)
      return nullArgument(function, "src");
    return device->backend->copy(device->native, kind, dst, src, bytes);
  });
}

extern "C" wave_status_t wave_memcpy_htod(wave_device_t device, void *dst, const void *src,
                                          size_t bytes) {
  return copyMemory("wave_memcpy_htod", device, CopyKind::HostToDevice, dst, src, bytes);
}

extern "C" wave_status_t wave_memcpy_dtoh(wave_device_t device, void *dst, const void *src,
                                          size_t bytes) {
  return copyMemory("wave_memcpy_dtoh", device, CopyKind::DeviceToHost, dst, src, bytes);
}

extern "C" wave_status_t wave_memcpy_dtod(wave_device_t device, void *dst, const void *src,
                                          size_t bytes) {
  return copyMemory("wave_memcpy_dtod", device, CopyKind::DeviceToDevice, dst, src, bytes);
}

extern "C" wave_status_t wave_memset(wave_device_t device, void *dst, int byte_value,
                                     size_t bytes) {
  return guarded("wave_memset", [&] {
    if (!device)
      return nullArgument("wave_memset", "device");
    if (bytes == 0)
      return WAVE_SUCCESS;
    if (!dst)
      return nullArgument("wave_memset", "dst");
    return device->backend->fill(device->native, dst, byte_value & 0xff, bytes);
  });
}

// ---- streams --------------------------------------------------------------------------------

extern "C" wave_status_t wave_stream_create(wave_device_t device, wave_stream_t *out) {
  return guarded("wave_stream_create", [&] {
    if (!out)
      return nullArgument("wave_stream_create", "out");
    *out = nullptr;
    if (!device)
      return nullArgument("wave_stream_create", "device");
    auto stream = std::make_unique<wave_stream>();
    stream->device = device;
    if (wave_status_t s = device->backend->streamCreate(device->native, &stream->native))
      return s;
    *out = stream.release();
    return WAVE_SUCCESS;
  });
}

extern "C" wave_status_t wave_stream_wrap(wave_device_t device, void *native_handle,
                                          wave_stream_t *out) {
  return guarded("wave_stream_wrap", [&] {
    if (!out)
      return nullArgument("wave_stream_wrap", "out");
    *out = nullptr;
    if (!device)
      return nullArgument("wave_stream_wrap", "device");
    auto stream = std::make_unique<wave_stream>();
    stream->device = device;
    // The emulator's launches are synchronous: its streams are identities, never dereferenced.
    stream->native = device->info.vendor == WAVE_VENDOR_EMULATOR ? nullptr : native_handle;
    stream->wrapped = true;
    *out = stream.release();
    return WAVE_SUCCESS;
  });
}

extern "C" wave_status_t wave_stream_destroy(wave_stream_t stream) {
  return guarded("wave_stream_destroy", [&] {
    if (!stream)
      return nullArgument("wave_stream_destroy", "stream");
    wave_device *device = stream->device;
    wave_status_t s = stream->wrapped
                          ? WAVE_SUCCESS
                          : device->backend->streamDestroy(device->native, stream->native);
    delete stream;
    return s;
  });
}

extern "C" wave_status_t wave_stream_synchronize(wave_stream_t stream) {
  return guarded("wave_stream_synchronize", [&] {
    if (!stream) {
      wave_device_t device = nullptr;
      if (wave_status_t s = defaultDevice(&device))
        return s;
      return device->backend->streamSynchronize(device->native, nullptr);
    }
    return stream->device->backend->streamSynchronize(stream->device->native, stream->native);
  });
}

extern "C" wave_status_t wave_stream_device(wave_stream_t stream, wave_device_t *out) {
  return guarded("wave_stream_device", [&] {
    if (!out)
      return nullArgument("wave_stream_device", "out");
    *out = nullptr;
    if (!stream)
      return defaultDevice(out);
    *out = stream->device;
    return WAVE_SUCCESS;
  });
}

// ---- modules and kernels --------------------------------------------------------------------

extern "C" wave_status_t wave_module_load_data(wave_device_t device, const void *image, size_t size,
                                               wave_module_t *out) {
  return guarded("wave_module_load_data", [&] {
    if (!out)
      return nullArgument("wave_module_load_data", "out");
    *out = nullptr;
    if (!device)
      return nullArgument("wave_module_load_data", "device");
    if (!image)
      return nullArgument("wave_module_load_data", "image");
    return loadModule(device, image, size, out);
  });
}

extern "C" wave_status_t wave_module_load_file(wave_device_t device, const char *path,
                                               wave_module_t *out) {
  return guarded("wave_module_load_file", [&] {
    if (!out)
      return nullArgument("wave_module_load_file", "out");
    *out = nullptr;
    if (!device)
      return nullArgument("wave_module_load_file", "device");
    if (!path)
      return nullArgument("wave_module_load_file", "path");
    std::vector<unsigned char> bytes;
    if (wave_status_t s = readFile(path, &bytes))
      return s;
    if (wave_status_t s = loadModule(device, bytes.data(), bytes.size(), out))
      return fail(s, std::string(path) + ": " + wave_last_error());
    return WAVE_SUCCESS;
  });
}

extern "C" wave_status_t wave_module_unload(wave_module_t module) {
  return guarded("wave_module_unload", [&] {
    if (!module)
      return nullArgument("wave_module_unload", "module");
    std::lock_guard<std::mutex> lock(module->device->moduleMutex);
    if (--module->refs == 0)
      destroyModule(module);
    return WAVE_SUCCESS;
  });
}

extern "C" wave_status_t wave_module_get_kernel(wave_module_t module, const char *name,
                                                wave_kernel_t *out) {
  return guarded("wave_module_get_kernel", [&] {
    if (!out)
      return nullArgument("wave_module_get_kernel", "out");
    *out = nullptr;
    if (!module)
      return nullArgument("wave_module_get_kernel", "module");
    if (!name || !*name)
      return failf(WAVE_ERROR_INVALID_ARGUMENT, "wave_module_get_kernel: empty kernel name");
    std::lock_guard<std::mutex> lock(module->kernelMutex);
    if (auto it = module->kernels.find(name); it != module->kernels.end()) {
      *out = it->second.get();
      return WAVE_SUCCESS;
    }
    wave_device *device = module->device;
    auto kernel = std::make_unique<wave_kernel>();
    kernel->module = module;
    kernel->name = name;
    if (wave_status_t s =
            device->backend->getFunction(device->native, module->native, name, &kernel->native))
      return s;
    *out = kernel.get();
    module->kernels[name] = std::move(kernel);
    return WAVE_SUCCESS;
  });
}

extern "C" const char *wave_kernel_name(wave_kernel_t kernel) {
  return kernel ? kernel->name.c_str() : nullptr;
}

// ---- launch ---------------------------------------------------------------------------------

extern "C" wave_status_t wave_launch(wave_device_t device, wave_stream_t stream,
                                     wave_kernel_t kernel, const uint32_t grid[3],
                                     const uint32_t block[3], uint32_t dynamic_shared_bytes,
                                     const void *args, size_t args_size) {
  return guarded("wave_launch", [&] {
    if (!device)
      return nullArgument("wave_launch", "device");
    if (!kernel)
      return nullArgument("wave_launch", "kernel");
    if (!grid)
      return nullArgument("wave_launch", "grid");
    if (!block)
      return nullArgument("wave_launch", "block");
    const char *name = kernel->name.c_str();
    if (args_size != 0 && !args)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_launch(%s): `args` is NULL but args_size is %zu", name, args_size);
    if (kernel->module->device != device)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_launch(%s): the kernel was loaded on another device", name);
    // Emulator launches run synchronously on the calling thread, so a stream of one emulated
    // device orders nothing another could break (`auto` may run a kernel on another emulator).
    bool emulators = stream && stream->device->info.vendor == WAVE_VENDOR_EMULATOR &&
                     device->info.vendor == WAVE_VENDOR_EMULATOR;
    if (stream && stream->device != device && !emulators)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_launch(%s): the stream belongs to another device", name);
    if (wave_status_t s = checkLaunchShape(name, grid, block))
      return s;
    if (dynamic_shared_bytes > device->info.shared_memory_per_block &&
        device->info.vendor == WAVE_VENDOR_AMD)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_launch(%s): %u bytes of dynamic shared memory exceed the device's %u",
                   name, dynamic_shared_bytes, device->info.shared_memory_per_block);
    if (wave_status_t s = device->backend->launch(device->native,
                                                  stream && !emulators ? stream->native : nullptr,
                                                  kernel->native, grid, block, dynamic_shared_bytes,
                                                  args, args_size))
      return fail(s, std::string("wave_launch(") + name + "): " + wave_last_error());
    return WAVE_SUCCESS;
  });
}

// ---- TMA tensor maps ------------------------------------------------------------------------

wave_status_t wave::rt::checkTensorMapRequest(const TensorMapRequest &r, int *driverType) {
  const char *f = "wave_tensor_map";
  *driverType = r.dtypeCode == 2 && r.elementBytes == 1   ? 0 // fp8: CU_TENSOR_MAP_DATA_TYPE_UINT8
                : r.dtypeCode == 2 && r.elementBytes == 2 ? 6
                : r.dtypeCode == 4 && r.elementBytes == 2 ? 9
                : r.dtypeCode == 2 && r.elementBytes == 4 ? 7
                                                          : -1;
  if (*driverType < 0)
    return failf(WAVE_ERROR_INVALID_ARGUMENT, "%s: no tensor-map type for dtype code %u, %u bytes",
                 f, r.dtypeCode, r.elementBytes);
  if (r.rank < 1 || r.rank > TensorMapRequest::kMaxRank)
    return failf(WAVE_ERROR_INVALID_ARGUMENT, "%s: a rank of %u (1 to %u)", f, r.rank,
                 TensorMapRequest::kMaxRank);
  if (reinterpret_cast<uintptr_t>(r.base) % 16 != 0)
    return failf(WAVE_ERROR_INVALID_ARGUMENT,
                 "%s: the tensor's address %p is not a multiple of 16 bytes", f, r.base);
  const uint32_t last = r.rank - 1;
  for (uint32_t i = 0; i < r.rank; ++i)
    if (r.dims[i] > (uint64_t(1) << 32))
      return failf(WAVE_ERROR_INVALID_ARGUMENT, "%s: %llu elements in dim %u exceed 2^32", f,
                   (unsigned long long)r.dims[i], i);
  // Each stride a multiple of 16 below 2^40 that holds the dims inside it (no overlap).
  for (uint32_t i = 0; i < last; ++i) {
    const uint64_t inner = i + 1 == last ? r.elementBytes : r.strides[i + 1];
    if (r.strides[i] % 16 != 0 || r.strides[i] >= (uint64_t(1) << 40) ||
        r.strides[i] / inner < r.dims[i + 1])
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "%s: a stride of %llu bytes for dim %u (%llu elements of %llu bytes inside) "
                   "is not a multiple of 16 below 2^40 holding them",
                   f, (unsigned long long)r.strides[i], i, (unsigned long long)r.dims[i + 1],
                   (unsigned long long)inner);
  }
  const uint64_t boxBytes = uint64_t(r.box[last]) * r.elementBytes;
  std::string boxText;
  bool boxOk = boxBytes % 16 == 0;
  for (uint32_t i = 0; i < r.rank; ++i) {
    boxText += (i ? " x " : "") + std::to_string(r.box[i]);
    boxOk = boxOk && r.box[i] >= 1 && r.box[i] <= 256;
  }
  if (!boxOk)
    return failf(WAVE_ERROR_INVALID_ARGUMENT,
                 "%s: a box of %s elements (1 to 256 per dim, rows of a multiple of 16 bytes)", f,
                 boxText.c_str());
  if (r.swizzleBytes != 0 && r.swizzleBytes != 32 && r.swizzleBytes != 64 &&
      r.swizzleBytes != 128)
    return failf(WAVE_ERROR_INVALID_ARGUMENT, "%s: a swizzle of %u bytes (0, 32, 64 or 128)", f,
                 r.swizzleBytes);
  if (r.swizzleBytes != 0 && boxBytes > r.swizzleBytes)
    return failf(WAVE_ERROR_INVALID_ARGUMENT,
                 "%s: box rows of %llu bytes are wider than the %u-byte swizzle", f,
                 (unsigned long long)boxBytes, r.swizzleBytes);
  return WAVE_SUCCESS;
}

namespace {
// wave_tensor_map and wave_tensor_map_2d: the request checked, then the back end's map.
wave_status_t tensorMapOf(const char *f, wave_device_t device, const void *data,
                          wave_dtype_t dtype, uint32_t rank, const uint64_t *dims,
                          const uint64_t *strides, const uint32_t *box, uint32_t swizzle_bytes,
                          uint64_t *map_address) {
  if (!map_address)
    return nullArgument(f, "map_address");
  *map_address = 0;
  if (!device)
    return nullArgument(f, "device");
  if (!data)
    return nullArgument(f, "data");
  if (rank < 1 || rank > TensorMapRequest::kMaxRank)
    return failf(WAVE_ERROR_INVALID_ARGUMENT, "%s: a rank of %u (1 to %u)", f, rank,
                 TensorMapRequest::kMaxRank);
  if (!dims)
    return nullArgument(f, "dims");
  if (!box)
    return nullArgument(f, "box");
  if (!strides && rank > 1)
    return nullArgument(f, "strides_bytes");
  TensorMapRequest r;
  r.base = data;
  r.dtypeCode = dtype.code;
  r.elementBytes = dtype.bits / 8;
  r.rank = rank;
  bool empty = false;
  for (uint32_t i = 0; i < rank; ++i) {
    r.dims[i] = dims[i];
    r.box[i] = box[i];
    if (i + 1 < rank)
      r.strides[i] = strides[i];
    empty |= dims[i] == 0;
  }
  r.swizzleBytes = swizzle_bytes;
  if (empty)
    return WAVE_SUCCESS; // nothing to copy: no kernel dereferences the map
  int type = 0;
  if (wave_status_t s = checkTensorMapRequest(r, &type))
    return s;
  void *out = nullptr;
  if (wave_status_t s = device->backend->tensorMap(device->native, r, &out))
    return s;
  *map_address = reinterpret_cast<uintptr_t>(out);
  return WAVE_SUCCESS;
}
} // namespace

// Declared in kernel_api.h (no export macro there): exported like kernel_api.cpp's entry points,
// so stubs linked against the shared library find them.
extern "C" __attribute__((visibility("default"))) wave_status_t
wave_tensor_map(wave_device_t device, const void *data, wave_dtype_t dtype, uint32_t rank,
                const uint64_t *dims, const uint64_t *strides_bytes, const uint32_t *box,
                uint32_t swizzle_bytes, uint64_t *map_address) {
  return guarded("wave_tensor_map", [&] {
    return tensorMapOf("wave_tensor_map", device, data, dtype, rank, dims, strides_bytes, box,
                       swizzle_bytes, map_address);
  });
}

extern "C" __attribute__((visibility("default"))) wave_status_t
wave_tensor_map_2d(wave_device_t device, const void *data, wave_dtype_t dtype, uint64_t rows,
                   uint64_t cols, uint64_t row_stride_bytes, uint32_t box_rows, uint32_t box_cols,
                   uint32_t swizzle_bytes, uint64_t *map_address) {
  return guarded("wave_tensor_map_2d", [&] {
    const uint64_t dims[2] = {rows, cols}, strides[1] = {row_stride_bytes};
    const uint32_t box[2] = {box_rows, box_cols};
    return tensorMapOf("wave_tensor_map_2d", device, data, dtype, 2, dims, strides, box,
                       swizzle_bytes, map_address);
  });
}

// ---- events ---------------------------------------------------------------------------------

extern "C" wave_status_t wave_event_create(wave_device_t device, wave_event_t *out) {
  return guarded("wave_event_create", [&] {
    if (!out)
      return nullArgument("wave_event_create", "out");
    *out = nullptr;
    if (!device)
      return nullArgument("wave_event_create", "device");
    auto event = std::make_unique<wave_event>();
    event->device = device;
    if (wave_status_t s = device->backend->eventCreate(device->native, &event->native))
      return s;
    *out = event.release();
    return WAVE_SUCCESS;
  });
}

extern "C" wave_status_t wave_event_destroy(wave_event_t event) {
  return guarded("wave_event_destroy", [&] {
    if (!event)
      return nullArgument("wave_event_destroy", "event");
    event->device->backend->eventDestroy(event->device->native, event->native);
    delete event;
    return WAVE_SUCCESS;
  });
}

extern "C" wave_status_t wave_event_record(wave_event_t event, wave_stream_t stream) {
  return guarded("wave_event_record", [&] {
    if (!event)
      return nullArgument("wave_event_record", "event");
    wave_device *device = event->device;
    if (stream && stream->device != device)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_event_record: the stream belongs to another device than the event");
    return device->backend->eventRecord(device->native, event->native,
                                        stream ? stream->native : nullptr);
  });
}

extern "C" wave_status_t wave_event_synchronize(wave_event_t event) {
  return guarded("wave_event_synchronize", [&] {
    if (!event)
      return nullArgument("wave_event_synchronize", "event");
    return event->device->backend->eventSynchronize(event->device->native, event->native);
  });
}

extern "C" wave_status_t wave_event_elapsed_ms(wave_event_t start, wave_event_t end, float *ms) {
  return guarded("wave_event_elapsed_ms", [&] {
    if (!ms)
      return nullArgument("wave_event_elapsed_ms", "ms");
    *ms = 0.0f;
    if (!start)
      return nullArgument("wave_event_elapsed_ms", "start");
    if (!end)
      return nullArgument("wave_event_elapsed_ms", "end");
    if (start->device != end->device)
      return failf(WAVE_ERROR_INVALID_ARGUMENT,
                   "wave_event_elapsed_ms: the events belong to different devices");
    return start->device->backend->eventElapsed(start->device->native, start->native, end->native,
                                                ms);
  });
}
