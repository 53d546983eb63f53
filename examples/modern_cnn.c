/* D2L chapter 8, the modern convolutional networks, on Fashion-MNIST, trained by the trainer
   through autograd:
     modern_cnn --model alexnet|vgg|nin|googlenet|bnlenet|densenet|regnet [--summary] [--size S]
                [the options of every CNN example: examples/cnn_train.h]
   Each network as D2L writes it, with lazy layers (in_channels 0) as D2L's LazyConv2d,
   LazyLinear and LazyBatchNorm:
     alexnet    8.1  five convolutions, three max pools, two 4096-wide linear layers with dropout
     vgg        8.2  VGG-11's blocks with a quarter of the channels, as D2L trains it
     nin        8.3  NiN blocks (a convolution and two 1x1 ones), dropout, global average pooling
     googlenet  8.4  nine Inception blocks: four paths concatenated along the channels (dt_cat)
     bnlenet    8.5  LeNet with batch norm after each convolution and linear layer
     densenet   8.7  four dense blocks (each convolution's output concatenated to its input) with
                     transition blocks between them
     regnet     8.8  RegNetX-32: ResNeXt blocks (grouped convolutions), depths 4 and 6
   (D2L 8.6's ResNet-18 is examples/resnet.c.) Inception, DenseBlock and ResNeXtBlock are modules
   written here with dt_module_new: their children are built-in layers, their forward is tensor
   operations, autograd gives their backward.
   D2L's hyperparameters: SGD, batch 128, 10 epochs, lr 0.01 (alexnet, vgg, googlenet, densenet),
   0.05 (nin, regnet) or 0.1 (bnlenet); images resized (bilinear) to 224 x 224 (alexnet, vgg, nin),
   96 x 96 (googlenet, densenet, regnet) or kept at 28 x 28 (bnlenet); --size S for another size
   (a CPU trains the small sizes; a size too small for a network is refused with the layer's
   reason). D2L's init_cnn: after one forward on two training images (eval mode) sizes the lazy
   layers, every convolution's and linear layer's weight is xavier_uniform.
   --summary: D2L's layer_summary, the output shape of each top-level layer for one S x S image,
   and exit. bench/modern_cnn_torch.py is the same in PyTorch. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "fashion_data.h"
#include "cnn_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---- */

/* a Sequential of the n layers (each owned: on failure all are freed); NULL, the reason in
   dt_last_error(), if any is NULL or adding fails */
static dt_module *seq_of(dt_module **ls, int n) {
  dt_module *s = dt_sequential();
  int ok = s != NULL, i;
  for (i = 0; i < n; i++) {
    if (ok) ok = dt_sequential_add(s, ls[i]) == DT_OK; /* takes ownership, also on failure */
    else dt_module_free(ls[i]);
  }
  if (ok) return s;
  dt_module_free(s);
  return NULL;
}
#define SEQ(...) seq_of((dt_module *[]){__VA_ARGS__}, (int)(sizeof((dt_module *[]){__VA_ARGS__}) / sizeof(dt_module *)))

/* m's child called name applied to x (NULL x: NULL) */
static dt_tensor *child(dt_module *m, const char *name, const dt_tensor *x) {
  return x ? dt_forward(dt_module_get_child(m, name), x) : NULL;
}

/* relu(t), releasing t */
static dt_tensor *relu_of(dt_tensor *t) {
  dt_tensor *r = t ? dt_relu(t) : NULL;
  dt_release(t);
  return r;
}

/* a module written here: its name, its forward, and n children (each owned) under names[i]; NULL,
   everything freed, if any child is NULL or adding one fails */
static dt_module *block(const char *name, dt_forward_fn fwd, int n, const char *const *names, dt_module **kids) {
  dt_module *m = dt_module_new(name, fwd, NULL, NULL);
  int ok = m != NULL, i;
  for (i = 0; i < n; i++) {
    if (ok) ok = dt_module_add_child(m, names[i], kids[i]) == DT_OK; /* takes ownership, also on failure */
    else dt_module_free(kids[i]);
  }
  if (ok) return m;
  dt_module_free(m);
  return NULL;
}

