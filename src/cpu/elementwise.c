/* Typed kernels, chosen from small tables by dtype and operation. The loops that matter most
   (F32/F64 add, sub, mul, div; F32 exp and log; fill; F32 <-> F64 casts; sums and norms) are
   written with GCC/Clang vector types and compiled three times on x86 (GCC >= 6, Clang >= 5):
   for the baseline (16-byte vectors), AVX2 and AVX-512; dt__ew_isa() picks the widest one the
   CPU has, once, as the matmul does (DEVTENSOR_NO_CPU_DISPATCH: the baseline only).
   - add, sub, mul, div, fill and casts give the same bits in every variant (one IEEE operation
     per element; no FMA: the AVX2 variant is compiled without it, AVX-512's has no a*b+c);
   - F32 exp and log: polynomials (Cephes' expf and logf coefficients, after Cody-Waite range
     reduction) on the vectors, the same operations in every variant; arguments outside the
     polynomial's range (exp: x < -87 or x > 88, log: x not a positive normal, and inf, NaN)
     take libm's expf / logf. Error: at most 1 ulp (tests/test_vmath.c measures it against
     exp/log in double over a sweep of the floats and the edge cases);
   - sums and norms accumulate in double (as before): sixteen partial sums per block of
     elements, the same in every variant, blocks combined in order. */

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
static int dt__x86_xcr0_cached = -1; /* read once: CPUID traps to the hypervisor in a VM (~10 us) */
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
   scalar loop alone, waiting on y's elements in turn, was a sixth of bench_cpu's 2-thread MLP
   epoch (its SGD step is dt_axpy_). */
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

/* Vector kernels, defined once per variant by DT__EW_VARIANT(SUF, ATTR, BYTES).
   Vectors move to and from memory through memcpy (one unaligned load or store). */

/* y = f(a, b), a dt__zip_fn: VEXPR of vectors u, w (vz: zeros), SEXPR of a[i * sa], b[i * sb];
   vectors where both are contiguous, or one side a broadcast scalar (sa or sb 0) */
#define DT__EW_VZIP(NAME, ATTR, T, V, VEXPR, SEXPR)                                                 \
  ATTR static void NAME(int64_t n, const void *a_, int64_t sa, const void *b_, int64_t sb, void *y_) { \
    enum { W = sizeof(V) / sizeof(T) };                                                             \
    const T *a = (const T *)a_, *b = (const T *)b_;                                                 \
    T *y = (T *)y_;                                                                                 \
    int64_t i = 0;                                                                                  \
    if (n > 0 && (sa | sb) == 1 && (sa & ~(int64_t)1) == 0 && (sb & ~(int64_t)1) == 0) {            \
      /* a broadcast side is read from W copies of its value that the loop does not step over */    \
      const V vz = {0}; /* for VEXPR */                                                             \
      T ab[W], bb[W];                                                                               \
      const T *pa = sa ? a : ab, *pb = sb ? b : bb;                                                 \
      const int64_t da = sa ? W : 0, db = sb ? W : 0;                                               \
      int k;                                                                                        \
      (void)vz;                                                                                     \
      for (k = 0; k < W; k++) { ab[k] = a[0]; bb[k] = b[0]; }                                       \
      for (; i + W <= n; i += W, pa += da, pb += db) {                                              \
        V u, w;                                                                                     \
        memcpy(&u, pa, sizeof u);                                                                   \
        memcpy(&w, pb, sizeof w);                                                                   \
        u = VEXPR;                                                                                  \
        memcpy(y + i, &u, sizeof u);                                                                \
      }                                                                                             \
    }                                                                                               \
    for (; i < n; i++) y[i] = SEXPR;                                                                \
  }

/* y = a OP b */
#define DT__EW_VARITH(NAME, ATTR, T, V, OP) DT__EW_VZIP(NAME, ATTR, T, V, u OP w, a[i * sa] OP b[i * sb])

/* exp and log compute the same operations in every variant: no multiply-add is fused, though an
   AVX-512 target implies FMA (Clang: the pragma DT__NO_CONTRACT in the body; GCC in a GNU mode:
   this attribute; GCC in ISO C mode does not fuse anyway). */
#if defined(__GNUC__) && !defined(__clang__)
#define DT__EW_NOFMA __attribute__((optimize("fp-contract=off")))
#else
#define DT__EW_NOFMA
#endif

