/* Networks on devices: Linear, lazy Linear, ReLU, Sequential, gradients,
   training, the trainer, and safetensors save/load. */
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno: the trainer's progress lines are read back */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h> /* mkfifo */

/* The CUDA emulator (tests/emu, `make test-emu`) counts device-to-host copies;
   elsewhere this is NULL and the count is not checked. */
/* D2H_COPIES() and HAVE_D2H_COUNT: the emulator's count of device-to-host copies (tests/harness.h) */

static int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

static double *host_f64(const dt_tensor *t) {
  dt_tensor *c = dt_cast(t, DT_F64);
  double *v = (double *)malloc(dt_nbytes(c) + 8);
  dt_to_host(c, v, dt_nbytes(c) + 8);
  dt_release(c);
  return v;
}

static dt_module *mlp(int64_t in, int64_t hidden, int64_t out) {
  dt_module *net = dt_sequential();
  dt_sequential_add(net, dt_linear(in, hidden));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(hidden, out));
  return net;
}

static void test_linear_basics(dt_device dev) {
  dt_module *net = mlp(3, 4, 2), *l0;
  const char *name;
  dt_tensor *w, *b, *x, *y;
  double *vw, *vb, *vx, *vy;
  int i, j, k, bad = 0;
  T_CHECK(dt_module_num_params(net) == 4);
  dt_module_param(net, 0, &name); T_STREQ(name, "0.weight");
  dt_module_param(net, 1, &name); T_STREQ(name, "0.bias");
  dt_module_param(net, 2, &name); T_STREQ(name, "2.weight");
  dt_module_param(net, 3, &name); T_STREQ(name, "2.bias");
  T_CHECK(dt_module_device(net).type == DT_CPU); /* a new module lives on the CPU, as in PyTorch */
  T_CHECK(dt_module_to(net, dev) == DT_OK);
  T_CHECK(dt_device_equal(dt_module_device(net), dev));
  l0 = dt_sequential_get(net, 0);
  w = dt_linear_weight(l0); b = dt_linear_bias(l0);
  T_CHECK(dt_device_equal(dt_device_of(w), dev) && dt_device_equal(dt_device_of(dt_module_grad(net, 0)), dev));
  T_CHECK(dt_dim(w, 0) == 4 && dt_dim(w, 1) == 3 && dt_numel(b) == 4);
  vw = host_f64(w); vb = host_f64(b);
  for (i = 0; i < 12; i++) bad += fabs(vw[i]) > 1 / sqrt(3.0);
  for (i = 0; i < 4; i++) bad += fabs(vb[i]) > 1 / sqrt(3.0);
  T_CHECK(bad == 0);
  /* net[0](x) = x W^T + b */
  x = dt_randn(dt_shape2(5, 3), dev);
  y = dt_forward(l0, x);
  T_CHECK(y && dt_dim(y, 0) == 5 && dt_dim(y, 1) == 4 && dt_device_equal(dt_device_of(y), dev));
  vx = host_f64(x); vy = host_f64(y);
  for (i = 0; i < 5; i++)
    for (j = 0; j < 4; j++) {
      double r = vb[j];
      for (k = 0; k < 3; k++) r += vx[i * 3 + k] * vw[j * 3 + k];
      T_CLOSE(vy[i * 4 + j], r, 1e-5, 1e-5);
    }
  free(vw); free(vb); free(vx); free(vy);
  dt_release(y);
  y = dt_forward(net, x);
  T_CHECK(y && dt_dim(y, 1) == 2);
  dt_release(y);
  /* wrong input shape */
  {
    dt_tensor *bad_x = dt_ones(dt_shape2(5, 4), dev);
    T_CHECK(dt_forward(net, bad_x) == NULL && dt_last_status() == DT_ERR_SHAPE);
    dt_release(bad_x);
  }
  T_CHECK(dt_sequential_get(net, 3) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_sequential_get(net, -1) == dt_sequential_get(net, 2));
  dt_release(x);
  dt_module_free(net);
}

/* The chapter: net = nn.Sequential(nn.LazyLinear(1)); net.to(try_gpu()); net(X); net[0].weight.data.device */
static void test_lazy_linear(dt_device dev) {
  dt_module *net = dt_sequential();
  dt_tensor *X, *y;
  T_CHECK(dt_sequential_add(net, dt_linear(0, 1)) == DT_OK);
  T_CHECK(dt_module_num_params(net) == 2);
  T_CHECK(dt_module_param(net, 0, NULL) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_module_to(net, dev) == DT_OK);
  X = dt_ones(dt_shape2(2, 3), dev);
  y = dt_forward(net, X);
  T_CHECK(y && dt_dim(y, 0) == 2 && dt_dim(y, 1) == 1);
  T_CHECK(dt_linear_weight(dt_sequential_get(net, 0)) != NULL);
  T_CHECK(dt_device_equal(dt_device_of(dt_linear_weight(dt_sequential_get(net, 0))), dev));
  T_CHECK(dt_dim(dt_linear_weight(dt_sequential_get(net, 0)), 1) == 3);
  {
    /* both rows of ones give the same output, as in the chapter */
    double *v = host_f64(y);
    T_CHECK(v[0] == v[1]);
    free(v);
  }
  dt_release(X); dt_release(y);
  dt_module_free(net);
  /* a first input of 0 features: refused (its bias would be drawn within +-1/sqrt(0): NaN), the
     layer still lazy and sized by the next forward */
  net = dt_sequential();
  dt_sequential_add(net, dt_linear(0, 3));
  T_CHECK(dt_module_to(net, dev) == DT_OK);
  X = dt_zeros(dt_shape2(2, 0), dev);
  y = dt_forward(net, X);
  T_CHECK_MSG(y == NULL && dt_last_status() == DT_ERR_SHAPE, "%s", y ? "a forward of (2, 0) worked" : dt_last_error());
  T_STREQ(dt_last_error(), "dt_forward: layer 0 (linear, lazy -> 3) takes its in_features from its first input, but the network's "
                           "input has shape (2, 0): 0 features, nothing to weigh (the layer stays lazy)");
  T_CHECK(dt_linear_weight(dt_sequential_get(net, 0)) == NULL);
  dt_release(X); dt_release(y);
  X = dt_ones(dt_shape2(2, 4), dev);
  y = dt_forward(net, X);
  T_CHECK_MSG(y && dt_dim(y, 1) == 3 && dt_dim(dt_linear_weight(dt_sequential_get(net, 0)), 1) == 4, "%s", dt_last_error());
  dt_release(X); dt_release(y);
  dt_module_free(net);
}

static void test_module_devices(dt_device dev) {
  dt_module *net = mlp(3, 4, 2), *other = dt_linear(2, 2);
  dt_tensor *x = dt_ones(dt_shape2(1, 3), dt_cpu());
  char msg[200];
  T_CHECK(dt_module_to(net, dt_gpu(dt_num_gpus())) == DT_ERR_NO_DEVICE);
  T_CHECK(dt_module_device(net).type == DT_CPU); /* unchanged */
  if (dev.type == DT_CPU) {
    dt_module_free(net); dt_module_free(other); dt_release(x);
    T_SKIP("needs a GPU");
  }
  T_CHECK(dt_module_to(net, dev) == DT_OK);
  T_CHECK(dt_forward(net, x) == NULL && dt_last_status() == DT_ERR_DEVICE_MISMATCH);
  snprintf(msg, sizeof msg, "dt_forward: x is on cpu but 0.weight is on cuda:%d", dev.index);
  T_CHECK_MSG(contains(dt_last_error(), msg), "%s", dt_last_error());
  /* a module with parameters on two devices cannot be made */
  T_CHECK(dt_sequential_add(net, other) == DT_ERR_DEVICE_MISMATCH);
  T_CHECK(dt_module_to(net, dt_cpu()) == DT_OK);
  T_CHECK(dt_device_of(dt_module_param(net, 3, NULL)).type == DT_CPU);
  T_CHECK(dt_device_of(dt_module_grad(net, 3)).type == DT_CPU);
  dt_release(x);
  dt_module_free(net);
}

/* A layer borrowed with dt_sequential_get cannot leave its sequential's
   device or dtype (that would make a module with parameters on two devices). */
