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

/* ---- src/cuda/errors.cu ---- */
constexpr int kMaxDevices = 64;
thread_local char g_err[512];

__attribute__((format(printf, 1, 2))) void set_err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
}

/* Errors that poison the process's CUDA context: a kernel faulted earlier, and
   every later call on that context returns the same error, whichever it is. */
const char *sticky_note(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction: case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc: case cudaErrorAssert: case cudaErrorLaunchTimeout: case cudaErrorECCUncorrectable:
      return " (an earlier GPU kernel faulted asynchronously; the CUDA context is unusable and every later GPU "
             "call fails: restart the process, and run it under compute-sanitizer to find the kernel)";
    default: return "";
  }
}

/* A CUDA runtime failure: "what failed: CUDA's reason". Clears the runtime's
   last-error state so a non-sticky error is not blamed on the next launch. */
dt_status cuda_fail(const char *what, cudaError_t e) {
  (void)cudaGetLastError();
  set_err("%s failed: %s%s", what, cudaGetErrorString(e), sticky_note(e));
  return DT_ERR_BACKEND;
}

dt_status blas_fail(const char *what, cublasStatus_t s) {
  (void)cudaGetLastError();
  set_err("%s failed: %s", what, cublasGetStatusName(s));
  return DT_ERR_BACKEND;
}

/* After a kernel launch: the launch's own error, cleared. */
dt_status launched(const char *kernel) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return DT_OK;
  set_err("kernel launch failed (%s): %s%s", kernel, cudaGetErrorString(e), sticky_note(e));
  return DT_ERR_BACKEND;
}

/* dt__dtype_str, dt__dtype_bytes and dt__bytes_str come from devtensor.h,
   shared with the core (whose own functions may be static in a user's file). */

/* ---- src/cuda/device.cu ---- */
/* Whether `dev`'s primary context exists (PyTorch's hasPrimaryContext): the
   driver's cuDevicePrimaryCtxGetState, reached through the runtime, so no
   -lcuda. Where it cannot be asked, "yes". */
bool has_primary_context(int dev) {
  typedef int (*DeviceGetFn)(int *, int);                   /* cuDeviceGet(CUdevice *, int ordinal) */
  typedef int (*CtxStateFn)(int, unsigned int *, int *);    /* cuDevicePrimaryCtxGetState(CUdevice, flags, active) */
  struct Fns { DeviceGetFn get; CtxStateFn state; };
  static const Fns fns = [] {
    Fns f = {nullptr, nullptr};
    void *p = nullptr, *q = nullptr;
    cudaDriverEntryPointQueryResult r1 = cudaDriverEntryPointSymbolNotFound, r2 = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion("cuDeviceGet", &p, 12000, cudaEnableDefault, &r1) != cudaSuccess ||
        cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &q, 12000, cudaEnableDefault, &r2) != cudaSuccess) {
#elif CUDART_VERSION >= 12000
    if (cudaGetDriverEntryPoint("cuDeviceGet", &p, cudaEnableDefault, &r1) != cudaSuccess ||
        cudaGetDriverEntryPoint("cuDevicePrimaryCtxGetState", &q, cudaEnableDefault, &r2) != cudaSuccess) {
#else /* before CUDA 12, cudaSetDevice made no context: restoring is free */
    if (true) {
#endif
      (void)cudaGetLastError();
      return f;
    }
    if (r1 == cudaDriverEntryPointSuccess && r2 == cudaDriverEntryPointSuccess && p && q) {
      f.get = reinterpret_cast<DeviceGetFn>(p);
      f.state = reinterpret_cast<CtxStateFn>(q);
    }
    return f;
  }();
  int d = -1, active = 1;
  unsigned int flags = 0;
  if (!fns.get || !fns.state || fns.get(&d, dev) != 0 || fns.state(d, &flags, &active) != 0) return true;
  return active != 0;
}

/* Makes `dev` current for a scope and restores the caller's device after,
   unless that device has no CUDA context yet: since CUDA 12, cudaSetDevice
   creates one (hundreds of MiB), so a thread that never chose a device and
   works only on cuda:1 would otherwise make a context on cuda:0 at every
   call. It stays on `dev` then, as PyTorch's device guards do. */
class DeviceGuard {
 public:
  explicit DeviceGuard(int dev) {
    if (cudaGetDevice(&orig_) != cudaSuccess) { (void)cudaGetLastError(); orig_ = -1; }
    cur_ = orig_;
    err_ = set(dev);
  }
  ~DeviceGuard() {
    if (orig_ >= 0 && cur_ != orig_ && has_primary_context(orig_) && cudaSetDevice(orig_) != cudaSuccess)
      (void)cudaGetLastError();
  }
  cudaError_t set(int dev) {
    if (dev == cur_) return cudaSuccess;
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess) { (void)cudaGetLastError(); return e; }
    cur_ = dev;
    return cudaSuccess;
  }
  cudaError_t error() const { return err_; }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

 private:
  int orig_ = -1, cur_ = -1;
  cudaError_t err_ = cudaSuccess;
};

constexpr size_t kStageBytes = (size_t)8 << 20; /* per staging buffer; two per device */

struct DevState {
  /* lazy init: stream, cuBLAS handle */
  std::mutex init_mu;
  std::atomic<bool> ready{false};
  std::atomic<bool> blas_ready{false};
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  std::mutex blas_mu;
  int sms = 0;
  /* caching allocator */
  std::mutex mu;
  std::multimap<size_t, void *> cache;     /* block size -> free block */
  std::unordered_map<void *, size_t> live; /* block handed out -> its size */
  size_t allocated = 0, reserved = 0, peak = 0;
  /* pinned staging for host copies */
  std::mutex stage_mu;
  bool stage_tried = false, stage_ok = false;
  char *stage[2] = {nullptr, nullptr};
  cudaEvent_t stage_ev[2] = {nullptr, nullptr};
  int stage_next = 0; /* the buffer the next host-to-device chunk takes (they alternate across calls) */
  /* indexing: dt_index_select's error record in device memory (an IndexErr, made at
     the first index_select, kept), and whether one ran since the record was last read */
  void *index_err = nullptr;
  std::atomic<bool> index_pending{false};
  /* cross-entropy's label check: {1 + which (0: none), row, label, c} on the device, read at the next
     synchronizing call after a cross-entropy (pending) */
  std::mutex label_mu;
  int64_t *label_rec = nullptr;
  std::atomic<bool> label_pending{false};
  /* graphs (graph.cu): the stream is being captured; blocks given back meanwhile stay in
     cap_kept (reused by the same capture, then the graph's); cap_failed: one could not be kept */
  bool capturing = false, cap_failed = false;
  std::multimap<size_t, void *> cap_kept;
};

/* While `capturing` (the device's stream is captured), the calling thread's capture
   interaction mode is relaxed for this object's life: cudaMalloc is among the "potentially
   unsafe" calls a thread-local or global capture forbids the capturing thread (the call fails
   and the capture is invalidated), yet a captured call may need a block the cache lacks. The
   memory is not part of the graph; the allocator keeps it for the graph (graph.cu). PyTorch's
   caching allocator does the same. */
struct RelaxCapture {
  bool on;
  cudaStreamCaptureMode prev = cudaStreamCaptureModeRelaxed;
  explicit RelaxCapture(bool capturing) : on(capturing) {
    if (on && cudaThreadExchangeStreamCaptureMode(&prev) != cudaSuccess) {
      (void)cudaGetLastError();
      on = false;
    }
  }
  ~RelaxCapture() {
    if (on && cudaThreadExchangeStreamCaptureMode(&prev) != cudaSuccess) (void)cudaGetLastError();
  }
  RelaxCapture(const RelaxCapture &) = delete;
  RelaxCapture &operator=(const RelaxCapture &) = delete;
};

/* The devices whose stream this thread is capturing (bit d: cuda:d), from cu_graph_begin to
   cu_graph_end. CUDA's rule for a thread-local capture is the thread's, not the device's: the
   capturing thread may make no "potentially unsafe" call (cudaMalloc, cudaFree, a device-wide
   wait) on any device until the capture ends, and one such call invalidates it. */
thread_local uint64_t t_capturing = 0;

/* Whether this thread is capturing a device other than dev. Work on dev is then none of that
   capture's (the core refuses every copy between a captured device and another), so its
   allocations, frees and waits may go ahead: RelaxCapture for their scope. */
bool captures_other(int dev) {
  const uint64_t self = dev >= 0 && dev < kMaxDevices ? (uint64_t)1 << dev : 0;
  return (t_capturing & ~self) != 0;
}

/* Never destroyed: tensors released from atexit handlers still find it. In
   static storage, so its making cannot fail for want of host memory (none of
   its members allocates until used). */
DevState &state(int dev) {
  alignas(DevState) static unsigned char storage[sizeof(DevState) * kMaxDevices];
  static DevState *s = [] {
    DevState *p = reinterpret_cast<DevState *>(storage);
    for (int i = 0; i < kMaxDevices; i++) new (p + i) DevState();
    return std::launder(p);
  }();
  return s[dev];
}

/* The device's state with its stream made. Call with `dev` current. */
dt_status ready(int dev, DevState **out) {
  DevState &s = state(dev);
  if (!s.ready.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lk(s.init_mu);
    if (!s.ready.load(std::memory_order_relaxed)) {
      cudaStream_t st = nullptr;
      int sms = 0;
      cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
      if (e != cudaSuccess) return cuda_fail("cudaStreamCreateWithFlags", e);
      if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        sms = 0;
      }
      s.sms = sms > 0 ? sms : 108;
      s.stream = st;
      s.ready.store(true, std::memory_order_release);
    }
  }
  *out = &s;
  return DT_OK;
}

/* Makes `dev` current (through `g`) and its state ready. */
dt_status enter(DeviceGuard &g, int dev, DevState **s) {
  if (g.error() != cudaSuccess) {
    char what[48];
    snprintf(what, sizeof what, "cudaSetDevice(%d)", dev);
    return cuda_fail(what, g.error());
  }
  return ready(dev, s);
}

/* A backend entry's first step: `dev` current for the scope (the guard) and its state ready
   (enter). Each entry begins `Entered in(dev); if (!in.ok()) return in.status();` and then
   works on in.s (its stream: in.s->stream). While this thread captures another device, its
   capture interaction mode is relaxed for the scope (captures_other). */
struct Entered {
  DeviceGuard g;
  RelaxCapture relax;
  DevState *s = nullptr;
  dt_status st;
  explicit Entered(int dev) : g(dev), relax(captures_other(dev)), st(enter(g, dev, &s)) {}
  bool ok() const { return st == DT_OK; }
  dt_status status() const { return st; }
};

/* f(T()) with T the C type of floating dtype t (float or double); another dtype fails with
   "<what> is not defined for <dtype>". The kernels' entries call their T template through it. */
template <class F>
dt_status by_float(dt_dtype t, const char *what, F f) {
  if (t == DT_F32) return f(float());
  if (t == DT_F64) return f(double());
  set_err("%s is not defined for %s", what, dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

dt_status cu_alloc(int dev, size_t nbytes, void **out);
void cu_free(int dev, void *p, size_t nbytes);
constexpr size_t kBlasWorkspace = (size_t)32 << 20; /* what cuBLAS asks for on Hopper */

/* The device's cuBLAS handle, bound to its stream. Call with `dev` current. */
dt_status blas_handle(int dev, DevState &s, cublasHandle_t *out) {
  if (!s.blas_ready.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lk(s.init_mu);
    if (!s.blas_ready.load(std::memory_order_relaxed)) {
      cublasHandle_t h = nullptr;
      cublasStatus_t st = cublasCreate(&h);
      if (st == CUBLAS_STATUS_ALLOC_FAILED) {
        set_err("cublasCreate failed: out of memory on cuda:%d (cuBLAS needs memory for its handle)", dev);
        return DT_ERR_OUT_OF_MEMORY;
      }
      if (st != CUBLAS_STATUS_SUCCESS) return blas_fail("cublasCreate", st);
      if ((st = cublasSetStream(h, s.stream)) != CUBLAS_STATUS_SUCCESS ||
          /* FP32 stays FP32 (no TF32); half gemms sum in float32 to the end (no split-K partial
             sums reduced in the half type: PyTorch's allow_*_reduced_precision_reduction off) */
          (st = cublasSetMathMode(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION))) !=
              CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(h);
        return blas_fail("cublasSetStream/cublasSetMathMode", st);
      }
      /* its workspace from our allocator, so cuBLAS never cudaMallocs behind the
         cache's back; where that fails cuBLAS keeps its own */
      void *ws = nullptr;
      if (cu_alloc(dev, kBlasWorkspace, &ws) == DT_OK && cublasSetWorkspace(h, ws, kBlasWorkspace) != CUBLAS_STATUS_SUCCESS) {
        cu_free(dev, ws, kBlasWorkspace);
        (void)cudaGetLastError();
      }
      s.blas = h;
      s.blas_ready.store(true, std::memory_order_release);
    }
  }
  *out = s.blas;
  return DT_OK;
}

/* The NVIDIA driver's library: where it cannot be loaded there is no driver,
   whatever cudart says (it says "CUDA driver version is insufficient for CUDA
   runtime version", which reads as "upgrade the driver"). The emulator names
   its own (tests/emu/cuda_runtime.h). */
#ifndef DT_CU_LIBCUDA
#define DT_CU_LIBCUDA "libcuda.so.1"
#endif

static bool cu_driver_missing() {
#ifdef _WIN32
  return false; /* not looked for: CUDA's own reason stands */
#else
  void *h = dlopen(DT_CU_LIBCUDA, RTLD_LAZY | RTLD_LOCAL);
  if (!h) return true;
  dlclose(h);
  return false;
#endif
}

int cu_device_count(char *why, size_t n) {
  int c = 0;
  cudaError_t e = cudaGetDeviceCount(&c);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why && n) {
      if (cu_driver_missing()) snprintf(why, n, "no NVIDIA driver found (%s cannot be loaded)", DT_CU_LIBCUDA);
      else snprintf(why, n, "%s", cudaGetErrorString(e));
    }
    return 0;
  }
  if (c <= 0) {
    if (why && n) snprintf(why, n, "no CUDA-capable device is detected");
    return 0;
  }
  return c > kMaxDevices ? kMaxDevices : c;
}

dt_status cu_device_info(int dev, dt_device_info *out) {
  cudaDeviceProp p;
  size_t fr = 0, tot = 0, l;
  cudaError_t e = cudaGetDeviceProperties(&p, dev);
  if (e != cudaSuccess) return cuda_fail("cudaGetDeviceProperties", e);
  l = strnlen(p.name, sizeof p.name);
  if (l >= sizeof out->name) l = sizeof out->name - 1;
  memcpy(out->name, p.name, l);
  out->name[l] = 0;
  out->compute_major = p.major;
  out->compute_minor = p.minor;
  out->multiprocessors = p.multiProcessorCount;
  DeviceGuard g(dev);
  RelaxCapture relax(captures_other(dev)); /* as Entered: this thread may be capturing another device */
  if (g.error() != cudaSuccess) return cuda_fail("cudaSetDevice", g.error());
  if ((e = cudaMemGetInfo(&fr, &tot)) != cudaSuccess) return cuda_fail("cudaMemGetInfo", e);
  out->free_memory = fr;
  out->total_memory = tot;
  return DT_OK;
}

const char *cu_last_error(void) { return g_err; }

dt_status index_errors(int dev, DevState &s); /* indexing, below */

/* Waits for the work queued on s's stream. Call with the device current. */
dt_status sync_stream(DevState &s) {
  cudaError_t e = cudaStreamSynchronize(s.stream);
  return e == cudaSuccess ? DT_OK : cuda_fail("cudaStreamSynchronize", e);
}

/* After a cross-entropy on the device: waits for the stream and reads the label record; a bad
   label found there fails this (synchronizing) call, once, and the record is cleared. Call with
   the device current. */
dt_status labels_report(int dev, DevState &s) {
  if (!s.label_pending.exchange(false, std::memory_order_acq_rel)) return DT_OK;
  int64_t rec[4] = {0, 0, 0, 0};
  cudaError_t e = cudaMemcpyAsync(rec, s.label_rec, sizeof rec, cudaMemcpyDeviceToHost, s.stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s.stream);
  if (e != cudaSuccess) {
    s.label_pending.store(true, std::memory_order_release);
    return cuda_fail("reading the cross-entropy label check (cudaMemcpyAsync)", e);
  }
  if (rec[0] == 0) return DT_OK;
  if ((e = cudaMemsetAsync(s.label_rec, 0, sizeof rec, s.stream)) != cudaSuccess) {
    s.label_pending.store(true, std::memory_order_release);
    return cuda_fail("cudaMemsetAsync (the cross-entropy label check)", e);
  }
  set_err("an earlier %s on cuda:%d was given target[%lld] = %lld, out of range for %lld classes (expected 0 <= label < %lld); "
          "that row was skipped (its loss and gradient are NaN), and this synchronizing call reports it",
          rec[0] == 3 ? "dt_nll_loss" : rec[0] == 2 ? "dt_cross_entropy_grad" : "dt_cross_entropy", dev, (long long)rec[1], (long long)rec[2],
          (long long)rec[3], (long long)rec[3]);
  return DT_ERR_INVALID_ARGUMENT;
}

dt_status cu_synchronize(int dev) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  dt_status st = sync_stream(*in.s);
  if (st == DT_OK) st = index_errors(dev, *in.s);
  return st == DT_OK ? labels_report(dev, *in.s) : st;
}

void *cu_stream(int dev) {
  Entered in(dev);
  return in.ok() ? (void *)in.s->stream : nullptr;
}

/* ---- src/cuda/memory.cu ---- */
constexpr size_t kSmallMax = (size_t)1 << 20; /* up to here: size classes (round_size) */
constexpr size_t kSmallStep = 512;
constexpr size_t kLargeStep = (size_t)2 << 20;

/* Up to 1 MiB: size classes, four per power of two (512, 640, 768, 896, 1024,
   1280, ...; at most 25% over the request), so blocks freed by tensors of
   slightly different sizes serve each other (44 classes instead of 2048
   multiples of 512). Above: multiples of 2 MiB. */
size_t round_size(size_t n) {
  if (n <= kSmallStep) return kSmallStep;
  if (n <= kSmallMax) {
    size_t p = kSmallStep; /* the largest power of two below n */
    while (p * 2 < n) p *= 2;
    size_t step = p / 4;
    return (n + step - 1) / step * step;
  }
  if (n > SIZE_MAX - kLargeStep) return n; /* cannot be had anyway; cudaMalloc says so */
  return (n + kLargeStep - 1) & ~(kLargeStep - 1);
}

/* DEVTENSOR_CUDA_NO_CACHE=1 (read once): every block straight from cudaMalloc and
   back with cudaFree, exact sizes, so compute-sanitizer sees every overrun and
   use after free (as PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING). Slow. */
bool no_cache() {
  static const bool off = [] {
    const char *v = getenv("DEVTENSOR_CUDA_NO_CACHE");
    return v && *v && strcmp(v, "0") != 0;
  }();
  return off;
}

/* Records p as handed out. The map insertion is the only step that can throw
   (std::bad_alloc), and it comes first: if it throws, nothing has changed. */
void hand_out(DevState &s, void *p, size_t size) {
  s.live.emplace(p, size);
  s.allocated += size;
  if (s.allocated > s.peak) s.peak = s.allocated;
}

/* Hands out a cached block of `want` bytes or a little more, if there is one. */
bool cache_take(DevState &s, size_t want, void **p) {
  auto it = s.cache.lower_bound(want);
  if (it == s.cache.end()) return false;
  if (want <= kSmallMax ? it->first != want : it->first > want + want / 8) return false;
  hand_out(s, it->second, it->first);
  *p = it->second;
  s.cache.erase(it);
  return true;
}

/* cudaFree of every cached block; the stream must have drained. Call under s.mu. */
cudaError_t release_cache(DevState &s) {
  cudaError_t first = cudaSuccess;
  for (auto &b : s.cache) {
    cudaError_t e = cudaFree(b.second);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      if (first == cudaSuccess) first = e;
    }
    s.reserved -= b.first;
  }
  s.cache.clear();
  return first;
}

/* Empties the cache once the stream has drained. Call under s.mu with the device current. */
dt_status drop_cache(DevState &s) {
  dt_status st = sync_stream(s);
  if (st != DT_OK) return st;
  cudaError_t e = release_cache(s);
  return e == cudaSuccess ? DT_OK : cuda_fail("cudaFree", e);
}

/* Straight back to CUDA once the work queued on the block is done (cudaFree alone may not wait);
   errors are dropped. Call under s.mu. */
void free_now(int dev, DevState &s, void *p, size_t size) {
  DeviceGuard g(dev);
  RelaxCapture relax(captures_other(dev)); /* (this device is not captured: see cu_free) */
  if (g.error() != cudaSuccess || (s.stream && cudaStreamSynchronize(s.stream) != cudaSuccess) || cudaFree(p) != cudaSuccess)
    (void)cudaGetLastError();
  s.reserved -= size;
}

dt_status cu_alloc(int dev, size_t nbytes, void **out) {
  size_t want = no_cache() ? (nbytes ? nbytes : 1) : round_size(nbytes);
  void *p = nullptr;
  try {
    DevState &s0 = state(dev);
    {
      std::lock_guard<std::mutex> lk(s0.mu);
      if (s0.capturing) { /* a block this capture gave back: its own work is ordered on the stream */
        auto it = s0.cap_kept.find(want);
        if (it != s0.cap_kept.end()) {
          hand_out(s0, it->second, it->first);
          *out = it->second;
          s0.cap_kept.erase(it);
          return DT_OK;
        }
      }
      if (cache_take(s0, want, &p)) {
        *out = p;
        return DT_OK;
      }
    }
    Entered in(dev);
    if (!in.ok()) return in.status();
    std::lock_guard<std::mutex> lk(in.s->mu);
    if (cache_take(*in.s, want, &p)) { /* another thread freed one meanwhile */
      *out = p;
      return DT_OK;
    }
    RelaxCapture relax(in.s->capturing);
    cudaError_t e = cudaMalloc(&p, want);
    if (e == cudaErrorMemoryAllocation && !in.s->capturing) { /* (cudaFree is not allowed in a capture) */
      size_t fr = 0, tot = 0;
      (void)cudaGetLastError();
      if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) { (void)cudaGetLastError(); tot = SIZE_MAX; }
      if (!in.s->cache.empty() && want <= tot) {
        /* free the cache and try once more */
        dt_status st = drop_cache(*in.s);
        if (st != DT_OK) return st;
        e = cudaMalloc(&p, want);
      }
    }
    if (e != cudaSuccess) {
      char a[32], b[32], c[32], d[32];
      size_t fr = 0, tot = 0;
      bool info;
      (void)cudaGetLastError();
      info = cudaMemGetInfo(&fr, &tot) == cudaSuccess;
      if (!info) (void)cudaGetLastError();
      /* an absurd size may come back as "invalid argument": it is still out of memory */
      if (e != cudaErrorMemoryAllocation && !(e == cudaErrorInvalidValue && info && want > tot))
        return cuda_fail("cudaMalloc", e);
      /* as PyTorch's message does, what devtensor holds is split into live blocks and its cache */
      char l[32], k[32];
      dt__bytes_str((double)in.s->allocated, l, sizeof l);
      dt__bytes_str((double)(in.s->reserved - (in.s->allocated < in.s->reserved ? in.s->allocated : in.s->reserved)), k, sizeof k);
      if (info)
        set_err("out of memory on cuda:%d: tried to allocate %s; %s total, %s free, %s held by devtensor (%s in use, %s cached)", dev,
                dt__bytes_str((double)nbytes, a, sizeof a), dt__bytes_str((double)tot, b, sizeof b),
                dt__bytes_str((double)fr, c, sizeof c), dt__bytes_str((double)in.s->reserved, d, sizeof d), l, k);
      else
        set_err("out of memory on cuda:%d: tried to allocate %s; %s held by devtensor (%s in use, %s cached)", dev,
                dt__bytes_str((double)nbytes, a, sizeof a), dt__bytes_str((double)in.s->reserved, d, sizeof d), l, k);
      return DT_ERR_OUT_OF_MEMORY;
    }
    try {
      hand_out(*in.s, p, want);
    } catch (...) { /* no room to record it: give it back rather than lose it */
      if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
      throw;
    }
    in.s->reserved += want;
    *out = p;
    return DT_OK;
  } catch (...) { /* std::bad_alloc from the bookkeeping, before any block changed hands */
    set_err("out of host memory in the CUDA allocator's bookkeeping");
    return DT_ERR_OUT_OF_MEMORY;
  }
}

/* Back to the cache; no CUDA call (see POLICIES for why reuse is safe). */
void cu_free(int dev, void *p, size_t nbytes) {
  (void)nbytes; /* the block's own size is known */
  if (!p) return;
  try {
    DevState &s = state(dev);
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.live.find(p);
    if (it == s.live.end()) return;
    size_t size = it->second;
    s.live.erase(it);
    s.allocated -= size;
    if (s.capturing) { /* captured work may still use it: the capture keeps it (see graph.cu) */
      try {
        s.cap_kept.emplace(size, p);
      } catch (...) {
        s.cap_failed = true; /* the capture fails; the block stays reserved, unused */
      }
      return;
    }
    if (no_cache()) {
      free_now(dev, s, p, size);
      return;
    }
    try {
      s.cache.emplace(size, p);
    } catch (...) { /* no room in the cache's map */
      free_now(dev, s, p, size);
    }
  } catch (...) {
  }
}

