/* The losses (dt_bce_with_logits, dt_nll_loss, dt_l1_loss, dt_smooth_l1_loss and their _ex forms
   with a reduction, dt_mse_loss_ex) and type promotion in arithmetic, on every device: values and
   gradients against PyTorch 1.13's (held literally below, printed by tests/gen_loss_cases.py),
   gradients against central differences in float64 (tests/gradcheck.inc), the promoted dtypes
   against torch.result_type's. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

#include "values.inc"

/* t has n values, each within atol + rtol |want| of want (NaN matches NaN); t is not released */
static int near(const dt_tensor *t, const double *want, int64_t n, double atol, double rtol) {
  double *v = values(t);
  int64_t i;
  int ok = v && dt_numel(t) == n, bad = 0;
  for (i = 0; ok && i < n; i++) {
    int same = (v[i] != v[i] && want[i] != want[i]) || v[i] == want[i] || fabs(v[i] - want[i]) <= atol + rtol * fabs(want[i]);
    if (!same && bad++ < 4) printf("  [%lld]: got %.17g, want %.17g\n", (long long)i, v[i], want[i]);
  }
  if (!v) printf("  no values: %s\n", dt_last_error());
  free(v);
  return ok && !bad;
}
/* the same, then t released */
static int check_vals(dt_tensor *t, const double *want, int64_t n, double atol, double rtol) {
  int ok = near(t, want, n, atol, rtol);
  dt_release(t);
  return ok;
}

static dt_tensor *as(const double *v, dt_shape s, dt_dtype t, dt_device d) {
  dt_tensor *x = f64(v, s, d), *y = x ? dt_cast(x, t) : NULL;
  dt_release(x);
  return y;
}

#include "gradcheck.inc"