static void test_borrowed_layer(dt_device dev) {
  dt_module *net = mlp(3, 4, 2), *l0;
  dt_tensor *x, *y;
  T_CHECK(dt_module_to(net, dev) == DT_OK);
  l0 = dt_sequential_get(net, 0);
  T_CHECK(dt_module_to_dtype(l0, DT_F64) == DT_ERR_INVALID_ARGUMENT && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK_MSG(contains(dt_last_error(), "dt_module_to_dtype: m is a layer of a sequential") &&
                  contains(dt_last_error(), "move the sequential"), "%s", dt_last_error());
  T_CHECK(dt_dtype_of(dt_linear_weight(l0)) == DT_F32);
  /* where it already is: nothing to do, and allowed */
  T_CHECK(dt_module_to_dtype(l0, DT_F32) == DT_OK);
  T_CHECK(dt_module_to(l0, dev) == DT_OK);
  T_CHECK(dt_module_to(l0, dev.type == DT_CPU ? dt_gpu(0) : dt_cpu()) ==
          (dev.type == DT_CPU && dt_num_gpus() == 0 ? DT_ERR_NO_DEVICE : DT_ERR_INVALID_ARGUMENT));
  T_CHECK(dt_device_equal(dt_device_of(dt_linear_weight(l0)), dev));
  /* the sequential still works, and moves as a whole */
  x = dt_ones(dt_shape2(2, 3), dev);
  y = dt_forward(net, x);
  T_CHECK_MSG(y != NULL, "%s", dt_last_error());
  T_CHECK(dt_module_to_dtype(net, DT_F64) == DT_OK && dt_dtype_of(dt_linear_weight(l0)) == DT_F64);
  dt_release(x); dt_release(y);
  dt_module_free(net);
}

/* dt_trainer_init keeps min(num_gpus, dt_num_gpus()) GPUs, cuda:0 first. */
static void test_trainer_gpus(void) {
  dt_trainer tr;
  int i, have = dt_num_gpus(), want = have < 3 ? have : 3;
  T_CHECK(dt_trainer_init(&tr, 2, 3) == DT_OK);
  T_CHECK_MSG(tr.num_gpus == want, "asked for 3 of %d GPUs, kept %d", have, tr.num_gpus);
  for (i = 0; i < want; i++) T_CHECK(dt_device_equal(tr.gpus[i], dt_gpu(i)));
  T_CHECK(dt_device_equal(tr.device, want ? dt_gpu(0) : dt_cpu()));
  dt_trainer_free(&tr);
  T_CHECK(dt_trainer_init(&tr, 2, 0) == DT_OK && tr.num_gpus == 0 && tr.device.type == DT_CPU);
  dt_trainer_free(&tr);
  T_CHECK(dt_trainer_init(&tr, 2, -1) == DT_ERR_INVALID_ARGUMENT);
}

/* X and y on two devices: refused, like every operation (no silent copy). */
static void test_trainer_devices(dt_device dev) {
  dt_module *net = dt_linear(3, 2);
  dt_tensor *X = dt_ones(dt_shape2(4, 3), dev), *y = dt_ones(dt_shape2(4, 2), dt_cpu());
  dt_trainer tr;
  char want[160];
  if (dev.type == DT_CPU) { dt_module_free(net); dt_release(X); dt_release(y); T_SKIP("needs a GPU"); }
  dt_trainer_init(&tr, 1, 1);
  tr.quiet = 1;
  T_CHECK(dt_trainer_fit(&tr, net, X, y) == DT_ERR_DEVICE_MISMATCH);
  snprintf(want, sizeof want, "dt_trainer_fit: expected all tensors on the same device, but y is on cpu and X is on cuda:%d", dev.index);
  T_CHECK_MSG(contains(dt_last_error(), want), "%s", dt_last_error());
  T_CHECK(tr.epochs_run == 0);
  dt_trainer_free(&tr);
  dt_module_free(net); dt_release(X); dt_release(y);
}

/* One epoch of batch-1 SGD from fixed parameters, the shuffle seeded with
   `seed` (seed 0: no trainer, rows in order); the final parameters. */
static void sgd_epoch(dt_device dev, uint64_t seed, double out[3]) {
  static const float xs[16] = {1, 0, 0, 1, 1, 1, 2, -1, -1, 2, 0.5f, 0.5f, 3, 1, -2, -1};
  static const float ys[8] = {1, -1, 0.5f, 2, 0, 1, -3, 0.25f};
  dt_module *net = dt_linear(2, 1);
  dt_tensor *X = dt_from_data(xs, dt_shape2(8, 2), DT_F32, dt_cpu());
  dt_tensor *y = dt_from_data(ys, dt_shape2(8, 1), DT_F32, dt_cpu());
  double *w, *b;
  dt_module_to(net, dev);
  { /* parameters require grad: set with grad mode off, as under torch.no_grad() */
    int prev = dt_set_grad_enabled(0);
    dt_fill_(dt_linear_weight(net), 0.25);
    dt_fill_(dt_module_param(net, 1, NULL), -0.5);
    dt_set_grad_enabled(prev);
  }
  if (seed) {
    dt_trainer tr;
    dt_trainer_init(&tr, 1, dev.type == DT_CUDA ? 1 : 0);
    tr.batch_size = 1; tr.lr = 0.05; tr.quiet = 1;
    dt_manual_seed(seed);
    T_CHECK_MSG(dt_trainer_fit(&tr, net, X, y) == DT_OK, "%s", dt_last_error());
    dt_trainer_free(&tr);
  } else {
    int64_t r;
    for (r = 0; r < 8; r++) {
      dt_tensor *xr = dt_from_data(xs + 2 * r, dt_shape2(1, 2), DT_F32, dev);
      dt_tensor *yr = dt_from_data(ys + r, dt_shape2(1, 1), DT_F32, dev);
      dt_tensor *p = dt_forward(net, xr), *g = dt_mse_loss_grad(p, yr);
      dt_zero_grad(net);
      T_CHECK(dt_backward_params(net, g) == DT_OK && dt_sgd_step(net, 0.05) == DT_OK);
      dt_release(xr); dt_release(yr); dt_release(p); dt_release(g);
    }
  }
  w = host_f64(dt_linear_weight(net));
  b = host_f64(dt_module_param(net, 1, NULL));
  out[0] = w[0]; out[1] = w[1]; out[2] = b[0];
  free(w); free(b);
  dt_release(X); dt_release(y);
  dt_module_free(net);
}

/* The trainer's shuffle comes from the seeded generator: the same seed gives
   the same order (the same parameters, bit for bit), another seed another
   order, and neither is the data's own order. */
static void test_trainer_shuffle(dt_device dev) {
  double a[3], a2[3], c[3], plain[3];
  if (dev.type == DT_CUDA && dev.index != 0) T_SKIP("the trainer uses cuda:0");
  sgd_epoch(dev, 7, a);
  sgd_epoch(dev, 7, a2);
  sgd_epoch(dev, 8, c);
  sgd_epoch(dev, 0, plain);
  T_CHECK_MSG(memcmp(a, a2, sizeof a) == 0, "same seed: %.9g %.9g %.9g vs %.9g %.9g %.9g", a[0], a[1], a[2], a2[0], a2[1], a2[2]);
  T_CHECK_MSG(memcmp(a, c, sizeof a) != 0, "seeds 7 and 8 gave the same parameters");
  T_CHECK_MSG(memcmp(a, plain, sizeof a) != 0 && memcmp(c, plain, sizeof c) != 0, "a shuffled epoch equals the in-order one");
  dt_manual_seed(0);
}

/* One progress line per epoch unless quiet, and (where the emulator counts
   them) exactly one device-to-host read per epoch: the loss, never per step. */
static void test_trainer_output(dt_device dev) {
  dt_module *net = mlp(2, 8, 1);
  dt_tensor *X = dt_randn(dt_shape2(40, 2), dt_cpu()), *y = dt_randn(dt_shape2(40, 1), dt_cpu());
  dt_trainer tr;
  char line[256], want[64], dn[48];
  int quiet, nlines;
  if (dev.type == DT_CUDA && dev.index != 0) { dt_module_free(net); dt_release(X); dt_release(y); T_SKIP("the trainer uses cuda:0"); }
  for (quiet = 0; quiet < 2; quiet++) {
    FILE *f = tmpfile();
    int saved;
    unsigned long long d2h;
    dt_status s;
    T_CHECK(f != NULL);
    if (!f) break;
    dt_trainer_init(&tr, 3, dev.type == DT_CUDA ? 1 : 0);
    tr.batch_size = 4; tr.quiet = quiet;
    T_CHECK(dt_trainer_prepare_model(&tr, net) == DT_OK);
    fflush(stdout);
    saved = dup(1);
    T_CHECK(saved >= 0);
    if (saved < 0 || dup2(fileno(f), 1) < 0) { /* cannot capture stdout: leave it alone */
      if (saved >= 0) close(saved);
      fclose(f);
      dt_trainer_free(&tr);
      break;
    }
    d2h = D2H_COPIES();
    s = dt_trainer_fit(&tr, net, X, y);
    d2h = D2H_COPIES() - d2h;
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    T_CHECK_MSG(s == DT_OK, "%s", dt_last_error());
    if (HAVE_D2H_COUNT && dev.type == DT_CUDA)
      T_CHECK_MSG(d2h == 3, "%llu device-to-host copies in 3 epochs of 10 steps (want 3: the loss, once an epoch)", d2h);
    rewind(f);
    nlines = 0;
    while (fgets(line, sizeof line, f)) {
      nlines++;
      snprintf(want, sizeof want, "epoch %d/3, loss ", nlines);
      T_CHECK_MSG(strncmp(line, want, strlen(want)) == 0, "line %d: %s", nlines, line);
      snprintf(want, sizeof want, ", on %s\n", dt_device_str(tr.device, dn, sizeof dn));
      T_CHECK_MSG(strlen(line) > strlen(want) && strcmp(line + strlen(line) - strlen(want), want) == 0, "line %d: %s", nlines, line);
    }
    T_CHECK_MSG(nlines == (quiet ? 0 : 3), "quiet %d: %d lines", quiet, nlines);
    T_CHECK(tr.epochs_run == 3 && tr.last_loss == tr.epoch_loss[2]);
    fclose(f);
    dt_trainer_free(&tr);
  }
  dt_module_free(net);
  dt_release(X); dt_release(y);
}

/* Loss of net(x) against t, in double on the host. */
static double loss_of(dt_module *net, dt_tensor *x, dt_tensor *t) {
  dt_tensor *y = dt_forward(net, x), *l = dt_mse_loss(y, t);
  double v = dt_item(l);
  dt_release(y); dt_release(l);
  return v;
}

/* Central differences in F64 for every parameter and the input. */
static void test_gradient_check(dt_device dev) {
  dt_module *net = mlp(3, 5, 2);
  dt_tensor *x, *t, *y, *g, *gx, *x32, *t32;
  int p, np, bad = 0;
  int64_t i;
  double h = 1e-6;
  dt_manual_seed(5);
  T_CHECK(dt_module_to_dtype(net, DT_F64) == DT_OK && dt_module_to(net, dev) == DT_OK);
  x32 = dt_randn(dt_shape2(4, 3), dev); t32 = dt_randn(dt_shape2(4, 2), dev);
  x = dt_cast(x32, DT_F64); t = dt_cast(t32, DT_F64);
  dt_release(x32); dt_release(t32);
  T_CHECK(dt_zero_grad(net) == DT_OK);
  y = dt_forward(net, x);
  g = dt_mse_loss_grad(y, t);
  gx = dt_backward(net, g);
  T_CHECK(gx && dt_dim(gx, 0) == 4 && dt_dim(gx, 1) == 3);
  np = dt_module_num_params(net);
  for (p = 0; p <= np; p++) {
    dt_tensor *w = p < np ? dt_module_param(net, p, NULL) : x;
    double *wv = host_f64(w), *an = p < np ? host_f64(dt_module_grad(net, p)) : host_f64(gx);
    for (i = 0; i < dt_numel(w); i++) {
      double keep = wv[i], lp, lm, num;
      wv[i] = keep + h;
      { /* parameters require grad: nudged with grad mode off, as under torch.no_grad() */
        int prev = dt_set_grad_enabled(0);
        dt_tensor *tmp = dt_from_data(wv, dt_shape_of(w), DT_F64, dt_cpu());
        dt_copy_(w, tmp); dt_release(tmp);
        lp = loss_of(net, x, t);
        wv[i] = keep - h;
        tmp = dt_from_data(wv, dt_shape_of(w), DT_F64, dt_cpu());
        dt_copy_(w, tmp); dt_release(tmp);
        lm = loss_of(net, x, t);
        wv[i] = keep;
        tmp = dt_from_data(wv, dt_shape_of(w), DT_F64, dt_cpu());
        dt_copy_(w, tmp); dt_release(tmp);
        dt_set_grad_enabled(prev);
      }
      num = (lp - lm) / (2 * h);
      if (fabs(num - an[i]) > 1e-6 * (1 + fabs(num))) {
        bad++;
        printf("  param %d element %lld: numeric %.10g, backward %.10g\n", p, (long long)i, num, an[i]);
      }
    }
    free(wv); free(an);
  }
  T_CHECK(bad == 0);
  /* grads accumulate until zeroed */
  {
    double *g1 = host_f64(dt_module_grad(net, 0)), *g2;
    dt_tensor *y2 = dt_forward(net, x), *gg = dt_mse_loss_grad(y2, t), *gx2 = dt_backward(net, gg);
    g2 = host_f64(dt_module_grad(net, 0));
    T_CLOSE(g2[0], 2 * g1[0], 1e-12, 1e-9);
    T_CHECK(dt_zero_grad(net) == DT_OK);
    free(g2); g2 = host_f64(dt_module_grad(net, 0));
    T_CHECK(g2[0] == 0);
    free(g1); free(g2);
    dt_release(y2); dt_release(gg); dt_release(gx2);
  }
  dt_release(x); dt_release(t); dt_release(y); dt_release(g); dt_release(gx);
  dt_module_free(net);
}

static void test_backward_errors(void) {
  dt_module *net = mlp(3, 4, 2);
  dt_tensor *g = dt_ones(dt_shape2(1, 2), dt_cpu()), *x = dt_ones(dt_shape2(1, 3), dt_cpu()), *y;
  T_CHECK(dt_backward(net, g) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  y = dt_forward(net, x);
  T_CHECK(dt_backward(net, x) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_mse_loss(y, x) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_sgd_step(net, NAN) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_linear(-1, 2) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_linear(2, 0) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_sequential_add(NULL, dt_relu_layer()) == DT_ERR_INVALID_ARGUMENT);
  dt_clear_error();
  T_CHECK(dt_sequential_add(net, NULL) == DT_ERR_INVALID_ARGUMENT);
  /* a failed constructor's reason survives the add */
  T_CHECK(dt_sequential_add(net, dt_linear(-2, 1)) == DT_ERR_SHAPE);
  T_CHECK(strstr(dt_last_error(), "dt_sequential_add: layer is NULL, after dt_linear: expected in_features") != NULL);
  dt_release(g); dt_release(x); dt_release(y);
  dt_module_free(net);
}

/* Every parameter (grads 0) or parameter gradient (grads 1) of net, in order, as doubles on the
   host; *n set to the total count. */
static double *all_values(dt_module *net, int grads, int64_t *n) {
  int p, np = dt_module_num_params(net);
  int64_t total = 0, at = 0;
  double *v;
  for (p = 0; p < np; p++) {
    const int64_t k = dt_numel(grads ? dt_module_grad(net, p) : dt_module_param(net, p, NULL));
    if (k > 0) total += k;
  }
  v = (double *)malloc(sizeof(double) * (size_t)(total + 1));
  for (p = 0; p < np; p++) {
    const dt_tensor *t = grads ? dt_module_grad(net, p) : dt_module_param(net, p, NULL);
    const int64_t k = dt_numel(t);
    double *h;
    if (k <= 0) continue;
    h = host_f64(t);
    memcpy(v + at, h, sizeof(double) * (size_t)k);
    at += k;
    free(h);
  }
  *n = total;
  return v;
}

/* The gradients from a zero_grad, then `times` rounds of forward and dt_backward (params 0) or dt_backward_params (1). */
static double *grads_after(dt_module *net, const dt_tensor *x, const dt_tensor *t, int params, int times, int64_t *n) {
  int r;
  T_CHECK(dt_zero_grad(net) == DT_OK);
  for (r = 0; r < times; r++) {
    dt_tensor *y = dt_forward(net, x), *g = dt_mse_loss_grad(y, t);
    T_CHECK(y && g);
    if (params) {
      T_CHECK_MSG(dt_backward_params(net, g) == DT_OK, "%s", dt_last_error());
    } else {
      dt_tensor *gx = dt_backward(net, g);
      T_CHECK_MSG(gx != NULL, "%s", dt_last_error());
      dt_release(gx);
    }
    dt_release(y); dt_release(g);
  }
  return all_values(net, 1, n);
}

/* dt_backward_params gives dt_backward's parameter gradients, bit for bit on the CPU. */
static void test_backward_params(dt_device dev) {
  dt_module *nets[5], *inner;
  int64_t ins[5] = {3, 3, 3, 3, 3}, outs[5] = {2, 4, 2, 2, 3};
  int c;
  dt_manual_seed(21);
  nets[0] = mlp(3, 5, 2);                                       /* Linear, ReLU, Linear */
  nets[1] = dt_linear(3, 4);                                    /* a bare Linear */
  nets[2] = dt_sequential();                                    /* ReLU first: nothing in front of the Linear */
  dt_sequential_add(nets[2], dt_relu_layer());
  dt_sequential_add(nets[2], dt_linear(3, 2));
  nets[3] = dt_sequential();                                    /* ReLU, Sequential(Linear, ReLU, Linear), ReLU */
  inner = mlp(3, 4, 2);
  dt_sequential_add(nets[3], dt_relu_layer());
  dt_sequential_add(nets[3], inner);
  dt_sequential_add(nets[3], dt_relu_layer());
  nets[4] = dt_sequential();                                    /* lazy, then sized by the first forward */
  dt_sequential_add(nets[4], dt_linear(0, 3));
  for (c = 0; c < 5; c++) {
    dt_tensor *x = dt_randn(dt_shape2(6, ins[c]), dev), *t = dt_randn(dt_shape2(6, outs[c]), dev);
    double *a, *b;
    int64_t na, nb;
    T_CHECK(dt_module_to(nets[c], dev) == DT_OK);
    a = grads_after(nets[c], x, t, 0, 2, &na);                  /* accumulated over two rounds */
    b = grads_after(nets[c], x, t, 1, 2, &nb);
    T_CHECK_MSG(na == nb && na > 0, "case %d: %lld and %lld gradients", c, (long long)na, (long long)nb);
    if (na == nb) {
      if (dev.type == DT_CPU) {
        T_CHECK_MSG(memcmp(a, b, sizeof(double) * (size_t)na) == 0, "case %d: the gradients differ", c);
      } else {
        int64_t i;
        for (i = 0; i < na; i++) T_CLOSE(b[i], a[i], 1e-6, 1e-5);
      }
    }
    free(a); free(b);
    dt_release(x); dt_release(t);
    dt_module_free(nets[c]);
  }
}

/* a == b element by element: equal values on the CPU (a zero's sign aside: a gradient that dt_zero_grad
   left unwritten is assigned, where zeros that were written get added to, and -0 + 0 is +0), close on a GPU */
static void same_values(dt_device dev, const double *a, int64_t na, const double *b, int64_t nb, const char *what) {
  int64_t i, bad = 0;
  T_CHECK_MSG(na == nb && na > 0, "%s: %lld and %lld values", what, (long long)na, (long long)nb);
  if (na != nb) return;
  for (i = 0; i < na; i++) {
    if (dev.type == DT_CPU) bad += !(a[i] == b[i]);
    else T_CLOSE(b[i], a[i], 1e-6, 1e-5);
  }
  T_CHECK_MSG(bad == 0, "%s: %lld of %lld values differ", what, (long long)bad, (long long)na);
}

/* dt_zero_grad leaves a layer's gradients unwritten while nothing outside the layer holds them (the
   next backward writes them instead of adding to zeros): training that way gives what training with
   the gradients handed out (so zeroed at once) gives, step by step, with two backward passes after
   one dt_zero_grad (the second adds), a step with no backward (zeros: the weights stay), and
   dt_backward as well as dt_backward_params; a gradient asked for after dt_zero_grad reads zeros. */
static void test_zero_grad_deferred(dt_device dev) {
  dt_module *a, *b, *c;
  dt_tensor *x, *t, *held;
  double *va, *vb, *g;
  int64_t na, nb, i;
  int step, r;
  dt_manual_seed(33);
  a = mlp(7, 16, 3);
  dt_manual_seed(33);
  b = mlp(7, 16, 3);
  x = dt_randn(dt_shape2(32, 7), dev);
  t = dt_randn(dt_shape2(32, 3), dev);
  T_CHECK(x && t && dt_module_to(a, dev) == DT_OK && dt_module_to(b, dev) == DT_OK);
  held = dt_module_grad(b, 0); /* b's gradients are handed out: dt_zero_grad writes its zeros at once */
  T_CHECK(held != NULL);
  for (step = 0; step < 5; step++) {
    dt_module *nets[2];
    int k;
    nets[0] = a; nets[1] = b;
    T_CHECK(dt_zero_grad(a) == DT_OK && dt_zero_grad(b) == DT_OK);
    g = host_f64(held);
    for (i = 0, r = 0; i < dt_numel(held); i++) r += g[i] != 0;
    T_CHECK_MSG(r == 0, "step %d: %d of the held gradient's values are not zero after dt_zero_grad", step, r);
    free(g);
    for (k = 0; k < 2; k++)
      for (r = 0; r < (step == 2 ? 2 : step == 4 ? 0 : 1); r++) { /* step 2: two passes; step 4: none */
        dt_tensor *y = dt_forward(nets[k], x), *gy = y ? dt_mse_loss_grad(y, t) : NULL;
        T_CHECK(y && gy);
        if (step == 3) {
          dt_tensor *gx = dt_backward(nets[k], gy);
          T_CHECK_MSG(gx != NULL, "%s", dt_last_error());
          dt_release(gx);
        } else
          T_CHECK_MSG(dt_backward_params(nets[k], gy) == DT_OK, "%s", dt_last_error());
        dt_release(y); dt_release(gy);
      }
    T_CHECK(dt_sgd_step(a, 0.05) == DT_OK && dt_sgd_step(b, 0.05) == DT_OK);
  }
  va = all_values(a, 0, &na); vb = all_values(b, 0, &nb);
  same_values(dev, va, na, vb, nb, "the weights after five steps");
  free(va); free(vb);
  /* one more backward after dt_zero_grad: the gradients written (a) and added to zeros (b) */
  T_CHECK(dt_zero_grad(a) == DT_OK && dt_zero_grad(b) == DT_OK);
  for (r = 0; r < 2; r++) {
    dt_tensor *y = dt_forward(r ? b : a, x), *gy = y ? dt_mse_loss_grad(y, t) : NULL;
    T_CHECK(y && gy && dt_backward_params(r ? b : a, gy) == DT_OK);
    dt_release(y); dt_release(gy);
  }
  va = all_values(a, 1, &na); vb = all_values(b, 1, &nb);
  same_values(dev, va, na, vb, nb, "the gradients");
  for (i = 0, r = 0; i < na; i++) r += va[i] != 0;
  T_CHECK_MSG(r > na / 2, "only %d of %lld gradients are not zero", r, (long long)na);
  free(va); free(vb);
  /* gradients left unwritten by dt_zero_grad, then asked for: zeros */
  dt_manual_seed(34);
  c = mlp(5, 4, 2);
  T_CHECK(dt_module_to(c, dev) == DT_OK);
  {
    dt_tensor *x2 = dt_randn(dt_shape2(6, 5), dev), *t2 = dt_randn(dt_shape2(6, 2), dev);
    dt_tensor *y = dt_forward(c, x2), *gy = y ? dt_mse_loss_grad(y, t2) : NULL;
    T_CHECK(gy && dt_backward_params(c, gy) == DT_OK && dt_zero_grad(c) == DT_OK);
    va = all_values(c, 1, &na);
    for (i = 0, r = 0; i < na; i++) r += va[i] != 0;
    T_CHECK_MSG(na > 0 && r == 0, "%d of %lld gradients are not zero after dt_zero_grad", r, (long long)na);
    free(va);
    dt_release(x2); dt_release(t2); dt_release(y); dt_release(gy);
  }
  dt_release(x); dt_release(t);
  dt_module_free(a); dt_module_free(b); dt_module_free(c);
}

/* dt_backward_params makes no (n, in) input gradient: the peak of live bytes does not grow by one. */
static void test_backward_params_memory(dt_device dev) {
  dt_module *net = mlp(1000, 4, 1);
  dt_tensor *x = dt_randn(dt_shape2(500, 1000), dev), *t = dt_randn(dt_shape2(500, 1), dev), *y, *g, *gx;
  dt_memory_stats before, after;
  T_CHECK(dt_module_to(net, dev) == DT_OK);
  y = dt_forward(net, x);
  g = dt_mse_loss_grad(y, t);
  T_CHECK(dt_synchronize(dev) == DT_OK && dt_memory_stats_get(dev, &before) == DT_OK);
  T_CHECK(dt_backward_params(net, g) == DT_OK);
  T_CHECK(dt_synchronize(dev) == DT_OK && dt_memory_stats_get(dev, &after) == DT_OK);
  T_CHECK_MSG(after.peak_allocated < before.peak_allocated + dt_nbytes(x) / 2, "peak %zu -> %zu", before.peak_allocated, after.peak_allocated);
  /* dt_backward does make one */
  gx = dt_backward(net, g);
  T_CHECK(gx && dt_memory_stats_get(dev, &after) == DT_OK && after.peak_allocated >= before.peak_allocated + dt_nbytes(x));
  dt_release(x); dt_release(t); dt_release(y); dt_release(g); dt_release(gx);
  dt_module_free(net);
}

/* dt_backward_params fails where dt_backward fails, the same way, with its own name. */
static void test_backward_params_errors(void) {
  dt_module *net = mlp(3, 4, 2), *relu = dt_relu_layer(), *rnet = dt_sequential();
  dt_tensor *g = dt_ones(dt_shape2(1, 2), dt_cpu()), *x = dt_ones(dt_shape2(1, 3), dt_cpu()), *x2 = dt_ones(dt_shape2(2, 3), dt_cpu());
  dt_tensor *gd = dt_cast(g, DT_F64), *y, *y0, *yr, *gr;
  dt_status s;
  s = dt_backward_params(NULL, g);
  T_CHECK(s == DT_ERR_INVALID_ARGUMENT && dt_last_status() == s && strcmp(dt_last_error(), "dt_backward_params: m is NULL") == 0);
  s = dt_backward_params(net, NULL);
  T_CHECK(s == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_backward_params: grad_output is NULL"));
  s = dt_backward_params(net, g);                               /* no forward yet */
  T_CHECK(s == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_backward_params: no forward to go back through"));
  T_CHECK(dt_backward(net, g) == NULL && dt_last_status() == s);
  T_CHECK(dt_backward_params(relu, g) == DT_ERR_INVALID_ARGUMENT);
  y = dt_forward(net, x);
  T_CHECK(dt_backward_params(net, x) == DT_ERR_SHAPE && contains(dt_last_error(), "dt_backward_params: grad_output has shape (1, 3)"));
  T_CHECK(dt_backward_params(net, gd) == DT_ERR_DTYPE && contains(dt_last_error(), "float64"));
  T_CHECK(dt_backward_params(net, g) == DT_OK);
  /* a layer run on its own since the network's forward breaks the chain, as for dt_backward */
  y0 = dt_forward(dt_sequential_get(net, 0), x2);
  T_CHECK(dt_backward(net, g) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_backward_params(net, g) == DT_ERR_SHAPE && strncmp(dt_last_error(), "dt_backward_params: ", 20) == 0);
  /* also in front of the first layer with parameters, where nothing is computed */
  dt_sequential_add(rnet, dt_relu_layer());
  dt_sequential_add(rnet, dt_linear(3, 2));
  yr = dt_forward(rnet, x);
  T_CHECK(dt_backward_params(rnet, g) == DT_OK);
  gr = dt_forward(dt_sequential_get(rnet, 0), x2);
  T_CHECK(dt_backward(rnet, g) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_backward_params(rnet, g) == DT_ERR_SHAPE);
  dt_release(gr); gr = NULL;
  dt_release(yr);
  yr = dt_forward(rnet, x);
  T_CHECK(dt_backward_params(rnet, g) == DT_OK);
  /* a ReLU alone has no parameters: nothing to do, after its checks */
  gr = dt_forward(relu, x);
  T_CHECK(dt_backward_params(relu, x) == DT_OK);
  T_CHECK(dt_backward_params(relu, g) == DT_ERR_SHAPE);
  dt_release(g); dt_release(gd); dt_release(x); dt_release(x2); dt_release(y); dt_release(y0); dt_release(yr); dt_release(gr);
  dt_module_free(net); dt_module_free(relu); dt_module_free(rnet);
}

/* The book's synthetic data: y = X w + b + noise, w = [2, -3.4], b = 4.2. */
static void synthetic(dt_tensor **X, dt_tensor **y, int64_t n) {
  float w[2] = {2.0f, -3.4f};
  dt_tensor *wt = dt_from_data(w, dt_shape2(2, 1), DT_F32, dt_cpu()), *xw, *noise, *tmp;
  *X = dt_randn(dt_shape2(n, 2), dt_cpu());
  xw = dt_matmul(*X, wt);
  noise = dt_randn(dt_shape2(n, 1), dt_cpu());
  tmp = dt_mul_scalar(noise, 0.01);
  dt_release(noise);
  noise = dt_add_scalar(xw, 4.2);
  *y = dt_add(noise, tmp);
  dt_release(wt); dt_release(xw); dt_release(noise); dt_release(tmp);
}

static void test_linear_regression(dt_device dev) {
  dt_tensor *X, *y;
  dt_module *net = dt_sequential();
  dt_trainer tr;
  double *w, *b;
  dt_manual_seed(42);
  synthetic(&X, &y, 1000);
  dt_sequential_add(net, dt_linear(0, 1)); /* LazyLinear(1) */
  T_CHECK(dt_trainer_init(&tr, 3, dev.type == DT_CUDA ? 1 : 0) == DT_OK);
  T_CHECK(dt_device_equal(tr.device, dev.type == DT_CUDA ? dt_gpu(0) : dt_cpu()));
  if (dev.type == DT_CUDA && dev.index != 0) { dt_module_free(net); dt_release(X); dt_release(y); T_SKIP("the trainer uses cuda:0"); }
  tr.batch_size = 10; tr.lr = 0.03; tr.quiet = 1;
  /* a lazy layer gets its size from a first forward, on the trainer's device */
  T_CHECK(dt_trainer_prepare_model(&tr, net) == DT_OK);
  {
    dt_tensor *x0 = dt_trainer_prepare_batch(&tr, X), *y0 = dt_forward(net, x0);
    dt_release(x0); dt_release(y0);
  }
  T_CHECK_MSG(dt_trainer_fit(&tr, net, X, y) == DT_OK, "%s", dt_last_error());
  T_CHECK(tr.epochs_run == 3 && tr.epoch_loss[2] < tr.epoch_loss[0]);
  T_CHECK(dt_device_equal(dt_device_of(dt_module_param(net, 0, NULL)), tr.device));
  w = host_f64(dt_module_param(net, 0, NULL)); b = host_f64(dt_module_param(net, 1, NULL));
  T_CLOSE(w[0], 2.0, 0.01, 0);
  T_CLOSE(w[1], -3.4, 0.01, 0);
  T_CLOSE(b[0], 4.2, 0.01, 0);
  free(w); free(b);
  dt_trainer_free(&tr);
  dt_release(X); dt_release(y);
  dt_module_free(net);
}

/* A small MLP learns y = x^2 on [-1, 1], which no linear model can. */
static void test_mlp_nonlinear(dt_device dev) {
  dt_tensor *u, *X, *y;
  dt_module *net = mlp(1, 32, 1);
  dt_trainer tr;
  dt_manual_seed(3);
  u = dt_rand(dt_shape2(512, 1), dt_cpu());
  X = dt_mul_scalar(u, 2.0);
  dt_release(u);
  u = X;
  X = dt_add_scalar(u, -1.0);
  dt_release(u);
  y = dt_mul(X, X);
  dt_trainer_init(&tr, 60, dev.type == DT_CUDA ? 1 : 0);
  if (dev.type == DT_CUDA && dev.index != 0) { dt_module_free(net); dt_release(X); dt_release(y); T_SKIP("the trainer uses cuda:0"); }
  tr.batch_size = 32; tr.lr = 0.1; tr.quiet = 1;
  T_CHECK_MSG(dt_trainer_fit(&tr, net, X, y) == DT_OK, "%s", dt_last_error());
  /* the variance of x^2 on [-1, 1] is 4/45 = 0.089: the best line leaves about 0.089 */
  T_CHECK_MSG(tr.last_loss < 0.005, "final loss %g (first %g)", tr.last_loss, tr.epoch_loss[0]);
  dt_release(X); dt_release(y);
  dt_module_free(net);
}

static const char *tmp_path(const char *name, char *buf, size_t n) {
  snprintf(buf, n, "build/%s", name);
  return buf;
}

static void test_save_load(dt_device dev) {
  dt_module *a = mlp(3, 4, 2), *b = mlp(3, 4, 2);
  char path[128];
  int i;
  dt_manual_seed(11);
  T_CHECK(dt_module_to(a, dev) == DT_OK);
  T_CHECK(dt_module_save(a, tmp_path("nn_a.safetensors", path, sizeof path)) == DT_OK);
  /* load straight onto the device the module is on: here the CPU, then dev */
  T_CHECK_MSG(dt_module_load(b, path) == DT_OK, "%s", dt_last_error());
  T_CHECK(dt_module_to(b, dev) == DT_OK);
  T_CHECK(dt_module_load(b, path) == DT_OK);
  for (i = 0; i < 4; i++) {
    dt_tensor *pa = dt_module_param(a, i, NULL), *pb = dt_module_param(b, i, NULL);
    double *va = host_f64(pa), *vb = host_f64(pb);
    T_CHECK(dt_device_equal(dt_device_of(pb), dev));
    T_CHECK(memcmp(va, vb, sizeof(double) * (size_t)dt_numel(pa)) == 0);
    free(va); free(vb);
  }
  dt_module_free(a); dt_module_free(b);
}


static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  size_t w;
  if (!f) return 0;
  w = fwrite(data, 1, n, f);
  fclose(f);
  return w == n;
}

/* A safetensors file put together by hand from the format's description. */
static int write_st(const char *path, const char *json, const void *data, size_t nd, int64_t hlen_override) {
  unsigned char buf[4096];
  size_t hl = strlen(json), i;
  uint64_t h = hlen_override >= 0 ? (uint64_t)hlen_override : hl;
  for (i = 0; i < 8; i++) buf[i] = (unsigned char)(h >> (8 * i));
  memcpy(buf + 8, json, hl);
  if (nd) memcpy(buf + 8 + hl, data, nd);
  return write_file(path, buf, 8 + hl + nd);
}

/* The parameters the hand-written files hold: weight [[1.5, -2]] and, with_bias, bias [0.25]. */
static void check_hand_params(dt_module *net, int with_bias) {
  double *v = host_f64(dt_module_param(net, 0, NULL));
  T_CHECK(v[0] == 1.5 && v[1] == -2.0);
  free(v);
  if (!with_bias) return;
  v = host_f64(dt_module_param(net, 1, NULL));
  T_CHECK(v[0] == 0.25);
  free(v);
}

static void test_load_by_hand_and_corrupt(void) {
  dt_module *net = dt_sequential();
  char path[128];
  float data[3] = {1.5f, -2.0f, 0.25f}; /* weight (1, 2), bias (1,) */
  size_t c;
  static const struct { const char *json; int64_t hlen; dt_status want; } bad[] = {
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", -1, DT_ERR_FORMAT},          /* 0.bias missing */
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[0,8]},\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", -1, DT_ERR_SHAPE},
    {"{\"0.weight\":{\"dtype\":\"F64\",\"shape\":[1,2],\"data_offsets\":[0,8]},\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", -1, DT_ERR_DTYPE},
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,16]}}", -1, DT_ERR_FORMAT},
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,99999999999]}}", -1, DT_ERR_FORMAT},
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},\"9.x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", -1, DT_ERR_FORMAT},
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", -1, DT_ERR_FORMAT},
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},\"0.bias\":", -1, DT_ERR_FORMAT},  /* cut short */
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}} trailing", -1, DT_ERR_FORMAT},
    {"[1, 2, 3]", -1, DT_ERR_FORMAT},
    {"{}", (int64_t)1 << 62, DT_ERR_FORMAT},   /* a header longer than the file */
    {"{}", 0, DT_ERR_FORMAT},
    {"{\"0.weight\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", -1, DT_ERR_FORMAT},
    {"{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2,1,1,1,1,1,1,1,1],\"data_offsets\":[0,8]}}", -1, DT_ERR_SHAPE}, /* valid JSON, a shape the module lacks */
  };
  dt_sequential_add(net, dt_linear(2, 1));
  tmp_path("hand.safetensors", path, sizeof path);
  T_CHECK(write_st(path, "{\"__metadata__\":{\"format\":\"pt\"}, \"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                         "\"0.weight\":{\"shape\":[1,2],\"dtype\":\"F32\",\"data_offsets\":[0,8]}}  ", data, sizeof data, -1));
  T_CHECK_MSG(dt_module_load(net, path) == DT_OK, "%s", dt_last_error());
  check_hand_params(net, 1);
  for (c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    dt_status s;
    T_CHECK(write_st(path, bad[c].json, data, sizeof data, bad[c].hlen));
    s = dt_module_load(net, path);
    T_CHECK_MSG(s == bad[c].want, "case %d: status %d, %s", (int)c, (int)s, dt_last_error());
  }
  /* the parameters are untouched by the failed loads */
  check_hand_params(net, 0);
  /* for tests/check_safetensors.py: Python reads what we write */
  {
    char saved[128];
    T_CHECK(dt_module_save(net, tmp_path("hand_saved.safetensors", saved, sizeof saved)) == DT_OK);
  }
  /* short and missing files */
  T_CHECK(write_file(path, "abc", 3));
  T_CHECK(dt_module_load(net, path) == DT_ERR_FORMAT);
  T_CHECK(dt_module_load(net, "build/no/such/file.safetensors") == DT_ERR_IO);
  T_CHECK(dt_module_save(net, "build/no/such/dir/x.safetensors") == DT_ERR_IO);
  T_CHECK(dt_module_load(net, NULL) == DT_ERR_INVALID_ARGUMENT);
  dt_module_free(net);
}

