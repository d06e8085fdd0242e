/* Helpers shared by the sample host programs: device selection, random data, f16 conversion,
 * and a uniform "skipped" exit when no device is available. */
#ifndef WAVE_SAMPLE_UTIL_H
#define WAVE_SAMPLE_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wave/runtime.h>

/* Exit code for "no device here": CTest reports it as skipped (SKIP_RETURN_CODE 77). */
#define SAMPLE_SKIPPED 77

/* Opens the device named by $WAVE_DEVICE (default "auto"); on failure prints a visible skip
 * line and exits with SAMPLE_SKIPPED. */
static inline wave_device_t sample_open_device(void) {
  const char *uri = getenv("WAVE_DEVICE");
  if (!uri || !*uri)
    uri = "auto";
  wave_device_t dev = NULL;
  if (wave_device_open(uri, &dev) != WAVE_SUCCESS) {
    printf("SKIPPED: no device '%s': %s\n", uri, wave_last_error());
    exit(SAMPLE_SKIPPED);
  }
  return dev;
}

/* Fails loudly on any runtime error. */
#define SAMPLE_CHECK(call)                                                                        \
  do {                                                                                            \
    wave_status_t st_ = (call);                                                                   \
    if (st_ != WAVE_SUCCESS) {                                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,                    \
              wave_status_name(st_), wave_last_error());                                          \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

static inline uint32_t sample_rand(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

/* A random finite f16 bit pattern in [-2, 2). */
static inline uint16_t sample_rand_f16(uint32_t *state) {
  uint16_t sign = (uint16_t)((sample_rand(state) & 1u) << 15);
  uint16_t exp = (uint16_t)(13u + sample_rand(state) % 3u); /* 2^-2 .. 2^0 */
  uint16_t mant = (uint16_t)(sample_rand(state) & 0x3ffu);
  return (uint16_t)(sign | (exp << 10) | mant);
}

/* The value of an f16 bit pattern (infinities and NaN included: a poisoned 0xffff is NaN). */
static inline double sample_f16_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0    ? ldexp(mant, -24)
             : exp == 31 ? (mant ? NAN : INFINITY)
                         : ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}

static inline float sample_rand_f32(uint32_t *state) {
  return (float)(sample_rand(state) % 2000000u) / 1000000.0f - 1.0f;
}

#endif
