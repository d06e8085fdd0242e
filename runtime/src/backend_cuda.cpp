// The CUDA back end: NVIDIA's driver API (libcuda.so.1), dlopen()ed at the first `cuda://` open.
//
// No CUDA header is included — the runtime must build where no SDK is installed — so the few
// types, enum values and entry points used are declared here with the driver's exact ABI
// (the CUDA driver API of CUDA 12 and 13). Memory functions are looked up under their `_v2` symbol names, which is what
// the driver header's macros resolve to; the unsuffixed symbols are the legacy 32-bit-pointer versions.
//
// Each device holds its primary context (cuDevicePrimaryCtxRetain, not cuCtxCreate: the latter
// changed signature in CUDA 13, and the primary context is what the CUDA runtime and torch use).
// Calls push it for their duration and pop it again, so the caller's current context survives.
#include "internal.h"

#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <string>

namespace wave::rt {
namespace {

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef int CUjit_option;
typedef int CUlibraryOption;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;

constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr uint32_t kDefaultDynamicSharedLimit = 48 * 1024;

constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// cuLaunchKernel `extra` markers. HIP's END is 0x03: never share these with the HIP back end.
void *const CU_LAUNCH_PARAM_END = reinterpret_cast<void *>(0x00);
void *const CU_LAUNCH_PARAM_BUFFER_POINTER = reinterpret_cast<void *>(0x01);
void *const CU_LAUNCH_PARAM_BUFFER_SIZE = reinterpret_cast<void *>(0x02);

/// The driver entry points; `required` ones must all resolve, the rest are newer additions.
struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext *);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  // Optional (CUDA 12+ libraries; attribute setting).
  CUresult (*cuLibraryLoadData)(CUlibrary *, const void *, CUjit_option *, void **, unsigned,
                                CUlibraryOption *, void **, unsigned);
  CUresult (*cuLibraryGetKernel)(CUkernel *, CUlibrary, const char *);
  CUresult (*cuLibraryUnload)(CUlibrary);
  CUresult (*cuKernelGetFunction)(CUfunction *, CUkernel);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  // CUDA 12+: (map, data type, rank, address, dims, strides, box, element strides, interleave,
  // swizzle, L2 promotion, out-of-bounds fill).
  CUresult (*cuTensorMapEncodeTiled)(void *, int, uint32_t, void *, const uint64_t *,
                                     const uint64_t *, const uint32_t *, const uint32_t *, int,
                                     int, int, int);
  // Optional: events (wave_event_*), resolved as a set.
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
};

struct CudaDevice {
  CUdevice device = 0;
  CUcontext context = nullptr;
  // TMA tensor maps (tensorMap2d): request -> the map's 128 bytes in device memory.
  std::mutex mapMutex;
  std::map<TensorMapRequest, CUdeviceptr> maps;
};

/// A loaded image: a library when the driver has cuLibraryLoadData, else a context module.
struct CudaModule {
  CUlibrary library = nullptr;
  CUmodule module = nullptr;
};

class CudaBackend final : public Backend {
public:
  const char *name() const override { return "cuda"; }
  wave_status_t deviceCount(int *count) override;
  wave_status_t openDevice(int ordinal, void **dev, wave_device_info_t *info) override;
  void closeDevice(void *dev) override;
  wave_status_t synchronize(void *dev) override;
  wave_status_t allocate(void *dev, size_t bytes, void **out) override;
  wave_status_t release(void *dev, void *ptr) override;
  wave_status_t copy(void *dev, CopyKind kind, void *dst, const void *src, size_t bytes) override;
  wave_status_t fill(void *dev, void *dst, int value, size_t bytes) override;
  wave_status_t streamCreate(void *dev, void **stream) override;
  wave_status_t streamDestroy(void *dev, void *stream) override;
  wave_status_t streamSynchronize(void *dev, void *stream) override;
  wave_status_t validateImage(const void *image, size_t size) override;
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
  wave_status_t tensorMap(void *dev, const TensorMapRequest &request, void **out) override;

private:
  void freeMaps(CudaDevice &d);
  wave_status_t load();
  /// Maps a CUresult to a status, with "cuda: <call>: NAME (text)" as the message.
  wave_status_t check(CUresult result, const char *call, wave_status_t otherwise);

