/* Convolution's im2col and col2im, and 2-d pooling with its backward, on the thread pool:
   im2col by rows of col, everything else by (image, channel) planes, so that each thread
   writes only its own planes and every sum runs in one fixed order (the same bits for any
   number of threads). The pooling backward passes gather: each input position sums the
   windows that hold it, so nothing is scattered and a bogus max index is never followed.
   Pooling sums in double; the inner loops (a row of im2col or col2im, a pooling window) are
   typed, the rest reads and writes through dt__cv_get/dt__cv_set (F32 or F64 by a flag). */

/* the output rows (or columns) whose windows [o s - p, o s - p + k) hold input position i: [*lo, *hi) within [0, on) */
static void dt__pool_span(int64_t i, int64_t k, int64_t s, int64_t p, int64_t on, int64_t *lo, int64_t *hi) {
  int64_t a = i + p - k + 1, b = (i + p) / s + 1;
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  *hi = b < on ? b : on;
}
/* adaptive pooling: window o of `in` positions over `on` outputs is [start, end), as PyTorch's */
static int64_t dt__adapt_start(int64_t o, int64_t in, int64_t on) { return (o / on) * in + ((o % on) * in) / on; }
static int64_t dt__adapt_end(int64_t o, int64_t in, int64_t on) { return 1 + ((o + 1) * in - 1) / on; }
/* avg pooling's divisor for the window from a (a row or column, padding counted) of k, clipped to n + p */
static int64_t dt__avg_extent(int64_t a, int64_t k, int64_t n, int64_t p) { return (a + k < n + p ? a + k : n + p) - a; }

static double dt__cv_get(int dbl, const void *p, int64_t i) { return dbl ? ((const double *)p)[i] : (double)((const float *)p)[i]; }
static void dt__cv_set(int dbl, void *p, int64_t i, double v) {
  if (dbl) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v;
}

typedef struct dt__conv_job {
  int dbl;                   /* F64, else F32 */
  int64_t nimg;              /* im2col and col2im: the images in col */
  const dt__conv2d *g;
  const dt__pool2d *p;
  const void *x;
  void *y;
  const int64_t *idx;        /* pool2d_backward's (max) */
  int64_t *idx_out;          /* pool2d's (max) */
} dt__conv_job;

/* the columns ox in [*a, *b) of an output row whose input column ox sw + x0 is within [0, w) */
static void dt__col_span(int64_t ow, int64_t sw, int64_t x0, int64_t w, int64_t *a, int64_t *b) {
  *a = x0 >= 0 ? 0 : (-x0 + sw - 1) / sw;
  *b = w - 1 - x0 < 0 ? 0 : (w - 1 - x0) / sw + 1;
  if (*b > ow) *b = ow;
  if (*a > *b) *a = *b;
}
/* one output row of col: row[ox] = xrow[ox sw + x0] on [a, b) (dt__col_span's), else 0; at unit
   stride in 16-byte pieces, which compilers copy with a vector move each (a call to memcpy per
   row cost more than the copy: rows are a few dozen elements) */
#define DT__IM2COL_ROW_DEFINE(NAME, T)                                                              \
  static void NAME(T *row, const T *xrow, int64_t ow, int64_t sw, int64_t x0, int64_t a, int64_t b) { \
    enum { P = 16 / sizeof(T) };                                                                    \
    int64_t ox = 0;                                                                                 \
    for (; ox < a; ox++) row[ox] = 0;                                                               \
    if (sw == 1) {                                                                                  \
      const T *src = xrow + x0;                                                                     \
      for (; ox + P <= b; ox += P) memcpy(row + ox, src + ox, 16);                                  \
      for (; ox < b; ox++) row[ox] = src[ox];                                                       \
    } else                                                                                          \
      for (; ox < b; ox++) row[ox] = xrow[ox * sw + x0];                                            \
    for (; ox < ow; ox++) row[ox] = 0;                                                              \
  }
