/* Convolution and pooling in autograd and as modules: gradients against central differences in
   float64 on every device, the modules against PyTorch, their initialisation, state_dict, the
   train/eval flag, and the trainer on images. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

#include "values.inc"

/* ---- gradcheck: f(x) against central differences of sum(f(x) * w), w a fixed pattern ---- */

typedef dt_tensor *(*gc_fn)(dt_tensor *const *x);
enum { ANY = 0, POS = 1 }; /* input values in about [-2, 2] (none within 0.02 of 0), or in [0.5, 2.5] */
typedef struct gc_case {
  const char *name;
  gc_fn f;
  int nin;
  dt_shape s[3];
  int kind[3];
} gc_case;

static double gc_value(int64_t i, int salt, int kind) {
  double v = ((double)((i * 37 + salt * 11) % 41) - 20.25) / 10.0;
  return kind == POS ? fabs(v) + 0.5 : v;
}

/* sum(f(x) * w) with grad mode off, from the inputs' host values; NAN on failure */
static double gc_eval(dt_device dev, const gc_case *c, double *const *h, const double *w, int64_t wn) {
  dt_tensor *x[3] = {NULL, NULL, NULL}, *y;
  double *v, sum = 0;
  int i, prev = dt_set_grad_enabled(0);
  int64_t j;
  for (i = 0; i < c->nin; i++) x[i] = f64(h[i], c->s[i], dev);
  y = c->f(x);
  dt_set_grad_enabled(prev);
  for (i = 0; i < c->nin; i++) dt_release(x[i]);
  if (!y) return NAN;
  v = dt_numel(y) == wn ? values(y) : NULL;
  dt_release(y);
  if (!v) return NAN;
  for (j = 0; j < wn; j++) sum += v[j] * w[j];
  free(v);
  return sum;
}

/* 1 when every gradient matches; prints the first mismatches */
static int gradcheck(dt_device dev, const gc_case *c) {
  double *h[3] = {NULL, NULL, NULL}, *w = NULL, *g;
  dt_tensor *x[3] = {NULL, NULL, NULL}, *y = NULL, *wt = NULL;
  int i, ok = 1, bad = 0;
  int64_t j, wn;
  const double eps = 1e-6;
  for (i = 0; i < c->nin; i++) {
    int64_t n = numel_of(c->s[i]);
    h[i] = (double *)malloc((size_t)(n + 1) * sizeof(double));
    for (j = 0; j < n; j++) h[i][j] = gc_value(j, i + 1, c->kind[i]);
    x[i] = f64(h[i], c->s[i], dev);
    if (dt_requires_grad_(x[i], 1) != DT_OK) ok = 0;
  }
  y = ok ? c->f(x) : NULL;
  if (!y || !dt_requires_grad(y) || dt_is_leaf(y)) {
    printf("  %s: the forward failed or recorded nothing: %s\n", c->name, dt_last_error());
    ok = 0;
    goto out;
  }
  wn = dt_numel(y);
  w = (double *)malloc((size_t)(wn + 1) * sizeof(double));
  for (j = 0; j < wn; j++) w[j] = 0.5 + 0.1 * (double)(j % 7);
  wt = f64(w, dt_shape_of(y), dev);
  if (!wt || dt_autograd_backward(y, dt_dtype_of(y) == DT_F64 ? wt : NULL) != DT_OK) {
    printf("  %s: backward failed: %s\n", c->name, dt_last_error());
    ok = 0;
    goto out;
  }
  for (i = 0; i < c->nin; i++) {
    int64_t n = numel_of(c->s[i]);
    dt_tensor *gt = dt_grad(x[i]);
    if (!gt || dt_numel(gt) != n || dt_dtype_of(gt) != DT_F64 || !dt_device_equal(dt_device_of(gt), dev)) {
      printf("  %s: input %d has no gradient of its shape, dtype and device\n", c->name, i);
      ok = 0;
      continue;
    }
    g = values(gt);
    for (j = 0; j < n && g; j++) {
      double keep = h[i][j], lp, lm, num;
      h[i][j] = keep + eps; lp = gc_eval(dev, c, h, w, wn);
      h[i][j] = keep - eps; lm = gc_eval(dev, c, h, w, wn);
      h[i][j] = keep;
      num = (lp - lm) / (2 * eps);
      if (!(fabs(num - g[j]) <= 1e-6 + 1e-5 * fabs(num))) {
        if (bad++ < 4) printf("  %s: d/dx%d[%lld]: autograd %.10g, finite differences %.10g\n", c->name, i, (long long)j, g[j], num);
        ok = 0;
      }
    }
    free(g);
  }
out:
  for (i = 0; i < c->nin; i++) { dt_release(x[i]); free(h[i]); }
  dt_release(y);
  dt_release(wt);
  free(w);
  return ok;
}