dt_status cu_memory_stats(int dev, dt_memory_stats *out) {
  DevState &s = state(dev);
  std::lock_guard<std::mutex> lk(s.mu);
  out->allocated = s.allocated;
  out->reserved = s.reserved;
  out->peak_allocated = s.peak;
  return DT_OK;
}

dt_status cu_empty_cache(int dev) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  std::lock_guard<std::mutex> lk(in.s->mu);
  return in.s->cache.empty() ? DT_OK : drop_cache(*in.s);
}

/* ---- src/cuda/copy.cu ---- */
/* Page-locked (or otherwise CUDA-known) host memory can be DMA'd directly. */
bool host_is_registered(const void *p) {
  cudaPointerAttributes a;
  memset(&a, 0, sizeof a);
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) { (void)cudaGetLastError(); return false; }
  return a.type != cudaMemoryTypeUnregistered;
}

/* Two pinned staging buffers and their events, made on first use; false when
   pinned memory cannot be had (copies then go unstaged). Call under stage_mu
   with the device current. */
bool stage_ready(DevState &s) {
  if (s.stage_tried) return s.stage_ok;
  s.stage_tried = true;
  for (int b = 0; b < 2; b++) {
    if (cudaHostAlloc((void **)&s.stage[b], kStageBytes, cudaHostAllocPortable) != cudaSuccess ||
        cudaEventCreateWithFlags(&s.stage_ev[b], cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaGetLastError();
      for (int c = 0; c < 2; c++) {
        if (s.stage[c]) (void)cudaFreeHost(s.stage[c]);
        if (s.stage_ev[c]) (void)cudaEventDestroy(s.stage_ev[c]);
        s.stage[c] = nullptr;
        s.stage_ev[c] = nullptr;
      }
      (void)cudaGetLastError();
      return s.stage_ok = false;
    }
  }
  return s.stage_ok = true;
}

/* Bytes in staging chunk starting at `off` of an n-byte copy. */
size_t stage_len(size_t n, size_t off) { return n - off < kStageBytes ? n - off : kStageBytes; }

/* A copy between the host and device `dev` that has finished when it returns.
   Pageable `host` memory goes through the two pinned staging buffers
   (`staged`, under stage_mu); page-locked memory, or no staging buffers, one
   direct copy and a wait. `what` names the direct copy in errors. */
template <class Staged>
dt_status copy_host(int dev, const void *host, void *dst, const void *src, size_t n, const char *what, Staged staged) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (!host_is_registered(host)) {
    std::lock_guard<std::mutex> lk(in.s->stage_mu);
    if (stage_ready(*in.s)) return staged(*in.s);
  }
  cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, in.s->stream);
  if (e != cudaSuccess) return cuda_fail(what, e);
  return sync_stream(*in.s);
}

/* Host to device; returns once `src` may be reused. */
dt_status copy_h2d(int dev, void *dst, const void *src, size_t n) {
  return copy_host(dev, src, dst, src, n, "cudaMemcpyAsync (host to device)", [&](DevState &s) -> dt_status {
    const char *from = (const char *)src;
    char *to = (char *)dst;
    cudaError_t e;
    size_t off = 0;
    while (off < n) {
      /* alternate across calls too: a small copy made right after the previous one
         waits for the copy before that, not for the one just queued behind the work
         before it (a trainer copying each minibatch while the last step runs) */
      int b = s.stage_next;
      s.stage_next ^= 1;
      size_t len = stage_len(n, off);
      /* the DMA that last read buffer b has finished */
      if ((e = cudaEventSynchronize(s.stage_ev[b])) != cudaSuccess) return cuda_fail("cudaEventSynchronize", e);
      memcpy(s.stage[b], from + off, len);
      if ((e = cudaMemcpyAsync(to + off, s.stage[b], len, cudaMemcpyHostToDevice, s.stream)) != cudaSuccess)
        return cuda_fail("cudaMemcpyAsync (host to device)", e);
      if ((e = cudaEventRecord(s.stage_ev[b], s.stream)) != cudaSuccess) return cuda_fail("cudaEventRecord", e);
      off += len;
    }
    return DT_OK;
  });
}

/* Device to host, after the work queued on the device; waits. */
dt_status copy_d2h(void *dst, int dev, const void *src, size_t n) {
  return copy_host(dev, dst, dst, src, n, "cudaMemcpyAsync (device to host)", [&](DevState &s) -> dt_status {
    const char *from = (const char *)src;
    char *to = (char *)dst;
    size_t chunks = (n + kStageBytes - 1) / kStageBytes;
    dt_status st;
    /* DMA chunk c + 1 into one buffer while chunk c is copied out of the other */
    auto issue = [&](size_t c) -> dt_status {
      size_t off = c * kStageBytes;
      cudaError_t e = cudaMemcpyAsync(s.stage[c & 1], from + off, stage_len(n, off), cudaMemcpyDeviceToHost, s.stream);
      if (e != cudaSuccess) return cuda_fail("cudaMemcpyAsync (device to host)", e);
      if ((e = cudaEventRecord(s.stage_ev[c & 1], s.stream)) != cudaSuccess) return cuda_fail("cudaEventRecord", e);
      return DT_OK;
    };
    if ((st = issue(0)) != DT_OK) return st;
    for (size_t c = 0; c < chunks; c++) {
      size_t off = c * kStageBytes;
      cudaError_t e;
      if (c + 1 < chunks && (st = issue(c + 1)) != DT_OK) return st;
      if ((e = cudaEventSynchronize(s.stage_ev[c & 1])) != cudaSuccess) return cuda_fail("cudaEventSynchronize", e);
      memcpy(to + off, s.stage[c & 1], stage_len(n, off));
    }
    return DT_OK;
  });
}

std::mutex g_peer_mu;
unsigned char g_peer_tried[kMaxDevices][kMaxDevices];

/* Lets `from` reach `to`'s memory directly where the hardware allows; once. */
void enable_peer(DeviceGuard &g, int from, int to) {
  std::lock_guard<std::mutex> lk(g_peer_mu);
  if (g_peer_tried[from][to]) return;
  g_peer_tried[from][to] = 1;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess) { (void)cudaGetLastError(); return; }
  if (!can || g.set(from) != cudaSuccess) return;
  cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e != cudaSuccess) (void)cudaGetLastError(); /* already enabled, or not possible: the copy still works */
}

/* GPU to GPU: on dst's stream after src's queued work; src's stream then waits
   for the copy, so a block freed on src is not reused under it. */
dt_status copy_peer(int dd, void *dst, int sd, const void *src, size_t n) {
  Entered in(sd);
  DeviceGuard &g = in.g;
  DevState *S = in.s, *D;
  cudaEvent_t evs = nullptr, evd = nullptr;
  cudaError_t e;
  dt_status st;
  if (!in.ok()) return in.status();
  if ((e = g.set(dd)) != cudaSuccess) return cuda_fail("cudaSetDevice", e);
  if ((st = ready(dd, &D)) != DT_OK) return st;
  enable_peer(g, dd, sd);
  enable_peer(g, sd, dd);
  const char *what = nullptr;
  if ((e = g.set(sd)) != cudaSuccess) { what = "cudaSetDevice"; goto done; }
  if ((e = cudaEventCreateWithFlags(&evs, cudaEventDisableTiming)) != cudaSuccess) { what = "cudaEventCreate"; goto done; }
  if ((e = cudaEventRecord(evs, S->stream)) != cudaSuccess) { what = "cudaEventRecord"; goto done; }
  if ((e = g.set(dd)) != cudaSuccess) { what = "cudaSetDevice"; goto done; }
  if ((e = cudaEventCreateWithFlags(&evd, cudaEventDisableTiming)) != cudaSuccess) { what = "cudaEventCreate"; goto done; }
  if ((e = cudaStreamWaitEvent(D->stream, evs, 0)) != cudaSuccess) { what = "cudaStreamWaitEvent"; goto done; }
  if ((e = cudaMemcpyPeerAsync(dst, dd, src, sd, n, D->stream)) != cudaSuccess) { what = "cudaMemcpyPeerAsync"; goto done; }
  if ((e = cudaEventRecord(evd, D->stream)) != cudaSuccess) { what = "cudaEventRecord"; goto done; }
  if ((e = g.set(sd)) != cudaSuccess) { what = "cudaSetDevice"; goto done; }
  if ((e = cudaStreamWaitEvent(S->stream, evd, 0)) != cudaSuccess) { what = "cudaStreamWaitEvent"; goto done; }
done:
  if (what) (void)cudaGetLastError();
  /* destroying an event with work pending is fine: it is released once done */
  if (evs && g.set(sd) == cudaSuccess) (void)cudaEventDestroy(evs);
  if (evd && g.set(dd) == cudaSuccess) (void)cudaEventDestroy(evd);
  (void)cudaGetLastError();
  return what ? cuda_fail(what, e) : DT_OK;
}

dt_status cu_copy(int dst_dev, void *dst, int src_dev, const void *src, size_t n) {
  if (n == 0) return DT_OK;
  if (dst_dev < 0 && src_dev < 0) { memmove(dst, src, n); return DT_OK; }
  if (src_dev < 0) return copy_h2d(dst_dev, dst, src, n);
  if (dst_dev < 0 && state(src_dev).index_pending.load(std::memory_order_acquire)) {
    /* a dt_index_select ran since the last check: a bad index fails the copy before it writes */
    Entered in(src_dev);
    dt_status st = in.ok() ? index_errors(src_dev, *in.s) : in.status();
    if (st != DT_OK) return st;
  }
  if (dst_dev < 0) {
    if (state(src_dev).label_pending.load(std::memory_order_acquire)) { /* a bad label fails the copy, which writes nothing */
      Entered in(src_dev);
      dt_status st = in.ok() ? labels_report(src_dev, *in.s) : in.status();
      if (st != DT_OK) return st;
    }
    return copy_d2h(dst, src_dev, src, n);
  }
  if (dst_dev != src_dev) return copy_peer(dst_dev, dst, src_dev, src, n);
  if (dst == src) return DT_OK; /* dt_copy_(t, t): cudaMemcpy forbids overlapping ranges */
  Entered in(dst_dev);
  if (!in.ok()) return in.status();
  cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, in.s->stream);
  return e == cudaSuccess ? DT_OK : cuda_fail("cudaMemcpyAsync (device to device)", e);
}

/* ---- src/cuda/launch.cu ---- */
/* DT_LAUNCH(grid, block, stream, kernel)(args...) is kernel<<<grid, block, 0,
   stream>>>(args...). DT_LAUNCH_COOP marks a kernel whose threads meet at
   __syncthreads or warp shuffles. The spelling lets tests/emu (the CPU emulator
   the test suite uses where there is no GPU) run the same kernels: there
   DTEMU is defined and a launch is queued on an emulated stream, cooperative
   blocks as fibers. */
#ifdef DTEMU
#define DT_LAUNCH(grid, block, stream, ...) (dtemu::Launch{dim3(grid), dim3(block), (stream), false}.kernel(__VA_ARGS__))
#define DT_LAUNCH_COOP(grid, block, stream, ...) (dtemu::Launch{dim3(grid), dim3(block), (stream), true}.kernel(__VA_ARGS__))
#else
#define DT_LAUNCH(grid, block, stream, ...) __VA_ARGS__<<<(grid), (block), 0, (stream)>>>
#define DT_LAUNCH_COOP(grid, block, stream, ...) __VA_ARGS__<<<(grid), (block), 0, (stream)>>>
#endif

constexpr int kBlock = 256;
constexpr int64_t kMaxGrid = 65536;

/* f(i) for i in [0, n), grid-stride. I is uint32_t when n < 2^31 (i + stride
   stays below 2^32), else int64_t. */
template <typename I, typename F>
__global__ void k_map(I n, F f) {
  I stride = (I)blockDim.x * (I)gridDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += stride) f(i);
}

unsigned grid_for(int64_t count, int block) {
  int64_t g = (count + block - 1) / block;
  if (g > kMaxGrid) g = kMaxGrid;
  if (g < 1) g = 1;
  return (unsigned)g;
}

template <typename F>
dt_status run_map(const char *what, cudaStream_t st, int64_t count, const F &f) {
  if (count <= 0) return DT_OK;
  if (count <= (int64_t)INT32_MAX) DT_LAUNCH(grid_for(count, kBlock), kBlock, st, k_map<uint32_t, F>)((uint32_t)count, f);
  else DT_LAUNCH(grid_for(count, kBlock), kBlock, st, k_map<int64_t, F>)(count, f);
  return launched(what);
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* 16 bytes of T: loads and stores as one vector instruction */
template <typename T>
struct alignas(16) Vec16 {
  T v[16 / sizeof(T)];
};

/* ---- kernels: conversions shared by fill and cast ---- */

/* float to int as the CPU's dt__f2i32/dt__f2i64: toward zero, NaN -> 0, saturating */
__host__ __device__ inline int32_t f2i32(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;
}
__host__ __device__ inline int64_t f2i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

template <typename S, typename D>
struct Conv {
  __device__ static D f(S v) { return (D)v; }
};
template <> struct Conv<float, int32_t> { __device__ static int32_t f(float v) { return f2i32((double)v); } };
template <> struct Conv<float, int64_t> { __device__ static int64_t f(float v) { return f2i64((double)v); } };
template <> struct Conv<double, int32_t> { __device__ static int32_t f(double v) { return f2i32(v); } };
template <> struct Conv<double, int64_t> { __device__ static int64_t f(double v) { return f2i64(v); } };
/* int64 to int32 keeps the low 32 bits, as PyTorch */
template <> struct Conv<int64_t, int32_t> { __device__ static int32_t f(int64_t v) { return (int32_t)(uint32_t)v; } };

/* uint8 and bool. Float to uint8 as the CPU's dt__f2u8 (PyTorch's CPU conversion):
   toward zero through int32, the low 8 bits; NaN, +-inf and beyond int32 give 0. Integers to uint8
   keep the low 8 bits (the generic conversion). Bool is one byte, 0 or 1, spelled B8 here so its
   conversions differ from uint8's: to bool is nonzero (NaN too), from bool is 0 or 1. */
__host__ __device__ inline uint8_t f2u8(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return 0;
  return (uint8_t)(uint32_t)(int32_t)v;
}
struct B8 { uint8_t v; };
template <> struct Conv<float, uint8_t> { __device__ static uint8_t f(float v) { return f2u8((double)v); } };
template <> struct Conv<double, uint8_t> { __device__ static uint8_t f(double v) { return f2u8(v); } };
template <typename S> struct Conv<S, B8> { __device__ static B8 f(S v) { return B8{(uint8_t)(v != (S)0)}; } };
template <typename D> struct Conv<B8, D> { __device__ static D f(B8 v) { return (D)(v.v != 0); } };
template <> struct Conv<B8, B8> { __device__ static B8 f(B8 v) { return B8{(uint8_t)(v.v != 0)}; } };

/* ---- src/cuda/half.cu ---- */
/* ---- float16 and bfloat16 elements ----
   Two bytes each, converted by the bit code every backend shares (dt__f32_to_f16 and friends,
   src/backend/backend.h), so a cast gives the CPU's bits on every GPU. Every other dtype
   converts through float, as on the CPU. */
struct Half16 { uint16_t v; };
struct BHalf16 { uint16_t v; };

template <typename D> struct Conv<Half16, D> { __device__ static D f(Half16 v) { return Conv<float, D>::f(dt__f16_to_f32(v.v)); } };
template <typename D> struct Conv<BHalf16, D> { __device__ static D f(BHalf16 v) { return Conv<float, D>::f(dt__bf16_to_f32(v.v)); } };
template <typename S> struct Conv<S, Half16> { __device__ static Half16 f(S v) { return Half16{dt__f32_to_f16(Conv<S, float>::f(v))}; } };
template <typename S> struct Conv<S, BHalf16> { __device__ static BHalf16 f(S v) { return BHalf16{dt__f32_to_bf16(Conv<S, float>::f(v))}; } };
/* the pairs both templates above (or those of bool) match */
template <> struct Conv<Half16, B8> { __device__ static B8 f(Half16 v) { return B8{(uint8_t)(dt__f16_to_f32(v.v) != 0.0f)}; } };
template <> struct Conv<BHalf16, B8> { __device__ static B8 f(BHalf16 v) { return B8{(uint8_t)(dt__bf16_to_f32(v.v) != 0.0f)}; } };
template <> struct Conv<B8, Half16> { __device__ static Half16 f(B8 v) { return Half16{(uint16_t)(v.v ? 0x3C00u : 0u)}; } };
template <> struct Conv<B8, BHalf16> { __device__ static BHalf16 f(B8 v) { return BHalf16{(uint16_t)(v.v ? 0x3F80u : 0u)}; } };
template <> struct Conv<Half16, BHalf16> { __device__ static BHalf16 f(Half16 v) { return BHalf16{dt__f32_to_bf16(dt__f16_to_f32(v.v))}; } };
template <> struct Conv<BHalf16, Half16> { __device__ static Half16 f(BHalf16 v) { return Half16{dt__f32_to_f16(dt__bf16_to_f32(v.v))}; } };
template <> struct Conv<Half16, Half16> { __device__ static Half16 f(Half16 v) { return v; } };
template <> struct Conv<BHalf16, BHalf16> { __device__ static BHalf16 f(BHalf16 v) { return v; } };

/* Kernels written once for float, double and the half types, over elements of storage type S: an
   element is read as what it holds (ld: a half one as float, exactly; ldd: as double), the kernel
   computes in Calc<S> (float for a half S, else S), and each result is rounded to S once on the
   way out (sto: from double through float, as the F32 kernel's result cast to the half dtype).
   So a half kernel gives the bits of the F32 kernel on the converted operands, rounded once, in
   one pass and without temporaries; for float and double these are the plain loads and casts. */
template <typename S> struct Calc { typedef S type; };
template <> struct Calc<Half16> { typedef float type; };
template <> struct Calc<BHalf16> { typedef float type; };
template <typename S> __device__ inline typename Calc<S>::type ld(S v) { return Conv<S, typename Calc<S>::type>::f(v); }
template <typename S> __device__ inline double ldd(S v) { return Conv<S, double>::f(v); }
template <typename S, typename V> __device__ inline S sto(V v) { return Conv<V, S>::f(v); }

/* by_float, with float16 and bfloat16 (f(Half16()), f(BHalf16())) for the kernels above */
template <class F>
dt_status by_float_half(dt_dtype t, const char *what, F f) {
  if (t == DT_F16) return f(Half16());
  if (t == DT_BF16) return f(BHalf16());
  return by_float(t, what, f);
}

/* ---- src/cuda/elementwise.cu ---- */
/* y: (n,) = v */
template <typename T>
struct FillScalar {
  T *y; T v;
  template <typename I> __device__ void operator()(I i) const { y[i] = v; }
};
template <typename T>
struct FillVec {
  T *y; T v; int64_t n;
  template <typename I> __device__ void operator()(I i) const {
    constexpr int V = 16 / sizeof(T);
    int64_t base = (int64_t)i * V;
    if (base + V <= n) {
      Vec16<T> p;
#pragma unroll
      for (int k = 0; k < V; k++) p.v[k] = v;
      reinterpret_cast<Vec16<T> *>(y)[i] = p;
    } else {
      for (int64_t k = base; k < n; k++) y[k] = v;
    }
  }
};

template <typename T>
dt_status fill_t(cudaStream_t st, int64_t n, T v, void *y) {
  T *yp = static_cast<T *>(y);
  constexpr int V = 16 / sizeof(T);
  if (aligned16(y)) return run_map("fill", st, (n + V - 1) / V, FillVec<T>{yp, v, n});
  return run_map("fill", st, n, FillScalar<T>{yp, v});
}

dt_status cu_fill(int dev, dt_dtype t, int64_t n, double v, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  switch (t) {
    case DT_F32: return fill_t<float>(in.s->stream, n, (float)v, y);
    case DT_F64: return fill_t<double>(in.s->stream, n, v, y);
    case DT_I32: return fill_t<int32_t>(in.s->stream, n, f2i32(v), y);
    case DT_I64: return fill_t<int64_t>(in.s->stream, n, f2i64(v), y);
    case DT_U8: return fill_t<uint8_t>(in.s->stream, n, f2u8(v), y);
    case DT_BOOL: return fill_t<uint8_t>(in.s->stream, n, (uint8_t)(v != 0), y);
    case DT_F16: case DT_BF16: return fill_t<uint16_t>(in.s->stream, n, dt__f32_to_half(t == DT_BF16, (float)v), y);
  }
  set_err("fill: unknown dtype %d", (int)t);
  return DT_ERR_DTYPE;
}

/* ---- unary ---- */

__device__ inline float d_exp(float v) { return expf(v); }
__device__ inline double d_exp(double v) { return exp(v); }
__device__ inline float d_log(float v) { return logf(v); }
__device__ inline double d_log(double v) { return log(v); }
__device__ inline float d_sqrt(float v) { return sqrtf(v); }
__device__ inline double d_sqrt(double v) { return sqrt(v); }
/* a * v + b rounded twice, like the CPU (no FMA contraction) */
__device__ inline float d_affine(float a, float v, float b) { return __fadd_rn(__fmul_rn(a, v), b); }
__device__ inline double d_affine(double a, double v, double b) { return __dadd_rn(__dmul_rn(a, v), b); }
__device__ inline float d_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double d_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float d_add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double d_add(double a, double b) { return __dadd_rn(a, b); }

template <typename T> struct UAffine { T a, b; __device__ T operator()(T v) const { return d_affine(a, v, b); } };
template <typename T> struct UExp { __device__ T operator()(T v) const { return d_exp(v); } };
template <typename T> struct ULog { __device__ T operator()(T v) const { return d_log(v); } };
template <typename T> struct USqrt { __device__ T operator()(T v) const { return d_sqrt(v); } };
template <typename T> struct UNeg { __device__ T operator()(T v) const { return -v; } };
template <typename T> struct URelu { __device__ T operator()(T v) const { return v > (T)0 ? v : (v != v ? v : (T)0); } };
/* sigmoid as the CPU's: e = exp(-|x|) never overflows */
template <typename T> struct USigmoid {
  __device__ T operator()(T v) const {
    T e = d_exp(-fabs(v));
    return v >= (T)0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
  }
};
__device__ inline float d_tanh(float v) { return tanhf(v); }
__device__ inline double d_tanh(double v) { return tanh(v); }
template <typename T> struct UTanh { __device__ T operator()(T v) const { return d_tanh(v); } };
template <typename T> struct UAbs { __device__ T operator()(T v) const { return fabs(v); } };
/* sin, cos, erf, gelu (erf form) and its derivative, pow, clamp: as the CPU's (src/cpu/elementwise.c) */
__device__ inline float d_sin(float v) { return sinf(v); }
__device__ inline double d_sin(double v) { return sin(v); }
__device__ inline float d_cos(float v) { return cosf(v); }
__device__ inline double d_cos(double v) { return cos(v); }
__device__ inline float d_erf(float v) { return erff(v); }
__device__ inline double d_erf(double v) { return erf(v); }
/* p = 0.5 and -0.5 at x = -inf and -0: sqrt(x) and 1 / sqrt(x), as the CPU's dt__pow_f32 */
__device__ inline float d_pow(float v, float p) {
  if ((p == 0.5f || p == -0.5f) && ((isinf(v) && v < 0.0f) || (v == 0.0f && signbit(v)))) return p > 0.0f ? sqrtf(v) : 1.0f / sqrtf(v);
  return powf(v, p);
}
__device__ inline double d_pow(double v, double p) {
  if ((p == 0.5 || p == -0.5) && ((isinf(v) && v < 0.0) || (v == 0.0 && signbit(v)))) return p > 0.0 ? sqrt(v) : 1.0 / sqrt(v);
  return pow(v, p);
}
template <typename T> struct USin { __device__ T operator()(T v) const { return d_sin(v); } };
template <typename T> struct UCos { __device__ T operator()(T v) const { return d_cos(v); } };
template <typename T> struct UErf { __device__ T operator()(T v) const { return d_erf(v); } };
template <typename T> struct UGelu {
  __device__ T operator()(T v) const { return v * (T)0.5 * ((T)1 + d_erf(v * (T)0.70710678118654752)); }
};
template <typename T> struct UGeluGrad {
  __device__ T operator()(T v) const {
    /* the CPU's a + b, with the product b rounded before the add (nvcc would fuse them) */
    return d_affine(v * (T)0.39894228040143268, d_exp((T)-0.5 * v * v), (T)0.5 * ((T)1 + d_erf(v * (T)0.70710678118654752)));
  }
};
template <typename T> struct UPow { T p; __device__ T operator()(T v) const { return d_pow(v, p); } };
template <typename T> struct UClamp {
  T lo, hi;
  __device__ T operator()(T v) const {
    T r = v;
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    if (lo != lo) r = lo;
    if (hi != hi) r = hi;
    return r;
  }
};
__device__ inline float d_log1p(float v) { return log1pf(v); }
__device__ inline double d_log1p(double v) { return log1p(v); }
/* softplus as the CPU's: max(x, 0) + log1p(exp(-|x|)) */
template <typename T> struct USoftplus {
  __device__ T operator()(T v) const { return (v > (T)0 ? v : (T)0) + d_log1p(d_exp(-fabs(v))); }
};
/* integers: |INT_MIN| wraps to INT_MIN, as the CPU (and PyTorch) */
template <typename T, typename U> struct UAbsInt { __device__ T operator()(T v) const { return v < 0 ? (T)((U)0 - (U)v) : v; } };
/* integers: a * v + b in wrapping unsigned arithmetic (NEG is a = -1, b = 0) */
template <typename T, typename U> struct UAffineInt { U a, b; __device__ T operator()(T v) const { return (T)(a * (U)v + b); } };

/* y: (n,) = op(x) */
template <typename T, typename Op>
struct UnaryScalar {
  const T *x; T *y; Op op;
  template <typename I> __device__ void operator()(I i) const { y[i] = op(x[i]); }
};
template <typename T, typename Op>
struct UnaryVec {
  const T *x; T *y; int64_t n; Op op;
  template <typename I> __device__ void operator()(I i) const {
    constexpr int V = 16 / sizeof(T);
    int64_t base = (int64_t)i * V;
    if (base + V <= n) {
      Vec16<T> p = reinterpret_cast<const Vec16<T> *>(x)[i];
#pragma unroll
      for (int k = 0; k < V; k++) p.v[k] = op(p.v[k]);
      reinterpret_cast<Vec16<T> *>(y)[i] = p;
    } else {
      for (int64_t k = base; k < n; k++) y[k] = op(x[k]);
    }
  }
};

template <typename T, typename Op>
dt_status map1(cudaStream_t st, int64_t n, const void *x, void *y, Op op) {
  const T *xp = static_cast<const T *>(x);
  T *yp = static_cast<T *>(y);
  constexpr int V = 16 / sizeof(T);
  if (aligned16(x) && aligned16(y)) return run_map("unary", st, (n + V - 1) / V, UnaryVec<T, Op>{xp, yp, n, op});
  return run_map("unary", st, n, UnaryScalar<T, Op>{xp, yp, op});
}

/* float16 and bfloat16 elements (BF: bfloat16) through a float operation: each operand converted
   to float, the result rounded once, as the core's float32 route but with no temporaries (the
   same bits: the same conversion code and the same float operation per element) */
template <bool BF, typename Op> struct HalfUnary {
  Op op;
  __device__ uint16_t operator()(uint16_t v) const { return dt__f32_to_half(BF, op(dt__half_to_f32(BF, v))); }
};
template <bool BF, typename Op> struct HalfBinary {
  static constexpr bool uses_b = Op::uses_b;
  Op op;
  __device__ uint16_t operator()(uint16_t u, uint16_t w) const {
    return dt__f32_to_half(BF, op(dt__half_to_f32(BF, u), dt__half_to_f32(BF, w)));
  }
};
/* How the float kernels below take their elements: as they are (T), or as halves around float */
template <typename T> struct Plain {
  using E = T;
  template <typename Op> static Op u(Op op) { return op; }
  template <typename Op> static Op b(Op op) { return op; }
};
template <bool BF> struct InHalf {
  using E = uint16_t;
  template <typename Op> static HalfUnary<BF, Op> u(Op op) { return HalfUnary<BF, Op>{op}; }
  template <typename Op> static HalfBinary<BF, Op> b(Op op) { return HalfBinary<BF, Op>{op}; }
};

template <typename T, typename W = Plain<T>>
dt_status unary_float(cudaStream_t st, dt__unary_op op, int64_t n, const void *x, void *y, T a, T b) {
  switch (op) {
    case DT__U_AFFINE: return map1<typename W::E>(st, n, x, y, W::u(UAffine<T>{a, b}));
    case DT__U_EXP: return map1<typename W::E>(st, n, x, y, W::u(UExp<T>{}));
    case DT__U_LOG: return map1<typename W::E>(st, n, x, y, W::u(ULog<T>{}));
    case DT__U_SQRT: return map1<typename W::E>(st, n, x, y, W::u(USqrt<T>{}));
    case DT__U_NEG: return map1<typename W::E>(st, n, x, y, W::u(UNeg<T>{}));
    case DT__U_RELU: return map1<typename W::E>(st, n, x, y, W::u(URelu<T>{}));
    case DT__U_SIGMOID: return map1<typename W::E>(st, n, x, y, W::u(USigmoid<T>{}));
    case DT__U_TANH: return map1<typename W::E>(st, n, x, y, W::u(UTanh<T>{}));
    case DT__U_ABS: return map1<typename W::E>(st, n, x, y, W::u(UAbs<T>{}));
    case DT__U_SIN: return map1<typename W::E>(st, n, x, y, W::u(USin<T>{}));
    case DT__U_COS: return map1<typename W::E>(st, n, x, y, W::u(UCos<T>{}));
    case DT__U_ERF: return map1<typename W::E>(st, n, x, y, W::u(UErf<T>{}));
    case DT__U_GELU: return map1<typename W::E>(st, n, x, y, W::u(UGelu<T>{}));
    case DT__U_GELU_GRAD: return map1<typename W::E>(st, n, x, y, W::u(UGeluGrad<T>{}));
    case DT__U_POW: return map1<typename W::E>(st, n, x, y, W::u(UPow<T>{a}));
    case DT__U_CLAMP: return map1<typename W::E>(st, n, x, y, W::u(UClamp<T>{a, b}));
    case DT__U_SOFTPLUS: return map1<typename W::E>(st, n, x, y, W::u(USoftplus<T>{}));
  }
  set_err("unary: unknown op %d", (int)op);
  return DT_ERR_INVALID_ARGUMENT;
}

dt_status cu_unary(int dev, dt__unary_op op, dt_dtype t, int64_t n, const void *x, void *y, double p0, double p1) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  switch (t) {
    case DT_F32: return unary_float<float>(in.s->stream, op, n, x, y, (float)p0, (float)p1);
    case DT_F64: return unary_float<double>(in.s->stream, op, n, x, y, p0, p1);
    case DT_F16: return unary_float<float, InHalf<false>>(in.s->stream, op, n, x, y, (float)p0, (float)p1);
    case DT_BF16: return unary_float<float, InHalf<true>>(in.s->stream, op, n, x, y, (float)p0, (float)p1);
    case DT_I32:
    case DT_I64:
      if (op == DT__U_ABS) {
        if (t == DT_I32) return map1<int32_t>(in.s->stream, n, x, y, UAbsInt<int32_t, uint32_t>{});
        return map1<int64_t>(in.s->stream, n, x, y, UAbsInt<int64_t, uint64_t>{});
      }
      if (op != DT__U_AFFINE && op != DT__U_NEG) {
        set_err("unary op %d is not defined for %s", (int)op, dt__dtype_str(t));
        return DT_ERR_DTYPE;
      }
      if (t == DT_I32) {
        uint32_t a = (uint32_t)f2i64(p0), b = (uint32_t)f2i64(p1);
        if (op == DT__U_NEG) { a = (uint32_t)-1; b = 0; }
        return map1<int32_t>(in.s->stream, n, x, y, UAffineInt<int32_t, uint32_t>{a, b});
      } else {
        uint64_t a = (uint64_t)f2i64(p0), b = (uint64_t)f2i64(p1);
        if (op == DT__U_NEG) { a = (uint64_t)-1; b = 0; }
        return map1<int64_t>(in.s->stream, n, x, y, UAffineInt<int64_t, uint64_t>{a, b});
      }
    case DT_U8:
    case DT_BOOL: /* the core refuses unary ops on them first */
      set_err("unary op %d is not defined for %s", (int)op, dt__dtype_str(t));
      return DT_ERR_DTYPE;
  }
  set_err("unary: unknown dtype %d", (int)t);
  return DT_ERR_DTYPE;
}

