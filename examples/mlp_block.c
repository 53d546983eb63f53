/* An MLP whose hidden layers are a block written by the user, trained on Fashion-MNIST:

       class Block(nn.Module):                       # Linear, then GELU, then dropout
           def __init__(self, n_in, n_out, p):
               super().__init__(); self.fc = nn.Linear(n_in, n_out); self.p = p
           def forward(self, x):
               return F.dropout(F.gelu(self.fc(x)), self.p, self.training)
       net = nn.Sequential(Block(784, 256, 0.5), Block(256, 256, 0.5), nn.Linear(256, 10))

   D2L 5.6's dropout MLP with GELU for ReLU: SGD lr 0.5, batch 256, 10 epochs. The block is a
   module made by dt_module_new: its child is a built-in Linear, its forward is tensor
   operations, and autograd gives its backward; the trainer switches it between training
   (dropout on) and evaluation (off) as it does the built-in layers. One line per epoch.

     mlp_block [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--dropout P] [--seed N]
               [--data DIR] [--min-acc X]
   Exit status: 0, 1 on an error (or --min-acc missed), 2 on bad usage, 77 when the data set is
   not installed. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "fashion_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct block_cfg { double p; } block_cfg;

/* x: (n, in) -> (n, out) */
static dt_tensor *block_forward(dt_module *self, const dt_tensor *x, void *user) {
  const block_cfg *cfg = (const block_cfg *)user;
  dt_tensor *h = dt_forward(dt_module_get_child(self, "fc"), x);
  dt_tensor *g = h ? dt_gelu(h) : NULL;
  dt_tensor *y = g ? dt_f_dropout(g, cfg->p, dt_module_is_training(self)) : NULL;
  dt_release(h); dt_release(g);
  return y;
}

static dt_module *block(int64_t in, int64_t out, double p) {
  block_cfg *cfg = (block_cfg *)malloc(sizeof *cfg);
  dt_module *m;
  if (!cfg) return NULL;
  cfg->p = p;
  if (!(m = dt_module_new("Block", block_forward, cfg, free))) { free(cfg); return NULL; }
  if (dt_module_add_child(m, "fc", dt_linear(in, out)) != DT_OK) { dt_module_free(m); return NULL; }
  return m;
}

typedef struct run_log { double first_loss, last_loss, test_acc; } run_log;

static void on_epoch(const dt_trainer *tr, const dt_epoch_result *r, void *user) {
  run_log *lg = (run_log *)user;
  printf("epoch %2d/%d  train loss %.4f  train acc %.4f  test acc %.4f  %.2f s\n", r->epoch, tr->max_epochs, r->loss,
         r->train_acc, r->val_acc, r->seconds);
  fflush(stdout);
  if (r->epoch == 1) lg->first_loss = r->loss;
  lg->last_loss = r->loss;
  lg->test_acc = r->val_acc;
}

/* images (n, 784) float32 in [0, 1], labels (n,) int64, on the CPU */
static int to_tensors(const fashion_set *s, dt_tensor **X, dt_tensor **y) {
  dt_tensor *xu = dt_from_data(s->images, dt_shape2(s->n, s->pixels), DT_U8, dt_cpu());
  dt_tensor *yu = dt_from_data(s->labels, dt_shape1(s->n), DT_U8, dt_cpu());
  dt_tensor *xf = xu ? dt_cast(xu, DT_F32) : NULL;
  *X = xf ? dt_mul_scalar(xf, 1.0 / 255.0) : NULL;
  *y = yu ? dt_cast(yu, DT_I64) : NULL;
  dt_release(xu); dt_release(yu); dt_release(xf);
  return *X && *y ? 0 : -1;
}

/* why NULL (--help): the usage on stdout, exit status 0 */
static int usage(const char *why) {
  if (why) fprintf(stderr, "mlp_block: %s\n", why);
  fprintf(why ? stderr : stdout, "usage: mlp_block [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--dropout P] "
          "[--seed N] [--data DIR] [--min-acc X]\n");
  return why ? 2 : 0;
}

