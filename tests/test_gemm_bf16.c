/* tests/test_gemm_bf16.c — the CPU gemm slot given bfloat16 (src/cpu/gemm/bf16.c), against a
   float64 product of the same bfloat16 inputs.

   Both routes: the slot itself (the AVX512_BF16 kernel where this CPU and build have it, which
   the output says) and the F32 route (dt__half_gemm_f32: F32 copies, the F32 gemm, one rounding).
   Shapes with edges of the 12x32 tile, odd and zero k, all four ta/tb, batches with strides (0:
   one shared operand), alpha 1, -1.5, 0 and beta 0 (C starts as NaN), 1, 0.5. The bound on an
   element: one rounding to bfloat16 (2^-8 relative) plus F32 accumulation, (k + 2) 2^-24 times
   |alpha| sum |a||b| + |beta c|; the two routes within twice that of each other.

     cc -std=c99 -O2 -Wall -Wextra -Werror -pedantic [-fopenmp] tests/test_gemm_bf16.c -lm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* An allocator that can be told to fail: the kernel's packing buffers then take the F32 route. */
static int t_fail_alloc;
static void *t_malloc(size_t n) { return t_fail_alloc ? NULL : malloc(n); }
#define DT_MALLOC(sz) t_malloc(sz)
#define DT_FREE(p) free(p)

#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"

