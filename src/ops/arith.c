/* The broadcast geometry of a op b (NumPy's rules), with dims merged where
   both operands run contiguously across them. */
static dt_status dt__broadcast(const char *op, const dt_shape *a, const dt_shape *b, dt_shape *out, dt__bcast *g) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim, i, k, big = 0;
  uint64_t as = 1, bs = 1, n = 1; /* unsigned: empty operands may have huge dims, and wrapping is defined */
  dt__bcast full;
  memset(&full, 0, sizeof full);
  *out = dt_shape0();
  out->ndim = nd;
  for (i = nd - 1; i >= 0; i--) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1, d;
    if (da != db && da != 1 && db != 1) {
      char x[200], y[200];
      return dt__fail(DT_ERR_SHAPE, "%s: shapes %s and %s cannot be broadcast: a has %lld and b has %lld at dimension %d",
                      op, dt__shape_str(a, x, sizeof x), dt__shape_str(b, y, sizeof y), (long long)da, (long long)db, i);
    }
    d = da == 1 ? db : da;
    out->dims[i] = d;
    full.dims[i] = d;
    full.astride[i] = (da == 1 && d != 1) ? 0 : (int64_t)as;
    full.bstride[i] = (db == 1 && d != 1) ? 0 : (int64_t)bs;
    if (d != 0 && n > (uint64_t)INT64_MAX / (uint64_t)d) big = 1;
    as *= (uint64_t)da; bs *= (uint64_t)db; n *= (uint64_t)d;
  }
  memset(g, 0, sizeof *g);
  if (n == 0 || big) { /* nothing to compute, or a shape too large that dt__new refuses */
    g->ndim = 1; g->numel = 0; g->astride[0] = 1; g->bstride[0] = 1;
    return DT_OK;
  }
  /* merge: drop size-1 dims, join a dim into the next when both strides chain */
  g->numel = (int64_t)n;
  k = 0;
  for (i = 0; i < nd; i++) {
    if (full.dims[i] == 1) continue;
    if (k > 0 && g->astride[k - 1] == full.astride[i] * full.dims[i] && g->bstride[k - 1] == full.bstride[i] * full.dims[i]) {
      g->dims[k - 1] *= full.dims[i];
      g->astride[k - 1] = full.astride[i];
      g->bstride[k - 1] = full.bstride[i];
      continue;
    }
    g->dims[k] = full.dims[i]; g->astride[k] = full.astride[i]; g->bstride[k] = full.bstride[i];
    k++;
  }
  if (k == 0) { k = 1; g->dims[0] = 1; g->astride[0] = 1; g->bstride[0] = 1; }
  g->ndim = k;
  g->contiguous = (k == 1 && g->astride[0] == 1 && g->bstride[0] == 1);
  return DT_OK;
}

static dt_dtype dt__result_type(const dt_tensor *a, const dt_tensor *b);            /* src/ops/compare.c */
static dt_tensor *dt__as_dtype(const char *op, const dt_tensor *x, dt_dtype t);

/* a op b (add, sub, mul, div) where the dtypes differ, or where the common dtype has no kernel
   of its own: PyTorch's type promotion (torch.result_type; true division of integers or bools
   gives float32; bool - anything is refused, as PyTorch refuses it). The operands go to the
   dtype computed in (a temporary each, where it is not theirs); uint8 and bool results are
   computed in int32 and converted back (uint8 wraps, bool is nonzero). */