/* The data layout the format demands: sorted by offset, the tensors fill the data buffer
   exactly, from byte 0 to its end, any order of names. */
static void test_load_layout(void) {
  dt_module *net = dt_sequential(), *empty = dt_sequential();
  char path[128], saved[128];
  float wb[4] = {1.5f, -2.0f, 0.25f, 7.0f}, bw[3] = {0.25f, 1.5f, -2.0f}; /* weight (1, 2) then bias (1,); bias first */
  size_t c;
  static const char *W = "\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":";
  static const char *B = "\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":";
  static const struct { const char *w, *b; size_t nd; const char *words[3]; } bad[] = {
    {"[0,8]", "[4,8]", 12, {"\"0.bias\" at data bytes [4, 8] overlaps \"0.weight\" at [0, 8]", 0, 0}},
    {"[0,8]", "[0,4]", 12, {"\"0.weight\" at data bytes [0, 8] overlaps \"0.bias\" at [0, 4]", 0, 0}},
    {"[0,8]", "[2,6]", 12, {"\"0.bias\" at data bytes [2, 6] overlaps \"0.weight\"", 0, 0}},  /* inside it */
    {"[0,8]", "[12,16]", 16, {"\"0.bias\" begins at data byte 12", "\"0.weight\" before it ends at 8", "gaps"}},
    {"[4,12]", "[12,16]", 16, {"\"0.weight\", the first tensor in the data, begins at byte 4, not 0", 0, 0}},
    {"[0,8]", "[8,12]", 16, {"bytes follow the data of the last tensor, \"0.bias\", which ends at data byte 12", 0, 0}},
    {"[4,12]", "[0,4]", 13, {"bytes follow", "\"0.weight\"", "12"}},
    {"[0,8]", "[8,12]", 10, {"is cut short", "\"0.bias\" is [8, 12]", 0}},
    {"[0,8]", "[8,12]", 0, {"is cut short", "\"0.weight\" is [0, 8]", 0}},
  };
  dt_sequential_add(net, dt_linear(2, 1));
  tmp_path("layout.safetensors", path, sizeof path);
  /* what Python's safetensors writes: __metadata__ first, the data sorted by name (0.bias
     before 0.weight), the header padded with spaces to a multiple of 8 */
  {
    char h[512];
    size_t n;
    snprintf(h, sizeof h, "{\"__metadata__\":{\"format\":\"pt\"},%s[0,4]},%s[4,12]}}", B, W);
    for (n = strlen(h); n % 8; n++) h[n] = ' ';
    h[n] = 0;
    T_CHECK(write_st(path, h, bw, sizeof bw, -1));
    T_CHECK_MSG(dt_module_load(net, path) == DT_OK, "%s", dt_last_error());
    check_hand_params(net, 1);
  }
  for (c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    char h[512];
    int k;
    dt_status s;
    snprintf(h, sizeof h, "{%s%s},%s%s}}", W, bad[c].w, B, bad[c].b);
    T_CHECK(write_st(path, h, wb, bad[c].nd, -1));
    s = dt_module_load(net, path);
    T_CHECK_MSG(s == DT_ERR_FORMAT && dt_last_status() == s, "case %d: status %d, %s", (int)c, (int)s, dt_last_error());
    T_CHECK_MSG(strncmp(dt_last_error(), "dt_module_load: build/layout.safetensors", 40) == 0, "case %d: %s", (int)c, dt_last_error());
    for (k = 0; k < 3; k++)
      if (bad[c].words[k]) T_CHECK_MSG(contains(dt_last_error(), bad[c].words[k]), "case %d: no '%s' in: %s", (int)c, bad[c].words[k], dt_last_error());
  }
  /* the parameters are untouched by the failed loads */
  check_hand_params(net, 0);
  /* what dt_module_save writes loads */
  T_CHECK(dt_module_save(net, tmp_path("layout_saved.safetensors", saved, sizeof saved)) == DT_OK);
  T_CHECK_MSG(dt_module_load(net, saved) == DT_OK, "%s", dt_last_error());
  /* no tensors: no data bytes */
  T_CHECK(write_st(path, "{\"__metadata__\":{}}", wb, 0, -1));
  T_CHECK_MSG(dt_module_load(empty, path) == DT_OK, "%s", dt_last_error());
  T_CHECK(write_st(path, "{\"__metadata__\":{}}", wb, 4, -1));
  T_CHECK(dt_module_load(empty, path) == DT_ERR_FORMAT && contains(dt_last_error(), "holds no tensors but has data bytes"));
  T_CHECK(dt_module_save(empty, saved) == DT_OK && dt_module_load(empty, saved) == DT_OK);
  dt_module_free(net); dt_module_free(empty);
}

