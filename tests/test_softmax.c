/* dt_argmax/argmin, dt_max_dim/min_dim, dt_max/min, dt_softmax/log_softmax and dt_cross_entropy
   (and its gradient) on every device: against PyTorch's values (held literally below, each with
   the snippet that made them: Debian's torch, /usr/bin/python3), against plain loops in double,
   and the gradient against a finite difference. Bad labels: reported, never read with. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

static int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

/* t's values as doubles (F32, F64 or I64); NULL on failure */
static double *host(const dt_tensor *t) {
  int64_t n = dt_numel(t), i;
  double *d = n >= 0 && n < ((int64_t)1 << 40) ? (double *)malloc((size_t)(n ? n : 1) * sizeof(double)) : NULL;
  void *raw = malloc(dt_nbytes(t) ? dt_nbytes(t) : 1);
  if (!d || !raw || dt_to_host(t, raw, dt_nbytes(t)) != DT_OK) { free(d); free(raw); return NULL; }
  for (i = 0; i < n; i++)
    d[i] = dt_dtype_of(t) == DT_F32 ? ((float *)raw)[i] : dt_dtype_of(t) == DT_F64 ? ((double *)raw)[i] : (double)((int64_t *)raw)[i];
  free(raw);
  return d;
}

/* both NaN, both the same infinity, or close */
static int same(double a, double b, double tol) {
  if (b != b) return a != a;
  if (isinf(b)) return a == b;
  return fabs(a - b) <= tol + tol * fabs(b);
}

/* t (F32 or F64) holds want[0 .. n) within tol; NaN and inf exactly */
static void check_vals(const dt_tensor *t, const double *want, int64_t n, double tol, const char *what) {
  double *h;
  int64_t i;
  T_CHECK_MSG(t != NULL, "%s: %s", what, dt_last_error());
  if (!t) return;
  T_CHECK_MSG(dt_numel(t) == n, "%s: %lld elements, expected %lld", what, (long long)dt_numel(t), (long long)n);
  if (dt_numel(t) != n || !(h = host(t))) return;
  for (i = 0; i < n; i++) T_CHECK_MSG(same(h[i], want[i], tol), "%s[%lld] = %.9g, expected %.9g", what, (long long)i, h[i], want[i]);
  free(h);
}

static dt_tensor *from(const double *v, dt_shape s, dt_dtype t, dt_device dev) {
  int64_t n = 1, i;
  int k;
  float f[64];
  for (k = 0; k < s.ndim; k++) n *= s.dims[k];
  if (t == DT_F64) return dt_from_data(v, s, t, dev);
  for (i = 0; i < n && i < 64; i++) f[i] = (float)v[i];
  return dt_from_data(f, s, DT_F32, dev);
}

/* torch.softmax / log_softmax of x over dim 1:
     x=torch.tensor([[1000.,1001.,1002.,-inf],[-inf,-inf,-inf,-inf],[0.5,-2.,3.,0.],[-100.,100.,0.,50.]])
     torch.softmax(x,1), torch.log_softmax(x,1)   (printed with "%.9g") */
static void test_softmax_large_and_inf(dt_device dev) {
  static const double x[16] = {1000, 1001, 1002, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                               0.5,  -2,   3,    0,         -100,      100,       0,         50};
  static const double sm[16] = {0.0900305733, 0.244728476, 0.665240943, 0, NAN, NAN, NAN, NAN,
                                0.0720922872, 0.00591769535, 0.878263831, 0.0437261797, 0, 1, 3.78350585e-44, 1.92874989e-22};
  static const double lsm[16] = {-2.40760589, -1.40760589, -0.407605946, -INFINITY, NAN, NAN, NAN, NAN,
                                 -2.62980819, -5.12980843, -0.129808232, -3.12980819, -200, 0, -100, -50};
  int d;
  for (d = 0; d < 2; d++) {
    dt_dtype t = d ? DT_F64 : DT_F32;
    dt_tensor *a = from(x, dt_shape2(4, 4), t, dev), *s = dt_softmax(a, 1), *l = dt_log_softmax(a, -1);
    check_vals(s, sm, 16, 1e-6, "softmax");
    check_vals(l, lsm, 16, 1e-6, "log_softmax");
    if (s) T_CHECK(dt_dtype_of(s) == t && dt_ndim(s) == 2 && dt_dim(s, 0) == 4 && dt_dim(s, 1) == 4);
    dt_release(a); dt_release(s); dt_release(l);
  }
}

