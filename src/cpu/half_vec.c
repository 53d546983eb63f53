/* float32 <-> bfloat16 casts in vectors (cpu/half.c takes them for these two casts): the same
   bits as dt__f32_to_bf16 and dt__bf16_to_f32, lane by lane. Autocast BF16 casts the weights,
   the inputs and every half elementwise operation's operands and results through them. */

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
#else
typedef uint16_t dt__vs_base __attribute__((vector_size(8)));
DT__HV_TO_BF16(dt__hv_to_bf16_base, DT__TARGET_BASE, dt__vi_base, dt__vs_base)
DT__HV_FROM_BF16(dt__hv_from_bf16_base, DT__TARGET_BASE, dt__vi_base, dt__vs_base)
#if DT__EW_X86
typedef uint16_t dt__vs_avx2 __attribute__((vector_size(16)));
typedef uint16_t dt__vs_avx512 __attribute__((vector_size(32)));
DT__HV_TO_BF16(dt__hv_to_bf16_avx2, DT__TARGET_AVX2, dt__vi_avx2, dt__vs_avx2)
DT__HV_FROM_BF16(dt__hv_from_bf16_avx2, DT__TARGET_AVX2, dt__vi_avx2, dt__vs_avx2)
DT__HV_TO_BF16(dt__hv_to_bf16_avx512, DT__TARGET_AVX512, dt__vi_avx512, dt__vs_avx512)
DT__HV_FROM_BF16(dt__hv_from_bf16_avx512, DT__TARGET_AVX512, dt__vi_avx512, dt__vs_avx512)
#endif
#endif

/* This CPU's float32 -> bfloat16 (to 1) or bfloat16 -> float32 (to 0) kernel. */
static dt__conv_fn dt__hv_bf16_kernel(int to) {
#ifdef DT__EW_CONVERT
  switch (dt__ew_isa()) {
#if DT__EW_X86
    case DT__EW_AVX512: return to ? dt__hv_to_bf16_avx512 : dt__hv_from_bf16_avx512;
    case DT__EW_AVX2: return to ? dt__hv_to_bf16_avx2 : dt__hv_from_bf16_avx2;
#endif
    default: return to ? dt__hv_to_bf16_base : dt__hv_from_bf16_base;
  }
#else
  return to ? dt__hv_to_bf16_loop : dt__hv_from_bf16_loop;
#endif
}
