/* histogram_main.c — runs the generated histogram kernel (histogram.h / histogram.c from
 * `wavec --header --stub`) on a device: R rows of N random samples, weights of 1, so hist[r, b]
 * counts the samples of row r with x % 16 == b. The histogram starts at zero, is launched twice
 * (the kernel adds into it: every count doubles) and is checked against counts on the host.
 *   usage: histogram_main [R N]     (default 7 × 100003: N not a multiple of the 64-wide tile)
 * The device comes from $WAVE_DEVICE (default "auto"). */
#include "histogram.h"

#include "../common/sample_util.h"

enum { BINS = 16 };

int main(int argc, char **argv) {
  int64_t R = argc > 2 ? atoll(argv[1]) : 7, N = argc > 2 ? atoll(argv[2]) : 100003;
  size_t count = (size_t)(R * N), hbins = (size_t)R * BINS;
  /* + 4: a row of 0 samples still gets buffers */
  int32_t *host_x = malloc(count * sizeof(int32_t) + 4), *host_w = malloc(count * sizeof(int32_t) + 4);
  int32_t *host_h = malloc(hbins * sizeof(int32_t)), *want = calloc(hbins, sizeof(int32_t));
  uint32_t seed = 2024;
  for (size_t i = 0; i < count; ++i) {
    /* negative too: % 16 takes the divisor's sign (docs/language.md section 11) */
    host_x[i] = (int32_t)sample_rand(&seed) - (1 << 23);
    host_w[i] = 1;
    int32_t bin = ((host_x[i] % BINS) + BINS) % BINS;
    want[(i / (size_t)(N > 0 ? N : 1)) * BINS + (size_t)bin] += 2; /* two launches */
  }

  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  void *x, *w, *hist;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
  SAMPLE_CHECK(wave_malloc(dev, count * sizeof(int32_t) + 4, &x));
  SAMPLE_CHECK(wave_malloc(dev, count * sizeof(int32_t) + 4, &w));
  SAMPLE_CHECK(wave_malloc(dev, hbins * sizeof(int32_t) + 4, &hist));
  SAMPLE_CHECK(wave_memcpy_htod(dev, x, host_x, count * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memcpy_htod(dev, w, host_w, count * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memset(dev, hist, 0, hbins * sizeof(int32_t)));
  SAMPLE_CHECK(histogram_launch(stream, x, w, hist, R, N));
  SAMPLE_CHECK(histogram_launch(stream, x, w, hist, R, N));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, host_h, hist, hbins * sizeof(int32_t)));

  size_t wrong = 0;
  int64_t total = 0;
  for (size_t i = 0; i < hbins; ++i) {
    wrong += host_h[i] != want[i];
    total += host_h[i];
  }
  printf("histogram %lld x %lld into %d bins on %s, launched twice: %zu of %zu bins wrong "
         "(%lld samples counted, %lld expected)\n",
         (long long)R, (long long)N, BINS, histogram_info()->targets, wrong, hbins,
         (long long)total, (long long)(2 * R * N));
  wave_free(dev, x);
  wave_free(dev, w);
  wave_free(dev, hist);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(host_x);
  free(host_w);
  free(host_h);
  free(want);
  return wrong == 0 ? 0 : 1;
}