  std::mutex loadMutex;
  bool loaded = false;
  CudaApi api{};
};

/// Makes a device's primary context current for one call and restores the caller's afterwards.
class ContextScope {
public:
  ContextScope(const CudaApi &api, void *dev) : api(api) {
    pushed = api.cuCtxPushCurrent(static_cast<CudaDevice *>(dev)->context) == CUDA_SUCCESS;
  }
  ~ContextScope() {
    CUcontext ignored;
    if (pushed)
      api.cuCtxPopCurrent(&ignored);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

private:
  const CudaApi &api;
  bool pushed = false;
};

CUdeviceptr toDevicePtr(const void *ptr) { return CUdeviceptr(reinterpret_cast<uintptr_t>(ptr)); }

template <typename Fn> bool resolve(void *library, const char *symbol, Fn *&slot) {
  slot = reinterpret_cast<Fn *>(dlsym(library, symbol));
  return slot != nullptr;
}

wave_status_t CudaBackend::load() {
  std::lock_guard<std::mutex> lock(loadMutex);
  if (loaded)
    return WAVE_SUCCESS;
  static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
  void *lib = nullptr;
  if (wave_status_t s = openDriverLibrary("cuda", names, 2, "WAVE_CUDA_LIBRARY", &lib))
    return s;
  CudaApi a{};
  const char *missing = nullptr;
  auto need = [&](const char *symbol, auto *&slot) {
    if (!resolve(lib, symbol, slot) && !missing)
      missing = symbol;
  };
  need("cuInit", a.cuInit);
  need("cuDeviceGetCount", a.cuDeviceGetCount);
  need("cuDeviceGet", a.cuDeviceGet);
  need("cuDeviceGetAttribute", a.cuDeviceGetAttribute);
  need("cuDeviceGetName", a.cuDeviceGetName);
  need("cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain);
  need("cuDevicePrimaryCtxRelease_v2", a.cuDevicePrimaryCtxRelease);
  need("cuCtxPushCurrent_v2", a.cuCtxPushCurrent);
  need("cuCtxPopCurrent_v2", a.cuCtxPopCurrent);
  need("cuCtxSynchronize", a.cuCtxSynchronize);
  need("cuMemAlloc_v2", a.cuMemAlloc);
  need("cuMemFree_v2", a.cuMemFree);
  need("cuMemcpyHtoD_v2", a.cuMemcpyHtoD);
  need("cuMemcpyDtoH_v2", a.cuMemcpyDtoH);
  need("cuMemcpyDtoD_v2", a.cuMemcpyDtoD);
  need("cuMemsetD8_v2", a.cuMemsetD8);
  need("cuStreamCreate", a.cuStreamCreate);
  need("cuStreamDestroy_v2", a.cuStreamDestroy);
  need("cuStreamSynchronize", a.cuStreamSynchronize);
  need("cuModuleLoadData", a.cuModuleLoadData);
  need("cuModuleLoadDataEx", a.cuModuleLoadDataEx);
  need("cuModuleGetFunction", a.cuModuleGetFunction);
  need("cuModuleUnload", a.cuModuleUnload);
  need("cuLaunchKernel", a.cuLaunchKernel);
  need("cuGetErrorName", a.cuGetErrorName);
  need("cuGetErrorString", a.cuGetErrorString);
  if (missing) {
    dlclose(lib);
    return failf(WAVE_ERROR_DRIVER_NOT_FOUND, "cuda: the driver library lacks %s (driver too old?)",
                 missing);
  }
  // The library API comes as a set; use it only when all of it is there.
  bool library = resolve(lib, "cuLibraryLoadData", a.cuLibraryLoadData) &&
                 resolve(lib, "cuLibraryGetKernel", a.cuLibraryGetKernel) &&
                 resolve(lib, "cuLibraryUnload", a.cuLibraryUnload) &&
                 resolve(lib, "cuKernelGetFunction", a.cuKernelGetFunction);
  if (!library)
    a.cuLibraryLoadData = nullptr;
  resolve(lib, "cuFuncSetAttribute", a.cuFuncSetAttribute);
  resolve(lib, "cuTensorMapEncodeTiled", a.cuTensorMapEncodeTiled);
  bool events = resolve(lib, "cuEventCreate", a.cuEventCreate) &&
                resolve(lib, "cuEventDestroy_v2", a.cuEventDestroy) &&
                resolve(lib, "cuEventRecord", a.cuEventRecord) &&
                resolve(lib, "cuEventSynchronize", a.cuEventSynchronize) &&
                resolve(lib, "cuEventElapsedTime", a.cuEventElapsedTime);
  if (!events)
    a.cuEventCreate = nullptr;

  api = a;
  if (CUresult r = api.cuInit(0))
    return check(r, "cuInit", WAVE_ERROR_DRIVER); // retried on the next open
  loaded = true;
  return WAVE_SUCCESS;
}

wave_status_t CudaBackend::check(CUresult result, const char *call, wave_status_t otherwise) {
  if (result == CUDA_SUCCESS)
    return WAVE_SUCCESS;
  const char *errName = nullptr, *errText = nullptr;
  if (api.cuGetErrorName(result, &errName) != CUDA_SUCCESS || !errName)
    errName = "CUDA_ERROR_<unknown>";
  if (api.cuGetErrorString(result, &errText) != CUDA_SUCCESS || !errText)
    errText = "no description";
  wave_status_t status = otherwise;
  switch (result) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    status = WAVE_ERROR_OUT_OF_MEMORY;
    break;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE:
    status = WAVE_ERROR_NO_DEVICE;
    break;
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    status = WAVE_ERROR_INVALID_IMAGE;
    break;
  case CUDA_ERROR_NOT_FOUND:
    status = WAVE_ERROR_NOT_FOUND;
    break;
  default:
    break;
  }
  return failf(status, "cuda: %s failed: %s (%s) [%d]", call, errName, errText, result);
}

wave_status_t CudaBackend::deviceCount(int *count) {
  if (wave_status_t s = load())
    return s;
  return check(api.cuDeviceGetCount(count), "cuDeviceGetCount", WAVE_ERROR_DRIVER);
}

wave_status_t CudaBackend::openDevice(int ordinal, void **dev, wave_device_info_t *info) {
  CudaDevice d;
  if (wave_status_t s =
          check(api.cuDeviceGet(&d.device, ordinal), "cuDeviceGet", WAVE_ERROR_NO_DEVICE))
    return s;
  int major = 0, minor = 0, warp = 0, shared = 0, sms = 0;
  struct {
    int attribute;
    int *value;
  } queries[] = {{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major},
                 {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor},
                 {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &warp},
                 {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &shared},
                 {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms}};
  for (auto &q : queries)
    if (wave_status_t s = check(api.cuDeviceGetAttribute(q.value, q.attribute, d.device),
                                "cuDeviceGetAttribute", WAVE_ERROR_DRIVER))
      return s;
  if (wave_status_t s = check(api.cuDeviceGetName(info->name, sizeof(info->name), d.device),
                              "cuDeviceGetName", WAVE_ERROR_DRIVER))
    return s;
  if (wave_status_t s = check(api.cuDevicePrimaryCtxRetain(&d.context, d.device),
                              "cuDevicePrimaryCtxRetain", WAVE_ERROR_DRIVER))
    return s;
  info->vendor = WAVE_VENDOR_NVIDIA;
  std::snprintf(info->arch, sizeof(info->arch), "sm_%d%d", major, minor);
  info->warp_size = uint32_t(warp);
  info->shared_memory_per_block = uint32_t(shared);
  info->multiprocessor_count = uint32_t(sms);
  auto *made = new CudaDevice;
  made->device = d.device;
  made->context = d.context;
  *dev = made;
  return WAVE_SUCCESS;
}

// Frees every cached tensor map of `d` (after the work that may read them).
void CudaBackend::freeMaps(CudaDevice &d) {
  ContextScope scope(api, &d);
  if (!d.maps.empty())
    api.cuCtxSynchronize();
  for (const auto &[request, ptr] : d.maps)
    api.cuMemFree(ptr);
  d.maps.clear();
}

void CudaBackend::closeDevice(void *dev) {
  auto *d = static_cast<CudaDevice *>(dev);
  freeMaps(*d);
  api.cuDevicePrimaryCtxRelease(d->device);
  delete d;
}

wave_status_t CudaBackend::synchronize(void *dev) {
  ContextScope scope(api, dev);
  return check(api.cuCtxSynchronize(), "cuCtxSynchronize", WAVE_ERROR_LAUNCH);
}

// The map is encoded on the host and copied to device memory (docs/user-guide.md, "TMA tensor
// maps", says why not a kernel parameter); the copy is waited for, so a launch on any stream
// sees it. At most kMaxMaps stay cached: past that the cache is emptied (after the device's
// work) and refilled.
wave_status_t CudaBackend::tensorMap(void *dev, const TensorMapRequest &r, void **out) {
  constexpr size_t kMaxMaps = 1024;
  int type = 0;
  if (wave_status_t s = checkTensorMapRequest(r, &type))
    return s;
  if (!api.cuTensorMapEncodeTiled)
    return fail(WAVE_ERROR_UNSUPPORTED,
                "cuda: the driver has no cuTensorMapEncodeTiled (CUDA 12 or newer needed)");
  auto *d = static_cast<CudaDevice *>(dev);
  ContextScope scope(api, dev); // the encoding needs a current context
  std::lock_guard<std::mutex> lock(d->mapMutex);
  if (auto it = d->maps.find(r); it != d->maps.end()) {
    *out = reinterpret_cast<void *>(uintptr_t(it->second));
    return WAVE_SUCCESS;
  }
  if (d->maps.size() >= kMaxMaps)
    freeMaps(*d);
  alignas(64) uint64_t map[16] = {};
  // The driver's order is innermost first: dims, box and element strides reversed, the byte
  // strides of dims 1.. (rank - 1 of them).
  const uint32_t n = r.rank;
  uint64_t dims[TensorMapRequest::kMaxRank] = {}, strides[TensorMapRequest::kMaxRank] = {};
  uint32_t box[TensorMapRequest::kMaxRank] = {}, elementStrides[TensorMapRequest::kMaxRank] = {};
  for (uint32_t i = 0; i < n; ++i) {
    dims[i] = r.dims[n - 1 - i];
    box[i] = r.box[n - 1 - i];
    elementStrides[i] = 1;
    if (i + 1 < n)
      strides[i] = r.strides[n - 2 - i];
  }
  const int swizzle = r.swizzleBytes == 128 ? 3 : r.swizzleBytes == 64 ? 2
                      : r.swizzleBytes == 32  ? 1
                                              : 0;
  // Interleave none (0), L2 promotion 128 bytes (2), out-of-bounds elements zero (0).
  if (wave_status_t s = check(api.cuTensorMapEncodeTiled(map, type, n, const_cast<void *>(r.base),
                                                         dims, strides, box, elementStrides, 0,
                                                         swizzle, 2, 0),
                              "cuTensorMapEncodeTiled", WAVE_ERROR_INVALID_ARGUMENT))
    return s;
  CUdeviceptr ptr = 0;
  if (wave_status_t s = check(api.cuMemAlloc(&ptr, sizeof map), "cuMemAlloc", WAVE_ERROR_DRIVER))
    return s;
  wave_status_t s = check(api.cuMemcpyHtoD(ptr, map, sizeof map), "cuMemcpyHtoD",
                          WAVE_ERROR_DRIVER);
  if (!s)
    s = check(api.cuCtxSynchronize(), "cuCtxSynchronize", WAVE_ERROR_DRIVER);
  if (s) {
    api.cuMemFree(ptr);
    return s;
  }
  d->maps[r] = ptr;
  *out = reinterpret_cast<void *>(uintptr_t(ptr));
  return WAVE_SUCCESS;
}

wave_status_t CudaBackend::allocate(void *dev, size_t bytes, void **out) {
  ContextScope scope(api, dev);
  CUdeviceptr ptr = 0;
  if (wave_status_t s = check(api.cuMemAlloc(&ptr, bytes), "cuMemAlloc", WAVE_ERROR_DRIVER))
    return s;
  *out = reinterpret_cast<void *>(uintptr_t(ptr));
  return WAVE_SUCCESS;
}

wave_status_t CudaBackend::release(void *dev, void *ptr) {
  ContextScope scope(api, dev);
  return check(api.cuMemFree(toDevicePtr(ptr)), "cuMemFree", WAVE_ERROR_DRIVER);
}

wave_status_t CudaBackend::copy(void *dev, CopyKind kind, void *dst, const void *src,
                                size_t bytes) {
  ContextScope scope(api, dev);
  switch (kind) {
  case CopyKind::HostToDevice:
    return check(api.cuMemcpyHtoD(toDevicePtr(dst), src, bytes), "cuMemcpyHtoD", WAVE_ERROR_DRIVER);
  case CopyKind::DeviceToHost:
    return check(api.cuMemcpyDtoH(dst, toDevicePtr(src), bytes), "cuMemcpyDtoH", WAVE_ERROR_DRIVER);
  case CopyKind::DeviceToDevice:
    // A device-to-device copy may return before it lands; the API promises a completed copy.
    if (wave_status_t s = check(api.cuMemcpyDtoD(toDevicePtr(dst), toDevicePtr(src), bytes),
                                "cuMemcpyDtoD", WAVE_ERROR_DRIVER))
      return s;
    return check(api.cuStreamSynchronize(nullptr), "cuStreamSynchronize", WAVE_ERROR_DRIVER);
  }
  return failf(WAVE_ERROR_INVALID_ARGUMENT, "cuda: unknown copy kind");
}

wave_status_t CudaBackend::fill(void *dev, void *dst, int value, size_t bytes) {
  ContextScope scope(api, dev);
  // cuMemsetD8 is asynchronous for device memory; the API promises a completed fill.
  if (wave_status_t s = check(api.cuMemsetD8(toDevicePtr(dst), (unsigned char)value, bytes),
                              "cuMemsetD8", WAVE_ERROR_DRIVER))
    return s;
  return check(api.cuStreamSynchronize(nullptr), "cuStreamSynchronize", WAVE_ERROR_DRIVER);
}

wave_status_t CudaBackend::streamCreate(void *dev, void **stream) {
  ContextScope scope(api, dev);
  CUstream s = nullptr;
  if (wave_status_t st = check(api.cuStreamCreate(&s, 0), "cuStreamCreate", WAVE_ERROR_DRIVER))
    return st;
  *stream = s;
  return WAVE_SUCCESS;
}

wave_status_t CudaBackend::streamDestroy(void *dev, void *stream) {
  ContextScope scope(api, dev);
  return check(api.cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy",
               WAVE_ERROR_DRIVER);
}

wave_status_t CudaBackend::streamSynchronize(void *dev, void *stream) {
  ContextScope scope(api, dev);
  return check(api.cuStreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize",
               WAVE_ERROR_LAUNCH);
}

wave_status_t CudaBackend::validateImage(const void *image, size_t size) {
  CudaImageKind kind;
  return validateCudaImage(image, size, &kind);
}

wave_status_t CudaBackend::moduleLoad(void *dev, const void *image, size_t size, void **module) {
  CudaImageKind kind;
  if (wave_status_t s = validateCudaImage(image, size, &kind))
    return s;
  // The driver reads PTX up to its NUL; a PTX buffer need not carry one.
  std::string ptx;
  if (kind == CudaImageKind::Ptx) {
    ptx.assign(static_cast<const char *>(image), size);
    image = ptx.c_str();
  }
  // The JIT's error log is the only useful part of a PTX rejection: collect it.
  char log[4096] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log)))};
  ContextScope scope(api, dev);
  CudaModule m;
  CUresult r;
  const char *call;
  if (api.cuLibraryLoadData) {
    call = "cuLibraryLoadData";
    r = api.cuLibraryLoadData(&m.library, image, options, values, 2, nullptr, nullptr, 0);
  } else {
    call = "cuModuleLoadDataEx";
    r = api.cuModuleLoadDataEx(&m.module, image, 2, options, values);
  }
  if (wave_status_t s = check(r, call, WAVE_ERROR_INVALID_IMAGE)) {
    if (log[0])
      return fail(s, std::string(wave_last_error()) + "\n" + log);
    return s;
  }
  *module = new CudaModule(m);
  return WAVE_SUCCESS;
}

