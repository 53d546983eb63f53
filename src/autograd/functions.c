/* What each recorded operation saves (dt__ag_record) and its backward (dt__ag_backward): the
   gradients of its inputs from the gradient g of its result, written with the public operations
   (the engine runs them with grad mode off, so they record nothing), so that a backward on a GPU
   runs there through the same backend. Saved slots: 0 and 1 the inputs, 2 the result (or, for
   max/min by dim, the indices of the extremes). */

/* A header over t's memory with no history (dt_detach; what a node saves). */
static dt_tensor *dt__alias(const char *op, const dt_tensor *t) {
  DT__ATOMIC_ADD(&t->st->refs, 1);
  return dt__wrap(op, t->st, &t->shape, t->dtype, t->numel, t->nbytes); /* on failure drops the reference */
}

/* Whether op's backward reads input 0, input 1 (given which inputs need a gradient), the result. */
static void dt__ag_saves(dt__ag_op op, int need0, int need1, int want[DT__AG_SAVED]) {
  want[0] = want[1] = want[2] = 0;
  switch (op) {
    case DT__AG_MUL: case DT__AG_MATMUL: want[0] = need1; want[1] = need0; break;
    case DT__AG_DIV: want[0] = need1; want[1] = 1; break;
    case DT__AG_LOG: case DT__AG_ABS: want[0] = 1; break;
    case DT__AG_SIN: case DT__AG_COS: case DT__AG_ERF: case DT__AG_GELU: case DT__AG_POW: case DT__AG_CLAMP: want[0] = 1; break;
    case DT__AG_EXP: case DT__AG_SQRT: case DT__AG_RELU: case DT__AG_SIGMOID: case DT__AG_TANH:
    case DT__AG_SOFTMAX: case DT__AG_LOG_SOFTMAX: want[2] = 1; break;
    case DT__AG_NORM: case DT__AG_MAX: case DT__AG_MIN: want[0] = 1; want[2] = 1; break;
    case DT__AG_INDEX_SELECT: want[1] = 1; break;
    case DT__AG_CROSS_ENTROPY: case DT__AG_MSE_LOSS: want[0] = 1; want[1] = 1; break;
    case DT__AG_BCE_WITH_LOGITS: case DT__AG_NLL_LOSS: case DT__AG_L1_LOSS: case DT__AG_SMOOTH_L1_LOSS: case DT__AG_MSE_LOSS_EX:
      want[0] = want[1] = 1; break;
    case DT__AG_MAX_DIM: case DT__AG_MIN_DIM: want[2] = 1; break; /* the indices, made below */
    case DT__AG_LINEAR: want[0] = need1; want[1] = need0; break; /* x for the weight's gradient, W for x's */
    case DT__AG_CONV2D: want[0] = want[1] = 1; break; /* dt_f_conv2d_backward reads both */
    case DT__AG_BATCH_NORM: want[0] = 1; want[1] = 1; break; /* x, and the weight where there is one */
    case DT__AG_MAX_POOL2D: case DT__AG_AVG_POOL2D: case DT__AG_ADAPTIVE_AVG_POOL2D: want[0] = 1; break; /* max's indices: the forward's */
    case DT__AG_WHERE: want[0] = 1; break;                              /* cond */
    case DT__AG_GATHER: case DT__AG_SCATTER_ADD: want[1] = 1; break;    /* the index */
    default: break;
  }
}

static dt_tensor *dt__ag_record(dt_tensor *y, dt__ag_op op, const char *name, int nin, const dt_tensor *const *in,
                                const dt__ag_args *args) {
  dt__node *n;
  dt_tensor *sv[DT__AG_SAVED] = {NULL, NULL, NULL};
  int want[DT__AG_SAVED], i;
  if (!y) return NULL;
  dt__ag_saves(op, in[0]->requires_grad, nin > 1 && in[1]->requires_grad, want);
  for (i = 0; i < DT__AG_SAVED; i++) {
    if (!want[i] || (i < 2 && i >= nin)) continue;
    if (i == 2 && (op == DT__AG_MAX_DIM || op == DT__AG_MIN_DIM))
      sv[i] = op == DT__AG_MAX_DIM ? dt_argmax(in[0], args->dim) : dt_argmin(in[0], args->dim);
    else
      sv[i] = dt__alias(name, i < 2 ? in[i] : y);
    if (!sv[i]) goto fail;
  }
  n = (dt__node *)DT_MALLOC(sizeof(dt__node) + (size_t)nin * sizeof(dt__ag_edge));
  if (!n) {
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host recording the operation for autograd", name);
    goto fail;
  }
  memset(n, 0, sizeof *n);
  n->refs = 1; n->op = op; n->name = name; n->nin = nin;
  n->in = (dt__ag_edge *)(void *)(n + 1);
  for (i = 0; i < DT__AG_SAVED; i++) {
    n->saved[i] = sv[i];
    n->saved_version[i] = sv[i] ? *dt__version(sv[i]) : 0;
  }
  n->yshape = y->shape;
  if (args) {
    n->p = args->p; n->dim = args->dim; n->start = args->start; n->p2 = args->p2;
    if (args->perm) memcpy(n->perm, args->perm, sizeof(int) * (size_t)in[0]->shape.ndim);
  }
  for (i = 0; i < nin; i++) {
    dt__ag_edge *e = &n->in[i];
    e->node = NULL; e->leaf = NULL;
    e->shape = in[i]->shape; e->dtype = in[i]->dtype; e->device = in[i]->st->device;
    if (in[i]->node) { e->node = in[i]->node; DT__ATOMIC_ADD(&e->node->refs, 1); }
    else if (in[i]->requires_grad) e->leaf = dt_retain((dt_tensor *)in[i]);
  }
  y->node = n;
  y->requires_grad = 1;
  return y;
fail:
  for (i = 0; i < DT__AG_SAVED; i++) dt_release(sv[i]);
  dt_release(y);
  return NULL;
}

