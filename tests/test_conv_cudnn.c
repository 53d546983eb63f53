/* Convolutions through the backend's convolution library (cuDNN: the CUDA backend built with
   DEVTENSOR_CUDNN) on every device, the CPU and a GPU without it taking im2col + gemm: depthwise
   and grouped cases with strides, padding, dilation and one image against PyTorch's values (held
   literally below, made by tests/gen_conv_cudnn_cases.py with Debian's torch), float16 and
   bfloat16 against float32, the math mode dt_set_float32_matmul_precision picks, a capture into a
   graph, and on the emulator (tests/emu, make test-emu) that cuDNN ran, with workspaces, blocks of
   images accumulating the weight gradient, and its failures: a refused case falling back to
   im2col, a failing call giving a clear error, nothing leaked. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

/* The emulator's hooks (tests/emu/cudnn.h), absent elsewhere */
#if defined(__GNUC__)
#ifdef __cplusplus
extern "C" {
#endif
unsigned long long dtemu_cudnn_convolutions(void) __attribute__((weak));
unsigned long long dtemu_cudnn_workspace_uses(void) __attribute__((weak));
int dtemu_cudnn_last_algo(int dir) __attribute__((weak));
unsigned long long dtemu_cudnn_live_objects(void) __attribute__((weak));
void dtemu_cudnn_fail(const char *fn, int status, int count) __attribute__((weak));
void dtemu_cudnn_max_elements(long long n) __attribute__((weak));
void dtemu_cudnn_align(size_t bytes) __attribute__((weak));
#ifdef __cplusplus
}
#endif
#define HAVE_EMU_CUDNN (dtemu_cudnn_convolutions != NULL)
#else
#define HAVE_EMU_CUDNN 0
#endif
/* cuDNN's status numbers (cudnn_graph.h) the emulator is told to fail with */
#define ST_BAD_PARAM 2000
#define ST_NOT_SUPPORTED 3000
#define ST_EXECUTION_FAILED 5000

/* whether dev's convolutions go through the emulator's cuDNN (this build passes DEVTENSOR_CUDNN to
   the backend and to this test alike) */
static int emu_cudnn(dt_device dev) {
#ifdef DEVTENSOR_CUDNN
  return dev.type == DT_CUDA && HAVE_EMU_CUDNN;
#else
  (void)dev;
  return 0;
#endif
}
static unsigned long long convs(void) { return HAVE_EMU_CUDNN ? dtemu_cudnn_convolutions() : 0; }
static unsigned long long ws_uses(void) { return HAVE_EMU_CUDNN ? dtemu_cudnn_workspace_uses() : 0; }
static unsigned long long live(void) { return HAVE_EMU_CUDNN ? dtemu_cudnn_live_objects() : 0; }
static size_t allocated(dt_device d) {
  dt_memory_stats m;
  if (dt_synchronize(d) != DT_OK || dt_memory_stats_get(d, &m) != DT_OK) return (size_t)-1;
  return m.allocated;
}

/* t's values as doubles (any float dtype, through float32 for the halves); NULL on failure */
static double *host(const dt_tensor *t) {
  int64_t n = dt_numel(t), i;
  dt_tensor *c = dt_dtype_of(t) == DT_F16 || dt_dtype_of(t) == DT_BF16 ? dt_cast(t, DT_F32) : dt_retain((dt_tensor *)t);
  double *d = (double *)malloc((size_t)(n ? n : 1) * sizeof(double));
  void *raw = c ? malloc(dt_nbytes(c) ? dt_nbytes(c) : 1) : NULL;
  if (!c || !d || !raw || dt_to_host(c, raw, dt_nbytes(c)) != DT_OK) { free(d); free(raw); dt_release(c); return NULL; }
  for (i = 0; i < n; i++) d[i] = dt_dtype_of(c) == DT_F32 ? ((float *)raw)[i] : ((double *)raw)[i];
  free(raw);
  dt_release(c);
  return d;
}

/* t holds want[0 .. n) within atol + rtol |want| */
static void check_vals(const dt_tensor *t, const double *want, int64_t n, double atol, double rtol, const char *what) {
  double *h;
  int64_t i;
  int bad = 0;
  T_CHECK_MSG(t != NULL, "%s: %s", what, dt_last_error());
  if (!t) return;
  T_CHECK_MSG(dt_numel(t) == n, "%s: %lld elements, expected %lld", what, (long long)dt_numel(t), (long long)n);
  if (dt_numel(t) != n || !(h = host(t))) return;
  for (i = 0; i < n && bad < 5; i++)
    if (!(fabs(h[i] - want[i]) <= atol + rtol * fabs(want[i]))) {
      bad++;
      T_CHECK_MSG(0, "%s[%lld] = %.9g, expected %.9g", what, (long long)i, h[i], want[i]);
    }
  free(h);
}
static void check_same(const dt_tensor *a, const dt_tensor *b, double atol, double rtol, const char *what) {
  double *hb;
  T_CHECK_MSG(a && b, "%s: %s", what, dt_last_error());
  if (!a || !b || !(hb = host(b))) return;
  check_vals(a, hb, dt_numel(b), atol, rtol, what);
  free(hb);
}

/* ((i a) mod m - off) s for i = 0, 1, ...: the generator's pat(), exact in every float dtype here */
static dt_tensor *pat_t(dt_shape s, dt_dtype t, dt_device dev, int a, int m, double sc, int off) {
  int64_t n = 1, i;
  int k;
  double *v;
  dt_tensor *d, *r;
  for (k = 0; k < s.ndim; k++) n *= s.dims[k];
  v = (double *)malloc((size_t)(n ? n : 1) * sizeof(double));
  if (!v) return NULL;
  for (i = 0; i < n; i++) v[i] = (double)((i * a) % m - off) * sc;
  d = dt_from_data(v, s, DT_F64, dev);
  free(v);
  r = d && t != DT_F64 ? dt_cast(d, t) : d;
  if (r != d) dt_release(d);
  return r;
}
static dt_tensor *img(dt_shape s, dt_dtype t, dt_device d) { return pat_t(s, t, d, 7, 11, 0.25, 5); }
static dt_tensor *wts(dt_shape s, dt_dtype t, dt_device d) { return pat_t(s, t, d, 5, 13, 0.125, 6); }
static dt_tensor *grd(dt_shape s, dt_dtype t, dt_device d) { return pat_t(s, t, d, 3, 7, 0.5, 3); }
static dt_tensor *bias(int64_t n, dt_dtype t, dt_device d) { return pat_t(dt_shape1(n), t, d, 1, 1 << 30, -0.25, 2); }

