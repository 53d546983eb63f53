/* The losses of torch.nn.functional: binary_cross_entropy_with_logits, nll_loss, l1_loss,
   smooth_l1_loss (and mse_loss with a reduction), each with PyTorch's reduction ('none', 'mean',
   'sum'). The elementwise loss is made of the backend's elementwise kernels (softplus for the
   cross-entropy, so it never overflows) and nll_loss's gather; each loss records one autograd node,
   whose backward (dt__ag_loss_bw) is written with the public operations, so on a GPU it runs there. */

static dt_status dt__check_reduction(const char *op, dt_reduction r) {
  if (r == DT_REDUCTION_NONE || r == DT_REDUCTION_MEAN || r == DT_REDUCTION_SUM) return DT_OK;
  return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: unknown reduction %d (expected DT_REDUCTION_NONE, DT_REDUCTION_MEAN or DT_REDUCTION_SUM)",
                  op, (int)r);
}

/* l (owned) reduced as r: itself, or its mean or sum as a 0-d tensor (the mean of nothing is NaN,
   the sum 0, as PyTorch's) */
static dt_tensor *dt__loss_reduce(const char *op, dt_tensor *l, dt_reduction r) {
  dt_tensor *y;
  if (!l || r == DT_REDUCTION_NONE) return l;
  if (l->numel == 0) y = dt__filled(op, dt_shape0(), l->dtype, r == DT_REDUCTION_MEAN ? NAN : 0.0, l->st->device);
  else y = dt__reduce(op, r == DT_REDUCTION_MEAN ? DT__R_MEAN : DT__R_SUM, l, 1, l->numel, 1, dt_shape0());
  dt_release(l);
  return y;
}

/* f(a, b) with a and b owned (NULL: a failure already reported, passed on) */
static dt_tensor *dt__loss_take2(dt_tensor *(*f)(const dt_tensor *, const dt_tensor *), dt_tensor *a, dt_tensor *b) {
  dt_tensor *y = a && b ? f(a, b) : NULL;
  dt_release(a);
  dt_release(b);
  return y;
}

/* the elementwise loss of x and t (checked: one float dtype, one shape, one device), not recorded */
static dt_tensor *dt__loss_elem(const char *op, dt__ag_op kind, const dt_tensor *x, const dt_tensor *t, double beta) {
  dt_tensor *d, *a, *c, *q;
  if (kind == DT__AG_BCE_WITH_LOGITS) /* softplus(x) - x t = max(x, 0) - x t + log1p(exp(-|x|)) */
    return dt__loss_take2(dt_sub, dt__unary(op, DT__U_SOFTPLUS, x, 0, 0), dt__binary(op, DT__B_MUL, x, t));
  if (!(d = dt__binary(op, DT__B_SUB, x, t))) return NULL;
  if (kind == DT__AG_MSE_LOSS_EX) { a = dt__binary(op, DT__B_MUL, d, d); dt_release(d); return a; }
  a = dt__unary(op, DT__U_ABS, d, 0, 0);
  dt_release(d);
  if (kind == DT__AG_L1_LOSS || beta == 0 || !a) return a;
  /* smooth l1 with c = min(|d|, beta): 0.5 c^2 / beta + (|d| - c), which is 0.5 d^2 / beta below
     beta and |d| - 0.5 beta from it on (and inf for an infinite d, not NaN) */
  if (!(c = dt__unary(op, DT__U_CLAMP, a, -INFINITY, beta))) { dt_release(a); return NULL; }
  q = dt__binary(op, DT__B_MUL, c, c);
  if (q) { d = dt__unary(op, DT__U_AFFINE, q, 0.5 / beta, -0.0); dt_release(q); q = d; }
  d = dt__binary(op, DT__B_SUB, a, c);
  dt_release(a); dt_release(c);
  return dt__loss_take2(dt_add, q, d);
}

/* the node of a loss y of x and t, with its reduction and beta */
static dt_tensor *dt__loss_record(dt_tensor *y, dt__ag_op kind, const char *op, const dt_tensor *x, const dt_tensor *t,
                                  dt_reduction r, double beta) {
  const dt_tensor *in[2];
  dt__ag_args g;
  if (!y || !DT__AG_ON2(x, t)) return y;
  in[0] = x; in[1] = t;
  g.p = beta; g.dim = (int)r; g.start = 0; g.perm = NULL; g.p2 = 0;
  return dt__ag_record(y, kind, op, 2, in, &g);
}

