/* wave/runtime.h — the launch runtime that wavec's generated host stubs (and host programs) use.
 *
 * One C API over several GPU back ends, chosen per device by URI: `cuda://N` (NVIDIA driver API,
 * libcuda.so.1), `hip://N` (AMD HIP, libamdhip64.so), `auto` and `emu` / `emu:TARGET` (the CPU
 * emulator of gfx942, gfx90a, gfx1100, sm_80, sm_90 or sm_90a: it runs the emulator images wavec embeds
 * next to each native code object, checking every memory access). Vendor libraries are dlopen()ed
 * at the first use of that kind of device, so nothing here links against a vendor SDK.
 *
 * Every call returns a wave_status_t; on failure wave_last_error() gives a message for the calling
 * thread (including the driver's error name and text). The runtime never exits or aborts.
 *
 * Handles: a device is opened once per (back end, ordinal) and reference-counted, so every
 * wave_device_open of `cuda://0` yields the same handle and the same module cache. Modules,
 * kernels and streams belong to their device and are invalid after its last wave_device_close.
 *
 * Compiles as C99 and C++. */
#ifndef WAVE_RUNTIME_H
#define WAVE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WAVE_RUNTIME_VERSION_MAJOR 0
#define WAVE_RUNTIME_VERSION_MINOR 2 /* 0.2: wave_stream_wrap, wave_event_*, NULL stream =
                                        the default device's default stream, WAVE_DEVICE */

/* The library is built with hidden visibility; only these entry points are exported. */
#if defined(__GNUC__)
#define WAVE_RUNTIME_API __attribute__((visibility("default")))
#else
#define WAVE_RUNTIME_API
#endif

typedef enum {
  WAVE_SUCCESS = 0,
  WAVE_ERROR_INVALID_ARGUMENT, /* NULL pointer, bad URI, launch dims out of range, ... */
  WAVE_ERROR_NO_DEVICE,        /* the driver loaded but has no such device */
  WAVE_ERROR_DRIVER_NOT_FOUND, /* the vendor library could not be dlopen()ed */
  WAVE_ERROR_DRIVER,           /* any other driver failure (name and text in the message) */
  WAVE_ERROR_OUT_OF_MEMORY,
  WAVE_ERROR_INVALID_IMAGE,     /* a code object the back end cannot load */
  WAVE_ERROR_NOT_FOUND,         /* no kernel of that name, no such file */
  WAVE_ERROR_UNSUPPORTED_SHAPE, /* used by generated stubs: a shape violates an `assume` */
  WAVE_ERROR_LAUNCH,            /* the driver rejected a launch or a kernel faulted */
  WAVE_ERROR_UNSUPPORTED,       /* the operation or back end is not available in this build */
  WAVE_ERROR_STEP_LIMIT         /* the CPU emulator stopped a launch that ran past its step
                                   limit (WAVE_EMU_STEP_LIMIT): a kernel that never ends? */
} wave_status_t;

/* "WAVE_SUCCESS", "WAVE_ERROR_...", or "WAVE_ERROR_<unknown>" for values outside the enum. */
WAVE_RUNTIME_API const char *wave_status_name(wave_status_t status);

/* The message of the last failed call on this thread; "" when none failed yet. Valid until the
 * next runtime call on this thread. Successful calls do not clear it. */
WAVE_RUNTIME_API const char *wave_last_error(void);

typedef struct wave_device *wave_device_t;
/* A NULL stream is a device's default stream: of the device a call names (wave_launch,
 * wave_event_record), else of the default device, which is what wave_device_open("auto")
 * gives, opened on first use and held until the process ends. */
typedef struct wave_stream *wave_stream_t;
typedef struct wave_module *wave_module_t;
typedef struct wave_kernel *wave_kernel_t;
typedef struct wave_event *wave_event_t;

typedef enum {
  WAVE_VENDOR_NVIDIA = 1,
  WAVE_VENDOR_AMD = 2,
  WAVE_VENDOR_EMULATOR = 3 /* the `emu` back end (the CPU emulator) */
} wave_vendor_t;

