/* Float16 and bfloat16 parameters: the optimizers' steps against PyTorch's single-tensor loops
   (tests/half_optim_cases.inc, bit for bit), modules converted with dt_module_to_dtype (net.half(),
   net.bfloat16()) and trained through autograd, dt_clip_grad_norm_ on half gradients. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include "half_optim_cases.inc"

#define HO_N 12
#define HO_STEPS 3

static dt_optimizer *ho_make(int c, dt_tensor *p) {
  const char *k = ho_configs[c].kind;
  double lr = ho_configs[c].lr, wd = ho_configs[c].weight_decay;
  if (strcmp(k, "sgd") == 0) return dt_sgd_tensors(&p, 1, lr, ho_configs[c].momentum, wd);
  if (strcmp(k, "adam") == 0) return dt_adam_tensors(&p, 1, lr, ho_configs[c].beta1, ho_configs[c].beta2, ho_configs[c].eps, wd);
  return dt_adamw_tensors(&p, 1, lr, ho_configs[c].beta1, ho_configs[c].beta2, ho_configs[c].eps, wd);
}

/* p.grad = g: the backward of sum(p * g) (g * 1, exact in any dtype) */
static int ho_set_grad(dt_tensor *p, const uint16_t *gbits, dt_dtype t, dt_device dev) {
  dt_tensor *g = dt_from_data(gbits, dt_shape1(HO_N), t, dev), *y = g ? dt_mul(p, g) : NULL, *s = y ? dt_sum(y) : NULL;
  int ok = s && dt_zero_grad_(p) == DT_OK && dt_autograd_backward(s, NULL) == DT_OK;
  dt_release(g); dt_release(y); dt_release(s);
  return ok;
}

/* every configuration of half_optim_cases.inc, three steps, each step's parameter bit for bit */
static void test_half_optim_vs_torch(dt_device dev) {
  dt_dtype ts[2] = {DT_F16, DT_BF16};
  int h, c, st, i, nc = (int)(sizeof ho_configs / sizeof ho_configs[0]);
  for (h = 0; h < 2; h++)
    for (c = 0; c < nc; c++) {
      const uint16_t *p0 = h ? ho_p0_DT_BF16 : ho_p0_DT_F16;
      dt_tensor *p = dt_from_data(p0, dt_shape1(HO_N), ts[h], dev);
      dt_optimizer *o;
      T_CHECK(p && dt_requires_grad_(p, 1) == DT_OK);
      o = ho_make(c, p);
      T_CHECK_MSG(o != NULL, "%s", dt_last_error());
      for (st = 0; o && st < HO_STEPS; st++) {
        uint16_t got[HO_N];
        const uint16_t *want = h ? ho_want_DT_BF16[c][st] : ho_want_DT_F16[c][st];
        T_CHECK(ho_set_grad(p, h ? ho_g_DT_BF16[st] : ho_g_DT_F16[st], ts[h], dev));
        T_CHECK_MSG(dt_optimizer_step(o) == DT_OK, "%s", dt_last_error());
        T_CHECK(dt_dtype_of(p) == ts[h] && dt_to_host(p, got, sizeof got) == DT_OK);
        for (i = 0; i < HO_N; i++)
          T_CHECK_MSG(got[i] == want[i], "%s %s lr %g wd %g, step %d, element %d: 0x%04x, PyTorch 0x%04x", dt_dtype_name(ts[h]),
                      ho_configs[c].kind, ho_configs[c].lr, ho_configs[c].weight_decay, st + 1, i, got[i], want[i]);
      }
      dt_optimizer_free(o);
      dt_release(p);
    }
}

/* a larger parameter (the CPU splits it over its threads): the same bits as the 12 elements
   above repeated, element by element */