/* conv: dt_conv2d with in_channels 0 (LazyConv2d) */
static dt_module *conv(int64_t out, int k, int stride, int pad) { return dt_conv2d(0, out, k, stride, pad); }

/* ---- the top-level layers, with the class names layer_summary prints ---- */

#define MAX_TOP 32
typedef struct net_def {
  dt_module *net;
  const char *names[MAX_TOP];
  int n, ok;
} net_def;

/* appends layer (owned) to d->net under the class name cls */
static void add(net_def *d, const char *cls, dt_module *layer) {
  if (!d->ok || d->n >= MAX_TOP) { dt_module_free(layer); d->ok = 0; return; }
  if (dt_sequential_add(d->net, layer) != DT_OK) { d->ok = 0; return; }
  d->names[d->n++] = cls;
}

/* ---- 8.1 AlexNet ---- */
static void alexnet(net_def *d) {
  add(d, "Conv2d", conv(96, 11, 4, 1)); add(d, "ReLU", dt_relu_layer()); add(d, "MaxPool2d", dt_max_pool2d(3, 2, 0));
  add(d, "Conv2d", conv(256, 5, 1, 2)); add(d, "ReLU", dt_relu_layer()); add(d, "MaxPool2d", dt_max_pool2d(3, 2, 0));
  add(d, "Conv2d", conv(384, 3, 1, 1)); add(d, "ReLU", dt_relu_layer());
  add(d, "Conv2d", conv(384, 3, 1, 1)); add(d, "ReLU", dt_relu_layer());
  add(d, "Conv2d", conv(256, 3, 1, 1)); add(d, "ReLU", dt_relu_layer()); add(d, "MaxPool2d", dt_max_pool2d(3, 2, 0));
  add(d, "Flatten", dt_flatten_layer());
  add(d, "Linear", dt_linear(0, 4096)); add(d, "ReLU", dt_relu_layer()); add(d, "Dropout", dt_dropout(0.5));
  add(d, "Linear", dt_linear(0, 4096)); add(d, "ReLU", dt_relu_layer()); add(d, "Dropout", dt_dropout(0.5));
  add(d, "Linear", dt_linear(0, 10));
}

/* ---- 8.2 VGG: num_convs 3x3 convolutions with ReLU, then a 2x2 max pool ---- */
static dt_module *vgg_block(int num_convs, int64_t channels) {
  dt_module *ls[2 * 2 + 1];
  int i, n = 0;
  for (i = 0; i < num_convs; i++) { ls[n++] = conv(channels, 3, 1, 1); ls[n++] = dt_relu_layer(); }
  ls[n++] = dt_max_pool2d(2, 2, 0);
  return seq_of(ls, n);
}

static void vgg(net_def *d) {
  static const int convs[5] = {1, 1, 2, 2, 2};
  static const int64_t channels[5] = {16, 32, 64, 128, 128}; /* VGG-11's (64, 128, 256, 512, 512) / 4 */
  int i;
  for (i = 0; i < 5; i++) add(d, "Sequential", vgg_block(convs[i], channels[i]));
  add(d, "Flatten", dt_flatten_layer());
  add(d, "Linear", dt_linear(0, 4096)); add(d, "ReLU", dt_relu_layer()); add(d, "Dropout", dt_dropout(0.5));
  add(d, "Linear", dt_linear(0, 4096)); add(d, "ReLU", dt_relu_layer()); add(d, "Dropout", dt_dropout(0.5));
  add(d, "Linear", dt_linear(0, 10));
}

/* ---- 8.3 NiN: a convolution and two 1x1 convolutions, each with ReLU ---- */
static dt_module *nin_block(int64_t channels, int k, int stride, int pad) {
  return SEQ(conv(channels, k, stride, pad), dt_relu_layer(), conv(channels, 1, 1, 0), dt_relu_layer(),
             conv(channels, 1, 1, 0), dt_relu_layer());
}