/* ---- convolution and pooling through autograd ---- */

static dt_tensor *f_conv(dt_tensor *const *x) { return dt_f_conv2d(x[0], x[1], x[2], 1, 1); }
static dt_tensor *f_conv_nobias(dt_tensor *const *x) { return dt_f_conv2d(x[0], x[1], NULL, 2, 0); }
static dt_tensor *f_conv_ex(dt_tensor *const *x) { return dt_f_conv2d_ex(x[0], x[1], x[2], 2, 1, 1, 0, 2, 1, 2); }
static dt_tensor *f_max_pool(dt_tensor *const *x) { return dt_f_max_pool2d(x[0], 2, 0, 0); }
static dt_tensor *f_max_pool_ex(dt_tensor *const *x) {
  dt_tensor *idx = NULL, *y = dt_f_max_pool2d_ex(x[0], 3, 2, 2, 1, 1, 1, &idx);
  dt_release(idx);
  return y;
}
static dt_tensor *f_avg_pool(dt_tensor *const *x) { return dt_f_avg_pool2d(x[0], 2, 1, 1); }
static dt_tensor *f_avg_pool_ex(dt_tensor *const *x) { return dt_f_avg_pool2d_ex(x[0], 3, 2, 2, 1, 1, 0); }
static dt_tensor *f_adaptive(dt_tensor *const *x) { return dt_f_adaptive_avg_pool2d(x[0], 2, 3); }
/* a small CNN: conv, tanh, max pool, conv, sigmoid, avg pool, flatten, a product */
static dt_tensor *f_cnn(dt_tensor *const *x) {
  dt_tensor *a = dt_f_conv2d(x[0], x[1], NULL, 1, 1), *b = a ? dt_tanh(a) : NULL, *c = b ? dt_f_max_pool2d(b, 2, 0, 0) : NULL;
  dt_tensor *d = c ? dt_f_conv2d(c, x[2], NULL, 1, 0) : NULL, *e = d ? dt_sigmoid(d) : NULL;
  dt_tensor *f = e ? dt_f_adaptive_avg_pool2d(e, 1, 1) : NULL, *y = f ? dt_reshape(f, dt_shape2(2, -1)) : NULL;
  dt_release(a); dt_release(b); dt_release(c); dt_release(d); dt_release(e); dt_release(f);
  return y;
}

static const gc_case CASES[] = {
  {"conv2d stride 1 padding 1", f_conv, 3, {{4, {2, 2, 4, 4}}, {4, {3, 2, 3, 3}}, {1, {3}}}, {ANY, ANY, ANY}},
  {"conv2d no bias, stride 2", f_conv_nobias, 2, {{4, {1, 2, 5, 5}}, {4, {2, 2, 3, 3}}}, {ANY, ANY}},
  {"conv2d_ex strides, padding, dilation, groups", f_conv_ex, 3, {{4, {2, 4, 5, 5}}, {4, {4, 2, 2, 3}}, {1, {4}}}, {ANY, ANY, ANY}},
  {"max_pool2d 2", f_max_pool, 1, {{4, {2, 2, 4, 4}}}, {ANY}},
  {"max_pool2d_ex (3,2) stride (2,1) padding 1", f_max_pool_ex, 1, {{4, {1, 2, 5, 4}}}, {ANY}},
  {"avg_pool2d 2 stride 1 padding 1", f_avg_pool, 1, {{4, {2, 1, 3, 3}}}, {ANY}},
  {"avg_pool2d_ex (3,2) stride (2,1)", f_avg_pool_ex, 1, {{4, {1, 2, 5, 4}}}, {ANY}},
  {"adaptive_avg_pool2d (2,3)", f_adaptive, 1, {{4, {2, 2, 5, 4}}}, {ANY}},
  {"a small CNN", f_cnn, 3, {{4, {2, 1, 6, 6}}, {4, {3, 1, 3, 3}}, {4, {2, 3, 2, 2}}}, {ANY, ANY, ANY}},
};