/* every dim of a 3-d tensor:
     a=(torch.arange(24.)*0.37-2.).reshape(2,3,4); a[1,2,3]=-inf
     [torch.softmax(a,d) for d in range(3)], torch.log_softmax(a,0) */
static void test_softmax_every_dim(dt_device dev) {
  static const double want[3][24] = {
    {0.0116584152, 0.0116584152, 0.0116584115, 0.0116584152, 0.0116584152, 0.0116584152, 0.0116584208, 0.0116584152,
     0.0116584152, 0.0116584152, 0.0116584115, 1, 0.98834151, 0.98834151, 0.98834163, 0.98834151, 0.98834151,
     0.98834151, 0.98834151, 0.98834151, 0.98834151, 0.98834151, 0.98834163, 0},
    {0.0405007191, 0.0405007191, 0.0405007191, 0.0405007191, 0.177917466, 0.177917495, 0.177917466, 0.177917466,
     0.781581819, 0.781581819, 0.781581819, 0.781581819, 0.0405007191, 0.0405007191, 0.0405007228, 0.185427412,
     0.177917466, 0.177917466, 0.177917406, 0.814572632, 0.781581819, 0.781581819, 0.781581879, 0},
    {0.131960437, 0.19104369, 0.276580572, 0.400415272, 0.131960437, 0.191043705, 0.276580602, 0.400415331,
     0.131960437, 0.191043675, 0.276580602, 0.400415331, 0.131960437, 0.191043675, 0.276580632, 0.400415331,
     0.131960452, 0.19104369, 0.276580542, 0.400415361, 0.220086381, 0.318626642, 0.461286992, 0}};
  static const double ld0[24] = {-4.45172691, -4.45172691, -4.45172739, -4.45172691, -4.45172691, -4.45172691,
                                 -4.45172644, -4.45172691, -4.45172691, -4.45172691, -4.45172739, 0,
                                 -0.0117269671, -0.0117269671, -0.0117268497, -0.0117269671, -0.0117269671,
                                 -0.0117269671, -0.0117269671, -0.0117269671, -0.0117269671, -0.0117269671,
                                 -0.0117268497, -INFINITY};
  double x[24];
  int i, d, k;
  for (i = 0; i < 24; i++) x[i] = (double)(float)(i * 0.37f - 2.0f);
  x[23] = -INFINITY;
  for (k = 0; k < 2; k++) {
    dt_dtype t = k ? DT_F64 : DT_F32;
    dt_tensor *a = from(x, dt_shape3(2, 3, 4), t, dev), *l;
    for (d = 0; d < 3; d++) {
      dt_tensor *s = dt_softmax(a, d), *n = dt_softmax(a, d - 3); /* the same dim from the end */
      check_vals(s, want[d], 24, 2e-6, "softmax over a dim");
      check_vals(n, want[d], 24, 2e-6, "softmax over a negative dim");
      dt_release(s); dt_release(n);
    }
    l = dt_log_softmax(a, 0);
    check_vals(l, ld0, 24, 2e-6, "log_softmax dim 0");
    dt_release(l); dt_release(a);
  }
}

/* Shapes that take the other kernels (long rows: a block per row on a GPU; many short rows;
   columns), against softmax in double computed here. */