static void nin(net_def *d) {
  add(d, "Sequential", nin_block(96, 11, 4, 0)); add(d, "MaxPool2d", dt_max_pool2d(3, 2, 0));
  add(d, "Sequential", nin_block(256, 5, 1, 2)); add(d, "MaxPool2d", dt_max_pool2d(3, 2, 0));
  add(d, "Sequential", nin_block(384, 3, 1, 1)); add(d, "MaxPool2d", dt_max_pool2d(3, 2, 0));
  add(d, "Dropout", dt_dropout(0.5));
  add(d, "Sequential", nin_block(10, 3, 1, 1));
  add(d, "AdaptiveAvgPool2d", dt_adaptive_avg_pool2d(1, 1)); add(d, "Flatten", dt_flatten_layer());
}

/* ---- 8.4 GoogLeNet ---- */

/* Inception: four paths (1x1; 1x1 then 3x3; 1x1 then 5x5; 3x3 max pool then 1x1), each ending in
   ReLU, concatenated along the channels */
static dt_tensor *inception_forward(dt_module *self, const dt_tensor *x, void *user) {
  dt_tensor *p[4], *t, *y;
  int i;
  (void)user;
  p[0] = relu_of(child(self, "b1_1", x));
  t = relu_of(child(self, "b2_1", x)); p[1] = relu_of(child(self, "b2_2", t)); dt_release(t);
  t = relu_of(child(self, "b3_1", x)); p[2] = relu_of(child(self, "b3_2", t)); dt_release(t);
  t = child(self, "b4_1", x); p[3] = relu_of(child(self, "b4_2", t)); dt_release(t);
  y = p[0] && p[1] && p[2] && p[3] ? dt_cat((const dt_tensor *const *)p, 4, 1) : NULL;
  for (i = 0; i < 4; i++) dt_release(p[i]);
  return y;
}

static dt_module *inception(int64_t c1, int64_t c2a, int64_t c2b, int64_t c3a, int64_t c3b, int64_t c4) {
  static const char *const names[7] = {"b1_1", "b2_1", "b2_2", "b3_1", "b3_2", "b4_1", "b4_2"};
  dt_module *kids[7];
  kids[0] = conv(c1, 1, 1, 0);
  kids[1] = conv(c2a, 1, 1, 0); kids[2] = conv(c2b, 3, 1, 1);
  kids[3] = conv(c3a, 1, 1, 0); kids[4] = conv(c3b, 5, 1, 2);
  kids[5] = dt_max_pool2d(3, 1, 1); kids[6] = conv(c4, 1, 1, 0);
  return block("Inception", inception_forward, 7, names, kids);
}

static void googlenet(net_def *d) {
  add(d, "Sequential", SEQ(conv(64, 7, 2, 3), dt_relu_layer(), dt_max_pool2d(3, 2, 1)));
  add(d, "Sequential", SEQ(conv(64, 1, 1, 0), dt_relu_layer(), conv(192, 3, 1, 1), dt_relu_layer(), dt_max_pool2d(3, 2, 1)));
  add(d, "Sequential", SEQ(inception(64, 96, 128, 16, 32, 32), inception(128, 128, 192, 32, 96, 64), dt_max_pool2d(3, 2, 1)));
  add(d, "Sequential", SEQ(inception(192, 96, 208, 16, 48, 64), inception(160, 112, 224, 24, 64, 64),
                           inception(128, 128, 256, 24, 64, 64), inception(112, 144, 288, 32, 64, 64),
                           inception(256, 160, 320, 32, 128, 128), dt_max_pool2d(3, 2, 1)));
  add(d, "Sequential", SEQ(inception(256, 160, 320, 32, 128, 128), inception(384, 192, 384, 48, 128, 128),
                           dt_adaptive_avg_pool2d(1, 1), dt_flatten_layer()));
  add(d, "Linear", dt_linear(0, 10));
}

