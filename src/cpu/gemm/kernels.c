#if DT__GEMM_VEC
/* Vector types. Memory goes in and out of them through memcpy (one load or store). */
typedef float dt__gemm_f32x4 __attribute__((vector_size(16)));
typedef float dt__gemm_f32x8 __attribute__((vector_size(32)));
typedef float dt__gemm_f32x16 __attribute__((vector_size(64)));
typedef double dt__gemm_f64x2 __attribute__((vector_size(16)));
typedef double dt__gemm_f64x4 __attribute__((vector_size(32)));
typedef double dt__gemm_f64x8 __attribute__((vector_size(64)));

/* Row lists for the X-macros below: the micro-tile has that many rows. */
#define DT__GEMM_ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define DT__GEMM_ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define DT__GEMM_ROWS12(X) DT__GEMM_ROWS8(X) X(8) X(9) X(10) X(11)
#define DT__GEMM_ROWS4(X) X(0) X(1) X(2) X(3)

/* Each row i of the tile is two vectors, c<i>a and c<i>b (nr = 2 * lanes). */
#define DT__GEMM_DECL(i) dt__gemm_v c##i##a = vz, c##i##b = vz;
#define DT__GEMM_FMA(i)                                                                             \
  {                                                                                                 \
    const dt__gemm_v ai = pa[i] - vz;                                                               \
    c##i##a += ai * b0;                                                                             \
    c##i##b += ai * b1;                                                                             \
  }
#define DT__GEMM_FMAD(i) /* A in place: row i at pa + i * lda */                                    \
  {                                                                                                 \
    const dt__gemm_v ai = pa[(i) * lda] - vz;                                                       \
    c##i##a += ai * b0;                                                                             \
    c##i##b += ai * b1;                                                                             \
  }
#define DT__GEMM_STORE0(i)                                                                          \
  {                                                                                                 \
    dt__gemm_v r0 = va * c##i##a, r1 = va * c##i##b;                                                \
    memcpy(c + i * ldc, &r0, sizeof r0);                                                            \
    memcpy(c + i * ldc + DT__GEMM_W, &r1, sizeof r1);                                               \
  }
#define DT__GEMM_STOREB(i)                                                                          \
  {                                                                                                 \
    dt__gemm_v o0, o1;                                                                              \
    memcpy(&o0, cs + i * lds, sizeof o0);                                                           \
    memcpy(&o1, cs + i * lds + DT__GEMM_W, sizeof o1);                                              \
    o0 = va * c##i##a + vb * o0;                                                                    \
    o1 = va * c##i##b + vb * o1;                                                                    \
    memcpy(c + i * ldc, &o0, sizeof o0);                                                            \
    memcpy(c + i * ldc + DT__GEMM_W, &o1, sizeof o1);                                               \
  }