/* ---- generated by tests/gen_conv_cudnn_cases.py ---- */
static const double cd_dw_y[48] = {-0.625, 2.0625, 0.1875, 1.0625, 0.5625, 0.4375, 2.125, 0.03125, -0.15625, 0.28125,
  0.625, 0.5625, 0.03125, 1.21875, -0.0625, 1.875, -1.28125, -1.25, 0.8125, -0.34375, 1.71875, -0.875, -0.875, 1.28125,
  0.40625, -0.84375, -0.25, 1.25, 0.0625, 1.375, -1.0625, -2, 0.59375, -0.34375, 1.625, -1.125, -1.4375, 0.46875,
  0.09375, 0.375, -1.5625, 0.875, 1.1875, -0.09375, -1.5, -1.3125, 0.3125, -0.625};
static const double cd_dw_gx[168] = {-0.875, 0, -1.5, 0, 0.8125, 0, 0, 0, 0, 0, 0, 0, -0.0625, 0, 1.25, 0, 0.4375, 0,
  0, 0, 0, 0, 0, 0, 0.5625, 0, 1.1875, 0, -2.5, 0, 0, 0, 0, 0, 0, 0, 1, 0, -0.3125, 0, 0.6875, 0, 0.875, 0, 0.3125, 0,
  0.1875, 0, 0, 0, 0, 0, 0, 0, 1.75, 0, -3.375, 0, 1.6875, 0, 0, 0, 0, 0, 0, 0, -1.1875, 0, 0.3125, 0, 1.125, 0, 0, 0,
  0, 0, 0, 0, 0.125, 0, 1.4375, 0, -1.5, 0, -1.875, 0, 0.875, 0, 0.0625, 0, 0, 0, 0, 0, 0, 0, -0.3125, 0, 2.75, 0,
  -2.375, 0, 0, 0, 0, 0, 0, 0, 1.625, 0, -2.0625, 0, 1.375, 0, 0, 0, 0, 0, 0, 0, 0.25, 0, -1.3125, 0, 0.9375, 0,
  0.8125, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.4375, 0, -1.5, 0, 1.6875, 0, 0, 0, 0, 0, 0, 0, -2.5, 0, 2.25, 0, -0.1875,
  0, 0, 0, 0, 0, 0, 0, 0.6875, 0, 1.3125, 0, -1.9375, 0};
static const double cd_dw_gw[36] = {-1, -1.625, 2.125, -2.125, 5.625, -3.125, -0.75, -0.625, -1.375, 1.5, 0.5, -0.75,
  4.5, -3, 0.25, -2.375, -3.375, 2.5, 2.5, -2.625, 2.625, -1.75, 1.75, -4, -1.25, 2.625, 0.875, -1.5, -0.25, -0.875,
  -2.25, -0.625, -0.125, 2, -0.5, 2};
