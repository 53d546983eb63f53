/* D2L 7.6: LeNet on Fashion-MNIST, trained by the trainer through autograd.
     lenet [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--seed N] [--relu-max]
           [--data DIR] [--csv PATH] [--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]
   The network as D2L writes it: Conv2d(1, 6, 5, padding=2), Sigmoid, AvgPool2d(2, 2),
   Conv2d(6, 16, 5), Sigmoid, AvgPool2d(2, 2), Flatten, Linear(400, 120), Sigmoid,
   Linear(120, 84), Sigmoid, Linear(84, 10); SGD lr 0.1, batch 128, 10 epochs; the weights of
   every Conv2d and Linear xavier_uniform (D2L's init_cnn), the biases PyTorch's default.
   --relu-max: ReLU for Sigmoid and MaxPool2d for AvgPool2d. One progress line per epoch, a CSV
   (default build/lenet.csv) and, with gnuplot, its curves as SVG beside it.
   The other options are those of every CNN example (examples/cnn_train.h). */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "fashion_data.h"
#include "cnn_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* images (n, 1, 28, 28) float32 in [0, 1], labels (n,) int64, on the CPU */
static int to_tensors(const fashion_set *s, dt_tensor **X, dt_tensor **y) {
  dt_tensor *xu = dt_from_data(s->images, dt_shape4(s->n, 1, 28, 28), DT_U8, dt_cpu());
  dt_tensor *yu = dt_from_data(s->labels, dt_shape1(s->n), DT_U8, dt_cpu());
  dt_tensor *xf = xu ? dt_cast(xu, DT_F32) : NULL;
  *X = xf ? dt_mul_scalar(xf, 1.0 / 255.0) : NULL;
  *y = yu ? dt_cast(yu, DT_I64) : NULL;
  dt_release(xu); dt_release(yu); dt_release(xf);
  return *X && *y ? 0 : -1;
}

static dt_module *lenet(int relu_max) {
  dt_module *net = dt_sequential();
  int ok = net != NULL;
#define ADD(layer) (ok = ok && dt_sequential_add(net, (layer)) == DT_OK)
#define ACT() (relu_max ? dt_relu_layer() : dt_sigmoid_layer())
#define POOL() (relu_max ? dt_max_pool2d(2, 2, 0) : dt_avg_pool2d(2, 2, 0))
  ADD(dt_conv2d(1, 6, 5, 1, 2)); ADD(ACT()); ADD(POOL());
  ADD(dt_conv2d(6, 16, 5, 1, 0)); ADD(ACT()); ADD(POOL());
  ADD(dt_flatten_layer());
  ADD(dt_linear(400, 120)); ADD(ACT());
  ADD(dt_linear(120, 84)); ADD(ACT());
  ADD(dt_linear(84, 10));
#undef ADD
#undef ACT
#undef POOL
  if (ok && cnn_xavier(net) == DT_OK) return net;
  dt_module_free(net);
  return NULL;
}

/* why NULL (--help): the usage on stdout, exit status 0 */
static int usage(const char *why) {
  if (why) fprintf(stderr, "lenet: %s\n", why);
  fprintf(why ? stderr : stdout, "usage: lenet [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--seed N] [--relu-max] "
          "[--data DIR] [--csv PATH] [--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]\n");
  return why ? 2 : 0;
}

int main(int argc, char **argv) {
  int relu_max = 0, i, rc = 0;
  cnn_opts o;
  fashion_set tr_set, te_set;
  dt_tensor *X = NULL, *y = NULL, *Xt = NULL, *yt = NULL;
  dt_module *net = NULL;
  char err[1024];
  const char *why = NULL;

  cnn_opts_init(&o, 0.1, "build/lenet.csv");
  for (i = 1; i < argc; i++) {
    int r = cnn_parse_opt(&o, argc, argv, &i, &why);
    if (r < 0) return usage(why);
    if (r > 0) continue;
    if (strcmp(argv[i], "--relu-max") == 0) relu_max = 1;
    else return usage(cnn_unknown(argv[i]));
  }
  if ((why = cnn_opts_check(&o))) return usage(why);
  if (fashion_load(o.data, "train", o.ntrain, &tr_set, err, sizeof err) != 0 ||
      fashion_load(o.data, "t10k", o.ntest, &te_set, err, sizeof err) != 0) {
    fprintf(stderr, "lenet: %s\n", err);
    fashion_free(&tr_set);
    return strstr(err, "is not installed") ? 77 : 1;
  }
  if (to_tensors(&tr_set, &X, &y) != 0 || to_tensors(&te_set, &Xt, &yt) != 0) {
    fprintf(stderr, "lenet: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  dt_manual_seed(o.seed);
  if (!(net = lenet(relu_max))) {
    fprintf(stderr, "lenet: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  rc = cnn_fit("lenet", relu_max ? "LeNet (ReLU, max pooling)" : "LeNet (sigmoid, average pooling)", net, &o, X, y, Xt, yt);
out:
  dt_module_free(net);
  dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
  fashion_free(&tr_set); fashion_free(&te_set);
  return rc;
}
