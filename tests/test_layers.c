/* Autograd's second phase: optimizers on tensors, dt_clip_grad_norm_, the modules on top of
   autograd and the layers a user writes (DESIGN.md "Autograd"). */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"

static DT__UNUSED int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

static double *values(const dt_tensor *t) { /* float64 copy on the host; caller frees */
  dt_tensor *c = dt_cast(t, DT_F64), *h = c ? dt_to(c, dt_cpu()) : NULL;
  double *v = NULL;
  if (h && (v = (double *)malloc(sizeof(double) * (size_t)(dt_numel(h) ? dt_numel(h) : 1))) != NULL)
    memcpy(v, dt_data_ptr(h), sizeof(double) * (size_t)dt_numel(h));
  dt_release(c); dt_release(h);
  return v;
}
/* whether a and b hold the same bits (same dtype and size) */
static int same_bits(dt_tensor *a, dt_tensor *b) {
  dt_tensor *ha = dt_to(a, dt_cpu()), *hb = dt_to(b, dt_cpu());
  int r = ha && hb && dt_dtype_of(ha) == dt_dtype_of(hb) && dt_numel(ha) == dt_numel(hb) &&
          memcmp(dt_data_ptr(ha), dt_data_ptr(hb), (size_t)dt_numel(ha) * dt_dtype_size(dt_dtype_of(ha))) == 0;
  dt_release(ha); dt_release(hb);
  return r;
}
/* |a - b| <= tol elementwise */
static DT__UNUSED int close_all(const dt_tensor *a, const dt_tensor *b, double tol) {
  double *va = values(a), *vb = values(b);
  int64_t i, n = dt_numel(a);
  int r = va && vb && n == dt_numel(b);
  for (i = 0; r && i < n; i++) r = fabs(va[i] - vb[i]) <= tol * (1 + fabs(vb[i]));
  free(va); free(vb);
  return r;
}

/* Gives leaf p the gradient g, exactly: the backward of sum(p * g). */
static dt_status set_grad(dt_tensor *p, const dt_tensor *g) {
  dt_tensor *gd = dt_detach(g), *y = gd ? dt_mul(p, gd) : NULL, *l = y ? dt_sum(y) : NULL;
  dt_status s = l ? dt_autograd_backward(l, NULL) : dt_last_status();
  dt_release(gd); dt_release(y); dt_release(l);
  return s;
}

/* dt_sgd_tensors / dt_adam_tensors / dt_adamw_tensors step for step with the module forms on the
   same parameters and gradients: the same bits. */
