/* D2L 8.6: ResNet-18 on Fashion-MNIST, trained by the trainer through autograd.
     resnet [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--size S] [--seed N]
            [--data DIR] [--csv PATH] [--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]
   The network as D2L writes it: b1 = Conv2d(1, 64, 7, stride 2, padding 3), BatchNorm2d, ReLU,
   MaxPool2d(3, 2, 1); then four stages of two residual blocks each, 64, 128, 256 and 512 channels
   (each stage after the first halves the size: its first block's 3x3 convolution has stride 2
   and a 1x1 convolution carries the input); AdaptiveAvgPool2d((1, 1)), Flatten, Linear(512, 10).
   A residual block: Y = relu(bn1(conv1(X))); Y = bn2(conv2(Y)); X = conv3(X) where there is one;
   relu(Y + X). It is a module written here with dt_module_new: its children are built-in layers,
   its forward is tensor operations, autograd gives its backward.
   SGD lr 0.01, batch 128, 10 epochs, images resized to 96 x 96 (bilinear, as
   torch.nn.functional.interpolate with align_corners=False), PyTorch's default initialisation.
   --size 28 keeps the images as they are (about 12 times less work: the size a CPU can train).
   One progress line per epoch, a CSV (default build/resnet.csv).
   --min-acc X: exit 1 unless the last test accuracy is >= X and the train loss fell.
   --autocast bf16|f16: the trainer's tr.autocast; --cuda-graph: tr.cuda_graph; --tf32: TF32 tensor
   cores for F32 products on a GPU (as lenet's).
   bench/resnet_torch.py is the same training in PyTorch. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "fashion_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_log { FILE *csv; double first_loss, last_loss, test_acc; } run_log;

static void on_epoch(const dt_trainer *tr, const dt_epoch_result *r, void *user) {
  run_log *lg = (run_log *)user;
  printf("epoch %2d/%d  train loss %.4f  train acc %.4f  test acc %.4f  %.2f s\n", r->epoch, tr->max_epochs, r->loss,
         r->train_acc, r->val_acc, r->seconds);
  fflush(stdout);
  if (lg->csv) fprintf(lg->csv, "%d,%.6f,%.6f,%.6f,%.6f\n", r->epoch, r->loss, r->train_acc, r->val_acc, r->seconds);
  if (r->epoch == 1) lg->first_loss = r->loss;
  lg->last_loss = r->loss;
  lg->test_acc = r->val_acc;
}

/* Bilinear resize of one 28 x 28 plane to s x s, align_corners=False: output pixel i samples
   the input at (i + 0.5) 28 / s - 0.5, clamped at 0, between its two neighbours. */
static void resize_plane(const unsigned char *in, int s, float *out) {
  int i, j;
  double scale = 28.0 / s;
  for (i = 0; i < s; i++) {
    double fy = (i + 0.5) * scale - 0.5, wy;
    int y0, y1;
    if (fy < 0) fy = 0;
    y0 = (int)fy; y1 = y0 < 27 ? y0 + 1 : 27; wy = fy - y0;
    for (j = 0; j < s; j++) {
      double fx = (j + 0.5) * scale - 0.5, wx, top, bot;
      int x0, x1;
      if (fx < 0) fx = 0;
      x0 = (int)fx; x1 = x0 < 27 ? x0 + 1 : 27; wx = fx - x0;
      top = in[y0 * 28 + x0] * (1 - wx) + in[y0 * 28 + x1] * wx;
      bot = in[y1 * 28 + x0] * (1 - wx) + in[y1 * 28 + x1] * wx;
      out[i * s + j] = (float)((top * (1 - wy) + bot * wy) / 255.0);
    }
  }
}

/* images (n, 1, s, s) float32 in [0, 1], labels (n,) int64, on the CPU */
static int to_tensors(const fashion_set *st, int s, dt_tensor **X, dt_tensor **y) {
  float *buf = (float *)malloc((size_t)st->n * (size_t)s * (size_t)s * sizeof(float));
  dt_tensor *yu = dt_from_data(st->labels, dt_shape1(st->n), DT_U8, dt_cpu());
  int64_t k;
  *X = NULL;
  if (buf) {
    for (k = 0; k < st->n; k++) resize_plane(st->images + k * 784, s, buf + k * s * s);
    *X = dt_from_data(buf, dt_shape4(st->n, 1, s, s), DT_F32, dt_cpu());
  }
  *y = yu ? dt_cast(yu, DT_I64) : NULL;
  free(buf);
  dt_release(yu);
  return *X && *y ? 0 : -1;
}

