/* D2L 7.6: LeNet on Fashion-MNIST, trained by the trainer through autograd.
     lenet [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--seed N] [--relu-max]
           [--data DIR] [--csv PATH] [--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]
   The network as D2L writes it: Conv2d(1, 6, 5, padding=2), Sigmoid, AvgPool2d(2, 2),
   Conv2d(6, 16, 5), Sigmoid, AvgPool2d(2, 2), Flatten, Linear(400, 120), Sigmoid,
   Linear(120, 84), Sigmoid, Linear(84, 10); SGD lr 0.1, batch 128, 10 epochs; the weights of
   every Conv2d and Linear xavier_uniform (D2L's init_cnn), the biases PyTorch's default.
   --relu-max: ReLU for Sigmoid and MaxPool2d for AvgPool2d. One progress line per epoch, a CSV
   (default build/lenet.csv) and, with gnuplot, its curves as SVG beside it.
   --min-acc X: exit 1 unless the last test accuracy is >= X and the train loss fell.
   --autocast bf16|f16: the trainer's tr.autocast (convolutions and linear layers in that dtype,
   F16 with the grad scaler); --cuda-graph: tr.cuda_graph (each full minibatch's step replayed
   from a graph; on the CPU the same training, as the README's Graphs section says); --tf32:
   F32 products on a GPU's TF32 tensor cores (dt_set_float32_matmul_precision("high"), which
   convolutions follow too: PyTorch's cuDNN convolutions use TF32 by default). */
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

/* nn.init.xavier_uniform_: uniform in +-sqrt(6 / (fan_in + fan_out)), a fan = channels (or
   features) times the kernel's area; the weights only (D2L's init_cnn), grad mode off */
static dt_status xavier(dt_module *net) {
  int i, n = dt_module_num_params(net), prev = dt_set_grad_enabled(0);
  dt_status s = DT_OK;
  for (i = 0; i < n && s == DT_OK; i++) {
    const char *name;
    dt_tensor *p = dt_module_param(net, i, &name), *u, *w;
    dt_shape sh;
    double rf = 1, bound;
    int k;
    if (!p) { s = dt_last_status(); break; }
    if (!strstr(name, "weight")) continue;
    sh = dt_shape_of(p);
    for (k = 2; k < sh.ndim; k++) rf *= (double)sh.dims[k];
    bound = sqrt(6.0 / ((double)sh.dims[1] * rf + (double)sh.dims[0] * rf));
    u = dt_rand(sh, dt_device_of(p));
    w = u ? dt_mul_scalar(u, 2 * bound) : NULL;
    dt_release(u);
    u = w ? dt_add_scalar(w, -bound) : NULL;
    s = u ? dt_copy_(p, u) : dt_last_status();
    dt_release(u); dt_release(w);
  }
  dt_set_grad_enabled(prev);
  return s;
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
  if (ok && xavier(net) == DT_OK) return net;
  dt_module_free(net);
  return NULL;
}

static void plot(const char *path) {
  char svg[1100], cmd[4096];
  size_t len = strlen(path);
  if (len >= 4 && strcmp(path + len - 4, ".csv") == 0) snprintf(svg, sizeof svg, "%.*s.svg", (int)(len - 4), path);
  else snprintf(svg, sizeof svg, "%s.svg", path);
  if (strpbrk(path, "'\"\\$`") || len > 1000) {
    printf("(no plot: the path is over 1000 characters or holds a quote, backslash, $ or `)\n");
  } else if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    snprintf(cmd, sizeof cmd,
             "gnuplot -e \"set terminal svg size 960,420; set output '%s'; set datafile separator ','; "
             "set multiplot layout 1,2; set xlabel 'epoch'; set ylabel 'train loss'; "
             "plot '%s' using 1:2 skip 1 with linespoints title 'train loss'; "
             "set key bottom right; set ylabel 'accuracy'; "
             "plot '' using 1:3 skip 1 with linespoints title 'train acc', '' using 1:4 skip 1 with linespoints title 'test acc'; "
             "unset multiplot\"", svg, path);
    if (system(cmd) == 0) printf("wrote %s\n", svg);
    else printf("gnuplot failed; no plot\n");
  } else {
    printf("(gnuplot is not installed: no plot)\n");
  }
}

