/* Four rows x0..x0+3 of a source whose depths are contiguous (cs == 1) into a panel of width r:
   d[p * r + i] = s[i * rs + p]. F32 with vector shuffles (GCC >= 12, Clang) goes 4x4 blocks at a
   time: four 16-byte loads, eight shuffles, four 16-byte stores, several times faster than the
   scalar copy (which reads one element of each row in turn). */
#if DT__GEMM_VEC && (defined(__clang__) || __GNUC__ >= 12)
typedef float dt__gemm_t4 __attribute__((vector_size(16)));
static void dt__gemm_tr4_f32(const void *s_, int64_t rs, int64_t kc, int r, void *d_) {
  const float *s = (const float *)s_;
  float *d = (float *)d_;
  int64_t p;
  int i;
  for (p = 0; p + 4 <= kc; p += 4) {
    dt__gemm_t4 r0, r1, r2, r3, t0, t1, t2, t3, o0, o1, o2, o3;
    memcpy(&r0, s + p, sizeof r0);
    memcpy(&r1, s + rs + p, sizeof r1);
    memcpy(&r2, s + 2 * rs + p, sizeof r2);
    memcpy(&r3, s + 3 * rs + p, sizeof r3);
    t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5); /* a0 b0 a1 b1 */
    t1 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7); /* a2 b2 a3 b3 */
    t2 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5); /* c0 d0 c1 d1 */
    t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7); /* c2 d2 c3 d3 */
    o0 = __builtin_shufflevector(t0, t2, 0, 1, 4, 5); /* a0 b0 c0 d0 */
    o1 = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    o2 = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    o3 = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
    memcpy(d + p * r, &o0, sizeof o0);
    memcpy(d + (p + 1) * r, &o1, sizeof o1);
    memcpy(d + (p + 2) * r, &o2, sizeof o2);
    memcpy(d + (p + 3) * r, &o3, sizeof o3);
  }
  for (; p < kc; p++)
    for (i = 0; i < 4; i++) d[p * r + i] = s[i * rs + p];
}
#endif
/* The plain copy, for F64 and where there are no vector shuffles. */
#define DT__GEMM_DEFINE_TR4(NAME, T)                                                                \
  static void NAME(const void *s_, int64_t rs, int64_t kc, int r, void *d_) {                       \
    const T *s = (const T *)s_;                                                                     \
    T *d = (T *)d_;                                                                                 \
    int64_t p;                                                                                      \
    int i;                                                                                          \
    for (i = 0; i < 4; i++)                                                                         \
      for (p = 0; p < kc; p++) d[p * r + i] = s[i * rs + p];                                        \
  }
#if !(DT__GEMM_VEC && (defined(__clang__) || __GNUC__ >= 12))
DT__GEMM_DEFINE_TR4(dt__gemm_tr4_f32, float)
#endif
DT__GEMM_DEFINE_TR4(dt__gemm_tr4_f64, double)

/* Defines NAME, a dt__gemm_pack_fn for element T; TR4 packs four rows of a source with cs == 1. */
#define DT__GEMM_DEFINE_PACK(NAME, T, TR4)                                                          \
  static void NAME(int64_t rows, int64_t kc, const void *src_, int64_t rs, int64_t cs, int r,       \
                   void *dst_) {                                                                    \
    const T *src = (const T *)src_;                                                                 \
    T *dst = (T *)dst_;                                                                             \
    int64_t x0, p;                                                                                  \
    int i;                                                                                          \
    for (x0 = 0; x0 < rows; x0 += r, dst += kc * r) {                                               \
      int w = rows - x0 < r ? (int)(rows - x0) : r;                                                 \
      const T *s = src + x0 * rs;                                                                   \
      if (rs == 1) { /* x contiguous: copy rows of the panel */                                     \
        for (p = 0; p < kc; p++) {                                                                  \
          const T *sp = s + p * cs;                                                                 \
          T *d = dst + p * r;                                                                       \
          for (i = 0; i + 4 <= w; i += 4) memcpy(d + i, sp + i, 4 * sizeof(T)); /* inlined moves */ \
          for (; i < w; i++) d[i] = sp[i];                                                          \
          for (; i < r; i++) d[i] = 0;                                                              \
        }                                                                                           \
      } else {                                                                                      \
        int64_t p0, p1;                                                                             \
        int x1 = 0; /* the x packed by TR4 */                                                       \
        if (cs == 1) /* p contiguous: four x at a time, each read in one sequential run */          \
          for (; x1 + 4 <= w; x1 += 4) TR4(s + x1 * rs, rs, kc, r, dst + x1);                       \
        for (p0 = 0; p0 < kc; p0 = p1) { /* the other x: each one, 64 depths at a time */           \
          p1 = p0 + 64 < kc ? p0 + 64 : kc;                                                         \
          for (i = x1; i < w; i++) {                                                                \
            const T *sx = s + i * rs;                                                               \
            T *d = dst + i;                                                                         \
            for (p = p0; p < p1; p++) d[p * r] = sx[p * cs];                                        \
          }                                                                                         \
        }                                                                                           \
        for (i = w; i < r; i++)                                                                     \
          for (p = 0; p < kc; p++) dst[p * r + i] = 0;                                              \
      }                                                                                             \
    }                                                                                               \
  }

DT__GEMM_DEFINE_PACK(dt__gemm_pack_f32, float, dt__gemm_tr4_f32)
DT__GEMM_DEFINE_PACK(dt__gemm_pack_f64, double, dt__gemm_tr4_f64)
