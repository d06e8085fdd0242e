/* launch_checks.c — executes the generated launch functions (NAME_launch and the DLPack-style
 * NAME_launch_tensors) of two stubs through every bad-argument path and the good one.
 *
 *   launch_checks checks   every check runs on any machine. The runtime's kernel selection and
 *                          launch (wave_select_kernel, wave_launch) are replaced by recording
 *                          doubles defined in this program (ELF interposition: the stub's calls
 *                          bind to them), so a launch that passes every check is captured with
 *                          its grid, block and packed argument buffer, which are then checked
 *                          against the kernel's ABI (NAME_info) and the expected values. The
 *                          status names and thread-local messages are the real runtime's.
 *   launch_checks device   the same program with the real runtime (the doubles forward to it):
 *                          opens $WAVE_DEVICE (default auto) — without a device that must fail
 *                          with a status and a message, and the test exits 77 (skipped) —
 *                          then launches on random data of an unaligned shape and compares with
 *                          a CPU reference, loads an unloadable image, and repeats bad launches.
 *
 * Kernels: samples/elementwise (c = a * alpha + broadcast(b)), tests/codegen/mlir_dynamic
 * (scale_add, with assume(M % 2 == 0), assume(N % 256 == 0)) and tests/e2e/kernels/expr_dim_half
 * (broadcast_scaled_add: tensors [M, N / 2], so NAME_launch_tensors finds N = 2 * extent). */
#define _GNU_SOURCE
#include "elementwise.h"
#include "scale_add.h"
#include "broadcast_scaled_add.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the recording doubles --------------------------------------------------------------- */
static int fake_mode = 1;
static struct {
  int launches;
  char kernel[64];
  uint32_t grid[3], block[3];
  unsigned char args[256];
  size_t args_size;
} rec;
static int fake_device_token, fake_kernel_token;

wave_status_t wave_select_kernel(wave_stream_t stream, const wave_code_object_t *objects,
                                 size_t count, const char *kernel_name, wave_device_t *device,
                                 wave_kernel_t *kernel) {
  if (!fake_mode) {
    wave_status_t (*real)(wave_stream_t, const wave_code_object_t *, size_t, const char *,
                          wave_device_t *, wave_kernel_t *);
    *(void **)&real = dlsym(RTLD_NEXT, "wave_select_kernel");
    return real(stream, objects, count, kernel_name, device, kernel);
  }
  snprintf(rec.kernel, sizeof rec.kernel, "%s", kernel_name);
  *device = (wave_device_t)&fake_device_token;
  *kernel = (wave_kernel_t)&fake_kernel_token;
  return WAVE_SUCCESS;
}

/* Multi-target stubs select through this variant, which also reports the entry picked: the
 * double picks entry 0 (the first target's launch geometry, which NAME_info describes). */
wave_status_t wave_select_kernel_index(wave_stream_t stream, const wave_code_object_t *objects,
                                       size_t count, const char *kernel_name,
                                       wave_device_t *device, wave_kernel_t *kernel,
                                       size_t *index) {
  if (!fake_mode) {
    wave_status_t (*real)(wave_stream_t, const wave_code_object_t *, size_t, const char *,
                          wave_device_t *, wave_kernel_t *, size_t *);
    *(void **)&real = dlsym(RTLD_NEXT, "wave_select_kernel_index");
    return real(stream, objects, count, kernel_name, device, kernel, index);
  }
  *index = 0;
  return wave_select_kernel(stream, objects, count, kernel_name, device, kernel);
}

wave_status_t wave_launch(wave_device_t device, wave_stream_t stream, wave_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t block[3],
                          uint32_t dynamic_shared_bytes, const void *args, size_t args_size) {
  if (!fake_mode) {
    wave_status_t (*real)(wave_device_t, wave_stream_t, wave_kernel_t, const uint32_t *,
                          const uint32_t *, uint32_t, const void *, size_t);
    *(void **)&real = dlsym(RTLD_NEXT, "wave_launch");
    return real(device, stream, kernel, grid, block, dynamic_shared_bytes, args, args_size);
  }
  ++rec.launches;
  memcpy(rec.grid, grid, sizeof rec.grid);
  memcpy(rec.block, block, sizeof rec.block);
  rec.args_size = args_size < sizeof rec.args ? args_size : sizeof rec.args;
  memcpy(rec.args, args, rec.args_size);
  return WAVE_SUCCESS;
}

/* ---- checking ------------------------------------------------------------------------------ */
static int passed, failed;

