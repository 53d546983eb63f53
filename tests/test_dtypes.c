/* uint8 and bool on every device: printing as PyTorch prints them, creation, fill and
   casts (PyTorch's conversions), comparisons with broadcasting, NaN, mixed dtypes and empty
   tensors, dt_sum of bool / uint8 as int64, sigmoid / tanh / abs against long double, the _like
   constructors, safetensors and DLPack names.

   The print strings and conversion results are PyTorch 1.13's (Debian's /usr/bin/python3), held
   literally. They came from, for each tensor t below (device None, and "cuda:0" for the GPU text):

     import torch, torch._tensor_str as ts
     def repr_on(t, device):    # _str_intern for a tensor on `device`, as tests/gen_print_cases.py
         prefix = "tensor("; indent = len(prefix); suffixes = []
         if device is not None: suffixes.append("device='" + device + "'")
         has_default_dtype = t.dtype in (torch.get_default_dtype(), torch.cfloat, torch.int64, torch.bool)
         if t.numel() == 0:
             if t.dim() != 1: suffixes.append("size=" + str(tuple(t.shape)))
             if t.dtype != torch.get_default_dtype(): suffixes.append("dtype=" + str(t.dtype))
             tensor_str = "[]"
         else:
             if not has_default_dtype: suffixes.append("dtype=" + str(t.dtype))
             tensor_str = ts._tensor_str(t, indent)
         return ts._add_suffixes(prefix + tensor_str, suffixes, indent, force_newline=False)
     # and repr_on(t, None) == repr(t) was asserted for each.

   and for the conversions:
     torch.tensor([300., -1., -1.5, 255.9, 256., 1e10, -1e10, nan, inf, -0.5, 3e9]).to(torch.uint8)  (also float64)
       -> [44, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0]
     torch.tensor([300, -1, 256, -257], dtype=torch.int32).to(torch.uint8) (also int64) -> [44, 255, 0, 255]
     torch.tensor([0., -0., 0.1, nan, -2]).to(torch.bool) -> [False, False, True, True, True]
     torch.tensor([44, 1], dtype=torch.uint8) == torch.tensor(300) -> [True, False]
     torch.tensor([1, 2], dtype=torch.int32) < torch.tensor(1.5, dtype=torch.float64) -> [True, False]
     torch.tensor([1.5]) == torch.tensor(1) -> [False] */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

static int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

/* the tensor's values as doubles (malloc'd; the caller frees) */
static double *vals(const dt_tensor *t) {
  int64_t n = dt_numel(t), i;
  size_t nb = dt_nbytes(t);
  unsigned char *h = (unsigned char *)malloc(nb + 8);
  double *v = (double *)malloc((size_t)(n + 1) * sizeof(double));
  if (!h || !v || dt_to_host(t, h, nb + 8) != DT_OK) { free(h); free(v); return NULL; }
  for (i = 0; i < n; i++) {
    switch (dt_dtype_of(t)) {
      case DT_F32: v[i] = ((float *)h)[i]; break;
      case DT_F64: v[i] = ((double *)h)[i]; break;
      case DT_I32: v[i] = ((int32_t *)h)[i]; break;
      case DT_I64: v[i] = (double)((int64_t *)h)[i]; break;
      case DT_U8: case DT_BOOL: v[i] = h[i]; break;
      default: break; /* float16, bfloat16: tests/test_half.c */
    }
  }
  free(h);
  return v;
}

/* t holds exactly want[0..n) (and n elements) */
static int holds(const dt_tensor *t, const double *want, int64_t n) {
  double *v;
  int64_t i;
  int ok;
  if (!t || dt_numel(t) != n) return 0;
  if (!(v = vals(t))) return 0;
  for (ok = 1, i = 0; i < n; i++)
    if (!(v[i] == want[i] || (want[i] != want[i] && v[i] != v[i]))) { ok = 0; printf("  [%lld] = %.17g, want %.17g\n", (long long)i, v[i], want[i]); }
  free(v);
  return ok;
}

/* ---- printing ---- */

/* The CPU text, or the cuda:0 text with the device's index in it. */
static void check_print(dt_device dev, const dt_tensor *t, const char *cpu, const char *cuda0) {
  char want[2048], got[2048], *p;
  int len;
  snprintf(want, sizeof want, "%s", dev.type == DT_CPU ? cpu : cuda0);
  if (dev.type != DT_CPU && (p = strstr(want, "cuda:0")) != NULL) p[5] = (char)('0' + dev.index);
  T_CHECK(t != NULL);
  if (!t) return;
  len = dt_snprint(got, sizeof got, t);
  T_STREQ(got, want);
  T_CHECK(len == (int)strlen(want));
}

static dt_tensor *bytes_tensor(const uint8_t *v, dt_shape s, dt_dtype t, dt_device dev) { return dt_from_data(v, s, t, dev); }