static uint64_t t_rng = 88172645463325252ull;
static double t_rand(void) { /* uniform in [-1, 1), xorshift64 */
  t_rng ^= t_rng << 13;
  t_rng ^= t_rng >> 7;
  t_rng ^= t_rng << 17;
  return (double)(t_rng >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static void *t_alloc(int64_t count, size_t es) { return calloc((size_t)(count > 0 ? count : 1), es); }

/* n bfloat16 values in [-2, 2) */
static void t_fill(uint16_t *x, int64_t n) {
  int64_t i;
  for (i = 0; i < n; i++) x[i] = dt__f32_to_bf16((float)(2.0 * t_rand()));
}

/* y against the float64 product: the largest error over the bound (<= 1 passes); err2: y against y2 */
static double t_check(int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha, const uint16_t *a,
                      int64_t sa, const uint16_t *b, int64_t sb, double beta, const uint16_t *c0, int64_t sc,
                      const uint16_t *y, const uint16_t *y2, double *err2) {
  int64_t e, i, j, p;
  double worst = 0, worst2 = 0;
  for (e = 0; e < batch; e++)
    for (i = 0; i < m; i++)
      for (j = 0; j < n; j++) {
        double s = 0, mag = 0, ref, bound, cv = dt__bf16_to_f32(c0[e * sc + i * n + j]), yv, y2v;
        for (p = 0; p < k; p++) {
          double av = dt__bf16_to_f32(a[e * sa + (ta ? p * m + i : i * k + p)]);
          double bv = dt__bf16_to_f32(b[e * sb + (tb ? j * k + p : p * n + j)]);
          s += av * bv;
          mag += fabs(av * bv);
        }
        ref = alpha * s + (beta != 0 ? beta * cv : 0);
        bound = ldexp(fabs(ref), -8) + (double)(k + 2) * ldexp(fabs(alpha) * mag + (beta != 0 ? fabs(beta * cv) : 0), -24);
        bound = bound * 1.0001 + 1e-30;
        yv = dt__bf16_to_f32(y[e * sc + i * n + j]);
        y2v = dt__bf16_to_f32(y2[e * sc + i * n + j]);
        if (!(fabs(yv - ref) / bound <= worst)) worst = fabs(yv - ref) / bound;
        if (!(fabs(yv - y2v) / (2 * bound) <= worst2)) worst2 = fabs(yv - y2v) / (2 * bound);
      }
  *err2 = worst2;
  return worst;
}

/* one case through both routes; sa, sb, sc: batch strides in elements (0: shared, for A and B) */
static void t_case(int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, int sha, int shb, double alpha, double beta) {
  const int64_t sa = sha ? 0 : m * k, sb = shb ? 0 : k * n, sc = m * n;
  const int64_t na = sha ? m * k : batch * m * k, nb = shb ? k * n : batch * k * n, nc = batch * m * n;
  uint16_t *a = (uint16_t *)t_alloc(na, 2), *b = (uint16_t *)t_alloc(nb, 2), *c0 = (uint16_t *)t_alloc(nc, 2);
  uint16_t *y = (uint16_t *)t_alloc(nc, 2), *y2 = (uint16_t *)t_alloc(nc, 2);
  double err, err2;
  dt_status s1, s2;
  int64_t i;
  t_fill(a, na); t_fill(b, nb); t_fill(c0, nc);
  for (i = 0; i < nc; i++) {
    y[i] = y2[i] = beta == 0 ? 0x7FC0 : c0[i]; /* NaN where C is not to be read */
    if (beta == 0) c0[i] = 0;
  }
  s1 = dt__cpu_gemm(0, DT_BF16, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, y, sc);
  s2 = dt__half_gemm_f32(dt__cpu_backend(), 0, DT_BF16, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, y2, sc);
  err = t_check(ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c0, sc, y, y2, &err2);
  T_CHECK_MSG(s1 == DT_OK && s2 == DT_OK && err <= 1 && err2 <= 1,
              "ta %d tb %d batch %lld (%lld, %lld, %lld) shared %d%d alpha %g beta %g: error %g of the bound, routes %g",
              ta, tb, (long long)batch, (long long)m, (long long)n, (long long)k, sha, shb, alpha, beta, err, err2);
  free(a); free(b); free(c0); free(y); free(y2);
}

static void test_shapes(void) {
  static const int64_t shapes[][3] = {{1, 1, 1}, {17, 33, 65}, {12, 32, 2}, {13, 31, 3}, {24, 64, 64}, {25, 65, 127},
                                      {1, 100, 7},  {100, 1, 9},  {5, 7, 0},   {97, 130, 300}, {2, 2, 1}};
  size_t s;
  int t;
  for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (t = 0; t < 4; t++) t_case(t >> 1, t & 1, 1, shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, 1.0, 0.0);
}

static void test_alpha_beta(void) {
  static const double ab[][2] = {{-1.5, 0.0}, {1.0, 1.0}, {-1.5, 0.5}, {0.0, 0.5}, {0.0, 0.0}};
  size_t i;
  for (i = 0; i < sizeof ab / sizeof ab[0]; i++) {
    t_case(0, 0, 1, 17, 33, 65, 0, 0, ab[i][0], ab[i][1]);
    t_case(1, 1, 1, 13, 40, 9, 0, 0, ab[i][0], ab[i][1]);
  }
}

static void test_batches(void) {
  t_case(0, 0, 3, 17, 33, 65, 0, 0, 1.0, 0.0);
  t_case(1, 0, 4, 13, 5, 31, 1, 0, 1.0, 0.5);  /* A shared */
  t_case(0, 1, 2, 9, 47, 20, 0, 1, -1.5, 0.0); /* B shared */
  t_case(1, 1, 2, 30, 30, 30, 0, 0, 1.0, 1.0);
}

/* big enough to take the threads; packing buffers that cannot be had: the F32 route, which then
   fails too (the same allocator), and says so */
static void test_large_and_oom(void) {
  t_case(0, 0, 1, 200, 300, 257, 0, 0, 1.0, 0.0);
  t_case(1, 1, 1, 150, 170, 301, 0, 0, 1.0, 0.5);
  {
    uint16_t a[6] = {0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80}, y[4] = {0, 0, 0, 0};
    dt_status s;
    t_fail_alloc = 1;
    s = dt__cpu_gemm(0, DT_BF16, 0, 0, 1, 2, 2, 3, 1.0, a, 0, a, 0, 0.0, y, 0);
    t_fail_alloc = 0;
    T_CHECK(s == DT_ERR_OUT_OF_MEMORY && y[0] == 0 && y[3] == 0);
  }
}

int main(void) {
#if DT__GEMM_BF16
  printf("the BF16 kernel: %s\n", dt__gemm_bf16_ok() ? "AVX512_BF16" : "not on this CPU (the F32 route)");
#else
  printf("the BF16 kernel: not in this build (the F32 route)\n");
#endif
  T_RUN(test_shapes);
  T_RUN(test_alpha_beta);
  T_RUN(test_batches);
  T_RUN(test_large_and_oom);
  return t_finish();
}
