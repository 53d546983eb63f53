/* x: (outer, len, inner). Rows (inner == 1) go to the threads in chunks of rows; other shapes in
   (outer, 256-column) tiles, each column's state (max, sum) kept in a small array. F32 softmax
   takes the vector exp (dt__ew_kernels()->exp_f32) on contiguous rows; sums are in double. */

/* v beats best at a later index: NaN beats everything but an earlier NaN; ties keep the earlier */
#define DT__ARG_BEATS(v, best, min) ((best) == (best) && ((v) != (v) || ((min) ? (v) < (best) : (v) > (best))))

typedef struct dt__arg_job {
  dt__rows r; /* r.y: the values (or NULL) */
  int min;
  int64_t *idx;
  double *pv;  /* one long row: per block, the best value and its index */
  int64_t *pi;
} dt__arg_job;

/* the best of x[0 .. n) at stride s: value and index */
#define DT__ARG_SCAN_DEFINE(NAME, T)                                                                \
  static void NAME(int min, const T *x, int64_t n, int64_t s, double *val, int64_t *at) {            \
    T best = x[0];                                                                                  \
    int64_t bi = 0, r;                                                                              \
    for (r = 1; r < n && best == best; r++) {                                                       \
      const T v = x[r * s];                                                                         \
      const int beats = DT__ARG_BEATS(v, best, min); /* no branch: mispredicted on random rows */   \
      best = beats ? v : best;                                                                      \
      bi = beats ? r : bi;                                                                          \
    }                                                                                               \
    *val = (double)best;                                                                            \
    *at = bi;                                                                                       \
  }
DT__ARG_SCAN_DEFINE(dt__arg_scan_f32, float)
DT__ARG_SCAN_DEFINE(dt__arg_scan_f64, double)
#undef DT__ARG_SCAN_DEFINE

static void dt__arg_scan(dt_dtype t, int min, const void *x, int64_t n, int64_t s, double *val, int64_t *at) {
  if (t == DT_F32) dt__arg_scan_f32(min, (const float *)x, n, s, val, at);
  else dt__arg_scan_f64(min, (const double *)x, n, s, val, at);
}

static void dt__arg_store(const dt__arg_job *j, int64_t at, double v, int64_t i) {
  if (j->r.y) {
    if (j->r.t == DT_F32) ((float *)j->r.y)[at] = (float)v;
    else ((double *)j->r.y)[at] = v;
  }
  if (j->idx) j->idx[at] = i;
}

/* outer == inner == 1: items are blocks of the one row */
static void dt__arg_task_blocks(void *ctx, int64_t lo, int64_t hi) {
  const dt__arg_job *j = (const dt__arg_job *)ctx;
  int64_t b, n;
  for (b = lo; b < hi; b++) {
    const char *x = dt__rows_block(&j->r, b, &n);
    dt__arg_scan(j->r.t, j->min, x, n, 1, &j->pv[b], &j->pi[b]);
    j->pi[b] += b * j->r.block;
  }
}

/* items are output positions (o, i), strided scans of len */
static void dt__arg_task_outs(void *ctx, int64_t lo, int64_t hi) {
  const dt__arg_job *j = (const dt__arg_job *)ctx;
  size_t es = dt_dtype_size(j->r.t);
  int64_t k;
  for (k = lo; k < hi; k++) {
    int64_t o = k / j->r.inner, i = k % j->r.inner, at;
    double v;
    dt__arg_scan(j->r.t, j->min, j->r.x + (size_t)(o * j->r.len * j->r.inner + i) * es, j->r.len, j->r.inner, &v, &at);
    dt__arg_store(j, k, v, at);
  }
}

static dt_status dt__cpu_arg_reduce(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x,
                                    void *vals, int64_t *idx) {
  dt__arg_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  if (outer <= 0 || inner <= 0 || len <= 0) return DT_OK;
  j.r = dt__rows_of(t, outer, len, inner, x, vals);
  j.min = min; j.idx = idx;
  if (outer == 1 && inner == 1 && len > j.r.block) {
    double pv[DT__RED_MAXBLOCKS];
    int64_t pi[DT__RED_MAXBLOCKS], nb = (len + j.r.block - 1) / j.r.block, b, bi;
    double bv;
    pv[0] = 0; pi[0] = 0; /* nb >= 2: every one is written by the tasks */
    j.pv = pv; j.pi = pi;
    dt__par_for(nb, 1, dt__arg_task_blocks, &j);
    bv = pv[0]; bi = pi[0];
    for (b = 1; b < nb; b++)
      if (DT__ARG_BEATS(pv[b], bv, min)) { bv = pv[b]; bi = pi[b]; }
    dt__arg_store(&j, 0, bv, bi);
    return DT_OK;
  }
  j.pv = NULL; j.pi = NULL;
  dt__par_for(outer * inner, (DT__GRAIN_MEM + len - 1) / len, dt__arg_task_outs, &j);
  return DT_OK;
}