static dt_tensor *dt__binary_promoted(const char *op, dt__binary_op bop, const dt_tensor *a, const dt_tensor *b) {
  dt_shape s;
  dt__bcast g;
  dt_dtype rt = dt__result_type(a, b), ct;
  dt_tensor *ca = NULL, *cb = NULL, *y = NULL, *r;
  if (bop == DT__B_SUB && (a->dtype == DT_BOOL || b->dtype == DT_BOOL)) {
    dt__fail(DT_ERR_DTYPE, "%s: subtraction with a bool tensor is not supported (%s is bool; as in PyTorch: convert with "
             "dt_cast, or for a mask use dt_ne_scalar)", op, a->dtype == DT_BOOL ? "a" : "b");
    return NULL;
  }
  if (bop == DT__B_DIV && !dt__is_float(rt)) rt = DT_F32; /* true division: the default float dtype */
  ct = rt == DT_U8 || rt == DT_BOOL ? DT_I32 : rt;
  if (dt__broadcast(op, &a->shape, &b->shape, &s, &g) != DT_OK) return NULL;
  if (g.numel == 0) return dt__new(op, s, rt, a->st->device);
  if (!(ca = dt__as_dtype(op, a, ct)) || !(cb = dt__as_dtype(op, b, ct))) goto out;
  if (!(y = dt__new(op, s, ct, a->st->device))) goto out;
  y = dt__done(op, y, dt__be(a->st->device)->binary(a->st->device.index, bop, ct, &g, ca->st->ptr, cb->st->ptr, y->st->ptr));
  if (y && ct != rt) { r = dt__as_dtype(op, y, rt); dt_release(y); y = r; }
out:
  dt_release(ca); dt_release(cb);
  return y;
}

static dt_tensor *dt__binary(const char *op, dt__binary_op bop, const dt_tensor *a, const dt_tensor *b) {
  dt_shape s;
  dt__bcast g;
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_tensor(op, "b", b) != DT_OK) return NULL;
  if (dt__same_device(op, "a", a, "b", b) != DT_OK) return NULL;
  if (bop <= DT__B_DIV && (a->dtype != b->dtype || a->dtype == DT_U8 || a->dtype == DT_BOOL || (bop == DT__B_DIV && !dt__is_float(a->dtype))))
    return dt__binary_promoted(op, bop, a, b);
  if (dt__same_dtype(op, "a", a, "b", b) != DT_OK) return NULL;
  if ((bop == DT__B_DIV || bop >= DT__B_RELU_GRAD) && bop != DT__B_COPY_A && dt__float_only(op, "a", a) != DT_OK) return NULL;
  if (dt__no_arith(op, "a", a) != DT_OK) return NULL;
  if (dt__broadcast(op, &a->shape, &b->shape, &s, &g) != DT_OK) return NULL;
  if (!(y = dt__new(op, s, a->dtype, a->st->device))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->binary(a->st->device.index, bop, a->dtype, &g, a->st->ptr, b->st->ptr, y->st->ptr));
}

DTDEF dt_tensor *dt_add(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__binary("dt_add", DT__B_ADD, a, b);
  return DT__AG2(y, DT__AG_ADD, "dt_add", a, b);
}
DTDEF dt_tensor *dt_sub(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__binary("dt_sub", DT__B_SUB, a, b);
  return DT__AG2(y, DT__AG_SUB, "dt_sub", a, b);
}
DTDEF dt_tensor *dt_mul(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__binary("dt_mul", DT__B_MUL, a, b);
  return DT__AG2(y, DT__AG_MUL, "dt_mul", a, b);
}
DTDEF dt_tensor *dt_div(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__binary("dt_div", DT__B_DIV, a, b);
  return DT__AG2(y, DT__AG_DIV, "dt_div", a, b);
}

/* Whether a scalar counts as a Python int in type promotion: a whole number within +-2^53 (every
   integer a double holds exactly); any other (a fraction, a larger value, inf, NaN) counts as a
   Python float. */
static int dt__scalar_is_int(double v) { return v == floor(v) && fabs(v) <= 9007199254740992.0; }
static dt_tensor *dt__unary(const char *op, dt__unary_op uop, const dt_tensor *a, double p0, double p1);

/* p0 a + p1 for an integer or bool a, as PyTorch promotes a tensor with Python scalars: int
   scalars keep a's dtype (bool: int64), a float scalar gives float32. uint8 is computed in int32
   and wraps back; bool goes to int64 first. */
static dt_tensor *dt__affine_promoted(const char *op, const dt_tensor *a, double p0, double p1) {
  dt_dtype ct, rt;
  dt_tensor *x, *y, *r;
  if (dt__scalar_is_int(p0) && dt__scalar_is_int(p1)) { rt = a->dtype == DT_BOOL ? DT_I64 : a->dtype; ct = rt == DT_U8 ? DT_I32 : rt; }
  else rt = ct = DT_F32;
  if (!(x = dt__as_dtype(op, a, ct))) return NULL;
  y = dt__unary(op, DT__U_AFFINE, x, p0, p1);
  dt_release(x);
  if (y && ct != rt) { r = dt__as_dtype(op, y, rt); dt_release(y); y = r; }
  return y;
}

