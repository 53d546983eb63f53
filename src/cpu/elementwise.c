/* Typed kernels, chosen from small tables by dtype and operation. This part: the choice of
   variant and the scalar kernels; cpu/vmath.c and cpu/elementwise_vec.c: the vector kernels.
   The loops that matter most (F32/F64 add, sub, mul, div; F32 exp and log; fill; F32 <-> F64
   casts; sums and norms) are written with GCC/Clang vector types and compiled three times on
   x86 (GCC >= 6, Clang >= 5): for the baseline (16-byte vectors), AVX2 and AVX-512;
   dt__ew_isa() picks the widest one the CPU has, once, as the matmul does
   (DEVTENSOR_NO_CPU_DISPATCH: the baseline only).
   - add, sub, mul, div, fill and casts give the same bits in every variant (one IEEE operation
     per element; no FMA: the AVX2 variant is compiled without it, AVX-512's has no a*b+c);
   - F32 exp and log: polynomials (Cephes' expf and logf coefficients, after Cody-Waite range
     reduction) on the vectors, the same operations in every variant; arguments outside the
     polynomial's range (exp: x < -87 or x > 88, log: x not a positive normal, and inf, NaN)
     take libm's expf / logf. Error: at most 1 ulp (tests/test_vmath.c measures it against
     exp/log in double over a sweep of the floats and the edge cases);
   - sums and norms accumulate in double: sixteen partial sums per block of elements, the same
     in every variant, blocks combined in order. */

#if !defined(DEVTENSOR_NO_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__)) &&            \
    ((defined(__clang__) && __clang_major__ >= 5) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 6))
#define DT__EW_X86 1
#else
#define DT__EW_X86 0
#endif
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 9)
#define DT__EW_CONVERT(v, T) __builtin_convertvector(v, T)
#endif

enum { DT__EW_BASE = 0, DT__EW_AVX2 = 1, DT__EW_AVX512 = 2, DT__EW_NISA = 3 };

#if DT__EW_X86 /* implied by DT__GEMM_X86 (the same conditions and more) */
#include <cpuid.h>
/* Whether the operating system saves the register state in mask (XCR0 bits: 0x6 for the
   YMM registers, 0xE6 for the ZMM registers and opmasks) on a context switch. The CPU may
   have AVX-512 that the kernel has not enabled; older compilers' __builtin_cpu_supports
   does not always ask. */
static int dt__x86_xcr0_cached = -1; /* read once: CPUID traps to the hypervisor in a VM */
static int dt__x86_os_saves(unsigned mask) {
  int xcr0 = DT__ATOMIC_LOAD(&dt__x86_xcr0_cached);
  if (xcr0 < 0) {
    unsigned a, b, c, d, lo = 0, hi;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27))) { /* OSXSAVE, else no XGETBV */
      __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      (void)hi;
    }
    xcr0 = (int)(lo & 0xFFu);
    DT__ATOMIC_STORE(&dt__x86_xcr0_cached, xcr0);
  }
  return ((unsigned)xcr0 & mask) == mask;
}
static int dt__x86_has_avx2(void) { return __builtin_cpu_supports("avx2") && dt__x86_os_saves(0x6); }
/* unused where the gemm is built without vector kernels (-DDT__GEMM_VEC=0) */
__attribute__((unused)) static int dt__x86_has_avx2_fma(void) { return dt__x86_has_avx2() && __builtin_cpu_supports("fma"); }
static int dt__x86_has_avx512f(void) { return __builtin_cpu_supports("avx512f") && dt__x86_os_saves(0xE6); }
#endif

/* The widest variant this CPU runs, found once. */
static int dt__ew_isa_cached = -1;
static int dt__ew_isa(void) {
  int isa = DT__ATOMIC_LOAD(&dt__ew_isa_cached);
  if (isa < 0) {
    isa = DT__EW_BASE;
#if DT__EW_X86
    if (dt__x86_has_avx512f()) isa = DT__EW_AVX512;
    else if (dt__x86_has_avx2()) isa = DT__EW_AVX2;
#endif
    DT__ATOMIC_STORE(&dt__ew_isa_cached, isa);
  }
  return isa;
}

/* The variants' function attributes, and their vector types: vf, vi, vd, vl: float, uint32_t,
   double, uint64_t in the variant's width; vh: float in half of it (as many lanes as vd). */
