/* The convolution, pooling, flatten and activation modules (DESIGN.md "Layers and the operations
   a PyTorch user reaches for"): modules of the user-written kind (dt_module_new) whose forward
   calls the recorded functions, so that they go back with dt_autograd_backward, and their
   parameters ("weight", "bias") follow every dt_module_* function as a user's do. */

typedef enum dt__layer_kind {
  DT__L_CONV = 0, DT__L_MAX_POOL, DT__L_AVG_POOL, DT__L_ADAPTIVE_AVG_POOL, DT__L_FLATTEN, DT__L_SIGMOID, DT__L_TANH
} dt__layer_kind;

typedef struct dt__layer {
  dt__layer_kind kind;
  int64_t in, out;          /* conv: channels; in 0 until a lazy layer's first forward */
  int kh, kw, sh, sw, ph, pw, groups, bias;
  int64_t oh, ow;           /* adaptive pooling's output size */
} dt__layer;

static void dt__layer_free(void *p) { DT_FREE(p); }

/* PyTorch's Conv2d.reset_parameters: kaiming_uniform_(weight, a = sqrt(5)), which is uniform in
   +-gain sqrt(3 / fan_in) with gain sqrt(2 / (1 + 5)): +-1/sqrt(fan_in); the bias uniform in
   +-1/sqrt(fan_in); fan_in = in / groups * kh * kw. Drawn in float32 from the Philox generator
   (as dt_linear's), then converted to t. */
static dt_status dt__conv_init(const char *op, dt_module *m, dt__layer *L, int64_t in, dt_device d, dt_dtype t) {
  double bound = 1.0 / sqrt((double)(in / L->groups * L->kh * L->kw));
  dt_tensor *w = NULL, *b = NULL, *u;
  dt_status s;
  if ((u = dt__random(op, dt_shape4(L->out, in / L->groups, L->kh, L->kw), d, 0))) {
    w = dt__unary(op, DT__U_AFFINE, u, 2 * bound, -bound); dt_release(u);
  }
  if (w && L->bias && (u = dt__random(op, dt_shape1(L->out), d, 0))) {
    b = dt__unary(op, DT__U_AFFINE, u, 2 * bound, -bound); dt_release(u);
  }
  if (w && (b || !L->bias) && t != DT_F32) {
    dt_tensor *w2 = dt_cast(w, t), *b2 = w2 && b ? dt_cast(b, t) : NULL;
    dt_release(w); dt_release(b); w = w2; b = b2;
  }
  if (!w || (L->bias && !b)) {
    s = dt_last_status();
    dt_release(w); dt_release(b);
    return s == DT_OK ? DT_ERR_OUT_OF_MEMORY : s;
  }
  s = dt_module_add_param(m, "weight", w);
  if (s == DT_OK && b && (s = dt_module_add_param(m, "bias", b)) != DT_OK) { /* no half-made layer */
    dt_release(m->pts[0]); dt_release(m->pgs[0]); DT_FREE(m->pnames[0]);
    w->requires_grad = 0;
    m->np = 0;
  }
  dt_release(w); dt_release(b);
  if (s == DT_OK) L->in = in;
  return s;
}

static dt_tensor *dt__layer_forward(dt_module *m, const dt_tensor *x, void *user) {
  dt__layer *L = (dt__layer *)user;
  switch (L->kind) {
    case DT__L_CONV: {
      const char *op = "dt_conv2d";
      if (L->in == 0) { /* lazy: in_channels from the first input */
        char sb[200];
        if (dt__check_images(op, "x", x) != DT_OK) return NULL;
        if (x->shape.dims[1] % L->groups != 0) {
          dt__fail(DT_ERR_SHAPE, "%s: groups %d does not divide x's %lld channels (x: %s)", op, L->groups,
                   (long long)x->shape.dims[1], dt__shape_str(&x->shape, sb, sizeof sb));
          return NULL;
        }
        if (dt__float_only(op, "x", x) != DT_OK) return NULL;
        if (dt__conv_init(op, m, L, x->shape.dims[1], x->st->device, x->dtype) != DT_OK) return NULL;
      }
      return dt_f_conv2d_ex(x, m->pts[0], L->bias ? m->pts[1] : NULL, L->sh, L->sw, L->ph, L->pw, 1, 1, L->groups);
    }
    case DT__L_MAX_POOL: return dt_f_max_pool2d_ex(x, L->kh, L->kw, L->sh, L->sw, L->ph, L->pw, NULL);
    case DT__L_AVG_POOL: return dt_f_avg_pool2d_ex(x, L->kh, L->kw, L->sh, L->sw, L->ph, L->pw);
    case DT__L_ADAPTIVE_AVG_POOL: return dt_f_adaptive_avg_pool2d(x, L->oh, L->ow);
    case DT__L_FLATTEN: {
      int64_t rest = 1;
      int i;
      if (x->shape.ndim < 1) {
        dt__fail(DT_ERR_SHAPE, "dt_flatten_layer: expected x with a batch dim (at least 1-d), got a 0-d tensor");
        return NULL;
      }
      for (i = 1; i < x->shape.ndim; i++) rest *= x->shape.dims[i];
      return dt_reshape(x, dt_shape2(x->shape.dims[0], rest));
    }
    case DT__L_SIGMOID: return dt_sigmoid(x);
    case DT__L_TANH: return dt_tanh(x);
  }
  return NULL;
}