void CudaBackend::moduleUnload(void *dev, void *module) {
  auto *m = static_cast<CudaModule *>(module);
  ContextScope scope(api, dev);
  if (m->library)
    api.cuLibraryUnload(m->library);
  if (m->module)
    api.cuModuleUnload(m->module);
  delete m;
}

wave_status_t CudaBackend::getFunction(void *dev, void *module, const char *name, void **function) {
  auto *m = static_cast<CudaModule *>(module);
  ContextScope scope(api, dev);
  CUfunction f = nullptr;
  if (m->library) {
    CUkernel k = nullptr;
    if (wave_status_t s = check(api.cuLibraryGetKernel(&k, m->library, name), "cuLibraryGetKernel",
                                WAVE_ERROR_NOT_FOUND))
      return fail(s, std::string(wave_last_error()) + ": kernel '" + name + "'");
    // The CUfunction of the device's primary context (pushed above).
    if (wave_status_t s =
            check(api.cuKernelGetFunction(&f, k), "cuKernelGetFunction", WAVE_ERROR_DRIVER))
      return s;
  } else if (wave_status_t s = check(api.cuModuleGetFunction(&f, m->module, name),
                                     "cuModuleGetFunction", WAVE_ERROR_NOT_FOUND)) {
    return fail(s, std::string(wave_last_error()) + ": kernel '" + name + "'");
  }
  *function = f;
  return WAVE_SUCCESS;
}

