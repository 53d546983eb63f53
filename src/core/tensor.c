typedef struct dt__storage {
  int refs;
  dt_device device;
  void *ptr;
  size_t nbytes;
  /* foreign memory (dt_from_blob, dt_from_dlpack; see "interop"): not the backend's to
     free. The last release drains the device's stream, then calls deleter(del_data,
     del_ctx) if there is one. Views (dt_reshape, dt_to on the same device) share it. */
  int foreign;
  void (*deleter)(void *data, void *ctx);
  void *del_data, *del_ctx;
  /* a view into another storage at an offset (dt_slice along dim 0): ptr points into base's
     memory and this storage holds one reference to base, dropped when it goes; nothing else */
  struct dt__storage *base;
  /* bumped by every in-place change (dt_fill_, dt_axpy_, dt_copy_, an optimizer's step, ...),
     on the base of a view, so that autograd sees a tensor it saved change (see dt__version) */
  unsigned version;
  /* when it was made, in the order of every storage made (see src/core/graph.c: what a graph
     keeps and what makes it stale) */
  long long serial;
} dt__storage;

static volatile long long dt__storage_serial;
static volatile int dt__graphs_live; /* graphs (capturing or captured) that exist */
static int dt__graph_on_release(dt__storage *st);

struct dt_tensor {
  int refs;
  dt_dtype dtype;
  dt_shape shape;
  int64_t numel;
  size_t nbytes;
  dt__storage *st;
  /* autograd (see src/autograd/): all zero for a tensor outside any graph */
  int requires_grad;      /* a leaf marked by dt_requires_grad_, or a result of recorded operations */
  dt_tensor *grad;        /* a leaf's accumulated gradient (owned); NULL until a backward reaches it */
  struct dt__node *node;  /* the recorded operation that made it (one reference); NULL for a leaf */
};

struct dt__node;
static void dt__node_release(struct dt__node *n); /* src/autograd/graph.c */

/* The version counter of t's memory: a view's is its base's. */
static unsigned *dt__version(const dt_tensor *t) { return t->st->base ? &t->st->base->version : &t->st->version; }

/* Whether a and b share some bytes of memory: views of one tensor (disjoint slices do not), or
   tensors over the same foreign memory (dt_from_blob, DLPack) */
static int dt__overlap(const dt_tensor *a, const dt_tensor *b) {
  const char *pa = (const char *)a->st->ptr, *pb = (const char *)b->st->ptr;
  return dt_device_equal(a->st->device, b->st->device) && pa < pb + b->nbytes && pb < pa + a->nbytes;
}
/* Whether they do without being the same elements (a slice of a tensor and another slice of it
   that it overlaps): an elementwise operation writing a while reading b would give a result that
   depends on the order elements are written. A tensor with itself does not count. */
static int dt__partial_overlap(const dt_tensor *a, const dt_tensor *b) {
  return dt__overlap(a, b) && !(a->st->ptr == b->st->ptr && a->nbytes == b->nbytes);
}

/* Gives a storage's memory back (its last reference went): to the backend, or to the
   owner of foreign memory. */
static void dt__storage_free(dt__storage *st) {
  if (!st->foreign) {
    dt__be(st->device)->free(st->device.index, st->ptr, st->nbytes);
  } else {
    /* queued work may still read it; the owner frees it once that is done */
    if (st->device.type != DT_CPU) (void)dt__be(st->device)->synchronize(st->device.index);
    if (st->deleter) st->deleter(st->del_data, st->del_ctx);
  }
  DT_FREE(st);
}

static void dt__storage_release(dt__storage *st) {
  if (st && DT__ATOMIC_ADD(&st->refs, -1) == 0) {
    if (st->base) {
      dt__storage_release(st->base); /* a view: base is never a view itself (see dt_slice) */
      DT_FREE(st);
      return;
    }
    /* a graph that may still write or read it keeps it until dt_graph_free */
    if (DT__ATOMIC_LOAD(&dt__graphs_live) > 0 && dt__graph_on_release(st)) return;
    dt__storage_free(st);
  }
}