static void test_optim_tensors(dt_device dev) {
  int kind, step, i;
  for (kind = 0; kind < 4; kind++) {
    dt_module *m = dt_linear(5, 3);
    dt_tensor *p[2] = {NULL, NULL}, *g[2] = {NULL, NULL};
    dt_optimizer *om = NULL, *ot = NULL;
    int prev;
    T_CHECK(m && dt_module_to(m, dev) == DT_OK);
    if (!m) return;
    prev = dt_set_grad_enabled(0);
    for (i = 0; i < 2; i++) {
      dt_tensor *mp = dt_module_param(m, i, NULL);
      p[i] = mp ? dt_copyto(mp, dev) : NULL;
      g[i] = mp ? dt_randn(dt_shape_of(mp), dev) : NULL;
      T_CHECK(p[i] && g[i] && dt_requires_grad_(p[i], 1) == DT_OK);
    }
    dt_set_grad_enabled(prev);
    switch (kind) {
      case 0: om = dt_sgd(m, 0.1, 0, 0); ot = dt_sgd_tensors(p, 2, 0.1, 0, 0); break;
      case 1: om = dt_sgd(m, 0.05, 0.9, 0.01); ot = dt_sgd_tensors(p, 2, 0.05, 0.9, 0.01); break;
      case 2: om = dt_adam(m, 0.01, 0.9, 0.999, 1e-8, 0.1); ot = dt_adam_tensors(p, 2, 0.01, 0.9, 0.999, 1e-8, 0.1); break;
      default: om = dt_adamw(m, 0.01, 0.8, 0.99, 1e-6, 0.1); ot = dt_adamw_tensors(p, 2, 0.01, 0.8, 0.99, 1e-6, 0.1); break;
    }
    T_CHECK(om && ot);
    for (step = 0; om && ot && step < 3; step++) {
      prev = dt_set_grad_enabled(0);
      for (i = 0; i < 2; i++) T_CHECK(dt_copy_(dt_module_grad(m, i), g[i]) == DT_OK);
      dt_set_grad_enabled(prev);
      T_CHECK(dt_optimizer_zero_grad(ot) == DT_OK && dt_grad(p[0]) == NULL);
      for (i = 0; i < 2; i++) T_CHECK(set_grad(p[i], g[i]) == DT_OK && same_bits(dt_grad(p[i]), g[i]));
      T_CHECK(dt_optimizer_step(om) == DT_OK && dt_optimizer_step(ot) == DT_OK);
      for (i = 0; i < 2; i++) T_CHECK_MSG(same_bits(dt_module_param(m, i, NULL), p[i]), "kind %d step %d param %d", kind, step, i);
    }
    /* a parameter without a gradient is skipped, as torch.optim does */
    if (ot) {
      double *before = values(p[1]), *after;
      T_CHECK(dt_zero_grad_(p[1]) == DT_OK && dt_optimizer_step(ot) == DT_OK);
      after = values(p[1]);
      T_CHECK(before && after && memcmp(before, after, sizeof(double) * 3) == 0);
      free(before); free(after);
    }
    dt_optimizer_free(om); dt_optimizer_free(ot);
    for (i = 0; i < 2; i++) { dt_release(p[i]); dt_release(g[i]); }
    dt_module_free(m);
  }
}

/* dt_clip_grad_norm_ against torch.nn.utils.clip_grad_norm_, its values held here, made once with
   /usr/bin/python3 and torch (float64):
     a = torch.tensor([[0.5,-1.25,2.0],[3.0,0.75,-0.5]], dtype=torch.float64, requires_grad=True)
     b = torch.tensor([1.5,-2.5], dtype=torch.float64, requires_grad=True)
     a.grad = a.detach().clone(); b.grad = b.detach().clone()
     t = torch.nn.utils.clip_grad_norm_([a, b], 2.0)   # then again with max_norm 100
   and by its mathematics in float32: the total is the 2-norm of every gradient together, the
   gradients scaled by max_norm / (total + 1e-6) when above it, left alone when below. */