static void test_half_optim_large(dt_device dev) {
  enum { R = 6000 };
  static uint16_t p0[R * HO_N], g[HO_STEPS][R * HO_N], got[R * HO_N];
  int c = 4, st, i, bad = 0;
  dt_tensor *p, *gt;
  dt_optimizer *o;
  for (i = 0; i < R * HO_N; i++) {
    p0[i] = ho_p0_DT_BF16[i % HO_N];
    for (st = 0; st < HO_STEPS; st++) g[st][i] = ho_g_DT_BF16[st][i % HO_N];
  }
  p = dt_from_data(p0, dt_shape1(R * HO_N), DT_BF16, dev);
  T_CHECK(p && dt_requires_grad_(p, 1) == DT_OK);
  o = ho_make(c, p);
  for (st = 0; o && st < HO_STEPS; st++) {
    dt_tensor *y, *s;
    gt = dt_from_data(g[st], dt_shape1(R * HO_N), DT_BF16, dev);
    y = gt ? dt_mul(p, gt) : NULL;
    s = y ? dt_sum(y) : NULL;
    T_CHECK(s && dt_zero_grad_(p) == DT_OK && dt_autograd_backward(s, NULL) == DT_OK);
    dt_release(gt); dt_release(y); dt_release(s);
    T_CHECK(dt_optimizer_step(o) == DT_OK);
  }
  T_CHECK(dt_to_host(p, got, sizeof got) == DT_OK);
  for (i = 0; i < R * HO_N; i++) bad += got[i] != ho_want_DT_BF16[c][HO_STEPS - 1][i % HO_N];
  T_CHECK_MSG(bad == 0, "%d elements differ", bad);
  dt_optimizer_free(o);
  dt_release(p);
}

/* |a - b| <= k ulps of t at b's magnitude, at least 0.25's (the outputs are about 1 in size, so
   those near 0 carry the others' absolute errors); t's spacing: 2^-10 float16, 2^-7 bfloat16 */
static int ho_close(double a, double b, dt_dtype t, double k) {
  double ulp = ldexp(1.0, (t == DT_F16 ? -10 : -7)), m = fabs(b) > 0.25 ? fabs(b) : 0.25;
  int e;
  frexp(m, &e);
  return fabs(a - b) <= k * ulp * ldexp(1.0, e - 1);
}

/* host values of a float tensor of any dtype as doubles */
static int ho_values(const dt_tensor *t, double *out, int64_t n) {
  dt_tensor *d = dt_cast(t, DT_F64);
  int ok = d && dt_numel(d) == n && dt_to_host(d, out, (size_t)n * sizeof(double)) == DT_OK;
  dt_release(d);
  return ok;
}

/* net.half() / net.bfloat16() of Sequential(Linear, ReLU, Conv..., BatchNorm, LayerNorm): every
   parameter and gradient converted (the same bits as dt_cast), float buffers converted and
   num_batches_tracked kept int64; the forward gives t, close to the float32 network's on the
   same (rounded) values; it goes back through autograd and an optimizer steps it. */
static dt_module *ho_net(void) {
  dt_module *net = dt_sequential(), *cnn = dt_sequential();
  dt_sequential_add(cnn, dt_conv2d(1, 2, 3, 1, 1));
  dt_sequential_add(cnn, dt_batch_norm(2));
  dt_sequential_add(cnn, dt_relu_layer());
  dt_sequential_add(cnn, dt_flatten_layer());
  dt_sequential_add(cnn, dt_linear(2 * 4 * 4, 6));
  dt_sequential_add(cnn, dt_layer_norm(6));
  dt_sequential_add(cnn, dt_gelu_layer());
  dt_sequential_add(cnn, dt_dropout(0.0));
  dt_sequential_add(cnn, dt_linear(6, 3));
  dt_sequential_add(net, cnn);
  return net;
}