static void test_softmax_shapes(dt_device dev) {
  /* the last: more columns than a CPU tile of 64 would hold, fewer than one of 256 */
  static const int64_t shp[4][3] = {{3, 1500, 1}, {1200, 5, 1}, {4, 300, 3}, {2, 40, 150}};
  int c;
  for (c = 0; c < 4; c++) { /* fewer rows on a GPU: the emulator runs warps as fibers, slowly */
    int64_t o = dev.type == DT_CPU ? shp[c][0] : (shp[c][0] + 4) / 5, len = shp[c][1], in = shp[c][2], n = o * len * in, oi, r, i;
    float *x = (float *)malloc((size_t)n * sizeof(float));
    double *want = (double *)malloc((size_t)n * sizeof(double)), *lwant = (double *)malloc((size_t)n * sizeof(double));
    dt_tensor *a, *s, *l;
    for (i = 0; i < n; i++) x[i] = (float)(((i * 7919) % 2003) / 50.0 - 20.0); /* in [-20, 20] */
    for (oi = 0; oi < o; oi++)
      for (i = 0; i < in; i++) {
        double m = -INFINITY, sum = 0;
        for (r = 0; r < len; r++) m = x[(oi * len + r) * in + i] > m ? x[(oi * len + r) * in + i] : m;
        for (r = 0; r < len; r++) sum += exp(x[(oi * len + r) * in + i] - m);
        for (r = 0; r < len; r++) {
          int64_t at = (oi * len + r) * in + i;
          want[at] = exp(x[at] - m) / sum;
          lwant[at] = x[at] - m - log(sum);
        }
      }
    a = dt_from_data(x, dt_shape3(o, len, in), DT_F32, dev);
    s = dt_softmax(a, 1); l = dt_log_softmax(a, 1);
    check_vals(s, want, n, 1e-5, "softmax (shapes)");
    check_vals(l, lwant, n, 1e-5, "log_softmax (shapes)");
    dt_release(a); dt_release(s); dt_release(l);
    free(x); free(want); free(lwant);
  }
}

/* ties and NaN:
     x=torch.tensor([[1.,3.,3.,nan,nan,2.],[2.,2.,-1.,-1.,0.,5.]])
     x.argmax(1) -> [3, 5], x.argmin(1) -> [3, 2], x.max(1).values -> [nan, 5.], x.min(1).values -> [nan, -1.],
     x.max() -> nan, x.min() -> nan
     b=torch.tensor([[[1.,5.,5.],[5.,1.,0.]],[[2.,2.,2.],[-inf,-inf,-inf]]])
     for d in range(3): b.argmax(d), b.argmin(d), b.max(d).values, b.min(d).values;  b.max() -> 5., b.min() -> -inf */