DT__IM2COL_ROW_DEFINE(dt__im2col_row_f32, float)
DT__IM2COL_ROW_DEFINE(dt__im2col_row_f64, double)
#undef DT__IM2COL_ROW_DEFINE
/* its adjoint: xrow[ox sw + x0] += row[ox] on [a, b); at unit stride on vectors of 16 bytes */
#define DT__COL2IM_ROW_DEFINE(NAME, T, V)                                                           \
  static void NAME(const T *row, T *xrow, int64_t sw, int64_t x0, int64_t a, int64_t b) {           \
    enum { P = sizeof(V) / sizeof(T) };                                                             \
    int64_t ox = a;                                                                                 \
    if (sw == 1) {                                                                                  \
      T *dst = xrow + x0;                                                                           \
      for (; ox + P <= b; ox += P) {                                                                \
        V u, v;                                                                                     \
        memcpy(&u, dst + ox, sizeof u);                                                             \
        memcpy(&v, row + ox, sizeof v);                                                             \
        u += v;                                                                                     \
        memcpy(dst + ox, &u, sizeof u);                                                             \
      }                                                                                             \
      for (; ox < b; ox++) dst[ox] += row[ox];                                                      \
    } else                                                                                          \
      for (; ox < b; ox++) xrow[ox * sw + x0] += row[ox];                                           \
  }
DT__COL2IM_ROW_DEFINE(dt__col2im_row_f32, float, dt__vf_base)
DT__COL2IM_ROW_DEFINE(dt__col2im_row_f64, double, dt__vd_base)
#undef DT__COL2IM_ROW_DEFINE

/* a pooling window's sum in double: plane xp (w columns), rows [y0, y1), columns [x0, x1) */
static double dt__window_sum_f32(const float *xp, int64_t w, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  double s = 0;
  int64_t iy, ix;
  for (iy = y0; iy < y1; iy++)
    for (ix = x0; ix < x1; ix++) s += (double)xp[iy * w + ix];
  return s;
}
static double dt__window_sum_f64(const double *xp, int64_t w, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  double s = 0;
  int64_t iy, ix;
  for (iy = y0; iy < y1; iy++)
    for (ix = x0; ix < x1; ix++) s += xp[iy * w + ix];
  return s;
}

/* column e of a block of rows output rows of ow elements (F64 or F32), zeroed */
static void dt__im2col_zero_col(int dbl, char *blk, int64_t ow, int64_t rows, int64_t e) {
  int64_t oy;
  if (dbl)
    for (oy = 0; oy < rows; oy++) ((double *)blk)[oy * ow + e] = 0;
  else
    for (oy = 0; oy < rows; oy++) ((float *)blk)[oy * ow + e] = 0;
}

/* rows [lo, hi) of col: (c kh kw, nimg, oh ow), row q = (tap r, image i), from x: (nimg, c, h, w).
   The rows of one tap are taken together: a tap that reads only padding is one memset; the output
   rows [y0, y1) that read the image, the rest zeros. Where a row of the output is as wide as the
   image at unit strides (a "same" convolution, or a 1x1 one), the output row oy reads input row
   oy + dy shifted by x0 columns for every oy, so those rows are one copy of consecutive input,
   whose (at most |x0|) columns that fell outside the image are then zeroed. */
