/* Dropout, batch and layer normalisation, embedding and GELU (DESIGN.md "Layers and the
   operations a PyTorch user reaches for"): the functional forms are written with the recorded
   operations (so each runs on the backend of its input and goes back with autograd), but for
   batch norm in F32 and F64, which is the backend's batch_norm slots, recorded as one node
   (dt__bn_fused); the modules are of the user-module kind (dt_module_new), their state as
   PyTorch's: parameters and buffers. */

/* Holds v (may be NULL) among the tensors t[0..*nt) made on the way to a result; returns v. */
static dt_tensor *dt__norm_hold(dt_tensor **t, int *nt, dt_tensor *v) {
  if (v) t[(*nt)++] = v;
  return v;
}
/* Releases the tensors made on the way to a result. */
static void dt__release_all(dt_tensor **t, int n) {
  int i;
  for (i = 0; i < n; i++) dt_release(t[i]);
}

DTDEF dt_tensor *dt_f_dropout(const dt_tensor *x, double p, int training) {
  const char *op = "dt_f_dropout";
  dt_tensor *t[4] = {NULL, NULL, NULL, NULL}, *y = NULL;
  if (dt__check_tensor(op, "x", x) != DT_OK || dt__float_only(op, "x", x) != DT_OK) return NULL;
  if (!(p >= 0.0 && p <= 1.0)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dropout probability has to be between 0 and 1, but got %g", op, p);
    return NULL;
  }
  if (!training || p == 0.0 || x->numel == 0) return dt_retain((dt_tensor *)x); /* as PyTorch: x itself, no draw */
  if (p == 1.0) return dt_mul_scalar(x, 0.0);
  /* keep where u < 1 - p, u uniform in [0, 1) from one draw: the same on every backend */
  if ((t[0] = dt__random(op, x->shape, x->st->device, 0)) && (t[1] = dt_lt_scalar(t[0], 1.0 - p)) &&
      (t[2] = dt_cast(t[1], x->dtype)) && (t[3] = dt_mul_scalar(t[2], 1.0 / (1.0 - p))))
    y = dt_mul(x, t[3]);
  dt__release_all(t, 4);
  return y;
}

/* A per-channel vector of dt_f_batch_norm or dt_f_layer_norm: (c,) on x's device in x's dtype. */
static dt_status dt__norm_vec(const char *op, const char *name, const dt_tensor *v, const dt_tensor *x, int64_t c) {
  char a[200];
  dt_status s;
  if ((s = dt__same_device(op, "x", x, name, v)) != DT_OK || (s = dt__same_dtype(op, "x", x, name, v)) != DT_OK) return s;
  if (v->shape.ndim != 1 || v->shape.dims[0] != c)
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s of shape (%lld,), got %s", op, name, (long long)c, dt__shape_str(&v->shape, a, sizeof a));
  return DT_OK;
}

/* dt_f_batch_norm's checks, which allocate nothing; *l: the product of x's dims after the channels. */
static dt_status dt__bn_check(const char *op, const dt_tensor *x, const dt_tensor *running_mean, const dt_tensor *running_var,
                              const dt_tensor *weight, const dt_tensor *bias, int training, double momentum, double eps, int64_t *l) {
  char a[200];
  dt_status s;
  int64_t c;
  int k;
  if ((s = dt__check_tensor(op, "x", x)) != DT_OK || (s = dt__float_only(op, "x", x)) != DT_OK) return s;
  if (x->shape.ndim < 2 || x->shape.ndim > 4)
    return dt__fail(DT_ERR_SHAPE, "%s: expected x of 2 to 4 dims, (n, c), (n, c, l) or (n, c, h, w), got %s", op,
                    dt__shape_str(&x->shape, a, sizeof a));
  c = x->shape.dims[1];
  for (*l = 1, k = 2; k < x->shape.ndim; k++) *l *= x->shape.dims[k];
  if ((running_mean && (s = dt__norm_vec(op, "running_mean", running_mean, x, c)) != DT_OK) ||
      (running_var && (s = dt__norm_vec(op, "running_var", running_var, x, c)) != DT_OK) ||
      (weight && (s = dt__norm_vec(op, "weight", weight, x, c)) != DT_OK) || (bias && (s = dt__norm_vec(op, "bias", bias, x, c)) != DT_OK))
    return s;
  if (!training && (!running_mean || !running_var))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: running_mean and running_var are needed when not training", op);
  if (training && running_mean && running_mean->requires_grad)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: running_mean requires grad; the running statistics are updated in place", op);
  if (training && running_var && running_var->requires_grad)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: running_var requires grad; the running statistics are updated in place", op);
  if (training && x->shape.dims[0] * *l == 1) /* none (an empty batch) is PyTorch's empty result */
    return dt__fail(DT_ERR_SHAPE, "%s: Expected more than 1 value per channel when training, got input size %s", op,
                    dt__shape_str(&x->shape, a, sizeof a));
  if (!(momentum >= 0.0 && momentum <= 1.0) || !(eps >= 0.0))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: expected momentum in [0, 1] and eps >= 0, got %g and %g", op, momentum, eps);
  return DT_OK;
}

