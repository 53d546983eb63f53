/* In-place arithmetic (dt_add_, dt_sub_, dt_mul_, dt_div_, dt_add_scalar_, dt_mul_scalar_: torch's
   a.add_(b), ...) on every device: bit for bit what the out-of-place operation gives (the same
   kernel), in every dtype that has the arithmetic, with b broadcast (a row, a column, a 0-d
   tensor), b the same tensor as a, and empty tensors; the version autograd reads is bumped (a
   backward that saved a refuses); and what is refused. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

static int contains(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

/* t's bytes on the host (malloc'd) */
static void *bytes_of(const dt_tensor *t) {
  size_t n = dt_nbytes(t);
  void *h = malloc(n ? n : 1);
  if (h && n && dt_to_host(t, h, n) != DT_OK) { free(h); return NULL; }
  return h;
}
static int same_bits(const dt_tensor *a, const dt_tensor *b) {
  void *x = bytes_of(a), *y = bytes_of(b);
  int r = x && y && dt_nbytes(a) == dt_nbytes(b) && memcmp(x, y, dt_nbytes(a)) == 0;
  free(x); free(y);
  return r;
}
/* values of dtype t on dev: normals (floats; for division, kept away from 0) or integers in [-50, 50) */
static dt_tensor *vals(dt_shape s, dt_dtype t, dt_device dev, int away_from_zero) {
  dt_tensor *r, *y;
  if (t == DT_I32 || t == DT_I64) {
    r = dt_randint(-50, 50, s, dev);
    y = r ? dt_cast(r, t) : NULL;
    dt_release(r);
    return y;
  }
  r = dt_randn(s, dev);
  if (r && away_from_zero) { /* |v| + 0.5: no division by (nearly) zero */
    dt_tensor *a = dt_abs(r), *m = a ? dt_add_scalar(a, 0.5) : NULL;
    dt_release(a); dt_release(r);
    r = m;
  }
  y = r ? dt_cast(r, t) : NULL;
  dt_release(r);
  return y;
}

typedef dt_status (*inplace_fn)(dt_tensor *, const dt_tensor *);
typedef dt_tensor *(*outplace_fn)(const dt_tensor *, const dt_tensor *);

static void test_binary(dt_device dev) {
  static const dt_dtype types[6] = {DT_F32, DT_F64, DT_F16, DT_BF16, DT_I32, DT_I64};
  static const inplace_fn in[4] = {dt_add_, dt_sub_, dt_mul_, dt_div_};
  static const outplace_fn out[4] = {dt_add, dt_sub, dt_mul, dt_div};
  static const char *names[4] = {"add_", "sub_", "mul_", "div_"};
  dt_shape bs[5];
  int ti, k, j;
  bs[0] = dt_shape2(5, 7); bs[1] = dt_shape1(7); bs[2] = dt_shape2(5, 1); bs[3] = dt_shape0(); bs[4] = dt_shape3(1, 1, 7);
  dt_manual_seed(11);
  for (ti = 0; ti < 6; ti++)
    for (k = 0; k < 4; k++) {
      if (k == 3 && (types[ti] == DT_I32 || types[ti] == DT_I64)) continue; /* div_: floats (below: refused) */
      for (j = 0; j < 4; j++) {
        dt_tensor *a = vals(dt_shape2(5, 7), types[ti], dev, 0), *b = vals(bs[j], types[ti], dev, k == 3), *want, *before;
        unsigned ok;
        T_CHECK_MSG(a && b, "%s", dt_last_error());
        if (!a || !b) { dt_release(a); dt_release(b); continue; }
        want = out[k](a, b);
        before = dt_copyto(a, dev);
        ok = in[k](a, b) == DT_OK;
        T_CHECK_MSG(ok && want && same_bits(a, want), "%s %s, b of %d dims: %s", names[k], dt_dtype_name(types[ti]), bs[j].ndim,
                    dt_last_error());
        T_CHECK(dt_dtype_of(a) == types[ti] && dt_numel(a) == 35);
        dt_release(want); dt_release(before); dt_release(a); dt_release(b);
      }
      { /* b is a itself: a op a */
        dt_tensor *a = vals(dt_shape1(9), types[ti], dev, k == 3), *want = a ? out[k](a, a) : NULL;
        T_CHECK_MSG(want && in[k](a, a) == DT_OK && same_bits(a, want), "%s %s of itself: %s", names[k], dt_dtype_name(types[ti]),
                    dt_last_error());
        dt_release(a); dt_release(want);
      }
      { /* b of 3 dims, all but the last 1: broadcasts to a (1, 1, 7) shape larger than a's: refused */
        dt_tensor *a = vals(dt_shape2(5, 7), types[ti], dev, 0), *b = vals(bs[4], types[ti], dev, 1);
        T_CHECK(a && b && in[k](a, b) == DT_ERR_SHAPE && contains(dt_last_error(), "keeps a's shape"));
        dt_release(a); dt_release(b);
      }
    }
  { /* empty tensors: nothing to do */
    dt_tensor *a = dt_zeros(dt_shape2(0, 3), dev), *b = dt_ones(dt_shape1(3), dev);
    T_CHECK(a && b && dt_add_(a, b) == DT_OK && dt_numel(a) == 0);
    dt_release(a); dt_release(b);
  }
}

