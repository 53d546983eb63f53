/* Sums in double. x: (outer, len, inner) -> y: (outer, inner). A sum over contiguous elements
   (inner == 1) adds blocks of dt__red_block(len) elements, each as 16 partial sums
   (dt__sum16_fn) added pairwise, and then the blocks' sums in order; the blocks of one long
   row (outer == 1) go to the threads. Other shapes keep a double per output column and add
   the rows in order; the (outer, 256-column) tiles go to the threads. A half x gives the float32
   sums of its values, each rounded once to its dtype, without a float32 copy of it: each block
   is converted into a worker's buffer that the float32 kernel then reads (from cache), and a
   tile's rows DT__RED_HROWS at a time. */

#define DT__RED_MAXBLOCKS 1024

static int64_t dt__red_block(int64_t len) {
  int64_t b = 65536;
  if (len > b * DT__RED_MAXBLOCKS) b = ((len + DT__RED_MAXBLOCKS - 1) / DT__RED_MAXBLOCKS + 15) & ~(int64_t)15;
  return b;
}

/* What the reductions, arg reductions and softmax work on: x: (outer, len, inner) of t (F32 or
   F64) into y (arg reductions: the values, or NULL); a long row is cut in blocks of block elements. */
typedef struct dt__rows {
  dt_dtype t;
  int64_t outer, len, inner, block;
  const char *x;
  char *y;
} dt__rows;

static dt__rows dt__rows_of(dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__rows r;
  r.t = t; r.outer = outer; r.len = len; r.inner = inner; r.block = dt__red_block(len);
  r.x = (const char *)x; r.y = (char *)y;
  return r;
}

/* block b of the one row (outer == inner == 1): where it starts; its length in *n */
static const char *dt__rows_block(const dt__rows *r, int64_t b, int64_t *n) {
  const int64_t s = b * r->block;
  *n = r->len - s < r->block ? r->len - s : r->block;
  return r->x + (size_t)s * dt_dtype_size(r->t);
}

typedef struct dt__red_job {
  dt__rows r;
  dt__reduce_op op;
  dt__sum16_fn sum16;
  double *part;    /* outer == 1: one sum per block */
  dt__conv_fn in;  /* a half x: n of its elements to float (else NULL) */
  float *buf;      /* a half x, rows or blocks: bufn floats for each worker */
  int64_t bufn;
} dt__red_job;

/* the sum of block x (of j's dtype), n elements; buf: room for n floats where x is half */
static double dt__red_block_sum(const dt__red_job *j, const void *x, int64_t n, float *buf) {
  double a[16];
  int k;
  if (buf) {
    j->in(n, x, buf);
    x = buf;
  }
  j->sum16(n, x, j->op == DT__R_NORM, a);
  for (k = 0; k < 8; k++) a[k] += a[k + 8];
  for (k = 0; k < 4; k++) a[k] += a[k + 4];
  return (a[0] + a[2]) + (a[1] + a[3]);
}

static void dt__red_store(const dt__red_job *j, int64_t at, double v) {
  if (j->op == DT__R_MEAN) v = j->r.len ? v / (double)j->r.len : NAN;
  else if (j->op == DT__R_NORM) v = sqrt(v);
  if (j->r.t == DT_F32) ((float *)j->r.y)[at] = (float)v;
  else if (j->r.t == DT_F64) ((double *)j->r.y)[at] = v;
  else ((uint16_t *)j->r.y)[at] = dt__f32_to_half(j->r.t == DT_BF16, (float)v);
}

/* outer == 1, inner == 1: items are blocks */
static void dt__red_task_blocks(void *ctx, int64_t lo, int64_t hi, int w) {
  const dt__red_job *j = (const dt__red_job *)ctx;
  float *buf = j->buf ? j->buf + w * j->bufn : NULL;
  int64_t b, n;
  for (b = lo; b < hi; b++) {
    const char *x = dt__rows_block(&j->r, b, &n);
    j->part[b] = dt__red_block_sum(j, x, n, buf);
  }
}

/* inner == 1: items are rows */
static void dt__red_task_rows(void *ctx, int64_t lo, int64_t hi, int w) {
  const dt__red_job *j = (const dt__red_job *)ctx;
  float *buf = j->buf ? j->buf + w * j->bufn : NULL;
  size_t es = dt_dtype_size(j->r.t);
  int64_t o, s;
  for (o = lo; o < hi; o++) {
    double acc = 0;
    for (s = 0; s < j->r.len; s += j->r.block)
      acc += dt__red_block_sum(j, j->r.x + (size_t)(o * j->r.len + s) * es, j->r.len - s < j->r.block ? j->r.len - s : j->r.block,
                               buf);
    dt__red_store(j, o, acc);
  }
}

/* (outer, inner) split in tiles of DT__COL_TILE columns (inner > 1): item it is tile (o, columns
   i0 .. i0 + cnt). Narrower tiles (64 columns) give a (256, 256) column sum more tasks, but each
   takes nearly as long as a tile of 256, and two threads were slower than one. */
#define DT__COL_TILE 256
typedef struct dt__col_tile {
  int64_t o, i0, cnt;
} dt__col_tile;

static dt__col_tile dt__col_tile_of(int64_t it, int64_t inner) {
  const int64_t tiles = (inner + DT__COL_TILE - 1) / DT__COL_TILE;
  dt__col_tile c;
  c.o = it / tiles;
  c.i0 = it % tiles * DT__COL_TILE;
  c.cnt = inner - c.i0 < DT__COL_TILE ? inner - c.i0 : DT__COL_TILE;
  return c;
}

