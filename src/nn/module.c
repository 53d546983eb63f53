typedef enum dt__mkind { DT__M_LINEAR = 0, DT__M_RELU, DT__M_SEQ, DT__M_USER } dt__mkind;
/* modules that hold others: a sequential, a user-written module (its children) */
#define DT__M_HOLDS(m) ((m)->kind == DT__M_SEQ || (m)->kind == DT__M_USER)

struct dt_module {
  dt__mkind kind;
  dt_device device;
  dt_dtype dtype;
  /* linear: weight (out, in), bias (out,), their grads; in == 0 until a lazy layer's first forward */
  int64_t in, out;
  dt_tensor *weight, *bias, *gweight, *gbias;
  dt_tensor *input;        /* linear, relu: the last forward's input, for backward */
  dt_shape out_shape;      /* the last forward's output shape; ndim -1 before any */
  int nograd_fwd;          /* the last forward called on this module ran with grad disabled: it kept nothing */
  /* linear: gzero, its grads are zero but not written yet: dt_zero_grad leaves them so while
     nothing outside the layer can see them (gshared 0), and the next backward writes them with
     beta 0 instead of adding to zeros (the trainer's assign), which saves a pass over gW and a
     read of it; gshared, they were handed out (a parameter table: dt_module_grad, optimizers):
     from then on dt_zero_grad writes zeros at once. See dt__grads_walk. */
  int gzero, gshared;
  /* sequential */
  dt_module **layers;
  int n, cap;
  dt_module *parent;       /* the sequential that holds this module (it has one owner), or NULL */
  int height;              /* sequentials from this module down to its deepest layer: 0 for a layer, 1 for a flat sequential */
  /* the parameter table, rebuilt when asked: names as PyTorch's state_dict */
  int nparams;
  char **names;            /* nparams pointers into name_pool */
  char *name_pool;
  size_t pool_bytes;
  dt_tensor **params, **grads;
  /* user-written (dt_module_new): its forward, its own parameters (one reference each, in the
     order added) with their gradient tensors (as a linear layer's: each one's dt_grad, adopted
     after an autograd backward), and its children's names (the children are layers[]) */
  dt_forward_fn fwd;
  char cls[DT_MODULE_NAME_MAX + 1]; /* the class name given to dt_module_new (print(net)); "Module" for NULL */
  void *user;
  void (*free_user)(void *user);
  int np, pcap;
  char **pnames, **cnames;
  dt_tensor **pts, **pgs;
  int training;            /* net.train() / net.eval() */
  /* buffers (register_buffer): state that saves, loads and moves with the module but is no
     parameter (no gradient, no optimizer step), one reference each, in the order added */
  int nb, bcap;
  char **bnames;
  dt_tensor **bts;
};

/* The longest parameter name: one "index." (an int has at most 10 digits) or "name." per holding
   module, then the parameter's name. */
#define DT__NAME_MAX (DT_MODULE_MAX_DEPTH * (DT_MODULE_NAME_MAX + 1) + DT_MODULE_NAME_MAX + 1)

static dt_module *dt__module_new(const char *op, dt__mkind kind) {
  dt_module *m = (dt_module *)DT_MALLOC(sizeof(dt_module));
  if (!m) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); return NULL; }
  memset(m, 0, sizeof *m);
  m->kind = kind; m->device = dt_cpu(); m->dtype = DT_F32; m->out_shape.ndim = -1; m->training = 1;
  return m;
}

/* A linear layer's parameters are autograd's leaves: they require grad, and each one's dt_grad is
   the layer's own gradient tensor (gweight, gbias: one header, held by both), which the fused
   backward writes and the optimizers read. While the layer's gradients are zeros not yet written
   (gzero) the leaves hold none: an autograd backward then stores its gradient itself, and
   dt__linear_sync adopts it. */
static void dt__linear_link(dt_module *m) {
  m->weight->requires_grad = 1; m->bias->requires_grad = 1;
  if (m->gzero) return;
  if (m->weight->grad != m->gweight) { dt_release(m->weight->grad); m->weight->grad = dt_retain(m->gweight); }
  if (m->bias->grad != m->gbias) { dt_release(m->bias->grad); m->bias->grad = dt_retain(m->gbias); }
}

/* Takes into *slot the gradient g that an autograd backward (or dt_clip_grad_norm_, ...) stored in
   leaf p: into the memory of the header the layer has handed out (their storages swap: no copy, a
   borrowed dt_module_grad stays valid), or the header itself when they differ in shape or dtype or
   something else holds g. */
static void dt__grad_adopt(dt_tensor *p, dt_tensor **slot) {
  dt_tensor *g = p->grad, *h = *slot;
  if (g == h) return;
  if (g->refs == 1 && g->st->refs == 1 && !g->st->base && !g->st->foreign && /* only the leaf holds g */
      g->dtype == h->dtype && g->numel == h->numel && g->nbytes == h->nbytes && !g->node && !h->node &&
      g->shape.ndim == h->shape.ndim && memcmp(g->shape.dims, h->shape.dims, sizeof(int64_t) * (size_t)g->shape.ndim) == 0) {
    dt__storage *t = h->st;
    h->st = g->st; g->st = t;
    dt_release(g);
    p->grad = dt_retain(h);
  } else {
    dt_release(h);
    *slot = dt_retain(g);
  }
}

/* Brings a linear layer's gradients (gweight, gbias) and its leaves' dt_grad together again after
   autograd or a caller changed the latter: adopts a gradient stored there; a gradient set to NULL
   (dt_zero_grad_) is zeros. Every entry point that reads or writes the layer's gradients calls it. */