/* ---- binary ---- */

/* arithmetic type: integers wrap through unsigned, as the CPU (and PyTorch) */
template <typename T> struct Wrap { using U = T; };
template <> struct Wrap<int32_t> { using U = uint32_t; };
template <> struct Wrap<int64_t> { using U = uint64_t; };

template <typename T> struct BAdd {
  static constexpr bool uses_b = true;
  __device__ T operator()(T u, T w) const { using U = typename Wrap<T>::U; return (T)((U)u + (U)w); }
};
template <typename T> struct BSub {
  static constexpr bool uses_b = true;
  __device__ T operator()(T u, T w) const { using U = typename Wrap<T>::U; return (T)((U)u - (U)w); }
};
template <typename T> struct BMul {
  static constexpr bool uses_b = true;
  __device__ T operator()(T u, T w) const { using U = typename Wrap<T>::U; return (T)((U)u * (U)w); }
};
template <typename T> struct BDiv {
  static constexpr bool uses_b = true;
  __device__ T operator()(T u, T w) const { return u / w; }
};
template <typename T> struct BReluGrad {
  static constexpr bool uses_b = true;
  __device__ T operator()(T u, T w) const { return w > (T)0 ? u : (T)0; }
};
template <typename T> struct BSigmoidGrad {
  static constexpr bool uses_b = true;
  __device__ T operator()(T u, T w) const { return u * ((T)1 - w) * w; }
};
template <typename T> struct BTanhGrad {
  static constexpr bool uses_b = true;
  /* u * (1 - w * w) as the CPU's: w * w rounded before the subtraction (no FMA) */
  __device__ T operator()(T u, T w) const { return u * d_affine(-w, w, (T)1); }
};
template <typename T> struct BCopyA {
  static constexpr bool uses_b = false;
  __device__ T operator()(T u, T) const { return u; }
};
/* y += alpha * x, rounded as the CPU's `y += al * x` (no FMA) */
template <typename T> struct BAxpy {
  T alpha;
  __device__ T operator()(T u, T w) const { return d_affine(alpha, w, u); }
};

/* y: (n,) = op(a, b), all three contiguous */
template <typename T, typename Op>
struct ZipScalar {
  const T *a; const T *b; T *y; Op op;
  template <typename I> __device__ void operator()(I i) const { y[i] = op(a[i], b[i]); }
};
template <typename T, typename Op>
struct ZipVec {
  const T *a; const T *b; T *y; int64_t n; Op op;
  template <typename I> __device__ void operator()(I i) const {
    constexpr int V = 16 / sizeof(T);
    int64_t base = (int64_t)i * V;
    if (base + V <= n) {
      Vec16<T> u = reinterpret_cast<const Vec16<T> *>(a)[i];
      Vec16<T> w = reinterpret_cast<const Vec16<T> *>(b)[i];
#pragma unroll
      for (int k = 0; k < V; k++) u.v[k] = op(u.v[k], w.v[k]);
      reinterpret_cast<Vec16<T> *>(y)[i] = u;
    } else {
      for (int64_t k = base; k < n; k++) y[k] = op(a[k], b[k]);
    }
  }
};
/* The broadcast geometry as a kernel reads it: element i of the output (row-major over dims)
   reads a at offset oa and b at offset ob (strides 0 where an operand broadcasts). J: uint32_t
   when numel < 2^31 (every offset is then below 2^31 too), else int64_t. The loop is unrolled
   with constant indices, so the arrays stay in registers and parameter space instead of a copy
   in local memory. */
template <typename J>
struct BcastGeom {
  int nd;
  J dims[DT_MAX_DIMS], as[DT_MAX_DIMS], bs[DT_MAX_DIMS];
  void set(const dt__bcast &g) {
    nd = g.ndim;
    for (int d = 0; d < DT_MAX_DIMS; d++) {
      dims[d] = d < g.ndim ? (J)g.dims[d] : (J)1;
      as[d] = d < g.ndim ? (J)g.astride[d] : (J)0;
      bs[d] = d < g.ndim ? (J)g.bstride[d] : (J)0;
    }
  }
  __device__ __forceinline__ void offsets(J i, J &oa, J &ob) const {
    J rem = i;
    oa = 0; ob = 0;
#pragma unroll
    for (int d = DT_MAX_DIMS - 1; d > 0; d--) {
      if (d >= nd) continue;
      J q = rem % dims[d];
      rem /= dims[d];
      oa += q * as[d];
      ob += q * bs[d];
    }
    oa += rem * as[0];
    ob += rem * bs[0];
  }
};

/* y: dims (row-major, contiguous) = op(a, b) with a, b read through their
   element strides (0 where they broadcast); J as in BcastGeom. */
template <typename T, typename Op, typename J>
struct ZipStrided : BcastGeom<J> {
  const T *a; const T *b; T *y; Op op;
  template <typename I> __device__ void operator()(I i) const {
    J oa, ob;
    this->offsets((J)i, oa, ob);
    T w = (T)0;
    if constexpr (Op::uses_b) w = b[ob];
    y[i] = op(a[oa], w);
  }
};

template <typename T, typename Op>
dt_status zip_contig(cudaStream_t st, int64_t n, const T *a, const T *b, T *y, Op op, const char *what) {
  constexpr int V = 16 / sizeof(T);
  if (aligned16(a) && aligned16(b) && aligned16(y)) return run_map(what, st, (n + V - 1) / V, ZipVec<T, Op>{a, b, y, n, op});
  return run_map(what, st, n, ZipScalar<T, Op>{a, b, y, op});
}

template <typename T, typename Op, typename J>
dt_status zip_strided(cudaStream_t st, const dt__bcast &g, const T *a, const T *b, T *y, Op op) {
  ZipStrided<T, Op, J> f;
  f.a = a; f.b = b; f.y = y; f.op = op;
  f.set(g);
  return run_map("binary (broadcast)", st, g.numel, f);
}

template <typename T, typename Op>
dt_status zip(cudaStream_t st, const dt__bcast &g, const void *a, const void *b, void *y, Op op) {
  const T *ap = static_cast<const T *>(a);
  const T *bp = static_cast<const T *>(b);
  T *yp = static_cast<T *>(y);
  if (g.contiguous) return zip_contig<T, Op>(st, g.numel, ap, bp, yp, op, "binary");
  if (g.numel <= (int64_t)INT32_MAX) return zip_strided<T, Op, uint32_t>(st, g, ap, bp, yp, op);
  return zip_strided<T, Op, int64_t>(st, g, ap, bp, yp, op);
}

template <typename T, typename W = Plain<T>>
dt_status binary_t(cudaStream_t st, dt__binary_op op, dt_dtype t, const dt__bcast &g, const void *a, const void *b, void *y) {
  constexpr bool is_float = std::is_floating_point<T>::value;
  switch (op) {
    case DT__B_ADD: return zip<typename W::E>(st, g, a, b, y, W::b(BAdd<T>{}));
    case DT__B_SUB: return zip<typename W::E>(st, g, a, b, y, W::b(BSub<T>{}));
    case DT__B_MUL: return zip<typename W::E>(st, g, a, b, y, W::b(BMul<T>{}));
    case DT__B_COPY_A: return zip<typename W::E>(st, g, a, b, y, W::b(BCopyA<T>{}));
    case DT__B_DIV:
      if constexpr (is_float) return zip<typename W::E>(st, g, a, b, y, W::b(BDiv<T>{}));
      break;
    case DT__B_RELU_GRAD:
      if constexpr (is_float) return zip<typename W::E>(st, g, a, b, y, W::b(BReluGrad<T>{}));
      break;
    case DT__B_SIGMOID_GRAD:
      if constexpr (is_float) return zip<typename W::E>(st, g, a, b, y, W::b(BSigmoidGrad<T>{}));
      break;
    case DT__B_TANH_GRAD:
      if constexpr (is_float) return zip<typename W::E>(st, g, a, b, y, W::b(BTanhGrad<T>{}));
      break;
  }
  set_err("binary op %d is not defined for %s", (int)op, dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

dt_status cu_binary(int dev, dt__binary_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  switch (t) {
    case DT_F32: return binary_t<float>(in.s->stream, op, t, *g, a, b, y);
    case DT_F64: return binary_t<double>(in.s->stream, op, t, *g, a, b, y);
    case DT_I32: return binary_t<int32_t>(in.s->stream, op, t, *g, a, b, y);
    case DT_I64: return binary_t<int64_t>(in.s->stream, op, t, *g, a, b, y);
    case DT_F16:
    case DT_BF16: /* a copy moves the bits (a NaN's payload too); the rest through float */
      if (op == DT__B_COPY_A) return zip<uint16_t>(in.s->stream, *g, a, b, y, BCopyA<uint16_t>{});
      if (t == DT_F16) return binary_t<float, InHalf<false>>(in.s->stream, op, t, *g, a, b, y);
      return binary_t<float, InHalf<true>>(in.s->stream, op, t, *g, a, b, y);
    case DT_U8:
    case DT_BOOL: /* copies only (transposes); the core refuses arithmetic on them */
      if (op == DT__B_COPY_A) return zip<uint8_t>(in.s->stream, *g, a, b, y, BCopyA<uint8_t>{});
      set_err("binary op %d is not defined for %s", (int)op, dt__dtype_str(t));
      return DT_ERR_DTYPE;
  }
  set_err("binary: unknown dtype %d", (int)t);
  return DT_ERR_DTYPE;
}

/* ---- cast ---- */

/* y: (n,) of D = x: (n,) of S converted */
template <typename S, typename D>
struct CastMap {
  const S *x; D *y;
  template <typename I> __device__ void operator()(I i) const { y[i] = Conv<S, D>::f(x[i]); }
};

template <typename S, typename D>
dt_status cast_t(cudaStream_t st, int64_t n, const void *x, void *y) {
  return run_map("cast", st, n, CastMap<S, D>{static_cast<const S *>(x), static_cast<D *>(y)});
}

template <typename S>
dt_status cast_from(cudaStream_t st, dt_dtype to, int64_t n, const void *x, void *y) {
  switch (to) {
    case DT_F32: return cast_t<S, float>(st, n, x, y);
    case DT_F64: return cast_t<S, double>(st, n, x, y);
    case DT_I32: return cast_t<S, int32_t>(st, n, x, y);
    case DT_I64: return cast_t<S, int64_t>(st, n, x, y);
    case DT_U8: return cast_t<S, uint8_t>(st, n, x, y);
    case DT_BOOL: return cast_t<S, B8>(st, n, x, y);
    case DT_F16: return cast_t<S, Half16>(st, n, x, y);
    case DT_BF16: return cast_t<S, BHalf16>(st, n, x, y);
  }
  set_err("cast: unknown dtype %d", (int)to);
  return DT_ERR_DTYPE;
}

dt_status cu_cast(int dev, dt_dtype from, dt_dtype to, int64_t n, const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (from == to) {
    cudaError_t e = cudaMemcpyAsync(y, x, (size_t)n * dt__dtype_bytes(to), cudaMemcpyDeviceToDevice, in.s->stream);
    return e == cudaSuccess ? DT_OK : cuda_fail("cudaMemcpyAsync (device to device)", e);
  }
  switch (from) {
    case DT_F32: return cast_from<float>(in.s->stream, to, n, x, y);
    case DT_F64: return cast_from<double>(in.s->stream, to, n, x, y);
    case DT_I32: return cast_from<int32_t>(in.s->stream, to, n, x, y);
    case DT_I64: return cast_from<int64_t>(in.s->stream, to, n, x, y);
    case DT_U8: return cast_from<uint8_t>(in.s->stream, to, n, x, y);
    case DT_BOOL: return cast_from<B8>(in.s->stream, to, n, x, y);
    case DT_F16: return cast_from<Half16>(in.s->stream, to, n, x, y);
    case DT_BF16: return cast_from<BHalf16>(in.s->stream, to, n, x, y);
  }
  set_err("cast: unknown dtype %d", (int)from);
  return DT_ERR_DTYPE;
}

/* ---- src/cuda/reduce.cu ---- */
/* Everything accumulates in double, in a fixed order (deterministic). T is the elements' type:
   float, double or a half type (read and rounded as half.cu's ld and sto say). */

__device__ inline double r_term(double v, int op) { return op == DT__R_NORM ? v * v : v; }

__device__ inline double r_final(double acc, int op, int64_t len) {
  if (op == DT__R_MEAN) return len ? acc / (double)len : CUDART_NAN;
  if (op == DT__R_NORM) return sqrt(acc);
  return acc;
}

/* The sum of v over the block (blockDim.x a multiple of 32, at most 1024),
   valid in thread 0. Every thread of the block must call it. */
__device__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  __syncthreads(); /* warp_sums may still be read from a previous call */
  if (lane == 0) warp_sums[w] = v;
  __syncthreads();
  v = 0.0;
  if (w == 0) {
    v = lane < nw ? warp_sums[lane] : 0.0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  }
  return v;
}

/* Rows (inner == 1): x: (outer, len). Task t = (row o, chunk c) is one block;
   it reduces x[o, c*chunk : (c+1)*chunk]. With one chunk per row the block
   writes y[o]; otherwise partial[o * nchunks + c]. */
template <typename T>
__global__ void k_reduce_rows(const T *x, int64_t outer, int64_t len, int64_t chunk, int64_t nchunks, int op,
                              double *partial, T *y) {
  int64_t tasks = outer * nchunks;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    int64_t o = t / nchunks, c = t - o * nchunks;
    int64_t r0 = c * chunk, r1 = r0 + chunk < len ? r0 + chunk : len;
    const T *p = x + o * len;
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int64_t r = r0 + threadIdx.x, step = blockDim.x;
    for (; r + 3 * step < r1; r += 4 * step) {
      a0 += r_term(ldd(p[r]), op);
      a1 += r_term(ldd(p[r + step]), op);
      a2 += r_term(ldd(p[r + 2 * step]), op);
      a3 += r_term(ldd(p[r + 3 * step]), op);
    }
    for (; r < r1; r += step) a0 += r_term(ldd(p[r]), op);
    double acc = block_sum((a0 + a1) + (a2 + a3));
    if (threadIdx.x == 0) {
      if (nchunks == 1) y[o] = sto<T>(r_final(acc, op, len));
      else partial[t] = acc;
    }
  }
}

/* Second pass of the rows: y[o] = final(sum over c of partial[o * nchunks + c]). */
template <typename T>
__global__ void k_reduce_rows_finish(const double *partial, int64_t outer, int64_t nchunks, int64_t len, int op, T *y) {
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    double acc = 0.0;
    for (int64_t c = threadIdx.x; c < nchunks; c += blockDim.x) acc += partial[o * nchunks + c];
    acc = block_sum(acc);
    if (threadIdx.x == 0) y[o] = sto<T>(r_final(acc, op, len));
  }
}

/* Columns: x: (outer, len, inner), one thread per output (o, i), i fastest, so
   a warp reads consecutive addresses. blockIdx.y is the chunk of len; with
   one chunk the thread writes y[o, i], else partial[c, o * inner + i]. */
template <typename T>
__global__ void k_reduce_cols(const T *x, int64_t outer, int64_t len, int64_t inner, int64_t chunk, int64_t nchunks,
                              int op, double *partial, T *y) {
  int64_t nout = outer * inner, c = blockIdx.y;
  int64_t r0 = c * chunk, r1 = r0 + chunk < len ? r0 + chunk : len;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < nout; t += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = t / inner, i = t - o * inner;
    const T *p = x + o * len * inner + i;
    double a0 = 0.0, a1 = 0.0;
    int64_t r = r0;
    for (; r + 1 < r1; r += 2) {
      a0 += r_term(ldd(p[r * inner]), op);
      a1 += r_term(ldd(p[(r + 1) * inner]), op);
    }
    if (r < r1) a0 += r_term(ldd(p[r * inner]), op);
    double acc = a0 + a1;
    if (nchunks == 1) y[t] = sto<T>(r_final(acc, op, len));
    else partial[c * nout + t] = acc;
  }
}

/* Second pass of the columns: y[t] = final(sum over c of partial[c, t]). */
template <typename T>
__global__ void k_reduce_cols_finish(const double *partial, int64_t nout, int64_t nchunks, int64_t len, int op, T *y) {
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < nout; t += (int64_t)gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (int64_t c = 0; c < nchunks; c++) acc += partial[c * nout + t];
    y[t] = sto<T>(r_final(acc, op, len));
  }
}

/* Columns with a narrow inner (2..64) and few outputs, e.g. (10^6, 2) over dim 0: k_reduce_cols
   would keep 2 threads of each block busy, each striding through memory. Here the (len, inner)
   slab of one o is contiguous, so a block reads its rows r0..r1 as consecutive elements
   (coalesced); its blockDim.x threads (a multiple of inner) each keep one column,
   i = threadIdx.x % inner, and the block then adds up the threads of each column into
   partial[o * inner + i, c], one row of chunks per output, which k_reduce_rows_finish adds
   up a block per output (a thread per output walking 1024 partials one after another is
   slow for a few wide outputs, such as (10^6, 2)'s two).
   blockIdx.x is the chunk of rows, blockIdx.y is o. */