/* y = op(a). Integer tensors take AFFINE (promoted by dt__affine_promoted where the scalars or
   the dtype ask), NEG and ABS. */
static dt_tensor *dt__unary(const char *op, dt__unary_op uop, const dt_tensor *a, double p0, double p1) {
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK) return NULL;
  if (!dt__is_float(a->dtype)) {
    if (uop != DT__U_AFFINE && uop != DT__U_NEG && uop != DT__U_ABS) { dt__float_only(op, "a", a); return NULL; }
    if (uop == DT__U_AFFINE && (a->dtype == DT_U8 || a->dtype == DT_BOOL || !dt__scalar_is_int(p0) || !dt__scalar_is_int(p1)))
      return dt__affine_promoted(op, a, p0, p1);
    if (dt__no_arith(op, "a", a) != DT_OK) return NULL;
  }
  if (!(y = dt__new_like(op, a, a->dtype))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->unary(a->st->device.index, uop, a->dtype, a->numel, a->st->ptr, y->st->ptr, p0, p1));
}

DTDEF dt_tensor *dt_add_scalar(const dt_tensor *a, double s) {
  dt_tensor *y = dt__unary("dt_add_scalar", DT__U_AFFINE, a, 1.0, s);
  return DT__AG1(y, DT__AG_ADD_SCALAR, "dt_add_scalar", a);
}
DTDEF dt_tensor *dt_mul_scalar(const dt_tensor *a, double s) {
  dt_tensor *y = dt__unary("dt_mul_scalar", DT__U_AFFINE, a, s, -0.0); /* + -0: s x exactly, the sign of a zero kept */
  return y && DT__AG_ON(a) ? dt__ag_record1a(y, DT__AG_MUL_SCALAR, "dt_mul_scalar", a, s, 0, 0, NULL) : y;
}
DTDEF dt_tensor *dt_exp(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_exp", DT__U_EXP, a, 0, 0);
  return DT__AG1(y, DT__AG_EXP, "dt_exp", a);
}
DTDEF dt_tensor *dt_log(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_log", DT__U_LOG, a, 0, 0);
  return DT__AG1(y, DT__AG_LOG, "dt_log", a);
}
DTDEF dt_tensor *dt_sqrt(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_sqrt", DT__U_SQRT, a, 0, 0);
  return DT__AG1(y, DT__AG_SQRT, "dt_sqrt", a);
}
DTDEF dt_tensor *dt_neg(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_neg", DT__U_NEG, a, 0, 0);
  return DT__AG1(y, DT__AG_NEG, "dt_neg", a);
}
DTDEF dt_tensor *dt_relu(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_relu", DT__U_RELU, a, 0, 0);
  return DT__AG1(y, DT__AG_RELU, "dt_relu", a);
}

/* Row-major batched matmul with the shapes already checked; y is made here. */
static dt_tensor *dt__gemm(const char *op, const dt_tensor *a, const dt_tensor *b, int ta, int tb, int64_t batch,
                           int64_t m, int64_t n, int64_t k, int64_t sa, int64_t sb, dt_shape ys) {
  dt_tensor *y = dt__new(op, ys, a->dtype, a->st->device);
  if (!y || y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->gemm(a->st->device.index, a->dtype, ta, tb, batch, m, n, k, 1.0,
                                                     a->st->ptr, sa, b->st->ptr, sb, 0.0, y->st->ptr, m * n));
}