/* expf on a vector of floats in the polynomial's range (-87 <= x <= 88): exp(x) = 2^k exp(r),
   k = round(x / ln 2), r = x - k ln 2 in two parts (k * 0.693359375 is exact). */
#define DT__EW_VEXPF(NAME, ATTR, VF, VI)                                                            \
  ATTR DT__EW_NOFMA static VF NAME(VF x) {                                                          \
    DT__NO_CONTRACT                                                                                 \
    VF t = x * 1.44269504088896341f + 12582912.0f, k = t - 12582912.0f, r, z, p;                    \
    VI e;                                                                                           \
    memcpy(&e, &t, sizeof e);                                                                       \
    e = (e - 0x4B400000u + 127u) << 23; /* 2^k */                                                   \
    r = x - k * 0.693359375f;                                                                       \
    r = r + k * 2.12194440e-4f;                                                                     \
    z = r * r;                                                                                      \
    p = r * 1.9875691500e-4f + 1.3981999507e-3f;                                                    \
    p = p * r + 8.3334519073e-3f;                                                                   \
    p = p * r + 4.1665795894e-2f;                                                                   \
    p = p * r + 1.6666665459e-1f;                                                                   \
    p = p * r + 5.0000001201e-1f;                                                                   \
    p = p * z + r;                                                                                  \
    p = p + 1.0f;                                                                                   \
    memcpy(&t, &e, sizeof t);                                                                       \
    return p * t;                                                                                   \
  }

/* logf on a vector of positive normal floats: x = 2^e m, m in [sqrt(1/2), sqrt(2)),
   log x = e ln 2 + log1p(m - 1). */
#define DT__EW_VLOGF(NAME, ATTR, VF, VI)                                                            \
  ATTR DT__EW_NOFMA static VF NAME(VF x) {                                                          \
    DT__NO_CONTRACT                                                                                 \
    const VF vz = {0}, sqrt2 = vz + 1.41421356f;                                                    \
    VI b, e, big, hb;                                                                               \
    VF m, h, f, z, p, ef;                                                                           \
    memcpy(&b, &x, sizeof b);                                                                       \
    e = (b >> 23) - 127u;                                                                           \
    b = (b & 0x007fffffu) | 0x3f800000u;                                                            \
    memcpy(&m, &b, sizeof m); /* [1, 2) */                                                          \
    h = m * 0.5f;                                                                                   \
    big = (VI)(m > sqrt2); /* -1 where m is halved */                                               \
    memcpy(&hb, &h, sizeof hb);                                                                     \
    b = (b & ~big) | (hb & big);                                                                    \
    memcpy(&m, &b, sizeof m);                                                                       \
    e = e - big;                                                                                    \
    e = e + 0x4B400000u; /* e as a float: 1.5 * 2^23 + e, less 1.5 * 2^23 */                        \
    memcpy(&ef, &e, sizeof ef);                                                                     \
    ef = ef - 12582912.0f;                                                                          \
    f = m - 1.0f;                                                                                   \
    z = f * f;                                                                                      \
    p = f * 7.0376836292e-2f - 1.1514610310e-1f;                                                    \
    p = p * f + 1.1676998740e-1f;                                                                   \
    p = p * f - 1.2420140846e-1f;                                                                   \
    p = p * f + 1.4249322787e-1f;                                                                   \
    p = p * f - 1.6668057665e-1f;                                                                   \
    p = p * f + 2.0000714765e-1f;                                                                   \
    p = p * f - 2.4999993993e-1f;                                                                   \
    p = p * f + 3.3333331174e-1f;                                                                   \
    p = p * f;                                                                                      \
    p = p * z;                                                                                      \
    p = p - ef * 2.12194440e-4f;                                                                    \
    p = p - z * 0.5f;                                                                               \
    p = f + p;                                                                                      \
    return p + ef * 0.693359375f;                                                                   \
  }