static void test_arg_ties_nan(dt_device dev) {
  static const double x[12] = {1, 3, 3, NAN, NAN, 2, 2, 2, -1, -1, 0, 5};
  static const double amax[2] = {3, 5}, amin[2] = {3, 2}, vmax[2] = {NAN, 5}, vmin[2] = {NAN, -1}, nan1[1] = {NAN};
  static const double b[12] = {1, 5, 5, 5, 1, 0, 2, 2, 2, -INFINITY, -INFINITY, -INFINITY};
  static const double bam[3][6] = {{1, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0}, {1, 0, 0, 0}};
  static const double bai[3][6] = {{0, 1, 1, 1, 1, 1}, {0, 1, 1, 1, 1, 1}, {0, 2, 0, 0}};
  static const double bvm[3][6] = {{2, 5, 5, 5, 1, 0}, {5, 5, 5, 2, 2, 2}, {5, 5, 2, -INFINITY}};
  static const double bvi[3][6] = {{1, 2, 2, -INFINITY, -INFINITY, -INFINITY}, {1, 1, 0, -INFINITY, -INFINITY, -INFINITY}, {1, 0, 2, -INFINITY}};
  static const double five[1] = {5}, minf[1] = {-INFINITY};
  int k, d;
  for (k = 0; k < 2; k++) {
    dt_dtype t = k ? DT_F64 : DT_F32;
    dt_tensor *a = from(x, dt_shape2(2, 6), t, dev), *bb = from(b, dt_shape3(2, 2, 3), t, dev), *y;
    y = dt_argmax(a, 1); check_vals(y, amax, 2, 0, "argmax"); if (y) T_CHECK(dt_dtype_of(y) == DT_I64 && dt_ndim(y) == 1); dt_release(y);
    y = dt_argmin(a, -1); check_vals(y, amin, 2, 0, "argmin"); dt_release(y);
    y = dt_max_dim(a, 1); check_vals(y, vmax, 2, 0, "max_dim"); if (y) T_CHECK(dt_dtype_of(y) == t); dt_release(y);
    y = dt_min_dim(a, 1); check_vals(y, vmin, 2, 0, "min_dim"); dt_release(y);
    y = dt_max(a); check_vals(y, nan1, 1, 0, "max"); if (y) T_CHECK(dt_ndim(y) == 0 && dt_device_equal(dt_device_of(y), dev)); dt_release(y);
    y = dt_min(a); check_vals(y, nan1, 1, 0, "min"); dt_release(y);
    for (d = 0; d < 3; d++) {
      int64_t n = d == 2 ? 4 : 6;
      y = dt_argmax(bb, d); check_vals(y, bam[d], n, 0, "argmax 3-d"); dt_release(y);
      y = dt_argmin(bb, d - 3); check_vals(y, bai[d], n, 0, "argmin 3-d"); dt_release(y);
      y = dt_max_dim(bb, d); check_vals(y, bvm[d], n, 0, "max_dim 3-d"); dt_release(y);
      y = dt_min_dim(bb, d); check_vals(y, bvi[d], n, 0, "min_dim 3-d"); dt_release(y);
    }
    y = dt_max(bb); check_vals(y, five, 1, 0, "max 3-d"); dt_release(y);
    y = dt_min(bb); check_vals(y, minf, 1, 0, "min 3-d"); dt_release(y);
    dt_release(a); dt_release(bb);
  }
}

/* Long rows (a block per row on a GPU), one long row (dt_max over all), 0-d: ties to the first,
   the first NaN wins. torch.tensor(5.).argmax(0) -> 0, torch.max(torch.tensor(2.), 0) -> (2., 0). */
