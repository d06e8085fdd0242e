/* wave/kernel_api.h — what the host stubs that wavec generates (--header/--stub) use besides the
 * launch runtime: tensor descriptors, code-object tables, kernel descriptions, and the helpers
 * that pick a code object for a device and report errors. Compiles as C99 and C++. */
#ifndef WAVE_KERNEL_API_H
#define WAVE_KERNEL_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wave/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor descriptor, layout-compatible with DLPack's DLTensor: a DLTensor* can be passed
 * where a wave_tensor_t* is expected. Strides and shape are in elements, row-major order
 * (dim 0 is the outermost); strides NULL means compact row-major. */
typedef struct {
  int32_t device_type; /* DLPack: kDLCUDA 2, kDLROCM 10, ... (not checked by wavec stubs) */
  int32_t device_id;
} wave_tensor_device_t;

typedef struct {
  uint8_t code; /* DLPack: int 0, uint 1, float 2, bfloat 4, bool 6 */
  uint8_t bits;
  uint16_t lanes;
} wave_dtype_t;

typedef struct {
  void *data;
  wave_tensor_device_t device;
  int32_t ndim;
  wave_dtype_t dtype;
  const int64_t *shape;
  const int64_t *strides;
  uint64_t byte_offset;
} wave_tensor_t;

/* One code object of a generated stub: the target it was compiled for and its bytes (embedded)
 * or a path to load them from. */
typedef struct {
  const char *arch;           /* "gfx942", "sm_90", ...; "emu:gfx942" for an emulator image */
  const unsigned char *image; /* NULL when `path` is used */
  size_t size;
  const char *path;           /* NULL when embedded */
} wave_code_object_t;

typedef struct {
  const char *name;
  const char *kind; /* "pointer", "scalar", "dim" */
  const char *type; /* element type of a pointer, type of a scalar, "i64" for a dim */
  uint32_t offset, size;
  int is_output;
} wave_arg_info_t;

typedef struct {
  const char *name;
  const char *targets;      /* space-separated */
  uint32_t block[3];
  const char *grid[3];      /* formulas in the dynamic symbols */
  uint32_t shared_bytes;    /* shared memory of the kernel per workgroup, static and dynamic */
  uint32_t num_args;
  const wave_arg_info_t *args;
  uint32_t args_size;       /* bytes of the packed argument buffer */
} wave_kernel_info_t;

/* Picks the code object whose arch matches the stream's device, loads it on that device (once:
 * later calls are a cache lookup; thread-safe) and finds `kernel_name` in it. Fails with
 * WAVE_ERROR_NOT_FOUND, naming the device's arch and the archs on offer, when none matches. */
wave_status_t wave_select_kernel(wave_stream_t stream, const wave_code_object_t *objects,
                                 size_t count, const char *kernel_name, wave_device_t *device,
                                 wave_kernel_t *kernel);

/* wave_select_kernel that also reports which entry of `objects` it picked (the stub of a
 * multi-target build takes that code object's launch geometry). */
wave_status_t wave_select_kernel_index(wave_stream_t stream, const wave_code_object_t *objects,
                                       size_t count, const char *kernel_name,
                                       wave_device_t *device, wave_kernel_t *kernel,
                                       size_t *index);

/* Sets this thread's error message (printf-style) and returns `status`. */
wave_status_t wave_fail(wave_status_t status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* True when the tensor's strides are NULL or those of a compact row-major layout. */
bool wave_tensor_is_compact(const wave_tensor_t *tensor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WAVE_KERNEL_API_H */