static const double cd_dw_gb[4] = {0.5, -0.5, -1.5, 1};
static const double cd_gr_y[432] = {-0.28125, -0.15625, 0.3125, 1.46875, 1.21875, -1.03125, 0.5, -0.375, -0.3125,
  1.21875, -1.03125, 0.5, 0.90625, -0.3125, 1.21875, -1.03125, 1.09375, 0.90625, -0.3125, 1.21875, -0.40625, -0.03125,
  1.375, 0.03125, 1.0625, -0.21875, -0.125, -0.375, -0.71875, 0.9375, 0.875, -0.5625, -0.65625, -0.71875, 0.9375,
  0.875, 2.15625, -0.65625, -0.71875, 0.9375, 1.1875, 2.15625, -0.65625, -0.71875, -0.125, 0.0625, 1.28125, -0.25,
  -0.4375, 1.34375, 1.0625, -0.59375, -0.625, -0.75, 0.84375, 2.09375, 2.25, -0.625, -0.75, 0.84375, -1.0625, 2.25,
  -0.625, -0.75, -1.96875, -1.0625, 2.25, -0.625, 0.96875, -0.25, -0.4375, 1.09375, 0.625, -0.71875, -0.34375, -1,
  -0.125, -0.125, -0.8125, -0.8125, -1.84375, -0.125, -0.125, -0.8125, 0.5625, -1.84375, -0.125, -0.125, 1.9375,
  0.5625, -1.84375, -0.125, 0.875, 0.84375, -0.5625, -0.9375, 0.53125, -1, -0.8125, -0.625, -1.28125, 1.59375, 0.34375,
  -1.25, -1.40625, -1.28125, 1.59375, 0.34375, -0.15625, -1.40625, -1.28125, 1.59375, 0.0625, -0.15625, -1.40625,
  -1.28125, -2.21875, -0.90625, 0.75, -1.03125, -1.1875, 0.34375, -0.875, -1.0625, -1.625, -1.5625, -0.125, -0.0625,
  1.0625, -1.625, -1.5625, -0.125, -2.09375, 1.0625, -1.625, -1.5625, -1.8125, -2.09375, 1.0625, -1.625, 0.375,
  -1.4375, -1.1875, 0.09375, 0.15625, 1.3125, -0.28125, -0.15625, 0.90625, -0.3125, 1.21875, -1.03125, 1.09375,
  0.90625, -0.3125, 1.21875, 0.25, 1.09375, 0.90625, -0.3125, 1.125, 0.25, 1.09375, 0.90625, 1.59375, 1.625, -0.40625,
  -0.03125, -0.15625, -0.40625, 1.0625, -0.21875, 2.15625, -0.65625, -0.71875, 0.9375, 1.1875, 2.15625, -0.65625,
  -0.71875, -0.8125, 1.1875, 2.15625, -0.65625, -1.09375, -0.8125, 1.1875, 2.15625, 1.21875, -0.65625, -0.125, 0.0625,
  1.15625, -0.5, -0.4375, 1.34375, -1.0625, 2.25, -0.625, -0.75, -1.96875, -1.0625, 2.25, -0.625, 0.5625, -1.96875,
  -1.0625, 2.25, 0.34375, 0.5625, -1.96875, -1.0625, -0.375, -0.90625, 0.96875, -0.25, -1.15625, -0.78125, 0.625,
  -0.71875, 0.5625, -1.84375, -0.125, -0.125, 1.9375, 0.5625, -1.84375, -0.125, 0.5625, 1.9375, 0.5625, -1.84375,
  -1.84375, 0.5625, 1.9375, 0.5625, -0.78125, -1.15625, 0.875, 0.84375, -0.875, -0.6875, 0.53125, -1, -0.15625,
  -1.40625, -1.28125, 1.59375, 0.0625, -0.15625, -1.40625, -1.28125, -2.46875, 0.0625, -0.15625, -1.40625, -1.5625,
  -2.46875, 0.0625, -0.15625, 0.65625, -1.125, -2.21875, -0.90625, 0.21875, -1, -1.1875, 0.34375, -2.09375, 1.0625,
  -1.625, -1.5625, -1.8125, -2.09375, 1.0625, -1.625, 0.1875, -1.8125, -2.09375, 1.0625, 1.15625, 0.1875, -1.8125,
  -2.09375, -1.15625, 0.125, 0.375, -1.4375, 1.625, 0.03125, 0.15625, 1.3125, 0.25, 1.09375, 0.90625, -0.3125, 1.125,
  0.25, 1.09375, 0.90625, 0.96875, 1.125, 0.25, 1.09375, 1.15625, 0.96875, 1.125, 0.25, -0.1875, 0.1875, 1.59375,
  1.625, 1.375, 1.125, -0.15625, -0.40625, -0.8125, 1.1875, 2.15625, -0.65625, -1.09375, -0.8125, 1.1875, 2.15625,
  2.0625, -1.09375, -0.8125, 1.1875, -0.625, 2.0625, -1.09375, -0.8125, -0.1875, 0, 1.21875, -0.65625, -1.71875,
  -0.625, 1.15625, -0.5, 0.5625, -1.96875, -1.0625, 2.25, 0.34375, 0.5625, -1.96875, -1.0625, -0.90625, 0.34375,
  0.5625, -1.96875, -0.78125, -0.90625, 0.34375, 0.5625, 1.03125, -0.1875, -0.375, -0.90625, 0.84375, 0.875, -1.15625,
  -0.78125, 0.5625, 1.9375, 0.5625, -1.84375, -1.84375, 0.5625, 1.9375, 0.5625, -0.125, -1.84375, 0.5625, 1.9375,
  -0.125, -0.125, -1.84375, 0.5625, -0.71875, 0.625, -0.78125, -1.15625, 0.46875, -1.40625, -0.875, -0.6875, -2.46875,
  0.0625, -0.15625, -1.40625, -1.5625, -2.46875, 0.0625, -0.15625, 1.75, -1.5625, -2.46875, 0.0625, -1.125, 1.75,
  -1.5625, -2.46875, -0.9375, -1, 0.65625, -1.125, -1.125, -1.65625, 0.21875, -1, 0.1875, -1.8125, -2.09375, 1.0625,
  1.15625, 0.1875, -1.8125, -2.09375, -1.65625, 1.15625, 0.1875, -1.8125, -1.71875, -1.65625, 1.15625, 0.1875, 0.0625,
  -1.40625, -1.15625, 0.125};