typedef struct {
  wave_vendor_t vendor;
  int ordinal;                      /* N of `cuda://N` / `hip://N` */
  char backend[8];                  /* "cuda", "hip", "emu" */
  char arch[32];                    /* the code-object key: "sm_90", "gfx942" (no feature suffix),
                                       "emu:gfx942" for the emulator of gfx942 */
  char name[256];                   /* the driver's device name */
  uint32_t warp_size;               /* 32 or 64 */
  uint32_t shared_memory_per_block; /* bytes usable by one block without opt-in */
  uint32_t multiprocessor_count;    /* SMs / CUs */
} wave_device_info_t;

/* ---- devices ---------------------------------------------------------------------------- */

/* Opens `cuda://N`, `hip://N`, `auto`, `emu` (= `emu:gfx942`) or `emu:TARGET`. Opening an open
 * device returns the same handle and counts it.
 * `auto` is the device the environment variable WAVE_DEVICE names when it is set (to a URI other
 * than `auto`); else the first CUDA device, else the first HIP device, else, when no GPU driver is
 * installed at all, the CPU emulator (with a notice on stderr). That emulator device is
 * `emu:gfx942`, but a generated stub whose artifact carries no gfx942 emulator image runs its
 * kernel on the emulator of the first target it does carry (e.g. `emu:sm_90` for a build for
 * sm_90), with a notice on stderr. On the emulator, launches run synchronously and
 * fail with WAVE_ERROR_LAUNCH and a located message on an out-of-bounds access, a shared-memory
 * race (cp.async copies in flight included) or a read of unwritten shared memory, and with
 * WAVE_ERROR_STEP_LIMIT when a workgroup executes more instructions than WAVE_EMU_STEP_LIMIT
 * (default 2^32); a damaged emulator image (checksum) fails to load with
 * WAVE_ERROR_INVALID_IMAGE. */
WAVE_RUNTIME_API wave_status_t wave_device_open(const char *uri, wave_device_t *out);
/* Drops one reference; the last one unloads the device's modules and releases its context. */
WAVE_RUNTIME_API wave_status_t wave_device_close(wave_device_t device);
WAVE_RUNTIME_API wave_status_t wave_device_info(wave_device_t device, wave_device_info_t *out);
/* Waits for all work on the device. */
WAVE_RUNTIME_API wave_status_t wave_device_synchronize(wave_device_t device);

/* ---- memory (device pointers are plain `void *` on every back end) --------------------------- */

WAVE_RUNTIME_API wave_status_t wave_malloc(wave_device_t device, size_t bytes, void **out);
WAVE_RUNTIME_API wave_status_t wave_free(wave_device_t device, void *ptr); /* NULL is a no-op */
/* The copies and memset are synchronous with respect to the host (they complete before return). */
WAVE_RUNTIME_API wave_status_t wave_memcpy_htod(wave_device_t device, void *dst, const void *src,
                                                size_t bytes);
WAVE_RUNTIME_API wave_status_t wave_memcpy_dtoh(wave_device_t device, void *dst, const void *src,
                                                size_t bytes);
WAVE_RUNTIME_API wave_status_t wave_memcpy_dtod(wave_device_t device, void *dst, const void *src,
                                                size_t bytes);
WAVE_RUNTIME_API wave_status_t wave_memset(wave_device_t device, void *dst, int byte_value,
                                           size_t bytes);

/* ---- streams ---------------------------------------------------------------------------- */

WAVE_RUNTIME_API wave_status_t wave_stream_create(wave_device_t device, wave_stream_t *out);
WAVE_RUNTIME_API wave_status_t wave_stream_destroy(wave_stream_t stream);
/* Wraps a stream that a host framework owns, so launches join its order: on `cuda://N` a CUstream
 * (= cudaStream_t, e.g. torch.cuda.current_stream().cuda_stream) of the device's primary context,
 * on `hip://N` a hipStream_t; NULL is the device's default stream. On the emulator the handle is
 * ignored (launches are synchronous). The runtime never destroys the native stream:
 * wave_stream_destroy of a wrapped stream frees the wrapper only. */
