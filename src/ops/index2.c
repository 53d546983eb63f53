/* torch.where, gather and scatter_add, F.pad (constant), randperm and randint, and the
   index-add that is index_select's backward. Checked here; the backends' where, gather,
   scatter_add, index_add and random_int slots compute. Indices on the CPU are checked before
   anything runs; on a GPU (where they are in device memory) the kernels never follow a bad one
   and report it at the next synchronizing call, as dt_index_select. */

/* the element strides of a contiguous tensor of shape s */
static void dt__contig_strides(const dt_shape *s, int64_t *st) {
  int64_t m = 1;
  int i;
  for (i = s->ndim - 1; i >= 0; i--) { st[i] = m; m *= s->dims[i]; }
}

/* ---- where ---- */

static dt_tensor *dt__where(const dt_tensor *cond, const dt_tensor *a, const dt_tensor *b) {
  const char *op = "dt_where";
  const dt_tensor *ts[3];
  static const char *const names[3] = {"cond", "a", "b"};
  int64_t st[3][DT_MAX_DIMS], cs[DT_MAX_DIMS];
  dt__bcast g;
  dt_shape ys;
  dt_tensor *y, *ca = NULL, *cb = NULL;
  dt_dtype ct;
  dt_device d;
  int nd = 0, i, k;
  char s0[200], s1[200], s2[200];
  ts[0] = cond; ts[1] = a; ts[2] = b;
  for (k = 0; k < 3; k++) if (dt__check_tensor(op, names[k], ts[k]) != DT_OK) return NULL;
  if (dt__same_device(op, "cond", cond, "a", a) != DT_OK || dt__same_device(op, "a", a, "b", b) != DT_OK) return NULL;
  if (cond->dtype != DT_BOOL) {
    dt__fail(DT_ERR_DTYPE, "%s: cond is %s, but it must be bool (a comparison's result, or dt_cast(cond, DT_BOOL))", op,
             dt_dtype_name(cond->dtype));
    return NULL;
  }
  /* the three shapes broadcast together, as NumPy's rules */
  for (k = 0; k < 3; k++) if (ts[k]->shape.ndim > nd) nd = ts[k]->shape.ndim;
  ys = dt_shape0();
  ys.ndim = nd;
  for (i = nd - 1; i >= 0; i--) {
    int64_t size = 1;
    for (k = 0; k < 3; k++) {
      int j = i - (nd - ts[k]->shape.ndim);
      int64_t dk = j >= 0 ? ts[k]->shape.dims[j] : 1;
      if (dk == 1) continue;
      if (size != 1 && dk != size) {
        dt__fail(DT_ERR_SHAPE, "%s: shapes %s (cond), %s (a) and %s (b) cannot be broadcast together: sizes %lld and %lld at dimension %d",
                 op, dt__shape_str(&cond->shape, s0, sizeof s0), dt__shape_str(&a->shape, s1, sizeof s1),
                 dt__shape_str(&b->shape, s2, sizeof s2), (long long)size, (long long)dk, i);
        return NULL;
      }
      size = dk;
    }
    ys.dims[i] = size;
  }
  d = a->st->device;
  ct = dt__result_type(a, b);
  if (!(y = dt__new(op, ys, ct, d)) || y->numel == 0) return y;
  for (k = 0; k < 3; k++) { /* each operand's strides over y's dims, 0 where it broadcasts */
    const dt_shape *s = &ts[k]->shape;
    int64_t m = 1;
    for (i = nd - 1; i >= 0; i--) {
      int j = i - (nd - s->ndim);
      int64_t dk = j >= 0 ? s->dims[j] : 1;
      st[k][i] = dk == 1 ? 0 : m;
      m *= dk;
    }
  }
  memset(&g, 0, sizeof g);
  g.numel = y->numel;
  g.ndim = nd > 0 ? nd : 1;
  if (nd == 0) { g.dims[0] = 1; cs[0] = 0; }
  for (i = 0; i < nd; i++) {
    g.dims[i] = ys.dims[i];
    g.astride[i] = st[1][i];
    g.bstride[i] = st[2][i];
    cs[i] = st[0][i];
  }
  if (!(ca = dt__as_dtype(op, a, ct)) || !(cb = dt__as_dtype(op, b, ct))) { dt_release(ca); dt_release(y); return NULL; }
  y = dt__done(op, y, dt__be(d)->where(d.index, dt_dtype_size(ct), &g, cs, cond->st->ptr, ca->st->ptr, cb->st->ptr, y->st->ptr));
  dt_release(ca);
  dt_release(cb);
  return y;
}
DTDEF dt_tensor *dt_where(const dt_tensor *cond, const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__where(cond, a, b);
  if (y && DT__AG_ON2(a, b)) {
    const dt_tensor *in[3];
    in[0] = cond; in[1] = a; in[2] = b;
    y = dt__ag_record(y, DT__AG_WHERE, "dt_where", 3, in, NULL);
  }
  return y;
}

