/* The vector kernels but exp and log (cpu/vmath.c): add, sub, mul, div (F32, F64), relu and
   its gradient (F32), fill, sums (cpu/reduce.c) and F32 <-> F64 casts, each written once by a
   macro and instantiated per variant under its full name, and the table of each variant's
   kernels. Vectors move to and from memory through memcpy (one unaligned load or store). */

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

/* 16 partial sums in double; VH: half as many lanes of T as VD has doubles' bytes / 8. A sum of
   squares fuses no multiply with its add (the same bits in every variant, as vmath.c's kernels). */
#define DT__EW_VSUM16(NAME, ATTR, T, VH, VD)                                                        \
  ATTR DT__EW_NOFMA static void NAME(int64_t n, const void *x_, int sq, double acc[16]) {           \
    DT__NO_CONTRACT                                                                                 \
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

/* relu on F32 without a branch (its gradient, y = a where b > 0, else 0, is a DT__EW_VZIP): with
   the signs of a layer's pre-activations random, a scalar loop mispredicts half its branches.
   A NaN stays a NaN. */
#define DT__EW_VRELU(NAME, ATTR, VF, VI)                                                            \
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
  }

#ifndef DT__EW_CONVERT /* no __builtin_convertvector: sums and casts are plain loops */
#define DT__EW_SUM16_LOOP(NAME, ATTR, T)                                                            \
  ATTR static void NAME(int64_t n, const void *x_, int sq, double acc[16]) {                        \
    const T *x = (const T *)x_;                                                                     \
    int64_t i;                                                                                      \
    int j;                                                                                          \
    for (j = 0; j < 16; j++) acc[j] = 0;                                                            \
    for (i = 0; i < n; i++) acc[i & 15] += sq ? (double)x[i] * x[i] : (double)x[i];                 \
  }
#endif

/* baseline: 16-byte vectors */
DT__EW_VRELU(dt__relu_f32_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base)
DT__EW_VZIP(dt__relu_grad_f32_base, DT__TARGET_BASE, float, dt__vf_base, (dt__vf_base)((dt__vi_base)(w > vz) & (dt__vi_base)u),
            b[i * sb] > 0.0f ? a[i * sa] : 0.0f)
DT__EW_VZIP(dt__sigmoid_grad_f32_base, DT__TARGET_BASE, float, dt__vf_base, u * (1.0f - w) * w, a[i * sa] * (1.0f - b[i * sb]) * b[i * sb])
DT__EW_VZIP(dt__tanh_grad_f32_base, DT__TARGET_BASE, float, dt__vf_base, u * (1.0f - w * w), a[i * sa] * (1.0f - b[i * sb] * b[i * sb]))
DT__EW_VZIP(dt__add_f32_base, DT__TARGET_BASE, float, dt__vf_base, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f32_base, DT__TARGET_BASE, float, dt__vf_base, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f32_base, DT__TARGET_BASE, float, dt__vf_base, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f32_base, DT__TARGET_BASE, float, dt__vf_base, u / w, a[i * sa] / b[i * sb])
DT__EW_VZIP(dt__add_f64_base, DT__TARGET_BASE, double, dt__vd_base, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f64_base, DT__TARGET_BASE, double, dt__vd_base, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f64_base, DT__TARGET_BASE, double, dt__vd_base, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f64_base, DT__TARGET_BASE, double, dt__vd_base, u / w, a[i * sa] / b[i * sb])
DT__EW_VFILL(dt__fill_32_base, DT__TARGET_BASE, uint32_t, dt__vi_base)
DT__EW_VFILL(dt__fill_64_base, DT__TARGET_BASE, uint64_t, dt__vl_base)
#ifdef DT__EW_CONVERT
DT__EW_VSUM16(dt__sum16_f32_base, DT__TARGET_BASE, float, dt__vh_base, dt__vd_base)
DT__EW_VSUM16(dt__sum16_f64_base, DT__TARGET_BASE, double, dt__vd_base, dt__vd_base)
DT__EW_VCONV(dt__conv_f32_f64_base, DT__TARGET_BASE, float, double, dt__vh_base, dt__vd_base)
DT__EW_VCONV(dt__conv_f64_f32_base, DT__TARGET_BASE, double, float, dt__vd_base, dt__vh_base)
#else
DT__EW_SUM16_LOOP(dt__sum16_f32_base, DT__TARGET_BASE, float)
DT__EW_SUM16_LOOP(dt__sum16_f64_base, DT__TARGET_BASE, double)
DT__EW_CONV(dt__conv_f32_f64_base, float, double, (double)v)
DT__EW_CONV(dt__conv_f64_f32_base, double, float, (float)v)
#endif
#if DT__EW_X86
/* AVX2: 32-byte vectors (no FMA) */
DT__EW_VRELU(dt__relu_f32_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2)
DT__EW_VZIP(dt__relu_grad_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, (dt__vf_avx2)((dt__vi_avx2)(w > vz) & (dt__vi_avx2)u),
            b[i * sb] > 0.0f ? a[i * sa] : 0.0f)
