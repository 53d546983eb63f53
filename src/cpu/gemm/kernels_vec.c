#if DT__GEMM_VEC
/* The kernels' bodies, written with GCC/Clang vector extensions (no intrinsics). C has no
   generics, so each body is written once by a macro per vector type and instantiated below
   under its full name; the per-ISA kernels (kernels_isa.c) are one-line functions that give a
   body its target and constant shape. A body is always inlined there, and its loops over rows
   and vectors have constant trip counts then: the compiler unrolls them completely
   (DT__GEMM_UNROLL) and keeps the small accumulator arrays in registers. */

/* Vector types. Memory goes in and out of them through memcpy (one load or store). */
typedef float dt__gemm_f32x4 __attribute__((vector_size(16)));
typedef float dt__gemm_f32x8 __attribute__((vector_size(32)));
typedef float dt__gemm_f32x16 __attribute__((vector_size(64)));
typedef double dt__gemm_f64x2 __attribute__((vector_size(16)));
typedef double dt__gemm_f64x4 __attribute__((vector_size(32)));
typedef double dt__gemm_f64x8 __attribute__((vector_size(64)));

/* A body: inlined into each kernel (which gives it a target), never compiled on its own. */
#define DT__GEMM_INLINE static inline __attribute__((always_inline, unused))
/* Unrolls the loop that follows completely when its trip count is a constant (up to 16 for GCC):
   GCC's -O2 unrolls only loops that do not grow, and Clang unrolls a loop with a count pragma too
   late to keep the arrays in registers. Older GCC lacks the pragma (the loops stay loops: slower). */
#if defined(__clang__)
#define DT__GEMM_UNROLL _Pragma("unroll")
#elif __GNUC__ >= 8
#define DT__GEMM_UNROLL _Pragma("GCC unroll 16")
#else
#define DT__GEMM_UNROLL
#endif

/* The micro-kernel (a dt__gemm_kern_fn) on vector type V of W lanes of T: MR rows (at most 12)
   by NV vectors (1 or 2) of columns, acc[i] the accumulators of row i. AP: A's packed panel height
   (its step per depth; MR or more, the panel's first MR rows), or 0: A read in place, row i at
   pa + i * lda, one element a depth. tile: MR * NV * W elements of scratch for an edge tile
   (sized by the kernel: MR is a constant only there). */
