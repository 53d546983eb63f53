/* F32 C = alpha A B^T + beta C for few rows and columns and a long depth (A: (m, k), B: (n, k),
   both with k contiguous; a convolution's weight gradient, gy (oc, images oh ow) against col
   (c kh kw, images oh ow)): every entry of C is a dot product of two contiguous rows, so nothing
   is packed. The depth is cut in chunks of DT__GEMM_DOT_KC, whose rows of A and B stay in the
   L2 cache while every dot product of the chunk reads them; each chunk's sums go to their own
   slice of a scratch, on the pool's threads, and the slices are added in order afterwards: the
   same bits for any number of threads. */
#ifndef DT__GEMM_DOT_KC
#define DT__GEMM_DOT_KC 1024
#endif

#if DT__GEMM_VEC
typedef void (*dt__gemm_dot_fn)(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb, float *out, int64_t ldo);

/* out[r ldo + s] = sum over p < kc of a[r lda + p] b[s ldb + p], for R rows of A by S of B (R, S
   at most 4): R S vector accumulators, their lanes added in order, then the last kc % W terms */
#define DT__GEMM_DEFINE_DOT(NAME, V, W)                                                             \
  DT__GEMM_INLINE DT__GEMM_FMA_ATTR void NAME(const int R, const int S, int64_t kc, const float *a, int64_t lda, \
                                              const float *b, int64_t ldb, float *out, int64_t ldo) { \
    const V vz = {0};                                                                               \
    V acc[4][4] = {{vz}};                                                                           \
    int64_t p = 0, q;                                                                               \
    int r, s, l;                                                                                    \
    for (; p + W <= kc; p += W) {                                                                   \
      V av[4], bv[4];                                                                               \
      DT__GEMM_UNROLL for (r = 0; r < R; r++) memcpy(&av[r], a + r * lda + p, sizeof(V));           \
      DT__GEMM_UNROLL for (s = 0; s < S; s++) memcpy(&bv[s], b + s * ldb + p, sizeof(V));           \
      DT__GEMM_UNROLL for (r = 0; r < R; r++)                                                       \
        DT__GEMM_UNROLL for (s = 0; s < S; s++) acc[r][s] += av[r] * bv[s];                         \
    }                                                                                               \
    for (r = 0; r < R; r++)                                                                         \
      for (s = 0; s < S; s++) {                                                                     \
        float lanes[W], t = 0;                                                                      \
        memcpy(lanes, &acc[r][s], sizeof lanes);                                                    \
        for (l = 0; l < W; l++) t += lanes[l];                                                      \
        for (q = p; q < kc; q++) t += a[r * lda + q] * b[s * ldb + q];                              \
        out[r * ldo + s] = t;                                                                       \
      }                                                                                             \
  }
/* NAME: the body at R rows by S columns, with target ATTR */
#define DT__GEMM_DOT(NAME, ATTR, BODY, R, S)                                                        \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb, \
                                          float *out, int64_t ldo) {                                \
    BODY(R, S, kc, a, lda, b, ldb, out, ldo);                                                       \
  }

/* a family's dot blocks: 4 x 4 (3 x 4 on 16-byte vectors, whose 16 registers hold 12
   accumulators and the 7 vectors they read only at that shape), and the edges 1 x S, R x 1, 1 x 1 */
typedef struct dt__gemm_dot_set {
  int r, s;
  dt__gemm_dot_fn full, row, col, one;
} dt__gemm_dot_set;

#if defined(__AVX512F__)
#define DT__GEMM_DOT_C_V dt__gemm_f32x16
#define DT__GEMM_DOT_C_W 16
#define DT__GEMM_DOT_C_R 4
#elif defined(__AVX__)
#define DT__GEMM_DOT_C_V dt__gemm_f32x8
#define DT__GEMM_DOT_C_W 8
#define DT__GEMM_DOT_C_R 3
#else
#define DT__GEMM_DOT_C_V dt__gemm_f32x4
#define DT__GEMM_DOT_C_W 4
#define DT__GEMM_DOT_C_R 3
#endif
DT__GEMM_DEFINE_DOT(dt__gemm_dot_body_c, DT__GEMM_DOT_C_V, DT__GEMM_DOT_C_W)
DT__GEMM_DOT(dt__gemm_dot_c_full, , dt__gemm_dot_body_c, DT__GEMM_DOT_C_R, 4)
DT__GEMM_DOT(dt__gemm_dot_c_row, , dt__gemm_dot_body_c, 1, 4)
DT__GEMM_DOT(dt__gemm_dot_c_col, , dt__gemm_dot_body_c, DT__GEMM_DOT_C_R, 1)
DT__GEMM_DOT(dt__gemm_dot_c_one, , dt__gemm_dot_body_c, 1, 1)
static const dt__gemm_dot_set dt__gemm_dot_c = {DT__GEMM_DOT_C_R, 4, dt__gemm_dot_c_full, dt__gemm_dot_c_row,
                                                dt__gemm_dot_c_col, dt__gemm_dot_c_one};
#if DT__GEMM_X86
DT__GEMM_DEFINE_DOT(dt__gemm_dot_body_8, dt__gemm_f32x8, 8)
DT__GEMM_DOT(dt__gemm_dot_avx2_full, DT__GEMM_AVX2, dt__gemm_dot_body_8, 3, 4)
DT__GEMM_DOT(dt__gemm_dot_avx2_row, DT__GEMM_AVX2, dt__gemm_dot_body_8, 1, 4)
DT__GEMM_DOT(dt__gemm_dot_avx2_col, DT__GEMM_AVX2, dt__gemm_dot_body_8, 3, 1)
DT__GEMM_DOT(dt__gemm_dot_avx2_one, DT__GEMM_AVX2, dt__gemm_dot_body_8, 1, 1)
static const dt__gemm_dot_set dt__gemm_dot_avx2 = {3, 4, dt__gemm_dot_avx2_full, dt__gemm_dot_avx2_row, dt__gemm_dot_avx2_col,
                                                   dt__gemm_dot_avx2_one};
