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
