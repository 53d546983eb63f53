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
  dt_module *m;      /* borrowed */
  int n;             /* parameters, lazy ones included, when it was made */
  dt__optim_state *st;
};

static int dt__optim_finite(double v) { return v == v && v - v == 0; }

static dt_optimizer *dt__optim_new(const char *op, dt_module *m, dt__optim_kind kind, double lr, double momentum,
                                   double beta1, double beta2, double eps, double weight_decay) {
  dt_optimizer *o;
  int n;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
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
  if ((n = dt_module_num_params(m)) <= 0) {
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
  o->n = n; o->m = m;
  o->hp.kind = kind; o->hp.lr = lr; o->hp.momentum = momentum; o->hp.weight_decay = weight_decay;
  o->hp.beta1 = beta1; o->hp.beta2 = beta2; o->hp.eps = eps;
  return o;
}

DTDEF dt_optimizer *dt_sgd(dt_module *m, double lr, double momentum, double weight_decay) {
  return dt__optim_new("dt_sgd", m, DT__OPT_SGD, lr, momentum, 0, 0, 0, weight_decay);
}
DTDEF dt_optimizer *dt_adam(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adam", m, DT__OPT_ADAM, lr, 0, beta1, beta2, eps, weight_decay);
}
DTDEF dt_optimizer *dt_adamw(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adamw", m, DT__OPT_ADAMW, lr, 0, beta1, beta2, eps, weight_decay);
}

DTDEF void dt_optimizer_free(dt_optimizer *o) {
  int i;
  if (!o) return;
  for (i = 0; i < o->n; i++) { dt_release(o->st[i].buf1); dt_release(o->st[i].buf2); }
  DT_FREE(o->st);
  DT_FREE(o);
}

DTDEF dt_status dt_optimizer_zero_grad(dt_optimizer *o) {
  if (!o) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_optimizer_zero_grad: o is NULL");
  return dt__grads_walk(o->m, DT__G_ZERO, 0.0);
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

DTDEF dt_status dt_optimizer_step(dt_optimizer *o) {
  const char *op = "dt_optimizer_step";
  dt_tensor **fresh;
  dt_module *m;
  dt_status s = DT_OK;
  int i, k, nbuf;
  if (!o) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: o is NULL", op);
  m = o->m;
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
  for (i = 0; i < o->n; i++) {
    dt_tensor *p = m->params[i], *g = m->grads[i];
    dt__optim_hp hp = o->hp;
    double step;
    if (!p || p->numel == 0) continue;
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
  }
  return DT_OK;
}
