/* Views and shape helpers, keepdim reductions, scalar forms, one_hot, and the elementwise
   functions beyond arith's (sin, cos, erf, gelu, pow, clamp) on every device: values against
   plain loops or PyTorch's (held literally below), gradients against central differences in
   float64 (the gradcheck of tests/test_autograd.c). */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

#include "values.inc"

/* t (then released) has n values, each within atol + rtol |want| of want (NaN matches NaN) */
static int check_vals(dt_tensor *t, const double *want, int64_t n, double atol, double rtol) {
  double *v = values(t);
  int64_t i;
  int ok = v && dt_numel(t) == n, bad = 0;
  for (i = 0; ok && i < n; i++) {
    int same = (v[i] != v[i] && want[i] != want[i]) || v[i] == want[i] || fabs(v[i] - want[i]) <= atol + rtol * fabs(want[i]);
    if (!same) {
      if (bad++ < 4) printf("  [%lld]: got %.17g, want %.17g\n", (long long)i, v[i], want[i]);
    }
  }
  if (!v) printf("  no values: %s\n", dt_last_error());
  free(v);
  dt_release(t);
  return ok && bad == 0;
}

static dt_tensor *from_d(const double *v, dt_shape s, dt_dtype t, dt_device dev) {
  int64_t n = numel_of(s), i;
  void *h = malloc((size_t)(n + 1) * 8);
  dt_tensor *x;
  for (i = 0; i < n; i++) {
    switch (t) {
      case DT_F32: ((float *)h)[i] = (float)v[i]; break;
      case DT_F64: ((double *)h)[i] = v[i]; break;
      case DT_I32: ((int32_t *)h)[i] = (int32_t)v[i]; break;
      case DT_I64: ((int64_t *)h)[i] = (int64_t)v[i]; break;
      case DT_U8: case DT_BOOL: ((uint8_t *)h)[i] = (uint8_t)v[i]; break;
      default: break; /* float16, bfloat16: tests/test_half.c */
    }
  }
  x = dt_from_data(h, s, t, dev);
  free(h);
  return x;
}

#include "gradcheck.inc"

/* ---- views ---- */

