/* torch.where, gather, scatter_add, F.pad, randperm, randint, and index_select's backward (an
   index-add) on every device: values against PyTorch's (tests/gen_index2_cases.py printed them,
   held literally below) or against plain loops, gradients against central differences in
   float64 (tests/gradcheck.inc). */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

#include "values.inc"

/* t (then released) has n values, each within atol + rtol |want| of want */
static int check_vals(dt_tensor *t, const double *want, int64_t n, double atol, double rtol) {
  double *v = values(t);
  int64_t i;
  int ok = v && dt_numel(t) == n, bad = 0;
  for (i = 0; ok && i < n; i++)
    if (!(v[i] == want[i] || fabs(v[i] - want[i]) <= atol + rtol * fabs(want[i])))
      if (bad++ < 4) printf("  [%lld]: got %.17g, want %.17g\n", (long long)i, v[i], want[i]);
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
      default: ((uint8_t *)h)[i] = (uint8_t)v[i]; break;
    }
  }
  x = dt_from_data(h, s, t, dev);
  free(h);
  return x;
}
static dt_tensor *i64(const int64_t *v, dt_shape s, dt_device d) { return dt_from_data(v, s, DT_I64, d); }

/* the inputs of tests/gen_index2_cases.py: vals(shape, salt) */
static dt_tensor *pv(dt_shape s, int salt, dt_dtype t, dt_device dev) {
  int64_t n = numel_of(s), i;
  double *v = (double *)malloc((size_t)(n + 1) * sizeof(double));
  dt_tensor *x;
  for (i = 0; i < n; i++) v[i] = (double)((i * 7 + salt * 3) % 11) - 5.0 + 0.25 * salt;
  x = from_d(v, s, t, dev);
  free(v);
  return x;
}

#include "gradcheck.inc"

/* PyTorch's values (tests/gen_index2_cases.py) */
static const double where_y[24] = {-1.75, -2.5, -1.75, 5.25, -2.5, 5.25, 1.25, -2.5, 1.25, -2.75, -2.5, -2.75, 1.5, -2.5, -1.75, 1.5, -2.5, 5.25, 1.5, -2.5, 1.25, 1.5, -2.5, -2.75};
static const double where_mix[4] = {1.0, 0.5, 0.5, 4.0};
static const double gather0[8] = {5.75, 0.75, 2.75, -1.25, 4.75, 1.75, -2.25, 3.75};
static const double gather1[6] = {3.75, 4.75, -4.25, -4.25, 5.75, -2.25};
static const double gather3[12] = {-2.0, 4.0, 6.0, 3.0, -1.0, 0.0, 4.0, 1.0, -3.0, 5.0, 6.0, -4.0};
static const double scatter0[12] = {11.0, -3.0, -3.25, 9.0, -0.25, -4.25, 6.0, -2.0, 6.0, 4.0, -4.0, 4.75};
static const double scatter1[12] = {4.25, 0.75, -3.25, 7.25, -0.25, 4.75, 2.75, -1.25, 4.25, 1.75, 3.25, 4.75};
static const double scatter3[24] = {-3.0, 6.75, 4.75, -4.0, 4.75, -3.25, 4.75, 2.0, 4.75, 5.0, 1.0, -3.0, 6.75, 0.0, -3.25, 3.0, -1.0, 10.75, 2.0, -2.0, 2.75, -0.25, 2.75, 4.0};
static const double scatter_i64[6] = {31, 2, 73, 4, 5, 6};
static const double pad_a[12] = {0.5, -1.0, 6.0, 2.0, 0.5, 0.5, 0.5, -2.0, 5.0, 1.0, 0.5, 0.5};
static const double pad_b[20] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 6.0, 2.0, 0.0, 0.0, -2.0, 5.0, 1.0, 0.0};
static const double pad_neg[8] = {7.0, 7.0, 7.0, 7.0, 6.0, 2.0, 7.0, 7.0};
static const double pad_3d[12] = {-1.0, -1.0, -1.0, 5.25, 1.25, -1.0, 0.25, 7.25, -1.0, -1.0, -1.0, -1.0};

