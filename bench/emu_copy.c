/* Emulator speed: launches the copy kernel (an emulator image from
 *   wavec samples/copy/copy.wave --target=T --emit=emu -o copy_T.wemu)
 * on emu:T, once to warm up and then RUNS times, and prints the median wall time of one launch.
 *   usage: emu_copy IMAGE TARGET M N [RUNS]      (built as build/tests/emu_copy_bench) */
#include <wave/runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define CHECK(call)                                                                               \
  do {                                                                                            \
    wave_status_t s_ = (call);                                                                    \
    if (s_ != WAVE_SUCCESS) {                                                                     \
      fprintf(stderr, "%s: %s: %s\n", #call, wave_status_name(s_), wave_last_error());            \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s IMAGE TARGET M N [RUNS]\n", argv[0]);
    return 2;
  }
  char uri[64];
  snprintf(uri, sizeof uri, "emu:%s", argv[2]);
  int64_t M = atoll(argv[3]), N = atoll(argv[4]);
  int runs = argc > 5 ? atoi(argv[5]) : 5;
  if (M <= 0 || N <= 0 || runs < 1 || runs > 100) {
    fprintf(stderr, "bad shape or run count\n");
    return 2;
  }
  size_t bytes = (size_t)(M * N) * 2;
  wave_device_t dev;
  wave_module_t mod;
  wave_kernel_t k;
  void *a, *b;
  CHECK(wave_device_open(uri, &dev));
  CHECK(wave_module_load_file(dev, argv[1], &mod));
  CHECK(wave_module_get_kernel(mod, "copy", &k));
  CHECK(wave_malloc(dev, bytes, &a));
  CHECK(wave_malloc(dev, bytes, &b));
  CHECK(wave_memset(dev, a, 0x3c, bytes));
  uint32_t block = strncmp(argv[2], "gfx9", 4) == 0 ? 64 : 32; /* copy: one wave per block */
  uint32_t grid[3] = {(uint32_t)((N + 255) / 256), (uint32_t)((M + 15) / 16), 1};
  uint32_t blk[3] = {block, 1, 1};
  unsigned char args[32];
  memcpy(args, &a, 8);
  memcpy(args + 8, &b, 8);
  memcpy(args + 16, &M, 8);
  memcpy(args + 24, &N, 8);
  CHECK(wave_launch(dev, NULL, k, grid, blk, 0, args, sizeof args));
  double times[100];
  for (int i = 0; i < runs; ++i) {
    double t = now();
    CHECK(wave_launch(dev, NULL, k, grid, blk, 0, args, sizeof args));
    times[i] = now() - t;
  }
  qsort(times, (size_t)runs, sizeof times[0], cmp);
  printf("emu copy %lld x %lld f16 on %s: median %.3f s (min %.3f, max %.3f) over %d runs\n",
         (long long)M, (long long)N, uri, times[runs / 2], times[0], times[runs - 1], runs);
  wave_free(dev, a);
  wave_free(dev, b);
  wave_module_unload(mod);
  wave_device_close(dev);
  return 0;
}
