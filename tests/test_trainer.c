/* The trainer learns classification: cross-entropy on int64 labels,
   an optimizer of the user's choice, accuracy on a validation set counted on
   the device and read once per epoch, per-epoch results, minibatches gathered
   on the device or on the host; dt_trainer_evaluate. On every device; the GPU
   runs must give the CPU's results. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

/* The CUDA emulator (tests/emu) counts device-to-host copies; elsewhere NULL. */
/* D2H_COPIES() and HAVE_D2H_COUNT: the emulator's count of device-to-host copies (tests/harness.h) */

#define NTRAIN 60
#define NVAL 30
#define EPOCHS 12

/* Three classes of points in the plane, around (3, 0), (-1.5, 2.6) and (-1.5, -2.6)
   with offsets of at most 0.7 from a fixed formula: separable by a linear model.
   Example i has class i % 3. X (n, 2) float32 and y (n,) int64 on the CPU. */
static void three_clusters(int n, int salt, dt_tensor **X, dt_tensor **y) {
  static const float cx[3] = {3.0f, -1.5f, -1.5f}, cy[3] = {0.0f, 2.6f, -2.6f};
  float xs[2 * 128];
  int64_t ys[128];
  int i;
  for (i = 0; i < n; i++) {
    int k = i % 3;
    float u = (float)((i * 37 + salt * 11) % 29) / 28.0f - 0.5f, v = (float)((i * 53 + salt * 7) % 31) / 30.0f - 0.5f;
    xs[2 * i] = cx[k] + 1.4f * u;
    xs[2 * i + 1] = cy[k] + 1.4f * v;
    ys[i] = k;
  }
  *X = dt_from_data(xs, dt_shape2(n, 2), DT_F32, dt_cpu());
  *y = dt_from_data(ys, dt_shape1(n), DT_I64, dt_cpu());
}

static dt_module *small_net(void) {
  dt_module *net = dt_sequential();
  dt_sequential_add(net, dt_linear(2, 8));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(8, 3));
  return net;
}

/* All parameters of a network, in order, as doubles (at most cap). */
static int params_of(dt_module *net, double *out, int cap) {
  int i, k = 0, np = dt_module_num_params(net);
  for (i = 0; i < np; i++) {
    dt_tensor *c = dt_cast(dt_module_param(net, i, NULL), DT_F64);
    int64_t j, n = c ? dt_numel(c) : 0;
    double buf[64];
    if (!c || n > 64 || k + n > cap) { dt_release(c); return -1; }
    dt_to_host(c, buf, sizeof(double) * (size_t)n);
    for (j = 0; j < n; j++) out[k++] = buf[j];
    dt_release(c);
  }
  return k;
}

typedef struct fit_out {
  dt_epoch_result r[EPOCHS];
  int calls, calls_fwd;
  double params[128];
  int nparams;
  unsigned long long d2h;
  dt_status s;
} fit_out;

static void record(const dt_trainer *tr, const dt_epoch_result *r, void *user) {
  fit_out *o = (fit_out *)user;
  if (o->calls < EPOCHS) o->r[o->calls] = *r;
  o->calls++;
  (void)tr;
}

enum { OPT_PLAIN, OPT_SGD, OPT_ADAM };

/* Trains small_net on the clusters on `dev` from seed 3 in minibatches of `batch`: the
   per-epoch results, the final parameters. data_on_dev: X, y, X_val, y_val moved to dev first. */
