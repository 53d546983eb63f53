/* Philox 4x32-10: the published known answers, and the same numbers on every device. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

/* Known-answer vectors of Random123 (kat_vectors, philox4x32 10 rounds). */
static void test_philox_known_answers(void) {
  static const uint32_t cases[3][10] = {
    /* ctr[4], key[2], expected[4] */
    {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
    {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
     0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
    {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
     0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u},
  };
  int c, i;
  for (c = 0; c < 3; c++) {
    uint32_t ctr[4];
    uint64_t key = (uint64_t)cases[c][4] | ((uint64_t)cases[c][5] << 32);
    for (i = 0; i < 4; i++) ctr[i] = cases[c][i];
    dt__philox(ctr, key);
    for (i = 0; i < 4; i++) T_CHECK_MSG(ctr[i] == cases[c][6 + i], "case %d word %d: %08x", c, i, (unsigned)ctr[i]);
  }
}

static void test_seed_determinism(dt_device dev) {
  float a[1001], b[1001], c[1001];
  dt_tensor *x, *y, *z;
  dt_manual_seed(42);
  x = dt_rand(dt_shape1(1001), dev);
  y = dt_rand(dt_shape1(1001), dev); /* the next draw differs */
  dt_manual_seed(42);
  z = dt_rand(dt_shape1(1001), dev);
  T_CHECK(x && y && z);
  dt_to_host(x, a, sizeof a); dt_to_host(y, b, sizeof b); dt_to_host(z, c, sizeof c);
  T_CHECK(memcmp(a, c, sizeof a) == 0);
  T_CHECK(memcmp(a, b, sizeof a) != 0);
  dt_release(x); dt_release(y); dt_release(z);
}

/* Element i of a draw does not depend on the tensor's size or shape. */
static void test_prefix_property(dt_device dev) {
  float a[10], b[7];
  dt_tensor *x, *y;
  dt_manual_seed(7);
  x = dt_randn(dt_shape2(2, 5), dev);
  dt_manual_seed(7);
  y = dt_randn(dt_shape1(7), dev);
  dt_to_host(x, a, sizeof a); dt_to_host(y, b, sizeof b);
  T_CHECK(memcmp(a, b, sizeof b) == 0);
  dt_release(x); dt_release(y);
}

static void test_distributions(dt_device dev) {
  int64_t n = 1 << 20, i;
  float *h = (float *)malloc((size_t)n * sizeof(float));
  double s = 0, s2 = 0, mn = 1, mx = 0;
  dt_tensor *u, *g;
  dt_manual_seed(1234);
  u = dt_rand(dt_shape1(n), dev);
  dt_to_host(u, h, (size_t)n * sizeof(float));
  for (i = 0; i < n; i++) { s += h[i]; if (h[i] < mn) mn = h[i]; if (h[i] > mx) mx = h[i]; }
  T_CHECK(mn >= 0 && mx < 1);
  T_CLOSE(s / n, 0.5, 0.002, 0);            /* std of the mean: 0.29 / 1024 */
  g = dt_randn(dt_shape1(n), dev);
  dt_to_host(g, h, (size_t)n * sizeof(float));
  for (i = 0, s = 0; i < n; i++) { s += h[i]; s2 += (double)h[i] * h[i]; }
  T_CLOSE(s / n, 0.0, 0.005, 0);
  T_CLOSE(s2 / n, 1.0, 0.01, 0);
  for (i = 0; i < n; i++) if (!isfinite(h[i])) break;
  T_CHECK(i == n);
  free(h);
  dt_release(u); dt_release(g);
}

/* The same seed gives the same tensor on the CPU and on every GPU. */
static void test_same_on_every_device(dt_device dev) {
  int64_t n = 100003, i, diff = 0;
  float *a = (float *)malloc((size_t)n * 4), *b = (float *)malloc((size_t)n * 4);
  int normal;
  if (dev.type == DT_CPU) { free(a); free(b); T_SKIP("compares a GPU with the CPU"); }
  for (normal = 0; normal < 2; normal++) {
    dt_tensor *x, *y;
    dt_manual_seed(99);
    x = normal ? dt_randn(dt_shape1(n), dt_cpu()) : dt_rand(dt_shape1(n), dt_cpu());
    dt_manual_seed(99);
    y = normal ? dt_randn(dt_shape1(n), dev) : dt_rand(dt_shape1(n), dev);
    dt_to_host(x, a, (size_t)n * 4); dt_to_host(y, b, (size_t)n * 4);
    for (i = 0, diff = 0; i < n; i++) {
      if (normal) diff += fabs((double)a[i] - b[i]) > 1e-6 * (1 + fabs(a[i]));
      else diff += a[i] != b[i];
    }
    T_CHECK_MSG(diff == 0, "%s: %lld of %lld elements differ", normal ? "randn" : "rand", (long long)diff, (long long)n);
    dt_release(x); dt_release(y);
  }
  free(a); free(b);
}

int main(void) {
  T_RUN(test_philox_known_answers);
  T_RUN_ALL_DEVICES(test_seed_determinism);
  T_RUN_ALL_DEVICES(test_prefix_property);
  T_RUN_ALL_DEVICES(test_distributions);
  T_RUN_ALL_DEVICES(test_same_on_every_device);
  return t_finish();
}