/* dt_f_batch_norm through the backend's batch_norm slot (F32 and F64, weight and bias both given
   or both not, x not empty): one pass per channel, recorded as one node whose backward is the
   backend's batch_norm_backward. saved[2] holds the statistics the forward normalised with, as
   (2, c): the batch's mean and biased variance (training), or a copy of the running ones. */
static int dt__bn_fused_ok(const dt_tensor *x, const dt_tensor *weight, const dt_tensor *bias) {
  const dt__backend *be = dt__be(x->st->device);
  return (x->dtype == DT_F32 || x->dtype == DT_F64) && x->numel > 0 && !weight == !bias && be->batch_norm &&
         be->batch_norm_backward;
}
static dt_tensor *dt__bn_fused(const char *op, const dt_tensor *x, dt_tensor *running_mean, dt_tensor *running_var,
                               const dt_tensor *weight, const dt_tensor *bias, int training, double momentum, double eps, int64_t l) {
  const dt_device d = x->st->device;
  const int64_t c = x->shape.dims[1];
  const size_t es = dt__dtype_bytes(x->dtype);
  const int rec = !dt__no_grad && (x->requires_grad || (weight && (weight->requires_grad || bias->requires_grad)));
  dt_tensor *y, *st = NULL;
  dt__bn p;
  dt_status s;
  if (!(y = dt__new(op, x->shape, x->dtype, d))) return NULL;
  if (training) st = dt__new(op, dt_shape2(2, c), x->dtype, d);
  else if (rec) {
    const dt_tensor *rv[2];
    int prev = dt__no_grad;
    rv[0] = running_mean; rv[1] = running_var;
    dt__no_grad = 1;
    st = dt_stack(rv, 2);
    dt__no_grad = prev;
  }
  if ((training || rec) && !st) { dt_release(y); return NULL; }
  if (rec) { /* recorded before it runs: a failure to record leaves the running statistics as they were */
    const dt_tensor *in[3];
    dt__ag_args args;
    memset(&args, 0, sizeof args);
    args.p = eps; args.dim = training;
    in[0] = x; in[1] = weight; in[2] = bias;
    if (!(y = dt__ag_record(y, DT__AG_BATCH_NORM, op, weight ? 3 : 1, in, &args))) { dt_release(st); return NULL; }
    y->node->saved[2] = st; /* the node's now */
    y->node->saved_version[2] = *dt__version(st);
  }
  memset(&p, 0, sizeof p);
  p.n = x->shape.dims[0]; p.c = c; p.l = l; p.eps = eps; p.momentum = momentum; p.train = training;
  p.x = x->st->ptr; p.w = weight ? weight->st->ptr : NULL; p.b = bias ? bias->st->ptr : NULL;
  p.rmean = running_mean ? running_mean->st->ptr : NULL; p.rvar = running_var ? running_var->st->ptr : NULL;
  if (training) { p.mean = st->st->ptr; p.var = (char *)st->st->ptr + (size_t)c * es; }
  p.y = y->st->ptr;
  s = dt__run(op, d, dt__be(d)->batch_norm(d.index, x->dtype, &p));
  if (!rec) dt_release(st);
  if (s != DT_OK) { dt_release(y); return NULL; }
  if (training && running_mean) dt__bump(running_mean);
  if (training && running_var) dt__bump(running_var);
  return y;
}

