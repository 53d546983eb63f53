/* The first parameter's name, for messages, a lazy layer's too ("the module" when it has none). */
static const char *dt__first_param(dt_module *m, char *buf, size_t n) {
  int i;
  size_t at = 0;
  for (;;) {
    if (m->kind == DT__M_LINEAR) { snprintf(buf + at, n - at, "weight"); return buf; }
    if (m->kind == DT__M_USER && m->np) { snprintf(buf + at, n - at, "%s", m->pnames[0]); return buf; }
    if (m->kind != DT__M_SEQ) break;
    for (i = 0; i < m->n && !dt__module_has_linear(m->layers[i]); i++) {}
    if (i == m->n) break;
    at += (size_t)snprintf(buf + at, n - at, "%d.", i);
    if (at >= n) return buf;
    m = m->layers[i];
  }
  snprintf(buf, n, "the module");
  return buf;
}

/* Where a forward is: the network's input, and the path of the layer running ("2.", "1.0."). */
typedef struct dt__fwd { const dt_tensor *input; char path[DT__NAME_MAX]; size_t plen; } dt__fwd;

/* A linear layer's input that does not fit: names the layer and the network's input,
   "layer 2 (linear, 3 -> 1) takes 3 features, but its input has shape (4, 2) (the network's input has shape (4, 5))". */
static void dt__forward_misfit(const char *op, const dt_module *m, const dt_tensor *x, const dt__fwd *fw) {
  char want[64], in[24], xs[200], ns[200], who[DT__NAME_MAX + 64];
  if (m->in) snprintf(in, sizeof in, "%lld", (long long)m->in); else snprintf(in, sizeof in, "lazy");
  if (x->shape.ndim != 2) snprintf(want, sizeof want, "input of shape (n, %s)", m->in ? in : "in_features");
  else snprintf(want, sizeof want, "%lld features", (long long)m->in);
  if (fw->plen) snprintf(who, sizeof who, "layer %.*s (linear, %s -> %lld)", (int)fw->plen - 1, fw->path, in, (long long)m->out);
  else snprintf(who, sizeof who, "the layer (linear, %s -> %lld)", in, (long long)m->out);
  dt__shape_str(&x->shape, xs, sizeof xs);
  if (x == fw->input)
    dt__fail(DT_ERR_SHAPE, "%s: %s takes %s, but %s has shape %s", op, who, want, fw->plen ? "the network's input" : "the input", xs);
  else
    dt__fail(DT_ERR_SHAPE, "%s: %s takes %s, but its input has shape %s (the network's input has shape %s)", op, who, want, xs,
             dt__shape_str(&fw->input->shape, ns, sizeof ns));
}

/* A lazy layer's first input with 0 features: refused, the layer left lazy. Its weight would be
   (out, 0) and its bias drawn within +-1/sqrt(0), which makes NaN; PyTorch's LazyLinear leaves
   its parameters uninitialised memory then (reset_parameters skips in_features 0), no number to
   follow, and a lazy layer here cannot be made again with in_features 0 (0 means lazy). */
static void dt__forward_lazy_zero(const char *op, const dt_module *m, const dt_tensor *x, const dt__fwd *fw) {
  char xs[200], ns[200], who[DT__NAME_MAX + 64];
  if (fw->plen) snprintf(who, sizeof who, "layer %.*s (linear, lazy -> %lld)", (int)fw->plen - 1, fw->path, (long long)m->out);
  else snprintf(who, sizeof who, "the layer (linear, lazy -> %lld)", (long long)m->out);
  dt__shape_str(&x->shape, xs, sizeof xs);
  if (x == fw->input)
    dt__fail(DT_ERR_SHAPE, "%s: %s takes its in_features from its first input, but %s has shape %s: 0 features, nothing to weigh "
             "(the layer stays lazy)", op, who, fw->plen ? "the network's input" : "the input", xs);
  else
    dt__fail(DT_ERR_SHAPE, "%s: %s takes its in_features from its first input, but its input has shape %s (the network's input has "
             "shape %s): 0 features, nothing to weigh (the layer stays lazy)", op, who, xs, dt__shape_str(&fw->input->shape, ns, sizeof ns));
}