static void fit_clusters(dt_device dev, int data_on_dev, int opt_kind, int64_t batch, fit_out *o) {
  dt_tensor *X, *y, *Xv, *yv;
  dt_module *net;
  dt_optimizer *opt = NULL;
  dt_trainer tr;
  memset(o, 0, sizeof *o);
  three_clusters(NTRAIN, 1, &X, &y);
  three_clusters(NVAL, 2, &Xv, &yv);
  if (data_on_dev) {
    dt_tensor *a = dt_to(X, dev), *b = dt_to(y, dev), *c = dt_to(Xv, dev), *d = dt_to(yv, dev);
    dt_release(X); dt_release(y); dt_release(Xv); dt_release(yv);
    X = a; y = b; Xv = c; yv = d;
  }
  dt_manual_seed(3);
  net = small_net();
  dt_trainer_init(&tr, EPOCHS, dev.type == DT_CUDA ? 1 : 0);
  tr.batch_size = batch; tr.lr = 0.2; tr.quiet = 1;
  tr.loss_fn = DT_LOSS_CROSS_ENTROPY;
  tr.on_epoch = record; tr.user = o;
  if (opt_kind == OPT_SGD) opt = dt_sgd(net, 0.2, 0.0, 0.0);
  if (opt_kind == OPT_ADAM) opt = dt_adam(net, 0.05, 0.9, 0.999, 1e-8, 0.0);
  tr.optimizer = opt;
  o->d2h = D2H_COPIES();
  o->s = dt_trainer_fit_val(&tr, net, X, y, Xv, yv);
  o->d2h = D2H_COPIES() - o->d2h;
  T_CHECK_MSG(o->s == DT_OK, "%s", dt_last_error());
  T_CHECK(tr.epochs_run == EPOCHS && o->calls == EPOCHS);
  if (o->calls == EPOCHS) {
    T_CHECK(memcmp(&tr.last, &o->r[EPOCHS - 1], sizeof tr.last) == 0);
    T_CHECK(memcmp(&tr.epochs[3], &o->r[3], sizeof tr.last) == 0 && tr.epoch_loss[3] == o->r[3].loss);
  }
  o->nparams = params_of(net, o->params, 128);
  dt_optimizer_free(opt);
  dt_trainer_free(&tr);
  dt_module_free(net);
  dt_release(X); dt_release(y); dt_release(Xv); dt_release(yv);
}

/* A separable problem is learnt: accuracy 1 on the training and validation sets,
   the loss falling; the callback sees epochs 1, 2, ...; on a GPU the CPU's
   accuracies exactly and its losses and parameters to float rounding; with the
   data on the GPU the same bits as with the data on the host. */
static void test_learns_clusters(dt_device dev) {
  fit_out o, ref, ondev;
  int e;
  if (dev.type == DT_CUDA && dev.index != 0) T_SKIP("the trainer uses cuda:0");
  fit_clusters(dev, 0, OPT_PLAIN, 8, &o);
  if (o.s != DT_OK) return;
  for (e = 0; e < EPOCHS; e++) {
    T_CHECK(o.r[e].epoch == e + 1);
    T_CHECK(o.r[e].seconds >= 0 && o.r[e].seconds < 60);
    T_CHECK(o.r[e].train_acc >= 0 && o.r[e].train_acc <= 1 && o.r[e].val_acc >= 0 && o.r[e].val_acc <= 1);
  }
  T_CHECK_MSG(o.r[EPOCHS - 1].train_acc == 1.0 && o.r[EPOCHS - 1].val_acc == 1.0, "last epoch: train acc %.4f, val acc %.4f",
              o.r[EPOCHS - 1].train_acc, o.r[EPOCHS - 1].val_acc);
  T_CHECK_MSG(o.r[0].loss > 0.3 && o.r[EPOCHS - 1].loss < 0.1 * o.r[0].loss, "loss %.6f then %.6f", o.r[0].loss, o.r[EPOCHS - 1].loss);
  T_CHECK(o.r[EPOCHS - 1].val_loss < 0.1 && o.r[EPOCHS - 1].val_loss >= 0);
  /* counts of right answers: multiples of 1/n */
  T_CLOSE(o.r[0].train_acc * NTRAIN, floor(o.r[0].train_acc * NTRAIN + 0.5), 1e-9, 0);
  if (dev.type == DT_CPU) return;
  fit_clusters(dt_cpu(), 0, OPT_PLAIN, 8, &ref);
  for (e = 0; e < EPOCHS; e++) {
    T_CHECK_MSG(o.r[e].train_acc == ref.r[e].train_acc && o.r[e].val_acc == ref.r[e].val_acc, "epoch %d: acc %.4f/%.4f vs cpu %.4f/%.4f",
                e + 1, o.r[e].train_acc, o.r[e].val_acc, ref.r[e].train_acc, ref.r[e].val_acc);
    T_CLOSE(o.r[e].loss, ref.r[e].loss, 1e-6, 1e-4);
    T_CLOSE(o.r[e].val_loss, ref.r[e].val_loss, 1e-6, 1e-4);
  }
  T_CHECK(o.nparams == ref.nparams && o.nparams > 0);
  for (e = 0; e < o.nparams && e < ref.nparams; e++) T_CLOSE(o.params[e], ref.params[e], 1e-5, 1e-4);
  fit_clusters(dev, 1, OPT_PLAIN, 8, &ondev);
  T_CHECK(ondev.nparams == o.nparams && memcmp(ondev.params, o.params, sizeof(double) * (size_t)o.nparams) == 0);
  for (e = 0; e < EPOCHS; e++) T_CHECK(ondev.r[e].loss == o.r[e].loss && ondev.r[e].val_acc == o.r[e].val_acc);
}

