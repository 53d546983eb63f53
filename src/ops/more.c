/* Views and shape helpers (dt_flatten, dt_unsqueeze, dt_squeeze: each shares t's memory and records
   as dt_reshape does), reductions with keepdim, scalar forms of arithmetic and comparisons,
   dt_one_hot, and the elementwise functions beyond those of arith.c (sin, cos, erf, gelu, pow,
   clamp). Compositions are written with the public operations, so they run on every backend and
   record for autograd through the operations they are made of. */

/* dim of a tensor of nd dims, as PyTorch wraps it: [-n, n) with n = max(nd, 1) (a 0-d tensor
   takes 0 and -1); the wrapped dim in *out. */
static dt_status dt__wrap_dim0(const char *op, int dim, int nd, int *out) {
  int n = nd > 0 ? nd : 1;
  if (dim < -n || dim >= n)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor (expected %d to %d)", op, dim, nd,
                    -n, n - 1);
  *out = dim < 0 ? dim + n : dim;
  return DT_OK;
}

/* a new header over a's memory with shape s (as many elements), recorded as a reshape */
static dt_tensor *dt__view_as(const char *op, const dt_tensor *a, dt_shape s) {
  dt_tensor *y;
  DT__ATOMIC_ADD(&a->st->refs, 1);
  y = dt__wrap(op, a->st, &s, a->dtype, a->numel, a->nbytes); /* on failure drops the reference */
  return DT__AG1(y, DT__AG_RESHAPE, op, a);
}

DTDEF dt_tensor *dt_flatten(const dt_tensor *t, int start_dim, int end_dim) {
  const char *op = "dt_flatten";
  int nd, s = 0, e = 0, i, k = 0;
  uint64_t n = 1;
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  nd = t->shape.ndim;
  if (dt__wrap_dim0(op, start_dim, nd, &s) != DT_OK || dt__wrap_dim0(op, end_dim, nd, &e) != DT_OK) return NULL;
  if (s > e) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: start_dim %d comes after end_dim %d (%d > %d once wrapped)", op, start_dim,
             end_dim, s, e);
    return NULL;
  }
  if (nd == 0) return dt__view_as(op, t, dt_shape1(1)); /* torch.flatten of a 0-d tensor: (1,) */
  for (i = 0; i < s; i++) ys.dims[k++] = t->shape.dims[i];
  for (i = s; i <= e; i++) n *= (uint64_t)t->shape.dims[i];
  ys.dims[k++] = (int64_t)n; /* the product of dims of a tensor that exists: fits */
  for (i = e + 1; i < nd; i++) ys.dims[k++] = t->shape.dims[i];
  ys.ndim = k;
  return dt__view_as(op, t, ys);
}

DTDEF dt_tensor *dt_unsqueeze(const dt_tensor *t, int dim) {
  const char *op = "dt_unsqueeze";
  int nd, d, i;
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  nd = t->shape.ndim;
  if (dim < -(nd + 1) || dim > nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor (expected %d to %d)", op, dim, nd,
             -(nd + 1), nd);
    return NULL;
  }
  if (nd + 1 > DT_MAX_DIMS) {
    dt__fail(DT_ERR_SHAPE, "%s: t has %d dims already, the most a tensor has", op, nd);
    return NULL;
  }
  d = dim < 0 ? dim + nd + 1 : dim;
  for (i = 0; i < d; i++) ys.dims[i] = t->shape.dims[i];
  ys.dims[d] = 1;
  for (i = d; i < nd; i++) ys.dims[i + 1] = t->shape.dims[i];
  ys.ndim = nd + 1;
  return dt__view_as(op, t, ys);
}

DTDEF dt_tensor *dt_squeeze(const dt_tensor *t, int dim) {
  const char *op = "dt_squeeze";
  int nd, d = 0, i, k = 0;
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  nd = t->shape.ndim;
  if (dt__wrap_dim0(op, dim, nd, &d) != DT_OK) return NULL;
  if (nd == 0 || t->shape.dims[d] != 1) return dt__view_as(op, t, t->shape); /* as torch: a view, unchanged */
  for (i = 0; i < nd; i++) if (i != d) ys.dims[k++] = t->shape.dims[i];
  ys.ndim = k;
  return dt__view_as(op, t, ys);
}

/* ---- reductions with keepdim ---- */

/* sum over dim, then the dim put back as 1 when keepdim */
static dt_tensor *dt__keep(dt_tensor *y, const dt_tensor *t, int d, int keepdim) {
  dt_tensor *k;
  if (!y || !keepdim || t->shape.ndim == 0) return y;
  k = dt_unsqueeze(y, d);
  dt_release(y);
  return k;
}