static dt_tensor *dt__matmul(const dt_tensor *a, const dt_tensor *b) {
  const char *op = "dt_matmul";
  int na, nb;
  int64_t batch = 1, m, k, k2, n, sa, sb;
  dt_shape ys = dt_shape0();
  char x[200], y[200];
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_tensor(op, "b", b) != DT_OK) return NULL;
  if (dt__same_device(op, "a", a, "b", b) != DT_OK || dt__same_dtype(op, "a", a, "b", b) != DT_OK) return NULL;
  if (dt__float_only(op, "a", a) != DT_OK) return NULL;
  na = a->shape.ndim; nb = b->shape.ndim;
  if (na < 1 || na > 3 || nb < 1 || nb > 3 || (na == 1 && nb == 3) || (na == 3 && nb == 1)) {
    dt__fail(DT_ERR_SHAPE, "%s: expected (m, k) @ (k, n), (b, m, k) @ (b, k, n) or vectors, got %s and %s", op,
             dt__shape_str(&a->shape, x, sizeof x), dt__shape_str(&b->shape, y, sizeof y));
    return NULL;
  }
  /* a: (m, k) or (k,) as (1, k) or (batch, m, k) */
  m = na == 1 ? 1 : a->shape.dims[na - 2];
  k = a->shape.dims[na - 1];
  /* b: (k, n) or (k,) as (k, 1) or (batch, k, n) */
  k2 = nb == 1 ? b->shape.dims[0] : b->shape.dims[nb - 2];
  n = nb == 1 ? 1 : b->shape.dims[nb - 1];
  if (k != k2) {
    dt__fail(DT_ERR_SHAPE, "%s: shapes %s and %s cannot be multiplied (%lld != %lld)", op,
             dt__shape_str(&a->shape, x, sizeof x), dt__shape_str(&b->shape, y, sizeof y), (long long)k, (long long)k2);
    return NULL;
  }
  sa = (int64_t)((uint64_t)m * (uint64_t)k); sb = (int64_t)((uint64_t)k * (uint64_t)n); /* wrap-safe for empty operands */
  if (na == 3 || nb == 3) {
    int64_t ba = na == 3 ? a->shape.dims[0] : 1, bb = nb == 3 ? b->shape.dims[0] : 1;
    if (na == 3 && nb == 3 && ba != bb) {
      dt__fail(DT_ERR_SHAPE, "%s: batch sizes differ: %s and %s", op, dt__shape_str(&a->shape, x, sizeof x),
               dt__shape_str(&b->shape, y, sizeof y));
      return NULL;
    }
    batch = na == 3 ? ba : bb;
    if (na != 3) sa = 0;
    if (nb != 3) sb = 0;
    ys = dt_shape3(batch, m, n);
  } else if (na == 2 && nb == 2) ys = dt_shape2(m, n);
  else if (na == 2) ys = dt_shape1(m);
  else if (nb == 2) ys = dt_shape1(n);
  return dt__gemm(op, a, b, 0, 0, batch, m, n, k, sa, sb, ys);
}
DTDEF dt_tensor *dt_matmul(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y;
  dt_dtype t = dt__autocast_low(a, b, NULL);
  if (t != DT_F32) { /* autocast: in t */
    int failed = 0;
    dt_tensor *ca = dt__autocast_cast(a, t, &failed), *cb = dt__autocast_cast(b, t, &failed);
    y = failed ? NULL : dt_matmul(ca, cb);
    dt_release(ca); dt_release(cb);
    return y;
  }
  y = dt__matmul(a, b);
  return DT__AG2(y, DT__AG_MATMUL, "dt_matmul", a, b);
}

static dt_tensor *dt__transpose(const dt_tensor *a) {
  const char *op = "dt_transpose";
  dt__bcast g;
  dt_tensor *y;
  char sb[200];
  if (dt__check_tensor(op, "a", a) != DT_OK) return NULL;
  if (a->shape.ndim != 2) {
    dt__fail(DT_ERR_SHAPE, "%s: expected a 2-d tensor, got shape %s", op, dt__shape_str(&a->shape, sb, sizeof sb));
    return NULL;
  }
  if (!(y = dt__new(op, dt_shape2(a->shape.dims[1], a->shape.dims[0]), a->dtype, a->st->device))) return NULL;
  if (y->numel == 0) return y;
  /* y: (n, m), y[j, i] = a[i, j] at i * n + j */
  memset(&g, 0, sizeof g);
  g.ndim = 2; g.numel = y->numel;
  g.dims[0] = a->shape.dims[1]; g.dims[1] = a->shape.dims[0];
  g.astride[0] = 1; g.astride[1] = a->shape.dims[1];
  return dt__done(op, y, dt__be(a->st->device)->binary(a->st->device.index, DT__B_COPY_A, a->dtype, &g, a->st->ptr, a->st->ptr, y->st->ptr));
}
DTDEF dt_tensor *dt_transpose(const dt_tensor *a) {
  dt_tensor *y = dt__transpose(a);
  return DT__AG1(y, DT__AG_TRANSPOSE, "dt_transpose", a);
}