static void test_print_bytes(dt_device dev) {
  uint8_t u12[2] = {1, 2}, tf[2] = {1, 0}, tt[2] = {1, 1}, one = 1, seven = 7;
  uint8_t b2d[6] = {1, 0, 1, 0, 0, 1}, b3d[8] = {1, 0, 1, 1, 0, 0, 1, 0};
  uint8_t *big = (uint8_t *)malloc(4000);
  dt_tensor *t;
  int i;
  t = bytes_tensor(u12, dt_shape1(2), DT_U8, dev);
  check_print(dev, t, "tensor([1, 2], dtype=torch.uint8)", "tensor([1, 2], device='cuda:0', dtype=torch.uint8)");
  dt_release(t);
  t = bytes_tensor(tf, dt_shape1(2), DT_BOOL, dev);
  check_print(dev, t, "tensor([ True, False])", "tensor([ True, False], device='cuda:0')");
  dt_release(t);
  t = bytes_tensor(tt, dt_shape1(2), DT_BOOL, dev);
  check_print(dev, t, "tensor([True, True])", "tensor([True, True], device='cuda:0')");
  dt_release(t);
  t = bytes_tensor(&one, dt_shape0(), DT_BOOL, dev);
  check_print(dev, t, "tensor(True)", "tensor(True, device='cuda:0')");
  dt_release(t);
  t = bytes_tensor(&seven, dt_shape0(), DT_U8, dev);
  check_print(dev, t, "tensor(7, dtype=torch.uint8)", "tensor(7, device='cuda:0', dtype=torch.uint8)");
  dt_release(t);
  t = dt_empty(dt_shape1(0), DT_BOOL, dev);
  check_print(dev, t, "tensor([], dtype=torch.bool)", "tensor([], device='cuda:0', dtype=torch.bool)");
  dt_release(t);
  t = dt_empty(dt_shape2(0, 3), DT_U8, dev);
  check_print(dev, t, "tensor([], size=(0, 3), dtype=torch.uint8)", "tensor([], device='cuda:0', size=(0, 3), dtype=torch.uint8)");
  dt_release(t);
  t = dt_empty(dt_shape2(2, 0), DT_BOOL, dev);
  check_print(dev, t, "tensor([], size=(2, 0), dtype=torch.bool)", "tensor([], device='cuda:0', size=(2, 0), dtype=torch.bool)");
  dt_release(t);
  t = bytes_tensor(b2d, dt_shape2(2, 3), DT_BOOL, dev);
  check_print(dev, t, "tensor([[ True, False,  True],\n        [False, False,  True]])",
              "tensor([[ True, False,  True],\n        [False, False,  True]], device='cuda:0')");
  dt_release(t);
  t = bytes_tensor(b3d, dt_shape3(2, 2, 2), DT_BOOL, dev);
  check_print(dev, t, "tensor([[[ True, False],\n         [ True,  True]],\n\n        [[False, False],\n         [ True, False]]])",
              "tensor([[[ True, False],\n         [ True,  True]],\n\n        [[False, False],\n         [ True, False]]], device='cuda:0')");
  dt_release(t);
  /* arange(30) % 2 == 0: wraps at the line width */
  for (i = 0; i < 30; i++) big[i] = i % 2 == 0;
  t = bytes_tensor(big, dt_shape1(30), DT_BOOL, dev);
  check_print(dev, t,
              "tensor([ True, False,  True, False,  True, False,  True, False,  True, False,\n"
              "         True, False,  True, False,  True, False,  True, False,  True, False,\n"
              "         True, False,  True, False,  True, False,  True, False,  True, False])",
              "tensor([ True, False,  True, False,  True, False,  True, False,  True, False,\n"
              "         True, False,  True, False,  True, False,  True, False,  True, False,\n"
              "         True, False,  True, False,  True, False,  True, False,  True, False],\n"
              "       device='cuda:0')");
  dt_release(t);
  /* (arange(40) * 7 % 256).to(uint8).reshape(2, 20) */
  for (i = 0; i < 40; i++) big[i] = (uint8_t)(i * 7 % 256);
  t = bytes_tensor(big, dt_shape2(2, 20), DT_U8, dev);
  check_print(dev, t,
              "tensor([[  0,   7,  14,  21,  28,  35,  42,  49,  56,  63,  70,  77,  84,  91,\n"
              "          98, 105, 112, 119, 126, 133],\n"
              "        [140, 147, 154, 161, 168, 175, 182, 189, 196, 203, 210, 217, 224, 231,\n"
              "         238, 245, 252,   3,  10,  17]], dtype=torch.uint8)",
              "tensor([[  0,   7,  14,  21,  28,  35,  42,  49,  56,  63,  70,  77,  84,  91,\n"
              "          98, 105, 112, 119, 126, 133],\n"
              "        [140, 147, 154, 161, 168, 175, 182, 189, 196, 203, 210, 217, 224, 231,\n"
              "         238, 245, 252,   3,  10,  17]], device='cuda:0', dtype=torch.uint8)");
  dt_release(t);
  /* summarised: arange(2000) % 3 == 0; (arange(2000) % 256).to(uint8); (arange(4000) % 251).to(uint8).reshape(40, 100) */
  for (i = 0; i < 2000; i++) big[i] = i % 3 == 0;
  t = bytes_tensor(big, dt_shape1(2000), DT_BOOL, dev);
  check_print(dev, t, "tensor([ True, False, False,  ..., False,  True, False])",
              "tensor([ True, False, False,  ..., False,  True, False], device='cuda:0')");
  dt_release(t);
  for (i = 0; i < 2000; i++) big[i] = (uint8_t)(i % 256);
  t = bytes_tensor(big, dt_shape1(2000), DT_U8, dev);
  check_print(dev, t, "tensor([  0,   1,   2,  ..., 205, 206, 207], dtype=torch.uint8)",
              "tensor([  0,   1,   2,  ..., 205, 206, 207], device='cuda:0',\n       dtype=torch.uint8)");
  dt_release(t);
  for (i = 0; i < 4000; i++) big[i] = (uint8_t)(i % 251);
  t = bytes_tensor(big, dt_shape2(40, 100), DT_U8, dev);
  check_print(dev, t,
              "tensor([[  0,   1,   2,  ...,  97,  98,  99],\n        [100, 101, 102,  ..., 197, 198, 199],\n"
              "        [200, 201, 202,  ...,  46,  47,  48],\n        ...,\n        [186, 187, 188,  ...,  32,  33,  34],\n"
              "        [ 35,  36,  37,  ..., 132, 133, 134],\n        [135, 136, 137,  ..., 232, 233, 234]], dtype=torch.uint8)",
              "tensor([[  0,   1,   2,  ...,  97,  98,  99],\n        [100, 101, 102,  ..., 197, 198, 199],\n"
              "        [200, 201, 202,  ...,  46,  47,  48],\n        ...,\n        [186, 187, 188,  ...,  32,  33,  34],\n"
              "        [ 35,  36,  37,  ..., 132, 133, 134],\n        [135, 136, 137,  ..., 232, 233, 234]], device='cuda:0',\n"
              "       dtype=torch.uint8)");
  dt_release(t);
  free(big);
}

