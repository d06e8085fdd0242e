/* layernorm_main.c — runs the generated layer norm (layernorm.h / layernorm.c from
 * `wavec --header --stub`) on a device, y = (x - mean) / sqrt(var + eps) * gamma + beta over each
 * row of x, and checks it against a double-precision reference computed here on random data.
 *   usage: layernorm_main [M]   (default 1000 rows of LN_N, the row length compiled in)
 * The output is poisoned (NaN) before the launch, so an unwritten element fails the check.
 * The device comes from $WAVE_DEVICE (default "auto"). */
#include "layernorm.h"

#include "../common/sample_util.h"

#ifndef LN_N
#define LN_N 1024
#endif

int main(int argc, char **argv) {
  const int64_t M = argc > 1 ? atoll(argv[1]) : 1000, N = LN_N;
  const float eps = 1e-5f;
  size_t n = (size_t)(M * N);
  float *hx = malloc(n * 4), *hy = malloc(n * 4), *hg = malloc((size_t)N * 4),
        *hb = malloc((size_t)N * 4);
  uint32_t seed = 99u + (uint32_t)M;
  for (size_t i = 0; i < n; ++i) /* rows with an offset, so that the mean matters */
    hx[i] = 3.0f * sample_rand_f32(&seed) + (float)(i / (size_t)N % 7);
  for (int64_t j = 0; j < N; ++j) {
    hg[j] = 1.0f + 0.5f * sample_rand_f32(&seed);
    hb[j] = sample_rand_f32(&seed);
  }

  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  void *x, *g, *b, *y;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
  SAMPLE_CHECK(wave_malloc(dev, n * 4, &x));
  SAMPLE_CHECK(wave_malloc(dev, n * 4, &y));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)N * 4, &g));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)N * 4, &b));
  SAMPLE_CHECK(wave_memcpy_htod(dev, x, hx, n * 4));
  SAMPLE_CHECK(wave_memcpy_htod(dev, g, hg, (size_t)N * 4));
  SAMPLE_CHECK(wave_memcpy_htod(dev, b, hb, (size_t)N * 4));
  SAMPLE_CHECK(wave_memset(dev, y, 0xff, n * 4)); /* poison: NaN everywhere */
  SAMPLE_CHECK(layernorm_launch(stream, x, g, b, eps, y, M));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, hy, y, n * 4));

  size_t wrong = 0;
  for (int64_t i = 0; i < M; ++i) {
    const float *r = hx + i * N;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < N; ++j)
      mean += r[j];
    mean /= (double)N;
    for (int64_t j = 0; j < N; ++j)
      var += (r[j] - mean) * (r[j] - mean);
    double rstd = 1.0 / sqrt(var / (double)N + eps);
    for (int64_t j = 0; j < N; ++j) {
      double want = (r[j] - mean) * rstd * hg[j] + hb[j], got = hy[i * N + j];
      wrong += !(fabs(got - want) <= 1e-4 * (1.0 + fabs(want)));
    }
  }
  printf("layernorm %lld x %lld on %s: %zu of %zu elements wrong\n", (long long)M, (long long)N,
         layernorm_info()->targets, wrong, n);
  wave_free(dev, x);
  wave_free(dev, y);
  wave_free(dev, g);
  wave_free(dev, b);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(hx), free(hy), free(hg), free(hb);
  return wrong == 0 ? 0 : 1;
}
