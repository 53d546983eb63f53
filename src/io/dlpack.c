/* DLPack capsules both ways, memory the caller owns (dt_from_blob), and safetensors
   files of any named tensors. Foreign memory lives in a dt__storage with `foreign` set
   and a deleter (see dt__storage_release). The safetensors part reuses the module
   reader's JSON functions and entry parser. */

/* DLPack's ABI constants by value, so that any dlpack.h (0.6's too) works */
enum { DT__DL_CPU = 1, DT__DL_CUDA = 2, DT__DL_CUDA_HOST = 3, DT__DL_CUDA_MANAGED = 13 };
enum { DT__DL_INT = 0, DT__DL_UINT = 1, DT__DL_FLOAT = 2, DT__DL_BFLOAT = 4, DT__DL_COMPLEX = 5, DT__DL_BOOL = 6 };

/* A tensor over memory devtensor does not own. Allocates both headers before it
   records the deleter, so a failure never calls it. */
static dt_tensor *dt__foreign(const char *op, dt_device d, void *ptr, const dt_shape *s, dt_dtype t, int64_t numel,
                              size_t nbytes, void (*deleter)(void *, void *), void *del_data, void *del_ctx) {
  dt__storage *st = (dt__storage *)DT_MALLOC(sizeof(dt__storage));
  dt_tensor *x = st ? (dt_tensor *)DT_MALLOC(sizeof(dt_tensor)) : NULL;
  if (!x) {
    if (st) DT_FREE(st);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a tensor header", op);
    return NULL;
  }
  st->refs = 1; st->device = d; st->ptr = ptr; st->nbytes = nbytes;
  st->foreign = 1; st->deleter = deleter; st->del_data = del_data; st->del_ctx = del_ctx; st->base = NULL; st->version = 0;
  st->serial = DT__ATOMIC_ADD(&dt__storage_serial, 1);
  x->refs = 1; x->dtype = t; x->shape = *s; x->numel = numel; x->nbytes = nbytes; x->st = st;
  x->requires_grad = 0; x->grad = NULL; x->node = NULL;
  return x;
}

static dt_status dt__check_aligned(const char *op, const void *p, dt_dtype t) {
  size_t es = dt_dtype_size(t);
  if (es && ((uintptr_t)p % es) != 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: data %p is not aligned to the %zu bytes of a %s element (copy it to aligned memory)",
                    op, p, es, dt_dtype_name(t));
  return DT_OK;
}

