/* Exercise 4: two matrix multiplications on two GPUs at the same time, versus
   both one after another on one GPU; prints the speed-up. With fewer than two
   GPUs it says so and runs the one-device baseline.
     ex4_two_gpus [size] */
#define _POSIX_C_SOURCE 199309L
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* reps matmuls of a @ b on a's device, queued without waiting. */
static int queue(dt_tensor *a, dt_tensor *b, int reps) {
  int r;
  for (r = 0; r < reps; r++) {
    dt_tensor *c = dt_matmul(a, b);
    if (!c) return 0;
    dt_release(c);
  }
  return 1;
}

#define USAGE "usage: ex4_two_gpus [size]   (size >= 1; default 8192, 512 without a GPU)"

int main(int argc, char **argv) {
  int ngpu = dt_num_gpus(), reps = 10;
  int64_t n = argc > 1 ? atoll(argv[1]) : (ngpu ? 8192 : 512);
  dt_device d0 = dt_try_gpu(0), d1 = dt_try_gpu(1);
  dt_tensor *a0, *b0, *a1, *b1;
  double t0, one, two = 0;
  char s0[32], s1[32];
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) { printf("%s\n", USAGE); return 0; }
  if (argc > 2 || (argc > 1 && strspn(argv[1], "0123456789") != strlen(argv[1])) || n < 1) {
    fprintf(stderr, "ex4: bad arguments\n%s\n", USAGE);
    return 2;
  }
  a0 = dt_rand(dt_shape2(n, n), d0); b0 = dt_rand(dt_shape2(n, n), d0);
  if (!a0 || !b0) { fprintf(stderr, "ex4: %s\n", dt_last_error()); return 1; }
  queue(a0, b0, 1); dt_synchronize(d0); /* warm-up */
  /* baseline: 2 x reps matmuls one after another on one device */
  t0 = now_seconds();
  if (!queue(a0, b0, 2 * reps)) { fprintf(stderr, "ex4: %s\n", dt_last_error()); return 1; }
  dt_synchronize(d0);
  one = now_seconds() - t0;
  printf("%-46s %10s\n", "2 x 10 matmuls", "seconds");
  printf("%-46s %10.4f\n", "one after another on one device", one);
  if (ngpu < 2) {
    printf("only %d GPU%s: the two-GPU run needs two (the baseline above ran on %s)\n", ngpu, ngpu == 1 ? "" : "s",
           dt_device_str(d0, s0, sizeof s0));
    dt_release(a0); dt_release(b0);
    return 0;
  }
  a1 = dt_to(a0, d1); b1 = dt_to(b0, d1);
  queue(a1, b1, 1); dt_synchronize(d1);
  /* both devices at once: the launches are asynchronous, so queueing on cuda:0 then cuda:1 overlaps them */
  t0 = now_seconds();
  if (!queue(a0, b0, reps) || !queue(a1, b1, reps)) { fprintf(stderr, "ex4: %s\n", dt_last_error()); return 1; }
  dt_synchronize(d0); dt_synchronize(d1);
  two = now_seconds() - t0;
  printf("%-46s %10.4f\n", "half on each of two GPUs, at the same time", two);
  printf("%s + %s: speed-up %.2fx (n = %lld)\n", dt_device_str(d0, s0, sizeof s0), dt_device_str(d1, s1, sizeof s1), one / two, (long long)n);
  dt_release(a0); dt_release(b0); dt_release(a1); dt_release(b1);
  return 0;
}