template <typename T>
__global__ void k_reduce_cols_narrow(const T *x, int64_t len, int64_t inner, int64_t chunk, int op, double *partial) {
  __shared__ double sh[kBlock];
  int64_t o = blockIdx.y, c = blockIdx.x, nchunks = gridDim.x;
  int64_t r0 = c * chunk, r1 = r0 + chunk < len ? r0 + chunk : len;
  const T *p = x + o * len * inner;
  double acc = 0.0;
  for (int64_t e = r0 * inner + threadIdx.x; e < r1 * inner; e += blockDim.x) acc += r_term(ldd(p[e]), op);
  if (inner <= 32 && (inner & (inner - 1)) == 0) {
    /* a power of two (the block is then kBlock threads, whole warps): lanes L and L + off,
       off a multiple of inner, keep the same column, so shuffles leave each warp's column
       sums in its lanes 0..inner-1, and the first inner threads add up the warps */
    for (int off = 16; off >= inner; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane < inner) sh[warp * inner + lane] = acc;
    __syncthreads();
    if (threadIdx.x < inner) {
      double sum = 0.0;
      for (unsigned w = 0; w < blockDim.x >> 5; w++) sum += sh[w * inner + threadIdx.x];
      partial[(o * inner + threadIdx.x) * nchunks + c] = sum;
    }
    return;
  }
  sh[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x < inner) {
    double sum = 0.0;
    for (unsigned k = threadIdx.x; k < blockDim.x; k += (unsigned)inner) sum += sh[k];
    partial[(o * inner + threadIdx.x) * nchunks + c] = sum;
  }
}

constexpr int64_t kMaxChunks = 1024;

/* How a reduction splits `len` rows of `per` elements each, for `outer` reductions side by side:
   enough blocks for 8 a multiprocessor, at least 4096 elements a block, at most kMaxChunks.
   Returns the number of chunks, and their rows in *chunk. */
int64_t split_rows(const DevState &s, int64_t outer, int64_t len, int64_t per, int64_t *chunk) {
  int64_t want_blocks = (int64_t)s.sms * 8;
  int64_t nchunks = (len * per + 4095) / 4096;
  int64_t by_gpu = (want_blocks + outer - 1) / outer;
  if (nchunks > by_gpu) nchunks = by_gpu;
  if (nchunks > kMaxChunks) nchunks = kMaxChunks;
  if (nchunks < 1) nchunks = 1;
  *chunk = (len + nchunks - 1) / nchunks;
  return (len + *chunk - 1) / *chunk;
}

template <typename T>
dt_status reduce_t(int dev, DevState &s, int op, int64_t outer, int64_t len, int64_t inner, const T *x, T *y) {
  cudaStream_t st = s.stream;
  double *partial = nullptr;
  void *ws = nullptr;
  dt_status rc;
  int64_t chunk, nchunks;
  if (inner == 1 && len > 32) {
    /* block per row (or per piece of a long row) */
    int block = len >= 2048 ? 256 : len >= 512 ? 128 : 64;
    nchunks = split_rows(s, outer, len, 1, &chunk);
    if (nchunks > 1) {
      if ((rc = cu_alloc(dev, (size_t)(outer * nchunks) * sizeof(double), &ws)) != DT_OK) return rc;
      partial = static_cast<double *>(ws);
    }
    int64_t tasks = outer * nchunks;
    unsigned grid = (unsigned)(tasks < kMaxGrid ? tasks : kMaxGrid);
    DT_LAUNCH_COOP(grid, block, st, k_reduce_rows<T>)(x, outer, len, chunk, nchunks, op, partial, y);
    rc = launched("reduce");
    if (rc == DT_OK && nchunks > 1) {
      unsigned g2 = (unsigned)(outer < kMaxGrid ? outer : kMaxGrid);
      int b2 = nchunks >= 256 ? 256 : nchunks >= 128 ? 128 : 64;
      DT_LAUNCH_COOP(g2, b2, st, k_reduce_rows_finish<T>)(partial, outer, nchunks, len, op, y);
      rc = launched("reduce (second pass)");
    }
  } else if (inner >= 2 && inner <= 64 && outer <= 65535 && outer * inner < (int64_t)s.sms * 1024 && len * inner >= 8192) {
    /* narrow columns, few outputs: blocks over chunks of rows of each slab, then the second pass */
    int64_t nout = outer * inner;
    int block = (int)((kBlock / inner) * inner);
    nchunks = split_rows(s, outer, len, inner, &chunk);
    if ((rc = cu_alloc(dev, (size_t)(nout * nchunks) * sizeof(double), &ws)) != DT_OK) return rc;
    partial = static_cast<double *>(ws);
    dim3 grid((unsigned)nchunks, (unsigned)outer);
    DT_LAUNCH_COOP(grid, block, st, k_reduce_cols_narrow<T>)(x, len, inner, chunk, op, partial);
    rc = launched("reduce");
    if (rc == DT_OK) { /* partial is (nout, nchunks): a block per output adds up its chunks */
      int b2 = nchunks >= 256 ? 256 : nchunks >= 128 ? 128 : 64;
      DT_LAUNCH_COOP((unsigned)(nout < kMaxGrid ? nout : kMaxGrid), b2, st, k_reduce_rows_finish<T>)(partial, nout, nchunks, len, op, y);
      rc = launched("reduce (second pass)");
    }
  } else {
    /* thread per output; split len over blockIdx.y when there are few outputs */
    int64_t nout = outer * inner;
    int64_t want_threads = (int64_t)s.sms * 2048;
    nchunks = 1;
    if (nout < want_threads / 2 && len > 64) {
      nchunks = (want_threads + nout - 1) / nout;
      int64_t by_len = (len + 31) / 32; /* at least 32 rows a chunk */
      if (nchunks > by_len) nchunks = by_len;
      if (nchunks > kMaxChunks) nchunks = kMaxChunks;
      if (nchunks < 1) nchunks = 1;
    }
    chunk = len > 0 ? (len + nchunks - 1) / nchunks : 0;
    if (len > 0) nchunks = (len + chunk - 1) / chunk;
    if (nchunks > 1) {
      if ((rc = cu_alloc(dev, (size_t)(nout * nchunks) * sizeof(double), &ws)) != DT_OK) return rc;
      partial = static_cast<double *>(ws);
    }
    dim3 grid(grid_for(nout, kBlock), (unsigned)nchunks);
    DT_LAUNCH(grid, kBlock, st, k_reduce_cols<T>)(x, outer, len, inner, chunk, nchunks, op, partial, y);
    rc = launched("reduce");
    if (rc == DT_OK && nchunks > 1) {
      DT_LAUNCH(grid_for(nout, kBlock), kBlock, st, k_reduce_cols_finish<T>)(partial, nout, nchunks, len, op, y);
      rc = launched("reduce (second pass)");
    }
  }
  /* back to the cache now: later work on this stream comes after these kernels */
  if (ws) cu_free(dev, ws, 0);
  return rc;
}

dt_status cu_reduce(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (outer <= 0 || inner <= 0) return DT_OK;
  return by_float_half(t, "reduce", [&](auto z) {
    using T = decltype(z);
    return reduce_t<T>(dev, *in.s, (int)op, outer, len, inner, static_cast<const T *>(x), static_cast<T *>(y));
  });
}

/* ---- src/cuda/gemm.cu ---- */
/* C = beta * C (beta 0: zeros, C not read) for batch items of m*n at stride_c */
template <typename T>
struct ScaleC {
  T *c; T beta; int64_t mn, stride_c;
  template <typename I> __device__ void operator()(I i) const {
    int64_t b = (int64_t)i / mn, j = (int64_t)i - b * mn;
    T *p = c + b * stride_c + j;
    *p = beta == (T)0 ? (T)0 : beta * *p;
  }
};

/* torch.set_float32_matmul_precision: 0 highest (F32), 1 high (TF32 tensor cores), 2 medium (BF16) */
std::atomic<int> g_f32_precision{0};
void cu_set_matmul_precision(int level) { g_f32_precision.store(level, std::memory_order_relaxed); }

/* cuBLAS's Ex gemm: A, B and C of type `ty`, alpha and beta floats, computing as `ct` */
cublasStatus_t gemm_ex(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                       const void *b, int ldb, long long sb, const void *a, int lda, long long sa, const float *beta, void *c,
                       int ldc, long long sc, int batch, cudaDataType_t ty, cublasComputeType_t ct) {
  if (batch == 1) return cublasGemmEx(h, opb, opa, n, m, k, alpha, b, ty, ldb, a, ty, lda, beta, c, ty, ldc, ct, CUBLAS_GEMM_DEFAULT);
  return cublasGemmStridedBatchedEx(h, opb, opa, n, m, k, alpha, b, ty, ldb, sb, a, ty, lda, sa, beta, c, ty, ldc, sc, batch, ct,
                                    CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                         const float *b, int ldb, long long sb, const float *a, int lda, long long sa, const float *beta,
                         float *c, int ldc, long long sc, int batch) {
  int p = g_f32_precision.load(std::memory_order_relaxed);
  if (p != 0)
    return gemm_ex(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch, CUDA_R_32F,
                   p == 1 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_FAST_16BF);
  if (batch == 1) return cublasSgemm(h, opb, opa, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
  return cublasSgemmStridedBatched(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch);
}
cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const double *alpha,
                         const double *b, int ldb, long long sb, const double *a, int lda, long long sa, const double *beta,
                         double *c, int ldc, long long sc, int batch) {
  if (batch == 1) return cublasDgemm(h, opb, opa, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
  return cublasDgemmStridedBatched(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch);
}

/* float16 and bfloat16 operands: C = alpha A B + beta C in F32 on the tensor cores, rounded once */
cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                         const Half16 *b, int ldb, long long sb, const Half16 *a, int lda, long long sa, const float *beta,
                         Half16 *c, int ldc, long long sc, int batch) {
  return gemm_ex(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch, CUDA_R_16F, CUBLAS_COMPUTE_32F);
}
cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                         const BHalf16 *b, int ldb, long long sb, const BHalf16 *a, int lda, long long sa, const float *beta,
                         BHalf16 *c, int ldc, long long sc, int batch) {
  return gemm_ex(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch, CUDA_R_16BF, CUBLAS_COMPUTE_32F);
}
/* the scalar type alpha and beta are given in: float for the half dtypes */
template <typename T> struct GemmScalar { typedef T type; };
template <> struct GemmScalar<Half16> { typedef float type; };
template <> struct GemmScalar<BHalf16> { typedef float type; };
template <typename T> const char *gemm_name(bool batched) {
  if (sizeof(T) == 2) return batched ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
  if (sizeof(T) == 4) return batched ? "cublasSgemmStridedBatched" : "cublasSgemm";
  return batched ? "cublasDgemmStridedBatched" : "cublasDgemm";
}

/* C = beta C for the half dtypes (k = 0), through float */
template <typename H>
struct ScaleCHalf {
  H *c; float beta; int64_t mn, stride_c;
  template <typename I> __device__ void operator()(I i) const {
    int64_t b = (int64_t)i / mn, j = (int64_t)i - b * mn;
    H *p = c + b * stride_c + j;
    *p = beta == 0.0f ? Conv<float, H>::f(0.0f) : Conv<float, H>::f(beta * Conv<H, float>::f(*p));
  }
};
template <typename T, typename S> struct ScaleOf { typedef ScaleC<T> type; };
template <typename S> struct ScaleOf<Half16, S> { typedef ScaleCHalf<Half16> type; };
template <typename S> struct ScaleOf<BHalf16, S> { typedef ScaleCHalf<BHalf16> type; };

/* Row-major C = alpha op(A) op(B) + beta C is column-major C^T = op(B)^T op(A)^T:
   cuBLAS gets (n, m, k) with B first. */
template <typename T, typename S = typename GemmScalar<T>::type>
dt_status gemm_t(int dev, DevState &s, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, S alpha, const T *a,
                 int64_t sa, const T *b, int64_t sb, S beta, T *c, int64_t sc) {
  if (k == 0) return run_map("gemm (k = 0)", s.stream, batch * m * n, typename ScaleOf<T, S>::type{c, beta, m * n, sc});
  /* (batch, m, k) @ (k, n), A's items back to back: one gemm of (batch*m, k) @ (k, n) */
  if (batch > 1 && sb == 0 && !ta && sa == m * k && sc == m * n && m * batch <= INT_MAX) {
    m *= batch;
    batch = 1;
  }
  const char *name = gemm_name<T>(batch != 1);
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    set_err("%s: matrix sizes m = %lld, n = %lld, k = %lld exceed cuBLAS's int range", name, (long long)m, (long long)n,
            (long long)k);
    return DT_ERR_UNSUPPORTED;
  }
  cublasHandle_t h;
  dt_status rc = blas_handle(dev, s, &h);
  if (rc != DT_OK) return rc;
  cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n), ldc = (int)n;
  std::lock_guard<std::mutex> lk(s.blas_mu);
  if ((sa == 0 || sb == 0) && batch > 1) {
    /* A shared operand: one strided-batched call with a zero stride for it
       (cuBLAS takes a batch stride of 0 for A or B; C's items never overlap).
       Should a cuBLAS refuse it, or the batch exceed an int, one call per item. */
    if (batch <= INT_MAX) {
      cublasStatus_t st = gemm_call(h, opb, opa, (int)n, (int)m, (int)k, &alpha, b, ldb, (long long)sb, a, lda,
                                    (long long)sa, &beta, c, ldc, (long long)sc, (int)batch);
      if (st == CUBLAS_STATUS_SUCCESS) return DT_OK;
      if (st != CUBLAS_STATUS_INVALID_VALUE && st != CUBLAS_STATUS_NOT_SUPPORTED) return blas_fail(name, st);
    }
    for (int64_t i = 0; i < batch; i++) {
      cublasStatus_t st = gemm_call(h, opb, opa, (int)n, (int)m, (int)k, &alpha, b + i * sb, ldb, 0, a + i * sa, lda, 0,
                                    &beta, c + i * sc, ldc, 0, 1);
      if (st != CUBLAS_STATUS_SUCCESS) return blas_fail(gemm_name<T>(false), st);
    }
    return DT_OK;
  }
  if (batch > INT_MAX) {
    set_err("%s: batch %lld exceeds cuBLAS's int range", name, (long long)batch);
    return DT_ERR_UNSUPPORTED;
  }
  cublasStatus_t st = gemm_call(h, opb, opa, (int)n, (int)m, (int)k, &alpha, b, ldb, (long long)sb, a, lda, (long long)sa,
                                &beta, c, ldc, (long long)sc, (int)batch);
  return st == CUBLAS_STATUS_SUCCESS ? DT_OK : blas_fail(name, st);
}

dt_status cu_gemm(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                  const void *a, int64_t stride_a, const void *b, int64_t stride_b, double beta, void *c, int64_t stride_c) {
  if (batch <= 0 || m <= 0 || n <= 0) return DT_OK;
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (t == DT_F16)
    return gemm_t<Half16>(dev, *in.s, ta, tb, batch, m, n, k, (float)alpha, static_cast<const Half16 *>(a), stride_a,
                          static_cast<const Half16 *>(b), stride_b, (float)beta, static_cast<Half16 *>(c), stride_c);
  if (t == DT_BF16)
    return gemm_t<BHalf16>(dev, *in.s, ta, tb, batch, m, n, k, (float)alpha, static_cast<const BHalf16 *>(a), stride_a,
                           static_cast<const BHalf16 *>(b), stride_b, (float)beta, static_cast<BHalf16 *>(c), stride_c);
  return by_float(t, "gemm", [&](auto z) {
    using T = decltype(z);
    return gemm_t<T>(dev, *in.s, ta, tb, batch, m, n, k, (T)alpha, static_cast<const T *>(a), stride_a,
                     static_cast<const T *>(b), stride_b, (T)beta, static_cast<T *>(c), stride_c);
  });
}

/* ---- axpy ---- */

/* y[i] += alpha * x[i] for T = float or double (alpha rounded to T); in a half dtype, the float
   operation on the converted elements, rounded once */
template <class T>
dt_status axpy_t(cudaStream_t st, int64_t n, double alpha, const void *x, void *y) {
  T *yp = static_cast<T *>(y);
  return zip_contig<T>(st, n, yp, static_cast<const T *>(x), yp, BAxpy<T>{(T)alpha}, "axpy");
}

/* the same in a half dtype: BAxpy<float> on the converted elements, rounded once */
template <bool BF> struct HalfAxpy {
  BAxpy<float> op;
  __device__ uint16_t operator()(uint16_t u, uint16_t w) const {
    return dt__f32_to_half(BF, op(dt__half_to_f32(BF, u), dt__half_to_f32(BF, w)));
  }
};

dt_status cu_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (t == DT_F16 || t == DT_BF16) {
    uint16_t *yp = static_cast<uint16_t *>(y);
    const uint16_t *xp = static_cast<const uint16_t *>(x);
    const BAxpy<float> op{(float)alpha};
    if (t == DT_F16) return zip_contig<uint16_t>(in.s->stream, n, yp, xp, yp, HalfAxpy<false>{op}, "axpy");
    return zip_contig<uint16_t>(in.s->stream, n, yp, xp, yp, HalfAxpy<true>{op}, "axpy");
  }
  return by_float(t, "axpy", [&](auto z) { return axpy_t<decltype(z)>(in.s->stream, n, alpha, x, y); });
}

/* ---- src/cuda/random.cu ---- */
/* y: (n,); thread j makes Philox block j of the draw: y[4j + q] = word q mapped
   to a uniform, or the Box-Muller normals of words (0, 1) and (2, 3), in
   double, exactly as the CPU backend (dt__cpu_random). */
template <bool Normal>
__global__ void k_random(float *y, int64_t n, uint64_t seed, uint64_t draw, const uint64_t *gen) {
  int64_t nb = (n + 3) / 4;
  dt__rng_at(gen, &seed, &draw);
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < nb; j += (int64_t)gridDim.x * blockDim.x) {
    uint32_t w[4];
    float z[4];
    dt__philox_block(seed, draw, (uint64_t)j, w);
    if (Normal) {
      dt__box_muller(w[0], w[1], &z[0], &z[1]);
      dt__box_muller(w[2], w[3], &z[2], &z[3]);
    } else {
#pragma unroll
      for (int q = 0; q < 4; q++) z[q] = dt__u32_to_uniform(w[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; q++)
      if (j * 4 + q < n) y[j * 4 + q] = z[q];
  }
}

dt_status cu_random(int dev, int normal, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, float *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (n <= 0) return DT_OK;
  unsigned grid = grid_for((n + 3) / 4, kBlock);
  if (normal) DT_LAUNCH(grid, kBlock, in.s->stream, k_random<true>)(y, n, seed, draw, gen);
  else DT_LAUNCH(grid, kBlock, in.s->stream, k_random<false>)(y, n, seed, draw, gen);
  return launched("random");
}

/* ---- src/cuda/optim.cu ---- */
/* One kernel per parameter and step: dt__optim_hp's update (devtensor.h), each value rounded
   to T at every operation in the CPU backend's order (multiplies and adds explicitly rounded,
   so nvcc fuses none into an FMA; IEEE division and square root); float16 and bfloat16 through
   the element every backend shares. */

template <class T>
struct OptimStep {
  T *p, *b1, *b2;
  const T *g;
  int kind, l2, use_mom, first;
  T lr, wd, mom, beta1, beta2, c1, c2, eps, bc2, nstep, decay;
  template <typename I>
  __device__ void operator()(I i) const {
    T d = g[i];
    if (kind == DT__OPT_SGD) {
      if (l2) d = d_affine(wd, p[i], d);
      if (use_mom) { b1[i] = first ? d : d_affine(mom, b1[i], d); d = b1[i]; }
      p[i] = d_affine(-lr, d, p[i]);
      return;
    }
    T pv = p[i];
    if (kind == DT__OPT_ADAMW) pv = d_mul(pv, decay);
    else if (l2) d = d_affine(wd, pv, d);
    T m = d_add(d_mul(beta1, b1[i]), d_mul(c1, d));
    T v = d_add(d_mul(beta2, b2[i]), d_mul(d_mul(c2, d), d));
    b1[i] = m; b2[i] = v;
    p[i] = d_affine(nstep, m / d_add(d_sqrt(v) / bc2, eps), pv);
  }
};

template <class T>
dt_status optim_t(cudaStream_t st, int64_t n, const dt__optim_hp *h, void *p, const void *g, void *buf1, void *buf2) {
  OptimStep<T> f;
  f.p = static_cast<T *>(p); f.g = static_cast<const T *>(g);
  f.b1 = static_cast<T *>(buf1); f.b2 = static_cast<T *>(buf2);
  f.kind = (int)h->kind; f.l2 = h->kind != DT__OPT_ADAMW && h->weight_decay != 0;
  f.use_mom = h->momentum != 0; f.first = h->first;
  f.lr = (T)h->lr; f.wd = (T)h->weight_decay; f.mom = (T)h->momentum;
  f.beta1 = (T)h->beta1; f.beta2 = (T)h->beta2; f.c1 = (T)(1.0 - h->beta1); f.c2 = (T)(1.0 - h->beta2);
  f.eps = (T)h->eps; f.bc2 = (T)h->bc2_sqrt; f.nstep = (T)(-h->step_size);
  f.decay = (T)(1.0 - h->lr * h->weight_decay);
  return run_map("optimizer step", st, n, f);
}

/* float16 and bfloat16 parameters: dt__optim_half1 (devtensor.h), the CPU backend's element */
struct OptimHalfStep {
  dt__optim_hc c;
  uint16_t *p, *b1, *b2;
  const uint16_t *g;
  template <typename I>
  __device__ void operator()(I i) const { dt__optim_half1(&c, p + i, b1 ? b1 + i : nullptr, b2 ? b2 + i : nullptr, g[i]); }
};

dt_status cu_optim_step(int dev, dt_dtype t, int64_t n, const dt__optim_hp *h, void *p, const void *g, void *buf1,
                        void *buf2) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (t == DT_F16 || t == DT_BF16) {
    OptimHalfStep f;
    dt__optim_half_consts(h, t == DT_BF16, &f.c);
    f.p = static_cast<uint16_t *>(p); f.g = static_cast<const uint16_t *>(g);
    f.b1 = static_cast<uint16_t *>(buf1); f.b2 = static_cast<uint16_t *>(buf2);
    return run_map("optimizer step", in.s->stream, n, f);
  }
  return by_float(t, "an optimizer step", [&](auto z) { return optim_t<decltype(z)>(in.s->stream, n, h, p, g, buf1, buf2); });
}

/* ---- src/cuda/compare.cu ---- */
/* y: dims (row-major, contiguous), DT_BOOL = a op b, a and b read through their element strides
   (0 where they broadcast). Bool compares as uint8 (its bytes are 0 or 1). */

template <typename T> __device__ inline uint8_t cmp_op(int op, T u, T w) {
  switch (op) {
    case DT__C_EQ: return u == w;
    case DT__C_NE: return u != w;
    case DT__C_LT: return u < w;
    default: return u <= w;
  }
}

/* float16 and bfloat16: compared as the float values they hold (every one exactly) */
template <> __device__ inline uint8_t cmp_op<Half16>(int op, Half16 u, Half16 w) {
  return cmp_op<float>(op, dt__f16_to_f32(u.v), dt__f16_to_f32(w.v));
}
template <> __device__ inline uint8_t cmp_op<BHalf16>(int op, BHalf16 u, BHalf16 w) {
  return cmp_op<float>(op, dt__bf16_to_f32(u.v), dt__bf16_to_f32(w.v));
}

template <typename T>
struct CmpContig {
  const T *a; const T *b; uint8_t *y; int op;
  template <typename I> __device__ void operator()(I i) const { y[i] = cmp_op<T>(op, a[i], b[i]); }
};
template <typename T, typename J>
struct CmpStrided : BcastGeom<J> {
  const T *a; const T *b; uint8_t *y; int op;
  template <typename I> __device__ void operator()(I i) const {
    J oa, ob;
    this->offsets((J)i, oa, ob);
    y[i] = cmp_op<T>(op, a[oa], b[ob]);
  }
};

template <typename T, typename J>
dt_status compare_strided(cudaStream_t st, int op, const dt__bcast &g, const T *a, const T *b, uint8_t *y) {
  CmpStrided<T, J> f;
  f.a = a; f.b = b; f.y = y; f.op = op;
  f.set(g);
  return run_map("compare (broadcast)", st, g.numel, f);
}

template <typename T>
dt_status compare_t(cudaStream_t st, int op, const dt__bcast &g, const void *a, const void *b, void *y) {
  const T *ap = static_cast<const T *>(a);
  const T *bp = static_cast<const T *>(b);
  uint8_t *yp = static_cast<uint8_t *>(y);
  if (g.contiguous) return run_map("compare", st, g.numel, CmpContig<T>{ap, bp, yp, op});
  if (g.numel <= (int64_t)INT32_MAX) return compare_strided<T, uint32_t>(st, op, g, ap, bp, yp);
  return compare_strided<T, int64_t>(st, op, g, ap, bp, yp);
}

dt_status cu_compare(int dev, dt__compare_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  switch (t) {
    case DT_F32: return compare_t<float>(in.s->stream, (int)op, *g, a, b, y);
    case DT_F64: return compare_t<double>(in.s->stream, (int)op, *g, a, b, y);
    case DT_I32: return compare_t<int32_t>(in.s->stream, (int)op, *g, a, b, y);
    case DT_I64: return compare_t<int64_t>(in.s->stream, (int)op, *g, a, b, y);
    case DT_U8: case DT_BOOL: return compare_t<uint8_t>(in.s->stream, (int)op, *g, a, b, y);
    case DT_F16: return compare_t<Half16>(in.s->stream, (int)op, *g, a, b, y);
    case DT_BF16: return compare_t<BHalf16>(in.s->stream, (int)op, *g, a, b, y);
  }
  set_err("compare: unknown dtype %d", (int)t);
  return DT_ERR_DTYPE;
}