static void dt__im2col_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__conv_job *j = (const dt__conv_job *)ctx;
  const dt__conv2d *g = j->g;
  const size_t es = j->dbl ? sizeof(double) : sizeof(float);
  const int64_t kk = g->kh * g->kw, l = g->oh * g->ow, hw = g->h * g->w;
  const int shifted = g->sw == 1 && g->sh == 1 && g->ow == g->w;
  int64_t q = lo, oy, e;
  while (q < hi) {
    const int64_t r = q / j->nimg, ch = r / kk, tap = g->flip ? kk - 1 - r % kk : r % kk, ki = tap / g->kw, kj = tap % g->kw;
    const int64_t qe = (r + 1) * j->nimg < hi ? (r + 1) * j->nimg : hi;
    const int64_t x0 = kj * g->dw - g->pw, dy = ki * g->dh - g->ph;
    int64_t a, b, y0, y1, i = q % j->nimg;
    char *row = (char *)j->y + (size_t)(q * l) * es;
    dt__col_span(g->ow, g->sw, x0, g->w, &a, &b);
    dt__col_span(g->oh, g->sh, dy, g->h, &y0, &y1);
    if (a >= b || y0 >= y1) { /* the tap reads only padding */
      memset(row, 0, (size_t)((qe - q) * l) * es);
      q = qe;
      continue;
    }
    for (; q < qe; q++, i++, row += (size_t)l * es) {
      const char *xp = (const char *)j->x + (size_t)((i * g->c + ch) * hw) * es;
      if (y0 > 0) memset(row, 0, (size_t)(y0 * g->ow) * es);
      if (shifted) { /* elements [a, (y1 - y0) ow - (ow - b)) of the block, from input (y0 + dy) w + x0 on */
        const int64_t n = (y1 - y0) * g->ow - (g->ow - b) - a;
        char *blk = row + (size_t)(y0 * g->ow) * es;
        memcpy(blk + (size_t)a * es, xp + (size_t)((y0 + dy) * g->w + x0 + a) * es, (size_t)n * es);
        /* the edge columns, column by column down the block (a few elements each: as calls to
           memset, one or two per output row, they cost more than the copy) */
        for (e = 0; e < a; e++) dt__im2col_zero_col(j->dbl, blk, g->ow, y1 - y0, e);
        for (e = b; e < g->ow; e++) dt__im2col_zero_col(j->dbl, blk, g->ow, y1 - y0, e);
      } else
        for (oy = y0; oy < y1; oy++) {
          char *dst = row + (size_t)(oy * g->ow) * es;
          const int64_t iy = oy * g->sh + dy;
          if (j->dbl) dt__im2col_row_f64((double *)dst, (const double *)xp + iy * g->w, g->ow, g->sw, x0, a, b);
          else dt__im2col_row_f32((float *)dst, (const float *)xp + iy * g->w, g->ow, g->sw, x0, a, b);
        }
      if (y1 < g->oh) memset(row + (size_t)(y1 * g->ow) * es, 0, (size_t)((g->oh - y1) * g->ow) * es);
    }
  }
}

/* planes [lo, hi) of x: (nimg, c, h, w), each the sum of its entries of col: (c kh kw, nimg, oh ow),
   tap after tap; rows that read only padding are skipped, and where im2col copied a tap's rows as
   one block (see above) they are added back as one run per output row */
static void dt__col2im_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__conv_job *j = (const dt__conv_job *)ctx;
  const dt__conv2d *g = j->g;
  const size_t es = j->dbl ? sizeof(double) : sizeof(float);
  const int64_t kk = g->kh * g->kw, l = g->oh * g->ow;
  int64_t plane, k, oy;
  for (plane = lo; plane < hi; plane++) {
    const int64_t i = plane / g->c, ch = plane % g->c;
    char *xp = (char *)j->y + (size_t)(plane * g->h * g->w) * es;
    memset(xp, 0, (size_t)(g->h * g->w) * es);
    for (k = 0; k < kk; k++) {
      const int64_t ki = k / g->kw, kj = k % g->kw, x0 = kj * g->dw - g->pw, dy = ki * g->dh - g->ph;
      const char *row = (const char *)j->x + (size_t)(((ch * kk + k) * j->nimg + i) * l) * es;
      int64_t a, b, y0, y1;
      dt__col_span(g->ow, g->sw, x0, g->w, &a, &b);
      dt__col_span(g->oh, g->sh, dy, g->h, &y0, &y1);
      if (a >= b) continue;
      if (g->sw == 1 && g->sh == 1 && g->ow == g->w && a == 0 && b == g->ow) { /* whole rows: one run */
        const int64_t n = (y1 - y0) * g->ow;
        if (n <= 0) continue;
        if (j->dbl) dt__col2im_row_f64((const double *)row + y0 * g->ow, (double *)xp + (y0 + dy) * g->w, 1, 0, 0, n);
        else dt__col2im_row_f32((const float *)row + y0 * g->ow, (float *)xp + (y0 + dy) * g->w, 1, 0, 0, n);
        continue;
      }
      for (oy = y0; oy < y1; oy++) {
        const int64_t iy = oy * g->sh + dy;
        const char *rr = row + (size_t)(oy * g->ow) * es;
        if (j->dbl) dt__col2im_row_f64((const double *)rr, (double *)xp + iy * g->w, g->sw, x0, a, b);
        else dt__col2im_row_f32((const float *)rr, (float *)xp + iy * g->w, g->sw, x0, a, b);
      }
    }
  }
}