DT__EW_VZIP(dt__sigmoid_grad_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u * (1.0f - w) * w, a[i * sa] * (1.0f - b[i * sb]) * b[i * sb])
DT__EW_VZIP(dt__tanh_grad_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u * (1.0f - w * w), a[i * sa] * (1.0f - b[i * sb] * b[i * sb]))
DT__EW_VZIP(dt__add_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u / w, a[i * sa] / b[i * sb])
DT__EW_VZIP(dt__add_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, u / w, a[i * sa] / b[i * sb])
DT__EW_VFILL(dt__fill_32_avx2, DT__TARGET_AVX2, uint32_t, dt__vi_avx2)
DT__EW_VFILL(dt__fill_64_avx2, DT__TARGET_AVX2, uint64_t, dt__vl_avx2)
#ifdef DT__EW_CONVERT
DT__EW_VSUM16(dt__sum16_f32_avx2, DT__TARGET_AVX2, float, dt__vh_avx2, dt__vd_avx2)
DT__EW_VSUM16(dt__sum16_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, dt__vd_avx2)
DT__EW_VCONV(dt__conv_f32_f64_avx2, DT__TARGET_AVX2, float, double, dt__vh_avx2, dt__vd_avx2)
DT__EW_VCONV(dt__conv_f64_f32_avx2, DT__TARGET_AVX2, double, float, dt__vd_avx2, dt__vh_avx2)
#else
DT__EW_SUM16_LOOP(dt__sum16_f32_avx2, DT__TARGET_AVX2, float)
DT__EW_SUM16_LOOP(dt__sum16_f64_avx2, DT__TARGET_AVX2, double)
DT__EW_CONV(dt__conv_f32_f64_avx2, float, double, (double)v)
DT__EW_CONV(dt__conv_f64_f32_avx2, double, float, (float)v)
#endif
/* AVX-512: 64-byte vectors */
DT__EW_VRELU(dt__relu_f32_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512)
DT__EW_VZIP(dt__relu_grad_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, (dt__vf_avx512)((dt__vi_avx512)(w > vz) & (dt__vi_avx512)u),
            b[i * sb] > 0.0f ? a[i * sa] : 0.0f)
DT__EW_VZIP(dt__sigmoid_grad_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u * (1.0f - w) * w, a[i * sa] * (1.0f - b[i * sb]) * b[i * sb])
DT__EW_VZIP(dt__tanh_grad_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u * (1.0f - w * w), a[i * sa] * (1.0f - b[i * sb] * b[i * sb]))
DT__EW_VZIP(dt__add_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u / w, a[i * sa] / b[i * sb])
DT__EW_VZIP(dt__add_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, u / w, a[i * sa] / b[i * sb])
DT__EW_VFILL(dt__fill_32_avx512, DT__TARGET_AVX512, uint32_t, dt__vi_avx512)
DT__EW_VFILL(dt__fill_64_avx512, DT__TARGET_AVX512, uint64_t, dt__vl_avx512)
#ifdef DT__EW_CONVERT
DT__EW_VSUM16(dt__sum16_f32_avx512, DT__TARGET_AVX512, float, dt__vh_avx512, dt__vd_avx512)
DT__EW_VSUM16(dt__sum16_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, dt__vd_avx512)
DT__EW_VCONV(dt__conv_f32_f64_avx512, DT__TARGET_AVX512, float, double, dt__vh_avx512, dt__vd_avx512)
DT__EW_VCONV(dt__conv_f64_f32_avx512, DT__TARGET_AVX512, double, float, dt__vd_avx512, dt__vh_avx512)
#else
DT__EW_SUM16_LOOP(dt__sum16_f32_avx512, DT__TARGET_AVX512, float)
DT__EW_SUM16_LOOP(dt__sum16_f64_avx512, DT__TARGET_AVX512, double)
DT__EW_CONV(dt__conv_f32_f64_avx512, float, double, (double)v)
DT__EW_CONV(dt__conv_f64_f32_avx512, double, float, (float)v)
#endif
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
  dt__map_fn sigmoid_f32;
  dt__zip_fn sigmoid_grad_f32, tanh_grad_f32;
} dt__ew_vtab;

