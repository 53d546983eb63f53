/* F32 exp, log and sigmoid on vectors (see cpu/elementwise.c): the polynomials as functions of one
   vector, and the kernels that run them over an array, falling back on libm lane by lane;
   each written once by a macro and instantiated per variant under its full name. */

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

/* sigmoid through e = exp(-|v|) in (0, 1]: no overflow for any v */
static float dt__sigmoidf(float v) {
  float e = expf(-fabsf(v));
  return v >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
/* the same on a vector of floats with |x| <= 87, through the vector exp */
#define DT__EW_VSIGMOIDF(NAME, ATTR, VF, VI, VEXPF)                                                 \
  ATTR DT__EW_NOFMA static VF NAME(VF x) {                                                          \
    DT__NO_CONTRACT                                                                                 \
    const VF vz = {0};                                                                              \
    VI b, neg;                                                                                      \
    VF e, d, hi, lo;                                                                                \
    memcpy(&b, &x, sizeof b);                                                                       \
    b = b | 0x80000000u; /* -|x| */                                                                 \
    memcpy(&e, &b, sizeof e);                                                                       \
    e = VEXPF(e);                                                                                   \
    d = e + 1.0f;                                                                                   \
    hi = (vz + 1.0f) / d;                                                                           \
    lo = e / d;                                                                                     \
    neg = (VI)(x < vz);                                                                             \
    b = ((VI)hi & ~neg) | ((VI)lo & neg);                                                           \
    memcpy(&e, &b, sizeof e);                                                                       \
    return e;                                                                                       \
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


DT__EW_VEXPF(dt__vexpf_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base)
DT__EW_VLOGF(dt__vlogf_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base)
DT__EW_VMATH(dt__exp_f32_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base, dt__vexpf_base, -87.0f, 88.0f, expf)
DT__EW_VMATH(dt__log_f32_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base, dt__vlogf_base, FLT_MIN, FLT_MAX, logf)
DT__EW_VSIGMOIDF(dt__vsigmoidf_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base, dt__vexpf_base)
DT__EW_VMATH(dt__sigmoid_f32_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base, dt__vsigmoidf_base, -87.0f, 87.0f, dt__sigmoidf)
#if DT__EW_X86
DT__EW_VEXPF(dt__vexpf_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2)
DT__EW_VLOGF(dt__vlogf_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2)
DT__EW_VMATH(dt__exp_f32_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2, dt__vexpf_avx2, -87.0f, 88.0f, expf)
DT__EW_VMATH(dt__log_f32_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2, dt__vlogf_avx2, FLT_MIN, FLT_MAX, logf)
DT__EW_VSIGMOIDF(dt__vsigmoidf_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2, dt__vexpf_avx2)
DT__EW_VMATH(dt__sigmoid_f32_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2, dt__vsigmoidf_avx2, -87.0f, 87.0f, dt__sigmoidf)
DT__EW_VEXPF(dt__vexpf_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512)
DT__EW_VLOGF(dt__vlogf_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512)
DT__EW_VMATH(dt__exp_f32_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512, dt__vexpf_avx512, -87.0f, 88.0f, expf)
DT__EW_VMATH(dt__log_f32_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512, dt__vlogf_avx512, FLT_MIN, FLT_MAX, logf)
DT__EW_VSIGMOIDF(dt__vsigmoidf_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512, dt__vexpf_avx512)
DT__EW_VMATH(dt__sigmoid_f32_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512, dt__vsigmoidf_avx512, -87.0f, 87.0f, dt__sigmoidf)
#endif
