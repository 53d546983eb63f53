/* float32 <-> bfloat16 and float32 <-> float16 casts in vectors (cpu/half.c takes them for every
   cast to or from a half dtype): the same bits as dt__f32_to_bf16, dt__bf16_to_f32,
   dt__f32_to_f16 and dt__f16_to_f32, lane by lane, in integer arithmetic (so the floating-point
   environment, flush-to-zero included, changes nothing). Autocast casts the weights, the inputs
   and every half elementwise operation's operands and results through them. */

/* y (n, bfloat16) = x (n, float32), rounded to nearest even; a NaN gives 0x7FC0.
   VI: uint32_t lanes, VS: as many uint16_t lanes. */
#define DT__HV_TO_BF16(NAME, ATTR, VI, VS)                                                          \
  ATTR static void NAME(int64_t n, const void *x_, void *y_) {                                      \
    enum { W = sizeof(VI) / sizeof(uint32_t) };                                                     \
    const char *x = (const char *)x_;                                                               \
    uint16_t *y = (uint16_t *)y_;                                                                   \
    const VI vz = {0}, inf = vz + 0x7F800000u, abs = vz + 0x7FFFFFFFu, qnan = vz + 0x7FC0u;        \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      VI u, r, nan;                                                                                 \
      VS h;                                                                                         \
      memcpy(&u, x + i * 4, sizeof u);                                                              \
      nan = (VI)((u & abs) > inf);                                                                  \
      r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;                                                   \
      r = (r & ~nan) | (qnan & nan);                                                                \
      h = DT__EW_CONVERT(r, VS);                                                                    \
      memcpy(y + i, &h, sizeof h);                                                                  \
    }                                                                                               \
    for (; i < n; i++) {                                                                            \
      float f;                                                                                      \
      memcpy(&f, x + i * 4, sizeof f);                                                              \
      y[i] = dt__f32_to_bf16(f);                                                                    \
    }                                                                                               \
  }

/* y (n, float32) = x (n, bfloat16): its bits in the high half. */
#define DT__HV_FROM_BF16(NAME, ATTR, VI, VS)                                                        \
  ATTR static void NAME(int64_t n, const void *x_, void *y_) {                                      \
    enum { W = sizeof(VI) / sizeof(uint32_t) };                                                     \
    const uint16_t *x = (const uint16_t *)x_;                                                       \
    char *y = (char *)y_;                                                                           \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      VS h;                                                                                         \
      VI u;                                                                                         \
      memcpy(&h, x + i, sizeof h);                                                                  \
      u = DT__EW_CONVERT(h, VI) << 16;                                                              \
      memcpy(y + i * 4, &u, sizeof u);                                                              \
    }                                                                                               \
    for (; i < n; i++) {                                                                            \
      float f = dt__bf16_to_f32(x[i]);                                                              \
      memcpy(y + i * 4, &f, sizeof f);                                                              \
    }                                                                                               \
  }

/* y (n, float16) = x (n, float32), rounded to nearest even, as dt__f32_to_f16: a NaN gives
   sign | 0x7E00, 65520 and up inf; below 2^-14 the result is x / 2^-24 rounded, shifted by 14 to
   31 places (a shift of 25 or more leaves at most a tie, which rounds to 0). */
