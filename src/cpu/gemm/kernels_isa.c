#if DT__GEMM_VEC
/* The kernels of each family (DT__GEMM_ISA_*), under the names dt__gemm_plan_get picks them by:
   each a function with its family's target that runs a body of kernels_vec.c at a constant shape.
   The bodies are inlined, so every kernel is compiled for its own target. */
#define DT__GEMM_AVX2 __attribute__((target("avx2,fma")))
#define DT__GEMM_AVX512 __attribute__((target("avx512f")))

/* NAME: a dt__gemm_kern_fn with target ATTR, TILE (on W lanes of T) for MR rows, NV vectors, A's
   panel AP (0: A in place); see DT__GEMM_DEFINE_TILE. */
#define DT__GEMM_KERNEL(NAME, ATTR, T, W, TILE, MR, NV, AP)                                         \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t kc, const void *pa, int64_t lda, const void *pb,  \
                                          int64_t ldb, void *c, int64_t ldc, const void *cs,        \
                                          int64_t lds, int mr, int nr, double alpha, double beta) { \
    T tile[(MR) * (NV) * (W)];                                                                      \
    TILE(MR, NV, AP, tile, kc, pa, lda, pb, ldb, c, ldc, cs, lds, mr, nr, alpha, beta);             \
  }
/* NAME: the skinny block BLOCK of R rows by NV vectors, with target ATTR; see DT__GEMM_DEFINE_RBLOCK. */
#define DT__GEMM_RBLOCK(NAME, ATTR, T, BLOCK, R, NV)                                                \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t k, int64_t w, T alpha, const T *a, int64_t rsa,   \
                                          int64_t csa, const T *b, int64_t ldb, T beta, T *c,       \
                                          int64_t ldc) {                                            \
    BLOCK(R, NV, k, w, alpha, a, rsa, csa, b, ldb, beta, c, ldc);                                   \
  }
/* NAME: AXPY with target ATTR; see DT__GEMM_DEFINE_AXPY. */
#define DT__GEMM_AXPY(NAME, ATTR, T, AXPY)                                                          \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t n, int64_t k, T alpha, const T *a, int64_t csa,   \
                                          const T *b, int64_t ldb, T beta, T *c) {                  \
    AXPY(n, k, alpha, a, csa, b, ldb, beta, c);                                                     \
  }
/* NAME: a dt__gemm_rows_fn, ROWS over the blocks B4X2..B1X1 and AXPY of W lanes (with their
   family's target; this one needs none); see DT__GEMM_DEFINE_ROWS. */
#define DT__GEMM_ROWS(NAME, ROWS, W, B4X2, B4X1, B1X2, B1X1, AXPY)                                  \
  static void NAME(int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t rsa,       \
                   int64_t csa, const void *b, int64_t rsb, const void *tail, int64_t ldt,          \
                   double beta, void *c, int64_t ldc) {                                             \
    ROWS(W, B4X2, B4X1, B1X2, B1X1, AXPY, m, n, k, alpha, a, rsa, csa, b, rsb, tail, ldt, beta, c, ldc); \
  }

/* Baseline: the widest vectors the compiler flags allow: 12x32 / 12x16 with AVX-512 (-march=...),
   6x16 / 6x8 with AVX, else 16-byte vectors (SSE2 on x86-64, NEON on arm64): 6x8 F32, 6x4 F64.
   Two vectors of lanes per row of the tile; F64 has half the lanes of F32. */
#if defined(__AVX512F__)
#define DT__GEMM_C_MR 12
#define DT__GEMM_C_LANES_F32 16
#define DT__GEMM_C_TILE_F32 dt__gemm_tile_f32x16
#define DT__GEMM_C_TILE_F64 dt__gemm_tile_f64x8
#elif defined(__AVX__)
#define DT__GEMM_C_MR 6
#define DT__GEMM_C_LANES_F32 8
#define DT__GEMM_C_TILE_F32 dt__gemm_tile_f32x8
#define DT__GEMM_C_TILE_F64 dt__gemm_tile_f64x4
#else
#define DT__GEMM_C_MR 6
#define DT__GEMM_C_LANES_F32 4
#define DT__GEMM_C_TILE_F32 dt__gemm_tile_f32x4
#define DT__GEMM_C_TILE_F64 dt__gemm_tile_f64x2
#endif
#define DT__GEMM_C_LANES_F64 (DT__GEMM_C_LANES_F32 / 2)
#define DT__GEMM_C_NR_F32 (2 * DT__GEMM_C_LANES_F32)
#define DT__GEMM_C_NR_F64 (2 * DT__GEMM_C_LANES_F64)
/* the full tile, the same reading A in place, the first 4 rows of a panel, half the columns
   (packed, in place); with 12 rows, also the first 8 rows */
DT__GEMM_KERNEL(dt__gemm_kern_f32_c, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, DT__GEMM_C_MR, 2, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_d, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, DT__GEMM_C_MR, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_e4, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, 4, 2, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_h, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, DT__GEMM_C_MR, 1, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_hd, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, DT__GEMM_C_MR, 1, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, DT__GEMM_C_MR, 2, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_d, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, DT__GEMM_C_MR, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_e4, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, 4, 2, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_h, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, DT__GEMM_C_MR, 1, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_hd, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, DT__GEMM_C_MR, 1, 0)
#if DT__GEMM_C_MR == 12
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_e8, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, 8, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_e8, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, 8, 2, 12)
#endif
/* the skinny kernels on 16-byte vectors */
DT__GEMM_RBLOCK(dt__gemm_rows_f32_c_4x2, , float, dt__gemm_rblock_f32x4, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_c_4x1, , float, dt__gemm_rblock_f32x4, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_c_1x2, , float, dt__gemm_rblock_f32x4, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_c_1x1, , float, dt__gemm_rblock_f32x4, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f32_c_axpy, , float, dt__gemm_axpy_f32x4)
DT__GEMM_ROWS(dt__gemm_rows_f32_c, dt__gemm_rows_body_f32, 4, dt__gemm_rows_f32_c_4x2, dt__gemm_rows_f32_c_4x1,
              dt__gemm_rows_f32_c_1x2, dt__gemm_rows_f32_c_1x1, dt__gemm_rows_f32_c_axpy)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_c_4x2, , double, dt__gemm_rblock_f64x2, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_c_4x1, , double, dt__gemm_rblock_f64x2, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_c_1x2, , double, dt__gemm_rblock_f64x2, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_c_1x1, , double, dt__gemm_rblock_f64x2, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f64_c_axpy, , double, dt__gemm_axpy_f64x2)
