/* Fashion-MNIST classification (D2L's softmax regression and MLP
   chapters): softmax regression (one Linear(784, 10)) and the MLP 784-256-10
   with ReLU, trained by the library's trainer with cross-entropy and SGD (lr 0.1,
   batch 256, 10 epochs, weights N(0, 0.01), biases 0) on dt_try_gpu(0). One line
   per epoch: train loss, train accuracy, test accuracy, seconds. Writes the
   curves as CSV and, when gnuplot is installed, an SVG plot next to it.
   bench/fashion_torch.py is the same training in PyTorch, same line format.

     fashion_mnist [--epochs N] [--train N] [--test N] [--model softmax|mlp|both]
                   [--data DIR] [--csv PATH] [--lr X] [--batch N] [--seed N]
                   [--data-on-device] [--autocast f32|bf16|f16] [--cuda-graph] [--min-acc X]
       --train/--test N  the first N examples only (default: all 60000 / 10000)
       --data DIR        default $FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist
                         (Debian: apt-get install dataset-fashion-mnist)
       --csv PATH        default build/fashion_mnist.csv (relative to where it runs)
       --data-on-device  put the data set on the device first: minibatches gathered
                         there; by default it stays on the host and each minibatch is
                         gathered there and copied while the previous step computes
       --autocast T      tr.autocast: each step's forward and loss, and the evaluation, under
                         autocast to bf16 or f16 (the matmuls in T with F32 accumulation, the
                         loss in F32, the parameters and the optimizer F32); f16 with the
                         trainer's grad scaler. Default f32: off
       --cuda-graph      tr.cuda_graph: the training step captured once (after one eager
                         warm-up minibatch) and replayed for every full minibatch; with
                         --autocast f16 the graph holds the forward and backward, and the grad
                         scaler's check and the step run after each replay
       --min-acc X       exit 1 unless every model's last test accuracy is >= X and its
                         loss is below the untrained ln(10) and fell from the first epoch
                         (a smoke test)
   Exit status: 0, 1 on an error, 77 when the data set is not installed. */
#define _POSIX_C_SOURCE 199309L
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include "fashion_data.h"
#include "timing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_log {
  const char *model;
  FILE *csv;
  double first_loss, last_loss, test_acc;
} run_log;

/* The trainer's per-epoch hook: the progress line and the CSV row. */
static void on_epoch(const dt_trainer *tr, const dt_epoch_result *r, void *user) {
  run_log *lg = (run_log *)user;
  printf("%-7s epoch %2d/%d  train loss %.4f  train acc %.4f  test acc %.4f  %.3f s\n", lg->model, r->epoch,
         tr->max_epochs, r->loss, r->train_acc, r->val_acc, r->seconds);
  fflush(stdout);
  if (lg->csv) fprintf(lg->csv, "%s,%d,%.6f,%.6f,%.6f,%.6f\n", lg->model, r->epoch, r->loss, r->train_acc, r->val_acc, r->seconds);
  if (r->epoch == 1) lg->first_loss = r->loss;
  lg->last_loss = r->loss;
  lg->test_acc = r->val_acc;
}

/* Images (n, 784) as float32 in [0, 1] and labels (n,) as int64, on the CPU,
   converted by the library from the raw bytes (uint8 tensors). */
static int to_tensors(const fashion_set *s, dt_tensor **X, dt_tensor **y) {
  dt_tensor *xu = dt_from_data(s->images, dt_shape2(s->n, s->pixels), DT_U8, dt_cpu());
  dt_tensor *yu = dt_from_data(s->labels, dt_shape1(s->n), DT_U8, dt_cpu());
  dt_tensor *xf = xu ? dt_cast(xu, DT_F32) : NULL;
  *X = xf ? dt_mul_scalar(xf, 1.0 / 255.0) : NULL;
  *y = yu ? dt_cast(yu, DT_I64) : NULL;
  dt_release(xu); dt_release(yu); dt_release(xf);
  return *X && *y ? 0 : -1;
}