/* runs fn over the outer * tiles items, each of len * cnt elements, in chunks of about grain elements */
static void dt__par_col_tiles(int64_t outer, int64_t len, int64_t inner, int64_t grain, dt__task_fn fn, void *ctx) {
  int64_t tiles = (inner + DT__COL_TILE - 1) / DT__COL_TILE, per = (len ? len : 1) * (inner < DT__COL_TILE ? inner : DT__COL_TILE);
  dt__par_for(outer * tiles, (grain + per - 1) / per, fn, ctx);
}

/* acc[0 .. cnt) += the sums (of squares with norm) of the len rows x + r * inner, in row order */
#define DT__RED_COLS_DEFINE(NAME, T)                                                                \
  static void NAME(int norm, const T *x, int64_t len, int64_t inner, int64_t cnt, double *acc) {     \
    int64_t ic, r;                                                                                  \
    for (r = 0; r < len; r++) {                                                                     \
      const T *p = x + r * inner;                                                                   \
      if (norm) for (ic = 0; ic < cnt; ic++) acc[ic] += (double)p[ic] * p[ic];                      \
      else for (ic = 0; ic < cnt; ic++) acc[ic] += p[ic];                                           \
    }                                                                                               \
  }
DT__RED_COLS_DEFINE(dt__red_cols_f32, float)
DT__RED_COLS_DEFINE(dt__red_cols_f64, double)
#undef DT__RED_COLS_DEFINE

/* a half x: its tile's rows to float DT__RED_HROWS at a time, each added as float32's are */
#define DT__RED_HROWS 8
static void dt__red_cols_half(const dt__red_job *j, const uint16_t *x, int64_t cnt, float *buf, double *acc) {
  int64_t r0, r;
  for (r0 = 0; r0 < j->r.len; r0 += DT__RED_HROWS) {
    const int64_t nr = j->r.len - r0 < DT__RED_HROWS ? j->r.len - r0 : DT__RED_HROWS;
    for (r = 0; r < nr; r++) j->in(cnt, x + (r0 + r) * j->r.inner, buf + r * cnt);
    dt__red_cols_f32(j->op == DT__R_NORM, buf, nr, cnt, cnt, acc);
  }
}

/* inner > 1: items are (o, 256-column tile) pairs */
static void dt__red_task_cols(void *ctx, int64_t lo, int64_t hi) {
  const dt__red_job *j = (const dt__red_job *)ctx;
  const int norm = j->op == DT__R_NORM;
  int64_t it, ic;
  for (it = lo; it < hi; it++) {
    const dt__col_tile c = dt__col_tile_of(it, j->r.inner);
    const int64_t off = c.o * j->r.len * j->r.inner + c.i0;
    double acc[DT__COL_TILE];
    for (ic = 0; ic < c.cnt; ic++) acc[ic] = 0;
    if (j->in) {
      float buf[DT__RED_HROWS * DT__COL_TILE];
      dt__red_cols_half(j, (const uint16_t *)j->r.x + off, c.cnt, buf, acc);
    } else if (j->r.t == DT_F32) {
      dt__red_cols_f32(norm, (const float *)j->r.x + off, j->r.len, j->r.inner, c.cnt, acc);
    } else {
      dt__red_cols_f64(norm, (const double *)j->r.x + off, j->r.len, j->r.inner, c.cnt, acc);
    }
    for (ic = 0; ic < c.cnt; ic++) dt__red_store(j, c.o * j->r.inner + c.i0 + ic, acc[ic]);
  }
}

static dt_status dt__cpu_reduce(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__red_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64 && !dt__is_half(t)) return DT_ERR_DTYPE;
  j.r = dt__rows_of(t, outer, len, inner, x, y);
  j.op = op;
  j.sum16 = dt__ew_kernels()->sum16[t == DT_F64];
  j.part = NULL;
  j.in = dt__is_half(t) ? dt__hv_kernel(t == DT_BF16, 0) : NULL;
  j.buf = NULL;
  j.bufn = 0;
  if (outer <= 0 || inner <= 0) return DT_OK;
  if (inner == 1) {
    const int64_t nb = (len + j.r.block - 1) / j.r.block, items = outer == 1 ? nb : outer;
    const int nw = dt__cpu_threads() < items ? dt__cpu_threads() : (int)(items > 0 ? items : 1);
    size_t nbytes = 0;
    void *p = NULL;
    dt_status rc;
    if (j.in && len > 0) { /* a block of floats for each worker (the allocator's message on failure) */
      j.bufn = len < j.r.block ? len : j.r.block;
      nbytes = (size_t)nw * (size_t)j.bufn * sizeof(float);
      if ((rc = dt__cpu_alloc(0, nbytes, &p)) != DT_OK) return rc;
      j.buf = (float *)p;
    }
    if (outer == 1) {
      double part[DT__RED_MAXBLOCKS], acc = 0;
      int64_t b;
      j.part = part;
      dt__par_for_w(nb, 1, nw, dt__red_task_blocks, &j);
      for (b = 0; b < nb; b++) acc += part[b];
      dt__red_store(&j, 0, acc);
    } else {
      dt__par_for_w(outer, (DT__GRAIN_MEM + len - 1) / (len ? len : 1), nw, dt__red_task_rows, &j);
    }
    if (p) dt__cpu_free(0, p, nbytes);
  } else {
    dt__par_col_tiles(outer, len, inner, DT__GRAIN_MEM, dt__red_task_cols, &j);
  }
  return DT_OK;
}