/* gen_loss_cases.py */
static const double X[6] = {0.5, -1.25, 3.0, -20.0, 30.0, 0.0};
static const double T[6] = {1.0, 0.0, 0.25, 0.0, 1.0, 0.5};
static const double Y[6] = {0.0, -0.75, 1.5, -19.5, 31.0, 0.0};
static const double W[6] = {1.0, 2.0, -1.0, 0.5, 3.0, 1.5};
static const double LP[12] = {-1.495181898085856, -0.49518189808585605, -1.995181898085856, -3.495181898085856, -2.769494117481594, -5.769494117481594, -0.2694941174815943, -1.7694941174815944, -0.1569712915571766, -3.9069712915571766, -4.656971291557177, -2.1569712915571766};
static const double WN[3] = {2.0, -1.0, 0.5};
static const double bce_none[6] = {0.4740769841801067, 0.25192908134537295, 2.298587351573742, 2.0611536900435727e-09, 9.348077867343381e-14, 0.6931471805599453};
static const double bce_none_ga[6] = {-0.3775406687981454, 0.4454002776506177, -0.7025741268224334, 1.0305768090951019e-09, -2.8044233602031454e-13, 0.0};
static const double bce_none_gb[6] = {-0.5, 2.5, 3.0, 10.0, -90.0, -0.0};
static const double bce_none_f32[6] = {0.4740769863128662, 0.25192904472351074, 2.2985873222351074, 0.0, 0.0, 0.6931471824645996};
static const double bce_mean[1] = {0.6196234332867357};
static const double bce_mean_ga[6] = {-0.0629234447996909, 0.03711668980421814, 0.1170956878037389, 3.4352560303170064e-10, -1.5580129778906365e-14, 0.0};
static const double bce_mean_gb[6] = {-0.08333333333333333, 0.20833333333333334, -0.5, 3.3333333333333335, -5.0, -0.0};
static const double bce_mean_f32[1] = {0.6196234226226807};
static const double bce_sum[1] = {3.7177405997204143};
static const double bce_sum_ga[6] = {-0.3775406687981454, 0.22270013882530884, 0.7025741268224334, 2.0611536181902037e-09, -9.348077867343818e-14, 0.0};
static const double bce_sum_gb[6] = {-0.5, 1.25, -3.0, 20.0, -30.0, -0.0};
static const double bce_sum_f32[1] = {3.717740535736084};
static const double l1_none[6] = {0.5, 0.5, 1.5, 0.5, 1.0, 0.0};
static const double l1_none_ga[6] = {1.0, -2.0, -1.0, -0.5, -3.0, 0.0};
static const double l1_none_gb[6] = {-1.0, 2.0, 1.0, 0.5, 3.0, -0.0};
static const double l1_none_f32[6] = {0.5, 0.5, 1.5, 0.5, 1.0, 0.0};
static const double l1_mean[1] = {0.6666666666666666};
static const double l1_mean_ga[6] = {0.16666666666666666, -0.16666666666666666, 0.16666666666666666, -0.16666666666666666, -0.16666666666666666, 0.0};
static const double l1_mean_gb[6] = {-0.16666666666666666, 0.16666666666666666, -0.16666666666666666, 0.16666666666666666, 0.16666666666666666, -0.0};
static const double l1_mean_f32[1] = {0.6666666865348816};
static const double l1_sum[1] = {4.0};
static const double l1_sum_ga[6] = {1.0, -1.0, 1.0, -1.0, -1.0, 0.0};
static const double l1_sum_gb[6] = {-1.0, 1.0, -1.0, 1.0, 1.0, -0.0};
static const double l1_sum_f32[1] = {4.0};
static const double sl1_none[6] = {0.125, 0.125, 1.0, 0.125, 0.5, 0.0};
static const double sl1_none_ga[6] = {0.5, -1.0, -1.0, -0.25, -3.0, 0.0};
static const double sl1_none_gb[6] = {-0.5, 1.0, 1.0, 0.25, 3.0, 0.0};
static const double sl1_none_f32[6] = {0.125, 0.125, 1.0, 0.125, 0.5, 0.0};
static const double sl1_mean[1] = {0.3125};
static const double sl1_mean_ga[6] = {0.08333333333333333, -0.08333333333333333, 0.16666666666666666, -0.08333333333333333, -0.16666666666666666, 0.0};
static const double sl1_mean_gb[6] = {-0.08333333333333333, 0.08333333333333333, -0.16666666666666666, 0.08333333333333333, 0.16666666666666666, 0.0};
static const double sl1_mean_f32[1] = {0.3125};
static const double sl1_sum[1] = {1.875};
static const double sl1_sum_ga[6] = {0.5, -0.5, 1.0, -0.5, -1.0, 0.0};
static const double sl1_sum_gb[6] = {-0.5, 0.5, -1.0, 0.5, 1.0, 0.0};
static const double sl1_sum_f32[1] = {1.875};
static const double sl1b_none[6] = {0.16666666666666666, 0.16666666666666666, 1.125, 0.16666666666666666, 0.625, 0.0};
static const double sl1b_none_ga[6] = {0.6666666666666666, -1.3333333333333333, -1.0, -0.3333333333333333, -3.0, 0.0};
static const double sl1b_none_gb[6] = {-0.6666666666666666, 1.3333333333333333, 1.0, 0.3333333333333333, 3.0, 0.0};
static const double sl1b_none_f32[6] = {0.1666666716337204, 0.1666666716337204, 1.125, 0.1666666716337204, 0.625, 0.0};
static const double sl1b_mean[1] = {0.37499999999999994};
static const double sl1b_mean_ga[6] = {0.1111111111111111, -0.1111111111111111, 0.16666666666666666, -0.1111111111111111, -0.16666666666666666, 0.0};
static const double sl1b_mean_gb[6] = {-0.1111111111111111, 0.1111111111111111, -0.16666666666666666, 0.1111111111111111, 0.16666666666666666, 0.0};
static const double sl1b_mean_f32[1] = {0.3750000298023224};
static const double sl1b_sum[1] = {2.2499999999999996};
static const double sl1b_sum_ga[6] = {0.6666666666666666, -0.6666666666666666, 1.0, -0.6666666666666666, -1.0, 0.0};
static const double sl1b_sum_gb[6] = {-0.6666666666666666, 0.6666666666666666, -1.0, 0.6666666666666666, 1.0, 0.0};
static const double sl1b_sum_f32[1] = {2.250000238418579};
static const double mse_none[6] = {0.25, 0.25, 2.25, 0.25, 1.0, 0.0};
static const double mse_none_ga[6] = {1.0, -2.0, -3.0, -0.5, -6.0, 0.0};
static const double mse_none_gb[6] = {-1.0, 2.0, 3.0, 0.5, 6.0, 0.0};
static const double mse_none_f32[6] = {0.25, 0.25, 2.25, 0.25, 1.0, 0.0};
static const double mse_mean[1] = {0.6666666666666666};
static const double mse_mean_ga[6] = {0.16666666666666666, -0.16666666666666666, 0.5, -0.16666666666666666, -0.3333333333333333, 0.0};
static const double mse_mean_gb[6] = {-0.16666666666666666, 0.16666666666666666, -0.5, 0.16666666666666666, 0.3333333333333333, 0.0};
static const double mse_mean_f32[1] = {0.6666666865348816};
static const double mse_sum[1] = {4.0};
static const double mse_sum_ga[6] = {1.0, -1.0, 3.0, -1.0, -2.0, 0.0};
static const double mse_sum_gb[6] = {-1.0, 1.0, -3.0, 1.0, 2.0, 0.0};
static const double mse_sum_f32[1] = {4.0};
static const double nll_none[3] = {0.49518189808585605, 2.769494117481594, 2.1569712915571766};
static const double nll_none_ga[12] = {0.0, -2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.5};
static const double nll_mean[1] = {1.8072157690415425};
static const double nll_mean_ga[12] = {0.0, -0.3333333333333333, 0.0, 0.0, -0.3333333333333333, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.3333333333333333};
static const double nll_sum[1] = {5.421647307124627};
static const double nll_sum_ga[12] = {0.0, -1.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0};
/* empty: bce mean nan sum 0.0; nll mean nan sum 0.0 */
static const int promote[6][6] = {
  {DT_F32, DT_F64, DT_F32, DT_F32, DT_F32, DT_F32},
  {DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64},
  {DT_F32, DT_F64, DT_I32, DT_I64, DT_I32, DT_I32},
  {DT_F32, DT_F64, DT_I64, DT_I64, DT_I64, DT_I64},
  {DT_F32, DT_F64, DT_I32, DT_I64, DT_U8, DT_U8},
  {DT_F32, DT_F64, DT_I32, DT_I64, DT_U8, DT_BOOL},
};
static const int promote_0d[6][6] = {
  {DT_F32, DT_F32, DT_F32, DT_F32, DT_F32, DT_F32},
  {DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64},
  {DT_F32, DT_F64, DT_I32, DT_I32, DT_I32, DT_I32},
  {DT_F32, DT_F64, DT_I64, DT_I64, DT_I64, DT_I64},
  {DT_F32, DT_F64, DT_U8, DT_U8, DT_U8, DT_U8},
  {DT_F32, DT_F64, DT_I32, DT_I64, DT_U8, DT_BOOL},
};
static const int promote_div[6][6] = {
  {DT_F32, DT_F64, DT_F32, DT_F32, DT_F32, DT_F32},
  {DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F64},
  {DT_F32, DT_F64, DT_F32, DT_F32, DT_F32, DT_F32},
  {DT_F32, DT_F64, DT_F32, DT_F32, DT_F32, DT_F32},
  {DT_F32, DT_F64, DT_F32, DT_F32, DT_F32, DT_F32},
  {DT_F32, DT_F64, DT_F32, DT_F32, DT_F32, DT_F32},
};
static const double v_i32_div_i64[3] = {3.5, -3.5, INFINITY};
static const double v_u8_add[3] = {44.0, 8.0, 0.0};
static const double v_u8_mul[3] = {32.0, 15.0, 0.0};
static const double v_b_add[3] = {1.0, 1.0, 1.0};
static const double v_b_mul[3] = {1.0, 0.0, 0.0};
static const double v_i32_adds[3] = {7.5, -6.5, 3.5};
static const double v_u8_muls[3] = {88.0, 9.0, 0.0};
static const double v_b_adds[3] = {3.0, 2.0, 3.0};
static const double v_i32_sub_f64[3] = {6.5, -8.5, 5.0};
static const double v_u8_sub_i32[3] = {193.0, 10.0, -3.0};
static const double v_b_mul_f64[3] = {0.5, 0.0, -2.0};
static const double g_mixed[3] = {2.5, 2.1666667461395264, -2.5};
/* g_mixed dtype torch.float32 */