#define DT__GEMM_DEFINE_TILE(NAME, T, V, W)                                                         \
  DT__GEMM_INLINE DT__GEMM_FMA_ATTR void NAME(const int MR, const int NV, const int AP, T *tile, int64_t kc, \
                            const void *pa_, int64_t lda, const void *pb_, int64_t ldb, void *c_,   \
                            int64_t ldc, const void *cs_, int64_t lds, int mr, int nr, double alpha, \
                            double beta) {                                                          \
    const T *DT__GEMM_RESTRICT pa = (const T *)pa_;                                                 \
    const T *DT__GEMM_RESTRICT pb = (const T *)pb_;                                                 \
    T *c = (T *)c_;                                                                                 \
    const T *cs = (const T *)cs_;                                                                   \
    const V vz = {0};                                                                               \
    const V va = vz + (T)alpha, vb = vz + (T)beta;                                                  \
    const int64_t ars = AP ? 1 : lda, step = AP ? AP : 1; /* A's row i at pa[i * ars] */            \
    /* row i: acc[i][0], and acc[i][1] when NV is 2; zeroed by the initializer (Clang kept the   \
       arrays of a zeroing loop in memory for 16-byte vectors) */                                   \
    V acc[12][2] = {{vz}};                                                                          \
    int64_t p;                                                                                      \
    int i, j;                                                                                       \
    for (p = 0; p < kc; p++) {                                                                      \
      V b0, b1 = vz;                                                                                \
      memcpy(&b0, pb, sizeof b0);                                                                   \
      if (NV == 2) memcpy(&b1, pb + W, sizeof b1);                                                  \
      DT__GEMM_UNROLL for (i = 0; i < MR; i++) {                                                    \
        const V ai = pa[i * ars] - vz; /* a splat */                                                \
        acc[i][0] += ai * b0;                                                                       \
        if (NV == 2) acc[i][1] += ai * b1;                                                          \
      }                                                                                             \
      pa += step;                                                                                   \
      pb += ldb;                                                                                    \
    }                                                                                               \
    if ((mr == MR) & (nr == NV * W)) { /* one test (&): GCC guesses it as for constants */        \
      if (beta == 0) {                                                                              \
        DT__GEMM_UNROLL for (i = 0; i < MR; i++) {                                                  \
          V r0 = va * acc[i][0], r1 = NV == 2 ? va * acc[i][1] : vz;                                \
          memcpy(c + i * ldc, &r0, sizeof r0);                                                      \
          if (NV == 2) memcpy(c + i * ldc + W, &r1, sizeof r1);                                     \
        }                                                                                           \
      } else {                                                                                      \
        DT__GEMM_UNROLL for (i = 0; i < MR; i++) {                                                  \
          V o0, o1 = vz;                                                                            \
          memcpy(&o0, cs + i * lds, sizeof o0);                                                     \
          if (NV == 2) memcpy(&o1, cs + i * lds + W, sizeof o1);                                    \
          o0 = va * acc[i][0] + vb * o0;                                                            \
          if (NV == 2) o1 = va * acc[i][1] + vb * o1;                                               \
          memcpy(c + i * ldc, &o0, sizeof o0);                                                      \
          if (NV == 2) memcpy(c + i * ldc + W, &o1, sizeof o1);                                     \
        }                                                                                           \
      }                                                                                             \
    } else { /* edge tile: through a buffer */                                                      \
      DT__GEMM_UNROLL for (i = 0; i < MR; i++) {                                                    \
        memcpy(tile + i * NV * W, &acc[i][0], sizeof(V));                                           \
        if (NV == 2) memcpy(tile + i * NV * W + W, &acc[i][1], sizeof(V));                          \
      }                                                                                             \
      for (i = 0; i < mr; i++)                                                                      \
        for (j = 0; j < nr; j++) {                                                                  \
          T x = (T)alpha * tile[i * NV * W + j];                                                    \
          c[i * ldc + j] = beta == 0 ? x : x + (T)beta * cs[i * lds + j];                           \
        }                                                                                           \
    }                                                                                               \
  }
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f32x4, float, dt__gemm_f32x4, 4)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f32x8, float, dt__gemm_f32x8, 8)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f32x16, float, dt__gemm_f32x16, 16)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f64x2, double, dt__gemm_f64x2, 2)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f64x4, double, dt__gemm_f64x4, 4)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f64x8, double, dt__gemm_f64x8, 8)

/* Skinny kernels, no packing of A. A block computes R rows (4 or 1) and NV vectors (2 or 1) of
   W lanes of columns of C = alpha op(A) op(B) + beta C, op(B)'s rows contiguous at b + p * ldb
   (a multiple of NV vectors readable), its accumulators s[r] in registers over all of k: every
   element of op(B) is loaded once per R rows. w: the columns of C written (NV * W, or fewer from
   a zero-padded tail). For a vector times a matrix, little depth, few columns or small problems,
   where packing does not pay. */
