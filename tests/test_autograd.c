/* Autograd: every recorded operation's gradients against central differences in float64 on
   every device, a few expressions against PyTorch's autograd, and the engine's rules (paths,
   broadcasting, empty tensors, memory, refusals, grad mode). */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

#include "values.inc"

#include "gradcheck.inc"

/* ---- the operations under test, each f(x) ---- */

static dt_tensor *f_add(dt_tensor *const *x) { return dt_add(x[0], x[1]); }
static dt_tensor *f_sub(dt_tensor *const *x) { return dt_sub(x[0], x[1]); }
static dt_tensor *f_mul(dt_tensor *const *x) { return dt_mul(x[0], x[1]); }
static dt_tensor *f_div(dt_tensor *const *x) { return dt_div(x[0], x[1]); }
static dt_tensor *f_add_scalar(dt_tensor *const *x) { return dt_add_scalar(x[0], 2.5); }
static dt_tensor *f_mul_scalar(dt_tensor *const *x) { return dt_mul_scalar(x[0], -1.75); }
static dt_tensor *f_neg(dt_tensor *const *x) { return dt_neg(x[0]); }
static dt_tensor *f_exp(dt_tensor *const *x) { return dt_exp(x[0]); }
static dt_tensor *f_log(dt_tensor *const *x) { return dt_log(x[0]); }
static dt_tensor *f_sqrt(dt_tensor *const *x) { return dt_sqrt(x[0]); }
static dt_tensor *f_relu(dt_tensor *const *x) { return dt_relu(x[0]); }
static dt_tensor *f_sigmoid(dt_tensor *const *x) { return dt_sigmoid(x[0]); }
static dt_tensor *f_tanh(dt_tensor *const *x) { return dt_tanh(x[0]); }
static dt_tensor *f_abs(dt_tensor *const *x) { return dt_abs(x[0]); }
static dt_tensor *f_matmul(dt_tensor *const *x) { return dt_matmul(x[0], x[1]); }
static dt_tensor *f_transpose(dt_tensor *const *x) { return dt_transpose(x[0]); }
static dt_tensor *f_reshape(dt_tensor *const *x) { return dt_reshape(x[0], dt_shape3(2, -1, 2)); }
static dt_tensor *f_permute(dt_tensor *const *x) { static const int p[3] = {2, 0, -2}; return dt_permute(x[0], p); }
static dt_tensor *f_slice0(dt_tensor *const *x) { return dt_slice(x[0], 0, 1, 3); }
static dt_tensor *f_slice1(dt_tensor *const *x) { return dt_slice(x[0], -1, -3, 100); }
static dt_tensor *f_slice_mid(dt_tensor *const *x) { return dt_slice(x[0], 1, 1, 2); }
static dt_tensor *isel(dt_tensor *t, int dim, int n) {
  static const int64_t idx[4] = {2, 0, 2, 1};
  dt_tensor *i = dt_from_data(idx, dt_shape1(n), DT_I64, dt_device_of(t)), *y;
  y = i ? dt_index_select(t, dim, i) : NULL;
  dt_release(i);
  return y;
}
static dt_tensor *f_index_select0(dt_tensor *const *x) { return isel(x[0], 0, 4); }
static dt_tensor *f_index_select1(dt_tensor *const *x) { return isel(x[0], -1, 3); }
static dt_tensor *f_cat0(dt_tensor *const *x) { const dt_tensor *t[3]; t[0] = x[0]; t[1] = x[1]; t[2] = x[2]; return dt_cat(t, 3, 0); }
static dt_tensor *f_cat1(dt_tensor *const *x) { const dt_tensor *t[3]; t[0] = x[0]; t[1] = x[1]; t[2] = x[2]; return dt_cat(t, 3, -1); }
static dt_tensor *f_stack(dt_tensor *const *x) { const dt_tensor *t[2]; t[0] = x[0]; t[1] = x[1]; return dt_stack(t, 2); }
static dt_tensor *f_sum(dt_tensor *const *x) { return dt_sum(x[0]); }
static dt_tensor *f_mean(dt_tensor *const *x) { return dt_mean(x[0]); }
static dt_tensor *f_sum_dim0(dt_tensor *const *x) { return dt_sum_dim(x[0], 0); }
static dt_tensor *f_sum_dim1(dt_tensor *const *x) { return dt_sum_dim(x[0], -1); }
static dt_tensor *f_norm(dt_tensor *const *x) { return dt_norm(x[0]); }
static dt_tensor *f_max_dim(dt_tensor *const *x) { return dt_max_dim(x[0], 1); }
static dt_tensor *f_min_dim(dt_tensor *const *x) { return dt_min_dim(x[0], 0); }
static dt_tensor *f_max(dt_tensor *const *x) { return dt_max(x[0]); }
static dt_tensor *f_min(dt_tensor *const *x) { return dt_min(x[0]); }
static dt_tensor *f_softmax(dt_tensor *const *x) { return dt_softmax(x[0], 1); }
static dt_tensor *f_softmax0(dt_tensor *const *x) { return dt_softmax(x[0], 0); }
static dt_tensor *f_log_softmax(dt_tensor *const *x) { return dt_log_softmax(x[0], -1); }
static dt_tensor *f_cross_entropy(dt_tensor *const *x) {
  static const int64_t lab[3] = {2, 0, 3};
  dt_tensor *t = dt_from_data(lab, dt_shape1(3), DT_I64, dt_device_of(x[0])), *y;
  y = t ? dt_cross_entropy(x[0], t) : NULL;
  dt_release(t);
  return y;
}
static dt_tensor *f_mse_loss(dt_tensor *const *x) { return dt_mse_loss(x[0], x[1]); }
/* through float32 and back: a linear function, so float32's rounding stays small */
static dt_tensor *f_cast(dt_tensor *const *x) {
  dt_tensor *a = dt_cast(x[0], DT_F64), *y;
  y = a ? dt_mul_scalar(a, 3.0) : NULL;
  dt_release(a);
  return y;
}
/* a composite: x used on two paths, broadcasting, a chain */
static dt_tensor *f_chain(dt_tensor *const *x) {
  dt_tensor *a = dt_mul(x[0], x[0]), *b = a ? dt_add(a, x[1]) : NULL, *c = b ? dt_tanh(b) : NULL, *d = c ? dt_mul(c, x[0]) : NULL;
  dt_release(a); dt_release(b); dt_release(c);
  return d;
}

