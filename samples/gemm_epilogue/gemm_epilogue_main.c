/* gemm_epilogue_main.c — runs the generated fused GEMMs (gemm_epilogue.h / gemm_epilogue.c from
 * `wavec --header --stub`): C = act(A·Bᵀ + bias) in f16 with act = ReLU and act = GELU (tanh
 * form), and checks every element against a double-precision reference computed here on random
 * data.
 *   usage: gemm_epilogue_main [M N K]   (default 250 × 130 × 190: no dim a multiple of the tiles)
 * The output is poisoned (f16 NaN) before each launch, so an unwritten element fails the check.
 * An element passes when |out - ref| <= 2^-9·|ref| + 1e-3 + 2^-20·Σ|a·b| (the f16 rounding of the
 * result, and the f32 accumulation of K products). The device comes from $WAVE_DEVICE. */
#include "gemm_epilogue.h"

#include "../common/sample_util.h"

#include <math.h>


typedef wave_status_t (*launch_fn)(wave_stream_t, const void *, const void *, const void *,
                                   void *, int64_t, int64_t, int64_t);

static double act(int gelu, double z) {
  if (!gelu)
    return z > 0 ? z : 0;
  return 0.5 * z * (1.0 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
}

/* Runs one kernel and checks it; returns the number of bad elements. */
static size_t run_one(const char *name, launch_fn launch, int gelu, wave_device_t dev,
                      wave_stream_t stream, const void *a, const void *b, const void *bias, void *c,
                      uint16_t *hc, const double *da, const double *db, const double *dbias,
                      int64_t M, int64_t N, int64_t K) {
  size_t nc = (size_t)(M * N);
  SAMPLE_CHECK(wave_memset(dev, c, 0xff, nc * 2)); /* poison: f16 NaN */
  SAMPLE_CHECK(launch(stream, a, b, bias, c, M, N, K));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, hc, c, nc * 2));
  size_t bad = 0, nan = 0;
  double worst = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double r = dbias[j], mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        double p = da[i * K + k] * db[j * K + k];
        r += p;
        mag += fabs(p);
      }
      double want = act(gelu, r);
      double o = sample_f16_to_double(hc[i * N + j]);
      double tol = ldexp(fabs(want), -9) + 1e-3 + ldexp(mag, -20);
      if (o != o) {
        ++nan;
        ++bad;
        continue;
      }
      double err = fabs(o - want);
      if (err > tol) {
        if (bad < 5)
          printf("  %s: C[%lld, %lld] = %.6g, want %.6g (tolerance %.3g)\n", name, (long long)i,
                 (long long)j, o, want, tol);
        ++bad;
      }
      if (err / tol > worst)
        worst = err / tol;
    }
  printf("%s %lld x %lld x %lld on %s: %zu of %zu elements outside tolerance (%zu unwritten/NaN), "
         "worst error %.2f of its tolerance -> %s\n",
         name, (long long)M, (long long)N, (long long)K, gemm_bias_relu_info()->targets, bad, nc,
         nan, worst, bad ? "FAIL" : "PASS");
  return bad;
}

int main(int argc, char **argv) {
  int64_t M = argc > 3 ? atoll(argv[1]) : 250, N = argc > 3 ? atoll(argv[2]) : 130,
          K = argc > 3 ? atoll(argv[3]) : 190;
  size_t na = (size_t)(M * K), nb = (size_t)(N * K), nc = (size_t)(M * N);
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hc = malloc(nc * 2);
  float *hbias = malloc((size_t)N * 4);
  double *da = malloc(na * sizeof(double)), *db = malloc(nb * sizeof(double));
  double *dbias = malloc((size_t)N * sizeof(double));
  uint32_t seed = 2026u + (uint32_t)(M * 31 + N * 7 + K);
  for (size_t i = 0; i < na; ++i)
    da[i] = sample_f16_to_double(ha[i] = sample_rand_f16(&seed));
  for (size_t i = 0; i < nb; ++i)
    db[i] = sample_f16_to_double(hb[i] = sample_rand_f16(&seed));
  for (int64_t j = 0; j < N; ++j) /* biases around the products' spread: both signs matter */
    dbias[j] = hbias[j] = 4.0f * sample_rand_f32(&seed);

  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  void *a, *b, *bias, *c;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
  SAMPLE_CHECK(wave_malloc(dev, na * 2, &a));
  SAMPLE_CHECK(wave_malloc(dev, nb * 2, &b));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)N * 4, &bias));
  SAMPLE_CHECK(wave_malloc(dev, nc * 2, &c));
  SAMPLE_CHECK(wave_memcpy_htod(dev, a, ha, na * 2));
  SAMPLE_CHECK(wave_memcpy_htod(dev, b, hb, nb * 2));
  SAMPLE_CHECK(wave_memcpy_htod(dev, bias, hbias, (size_t)N * 4));
  size_t bad = run_one("gemm_bias_relu", gemm_bias_relu_launch, 0, dev, stream, a, b, bias, c, hc,
                       da, db, dbias, M, N, K);
  bad += run_one("gemm_bias_gelu", gemm_bias_gelu_launch, 1, dev, stream, a, b, bias, c, hc, da,
                 db, dbias, M, N, K);
  wave_free(dev, a);
  wave_free(dev, b);
  wave_free(dev, bias);
  wave_free(dev, c);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(ha);
  free(hb);
  free(hc);
  free(hbias);
  free(da);
  free(db);
  free(dbias);
  return bad ? 1 : 0;
}
