/* attention_main.c — runs the generated attention kernel (attention.h / attention.c from
 * `wavec --header --stub`) on a device and checks it against a double-precision softmax(QKᵀ)V
 * computed here on random data.
 *   usage: attention_main [B M K2]   (default 2 × 100 × 77: no length a multiple of the tiles)
 * D is the head dim the kernel was compiled for (ATTENTION_D, default 64). The output is
 * poisoned (NaN) first, so an unwritten element fails the check. The device comes from
 * $WAVE_DEVICE (default "auto"). With ATTENTION_CAUSAL=1 (attention_causal.wave) query i sees
 * keys 0..i only. */
#include "attention.h"

#include "../common/sample_util.h"

#include <math.h>

#ifndef ATTENTION_D
#define ATTENTION_D 64
#endif
#ifndef ATTENTION_CAUSAL
#define ATTENTION_CAUSAL 0
#endif

static double f16_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0 ? ldexp(mant, -24) : exp == 31 ? NAN : ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}

int main(int argc, char **argv) {
  const int64_t D = ATTENTION_D;
  int64_t B = argc > 3 ? atoll(argv[1]) : 2, M = argc > 3 ? atoll(argv[2]) : 100,
          K2 = argc > 3 ? atoll(argv[3]) : 77;
  size_t nq = (size_t)(B * M * D), nk = (size_t)(B * K2 * D);
  uint16_t *hq = malloc(nq * 2), *hk = malloc(nk * 2), *hv = malloc(nk * 2), *ho = malloc(nq * 2);
  double *dq = malloc(nq * sizeof(double)), *dk = malloc(nk * sizeof(double)),
         *dv = malloc(nk * sizeof(double)), *p = malloc((size_t)K2 * sizeof(double));
  uint32_t seed = 77u + (uint32_t)(B * 131 + M * 7 + K2);
  for (size_t i = 0; i < nq; ++i)
    dq[i] = f16_to_double(hq[i] = sample_rand_f16(&seed));
  for (size_t i = 0; i < nk; ++i) {
    dk[i] = f16_to_double(hk[i] = sample_rand_f16(&seed));
    dv[i] = f16_to_double(hv[i] = sample_rand_f16(&seed));
  }
  const float scale = (float)(1.0 / sqrt((double)D));

  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  void *q, *k, *v, *o;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
  SAMPLE_CHECK(wave_malloc(dev, nq * 2, &q));
  SAMPLE_CHECK(wave_malloc(dev, nk * 2, &k));
  SAMPLE_CHECK(wave_malloc(dev, nk * 2, &v));
  SAMPLE_CHECK(wave_malloc(dev, nq * 2, &o));
  SAMPLE_CHECK(wave_memcpy_htod(dev, q, hq, nq * 2));
  SAMPLE_CHECK(wave_memcpy_htod(dev, k, hk, nk * 2));
  SAMPLE_CHECK(wave_memcpy_htod(dev, v, hv, nk * 2));
  SAMPLE_CHECK(wave_memset(dev, o, 0xff, nq * 2)); /* poison: NaN */
  SAMPLE_CHECK(attention_launch(stream, q, k, v, o, scale, B, M, K2));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, ho, o, nq * 2));

  /* ||out - ref|| / ||ref|| over every element. */
  double err = 0, ref2 = 0;
  size_t nan = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i) {
      const double *qi = dq + (b * M + i) * D;
      const int64_t keys = ATTENTION_CAUSAL && i + 1 < K2 ? i + 1 : K2;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        const double *kj = dk + (b * K2 + j) * D;
        double s = 0;
        for (int64_t d = 0; d < D; ++d)
          s += qi[d] * kj[d];
        p[j] = s * scale;
        mx = p[j] > mx ? p[j] : mx;
      }
      for (int64_t j = 0; j < keys; ++j)
        sum += p[j] = exp(p[j] - mx);
      for (int64_t d = 0; d < D; ++d) {
        double r = 0;
        for (int64_t j = 0; j < keys; ++j)
          r += p[j] * dv[(b * K2 + j) * D + d];
        r /= sum;
        double out = f16_to_double(ho[(b * M + i) * D + d]);
        nan += out != out;
        err += (out - r) * (out - r);
        ref2 += r * r;
      }
    }
  double rel = sqrt(err / (ref2 > 0 ? ref2 : 1));
  int ok = nan == 0 && rel < 5e-3;
  printf("attention%s B=%lld M=%lld K2=%lld D=%lld on %s: rel. error %.2e, %zu NaN: %s\n",
         ATTENTION_CAUSAL ? " (causal)" : "", (long long)B, (long long)M, (long long)K2,
         (long long)D, attention_info()->targets, rel,
         nan, ok ? "PASS" : "FAIL");
  wave_free(dev, q);
  wave_free(dev, k);
  wave_free(dev, v);
  wave_free(dev, o);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(hq), free(hk), free(hv), free(ho), free(dq), free(dk), free(dv), free(p);
  return ok ? 0 : 1;
}