DT__GEMM_DEFINE_DOT(dt__gemm_dot_body_16, dt__gemm_f32x16, 16)
DT__GEMM_DOT(dt__gemm_dot_avx512_full, DT__GEMM_AVX512, dt__gemm_dot_body_16, 4, 4)
DT__GEMM_DOT(dt__gemm_dot_avx512_row, DT__GEMM_AVX512, dt__gemm_dot_body_16, 1, 4)
DT__GEMM_DOT(dt__gemm_dot_avx512_col, DT__GEMM_AVX512, dt__gemm_dot_body_16, 4, 1)
DT__GEMM_DOT(dt__gemm_dot_avx512_one, DT__GEMM_AVX512, dt__gemm_dot_body_16, 1, 1)
static const dt__gemm_dot_set dt__gemm_dot_avx512 = {4, 4, dt__gemm_dot_avx512_full, dt__gemm_dot_avx512_row,
                                                     dt__gemm_dot_avx512_col, dt__gemm_dot_avx512_one};
#endif

/* the set of the widest vectors this CPU has (the gemm plan's choice) */
static const dt__gemm_dot_set *dt__gemm_dot_best(void) {
#if DT__GEMM_X86
  if (dt__x86_has_avx512f()) return &dt__gemm_dot_avx512;
  if (dt__x86_has_avx2_fma()) return &dt__gemm_dot_avx2;
#endif
  return &dt__gemm_dot_c;
}

typedef struct dt__gemm_dot_job {
  const dt__gemm_dot_set *set;
  int64_t m, n, k;
  const float *a, *b;
  float *part; /* (chunks, m, n) */
} dt__gemm_dot_job;

/* chunks [lo, hi): each one's (m, n) sums over its depth */
static void dt__gemm_dot_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gemm_dot_job *j = (const dt__gemm_dot_job *)ctx;
  const dt__gemm_dot_set *ds = j->set;
  int64_t c, i, jj;
  for (c = lo; c < hi; c++) {
    const int64_t p0 = c * DT__GEMM_DOT_KC, kc = j->k - p0 < DT__GEMM_DOT_KC ? j->k - p0 : DT__GEMM_DOT_KC;
    float *out = j->part + c * j->m * j->n;
    for (i = 0; i < j->m;) {
      const int rows = j->m - i >= ds->r ? ds->r : 1;
      const float *a = j->a + i * j->k + p0;
      for (jj = 0; jj < j->n;) {
        const int cols = j->n - jj >= ds->s ? ds->s : 1;
        const float *b = j->b + jj * j->k + p0;
        if (rows > 1) (cols > 1 ? ds->full : ds->col)(kc, a, j->k, b, j->k, out + i * j->n + jj, j->n);
        else (cols > 1 ? ds->row : ds->one)(kc, a, j->k, b, j->k, out + i * j->n + jj, j->n);
        jj += cols;
      }
      i += rows;
    }
  }
}

/* Where it pays: C small (m n at most 4096), the depth two chunks at least and four times its
   rows and its columns; the chunks' sums at most 16 MiB of scratch. */
static int dt__gemm_dot_fits(int64_t m, int64_t n, int64_t k) {
  return m * n <= 4096 && k >= 2048 && k >= 4 * m && k >= 4 * n && (k / DT__GEMM_DOT_KC + 1) * m * n <= ((int64_t)1 << 22);
}

/* The products dt__gemm_dot takes: F32 A B^T that fits (with a bias, C starts from it) */
static int dt__gemm_dot_takes(int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k) {
  return !dbl && !ta && tb && dt__gemm_dot_fits(m, n, k);
}

/* C (m, n) = alpha A (m, k) B (n, k)^T + beta C, F32, rows contiguous, with the blocks of ds
   (NULL: the best this CPU has). Returns 0, having done nothing, where it does not fit or the
   scratch cannot be had. */
static int dt__gemm_dot(const dt__gemm_dot_set *ds, int64_t m, int64_t n, int64_t k, float alpha, const float *a, const float *b,
                        float beta, float *c) {
  dt__gemm_dot_job j;
  const int64_t nch = (k + DT__GEMM_DOT_KC - 1) / DT__GEMM_DOT_KC;
  const size_t sz = sizeof(float) * (size_t)(nch * m * n);
  int64_t i, ch;
  if (!dt__gemm_dot_fits(m, n, k) || !(j.part = (float *)DT__GEMM_MALLOC(sz))) return 0;
  j.set = ds ? ds : dt__gemm_dot_best();
  j.m = m; j.n = n; j.k = k; j.a = a; j.b = b;
  dt__par_for(nch, 1, dt__gemm_dot_task, &j);
  for (i = 0; i < m * n; i++) {
    float t = j.part[i];
    for (ch = 1; ch < nch; ch++) t += j.part[ch * m * n + i];
    c[i] = beta == 0 ? alpha * t : alpha * t + beta * c[i];
  }
  DT__GEMM_FREE(j.part, sz);
  return 1;
}
#else
static int dt__gemm_dot_takes(int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k) {
  (void)dbl; (void)ta; (void)tb; (void)m; (void)n; (void)k;
  return 0;
}
#endif