/* A tensor header over storage `st` (whose reference it takes). */
static dt_tensor *dt__wrap(const char *op, dt__storage *st, const dt_shape *s, dt_dtype t, int64_t numel, size_t nbytes) {
  dt_tensor *x = (dt_tensor *)DT_MALLOC(sizeof(dt_tensor));
  if (!x) {
    dt__storage_release(st);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a tensor header", op);
    return NULL;
  }
  x->refs = 1; x->dtype = t; x->shape = *s; x->numel = numel; x->nbytes = nbytes; x->st = st;
  x->requires_grad = 0; x->grad = NULL; x->node = NULL;
  return x;
}

/* A new uninitialised tensor. Checks dtype, shape and device first. */
static dt_tensor *dt__new(const char *op, dt_shape s, dt_dtype t, dt_device d) {
  int64_t numel = 0;
  size_t nbytes = 0;
  dt__storage *st;
  dt_status rc;
  if (dt__check_device(op, d) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (dt__check_shape(op, &s, t, &numel, &nbytes) != DT_OK) return NULL;
  st = (dt__storage *)DT_MALLOC(sizeof(dt__storage));
  if (!st) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a tensor header", op); return NULL; }
  st->refs = 1; st->device = d; st->nbytes = nbytes; st->ptr = NULL;
  st->foreign = 0; st->deleter = NULL; st->del_data = st->del_ctx = NULL; st->base = NULL; st->version = 0;
  st->serial = DT__ATOMIC_ADD(&dt__storage_serial, 1);
  if ((rc = dt__be(d)->alloc(d.index, nbytes, &st->ptr)) != DT_OK) {
    DT_FREE(st);
    dt__backend_fail(op, d, rc);
    return NULL;
  }
  return dt__wrap(op, st, &s, t, numel, nbytes);
}

/* An uninitialised tensor shaped like `a` on a's device. */
static dt_tensor *dt__new_like(const char *op, const dt_tensor *a, dt_dtype t) {
  return dt__new(op, a->shape, t, a->st->device);
}

static dt_status dt__check_tensor(const char *op, const char *name, const dt_tensor *t) {
  if (!t) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, name);
  return DT_OK;
}

static dt_status dt__same_device(const char *op, const char *an, const dt_tensor *a, const char *bn, const dt_tensor *b) {
  char x[48], y[48];
  if (dt_device_equal(a->st->device, b->st->device)) return DT_OK;
  return dt__fail(DT_ERR_DEVICE_MISMATCH,
                  "%s: expected all tensors on the same device, but %s is on %s and %s is on %s (move one with dt_to)",
                  op, bn, dt_device_str(b->st->device, y, sizeof y), an, dt_device_str(a->st->device, x, sizeof x));
}

static dt_status dt__same_dtype(const char *op, const char *an, const dt_tensor *a, const char *bn, const dt_tensor *b) {
  if (a->dtype == b->dtype) return DT_OK;
  return dt__fail(DT_ERR_DTYPE, "%s: expected tensors of one dtype, but %s is %s and %s is %s (convert one with dt_cast)",
                  op, an, dt_dtype_name(a->dtype), bn, dt_dtype_name(b->dtype));
}

/* uint8 and bool hold pixels, labels and masks: creation, copy, cast, print, compare, but no arithmetic */
static dt_status dt__no_arith(const char *op, const char *name, const dt_tensor *a) {
  if (a->dtype != DT_U8 && a->dtype != DT_BOOL) return DT_OK;
  return dt__fail(DT_ERR_DTYPE, "%s: %s is %s, which has no arithmetic here (convert with dt_cast to int32, int64 or a float dtype)",
                  op, name, dt_dtype_name(a->dtype));
}