static const double cd_gr_gx[648] = {-0.9375, 0.875, 1.4375, 0.375, -0.875, -1.4375, 1.625, 0.6875, -1.0625, 1.25,
  -0.8125, -1.125, -0.6875, 0.4375, 0.75, -1.0625, 1.3125, 0, -0.8125, 1, 0.3125, -1.0625, 1, -0.5, 1.25, -0.8125,
  -0.4375, -0.6875, -0.6875, 0.4375, 0.75, -1.0625, 1.3125, -0.8125, 1, -0.4375, 0.75, -1.0625, 1, -0.5, 1.25, -0.8125,
  -1.125, -0.6875, 1.75, -1.25, 0.6875, 1.3125, 0.4375, -2.25, 0.625, 1.1875, 0.375, -1.25, -1.4375, 0.375, -0.6875,
  0.375, 1.25, -0.9375, 0.5625, -0.0625, 0.625, 1.0625, -2.625, -1.3125, 1.75, 0.625, 1.75, -2.25, -0.875, -0.5625,
  1.125, 1.3125, 0.3125, -2.1875, -0.375, 0.875, 2.4375, -2.625, 1, -2.3125, 1.75, 0.625, 1.75, -2.25, -0.875, 0.5625,
  1.3125, -0.9375, 1.25, -2.1875, -0.375, 0.875, 2.4375, -2.625, -1.3125, 1.75, -0.6875, 0.625, 0.9375, -0.9375, -1.25,
  1.25, 0.9375, -0.9375, -1.25, 0.375, 0.9375, 0.75, -2.3125, 0.25, 1.0625, 0.625, -0.375, -1.1875, 0.75, -2.625,
  1.0625, 2.375, -1.25, -3.125, 1.25, 2.75, 1.125, -2.3125, -0.875, -1.1875, 2.6875, 1.3125, -0.625, -2.3125, -0.875,
  1.0625, 1.5, 0.875, -1.25, -3.125, 1.25, 2.75, 1.125, -3.1875, -1.1875, 0.9375, 1.75, 1.3125, -0.625, -2.3125,
  -0.875, 1.0625, 2.375, -1.25, -0.9375, -0.9375, 0.875, 1.4375, 0.375, -0.875, -1.4375, 1.625, 0.6875, -1.0625, 0.625,
  -1.1875, 1.5, 0.3125, -0.75, -1.25, -0.375, 0.6875, 1, -0.8125, 1.25, -2.875, 1.4375, -0.125, 0.75, -1.3125, -0.8125,
  1.4375, 1.3125, -0.625, -0.1875, -1.3125, 0.8125, -0.6875, 0.9375, 1.25, -2.375, -0.5, 1.4375, -0.125, 0.75, -1.3125,
  -0.8125, 2.75, -0.625, -0.9375, 0.75, -1.3125, 0.8125, -0.6875, 0.9375, 1.25, -2.875, 1.4375, 0.9375, -1.4375, 0.375,
  -0.6875, 0.375, 1.25, -0.9375, 0.5625, -0.0625, 0.625, 0.8125, -1.125, -0.375, 0.5625, 0.8125, 0.0625, -2.375, 0.875,
  1.0625, -0.8125, 1, 0.3125, -1.0625, 1, -0.5, 1.25, -0.8125, -0.4375, -0.6875, -0.6875, 0.4375, 0.75, -1.0625,
  1.3125, -0.8125, 1, -0.4375, 0.75, -1.0625, 1, -0.5, 1.25, -0.8125, -1.125, -0.6875, 1.75, -1.3125, 0.75, -1.0625,
  1.3125, -0.8125, 1, 0.3125, -1.0625, -0.4375, 0.625, -1.1875, 1.5, 0.3125, -0.75, -1.25, -0.375, 0.6875, 1, 0.5625,
  -1.375, -0.375, 0.8125, -0.625, 0.8125, -1.3125, 0.375, -1.0625, 1.125, 1.3125, 0.3125, -2.1875, -0.375, 0.875,
  2.4375, -2.625, 1, -2.3125, 1.75, 0.625, 1.75, -2.25, -0.875, 0.5625, 1.3125, -0.9375, 1.25, -2.1875, -0.375, 0.875,
  2.4375, -2.625, -1.3125, 1.75, -0.6875, 1.3125, 1.75, -2.25, -0.875, 0.5625, 1.3125, 0.3125, -2.1875, 0.875, -1.3125,
  0.9375, 1.25, -1.25, -0.9375, 0.9375, 1.25, 0.9375, -1.1875, -1.25, 0.5, 1.5625, -1.3125, -0.75, 0.375, 1.3125, 0.75,
  -1.0625, -0.875, -1.1875, 2.6875, 1.3125, -0.625, -2.3125, -0.875, 1.0625, 1.5, 0.875, -1.25, -3.125, 1.25, 2.75,
  1.125, -3.1875, -1.1875, 0.9375, 1.75, 1.3125, -0.625, -2.3125, -0.875, 1.0625, 2.375, -1.25, -0.9375, -2.1875, 1.25,
  2.75, 1.125, -3.1875, -1.1875, 2.6875, 1.3125, -2.375, 0.8125, -1.125, -0.375, 0.5625, 0.8125, 0.0625, -2.375, 0.875,
  1.0625, 0.3125, 0.4375, -2.25, 0.625, 1.1875, 0.375, -0.625, -1.1875, 1.0625, 1.3125, -0.625, -0.1875, -1.3125,
  0.8125, -0.6875, 0.9375, 1.25, -2.375, -0.5, 1.4375, -0.125, 0.75, -1.3125, -0.8125, 2.75, -0.625, -0.9375, 0.75,
  -1.3125, 0.8125, -0.6875, 0.9375, 1.25, -2.875, 1.4375, 0.9375, -1.0625, 0.75, -1.3125, -0.8125, 2.75, -0.625,
  -0.1875, -1.3125, 1.5, 0.5625, -1.375, -0.375, 0.8125, -0.625, 0.8125, -1.3125, 0.375, -1.0625, 0.375, 0.375, -0.875,
  -1.4375, 1.625, 0.6875, -0.25, -1.125, 1, -0.6875, -0.6875, 0.4375, 0.75, -1.0625, 1.3125, -0.8125, 1, -0.4375, 0.75,
  -1.0625, 1, -0.5, 1.25, -0.8125, -1.125, -0.6875, 1.75, -1.3125, 0.75, -1.0625, 1.3125, -0.8125, 1, 0.3125, -1.0625,
  -0.4375, 1.4375, -0.5, 1.25, -0.8125, -1.125, -0.6875, 0.4375, 0.75, -0.4375, 0.3125, 0.4375, -2.25, 0.625, 1.1875,
  0.375, -0.625, -1.1875, 1.0625, 0.375, 0.375, 1.25, -0.9375, 0.5625, -0.0625, 1.1875, -1.375, 0.75, -2.3125, 1.75,
  0.625, 1.75, -2.25, -0.875, 0.5625, 1.3125, -0.9375, 1.25, -2.1875, -0.375, 0.875, 2.4375, -2.625, -1.3125, 1.75,
  -0.6875, 1.3125, 1.75, -2.25, -0.875, 0.5625, 1.3125, 0.3125, -2.1875, 0.875, -1.25, 0.875, 2.4375, -2.625, -1.3125,
  1.75, 0.625, 1.75, -1.0625, 0.25, -1.25, 1.25, 0.9375, -0.9375, -1.25, -0.9375, 0.9375, 0.75, -1.25, 0.25, 1.0625,
  0.625, -0.375, -1.1875, -0.5, 0.5, 0.625, 0.875, -1.25, -3.125, 1.25, 2.75, 1.125, -3.1875, -1.1875, 0.9375, 1.75,
  1.3125, -0.625, -2.3125, -0.875, 1.0625, 2.375, -1.25, -0.9375, -2.1875, 1.25, 2.75, 1.125, -3.1875, -1.1875, 2.6875,
  1.3125, -2.375, 1.75, -2.3125, -0.875, 1.0625, 2.375, -1.25, -3.125, 1.25, 1.4375, 0.375, 0.375, -0.875, -1.4375,
  1.625, 0.6875, -0.25, -1.125, 1, 0.4375, 0.3125, -0.75, -1.25, -0.375, 0.6875, 1.3125, 0.4375, -1.0625, -0.5, 1.4375,
  -0.125, 0.75, -1.3125, -0.8125, 2.75, -0.625, -0.9375, 0.75, -1.3125, 0.8125, -0.6875, 0.9375, 1.25, -2.875, 1.4375,
  0.9375, -1.0625, 0.75, -1.3125, -0.8125, 2.75, -0.625, -0.1875, -1.3125, 1.5, -0.6875, -0.6875, 0.9375, 1.25, -2.875,
  1.4375, -0.125, 0.75, -2.3125, 0.375, 0.375, 1.25, -0.9375, 0.5625, -0.0625, 1.1875, -1.375, 0.75};