static void test_scalar(dt_device dev) {
  static const dt_dtype types[6] = {DT_F32, DT_F64, DT_F16, DT_BF16, DT_I32, DT_I64};
  int ti;
  dt_manual_seed(12);
  for (ti = 0; ti < 6; ti++) {
    int isint = types[ti] == DT_I32 || types[ti] == DT_I64;
    double s = isint ? 3.0 : 0.375;
    dt_tensor *a = vals(dt_shape2(4, 6), types[ti], dev, 0), *w1 = a ? dt_add_scalar(a, s) : NULL, *w2 = NULL;
    T_CHECK_MSG(w1 && dt_add_scalar_(a, s) == DT_OK && same_bits(a, w1), "add_scalar_ %s: %s", dt_dtype_name(types[ti]), dt_last_error());
    w2 = w1 ? dt_mul_scalar(w1, -2.0) : NULL;
    T_CHECK_MSG(w2 && dt_mul_scalar_(a, -2.0) == DT_OK && same_bits(a, w2), "mul_scalar_ %s: %s", dt_dtype_name(types[ti]), dt_last_error());
    if (isint) { /* the result must stay an integer */
      T_CHECK(dt_add_scalar_(a, 0.5) == DT_ERR_DTYPE && contains(dt_last_error(), "not a whole number"));
      T_CHECK(dt_mul_scalar_(a, 1.5) == DT_ERR_DTYPE && same_bits(a, w2)); /* unchanged */
    }
    dt_release(a); dt_release(w1); dt_release(w2);
  }
}

/* autograd: a leaf that requires grad is refused while grad mode is on and changes with it off;
   a tensor a recorded operation saved, changed in place, makes that backward refuse */
static void test_autograd(dt_device dev) {
  dt_tensor *w = dt_ones(dt_shape1(3), dev), *x = dt_full(dt_shape1(3), 2.0, dev), *one = dt_ones(dt_shape1(3), dev), *y, *l;
  int was;
  float h[3];
  T_CHECK(w && x && one && dt_requires_grad_(w, 1) == DT_OK);
  if (!w || !x || !one) goto done;
  T_CHECK(dt_add_(w, one) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "leaf that requires grad"));
  T_CHECK(dt_mul_scalar_(w, 2.0) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_add_(x, w) == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "b requires grad"));
  was = dt_set_grad_enabled(0);
  T_CHECK(dt_add_(w, one) == DT_OK && dt_mul_scalar_(w, 2.0) == DT_OK && dt_add_(x, w) == DT_OK); /* as an optimizer does */
  dt_set_grad_enabled(was);
  T_CHECK(dt_to_host(w, h, sizeof h) == DT_OK && h[0] == 4.0f && h[2] == 4.0f);
  T_CHECK(dt_to_host(x, h, sizeof h) == DT_OK && h[1] == 6.0f);
  y = dt_mul(w, x); /* saves x for w's gradient */
  l = y ? dt_sum(y) : NULL;
  T_CHECK(l && dt_sub_(x, one) == DT_OK);
  T_CHECK(l && dt_autograd_backward(l, NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "changed in place"));
  dt_release(y); dt_release(l);
done:
  dt_release(w); dt_release(x); dt_release(one);
}

/* what is refused, each leaving a as it was */
static void test_refusals(dt_device dev) {
  dt_tensor *a = dt_full(dt_shape2(4, 3), 2.0, dev), *b64 = dt_ones(dt_shape2(4, 3), dev), *b;
  dt_tensor *z3 = dt_zeros(dt_shape1(3), dev), *ai = z3 ? dt_cast(z3, DT_I64) : NULL, *bi = ai ? dt_add_scalar(ai, 1.0) : NULL;
  dt_tensor *u8 = z3 ? dt_cast(z3, DT_U8) : NULL, *v, *f;
  float h[12];
  int i, ok = 1;
  b = b64 ? dt_cast(b64, DT_F64) : NULL;
  T_CHECK(a && b && ai && bi && u8);
  if (!a || !b || !ai || !bi || !u8) goto done;
  T_CHECK(dt_add_(NULL, a) == DT_ERR_INVALID_ARGUMENT && dt_add_(a, NULL) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_add_(a, b) == DT_ERR_DTYPE && contains(dt_last_error(), "dt_add_"));                 /* float32 and float64 */
  T_CHECK(dt_div_(ai, bi) == DT_ERR_DTYPE && contains(dt_last_error(), "dt_div_"));               /* integer division */
  T_CHECK(dt_add_(u8, u8) == DT_ERR_DTYPE && dt_mul_scalar_(u8, 2.0) == DT_ERR_DTYPE);            /* no uint8 arithmetic */
  f = dt_ones(dt_shape1(4), dev);
  T_CHECK(f && dt_mul_(a, f) == DT_ERR_SHAPE && contains(dt_last_error(), "cannot be broadcast")); /* (4, 3) and (4,) */
  dt_release(f);
  v = dt_slice(a, 0, 1, 2); /* a's second row: memory of a's */
  T_CHECK(v && dt_add_(a, v) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "overlaps a's memory"));
  dt_release(v);
  T_CHECK(dt_to_host(a, h, sizeof h) == DT_OK);
  for (i = 0; i < 12; i++) ok = ok && h[i] == 2.0f;
  T_CHECK(ok);
  if (dt_num_gpus() > 0 && dev.type == DT_CPU) { /* another device */
    dt_tensor *g = dt_ones(dt_shape2(4, 3), dt_gpu(0));
    T_CHECK(g && dt_add_(a, g) == DT_ERR_DEVICE_MISMATCH);
    dt_release(g);
  }