/* ---- gather and scatter_add ---- */

/* The index of gather or scatter_add (and its src) against x: I64, x's ndim, each size within x's
   (but along dim) and src's; dim wrapped. On the CPU every value is checked to be in [0, n). */
static dt_status dt__gs_check(const char *op, const dt_tensor *x, int *dim, const dt_tensor *index, int scatter,
                              const dt_tensor *src) {
  int nd, i;
  int64_t n;
  char sa[200], sb[200];
  if (dt__check_tensor(op, "x", x) != DT_OK || dt__check_tensor(op, "index", index) != DT_OK) return dt_last_status();
  if (scatter && dt__check_tensor(op, "src", src) != DT_OK) return dt_last_status();
  if (dt__same_device(op, "x", x, "index", index) != DT_OK) return dt_last_status();
  if (src && dt__same_device(op, "x", x, "src", src) != DT_OK) return dt_last_status();
  if (index->dtype != DT_I64)
    return dt__fail(DT_ERR_DTYPE, "%s: index is %s, but it must be int64 (convert it with dt_cast)", op, dt_dtype_name(index->dtype));
  if (src) {
    if (dt__same_dtype(op, "x", x, "src", src) != DT_OK) return dt_last_status();
    if (x->dtype != DT_F32 && x->dtype != DT_F64 && x->dtype != DT_I32 && x->dtype != DT_I64)
      return dt__fail(DT_ERR_DTYPE, "%s: x is %s, but adding needs float32, float64, int32 or int64 (convert with dt_cast)", op,
                      dt_dtype_name(x->dtype));
  }
  nd = x->shape.ndim;
  if (index->shape.ndim != nd)
    return dt__fail(DT_ERR_SHAPE, "%s: index has %d dimensions (shape %s) but x has %d (shape %s): they must have the same number",
                    op, index->shape.ndim, dt__shape_str(&index->shape, sa, sizeof sa), nd, dt__shape_str(&x->shape, sb, sizeof sb));
  if (src && src->shape.ndim != nd)
    return dt__fail(DT_ERR_SHAPE, "%s: src has %d dimensions (shape %s) but x has %d (shape %s): they must have the same number", op,
                    src->shape.ndim, dt__shape_str(&src->shape, sa, sizeof sa), nd, dt__shape_str(&x->shape, sb, sizeof sb));
  if (nd == 0) { /* PyTorch: 0-d tensors take dim 0 or -1, as one element */
    if (*dim != 0 && *dim != -1)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a 0-d tensor (expected -1 or 0)", op, *dim);
    *dim = 0;
  } else if ((*dim = dt__wrap_dim(op, "dim", *dim, nd)) < 0) {
    return dt_last_status();
  }
  for (i = 0; i < nd; i++) {
    if (i != *dim && index->shape.dims[i] > x->shape.dims[i])
      return dt__fail(DT_ERR_SHAPE, "%s: index has shape %s and x has shape %s: index's size %lld at dimension %d is larger than x's, %lld "
                      "(only along dim %d may it be larger)", op, dt__shape_str(&index->shape, sa, sizeof sa),
                      dt__shape_str(&x->shape, sb, sizeof sb), (long long)index->shape.dims[i], i, (long long)x->shape.dims[i], *dim);
    if (src && index->shape.dims[i] > src->shape.dims[i])
      return dt__fail(DT_ERR_SHAPE, "%s: index has shape %s and src has shape %s: index's size %lld at dimension %d is larger than src's, %lld",
                      op, dt__shape_str(&index->shape, sa, sizeof sa), dt__shape_str(&src->shape, sb, sizeof sb),
                      (long long)index->shape.dims[i], i, (long long)src->shape.dims[i]);
  }
  n = nd == 0 ? 1 : x->shape.dims[*dim];
  if (index->numel > 0 && n == 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index holds %lld values, but dimension %d of x (shape %s) has size 0, so none is in range",
                    op, (long long)index->numel, *dim, dt__shape_str(&x->shape, sb, sizeof sb));
  /* host memory: every value checked now (a CPU graph checks them as it replays) */
  if (index->st->device.type == DT_CPU && !DT__ATOMIC_LOAD(&dt__cpu_capturing)) {
    const int64_t *v = (const int64_t *)index->st->ptr;
    int64_t j;
    for (j = 0; j < index->numel; j++)
      if (v[j] < 0 || v[j] >= n)
        return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index holds %lld (its element %lld), out of range for dimension %d of x, of size %lld (expected 0 to %lld)",
                        op, (long long)v[j], (long long)j, *dim, (long long)n, (long long)(n - 1));
  }
  return DT_OK;
}