static void test_gradcheck(dt_device dev) {
  size_t i;
  for (i = 0; i < sizeof CASES / sizeof CASES[0]; i++) T_CHECK_MSG(gradcheck(dev, &CASES[i]), "%s", CASES[i].name);
}

/* Only the inputs that require grad get one; grad mode off records nothing; a saved input changed
   in place makes the backward refuse. */
static void test_autograd_rules(dt_device dev) {
  double xv[32], wv[18];
  int i;
  dt_tensor *x, *w, *y, *s, *idx = NULL;
  for (i = 0; i < 32; i++) xv[i] = gc_value(i, 1, ANY);
  for (i = 0; i < 18; i++) wv[i] = gc_value(i, 2, ANY);
  x = f64(xv, dt_shape4(2, 1, 4, 4), dev);
  w = f64(wv, dt_shape4(2, 1, 3, 3), dev);
  T_CHECK(x && w && dt_requires_grad_(w, 1) == DT_OK);
  y = dt_f_conv2d(x, w, NULL, 1, 0);
  s = y ? dt_sum(y) : NULL;
  T_CHECK(s && dt_requires_grad(y) && dt_autograd_backward(s, NULL) == DT_OK);
  T_CHECK(dt_grad(w) != NULL && dt_grad(x) == NULL);
  dt_release(y); dt_release(s);
  dt_set_grad_enabled(0);
  y = dt_f_max_pool2d(w, 2, 1, 0);
  T_CHECK(y && !dt_requires_grad(y));
  dt_release(y);
  dt_set_grad_enabled(1);
  /* the indices handed out are the ones the node keeps: changing them in place is seen */
  y = dt_f_max_pool2d_ex(w, 2, 2, 1, 1, 0, 0, &idx);
  s = y ? dt_sum(y) : NULL;
  T_CHECK(s && idx && dt_fill_(idx, 0) == DT_OK);
  T_CHECK(s && dt_autograd_backward(s, NULL) != DT_OK);
  dt_release(y); dt_release(s); dt_release(idx);
  dt_release(x); dt_release(w);
}

/* ---- the modules ---- */

static double sinv(int64_t i, int salt) { return floor(sin(0.7 * (double)i + salt) * 0.5 * 1e4 + 0.5) / 1e4; }
/* round-half-away as Python's round on these values: none lies on a half */

static dt_module *small_net(void) {
  dt_module *net = dt_sequential();
  dt_sequential_add(net, dt_conv2d(1, 2, 3, 1, 1));
  dt_sequential_add(net, dt_sigmoid_layer());
  dt_sequential_add(net, dt_max_pool2d(2, 0, 0));
  dt_sequential_add(net, dt_conv2d(2, 3, 2, 1, 0));
  dt_sequential_add(net, dt_tanh_layer());
  dt_sequential_add(net, dt_avg_pool2d(2, 1, 1));
  dt_sequential_add(net, dt_adaptive_avg_pool2d(2, 2));
  dt_sequential_add(net, dt_flatten_layer());
  dt_sequential_add(net, dt_linear(12, 4));
  return net;
}

/* Made once with PyTorch (float64) by this script (torch, nn as usual):
     v = lambda n, salt: [round(math.sin(0.7*i + salt)*0.5, 4) for i in range(n)]
     net = nn.Sequential(nn.Conv2d(1,2,3,padding=1), nn.Sigmoid(), nn.MaxPool2d(2), nn.Conv2d(2,3,2), nn.Tanh(),
                         nn.AvgPool2d(2,1,1), nn.AdaptiveAvgPool2d((2,2)), nn.Flatten(), nn.Linear(12,4)).double()
     for k, (name, p) in enumerate(net.state_dict().items()): p.copy_(tensor(v(p.numel(), k+1)).reshape(p.shape))
     x = tensor(v(72, 0)).reshape(2,1,6,6); y = net(x); loss = F.cross_entropy(y, tensor([1,3])); loss.backward()
   Y = y, L = loss, G0 = net[0].weight.grad, G3 = net[3].weight.grad, GB3 = net[3].bias.grad */
static const double TY[8] = {0.0168431956, -0.1035663628, 0.6106630185, 0.6233626013, 0.01698906842, -0.1037799473, 0.6107390132, 0.6234972576};
static const double TL = 1.46736517307;
static const double TG0[18] = {0.00348390915, 0.008775320499, 0.009175241109, -0.009230229787, -0.009173718916, -0.004601867161,
  0.003427431446, -0.0004592247558, -0.003560503246, -0.002576663576, -0.004823233237, -0.004231385455, 0.005788313536,
  0.004686636205, 0.001628749663, -0.001086212677, 0.0008456807159, 0.001564607684};