wave_status_t CudaBackend::launch(void *dev, void *stream, void *function, const uint32_t grid[3],
                                  const uint32_t block[3], uint32_t dynamicSharedBytes,
                                  const void *args, size_t argsSize) {
  auto f = static_cast<CUfunction>(function);
  ContextScope scope(api, dev);
  // Above 48 KiB, dynamic shared memory must be opted into per function.
  if (dynamicSharedBytes > kDefaultDynamicSharedLimit && api.cuFuncSetAttribute)
    if (wave_status_t s =
            check(api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         int(dynamicSharedBytes)),
                  "cuFuncSetAttribute", WAVE_ERROR_LAUNCH))
      return s;
  size_t size = argsSize;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void *>(args),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CUresult r = api.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                  dynamicSharedBytes, static_cast<CUstream>(stream), nullptr,
                                  argsSize ? extra : nullptr);
  return check(r, "cuLaunchKernel", WAVE_ERROR_LAUNCH);
}

wave_status_t CudaBackend::eventCreate(void *dev, void **event) {
  if (!api.cuEventCreate)
    return failf(WAVE_ERROR_UNSUPPORTED, "cuda: the driver library lacks the event API");
  ContextScope scope(api, dev);
  CUevent e = nullptr;
  if (wave_status_t s = check(api.cuEventCreate(&e, 0), "cuEventCreate", WAVE_ERROR_DRIVER))
    return s;
  *event = e;
  return WAVE_SUCCESS;
}

