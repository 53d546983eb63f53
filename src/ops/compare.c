/* Comparisons give DT_BOOL (one byte, 0 or 1) and broadcast with dt__broadcast, the binary ops'
   geometry. Operands of two dtypes are first converted (by the backend's cast, into temporaries)
   to PyTorch's result type: the wider in bool < uint8 < int32 < int64 < float16, bfloat16 < float32 < float64
   (float16 with bfloat16: float32), except
   that a 0-d operand does not widen an operand with dims unless it is of a higher kind (bool <
   integer < float): uint8 (n,) == int64 0-d compares in uint8, as torch.eq does. */

static int dt__dtype_rank(dt_dtype t) {
  switch (t) {
    case DT_BOOL: return 0; case DT_U8: return 1; case DT_I32: return 2; case DT_I64: return 3; case DT_F32: return 5; case DT_F64: return 6;
    case DT_F16: case DT_BF16: return 4; /* float16 with bfloat16: float32, as PyTorch */
  }
  return -1;
}
static int dt__dtype_kind(dt_dtype t) { return t == DT_BOOL ? 0 : dt__is_float(t) ? 2 : 1; }

static dt_dtype dt__result_type(const dt_tensor *a, const dt_tensor *b) {
  int za = a->shape.ndim == 0, zb = b->shape.ndim == 0;
  const dt_tensor *dim, *zero;
  if (a->dtype == b->dtype) return a->dtype;
  if (za == zb) {
    if (dt__is_half(a->dtype) && dt__is_half(b->dtype)) return DT_F32;
    return dt__dtype_rank(a->dtype) > dt__dtype_rank(b->dtype) ? a->dtype : b->dtype;
  }
  dim = za ? b : a; zero = za ? a : b;
  return dt__dtype_kind(zero->dtype) > dt__dtype_kind(dim->dtype) ? zero->dtype : dim->dtype;
}

/* x as dtype t on its device: x itself (one more reference) or a converted copy. */
static dt_tensor *dt__as_dtype(const char *op, const dt_tensor *x, dt_dtype t) {
  dt_tensor *y;
  if (x->dtype == t) { DT__ATOMIC_ADD(&((dt_tensor *)x)->refs, 1); return (dt_tensor *)x; }
  if (!(y = dt__new_like(op, x, t)) || y->numel == 0) return y;
  return dt__done(op, y, dt__be(x->st->device)->cast(x->st->device.index, x->dtype, t, x->numel, x->st->ptr, y->st->ptr));
}

/* y = a op b; swap: b op' a (gt, ge as lt, le). */
static dt_tensor *dt__compare(const char *op, dt__compare_op cop, int swap, const dt_tensor *a, const dt_tensor *b) {
  dt_shape s;
  dt__bcast g;
  dt_tensor *y, *ca = NULL, *cb = NULL;
  dt_dtype ct;
  dt_status rc;
  dt_device d;
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_tensor(op, "b", b) != DT_OK) return NULL;
  if (dt__same_device(op, "a", a, "b", b) != DT_OK) return NULL;
  if (dt__broadcast(op, &a->shape, &b->shape, &s, &g) != DT_OK) return NULL;
  d = a->st->device;
  if (!(y = dt__new(op, s, DT_BOOL, d)) || y->numel == 0) return y;
  ct = dt__result_type(a, b);
  if (!(ca = dt__as_dtype(op, a, ct)) || !(cb = dt__as_dtype(op, b, ct))) { dt_release(ca); dt_release(y); return NULL; }
  if (swap) {
    int k;
    for (k = 0; k < g.ndim; k++) { int64_t t = g.astride[k]; g.astride[k] = g.bstride[k]; g.bstride[k] = t; }
    rc = dt__be(d)->compare(d.index, cop, ct, &g, cb->st->ptr, ca->st->ptr, y->st->ptr);
  } else {
    rc = dt__be(d)->compare(d.index, cop, ct, &g, ca->st->ptr, cb->st->ptr, y->st->ptr);
  }
  y = dt__done(op, y, rc);
  dt_release(ca);
  dt_release(cb);
  return y;
}

