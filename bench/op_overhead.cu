/* bench/op_overhead.cu: where devtensor's per-op time on a GPU goes beyond a bare <<<>>> launch.
   In one process, interleaved repetition by repetition, 1000 calls each on cuda:0's stream
   (F32 (100, 100)): a bare add kernel; the same with the cudaGetDevice and cudaGetLastError
   that every backend entry makes; dt_axpy_ in place (checks and launch, no allocation);
   dt_add + dt_release (bench_gpu's per-op row); dt_empty + dt_release (no launch).
   Median and best per call over 15 repetitions. Not part of make bench-gpu (information):
     make CUDA=1 build/op_overhead && ./build/op_overhead */
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__global__ void k_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
static double now() { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main() {
  const int N = 1000, R = 15, M = 5, n = 10000;
  dt_device g = {DT_CUDA, 0};
  dt_tensor *a = dt_full(dt_shape2(100, 100), 1.0, g), *b = dt_full(dt_shape2(100, 100), 2.0, g), *c = dt_full(dt_shape2(100, 100), 0.0, g);
  if (!a || !b || !c) { printf("SKIP: no GPU (%s)\n", dt_last_error()); return 0; }
  cudaStream_t st = (cudaStream_t)dt_cuda_stream(g);
  float *pa = (float *)dt_data_ptr(a), *pb = (float *)dt_data_ptr(b), *pc = (float *)dt_data_ptr(c);
  const char *names[M] = {"bare <<<>>> on dt's stream", "bare + cudaGetDevice + cudaGetLastError", "dt_axpy_ (in place)",
                          "dt_add + dt_release", "dt_empty + dt_release (no launch)"};
  double t[M][R];
  for (int r = -2; r < R; r++)
    for (int m = 0; m < M; m++) {
      dt_synchronize(g);
      double t0 = now();
      for (int i = 0; i < N; i++) {
        if (m == 0) k_add<<<(n + 255) / 256, 256, 0, st>>>(pa, pb, pc, n);
        else if (m == 1) { int d; cudaGetDevice(&d); k_add<<<(n + 255) / 256, 256, 0, st>>>(pa, pb, pc, n); (void)cudaGetLastError(); }
        else if (m == 2) dt_axpy_(c, 1.0, a);
        else if (m == 3) dt_release(dt_add(a, b));
        else dt_release(dt_empty(dt_shape2(100, 100), DT_F32, g));
      }
      dt_synchronize(g);
      if (r >= 0) t[m][r] = (now() - t0) / N;
    }
  for (int m = 0; m < M; m++) {
    qsort(t[m], R, sizeof(double), cmp);
    printf("%-45s median %.3f us  best %.3f us\n", names[m], t[m][R / 2] * 1e6, t[m][0] * 1e6);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
