/* dt_set_autocast and dt_grad_scaler, on every device: under autocast BF16 and F16 matmul, the
   Linear layer and conv2d give the half dtype and the very bits of the explicit cast, compute in
   the half dtype, as PyTorch's autocast does; softmax, log_softmax and the losses of half inputs
   run in F32; parameters stay F32 and their gradients come back F32, close to the F32 run's; the
   grad scaler skips a step with an inf gradient and moves its scale as torch.amp.GradScaler's
   defaults say (x0.5 after a skipped step, x2 after 2000 good ones); the trainer's tr.autocast. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"

static const float xa[12] = {0.31f, -1.2f, 0.57f, 2.1f, -0.44f, 0.9f, 1.33f, -0.05f, 0.72f, -1.9f, 0.18f, 0.66f};
static const float xc[3] = {0.25f, -0.5f, 0.125f};
static const float xb[20] = {0.5f, -0.25f, 1.1f, 0.03f, -0.7f, 0.81f, 0.29f, -1.4f, 0.6f, 0.11f,
                             -0.38f, 1.7f, 0.92f, -0.15f, 0.47f, 0.2f, -0.9f, 0.36f, 1.25f, -0.61f};

/* whether a and b hold the same bytes (same dtype and size) */
static int same_bits(const dt_tensor *a, const dt_tensor *b) {
  unsigned char pa[4096], pb[4096];
  size_t n = a && b ? dt_nbytes(a) : 0;
  if (!a || !b || dt_dtype_of(a) != dt_dtype_of(b) || n != dt_nbytes(b) || n > sizeof pa) return 0;
  if (dt_to_host(a, pa, n) != DT_OK || dt_to_host(b, pb, n) != DT_OK) return 0;
  return memcmp(pa, pb, n) == 0;
}