/* the index tensors of the cases */
static const int64_t I0[8] = {2, 0, 1, 1, 0, 2, 2, 0};                 /* (2, 4), into (3, 4) along 0 */
static const int64_t I1[6] = {3, 0, 1, 1, 0, 2};                       /* (3, 2), into (3, 4) along -1 */
static const int64_t I3[12] = {2, 0, 1, 1, 1, 0, 0, 2, 2, 2, 1, 0};    /* (2, 2, 3), into (2, 3, 4) along 1 */
static const double COND[6] = {1, 0, 1, 0, 0, 1};                      /* (2, 1, 3) */

/* ---- where ---- */

static void test_where(dt_device dev) {
  static const int64_t s243[3] = {2, 4, 3}, s22[2] = {2, 2}, s03[2] = {0, 3};
  static const double cm[4] = {1, 0, 0, 1}, am[4] = {1, 2, 3, 4}, half = 0.5;
  int t;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_F64 : DT_F32;
    dt_tensor *c = from_d(COND, dt_shape3(2, 1, 3), DT_BOOL, dev), *a = pv(dt_shape2(4, 1), 1, dt, dev), *b = pv(dt_shape1(3), 2, dt, dev), *y;
    y = dt_where(c, a, b);
    T_CHECK(shape_is(y, 3, s243) && dt_dtype_of(y) == dt);
    T_CHECK(check_vals(y, where_y, 24, 0, 0));
    dt_release(c); dt_release(a); dt_release(b);
  }
  { /* int64 a, float32 b: float32, as torch.where promotes */
    dt_tensor *c = from_d(cm, dt_shape2(2, 2), DT_BOOL, dev), *a = from_d(am, dt_shape2(2, 2), DT_I64, dev);
    dt_tensor *b = from_d(&half, dt_shape1(1), DT_F32, dev), *y = dt_where(c, a, b);
    T_CHECK(shape_is(y, 2, s22) && dt_dtype_of(y) == DT_F32);
    T_CHECK(check_vals(y, where_mix, 4, 0, 0));
    /* an empty operand: an empty result of the broadcast shape */
    dt_release(a);
    a = dt_zeros(dt_shape2(0, 3), dev);
    dt_release(c);
    c = from_d(COND, dt_shape1(3), DT_BOOL, dev);
    y = dt_where(c, a, b);
    T_CHECK(shape_is(y, 2, s03));
    dt_release(y); dt_release(c); dt_release(a); dt_release(b);
  }
}

/* ---- gather, scatter_add ---- */

static void test_gather(dt_device dev) {
  static const int64_t s24[2] = {2, 4}, s04[2] = {0, 4}, s223[3] = {2, 2, 3};
  int t;
  for (t = 0; t < 3; t++) {
    dt_dtype dt = t == 0 ? DT_F32 : t == 1 ? DT_F64 : DT_I64;
    dt_tensor *x = pv(dt_shape2(3, 4), 3, DT_F64, dev), *x3 = pv(dt_shape3(2, 3, 4), 4, DT_F64, dev), *xc, *x3c, *y;
    dt_tensor *i0 = i64(I0, dt_shape2(2, 4), dev), *i1 = i64(I1, dt_shape2(3, 2), dev), *i3 = i64(I3, dt_shape3(2, 2, 3), dev);
    xc = dt_cast(x, dt); x3c = dt_cast(x3, dt);
    if (dt == DT_I64) { /* whole numbers: gather moves them unchanged */
      double w[8];
      int k;
      for (k = 0; k < 8; k++) w[k] = (double)(int64_t)gather0[k]; /* dt_cast truncates x's values */
      y = dt_gather(xc, 0, i0);
      T_CHECK(shape_is(y, 2, s24) && dt_dtype_of(y) == DT_I64);
      T_CHECK(check_vals(y, w, 8, 0, 0));
    } else {
      y = dt_gather(xc, 0, i0);
      T_CHECK(shape_is(y, 2, s24) && dt_dtype_of(y) == dt);
      T_CHECK(check_vals(y, gather0, 8, 0, 0));
      T_CHECK(check_vals(dt_gather(xc, -1, i1), gather1, 6, 0, 0));
      y = dt_gather(x3c, 1, i3);
      T_CHECK(shape_is(y, 3, s223));
      T_CHECK(check_vals(y, gather3, 12, 0, 0));
    }
    { /* an empty index: an empty result */
      dt_tensor *ie = dt_empty(dt_shape2(0, 4), DT_I64, dev);
      y = dt_gather(xc, 1, ie);
      T_CHECK(shape_is(y, 2, s04));
      dt_release(y); dt_release(ie);
    }
    dt_release(x); dt_release(x3); dt_release(xc); dt_release(x3c); dt_release(i0); dt_release(i1); dt_release(i3);
  }
  { /* 0-d: one element, index 0 */
    double five = 5;
    int64_t zero = 0;
    dt_tensor *x = f64(&five, dt_shape0(), dev), *i = i64(&zero, dt_shape0(), dev), *y = dt_gather(x, 0, i);
    T_CHECK(y && dt_ndim(y) == 0 && dt_item(y) == 5);
    dt_release(y); dt_release(x); dt_release(i);
  }
}