/* Weights N(0, 0.01), biases 0, as D2L initialises both networks (with grad mode off: the
   parameters require grad, as under torch.no_grad()). */
static dt_status init_params_ng(dt_module *net);
static dt_status init_params(dt_module *net) {
  int prev = dt_set_grad_enabled(0);
  dt_status s = init_params_ng(net);
  dt_set_grad_enabled(prev);
  return s;
}
static dt_status init_params_ng(dt_module *net) {
  int i, n = dt_module_num_params(net);
  for (i = 0; i < n; i++) {
    const char *name;
    dt_tensor *p = dt_module_param(net, i, &name), *r, *w;
    dt_status s;
    if (!p) return dt_last_status();
    if (strstr(name, "bias")) { if ((s = dt_fill_(p, 0)) != DT_OK) return s; continue; }
    r = dt_randn(dt_shape_of(p), dt_device_of(p));
    w = r ? dt_mul_scalar(r, 0.01) : NULL;
    s = w ? dt_copy_(p, w) : dt_last_status();
    dt_release(r); dt_release(w);
    if (s != DT_OK) return s;
  }
  return DT_OK;
}

static dt_module *make_net(const char *model) {
  dt_module *net = dt_sequential();
  int ok = net != NULL;
  if (strcmp(model, "softmax") == 0) {
    ok = ok && dt_sequential_add(net, dt_linear(784, 10)) == DT_OK;
  } else {
    ok = ok && dt_sequential_add(net, dt_linear(784, 256)) == DT_OK && dt_sequential_add(net, dt_relu_layer()) == DT_OK &&
         dt_sequential_add(net, dt_linear(256, 10)) == DT_OK;
  }
  if (ok && init_params(net) == DT_OK) return net;
  dt_module_free(net);
  return NULL;
}

/* The plot's path: the CSV's with .svg for .csv (or .svg added). */
static void svg_path(const char *csv, char *out, size_t n) {
  size_t len = strlen(csv);
  if (len >= 4 && strcmp(csv + len - 4, ".csv") == 0) snprintf(out, n, "%.*s.svg", (int)(len - 4), csv);
  else snprintf(out, n, "%s.svg", csv);
}

static void plot(const char *path) {
  char svg[1100], cmd[4096];
  svg_path(path, svg, sizeof svg);
  if (strpbrk(path, "'\"\\$`") || strlen(path) > 1000) {
    printf("(no plot: the path is over 1000 characters or holds a quote, backslash, $ or `)\n");
  } else if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    snprintf(cmd, sizeof cmd,
             "gnuplot -e \"set terminal svg size 960,420; set output '%s'; set datafile separator ','; "
             "set multiplot layout 1,2; set xlabel 'epoch'; set key top right; set ylabel 'train loss'; "
             "plot '%s' using 2:(strcol(1) eq 'softmax' ? \\$3 : 1/0) skip 1 with linespoints title 'softmax', "
             "'' using 2:(strcol(1) eq 'mlp' ? \\$3 : 1/0) skip 1 with linespoints title 'mlp'; "
             "set key bottom right; set ylabel 'accuracy'; "
             "plot '' using 2:(strcol(1) eq 'softmax' ? \\$4 : 1/0) skip 1 with linespoints title 'softmax train', "
             "'' using 2:(strcol(1) eq 'softmax' ? \\$5 : 1/0) skip 1 with linespoints title 'softmax test', "
             "'' using 2:(strcol(1) eq 'mlp' ? \\$4 : 1/0) skip 1 with linespoints title 'mlp train', "
             "'' using 2:(strcol(1) eq 'mlp' ? \\$5 : 1/0) skip 1 with linespoints title 'mlp test'; unset multiplot\"",
             svg, path);
    if (system(cmd) == 0) printf("wrote %s\n", svg);
    else printf("gnuplot failed; no plot\n");
  } else {
    printf("(gnuplot is not installed: no plot)\n");
  }
}