#define DT__TARGET_BASE
typedef float dt__vf_base __attribute__((vector_size(16)));
typedef uint32_t dt__vi_base __attribute__((vector_size(16)));
typedef double dt__vd_base __attribute__((vector_size(16)));
typedef uint64_t dt__vl_base __attribute__((vector_size(16)));
typedef float dt__vh_base __attribute__((vector_size(8)));
#if DT__EW_X86
#define DT__TARGET_AVX2 __attribute__((target("avx2")))
typedef float dt__vf_avx2 __attribute__((vector_size(32)));
typedef uint32_t dt__vi_avx2 __attribute__((vector_size(32)));
typedef double dt__vd_avx2 __attribute__((vector_size(32)));
typedef uint64_t dt__vl_avx2 __attribute__((vector_size(32)));
typedef float dt__vh_avx2 __attribute__((vector_size(16)));
#define DT__TARGET_AVX512 __attribute__((target("avx512f")))
typedef float dt__vf_avx512 __attribute__((vector_size(64)));
typedef uint32_t dt__vi_avx512 __attribute__((vector_size(64)));
typedef double dt__vd_avx512 __attribute__((vector_size(64)));
typedef uint64_t dt__vl_avx512 __attribute__((vector_size(64)));
typedef float dt__vh_avx512 __attribute__((vector_size(32)));
#endif

/* y[i] = a[i * sa] op b[i * sb], i < n */
typedef void (*dt__zip_fn)(int64_t n, const void *a, int64_t sa, const void *b, int64_t sb, void *y);
/* y[i] = f(x[i]), i < n; p0, p1: the operation's parameters */
typedef void (*dt__map_fn)(int64_t n, const void *x, void *y, double p0, double p1);
/* y[i] = x[i] converted, i < n */
typedef void (*dt__conv_fn)(int64_t n, const void *x, void *y);
/* the 16 partial sums (of squares when sq) of x[0..n) in acc: acc[j] gets the elements i % 16 == j */
typedef void (*dt__sum16_fn)(int64_t n, const void *x, int sq, double acc[16]);
/* y[i] = v, i < n */
typedef void (*dt__fill_fn)(int64_t n, const void *v, void *y);

/* Scalar kernels: EXPR of u (from a) and w (from b). */
#define DT__EW_ZIP(NAME, T, EXPR)                                                                   \
  static void NAME(int64_t n, const void *a_, int64_t sa, const void *b_, int64_t sb, void *y_) {   \
    const T *a = (const T *)a_, *b = (const T *)b_;                                                 \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    if (sa == 1 && sb == 1)                                                                         \
      for (i = 0; i < n; i++) { T u = a[i], w = b[i]; (void)w; y[i] = (T)(EXPR); }                  \
    else if (sa == 1 && sb == 0) {                                                                  \
      T w = b[0]; (void)w;                                                                          \
      for (i = 0; i < n; i++) { T u = a[i]; y[i] = (T)(EXPR); }                                     \
    } else if (sa == 0 && sb == 1) {                                                                \
      T u = a[0];                                                                                   \
      for (i = 0; i < n; i++) { T w = b[i]; (void)w; y[i] = (T)(EXPR); }                            \
    } else                                                                                          \
      for (i = 0; i < n; i++) { T u = a[i * sa], w = b[i * sb]; (void)w; y[i] = (T)(EXPR); }        \
  }
DT__EW_ZIP(dt__zip_copy_f32, float, u)
DT__EW_ZIP(dt__zip_relu_grad_f64, double, w > 0.0 ? u : 0.0)
DT__EW_ZIP(dt__zip_sigmoid_grad_f64, double, u * (1.0 - w) * w)
DT__EW_ZIP(dt__zip_tanh_grad_f64, double, u * (1.0 - w * w))
DT__EW_ZIP(dt__zip_copy_f64, double, u)
/* integers: wrapping arithmetic through unsigned, as PyTorch's */
DT__EW_ZIP(dt__zip_add_i32, int32_t, (uint32_t)u + (uint32_t)w)
DT__EW_ZIP(dt__zip_sub_i32, int32_t, (uint32_t)u - (uint32_t)w)
DT__EW_ZIP(dt__zip_mul_i32, int32_t, (uint32_t)u * (uint32_t)w)
DT__EW_ZIP(dt__zip_copy_i32, int32_t, u)
DT__EW_ZIP(dt__zip_add_i64, int64_t, (uint64_t)u + (uint64_t)w)
DT__EW_ZIP(dt__zip_sub_i64, int64_t, (uint64_t)u - (uint64_t)w)
DT__EW_ZIP(dt__zip_mul_i64, int64_t, (uint64_t)u * (uint64_t)w)
DT__EW_ZIP(dt__zip_copy_i64, int64_t, u)
/* float16 and bfloat16 copies (transposes): their bits */
DT__EW_ZIP(dt__zip_copy_u16, uint16_t, u)

#define DT__EW_MAP(NAME, T, EXPR)                                                                   \
  static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                     \
    const T *x = (const T *)x_;                                                                     \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    (void)p0; (void)p1;                                                                             \
    for (i = 0; i < n; i++) { T v = x[i]; y[i] = (T)(EXPR); }                                       \
  }