static void test_lower_precision(dt_device dev) {
  dt_dtype halves[2] = {DT_BF16, DT_F16};
  int h;
  dt_tensor *a = dt_from_data(xa, dt_shape2(3, 4), DT_F32, dev), *b = dt_from_data(xb, dt_shape2(4, 5), DT_F32, dev);
  dt_tensor *x = dt_reshape(b, dt_shape4(1, 2, 2, 5)), *w = dt_reshape(a, dt_shape4(3, 2, 2, 1)), *bias = dt_from_data(xc, dt_shape1(3), DT_F32, dev);
  T_CHECK(a && b && x && w && bias);
  for (h = 0; h < 2; h++) {
    dt_dtype t = halves[h];
    dt_tensor *y, *ref, *c1, *c2, *c3, *wt, *p;
    dt_module *lin = dt_linear(4, 3);
    T_CHECK(dt_set_autocast(dev.type, t) == DT_F32 && dt_get_autocast(dev.type) == t);
    /* matmul: the inputs cast to t, the product in t */
    y = dt_matmul(a, b);
    dt_set_autocast(dev.type, DT_F32);
    c1 = dt_cast(a, t); c2 = dt_cast(b, t);
    ref = dt_matmul(c1, c2);
    T_CHECK_MSG(y && dt_dtype_of(y) == t && same_bits(y, ref), "matmul under autocast %s", dt_dtype_name(t));
    dt_release(y); dt_release(ref); dt_release(c1); dt_release(c2);
    /* conv2d with a bias */
    dt_set_autocast(dev.type, t);
    y = dt_f_conv2d(x, w, bias, 1, 0);
    dt_set_autocast(dev.type, DT_F32);
    c1 = dt_cast(x, t); c2 = dt_cast(w, t); c3 = dt_cast(bias, t);
    ref = dt_f_conv2d(c1, c2, c3, 1, 0);
    T_CHECK_MSG(y && dt_dtype_of(y) == t && same_bits(y, ref), "conv2d under autocast %s", dt_dtype_name(t));
    dt_release(y); dt_release(ref); dt_release(c1); dt_release(c2); dt_release(c3);
    /* the Linear layer: x W^T + b of the three cast; the parameters stay F32 */
    T_CHECK(lin && dt_module_to(lin, dev) == DT_OK);
    dt_set_autocast(dev.type, t);
    y = dt_forward(lin, a);
    dt_set_autocast(dev.type, DT_F32);
    c1 = dt_cast(a, t); c2 = dt_cast(dt_linear_weight(lin), t); c3 = dt_cast(dt_linear_bias(lin), t);
    wt = dt_transpose(c2); p = dt_matmul(c1, wt); ref = p ? dt_add(p, c3) : NULL;
    T_CHECK_MSG(y && dt_dtype_of(y) == t && same_bits(y, ref), "linear under autocast %s", dt_dtype_name(t));
    T_CHECK(dt_dtype_of(dt_linear_weight(lin)) == DT_F32);
    dt_release(y); dt_release(ref); dt_release(c1); dt_release(c2); dt_release(c3); dt_release(wt); dt_release(p);
    dt_module_free(lin);
    /* float32 list: softmax, log_softmax, cross_entropy, mse and sum of a half input in F32, as of its F32 cast */
    {
      int64_t lab[3] = {1, 0, 4};
      dt_tensor *lh = dt_cast(a, t), *lf = dt_cast(lh, DT_F32), *tg = dt_from_data(lab, dt_shape1(3), DT_I64, dev);
      dt_tensor *r[5], *e[5];
      int k;
      dt_tensor *bh = dt_slice(b, 0, 0, 3), *bh4 = bh ? dt_slice(bh, 1, 0, 4) : NULL;
      dt_set_autocast(dev.type, t);
      r[0] = dt_softmax(lh, 1); r[1] = dt_log_softmax(lh, 0); r[2] = dt_sum(lh);
      dt_set_autocast(dev.type, DT_F32);
      e[0] = dt_softmax(lf, 1); e[1] = dt_log_softmax(lf, 0); e[2] = dt_sum(lf);
      {
        dt_tensor *l5 = dt_matmul(a, b), *l5h = l5 ? dt_cast(l5, t) : NULL, *l5f = l5h ? dt_cast(l5h, DT_F32) : NULL;
        dt_set_autocast(dev.type, t);
        r[3] = dt_cross_entropy(l5h, tg); r[4] = dt_mse_loss(lh, bh4);
        dt_set_autocast(dev.type, DT_F32);
        e[3] = dt_cross_entropy(l5f, tg); e[4] = dt_mse_loss(lf, bh4);
        dt_release(l5); dt_release(l5h); dt_release(l5f);
      }
      for (k = 0; k < 5; k++) T_CHECK_MSG(r[k] && dt_dtype_of(r[k]) == DT_F32 && same_bits(r[k], e[k]), "float32 op %d under %s", k, dt_dtype_name(t));
      for (k = 0; k < 5; k++) { dt_release(r[k]); dt_release(e[k]); }
      /* the rest in their input's dtype; integers untouched */
      dt_set_autocast(dev.type, t);
      r[0] = dt_add(lh, lh); r[1] = dt_relu(a); r[2] = dt_one_hot(tg, 5);
      dt_set_autocast(dev.type, DT_F32);
      T_CHECK(r[0] && dt_dtype_of(r[0]) == t && r[1] && dt_dtype_of(r[1]) == DT_F32 && r[2] && dt_dtype_of(r[2]) == DT_I64);
      for (k = 0; k < 3; k++) dt_release(r[k]);
      dt_release(lh); dt_release(lf); dt_release(tg); dt_release(bh); dt_release(bh4);
    }
  }
  /* per device type: autocast on the other type changes nothing here */
  dt_set_autocast(dev.type == DT_CPU ? DT_CUDA : DT_CPU, DT_BF16);
  {
    dt_tensor *y = dt_matmul(a, b);
    T_CHECK(y && dt_dtype_of(y) == DT_F32);
    dt_release(y);
  }
  dt_set_autocast(dev.type == DT_CPU ? DT_CUDA : DT_CPU, DT_F32);
  dt_release(a); dt_release(b); dt_release(x); dt_release(w); dt_release(bias);
}