static dt_status dt__float_only(const char *op, const char *name, const dt_tensor *a) {
  if (dt__is_float(a->dtype)) return DT_OK;
  return dt__fail(DT_ERR_DTYPE, "%s: %s is %s, but this operation needs float32, float64, float16 or bfloat16 (convert with dt_cast)",
                  op, name, dt_dtype_name(a->dtype));
}

static dt_status dt__run(const char *op, dt_device d, dt_status s) {
  return s == DT_OK ? DT_OK : dt__backend_fail(op, d, s);
}

/* Runs a backend call that fills tensor `y`; on failure releases y and returns NULL. */
static dt_tensor *dt__done(const char *op, dt_tensor *y, dt_status s) {
  if (s == DT_OK) return y;
  dt__backend_fail(op, y->st->device, s);
  dt_release(y);
  return NULL;
}

DTDEF dt_tensor *dt_empty(dt_shape s, dt_dtype t, dt_device d) { return dt__new("dt_empty", s, t, d); }

static dt_tensor *dt__filled(const char *op, dt_shape s, dt_dtype t, double v, dt_device d) {
  dt_tensor *y = dt__new(op, s, t, d);
  if (!y || y->numel == 0) return y;
  return dt__done(op, y, dt__be(d)->fill(d.index, t, y->numel, v, y->st->ptr));
}

DTDEF dt_tensor *dt_zeros(dt_shape s, dt_device d) { return dt__filled("dt_zeros", s, DT_F32, 0.0, d); }
DTDEF dt_tensor *dt_ones(dt_shape s, dt_device d) { return dt__filled("dt_ones", s, DT_F32, 1.0, d); }
DTDEF dt_tensor *dt_full(dt_shape s, double value, dt_device d) { return dt__filled("dt_full", s, DT_F32, value, d); }

/* Copies bytes between any two devices (or within one). */
static dt_status dt__copy_bytes(const char *op, dt_device dd, void *dst, dt_device sd, const void *src, size_t n) {
  dt_status s;
  if (n == 0) return DT_OK;
  if (!dst || !src) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: a NULL pointer for %llu bytes", op, (unsigned long long)n);
  if (!dt_device_equal(dd, sd) && DT__ATOMIC_LOAD(&dt__graphs_live) > 0 &&
      ((s = dt__graph_forbid(op, dd, "a copy from another device")) != DT_OK ||
       (s = dt__graph_forbid(op, sd, "a copy to another device")) != DT_OK))
    return s;
  if (dd.type == DT_CPU && sd.type == DT_CPU) {
    if (DT__ATOMIC_LOAD(&dt__cpu_capturing)) return dt__run(op, dd, dt__be(dd)->copy(-1, dst, -1, src, n)); /* recorded */
    memmove(dst, src, n);
    return DT_OK;
  }
  if (dd.type == DT_CPU) s = dt__be(sd)->copy(-1, dst, sd.index, src, n);
  else if (sd.type == DT_CPU) s = dt__be(dd)->copy(dd.index, dst, -1, src, n);
  else s = dt__be(dd)->copy(dd.index, dst, sd.index, src, n);
  return dt__run(op, dd.type == DT_CPU ? sd : dd, s);
}

DTDEF dt_tensor *dt_from_data(const void *host, dt_shape s, dt_dtype t, dt_device d) {
  dt_tensor *y;
  if (dt__check_device("dt_from_data", d) != DT_OK || dt__graph_forbid("dt_from_data", d, "a copy from host memory") != DT_OK)
    return NULL;
  if (!(y = dt__new("dt_from_data", s, t, d))) return NULL;
  if (!host && y->numel > 0) {
    dt_release(y);
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_from_data: host is NULL");
    return NULL;
  }
  if (dt__copy_bytes("dt_from_data", d, y->st->ptr, dt_cpu(), host, y->nbytes) != DT_OK) { dt_release(y); return NULL; }
  return y;
}