/* A linear layer under autocast: y = x W^T + b in the autocast dtype t, of x, W and b cast to t
   through autograd's recorded ops (the layer's fused backward takes its own dtype only, so the
   layer keeps no input: dt_backward refuses, dt_autograd_backward goes through). x in t already,
   autocast off since (a module on a lower precision input): W and b cast to x's dtype. A float16
   or bfloat16 layer (dt_module_to_dtype) runs here too, with nothing cast. */
static dt_tensor *dt__forward_linear_autocast(dt_module *m, const dt_tensor *x) {
  dt_dtype t = dt__autocast_low(x, m->weight, m->bias);
  int failed = 0;
  dt_tensor *cx, *cw, *cb, *wt = NULL, *p = NULL, *y = NULL;
  if (t == DT_F32) t = x->dtype;
  cx = dt__autocast_cast(x, t, &failed); cw = dt__autocast_cast(m->weight, t, &failed); cb = dt__autocast_cast(m->bias, t, &failed);
  if (!failed && (wt = dt_transpose(cw)) != NULL && (p = dt_matmul(cx, wt)) != NULL) y = dt_add(p, cb);
  dt_release(cx); dt_release(cw); dt_release(cb); dt_release(wt); dt_release(p);
  dt_release(m->input); m->input = NULL; m->out_shape.ndim = -1;
  return y;
}

static dt_tensor *dt__forward(const char *op, dt_module *m, const dt_tensor *x, dt__fwd *fw) {
  dt_tensor *y, *cur;
  int i;
  switch (m->kind) {
    case DT__M_LINEAR: {
      dt__bcast g;
      dt_status s;
      if (x->shape.ndim != 2) { dt__forward_misfit(op, m, x, fw); return NULL; }
      if (!m->weight && x->shape.dims[1] == 0) { dt__forward_lazy_zero(op, m, x, fw); return NULL; }
      if (!m->weight && dt__linear_init(op, m, x->shape.dims[1]) != DT_OK) return NULL;
      if (x->shape.dims[1] != m->in) { dt__forward_misfit(op, m, x, fw); return NULL; }
      /* a half layer too: the fused kernels take F32 and F64 */
      if (dt__autocast_low(x, m->weight, m->bias) != DT_F32 || x->dtype != m->dtype || dt__is_half(m->dtype))
        return dt__forward_linear_autocast(m, x);
      /* y: (n, out) = bias broadcast over rows, then += x W^T */
      if (!(y = dt__new(op, dt_shape2(x->shape.dims[0], m->out), m->dtype, m->device))) return NULL;
      if (y->numel > 0) {
        memset(&g, 0, sizeof g);
        g.ndim = 2; g.numel = y->numel; g.dims[0] = x->shape.dims[0]; g.dims[1] = m->out; g.astride[1] = 1;
        if (m->device.type == DT_CPU) {
          /* the CPU gemm starts C from the bias itself; in training it splits C by columns, W's
             rows, as the optimizer's step splits them; without grad (evaluation) the plain
             split: A = x is not packed by every thread (see dt__gemm_opts) */
          dt__gemm_opts o;
          memset(&o, 0, sizeof o);
          o.bias = m->bias->st->ptr;
          o.by_cols = !dt__no_grad;
          s = dt__cpu_gemm_opt_rec(m->dtype, 0, 1, x->shape.dims[0], m->out, m->in, 1.0, x->st->ptr, m->weight->st->ptr,
                               1.0, y->st->ptr, &o);
        } else { /* a copy of the bias, then the product with beta 1 */
          s = dt__be(m->device)->binary(m->device.index, DT__B_COPY_A, m->dtype, &g, m->bias->st->ptr, m->bias->st->ptr, y->st->ptr);
          if (s == DT_OK)
            s = dt__be(m->device)->gemm(m->device.index, m->dtype, 0, 1, 1, x->shape.dims[0], m->out, m->in, 1.0,
                                        x->st->ptr, 0, m->weight->st->ptr, 0, 1.0, y->st->ptr, 0);
        }
        if (!(y = dt__done(op, y, s))) return NULL;
      }
      if (!dt__no_grad) { /* what backward needs; with grad disabled nothing (dt_forward dropped the last) */
        dt_release(m->input);
        m->input = dt_retain((dt_tensor *)x);
        m->out_shape = y->shape;
        if (x->requires_grad || m->weight->requires_grad) { /* autograd's node: its backward is the fused one below */
          const dt_tensor *in[3];
          in[0] = x; in[1] = m->weight; in[2] = m->bias;
          if (!(y = dt__ag_record(y, DT__AG_LINEAR, "dt_linear", 3, in, NULL))) { dt__module_drop_saved(m); return NULL; }
        }
      }
      return y;
    }
    case DT__M_RELU:
      if (!(y = dt__unary(op, DT__U_RELU, x, 0, 0))) return NULL;
      if (!(y = DT__AG1(y, DT__AG_RELU, "dt_relu", x))) return NULL;
      if (!dt__no_grad) {
        dt_release(m->input);
        m->input = dt_retain((dt_tensor *)x);
        m->out_shape = y->shape;
      }
      return y;
    case DT__M_USER: { /* the user's forward: autograd records what it does */
      unsigned errs = dt__err_count;
      if (!(y = m->fwd(m, x, m->user))) {
        /* a forward that fails without a library error behind it (an earlier one may still be the last) */
        if (dt__err_count == errs) dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the module's forward returned NULL", op);
        return NULL;
      }
      if (!dt__no_grad) m->out_shape = y->shape;
      return y;
    }
    case DT__M_SEQ: {
      size_t plen = fw->plen;
      cur = dt_retain((dt_tensor *)x);
      for (i = 0; i < m->n && cur; i++) {
        fw->plen = plen + (size_t)snprintf(fw->path + plen, sizeof fw->path - plen, "%d.", i);
        y = dt__forward(op, m->layers[i], cur, fw);
        dt_release(cur);
        cur = y;
      }
      fw->plen = plen;
      if (cur && !dt__no_grad) m->out_shape = cur->shape;
      else if (!cur) dt__module_drop_saved(m); /* the layers before the failing one saved this forward: no backward through a mix */
      return cur;
    }
  }
  return NULL;
}