static void test_clip_grad_norm(dt_device dev) {
  static const double av[6] = {0.5, -1.25, 2.0, 3.0, 0.75, -0.5}, bv[2] = {1.5, -2.5};
  static const double ca[6] = {0.20359459797294627, -0.5089864949323657, 0.8143783918917851,
                               1.2215675878376775, 0.3053918969594194, -0.20359459797294627};
  static const double cb[2] = {0.6107837939188387, -1.0179729898647314};
  dt_tensor *p[3], *ga, *gb;
  double total = -1, *v;
  int i;
  p[0] = dt_from_data(av, dt_shape2(2, 3), DT_F64, dev);
  p[1] = dt_from_data(bv, dt_shape1(2), DT_F64, dev);
  p[2] = dt_from_data(av, dt_shape1(4), DT_F64, dev); /* no gradient: skipped */
  T_CHECK(p[0] && p[1] && p[2]);
  if (!p[0] || !p[1] || !p[2]) return;
  for (i = 0; i < 3; i++) T_CHECK(dt_requires_grad_(p[i], 1) == DT_OK);
  T_CHECK(set_grad(p[0], p[0]) == DT_OK && set_grad(p[1], p[1]) == DT_OK);
  ga = dt_grad(p[0]); gb = dt_grad(p[1]);
  T_CHECK(dt_clip_grad_norm_(p, 3, 2.0, &total) == DT_OK);
  T_CLOSE(total, 4.911720676097125, 0, 1e-15);
  T_CHECK(dt_grad(p[0]) == ga && dt_grad(p[1]) == gb && dt_grad(p[2]) == NULL); /* in place */
  v = values(ga);
  for (i = 0; v && i < 6; i++) T_CLOSE(v[i], ca[i], 0, 1e-15);
  free(v);
  v = values(gb);
  for (i = 0; v && i < 2; i++) T_CLOSE(v[i], cb[i], 0, 1e-15);
  free(v);
  T_CHECK(dt_clip_grad_norm_(p, 3, 100.0, &total) == DT_OK); /* below: unchanged */
  T_CLOSE(total, 1.999999592810804, 0, 1e-15);
  v = values(gb);
  T_CHECK(v && v[0] == cb[0] && v[1] == cb[1]);
  free(v);
  for (i = 0; i < 3; i++) dt_release(p[i]);
  /* float32, by the mathematics: gradients (3, 4) and (0, 0, 12): total 13, scaled by 1/(13 + 1e-6) */
  {
    static const float x[2] = {3, 4}, y[3] = {0, 0, 12};
    dt_tensor *q[2];
    q[0] = dt_from_data(x, dt_shape1(2), DT_F32, dev);
    q[1] = dt_from_data(y, dt_shape1(3), DT_F32, dev);
    T_CHECK(q[0] && q[1] && dt_requires_grad_(q[0], 1) == DT_OK && dt_requires_grad_(q[1], 1) == DT_OK);
    T_CHECK(set_grad(q[0], q[0]) == DT_OK && set_grad(q[1], q[1]) == DT_OK);
    T_CHECK(dt_clip_grad_norm_(q, 2, 1.0, &total) == DT_OK);
    T_CHECK(total == 13.0);
    v = values(dt_grad(q[0]));
    T_CLOSE(v ? v[1] : 0, 4.0 / (13.0 + 1e-6), 0, 1e-7);
    free(v);
    v = values(dt_grad(q[1]));
    T_CLOSE(v ? v[2] : 0, 12.0 / (13.0 + 1e-6), 0, 1e-7);
    free(v);
    T_CHECK(dt_clip_grad_norm_(q, 2, 1.0, &total) == DT_OK);
    T_CLOSE(total, 1.0, 1e-6, 0); /* already clipped */
    T_CHECK(dt_clip_grad_norm_(q, 0, 1.0, &total) == DT_OK && total == 0); /* nothing to clip */
    dt_release(q[0]); dt_release(q[1]);
  }
}

/* The MLP 6 -> 8 -> ReLU -> 3 on dev with fixed parameters (the same on every device). */
static dt_module *mlp(dt_device dev) {
  dt_module *net = dt_sequential();
  int i, prev;
  dt_manual_seed(7);
  if (!net || dt_sequential_add(net, dt_linear(6, 8)) != DT_OK || dt_sequential_add(net, dt_relu_layer()) != DT_OK ||
      dt_sequential_add(net, dt_linear(8, 3)) != DT_OK || dt_module_to(net, dev) != DT_OK) {
    dt_module_free(net);
    return NULL;
  }
  prev = dt_set_grad_enabled(0);
  for (i = 0; i < 4; i++) { /* values drawn on the CPU, so every device gets the same */
    dt_tensor *p = dt_module_param(net, i, NULL), *r = p ? dt_randn(dt_shape_of(p), dt_cpu()) : NULL;
    if (!r || dt_copy_(p, r) != DT_OK) { dt_release(r); dt_set_grad_enabled(prev); dt_module_free(net); return NULL; }
    dt_release(r);
  }
  dt_set_grad_enabled(prev);
  return net;
}

/* The modules on top of autograd: their parameters are leaves that require grad, dt_forward
   records, and dt_autograd_backward(loss) fills the gradients dt_module_grad hands out: the same
   bits as dt_backward_params on the CPU (the same fused kernels), close on a GPU; a second backward
   accumulates; the optimizers step on them. */
