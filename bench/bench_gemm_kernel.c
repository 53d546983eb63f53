/* bench/bench_gemm_kernel.c — times the built-in CPU gemm (devtensor.h's CPU matmul) on its own.

     cc -O2 [-fopenmp] bench/bench_gemm_kernel.c -o bench_gemm_kernel -lm
     ./bench_gemm_kernel [n [reps [kernel [kc nc]]]]

   n: size (default 1024); reps: timed runs after a warm-up (default 10); kernel: 0 baseline
   (what the compiler flags allow), 1 AVX2+FMA, 2 AVX-512, -1 (default) the best this CPU has;
   kc nc override the cache blocks.
   Prints `devtensor matmul_f32_<n> seconds=<best> gflops=<at best> ...`, the same line as
   bench_cpu, then the F64 figure. With -DDEVTENSOR_CBLAS (and -lopenblas) it times cblas_sgemm. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h" /* the kernel is the header's CPU matmul (dt__cpu_sgemm) */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *isa_name(int isa) {
  static const char *names[] = {"baseline", "avx2", "avx512"};
  return isa >= 0 && isa < DT__GEMM_ISA_COUNT ? names[isa] : "?";
}

static int threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/* Best seconds of reps runs of an (n, n, n) gemm after one warm-up. */
static double run(int dbl, const dt__gemm_plan *pl, int64_t n, int reps, void *a, void *b, void *c) {
  double best = 1e30;
  int r;
  for (r = -1; r < reps; r++) {
    double t0 = now(), t;
#ifdef DEVTENSOR_CBLAS
    (void)pl;
    if (dbl) dt__cpu_dgemm(0, 0, n, n, n, 1.0, (const double *)a, (const double *)b, 0.0, (double *)c);
    else dt__cpu_sgemm(0, 0, n, n, n, 1.0f, (const float *)a, (const float *)b, 0.0f, (float *)c);
#else
    dt__gemm_builtin(pl, dbl, 0, 0, n, n, n, 1.0, a, b, 0.0, c);
#endif
    t = now() - t0;
    if (r >= 0 && t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atol(argv[1]) : 1024, i;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  int isa = argc > 3 ? atoi(argv[3]) : -1, dbl;
  dt__gemm_plan pl;
  float *a = (float *)malloc((size_t)(n * n) * sizeof(double));
  float *b = (float *)malloc((size_t)(n * n) * sizeof(double));
  float *c = (float *)malloc((size_t)(n * n) * sizeof(double));
  if (!a || !b || !c) { fprintf(stderr, "out of memory\n"); return 1; }
  for (dbl = 0; dbl < 2; dbl++) {
    int use = isa;
    double s;
    if (use < 0) /* the best this CPU has, as dt__cpu_sgemm picks it */
      for (use = DT__GEMM_ISA_COUNT - 1; use > 0 && !dt__gemm_plan_get(use, dbl, &pl); use--) {}
    if (!dt__gemm_plan_get(use, dbl, &pl)) { fprintf(stderr, "kernel %d not available here\n", use); return 1; }
    if (argc > 5) { pl.kc = atol(argv[4]); pl.nc = atol(argv[5]); }
    srand(1);
    for (i = 0; i < n * n; i++) {
      if (dbl) { ((double *)a)[i] = rand() / (RAND_MAX + 1.0); ((double *)b)[i] = rand() / (RAND_MAX + 1.0); }
      else { a[i] = (float)(rand() / (RAND_MAX + 1.0)); b[i] = (float)(rand() / (RAND_MAX + 1.0)); }
    }
    s = run(dbl, &pl, n, reps, a, b, c);
    printf("devtensor matmul_%s_%ld seconds=%.6f gflops=%.1f threads=%d blas=%s kernel=%s mr=%d nr=%d kc=%ld nc=%ld\n",
           dbl ? "f64" : "f32", (long)n, s, 2.0 * (double)n * (double)n * (double)n / s * 1e-9, threads(),
#ifdef DEVTENSOR_CBLAS
           "cblas", isa_name(-1),
#else
           "builtin", isa_name(use),
#endif
           pl.mr, pl.nr, (long)pl.kc, (long)pl.nc);
    fflush(stdout);
  }
  free(a); free(b); free(c);
  return 0;
}
