/* gemm_main.c — runs the generated GEMM (gemm.h / gemm.c from `wavec --header --stub`) on a
 * device, C[M, N] = A[M, K] · B[N, K]ᵀ with f16 inputs and f32 results, and checks it against a
 * double-precision reference computed here on random data.
 *   usage: gemm_main [M N K]     (default 250 × 130 × 190: no dim a multiple of the tiles)
 * The output is poisoned (NaN) before the launch, so an unwritten element fails the check.
 * The device comes from $WAVE_DEVICE (default "auto"). */
#include "gemm.h"

#include "../common/sample_util.h"

#include <math.h>

static double f16_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0 ? ldexp(mant, -24) : ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}

int main(int argc, char **argv) {
  int64_t M = argc > 3 ? atoll(argv[1]) : 250, N = argc > 3 ? atoll(argv[2]) : 130,
          K = argc > 3 ? atoll(argv[3]) : 190;
  size_t na = (size_t)(M * K), nb = (size_t)(N * K), nc = (size_t)(M * N);
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2);
  float *hc = malloc(nc * 4);
  double *da = malloc(na * sizeof(double)), *db = malloc(nb * sizeof(double));
  uint32_t seed = 2024u + (uint32_t)(M * 31 + N * 7 + K);
  for (size_t i = 0; i < na; ++i)
    da[i] = f16_to_double(ha[i] = sample_rand_f16(&seed));
  for (size_t i = 0; i < nb; ++i)
    db[i] = f16_to_double(hb[i] = sample_rand_f16(&seed));

  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  void *a, *b, *c;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
  SAMPLE_CHECK(wave_malloc(dev, na * 2, &a));
  SAMPLE_CHECK(wave_malloc(dev, nb * 2, &b));
  SAMPLE_CHECK(wave_malloc(dev, nc * 4, &c));
  SAMPLE_CHECK(wave_memcpy_htod(dev, a, ha, na * 2));
  SAMPLE_CHECK(wave_memcpy_htod(dev, b, hb, nb * 2));
  SAMPLE_CHECK(wave_memset(dev, c, 0xff, nc * 4)); /* poison: NaN */
  SAMPLE_CHECK(gemm_launch(stream, a, b, c, M, N, K));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, hc, c, nc * 4));

  /* ||out - ref|| / ||ref|| over every element (f32 accumulation of f16 products). */
  double err = 0, ref2 = 0;
  size_t nan = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double r = 0;
      for (int64_t k = 0; k < K; ++k)
        r += da[i * K + k] * db[j * K + k];
      double o = hc[i * N + j];
      nan += o != o;
      err += (o - r) * (o - r);
      ref2 += r * r;
    }
  double rel = sqrt(err / (ref2 > 0 ? ref2 : 1));
  int ok = nan == 0 && rel < 1e-3;
  printf("gemm %lld x %lld x %lld on %s: relative error %.3g, %zu unwritten/NaN -> %s\n",
         (long long)M, (long long)N, (long long)K, gemm_info()->targets, rel, nan,
         ok ? "PASS" : "FAIL");
  wave_free(dev, a);
  wave_free(dev, b);
  wave_free(dev, c);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(ha);
  free(hb);
  free(hc);
  free(da);
  free(db);
  return ok ? 0 : 1;
}
