/* Philox 4x32-10: the published known answers, and the same numbers on every device. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>
#include <math.h>

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
  T_CHECK(dt_to_host(x, a, sizeof a) == DT_OK && dt_to_host(y, b, sizeof b) == DT_OK && dt_to_host(z, c, sizeof c) == DT_OK);
  T_CHECK(memcmp(a, c, sizeof a) == 0);
  T_CHECK(memcmp(a, b, sizeof a) != 0);
  dt_release(x); dt_release(y); dt_release(z);
}

/* Element i of a draw does not depend on the tensor's size or shape. */
static void test_prefix_property(dt_device dev) {
  float a[10] = {0}, b[7] = {0}; /* zeros if a copy fails */
  dt_tensor *x, *y;
  dt_manual_seed(7);
  x = dt_randn(dt_shape2(2, 5), dev);
  dt_manual_seed(7);
  y = dt_randn(dt_shape1(7), dev);
  T_CHECK(x && y && dt_to_host(x, a, sizeof a) == DT_OK && dt_to_host(y, b, sizeof b) == DT_OK);
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
  T_CHECK(h && u && dt_to_host(u, h, (size_t)n * sizeof(float)) == DT_OK);
  for (i = 0; i < n; i++) { s += h[i]; if (h[i] < mn) mn = h[i]; if (h[i] > mx) mx = h[i]; }
  T_CHECK(mn >= 0 && mx < 1);
  T_CLOSE(s / n, 0.5, 0.002, 0);            /* std of the mean: 0.29 / 1024 */
  g = dt_randn(dt_shape1(n), dev);
  T_CHECK(g && dt_to_host(g, h, (size_t)n * sizeof(float)) == DT_OK);
  for (i = 0, s = 0; i < n; i++) { s += h[i]; s2 += (double)h[i] * h[i]; }
  T_CLOSE(s / n, 0.0, 0.005, 0);
  T_CLOSE(s2 / n, 1.0, 0.01, 0);
  for (i = 0; i < n; i++) if (!isfinite(h[i])) break;
  T_CHECK(i == n);
  free(h);
  dt_release(u); dt_release(g);
}

/* devtensor's own log/sin/cos in Box-Muller against the C library's: within
   an ulp of float, and the same float in all but a handful of rounding ties;
   plus the quarter-turn and end points. */
static void test_box_muller_vs_libm(void) {
  static const uint32_t edge[][2] = {{0, 0}, {0xffffffffu, 0}, {0, 0x40000000u}, {0, 0x80000000u}, {0, 0xC0000000u},
                                     {0, 0xffffffffu}, {0x7fffffffu, 0x20000000u}, {12345, 0x3fffffffu}};
  uint32_t w[4];
  int64_t i, n = 1000000, differ = 0;
  double worst = 0;
  for (i = 0; i < n; i++) {
    uint32_t w0, w1;
    double u1, u2, r, th, ref[2];
    float z[2];
    int k;
    if (i < 8) { w0 = edge[i][0]; w1 = edge[i][1]; }
    else { dt__philox_block(2024, 3, (uint64_t)i, w); w0 = w[0]; w1 = w[1]; }
    dt__box_muller(w0, w1, &z[0], &z[1]);
    u1 = ((double)w0 + 1.0) / 4294967296.0; u2 = (double)w1 / 4294967296.0;
    r = sqrt(-2.0 * log(u1)); th = 6.283185307179586 * u2;
    ref[0] = r * cos(th); ref[1] = r * sin(th);
    for (k = 0; k < 2; k++) {
      double e = fabs((double)z[k] - ref[k]) / (fabs(ref[k]) > 1 ? fabs(ref[k]) : 1);
      if (e > worst) worst = e;
      differ += z[k] != (float)ref[k];
    }
  }
  T_CHECK_MSG(worst <= 1.2e-7, "worst difference %.3g (float's half ulp is 6e-8)", worst);
  T_CHECK_MSG(differ <= 10, "%lld of %lld normals differ from the C library's rounding", (long long)differ, (long long)(2 * n));
}

/* dt_randn on the CPU gives dt__box_muller's bits (the reference the GPUs give too): its
   vector variants (x86: baseline, AVX2, AVX-512, those this CPU runs) against it on Philox
   words and the edge cases (w0 around every power of two and every scaling boundary of log's
   argument near sqrt(1/2) 2^j, the octant boundaries of w1), and a whole tensor whose length
   is no multiple of the vector batch. */