static const double TG3[24] = {-0.211243189, -0.2118187322, -0.2129710724, -0.2216389578, -0.1941277454, -0.1947771294,
  -0.1960254676, -0.2056312466, 0.151967245, 0.1531083159, 0.1550164877, 0.1611875048, 0.139512613, 0.1407848216,
  0.1428376893, 0.1496574941, -0.1479295752, -0.1502644084, -0.1537838442, -0.1596734582, -0.1355821852, -0.138171788,
  -0.1419461131, -0.1484279634};
static const double TGB3[3] = {-0.3143929329, 0.2275404301, -0.2236697779};

static int close_to(const dt_tensor *t, const double *ref, int64_t n, double tol) {
  double *v = t && dt_numel(t) == n ? values(t) : NULL;
  int64_t i;
  int ok = v != NULL;
  for (i = 0; ok && i < n; i++)
    if (!(fabs(v[i] - ref[i]) <= tol + tol * fabs(ref[i]))) { printf("  [%lld]: %.10g, expected %.10g\n", (long long)i, v[i], ref[i]); ok = 0; }
  free(v);
  return ok;
}

/* the parameters set to the script's values (grad mode off: they are leaves that require grad) */
static void set_params(dt_module *net, dt_device dev) {
  int k, prev = dt_set_grad_enabled(0);
  for (k = 0; k < dt_module_num_params(net); k++) {
    dt_tensor *p = dt_module_param(net, k, NULL), *src;
    int64_t n = dt_numel(p), i;
    double *v = (double *)malloc((size_t)n * sizeof(double));
    for (i = 0; i < n; i++) v[i] = sinv(i, k + 1);
    src = f64(v, dt_shape_of(p), dev);
    T_CHECK(src && dt_copy_(p, src) == DT_OK);
    dt_release(src);
    free(v);
  }
  dt_set_grad_enabled(prev);
}

static void test_modules_vs_pytorch(dt_device dev) {
  static const int64_t lab[2] = {1, 3};
  dt_module *net = small_net();
  double xv[72];
  dt_tensor *x, *y, *t, *loss;
  const char *name = NULL;
  int i;
  for (i = 0; i < 72; i++) xv[i] = sinv(i, 0);
  T_CHECK(net && dt_sequential_len(net) == 9 && dt_module_num_params(net) == 6);
  T_CHECK(dt_module_to_dtype(net, DT_F64) == DT_OK && dt_module_to(net, dev) == DT_OK);
  T_CHECK(dt_module_param(net, 0, &name) != NULL); T_STREQ(name, "0.weight");
  T_CHECK(dt_module_param(net, 3, &name) != NULL); T_STREQ(name, "3.bias");
  T_CHECK(dt_module_param(net, 4, &name) != NULL); T_STREQ(name, "8.weight");
  T_CHECK(dt_device_equal(dt_device_of(dt_module_param(net, 2, NULL)), dev));
  set_params(net, dev);
  x = f64(xv, dt_shape4(2, 1, 6, 6), dev);
  t = dt_from_data(lab, dt_shape1(2), DT_I64, dev);
  y = dt_forward(net, x);
  T_CHECK_MSG(y != NULL, "%s", dt_last_error());
  T_CHECK(close_to(y, TY, 8, 1e-9));
  loss = y ? dt_cross_entropy(y, t) : NULL;
  T_CHECK(loss && dt_autograd_backward(loss, NULL) == DT_OK);
  if (loss) {
    T_CLOSE(dt_item(loss), TL, 1e-10, 1e-9);
  }
  T_CHECK(close_to(dt_module_grad(net, 0), TG0, 18, 1e-9));
  T_CHECK(close_to(dt_module_grad(net, 2), TG3, 24, 1e-9));
  T_CHECK(close_to(dt_module_grad(net, 3), TGB3, 3, 1e-9));
  T_CHECK(close_to(dt_grad(dt_module_get_param(net, "3.weight")), TG3, 24, 1e-9));
  /* an SGD step moves the parameters by -lr grad */
  {
    dt_optimizer *o = dt_sgd(net, 0.5, 0, 0);
    double before = sinv(0, 3), *v;
    T_CHECK(o && dt_optimizer_step(o) == DT_OK);
    v = values(dt_module_param(net, 2, NULL));
    T_CHECK(v != NULL);
    if (v) T_CLOSE(v[0], before - 0.5 * TG3[0], 1e-9, 1e-9);
    free(v);
    dt_optimizer_free(o);
  }
  dt_release(x); dt_release(t); dt_release(y); dt_release(loss);
  dt_module_free(net);
}