static dt_module *dt__layer_new(const char *op, const dt__layer *proto) {
  dt__layer *L = (dt__layer *)DT_MALLOC(sizeof(dt__layer));
  dt_module *m;
  if (!L) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); return NULL; }
  *L = *proto;
  if (!(m = dt_module_new(op, dt__layer_forward, L, dt__layer_free))) { DT_FREE(L); return NULL; }
  return m;
}

DTDEF dt_module *dt_conv2d_ex(int64_t in_channels, int64_t out_channels, int kh, int kw, int sh, int sw, int ph, int pw, int groups,
                              int bias) {
  const char *op = "dt_conv2d";
  dt__layer L;
  dt_module *m;
  if (in_channels < 0 || out_channels <= 0 || in_channels > ((int64_t)1 << 40) || out_channels > ((int64_t)1 << 40)) {
    dt__fail(DT_ERR_SHAPE, "%s: expected in_channels >= 0 (0: lazy) and out_channels > 0, got %lld and %lld", op,
             (long long)in_channels, (long long)out_channels);
    return NULL;
  }
  if (kh < 1 || kw < 1) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: kernel_size must be at least 1, got (%d, %d)", op, kh, kw); return NULL; }
  if (sh < 1 || sw < 1) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: stride must be at least 1, got (%d, %d)", op, sh, sw); return NULL; }
  if (ph < 0 || pw < 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: padding must be non-negative, got (%d, %d)", op, ph, pw); return NULL; }
  if (groups < 1 || (in_channels % groups) != 0 || (out_channels % groups) != 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: groups must be at least 1 and divide in_channels %lld and out_channels %lld, got %d", op,
             (long long)in_channels, (long long)out_channels, groups);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__L_CONV; L.out = out_channels; L.kh = kh; L.kw = kw; L.sh = sh; L.sw = sw; L.ph = ph; L.pw = pw;
  L.groups = groups; L.bias = bias != 0;
  if (!(m = dt__layer_new(op, &L))) return NULL;
  if (in_channels > 0 && dt__conv_init(op, m, (dt__layer *)m->user, in_channels, dt_cpu(), DT_F32) != DT_OK) {
    dt_module_free(m);
    return NULL;
  }
  return m;
}
DTDEF dt_module *dt_conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, int stride, int padding) {
  return dt_conv2d_ex(in_channels, out_channels, kernel_size, kernel_size, stride, stride, padding, padding, 1, 1);
}

static dt_module *dt__pool_layer(const char *op, dt__layer_kind kind, int k, int stride, int padding) {
  dt__layer L;
  if (k < 1) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: kernel_size must be at least 1, got %d", op, k); return NULL; }
  if (stride < 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: stride must be at least 1 (0: kernel_size), got %d", op, stride); return NULL; }
  if (padding < 0 || padding > k / 2) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: padding must be between 0 and half the kernel size %d, got %d", op, k, padding);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = kind; L.kh = L.kw = k; L.sh = L.sw = stride ? stride : k; L.ph = L.pw = padding;
  return dt__layer_new(op, &L);
}
DTDEF dt_module *dt_max_pool2d(int kernel_size, int stride, int padding) {
  return dt__pool_layer("dt_max_pool2d", DT__L_MAX_POOL, kernel_size, stride, padding);
}
DTDEF dt_module *dt_avg_pool2d(int kernel_size, int stride, int padding) {
  return dt__pool_layer("dt_avg_pool2d", DT__L_AVG_POOL, kernel_size, stride, padding);
}
DTDEF dt_module *dt_adaptive_avg_pool2d(int out_h, int out_w) {
  dt__layer L;
  if (out_h < 1 || out_w < 1) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_adaptive_avg_pool2d: the output size must be at least 1, got (%d, %d)", out_h, out_w);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__L_ADAPTIVE_AVG_POOL; L.oh = out_h; L.ow = out_w;
  return dt__layer_new("dt_adaptive_avg_pool2d", &L);
}
static dt_module *dt__plain_layer(const char *op, dt__layer_kind kind) {
  dt__layer L;
  memset(&L, 0, sizeof L);
  L.kind = kind;
  return dt__layer_new(op, &L);
}
DTDEF dt_module *dt_flatten_layer(void) { return dt__plain_layer("dt_flatten_layer", DT__L_FLATTEN); }
DTDEF dt_module *dt_sigmoid_layer(void) { return dt__plain_layer("dt_sigmoid_layer", DT__L_SIGMOID); }
DTDEF dt_module *dt_tanh_layer(void) { return dt__plain_layer("dt_tanh_layer", DT__L_TANH); }
