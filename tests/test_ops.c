/* Operations on every device against plain loops in double (the reference). */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

static int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

/* A deterministic pattern of values in about [-2, 2], none exactly 0. */
static double pat(int64_t i, int salt) { return ((double)((i * 37 + salt * 11) % 41) - 20.25) / 10.0; }

static dt_tensor *make(dt_shape s, dt_dtype t, int salt, dt_device dev) {
  int64_t n = 1, i;
  int k;
  void *h;
  dt_tensor *x;
  for (k = 0; k < s.ndim; k++) n *= s.dims[k];
  h = malloc((size_t)(n ? n : 1) * 8);
  for (i = 0; i < n; i++) {
    double v = pat(i, salt);
    if (t == DT_F32) ((float *)h)[i] = (float)v;
    else if (t == DT_F64) ((double *)h)[i] = v;
    else if (t == DT_I32) ((int32_t *)h)[i] = (int32_t)(v * 10);
    else ((int64_t *)h)[i] = (int64_t)(v * 10);
  }
  x = dt_from_data(h, s, t, dev);
  free(h);
  return x;
}

/* All values of t as doubles (a malloc'd array the caller frees). */
static double *values(const dt_tensor *t) {
  int64_t n = dt_numel(t), i;
  void *h = malloc(dt_nbytes(t) + 8);
  double *v = (double *)malloc((size_t)(n + 1) * sizeof(double));
  if (dt_to_host(t, h, dt_nbytes(t) + 8) != DT_OK) { free(h); free(v); return NULL; }
  for (i = 0; i < n; i++) {
    switch (dt_dtype_of(t)) {
      case DT_F32: v[i] = ((float *)h)[i]; break;
      case DT_F64: v[i] = ((double *)h)[i]; break;
      case DT_I32: v[i] = ((int32_t *)h)[i]; break;
      case DT_I64: v[i] = (double)((int64_t *)h)[i]; break;
      case DT_U8: case DT_BOOL: v[i] = ((uint8_t *)h)[i]; break;
      default: break; /* float16, bfloat16: tests/test_half.c */
    }
  }
  free(h);
  return v;
}

static int same_shape(dt_shape a, dt_shape b) {
  int i;
  if (a.ndim != b.ndim) return 0;
  for (i = 0; i < a.ndim; i++) if (a.dims[i] != b.dims[i]) return 0;
  return 1;
}

/* Reference broadcast of a op b over shapes sa, sb; compares with y. */
static int check_binary(const dt_tensor *a, const dt_tensor *b, const dt_tensor *y, int op, double tol) {
  dt_shape sa = dt_shape_of(a), sb = dt_shape_of(b), sy = dt_shape_of(y);
  double *va = values(a), *vb = values(b), *vy = values(y);
  int64_t n = dt_numel(y), i;
  int bad = 0, nd = sy.ndim, k;
  for (i = 0; i < n && !bad; i++) {
    int64_t rem = i, ia = 0, ib = 0, mula = 1, mulb = 1;
    double x, w, r = 0;
    for (k = nd - 1; k >= 0; k--) {
      int64_t q = rem % sy.dims[k];
      int ka = k - (nd - sa.ndim), kb = k - (nd - sb.ndim);
      rem /= sy.dims[k];
      if (ka >= 0) { if (sa.dims[ka] != 1) ia += q * mula; mula *= sa.dims[ka]; }
      if (kb >= 0) { if (sb.dims[kb] != 1) ib += q * mulb; mulb *= sb.dims[kb]; }
    }
    x = va[ia]; w = vb[ib];
    switch (op) { case 0: r = x + w; break; case 1: r = x - w; break; case 2: r = x * w; break; case 3: r = x / w; break; }
    if (!(vy[i] == r || (vy[i] != vy[i] && r != r) || fabs(vy[i] - r) <= tol * (1 + fabs(r)))) { /* infinities and NaN: integers divided by 0 */ bad = 1; printf("  element %lld: got %.9g, expected %.9g\n", (long long)i, vy[i], r); }
  }
  free(va); free(vb); free(vy);
  return !bad;
}