/* y = FN(x) on whole vectors (the last one padded), lanes outside [LO, HI] (and NaN) from LIBM. */
#define DT__EW_VMATH(NAME, ATTR, VF, VI, FN, LO, HI, LIBM)                                          \
  ATTR static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                \
    enum { W = sizeof(VF) / sizeof(float) };                                                        \
    const float *x = (const float *)x_;                                                             \
    float *y = (float *)y_;                                                                         \
    const VF vz = {0}, lo = vz + (LO), hi = vz + (HI);                                              \
    int64_t i;                                                                                      \
    int j;                                                                                          \
    (void)p0; (void)p1;                                                                             \
    for (i = 0; i < n; i += W) {                                                                    \
      float in[W];                                                                                  \
      uint32_t ok[W], all = 0xffffffffu;                                                            \
      const int m = n - i < W ? (int)(n - i) : W;                                                   \
      VF v;                                                                                         \
      VI k;                                                                                         \
      if (m == W) memcpy(&v, x + i, sizeof v);                                                      \
      else { /* the last, partial vector: padded with 1 */                                          \
        for (j = 0; j < W; j++) in[j] = j < m ? x[i + j] : 1.0f;                                    \
        memcpy(&v, in, sizeof v);                                                                   \
      }                                                                                             \
      k = (VI)(v >= lo) & (VI)(v <= hi);                                                            \
      memcpy(ok, &k, sizeof ok);                                                                    \
      for (j = 0; j < W; j++) all &= ok[j];                                                         \
      memcpy(in, &v, sizeof v);                                                                     \
      v = FN(v);                                                                                    \
      if (all != 0xffffffffu) {                                                                     \
        float out[W];                                                                               \
        memcpy(out, &v, sizeof v);                                                                  \
        for (j = 0; j < W; j++)                                                                     \
          if (!ok[j]) out[j] = LIBM(in[j]);                                                         \
        memcpy(&v, out, sizeof v);                                                                  \
      }                                                                                             \
      if (m == W) memcpy(y + i, &v, sizeof v);                                                      \
      else {                                                                                        \
        float out[W];                                                                               \
        memcpy(out, &v, sizeof v);                                                                  \
        for (j = 0; j < m; j++) y[i + j] = out[j];                                                  \
      }                                                                                             \
    }                                                                                               \
  }

#define DT__EW_VFILL(NAME, ATTR, T, V)                                                              \
  ATTR static void NAME(int64_t n, const void *v_, void *y_) {                                      \
    enum { W = sizeof(V) / sizeof(T) };                                                             \
    const V vz = {0};                                                                               \
    T x, *y = (T *)y_;                                                                              \
    V v;                                                                                            \
    int64_t i = 0;                                                                                  \
    memcpy(&x, v_, sizeof x);                                                                       \
    v = vz + x;                                                                                     \
    for (; i + W <= n; i += W) memcpy(y + i, &v, sizeof v);                                         \
    for (; i < n; i++) y[i] = x;                                                                    \
  }

/* Asks GCC to unroll a short loop over an array of vectors, so that the array lives in registers. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
#define DT__UNROLL8 _Pragma("GCC unroll 8")
#else
#define DT__UNROLL8
#endif

/* 16 partial sums in double; VH: half as many lanes of T as VD has doubles' bytes / 8 */
#define DT__EW_VSUM16(NAME, ATTR, T, VH, VD)                                                        \
  ATTR static void NAME(int64_t n, const void *x_, int sq, double acc[16]) {                        \
    enum { L = sizeof(VD) / sizeof(double), Q = 16 / L };                                           \
    const T *x = (const T *)x_;                                                                     \
    const VD vz = {0};                                                                              \
    VD s[2 * Q]; /* two sets of 16 lanes: at least 4 independent chains of adds (latency 3-4) */   \
    int64_t i = 0;                                                                                  \
    int q, j;                                                                                       \
    for (q = 0; q < 2 * Q; q++) s[q] = vz;                                                          \
    for (; i + 32 <= n; i += 32)                                                                    \
      DT__UNROLL8 for (q = 0; q < 2 * Q; q++) {                                                     \
        VH h;                                                                                       \
        VD d;                                                                                       \
        memcpy(&h, x + i + q * L, sizeof h);                                                        \
        d = DT__EW_CONVERT(h, VD);                                                                  \
        s[q] += sq ? d * d : d;                                                                     \
      }                                                                                             \
    for (q = 0; q < Q; q++) {                                                                       \
      s[q] += s[q + Q];                                                                             \
      memcpy(acc + q * L, &s[q], sizeof s[q]);                                                      \
    }                                                                                               \
    for (j = 0; i < n; i++, j++) acc[j & 15] += sq ? (double)x[i] * x[i] : (double)x[i];            \
  }