/* a two-layer MLP, the same weights for each seed */
static dt_module *mlp(dt_device dev) {
  dt_module *net = dt_sequential();
  dt_manual_seed(7);
  dt_sequential_add(net, dt_linear(4, 8));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(8, 5));
  T_CHECK(dt_module_to(net, dev) == DT_OK);
  return net;
}

/* F32 gradients under autocast, within 3% of the largest F32 gradient of each parameter: BF16
   keeps 8 significant bits (relative rounding 2^-9), F16 11; a few roundings in a row. */
static void test_master_grads(dt_device dev) {
  dt_dtype modes[3] = {DT_F32, DT_BF16, DT_F16};
  float g32[4][64];
  int k, i, j, np = 0;
  int64_t lab[3] = {1, 0, 4};
  dt_tensor *a = dt_from_data(xa, dt_shape2(3, 4), DT_F32, dev), *tg = dt_from_data(lab, dt_shape1(3), DT_I64, dev);
  for (k = 0; k < 3; k++) {
    dt_module *net = mlp(dev);
    dt_tensor *y, *loss;
    dt_set_autocast(dev.type, modes[k]);
    y = dt_forward(net, a);
    loss = dt_cross_entropy(y, tg);
    dt_set_autocast(dev.type, DT_F32);
    T_CHECK(y && dt_dtype_of(y) == (modes[k] == DT_F32 ? DT_F32 : modes[k]) && loss && dt_dtype_of(loss) == DT_F32);
    T_CHECK(dt_autograd_backward(loss, NULL) == DT_OK);
    np = dt_module_num_params(net);
    for (i = 0; i < np && i < 4; i++) {
      dt_tensor *g = dt_module_grad(net, i), *p = dt_module_param(net, i, NULL);
      float v[64], mx = 0;
      T_CHECK(g && dt_dtype_of(g) == DT_F32 && dt_dtype_of(p) == DT_F32 && dt_numel(g) <= 64);
      if (!g || dt_to_host(g, v, dt_nbytes(g)) != DT_OK) continue;
      if (k == 0) { memcpy(g32[i], v, dt_nbytes(g)); continue; }
      for (j = 0; j < dt_numel(g); j++) mx = fabsf(g32[i][j]) > mx ? fabsf(g32[i][j]) : mx;
      for (j = 0; j < dt_numel(g); j++)
        T_CHECK_MSG(fabsf(v[j] - g32[i][j]) <= 0.03f * mx + 1e-6f, "%s grad %d[%d]: %g, F32 %g", dt_dtype_name(modes[k]), i, j, v[j], g32[i][j]);
    }
    dt_release(y); dt_release(loss);
    dt_module_free(net);
  }
  T_CHECK(np == 4);
  dt_release(a); dt_release(tg);
}

static double param0(dt_module *m) {
  float v[4];
  return dt_to_host(dt_module_param(m, 0, NULL), v, sizeof v) == DT_OK ? v[0] : NAN;
}

/* the scaler: loss * scale; unscaled gradients; a step skipped on inf; the scale halved after it and
   doubled after 2000 good steps */