/* gather's backward in float16 and bfloat16 (scatter_add itself takes neither): the gradient in x's
   dtype, PyTorch's x.grad for x (2, 3), index (2, 4) along dim 1 */
static void test_gather_backward_half(dt_device dev) {
  static const double xv[6] = {1, 2, 3, 4, 5, 6}, gv[8] = {0.5, 1, 0.25, 2, -1, 3, 0.125, -0.5};
  static const double yw[8] = {3, 1, 3, 3, 5, 5, 4, 6}, gw[6] = {1, 0, 2.75, 0.125, 2, -0.5};
  static const int64_t iv[8] = {2, 0, 2, 2, 1, 1, 0, 2};
  int t;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_BF16 : DT_F16;
    dt_tensor *x0 = f64(xv, dt_shape2(2, 3), dev), *g0 = f64(gv, dt_shape2(2, 4), dev), *i = i64(iv, dt_shape2(2, 4), dev);
    dt_tensor *x = dt_cast(x0, dt), *g = dt_cast(g0, dt), *y;
    T_CHECK(x && g && dt_requires_grad_(x, 1) == DT_OK);
    y = dt_gather(x, 1, i);
    T_CHECK(y && dt_dtype_of(y) == dt && check_vals(dt_retain(y), yw, 8, 0, 0));
    T_CHECK_MSG(y && dt_autograd_backward(y, g) == DT_OK, "%s", dt_last_error());
    T_CHECK(dt_grad(x) && dt_dtype_of(dt_grad(x)) == dt && check_vals(dt_retain(dt_grad(x)), gw, 6, 0, 0));
    dt_release(y); dt_release(x); dt_release(g); dt_release(x0); dt_release(g0); dt_release(i);
  }
}

