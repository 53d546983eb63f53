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
