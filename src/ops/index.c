/* A tensor is seen as (outer, len, inner) around the dim in question. Everything
   moves elements of dt_dtype_size bytes, whatever the dtype, through two backend calls:
   copy_strided (slices along dims > 0, cat, permute) and index_select. A slice along dim 0
   is a view: a storage with `base` set, pointing into t's memory (see dt__storage). */

/* dim of an nd-d tensor wrapped into [0, nd) (negatives count from the end); -1 with a message when out of range */
static int dt__wrap_dim(const char *op, const char *name, int dim, int nd) {
  if (nd == 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s %d out of range: a 0-d tensor has no dimensions", op, name, dim);
    return -1;
  }
  if (dim < -nd || dim >= nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s %d out of range for a %d-d tensor (expected %d to %d)", op, name, dim, nd,
             -nd, nd - 1);
    return -1;
  }
  return dim < 0 ? dim + nd : dim;
}

/* The products of the dims before and after dim (wrap-safe: only used when the tensor is not empty). */
static void dt__around(const dt_shape *s, int dim, int64_t *outer, int64_t *inner) {
  uint64_t o = 1, in = 1;
  int i;
  for (i = 0; i < dim; i++) o *= (uint64_t)s->dims[i];
  for (i = dim + 1; i < s->ndim; i++) in *= (uint64_t)s->dims[i];
  *outer = (int64_t)o;
  *inner = (int64_t)in;
}

/* y[sum i_d bstride_d] = x[sum i_d astride_d] over dims (g->ndim of them, g->numel elements, > 0):
   size-1 dims dropped, a dim joined into the next where both strides chain; a plain copy when
   that leaves one contiguous run. x and y are on device d. */
static dt_status dt__strided_copy(const char *op, dt_device d, size_t es, dt__bcast *g, const void *x, void *y) {
  dt__bcast m;
  int i, k = 0;
  memset(&m, 0, sizeof m);
  m.numel = g->numel;
  for (i = 0; i < g->ndim; i++) {
    if (g->dims[i] == 1) continue;
    if (k > 0 && m.astride[k - 1] == g->astride[i] * g->dims[i] && m.bstride[k - 1] == g->bstride[i] * g->dims[i]) {
      m.dims[k - 1] *= g->dims[i];
      m.astride[k - 1] = g->astride[i];
      m.bstride[k - 1] = g->bstride[i];
      continue;
    }
    m.dims[k] = g->dims[i]; m.astride[k] = g->astride[i]; m.bstride[k] = g->bstride[i];
    k++;
  }
  if (k == 0) { k = 1; m.dims[0] = 1; m.astride[0] = 1; m.bstride[0] = 1; }
  m.ndim = k;
  m.contiguous = k == 1 && m.astride[0] == 1 && m.bstride[0] == 1;
  if (m.contiguous) return dt__copy_bytes(op, d, y, d, x, (size_t)m.numel * es);
  return dt__run(op, d, dt__be(d)->copy_strided(d.index, es, &m, x, y));
}