DTDEF dt_tensor *dt_from_blob(void *data, dt_shape s, dt_dtype t, dt_device d, void (*deleter)(void *data, void *ctx), void *ctx) {
  const char *op = "dt_from_blob";
  int64_t numel = 0;
  size_t nbytes = 0;
  if (dt__check_device(op, d) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (dt__check_shape(op, &s, t, &numel, &nbytes) != DT_OK) return NULL;
  if (!data && numel > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: data is NULL for %lld elements", op, (long long)numel); return NULL; }
  if (dt__check_aligned(op, data, t) != DT_OK) return NULL;
  return dt__foreign(op, d, data, &s, t, numel, nbytes, deleter, data, ctx);
}

/* ---- interop: DLPack export ---- */

typedef struct dt__dl_export {
  struct DLManagedTensorVersioned v;   /* one of the two is handed out; manager_ctx points here */
  struct DLManagedTensor legacy;
  dt_tensor *t;                        /* the capsule's reference */
  int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
} dt__dl_export;

static void dt__dl_export_free(dt__dl_export *e) {
  dt_release(e->t);
  DT_FREE(e);
}
static void dt__dl_delete_v(struct DLManagedTensorVersioned *self) {
  if (self) dt__dl_export_free((dt__dl_export *)self->manager_ctx);
}
static void dt__dl_delete_legacy(struct DLManagedTensor *self) {
  if (self) dt__dl_export_free((dt__dl_export *)self->manager_ctx);
}

/* A capsule's state (its reference to t, shape, compact strides); first drains the
   device's stream so that the consumer may use the data on any stream (the producer's
   half of __dlpack__(stream=...)). A 0 dim counts as 1 in the strides, as in PyTorch; an
   empty tensor's other dims may be huge, (0, 2^62, 4): a stride whose bytes pass int64
   (only an empty tensor's can) is 0 there and outside it, as no element is ever reached. */
static dt__dl_export *dt__dl_export_new(const char *op, dt_tensor *t) {
  dt__dl_export *e;
  uint64_t stride = 1, most;
  int i;
  dt_device d;
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  most = (uint64_t)INT64_MAX / dt_dtype_size(t->dtype);   /* the largest stride whose bytes fit an int64 */
  d = t->st->device;
  if (dt__graph_forbid(op, d, "an export (it waits for the device)") != DT_OK) return NULL;
  if (d.type != DT_CPU && dt__run(op, d, dt__be(d)->synchronize(d.index)) != DT_OK) return NULL;
  if (!(e = (dt__dl_export *)DT_MALLOC(sizeof(dt__dl_export)))) {
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a DLPack capsule", op);
    return NULL;
  }
  memset(e, 0, sizeof *e);
  e->t = dt_retain(t);
  for (i = t->shape.ndim - 1; i >= 0; i--) {
    uint64_t n = t->shape.dims[i] > 0 ? (uint64_t)t->shape.dims[i] : 1;
    e->shape[i] = t->shape.dims[i];
    e->strides[i] = stride <= most ? (int64_t)stride : 0;
    stride = stride <= most && n <= most / stride ? stride * n : most + 1;
  }
  return e;
}

static void dt__dl_fill(dt__dl_export *e, DLTensor *x) {
  dt_tensor *t = e->t;
  x->data = t->numel > 0 ? t->st->ptr : NULL;  /* the spec: NULL for an empty tensor */
  x->device.device_type = (DLDeviceType)(t->st->device.type == DT_CUDA ? DT__DL_CUDA : DT__DL_CPU);
  x->device.device_id = t->st->device.type == DT_CUDA ? t->st->device.index : 0;
  x->ndim = t->shape.ndim;
  x->dtype.code = (uint8_t)(t->dtype == DT_BF16 ? DT__DL_BFLOAT : dt__is_float(t->dtype) ? DT__DL_FLOAT : t->dtype == DT_U8 ? DT__DL_UINT : t->dtype == DT_BOOL ? DT__DL_BOOL : DT__DL_INT);
  x->dtype.bits = (uint8_t)(8 * dt_dtype_size(t->dtype));
  x->dtype.lanes = 1;
  x->shape = e->shape;
  x->strides = e->strides;   /* always given: DLPack 1.2 asks for them, older consumers accept them */
  x->byte_offset = 0;
}

DTDEF struct DLManagedTensorVersioned *dt_to_dlpack(dt_tensor *t) {
  dt__dl_export *e = dt__dl_export_new("dt_to_dlpack", t);
  if (!e) return NULL;
  e->v.version.major = 1;
  e->v.version.minor = 1;
  e->v.manager_ctx = e;
  e->v.deleter = dt__dl_delete_v;
  e->v.flags = 0;            /* writable, shared (not a copy) */
  dt__dl_fill(e, &e->v.dl_tensor);
  return &e->v;
}

DTDEF struct DLManagedTensor *dt_to_dlpack_legacy(dt_tensor *t) {
  dt__dl_export *e = dt__dl_export_new("dt_to_dlpack_legacy", t);
  if (!e) return NULL;
  e->legacy.manager_ctx = e;
  e->legacy.deleter = dt__dl_delete_legacy;
  dt__dl_fill(e, &e->legacy.dl_tensor);
  return &e->legacy;
}

/* ---- interop: DLPack import ---- */

static void dt__dl_release_v(void *data, void *ctx) {
  struct DLManagedTensorVersioned *m = (struct DLManagedTensorVersioned *)ctx;
  (void)data;
  if (m->deleter) m->deleter(m);
}
static void dt__dl_release_legacy(void *data, void *ctx) {
  struct DLManagedTensor *m = (struct DLManagedTensor *)ctx;
  (void)data;
  if (m->deleter) m->deleter(m);
}

static const char *dt__dl_type_name(DLDataType t, char *buf, size_t n) {
  /* DLPack 1.1's narrow floats, by code 7 to 17, named as PyTorch and ml_dtypes name them */
  static const char *const narrow[11] = {"float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
                                         "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
                                         "float4_e2m1fn"};
  const char *base;
  if (t.code >= 7 && t.code <= 17) {
    snprintf(buf, n, "%s (%u bits)", narrow[t.code - 7], (unsigned)t.bits);
    if (t.lanes != 1) { size_t l = strlen(buf); snprintf(buf + l, n - l, " x %u lanes", (unsigned)t.lanes); }
    return buf;
  }
  switch (t.code) {
    case DT__DL_INT: base = "int"; break;
    case DT__DL_UINT: base = "uint"; break;
    case DT__DL_FLOAT: base = "float"; break;
    case DT__DL_BFLOAT: base = "bfloat"; break;
    case DT__DL_COMPLEX: base = "complex"; break;
    case DT__DL_BOOL: base = "bool"; break;
    default: base = "type code "; break;
  }
  if (t.code == DT__DL_BOOL) snprintf(buf, n, "bool (%u bits)", (unsigned)t.bits);
  else if (base[0] == 't') snprintf(buf, n, "type code %u, %u bits", (unsigned)t.code, (unsigned)t.bits);
  else snprintf(buf, n, "%s%u", base, (unsigned)t.bits);
  if (t.lanes != 1) { size_t l = strlen(buf); snprintf(buf + l, n - l, " x %u lanes", (unsigned)t.lanes); }
  return buf;
}

/* The conversion to suggest for a dtype devtensor lacks: a float to float32 (float64 when it
   is wider), an int to int64, a wider bool to bool; a complex number has no devtensor dtype. */
static const char *dt__dl_type_advice(DLDataType t) {
  if (t.lanes != 1) return "convert it first: devtensor has no vector types (one value per element; make the lanes a dimension)";
  if (t.code == DT__DL_FLOAT || t.code == DT__DL_BFLOAT || (t.code >= 7 && t.code <= 17))
    return t.bits > 64 ? "convert it first, e.g. x.to(torch.float64) or x.astype(np.float64)"
                       : "convert it first, e.g. x.to(torch.float32) or x.astype(np.float32)";
  if (t.code == DT__DL_INT || t.code == DT__DL_UINT)
    return t.code == DT__DL_UINT && t.bits == 64 ? "convert it first, e.g. x.to(torch.int64) or x.astype(np.int64) (values below 2^63)"
                                                  : "convert it first, e.g. x.to(torch.int64) or x.astype(np.int64)";
  if (t.code == DT__DL_BOOL) return "convert it first, e.g. x.to(torch.bool) or x.astype(np.bool_)";
  if (t.code == DT__DL_COMPLEX) return "devtensor has no complex dtype: import the real and imaginary parts apart (x.real, x.imag)";
  return "convert it to one of them first";
}

/* Checks a DLTensor and wraps it; `rel` and `m` release it later. */
static dt_tensor *dt__dl_import(const char *op, const DLTensor *x, void (*rel)(void *, void *), void *m) {
  dt_shape s;
  dt_dtype t;
  dt_device d;
  int64_t numel = 0, want = 1;
  size_t nbytes = 0;
  char *data;
  char tb[64], sb[200];
  int i, ok = 1;
  if (x->ndim < 0 || x->ndim > DT_MAX_DIMS) {
    dt__fail(DT_ERR_SHAPE, "%s: %d dimensions, devtensor holds 0 to %d (reshape it first)", op, (int)x->ndim, DT_MAX_DIMS);
    return NULL;
  }
  if (x->ndim > 0 && !x->shape) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dl_tensor.shape is NULL for %d dimensions", op, (int)x->ndim); return NULL; }
  if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_FLOAT && x->dtype.bits == 32) t = DT_F32;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_FLOAT && x->dtype.bits == 64) t = DT_F64;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_INT && x->dtype.bits == 32) t = DT_I32;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_INT && x->dtype.bits == 64) t = DT_I64;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_UINT && x->dtype.bits == 8) t = DT_U8;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_BOOL && x->dtype.bits == 8) t = DT_BOOL;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_FLOAT && x->dtype.bits == 16) t = DT_F16;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_BFLOAT && x->dtype.bits == 16) t = DT_BF16;
  else {
    dt__fail(DT_ERR_DTYPE, "%s: dtype %s has no devtensor dtype (float32, float64, int32, int64, uint8, bool, float16, bfloat16): %s",
             op, dt__dl_type_name(x->dtype, tb, sizeof tb), dt__dl_type_advice(x->dtype));
    return NULL;
  }
  switch ((int)x->device.device_type) {
    case DT__DL_CPU: case DT__DL_CUDA_HOST: d = dt_cpu(); break;   /* pinned host memory is host memory */
    case DT__DL_CUDA:
      if (x->device.device_id < 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: CUDA device id %d", op, (int)x->device.device_id); return NULL; }
      d = dt_gpu(x->device.device_id);
      break;
    case DT__DL_CUDA_MANAGED:
      dt__fail(DT_ERR_UNSUPPORTED, "%s: CUDA managed (unified) memory is not supported: copy it to a CUDA device tensor first", op);
      return NULL;
    default:
      dt__fail(DT_ERR_UNSUPPORTED, "%s: DLPack device type %d is not supported (devtensor takes kDLCPU, kDLCUDAHost and kDLCUDA): copy it to the CPU or a CUDA GPU first",
               op, (int)x->device.device_type);
      return NULL;
  }
  if (dt__check_device(op, d) != DT_OK) return NULL;
  s = dt_shape_n(x->ndim, x->shape);
  if (dt__check_shape(op, &s, t, &numel, &nbytes) != DT_OK) return NULL;
  if (x->strides && numel > 0)
    for (i = x->ndim - 1; i >= 0; i--) {
      if (s.dims[i] != 1 && x->strides[i] != want) ok = 0;   /* a dimension of size 1 may have any stride */
      want *= s.dims[i];
    }
  if (!ok) {
    size_t at = 0;
    sb[0] = 0;
    for (i = 0; i < x->ndim && at < sizeof sb; i++)
      at += (size_t)snprintf(sb + at, sizeof sb - at, i ? ", %lld" : "%lld", (long long)x->strides[i]);
    dt__fail(DT_ERR_UNSUPPORTED, "%s: strides (%s) are not compact row-major, which devtensor needs: make it contiguous first (x.contiguous(), np.ascontiguousarray(x))",
             op, sb);
    return NULL;
  }
  data = (char *)x->data;
  /* the data, byte_offset on from data, must lie within the address space */
  if (x->byte_offset > (uint64_t)PTRDIFF_MAX || x->byte_offset > (uint64_t)(SIZE_MAX - nbytes) ||
      (data && (uintptr_t)data > UINTPTR_MAX - (uintptr_t)x->byte_offset - nbytes)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dl_tensor.byte_offset %llu with %zu bytes of data runs past the address space", op,
             (unsigned long long)x->byte_offset, nbytes);
    return NULL;
  }
  if (!data && numel > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dl_tensor.data is NULL for %lld elements", op, (long long)numel); return NULL; }
  if (data) data += x->byte_offset;
  if (dt__check_aligned(op, data, t) != DT_OK) return NULL;
  return dt__foreign(op, d, data, &s, t, numel, nbytes, rel, NULL, m);
}

DTDEF dt_tensor *dt_from_dlpack(struct DLManagedTensorVersioned *m) {
  const char *op = "dt_from_dlpack";
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (m->version.major != 1) {
    dt__fail(DT_ERR_UNSUPPORTED, "%s: DLPack version %u.%u, devtensor reads 1.x (the caller keeps the capsule and must call its deleter)",
             op, (unsigned)m->version.major, (unsigned)m->version.minor);
    return NULL;
  }
  if (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) {
    dt__fail(DT_ERR_UNSUPPORTED, "%s: the tensor is read-only and devtensor's tensors are writable: export a writable copy (e.g. np.array(x, copy=True)) or use dt_from_data",
             op);
    return NULL;
  }
  /* DLPACK_FLAG_BITMASK_IS_COPIED: ours alone either way, nothing to do */
  return dt__dl_import(op, &m->dl_tensor, dt__dl_release_v, m);
}

DTDEF dt_tensor *dt_from_dlpack_legacy(struct DLManagedTensor *m) {
  const char *op = "dt_from_dlpack_legacy";
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  return dt__dl_import(op, &m->dl_tensor, dt__dl_release_legacy, m);
}
