DTDEF dt_shape dt_shape0(void) { dt_shape s; memset(&s, 0, sizeof s); return s; }
DTDEF dt_shape dt_shape1(int64_t a) { dt_shape s = dt_shape0(); s.ndim = 1; s.dims[0] = a; return s; }
DTDEF dt_shape dt_shape2(int64_t a, int64_t b) { dt_shape s = dt_shape1(a); s.ndim = 2; s.dims[1] = b; return s; }
DTDEF dt_shape dt_shape3(int64_t a, int64_t b, int64_t c) { dt_shape s = dt_shape2(a, b); s.ndim = 3; s.dims[2] = c; return s; }
DTDEF dt_shape dt_shape4(int64_t a, int64_t b, int64_t c, int64_t d) {
  dt_shape s = dt_shape3(a, b, c); s.ndim = 4; s.dims[3] = d; return s;
}
DTDEF dt_shape dt_shape_n(int ndim, const int64_t *dims) {
  dt_shape s = dt_shape0();
  int i;
  if (ndim < 0 || ndim > DT_MAX_DIMS || (ndim > 0 && !dims)) { s.ndim = -1; return s; }
  s.ndim = ndim;
  for (i = 0; i < ndim; i++) s.dims[i] = dims[i];
  return s;
}

DTDEF size_t dt_dtype_size(dt_dtype t) { return dt__dtype_bytes(t); }
DTDEF const char *dt_dtype_name(dt_dtype t) { return dt__dtype_str(t); }
static int dt__is_half(dt_dtype t) { return t == DT_F16 || t == DT_BF16; }
static int dt__is_float(dt_dtype t) { return t == DT_F32 || t == DT_F64 || dt__is_half(t); }
/* float32 and float64: what parameters, optimizers and convolutions take */

static dt_status dt__check_dtype(const char *op, dt_dtype t) {
  if (dt_dtype_size(t) == 0) return dt__fail(DT_ERR_DTYPE, "%s: unknown dtype %d", op, (int)t);
  return DT_OK;
}

/* Checks a shape and gives its element count and byte size. */
static dt_status dt__check_shape(const char *op, const dt_shape *s, dt_dtype t, int64_t *numel, size_t *nbytes) {
  char sb[200];
  int64_t count = 1;
  size_t es = dt_dtype_size(t);
  int i;
  if (s->ndim < 0 || s->ndim > DT_MAX_DIMS)
    return dt__fail(DT_ERR_SHAPE, "%s: a shape has 0 to %d dimensions, got %d%s", op, DT_MAX_DIMS, s->ndim,
                    s->ndim == -1 ? " (what dt_shape_n makes of an ndim outside 0 to 8, or of dims NULL)" : "");
  for (i = 0; i < s->ndim; i++)
    if (s->dims[i] < 0)
      return dt__fail(DT_ERR_SHAPE, "%s: negative dimension %lld in shape %s", op, (long long)s->dims[i],
                      dt__shape_str(s, sb, sizeof sb));
  for (i = 0; i < s->ndim; i++) {
    int64_t d = s->dims[i];
    if (d != 0 && count > INT64_MAX / d) { count = -1; break; }
    count *= d;
  }
  if (count < 0 || (uint64_t)count > (uint64_t)(INT64_MAX / 8) || (uint64_t)count > (uint64_t)(SIZE_MAX / 8)) {
    /* a zero dimension anywhere makes the tensor empty, whatever the rest */
    for (i = 0; i < s->ndim; i++)
      if (s->dims[i] == 0) { count = 0; break; }
    if (count != 0)
      return dt__fail(DT_ERR_SHAPE, "%s: shape %s is too large: its size in bytes overflows", op,
                      dt__shape_str(s, sb, sizeof sb));
  }
  if (numel) *numel = count;
  if (nbytes) *nbytes = (size_t)count * es;
  return DT_OK;
}