static int64_t dt__f2i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}
static int32_t dt__f2i32(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;
}
/* float to uint8 as PyTorch's CPU conversion (x86-64): toward zero through int32, keeping the low
   8 bits, so 255.9 -> 255, -1.5 -> 255, 300 -> 44; NaN, +-inf and values whose truncation does
   not fit in int32 give 0 (there the int32 conversion yields INT32_MIN, whose low byte is 0). The
   same on every device. */
static uint8_t dt__f2u8(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return 0;
  return (uint8_t)(uint32_t)(int32_t)v;
}

DTDEF dt_tensor *dt_arange(double start, double end, double step, dt_dtype t, dt_device d) {
  const char *op = "dt_arange";
  double count;
  int64_t n, i;
  void *host;
  dt_tensor *y;
  if (dt__check_device(op, d) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (t == DT_BOOL) { dt__fail(DT_ERR_DTYPE, "%s: no arange of bool (as PyTorch); make a uint8 one and compare or cast it", op); return NULL; }
  if (!(start == start && end == end && step == step) || start - start != 0 || end - end != 0 || step - step != 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: start, end and step must be finite, got %g, %g, %g", op, start, end, step);
    return NULL;
  }
  if (step == 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: step must be nonzero", op); return NULL; }
  if ((step > 0 && end < start) || (step < 0 && end > start)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: end %g is on the wrong side of start %g for step %g", op, end, start, step);
    return NULL;
  }
  count = ceil((end - start) / step);
  if (!(count <= 1e15)) { dt__fail(DT_ERR_SHAPE, "%s: %g elements is too many", op, count); return NULL; }
  n = (int64_t)count;
  if (dt__check_device(op, d) != DT_OK || dt__graph_forbid(op, d, "a copy from host memory") != DT_OK) return NULL;
  y = dt__new(op, dt_shape1(n), t, d);
  if (!y || n == 0) return y;
  host = d.type == DT_CPU ? y->st->ptr : DT_MALLOC(y->nbytes);
  if (!host) {
    dt_release(y);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host staging %lld elements", op, (long long)n);
    return NULL;
  }
  for (i = 0; i < n; i++) {
    double v = start + (double)i * step;
    switch (t) {
      case DT_F32: ((float *)host)[i] = (float)v; break;
      case DT_F64: ((double *)host)[i] = v; break;
      case DT_I32: ((int32_t *)host)[i] = dt__f2i32(v); break;
      case DT_I64: ((int64_t *)host)[i] = dt__f2i64(v); break;
      case DT_U8: ((uint8_t *)host)[i] = dt__f2u8(v); break;
      case DT_BOOL: ((uint8_t *)host)[i] = v != 0; break; /* refused above */
      case DT_F16: case DT_BF16: ((uint16_t *)host)[i] = dt__f32_to_half(t == DT_BF16, (float)v); break;
    }
  }
  if (host != y->st->ptr) {
    dt_status s = dt__copy_bytes(op, d, y->st->ptr, dt_cpu(), host, y->nbytes);
    DT_FREE(host);
    if (s != DT_OK) { dt_release(y); return NULL; }
  }
  return y;
}

/* (0, 1, ..., n - 1) as I64 on d for the backwards and dt_one_hot, which a capture may record:
   while a graph exists, made on d by a fill, additions and concatenations (doubling), never
   copied from the host (dt_arange's copy is refused during a capture); else dt_arange's one
   copy. */
static dt_tensor *dt__iota(int64_t n, dt_device d) {
  dt_tensor *y, *z, *c;
  const dt_tensor *parts[2];
  int64_t len = 1;
  if (DT__ATOMIC_LOAD(&dt__graphs_live) == 0) return dt_arange(0, (double)(n > 0 ? n : 0), 1, DT_I64, d);
  y = dt_empty(dt_shape1(n > 0 ? 1 : 0), DT_I64, d);
  if (!y || n <= 0) return y;
  if (dt_fill_(y, 0.0) != DT_OK) { dt_release(y); return NULL; }
  while (len < n) {
    if (!(z = dt_add_scalar(y, (double)len))) { dt_release(y); return NULL; }
    parts[0] = y; parts[1] = z;
    c = dt_cat(parts, 2, 0);
    dt_release(z); dt_release(y);
    if (!(y = c)) return NULL;
    len *= 2;
  }
  if (len == n) return y;
  c = dt_slice(y, 0, 0, n);
  dt_release(y);
  return c;
}

DTDEF dt_device dt_device_of(const dt_tensor *t) {
  if (dt__check_tensor("dt_device_of", "t", t) != DT_OK) return dt_cpu();
  return t->st->device;
}
DTDEF dt_dtype dt_dtype_of(const dt_tensor *t) {
  if (dt__check_tensor("dt_dtype_of", "t", t) != DT_OK) return DT_F32;
  return t->dtype;
}
DTDEF dt_shape dt_shape_of(const dt_tensor *t) {
  if (dt__check_tensor("dt_shape_of", "t", t) != DT_OK) { dt_shape s = dt_shape0(); s.ndim = -1; return s; }
  return t->shape;
}
DTDEF int dt_ndim(const dt_tensor *t) {
  if (dt__check_tensor("dt_ndim", "t", t) != DT_OK) return -1;
  return t->shape.ndim;
}
DTDEF int64_t dt_dim(const dt_tensor *t, int i) {
  if (dt__check_tensor("dt_dim", "t", t) != DT_OK) return -1;
  if (i < -t->shape.ndim || i >= t->shape.ndim) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_dim: dimension %d out of range for a %d-d tensor", i, t->shape.ndim);
    return -1;
  }
  return t->shape.dims[i < 0 ? i + t->shape.ndim : i];
}
DTDEF int64_t dt_numel(const dt_tensor *t) {
  if (dt__check_tensor("dt_numel", "t", t) != DT_OK) return -1;
  return t->numel;
}
DTDEF size_t dt_nbytes(const dt_tensor *t) {
  if (dt__check_tensor("dt_nbytes", "t", t) != DT_OK) return 0;
  return t->nbytes;
}
DTDEF void *dt_data_ptr(dt_tensor *t) {
  if (dt__check_tensor("dt_data_ptr", "t", t) != DT_OK) return NULL;
  return t->st->ptr;
}
DTDEF dt_tensor *dt_retain(dt_tensor *t) {
  if (t) DT__ATOMIC_ADD(&t->refs, 1);
  return t;
}
DTDEF void dt_release(dt_tensor *t) {
  if (t && DT__ATOMIC_ADD(&t->refs, -1) == 0) {
    dt__storage_release(t->st);
    dt_release(t->grad); /* a gradient has neither a gradient nor a node */
    if (t->node) dt__node_release(t->node);
    DT_FREE(t);
  }
}

/* Memory statistics and the cache, per device (torch.cuda.memory_allocated, empty_cache). */
DTDEF dt_status dt_memory_stats_get(dt_device d, dt_memory_stats *out) {
  dt_status s;
  if (!out) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_memory_stats_get: out is NULL");
  if ((s = dt__check_device("dt_memory_stats_get", d)) != DT_OK) return s;
  memset(out, 0, sizeof *out);
  return dt__run("dt_memory_stats_get", d, dt__be(d)->memory_stats(d.index, out));
}

DTDEF dt_status dt_empty_cache(dt_device d) {
  dt_status s;
  if ((s = dt__check_device("dt_empty_cache", d)) != DT_OK) return s;
  if ((s = dt__graph_forbid("dt_empty_cache", d, "emptying the cache (it waits for the device)")) != DT_OK) return s;
  return dt__run("dt_empty_cache", d, dt__be(d)->empty_cache(d.index));
}
