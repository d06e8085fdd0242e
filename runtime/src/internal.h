// Internal interfaces of libwave_runtime: the error helpers every file uses, the code-object
// validators (exposed here so tests can call them without a GPU), and the back-end vtable that
// api.cpp drives. Nothing here is part of the installed C API.
#ifndef WAVE_RUNTIME_INTERNAL_H
#define WAVE_RUNTIME_INTERNAL_H

#include "wave/kernel_api.h"
#include "wave/runtime.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>

namespace wave::rt {

// ---- errors (error.cpp) ------------------------------------------------------------------

/// Records `message` as this thread's last error and returns `status`, so failure paths read
/// `return fail(WAVE_ERROR_..., "...")`.
wave_status_t fail(wave_status_t status, std::string message) noexcept;

/// printf-style variant of fail().
wave_status_t failf(wave_status_t status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

// ---- code objects (image.cpp) -------------------------------------------------------------

enum class CudaImageKind { Ptx, Cubin, Fatbin };

/// Accepts an HSACO (64-bit little-endian ELF with e_machine EM_AMDGPU) or a clang offload
/// bundle; anything else fails with WAVE_ERROR_INVALID_IMAGE and says what the bytes look like.
wave_status_t validateHipImage(const void *image, size_t size);

/// Accepts PTX text, an ELF cubin (e_machine EM_CUDA) or a fatbin; reports which in `kind`.
wave_status_t validateCudaImage(const void *image, size_t size, CudaImageKind *kind);

/// 64-bit FNV-1a of the bytes: the content half of the module-cache key.
uint64_t hashImage(const void *image, size_t size);

/// "gfx942:sramecc+:xnack-" -> "gfx942": code objects are picked by the processor name alone.
std::string stripTargetFeatures(const std::string &arch);

// ---- launch limits (api.cpp) -------------------------------------------------------------

/// Rejects empty launches and launches beyond the limits every supported GPU shares (block of at
/// most 1024 threads and (1024, 1024, 64); grid y/z at most 65535; grid x at most 2^31 - 1;
/// grid * block per dimension below 2^32) before a driver sees them.
wave_status_t checkLaunchShape(const char *kernel, const uint32_t grid[3], const uint32_t block[3]);

// ---- the default device and `auto` (api.cpp) ------------------------------------------------

/// The device a NULL stream stands for: what wave_device_open("auto") gives (WAVE_DEVICE
/// honoured), opened on first use and held until the process ends.
wave_status_t defaultDevice(wave_device_t *out);
/// True when `auto` fell back to this emulator device because no GPU driver is installed.
bool isAutoEmulator(wave_device_t device);
/// Opens (once per process, with a notice on stderr) the emulator of `target` for `auto`.
wave_status_t openEmulatorForAuto(const char *target, wave_device_t *out);
/// The device a kernel was loaded on.
wave_device_t kernelDevice(wave_kernel_t kernel);

// ---- code-object selection (kernel_api.cpp) -----------------------------------------------

/// The code object of `objects` to use on a device of `arch`: the exact arch; on NVIDIA also the
/// arch-specific flavour of the same version (sm_90a on sm_90), then the newest PTX for an older
/// version (PTX is JIT-compiled forward; a cubin is not). NULL when none fits.
const wave_code_object_t *pickCodeObject(const char *arch, const wave_code_object_t *objects,
                                         size_t count);

/// Drops wave_select_kernel's cached kernels of a device that is being destroyed, so a device
/// opened later at the same address never sees them.
void forgetSelections(wave_device_t device);

// ---- back ends ----------------------------------------------------------------------------

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };

/// What wave_tensor_map asks for (kernel_api.h): the tensor `base` of rank `rank` (1..5) with
/// `dims` elements per dim (row-major: the last dim is contiguous) of `elementBytes` bytes each
/// (`dtype`: kernel_api.h's wave_dtype_t code), `strides[i]` the byte stride of dim i for
/// i < rank - 1; boxes of `box` elements per dim (same order), `swizzleBytes` (0, 32, 64 or 128)
/// the shared-memory swizzle. Entries past `rank` are 0. Ordered, so that it can key a cache.
/// wave_tensor_map_2d's request is rank 2: dims {rows, cols}, strides {row stride}.
struct TensorMapRequest {
  static constexpr uint32_t kMaxRank = 5;
  const void *base = nullptr;
  uint32_t dtypeCode = 0, elementBytes = 0, rank = 0;
  std::array<uint64_t, kMaxRank> dims{}, strides{};
  std::array<uint32_t, kMaxRank> box{};
  uint32_t swizzleBytes = 0;
  auto key() const {
    return std::make_tuple(base, dtypeCode, elementBytes, rank, dims, strides, box, swizzleBytes);
  }
  bool operator<(const TensorMapRequest &o) const { return key() < o.key(); }
};
/// The driver's data type of a request (CUtensorMapDataType): f16 6, bf16 9, f32 7, fp8 0
/// (UINT8: the copy moves bytes); -1 when
/// the element type has none here. Checks a request's shape against the driver's documented
/// limits first (so a bad one fails with a message, not CUDA_ERROR_INVALID_VALUE); exposed so
/// tests can call it without a GPU.
wave_status_t checkTensorMapRequest(const TensorMapRequest &r, int *driverType);
/// One GPU driver behind the C API. Each method works on the back end's own per-device state
/// (`dev`, made by openDevice) and returns a status with the thread's message set on failure.
/// api.cpp has already checked handles, pointers and launch limits; back ends check nothing
/// twice. A third back end (the CPU emulator) implements the same interface.
class Backend {
public:
  virtual ~Backend() = default;

