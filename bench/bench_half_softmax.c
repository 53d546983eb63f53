/* The CPU's bfloat16 softmax and argmax over a (4096, 4096) tensor: best of 7.
     cc -O2 -fopenmp -I. bench/bench_half_softmax.c -o build/bench_half_softmax -lm && ./build/bench_half_softmax */
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
  double best[3] = {1e9, 1e9, 1e9};
  int r, k;
  dt_tensor *f, *a;
  dt_manual_seed(1);
  f = dt_randn(dt_shape2(4096, 4096), dt_cpu());
  a = f ? dt_cast(f, DT_BF16) : NULL;
  if (!a) { fprintf(stderr, "bench_half_softmax: %s\n", dt_last_error()); return 1; }
  for (r = 0; r < 7; r++)
    for (k = 0; k < 3; k++) {
      double t0 = now();
      dt_tensor *y = k == 0 ? dt_softmax(a, 1) : k == 1 ? dt_argmax(a, 1) : dt_softmax(a, 0);
      double t = now() - t0;
      if (!y) { fprintf(stderr, "bench_half_softmax: %s\n", dt_last_error()); return 1; }
      dt_release(y);
      if (t < best[k]) best[k] = t;
    }
  printf("bfloat16 (4096, 4096): softmax over dim 1 %.2f ms, argmax over dim 1 %.2f ms, softmax over dim 0 %.2f ms\n",
         best[0] * 1e3, best[1] * 1e3, best[2] * 1e3);
  dt_release(a); dt_release(f);
  return 0;
}
