/* Your own CUDA kernel on a devtensor tensor.

   A .cu file may hold devtensor's implementation too (nvcc compiles it as C++).
   dt_data_ptr() gives the tensor's device pointer and dt_cuda_stream() the
   device's stream: launch on that stream and the kernel runs after everything
   devtensor has queued for the tensor, and before everything it queues later
   (dt_print below waits for it). On a machine without a GPU the program takes
   the CPU and scales with dt_mul_scalar instead, and exits with status 77 (the
   test suites' "skipped"): no kernel of its own ran.

     nvcc -I. -DDEVTENSOR_CUDA examples/own_kernel.cu devtensor_cuda.cu -lcublas -o own_kernel */
#define DEVTENSOR_IMPLEMENTATION
#ifndef DEVTENSOR_CUDA
#define DEVTENSOR_CUDA
#endif
#include "devtensor.h"

#include <cuda_runtime.h>
#include <stdio.h>

/* x: (n,) *= s */
__global__ void scale(float *x, int64_t n, float s) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    x[i] *= s;
}

int main(void) {
  char name[32], why[1024] = "";
  dt_device dev;
  dt_tensor *x, *y;
  if (dt_num_gpus() == 0) snprintf(why, sizeof why, "%s", dt_last_error());
  dev = dt_try_gpu(0);
  x = dt_arange(0, 6, 1, DT_F32, dev);
  if (!x) { fprintf(stderr, "own_kernel: %s\n", dt_last_error()); return 1; }
  printf("x on %s:\n", dt_device_str(dev, name, sizeof name));
  dt_print(x);

  if (dev.type == DT_CUDA) {
    int64_t n = dt_numel(x);
    int block = 256, grid = (int)((n + block - 1) / block);
    cudaStream_t stream = (cudaStream_t)dt_cuda_stream(dev);
    cudaError_t e;
    /* the kernel runs on the device that owns the tensor */
    cudaSetDevice(dev.index);
    scale<<<grid, block, 0, stream>>>((float *)dt_data_ptr(x), n, 10.0f);
    if ((e = cudaGetLastError()) != cudaSuccess) {
      fprintf(stderr, "own_kernel: launch failed: %s\n", cudaGetErrorString(e));
      dt_release(x);
      return 1;
    }
    y = dt_retain(x); /* scaled in place */
    printf("after scale<<<%d, %d, 0, dt_cuda_stream(dev)>>> (x * 10):\n", grid, block);
  } else {
    printf("no GPU (%s)\nso dt_mul_scalar scales it on the CPU instead (x * 10):\n", why);
    y = dt_mul_scalar(x, 10.0);
    if (!y) { fprintf(stderr, "own_kernel: %s\n", dt_last_error()); dt_release(x); return 1; }
  }
  dt_print(y); /* copies to the host after the kernel: same stream */
  dt_release(y);
  dt_release(x);
  return dev.type == DT_CUDA ? 0 : 77;
}