/* 1 when the first module x meets (through sequentials) is of dt_module_new's kind: its forward
   may take integer x (an embedding's indices) and checks what it takes itself. */
static int dt__module_first_is_user(const dt_module *m) {
  while (m->kind == DT__M_SEQ && m->n > 0) m = m->layers[0];
  return m->kind == DT__M_USER;
}

DTDEF dt_tensor *dt_forward(dt_module *m, const dt_tensor *x) {
  const char *op = "dt_forward";
  char a[48], b[48], pn[DT__NAME_MAX];
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (dt__check_tensor(op, "x", x) != DT_OK) return NULL;
  if (!dt_device_equal(x->st->device, m->device)) {
    dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: x is on %s but %s is on %s (move one with dt_to or dt_module_to)", op,
             dt_device_str(x->st->device, a, sizeof a), dt__first_param(m, pn, sizeof pn), dt_device_str(m->device, b, sizeof b));
    return NULL;
  }
  if (x->dtype != m->dtype && !(!dt__is_float(x->dtype) && dt__module_first_is_user(m)) &&
      !(dt__autocast[m->device.type == DT_CUDA] != DT_F32 && dt__is_float(x->dtype))) {
    dt__fail(DT_ERR_DTYPE, "%s: x is %s but the module is %s (%s)", op, dt_dtype_name(x->dtype), dt_dtype_name(m->dtype),
             dt__is_float(x->dtype) ? "convert x with dt_cast or the module with dt_module_to_dtype" : "convert x with dt_cast");
    return NULL;
  }
  {
    dt__fwd fw;
    fw.input = x; fw.plen = 0; fw.path[0] = 0;
    if (dt__no_grad) { /* inference: the last forward's activations go now, and this one keeps none */
      dt__module_drop_saved(m);
      m->nograd_fwd = 1;
    } else {
      m->nograd_fwd = 0;
    }
    return dt__forward(op, m, x, &fw);
  }
}

/* One layer's check before going back: a forward to go back through, and a gradient shaped
   like its output (each layer goes back only through its own last forward: one run on its own
   since breaks the chain). */