/* tr.optimizer: dt_sgd without momentum is the plain step; Adam learns too, to
   other parameters. */
static void test_optimizer_choice(dt_device dev) {
  fit_out plain, sgd, adam;
  int e, differ = 0;
  if (dev.type == DT_CUDA && dev.index != 0) T_SKIP("the trainer uses cuda:0");
  fit_clusters(dev, 0, OPT_PLAIN, 8, &plain);
  fit_clusters(dev, 0, OPT_SGD, 8, &sgd);
  fit_clusters(dev, 0, OPT_ADAM, 8, &adam);
  if (plain.s != DT_OK || sgd.s != DT_OK || adam.s != DT_OK) return;
  T_CHECK(plain.nparams == sgd.nparams && plain.nparams == adam.nparams);
  for (e = 0; e < plain.nparams; e++) {
    T_CLOSE(sgd.params[e], plain.params[e], 1e-6, 1e-5);
    if (fabs(adam.params[e] - plain.params[e]) > 1e-3) differ++;
  }
  T_CHECK_MSG(differ > plain.nparams / 2, "Adam's parameters differ from SGD's in only %d of %d", differ, plain.nparams);
  T_CHECK_MSG(adam.r[EPOCHS - 1].train_acc == 1.0 && adam.r[EPOCHS - 1].val_acc == 1.0, "Adam: train acc %.4f, val acc %.4f",
              adam.r[EPOCHS - 1].train_acc, adam.r[EPOCHS - 1].val_acc);
}

/* Where the emulator counts them: the device-to-host reads do not grow with the
   steps (8 or 15 an epoch: the same count), and they are at most four an epoch, all at
   the epoch's one synchronizing point: the sums, in one copy, and the CUDA backend's own
   records of the labels the cross-entropy saw and (data on the device) of the indices
   dt_index_select followed. With the labels on the device, two more: their range,
   checked once a call. */
static void test_one_read_per_epoch(dt_device dev) {
  fit_out o, o4;
  int ondev;
  if (dev.type == DT_CPU) T_SKIP("counts device-to-host copies");
  if (dev.index != 0) T_SKIP("the trainer uses cuda:0");
  if (!HAVE_D2H_COUNT) T_SKIP("device-to-host copies are counted by the emulator only");
  for (ondev = 0; ondev < 2; ondev++) {
    fit_clusters(dev, ondev, OPT_PLAIN, 8, &o);
    fit_clusters(dev, ondev, OPT_PLAIN, 4, &o4);
    T_CHECK_MSG(o.d2h == o4.d2h && o.d2h >= EPOCHS + 2 * (unsigned)ondev && o.d2h <= 4 * EPOCHS + 2 * (unsigned)ondev,
                "data on the %s: %llu and %llu device-to-host copies in %d epochs of 8 and 15 steps", ondev ? "device" : "host",
                o.d2h, o4.d2h, EPOCHS);
  }
}

