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