static dt_status dt__linear_sync(dt_module *m) {
  dt_tensor *ps[2], **slots[2];
  int k;
  if (m->kind != DT__M_LINEAR || !m->weight) return DT_OK;
  ps[0] = m->weight; ps[1] = m->bias; slots[0] = &m->gweight; slots[1] = &m->gbias;
  if (m->gzero && !ps[0]->grad && !ps[1]->grad) return DT_OK; /* still zeros not written */
  for (k = 0; k < 2; k++) /* a leaf without a gradient: zeros */
    if (!ps[k]->grad) {
      dt_status s = dt_fill_(*slots[k], 0.0);
      if (s != DT_OK) return s;
      ps[k]->grad = dt_retain(*slots[k]);
    }
  for (k = 0; k < 2; k++) dt__grad_adopt(ps[k], slots[k]);
  m->gzero = 0;
  return DT_OK;
}
/* A user-written module's parameter k: as dt__linear_sync, without pending zeros. */
static dt_status dt__uparam_sync(dt_module *m, int k) {
  dt_tensor *p = m->pts[k];
  if (!p->grad) {
    dt_status s = dt_fill_(m->pgs[k], 0.0);
    if (s != DT_OK) return s;
    p->grad = dt_retain(m->pgs[k]);
  }
  dt__grad_adopt(p, &m->pgs[k]);
  return DT_OK;
}
static dt_status dt__module_sync(dt_module *m) {
  dt_status s;
  int i;
  if (m->kind == DT__M_LINEAR) return dt__linear_sync(m);
  for (i = 0; i < m->np; i++) if ((s = dt__uparam_sync(m, i)) != DT_OK) return s;
  for (i = 0; i < m->n; i++) if ((s = dt__module_sync(m->layers[i])) != DT_OK) return s;
  return DT_OK;
}

/* Draws a linear layer's parameters: uniform in +-1/sqrt(in), as PyTorch's default. */
static dt_status dt__linear_init(const char *op, dt_module *m, int64_t in) {
  double bound = 1.0 / sqrt((double)in);
  dt_tensor *w = NULL, *b = NULL, *gw = NULL, *gb = NULL, *u;
  dt_status s = DT_OK;
  if ((u = dt__random(op, dt_shape2(m->out, in), m->device, 0))) {
    w = dt__unary(op, DT__U_AFFINE, u, 2 * bound, -bound); dt_release(u);
  }
  if (w && (u = dt__random(op, dt_shape1(m->out), m->device, 0))) {
    b = dt__unary(op, DT__U_AFFINE, u, 2 * bound, -bound); dt_release(u);
  }
  if (b && m->dtype != DT_F32) {
    dt_tensor *w2 = dt_cast(w, m->dtype), *b2 = w2 ? dt_cast(b, m->dtype) : NULL;
    dt_release(w); dt_release(b); w = w2; b = b2;
  }
  if (b) gw = dt__filled(op, dt_shape2(m->out, in), m->dtype, 0.0, m->device);
  if (gw) gb = dt__filled(op, dt_shape1(m->out), m->dtype, 0.0, m->device);
  if (!gb) {
    s = dt_last_status();
    dt_release(w); dt_release(b); dt_release(gw);
    return s == DT_OK ? DT_ERR_OUT_OF_MEMORY : s;
  }
  m->in = in; m->weight = w; m->bias = b; m->gweight = gw; m->gbias = gb;
  dt__linear_link(m);
  return DT_OK;
}

DTDEF dt_module *dt_linear(int64_t in_features, int64_t out_features) {
  const char *op = "dt_linear";
  dt_module *m;
  if (in_features < 0 || out_features <= 0) {
    dt__fail(DT_ERR_SHAPE, "%s: expected in_features >= 0 (0: lazy) and out_features > 0, got %lld and %lld", op,
             (long long)in_features, (long long)out_features);
    return NULL;
  }
  if (in_features > ((int64_t)1 << 40) || out_features > ((int64_t)1 << 40) ||
      (in_features > 0 && out_features > (INT64_MAX / 8) / in_features)) {
    dt__fail(DT_ERR_SHAPE, "%s: %lld x %lld weights are too large", op, (long long)out_features, (long long)in_features);
    return NULL;
  }
  if (!(m = dt__module_new(op, DT__M_LINEAR))) return NULL;
  m->out = out_features;
  if (in_features > 0 && dt__linear_init(op, m, in_features) != DT_OK) { DT_FREE(m); return NULL; }
  return m;
}

DTDEF dt_module *dt_relu_layer(void) { return dt__module_new("dt_relu_layer", DT__M_RELU); }
DTDEF dt_module *dt_sequential(void) {
  dt_module *m = dt__module_new("dt_sequential", DT__M_SEQ);
  if (m) m->height = 1;
  return m;
}

static int dt__module_has_params(const dt_module *m) {
  int i;
  if (m->kind == DT__M_LINEAR) return m->weight != NULL;
  if (m->np) return 1;
  if (DT__M_HOLDS(m))
    for (i = 0; i < m->n; i++) if (dt__module_has_params(m->layers[i])) return 1;
  return 0;
}

/* Sets the device and dtype of a module whose parameters (if any) are already there. */
static void dt__module_set_place(dt_module *m, dt_device d, dt_dtype t) {
  int i;
  m->device = d; m->dtype = t;
  for (i = 0; i < m->n; i++) dt__module_set_place(m->layers[i], d, t);
}

