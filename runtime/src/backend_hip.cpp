// The HIP back end: AMD's HIP runtime (libamdhip64.so), dlopen()ed at the first `hip://` open.
//
// No HIP header is included, so the entry points and enum values used are declared here. Two
// ABI hazards shape the code:
//  - hipDeviceProp_t changed layout in ROCm 6 (hipGetDevicePropertiesR0600) and its field offsets
//    differ between releases, so the only field read from it is the architecture name, found by a
//    layout-independent scan (see archFromProperties). Numbers come from hipDeviceGetAttribute.
//  - hipDeviceAttribute_t was renumbered in ROCm 5.0; the three values used are those of every
//    ROCm since (5.x and 6.x headers agree: MultiprocessorCount 63, MaxSharedMemoryPerBlock 74,
//    WarpSize 87). ROCm 4 is not supported.
// HIP has no per-device contexts to hold: each call makes its device current with hipSetDevice
// and restores the caller's device afterwards.
#include "internal.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

namespace wave::rt {
namespace {

typedef int hipError_t;
typedef int hipDevice_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorInvalidConfiguration = 9;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101;
constexpr hipError_t hipErrorInvalidImage = 200;
constexpr hipError_t hipErrorNoBinaryForGpu = 209;
constexpr hipError_t hipErrorInvalidKernelFile = 218;
constexpr hipError_t hipErrorNotFound = 500;

constexpr int hipDeviceAttributeMultiprocessorCount = 63;
constexpr int hipDeviceAttributeMaxSharedMemoryPerBlock = 74;
constexpr int hipDeviceAttributeWarpSize = 87;

constexpr int hipMemcpyHostToDevice = 1;
constexpr int hipMemcpyDeviceToHost = 2;
constexpr int hipMemcpyDeviceToDevice = 3;

// hipModuleLaunchKernel `extra` markers. CUDA's END is 0x00: never share these.
void *const HIP_LAUNCH_PARAM_BUFFER_POINTER = reinterpret_cast<void *>(0x01);
void *const HIP_LAUNCH_PARAM_BUFFER_SIZE = reinterpret_cast<void *>(0x02);
void *const HIP_LAUNCH_PARAM_END = reinterpret_cast<void *>(0x03);

// Far larger than any hipDeviceProp_t (about 1.5 KiB in ROCm 6), so either version of
// hipGetDeviceProperties can write its whole struct.
constexpr size_t kPropertiesBufferSize = 64 * 1024;

struct HipApi {
  hipError_t (*hipInit)(unsigned);
  hipError_t (*hipGetDeviceCount)(int *);
  hipError_t (*hipGetDevice)(int *);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipDeviceGet)(hipDevice_t *, int);
  hipError_t (*hipDeviceGetAttribute)(int *, int, int);
  hipError_t (*hipDeviceGetName)(char *, int, hipDevice_t);
  hipError_t (*hipGetDeviceProperties)(void *, int); // R0600 when the runtime has it
  hipError_t (*hipDeviceSynchronize)();
  hipError_t (*hipMalloc)(void **, size_t);
  hipError_t (*hipFree)(void *);
  hipError_t (*hipMemcpy)(void *, const void *, size_t, int);
  hipError_t (*hipMemset)(void *, int, size_t);
  hipError_t (*hipStreamCreate)(hipStream_t *);
  hipError_t (*hipStreamDestroy)(hipStream_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  hipError_t (*hipModuleLoadData)(hipModule_t *, const void *);
  hipError_t (*hipModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
  hipError_t (*hipModuleUnload)(hipModule_t);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, unsigned, hipStream_t, void **, void **);
  const char *(*hipGetErrorName)(hipError_t);
  const char *(*hipGetErrorString)(hipError_t);
  // Optional: events (wave_event_*), resolved as a set.
  hipError_t (*hipEventCreate)(hipEvent_t *);
  hipError_t (*hipEventDestroy)(hipEvent_t);
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float *, hipEvent_t, hipEvent_t);
};

struct HipDevice {
  int ordinal = 0;
};

class HipBackend final : public Backend {
public:
  const char *name() const override { return "hip"; }
  wave_status_t deviceCount(int *count) override;
  wave_status_t openDevice(int ordinal, void **dev, wave_device_info_t *info) override;
  void closeDevice(void *dev) override { delete static_cast<HipDevice *>(dev); }
  wave_status_t synchronize(void *dev) override;
  wave_status_t allocate(void *dev, size_t bytes, void **out) override;
  wave_status_t release(void *dev, void *ptr) override;
  wave_status_t copy(void *dev, CopyKind kind, void *dst, const void *src, size_t bytes) override;
  wave_status_t fill(void *dev, void *dst, int value, size_t bytes) override;
  wave_status_t streamCreate(void *dev, void **stream) override;
  wave_status_t streamDestroy(void *dev, void *stream) override;
  wave_status_t streamSynchronize(void *dev, void *stream) override;
  wave_status_t validateImage(const void *image, size_t size) override {
    return validateHipImage(image, size);
  }
  wave_status_t moduleLoad(void *dev, const void *image, size_t size, void **module) override;
  void moduleUnload(void *dev, void *module) override;
  wave_status_t getFunction(void *dev, void *module, const char *name, void **function) override;
  wave_status_t launch(void *dev, void *stream, void *function, const uint32_t grid[3],
                       const uint32_t block[3], uint32_t dynamicSharedBytes, const void *args,
                       size_t argsSize) override;
  wave_status_t eventCreate(void *dev, void **event) override;
  void eventDestroy(void *dev, void *event) override;
  wave_status_t eventRecord(void *dev, void *event, void *stream) override;
  wave_status_t eventSynchronize(void *dev, void *event) override;
  wave_status_t eventElapsed(void *dev, void *start, void *end, float *ms) override;

private:
  wave_status_t load();
  wave_status_t check(hipError_t result, const char *call, wave_status_t otherwise);
  std::string archFromProperties(int ordinal);