  /// "cuda", "hip": the URI scheme.
  virtual const char *name() const = 0;

  /// Loads the driver (once it succeeds) and counts its devices.
  virtual wave_status_t deviceCount(int *count) = 0;
  virtual wave_status_t openDevice(int ordinal, void **dev, wave_device_info_t *info) = 0;
  virtual void closeDevice(void *dev) = 0;
  virtual wave_status_t synchronize(void *dev) = 0;

  virtual wave_status_t allocate(void *dev, size_t bytes, void **out) = 0;
  virtual wave_status_t release(void *dev, void *ptr) = 0;
  virtual wave_status_t copy(void *dev, CopyKind kind, void *dst, const void *src,
                             size_t bytes) = 0;
  virtual wave_status_t fill(void *dev, void *dst, int value, size_t bytes) = 0;

  virtual wave_status_t streamCreate(void *dev, void **stream) = 0;
  virtual wave_status_t streamDestroy(void *dev, void *stream) = 0;
  virtual wave_status_t streamSynchronize(void *dev, void *stream) = 0;

  virtual wave_status_t validateImage(const void *image, size_t size) = 0;
  virtual wave_status_t moduleLoad(void *dev, const void *image, size_t size, void **module) = 0;
  virtual void moduleUnload(void *dev, void *module) = 0;
  virtual wave_status_t getFunction(void *dev, void *module, const char *name, void **function) = 0;

  /// Events: a marker recorded on a stream (null: the default stream) and the milliseconds
  /// between two completed ones.
  virtual wave_status_t eventCreate(void *dev, void **event) = 0;
  virtual void eventDestroy(void *dev, void *event) = 0;
  virtual wave_status_t eventRecord(void *dev, void *event, void *stream) = 0;
  virtual wave_status_t eventSynchronize(void *dev, void *event) = 0;
  virtual wave_status_t eventElapsed(void *dev, void *start, void *end, float *ms) = 0;

  /// A TMA tensor map (NVIDIA, cuTensorMapEncodeTiled) of a tensor of rank 1..5 in device
  /// memory of this device, the map's 128 bytes written to device memory the back end owns
  /// until the device closes; `*out` is their address. Cached per request: the same request
  /// gives the same address without a driver call. Only the CUDA back end has maps.
  virtual wave_status_t tensorMap(void *dev, const TensorMapRequest &request, void **out) {
    (void)dev;
    (void)request;
    (void)out;
    return failf(WAVE_ERROR_UNSUPPORTED, "%s: this back end has no TMA tensor maps", name());
  }
  /// `stream` is null for the device's default stream.
  virtual wave_status_t launch(void *dev, void *stream, void *function, const uint32_t grid[3],
                               const uint32_t block[3], uint32_t dynamicSharedBytes,
                               const void *args, size_t argsSize) = 0;
};

/// Process-lifetime singletons; the driver library is opened on the first deviceCount().
Backend &cudaBackend();
Backend &hipBackend();
/// The CPU emulator (backend_emu.cpp); its ordinals are the emulated targets.
Backend &emuBackend();
/// The ordinal of `emu:<target>`, -1 for a target the emulator does not know.
int emuOrdinal(const char *target);
/// "emu:gfx942, emu:gfx90a, ..." for messages.
std::string emuTargetNames();

/// dlopen()s the first of `names` that loads (or `$envOverride` alone when that is set);
/// on failure fails with WAVE_ERROR_DRIVER_NOT_FOUND naming every library tried.
wave_status_t openDriverLibrary(const char *what, const char *const *names, size_t count,
                                const char *envOverride, void **handle);

} // namespace wave::rt

#endif // WAVE_RUNTIME_INTERNAL_H