static dt_tensor *dt__slice(const dt_tensor *t, int dim, int64_t start, int64_t end) {
  const char *op = "dt_slice";
  int64_t n, outer, inner, numel;
  size_t es, nbytes;
  dt_shape ys;
  dt_device d;
  dt_tensor *y;
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  if ((dim = dt__wrap_dim(op, "dim", dim, t->shape.ndim)) < 0) return NULL;
  n = t->shape.dims[dim];
  /* Python's t[start:end]: negatives count from the end, then both clamp to [0, n] */
  if (start < 0) start += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  if (end < 0) end += n;
  if (end < 0) end = 0;
  if (end > n) end = n;
  if (end < start) end = start;
  ys = t->shape;
  ys.dims[dim] = end - start;
  if (dt__check_shape(op, &ys, t->dtype, &numel, &nbytes) != DT_OK) return NULL;
  es = dt_dtype_size(t->dtype);
  d = t->st->device;
  if (dim == 0) { /* a view: rows start .. end - 1 of t's memory */
    dt__storage *root = t->st->base ? t->st->base : t->st, *st;
    size_t row = n > 0 ? (size_t)(t->numel / n) * es : 0;
    if (!(st = (dt__storage *)DT_MALLOC(sizeof(dt__storage)))) {
      dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a tensor header", op);
      return NULL;
    }
    st->refs = 1; st->device = d; st->nbytes = nbytes;
    st->ptr = (char *)t->st->ptr + (size_t)start * row;
    st->foreign = 0; st->deleter = NULL; st->del_data = st->del_ctx = NULL;
    st->base = root; st->version = 0;
    DT__ATOMIC_ADD(&root->refs, 1);
    return dt__wrap(op, st, &ys, t->dtype, numel, nbytes); /* on failure releases st, and so root */
  }
  if (!(y = dt__new(op, ys, t->dtype, d)) || numel == 0) return y;
  {
    /* y: (outer, end - start, inner) from t: (outer, n, inner), rows start .. end - 1 */
    dt__bcast g;
    dt__around(&t->shape, dim, &outer, &inner);
    memset(&g, 0, sizeof g);
    g.ndim = 2; g.numel = numel;
    g.dims[0] = outer; g.dims[1] = (end - start) * inner;
    g.astride[0] = n * inner; g.astride[1] = 1;
    g.bstride[0] = (end - start) * inner; g.bstride[1] = 1;
    if (dt__strided_copy(op, d, es, &g, (const char *)t->st->ptr + (size_t)(start * inner) * es, y->st->ptr) != DT_OK) {
      dt_release(y);
      return NULL;
    }
  }
  return y;
}
DTDEF dt_tensor *dt_slice(const dt_tensor *t, int dim, int64_t start, int64_t end) {
  dt_tensor *y = dt__slice(t, dim, start, end);
  if (y && DT__AG_ON(t)) { /* the start as dt__slice clamped it */
    int64_t n = t->shape.dims[dim < 0 ? dim + t->shape.ndim : dim];
    if (start < 0) start += n;
    if (start < 0) start = 0;
    if (start > n) start = n;
    y = dt__ag_record1a(y, DT__AG_SLICE, "dt_slice", t, 0, dim, start, NULL);
  }
  return y;
}

static dt_tensor *dt__index_select(const dt_tensor *t, int dim, const dt_tensor *index) {
  const char *op = "dt_index_select";
  int64_t n, k, outer = 1, inner = 1, j;
  dt_shape ys;
  dt_device d;
  dt_tensor *y;
  char sb[200];
  dt_status s;
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__check_tensor(op, "index", index) != DT_OK) return NULL;
  if (dt__same_device(op, "t", t, "index", index) != DT_OK) return NULL;
  if (index->dtype != DT_I64) {
    dt__fail(DT_ERR_DTYPE, "%s: index is %s, but it must be int64 (convert it with dt_cast)", op, dt_dtype_name(index->dtype));
    return NULL;
  }
  if (index->shape.ndim > 1) {
    dt__fail(DT_ERR_SHAPE, "%s: index must be 1-d (k,) or 0-d, got shape %s", op, dt__shape_str(&index->shape, sb, sizeof sb));
    return NULL;
  }
  k = index->numel;
  d = t->st->device;
  ys = t->shape;
  if (t->shape.ndim == 0) { /* PyTorch: a 0-d t takes dim 0 (or -1) and one index, 0 */
    if (dim != 0 && dim != -1) {
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a 0-d tensor (expected -1 or 0)", op, dim);
      return NULL;
    }
    if (k != 1) {
      dt__fail(DT_ERR_SHAPE, "%s: t is 0-d, so index must hold one value, but it holds %lld", op, (long long)k);
      return NULL;
    }
    n = 1;
  } else {
    if ((dim = dt__wrap_dim(op, "dim", dim, t->shape.ndim)) < 0) return NULL;
    n = t->shape.dims[dim];
    ys.dims[dim] = k;
  }
  if (k > 0 && n == 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index holds %lld values, but dimension %d of t (shape %s) has size 0, so none is in range",
             op, (long long)k, dim, dt__shape_str(&t->shape, sb, sizeof sb));
    return NULL;
  }
  /* the index is in host memory: every value checked now (a CPU graph checks them as it replays) */
  if (d.type == DT_CPU && !DT__ATOMIC_LOAD(&dt__cpu_capturing))
    for (j = 0; j < k; j++) {
      int64_t v = ((const int64_t *)index->st->ptr)[j];
      if (v < 0 || v >= n) {
        dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index[%lld] = %lld is out of range for dimension %d of t, of size %lld (expected 0 to %lld)",
                 op, (long long)j, (long long)v, dim, (long long)n, (long long)(n - 1));
        return NULL;
      }
    }
  if (!(y = dt__new(op, ys, t->dtype, d)) || k == 0) return y;
  /* on a GPU an empty y still has its indices checked (the backend's kernel records a bad one) */
  if (y->numel == 0 && d.type == DT_CPU) return y;
  if (t->shape.ndim > 0 && t->numel > 0) dt__around(&t->shape, dim, &outer, &inner);
  else if (t->shape.ndim > 0) { outer = 0; inner = 0; }
  s = dt__be(d)->index_select(d.index, dt_dtype_size(t->dtype), outer, n, inner, (const int64_t *)index->st->ptr, k,
                              t->st->ptr, y->st->ptr);
  return dt__done(op, y, s);
}
DTDEF dt_tensor *dt_index_select(const dt_tensor *t, int dim, const dt_tensor *index) {
  dt_tensor *y = dt__index_select(t, dim, index);
  if (y && DT__AG_ON(t)) {
    const dt_tensor *in[2];
    dt__ag_args g;
    in[0] = t; in[1] = index;
    g.p = 0; g.dim = dim; g.start = 0; g.perm = NULL;
    y = dt__ag_record(y, DT__AG_INDEX_SELECT, "dt_index_select", 2, in, &g);
  }
  return y;
}

