/* dt_slice, dt_index_select, dt_cat, dt_permute on every device and dtype.
   Expected values are PyTorch's (torch 1.13, Debian's /usr/bin/python3), held literally;
   the inputs are small integers, so every dtype holds them exactly and one table serves
   F32, F64, I32 and I64. Generated with:

     import torch
     x = torch.arange(24.).reshape(2, 3, 4)
     def p(name, t): print(name, tuple(t.shape), [int(v) for v in t.flatten().tolist()])
     p("s0", x[1:2]); p("s1", x[:, -2:]); p("s2", x[:, :, 1:-1]); p("s3", x[:, -5:2])
     p("s4", x[:, :, 3:1]); p("s5", x[:, :, -100:100]); p("s6", x[-1:]); p("s7", x[:, 2:3, :])
     y = torch.arange(12.).reshape(3, 4)
     p("i0", torch.index_select(y, 0, torch.tensor([2, 0, 2])))
     p("i1", torch.index_select(y, 1, torch.tensor([3, 1])))
     p("i2", torch.index_select(y, -1, torch.tensor([0, 0, 0, 3, 2])))
     p("i3", torch.index_select(y, 0, torch.tensor([], dtype=torch.long)))
     p("i4", torch.index_select(x, 1, torch.tensor([1])))
     p("i5", torch.index_select(torch.arange(5.) * 10, 0, torch.tensor(3)))
     a = torch.arange(6.).reshape(2, 3); b = torch.arange(100., 102.).reshape(2, 1)
     c = torch.arange(200., 203.).reshape(1, 3)
     p("c0", torch.cat([a, b], 1)); p("c1", torch.cat([a, c], 0))
     p("c2", torch.cat([a, torch.zeros(0), c, a], -2))
     p("c3", torch.cat([torch.zeros(2, 0), a, torch.zeros(2, 0), b], 1))
     p("c4", torch.cat([torch.zeros(0), torch.zeros(0)], 1))
     p("c5", torch.cat([torch.zeros(0, 3), torch.zeros(0, 3)], 0))
     p("p0", x.permute(2, 0, 1))
     z = torch.arange(12.).reshape(2, 3, 1, 2)
     p("p1", z.permute(-1, 1, 0, -2)); p("p2", z.permute(0, 1, 2, 3)); p("p3", z.permute(3, 2, 1, 0))
     torch.index_select(torch.arange(5), 0, torch.tensor([-1]))  # IndexError: index out of range in self
*/
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdint.h>
#include <stdlib.h>

static const dt_dtype DTYPES[] = {DT_F32, DT_F64, DT_I32, DT_I64};
#define NDT ((int)(sizeof DTYPES / sizeof DTYPES[0]))

/* arange(n) of dtype t shaped s, on d */
static dt_tensor *iota(dt_shape s, dt_dtype t, dt_device d) {
  dt_tensor *a, *r;
  int64_t n = 1;
  int i;
  for (i = 0; i < s.ndim; i++) n *= s.dims[i];
  a = dt_arange(0, (double)n, 1, t, d);
  if (!a) return NULL;
  r = dt_reshape(a, s);
  dt_release(a);
  return r;
}

/* element i of host data of dtype t, as a double */
static double at(const void *p, dt_dtype t, int64_t i) {
  switch (t) {
    case DT_F32: return ((const float *)p)[i];
    case DT_F64: return ((const double *)p)[i];
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    default: return NAN;
  }
}

/* t has dtype dt, shape dims[0..nd) and the values vals (n of them) */
static int matches(const char *what, dt_tensor *t, dt_dtype dt, int nd, const int64_t *dims, const double *vals, int64_t n) {
  double host[256];
  unsigned char buf[256 * 8];
  int64_t i;
  int k;
  if (!t) { printf("  %s: NULL: %s\n", what, dt_last_error()); return 0; }
  if (dt_dtype_of(t) != dt || dt_ndim(t) != nd || dt_numel(t) != n) {
    printf("  %s: dtype %s, %d dims, %lld elements; expected %s, %d, %lld\n", what, dt_dtype_name(dt_dtype_of(t)), dt_ndim(t),
           (long long)dt_numel(t), dt_dtype_name(dt), nd, (long long)n);
    return 0;
  }
  for (k = 0; k < nd; k++)
    if (dt_dim(t, k) != dims[k]) { printf("  %s: dim %d is %lld, expected %lld\n", what, k, (long long)dt_dim(t, k), (long long)dims[k]); return 0; }
  if (n == 0) return 1;
  if (n > 256 || dt_to_host(t, buf, sizeof buf) != DT_OK) { printf("  %s: to_host: %s\n", what, dt_last_error()); return 0; }
  for (i = 0; i < n; i++) host[i] = at(buf, dt, i);
  for (i = 0; i < n; i++)
    if (host[i] != vals[i]) { printf("  %s (%s): element %lld is %g, expected %g\n", what, dt_dtype_name(dt), (long long)i, host[i], vals[i]); return 0; }
  return 1;
}
#define MATCH(what, t, dt, dims, vals) \
  matches(what, t, dt, (int)(sizeof dims / sizeof dims[0]), dims, vals, (int64_t)(sizeof vals / sizeof vals[0]))
