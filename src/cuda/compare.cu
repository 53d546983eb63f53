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