static void test_cpu_normals_bitwise(void) {
  const int64_t n = 100003;
  float *y;
  int64_t i, diff = 0;
  int normal;
#if DT__EW_X86
  enum { NW = 1 << 21 };
  static uint32_t w0[NW], w1[NW];
  static const uint32_t w1e[] = {0, 1, 0x1fffffffu, 0x20000000u, 0x20000001u, 0x3fffffffu, 0x40000000u, 0x5fffffffu,
                                 0x60000000u, 0x7fffffffu, 0x80000000u, 0xa0000000u, 0xbfffffffu, 0xc0000000u,
                                 0xe0000000u, 0xffffffffu};
  int isa, ne = 0, d;
  int64_t j;
  for (j = 0; j <= 32; j++) { /* k = w0 + 1 around 2^j and around sqrt(1/2) 2^j */
    const int64_t pw = (int64_t)1 << j, sb = (int64_t)(0.7071067811865476 * (double)pw);
    for (d = -2; d <= 2; d++) {
      int64_t k1 = pw + d, k2 = sb + d;
      if (k1 >= 1 && k1 <= ((int64_t)1 << 32)) { w0[ne] = (uint32_t)(k1 - 1); w1[ne] = w1e[ne % 16]; ne++; }
      if (k2 >= 1 && k2 <= ((int64_t)1 << 32)) { w0[ne] = (uint32_t)(k2 - 1); w1[ne] = w1e[ne % 16]; ne++; }
    }
  }
  for (j = 0; j < 16; j++) { w0[ne] = (uint32_t)j * 0x11111111u; w1[ne] = w1e[j]; ne++; }
  for (i = ne; i < NW; i += 2) {
    uint32_t w[4];
    dt__philox_block(77, 5, (uint64_t)i, w);
    w0[i] = w[0]; w1[i] = w[1];
    if (i + 1 < NW) { w0[i + 1] = w[2]; w1[i + 1] = w[3]; }
  }
  for (isa = 0; isa <= dt__ew_isa(); isa++) {
    int64_t bad = 0, first = -1;
    for (i = 0; i + DT__BM_NP <= NW; i += DT__BM_NP) {
      float z0[DT__BM_NP], z1[DT__BM_NP], r0, r1;
      int l;
      dt__box_muller_n_tab[isa](w0 + i, w1 + i, z0, z1);
      for (l = 0; l < DT__BM_NP; l++) {
        dt__box_muller(w0[i + l], w1[i + l], &r0, &r1);
        if (memcmp(&r0, &z0[l], 4) != 0 || memcmp(&r1, &z1[l], 4) != 0) { bad++; if (first < 0) first = i + l; }
      }
    }
    T_CHECK_MSG(bad == 0, "variant %d: %lld of %d pairs differ, first w0 %08x w1 %08x", isa, (long long)bad, (int)NW,
                first < 0 ? 0u : w0[first], first < 0 ? 0u : w1[first]);
    /* their Philox blocks, also where the counter's low word wraps and for keys and draws above 2^32 */
    for (bad = 0, j = 0; j < 4000; j++) {
      static const uint64_t j0s[] = {0, 8, 0xFFFFFFFCull, 0x123456789ull};
      const uint64_t seed = j % 2 ? 0xFEDCBA9876543210ull : (uint64_t)j, draw = j % 3 ? (uint64_t)j << 33 : (uint64_t)j;
      const uint64_t j0 = j0s[j % 4] + (uint64_t)(j / 4) * 8;
      uint32_t p0[DT__BM_NP], p1[DT__BM_NP], w[4];
      int b;
      dt__philox_n_tab[isa](seed, draw, j0, p0, p1);
      for (b = 0; b < DT__BM_NP / 2; b++) {
        dt__philox_block(seed, draw, j0 + (uint64_t)b, w);
        bad += w[0] != p0[2 * b] || w[1] != p1[2 * b] || w[2] != p0[2 * b + 1] || w[3] != p1[2 * b + 1];
      }
    }
    T_CHECK_MSG(bad == 0, "variant %d: %lld Philox blocks differ", isa, (long long)bad);
  }
#endif
  /* the CPU backend's loop (on the pool when there are workers), normals and uniforms */
  y = (float *)malloc((size_t)n * 4);
  if (!y) T_SKIP("no memory");
  for (normal = 0; normal < 2; normal++) {
    T_CHECK(dt__cpu_random(0, normal, 31, 7, NULL, n, y) == DT_OK);
    for (i = 0, diff = 0; i < (n + 3) / 4; i++) {
      uint32_t w[4];
      float z[4];
      int q;
      dt__philox_block(31, 7, (uint64_t)i, w);
      if (normal) { dt__box_muller(w[0], w[1], &z[0], &z[1]); dt__box_muller(w[2], w[3], &z[2], &z[3]); }
      else for (q = 0; q < 4; q++) z[q] = dt__u32_to_uniform(w[q]);
      for (q = 0; q < 4 && i * 4 + q < n; q++) diff += memcmp(&z[q], &y[i * 4 + q], 4) != 0;
    }
    T_CHECK_MSG(diff == 0, "%s of %lld on the CPU: %lld elements differ from the scalar reference",
                normal ? "randn" : "rand", (long long)n, (long long)diff);
  }
  free(y);
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
    T_CHECK(a && b && x && y && dt_to_host(x, a, (size_t)n * 4) == DT_OK && dt_to_host(y, b, (size_t)n * 4) == DT_OK);
    /* bit for bit, normals too: Box-Muller uses no platform maths library */
    for (i = 0, diff = 0; i < n; i++) diff += memcmp(&a[i], &b[i], 4) != 0;
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
  T_RUN(test_box_muller_vs_libm);
  T_RUN(test_cpu_normals_bitwise);
  T_RUN_ALL_DEVICES(test_same_on_every_device);
  return t_finish();
}
