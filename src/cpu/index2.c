/* where, gather, scatter-add, index-add (index_select's backward) and random integers on the
   CPU. Elements that are only moved (where, gather) move as es bytes, whatever the dtype. The
   core checks every index before it calls (src/ops/index2.c); an index outside [0, n) is still
   never followed here. */

/* one element of es bytes (1, 2, 4 or 8), each a copy of a constant size */
static void dt__mv_elem(char *y, const char *x, size_t es) {
  switch (es) {
    case 1: memcpy(y, x, 1); break;
    case 2: memcpy(y, x, 2); break;
    case 4: memcpy(y, x, 4); break;
    default: memcpy(y, x, 8); break;
  }
}

/* the offsets (a, b and, with cs, c) of the first element of row r of g (the rows: every dim but the last) */
static void dt__row_offsets(const dt__bcast *g, const int64_t *cs, int64_t r, int64_t *oa, int64_t *ob, int64_t *oc) {
  int d;
  *oa = 0; *ob = 0; *oc = 0;
  for (d = g->ndim - 2; d >= 0; d--) {
    int64_t i = r % g->dims[d];
    r /= g->dims[d];
    *oa += i * g->astride[d];
    *ob += i * g->bstride[d];
    if (cs) *oc += i * cs[d];
  }
}

typedef struct dt__where_job {
  const dt__bcast *g;
  const int64_t *cs;
  size_t es;
  const uint8_t *c;
  const char *a, *b;
  char *y;
} dt__where_job;

/* rows [lo, hi) of y (contiguous over g's dims): y = c ? a : b */
static void dt__where_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__where_job *j = (const dt__where_job *)ctx;
  const dt__bcast *g = j->g;
  const int nd = g->ndim;
  const int64_t inner = g->dims[nd - 1], as = g->astride[nd - 1], bs = g->bstride[nd - 1], cs = j->cs[nd - 1];
  const size_t es = j->es;
  int64_t r, i;
  for (r = lo; r < hi; r++) {
    int64_t oa, ob, oc;
    char *y = j->y + (size_t)(r * inner) * es;
    dt__row_offsets(g, j->cs, r, &oa, &ob, &oc);
    for (i = 0; i < inner; i++) {
      const char *src = j->c[oc + i * cs] ? j->a + (size_t)(oa + i * as) * es : j->b + (size_t)(ob + i * bs) * es;
      dt__mv_elem(y + (size_t)i * es, src, es);
    }
  }
}

static dt_status dt__cpu_where(int dev, size_t es, const dt__bcast *g, const int64_t *cstride, const void *c, const void *a,
                               const void *b, void *y) {
  dt__where_job j;
  int64_t inner;
  (void)dev;
  if (g->numel <= 0) return DT_OK;
  j.g = g; j.cs = cstride; j.es = es; j.c = (const uint8_t *)c; j.a = (const char *)a; j.b = (const char *)b; j.y = (char *)y;
  inner = g->dims[g->ndim - 1];
  dt__par_for(g->numel / inner, (DT__GRAIN_MEM + inner - 1) / inner, dt__where_task, &j);
  return DT_OK;
}

typedef struct dt__gs_job {
  const dt__bcast *g;
  size_t es;
  int64_t n, stride;
  const int64_t *idx;
  const char *x;
  char *y;
} dt__gs_job;

/* gather, rows [lo, hi) of the index: y[ob] = x[oa + idx stride] (0 for an index out of range) */
static void dt__gather2_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gs_job *j = (const dt__gs_job *)ctx;
  const dt__bcast *g = j->g;
  const int nd = g->ndim;
  const int64_t inner = g->dims[nd - 1], as = g->astride[nd - 1], bs = g->bstride[nd - 1];
  const size_t es = j->es;
  int64_t r, i;
  for (r = lo; r < hi; r++) {
    int64_t oa, ob, oc;
    const int64_t *ix = j->idx + r * inner;
    dt__row_offsets(g, NULL, r, &oa, &ob, &oc);
    for (i = 0; i < inner; i++) {
      int64_t v = ix[i];
      char *y = j->y + (size_t)(ob + i * bs) * es;
      if (v < 0 || v >= j->n) memset(y, 0, es);
      else dt__mv_elem(y, j->x + (size_t)(oa + i * as + v * j->stride) * es, es);
    }
  }
}

static dt_status dt__cpu_gather(int dev, size_t es, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                                const void *x, void *y) {
  dt__gs_job j;
  int64_t inner;
  (void)dev;
  if (g->numel <= 0) return DT_OK;
  j.g = g; j.es = es; j.n = n; j.stride = stride; j.idx = idx; j.x = (const char *)x; j.y = (char *)y;
  inner = g->dims[g->ndim - 1];
  dt__par_for(g->numel / inner, (DT__GRAIN_MEM + inner - 1) / inner, dt__gather2_task, &j);
  return DT_OK;
}

/* scatter_add in T, the sum computed in U (the unsigned type for integers: they wrap, as PyTorch's):
   y[oa + idx stride] += src[ob], over the index in order (one thread: several elements may land on
   one, and their sum is then in the index's order, as PyTorch's CPU loop) */