DTDEF dt_tensor *dt_sum_dim_ex(const dt_tensor *t, int dim, int keepdim) {
  const char *op = "dt_sum_dim_ex";
  int d = 0;
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__float_only(op, "t", t) != DT_OK) return NULL;
  if (t->shape.ndim == 0) { /* torch.sum(0-d, 0): its value, in a tensor of its own (not a view) */
    if (dt__wrap_dim0(op, dim, 0, &d) != DT_OK) return NULL;
    return dt_sum(t);
  }
  if (dt__wrap_dim0(op, dim, t->shape.ndim, &d) != DT_OK) return NULL;
  return dt__keep(dt_sum_dim(t, d), t, d, keepdim);
}

DTDEF dt_tensor *dt_mean_dim(const dt_tensor *t, int dim, int keepdim) {
  const char *op = "dt_mean_dim";
  int d = 0;
  dt_tensor *s, *n, *y;
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__float_only(op, "t", t) != DT_OK) return NULL;
  if (dt__wrap_dim0(op, dim, t->shape.ndim, &d) != DT_OK) return NULL;
  if (t->shape.ndim == 0) return dt_mean(t); /* its value, in a tensor of its own (not a view) */
  if (dt__is_half(t->dtype)) {
    /* in float32, rounded once: the count itself may not be a half value (bfloat16 holds 3000
       as 3008, float16 holds nothing from 65520), and the sum would be rounded twice */
    dt_tensor *ft = dt_cast(t, DT_F32), *fy = ft ? dt_mean_dim(ft, d, keepdim) : NULL;
    y = fy ? dt_cast(fy, t->dtype) : NULL;
    dt_release(ft);
    dt_release(fy);
    return y;
  }
  /* the sum divided by the count (as torch.mean: an empty dim gives NaN) */
  if (!(n = dt__filled(op, dt_shape0(), t->dtype, (double)t->shape.dims[d], t->st->device))) return NULL;
  s = dt_sum_dim(t, d);
  y = s ? dt_div(s, n) : NULL;
  dt_release(s);
  dt_release(n);
  return dt__keep(y, t, d, keepdim);
}

/* ---- scalar forms ---- */

DTDEF dt_tensor *dt_rsub_scalar(const dt_tensor *t, double s) {
  const char *op = "dt_rsub_scalar";
  dt_tensor *y;
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  if (t->dtype == DT_BOOL) {
    dt__fail(DT_ERR_DTYPE, "%s: subtraction with a bool tensor is not supported (t is bool; as in PyTorch: convert with dt_cast)", op);
    return NULL;
  }
  y = dt__unary(op, DT__U_AFFINE, t, -1.0, s);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_MUL_SCALAR, op, t, -1.0, 0, 0, NULL) : y;
}

/* t op s: s as a 0-d tensor of t's dtype where it is exactly one (a float dtype, or a whole
   number within an integer dtype's range), else float64, so an integer tensor and a fraction
   compare exactly as numbers (PyTorch compares them in float32). */
static dt_tensor *dt__compare_scalar(const char *op, dt__compare_op cop, int swap, const dt_tensor *t, double s) {
  dt_dtype st;
  dt_tensor *b, *y;
  int whole = s == floor(s);
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  switch (t->dtype) {
    case DT_F32: case DT_F64: case DT_F16: case DT_BF16: st = t->dtype; break;
    case DT_I32: st = whole && s >= -2147483648.0 && s <= 2147483647.0 ? DT_I32 : DT_F64; break;
    case DT_I64: st = whole && s >= -9007199254740992.0 && s <= 9007199254740992.0 ? DT_I64 : DT_F64; break;
    case DT_U8: st = whole && s >= 0 && s <= 255 ? DT_U8 : DT_F64; break;
    default: st = s == 0 || s == 1 ? DT_BOOL : DT_F64; break;
  }
  if (!(b = dt__filled(op, dt_shape0(), st, s, t->st->device))) return NULL;
  y = dt__compare(op, cop, swap, t, b);
  dt_release(b);
  return y;
}
DTDEF dt_tensor *dt_eq_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_eq_scalar", DT__C_EQ, 0, t, s); }
DTDEF dt_tensor *dt_ne_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_ne_scalar", DT__C_NE, 0, t, s); }
DTDEF dt_tensor *dt_lt_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_lt_scalar", DT__C_LT, 0, t, s); }
DTDEF dt_tensor *dt_le_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_le_scalar", DT__C_LE, 0, t, s); }
DTDEF dt_tensor *dt_gt_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_gt_scalar", DT__C_LT, 1, t, s); }
DTDEF dt_tensor *dt_ge_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_ge_scalar", DT__C_LE, 1, t, s); }

