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