DTDEF dt_tensor *dt_eq(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_eq", DT__C_EQ, 0, a, b); }
DTDEF dt_tensor *dt_ne(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_ne", DT__C_NE, 0, a, b); }
DTDEF dt_tensor *dt_lt(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_lt", DT__C_LT, 0, a, b); }
DTDEF dt_tensor *dt_le(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_le", DT__C_LE, 0, a, b); }
DTDEF dt_tensor *dt_gt(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_gt", DT__C_LT, 1, a, b); }
DTDEF dt_tensor *dt_ge(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_ge", DT__C_LE, 1, a, b); }

/* sigmoid: e = exp(-|x|), then 1 / (1 + e) for x >= 0 and e / (1 + e) below, so no exp
   overflows (0 and 1 at the ends, NaN stays NaN), in the tensor's own precision. Accuracy
   (tests/test_dtypes.c measures it against long double on every device): within 4 ulp. */
DTDEF dt_tensor *dt_sigmoid(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_sigmoid", DT__U_SIGMOID, a, 0, 0);
  return DT__AG1(y, DT__AG_SIGMOID, "dt_sigmoid", a);
}
/* tanh: libm's tanhf / tanh on the CPU, CUDA's on a GPU (within 4 ulp, measured as sigmoid's;
   +-1 for large |x|). */
DTDEF dt_tensor *dt_tanh(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_tanh", DT__U_TANH, a, 0, 0);
  return DT__AG1(y, DT__AG_TANH, "dt_tanh", a);
}
DTDEF dt_tensor *dt_abs(const dt_tensor *a) {
  const char *op = "dt_abs";
  dt_tensor *y;
  if (!a || a->dtype != DT_U8) {
    y = dt__unary(op, DT__U_ABS, a, 0, 0);
    return DT__AG1(y, DT__AG_ABS, op, a);
  }
  /* uint8: |x| = x, a copy (torch.abs does the same) */
  if (!(y = dt__new_like(op, a, a->dtype))) return NULL;
  if (dt__copy_bytes(op, y->st->device, y->st->ptr, a->st->device, a->st->ptr, a->nbytes) != DT_OK) { dt_release(y); return NULL; }
  return y;
}

DTDEF dt_tensor *dt_empty_like(const dt_tensor *t) {
  if (dt__check_tensor("dt_empty_like", "t", t) != DT_OK) return NULL;
  return dt__new("dt_empty_like", t->shape, t->dtype, t->st->device);
}
DTDEF dt_tensor *dt_zeros_like(const dt_tensor *t) {
  if (dt__check_tensor("dt_zeros_like", "t", t) != DT_OK) return NULL;
  return dt__filled("dt_zeros_like", t->shape, t->dtype, 0.0, t->st->device);
}
DTDEF dt_tensor *dt_ones_like(const dt_tensor *t) {
  if (dt__check_tensor("dt_ones_like", "t", t) != DT_OK) return NULL;
  return dt__filled("dt_ones_like", t->shape, t->dtype, 1.0, t->st->device);
}

/* dt_sum of uint8 or bool: an int64 0-d tensor, as torch.sum. The values go to float64 (a
   temporary of 8 bytes an element), are summed there by the backend's reduction and the sum goes
   to int64: exact, since every partial sum is an integer below 2^53 (255 * numel < 2^53 for any
   tensor that fits in memory). */
static dt_tensor *dt__sum_bytes(const char *op, const dt_tensor *a) {
  dt_tensor *f = NULL, *sf = NULL, *y = NULL;
  const dt__backend *be = dt__be(a->st->device);
  int dev = a->st->device.index;
  if (!(y = dt__new(op, dt_shape0(), DT_I64, a->st->device))) return NULL;
  if (a->numel == 0) return dt__done(op, y, be->fill(dev, DT_I64, 1, 0.0, y->st->ptr));
  if (!(f = dt__as_dtype(op, a, DT_F64))) { dt_release(y); return NULL; }
  if (!(sf = dt__reduce(op, DT__R_SUM, f, 1, f->numel, 1, dt_shape0()))) { dt_release(f); dt_release(y); return NULL; }
  y = dt__done(op, y, be->cast(dev, DT_F64, DT_I64, 1, sf->st->ptr, y->st->ptr));
  dt_release(f);
  dt_release(sf);
  return y;
}