DT__EW_MAP(dt__map_sqrt_f32, float, sqrtf(v))
DT__EW_MAP(dt__map_neg_f32, float, -v)
DT__EW_MAP(dt__map_exp_f64, double, exp(v))
DT__EW_MAP(dt__map_log_f64, double, log(v))
DT__EW_MAP(dt__map_sqrt_f64, double, sqrt(v))
DT__EW_MAP(dt__map_neg_f64, double, -v)
DT__EW_MAP(dt__map_relu_f64, double, v > 0.0 ? v : (v != v ? v : 0.0))
DT__EW_MAP(dt__map_affine_f64, double, p0 * v + p1)
/* x^p as torch.pow: its p = 0.5 and -0.5 are sqrt(x) and 1 / sqrt(x), which differ from the maths
   library's pow at x = -inf (NaN, where pow gives +inf and +0) and x = -0 (-0 and -inf, where pow
   gives +0 and +inf); every other x by pow, whose bits are kept */
static float dt__pow_f32(float v, float p) {
  if ((p == 0.5f || p == -0.5f) && (v == -INFINITY || (v == 0.0f && signbit(v))))
    return p > 0.0f ? sqrtf(v) : 1.0f / sqrtf(v);
  return powf(v, p);
}
static double dt__pow_f64(double v, double p) {
  if ((p == 0.5 || p == -0.5) && (v == -INFINITY || (v == 0.0 && signbit(v))))
    return p > 0.0 ? sqrt(v) : 1.0 / sqrt(v);
  return pow(v, p);
}
/* sin, cos, erf, gelu (the erf form, as torch's approximate='none') and its derivative, pow,
   clamp (NaN in x or a bound gives NaN; lo > hi gives hi, as torch.clamp) */
DT__EW_MAP(dt__map_sin_f32, float, sinf(v))
DT__EW_MAP(dt__map_cos_f32, float, cosf(v))
DT__EW_MAP(dt__map_erf_f32, float, erff(v))
DT__EW_MAP(dt__map_gelu_f32, float, v * 0.5f * (1.0f + erff(v * 0.70710678118654752f)))
DT__EW_MAP(dt__map_gelu_grad_f32, float, 0.5f * (1.0f + erff(v * 0.70710678118654752f)) + v * 0.39894228040143268f * expf(-0.5f * v * v))
DT__EW_MAP(dt__map_pow_f32, float, dt__pow_f32(v, (float)p0))
DT__EW_MAP(dt__map_sin_f64, double, sin(v))
DT__EW_MAP(dt__map_cos_f64, double, cos(v))
DT__EW_MAP(dt__map_erf_f64, double, erf(v))
DT__EW_MAP(dt__map_gelu_f64, double, v * 0.5 * (1.0 + erf(v * 0.70710678118654752)))
DT__EW_MAP(dt__map_gelu_grad_f64, double, 0.5 * (1.0 + erf(v * 0.70710678118654752)) + v * 0.39894228040143268 * exp(-0.5 * v * v))
DT__EW_MAP(dt__map_pow_f64, double, dt__pow_f64(v, p0))
#define DT__EW_CLAMP(NAME, T)                                                                       \
  static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                     \
    const T *x = (const T *)x_, lo = (T)p0, hi = (T)p1;                                             \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    for (i = 0; i < n; i++) {                                                                       \
      T r = x[i];                                                                                   \
      if (r < lo) r = lo;                                                                           \
      if (r > hi) r = hi;                                                                           \
      if (lo != lo) r = lo;                                                                         \
      if (hi != hi) r = hi;                                                                         \
      y[i] = r;                                                                                     \
    }                                                                                               \
  }
DT__EW_CLAMP(dt__map_clamp_f32, float)
DT__EW_CLAMP(dt__map_clamp_f64, double)
/* softplus: max(x, 0) + log1p(exp(-|x|)), no overflow for any x; NaN stays NaN */
DT__EW_MAP(dt__map_softplus_f32, float, (v > 0.0f ? v : 0.0f) + log1pf(expf(-fabsf(v))))
DT__EW_MAP(dt__map_softplus_f64, double, (v > 0.0 ? v : 0.0) + log1p(exp(-fabs(v))))
/* integer affine and neg (a = -1, b = 0): wrapping */
DT__EW_MAP(dt__map_neg_i32, int32_t, (int32_t)((uint32_t)0 - (uint32_t)v))
DT__EW_MAP(dt__map_neg_i64, int64_t, (int64_t)((uint64_t)0 - (uint64_t)v))

#define DT__EW_AFFINE_INT(NAME, T, U)                                                               \
  static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                     \
    const T *x = (const T *)x_;                                                                     \
    const U a = (U)dt__f2i64(p0), b = (U)dt__f2i64(p1);                                             \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    for (i = 0; i < n; i++) y[i] = (T)(a * (U)x[i] + b);                                            \
  }