/* Sequentials nest at most DT_MODULE_MAX_DEPTH deep, refused at dt_sequential_add (no deep
   recursion later); names as deep as that are whole, and save and load agree on them. */
static void test_nesting_depth(void) {
  dt_module *top, *cur, *inner, *twin, *s;
  char path[128], want[512];
  const char *name;
  int i, ok = 0;
  dt_status st = DT_OK;
  /* bottom up, 30000 levels asked: the first DT_MODULE_MAX_DEPTH go in, the next is refused (and freed) */
  cur = dt_linear(2, 1);
  for (i = 0; i < 30000; i++) {
    s = dt_sequential();
    if ((st = dt_sequential_add(s, cur)) != DT_OK) { cur = s; break; }
    ok++;
    cur = s;
  }
  T_CHECK(ok == DT_MODULE_MAX_DEPTH && DT_MODULE_MAX_DEPTH == 64);
  T_CHECK(st == DT_ERR_INVALID_ARGUMENT && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_STREQ(dt_last_error(), "dt_sequential_add: sequentials nest at most 64 deep (DT_MODULE_MAX_DEPTH), but seq is 1 deep and "
                           "the layer holds 64 more, which would make 65");
  T_CHECK(dt_sequential_len(cur) == 0);
  dt_module_free(cur);
  /* top down: 64 sequentials, the innermost holding Linear(2, 3), ReLU, Linear(3, 1); a 65th is refused */
  top = cur = dt_sequential();
  for (i = 1; i < 64; i++) { s = dt_sequential(); T_CHECK(dt_sequential_add(cur, s) == DT_OK); cur = s; }
  inner = cur;
  T_CHECK(dt_sequential_add(inner, dt_linear(2, 3)) == DT_OK && dt_sequential_add(inner, dt_relu_layer()) == DT_OK &&
          dt_sequential_add(inner, dt_linear(3, 1)) == DT_OK);
  T_CHECK(dt_sequential_add(inner, dt_sequential()) == DT_ERR_INVALID_ARGUMENT);
  T_STREQ(dt_last_error(), "dt_sequential_add: sequentials nest at most 64 deep (DT_MODULE_MAX_DEPTH), but seq is 64 deep and "
                           "the layer holds 1 more, which would make 65");
  T_CHECK(dt_sequential_len(inner) == 3);
  /* names: 63 "0." then "0.weight", ..., "2.bias": 132 bytes, whole */
  want[0] = 0;
  for (i = 1; i < 64; i++) strcat(want, "0.");
  strcat(want, "2.bias");
  T_CHECK(dt_module_num_params(top) == 4);
  T_CHECK(dt_module_param(top, 3, &name) != NULL);
  T_STREQ(name, want);
  T_CHECK(strlen(name) == 132);
  /* save, then load into a twin built the same way: the same parameters, bit for bit */
  twin = cur = dt_sequential();
  for (i = 1; i < 64; i++) { s = dt_sequential(); dt_sequential_add(cur, s); cur = s; }
  dt_sequential_add(cur, dt_linear(2, 3)); dt_sequential_add(cur, dt_relu_layer()); dt_sequential_add(cur, dt_linear(3, 1));
  tmp_path("deep.safetensors", path, sizeof path);
  T_CHECK_MSG(dt_module_save(top, path) == DT_OK, "%s", dt_last_error());
  T_CHECK_MSG(dt_module_load(twin, path) == DT_OK, "%s", dt_last_error());
  for (i = 0; i < 4; i++) {
    dt_tensor *a = dt_module_param(top, i, NULL), *b = dt_module_param(twin, i, NULL);
    T_CHECK(a && b && dt_nbytes(a) == dt_nbytes(b) && memcmp(dt_data_ptr(a), dt_data_ptr(b), dt_nbytes(a)) == 0);
  }
  /* forward and backward through all 64 levels: the same as the flat network */
  {
    float xv[4] = {1, -2, 0.5f, 3};
    dt_tensor *x = dt_from_data(xv, dt_shape2(2, 2), DT_F32, dt_cpu()), *y = dt_forward(top, x);
    dt_module *flat = dt_sequential();
    dt_tensor *yf, *g;
    dt_sequential_add(flat, dt_linear(2, 3)); dt_sequential_add(flat, dt_relu_layer()); dt_sequential_add(flat, dt_linear(3, 1));
    T_CHECK(dt_module_load(flat, path) != DT_OK); /* its names are "0.weight", ...: not the deep ones */
    { /* parameters require grad: copied with grad mode off, as under torch.no_grad() */
      int prev = dt_set_grad_enabled(0);
      for (i = 0; i < 4; i++) dt_copy_(dt_module_param(flat, i, NULL), dt_module_param(top, i, NULL));
      dt_set_grad_enabled(prev);
    }
    yf = dt_forward(flat, x);
    T_CHECK(y && yf && memcmp(dt_data_ptr(y), dt_data_ptr(yf), 8) == 0);
    g = dt_backward(top, y);
    T_CHECK(g && dt_dim(g, 0) == 2 && dt_dim(g, 1) == 2);
    dt_release(x); dt_release(y); dt_release(yf); dt_release(g);
    dt_module_free(flat);
  }
  dt_module_free(top); dt_module_free(twin);
}

/* Names longer than 63 bytes: two linear layers 40 sequentials down used to save under one
   cut name, which the load then refused as a duplicate. */
static void test_long_names(void) {
  dt_module *net = dt_sequential(), *cur = net, *s, *back = dt_sequential(), *bc = back;
  char path[128];
  const char *n0, *n2;
  int i;
  for (i = 1; i < 40; i++) {
    s = dt_sequential(); dt_sequential_add(cur, s); cur = s;
    s = dt_sequential(); dt_sequential_add(bc, s); bc = s;
  }
  for (i = 0; i < 12; i++) { dt_sequential_add(cur, dt_relu_layer()); dt_sequential_add(bc, dt_relu_layer()); }
  dt_sequential_add(cur, dt_linear(2, 2)); dt_sequential_add(cur, dt_linear(2, 2));
  dt_sequential_add(bc, dt_linear(2, 2)); dt_sequential_add(bc, dt_linear(2, 2));
  dt_module_param(net, 0, &n0);
  dt_module_param(net, 2, &n2);
  T_CHECK(n0 && n2 && strlen(n0) == 39 * 2 + 3 + 6 && strcmp(n0, n2) != 0);
  T_CHECK(n2 && strcmp(n2 + 78, "13.weight") == 0);
  tmp_path("long_names.safetensors", path, sizeof path);
  T_CHECK_MSG(dt_module_save(net, path) == DT_OK, "%s", dt_last_error());
  T_CHECK_MSG(dt_module_load(back, path) == DT_OK, "%s", dt_last_error());
  for (i = 0; i < 4; i++) {
    dt_tensor *a = dt_module_param(net, i, NULL), *b = dt_module_param(back, i, NULL);
    T_CHECK(a && b && memcmp(dt_data_ptr(a), dt_data_ptr(b), dt_nbytes(a)) == 0);
  }
  dt_module_free(net); dt_module_free(back);
}

/* A sequential nested in another follows the whole network's dtype: the outermost one's, not
   only its own (a layer of another dtype used to make a network of two dtypes). */
static void test_nested_place(void) {
  dt_module *root = dt_sequential(), *child = dt_sequential(), *l64 = dt_linear(2, 1);
  dt_tensor *x, *y;
  double xv[2] = {1, 2};
  T_CHECK(dt_sequential_add(root, child) == DT_OK);
  T_CHECK(dt_module_to_dtype(l64, DT_F64) == DT_OK);
  T_CHECK(dt_sequential_add(child, l64) == DT_OK); /* nothing to convert yet: the network follows the layer */
  x = dt_from_data(xv, dt_shape2(1, 2), DT_F64, dt_cpu());
  y = dt_forward(root, x);
  T_CHECK_MSG(y != NULL, "%s", dt_last_error());
  if (y) {
    double *w = host_f64(dt_linear_weight(l64)), *b = host_f64(dt_linear_bias(l64)), *v = host_f64(y);
    T_CHECK(v[0] == w[0] * 1 + w[1] * 2 + b[0]);
    free(w); free(b); free(v);
  }
  /* a float32 layer beside it is refused: the network holds float64 parameters */
  T_CHECK(dt_sequential_add(root, dt_linear(2, 2)) == DT_ERR_DTYPE);
  {
    dt_module *r2 = dt_sequential(), *c2 = dt_sequential(), *l = dt_linear(2, 2);
    T_CHECK(dt_sequential_add(r2, dt_linear(2, 2)) == DT_OK && dt_sequential_add(r2, c2) == DT_OK);
    dt_module_to_dtype(l, DT_F64);
    T_CHECK(dt_sequential_add(c2, l) == DT_ERR_DTYPE);
    T_STREQ(dt_last_error(), "dt_sequential_add: the layer is float64 but the sequential is float32");
    dt_module_free(r2);
  }
  dt_release(x); dt_release(y);
  dt_module_free(root);
}

/* A shape that does not fit names the layer and the network's input. */
static void test_forward_misfit(void) {
  dt_module *net = dt_sequential(), *outer = dt_sequential(), *lin = dt_linear(3, 1);
  dt_tensor *x = dt_zeros(dt_shape2(4, 5), dt_cpu()), *x3 = dt_zeros(dt_shape2(4, 3), dt_cpu());
  dt_tensor *v = dt_zeros(dt_shape1(5), dt_cpu());
  dt_sequential_add(net, dt_linear(5, 2)); dt_sequential_add(net, dt_relu_layer()); dt_sequential_add(net, dt_linear(3, 1));
  T_CHECK(dt_forward(net, x) == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_STREQ(dt_last_error(), "dt_forward: layer 2 (linear, 3 -> 1) takes 3 features, but its input has shape (4, 2) "
                           "(the network's input has shape (4, 5))");
  T_CHECK(dt_forward(net, x3) == NULL);
  T_STREQ(dt_last_error(), "dt_forward: layer 0 (linear, 5 -> 2) takes 5 features, but the network's input has shape (4, 3)");
  T_CHECK(dt_forward(net, v) == NULL);
  T_STREQ(dt_last_error(), "dt_forward: layer 0 (linear, 5 -> 2) takes input of shape (n, 5), but the network's input has shape (5,)");
  T_CHECK(dt_forward(lin, x) == NULL);
  T_STREQ(dt_last_error(), "dt_forward: the layer (linear, 3 -> 1) takes 3 features, but the input has shape (4, 5)");
  /* nested: the path as in the parameters' names */
  dt_sequential_add(outer, dt_relu_layer());
  dt_sequential_add(outer, net);
  T_CHECK(dt_forward(outer, x) == NULL);
  T_STREQ(dt_last_error(), "dt_forward: layer 1.2 (linear, 3 -> 1) takes 3 features, but its input has shape (4, 2) "
                           "(the network's input has shape (4, 5))");
  dt_release(x); dt_release(x3); dt_release(v);
  dt_module_free(outer); dt_module_free(lin);
}

/* Writes an 8-byte length, the header text and nd data bytes (any size). */
static int write_st_big(const char *path, const char *json, const void *data, size_t nd) {
  size_t hl = strlen(json), i;
  unsigned char *buf = (unsigned char *)malloc(8 + hl + nd);
  int ok;
  for (i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(buf + 8, json, hl);
  if (nd) memcpy(buf + 8 + hl, data, nd);
  ok = write_file(path, buf, 8 + hl + nd);
  free(buf);
  return ok;
}

/* The header is JSON as serde_json (the format's reference reader) reads it: what it refuses
   is DT_ERR_FORMAT, what it takes loads. Each case is the good file with one change. */
static void test_load_json_strict(void) {
  dt_module *net = dt_sequential();
  char path[128], json[8192];
  float data[3] = {1.5f, -2.0f, 0.25f};
  int c, i;
  /* %s: a slot in the weight's entry (an extra key, or a replaced one) and __metadata__'s value */
  static const struct { const char *entry, *meta; } bad[] = {
    {"\"x\":\"\\u00zz\"", "{}"},               /* \u with bad hex digits */
    {"\"x\":\"\\u12\"", "{}"},
    {"\"x\":nope", "{}"},                      /* bare words */
    {"\"x\":trueish", "{}"},
    {"\"x\":nul", "{}"},
    {"\"x\":True", "{}"},
    {"\"x\":012", "{}"},                       /* leading zero */
    {"\"x\":-012", "{}"},
    {"\"x\":+1", "{}"},                        /* '+' sign */
    {"\"x\":NaN", "{}"},
    {"\"x\":Infinity", "{}"},
    {"\"x\":-Infinity", "{}"},
    {"\"x\":1.", "{}"},
    {"\"x\":.5", "{}"},
    {"\"x\":1e", "{}"},
    {"\"x\":-", "{}"},
    {"\"x\":0x10", "{}"},
    {"\"x\":1e400", "{}"},                     /* infinite as a double */
    {"\"x\":[1,2,]", "{}"},                    /* trailing commas */
    {"\"x\":{\"a\":1,}", "{}"},
    {"\"x\":[,]", "{}"},
    {"\"x\":'a'", "{}"},
    {"\"x\":\"a\tb\"", "{}"},                  /* a raw control character */
    {"\"x\":\"\\x41\"", "{}"},                 /* an unknown escape */
    {"\"x\":\"\\ud800\"", "{}"},               /* lone surrogates */
    {"\"x\":\"\\udc00\"", "{}"},
    {"\"x\":\"\\ud800\\u0041\"", "{}"},
    {"\"x\":\"\xff\"", "{}"},                  /* not UTF-8 */
    {"\"x\":\"\xc0\xaf\"", "{}"},              /* overlong */
    {"\"x\":\"\xed\xa0\x80\"", "{}"},          /* an encoded surrogate */
    {"\"x\":{\"a\" 1}", "{}"},
    {"\"x\":/*c*/1", "{}"},
    {"\"dtype\":\"F32\"", "{}"},               /* duplicate keys in an entry */
    {"\"shape\":[1,2]", "{}"},
    {"\"data_offsets\":[0,8]", "{}"},
    {"\"dtype\":1", "{}"},                     /* (replaces nothing: a second dtype, and not a string) */
    {"\"y\":1", "[]"},                         /* non-object __metadata__ */
    {"\"y\":1", "\"pt\""},
    {"\"y\":1", "1"},
    {"\"y\":1", "{\"format\":1}"},             /* __metadata__'s values are strings */
    {"\"y\":1", "{\"format\":[\"pt\"]}"},
    {"\"y\":1", "{\"format\":\"pt\"},\"__metadata__\":{}"}, /* twice */
    {"\"y\":1", "nullx"},
  };
  static const struct { const char *entry, *meta; } good[] = {
    {"\"x\":[1,-2.5e3,true,false,null,{\"b\":\"\\n\\t\\\"\\/\\u00e9\\ud83d\\ude00\"}],\"y\":0", "{}"},
    {"\"x\":-0.0e+0,\"z\":1.7976931348623157e308,\"w\":1e-400,\"v\":1E5", "{\"a\":\"\xc3\xa9\xf0\x9f\x98\x80\",\"a\":\"b\"}"},
    {"\"x\" : \t\r\n [ ] ", "null"},
  };
  dt_sequential_add(net, dt_linear(2, 1));
  tmp_path("strict.safetensors", path, sizeof path);
#define STRICT_JSON(ent, met) snprintf(json, sizeof json, "{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8],%s}," \
                                       "\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},\"__metadata__\":%s}", ent, met)
  for (c = 0; c < (int)(sizeof bad / sizeof bad[0]); c++) {
    dt_status s;
    STRICT_JSON(bad[c].entry, bad[c].meta);
    T_CHECK(write_st_big(path, json, data, sizeof data));
    s = dt_module_load(net, path);
    T_CHECK_MSG(s == DT_ERR_FORMAT && strncmp(dt_last_error(), "dt_module_load: ", 16) == 0, "bad case %d (%s, %s): status %d, %s",
                c, bad[c].entry, bad[c].meta, (int)s, dt_last_error());
  }
  for (c = 0; c < (int)(sizeof good / sizeof good[0]); c++) {
    dt_status s;
    STRICT_JSON(good[c].entry, good[c].meta);
    T_CHECK(write_st_big(path, json, data, sizeof data));
    s = dt_module_load(net, path);
    T_CHECK_MSG(s == DT_OK, "good case %d: %s", c, dt_last_error());
  }
#undef STRICT_JSON
  /* shapes and offsets are usize: no sign, fraction or leading zero */
  {
    static const char *const sh[] = {"[1.0,2]", "[01,2]", "[-1,2]", "[1,2e0]", "[1,\"2\"]", "[1,2,]", "[1 2]", "1"};
    for (c = 0; c < (int)(sizeof sh / sizeof sh[0]); c++) {
      snprintf(json, sizeof json, "{\"0.weight\":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":[0,8]},"
                                  "\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", sh[c]);
      T_CHECK(write_st_big(path, json, data, sizeof data));
      T_CHECK_MSG(dt_module_load(net, path) == DT_ERR_FORMAT, "shape %s: %s", sh[c], dt_last_error());
      snprintf(json, sizeof json, "{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},"
                                  "\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":%s}}",
               c == 0 ? "[8,12.0]" : c == 1 ? "[08,12]" : c == 2 ? "[8,12,16]" : c == 3 ? "[8]" : c == 4 ? "[8,\"12\"]" : c == 5 ? "[8,12,]" : c == 6 ? "[8 12]" : "8");
      T_CHECK(write_st_big(path, json, data, sizeof data));
      T_CHECK_MSG(dt_module_load(net, path) == DT_ERR_FORMAT, "offsets case %d: %s", c, dt_last_error());
    }
  }
  /* an unknown dtype is no safetensors file; a known one the module lacks is a dtype error */
  T_CHECK(write_st_big(path, "{\"0.weight\":{\"dtype\":\"X32\",\"shape\":[1,2],\"data_offsets\":[0,8]},"
                             "\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", data, sizeof data));
  T_CHECK(dt_module_load(net, path) == DT_ERR_FORMAT);
  T_STREQ(dt_last_error(), "dt_module_load: build/strict.safetensors: \"0.weight\" has dtype \"X32\", which is not a safetensors dtype");
  /* serde_json's nesting limit: 127 containers in all (here 2 around the value) */
  for (c = 125; c <= 126; c++) {
    size_t at;
    at = (size_t)snprintf(json, sizeof json, "{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8],\"x\":");
    for (i = 0; i < c; i++) json[at++] = '[';
    for (i = 0; i < c; i++) json[at++] = ']';
    snprintf(json + at, sizeof json - at, "},\"0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}");
    T_CHECK(write_st_big(path, json, data, sizeof data));
    T_CHECK_MSG(dt_module_load(net, path) == (c == 125 ? DT_OK : DT_ERR_FORMAT), "depth %d: %s", c, dt_last_error());
  }
  /* a message names the reason and the byte */
  T_CHECK(write_st_big(path, "{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},\"__metadata__\":{\"a\":\"\\u00zz\"}}",
                       data, sizeof data));
  T_CHECK(dt_module_load(net, path) == DT_ERR_FORMAT);
  T_STREQ(dt_last_error(), "dt_module_load: build/strict.safetensors: the header is not valid JSON: a \\u escape needs four hex "
                           "digits (byte 96 of the file)");
  check_hand_params(net, 1);
  dt_module_free(net);
}