/* torch.cat's legacy rule: a 1-d tensor with no elements, (0,), is skipped whatever the others' shapes */
static int dt__cat_skipped(const dt_tensor *t) { return t->shape.ndim == 1 && t->shape.dims[0] == 0; }

static dt_tensor *dt__cat(const dt_tensor *const *ts, int n, int dim) {
  const char *op = "dt_cat";
  const dt_tensor *ref = NULL;
  int i, r, k, nd;
  int64_t total = 0, off = 0, outer, inner;
  dt_shape ys;
  dt_device d;
  dt_tensor *y;
  char name[24], a[200], b[200];
  if (!ts) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: ts is NULL", op); return NULL; }
  if (n <= 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: expected at least one tensor, got n = %d", op, n); return NULL; }
  for (i = 0; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__check_tensor(op, name, ts[i]) != DT_OK) return NULL;
  }
  for (i = 1; i < n; i++) { /* devices first, as every operation checks them */
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_device(op, "ts[0]", ts[0], name, ts[i]) != DT_OK) return NULL;
  }
  for (i = 1; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_dtype(op, "ts[0]", ts[0], name, ts[i]) != DT_OK) return NULL;
  }
  d = ts[0]->st->device;
  for (r = 0; r < n && dt__cat_skipped(ts[r]); r++) {}
  if (r == n) return dt__new(op, dt_shape1(0), ts[0]->dtype, d); /* all (0,): PyTorch ignores dim then */
  ref = ts[r];
  for (i = 0; i < n; i++)
    if (ts[i]->shape.ndim == 0) {
      dt__fail(DT_ERR_SHAPE, "%s: ts[%d] is 0-d, and a 0-d tensor cannot be concatenated (dt_stack stacks them)", op, i);
      return NULL;
    }
  nd = ref->shape.ndim;
  if ((dim = dt__wrap_dim(op, "dim", dim, nd)) < 0) return NULL;
  for (i = 0; i < n; i++) {
    const dt_shape *s = &ts[i]->shape;
    if (dt__cat_skipped(ts[i])) continue;
    for (k = 0; k < nd; k++)
      if (s->ndim != nd || (k != dim && s->dims[k] != ref->shape.dims[k])) {
        dt__fail(DT_ERR_SHAPE, "%s: ts[%d] has shape %s but ts[%d] has shape %s: sizes must match except in dimension %d", op, r,
                 dt__shape_str(&ref->shape, a, sizeof a), i, dt__shape_str(s, b, sizeof b), dim);
        return NULL;
      }
    if (s->dims[dim] > INT64_MAX - total) {
      dt__fail(DT_ERR_SHAPE, "%s: the sizes along dimension %d add up past int64", op, dim);
      return NULL;
    }
    total += s->dims[dim];
  }
  ys = ref->shape;
  ys.dims[dim] = total;
  if (!(y = dt__new(op, ys, ref->dtype, d)) || y->numel == 0) return y;
  dt__around(&ys, dim, &outer, &inner);
  for (i = 0; i < n; i++) {
    const dt_tensor *x = ts[i];
    size_t es = dt_dtype_size(x->dtype);
    dt__bcast g;
    if (dt__cat_skipped(x)) continue;
    if (x->numel > 0) {
      /* y[o, off + j, c] = x[o, j, c]: outer rows of len * inner elements, len * inner apart in x, total * inner in y */
      memset(&g, 0, sizeof g);
      g.ndim = 2; g.numel = x->numel;
      g.dims[0] = outer; g.dims[1] = x->shape.dims[dim] * inner;
      g.astride[0] = g.dims[1]; g.astride[1] = 1;
      g.bstride[0] = total * inner; g.bstride[1] = 1;
      if (dt__strided_copy(op, d, es, &g, x->st->ptr, (char *)y->st->ptr + (size_t)(off * inner) * es) != DT_OK) {
        dt_release(y);
        return NULL;
      }
    }
    off += x->shape.dims[dim];
  }
  return y;
}
DTDEF dt_tensor *dt_cat(const dt_tensor *const *ts, int n, int dim) {
  dt_tensor *y = dt__cat(ts, n, dim);
  if (y && dt__ag_on_list(ts, n)) {
    dt__ag_args g;
    g.p = 0; g.dim = dim; g.start = 0; g.perm = NULL;
    y = dt__ag_record(y, DT__AG_CAT, "dt_cat", n, ts, &g);
  }
  return y;
}