/* ---- helpers of the backwards: each takes ownership of a tensor argument named x (NULL: a
   failure already reported, passed on) ---- */

static dt_tensor *dt__ag_zeros(dt_shape s, dt_dtype t, dt_device d) {
  dt_tensor *z = dt_empty(s, t, d);
  if (z && dt_fill_(z, 0.0) != DT_OK) { dt_release(z); return NULL; }
  return z;
}

/* x summed down to shape s (the gradient of an operand broadcast to x's shape) */
static dt_tensor *dt__ag_sum_to(dt_tensor *x, const dt_shape *s) {
  int i, lead;
  dt_tensor *nx;
  if (!x) return NULL;
  lead = x->shape.ndim - s->ndim;
  for (i = 0; i < lead; i++) {
    nx = dt_sum_dim(x, 0);
    dt_release(x);
    if (!(x = nx)) return NULL;
  }
  for (i = s->ndim - 1; i >= 0; i--) /* last first: the dims before keep their places */
    if (s->dims[i] == 1 && x->shape.dims[i] != 1) {
      nx = dt_sum_dim(x, i);
      dt_release(x);
      if (!(x = nx)) return NULL;
    }
  if (x->shape.ndim == s->ndim && memcmp(x->shape.dims, s->dims, sizeof(int64_t) * (size_t)s->ndim) == 0) return x;
  nx = dt_reshape(x, *s);
  dt_release(x);
  return nx;
}

/* x broadcast to shape s (a copy) */
static dt_tensor *dt__ag_expand(dt_tensor *x, const dt_shape *s) {
  dt_tensor *z, *y;
  if (!x) return NULL;
  if (!(z = dt__ag_zeros(*s, x->dtype, x->st->device))) { dt_release(x); return NULL; }
  y = dt_add(z, x);
  dt_release(z);
  dt_release(x);
  return y;
}

static dt_tensor *dt__ag_reshape(dt_tensor *x, dt_shape s) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt_reshape(x, s);
  dt_release(x);
  return y;
}

/* a op x, or x op a */
static dt_tensor *dt__ag_bin(dt_tensor *(*f)(const dt_tensor *, const dt_tensor *), const dt_tensor *a, dt_tensor *x, int x_first) {
  dt_tensor *y;
  if (!x) return NULL;
  y = x_first ? f(x, a) : f(a, x);
  dt_release(x);
  return y;
}

/* p0 x + p1, released x; a scale passes p1 = -0.0, which keeps p0 x exact (a zero's sign too) */
static dt_tensor *dt__ag_affine(const char *op, dt_tensor *x, double p0, double p1) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt__unary(op, DT__U_AFFINE, x, p0, p1);
  dt_release(x);
  return y;
}

static dt_tensor *dt__ag_cast(dt_tensor *x, dt_dtype t) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt_cast(x, t);
  dt_release(x);
  return y;
}

static dt_tensor *dt__ag_exp(dt_tensor *x) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt_exp(x);
  dt_release(x);
  return y;
}

/* s with dim set to 1 (the shape of a reduction over dim that kept it) */
static dt_shape dt__ag_keep(dt_shape s, int dim) { if (s.ndim > 0) s.dims[dim] = 1; return s; }

static dt_tensor *dt__ag_sum_dim(dt_tensor *x, int dim) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt_sum_dim(x, dim);
  dt_release(x);
  return y;
}