#define DT__GEMM_DEFINE_RBLOCK(NAME, T, V, W)                                                       \
  DT__GEMM_INLINE DT__GEMM_FMA_ATTR void NAME(const int R, const int NV, int64_t k, int64_t w, T alpha, const T *a, \
                            int64_t rsa, int64_t csa, const T *b, int64_t ldb, T beta, T *c,        \
                            int64_t ldc) {                                                          \
    const V vz = {0};                                                                               \
    const V va = vz + alpha, vb = vz + beta;                                                        \
    T out[2 * W];                                                                                   \
    V s[4][2];                                                                                      \
    int64_t p, q;                                                                                   \
    int r;                                                                                          \
    DT__GEMM_UNROLL for (r = 0; r < R; r++) s[r][0] = s[r][1] = vz;                                 \
    p = 0;                                                                                          \
    if (NV == 1) /* two depths a step, into s[r][0] and s[r][1]: twice the FMA chains in flight */  \
      for (; p + 2 <= k; p += 2) {                                                                  \
        V b0, b1;                                                                                   \
        memcpy(&b0, b + p * ldb, sizeof b0);                                                        \
        memcpy(&b1, b + (p + 1) * ldb, sizeof b1);                                                  \
        DT__GEMM_UNROLL for (r = 0; r < R; r++) {                                                   \
          const V x0 = a[r * rsa + p * csa] - vz, x1 = a[r * rsa + (p + 1) * csa] - vz;             \
          s[r][0] += x0 * b0;                                                                       \
          s[r][1] += x1 * b1;                                                                       \
        }                                                                                           \
      }                                                                                             \
    for (; p < k; p++) {                                                                            \
      V b0, b1 = vz;                                                                                \
      memcpy(&b0, b + p * ldb, sizeof b0);                                                          \
      if (NV == 2) memcpy(&b1, b + p * ldb + W, sizeof b1);                                         \
      DT__GEMM_UNROLL for (r = 0; r < R; r++) {                                                     \
        const V x = a[r * rsa + p * csa] - vz; /* a splat (x - 0 is x, also for -0) */              \
        s[r][0] += x * b0;                                                                          \
        if (NV == 2) s[r][1] += x * b1;                                                             \
      }                                                                                             \
    }                                                                                               \
    if (NV == 1) {                                                                                  \
      DT__GEMM_UNROLL for (r = 0; r < R; r++) {                                                     \
        s[r][0] += s[r][1];                                                                         \
        s[r][1] = vz;                                                                               \
      }                                                                                             \
    }                                                                                               \
    DT__GEMM_UNROLL for (r = 0; r < R; r++) {                                                       \
      T *cr = c + r * ldc;                                                                          \
      if (w == NV * W) { /* whole vectors */                                                        \
        V o0 = va * s[r][0], o1 = va * s[r][1];                                                     \
        if (beta != 0) {                                                                            \
          V c0, c1 = vz;                                                                            \
          memcpy(&c0, cr, sizeof c0);                                                               \
          if (NV == 2) memcpy(&c1, cr + W, sizeof c1);                                              \
          o0 += vb * c0;                                                                            \
          o1 += vb * c1;                                                                            \
        }                                                                                           \
        memcpy(cr, &o0, sizeof o0);                                                                 \
        if (NV == 2) memcpy(cr + W, &o1, sizeof o1);                                                \
      } else {                                                                                      \
        memcpy(out, &s[r][0], sizeof(V));                                                           \
        memcpy(out + W, &s[r][1], sizeof(V));                                                       \
        if (beta == 0)                                                                              \
          for (q = 0; q < w; q++) cr[q] = alpha * out[q];                                           \
        else                                                                                        \
          for (q = 0; q < w; q++) cr[q] = alpha * out[q] + beta * cr[q];                            \
      }                                                                                             \
    }                                                                                               \
  }
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f32x4, float, dt__gemm_f32x4, 4)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f32x8, float, dt__gemm_f32x8, 8)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f32x16, float, dt__gemm_f32x16, 16)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f64x2, double, dt__gemm_f64x2, 2)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f64x4, double, dt__gemm_f64x4, 4)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f64x8, double, dt__gemm_f64x8, 8)

/* One row of C, c = alpha sum_p a[p * csa] op(B)(p, :) + beta c, four rows of op(B) a step
   (for fewer rows of C than a block: op(B) is read row after row, as it lies in memory). */
#define DT__GEMM_DEFINE_AXPY(NAME, T, V, W)                                                         \
  DT__GEMM_INLINE DT__GEMM_FMA_ATTR void NAME(int64_t n, int64_t k, T alpha, const T *a, int64_t csa, const T *b, \
                            int64_t ldb, T beta, T *c) {                                            \
    const V vz = {0};                                                                               \
    int64_t j, p;                                                                                   \
    if (beta == 0)                                                                                  \
      for (j = 0; j < n; j++) c[j] = 0;                                                             \
    else if (beta != 1)                                                                             \
      for (j = 0; j < n; j++) c[j] *= beta;                                                         \
    for (p = 0; p + 4 <= k; p += 4) {                                                               \
      const T x0 = alpha * a[p * csa], x1 = alpha * a[(p + 1) * csa];                               \
      const T x2 = alpha * a[(p + 2) * csa], x3 = alpha * a[(p + 3) * csa];                         \
      const V v0 = x0 - vz, v1 = x1 - vz, v2 = x2 - vz, v3 = x3 - vz;                               \
      const T *b0 = b + p * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;                    \
      for (j = 0; j + W <= n; j += W) {                                                             \
        V cv, y0, y1, y2, y3;                                                                       \
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
      const V v0 = x0 - vz;                                                                         \
      const T *b0 = b + p * ldb;                                                                    \
      for (j = 0; j + W <= n; j += W) {                                                             \
        V cv, y0;                                                                                   \
        memcpy(&cv, c + j, sizeof cv);                                                              \
        memcpy(&y0, b0 + j, sizeof y0);                                                             \
        cv += v0 * y0;                                                                              \
        memcpy(c + j, &cv, sizeof cv);                                                              \
      }                                                                                             \
      for (; j < n; j++) c[j] += x0 * b0[j];                                                        \
    }                                                                                               \
  }
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f32x4, float, dt__gemm_f32x4, 4)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f32x8, float, dt__gemm_f32x8, 8)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f32x16, float, dt__gemm_f32x16, 16)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f64x2, double, dt__gemm_f64x2, 2)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f64x4, double, dt__gemm_f64x4, 4)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f64x8, double, dt__gemm_f64x8, 8)