done:
  dt_release(a); dt_release(b); dt_release(b64); dt_release(z3); dt_release(ai); dt_release(bi); dt_release(u8);
}

/* two disjoint slices of one tensor: one added into the other in place; overlapping ones refused */
static void test_disjoint_slices(dt_device dev) {
  static const float v[8] = {1, 2, 3, 4, 10, 20, 30, 40};
  dt_tensor *t = dt_from_data(v, dt_shape2(4, 2), DT_F32, dev), *top = t ? dt_slice(t, 0, 0, 2) : NULL,
            *bottom = t ? dt_slice(t, 0, 2, 4) : NULL, *mid = t ? dt_slice(t, 0, 1, 3) : NULL;
  float h[8];
  T_CHECK(top && bottom && mid);
  if (top && bottom && mid) {
    T_CHECK_MSG(dt_add_(top, bottom) == DT_OK, "%s", dt_last_error());
    T_CHECK(dt_to_host(t, h, sizeof h) == DT_OK && h[0] == 11 && h[1] == 22 && h[2] == 33 && h[3] == 44 && h[4] == 10 && h[7] == 40);
    T_CHECK(dt_sub_(top, mid) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "overlaps"));
    /* dt_copy_ and dt_axpy_ likewise (PyTorch's copy_ refuses it too; on a GPU the result would be
       undefined): nothing written */
    T_CHECK(dt_copy_(top, mid) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_copy_: src overlaps dst's memory"));
    T_CHECK(dt_copy_(mid, top) == DT_ERR_INVALID_ARGUMENT && dt_axpy_(top, 2.0, mid) == DT_ERR_INVALID_ARGUMENT &&
            contains(dt_last_error(), "dt_axpy_: x overlaps y's memory"));
    T_CHECK(dt_to_host(t, h, sizeof h) == DT_OK && h[0] == 11 && h[2] == 33 && h[5] == 20 && h[7] == 40);
    /* a tensor with itself, and disjoint slices, are fine */
    T_CHECK(dt_copy_(t, t) == DT_OK && dt_axpy_(top, 1.0, top) == DT_OK && dt_copy_(bottom, top) == DT_OK);
    T_CHECK(dt_to_host(t, h, sizeof h) == DT_OK && h[0] == 22 && h[3] == 88 && h[4] == 22 && h[7] == 88);
  }
  dt_release(top); dt_release(bottom); dt_release(mid); dt_release(t);
  if (dev.type == DT_CPU) { /* two tensors over overlapping memory of the caller's (dt_from_blob): the same */
    float buf[6] = {1, 2, 3, 4, 5, 6};
    dt_tensor *lo = dt_from_blob(buf, dt_shape1(4), DT_F32, dev, NULL, NULL), *hi = dt_from_blob(buf + 2, dt_shape1(4), DT_F32, dev, NULL, NULL);
    T_CHECK(lo && hi && dt_copy_(hi, lo) == DT_ERR_INVALID_ARGUMENT && dt_axpy_(lo, 1.0, hi) == DT_ERR_INVALID_ARGUMENT);
    T_CHECK(buf[0] == 1 && buf[2] == 3 && buf[5] == 6);
    dt_release(lo); dt_release(hi);
  }
}

/* in a graph: an in-place update captured once and replayed adds each time */
static void test_graph(dt_device dev) {
  dt_tensor *a = dt_zeros(dt_shape1(5), dev), *b = dt_full(dt_shape1(5), 1.5, dev);
  dt_graph *g;
  float h[5];
  T_CHECK(a && b && dt_graph_begin(dev) == DT_OK);
  T_CHECK(dt_add_(a, b) == DT_OK && dt_mul_scalar_(a, 2.0) == DT_OK);
  g = dt_graph_end(dev);
  T_CHECK_MSG(g && dt_graph_replay(g) == DT_OK && dt_graph_replay(g) == DT_OK, "%s", dt_last_error());
  T_CHECK(dt_to_host(a, h, sizeof h) == DT_OK && h[0] == 9.0f && h[4] == 9.0f); /* ((0 + 1.5) 2 + 1.5) 2 */
  dt_graph_free(g);
  dt_release(a); dt_release(b);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_binary);
  T_RUN_ALL_DEVICES(test_scalar);
  T_RUN_ALL_DEVICES(test_autograd);
  T_RUN_ALL_DEVICES(test_refusals);
  T_RUN_ALL_DEVICES(test_disjoint_slices);
  T_RUN_ALL_DEVICES(test_graph);
  return t_finish();
}