/* dt_trainer_evaluate against the mathematics: Linear(2, 3) with W = [[1, 0], [0, 1],
   [-1, -1]], b = [0, 0.5, 0] on four points; the mean cross-entropy of the logits
   computed here in double, and 3 of 4 right. MSE: the mean squared error, accuracy NaN. */
static void test_evaluate(dt_device dev) {
  static const float w[6] = {1, 0, 0, 1, -1, -1}, b[3] = {0, 0.5f, 0};
  static const float xs[8] = {1, 2, 3, -1, -2, -2, 0, 0};
  static const int64_t ys[4] = {1, 0, 2, 0};
  dt_module *net = dt_linear(2, 3);
  dt_tensor *wt = dt_from_data(w, dt_shape2(3, 2), DT_F32, dt_cpu()), *bt = dt_from_data(b, dt_shape1(3), DT_F32, dt_cpu());
  dt_tensor *X = dt_from_data(xs, dt_shape2(4, 2), DT_F32, dev), *y = dt_from_data(ys, dt_shape1(4), DT_I64, dev);
  dt_tensor *T = dt_zeros(dt_shape2(4, 3), dev);
  dt_trainer tr;
  double loss = -1, acc = -1, want = 0;
  int i, j;
  if (dev.type == DT_CUDA && dev.index != 0) { dt_module_free(net); dt_release(wt); dt_release(bt); dt_release(X); dt_release(y); dt_release(T); T_SKIP("the trainer uses cuda:0"); }
  { /* parameters require grad: set with grad mode off, as under torch.no_grad() */
    int prev = dt_set_grad_enabled(0);
    T_CHECK(dt_copy_(dt_linear_weight(net), wt) == DT_OK && dt_copy_(dt_linear_bias(net), bt) == DT_OK);
    dt_set_grad_enabled(prev);
  }
  for (i = 0; i < 4; i++) {
    double z[3], mx = -1e300, se = 0;
    for (j = 0; j < 3; j++) { z[j] = w[2 * j] * xs[2 * i] + w[2 * j + 1] * xs[2 * i + 1] + b[j]; if (z[j] > mx) mx = z[j]; }
    for (j = 0; j < 3; j++) se += exp(z[j] - mx);
    want += (mx + log(se) - z[ys[i]]) / 4;
  }
  dt_trainer_init(&tr, 1, dev.type == DT_CUDA ? 1 : 0);
  tr.batch_size = 3; /* two chunks: 3 rows and 1 */
  tr.loss_fn = DT_LOSS_CROSS_ENTROPY;
  T_CHECK_MSG(dt_trainer_evaluate(&tr, net, X, y, &loss, &acc) == DT_OK, "%s", dt_last_error());
  T_CLOSE(loss, want, 1e-6, 1e-6);
  T_CHECK_MSG(acc == 0.75, "accuracy %.6f", acc);
  T_CHECK(dt_trainer_evaluate(&tr, net, X, y, NULL, NULL) == DT_OK);
  /* MSE against zeros: mean of the squared logits */
  tr.loss_fn = DT_LOSS_MSE;
  want = 0;
  for (i = 0; i < 4; i++)
    for (j = 0; j < 3; j++) { double z = w[2 * j] * xs[2 * i] + w[2 * j + 1] * xs[2 * i + 1] + b[j]; want += z * z / 12; }
  T_CHECK_MSG(dt_trainer_evaluate(&tr, net, X, T, &loss, &acc) == DT_OK, "%s", dt_last_error());
  T_CLOSE(loss, want, 1e-6, 1e-6);
  T_CHECK(isnan(acc));
  dt_trainer_free(&tr);
  dt_module_free(net);
  dt_release(wt); dt_release(bt); dt_release(X); dt_release(y); dt_release(T);
}

