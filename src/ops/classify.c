/* dt_argmax/dt_argmin, dt_max_dim/dt_min_dim, dt_max/dt_min, dt_softmax/dt_log_softmax and
   dt_cross_entropy with its gradient. Each works on the (outer, len, inner) geometry of its dim,
   as dt_sum_dim does, through the backend's arg_reduce, softmax and cross_entropy. */

/* t's geometry around `dim` (< 0 counts from the end; a 0-d t is (1, 1, 1) with dim 0 or -1),
   and the shape with dim removed. */
static dt_status dt__dim_geom(const char *op, const dt_tensor *t, int dim, int64_t *outer, int64_t *len,
                              int64_t *inner, dt_shape *ys) {
  int nd = t->shape.ndim, i, j, lo = nd ? -nd : -1, hi = nd ? nd - 1 : 0;
  uint64_t o = 1, in = 1; /* wrap-safe: an empty t may have huge dims; dt__new checks ys */
  if (dim < lo || dim > hi)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor (expected %d to %d)", op, dim, nd, lo, hi);
  *ys = dt_shape0();
  if (nd == 0) { *outer = *len = *inner = 1; return DT_OK; }
  if (dim < 0) dim += nd;
  for (i = 0, j = 0; i < nd; i++) {
    if (i < dim) o *= (uint64_t)t->shape.dims[i];
    if (i > dim) in *= (uint64_t)t->shape.dims[i];
    if (i != dim) ys->dims[j++] = t->shape.dims[i];
  }
  ys->ndim = nd - 1;
  *outer = (int64_t)o; *len = t->shape.dims[dim]; *inner = (int64_t)in;
  return DT_OK;
}

/* values (idx 0) or indices (idx 1) of the max (min 0) or min (min 1) over dim; all: over every element */
static dt_tensor *dt__arg_reduce(const char *op, int min, int idx, int all, const dt_tensor *t, int dim) {
  int64_t outer = 1, len = 0, inner = 1;
  dt_shape ys = dt_shape0();
  dt_tensor *y;
  char sb[200];
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__float_only(op, "t", t) != DT_OK) return NULL;
  if (all) {
    len = t->numel;
    if (len == 0) {
      dt__fail(DT_ERR_SHAPE, "%s: t has no elements (shape %s): the %s of nothing is undefined", op,
               dt__shape_str(&t->shape, sb, sizeof sb), min ? "min" : "max");
      return NULL;
    }
  } else {
    if (dt__dim_geom(op, t, dim, &outer, &len, &inner, &ys) != DT_OK) return NULL;
    if (len == 0) {
      dt__fail(DT_ERR_SHAPE, "%s: expected reduction dim %d to have non-zero size, but t has shape %s", op, dim,
               dt__shape_str(&t->shape, sb, sizeof sb));
      return NULL;
    }
  }
  if (!(y = dt__new(op, ys, idx ? DT_I64 : t->dtype, t->st->device))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(t->st->device)->arg_reduce(t->st->device.index, min, t->dtype, outer, len, inner, t->st->ptr,
                                                           idx ? NULL : y->st->ptr, idx ? (int64_t *)y->st->ptr : NULL));
}

DTDEF dt_tensor *dt_argmax(const dt_tensor *t, int dim) { return dt__arg_reduce("dt_argmax", 0, 1, 0, t, dim); }
DTDEF dt_tensor *dt_argmin(const dt_tensor *t, int dim) { return dt__arg_reduce("dt_argmin", 1, 1, 0, t, dim); }
DTDEF dt_tensor *dt_max_dim(const dt_tensor *t, int dim) {
  dt_tensor *y = dt__arg_reduce("dt_max_dim", 0, 0, 0, t, dim);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_MAX_DIM, "dt_max_dim", t, 0, dim, 0, NULL) : y;
}
DTDEF dt_tensor *dt_min_dim(const dt_tensor *t, int dim) {
  dt_tensor *y = dt__arg_reduce("dt_min_dim", 1, 0, 0, t, dim);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_MIN_DIM, "dt_min_dim", t, 0, dim, 0, NULL) : y;
}
DTDEF dt_tensor *dt_max(const dt_tensor *t) {
  dt_tensor *y = dt__arg_reduce("dt_max", 0, 0, 1, t, 0);
  return DT__AG1(y, DT__AG_MAX, "dt_max", t);
}
DTDEF dt_tensor *dt_min(const dt_tensor *t) {
  dt_tensor *y = dt__arg_reduce("dt_min", 1, 0, 1, t, 0);
  return DT__AG1(y, DT__AG_MIN, "dt_min", t);
}

