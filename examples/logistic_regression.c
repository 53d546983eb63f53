/* Logistic (softmax) regression on Fashion-MNIST written from raw tensor operations and
   autograd, as one writes it in PyTorch without nn.Module:

       W = torch.randn(784, 10) * 0.01; W.requires_grad_(); b = torch.zeros(10, requires_grad=True)
       opt = torch.optim.SGD([W, b], lr=0.1)
       for X, y in batches: loss = F.cross_entropy(X @ W + b, y); opt.zero_grad(); loss.backward(); opt.step()

   dt_matmul, dt_add, dt_cross_entropy record what they do, dt_autograd_backward fills dt_grad of W
   and b, dt_sgd_tensors steps on them. One line per epoch: mean train loss, test accuracy, seconds.
   Runs on dt_try_gpu(0).

     logistic_regression [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--data DIR] [--min-acc X]
       --train/--test N  the first N examples only (default: all 60000 / 10000)
       --data DIR        default $FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist
       --min-acc X       exit 1 unless the last test accuracy is >= X and the loss fell (a smoke test)
   Exit status: 0, 1 on an error, 77 when the data set is not installed. */
#define _POSIX_C_SOURCE 199309L
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include "fashion_data.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
  fprintf(stderr, "logistic_regression: %s: %s\n", what, dt_last_error());
  return 1;
}

/* Images (n, 784) float32 in [0, 1] and labels (n,) int64 on d. */
static int to_tensors(const fashion_set *s, dt_device d, dt_tensor **X, dt_tensor **y) {
  dt_tensor *xu = dt_from_data(s->images, dt_shape2(s->n, s->pixels), DT_U8, dt_cpu());
  dt_tensor *yu = dt_from_data(s->labels, dt_shape1(s->n), DT_U8, dt_cpu());
  dt_tensor *xf = xu ? dt_cast(xu, DT_F32) : NULL, *xs = xf ? dt_mul_scalar(xf, 1.0 / 255.0) : NULL;
  dt_tensor *yl = yu ? dt_cast(yu, DT_I64) : NULL;
  *X = xs ? dt_to(xs, d) : NULL;
  *y = yl ? dt_to(yl, d) : NULL;
  dt_release(xu); dt_release(yu); dt_release(xf); dt_release(xs); dt_release(yl);
  return *X && *y ? 0 : -1;
}

/* The fraction of X's rows whose largest logit is their label (no grad: nothing recorded). */
static double accuracy(const dt_tensor *W, const dt_tensor *b, const dt_tensor *X, const dt_tensor *y) {
  int prev = dt_set_grad_enabled(0);
  dt_tensor *xw = dt_matmul(X, W), *logits = xw ? dt_add(xw, b) : NULL, *pred = logits ? dt_argmax(logits, 1) : NULL;
  dt_tensor *hit = pred ? dt_eq(pred, y) : NULL, *hf = hit ? dt_cast(hit, DT_F64) : NULL, *n = hf ? dt_sum(hf) : NULL;
  double acc = n ? dt_item(n) / (double)dt_dim(y, 0) : -1;
  dt_release(xw); dt_release(logits); dt_release(pred); dt_release(hit); dt_release(hf); dt_release(n);
  dt_set_grad_enabled(prev);
  return acc;
}

#define USAGE "usage: logistic_regression [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--data DIR] [--min-acc X]"