/* The gradients of a fused batch norm's node (see dt__bn_fused) from g: *gx, *gw, *gb, each
   wanted where its pointer is not NULL. */
static dt_status dt__bn_backward(const dt_tensor *g, const dt_tensor *x, const dt_tensor *w, const dt_tensor *st, double eps,
                                 int training, dt_tensor **gx, dt_tensor **gw, dt_tensor **gb) {
  const char *op = "dt_f_batch_norm (backward)";
  const dt_device d = x->st->device;
  const int64_t c = x->shape.dims[1];
  const size_t es = dt__dtype_bytes(x->dtype);
  dt_tensor *ox = NULL, *ow = NULL, *ob = NULL, *ws;
  dt__bn p;
  dt_status s = DT_OK;
  int k;
  if (!(ws = dt__new(op, dt_shape2(2, c), DT_F64, d)) || (gx && !(ox = dt__new(op, x->shape, x->dtype, d))) ||
      (gw && !(ow = dt__new(op, dt_shape1(c), x->dtype, d))) || (gb && !(ob = dt__new(op, dt_shape1(c), x->dtype, d))))
    s = dt_last_status();
  if (s == DT_OK) {
    memset(&p, 0, sizeof p);
    p.n = x->shape.dims[0]; p.c = c; p.eps = eps; p.train = training;
    for (p.l = 1, k = 2; k < x->shape.ndim; k++) p.l *= x->shape.dims[k];
    p.x = x->st->ptr; p.w = w ? w->st->ptr : NULL; p.gy = g->st->ptr;
    p.mean = st->st->ptr; p.var = (char *)st->st->ptr + (size_t)c * es;
    p.gx = ox ? ox->st->ptr : NULL; p.gw = ow ? ow->st->ptr : NULL; p.gb = ob ? ob->st->ptr : NULL;
    p.ws = ws->st->ptr;
    s = dt__run(op, d, dt__be(d)->batch_norm_backward(d.index, x->dtype, &p));
  }
  dt_release(ws);
  if (s != DT_OK) {
    dt_release(ox); dt_release(ow); dt_release(ob);
    return s;
  }
  if (gx) *gx = ox;
  if (gw) *gw = ow;
  if (gb) *gb = ob;
  return DT_OK;
}

