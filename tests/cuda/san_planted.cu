/* Planted errors for compute-sanitizer: before a clean report on devtensor's
   programs counts, bench/gpu_session.sh's san phase runs each tool, with the same options
   and kernel-name filter, over this program and requires that it reports the error planted
   for it, and that it reports nothing on the clean run (none).

     make CUDA=1 build/cuda/san_planted
     build/cuda/san_planted oob|race|uninit|sync|none

   The kernels live in an anonymous namespace, as devtensor_cuda.cu's do, so that
   --kernel-name kns=_GLOBAL__N_ selects them exactly as it selects devtensor's: a filter
   that matched nothing would leave the planted error unreported and fail the proof.
     oob     memcheck: an off-by-one global write, one float past a cudaMalloc'd block
     race    racecheck: shared memory written by one warp, read by the other, no barrier
     uninit  initcheck: a kernel reads cudaMalloc'd memory nothing ever wrote
     sync    synccheck: __syncthreads() reached by half of a warp (divergent barrier)
     none    the same kinds of work done right: every tool must report nothing
   The program exits 0 whatever the kernels do (finding the error is the tool's job; a tool
   may abort the faulty kernel, which the program prints); 1 when there is no GPU, 2 on a
   bad argument. sync is undefined behaviour outside synccheck (it may hang on a bare run):
   gpu_session.sh runs it only under the tool, with a timeout. Not part of make test: it is for a machine with a GPU and the tools. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

namespace {

const int N = 256;   /* floats per buffer */
const int BLOCK = 64; /* two warps */

/* memcheck: the classic i <= n bound writes p[n], 4 bytes past the allocation */
__global__ void planted_oob(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) p[i] = (float)i;
}

/* racecheck: each thread writes its slot, then reads the slot of the thread 32 away (the
   other warp) with the __syncthreads() between the two left out */
__global__ void planted_race(int *out) {
  __shared__ int s[BLOCK];
  int t = threadIdx.x;
  s[t] = t * 3;
  out[t] = s[(t + 32) % BLOCK];
}

/* initcheck: src comes from cudaMalloc and nothing wrote it */
__global__ void planted_uninit(const float *src, float *dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] + 1.0f;
}

/* synccheck: a block-wide barrier in a branch only lanes 0-15 of the one warp take */
__global__ void planted_sync(int *out) {
  int t = threadIdx.x;
  if (t < 16) {
    out[t] = t;
    __syncthreads();
  }
  out[32 + t] = t;
}

/* none: every element written in bounds, initialized input, the barrier in place and
   reached by every thread, a full-warp __syncwarp() that every lane reaches */
__global__ void clean_kernel(const float *src, float *dst, int n) {
  __shared__ float s[BLOCK];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? src[i] : 0.0f;
  __syncthreads();
  float v = s[(t + 32) % BLOCK];
  __syncwarp();
  if (i < n) dst[i] = v + 1.0f;
}

} /* namespace */

/* the status of a call, printed; the program goes on (a tool may have killed a kernel) */
static void note(const char *what, cudaError_t e) {
  printf("%s: %s\n", what, e == cudaSuccess ? "ok" : cudaGetErrorString(e));
}

int main(int argc, char **argv) {
  const char *mode = argc == 2 ? argv[1] : "";
  if (strcmp(mode, "oob") && strcmp(mode, "race") && strcmp(mode, "uninit") && strcmp(mode, "sync") &&
      strcmp(mode, "none")) {
    fprintf(stderr, "usage: san_planted oob|race|uninit|sync|none\n");
    return 2;
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1) {
    fprintf(stderr, "san_planted: no CUDA device (cudaGetDeviceCount: %s, %d devices): it needs a GPU\n",
            e == cudaSuccess ? "ok" : cudaGetErrorString(e), count);
    return 1;
  }
  float *a = NULL, *b = NULL;
  int *ia = NULL;
  note("cudaMalloc", cudaMalloc((void **)&a, N * sizeof(float)));
  note("cudaMalloc", cudaMalloc((void **)&b, N * sizeof(float)));
  note("cudaMalloc", cudaMalloc((void **)&ia, 2 * BLOCK * sizeof(int)));
  note("cudaMemset", cudaMemset(ia, 0, 2 * BLOCK * sizeof(int)));
  if (!strcmp(mode, "oob")) {
    printf("planted: out-of-bounds global write, a[%d] of a %d-float cudaMalloc block (memcheck)\n", N, N);
    fflush(stdout);
    planted_oob<<<(N + 1 + BLOCK - 1) / BLOCK, BLOCK>>>(a, N);
  } else if (!strcmp(mode, "race")) {
    printf("planted: shared-memory write-read race between two warps, no __syncthreads() (racecheck)\n");
    fflush(stdout);
    planted_race<<<1, BLOCK>>>(ia);
  } else if (!strcmp(mode, "uninit")) {
    printf("planted: read of %d floats cudaMalloc'd and never written (initcheck)\n", N);
    fflush(stdout);
    planted_uninit<<<N / BLOCK, BLOCK>>>(a, b, N);
  } else if (!strcmp(mode, "sync")) {
    printf("planted: __syncthreads() reached by lanes 0-15 of a 32-thread block (synccheck)\n");
    fflush(stdout);
    planted_sync<<<1, 32>>>(ia);
  } else {
    printf("planted: nothing (the clean run: every tool must report 0 errors)\n");
    fflush(stdout);
    note("cudaMemset", cudaMemset(a, 0, N * sizeof(float)));
    clean_kernel<<<N / BLOCK, BLOCK>>>(a, b, N);
  }
  note("launch", cudaGetLastError());
  note("cudaDeviceSynchronize", cudaDeviceSynchronize());
  if (!strcmp(mode, "none")) {
    float h[N];
    e = cudaMemcpy(h, b, sizeof h, cudaMemcpyDeviceToHost);
    note("cudaMemcpy", e);
    if (e == cudaSuccess) printf("clean result: b[0] = %g, b[%d] = %g (1 expected)\n", h[0], N - 1, h[N - 1]);
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(ia);
  printf("san_planted %s: done (exit status 0 whatever the kernel did: the tool reports the error)\n", mode);
  return 0;
}