static void test_grad_scaler(dt_device dev) {
  float xv[2] = {0.5f, -1.0f}, yv[1] = {2.0f}, g1[4], g2[4];
  dt_module *net, *ref;
  dt_optimizer *opt, *ropt;
  dt_grad_scaler *s = dt_grad_scaler_new(4.0);
  dt_tensor *x, *y, *p, *l, *sl;
  int i;
  dt_manual_seed(3); net = dt_linear(2, 1);
  dt_manual_seed(3); ref = dt_linear(2, 1);
  T_CHECK(s && net && ref && dt_module_to(net, dev) == DT_OK && dt_module_to(ref, dev) == DT_OK);
  opt = dt_sgd(net, 0.1, 0, 0); ropt = dt_sgd(ref, 0.1, 0, 0);
  x = dt_from_data(xv, dt_shape2(1, 2), DT_F32, dev); y = dt_from_data(yv, dt_shape2(1, 1), DT_F32, dev);
  /* scaled: the same step as unscaled */
  p = dt_forward(net, x); l = dt_mse_loss(p, y); sl = dt_grad_scaler_scale(s, l);
  T_CLOSE(dt_item(sl), 4.0 * dt_item(l), 1e-6, 1e-6);
  T_CHECK(dt_autograd_backward(sl, NULL) == DT_OK && dt_grad_scaler_step(s, opt) == DT_OK && dt_grad_scaler_update(s) == DT_OK);
  dt_release(p); dt_release(l); dt_release(sl);
  p = dt_forward(ref, x); l = dt_mse_loss(p, y);
  T_CHECK(dt_autograd_backward(l, NULL) == DT_OK);
  T_CHECK(dt_to_host(dt_module_grad(net, 0), g1, 8) == DT_OK && dt_to_host(dt_module_grad(ref, 0), g2, 8) == DT_OK);
  T_CLOSE(g1[0], g2[0], 1e-6, 1e-6); T_CLOSE(g1[1], g2[1], 1e-6, 1e-6);
  T_CHECK(dt_optimizer_step(ropt) == DT_OK);
  T_CLOSE(param0(net), param0(ref), 1e-7, 1e-6);
  T_CHECK(dt_grad_scaler_get_scale(s) == 4.0);
  dt_release(p); dt_release(l);
  /* an inf in the gradient: the step skipped, the scale halved */
  {
    double before = param0(net);
    float bad[2] = {INFINITY, 1.0f};
    dt_tensor *xi = dt_from_data(bad, dt_shape2(1, 2), DT_F32, dev);
    T_CHECK(dt_optimizer_zero_grad(opt) == DT_OK);
    p = dt_forward(net, xi); l = dt_mse_loss(p, y); sl = dt_grad_scaler_scale(s, l);
    T_CHECK(dt_autograd_backward(sl, NULL) == DT_OK);
    /* an earlier error still the last (a lookup the program handled) does not make the inf a failure */
    T_CHECK(dt_module_get_child(net, "missing") == NULL && dt_last_status() != DT_OK);
    T_CHECK_MSG(dt_grad_scaler_step(s, opt) == DT_OK, "%s", dt_last_error());
    T_CHECK(param0(net) == before);
    T_CHECK(dt_grad_scaler_update(s) == DT_OK && dt_grad_scaler_get_scale(s) == 2.0);
    T_CHECK(dt_grad_scaler_update(s) != DT_OK); /* no step since */
    dt_release(p); dt_release(l); dt_release(sl); dt_release(xi);
  }
  /* 2000 good steps (lr 0): the scale doubles at the 2000th, not before */
  dt_optimizer_free(opt);
  opt = dt_sgd(net, 0.0, 0, 0);
  T_CHECK(dt_optimizer_zero_grad(opt) == DT_OK);
  p = dt_forward(net, x); l = dt_mse_loss(p, y); sl = dt_grad_scaler_scale(s, l);
  T_CHECK(dt_autograd_backward(sl, NULL) == DT_OK);
  for (i = 0; i < 2000; i++) {
    if (dt_grad_scaler_step(s, opt) != DT_OK || dt_grad_scaler_update(s) != DT_OK) break;
    if (i == 1998) T_CHECK(dt_grad_scaler_get_scale(s) == 2.0);
  }
  T_CHECK(i == 2000 && dt_grad_scaler_get_scale(s) == 4.0);
  dt_release(p); dt_release(l); dt_release(sl);
  dt_release(x); dt_release(y);
  dt_optimizer_free(opt); dt_optimizer_free(ropt);
  dt_grad_scaler_free(s);
  dt_module_free(net); dt_module_free(ref);
}

/* the trainer: a tiny MLP, 50 full-batch steps of MSE, under tr.autocast BF16 and F16 reaches the
   F32 run's loss within 10% (+0.01) */