int main(int argc, char **argv) {
  int epochs = 3, i, epoch, rc = 0;
  int64_t ntrain = 0, ntest = 0, batch = 256, start;
  double lr = 0.1, min_acc = -1, first_loss = 0, last_loss = 0, acc = 0;
  const char *data = getenv("FASHION_MNIST_DIR") ? getenv("FASHION_MNIST_DIR") : FASHION_DEFAULT_DIR;
  fashion_set tr_set, te_set;
  dt_tensor *X = NULL, *y = NULL, *Xt = NULL, *yt = NULL, *W = NULL, *b = NULL, *r, *params[2];
  dt_optimizer *opt = NULL;
  dt_device dev = dt_try_gpu(0);
  char err[1024], dn[48];

  for (i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { printf("%s\n", USAGE); return 0; }
    if (!v) break; /* an option without its value: the usage below */
    if (strcmp(a, "--epochs") == 0) epochs = atoi(v);
    else if (strcmp(a, "--train") == 0) ntrain = atoll(v);
    else if (strcmp(a, "--test") == 0) ntest = atoll(v);
    else if (strcmp(a, "--lr") == 0) lr = atof(v);
    else if (strcmp(a, "--batch") == 0) batch = atoll(v);
    else if (strcmp(a, "--data") == 0) data = v;
    else if (strcmp(a, "--min-acc") == 0) min_acc = atof(v);
    else { fprintf(stderr, "logistic_regression: unknown option %s\n", a); return 1; }
  }
  if (i != argc || epochs < 1 || batch < 1 || ntrain < 0 || ntest < 0) {
    fprintf(stderr, "%s\n", USAGE);
    return 1;
  }
  if (fashion_load(data, "train", ntrain, &tr_set, err, sizeof err) != 0 ||
      fashion_load(data, "t10k", ntest, &te_set, err, sizeof err) != 0) {
    fprintf(stderr, "logistic_regression: %s\n", err);
    fashion_free(&tr_set);
    return strstr(err, "is not installed") ? 77 : 1;
  }
  if (to_tensors(&tr_set, dev, &X, &y) != 0 || to_tensors(&te_set, dev, &Xt, &yt) != 0) { rc = fail("the data set"); goto out; }
  printf("logistic regression on %s: %lld training and %lld test examples\n", dt_device_str(dev, dn, sizeof dn),
         (long long)tr_set.n, (long long)te_set.n);

  /* the parameters: leaves that require grad */
  dt_manual_seed(0);
  r = dt_randn(dt_shape2(784, 10), dev);
  W = r ? dt_mul_scalar(r, 0.01) : NULL;
  dt_release(r);
  b = dt_zeros(dt_shape1(10), dev);
  if (!W || !b || dt_requires_grad_(W, 1) != DT_OK || dt_requires_grad_(b, 1) != DT_OK) { rc = fail("the parameters"); goto out; }
  params[0] = W; params[1] = b;
  if (!(opt = dt_sgd_tensors(params, 2, lr, 0, 0))) { rc = fail("dt_sgd_tensors"); goto out; }

  for (epoch = 1; epoch <= epochs; epoch++) {
    double t0 = now_seconds(), sum = 0;
    int nb = 0;
    for (start = 0; start < tr_set.n; start += batch) {
      /* in order, not shuffled: enough here; the trainer shuffles */
      dt_tensor *xb = dt_slice(X, 0, start, start + batch), *yb = dt_slice(y, 0, start, start + batch);
      dt_tensor *xw = xb ? dt_matmul(xb, W) : NULL, *logits = xw ? dt_add(xw, b) : NULL;
      dt_tensor *loss = logits && yb ? dt_cross_entropy(logits, yb) : NULL;
      int ok = loss && dt_optimizer_zero_grad(opt) == DT_OK && dt_autograd_backward(loss, NULL) == DT_OK &&
               dt_optimizer_step(opt) == DT_OK;
      if (ok) { sum += dt_item(loss); nb++; }
      dt_release(xb); dt_release(yb); dt_release(xw); dt_release(logits); dt_release(loss);
      if (!ok) { rc = fail("a training step"); goto out; }
    }
    acc = accuracy(W, b, Xt, yt);
    if (acc < 0) { rc = fail("the test accuracy"); goto out; }
    last_loss = sum / nb;
    if (epoch == 1) first_loss = last_loss;
    printf("epoch %2d/%d  train loss %.4f  test acc %.4f  %.3f s\n", epoch, epochs, last_loss, acc, now_seconds() - t0);
    fflush(stdout);
  }
  if (min_acc >= 0 && (acc < min_acc || !(last_loss < 2.302585) || (epochs > 1 && !(last_loss < first_loss)))) {
    fprintf(stderr, "logistic_regression: test accuracy %.4f (wanted >= %.4f), loss %.4f after %.4f\n", acc, min_acc, last_loss, first_loss);
    rc = 1;
  }
out:
  dt_optimizer_free(opt);
  dt_release(W); dt_release(b);
  dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
  fashion_free(&tr_set); fashion_free(&te_set);
  return rc;
}