/* ---- dtypes, creation, fill, casts ---- */

static void test_dtype_info(void) {
  T_CHECK(DT_F32 == 0 && DT_F64 == 1 && DT_I32 == 2 && DT_I64 == 3 && DT_U8 == 4 && DT_BOOL == 5);
  T_CHECK(dt_dtype_size(DT_U8) == 1 && dt_dtype_size(DT_BOOL) == 1 && dt_dtype_size(DT_I64) == 8 && dt_dtype_size((dt_dtype)8) == 0);
  T_STREQ(dt_dtype_name(DT_U8), "uint8");
  T_STREQ(dt_dtype_name(DT_BOOL), "bool");
  T_STREQ(dt_dtype_name((dt_dtype)8), "unknown dtype");
}

static int data_ptr_differs(dt_tensor *a, dt_tensor *b) { return dt_data_ptr(a) != dt_data_ptr(b); }

static void test_create_fill(dt_device dev) {
  static const dt_dtype all[6] = {DT_F32, DT_F64, DT_I32, DT_I64, DT_U8, DT_BOOL};
  double w[6];
  uint8_t u6[6] = {1, 2, 3, 4, 5, 6};
  dt_tensor *a, *z, *o, *e, *t;
  int k, i;
  for (k = 0; k < 6; k++) {
    a = dt_empty(dt_shape2(2, 3), all[k], dev);
    z = dt_zeros_like(a); o = dt_ones_like(a); e = dt_empty_like(a);
    T_CHECK(a && z && o && e);
    if (a && z && o && e) {
      const dt_tensor *ts[3];
      ts[0] = z; ts[1] = o; ts[2] = e;
      for (i = 0; i < 3; i++) {
        T_CHECK(dt_dtype_of(ts[i]) == all[k] && dt_device_equal(dt_device_of(ts[i]), dev));
        T_CHECK(dt_ndim(ts[i]) == 2 && dt_dim(ts[i], 0) == 2 && dt_dim(ts[i], 1) == 3);
      }
      for (i = 0; i < 6; i++) w[i] = 0;
      T_CHECK(holds(z, w, 6));
      for (i = 0; i < 6; i++) w[i] = 1;
      T_CHECK(holds(o, w, 6));
      T_CHECK(data_ptr_differs(a, e));
    }
    dt_release(a); dt_release(z); dt_release(o); dt_release(e);
  }
  /* fill: uint8 by PyTorch's conversion, bool nonzero */
  t = dt_empty(dt_shape1(3), DT_U8, dev);
  T_CHECK(dt_fill_(t, 300) == DT_OK); w[0] = w[1] = w[2] = 44; T_CHECK(holds(t, w, 3));
  T_CHECK(dt_fill_(t, 255.9) == DT_OK); w[0] = w[1] = w[2] = 255; T_CHECK(holds(t, w, 3));
  dt_release(t);
  t = dt_empty(dt_shape1(3), DT_BOOL, dev);
  T_CHECK(dt_fill_(t, -2) == DT_OK); w[0] = w[1] = w[2] = 1; T_CHECK(holds(t, w, 3));
  T_CHECK(dt_fill_(t, NAN) == DT_OK); T_CHECK(holds(t, w, 3));
  T_CHECK(dt_fill_(t, 0) == DT_OK); w[0] = w[1] = w[2] = 0; T_CHECK(holds(t, w, 3));
  dt_release(t);
  /* a large fill takes the parallel path on the CPU */
  t = dt_empty(dt_shape1(100000), DT_U8, dev);
  T_CHECK(dt_fill_(t, 9) == DT_OK);
  if (t) { double *v = vals(t); T_CHECK(v && v[0] == 9 && v[99999] == 9 && v[54321] == 9); free(v); }
  dt_release(t);
  /* arange, item, transpose, reshape */
  t = dt_arange(250, 260, 1, DT_U8, dev);
  if (t) {
    double *v = vals(t);
    T_CHECK(dt_numel(t) == 10 && v && v[0] == 250 && v[5] == 255 && v[6] == 0 && v[9] == 3);
    free(v);
  }
  dt_release(t);
  T_CHECK(dt_arange(0, 2, 1, DT_BOOL, dev) == NULL && dt_last_status() == DT_ERR_DTYPE);
  a = dt_from_data(u6, dt_shape2(2, 3), DT_U8, dev);
  t = dt_transpose(a);
  w[0] = 1; w[1] = 4; w[2] = 2; w[3] = 5; w[4] = 3; w[5] = 6;
  T_CHECK(t && dt_dtype_of(t) == DT_U8 && dt_dim(t, 0) == 3 && holds(t, w, 6));
  dt_release(t);
  t = dt_reshape(a, dt_shape1(-1));
  T_CHECK(t && dt_dtype_of(t) == DT_U8 && dt_numel(t) == 6);
  dt_release(t);
  t = dt_copyto(a, dt_cpu());
  T_CHECK(t && dt_data_ptr(t) && ((uint8_t *)dt_data_ptr(t))[5] == 6);
  dt_release(t);
  dt_release(a);
  {
    uint8_t b1 = 1;
    t = dt_from_data(&b1, dt_shape0(), DT_BOOL, dev);
    T_CHECK(dt_item(t) == 1.0);
    dt_release(t);
    t = dt_from_data(&u6[5], dt_shape0(), DT_U8, dev);
    T_CHECK(dt_item(t) == 6.0);
    dt_release(t);
  }
}