static void test_trainer(dt_device dev) {
  dt_dtype modes[3] = {DT_F32, DT_BF16, DT_F16};
  float X[64 * 4], Y[64 * 5];
  double loss[3];
  int k, i, j;
  dt_tensor *Xt, *Yt;
  for (i = 0; i < 64; i++)
    for (j = 0; j < 4; j++) X[i * 4 + j] = (float)sin(0.37 * i + 1.3 * j);
  for (i = 0; i < 64; i++)
    for (j = 0; j < 5; j++) Y[i * 5 + j] = 0.5f * X[i * 4 + j % 4] - 0.25f * X[i * 4 + (j + 1) % 4] + 0.1f * (float)j;
  Xt = dt_from_data(X, dt_shape2(64, 4), DT_F32, dev); Yt = dt_from_data(Y, dt_shape2(64, 5), DT_F32, dev);
  for (k = 0; k < 3; k++) {
    dt_trainer tr;
    dt_module *net = mlp(dev);
    T_CHECK(dt_trainer_init(&tr, 50, dev.type == DT_CUDA ? 1 : 0) == DT_OK);
    tr.device = dev; tr.quiet = 1; tr.batch_size = 64; tr.lr = 0.1; tr.autocast = modes[k];
    T_CHECK(dt_trainer_fit(&tr, net, Xt, Yt) == DT_OK);
    loss[k] = tr.last_loss;
    T_CHECK((modes[k] == DT_F16) == (tr.grad_scaler != NULL));
    T_CHECK(dt_dtype_of(dt_module_param(net, 0, NULL)) == DT_F32 && dt_get_autocast(dev.type) == DT_F32);
    {
      double el = NAN;
      T_CHECK(dt_trainer_evaluate(&tr, net, Xt, Yt, &el, NULL) == DT_OK && el == el);
    }
    dt_trainer_free(&tr);
    dt_module_free(net);
  }
  T_CHECK_MSG(loss[0] < 0.05, "the F32 run does not learn: loss %g", loss[0]);
  for (k = 1; k < 3; k++) T_CHECK_MSG(fabs(loss[k] - loss[0]) <= 0.1 * loss[0] + 0.01, "%s loss %g, F32 %g", dt_dtype_name(modes[k]), loss[k], loss[0]);
  dt_release(Xt); dt_release(Yt);
}

/* A batch norm module (float32 parameters) on a half input under autocast, as a convolution's output
   is there: as PyTorch's batch norm of mixed dtypes, normalised in float32 and the result in the
   input's dtype, so bit for bit the float32 module on the input cast up, its result cast down; the
   same running statistics, and float32 gradients equal to that composition's. Without autocast
   the half input is refused, as before. */
static void test_batch_norm_autocast(dt_device dev) {
  static const float xv[24] = {0.5f, -1.25f, 2.0f, 0.75f, -0.5f, 1.5f, 3.0f, -2.0f, 0.25f, 1.0f, -0.75f, 2.5f,
                               -1.5f, 0.125f, 1.75f, -0.25f, 2.25f, -3.0f, 0.625f, 1.25f, -1.0f, 0.375f, -2.5f, 1.125f};
  dt_dtype modes[2] = {DT_BF16, DT_F16};
  int k, i, j;
  for (k = 0; k < 2; k++) {
    dt_tensor *x = dt_from_data(xv, dt_shape4(2, 3, 2, 2), DT_F32, dev), *xh = dt_cast(x, modes[k]), *xf = dt_cast(xh, DT_F32);
    dt_module *a = dt_batch_norm(3), *b = dt_batch_norm(3);
    dt_tensor *ya, *yb32, *yb, *la, *lb, *fa, *fb, *sa, *sb;
    T_CHECK(dt_module_to(a, dev) == DT_OK && dt_module_to(b, dev) == DT_OK);
    T_CHECK(dt_forward(a, xh) == NULL && dt_last_status() == DT_ERR_DTYPE); /* autocast off: refused */
    dt_set_autocast(dev.type, modes[k]);
    ya = dt_forward(a, xh);
    dt_set_autocast(dev.type, DT_F32);
    yb32 = dt_forward(b, xf);
    yb = dt_cast(yb32, modes[k]);
    T_CHECK_MSG(ya && dt_dtype_of(ya) == modes[k] && same_bits(ya, yb), "%s: %s", dt_dtype_name(modes[k]), dt_last_error());
    fa = dt_cast(ya, DT_F32); fb = dt_cast(yb, DT_F32);
    sa = dt_mul(fa, fa); sb = dt_mul(fb, fb);
    la = dt_sum(sa); lb = dt_sum(sb);
    T_CHECK(la && lb && dt_autograd_backward(la, NULL) == DT_OK && dt_autograd_backward(lb, NULL) == DT_OK);
    for (i = 0; i < 2; i++) {
      T_CHECK(dt_dtype_of(dt_module_grad(a, i)) == DT_F32 && same_bits(dt_module_grad(a, i), dt_module_grad(b, i)));
      for (j = 0; j < 2; j++) {
        const char *nm = j ? "running_var" : "running_mean";
        T_CHECK_MSG(same_bits(dt_module_get_buffer(a, nm), dt_module_get_buffer(b, nm)), "%s %s", dt_dtype_name(modes[k]), nm);
      }
    }
    dt_release(x); dt_release(xh); dt_release(xf); dt_release(ya); dt_release(yb32); dt_release(yb);
    dt_release(fa); dt_release(fb); dt_release(sa); dt_release(sb); dt_release(la); dt_release(lb);
    dt_module_free(a); dt_module_free(b);
  }
}