/* why NULL (--help): the usage on stdout, exit status 0 */
static int usage(const char *why) {
  if (why) fprintf(stderr, "fashion_mnist: %s\n", why);
  fprintf(why ? stderr : stdout, "usage: fashion_mnist [--epochs N] [--train N] [--test N] [--model softmax|mlp|both] "
          "[--data DIR] [--csv PATH] [--lr X] [--batch N] [--seed N] [--data-on-device] [--autocast f32|bf16|f16] [--cuda-graph] "
          "[--min-acc X]\n");
  return why ? 1 : 0;
}

int main(int argc, char **argv) {
  int epochs = 10, on_device = 0, cuda_graph = 0, i, m, rc = 0, csv_ok, failed = 0;
  dt_dtype autocast = DT_F32;
  int64_t ntrain = 0, ntest = 0, batch = 256;
  double lr = 0.1, min_acc = -1;
  unsigned long long seed = 0;
  const char *model = "both", *csv_path = "build/fashion_mnist.csv";
  const char *data = getenv("FASHION_MNIST_DIR") ? getenv("FASHION_MNIST_DIR") : FASHION_DEFAULT_DIR;
  const char *models[2];
  int nmodels;
  fashion_set tr_set, te_set;
  dt_tensor *X = NULL, *y = NULL, *Xt = NULL, *yt = NULL;
  dt_device dev = dt_try_gpu(0);
  char err[1024], dn[48];
  FILE *csv;
  double t0;

  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return usage(NULL);
    if (strcmp(a, "--data-on-device") == 0) { on_device = 1; continue; }
    if (strcmp(a, "--cuda-graph") == 0) { cuda_graph = 1; continue; }
    if (!v) return usage("an option lacks its value");
    if (strcmp(a, "--epochs") == 0) epochs = atoi(v);
    else if (strcmp(a, "--train") == 0) ntrain = atoll(v);
    else if (strcmp(a, "--test") == 0) ntest = atoll(v);
    else if (strcmp(a, "--model") == 0) model = v;
    else if (strcmp(a, "--data") == 0) data = v;
    else if (strcmp(a, "--csv") == 0) csv_path = v;
    else if (strcmp(a, "--lr") == 0) lr = atof(v);
    else if (strcmp(a, "--batch") == 0) batch = atoll(v);
    else if (strcmp(a, "--seed") == 0) seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--min-acc") == 0) min_acc = atof(v);
    else if (strcmp(a, "--autocast") == 0) {
      if (strcmp(v, "f32") == 0) autocast = DT_F32;
      else if (strcmp(v, "bf16") == 0) autocast = DT_BF16;
      else if (strcmp(v, "f16") == 0) autocast = DT_F16;
      else return usage("--autocast is f32, bf16 or f16");
    }
    else {
      char why[160];
      snprintf(why, sizeof why, "unknown option %.120s (--help lists them)", a);
      return usage(why);
    }
    i++;
  }
  if (strcmp(model, "both") == 0) { models[0] = "softmax"; models[1] = "mlp"; nmodels = 2; }
  else if (strcmp(model, "softmax") == 0 || strcmp(model, "mlp") == 0) { models[0] = model; nmodels = 1; }
  else return usage("--model is softmax, mlp or both");
  if (epochs < 1 || batch < 1 || ntrain < 0 || ntest < 0) return usage("--epochs and --batch must be positive, --train and --test >= 0");

  t0 = now_seconds();
  if (fashion_load(data, "train", ntrain, &tr_set, err, sizeof err) != 0 ||
      fashion_load(data, "t10k", ntest, &te_set, err, sizeof err) != 0) {
    fprintf(stderr, "fashion_mnist: %s\n", err);
    fashion_free(&tr_set);
    return strstr(err, "is not installed") ? 77 : 1;
  }
  if (to_tensors(&tr_set, &X, &y) != 0 || to_tensors(&te_set, &Xt, &yt) != 0) {
    fprintf(stderr, "fashion_mnist: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  if (on_device) { /* one copy now; the trainer then gathers the minibatches on the device */
    dt_tensor *a = dt_to(X, dev), *b = dt_to(y, dev), *c = dt_to(Xt, dev), *d = dt_to(yt, dev);
    dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
    X = a; y = b; Xt = c; yt = d;
    if (!X || !y || !Xt || !yt) { fprintf(stderr, "fashion_mnist: %s\n", dt_last_error()); rc = 1; goto out; }
  }
  printf("devtensor on %s: %lld training and %lld test examples (read in %.2f s), data on %s, autocast %s%s\n",
         dt_device_str(dev, dn, sizeof dn), (long long)tr_set.n, (long long)te_set.n, now_seconds() - t0,
         on_device ? "the device" : "the host", autocast == DT_F32 ? "off" : dt_dtype_name(autocast), cuda_graph ? ", cuda graph" : "");
  if (!(csv = fopen(csv_path, "w"))) fprintf(stderr, "fashion_mnist: cannot write %s: %s\n", csv_path, strerror(errno));
  if (csv) fprintf(csv, "model,epoch,train_loss,train_acc,test_acc,seconds\n");
  for (m = 0; m < nmodels && rc == 0; m++) {
    dt_trainer tr;
    dt_module *net;
    dt_optimizer *opt = NULL;
    run_log lg;
    dt_status s;
    memset(&lg, 0, sizeof lg);
    lg.model = models[m]; lg.csv = csv;
    dt_manual_seed(seed);
    if (!(net = make_net(models[m]))) { fprintf(stderr, "fashion_mnist: %s\n", dt_last_error()); rc = 1; break; }
    dt_trainer_init(&tr, epochs, 1);
    tr.batch_size = batch;
    tr.loss_fn = DT_LOSS_CROSS_ENTROPY;
    tr.quiet = 1;
    tr.on_epoch = on_epoch; tr.user = &lg;
    tr.autocast = autocast;     /* DT_F16: the trainer makes its grad scaler */
    tr.cuda_graph = cuda_graph; /* a combination the trainer cannot capture fails the fit with its reason */
    /* the trainer moves the model (and the optimizer's state) to its device first */
    if (!(opt = dt_sgd(net, lr, 0.0, 0.0))) s = dt_last_status();
    else { tr.optimizer = opt; s = dt_trainer_fit_val(&tr, net, X, y, Xt, yt); }
    if (s != DT_OK) { fprintf(stderr, "fashion_mnist: %s\n", dt_last_error()); rc = 1; failed = 1; }
    else if (min_acc >= 0 && (!(lg.test_acc >= min_acc) || !(lg.last_loss < 2.302585) || (epochs > 1 && !(lg.last_loss < lg.first_loss)))) {
      fprintf(stderr, "fashion_mnist: %s: test accuracy %.4f (want >= %.4f), train loss %.4f in the first epoch and %.4f in the "
              "last (want < ln 10 = 2.3026, and falling)\n", models[m], lg.test_acc, min_acc, lg.first_loss, lg.last_loss);
      rc = 1;
    }
    dt_optimizer_free(opt);
    dt_trainer_free(&tr);
    dt_module_free(net);
  }
  csv_ok = csv && !ferror(csv);
  if (csv && fclose(csv) != 0) csv_ok = 0;
  if (failed) printf("training failed: no plot\n"); /* the library's error is above; the CSV holds the epochs before it */
  else if (!csv_ok) { printf("%s not written, so no plot\n", csv_path); if (rc == 0) rc = 1; }
  else { printf("wrote %s\n", csv_path); plot(csv_path); }
out:
  dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
  fashion_free(&tr_set); fashion_free(&te_set);
  return rc;
}
