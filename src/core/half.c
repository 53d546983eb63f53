/* Half precision (float16, bfloat16) on every backend, for the kernels written for float32:
   dt__be hands the core a copy of the device's table whose dtype-taking kernels, given F16 or
   BF16, convert their operands to F32 temporaries on the device (the backend's own cast),
   run the F32 kernel and round each result once to the half dtype. That is what PyTorch does
   per element (its half ops compute in float: elementwise ops, comparisons, reductions
   accumulating in float, softmax); exact where F32 is (comparisons, max, argmax). Casts and
   fills take the half dtypes in each backend itself, and so does a backend's gemm where it
   says so (`half_gemm`: cuBLAS with F32 accumulation; on the CPU, a BF16 kernel where the CPU
   has the instructions, else this F32 route), and the elementwise unary and binary operations
   and comparisons: the same F32 operations on elements converted on the way (the CPU: blocks
   of a few hundred; CUDA: each element in its thread), so no temporaries of the operands'
   size; so do the CPU's reductions (a block at a time); softmax, arg reductions, nll_loss, pooling and
   axpy go a chunk of items at a time (below). The CUDA backend takes the half dtypes
   in every slot below itself, in one pass (src/cuda/half.cu: its kernels read a half element as
   float and round each result once), so its table is its own; the CPU's goes through the
   slots below. Other dtypes go straight through. */

typedef struct dt__hscratch {
  const dt__backend *be;
  int dev;
  void *p;
  size_t nbytes;
} dt__hscratch;

/* n floats of device memory, one allocation for a kernel's temporaries */
static dt_status dt__hscratch_get(dt__hscratch *s, const dt__backend *be, int dev, int64_t n) {
  s->be = be; s->dev = dev; s->p = NULL; s->nbytes = (size_t)n * sizeof(float);
  return be->alloc(dev, s->nbytes, &s->p);
}
static void dt__hscratch_put(dt__hscratch *s) {
  if (s->p) s->be->free(s->dev, s->p, s->nbytes);
  s->p = NULL;
}

/* elements spanned by batch items of `item` elements every `stride` (0: one shared item) */
static int64_t dt__hspan(int64_t batch, int64_t item, int64_t stride) { return stride == 0 ? item : (batch - 1) * stride + item; }

/* The slots below whose work splits into independent items (rows, slices, images) convert a
   chunk of items at a time: their F32 temporaries hold about DT__HALF_CHUNK elements of each
   operand (one item where an item is larger), not the whole operand. The same bits as one
   chunk: every item is computed alone. */
#define DT__HALF_CHUNK ((int64_t)1 << 17)
static int64_t dt__half_per(int64_t item) { return item >= DT__HALF_CHUNK ? 1 : DT__HALF_CHUNK / (item > 0 ? item : 1); }
static const void *dt__half_at(const void *p, int64_t i) { return (const char *)p + i * 2; } /* half element i */
static void *dt__half_atw(void *p, int64_t i) { return (char *)p + i * 2; }

/* the gemm slot's product in half dtype t through F32 copies of A, B (and C where beta != 0):
   the route of a backend whose gemm does not take t itself (and the CPU's gemm for what its BF16
   kernel does not take) */