static void test_module_autograd(dt_device dev) {
  dt_module *net = mlp(dev);
  dt_tensor *x = NULL, *y = NULL, *xc, *yc, *pred, *loss, *g, *ga[4] = {NULL, NULL, NULL, NULL};
  int i, k;
  T_CHECK(net != NULL);
  if (!net) return;
  dt_manual_seed(11);
  xc = dt_randn(dt_shape2(5, 6), dt_cpu()); yc = dt_randn(dt_shape2(5, 3), dt_cpu());
  x = xc ? dt_to(xc, dev) : NULL; y = yc ? dt_to(yc, dev) : NULL;
  dt_release(xc); dt_release(yc);
  T_CHECK(x && y);
  for (i = 0; i < 4; i++) {
    dt_tensor *p = dt_module_param(net, i, NULL);
    T_CHECK(p && dt_requires_grad(p) && dt_is_leaf(p));
  }
  /* autograd, on gradients zeroed and not yet handed out */
  T_CHECK(dt_zero_grad(net) == DT_OK);
  pred = dt_forward(net, x);
  T_CHECK(pred && dt_requires_grad(pred) && !dt_is_leaf(pred));
  loss = pred ? dt_mse_loss(pred, y) : NULL;
  T_CHECK(loss && dt_autograd_backward(loss, NULL) == DT_OK);
  dt_release(loss); dt_release(pred);
  for (i = 0; i < 4; i++) {
    dt_tensor *mg = dt_module_grad(net, i);
    T_CHECK(mg && dt_grad(dt_module_param(net, i, NULL)) == mg);
    ga[i] = mg ? dt_copyto(mg, dt_cpu()) : NULL;
  }
  /* the fused backward, on gradients handed out (zeros written) */
  T_CHECK(dt_zero_grad(net) == DT_OK);
  pred = dt_forward(net, x);
  g = pred ? dt_mse_loss_grad(pred, y) : NULL;
  T_CHECK(g && dt_backward_params(net, g) == DT_OK);
  for (i = 0; i < 4; i++) {
    dt_tensor *mg = dt_module_grad(net, i);
    if (dev.type == DT_CPU) T_CHECK_MSG(mg && ga[i] && same_bits(mg, ga[i]), "param %d", i);
    else T_CHECK_MSG(mg && ga[i] && close_all(mg, ga[i], 1e-5), "param %d", i);
  }
  dt_release(g); dt_release(pred);
  /* autograd again, without zeroing: added to what is there (twice the gradient) */
  for (k = 0; k < 1; k++) {
    pred = dt_forward(net, x);
    loss = pred ? dt_mse_loss(pred, y) : NULL;
    T_CHECK(loss && dt_autograd_backward(loss, NULL) == DT_OK);
    dt_release(loss); dt_release(pred);
  }
  for (i = 0; i < 4; i++) {
    dt_tensor *two = ga[i] ? dt_mul_scalar(ga[i], 2.0) : NULL;
    T_CHECK_MSG(two && close_all(dt_module_grad(net, i), two, 1e-6), "param %d, accumulated", i);
    dt_release(two);
  }
  /* an optimizer's step on them, then the loss is lower */
  {
    dt_optimizer *o = dt_sgd(net, 0.05, 0, 0);
    double before, after;
    pred = dt_forward(net, x); loss = pred ? dt_mse_loss(pred, y) : NULL;
    before = loss ? dt_item(loss) : 0;
    T_CHECK(o && dt_optimizer_zero_grad(o) == DT_OK && loss && dt_autograd_backward(loss, NULL) == DT_OK &&
            dt_optimizer_step(o) == DT_OK);
    dt_release(loss); dt_release(pred);
    pred = dt_forward(net, x); loss = pred ? dt_mse_loss(pred, y) : NULL;
    after = loss ? dt_item(loss) : 1e300;
    T_CHECK_MSG(after < before, "loss %g after the step, %g before", after, before);
    dt_release(loss); dt_release(pred);
    dt_optimizer_free(o);
  }
  for (i = 0; i < 4; i++) dt_release(ga[i]);
  dt_release(x); dt_release(y);
  dt_module_free(net);
}