static const gc_case CASES[] = {
  {"add (2,3)+(3,)", f_add, 2, {{2, {2, 3}}, {1, {3}}}, {ANY, ANY}},
  {"add (2,1,3)+(4,1)", f_add, 2, {{3, {2, 1, 3}}, {2, {4, 1}}}, {ANY, ANY}},
  {"add 0-d + (2,2)", f_add, 2, {{0, {0}}, {2, {2, 2}}}, {ANY, ANY}},
  {"sub (2,3)-(2,1)", f_sub, 2, {{2, {2, 3}}, {2, {2, 1}}}, {ANY, ANY}},
  {"mul (3,1)*(1,4)", f_mul, 2, {{2, {3, 1}}, {2, {1, 4}}}, {ANY, ANY}},
  {"div (2,3)/(3,)", f_div, 2, {{2, {2, 3}}, {1, {3}}}, {ANY, POS}},
  {"add_scalar", f_add_scalar, 1, {{2, {2, 3}}}, {ANY}},
  {"mul_scalar", f_mul_scalar, 1, {{2, {2, 3}}}, {ANY}},
  {"neg", f_neg, 1, {{2, {2, 3}}}, {ANY}},
  {"exp", f_exp, 1, {{2, {2, 3}}}, {ANY}},
  {"log", f_log, 1, {{2, {2, 3}}}, {POS}},
  {"sqrt", f_sqrt, 1, {{2, {2, 3}}}, {POS}},
  {"relu", f_relu, 1, {{2, {3, 4}}}, {ANY}},
  {"sigmoid", f_sigmoid, 1, {{2, {2, 3}}}, {ANY}},
  {"tanh", f_tanh, 1, {{2, {2, 3}}}, {ANY}},
  {"abs", f_abs, 1, {{2, {3, 4}}}, {ANY}},
  {"matmul (2,3)@(3,4)", f_matmul, 2, {{2, {2, 3}}, {2, {3, 4}}}, {ANY, ANY}},
  {"matmul (2,2,3)@(2,3,4)", f_matmul, 2, {{3, {2, 2, 3}}, {3, {2, 3, 4}}}, {ANY, ANY}},
  {"matmul (2,2,3)@(3,4)", f_matmul, 2, {{3, {2, 2, 3}}, {2, {3, 4}}}, {ANY, ANY}},
  {"matmul (2,3)@(2,3,4)", f_matmul, 2, {{2, {2, 3}}, {3, {2, 3, 4}}}, {ANY, ANY}},
  {"matmul (3,)@(3,4)", f_matmul, 2, {{1, {3}}, {2, {3, 4}}}, {ANY, ANY}},
  {"matmul (2,3)@(3,)", f_matmul, 2, {{2, {2, 3}}, {1, {3}}}, {ANY, ANY}},
  {"matmul (3,)@(3,)", f_matmul, 2, {{1, {3}}, {1, {3}}}, {ANY, ANY}},
  {"transpose", f_transpose, 1, {{2, {2, 3}}}, {ANY}},
  {"reshape", f_reshape, 1, {{2, {4, 3}}}, {ANY}},
  {"permute", f_permute, 1, {{3, {2, 3, 4}}}, {ANY}},
  {"slice dim 0 (a view)", f_slice0, 1, {{2, {4, 3}}}, {ANY}},
  {"slice dim -1", f_slice1, 1, {{2, {2, 5}}}, {ANY}},
  {"slice the middle", f_slice_mid, 1, {{3, {2, 4, 2}}}, {ANY}},
  {"index_select dim 0, repeated", f_index_select0, 1, {{2, {3, 2}}}, {ANY}},
  {"index_select dim -1", f_index_select1, 1, {{3, {2, 2, 3}}}, {ANY}},
  {"cat dim 0", f_cat0, 3, {{2, {1, 3}}, {2, {2, 3}}, {2, {1, 3}}}, {ANY, ANY, ANY}},
  {"cat dim -1", f_cat1, 3, {{2, {2, 1}}, {2, {2, 3}}, {2, {2, 2}}}, {ANY, ANY, ANY}},
  {"stack", f_stack, 2, {{2, {2, 3}}, {2, {2, 3}}}, {ANY, ANY}},
  {"sum", f_sum, 1, {{2, {2, 3}}}, {ANY}},
  {"mean", f_mean, 1, {{3, {2, 3, 2}}}, {ANY}},
  {"sum_dim 0", f_sum_dim0, 1, {{3, {2, 3, 2}}}, {ANY}},
  {"sum_dim -1", f_sum_dim1, 1, {{2, {2, 3}}}, {ANY}},
  {"norm", f_norm, 1, {{2, {2, 3}}}, {ANY}},
  {"max_dim", f_max_dim, 1, {{2, {3, 4}}}, {ANY}},
  {"min_dim", f_min_dim, 1, {{3, {3, 2, 2}}}, {ANY}},
  {"max", f_max, 1, {{2, {3, 4}}}, {ANY}},
  {"min", f_min, 1, {{2, {3, 4}}}, {ANY}},
  {"softmax dim 1", f_softmax, 1, {{2, {3, 4}}}, {ANY}},
  {"softmax dim 0", f_softmax0, 1, {{3, {3, 2, 2}}}, {ANY}},
  {"log_softmax", f_log_softmax, 1, {{2, {3, 4}}}, {ANY}},
  {"cross_entropy", f_cross_entropy, 1, {{2, {3, 4}}}, {ANY}},
  {"mse_loss", f_mse_loss, 2, {{2, {2, 3}}, {2, {2, 3}}}, {ANY, ANY}},
  {"cast to float64 (no-op) and scale", f_cast, 1, {{2, {2, 3}}}, {ANY}},
  {"a chain with x on two paths", f_chain, 2, {{2, {2, 3}}, {1, {3}}}, {ANY, ANY}},
};