/* x summed over dim, the dim kept (a 0-d x: itself) */
static dt_tensor *dt__ag_sum_keep(dt_tensor *x, int dim) {
  dt_shape k;
  if (!x || x->shape.ndim == 0) return x;
  k = dt__ag_keep(x->shape, dim);
  return dt__ag_reshape(dt__ag_sum_dim(x, dim), k);
}

/* x's last two dims swapped: (m, k) -> (k, m), (b, m, k) -> (b, k, m) */
static dt_tensor *dt__ag_mT(const dt_tensor *a) {
  static const int p[3] = {0, 2, 1};
  return a->shape.ndim == 2 ? dt_transpose(a) : dt_permute(a, p);
}

/* a 0-d tensor of value v */
static dt_tensor *dt__ag_scalar(double v, dt_dtype t, dt_device d) {
  dt_tensor *z = dt_empty(dt_shape0(), t, d);
  if (z && dt_fill_(z, v) != DT_OK) { dt_release(z); return NULL; }
  return z;
}

/* a mask (0/1 of dtype t) of a == b, broadcasting */
static dt_tensor *dt__ag_eq_mask(const dt_tensor *a, const dt_tensor *b, dt_dtype t) {
  return dt__ag_cast(dt_eq(a, b), t);
}

/* ---- the backwards ---- */

/* matmul, every shape dt_matmul takes: vectors as (1, k) and (k, 1), then the 2-d and 3-d cases */
static dt_status dt__ag_matmul_bw(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const dt__ag_edge *ea = &n->in[0], *eb = &n->in[1];
  int need0 = ea->node || ea->leaf, need1 = eb->node || eb->leaf;
  dt_tensor *A = NULL, *B = NULL, *G = NULL, *t = NULL;
  int na = ea->shape.ndim, nb = eb->shape.ndim;
  int64_t m = na == 1 ? 1 : ea->shape.dims[na - 2], k = ea->shape.dims[na - 1], nn = nb == 1 ? 1 : eb->shape.dims[nb - 1];
  dt_shape gs = nb == 3 || na == 3 ? dt_shape3(n->yshape.dims[0], m, nn) : dt_shape2(m, nn);
  if (need1) A = na == 1 ? dt_reshape(n->saved[0], dt_shape2(1, k)) : dt_retain(n->saved[0]);
  if (need0) B = nb == 1 ? dt_reshape(n->saved[1], dt_shape2(k, 1)) : dt_retain(n->saved[1]);
  if ((need1 && !A) || (need0 && !B) || !(G = dt_reshape(g, gs))) goto fail;
  if (need0) { /* dA = G B^T, summed over the batch when A has none */
    if (!(t = dt__ag_mT(B))) goto fail;
    gin[0] = dt_matmul(G, t);
    dt_release(t); t = NULL;
    if (gin[0] && na == 2 && nb == 3) gin[0] = dt__ag_sum_dim(gin[0], 0);
    if (!(gin[0] = dt__ag_reshape(gin[0], ea->shape))) goto fail;
  }
  if (need1) { /* dB = A^T G; A batched and B not: A and G as (b m, k) and (b m, n) */
    if (na == 3 && nb == 2) {
      dt_tensor *a2 = dt_reshape(A, dt_shape2(ea->shape.dims[0] * m, k));
      dt_tensor *g2 = dt_reshape(G, dt_shape2(ea->shape.dims[0] * m, nn));
      if (a2 && g2) t = dt__ag_mT(a2);
      gin[1] = t ? dt_matmul(t, g2) : NULL;
      dt_release(a2); dt_release(g2);
    } else {
      if ((t = dt__ag_mT(A))) gin[1] = dt_matmul(t, G);
    }
    dt_release(t); t = NULL;
    if (!(gin[1] = dt__ag_reshape(gin[1], eb->shape))) goto fail;
  }
  dt_release(A); dt_release(B); dt_release(G);
  return DT_OK;
fail:
  dt_release(A); dt_release(B); dt_release(G);
  return DT_ERR_OUT_OF_MEMORY; /* the status is the last error's; see dt__ag_backward */
}

/* the gradient of t[start:start+len] along dim: g between zeros */
static dt_tensor *dt__ag_slice_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[0];
  int dim = n->dim < 0 ? n->dim + e->shape.ndim : n->dim, k = 0, i;
  int64_t len = n->yshape.dims[dim], after = e->shape.dims[dim] - n->start - len;
  dt_tensor *parts[3] = {NULL, NULL, NULL}, *y;
  dt_shape s = e->shape;
  if (n->start == 0 && after == 0) return dt_retain((dt_tensor *)g);
  if (n->start > 0) { s.dims[dim] = n->start; if (!(parts[k++] = dt__ag_zeros(s, e->dtype, e->device))) return NULL; }
  parts[k++] = dt_retain((dt_tensor *)g);
  if (after > 0) {
    s.dims[dim] = after;
    if (!(parts[k++] = dt__ag_zeros(s, e->dtype, e->device))) { for (i = 0; i < k; i++) dt_release(parts[i]); return NULL; }
  }
  y = dt_cat((const dt_tensor *const *)parts, k, dim);
  for (i = 0; i < k; i++) dt_release(parts[i]);
  return y;
}

