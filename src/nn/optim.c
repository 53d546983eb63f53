/* torch.optim.SGD, Adam and AdamW. The optimizer borrows its module and holds, per parameter
   (state_dict order), its state and step count. A step: (1) checks, and makes every missing
   state (at the first step: zeros for Adam, an unset momentum buffer the kernel fills) or moves
   every state to where its parameter now is (dt_module_to, dt_module_to_dtype): all of it
   before any parameter changes, so a failed allocation leaves the module as it was; (2) one
   fused backend kernel per parameter (dt__optim_hp, the backend's optim_step). */

typedef struct dt__optim_state {
  dt_tensor *buf1, *buf2; /* SGD: the momentum buffer; Adam, AdamW: exp_avg, exp_avg_sq. NULL until the first step */
  int64_t step;           /* steps taken by this parameter */
} dt__optim_state;

struct dt_optimizer {
  dt__optim_hp hp;   /* kind and hyperparameters (first, step_size and bc2_sqrt set per step) */
  dt_module *m;      /* borrowed; NULL for an optimizer on tensors */
  dt_tensor **ps;    /* an optimizer on tensors: its n parameters (one reference each) */
  int n;             /* parameters, lazy ones included, when it was made */
  dt__optim_state *st;
};

static int dt__optim_finite(double v) { return v == v && v - v == 0; }