int main(int argc, char **argv) {
  int epochs = 10, i, rc = 0, ok;
  int64_t ntrain = 0, ntest = 0, batch = 256;
  double lr = 0.5, p = 0.5, min_acc = -1;
  unsigned long long seed = 0;
  const char *data = getenv("FASHION_MNIST_DIR") ? getenv("FASHION_MNIST_DIR") : FASHION_DEFAULT_DIR;
  fashion_set tr_set, te_set;
  dt_tensor *X = NULL, *y = NULL, *Xt = NULL, *yt = NULL;
  dt_module *net = NULL;
  dt_optimizer *opt = NULL;
  dt_trainer tr;
  run_log lg;
  char err[1024], dn[48];

  for (i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return usage(NULL);
    if (!v) return usage("an option lacks its value");
    if (strcmp(a, "--epochs") == 0) epochs = atoi(v);
    else if (strcmp(a, "--train") == 0) ntrain = atoll(v);
    else if (strcmp(a, "--test") == 0) ntest = atoll(v);
    else if (strcmp(a, "--data") == 0) data = v;
    else if (strcmp(a, "--lr") == 0) lr = atof(v);
    else if (strcmp(a, "--batch") == 0) batch = atoll(v);
    else if (strcmp(a, "--dropout") == 0) p = atof(v);
    else if (strcmp(a, "--seed") == 0) seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--min-acc") == 0) min_acc = atof(v);
    else {
      char why[160];
      snprintf(why, sizeof why, "unknown option %.120s (--help lists them)", a);
      return usage(why);
    }
  }
  if (epochs < 1 || batch < 1 || ntrain < 0 || ntest < 0) return usage("--epochs and --batch must be positive, --train and --test >= 0");
  if (fashion_load(data, "train", ntrain, &tr_set, err, sizeof err) != 0 ||
      fashion_load(data, "t10k", ntest, &te_set, err, sizeof err) != 0) {
    fprintf(stderr, "mlp_block: %s\n", err);
    fashion_free(&tr_set);
    return strstr(err, "is not installed") ? 77 : 1;
  }
  memset(&lg, 0, sizeof lg);
  if (to_tensors(&tr_set, &X, &y) != 0 || to_tensors(&te_set, &Xt, &yt) != 0) {
    fprintf(stderr, "mlp_block: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  dt_manual_seed(seed);
  /* a bad --dropout is refused by the first forward's dt_f_dropout, with its message */
  net = dt_sequential();
  ok = net && dt_sequential_add(net, block(784, 256, p)) == DT_OK && dt_sequential_add(net, block(256, 256, p)) == DT_OK &&
       dt_sequential_add(net, dt_linear(256, 10)) == DT_OK;
  if (!ok || !(opt = dt_sgd(net, lr, 0.0, 0.0))) {
    fprintf(stderr, "mlp_block: %s\n", dt_last_error());
    rc = 1;
    goto out;
  }
  dt_trainer_init(&tr, epochs, 1);
  tr.batch_size = batch; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.quiet = 1; tr.optimizer = opt;
  tr.on_epoch = on_epoch; tr.user = &lg;
  printf("MLP of GELU-dropout blocks (p %g) on %s: %lld training and %lld test examples, lr %g, batch %lld\n", p,
         dt_device_str(tr.device, dn, sizeof dn), (long long)tr_set.n, (long long)te_set.n, lr, (long long)batch);
  if (dt_trainer_fit_val(&tr, net, X, y, Xt, yt) != DT_OK) {
    fprintf(stderr, "mlp_block: %s\n", dt_last_error());
    rc = 1;
  } else if (min_acc >= 0 && (!(lg.test_acc >= min_acc) || (epochs > 1 && !(lg.last_loss < lg.first_loss)))) {
    fprintf(stderr, "mlp_block: test accuracy %.4f (want >= %.4f), train loss %.4f in the first epoch and %.4f in the last\n",
            lg.test_acc, min_acc, lg.first_loss, lg.last_loss);
    rc = 1;
  } else {
    printf("test accuracy %.4f\n", lg.test_acc);
  }
  dt_trainer_free(&tr);
out:
  dt_optimizer_free(opt);
  dt_module_free(net);
  dt_release(X); dt_release(y); dt_release(Xt); dt_release(yt);
  fashion_free(&tr_set); fashion_free(&te_set);
  return rc;
}