DT__GEMM_ROWS(dt__gemm_rows_f64_c, dt__gemm_rows_body_f64, 2, dt__gemm_rows_f64_c_4x2, dt__gemm_rows_f64_c_4x1,
              dt__gemm_rows_f64_c_1x2, dt__gemm_rows_f64_c_1x1, dt__gemm_rows_f64_c_axpy)

#if DT__GEMM_X86
/* AVX2+FMA: 16 ymm registers; 6x16 F32, 6x8 F64 (12 accumulators). */
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 6, 2, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2_d, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 6, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2_e4, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 4, 2, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2_h, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 6, 1, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2_hd, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 6, 1, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 6, 2, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2_d, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 6, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2_e4, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 4, 2, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2_h, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 6, 1, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2_hd, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 6, 1, 0)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx2_4x2, DT__GEMM_AVX2, float, dt__gemm_rblock_f32x8, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx2_4x1, DT__GEMM_AVX2, float, dt__gemm_rblock_f32x8, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx2_1x2, DT__GEMM_AVX2, float, dt__gemm_rblock_f32x8, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx2_1x1, DT__GEMM_AVX2, float, dt__gemm_rblock_f32x8, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f32_avx2_axpy, DT__GEMM_AVX2, float, dt__gemm_axpy_f32x8)
DT__GEMM_ROWS(dt__gemm_rows_f32_avx2, dt__gemm_rows_body_f32, 8, dt__gemm_rows_f32_avx2_4x2, dt__gemm_rows_f32_avx2_4x1,
              dt__gemm_rows_f32_avx2_1x2, dt__gemm_rows_f32_avx2_1x1, dt__gemm_rows_f32_avx2_axpy)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx2_4x2, DT__GEMM_AVX2, double, dt__gemm_rblock_f64x4, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx2_4x1, DT__GEMM_AVX2, double, dt__gemm_rblock_f64x4, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx2_1x2, DT__GEMM_AVX2, double, dt__gemm_rblock_f64x4, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx2_1x1, DT__GEMM_AVX2, double, dt__gemm_rblock_f64x4, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f64_avx2_axpy, DT__GEMM_AVX2, double, dt__gemm_axpy_f64x4)
DT__GEMM_ROWS(dt__gemm_rows_f64_avx2, dt__gemm_rows_body_f64, 4, dt__gemm_rows_f64_avx2_4x2, dt__gemm_rows_f64_avx2_4x1,
              dt__gemm_rows_f64_avx2_1x2, dt__gemm_rows_f64_avx2_1x1, dt__gemm_rows_f64_avx2_axpy)

/* AVX-512: 32 zmm registers; 12x32 F32, 12x16 F64 (24 accumulators), and the edge kernels 4x32,
   8x32 and 12x16 F32 (4x16, 8x16, 12x8 F64): a last panel of a few rows or half the columns costs
   what it computes, not a whole tile. */
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 12, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_d, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 12, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_e4, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 4, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_e8, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 8, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_h, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 12, 1, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_hd, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 12, 1, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 12, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_d, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 12, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_e4, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 4, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_e8, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 8, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_h, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 12, 1, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_hd, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 12, 1, 0)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx512_4x2, DT__GEMM_AVX512, float, dt__gemm_rblock_f32x16, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx512_4x1, DT__GEMM_AVX512, float, dt__gemm_rblock_f32x16, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx512_1x2, DT__GEMM_AVX512, float, dt__gemm_rblock_f32x16, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx512_1x1, DT__GEMM_AVX512, float, dt__gemm_rblock_f32x16, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f32_avx512_axpy, DT__GEMM_AVX512, float, dt__gemm_axpy_f32x16)
DT__GEMM_ROWS(dt__gemm_rows_f32_avx512, dt__gemm_rows_body_f32, 16, dt__gemm_rows_f32_avx512_4x2,
              dt__gemm_rows_f32_avx512_4x1, dt__gemm_rows_f32_avx512_1x2, dt__gemm_rows_f32_avx512_1x1,
              dt__gemm_rows_f32_avx512_axpy)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx512_4x2, DT__GEMM_AVX512, double, dt__gemm_rblock_f64x8, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx512_4x1, DT__GEMM_AVX512, double, dt__gemm_rblock_f64x8, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx512_1x2, DT__GEMM_AVX512, double, dt__gemm_rblock_f64x8, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx512_1x1, DT__GEMM_AVX512, double, dt__gemm_rblock_f64x8, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f64_avx512_axpy, DT__GEMM_AVX512, double, dt__gemm_axpy_f64x8)
DT__GEMM_ROWS(dt__gemm_rows_f64_avx512, dt__gemm_rows_body_f64, 8, dt__gemm_rows_f64_avx512_4x2,
              dt__gemm_rows_f64_avx512_4x1, dt__gemm_rows_f64_avx512_1x2, dt__gemm_rows_f64_avx512_1x1,
              dt__gemm_rows_f64_avx512_axpy)
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