/* An optimizer on module m, or (m NULL) on the np tensors ps. */
static dt_optimizer *dt__optim_new(const char *op, dt_module *m, dt_tensor *const *ps, int np, dt__optim_kind kind, double lr,
                                   double momentum, double beta1, double beta2, double eps, double weight_decay) {
  dt_optimizer *o;
  int n, i, j;
  if (!m && !ps) { dt__fail(DT_ERR_INVALID_ARGUMENT, ps || np >= 0 ? "%s: params is NULL" : "%s: m is NULL", op); return NULL; }
  if (!(lr >= 0) || !dt__optim_finite(lr)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid learning rate lr = %g (expected a finite lr >= 0)", op, lr); return NULL; }
  if (kind == DT__OPT_SGD && (!(momentum >= 0) || !dt__optim_finite(momentum))) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid momentum = %g (expected a finite momentum >= 0)", op, momentum);
    return NULL;
  }
  if (kind != DT__OPT_SGD) {
    if (!(beta1 >= 0 && beta1 < 1)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid beta1 = %g (expected 0 <= beta1 < 1)", op, beta1); return NULL; }
    if (!(beta2 >= 0 && beta2 < 1)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid beta2 = %g (expected 0 <= beta2 < 1)", op, beta2); return NULL; }
    if (!(eps >= 0) || !dt__optim_finite(eps)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid eps = %g (expected a finite eps >= 0)", op, eps); return NULL; }
  }
  if (!(weight_decay >= 0) || !dt__optim_finite(weight_decay)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid weight_decay = %g (expected a finite weight_decay >= 0)", op, weight_decay);
    return NULL;
  }
  if (!m) { /* tensors: float leaves, each once (PyTorch: "some parameters appear in more than one parameter group") */
    if (np <= 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: n = %d, expected at least one parameter (PyTorch: optimizer got an empty parameter list)", op, np); return NULL; }
    for (i = 0; i < np; i++) {
      char nm[32];
      snprintf(nm, sizeof nm, "params[%d]", i);
      if (dt__check_tensor(op, nm, ps[i]) != DT_OK) return NULL;
      if (!dt__is_float(ps[i]->dtype)) { dt__fail(DT_ERR_DTYPE, "%s: params[%d] is %s; only float tensors can be optimized", op, i, dt_dtype_name(ps[i]->dtype)); return NULL; }
      if (ps[i]->node) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: params[%d] is not a leaf (the result of %s): optimize leaves only (PyTorch: can't optimize a non-leaf Tensor)", op, i, ps[i]->node->name); return NULL; }
      for (j = 0; j < i; j++)
        if (ps[j] == ps[i]) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: params[%d] and params[%d] are the same tensor (a parameter appears once)", op, j, i); return NULL; }
    }
    n = np;
  } else if ((n = dt_module_num_params(m)) <= 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m has no parameters to optimize (PyTorch: optimizer got an empty parameter list)", op);
    return NULL;
  }
  if (!(o = (dt_optimizer *)DT_MALLOC(sizeof(dt_optimizer)))) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); return NULL; }
  memset(o, 0, sizeof *o);
  if (!(o->st = (dt__optim_state *)DT_MALLOC(sizeof(dt__optim_state) * (size_t)n))) {
    DT_FREE(o);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    return NULL;
  }
  memset(o->st, 0, sizeof(dt__optim_state) * (size_t)n);
  if (!m) {
    if (!(o->ps = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)n))) {
      DT_FREE(o->st); DT_FREE(o);
      dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
      return NULL;
    }
    for (i = 0; i < n; i++) o->ps[i] = dt_retain(ps[i]);
  }
  o->n = n; o->m = m;
  o->hp.kind = kind; o->hp.lr = lr; o->hp.momentum = momentum; o->hp.weight_decay = weight_decay;
  o->hp.beta1 = beta1; o->hp.beta2 = beta2; o->hp.eps = eps;
  return o;
}

DTDEF dt_optimizer *dt_sgd(dt_module *m, double lr, double momentum, double weight_decay) {
  return dt__optim_new("dt_sgd", m, NULL, -1, DT__OPT_SGD, lr, momentum, 0, 0, 0, weight_decay);
}
DTDEF dt_optimizer *dt_adam(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adam", m, NULL, -1, DT__OPT_ADAM, lr, 0, beta1, beta2, eps, weight_decay);
}
DTDEF dt_optimizer *dt_adamw(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adamw", m, NULL, -1, DT__OPT_ADAMW, lr, 0, beta1, beta2, eps, weight_decay);
}

DTDEF dt_optimizer *dt_sgd_tensors(dt_tensor *const *params, int n, double lr, double momentum, double weight_decay) {
  return dt__optim_new("dt_sgd_tensors", NULL, params, n, DT__OPT_SGD, lr, momentum, 0, 0, 0, weight_decay);
}
DTDEF dt_optimizer *dt_adam_tensors(dt_tensor *const *params, int n, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adam_tensors", NULL, params, n, DT__OPT_ADAM, lr, 0, beta1, beta2, eps, weight_decay);
}
DTDEF dt_optimizer *dt_adamw_tensors(dt_tensor *const *params, int n, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adamw_tensors", NULL, params, n, DT__OPT_ADAMW, lr, 0, beta1, beta2, eps, weight_decay);
}

DTDEF void dt_optimizer_free(dt_optimizer *o) {
  int i;
  if (!o) return;
  for (i = 0; i < o->n; i++) { dt_release(o->st[i].buf1); dt_release(o->st[i].buf2); }
  if (o->ps) { for (i = 0; i < o->n; i++) dt_release(o->ps[i]); DT_FREE(o->ps); }
  DT_FREE(o->st);
  DT_FREE(o);
}

DTDEF dt_status dt_optimizer_zero_grad(dt_optimizer *o) {
  int i;
  if (!o) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_optimizer_zero_grad: o is NULL");
  if (o->m) return dt__grads_walk(o->m, DT__G_ZERO, 0.0);
  for (i = 0; i < o->n; i++) { dt_release(o->ps[i]->grad); o->ps[i]->grad = NULL; } /* set_to_none, as torch's default */
  return DT_OK;
}

/* State k (0: buf1, 1: buf2) of parameter p as the step needs it: *out is a new tensor when
   it must be made (zeros; SGD's momentum buffer unset) or moved / converted to p's device and
   dtype, else NULL (the state is where it should be). */
static dt_status dt__optim_prepare(const char *op, const dt_optimizer *o, const char *name, const dt_tensor *p,
                                   const dt_tensor *cur, dt_tensor **out) {
  dt_device d = p->st->device;
  *out = NULL;
  if (!cur) {
    *out = o->hp.kind == DT__OPT_SGD ? dt__new(op, p->shape, p->dtype, d) : dt__filled(op, p->shape, p->dtype, 0.0, d);
    return *out ? DT_OK : dt_last_status();
  }
  if (cur->shape.ndim != p->shape.ndim || memcmp(cur->shape.dims, p->shape.dims, sizeof(int64_t) * (size_t)p->shape.ndim) != 0) {
    char a[200], b[200];
    return dt__fail(DT_ERR_SHAPE, "%s: parameter %s has shape %s but its optimizer state %s (was the module changed after the optimizer was made?)",
                    op, name, dt__shape_str(&p->shape, a, sizeof a), dt__shape_str(&cur->shape, b, sizeof b));
  }
  if (!dt_device_equal(cur->st->device, d)) {
    dt_tensor *moved = dt_copyto(cur, d);
    if (moved && moved->dtype != p->dtype) {
      dt_tensor *c = dt_cast(moved, p->dtype);
      dt_release(moved);
      moved = c;
    }
    *out = moved;
    return moved ? DT_OK : dt_last_status();
  }
  if (cur->dtype != p->dtype) {
    *out = dt_cast(cur, p->dtype);
    return *out ? DT_OK : dt_last_status();
  }
  return DT_OK;
}

/* One parameter's step with the backend's fused kernel (its state prepared). */
static dt_status dt__optim_step1(const char *op, dt_optimizer *o, int i, dt_tensor *p, const dt_tensor *g) {
  dt__optim_hp hp = o->hp;
  double step;
  dt_status s;
  if (!p || p->numel == 0) return DT_OK;
  step = (double)(o->st[i].step + 1);
  hp.first = o->st[i].step == 0;
  if (hp.kind != DT__OPT_SGD) { /* PyTorch's bias corrections, in double */
    hp.step_size = hp.lr / (1.0 - pow(hp.beta1, step));
    hp.bc2_sqrt = sqrt(1.0 - pow(hp.beta2, step));
  }
  s = dt__be(p->st->device)->optim_step(p->st->device.index, p->dtype, p->numel, &hp, p->st->ptr, g->st->ptr,
                                       o->st[i].buf1 ? o->st[i].buf1->st->ptr : NULL,
                                       o->st[i].buf2 ? o->st[i].buf2->st->ptr : NULL);
  if (s != DT_OK) return dt__backend_fail(op, p->st->device, s);
  o->st[i].step++;
  dt__bump(p); /* autograd sees the parameter changed */
  return DT_OK;
}

/* The step of an optimizer on tensors: as torch.optim, a parameter without a gradient (dt_grad
   NULL) is skipped, its state and step count left alone. Every state first, as for a module. */
static dt_status dt__optim_step_tensors(const char *op, dt_optimizer *o) {
  dt_tensor **fresh;
  dt_status s = DT_OK;
  int i, k, nbuf = o->hp.kind == DT__OPT_SGD ? (o->hp.momentum != 0 ? 1 : 0) : 2;
  char nm[32];
  for (i = 0; i < o->n; i++) {
    const dt_tensor *p = o->ps[i], *g = p->grad;
    if (!g) continue;
    snprintf(nm, sizeof nm, "params[%d]", i);
    if (g->dtype != p->dtype || !dt_device_equal(g->st->device, p->st->device) || g->numel != p->numel)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s's gradient does not match it (dtype, device or size changed since the backward)", op, nm);
  }
  if (!(fresh = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * 2 * (size_t)o->n)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  memset(fresh, 0, sizeof(dt_tensor *) * 2 * (size_t)o->n);
  for (i = 0; i < o->n && s == DT_OK; i++) {
    if (!o->ps[i]->grad) continue;
    snprintf(nm, sizeof nm, "params[%d]", i);
    for (k = 0; k < nbuf && s == DT_OK; k++)
      s = dt__optim_prepare(op, o, nm, o->ps[i], k ? o->st[i].buf2 : o->st[i].buf1, &fresh[2 * i + k]);
  }
  if (s != DT_OK) {
    for (i = 0; i < 2 * o->n; i++) dt_release(fresh[i]);
    DT_FREE(fresh);
    return s;
  }
  for (i = 0; i < o->n; i++)
    for (k = 0; k < 2; k++) {
      dt_tensor **slot = k ? &o->st[i].buf2 : &o->st[i].buf1;
      if (fresh[2 * i + k]) { dt_release(*slot); *slot = fresh[2 * i + k]; }
    }
  DT_FREE(fresh);
  for (i = 0; i < o->n; i++)
    if (o->ps[i]->grad && (s = dt__optim_step1(op, o, i, o->ps[i], o->ps[i]->grad)) != DT_OK) return s;
  return DT_OK;
}

DTDEF dt_status dt_optimizer_step(dt_optimizer *o) {
  const char *op = "dt_optimizer_step";
  dt_tensor **fresh;
  dt_module *m;
  dt_status s = DT_OK;
  int i, k, nbuf;
  if (!o) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: o is NULL", op);
  m = o->m;
  if (!m) return dt__optim_step_tensors(op, o);
  if ((s = dt__params_build(op, m)) != DT_OK) return s;
  if (m->nparams != o->n)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the module has %d parameters but had %d when the optimizer was made "
                    "(make a new optimizer after changing the network)", op, m->nparams, o->n);
  nbuf = o->hp.kind == DT__OPT_SGD ? (o->hp.momentum != 0 ? 1 : 0) : 2;
  if (!(fresh = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * 2 * (size_t)o->n)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  memset(fresh, 0, sizeof(dt_tensor *) * 2 * (size_t)o->n);
  /* (1) every state made or moved, before anything changes */
  for (i = 0; i < o->n && s == DT_OK; i++) {
    const dt_tensor *p = m->params[i];
    if (!p) continue; /* a lazy layer before its first forward: nothing to step yet */
    for (k = 0; k < nbuf && s == DT_OK; k++)
      s = dt__optim_prepare(op, o, m->names[i], p, k ? o->st[i].buf2 : o->st[i].buf1, &fresh[2 * i + k]);
  }
  if (s != DT_OK) {
    for (i = 0; i < 2 * o->n; i++) dt_release(fresh[i]);
    DT_FREE(fresh);
    return s;
  }
  for (i = 0; i < o->n; i++)
    for (k = 0; k < 2; k++) {
      dt_tensor **slot = k ? &o->st[i].buf2 : &o->st[i].buf1;
      if (fresh[2 * i + k]) { dt_release(*slot); *slot = fresh[2 * i + k]; }
    }
  DT_FREE(fresh);
  /* (2) one kernel per parameter */
  for (i = 0; i < o->n; i++)
    if ((s = dt__optim_step1(op, o, i, m->params[i], m->grads[i])) != DT_OK) return s;
  return DT_OK;
}

/* v rounded to the half dtype t, through float (as a Python float meets a half tensor) */
static double dt__clip_round(dt_dtype t, double v) { return (double)dt__half_to_f32(t == DT_BF16, dt__f32_to_half(t == DT_BF16, (float)v)); }

/* torch.nn.utils.clip_grad_norm_ (norm_type 2, error_if_nonfinite off): the norm of all the
   gradients together, in float64 whatever their dtype, and when it is above max_norm each
   gradient scaled in place by max_norm / (total + 1e-6). Gradients all of one half dtype t go
   as PyTorch's ops on them go: each gradient's norm rounded to t, their norm rounded to t (the
   total returned), and the factor r(r(1 / r(total + 1e-6)) max_norm), each step rounded to t.
   Parameters without a gradient are skipped. The scaled gradients are all made before any is
   written. */
DTDEF dt_status dt_clip_grad_norm_(dt_tensor *const *params, int n, double max_norm, double *total_norm) {
  const char *op = "dt_clip_grad_norm_";
  dt_tensor **scaled = NULL;
  double sq = 0, total, coef;
  dt_status s = DT_OK;
  dt_dtype half = DT_F32;
  int i, prev;
  char nm[32];
  if (total_norm) *total_norm = 0;
  if (!params) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: params is NULL", op);
  if (n < 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: n = %d, expected n >= 0", op, n);
  if (!(max_norm > 0) || max_norm - max_norm != 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: max_norm = %g, expected a finite max_norm > 0", op, max_norm);
  for (i = 0; i < n; i++) {
    snprintf(nm, sizeof nm, "params[%d]", i);
    if ((s = dt__check_tensor(op, nm, params[i])) != DT_OK) return s;
  }
  for (i = 0; i < n; i++)
    if (params[i]->grad && (s = dt__graph_forbid(op, params[i]->grad->st->device, "reading the gradients' norm to the host")) != DT_OK)
      return s;
  for (i = 0; i < n; i++) /* the half dtype all the gradients have, else F32 */
    if (params[i]->grad) {
      dt_dtype g = params[i]->grad->dtype;
      if (!dt__is_half(g) || (half != DT_F32 && half != g)) { half = DT_F32; break; }
      half = g;
    }
  prev = dt__no_grad;
  dt__no_grad = 1; /* gradients hold no history; nothing here records */
  for (i = 0; i < n && s == DT_OK; i++) {
    dt_tensor *g = params[i]->grad, *g64, *nr;
    double v;
    if (!g) continue;
    g64 = g->dtype == DT_F64 ? dt_retain(g) : dt_cast(g, DT_F64);
    nr = g64 ? dt_norm(g64) : NULL;
    dt_release(g64);
    if (!nr) { s = dt_last_status(); break; }
    s = dt__item(nr, &v);
    dt_release(nr);
    if (s != DT_OK) break;
    if (half != DT_F32) v = dt__clip_round(half, v);
    sq += v * v;
  }
  total = sqrt(sq);
  coef = max_norm / (total + 1e-6);
  if (half != DT_F32) {
    total = dt__clip_round(half, total);
    coef = dt__clip_round(half, (float)dt__clip_round(half, total + (float)dt__clip_round(half, 1e-6)));
    coef = dt__clip_round(half, 1.0f / (float)coef);
    coef = dt__clip_round(half, (float)coef * (float)dt__clip_round(half, max_norm));
  }
  if (s == DT_OK && !(coef >= 1.0)) { /* above max_norm, or not finite: PyTorch scales then too (by NaN or 0) */
    if (!(scaled = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)(n ? n : 1)))) {
      s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    } else {
      memset(scaled, 0, sizeof(dt_tensor *) * (size_t)(n ? n : 1));
      for (i = 0; i < n && s == DT_OK; i++)
        if (params[i]->grad && !(scaled[i] = dt_mul_scalar(params[i]->grad, coef))) s = dt_last_status();
      for (i = 0; i < n && s == DT_OK; i++) /* into the gradients' memory: borrowed pointers stay valid */
        if (scaled[i]) s = dt_copy_(params[i]->grad, scaled[i]);
      for (i = 0; i < n; i++) dt_release(scaled[i]);
      DT_FREE(scaled);
    }
  }
  dt__no_grad = prev;
  if (s != DT_OK) return s;
  if (total_norm) *total_norm = total;
  return DT_OK;
}