/* index_select's: g's rows added into zeros at the index (the backend's index_add); a dtype
   index_add lacks: as a product with the one-hot (n, k) matrix of the index, (n, k) @ g as
   (outer, k, inner) */
static dt_tensor *dt__ag_index_select_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[0];
  const dt_tensor *index = n->saved[1];
  int nd = e->shape.ndim, dim = nd == 0 ? 0 : (n->dim < 0 ? n->dim + nd : n->dim), i;
  int64_t len = nd == 0 ? 1 : e->shape.dims[dim], k = index->numel, outer = 1, inner = 1;
  dt_tensor *ar, *col, *row, *oh, *g3, *y;
  if (nd == 0) return dt_reshape(g, e->shape); /* one index, 0 */
  if (e->dtype == DT_F32 || e->dtype == DT_F64) return dt__index_add_rows(n->name, e->shape, e->dtype, e->device, dim, index, g);
  if (g->numel == 0 || k == 0) return dt__ag_zeros(e->shape, e->dtype, e->device);
  for (i = 0; i < dim; i++) outer *= e->shape.dims[i];
  for (i = dim + 1; i < nd; i++) inner *= e->shape.dims[i];
  if (!(ar = dt__iota(len, e->device))) return NULL;
  col = dt__ag_reshape(ar, dt_shape2(len, 1));
  row = col ? dt_reshape(index, dt_shape2(1, k)) : NULL;
  oh = row ? dt__ag_eq_mask(col, row, e->dtype) : NULL;
  dt_release(col); dt_release(row);
  if (!oh) return NULL;
  if (!(g3 = dt_reshape(g, dt_shape3(outer, k, inner)))) { dt_release(oh); return NULL; }
  y = dt_matmul(oh, g3);
  dt_release(oh); dt_release(g3);
  return dt__ag_reshape(y, e->shape);
}

/* where's: g to a where cond holds, to b elsewhere, each summed to its operand's shape and in its dtype */
static dt_status dt__ag_where_bw(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const dt_tensor *cond = n->saved[0];
  dt_tensor *z = dt__ag_scalar(0.0, g->dtype, n->in[1].device);
  int i;
  if (!z) return dt_last_status();
  for (i = 1; i < 3; i++) {
    const dt__ag_edge *e = &n->in[i];
    dt_tensor *t;
    if (!e->node && !e->leaf) continue;
    t = dt__ag_sum_to(i == 1 ? dt_where(cond, g, z) : dt_where(cond, z, g), &e->shape);
    if (t && t->dtype != e->dtype) t = dt__ag_cast(t, e->dtype);
    if (!(gin[i] = t)) { dt_release(z); return dt_last_status(); }
  }
  dt_release(z);
  return DT_OK;
}

/* pad's: g with the padding taken back off (a crop given back as zeros): pad by the negated amounts */
static dt_tensor *dt__ag_pad_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[0];
  int64_t pad[2 * DT_MAX_DIMS];
  int nd = e->shape.ndim, i;
  for (i = 0; i < nd; i++) { /* pad[2k], pad[2k + 1]: dim nd - 1 - k */
    int dim = nd - 1 - i;
    int64_t l = n->perm[dim], r = n->yshape.dims[dim] - e->shape.dims[dim] - l;
    pad[2 * i] = -l;
    pad[2 * i + 1] = -r;
  }
  return dt_pad(g, pad, 2 * nd, 0.0);
}

/* scatter_add's gradient of src: g gathered at the index, zeros where src reaches past the index */
static dt_tensor *dt__ag_scatter_src_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[2];
  const dt_tensor *index = n->saved[1];
  int64_t pad[2 * DT_MAX_DIMS];
  int nd = e->shape.ndim, i, same = 1;
  dt_tensor *t = dt_gather(g, n->dim, index), *y;
  if (!t) return NULL;
  for (i = 0; i < nd; i++) {
    int dim = nd - 1 - i;
    pad[2 * i] = 0;
    pad[2 * i + 1] = e->shape.dims[dim] - index->shape.dims[dim];
    if (pad[2 * i + 1] != 0) same = 0;
  }
  if (same) return t;
  y = dt_pad(t, pad, 2 * nd, 0.0);
  dt_release(t);
  return y;
}