typedef struct dt__smax_job {
  dt__rows r;
  int log;
} dt__smax_job;

/* The max of x[0 .. n), NaN if any is NaN (-inf for n 0). No data-dependent branches: on random
   logits the max's branch was mispredicted (half of a 256x10 cross-entropy's time). */
#define DT__ROW_MAX_DEFINE(NAME, T)                                                                 \
  static T NAME(const T *x, int64_t n) {                                                            \
    T m = -INFINITY;                                                                                \
    int64_t r;                                                                                      \
    int nan = 0;                                                                                    \
    for (r = 0; r < n; r++) {                                                                       \
      const T v = x[r];                                                                             \
      nan |= v != v;                                                                                \
      m = v > m ? v : m;                                                                            \
    }                                                                                               \
    return nan ? NAN : m;                                                                           \
  }
DT__ROW_MAX_DEFINE(dt__row_max_f32, float)
DT__ROW_MAX_DEFINE(dt__row_max_f64, double)

/* one contiguous F32 row: y = softmax(x) or log_softmax(x) */
static void dt__smax_row_f32(int lg, int64_t len, const float *x, float *y) {
  const dt__map_fn vexp = dt__ew_kernels()->exp_f32;
  const float m = dt__row_max_f32(x, len); /* a NaN anywhere makes the whole row NaN, as in PyTorch */
  float tmp[256];
  double s = 0;
  int64_t r, k;
  for (r = 0; r < len; r++) y[r] = x[r] - m; /* all -inf (m = -inf) or an inf: NaN, as in PyTorch */
  if (!lg) {
    float inv;
    vexp(len, y, y, 0, 0);
    for (r = 0; r < len; r++) s += y[r];
    inv = (float)(1.0 / s);
    for (r = 0; r < len; r++) y[r] *= inv;
    return;
  }
  for (r = 0; r < len; r += 256) {
    int64_t c = len - r < 256 ? len - r : 256;
    vexp(c, y + r, tmp, 0, 0);
    for (k = 0; k < c; k++) s += tmp[k];
  }
  {
    float ls = (float)log(s);
    for (r = 0; r < len; r++) y[r] -= ls;
  }
}

static void dt__smax_row_f64(int lg, int64_t len, const double *x, double *y) {
  const double m = dt__row_max_f64(x, len);
  double s = 0;
  int64_t r;
  for (r = 0; r < len; r++) s += exp(x[r] - m);
  if (lg) { double ls = log(s); for (r = 0; r < len; r++) y[r] = x[r] - m - ls; }
  else for (r = 0; r < len; r++) y[r] = exp(x[r] - m) / s;
}

/* inner == 1: items are rows */
static void dt__smax_task_rows(void *ctx, int64_t lo, int64_t hi) {
  const dt__smax_job *j = (const dt__smax_job *)ctx;
  int64_t o;
  for (o = lo; o < hi; o++) {
    if (j->r.t == DT_F32) dt__smax_row_f32(j->log, j->r.len, (const float *)j->r.x + o * j->r.len, (float *)j->r.y + o * j->r.len);
    else dt__smax_row_f64(j->log, j->r.len, (const double *)j->r.x + o * j->r.len, (double *)j->r.y + o * j->r.len);
  }
}

/* softmax (log_softmax with lg) of cnt columns down len rows, x + r * inner to y + r * inner;
   three passes down the columns */
#define DT__SMAX_COLS_DEFINE(NAME, T, EXP)                                                          \
  static void NAME(int lg, const T *x, T *y, int64_t len, int64_t inner, int64_t cnt) {              \
    T m[DT__COL_TILE];                                                                              \
    double s[DT__COL_TILE];                                                                         \
    char nan[DT__COL_TILE];                                                                         \
    int64_t ic, r;                                                                                  \
    for (ic = 0; ic < cnt; ic++) { m[ic] = -INFINITY; s[ic] = 0; nan[ic] = 0; }                     \
    for (r = 0; r < len; r++)                                                                       \
      for (ic = 0; ic < cnt; ic++) {                                                                \
        T v = x[r * inner + ic];                                                                    \
        if (v > m[ic]) m[ic] = v;                                                                   \
        else if (v != v) nan[ic] = 1;                                                               \
      }                                                                                             \
    for (ic = 0; ic < cnt; ic++) if (nan[ic]) m[ic] = (T)NAN;                                       \
    for (r = 0; r < len; r++)                                                                       \
      for (ic = 0; ic < cnt; ic++) s[ic] += EXP(x[r * inner + ic] - m[ic]);                         \
    for (ic = 0; ic < cnt; ic++) s[ic] = lg ? log(s[ic]) : 1.0 / s[ic];                             \
    for (r = 0; r < len; r++)                                                                       \
      for (ic = 0; ic < cnt; ic++) {                                                                \
        T d = x[r * inner + ic] - m[ic];                                                            \
        y[r * inner + ic] = lg ? (T)(d - (T)s[ic]) : (T)(EXP(d) * (T)s[ic]);                        \
      }                                                                                             \
  }
