/* bench/launch_floor.cu: the floor under devtensor's per-op overhead on this machine: the host
   time of N launches of an empty kernel on a non-blocking stream (what every dt_add on a GPU
   does at least once), beside N launches of a 100x100 add kernel, then the time to drain.
   Build: make CUDA=1 build/launch_floor (nvcc, no devtensor); bench/run_gpu.sh runs it, and
   compare_gpu.py sets devtensor's per-op overhead beside its `cudalaunch add_overhead_100x100`
   line: the median over the repetitions of the add kernel's wall time per launch, to the
   stream drained, as bench_gpu.c times 1000 dt_add. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

namespace {
__global__ void k_empty() {}
__global__ void k_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
double now() { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }
}

int main() {
  const int N = 1000, REPS = 21, n = 100 * 100;
  cudaStream_t st;
  float *a, *b, *c;
  if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) { printf("SKIP: no GPU\n"); return 0; }
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&c, n * 4);
  for (int kind = 0; kind < 2; kind++) {
    double best_enq = 1e9, best_all = 1e9, all[REPS];
    for (int r = 0; r < REPS; r++) {
      cudaStreamSynchronize(st);
      double t0 = now();
      for (int i = 0; i < N; i++) {
        if (kind == 0) k_empty<<<1, 1, 0, st>>>();
        else k_add<<<(n + 255) / 256, 256, 0, st>>>(a, b, c, n);
      }
      double t1 = now();
      cudaStreamSynchronize(st);
      double t2 = now();
      if (r > 2 && (t1 - t0) < best_enq) best_enq = t1 - t0;
      if (r > 2 && (t2 - t0) < best_all) best_all = t2 - t0;
      all[r] = t2 - t0;
    }
    if (kind == 1) { /* the timed repetitions' median, in bench_gpu.c's form */
      qsort(all + 3, REPS - 3, sizeof(double), by_value);
      printf("cudalaunch add_overhead_100x100 seconds_per_op=%.9f best=%.9f ops=%d reps=%d stat=median\n",
             all[3 + (REPS - 3) / 2] / N, best_all / N, N, REPS - 3);
    }
    printf("launch_floor %s enqueue_us_per_launch=%.3f total_us_per_launch=%.3f (best of %d, %d launches)\n",
           kind == 0 ? "empty_kernel" : "add_100x100", best_enq / N * 1e6, best_all / N * 1e6, REPS - 3, N);
  }
  printf("launch_floor: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
