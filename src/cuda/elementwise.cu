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