void CudaBackend::eventDestroy(void *dev, void *event) {
  ContextScope scope(api, dev);
  api.cuEventDestroy(static_cast<CUevent>(event));
}

wave_status_t CudaBackend::eventRecord(void *dev, void *event, void *stream) {
  ContextScope scope(api, dev);
  return check(api.cuEventRecord(static_cast<CUevent>(event), static_cast<CUstream>(stream)),
               "cuEventRecord", WAVE_ERROR_DRIVER);
}

wave_status_t CudaBackend::eventSynchronize(void *dev, void *event) {
  ContextScope scope(api, dev);
  return check(api.cuEventSynchronize(static_cast<CUevent>(event)), "cuEventSynchronize",
               WAVE_ERROR_LAUNCH);
}

wave_status_t CudaBackend::eventElapsed(void *dev, void *start, void *end, float *ms) {
  ContextScope scope(api, dev);
  return check(api.cuEventElapsedTime(ms, static_cast<CUevent>(start), static_cast<CUevent>(end)),
               "cuEventElapsedTime", WAVE_ERROR_DRIVER);
}

} // namespace

Backend &cudaBackend() {
  // Leaked on purpose: the driver may be torn down before static destructors run.
  static auto *backend = new CudaBackend();
  return *backend;
}

} // namespace wave::rt