static const double cd_gr_gw[72] = {-3.75, -3.375, 3.875, 2.25, 2.125, 2, 4.125, -3.75, -3.375, -5.875, 2.25, 2.125, 2,
  1.875, -1, 0.125, -2.5, -1, 2.125, 2, 1.875, -2.75, 0.125, -2.5, -1, 1.875, 2, 3.25, -5.375, 3.875, -2.5, -1, 1.875,
  9.125, 3.25, -5.375, 3.25, -5.375, 3.875, 1.375, -0.875, -5.875, 9.125, 3.25, -5.375, -4.625, 1.375, -0.875, -5.875,
  8.375, -3.5, 6.25, -4.75, 0.75, -0.875, -5.875, 8.375, 6.25, 6.25, -4.75, 0.75, -0.625, -4.75, -4.625, 4.5, 1.25,
  -4.75, 0.75, -0.625, 1.375, -4.625, 4.5};
static const double cd_gr_gb[6] = {1.5, 0, -1.5, 0.5, -1, 1};
/* ---- end of generated ---- */

typedef struct cd_case {
  const char *name;
  int64_t xs[4], ws[4];
  int sh, sw, ph, pw, dh, dw, groups;
  const double *y, *gx, *gw, *gb;
} cd_case;
/* gen_conv_cudnn_cases.py's CASES */
static const cd_case CASES[] = {
  {"depthwise, one image", {1, 4, 7, 6}, {4, 1, 3, 3}, 2, 2, 2, 2, 2, 2, 4, cd_dw_y, cd_dw_gx, cd_dw_gw, cd_dw_gb},
  {"two groups", {3, 4, 6, 9}, {6, 2, 2, 3}, 1, 2, 1, 0, 2, 1, 2, cd_gr_y, cd_gr_gx, cd_gr_gw, cd_gr_gb},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))
static int64_t out_size(int64_t in, int64_t k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }
static int64_t numel4(const int64_t *s) { return s[0] * s[1] * s[2] * s[3]; }

/* the forward and the three gradients in dtype t, against PyTorch's float64 values within atol + rtol |v| */
static void run_case(const cd_case *c, dt_dtype t, dt_device dev, double atol, double rtol) {
  int64_t oh = out_size(c->xs[2], c->ws[2], c->sh, c->ph, c->dh), ow = out_size(c->xs[3], c->ws[3], c->sw, c->pw, c->dw);
  dt_tensor *x = img(dt_shape_n(4, c->xs), t, dev), *w = wts(dt_shape_n(4, c->ws), t, dev), *b = bias(c->ws[0], t, dev);
  dt_tensor *gy = grd(dt_shape4(c->xs[0], c->ws[0], oh, ow), t, dev), *y, *gx = NULL, *gw = NULL, *gb = NULL;
  y = dt_f_conv2d_ex(x, w, b, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->groups);
  check_vals(y, c->y, c->xs[0] * c->ws[0] * oh * ow, atol, rtol, c->name);
  T_CHECK_MSG(dt_f_conv2d_backward(gy, x, w, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->groups, &gx, &gw, &gb) == DT_OK, "%s: %s",
              c->name, dt_last_error());
  check_vals(gx, c->gx, numel4(c->xs), atol, rtol, "grad_input");
  check_vals(gw, c->gw, numel4(c->ws), atol, rtol, "grad_weight");
  check_vals(gb, c->gb, c->ws[0], atol, rtol, "grad_bias");
  dt_release(x); dt_release(w); dt_release(b); dt_release(gy); dt_release(y); dt_release(gx); dt_release(gw); dt_release(gb);
}

/* the cases in F32 and F64 against PyTorch; on the emulator's cuDNN, each direction through it */
static void test_cases(dt_device dev) {
  int c;
  for (c = 0; c < NCASES; c++) {
    unsigned long long before = convs();
    run_case(&CASES[c], DT_F32, dev, 1e-6, 1e-6);
    run_case(&CASES[c], DT_F64, dev, 1e-12, 1e-12);
    if (emu_cudnn(dev)) /* forward, input and weight gradients, F32 and F64: one call each */
      T_CHECK_MSG(convs() - before == 6, "%s: %llu cuDNN convolutions, expected 6", CASES[c].name, convs() - before);
    else
      T_CHECK(convs() == before);
  }
}

/* float16 and bfloat16: the inputs are exact in both; cuDNN sums in float32 and rounds once,
   im2col + gemm rounds the product and then the sum with the bias: within 2 units in the last
   place (float16 2^-10 relative, bfloat16 2^-7), and as much absolute for sums near 0 */
static void test_half(dt_device dev) {
  int c;
  for (c = 0; c < NCASES; c++) {
    run_case(&CASES[c], DT_F16, dev, 2e-3, 2.0 / 1024);
    run_case(&CASES[c], DT_BF16, dev, 1.6e-2, 2.0 / 128);
  }
}

/* a bigger convolution in F32, F16 and BF16 against its F32 result on the CPU */
static void test_half_against_f32(dt_device dev) {
  static const dt_dtype ts[2] = {DT_F16, DT_BF16};
  static const double rtol[2] = {4.0 / 1024, 4.0 / 128};
  dt_tensor *x = dt_randn(dt_shape4(2, 8, 9, 10), dt_cpu()), *w = dt_randn(dt_shape4(6, 4, 3, 3), dt_cpu());
  int k;
  for (k = 0; k < 2; k++) { /* the F32 reference from the inputs rounded to the half dtype */
    dt_tensor *xh = dt_cast(x, ts[k]), *wh = dt_cast(w, ts[k]), *xr = dt_cast(xh, DT_F32), *wr = dt_cast(wh, DT_F32);
    dt_tensor *xd = dt_to(xh, dev), *wd = dt_to(wh, dev), *ref = dt_f_conv2d_ex(xr, wr, NULL, 1, 2, 1, 1, 1, 1, 2);
    dt_tensor *y = dt_f_conv2d_ex(xd, wd, NULL, 1, 2, 1, 1, 1, 1, 2);
    T_CHECK(y == NULL || dt_dtype_of(y) == ts[k]);
    /* sums of 36 products of magnitude up to about 10: an absolute error of a few units of 2^-7 (2^-4) */
    check_same(y, ref, k ? 0.25 : 0.03, rtol[k], k ? "bfloat16 against float32" : "float16 against float32");
    dt_release(xh); dt_release(wh); dt_release(xr); dt_release(wr); dt_release(xd); dt_release(wd); dt_release(ref); dt_release(y);
  }
  dt_release(x); dt_release(w);
}