static void test_arg_long_rows(dt_device dev) {
  enum { N = 5000 };
  float *x = (float *)malloc(N * 2 * sizeof(float));
  double want[2];
  int64_t i;
  dt_tensor *a, *y, *z;
  for (i = 0; i < 2 * N; i++) x[i] = (float)((i * 31) % 1000);
  x[4321] = 2000; x[4999] = 2000;              /* row 0: a tie, the first wins */
  x[N + 17] = -5; x[N + 3000] = NAN; x[N + 4000] = NAN; /* row 1: the first NaN */
  a = dt_from_data(x, dt_shape2(2, N), DT_F32, dev);
  y = dt_argmax(a, 1);
  want[0] = 4321; want[1] = 3000;
  check_vals(y, want, 2, 0, "argmax long rows");
  dt_release(y);
  y = dt_argmin(a, 1);
  want[0] = 0; want[1] = 3000;
  check_vals(y, want, 2, 0, "argmin long rows");
  dt_release(y);
  z = dt_reshape(a, dt_shape1(2 * N));
  y = dt_max(z); want[0] = NAN; check_vals(y, want, 1, 0, "max of all with NaN"); dt_release(y);
  y = dt_argmax(z, 0); want[0] = N + 3000; check_vals(y, want, 1, 0, "argmax of one long row"); dt_release(y);
  dt_release(z); dt_release(a);
  x[N + 3000] = 0; x[N + 4000] = 0;
  a = dt_from_data(x, dt_shape1(2 * N), DT_F32, dev);
  y = dt_max(a); want[0] = 2000; check_vals(y, want, 1, 0, "max of all"); dt_release(y);
  y = dt_min(a); want[0] = -5; check_vals(y, want, 1, 0, "min of all"); dt_release(y);
  dt_release(a);
  { /* one row of 140000: blocks of it on CPU threads, a tie across blocks, then a NaN in the last block */
    enum { L = 140000 };
    float *w = (float *)malloc(L * sizeof(float));
    for (i = 0; i < L; i++) w[i] = (float)(i % 977);
    w[70000] = 5000; w[139000] = 5000; w[100] = -1;
    z = dt_from_data(w, dt_shape1(L), DT_F32, dev);
    y = dt_argmax(z, 0); want[0] = 70000; check_vals(y, want, 1, 0, "argmax across blocks"); dt_release(y);
    y = dt_argmin(z, -1); want[0] = 100; check_vals(y, want, 1, 0, "argmin across blocks"); dt_release(y);
    y = dt_max(z); want[0] = 5000; check_vals(y, want, 1, 0, "max across blocks"); dt_release(y);
    dt_release(z);
    w[139999] = NAN;
    z = dt_from_data(w, dt_shape1(L), DT_F32, dev);
    y = dt_argmin(z, 0); want[0] = 139999; check_vals(y, want, 1, 0, "argmin NaN in the last block"); dt_release(y);
    y = dt_min(z); want[0] = NAN; check_vals(y, want, 1, 0, "min NaN in the last block"); dt_release(y);
    dt_release(z);
    free(w);
  }
  a = dt_from_data(&x[4321], dt_shape0(), DT_F32, dev);
  y = dt_argmax(a, 0); want[0] = 0; check_vals(y, want, 1, 0, "argmax 0-d"); if (y) T_CHECK(dt_ndim(y) == 0); dt_release(y);
  y = dt_max_dim(a, -1); want[0] = 2000; check_vals(y, want, 1, 0, "max_dim 0-d"); dt_release(y);
  y = dt_softmax(a, 0); want[0] = 1; check_vals(y, want, 1, 0, "softmax 0-d"); dt_release(y);
  dt_release(a);
  free(x);
}

/* Empty reductions refused as PyTorch refuses them:
     torch.empty(0,3).argmax(0) -> "Expected reduction dim 0 to have non-zero size"; .argmax(1) -> shape (0,)
     torch.empty(0).max() -> "Expected reduction dim to be specified for input.numel() == 0"
     torch.empty(2,0).softmax(1) -> shape (2, 0);  F.cross_entropy(torch.empty(0,3), torch.empty(0,dtype=long)) -> nan */
static void test_empty(dt_device dev) {
  dt_tensor *e = dt_empty(dt_shape2(0, 3), DT_F32, dev), *e2 = dt_empty(dt_shape2(2, 0), DT_F32, dev), *y;
  dt_tensor *lab = dt_empty(dt_shape1(0), DT_I64, dev);
  double nan1[1] = {NAN};
  T_CHECK(dt_argmax(e, 0) == NULL && dt_last_status() == DT_ERR_SHAPE && contains(dt_last_error(), "non-zero size"));
  T_CHECK(dt_max_dim(e, -2) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_max(e) == NULL && dt_last_status() == DT_ERR_SHAPE && contains(dt_last_error(), "dt_max"));
  T_CHECK(dt_min(e2) == NULL && dt_last_status() == DT_ERR_SHAPE);
  y = dt_argmax(e, 1); T_CHECK(y && dt_ndim(y) == 1 && dt_dim(y, 0) == 0); dt_release(y);
  y = dt_softmax(e2, 1); T_CHECK(y && dt_ndim(y) == 2 && dt_dim(y, 1) == 0); dt_release(y);
  y = dt_cross_entropy(e, lab); check_vals(y, nan1, 1, 0, "cross_entropy of no rows"); dt_release(y);
  y = dt_cross_entropy_grad(e, lab); T_CHECK(y && dt_numel(y) == 0); dt_release(y);
  dt_release(e); dt_release(e2); dt_release(lab);
}

