/* softmax_main.c — runs the generated softmax kernels on a device and checks each against a
 * double-precision reference computed here on random data:
 *   softmax, softmax_f16   (softmax.wave: any row length, one wave per row)
 *   online_softmax         (online_softmax.wave: two passes over tiles, also the log-sum-exp)
 *   softmax_rows, _f16     (softmax_rows.wave: the row length bound at compile time, ROWS_N)
 *   usage: softmax_main [M N]   (default 300 × 3001; the _rows kernels use M × ROWS_N)
 * Outputs are poisoned (NaN) before each launch, so an unwritten element fails the check.
 * The device comes from $WAVE_DEVICE (default "auto"). */
#include "online_softmax.h"
#include "softmax.h"
#include "softmax_rows.h"

#include "../common/sample_util.h"

#ifndef ROWS_N
#define ROWS_N 8192
#endif

/* y = softmax of each row of x (M x N), lse = log-sum-exp of each row. */
static void reference(const double *x, int64_t M, int64_t N, double *y, double *lse) {
  for (int64_t i = 0; i < M; ++i) {
    const double *r = x + i * N;
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < N; ++j)
      m = r[j] > m ? r[j] : m;
    for (int64_t j = 0; j < N; ++j)
      s += exp(r[j] - m);
    for (int64_t j = 0; j < N; ++j)
      y[i * N + j] = exp(r[j] - m) / s;
    if (lse)
      lse[i] = m + log(s);
  }
}

/* Elements with |got - want| > rtol * |want| + atol (NaN counts as wrong). */
static size_t wrong(const double *got, const double *want, size_t n, double rtol, double atol) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    bad += !(fabs(got[i] - want[i]) <= rtol * fabs(want[i]) + atol);
  return bad;
}

typedef struct {
  wave_device_t dev;
  wave_stream_t stream;
  int failures;
} ctx_t;

static void report(ctx_t *c, const char *what, int64_t M, int64_t N, size_t bad, size_t n) {
  printf("%-16s %5lld x %-5lld: %zu of %zu elements wrong\n", what, (long long)M, (long long)N,
         bad, n);
  c->failures += bad != 0;
}

/* One f32 kernel: x, y (and lse) on the device, launched by `launch`. */
typedef wave_status_t (*launch_f32)(wave_stream_t, void *x, void *y, void *lse, int64_t M,
                                    int64_t N);

static wave_status_t run_softmax(wave_stream_t s, void *x, void *y, void *lse, int64_t M,
                                 int64_t N) {
  (void)lse;
  return softmax_launch(s, x, y, M, N);
}
static wave_status_t run_online(wave_stream_t s, void *x, void *y, void *lse, int64_t M,
                                int64_t N) {
  return online_softmax_launch(s, x, y, lse, M, N);
}
static wave_status_t run_rows(wave_stream_t s, void *x, void *y, void *lse, int64_t M,
                              int64_t N) {
  (void)lse;
  (void)N;
  return softmax_rows_launch(s, x, y, M);
}