static void test_binary_broadcast(dt_device dev) {
  static const int64_t shapes[][2][5] = {
    /* ndim a, dims a..., then ndim b, dims b... */
    {{2, 2, 3}, {2, 2, 3}},
    {{2, 2, 3}, {1, 3}},
    {{2, 2, 3}, {2, 2, 1}},
    {{3, 2, 1, 4}, {2, 3, 1}},
    {{1, 5}, {0}},
    {{0}, {3, 4, 1, 2}},
    {{4, 2, 3, 1, 5}, {4, 1, 3, 7, 1}},
    {{2, 1, 1000}, {2, 300, 1}},
    {{2, 0, 3}, {1, 3}},
    {{1, 70000}, {1, 70000}},
  };
  static const char *names[] = {"dt_add", "dt_sub", "dt_mul", "dt_div"};
  dt_tensor *(*fns[4])(const dt_tensor *, const dt_tensor *) = {dt_add, dt_sub, dt_mul, dt_div};
  size_t c;
  int op, t;
  for (c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    dt_shape sa = dt_shape_n((int)shapes[c][0][0], &shapes[c][0][1]);
    dt_shape sb = dt_shape_n((int)shapes[c][1][0], &shapes[c][1][1]);
    for (t = 0; t < 4; t++) {
      dt_dtype dt = (dt_dtype)t;
      dt_tensor *a = make(sa, dt, 1, dev), *b = make(sb, dt, 2, dev);
      for (op = 0; op < 4; op++) {
        dt_tensor *y = fns[op](a, b);
        /* integer true division gives float32, as torch.div */
        dt_dtype want = op == 3 && !(dt == DT_F32 || dt == DT_F64) ? DT_F32 : dt;
        T_CHECK_MSG(y != NULL, "%s case %d dtype %d: %s", names[op], (int)c, t, dt_last_error());
        if (!y) continue;
        T_CHECK(dt_dtype_of(y) == want && dt_device_equal(dt_device_of(y), dev));
        T_CHECK_MSG(check_binary(a, b, y, op, want == DT_F32 ? 1e-6 : 1e-12), "%s case %d dtype %d", names[op], (int)c, t);
        dt_release(y);
      }
      dt_release(a); dt_release(b);
    }
  }
}