/* ---- the losses against PyTorch ---- */

typedef dt_tensor *(*loss_ex)(const dt_tensor *, const dt_tensor *, double beta, dt_reduction r);
static dt_tensor *bce_ex(const dt_tensor *a, const dt_tensor *b, double beta, dt_reduction r) { (void)beta; return dt_bce_with_logits_ex(a, b, r); }
static dt_tensor *l1_ex(const dt_tensor *a, const dt_tensor *b, double beta, dt_reduction r) { (void)beta; return dt_l1_loss_ex(a, b, r); }
static dt_tensor *sl1_ex(const dt_tensor *a, const dt_tensor *b, double beta, dt_reduction r) { return dt_smooth_l1_loss_ex(a, b, beta, r); }
static dt_tensor *mse_ex(const dt_tensor *a, const dt_tensor *b, double beta, dt_reduction r) { (void)beta; return dt_mse_loss_ex(a, b, r); }

typedef struct loss_case {
  const char *name;
  loss_ex f;
  double beta;
  const double *b;                   /* the target: T or Y */
  const double *want[3][4];          /* per reduction (none, mean, sum): value, d/dx, d/dtarget, float32 value */
} loss_case;

static void test_loss_values(dt_device dev) {
#define LC(nm, fn, beta, b, p) {nm, fn, beta, b, {{p##_none, p##_none_ga, p##_none_gb, p##_none_f32}, \
                                                 {p##_mean, p##_mean_ga, p##_mean_gb, p##_mean_f32}, \
                                                 {p##_sum, p##_sum_ga, p##_sum_gb, p##_sum_f32}}}
  static const loss_case cases[] = {
    LC("bce_with_logits", bce_ex, 0, T, bce), LC("l1_loss", l1_ex, 0, Y, l1), LC("smooth_l1_loss", sl1_ex, 1.0, Y, sl1),
    LC("smooth_l1_loss beta 0.75", sl1_ex, 0.75, Y, sl1b), LC("mse_loss", mse_ex, 0, Y, mse)};
#undef LC
  size_t c;
  int r;
  dt_shape s = dt_shape2(2, 3);
  for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (r = 0; r < 3; r++) {
      const loss_case *k = &cases[c];
      int64_t n = r == 0 ? 6 : 1;
      dt_tensor *a = f64(X, s, dev), *b = f64(k->b, s, dev), *w = f64(W, s, dev), *y = NULL, *a32 = NULL, *b32 = NULL;
      T_CHECK(a && b && w && dt_requires_grad_(a, 1) == DT_OK && dt_requires_grad_(b, 1) == DT_OK);
      y = k->f(a, b, k->beta, (dt_reduction)r);
      T_CHECK_MSG(y && dt_dtype_of(y) == DT_F64 && dt_ndim(y) == (r == 0 ? 2 : 0), "%s %d: %s", k->name, r, dt_last_error());
      /* the stable form's value is within an ulp of its largest term: 30 + log1p(exp(-30)) - 30 is
         9.24e-14 here, 9.35e-14 exactly */
      T_CHECK_MSG(near(y, k->want[r][0], n, 1e-14, 1e-12), "%s reduction %d: value", k->name, r);
      T_CHECK(y && dt_autograd_backward(y, r == 0 ? w : NULL) == DT_OK);
      T_CHECK_MSG(near(dt_grad(a), k->want[r][1], 6, 1e-15, 1e-12), "%s reduction %d: d/dx", k->name, r);
      T_CHECK_MSG(near(dt_grad(b), k->want[r][2], 6, 1e-15, 1e-12), "%s reduction %d: d/dtarget", k->name, r);
      dt_release(y);
      a32 = dt_cast(a, DT_F32); b32 = dt_cast(b, DT_F32);
      y = a32 && b32 ? k->f(a32, b32, k->beta, (dt_reduction)r) : NULL;
      T_CHECK(y && dt_dtype_of(y) == DT_F32);
      T_CHECK_MSG(check_vals(y, k->want[r][3], n, 1e-6, 1e-6), "%s reduction %d: float32 value", k->name, r);
      dt_release(a); dt_release(b); dt_release(w); dt_release(a32); dt_release(b32);
    }
}

/* the plain forms are the mean; smooth_l1 with beta 0 is l1 */
static void test_loss_defaults(dt_device dev) {
  dt_shape s = dt_shape2(2, 3);
  dt_tensor *a = f64(X, s, dev), *t = f64(T, s, dev), *y = f64(Y, s, dev), *ga, *gb;
  T_CHECK(check_vals(dt_bce_with_logits(a, t), bce_mean, 1, 1e-15, 1e-12));
  T_CHECK(check_vals(dt_l1_loss(a, y), l1_mean, 1, 1e-15, 1e-12));
  T_CHECK(check_vals(dt_smooth_l1_loss(a, y, 1.0), sl1_mean, 1, 1e-15, 1e-12));
  T_CHECK(check_vals(dt_smooth_l1_loss(a, y, 0.0), l1_mean, 1, 1e-15, 1e-12));
  T_CHECK(check_vals(dt_mse_loss_ex(a, y, DT_REDUCTION_MEAN), mse_mean, 1, 1e-15, 1e-12));
  T_CHECK(check_vals(dt_mse_loss(a, y), mse_mean, 1, 1e-15, 1e-12));
  T_CHECK(dt_requires_grad_(a, 1) == DT_OK);
  ga = dt_smooth_l1_loss(a, y, 0.0);
  T_CHECK(ga && dt_autograd_backward(ga, NULL) == DT_OK);
  T_CHECK(near(dt_grad(a), l1_mean_ga, 6, 1e-15, 1e-12));
  dt_release(ga);
  /* the target alone requires grad */
  gb = f64(T, s, dev);
  T_CHECK(dt_requires_grad_(gb, 1) == DT_OK);
  ga = dt_bce_with_logits(y, gb); /* logits Y, so its own numbers: d/dt = -x / n */
  T_CHECK(ga && dt_autograd_backward(ga, NULL) == DT_OK);
  {
    double want[6];
    int i;
    for (i = 0; i < 6; i++) want[i] = -Y[i] / 6.0;
    T_CHECK(near(dt_grad(gb), want, 6, 1e-15, 1e-12));
  }
  dt_release(ga); dt_release(gb);
  dt_release(a); dt_release(t); dt_release(y);
}

static void test_nll_values(dt_device dev) {
  static const int64_t lab[3] = {1, 0, 3};
  static const double *want[3][2] = {{nll_none, nll_none_ga}, {nll_mean, nll_mean_ga}, {nll_sum, nll_sum_ga}};
  dt_tensor *t = dt_from_data(lab, dt_shape1(3), DT_I64, dev), *wn = f64(WN, dt_shape1(3), dev);
  int r;
  for (r = 0; r < 3; r++) {
    dt_tensor *lp = f64(LP, dt_shape2(3, 4), dev), *y, *l32;
    T_CHECK(lp && dt_requires_grad_(lp, 1) == DT_OK);
    y = dt_nll_loss_ex(lp, t, (dt_reduction)r);
    T_CHECK_MSG(y && dt_ndim(y) == (r == 0 ? 1 : 0), "%d: %s", r, dt_last_error());
    T_CHECK(near(y, want[r][0], r == 0 ? 3 : 1, 1e-15, 1e-12));
    T_CHECK(y && dt_autograd_backward(y, r == 0 ? wn : NULL) == DT_OK);
    T_CHECK_MSG(near(dt_grad(lp), want[r][1], 12, 1e-15, 1e-12), "nll reduction %d: d/dlog_probs", r);
    dt_release(y);
    l32 = dt_cast(lp, DT_F32);
    T_CHECK(check_vals(l32 ? dt_nll_loss_ex(l32, t, (dt_reduction)r) : NULL, want[r][0], r == 0 ? 3 : 1, 1e-6, 1e-6));
    dt_release(l32); dt_release(lp);
  }
  {
    dt_tensor *lp = f64(LP, dt_shape2(3, 4), dev);
    T_CHECK(check_vals(dt_nll_loss(lp, t), nll_mean, 1, 1e-15, 1e-12));
    dt_release(lp);
  }
  dt_release(t); dt_release(wn);
}

/* an empty batch: the mean is NaN, the sum 0, 'none' empty, as PyTorch's; the gradient is empty */
static void test_loss_empty(dt_device dev) {
  dt_tensor *e = dt_empty(dt_shape2(0, 3), DT_F32, dev), *lab = dt_empty(dt_shape1(0), DT_I64, dev), *y;
  double v;
  T_CHECK(e && lab && dt_requires_grad_(e, 1) == DT_OK);
  y = dt_bce_with_logits(e, e);
  v = y ? dt_item(y) : 0;
  T_CHECK(y && dt_ndim(y) == 0 && v != v);
  T_CHECK(y && dt_autograd_backward(y, NULL) == DT_OK && dt_grad(e) && dt_numel(dt_grad(e)) == 0);
  dt_release(y);
  y = dt_nll_loss(e, lab);
  v = y ? dt_item(y) : 0;
  T_CHECK(y && dt_ndim(y) == 0 && v != v);
  T_CHECK(y && dt_autograd_backward(y, NULL) == DT_OK);
  dt_release(y);
  y = dt_nll_loss_ex(e, lab, DT_REDUCTION_SUM);
  T_CHECK(y && dt_item(y) == 0);
  dt_release(y);
  y = dt_l1_loss_ex(e, e, DT_REDUCTION_SUM);
  T_CHECK(y && dt_item(y) == 0);
  dt_release(y);
  y = dt_smooth_l1_loss_ex(e, e, 1.0, DT_REDUCTION_NONE);
  T_CHECK(y && dt_numel(y) == 0 && dt_ndim(y) == 2);
  dt_release(y);
  y = dt_nll_loss_ex(e, lab, DT_REDUCTION_NONE);
  T_CHECK(y && dt_numel(y) == 0 && dt_ndim(y) == 1);
  dt_release(y);
  dt_release(e); dt_release(lab);
}

/* stable for any logit, in float32 too: no inf or NaN from exp's overflow */
static void test_bce_extremes(dt_device dev) {
  static const double x[4] = {100, -100, 1000, -1000}, t[4] = {0, 1, 1, 0}, want[4] = {100, 100, 0, 0};
  int f;
  for (f = 0; f < 2; f++) {
    dt_dtype dt = f ? DT_F64 : DT_F32;
    dt_tensor *a = as(x, dt_shape1(4), dt, dev), *b = as(t, dt_shape1(4), dt, dev);
    T_CHECK(check_vals(dt_bce_with_logits_ex(a, b, DT_REDUCTION_NONE), want, 4, 1e-6, 1e-6));
    dt_release(a); dt_release(b);
  }
}

/* cross-entropy's gradient on confident rows: the label entry (softmax - 1) / n is about -3.4e-7 / 2,
   a difference of two numbers near 1, which 1 / sum(exp) rounded to float would leave with only a
   few correct digits; computed in double and rounded once it keeps float's */
static void test_xent_grad_confident(dt_device dev) {
  static const double x[8] = {16, 0, 0, 0, 0, 0, 16, 0};
  static const int64_t lab[2] = {0, 2};
  const double e = exp(-16.0), p = 1.0 / (1.0 + 3.0 * e), q = e / (1.0 + 3.0 * e);
  const double want[8] = {(p - 1) / 2, q / 2, q / 2, q / 2, q / 2, q / 2, (p - 1) / 2, q / 2};
  int f;
  for (f = 0; f < 2; f++) {
    dt_dtype dt = f ? DT_F64 : DT_F32;
    dt_tensor *a = as(x, dt_shape2(2, 4), dt, dev), *t = dt_from_data(lab, dt_shape1(2), DT_I64, dev);
    T_CHECK_MSG(check_vals(dt_cross_entropy_grad(a, t), want, 8, 0, f ? 1e-12 : 1e-5), "%s", dt_dtype_name(dt));
    dt_release(a); dt_release(t);
  }
}

/* out-of-range labels: refused on the CPU before anything runs; on a GPU reported by the next
   synchronizing call, naming dt_nll_loss, as dt_cross_entropy's */
static void test_nll_bad_labels(dt_device dev) {
  static const int64_t lab[3] = {1, 4, 0};
  dt_tensor *lp = f64(LP, dt_shape2(3, 4), dev), *t = dt_from_data(lab, dt_shape1(3), DT_I64, dev), *y;
  y = dt_nll_loss(lp, t);
  if (dev.type == DT_CPU) {
    T_CHECK(!y && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
    T_CHECK_MSG(contains(dt_last_error(), "dt_nll_loss: target[1] = 4 is out of range for 4 classes"), "%s", dt_last_error());
  } else {
    T_CHECK(y != NULL);
    T_CHECK(dt_synchronize(dev) == DT_ERR_INVALID_ARGUMENT);
    T_CHECK_MSG(contains(dt_last_error(), "dt_nll_loss") && contains(dt_last_error(), "target[1] = 4"), "%s", dt_last_error());
    T_CHECK(dt_synchronize(dev) == DT_OK); /* reported once */
  }
  dt_release(y); dt_release(lp); dt_release(t);
}

/* ---- float64 gradients against central differences ---- */

static dt_tensor *gc_bce(dt_tensor *const *x) { return dt_bce_with_logits(x[0], x[1]); }
static dt_tensor *gc_bce_none(dt_tensor *const *x) { return dt_bce_with_logits_ex(x[0], x[1], DT_REDUCTION_NONE); }
static dt_tensor *gc_l1(dt_tensor *const *x) { return dt_l1_loss_ex(x[0], x[1], DT_REDUCTION_SUM); }
static dt_tensor *gc_sl1(dt_tensor *const *x) { return dt_smooth_l1_loss(x[0], x[1], 2.0); } /* |d| 1.1 and 3.0: both branches */
static dt_tensor *gc_sl1_none(dt_tensor *const *x) { return dt_smooth_l1_loss_ex(x[0], x[1], 2.0, DT_REDUCTION_NONE); }
static dt_tensor *gc_mse(dt_tensor *const *x) { return dt_mse_loss_ex(x[0], x[1], DT_REDUCTION_SUM); }
static dt_tensor *gc_nll_r(dt_tensor *const *x, dt_reduction r) {
  static const int64_t lab[5] = {2, 0, 3, 3, 1};
  dt_tensor *t = dt_from_data(lab, dt_shape1(5), DT_I64, dt_device_of(x[0])), *lp = t ? dt_log_softmax(x[0], 1) : NULL, *y;
  y = lp ? dt_nll_loss_ex(lp, t, r) : NULL;
  dt_release(t); dt_release(lp);
  return y;
}
static dt_tensor *gc_nll(dt_tensor *const *x) { return gc_nll_r(x, DT_REDUCTION_MEAN); }
static dt_tensor *gc_nll_none(dt_tensor *const *x) { return gc_nll_r(x, DT_REDUCTION_NONE); }
static dt_tensor *gc_nll_sum(dt_tensor *const *x) { return gc_nll_r(x, DT_REDUCTION_SUM); }

static void test_gradcheck(dt_device dev) {
  static const gc_case cases[] = {
    {"bce_with_logits", gc_bce, 2, {{2, {3, 4}}, {2, {3, 4}}}, {ANY, ANY}},
    {"bce_with_logits none", gc_bce_none, 2, {{1, {7}}, {1, {7}}}, {ANY, ANY}},
    {"l1_loss sum", gc_l1, 2, {{2, {3, 4}}, {2, {3, 4}}}, {ANY, ANY}},
    {"smooth_l1_loss", gc_sl1, 2, {{2, {3, 4}}, {2, {3, 4}}}, {ANY, ANY}},
    {"smooth_l1_loss none", gc_sl1_none, 2, {{1, {9}}, {1, {9}}}, {ANY, ANY}},
    {"mse_loss sum", gc_mse, 2, {{2, {2, 5}}, {2, {2, 5}}}, {ANY, ANY}},
    {"nll_loss", gc_nll, 1, {{2, {5, 4}}}, {ANY}},
    {"nll_loss none", gc_nll_none, 1, {{2, {5, 4}}}, {ANY}},
    {"nll_loss sum", gc_nll_sum, 1, {{2, {5, 4}}}, {ANY}},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) T_CHECK_MSG(gradcheck(dev, &cases[i]), "%s", cases[i].name);
}

/* ---- type promotion ---- */

static const dt_dtype all_dtypes[6] = {DT_F32, DT_F64, DT_I32, DT_I64, DT_U8, DT_BOOL};

static void test_promotion_table(dt_device dev) {
  static const double v[2] = {1, 1}, two[2] = {2, 2};
  int i, j, z;
  for (z = 0; z < 2; z++)
    for (i = 0; i < 6; i++)
      for (j = 0; j < 6; j++) {
        dt_tensor *a = as(v, dt_shape1(2), all_dtypes[i], dev), *b = as(v, z ? dt_shape0() : dt_shape1(2), all_dtypes[j], dev);
        dt_tensor *add = dt_add(a, b), *mul = dt_mul(a, b), *sub = dt_sub(a, b), *dv = dt_div(a, b);
        dt_dtype want = (dt_dtype)(z ? promote_0d[i][j] : promote[i][j]);
        int anybool = all_dtypes[i] == DT_BOOL || all_dtypes[j] == DT_BOOL;
        T_CHECK_MSG(add && dt_dtype_of(add) == want && mul && dt_dtype_of(mul) == want, "%s + %s%s: %s", dt_dtype_name(all_dtypes[i]),
                    dt_dtype_name(all_dtypes[j]), z ? " (0-d)" : "", add ? dt_dtype_name(dt_dtype_of(add)) : dt_last_error());
        if (anybool) T_CHECK(!sub && dt_last_status() == DT_ERR_DTYPE); /* as PyTorch */
        else T_CHECK(sub && dt_dtype_of(sub) == want);
        if (!z) T_CHECK_MSG(dv && dt_dtype_of(dv) == (dt_dtype)promote_div[i][j], "%s / %s", dt_dtype_name(all_dtypes[i]), dt_dtype_name(all_dtypes[j]));
        /* the comparisons take the same dtypes and give bool */
        {
          dt_tensor *eq = dt_eq(a, b);
          T_CHECK(eq && dt_dtype_of(eq) == DT_BOOL);
          T_CHECK(check_vals(eq, v, 2, 0, 0));
        }
        T_CHECK(check_vals(add, all_dtypes[i] == DT_BOOL && all_dtypes[j] == DT_BOOL ? v : two, 2, 0, 0)); /* bool + bool: or */
        T_CHECK(check_vals(dv, v, 2, 0, 0));
        dt_release(a); dt_release(b); dt_release(mul); dt_release(sub);
      }
}

static void test_promotion_values(dt_device dev) {
  static const double vi32[3] = {7, -7, 3}, vi64[3] = {2, 2, 0}, vu1[3] = {200, 3, 0}, vu2[3] = {100, 5, 0}, vb1[3] = {1, 0, 1},
                      vb2[3] = {1, 1, 0}, vf[3] = {0.5, 1.5, -2.0};
  dt_shape s = dt_shape1(3);
  dt_tensor *i32 = as(vi32, s, DT_I32, dev), *i64 = as(vi64, s, DT_I64, dev), *u1 = as(vu1, s, DT_U8, dev), *u2 = as(vu2, s, DT_U8, dev);
  dt_tensor *b1 = as(vb1, s, DT_BOOL, dev), *b2 = as(vb2, s, DT_BOOL, dev), *f = f64(vf, s, dev), *y;
  y = dt_div(i32, i64); T_CHECK(y && dt_dtype_of(y) == DT_F32); T_CHECK(check_vals(y, v_i32_div_i64, 3, 0, 0));
  y = dt_add(u1, u2); T_CHECK(y && dt_dtype_of(y) == DT_U8); T_CHECK(check_vals(y, v_u8_add, 3, 0, 0));
  y = dt_mul(u1, u2); T_CHECK(y && dt_dtype_of(y) == DT_U8); T_CHECK(check_vals(y, v_u8_mul, 3, 0, 0));
  y = dt_add(b1, b2); T_CHECK(y && dt_dtype_of(y) == DT_BOOL); T_CHECK(check_vals(y, v_b_add, 3, 0, 0));
  y = dt_mul(b1, b2); T_CHECK(y && dt_dtype_of(y) == DT_BOOL); T_CHECK(check_vals(y, v_b_mul, 3, 0, 0));
  y = dt_add_scalar(i32, 0.5); T_CHECK(y && dt_dtype_of(y) == DT_F32); T_CHECK(check_vals(y, v_i32_adds, 3, 0, 0));
  y = dt_mul_scalar(u1, 3); T_CHECK(y && dt_dtype_of(y) == DT_U8); T_CHECK(check_vals(y, v_u8_muls, 3, 0, 0));
  y = dt_add_scalar(b1, 2); T_CHECK(y && dt_dtype_of(y) == DT_I64); T_CHECK(check_vals(y, v_b_adds, 3, 0, 0));
  y = dt_sub(i32, f); T_CHECK(y && dt_dtype_of(y) == DT_F64); T_CHECK(check_vals(y, v_i32_sub_f64, 3, 0, 0));
  y = dt_sub(u1, i32); T_CHECK(y && dt_dtype_of(y) == DT_I32); T_CHECK(check_vals(y, v_u8_sub_i32, 3, 0, 0));
  y = dt_mul(b1, f); T_CHECK(y && dt_dtype_of(y) == DT_F64); T_CHECK(check_vals(y, v_b_mul_f64, 3, 0, 0));
  y = dt_add_scalar(i64, 1e300); T_CHECK(y && dt_dtype_of(y) == DT_F32); /* not a whole number a double holds exactly: a float */
  dt_release(y);
  y = dt_mul_scalar(i32, NAN); T_CHECK(y && dt_dtype_of(y) == DT_F32);
  dt_release(y);
  y = dt_add_scalar(i32, 2); T_CHECK(y && dt_dtype_of(y) == DT_I32);
  dt_release(y);
  dt_release(i32); dt_release(i64); dt_release(u1); dt_release(u2); dt_release(b1); dt_release(b2); dt_release(f);
}

/* a float32 leaf through float64 arithmetic: its gradient comes back float32, on its device */
static void test_promotion_grad(dt_device dev) {
  static const double va[3] = {1.5, -2.0, 0.25}, vf[3] = {0.5, 1.5, -2.0};
  dt_tensor *a = as(va, dt_shape1(3), DT_F32, dev), *f = f64(vf, dt_shape1(3), dev), *p, *q, *s, *y;
  T_CHECK(a && f && dt_requires_grad_(a, 1) == DT_OK);
  p = dt_mul(a, f); q = dt_div(a, f); s = p && q ? dt_add(p, q) : NULL; y = s ? dt_sum(s) : NULL;
  T_CHECK(y && dt_dtype_of(y) == DT_F64);
  T_CHECK(y && dt_autograd_backward(y, NULL) == DT_OK);
  T_CHECK(dt_grad(a) && dt_dtype_of(dt_grad(a)) == DT_F32 && dt_device_equal(dt_device_of(dt_grad(a)), dev));
  T_CHECK(near(dt_grad(a), g_mixed, 3, 0, 1e-6));
  dt_release(p); dt_release(q); dt_release(s); dt_release(y); dt_release(a); dt_release(f);
  { /* float64 leaves of mixed ops against finite differences: with an int32 operand */
    static const double vi[3] = {2, -3, 5};
    dt_tensor *x = f64(va, dt_shape1(3), dev), *i = as(vi, dt_shape1(3), DT_I32, dev);
    T_CHECK(x && i && dt_requires_grad_(x, 1) == DT_OK);
    p = dt_mul(x, i); q = p ? dt_div(p, i) : NULL; s = q ? dt_sub(i, q) : NULL; y = s ? dt_sum(s) : NULL; /* i - x */
    T_CHECK(y && dt_dtype_of(y) == DT_F64 && dt_autograd_backward(y, NULL) == DT_OK);
    {
      static const double want[3] = {-1, -1, -1};
      T_CHECK(near(dt_grad(x), want, 3, 1e-15, 0));
    }
    dt_release(p); dt_release(q); dt_release(s); dt_release(y); dt_release(x); dt_release(i);
  }
}

int main(void) {
  T_RUN_ALL_DEVICES(test_loss_values);
  T_RUN_ALL_DEVICES(test_loss_defaults);
  T_RUN_ALL_DEVICES(test_nll_values);
  T_RUN_ALL_DEVICES(test_loss_empty);
  T_RUN_ALL_DEVICES(test_bce_extremes);
  T_RUN_ALL_DEVICES(test_xent_grad_confident);
  T_RUN_ALL_DEVICES(test_nll_bad_labels);
  T_RUN_ALL_DEVICES(test_gradcheck);
  T_RUN_ALL_DEVICES(test_promotion_table);
  T_RUN_ALL_DEVICES(test_promotion_values);
  T_RUN_ALL_DEVICES(test_promotion_grad);
  return t_finish();
}