/* The geometry over index's elements: astride x's strides with 0 at dim, bstride other's
   (contiguous, of shape os); *stride x's stride at dim, *n its size. */
static void dt__gs_geom(const dt_tensor *x, int dim, const dt_tensor *index, const dt_shape *os, dt__bcast *g, int64_t *n,
                        int64_t *stride) {
  int64_t xs[DT_MAX_DIMS], bs[DT_MAX_DIMS];
  int nd = x->shape.ndim, i;
  dt__contig_strides(&x->shape, xs);
  dt__contig_strides(os, bs);
  memset(g, 0, sizeof *g);
  g->numel = index->numel;
  if (nd == 0) {
    g->ndim = 1; g->dims[0] = 1;
    *n = 1; *stride = 0;
    return;
  }
  g->ndim = nd;
  for (i = 0; i < nd; i++) {
    g->dims[i] = index->shape.dims[i];
    g->astride[i] = i == dim ? 0 : xs[i];
    g->bstride[i] = bs[i];
  }
  *n = x->shape.dims[dim];
  *stride = xs[dim];
}

static dt_tensor *dt__gather(const dt_tensor *x, int dim, const dt_tensor *index) {
  const char *op = "dt_gather";
  dt__bcast g;
  int64_t n, stride;
  dt_tensor *y;
  dt_device d;
  if (dt__gs_check(op, x, &dim, index, 0, NULL) != DT_OK) return NULL;
  d = x->st->device;
  if (!(y = dt__new(op, index->shape, x->dtype, d)) || y->numel == 0) return y;
  dt__gs_geom(x, dim, index, &index->shape, &g, &n, &stride);
  return dt__done(op, y, dt__be(d)->gather(d.index, dt_dtype_size(x->dtype), &g, n, stride, (const int64_t *)index->st->ptr,
                                           x->st->ptr, y->st->ptr));
}
DTDEF dt_tensor *dt_gather(const dt_tensor *x, int dim, const dt_tensor *index) {
  dt_tensor *y = dt__gather(x, dim, index);
  if (y && DT__AG_ON(x)) {
    const dt_tensor *in[2];
    dt__ag_args a;
    in[0] = x; in[1] = index;
    a.p = 0; a.dim = dim; a.start = 0; a.perm = NULL; a.p2 = 0;
    y = dt__ag_record(y, DT__AG_GATHER, "dt_gather", 2, in, &a);
  }
  return y;
}