/* bce_with_logits, l1, smooth_l1, mse: logits/x/pred and target/y of one float dtype and shape */
static dt_tensor *dt__loss_pair(const char *op, dt__ag_op kind, const char *xn, const dt_tensor *x, const char *tn,
                                const dt_tensor *t, double beta, dt_reduction r) {
  if (dt__autocast_up(x, t) && dt__is_float(x->dtype) && dt__is_float(t->dtype)) { /* autocast: both in F32 */
    int failed = 0;
    dt_tensor *cx = dt__autocast_cast(x, DT_F32, &failed), *ct = dt__autocast_cast(t, DT_F32, &failed), *y;
    y = failed ? NULL : dt__loss_pair(op, kind, xn, cx, tn, ct, beta, r);
    dt_release(cx); dt_release(ct);
    return y;
  }
  if (dt__same_float_shape(op, xn, x, tn, t) != DT_OK || dt__check_reduction(op, r) != DT_OK) return NULL;
  if (kind == DT__AG_SMOOTH_L1_LOSS && !(beta >= 0)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: beta must be at least 0 (0 is l1_loss), got %g", op, beta);
    return NULL;
  }
  return dt__loss_record(dt__loss_reduce(op, dt__loss_elem(op, kind, x, t, beta), r), kind, op, x, t, r, beta);
}

DTDEF dt_tensor *dt_bce_with_logits_ex(const dt_tensor *logits, const dt_tensor *target, dt_reduction reduction) {
  return dt__loss_pair("dt_bce_with_logits", DT__AG_BCE_WITH_LOGITS, "logits", logits, "target", target, 0, reduction);
}
DTDEF dt_tensor *dt_bce_with_logits(const dt_tensor *logits, const dt_tensor *target) {
  return dt_bce_with_logits_ex(logits, target, DT_REDUCTION_MEAN);
}
DTDEF dt_tensor *dt_l1_loss_ex(const dt_tensor *x, const dt_tensor *y, dt_reduction reduction) {
  return dt__loss_pair("dt_l1_loss", DT__AG_L1_LOSS, "x", x, "y", y, 0, reduction);
}
DTDEF dt_tensor *dt_l1_loss(const dt_tensor *x, const dt_tensor *y) { return dt_l1_loss_ex(x, y, DT_REDUCTION_MEAN); }
DTDEF dt_tensor *dt_smooth_l1_loss_ex(const dt_tensor *x, const dt_tensor *y, double beta, dt_reduction reduction) {
  return dt__loss_pair("dt_smooth_l1_loss", DT__AG_SMOOTH_L1_LOSS, "x", x, "y", y, beta, reduction);
}
DTDEF dt_tensor *dt_smooth_l1_loss(const dt_tensor *x, const dt_tensor *y, double beta) {
  return dt_smooth_l1_loss_ex(x, y, beta, DT_REDUCTION_MEAN);
}
DTDEF dt_tensor *dt_mse_loss_ex(const dt_tensor *pred, const dt_tensor *target, dt_reduction reduction) {
  return dt__loss_pair("dt_mse_loss_ex", DT__AG_MSE_LOSS_EX, "pred", pred, "target", target, 0, reduction);
}

/* log_probs: (n, c) floating, target: I64 (n,), on one device; on the CPU every label in [0, c)
   (checked before anything runs; a GPU checks on the device and reports at the next synchronizing
   call, as dt_cross_entropy does). No ignore_index: every row counts. */
DTDEF dt_tensor *dt_nll_loss_ex(const dt_tensor *log_probs, const dt_tensor *target, dt_reduction reduction) {
  const char *op = "dt_nll_loss";
  int64_t n, c;
  dt_tensor *l;
  if (dt__autocast_up(log_probs, NULL)) { /* autocast: in F32 */
    dt_tensor *cl = dt_cast(log_probs, DT_F32);
    l = cl ? dt_nll_loss_ex(cl, target, reduction) : NULL;
    dt_release(cl);
    return l;
  }
  if (dt__check_class_target(op, "log_probs", log_probs, target, &n, &c) != DT_OK) return NULL;
  if (dt__check_reduction(op, reduction) != DT_OK) return NULL;
  if (!(l = dt__new(op, dt_shape1(n), log_probs->dtype, log_probs->st->device))) return NULL;
  if (n > 0)
    l = dt__done(op, l, dt__be(l->st->device)->nll_loss(l->st->device.index, l->dtype, n, c, log_probs->st->ptr,
                                                        (const int64_t *)target->st->ptr, l->st->ptr));
  l = dt__loss_reduce(op, l, reduction);
  return l && DT__AG_ON(log_probs) ? dt__loss_record(l, DT__AG_NLL_LOSS, op, log_probs, target, reduction, 0) : l;
}
DTDEF dt_tensor *dt_nll_loss(const dt_tensor *log_probs, const dt_tensor *target) {
  return dt_nll_loss_ex(log_probs, target, DT_REDUCTION_MEAN);
}