/* lg=torch.tensor([[1000.,0.,-1000.,3.,2.],[0.1,0.2,0.3,0.4,0.5],[-5.,5.,-5.,5.,0.],[88.,89.,90.,-90.,0.]],requires_grad=True)
   t=torch.tensor([2,0,4,1]); l=torch.nn.functional.cross_entropy(lg,t); l.backward()
   l -> 502.230896, lg.grad as below */
static void test_cross_entropy_values(dt_device dev) {
  static const double lg[20] = {1000, 0, -1000, 3, 2, 0.1, 0.2, 0.3, 0.4, 0.5, -5, 5, -5, 5, 0, 88, 89, 90, -90, 0};
  static const double grad[20] = {0.25, 0, -0.25, 0, 0, -0.209469914, 0.0447926708, 0.0495035648, 0.0547098964,
                                  0.0604637861, 5.65567871e-06, 0.124574654, 5.65567871e-06, 0.124574654, -0.249160618,
                                  0.0225076452, -0.188817874, 0.166310251, 0, 1.36274874e-40};
  static const int64_t lab[4] = {2, 0, 4, 1};
  static const double loss[1] = {502.230896};
  int k;
  for (k = 0; k < 2; k++) {
    dt_dtype t = k ? DT_F64 : DT_F32;
    dt_tensor *x = from(lg, dt_shape2(4, 5), t, dev), *tg = dt_from_data(lab, dt_shape1(4), DT_I64, dev);
    dt_tensor *l = dt_cross_entropy(x, tg), *g = dt_cross_entropy_grad(x, tg);
    check_vals(l, loss, 1, 1e-6, "cross_entropy");
    if (l) T_CHECK(dt_ndim(l) == 0 && dt_dtype_of(l) == t && dt_device_equal(dt_device_of(l), dev));
    check_vals(g, grad, 20, 1e-6, "cross_entropy_grad");
    dt_release(x); dt_release(tg); dt_release(l); dt_release(g);
  }
}

/* The gradient against a central difference of the loss, in F64, element by element. */
static void test_cross_entropy_finite_difference(dt_device dev) {
  enum { N = 3, C = 4 };
  double x[N * C], *g;
  static const int64_t lab[N] = {3, 0, 2};
  const double h = 1e-5;
  int i;
  dt_tensor *tg = dt_from_data(lab, dt_shape1(N), DT_I64, dev), *xt, *gt;
  for (i = 0; i < N * C; i++) x[i] = sin(i * 1.7) * 3;
  xt = dt_from_data(x, dt_shape2(N, C), DT_F64, dev);
  gt = dt_cross_entropy_grad(xt, tg);
  g = gt ? host(gt) : NULL;
  T_CHECK(g != NULL);
  for (i = 0; g && i < N * C; i++) {
    double xs = x[i], lp, lm;
    dt_tensor *a, *l;
    x[i] = xs + h; a = dt_from_data(x, dt_shape2(N, C), DT_F64, dev); l = dt_cross_entropy(a, tg); lp = dt_item(l); dt_release(a); dt_release(l);
    x[i] = xs - h; a = dt_from_data(x, dt_shape2(N, C), DT_F64, dev); l = dt_cross_entropy(a, tg); lm = dt_item(l); dt_release(a); dt_release(l);
    x[i] = xs;
    T_CHECK_MSG(fabs((lp - lm) / (2 * h) - g[i]) < 1e-7, "grad[%d] = %.12g, finite difference %.12g", i, g[i], (lp - lm) / (2 * h));
  }
  free(g);
  dt_release(tg); dt_release(xt); dt_release(gt);
}