/* y += src at index along dim (y: x's shape and dtype, on its device; checked by dt__gs_check) */
static dt_status dt__scatter_add_into(const char *op, dt_tensor *y, int dim, const dt_tensor *index, const dt_tensor *src) {
  dt__bcast g;
  int64_t n, stride;
  dt_device d = y->st->device;
  if (index->numel == 0) return DT_OK;
  dt__gs_geom(y, dim, index, &src->shape, &g, &n, &stride);
  return dt__run(op, d, dt__be(d)->scatter_add(d.index, y->dtype, &g, n, stride, (const int64_t *)index->st->ptr, src->st->ptr,
                                               y->st->ptr));
}

static dt_tensor *dt__scatter_add(const dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src) {
  const char *op = "dt_scatter_add";
  dt_tensor *y;
  if (dt__gs_check(op, x, &dim, index, 1, src) != DT_OK) return NULL;
  if (!(y = dt__new(op, x->shape, x->dtype, x->st->device))) return NULL;
  if (dt__copy_bytes(op, x->st->device, y->st->ptr, x->st->device, x->st->ptr, x->nbytes) != DT_OK ||
      dt__scatter_add_into(op, y, dim, index, src) != DT_OK) {
    dt_release(y);
    return NULL;
  }
  return y;
}
DTDEF dt_tensor *dt_scatter_add(const dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src) {
  dt_tensor *y = dt__scatter_add(x, dim, index, src);
  if (y && (x->requires_grad | src->requires_grad) && !dt__no_grad) {
    const dt_tensor *in[3];
    dt__ag_args a;
    in[0] = x; in[1] = index; in[2] = src;
    a.p = 0; a.dim = dim; a.start = 0; a.perm = NULL; a.p2 = 0;
    y = dt__ag_record(y, DT__AG_SCATTER_ADD, "dt_scatter_add", 3, in, &a);
  }
  return y;
}
/* in place: not recorded, so refused while grad mode is on and x or src requires grad */
DTDEF dt_status dt_scatter_add_(dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src) {
  const char *op = "dt_scatter_add_", *shared;
  dt_status s;
  if ((s = dt__gs_check(op, x, &dim, index, 1, src)) != DT_OK) return s;
  shared = dt__overlap(x, src) ? "src" : dt__overlap(x, index) ? "index" : NULL; /* x itself too (PyTorch refuses it too) */
  if (shared)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s shares x's memory: some elements would be read after they were "
                    "written (pass a copy: dt_copyto(%s, its device))", op, shared, shared);
  if ((s = dt__inplace_check(op, "x", x)) != DT_OK) return s;
  if (src->requires_grad && !dt__no_grad)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: src requires grad and grad mode is on: the in-place form records no backward "
                    "(use dt_scatter_add, which does)", op);
  if ((s = dt__scatter_add_into(op, x, dim, index, src)) == DT_OK && index->numel > 0) dt__bump(x);
  return s;
}

/* ---- index-add: index_select's backward ---- */

/* zeros of shape s (dtype t, on d) with y[o, idx[j], i] += g[o, j, i] along dim (g: (outer, k, inner));
   F32, F64 */
static dt_tensor *dt__index_add_rows(const char *op, dt_shape s, dt_dtype t, dt_device d, int dim, const dt_tensor *index,
                                     const dt_tensor *g) {
  dt_tensor *y = dt__new(op, s, t, d);
  int64_t outer, inner;
  dt_status st;
  if (!y || y->numel == 0) return y;
  if ((st = dt__run(op, d, dt__be(d)->fill(d.index, t, y->numel, 0.0, y->st->ptr))) != DT_OK) { dt_release(y); return NULL; }
  if (g->numel == 0 || index->numel == 0) return y;
  dt__around(&s, dim, &outer, &inner);
  st = dt__be(d)->index_add(d.index, t, outer, s.dims[dim], inner, (const int64_t *)index->st->ptr, index->numel, g->st->ptr,
                            y->st->ptr);
  return dt__done(op, y, st);
}