static void test_scatter_add(dt_device dev) {
  static const int64_t s34[2] = {3, 4}, s234[3] = {2, 3, 4};
  static const int64_t il[4] = {0, 0, 2, 2};
  static const double xl[6] = {1, 2, 3, 4, 5, 6}, sl[8] = {10, 20, 30, 40, 50, 60, 70, 80};
  int t;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_F64 : DT_F32;
    dt_tensor *x = pv(dt_shape2(3, 4), 3, dt, dev), *x3 = pv(dt_shape3(2, 3, 4), 4, dt, dev), *y, *xk;
    dt_tensor *i0 = i64(I0, dt_shape2(2, 4), dev), *i1 = i64(I1, dt_shape2(3, 2), dev), *i3 = i64(I3, dt_shape3(2, 2, 3), dev);
    dt_tensor *s0 = pv(dt_shape2(2, 4), 5, dt, dev), *s1 = pv(dt_shape2(3, 2), 6, dt, dev), *s3 = pv(dt_shape3(2, 3, 4), 7, dt, dev);
    double *before = values(x);
    y = dt_scatter_add(x, 0, i0, s0);
    T_CHECK(shape_is(y, 2, s34) && dt_dtype_of(y) == dt);
    T_CHECK(check_vals(y, scatter0, 12, 0, 0));
    T_CHECK(check_vals(dt_retain(x), before, 12, 0, 0)); /* x unchanged */
    T_CHECK(check_vals(dt_scatter_add(x, -1, i1, s1), scatter1, 12, 0, 0));
    y = dt_scatter_add(x3, 1, i3, s3); /* src (2, 3, 4) larger than the index (2, 2, 3): only the index's part adds */
    T_CHECK(shape_is(y, 3, s234));
    T_CHECK(check_vals(y, scatter3, 24, 0, 0));
    /* in place */
    xk = dt_copyto(x, dev);
    T_CHECK(dt_scatter_add_(xk, 0, i0, s0) == DT_OK);
    T_CHECK(check_vals(xk, scatter0, 12, 0, 0));
    xk = dt_copyto(x, dev); /* src x itself: refused (PyTorch too), x unchanged */
    T_CHECK(xk && dt_scatter_add_(xk, 0, i0, xk) == DT_ERR_INVALID_ARGUMENT && strstr(dt_last_error(), "src shares x's memory"));
    T_CHECK(check_vals(xk, before, 12, 0, 0));
    { /* slices of one tensor: an overlapping src refused, a disjoint one added */
      dt_tensor *big = dt_zeros(dt_shape2(6, 4), dev), *cb = big ? dt_cast(big, dt) : NULL, *top = cb ? dt_slice(cb, 0, 0, 3) : NULL,
                *mid = cb ? dt_slice(cb, 0, 1, 4) : NULL, *bot = cb ? dt_slice(cb, 0, 3, 6) : NULL;
      T_CHECK(top && mid && bot && dt_scatter_add_(top, 0, i0, mid) == DT_ERR_INVALID_ARGUMENT &&
              strstr(dt_last_error(), "src shares x's memory"));
      T_CHECK(bot && dt_copy_(bot, x) == DT_OK && dt_scatter_add_(top, 0, i0, bot) == DT_OK);
      dt_release(top); dt_release(mid); dt_release(bot); dt_release(cb); dt_release(big);
    }
    if (t == 0) { /* an int64 x as its own index: refused, unchanged */
      static const int64_t iv[4] = {0, 1, 1, 0}, one[4] = {1, 1, 1, 1};
      dt_tensor *xi = i64(iv, dt_shape2(2, 2), dev), *si = i64(one, dt_shape2(2, 2), dev);
      int64_t h[4] = {0};
      T_CHECK(xi && si && dt_scatter_add_(xi, 0, xi, si) == DT_ERR_INVALID_ARGUMENT && strstr(dt_last_error(), "index shares x's memory"));
      T_CHECK(xi && dt_to_host(xi, h, sizeof h) == DT_OK && h[0] == 0 && h[1] == 1 && h[2] == 1 && h[3] == 0);
      dt_release(xi); dt_release(si);
    }
    { /* an empty index: x unchanged */
      dt_tensor *ie = dt_empty(dt_shape2(0, 4), DT_I64, dev), *se = dt_empty(dt_shape2(0, 4), dt, dev);
      T_CHECK(check_vals(dt_scatter_add(x, 0, ie, se), before, 12, 0, 0));
      dt_release(ie); dt_release(se);
    }
    free(before);
    dt_release(x); dt_release(x3); dt_release(i0); dt_release(i1); dt_release(i3); dt_release(s0); dt_release(s1); dt_release(s3);
  }
  { /* int64, several onto one */
    dt_tensor *x = from_d(xl, dt_shape2(2, 3), DT_I64, dev), *s = from_d(sl, dt_shape2(2, 4), DT_I64, dev);
    dt_tensor *i = i64(il, dt_shape2(1, 4), dev), *y = dt_scatter_add(x, 1, i, s);
    T_CHECK(y && dt_dtype_of(y) == DT_I64);
    T_CHECK(check_vals(y, scatter_i64, 6, 0, 0));
    dt_release(x); dt_release(s); dt_release(i);
  }
  if (dev.type == DT_CUDA) { /* a bad index on a GPU: never followed, reported at the next synchronizing call */
    static const int64_t bad[8] = {2, 0, 1, 1, 0, 7, 2, 0};
    dt_tensor *x = pv(dt_shape2(3, 4), 3, DT_F32, dev), *s = pv(dt_shape2(2, 4), 5, DT_F32, dev), *i = i64(bad, dt_shape2(2, 4), dev);
    dt_tensor *y = dt_gather(x, 0, i);
    T_CHECK(y != NULL);
    T_CHECK(dt_synchronize(dev) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_gather on cuda:") &&
            contains(dt_last_error(), "index 7"));
    dt_release(y);
    y = dt_scatter_add(x, 0, i, s);
    T_CHECK(y != NULL);
    T_CHECK(dt_synchronize(dev) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_scatter_add on cuda:"));
    T_CHECK(dt_synchronize(dev) == DT_OK);
    dt_release(y); dt_release(x); dt_release(s); dt_release(i);
  }
}