static void test_gradcheck(dt_device dev) {
  size_t i;
  for (i = 0; i < sizeof CASES / sizeof CASES[0]; i++) T_CHECK_MSG(gradcheck(dev, &CASES[i]), "%s", CASES[i].name);
}

/* ---- against PyTorch ---- */

/* Made once with PyTorch 1.13 (float64) by this script, values v_i = round(sin(0.7 i + salt) * 1.5, 4):
     T = lambda shape, salt: tensor(v(numel, salt)).reshape(shape).requires_grad_()
     E1: x, w, b = T((2,3),1), T((3,4),2), T((4,),3); loss = F.cross_entropy(relu(x @ w + b), tensor([1, 3]))
     E2: a = T((3,4),4); loss = (softmax(a,1) * log_softmax(a,0)).mean() + (tanh(a) * sigmoid(a)).sum()
     E3: p, q = T((2,3),5), T((2,3),6); loss = F.mse_loss(sqrt(exp(p)) / (abs(q) + 1), q)
     E4: A, B = T((2,3,4),7), T((2,4,2),8); s = (A @ B).permute(2,0,1).max(dim=2).values
         u = index_select(A, 1, tensor([2,0,2])).sum(2); v = cat([s, u], 1); loss = (v * v).sum() * 0.5 - v.norm()
   then loss.backward() and the grads printed with %.17g. */