WAVE_RUNTIME_API wave_status_t wave_stream_wrap(wave_device_t device, void *native_handle,
                                                wave_stream_t *out);
/* Waits for the stream's work; NULL: the default device's default stream. wave_device_synchronize
 * waits for every stream of a device. */
WAVE_RUNTIME_API wave_status_t wave_stream_synchronize(wave_stream_t stream);
/* The device a stream belongs to (what a generated `NAME_launch(stream, ...)` loads modules on);
 * for NULL the default device (opening it on first use, so this can fail like `auto`). */
WAVE_RUNTIME_API wave_status_t wave_stream_device(wave_stream_t stream, wave_device_t *out);

/* ---- events: timing without a vendor API -------------------------------------------------- */

/* An event marks a point in a stream's work; two completed events give the milliseconds between
 * them (on the GPU's clock; on the emulator, whose launches are synchronous, the host's). */
WAVE_RUNTIME_API wave_status_t wave_event_create(wave_device_t device, wave_event_t *out);
WAVE_RUNTIME_API wave_status_t wave_event_destroy(wave_event_t event);
/* Records the event on `stream` (NULL: the default stream of the event's device); it completes
 * when the work queued before it has. The stream must belong to the event's device. */
WAVE_RUNTIME_API wave_status_t wave_event_record(wave_event_t event, wave_stream_t stream);
/* Waits until the event has completed. */
WAVE_RUNTIME_API wave_status_t wave_event_synchronize(wave_event_t event);
/* Milliseconds from `start` to `end`, both recorded and completed (wave_event_synchronize(end)
 * first), of one device. */
WAVE_RUNTIME_API wave_status_t wave_event_elapsed_ms(wave_event_t start, wave_event_t end,
                                                     float *ms);

/* ---- modules and kernels ---------------------------------------------------------------- */

/* Loads a code object: an HSACO (AMDGPU ELF) on HIP; PTX text, a cubin or a fatbin on CUDA.
 * The image is copied as needed and may be freed after the call. Cached per device by content:
 * loading the same bytes again returns the same module (and counts a reference). Thread-safe. */
WAVE_RUNTIME_API wave_status_t wave_module_load_data(wave_device_t device, const void *image,
                                                     size_t size, wave_module_t *out);
WAVE_RUNTIME_API wave_status_t wave_module_load_file(wave_device_t device, const char *path,
                                                     wave_module_t *out);
/* Drops one reference; the last one unloads the module and invalidates its kernels. */
WAVE_RUNTIME_API wave_status_t wave_module_unload(wave_module_t module);
/* `name` is the unmangled kernel symbol (no `.kd`). The handle lives as long as the module. */
WAVE_RUNTIME_API wave_status_t wave_module_get_kernel(wave_module_t module, const char *name,
                                                      wave_kernel_t *out);
/* The kernel's name, for messages; NULL for a NULL kernel. */
WAVE_RUNTIME_API const char *wave_kernel_name(wave_kernel_t kernel);

/* ---- launch ----------------------------------------------------------------------------- */

/* Launches `kernel` with `grid` blocks of `block` threads on `stream` (NULL: the device's default
 * stream). `args` is the packed explicit-argument buffer laid out exactly as the kernel's ABI does
 * (each argument at its natural alignment; no AMD hidden arguments); `args_size` its size in
 * bytes (0 and NULL for a kernel without arguments). The launch is asynchronous. */
WAVE_RUNTIME_API wave_status_t wave_launch(wave_device_t device, wave_stream_t stream,
                                           wave_kernel_t kernel, const uint32_t grid[3],
                                           const uint32_t block[3], uint32_t dynamic_shared_bytes,
                                           const void *args, size_t args_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WAVE_RUNTIME_H */