/* Memory back where it was after forward, loss, autograd backward and releasing the results. */
static void test_module_memory(dt_device dev) {
  dt_module *net = mlp(dev);
  dt_tensor *x = dt_randn(dt_shape2(64, 6), dev), *y = dt_randn(dt_shape2(64, 3), dev), *pred, *loss;
  dt_memory_stats m0, m1;
  int k;
  T_CHECK(net && x && y);
  if (!net || !x || !y) { dt_module_free(net); dt_release(x); dt_release(y); return; }
  for (k = 0; k < 3; k++) {
    T_CHECK(dt_synchronize(dev) == DT_OK && dt_memory_stats_get(dev, &m0) == DT_OK);
    pred = dt_forward(net, x);
    loss = pred ? dt_mse_loss(pred, y) : NULL;
    T_CHECK(loss && dt_autograd_backward(loss, NULL) == DT_OK && dt_module_grad(net, 0) != NULL);
    dt_release(loss); dt_release(pred);
    T_CHECK(dt_synchronize(dev) == DT_OK && dt_memory_stats_get(dev, &m1) == DT_OK);
    /* the first round leaves the layers' saved inputs (dt_backward's): the later ones replace them */
    if (k > 0) T_CHECK_MSG(m1.allocated == m0.allocated, "round %d: allocated %llu after, %llu before", k,
                           (unsigned long long)m1.allocated, (unsigned long long)m0.allocated);
  }
  dt_module_free(net); dt_release(x); dt_release(y);
}

/* ---- a user-written network: Net(features = Sequential(Block), bias_out), Block(fc1, gain, fc2):
   Block(x) = fc2(tanh(fc1(x) * gain)), Net(x) = features(x) + bias_out ---- */
static int frees;
static void count_free(void *u) { (void)u; frees++; }
static dt_tensor *block_fwd(dt_module *self, const dt_tensor *x, void *user) {
  dt_tensor *h = dt_forward(dt_module_get_child(self, "fc1"), x), *hid2, *t, *y;
  (void)user;
  if (!h) return NULL;
  hid2 = dt_mul(h, dt_module_get_param(self, "gain"));
  dt_release(h);
  if (!hid2) return NULL;
  t = dt_tanh(hid2);
  dt_release(hid2);
  if (!t) return NULL;
  y = dt_forward(dt_module_get_child(self, "fc2"), t);
  dt_release(t);
  return y;
}
static dt_tensor *net_fwd(dt_module *self, const dt_tensor *x, void *user) {
  dt_tensor *y = dt_forward(dt_module_get_child(self, "features"), x), *z;
  (void)user;
  if (!y) return NULL;
  z = dt_add(y, dt_module_get_param(self, "bias_out"));
  dt_release(y);
  return z;
}
static dt_module *user_net(void) {
  dt_module *net = dt_module_new("Net", net_fwd, NULL, count_free), *block = dt_module_new("Block", block_fwd, NULL, count_free),
            *features = dt_sequential();
  dt_tensor *gain = dt_rand(dt_shape1(8), dt_cpu()), *bo = dt_zeros(dt_shape1(3), dt_cpu());
  int ok = net && block && features && gain && bo &&
           dt_module_add_child(block, "fc1", dt_linear(4, 8)) == DT_OK && dt_module_add_param(block, "gain", gain) == DT_OK &&
           dt_module_add_child(block, "fc2", dt_linear(8, 3)) == DT_OK && dt_sequential_add(features, block) == DT_OK;
  block = NULL;
  ok = ok && dt_module_add_param(net, "bias_out", bo) == DT_OK && dt_module_add_child(net, "features", features) == DT_OK;
  features = NULL;
  dt_release(gain); dt_release(bo);
  if (block) dt_module_free(block);
  if (features) dt_module_free(features);
  if (!ok) { dt_module_free(net); return NULL; }
  return net;
}

/* A user-written module: names nest as PyTorch's state_dict, it trains through autograd with an
   optimizer on the module, moves with dt_module_to, saves and loads. */