static dt_tensor *dt__reshape(const dt_tensor *a, dt_shape s) {
  const char *op = "dt_reshape";
  int i, infer = -1;
  int64_t known = 1, numel = 0;
  char x[200], y[200];
  if (dt__check_tensor(op, "a", a) != DT_OK) return NULL;
  if (s.ndim < 0 || s.ndim > DT_MAX_DIMS) {
    dt__fail(DT_ERR_SHAPE, "%s: a shape has 0 to %d dimensions, got %d%s", op, DT_MAX_DIMS, s.ndim,
             s.ndim == -1 ? " (what dt_shape_n makes of an ndim outside 0 to 8, or of dims NULL)" : "");
    return NULL;
  }
  for (i = 0; i < s.ndim; i++) {
    if (s.dims[i] == -1 && infer < 0) { infer = i; continue; }
    if (s.dims[i] < 0) {
      dt__fail(DT_ERR_SHAPE, "%s: invalid dimension %lld in shape %s", op, (long long)s.dims[i], dt__shape_str(&s, x, sizeof x));
      return NULL;
    }
    if (s.dims[i] != 0 && known > INT64_MAX / s.dims[i]) known = -1;
    if (known >= 0) known *= s.dims[i];
  }
  if (infer >= 0) {
    if (known <= 0 || a->numel % known != 0) {
      dt__fail(DT_ERR_SHAPE, "%s: shape %s is invalid for %lld elements", op, dt__shape_str(&s, x, sizeof x), (long long)a->numel);
      return NULL;
    }
    s.dims[infer] = a->numel / known;
  }
  if (dt__check_shape(op, &s, a->dtype, &numel, NULL) != DT_OK) return NULL;
  if (numel != a->numel) {
    dt__fail(DT_ERR_SHAPE, "%s: cannot reshape %s (%lld elements) to %s (%lld elements)", op,
             dt__shape_str(&a->shape, x, sizeof x), (long long)a->numel, dt__shape_str(&s, y, sizeof y), (long long)numel);
    return NULL;
  }
  DT__ATOMIC_ADD(&a->st->refs, 1);
  return dt__wrap(op, a->st, &s, a->dtype, a->numel, a->nbytes);
}
DTDEF dt_tensor *dt_reshape(const dt_tensor *a, dt_shape s) {
  dt_tensor *y = dt__reshape(a, s);
  return DT__AG1(y, DT__AG_RESHAPE, "dt_reshape", a);
}

static dt_tensor *dt__reduce(const char *op, dt__reduce_op rop, const dt_tensor *a, int64_t outer, int64_t len,
                             int64_t inner, dt_shape ys) {
  dt_tensor *y = dt__new(op, ys, a->dtype, a->st->device);
  if (!y || y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->reduce(a->st->device.index, rop, a->dtype, outer, len, inner, a->st->ptr, y->st->ptr));
}

static dt_tensor *dt__reduce_all(const char *op, dt__reduce_op rop, const dt_tensor *a) {
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__float_only(op, "a", a) != DT_OK) return NULL;
  return dt__reduce(op, rop, a, 1, a->numel, 1, dt_shape0());
}
static dt_tensor *dt__sum_bytes(const char *op, const dt_tensor *a); /* sum of U8/BOOL, I64 */
/* autocast's float32 list: f(a in F32) for a half a */
static dt_tensor *dt__autocast_f32_1(dt_tensor *(*f)(const dt_tensor *), const dt_tensor *a) {
  dt_tensor *ca = dt_cast(a, DT_F32), *y = ca ? f(ca) : NULL;
  dt_release(ca);
  return y;
}
DTDEF dt_tensor *dt_sum(const dt_tensor *a) {
  dt_tensor *y;
  if (dt__autocast_up(a, NULL)) return dt__autocast_f32_1(dt_sum, a);
  if (a && (a->dtype == DT_U8 || a->dtype == DT_BOOL)) return dt__sum_bytes("dt_sum", a);
  y = dt__reduce_all("dt_sum", DT__R_SUM, a);
  return DT__AG1(y, DT__AG_SUM, "dt_sum", a);
}
DTDEF dt_tensor *dt_mean(const dt_tensor *a) {
  dt_tensor *y = dt__reduce_all("dt_mean", DT__R_MEAN, a);
  return DT__AG1(y, DT__AG_MEAN, "dt_mean", a);
}
DTDEF dt_tensor *dt_norm(const dt_tensor *a) {
  dt_tensor *y;
  if (dt__autocast_up(a, NULL)) return dt__autocast_f32_1(dt_norm, a);
  y = dt__reduce_all("dt_norm", DT__R_NORM, a);
  return DT__AG1(y, DT__AG_NORM, "dt_norm", a);
}