/* ---- pad ---- */

static void test_pad(dt_device dev) {
  static const int64_t pa[2] = {1, 2}, pb[4] = {1, 1, 2, 0}, pn[4] = {-1, 2, 1, -1}, p3[6] = {0, 1, -1, 0, 1, 1}, pe[2] = {1, 1};
  static const int64_t s25[2] = {2, 6}, s45[2] = {4, 5}, s24[2] = {2, 4}, s413[3] = {4, 1, 3}, s05[2] = {0, 5}, sc[2] = {2, 0};
  static const int64_t crop[2] = {-2, -1};
  int t;
  for (t = 0; t < 3; t++) {
    dt_dtype dt = t == 0 ? DT_F32 : t == 1 ? DT_F64 : DT_I32;
    dt_tensor *p = pv(dt_shape2(2, 3), 8, dt, dev), *y, *e;
    if (dt == DT_I32) { /* whole values: the inputs truncated, the fill 3 */
      static const double w[12] = {3, -1, 6, 2, 3, 3, 3, -2, 5, 1, 3, 3};
      y = dt_pad(p, pa, 2, 3.0);
      T_CHECK(shape_is(y, 2, s25) && dt_dtype_of(y) == DT_I32);
      T_CHECK(check_vals(y, w, 12, 0, 0));
      dt_release(p);
      continue;
    }
    y = dt_pad(p, pa, 2, 0.5);
    T_CHECK(shape_is(y, 2, s25));
    T_CHECK(check_vals(y, pad_a, 12, 0, 0));
    y = dt_pad(p, pb, 4, 0.0);
    T_CHECK(shape_is(y, 2, s45));
    T_CHECK(check_vals(y, pad_b, 20, 0, 0));
    y = dt_pad(p, pn, 4, 7.0);
    T_CHECK(shape_is(y, 2, s24));
    T_CHECK(check_vals(y, pad_neg, 8, 0, 0));
    y = dt_pad(p, crop, 2, 7.0); /* cropped to nothing */
    T_CHECK(shape_is(y, 2, sc));
    dt_release(y);
    y = dt_pad(p, NULL, 0, 1.0); /* no padding: a copy */
    T_CHECK(y && y != p && dt_numel(y) == 6);
    dt_release(y);
    dt_release(p);
    p = pv(dt_shape3(2, 2, 2), 9, dt, dev);
    y = dt_pad(p, p3, 6, -1.0);
    T_CHECK(shape_is(y, 3, s413));
    T_CHECK(check_vals(y, pad_3d, 12, 0, 0));
    dt_release(p);
    e = dt_empty(dt_shape2(0, 3), dt, dev);
    y = dt_pad(e, pe, 2, 1.0);
    T_CHECK(shape_is(y, 2, s05));
    dt_release(y); dt_release(e);
  }
}

/* ---- index_select's backward: an index-add, against a plain loop ---- */

static void test_index_select_backward(dt_device dev) {
  const int64_t rows = 50000, dim = 8, k = 300;
  int64_t *idx = (int64_t *)malloc((size_t)k * sizeof(int64_t)), j, c;
  double *gh = (double *)malloc((size_t)(k * dim) * sizeof(double)), *want = (double *)calloc((size_t)(rows * dim), sizeof(double));
  dt_tensor *table = dt_zeros(dt_shape2(rows, dim), dev), *it, *y, *g, *gt;
  double *got;
  int bad = 0;
  for (j = 0; j < k; j++) idx[j] = (j * 7919) % 997 * 50 % rows; /* repeats: rows hit several times */
  for (j = 0; j < k * dim; j++) gh[j] = (double)((j * 13) % 17) / 8.0 - 1.0;
  for (j = 0; j < k; j++)
    for (c = 0; c < dim; c++) want[idx[j] * dim + c] += gh[j * dim + c];
  it = i64(idx, dt_shape1(k), dev);
  T_CHECK(dt_requires_grad_(table, 1) == DT_OK);
  y = dt_index_select(table, 0, it);
  g = from_d(gh, dt_shape2(k, dim), DT_F32, dev);
  T_CHECK(y && g && dt_autograd_backward(y, g) == DT_OK);
  gt = dt_grad(table);
  got = values(gt);
  T_CHECK(got != NULL);
  for (j = 0; got && j < rows * dim; j++)
    if (fabs(got[j] - want[j]) > 1e-6 * (1 + fabs(want[j])) && bad++ < 4) printf("  [%lld]: %g, want %g\n", (long long)j, got[j], want[j]);
  T_CHECK(bad == 0);
  free(got); free(idx); free(gh); free(want);
  dt_release(y); dt_release(g); dt_release(it); dt_release(table);
}