/* max/min by dim: g to the position of the extreme that the result took (its index) */
static dt_tensor *dt__ag_arg_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[0];
  int nd = e->shape.ndim, dim = nd == 0 ? 0 : (n->dim < 0 ? n->dim + nd : n->dim), i;
  dt_shape ks, as;
  dt_tensor *ar, *idx, *mask, *gk, *y;
  if (nd == 0) return dt_reshape(g, e->shape);
  ks = dt__ag_keep(e->shape, dim);
  as = e->shape;
  for (i = 0; i < nd; i++) if (i != dim) as.dims[i] = 1;
  if (!(ar = dt__ag_reshape(dt__iota(e->shape.dims[dim], e->device), as))) return NULL;
  idx = dt_reshape(n->saved[2], ks);
  mask = idx ? dt__ag_eq_mask(ar, idx, e->dtype) : NULL;
  dt_release(ar); dt_release(idx);
  if (!mask) return NULL;
  gk = dt_reshape(g, ks);
  y = gk ? dt_mul(mask, gk) : NULL;
  dt_release(gk); dt_release(mask);
  return y;
}

/* Fills gin[i] for every input that needs a gradient (NULL for the others); on failure makes
   none and returns the status of the error reported. */
/* A linear layer's node (x (n, in), W (out, in), b (out,) -> y = x W^T + b): the fused backward of
   dt_backward_params with its gradients written (beta 0) into new tensors: on the CPU one gemm
   gW = g^T x that sums g's columns into gb as it packs (dt__gemm_opts' asum), gx = g W. */
static dt_status dt__ag_linear_bw(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const char *op = "dt_linear";
  const dt__ag_edge *ex = &n->in[0], *ew = &n->in[1], *eb = &n->in[2];
  dt_device d = ew->device;
  const dt__backend *be = dt__be(d);
  dt_dtype t = ew->dtype;
  int64_t rows = g->shape.dims[0], out = ew->shape.dims[0], in = ew->shape.dims[1];
  dt_tensor *gw = NULL, *gb = NULL, *gx = NULL;
  dt_status s = DT_OK;
  int need_w = ew->node || ew->leaf, need_b = eb->node || eb->leaf, need_x = ex->node || ex->leaf;
  if (need_w || need_b) {
    gw = dt__new(op, ew->shape, t, d);
    gb = gw ? dt__new(op, eb->shape, t, d) : NULL;
    if (!gb) { dt_release(gw); return dt_last_status(); }
    if (rows == 0 || out == 0) {
      if (gw->numel) s = be->fill(d.index, t, gw->numel, 0.0, gw->st->ptr);
      if (s == DT_OK && gb->numel) s = be->fill(d.index, t, gb->numel, 0.0, gb->st->ptr);
    } else if (d.type == DT_CPU) {
      dt__gemm_opts o;
      memset(&o, 0, sizeof o);
      o.asum = gb->st->ptr;
      s = dt__cpu_gemm_opt_rec(t, 1, 0, out, in, rows, 1.0, g->st->ptr, n->saved[0]->st->ptr, 0.0, gw->st->ptr, &o);
      if (s == DT_OK && !o.asum_done) s = be->reduce(d.index, DT__R_SUM, t, 1, rows, out, g->st->ptr, gb->st->ptr);
    } else {
      s = be->gemm(d.index, t, 1, 0, 1, out, in, rows, 1.0, g->st->ptr, 0, n->saved[0]->st->ptr, 0, 0.0, gw->st->ptr, 0);
      if (s == DT_OK) s = be->reduce(d.index, DT__R_SUM, t, 1, rows, out, g->st->ptr, gb->st->ptr);
    }
  }
  if (s == DT_OK && need_x) {
    if (!(gx = dt__new(op, ex->shape, t, d))) s = dt_last_status();
    else if (gx->numel > 0 && out > 0)
      s = be->gemm(d.index, t, 0, 0, 1, rows, in, out, 1.0, g->st->ptr, 0, n->saved[1]->st->ptr, 0, 0.0, gx->st->ptr, 0);
    else if (gx->numel > 0)
      s = be->fill(d.index, t, gx->numel, 0.0, gx->st->ptr);
  }
  if (s != DT_OK) {
    dt_release(gw); dt_release(gb); dt_release(gx);
    return dt__backend_fail(op, d, s);
  }
  gin[0] = gx;
  if (need_w) gin[1] = gw; else dt_release(gw);
  if (need_b) gin[2] = gb; else dt_release(gb);
  return DT_OK;
}