/* Many short rows (threads on the CPU) and long rows (a block per row on a GPU): the loss and
   the gradient against plain loops in double. */
static void test_cross_entropy_shapes(dt_device dev) {
  static const int64_t shp[2][2] = {{3000, 5}, {4, 1100}}; /* 3000: three chunks of rows on the CPU */
  int k;
  for (k = 0; k < 2; k++) { /* fewer rows on a GPU: the emulator runs warps as fibers, slowly */
    int64_t n = dev.type == DT_CPU ? shp[k][0] : (shp[k][0] + 9) / 10, c = shp[k][1], i, j;
    float *x = (float *)malloc((size_t)(n * c) * sizeof(float));
    int64_t *lab = (int64_t *)malloc((size_t)n * sizeof(int64_t));
    double *g = (double *)malloc((size_t)(n * c) * sizeof(double)), loss = 0;
    dt_tensor *xt, *tt, *l, *gt;
    for (i = 0; i < n * c; i++) x[i] = (float)(((i * 7919) % 2003) / 40.0 - 25.0);
    for (i = 0; i < n; i++) lab[i] = (i * 13) % c;
    for (i = 0; i < n; i++) {
      double m = -INFINITY, s = 0;
      for (j = 0; j < c; j++) m = x[i * c + j] > m ? x[i * c + j] : m;
      for (j = 0; j < c; j++) s += exp(x[i * c + j] - m);
      loss += log(s) + m - x[i * c + lab[i]];
      for (j = 0; j < c; j++) g[i * c + j] = (exp(x[i * c + j] - m) / s - (j == lab[i])) / (double)n;
    }
    loss /= (double)n;
    xt = dt_from_data(x, dt_shape2(n, c), DT_F32, dev); tt = dt_from_data(lab, dt_shape1(n), DT_I64, dev);
    l = dt_cross_entropy(xt, tt); gt = dt_cross_entropy_grad(xt, tt);
    check_vals(l, &loss, 1, 1e-5, "cross_entropy (shapes)");
    check_vals(gt, g, n * c, 1e-6, "cross_entropy_grad (shapes)");
    dt_release(xt); dt_release(tt); dt_release(l); dt_release(gt);
    free(x); free(lab); free(g);
  }
}

/* Labels outside [0, c): on the CPU refused at once, naming the row and the label; on a GPU the
   row is skipped (NaN) and the next synchronizing call fails once with the same facts. The
   logits are exactly (n, c), so a read at a bad label would leave them (ASan, the emulator). */