static void test_user_module(dt_device dev) {
  static const char *names[6] = {"bias_out", "features.0.gain", "features.0.fc1.weight", "features.0.fc1.bias",
                                 "features.0.fc2.weight", "features.0.fc2.bias"};
  dt_module *net, *other;
  dt_tensor *x, *y, *pred, *loss;
  dt_optimizer *o;
  double first = 0, last = 0;
  char path[64];
  int i, step;
  frees = 0;
  dt_manual_seed(3);
  net = user_net();
  T_CHECK(net != NULL);
  if (!net) return;
  T_CHECK(dt_module_num_params(net) == 6);
  for (i = 0; i < 6; i++) {
    const char *nm = NULL;
    dt_tensor *p = dt_module_param(net, i, &nm);
    T_STREQ(nm, names[i]);
    T_CHECK(p && dt_requires_grad(p) && dt_module_get_param(net, names[i]) == p);
  }
  T_CHECK(dt_module_get_child(dt_module_get_child(net, "features"), "fc1") == NULL); /* a sequential's layers have no names */
  T_CHECK(dt_module_get_param(net, "features.1.gain") == NULL && contains(dt_last_error(), "no parameter named"));
  T_CHECK(dt_module_to(net, dev) == DT_OK && dt_device_equal(dt_module_device(net), dev));
  T_CHECK(dt_module_train(net, 0) == DT_OK && !dt_module_is_training(dt_module_get_child(net, "features")));
  T_CHECK(dt_module_train(net, 1) == DT_OK && dt_module_is_training(net));
  x = dt_randn(dt_shape2(16, 4), dev); y = dt_randn(dt_shape2(16, 3), dev);
  o = dt_adam(net, 0.02, 0.9, 0.999, 1e-8, 0);
  T_CHECK(x && y && o);
  for (step = 0; x && y && o && step < 40; step++) {
    T_CHECK(dt_optimizer_zero_grad(o) == DT_OK);
    pred = dt_forward(net, x);
    loss = pred ? dt_mse_loss(pred, y) : NULL;
    T_CHECK_MSG(loss != NULL, "%s", dt_last_error());
    if (!loss) { dt_release(pred); break; }
    if (step == 0) first = dt_item(loss);
    last = dt_item(loss);
    T_CHECK(dt_autograd_backward(loss, NULL) == DT_OK && dt_optimizer_step(o) == DT_OK);
    dt_release(loss); dt_release(pred);
  }
  T_CHECK_MSG(last < 0.8 * first, "loss %g after 40 steps, %g at first", last, first);
  for (i = 0; i < 6; i++) T_CHECK(dt_module_grad(net, i) == dt_grad(dt_module_param(net, i, NULL)));
  /* the fused backward is not its way back: refused with a message */
  pred = dt_forward(net, x);
  {
    dt_tensor *g = pred ? dt_ones_like(pred) : NULL;
    T_CHECK(g && dt_backward_params(net, g) == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "dt_autograd_backward"));
    dt_release(g);
  }
  /* saved, loaded into another such network: the same parameters and outputs */
  snprintf(path, sizeof path, "/tmp/dt_test_layers_%d.safetensors", (int)dev.type * 10 + dev.index);
  T_CHECK(dt_module_save(net, path) == DT_OK);
  dt_manual_seed(99);
  other = user_net();
  T_CHECK(other && dt_module_to(other, dev) == DT_OK && dt_module_load(other, path) == DT_OK);
  for (i = 0; other && i < 6; i++) T_CHECK_MSG(same_bits(dt_module_param(net, i, NULL), dt_module_param(other, i, NULL)), "param %d", i);
  {
    dt_tensor *p2 = other ? dt_forward(other, x) : NULL;
    T_CHECK(pred && p2 && same_bits(pred, p2));
    dt_release(p2);
  }
  remove(path);
  dt_release(pred);
  dt_optimizer_free(o);
  dt_release(x); dt_release(y);
  dt_module_free(net);
  dt_module_free(other);
  T_CHECK(frees == 4); /* each module's free_user, once */
}

int main(void) {
  T_RUN_ALL_DEVICES(test_user_module);
  T_RUN_ALL_DEVICES(test_module_autograd);
  T_RUN_ALL_DEVICES(test_module_memory);
  T_RUN_ALL_DEVICES(test_optim_tensors);
  T_RUN_ALL_DEVICES(test_clip_grad_norm);
  return t_finish();
}