#define MATCH_EMPTY(what, t, dt, dims) matches(what, t, dt, (int)(sizeof dims / sizeof dims[0]), dims, NULL, 0)

static void test_slice(dt_device dev) {
  static const int64_t d0[] = {1, 3, 4}, d1[] = {2, 2, 4}, d2[] = {2, 3, 2}, d3[] = {2, 2, 4}, d4[] = {2, 3, 0},
                       d5[] = {2, 3, 4}, d6[] = {1, 3, 4}, d7[] = {2, 1, 4};
  static const double s0[] = {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};
  static const double s1[] = {4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23};
  static const double s2[] = {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22};
  static const double s3[] = {0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17, 18, 19};
  static const double s5[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};
  static const double s7[] = {8, 9, 10, 11, 20, 21, 22, 23};
  int k;
  for (k = 0; k < NDT; k++) {
    dt_dtype dt = DTYPES[k];
    dt_tensor *x = iota(dt_shape3(2, 3, 4), dt, dev), *y;
    T_CHECK(x != NULL);
    y = dt_slice(x, 0, 1, 2);                 T_CHECK(MATCH("x[1:2]", y, dt, d0, s0)); dt_release(y);
    y = dt_slice(x, 1, -2, INT64_MAX);        T_CHECK(MATCH("x[:, -2:]", y, dt, d1, s1)); dt_release(y);
    y = dt_slice(x, 2, 1, -1);                T_CHECK(MATCH("x[:, :, 1:-1]", y, dt, d2, s2)); dt_release(y);
    y = dt_slice(x, -2, -5, 2);               T_CHECK(MATCH("x[:, -5:2]", y, dt, d3, s3)); dt_release(y);
    y = dt_slice(x, 2, 3, 1);                 T_CHECK(MATCH_EMPTY("x[:, :, 3:1]", y, dt, d4)); dt_release(y);
    y = dt_slice(x, -1, -100, 100);           T_CHECK(MATCH("x[:, :, -100:100]", y, dt, d5, s5)); dt_release(y);
    y = dt_slice(x, 0, -1, INT64_MAX);        T_CHECK(MATCH("x[-1:]", y, dt, d6, s0)); dt_release(y);
    y = dt_slice(x, 1, 2, 3);                 T_CHECK(MATCH("x[:, 2:3, :]", y, dt, d7, s7)); dt_release(y);
    y = dt_slice(x, 0, INT64_MIN, INT64_MAX); T_CHECK(MATCH("x[-huge:huge]", y, dt, d5, s5)); dt_release(y);
    y = dt_slice(x, 0, 5, 7);                 /* x[5:7]: (0, 3, 4) */
    T_CHECK(y && dt_ndim(y) == 3 && dt_dim(y, 0) == 0 && dt_dim(y, 1) == 3 && dt_numel(y) == 0);
    dt_release(y);
    dt_release(x);
  }
}

/* Along dim 0 a slice is a view: same memory at an offset, writes seen both ways, either side
   released first; no new allocation on the device. */