static const dt__ew_vtab dt__ew_vtabs[DT__EW_NISA] = {
  {{{dt__add_f32_base, dt__sub_f32_base, dt__mul_f32_base, dt__div_f32_base},
    {dt__add_f64_base, dt__sub_f64_base, dt__mul_f64_base, dt__div_f64_base}},
   dt__exp_f32_base, dt__log_f32_base, {dt__fill_32_base, dt__fill_64_base},
   {dt__sum16_f32_base, dt__sum16_f64_base}, dt__conv_f32_f64_base, dt__conv_f64_f32_base,
   dt__relu_f32_base, dt__relu_grad_f32_base,
   dt__sigmoid_f32_base, dt__sigmoid_grad_f32_base, dt__tanh_grad_f32_base},
#if DT__EW_X86
  {{{dt__add_f32_avx2, dt__sub_f32_avx2, dt__mul_f32_avx2, dt__div_f32_avx2},
    {dt__add_f64_avx2, dt__sub_f64_avx2, dt__mul_f64_avx2, dt__div_f64_avx2}},
   dt__exp_f32_avx2, dt__log_f32_avx2, {dt__fill_32_avx2, dt__fill_64_avx2},
   {dt__sum16_f32_avx2, dt__sum16_f64_avx2}, dt__conv_f32_f64_avx2, dt__conv_f64_f32_avx2,
   dt__relu_f32_avx2, dt__relu_grad_f32_avx2,
   dt__sigmoid_f32_avx2, dt__sigmoid_grad_f32_avx2, dt__tanh_grad_f32_avx2},
  {{{dt__add_f32_avx512, dt__sub_f32_avx512, dt__mul_f32_avx512, dt__div_f32_avx512},
    {dt__add_f64_avx512, dt__sub_f64_avx512, dt__mul_f64_avx512, dt__div_f64_avx512}},
   dt__exp_f32_avx512, dt__log_f32_avx512, {dt__fill_32_avx512, dt__fill_64_avx512},
   {dt__sum16_f32_avx512, dt__sum16_f64_avx512}, dt__conv_f32_f64_avx512, dt__conv_f64_f32_avx512,
   dt__relu_f32_avx512, dt__relu_grad_f32_avx512,
   dt__sigmoid_f32_avx512, dt__sigmoid_grad_f32_avx512, dt__tanh_grad_f32_avx512}
#else
  {{{dt__add_f32_base, dt__sub_f32_base, dt__mul_f32_base, dt__div_f32_base},
    {dt__add_f64_base, dt__sub_f64_base, dt__mul_f64_base, dt__div_f64_base}},
   dt__exp_f32_base, dt__log_f32_base, {dt__fill_32_base, dt__fill_64_base},
   {dt__sum16_f32_base, dt__sum16_f64_base}, dt__conv_f32_f64_base, dt__conv_f64_f32_base,
   dt__relu_f32_base, dt__relu_grad_f32_base,
   dt__sigmoid_f32_base, dt__sigmoid_grad_f32_base, dt__tanh_grad_f32_base},
  {{{dt__add_f32_base, dt__sub_f32_base, dt__mul_f32_base, dt__div_f32_base},
    {dt__add_f64_base, dt__sub_f64_base, dt__mul_f64_base, dt__div_f64_base}},
   dt__exp_f32_base, dt__log_f32_base, {dt__fill_32_base, dt__fill_64_base},
   {dt__sum16_f32_base, dt__sum16_f64_base}, dt__conv_f32_f64_base, dt__conv_f64_f32_base,
   dt__relu_f32_base, dt__relu_grad_f32_base,
   dt__sigmoid_f32_base, dt__sigmoid_grad_f32_base, dt__tanh_grad_f32_base}
#endif
};

static const dt__ew_vtab *dt__ew_kernels(void) { return &dt__ew_vtabs[dt__ew_isa()]; }