/* ---- src/cuda/index.cu ---- */
/* Elements move as unsigned integers of their size (1, 2, 4 or 8 bytes), so one kernel
   serves every dtype. index_select never follows an index outside [0, n): the kernel writes
   zeros for it and records it in the device's IndexErr (plain stores: every racing writer of
   one launch writes size n and one of the bad values, each store a whole aligned word). The
   record is read only when an index_select ran since it was last read, at the next
   synchronize or device-to-host copy (index_errors), which then fails with the bad value:
   no copy back to the host per call. */

template <size_t ES> struct Bits;
template <> struct Bits<1> { using T = uint8_t; };
template <> struct Bits<2> { using T = uint16_t; };
template <> struct Bits<4> { using T = uint32_t; };
template <> struct Bits<8> { using T = unsigned long long; };

/* y[sum_d i_d * bs_d] = x[sum_d i_d * as_d]; J as in ZipStrided (uint32_t when every offset fits) */
template <typename T, typename J>
struct StridedCopy : BcastGeom<J> {
  const T *x; T *y;
  template <typename I> __device__ void operator()(I i) const {
    J ox, oy;
    this->offsets((J)i, ox, oy);
    y[oy] = x[ox];
  }
};

template <typename T, typename J>
dt_status strided_t(cudaStream_t st, const dt__bcast &g, const void *x, void *y) {
  StridedCopy<T, J> f;
  f.x = static_cast<const T *>(x); f.y = static_cast<T *>(y);
  f.set(g);
  return run_map("copy_strided", st, g.numel, f);
}

template <size_t ES>
dt_status strided_es(cudaStream_t st, const dt__bcast &g, const void *x, void *y) {
  /* the largest offset either side, + 1: 32-bit indexing when it and numel fit */
  uint64_t ax = 1, by = 1;
  for (int d = 0; d < g.ndim; d++) {
    ax += (uint64_t)(g.dims[d] - 1) * (uint64_t)g.astride[d];
    by += (uint64_t)(g.dims[d] - 1) * (uint64_t)g.bstride[d];
  }
  if (g.numel <= (int64_t)INT32_MAX && ax <= (uint64_t)INT32_MAX && by <= (uint64_t)INT32_MAX)
    return strided_t<typename Bits<ES>::T, uint32_t>(st, g, x, y);
  return strided_t<typename Bits<ES>::T, int64_t>(st, g, x, y);
}

dt_status cu_copy_strided(int dev, size_t es, const dt__bcast *g, const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (g->numel <= 0) return DT_OK;
  switch (es) {
    case 1: return strided_es<1>(in.s->stream, *g, x, y);
    case 2: return strided_es<2>(in.s->stream, *g, x, y);
    case 4: return strided_es<4>(in.s->stream, *g, x, y);
    case 8: return strided_es<8>(in.s->stream, *g, x, y);
  }
  set_err("copy_strided: elements of %zu bytes are not supported", es);
  return DT_ERR_DTYPE;
}

/* bad != 0 once an index outside [0, size) was seen; value: one such index; op: which operation
   (IndexOp) saw it */
struct IndexErr { long long bad, value, size, op; };
enum IndexOp { kIndexSelect = 0, kGather = 1, kScatterAdd = 2, kIndexAdd = 3 };

struct IndexErrClear {
  IndexErr *err;
  template <typename I> __device__ void operator()(I) const { err->bad = 0; err->value = 0; err->size = 0; err->op = 0; }
};

/* y: (outer, k, inner) from x: (outer, n, inner), y[o, j, c] = x[o, idx[j], c] */
template <typename T, typename J>
struct IndexGather {
  const T *x; T *y; const int64_t *idx; J n, k, inner; IndexErr *err;
  template <typename I> __device__ void operator()(I i) const {
    J c = (J)i % inner, r = (J)i / inner, j = r % k, o = r / k;
    int64_t v = idx[j];
    if (v < 0 || v >= (int64_t)n) {
      y[i] = (T)0;
      err->value = (long long)v; err->size = (long long)n; err->op = kIndexSelect; err->bad = 1;
      return;
    }
    y[i] = x[(o * n + (J)v) * inner + c];
  }
};

/* an empty y: the indices are still checked */
struct IndexCheck {
  const int64_t *idx; int64_t n; IndexErr *err;
  template <typename I> __device__ void operator()(I j) const {
    int64_t v = idx[j];
    if (v < 0 || v >= n) { err->value = (long long)v; err->size = (long long)n; err->op = kIndexSelect; err->bad = 1; }
  }
};

template <size_t ES>
dt_status gather_es(cudaStream_t st, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k, const void *x,
                    void *y, IndexErr *err) {
  using T = typename Bits<ES>::T;
  int64_t numel = outer * k * inner;
  if (numel <= (int64_t)INT32_MAX && (uint64_t)outer * (uint64_t)n * (uint64_t)inner <= (uint64_t)INT32_MAX)
    return run_map("index_select", st, numel,
                   IndexGather<T, uint32_t>{static_cast<const T *>(x), static_cast<T *>(y), idx, (uint32_t)n, (uint32_t)k,
                                            (uint32_t)inner, err});
  return run_map("index_select", st, numel,
                 IndexGather<T, int64_t>{static_cast<const T *>(x), static_cast<T *>(y), idx, n, k, inner, err});
}

/* The device's error record, made and cleared at first use. Call with `dev` current. Outside the
   caching allocator (like the stream), so it never shows in the memory statistics. */
dt_status index_err_record(int dev, DevState &s, IndexErr **out) {
  std::lock_guard<std::mutex> lk(s.init_mu);
  if (!s.index_err) {
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, sizeof(IndexErr));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      set_err("out of memory on cuda:%d: cudaMalloc of index_select's %zu-byte error record failed: %s", dev,
              sizeof(IndexErr), cudaGetErrorString(e));
      return DT_ERR_OUT_OF_MEMORY;
    }
    dt_status st = run_map("index_select (error record)", s.stream, 1, IndexErrClear{static_cast<IndexErr *>(p)});
    if (st != DT_OK) { (void)cudaFree(p); return st; }
    s.index_err = p;
  }
  *out = static_cast<IndexErr *>(s.index_err);
  return DT_OK;
}

/* After an index_select: reads the record (waiting for the stream), and on a bad index
   clears it and fails with the value. Call with `dev` current. */
dt_status index_errors(int dev, DevState &s) {
  if (!s.index_pending.exchange(false, std::memory_order_acq_rel)) return DT_OK;
  IndexErr h = {0, 0, 0, 0};
  cudaError_t e = cudaMemcpyAsync(&h, s.index_err, sizeof h, cudaMemcpyDeviceToHost, s.stream);
  if (e != cudaSuccess) return cuda_fail("cudaMemcpyAsync (index_select's error record)", e);
  dt_status st = sync_stream(s);
  if (st != DT_OK || !h.bad) return st;
  st = run_map("index_select (error record)", s.stream, 1, IndexErrClear{static_cast<IndexErr *>(s.index_err)});
  if (st != DT_OK) return st;
  const char *who = h.op == kGather       ? "dt_gather"
                    : h.op == kScatterAdd ? "dt_scatter_add"
                    : h.op == kIndexAdd   ? "dt_index_select's backward"
                                          : "dt_index_select";
  set_err("%s on cuda:%d was given index %lld, out of range for a dimension of size %lld (expected 0 to %lld); "
          "found by its kernel, which %s, and reported at this first synchronizing call after it",
          who, dev, h.value, h.size, h.size - 1, h.op == kScatterAdd || h.op == kIndexAdd ? "skipped it" : "wrote zeros for it");
  return DT_ERR_INVALID_ARGUMENT;
}

dt_status cu_index_select(int dev, size_t es, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k,
                          const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (k <= 0) return DT_OK;
  IndexErr *err = nullptr;
  dt_status st = index_err_record(dev, *in.s, &err);
  if (st != DT_OK) return st;
  in.s->index_pending.store(true, std::memory_order_release);
  if (outer <= 0 || inner <= 0) return run_map("index_select (check)", in.s->stream, k, IndexCheck{idx, n, err});
  switch (es) {
    case 1: return gather_es<1>(in.s->stream, outer, n, inner, idx, k, x, y, err);
    case 2: return gather_es<2>(in.s->stream, outer, n, inner, idx, k, x, y, err);
    case 4: return gather_es<4>(in.s->stream, outer, n, inner, idx, k, x, y, err);
    case 8: return gather_es<8>(in.s->stream, outer, n, inner, idx, k, x, y, err);
  }
  set_err("index_select: elements of %zu bytes are not supported", es);
  return DT_ERR_DTYPE;
}

/* ---- src/cuda/index2.cu ---- */
/* where, gather, scatter-add, index-add (index_select's backward) and random integers. Moved
   elements go as unsigned integers of their size (Bits, index.cu); the adds are atomicAdd, so
   where several elements land on one their sum's order is the hardware's. An index outside
   [0, n) is never followed: it is recorded in the device's IndexErr (index.cu) and reported at
   the next synchronizing call, as index_select's. Offsets are int64_t throughout. */

/* up to three operands' element strides over dims (row-major); off(i) for element i of dims */
struct Geom3 {
  int nd;
  int64_t dims[DT_MAX_DIMS], s0[DT_MAX_DIMS], s1[DT_MAX_DIMS], s2[DT_MAX_DIMS];
  void set(const dt__bcast &g, const int64_t *cs) {
    nd = g.ndim;
    for (int d = 0; d < DT_MAX_DIMS; d++) {
      dims[d] = d < g.ndim ? g.dims[d] : 1;
      s0[d] = d < g.ndim ? g.astride[d] : 0;
      s1[d] = d < g.ndim ? g.bstride[d] : 0;
      s2[d] = d < g.ndim && cs ? cs[d] : 0;
    }
  }
  __device__ __forceinline__ void offsets(int64_t i, int64_t &o0, int64_t &o1, int64_t &o2) const {
    int64_t rem = i;
    o0 = 0; o1 = 0; o2 = 0;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t q = rem % dims[d];
      rem /= dims[d];
      o0 += q * s0[d]; o1 += q * s1[d]; o2 += q * s2[d];
    }
  }
};

/* y[i] = c[oc] ? a[oa] : b[ob] */
template <typename T>
struct WhereOp {
  Geom3 g;
  const uint8_t *c; const T *a; const T *b; T *y;
  template <typename I> __device__ void operator()(I i) const {
    int64_t oa, ob, oc;
    g.offsets((int64_t)i, oa, ob, oc);
    y[i] = c[oc] ? a[oa] : b[ob];
  }
};

template <typename T>
dt_status where_t(cudaStream_t st, const dt__bcast &g, const int64_t *cs, const void *c, const void *a, const void *b, void *y) {
  WhereOp<T> f;
  f.g.set(g, cs);
  f.c = static_cast<const uint8_t *>(c); f.a = static_cast<const T *>(a); f.b = static_cast<const T *>(b);
  f.y = static_cast<T *>(y);
  return run_map("where", st, g.numel, f);
}

dt_status cu_where(int dev, size_t es, const dt__bcast *g, const int64_t *cstride, const void *c, const void *a,
                   const void *b, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (g->numel <= 0) return DT_OK;
  switch (es) {
    case 1: return where_t<Bits<1>::T>(in.s->stream, *g, cstride, c, a, b, y);
    case 2: return where_t<Bits<2>::T>(in.s->stream, *g, cstride, c, a, b, y);
    case 4: return where_t<Bits<4>::T>(in.s->stream, *g, cstride, c, a, b, y);
    case 8: return where_t<Bits<8>::T>(in.s->stream, *g, cstride, c, a, b, y);
  }
  set_err("where: elements of %zu bytes are not supported", es);
  return DT_ERR_DTYPE;
}

/* gather: y[ob] = x[oa + idx[i] stride], 0 for a bad index */
template <typename T>
struct GatherOp {
  Geom3 g;
  const int64_t *idx; int64_t n, stride;
  const T *x; T *y; IndexErr *err;
  template <typename I> __device__ void operator()(I i) const {
    int64_t oa, ob, unused;
    g.offsets((int64_t)i, oa, ob, unused);
    int64_t v = idx[i];
    if (v < 0 || v >= n) {
      y[ob] = (T)0;
      err->value = (long long)v; err->size = (long long)n; err->op = kGather; err->bad = 1;
      return;
    }
    y[ob] = x[oa + v * stride];
  }
};

template <typename T>
dt_status gather_t(cudaStream_t st, const dt__bcast &g, int64_t n, int64_t stride, const int64_t *idx, const void *x, void *y,
                   IndexErr *err) {
  GatherOp<T> f;
  f.g.set(g, nullptr);
  f.idx = idx; f.n = n; f.stride = stride;
  f.x = static_cast<const T *>(x); f.y = static_cast<T *>(y); f.err = err;
  return run_map("gather", st, g.numel, f);
}

dt_status cu_gather(int dev, size_t es, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx, const void *x,
                    void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (g->numel <= 0) return DT_OK;
  IndexErr *err = nullptr;
  dt_status st = index_err_record(dev, *in.s, &err);
  if (st != DT_OK) return st;
  in.s->index_pending.store(true, std::memory_order_release);
  switch (es) {
    case 1: return gather_t<Bits<1>::T>(in.s->stream, *g, n, stride, idx, x, y, err);
    case 2: return gather_t<Bits<2>::T>(in.s->stream, *g, n, stride, idx, x, y, err);
    case 4: return gather_t<Bits<4>::T>(in.s->stream, *g, n, stride, idx, x, y, err);
    case 8: return gather_t<Bits<8>::T>(in.s->stream, *g, n, stride, idx, x, y, err);
  }
  set_err("gather: elements of %zu bytes are not supported", es);
  return DT_ERR_DTYPE;
}

/* *p += v as one atomic read-modify-write; integers wrap (int64 through unsigned long long) */
__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(int32_t *p, int32_t v) { atomicAdd(reinterpret_cast<int *>(p), (int)v); }
__device__ __forceinline__ void atomic_add(int64_t *p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long *>(p), (unsigned long long)v);
}

/* scatter_add: y[oa + idx[i] stride] += src[ob]; a bad index skipped */
template <typename T>
struct ScatterAddOp {
  Geom3 g;
  const int64_t *idx; int64_t n, stride;
  const T *src; T *y; IndexErr *err;
  template <typename I> __device__ void operator()(I i) const {
    int64_t oa, ob, unused;
    g.offsets((int64_t)i, oa, ob, unused);
    int64_t v = idx[i];
    if (v < 0 || v >= n) {
      err->value = (long long)v; err->size = (long long)n; err->op = kScatterAdd; err->bad = 1;
      return;
    }
    atomic_add(&y[oa + v * stride], src[ob]);
  }
};

template <typename T>
dt_status scatter_add_t(cudaStream_t st, const dt__bcast &g, int64_t n, int64_t stride, const int64_t *idx, const void *src,
                        void *y, IndexErr *err) {
  ScatterAddOp<T> f;
  f.g.set(g, nullptr);
  f.idx = idx; f.n = n; f.stride = stride;
  f.src = static_cast<const T *>(src); f.y = static_cast<T *>(y); f.err = err;
  return run_map("scatter_add", st, g.numel, f);
}

dt_status cu_scatter_add(int dev, dt_dtype t, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                         const void *src, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (g->numel <= 0) return DT_OK;
  IndexErr *err = nullptr;
  dt_status st = index_err_record(dev, *in.s, &err);
  if (st != DT_OK) return st;
  in.s->index_pending.store(true, std::memory_order_release);
  switch (t) {
    case DT_F32: return scatter_add_t<float>(in.s->stream, *g, n, stride, idx, src, y, err);
    case DT_F64: return scatter_add_t<double>(in.s->stream, *g, n, stride, idx, src, y, err);
    case DT_I32: return scatter_add_t<int32_t>(in.s->stream, *g, n, stride, idx, src, y, err);
    case DT_I64: return scatter_add_t<int64_t>(in.s->stream, *g, n, stride, idx, src, y, err);
    default: break;
  }
  set_err("scatter_add: %s is not supported", dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

/* index_add: y (outer, n, inner)[o, idx[j], c] += src (outer, k, inner)[o, j, c] */
template <typename T>
struct IndexAddOp {
  const T *src; T *y; const int64_t *idx; int64_t n, k, inner; IndexErr *err;
  template <typename I> __device__ void operator()(I i) const {
    int64_t c = (int64_t)i % inner, r = (int64_t)i / inner, j = r % k, o = r / k;
    int64_t v = idx[j];
    if (v < 0 || v >= n) {
      err->value = (long long)v; err->size = (long long)n; err->op = kIndexAdd; err->bad = 1;
      return;
    }
    atomic_add(&y[(o * n + v) * inner + c], src[i]);
  }
};

dt_status cu_index_add(int dev, dt_dtype t, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k,
                       const void *src, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (outer <= 0 || inner <= 0 || k <= 0) return DT_OK;
  IndexErr *err = nullptr;
  dt_status st = index_err_record(dev, *in.s, &err);
  if (st != DT_OK) return st;
  in.s->index_pending.store(true, std::memory_order_release);
  int64_t numel = outer * k * inner;
  if (t == DT_F32)
    return run_map("index_add", in.s->stream, numel,
                   IndexAddOp<float>{static_cast<const float *>(src), static_cast<float *>(y), idx, n, k, inner, err});
  if (t == DT_F64)
    return run_map("index_add", in.s->stream, numel,
                   IndexAddOp<double>{static_cast<const double *>(src), static_cast<double *>(y), idx, n, k, inner, err});
  set_err("index_add: %s is not supported", dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

/* y[i] = dt__random_int_at(seed, draw, i, low, range): the CPU's numbers */
struct RandomIntOp {
  uint64_t seed, draw, range; int64_t low; int64_t *y; const uint64_t *gen;
  template <typename I> __device__ void operator()(I i) const {
    uint64_t s = seed, d = draw;
    dt__rng_at(gen, &s, &d);
    y[i] = dt__random_int_at(s, d, (uint64_t)i, low, range);
  }
};

dt_status cu_random_int(int dev, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, int64_t low, uint64_t range, int64_t *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (n <= 0) return DT_OK;
  return run_map("random_int", in.s->stream, n, RandomIntOp{seed, draw, range, low, y, gen});
}

/* ---- src/cuda/classify.cu ---- */
/* Contiguous rows (inner == 1) take one warp per row (eight rows a block: rows of few elements
   and many rows), or one block of 256 threads per row when rows are long; other shapes one
   thread per column (o, i), i fastest (coalesced). A team (warp or block) reduces with
   butterfly shuffles, so every thread of it holds the result; all threads of a team work on
   the same rows, so they meet at the same shuffles and barriers. Sums of exponentials are in
   double, as the CPU's. T, the elements' type: float, double or a half type, which the kernels
   read as float and compute in float (half.cu's Calc, ld and sto). */

constexpr int64_t kLongRow = 1024; /* from this length a row gets a whole block */

/* The reduction of v over the team: a warp (Block false) or the whole block. */
template <bool Block, typename V, typename F>
__device__ V team_reduce(V v, F f) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, off));
  if (Block) {
    __shared__ V part[32];
    int nw = blockDim.x >> 5;
    __syncthreads(); /* part may still be read from a previous call */
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = part[0];
    for (int w = 1; w < nw; w++) v = f(v, part[w]);
  }
  return v;
}

/* max with NaN winning: a NaN in a row makes its softmax NaN, as PyTorch's */
template <typename T> struct NanMax {
  __device__ T operator()(T a, T b) const { return a != a ? a : b != b ? b : a > b ? a : b; }
};
template <typename T> struct Plus {
  __device__ T operator()(T a, T b) const { return a + b; }
};

/* (vb, ib) beats (va, ia): NaN first, then the larger (min: smaller), ties to the lower index */
template <typename T>
__device__ inline bool arg_beats(T vb, int64_t ib, T va, int64_t ia, bool min) {
  bool nb = vb != vb, na = va != va;
  if (nb || na) return nb && (!na || ib < ia);
  if (vb == va) return ib < ia;
  return min ? vb < va : vb > va;
}

/* This thread's team: its first row, the step to its next, its lane and the team's width. */
template <bool Block>
__device__ inline void team_place(int64_t *row0, int64_t *rstep, int *lane, int *width) {
  if (Block) {
    *row0 = blockIdx.x; *rstep = gridDim.x; *lane = threadIdx.x; *width = blockDim.x;
  } else {
    int per = blockDim.x >> 5;
    *row0 = (int64_t)blockIdx.x * per + (threadIdx.x >> 5); *rstep = (int64_t)gridDim.x * per;
    *lane = threadIdx.x & 31; *width = 32;
  }
}

/* grid and block for `rows` rows of `len`: a block per row, or a warp per row, eight rows a
   block (fewer rows: fewer warps) */
void rows_launch(int64_t rows, int64_t len, bool *block_per_row, unsigned *grid, int *block) {
  *block_per_row = len >= kLongRow;
  int per = rows < kBlock / 32 ? (int)(rows < 1 ? 1 : rows) : kBlock / 32;
  *block = *block_per_row ? kBlock : 32 * per;
  int64_t g = *block_per_row ? rows : (rows + per - 1) / per;
  *grid = (unsigned)(g < 1 ? 1 : g > kMaxGrid ? kMaxGrid : g);
}

/* one block for n items: whole warps, at most kBlock threads */
int small_block(int64_t n) { return n >= kBlock ? kBlock : n <= 32 ? 32 : (int)((n + 31) / 32 * 32); }

/* x: (outer, len) -> vals, idx: (outer,), either may be null */
template <typename T, bool Block>
__global__ void k_arg_rows(const T *x, int64_t outer, int64_t len, bool min, T *vals, int64_t *idx) {
  typedef typename Calc<T>::type C;
  int64_t row0, rstep;
  int lane, width;
  team_place<Block>(&row0, &rstep, &lane, &width);
  for (int64_t o = row0; o < outer; o += rstep) {
    const T *p = x + o * len;
    C bv = min ? (C)CUDART_INF : (C)-CUDART_INF;
    int64_t bi = INT64_MAX; /* no element yet: loses to any */
    for (int64_t r = lane; r < len; r += width)
      if (arg_beats(ld(p[r]), r, bv, bi, min)) { bv = ld(p[r]); bi = r; }
    /* a pair does not shuffle as one: value and index side by side */
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      C ov = __shfl_xor_sync(0xffffffffu, bv, off);
      int64_t oi = __shfl_xor_sync(0xffffffffu, bi, off);
      if (arg_beats(ov, oi, bv, bi, min)) { bv = ov; bi = oi; }
    }
    if (Block) {
      __shared__ C pv[32];
      __shared__ int64_t pi[32];
      int nw = blockDim.x >> 5;
      __syncthreads();
      if ((threadIdx.x & 31) == 0) { pv[threadIdx.x >> 5] = bv; pi[threadIdx.x >> 5] = bi; }
      __syncthreads();
      bv = pv[0]; bi = pi[0];
      for (int w = 1; w < nw; w++)
        if (arg_beats(pv[w], pi[w], bv, bi, min)) { bv = pv[w]; bi = pi[w]; }
    }
    if (lane == 0) {
      if (vals) vals[o] = sto<T>(bv);
      if (idx) idx[o] = bi;
    }
  }
}

/* x: (outer, len, inner) -> (outer, inner), a thread per output */
template <typename T>
__global__ void k_arg_cols(const T *x, int64_t outer, int64_t len, int64_t inner, bool min, T *vals, int64_t *idx) {
  typedef typename Calc<T>::type C;
  int64_t nout = outer * inner;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < nout; t += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = t / inner, i = t - o * inner;
    const T *p = x + o * len * inner + i;
    C bv = ld(p[0]);
    int64_t bi = 0;
    for (int64_t r = 1; r < len && bv == bv; r++) {
      C v = ld(p[r * inner]);
      if (v != v || (min ? v < bv : v > bv)) { bv = v; bi = r; }
    }
    if (vals) vals[t] = sto<T>(bv);
    if (idx) idx[t] = bi;
  }
}

template <typename T>
dt_status arg_reduce_t(cudaStream_t st, bool min, int64_t outer, int64_t len, int64_t inner, const T *x, T *vals, int64_t *idx) {
  if (inner == 1) {
    bool bpr;
    unsigned grid;
    int block;
    rows_launch(outer, len, &bpr, &grid, &block);
    if (bpr) DT_LAUNCH_COOP(grid, block, st, k_arg_rows<T, true>)(x, outer, len, min, vals, idx);
    else DT_LAUNCH_COOP(grid, block, st, k_arg_rows<T, false>)(x, outer, len, min, vals, idx);
  } else {
    DT_LAUNCH(grid_for(outer * inner, kBlock), kBlock, st, k_arg_cols<T>)(x, outer, len, inner, min, vals, idx);
  }
  return launched("arg_reduce");
}

