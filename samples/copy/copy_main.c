/* copy_main.c — runs the generated copy kernel (copy.h / copy.c from `wavec --header --stub`) on
 * a device and checks every element against the input.
 *   usage: copy_main [M N]     (default 1000 × 4093: not a multiple of the 16 × 256 tile)
 * The device comes from $WAVE_DEVICE (default "auto"). */
#include "copy.h"

#include "../common/sample_util.h"

int main(int argc, char **argv) {
  int64_t M = argc > 2 ? atoll(argv[1]) : 1000, N = argc > 2 ? atoll(argv[2]) : 4093;
  size_t count = (size_t)(M * N), bytes = count * sizeof(uint16_t);
  uint16_t *host_a = malloc(bytes), *host_b = malloc(bytes);
  uint32_t seed = 12345;
  for (size_t i = 0; i < count; ++i)
    host_a[i] = sample_rand_f16(&seed);

  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  void *a, *b;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
  SAMPLE_CHECK(wave_malloc(dev, bytes, &a));
  SAMPLE_CHECK(wave_malloc(dev, bytes, &b));
  SAMPLE_CHECK(wave_memcpy_htod(dev, a, host_a, bytes));
  SAMPLE_CHECK(wave_memset(dev, b, 0xff, bytes)); /* poison: unwritten elements show */
  SAMPLE_CHECK(copy_launch(stream, a, b, M, N));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, host_b, b, bytes));

  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i)
    wrong += host_a[i] != host_b[i];
  /* A launch with a NULL tensor must fail with a message, not crash. */
  wave_status_t bad = copy_launch(stream, NULL, b, M, N);
  printf("copy %lld x %lld on %s: %zu of %zu elements wrong; NULL tensor -> %s (%s)\n",
         (long long)M, (long long)N, copy_info()->targets, wrong, count, wave_status_name(bad),
         wave_last_error());
  wave_free(dev, a);
  wave_free(dev, b);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(host_a);
  free(host_b);
  return wrong == 0 && bad == WAVE_ERROR_INVALID_ARGUMENT ? 0 : 1;
}