static void test_module_to_half(dt_device dev) {
  dt_dtype ts[2] = {DT_F16, DT_BF16};
  int h, i;
  for (h = 0; h < 2; h++) {
    dt_dtype t = ts[h];
    dt_module *net, *ref;
    dt_tensor *x, *xh, *xf, *y, *yr, *l, *nbt;
    dt_optimizer *o;
    double a[3 * 3], b[3 * 3];
    int np;
    dt_manual_seed(5);
    net = ho_net();
    dt_manual_seed(5);
    ref = ho_net();
    T_CHECK(net && ref && dt_module_to(net, dev) == DT_OK && dt_module_to(ref, dev) == DT_OK);
    T_CHECK_MSG(dt_module_to_dtype(net, t) == DT_OK, "%s", dt_last_error());
    np = dt_module_num_params(net);
    T_CHECK(np == dt_module_num_params(ref) && np == 10);
    for (i = 0; i < np; i++) {
      const char *nm;
      dt_tensor *p = dt_module_param(net, i, &nm), *pr = dt_module_param(ref, i, NULL), *c = dt_cast(pr, t);
      uint16_t u[256], v[256];
      int64_t n = dt_numel(p), k;
      T_CHECK_MSG(dt_dtype_of(p) == t && dt_dtype_of(dt_module_grad(net, i)) == t && dt_requires_grad(p), "%s", nm);
      T_CHECK(n <= 256 && dt_to_host(p, u, (size_t)n * 2) == DT_OK && dt_to_host(c, v, (size_t)n * 2) == DT_OK);
      for (k = 0; k < n && k < 256; k++) T_CHECK_MSG(u[k] == v[k], "%s[%d]", nm, (int)k);
      dt_release(c);
    }
    T_CHECK(dt_dtype_of(dt_module_get_buffer(net, "0.1.running_mean")) == t);
    T_CHECK(dt_dtype_of(dt_module_get_buffer(net, "0.1.running_var")) == t);
    nbt = dt_module_get_buffer(net, "0.1.num_batches_tracked");
    T_CHECK(nbt && dt_dtype_of(nbt) == DT_I64);
    /* the reference in float32 on the half network's values */
    T_CHECK(dt_module_to_dtype(ref, t) == DT_OK && dt_module_to_dtype(ref, DT_F32) == DT_OK);
    dt_manual_seed(9);
    x = dt_randn(dt_shape4(3, 1, 4, 4), dev);
    xh = x ? dt_cast(x, t) : NULL;
    xf = xh ? dt_cast(xh, DT_F32) : NULL;
    y = xh ? dt_forward(net, xh) : NULL;
    T_CHECK_MSG(y && dt_dtype_of(y) == t, "%s", dt_last_error());
    yr = xf ? dt_forward(ref, xf) : NULL;
    T_CHECK(yr && ho_values(y, a, 9) && ho_values(yr, b, 9));
    /* each layer's ops round to t (a few roundings each, where PyTorch's fused kernels round once) */
    for (i = 0; i < 9; i++) T_CHECK_MSG(ho_close(a[i], b[i], t, 16), "%s: y[%d] = %g, float32 %g", dt_dtype_name(t), i, a[i], b[i]);
    T_CHECK(dt_item(nbt) == 1.0); /* batch norm in training counted the batch */
    /* dt_backward refuses (the fused layers take F32, F64); autograd goes back, an optimizer steps */
    T_CHECK(y && dt_backward_params(net, y) == DT_ERR_UNSUPPORTED && strstr(dt_last_error(), "dt_autograd_backward"));
    o = dt_adam(net, 0.01, 0.9, 0.999, 1e-8, 0.0);
    l = y ? dt_sum(y) : NULL;
    T_CHECK(l && dt_optimizer_zero_grad(o) == DT_OK && dt_autograd_backward(l, NULL) == DT_OK);
    for (i = 0; i < np; i++) T_CHECK(dt_dtype_of(dt_module_grad(net, i)) == t);
    {
      dt_tensor *w = dt_module_param(net, np - 2, NULL), *w0 = dt_cast(w, DT_F32);
      double before[18], after[18];
      T_CHECK(ho_values(w0, before, 18));
      T_CHECK_MSG(dt_optimizer_step(o) == DT_OK, "%s", dt_last_error());
      T_CHECK(dt_dtype_of(w) == t && ho_values(w, after, 18));
      for (i = 0; i < 18; i++) T_CHECK(before[i] != after[i]); /* Adam's first step moves every weight by about lr */
      dt_release(w0);
    }
    /* the optimizer's state follows the module back to float32 */
    T_CHECK(dt_module_to_dtype(net, DT_F32) == DT_OK);
    dt_release(y); dt_release(l);
    y = xf ? dt_forward(net, xf) : NULL;
    l = y ? dt_sum(y) : NULL;
    T_CHECK(l && dt_optimizer_zero_grad(o) == DT_OK && dt_autograd_backward(l, NULL) == DT_OK && dt_optimizer_step(o) == DT_OK);
    T_CHECK(dt_dtype_of(dt_module_param(net, 0, NULL)) == DT_F32);
    dt_optimizer_free(o);
    dt_release(x); dt_release(xh); dt_release(xf); dt_release(y); dt_release(yr); dt_release(l);
    dt_module_free(net); dt_module_free(ref);
  }
}

