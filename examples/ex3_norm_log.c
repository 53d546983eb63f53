/* Exercise 3: 1000 matrix-matrix multiplications of 100 x 100, logging the
   Frobenius norm of each result: read one at a time (a host transfer per
   step), versus kept on the device and transferred once at the end.
     ex3_norm_log [steps] */
#define _POSIX_C_SOURCE 199309L
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE "usage: ex3_norm_log [steps]   (steps >= 1; default 1000)"

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 1000, i;
  dt_device d = dt_try_gpu(0);
  dt_tensor *a, *b, **norms, *log;
  double *host_log, t0, t_each, t_once, diff = 0;
  float *back;
  char dev[32];
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) { printf("%s\n", USAGE); return 0; }
  if (argc > 2 || (argc > 1 && strspn(argv[1], "0123456789") != strlen(argv[1])) || steps < 1) {
    fprintf(stderr, "ex3: bad arguments\n%s\n", USAGE);
    return 2;
  }
  host_log = (double *)malloc(sizeof(double) * (size_t)steps);
  back = (float *)malloc(sizeof(float) * (size_t)steps);
  if (!host_log || !back) { fprintf(stderr, "ex3: out of memory for %d steps\n", steps); free(host_log); free(back); return 1; }
  dt_manual_seed(0);
  a = dt_randn(dt_shape2(100, 100), d);
  b = dt_mul_scalar(a, 0.1);
  norms = (dt_tensor **)malloc(sizeof(dt_tensor *) * (size_t)steps);
  if (!a || !b || !norms) { fprintf(stderr, "ex3: %s\n", dt_last_error()); return 1; }

  /* warm-up */
  { dt_tensor *c = dt_matmul(a, b), *n = dt_norm(c); dt_item(n); dt_release(c); dt_release(n); }

  /* (a) a host read per step: the log is a host array */
  t0 = now_seconds();
  for (i = 0; i < steps; i++) {
    dt_tensor *c = dt_matmul(a, b), *n = dt_norm(c);
    host_log[i] = dt_item(n); /* waits for the GPU every step */
    dt_release(c); dt_release(n);
  }
  t_each = now_seconds() - t0;

  /* (b) the log stays on the device, read once */
  t0 = now_seconds();
  for (i = 0; i < steps; i++) {
    dt_tensor *c = dt_matmul(a, b);
    norms[i] = dt_norm(c); /* 0-d, on the device */
    dt_release(c);
  }
  log = dt_stack((const dt_tensor *const *)norms, steps);
  dt_to_host(log, back, sizeof(float) * (size_t)steps); /* the one transfer */
  t_once = now_seconds() - t0;
  for (i = 0; i < steps; i++) { double e = back[i] - host_log[i]; diff += e < 0 ? -e : e; dt_release(norms[i]); }

  printf("%-44s %12s %14s\n", "norm logging, on", "seconds", "per step (us)");
  printf("%-44s %12.6f %14.2f\n", "one host read per step (dt_item)", t_each, 1e6 * t_each / steps);
  printf("%-44s %12.6f %14.2f\n", "kept on the device, one transfer (dt_stack)", t_once, 1e6 * t_once / steps);
  printf("device %s, %d steps, speed-up %.2fx, logs agree: %s\n", dt_device_str(d, dev, sizeof dev), steps,
         t_each / t_once, diff == 0 ? "yes" : "no");
  dt_release(a); dt_release(b); dt_release(log);
  free(norms); free(host_log); free(back);
  return diff == 0 ? 0 : 1;
}