#define DT__GEMM_SPILL(i)                                                                           \
  memcpy(tile + i * 2 * DT__GEMM_W, &c##i##a, sizeof c##i##a);                                      \
  memcpy(tile + i * 2 * DT__GEMM_W + DT__GEMM_W, &c##i##b, sizeof c##i##b);

/* The same for a tile one vector wide (DT__GEMM_DEFINE_KERNEL_A with SUF H): row i is c<i>a alone. */
#define DT__GEMM_DECLH(i) dt__gemm_v c##i##a = vz;
#define DT__GEMM_FMAH(i)                                                                            \
  {                                                                                                 \
    const dt__gemm_v ai = pa[i] - vz;                                                               \
    c##i##a += ai * b0;                                                                             \
  }
#define DT__GEMM_FMAHD(i) /* A in place */                                                          \
  {                                                                                                 \
    const dt__gemm_v ai = pa[(i) * lda] - vz;                                                       \
    c##i##a += ai * b0;                                                                             \
  }
#define DT__GEMM_STORE0H(i)                                                                         \
  {                                                                                                 \
    dt__gemm_v r0 = va * c##i##a;                                                                   \
    memcpy(c + i * ldc, &r0, sizeof r0);                                                            \
  }
#define DT__GEMM_STOREBH(i)                                                                         \
  {                                                                                                 \
    dt__gemm_v o0;                                                                                  \
    memcpy(&o0, cs + i * lds, sizeof o0);                                                           \
    o0 = va * c##i##a + vb * o0;                                                                    \
    memcpy(c + i * ldc, &o0, sizeof o0);                                                            \
  }
#define DT__GEMM_SPILLH(i) memcpy(tile + i * DT__GEMM_W, &c##i##a, sizeof c##i##a);
/* The vectors per row of the tile, and B's row of them loaded for one depth. */
#define DT__GEMM_VPR 2
#define DT__GEMM_VPRH 1
#define DT__GEMM_LOADB                                                                              \
  dt__gemm_v b0, b1;                                                                                \
  memcpy(&b0, pb, sizeof b0);                                                                       \
  memcpy(&b1, pb + DT__GEMM_W, sizeof b1);
#define DT__GEMM_LOADBH                                                                             \
  dt__gemm_v b0;                                                                                    \
  memcpy(&b0, pb, sizeof b0);

/* Defines NAME, a dt__gemm_kern_fn for element T with vector type V (LANES wide), MR rows
   (ROWS lists them) and 2 * LANES columns, and NAME##_d, the same reading A in place (FMA takes
   row i's element: DT__GEMM_FMA from the packed panel, DT__GEMM_FMAD from A; STEP: A's step per
   depth). ATTR: extra function attributes (the target). DT__GEMM_DEFINE_KERNEL_A's SUF picks the
   tile's width: empty, 2 * LANES columns (the DT__GEMM_DECL, LOADB, STORE and SPILL macros); H,
   LANES columns (their H twins, with DT__GEMM_FMAH or FMAHD). */
#define DT__GEMM_DEFINE_KERNEL(NAME, ATTR, T, V, LANES, MR, ROWS)                                   \
  DT__GEMM_DEFINE_KERNEL_A(NAME, ATTR, T, V, LANES, MR, ROWS, DT__GEMM_FMA, MR, )                    \
  DT__GEMM_DEFINE_KERNEL_A(NAME##_d, ATTR, T, V, LANES, MR, ROWS, DT__GEMM_FMAD, 1, )
/* With 12 rows, the edge kernels too (dt__gemm_plan's kern4, kern8, kernh, kernhd): NAME##_e4 and
   NAME##_e8, the first 4 or 8 rows of a packed 12-row panel (2 * LANES columns); NAME##_h and
   NAME##_hd, 12 rows and LANES columns (B's rows ldb apart, as for NAME), A packed or in place. */
#define DT__GEMM_DEFINE_KERNEL12(NAME, ATTR, T, V, LANES)                                           \
  DT__GEMM_DEFINE_KERNEL(NAME, ATTR, T, V, LANES, 12, DT__GEMM_ROWS12)                              \
  DT__GEMM_DEFINE_KERNEL_A(NAME##_e4, ATTR, T, V, LANES, 4, DT__GEMM_ROWS4, DT__GEMM_FMA, 12, )      \
  DT__GEMM_DEFINE_KERNEL_A(NAME##_e8, ATTR, T, V, LANES, 8, DT__GEMM_ROWS8, DT__GEMM_FMA, 12, )      \
  DT__GEMM_DEFINE_KERNEL_A(NAME##_h, ATTR, T, V, LANES, 12, DT__GEMM_ROWS12, DT__GEMM_FMAH, 12, H)   \
  DT__GEMM_DEFINE_KERNEL_A(NAME##_hd, ATTR, T, V, LANES, 12, DT__GEMM_ROWS12, DT__GEMM_FMAHD, 1, H)
/* With 6 rows: NAME##_e4, the first 4 rows of a packed 6-row panel; NAME##_h and NAME##_hd, 6 rows by
   LANES columns, A packed or in place. */
#define DT__GEMM_DEFINE_KERNEL6(NAME, ATTR, T, V, LANES)                                            \
  DT__GEMM_DEFINE_KERNEL(NAME, ATTR, T, V, LANES, 6, DT__GEMM_ROWS6)                                \
  DT__GEMM_DEFINE_KERNEL_A(NAME##_e4, ATTR, T, V, LANES, 4, DT__GEMM_ROWS4, DT__GEMM_FMA, 6, )       \
  DT__GEMM_DEFINE_KERNEL_A(NAME##_h, ATTR, T, V, LANES, 6, DT__GEMM_ROWS6, DT__GEMM_FMAH, 6, H)      \
  DT__GEMM_DEFINE_KERNEL_A(NAME##_hd, ATTR, T, V, LANES, 6, DT__GEMM_ROWS6, DT__GEMM_FMAHD, 1, H)
#define DT__GEMM_DEFINE_KERNEL_A(NAME, ATTR, T, V, LANES, MR, ROWS, FMA, STEP, SUF)                 \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t kc, const void *pa_, int64_t lda, const void *pb_, \
                                          int64_t ldb, void *c_, int64_t ldc, const void *cs_,      \
                                          int64_t lds, int mr, int nr, double alpha, double beta) { \
    typedef V dt__gemm_v;                                                                           \
    enum { DT__GEMM_W = LANES, DT__GEMM_NW = DT__GEMM_VPR##SUF * LANES };                           \
    const T *DT__GEMM_RESTRICT pa = (const T *)pa_;                                                 \
    const T *DT__GEMM_RESTRICT pb = (const T *)pb_;                                                 \
    T *c = (T *)c_;                                                                                 \
    const T *cs = (const T *)cs_;                                                                   \
    const dt__gemm_v vz = {0};                                                                      \
    const dt__gemm_v va = vz + (T)alpha, vb = vz + (T)beta;                                         \
    int64_t p;                                                                                      \
    ROWS(DT__GEMM_DECL##SUF)                                                                        \
    (void)lda;                                                                                      \
    for (p = 0; p < kc; p++) {                                                                      \
      DT__GEMM_LOADB##SUF                                                                           \
      ROWS(FMA)                                                                                     \
      pa += STEP;                                                                                   \
      pb += ldb;                                                                                    \
    }                                                                                               \
    if (mr == MR && nr == DT__GEMM_NW) {                                                            \
      if (beta == 0) {                                                                              \
        ROWS(DT__GEMM_STORE0##SUF)                                                                  \
      } else {                                                                                      \
        ROWS(DT__GEMM_STOREB##SUF)                                                                  \
      }                                                                                             \
    } else { /* edge tile: through a buffer */                                                      \
      T tile[MR * DT__GEMM_NW];                                                                     \
      int i, j;                                                                                     \
      ROWS(DT__GEMM_SPILL##SUF)                                                                     \
      for (i = 0; i < mr; i++)                                                                      \
        for (j = 0; j < nr; j++) {                                                                  \
          T v = (T)alpha * tile[i * DT__GEMM_NW + j];                                               \
          c[i * ldc + j] = beta == 0 ? v : v + (T)beta * cs[i * lds + j];                           \
        }                                                                                           \
    }                                                                                               \
  }

/* Baseline: the widest vectors the compiler flags allow: 12x32 / 12x16 with AVX-512 (-march=...),
   6x16 / 6x8 with AVX, else 16-byte vectors (SSE2 on x86-64, NEON on arm64): 6x8 F32, 6x4 F64. */
#if defined(__AVX512F__)
#define DT__GEMM_C_MR 12
#define DT__GEMM_C_ROWS DT__GEMM_ROWS12
#define DT__GEMM_C_VF32 dt__gemm_f32x16
#define DT__GEMM_C_VF64 dt__gemm_f64x8
#define DT__GEMM_C_LANES_F32 16
#elif defined(__AVX__)
#define DT__GEMM_C_MR 6
#define DT__GEMM_C_ROWS DT__GEMM_ROWS6
#define DT__GEMM_C_VF32 dt__gemm_f32x8
#define DT__GEMM_C_VF64 dt__gemm_f64x4
#define DT__GEMM_C_LANES_F32 8
#else
#define DT__GEMM_C_MR 6
#define DT__GEMM_C_ROWS DT__GEMM_ROWS6
#define DT__GEMM_C_VF32 dt__gemm_f32x4
#define DT__GEMM_C_VF64 dt__gemm_f64x2
#define DT__GEMM_C_LANES_F32 4
#endif
/* two vectors of lanes per row of the tile; F64 has half the lanes of F32 */
#define DT__GEMM_C_NR_F32 (2 * DT__GEMM_C_LANES_F32)
#define DT__GEMM_C_NR_F64 DT__GEMM_C_LANES_F32
#if DT__GEMM_C_MR == 12
DT__GEMM_DEFINE_KERNEL12(dt__gemm_kern_f32_c, , float, DT__GEMM_C_VF32, DT__GEMM_C_LANES_F32)
DT__GEMM_DEFINE_KERNEL12(dt__gemm_kern_f64_c, , double, DT__GEMM_C_VF64, DT__GEMM_C_LANES_F32 / 2)
#else
DT__GEMM_DEFINE_KERNEL6(dt__gemm_kern_f32_c, , float, DT__GEMM_C_VF32, DT__GEMM_C_LANES_F32)
DT__GEMM_DEFINE_KERNEL6(dt__gemm_kern_f64_c, , double, DT__GEMM_C_VF64, DT__GEMM_C_LANES_F32 / 2)
#endif

#if DT__GEMM_X86
/* AVX2+FMA: 16 ymm registers; 6x16 F32, 6x8 F64 (12 accumulators). */
DT__GEMM_DEFINE_KERNEL6(dt__gemm_kern_f32_avx2, __attribute__((target("avx2,fma"))), float, dt__gemm_f32x8, 8)
DT__GEMM_DEFINE_KERNEL6(dt__gemm_kern_f64_avx2, __attribute__((target("avx2,fma"))), double, dt__gemm_f64x4, 4)
/* AVX-512: 32 zmm registers; 12x32 F32, 12x16 F64 (24 accumulators), and the edge kernels 4x32,
   8x32 and 12x16 F32 (4x16, 8x16, 12x8 F64): a last panel of a few rows or half the columns costs
   what it computes, not a whole tile (1-thread 256x784x256 products: 550-580 -> 485-505 us). */
DT__GEMM_DEFINE_KERNEL12(dt__gemm_kern_f32_avx512, __attribute__((target("avx512f"))), float, dt__gemm_f32x16, 16)
DT__GEMM_DEFINE_KERNEL12(dt__gemm_kern_f64_avx512, __attribute__((target("avx512f"))), double, dt__gemm_f64x8, 8)
#endif

/* Skinny kernels, no packing of A (vector extensions; per ISA like the micro-kernels). A block
   computes R rows (4 or 1) and NV vectors (2 or 1) of columns of C = alpha op(A) op(B) + beta C,
   op(B)'s rows contiguous at b + p * ldb (a multiple of NV vectors readable), its accumulators in
   registers over all of k: every element of op(B) is loaded once per R rows. For a vector times a
   matrix, little depth, few columns or small problems, where packing does not pay. */
#define DT__GEMM_R4(X) X(0) X(1) X(2) X(3)
#define DT__GEMM_R1(X) X(0)
#define DT__GEMM_RB_DECL(r) dt__v s##r##0 = vz, s##r##1 = vz;
#define DT__GEMM_RB_FMA(r)                                                                          \
  {                                                                                                 \
    const dt__v x = a[(r) * rsa + p * csa] - vz; /* a splat (x - 0 is x, also for -0) */          \
    s##r##0 += x * b0;                                                                              \
    if (DT__GEMM_NV == 2) s##r##1 += x * b1;                                                        \
  }
#define DT__GEMM_RB_FMA2(r)                                                                         \
  {                                                                                                 \
    const dt__v x0 = a[(r) * rsa + p * csa] - vz, x1 = a[(r) * rsa + (p + 1) * csa] - vz;          \
    s##r##0 += x0 * b0;                                                                             \
    s##r##1 += x1 * b1;                                                                             \
  }
#define DT__GEMM_RB_FOLD(r) s##r##0 += s##r##1; s##r##1 = vz;
#define DT__GEMM_RB_STORE(r)                                                                        \
  {                                                                                                 \
    dt__t *cr = c + (r) * ldc;                                                                      \
    if (w == DT__GEMM_NV * DT__GEMM_W) { /* whole vectors */                                        \
      dt__v o0 = va * s##r##0, o1 = va * s##r##1;                                                   \
      if (beta != 0) {                                                                              \
        dt__v c0, c1 = vz;                                                                          \
        memcpy(&c0, cr, sizeof c0);                                                                 \
        if (DT__GEMM_NV == 2) memcpy(&c1, cr + DT__GEMM_W, sizeof c1);                              \
        o0 += vb * c0;                                                                              \
        o1 += vb * c1;                                                                              \
      }                                                                                             \
      memcpy(cr, &o0, sizeof o0);                                                                   \
      if (DT__GEMM_NV == 2) memcpy(cr + DT__GEMM_W, &o1, sizeof o1);                                \
    } else {                                                                                        \
      memcpy(out, &s##r##0, sizeof(dt__v));                                                         \
      memcpy(out + DT__GEMM_W, &s##r##1, sizeof(dt__v));                                            \
      if (beta == 0)                                                                                \
        for (q = 0; q < w; q++) cr[q] = alpha * out[q];                                             \
      else                                                                                          \
        for (q = 0; q < w; q++) cr[q] = alpha * out[q] + beta * cr[q];                              \
    }                                                                                               \
  }
#define DT__GEMM_DEFINE_RBLOCK(NAME, ATTR, T, V, LANES, ROWS, NV)                                    \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t k, int64_t w, T alpha, const T *a, int64_t rsa,   \
                                          int64_t csa, const T *b, int64_t ldb, T beta, T *c,       \
                                          int64_t ldc) {                                            \
    typedef V dt__v;                                                                                \
    typedef T dt__t;                                                                                \
    enum { DT__GEMM_W = LANES, DT__GEMM_NV = NV };                                                  \
    const dt__v vz = {0};                                                                           \
    const dt__v va = vz + alpha, vb = vz + beta;                                                    \
    T out[2 * LANES];                                                                               \
    int64_t p, q;                                                                                   \
    ROWS(DT__GEMM_RB_DECL)                                                                          \
    p = 0;                                                                                          \
    if (NV == 1) /* two depths a step, into s<r>0 and s<r>1: twice the FMA chains in flight */     \
      for (; p + 2 <= k; p += 2) {                                                                  \
        dt__v b0, b1;                                                                               \
        memcpy(&b0, b + p * ldb, sizeof b0);                                                        \
        memcpy(&b1, b + (p + 1) * ldb, sizeof b1);                                                  \
        ROWS(DT__GEMM_RB_FMA2)                                                                      \
      }                                                                                             \
    for (; p < k; p++) {                                                                            \
      dt__v b0, b1 = vz;                                                                            \
      memcpy(&b0, b + p * ldb, sizeof b0);                                                          \
      if (NV == 2) memcpy(&b1, b + p * ldb + LANES, sizeof b1);                                     \
      ROWS(DT__GEMM_RB_FMA)                                                                         \
    }                                                                                               \
    if (NV == 1) { ROWS(DT__GEMM_RB_FOLD) }                                                         \
    ROWS(DT__GEMM_RB_STORE)                                                                         \
  }
/* NAME: one row of C, c = alpha sum_p a[p * csa] op(B)(p, :) + beta c, four rows of op(B) a step
   (for fewer rows of C than a block: op(B) is read row after row, as it lies in memory). */
#define DT__GEMM_DEFINE_AXPY(NAME, ATTR, T, V, LANES)                                                \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t n, int64_t k, T alpha, const T *a, int64_t csa,   \
                                          const T *b, int64_t ldb, T beta, T *c) {                  \
    typedef V dt__v;                                                                                \
    const dt__v vz = {0};                                                                           \
    int64_t j, p;                                                                                   \
    if (beta == 0)                                                                                  \
      for (j = 0; j < n; j++) c[j] = 0;                                                             \
    else if (beta != 1)                                                                             \
      for (j = 0; j < n; j++) c[j] *= beta;                                                         \
    for (p = 0; p + 4 <= k; p += 4) {                                                               \
      const T x0 = alpha * a[p * csa], x1 = alpha * a[(p + 1) * csa];                               \
      const T x2 = alpha * a[(p + 2) * csa], x3 = alpha * a[(p + 3) * csa];                         \
      const dt__v v0 = x0 - vz, v1 = x1 - vz, v2 = x2 - vz, v3 = x3 - vz;                           \
      const T *b0 = b + p * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;                    \
      for (j = 0; j + LANES <= n; j += LANES) {                                                     \
        dt__v cv, y0, y1, y2, y3;                                                                   \
        memcpy(&cv, c + j, sizeof cv);                                                              \
        memcpy(&y0, b0 + j, sizeof y0); memcpy(&y1, b1 + j, sizeof y1);                             \
        memcpy(&y2, b2 + j, sizeof y2); memcpy(&y3, b3 + j, sizeof y3);                             \
        cv += v0 * y0 + v1 * y1 + v2 * y2 + v3 * y3;                                                \
        memcpy(c + j, &cv, sizeof cv);                                                              \
      }                                                                                             \
      for (; j < n; j++) c[j] += x0 * b0[j] + x1 * b1[j] + x2 * b2[j] + x3 * b3[j];                 \
    }                                                                                               \
    for (; p < k; p++) { /* the last k % 4 rows */                                                  \
      const T x0 = alpha * a[p * csa];                                                              \
      const dt__v v0 = x0 - vz;                                                                     \
      const T *b0 = b + p * ldb;                                                                    \
      for (j = 0; j + LANES <= n; j += LANES) {                                                     \
        dt__v cv, y0;                                                                               \
        memcpy(&cv, c + j, sizeof cv);                                                              \
        memcpy(&y0, b0 + j, sizeof y0);                                                             \
        cv += v0 * y0;                                                                              \
        memcpy(c + j, &cv, sizeof cv);                                                              \
      }                                                                                             \
      for (; j < n; j++) c[j] += x0 * b0[j];                                                        \
    }                                                                                               \
  }
/* NAME: C (m, n) (row stride ldc) from op(B) (k, n) at b (row stride rsb; columns up to the last
   multiple of 2 * LANES), its last n % (2 * LANES) columns (if any) from tail (row stride ldt,
   2 * LANES readable, zero padded). */
#define DT__GEMM_DEFINE_ROWS(NAME, ATTR, T, V, LANES)                                                \
  DT__GEMM_DEFINE_RBLOCK(NAME##_4x2, ATTR, T, V, LANES, DT__GEMM_R4, 2)                             \
  DT__GEMM_DEFINE_RBLOCK(NAME##_4x1, ATTR, T, V, LANES, DT__GEMM_R4, 1)                             \
  DT__GEMM_DEFINE_RBLOCK(NAME##_1x2, ATTR, T, V, LANES, DT__GEMM_R1, 2)                             \
  DT__GEMM_DEFINE_RBLOCK(NAME##_1x1, ATTR, T, V, LANES, DT__GEMM_R1, 1)                             \
  DT__GEMM_DEFINE_AXPY(NAME##_axpy, ATTR, T, V, LANES)                                              \
  static void NAME(int64_t m, int64_t n, int64_t k, double alpha_, const void *a_, int64_t rsa,     \
                   int64_t csa, const void *b_, int64_t rsb, const void *tail_, int64_t ldt,        \
                   double beta_, void *c_, int64_t ldc) {                                           \
    const T *a = (const T *)a_, *b = (const T *)b_, *tail = (const T *)tail_;                       \
    T *c = (T *)c_;                                                                                 \
    const T alpha = (T)alpha_, beta = (T)beta_;                                                     \
    const int64_t jt = n / (2 * LANES) * (2 * LANES), tw = n - jt;                                  \
    int64_t i, j;                                                                                   \
    if (m < 4) { /* a row or three: each row of C a sum of rows of op(B), read in order */         \
      for (i = 0; i < m; i++) NAME##_axpy(n, k, alpha, a + i * rsa, csa, b, rsb, beta, c + i * ldc); \
      return;                                                                                       \
    }                                                                                               \
    for (i = 0; i + 4 <= m; i += 4) {                                                               \
      for (j = 0; j < jt; j += 2 * LANES)                                                           \
        NAME##_4x2(k, 2 * LANES, alpha, a + i * rsa, rsa, csa, b + j, rsb, beta, c + i * ldc + j, ldc); \
      if (tw > LANES) NAME##_4x2(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
      else if (tw) NAME##_4x1(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
    }                                                                                               \
    for (; i < m; i++) {                                                                            \
      for (j = 0; j < jt; j += 2 * LANES)                                                           \
        NAME##_1x2(k, 2 * LANES, alpha, a + i * rsa, rsa, csa, b + j, rsb, beta, c + i * ldc + j, ldc); \
      if (tw > LANES) NAME##_1x2(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
      else if (tw) NAME##_1x1(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
    }                                                                                               \
  }

DT__GEMM_DEFINE_ROWS(dt__gemm_rows_f32_c, , float, dt__gemm_f32x4, 4)
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_f64_c, , double, dt__gemm_f64x2, 2)
#if DT__GEMM_X86
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_f32_avx2, __attribute__((target("avx2,fma"))), float, dt__gemm_f32x8, 8)
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_f64_avx2, __attribute__((target("avx2,fma"))), double, dt__gemm_f64x4, 4)
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_f32_avx512, __attribute__((target("avx512f"))), float, dt__gemm_f32x16, 16)
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_f64_avx512, __attribute__((target("avx512f"))), double, dt__gemm_f64x8, 8)
#endif

#else /* !DT__GEMM_VEC: plain C, 4x4 */

#define DT__GEMM_DEFINE_KERNEL_C(NAME, T)                                                           \
  static void NAME(int64_t kc, const void *pa_, int64_t lda, const void *pb_, int64_t ldb, void *c_, \
                   int64_t ldc, const void *cs_, int64_t lds, int mr, int nr, double alpha,         \
                   double beta) {                                                                   \
    const T *pa = (const T *)pa_, *pb = (const T *)pb_, *cs = (const T *)cs_;                       \
    T *c = (T *)c_;                                                                                 \
    T acc[16] = {0};                                                                                \
    int64_t p;                                                                                      \
    int i, j;                                                                                       \
    (void)lda;                                                                                      \
    for (p = 0; p < kc; p++, pa += 4, pb += ldb)                                                    \
      for (i = 0; i < 4; i++)                                                                       \
        for (j = 0; j < 4; j++) acc[i * 4 + j] += pa[i] * pb[j];                                    \
    for (i = 0; i < mr; i++)                                                                        \
      for (j = 0; j < nr; j++) {                                                                    \
        T v = (T)alpha * acc[i * 4 + j];                                                            \
        c[i * ldc + j] = beta == 0 ? v : v + (T)beta * cs[i * lds + j];                             \
      }                                                                                             \
  }
DT__GEMM_DEFINE_KERNEL_C(dt__gemm_kern_f32_c, float)
DT__GEMM_DEFINE_KERNEL_C(dt__gemm_kern_f64_c, double)
#define DT__GEMM_C_MR 4
#define DT__GEMM_C_NR_F32 4
#define DT__GEMM_C_NR_F64 4
#endif

static void dt__gemm_plan_set(dt__gemm_plan *pl, dt__gemm_kern_fn kern, dt__gemm_kern_fn kernd, dt__gemm_rows_fn rows,
                              int rw, int mr, int nr, int64_t kc, int64_t nc) {
  pl->kern = kern; pl->kernd = kernd; pl->rows = rows; pl->rw = rw;
  pl->kern4 = pl->kern8 = pl->kernh = pl->kernhd = NULL;
  pl->mr = mr; pl->nr = nr; pl->kc = kc; pl->nc = nc;
}

/* The plan for kernel family isa (DT__GEMM_ISA_*) and F64 when dbl; 0 when this CPU or build lacks it. */
static int dt__gemm_plan_get(int isa, int dbl, dt__gemm_plan *pl) {
  pl->pack = dbl ? dt__gemm_pack_f64 : dt__gemm_pack_f32;
  pl->es = dbl ? sizeof(double) : sizeof(float);
  switch (isa) {
    case DT__GEMM_ISA_C:
#if DT__GEMM_VEC
      dt__gemm_plan_set(pl, dbl ? dt__gemm_kern_f64_c : dt__gemm_kern_f32_c, dbl ? dt__gemm_kern_f64_c_d : dt__gemm_kern_f32_c_d,
                        dbl ? dt__gemm_rows_f64_c : dt__gemm_rows_f32_c, dbl ? 4 : 8,
#else
      dt__gemm_plan_set(pl, dbl ? dt__gemm_kern_f64_c : dt__gemm_kern_f32_c, NULL, NULL, 0,
#endif
                        DT__GEMM_C_MR, dbl ? DT__GEMM_C_NR_F64 : DT__GEMM_C_NR_F32, 256,
                        DT__GEMM_C_MR == 12 ? (dbl ? 192 : 256) : dbl ? 64 : 128);
#if DT__GEMM_VEC
      pl->kern4 = dbl ? dt__gemm_kern_f64_c_e4 : dt__gemm_kern_f32_c_e4;
      pl->kernh = dbl ? dt__gemm_kern_f64_c_h : dt__gemm_kern_f32_c_h;
      pl->kernhd = dbl ? dt__gemm_kern_f64_c_hd : dt__gemm_kern_f32_c_hd;
#if DT__GEMM_C_MR == 12
      pl->kern8 = dbl ? dt__gemm_kern_f64_c_e8 : dt__gemm_kern_f32_c_e8;
#endif
#endif
      return 1;
#if DT__GEMM_X86
    case DT__GEMM_ISA_AVX2: /* L2 of 256 KiB and up: B's panels 128 KiB */
      if (!dt__x86_has_avx2_fma()) return 0;
      dt__gemm_plan_set(pl, dbl ? dt__gemm_kern_f64_avx2 : dt__gemm_kern_f32_avx2,
                        dbl ? dt__gemm_kern_f64_avx2_d : dt__gemm_kern_f32_avx2_d,
                        dbl ? dt__gemm_rows_f64_avx2 : dt__gemm_rows_f32_avx2, dbl ? 8 : 16, 6, dbl ? 8 : 16, 256,
                        dbl ? 64 : 128);
      pl->kern4 = dbl ? dt__gemm_kern_f64_avx2_e4 : dt__gemm_kern_f32_avx2_e4;
      pl->kernh = dbl ? dt__gemm_kern_f64_avx2_h : dt__gemm_kern_f32_avx2_h;
      pl->kernhd = dbl ? dt__gemm_kern_f64_avx2_hd : dt__gemm_kern_f32_avx2_hd;
      return 1;
    case DT__GEMM_ISA_AVX512: /* L2 of 1 MiB and up: B's panels 384 KiB; A's micro-panel 18 / 24 KiB */
      if (!dt__x86_has_avx512f()) return 0;
      dt__gemm_plan_set(pl, dbl ? dt__gemm_kern_f64_avx512 : dt__gemm_kern_f32_avx512,
                        dbl ? dt__gemm_kern_f64_avx512_d : dt__gemm_kern_f32_avx512_d,
                        dbl ? dt__gemm_rows_f64_avx512 : dt__gemm_rows_f32_avx512, dbl ? 16 : 32, 12, dbl ? 16 : 32,
                        dbl ? 256 : 384, dbl ? 192 : 256);
      /* 256 rows are 21 panels of 12 and 4 rows; 784 columns 24 panels of 32 and 16 */
      pl->kern4 = dbl ? dt__gemm_kern_f64_avx512_e4 : dt__gemm_kern_f32_avx512_e4;
      pl->kern8 = dbl ? dt__gemm_kern_f64_avx512_e8 : dt__gemm_kern_f32_avx512_e8;
      pl->kernh = dbl ? dt__gemm_kern_f64_avx512_h : dt__gemm_kern_f32_avx512_h;
      pl->kernhd = dbl ? dt__gemm_kern_f64_avx512_hd : dt__gemm_kern_f32_avx512_hd;
      return 1;
#endif
    default: return 0;
  }
}