/* ---- 8.5 LeNet with batch norm ---- */
static void bnlenet(net_def *d) {
  add(d, "Conv2d", conv(6, 5, 1, 0)); add(d, "BatchNorm2d", dt_batch_norm(0)); add(d, "Sigmoid", dt_sigmoid_layer());
  add(d, "AvgPool2d", dt_avg_pool2d(2, 2, 0));
  add(d, "Conv2d", conv(16, 5, 1, 0)); add(d, "BatchNorm2d", dt_batch_norm(0)); add(d, "Sigmoid", dt_sigmoid_layer());
  add(d, "AvgPool2d", dt_avg_pool2d(2, 2, 0));
  add(d, "Flatten", dt_flatten_layer());
  add(d, "Linear", dt_linear(0, 120)); add(d, "BatchNorm1d", dt_batch_norm(0)); add(d, "Sigmoid", dt_sigmoid_layer());
  add(d, "Linear", dt_linear(0, 84)); add(d, "BatchNorm1d", dt_batch_norm(0)); add(d, "Sigmoid", dt_sigmoid_layer());
  add(d, "Linear", dt_linear(0, 10));
}

/* ---- 8.7 DenseNet ---- */

/* a dense block: each convolution block's output concatenated to its input along the channels */
static dt_tensor *dense_forward(dt_module *self, const dt_tensor *x, void *user) {
  dt_module *net = dt_module_get_child(self, "net");
  int i, n = net ? dt_sequential_len(net) : 0;
  dt_tensor *cur = dt_retain((dt_tensor *)x);
  (void)user;
  for (i = 0; i < n && cur; i++) {
    dt_tensor *y = dt_forward(dt_sequential_get(net, i), cur), *parts[2], *next;
    parts[0] = cur; parts[1] = y;
    next = y ? dt_cat((const dt_tensor *const *)parts, 2, 1) : NULL;
    dt_release(y); dt_release(cur);
    cur = next;
  }
  return cur;
}

static dt_module *conv_block(int64_t channels) { return SEQ(dt_batch_norm(0), dt_relu_layer(), conv(channels, 3, 1, 1)); }

static dt_module *dense_block(int num_convs, int64_t channels) {
  static const char *const names[1] = {"net"};
  dt_module *ls[8], *kids[1];
  int i;
  for (i = 0; i < num_convs; i++) ls[i] = conv_block(channels);
  kids[0] = seq_of(ls, num_convs);
  return block("DenseBlock", dense_forward, 1, names, kids);
}

static dt_module *transition_block(int64_t channels) {
  return SEQ(dt_batch_norm(0), dt_relu_layer(), conv(channels, 1, 1, 0), dt_avg_pool2d(2, 2, 0));
}

/* ResNet's first block (D2L 8.6's b1), which DenseNet begins with */
static dt_module *b1_resnet(void) { return SEQ(conv(64, 7, 2, 3), dt_batch_norm(0), dt_relu_layer(), dt_max_pool2d(3, 2, 1)); }

static void densenet(net_def *d) {
  int64_t channels = 64, growth = 32;
  int i, convs = 4;
  add(d, "Sequential", b1_resnet());
  for (i = 0; i < 4; i++) {
    add(d, "DenseBlock", dense_block(convs, growth));
    channels += convs * growth;
    if (i != 3) {
      channels /= 2;
      add(d, "Sequential", transition_block(channels));
    }
  }
  add(d, "Sequential", SEQ(dt_batch_norm(0), dt_relu_layer(), dt_adaptive_avg_pool2d(1, 1), dt_flatten_layer(),
                           dt_linear(0, 10)));
}

/* ---- 8.8 RegNetX-32 ---- */

/* ResNeXt block: 1x1, grouped 3x3 (stride), 1x1, each with batch norm, ReLU after the first two;
   the input (through a 1x1 convolution and batch norm where there is conv4) added, then ReLU */
static dt_tensor *resnext_forward(dt_module *self, const dt_tensor *x, void *user) {
  dt_tensor *y, *t, *skip = NULL, *sum;
  (void)user;
  t = child(self, "conv1", x); y = relu_of(child(self, "bn1", t)); dt_release(t);
  t = child(self, "conv2", y); dt_release(y); y = relu_of(child(self, "bn2", t)); dt_release(t);
  t = child(self, "conv3", y); dt_release(y); y = child(self, "bn3", t); dt_release(t);
  if (dt_module_get_child(self, "conv4")) {
    t = child(self, "conv4", x); skip = child(self, "bn4", t); dt_release(t);
    if (!skip) { dt_release(y); return NULL; }
  }
  sum = y ? dt_add(y, skip ? skip : x) : NULL;
  dt_release(y); dt_release(skip);
  return relu_of(sum);
}