/* Regression keeps its behaviour: MSE results have NaN accuracies, and the
   validation loss is the model's MSE on the validation set after the epoch. */
static void test_regression_validation(dt_device dev) {
  static const float xs[12] = {1, 0, 0, 1, 1, 1, 2, -1, -1, 2, 0.5f, 0.5f}, ys[6] = {1, -1, 0.5f, 2, 0, 1};
  dt_tensor *X = dt_from_data(xs, dt_shape2(6, 2), DT_F32, dt_cpu()), *y = dt_from_data(ys, dt_shape2(6, 1), DT_F32, dt_cpu());
  dt_module *net = dt_linear(2, 1);
  dt_trainer tr;
  double vloss = -1;
  if (dev.type == DT_CUDA && dev.index != 0) { dt_module_free(net); dt_release(X); dt_release(y); T_SKIP("the trainer uses cuda:0"); }
  dt_manual_seed(1);
  dt_trainer_init(&tr, 3, dev.type == DT_CUDA ? 1 : 0);
  tr.batch_size = 4; tr.quiet = 1;
  T_CHECK_MSG(dt_trainer_fit_val(&tr, net, X, y, X, y) == DT_OK, "%s", dt_last_error());
  T_CHECK(tr.epochs_run == 3 && isnan(tr.last.train_acc) && isnan(tr.last.val_acc));
  T_CHECK(dt_trainer_evaluate(&tr, net, X, y, &vloss, NULL) == DT_OK);
  T_CLOSE(tr.last.val_loss, vloss, 1e-7, 1e-6);
  T_CHECK(tr.last_loss == tr.last.loss && tr.epoch_loss[2] == tr.last.loss);
  T_CHECK(dt_trainer_fit(&tr, net, X, y) == DT_OK && isnan(tr.last.val_loss));
  dt_trainer_free(&tr);
  dt_module_free(net);
  dt_release(X); dt_release(y);
}

/* tr.cuda_graph: a full minibatch's step captured once (after an eager warm-up) and replayed
   gives, epoch by epoch, the results and the parameters of eager training bit for bit, with the
   smaller last minibatch run eagerly: cross-entropy with SGD with momentum (data on the host and
   on the device, a validation set), MSE with plain SGD, a model the trainer trains through
   autograd (a Tanh layer) and that model under autocast BF16; and with the update run eagerly
   after each replay of the gradients: Adam, AdamW with clipping, autocast F16 with its grad
   scaler; and steps that draw (a dropout layer, dropout inside a module's forward with Adam),
   which each replay draws afresh. On every device: a GPU other than cuda:0 is set as the
   trainer's device by hand. */
enum { GR_CE_MOMENTUM, GR_CE_PLAIN_DEV, GR_MSE_AUTOGRAD, GR_MSE_BF16, GR_ADAM, GR_ADAMW_CLIP, GR_MSE_F16, GR_DROPOUT,
       GR_HIDDEN_DROPOUT_ADAM, GR_CASES };