/* ---- the residual block: a module written by the user ---- */

/* x: (n, c, h, w) -> (n, channels, h / stride, w / stride) */
static dt_tensor *residual_forward(dt_module *self, const dt_tensor *x, void *user) {
  dt_module *conv3 = dt_module_get_child(self, "conv3");
  dt_tensor *a = dt_forward(dt_module_get_child(self, "conv1"), x);
  dt_tensor *b = a ? dt_forward(dt_module_get_child(self, "bn1"), a) : NULL;
  dt_tensor *c = b ? dt_relu(b) : NULL;
  dt_tensor *d = c ? dt_forward(dt_module_get_child(self, "conv2"), c) : NULL;
  dt_tensor *e = d ? dt_forward(dt_module_get_child(self, "bn2"), d) : NULL;
  dt_tensor *skip = conv3 ? dt_forward(conv3, x) : NULL;
  dt_tensor *sum = e && (skip || !conv3) ? dt_add(e, skip ? skip : x) : NULL;
  dt_tensor *out = sum ? dt_relu(sum) : NULL;
  (void)user;
  dt_release(a); dt_release(b); dt_release(c); dt_release(d); dt_release(e); dt_release(skip); dt_release(sum);
  return out;
}

static dt_module *residual(int64_t in, int64_t channels, int use_1x1conv, int stride) {
  dt_module *m = dt_module_new("Residual", residual_forward, NULL, NULL);
  int ok = m != NULL;
  ok = ok && dt_module_add_child(m, "conv1", dt_conv2d(in, channels, 3, stride, 1)) == DT_OK;
  ok = ok && dt_module_add_child(m, "conv2", dt_conv2d(channels, channels, 3, 1, 1)) == DT_OK;
  if (use_1x1conv) ok = ok && dt_module_add_child(m, "conv3", dt_conv2d(in, channels, 1, stride, 0)) == DT_OK;
  ok = ok && dt_module_add_child(m, "bn1", dt_batch_norm(channels)) == DT_OK;
  ok = ok && dt_module_add_child(m, "bn2", dt_batch_norm(channels)) == DT_OK;
  if (ok) return m;
  dt_module_free(m);
  return NULL;
}

/* D2L's ResNet18: b1, then the stages ((2, 64), (2, 128), (2, 256), (2, 512)), then the head */
static dt_module *resnet18(void) {
  static const int64_t ch[4] = {64, 128, 256, 512};
  dt_module *net = dt_sequential();
  int ok = net != NULL, st, k;
  int64_t in = 64;
#define ADD(layer) (ok = ok && dt_sequential_add(net, (layer)) == DT_OK)
  ADD(dt_conv2d(1, 64, 7, 2, 3)); ADD(dt_batch_norm(64)); ADD(dt_relu_layer()); ADD(dt_max_pool2d(3, 2, 1));
  for (st = 0; st < 4; st++) {
    for (k = 0; k < 2; k++) {
      int first = k == 0 && st > 0;
      ADD(residual(in, ch[st], first, first ? 2 : 1));
      in = ch[st];
    }
  }
  ADD(dt_adaptive_avg_pool2d(1, 1)); ADD(dt_flatten_layer()); ADD(dt_linear(512, 10));
#undef ADD
  if (ok) return net;
  dt_module_free(net);
  return NULL;
}

static int usage(const char *why) {
  fprintf(stderr, "resnet: %s\nusage: resnet [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--size S] [--seed N] "
          "[--data DIR] [--csv PATH] [--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]\n", why);
  return 2;
}

