/* tests/emu/cuda_runtime.h — the CUDA runtime API as devtensor uses it, run on
   the CPU: a test double, not a product. It lets devtensor_cuda.cu (compiled by
   the host C++ compiler with -DDTEMU -Itests/emu) run the whole test suite on a
   machine without a GPU, with each emulated device's streams as worker threads
   (so work really is asynchronous), kernels as functions run once per thread
   of the grid (blocks that use __syncthreads or warp shuffles run their threads
   as fibers), and cuBLAS as a plain loop. See tests/emu/emu.cpp for what it
   checks (launch configurations, copy directions and extents, streams and
   handles used on the wrong device, divergent barriers) and README.md, "Testing".

   Environment: DTEMU_GPUS (number of devices, default 1; 0: no device),
   DTEMU_MEM_MB (memory per device, default 2048), DTEMU_NO_PEER=1 (devices
   cannot reach each other: peer copies go "through the host"), DTEMU_DRIVER=none
   (no NVIDIA driver: cudaErrorInsufficientDriver, as cudart says then),
   DTEMU_LIBCUDA (the library devtensor loads to tell whether a driver is
   installed; default libcuda.so.1). */
#ifndef DTEMU_CUDA_RUNTIME_H
#define DTEMU_CUDA_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorECCUncorrectable = 214,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchTimeout = 702,
  cudaErrorPeerAccessAlreadyEnabled = 704,
  cudaErrorPeerAccessNotEnabled = 705,
  cudaErrorAssert = 710,
  cudaErrorHardwareStackError = 714,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorInvalidAddressSpace = 717,
  cudaErrorInvalidPc = 718,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureWrongThread = 908
} cudaError_t;

typedef struct dtemu_stream *cudaStream_t;
typedef struct dtemu_event *cudaEvent_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3
};

struct cudaPointerAttributes {
  enum cudaMemoryType type;
  int device;
  void *devicePointer;
  void *hostPointer;
};

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major, minor;
  int multiProcessorCount;
  int warpSize;
  int maxThreadsPerBlock;
  int maxGridSize[3];
};

enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMultiProcessorCount = 16 };

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01

#define CUDART_VERSION 13000 /* the API emulated: CUDA 13's */
enum cudaDriverEntryPointQueryResult {
  cudaDriverEntryPointSuccess = 0,
  cudaDriverEntryPointSymbolNotFound = 1,
  cudaDriverEntryPointVersionNotSufficent = 2
};
enum cudaGetDriverEntryPointFlags { cudaEnableDefault = 0 };
/* cuDeviceGet and cuDevicePrimaryCtxGetState only; the emulator's primary
   contexts exist once a call has run with their device current (CUDA 12+) */
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status);
int dtemu_context_active(int dev); /* for tests: whether device dev's primary context exists */
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int dev);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);

cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags);
cudaError_t cudaMallocHost(void **p, size_t n);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p);

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev, size_t n, cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);

cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t e);

cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);

/* stream capture and graphs */
typedef struct dtemu_graph *cudaGraph_t;
typedef struct dtemu_graph_exec *cudaGraphExec_t;
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1, cudaStreamCaptureModeRelaxed = 2 };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1, cudaStreamCaptureStatusInvalidated = 2 };
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status);
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
/* the emulator's own: the next n graph instantiations fail with cudaErrorMemoryAllocation (tests) */
void dtemu_fail_graph_instantiate(int n);
/* the name devtensor_cuda.cu dlopens to tell "no driver" from other failures */
const char *dtemu_libcuda(void);
#define DT_CU_LIBCUDA dtemu_libcuda()

#ifdef __cplusplus
} /* extern "C" */

/* ---- device code, compiled for the host ---- */

#include <cmath>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...) /* the emulator's blocks have no register file to share */
/* one copy per worker thread, which runs one block at a time: per block */
#define __shared__ static thread_local

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  /* constexpr: blockDim and gridDim need no per-thread initializer, which every use from a kernel would call */
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;

namespace dtemu {
/* A launch: checked and queued on the stream (or an error for cudaGetLastError).
   coop: the kernel uses __syncthreads or warp shuffles, so a block's threads run
   as fibers that switch at those points; otherwise they run one after another
   and such a call aborts the program (it would mean a missing annotation). */
void launch(dim3 grid, dim3 block, cudaStream_t s, bool coop, std::function<void()> body);
void syncthreads();
void shfl(const void *mine, void *out, size_t size, unsigned mask, int src_lane);

template <class... P>
struct Bound {
  dim3 grid, block;
  cudaStream_t stream;
  bool coop;
  void (*k)(P...);
  template <class... A>
  void operator()(A &&...a) const {
    /* arguments are converted to the parameters' types and copied, as CUDA does */
    std::tuple<typename std::decay<P>::type...> args(std::forward<A>(a)...);
    void (*kk)(P...) = k;
    launch(grid, block, stream, coop, [kk, args]() { std::apply(kk, args); });
  }
};
struct Launch {
  dim3 grid, block;
  cudaStream_t stream;
  bool coop;
  template <class... P>
  Bound<P...> kernel(void (*k)(P...)) const { return Bound<P...>{grid, block, stream, coop, k}; }
};
} /* namespace dtemu */

inline void __syncthreads() { dtemu::syncthreads(); }

template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int lane = (int)(tid & 31u), base = lane & ~(width - 1), src = lane + (int)delta;
  if (src >= base + width) src = lane;
  T r;
  dtemu::shfl(&v, &r, sizeof(T), mask, src);
  return r;
}

/* lane ^ lane_mask within its width-wide segment (a butterfly: every lane gets the reduction) */
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int lane = (int)(tid & 31u), base = lane & ~(width - 1), src = lane ^ lane_mask;
  if (src < base || src >= base + width) src = lane;
  T r;
  dtemu::shfl(&v, &r, sizeof(T), mask, src);
  return r;
}

/* the _rn intrinsics: one IEEE operation, rounded to nearest (build with -ffp-contract=off; the
   build that contracts, ci.mk's EMU_FMA, keeps them out of line, so that they stay unfused as on a GPU) */
#ifdef DTEMU_FMA
#define DTEMU_RN __attribute__((noinline))
#else
#define DTEMU_RN
#endif
DTEMU_RN inline float __fadd_rn(float a, float b) { return a + b; }
DTEMU_RN inline float __fmul_rn(float a, float b) { return a * b; }
DTEMU_RN inline double __dadd_rn(double a, double b) { return a + b; }
DTEMU_RN inline double __dmul_rn(double a, double b) { return a * b; }

/* atomicAdd: one atomic read-modify-write (streams run on several host threads, and a kernel's
   blocks may meet the same address); returns the old value, as CUDA's. Floats by compare-and-swap
   on their bits. */
template <class T>
inline T dtemu_atomic_add_float(T *p, T v) {
  T old, want;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do { want = old + v; } while (!__atomic_compare_exchange(p, &old, &want, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
inline float atomicAdd(float *p, float v) { return dtemu_atomic_add_float(p, v); }
inline double atomicAdd(double *p, double v) { return dtemu_atomic_add_float(p, v); }
inline int atomicAdd(int *p, int v) {
  /* CUDA's int add wraps: through unsigned, which is defined here too */
  return (int)__atomic_fetch_add(reinterpret_cast<unsigned *>(p), (unsigned)v, __ATOMIC_RELAXED);
}
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

#endif /* __cplusplus */
#endif