static void check(int cond, const char *what) {
  if (cond) {
    ++passed;
  } else {
    ++failed;
    printf("FAIL: %s\n", what);
  }
}

/* A call that must fail with `status`, a message containing `needle`, and no launch. */
static void expect_refused(wave_status_t got, wave_status_t status, const char *needle,
                           const char *what) {
  char line[512];
  int ok = got == status && strstr(wave_last_error(), needle) != NULL && rec.launches == 0;
  snprintf(line, sizeof line, "%s: got %s (%s), launches %d; wanted %s with '%s'", what,
           wave_status_name(got), wave_last_error(), rec.launches, wave_status_name(status),
           needle);
  check(ok, line);
  rec.launches = 0;
}

#define REFUSED(call, status, needle) expect_refused((call), (status), (needle), #call)

static const wave_arg_info_t *arg_named(const wave_kernel_info_t *info, const char *name) {
  for (uint32_t i = 0; i < info->num_args; ++i)
    if (strcmp(info->args[i].name, name) == 0)
      return &info->args[i];
  return NULL;
}

/* The recorded argument buffer holds `value` (`size` bytes) where NAME_info says `name` goes. */
static int arg_is(const wave_kernel_info_t *info, const char *name, const void *value,
                  size_t size) {
  const wave_arg_info_t *a = arg_named(info, name);
  return a && a->size == size && a->offset + size <= rec.args_size &&
         memcmp(rec.args + a->offset, value, size) == 0;
}

static const wave_dtype_t F32 = {2, 32, 1}, F16 = {2, 16, 1}, I32 = {0, 32, 1};

/* Every descriptor check of elementwise_launch_tensors (a: [M, N] f32, b: [N] f32, c: [M, N]). */
static void descriptor_checks(wave_stream_t stream, void *pa, void *pb, void *pc, int64_t M,
                              int64_t N) {
  const int64_t mn[2] = {M, N}, n1[1] = {N}, nm[2] = {N, M}, m1n[2] = {M + 1, N};
  const int64_t dense[2] = {N, 1}, padded[2] = {N + 16, 1}, transposed[2] = {1, M};
  wave_tensor_t a = {pa, {0, 0}, 2, F32, mn, NULL, 0}, b = {pb, {0, 0}, 1, F32, n1, NULL, 0};
  wave_tensor_t c = {pc, {0, 0}, 2, F32, mn, NULL, 0}, t;
  const float alpha = 0.5f;

  REFUSED(elementwise_launch_tensors(stream, NULL, &b, alpha, &c), WAVE_ERROR_INVALID_ARGUMENT,
          "tensor 'a' is NULL");
  t = b, t.data = NULL;
  REFUSED(elementwise_launch_tensors(stream, &a, &t, alpha, &c), WAVE_ERROR_INVALID_ARGUMENT,
          "tensor 'b' has no data");
  t = a, t.dtype = F16;
  REFUSED(elementwise_launch_tensors(stream, &t, &b, alpha, &c), WAVE_ERROR_INVALID_ARGUMENT,
          "16-bit elements");
  t = c, t.dtype = I32;
  REFUSED(elementwise_launch_tensors(stream, &a, &b, alpha, &t), WAVE_ERROR_INVALID_ARGUMENT,
          "type code 0");
  t = a, t.dtype.lanes = 4;
  REFUSED(elementwise_launch_tensors(stream, &t, &b, alpha, &c), WAVE_ERROR_INVALID_ARGUMENT,
          "must be Memory[M, N, global, f32]");
  t = b, t.ndim = 2, t.shape = mn;
  REFUSED(elementwise_launch_tensors(stream, &a, &t, alpha, &c), WAVE_ERROR_INVALID_ARGUMENT,
          "got rank 2");
  t = a, t.shape = NULL;
  REFUSED(elementwise_launch_tensors(stream, &t, &b, alpha, &c), WAVE_ERROR_INVALID_ARGUMENT,
          "tensor 'a' has no shape");
  {
    /* A negative extent must not be replaced by another tensor's. */
    const int64_t neg[2] = {-5, N};
    t = a, t.shape = neg;
    REFUSED(elementwise_launch_tensors(stream, &t, &b, alpha, &c), WAVE_ERROR_INVALID_ARGUMENT,
            "dim 0 of 'a' is negative (-5)");
  }
  t = c, t.shape = m1n;
  REFUSED(elementwise_launch_tensors(stream, &a, &b, alpha, &t), WAVE_ERROR_INVALID_ARGUMENT,
          "dim 0 of 'c'");
  t = c, t.shape = nm;
  REFUSED(elementwise_launch_tensors(stream, &a, &b, alpha, &t), WAVE_ERROR_INVALID_ARGUMENT,
          "but M is");
  t = a, t.strides = padded;
  REFUSED(elementwise_launch_tensors(stream, &t, &b, alpha, &c), WAVE_ERROR_INVALID_ARGUMENT,
          "compact row-major");
  t = c, t.strides = transposed;
  REFUSED(elementwise_launch_tensors(stream, &a, &b, alpha, &t), WAVE_ERROR_INVALID_ARGUMENT,
          "tensor 'c' must be compact");
  /* Explicit dense strides are as good as NULL ones. */
  t = a, t.strides = dense;
  (void)t;
}