static void test_views(dt_device dev) {
  static const double v[24] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};
  static const int64_t s234[3] = {2, 3, 4}, s64[2] = {6, 4}, s24[1] = {24}, s212[2] = {2, 12}, s1234[4] = {1, 2, 3, 4},
                       s2341[4] = {2, 3, 4, 1}, s2314[4] = {2, 3, 1, 4}, s1[1] = {1}, s11[2] = {1, 1};
  dt_tensor *x = from_d(v, dt_shape3(2, 3, 4), DT_F32, dev), *y, *z, *s0;
  double one = 7;
  T_CHECK(x != NULL);
  if (!x) return;
  y = dt_flatten(x, 0, 1); T_CHECK(shape_is(y, 2, s64)); T_CHECK(y && dt_data_ptr(y) == dt_data_ptr(x)); T_CHECK(check_vals(y, v, 24, 0, 0));
  y = dt_flatten(x, 0, -1); T_CHECK(shape_is(y, 1, s24)); dt_release(y);
  y = dt_flatten(x, -2, 2); T_CHECK(shape_is(y, 2, s212)); dt_release(y);
  y = dt_flatten(x, 1, 1); T_CHECK(shape_is(y, 3, s234)); dt_release(y);
  y = dt_flatten(x, 2, 1); T_CHECK(!y && dt_last_status() == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_flatten"));
  y = dt_flatten(x, 0, 3); T_CHECK(!y && contains(dt_last_error(), "dim 3 out of range"));
  y = dt_unsqueeze(x, 0); T_CHECK(shape_is(y, 4, s1234)); T_CHECK(check_vals(y, v, 24, 0, 0));
  y = dt_unsqueeze(x, -1); T_CHECK(shape_is(y, 4, s2341)); dt_release(y);
  y = dt_unsqueeze(x, 3); T_CHECK(shape_is(y, 4, s2341)); dt_release(y);
  y = dt_unsqueeze(x, -2); T_CHECK(shape_is(y, 4, s2314)); dt_release(y);
  y = dt_unsqueeze(x, 4); T_CHECK(!y && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  y = dt_unsqueeze(x, -5); T_CHECK(!y && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  z = dt_unsqueeze(x, 2);
  y = z ? dt_squeeze(z, 2) : NULL; T_CHECK(shape_is(y, 3, s234)); T_CHECK(check_vals(y, v, 24, 0, 0));
  y = z ? dt_squeeze(z, -2) : NULL; T_CHECK(shape_is(y, 3, s234)); dt_release(y);
  y = z ? dt_squeeze(z, 1) : NULL; T_CHECK(shape_is(y, 4, s2314)); dt_release(y); /* not 1: unchanged */
  y = z ? dt_squeeze(z, 4) : NULL; T_CHECK(!y && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  dt_release(z);
  /* 0-d: flatten gives (1,), unsqueeze (1,), squeeze itself; dims 0 and -1 */
  s0 = from_d(&one, dt_shape0(), DT_F64, dev);
  y = dt_flatten(s0, 0, -1); T_CHECK(shape_is(y, 1, s1)); T_CHECK(check_vals(y, &one, 1, 0, 0));
  y = dt_unsqueeze(s0, -1); T_CHECK(shape_is(y, 1, s1)); dt_release(y);
  y = dt_squeeze(s0, -1); T_CHECK(shape_is(y, 0, NULL)); dt_release(y);
  y = dt_squeeze(s0, 1); T_CHECK(!y);
  z = dt_unsqueeze(s0, 0);
  y = z ? dt_unsqueeze(z, 1) : NULL; T_CHECK(shape_is(y, 2, s11));
  dt_release(z);
  z = y ? dt_squeeze(y, 0) : NULL; T_CHECK(shape_is(z, 1, s1));
  dt_release(y); dt_release(z); dt_release(s0);
  /* every dtype; NULL */
  s0 = dt_arange(0, 6, 1, DT_U8, dev);
  y = s0 ? dt_unsqueeze(s0, 0) : NULL; T_CHECK(y && dt_dtype_of(y) == DT_U8); dt_release(y); dt_release(s0);
  T_CHECK(!dt_flatten(NULL, 0, -1) && contains(dt_last_error(), "dt_flatten: t is NULL"));
  T_CHECK(!dt_unsqueeze(NULL, 0) && !dt_squeeze(NULL, 0));
  dt_release(x);
}

/* ---- keepdim reductions, rsub, scalar comparisons, one_hot ---- */

static void test_reductions_keepdim(dt_device dev) {
  static const double v[6] = {1, 2, 3, 4, 5, 7};
  static const double sum0[3] = {5, 7, 10}, sum1[2] = {6, 16}, mean0[3] = {2.5, 3.5, 5}, mean1[2] = {2, 16.0 / 3};
  static const int64_t s13[2] = {1, 3}, s21[2] = {2, 1}, s3[1] = {3}, s2[1] = {2}, s0e[2] = {0, 3}, s3e[1] = {3};
  int t;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_F64 : DT_F32;
    dt_tensor *x = from_d(v, dt_shape2(2, 3), dt, dev), *y, *e;
    double nan3[3];
    y = dt_sum_dim_ex(x, 0, 1); T_CHECK(shape_is(y, 2, s13)); T_CHECK(check_vals(y, sum0, 3, 0, 0));
    y = dt_sum_dim_ex(x, -1, 1); T_CHECK(shape_is(y, 2, s21)); T_CHECK(check_vals(y, sum1, 2, 0, 0));
    y = dt_sum_dim_ex(x, 0, 0); T_CHECK(shape_is(y, 1, s3)); T_CHECK(check_vals(y, sum0, 3, 0, 0));
    y = dt_mean_dim(x, 0, 0); T_CHECK(shape_is(y, 1, s3)); T_CHECK(y && dt_dtype_of(y) == dt); T_CHECK(check_vals(y, mean0, 3, 0, 0));
    y = dt_mean_dim(x, 1, 1); T_CHECK(shape_is(y, 2, s21)); T_CHECK(check_vals(y, mean1, 2, 1e-7, 1e-7));
    y = dt_mean_dim(x, -1, 0); T_CHECK(shape_is(y, 1, s2)); dt_release(y);
    y = dt_mean_dim(x, 2, 0); T_CHECK(!y && dt_last_status() == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_mean_dim"));
    /* an empty dim: sum 0, mean NaN (as torch) */
    e = dt_empty(dt_shape2(0, 3), dt, dev);
    nan3[0] = nan3[1] = nan3[2] = NAN;
    y = e ? dt_mean_dim(e, 0, 0) : NULL; T_CHECK(shape_is(y, 1, s3e)); T_CHECK(check_vals(y, nan3, 3, 0, 0));
    y = e ? dt_sum_dim_ex(e, 1, 1) : NULL; { static const int64_t s01[2] = {0, 1}; T_CHECK(shape_is(y, 2, s01)); } dt_release(y);
    y = e ? dt_mean_dim(e, 1, 0) : NULL; T_CHECK(y && dt_numel(y) == 0); dt_release(y);
    (void)s0e;
    dt_release(e);
    dt_release(x);
  }
  { /* a 0-d tensor over dim 0 or -1: torch.sum(x, 0) and torch.mean(x, 0) are its value in a new
       tensor (filling the result leaves x as it was); the gradient passes through */
    static const double v0 = 2.5;
    int k;
    for (k = 0; k < 5; k++) {
      dt_tensor *x = from_d(&v0, dt_shape0(), DT_F32, dev), *y;
      T_CHECK(x && dt_requires_grad_(x, 1) == DT_OK);
      y = k == 0 ? dt_sum_dim(x, 0) : k == 1 ? dt_sum_dim(x, -1) : k == 2 ? dt_sum_dim_ex(x, 0, 1) : k == 3 ? dt_sum_dim_ex(x, -1, 0)
                 : dt_mean_dim(x, 0, 1);
      T_CHECK_MSG(y && dt_ndim(y) == 0 && dt_item(y) == 2.5, "case %d: %s", k, dt_last_error());
      T_CHECK(y && dt_autograd_backward(y, NULL) == DT_OK && dt_grad(x) && dt_item(dt_grad(x)) == 1.0);
      dt_release(y);
      y = k == 0 ? dt_sum_dim(x, 0) : k == 1 ? dt_sum_dim(x, -1) : k == 2 ? dt_sum_dim_ex(x, 0, 1) : k == 3 ? dt_sum_dim_ex(x, -1, 0)
                 : dt_mean_dim(x, 0, 1);
      {
        int prev = dt_set_grad_enabled(0);
        T_CHECK(y && dt_fill_(y, 5.0) == DT_OK && dt_item(y) == 5.0);
        dt_set_grad_enabled(prev);
      }
      T_CHECK_MSG(dt_item(x) == 2.5, "case %d: x changed by a write to the result", k);
      T_CHECK(!dt_sum_dim(x, 1) && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
      dt_release(y); dt_release(x);
    }
  }
  {
    dt_tensor *i = dt_arange(0, 4, 1, DT_I64, dev);
    T_CHECK(!dt_mean_dim(i, 0, 0) && dt_last_status() == DT_ERR_DTYPE);
    T_CHECK(!dt_sum_dim_ex(i, 0, 0) && dt_last_status() == DT_ERR_DTYPE);
    dt_release(i);
  }
}

static void test_rsub_compare_scalar(dt_device dev) {
  static const double v[5] = {-1.5, 0, 2, 2.5, NAN};
  static const double r[5] = {4.5, 3, 1, 0.5, NAN};
  static const double iv[5] = {-3, 0, 2, 7, 255};
  static const double ir[5] = {8, 5, 3, -2, -250};
  dt_tensor *x = from_d(v, dt_shape1(5), DT_F32, dev), *xi = from_d(iv, dt_shape1(5), DT_I32, dev);
  dt_tensor *xu = from_d(iv + 1, dt_shape1(4), DT_U8, dev);
  T_CHECK(check_vals(dt_rsub_scalar(x, 3.0), r, 5, 0, 0));
  T_CHECK(check_vals(dt_rsub_scalar(xi, 5.0), ir, 5, 0, 0));
  { /* torch.rsub(int32, 0.5) is float32; torch.rsub(uint8, 1) is uint8 and wraps: 1 - [0, 2, 7, 255] */
    static const double fr[5] = {3.5, 0.5, -1.5, -6.5, -254.5}, ur[4] = {1, 255, 250, 2};
    dt_tensor *y = dt_rsub_scalar(xi, 0.5), *yu = dt_rsub_scalar(xu, 1), *xb = dt_cast(xu, DT_BOOL);
    T_CHECK(y && dt_dtype_of(y) == DT_F32 && yu && dt_dtype_of(yu) == DT_U8);
    T_CHECK(check_vals(y, fr, 5, 0, 0));
    T_CHECK(check_vals(yu, ur, 4, 0, 0));
    T_CHECK(!dt_rsub_scalar(xb, 1) && dt_last_status() == DT_ERR_DTYPE && contains(dt_last_error(), "dt_rsub_scalar: subtraction with a bool"));
    dt_release(xb);
  }
  {
    static const double eq[5] = {0, 0, 1, 0, 0}, ne[5] = {1, 1, 0, 1, 1}, lt[5] = {1, 1, 0, 0, 0}, le[5] = {1, 1, 1, 0, 0},
                        gt[5] = {0, 0, 0, 1, 0}, ge[5] = {0, 0, 1, 1, 0};
    dt_tensor *y = dt_eq_scalar(x, 2);
    T_CHECK(y && dt_dtype_of(y) == DT_BOOL);
    T_CHECK(check_vals(y, eq, 5, 0, 0));
    T_CHECK(check_vals(dt_ne_scalar(x, 2), ne, 5, 0, 0));
    T_CHECK(check_vals(dt_lt_scalar(x, 2), lt, 5, 0, 0));
    T_CHECK(check_vals(dt_le_scalar(x, 2), le, 5, 0, 0));
    T_CHECK(check_vals(dt_gt_scalar(x, 2), gt, 5, 0, 0));
    T_CHECK(check_vals(dt_ge_scalar(x, 2), ge, 5, 0, 0));
  }
  { /* integers: whole numbers in the dtype, fractions and out-of-range values as numbers */
    static const double lt25[5] = {1, 1, 1, 0, 0}, gtbig[5] = {0, 0, 0, 0, 0}, eq255[5] = {0, 0, 0, 0, 1}, ge_m3[5] = {1, 1, 1, 1, 1};
    static const double u_gt1[4] = {0, 1, 1, 1}, u_lt300[4] = {1, 1, 1, 1}, u_eqm1[4] = {0, 0, 0, 0};
    T_CHECK(check_vals(dt_lt_scalar(xi, 2.5), lt25, 5, 0, 0));
    T_CHECK(check_vals(dt_gt_scalar(xi, 3e10), gtbig, 5, 0, 0));
    T_CHECK(check_vals(dt_eq_scalar(xi, 255), eq255, 5, 0, 0));
    T_CHECK(check_vals(dt_ge_scalar(xi, -3), ge_m3, 5, 0, 0));
    T_CHECK(check_vals(dt_gt_scalar(xu, 1), u_gt1, 4, 0, 0));
    T_CHECK(check_vals(dt_lt_scalar(xu, 300), u_lt300, 4, 0, 0));
    T_CHECK(check_vals(dt_eq_scalar(xu, -1), u_eqm1, 4, 0, 0));
  }
  { /* bool */
    static const double b[3] = {0, 1, 1}, eq1[3] = {0, 1, 1}, lt05[3] = {1, 0, 0};
    dt_tensor *xb = from_d(b, dt_shape1(3), DT_BOOL, dev);
    T_CHECK(check_vals(dt_eq_scalar(xb, 1), eq1, 3, 0, 0));
    T_CHECK(check_vals(dt_lt_scalar(xb, 0.5), lt05, 3, 0, 0));
    dt_release(xb);
  }
  T_CHECK(!dt_eq_scalar(NULL, 1) && contains(dt_last_error(), "dt_eq_scalar: t is NULL"));
  dt_release(x); dt_release(xi); dt_release(xu);
}

static void test_one_hot(dt_device dev) {
  static const double lab[4] = {2, 0, 1, 2};
  static const double oh[12] = {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  static const double oh4[16] = {0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
  static const int64_t s223[3] = {2, 2, 3}, s43[2] = {4, 3}, s05[2] = {0, 5};
  dt_tensor *l = from_d(lab, dt_shape1(4), DT_I64, dev), *l2 = from_d(lab, dt_shape2(2, 2), DT_I64, dev), *y, *bad;
  double neg = -1;
  y = dt_one_hot(l, -1); T_CHECK(shape_is(y, 2, s43)); T_CHECK(y && dt_dtype_of(y) == DT_I64); T_CHECK(check_vals(y, oh, 12, 0, 0));
  T_CHECK(check_vals(dt_one_hot(l, 4), oh4, 16, 0, 0));
  y = dt_one_hot(l2, 3); T_CHECK(shape_is(y, 3, s223)); T_CHECK(check_vals(y, oh, 12, 0, 0));
  T_CHECK(!dt_one_hot(l, 2) && dt_last_status() == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "num_classes is 2"));
  bad = from_d(&neg, dt_shape1(1), DT_I64, dev);
  T_CHECK(!dt_one_hot(bad, 3) && contains(dt_last_error(), "at least 0"));
  dt_release(bad);
  bad = dt_empty(dt_shape1(0), DT_I64, dev);
  T_CHECK(!dt_one_hot(bad, -1) && contains(dt_last_error(), "empty"));
  y = bad ? dt_one_hot(bad, 5) : NULL; T_CHECK(shape_is(y, 2, s05)); dt_release(y);
  dt_release(bad);
  bad = from_d(lab, dt_shape1(4), DT_I32, dev);
  T_CHECK(!dt_one_hot(bad, 3) && dt_last_status() == DT_ERR_DTYPE);
  dt_release(bad);
  T_CHECK(!dt_one_hot(l, -2) && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  dt_release(l); dt_release(l2);
}

/* ---- elementwise functions against PyTorch ---- */

/* Reference values from PyTorch 2 in float64 (generated once with
     x = torch.tensor(X, dtype=torch.float64)
     torch.sin(x), torch.cos(x), torch.erf(x), F.gelu(x), torch.pow(x, 2.5), torch.pow(x, 3),
     torch.pow(x, -1.0), torch.clamp(x, -1.0, 2.0)
   and held here). float64 results must match within 1e-15 + 1e-13 |ref|; float32 within
   2e-6 + 2e-6 |ref| of the same float64 values (torch's float32 results are as close); a GPU's
   within the same of the CPU's. */
static const double X12[12] = {-3.5, -2.0, -1.0, -0.5, -0.1, 0.0, 0.3, 1.0, 1.7, 2.5, 4.0, 10.0};
static const double REF_SIN[12] = {0.35078322768961984, -0.9092974268256817, -0.8414709848078965, -0.479425538604203, -0.09983341664682815, 0.0, 0.29552020666133955, 0.8414709848078965, 0.9916648104524686, 0.5984721441039564, -0.7568024953079282, -0.5440211108893698};
static const double REF_COS[12] = {-0.9364566872907963, -0.4161468365471424, 0.5403023058681398, 0.8775825618903728, 0.9950041652780257, 1.0, 0.955336489125606, 0.5403023058681398, -0.12884449429552464, -0.8011436155469337, -0.6536436208636119, -0.8390715290764524};
static const double REF_ERF[12] = {-0.9999992569016276, -0.9953222650189527, -0.8427007929497149, -0.5204998778130465, -0.1124629160182849, 0.0, 0.3286267594591274, 0.8427007929497149, 0.9837904585907745, 0.999593047982555, 0.9999999845827421, 1.0};
static const double REF_GELU[12] = {-0.0008142017766243903, -0.04550026389635842, -0.15865525393145702, -0.15426876936299344, -0.0460172162722971, 0.0, 0.1853734266566858, 0.841344746068543, 1.6242387133104768, 2.4844758366855597, 3.9998733150326675, 10.0};
static const double REF_POW25[12] = {NAN, NAN, NAN, NAN, NAN, 0.0, 0.049295030175464945, 1.0, 3.7680989902071307, 9.882117688026186, 32.0, 316.22776601683796};
static const double REF_POW3[12] = {-42.875, -8.0, -1.0, -0.125, -0.0010000000000000002, 0.0, 0.027, 1.0, 4.912999999999999, 15.625, 64.0, 1000.0};
static const double REF_POWM1[12] = {-0.2857142857142857, -0.5, -1.0, -2.0, -10.0, INFINITY, 3.3333333333333335, 1.0, 0.5882352941176471, 0.4, 0.25, 0.1};
static const double REF_CLAMP[12] = {-1.0, -1.0, -1.0, -0.5, -0.1, 0.0, 0.3, 1.0, 1.7, 2.0, 2.0, 2.0};

enum { K_SIN, K_COS, K_ERF, K_GELU, K_POW25, K_POW3, K_POWM1, K_CLAMP, K_COUNT };
static dt_tensor *apply_k(int k, const dt_tensor *x) {
  switch (k) {
    case K_SIN: return dt_sin(x);
    case K_COS: return dt_cos(x);
    case K_ERF: return dt_erf(x);
    case K_GELU: return dt_gelu(x);
    case K_POW25: return dt_pow_scalar(x, 2.5);
    case K_POW3: return dt_pow_scalar(x, 3);
    case K_POWM1: return dt_pow_scalar(x, -1);
    default: return dt_clamp(x, -1.0, 2.0);
  }
}

static void test_unary_torch(dt_device dev) {
  static const double *const ref[K_COUNT] = {REF_SIN, REF_COS, REF_ERF, REF_GELU, REF_POW25, REF_POW3, REF_POWM1, REF_CLAMP};
  static const char *const name[K_COUNT] = {"sin", "cos", "erf", "gelu", "pow 2.5", "pow 3", "pow -1", "clamp"};
  int t, k;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_F64 : DT_F32;
    double tol = t ? 1e-13 : 2e-6, atol = t ? 1e-15 : 2e-6;
    dt_tensor *x = from_d(X12, dt_shape1(12), dt, dev), *xc = from_d(X12, dt_shape1(12), dt, dt_cpu());
    for (k = 0; k < K_COUNT; k++) {
      dt_tensor *y = apply_k(k, x);
      T_CHECK_MSG(y && dt_dtype_of(y) == dt && dt_device_equal(dt_device_of(y), dev), "%s: %s", name[k], dt_last_error());
      if (dev.type != DT_CPU && y) { /* the GPU's within tolerance of the CPU's */
        dt_tensor *yc = apply_k(k, xc);
        double *c = values(yc);
        dt_release(yc);
        if (c) T_CHECK_MSG(check_vals(dt_retain(y), c, 12, atol, tol), "%s %s: GPU against CPU", name[k], dt_dtype_name(dt));
        free(c);
      }
      T_CHECK_MSG(check_vals(y, ref[k], 12, atol, tol), "%s %s", name[k], dt_dtype_name(dt));
    }
    dt_release(x); dt_release(xc);
  }
}

/* A scale keeps the sign of a zero, as PyTorch's x * s: x = [-0, -1, 3, 0] times 2, 0 and -0 gives
   [-0, -2, 6, 0], [-0, -0, 0, 0] and [0, 0, -0, -0]; in place too; and cos's gradient at [0, -0]
   (-sin(x) g) is [-0, 0] (PyTorch 1.13) */
static void test_scale_zero_sign(dt_device dev) {
  static const double x0[4] = {-0.0, -1.0, 3.0, 0.0};
  static const double s[3] = {2.0, 0.0, -0.0};
  static const int neg[3][4] = {{1, 1, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 1}}; /* the sign bits */
  static const dt_dtype dts[4] = {DT_F32, DT_F64, DT_F16, DT_BF16};
  int t, k, i;
  for (t = 0; t < 4; t++)
    for (k = 0; k < 3; k++) {
      dt_tensor *xd = from_d(x0, dt_shape1(4), DT_F64, dev), *x = xd ? dt_cast(xd, dts[t]) : NULL;
      dt_tensor *y = x ? dt_mul_scalar(x, s[k]) : NULL;
      dt_tensor *yf = y ? dt_cast(y, DT_F64) : NULL, *xf;
      double *w = yf ? values(yf) : NULL, *u;
      T_CHECK(w != NULL);
      for (i = 0; w && i < 4; i++)
        T_CHECK_MSG((signbit(w[i]) != 0) == neg[k][i] && fabs(w[i]) == fabs(x0[i] * s[k]), "%s x * %g: element %d is %g",
                    dt_dtype_name(dts[t]), s[k], i, w[i]);
      T_CHECK(x && dt_mul_scalar_(x, s[k]) == DT_OK);
      xf = x ? dt_cast(x, DT_F64) : NULL;
      u = xf ? values(xf) : NULL;
      for (i = 0; u && w && i < 4; i++) T_CHECK((signbit(u[i]) != 0) == neg[k][i]);
      free(w); free(u);
      dt_release(xd); dt_release(x); dt_release(y); dt_release(yf); dt_release(xf);
    }
  {
    static const double z[2] = {0.0, -0.0};
    dt_tensor *x = from_d(z, dt_shape1(2), DT_F32, dev), *y, *l, *g;
    double *w;
    T_CHECK(x && dt_requires_grad_(x, 1) == DT_OK);
    y = x ? dt_cos(x) : NULL;
    l = y ? dt_sum(y) : NULL;
    T_CHECK(l && dt_autograd_backward(l, NULL) == DT_OK);
    g = x ? dt_grad(x) : NULL;
    w = g ? values(g) : NULL;
    T_CHECK(w && w[0] == 0 && signbit(w[0]) && w[1] == 0 && !signbit(w[1]));
    free(w);
    dt_release(l); dt_release(y); dt_release(x);
  }
}

static void test_unary_special(dt_device dev) {
  static const double v[5] = {NAN, 1.0, 5.0, -INFINITY, INFINITY};
  static const double lohi[5] = {NAN, 1.0, 1.0, 1.0, 1.0};           /* clamp(x, 2, 1): hi everywhere, NaN kept */
  static const double nanlo[5] = {NAN, NAN, NAN, NAN, NAN};           /* a NaN bound: NaN, as torch */
  static const double half[5] = {NAN, 1.0, 3.0, -INFINITY, 3.0};      /* clamp(x, -inf, 3) */
  static const double gel[5] = {NAN, 0.841344746068543, 4.999998566742141, NAN, INFINITY};
  /* torch.pow(x, 0.5) and torch.pow(x, -0.5) are sqrt and rsqrt, not the maths library's pow, at
     -inf and -0: x = [-inf, -0.0, 0.0, inf, 4.0] gives [nan, -0.0, 0.0, inf, 2.0] and
     [nan, -inf, inf, 0.0, 0.5] (PyTorch 1.13, float32 and float64) */
  static const double pv[5] = {-INFINITY, -0.0, 0.0, INFINITY, 4.0};
  static const double sq[5] = {NAN, -0.0, 0.0, INFINITY, 2.0};
  static const double rsq[5] = {NAN, -INFINITY, INFINITY, 0.0, 0.5};
  int t;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_F64 : DT_F32;
    dt_tensor *x = from_d(v, dt_shape1(5), dt, dev), *e, *y;
    T_CHECK(check_vals(dt_clamp(x, 2.0, 1.0), lohi, 5, 0, 0));
    T_CHECK(check_vals(dt_clamp(x, NAN, 3.0), nanlo, 5, 0, 0));
    T_CHECK(check_vals(dt_clamp(x, 0.0, NAN), nanlo, 5, 0, 0));
    T_CHECK(check_vals(dt_clamp(x, -INFINITY, 3.0), half, 5, 0, 0));
    /* gelu(-inf) is -inf * 0: NaN, as torch's */
    T_CHECK(check_vals(dt_gelu(x), gel, 5, 1e-6, 1e-6));
    {
      dt_tensor *p = from_d(pv, dt_shape1(5), dt, dev), *r = p ? dt_pow_scalar(p, 0.5) : NULL;
      double *w = r ? values(r) : NULL;
      T_CHECK(w && signbit(w[1]) && !signbit(w[2]));
      free(w);
      T_CHECK(check_vals(r, sq, 5, 0, 0));
      T_CHECK(check_vals(dt_pow_scalar(p, -0.5), rsq, 5, 0, 0));
      dt_release(p);
    }
    e = dt_empty(dt_shape2(0, 4), dt, dev);
    y = e ? dt_sin(e) : NULL; T_CHECK(y && dt_numel(y) == 0); dt_release(y);
    y = e ? dt_clamp(e, 0, 1) : NULL; T_CHECK(y && dt_numel(y) == 0); dt_release(y);
    dt_release(e); dt_release(x);
  }
  { /* float only */
    dt_tensor *i = dt_arange(0, 3, 1, DT_I32, dev);
    T_CHECK(!dt_sin(i) && dt_last_status() == DT_ERR_DTYPE && contains(dt_last_error(), "dt_sin"));
    T_CHECK(!dt_pow_scalar(i, 2) && dt_last_status() == DT_ERR_DTYPE);
    T_CHECK(!dt_clamp(i, 0, 1) && dt_last_status() == DT_ERR_DTYPE && contains(dt_last_error(), "dt_clamp"));
    T_CHECK(!dt_gelu(NULL) && contains(dt_last_error(), "dt_gelu: a is NULL"));
    dt_release(i);
  }
}

/* ---- gradients ---- */

static dt_tensor *f_flatten(dt_tensor *const *x) { return dt_flatten(x[0], 1, 2); }
static dt_tensor *f_unsqueeze(dt_tensor *const *x) { return dt_unsqueeze(x[0], 1); }
static dt_tensor *f_squeeze(dt_tensor *const *x) { return dt_squeeze(x[0], -2); }
static dt_tensor *f_sum_keep(dt_tensor *const *x) { return dt_sum_dim_ex(x[0], 1, 1); }
static dt_tensor *f_mean_dim(dt_tensor *const *x) { return dt_mean_dim(x[0], 0, 0); }
static dt_tensor *f_mean_keep(dt_tensor *const *x) { return dt_mean_dim(x[0], -1, 1); }
static dt_tensor *f_rsub(dt_tensor *const *x) { return dt_rsub_scalar(x[0], 1.25); }
static dt_tensor *f_sin(dt_tensor *const *x) { return dt_sin(x[0]); }
static dt_tensor *f_cos(dt_tensor *const *x) { return dt_cos(x[0]); }
static dt_tensor *f_erf(dt_tensor *const *x) { return dt_erf(x[0]); }
static dt_tensor *f_gelu(dt_tensor *const *x) { return dt_gelu(x[0]); }
static dt_tensor *f_pow(dt_tensor *const *x) { return dt_pow_scalar(x[0], 2.5); }
static dt_tensor *f_pow3(dt_tensor *const *x) { return dt_pow_scalar(x[0], 3); }
static dt_tensor *f_pow0(dt_tensor *const *x) { return dt_pow_scalar(x[0], 0); }
static dt_tensor *f_clamp(dt_tensor *const *x) { return dt_clamp(x[0], -1.0, 0.75); }

static const gc_case CASES[] = {
  {"flatten", f_flatten, 1, {{3, {2, 3, 2}}}, {ANY}},
  {"unsqueeze", f_unsqueeze, 1, {{2, {2, 3}}}, {ANY}},
  {"squeeze", f_squeeze, 1, {{3, {2, 1, 3}}}, {ANY}},
  {"sum_dim_ex keepdim", f_sum_keep, 1, {{3, {2, 3, 2}}}, {ANY}},
  {"mean_dim", f_mean_dim, 1, {{2, {3, 2}}}, {ANY}},
  {"mean_dim keepdim", f_mean_keep, 1, {{3, {2, 2, 3}}}, {ANY}},
  {"rsub_scalar", f_rsub, 1, {{2, {2, 3}}}, {ANY}},
  {"sin", f_sin, 1, {{2, {2, 3}}}, {ANY}},
  {"cos", f_cos, 1, {{2, {2, 3}}}, {ANY}},
  {"erf", f_erf, 1, {{2, {2, 3}}}, {ANY}},
  {"gelu", f_gelu, 1, {{2, {3, 4}}}, {ANY}},
  {"pow_scalar 2.5", f_pow, 1, {{2, {2, 3}}}, {POS}},
  {"pow_scalar 3", f_pow3, 1, {{2, {2, 3}}}, {ANY}},
  {"pow_scalar 0", f_pow0, 1, {{2, {2, 3}}}, {ANY}},
  {"clamp", f_clamp, 1, {{2, {3, 4}}}, {ANY}},
};

static void test_gradcheck(dt_device dev) {
  size_t i;
  for (i = 0; i < sizeof CASES / sizeof CASES[0]; i++) T_CHECK_MSG(gradcheck(dev, &CASES[i]), "%s", CASES[i].name);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_views);
  T_RUN_ALL_DEVICES(test_reductions_keepdim);
  T_RUN_ALL_DEVICES(test_rsub_compare_scalar);
  T_RUN_ALL_DEVICES(test_one_hot);
  T_RUN_ALL_DEVICES(test_unary_torch);
  T_RUN_ALL_DEVICES(test_unary_special);
  T_RUN_ALL_DEVICES(test_scale_zero_sign);
  T_RUN_ALL_DEVICES(test_gradcheck);
  return t_finish();
}
