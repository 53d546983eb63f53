/* Exercise 1: a large computation (matrix multiplication) on the CPU and on
   the GPU, over sizes from 16 to 8192: time against size. Writes
   build/ex1_matmul_speed.csv and, when gnuplot is installed, an SVG plot.
     ex1_matmul_speed [max_size]      (default 8192; 4096 without a GPU) */
#define _POSIX_C_SOURCE 199309L
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>

/* Best time of a few matmuls of n x n on d, synchronized. */
static double time_matmul(int64_t n, dt_device d) {
  dt_tensor *a = dt_rand(dt_shape2(n, n), d), *b = dt_rand(dt_shape2(n, n), d), *c;
  double best = 1e30, t0;
  int r, reps = n <= 512 ? 5 : 2;
  if (!a || !b) { dt_release(a); dt_release(b); return -1; }
  c = dt_matmul(a, b); /* warm-up: kernels, cuBLAS, caches */
  dt_release(c);
  dt_synchronize(d);
  for (r = 0; r < reps; r++) {
    t0 = now_seconds();
    c = dt_matmul(a, b);
    dt_synchronize(d);
    if (now_seconds() - t0 < best) best = now_seconds() - t0;
    if (!c) best = -1;
    dt_release(c);
  }
  dt_release(a); dt_release(b);
  return best;
}

int main(int argc, char **argv) {
  int gpu = dt_num_gpus() > 0;
  int64_t max = argc > 1 ? atoll(argv[1]) : (gpu ? 8192 : 4096), n;
  FILE *csv = fopen("build/ex1_matmul_speed.csv", "w");
  printf("%8s %14s %14s %10s %10s\n", "size", "cpu seconds", "gpu seconds", "cpu GF/s", "gpu GF/s");
  if (csv) fprintf(csv, "size,cpu_seconds,gpu_seconds\n");
  for (n = 16; n <= max; n *= 2) {
    double flops = 2.0 * (double)n * (double)n * (double)n;
    double tc = time_matmul(n, dt_cpu()), tg = gpu ? time_matmul(n, dt_gpu(0)) : -1;
    printf("%8lld %14.6f ", (long long)n, tc);
    if (tg > 0) printf("%14.6f %10.1f %10.1f\n", tg, flops / tc * 1e-9, flops / tg * 1e-9);
    else printf("%14s %10.1f %10s\n", "-", flops / tc * 1e-9, "-");
    if (csv) { if (tg > 0) fprintf(csv, "%lld,%.9f,%.9f\n", (long long)n, tc, tg); else fprintf(csv, "%lld,%.9f,\n", (long long)n, tc); }
  }
  if (csv) fclose(csv);
  if (!gpu) printf("(no GPU: %s)\n", dt_last_error());
  printf("wrote build/ex1_matmul_speed.csv\n");
  if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    int rc = system("gnuplot -e \"set terminal svg size 640,480; set output 'build/ex1_matmul_speed.svg'; "
                    "set datafile separator ','; set logscale xy; set key top left; set xlabel 'matrix size n (n x n @ n x n)'; "
                    "set ylabel 'seconds'; plot 'build/ex1_matmul_speed.csv' using 1:2 skip 1 with linespoints title 'cpu', "
                    "'' using 1:3 skip 1 with linespoints title 'gpu'\"");
    printf(rc == 0 ? "wrote build/ex1_matmul_speed.svg\n" : "gnuplot failed; no plot\n");
  } else {
    printf("(gnuplot is not installed: no plot)\n");
  }
  return 0;
}