static void checks_mode(void) {
  wave_stream_t stream = (wave_stream_t)&fake_device_token; /* never dereferenced by a double */
  static float buf_a[4], buf_b[4], buf_c[4];
  const int64_t M = 1001, N = 4093;
  descriptor_checks(stream, buf_a, buf_b, buf_c, M, N);

  /* The pointer entry point's own checks. */
  REFUSED(elementwise_launch(stream, NULL, buf_b, 1.0f, buf_c, M, N), WAVE_ERROR_INVALID_ARGUMENT,
          "tensor 'a' is NULL");
  REFUSED(elementwise_launch(stream, buf_a, buf_b, 1.0f, NULL, M, N), WAVE_ERROR_INVALID_ARGUMENT,
          "tensor 'c' is NULL");
  REFUSED(elementwise_launch(stream, buf_a, buf_b, 1.0f, buf_c, -1, N), WAVE_ERROR_INVALID_ARGUMENT,
          "M = -1 is out of range");
  REFUSED(elementwise_launch(stream, buf_a, buf_b, 1.0f, buf_c, M, INT64_C(1) << 50),
          WAVE_ERROR_INVALID_ARGUMENT, "out of range");
  /* Failed assumptions (scale_add assumes M % 2 == 0 and N % 256 == 0). */
  REFUSED(scale_add_launch(stream, buf_a, 1.0f, buf_b, buf_c, 1001, 4096),
          WAVE_ERROR_UNSUPPORTED_SHAPE, "'M % 2 == 0' does not hold (M = 1001)");
  REFUSED(scale_add_launch(stream, buf_a, 1.0f, buf_b, buf_c, 1000, 4093),
          WAVE_ERROR_UNSUPPORTED_SHAPE, "'N % 256 == 0' does not hold (N = 4093)");
  {
    const int64_t mn[2] = {1000, 4000}, n1[1] = {4000};
    wave_tensor_t a = {buf_a, {0, 0}, 2, F32, mn, NULL, 0}, b = {buf_b, {0, 0}, 1, F32, n1, NULL, 0};
    wave_tensor_t c = {buf_c, {0, 0}, 2, F32, mn, NULL, 0};
    REFUSED(scale_add_launch_tensors(stream, &a, 2.0f, &b, &c), WAVE_ERROR_UNSUPPORTED_SHAPE,
            "'N % 256 == 0' does not hold (N = 4000)");
  }

  /* The good launch through descriptors, with byte offsets and explicit dense strides: the
   * recorded launch has the grid of the formulas, the block of NAME_info, and every argument
   * where the ABI table says. */
  {
    const int64_t mn[2] = {M, N}, n1[1] = {N}, dense[2] = {N, 1}, dense1[1] = {1};
    wave_tensor_t a = {buf_a, {2, 0}, 2, F32, mn, dense, 4}, b = {buf_b, {2, 0}, 1, F32, n1, dense1, 8};
    wave_tensor_t c = {buf_c, {2, 0}, 2, F32, mn, NULL, 0};
    const float alpha = -2.5f;
    rec.launches = 0;
    wave_status_t st = elementwise_launch_tensors(stream, &a, &b, alpha, &c);
    const wave_kernel_info_t *info = elementwise_info();
    check(st == WAVE_SUCCESS && rec.launches == 1, "a good descriptor launch reaches wave_launch");
    check(strcmp(rec.kernel, "elementwise") == 0, "the stub selects its kernel by name");
    check(rec.grid[0] == (uint32_t)((N + 255) / 256) && rec.grid[1] == (uint32_t)((M + 3) / 4) &&
              rec.grid[2] == 1,
          "grid = [ceildiv(N, 256), ceildiv(M, 4), 1]");
    check(memcmp(rec.block, info->block, sizeof rec.block) == 0, "block = NAME_info()->block");
    check(rec.args_size == info->args_size, "argument buffer size = NAME_info()->args_size");
    const char *pa = (const char *)buf_a + 4, *pb = (const char *)buf_b + 8;
    const void *pc = buf_c;
    check(arg_is(info, "a", &pa, 8) && arg_is(info, "b", &pb, 8) && arg_is(info, "c", &pc, 8),
          "tensor pointers (with byte_offset) are where the ABI table says");
    check(arg_is(info, "alpha", &alpha, 4), "the scalar is where the ABI table says");
    check(arg_is(info, "M", &M, 8) && arg_is(info, "N", &N, 8),
          "the dims derived from the descriptors are where the ABI table says");
  }
  /* A symbol that is no tensor's dim, only inside `N / 2`: the descriptors give N = 2 * 513. */
  {
    const int64_t mh[2] = {3, 513}, m1[1] = {3}, odd[2] = {3, 512};
    wave_tensor_t a = {buf_a, {0, 0}, 2, F16, mh, NULL, 0}, b = {buf_b, {0, 0}, 1, F16, m1, NULL, 0};
    wave_tensor_t c = {buf_c, {0, 0}, 2, F16, mh, NULL, 0}, t;
    const int64_t wantM = 3, wantN = 1026;
    rec.launches = 0;
    wave_status_t st = broadcast_scaled_add_launch_tensors(stream, &a, &b, &c);
    const wave_kernel_info_t *info = broadcast_scaled_add_info();
    check(st == WAVE_SUCCESS && rec.launches == 1, "an expression-dim launch reaches wave_launch");
    check(arg_is(info, "M", &wantM, 8) && arg_is(info, "N", &wantN, 8),
          "N is found from the extent of the dim N / 2 (2 * 513)");
    check(rec.grid[0] == 3 && rec.grid[1] == 3, "grid = [ceildiv(N / 2, 256), M, 1]");
    t = c, t.shape = odd;
    rec.launches = 0;
    REFUSED(broadcast_scaled_add_launch_tensors(stream, &a, &b, &t), WAVE_ERROR_INVALID_ARGUMENT,
            "dim 1 of 'c' is 512, the kernel needs N / 2 = 513");
  }
  /* An empty problem is no launch and no error. */
  rec.launches = 0;
  check(elementwise_launch(stream, buf_a, buf_b, 1.0f, buf_c, 0, 17) == WAVE_SUCCESS &&
            rec.launches == 0,
        "an empty grid succeeds without launching");
  /* A tensor without elements may have no storage (torch gives an empty tensor a NULL data
   * pointer): accepted by both entry points; a tensor with elements and no storage is not. */
  rec.launches = 0;
  check(elementwise_launch(stream, NULL, buf_b, 1.0f, NULL, 0, 17) == WAVE_SUCCESS,
        "NULL tensors with M = 0 are accepted by NAME_launch");
  REFUSED(elementwise_launch(stream, buf_a, NULL, 1.0f, buf_c, 0, 17), WAVE_ERROR_INVALID_ARGUMENT,
          "tensor 'b' is NULL"); /* b is [N] with N = 17 elements */
  {
    const int64_t zero_m[2] = {0, 17}, n1[1] = {17};
    wave_tensor_t a = {NULL, {0, 0}, 2, F32, zero_m, NULL, 0}, b = {buf_b, {0, 0}, 1, F32, n1, NULL, 0};
    wave_tensor_t c = {NULL, {0, 0}, 2, F32, zero_m, NULL, 0};
    check(elementwise_launch_tensors(stream, &a, &b, 1.0f, &c) == WAVE_SUCCESS,
          "descriptors without data and without elements are accepted by NAME_launch_tensors");
    b.data = NULL;
    REFUSED(elementwise_launch_tensors(stream, &a, &b, 1.0f, &c), WAVE_ERROR_INVALID_ARGUMENT,
            "tensor 'b' has no data");
  }
}