/* dropout written inside a module's forward (no dropout layer to see beforehand) */
static dt_tensor *hidden_dropout(dt_module *m, const dt_tensor *x, void *user) {
  (void)m; (void)user;
  return dt_f_dropout(x, 0.5, 1);
}
/* tanh, as a module a user writes, counting its forward calls: a replay calls none */
static dt_tensor *counted_tanh(dt_module *m, const dt_tensor *x, void *user) {
  (void)m;
  ++*(int *)user;
  return dt_tanh(x);
}
static void fit_graph_case(dt_device dev, int which, int graph, fit_out *o) {
  dt_tensor *X, *y, *Xv, *yv;
  dt_module *net;
  dt_optimizer *opt = NULL;
  dt_trainer tr;
  int mse = which == GR_MSE_AUTOGRAD || which == GR_MSE_BF16 || which == GR_MSE_F16;
  memset(o, 0, sizeof *o);
  three_clusters(NTRAIN, 1, &X, &y);
  three_clusters(NVAL, 2, &Xv, &yv);
  if (mse) { /* targets: the one-hot labels as floats, (n, 3) */
    dt_tensor *oh = dt_one_hot(y, 3), *f = oh ? dt_cast(oh, DT_F32) : NULL;
    dt_release(oh); dt_release(y); y = f;
  }
  if (which == GR_CE_PLAIN_DEV) {
    dt_tensor *a = dt_to(X, dev), *b = dt_to(y, dev);
    dt_release(X); dt_release(y);
    X = a; y = b;
  }
  dt_manual_seed(5);
  if (which == GR_DROPOUT || which == GR_HIDDEN_DROPOUT_ADAM) { /* small_net with dropout after the ReLU */
    net = dt_sequential();
    dt_sequential_add(net, dt_linear(2, 8));
    dt_sequential_add(net, dt_relu_layer());
    dt_sequential_add(net, which == GR_DROPOUT ? dt_dropout(0.25) : dt_module_new("HiddenDropout", hidden_dropout, NULL, NULL));
    dt_sequential_add(net, dt_linear(8, 3));
  } else {
    net = small_net();
  }
  if (mse) dt_sequential_add(net, dt_module_new("CountedTanh", counted_tanh, &o->calls_fwd, NULL));
  dt_trainer_init(&tr, 2, dev.type == DT_CUDA ? 1 : 0);
  if (dev.type == DT_CUDA) tr.device = tr.gpus[0] = dev;
  tr.batch_size = 16; tr.lr = 0.1; tr.quiet = 1; /* 60 rows: 3 full minibatches and one of 12 */
  tr.loss_fn = mse ? DT_LOSS_MSE : DT_LOSS_CROSS_ENTROPY;
  tr.on_epoch = record; tr.user = o;
  tr.cuda_graph = graph;
  if (which == GR_CE_MOMENTUM || which == GR_DROPOUT) tr.optimizer = opt = dt_sgd(net, 0.1, 0.9, 0.01);
  if (which == GR_ADAM || which == GR_HIDDEN_DROPOUT_ADAM) tr.optimizer = opt = dt_adam(net, 0.02, 0.9, 0.999, 1e-8, 0.01);
  if (which == GR_ADAMW_CLIP) { tr.optimizer = opt = dt_adamw(net, 0.02, 0.9, 0.999, 1e-8, 0.01); tr.gradient_clip_val = 0.5; }
  if (which == GR_MSE_BF16) tr.autocast = DT_BF16;
  if (which == GR_MSE_F16) tr.autocast = DT_F16;
  o->s = which == GR_CE_MOMENTUM ? dt_trainer_fit_val(&tr, net, X, y, Xv, yv) : dt_trainer_fit(&tr, net, X, y);
  T_CHECK_MSG(o->s == DT_OK, "case %d, cuda_graph %d: %s", which, graph, dt_last_error());
  T_CHECK(tr.epochs_run == 2 && o->calls == 2);
  o->nparams = params_of(net, o->params, 128);
  dt_optimizer_free(opt);
  dt_trainer_free(&tr);
  dt_module_free(net);
  dt_release(X); dt_release(y); dt_release(Xv); dt_release(yv);
}

/* a module whose forward draws a permutation on the host */
static dt_tensor *host_permutation(dt_module *m, const dt_tensor *x, void *user) {
  dt_tensor *p = dt_randperm(dt_shape_of(x).dims[0], dt_device_of(x)), *y;
  (void)m; (void)user;
  if (!p) return NULL;
  y = dt_index_select(x, 0, p);
  dt_release(p);
  return y;
}