static void test_casts(dt_device dev) {
  static const dt_dtype all[6] = {DT_F32, DT_F64, DT_I32, DT_I64, DT_U8, DT_BOOL};
  double fv[11] = {300, -1, -1.5, 255.9, 256, 1e10, -1e10, NAN, INFINITY, -0.5, 3e9};
  double fu8[11] = {44, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0};
  float ff[11];
  int32_t iv[4] = {300, -1, 256, -257};
  int64_t lv[4] = {300, -1, 256, -257};
  double iu8[4] = {44, 255, 0, 255};
  double bv[5] = {0, -0.0, 0.1, NAN, -2}, bb[5] = {0, 0, 1, 1, 1};
  uint8_t all256[256], bits[5] = {1, 0, 1, 1, 0};
  double w[256];
  dt_tensor *x, *y, *z;
  int i, k;
  for (i = 0; i < 11; i++) ff[i] = (float)fv[i];
  x = dt_from_data(fv, dt_shape1(11), DT_F64, dev); y = dt_cast(x, DT_U8);
  T_CHECK(y && dt_dtype_of(y) == DT_U8 && holds(y, fu8, 11));
  dt_release(x); dt_release(y);
  x = dt_from_data(ff, dt_shape1(11), DT_F32, dev); y = dt_cast(x, DT_U8);
  T_CHECK(holds(y, fu8, 11));
  dt_release(x); dt_release(y);
  x = dt_from_data(iv, dt_shape1(4), DT_I32, dev); y = dt_cast(x, DT_U8);
  T_CHECK(holds(y, iu8, 4));
  dt_release(x); dt_release(y);
  x = dt_from_data(lv, dt_shape1(4), DT_I64, dev); y = dt_cast(x, DT_U8);
  T_CHECK(holds(y, iu8, 4));
  dt_release(x); dt_release(y);
  x = dt_from_data(bv, dt_shape1(5), DT_F64, dev); y = dt_cast(x, DT_BOOL);
  T_CHECK(y && dt_dtype_of(y) == DT_BOOL && holds(y, bb, 5));
  z = dt_cast(y, DT_F32);
  T_CHECK(holds(z, bb, 5));
  dt_release(x); dt_release(y); dt_release(z);
  /* every uint8 through every dtype and back */
  for (i = 0; i < 256; i++) { all256[i] = (uint8_t)i; w[i] = i; }
  x = dt_from_data(all256, dt_shape1(256), DT_U8, dev);
  for (k = 0; k < 6; k++) {
    y = dt_cast(x, all[k]);
    z = dt_cast(y, DT_U8);
    T_CHECK(y && dt_dtype_of(y) == all[k]);
    if (all[k] == DT_BOOL) {
      double b[256];
      for (i = 0; i < 256; i++) b[i] = i != 0;
      T_CHECK(holds(y, b, 256) && holds(z, b, 256));
    } else {
      T_CHECK_MSG(holds(y, w, 256) && holds(z, w, 256), "uint8 -> %s -> uint8", dt_dtype_name(all[k]));
    }
    dt_release(y); dt_release(z);
  }
  dt_release(x);
  /* bool through every dtype and back: 0 and 1 */
  for (i = 0; i < 5; i++) w[i] = bits[i];
  x = dt_from_data(bits, dt_shape1(5), DT_BOOL, dev);
  for (k = 0; k < 6; k++) {
    y = dt_cast(x, all[k]);
    z = dt_cast(y, DT_BOOL);
    T_CHECK_MSG(holds(y, w, 5) && holds(z, w, 5) && dt_dtype_of(z) == DT_BOOL, "bool -> %s -> bool", dt_dtype_name(all[k]));
    dt_release(y); dt_release(z);
  }
  dt_release(x);
  /* a large cast takes the parallel path on the CPU */
  x = dt_arange(0, 100000, 1, DT_I32, dev);
  y = dt_cast(x, DT_U8);
  if (y) { double *v = vals(y); T_CHECK(v && v[0] == 0 && v[99999] == 99999 % 256 && v[70001] == 70001 % 256); free(v); }
  dt_release(x); dt_release(y);
}

/* ---- comparisons ---- */

typedef dt_tensor *(*cmp_fn)(const dt_tensor *, const dt_tensor *);
static const cmp_fn CMP[6] = {dt_eq, dt_ne, dt_lt, dt_le, dt_gt, dt_ge};
static const char *const CMPN[6] = {"eq", "ne", "lt", "le", "gt", "ge"};
static int ref_cmp(int op, double u, double w) {
  switch (op) {
    case 0: return u == w;
    case 1: return u != w;
    case 2: return u < w;
    case 3: return u <= w;
    case 4: return u > w;
    default: return u >= w;
  }
}