static float rand_f32(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) % 2000000u) / 1000000.0f - 1.0f;
}

static int device_mode(void) {
  fake_mode = 0;
  const char *uri = getenv("WAVE_DEVICE");
  if (!uri || !*uri)
    uri = "auto";
  wave_device_t dev = NULL;
  wave_status_t st = wave_device_open(uri, &dev);
  if (st != WAVE_SUCCESS) {
    /* "No device" is itself a path that must report, not exit: check it did. */
    check(dev == NULL && strlen(wave_last_error()) > 0 &&
              (st == WAVE_ERROR_DRIVER_NOT_FOUND || st == WAVE_ERROR_NO_DEVICE ||
               st == WAVE_ERROR_UNSUPPORTED || st == WAVE_ERROR_NOT_FOUND),
          "a failed device open returns a status and a message");
    printf("%d passed, %d failed\n", passed, failed);
    if (failed)
      return 1;
    printf("SKIPPED: no device '%s': %s: %s\n", uri, wave_status_name(st), wave_last_error());
    return 77;
  }
  /* An unloadable image is refused with a status and a message. */
  {
    static const unsigned char garbage[64] = "this is not a code object";
    wave_module_t module = NULL;
    wave_status_t s = wave_module_load_data(dev, garbage, sizeof garbage, &module);
    check(s != WAVE_SUCCESS && module == NULL && strlen(wave_last_error()) > 0,
          "an unloadable image is refused with a message");
  }
  const int64_t M = 1001, N = 4093;
  size_t count = (size_t)(M * N);
  float *ha = malloc(count * 4), *hb = malloc((size_t)N * 4), *hc = malloc(count * 4);
  uint32_t seed = 77;
  for (size_t i = 0; i < count; ++i)
    ha[i] = rand_f32(&seed);
  for (int64_t j = 0; j < N; ++j)
    hb[j] = rand_f32(&seed);
  wave_stream_t stream;
  void *a, *b, *c;
  if (wave_stream_create(dev, &stream) || wave_malloc(dev, count * 4, &a) ||
      wave_malloc(dev, (size_t)N * 4, &b) || wave_malloc(dev, count * 4, &c) ||
      wave_memcpy_htod(dev, a, ha, count * 4) || wave_memcpy_htod(dev, b, hb, (size_t)N * 4) ||
      wave_memset(dev, c, 0xff, count * 4)) {
    printf("FAIL: device setup: %s\n", wave_last_error());
    return 1;
  }
  descriptor_checks(stream, a, b, c, M, N);
  const int64_t mn[2] = {M, N}, n1[1] = {N};
  wave_tensor_t ta = {a, {0, 0}, 2, F32, mn, NULL, 0}, tb = {b, {0, 0}, 1, F32, n1, NULL, 0};
  wave_tensor_t tc = {c, {0, 0}, 2, F32, mn, NULL, 0};
  const float alpha = 1.25f;
  st = elementwise_launch_tensors(stream, &ta, &tb, alpha, &tc);
  check(st == WAVE_SUCCESS, "the descriptor launch succeeds on the device");
  if (st != WAVE_SUCCESS)
    printf("  %s: %s\n", wave_status_name(st), wave_last_error());
  wave_stream_synchronize(stream);
  wave_memcpy_dtoh(dev, hc, c, count * 4);
  size_t wrong = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float want = ha[i * N + j] * alpha + hb[j];
      wrong += !(fabsf(hc[i * N + j] - want) <= 1e-6f * (1.0f + fabsf(want)));
    }
  check(wrong == 0, "every element matches the CPU reference");
  printf("device %s: %zu of %zu elements wrong\n", uri, wrong, count);
  /* A NULL stream is the default stream of the default device (`auto`, which honours
   * WAVE_DEVICE: the device opened above). */
  wave_memset(dev, c, 0xff, count * 4);
  st = elementwise_launch_tensors(NULL, &ta, &tb, alpha, &tc);
  check(st == WAVE_SUCCESS, "a launch on the NULL stream runs on the default device");
  if (st != WAVE_SUCCESS)
    printf("  %s: %s\n", wave_status_name(st), wave_last_error());
  check(wave_stream_synchronize(NULL) == WAVE_SUCCESS, "the NULL stream synchronizes");
  wave_memcpy_dtoh(dev, hc, c, count * 4);
  wrong = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float want = ha[i * N + j] * alpha + hb[j];
      wrong += !(fabsf(hc[i * N + j] - want) <= 1e-6f * (1.0f + fabsf(want)));
    }
  check(wrong == 0, "the NULL-stream launch matches the CPU reference");
  wave_free(dev, a);
  wave_free(dev, b);
  wave_free(dev, c);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(ha);
  free(hb);
  free(hc);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "device") == 0)
    return device_mode();
  checks_mode();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