/* ---- randperm, randint: the same numbers on every device for a seed ---- */

static void test_random(dt_device dev) {
  const int64_t n = 1000;
  dt_tensor *p, *q, *pc, *r, *rc;
  double *v, *w;
  int64_t i, count[8] = {0};
  int ok = 1;
  char *seen = (char *)calloc((size_t)n, 1);
  dt_manual_seed(7);
  p = dt_randperm(n, dev);
  q = dt_randperm(n, dev);
  dt_manual_seed(7);
  pc = dt_randperm(n, dt_cpu());
  T_CHECK(p && q && pc && dt_dtype_of(p) == DT_I64 && dt_numel(p) == n && dt_device_equal(dt_device_of(p), dev));
  v = values(p); w = values(pc);
  for (i = 0; v && w && i < n; i++) {
    if (v[i] < 0 || v[i] >= n || seen[(int64_t)v[i]]) ok = 0;
    else seen[(int64_t)v[i]] = 1;
    if (v[i] != w[i]) ok = 0;
  }
  T_CHECK_MSG(v && w && ok, "randperm is a permutation, the CPU's for the seed");
  free(w);
  w = values(q);
  for (i = 0, ok = 0; v && w && i < n; i++) if (v[i] != w[i]) ok = 1;
  T_CHECK_MSG(ok, "the next draw is another permutation");
  free(v); free(w); free(seen);
  dt_release(p); dt_release(q); dt_release(pc);
  p = dt_randperm(0, dev);
  T_CHECK(p && dt_numel(p) == 0 && dt_ndim(p) == 1);
  dt_release(p);

  dt_manual_seed(11);
  r = dt_randint(-3, 5, dt_shape2(100, 80), dev);
  dt_manual_seed(11);
  rc = dt_randint(-3, 5, dt_shape2(100, 80), dt_cpu());
  v = values(r); w = values(rc);
  for (i = 0, ok = v && w; ok && i < 8000; i++) {
    if (v[i] < -3 || v[i] >= 5 || v[i] != w[i]) ok = 0;
    else count[(int64_t)v[i] + 3]++;
  }
  T_CHECK_MSG(ok, "randint in [low, high), the CPU's for the seed");
  for (i = 0; i < 8; i++) T_CHECK_MSG(count[i] > 850 && count[i] < 1150, "value %d drawn %lld times of 8000", (int)i - 3, (long long)count[i]);
  free(v); free(w); dt_release(r); dt_release(rc);
  { /* the whole int64 range */
    int64_t a[64], b[64];
    dt_manual_seed(3);
    r = dt_randint(INT64_MIN, INT64_MAX, dt_shape1(64), dev);
    dt_manual_seed(3);
    rc = dt_randint(INT64_MIN, INT64_MAX, dt_shape1(64), dt_cpu());
    T_CHECK(r && rc && dt_to_host(r, a, sizeof a) == DT_OK && dt_to_host(rc, b, sizeof b) == DT_OK && memcmp(a, b, sizeof a) == 0);
    for (i = 0, ok = 0; i < 64; i++) if (a[i] < 0) ok |= 1; else ok |= 2;
    T_CHECK(ok == 3);
    dt_release(r); dt_release(rc);
  }
}

/* ---- gradients ---- */