/* Max pooling of a float32 plane, a vector of output columns at a time, from a copy of the plane
   in column phases: phase r (of sw) holds, for each input row, the columns j sw + r - pw for j in
   [0, nc), -inf where that is beyond the plane. Tap kx of output column ox is then column ox +
   kx / sw of phase kx % sw, so a vector of consecutive outputs reads consecutive floats, and every
   window has kw taps: the padding's -inf never beats (nor is NaN), so each lane takes the taps of
   its window clipped to the plane in the scalar loop's order with its rule (v > best or v NaN),
   best from -inf, the index from the first tap within the plane: values and indices are the
   scalar loop's, bit for bit. Indices are carried as int32 (the plane holds fewer than 2^31
   positions). The widest vectors first, then narrower ones; the last columns of a row are done as
   4 from ow - 4 (an output is its window's alone: those done twice get the same value), so ow >= 4.
   buf: sw h nc floats. */
typedef void (*dt__pool_vplane_fn)(const dt__pool2d *p, const float *xp, float *yp, int64_t *ip, float *buf);
/* W lanes of VF (int32 lanes VS) at a time from output column ox on */
#define DT__POOL_VLANES(VF, VS)                                                                     \
  for (; ox + (int64_t)(sizeof(VF) / sizeof(float)) <= p->ow; ox += (int64_t)(sizeof(VF) / sizeof(float))) { \
    const VS vz = {0};                                                                              \
    VS lane = vz, b, at;                                                                            \
    VF best = (VF)vz - INFINITY;                                                                    \
    int k;                                                                                          \
    for (k = 0; k < (int)(sizeof(VF) / sizeof(float)); k++) lane[k] = k;                            \
    b = vz + (int32_t)(ox * p->sw - p->pw) + lane * (int32_t)p->sw; /* each window's first column */ \
    at = vz + (int32_t)(y0 * p->w) + (b & ~(VS)(b < vz));                                           \
    for (iy = y0; iy < y1; iy++)                                                                    \
      for (kx = 0; kx < p->kw; kx++) {                                                              \
        VF v;                                                                                       \
        VS m;                                                                                       \
        memcpy(&v, buf + ((kx % p->sw) * p->h + iy) * nc + ox + kx / p->sw, sizeof v);              \
        m = (VS)(v > best) | (VS)(v != v);                                                          \
        best = (VF)(((VS)v & m) | ((VS)best & ~m));                                                 \
        at = ((b + (int32_t)(iy * p->w + kx)) & m) | (at & ~m);                                     \
      }                                                                                             \
    memcpy(yp + oy * p->ow + ox, &best, sizeof best);                                               \
    if (ip)                                                                                         \
      for (k = 0; k < (int)(sizeof(VF) / sizeof(float)); k++) ip[oy * p->ow + ox + k] = at[k];     \
  }
#define DT__POOL_VPLANE_DEFINE(NAME, ATTR, LANES, LANES4)                                           \
  ATTR static void NAME(const dt__pool2d *p, const float *xp, float *yp, int64_t *ip, float *buf) { \
    const int64_t nc = p->ow + (p->kw - 1) / p->sw;                                                 \
    int64_t r, iy, j, oy, ox, kx;                                                                   \
    for (r = 0; r < p->sw; r++)                                                                     \
      for (iy = 0; iy < p->h; iy++) {                                                               \
        float *row = buf + (r * p->h + iy) * nc;                                                    \
        for (j = 0; j < nc; j++) {                                                                  \
          const int64_t col = j * p->sw + r - p->pw;                                                \
          row[j] = col >= 0 && col < p->w ? xp[iy * p->w + col] : -INFINITY;                        \
        }                                                                                           \
      }                                                                                             \
    for (oy = 0; oy < p->oh; oy++) {                                                                \
      const int64_t a = oy * p->sh - p->ph, y0 = a < 0 ? 0 : a, y1 = a + p->kh < p->h ? a + p->kh : p->h; \
      ox = 0;                                                                                       \
      LANES                                                                                         \
      if (ox < p->ow) { /* the last 4 columns again, those before them as they were */             \
        ox = p->ow - 4;                                                                             \
        LANES4                                                                                      \
      }                                                                                             \
    }                                                                                               \
  }
typedef int32_t dt__vm_base __attribute__((vector_size(16)));
DT__POOL_VPLANE_DEFINE(dt__pool_vplane_base, DT__TARGET_BASE, DT__POOL_VLANES(dt__vf_base, dt__vm_base),
                       DT__POOL_VLANES(dt__vf_base, dt__vm_base))
