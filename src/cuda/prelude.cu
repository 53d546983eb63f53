/* devtensor_cuda.cu — the CUDA backend of devtensor (cudart + cuBLAS).

   Compiled by nvcc only; it includes devtensor.h for the declarations (not the
   implementation) and exports one function, dt__cuda_backend(), that returns
   the backend table. The core checks every argument before it calls in here.

       nvcc -O2 -std=c++17 -I. -c devtensor_cuda.cu -o devtensor_cuda.o
       cc ... -DDEVTENSOR_CUDA prog.c devtensor_cuda.o -L<cuda>/lib64 -lcudart -lcublas -lstdc++ -lm

   With -DDEVTENSOR_CUDNN (and -lcudnn) convolutions go through cuDNN (src/cuda/cudnn.cu);
   without it, through im2col + cuBLAS. With -DDEVTENSOR_NCCL (and -lnccl), the collectives.

   POLICIES
   - Devices: up to 64. Every entry point that touches a device makes it current
     with cudaSetDevice and restores the caller's current device on return.
   - Streams: one non-blocking stream per device, made on first use and kept for
     the life of the process. Every kernel, cuBLAS call and copy runs on it, in
     order. Only copies to the host, synchronize() and the out-of-memory path
     wait for it. dt_cuda_stream() hands it out for the user's own kernels.
   - Memory: a caching allocator per device (guarded by a mutex per device).
     Requests are rounded up: up to 1 MiB to a size class, four per power of
     two from 512 bytes (512, 640, 768, 896, 1024, 1280, ...; 0 bytes gets a
     real block), above that to a multiple of 2 MiB (cudaMalloc's own
     granularity). A freed block goes back to the cache, keyed by its size; a
     request takes the smallest cached block of its rounded size (up to 1 MiB:
     exactly that class; above: at most 1/8 larger), and calls cudaMalloc only
     on a miss. DEVTENSOR_CUDA_NO_CACHE=1 turns the cache off (for
     compute-sanitizer). A freed block may be handed out again while the
     stream still has work queued that uses it: all work runs on the one stream
     in order, so the new owner's work comes after it (PyTorch's argument);
     peer copies order the source's stream after the copy for the same reason.
     Statistics count blocks: `allocated` is the sum of the sizes of the blocks
     handed out (rounded sizes), `reserved` all cudaMalloc'd bytes held, cached
     ones included, `peak_allocated` the highest `allocated`. The reduction
     kernels take their small scratch buffers from the same allocator, so they
     show in `allocated` while they run, and so does the 32 MiB cuBLAS
     workspace of each device (taken at its first matmul, kept; cuBLAS then
     never calls cudaMalloc itself). On a failed cudaMalloc the cache is
     freed (after the stream drains) and cudaMalloc tried once more, unless the
     request is larger than the device's memory; then DT_ERR_OUT_OF_MEMORY.
   - Host to device copies go through two pinned 8 MiB staging buffers per device
     (host memcpy into one while the other is being DMA'd), so pageable memory
     moves at pinned speed and the call returns as soon as the user's buffer has
     been read: it does not wait for the GPU. Page-locked host memory is copied
     directly and then waited for. Device to host waits.
   - GPU to GPU: cudaMemcpyPeerAsync on the destination's stream, after the
     source's queued work (an event), and the source's stream waits for the copy.
     Peer access is enabled once per pair where the hardware allows; without it
     the driver stages the copy through the host.
   - Numerics: as the CPU backend. Reductions accumulate in double (F32 too) with
     a fixed order, so they are deterministic; long rows are split over blocks
     and finished by a second kernel (no atomics). cuBLAS runs in its default
     math mode (plain FP32 for float32, no TF32) with reduced-precision reductions
     disallowed (half gemms sum in float32 to the end). Sizes given to cuBLAS must fit
     an int (else DT_ERR_UNSUPPORTED). The random kernel computes the normals in
     double like the CPU (fast-math never touches double), and the uniforms are
     bit-identical to the CPU's.
   - Errors: never abort or print; a failing function leaves a message in a
     thread-local buffer (last_error) and returns DT_ERR_BACKEND (or
     DT_ERR_OUT_OF_MEMORY / DT_ERR_UNSUPPORTED). */

#define DEVTENSOR_BACKEND /* the backend contract (dt__backend and its helpers) */
#include "devtensor.h"

#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <math_constants.h>
#ifdef DEVTENSOR_NCCL
#include <nccl.h>
#endif
#ifdef DEVTENSOR_CUDNN
#include <cudnn.h>
#endif
#ifndef _WIN32
#include <dlfcn.h>
#endif

#include <atomic>
#include <climits>
#include <new>
#include <cstdlib>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {
