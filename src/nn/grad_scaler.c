/* torch.amp.GradScaler with PyTorch's defaults (growth_factor 2, backoff_factor 0.5,
   growth_interval 2000): the loss is multiplied by the scale before its backward, so small F16
   gradients do not flush to zero; the step divides the gradients by it and skips the optimizer's
   step when one of them holds an inf or a NaN; the update halves the scale after such a step and
   doubles it after 2000 good ones in a row. */
struct dt_grad_scaler {
  double scale;
  int growth_tracker; /* good steps since the scale last changed */
  int found_inf;      /* the last step's check: -1 none since the last update, 0 finite, 1 inf/NaN */
};

DTDEF dt_grad_scaler *dt_grad_scaler_new(double init_scale) {
  dt_grad_scaler *s;
  if (!(init_scale > 0) || init_scale - init_scale != 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_new: init_scale must be finite and > 0 (PyTorch's default is 65536), got %g",
             init_scale);
    return NULL;
  }
  if (!(s = (dt_grad_scaler *)DT_MALLOC(sizeof *s))) {
    dt__fail(DT_ERR_OUT_OF_MEMORY, "dt_grad_scaler_new: out of memory on the host");
    return NULL;
  }
  s->scale = init_scale;
  s->growth_tracker = 0;
  s->found_inf = -1;
  return s;
}

DTDEF void dt_grad_scaler_free(dt_grad_scaler *s) { DT_FREE(s); }

DTDEF double dt_grad_scaler_get_scale(const dt_grad_scaler *s) {
  if (!s) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_get_scale: s is NULL"); return NAN; }
  return s->scale;
}

DTDEF dt_tensor *dt_grad_scaler_scale(dt_grad_scaler *s, const dt_tensor *loss) {
  const char *op = "dt_grad_scaler_scale";
  if (!s) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: s is NULL", op); return NULL; }
  if (dt__check_tensor(op, "loss", loss) != DT_OK || dt__float_only(op, "loss", loss) != DT_OK) return NULL;
  return dt_mul_scalar(loss, s->scale);
}

/* The optimizer's gradients (borrowed; NULL where a parameter has none) into *gs, *n of them. */
static dt_status dt__optim_grads(const char *op, dt_optimizer *o, dt_tensor ***gs, int *n) {
  int i, k;
  dt_status st;
  *gs = NULL; *n = 0;
  if (o->m && (st = dt__params_build(op, o->m)) != DT_OK) return st;
  k = o->m ? o->m->nparams : o->n;
  if (k > 0 && !(*gs = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)k)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  for (i = 0; i < k; i++) (*gs)[i] = o->m ? o->m->grads[i] : o->ps[i]->grad;
  *n = k;
  return DT_OK;
}

/* Whether any gradient holds an inf or a NaN: the sum of g * 0 over each is NaN exactly then
   (finite values give 0, which no sum can overflow); the sums gathered on the first gradient's
   device and read once. */
static dt_status dt__scaler_found_inf(const char *op, dt_tensor *const *gs, int n, int *found) {
  dt_tensor *acc = NULL;
  dt_status st = DT_OK;
  int i;
  *found = 0;
  for (i = 0; i < n && st == DT_OK; i++) {
    dt_tensor *z, *sm, *f, *fd;
    if (!gs[i] || gs[i]->numel == 0) continue;
    z = dt_mul_scalar(gs[i], 0.0);
    sm = z ? dt_sum(z) : NULL;
    f = sm ? dt_cast(sm, DT_F32) : NULL;
    fd = f ? (acc ? dt_to(f, acc->st->device) : dt_retain(f)) : NULL;
    if (!fd) st = dt_last_status();
    else if (!acc) acc = dt_retain(fd);
    else st = dt_axpy_(acc, 1.0, fd);
    dt_release(z); dt_release(sm); dt_release(f); dt_release(fd);
  }
  if (st == DT_OK && acc) {
    double v;
    if ((st = dt__item(acc, &v)) == DT_OK) *found = v != v;
  }
  dt_release(acc);
  (void)op; /* a failure keeps the message of the operation that failed */
  return st;
}

/* The n gradients gs (NULL where a parameter has none) times f, in place. */
static dt_status dt__grads_scale(const char *op, dt_tensor *const *gs, int n, double f) {
  dt_status st = DT_OK;
  int i;
  for (i = 0; i < n && st == DT_OK; i++) {
    dt_tensor *g = gs[i];
    if (!g || g->numel == 0) continue;
    st = dt__run(op, g->st->device, dt__be(g->st->device)->unary(g->st->device.index, DT__U_AFFINE, g->dtype, g->numel, g->st->ptr,
                                                                 g->st->ptr, f, -0.0)); /* f g exactly: + -0 keeps a zero's sign */
  }
  return st;
}

/* The n gradients gs checked, and unscaled when all are finite; s->found_inf says which. */
static dt_status dt__grad_scaler_unscale(const char *op, dt_grad_scaler *s, dt_tensor *const *gs, int n) {
  dt_status st;
  int found = 0, prev = dt__no_grad;
  dt__no_grad = 1; /* the checks record nothing */
  st = dt__scaler_found_inf(op, gs, n, &found);
  /* unscale in place: g *= 1 / scale (skipped with inf/NaN: the step is skipped too) */
  if (st == DT_OK && !found) st = dt__grads_scale(op, gs, n, 1.0 / s->scale);
  dt__no_grad = prev;
  if (st == DT_OK) s->found_inf = found;
  return st;
}

DTDEF dt_status dt_grad_scaler_step(dt_grad_scaler *s, dt_optimizer *o) {
  const char *op = "dt_grad_scaler_step";
  dt_tensor **gs = NULL;
  dt_status st;
  int n = 0;
  if (!s) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: s is NULL", op);
  if (!o) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: o is NULL", op);
  if ((st = dt__optim_grads(op, o, &gs, &n)) != DT_OK) return st;
  st = dt__grad_scaler_unscale(op, s, gs, n);
  DT_FREE(gs);
  if (st != DT_OK) return st;
  return s->found_inf ? DT_OK : dt_optimizer_step(o);
}

DTDEF dt_status dt_grad_scaler_update(dt_grad_scaler *s) {
  if (!s) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_update: s is NULL");
  if (s->found_inf < 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_update: no dt_grad_scaler_step since the last update (no inf checks recorded)");
  if (s->found_inf) {
    s->scale *= 0.5;
    s->growth_tracker = 0;
  } else if (++s->growth_tracker == 2000) {
    s->scale *= 2.0;
    s->growth_tracker = 0;
  }
  s->found_inf = -1;
  return DT_OK;
}