static void check_f32(ctx_t *c, const char *what, launch_f32 launch, int64_t M, int64_t N,
                      uint32_t seed) {
  size_t n = (size_t)(M * N);
  float *hx = malloc(n * 4), *hy = malloc(n * 4), *hl = malloc((size_t)M * 4);
  double *dx = malloc(n * 8), *want = malloc(n * 8), *got = malloc(n * 8);
  double *wl = malloc((size_t)M * 8), *gl = malloc((size_t)M * 8);
  for (size_t i = 0; i < n; ++i)
    dx[i] = hx[i] = 4.0f * sample_rand_f32(&seed);
  void *x, *y, *l;
  SAMPLE_CHECK(wave_malloc(c->dev, n * 4, &x));
  SAMPLE_CHECK(wave_malloc(c->dev, n * 4, &y));
  SAMPLE_CHECK(wave_malloc(c->dev, (size_t)M * 4, &l));
  SAMPLE_CHECK(wave_memcpy_htod(c->dev, x, hx, n * 4));
  SAMPLE_CHECK(wave_memset(c->dev, y, 0xff, n * 4));
  SAMPLE_CHECK(wave_memset(c->dev, l, 0xff, (size_t)M * 4));
  SAMPLE_CHECK(launch(c->stream, x, y, l, M, N));
  SAMPLE_CHECK(wave_stream_synchronize(c->stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(c->dev, hy, y, n * 4));
  SAMPLE_CHECK(wave_memcpy_dtoh(c->dev, hl, l, (size_t)M * 4));
  reference(dx, M, N, want, wl);
  for (size_t i = 0; i < n; ++i)
    got[i] = hy[i];
  report(c, what, M, N, wrong(got, want, n, 1e-4, 1e-7), n);
  if (launch == run_online) {
    for (int64_t i = 0; i < M; ++i)
      gl[i] = hl[i];
    report(c, "  log-sum-exp", M, 1, wrong(gl, wl, (size_t)M, 1e-5, 1e-5), (size_t)M);
  }
  wave_free(c->dev, x);
  wave_free(c->dev, y);
  wave_free(c->dev, l);
  free(hx), free(hy), free(hl), free(dx), free(want), free(got), free(wl), free(gl);
}

typedef wave_status_t (*launch_f16)(wave_stream_t, void *x, void *y, int64_t M, int64_t N);

static wave_status_t run_softmax_f16(wave_stream_t s, void *x, void *y, int64_t M, int64_t N) {
  return softmax_f16_launch(s, x, y, M, N);
}
static wave_status_t run_rows_f16(wave_stream_t s, void *x, void *y, int64_t M, int64_t N) {
  (void)N;
  return softmax_rows_f16_launch(s, x, y, M);
}

static void check_f16(ctx_t *c, const char *what, launch_f16 launch, int64_t M, int64_t N,
                      uint32_t seed) {
  size_t n = (size_t)(M * N);
  uint16_t *hx = malloc(n * 2), *hy = malloc(n * 2);
  double *dx = malloc(n * 8), *want = malloc(n * 8), *got = malloc(n * 8);
  for (size_t i = 0; i < n; ++i)
    dx[i] = sample_f16_to_double(hx[i] = sample_rand_f16(&seed));
  void *x, *y;
  SAMPLE_CHECK(wave_malloc(c->dev, n * 2, &x));
  SAMPLE_CHECK(wave_malloc(c->dev, n * 2, &y));
  SAMPLE_CHECK(wave_memcpy_htod(c->dev, x, hx, n * 2));
  SAMPLE_CHECK(wave_memset(c->dev, y, 0xff, n * 2));
  SAMPLE_CHECK(launch(c->stream, x, y, M, N));
  SAMPLE_CHECK(wave_stream_synchronize(c->stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(c->dev, hy, y, n * 2));
  reference(dx, M, N, want, NULL);
  for (size_t i = 0; i < n; ++i)
    got[i] = sample_f16_to_double(hy[i]);
  /* f16 results: one rounding (2^-11 relative), plus subnormal spacing near 0. */
  report(c, what, M, N, wrong(got, want, n, 2e-3, 1e-6), n);
  wave_free(c->dev, x);
  wave_free(c->dev, y);
  free(hx), free(hy), free(dx), free(want), free(got);
}

int main(int argc, char **argv) {
  int64_t M = argc > 2 ? atoll(argv[1]) : 300, N = argc > 2 ? atoll(argv[2]) : 3001;
  ctx_t c = {sample_open_device(), NULL, 0};
  SAMPLE_CHECK(wave_stream_create(c.dev, &c.stream));
  uint32_t seed = 7u + (uint32_t)(M * 131 + N);
  check_f32(&c, "softmax", run_softmax, M, N, seed);
  check_f16(&c, "softmax_f16", run_softmax_f16, M, N, seed + 1);
  check_f32(&c, "online_softmax", run_online, M, N, seed + 2);
  check_f32(&c, "softmax_rows", run_rows, M, ROWS_N, seed + 3);
  check_f16(&c, "softmax_rows_f16", run_rows_f16, M, ROWS_N, seed + 4);
  printf("softmax kernels on %s: %s\n", softmax_info()->targets,
         c.failures ? "FAILED" : "all correct");
  wave_stream_destroy(c.stream);
  wave_device_close(c.dev);
  return c.failures ? 1 : 0;
}