static dt_status dt__backward_check(const char *op, const dt_module *m, const dt_shape *gs) {
  if (m->kind == DT__M_USER) return DT_OK; /* refused by dt__backward itself */
  if (m->out_shape.ndim < 0 || (m->kind != DT__M_SEQ && !m->input) || gs->ndim != m->out_shape.ndim ||
      memcmp(gs->dims, m->out_shape.dims, sizeof(int64_t) * (size_t)gs->ndim) != 0) {
    char a[200], b[200];
    return dt__fail(DT_ERR_SHAPE, "%s: a layer's gradient has shape %s but its last forward gave %s (was a layer run on its own since?)",
                    op, dt__shape_str(gs, a, sizeof a), dt__shape_str(&m->out_shape, b, sizeof b));
  }
  return DT_OK;
}

/* The shape of the input of m's last forward (m checked). */
static const dt_shape *dt__forward_in_shape(const dt_module *m) {
  if (m->kind == DT__M_USER) return &m->out_shape;
  if (m->kind != DT__M_SEQ) return &m->input->shape;
  return m->n ? dt__forward_in_shape(m->layers[0]) : &m->out_shape;
}

/* The checks of dt__backward alone, for layers that have nothing to compute. */
static dt_status dt__backward_check_all(const char *op, const dt_module *m, const dt_shape *gs) {
  dt_status s;
  int i;
  if ((s = dt__backward_check(op, m, gs)) != DT_OK) return s;
  if (m->kind == DT__M_SEQ)
    for (i = m->n - 1; i >= 0; i--) {
      if ((s = dt__backward_check_all(op, m->layers[i], gs)) != DT_OK) return s;
      gs = dt__forward_in_shape(m->layers[i]);
    }
  return DT_OK;
}

/* The index of the first layer of a sequential that holds parameters; m->n when none does. */
static int dt__first_param_layer(const dt_module *m) {
  int i;
  for (i = 0; i < m->n; i++) {
    const dt_module *l = m->layers[i];
    if (l->kind == DT__M_LINEAR || l->kind == DT__M_USER || (l->kind == DT__M_SEQ && dt__first_param_layer(l) < l->n)) break;
  }
  return i;
}

/* Goes back through m's last forward with g, the gradient wrt its output: adds to the
   parameters' gradients and, when gx is not NULL, sets *gx to the gradient wrt its input.
   With gx NULL no input gradient is computed for m, nor for any layer in front of the
   first one with parameters (PyTorch's input that does not require grad). */
/* assign 1 (the trainer's step): each parameter's gradient is written, not added to, which is
   what dt_zero_grad and then dt_backward_params give (a module has one owner, so each gradient
   gets one term), without a pass to zero them first. */