DTDEF dt_tensor *dt_f_batch_norm(const dt_tensor *x, dt_tensor *running_mean, dt_tensor *running_var, const dt_tensor *weight,
                                 const dt_tensor *bias, int training, double momentum, double eps) {
  const char *op = "dt_f_batch_norm";
  dt_tensor *t[16], *r, *u, *mean = NULL, *var = NULL, *d = NULL, *y = NULL, *out = NULL;
  dt_shape cs;
  int64_t n, c, l = 1, count;
  int nt = 0;
  memset(t, 0, sizeof t);
  if (dt__bn_check(op, x, running_mean, running_var, weight, bias, training, momentum, eps, &l) != DT_OK) return NULL;
  if (dt__is_half(x->dtype)) { /* in F32, rounded once (the casts recorded), as PyTorch's half batch norm */
    int failed = 0;
    dt_tensor *cx = dt__autocast_cast(x, DT_F32, &failed), *cw = dt__autocast_cast(weight, DT_F32, &failed),
              *cb = dt__autocast_cast(bias, DT_F32, &failed), *rm = dt__autocast_cast(running_mean, DT_F32, &failed),
              *rv = dt__autocast_cast(running_var, DT_F32, &failed), *nm = NULL, *nv = NULL;
    u = failed ? NULL : dt_f_batch_norm(cx, rm, rv, cw, cb, training, momentum, eps);
    out = u ? dt_cast(u, x->dtype) : NULL;
    if (out && training && (running_mean || running_var)) { /* the new statistics made first: a failure changes nothing */
      dt_status s = DT_OK;
      int prev = dt__no_grad;
      dt__no_grad = 1;
      if ((running_mean && !(nm = dt_cast(rm, running_mean->dtype))) || (running_var && !(nv = dt_cast(rv, running_var->dtype))))
        s = dt_last_status();
      if (s == DT_OK && nm) s = dt_copy_(running_mean, nm);
      if (s == DT_OK && nv) s = dt_copy_(running_var, nv);
      dt__no_grad = prev;
      if (s != DT_OK) { dt_release(out); out = NULL; }
    }
    dt_release(cx); dt_release(cw); dt_release(cb); dt_release(rm); dt_release(rv); dt_release(u);
    dt_release(nm); dt_release(nv);
    return out;
  }
  if (dt__bn_fused_ok(x, weight, bias)) return dt__bn_fused(op, x, running_mean, running_var, weight, bias, training, momentum, eps, l);
  n = x->shape.dims[0]; c = x->shape.dims[1];
  count = n * l;
  cs = dt_shape3(1, c, 1);
  /* x as (n, c, l); the statistics (1, c, 1) */
  if (!(r = dt__norm_hold(t, &nt, dt_reshape(x, dt_shape3(n, c, l))))) goto done;
  if (training) {
    if (!(u = dt__norm_hold(t, &nt, dt_mean_dim(r, 2, 1))) || !(mean = dt__norm_hold(t, &nt, dt_mean_dim(u, 0, 1))) ||
        !(d = dt__norm_hold(t, &nt, dt_sub(r, mean))) || !(u = dt__norm_hold(t, &nt, dt_mul(d, d))) ||
        !(u = dt__norm_hold(t, &nt, dt_mean_dim(u, 2, 1))) || !(var = dt__norm_hold(t, &nt, dt_mean_dim(u, 0, 1))))
      goto done;
  } else {
    if (!(mean = dt__norm_hold(t, &nt, dt_reshape(running_mean, cs))) || !(d = dt__norm_hold(t, &nt, dt_sub(r, mean))) ||
        !(var = dt__norm_hold(t, &nt, dt_reshape(running_var, cs))))
      goto done;
  }
  if (!(u = dt__norm_hold(t, &nt, dt_add_scalar(var, eps))) || !(u = dt__norm_hold(t, &nt, dt_pow_scalar(u, -0.5))) ||
      !(y = dt__norm_hold(t, &nt, dt_mul(d, u))))
    goto done;
  if (weight && (!(u = dt__norm_hold(t, &nt, dt_reshape(weight, cs))) || !(y = dt__norm_hold(t, &nt, dt_mul(y, u))))) goto done;
  if (bias && (!(u = dt__norm_hold(t, &nt, dt_reshape(bias, cs))) || !(y = dt__norm_hold(t, &nt, dt_add(y, u))))) goto done;
  if (!(out = dt_reshape(y, x->shape))) goto done;
  if (training && (running_mean || running_var) && count > 0) { /* an empty batch leaves them as they are, as PyTorch */
    /* r = (1 - momentum) r + momentum s, the new values made first: a failure changes nothing */
    dt_tensor *u[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *nm = NULL, *nv = NULL;
    dt_status s = DT_OK;
    int prev = dt__no_grad;
    dt__no_grad = 1;
    if (running_mean && (!(u[0] = dt_reshape(mean, dt_shape1(c))) || !(u[1] = dt_mul_scalar(u[0], momentum)) ||
                         !(u[2] = dt_mul_scalar(running_mean, 1.0 - momentum)) || !(nm = dt_add(u[1], u[2]))))
      s = dt_last_status();
    if (s == DT_OK && running_var &&
        (!(u[3] = dt_reshape(var, dt_shape1(c))) || !(u[4] = dt_mul_scalar(u[3], momentum * (double)count / (double)(count - 1))) ||
         !(u[5] = dt_mul_scalar(running_var, 1.0 - momentum)) || !(nv = dt_add(u[4], u[5]))))
      s = dt_last_status();
    if (s == DT_OK && nm) s = dt_copy_(running_mean, nm);
    if (s == DT_OK && nv) s = dt_copy_(running_var, nv);
    dt__no_grad = prev;
    dt__release_all(u, 6); dt_release(nm); dt_release(nv);
    if (s != DT_OK) { dt_release(out); out = NULL; }
  }
done:
  dt__release_all(t, nt);
  return out;
}

DTDEF dt_tensor *dt_f_layer_norm(const dt_tensor *x, int64_t normalized_shape, const dt_tensor *weight, const dt_tensor *bias,
                                 double eps) {
  const char *op = "dt_f_layer_norm";
  dt_tensor *t[10], *u, *y = NULL, *d = NULL;
  char a[200];
  int nt = 0, last;
  memset(t, 0, sizeof t);
  if (dt__check_tensor(op, "x", x) != DT_OK || dt__float_only(op, "x", x) != DT_OK) return NULL;
  if (dt__autocast_up(x, weight) || dt__autocast_up(x, bias)) { /* autocast: in F32, as torch.autocast's layer_norm */
    int failed = 0;
    dt_tensor *cx = dt__autocast_cast(x, DT_F32, &failed), *cw = dt__autocast_cast(weight, DT_F32, &failed),
              *cb = dt__autocast_cast(bias, DT_F32, &failed);
    y = failed ? NULL : dt_f_layer_norm(cx, normalized_shape, cw, cb, eps);
    dt_release(cx); dt_release(cw); dt_release(cb);
    return y;
  }
  if (x->shape.ndim < 1 || x->shape.dims[x->shape.ndim - 1] != normalized_shape || normalized_shape < 1) {
    dt__fail(DT_ERR_SHAPE, "%s: expected x of shape (*, %lld) (normalized_shape at least 1), got %s", op, (long long)normalized_shape,
             dt__shape_str(&x->shape, a, sizeof a));
    return NULL;
  }
  if ((weight && dt__norm_vec(op, "weight", weight, x, normalized_shape) != DT_OK) ||
      (bias && dt__norm_vec(op, "bias", bias, x, normalized_shape) != DT_OK))
    return NULL;
  if (!(eps >= 0.0)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: expected eps >= 0, got %g", op, eps); return NULL; }
  if (dt__is_half(x->dtype)) { /* in F32, rounded once (the casts recorded), as PyTorch's half layer norm */
    int failed = 0;
    dt_tensor *cx = dt__autocast_cast(x, DT_F32, &failed), *cw = dt__autocast_cast(weight, DT_F32, &failed),
              *cb = dt__autocast_cast(bias, DT_F32, &failed);
    u = failed ? NULL : dt_f_layer_norm(cx, normalized_shape, cw, cb, eps);
    y = u ? dt_cast(u, x->dtype) : NULL;
    dt_release(cx); dt_release(cw); dt_release(cb); dt_release(u);
    return y;
  }
  last = x->shape.ndim - 1;
  if (!(u = dt__norm_hold(t, &nt, dt_mean_dim(x, last, 1))) || !(d = dt__norm_hold(t, &nt, dt_sub(x, u))) ||
      !(u = dt__norm_hold(t, &nt, dt_mul(d, d))) || !(u = dt__norm_hold(t, &nt, dt_mean_dim(u, last, 1))) ||
      !(u = dt__norm_hold(t, &nt, dt_add_scalar(u, eps))) || !(u = dt__norm_hold(t, &nt, dt_pow_scalar(u, -0.5))) ||
      !(y = dt__norm_hold(t, &nt, dt_mul(d, u))))
    y = NULL;
  if (y && weight) y = dt__norm_hold(t, &nt, dt_mul(y, weight));
  if (y && bias) y = dt__norm_hold(t, &nt, dt_add(y, bias));
  if (y) dt_retain(y);
  dt__release_all(t, nt);
  return y;
}

DTDEF dt_tensor *dt_f_embedding(const dt_tensor *idx, const dt_tensor *weight) {
  const char *op = "dt_f_embedding";
  dt_tensor *flat, *rows, *y;
  dt_shape s;
  char a[200];
  if (dt__check_tensor(op, "idx", idx) != DT_OK || dt__check_tensor(op, "weight", weight) != DT_OK) return NULL;
  if (idx->dtype != DT_I64) {
    dt__fail(DT_ERR_DTYPE, "%s: idx is %s; indices are int64 (convert with dt_cast)", op, dt_dtype_name(idx->dtype));
    return NULL;
  }
  if (dt__float_only(op, "weight", weight) != DT_OK || dt__same_device(op, "weight", weight, "idx", idx) != DT_OK) return NULL;
  if (weight->shape.ndim != 2) {
    dt__fail(DT_ERR_SHAPE, "%s: expected weight of shape (num_embeddings, embedding_dim), got %s", op, dt__shape_str(&weight->shape, a, sizeof a));
    return NULL;
  }
  if (idx->shape.ndim >= DT_MAX_DIMS) {
    dt__fail(DT_ERR_SHAPE, "%s: idx has %d dims; the result adds one and a tensor has at most %d", op, idx->shape.ndim, DT_MAX_DIMS);
    return NULL;
  }
  s = idx->shape;
  s.dims[s.ndim++] = weight->shape.dims[1];
  if (!(flat = dt_reshape(idx, dt_shape1(idx->numel)))) return NULL;
  rows = dt_index_select(weight, 0, flat);
  dt_release(flat);
  if (!rows) { /* an index out of range: said as this function's */
    char prev[sizeof dt__err_msg];
    dt_status ps = dt__err_status;
    memcpy(prev, dt__err_msg, sizeof prev);
    dt__fail(ps, "%s: idx does not fit weight %s: %.900s", op, dt__shape_str(&weight->shape, a, sizeof a), prev);
    return NULL;
  }
  y = dt_reshape(rows, s);
  dt_release(rows);
  return y;
}

/* ---- the modules ---- */

typedef enum dt__norm_kind { DT__N_DROPOUT = 0, DT__N_BATCH_NORM, DT__N_LAYER_NORM, DT__N_EMBEDDING, DT__N_GELU } dt__norm_kind;

typedef struct dt__norm_layer {
  dt__norm_kind kind;
  double p;                 /* dropout */
  int64_t features;         /* batch norm: channels, 0 until a lazy layer's first forward; layer norm: the last dim */
  int ndim;                 /* batch norm: the last input's dims (4: BatchNorm2d, 2 or 3: BatchNorm1d), 0 before any */
} dt__norm_layer;

static void dt__norm_layer_free(void *p) { DT_FREE(p); }

/* Lets go of a module's own parameters and buffers (a half-made layer). */
static void dt__module_drop_own(dt_module *m) {
  int i;
  for (i = 0; i < m->np; i++) { dt_release(m->pts[i]); dt_release(m->pgs[i]); DT_FREE(m->pnames[i]); }
  for (i = 0; i < m->nb; i++) { dt_release(m->bts[i]); DT_FREE(m->bnames[i]); }
  m->np = 0; m->nb = 0;
}

/* Registers the tensors t[0..n) (those before nparams as parameters, the rest as buffers), all
   or none; takes the references in t in any case. */
static dt_status dt__module_own(const char *op, dt_module *m, dt_tensor **t, const char *const *names, int n, int nparams) {
  dt_status s = DT_OK;
  int i;
  for (i = 0; i < n; i++)
    if (!t[i]) { s = dt_last_status(); if (s == DT_OK) s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory", op); }
  for (i = 0; i < n && s == DT_OK; i++) s = i < nparams ? dt_module_add_param(m, names[i], t[i]) : dt_module_add_buffer(m, names[i], t[i]);
  if (s != DT_OK) dt__module_drop_own(m);
  for (i = 0; i < n; i++) {
    if (t[i] && s != DT_OK) { t[i]->requires_grad = 0; dt_release(t[i]->grad); t[i]->grad = NULL; }
    dt_release(t[i]);
  }
  return s;
}

/* BatchNorm's state: weight ones, bias zeros, running_mean zeros, running_var ones, num_batches_tracked 0. */
static dt_status dt__bn_init(const char *op, dt_module *m, dt__norm_layer *L, int64_t c, dt_device d, dt_dtype t) {
  static const char *const names[5] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
  static const double v[5] = {1.0, 0.0, 0.0, 1.0, 0.0};
  dt_tensor *ts[5] = {NULL, NULL, NULL, NULL, NULL};
  dt_status s;
  int i;
  for (i = 0; i < 5 && (i == 0 || ts[i - 1]); i++) ts[i] = dt__filled(op, i == 4 ? dt_shape0() : dt_shape1(c), i == 4 ? DT_I64 : t, v[i], d);
  if ((s = dt__module_own(op, m, ts, names, 5, 2)) == DT_OK) L->features = c;
  return s;
}

static dt_tensor *dt__norm_forward(dt_module *m, const dt_tensor *x, void *user) {
  dt__norm_layer *L = (dt__norm_layer *)user;
  switch (L->kind) {
    case DT__N_DROPOUT: return dt_f_dropout(x, L->p, m->training);
    case DT__N_BATCH_NORM: {
      const char *op = "dt_batch_norm";
      dt_tensor *nb = NULL, *y;
      char a[200];
      if (dt__check_tensor(op, "x", x) != DT_OK) return NULL;
      if (dt__is_half(x->dtype) && x->dtype != m->dtype && dt__autocast[x->st->device.type == DT_CUDA] != DT_F32) {
        /* under autocast (a convolution's half output, float32 parameters): as PyTorch's batch norm of
           mixed dtypes, normalised in the parameters' dtype, the result in x's (casts autograd records) */
        dt_tensor *xf = dt_cast(x, m->dtype), *yf = xf ? dt__norm_forward(m, xf, user) : NULL;
        y = yf ? dt_cast(yf, x->dtype) : NULL;
        dt_release(xf); dt_release(yf);
        return y;
      }
      if (x->shape.ndim < 2 || x->shape.ndim > 4) {
        dt__fail(DT_ERR_SHAPE, "%s: expected x (n, c), (n, c, l) or (n, c, h, w), got %s", op, dt__shape_str(&x->shape, a, sizeof a));
        return NULL;
      }
      if (L->features == 0) { /* lazy: the channels from the first input */
        if (dt__float_only(op, "x", x) != DT_OK) return NULL;
        if (x->shape.dims[1] < 1) {
          dt__fail(DT_ERR_SHAPE, "%s: a lazy layer takes its channels from x, which has none: %s", op, dt__shape_str(&x->shape, a, sizeof a));
          return NULL;
        }
        if (dt__bn_init(op, m, L, x->shape.dims[1], x->st->device, x->dtype) != DT_OK) return NULL;
      }
      if (x->shape.dims[1] != L->features) {
        dt__fail(DT_ERR_SHAPE, "%s: expected x with %lld channels (dim 1), got %s", op, (long long)L->features, dt__shape_str(&x->shape, a, sizeof a));
        return NULL;
      }
      { /* refused before anything is made */
        int64_t l;
        if (dt__bn_check("dt_f_batch_norm", x, m->bts[0], m->bts[1], m->pts[0], m->pts[1], m->training, 0.1, 1e-5, &l) != DT_OK) return NULL;
      }
      L->ndim = x->shape.ndim;
      if (m->training) { /* num_batches_tracked + 1, made first: a failed forward changes nothing */
        int prev = dt__no_grad;
        dt__no_grad = 1;
        nb = dt_add_scalar(m->bts[2], 1.0);
        dt__no_grad = prev;
        if (!nb) return NULL;
      }
      y = dt_f_batch_norm(x, m->bts[0], m->bts[1], m->pts[0], m->pts[1], m->training, 0.1, 1e-5);
      if (y && nb && dt_copy_(m->bts[2], nb) != DT_OK) { dt_release(y); y = NULL; }
      dt_release(nb);
      return y;
    }
    case DT__N_LAYER_NORM: return dt_f_layer_norm(x, L->features, m->pts[0], m->pts[1], 1e-5);
    case DT__N_EMBEDDING: return dt_f_embedding(x, m->pts[0]);
    case DT__N_GELU: return dt_gelu(x);
  }
  return NULL;
}

static dt_module *dt__norm_new(const char *op, const dt__norm_layer *proto) {
  dt__norm_layer *L = (dt__norm_layer *)DT_MALLOC(sizeof(dt__norm_layer));
  dt_module *m;
  if (!L) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); return NULL; }
  *L = *proto;
  if (!(m = dt_module_new(op, dt__norm_forward, L, dt__norm_layer_free))) { DT_FREE(L); return NULL; }
  return m;
}

DTDEF dt_module *dt_dropout(double p) {
  dt__norm_layer L;
  if (!(p >= 0.0 && p <= 1.0)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_dropout: dropout probability has to be between 0 and 1, but got %g", p);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__N_DROPOUT; L.p = p;
  return dt__norm_new("dt_dropout", &L);
}

DTDEF dt_module *dt_batch_norm(int64_t num_features) {
  const char *op = "dt_batch_norm";
  dt__norm_layer L;
  dt_module *m;
  if (num_features < 0 || num_features > ((int64_t)1 << 40)) {
    dt__fail(DT_ERR_SHAPE, "%s: expected num_features >= 0 (0: lazy), got %lld", op, (long long)num_features);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__N_BATCH_NORM;
  if (!(m = dt__norm_new(op, &L))) return NULL;
  if (num_features > 0 && dt__bn_init(op, m, (dt__norm_layer *)m->user, num_features, dt_cpu(), DT_F32) != DT_OK) {
    dt_module_free(m);
    return NULL;
  }
  return m;
}

DTDEF dt_module *dt_layer_norm(int64_t normalized_shape) {
  static const char *const names[2] = {"weight", "bias"};
  const char *op = "dt_layer_norm";
  dt__norm_layer L;
  dt_tensor *ts[2];
  dt_module *m;
  if (normalized_shape < 1 || normalized_shape > ((int64_t)1 << 40)) {
    dt__fail(DT_ERR_SHAPE, "%s: expected normalized_shape >= 1, got %lld", op, (long long)normalized_shape);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__N_LAYER_NORM; L.features = normalized_shape;
  if (!(m = dt__norm_new(op, &L))) return NULL;
  ts[0] = dt__filled(op, dt_shape1(normalized_shape), DT_F32, 1.0, dt_cpu());
  ts[1] = ts[0] ? dt__filled(op, dt_shape1(normalized_shape), DT_F32, 0.0, dt_cpu()) : NULL;
  if (dt__module_own(op, m, ts, names, 2, 2) != DT_OK) { dt_module_free(m); return NULL; }
  return m;
}

DTDEF dt_module *dt_embedding(int64_t num_embeddings, int64_t embedding_dim) {
  static const char *const names[1] = {"weight"};
  const char *op = "dt_embedding";
  dt__norm_layer L;
  dt_tensor *w;
  dt_module *m;
  if (num_embeddings < 1 || embedding_dim < 1 || num_embeddings > ((int64_t)1 << 40) || embedding_dim > ((int64_t)1 << 40) ||
      num_embeddings > (INT64_MAX / 8) / embedding_dim) {
    dt__fail(DT_ERR_SHAPE, "%s: expected num_embeddings and embedding_dim >= 1 (and a weight that fits), got %lld and %lld", op,
             (long long)num_embeddings, (long long)embedding_dim);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__N_EMBEDDING;
  if (!(m = dt__norm_new(op, &L))) return NULL;
  w = dt__random(op, dt_shape2(num_embeddings, embedding_dim), dt_cpu(), 1); /* N(0, 1), as PyTorch's normal_ */
  if (dt__module_own(op, m, &w, names, 1, 1) != DT_OK) { dt_module_free(m); return NULL; }
  return m;
}

DTDEF dt_module *dt_gelu_layer(void) {
  dt__norm_layer L;
  memset(&L, 0, sizeof L);
  L.kind = DT__N_GELU;
  return dt__norm_new("dt_gelu_layer", &L);
}