static dt_module *resnext(int64_t channels, int groups, double bot_mul, int use_1x1conv, int stride) {
  static const char *const names[8] = {"conv1", "conv2", "conv3", "bn1", "bn2", "bn3", "conv4", "bn4"};
  int64_t bot = (int64_t)(channels * bot_mul + 0.5);
  dt_module *kids[8];
  kids[0] = conv(bot, 1, 1, 0);
  kids[1] = dt_conv2d_ex(0, bot, 3, 3, stride, stride, 1, 1, (int)(bot / groups), 1);
  kids[2] = conv(channels, 1, 1, 0);
  kids[3] = dt_batch_norm(0); kids[4] = dt_batch_norm(0); kids[5] = dt_batch_norm(0);
  if (use_1x1conv) { kids[6] = conv(channels, 1, stride, 0); kids[7] = dt_batch_norm(0); }
  return block("ResNeXtBlock", resnext_forward, use_1x1conv ? 8 : 6, names, kids);
}

static void regnet(net_def *d) {
  static const int depths[2] = {4, 6};
  static const int64_t channels[2] = {32, 80};
  const int groups = 16;
  const double bot_mul = 1;
  int st, k;
  add(d, "Sequential", SEQ(conv(32, 3, 2, 1), dt_batch_norm(0), dt_relu_layer()));
  for (st = 0; st < 2; st++) {
    dt_module *ls[8];
    for (k = 0; k < depths[st]; k++) ls[k] = resnext(channels[st], groups, bot_mul, k == 0, k == 0 ? 2 : 1);
    add(d, "Sequential", seq_of(ls, depths[st]));
  }
  add(d, "Sequential", SEQ(dt_adaptive_avg_pool2d(1, 1), dt_flatten_layer(), dt_linear(0, 10)));
}

/* ---- the models ---- */

typedef struct model {
  const char *name, *title;
  void (*build)(net_def *d);
  double lr;
  int size;
} model;

static const model MODELS[] = {
  {"alexnet", "AlexNet", alexnet, 0.01, 224},
  {"vgg", "VGG-11 (a quarter of the channels)", vgg, 0.01, 224},
  {"nin", "NiN", nin, 0.05, 224},
  {"googlenet", "GoogLeNet", googlenet, 0.01, 96},
  {"bnlenet", "LeNet with batch norm", bnlenet, 0.1, 28},
  {"densenet", "DenseNet", densenet, 0.01, 96},
  {"regnet", "RegNetX-32", regnet, 0.05, 96},
};

/* D2L's layer_summary: each top-level layer's output shape for one s x s image (eval mode, no grad) */
static int summary(const net_def *d, int s) {
  dt_tensor *x = dt_zeros(dt_shape4(1, 1, s, s), dt_cpu());
  int i, k, prev = dt_set_grad_enabled(0);
  if (x && dt_module_train(d->net, 0) != DT_OK) { dt_release(x); x = NULL; }
  for (i = 0; i < d->n && x; i++) {
    dt_tensor *y = dt_forward(dt_sequential_get(d->net, i), x);
    dt_release(x);
    x = y;
    if (!y) break;
    printf("%s output shape: (", d->names[i]);
    for (k = 0; k < dt_shape_of(y).ndim; k++) printf("%s%lld", k ? ", " : "", (long long)dt_shape_of(y).dims[k]);
    printf(")\n");
  }
  dt_set_grad_enabled(prev);
  if (!x) fprintf(stderr, "modern_cnn: %s\n", dt_last_error());
  dt_release(x);
  return x ? 0 : 1;
}

/* sizes the lazy layers with one forward on X's first two images (eval mode, no grad), then D2L's
   init_cnn */