/* PyTorch's default initialisation: weight and bias uniform in +-1/sqrt(in / groups * kh * kw) */
static void test_init(dt_device dev) {
  dt_module *c = dt_conv2d(6, 16, 5, 1, 0), *g = dt_conv2d_ex(4, 6, 3, 2, 1, 1, 0, 0, 2, 0), *lz = dt_conv2d(0, 4, 3, 1, 1);
  double *w, *b, bound = 1.0 / sqrt(150.0), mx = 0, mn = 0;
  int64_t i;
  dt_tensor *x, *y;
  T_CHECK(c && g && lz);
  T_CHECK(dt_module_to(c, dev) == DT_OK);
  T_CHECK(dt_module_num_params(c) == 2 && dt_module_num_params(g) == 1 && dt_module_num_params(lz) == 0);
  w = values(dt_module_get_param(c, "weight"));
  b = values(dt_module_get_param(c, "bias"));
  T_CHECK(w && b && dt_numel(dt_module_get_param(c, "weight")) == 16 * 6 * 25);
  for (i = 0; w && i < 16 * 6 * 25; i++) { if (w[i] > mx) mx = w[i]; if (w[i] < mn) mn = w[i]; }
  T_CHECK(mx < bound && mn >= -bound && mx > 0.95 * bound && mn < -0.95 * bound);
  for (i = 0; b && i < 16; i++) T_CHECK(fabs(b[i]) <= bound);
  free(w); free(b);
  { /* groups 2, no bias: fan_in = 4 / 2 * 3 * 2 */
    dt_tensor *gw = dt_module_get_param(g, "weight");
    dt_shape s = dt_shape_of(gw);
    T_CHECK(s.ndim == 4 && s.dims[0] == 6 && s.dims[1] == 2 && s.dims[2] == 3 && s.dims[3] == 2);
    w = values(gw);
    for (i = 0; w && i < 72; i++) T_CHECK(fabs(w[i]) < 1.0 / sqrt(12.0));
    free(w);
  }
  /* lazy: made at the first forward, on its input's device, in its dtype */
  T_CHECK(dt_module_to(lz, dev) == DT_OK && dt_module_to_dtype(lz, DT_F64) == DT_OK);
  x = NULL; { dt_tensor *x4 = dt_full(dt_shape4(2, 3, 5, 5), 0.5, dev); dt_release(x); x = x4 ? dt_cast(x4, DT_F64) : NULL; dt_release(x4); }
  y = x ? dt_forward(lz, x) : NULL;
  T_CHECK_MSG(y != NULL, "%s", dt_last_error());
  T_CHECK(dt_module_num_params(lz) == 2);
  if (y) {
    dt_tensor *lw = dt_module_get_param(lz, "weight");
    dt_shape s = dt_shape_of(lw), ys = dt_shape_of(y);
    T_CHECK(s.dims[0] == 4 && s.dims[1] == 3 && dt_dtype_of(lw) == DT_F64 && dt_device_equal(dt_device_of(lw), dev));
    T_CHECK(ys.dims[0] == 2 && ys.dims[1] == 4 && ys.dims[2] == 5 && ys.dims[3] == 5);
  }
  dt_release(x); dt_release(y);
  dt_module_free(c); dt_module_free(g); dt_module_free(lz);
}