static void test_slice_view(dt_device dev) {
  dt_tensor *x, *v, *w, *r, *sum;
  dt_memory_stats base, before, after;
  float host[15];
  int64_t i64[8];
  int i;
  T_CHECK(dt_memory_stats_get(dev, &base) == DT_OK);
  x = iota(dt_shape2(5, 3), DT_F32, dev);
  T_CHECK(x != NULL);
  T_CHECK(dt_memory_stats_get(dev, &before) == DT_OK);
  v = dt_slice(x, 0, 1, 4); /* rows 1..3 */
  T_CHECK(dt_memory_stats_get(dev, &after) == DT_OK);
  T_CHECK(v != NULL && after.allocated == before.allocated);
  T_CHECK((char *)dt_data_ptr(v) == (char *)dt_data_ptr(x) + 3 * sizeof(float));
  T_CHECK(dt_fill_(v, 7) == DT_OK); /* through the view into x */
  T_CHECK(dt_to_host(x, host, sizeof host) == DT_OK);
  for (i = 0; i < 15; i++) T_CHECK(host[i] == (i >= 3 && i < 12 ? 7.0f : (float)i));
  /* a slice of a slice: rows 2..3 of x, still one offset into x's memory */
  w = dt_slice(v, 0, 1, 100);
  T_CHECK(w && dt_dim(w, 0) == 2 && (char *)dt_data_ptr(w) == (char *)dt_data_ptr(x) + 6 * sizeof(float));
  T_CHECK(dt_fill_(x, 1) == DT_OK); /* through x into the views */
  sum = dt_sum(w);
  T_CHECK(sum && dt_item(sum) == 6.0);
  dt_release(sum);
  /* a reshape of a view shares it too */
  r = dt_reshape(w, dt_shape1(6));
  T_CHECK(r && dt_data_ptr(r) == dt_data_ptr(w));
  /* parent first: the views keep its memory */
  dt_release(x);
  T_CHECK(dt_fill_(r, 3) == DT_OK);
  sum = dt_sum(v);
  T_CHECK(sum && dt_item(sum) == 1 * 3 + 3 * 6); /* row 1 of x is still 1, rows 2..3 are 3 */
  dt_release(sum);
  dt_release(v);
  T_CHECK(dt_to_host(w, host, 6 * sizeof(float)) == DT_OK && host[0] == 3 && host[5] == 3);
  dt_release(w);
  dt_release(r);
  /* view first, then the parent; and an empty view at the end */
  x = iota(dt_shape2(4, 2), DT_I64, dev);
  v = dt_slice(x, 0, -1, INT64_MAX);
  w = dt_slice(x, 0, 4, 4);
  T_CHECK(v && w && dt_numel(w) == 0 && dt_dim(w, 0) == 0 && dt_dim(w, 1) == 2);
  T_CHECK(v && dt_numel(v) == 2 && (char *)dt_data_ptr(v) == (char *)dt_data_ptr(x) + 6 * sizeof(int64_t));
  dt_release(v);
  dt_release(w);
  T_CHECK(dt_to_host(x, i64, sizeof i64) == DT_OK && i64[6] == 6 && i64[7] == 7);
  dt_release(x);
  T_CHECK(dt_memory_stats_get(dev, &after) == DT_OK && after.allocated == base.allocated); /* all of it given back */
}

static void test_index_select(dt_device dev) {
  static const int64_t d0[] = {3, 4}, d1[] = {3, 2}, d2[] = {3, 5}, d3[] = {0, 4}, d4[] = {2, 1, 4}, d5[] = {1};
  static const double i0[] = {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11};
  static const double i1[] = {3, 1, 7, 5, 11, 9};
  static const double i2[] = {0, 0, 0, 3, 2, 4, 4, 4, 7, 6, 8, 8, 8, 11, 10};
  static const double i4[] = {4, 5, 6, 7, 16, 17, 18, 19};
  static const double i5[] = {30};
  static const int64_t a0[] = {2, 0, 2}, a1[] = {3, 1}, a2[] = {0, 0, 0, 3, 2}, a4[] = {1}, a5 = 3;
  int k;
  dt_tensor *j0 = dt_from_data(a0, dt_shape1(3), DT_I64, dev), *j1 = dt_from_data(a1, dt_shape1(2), DT_I64, dev),
            *j2 = dt_from_data(a2, dt_shape1(5), DT_I64, dev), *j3 = dt_empty(dt_shape1(0), DT_I64, dev),
            *j4 = dt_from_data(a4, dt_shape1(1), DT_I64, dev), *j5 = dt_from_data(&a5, dt_shape0(), DT_I64, dev);
  T_CHECK(j0 && j1 && j2 && j3 && j4 && j5);
  for (k = 0; k < NDT; k++) {
    dt_dtype dt = DTYPES[k];
    dt_tensor *y = iota(dt_shape2(3, 4), dt, dev), *x = iota(dt_shape3(2, 3, 4), dt, dev), *t = dt_arange(0, 50, 10, dt, dev), *r;
    r = dt_index_select(y, 0, j0);  T_CHECK(MATCH("index_select(y, 0, [2, 0, 2])", r, dt, d0, i0)); dt_release(r);
    r = dt_index_select(y, 1, j1);  T_CHECK(MATCH("index_select(y, 1, [3, 1])", r, dt, d1, i1)); dt_release(r);
    r = dt_index_select(y, -1, j2); T_CHECK(MATCH("index_select(y, -1, [0, 0, 0, 3, 2])", r, dt, d2, i2)); dt_release(r);
    r = dt_index_select(y, 0, j3);  T_CHECK(MATCH_EMPTY("index_select(y, 0, [])", r, dt, d3)); dt_release(r);
    r = dt_index_select(x, 1, j4);  T_CHECK(MATCH("index_select(x, 1, [1])", r, dt, d4, i4)); dt_release(r);
    r = dt_index_select(t, 0, j5);  T_CHECK(MATCH("index_select(arange * 10, 0, 3)", r, dt, d5, i5)); dt_release(r);
    dt_release(y); dt_release(x); dt_release(t);
  }
  dt_release(j0); dt_release(j1); dt_release(j2); dt_release(j3); dt_release(j4); dt_release(j5);
}