/* ---- the backward ---- */

/* x (owned) as dtype t */
static dt_tensor *dt__loss_cast(dt_tensor *x, dt_dtype t) {
  dt_tensor *y = x ? dt_cast(x, t) : NULL;
  dt_release(x);
  return y;
}

/* sign(d) (0 at 0 and NaN) as d's dtype; d owned */
static dt_tensor *dt__loss_sign(dt_tensor *d) {
  dt_tensor *pos = NULL, *neg = NULL;
  if (!d) return NULL;
  if ((pos = dt__loss_cast(dt_gt_scalar(d, 0), d->dtype))) neg = dt__loss_cast(dt_lt_scalar(d, 0), d->dtype);
  dt_release(d);
  return dt__loss_take2(dt_sub, pos, neg);
}

/* the gradients of a loss node from g (0-d, or the elementwise loss's shape for 'none'):
   dl/dx G times g, divided by the count for 'mean'; the target's where it needs one:
   bce: G = sigmoid(x) - t, dl/dt = -x; l1: sign(x - t); smooth l1: clamp(x - t, -beta, beta) / beta
   (beta 0: sign); mse: 2 (x - t); the target's of these three -G; nll: -1 at (i, target[i]). */
static dt_status dt__ag_loss_bw(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const dt_tensor *x = n->saved[0], *t = n->saved[1];
  dt_reduction r = (dt_reduction)n->dim;
  int need1 = n->in[1].node || n->in[1].leaf;
  int64_t cnt = n->op == DT__AG_NLL_LOSS ? x->shape.dims[0] : x->numel;
  double scale = r == DT_REDUCTION_MEAN ? (cnt ? 1.0 / (double)cnt : 0.0) : 1.0;
  dt_tensor *gs = dt_mul_scalar(g, n->op == DT__AG_NLL_LOSS ? -scale : scale), *G = NULL;
  if (!gs) return dt_last_status();
  switch (n->op) {
    case DT__AG_BCE_WITH_LOGITS:
      G = dt__loss_take2(dt_sub, dt_sigmoid(x), dt_retain((dt_tensor *)t));
      if (G && need1 && !(gin[1] = dt__loss_take2(dt_mul, dt_neg(x), dt_retain(gs)))) { dt_release(G); G = NULL; }
      break;
    case DT__AG_L1_LOSS: G = dt__loss_sign(dt_sub(x, t)); break;
    case DT__AG_SMOOTH_L1_LOSS:
      if (n->p == 0) G = dt__loss_sign(dt_sub(x, t));
      else {
        dt_tensor *d = dt_sub(x, t), *c = d ? dt_clamp(d, -n->p, n->p) : NULL;
        G = c ? dt_mul_scalar(c, 1.0 / n->p) : NULL;
        dt_release(d); dt_release(c);
      }
      break;
    case DT__AG_MSE_LOSS_EX: {
      dt_tensor *d = dt_sub(x, t);
      G = d ? dt_mul_scalar(d, 2.0) : NULL;
      dt_release(d);
      break;
    }
    case DT__AG_NLL_LOSS: { /* the one-hot (n, c) of the labels, times -g (n, 1) or 0-d */
      dt_tensor *ar = dt__iota(x->shape.dims[1], x->st->device), *row = NULL, *col = NULL;
      if (ar) row = dt_reshape(ar, dt_shape2(1, x->shape.dims[1]));
      if (row) col = dt_reshape(t, dt_shape2(x->shape.dims[0], 1));
      G = row && col ? dt__loss_cast(dt_eq(row, col), x->dtype) : NULL;
      dt_release(ar); dt_release(row); dt_release(col);
      if (G && gs->shape.ndim == 1) {
        dt_tensor *g2 = dt_reshape(gs, dt_shape2(gs->shape.dims[0], 1));
        dt_release(gs);
        gs = g2;
      }
      break;
    }
    default: break;
  }
  if (G && gs) gin[0] = dt_mul(G, gs);
  if (gin[0] && need1 && n->op != DT__AG_BCE_WITH_LOGITS && n->op != DT__AG_NLL_LOSS) gin[1] = dt_neg(gin[0]);
  dt_release(G);
  dt_release(gs);
  if (!gin[0] || (need1 && n->op != DT__AG_NLL_LOSS && !gin[1])) {
    dt_release(gin[0]); dt_release(gin[1]);
    gin[0] = gin[1] = NULL;
    return dt_last_status() != DT_OK ? dt_last_status() : DT_ERR_BACKEND;
  }
  return DT_OK;
}