/* dt_set_float32_matmul_precision: "highest" keeps float32 (no TF32), "high" lets the tensor
   cores round the inputs to TF32 (10 mantissa bits), which the emulator does; x = 1 + 2^-12 is
   exact in float32 and rounds to 1 in TF32 */
static void test_math_mode(dt_device dev) {
  const float xv[4] = {1.0f + 1.0f / 4096, 2.0f, 1.0f + 1.0f / 4096, -3.0f}, wv[1] = {1.0f};
  dt_tensor *x = dt_from_data(xv, dt_shape4(1, 1, 2, 2), DT_F32, dev), *w = dt_from_data(wv, dt_shape4(1, 1, 1, 1), DT_F32, dev), *y;
  double want[4] = {1.0 + 1.0 / 4096, 2.0, 1.0 + 1.0 / 4096, -3.0};
  y = dt_f_conv2d(x, w, NULL, 1, 0);
  check_vals(y, want, 4, 0, 0, "highest: float32");
  dt_release(y);
  T_CHECK(dt_set_float32_matmul_precision("high") == DT_OK);
  y = dt_f_conv2d(x, w, NULL, 1, 0);
  if (emu_cudnn(dev)) { /* the emulated tensor cores: TF32 inputs */
    want[0] = want[2] = 1.0;
    check_vals(y, want, 4, 0, 0, "high: TF32");
  } else /* the CPU computes float32 one way; a real GPU may or may not take TF32 */
    check_vals(y, want, 4, 1.0 / 2048, 0, "high");
  dt_release(y);
  T_CHECK(dt_set_float32_matmul_precision("highest") == DT_OK);
  y = dt_f_conv2d(x, w, NULL, 1, 0);
  want[0] = want[2] = 1.0 + 1.0 / 4096;
  check_vals(y, want, 4, 0, 0, "highest again: float32");
  dt_release(y); dt_release(x); dt_release(w);
}

/* a convolution and its gradients captured into a graph and replayed on new inputs */
static void test_graph(dt_device dev) {
  const cd_case *c = &CASES[1];
  int64_t oh = out_size(c->xs[2], c->ws[2], c->sh, c->ph, c->dh), ow = out_size(c->xs[3], c->ws[3], c->sw, c->pw, c->dw);
  dt_tensor *x = dt_zeros(dt_shape_n(4, c->xs), dev), *w = wts(dt_shape_n(4, c->ws), DT_F32, dev), *b = bias(c->ws[0], DT_F32, dev);
  dt_tensor *gy = grd(dt_shape4(c->xs[0], c->ws[0], oh, ow), DT_F32, dev), *y = NULL, *gx = NULL, *gw = NULL, *xv;
  dt_graph *g = NULL;
  unsigned long long before = convs();
  T_CHECK(x && w && b && gy);
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  y = dt_f_conv2d_ex(x, w, b, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->groups);
  T_CHECK(dt_f_conv2d_backward(gy, x, w, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->groups, &gx, &gw, NULL) == DT_OK);
  g = dt_graph_end(dev);
  T_CHECK_MSG(g != NULL, "%s", dt_last_error());
  xv = img(dt_shape_n(4, c->xs), DT_F32, dev);
  if (g && xv && dt_copy_(x, xv) == DT_OK) {
    T_CHECK(dt_graph_replay(g) == DT_OK);
    check_vals(y, c->y, c->xs[0] * c->ws[0] * oh * ow, 1e-6, 1e-6, "conv replayed");
    check_vals(gx, c->gx, numel4(c->xs), 1e-6, 1e-6, "grad_input replayed");
    check_vals(gw, c->gw, numel4(c->ws), 1e-6, 1e-6, "grad_weight replayed");
    if (emu_cudnn(dev)) T_CHECK(convs() - before == 3); /* captured once, replayed without new calls */
  }
  dt_graph_free(g);
  dt_release(x); dt_release(xv); dt_release(w); dt_release(b); dt_release(gy); dt_release(y); dt_release(gx); dt_release(gw);
}

/* the emulator's cuDNN: the forward's first algorithm asks for more workspace than the device has,
   so the next (with a workspace) runs, as do both gradients' first deterministic one (with one:
   the weight gradient's list starts with algorithm 0, which adds with atomics, and is passed
   over); nothing stays allocated */
static void test_cudnn_taken(dt_device dev) {
  dt_tensor *x, *w, *gy, *y, *gx = NULL, *gw = NULL;
  unsigned long long c0, w0;
  size_t base;
  if (!emu_cudnn(dev)) T_SKIP("the emulator's cuDNN (make test-emu) counts its calls");
  base = allocated(dev);
  x = img(dt_shape4(2, 3, 5, 5), DT_F32, dev); w = wts(dt_shape4(4, 3, 3, 3), DT_F32, dev); gy = grd(dt_shape4(2, 4, 3, 3), DT_F32, dev);
  c0 = convs(); w0 = ws_uses();
  y = dt_f_conv2d(x, w, NULL, 1, 0);
  T_CHECK_MSG(y != NULL, "%s", dt_last_error());
  T_CHECK(convs() - c0 == 1 && ws_uses() - w0 == 1);
  T_CHECK(dt_f_conv2d_backward(gy, x, w, 1, 1, 0, 0, 1, 1, 1, &gx, &gw, NULL) == DT_OK);
  T_CHECK(convs() - c0 == 3 && ws_uses() - w0 == 3);
  T_CHECK_MSG(dtemu_cudnn_last_algo(2) == 1 && dtemu_cudnn_last_algo(1) == 1, "weight gradient algorithm %d, input gradient %d",
              dtemu_cudnn_last_algo(2), dtemu_cudnn_last_algo(1));
  dt_release(x); dt_release(w); dt_release(gy); dt_release(y); dt_release(gx); dt_release(gw);
  T_CHECK_MSG(allocated(dev) == base, "%zu bytes allocated, %zu before", allocated(dev), base);
}