static dt_tensor *gc_where(dt_tensor *const *x) {
  dt_tensor *c = from_d(COND, dt_shape3(2, 1, 3), DT_BOOL, dt_device_of(x[0])), *y = dt_where(c, x[0], x[1]);
  dt_release(c);
  return y;
}
static dt_tensor *gc_gather0(dt_tensor *const *x) {
  dt_tensor *i = i64(I0, dt_shape2(2, 4), dt_device_of(x[0])), *y = dt_gather(x[0], 0, i);
  dt_release(i);
  return y;
}
static dt_tensor *gc_gather_last(dt_tensor *const *x) {
  dt_tensor *i = i64(I1, dt_shape2(3, 2), dt_device_of(x[0])), *y = dt_gather(x[0], -1, i);
  dt_release(i);
  return y;
}
static dt_tensor *gc_gather3(dt_tensor *const *x) {
  dt_tensor *i = i64(I3, dt_shape3(2, 2, 3), dt_device_of(x[0])), *y = dt_gather(x[0], 1, i);
  dt_release(i);
  return y;
}
static dt_tensor *gc_scatter0(dt_tensor *const *x) {
  dt_tensor *i = i64(I0, dt_shape2(2, 4), dt_device_of(x[0])), *y = dt_scatter_add(x[0], 0, i, x[1]);
  dt_release(i);
  return y;
}
static dt_tensor *gc_scatter_last(dt_tensor *const *x) {
  dt_tensor *i = i64(I1, dt_shape2(3, 2), dt_device_of(x[0])), *y = dt_scatter_add(x[0], 1, i, x[1]);
  dt_release(i);
  return y;
}
static dt_tensor *gc_scatter3(dt_tensor *const *x) { /* src larger than the index */
  dt_tensor *i = i64(I3, dt_shape3(2, 2, 3), dt_device_of(x[0])), *y = dt_scatter_add(x[0], 1, i, x[1]);
  dt_release(i);
  return y;
}
static dt_tensor *gc_pad(dt_tensor *const *x) {
  static const int64_t p[4] = {1, 2, 2, 0};
  return dt_pad(x[0], p, 4, 0.5);
}
static dt_tensor *gc_pad_neg(dt_tensor *const *x) {
  static const int64_t p[6] = {-1, 2, 1, -1, 0, 1};
  return dt_pad(x[0], p, 6, 3.0);
}
static dt_tensor *gc_index_select(dt_tensor *const *x) {
  static const int64_t i[5] = {2, 0, 2, 3, 2};
  dt_tensor *it = i64(i, dt_shape1(5), dt_device_of(x[0])), *y = dt_index_select(x[0], 1, it);
  dt_release(it);
  return y;
}

static void test_gradcheck(dt_device dev) {
  static const gc_case cases[] = {
    {"where", gc_where, 2, {{2, {4, 1}}, {1, {3}}}, {ANY, ANY}},
    {"gather dim 0", gc_gather0, 1, {{2, {3, 4}}}, {ANY}},
    {"gather dim -1", gc_gather_last, 1, {{2, {3, 4}}}, {ANY}},
    {"gather 3-d", gc_gather3, 1, {{3, {2, 3, 4}}}, {ANY}},
    {"scatter_add dim 0", gc_scatter0, 2, {{2, {3, 4}}, {2, {2, 4}}}, {ANY, ANY}},
    {"scatter_add dim -1", gc_scatter_last, 2, {{2, {3, 4}}, {2, {3, 2}}}, {ANY, ANY}},
    {"scatter_add 3-d", gc_scatter3, 2, {{3, {2, 3, 4}}, {3, {2, 3, 4}}}, {ANY, ANY}},
    {"pad", gc_pad, 1, {{2, {2, 3}}}, {ANY}},
    {"pad negative", gc_pad_neg, 1, {{3, {2, 2, 3}}}, {ANY}},
    {"index_select (index-add)", gc_index_select, 1, {{3, {2, 4, 3}}}, {ANY}},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) T_CHECK_MSG(gradcheck(dev, &cases[i]), "%s", cases[i].name);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_where);
  T_RUN_ALL_DEVICES(test_gather);
  T_RUN_ALL_DEVICES(test_gather_backward_half);
  T_RUN_ALL_DEVICES(test_scatter_add);
  T_RUN_ALL_DEVICES(test_pad);
  T_RUN_ALL_DEVICES(test_index_select_backward);
  T_RUN_ALL_DEVICES(test_random);
  T_RUN_ALL_DEVICES(test_gradcheck);
  return t_finish();
}