#if DT__EW_X86
typedef int32_t dt__vm_avx2 __attribute__((vector_size(32)));
typedef int32_t dt__vm_avx512 __attribute__((vector_size(64)));
DT__POOL_VPLANE_DEFINE(dt__pool_vplane_avx2, DT__TARGET_AVX2,
                       DT__POOL_VLANES(dt__vf_avx2, dt__vm_avx2) DT__POOL_VLANES(dt__vf_base, dt__vm_base),
                       DT__POOL_VLANES(dt__vf_base, dt__vm_base))
DT__POOL_VPLANE_DEFINE(dt__pool_vplane_avx512, DT__TARGET_AVX512,
                       DT__POOL_VLANES(dt__vf_avx512, dt__vm_avx512) DT__POOL_VLANES(dt__vf_avx2, dt__vm_avx2)
                       DT__POOL_VLANES(dt__vf_base, dt__vm_base),
                       DT__POOL_VLANES(dt__vf_base, dt__vm_base))
#endif
#undef DT__POOL_VPLANE_DEFINE
#undef DT__POOL_VLANES
/* the floats dt__pool_vplane's functions take as buf for one of p's planes */
static int64_t dt__pool_vplane_floats(const dt__pool2d *p) { return p->sw * p->h * (p->ow + (p->kw - 1) / p->sw); }
/* the most floats of a plane's copy: on the stack of the task (as the backward's DT__POOL_ACC) */
#define DT__POOL_VBUF 4096
/* the plane function for p, or NULL: float32 max pooling with output rows of 4 columns or more,
   a kernel no wider than the plane (so the copy holds at most about three planes) and a copy of
   at most DT__POOL_VBUF floats (larger planes take the scalar loop), positions with the padding
   within int32 */
static dt__pool_vplane_fn dt__pool_vplane(const dt__pool2d *p) {
  if (p->kind != DT__POOL2D_MAX || p->ow < 4 || p->kw > p->w || dt__pool_vplane_floats(p) > DT__POOL_VBUF ||
      p->h * p->w + 2 * (p->kw + p->pw) > (int64_t)INT32_MAX)
    return NULL;
#if DT__EW_X86
  switch (dt__ew_isa()) {
    case DT__EW_AVX512: return dt__pool_vplane_avx512;
    case DT__EW_AVX2: return dt__pool_vplane_avx2;
    default: break;
  }
#endif
  return dt__pool_vplane_base;
}
/* max and average pooling of one plane, typed: each window clipped to the plane, the average
   divided by its size clipped to (h + ph, w + pw) only (count_include_pad); the max the first
   one, NaN winning (the last NaN), and where */