DTDEF void dt_module_free(dt_module *m) {
  int i;
  if (!m) return;
  if (m->parent) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_free: m belongs to a sequential, which frees it"); return; }
  dt_release(m->weight); dt_release(m->bias); dt_release(m->gweight); dt_release(m->gbias); dt_release(m->input);
  for (i = 0; i < m->n; i++) { m->layers[i]->parent = NULL; dt_module_free(m->layers[i]); } /* at most DT_MODULE_MAX_DEPTH deep */
  for (i = 0; i < m->np; i++) { dt_release(m->pts[i]); dt_release(m->pgs[i]); DT_FREE(m->pnames[i]); }
  for (i = 0; m->cnames && i < m->n; i++) DT_FREE(m->cnames[i]);
  for (i = 0; i < m->nb; i++) { dt_release(m->bts[i]); DT_FREE(m->bnames[i]); }
  if (m->bts) { DT_FREE(m->bts); DT_FREE(m->bnames); }
  if (m->pts) { DT_FREE(m->pts); DT_FREE(m->pgs); DT_FREE(m->pnames); }
  if (m->cnames) DT_FREE(m->cnames);
  if (m->free_user) m->free_user(m->user);
  if (m->layers) DT_FREE(m->layers);
  if (m->names) DT_FREE(m->names);
  if (m->name_pool) DT_FREE(m->name_pool);
  if (m->params) DT_FREE(m->params);
  if (m->grads) DT_FREE(m->grads);
  DT_FREE(m);
}

/* The outermost sequential that holds m (m itself when none does), and how many sequentials
   lie on the way from it to m, m included when it is one: at most DT_MODULE_MAX_DEPTH steps. */
static dt_module *dt__module_root(dt_module *m, int *depth) {
  int d = DT__M_HOLDS(m);
  while (m->parent) { m = m->parent; d++; }
  if (depth) *depth = d;
  return m;
}

/* dt_sequential_add, and dt_module_add_child (cname: the child's name, a copy the holder keeps). */
static dt_status dt__module_attach(const char *op, dt_module *seq, dt_module *layer, char *cname);
DTDEF dt_status dt_sequential_add(dt_module *seq, dt_module *layer) { return dt__module_attach("dt_sequential_add", seq, layer, NULL); }
static dt_status dt__module_attach(const char *op, dt_module *seq, dt_module *layer, char *cname) {
  char a[48], b[48];
  dt_module *root, *up;
  int depth;
  /* not freed on these two failures: its owner, or seq itself, still holds it */
  if (layer && layer->parent) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: layer already belongs to a sequential (a module has one owner)", op);
  if (layer && seq) /* layer holds seq when it is seq or one of the sequentials above it */
    for (up = seq; up; up = up->parent)
      if (up == layer) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: cannot add a sequential to itself or to one of its own layers", op);
  if (!seq) { dt_module_free(layer); if (cname) DT_FREE(cname); return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: seq is NULL", op); }
  if (!layer) { /* usually dt_sequential_add(net, dt_linear(...)) whose constructor failed: keep its reason */
    char prev[sizeof dt__err_msg];
    dt_status ps = dt__err_status;
    if (ps == DT_OK) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: layer is NULL", op);
    memcpy(prev, dt__err_msg, sizeof prev);
    return dt__fail(ps, "%s: layer is NULL, after %.900s", op, prev);
  }
  if (seq->kind != (cname ? DT__M_USER : DT__M_SEQ)) {
    dt_module_free(layer); if (cname) DT_FREE(cname);
    return dt__fail(DT_ERR_INVALID_ARGUMENT, cname ? "%s: m is not a module made by dt_module_new" : "%s: seq is not a sequential", op);
  }
  root = dt__module_root(seq, &depth);
  if (depth + layer->height > DT_MODULE_MAX_DEPTH) {
    dt_status s = dt__fail(DT_ERR_INVALID_ARGUMENT,
                           "%s: sequentials nest at most %d deep (DT_MODULE_MAX_DEPTH), but seq is %d deep and the layer "
                           "holds %d more, which would make %d", op, DT_MODULE_MAX_DEPTH, depth, layer->height, depth + layer->height);
    dt_module_free(layer); if (cname) DT_FREE(cname);
    return s;
  }
  /* the whole network, from its outermost sequential down, is on one device in one dtype */
  if (dt__module_has_params(layer) && !dt_device_equal(layer->device, root->device)) {
    if (dt__module_has_params(root)) {
      dt_status s = dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: the layer is on %s but the sequential is on %s (move one with dt_module_to)",
                             op, dt_device_str(layer->device, a, sizeof a), dt_device_str(root->device, b, sizeof b));
      dt_module_free(layer); if (cname) DT_FREE(cname);
      return s;
    }
    dt__module_set_place(root, layer->device, layer->dtype); /* nothing to move yet: follow the layer */
  }
  if (dt__module_has_params(layer) && layer->dtype != root->dtype) {
    if (dt__module_has_params(root)) {
      dt_status s = dt__fail(DT_ERR_DTYPE, "%s: the layer is %s but the sequential is %s", op,
                             dt_dtype_name(layer->dtype), dt_dtype_name(root->dtype));
      dt_module_free(layer); if (cname) DT_FREE(cname);
      return s;
    }
    dt__module_set_place(root, root->device, layer->dtype);
  }
  if (seq->n == seq->cap) {
    int cap = seq->cap ? seq->cap * 2 : 8;
    dt_module **l = seq->cap > INT_MAX / 2 ? NULL : (dt_module **)DT_MALLOC(sizeof(dt_module *) * (size_t)cap);
    char **cn = l && cname ? (char **)DT_MALLOC(sizeof(char *) * (size_t)cap) : NULL;
    if (l && cname && !cn) { DT_FREE(l); l = NULL; }
    if (!l) { dt_module_free(layer); if (cname) DT_FREE(cname); return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); }
    if (seq->n) memcpy(l, seq->layers, sizeof(dt_module *) * (size_t)seq->n);
    if (seq->layers) DT_FREE(seq->layers);
    if (cn) {
      if (seq->n) memcpy(cn, seq->cnames, sizeof(char *) * (size_t)seq->n);
      if (seq->cnames) DT_FREE(seq->cnames);
      seq->cnames = cn;
    }
    seq->layers = l; seq->cap = cap;
  }
  dt__module_set_place(layer, seq->device, seq->dtype); /* a layer without parameters holds no data */
  if (cname) seq->cnames[seq->n] = cname;
  seq->layers[seq->n++] = layer;
  layer->parent = seq;
  /* the heights above it: each step stops at the first sequential already as high */
  for (up = seq; up && up->height < layer->height + 1; layer = up, up = up->parent) up->height = layer->height + 1;
  return DT_OK;
}