/* A layer norm module (float32 parameters) on a half input under autocast: as torch.autocast's
   layer_norm, in float32 with a float32 result, so bit for bit the module on the input cast up;
   float32 gradients equal to that composition's. Without autocast the half input is refused. */
static void test_layer_norm_autocast(dt_device dev) {
  static const float xv[12] = {0.5f, -1.25f, 2.0f, 0.75f, -0.5f, 1.5f, 3.0f, -2.0f, 0.25f, 1.0f, -0.75f, 2.5f};
  dt_dtype modes[2] = {DT_BF16, DT_F16};
  int k, i;
  for (k = 0; k < 2; k++) {
    dt_tensor *x = dt_from_data(xv, dt_shape2(3, 4), DT_F32, dev), *xh = dt_cast(x, modes[k]), *xf = dt_cast(xh, DT_F32);
    dt_module *a = dt_layer_norm(4), *b = dt_layer_norm(4);
    dt_tensor *ya, *yb, *sa, *sb, *la, *lb;
    T_CHECK(dt_module_to(a, dev) == DT_OK && dt_module_to(b, dev) == DT_OK);
    T_CHECK(dt_forward(a, xh) == NULL && dt_last_status() == DT_ERR_DTYPE); /* autocast off: refused */
    dt_set_autocast(dev.type, modes[k]);
    ya = dt_forward(a, xh);
    dt_set_autocast(dev.type, DT_F32);
    yb = dt_forward(b, xf);
    T_CHECK_MSG(ya && dt_dtype_of(ya) == DT_F32 && same_bits(ya, yb), "%s: %s", dt_dtype_name(modes[k]), dt_last_error());
    sa = dt_mul(ya, ya); sb = dt_mul(yb, yb);
    la = dt_sum(sa); lb = dt_sum(sb);
    T_CHECK(la && lb && dt_autograd_backward(la, NULL) == DT_OK && dt_autograd_backward(lb, NULL) == DT_OK);
    for (i = 0; i < 2; i++) T_CHECK(dt_dtype_of(dt_module_grad(a, i)) == DT_F32 && same_bits(dt_module_grad(a, i), dt_module_grad(b, i)));
    dt_release(x); dt_release(xh); dt_release(xf); dt_release(ya); dt_release(yb);
    dt_release(sa); dt_release(sb); dt_release(la); dt_release(lb);
    dt_module_free(a); dt_module_free(b);
  }
}

int main(void) {
  T_RUN_ALL_DEVICES(test_lower_precision);
  T_RUN_ALL_DEVICES(test_master_grads);
  T_RUN_ALL_DEVICES(test_grad_scaler);
  T_RUN_ALL_DEVICES(test_trainer);
  T_RUN_ALL_DEVICES(test_batch_norm_autocast);
  T_RUN_ALL_DEVICES(test_layer_norm_autocast);
  return t_finish();
}