/* An index outside [0, n) is refused, negatives included (torch.index_select: "index out of range
   in self"). On the CPU at once, naming the value; on a GPU the kernel reads nothing for it, writes
   zeros, and the next synchronizing call fails with the value, once. */
static void test_index_select_out_of_range(dt_device dev) {
  static const int64_t bad[][3] = {{0, 3, 1}, {-1, 0, 1}, {INT64_MAX, 1, 2}, {1, 2, INT64_MIN}};
  static const char *const words[] = {"3", "-1", "9223372036854775807", "-9223372036854775808"};
  dt_tensor *y = iota(dt_shape2(3, 2), DT_F32, dev), *e = dt_empty(dt_shape2(0, 3), DT_F32, dev);
  float host[6];
  int c;
  for (c = 0; c < 4; c++) {
    dt_tensor *j = dt_from_data(bad[c], dt_shape1(3), DT_I64, dev), *r;
    dt_clear_error();
    r = dt_index_select(y, 0, j);
    if (dev.type == DT_CPU) {
      T_CHECK(r == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
      T_CHECK_MSG(strncmp(dt_last_error(), "dt_index_select: index[", 23) == 0 && strstr(dt_last_error(), words[c]) &&
                  strstr(dt_last_error(), "size 3"), "%s", dt_last_error());
    } else {
      /* queued: the call itself succeeds; the report comes at the next synchronizing call */
      T_CHECK(r != NULL);
      if (c % 2 == 0) {
        T_CHECK(dt_to_host(r, host, sizeof host) == DT_ERR_INVALID_ARGUMENT);
        T_CHECK_MSG(strncmp(dt_last_error(), "dt_to_host: dt_index_select on cuda:", 36) == 0 &&
                    strstr(dt_last_error(), words[c]) && strstr(dt_last_error(), "size 3"), "%s", dt_last_error());
      } else {
        T_CHECK(dt_synchronize(dev) == DT_ERR_INVALID_ARGUMENT);
        T_CHECK_MSG(strncmp(dt_last_error(), "dt_synchronize: dt_index_select on cuda:", 40) == 0 &&
                    strstr(dt_last_error(), words[c]), "%s", dt_last_error());
      }
      /* reported once; the bad rows are zeros, the good ones x's rows */
      T_CHECK(dt_synchronize(dev) == DT_OK);
      T_CHECK(r && dt_to_host(r, host, sizeof host) == DT_OK);
      {
        int row, col;
        for (row = 0; row < 3; row++)
          for (col = 0; col < 2; col++) {
            int64_t v = bad[c][row];
            T_CHECK(host[row * 2 + col] == (v >= 0 && v < 3 ? (float)(v * 2 + col) : 0.0f));
          }
      }
    }
    dt_release(r);
    /* an empty result still has its indices checked: (0, 3) along dim 1 */
    r = dt_index_select(e, 1, j);
    if (dev.type == DT_CPU) T_CHECK(r == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
    else {
      T_CHECK(r != NULL && dt_numel(r) == 0);
      T_CHECK(dt_synchronize(dev) == DT_ERR_INVALID_ARGUMENT && strstr(dt_last_error(), words[c]));
    }
    dt_release(r);
    dt_release(j);
  }
  /* any index into a dimension of size 0 is refused at once, on every device */
  {
    int64_t z = 0;
    dt_tensor *j = dt_from_data(&z, dt_shape1(1), DT_I64, dev), *r = dt_index_select(e, 0, j);
    T_CHECK(r == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT && strstr(dt_last_error(), "size 0"));
    dt_release(j);
  }
  /* nothing left to report */
  T_CHECK(dt_synchronize(dev) == DT_OK);
  dt_release(y); dt_release(e);
}

static void test_cat(dt_device dev) {
  static const int64_t d0[] = {2, 4}, d1[] = {3, 3}, d2[] = {5, 3}, d4[] = {0}, d5[] = {0, 3}, d23[] = {2, 3};
  static const double c0[] = {0, 1, 2, 100, 3, 4, 5, 101};
  static const double c1[] = {0, 1, 2, 3, 4, 5, 200, 201, 202};
  static const double c2[] = {0, 1, 2, 3, 4, 5, 200, 201, 202, 0, 1, 2, 3, 4, 5};
  static const double ca[] = {0, 1, 2, 3, 4, 5};
  int k;
  for (k = 0; k < NDT; k++) {
    dt_dtype dt = DTYPES[k];
    dt_tensor *a = iota(dt_shape2(2, 3), dt, dev), *b0 = dt_arange(100, 102, 1, dt, dev), *b = dt_reshape(b0, dt_shape2(2, 1)),
              *c0t = dt_arange(200, 203, 1, dt, dev), *c = dt_reshape(c0t, dt_shape2(1, 3)), *e = dt_empty(dt_shape1(0), dt, dev),
              *e20 = dt_empty(dt_shape2(2, 0), dt, dev), *e03 = dt_empty(dt_shape2(0, 3), dt, dev), *r;
    const dt_tensor *ts[4];
    ts[0] = a; ts[1] = b;
    r = dt_cat(ts, 2, 1); T_CHECK(MATCH("cat([a, b], 1)", r, dt, d0, c0)); dt_release(r);
    ts[1] = c;
    r = dt_cat(ts, 2, 0); T_CHECK(MATCH("cat([a, c], 0)", r, dt, d1, c1)); dt_release(r);
    ts[1] = e; ts[2] = c; ts[3] = a;
    r = dt_cat(ts, 4, -2); T_CHECK(MATCH("cat([a, (0,), c, a], -2)", r, dt, d2, c2)); dt_release(r);
    ts[0] = e20; ts[1] = a; ts[2] = e20; ts[3] = b;
    r = dt_cat(ts, 4, 1); T_CHECK(MATCH("cat([(2, 0), a, (2, 0), b], 1)", r, dt, d0, c0)); dt_release(r);
    ts[0] = e; ts[1] = e;
    r = dt_cat(ts, 2, 1); T_CHECK(MATCH_EMPTY("cat([(0,), (0,)], 1)", r, dt, d4)); dt_release(r);
    ts[0] = e03; ts[1] = e03;
    r = dt_cat(ts, 2, 0); T_CHECK(MATCH_EMPTY("cat([(0, 3), (0, 3)], 0)", r, dt, d5)); dt_release(r);
    ts[0] = a;
    r = dt_cat(ts, 1, 0); T_CHECK(MATCH("cat([a], 0)", r, dt, d23, ca));
    T_CHECK(r && dt_data_ptr(r) != dt_data_ptr(a)); /* a copy */
    dt_release(r);
    /* refusals: sizes other than along dim, 0-d tensors */
    ts[0] = a; ts[1] = b;
    dt_clear_error();
    T_CHECK(dt_cat(ts, 2, 0) == NULL && dt_last_status() == DT_ERR_SHAPE);
    T_CHECK_MSG(strstr(dt_last_error(), "ts[0] has shape (2, 3) but ts[1] has shape (2, 1)") != NULL, "%s", dt_last_error());
    dt_release(a); dt_release(b0); dt_release(b); dt_release(c0t); dt_release(c); dt_release(e); dt_release(e20); dt_release(e03);
  }
}

static void test_permute(dt_device dev) {
  static const int64_t d0[] = {4, 2, 3}, d1[] = {2, 3, 2, 1}, d2[] = {2, 3, 1, 2}, d3[] = {2, 1, 3, 2}, dz[] = {1};
  static const double p0[] = {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23};
  static const double p1[] = {0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11};
  static const double p2[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  static const int q0[] = {2, 0, 1}, q1[] = {-1, 1, 0, -2}, q2[] = {0, 1, 2, 3}, q3[] = {3, 2, 1, 0}, qbad[] = {0, 2, -2, 1};
  static const double five[] = {5};
  int k;
  for (k = 0; k < NDT; k++) {
    dt_dtype dt = DTYPES[k];
    dt_tensor *x = iota(dt_shape3(2, 3, 4), dt, dev), *z = iota(dt_shape4(2, 3, 1, 2), dt, dev), *s0 = dt_arange(5, 6, 1, dt, dev),
              *s = dt_reshape(s0, dt_shape0()), *r;
    r = dt_permute(x, q0); T_CHECK(MATCH("x.permute(2, 0, 1)", r, dt, d0, p0)); dt_release(r);
    r = dt_permute(z, q1); T_CHECK(MATCH("z.permute(-1, 1, 0, -2)", r, dt, d1, p1)); dt_release(r);
    r = dt_permute(z, q2); T_CHECK(MATCH("z.permute(0, 1, 2, 3)", r, dt, d2, p2));
    T_CHECK(r && dt_data_ptr(r) != dt_data_ptr(z)); /* a copy, also when nothing moves */
    dt_release(r);
    r = dt_permute(z, q3); T_CHECK(MATCH("z.permute(3, 2, 1, 0)", r, dt, d3, p1)); dt_release(r);
    r = dt_permute(s, NULL); T_CHECK(matches("0-d permute", r, dt, 0, dz, five, 1)); dt_release(r);
    dt_clear_error();
    T_CHECK(dt_permute(z, qbad) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
    T_CHECK_MSG(strstr(dt_last_error(), "dims[2] = -2 repeats dimension 2") != NULL, "%s", dt_last_error());
    dt_release(x); dt_release(z); dt_release(s0); dt_release(s);
  }
}

/* Sizes that take the CPU's thread pool and many GPU blocks: every op against a plain loop on the host. */
static void test_large(dt_device dev) {
  enum { R = 300, C = 517 };
  int64_t *idx = (int64_t *)malloc(sizeof(int64_t) * R);
  float *h = (float *)malloc(sizeof(float) * R * C), *o = (float *)malloc(sizeof(float) * R * C * 2);
  static const int perm[] = {1, 0};
  dt_tensor *x, *j, *r, *a, *b;
  const dt_tensor *ts[2];
  int i, c, bad = 0;
  if (!idx || !h || !o) { free(idx); free(h); free(o); T_SKIP("no host memory"); }
  for (i = 0; i < R * C; i++) h[i] = (float)((i * 7919) % 10007);
  for (i = 0; i < R; i++) idx[i] = (i * 37 + 11) % R;
  x = dt_from_data(h, dt_shape2(R, C), DT_F32, dev);
  j = dt_from_data(idx, dt_shape1(R), DT_I64, dev);
  /* index_select along 0 and 1 */
  r = dt_index_select(x, 0, j);
  T_CHECK(r && dt_to_host(r, o, sizeof(float) * R * C) == DT_OK);
  for (i = 0; i < R && !bad; i++)
    for (c = 0; c < C; c++) if (o[i * C + c] != h[idx[i] * C + c]) { bad = 1; break; }
  T_CHECK(!bad);
  dt_release(r);
  r = dt_index_select(x, 1, j); /* the first R columns, shuffled */
  T_CHECK(r && dt_to_host(r, o, sizeof(float) * R * R) == DT_OK);
  for (i = 0; i < R && !bad; i++)
    for (c = 0; c < R; c++) if (o[i * R + c] != h[i * C + idx[c]]) { bad = 2; break; }
  T_CHECK(!bad);
  dt_release(r);
  /* permute = transpose */
  r = dt_permute(x, perm);
  T_CHECK(r && dt_to_host(r, o, sizeof(float) * R * C) == DT_OK);
  for (i = 0; i < R && !bad; i++)
    for (c = 0; c < C; c++) if (o[c * R + i] != h[i * C + c]) { bad = 3; break; }
  T_CHECK(!bad);
  dt_release(r);
  /* slices along 1 put back together by cat give x */
  a = dt_slice(x, 1, 0, 200);
  b = dt_slice(x, 1, 200, C);
  ts[0] = a; ts[1] = b;
  r = dt_cat(ts, 2, 1);
  T_CHECK(r && dt_to_host(r, o, sizeof(float) * R * C) == DT_OK && memcmp(o, h, sizeof(float) * R * C) == 0);
  dt_release(r);
  /* cat along 0 of x and x */
  ts[0] = x; ts[1] = x;
  r = dt_cat(ts, 2, 0);
  T_CHECK(r && dt_to_host(r, o, sizeof(float) * R * C * 2) == DT_OK && memcmp(o, h, sizeof(float) * R * C) == 0 &&
          memcmp(o + R * C, h, sizeof(float) * R * C) == 0);
  dt_release(r);
  dt_release(a); dt_release(b); dt_release(x); dt_release(j);
  free(idx); free(h); free(o);
}

/* One-byte dtypes (DT_U8, DT_BOOL) move through the same by-size kernels: slice along dims 0 and 1,
   index_select, cat and permute of a (2, 3) uint8 and bool tensor, checked element by element. */
static void test_one_byte_dtypes(dt_device dev) {
  static const uint8_t u[6] = {1, 2, 3, 250, 251, 252}, b[6] = {1, 0, 1, 0, 0, 1};
  int k;
  for (k = 0; k < 2; k++) {
    dt_dtype t = k == 0 ? DT_U8 : DT_BOOL;
    const uint8_t *v = k == 0 ? u : b;
    const int64_t iv[3] = {2, 0, 2};
    const int perm[2] = {1, 0};
    dt_tensor *x = dt_from_data(v, dt_shape2(2, 3), t, dev);
    dt_tensor *idx = dt_from_data(iv, dt_shape1(3), DT_I64, dev);
    dt_tensor *s0 = x ? dt_slice(x, 0, 1, 2) : NULL, *s1 = x ? dt_slice(x, 1, -2, 3) : NULL;
    dt_tensor *is = x && idx ? dt_index_select(x, 1, idx) : NULL, *pm = x ? dt_permute(x, perm) : NULL;
    const dt_tensor *parts[2];
    dt_tensor *ct;
    uint8_t got[12];
    int i, j;
    parts[0] = x; parts[1] = s0;
    ct = x && s0 ? dt_cat(parts, 2, 0) : NULL;
    T_CHECK(x && idx && s0 && s1 && is && pm && ct);
    if (s0 && s1 && is && pm && ct) {
      T_CHECK(dt_dtype_of(s0) == t && dt_dtype_of(s1) == t && dt_dtype_of(is) == t && dt_dtype_of(pm) == t && dt_dtype_of(ct) == t);
      T_CHECK(dt_to_host(s0, got, 3) == DT_OK && memcmp(got, v + 3, 3) == 0);
      T_CHECK(dt_to_host(s1, got, 4) == DT_OK);
      for (i = 0; i < 2; i++) for (j = 0; j < 2; j++) T_CHECK(got[i * 2 + j] == v[i * 3 + 1 + j]);
      T_CHECK(dt_to_host(is, got, 6) == DT_OK);
      for (i = 0; i < 2; i++) for (j = 0; j < 3; j++) T_CHECK(got[i * 3 + j] == v[i * 3 + iv[j]]);
      T_CHECK(dt_to_host(pm, got, 6) == DT_OK);
      for (i = 0; i < 3; i++) for (j = 0; j < 2; j++) T_CHECK(got[i * 2 + j] == v[j * 3 + i]);
      T_CHECK(dt_to_host(ct, got, 9) == DT_OK && memcmp(got, v, 6) == 0 && memcmp(got + 6, v + 3, 3) == 0);
    }
    dt_release(x); dt_release(idx); dt_release(s0); dt_release(s1); dt_release(is); dt_release(pm); dt_release(ct);
  }
}

int main(void) {
  T_RUN_ALL_DEVICES(test_slice);
  T_RUN_ALL_DEVICES(test_slice_view);
  T_RUN_ALL_DEVICES(test_index_select);
  T_RUN_ALL_DEVICES(test_index_select_out_of_range);
  T_RUN_ALL_DEVICES(test_cat);
  T_RUN_ALL_DEVICES(test_permute);
  T_RUN_ALL_DEVICES(test_large);
  T_RUN_ALL_DEVICES(test_one_byte_dtypes);
  return t_finish();
}