/* A FIFO, a directory or a device as the path: refused at once (a FIFO used to block forever). */
static void test_load_not_regular(void) {
#ifdef _WIN32 /* make mingw: no FIFOs, no /dev/null */
  T_SKIP("POSIX file types");
#else
  dt_module *net = dt_sequential();
  char path[128];
  dt_sequential_add(net, dt_linear(2, 1));
  tmp_path("fifo.safetensors", path, sizeof path);
  remove(path);
  if (mkfifo(path, 0600) != 0) { dt_module_free(net); T_SKIP("mkfifo failed"); }
  alarm(20); /* the old code waits for a writer: the test dies rather than hangs */
  T_CHECK(dt_module_load(net, path) == DT_ERR_IO);
  alarm(0);
  T_STREQ(dt_last_error(), "dt_module_load: build/fifo.safetensors is a FIFO, not a regular file");
  remove(path);
  T_CHECK(dt_module_load(net, "build") == DT_ERR_IO);
  T_STREQ(dt_last_error(), "dt_module_load: build is a directory, not a regular file");
  T_CHECK(dt_module_load(net, "/dev/null") == DT_ERR_IO);
  T_STREQ(dt_last_error(), "dt_module_load: /dev/null is a character device, not a regular file");
  dt_module_free(net);
#endif
}