static dt_tensor *dt__softmax(const char *op, int lg, const dt_tensor *t, int dim) {
  int64_t outer = 0, len = 0, inner = 0; /* set by dt__dim_geom (zeros: GCC -O3 cannot tell) */
  dt_shape ys;
  dt_tensor *y;
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__float_only(op, "t", t) != DT_OK) return NULL;
  if (dt__dim_geom(op, t, dim, &outer, &len, &inner, &ys) != DT_OK) return NULL;
  if (!(y = dt__new_like(op, t, t->dtype))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(t->st->device)->softmax(t->st->device.index, lg, t->dtype, outer, len, inner, t->st->ptr, y->st->ptr));
}
/* autocast's float32 list: softmax and log_softmax (lg) of a half t in F32 */
static dt_tensor *dt__autocast_softmax(int lg, const dt_tensor *t, int dim) {
  dt_tensor *ct = dt_cast(t, DT_F32), *y = ct ? (lg ? dt_log_softmax(ct, dim) : dt_softmax(ct, dim)) : NULL;
  dt_release(ct);
  return y;
}
DTDEF dt_tensor *dt_softmax(const dt_tensor *t, int dim) {
  dt_tensor *y;
  if (dt__autocast_up(t, NULL)) return dt__autocast_softmax(0, t, dim);
  y = dt__softmax("dt_softmax", 0, t, dim);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_SOFTMAX, "dt_softmax", t, 0, dim, 0, NULL) : y;
}
DTDEF dt_tensor *dt_log_softmax(const dt_tensor *t, int dim) {
  dt_tensor *y;
  if (dt__autocast_up(t, NULL)) return dt__autocast_softmax(1, t, dim);
  y = dt__softmax("dt_log_softmax", 1, t, dim);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_LOG_SOFTMAX, "dt_log_softmax", t, 0, dim, 0, NULL) : y;
}

/* The class-index losses' inputs (cross_entropy's logits, nll_loss's log_probs): x (n, c)
   floating, target I64 (n,), on one device; on the CPU every label in [0, c), checked now (the
   GPU checks on the device; a CPU graph, as it replays). *n, *c: x's sizes. */
static dt_status dt__check_class_target(const char *op, const char *xname, const dt_tensor *x, const dt_tensor *target,
                                        int64_t *n, int64_t *c) {
  char sa[200], sb[200];
  dt_status s;
  if ((s = dt__check_tensor(op, xname, x)) != DT_OK || (s = dt__check_tensor(op, "target", target)) != DT_OK) return s;
  if ((s = dt__same_device(op, xname, x, "target", target)) != DT_OK) return s;
  if ((s = dt__float_only(op, xname, x)) != DT_OK) return s;
  if (target->dtype != DT_I64)
    return dt__fail(DT_ERR_DTYPE, "%s: target must be int64 (class indices), got %s", op, dt_dtype_name(target->dtype));
  if (x->shape.ndim != 2 || target->shape.ndim != 1 || target->shape.dims[0] != x->shape.dims[0])
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s (n, c) and target (n,), got %s and %s", op, xname,
                    dt__shape_str(&x->shape, sa, sizeof sa), dt__shape_str(&target->shape, sb, sizeof sb));
  *n = x->shape.dims[0]; *c = x->shape.dims[1];
  if (x->st->device.type == DT_CPU && !DT__ATOMIC_LOAD(&dt__cpu_capturing)) {
    const int64_t *lab = (const int64_t *)target->st->ptr;
    int64_t i;
    for (i = 0; i < *n; i++)
      if (lab[i] < 0 || lab[i] >= *c)
        return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: target[%lld] = %lld is out of range for %lld classes (expected 0 <= label < %lld)",
                        op, (long long)i, (long long)lab[i], (long long)*c, (long long)*c);
  }
  return DT_OK;
}

static dt_tensor *dt__cross_entropy(const char *op, int grad, const dt_tensor *logits, const dt_tensor *target) {
  int64_t n, c;
  dt_tensor *y;
  if (dt__check_class_target(op, "logits", logits, target, &n, &c) != DT_OK) return NULL;
  if (!(y = dt__new(op, grad ? logits->shape : dt_shape0(), logits->dtype, logits->st->device))) return NULL;
  if (n == 0) { /* the mean of no losses is NaN, as PyTorch's; the gradient is empty */
    if (grad || y->numel == 0) return y;
    return dt__done(op, y, dt__be(y->st->device)->fill(y->st->device.index, y->dtype, 1, NAN, y->st->ptr));
  }
  return dt__done(op, y, dt__be(logits->st->device)->cross_entropy(logits->st->device.index, grad, logits->dtype, n, c, logits->st->ptr,
                                                                   (const int64_t *)target->st->ptr, y->st->ptr));
}
DTDEF dt_tensor *dt_cross_entropy(const dt_tensor *logits, const dt_tensor *target) {
  dt_tensor *y;
  if (dt__autocast_up(logits, NULL)) { /* autocast: in F32 */
    dt_tensor *cl = dt_cast(logits, DT_F32);
    y = cl ? dt_cross_entropy(cl, target) : NULL;
    dt_release(cl);
    return y;
  }
  y = dt__cross_entropy("dt_cross_entropy", 0, logits, target);
  return y && DT__AG_ON(logits) ? dt__ag_record2(y, DT__AG_CROSS_ENTROPY, "dt_cross_entropy", logits, target) : y;
}
DTDEF dt_tensor *dt_cross_entropy_grad(const dt_tensor *logits, const dt_tensor *target) {
  return dt__cross_entropy("dt_cross_entropy_grad", 1, logits, target);
}
