/* Convolution and pooling in autograd and as modules: gradients against central differences in
   float64 on every device, the modules against PyTorch, their initialisation, state_dict, the
   train/eval flag, and the trainer on images. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

static DT__UNUSED int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

static int64_t numel_of(dt_shape s) {
  int64_t n = 1;
  int k;
  for (k = 0; k < s.ndim; k++) n *= s.dims[k];
  return n;
}

/* All values of t as doubles (malloc'd; the caller frees); NULL on failure. */
static double *values(const dt_tensor *t) {
  int64_t n = dt_numel(t), i;
  void *h = malloc(dt_nbytes(t) + 8);
  double *v = (double *)malloc((size_t)(n + 1) * sizeof(double));
  if (!h || !v || dt_to_host(t, h, dt_nbytes(t) + 8) != DT_OK) { free(h); free(v); return NULL; }
  for (i = 0; i < n; i++) v[i] = dt_dtype_of(t) == DT_F32 ? (double)((float *)h)[i] : ((double *)h)[i];
  free(h);
  return v;
}

static dt_tensor *f64(const double *v, dt_shape s, dt_device d) { return dt_from_data(v, s, DT_F64, d); }

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

int main(void) {
  T_RUN_ALL_DEVICES(test_gradcheck);
  T_RUN_ALL_DEVICES(test_autograd_rules);
  return t_finish();
}