static dt_status dt__backward(const char *op, dt_module *m, const dt_tensor *g, dt_tensor **gx, int assign) {
  dt_tensor *cur, *nx;
  dt_status s;
  int i, k;
  if ((s = dt__backward_check(op, m, &g->shape)) != DT_OK) return s;
  switch (m->kind) {
    case DT__M_USER: /* refused by dt__backward_args first */
      return dt__fail(DT_ERR_UNSUPPORTED, "%s: %s is a module of dt_module_new's kind, which goes back with dt_autograd_backward "
                      "on its loss (its forward is recorded), not through the layers' own backward", op, m->cls);
    case DT__M_LINEAR: {
      const dt__backend *be = dt__be(m->device);
      int dev = m->device.index;
      int64_t n = m->input->shape.dims[0];
      dt_tensor *gb, *x = NULL;
      if ((s = dt__linear_sync(m)) != DT_OK) return s; /* what an autograd backward stored, first */
      s = DT_OK;
      if (m->gzero) assign = 1; /* the grads are zeros not yet written (dt_zero_grad): write, not add */
      /* gW (out, in) += g^T x; gb (out,) += sum over rows of g; gx (n, in) = g W (with assign,
         gW = and gb = ) */
      if (gx && !(x = dt__new(op, m->input->shape, m->dtype, m->device))) return dt_last_status();
      /* on the CPU the gemm sums g's columns as it goes (dt__gemm_opts' asum), where it can */
      if (m->device.type == DT_CPU && n > 0 && m->out > 0) gb = dt__new(op, m->bias->shape, m->dtype, m->device);
      else gb = dt__reduce(op, DT__R_SUM, g, 1, n, m->out, m->bias->shape);
      if (!gb) { dt_release(x); return dt_last_status(); }
      if (n > 0) {
        const double beta = assign ? 0.0 : 1.0;
        if (m->device.type == DT_CPU && m->out > 0) {
          dt__gemm_opts o;
          memset(&o, 0, sizeof o);
          o.asum = gb->st->ptr;
          s = dt__cpu_gemm_opt_rec(m->dtype, 1, 0, m->out, m->in, n, 1.0, g->st->ptr, m->input->st->ptr, beta,
                               m->gweight->st->ptr, &o);
          /* not summed there: as dt_sum_dim does */
          if (s == DT_OK && !o.asum_done) s = be->reduce(dev, DT__R_SUM, m->dtype, 1, n, m->out, g->st->ptr, gb->st->ptr);
        } else
          s = be->gemm(dev, m->dtype, 1, 0, 1, m->out, m->in, n, 1.0, g->st->ptr, 0, m->input->st->ptr, 0, beta,
                       m->gweight->st->ptr, 0);
      } else if (assign)
        s = be->fill(dev, m->dtype, m->gweight->numel, 0.0, m->gweight->st->ptr);
      if (s == DT_OK && assign)
        s = be->copy(dev, m->gbias->st->ptr, dev, gb->st->ptr, (size_t)m->out * dt_dtype_size(m->dtype));
      else if (s == DT_OK) s = be->axpy(dev, m->dtype, m->out, 1.0, gb->st->ptr, m->gbias->st->ptr);
      if (s == DT_OK && x && x->numel > 0) s = be->gemm(dev, m->dtype, 0, 0, 1, n, m->in, m->out, 1.0, g->st->ptr, 0, m->weight->st->ptr, 0, 0.0, x->st->ptr, 0);
      dt_release(gb);
      if (s == DT_OK && m->gzero) { m->gzero = 0; dt__linear_link(m); } /* written; a failure leaves them zeros, as before the call */
      if (!gx) return s == DT_OK ? DT_OK : dt__backend_fail(op, m->device, s);
      if (!(*gx = dt__done(op, x, s))) return dt_last_status();
      return DT_OK;
    }
    case DT__M_RELU: {
      dt__bcast bc;
      if (!gx) return DT_OK; /* no parameters: nothing to do without the input gradient */
      if (!(nx = dt__new(op, g->shape, m->dtype, m->device))) return dt_last_status();
      if (nx->numel > 0) {
        memset(&bc, 0, sizeof bc);
        bc.ndim = 1; bc.contiguous = 1; bc.numel = nx->numel; bc.dims[0] = nx->numel; bc.astride[0] = 1; bc.bstride[0] = 1;
        if (!(nx = dt__done(op, nx, dt__be(m->device)->binary(m->device.index, DT__B_RELU_GRAD, m->dtype, &bc, g->st->ptr, m->input->st->ptr, nx->st->ptr))))
          return dt_last_status();
      }
      *gx = nx;
      return DT_OK;
    }
    case DT__M_SEQ:
      /* layers after the first one with parameters pass their input gradient on; that one
         needs none (unless asked), and the layers in front of it are only checked */
      k = gx ? 0 : dt__first_param_layer(m);
      cur = dt_retain((dt_tensor *)g);
      for (i = m->n - 1; i >= k; i--) {
        nx = NULL;
        s = dt__backward(op, m->layers[i], cur, gx || i > k ? &nx : NULL, assign);
        dt_release(cur);
        cur = nx;
        if (s != DT_OK) { dt_release(cur); return s; }
      }
      if (gx) { *gx = cur; return DT_OK; }
      dt_release(cur);
      for (i = k - 1; i >= 0; i--) {
        const dt_shape *gs = i + 1 < m->n ? dt__forward_in_shape(m->layers[i + 1]) : &g->shape;
        if ((s = dt__backward_check_all(op, m->layers[i], gs)) != DT_OK) return s;
      }
      return DT_OK;
  }
  return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: not a module", op);
}

/* The first module of dt_module_new's kind in m (m itself, or a layer of its sequentials); NULL
   when there is none. */
static const dt_module *dt__module_find_user(const dt_module *m) {
  const dt_module *u;
  int i;
  if (m->kind == DT__M_USER) return m;
  if (m->kind == DT__M_SEQ)
    for (i = 0; i < m->n; i++) if ((u = dt__module_find_user(m->layers[i])) != NULL) return u;
  return NULL;
}