/* an embedding and a plain Linear + ReLU network in half: forward and SGD with momentum */
static void test_module_half_small(dt_device dev) {
  dt_module *emb = dt_embedding(5, 4), *mlp = dt_sequential();
  int64_t idx[3] = {4, 0, 2};
  dt_tensor *ix = dt_from_data(idx, dt_shape1(3), DT_I64, dev), *e, *x, *y, *l;
  dt_optimizer *o;
  dt_sequential_add(mlp, dt_linear(4, 3));
  dt_sequential_add(mlp, dt_relu_layer());
  dt_sequential_add(mlp, dt_linear(3, 1));
  T_CHECK(dt_module_to(emb, dev) == DT_OK && dt_module_to_dtype(emb, DT_BF16) == DT_OK);
  T_CHECK(dt_module_to(mlp, dev) == DT_OK && dt_module_to_dtype(mlp, DT_BF16) == DT_OK);
  e = dt_forward(emb, ix);
  T_CHECK_MSG(e && dt_dtype_of(e) == DT_BF16, "%s", dt_last_error());
  y = e ? dt_forward(mlp, e) : NULL;
  T_CHECK_MSG(y && dt_dtype_of(y) == DT_BF16, "%s", dt_last_error());
  x = y ? dt_mul(y, y) : NULL;
  l = x ? dt_sum(x) : NULL;
  o = dt_sgd(mlp, 0.1, 0.9, 0.01);
  T_CHECK(l && dt_autograd_backward(l, NULL) == DT_OK && dt_optimizer_step(o) == DT_OK && dt_optimizer_step(o) == DT_OK);
  T_CHECK(dt_grad(dt_module_param(emb, 0, NULL)) && dt_dtype_of(dt_grad(dt_module_param(emb, 0, NULL))) == DT_BF16);
  dt_optimizer_free(o);
  dt_release(ix); dt_release(e); dt_release(x); dt_release(y); dt_release(l);
  dt_module_free(emb); dt_module_free(mlp);
}

/* torch.nn.utils.clip_grad_norm_([p1, p2], 1.0) on bfloat16 gradients (5 and 7 elements), by
   PyTorch 1.13 on the CPU (torch.manual_seed(3); (torch.randn(5) * 3).bfloat16(),
   (torch.randn(7) * 2).bfloat16()): the total norm and the scaled gradients, bit for bit */
static const uint16_t clip_g[12] = {0x401A, 0x3F06, 0x3E89, 0xBFEC, 0x3E0E, 0xC02F, 0x3F2D, 0x4001, 0xC038, 0x3FFA, 0x3F86, 0x401E};
static const uint16_t clip_want[12] = {0x3EC0, 0x3DA8, 0x3D2B, 0xBE94, 0x3CB2, 0xBEDB, 0x3DD8, 0x3EA1, 0xBEE6, 0x3E9C, 0x3E28, 0x3EC6};

static void test_clip_half(dt_device dev) {
  dt_dtype ts[2] = {DT_BF16, DT_F16};
  int h, i;
  for (h = 0; h < 2; h++) {
    dt_dtype t = ts[h];
    dt_tensor *g16 = dt_from_data(clip_g, dt_shape1(12), DT_BF16, dev), *gt = g16 ? dt_cast(g16, t) : NULL;
    dt_tensor *p[2], *gp[2];
    double total = 0, before[12], after[12], sq = 0;
    uint16_t got[12];
    p[0] = dt_zeros(dt_shape1(5), dev); p[1] = dt_zeros(dt_shape1(7), dev);
    for (i = 0; i < 2; i++) {
      dt_tensor *z = dt_cast(p[i], t);
      dt_release(p[i]); p[i] = z;
      T_CHECK(z && dt_requires_grad_(z, 1) == DT_OK);
    }
    /* p.grad = the gradient's piece: the backward of sum(p * g) */
    gp[0] = gt ? dt_slice(gt, 0, 0, 5) : NULL; gp[1] = gt ? dt_slice(gt, 0, 5, 12) : NULL;
    for (i = 0; i < 2; i++) {
      dt_tensor *y = gp[i] ? dt_mul(p[i], gp[i]) : NULL, *l = y ? dt_sum(y) : NULL;
      T_CHECK(l && dt_autograd_backward(l, NULL) == DT_OK);
      dt_release(y); dt_release(l);
    }
    T_CHECK(ho_values(gt, before, 12));
    T_CHECK_MSG(dt_clip_grad_norm_(p, 2, 1.0, &total) == DT_OK, "%s", dt_last_error());
    T_CHECK(dt_dtype_of(dt_grad(p[0])) == t && dt_dtype_of(dt_grad(p[1])) == t);
    if (t == DT_BF16) {
      T_CHECK_MSG(total == 6.40625, "total %.9g", total); /* 0x40CD */
      T_CHECK(dt_to_host(dt_grad(p[0]), got, 10) == DT_OK && dt_to_host(dt_grad(p[1]), got + 5, 14) == DT_OK);
      for (i = 0; i < 12; i++) T_CHECK_MSG(got[i] == clip_want[i], "element %d: 0x%04x, PyTorch 0x%04x", i, got[i], clip_want[i]);
    } else { /* float16: the same ops (PyTorch 1.13 has no float16 clamp on the CPU): within an ulp of float64's */
      double a[5], b[7];
      for (i = 0; i < 12; i++) sq += before[i] * before[i];
      T_CHECK_MSG(ho_close(total, sqrt(sq), t, 2), "total %.9g, float64 %.9g", total, sqrt(sq));
      T_CHECK(ho_values(dt_grad(p[0]), a, 5) && ho_values(dt_grad(p[1]), b, 7));
      for (i = 0; i < 12; i++) after[i] = i < 5 ? a[i] : b[i - 5];
      for (i = 0; i < 12; i++) T_CHECK_MSG(ho_close(after[i], before[i] / sqrt(sq), t, 2), "element %d: %g", i, after[i]);
    }
    /* max_norm above the norm: nothing changes */
    T_CHECK(dt_clip_grad_norm_(p, 2, 100.0, &total) == DT_OK);
    for (i = 0; i < 2; i++) dt_release(p[i]);
    for (i = 0; i < 2; i++) dt_release(gp[i]);
    dt_release(g16); dt_release(gt);
  }
}

