/* torch.autocast per thread and device type: dt__autocast[DT_CPU], dt__autocast[DT_CUDA] hold the
   lower precision dtype (F16, BF16) or F32 for off. The operations of PyTorch's "lower precision"
   list (matmul, linear, conv2d) cast their float inputs to it and run there (F32 accumulation,
   the result in it); those of its "float32" list (softmax, log_softmax, the losses, sum, norm)
   cast half inputs up to F32; the rest run in their inputs' dtype. Each such operation asks
   below, casts through dt_cast (recorded by autograd: F32 parameters get F32 gradients) and
   calls itself again on the cast inputs, which then ask for nothing. */
static DT__TLS dt_dtype dt__autocast[2];

DTDEF dt_dtype dt_set_autocast(dt_device_type where, dt_dtype t) {
  dt_dtype prev;
  if (where != DT_CPU && where != DT_CUDA) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_set_autocast: where must be DT_CPU or DT_CUDA, got %d", (int)where);
    return (dt_dtype)-1;
  }
  if (t != DT_F32 && t != DT_F16 && t != DT_BF16) {
    dt__fail(DT_ERR_DTYPE, "dt_set_autocast: autocast runs in float16 or bfloat16 (float32 turns it off), got %s "
             "(integer tensors are never autocast)", dt_dtype_name(t));
    return (dt_dtype)-1;
  }
  prev = dt__autocast[where];
  dt__autocast[where] = t;
  return prev;
}

DTDEF dt_dtype dt_get_autocast(dt_device_type where) {
  return where == DT_CPU || where == DT_CUDA ? dt__autocast[where] : DT_F32;
}

/* The dtype a lower precision operation on a, b, c (b, c may be NULL) runs in: the autocast dtype of
   their device when it is on, all are float tensors on that one device, and one of them is not in
   it yet; else DT_F32 (run as given: bad inputs are then refused by the operation's own checks). */
static dt_dtype dt__autocast_low(const dt_tensor *a, const dt_tensor *b, const dt_tensor *c) {
  const dt_tensor *v[3];
  dt_dtype t;
  int i, differs = 0;
  if (!a) return DT_F32;
  t = dt__autocast[a->st->device.type == DT_CUDA];
  if (t == DT_F32) return DT_F32;
  v[0] = a; v[1] = b; v[2] = c;
  for (i = 0; i < 3; i++) {
    if (!v[i]) continue;
    if (!dt__is_float(v[i]->dtype) || !dt_device_equal(v[i]->st->device, a->st->device)) return DT_F32;
    if (v[i]->dtype != t) differs = 1;
  }
  return differs ? t : DT_F32;
}

/* Whether a float32 operation casts a (and b) up: autocast on for a's device and a or b half. */
static int dt__autocast_up(const dt_tensor *a, const dt_tensor *b) {
  if (!a || dt__autocast[a->st->device.type == DT_CUDA] == DT_F32) return 0;
  if (b && !dt_device_equal(a->st->device, b->st->device)) return 0;
  return dt__is_half(a->dtype) || (b && dt__is_half(b->dtype));
}

/* a in t: a new reference, cast (and recorded) when a is a float tensor not in t (up to F32: only a
   half one); NULL stays NULL; *failed set when a cast fails */
static dt_tensor *dt__autocast_cast(const dt_tensor *a, dt_dtype t, int *failed) {
  dt_tensor *y;
  if (!a || *failed) return NULL;
  if (a->dtype == t || !dt__is_float(a->dtype) || (t == DT_F32 && !dt__is_half(a->dtype))) return dt_retain((dt_tensor *)a);
  if (!(y = dt_cast(a, t))) *failed = 1;
  return y;
}