dt_status cu_arg_reduce(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *vals,
                        int64_t *idx) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (outer <= 0 || inner <= 0 || len <= 0) return DT_OK;
  return by_float_half(t, "arg_reduce", [&](auto z) {
    using T = decltype(z);
    return arg_reduce_t<T>(in.s->stream, min != 0, outer, len, inner, static_cast<const T *>(x), static_cast<T *>(vals), idx);
  });
}

/* x, y: (outer, len); y = softmax or log_softmax of each row (max subtracted first) */
template <typename T, bool Block>
__global__ void k_softmax_rows(const T *x, int64_t outer, int64_t len, bool lg, T *y) {
  typedef typename Calc<T>::type C;
  int64_t row0, rstep;
  int lane, width;
  team_place<Block>(&row0, &rstep, &lane, &width);
  for (int64_t o = row0; o < outer; o += rstep) {
    const T *p = x + o * len;
    T *q = y + o * len;
    C m = (C)-CUDART_INF;
    double s = 0; /* in double, as the CPU's */
    for (int64_t r = lane; r < len; r += width) m = NanMax<C>()(m, ld(p[r]));
    m = team_reduce<Block>(m, NanMax<C>());
    for (int64_t r = lane; r < len; r += width) s += (double)d_exp(ld(p[r]) - m);
    s = team_reduce<Block>(s, Plus<double>());
    if (lg) {
      C ls = (C)log(s);
      for (int64_t r = lane; r < len; r += width) q[r] = sto<T>((ld(p[r]) - m) - ls);
    } else {
      C inv = (C)(1.0 / s);
      for (int64_t r = lane; r < len; r += width) q[r] = sto<T>(d_exp(ld(p[r]) - m) * inv);
    }
  }
}

/* x, y: (outer, len, inner), a thread per column (o, i) */
template <typename T>
__global__ void k_softmax_cols(const T *x, int64_t outer, int64_t len, int64_t inner, bool lg, T *y) {
  typedef typename Calc<T>::type C;
  int64_t nout = outer * inner;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < nout; t += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = t / inner, i = t - o * inner;
    const T *p = x + o * len * inner + i;
    T *q = y + o * len * inner + i;
    C m = (C)-CUDART_INF;
    double s = 0;
    for (int64_t r = 0; r < len; r++) m = NanMax<C>()(m, ld(p[r * inner]));
    for (int64_t r = 0; r < len; r++) s += (double)d_exp(ld(p[r * inner]) - m);
    if (lg) {
      C ls = (C)log(s);
      for (int64_t r = 0; r < len; r++) q[r * inner] = sto<T>((ld(p[r * inner]) - m) - ls);
    } else {
      C inv = (C)(1.0 / s);
      for (int64_t r = 0; r < len; r++) q[r * inner] = sto<T>(d_exp(ld(p[r * inner]) - m) * inv);
    }
  }
}

template <typename T>
dt_status softmax_t(cudaStream_t st, bool lg, int64_t outer, int64_t len, int64_t inner, const T *x, T *y) {
  if (inner == 1) {
    bool bpr;
    unsigned grid;
    int block;
    rows_launch(outer, len, &bpr, &grid, &block);
    if (bpr) DT_LAUNCH_COOP(grid, block, st, k_softmax_rows<T, true>)(x, outer, len, lg, y);
    else DT_LAUNCH_COOP(grid, block, st, k_softmax_rows<T, false>)(x, outer, len, lg, y);
  } else {
    DT_LAUNCH(grid_for(outer * inner, kBlock), kBlock, st, k_softmax_cols<T>)(x, outer, len, inner, lg, y);
  }
  return launched("softmax");
}

dt_status cu_softmax(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (outer <= 0 || inner <= 0 || len <= 0) return DT_OK;
  return by_float_half(t, "softmax", [&](auto z) {
    using T = decltype(z);
    return softmax_t<T>(in.s->stream, lg != 0, outer, len, inner, static_cast<const T *>(x), static_cast<T *>(y));
  });
}

/* Labels: the first row of target (n,) whose label is outside [0, c), if any, goes into the
   device's record rec = {1 + tag (0: none), row, label, c} unless it holds one already (the first failure
   since the last report wins). One block; the host reads rec at the next synchronizing call. */
struct Min64 {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? a : b; }
};
__global__ void k_check_labels(const int64_t *target, int64_t n, int64_t c, int64_t tag, int64_t *rec) {
  int64_t bad = INT64_MAX;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    if ((target[i] < 0 || target[i] >= c) && i < bad) bad = i;
  bad = team_reduce<true>(bad, Min64());
  if (threadIdx.x == 0 && bad != INT64_MAX && rec[0] == 0) {
    rec[1] = bad; rec[2] = target[bad]; rec[3] = c;
    rec[0] = 1 + tag;
  }
}

/* logits: (n, c), target: (n,). Loss: part[i] = log-sum-exp(row i) - row i [label] (double);
   grad: g (n, c) = (softmax - onehot) / n. A bad label is never read with: its row is NaN. */
template <typename T, bool Block>
__global__ void k_xent_rows(const T *x, const int64_t *target, int64_t n, int64_t c, double *part, T *g) {
  typedef typename Calc<T>::type C;
  int64_t row0, rstep;
  int lane, width;
  team_place<Block>(&row0, &rstep, &lane, &width);
  for (int64_t o = row0; o < n; o += rstep) {
    const T *p = x + o * c;
    int64_t lab = target[o];
    bool ok = lab >= 0 && lab < c;
    C m = (C)-CUDART_INF;
    double s = 0;
    for (int64_t r = lane; r < c; r += width) m = NanMax<C>()(m, ld(p[r]));
    m = team_reduce<Block>(m, NanMax<C>());
    for (int64_t r = lane; r < c; r += width) s += (double)d_exp(ld(p[r]) - m);
    s = team_reduce<Block>(s, Plus<double>());
    if (g) {
      T *q = g + o * c;
      const double inv = 1.0 / s, scale = 1.0 / (double)n;
      /* (e / s - onehot) / n in double, as the CPU's, rounded once to C (with 1 / s in float, a
         confident row's label entry, about 1 - 1, would lose most of its digits) */
      for (int64_t r = lane; r < c; r += width)
        q[r] = sto<T>(ok ? (C)(d_affine((double)d_exp(ld(p[r]) - m), inv, r == lab ? -1.0 : 0.0) * scale) : (C)CUDART_NAN);
    } else if (lane == 0) {
      part[o] = ok ? log(s) + (double)m - ldd(p[lab]) : CUDART_NAN;
    }
  }
}

/* y = the mean of part (n,), in order within each thread, then block_sum */
template <typename T>
__global__ void k_xent_mean(const double *part, int64_t n, T *y) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += part[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *y = sto<T>(acc / (double)n);
}

/* The device's label record (4 int64, zeroed), made at its first cross-entropy. Call with dev current. */
dt_status label_record(int dev, DevState &s, int64_t **out) {
  std::lock_guard<std::mutex> lk(s.label_mu);
  if (!s.label_rec) {
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, 4 * sizeof(int64_t));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      if (e == cudaErrorMemoryAllocation) {
        set_err("out of memory on cuda:%d: tried to allocate 32 bytes (the cross-entropy label check)", dev);
        return DT_ERR_OUT_OF_MEMORY;
      }
      return cuda_fail("cudaMalloc (the cross-entropy label check)", e);
    }
    if ((e = cudaMemsetAsync(p, 0, 4 * sizeof(int64_t), s.stream)) != cudaSuccess) {
      (void)cudaFree(p);
      return cuda_fail("cudaMemsetAsync", e);
    }
    s.label_rec = static_cast<int64_t *>(p);
  }
  *out = s.label_rec;
  return DT_OK;
}

template <typename T>
dt_status xent_t(int dev, DevState &s, bool grad, int64_t n, int64_t c, const T *x, const int64_t *target, T *y) {
  cudaStream_t st = s.stream;
  int64_t *rec;
  dt_status rc = label_record(dev, s, &rec);
  if (rc != DT_OK) return rc;
  DT_LAUNCH_COOP(1, small_block(n), st, k_check_labels)(target, n, c, grad ? 1 : 0, rec);
  if ((rc = launched("cross_entropy (labels)")) != DT_OK) return rc;
  s.label_pending.store(true, std::memory_order_release);
  bool bpr;
  unsigned grid;
  int block;
  rows_launch(n, c, &bpr, &grid, &block);
  if (grad) {
    if (bpr) DT_LAUNCH_COOP(grid, block, st, k_xent_rows<T, true>)(x, target, n, c, nullptr, y);
    else DT_LAUNCH_COOP(grid, block, st, k_xent_rows<T, false>)(x, target, n, c, nullptr, y);
    return launched("cross_entropy (gradient)");
  }
  void *ws = nullptr;
  if ((rc = cu_alloc(dev, (size_t)n * sizeof(double), &ws)) != DT_OK) return rc;
  double *part = static_cast<double *>(ws);
  if (bpr) DT_LAUNCH_COOP(grid, block, st, k_xent_rows<T, true>)(x, target, n, c, part, nullptr);
  else DT_LAUNCH_COOP(grid, block, st, k_xent_rows<T, false>)(x, target, n, c, part, nullptr);
  rc = launched("cross_entropy");
  if (rc == DT_OK) {
    DT_LAUNCH_COOP(1, small_block(n), st, k_xent_mean<T>)(part, n, y);
    rc = launched("cross_entropy (mean)");
  }
  cu_free(dev, ws, 0); /* later work on this stream comes after these kernels */
  return rc;
}

dt_status cu_cross_entropy(int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits, const int64_t *target,
                           void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (n <= 0) return DT_OK;
  return by_float_half(t, "cross_entropy", [&](auto z) {
    using T = decltype(z);
    return xent_t<T>(dev, *in.s, grad != 0, n, c, static_cast<const T *>(logits), target, static_cast<T *>(y));
  });
}

/* ---- src/cuda/conv.cu ---- */
/* Convolution's im2col and col2im, and 2-d pooling with its backward: one thread per element
   written (grid-stride, run_map), so every sum is one thread's, in a fixed order, and nothing
   is scattered: col2im and the pooling backwards gather, each input position summing the
   windows that hold it (a bogus max index is never followed). Sums are in double, as the
   CPU's pooling. The core multiplies with cuBLAS through the gemm slot. T: float, double or a half
   type (half.cu's ld, ldd and sto; im2col copies the bits). */

/* the output rows (or columns) whose windows [o s - p, o s - p + k) hold input position i: [*lo, *hi) within [0, on) */
__device__ inline void pool_span(int64_t i, int64_t k, int64_t s, int64_t p, int64_t on, int64_t *lo, int64_t *hi) {
  int64_t a = i + p - k + 1, b = (i + p) / s + 1;
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  *hi = b < on ? b : on;
}
/* adaptive pooling: window o of `in` positions over `on` outputs is [start, end), as PyTorch's */
__device__ inline int64_t adapt_start(int64_t o, int64_t in, int64_t on) { return (o / on) * in + ((o % on) * in) / on; }
__device__ inline int64_t adapt_end(int64_t o, int64_t in, int64_t on) { return 1 + ((o + 1) * in - 1) / on; }
/* avg pooling's divisor for the window from a (padding counted) of k, clipped to n + p */
__device__ inline int64_t avg_extent(int64_t a, int64_t k, int64_t n, int64_t p) { return (a + k < n + p ? a + k : n + p) - a; }

/* col: (c kh kw, nimg, oh ow) from x: (nimg, c, h, w); i indexes col */
template <typename T>
struct Im2col {
  dt__conv2d g; int64_t nimg; const T *x; T *col;
  template <typename I> __device__ void operator()(I i) const {
    const int64_t l = g.oh * g.ow, kk = g.kh * g.kw, q = (int64_t)i / l, pos = (int64_t)i - q * l;
    const int64_t r = q / nimg, img = q - r * nimg, ch = r / kk, k = g.flip ? kk - 1 - (r - ch * kk) : r - ch * kk;
    const int64_t ki = k / g.kw, kj = k - ki * g.kw;
    const int64_t oy = pos / g.ow, ox = pos - oy * g.ow;
    const int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
    col[i] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? x[((img * g.c + ch) * g.h + iy) * g.w + ix] : T{};
  }
};

/* x: (nimg, c, h, w), each position the sum of its entries of col: (c kh kw, nimg, oh ow); i indexes x */
template <typename T>
struct Col2im {
  dt__conv2d g; int64_t nimg; const T *col; T *x;
  template <typename I> __device__ void operator()(I i) const {
    const int64_t hw = g.h * g.w, plane = (int64_t)i / hw, pos = (int64_t)i - plane * hw, iy = pos / g.w, ix = pos - iy * g.w;
    const int64_t img = plane / g.c, ch = plane - img * g.c, l = g.oh * g.ow, kk = g.kh * g.kw;
    double s = 0;
    for (int64_t ki = 0; ki < g.kh; ki++) {
      const int64_t ty = iy + g.ph - ki * g.dh; /* oy sh */
      if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) continue;
      for (int64_t kj = 0; kj < g.kw; kj++) {
        const int64_t tx = ix + g.pw - kj * g.dw;
        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) continue;
        s += ldd(col[((ch * kk + ki * g.kw + kj) * nimg + img) * l + (ty / g.sh) * g.ow + tx / g.sw]);
      }
    }
    x[i] = sto<T>(s);
  }
};

/* y: (n, c, oh, ow) (and idx for max) from x: (n, c, h, w); i indexes y */
template <typename T>
struct Pool {
  dt__pool2d p; const T *x; T *y; int64_t *idx;
  template <typename I> __device__ void operator()(I i) const {
    const int64_t ohw = p.oh * p.ow, plane = (int64_t)i / ohw, pos = (int64_t)i - plane * ohw, oy = pos / p.ow, ox = pos - oy * p.ow;
    const T *xp = x + plane * p.h * p.w;
    int64_t y0, y1, x0, x1;
    double div;
    if (p.kind == DT__POOL2D_ADAPTIVE_AVG) {
      y0 = adapt_start(oy, p.h, p.oh); y1 = adapt_end(oy, p.h, p.oh);
      x0 = adapt_start(ox, p.w, p.ow); x1 = adapt_end(ox, p.w, p.ow);
      div = (double)((y1 - y0) * (x1 - x0));
    } else {
      y0 = oy * p.sh - p.ph; x0 = ox * p.sw - p.pw;
      div = (double)(avg_extent(y0, p.kh, p.h, p.ph) * avg_extent(x0, p.kw, p.w, p.pw)); /* count_include_pad */
      y1 = y0 + p.kh < p.h ? y0 + p.kh : p.h;
      x1 = x0 + p.kw < p.w ? x0 + p.kw : p.w;
      if (y0 < 0) y0 = 0;
      if (x0 < 0) x0 = 0;
    }
    if (p.kind == DT__POOL2D_MAX) {
      typename Calc<T>::type best = -CUDART_INF;
      int64_t at = y0 * p.w + x0;
      for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) {
          const typename Calc<T>::type v = ld(xp[iy * p.w + ix]);
          if (v > best || v != v) { best = v; at = iy * p.w + ix; }
        }
      y[i] = sto<T>(best);
      if (idx) idx[i] = at;
    } else {
      double s = 0;
      for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) s += ldd(xp[iy * p.w + ix]);
      y[i] = sto<T>(s / div);
    }
  }
};

/* gx: (n, c, h, w) from gy: (n, c, oh, ow) (and idx for max); i indexes gx */
template <typename T>
struct PoolBack {
  dt__pool2d p; const T *gy; const int64_t *idx; T *gx;
  template <typename I> __device__ void operator()(I i) const {
    const int64_t hw = p.h * p.w, plane = (int64_t)i / hw, pos = (int64_t)i - plane * hw, iy = pos / p.w, ix = pos - iy * p.w;
    const int64_t yo = plane * p.oh * p.ow;
    int64_t y0, y1, x0, x1;
    double s = 0;
    if (p.kind == DT__POOL2D_ADAPTIVE_AVG) {
      y0 = iy * p.oh / p.h; y1 = ((iy + 1) * p.oh + p.h - 1) / p.h;
      x0 = ix * p.ow / p.w; x1 = ((ix + 1) * p.ow + p.w - 1) / p.w;
      if (y1 > p.oh) y1 = p.oh;
      if (x1 > p.ow) x1 = p.ow;
    } else {
      pool_span(iy, p.kh, p.sh, p.ph, p.oh, &y0, &y1);
      pool_span(ix, p.kw, p.sw, p.pw, p.ow, &x0, &x1);
    }
    for (int64_t oy = y0; oy < y1; oy++)
      for (int64_t ox = x0; ox < x1; ox++) {
        const int64_t o = yo + oy * p.ow + ox;
        if (p.kind == DT__POOL2D_MAX) {
          if (idx[o] == pos) s += ldd(gy[o]);
        } else if (p.kind == DT__POOL2D_AVG) {
          s += ldd(gy[o]) / (double)(avg_extent(oy * p.sh - p.ph, p.kh, p.h, p.ph) * avg_extent(ox * p.sw - p.pw, p.kw, p.w, p.pw));
        } else {
          const int64_t a = adapt_start(oy, p.h, p.oh), e = adapt_end(oy, p.h, p.oh);
          const int64_t b = adapt_start(ox, p.w, p.ow), f = adapt_end(ox, p.w, p.ow);
          if (iy >= a && iy < e && ix >= b && ix < f) s += ldd(gy[o]) / (double)((e - a) * (f - b));
        }
      }
    gx[i] = sto<T>(s);
  }
};

dt_status cu_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float_half(t, "im2col", [&](auto z) {
    using T = decltype(z);
    return run_map("im2col", in.s->stream, nimg * g->c * g->kh * g->kw * g->oh * g->ow,
                   Im2col<T>{*g, nimg, static_cast<const T *>(x), static_cast<T *>(col)});
  });
}

dt_status cu_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float_half(t, "col2im", [&](auto z) {
    using T = decltype(z);
    return run_map("col2im", in.s->stream, nimg * g->c * g->h * g->w, Col2im<T>{*g, nimg, static_cast<const T *>(col), static_cast<T *>(x)});
  });
}

dt_status cu_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float_half(t, "pool2d", [&](auto z) {
    using T = decltype(z);
    return run_map("pool2d", in.s->stream, p->n * p->c * p->oh * p->ow,
                   Pool<T>{*p, static_cast<const T *>(x), static_cast<T *>(y), p->kind == DT__POOL2D_MAX ? idx : nullptr});
  });
}

dt_status cu_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float_half(t, "pool2d_backward", [&](auto z) {
    using T = decltype(z);
    return run_map("pool2d_backward", in.s->stream, p->n * p->c * p->h * p->w,
                   PoolBack<T>{*p, static_cast<const T *>(gy), idx, static_cast<T *>(gx)});
  });
}

/* ---- src/cuda/dist.cu ---- */
/* The collectives of dt_all_reduce_ / dt_broadcast_ for GPU tensors and the trainer's
   replicas: NCCL communicators, one per device, and one grouped call per collective
   (ncclGroupStart/End around one call per communicator, each on its device's stream).
   Built only with DEVTENSOR_NCCL (link -lnccl); without it every entry says so. */
#ifdef DEVTENSOR_NCCL
static_assert(sizeof(ncclUniqueId) == 128, "the core passes NCCL's unique id as 128 bytes");

dt_status nccl_fail(const char *what, ncclResult_t r) {
  (void)cudaGetLastError();
  set_err("%s failed: %s", what, ncclGetErrorString(r));
  return DT_ERR_BACKEND;
}