static dt_tensor *dt__permute(const dt_tensor *t, const int *dims) {
  const char *op = "dt_permute";
  int nd, i, p[DT_MAX_DIMS], seen[DT_MAX_DIMS];
  int64_t xs[DT_MAX_DIMS], ystr;
  dt_shape ys;
  dt__bcast g;
  dt_tensor *y;
  char name[24];
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  nd = t->shape.ndim;
  if (!dims && nd > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dims is NULL for a %d-d tensor", op, nd); return NULL; }
  memset(seen, 0, sizeof seen);
  for (i = 0; i < nd; i++) {
    snprintf(name, sizeof name, "dims[%d]", i);
    if ((p[i] = dt__wrap_dim(op, name, dims[i], nd)) < 0) return NULL;
    if (seen[p[i]]) {
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dims[%d] = %d repeats dimension %d: dims must be a permutation of 0..%d", op, i,
               dims[i], p[i], nd - 1);
      return NULL;
    }
    seen[p[i]] = 1;
  }
  ys = t->shape;
  for (i = 0; i < nd; i++) ys.dims[i] = t->shape.dims[p[i]];
  if (!(y = dt__new(op, ys, t->dtype, t->st->device)) || y->numel == 0) return y;
  /* y[i_0, ..] = t[.., i_k at dim p[k], ..]: y's dim k walks t with t's stride of dim p[k] */
  for (i = nd - 1, ystr = 1; i >= 0; i--) { xs[i] = ystr; ystr *= t->shape.dims[i]; }
  memset(&g, 0, sizeof g);
  g.ndim = nd > 0 ? nd : 1; g.numel = y->numel;
  if (nd == 0) { g.dims[0] = 1; g.astride[0] = 1; g.bstride[0] = 1; }
  for (i = nd - 1, ystr = 1; i >= 0; i--) {
    g.dims[i] = ys.dims[i];
    g.astride[i] = xs[p[i]];
    g.bstride[i] = ystr;
    ystr *= ys.dims[i];
  }
  if (dt__strided_copy(op, t->st->device, dt_dtype_size(t->dtype), &g, t->st->ptr, y->st->ptr) != DT_OK) {
    dt_release(y);
    return NULL;
  }
  return y;
}
DTDEF dt_tensor *dt_permute(const dt_tensor *t, const int *dims) {
  dt_tensor *y = dt__permute(t, dims);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_PERMUTE, "dt_permute", t, 0, 0, 0, dims) : y;
}