static void test_save_load_and_modes(dt_device dev) {
  const char *path = "build/test_cnn_state.safetensors";
  dt_module *a = small_net(), *b = small_net();
  int k;
  T_CHECK(dt_module_to(a, dev) == DT_OK && dt_module_to(b, dev) == DT_OK);
  T_CHECK(dt_module_save(a, path) == DT_OK);
  T_CHECK_MSG(dt_module_load(b, path) == DT_OK, "%s", dt_last_error());
  for (k = 0; k < dt_module_num_params(a); k++) {
    double *va = values(dt_module_param(a, k, NULL)), *vb = values(dt_module_param(b, k, NULL));
    int64_t i, n = dt_numel(dt_module_param(a, k, NULL));
    T_CHECK(va && vb);
    for (i = 0; va && vb && i < n; i++) T_CHECK(va[i] == vb[i]);
    free(va); free(vb);
  }
  remove(path);
  T_CHECK(dt_module_is_training(dt_sequential_get(a, 0)) == 1);
  T_CHECK(dt_module_train(a, 0) == DT_OK);
  T_CHECK(dt_module_is_training(a) == 0 && dt_module_is_training(dt_sequential_get(a, 3)) == 0);
  T_CHECK(dt_module_train(a, 1) == DT_OK && dt_module_is_training(dt_sequential_get(a, 8)) == 1);
  dt_module_free(a); dt_module_free(b);
}

/* refusals: the constructors' arguments, a channel mismatch, an input smaller than the kernel */
static void test_module_refusals(dt_device dev) {
  dt_module *c = dt_conv2d(3, 4, 5, 1, 0);
  dt_tensor *x = dt_zeros(dt_shape4(1, 2, 8, 8), dev), *x2 = dt_zeros(dt_shape4(1, 3, 4, 4), dev);
  T_CHECK(dt_conv2d(-1, 4, 3, 1, 0) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_conv2d(3, 0, 3, 1, 0) == NULL);
  T_CHECK(dt_conv2d(3, 4, 0, 1, 0) == NULL && contains(dt_last_error(), "kernel_size"));
  T_CHECK(dt_conv2d(3, 4, 3, 0, 0) == NULL && contains(dt_last_error(), "stride"));
  T_CHECK(dt_conv2d(3, 4, 3, 1, -1) == NULL && contains(dt_last_error(), "padding"));
  T_CHECK(dt_conv2d_ex(3, 4, 3, 3, 1, 1, 0, 0, 2, 1) == NULL && contains(dt_last_error(), "groups"));
  T_CHECK(dt_max_pool2d(2, 1, 2) == NULL && contains(dt_last_error(), "padding"));
  T_CHECK(dt_avg_pool2d(0, 1, 0) == NULL);
  T_CHECK(dt_adaptive_avg_pool2d(0, 1) == NULL);
  T_CHECK(c && dt_module_to(c, dev) == DT_OK);
  T_CHECK(dt_forward(c, x) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_forward(c, x2) == NULL && contains(dt_last_error(), "smaller than the kernel"));
  dt_release(x); dt_release(x2);
  dt_module_free(c);
}

/* ---- the trainer on images ---- */

typedef struct mode_count { int train, eval; } mode_count;
static dt_tensor *count_fwd(dt_module *self, const dt_tensor *x, void *user) {
  mode_count *c = (mode_count *)user;
  if (dt_module_is_training(self)) c->train++; else c->eval++;
  return dt_mul_scalar(x, 1.0);
}

/* (n, 1, 8, 8) images whose class is the quadrant of their brightest pixel */
static void image_data(int64_t n, dt_tensor **X, dt_tensor **y) {
  float *xv = (float *)malloc((size_t)n * 64 * sizeof(float));
  int64_t *yv = (int64_t *)malloc((size_t)n * sizeof(int64_t)), i, j;
  uint64_t r = 12345;
  for (i = 0; i < n; i++) {
    int q;
    for (j = 0; j < 64; j++) { r = r * 6364136223846793005ULL + 1442695040888963407ULL; xv[i * 64 + j] = (float)((r >> 40) % 1000) / 4000.0f; }
    q = (int)(i % 4);
    xv[i * 64 + (q / 2 * 4 + 2) * 8 + (q % 2) * 4 + 2] += 2.0f;
    yv[i] = q;
  }
  *X = dt_from_data(xv, dt_shape4(n, 1, 8, 8), DT_F32, dt_cpu());
  *y = dt_from_data(yv, dt_shape1(n), DT_I64, dt_cpu());
  free(xv); free(yv);
}

static dt_module *image_net(mode_count *mc) {
  dt_module *net = dt_sequential();
  dt_sequential_add(net, dt_conv2d(1, 4, 3, 1, 1));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_max_pool2d(2, 2, 0));
  if (mc) dt_sequential_add(net, dt_module_new("Count", count_fwd, mc, NULL));
  dt_sequential_add(net, dt_flatten_layer());
  dt_sequential_add(net, dt_linear(64, 4));
  return net;
}