DTDEF dt_module *dt_sequential_get(dt_module *seq, int i) {
  if (!seq) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sequential_get: seq is NULL"); return NULL; }
  if (seq->kind != DT__M_SEQ) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sequential_get: seq is not a sequential"); return NULL; }
  if (i < -seq->n || i >= seq->n) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sequential_get: index %d out of range for %d layers", i, seq->n);
    return NULL;
  }
  return seq->layers[i < 0 ? i + seq->n : i];
}

DTDEF int dt_sequential_len(const dt_module *seq) {
  if (!seq || seq->kind != DT__M_SEQ) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sequential_len: seq is not a sequential"); return -1; }
  return seq->n;
}

DTDEF dt_device dt_module_device(const dt_module *m) {
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_device: m is NULL"); return dt_cpu(); }
  return m->device;
}

/* Every parameter slot of m (weights, biases and grads), in state_dict order. */
static int dt__module_slots(dt_module *m, dt_tensor ***slots, int cap, int at) {
  int i;
  if (m->kind == DT__M_LINEAR && m->weight) {
    if (at + 4 <= cap) { slots[at] = &m->weight; slots[at + 1] = &m->bias; slots[at + 2] = &m->gweight; slots[at + 3] = &m->gbias; }
    return at + 4;
  }
  for (i = 0; i < m->np; i++, at += 2)
    if (at + 2 <= cap) { slots[at] = &m->pts[i]; slots[at + 1] = &m->pgs[i]; }
  for (i = 0; i < m->n; i++) at = dt__module_slots(m->layers[i], slots, cap, at);
  return at;
}

static void dt__module_drop_saved(dt_module *m) {
  int i;
  dt_release(m->input); m->input = NULL; m->out_shape.ndim = -1; m->nograd_fwd = 0;
  for (i = 0; i < m->n; i++) dt__module_drop_saved(m->layers[i]);
}

/* Converts every parameter and grad with `conv`; all or nothing. */
static dt_status dt__module_convert_ng(const char *op, dt_module *m, dt_device d, dt_dtype t);
/* (with grad mode off: a parameter's moved memory is no copy recorded by autograd) */
static dt_status dt__module_convert(const char *op, dt_module *m, dt_device d, dt_dtype t) {
  int prev = dt__no_grad;
  dt_status s;
  dt__no_grad = 1;
  s = dt__module_sync(m);
  if (s == DT_OK) s = dt__module_convert_ng(op, m, d, t);
  dt__no_grad = prev;
  return s;
}
static void dt__module_link(dt_module *m) {
  int i;
  if (m->kind == DT__M_LINEAR && m->weight) dt__linear_link(m);
  for (i = 0; i < m->np; i++) {
    m->pts[i]->requires_grad = 1;
    if (m->pts[i]->grad != m->pgs[i]) { dt_release(m->pts[i]->grad); m->pts[i]->grad = dt_retain(m->pgs[i]); }
  }
  for (i = 0; i < m->n; i++) dt__module_link(m->layers[i]);
}
/* Every buffer slot of m, after the parameter slots (at). */
static int dt__module_bslots(dt_module *m, dt_tensor ***slots, int cap, int at) {
  int i;
  for (i = 0; i < m->nb; i++, at++) if (at < cap) slots[at] = &m->bts[i];
  for (i = 0; i < m->n; i++) at = dt__module_bslots(m->layers[i], slots, cap, at);
  return at;
}
static dt_status dt__module_convert_ng(const char *op, dt_module *m, dt_device d, dt_dtype t) {
  dt_tensor ***slots, **fresh;
  int np = dt__module_slots(m, NULL, 0, 0), n = dt__module_bslots(m, NULL, 0, np), i;
  slots = n ? (dt_tensor ***)DT_MALLOC(sizeof(dt_tensor **) * (size_t)n) : NULL;
  fresh = n ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)n) : NULL;
  if (n && (!slots || !fresh)) {
    if (slots) DT_FREE(slots);
    if (fresh) DT_FREE(fresh);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  dt__module_slots(m, slots, n, 0);
  dt__module_bslots(m, slots, n, np);
  for (i = 0; i < n; i++) {
    dt_tensor *moved = dt_to(*slots[i], d);
    /* an integer buffer (num_batches_tracked) keeps its dtype, as under PyTorch's .double() */
    fresh[i] = moved && dt_dtype_of(moved) != t && (i < np || dt__is_float(moved->dtype)) ? dt_cast(moved, t) : moved;
    if (fresh[i] != moved) dt_release(moved);
    if (!fresh[i]) {
      dt_status s = dt_last_status();
      while (i-- > 0) dt_release(fresh[i]);
      DT_FREE(slots); DT_FREE(fresh);
      return s;
    }
  }
  /* Each tensor keeps its header and takes the moved memory (PyTorch's param.data = ...), so
     what holds a parameter (an optimizer made by dt_sgd_tensors and the rest, a pointer from
     dt_module_param or dt_module_grad) holds it where it went. */
  for (i = 0; i < n; i++) {
    dt_tensor *h = *slots[i], *f = fresh[i];
    if (f != h) { /* f goes with the old memory */
      dt__storage *st = h->st;
      dt_dtype t0 = h->dtype;
      size_t b0 = h->nbytes;
      h->st = f->st; h->dtype = f->dtype; h->nbytes = f->nbytes;
      f->st = st; f->dtype = t0; f->nbytes = b0;
    }
    dt_release(f);
  }
  if (n) { DT_FREE(slots); DT_FREE(fresh); }
  dt__module_link(m);
  dt__module_drop_saved(m);
  dt__module_set_place(m, d, t);
  return DT_OK;
}

/* A layer of a sequential moves with it: moving it alone would make a module
   whose parameters sit on two devices (or in two dtypes). Staying put is fine. */