static dt_tensor *dt__sum_dim(const dt_tensor *a, int dim) {
  const char *op = "dt_sum_dim";
  int nd, i, j;
  uint64_t outer = 1, inner = 1; /* wrap-safe: an empty a may have huge dims; dt__new checks ys */
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__float_only(op, "a", a) != DT_OK) return NULL;
  nd = a->shape.ndim;
  if (nd == 0 || dim < -nd || dim >= nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor", op, dim, nd);
    return NULL;
  }
  if (dim < 0) dim += nd;
  for (i = 0, j = 0; i < nd; i++) {
    if (i < dim) outer *= (uint64_t)a->shape.dims[i];
    if (i > dim) inner *= (uint64_t)a->shape.dims[i];
    if (i != dim) ys.dims[j++] = a->shape.dims[i];
  }
  ys.ndim = nd - 1;
  return dt__reduce(op, DT__R_SUM, a, (int64_t)outer, a->shape.dims[dim], (int64_t)inner, ys);
}
DTDEF dt_tensor *dt_sum_dim(const dt_tensor *a, int dim) {
  dt_tensor *y;
  if (dt__autocast_up(a, NULL)) {
    dt_tensor *ca = dt_cast(a, DT_F32);
    y = ca ? dt_sum_dim(ca, dim) : NULL;
    dt_release(ca);
    return y;
  }
  if (a && a->shape.ndim == 0 && (dim == 0 || dim == -1) && dt__is_float(a->dtype))
    return dt_sum(a); /* torch.sum(0-d, 0): its value, in a tensor of its own */
  y = dt__sum_dim(a, dim);
  return y && DT__AG_ON(a) ? dt__ag_record1a(y, DT__AG_SUM_DIM, "dt_sum_dim", a, 0, dim, 0, NULL) : y;
}

static dt_tensor *dt__cast(const dt_tensor *a, dt_dtype t) {
  const char *op = "dt_cast";
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (!(y = dt__new_like(op, a, t))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->cast(a->st->device.index, a->dtype, t, a->numel, a->st->ptr, y->st->ptr));
}
/* between float dtypes the gradient goes back cast; to an integer one it stops (as PyTorch) */
DTDEF dt_tensor *dt_cast(const dt_tensor *a, dt_dtype t) {
  dt_tensor *y = dt__cast(a, t);
  return y && DT__AG_ON(a) && dt__is_float(t) ? dt__ag_record1(y, DT__AG_CAST, "dt_cast", a) : y;
}