static void test_trainer_images(dt_device dev) {
  dt_tensor *X, *y;
  dt_trainer tr;
  mode_count mc = {0, 0};
  dt_module *net = image_net(&mc);
  double acc = 0;
  if (dev.type != DT_CPU && dt_num_gpus() < 1) T_SKIP("no GPU");
  dt_manual_seed(7);
  image_data(256, &X, &y);
  T_CHECK(dt_trainer_init(&tr, 6, dev.type == DT_CPU ? 0 : 1) == DT_OK);
  tr.quiet = 1; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.batch_size = 32; tr.lr = 0.2;
  T_CHECK_MSG(dt_trainer_fit_val(&tr, net, X, y, X, y) == DT_OK, "%s", dt_last_error());
  T_CHECK(tr.epochs_run == 6 && tr.epoch_loss[5] < 0.5 * tr.epoch_loss[0]);
  T_CHECK(tr.last.val_acc > 0.9);
  T_CHECK(mc.train > 0 && mc.eval > 0); /* train mode in the epochs, eval mode in the validation */
  T_CHECK(dt_module_is_training(net) == 1);
  dt_module_train(net, 0);
  T_CHECK(dt_trainer_evaluate(&tr, net, X, y, NULL, &acc) == DT_OK && acc > 0.9);
  T_CHECK(dt_module_is_training(net) == 0); /* left as it was */
  dt_trainer_free(&tr);
  dt_module_free(net);
  dt_release(X); dt_release(y);
}

/* gradient_clip_val: one SGD step of lr 1 moves the parameters by at most the clip value */
static void test_trainer_clip(dt_device dev) {
  dt_tensor *X, *y, *before[4];
  dt_trainer tr;
  int fused, k;
  if (dev.type != DT_CPU && dt_num_gpus() < 1) T_SKIP("no GPU");
  image_data(64, &X, &y);
  for (fused = 0; fused < 2; fused++) {
    dt_module *net = image_net(NULL);
    double sq = 0;
    dt_tensor *Xf = NULL;
    if (fused) { /* an MLP: the fused path */
      dt_module_free(net);
      net = dt_sequential();
      dt_sequential_add(net, dt_linear(64, 8)); dt_sequential_add(net, dt_relu_layer()); dt_sequential_add(net, dt_linear(8, 4));
      Xf = dt_reshape(X, dt_shape2(64, 64));
    }
    T_CHECK(dt_module_num_params(net) == 4);
    for (k = 0; k < 4; k++) { int pg = dt_set_grad_enabled(0); before[k] = dt_mul_scalar(dt_module_param(net, k, NULL), 1.0); dt_set_grad_enabled(pg); }
    T_CHECK(dt_trainer_init(&tr, 1, dev.type == DT_CPU ? 0 : 1) == DT_OK);
    tr.quiet = 1; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.batch_size = 64; tr.lr = 1.0; tr.gradient_clip_val = 1e-3;
    T_CHECK_MSG(dt_trainer_fit(&tr, net, fused ? Xf : X, y) == DT_OK, "%s", dt_last_error());
    for (k = 0; k < 4; k++) {
      dt_tensor *a = dt_to(before[k], dt_cpu()), *b = dt_to(dt_module_param(net, k, NULL), dt_cpu()), *d = a && b ? dt_sub(b, a) : NULL;
      dt_tensor *nr = d ? dt_norm(d) : NULL;
      double v = nr ? dt_item(nr) : NAN;
      sq += v * v;
      dt_release(a); dt_release(b); dt_release(d); dt_release(nr); dt_release(before[k]);
    }
    T_CHECK_MSG(sqrt(sq) <= 1e-3 * 1.001 && sqrt(sq) > 0.5e-3, "fused %d: moved %g", fused, sqrt(sq));
    dt_trainer_free(&tr);
    dt_module_free(net);
    dt_release(Xf);
  }
  dt_release(X); dt_release(y);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_gradcheck);
  T_RUN_ALL_DEVICES(test_autograd_rules);
  T_RUN_ALL_DEVICES(test_modules_vs_pytorch);
  T_RUN_ALL_DEVICES(test_init);
  T_RUN_ALL_DEVICES(test_save_load_and_modes);
  T_RUN_ALL_DEVICES(test_module_refusals);
  T_RUN_ALL_DEVICES(test_trainer_images);
  T_RUN_ALL_DEVICES(test_trainer_clip);
  return t_finish();
}