static dt_status dt__module_check_borrowed(const char *op, const dt_module *m, dt_device d, dt_dtype t) {
  char a[48], b[48];
  if (!m->parent || (dt_device_equal(d, m->device) && t == m->dtype)) return DT_OK;
  return dt__fail(DT_ERR_INVALID_ARGUMENT,
                  "%s: m is a layer of a sequential (on %s, %s); move the sequential that holds it, so that all its "
                  "parameters stay on one device in one dtype (asked for %s, %s)",
                  op, dt_device_str(m->device, a, sizeof a), dt_dtype_name(m->dtype), dt_device_str(d, b, sizeof b),
                  dt_dtype_name(t));
}

DTDEF dt_status dt_module_to(dt_module *m, dt_device d) {
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_to: m is NULL");
  if ((s = dt__check_device("dt_module_to", d)) != DT_OK) return s;
  if ((s = dt__module_check_borrowed("dt_module_to", m, d, m->dtype)) != DT_OK) return s;
  return dt__module_convert("dt_module_to", m, d, m->dtype);
}

DTDEF dt_status dt_module_to_dtype(dt_module *m, dt_dtype t) {
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_to_dtype: m is NULL");
  if (!dt__is_float(t))
    return dt__fail(DT_ERR_DTYPE, "dt_module_to_dtype: parameters are float32, float64, float16 or bfloat16, not %s", dt_dtype_name(t));
  if ((s = dt__module_check_borrowed("dt_module_to_dtype", m, m->device, t)) != DT_OK) return s;
  return dt__module_convert("dt_module_to_dtype", m, m->device, t);
}

/* Walks m's parameters in state_dict order, names as PyTorch's ("0.weight"): counts them in
   *count and their names' bytes (NULs included) in *bytes, and when root->names is set, fills
   root's table. prefix (DT__NAME_MAX bytes) holds plen bytes of the name so far; a name never
   runs past it, as sequentials nest at most DT_MODULE_MAX_DEPTH deep. */
static void dt__params_walk(dt_module *root, dt_module *m, char *prefix, size_t plen, int *count, size_t *bytes) {
  int i;
  if (m->kind == DT__M_LINEAR) {
    int k;
    for (k = 0; k < 2; k++) {
      size_t len = plen + (k ? 4 : 6);
      if (root->names && *count < root->nparams) {
        char *name = root->name_pool + *bytes;
        memcpy(name, prefix, plen);
        memcpy(name + plen, k ? "bias" : "weight", len - plen + 1);
        root->names[*count] = name;
        root->params[*count] = k ? m->bias : m->weight;
        root->grads[*count] = k ? m->gbias : m->gweight;
        m->gshared = 1; /* seen from outside the layer now: zeroed at once from here on */
      }
      (*count)++;
      *bytes += len + 1;
    }
  } else if (DT__M_HOLDS(m)) {
    for (i = 0; i < m->np; i++) { /* a user-written module's own, then its children's: state_dict's order */
      size_t len = plen + strlen(m->pnames[i]);
      if (root->names && *count < root->nparams) {
        char *name = root->name_pool + *bytes;
        memcpy(name, prefix, plen);
        memcpy(name + plen, m->pnames[i], len - plen + 1);
        root->names[*count] = name;
        root->params[*count] = m->pts[i];
        root->grads[*count] = m->pgs[i];
      }
      (*count)++;
      *bytes += len + 1;
    }
    for (i = 0; i < m->n; i++) {
      int w = m->cnames ? snprintf(prefix + plen, DT__NAME_MAX - plen, "%s.", m->cnames[i])
                        : snprintf(prefix + plen, DT__NAME_MAX - plen, "%d.", i);
      dt__params_walk(root, m->layers[i], prefix, plen + (size_t)w, count, bytes);
    }
  }
}

static void dt__params_free(dt_module *m) {
  if (m->names) DT_FREE(m->names);
  if (m->name_pool) DT_FREE(m->name_pool);
  if (m->params) DT_FREE(m->params);
  if (m->grads) DT_FREE(m->grads);
  m->names = NULL; m->name_pool = NULL; m->params = m->grads = NULL; m->nparams = 0; m->pool_bytes = 0;
}

enum { DT__G_ZERO, DT__G_SETTLE, DT__G_SGD }; /* what dt__grads_walk does */
static dt_status dt__grads_walk(dt_module *m, int what, double lr);

/* Rebuilds m's parameter table: names as PyTorch's state_dict ("0.weight"), as long as they are.
   While the count and the names' bytes stay, the table stays where it is (a name handed out
   by dt_module_param stays valid). The table hands out the grads: pending zeros (gzero) are
   written first, and the layers are marked gshared. */
static dt_status dt__params_build(const char *op, dt_module *m) {
  dt_status s;
  int count = 0;
  size_t bytes = 0;
  char prefix[DT__NAME_MAX];
  dt_module probe = *m;
  probe.names = NULL;
  dt__params_walk(&probe, m, prefix, 0, &count, &bytes);
  if (count > 0 && (s = dt__module_sync(m)) != DT_OK) return s;
  if (count > 0 && (s = dt__grads_walk(m, DT__G_SETTLE, 0.0)) != DT_OK) return s; /* the table hands out grads */
  if (count == m->nparams && bytes == m->pool_bytes && m->names) {
    count = 0; bytes = 0;
    dt__params_walk(m, m, prefix, 0, &count, &bytes);
    return DT_OK;
  }
  dt__params_free(m);
  if (count == 0) return DT_OK;
  m->names = (char **)DT_MALLOC(sizeof(char *) * (size_t)count);
  m->name_pool = (char *)DT_MALLOC(bytes);
  m->params = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)count);
  m->grads = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)count);
  if (!m->names || !m->name_pool || !m->params || !m->grads) {
    dt__params_free(m);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  m->nparams = count; m->pool_bytes = bytes;
  count = 0; bytes = 0;
  dt__params_walk(m, m, prefix, 0, &count, &bytes);
  return DT_OK;
}