/* one_hot: labels (...) I64 -> (..., num_classes) I64, as torch.nn.functional.one_hot. The labels'
   range is checked first (on a GPU that reads their min and max back: the call waits). */
DTDEF dt_tensor *dt_one_hot(const dt_tensor *labels, int64_t num_classes) {
  const char *op = "dt_one_hot";
  dt_tensor *f = NULL, *mn = NULL, *mx = NULL, *col = NULL, *ar = NULL, *eq = NULL, *y = NULL;
  double lo = 0, hi = -1;
  int nd;
  if (dt__check_tensor(op, "labels", labels) != DT_OK) return NULL;
  if (labels->dtype != DT_I64) {
    dt__fail(DT_ERR_DTYPE, "%s: labels is %s, but one_hot takes int64 labels (convert with dt_cast)", op,
             dt_dtype_name(labels->dtype));
    return NULL;
  }
  nd = labels->shape.ndim;
  if (nd + 1 > DT_MAX_DIMS) { dt__fail(DT_ERR_SHAPE, "%s: labels has %d dims, the most a tensor has", op, nd); return NULL; }
  if (num_classes < -1) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: num_classes must be -1 (the largest label + 1) or at least 0, got %lld", op,
             (long long)num_classes);
    return NULL;
  }
  if (labels->numel == 0 && num_classes == -1) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: labels is empty, so num_classes cannot be inferred (pass it)", op);
    return NULL;
  }
  if (labels->numel > 0) {
    if (dt__graph_forbid(op, labels->st->device, "reading the labels' range to the host") != DT_OK) return NULL;
    if ((f = dt_cast(labels, DT_F64)) && (mn = dt_min(f)) && (mx = dt_max(f))) { lo = dt_item(mn); hi = dt_item(mx); }
    dt_release(f); f = NULL;
    if (!mn || !mx || hi != hi || lo != lo) goto out;
    if (lo < 0) {
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: labels holds %.0f; every label must be at least 0", op, lo);
      goto out;
    }
    if (num_classes == -1) num_classes = (int64_t)hi + 1;
    else if (hi >= (double)num_classes) {
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: labels holds %.0f, but num_classes is %lld (labels in [0, %lld))", op, hi,
               (long long)num_classes, (long long)num_classes);
      goto out;
    }
  }
  if (!(col = dt_unsqueeze(labels, -1))) goto out;
  if (!(ar = dt__iota(num_classes, labels->st->device))) goto out;
  if (!(eq = dt_eq(col, ar))) goto out;
  y = dt_cast(eq, DT_I64);
out:
  dt_release(mn); dt_release(mx); dt_release(col); dt_release(ar); dt_release(eq);
  return y;
}

/* ---- elementwise functions (float32/64) ---- */

/* sin, cos, erf: libm's on the CPU, CUDA's on a GPU */
DTDEF dt_tensor *dt_sin(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_sin", DT__U_SIN, a, 0, 0);
  return DT__AG1(y, DT__AG_SIN, "dt_sin", a);
}
DTDEF dt_tensor *dt_cos(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_cos", DT__U_COS, a, 0, 0);
  return DT__AG1(y, DT__AG_COS, "dt_cos", a);
}
DTDEF dt_tensor *dt_erf(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_erf", DT__U_ERF, a, 0, 0);
  return DT__AG1(y, DT__AG_ERF, "dt_erf", a);
}
/* x Phi(x) = x (1 + erf(x / sqrt 2)) / 2: torch's gelu with approximate='none' */
DTDEF dt_tensor *dt_gelu(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_gelu", DT__U_GELU, a, 0, 0);
  return DT__AG1(y, DT__AG_GELU, "dt_gelu", a);
}
/* x^p by the maths library's pow (a negative x to a fractional p: NaN) */
DTDEF dt_tensor *dt_pow_scalar(const dt_tensor *a, double p) {
  dt_tensor *y = dt__unary("dt_pow_scalar", DT__U_POW, a, p, 0);
  return y && DT__AG_ON(a) ? dt__ag_record1a(y, DT__AG_POW, "dt_pow_scalar", a, p, 0, 0, NULL) : y;
}
DTDEF dt_tensor *dt_clamp(const dt_tensor *a, double lo, double hi) {
  dt_tensor *y = dt__unary("dt_clamp", DT__U_CLAMP, a, lo, hi);
  dt__ag_args g;
  if (!y || !DT__AG_ON(a)) return y;
  g.p = lo; g.p2 = hi; g.dim = 0; g.start = 0; g.perm = NULL;
  return dt__ag_record(y, DT__AG_CLAMP, "dt_clamp", 1, &a, &g);
}