static dt_tensor *dt__stack(const dt_tensor *const *ts, int n) {
  const char *op = "dt_stack";
  dt_shape s;
  dt_tensor *y;
  int i, k;
  char name[24], other[24], a[200], b[200];
  if (!ts) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: ts is NULL", op); return NULL; }
  if (n <= 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: expected at least one tensor, got n = %d", op, n); return NULL; }
  for (i = 0; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__check_tensor(op, name, ts[i]) != DT_OK) return NULL;
  }
  snprintf(other, sizeof other, "ts[0]");
  for (i = 1; i < n; i++) { /* devices first, as every operation checks them */
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_device(op, other, ts[0], name, ts[i]) != DT_OK) return NULL;
  }
  if (ts[0]->shape.ndim >= DT_MAX_DIMS) { dt__fail(DT_ERR_SHAPE, "%s: stacking %d-d tensors exceeds %d dims", op, ts[0]->shape.ndim, DT_MAX_DIMS); return NULL; }
  for (i = 1; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_dtype(op, other, ts[0], name, ts[i]) != DT_OK) return NULL;
    if (ts[i]->shape.ndim != ts[0]->shape.ndim || memcmp(ts[i]->shape.dims, ts[0]->shape.dims, sizeof(int64_t) * (size_t)ts[0]->shape.ndim) != 0) {
      dt__fail(DT_ERR_SHAPE, "%s: ts[0] has shape %s but %s has shape %s", op, dt__shape_str(&ts[0]->shape, a, sizeof a), name,
               dt__shape_str(&ts[i]->shape, b, sizeof b));
      return NULL;
    }
  }
  s = dt_shape0();
  s.ndim = ts[0]->shape.ndim + 1;
  s.dims[0] = n;
  for (k = 0; k < ts[0]->shape.ndim; k++) s.dims[k + 1] = ts[0]->shape.dims[k];
  if (!(y = dt__new(op, s, ts[0]->dtype, ts[0]->st->device))) return NULL;
  for (i = 0; i < n; i++)
    if (dt__copy_bytes(op, y->st->device, (char *)y->st->ptr + (size_t)i * ts[0]->nbytes, ts[i]->st->device, ts[i]->st->ptr, ts[i]->nbytes) != DT_OK) {
      dt_release(y);
      return NULL;
    }
  return y;
}
DTDEF dt_tensor *dt_stack(const dt_tensor *const *ts, int n) {
  dt_tensor *y = dt__stack(ts, n);
  return y && dt__ag_on_list(ts, n) ? dt__ag_record(y, DT__AG_STACK, "dt_stack", n, ts, NULL) : y;
}

DTDEF dt_status dt_fill_(dt_tensor *t, double v) {
  dt_status s;
  if ((s = dt__check_tensor("dt_fill_", "t", t)) != DT_OK || (s = dt__inplace_check("dt_fill_", "t", t)) != DT_OK) return s;
  if (t->numel == 0) return DT_OK;
  s = dt__run("dt_fill_", t->st->device, dt__be(t->st->device)->fill(t->st->device.index, t->dtype, t->numel, v, t->st->ptr));
  if (s == DT_OK) dt__bump(t);
  return s;
}

/* Two tensors `an` and `bn` of op: valid, on one device, one floating dtype, one shape
   (the checks in this order, each message naming both). */
static dt_status dt__same_float_shape(const char *op, const char *an, const dt_tensor *a, const char *bn,
                                      const dt_tensor *b) {
  dt_status s;
  char sa[200], sb[200];
  if ((s = dt__check_tensor(op, an, a)) != DT_OK || (s = dt__check_tensor(op, bn, b)) != DT_OK) return s;
  if ((s = dt__same_device(op, an, a, bn, b)) != DT_OK || (s = dt__same_dtype(op, an, a, bn, b)) != DT_OK) return s;
  if ((s = dt__float_only(op, an, a)) != DT_OK) return s;
  if (a->shape.ndim != b->shape.ndim || memcmp(a->shape.dims, b->shape.dims, sizeof(int64_t) * (size_t)a->shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: %s has shape %s but %s has shape %s", op, an, dt__shape_str(&a->shape, sa, sizeof sa),
                    bn, dt__shape_str(&b->shape, sb, sizeof sb));
  return DT_OK;
}

DTDEF dt_status dt_axpy_(dt_tensor *y, double alpha, const dt_tensor *x) {
  const char *op = "dt_axpy_";
  dt_status s;
  if ((s = dt__same_float_shape(op, "y", y, "x", x)) != DT_OK) return s;
  if (dt__partial_overlap(y, x))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: x overlaps y's memory without being y itself (a slice of one tensor): the "
                    "result would depend on the order elements are written (pass a copy of x: dt_copyto(x, its device))", op);
  if ((s = dt__inplace_check(op, "y", y)) != DT_OK) return s;
  if (y->numel == 0) return DT_OK;
  s = dt__run(op, y->st->device, dt__be(y->st->device)->axpy(y->st->device.index, y->dtype, y->numel, alpha, x->st->ptr, y->st->ptr));
  if (s == DT_OK) dt__bump(y);
  return s;
}

/* ---- in-place arithmetic (torch's a.add_(b), a.mul_(s), ...) ---- */

/* a op= b: b broadcast to a's shape, which stays (b may not make it larger); one dtype, no
   promotion; one device; b neither overlapping a's memory other than as a itself (a slice of
   it: disjoint slices of one tensor are fine) nor a tensor that autograd would have to record
   (a changed in place is refused as dt_fill_'s t). */