int main(int argc, char **argv) {
  int graph = 0, tf32 = 0;
  dt_dtype autocast = DT_F32;
  int epochs = 10, size = 96, i, rc = 0, csv_ok;
  int64_t ntrain = 0, ntest = 0, batch = 128;
  double lr = 0.01, min_acc = -1;
  unsigned long long seed = 0;
  const char *csv_path = "build/resnet.csv";
  const char *data = getenv("FASHION_MNIST_DIR") ? getenv("FASHION_MNIST_DIR") : FASHION_DEFAULT_DIR;
  fashion_set tr_set, te_set;
  dt_tensor *X = NULL, *y = NULL, *Xt = NULL, *yt = NULL;
  dt_module *net = NULL;
  dt_optimizer *opt = NULL;
  dt_trainer tr;
  run_log lg;
  char err[1024], dn[48];
  FILE *csv;

  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--cuda-graph") == 0) { graph = 1; continue; }
    if (strcmp(a, "--tf32") == 0) { tf32 = 1; continue; }
    if (!v) return usage("an option lacks its value");
    if (strcmp(a, "--epochs") == 0) epochs = atoi(v);
    else if (strcmp(a, "--train") == 0) ntrain = atoll(v);
    else if (strcmp(a, "--test") == 0) ntest = atoll(v);
    else if (strcmp(a, "--data") == 0) data = v;
    else if (strcmp(a, "--csv") == 0) csv_path = v;
    else if (strcmp(a, "--lr") == 0) lr = atof(v);
    else if (strcmp(a, "--batch") == 0) batch = atoll(v);
    else if (strcmp(a, "--size") == 0) size = atoi(v);
    else if (strcmp(a, "--seed") == 0) seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--min-acc") == 0) min_acc = atof(v);
    else if (strcmp(a, "--autocast") == 0) {
      if (strcmp(v, "bf16") == 0) autocast = DT_BF16;
      else if (strcmp(v, "f16") == 0) autocast = DT_F16;
      else if (strcmp(v, "f32") == 0) autocast = DT_F32;
      else return usage("--autocast is bf16, f16 or f32");
    }
    else return usage("unknown option");
    i++;
  }
  if (epochs < 1 || batch < 1 || ntrain < 0 || ntest < 0) return usage("--epochs and --batch must be positive, --train and --test >= 0");
  if (size < 28 || size > 224) return usage("--size must be in [28, 224]");
  if (fashion_load(data, "train", ntrain, &tr_set, err, sizeof err) != 0 ||
      fashion_load(data, "t10k", ntest, &te_set, err, sizeof err) != 0) {
    fprintf(stderr, "resnet: %s\n", err);
    fashion_free(&tr_set);
    return strstr(err, "is not installed") ? 77 : 1;
  }
  memset(&lg, 0, sizeof lg);
  if (to_tensors(&tr_set, size, &X, &y) != 0 || to_tensors(&te_set, size, &Xt, &yt) != 0) {
    fprintf(stderr, "resnet: %s\n", X || dt_last_status() != DT_OK ? dt_last_error() : "out of host memory");
    rc = 1;
    goto out;
  }
  dt_manual_seed(seed);
  if (!(net = resnet18()) || !(opt = dt_sgd(net, lr, 0.0, 0.0))) {
    fprintf(stderr, "resnet: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  dt_trainer_init(&tr, epochs, 1);
  tr.batch_size = batch; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.quiet = 1; tr.optimizer = opt;
  tr.on_epoch = on_epoch; tr.user = &lg;
  tr.autocast = autocast; tr.cuda_graph = graph;
  if (tf32) dt_set_float32_matmul_precision("high");
  printf("ResNet-18 on %s: %lld training and %lld test examples at %dx%d, lr %g, batch %lld\n",
         dt_device_str(tr.device, dn, sizeof dn), (long long)tr_set.n, (long long)te_set.n, size, size, lr, (long long)batch);
  if (!(csv = fopen(csv_path, "w"))) fprintf(stderr, "resnet: cannot write %s: %s\n", csv_path, strerror(errno));
  if (csv) fprintf(csv, "epoch,train_loss,train_acc,test_acc,seconds\n");
  lg.csv = csv;
  if (dt_trainer_fit_val(&tr, net, X, y, Xt, yt) != DT_OK) {
    fprintf(stderr, "resnet: %s\n", dt_last_error());
    rc = 1;
  } else if (min_acc >= 0 && (!(lg.test_acc >= min_acc) || (epochs > 1 && !(lg.last_loss < lg.first_loss)))) {
    fprintf(stderr, "resnet: test accuracy %.4f (want >= %.4f), train loss %.4f in the first epoch and %.4f in the last\n",
            lg.test_acc, min_acc, lg.first_loss, lg.last_loss);
    rc = 1;
  }
  csv_ok = csv && !ferror(csv);
  if (csv && fclose(csv) != 0) csv_ok = 0;
  if (!csv_ok) { printf("%s not written\n", csv_path); if (rc == 0) rc = 1; }
  else printf("wrote %s\n", csv_path);
  dt_trainer_free(&tr);
out:
  dt_optimizer_free(opt);
  dt_module_free(net);
  dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
  fashion_free(&tr_set); fashion_free(&te_set);
  return rc;
}
