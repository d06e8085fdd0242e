/* moe_routing_main.c — runs the three generated MoE routing kernels (moe_routing.h /
 * moe_routing.c from `wavec --header --stub`) on a device and checks them on the host:
 *   moe_route: softmax over E experts and the top 2 per token (weights within 1e-5, expert ids
 *              exactly), per-expert counts (exactly);
 *   moe_align: counts padded to multiples of 16 and their exclusive prefix sums (exactly);
 *   moe_sort:  each expert's segment of the sorted list holds exactly the flat ids t * K + k
 *              of its pairs, in any order (the atomics' order is not defined), followed by the
 *              fill value up to its padded length; every cursor ends at its count.
 *   usage: moe_routing_main [T E]     (default 1000 tokens over 60 experts; E <= 64)
 * The device comes from $WAVE_DEVICE (default "auto"). */
#include "moe_routing.h"

#include "../common/sample_util.h"

#include <math.h>

enum { K = 2, BLOCK = 16 };

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int64_t T = argc > 2 ? atoll(argv[1]) : 1000, E = argc > 2 ? atoll(argv[2]) : 60;
  if (T < 1 || E < K || E > 64) {
    fprintf(stderr, "usage: moe_routing_main [T E] with T >= 1 and %d <= E <= 64\n", K);
    return 2;
  }
  size_t nl = (size_t)(T * E), np = (size_t)(T * K);
  float *logits = malloc(nl * sizeof(float)), *w = malloc(np * sizeof(float));
  int32_t *ids = malloc(np * sizeof(int32_t)), *counts = malloc((size_t)E * sizeof(int32_t));
  int32_t *padded = malloc((size_t)E * sizeof(int32_t)), *offsets = malloc((size_t)E * sizeof(int32_t));
  int32_t *cursor = malloc((size_t)E * sizeof(int32_t));
  uint32_t seed = 2025;
  for (size_t i = 0; i < nl; ++i)
    logits[i] = 4.0f * sample_rand_f32(&seed);

  /* The host's routing: softmax in double, the two largest (lower index first on ties). */
  double *want_w = malloc(np * sizeof(double));
  int32_t *want_ids = malloc(np * sizeof(int32_t));
  int32_t *want_counts = calloc((size_t)E, sizeof(int32_t)), *want_pad = malloc((size_t)E * sizeof(int32_t));
  int32_t *want_off = malloc((size_t)E * sizeof(int32_t));
  for (int64_t t = 0; t < T; ++t) {
    const float *row = logits + t * E;
    double mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < E; ++e)
      mx = fmax(mx, row[e]);
    for (int64_t e = 0; e < E; ++e)
      sum += exp(row[e] - mx);
    int32_t best[K];
    for (int k = 0; k < K; ++k) {
      int32_t b = -1;
      for (int64_t e = 0; e < E; ++e) {
        int taken = 0;
        for (int j = 0; j < k; ++j)
          taken |= best[j] == e;
        if (!taken && (b < 0 || row[e] > row[b]))
          b = (int32_t)e;
      }
      best[k] = b;
      want_ids[t * K + k] = b;
      want_w[t * K + k] = exp(row[b] - mx) / sum;
      ++want_counts[b];
    }
  }
  int64_t P = 0;
  for (int64_t e = 0; e < E; ++e) {
    want_pad[e] = (want_counts[e] + BLOCK - 1) / BLOCK * BLOCK;
    want_off[e] = (int32_t)P;
    P += want_pad[e];
  }
  const int32_t fill = (int32_t)(T * K);
  int32_t *sorted = malloc((size_t)P * sizeof(int32_t));
  for (int64_t i = 0; i < P; ++i)
    sorted[i] = fill;

  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  void *d_logits, *d_w, *d_ids, *d_counts, *d_padded, *d_offsets, *d_cursor, *d_sorted;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
  SAMPLE_CHECK(wave_malloc(dev, nl * sizeof(float), &d_logits));
  SAMPLE_CHECK(wave_malloc(dev, np * sizeof(float), &d_w));
  SAMPLE_CHECK(wave_malloc(dev, np * sizeof(int32_t), &d_ids));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)E * sizeof(int32_t), &d_counts));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)E * sizeof(int32_t), &d_padded));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)E * sizeof(int32_t), &d_offsets));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)E * sizeof(int32_t), &d_cursor));
  SAMPLE_CHECK(wave_malloc(dev, (size_t)P * sizeof(int32_t), &d_sorted));
  SAMPLE_CHECK(wave_memcpy_htod(dev, d_logits, logits, nl * sizeof(float)));
  SAMPLE_CHECK(wave_memset(dev, d_counts, 0, (size_t)E * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memset(dev, d_cursor, 0, (size_t)E * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memcpy_htod(dev, d_sorted, sorted, (size_t)P * sizeof(int32_t)));
  SAMPLE_CHECK(moe_route_launch(stream, d_logits, d_w, d_ids, d_counts, T, E));
  SAMPLE_CHECK(moe_align_launch(stream, d_counts, d_padded, d_offsets, E));
  SAMPLE_CHECK(moe_sort_launch(stream, d_ids, d_offsets, d_cursor, d_sorted, T, E, P));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, w, d_w, np * sizeof(float)));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, ids, d_ids, np * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, counts, d_counts, (size_t)E * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, padded, d_padded, (size_t)E * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, offsets, d_offsets, (size_t)E * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, cursor, d_cursor, (size_t)E * sizeof(int32_t)));
  SAMPLE_CHECK(wave_memcpy_dtoh(dev, sorted, d_sorted, (size_t)P * sizeof(int32_t)));

  size_t bad_route = 0, bad_align = 0, bad_sort = 0;
  for (size_t i = 0; i < np; ++i)
    bad_route += ids[i] != want_ids[i] || !(fabs(w[i] - want_w[i]) <= 1e-5);
  for (int64_t e = 0; e < E; ++e) {
    bad_route += counts[e] != want_counts[e];
    bad_align += padded[e] != want_pad[e] || offsets[e] != want_off[e];
  }
  int32_t *seg = malloc(np * sizeof(int32_t) + 4), *mine = malloc(np * sizeof(int32_t) + 4);
  for (int64_t e = 0; e < E && bad_align == 0; ++e) {
    size_t n = 0;
    for (size_t i = 0; i < np; ++i)
      if (want_ids[i] == e)
        mine[n++] = (int32_t)i;
    memcpy(seg, sorted + want_off[e], n * sizeof(int32_t));
    qsort(seg, n, sizeof(int32_t), cmp_i32);
    bad_sort += cursor[e] != want_counts[e] || memcmp(seg, mine, n * sizeof(int32_t)) != 0;
    for (int32_t j = want_counts[e]; j < want_pad[e]; ++j)
      bad_sort += sorted[want_off[e] + j] != fill;
  }
  printf("moe routing of %lld tokens over %lld experts (top %d, blocks of %d) on %s: %zu wrong "
         "routes or counts, %zu wrong padded offsets, %zu wrong sorted segments; %lld sorted "
         "slots\n",
         (long long)T, (long long)E, K, BLOCK, moe_route_info()->targets, bad_route, bad_align,
         bad_sort, (long long)P);
  void *bufs[] = {d_logits, d_w, d_ids, d_counts, d_padded, d_offsets, d_cursor, d_sorted};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); ++i)
    wave_free(dev, bufs[i]);
  wave_stream_destroy(stream);
  wave_device_close(dev);
  void *host[] = {logits, w, ids, counts, padded, offsets, cursor, sorted, want_w, want_ids,
                  want_counts, want_pad, want_off, seg, mine};
  for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); ++i)
    free(host[i]);
  return bad_route + bad_align + bad_sort == 0 ? 0 : 1;
}