/* cuDNN refusing tensors above a size (its own limit is 2^31 - 1 elements; the emulator is told
   a smaller one): the core halves the block of images until cuDNN takes it, the weight gradient
   adding up over the blocks (beta 1 after the first); below one image, im2col + gemm */
static void test_cudnn_blocks(dt_device dev) {
  const cd_case *c = &CASES[1]; /* 3 images of x (4, 6, 9) = 216 and y (6, 6, 4) = 144 elements */
  int k;
  if (!emu_cudnn(dev)) T_SKIP("the emulator's cuDNN (make test-emu) refuses large tensors when told");
  for (k = 0; k < 2; k++) {
    unsigned long long before = convs();
    dtemu_cudnn_max_elements(k == 0 ? 2 * 216 : 100); /* two images at a time; not even one */
    run_case(c, DT_F64, dev, 1e-12, 1e-12);
    dtemu_cudnn_max_elements(0);
    /* a block of 3 images refused, then blocks of 2 and 1 taken, in each of the three directions */
    T_CHECK_MSG(convs() - before == (k == 0 ? 6u : 0u), "%llu cuDNN convolutions", convs() - before);
  }
}

/* A block of images that starts misaligned for cuDNN (float16 images of an odd number of elements,
   the second block at image 2; the emulator told to want 16-byte pointers, as cuDNN's vector
   loads may): cuDNN's BAD_PARAM_MISALIGNED_POINTER sends the whole convolution to im2col + gemm,
   with the right values in all three directions */
static void test_cudnn_misaligned(dt_device dev) {
  dt_tensor *x, *w, *gy, *xr, *wr, *gyr, *y, *yr, *gx = NULL, *gw = NULL, *gxr = NULL, *gwr = NULL;
  unsigned long long before;
  if (!emu_cudnn(dev)) T_SKIP("the emulator's cuDNN (make test-emu) wants aligned pointers when told");
  /* 3 images of x (1, 5, 5) = 25 and y (3, 3, 3) = 27 elements */
  x = img(dt_shape4(3, 1, 5, 5), DT_F16, dev); w = wts(dt_shape4(3, 1, 3, 3), DT_F16, dev); gy = grd(dt_shape4(3, 3, 3, 3), DT_F16, dev);
  xr = dt_to(x, dt_cpu()); wr = dt_to(w, dt_cpu()); gyr = dt_to(gy, dt_cpu());
  dtemu_cudnn_max_elements(2 * 27); /* blocks of two images: the second starts 100 bytes in */
  dtemu_cudnn_align(16);
  before = convs();
  y = dt_f_conv2d(x, w, NULL, 1, 0);
  T_CHECK_MSG(dt_f_conv2d_backward(gy, x, w, 1, 1, 0, 0, 1, 1, 1, &gx, &gw, NULL) == DT_OK, "%s", dt_last_error());
  dtemu_cudnn_max_elements(0);
  /* the first block of two taken in each direction, the second refused */
  T_CHECK_MSG(convs() - before == 3, "%llu cuDNN convolutions", convs() - before);
  { /* a misaligned pointer was that call's: one image of the same geometry, aligned, goes to cuDNN */
    dt_tensor *x1 = img(dt_shape4(1, 1, 5, 5), DT_F16, dev), *y1;
    before = convs();
    y1 = dt_f_conv2d(x1, w, NULL, 1, 0);
    T_CHECK_MSG(y1 != NULL && convs() - before == 1, "%llu cuDNN convolutions: %s", convs() - before, dt_last_error());
    dt_release(x1); dt_release(y1);
  }
  dtemu_cudnn_align(0);
  yr = dt_f_conv2d(xr, wr, NULL, 1, 0);
  T_CHECK(dt_f_conv2d_backward(gyr, xr, wr, 1, 1, 0, 0, 1, 1, 1, &gxr, &gwr, NULL) == DT_OK);
  /* the same float16 computation on the CPU: the patterns and their sums are exact in float16 */
  check_same(y, yr, 0, 0, "float16 forward, misaligned block");
  check_same(gx, gxr, 0, 0, "float16 input gradient, misaligned block");
  check_same(gw, gwr, 0, 0, "float16 weight gradient, misaligned block");
  dt_release(x); dt_release(w); dt_release(gy); dt_release(xr); dt_release(wr); dt_release(gyr);
  dt_release(y); dt_release(yr); dt_release(gx); dt_release(gw); dt_release(gxr); dt_release(gwr);
}

/* A failing cuDNN call: a clear error naming it and cuDNN's status, nothing made, nothing
   leaked (device memory, cuDNN's descriptors); a refused case (NOT_SUPPORTED) falls back to
   im2col + gemm with the right values */
