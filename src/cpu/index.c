/* The strided copy (slices along dims > 0, cat, permute) and index_select, on
   elements of es bytes moved by memcpy of a constant size (one load and one store), so one
   kernel serves every dtype. Both run over rows of the innermost dim on the thread pool. */

/* NAME: n elements of ES bytes, xs and ys elements apart; one function per element size, so that
   each memcpy is of a constant size: one load and one store */
#define DT__STRIDED_ROW(NAME, ES)                                                                  \
  static void NAME(int64_t n, const char *x, int64_t xs, char *y, int64_t ys) {                    \
    int64_t i;                                                                                     \
    for (i = 0; i < n; i++) memcpy(y + (size_t)(i * ys) * ES, x + (size_t)(i * xs) * ES, ES);      \
  }
DT__STRIDED_ROW(dt__strided_row_1, 1)
DT__STRIDED_ROW(dt__strided_row_2, 2)
DT__STRIDED_ROW(dt__strided_row_4, 4)
DT__STRIDED_ROW(dt__strided_row_8, 8)
#undef DT__STRIDED_ROW

typedef struct dt__strided_job {
  const dt__bcast *g;
  size_t es;
  const char *x;
  char *y;
} dt__strided_job;

/* rows [lo, hi) of g's innermost dim */
static void dt__strided_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__strided_job *j = (const dt__strided_job *)ctx;
  const dt__bcast *g = j->g;
  const int nd = g->ndim;
  const int64_t inner = g->dims[nd - 1], as = g->astride[nd - 1], bs = g->bstride[nd - 1];
  int64_t r;
  for (r = lo; r < hi; r++) {
    int64_t ox, oy;
    const char *x;
    char *y;
    dt__bcast_row(g, r, &ox, &oy);
    x = j->x + (size_t)ox * j->es;
    y = j->y + (size_t)oy * j->es;
    if (as == 1 && bs == 1) memcpy(y, x, (size_t)inner * j->es);
    else if (j->es == 1) dt__strided_row_1(inner, x, as, y, bs);
    else if (j->es == 2) dt__strided_row_2(inner, x, as, y, bs);
    else if (j->es == 4) dt__strided_row_4(inner, x, as, y, bs);
    else dt__strided_row_8(inner, x, as, y, bs);
  }
}

static dt_status dt__cpu_copy_strided(int dev, size_t es, const dt__bcast *g, const void *x, void *y) {
  dt__strided_job j;
  int64_t inner;
  (void)dev;
  if (g->numel <= 0) return DT_OK;
  if (es != 1 && es != 2 && es != 4 && es != 8) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "copy_strided: elements of %zu bytes are not supported", es);
    return DT_ERR_DTYPE;
  }
  j.g = g; j.es = es; j.x = (const char *)x; j.y = (char *)y;
  inner = g->dims[g->ndim - 1];
  dt__par_for(g->numel / inner, (DT__GRAIN_MEM + inner - 1) / inner, dt__strided_task, &j);
  return DT_OK;
}

typedef struct dt__gather_job {
  size_t row;          /* bytes in a row: inner elements */
  int64_t n, k;
  const int64_t *idx;
  const char *x;
  char *y;
} dt__gather_job;

/* rows [lo, hi) of y: (outer, k) rows of inner elements */
static void dt__gather_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gather_job *j = (const dt__gather_job *)ctx;
  int64_t r;
  for (r = lo; r < hi; r++) {
    int64_t o = r / j->k, v = j->idx[r % j->k];
#if defined(__GNUC__) || defined(__clang__)
    if (r + 1 < hi && j->row >= 256) { /* the next row (its first 4 KiB) on its way: rows picked at
                                          random (a shuffled minibatch) are not prefetched otherwise */
      const int64_t o1 = (r + 1) / j->k, v1 = j->idx[(r + 1) % j->k];
      if (v1 >= 0 && v1 < j->n) {
        const char *nx = j->x + (size_t)(o1 * j->n + v1) * j->row;
        size_t b;
        for (b = 0; b < j->row && b < 4096; b += 64) __builtin_prefetch(nx + b);
      }
    }
#endif
    if (v < 0 || v >= j->n) memset(j->y + (size_t)r * j->row, 0, j->row); /* never read: the core refused it already */
    else memcpy(j->y + (size_t)r * j->row, j->x + (size_t)(o * j->n + v) * j->row, j->row);
  }
}

/* x: (outer, n, inner), idx: (k,) -> y: (outer, k, inner) */
static dt_status dt__cpu_index_select(int dev, size_t es, int64_t outer, int64_t n, int64_t inner, const int64_t *idx,
                                      int64_t k, const void *x, void *y) {
  dt__gather_job j;
  (void)dev;
  if (outer <= 0 || inner <= 0 || k <= 0) return DT_OK;
  j.row = (size_t)inner * es; j.n = n; j.k = k; j.idx = idx; j.x = (const char *)x; j.y = (char *)y;
  dt__par_for(outer * k, (DT__GRAIN_MEM + inner - 1) / inner, dt__gather_task, &j);
  return DT_OK;
}