static int usage(const char *why) {
  fprintf(stderr, "lenet: %s\nusage: lenet [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--seed N] [--relu-max] "
          "[--data DIR] [--csv PATH] [--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]\n", why);
  return 2;
}

int main(int argc, char **argv) {
  int graph = 0, tf32 = 0;
  dt_dtype autocast = DT_F32;
  int epochs = 10, relu_max = 0, i, rc = 0, csv_ok;
  int64_t ntrain = 0, ntest = 0, batch = 128;
  double lr = 0.1, min_acc = -1;
  unsigned long long seed = 0;
  const char *csv_path = "build/lenet.csv";
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
    if (strcmp(a, "--relu-max") == 0) { relu_max = 1; continue; }
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
  if (fashion_load(data, "train", ntrain, &tr_set, err, sizeof err) != 0 ||
      fashion_load(data, "t10k", ntest, &te_set, err, sizeof err) != 0) {
    fprintf(stderr, "lenet: %s\n", err);
    fashion_free(&tr_set);
    return strstr(err, "is not installed") ? 77 : 1;
  }
  memset(&lg, 0, sizeof lg);
  if (to_tensors(&tr_set, &X, &y) != 0 || to_tensors(&te_set, &Xt, &yt) != 0) {
    fprintf(stderr, "lenet: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  dt_manual_seed(seed);
  if (!(net = lenet(relu_max)) || !(opt = dt_sgd(net, lr, 0.0, 0.0))) {
    fprintf(stderr, "lenet: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  dt_trainer_init(&tr, epochs, 1);
  tr.batch_size = batch; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.quiet = 1; tr.optimizer = opt;
  tr.on_epoch = on_epoch; tr.user = &lg;
  tr.autocast = autocast; tr.cuda_graph = graph;
  if (tf32) dt_set_float32_matmul_precision("high");
  printf("LeNet (%s) on %s: %lld training and %lld test examples, lr %g, batch %lld\n",
         relu_max ? "ReLU, max pooling" : "sigmoid, average pooling", dt_device_str(tr.device, dn, sizeof dn),
         (long long)tr_set.n, (long long)te_set.n, lr, (long long)batch);
  if (!(csv = fopen(csv_path, "w"))) fprintf(stderr, "lenet: cannot write %s: %s\n", csv_path, strerror(errno));
  if (csv) fprintf(csv, "epoch,train_loss,train_acc,test_acc,seconds\n");
  lg.csv = csv;
  if (dt_trainer_fit_val(&tr, net, X, y, Xt, yt) != DT_OK) {
    fprintf(stderr, "lenet: %s\n", dt_last_error());
    rc = 1;
  } else if (min_acc >= 0 && (!(lg.test_acc >= min_acc) || (epochs > 1 && !(lg.last_loss < lg.first_loss)))) {
    fprintf(stderr, "lenet: test accuracy %.4f (want >= %.4f), train loss %.4f in the first epoch and %.4f in the last\n",
            lg.test_acc, min_acc, lg.first_loss, lg.last_loss);
    rc = 1;
  }
  csv_ok = csv && !ferror(csv);
  if (csv && fclose(csv) != 0) csv_ok = 0;
  if (!csv_ok) { printf("%s not written, so no plot\n", csv_path); if (rc == 0) rc = 1; }
  else { printf("wrote %s\n", csv_path); plot(csv_path); }
  dt_trainer_free(&tr);
out:
  dt_optimizer_free(opt);
  dt_module_free(net);
  dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
  fashion_free(&tr_set); fashion_free(&te_set);
  return rc;
}