#include "autograd_ref.h"

static int close_to(const dt_tensor *t, const double *want, int64_t n, double tol) {
  double *v = t && dt_numel(t) == n ? values(t) : NULL;
  int64_t i;
  int ok = v != NULL;
  for (i = 0; v && i < n; i++)
    if (!(fabs(v[i] - want[i]) <= tol + tol * fabs(want[i]))) {
      printf("  [%lld] = %.12g, expected %.12g\n", (long long)i, v[i], want[i]);
      ok = 0;
    }
  free(v);
  return ok;
}

static void test_pytorch(dt_device dev) {
  static const int64_t lab[2] = {1, 3}, idx[3] = {2, 0, 2};
  static const int perm[3] = {2, 0, 1};
  dt_tensor *x = f64(E1_X, dt_shape2(2, 3), dev), *w = f64(E1_W, dt_shape2(3, 4), dev), *b = f64(E1_B, dt_shape1(4), dev);
  dt_tensor *t = dt_from_data(lab, dt_shape1(2), DT_I64, dev), *i3 = dt_from_data(idx, dt_shape1(3), DT_I64, dev);
  dt_tensor *r[12], *loss;
  const dt_tensor *two[2];
  int k;
  memset(r, 0, sizeof r);
  dt_requires_grad_(x, 1); dt_requires_grad_(w, 1); dt_requires_grad_(b, 1);
  r[0] = dt_matmul(x, w); r[1] = dt_add(r[0], b); r[2] = dt_relu(r[1]);
  loss = dt_cross_entropy(r[2], t);
  T_CHECK(loss && dt_autograd_backward(loss, NULL) == DT_OK);
  T_CHECK(close_to(loss, E1_LOSS, 1, 1e-12));
  T_CHECK(close_to(dt_grad(x), E1_GX, 6, 1e-12));
  T_CHECK(close_to(dt_grad(w), E1_GW, 12, 1e-12));
  T_CHECK(close_to(dt_grad(b), E1_GB, 4, 1e-12));
  for (k = 0; k < 12; k++) { dt_release(r[k]); r[k] = NULL; }
  dt_release(loss); dt_release(x); dt_release(w); dt_release(b);

  x = f64(E2_A, dt_shape2(3, 4), dev);
  dt_requires_grad_(x, 1);
  r[0] = dt_softmax(x, 1); r[1] = dt_log_softmax(x, 0); r[2] = dt_mul(r[0], r[1]); r[3] = dt_mean(r[2]);
  r[4] = dt_tanh(x); r[5] = dt_sigmoid(x); r[6] = dt_mul(r[4], r[5]); r[7] = dt_sum(r[6]);
  loss = dt_add(r[3], r[7]);
  T_CHECK(loss && dt_autograd_backward(loss, NULL) == DT_OK);
  T_CHECK(close_to(loss, E2_LOSS, 1, 1e-12));
  T_CHECK(close_to(dt_grad(x), E2_GA, 12, 1e-12));
  for (k = 0; k < 12; k++) { dt_release(r[k]); r[k] = NULL; }
  dt_release(loss); dt_release(x);

  x = f64(E3_P, dt_shape2(2, 3), dev); w = f64(E3_Q, dt_shape2(2, 3), dev);
  dt_requires_grad_(x, 1); dt_requires_grad_(w, 1);
  r[0] = dt_exp(x); r[1] = dt_sqrt(r[0]); r[2] = dt_abs(w); r[3] = dt_add_scalar(r[2], 1.0); r[4] = dt_div(r[1], r[3]);
  loss = dt_mse_loss(r[4], w);
  T_CHECK(loss && dt_autograd_backward(loss, NULL) == DT_OK);
  T_CHECK(close_to(loss, E3_LOSS, 1, 1e-12));
  T_CHECK(close_to(dt_grad(x), E3_GP, 6, 1e-12));
  T_CHECK(close_to(dt_grad(w), E3_GQ, 6, 1e-12));
  for (k = 0; k < 12; k++) { dt_release(r[k]); r[k] = NULL; }
  dt_release(loss); dt_release(x); dt_release(w);

  x = f64(E4_A, dt_shape3(2, 3, 4), dev); w = f64(E4_B, dt_shape3(2, 4, 2), dev);
  dt_requires_grad_(x, 1); dt_requires_grad_(w, 1);
  r[0] = dt_matmul(x, w); r[1] = dt_permute(r[0], perm); r[2] = dt_max_dim(r[1], 2);
  r[3] = dt_index_select(x, 1, i3); r[4] = dt_sum_dim(r[3], 2);
  two[0] = r[2]; two[1] = r[4];
  r[5] = dt_cat(two, 2, 1); r[6] = dt_mul(r[5], r[5]); r[7] = dt_sum(r[6]); r[8] = dt_mul_scalar(r[7], 0.5);
  r[9] = dt_norm(r[5]);
  loss = dt_sub(r[8], r[9]);
  T_CHECK(loss && dt_autograd_backward(loss, NULL) == DT_OK);
  T_CHECK(close_to(loss, E4_LOSS, 1, 1e-12));
  T_CHECK(close_to(dt_grad(x), E4_GA, 24, 1e-12));
  T_CHECK(close_to(dt_grad(w), E4_GB, 16, 1e-12));
  for (k = 0; k < 12; k++) dt_release(r[k]);
  dt_release(loss); dt_release(x); dt_release(w); dt_release(t); dt_release(i3);
}