  std::mutex loadMutex;
  bool loaded = false;
  HipApi api{};
};

/// Makes a device current for one call; restores the caller's current device afterwards.
class DeviceScope {
public:
  DeviceScope(const HipApi &api, void *dev) : api(api) {
    int want = static_cast<HipDevice *>(dev)->ordinal;
    if (api.hipGetDevice(&previous) != hipSuccess)
      previous = -1;
    if (previous != want)
      api.hipSetDevice(want);
  }
  ~DeviceScope() {
    if (previous >= 0)
      api.hipSetDevice(previous);
  }
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

private:
  const HipApi &api;
  int previous = -1;
};

template <typename Fn> bool resolve(void *library, const char *symbol, Fn *&slot) {
  slot = reinterpret_cast<Fn *>(dlsym(library, symbol));
  return slot != nullptr;
}

wave_status_t HipBackend::load() {
  std::lock_guard<std::mutex> lock(loadMutex);
  if (loaded)
    return WAVE_SUCCESS;
  static const char *const names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  void *lib = nullptr;
  if (wave_status_t s = openDriverLibrary("hip", names, 3, "WAVE_HIP_LIBRARY", &lib))
    return s;
  HipApi a{};
  const char *missing = nullptr;
  auto need = [&](const char *symbol, auto *&slot) {
    if (!resolve(lib, symbol, slot) && !missing)
      missing = symbol;
  };
  need("hipInit", a.hipInit);
  need("hipGetDeviceCount", a.hipGetDeviceCount);
  need("hipGetDevice", a.hipGetDevice);
  need("hipSetDevice", a.hipSetDevice);
  need("hipDeviceGet", a.hipDeviceGet);
  need("hipDeviceGetAttribute", a.hipDeviceGetAttribute);
  need("hipDeviceGetName", a.hipDeviceGetName);
  need("hipDeviceSynchronize", a.hipDeviceSynchronize);
  need("hipMalloc", a.hipMalloc);
  need("hipFree", a.hipFree);
  need("hipMemcpy", a.hipMemcpy);
  need("hipMemset", a.hipMemset);
  need("hipStreamCreate", a.hipStreamCreate);
  need("hipStreamDestroy", a.hipStreamDestroy);
  need("hipStreamSynchronize", a.hipStreamSynchronize);
  need("hipModuleLoadData", a.hipModuleLoadData);
  need("hipModuleGetFunction", a.hipModuleGetFunction);
  need("hipModuleUnload", a.hipModuleUnload);
  need("hipModuleLaunchKernel", a.hipModuleLaunchKernel);
  need("hipGetErrorName", a.hipGetErrorName);
  need("hipGetErrorString", a.hipGetErrorString);
  if (missing) {
    dlclose(lib);
    return failf(WAVE_ERROR_DRIVER_NOT_FOUND, "hip: the runtime library lacks %s (ROCm too old?)",
                 missing);
  }
  // ROCm 6 renamed the current struct's entry point; the old name serves the ROCm 5 layout.
  if (!resolve(lib, "hipGetDevicePropertiesR0600", a.hipGetDeviceProperties))
    resolve(lib, "hipGetDeviceProperties", a.hipGetDeviceProperties);
  bool events = resolve(lib, "hipEventCreate", a.hipEventCreate) &&
                resolve(lib, "hipEventDestroy", a.hipEventDestroy) &&
                resolve(lib, "hipEventRecord", a.hipEventRecord) &&
                resolve(lib, "hipEventSynchronize", a.hipEventSynchronize) &&
                resolve(lib, "hipEventElapsedTime", a.hipEventElapsedTime);
  if (!events)
    a.hipEventCreate = nullptr;
  api = a;
  if (hipError_t r = api.hipInit(0))
    return check(r, "hipInit", WAVE_ERROR_DRIVER);
  loaded = true;
  return WAVE_SUCCESS;
}

wave_status_t HipBackend::check(hipError_t result, const char *call, wave_status_t otherwise) {
  if (result == hipSuccess)
    return WAVE_SUCCESS;
  const char *errName = api.hipGetErrorName(result);
  const char *errText = api.hipGetErrorString(result);
  wave_status_t status = otherwise;
  switch (result) {
  case hipErrorOutOfMemory:
    status = WAVE_ERROR_OUT_OF_MEMORY;
    break;
  case hipErrorNoDevice:
  case hipErrorInvalidDevice:
    status = WAVE_ERROR_NO_DEVICE;
    break;
  case hipErrorInvalidImage:
  case hipErrorNoBinaryForGpu:
  case hipErrorInvalidKernelFile:
    status = WAVE_ERROR_INVALID_IMAGE;
    break;
  case hipErrorNotFound:
    status = WAVE_ERROR_NOT_FOUND;
    break;
  case hipErrorInvalidConfiguration:
    status = WAVE_ERROR_LAUNCH;
    break;
  default:
    break;
  }
  return failf(status, "hip: %s failed: %s (%s) [%d]", call, errName ? errName : "hipError?",
               errText ? errText : "no description", result);
}

/// The processor name ("gfx942") of a device. hipDeviceProp_t.gcnArchName is the only source
/// (no attribute returns a string), but its offset differs between ROCm releases. Rather than
/// trust one layout, fill an oversized zeroed buffer and take the first NUL-terminated string in
/// it that starts with "gfx" followed by hex digits: no other field of the struct holds one
/// (`name` is the marketing name, and if a runtime put the processor name there it is the same
/// answer). Feature suffixes (":sramecc+:xnack-") are stripped. Empty when nothing matches.
std::string HipBackend::archFromProperties(int ordinal) {
  if (!api.hipGetDeviceProperties)
    return "";
  std::vector<char> props(kPropertiesBufferSize, 0);
  if (api.hipGetDeviceProperties(props.data(), ordinal) != hipSuccess)
    return "";
  props.back() = '\0';
  for (size_t i = 0; i + 4 < props.size(); ++i) {
    if ((i > 0 && props[i - 1] != '\0') || std::strncmp(&props[i], "gfx", 3) != 0)
      continue;
    std::string candidate(&props[i]);
    std::string arch = stripTargetFeatures(candidate);
    bool valid = arch.size() > 3 && arch.size() < 16;
    for (size_t c = 3; valid && c < arch.size(); ++c)
      valid = std::isxdigit(static_cast<unsigned char>(arch[c]));
    if (valid)
      return arch;
  }
  return "";
}

wave_status_t HipBackend::deviceCount(int *count) {
  if (wave_status_t s = load())
    return s;
  hipError_t r = api.hipGetDeviceCount(count);
  if (r == hipErrorNoDevice) { // HIP reports "none" as an error; the caller words it better
    *count = 0;
    return WAVE_SUCCESS;
  }
  return check(r, "hipGetDeviceCount", WAVE_ERROR_DRIVER);
}

wave_status_t HipBackend::openDevice(int ordinal, void **dev, wave_device_info_t *info) {
  hipDevice_t device = 0;
  if (wave_status_t s =
          check(api.hipDeviceGet(&device, ordinal), "hipDeviceGet", WAVE_ERROR_NO_DEVICE))
    return s;
  int warp = 0, shared = 0, cus = 0;
  struct {
    int attribute;
    int *value;
  } queries[] = {{hipDeviceAttributeWarpSize, &warp},
                 {hipDeviceAttributeMaxSharedMemoryPerBlock, &shared},
                 {hipDeviceAttributeMultiprocessorCount, &cus}};
  for (auto &q : queries)
    if (wave_status_t s = check(api.hipDeviceGetAttribute(q.value, q.attribute, ordinal),
                                "hipDeviceGetAttribute", WAVE_ERROR_DRIVER))
      return s;
  if (wave_status_t s = check(api.hipDeviceGetName(info->name, sizeof(info->name), device),
                              "hipDeviceGetName", WAVE_ERROR_DRIVER))
    return s;
  std::string arch = archFromProperties(ordinal);
  if (arch.empty())
    return failf(WAVE_ERROR_DRIVER,
                 "hip://%d: cannot determine the device's gfx architecture from "
                 "hipGetDeviceProperties",
                 ordinal);
  info->vendor = WAVE_VENDOR_AMD;
  std::snprintf(info->arch, sizeof(info->arch), "%s", arch.c_str());
  info->warp_size = uint32_t(warp);
  info->shared_memory_per_block = uint32_t(shared);
  info->multiprocessor_count = uint32_t(cus);
  auto *d = new HipDevice;
  d->ordinal = ordinal;
  *dev = d;
  return WAVE_SUCCESS;
}

wave_status_t HipBackend::synchronize(void *dev) {
  DeviceScope scope(api, dev);
  return check(api.hipDeviceSynchronize(), "hipDeviceSynchronize", WAVE_ERROR_LAUNCH);
}

wave_status_t HipBackend::allocate(void *dev, size_t bytes, void **out) {
  DeviceScope scope(api, dev);
  return check(api.hipMalloc(out, bytes), "hipMalloc", WAVE_ERROR_DRIVER);
}

wave_status_t HipBackend::release(void *dev, void *ptr) {
  DeviceScope scope(api, dev);
  return check(api.hipFree(ptr), "hipFree", WAVE_ERROR_DRIVER);
}

wave_status_t HipBackend::copy(void *dev, CopyKind kind, void *dst, const void *src, size_t bytes) {
  int hipKind = kind == CopyKind::HostToDevice   ? hipMemcpyHostToDevice
                : kind == CopyKind::DeviceToHost ? hipMemcpyDeviceToHost
                                                 : hipMemcpyDeviceToDevice;
  DeviceScope scope(api, dev);
  if (wave_status_t s = check(api.hipMemcpy(dst, src, bytes, hipKind), "hipMemcpy",
                              WAVE_ERROR_DRIVER))
    return s;
  // A device-to-device copy may return before it lands; the API promises a completed copy.
  if (kind != CopyKind::DeviceToDevice)
    return WAVE_SUCCESS;
  return check(api.hipStreamSynchronize(nullptr), "hipStreamSynchronize", WAVE_ERROR_DRIVER);
}

wave_status_t HipBackend::fill(void *dev, void *dst, int value, size_t bytes) {
  DeviceScope scope(api, dev);
  // hipMemset may return before the fill lands; the API promises a completed fill.
  if (wave_status_t s = check(api.hipMemset(dst, value, bytes), "hipMemset", WAVE_ERROR_DRIVER))
    return s;
  return check(api.hipStreamSynchronize(nullptr), "hipStreamSynchronize", WAVE_ERROR_DRIVER);
}

wave_status_t HipBackend::streamCreate(void *dev, void **stream) {
  DeviceScope scope(api, dev);
  hipStream_t s = nullptr;
  if (wave_status_t st = check(api.hipStreamCreate(&s), "hipStreamCreate", WAVE_ERROR_DRIVER))
    return st;
  *stream = s;
  return WAVE_SUCCESS;
}

wave_status_t HipBackend::streamDestroy(void *dev, void *stream) {
  DeviceScope scope(api, dev);
  return check(api.hipStreamDestroy(static_cast<hipStream_t>(stream)), "hipStreamDestroy",
               WAVE_ERROR_DRIVER);
}

wave_status_t HipBackend::streamSynchronize(void *dev, void *stream) {
  DeviceScope scope(api, dev);
  return check(api.hipStreamSynchronize(static_cast<hipStream_t>(stream)), "hipStreamSynchronize",
               WAVE_ERROR_LAUNCH);
}

wave_status_t HipBackend::moduleLoad(void *dev, const void *image, size_t size, void **module) {
  // A module belongs to the device current at load time, hence the scope.
  DeviceScope scope(api, dev);
  hipModule_t m = nullptr;
  if (wave_status_t s =
          check(api.hipModuleLoadData(&m, image), "hipModuleLoadData", WAVE_ERROR_INVALID_IMAGE))
    return s;
  *module = m;
  return WAVE_SUCCESS;
}

void HipBackend::moduleUnload(void *dev, void *module) {
  DeviceScope scope(api, dev);
  api.hipModuleUnload(static_cast<hipModule_t>(module));
}

wave_status_t HipBackend::getFunction(void *dev, void *module, const char *name, void **function) {
  DeviceScope scope(api, dev);
  hipFunction_t f = nullptr;
  if (wave_status_t s = check(api.hipModuleGetFunction(&f, static_cast<hipModule_t>(module), name),
                              "hipModuleGetFunction", WAVE_ERROR_NOT_FOUND))
    return fail(s, std::string(wave_last_error()) + ": kernel '" + name + "'");
  *function = f;
  return WAVE_SUCCESS;
}

wave_status_t HipBackend::launch(void *dev, void *stream, void *function, const uint32_t grid[3],
                                 const uint32_t block[3], uint32_t dynamicSharedBytes,
                                 const void *args, size_t argsSize) {
  size_t size = argsSize;
  void *extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void *>(args),
                   HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
  DeviceScope scope(api, dev);
  // Grid in workgroups, as CUDA counts it.
  hipError_t r = api.hipModuleLaunchKernel(
      static_cast<hipFunction_t>(function), grid[0], grid[1], grid[2], block[0], block[1], block[2],
      dynamicSharedBytes, static_cast<hipStream_t>(stream), nullptr, argsSize ? extra : nullptr);
  return check(r, "hipModuleLaunchKernel", WAVE_ERROR_LAUNCH);
}

wave_status_t HipBackend::eventCreate(void *dev, void **event) {
  if (!api.hipEventCreate)
    return failf(WAVE_ERROR_UNSUPPORTED, "hip: the runtime library lacks the event API");
  DeviceScope scope(api, dev);
  hipEvent_t e = nullptr;
  if (wave_status_t s = check(api.hipEventCreate(&e), "hipEventCreate", WAVE_ERROR_DRIVER))
    return s;
  *event = e;
  return WAVE_SUCCESS;
}

void HipBackend::eventDestroy(void *dev, void *event) {
  DeviceScope scope(api, dev);
  api.hipEventDestroy(static_cast<hipEvent_t>(event));
}

wave_status_t HipBackend::eventRecord(void *dev, void *event, void *stream) {
  DeviceScope scope(api, dev);
  return check(api.hipEventRecord(static_cast<hipEvent_t>(event), static_cast<hipStream_t>(stream)),
               "hipEventRecord", WAVE_ERROR_DRIVER);
}

wave_status_t HipBackend::eventSynchronize(void *dev, void *event) {
  DeviceScope scope(api, dev);
  return check(api.hipEventSynchronize(static_cast<hipEvent_t>(event)), "hipEventSynchronize",
               WAVE_ERROR_LAUNCH);
}

wave_status_t HipBackend::eventElapsed(void *dev, void *start, void *end, float *ms) {
  DeviceScope scope(api, dev);
  return check(api.hipEventElapsedTime(ms, static_cast<hipEvent_t>(start),
                                       static_cast<hipEvent_t>(end)),
               "hipEventElapsedTime", WAVE_ERROR_DRIVER);
}

} // namespace

Backend &hipBackend() {
  // Leaked on purpose: the runtime may be torn down before static destructors run.
  static auto *backend = new HipBackend();
  return *backend;
}

} // namespace wave::rt