/* NCCL's type for t. Halves reduce in NCCL's own ncclFloat16 and ncclBfloat16, rounding to the
   type at each step as PyTorch's NCCL all_reduce does. Both, and ncclAvg, came with NCCL 2.10
   (2021; CUDA 12's NCCL is newer). */
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE < 21000
#error "DEVTENSOR_NCCL needs NCCL 2.10 or newer (ncclBfloat16, ncclAvg)"
#endif
dt_status nccl_type(dt_dtype t, ncclDataType_t *out) {
  switch (t) {
    case DT_F32: *out = ncclFloat32; return DT_OK;
    case DT_F64: *out = ncclFloat64; return DT_OK;
    case DT_I32: *out = ncclInt32; return DT_OK;
    case DT_I64: *out = ncclInt64; return DT_OK;
    case DT_U8: case DT_BOOL: *out = ncclUint8; return DT_OK; /* bools are 0 or 1: MAX is OR, MIN is AND */
    case DT_F16: *out = ncclFloat16; return DT_OK;
    case DT_BF16: *out = ncclBfloat16; return DT_OK;
  }
  set_err("NCCL collectives are not defined for %s", dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

dt_status cu_dist_unique_id(void *id) {
  ncclResult_t r = ncclGetUniqueId((ncclUniqueId *)id);
  return r == ncclSuccess ? DT_OK : nccl_fail("ncclGetUniqueId", r);
}

dt_status cu_dist_comm_init(int dev, int nranks, int rank, const void *id, void **comm) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  ncclUniqueId uid;
  memcpy(&uid, id, sizeof uid);
  ncclComm_t c = nullptr;
  ncclResult_t r = ncclCommInitRank(&c, nranks, uid, rank);
  if (r != ncclSuccess) return nccl_fail("ncclCommInitRank", r);
  *comm = (void *)c;
  return DT_OK;
}

dt_status cu_dist_comm_init_all(int ndev, const int *devs, void **comms) {
  ncclComm_t c[kMaxDevices];
  if (ndev <= 0 || ndev > kMaxDevices) { set_err("ncclCommInitAll: %d devices (1 to %d)", ndev, kMaxDevices); return DT_ERR_INVALID_ARGUMENT; }
  for (int i = 0; i < ndev; i++) { /* every device's context and stream first */
    Entered in(devs[i]);
    if (!in.ok()) return in.status();
  }
  ncclResult_t r = ncclCommInitAll(c, ndev, devs);
  if (r != ncclSuccess) return nccl_fail("ncclCommInitAll", r);
  for (int i = 0; i < ndev; i++) comms[i] = (void *)c[i];
  return DT_OK;
}

void cu_dist_comm_free(void *comm) { if (comm) (void)ncclCommDestroy((ncclComm_t)comm); }

/* One grouped call: collective(i) for every communicator i, on device devs[i]'s stream. */
template <class F>
dt_status nccl_grouped(const char *what, int ncomm, const int *devs, F collective) {
  DevState *st[kMaxDevices];
  if (ncomm <= 0 || ncomm > kMaxDevices) { set_err("%s: %d communicators (1 to %d)", what, ncomm, kMaxDevices); return DT_ERR_INVALID_ARGUMENT; }
  for (int i = 0; i < ncomm; i++) {
    Entered in(devs[i]);
    if (!in.ok()) return in.status();
    st[i] = in.s;
  }
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return nccl_fail("ncclGroupStart", r);
  ncclResult_t first = ncclSuccess;
  for (int i = 0; i < ncomm; i++) {
    DeviceGuard g(devs[i]);
    r = collective(i, (cudaStream_t)st[i]->stream);
    if (r != ncclSuccess && first == ncclSuccess) first = r;
  }
  r = ncclGroupEnd();
  if (first != ncclSuccess) return nccl_fail(what, first);
  if (r != ncclSuccess) return nccl_fail("ncclGroupEnd", r);
  return DT_OK;
}

dt_status cu_dist_all_reduce(int ncomm, void *const *comms, const int *devs, dt_dtype t, int op, int64_t n, void *const *bufs) {
  ncclDataType_t ty;
  dt_status st = nccl_type(t, &ty);
  if (st != DT_OK) return st;
  ncclRedOp_t o = op == DT_REDUCE_AVG ? ncclAvg : op == DT_REDUCE_MAX ? ncclMax : op == DT_REDUCE_MIN ? ncclMin : ncclSum;
  return nccl_grouped("ncclAllReduce", ncomm, devs, [&](int i, cudaStream_t stream) {
    return ncclAllReduce(bufs[i], bufs[i], (size_t)n, ty, o, (ncclComm_t)comms[i], stream);
  });
}

dt_status cu_dist_broadcast(int ncomm, void *const *comms, const int *devs, dt_dtype t, int64_t n, void *const *bufs, int root) {
  ncclDataType_t ty;
  dt_status st = nccl_type(t, &ty);
  if (st != DT_OK) return st;
  return nccl_grouped("ncclBroadcast", ncomm, devs, [&](int i, cudaStream_t stream) {
    return ncclBroadcast(bufs[i], bufs[i], (size_t)n, ty, root, (ncclComm_t)comms[i], stream);
  });
}
#else
dt_status no_nccl() {
  set_err("devtensor_cuda.cu was built without NCCL (compile it with -DDEVTENSOR_NCCL and link -lnccl)");
  return DT_ERR_UNSUPPORTED;
}
dt_status cu_dist_unique_id(void *) { return no_nccl(); }
dt_status cu_dist_comm_init(int, int, int, const void *, void **) { return no_nccl(); }
dt_status cu_dist_comm_init_all(int, const int *, void **) { return no_nccl(); }
void cu_dist_comm_free(void *) {}
dt_status cu_dist_all_reduce(int, void *const *, const int *, dt_dtype, int, int64_t, void *const *) { return no_nccl(); }
dt_status cu_dist_broadcast(int, void *const *, const int *, dt_dtype, int64_t, void *const *, int) { return no_nccl(); }
#endif

/* ---- src/cuda/losses.cu ---- */
/* Losses: nll_loss's per-row values (the core reduces them). The labels are checked as
   cross_entropy's (k_check_labels, the device's label record, tag 2: reported as dt_nll_loss's). */

/* y (n,) = -logp[i, target[i]] of logp (n, c); a label outside [0, c) is never read with: NaN. T:
   float, double or a half type (half.cu). */
template <typename T>
struct NllRow {
  const T *logp; const int64_t *target; int64_t c; T *y;
  template <typename I> __device__ void operator()(I i) const {
    int64_t lab = target[i];
    y[i] = sto<T>(lab >= 0 && lab < c ? -ld(logp[(int64_t)i * c + lab]) : (typename Calc<T>::type)CUDART_NAN);
  }
};

dt_status cu_nll_loss(int dev, dt_dtype t, int64_t n, int64_t c, const void *logp, const int64_t *target, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (n <= 0) return DT_OK;
  int64_t *rec;
  dt_status rc = label_record(dev, *in.s, &rec);
  if (rc != DT_OK) return rc;
  DT_LAUNCH_COOP(1, small_block(n), in.s->stream, k_check_labels)(target, n, c, 2, rec);
  if ((rc = launched("nll_loss (labels)")) != DT_OK) return rc;
  in.s->label_pending.store(true, std::memory_order_release);
  return by_float_half(t, "nll_loss", [&](auto z) {
    using T = decltype(z);
    return run_map("nll_loss", in.s->stream, n, NllRow<T>{static_cast<const T *>(logp), target, c, static_cast<T *>(y)});
  });
}

/* ---- src/cuda/norm.cu ---- */
/* Batch normalisation. The sums (a channel's mean and variance; the backward's sum of gy and of
   gy (x - mean)) are in double, reduced over a block of 512 threads in a fixed order
   (team_reduce). Where the channels alone would leave the GPU's SMs idle (fewer than
   kBnBlocksPerSm blocks per SM) and a channel has values enough, each channel is split into S
   slices of consecutive (image, position) values, a block each: a slice's mean and sum of
   squared deviations from it (two passes over the slice; the second reads from L2 where the
   slices in flight fit in it), or its two backward sums, into a scratch block from the caching
   allocator; then one thread per channel joins its S slices in order (Chan's pairwise update
   for the variance, plain sums for the backward). Else (or where the scratch cannot be had) one
   block per channel, a block taking channel after channel where there are more than kBnGrid.
   The result (y, gx) is an elementwise map over every element (a full grid), which reads the
   per-channel values. So a training step's forward and backward are two launches each, three
   where the channels are split. A thread walks its slice's values in steps of the block's size
   without dividing: (image, position) += (block / l, block % l), carried, four offsets at a time
   so that four loads are in flight. */

constexpr int kBnBlock = 512;
/* the most blocks a launch of the sums takes (a block then takes channel after channel); the
   least values per thread a split channel's slice holds. The emulator's build takes fewer of
   both, so that its tests walk the loop with a few hundred channels and split channels of a
   thousand values */
#ifdef DTEMU
constexpr int64_t kBnGrid = 256;
constexpr int64_t kBnPerThread = 1;
#else
constexpr int64_t kBnGrid = kMaxGrid;
constexpr int64_t kBnPerThread = 16;
#endif
/* the blocks of 512 an SM holds at once: the kernels of the sums are compiled for it
   (__launch_bounds__: at most 64 registers a thread) */
constexpr int kBnBlocksPerSm = 2;

/* the slices each channel of p is split into on a GPU of `sms` SMs (1: one block per channel):
   as many as keep the c S blocks within one wave of kBnBlocksPerSm blocks per SM */
int64_t bn_splits(const dt__bn &p, int sms) {
  const int64_t want = kBnBlocksPerSm * (int64_t)sms, N = p.n * p.l;
  int64_t s = want / p.c;
  const int64_t most = N / (kBnBlock * kBnPerThread);
  if (s > most) s = most;
  return s > 1 ? s : 1;
}

/* values [lo, hi) of channel ch, numbered (image i, position q) -> i l + q: f4(o0, o1, o2, o3)
   for four of a thread's offsets at a time, then f(o) for the rest */
template <typename F4, typename F>
__device__ inline void bn_walk(const dt__bn &p, int64_t ch, int64_t lo, int64_t hi, F4 f4, F f) {
  const int64_t bd = blockDim.x, di = bd / p.l, dq = bd % p.l, cl = p.c * p.l;
  int64_t pos = lo + threadIdx.x;
  int64_t i = pos / p.l, q = pos % p.l;
  int64_t o = (i * p.c + ch) * p.l + q; /* the offset of (i, q) */
  auto next = [&] {
    const int64_t at = o;
    pos += bd; q += dq; o += di * cl + dq;
    if (q >= p.l) { q -= p.l; o += cl - p.l; }
    return at;
  };
  while (pos + 3 * bd < hi) {
    const int64_t o0 = next(), o1 = next(), o2 = next(), o3 = next();
    f4(o0, o1, o2, o3);
  }
  while (pos < hi) f(next());
}

/* the mean of channel ch's values [lo, hi) and the sum of their squared deviations from it,
   in every thread of the block */
template <typename T>
__device__ void bn_slice_stats(const dt__bn &p, int64_t ch, int64_t lo, int64_t hi, double *mean, double *m2) {
  const T *x = static_cast<const T *>(p.x);
  double s = 0;
  bn_walk(p, ch, lo, hi, [&](int64_t a, int64_t b, int64_t c, int64_t d) {
    const double va = (double)x[a], vb = (double)x[b], vc = (double)x[c], vd = (double)x[d];
    s += (va + vb) + (vc + vd);
  }, [&](int64_t a) { s += (double)x[a]; });
  const double m = team_reduce<true>(s, Plus<double>()) / (double)(hi - lo);
  s = 0;
  bn_walk(p, ch, lo, hi, [&](int64_t a, int64_t b, int64_t c, int64_t d) {
    const double da = (double)x[a] - m, db = (double)x[b] - m, dc = (double)x[c] - m, dd = (double)x[d] - m;
    s += (da * da + db * db) + (dc * dc + dd * dd);
  }, [&](int64_t a) { const double da = (double)x[a] - m; s += da * da; });
  *mean = m;
  *m2 = team_reduce<true>(s, Plus<double>());
}

/* channel ch's statistics from its mean and biased variance: the batch's, and the running ones */
template <typename T>
__device__ void bn_stats_write(const dt__bn &p, int64_t ch, double mean, double var) {
  const int64_t N = p.n * p.l;
  static_cast<T *>(p.mean)[ch] = (T)mean;
  static_cast<T *>(p.var)[ch] = (T)var;
  if (p.rmean) {
    T *r = static_cast<T *>(p.rmean);
    r[ch] = (T)((1.0 - p.momentum) * (double)r[ch] + p.momentum * mean);
  }
  if (p.rvar) {
    T *r = static_cast<T *>(p.rvar);
    r[ch] = (T)((1.0 - p.momentum) * (double)r[ch] + p.momentum * var * (double)N / (double)(N - 1));
  }
}

/* slice k of channel ch (of S): values [N k / S, N (k + 1) / S) */
__device__ inline void bn_slice(int64_t N, int64_t S, int64_t k, int64_t *lo, int64_t *hi) {
  *lo = N * k / S;
  *hi = N * (k + 1) / S;
}

/* a thread per channel: its S slices joined in order (Chan et al.'s update of the mean and the
   sum of squared deviations) */
template <typename T>
__global__ void k_bn_stats_join(dt__bn p, int64_t S, const double *part) {
  const int64_t N = p.n * p.l;
  for (int64_t ch = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ch < p.c; ch += (int64_t)gridDim.x * blockDim.x) {
    const double *v = part + 2 * ch * S;
    int64_t lo, hi;
    bn_slice(N, S, 0, &lo, &hi);
    double na = (double)(hi - lo), mean = v[0], m2 = v[1];
    for (int64_t k = 1; k < S; k++) {
      bn_slice(N, S, k, &lo, &hi);
      const double nb = (double)(hi - lo), n = na + nb, d = v[2 * k] - mean;
      mean += d * nb / n;
      m2 += v[2 * k + 1] + d * d * na * nb / n;
      na = n;
    }
    bn_stats_write<T>(p, ch, mean, m2 / (double)N);
  }
}

/* element e's channel (I: uint32_t when the tensor has fewer than 2^31 elements, so l and c do too) */
template <typename I>
__device__ inline int64_t bn_channel(I e, const dt__bn &p) {
  if (sizeof(I) == 4) return (int64_t)(((uint32_t)e / (uint32_t)p.l) % (uint32_t)p.c);
  return ((int64_t)e / p.l) % p.c;
}

/* y = (x - mean) / sqrt(var + eps) w + b, the statistics from m and v */
template <typename T>
struct BnApply {
  dt__bn p; const T *m, *v;
  template <typename I> __device__ void operator()(I e) const {
    const int64_t ch = bn_channel(e, p);
    const double k = 1.0 / sqrt((double)v[ch] + p.eps);
    const double a = p.w ? k * (double)static_cast<const T *>(p.w)[ch] : k;
    const double b = p.b ? (double)static_cast<const T *>(p.b)[ch] : 0.0;
    static_cast<T *>(p.y)[e] = (T)(((double)static_cast<const T *>(p.x)[e] - (double)m[ch]) * a + b);
  }
};

/* the backward's sums over channel ch's values [lo, hi), in every thread of the block: sum gy,
   sum gy (x - mean) */
template <typename T>
__device__ void bn_slice_back(const dt__bn &p, int64_t ch, int64_t lo, int64_t hi, double *sg, double *sgx) {
  const T *x = static_cast<const T *>(p.x), *g = static_cast<const T *>(p.gy);
  const double mean = (double)static_cast<const T *>(p.mean)[ch];
  double a = 0, b = 0;
  bn_walk(p, ch, lo, hi, [&](int64_t o0, int64_t o1, int64_t o2, int64_t o3) {
    const double g0 = (double)g[o0], g1 = (double)g[o1], g2 = (double)g[o2], g3 = (double)g[o3];
    const double x0 = (double)x[o0], x1 = (double)x[o1], x2 = (double)x[o2], x3 = (double)x[o3];
    a += (g0 + g1) + (g2 + g3);
    b += (g0 * (x0 - mean) + g1 * (x1 - mean)) + (g2 * (x2 - mean) + g3 * (x3 - mean));
  }, [&](int64_t o) {
    const double gv = (double)g[o];
    a += gv;
    b += gv * ((double)x[o] - mean);
  });
  *sg = team_reduce<true>(a, Plus<double>());
  *sgx = team_reduce<true>(b, Plus<double>());
}

/* ws[ch] = sum gy, ws[c + ch] = sum gy (x - mean); gb, gw where wanted */
template <typename T>
__device__ void bn_back_write(const dt__bn &p, int64_t ch, double sg, double sgx) {
  double *ws = static_cast<double *>(p.ws);
  ws[ch] = sg; ws[p.c + ch] = sgx;
  if (p.gb) static_cast<T *>(p.gb)[ch] = (T)sg;
  if (p.gw) static_cast<T *>(p.gw)[ch] = (T)(sgx / sqrt((double)static_cast<const T *>(p.var)[ch] + p.eps));
}

/* block b of c S: slice b % S of channel b / S; part[2 b], part[2 b + 1] its two sums: the
   backward's (Back), else its mean and sum of squared deviations */
template <typename T, bool Back>
__global__ void __launch_bounds__(kBnBlock, kBnBlocksPerSm) k_bn_part(dt__bn p, int64_t S, double *part) {
  const int64_t N = p.n * p.l;
  for (int64_t b = blockIdx.x; b < p.c * S; b += gridDim.x) {
    int64_t lo, hi;
    double u, v;
    bn_slice(N, S, b % S, &lo, &hi);
    if (Back) bn_slice_back<T>(p, b / S, lo, hi, &u, &v);
    else bn_slice_stats<T>(p, b / S, lo, hi, &u, &v);
    if (threadIdx.x == 0) { part[2 * b] = u; part[2 * b + 1] = v; }
  }
}

/* one block per channel (a block taking channel after channel where there are more than its
   grid): the statistics (Back false) or the backward's sums, written */
template <typename T, bool Back>
__global__ void __launch_bounds__(kBnBlock, kBnBlocksPerSm) k_bn_one(dt__bn p) {
  const int64_t N = p.n * p.l;
  for (int64_t ch = blockIdx.x; ch < p.c; ch += gridDim.x) {
    double u, v;
    if (Back) bn_slice_back<T>(p, ch, 0, N, &u, &v);
    else bn_slice_stats<T>(p, ch, 0, N, &u, &v);
    if (threadIdx.x == 0) {
      if (Back) bn_back_write<T>(p, ch, u, v);
      else bn_stats_write<T>(p, ch, u, v / (double)N);
    }
  }
}

/* a thread per channel: its S slices' sums added in order */
template <typename T>
__global__ void k_bn_back_join(dt__bn p, int64_t S, const double *part) {
  for (int64_t ch = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ch < p.c; ch += (int64_t)gridDim.x * blockDim.x) {
    const double *v = part + 2 * ch * S;
    double sg = v[0], sgx = v[1];
    for (int64_t k = 1; k < S; k++) { sg += v[2 * k]; sgx += v[2 * k + 1]; }
    bn_back_write<T>(p, ch, sg, sgx);
  }
}

/* gx = w k (gy - sum gy / N - (x - mean) k^2 sum gy (x - mean) / N) (train), w k gy (eval) */
template <typename T>
struct BnGradInput {
  dt__bn p;
  template <typename I> __device__ void operator()(I e) const {
    const int64_t ch = bn_channel(e, p), N = p.n * p.l;
    const double k = 1.0 / sqrt((double)static_cast<const T *>(p.var)[ch] + p.eps);
    const double a = p.w ? k * (double)static_cast<const T *>(p.w)[ch] : k;
    const double gv = (double)static_cast<const T *>(p.gy)[e];
    double r = gv;
    if (p.train) {
      const double *ws = static_cast<const double *>(p.ws);
      const double xm = (double)static_cast<const T *>(p.x)[e] - (double)static_cast<const T *>(p.mean)[ch];
      r = gv - ws[ch] / (double)N - xm * k * k * ws[p.c + ch] / (double)N;
    }
    static_cast<T *>(p.gx)[e] = (T)(r * a);
  }
};

/* The sums of p (Back: the backward's, else the statistics) on in's stream: one block per
   channel (k_bn_one), or the channels split in S slices (k_bn_part, then the join) through a
   scratch block of 2 c S doubles; one block per channel where that block cannot be had. */
template <typename T, bool Back>
dt_status bn_sums(const char *what, int dev, const Entered &in, const dt__bn &p) {
  int64_t S = bn_splits(p, in.s->sms);
  void *ws = nullptr;
  const size_t bytes = (size_t)(2 * p.c * S) * sizeof(double);
  if (S > 1 && cu_alloc(dev, bytes, &ws) != DT_OK) S = 1;
  if (S > 1) {
    const int64_t blocks = p.c * S;
    DT_LAUNCH_COOP((unsigned)(blocks < kBnGrid ? blocks : kBnGrid), kBnBlock, in.s->stream, k_bn_part<T, Back>)(p, S,
                                                                                                               static_cast<double *>(ws));
    dt_status s = launched(what);
    if (s == DT_OK) {
      void (*join)(dt__bn, int64_t, const double *) = Back ? k_bn_back_join<T> : k_bn_stats_join<T>;
      DT_LAUNCH(grid_for(p.c, kBlock), kBlock, in.s->stream, join)(p, S, static_cast<const double *>(ws));
      s = launched(what);
    }
    cu_free(dev, ws, bytes); /* queued work first: the stream orders its reuse */
    return s;
  }
  DT_LAUNCH_COOP((unsigned)(p.c < kBnGrid ? p.c : kBnGrid), kBnBlock, in.s->stream, k_bn_one<T, Back>)(p);
  return launched(what);
}

dt_status cu_batch_norm(int dev, dt_dtype t, const dt__bn *p) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (p->c <= 0 || p->n * p->l <= 0) return DT_OK;
  return by_float(t, "batch_norm", [&](auto z) {
    using T = decltype(z);
    if (p->train) {
      dt_status s = bn_sums<T, false>("batch_norm", dev, in, *p);
      if (s != DT_OK) return s;
    }
    const T *m = static_cast<const T *>(p->train ? p->mean : p->rmean), *v = static_cast<const T *>(p->train ? p->var : p->rvar);
    return run_map("batch_norm", in.s->stream, p->n * p->c * p->l, BnApply<T>{*p, m, v});
  });
}

dt_status cu_batch_norm_backward(int dev, dt_dtype t, const dt__bn *p) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (p->c <= 0 || p->n * p->l <= 0) return DT_OK;
  return by_float(t, "batch_norm_backward", [&](auto z) {
    using T = decltype(z);
    if (p->gw || p->gb || (p->gx && p->train)) {
      dt_status s = bn_sums<T, true>("batch_norm_backward", dev, in, *p);
      if (s != DT_OK) return s;
    }
    return p->gx ? run_map("batch_norm_backward", in.s->stream, p->n * p->c * p->l, BnGradInput<T>{*p}) : DT_OK;
  });
}

/* ---- src/cuda/graph.cu ---- */
/* Graphs: CUDA stream capture of the device's stream (dt_graph_begin .. dt_graph_end), a
   cudaGraphExec that dt_graph_replay launches on that stream.
   - Mode: cudaStreamCaptureModeThreadLocal. The core refuses every synchronizing call on a
     captured device from any thread before it is issued (src/core/graph.c), so the runtime's
     own check need only cover the capturing thread; the global mode would also fail other
     threads' unrelated calls (a cudaFree on another device) while a capture runs. The
     capturing thread's own calls on other devices run with its interaction mode relaxed
     (t_capturing, Entered): CUDA forbids that thread the unsafe calls on every device.
   - Memory: the core keeps the tensors a capture may use (see there); the scratch blocks a
     call takes from the caching allocator and gives back inside itself (the reductions'
     workspaces) stay in the capture's own list (DevState::cap_kept) instead of the cache, are
     reused by later calls of the same capture, and go with the graph until dt_graph_free.
   - cuBLAS runs on the device's stream with the workspace the allocator gave it
     (cublasSetWorkspace, as PyTorch does), so it allocates nothing while captured; the handle
     and the error records the kernels write are made before the capture begins, and so is
     cuDNN's handle (its workspaces come from the allocator). */

struct CuGraph {
  cudaGraphExec_t exec = nullptr;
  std::vector<std::pair<size_t, void *>> kept; /* scratch blocks the captured calls use */
};

/* Blocks a graph kept go back: to the cache, or to a capture in progress (its work may use
   them from now on). Call under s.mu. */
void graph_return_blocks(DevState &s, std::vector<std::pair<size_t, void *>> &blocks) {
  for (auto &b : blocks) {
    try {
      if (s.capturing) s.cap_kept.emplace(b.first, b.second);
      else s.cache.emplace(b.first, b.second);
    } catch (...) { /* no room in the map: give it to CUDA (none of these calls is captured) */
      if (cudaFree(b.second) != cudaSuccess) (void)cudaGetLastError();
      s.reserved -= b.first;
    }
  }
  blocks.clear();
}

#ifdef DEVTENSOR_CUDNN
dt_status cudnn_before_capture(int dev, DevState &s); /* src/cuda/cudnn.cu */
#endif

dt_status cu_graph_begin(int dev) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  DevState &s = *in.s;
  cublasHandle_t h;
  int64_t *rec = nullptr;
  IndexErr *ie = nullptr;
  dt_status st;
  if ((st = blas_handle(dev, s, &h)) != DT_OK || (st = label_record(dev, s, &rec)) != DT_OK ||
      (st = index_err_record(dev, s, &ie)) != DT_OK)
    return st;
#ifdef DEVTENSOR_CUDNN
  if ((st = cudnn_before_capture(dev, s)) != DT_OK) return st;
#endif
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.capturing = true;
    s.cap_failed = false;
  }
  cudaError_t e = cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    std::lock_guard<std::mutex> lk(s.mu);
    s.capturing = false;
    return cuda_fail("cudaStreamBeginCapture", e);
  }
  t_capturing |= (uint64_t)1 << dev;
  return DT_OK;
}

dt_status cu_graph_end(int dev, void **out) {
  *out = nullptr;
  Entered in(dev);
  if (!in.ok()) return in.status();
  DevState &s = *in.s;
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamEndCapture(s.stream, &graph);
  t_capturing &= ~((uint64_t)1 << dev);
  CuGraph *g = new (std::nothrow) CuGraph;
  std::lock_guard<std::mutex> lk(s.mu);
  s.capturing = false;
  dt_status st = DT_OK;
  if (e != cudaSuccess) st = cuda_fail("cudaStreamEndCapture", e);
  else if (s.cap_failed) {
    set_err("out of host memory in the CUDA allocator's bookkeeping during the capture");
    st = DT_ERR_OUT_OF_MEMORY;
  } else if (!g) {
    set_err("out of host memory making a graph");
    st = DT_ERR_OUT_OF_MEMORY;
  } else if ((e = cudaGraphInstantiateWithFlags(&g->exec, graph, 0)) != cudaSuccess) {
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      set_err("out of memory on cuda:%d instantiating a graph", dev);
      st = DT_ERR_OUT_OF_MEMORY;
    } else {
      st = cuda_fail("cudaGraphInstantiateWithFlags", e);
    }
  }
  if (graph && cudaGraphDestroy(graph) != cudaSuccess) (void)cudaGetLastError();
  std::vector<std::pair<size_t, void *>> kept;
  try {
    kept.reserve(s.cap_kept.size());
    for (auto &b : s.cap_kept) kept.emplace_back(b.first, b.second);
  } catch (...) {
    if (st == DT_OK) { set_err("out of host memory making a graph"); st = DT_ERR_OUT_OF_MEMORY; }
    for (auto &b : s.cap_kept) { /* nothing ran: the cache may have them */
      if (cudaFree(b.second) != cudaSuccess) (void)cudaGetLastError();
      s.reserved -= b.first;
    }
    s.cap_kept.clear();
  }
  s.cap_kept.clear();
  if (st != DT_OK) {
    graph_return_blocks(s, kept); /* nothing of the capture ever runs */
    if (g && g->exec && cudaGraphExecDestroy(g->exec) != cudaSuccess) (void)cudaGetLastError();
    delete g;
    return st;
  }
  g->kept.swap(kept);
  *out = g;
  return DT_OK;
}

/* the captured draws' base for the next replay (dt__rng_at) */
__global__ void k_set_gen(uint64_t *gen, uint64_t seed, uint64_t draw) {
  gen[0] = seed;
  gen[1] = draw;
}

dt_status cu_graph_replay(int dev, void *graph, uint64_t *gen, uint64_t seed, uint64_t draw) {
  CuGraph *g = static_cast<CuGraph *>(graph);
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (gen) {
    DT_LAUNCH(1, 1, in.s->stream, k_set_gen)(gen, seed, draw);
    dt_status st = launched("graph_replay");
    if (st != DT_OK) return st;
  }
  cudaError_t e = cudaGraphLaunch(g->exec, in.s->stream);
  if (e != cudaSuccess) return cuda_fail("cudaGraphLaunch", e);
  /* the captured kernels may have recorded a bad index or label: the next synchronizing call reads them */
  in.s->index_pending.store(true);
  in.s->label_pending.store(true);
  return DT_OK;
}

void cu_graph_free(int dev, void *graph) {
  CuGraph *g = static_cast<CuGraph *>(graph);
  if (!g) return;
  DeviceGuard dg(dev);
  if (g->exec && cudaGraphExecDestroy(g->exec) != cudaSuccess) (void)cudaGetLastError();
  {
    DevState &s = state(dev);
    std::lock_guard<std::mutex> lk(s.mu);
    graph_return_blocks(s, g->kept); /* replays queued before are ahead of any later use on the stream */
  }
  delete g;
}

/* ---- src/cuda/cudnn.cu ---- */
/* Convolutions through cuDNN: the backend's conv2d_forward, conv2d_backward_data and
   conv2d_backward_filter slots (src/backend/backend.h). Built only with DEVTENSOR_CUDNN (link
   -lcudnn); without it the slots are NULL and the core convolves with im2col + cuBLAS.

   NCHW tensors, cross-correlation (PyTorch's convolution), groups through
   cudnnSetConvolutionGroupCount. F32 and F64 compute in their own type, F16 and BF16 in F32 (as
   PyTorch). Math mode as the cuBLAS gemm's: F32 under dt_set_float32_matmul_precision
   "highest" CUDNN_FMA_MATH (no TF32), "high" or "medium" CUDNN_TENSOR_OP_MATH (TF32 allowed);
   the half dtypes CUDNN_TENSOR_OP_MATH; F64 CUDNN_DEFAULT_MATH.

   One cuDNN handle per device, made at the first convolution and bound to the device's stream,
   kept for the life of the process like the cuBLAS handle (DevState is never destroyed either:
   tensors released from atexit handlers may still convolve). Per device a cache of plans keyed
   by the direction, dtype, math mode and geometry: the four descriptors and the algorithms
   cudnnGet*Algorithm_v7 returned with CUDNN_STATUS_SUCCESS, the deterministic ones first (so a
   run, and a graph's replay against the eager step, gives the same bits), each in its order,
   each with its workspace size. A call takes the first of them whose workspace the device's caching allocator
   can give (remembered: later calls start there), and gives the workspace back as soon as the
   call is queued: the stream orders its reuse, and under stream capture the allocator keeps it
   for the graph. A case cuDNN does not support (its NOT_SUPPORTED statuses, no algorithm, no
   workspace) is DT_ERR_UNSUPPORTED, which sends the core to im2col + cuBLAS; any other status
   is DT_ERR_BACKEND with cudnnGetErrorString's text. */