#define DT__SCATTER_ADD(NAME, T, U)                                                                      \
  static void NAME(const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx, const void *src_, \
                   void *y_) {                                                                           \
    const T *src = (const T *)src_;                                                                      \
    T *y = (T *)y_;                                                                                      \
    const int nd = g->ndim;                                                                              \
    const int64_t inner = g->dims[nd - 1], as = g->astride[nd - 1], bs = g->bstride[nd - 1];             \
    int64_t r, i, rows = g->numel / inner;                                                               \
    for (r = 0; r < rows; r++) {                                                                         \
      int64_t oa, ob, oc;                                                                                \
      const int64_t *ix = idx + r * inner;                                                               \
      dt__row_offsets(g, NULL, r, &oa, &ob, &oc);                                                        \
      for (i = 0; i < inner; i++)                                                                        \
        if (ix[i] >= 0 && ix[i] < n) {                                                                   \
          T *p = &y[oa + i * as + ix[i] * stride];                                                       \
          *p = (T)((U)*p + (U)src[ob + i * bs]);                                                         \
        }                                                                                                \
    }                                                                                                    \
  }
DT__SCATTER_ADD(dt__scatter_add_f32, float, float)
DT__SCATTER_ADD(dt__scatter_add_f64, double, double)
DT__SCATTER_ADD(dt__scatter_add_i32, int32_t, uint32_t)
DT__SCATTER_ADD(dt__scatter_add_i64, int64_t, uint64_t)
#undef DT__SCATTER_ADD

static dt_status dt__cpu_scatter_add(int dev, dt_dtype t, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                                     const void *src, void *y) {
  (void)dev;
  if (g->numel <= 0) return DT_OK;
  switch (t) {
    case DT_F32: dt__scatter_add_f32(g, n, stride, idx, src, y); return DT_OK;
    case DT_F64: dt__scatter_add_f64(g, n, stride, idx, src, y); return DT_OK;
    case DT_I32: dt__scatter_add_i32(g, n, stride, idx, src, y); return DT_OK;
    case DT_I64: dt__scatter_add_i64(g, n, stride, idx, src, y); return DT_OK;
    default: break;
  }
  snprintf(dt__cpu_err, sizeof dt__cpu_err, "scatter_add: %s is not supported", dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

typedef struct dt__iadd_job {
  int f64;
  int64_t n, inner, k, cols; /* cols: column blocks per outer item */
  const int64_t *idx;
  const void *src;
  void *y;
} dt__iadd_job;

#define DT__IADD_COLS 256 /* columns a task adds at a time */

/* tasks [lo, hi) of (outer, column block): for each j in order, y[o, idx[j], block] += src[o, j, block].
   Each task owns its columns, so the sums are the same (j in order) on any number of threads. */
static void dt__iadd_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__iadd_job *j = (const dt__iadd_job *)ctx;
  int64_t t, r, c;
  for (t = lo; t < hi; t++) {
    int64_t o = t / j->cols, c0 = (t % j->cols) * DT__IADD_COLS;
    int64_t c1 = c0 + DT__IADD_COLS < j->inner ? c0 + DT__IADD_COLS : j->inner;
    for (r = 0; r < j->k; r++) {
      int64_t v = j->idx[r];
      size_t yo, so;
      if (v < 0 || v >= j->n) continue;
      yo = (size_t)((o * j->n + v) * j->inner);
      so = (size_t)((o * j->k + r) * j->inner);
      if (j->f64) {
        double *y = (double *)j->y + yo;
        const double *s = (const double *)j->src + so;
        for (c = c0; c < c1; c++) y[c] += s[c];
      } else {
        float *y = (float *)j->y + yo;
        const float *s = (const float *)j->src + so;
        for (c = c0; c < c1; c++) y[c] += s[c];
      }
    }
  }
}

static dt_status dt__cpu_index_add(int dev, dt_dtype t, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k,
                                   const void *src, void *y) {
  dt__iadd_job j;
  int64_t per;
  (void)dev;
  if (outer <= 0 || inner <= 0 || k <= 0) return DT_OK;
  if (t != DT_F32 && t != DT_F64) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "index_add: %s is not supported", dt__dtype_str(t));
    return DT_ERR_DTYPE;
  }
  j.f64 = t == DT_F64; j.n = n; j.inner = inner; j.k = k; j.idx = idx; j.src = src; j.y = y;
  j.cols = (inner + DT__IADD_COLS - 1) / DT__IADD_COLS;
  per = k * (inner < DT__IADD_COLS ? inner : DT__IADD_COLS); /* elements a task adds */
  dt__par_for(outer * j.cols, (DT__GRAIN_MEM + per - 1) / per, dt__iadd_task, &j);
  return DT_OK;
}

typedef struct dt__randint_job {
  uint64_t seed, draw, range;
  int64_t low;
  int64_t *y;
} dt__randint_job;

static void dt__randint_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__randint_job *j = (const dt__randint_job *)ctx;
  int64_t i;
  for (i = lo; i < hi; i++) j->y[i] = dt__random_int_at(j->seed, j->draw, (uint64_t)i, j->low, j->range);
}

static dt_status dt__cpu_random_int(int dev, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, int64_t low, uint64_t range,
                                    int64_t *y) {
  dt__randint_job j;
  (void)dev;
  dt__rng_at(gen, &seed, &draw);
  j.seed = seed; j.draw = draw; j.range = range; j.low = low; j.y = y;
  dt__par_for(n, DT__GRAIN_MATH, dt__randint_task, &j);
  return DT_OK;
}