DT__SMAX_COLS_DEFINE(dt__smax_cols_f32, float, expf)
DT__SMAX_COLS_DEFINE(dt__smax_cols_f64, double, exp)
#undef DT__SMAX_COLS_DEFINE

/* inner > 1: items are (o, 256-column tile) pairs */
static void dt__smax_task_cols(void *ctx, int64_t lo, int64_t hi) {
  const dt__smax_job *j = (const dt__smax_job *)ctx;
  int64_t it;
  for (it = lo; it < hi; it++) {
    const dt__col_tile c = dt__col_tile_of(it, j->r.inner);
    const int64_t off = c.o * j->r.len * j->r.inner + c.i0;
    if (j->r.t == DT_F32) dt__smax_cols_f32(j->log, (const float *)j->r.x + off, (float *)j->r.y + off, j->r.len, j->r.inner, c.cnt);
    else dt__smax_cols_f64(j->log, (const double *)j->r.x + off, (double *)j->r.y + off, j->r.len, j->r.inner, c.cnt);
  }
}

static dt_status dt__cpu_softmax(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__smax_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  if (outer <= 0 || inner <= 0 || len <= 0) return DT_OK;
  j.r = dt__rows_of(t, outer, len, inner, x, y);
  j.log = lg;
  if (inner == 1) dt__par_for(outer, (DT__GRAIN_MATH + len - 1) / len, dt__smax_task_rows, &j);
  else dt__par_col_tiles(outer, len, inner, DT__GRAIN_MATH, dt__smax_task_cols, &j);
  return DT_OK;
}

typedef struct dt__xent_job {
  int grad;
  dt_dtype t;
  int64_t n, c, block;
  const char *x;
  const int64_t *target;
  char *y;
  double *part; /* loss: one sum per block of rows */
} dt__xent_job;

/* one row xr of c logits with label lab: its loss (log-sum-exp - xr[lab]), and with g its gradient
   row (softmax - onehot) * scale. A label outside [0, c) is never used: the loss and the row are NaN. */
#define DT__XENT_ROW_DEFINE(NAME, T, EXP, MAX)                                                      \
  static double NAME(const T *xr, int64_t c, int64_t lab, T *g, double scale) {                      \
    const int ok = lab >= 0 && lab < c;                                                             \
    const T m = MAX(xr, c);                                                                         \
    double s = 0;                                                                                   \
    int64_t k;                                                                                      \
    if (g) { /* each exp once: kept in g until the sum is known */                                 \
      for (k = 0; k < c; k++) s += g[k] = EXP(xr[k] - m);                                           \
      for (k = 0; k < c; k++)                                                                       \
        g[k] = ok ? (T)((g[k] / s - (k == lab ? 1.0 : 0.0)) * scale) : (T)NAN;                      \
    } else                                                                                          \
      for (k = 0; k < c; k++) s += EXP(xr[k] - m);                                                  \
    return ok ? log(s) + (double)m - (double)xr[lab] : NAN;                                         \
  }
DT__XENT_ROW_DEFINE(dt__xent_row_f32, float, expf, dt__row_max_f32)
DT__XENT_ROW_DEFINE(dt__xent_row_f64, double, exp, dt__row_max_f64)
#undef DT__XENT_ROW_DEFINE

/* row i of the job; g: the gradient's base (NULL: the loss only) */
static double dt__xent_row(const dt__xent_job *j, int64_t i, void *g, double scale) {
  const int64_t lab = j->target[i];
  if (j->t == DT_F32)
    return dt__xent_row_f32((const float *)j->x + i * j->c, j->c, lab, g ? (float *)g + i * j->c : NULL, scale);
  return dt__xent_row_f64((const double *)j->x + i * j->c, j->c, lab, g ? (double *)g + i * j->c : NULL, scale);
}