static dt_status dt__binary_(const char *op, dt__binary_op bop, dt_tensor *a, const dt_tensor *b) {
  dt_shape sh;
  dt__bcast g;
  dt_status s;
  char x[200], y[200];
  if ((s = dt__check_tensor(op, "a", a)) != DT_OK || (s = dt__check_tensor(op, "b", b)) != DT_OK) return s;
  if ((s = dt__same_device(op, "a", a, "b", b)) != DT_OK || (s = dt__same_dtype(op, "a", a, "b", b)) != DT_OK) return s;
  if ((s = dt__no_arith(op, "a", a)) != DT_OK) return s;
  if (bop == DT__B_DIV && (s = dt__float_only(op, "a", a)) != DT_OK) return s;
  if ((s = dt__broadcast(op, &a->shape, &b->shape, &sh, &g)) != DT_OK) return s;
  if (sh.ndim != a->shape.ndim || memcmp(sh.dims, a->shape.dims, sizeof(int64_t) * (size_t)a->shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: a has shape %s, but a and b broadcast to %s: an in-place result keeps a's shape", op,
                    dt__shape_str(&a->shape, x, sizeof x), dt__shape_str(&sh, y, sizeof y));
  if (dt__partial_overlap(a, b))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: b overlaps a's memory without being a itself (a slice of one tensor): the "
                    "result would depend on the order elements are written (pass a copy of b: dt_copyto(b, its device))", op);
  if ((s = dt__inplace_check(op, "a", a)) != DT_OK) return s;
  if (b->requires_grad && !dt__no_grad)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: b requires grad and grad mode is on: an in-place result is not recorded by "
                    "autograd (use the out-of-place operation, or turn grad mode off)", op);
  if (a->numel == 0) return DT_OK;
  s = dt__run(op, a->st->device, dt__be(a->st->device)->binary(a->st->device.index, bop, a->dtype, &g, a->st->ptr, b->st->ptr, a->st->ptr));
  if (s == DT_OK) dt__bump(a);
  return s;
}

DTDEF dt_status dt_add_(dt_tensor *a, const dt_tensor *b) { return dt__binary_("dt_add_", DT__B_ADD, a, b); }
DTDEF dt_status dt_sub_(dt_tensor *a, const dt_tensor *b) { return dt__binary_("dt_sub_", DT__B_SUB, a, b); }
DTDEF dt_status dt_mul_(dt_tensor *a, const dt_tensor *b) { return dt__binary_("dt_mul_", DT__B_MUL, a, b); }
DTDEF dt_status dt_div_(dt_tensor *a, const dt_tensor *b) { return dt__binary_("dt_div_", DT__B_DIV, a, b); }

/* a = p0 a + p1 in place; an integer a takes whole numbers only (its dtype stays) */
static dt_status dt__affine_(const char *op, dt_tensor *a, double p0, double p1) {
  dt_status s;
  if ((s = dt__check_tensor(op, "a", a)) != DT_OK || (s = dt__no_arith(op, "a", a)) != DT_OK) return s;
  if (!dt__is_float(a->dtype) && (!dt__scalar_is_int(p0) || !dt__scalar_is_int(p1)))
    return dt__fail(DT_ERR_DTYPE, "%s: a is %s and the scalar %g is not a whole number: the result could not stay %s "
                    "(convert a with dt_cast)", op, dt_dtype_name(a->dtype), dt__scalar_is_int(p0) ? p1 : p0, dt_dtype_name(a->dtype));
  if ((s = dt__inplace_check(op, "a", a)) != DT_OK) return s;
  if (a->numel == 0) return DT_OK;
  s = dt__run(op, a->st->device, dt__be(a->st->device)->unary(a->st->device.index, DT__U_AFFINE, a->dtype, a->numel, a->st->ptr,
                                                               a->st->ptr, p0, p1));
  if (s == DT_OK) dt__bump(a);
  return s;
}

DTDEF dt_status dt_add_scalar_(dt_tensor *a, double s) { return dt__affine_("dt_add_scalar_", a, 1.0, s); }
DTDEF dt_status dt_mul_scalar_(dt_tensor *a, double s) { return dt__affine_("dt_mul_scalar_", a, s, -0.0); }
