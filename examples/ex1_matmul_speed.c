/* Exercise 1: a large computation (matrix multiplication) on the CPU and on
   the GPU, over sizes from 16 to 8192: time against size. Writes the times to
   a CSV file and, when gnuplot is installed, an SVG plot next to it (the CSV's
   name with .svg for .csv).
     ex1_matmul_speed [max_size [csv_path]]
       max_size: default 8192; 4096 without a GPU
       csv_path: default build/ex1_matmul_speed.csv (relative to where it runs) */
#define _POSIX_C_SOURCE 199309L
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include "timing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    double t;
    t0 = now_seconds();
    c = dt_matmul(a, b);
    dt_synchronize(d);
    t = now_seconds() - t0;
    if (t < best) best = t;
    if (!c) best = -1;
    dt_release(c);
  }
  dt_release(a); dt_release(b);
  return best;
}

/* The plot's path: the CSV's with .svg for .csv (or .svg added). */
static void svg_path(const char *csv, char *out, size_t n) {
  size_t len = strlen(csv);
  if (len >= 4 && strcmp(csv + len - 4, ".csv") == 0) snprintf(out, n, "%.*s.svg", (int)(len - 4), csv);
  else snprintf(out, n, "%s.svg", csv);
}

#define USAGE "usage: ex1_matmul_speed [max_size [csv_path]]   (max_size >= 16; default 8192, 4096 without a GPU)"

int main(int argc, char **argv) {
  int gpu = dt_num_gpus() > 0, csv_ok;
  char why[1024], svg[1024], cmd[4096];
  int64_t max = argc > 1 ? atoll(argv[1]) : (gpu ? 8192 : 4096), n;
  const char *path = argc > 2 ? argv[2] : "build/ex1_matmul_speed.csv";
  FILE *csv;
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) { printf("%s\n", USAGE); return 0; }
  if (argc > 3 || (argc > 1 && (strspn(argv[1], "0123456789") != strlen(argv[1]) || max < 16))) {
    fprintf(stderr, "ex1: bad arguments\n%s\n", USAGE);
    return 2;
  }
  snprintf(why, sizeof why, "%s", dt_last_error());
  dt_clear_error();
  if (!(csv = fopen(path, "w"))) fprintf(stderr, "ex1: cannot write %s: %s\n", path, strerror(errno));
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
  if (!gpu) printf("(no GPU: %s)\n", why);
  /* written only when every write and the close succeeded */
  csv_ok = csv && !ferror(csv);
  if (csv && fclose(csv) != 0) csv_ok = 0;
  if (!csv_ok) {
    if (csv) fprintf(stderr, "ex1: writing %s failed: %s\n", path, strerror(errno));
    printf("%s not written, so no plot\n", path);
    return 1;
  }
  printf("wrote %s\n", path);
  svg_path(path, svg, sizeof svg);
  if (strpbrk(path, "'\"\\$`") || strlen(path) > 1000) {
    printf("(no plot: the path is over 1000 characters or holds a quote, backslash, $ or `)\n");
  } else if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    int rc;
    snprintf(cmd, sizeof cmd,
             "gnuplot -e \"set terminal svg size 640,480; set output '%s'; "
             "set datafile separator ','; set logscale xy; set key top left; set xlabel 'matrix size n (n x n @ n x n)'; "
             "set ylabel 'seconds'; plot '%s' using 1:2 skip 1 with linespoints title 'cpu', "
             "'' using 1:3 skip 1 with linespoints title 'gpu'\"",
             svg, path);
    rc = system(cmd);
    if (rc == 0) printf("wrote %s\n", svg);
    else printf("gnuplot failed; no plot\n");
  } else {
    printf("(gnuplot is not installed: no plot)\n");
  }
  return 0;
}