/* a tensor of dtype t holding v (values exactly representable in t) */
static dt_tensor *make(const double *v, dt_shape s, dt_dtype t, dt_device dev) {
  int64_t n = 1, i;
  int k;
  unsigned char *h;
  dt_tensor *x;
  for (k = 0; k < s.ndim; k++) n *= s.dims[k];
  h = (unsigned char *)malloc((size_t)(n ? n : 1) * 8);
  for (i = 0; i < n; i++) {
    switch (t) {
      case DT_F32: ((float *)h)[i] = (float)v[i]; break;
      case DT_F64: ((double *)h)[i] = v[i]; break;
      case DT_I32: ((int32_t *)h)[i] = (int32_t)v[i]; break;
      case DT_I64: ((int64_t *)h)[i] = (int64_t)v[i]; break;
      case DT_U8: h[i] = (uint8_t)v[i]; break;
      case DT_BOOL: h[i] = v[i] != 0; break;
      default: break; /* float16, bfloat16: tests/test_half.c */
    }
  }
  x = dt_from_data(h, s, t, dev);
  free(h);
  return x;
}

/* all six comparisons of a (sa) and b (sb) against the reference broadcast in double */
static void check_compare(dt_device dev, dt_dtype t, const double *av, dt_shape sa, const double *bv, dt_shape sb) {
  dt_tensor *a = make(av, sa, t, dev), *b = make(bv, sb, t, dev);
  int op, d, nd = sa.ndim > sb.ndim ? sa.ndim : sb.ndim;
  int64_t dims[DT_MAX_DIMS], n = 1, i;
  for (d = 0; d < nd; d++) {
    int ia = d - (nd - sa.ndim), ib = d - (nd - sb.ndim);
    int64_t da = ia >= 0 ? sa.dims[ia] : 1, db = ib >= 0 ? sb.dims[ib] : 1;
    dims[d] = da == 1 ? db : da;
    n *= dims[d];
  }
  for (op = 0; op < 6; op++) {
    dt_tensor *y = CMP[op](a, b);
    double *want = (double *)malloc((size_t)(n + 1) * sizeof(double));
    T_CHECK_MSG(y != NULL, "%s %s: %s", CMPN[op], dt_dtype_name(t), dt_last_error());
    for (i = 0; i < n; i++) {
      int64_t rem = i, oa = 0, ob = 0, stra = 1, strb = 1;
      for (d = nd - 1; d >= 0; d--) {
        int64_t q = rem % dims[d];
        int ia = d - (nd - sa.ndim), ib = d - (nd - sb.ndim);
        int64_t da = ia >= 0 ? sa.dims[ia] : 1, db = ib >= 0 ? sb.dims[ib] : 1;
        rem /= dims[d];
        if (da != 1) oa += q * stra;
        if (db != 1) ob += q * strb;
        stra *= da; strb *= db;
      }
      want[i] = ref_cmp(op, t == DT_BOOL ? av[oa] != 0 : av[oa], t == DT_BOOL ? bv[ob] != 0 : bv[ob]);
    }
    if (y) {
      T_CHECK(dt_dtype_of(y) == DT_BOOL && dt_device_equal(dt_device_of(y), dev) && dt_ndim(y) == nd);
      for (d = 0; d < nd && d < dt_ndim(y); d++) T_CHECK(dt_dim(y, d) == dims[d]);
      T_CHECK_MSG(holds(y, want, n), "%s %s", CMPN[op], dt_dtype_name(t));
    }
    free(want);
    dt_release(y);
  }
  dt_release(a); dt_release(b);
}