DTDEF int dt_module_num_params(const dt_module *m) {
  int count = 0;
  size_t bytes = 0;
  char prefix[DT__NAME_MAX];
  dt_module probe;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_num_params: m is NULL"); return -1; }
  probe = *m; probe.names = NULL;
  dt__params_walk(&probe, (dt_module *)m, prefix, 0, &count, &bytes);
  return count;
}

DTDEF dt_tensor *dt_module_param(dt_module *m, int i, const char **name) {
  const char *op = "dt_module_param";
  if (name) *name = NULL;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (dt__params_build(op, m) != DT_OK) return NULL;
  if (i < 0 || i >= m->nparams) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index %d out of range for %d parameters", op, i, m->nparams); return NULL; }
  if (name) *name = m->names[i];
  if (!m->params[i]) dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not initialised yet (a lazy layer: run a forward first)", op, m->names[i]);
  return m->params[i];
}

DTDEF dt_tensor *dt_module_grad(dt_module *m, int i) {
  const char *op = "dt_module_grad";
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (dt__params_build(op, m) != DT_OK) return NULL;
  if (i < 0 || i >= m->nparams) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index %d out of range for %d parameters", op, i, m->nparams); return NULL; }
  if (!m->grads[i]) dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not initialised yet (a lazy layer: run a forward first)", op, m->names[i]);
  return m->grads[i];
}

DTDEF dt_tensor *dt_linear_weight(dt_module *m) {
  if (!m || m->kind != DT__M_LINEAR) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_linear_weight: m is not a linear layer"); return NULL; }
  if (!m->weight) dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_linear_weight: a lazy layer has no weight before its first forward");
  return m->weight;
}
DTDEF dt_tensor *dt_linear_bias(dt_module *m) {
  if (!m || m->kind != DT__M_LINEAR) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_linear_bias: m is not a linear layer"); return NULL; }
  if (!m->bias) dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_linear_bias: a lazy layer has no bias before its first forward");
  return m->bias;
}

/* 1 when m is or holds a module made by dt_module_new. */
static int dt__module_has_user(const dt_module *m) {
  int i;
  if (m->kind == DT__M_USER) return 1;
  for (i = 0; i < m->n; i++) if (dt__module_has_user(m->layers[i])) return 1;
  return 0;
}

/* 1 when m is or holds a linear layer (lazy or not). */
static int dt__module_has_linear(const dt_module *m) {
  int i;
  if (m->kind == DT__M_LINEAR || m->np) return 1;
  for (i = 0; i < m->n; i++) if (dt__module_has_linear(m->layers[i])) return 1;
  return 0;
}

/* ---- layers a user writes: an nn.Module subclass (DESIGN.md "Autograd") ---- */

DTDEF dt_module *dt_module_new(const char *name, dt_forward_fn forward, void *user, void (*free_user)(void *user)) {
  const char *op = "dt_module_new";
  dt_module *m;
  if (!forward) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: forward is NULL", op); return NULL; }
  if (!(m = dt__module_new(op, DT__M_USER))) return NULL;
  /* the class's name, which print(net) shows (parameter names come from the holders); cut to
     DT_MODULE_NAME_MAX characters */
  snprintf(m->cls, sizeof m->cls, "%s", name ? name : "Module");
  m->fwd = forward; m->user = user; m->free_user = free_user; m->height = 1;
  return m;
}

/* A parameter's or child's name: 1..DT_MODULE_NAME_MAX characters, no '.', not taken in m. */
static dt_status dt__module_name_check(const char *op, const char *what, dt_module *m, const char *name) {
  size_t len;
  int i;
  if (!name) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: name is NULL", op);
  len = strlen(name);
  if (len == 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the %s's name is empty", op, what);
  if (len > DT_MODULE_NAME_MAX)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the %s's name \"%.40s...\" has %zu characters, at most %d", op, what, name, len, DT_MODULE_NAME_MAX);
  if (strchr(name, '.'))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the %s's name \"%s\" contains a '.' (PyTorch: attribute name can't contain \".\")", op, what, name);
  for (i = 0; i < m->np; i++)
    if (strcmp(m->pnames[i], name) == 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m already has a parameter named \"%s\"", op, name);
  for (i = 0; m->cnames && i < m->n; i++)
    if (strcmp(m->cnames[i], name) == 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m already has a child named \"%s\"", op, name);
  for (i = 0; i < m->nb; i++)
    if (strcmp(m->bnames[i], name) == 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m already has a buffer named \"%s\"", op, name);
  return DT_OK;
}

static char *dt__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = (char *)DT_MALLOC(n);
  if (c) memcpy(c, s, n);
  return c;
}