int main(void) {
  T_RUN_ALL_DEVICES(test_linear_basics);
  T_RUN_ALL_DEVICES(test_lazy_linear);
  T_RUN_ALL_DEVICES(test_module_devices);
  T_RUN_ALL_DEVICES(test_borrowed_layer);
  T_RUN_ALL_DEVICES(test_gradient_check);
  T_RUN(test_backward_errors);
  T_RUN_ALL_DEVICES(test_backward_params);
  T_RUN_ALL_DEVICES(test_backward_params_memory);
  T_RUN_ALL_DEVICES(test_zero_grad_deferred);
  T_RUN(test_backward_params_errors);
  T_RUN_ALL_DEVICES(test_linear_regression);
  T_RUN(test_trainer_gpus);
  T_RUN_ALL_DEVICES(test_trainer_devices);
  T_RUN_ALL_DEVICES(test_trainer_shuffle);
  T_RUN_ALL_DEVICES(test_trainer_output);
  T_RUN_ALL_DEVICES(test_mlp_nonlinear);
  T_RUN_ALL_DEVICES(test_save_load);
  T_RUN(test_load_by_hand_and_corrupt);
  T_RUN(test_load_layout);
  T_RUN(test_nesting_depth);
  T_RUN(test_long_names);
  T_RUN(test_nested_place);
  T_RUN(test_forward_misfit);
  T_RUN(test_load_json_strict);
  T_RUN(test_load_not_regular);
  return t_finish();
}