static void test_compare(dt_device dev) {
  static const dt_dtype all[6] = {DT_F32, DT_F64, DT_I32, DT_I64, DT_U8, DT_BOOL};
  double a6[6] = {1, 5, 3, 0, 2, 200}, b3[3] = {1, 2, 3}, c2[2] = {3, 0}, s1[1] = {2};
  double *big = (double *)malloc(sizeof(double) * 300 * 257), *row = (double *)malloc(sizeof(double) * 257);
  int k, i;
  for (i = 0; i < 300 * 257; i++) big[i] = (i * 7) % 13;
  for (i = 0; i < 257; i++) row[i] = i % 13;
  for (k = 0; k < 6; k++) {
    dt_dtype t = all[k];
    check_compare(dev, t, a6, dt_shape2(2, 3), a6, dt_shape2(2, 3));     /* same shape */
    check_compare(dev, t, a6, dt_shape2(2, 3), b3, dt_shape1(3));        /* a row against every row */
    check_compare(dev, t, c2, dt_shape2(2, 1), b3, dt_shape2(1, 3));     /* outer */
    check_compare(dev, t, s1, dt_shape0(), a6, dt_shape3(3, 1, 2));      /* a 0-d operand */
    check_compare(dev, t, a6, dt_shape2(0, 3), b3, dt_shape1(3));        /* empty */
    check_compare(dev, t, a6, dt_shape3(2, 0, 1), b3, dt_shape1(3));     /* empty, broadcast to (2, 0, 3) */
    if (t != DT_BOOL) check_compare(dev, t, big, dt_shape2(300, 257), row, dt_shape1(257)); /* threads, strided rows */
  }
  free(big); free(row);
  /* NaN as IEEE: only ne is true */
  {
    double an[3] = {NAN, 1, NAN}, bn[3] = {NAN, 1, 2};
    check_compare(dev, DT_F32, an, dt_shape1(3), bn, dt_shape1(3));
    check_compare(dev, DT_F64, an, dt_shape1(3), bn, dt_shape1(3));
    {
      dt_tensor *a = make(an, dt_shape1(3), DT_F32, dev), *b = make(bn, dt_shape1(3), DT_F32, dev);
      dt_tensor *eq = dt_eq(a, b), *ne = dt_ne(a, b), *lt = dt_lt(a, b), *ge = dt_ge(a, b);
      double weq[3] = {0, 1, 0}, wne[3] = {1, 0, 1}, wlt[3] = {0, 0, 0}, wge[3] = {0, 1, 0};
      T_CHECK(holds(eq, weq, 3) && holds(ne, wne, 3) && holds(lt, wlt, 3) && holds(ge, wge, 3));
      dt_release(a); dt_release(b); dt_release(eq); dt_release(ne); dt_release(lt); dt_release(ge);
    }
  }
  /* mixed dtypes: PyTorch's promotion (literals from torch, see the top) */
  {
    double u[2] = {44, 1}, s300 = 300, i12[2] = {1, 2}, h = 1.5, one = 1;
    double w1[2] = {1, 0}, w0[1] = {0};
    dt_tensor *a = make(u, dt_shape1(2), DT_U8, dev), *b = make(&s300, dt_shape0(), DT_I64, dev), *y;
    y = dt_eq(a, b); T_CHECK(holds(y, w1, 2)); dt_release(y);   /* compares in uint8: 300 -> 44 */
    y = dt_eq(b, a); T_CHECK(holds(y, w1, 2)); dt_release(y);
    dt_release(a); dt_release(b);
    a = make(i12, dt_shape1(2), DT_I32, dev); b = make(&h, dt_shape0(), DT_F64, dev);
    y = dt_lt(a, b); T_CHECK(holds(y, w1, 2)); dt_release(y);   /* compares in float64 */
    y = dt_gt(b, a); T_CHECK(holds(y, w1, 2)); dt_release(y);
    dt_release(a); dt_release(b);
    a = make(&h, dt_shape1(1), DT_F32, dev); b = make(&one, dt_shape0(), DT_I64, dev);
    y = dt_eq(a, b); T_CHECK(holds(y, w0, 1)); dt_release(y);
    dt_release(a); dt_release(b);
    /* both with dims: the wider dtype; uint8 200 against int32 -56 */
    {
      double p[2] = {200, 3}, q[2] = {-56, 3}, wgt[2] = {1, 0};
      a = make(p, dt_shape1(2), DT_U8, dev); b = make(q, dt_shape1(2), DT_I32, dev);
      y = dt_gt(a, b); T_CHECK(holds(y, wgt, 2)); dt_release(y);
      dt_release(a); dt_release(b);
    }
  }
}

/* ---- sums ---- */

static void test_sum_bytes(dt_device dev) {
  uint8_t *h = (uint8_t *)malloc(100000);
  dt_tensor *t, *s;
  int64_t want = 0;
  int i;
  for (i = 0; i < 2000; i++) h[i] = i % 3 == 0;
  t = dt_from_data(h, dt_shape1(2000), DT_BOOL, dev); s = dt_sum(t);
  T_CHECK(s && dt_dtype_of(s) == DT_I64 && dt_ndim(s) == 0 && dt_device_equal(dt_device_of(s), dev) && dt_item(s) == 667);
  dt_release(t); dt_release(s);
  for (i = 0; i < 100000; i++) { h[i] = (uint8_t)(i * 31 % 256); want += h[i]; }
  t = dt_from_data(h, dt_shape2(1000, 100), DT_U8, dev); s = dt_sum(t);
  T_CHECK(s && dt_dtype_of(s) == DT_I64 && dt_item(s) == (double)want);
  dt_release(t); dt_release(s);
  t = dt_empty(dt_shape2(0, 5), DT_BOOL, dev); s = dt_sum(t);
  T_CHECK(s && dt_dtype_of(s) == DT_I64 && dt_item(s) == 0);
  dt_release(t); dt_release(s);
  /* the number of matches: sum(eq(a, b)) */
  {
    double a[5] = {1, 2, 3, 4, 5}, b[5] = {1, 0, 3, 0, 5};
    dt_tensor *x = make(a, dt_shape1(5), DT_I64, dev), *y = make(b, dt_shape1(5), DT_I64, dev), *e = dt_eq(x, y);
    s = dt_sum(e);
    T_CHECK(s && dt_dtype_of(s) == DT_I64 && dt_item(s) == 3);
    dt_release(x); dt_release(y); dt_release(e); dt_release(s);
  }
  free(h);
}

/* ---- sigmoid, tanh, abs ---- */

/* |got - want| in units in the last place of want, as float (f32) or double */
static double ulps(double got, long double want, int f32) {
  double w = (double)want, u;
  int e;
  if (got == w) return 0;
  if (got != got || w != w) return 1e30;
  frexp(w, &e);
  u = ldexp(1.0, e - (f32 ? 24 : 53));
  if (f32 && u < 1.4e-45) u = 1.4e-45;
  if (!f32 && u < 4.9e-324) u = 4.9e-324;
  return (double)(fabsl((long double)got - want) / u);
}