DTDEF dt_status dt_module_add_param(dt_module *m, const char *name, dt_tensor *t) {
  const char *op = "dt_module_add_param";
  dt_module *root;
  dt_tensor *g = NULL;
  char *nm, a[48], b[48];
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (m->kind != DT__M_USER) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is not a module made by dt_module_new", op);
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if ((s = dt__module_name_check(op, "parameter", m, name)) != DT_OK) return s;
  if (!dt__is_float(t->dtype))
    return dt__fail(DT_ERR_DTYPE, "%s: %s is %s; a parameter is float32, float64, float16 or bfloat16", op, name, dt_dtype_name(t->dtype));
  if (t->node)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not a leaf (the result of %s): a parameter is a leaf (use dt_detach)", op, name, t->node->name);
  root = dt__module_root(m, NULL);
  if (dt__module_has_params(root)) { /* the whole network on one device in one dtype */
    if (!dt_device_equal(t->st->device, root->device))
      return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: %s is on %s but the module is on %s", op, name,
                      dt_device_str(t->st->device, a, sizeof a), dt_device_str(root->device, b, sizeof b));
    if (t->dtype != root->dtype)
      return dt__fail(DT_ERR_DTYPE, "%s: %s is %s but the module is %s", op, name, dt_dtype_name(t->dtype), dt_dtype_name(root->dtype));
  }
  { /* its gradient tensor: the one it has, else zeros */
    if (t->grad && t->grad->dtype == t->dtype && t->grad->numel == t->numel) g = dt_retain(t->grad);
    else if (!(g = dt__filled(op, t->shape, t->dtype, 0.0, t->st->device))) return dt_last_status();
  }
  nm = dt__strdup(name);
  if (m->np == m->pcap) {
    int cap = m->pcap ? m->pcap * 2 : 4;
    char **pn = nm && m->pcap < INT_MAX / 2 ? (char **)DT_MALLOC(sizeof(char *) * (size_t)cap) : NULL;
    dt_tensor **pt = pn ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)cap) : NULL;
    dt_tensor **pg = pt ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)cap) : NULL;
    if (!pg) {
      if (pn) DT_FREE(pn);
      if (pt) DT_FREE(pt);
      if (nm) DT_FREE(nm);
      dt_release(g);
      return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    }
    if (m->np) {
      memcpy(pn, m->pnames, sizeof(char *) * (size_t)m->np);
      memcpy(pt, m->pts, sizeof(dt_tensor *) * (size_t)m->np);
      memcpy(pg, m->pgs, sizeof(dt_tensor *) * (size_t)m->np);
      DT_FREE(m->pnames); DT_FREE(m->pts); DT_FREE(m->pgs);
    }
    m->pnames = pn; m->pts = pt; m->pgs = pg; m->pcap = cap;
  } else if (!nm) {
    dt_release(g);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  if (!dt__module_has_params(root)) dt__module_set_place(root, t->st->device, t->dtype);
  m->pnames[m->np] = nm; m->pts[m->np] = dt_retain(t); m->pgs[m->np] = g;
  m->np++;
  t->requires_grad = 1;
  if (t->grad != g) { dt_release(t->grad); t->grad = dt_retain(g); }
  return DT_OK;
}

DTDEF dt_status dt_module_add_child(dt_module *m, const char *name, dt_module *child) {
  const char *op = "dt_module_add_child";
  dt_module *up;
  char *nm;
  dt_status s;
  /* not freed on these two failures: its owner, or m itself, still holds it */
  if (child && child->parent) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: child already belongs to a module (a module has one owner)", op);
  if (child && m)
    for (up = m; up; up = up->parent)
      if (up == child) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: cannot add a module to itself or to one of its own children", op);
  if (!m) { dt_module_free(child); return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); }
  if (!child) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: child is NULL", op);
  if (m->kind != DT__M_USER) { dt_module_free(child); return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is not a module made by dt_module_new", op); }
  if ((s = dt__module_name_check(op, "child", m, name)) != DT_OK) { dt_module_free(child); return s; }
  if (!(nm = dt__strdup(name))) { dt_module_free(child); return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); }
  return dt__module_attach(op, m, child, nm);
}

DTDEF dt_tensor *dt_module_get_param(dt_module *m, const char *name) {
  const char *op = "dt_module_get_param", *dot;
  int i;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (!name) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: name is NULL", op); return NULL; }
  if ((dot = strchr(name, '.')) != NULL) { /* "block.weight", "features.0.weight": through the children */
    for (i = 0; i < m->n; i++) {
      char idx[16];
      const char *cn = idx;
      if (m->cnames) cn = m->cnames[i];
      else snprintf(idx, sizeof idx, "%d", i); /* a sequential's layers: by index */
      if (strlen(cn) == (size_t)(dot - name) && memcmp(cn, name, (size_t)(dot - name)) == 0)
        return dt_module_get_param(m->layers[i], dot + 1);
    }
  } else {
    for (i = 0; i < m->np; i++) if (strcmp(m->pnames[i], name) == 0) return m->pts[i];
    if (m->kind == DT__M_LINEAR && m->weight && strcmp(name, "weight") == 0) return m->weight;
    if (m->kind == DT__M_LINEAR && m->weight && strcmp(name, "bias") == 0) return m->bias;
  }
  dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m has no parameter named \"%.200s\"", op, name);
  return NULL;
}

DTDEF dt_module *dt_module_get_child(dt_module *m, const char *name) {
  const char *op = "dt_module_get_child";
  int i;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (!name) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: name is NULL", op); return NULL; }
  for (i = 0; m->cnames && i < m->n; i++) if (strcmp(m->cnames[i], name) == 0) return m->layers[i];
  dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m has no child named \"%.200s\"", op, name);
  return NULL;
}

DTDEF dt_status dt_module_train(dt_module *m, int training) {
  int i;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_train: m is NULL");
  m->training = training != 0;
  for (i = 0; i < m->n; i++) dt_module_train(m->layers[i], training); /* at most DT_MODULE_MAX_DEPTH deep */
  return DT_OK;
}

DTDEF int dt_module_is_training(const dt_module *m) {
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_is_training: m is NULL"); return 0; }
  return m->training;
}

/* ---- buffers (register_buffer) and the state_dict they join ---- */