#ifdef DEVTENSOR_CUDNN

/* DEVTENSOR_NO_CUDNN=1 (read once): every convolution through im2col + cuBLAS, as in a build
   without cuDNN (torch.backends.cudnn.enabled = False); the tests run both paths this way */
bool cudnn_off() {
  static const bool off = [] {
    const char *v = getenv("DEVTENSOR_NO_CUDNN");
    return v && *v && strcmp(v, "0") != 0;
  }();
  return off;
}

/* cuDNN 9's NOT_SUPPORTED statuses that say this installation cannot run cuDNN at all (3005-3009:
   the driver, the CUDA runtime, the GPU's architecture, a prerequisite, a sub-library) */
bool cudnn_unusable(cudnnStatus_t st) {
#if CUDNN_MAJOR >= 9
  return (int)st >= 3005 && (int)st <= 3009;
#else
  return st == CUDNN_STATUS_ARCH_MISMATCH;
#endif
}

/* a NOT_SUPPORTED status (cuDNN 9 numbers them 3000-3999; cuDNN 8 has the one), or a data pointer
   cuDNN 9 finds misaligned (a block of images starting at an odd element of a half tensor): this
   convolution goes to im2col + gemm. Not those of an installation that cannot run cuDNN: they are
   reported */
bool cudnn_refused(cudnnStatus_t st) {
  if (cudnn_unusable(st)) return false;
#if CUDNN_MAJOR >= 9
  return (int)st / 1000 == 3 || st == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER;
#else
  return st == CUDNN_STATUS_NOT_SUPPORTED;
#endif
}

dt_status cudnn_fail(const char *what, cudnnStatus_t st) {
  (void)cudaGetLastError();
  set_err("%s failed: %s%s", what, cudnnGetErrorString(st),
          cudnn_unusable(st) ? " (cuDNN cannot run with this driver, CUDA runtime or GPU; DEVTENSOR_NO_CUDNN=1 convolves without it)" : "");
#if CUDNN_MAJOR >= 9
  if (st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED || st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    return DT_ERR_OUT_OF_MEMORY;
#else
  if (st == CUDNN_STATUS_ALLOC_FAILED) return DT_ERR_OUT_OF_MEMORY;
#endif
  return cudnn_refused(st) ? DT_ERR_UNSUPPORTED : DT_ERR_BACKEND;
}

enum { kConvFwd = 0, kConvData = 1, kConvFilter = 2 };
const char *const kConvCall[3] = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter"};
constexpr int kMaxAlgos = 8;  /* CUDNN_CONVOLUTION_FWD_ALGO_COUNT, the largest of the three counts */
constexpr size_t kMaxPlans = 512; /* per device; the cache is emptied when full */

struct ConvKey {
  int64_t v[18];
  bool operator<(const ConvKey &o) const { return memcmp(v, o.v, sizeof v) < 0; }
};

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int nalgo = 0, first = 0;
  int algo[kMaxAlgos] = {};
  size_t ws[kMaxAlgos] = {};
  cudnnMathType_t math[kMaxAlgos] = {};
  cudnnMathType_t cur = CUDNN_DEFAULT_MATH; /* what conv is set to now */
};

void plan_free(ConvPlan *p) {
  if (!p) return;
  if (p->x) (void)cudnnDestroyTensorDescriptor(p->x);
  if (p->y) (void)cudnnDestroyTensorDescriptor(p->y);
  if (p->w) (void)cudnnDestroyFilterDescriptor(p->w);
  if (p->conv) (void)cudnnDestroyConvolutionDescriptor(p->conv);
  delete p;
}

struct CudnnState {
  std::mutex mu; /* the handle and the plans: one call at a time per device */
  cudnnHandle_t h = nullptr;
  std::map<ConvKey, ConvPlan *> plans;
};

/* Never destroyed, as DevState (state()). */
CudnnState &cudnn_state(int dev) {
  alignas(CudnnState) static unsigned char storage[sizeof(CudnnState) * kMaxDevices];
  static CudnnState *s = [] {
    CudnnState *p = reinterpret_cast<CudnnState *>(storage);
    for (int i = 0; i < kMaxDevices; i++) new (p + i) CudnnState();
    return std::launder(p);
  }();
  return s[dev];
}

/* The device's handle, bound to its stream. Call with `dev` current and c.mu held. */
dt_status cudnn_handle(int dev, DevState &s, CudnnState &c) {
  if (c.h) return DT_OK;
  cudnnHandle_t h = nullptr;
  cudnnStatus_t st = cudnnCreate(&h);
  if (st != CUDNN_STATUS_SUCCESS) {
    dt_status r = cudnn_fail("cudnnCreate", st);
    if (r == DT_ERR_OUT_OF_MEMORY) set_err("cudnnCreate failed: out of memory on cuda:%d (%s)", dev, cudnnGetErrorString(st));
    return r == DT_ERR_UNSUPPORTED ? DT_ERR_BACKEND : r; /* no handle is no cuDNN: a failure, not a case to route around */
  }
  if ((st = cudnnSetStream(h, s.stream)) != CUDNN_STATUS_SUCCESS) {
    (void)cudnnDestroy(h);
    dt_status r = cudnn_fail("cudnnSetStream", st);
    return r == DT_ERR_UNSUPPORTED ? DT_ERR_BACKEND : r;
  }
  c.h = h;
  return DT_OK;
}

bool cudnn_type(dt_dtype t, cudnnDataType_t *data, cudnnDataType_t *compute) {
  switch (t) {
    case DT_F32: *data = CUDNN_DATA_FLOAT; *compute = CUDNN_DATA_FLOAT; return true;
    case DT_F64: *data = CUDNN_DATA_DOUBLE; *compute = CUDNN_DATA_DOUBLE; return true;
    case DT_F16: *data = CUDNN_DATA_HALF; *compute = CUDNN_DATA_FLOAT; return true;
    case DT_BF16: *data = CUDNN_DATA_BFLOAT16; *compute = CUDNN_DATA_FLOAT; return true;
    default: return false;
  }
}

/* the math mode for t (see the top): F32 follows dt_set_float32_matmul_precision */
cudnnMathType_t cudnn_math(dt_dtype t) {
  if (t == DT_F64) return CUDNN_DEFAULT_MATH;
  if (t == DT_F32) return g_f32_precision.load(std::memory_order_relaxed) == 0 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  return CUDNN_TENSOR_OP_MATH;
}

/* an algorithm of math mode m may run where `want` is asked: only FMA ones for F32 "highest", and
   never one that may convert float32 data to float16 (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: less
   precise than TF32, which is all "high" and "medium" allow) */
bool cudnn_math_ok(cudnnMathType_t want, cudnnMathType_t m) {
  return m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && (want != CUDNN_FMA_MATH || m != CUDNN_TENSOR_OP_MATH);
}

/* The algorithms the heuristics return for plan p's direction: those with CUDNN_STATUS_SUCCESS,
   in their order, each with its workspace size (an algorithm whose size query fails is left out). */
dt_status plan_algos(cudnnHandle_t h, int dir, cudnnMathType_t want, ConvPlan *p) {
  int n = 0;
  cudnnStatus_t st;
  const char *what = dir == kConvFwd ? "cudnnGetConvolutionForwardAlgorithm_v7"
                   : dir == kConvData ? "cudnnGetConvolutionBackwardDataAlgorithm_v7"
                                      : "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
  int algo[kMaxAlgos];
  cudnnStatus_t ast[kMaxAlgos];
  cudnnMathType_t am[kMaxAlgos];
  bool det[kMaxAlgos];
  if (dir == kConvFwd) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    st = cudnnGetConvolutionForwardAlgorithm_v7(h, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
    for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < n && i < kMaxAlgos; i++) {
      algo[i] = (int)perf[i].algo; ast[i] = perf[i].status; am[i] = perf[i].mathType;
      det[i] = perf[i].determinism == CUDNN_DETERMINISTIC;
    }
  } else if (dir == kConvData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    st = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->w, p->y, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
    for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < n && i < kMaxAlgos; i++) {
      algo[i] = (int)perf[i].algo; ast[i] = perf[i].status; am[i] = perf[i].mathType;
      det[i] = perf[i].determinism == CUDNN_DETERMINISTIC;
    }
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->x, p->y, p->conv, p->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
                                                       perf);
    for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < n && i < kMaxAlgos; i++) {
      algo[i] = (int)perf[i].algo; ast[i] = perf[i].status; am[i] = perf[i].mathType;
      det[i] = perf[i].determinism == CUDNN_DETERMINISTIC;
    }
  }
  if (st != CUDNN_STATUS_SUCCESS) return cudnn_fail(what, st);
  if (n > kMaxAlgos) n = kMaxAlgos;
  cudnnStatus_t wfail = CUDNN_STATUS_SUCCESS;
  /* the deterministic ones first, in the heuristics' order, then the others (atomic adds: two
     runs may differ in the last bits), used only where no deterministic one gets its workspace */
  for (int k = 0; k < 2 * n; k++) {
    const int i = k % n;
    if (det[i] != (k < n)) continue;
    if (ast[i] != CUDNN_STATUS_SUCCESS || !cudnn_math_ok(want, am[i])) continue;
    cudnnMathType_t m = want == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : am[i];
    size_t ws = 0;
    if (p->cur != m) {
      if ((st = cudnnSetConvolutionMathType(p->conv, m)) != CUDNN_STATUS_SUCCESS) return cudnn_fail("cudnnSetConvolutionMathType", st);
      p->cur = m;
    }
    if (dir == kConvFwd)
      st = cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->w, p->conv, p->y, (cudnnConvolutionFwdAlgo_t)algo[i], &ws);
    else if (dir == kConvData)
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->w, p->y, p->conv, p->x, (cudnnConvolutionBwdDataAlgo_t)algo[i], &ws);
    else
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x, p->y, p->conv, p->w, (cudnnConvolutionBwdFilterAlgo_t)algo[i],
                                                          &ws);
    if (st != CUDNN_STATUS_SUCCESS) {
      if (wfail == CUDNN_STATUS_SUCCESS) wfail = st;
      continue;
    }
    p->algo[p->nalgo] = algo[i];
    p->ws[p->nalgo] = ws;
    p->math[p->nalgo] = m;
    p->nalgo++;
  }
  if (p->nalgo > 0) return DT_OK;
  if (wfail != CUDNN_STATUS_SUCCESS && !cudnn_refused(wfail)) {
    char w[96];
    snprintf(w, sizeof w, "%s (the workspace size query)", kConvCall[dir]);
    return cudnn_fail(w, wfail);
  }
  set_err("%s: cuDNN has no algorithm for this convolution", what);
  return DT_ERR_UNSUPPORTED;
}

/* A new plan for key k (dir, dtype, math, then g's sizes); *out NULL on failure. */
dt_status plan_make(cudnnHandle_t h, int dir, dt_dtype t, cudnnMathType_t math, const dt__conv2d *g, ConvPlan **out) {
  cudnnDataType_t data, compute;
  *out = nullptr;
  if (!cudnn_type(t, &data, &compute)) {
    set_err("cuDNN convolutions are not defined for %s", dt__dtype_str(t));
    return DT_ERR_UNSUPPORTED;
  }
  const int64_t dims[] = {g->n, g->c, g->h, g->w, g->oc, g->oh, g->ow, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, g->groups};
  for (int64_t d : dims)
    if (d > INT_MAX) {
      set_err("cuDNN: a convolution size (%lld) exceeds its int range", (long long)d);
      return DT_ERR_UNSUPPORTED;
    }
  ConvPlan *p = new (std::nothrow) ConvPlan;
  if (!p) {
    set_err("out of host memory for a cuDNN convolution plan");
    return DT_ERR_OUT_OF_MEMORY;
  }
  const char *what = "cudnnCreateTensorDescriptor";
  cudnnStatus_t st = cudnnCreateTensorDescriptor(&p->x);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreateTensorDescriptor(&p->y);
  if (st == CUDNN_STATUS_SUCCESS) { what = "cudnnCreateFilterDescriptor"; st = cudnnCreateFilterDescriptor(&p->w); }
  if (st == CUDNN_STATUS_SUCCESS) { what = "cudnnCreateConvolutionDescriptor"; st = cudnnCreateConvolutionDescriptor(&p->conv); }
  if (st == CUDNN_STATUS_SUCCESS) {
    what = "cudnnSetTensor4dDescriptor";
    st = cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, data, (int)g->n, (int)g->c, (int)g->h, (int)g->w);
  }
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, data, (int)g->n, (int)g->oc, (int)g->oh, (int)g->ow);
  if (st == CUDNN_STATUS_SUCCESS) {
    what = "cudnnSetFilter4dDescriptor";
    st = cudnnSetFilter4dDescriptor(p->w, data, CUDNN_TENSOR_NCHW, (int)g->oc, (int)(g->c / g->groups), (int)g->kh, (int)g->kw);
  }
  if (st == CUDNN_STATUS_SUCCESS) {
    what = "cudnnSetConvolution2dDescriptor";
    st = cudnnSetConvolution2dDescriptor(p->conv, (int)g->ph, (int)g->pw, (int)g->sh, (int)g->sw, (int)g->dh, (int)g->dw,
                                         CUDNN_CROSS_CORRELATION, compute);
  }
  if (st == CUDNN_STATUS_SUCCESS) { what = "cudnnSetConvolutionGroupCount"; st = cudnnSetConvolutionGroupCount(p->conv, (int)g->groups); }
  if (st == CUDNN_STATUS_SUCCESS) { what = "cudnnSetConvolutionMathType"; st = cudnnSetConvolutionMathType(p->conv, math); }
  dt_status r = DT_OK;
  if (st != CUDNN_STATUS_SUCCESS) r = cudnn_fail(what, st);
  else {
    p->cur = math;
    r = plan_algos(h, dir, math, p);
    if (r == DT_ERR_UNSUPPORTED) r = DT_OK; /* kept with no algorithm: the next call of this geometry goes straight to im2col */
  }
  if (r != DT_OK) {
    plan_free(p);
    return r;
  }
  *out = p;
  return DT_OK;
}

/* out = op(a, b) for direction dir (forward: x, w -> y; data: w, gy -> gx; filter: x, gy -> gw,
   plus beta gw) on dev's stream */
dt_status cudnn_conv(int dev, dt_dtype t, const dt__conv2d *g, int dir, const void *a, const void *b, double beta, void *out) {
  if (cudnn_off()) {
    set_err("cuDNN is off (DEVTENSOR_NO_CUDNN)");
    return DT_ERR_UNSUPPORTED;
  }
  Entered in(dev);
  if (!in.ok()) return in.status();
  CudnnState &c = cudnn_state(dev);
  std::lock_guard<std::mutex> lk(c.mu);
  dt_status r = cudnn_handle(dev, *in.s, c);
  if (r != DT_OK) return r;
  const cudnnMathType_t math = cudnn_math(t);
  ConvKey k;
  const int64_t v[18] = {dir, (int64_t)t, (int64_t)math, g->n, g->c, g->h, g->w, g->oc, g->kh, g->kw,
                         g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, g->groups, 0};
  memcpy(k.v, v, sizeof v);
  ConvPlan *p = nullptr;
  try {
    auto it = c.plans.find(k);
    if (it != c.plans.end()) p = it->second;
    else {
      if ((r = plan_make(c.h, dir, t, math, g, &p)) != DT_OK) return r;
      if (c.plans.size() >= kMaxPlans) {
        for (auto &e : c.plans) plan_free(e.second);
        c.plans.clear();
      }
      try {
        c.plans.emplace(k, p);
      } catch (...) {
        plan_free(p);
        throw;
      }
    }
  } catch (...) { /* std::bad_alloc from the map */
    set_err("out of host memory for a cuDNN convolution plan");
    return DT_ERR_OUT_OF_MEMORY;
  }
  /* alpha and beta in the compute type's host scalar: double for F64, float for the others */
  const double ad = 1.0, bd = beta;
  const float af = 1.0f, bf = (float)beta;
  const void *alpha = t == DT_F64 ? (const void *)&ad : (const void *)&af, *betap = t == DT_F64 ? (const void *)&bd : (const void *)&bf;
  dt_status last = DT_OK; /* the last failed call's */
  bool front = true;      /* every algorithm before i is passed over from now on */
  for (int i = p->first; i < p->nalgo; i++) {
    void *ws = nullptr;
    if (p->ws[i] > 0 && cu_alloc(dev, p->ws[i], &ws) != DT_OK) continue; /* the next algorithm, with less (or none) */
    if (front) p->first = i; /* those before it had no workspace */
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    if (p->cur != p->math[i]) {
      st = cudnnSetConvolutionMathType(p->conv, p->math[i]);
      if (st == CUDNN_STATUS_SUCCESS) p->cur = p->math[i];
    }
    const char *what = st != CUDNN_STATUS_SUCCESS ? "cudnnSetConvolutionMathType" : kConvCall[dir];
    if (st == CUDNN_STATUS_SUCCESS) {
      if (dir == kConvFwd)
        st = cudnnConvolutionForward(c.h, alpha, p->x, a, p->w, b, p->conv, (cudnnConvolutionFwdAlgo_t)p->algo[i], ws, p->ws[i],
                                     betap, p->y, out);
      else if (dir == kConvData)
        st = cudnnConvolutionBackwardData(c.h, alpha, p->w, a, p->y, b, p->conv, (cudnnConvolutionBwdDataAlgo_t)p->algo[i], ws,
                                          p->ws[i], betap, p->x, out);
      else
        st = cudnnConvolutionBackwardFilter(c.h, alpha, p->x, a, p->y, b, p->conv, (cudnnConvolutionBwdFilterAlgo_t)p->algo[i], ws,
                                            p->ws[i], betap, p->w, out);
    }
    if (ws) cu_free(dev, ws, p->ws[i]); /* queued work first: the stream orders its reuse */
    if (st == CUDNN_STATUS_SUCCESS) {
      (void)cudaGetLastError(); /* an error cuDNN met and handled is not the next launch's */
      return DT_OK;
    }
    /* as PyTorch's (its AlgoIterator::try_all): the heuristics' "supported" is no promise, so a
       failed call goes on to the next algorithm; one cuDNN refuses is not asked again for this
       geometry, one that failed otherwise is tried again next time. A misaligned pointer is this
       call's, not the geometry's: im2col for this call, the plan as it was */
    if ((last = cudnn_fail(what, st)) == DT_ERR_OUT_OF_MEMORY) return last;
#if CUDNN_MAJOR >= 9
    if (st == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER) return DT_ERR_UNSUPPORTED;
#endif
    if (cudnn_refused(st) && front) p->first = i + 1;
    else front = false;
  }
  if (last != DT_OK) return last; /* its message: the last algorithm's failure */
  if (p->nalgo == 0) {
    set_err("%s: cuDNN has no algorithm for this convolution", kConvCall[dir]);
    return DT_ERR_UNSUPPORTED;
  }
  if (p->first >= p->nalgo) {
    set_err("%s: cuDNN refused each of its %d algorithms for this convolution", kConvCall[dir], p->nalgo);
    return DT_ERR_UNSUPPORTED;
  }
  size_t least = p->ws[0];
  for (int i = 1; i < p->nalgo; i++) least = p->ws[i] < least ? p->ws[i] : least;
  char need[32];
  set_err("%s: no workspace for any of cuDNN's %d algorithms (the smallest asks for %s)", kConvCall[dir], p->nalgo,
          dt__bytes_str((double)least, need, sizeof need));
  return DT_ERR_UNSUPPORTED;
}

/* Before a capture begins on dev: its handle, so that cudnnCreate never runs inside one. */
dt_status cudnn_before_capture(int dev, DevState &s) {
  if (cudnn_off()) return DT_OK;
  CudnnState &c = cudnn_state(dev);
  std::lock_guard<std::mutex> lk(c.mu);
  return cudnn_handle(dev, s, c);
}

dt_status cu_conv2d_forward(int dev, dt_dtype t, const dt__conv2d *g, const void *x, const void *w, void *y) {
  return cudnn_conv(dev, t, g, kConvFwd, x, w, 0.0, y);
}
dt_status cu_conv2d_backward_data(int dev, dt_dtype t, const dt__conv2d *g, const void *w, const void *gy, void *gx) {
  return cudnn_conv(dev, t, g, kConvData, w, gy, 0.0, gx);
}
dt_status cu_conv2d_backward_filter(int dev, dt_dtype t, const dt__conv2d *g, const void *x, const void *gy, double beta, void *gw) {
  return cudnn_conv(dev, t, g, kConvFilter, x, gy, beta, gw);
}
#endif

/* ---- src/cuda/table.cu ---- */
} /* namespace */

extern "C" const dt__backend *dt__cuda_backend(void) {
  static const dt__backend be = {
    DT__SLOT(name) "cuda",
    DT__SLOT(device_count) cu_device_count,
    DT__SLOT(device_info) cu_device_info,
    DT__SLOT(last_error) cu_last_error,
    DT__SLOT(alloc) cu_alloc,
    DT__SLOT(free) cu_free,
    DT__SLOT(memory_stats) cu_memory_stats,
    DT__SLOT(empty_cache) cu_empty_cache,
    DT__SLOT(copy) cu_copy,
    DT__SLOT(synchronize) cu_synchronize,
    DT__SLOT(stream) cu_stream,
    DT__SLOT(fill) cu_fill,
    DT__SLOT(unary) cu_unary,
    DT__SLOT(binary) cu_binary,
    DT__SLOT(cast) cu_cast,
    DT__SLOT(reduce) cu_reduce,
    DT__SLOT(gemm) cu_gemm,
    DT__SLOT(axpy) cu_axpy,
    DT__SLOT(random) cu_random,
    /* optimizers */
    DT__SLOT(optim_step) cu_optim_step,
    /* comparisons */
    DT__SLOT(compare) cu_compare,
    /* indexing */
    DT__SLOT(copy_strided) cu_copy_strided,
    DT__SLOT(index_select) cu_index_select,
    /* classification */
    DT__SLOT(arg_reduce) cu_arg_reduce,
    DT__SLOT(softmax) cu_softmax,
    DT__SLOT(cross_entropy) cu_cross_entropy,
    /* distributed */
    DT__SLOT(dist_unique_id) cu_dist_unique_id,
    DT__SLOT(dist_comm_init) cu_dist_comm_init,
    DT__SLOT(dist_comm_init_all) cu_dist_comm_init_all,
    DT__SLOT(dist_comm_free) cu_dist_comm_free,
    DT__SLOT(dist_all_reduce) cu_dist_all_reduce,
    DT__SLOT(dist_broadcast) cu_dist_broadcast,
    /* convolution and pooling */
    DT__SLOT(im2col) cu_im2col,
    DT__SLOT(col2im) cu_col2im,
    DT__SLOT(pool2d) cu_pool2d,
    DT__SLOT(pool2d_backward) cu_pool2d_backward,
    /* where, gather, scatter-add, index-add, random integers */
    DT__SLOT(where) cu_where,
    DT__SLOT(gather) cu_gather,
    DT__SLOT(scatter_add) cu_scatter_add,
    DT__SLOT(index_add) cu_index_add,
    DT__SLOT(random_int) cu_random_int,
    /* losses */
    DT__SLOT(nll_loss) cu_nll_loss,
    /* half precision: cublasGemmEx with F32 accumulation; F32 matmul precision */
    DT__SLOT(half_gemm) 1,
    DT__SLOT(set_matmul_precision) cu_set_matmul_precision,
    /* graphs */
    DT__SLOT(graph_begin) cu_graph_begin,
    DT__SLOT(graph_end) cu_graph_end,
    DT__SLOT(graph_replay) cu_graph_replay,
    DT__SLOT(graph_free) cu_graph_free,
    /* convolution through cuDNN (DEVTENSOR_CUDNN; else none: im2col + cuBLAS) */
#ifdef DEVTENSOR_CUDNN
    DT__SLOT(conv2d_forward) cu_conv2d_forward,
    DT__SLOT(conv2d_backward_data) cu_conv2d_backward_data,
    DT__SLOT(conv2d_backward_filter) cu_conv2d_backward_filter,
#else
    DT__SLOT(conv2d_forward) nullptr,
    DT__SLOT(conv2d_backward_data) nullptr,
    DT__SLOT(conv2d_backward_filter) nullptr,
#endif
    /* batch normalisation */
    DT__SLOT(batch_norm) cu_batch_norm,
    DT__SLOT(batch_norm_backward) cu_batch_norm_backward
  };
  return &be;
}
