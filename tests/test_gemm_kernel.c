/* tests/test_gemm_kernel.c — the CPU gemm of devtensor.h on its own, against a naive loop in double.

   Every kernel this CPU has (baseline vectors, AVX2+FMA, AVX-512), the blocked driver on its own
   (also for tiny sizes), the simple loop, the out-of-memory fallback and the public entry points
   dt__cpu_sgemm/dt__cpu_dgemm are run for many shapes, all four ta/tb, beta 0 (C starts as NaN),
   1 and 0.5, alpha 1, -1.5 and 0. Prints PASS/FAIL/SKIP lines and "N passed, N failed, N skipped".

     cc -std=c99 -O2 -Wall -Wextra -Werror -pedantic [-fopenmp] tests/test_gemm_kernel.c -lm
     c++ -std=c++17 -O2 -Wall -Wextra -Werror -x c++ tests/test_gemm_kernel.c
     add -DDEVTENSOR_CBLAS ... -lopenblas to test the entry points through CBLAS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* An allocator that can be told to fail, to test the fallback. */
static int t_fail_alloc;
static void *t_malloc(size_t n) { return t_fail_alloc ? NULL : malloc(n); }
#define DT_MALLOC(sz) t_malloc(sz)
#define DT_FREE(p) free(p)
/* A small cap on the packed copy of A (default 16 MiB), so that the medium shapes also go
   through the slabs of rows and the slices of a very deep k. */
#define DT__GEMM_ABYTES ((size_t)256 << 10)

#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h" /* the kernel is the header's CPU matmul (dt__cpu_sgemm) */
#include "harness.h"      /* t_passed, t_failed, t_skipped and t_finish() */

/* ---- data ---- */