/* ---- the engine's rules ---- */

/* x on two paths and b broadcast on two: the gradients add up; two backwards accumulate;
   dt_zero_grad_ forgets */
static void test_accumulate(dt_device dev) {
  static const double xv[3] = {1, -2, 3}, bv[1] = {0.5};
  dt_tensor *x = f64(xv, dt_shape1(3), dev), *b = f64(bv, dt_shape0(), dev), *y1, *y2, *y3, *l;
  dt_tensor *ones = dt_ones_like(x);
  double *g;
  dt_requires_grad_(x, 1); dt_requires_grad_(b, 1);
  y1 = dt_mul(x, x); y2 = dt_add(y1, x); y3 = dt_mul(y2, b); /* b (x^2 + x) */
  l = dt_sum(y3);
  T_CHECK(dt_autograd_backward(l, NULL) == DT_OK);
  g = values(dt_grad(x));
  T_CHECK(g && g[0] == 0.5 * 3 && g[1] == 0.5 * -3 && g[2] == 0.5 * 7);
  free(g);
  T_CHECK(dt_ndim(dt_grad(b)) == 0 && dt_item(dt_grad(b)) == (1 + 1) + (4 - 2) + (9 + 3));
  dt_release(y1); dt_release(y2); dt_release(y3); dt_release(l);
  /* a second graph: the gradient adds to x's */
  y1 = dt_mul_scalar(x, 2.0);
  T_CHECK(dt_autograd_backward(y1, ones) == DT_OK);
  g = values(dt_grad(x));
  T_CHECK(g && g[0] == 1.5 + 2 && g[1] == -1.5 + 2 && g[2] == 3.5 + 2);
  free(g);
  dt_release(y1);
  T_CHECK(dt_zero_grad_(x) == DT_OK && dt_grad(x) == NULL);
  /* a backward of a leaf: its own gradient, a copy of grad_out */
  T_CHECK(dt_autograd_backward(x, ones) == DT_OK && dt_grad(x) && dt_grad(x) != ones && dt_data_ptr(dt_grad(x)) != dt_data_ptr(ones));
  dt_release(ones); dt_release(x); dt_release(b);
}