static void test_cross_entropy_bad_labels(dt_device dev) {
  static const float lg[6] = {1, 2, 3, 4, 5, 6};
  /* row 0 = -1 would read before the logits, row 1 = c (3) past their end */
  static const int64_t bads[2][2] = {{-1, 0}, {0, 3}};
  static const char *const says[2] = {"target[0] = -1", "target[1] = 3"};
  dt_tensor *x = dt_from_data(lg, dt_shape2(2, 3), DT_F32, dev);
  int k, grad;
  for (k = 0; k < 2; k++)
    for (grad = 0; grad < 2; grad++) {
      dt_tensor *tg = dt_from_data(bads[k], dt_shape1(2), DT_I64, dev);
      dt_tensor *y = grad ? dt_cross_entropy_grad(x, tg) : dt_cross_entropy(x, tg);
      const char *fn = grad ? "dt_cross_entropy_grad" : "dt_cross_entropy";
      if (dev.type == DT_CPU) {
        T_CHECK(y == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
        T_CHECK_MSG(contains(dt_last_error(), says[k]) && contains(dt_last_error(), fn) && contains(dt_last_error(), "3 classes"),
                    "%s", dt_last_error());
      } else {
        float before[6] = {7, 7, 7, 7, 7, 7};
        T_CHECK_MSG(y != NULL, "%s", dt_last_error()); /* asynchronous: the call itself goes through */
        if (y && grad) {
          T_CHECK(dt_to_host(y, before, sizeof before) == DT_ERR_INVALID_ARGUMENT);
          T_CHECK(before[0] == 7 && before[5] == 7); /* the failed copy wrote nothing */
        } else if (y) {
          T_CHECK(isnan(dt_item(y)) && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
        }
        T_CHECK_MSG(contains(dt_last_error(), says[k]) && contains(dt_last_error(), fn) && contains(dt_last_error(), "3 classes"),
                    "%s", dt_last_error());
        T_CHECK(dt_synchronize(dev) == DT_OK); /* reported once */
        if (y) { /* the bad row is NaN, the good one a number */
          double *h = host(y);
          T_CHECK(h != NULL);
          if (h && grad) T_CHECK(isnan(h[k == 0 ? 0 : 3]) && !isnan(h[k == 0 ? 3 : 0]));
          if (h && !grad) T_CHECK(isnan(h[0]));
          free(h);
        }
      }
      dt_release(y); dt_release(tg);
    }
  /* after a report, good labels work again */
  {
    static const int64_t good[2] = {2, 0};
    dt_tensor *tg = dt_from_data(good, dt_shape1(2), DT_I64, dev), *l = dt_cross_entropy(x, tg);
    double want = ((log(exp(1.0) + exp(2.0) + exp(3.0)) - 3) + (log(exp(4.0) + exp(5.0) + exp(6.0)) - 4)) / 2;
    T_CHECK_MSG(l != NULL, "%s", dt_last_error());
    if (l) T_CLOSE(dt_item(l), want, 1e-6, 1e-6);
    T_CHECK(dt_synchronize(dev) == DT_OK);
    dt_release(tg); dt_release(l);
  }
  dt_release(x);
}

/* Wrong arguments: messages name the function, the argument and the values. */
static void test_bad_args(dt_device dev) {
  dt_tensor *x = dt_zeros(dt_shape2(2, 3), dev), *i32 = dt_empty(dt_shape1(2), DT_I32, dev);
  dt_tensor *lab = dt_empty(dt_shape1(3), DT_I64, dev), *lab2 = dt_zeros(dt_shape1(2), dev);
  T_CHECK(dt_argmax(x, 2) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dim 2"));
  T_CHECK(dt_softmax(x, -3) == NULL && contains(dt_last_error(), "dt_softmax") && contains(dt_last_error(), "dim -3"));
  T_CHECK(dt_argmin(i32, 0) == NULL && dt_last_status() == DT_ERR_DTYPE);
  T_CHECK(dt_cross_entropy(x, lab) == NULL && dt_last_status() == DT_ERR_SHAPE && contains(dt_last_error(), "(3,)"));
  T_CHECK(dt_cross_entropy(x, lab2) == NULL && dt_last_status() == DT_ERR_DTYPE && contains(dt_last_error(), "int64"));
  T_CHECK(dt_cross_entropy_grad(NULL, lab) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  dt_release(x); dt_release(i32); dt_release(lab); dt_release(lab2);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_softmax_large_and_inf);
  T_RUN_ALL_DEVICES(test_softmax_every_dim);
  T_RUN_ALL_DEVICES(test_softmax_shapes);
  T_RUN_ALL_DEVICES(test_arg_ties_nan);
  T_RUN_ALL_DEVICES(test_arg_long_rows);
  T_RUN_ALL_DEVICES(test_empty);
  T_RUN_ALL_DEVICES(test_cross_entropy_values);
  T_RUN_ALL_DEVICES(test_cross_entropy_finite_difference);
  T_RUN_ALL_DEVICES(test_cross_entropy_shapes);
  T_RUN_ALL_DEVICES(test_cross_entropy_bad_labels);
  T_RUN_ALL_DEVICES(test_bad_args);
  return t_finish();
}