#define DT__HV_TO_F16(NAME, ATTR, VI, VS)                                                           \
  ATTR static void NAME(int64_t n, const void *x_, void *y_) {                                      \
    enum { W = sizeof(VI) / sizeof(uint32_t) };                                                     \
    const char *x = (const char *)x_;                                                               \
    uint16_t *y = (uint16_t *)y_;                                                                   \
    const VI vz = {0}, one = vz + 1u;                                                               \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      VI u, ax, sign, rn, rem, sh, lo, hi, m, rs, half, normal, big, nan, r;                        \
      VS h;                                                                                         \
      memcpy(&u, x + i * 4, sizeof u);                                                              \
      ax = u & 0x7FFFFFFFu;                                                                         \
      sign = (u >> 16) & 0x8000u;                                                                   \
      rn = (ax >> 13) - (112u << 10);                                                               \
      rem = ax & 0x1FFFu;                                                                           \
      rn -= (VI)((rem > 0x1000u) | ((rem == 0x1000u) & ((rn & 1u) == 1u)));                         \
      sh = 126u - (ax >> 23); /* the lanes that use it have 14 <= sh; clamped into 14..31 */      \
      lo = (VI)(sh < 14u);                                                                          \
      hi = (VI)(sh > 31u);                                                                          \
      sh = (sh & ~(lo | hi)) | ((vz + 14u) & lo) | ((vz + 31u) & hi);                               \
      m = (ax & 0x7FFFFFu) | 0x800000u;                                                             \
      rs = m >> sh;                                                                                 \
      rem = m & ((one << sh) - 1u);                                                                 \
      half = one << (sh - 1u);                                                                      \
      rs -= (VI)((rem > half) | ((rem == half) & ((rs & 1u) == 1u)));                               \
      normal = (VI)(ax >= 0x38800000u);                                                             \
      big = (VI)(ax >= 0x477FF000u);                                                                \
      nan = (VI)(ax > 0x7F800000u);                                                                 \
      r = (rn & normal) | (rs & ~normal);                                                           \
      r = ((vz + 0x7C00u) & big) | (r & ~big);                                                      \
      r = ((vz + 0x7E00u) & nan) | (r & ~nan);                                                      \
      h = DT__EW_CONVERT(r | sign, VS);                                                             \
      memcpy(y + i, &h, sizeof h);                                                                  \
    }                                                                                               \
    for (; i < n; i++) {                                                                            \
      float f;                                                                                      \
      memcpy(&f, x + i * 4, sizeof f);                                                              \
      y[i] = dt__f32_to_f16(f);                                                                     \
    }                                                                                               \
  }

/* y (n, float32) = x (n, float16), as dt__f16_to_f32: a subnormal is m 2^-24, converted from the
   integer m (< 1024, exact) and scaled by a power of two (exact) in integer arithmetic. */
#define DT__HV_FROM_F16(NAME, ATTR, VI, VS, VF)                                                     \
  ATTR static void NAME(int64_t n, const void *x_, void *y_) {                                      \
    enum { W = sizeof(VI) / sizeof(uint32_t) };                                                     \
    typedef int32_t VJ __attribute__((vector_size(sizeof(VI))));                                    \
    const uint16_t *x = (const uint16_t *)x_;                                                       \
    char *y = (char *)y_;                                                                           \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      VS h;                                                                                         \
      VI u, sign, e, m, normal, special, sub, r, is_special, is_sub;                                \
      VF fm;                                                                                        \
      memcpy(&h, x + i, sizeof h);                                                                  \
      u = DT__EW_CONVERT(h, VI);                                                                    \
      sign = (u & 0x8000u) << 16;                                                                   \
      e = (u >> 10) & 0x1Fu;                                                                        \
      m = u & 0x3FFu;                                                                               \
      normal = ((e + 112u) << 23) | (m << 13);                                                      \
      special = 0x7F800000u | (m << 13) | (0x400000u & (VI)(m != 0u));                             \
      fm = DT__EW_CONVERT((VJ)m, VF);                                                               \
      memcpy(&sub, &fm, sizeof sub);                                                                \
      sub = (sub - (24u << 23)) & (VI)(m != 0u); /* m 2^-24: m >= 1 is a normal float */           \
      is_special = (VI)(e == 0x1Fu);                                                                \
      is_sub = (VI)(e == 0u);                                                                       \
      r = (special & is_special) | (normal & ~is_special);                                          \
      r = (sub & is_sub) | (r & ~is_sub);                                                           \
      r |= sign;                                                                                    \
      memcpy(y + i * 4, &r, sizeof r);                                                              \
    }                                                                                               \
    for (; i < n; i++) {                                                                            \
      float f = dt__f16_to_f32(x[i]);                                                               \
      memcpy(y + i * 4, &f, sizeof f);                                                              \
    }                                                                                               \
  }