/* the gradient of an operand is reduced over the dims it was broadcast along, also when the
   result is empty; empty tensors go through */
static void test_empty(dt_device dev) {
  dt_tensor *a = dt_ones(dt_shape2(3, 1), dev), *b = dt_empty(dt_shape2(3, 0), DT_F32, dev), *y, *l;
  dt_tensor *e = dt_empty(dt_shape2(0, 4), DT_F64, dev), *e2, *le;
  double *g;
  dt_requires_grad_(a, 1); dt_requires_grad_(b, 1);
  y = dt_add(a, b);
  l = dt_sum(y);
  T_CHECK(y && dt_numel(y) == 0 && l && dt_autograd_backward(l, NULL) == DT_OK);
  T_CHECK(dt_grad(a) && dt_ndim(dt_grad(a)) == 2 && dt_dim(dt_grad(a), 0) == 3 && dt_dim(dt_grad(a), 1) == 1);
  g = values(dt_grad(a));
  T_CHECK(g && g[0] == 0 && g[1] == 0 && g[2] == 0);
  free(g);
  T_CHECK(dt_grad(b) && dt_numel(dt_grad(b)) == 0 && dt_dim(dt_grad(b), 1) == 0);
  dt_release(y); dt_release(l);
  dt_requires_grad_(e, 1);
  e2 = dt_exp(e);
  le = dt_mean(e2);
  T_CHECK(le && dt_autograd_backward(le, NULL) == DT_OK && dt_grad(e) && dt_numel(dt_grad(e)) == 0 && dt_dim(dt_grad(e), 1) == 4);
  dt_release(e2); dt_release(le); dt_release(e);
  dt_release(a); dt_release(b);
}

/* after releasing the results (forward, backward) and the leaves, memory is where it was */
static void test_memory(dt_device dev) {
  dt_memory_stats m0, m1, m2;
  dt_tensor *x, *w, *h, *r, *l;
  T_CHECK(dt_synchronize(dev) == DT_OK && dt_memory_stats_get(dev, &m0) == DT_OK);
  x = dt_randn(dt_shape2(64, 32), dev); w = dt_randn(dt_shape2(32, 16), dev);
  dt_requires_grad_(w, 1);
  h = dt_matmul(x, w); r = dt_relu(h); l = dt_mean(r);
  dt_release(h); dt_release(r); /* the graph keeps what it needs */
  T_CHECK(dt_memory_stats_get(dev, &m1) == DT_OK && m1.allocated > m0.allocated);
  T_CHECK(dt_autograd_backward(l, NULL) == DT_OK && dt_grad(w));
  dt_release(l);
  dt_release(x);
  dt_release(w);
  T_CHECK(dt_synchronize(dev) == DT_OK && dt_memory_stats_get(dev, &m2) == DT_OK);
  T_CHECK_MSG(m2.allocated == m0.allocated, "allocated %llu after, %llu before", (unsigned long long)m2.allocated,
              (unsigned long long)m0.allocated);
  /* a graph released without a backward frees everything too */
  x = dt_randn(dt_shape2(8, 8), dev);
  dt_requires_grad_(x, 1);
  h = dt_exp(x); r = dt_mul(h, x); l = dt_sum(r);
  dt_release(x); dt_release(h); dt_release(r); dt_release(l);
  T_CHECK(dt_memory_stats_get(dev, &m2) == DT_OK && m2.allocated == m0.allocated);
}

