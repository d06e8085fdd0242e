/* elementwise_main.c — runs the generated elementwise kernel (elementwise.h / elementwise.c from
 * `wavec --header --stub`), c = a * alpha + broadcast(b), through the DLPack-style descriptor
 * entry point, and checks every element against a CPU reference.
 *   usage: elementwise_main [M N]   (default 1001 × 4093: not a multiple of the 4 × 256 tile)
 * The device comes from $WAVE_DEVICE (default "auto"). */
#include "elementwise.h"

#include "../common/sample_util.h"

#include <math.h>

int main(int argc, char **argv) {
  int64_t M = argc > 2 ? atoll(argv[1]) : 1001, N = argc > 2 ? atoll(argv[2]) : 4093;
  size_t count = (size_t)(M * N);
  float *host_a = malloc(count * sizeof(float)), *host_b = malloc((size_t)N * sizeof(float));
  float *host_c = malloc(count * sizeof(float));
  const float alpha = 1.75f;
  uint32_t seed = 2024;
  for (size_t i = 0; i < count; ++i)
    host_a[i] = sample_rand_f32(&seed);
  for (int64_t j = 0; j < N; ++j)
    host_b[j] = sample_rand_f32(&seed);

  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  void *a, *b, *c;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
  SAMPLE_CHECK(wave_malloc(dev, count * sizeof(float), &a));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)N * sizeof(float), &b));
  SAMPLE_CHECK(wave_malloc(dev, count * sizeof(float), &c));
  SAMPLE_CHECK(wave_memcpy_htod(dev, a, host_a, count * sizeof(float)));
  SAMPLE_CHECK(wave_memcpy_htod(dev, b, host_b, (size_t)N * sizeof(float)));
  SAMPLE_CHECK(wave_memset(dev, c, 0xff, count * sizeof(float))); /* poison: NaN everywhere */

  /* Tensors as a DLPack producer would describe them: float32, compact row-major. */
  const int64_t shape_mn[2] = {M, N}, shape_n[1] = {N};
  const wave_dtype_t f32 = {2, 32, 1};
  wave_tensor_t ta = {a, {0, 0}, 2, f32, shape_mn, NULL, 0};
  wave_tensor_t tb = {b, {0, 0}, 1, f32, shape_n, NULL, 0};
  wave_tensor_t tc = {c, {0, 0}, 2, f32, shape_mn, NULL, 0};
  SAMPLE_CHECK(elementwise_launch_tensors(stream, &ta, &tb, alpha, &tc));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, host_c, c, count * sizeof(float)));

  size_t wrong = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float want = host_a[i * N + j] * alpha + host_b[j], got = host_c[i * N + j];
      if (!(fabsf(got - want) <= 1e-6f * (1.0f + fabsf(want))))
        ++wrong;
    }
  /* A descriptor of the wrong rank must be refused with a message, not crash or launch. */
  wave_tensor_t bad_b = {b, {0, 0}, 2, f32, shape_mn, NULL, 0};
  wave_status_t bad = elementwise_launch_tensors(stream, &ta, &bad_b, alpha, &tc);
  printf("elementwise %lld x %lld on %s: %zu of %zu elements wrong; rank-2 b -> %s (%s)\n",
         (long long)M, (long long)N, elementwise_info()->targets, wrong, count,
         wave_status_name(bad), wave_last_error());
  wave_free(dev, a);
  wave_free(dev, b);
  wave_free(dev, c);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(host_a);
  free(host_b);
  free(host_c);
  return wrong == 0 && bad == WAVE_ERROR_INVALID_ARGUMENT ? 0 : 1;
}
