/* bench/bench_half_ew.c — float16 and bfloat16 elementwise operations and sums on the CPU, with
   float32's beside them, and PyTorch's in the same run when a Python with torch is given
   (PyTorch with out=, so that neither side pays for a fresh result's pages: devtensor's come
   from its allocator's cache).

     cc -O2 -fopenmp bench/bench_half_ew.c -o bench_half_ew -lm
     nice ./bench_half_ew [n [python]]      (default 2^24 elements; best of 10 each; PyTorch 1.13
                                            has no float16 exp on the CPU: 0 there) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  const int64_t n = argc > 1 ? atoll(argv[1]) : (int64_t)1 << 24;
  const dt_dtype ts[3] = {DT_F32, DT_BF16, DT_F16};
  int k, r, op;
  for (k = 0; k < 3; k++) {
    dt_tensor *fa = dt_randn(dt_shape1(n), dt_cpu()), *fb = dt_randn(dt_shape1(n), dt_cpu());
    dt_tensor *a = fa ? dt_cast(fa, ts[k]) : NULL, *b = fb ? dt_cast(fb, ts[k]) : NULL;
    double best[3] = {1e30, 1e30, 1e30};
    if (!a || !b) { fprintf(stderr, "bench_half_ew: %s\n", dt_last_error()); return 1; }
    for (r = 0; r < 11; r++)
      for (op = 0; op < 3; op++) { /* the first round warms the caches and the allocator */
        double t0 = now(), t;
        dt_tensor *y = NULL;
        y = op == 0 ? dt_add(a, b) : op == 1 ? dt_sum(a) : dt_exp(a);
        t = now() - t0;
        dt_release(y);
        if (r > 0 && t < best[op]) best[op] = t;
      }
    printf("devtensor %-9s n %lld: add %.2f ms, sum %.2f ms, exp %.2f ms\n", dt_dtype_name(ts[k]), (long long)n,
           best[0] * 1e3, best[1] * 1e3, best[2] * 1e3);
    dt_release(fa); dt_release(fb); dt_release(a); dt_release(b);
  }
  if (argc > 2) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s -c \"import torch,time\nn=%lld\nfor th in (1,2):\n torch.set_num_threads(th)\n for dt in (torch.float32,torch.bfloat16,torch.float16):\n"
             "  a=torch.randn(n).to(dt);b=torch.randn(n).to(dt);c=torch.empty(n,dtype=dt);r=[]\n"
             "  for f in (lambda:torch.add(a,b,out=c),lambda:a.sum(),lambda:torch.exp(a,out=c) if dt!=torch.float16 else None):\n"
             "   bt=1e9\n   for i in range(11):\n    t0=time.perf_counter();f();t=time.perf_counter()-t0\n    bt=min(bt,t) if i else bt\n   r.append(bt*1e3)\n"
             "  print('torch-%%dt     %%-9s n %%d: add %%.2f ms, sum %%.2f ms, exp %%.2f ms'%%(th,str(dt)[6:],n,*r))\"",
             argv[2], (long long)n);
    fflush(stdout);
    if (system(cmd) != 0) return 1;
  }
  return 0;
}