/* F32 rows [lo, hi): the sum of their losses and, with g (the gradient's base), their gradient
   rows, as dt__xent_row_f32 gives them but with the exps of a block of rows taken at once by the
   vector exp (expf one element at a time was most of a training step's loss). */
#define DT__XENT_BLOCK 1024 /* elements */
static double dt__xent_rows_f32(const dt__xent_job *j, int64_t lo, int64_t hi, float *g, double scale) {
  const int64_t c = j->c;
  const float *x = (const float *)j->x;
  const dt__map_fn vexp = dt__ew_kernels()->exp_f32;
  float buf[DT__XENT_BLOCK], mx[DT__XENT_BLOCK];
  double acc = 0;
  int64_t r0, r1, r, k;
  if (c > DT__XENT_BLOCK) { /* wide rows: one at a time */
    for (r = lo; r < hi; r++) acc += dt__xent_row_f32(x + r * c, c, j->target[r], g ? g + r * c : NULL, scale);
    return acc;
  }
  for (r0 = lo; r0 < hi; r0 = r1) {
    float *e = g ? g + r0 * c : buf; /* x - max, then its exp, then (with g) the gradient */
    r1 = r0 + DT__XENT_BLOCK / c < hi ? r0 + DT__XENT_BLOCK / c : hi;
    for (r = r0; r < r1; r++) {
      const float *xr = x + r * c;
      const float m = dt__row_max_f32(xr, c);
      mx[r - r0] = m;
      for (k = 0; k < c; k++) e[(r - r0) * c + k] = xr[k] - m;
    }
    vexp((r1 - r0) * c, e, e, 0, 0);
    for (r = r0; r < r1; r++) {
      const int64_t lab = j->target[r];
      const int ok = lab >= 0 && lab < c;
      float *er = e + (r - r0) * c;
      double s = 0, inv;
      for (k = 0; k < c; k++) s += er[k];
      inv = 1.0 / s;
      if (g)
        for (k = 0; k < c; k++) er[k] = ok ? (float)((er[k] * inv - (k == lab ? 1.0 : 0.0)) * scale) : NAN;
      acc += ok ? log(s) + (double)mx[r - r0] - (double)x[r * c + lab] : NAN;
    }
  }
  return acc;
}

static void dt__xent_task_grad(void *ctx, int64_t lo, int64_t hi) {
  const dt__xent_job *j = (const dt__xent_job *)ctx;
  int64_t i;
  if (j->t == DT_F32) {
    (void)dt__xent_rows_f32(j, lo, hi, (float *)j->y, 1.0 / (double)j->n);
    return;
  }
  for (i = lo; i < hi; i++) (void)dt__xent_row(j, i, j->y, 1.0 / (double)j->n);
}

/* items are blocks of rows; each block's losses summed in order */
static void dt__xent_task_loss(void *ctx, int64_t lo, int64_t hi) {
  const dt__xent_job *j = (const dt__xent_job *)ctx;
  int64_t b, i;
  for (b = lo; b < hi; b++) {
    int64_t r1 = (b + 1) * j->block < j->n ? (b + 1) * j->block : j->n;
    double acc = 0;
    if (j->t == DT_F32) acc = dt__xent_rows_f32(j, b * j->block, r1, NULL, 0);
    else
      for (i = b * j->block; i < r1; i++) acc += dt__xent_row(j, i, NULL, 0);
    j->part[b] = acc;
  }
}

static dt_status dt__cpu_cross_entropy(int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits,
                                       const int64_t *target, void *y) {
  dt__xent_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  if (n <= 0) return DT_OK;
  j.grad = grad; j.t = t; j.n = n; j.c = c; j.x = (const char *)logits; j.target = target; j.y = (char *)y; j.part = NULL;
  if (grad) {
    dt__par_for(n, (DT__GRAIN_MATH + c) / (c + 1), dt__xent_task_grad, &j);
  } else {
    double part[DT__RED_MAXBLOCKS], acc = 0;
    int64_t per = (DT__GRAIN_MATH + c) / (c + 1), nb, b;
    if (per * DT__RED_MAXBLOCKS < n) per = (n + DT__RED_MAXBLOCKS - 1) / DT__RED_MAXBLOCKS;
    j.block = per;
    nb = (n + per - 1) / per;
    j.part = part;
    dt__par_for(nb, 1, dt__xent_task_loss, &j);
    for (b = 0; b < nb; b++) acc += part[b];
    acc /= (double)n;
    if (t == DT_F32) *(float *)y = (float)acc;
    else *(double *)y = acc;
  }
  return DT_OK;
}