static dt_status init_net(dt_module *net, const dt_tensor *X) {
  dt_tensor *x2 = dt_slice(X, 0, 0, 2), *y;
  int prev = dt_set_grad_enabled(0);
  dt_status s = x2 ? dt_module_train(net, 0) : dt_last_status();
  y = s == DT_OK ? dt_forward(net, x2) : NULL;
  dt_set_grad_enabled(prev);
  if (s == DT_OK && !y) s = dt_last_status();
  dt_release(x2); dt_release(y);
  return s == DT_OK ? cnn_xavier(net) : s;
}

/* why NULL (--help): the usage on stdout, exit status 0 */
static int usage(const char *why) {
  if (why) fprintf(stderr, "modern_cnn: %s\n", why);
  fprintf(why ? stderr : stdout, "usage: modern_cnn --model alexnet|vgg|nin|googlenet|bnlenet|densenet|regnet [--summary] "
          "[--size S] [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--seed N] [--data DIR] [--csv PATH] "
          "[--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]\n");
  return why ? 2 : 0;
}

int main(int argc, char **argv) {
  int size = 0, show = 0, i, rc = 0;
  const model *m = NULL;
  cnn_opts o;
  fashion_set tr_set, te_set;
  dt_tensor *X = NULL, *y = NULL, *Xt = NULL, *yt = NULL;
  net_def d;
  char err[1024];
  const char *why = NULL;

  cnn_opts_init(&o, 0, "build/modern_cnn.csv");
  for (i = 1; i < argc; i++) {
    int r = cnn_parse_opt(&o, argc, argv, &i, &why);
    size_t k;
    if (r < 0) return usage(why);
    if (r > 0) continue;
    if (strcmp(argv[i], "--summary") == 0) { show = 1; continue; }
    if (i + 1 >= argc || (strcmp(argv[i], "--model") != 0 && strcmp(argv[i], "--size") != 0))
      return usage(strcmp(argv[i], "--model") == 0 || strcmp(argv[i], "--size") == 0 ? "an option lacks its value" : cnn_unknown(argv[i]));
    if (strcmp(argv[i], "--size") == 0) { size = atoi(argv[++i]); continue; }
    for (k = 0, m = NULL; k < sizeof MODELS / sizeof MODELS[0]; k++)
      if (strcmp(argv[i + 1], MODELS[k].name) == 0) m = &MODELS[k];
    if (!m) return usage("--model is alexnet, vgg, nin, googlenet, bnlenet, densenet or regnet");
    i++;
  }
  if (!m) return usage("--model is needed");
  if ((why = cnn_opts_check(&o))) return usage(why);
  if (size == 0) size = m->size;
  if (o.lr == 0) o.lr = m->lr;
  if (size < 28 || size > 224) return usage("--size must be in [28, 224]");

  memset(&d, 0, sizeof d);
  dt_manual_seed(o.seed);
  d.net = dt_sequential();
  d.ok = d.net != NULL;
  m->build(&d);
  if (!d.ok) {
    fprintf(stderr, "modern_cnn: %s\n", dt_last_error());
    dt_module_free(d.net);
    return 1;
  }
  if (show) {
    rc = summary(&d, size);
    dt_module_free(d.net);
    return rc;
  }
  if (fashion_load(o.data, "train", o.ntrain, &tr_set, err, sizeof err) != 0 ||
      fashion_load(o.data, "t10k", o.ntest, &te_set, err, sizeof err) != 0) {
    fprintf(stderr, "modern_cnn: %s\n", err);
    fashion_free(&tr_set);
    dt_module_free(d.net);
    return strstr(err, "is not installed") ? 77 : 1;
  }
  if (cnn_tensors(&tr_set, size, &X, &y) != 0 || cnn_tensors(&te_set, size, &Xt, &yt) != 0) {
    fprintf(stderr, "modern_cnn: %s\n", X || dt_last_status() != DT_OK ? dt_last_error() : "out of host memory");
    rc = 1;
  } else if (init_net(d.net, X) != DT_OK) {
    fprintf(stderr, "modern_cnn: %s\n", dt_last_error());
    rc = 1;
  } else {
    rc = cnn_fit("modern_cnn", m->title, d.net, &o, X, y, Xt, yt);
  }
  dt_module_free(d.net);
  dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
  fashion_free(&tr_set); fashion_free(&te_set);
  return rc;
}
