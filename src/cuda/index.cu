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