/* nothing records with grad mode off, nor from inputs that need no grad; dt_detach cuts */
static void test_no_grad(dt_device dev) {
  dt_tensor *x = dt_ones(dt_shape1(3), dev), *c = dt_ones(dt_shape1(3), dev), *y, *d;
  int prev;
  dt_requires_grad_(x, 1);
  T_CHECK(dt_requires_grad(x) && dt_is_leaf(x));
  y = dt_mul(c, c);
  T_CHECK(y && !dt_requires_grad(y) && dt_is_leaf(y));
  dt_release(y);
  prev = dt_set_grad_enabled(0);
  y = dt_mul(x, x);
  T_CHECK(y && !dt_requires_grad(y) && dt_is_leaf(y));
  dt_release(y);
  dt_set_grad_enabled(prev);
  y = dt_exp(x);
  T_CHECK(y && dt_requires_grad(y) && !dt_is_leaf(y));
  d = dt_detach(y);
  T_CHECK(d && !dt_requires_grad(d) && dt_is_leaf(d) && dt_data_ptr(d) == dt_data_ptr(y));
  dt_release(d);
  /* comparisons and casts to integers stop the gradient */
  d = dt_gt(y, c);
  T_CHECK(d && !dt_requires_grad(d));
  dt_release(d);
  d = dt_cast(y, DT_I32);
  T_CHECK(d && !dt_requires_grad(d));
  dt_release(d);
  dt_release(y); dt_release(x); dt_release(c);
}

/* casts between float dtypes and copies between devices: the gradient comes back in the leaf's
   dtype and on its device */
static void test_cast_and_devices(dt_device dev) {
  static const double xv[3] = {1, 2, 3};
  dt_tensor *x = f64(xv, dt_shape1(3), dev), *y, *z, *l, *g;
  double *v;
  dt_requires_grad_(x, 1);
  y = dt_cast(x, DT_F32); z = dt_mul(y, y); l = dt_sum(z);
  T_CHECK(l && dt_dtype_of(l) == DT_F32 && dt_autograd_backward(l, NULL) == DT_OK);
  g = dt_grad(x);
  T_CHECK(g && dt_dtype_of(g) == DT_F64 && dt_device_equal(dt_device_of(g), dev));
  v = values(g);
  T_CHECK(v && v[0] == 2 && v[1] == 4 && v[2] == 6);
  free(v);
  dt_release(y); dt_release(z); dt_release(l);
  dt_zero_grad_(x);
  /* to every other device and back: the gradient lands on x's device */
  {
    int k, n = dt_num_gpus();
    for (k = -1; k < n; k++) {
      dt_device o = k < 0 ? dt_cpu() : dt_gpu(k);
      y = dt_copyto(x, o); z = dt_mul_scalar(y, 3.0); l = dt_sum(z);
      T_CHECK(l && dt_device_equal(dt_device_of(l), o) && dt_autograd_backward(l, NULL) == DT_OK);
      dt_release(y); dt_release(z); dt_release(l);
      y = dt_to(x, o); z = dt_sum(y);
      T_CHECK(z && dt_autograd_backward(z, NULL) == DT_OK);
      dt_release(y); dt_release(z);
    }
    g = dt_grad(x);
    T_CHECK(g && dt_device_equal(dt_device_of(g), dev));
    v = values(g);
    T_CHECK(v && v[0] == 4 * (n + 1) && v[2] == 4 * (n + 1));
    free(v);
  }
  dt_release(x);
}