static uint64_t t_rng = 88172645463325252ull;
static double t_rand(void) { /* uniform in [-1, 1), xorshift64 */
  t_rng ^= t_rng << 13;
  t_rng ^= t_rng >> 7;
  t_rng ^= t_rng << 17;
  return (double)(t_rng >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

typedef struct t_case {
  int64_t m, n, k;
  int ta, tb;
  double *a, *b, *c0;   /* a: (m, k) or (k, m); b: (k, n) or (n, k); c0: (m, n) start of C */
  double *prod, *mag;   /* op(A) @ op(B) exactly enough; sum of |a||b| for the error bound */
} t_case;

/* op(A)(i, p) and op(B)(p, j) of the case. */
static double t_a(const t_case *tc, int64_t i, int64_t p) { return tc->ta ? tc->a[p * tc->m + i] : tc->a[i * tc->k + p]; }
static double t_b(const t_case *tc, int64_t p, int64_t j) { return tc->tb ? tc->b[j * tc->k + p] : tc->b[p * tc->n + j]; }

static void *t_alloc(int64_t count, size_t es) { return calloc((size_t)(count > 0 ? count : 1), es); }

/* Values are rounded to float so that F32 and F64 see the same numbers. */
static void t_case_init(t_case *tc, int64_t m, int64_t n, int64_t k, int ta, int tb) {
  int64_t i, j, p;
  tc->m = m; tc->n = n; tc->k = k; tc->ta = ta; tc->tb = tb;
  tc->a = (double *)t_alloc(m * k, sizeof(double));
  tc->b = (double *)t_alloc(k * n, sizeof(double));
  tc->c0 = (double *)t_alloc(m * n, sizeof(double));
  tc->prod = (double *)t_alloc(m * n, sizeof(double));
  tc->mag = (double *)t_alloc(m * n, sizeof(double));
  for (i = 0; i < m * k; i++) tc->a[i] = (float)t_rand();
  for (i = 0; i < k * n; i++) tc->b[i] = (float)t_rand();
  for (i = 0; i < m * n; i++) tc->c0[i] = (float)t_rand();
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      double s = 0, g = 0;
      for (p = 0; p < k; p++) {
        s += t_a(tc, i, p) * t_b(tc, p, j);
        g += fabs(t_a(tc, i, p) * t_b(tc, p, j));
      }
      tc->prod[i * n + j] = s;
      tc->mag[i * n + j] = g;
    }
}

static void t_case_free(t_case *tc) {
  free(tc->a); free(tc->b); free(tc->c0); free(tc->prod); free(tc->mag);
}

/* ---- the ways to call the gemm ---- */

enum { P_ENTRY, P_BUILTIN, P_BLOCKED, P_SIMPLE, P_NOMEM };
static const char *t_path_name[] = {"entry", "builtin", "blocked", "simple", "nomem"};

/* A linear layer's asks (dt__gemm_opts) for P_ENTRY, or NULL: the plain entry (dt__cpu_sgemm/dgemm). */
static dt__gemm_opts *t_opts;

/* Runs path on C (m, n) of F32 (dbl 0) or F64; pl: the plan for P_BUILTIN / P_BLOCKED. */
static void t_call(int path, const dt__gemm_plan *pl, int dbl, const t_case *tc, double alpha,
                   const void *a, const void *b, double beta, void *c) {
  const int64_t m = tc->m, n = tc->n, k = tc->k;
  const int64_t rsa = tc->ta ? 1 : k, csa = tc->ta ? m : 1, rsb = tc->tb ? 1 : n, csb = tc->tb ? k : 1;
  switch (path) {
    case P_ENTRY:
      if (t_opts) (void)dt__cpu_gemm_opt(dbl ? DT_F64 : DT_F32, tc->ta, tc->tb, m, n, k, alpha, a, b, beta, c, t_opts);
      else if (dbl) dt__cpu_dgemm(tc->ta, tc->tb, m, n, k, alpha, (const double *)a, (const double *)b, beta, (double *)c);
      else dt__cpu_sgemm(tc->ta, tc->tb, m, n, k, (float)alpha, (const float *)a, (const float *)b, (float)beta, (float *)c);
      break;
    case P_BUILTIN: dt__gemm_builtin(pl, dbl, tc->ta, tc->tb, m, n, k, alpha, a, b, beta, c); break;
    case P_BLOCKED: /* the driver itself, also for sizes the entry sends to the simple loop */
      if (m > 0 && n > 0 && k > 0 && alpha != 0)
        (void)dt__gemm_blocked(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c);
      else
        dt__gemm_builtin(pl, dbl, tc->ta, tc->tb, m, n, k, alpha, a, b, beta, c);
      break;
    case P_SIMPLE:
      if (dbl) dt__gemm_simple_f64(m, n, k, alpha, (const double *)a, rsa, csa, (const double *)b, rsb, csb, beta, (double *)c);
      else dt__gemm_simple_f32(m, n, k, (float)alpha, (const float *)a, rsa, csa, (const float *)b, rsb, csb, (float)beta, (float *)c);
      break;
    case P_NOMEM: /* every allocation fails: the blocked driver must give up and the loop do it */
      t_fail_alloc = 1;
      dt__gemm_builtin(pl, dbl, tc->ta, tc->tb, m, n, k, alpha, a, b, beta, c);
      t_fail_alloc = 0;
      break;
  }
}

#define T_GUARD 16 /* elements of C's buffer checked on each side */

/* Runs one (path, dtype) on the case with one alpha/beta; returns the number of wrong elements. */
static int64_t t_check(int path, const dt__gemm_plan *pl, int dbl, const t_case *tc, double alpha, double beta,
                       const char *what) {
  const int64_t m = tc->m, n = tc->n, k = tc->k, mn = m * n;
  const size_t es = dbl ? sizeof(double) : sizeof(float);
  const double eps = dbl ? 1.1102230246251565e-16 : 5.9604644775390625e-08;
  char *a = (char *)t_alloc(m * k, es), *b = (char *)t_alloc(k * n, es);
  char *cbuf = (char *)t_alloc(mn + 2 * T_GUARD, es), *c = cbuf + T_GUARD * es;
  int64_t i, bad = 0;
  for (i = 0; i < m * k; i++) {
    if (dbl) ((double *)a)[i] = tc->a[i]; else ((float *)a)[i] = (float)tc->a[i];
  }
  for (i = 0; i < k * n; i++) {
    if (dbl) ((double *)b)[i] = tc->b[i]; else ((float *)b)[i] = (float)tc->b[i];
  }
  for (i = -T_GUARD; i < mn + T_GUARD; i++) { /* C: c0, or NaN when beta == 0; guards: 1234 */
    double v = i < 0 || i >= mn ? 1234.0 : beta == 0 ? NAN : tc->c0[i];
    if (dbl) ((double *)c)[i] = v; else ((float *)c)[i] = (float)v;
  }
  t_call(path, pl, dbl, tc, alpha, a, b, beta, c);
  for (i = -T_GUARD; i < mn + T_GUARD; i++) {
    double got = dbl ? ((double *)c)[i] : (double)((float *)c)[i];
    double want, tol;
    if (i < 0 || i >= mn) {
      want = 1234.0; tol = 0;
    } else {
      double cz = beta == 0 ? 0 : beta * tc->c0[i];
      want = alpha * tc->prod[i] + cz;
      /* |error| <= gamma_(k+2) (|alpha| sum |a b| + |beta c|), with room */
      tol = 2.0 * (double)(k + 3) * eps * (fabs(alpha) * tc->mag[i] + fabs(cz)) + 1e-300;
    }
    if (!(fabs(got - want) <= tol)) {
      if (bad < 3)
        printf("  %s %s m=%ld n=%ld k=%ld ta=%d tb=%d alpha=%g beta=%g: c[%ld] = %.9g, want %.9g\n", what,
               t_path_name[path], (long)m, (long)n, (long)k, tc->ta, tc->tb, alpha, beta, (long)i, got, want);
      bad++;
    }
  }
  free(a); free(b); free(cbuf);
  return bad;
}

/* ---- the shapes ---- */

static const int64_t t_small[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 17, 33};
static const int64_t t_small_k[] = {0, 1, 2, 7, 16, 33};
static const int64_t t_medium[][3] = {
  {97, 130, 257}, {200, 65, 300}, {1, 1000, 300}, {1000, 1, 300}, {129, 200, 1}, {64, 64, 64},
  {5, 4100, 7}, {150, 170, 530}, {12, 32, 256}, {13, 33, 257}, {96, 96, 96}, {2, 3, 6000}, {5, 7, 6000}, {600, 40, 200},
  {300, 300, 200}, /* one slab with row tasks under 2+ threads: A packed by each thread, B read in place but its last panel */
  {384, 128, 96},  /* the same for F64 too under this file's cap on A, in two slabs */
  {302, 128, 120}, /* row tasks whose A is read in place (dt__gemm_slab's adirect) but a last panel of 2 rows */
  {40, 784, 64},   /* AVX-512's edge kernels: a last panel of 4 rows, 784 columns = 24 panels of 32 and one of 16 */
  {104, 784, 100}, /* and of 8 rows (104 = 8 x 12 + 8) */
  {6, 25, 5000},   /* A B^T: dot products of rows, chunks of depth (a convolution's weight gradient) */
  {17, 150, 2049}, /* and its edges: a last row block of 1 row, a last chunk of 1 */
};
#define T_COUNT(x) (sizeof(x) / sizeof((x)[0]))

static t_case *t_cases[2]; /* small, medium */
static int t_ncases[2];

/* Every shape with every ta/tb, reference included, made once. */
static void t_make_cases(void) {
  unsigned ta, im, in, ik;
  int n = 0;
  t_cases[0] = (t_case *)malloc(4 * T_COUNT(t_small) * T_COUNT(t_small) * T_COUNT(t_small_k) * sizeof(t_case));
  for (ta = 0; ta < 4; ta++)
    for (im = 0; im < T_COUNT(t_small); im++)
      for (in = 0; in < T_COUNT(t_small); in++)
        for (ik = 0; ik < T_COUNT(t_small_k); ik++)
          t_case_init(&t_cases[0][n++], t_small[im], t_small[in], t_small_k[ik], (int)(ta & 1), (int)(ta >> 1));
  t_ncases[0] = n;
  n = 0;
  t_cases[1] = (t_case *)malloc(4 * T_COUNT(t_medium) * sizeof(t_case));
  for (ta = 0; ta < 4; ta++)
    for (im = 0; im < T_COUNT(t_medium); im++)
      t_case_init(&t_cases[1][n++], t_medium[im][0], t_medium[im][1], t_medium[im][2], (int)(ta & 1), (int)(ta >> 1));
  t_ncases[1] = n;
}

/* One result line: "FAIL name: <bad><failed>" when bad, else "PASS name<passed>". */
static void t_verdict(const char *name, int64_t bad, const char *failed, const char *passed) {
  if (bad) {
    t_failed++;
    printf("FAIL %s: %ld%s\n", name, (long)bad, failed);
  } else {
    t_passed++;
    printf("PASS %s%s\n", name, passed);
  }
  fflush(stdout);
}

/* All shapes, all ta/tb, all alpha/beta for one path and dtype; prints one line. */
static void t_run(const char *name, int path, const dt__gemm_plan *pl, int dbl, int medium) {
  static const double alphas[] = {1.0, -1.5, 0.0}, betas[] = {0.0, 1.0, 0.5};
  int64_t bad = 0, runs = 0;
  unsigned ia, ib;
  int i;
  char runs_s[32];
  for (i = 0; i < t_ncases[medium]; i++)
    for (ia = 0; ia < (!medium ? T_COUNT(alphas) : path == P_SIMPLE || path == P_NOMEM ? 1 : 2); ia++)
      for (ib = 0; ib < T_COUNT(betas); ib++, runs++)
        bad += t_check(path, pl, dbl, &t_cases[medium][i], alphas[ia], betas[ib], name);
  snprintf(runs_s, sizeof runs_s, " (%ld runs)", (long)runs);
  t_verdict(name, bad, " wrong elements", runs_s);
}

static const char *t_isa_name[] = {"baseline", "avx2", "avx512"};

#if DT__POOL
/* The entry point's bits on (m, n, k), all ta/tb, alpha -1.5, beta 0.5, with the work split for
   nt threads (the pool's count, as OMP_NUM_THREADS sets it when the pool starts) against one
   thread's: the partition must not change how an element is summed. */
static void t_threads_same(int dbl, int64_t m, int64_t n, int64_t k, int nt) {
  const size_t es = dbl ? sizeof(double) : sizeof(float);
  char *a = (char *)t_alloc(m * k, es), *b = (char *)t_alloc(k * n, es);
  char *c1 = (char *)t_alloc(m * n, es), *c2 = (char *)t_alloc(m * n, es);
  const int saved = DT__ATOMIC_LOAD(&dt__pool_nt);
  int64_t i, bad = 0;
  int t, tr;
  char name[96];
  for (i = 0; i < m * k; i++) { if (dbl) ((double *)a)[i] = t_rand(); else ((float *)a)[i] = (float)t_rand(); }
  for (i = 0; i < k * n; i++) { if (dbl) ((double *)b)[i] = t_rand(); else ((float *)b)[i] = (float)t_rand(); }
  for (t = 0; t < 4; t++)
    for (tr = 0; tr < 2; tr++) {
      char *c = tr ? c2 : c1;
      for (i = 0; i < m * n; i++) { if (dbl) ((double *)c)[i] = 0.25; else ((float *)c)[i] = 0.25f; }
      DT__ATOMIC_STORE(&dt__pool_nt, tr ? nt : 1);
      if (dbl) dt__cpu_dgemm(t & 1, t >> 1, m, n, k, -1.5, (const double *)a, (const double *)b, 0.5, (double *)c);
      else dt__cpu_sgemm(t & 1, t >> 1, m, n, k, -1.5f, (const float *)a, (const float *)b, 0.5f, (float *)c);
      if (tr)
        for (i = 0; i < m * n; i++) bad += memcmp(c1 + (size_t)i * es, c2 + (size_t)i * es, es) != 0;
    }
  DT__ATOMIC_STORE(&dt__pool_nt, saved);
  snprintf(name, sizeof name, "%s_threads%d_same_bits_%ldx%ldx%ld", dbl ? "f64" : "f32", nt, (long)m, (long)n, (long)k);
  t_verdict(name, bad, " elements differ from one thread's", "");
  free(a); free(b); free(c1); free(c2);
}
#endif

/* A linear layer's bias in the product (dt__gemm_opts' bias): C = bias +
   alpha op(A) op(B) must have the bits of C filled with the bias, then beta 1, on every shape
   (small ones take the simple or rows kernels, medium ones the blocked driver, whose tasks write
   the bias into their own blocks), with the column split or not, and with no memory (the driver
   gives up: the loop does it, for both). C starts as NaN: every element must be written. */
static void t_bias(int dbl, int medium, int split, int nomem) {
  const size_t es = dbl ? sizeof(double) : sizeof(float);
  const dt_dtype t = dbl ? DT_F64 : DT_F32;
  int64_t bad = 0, runs = 0;
  int ic, ia;
  char name[96], runs_s[32];
  for (ic = 0; ic < t_ncases[medium]; ic++) {
    const t_case *tc = &t_cases[medium][ic];
    const int64_t m = tc->m, n = tc->n, k = tc->k, mn = m * n;
    char *a = (char *)t_alloc(m * k, es), *b = (char *)t_alloc(k * n, es), *bias = (char *)t_alloc(n, es);
    char *c1 = (char *)t_alloc(mn, es), *c2 = (char *)t_alloc(mn, es);
    int64_t i;
    for (i = 0; i < m * k; i++) { if (dbl) ((double *)a)[i] = tc->a[i]; else ((float *)a)[i] = (float)tc->a[i]; }
    for (i = 0; i < k * n; i++) { if (dbl) ((double *)b)[i] = tc->b[i]; else ((float *)b)[i] = (float)tc->b[i]; }
    for (i = 0; i < n; i++) { if (dbl) ((double *)bias)[i] = t_rand(); else ((float *)bias)[i] = (float)t_rand(); }
    for (ia = 0; ia < 2; ia++, runs++) {
      const double alpha = ia ? -1.5 : 1.0;
      for (i = 0; i < mn; i++) { /* c1: NaN; c2: the bias's rows */
        if (dbl) { ((double *)c1)[i] = NAN; ((double *)c2)[i] = ((double *)bias)[i % n]; }
        else { ((float *)c1)[i] = NAN; ((float *)c2)[i] = ((float *)bias)[i % n]; }
      }
      dt__gemm_opts o;
      memset(&o, 0, sizeof o);
      o.by_cols = split;
      o.bias = bias;
      t_fail_alloc = nomem;
      (void)dt__cpu_gemm_opt(t, tc->ta, tc->tb, m, n, k, alpha, a, b, 0.0, c1, &o);
      if (dbl) dt__cpu_dgemm(tc->ta, tc->tb, m, n, k, alpha, (const double *)a, (const double *)b, 1.0, (double *)c2);
      else dt__cpu_sgemm(tc->ta, tc->tb, m, n, k, (float)alpha, (const float *)a, (const float *)b, 1.0f, (float *)c2);
      t_fail_alloc = 0;
      for (i = 0; i < mn; i++) bad += memcmp(c1 + (size_t)i * es, c2 + (size_t)i * es, es) != 0;
    }
    free(a); free(b); free(bias); free(c1); free(c2);
  }
  snprintf(name, sizeof name, "%s_bias_%s%s%s", dbl ? "f64" : "f32", medium ? "medium" : "small", split ? "_by_cols" : "",
           nomem ? "_out_of_memory" : "");
  snprintf(runs_s, sizeof runs_s, " (%ld runs)", (long)runs);
  t_verdict(name, bad, " elements differ from bias-then-beta-1", runs_s);
}

/* A linear layer's bias gradient from the product (dt__gemm_opts' asum): where the driver takes it
   (each thread packing its own rows of A, row tasks under 2+ threads, op(A)'s rows contiguous: ta),
   it writes the sums of op(A)'s rows, in double and in order, so the bits of a sum of the column's
   floats in order, and sets asum_done; where it does not, it leaves asum_done 0 and the buffer alone. */
static void t_row_sums(int dbl) {
  const size_t es = dbl ? sizeof(double) : sizeof(float);
  const dt_dtype t = dbl ? DT_F64 : DT_F32;
  int64_t bad = 0, taken = 0;
  int ic;
  char name[64], failed[64], passed[64];
  for (ic = 0; ic < t_ncases[1]; ic++) {
    const t_case *tc = &t_cases[1][ic];
    const int64_t m = tc->m, n = tc->n, k = tc->k;
    char *a = (char *)t_alloc(m * k, es), *b = (char *)t_alloc(k * n, es), *c = (char *)t_alloc(m * n, es);
    char *sums = (char *)t_alloc(m, es);
    int64_t i, p;
    for (i = 0; i < m * k; i++) { if (dbl) ((double *)a)[i] = tc->a[i]; else ((float *)a)[i] = (float)tc->a[i]; }
    for (i = 0; i < k * n; i++) { if (dbl) ((double *)b)[i] = tc->b[i]; else ((float *)b)[i] = (float)tc->b[i]; }
    for (i = 0; i < m; i++) { if (dbl) ((double *)sums)[i] = NAN; else ((float *)sums)[i] = NAN; }
    dt__gemm_opts o;
    memset(&o, 0, sizeof o);
    o.asum = sums;
    o.asum_done = 1; /* the entry resets it */
    (void)dt__cpu_gemm_opt(t, tc->ta, tc->tb, m, n, k, 1.0, a, b, 0.0, c, &o);
    if (o.asum_done) {
      taken++;
      for (i = 0; i < m; i++) {
        double acc = 0;
        for (p = 0; p < k; p++) { /* op(A)(i, p) */
          const int64_t at = tc->ta ? p * m + i : i * k + p;
          acc += dbl ? ((double *)a)[at] : (double)((float *)a)[at];
        }
        if (dbl ? ((double *)sums)[i] != acc : ((float *)sums)[i] != (float)acc) bad++;
      }
    } else {
      for (i = 0; i < m; i++) bad += dbl ? ((double *)sums)[i] == ((double *)sums)[i] : ((float *)sums)[i] == ((float *)sums)[i];
    }
    free(a); free(b); free(c); free(sums);
  }
  snprintf(name, sizeof name, "%s_row_sums_medium", dbl ? "f64" : "f32");
#if DT__POOL && DT__GEMM_VEC
  /* the 300x300x200 and 384x128x96 shapes have row tasks there (the plain-C kernels' narrow tasks
     make enough column tasks without them) */
  if (dt__pool_threads() > 1 && taken == 0) bad++;
#endif
  snprintf(failed, sizeof failed, " wrong (taken by %ld products)", (long)taken);
  snprintf(passed, sizeof passed, " (taken by %ld of %d products)", (long)taken, t_ncases[1]);
  t_verdict(name, bad, failed, passed);
}

#if DT__GEMM_VEC
/* A B^T as dot products with each family's blocks this CPU runs, against the product in double:
   within k 2^-23 of the sum of |a b| (the bound t_run uses), C starting as NaN for beta 0 */
static void t_dot_sets(void) {
  static const int64_t shapes[][3] = {{6, 25, 5000}, {1, 1, 2048}, {4, 4, 2050}, {9, 7, 3333}, {64, 64, 2100}};
  static const char *const names[3] = {"baseline", "avx2", "avx512"};
  const dt__gemm_dot_set *sets[3];
  int ns = 0, si;
  unsigned sh;
  sets[ns++] = &dt__gemm_dot_c;
#if DT__GEMM_X86
  sets[ns++] = dt__x86_has_avx2_fma() ? &dt__gemm_dot_avx2 : NULL;
  sets[ns++] = dt__x86_has_avx512f() ? &dt__gemm_dot_avx512 : NULL;
#endif
  for (si = 0; si < ns; si++) {
    char name[96];
    int64_t bad = 0;
    if (!sets[si]) {
      t_skipped++;
      printf("SKIP sgemm_dot_%s: not available on this CPU\n", names[si]);
      continue;
    }
    for (sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
      t_case tc;
      float *a, *b, *c;
      int64_t i, m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
      int beta0;
      t_case_init(&tc, m, n, k, 0, 1);
      a = (float *)t_alloc(m * k, sizeof(float)); b = (float *)t_alloc(n * k, sizeof(float)); c = (float *)t_alloc(m * n, sizeof(float));
      for (i = 0; i < m * k; i++) a[i] = (float)tc.a[i];
      for (i = 0; i < n * k; i++) b[i] = (float)tc.b[i];
      for (beta0 = 0; beta0 < 2; beta0++) {
        for (i = 0; i < m * n; i++) c[i] = beta0 ? (float)NAN : (float)tc.c0[i];
        if (!dt__gemm_dot(sets[si], m, n, k, -1.5f, a, b, beta0 ? 0.0f : 0.5f, c)) { bad++; continue; }
        for (i = 0; i < m * n; i++) {
          const double want = -1.5 * tc.prod[i] + (beta0 ? 0.0 : 0.5 * tc.c0[i]);
          if (!(fabs((double)c[i] - want) <= (double)k * ldexp(1.0, -23) * (1.5 * tc.mag[i] + 1.0))) bad++;
        }
      }
      free(a); free(b); free(c);
      t_case_free(&tc);
    }
    snprintf(name, sizeof name, "sgemm_dot_%s", names[si]);
    t_verdict(name, bad, " entries out of bounds (or the product refused)", "");
  }
}
#endif

int main(void) {
  int dbl, isa, medium;
  char name[128];
  t_make_cases();
  for (dbl = 0; dbl < 2; dbl++) {
    const char *g = dbl ? "dgemm" : "sgemm";
    for (medium = 0; medium < 2; medium++) {
      const char *sz = medium ? "medium" : "small";
      dt__gemm_plan pl;
      dt__gemm_plan_best(dbl, &pl);
      snprintf(name, sizeof name, "%s_entry_%s", g, sz);
      t_run(name, P_ENTRY, NULL, dbl, medium);
      snprintf(name, sizeof name, "%s_simple_%s", g, sz);
      t_run(name, P_SIMPLE, NULL, dbl, medium);
      snprintf(name, sizeof name, "%s_out_of_memory_%s", g, sz);
      t_run(name, P_NOMEM, &pl, dbl, medium);
      for (isa = 0; isa < DT__GEMM_ISA_COUNT; isa++) {
        snprintf(name, sizeof name, "%s_%s_%s", g, t_isa_name[isa], sz);
        if (!dt__gemm_plan_get(isa, dbl, &pl)) {
          t_skipped++;
          printf("SKIP %s: not available on this CPU or build\n", name);
          continue;
        }
        t_run(name, medium ? P_BUILTIN : P_BLOCKED, &pl, dbl, medium);
      }
      if (medium) { /* the driver with shallow depth blocks: several per product, A packed by each thread or not */
        dt__gemm_plan_best(dbl, &pl);
        pl.kc = 64;
        snprintf(name, sizeof name, "%s_kc64_%s", g, sz);
        t_run(name, P_BLOCKED, &pl, dbl, medium);
#if DT__POOL /* (on one thread it changes nothing) */
        dt__gemm_opts o;
        memset(&o, 0, sizeof o);
        o.by_cols = 1; /* as a linear layer's forward asks: C split by columns among the threads */
        t_opts = &o;
        snprintf(name, sizeof name, "%s_by_cols_%s", g, sz);
        t_run(name, P_ENTRY, NULL, dbl, medium);
        t_opts = NULL;
#endif
      }
    }
#if DT__POOL
    { /* work split for more threads than the pool has, and for one, with the best kernel. The pool
         reads OMP_NUM_THREADS once, when it starts (omp_set_num_threads after that changes nothing
         here): the count the work is split for is set as that start sets it. */
      int nt[] = {3, 1}, i, saved;
      (void)dt__pool_threads(); /* started: its count is not set again */
      saved = DT__ATOMIC_LOAD(&dt__pool_nt);
      for (i = 0; i < 2; i++) {
        DT__ATOMIC_STORE(&dt__pool_nt, nt[i]);
        snprintf(name, sizeof name, "%s_threads%d_medium", g, nt[i]);
        t_run(name, P_ENTRY, NULL, dbl, 1);
      }
      DT__ATOMIC_STORE(&dt__pool_nt, saved);
    }
#endif
    t_row_sums(dbl);
#if DT__GEMM_VEC
    if (!dbl) t_dot_sets();
#endif
    for (medium = 0; medium < 2; medium++) {
      t_bias(dbl, medium, 0, 0);
      if (medium) { t_bias(dbl, medium, 1, 0); t_bias(dbl, medium, 0, 1); }
    }
#if DT__POOL
    /* the rows kernel split 10 rows for 2 threads as 8 + 2, and did the 2 with its one-row-at-a-time
       axpy where one thread does them as 1-row blocks: other bits */
    t_threads_same(dbl, 10, 16, 7000, 2);
    t_threads_same(dbl, 6, 25, 9000, 2); /* A B^T as dot products: chunks of depth on the threads */
#endif
  }
  for (medium = 0; medium < 2; medium++) {
    int i;
    for (i = 0; i < t_ncases[medium]; i++) t_case_free(&t_cases[medium][i]);
    free(t_cases[medium]);
  }
  return t_finish();
}