static dt_status dt__half_gemm_f32(const dt__backend *be, int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n,
                                   int64_t k, double alpha, const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c,
                                   int64_t sc) {
  dt__hscratch s;
  dt_status rc;
  int64_t na, nb, nc;
  float *fa, *fb, *fc;
  if (batch <= 0 || m <= 0 || n <= 0) return DT_OK;
  na = dt__hspan(batch, m * k, sa); nb = dt__hspan(batch, k * n, sb); nc = dt__hspan(batch, m * n, sc);
  if ((rc = dt__hscratch_get(&s, be, dev, na + nb + nc)) != DT_OK) return rc;
  fa = (float *)s.p; fb = fa + na; fc = fb + nb;
  rc = be->cast(dev, t, DT_F32, na, a, fa);
  if (rc == DT_OK) rc = be->cast(dev, t, DT_F32, nb, b, fb);
  if (rc == DT_OK && beta != 0.0) rc = be->cast(dev, t, DT_F32, nc, c, fc);
  if (rc == DT_OK) rc = be->gemm(dev, DT_F32, ta, tb, batch, m, n, k, alpha, fa, sa, fb, sb, beta, fc, sc);
  if (rc == DT_OK) rc = be->cast(dev, DT_F32, t, nc, fc, c);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_gemm(const dt__backend *be, int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                               double alpha, const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c, int64_t sc) {
  if (!dt__is_half(t) || be->half_gemm) return be->gemm(dev, t, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
  return dt__half_gemm_f32(be, dev, t, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
}

static dt_status dt__half_axpy(const dt__backend *be, int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  dt__hscratch s;
  dt_status rc = DT_OK;
  int64_t per = DT__HALF_CHUNK, o, k;
  float *fx, *fy;
  if (!dt__is_half(t)) return be->axpy(dev, t, n, alpha, x, y);
  if (n < per) per = n;
  if ((rc = dt__hscratch_get(&s, be, dev, 2 * per)) != DT_OK) return rc;
  fx = (float *)s.p; fy = fx + per;
  for (o = 0; o < n && rc == DT_OK; o += k) {
    k = n - o < per ? n - o : per;
    if ((rc = be->cast(dev, t, DT_F32, k, dt__half_at(x, o), fx)) == DT_OK && (rc = be->cast(dev, t, DT_F32, k, dt__half_at(y, o), fy)) == DT_OK &&
        (rc = be->axpy(dev, DT_F32, k, alpha, fx, fy)) == DT_OK)
      rc = be->cast(dev, DT_F32, t, k, fy, dt__half_atw(y, o));
  }
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_arg_reduce(const dt__backend *be, int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner,
                                     const void *x, void *vals, int64_t *idx) {
  dt__hscratch s;
  dt_status rc = DT_OK;
  int64_t item = len * inner, per = dt__half_per(item), o, k;
  float *fx, *fv;
  if (!dt__is_half(t)) return be->arg_reduce(dev, min, t, outer, len, inner, x, vals, idx);
  if (outer < per) per = outer;
  if ((rc = dt__hscratch_get(&s, be, dev, per * item + (vals ? per * inner : 0))) != DT_OK) return rc;
  fx = (float *)s.p;
  fv = vals ? fx + per * item : NULL;
  for (o = 0; o < outer && rc == DT_OK; o += k) { /* k slices of (len, inner) */
    k = outer - o < per ? outer - o : per;
    if ((rc = be->cast(dev, t, DT_F32, k * item, dt__half_at(x, o * item), fx)) == DT_OK &&
        (rc = be->arg_reduce(dev, min, DT_F32, k, len, inner, fx, fv, idx ? idx + o * inner : NULL)) == DT_OK && vals)
      rc = be->cast(dev, DT_F32, t, k * inner, fv, dt__half_atw(vals, o * inner));
  }
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_softmax(const dt__backend *be, int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner,
                                  const void *x, void *y) {
  dt__hscratch s;
  dt_status rc = DT_OK;
  int64_t item = len * inner, per = dt__half_per(item), o, k;
  float *fx, *fy;
  if (!dt__is_half(t)) return be->softmax(dev, lg, t, outer, len, inner, x, y);
  if (outer < per) per = outer;
  if ((rc = dt__hscratch_get(&s, be, dev, 2 * per * item)) != DT_OK) return rc;
  fx = (float *)s.p; fy = fx + per * item;
  for (o = 0; o < outer && rc == DT_OK; o += k) { /* k slices of (len, inner) */
    k = outer - o < per ? outer - o : per;
    if ((rc = be->cast(dev, t, DT_F32, k * item, dt__half_at(x, o * item), fx)) == DT_OK &&
        (rc = be->softmax(dev, lg, DT_F32, k, len, inner, fx, fy)) == DT_OK)
      rc = be->cast(dev, DT_F32, t, k * item, fy, dt__half_atw(y, o * item));
  }
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_cross_entropy(const dt__backend *be, int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits,
                                        const int64_t *target, void *y) {
  dt__hscratch s;
  dt_status rc;
  int64_t ny = grad ? n * c : 1;
  if (!dt__is_half(t)) return be->cross_entropy(dev, grad, t, n, c, logits, target, y);
  if ((rc = dt__hscratch_get(&s, be, dev, n * c + ny)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, n * c, logits, s.p)) == DT_OK &&
      (rc = be->cross_entropy(dev, grad, DT_F32, n, c, s.p, target, (float *)s.p + n * c)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, ny, (float *)s.p + n * c, y);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_nll_loss(const dt__backend *be, int dev, dt_dtype t, int64_t n, int64_t c, const void *logp,
                                   const int64_t *target, void *y) {
  dt__hscratch s;
  dt_status rc = DT_OK;
  int64_t per = dt__half_per(c), o, k;
  float *fx, *fy;
  if (!dt__is_half(t)) return be->nll_loss(dev, t, n, c, logp, target, y);
  if (n < per) per = n;
  if ((rc = dt__hscratch_get(&s, be, dev, per * c + per)) != DT_OK) return rc;
  fx = (float *)s.p; fy = fx + per * c;
  for (o = 0; o < n && rc == DT_OK; o += k) { /* k rows */
    k = n - o < per ? n - o : per;
    if ((rc = be->cast(dev, t, DT_F32, k * c, dt__half_at(logp, o * c), fx)) == DT_OK &&
        (rc = be->nll_loss(dev, DT_F32, k, c, fx, target + o, fy)) == DT_OK)
      rc = be->cast(dev, DT_F32, t, k, fy, dt__half_atw(y, o));
  }
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_im2col(const dt__backend *be, int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = nimg * g->c * g->h * g->w, nc = nimg * g->c * g->kh * g->kw * g->oh * g->ow;
  if (!dt__is_half(t)) return be->im2col(dev, t, g, nimg, x, col);
  if ((rc = dt__hscratch_get(&s, be, dev, nx + nc)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, nx, x, s.p)) == DT_OK && (rc = be->im2col(dev, DT_F32, g, nimg, s.p, (float *)s.p + nx)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, nc, (float *)s.p + nx, col);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_col2im(const dt__backend *be, int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = nimg * g->c * g->h * g->w, nc = nimg * g->c * g->kh * g->kw * g->oh * g->ow;
  if (!dt__is_half(t)) return be->col2im(dev, t, g, nimg, col, x);
  if ((rc = dt__hscratch_get(&s, be, dev, nx + nc)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, nc, col, s.p)) == DT_OK && (rc = be->col2im(dev, DT_F32, g, nimg, s.p, (float *)s.p + nc)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, nx, (float *)s.p + nc, x);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_pool2d(const dt__backend *be, int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  dt__hscratch s;
  dt_status rc = DT_OK;
  int64_t ix = p->c * p->h * p->w, iy = p->c * p->oh * p->ow, per = dt__half_per(ix + iy), o;
  dt__pool2d q = *p;
  float *fx, *fy;
  if (!dt__is_half(t)) return be->pool2d(dev, t, p, x, y, idx);
  if (p->n < per) per = p->n;
  if ((rc = dt__hscratch_get(&s, be, dev, per * (ix + iy))) != DT_OK) return rc;
  fx = (float *)s.p; fy = fx + per * ix;
  for (o = 0; o < p->n && rc == DT_OK; o += q.n) { /* q.n images */
    q.n = p->n - o < per ? p->n - o : per;
    if ((rc = be->cast(dev, t, DT_F32, q.n * ix, dt__half_at(x, o * ix), fx)) == DT_OK &&
        (rc = be->pool2d(dev, DT_F32, &q, fx, fy, idx ? idx + o * iy : NULL)) == DT_OK)
      rc = be->cast(dev, DT_F32, t, q.n * iy, fy, dt__half_atw(y, o * iy));
  }
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_pool2d_backward(const dt__backend *be, int dev, dt_dtype t, const dt__pool2d *p, const void *gy,
                                          const int64_t *idx, void *gx) {
  dt__hscratch s;
  dt_status rc = DT_OK;
  int64_t ix = p->c * p->h * p->w, iy = p->c * p->oh * p->ow, per = dt__half_per(ix + iy), o;
  dt__pool2d q = *p;
  float *fgy, *fgx;
  if (!dt__is_half(t)) return be->pool2d_backward(dev, t, p, gy, idx, gx);
  if (p->n < per) per = p->n;
  if ((rc = dt__hscratch_get(&s, be, dev, per * (ix + iy))) != DT_OK) return rc;
  fgy = (float *)s.p; fgx = fgy + per * iy;
  for (o = 0; o < p->n && rc == DT_OK; o += q.n) { /* q.n images */
    q.n = p->n - o < per ? p->n - o : per;
    if ((rc = be->cast(dev, t, DT_F32, q.n * iy, dt__half_at(gy, o * iy), fgy)) == DT_OK &&
        (rc = be->pool2d_backward(dev, DT_F32, &q, fgy, idx ? idx + o * iy : NULL, fgx)) == DT_OK)
      rc = be->cast(dev, DT_F32, t, q.n * ix, fgx, dt__half_atw(gx, o * ix));
  }
  dt__hscratch_put(&s);
  return rc;
}

/* The tables: the backend's own, with the slots above in front of it. One set of entry points
   per backend, each naming its backend (a slot has no room for it). */
static dt_status dt__hc_gemm(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                             const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c, int64_t sc) {
  return dt__half_gemm(dt__cpu_backend(), dev, t, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
}
static dt_status dt__hc_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  return dt__half_axpy(dt__cpu_backend(), dev, t, n, alpha, x, y);
}
static dt_status dt__hc_arg_reduce(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *vals,
                                   int64_t *idx) {
  return dt__half_arg_reduce(dt__cpu_backend(), dev, min, t, outer, len, inner, x, vals, idx);
}
static dt_status dt__hc_softmax(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  return dt__half_softmax(dt__cpu_backend(), dev, lg, t, outer, len, inner, x, y);
}
static dt_status dt__hc_cross_entropy(int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits, const int64_t *target,
                                      void *y) {
  return dt__half_cross_entropy(dt__cpu_backend(), dev, grad, t, n, c, logits, target, y);
}
static dt_status dt__hc_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  return dt__half_im2col(dt__cpu_backend(), dev, t, g, nimg, x, col);
}
static dt_status dt__hc_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  return dt__half_col2im(dt__cpu_backend(), dev, t, g, nimg, col, x);
}
static dt_status dt__hc_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  return dt__half_pool2d(dt__cpu_backend(), dev, t, p, x, y, idx);
}
static dt_status dt__hc_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  return dt__half_pool2d_backward(dt__cpu_backend(), dev, t, p, gy, idx, gx);
}
static dt_status dt__hc_nll_loss(int dev, dt_dtype t, int64_t n, int64_t c, const void *logp, const int64_t *target, void *y) {
  return dt__half_nll_loss(dt__cpu_backend(), dev, t, n, c, logp, target, y);
}

static dt__backend dt__half_tables[2];
static volatile int dt__half_state[2]; /* 0 not made, 1 making, 2 made */

/* The table the core calls for a device type (cuda 0: the CPU, 1: CUDA), made once. */
static const dt__backend *dt__half_table(int cuda) {
  int expected = 0;
  if (DT__ATOMIC_LOAD(&dt__half_state[cuda]) == 2) return &dt__half_tables[cuda];
  if (DT__ATOMIC_CAS(&dt__half_state[cuda], &expected, 1)) {
    dt__backend *h = &dt__half_tables[cuda];
#ifdef DEVTENSOR_CUDA
    if (cuda)
      *h = *dt__cuda_backend(); /* every slot above takes the half dtypes itself (its gemm through cuBLAS) */
    else
#endif
    {
      *h = *dt__cpu_backend(); /* its unary, binary, compare and reduce take the half dtypes themselves */
      h->gemm = dt__hc_gemm;
      h->axpy = dt__hc_axpy; h->arg_reduce = dt__hc_arg_reduce; h->softmax = dt__hc_softmax;
      h->cross_entropy = dt__hc_cross_entropy; h->im2col = dt__hc_im2col; h->col2im = dt__hc_col2im; h->pool2d = dt__hc_pool2d;
      h->pool2d_backward = dt__hc_pool2d_backward; h->nll_loss = dt__hc_nll_loss;
    }
    DT__ATOMIC_STORE(&dt__half_state[cuda], 2);
  } else {
    int waits = 0;
    while (DT__ATOMIC_LOAD(&dt__half_state[cuda]) != 2) {
      dt__pause(waits);
      if (waits < 64) waits++;
    }
  }
  return &dt__half_tables[cuda];
}