/* ---- pad ---- */

static dt_tensor *dt__pad(const dt_tensor *x, const int64_t *pad, int npad, double value, int *left) {
  const char *op = "dt_pad";
  int nd, i, k, any = 1;
  int64_t xs[DT_MAX_DIMS], ystr[DT_MAX_DIMS], xoff = 0, yoff = 0, numel = 0;
  size_t nbytes = 0, es;
  dt_shape ys;
  dt__bcast g;
  dt_tensor *y;
  dt_device d;
  char sb[200];
  if (dt__check_tensor(op, "x", x) != DT_OK) return NULL;
  nd = x->shape.ndim;
  if (npad < 0 || npad % 2 != 0 || npad / 2 > nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: npad is %d, but it must be even and at most twice x's dimensions (%d, shape %s)", op,
             npad, 2 * nd, dt__shape_str(&x->shape, sb, sizeof sb));
    return NULL;
  }
  if (npad > 0 && !pad) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: pad is NULL and npad is %d", op, npad); return NULL; }
  ys = x->shape;
  for (i = 0; i < nd; i++) left[i] = 0;
  for (k = 0; k < npad / 2; k++) { /* pad[2k], pad[2k + 1]: before and after dim nd - 1 - k */
    int dim = nd - 1 - k;
    int64_t l = pad[2 * k], r = pad[2 * k + 1], size = x->shape.dims[dim];
    for (i = 0; i < 2; i++)
      if (pad[2 * k + i] > INT_MAX || pad[2 * k + i] < -INT_MAX) {
        dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: pad[%d] = %lld is beyond +-%d", op, 2 * k + i, (long long)pad[2 * k + i], INT_MAX);
        return NULL;
      }
    if (size + l + r < 0) {
      dt__fail(DT_ERR_SHAPE, "%s: dimension %d of x (shape %s) has size %lld, which pad[%d] = %lld and pad[%d] = %lld make negative (%lld)",
               op, dim, dt__shape_str(&x->shape, sb, sizeof sb), (long long)size, 2 * k, (long long)l, 2 * k + 1, (long long)r,
               (long long)(size + l + r));
      return NULL;
    }
    ys.dims[dim] = size + l + r;
    left[dim] = (int)l;
  }
  if (dt__check_shape(op, &ys, x->dtype, &numel, &nbytes) != DT_OK) return NULL;
  d = x->st->device;
  if (!(y = dt__new(op, ys, x->dtype, d)) || y->numel == 0) return y;
  if (dt__run(op, d, dt__be(d)->fill(d.index, x->dtype, y->numel, value, y->st->ptr)) != DT_OK) { dt_release(y); return NULL; }
  /* x's part that stays: along each dim from max(0, -left) in x to max(0, left) in y */
  dt__contig_strides(&x->shape, xs);
  dt__contig_strides(&ys, ystr);
  memset(&g, 0, sizeof g);
  g.ndim = nd > 0 ? nd : 1;
  g.numel = 1;
  if (nd == 0) { g.dims[0] = 1; g.astride[0] = 1; g.bstride[0] = 1; }
  for (i = 0; i < nd; i++) {
    int64_t xf = left[i] < 0 ? -(int64_t)left[i] : 0, yf = left[i] > 0 ? left[i] : 0;
    int64_t len = x->shape.dims[i] - xf, room = ys.dims[i] - yf;
    if (room < len) len = room;
    if (len <= 0) { any = 0; break; }
    g.dims[i] = len; g.astride[i] = xs[i]; g.bstride[i] = ystr[i];
    g.numel *= len;
    xoff += xf * xs[i]; yoff += yf * ystr[i];
  }
  if (!any) return y;
  es = dt_dtype_size(x->dtype);
  if (dt__strided_copy(op, d, es, &g, (const char *)x->st->ptr + (size_t)xoff * es, (char *)y->st->ptr + (size_t)yoff * es) != DT_OK) {
    dt_release(y);
    return NULL;
  }
  return y;
}
DTDEF dt_tensor *dt_pad(const dt_tensor *x, const int64_t *pad, int npad, double value) {
  int left[DT_MAX_DIMS];
  dt_tensor *y = dt__pad(x, pad, npad, value, left);
  /* the node keeps each dim's left padding (the right: from the shapes) */
  return y && DT__AG_ON(x) ? dt__ag_record1a(y, DT__AG_PAD, "dt_pad", x, 0, 0, 0, left) : y;
}