static void test_cuda_graph(dt_device dev) {
  int which, e;
  size_t before = 0, after = 0;
  dt_memory_stats ms;
  /* a GPU's first capture makes its cuBLAS handle and workspace: an empty one first, so that
     the baseline counts them */
  if (dt_graph_begin(dev) == DT_OK) dt_graph_free(dt_graph_end(dev));
  if (dt_memory_stats_get(dev, &ms) == DT_OK) before = ms.allocated;
  for (which = 0; which < GR_CASES; which++) {
    fit_out eager, graphed;
    fit_graph_case(dev, which, 0, &eager);
    fit_graph_case(dev, which, 1, &graphed);
    T_CHECK(eager.nparams > 0 && eager.nparams == graphed.nparams);
    T_CHECK_MSG(memcmp(eager.params, graphed.params, sizeof(double) * (size_t)(eager.nparams > 0 ? eager.nparams : 0)) == 0,
                "case %d: the parameters differ (first %.17g and %.17g)", which, eager.params[0], graphed.params[0]);
    for (e = 0; e < 2; e++) {
      T_CHECK_MSG(memcmp(&eager.r[e].loss, &graphed.r[e].loss, sizeof(double)) == 0 &&
                  memcmp(&eager.r[e].train_acc, &graphed.r[e].train_acc, sizeof(double)) == 0 &&
                  memcmp(&eager.r[e].val_loss, &graphed.r[e].val_loss, sizeof(double)) == 0,
                  "case %d epoch %d: loss %.17g and %.17g", which, e + 1, eager.r[e].loss, graphed.r[e].loss);
    }
    T_CHECK_MSG(eager.r[1].loss < eager.r[0].loss || which == GR_MSE_BF16 || which == GR_MSE_F16, "case %d: %g then %g", which,
                eager.r[0].loss, eager.r[1].loss); /* it learns */
    /* eagerly a forward per minibatch, 4 an epoch; with the graph, epoch 1's warm-up, the
       capture and the smaller last one, then epoch 2's last one */
    if (which == GR_MSE_AUTOGRAD || which == GR_MSE_BF16 || which == GR_MSE_F16) T_CHECK(eager.calls_fwd == 8 && graphed.calls_fwd == 4);
  }
  { /* a step that draws on the host fails at the capture: replays could not draw afresh */
    dt_tensor *X, *y;
    dt_module *net;
    dt_trainer tr;
    dt_status st;
    three_clusters(NTRAIN, 1, &X, &y);
    dt_manual_seed(5);
    net = small_net();
    dt_sequential_add(net, dt_module_new("HostPermutation", host_permutation, NULL, NULL));
    dt_trainer_init(&tr, 2, dev.type == DT_CUDA ? 1 : 0);
    if (dev.type == DT_CUDA) tr.device = tr.gpus[0] = dev;
    tr.batch_size = 16; tr.quiet = 1; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.cuda_graph = 1;
    st = dt_trainer_fit(&tr, net, X, y);
    T_CHECK_MSG(st == DT_ERR_UNSUPPORTED && strstr(dt_last_error(), "dt_randperm") && strstr(dt_last_error(), "capture"), "%d: %s",
                (int)st, dt_last_error());
    dt_trainer_free(&tr);
    dt_module_free(net);
    dt_release(X); dt_release(y);
  }
  /* the graph and its inputs went with the fit */
  if (dt_memory_stats_get(dev, &ms) == DT_OK) after = ms.allocated;
  T_CHECK_MSG(after == before, "%llu bytes allocated, %llu before", (unsigned long long)after, (unsigned long long)before);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_learns_clusters);
  T_RUN_ALL_DEVICES(test_optimizer_choice);
  T_RUN_ALL_DEVICES(test_one_read_per_epoch);
  T_RUN_ALL_DEVICES(test_evaluate);
  T_RUN_ALL_DEVICES(test_regression_validation);
  T_RUN_ALL_DEVICES(test_cuda_graph);
  return t_finish();
}
