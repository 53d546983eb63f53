/* bench/bench_cpu.c — devtensor on the CPU, through the public API; pairs with bench_numpy.py.

     cc -O2 -fopenmp bench/bench_cpu.c -o bench_cpu -lm                       (built-in kernel)
     cc -O2 -fopenmp -DDEVTENSOR_CBLAS bench/bench_cpu.c -o bench_cpu -lopenblas -lm   (CBLAS)
     ./bench_cpu [reps] | python3 bench/compare.py - numpy.txt

   Times, after one warm-up, the best of reps runs (default 10) of
     dt_matmul of two F32 (1024, 1024) dt_rand tensors    -> GFLOP/s, counting 2 n^3
     dt_add of two F32 tensors of 2^24 elements            -> GB/s, counting 3 arrays of 4 bytes
   and prints one line each:
     devtensor matmul_f32_1024 seconds=0.012300 gflops=174.6 threads=2 blas=builtin
     devtensor add_f32_16777216 seconds=0.010000 gbps=20.1 threads=2 blas=builtin
   Each timed run includes making the result tensor and releasing it, as a@b and a+b do in NumPy. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

#ifdef DEVTENSOR_CBLAS
#define BLAS "cblas"
#else
#define BLAS "builtin"
#endif

static void die(const char *what) {
  fprintf(stderr, "bench_cpu: %s failed: %s\n", what, dt_last_error());
  exit(1);
}

typedef dt_tensor *(*binop)(const dt_tensor *, const dt_tensor *);

/* Best seconds of reps runs of op(a, b) after one warm-up. */
static double best_of(binop op, const char *name, const dt_tensor *a, const dt_tensor *b, int reps) {
  double best = 1e30;
  int r;
  for (r = -1; r < reps; r++) {
    double t0 = now(), t;
    dt_tensor *c = op(a, b);
    if (!c) die(name);
    if (dt_synchronize(dt_device_of(c)) != DT_OK) die("dt_synchronize");
    t = now() - t0;
    dt_release(c);
    if (r >= 0 && t < best) best = t;
  }
  return best;
}

/* c = a @ b, checked at a few elements against a dot product in double. a, b: (n, n). */
static void check_matmul(const dt_tensor *a, const dt_tensor *b, int64_t n) {
  size_t bytes = (size_t)(n * n) * sizeof(float);
  float *ha = (float *)malloc(bytes), *hb = (float *)malloc(bytes), *hc = (float *)malloc(bytes);
  dt_tensor *c = dt_matmul(a, b);
  int64_t probe[4][2], i, p;
  if (!ha || !hb || !hc) { fprintf(stderr, "bench_cpu: out of host memory\n"); exit(1); }
  if (!c) die("dt_matmul");
  if (dt_to_host(a, ha, bytes) != DT_OK || dt_to_host(b, hb, bytes) != DT_OK || dt_to_host(c, hc, bytes) != DT_OK)
    die("dt_to_host");
  probe[0][0] = 0; probe[0][1] = 0;
  probe[1][0] = n - 1; probe[1][1] = n - 1;
  probe[2][0] = n / 3; probe[2][1] = n / 2 + 1;
  probe[3][0] = n / 2 + 7; probe[3][1] = 5 % n;
  for (i = 0; i < 4; i++) {
    int64_t r = probe[i][0], col = probe[i][1];
    double s = 0, mag = 0, got = hc[r * n + col];
    for (p = 0; p < n; p++) {
      s += (double)ha[r * n + p] * hb[p * n + col];
      mag += fabs((double)ha[r * n + p] * hb[p * n + col]);
    }
    if (!(fabs(got - s) <= 1e-5 * mag + 1e-6)) {
      fprintf(stderr, "bench_cpu: wrong matmul result at (%ld, %ld): %.7g, want %.7g\n", (long)r, (long)col, got, s);
      exit(1);
    }
  }
  dt_release(c);
  free(ha); free(hb); free(hc);
}

int main(int argc, char **argv) {
  const int64_t n = 1024, len = (int64_t)1 << 24;
  int reps = argc > 1 ? atoi(argv[1]) : 10;
  dt_device cpu = dt_cpu();
  dt_tensor *a, *b;
  double s;
  if (reps < 1) reps = 1;
  dt_manual_seed(0);

  a = dt_rand(dt_shape2(n, n), cpu);
  b = dt_rand(dt_shape2(n, n), cpu);
  if (!a || !b) die("dt_rand");
  check_matmul(a, b, n);
  s = best_of(dt_matmul, "dt_matmul", a, b, reps);
  printf("devtensor matmul_f32_%ld seconds=%.6f gflops=%.1f threads=%d blas=%s\n", (long)n, s,
         2.0 * (double)n * (double)n * (double)n / s * 1e-9, threads(), BLAS);
  fflush(stdout);
  dt_release(a);
  dt_release(b);

  a = dt_rand(dt_shape1(len), cpu);
  b = dt_rand(dt_shape1(len), cpu);
  if (!a || !b) die("dt_rand");
  s = best_of(dt_add, "dt_add", a, b, reps);
  printf("devtensor add_f32_%ld seconds=%.6f gbps=%.1f threads=%d blas=%s\n", (long)len, s,
         3.0 * 4.0 * (double)len / s * 1e-9, threads(), BLAS);
  dt_release(a);
  dt_release(b);
  return 0;
}
