/* main.c — runs the saxpy kernel that wavec_add_kernel compiled (saxpy.h / saxpy.c) and checks
 * it against the CPU. Exit 0: checked on a device; 77: no device here (skipped, reason printed);
 * 1: a wrong result or error. The device comes from $WAVE_DEVICE (default "auto"). */
#include "saxpy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                              \
  do {                                                                                           \
    wave_status_t st_ = (call);                                                                  \
    if (st_ != WAVE_SUCCESS) {                                                                   \
      fprintf(stderr, "%s failed: %s: %s\n", #call, wave_status_name(st_), wave_last_error());   \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

int main(void) {
  const char *uri = getenv("WAVE_DEVICE");
  if (!uri || !*uri)
    uri = "auto";
  wave_device_t dev = NULL;
  wave_status_t st = wave_device_open(uri, &dev);
  if (st != WAVE_SUCCESS) {
    printf("SKIPPED: cannot open device '%s': %s: %s\n", uri, wave_status_name(st),
           wave_last_error());
    return st == WAVE_ERROR_DRIVER_NOT_FOUND || st == WAVE_ERROR_NO_DEVICE ||
                   st == WAVE_ERROR_UNSUPPORTED || st == WAVE_ERROR_NOT_FOUND
               ? 77
               : 1;
  }
  const int64_t n = 100003; /* not a multiple of the 256-element block */
  const float alpha = 3.0f;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *z = malloc(n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    x[i] = (float)(i % 1000) / 500.0f - 1.0f;
    y[i] = (float)((i * 7) % 1000) / 250.0f - 2.0f;
  }
  wave_stream_t stream;
  void *dx, *dy, *dz;
  CHECK(wave_stream_create(dev, &stream));
  CHECK(wave_malloc(dev, n * sizeof(float), &dx));
  CHECK(wave_malloc(dev, n * sizeof(float), &dy));
  CHECK(wave_malloc(dev, n * sizeof(float), &dz));
  CHECK(wave_memcpy_htod(dev, dx, x, n * sizeof(float)));
  CHECK(wave_memcpy_htod(dev, dy, y, n * sizeof(float)));
  CHECK(wave_memset(dev, dz, 0xff, n * sizeof(float)));
  CHECK(saxpy_launch(stream, dx, dy, alpha, dz, n));
  CHECK(wave_stream_synchronize(stream));
  CHECK(wave_memcpy_dtoh(dev, z, dz, n * sizeof(float)));
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    wrong += !(fabsf(z[i] - (alpha * x[i] + y[i])) <= 1e-5f);
  printf("saxpy of %lld elements on %s (%s): %lld wrong\n", (long long)n, uri,
         saxpy_info()->targets, (long long)wrong);
  wave_free(dev, dx);
  wave_free(dev, dy);
  wave_free(dev, dz);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  free(x);
  free(y);
  free(z);
  return wrong == 0 ? 0 : 1;
}