/* the trainer on a bfloat16 MLP (tr.autocast off): through autograd, Adam, gradient clipping and
   a validation set, X and the targets in bfloat16; the loss summed in float32 goes down. Then
   a float16 one with plain SGD and tr.cuda_graph (a captured step). */
static void test_trainer_half(dt_device dev) {
  int h;
  for (h = 0; h < 2; h++) {
    dt_dtype t = h ? DT_F16 : DT_BF16;
    dt_module *net = dt_sequential();
    dt_tensor *Xf, *X, *W, *Yf, *Y;
    dt_optimizer *o = NULL;
    dt_trainer tr;
    dt_manual_seed(21);
    dt_sequential_add(net, dt_linear(4, 16));
    dt_sequential_add(net, dt_relu_layer());
    dt_sequential_add(net, dt_linear(16, 1));
    Xf = dt_randn(dt_shape2(64, 4), dev);
    W = dt_randn(dt_shape2(4, 1), dev);
    Yf = Xf && W ? dt_matmul(Xf, W) : NULL;
    X = Xf ? dt_cast(Xf, t) : NULL;
    Y = Yf ? dt_cast(Yf, t) : NULL;
    T_CHECK(X && Y && dt_module_to_dtype(net, t) == DT_OK);
    T_CHECK(dt_trainer_init(&tr, 6, dev.type == DT_CUDA ? 1 : 0) == DT_OK);
    tr.quiet = 1; tr.batch_size = 16;
    if (dev.type == DT_CUDA) tr.device = tr.gpus[0] = dev;
    if (!h) {
      o = dt_adam(net, 0.01, 0.9, 0.999, 1e-8, 0.0);
      tr.optimizer = o; tr.gradient_clip_val = 5.0;
      T_CHECK_MSG(dt_trainer_fit_val(&tr, net, X, Y, X, Y) == DT_OK, "%s", dt_last_error());
    } else {
      tr.lr = 0.02; tr.cuda_graph = 1;
      T_CHECK_MSG(dt_trainer_fit(&tr, net, X, Y) == DT_OK, "%s", dt_last_error());
    }
    T_CHECK_MSG(tr.epochs_run == 6 && tr.epoch_loss[5] < 0.7 * tr.epoch_loss[0], "%s: loss %g -> %g", dt_dtype_name(t),
                tr.epoch_loss[0], tr.epoch_loss[5]);
    T_CHECK(dt_dtype_of(dt_module_param(net, 0, NULL)) == t);
    dt_trainer_free(&tr);
    dt_optimizer_free(o);
    dt_release(Xf); dt_release(X); dt_release(W); dt_release(Yf); dt_release(Y);
    dt_module_free(net);
  }
}

int main(void) {
  T_RUN_ALL_DEVICES(test_half_optim_vs_torch);
  T_RUN_ALL_DEVICES(test_half_optim_large);
  T_RUN_ALL_DEVICES(test_module_to_half);
  T_RUN_ALL_DEVICES(test_module_half_small);
  T_RUN_ALL_DEVICES(test_clip_half);
  T_RUN_ALL_DEVICES(test_trainer_half);
  return t_finish();
}