/* The checks shared by dt_backward and dt_backward_params. */
static dt_status dt__backward_args(const char *op, dt_module *m, const dt_tensor *grad_output) {
  char a[200], b[200];
  const dt_module *u;
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if ((s = dt__check_tensor(op, "grad_output", grad_output)) != DT_OK) return s;
  /* before the forward's checks: a forward would not make such a module go back here */
  if ((u = dt__module_find_user(m)) != NULL)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: %s %s, a module of dt_module_new's kind (as convolutions, pooling, norms, dropout "
                    "and layers you write), which goes back with dt_autograd_backward on its loss (its forward is recorded), "
                    "not through the layers' own backward", op, u == m ? "m is" : "m holds", u->cls);
  if (dt__no_grad)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: grad is disabled on this thread (dt_set_grad_enabled(0), torch.no_grad()); "
                    "enable it with dt_set_grad_enabled(1) and run dt_forward again", op);
  if (m->out_shape.ndim < 0 && m->nograd_fwd)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the last forward ran with grad disabled (dt_set_grad_enabled(0)) and kept "
                    "nothing to go back through; run dt_forward with grad enabled", op);
  if (dt__is_half(m->dtype))
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: m is %s; a float16 or bfloat16 module goes back with dt_autograd_backward on its loss "
                    "(its forward is recorded), not through the layers' own backward", op, dt_dtype_name(m->dtype));
  if (m->out_shape.ndim < 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: no forward to go back through (call dt_forward first)", op);
  if (!dt_device_equal(grad_output->st->device, m->device))
    return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: grad_output is on %s but the module is on %s", op,
                    dt_device_str(grad_output->st->device, a, sizeof a), dt_device_str(m->device, b, sizeof b));
  if (grad_output->dtype != m->dtype)
    return dt__fail(DT_ERR_DTYPE, "%s: grad_output is %s but the module is %s", op, dt_dtype_name(grad_output->dtype), dt_dtype_name(m->dtype));
  if (grad_output->shape.ndim != m->out_shape.ndim ||
      memcmp(grad_output->shape.dims, m->out_shape.dims, sizeof(int64_t) * (size_t)m->out_shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: grad_output has shape %s but the forward gave %s", op,
                    dt__shape_str(&grad_output->shape, a, sizeof a), dt__shape_str(&m->out_shape, b, sizeof b));
  return DT_OK;
}

DTDEF dt_tensor *dt_backward(dt_module *m, const dt_tensor *grad_output) {
  const char *op = "dt_backward";
  dt_tensor *gx = NULL;
  if (dt__backward_args(op, m, grad_output) != DT_OK || dt__backward(op, m, grad_output, &gx, 0) != DT_OK) return NULL;
  return gx;
}

DTDEF dt_status dt_backward_params(dt_module *m, const dt_tensor *grad_output) {
  const char *op = "dt_backward_params";
  dt_status s;
  if ((s = dt__backward_args(op, m, grad_output)) != DT_OK) return s;
  return dt__backward(op, m, grad_output, NULL, 0);
}

/* dt_zero_grad then dt_backward_params in one pass: each gradient written, not added to (the
   trainer's step) */
static dt_status dt__backward_params_assign(dt_module *m, const dt_tensor *grad_output) {
  const char *op = "dt_backward_params";
  dt_status s;
  if ((s = dt__backward_args(op, m, grad_output)) != DT_OK) return s;
  return dt__backward(op, m, grad_output, NULL, 1);
}

/* Every linear layer of m with parameters, in order: DT__G_ZERO zeroes its grads (dt_zero_grad:
   only marks them zero, gzero, where nothing outside the layer holds them), DT__G_SETTLE writes
   the zeros that gzero stands for, DT__G_SGD takes a plain SGD step with lr (after settling: a
   step right after dt_zero_grad must add exactly +0, as it always did). Recursion at most
   DT_MODULE_MAX_DEPTH deep; no limit on the layers. */