DT__EW_AFFINE_INT(dt__map_affine_i32, int32_t, uint32_t)
DT__EW_AFFINE_INT(dt__map_affine_i64, int64_t, uint64_t)

static void dt__map_affine_f32(int64_t n, const void *x_, void *y_, double p0, double p1) {
  const float *x = (const float *)x_, a = (float)p0, b = (float)p1;
  float *y = (float *)y_;
  int64_t i;
  for (i = 0; i < n; i++) y[i] = a * x[i] + b;
}

/* y += alpha * x on [0, n) 32 bytes at a time where the compiler has vector extensions, the same
   operations per element as the scalar loop in DT__EW_AXPY; returns where that loop goes on. The
   scalar loop alone waits on y's elements in turn (an SGD step, dt_axpy_, is this loop). */
#if defined(__GNUC__) || defined(__clang__)
#define DT__EW_DEFINE_AXPY_VEC(NAME, T)                                                             \
  static int64_t NAME(int64_t n, const T *x, T *y, T al) {                                          \
    typedef T dt__av __attribute__((vector_size(32)));                                              \
    enum { W = 32 / sizeof(T) };                                                                    \
    const dt__av vz = {0}, va = vz + al;                                                            \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      dt__av xv, yv;                                                                                \
      memcpy(&xv, x + i, sizeof xv);                                                                \
      memcpy(&yv, y + i, sizeof yv);                                                                \
      yv = yv + va * xv;                                                                            \
      memcpy(y + i, &yv, sizeof yv);                                                                \
    }                                                                                               \
    return i;                                                                                       \
  }
#else
#define DT__EW_DEFINE_AXPY_VEC(NAME, T)                                                             \
  static int64_t NAME(int64_t n, const T *x, T *y, T al) {                                          \
    (void)n; (void)x; (void)y; (void)al;                                                            \
    return 0;                                                                                       \
  }
#endif
DT__EW_DEFINE_AXPY_VEC(dt__axpy_vec_f32, float)
DT__EW_DEFINE_AXPY_VEC(dt__axpy_vec_f64, double)

/* axpy: y += p0 * x, p0 rounded to T (the map that reads y) */
#define DT__EW_AXPY(NAME, T, VEC)                                                                   \
  static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                     \
    const T *x = (const T *)x_, al = (T)p0;                                                         \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    (void)p1;                                                                                       \
    for (i = VEC(n, x, y, al); i < n; i++) y[i] += al * x[i];                                       \
  }
DT__EW_AXPY(dt__map_axpy_f32, float, dt__axpy_vec_f32)
DT__EW_AXPY(dt__map_axpy_f64, double, dt__axpy_vec_f64)
#undef DT__EW_AXPY

#define DT__EW_CONV(NAME, S, D, EXPR)                                                               \
  static void NAME(int64_t n, const void *x_, void *y_) {                                           \
    const S *x = (const S *)x_;                                                                     \
    D *y = (D *)y_;                                                                                 \
    int64_t i;                                                                                      \
    for (i = 0; i < n; i++) { S v = x[i]; y[i] = EXPR; }                                            \
  }
DT__EW_CONV(dt__conv_f32_i32, float, int32_t, dt__f2i32(v))
DT__EW_CONV(dt__conv_f32_i64, float, int64_t, dt__f2i64(v))
DT__EW_CONV(dt__conv_f64_i32, double, int32_t, dt__f2i32(v))
DT__EW_CONV(dt__conv_f64_i64, double, int64_t, dt__f2i64(v))
DT__EW_CONV(dt__conv_i32_f32, int32_t, float, (float)v)
DT__EW_CONV(dt__conv_i32_f64, int32_t, double, (double)v)
DT__EW_CONV(dt__conv_i32_i64, int32_t, int64_t, (int64_t)v)
DT__EW_CONV(dt__conv_i64_f32, int64_t, float, (float)v)
DT__EW_CONV(dt__conv_i64_f64, int64_t, double, (double)v)
DT__EW_CONV(dt__conv_i64_i32, int64_t, int32_t, (int32_t)(uint32_t)v) /* the low 32 bits, as PyTorch */

#define DT__EW_FILL(NAME, T)                                                                        \
  static void NAME(int64_t n, const void *v, void *y_) {                                            \
    T x, *y = (T *)y_;                                                                              \
    int64_t i;                                                                                      \
    memcpy(&x, v, sizeof x);                                                                        \
    for (i = 0; i < n; i++) y[i] = x;                                                               \
  }
DT__EW_FILL(dt__fill_32, uint32_t)
DT__EW_FILL(dt__fill_64, uint64_t)