DTDEF dt_status dt_module_add_buffer(dt_module *m, const char *name, dt_tensor *t) {
  const char *op = "dt_module_add_buffer";
  dt_module *root;
  char *nm, a[48], b[48];
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (m->kind != DT__M_USER) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is not a module made by dt_module_new", op);
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if ((s = dt__module_name_check(op, "buffer", m, name)) != DT_OK) return s;
  if (t->requires_grad || t->node)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s requires grad; a buffer is state without a gradient (use dt_detach)", op, name);
  root = dt__module_root(m, NULL);
  if (dt__module_has_params(root) && !dt_device_equal(t->st->device, root->device))
    return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: %s is on %s but the module is on %s", op, name,
                    dt_device_str(t->st->device, a, sizeof a), dt_device_str(root->device, b, sizeof b));
  if (dt__module_has_params(root) && dt__is_float(t->dtype) && t->dtype != root->dtype)
    return dt__fail(DT_ERR_DTYPE, "%s: %s is %s but the module is %s", op, name, dt_dtype_name(t->dtype), dt_dtype_name(root->dtype));
  if (!(nm = dt__strdup(name))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  if (m->nb == m->bcap) {
    int cap = m->bcap ? m->bcap * 2 : 4;
    char **bn = m->bcap < INT_MAX / 2 ? (char **)DT_MALLOC(sizeof(char *) * (size_t)cap) : NULL;
    dt_tensor **bt = bn ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)cap) : NULL;
    if (!bt) {
      if (bn) DT_FREE(bn);
      DT_FREE(nm);
      return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    }
    if (m->nb) {
      memcpy(bn, m->bnames, sizeof(char *) * (size_t)m->nb);
      memcpy(bt, m->bts, sizeof(dt_tensor *) * (size_t)m->nb);
      DT_FREE(m->bnames); DT_FREE(m->bts);
    }
    m->bnames = bn; m->bts = bt; m->bcap = cap;
  }
  m->bnames[m->nb] = nm; m->bts[m->nb] = dt_retain(t);
  m->nb++;
  return DT_OK;
}

/* m's buffer of that name ("child.name" through the children), or NULL */
static dt_tensor *dt__module_buffer(dt_module *m, const char *name) {
  const char *dot = strchr(name, '.');
  int i;
  if (dot) { /* "bn.running_mean", "0.running_mean": through the children */
    for (i = 0; i < m->n; i++) {
      char idx[16];
      const char *cn = idx;
      if (m->cnames) cn = m->cnames[i];
      else snprintf(idx, sizeof idx, "%d", i);
      if (strlen(cn) == (size_t)(dot - name) && memcmp(cn, name, (size_t)(dot - name)) == 0)
        return dt__module_buffer(m->layers[i], dot + 1);
    }
    return NULL;
  }
  for (i = 0; i < m->nb; i++) if (strcmp(m->bnames[i], name) == 0) return m->bts[i];
  return NULL;
}

DTDEF dt_tensor *dt_module_get_buffer(dt_module *m, const char *name) {
  const char *op = "dt_module_get_buffer";
  dt_tensor *t;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (!name) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: name is NULL", op); return NULL; }
  if (!(t = dt__module_buffer(m, name))) dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m has no buffer named \"%.200s\"", op, name);
  return t;
}

static int dt__module_has_buffers(const dt_module *m) {
  int i;
  if (m->nb) return 1;
  for (i = 0; i < m->n; i++) if (dt__module_has_buffers(m->layers[i])) return 1;
  return 0;
}

/* The state_dict's walk: as dt__params_walk, with each module's buffers after its own
   parameters and before its children's (PyTorch's order). Fills view's names and params when
   view->names is set. */
static void dt__state_walk(dt_module *view, dt_module *m, char *prefix, size_t plen, int *count, size_t *bytes) {
  int i, k, np = m->kind == DT__M_LINEAR ? 2 : m->np;
  for (k = 0; k < np + m->nb; k++) {
    const char *nm = m->kind == DT__M_LINEAR ? (k == 0 ? "weight" : k == 1 ? "bias" : m->bnames[k - 2])
                                             : k < np ? m->pnames[k] : m->bnames[k - np];
    size_t len = plen + strlen(nm);
    if (view->names && *count < view->nparams) {
      char *name = view->name_pool + *bytes;
      memcpy(name, prefix, plen);
      memcpy(name + plen, nm, len - plen + 1);
      view->names[*count] = name;
      view->params[*count] = m->kind == DT__M_LINEAR ? (k == 0 ? m->weight : k == 1 ? m->bias : m->bts[k - 2])
                                                     : k < np ? m->pts[k] : m->bts[k - np];
    }
    (*count)++;
    *bytes += len + 1;
  }
  for (i = 0; DT__M_HOLDS(m) && i < m->n; i++) {
    int w = m->cnames ? snprintf(prefix + plen, DT__NAME_MAX - plen, "%s.", m->cnames[i])
                      : snprintf(prefix + plen, DT__NAME_MAX - plen, "%d.", i);
    dt__state_walk(view, m->layers[i], prefix, plen + (size_t)w, count, bytes);
  }
}

/* What dt_module_save and dt_module_load read of m (nparams, names, params) with its buffers
   in the state_dict: m itself when it holds none, else *view, a copy of m whose table (made
   here) names its parameters and buffers; dt__state_view_free lets go of it. m's parameter
   table is built (dt__params_build) first. */
static dt_module *dt__state_view(const char *op, dt_module *m, dt_module *view) {
  char prefix[DT__NAME_MAX];
  int count = 0;
  size_t bytes = 0;
  if (!dt__module_has_buffers(m)) return m;
  *view = *m;
  view->names = NULL;
  dt__state_walk(view, m, prefix, 0, &count, &bytes);
  view->names = (char **)DT_MALLOC(sizeof(char *) * (size_t)count);
  view->name_pool = view->names ? (char *)DT_MALLOC(bytes) : NULL;
  view->params = view->name_pool ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)count) : NULL;
  if (!view->params) {
    if (view->name_pool) DT_FREE(view->name_pool);
    if (view->names) DT_FREE(view->names);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    return NULL;
  }
  view->grads = NULL; view->nparams = count; view->pool_bytes = bytes;
  count = 0; bytes = 0;
  dt__state_walk(view, m, prefix, 0, &count, &bytes);
  return view;
}
static void dt__state_view_free(dt_module *m, dt_module *v) {
  if (!v || v == m) return;
  DT_FREE(v->names); DT_FREE(v->name_pool); DT_FREE(v->params);
}