static void test_cudnn_failures(dt_device dev) {
  dt_tensor *x, *w, *b, *gy, *y, *gx = NULL, *gw = NULL, *gb = NULL;
  size_t base;
  unsigned long long objs, before;
  int k;
  const double *want = CASES[0].y;
  const cd_case *c = &CASES[0];
  if (!emu_cudnn(dev)) T_SKIP("the emulator's cuDNN (make test-emu) fails calls when told");
  x = img(dt_shape_n(4, c->xs), DT_F32, dev); w = wts(dt_shape_n(4, c->ws), DT_F32, dev);
  gy = grd(dt_shape4(1, 4, 4, 3), DT_F32, dev);
  y = dt_f_conv2d_ex(x, w, NULL, 2, 2, 2, 2, 2, 2, 4); /* the plans of this geometry, made once */
  T_CHECK(dt_f_conv2d_backward(gy, x, w, 2, 2, 2, 2, 2, 2, 4, &gx, &gw, NULL) == DT_OK);
  dt_release(y); dt_release(gx); dt_release(gw); gx = gw = NULL;
  base = allocated(dev); objs = live();
  /* the first algorithm failing: the next one runs (PyTorch tries each in turn), the right values */
  b = bias(4, DT_F32, dev);
  dtemu_cudnn_fail("cudnnConvolutionForward", ST_EXECUTION_FAILED, 1);
  before = convs();
  y = dt_f_conv2d_ex(x, w, b, 2, 2, 2, 2, 2, 2, 4);
  T_CHECK_MSG(y != NULL && convs() - before == 1, "%s; %llu cuDNN convolutions", dt_last_error(), convs() - before);
  if (y) check_vals(y, want, 48, 1e-6, 1e-6, "the second algorithm, the first having failed");
  dt_release(y); dt_release(b);
  /* every algorithm failing: the last failure is the error, nothing made */
  dtemu_cudnn_fail("cudnnConvolutionForward", ST_EXECUTION_FAILED, 8);
  y = dt_f_conv2d_ex(x, w, NULL, 2, 2, 2, 2, 2, 2, 4);
  T_CHECK(y == NULL && dt_last_status() == DT_ERR_BACKEND);
  T_CHECK_MSG(strstr(dt_last_error(), "dt_f_conv2d") && strstr(dt_last_error(), "cudnnConvolutionForward failed: CUDNN_STATUS_EXECUTION_FAILED"),
              "%s", dt_last_error());
  dtemu_cudnn_fail("cudnnConvolutionForward", 0, 0);
  dtemu_cudnn_fail("cudnnConvolutionBackwardFilter", ST_EXECUTION_FAILED, 8);
  gx = x; gw = w; gb = gy;
  T_CHECK(dt_f_conv2d_backward(gy, x, w, 2, 2, 2, 2, 2, 2, 4, &gx, &gw, &gb) == DT_ERR_BACKEND);
  T_CHECK_MSG(strstr(dt_last_error(), "cudnnConvolutionBackwardFilter failed: CUDNN_STATUS_EXECUTION_FAILED"), "%s", dt_last_error());
  T_CHECK(gx == x && gw == w && gb == gy);
  dtemu_cudnn_fail("cudnnConvolutionBackwardFilter", 0, 0);
  dtemu_cudnn_fail("cudnnConvolutionBackwardData", ST_BAD_PARAM, 8);
  gx = NULL;
  T_CHECK(dt_f_conv2d_backward(gy, x, w, 2, 2, 2, 2, 2, 2, 4, &gx, NULL, NULL) == DT_ERR_BACKEND && gx == NULL);
  T_CHECK_MSG(strstr(dt_last_error(), "cudnnConvolutionBackwardData failed: CUDNN_STATUS_BAD_PARAM"), "%s", dt_last_error());
  dtemu_cudnn_fail("cudnnConvolutionBackwardData", 0, 0);
  /* a status that says cuDNN cannot run here (3007: NOT_SUPPORTED_ARCH_MISMATCH) is reported, with
     the way round it, not taken as a refusal of this convolution */
  dtemu_cudnn_fail("cudnnConvolutionForward", 3007, 8);
  y = dt_f_conv2d_ex(x, w, NULL, 2, 2, 2, 2, 2, 2, 4);
  T_CHECK(y == NULL && dt_last_status() == DT_ERR_BACKEND);
  T_CHECK_MSG(strstr(dt_last_error(), "cudnnConvolutionForward failed") && strstr(dt_last_error(), "DEVTENSOR_NO_CUDNN=1"), "%s",
              dt_last_error());
  dtemu_cudnn_fail("cudnnConvolutionForward", 0, 0);
  T_CHECK_MSG(allocated(dev) == base && live() == objs, "%zu bytes allocated (%zu before), %llu cuDNN objects (%llu before)",
              allocated(dev), base, live(), objs);
  dt_release(x); dt_release(w); dt_release(gy);
  /* a new geometry (one more image): its descriptors refused as bad, then cuDNN refusing its heuristics */
  x = img(dt_shape4(2, 4, 7, 6), DT_F32, dev); w = wts(dt_shape_n(4, c->ws), DT_F32, dev);
  base = allocated(dev);
  dtemu_cudnn_fail("cudnnSetFilter4dDescriptor", ST_BAD_PARAM, 1);
  y = dt_f_conv2d_ex(x, w, NULL, 2, 2, 2, 2, 2, 2, 4);
  T_CHECK(y == NULL && dt_last_status() == DT_ERR_BACKEND);
  T_CHECK_MSG(strstr(dt_last_error(), "cudnnSetFilter4dDescriptor failed: CUDNN_STATUS_BAD_PARAM"), "%s", dt_last_error());
  T_CHECK_MSG(allocated(dev) == base && live() == objs, "%zu bytes allocated (%zu before), %llu cuDNN objects (%llu before)",
              allocated(dev), base, live(), objs);
  /* cuDNN refusing the two images' heuristics: blocks of one image, which it takes */
  dtemu_cudnn_fail("cudnnGetConvolutionForwardAlgorithm_v7", ST_NOT_SUPPORTED, 1);
  b = bias(4, DT_F32, dev);
  for (k = 0; k < 2; k++) {
    before = convs();
    if (k == 1) /* and refusing each of the one image's algorithms: im2col + gemm */
      dtemu_cudnn_fail("cudnnConvolutionForward", ST_NOT_SUPPORTED, 8);
    y = dt_f_conv2d_ex(x, w, b, 2, 2, 2, 2, 2, 2, 4);
    T_CHECK_MSG(convs() - before == (k == 0 ? 2u : 0u), "%llu cuDNN convolutions", convs() - before);
    if (y) { /* each image's output is the one-image case's (the same pattern) */
      dt_tensor *y0 = dt_slice(y, 0, 0, 1);
      check_vals(y0, want, 48, 1e-6, 1e-6, k ? "refused by cuDNN: im2col + gemm" : "blocks of one image");
      dt_release(y0);
    } else
      T_CHECK_MSG(0, "%s", dt_last_error());
    dt_release(y);
  }
  dtemu_cudnn_fail("cudnnConvolutionForward", 0, 0);
  dt_release(b);
  T_CHECK_MSG(allocated(dev) == base, "%zu bytes allocated, %zu before", allocated(dev), base);
  dt_release(x); dt_release(w);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_cases);
  T_RUN_ALL_DEVICES(test_half);
  T_RUN_ALL_DEVICES(test_half_against_f32);
  T_RUN_ALL_DEVICES(test_math_mode);
  T_RUN_ALL_DEVICES(test_graph);
  T_RUN_ALL_DEVICES(test_cudnn_taken);
  T_RUN_ALL_DEVICES(test_cudnn_blocks);
  T_RUN_ALL_DEVICES(test_cudnn_misaligned);
  T_RUN_ALL_DEVICES(test_cudnn_failures);
  return t_finish();
}