#define DT__EW_VCONV(NAME, ATTR, S, D, VS, VD)                                                      \
  ATTR static void NAME(int64_t n, const void *x_, void *y_) {                                      \
    enum { W = sizeof(VS) / sizeof(S) };                                                            \
    const S *x = (const S *)x_;                                                                     \
    D *y = (D *)y_;                                                                                 \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      VS a;                                                                                         \
      VD b;                                                                                         \
      memcpy(&a, x + i, sizeof a);                                                                  \
      b = DT__EW_CONVERT(a, VD);                                                                    \
      memcpy(y + i, &b, sizeof b);                                                                  \
    }                                                                                               \
    for (; i < n; i++) y[i] = (D)x[i];                                                              \
  }

/* relu (NAME) and its gradient (GNAME: y = a where b > 0, else 0) on F32, without a branch: with
   the signs of a layer's pre-activations random, the scalar loops mispredicted half their
   branches (relu of 65536 floats took 240 us, an add of the same 4 us). A NaN stays a NaN. */
#define DT__EW_VRELU(NAME, GNAME, ATTR, VF, VI)                                                     \
  ATTR static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                \
    enum { W = sizeof(VF) / sizeof(float) };                                                        \
    const float *x = (const float *)x_;                                                             \
    float *y = (float *)y_;                                                                         \
    const VF vz = {0};                                                                              \
    int64_t i = 0;                                                                                  \
    (void)p0; (void)p1;                                                                             \
    for (; i + W <= n; i += W) {                                                                    \
      VF v;                                                                                         \
      VI m;                                                                                         \
      memcpy(&v, x + i, sizeof v);                                                                  \
      m = (VI)((v > vz) | (v != v));                                                                \
      m &= (VI)v;                                                                                   \
      memcpy(y + i, &m, sizeof m);                                                                  \
    }                                                                                               \
    for (; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : (x[i] != x[i] ? x[i] : 0.0f);                    \
  }                                                                                                 \
  DT__EW_VZIP(GNAME, ATTR, float, VF, (VF)((VI)(w > vz) & (VI)u), b[i * sb] > 0.0f ? a[i * sa] : 0.0f)