#ifndef DT__EW_CONVERT
/* the plain loops, where the compiler has no __builtin_convertvector */
static void dt__hv_to_bf16_loop(int64_t n, const void *x_, void *y_) {
  const float *x = (const float *)x_;
  uint16_t *y = (uint16_t *)y_;
  int64_t i;
  for (i = 0; i < n; i++) y[i] = dt__f32_to_bf16(x[i]);
}
static void dt__hv_from_bf16_loop(int64_t n, const void *x_, void *y_) {
  const uint16_t *x = (const uint16_t *)x_;
  float *y = (float *)y_;
  int64_t i;
  for (i = 0; i < n; i++) y[i] = dt__bf16_to_f32(x[i]);
}
static void dt__hv_to_f16_loop(int64_t n, const void *x_, void *y_) {
  const float *x = (const float *)x_;
  uint16_t *y = (uint16_t *)y_;
  int64_t i;
  for (i = 0; i < n; i++) y[i] = dt__f32_to_f16(x[i]);
}
static void dt__hv_from_f16_loop(int64_t n, const void *x_, void *y_) {
  const uint16_t *x = (const uint16_t *)x_;
  float *y = (float *)y_;
  int64_t i;
  for (i = 0; i < n; i++) y[i] = dt__f16_to_f32(x[i]);
}
#else
typedef uint16_t dt__vs_base __attribute__((vector_size(8)));
DT__HV_TO_BF16(dt__hv_to_bf16_base, DT__TARGET_BASE, dt__vi_base, dt__vs_base)
DT__HV_FROM_BF16(dt__hv_from_bf16_base, DT__TARGET_BASE, dt__vi_base, dt__vs_base)
DT__HV_TO_F16(dt__hv_to_f16_base, DT__TARGET_BASE, dt__vi_base, dt__vs_base)
DT__HV_FROM_F16(dt__hv_from_f16_base, DT__TARGET_BASE, dt__vi_base, dt__vs_base, dt__vf_base)
#if DT__EW_X86
typedef uint16_t dt__vs_avx2 __attribute__((vector_size(16)));
typedef uint16_t dt__vs_avx512 __attribute__((vector_size(32)));
DT__HV_TO_BF16(dt__hv_to_bf16_avx2, DT__TARGET_AVX2, dt__vi_avx2, dt__vs_avx2)
DT__HV_FROM_BF16(dt__hv_from_bf16_avx2, DT__TARGET_AVX2, dt__vi_avx2, dt__vs_avx2)
DT__HV_TO_BF16(dt__hv_to_bf16_avx512, DT__TARGET_AVX512, dt__vi_avx512, dt__vs_avx512)
DT__HV_FROM_BF16(dt__hv_from_bf16_avx512, DT__TARGET_AVX512, dt__vi_avx512, dt__vs_avx512)
DT__HV_TO_F16(dt__hv_to_f16_avx2, DT__TARGET_AVX2, dt__vi_avx2, dt__vs_avx2)
DT__HV_FROM_F16(dt__hv_from_f16_avx2, DT__TARGET_AVX2, dt__vi_avx2, dt__vs_avx2, dt__vf_avx2)
DT__HV_TO_F16(dt__hv_to_f16_avx512, DT__TARGET_AVX512, dt__vi_avx512, dt__vs_avx512)
DT__HV_FROM_F16(dt__hv_from_f16_avx512, DT__TARGET_AVX512, dt__vi_avx512, dt__vs_avx512, dt__vf_avx512)
#endif
#endif

/* The kernel of variant isa (DT__EW_*; one this CPU runs) from float32 to a half dtype (to 1) or
   back (to 0); bf: bfloat16, else float16. */
static dt__conv_fn dt__hv_kernel_at(int isa, int bf, int to) {
#ifdef DT__EW_CONVERT
  switch (isa) {
#if DT__EW_X86
    case DT__EW_AVX512:
      return bf ? (to ? dt__hv_to_bf16_avx512 : dt__hv_from_bf16_avx512) : (to ? dt__hv_to_f16_avx512 : dt__hv_from_f16_avx512);
    case DT__EW_AVX2:
      return bf ? (to ? dt__hv_to_bf16_avx2 : dt__hv_from_bf16_avx2) : (to ? dt__hv_to_f16_avx2 : dt__hv_from_f16_avx2);
#endif
    default: return bf ? (to ? dt__hv_to_bf16_base : dt__hv_from_bf16_base) : (to ? dt__hv_to_f16_base : dt__hv_from_f16_base);
  }
#else
  (void)isa;
  return bf ? (to ? dt__hv_to_bf16_loop : dt__hv_from_bf16_loop) : (to ? dt__hv_to_f16_loop : dt__hv_from_f16_loop);
#endif
}
/* this CPU's widest */
static dt__conv_fn dt__hv_kernel(int bf, int to) { return dt__hv_kernel_at(dt__ew_isa(), bf, to); }