static void test_sigmoid_tanh(dt_device dev) {
  enum { N = 4001 };
  double *x = (double *)malloc(sizeof(double) * N), worst[2][2] = {{0, 0}, {0, 0}};
  int i, f, k;
  for (i = 0; i < N; i++) x[i] = -80.0 + 160.0 * i / (N - 1) + 1e-3 * (i % 7);
  for (f = 0; f < 2; f++) {
    dt_dtype t = f ? DT_F64 : DT_F32;
    dt_tensor *a = make(x, dt_shape1(N), t, dev), *ys[2];
    double *av = vals(a);
    ys[0] = dt_sigmoid(a); ys[1] = dt_tanh(a);
    for (k = 0; k < 2; k++) {
      double *yv = ys[k] ? vals(ys[k]) : NULL;
      T_CHECK(ys[k] && dt_dtype_of(ys[k]) == t && yv);
      for (i = 0; yv && av && i < N; i++) {
        long double xl = av[i], want = k == 0 ? 1.0L / (1.0L + expl(-xl)) : tanhl(xl);
        double u = ulps(yv[i], f ? want : (long double)(float)want, !f);
        if (u > worst[f][k]) worst[f][k] = u;
      }
      free(yv);
    }
    free(av);
    dt_release(a); dt_release(ys[0]); dt_release(ys[1]);
  }
  for (f = 0; f < 2; f++)
    for (k = 0; k < 2; k++)
      T_CHECK_MSG(worst[f][k] <= 4, "%s %s: %.2f ulp", k ? "tanh" : "sigmoid", f ? "float64" : "float32", worst[f][k]);
  /* the ends: no overflow, no NaN; NaN stays NaN */
  {
    double e[9] = {1e30, -1e30, INFINITY, -INFINITY, NAN, 1000, -1000, 0, -0.0};
    double ws[9] = {1, 0, 1, 0, NAN, 1, 0, 0.5, 0.5}, wt[9] = {1, -1, 1, -1, NAN, 1, -1, 0, 0};
    for (f = 0; f < 2; f++) {
      dt_tensor *a = make(e, dt_shape1(9), f ? DT_F64 : DT_F32, dev), *s = dt_sigmoid(a), *th = dt_tanh(a);
      T_CHECK_MSG(holds(s, ws, 9), "sigmoid ends, %s", f ? "float64" : "float32");
      T_CHECK_MSG(holds(th, wt, 9), "tanh ends, %s", f ? "float64" : "float32");
      dt_release(a); dt_release(s); dt_release(th);
    }
  }
  free(x);
  {
    dt_tensor *i32 = dt_arange(0, 3, 1, DT_I32, dev);
    T_CHECK(dt_sigmoid(i32) == NULL && dt_last_status() == DT_ERR_DTYPE && contains(dt_last_error(), "dt_sigmoid: a is int32"));
    T_CHECK(dt_tanh(i32) == NULL && dt_last_status() == DT_ERR_DTYPE);
    dt_release(i32);
  }
}

static void test_abs(dt_device dev) {
  double fv[5] = {-1.5, 0, -0.0, 2, NAN}, fw[5] = {1.5, 0, 0, 2, NAN};
  int32_t iv[4] = {-5, 0, 7, INT32_MIN};
  int64_t lv[4] = {-5, 0, 7, INT64_MIN};
  double iw[4] = {5, 0, 7, (double)INT32_MIN}, lw[4] = {5, 0, 7, (double)INT64_MIN};
  uint8_t uv[3] = {0, 200, 255};
  double uw[3] = {0, 200, 255};
  dt_tensor *a, *y;
  int f;
  for (f = 0; f < 2; f++) {
    a = make(fv, dt_shape1(5), f ? DT_F64 : DT_F32, dev); y = dt_abs(a);
    T_CHECK(y && dt_dtype_of(y) == dt_dtype_of(a) && holds(y, fw, 5));
    if (y) { double *v = vals(y); T_CHECK(v && !signbit(v[2])); free(v); }
    dt_release(a); dt_release(y);
  }
  a = dt_from_data(iv, dt_shape1(4), DT_I32, dev); y = dt_abs(a);
  T_CHECK(y && dt_dtype_of(y) == DT_I32 && holds(y, iw, 4));
  dt_release(a); dt_release(y);
  a = dt_from_data(lv, dt_shape1(4), DT_I64, dev); y = dt_abs(a);
  T_CHECK(y && dt_dtype_of(y) == DT_I64 && holds(y, lw, 4));
  dt_release(a); dt_release(y);
  a = dt_from_data(uv, dt_shape1(3), DT_U8, dev); y = dt_abs(a);
  T_CHECK(y && dt_dtype_of(y) == DT_U8 && holds(y, uw, 3) && dt_data_ptr(y) != dt_data_ptr(a));
  dt_release(y);
  y = dt_cast(a, DT_BOOL);
  T_CHECK(dt_abs(y) == NULL && dt_last_status() == DT_ERR_DTYPE && contains(dt_last_error(), "dt_abs: a is bool"));
  dt_release(a); dt_release(y);
}

/* what PyTorch refuses for uint8 and bool, or the design does not promise, is refused, clearly */
static void test_no_arith(dt_device dev) {
  dt_tensor *u = dt_arange(0, 4, 1, DT_U8, dev), *b = u ? dt_cast(u, DT_BOOL) : NULL, *u2 = u ? dt_reshape(u, dt_shape2(2, 2)) : NULL;
  T_CHECK(u && b && u2);
  /* uint8 + uint8, bool * bool and uint8 + 1 are PyTorch's type promotion (tests/test_losses.c) */
  T_CHECK(dt_sub(b, b) == NULL && dt_last_status() == DT_ERR_DTYPE && contains(dt_last_error(), "dt_sub: subtraction with a bool tensor"));
  T_CHECK(dt_neg(b) == NULL && dt_last_status() == DT_ERR_DTYPE);
  T_CHECK(dt_exp(u) == NULL && dt_last_status() == DT_ERR_DTYPE);
  T_CHECK(dt_matmul(u2, u2) == NULL && dt_last_status() == DT_ERR_DTYPE);
  T_CHECK(dt_sum_dim(u2, 0) == NULL && dt_last_status() == DT_ERR_DTYPE);
  T_CHECK(dt_mean(b) == NULL && dt_last_status() == DT_ERR_DTYPE);
  dt_release(u); dt_release(b); dt_release(u2);
}