/* Every vector kernel for one variant: BYTES-wide vectors, function attributes ATTR. */
#define DT__EW_VARIANT(SUF, ATTR, BYTES)                                                            \
  typedef float dt__vf##SUF __attribute__((vector_size(BYTES)));                                    \
  typedef uint32_t dt__vi##SUF __attribute__((vector_size(BYTES)));                                 \
  typedef double dt__vd##SUF __attribute__((vector_size(BYTES)));                                   \
  typedef uint64_t dt__vl##SUF __attribute__((vector_size(BYTES)));                                 \
  typedef float dt__vh##SUF __attribute__((vector_size(BYTES / 2)));                                \
  DT__EW_VRELU(dt__relu_f32##SUF, dt__relu_grad_f32##SUF, ATTR, dt__vf##SUF, dt__vi##SUF)           \
  DT__EW_VARITH(dt__add_f32##SUF, ATTR, float, dt__vf##SUF, +)                                      \
  DT__EW_VARITH(dt__sub_f32##SUF, ATTR, float, dt__vf##SUF, -)                                      \
  DT__EW_VARITH(dt__mul_f32##SUF, ATTR, float, dt__vf##SUF, *)                                      \
  DT__EW_VARITH(dt__div_f32##SUF, ATTR, float, dt__vf##SUF, /)                                      \
  DT__EW_VARITH(dt__add_f64##SUF, ATTR, double, dt__vd##SUF, +)                                     \
  DT__EW_VARITH(dt__sub_f64##SUF, ATTR, double, dt__vd##SUF, -)                                     \
  DT__EW_VARITH(dt__mul_f64##SUF, ATTR, double, dt__vd##SUF, *)                                     \
  DT__EW_VARITH(dt__div_f64##SUF, ATTR, double, dt__vd##SUF, /)                                     \
  DT__EW_VEXPF(dt__vexpf##SUF, ATTR, dt__vf##SUF, dt__vi##SUF)                                      \
  DT__EW_VLOGF(dt__vlogf##SUF, ATTR, dt__vf##SUF, dt__vi##SUF)                                      \
  DT__EW_VMATH(dt__exp_f32##SUF, ATTR, dt__vf##SUF, dt__vi##SUF, dt__vexpf##SUF, -87.0f, 88.0f, expf) \
  DT__EW_VMATH(dt__log_f32##SUF, ATTR, dt__vf##SUF, dt__vi##SUF, dt__vlogf##SUF, FLT_MIN, FLT_MAX, logf) \
  DT__EW_VFILL(dt__fill_32##SUF, ATTR, uint32_t, dt__vi##SUF)                                       \
  DT__EW_VFILL(dt__fill_64##SUF, ATTR, uint64_t, dt__vl##SUF)                                       \
  DT__EW_VARIANT_CONV(SUF, ATTR)

#ifdef DT__EW_CONVERT
#define DT__EW_VARIANT_CONV(SUF, ATTR)                                                              \
  DT__EW_VSUM16(dt__sum16_f32##SUF, ATTR, float, dt__vh##SUF, dt__vd##SUF)                          \
  DT__EW_VSUM16(dt__sum16_f64##SUF, ATTR, double, dt__vd##SUF, dt__vd##SUF)                         \
  DT__EW_VCONV(dt__conv_f32_f64##SUF, ATTR, float, double, dt__vh##SUF, dt__vd##SUF)                \
  DT__EW_VCONV(dt__conv_f64_f32##SUF, ATTR, double, float, dt__vd##SUF, dt__vh##SUF)
#else /* no __builtin_convertvector: plain loops */
#define DT__EW_VARIANT_CONV(SUF, ATTR)                                                              \
  ATTR static void dt__sum16_f32##SUF(int64_t n, const void *x_, int sq, double acc[16]) {          \
    const float *x = (const float *)x_;                                                             \
    int64_t i;                                                                                      \
    int j;                                                                                          \
    for (j = 0; j < 16; j++) acc[j] = 0;                                                            \
    for (i = 0; i < n; i++) acc[i & 15] += sq ? (double)x[i] * x[i] : (double)x[i];                 \
  }                                                                                                 \
  ATTR static void dt__sum16_f64##SUF(int64_t n, const void *x_, int sq, double acc[16]) {          \
    const double *x = (const double *)x_;                                                           \
    int64_t i;                                                                                      \
    int j;                                                                                          \
    for (j = 0; j < 16; j++) acc[j] = 0;                                                            \
    for (i = 0; i < n; i++) acc[i & 15] += sq ? x[i] * x[i] : x[i];                                 \
  }                                                                                                 \
  DT__EW_CONV(dt__conv_f32_f64##SUF, float, double, (double)v)                                      \
  DT__EW_CONV(dt__conv_f64_f32##SUF, double, float, (float)v)
#endif

DT__EW_VARIANT(_base, , 16)
#if DT__EW_X86
DT__EW_VARIANT(_avx2, __attribute__((target("avx2"))), 32)
DT__EW_VARIANT(_avx512, __attribute__((target("avx512f"))), 64)
#endif

/* The vector kernels of each variant, [isa][f64]. */
typedef struct dt__ew_vtab {
  dt__zip_fn arith[2][4]; /* add, sub, mul, div */
  dt__map_fn exp_f32, log_f32;
  dt__fill_fn fill[2];    /* 32-bit, 64-bit */
  dt__sum16_fn sum16[2];
  dt__conv_fn f32_f64, f64_f32;
  dt__map_fn relu_f32;
  dt__zip_fn relu_grad_f32;
} dt__ew_vtab;

#define DT__EW_VTAB(SUF)                                                                            \
  {{{dt__add_f32##SUF, dt__sub_f32##SUF, dt__mul_f32##SUF, dt__div_f32##SUF},                       \
    {dt__add_f64##SUF, dt__sub_f64##SUF, dt__mul_f64##SUF, dt__div_f64##SUF}},                      \
   dt__exp_f32##SUF, dt__log_f32##SUF, {dt__fill_32##SUF, dt__fill_64##SUF},                        \
   {dt__sum16_f32##SUF, dt__sum16_f64##SUF}, dt__conv_f32_f64##SUF, dt__conv_f64_f32##SUF,          \
   dt__relu_f32##SUF, dt__relu_grad_f32##SUF}

static const dt__ew_vtab dt__ew_vtabs[DT__EW_NISA] = {
  DT__EW_VTAB(_base),
#if DT__EW_X86
  DT__EW_VTAB(_avx2), DT__EW_VTAB(_avx512)
#else
  DT__EW_VTAB(_base), DT__EW_VTAB(_base)
#endif
};

static const dt__ew_vtab *dt__ew_kernels(void) { return &dt__ew_vtabs[dt__ew_isa()]; }