/* The rows kernel (a dt__gemm_rows_fn) over a family's blocks (W lanes a vector): C (m, n) (row
   stride ldc) from op(B) (k, n) at b (row stride rsb; columns up to the last multiple of 2 * W),
   its last n % (2 * W) columns (if any) from tail (row stride ldt, 2 * W readable, zero padded).
   b4x2 is the block of 4 rows and 2 vectors, and so on; axpy does one row. */
typedef void (*dt__gemm_rblock_f32_fn)(int64_t k, int64_t w, float alpha, const float *a, int64_t rsa, int64_t csa,
                                       const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
typedef void (*dt__gemm_rblock_f64_fn)(int64_t k, int64_t w, double alpha, const double *a, int64_t rsa, int64_t csa,
                                       const double *b, int64_t ldb, double beta, double *c, int64_t ldc);
typedef void (*dt__gemm_axpy_f32_fn)(int64_t n, int64_t k, float alpha, const float *a, int64_t csa, const float *b,
                                     int64_t ldb, float beta, float *c);
typedef void (*dt__gemm_axpy_f64_fn)(int64_t n, int64_t k, double alpha, const double *a, int64_t csa,
                                     const double *b, int64_t ldb, double beta, double *c);
#define DT__GEMM_DEFINE_ROWS(NAME, T, RBLOCK_FN, AXPY_FN)                                           \
  DT__GEMM_INLINE void NAME(const int W, RBLOCK_FN b4x2, RBLOCK_FN b4x1, RBLOCK_FN b1x2,            \
                            RBLOCK_FN b1x1, AXPY_FN axpy, int64_t m, int64_t n, int64_t k,          \
                            double alpha_, const void *a_, int64_t rsa, int64_t csa, const void *b_, \
                            int64_t rsb, const void *tail_, int64_t ldt, double beta_, void *c_,    \
                            int64_t ldc) {                                                          \
    const T *a = (const T *)a_, *b = (const T *)b_, *tail = (const T *)tail_;                       \
    T *c = (T *)c_;                                                                                 \
    const T alpha = (T)alpha_, beta = (T)beta_;                                                     \
    const int64_t jt = n / (2 * W) * (2 * W), tw = n - jt;                                          \
    int64_t i, j;                                                                                   \
    if (m < 4) { /* a row or three: each row of C a sum of rows of op(B), read in order */          \
      for (i = 0; i < m; i++) axpy(n, k, alpha, a + i * rsa, csa, b, rsb, beta, c + i * ldc);       \
      return;                                                                                       \
    }                                                                                               \
    for (i = 0; i + 4 <= m; i += 4) {                                                               \
      for (j = 0; j < jt; j += 2 * W)                                                               \
        b4x2(k, 2 * W, alpha, a + i * rsa, rsa, csa, b + j, rsb, beta, c + i * ldc + j, ldc);       \
      if (tw > W) b4x2(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
      else if (tw) b4x1(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
    }                                                                                               \
    for (; i < m; i++) {                                                                            \
      for (j = 0; j < jt; j += 2 * W)                                                               \
        b1x2(k, 2 * W, alpha, a + i * rsa, rsa, csa, b + j, rsb, beta, c + i * ldc + j, ldc);       \
      if (tw > W) b1x2(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
      else if (tw) b1x1(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
    }                                                                                               \
  }
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_body_f32, float, dt__gemm_rblock_f32_fn, dt__gemm_axpy_f32_fn)
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_body_f64, double, dt__gemm_rblock_f64_fn, dt__gemm_axpy_f64_fn)
#endif /* DT__GEMM_VEC */