#define DT__POOL_PLANE_DEFINE(NAME, T)                                                              \
  static void NAME(const dt__pool2d *p, const T *xp, T *yp, int64_t *ip) {                          \
    int64_t oy, ox, iy, ix;                                                                         \
    for (oy = 0; oy < p->oh; oy++) {                                                                \
      const int64_t a = oy * p->sh - p->ph, y0 = a < 0 ? 0 : a, y1 = a + p->kh < p->h ? a + p->kh : p->h; \
      const int64_t ey = dt__avg_extent(a, p->kh, p->h, p->ph);                                     \
      for (ox = 0; ox < p->ow; ox++) {                                                              \
        const int64_t b = ox * p->sw - p->pw, x0 = b < 0 ? 0 : b, x1 = b + p->kw < p->w ? b + p->kw : p->w; \
        if (p->kind == DT__POOL2D_MAX) {                                                            \
          T best = -INFINITY;                                                                       \
          int64_t at = y0 * p->w + x0;                                                              \
          for (iy = y0; iy < y1; iy++)                                                              \
            for (ix = x0; ix < x1; ix++) {                                                          \
              const T v = xp[iy * p->w + ix];                                                       \
              const int beats = v > best || v != v; /* GCC branches; masks were slower */           \
              best = beats ? v : best;                                                              \
              at = beats ? iy * p->w + ix : at;                                                     \
            }                                                                                       \
          yp[oy * p->ow + ox] = best;                                                               \
          if (ip) ip[oy * p->ow + ox] = at;                                                         \
        } else {                                                                                    \
          double sum = 0;                                                                           \
          for (iy = y0; iy < y1; iy++)                                                              \
            for (ix = x0; ix < x1; ix++) sum += (double)xp[iy * p->w + ix];                         \
          yp[oy * p->ow + ox] = (T)(sum / (double)(ey * dt__avg_extent(b, p->kw, p->w, p->pw)));    \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }
DT__POOL_PLANE_DEFINE(dt__pool_plane_f32, float)
DT__POOL_PLANE_DEFINE(dt__pool_plane_f64, double)
#undef DT__POOL_PLANE_DEFINE

/* planes [lo, hi) of y: (n, c, oh, ow) (and idx for max) from x: (n, c, h, w) */
static void dt__pool_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__conv_job *j = (const dt__conv_job *)ctx;
  const dt__pool2d *p = j->p;
  const int dbl = j->dbl;
  const dt__pool_vplane_fn vplane = dbl ? NULL : dt__pool_vplane(p);
  float buf[DT__POOL_VBUF]; /* vplane's copy of a plane */
  int64_t plane, oy, ox;
  for (plane = lo; plane < hi; plane++) {
    const int64_t xo = plane * p->h * p->w, yo = plane * p->oh * p->ow;
    if (p->kind != DT__POOL2D_ADAPTIVE_AVG) {
      int64_t *ip = j->idx_out ? j->idx_out + yo : NULL;
      if (vplane) vplane(p, (const float *)j->x + xo, (float *)j->y + yo, ip, buf);
      else if (dbl) dt__pool_plane_f64(p, (const double *)j->x + xo, (double *)j->y + yo, ip);
      else dt__pool_plane_f32(p, (const float *)j->x + xo, (float *)j->y + yo, ip);
      continue;
    }
    for (oy = 0; oy < p->oh; oy++)
      for (ox = 0; ox < p->ow; ox++) {
        const int64_t y0 = dt__adapt_start(oy, p->h, p->oh), y1 = dt__adapt_end(oy, p->h, p->oh);
        const int64_t x0 = dt__adapt_start(ox, p->w, p->ow), x1 = dt__adapt_end(ox, p->w, p->ow);
        const double s = dbl ? dt__window_sum_f64((const double *)j->x + xo, p->w, y0, y1, x0, x1)
                             : dt__window_sum_f32((const float *)j->x + xo, p->w, y0, y1, x0, x1);
        dt__cv_set(dbl, j->y, yo + oy * p->ow + ox, s / (double)((y1 - y0) * (x1 - x0)));
      }
  }
}

/* windows that do not overlap (stride >= kernel) and no padding: each input position is in one
   window at most, so each window writes its own positions (those in none stay 0), with the bits of
   the general gather below (a sum from 0 in double of the one term) */
static int dt__pool_disjoint(const dt__pool2d *p) {
  return p->kind != DT__POOL2D_ADAPTIVE_AVG && p->sh >= p->kh && p->sw >= p->kw && p->ph == 0 && p->pw == 0;
}
#define DT__POOL_BACK_DISJOINT_DEFINE(NAME, T)                                                      \
  static void NAME(const dt__pool2d *p, const T *gy, const int64_t *idx, T *gx, int64_t plane) {    \
    const int64_t xo = plane * p->h * p->w, yo = plane * p->oh * p->ow;                             \
    int64_t oy, ox, iy, ix;                                                                         \
    T *xp = gx + xo;                                                                                \
    memset(xp, 0, sizeof(T) * (size_t)(p->h * p->w));                                               \
    for (oy = 0; oy < p->oh; oy++)                                                                  \
      for (ox = 0; ox < p->ow; ox++) {                                                              \
        const int64_t o = yo + oy * p->ow + ox, y0 = oy * p->sh, x0 = ox * p->sw;                   \
        if (p->kind == DT__POOL2D_MAX) {                                                            \
          const int64_t at = idx[o];                                                                \
          const T v = (T)(0.0 + (double)gy[o]);                                                     \
          for (iy = y0; iy < y0 + p->kh; iy++)                                                      \
            for (ix = x0; ix < x0 + p->kw; ix++)                                                    \
              if (at == iy * p->w + ix) xp[at] = v;                                                 \
        } else {                                                                                    \
          const T v = (T)(0.0 + (double)gy[o] / (double)(dt__avg_extent(y0, p->kh, p->h, 0) *       \
                                                          dt__avg_extent(x0, p->kw, p->w, 0)));     \
          for (iy = y0; iy < y0 + p->kh; iy++)                                                      \
            for (ix = x0; ix < x0 + p->kw; ix++) xp[iy * p->w + ix] = v;                            \
        }                                                                                           \
      }                                                                                             \
  }
DT__POOL_BACK_DISJOINT_DEFINE(dt__pool_back_disjoint_f32, float)
DT__POOL_BACK_DISJOINT_DEFINE(dt__pool_back_disjoint_f64, double)
#undef DT__POOL_BACK_DISJOINT_DEFINE

/* max pooling's backward of one plane whose windows overlap, as the gather below computes it
   (each input position the sum in double, from 0, of the gradients of the windows whose max it
   is, in the windows' order) but scattering: each window adds its gradient to the position its
   index names, where that is inside the window. Bands of input rows are summed in acc, the
   output rows whose windows reach into the band visited in order. Planes wider than acc take
   the gather (returns 0). */
#define DT__POOL_ACC 2048
#define DT__POOL_BACK_MAX_DEFINE(NAME, T)                                                           \
  static int NAME(const dt__pool2d *p, const T *gy, const int64_t *idx, T *gx, int64_t plane) {     \
    double acc[DT__POOL_ACC];                                                                       \
    const int64_t band = DT__POOL_ACC / p->w, yo = plane * p->oh * p->ow;                           \
    int64_t r0, t, oy, ox, o0, o1, e0, e1;                                                          \
    T *xp = gx + plane * p->h * p->w;                                                               \
    if (band < 1) return 0;                                                                         \
    for (r0 = 0; r0 < p->h; r0 += band) {                                                           \
      const int64_t r1 = r0 + band < p->h ? r0 + band : p->h;                                       \
      for (t = 0; t < (r1 - r0) * p->w; t++) acc[t] = 0;                                            \
      dt__pool_span(r0, p->kh, p->sh, p->ph, p->oh, &o0, &e0);                                      \
      dt__pool_span(r1 - 1, p->kh, p->sh, p->ph, p->oh, &e1, &o1);                                  \
      for (oy = o0; oy < o1; oy++) {                                                                \
        const int64_t wy = oy * p->sh - p->ph;                                                      \
        for (ox = 0; ox < p->ow; ox++) {                                                            \
          const int64_t o = yo + oy * p->ow + ox, at = idx[o], wx = ox * p->sw - p->pw;              \
          int64_t iy, ix;                                                                           \
          if (at < r0 * p->w || at >= r1 * p->w) continue;                                          \
          iy = at / p->w; ix = at - iy * p->w;                                                      \
          if (iy < wy || iy >= wy + p->kh || ix < wx || ix >= wx + p->kw) continue;                 \
          acc[at - r0 * p->w] += (double)gy[o];                                                     \
        }                                                                                           \
      }                                                                                             \
      for (t = 0; t < (r1 - r0) * p->w; t++) xp[r0 * p->w + t] = (T)acc[t];                         \
    }                                                                                               \
    (void)e0; (void)e1;                                                                             \
    return 1;                                                                                       \
  }
DT__POOL_BACK_MAX_DEFINE(dt__pool_back_max_f32, float)
DT__POOL_BACK_MAX_DEFINE(dt__pool_back_max_f64, double)
#undef DT__POOL_BACK_MAX_DEFINE

/* planes [lo, hi) of gx: (n, c, h, w) from gy: (n, c, oh, ow) (and idx for max) */
static void dt__pool_back_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__conv_job *j = (const dt__conv_job *)ctx;
  const dt__pool2d *p = j->p;
  const int dbl = j->dbl;
  int64_t plane, oy, ox, iy, ix;
  if (dt__pool_disjoint(p)) {
    for (plane = lo; plane < hi; plane++)
      if (dbl) dt__pool_back_disjoint_f64(p, (const double *)j->x, j->idx, (double *)j->y, plane);
      else dt__pool_back_disjoint_f32(p, (const float *)j->x, j->idx, (float *)j->y, plane);
    return;
  }
  for (plane = lo; plane < hi; plane++) {
    const int64_t xo = plane * p->h * p->w, yo = plane * p->oh * p->ow;
    if (p->kind == DT__POOL2D_MAX &&
        (dbl ? dt__pool_back_max_f64(p, (const double *)j->x, j->idx, (double *)j->y, plane)
             : dt__pool_back_max_f32(p, (const float *)j->x, j->idx, (float *)j->y, plane)))
      continue;
    for (iy = 0; iy < p->h; iy++)
      for (ix = 0; ix < p->w; ix++) {
        int64_t y0, y1, x0, x1;
        double s = 0;
        if (p->kind == DT__POOL2D_ADAPTIVE_AVG) {
          y0 = iy * p->oh / p->h; y1 = ((iy + 1) * p->oh + p->h - 1) / p->h;
          x0 = ix * p->ow / p->w; x1 = ((ix + 1) * p->ow + p->w - 1) / p->w;
          if (y1 > p->oh) y1 = p->oh;
          if (x1 > p->ow) x1 = p->ow;
        } else {
          dt__pool_span(iy, p->kh, p->sh, p->ph, p->oh, &y0, &y1);
          dt__pool_span(ix, p->kw, p->sw, p->pw, p->ow, &x0, &x1);
        }
        for (oy = y0; oy < y1; oy++)
          for (ox = x0; ox < x1; ox++) {
            const int64_t o = yo + oy * p->ow + ox;
            if (p->kind == DT__POOL2D_MAX) {
              if (j->idx[o] == iy * p->w + ix) s += dt__cv_get(dbl, j->x, o);
            } else if (p->kind == DT__POOL2D_AVG) {
              s += dt__cv_get(dbl, j->x, o) / (double)(dt__avg_extent(oy * p->sh - p->ph, p->kh, p->h, p->ph) *
                                                       dt__avg_extent(ox * p->sw - p->pw, p->kw, p->w, p->pw));
            } else {
              const int64_t a = dt__adapt_start(oy, p->h, p->oh), e = dt__adapt_end(oy, p->h, p->oh);
              const int64_t b = dt__adapt_start(ox, p->w, p->ow), f = dt__adapt_end(ox, p->w, p->ow);
              if (iy >= a && iy < e && ix >= b && ix < f) s += dt__cv_get(dbl, j->x, o) / (double)((e - a) * (f - b));
            }
          }
        dt__cv_set(dbl, j->y, xo + iy * p->w + ix, s);
      }
  }
}

static dt_status dt__cpu_conv_job(const char *what, dt_dtype t, dt__conv_job *j) {
  memset(j, 0, sizeof *j);
  j->dbl = t == DT_F64;
  if (t == DT_F32 || t == DT_F64) return DT_OK;
  snprintf(dt__cpu_err, sizeof dt__cpu_err, "%s is not defined for %s", what, dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

/* items of about `work` elements each, in chunks of some DT__GRAIN_MEM elements */
static int64_t dt__conv_grain(int64_t work) { return work >= DT__GRAIN_MEM ? 1 : (DT__GRAIN_MEM + work - 1) / (work > 0 ? work : 1); }

static dt_status dt__cpu_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  dt__conv_job j;
  (void)dev;
  if (dt__cpu_conv_job("im2col", t, &j) != DT_OK) return DT_ERR_DTYPE;
  j.g = g; j.x = x; j.y = col; j.nimg = nimg;
  dt__par_for(nimg * g->c * g->kh * g->kw, dt__conv_grain(g->oh * g->ow), dt__im2col_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  dt__conv_job j;
  (void)dev;
  if (dt__cpu_conv_job("col2im", t, &j) != DT_OK) return DT_ERR_DTYPE;
  j.g = g; j.x = col; j.y = x; j.nimg = nimg;
  dt__par_for(nimg * g->c, dt__conv_grain(g->kh * g->kw * g->oh * g->ow), dt__col2im_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  dt__conv_job j;
  (void)dev;
  if (dt__cpu_conv_job("pool2d", t, &j) != DT_OK) return DT_ERR_DTYPE;
  j.p = p; j.x = x; j.y = y; j.idx_out = p->kind == DT__POOL2D_MAX ? idx : NULL;
  dt__par_for(p->n * p->c, dt__conv_grain(p->h * p->w + p->oh * p->ow), dt__pool_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  dt__conv_job j;
  (void)dev;
  if (dt__cpu_conv_job("pool2d_backward", t, &j) != DT_OK) return DT_ERR_DTYPE;
  j.p = p; j.x = gy; j.y = gx; j.idx = idx;
  dt__par_for(p->n * p->c, dt__conv_grain(p->h * p->w + p->oh * p->ow), dt__pool_back_task, &j);
  return DT_OK;
}