static dt_status dt__grads_walk(dt_module *m, int what, double lr) {
  dt_status s;
  int i;
  if (m->kind == DT__M_LINEAR && m->weight) {
    int prev;
    if ((s = dt__linear_sync(m)) != DT_OK) return s;
    if (what == DT__G_ZERO && !m->gshared) { /* the leaves hold no gradient while it is zeros not written */
      m->gzero = 1;
      dt_release(m->weight->grad); m->weight->grad = NULL;
      dt_release(m->bias->grad); m->bias->grad = NULL;
      return DT_OK;
    }
    if (what == DT__G_ZERO || m->gzero) {
      if ((s = dt_fill_(m->gweight, 0)) != DT_OK || (s = dt_fill_(m->gbias, 0)) != DT_OK) return s;
      m->gzero = 0;
      dt__linear_link(m);
    }
    if (what != DT__G_SGD) return DT_OK;
    prev = dt__no_grad; /* the parameters are leaves that require grad: changed with grad mode off, as torch.optim does */
    dt__no_grad = 1;
    if ((s = dt_axpy_(m->weight, -lr, m->gweight)) == DT_OK) s = dt_axpy_(m->bias, -lr, m->gbias);
    dt__no_grad = prev;
    return s;
  }
  for (i = 0; i < m->np; i++) { /* a user-written module's own: zeros written at once */
    int prev;
    if ((s = dt__uparam_sync(m, i)) != DT_OK) return s;
    if (what == DT__G_ZERO && (s = dt_fill_(m->pgs[i], 0)) != DT_OK) return s;
    if (what != DT__G_SGD) continue;
    prev = dt__no_grad;
    dt__no_grad = 1;
    s = dt_axpy_(m->pts[i], -lr, m->pgs[i]);
    dt__no_grad = prev;
    if (s != DT_OK) return s;
  }
  for (i = 0; i < m->n; i++) if ((s = dt__grads_walk(m->layers[i], what, lr)) != DT_OK) return s;
  return DT_OK;
}

DTDEF dt_status dt_zero_grad(dt_module *m) {
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_zero_grad: m is NULL");
  return dt__grads_walk(m, DT__G_ZERO, 0.0);
}

DTDEF dt_status dt_sgd_step(dt_module *m, double lr) {
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sgd_step: m is NULL");
  if (!(lr == lr) || lr - lr != 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sgd_step: lr must be finite, got %g", lr);
  return dt__grads_walk(m, DT__G_SGD, lr);
}

static dt_status dt__loss_check(const char *op, const dt_tensor *p, const dt_tensor *t) {
  return dt__same_float_shape(op, "pred", p, "target", t);
}

DTDEF dt_tensor *dt_mse_loss(const dt_tensor *pred, const dt_tensor *target) {
  const char *op = "dt_mse_loss";
  dt_tensor *d, *sq, *l;
  if (dt__autocast_up(pred, target) && dt__is_float(pred->dtype) && dt__is_float(target->dtype)) { /* autocast: both in F32 */
    int failed = 0;
    dt_tensor *cp = dt__autocast_cast(pred, DT_F32, &failed), *ct = dt__autocast_cast(target, DT_F32, &failed);
    l = failed ? NULL : dt_mse_loss(cp, ct);
    dt_release(cp); dt_release(ct);
    return l;
  }
  if (dt__loss_check(op, pred, target) != DT_OK) return NULL;
  if (!(d = dt__binary(op, DT__B_SUB, pred, target))) return NULL;
  sq = dt__binary(op, DT__B_MUL, d, d);
  dt_release(d);
  if (!sq) return NULL;
  l = dt__reduce(op, DT__R_MEAN, sq, 1, sq->numel, 1, dt_shape0());
  dt_release(sq);
  return DT__AG2(l, DT__AG_MSE_LOSS, op, pred, target);
}

DTDEF dt_tensor *dt_mse_loss_grad(const dt_tensor *pred, const dt_tensor *target) {
  const char *op = "dt_mse_loss_grad";
  dt_tensor *d, *g;
  if (dt__loss_check(op, pred, target) != DT_OK) return NULL;
  if (!(d = dt__binary(op, DT__B_SUB, pred, target))) return NULL;
  g = dt__unary(op, DT__U_AFFINE, d, pred->numel ? 2.0 / (double)pred->numel : 0.0, -0.0);
  dt_release(d);
  return g;
}