static void test_binary_errors(dt_device dev) {
  dt_tensor *a = dt_ones(dt_shape2(2, 3), dev), *b = dt_ones(dt_shape1(4), dev), *c, *y;
  y = dt_add(a, b);
  T_CHECK(y == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK_MSG(contains(dt_last_error(), "dt_add: shapes (2, 3) and (4,) cannot be broadcast"), "%s", dt_last_error());
  c = dt_cast(a, DT_F64);
  y = dt_mul(a, c); /* promoted, as torch.mul: float64 */
  T_CHECK(y && dt_dtype_of(y) == DT_F64);
  dt_release(y);
  y = dt_mul(c, b);
  T_CHECK(y == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK_MSG(contains(dt_last_error(), "dt_mul: shapes (2, 3) and (4,) cannot be broadcast"), "%s", dt_last_error());
  T_CHECK(dt_sub(a, NULL) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_STREQ(dt_last_error(), "dt_sub: b is NULL");
  dt_release(a); dt_release(b); dt_release(c);
}

/* The chapter: adding tensors on two devices is refused, never copied. */
static void test_mixed_devices(dt_device dev) {
  dt_tensor *x, *y, *z;
  char msg[200];
  if (dev.type == DT_CPU) T_SKIP("needs a GPU");
  x = dt_ones(dt_shape2(2, 3), dev);
  y = dt_rand(dt_shape2(2, 3), dt_cpu());
  z = dt_add(x, y);
  T_CHECK(z == NULL && dt_last_status() == DT_ERR_DEVICE_MISMATCH);
  snprintf(msg, sizeof msg, "dt_add: expected all tensors on the same device, but b is on cpu and a is on cuda:%d (move one with dt_to)", dev.index);
  T_STREQ(dt_last_error(), msg);
  T_CHECK(dt_matmul(x, y) == NULL && dt_last_status() == DT_ERR_DEVICE_MISMATCH);
  T_CHECK(dt_axpy_(x, 1.0, y) == DT_ERR_DEVICE_MISMATCH);
  /* the device check comes before the dtype and shape checks */
  z = dt_cast(y, DT_F64);
  T_CHECK(dt_sub(x, z) == NULL && dt_last_status() == DT_ERR_DEVICE_MISMATCH);
  dt_release(z);
  z = dt_ones(dt_shape1(7), dt_cpu());
  T_CHECK(dt_mul(x, z) == NULL && dt_last_status() == DT_ERR_DEVICE_MISMATCH);
  dt_release(x); dt_release(y); dt_release(z);
}

static void test_int_arithmetic(dt_device dev) {
  int32_t a32[3] = {INT32_MAX, -5, 7}, b32[3] = {1, 3, -2}, r32[3];
  int64_t a64[3] = {INT64_MAX, -5, 1LL << 40}, b64[3] = {1, 3, 1LL << 30}, r64[3];
  dt_tensor *a = dt_from_data(a32, dt_shape1(3), DT_I32, dev), *b = dt_from_data(b32, dt_shape1(3), DT_I32, dev), *y;
  y = dt_add(a, b);
  T_CHECK(dt_to_host(y, r32, sizeof r32) == DT_OK && r32[0] == INT32_MIN && r32[1] == -2 && r32[2] == 5); /* wraps */
  dt_release(y);
  y = dt_mul(a, b);
  T_CHECK(dt_to_host(y, r32, sizeof r32) == DT_OK && r32[0] == INT32_MAX && r32[1] == -15 && r32[2] == -14);
  dt_release(y);
  y = dt_add_scalar(a, 3);
  T_CHECK(dt_to_host(y, r32, sizeof r32) == DT_OK && r32[1] == -2 && r32[2] == 10);
  dt_release(y);
  y = dt_neg(b);
  T_CHECK(dt_to_host(y, r32, sizeof r32) == DT_OK && r32[0] == -1 && r32[2] == 2);
  dt_release(y);
  y = dt_add_scalar(a, 0.5); /* a float scalar: float32, as PyTorch */
  T_CHECK(y && dt_dtype_of(y) == DT_F32);
  dt_release(y);
  T_CHECK(dt_exp(a) == NULL && dt_last_status() == DT_ERR_DTYPE);
  T_CHECK_MSG(contains(dt_last_error(), "dt_exp: a is int32"), "%s", dt_last_error());
  T_CHECK(dt_sum(a) == NULL && dt_last_status() == DT_ERR_DTYPE);
  dt_release(a); dt_release(b);
  a = dt_from_data(a64, dt_shape1(3), DT_I64, dev); b = dt_from_data(b64, dt_shape1(3), DT_I64, dev);
  y = dt_sub(a, b);
  T_CHECK(dt_to_host(y, r64, sizeof r64) == DT_OK && r64[0] == INT64_MAX - 1 && r64[1] == -8 && r64[2] == (1LL << 40) - (1LL << 30));
  dt_release(y);
  y = dt_mul(a, b);
  /* 2^40 * 2^30 wraps to 0 */
  T_CHECK(dt_to_host(y, r64, sizeof r64) == DT_OK && r64[0] == INT64_MAX && r64[1] == -15 && r64[2] == 0);
  dt_release(y);
  dt_release(a); dt_release(b);
}

static void test_unary(dt_device dev) {
  int t, op;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_F64 : DT_F32;
    dt_tensor *a = make(dt_shape2(7, 100), dt, 3, dev);
    double *va = values(a), tol = t ? 1e-13 : 2e-6;
    for (op = 0; op < 7; op++) {
      dt_tensor *y = NULL;
      double *vy;
      int64_t i;
      switch (op) {
        case 0: y = dt_exp(a); break;
        case 1: y = dt_log(a); break;
        case 2: y = dt_sqrt(a); break;
        case 3: y = dt_neg(a); break;
        case 4: y = dt_relu(a); break;
        case 5: y = dt_add_scalar(a, 1.5); break;
        case 6: y = dt_mul_scalar(a, -2.5); break;
      }
      T_CHECK(y && dt_dtype_of(y) == dt && same_shape(dt_shape_of(y), dt_shape_of(a)));
      if (!y) continue;
      vy = values(y);
      for (i = 0; i < 700; i++) {
        double x = va[i], r = 0;
        switch (op) {
          case 0: r = exp(x); break;
          case 1: r = log(x); break;
          case 2: r = sqrt(x); break;
          case 3: r = -x; break;
          case 4: r = x > 0 ? x : 0; break;
          case 5: r = x + 1.5; break;
          case 6: r = x * -2.5; break;
        }
        if (isnan(r)) T_CHECK_MSG(isnan(vy[i]), "op %d at %g", op, x);
        else T_CHECK_MSG(fabs(vy[i] - r) <= tol * (1 + fabs(r)), "op %d at %g: %.9g vs %.9g", op, x, vy[i], r);
      }
      free(vy);
      dt_release(y);
    }
    free(va);
    dt_release(a);
  }
}

/* relu and the relu layer's gradient on the values where a select and a mask can differ from
   `x > 0 ? x : 0`: NaN stays NaN, -0 becomes +0, infinities, denormals; 67 elements, so that
   the vector loops and their tails both run (the GPU follows the same rule). */
static void test_relu_special(dt_device dev) {
  static const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-40f, -1e-40f, 3.5f, -2.25f, 1e30f, -1e30f};
  enum { N = 67 };
  float x[N], g[N], y[N], dx[N];
  int i, bad = 0, badg = 0;
  dt_tensor *tx, *tg, *ty, *tdx;
  dt_module *layer = dt_relu_layer();
  for (i = 0; i < N; i++) {
    x[i] = sp[i % 10];
    g[i] = (float)(i + 1) * (i % 3 ? 1.0f : -1.0f);
  }
  x[11] = (float)NAN; x[40] = (float)INFINITY; x[41] = -(float)INFINITY; x[66] = (float)NAN;
  g[2] = (float)NAN; g[3] = (float)NAN; /* where x > 0 the NaN passes, where x <= 0 it is 0 */
  tx = dt_from_data(x, dt_shape2(1, N), DT_F32, dev);
  tg = dt_from_data(g, dt_shape2(1, N), DT_F32, dev);
  ty = dt_relu(tx);
  T_CHECK(ty && dt_to_host(ty, y, sizeof y) == DT_OK);
  if (ty)
    for (i = 0; i < N; i++) {
      float r = x[i] > 0 ? x[i] : 0.0f;
      if (isnan(x[i]) ? !isnan(y[i]) : memcmp(&y[i], &r, sizeof r) != 0) bad++;
    }
  T_CHECK_MSG(bad == 0, "%d of %d relu values differ from x > 0 ? x : +0 (NaN kept)", bad, N);
  T_CHECK(dt_module_to(layer, dev) == DT_OK);
  dt_release(dt_forward(layer, tx));
  tdx = dt_backward(layer, tg);
  T_CHECK_MSG(tdx && dt_to_host(tdx, dx, sizeof dx) == DT_OK, "relu layer backward: %s", dt_last_error());
  if (tdx)
    for (i = 0; i < N; i++) {
      float r = x[i] > 0 ? g[i] : 0.0f;
      if (isnan(r) ? !isnan(dx[i]) : memcmp(&dx[i], &r, sizeof r) != 0) badg++;
    }
  T_CHECK_MSG(badg == 0, "%d of %d relu gradients differ from x > 0 ? g : +0", badg, N);
  dt_release(tx); dt_release(tg); dt_release(ty); dt_release(tdx);
  dt_module_free(layer);
}

static void ref_matmul(const double *a, const double *b, double *c, int64_t m, int64_t n, int64_t k) {
  int64_t i, j, p;
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      double s = 0;
      for (p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
}

static void test_matmul(dt_device dev) {
  static const int64_t sizes[][3] = {{1, 1, 1}, {2, 3, 4}, {17, 33, 9}, {64, 64, 64}, {100, 1, 50}, {1, 300, 257}, {129, 65, 200}, {3, 0, 2}, {4, 5, 0}};
  size_t c;
  int t;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_F64 : DT_F32;
    for (c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
      int64_t m = sizes[c][0], n = sizes[c][1], k = sizes[c][2], i;
      dt_tensor *a = make(dt_shape2(m, k), dt, 4, dev), *b = make(dt_shape2(k, n), dt, 5, dev), *y = dt_matmul(a, b);
      double *va = values(a), *vb = values(b), *vy, *r = (double *)malloc((size_t)(m * n + 1) * sizeof(double));
      T_CHECK_MSG(y != NULL, "%s", dt_last_error());
      if (y) {
        T_CHECK(same_shape(dt_shape_of(y), dt_shape2(m, n)));
        ref_matmul(va, vb, r, m, n, k);
        vy = values(y);
        for (i = 0; i < m * n; i++) T_CHECK_MSG(fabs(vy[i] - r[i]) <= (t ? 1e-12 : 1e-5) * (1 + fabs(r[i])) * (double)(k + 1),
                                                "(%lld,%lld,%lld)[%lld]: %.9g vs %.9g", (long long)m, (long long)n, (long long)k, (long long)i, vy[i], r[i]);
        free(vy);
      }
      free(va); free(vb); free(r);
      dt_release(a); dt_release(b); dt_release(y);
    }
  }
}

static void test_matmul_batched_and_vectors(dt_device dev) {
  dt_tensor *a = make(dt_shape3(3, 4, 5), DT_F32, 6, dev), *b = make(dt_shape3(3, 5, 2), DT_F32, 7, dev);
  dt_tensor *w = make(dt_shape2(5, 2), DT_F32, 8, dev), *v = make(dt_shape1(5), DT_F32, 9, dev), *y;
  double *va = values(a), *vb = values(b), *vw = values(w), *vv = values(v), *vy, r[40];
  int64_t i, bi;
  y = dt_matmul(a, b);
  T_CHECK(y && same_shape(dt_shape_of(y), dt_shape3(3, 4, 2)));
  vy = values(y);
  for (bi = 0; bi < 3; bi++) {
    ref_matmul(va + bi * 20, vb + bi * 10, r, 4, 2, 5);
    for (i = 0; i < 8; i++) T_CLOSE(vy[bi * 8 + i], r[i], 1e-5, 1e-5);
  }
  free(vy); dt_release(y);
  /* (b, m, k) @ (k, n): the same matrix for every batch item */
  y = dt_matmul(a, w);
  T_CHECK(y && same_shape(dt_shape_of(y), dt_shape3(3, 4, 2)));
  vy = values(y);
  for (bi = 0; bi < 3; bi++) {
    ref_matmul(va + bi * 20, vw, r, 4, 2, 5);
    for (i = 0; i < 8; i++) T_CLOSE(vy[bi * 8 + i], r[i], 1e-5, 1e-5);
  }
  free(vy); dt_release(y);
  /* vector @ matrix, matrix @ vector, vector @ vector */
  y = dt_matmul(v, w);
  T_CHECK(y && same_shape(dt_shape_of(y), dt_shape1(2)));
  vy = values(y); ref_matmul(vv, vw, r, 1, 2, 5);
  T_CLOSE(vy[0], r[0], 1e-5, 1e-5); T_CLOSE(vy[1], r[1], 1e-5, 1e-5);
  free(vy); dt_release(y);
  {
    dt_tensor *m = dt_reshape(a, dt_shape2(12, 5));
    y = dt_matmul(m, v);
    T_CHECK(y && same_shape(dt_shape_of(y), dt_shape1(12)));
    vy = values(y); ref_matmul(va, vv, r, 12, 1, 5);
    for (i = 0; i < 12; i++) T_CLOSE(vy[i], r[i], 1e-5, 1e-5);
    free(vy); dt_release(y); dt_release(m);
  }
  y = dt_matmul(v, v);
  T_CHECK(y && dt_ndim(y) == 0);
  ref_matmul(vv, vv, r, 1, 1, 5);
  T_CLOSE(dt_item(y), r[0], 1e-5, 1e-5);
  dt_release(y);
  /* errors */
  y = dt_matmul(a, v);
  T_CHECK(y == NULL && dt_last_status() == DT_ERR_SHAPE);
  y = dt_matmul(w, w);
  T_CHECK(y == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK_MSG(contains(dt_last_error(), "dt_matmul: shapes (5, 2) and (5, 2) cannot be multiplied (2 != 5)"), "%s", dt_last_error());
  {
    dt_tensor *i32 = dt_cast(w, DT_I32), *b2 = make(dt_shape3(2, 5, 2), DT_F32, 1, dev);
    T_CHECK(dt_matmul(i32, i32) == NULL && dt_last_status() == DT_ERR_DTYPE);
    T_CHECK(dt_matmul(a, b2) == NULL && dt_last_status() == DT_ERR_SHAPE);
    dt_release(i32); dt_release(b2);
  }
  free(va); free(vb); free(vw); free(vv);
  dt_release(a); dt_release(b); dt_release(w); dt_release(v);
}

static void test_transpose_reshape(dt_device dev) {
  int t;
  for (t = 0; t < 4; t++) {
    dt_tensor *a = make(dt_shape2(37, 129), (dt_dtype)t, 2, dev), *y = dt_transpose(a), *r;
    double *va = values(a), *vy = values(y);
    int64_t i, j;
    int bad = 0;
    T_CHECK(y && same_shape(dt_shape_of(y), dt_shape2(129, 37)) && dt_dtype_of(y) == (dt_dtype)t);
    for (i = 0; i < 37; i++) for (j = 0; j < 129; j++) bad += vy[j * 37 + i] != va[i * 129 + j];
    T_CHECK(bad == 0);
    r = dt_reshape(a, dt_shape3(-1, 3, 43));
    T_CHECK(r && same_shape(dt_shape_of(r), dt_shape3(37, 3, 43)));
    T_CHECK(r && dt_data_ptr(r) == dt_data_ptr(a)); /* a view, as PyTorch's */
    dt_release(r);
    T_CHECK(dt_reshape(a, dt_shape2(5, -1)) == NULL && dt_last_status() == DT_ERR_SHAPE);
    T_CHECK(dt_reshape(a, dt_shape2(-1, -1)) == NULL && dt_last_status() == DT_ERR_SHAPE);
    T_CHECK(dt_reshape(a, dt_shape2(37, 128)) == NULL && dt_last_status() == DT_ERR_SHAPE);
    T_CHECK_MSG(contains(dt_last_error(), "dt_reshape: cannot reshape (37, 129) (4773 elements) to (37, 128) (4736 elements)"), "%s", dt_last_error());
    free(va); free(vy);
    dt_release(a); dt_release(y);
  }
  {
    dt_tensor *v = dt_ones(dt_shape1(3), dev);
    T_CHECK(dt_transpose(v) == NULL && dt_last_status() == DT_ERR_SHAPE);
    dt_release(v);
  }
}

static void test_reductions(dt_device dev) {
  int t;
  for (t = 0; t < 2; t++) {
    dt_dtype dt = t ? DT_F64 : DT_F32;
    dt_tensor *a = make(dt_shape3(6, 50, 7), dt, 5, dev), *s = dt_sum(a), *m = dt_mean(a), *nr = dt_norm(a);
    double *va = values(a), sum = 0, sq = 0, tol = t ? 1e-12 : 1e-5;
    int64_t i, d;
    for (i = 0; i < 2100; i++) { sum += va[i]; sq += va[i] * va[i]; }
    T_CHECK(s && dt_ndim(s) == 0 && dt_device_equal(dt_device_of(s), dev) && dt_dtype_of(s) == dt);
    T_CLOSE(dt_item(s), sum, tol, tol);
    T_CLOSE(dt_item(m), sum / 2100, tol, tol);
    T_CLOSE(dt_item(nr), sqrt(sq), tol, tol);
    dt_release(s); dt_release(m); dt_release(nr);
    for (d = -3; d < 3; d++) {
      dt_tensor *y = dt_sum_dim(a, (int)d);
      int dd = (int)(d < 0 ? d + 3 : d);
      int64_t dims[3] = {6, 50, 7}, o, r, in, outer = 1, inner = 1, len = dims[dd];
      double *vy;
      int k;
      T_CHECK(y && dt_ndim(y) == 2);
      if (!y) continue;
      for (k = 0; k < dd; k++) outer *= dims[k];
      for (k = dd + 1; k < 3; k++) inner *= dims[k];
      vy = values(y);
      for (o = 0; o < outer; o++)
        for (in = 0; in < inner; in++) {
          double ref = 0;
          for (r = 0; r < len; r++) ref += va[(o * len + r) * inner + in];
          T_CLOSE(vy[o * inner + in], ref, tol, tol);
        }
      free(vy);
      dt_release(y);
    }
    T_CHECK(dt_sum_dim(a, 3) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
    T_CHECK(dt_sum_dim(a, -4) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
    free(va);
    dt_release(a);
  }
  {
    /* a long sum stays accurate, and empty tensors follow PyTorch: sum 0, mean nan */
    dt_tensor *o = dt_ones(dt_shape1(3000001), dev), *e = dt_zeros(dt_shape2(0, 3), dev), *s;
    s = dt_sum(o); T_CLOSE(dt_item(s), 3000001.0, 0, 1e-6); dt_release(s);
    s = dt_sum(e); T_CHECK(dt_item(s) == 0); dt_release(s);
    s = dt_mean(e); T_CHECK(isnan(dt_item(s))); dt_release(s);
    s = dt_sum_dim(e, 0);
    T_CHECK(s && same_shape(dt_shape_of(s), dt_shape1(3)));
    if (s) { double *v = values(s); T_CHECK(v[0] == 0 && v[1] == 0 && v[2] == 0); free(v); }
    dt_release(s);
    s = dt_sum_dim(e, 1); T_CHECK(s && same_shape(dt_shape_of(s), dt_shape1(0))); dt_release(s);
    dt_release(o); dt_release(e);
  }
}

static void test_cast(dt_device dev) {
  float f[6] = {1.9f, -1.9f, NAN, INFINITY, -3e9f, 3e9f};
  double d[6];
  int32_t i32[6];
  int64_t i64[6];
  dt_tensor *a = dt_from_data(f, dt_shape1(6), DT_F32, dev), *y;
  y = dt_cast(a, DT_I32);
  T_CHECK(dt_to_host(y, i32, sizeof i32) == DT_OK);
  /* toward zero; NaN becomes 0 and out-of-range values saturate (as CUDA's conversions do) */
  T_CHECK(i32[0] == 1 && i32[1] == -1 && i32[2] == 0 && i32[3] == INT32_MAX && i32[4] == INT32_MIN && i32[5] == INT32_MAX);
  dt_release(y);
  y = dt_cast(a, DT_I64);
  T_CHECK(dt_to_host(y, i64, sizeof i64) == DT_OK && i64[0] == 1 && i64[4] == -3000000000LL && i64[2] == 0);
  dt_release(y);
  y = dt_cast(a, DT_F64);
  T_CHECK(dt_to_host(y, d, sizeof d) == DT_OK && d[0] == (double)1.9f && isnan(d[2]) && isinf(d[3]));
  {
    dt_tensor *back = dt_cast(y, DT_F32), *same = dt_cast(a, DT_F32);
    float g[6];
    T_CHECK(dt_to_host(back, g, sizeof g) == DT_OK && g[0] == 1.9f && g[5] == 3e9f);
    T_CHECK(same != a && dt_to_host(same, g, sizeof g) == DT_OK && g[1] == -1.9f);
    dt_release(back); dt_release(same);
  }
  dt_release(y);
  {
    int64_t big[2] = {((int64_t)1 << 33) + 5, -7};
    dt_tensor *b = dt_from_data(big, dt_shape1(2), DT_I64, dev), *c = dt_cast(b, DT_I32), *e = dt_cast(b, DT_F32);
    T_CHECK(dt_to_host(c, i32, 8) == DT_OK && i32[0] == 5 && i32[1] == -7);
    T_CHECK(dt_to_host(e, f, 8) == DT_OK && f[0] == 8589934592.0f && f[1] == -7.0f);
    dt_release(b); dt_release(c); dt_release(e);
  }
  T_CHECK(dt_cast(a, (dt_dtype)8) == NULL && dt_last_status() == DT_ERR_DTYPE);
  dt_release(a);
}

static void test_fill_axpy(dt_device dev) {
  dt_tensor *y = make(dt_shape2(30, 3000), DT_F32, 1, dev), *x = make(dt_shape2(30, 3000), DT_F32, 2, dev);
  double *vy = values(y), *vx = values(x), *r;
  int64_t i;
  int bad = 0;
  T_CHECK(dt_axpy_(y, -0.5, x) == DT_OK);
  r = values(y);
  for (i = 0; i < 90000; i++) bad += fabs(r[i] - (vy[i] - 0.5 * vx[i])) > 1e-6;
  T_CHECK(bad == 0);
  free(r); free(vy); free(vx);
  { /* 13 elements, F32 and F64: the vector loop and its scalar tail */
    int t;
    for (t = 0; t < 2; t++) {
      dt_tensor *a = make(dt_shape1(13), t ? DT_F64 : DT_F32, 3, dev), *b = make(dt_shape1(13), t ? DT_F64 : DT_F32, 4, dev);
      double *va = values(a), *vb = values(b), *vr;
      T_CHECK(dt_axpy_(a, 2.5, b) == DT_OK);
      vr = values(a);
      for (i = 0, bad = 0; i < 13; i++) bad += fabs(vr[i] - (va[i] + 2.5 * vb[i])) > (t ? 1e-12 : 1e-6);
      T_CHECK_MSG(bad == 0, "axpy of 13 %s elements: %d wrong", t ? "float64" : "float32", bad);
      free(va); free(vb); free(vr);
      dt_release(a); dt_release(b);
    }
  }
  {
    dt_tensor *z = dt_zeros(dt_shape2(3000, 30), dev), *i32 = dt_cast(x, DT_I32);
    T_CHECK(dt_axpy_(z, 1, x) == DT_ERR_SHAPE);
    T_CHECK(dt_axpy_(i32, 1, i32) == DT_ERR_DTYPE);
    T_CHECK(dt_fill_(i32, -7.9) == DT_OK); /* toward zero, as a cast */
    r = values(i32);
    for (i = 0; i < 90000; i++) bad += r[i] != -7;
    T_CHECK(bad == 0);
    free(r);
    dt_release(z); dt_release(i32);
  }
  T_CHECK(dt_fill_(y, 0.25) == DT_OK);
  r = values(y);
  for (i = 0, bad = 0; i < 90000; i++) bad += r[i] != 0.25;
  T_CHECK(bad == 0);
  free(r);
  dt_release(x); dt_release(y);
}

static void test_stack(dt_device dev) {
  dt_tensor *a = make(dt_shape2(2, 3), DT_F32, 1, dev), *b = make(dt_shape2(2, 3), DT_F32, 2, dev), *y;
  const dt_tensor *ts[3];
  double *va = values(a), *vb = values(b), *vy;
  int i, bad = 0;
  ts[0] = a; ts[1] = b; ts[2] = a;
  y = dt_stack(ts, 3);
  T_CHECK(y && same_shape(dt_shape_of(y), dt_shape3(3, 2, 3)) && dt_device_equal(dt_device_of(y), dev));
  vy = values(y);
  for (i = 0; i < 6; i++) bad += vy[i] != va[i] || vy[6 + i] != vb[i] || vy[12 + i] != va[i];
  T_CHECK(bad == 0);
  free(va); free(vb); free(vy); dt_release(y);
  {
    dt_tensor *s0 = dt_sum(a), *s1 = dt_sum(b);
    const dt_tensor *ss[2];
    ss[0] = s0; ss[1] = s1;
    y = dt_stack(ss, 2); /* 0-d tensors stack into a vector: a log kept on the device */
    T_CHECK(y && same_shape(dt_shape_of(y), dt_shape1(2)));
    dt_release(y); dt_release(s0); dt_release(s1);
  }
  ts[1] = NULL;
  T_CHECK(dt_stack(ts, 3) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_stack(ts, 0) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  y = dt_transpose(a); ts[1] = y;
  T_CHECK(dt_stack(ts, 2) == NULL && dt_last_status() == DT_ERR_SHAPE);
  dt_release(y); dt_release(a); dt_release(b);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_stack);
  T_RUN_ALL_DEVICES(test_binary_broadcast);
  T_RUN_ALL_DEVICES(test_binary_errors);
  T_RUN_ALL_DEVICES(test_mixed_devices);
  T_RUN_ALL_DEVICES(test_int_arithmetic);
  T_RUN_ALL_DEVICES(test_unary);
  T_RUN_ALL_DEVICES(test_relu_special);
  T_RUN_ALL_DEVICES(test_matmul);
  T_RUN_ALL_DEVICES(test_matmul_batched_and_vectors);
  T_RUN_ALL_DEVICES(test_transpose_reshape);
  T_RUN_ALL_DEVICES(test_reductions);
  T_RUN_ALL_DEVICES(test_cast);
  T_RUN_ALL_DEVICES(test_fill_axpy);
  return t_finish();
}
