/* gemm_launch_bench.c — the C side of the launch-overhead comparison (tests/python/
 * torch_gpu_check.py; docs/performance.md, "Python launch overhead"): times the generated stubs
 * of gemm_portable.wave and copy.wave called from C on cuda://0, with the runtime's events:
 *   - the GEMM at M = N = K = 4096, `iters` launches back to back, per launch (3 rounds);
 *   - a tiny copy (1 x 256 f16), `tiny` launches, host time per launch call.
 * Built on the GPU machine against the stubs wavec made elsewhere:
 *   cc -O2 -std=c99 -I runtime/include -I DIR gemm_launch_bench.c DIR/gemm.c DIR/copy.c
 *      -L DIR -l:libwave_runtime.so.0 -Wl,-rpath,DIR -lm */
#define _POSIX_C_SOURCE 199309L
#include "copy.h"
#include "gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                              \
  do {                                                                                           \
    wave_status_t st_ = (call);                                                                  \
    if (st_ != WAVE_SUCCESS) {                                                                   \
      fprintf(stderr, "%s: %s: %s\n", #call, wave_status_name(st_), wave_last_error());         \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* A random f16 in about [-1, 1): sign, exponent 2^-3..2^-1, random mantissa. */
static uint16_t rand_f16(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  uint32_t r = *s >> 8;
  return (uint16_t)(((r & 1u) << 15) | ((12u + (r >> 1) % 3u) << 10) | ((r >> 3) & 0x3ffu));
}

int main(int argc, char **argv) {
  const int64_t M = 4096, N = 4096, K = 4096;
  int iters = argc > 1 ? atoi(argv[1]) : 50, tiny = argc > 2 ? atoi(argv[2]) : 20000;
  wave_device_t dev;
  CHECK(wave_device_open("cuda://0", &dev));
  wave_stream_t s;
  CHECK(wave_stream_create(dev, &s));
  void *a, *b, *c, *x, *y;
  size_t na = (size_t)(M * K), nb = (size_t)(N * K);
  uint16_t *h = malloc((na > nb ? na : nb) * 2);
  uint32_t seed = 12345;
  CHECK(wave_malloc(dev, na * 2, &a));
  CHECK(wave_malloc(dev, nb * 2, &b));
  CHECK(wave_malloc(dev, (size_t)(M * N) * 4, &c));
  for (size_t i = 0; i < na; ++i)
    h[i] = rand_f16(&seed);
  CHECK(wave_memcpy_htod(dev, a, h, na * 2));
  for (size_t i = 0; i < nb; ++i)
    h[i] = rand_f16(&seed);
  CHECK(wave_memcpy_htod(dev, b, h, nb * 2));
  CHECK(wave_malloc(dev, 512, &x));
  CHECK(wave_malloc(dev, 512, &y));
  CHECK(wave_memset(dev, x, 0, 512));

  wave_event_t start, end;
  CHECK(wave_event_create(dev, &start));
  CHECK(wave_event_create(dev, &end));
  for (int i = 0; i < 5; ++i)
    CHECK(gemm_launch(s, a, b, c, M, N, K));
  CHECK(wave_stream_synchronize(s));
  for (int round = 0; round < 3; ++round) {
    CHECK(wave_event_record(start, s));
    for (int i = 0; i < iters; ++i)
      CHECK(gemm_launch(s, a, b, c, M, N, K));
    CHECK(wave_event_record(end, s));
    CHECK(wave_event_synchronize(end));
    float ms = 0;
    CHECK(wave_event_elapsed_ms(start, end, &ms));
    double per = ms / iters;
    printf("C gemm 4096^3 round %d: %.4f ms per launch, %.1f TFLOP/s\n", round, per,
           2.0 * M * N * K / (per * 1e-3) / 1e12);
  }
  for (int i = 0; i < 100; ++i)
    CHECK(copy_launch(s, x, y, 1, 256));
  CHECK(wave_stream_synchronize(s));
  for (int round = 0; round < 3; ++round) {
    double t0 = now_ms();
    for (int i = 0; i < tiny; ++i)
      CHECK(copy_launch(s, x, y, 1, 256));
    double t1 = now_ms();
    CHECK(wave_stream_synchronize(s));
    double t2 = now_ms();
    printf("C tiny copy round %d: %.2f us host time per launch call, %.2f us per launch until "
           "done\n", round, (t1 - t0) * 1e3 / tiny, (t2 - t0) * 1e3 / tiny);
  }
  free(h);
  return 0;
}