static dt_status dt__ag_backward(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const dt__ag_edge *e0 = &n->in[0], *e1 = n->nin > 1 ? &n->in[1] : NULL;
  int need0 = e0->node || e0->leaf, need1 = e1 && (e1->node || e1->leaf), i;
  dt_tensor *const *sv = n->saved;
  dt_tensor *t = NULL;
  const char *op = n->name;
  for (i = 0; i < n->nin; i++) gin[i] = NULL;
  switch (n->op) {
    case DT__AG_ADD:
      if (need0) gin[0] = dt__ag_sum_to(dt_retain((dt_tensor *)g), &e0->shape);
      if (need1) gin[1] = dt__ag_sum_to(dt_retain((dt_tensor *)g), &e1->shape);
      break;
    case DT__AG_SUB:
      if (need0) gin[0] = dt__ag_sum_to(dt_retain((dt_tensor *)g), &e0->shape);
      if (need1) gin[1] = dt__ag_sum_to(dt_neg(g), &e1->shape);
      break;
    case DT__AG_MUL:
      if (need0) gin[0] = dt__ag_sum_to(dt_mul(g, sv[1]), &e0->shape);
      if (need1) gin[1] = dt__ag_sum_to(dt_mul(g, sv[0]), &e1->shape);
      break;
    case DT__AG_DIV: /* d(a/b) = g/b, -g a/b^2 */
      if (!(t = dt_div(g, sv[1]))) break;
      if (need1) gin[1] = dt__ag_sum_to(dt__ag_affine(op, dt__ag_bin(dt_div, sv[1], dt__ag_bin(dt_mul, sv[0], dt_retain(t), 1), 1), -1.0, -0.0), &e1->shape);
      if (need0) gin[0] = dt__ag_sum_to(dt_retain(t), &e0->shape);
      break;
    case DT__AG_ADD_SCALAR: gin[0] = dt_retain((dt_tensor *)g); break;
    case DT__AG_MUL_SCALAR: gin[0] = dt_mul_scalar(g, n->p); break;
    case DT__AG_NEG: gin[0] = dt_neg(g); break;
    case DT__AG_EXP: gin[0] = dt_mul(g, sv[2]); break;
    case DT__AG_LOG: gin[0] = dt_div(g, sv[0]); break;
    case DT__AG_SQRT: gin[0] = dt__ag_bin(dt_div, g, dt_mul_scalar(sv[2], 2.0), 0); break;
    case DT__AG_RELU: gin[0] = dt__binary(op, DT__B_RELU_GRAD, g, sv[2]); break; /* y > 0 where x > 0 */
    case DT__AG_SIGMOID: gin[0] = dt__binary(op, DT__B_SIGMOID_GRAD, g, sv[2]); break; /* g (1 - y) y */
    case DT__AG_TANH: gin[0] = dt__binary(op, DT__B_TANH_GRAD, g, sv[2]); break;       /* g (1 - y^2) */
    case DT__AG_ABS: { /* g sign(x), sign(0) = 0 */
      dt_tensor *z = dt__ag_scalar(0.0, e0->dtype, e0->device), *pos = NULL, *neg = NULL;
      if (z) pos = dt__ag_cast(dt_gt(sv[0], z), e0->dtype);
      if (pos) neg = dt__ag_cast(dt_lt(sv[0], z), e0->dtype);
      if (neg) gin[0] = dt__ag_bin(dt_mul, g, dt__ag_bin(dt_sub, pos, dt_retain(neg), 0), 0);
      dt_release(z); dt_release(pos); dt_release(neg);
      break;
    }
    case DT__AG_MATMUL: if (dt__ag_matmul_bw(n, g, gin) != DT_OK) goto fail; break;
    case DT__AG_LINEAR: if (dt__ag_linear_bw(n, g, gin) != DT_OK) goto fail; break;
    case DT__AG_TRANSPOSE: gin[0] = dt_transpose(g); break;
    case DT__AG_RESHAPE: gin[0] = dt_reshape(g, e0->shape); break;
    case DT__AG_PERMUTE: {
      int inv[DT_MAX_DIMS], nd = e0->shape.ndim;
      for (i = 0; i < nd; i++) inv[n->perm[i] < 0 ? n->perm[i] + nd : n->perm[i]] = i;
      gin[0] = dt_permute(g, inv);
      break;
    }
    case DT__AG_SLICE: gin[0] = dt__ag_slice_bw(n, g); break;
    case DT__AG_INDEX_SELECT: gin[0] = dt__ag_index_select_bw(n, g); break;
    case DT__AG_CAT: case DT__AG_STACK: {
      int nd = n->yshape.ndim, dim = n->op == DT__AG_STACK ? 0 : (n->dim < 0 ? n->dim + nd : n->dim);
      int64_t off = 0;
      for (i = 0; i < n->nin; i++) {
        const dt__ag_edge *e = &n->in[i];
        int64_t len = n->op == DT__AG_STACK ? 1 : (e->shape.ndim == 1 && e->shape.dims[0] == 0) ? 0 : e->shape.dims[dim];
        if (e->node || e->leaf) {
          if (len == 0 && n->op == DT__AG_CAT) gin[i] = dt_empty(e->shape, e->dtype, e->device);
          else gin[i] = dt__ag_reshape(dt_slice(g, dim, off, off + len), e->shape);
          if (!gin[i]) goto fail;
        }
        off += len;
      }
      break;
    }
    case DT__AG_SUM: gin[0] = dt__ag_expand(dt_retain((dt_tensor *)g), &e0->shape); break;
    case DT__AG_MEAN: {
      int64_t cnt = 1;
      for (i = 0; i < e0->shape.ndim; i++) cnt *= e0->shape.dims[i];
      gin[0] = dt__ag_expand(dt_mul_scalar(g, cnt ? 1.0 / (double)cnt : 0.0), &e0->shape);
      break;
    }
    case DT__AG_SUM_DIM: {
      int dim = n->dim < 0 ? n->dim + e0->shape.ndim : n->dim;
      gin[0] = dt__ag_expand(dt_reshape(g, dt__ag_keep(e0->shape, dim)), &e0->shape);
      break;
    }
    case DT__AG_NORM: { /* g x / |x|, 0 where |x| = 0 (as PyTorch) */
      dt_tensor *z = dt__ag_scalar(0.0, e0->dtype, e0->device), *nz = NULL, *den = NULL;
      if (z) nz = dt__ag_cast(dt_ne(sv[2], z), e0->dtype);
      if (nz) den = dt__ag_bin(dt_add, sv[2], dt__ag_cast(dt_eq(sv[2], z), e0->dtype), 0);
      if (den) gin[0] = dt__ag_bin(dt_mul, sv[0], dt__ag_bin(dt_div, den, dt__ag_bin(dt_mul, nz, dt_retain((dt_tensor *)g), 1), 1), 0);
      dt_release(z); dt_release(nz); dt_release(den);
      break;
    }
    case DT__AG_MAX_DIM: case DT__AG_MIN_DIM: gin[0] = dt__ag_arg_bw(n, g); break;
    case DT__AG_MAX: case DT__AG_MIN: { /* split evenly between the elements equal to the result */
      dt_tensor *mask = dt__ag_eq_mask(sv[0], sv[2], e0->dtype), *cnt = mask ? dt_sum(mask) : NULL;
      if (cnt) gin[0] = dt__ag_bin(dt_mul, mask, dt_div(g, cnt), 0);
      dt_release(mask); dt_release(cnt);
      break;
    }
    case DT__AG_SOFTMAX: { /* y (g - sum(g y)) */
      int dim = n->dim < 0 ? n->dim + e0->shape.ndim : n->dim;
      gin[0] = dt__ag_bin(dt_mul, sv[2], dt__ag_bin(dt_sub, g, dt__ag_sum_keep(dt_mul(g, sv[2]), dim), 0), 0);
      break;
    }
    case DT__AG_LOG_SOFTMAX: { /* g - exp(y) sum(g) */
      int dim = n->dim < 0 ? n->dim + e0->shape.ndim : n->dim;
      t = dt__ag_sum_keep(dt_retain((dt_tensor *)g), dim);
      if (t) gin[0] = dt__ag_bin(dt_sub, g, dt__ag_bin(dt_mul, t, dt_exp(sv[2]), 1), 0);
      break;
    }
    case DT__AG_CROSS_ENTROPY: gin[0] = dt__ag_bin(dt_mul, g, dt_cross_entropy_grad(sv[0], sv[1]), 1); break;
    case DT__AG_MSE_LOSS:
      if (!(t = dt__ag_bin(dt_mul, g, dt_mse_loss_grad(sv[0], sv[1]), 1))) break;
      if (need0) gin[0] = dt_retain(t);
      if (need1) gin[1] = dt_neg(t);
      break;
    case DT__AG_CAST: gin[0] = dt_cast(g, e0->dtype); break;
    case DT__AG_COPYTO: gin[0] = dt_copyto(g, e0->device); break;
    case DT__AG_SIN: gin[0] = dt__ag_bin(dt_mul, g, dt_cos(sv[0]), 0); break;
    case DT__AG_COS: gin[0] = dt__ag_bin(dt_mul, g, dt__ag_affine(op, dt_sin(sv[0]), -1.0, -0.0), 0); break;
    case DT__AG_ERF: /* g 2/sqrt(pi) exp(-x^2) */
      gin[0] = dt__ag_bin(dt_mul, g, dt__ag_affine(op, dt__ag_exp(dt__ag_affine(op, dt_mul(sv[0], sv[0]), -1.0, -0.0)),
                                                   1.1283791670955126, 0.0), 0);
      break;
    case DT__AG_GELU: gin[0] = dt__ag_bin(dt_mul, g, dt__unary(op, DT__U_GELU_GRAD, sv[0], 0, 0), 0); break;
    case DT__AG_POW: /* g p x^(p-1); p = 0: zeros, as PyTorch */
      if (n->p == 0) gin[0] = dt__ag_zeros(e0->shape, e0->dtype, e0->device);
      else gin[0] = dt__ag_bin(dt_mul, g, dt__ag_affine(op, dt__unary(op, DT__U_POW, sv[0], n->p - 1.0, 0), n->p, -0.0), 0);
      break;
    case DT__AG_CLAMP: { /* g where lo <= x <= hi (NaN x: 0), as PyTorch */
      dt_tensor *ge = dt__ag_cast(dt_ge_scalar(sv[0], n->p), e0->dtype), *le = ge ? dt__ag_cast(dt_le_scalar(sv[0], n->p2), e0->dtype) : NULL;
      if (le) gin[0] = dt__ag_bin(dt_mul, g, dt__ag_bin(dt_mul, ge, dt_retain(le), 0), 0);
      dt_release(ge); dt_release(le);
      break;
    }
    case DT__AG_CONV2D: {
      const int *q = n->perm;
      int need2 = n->nin > 2 && (n->in[2].node || n->in[2].leaf);
      if (dt__conv2d_backward(g, sv[0], sv[1], sv[2], q[0], q[1], q[2], q[3], q[4], q[5], q[6], need0 ? &gin[0] : NULL,
                              need1 ? &gin[1] : NULL, need2 ? &gin[2] : NULL) != DT_OK)
        goto fail;
      break;
    }
    case DT__AG_BATCH_NORM: {
      int need2 = n->nin > 2 && (n->in[2].node || n->in[2].leaf);
      if (dt__bn_backward(g, sv[0], n->nin > 1 ? sv[1] : NULL, sv[2], n->p, n->dim, need0 ? &gin[0] : NULL, need1 ? &gin[1] : NULL,
                          need2 ? &gin[2] : NULL) != DT_OK)
        goto fail;
      break;
    }
    case DT__AG_MAX_POOL2D:
      gin[0] = dt_f_max_pool2d_backward(g, sv[0], sv[2], n->perm[0], n->perm[1], n->perm[2], n->perm[3], n->perm[4], n->perm[5]);
      break;
    case DT__AG_AVG_POOL2D:
      gin[0] = dt_f_avg_pool2d_backward(g, sv[0], n->perm[0], n->perm[1], n->perm[2], n->perm[3], n->perm[4], n->perm[5]);
      break;
    case DT__AG_ADAPTIVE_AVG_POOL2D: gin[0] = dt_f_adaptive_avg_pool2d_backward(g, sv[0]); break;
    case DT__AG_WHERE: if (dt__ag_where_bw(n, g, gin) != DT_OK) goto fail; break;
    case DT__AG_GATHER: /* scatter-add of g into zeros; a half g in float32, rounded once */
      if (dt__is_half(e0->dtype)) {
        dt_tensor *g32 = dt_cast(g, DT_F32);
        if (g32 && (t = dt__ag_zeros(e0->shape, DT_F32, e0->device))) gin[0] = dt__ag_cast(dt_scatter_add(t, n->dim, sv[1], g32), e0->dtype);
        dt_release(g32);
      } else if ((t = dt__ag_zeros(e0->shape, e0->dtype, e0->device)))
        gin[0] = dt_scatter_add(t, n->dim, sv[1], g);
      break;
    case DT__AG_SCATTER_ADD:
      if (need0) gin[0] = dt_retain((dt_tensor *)g);
      if (n->in[2].node || n->in[2].leaf) gin[2] = dt__ag_scatter_src_bw(n, g);
      break;
    case DT__AG_PAD: gin[0] = dt__ag_pad_bw(n, g); break;
    case DT__AG_BCE_WITH_LOGITS: case DT__AG_NLL_LOSS: case DT__AG_L1_LOSS: case DT__AG_SMOOTH_L1_LOSS: case DT__AG_MSE_LOSS_EX:
      if (dt__ag_loss_bw(n, g, gin) != DT_OK) goto fail;
      break;
  }
  dt_release(t);
  for (i = 0; i < n->nin; i++) {
    if ((n->in[i].node || n->in[i].leaf) && !gin[i]) goto fail;
    /* an input of another dtype than the result's (type promotion): its gradient in its own dtype */
    if (gin[i] && gin[i]->dtype != n->in[i].dtype && !(gin[i] = dt__ag_cast(gin[i], n->in[i].dtype))) goto fail;
  }
  return DT_OK;
fail:
  for (i = 0; i < n->nin; i++) { dt_release(gin[i]); gin[i] = NULL; }
  return dt_last_status() != DT_OK ? dt_last_status() : DT_ERR_BACKEND;
}