/* ---- randperm, randint ---- */

/* A permutation of 0..n-1 from one draw (seed, draw): Fisher-Yates from the top, the swap for
   position i with r = v mod (i + 1), v the 64-bit word (w[0] << 32 | w[1]) of Philox block i.
   Computed on the host, so every device gets the same numbers. */
static void dt__randperm_host(int64_t *idx, int64_t n, uint64_t seed, uint64_t draw) {
  uint32_t w[4];
  int64_t i;
  for (i = 0; i < n; i++) idx[i] = i;
  for (i = n - 1; i > 0; i--) {
    uint64_t r;
    int64_t t;
    dt__philox_block(seed, draw, (uint64_t)i, w);
    r = ((uint64_t)w[0] << 32 | w[1]) % (uint64_t)(i + 1);
    t = idx[i]; idx[i] = idx[(int64_t)r]; idx[(int64_t)r] = t;
  }
}

DTDEF dt_tensor *dt_randperm(int64_t n, dt_device d) {
  const char *op = "dt_randperm";
  uint64_t seed, draw;
  int64_t *h;
  dt_tensor *y;
  dt_status s;
  if (n < 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: n is %lld, but it must be >= 0", op, (long long)n); return NULL; }
  /* made on the host now: a graph's replays could not draw it afresh */
  if (dt__graph_forbid(op, d, "a permutation made on the host") != DT_OK) return NULL;
  if (!(y = dt__new(op, dt_shape1(n), DT_I64, d))) return NULL;
  if (d.type == DT_CPU) {
    dt__rng_next(&seed, &draw);
    dt__randperm_host((int64_t *)y->st->ptr, n, seed, draw);
    return y;
  }
  if (!(h = (int64_t *)DT_MALLOC(y->nbytes > 0 ? y->nbytes : 1))) {
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host: the permutation's %llu bytes", op, (unsigned long long)y->nbytes);
    dt_release(y);
    return NULL;
  }
  dt__rng_next(&seed, &draw);
  dt__randperm_host(h, n, seed, draw);
  s = dt__copy_bytes(op, d, y->st->ptr, dt_cpu(), h, y->nbytes);
  DT_FREE(h);
  if (s != DT_OK) { dt_release(y); return NULL; }
  return y;
}

DTDEF dt_tensor *dt_randint(int64_t low, int64_t high, dt_shape s, dt_device d) {
  const char *op = "dt_randint";
  uint64_t seed, draw;
  const uint64_t *gen;
  dt_tensor *y;
  if (low >= high) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: low is %lld and high is %lld, but low must be less than high", op, (long long)low,
             (long long)high);
    return NULL;
  }
  if (!(y = dt__new(op, s, DT_I64, d))) return NULL;
  dt__rng_next_on(d, &seed, &draw, &gen);
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(d)->random_int(d.index, seed, draw, gen, y->numel, low, (uint64_t)high - (uint64_t)low,
                                               (int64_t *)y->st->ptr));
}
