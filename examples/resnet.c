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
   The other options are those of every CNN example (examples/cnn_train.h).
   bench/resnet_torch.py is the same training in PyTorch. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "fashion_data.h"
#include "cnn_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* why NULL (--help): the usage on stdout, exit status 0 */
static int usage(const char *why) {
  if (why) fprintf(stderr, "resnet: %s\n", why);
  fprintf(why ? stderr : stdout, "usage: resnet [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--size S] [--seed N] "
          "[--data DIR] [--csv PATH] [--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]\n");
  return why ? 2 : 0;
}

int main(int argc, char **argv) {
  int size = 96, i, rc = 0;
  cnn_opts o;
  fashion_set tr_set, te_set;
  dt_tensor *X = NULL, *y = NULL, *Xt = NULL, *yt = NULL;
  dt_module *net = NULL;
  char err[1024];
  const char *why = NULL;

  cnn_opts_init(&o, 0.01, "build/resnet.csv");
  for (i = 1; i < argc; i++) {
    int r = cnn_parse_opt(&o, argc, argv, &i, &why);
    if (r < 0) return usage(why);
    if (r > 0) continue;
    if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) size = atoi(argv[++i]);
    else return usage(strcmp(argv[i], "--size") == 0 ? "an option lacks its value" : cnn_unknown(argv[i]));
  }
  if ((why = cnn_opts_check(&o))) return usage(why);
  if (size < 28 || size > 224) return usage("--size must be in [28, 224]");
  if (fashion_load(o.data, "train", o.ntrain, &tr_set, err, sizeof err) != 0 ||
      fashion_load(o.data, "t10k", o.ntest, &te_set, err, sizeof err) != 0) {
    fprintf(stderr, "resnet: %s\n", err);
    fashion_free(&tr_set);
    return strstr(err, "is not installed") ? 77 : 1;
  }
  if (cnn_tensors(&tr_set, size, &X, &y) != 0 || cnn_tensors(&te_set, size, &Xt, &yt) != 0) {
    fprintf(stderr, "resnet: %s\n", X || dt_last_status() != DT_OK ? dt_last_error() : "out of host memory");
    rc = 1;
    goto out;
  }
  dt_manual_seed(o.seed);
  if (!(net = resnet18())) {
    fprintf(stderr, "resnet: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  rc = cnn_fit("resnet", "ResNet-18", net, &o, X, y, Xt, yt);
out:
  dt_module_free(net);
  dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
  fashion_free(&tr_set); fashion_free(&te_set);
  return rc;
}