/* what is refused, each with a message naming the function, and nothing changed */
static void test_refusals(dt_device dev) {
  static const double xv[3] = {1, 2, 3};
  dt_tensor *x = f64(xv, dt_shape1(3), dev), *i = dt_zeros(dt_shape1(3), dev), *y, *z, *l, *g0, *bad;
  dt_tensor *li = dt_cast(i, DT_I64);
  double *v;
  int prev;
  T_CHECK(dt_requires_grad_(li, 1) == DT_ERR_DTYPE && contains(dt_last_error(), "dt_requires_grad_: t is int64"));
  T_CHECK(dt_requires_grad_(NULL, 1) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_requires_grad_: t is NULL"));
  dt_requires_grad_(x, 1);
  y = dt_exp(x);
  T_CHECK(dt_requires_grad_(y, 0) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "not a leaf") && dt_requires_grad(y));
  /* out that does not require grad; a non-scalar out without grad_out; a bad grad_out */
  T_CHECK(dt_autograd_backward(i, NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_autograd_backward: out does not require grad"));
  T_CHECK(dt_autograd_backward(y, NULL) == DT_ERR_SHAPE && contains(dt_last_error(), "(3,) (3 elements)"));
  bad = dt_ones(dt_shape1(2), dev);
  T_CHECK(dt_autograd_backward(y, bad) == DT_ERR_SHAPE && contains(dt_last_error(), "grad_out has shape (2,) but out has shape (3,)"));
  dt_release(bad);
  bad = dt_ones(dt_shape1(3), dev);
  T_CHECK(dt_autograd_backward(y, bad) == DT_ERR_DTYPE && contains(dt_last_error(), "grad_out is float32 but out is float64"));
  dt_release(bad);
  if (dt_num_gpus() > 0) {
    dt_device o = dev.type == DT_CPU ? dt_gpu(0) : dt_cpu();
    bad = dt_copyto(x, o);
    dt_tensor *bd = dt_detach(bad);
    T_CHECK(dt_autograd_backward(y, bd) == DT_ERR_DEVICE_MISMATCH && contains(dt_last_error(), "grad_out is on"));
    dt_release(bd); dt_release(bad);
  }
  T_CHECK(dt_grad(x) == NULL);
  /* a second backward through the same graph */
  l = dt_sum(y);
  T_CHECK(dt_autograd_backward(l, NULL) == DT_OK && dt_grad(x));
  g0 = dt_grad(x);
  T_CHECK(dt_autograd_backward(l, NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "second time") && dt_grad(x) == g0);
  z = dt_mul_scalar(y, 2.0); /* y's node already walked */
  dt_release(l);
  l = dt_sum(z);
  T_CHECK(dt_autograd_backward(l, NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_exp") && dt_grad(x) == g0);
  dt_release(l); dt_release(z); dt_release(y);
  /* a saved tensor changed in place: refused, naming the operation; nothing changed */
  v = values(g0);
  {
    static const double ones[3] = {1, 1, 1};
    dt_tensor *c = f64(ones, dt_shape1(3), dev), *cd;
    y = dt_mul(x, c); l = dt_sum(y);
    T_CHECK(dt_fill_(c, 2.0) == DT_OK);
    T_CHECK(dt_autograd_backward(l, NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_mul saved") && dt_grad(x) == g0);
    dt_release(l); dt_release(y);
    /* through a view or a detached alias as well */
    y = dt_mul(x, c); l = dt_sum(y);
    cd = dt_detach(c);
    T_CHECK(dt_axpy_(cd, 1.0, c) == DT_OK);
    T_CHECK(dt_autograd_backward(l, NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "changed in place"));
    dt_release(l); dt_release(y); dt_release(cd);
    /* the result itself (exp saves it), changed with grad mode off */
    y = dt_exp(x); l = dt_sum(y);
    prev = dt_set_grad_enabled(0);
    T_CHECK(dt_copy_(y, c) == DT_OK);
    dt_set_grad_enabled(prev);
    T_CHECK(dt_autograd_backward(l, NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_exp saved"));
    dt_release(l); dt_release(y); dt_release(c);
  }
  {
    double *v2 = values(dt_grad(x));
    T_CHECK(v && v2 && v[0] == v2[0] && v[2] == v2[2]);
    free(v2);
  }
  free(v);
  /* a leaf that requires grad, changed in place with grad mode on: refused; off: allowed */
  T_CHECK(dt_fill_(x, 0.0) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_fill_: t is a leaf that requires grad"));
  T_CHECK(dt_axpy_(x, 1.0, x) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_axpy_: y is a leaf that requires grad"));
  T_CHECK(dt_copy_(x, x) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_copy_: dst is a leaf that requires grad"));
  y = dt_exp(x);
  T_CHECK(dt_fill_(y, 0.0) == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "dt_fill_: t is a result of recorded operations"));
  dt_release(y);
  prev = dt_set_grad_enabled(0);
  T_CHECK(dt_axpy_(x, -0.5, dt_grad(x)) == DT_OK);
  dt_set_grad_enabled(prev);
  dt_release(x); dt_release(i); dt_release(li);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_gradcheck);
  T_RUN_ALL_DEVICES(test_pytorch);
  T_RUN_ALL_DEVICES(test_accumulate);
  T_RUN_ALL_DEVICES(test_empty);
  T_RUN_ALL_DEVICES(test_memory);
  T_RUN_ALL_DEVICES(test_no_grad);
  T_RUN_ALL_DEVICES(test_cast_and_devices);
  T_RUN_ALL_DEVICES(test_refusals);
  return t_finish();
}