/* ---- safetensors and DLPack ---- */

static void test_interop_bytes(dt_device dev) {
  uint8_t uv[6] = {0, 1, 2, 200, 254, 255}, bv[4] = {1, 0, 0, 1};
  double uw[6] = {0, 1, 2, 200, 254, 255}, bw[4] = {1, 0, 0, 1};
  dt_tensor *u = dt_from_data(uv, dt_shape2(2, 3), DT_U8, dev), *b = dt_from_data(bv, dt_shape1(4), DT_BOOL, dev), *t;
  const dt_tensor *ts[2];
  const char *names[2] = {"pixels", "mask"};
  char path[128], head[256];
  char **ln = NULL;
  dt_tensor **lt = NULL;
  int n = 0, k;
  FILE *f;
  struct DLManagedTensorVersioned *m;
  ts[0] = u; ts[1] = b;
  snprintf(path, sizeof path, "build/test_dtypes_%d.safetensors", dev.type == DT_CPU ? 99 : dev.index);
  T_CHECK_MSG(dt_save_tensors(path, names, ts, 2) == DT_OK, "%s", dt_last_error());
  /* the header names them as safetensors does: "U8" and "BOOL" */
  if ((f = fopen(path, "rb")) != NULL) {
    size_t got = fread(head, 1, sizeof head - 1, f);
    head[got] = 0;
    for (k = 0; k < (int)got; k++) if (!head[k]) head[k] = ' ';
    fclose(f);
    T_CHECK(contains(head + 8, "\"dtype\":\"U8\"") && contains(head + 8, "\"dtype\":\"BOOL\""));
  } else T_CHECK(!"the file was not written");
  T_CHECK_MSG(dt_load_tensors(path, dev, &n, &ln, &lt) == DT_OK && n == 2, "%s", dt_last_error());
  for (k = 0; k < n; k++) {
    int is_u = strcmp(ln[k], "pixels") == 0;
    T_CHECK(dt_dtype_of(lt[k]) == (is_u ? DT_U8 : DT_BOOL) && dt_device_equal(dt_device_of(lt[k]), dev));
    T_CHECK(is_u ? holds(lt[k], uw, 6) : holds(lt[k], bw, 4));
  }
  dt_free_tensors(n, ln, lt);
  remove(path);
  /* DLPack: kDLUInt 8 bits and kDLBool 8 bits, both ways */
  m = dt_to_dlpack(u);
  T_CHECK(m && m->dl_tensor.dtype.code == kDLUInt && m->dl_tensor.dtype.bits == 8 && m->dl_tensor.dtype.lanes == 1);
  t = m ? dt_from_dlpack(m) : NULL;
  T_CHECK(t && dt_dtype_of(t) == DT_U8 && dt_data_ptr(t) == dt_data_ptr(u) && holds(t, uw, 6));
  dt_release(t);
  m = dt_to_dlpack(b);
  T_CHECK(m && m->dl_tensor.dtype.code == kDLBool && m->dl_tensor.dtype.bits == 8);
  t = m ? dt_from_dlpack(m) : NULL;
  T_CHECK(t && dt_dtype_of(t) == DT_BOOL && holds(t, bw, 4));
  dt_release(t);
  {
    struct DLManagedTensor *l = dt_to_dlpack_legacy(b);
    T_CHECK(l && l->dl_tensor.dtype.code == kDLBool && l->dl_tensor.dtype.bits == 8);
    t = l ? dt_from_dlpack_legacy(l) : NULL;
    T_CHECK(t && dt_dtype_of(t) == DT_BOOL && holds(t, bw, 4));
    dt_release(t);
  }
  dt_release(u); dt_release(b);
}

/* comparisons and the rest refuse tensors on two devices, naming both */
static void test_mixed_devices(void) {
  dt_tensor *c, *g;
  if (dt_num_gpus() < 1) T_SKIP("needs a GPU");
  c = dt_arange(0, 3, 1, DT_U8, dt_cpu());
  g = dt_arange(0, 3, 1, DT_U8, dt_gpu(0));
  T_CHECK(dt_eq(c, g) == NULL && dt_last_status() == DT_ERR_DEVICE_MISMATCH &&
          contains(dt_last_error(), "dt_eq: expected all tensors on the same device, but b is on cuda:0 and a is on cpu"));
  T_CHECK(dt_ge(g, c) == NULL && dt_last_status() == DT_ERR_DEVICE_MISMATCH &&
          contains(dt_last_error(), "dt_ge: expected all tensors on the same device, but b is on cpu and a is on cuda:0"));
  dt_release(c); dt_release(g);
}

int main(void) {
  T_RUN(test_dtype_info);
  T_RUN_ALL_DEVICES(test_print_bytes);
  T_RUN_ALL_DEVICES(test_create_fill);
  T_RUN_ALL_DEVICES(test_casts);
  T_RUN_ALL_DEVICES(test_compare);
  T_RUN_ALL_DEVICES(test_sum_bytes);
  T_RUN_ALL_DEVICES(test_sigmoid_tanh);
  T_RUN_ALL_DEVICES(test_abs);
  T_RUN_ALL_DEVICES(test_no_arith);
  T_RUN_ALL_DEVICES(test_interop_bytes);
  T_RUN(test_mixed_devices);
  return t_finish();
}
