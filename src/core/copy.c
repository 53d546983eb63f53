static dt_tensor *dt__copyto(const dt_tensor *t, dt_device d) {
  dt_tensor *y;
  if (dt__check_tensor("dt_copyto", "t", t) != DT_OK) return NULL;
  if (!(y = dt__new("dt_copyto", t->shape, t->dtype, d))) return NULL;
  if (dt__copy_bytes("dt_copyto", d, y->st->ptr, t->st->device, t->st->ptr, t->nbytes) != DT_OK) { dt_release(y); return NULL; }
  return y;
}
DTDEF dt_tensor *dt_copyto(const dt_tensor *t, dt_device d) {
  dt_tensor *y = dt__copyto(t, d);
  return DT__AG1(y, DT__AG_COPYTO, "dt_copyto", t);
}

DTDEF dt_tensor *dt_to(dt_tensor *t, dt_device d) {
  if (dt__check_tensor("dt_to", "t", t) != DT_OK || dt__check_device("dt_to", d) != DT_OK) return NULL;
  if (dt_device_equal(t->st->device, d)) return dt_retain(t);
  return dt_copyto(t, d);
}

DTDEF dt_status dt_copy_(dt_tensor *dst, const dt_tensor *src) {
  const char *op = "dt_copy_";
  dt_status s;
  char a[200], b[200];
  if ((s = dt__check_tensor(op, "dst", dst)) != DT_OK || (s = dt__check_tensor(op, "src", src)) != DT_OK) return s;
  if ((s = dt__same_dtype(op, "dst", dst, "src", src)) != DT_OK || (s = dt__inplace_check(op, "dst", dst)) != DT_OK) return s;
  if (dst->numel != src->numel || dst->shape.ndim != src->shape.ndim ||
      memcmp(dst->shape.dims, src->shape.dims, sizeof(int64_t) * (size_t)dst->shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: dst has shape %s but src has shape %s", op,
                    dt__shape_str(&dst->shape, a, sizeof a), dt__shape_str(&src->shape, b, sizeof b));
  if (dt__partial_overlap(dst, src)) /* PyTorch refuses it too; a GPU's copy would be undefined */
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: src overlaps dst's memory without being dst itself (a slice of one tensor): "
                    "some elements would be read after they were written (pass a copy of src: dt_copyto(src, its device))", op);
  if (dt__overlap(dst, src)) { /* not partly, so dst itself: nothing to move */
    dt__bump(dst);
    return DT_OK;
  }
  s = dt__copy_bytes(op, dst->st->device, dst->st->ptr, src->st->device, src->st->ptr, src->nbytes);
  if (s == DT_OK) dt__bump(dst);
  return s;
}

DTDEF dt_status dt_to_host(const dt_tensor *t, void *dst, size_t nbytes) {
  const char *op = "dt_to_host";
  dt_status s;
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if (!dst && t->nbytes > 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dst is NULL", op);
  if (nbytes < t->nbytes)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dst holds %llu bytes but the tensor has %llu", op,
                    (unsigned long long)nbytes, (unsigned long long)t->nbytes);
  if ((s = dt__graph_forbid(op, t->st->device, "a copy to host memory")) != DT_OK) return s;
  return dt__copy_bytes(op, dt_cpu(), dst, t->st->device, t->st->ptr, t->nbytes);
}

static double dt__host_value(const void *p, dt_dtype t, int64_t i) {
  switch (t) {
    case DT_F32: return (double)((const float *)p)[i];
    case DT_F64: return ((const double *)p)[i];
    case DT_I32: return (double)((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    case DT_U8: return (double)((const uint8_t *)p)[i];
    case DT_BOOL: return ((const uint8_t *)p)[i] != 0 ? 1.0 : 0.0;
    case DT_F16: case DT_BF16: return (double)dt__half_to_f32(t == DT_BF16, ((const uint16_t *)p)[i]);
  }
  return 0;
}

/* dt_item's value in *v (NAN on failure) and whether it was read: the library's callers ask the
   status, since a NaN is a value too and dt_last_status() may hold an earlier error */
static dt_status dt__item(const dt_tensor *t, double *v) {
  double b[1];
  dt_status s;
  *v = NAN;
  if ((s = dt__check_tensor("dt_item", "t", t)) != DT_OK) return s;
  if (t->numel != 1) {
    char sb[200];
    return dt__fail(DT_ERR_SHAPE, "dt_item: expected a tensor with one element, got shape %s (%lld elements)",
                    dt__shape_str(&t->shape, sb, sizeof sb), (long long)t->numel);
  }
  if ((s = dt__graph_forbid("dt_item", t->st->device, "a copy to host memory")) != DT_OK) return s;
  if ((s = dt__copy_bytes("dt_item", dt_cpu(), b, t->st->device, t->st->ptr, t->nbytes)) != DT_OK) return s;
  *v = dt__host_value(b, t->dtype, 0);
  return DT_OK;
}

DTDEF double dt_item(const dt_tensor *t) {
  double v;
  (void)dt__item(t, &v);
  return v;
}
