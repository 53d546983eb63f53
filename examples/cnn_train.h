/* What the CNN examples (lenet.c, resnet.c, modern_cnn.c) share: their common options, the
   images as tensors (resized by bilinear interpolation), D2L's init_cnn, and the training with
   the trainer on one GPU (or the CPU) with a progress line per epoch, a CSV and its curves.
   Example code, not part of the library; include it after devtensor.h and fashion_data.h (static
   inline functions: a program that uses some of them compiles without warnings for the others).

   The common options:
     [--epochs N] [--train N] [--test N] [--lr X] [--batch N] [--seed N] [--data DIR] [--csv PATH]
     [--min-acc X] [--autocast bf16|f16] [--cuda-graph] [--tf32]
   --min-acc X: exit 1 unless the last test accuracy is >= X and the train loss fell.
   --autocast bf16|f16: the trainer's tr.autocast (convolutions and linear layers in that dtype,
   F16 with the grad scaler); --cuda-graph: tr.cuda_graph (each full minibatch's step replayed
   from a graph; on the CPU the same training, as the README's Graphs section says); --tf32: F32
   products on a GPU's TF32 tensor cores (dt_set_float32_matmul_precision("high"), which
   convolutions follow too: PyTorch's cuDNN convolutions use TF32 by default). */
#ifndef DT_EXAMPLES_CNN_TRAIN_H
#define DT_EXAMPLES_CNN_TRAIN_H
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cnn_opts {
  int epochs, graph, tf32;
  int64_t ntrain, ntest, batch; /* 0 examples: all */
  double lr, min_acc;           /* min_acc < 0: no check */
  unsigned long long seed;
  dt_dtype autocast;            /* DT_F32: off */
  const char *csv_path, *data;
} cnn_opts;

static inline void cnn_opts_init(cnn_opts *o, double lr, const char *csv_path) {
  memset(o, 0, sizeof *o);
  o->epochs = 10; o->batch = 128; o->lr = lr; o->min_acc = -1; o->autocast = DT_F32; o->csv_path = csv_path;
  o->data = getenv("FASHION_MNIST_DIR") ? getenv("FASHION_MNIST_DIR") : FASHION_DEFAULT_DIR;
}

/* "unknown option ARG", for the usage line (one buffer: call it once per message) */
static inline const char *cnn_unknown(const char *arg) {
  static char buf[160];
  snprintf(buf, sizeof buf, "unknown option %.120s (--help lists them)", arg);
  return buf;
}

/* argv[*i] as a common option (taking its value, *i moved past it): 1; not one: 0; an error: -1
   with *why set; --help or -h: -1 with *why NULL */
static inline int cnn_parse_opt(cnn_opts *o, int argc, char **argv, int *i, const char **why) {
  static const char *const valued[10] = {"--epochs", "--train", "--test", "--data", "--csv",
                                         "--lr", "--batch", "--seed", "--min-acc", "--autocast"};
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  int k = 0;
  if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { *why = NULL; return -1; } /* the usage, exit status 0 */
  if (strcmp(a, "--cuda-graph") == 0) { o->graph = 1; return 1; }
  if (strcmp(a, "--tf32") == 0) { o->tf32 = 1; return 1; }
  while (k < 10 && strcmp(a, valued[k]) != 0) k++;
  if (k == 10) return 0;
  if (!v) { *why = "an option lacks its value"; return -1; }
  switch (k) {
    case 0: o->epochs = atoi(v); break;
    case 1: o->ntrain = atoll(v); break;
    case 2: o->ntest = atoll(v); break;
    case 3: o->data = v; break;
    case 4: o->csv_path = v; break;
    case 5: o->lr = atof(v); break;
    case 6: o->batch = atoll(v); break;
    case 7: o->seed = strtoull(v, NULL, 10); break;
    case 8: o->min_acc = atof(v); break;
    default:
      if (strcmp(v, "bf16") == 0) o->autocast = DT_BF16;
      else if (strcmp(v, "f16") == 0) o->autocast = DT_F16;
      else if (strcmp(v, "f32") == 0) o->autocast = DT_F32;
      else { *why = "--autocast is bf16, f16 or f32"; return -1; }
  }
  (*i)++;
  return 1;
}

/* the options' values in range: NULL, or why not */
static inline const char *cnn_opts_check(const cnn_opts *o) {
  if (o->epochs < 1 || o->batch < 1 || o->ntrain < 0 || o->ntest < 0)
    return "--epochs and --batch must be positive, --train and --test >= 0";
  return NULL;
}

/* Bilinear resize of one 28 x 28 plane to s x s, align_corners=False: output pixel i samples
   the input at (i + 0.5) 28 / s - 0.5, clamped at 0, between its two neighbours; pixels / 255. */
static inline void cnn_resize_plane(const unsigned char *in, int s, float *out) {
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

/* images (n, 1, s, s) float32 in [0, 1] (torch.nn.functional.interpolate's bilinear resize with
   align_corners=False), labels (n,) int64, on the CPU; 0, or -1 (dt_last_error(), or out of
   host memory when it reports no error) */
static inline int cnn_tensors(const fashion_set *st, int s, dt_tensor **X, dt_tensor **y) {
  float *buf = (float *)malloc((size_t)st->n * (size_t)s * (size_t)s * sizeof(float));
  dt_tensor *yu = dt_from_data(st->labels, dt_shape1(st->n), DT_U8, dt_cpu());
  int64_t k;
  *X = NULL;
  if (buf) {
    for (k = 0; k < st->n; k++) cnn_resize_plane(st->images + k * 784, s, buf + k * s * s);
    *X = dt_from_data(buf, dt_shape4(st->n, 1, s, s), DT_F32, dt_cpu());
  }
  *y = yu ? dt_cast(yu, DT_I64) : NULL;
  free(buf);
  dt_release(yu);
  return *X && *y ? 0 : -1;
}

/* D2L's init_cnn: nn.init.xavier_uniform_ on every convolution's and linear layer's weight (the
   parameters named "weight" with two or more dimensions; a batch norm's weight has one): uniform
   in +-sqrt(6 / (fan_in + fan_out)), fan_in = size(1) times the kernel's area, fan_out = size(0)
   times it. Grad mode off; a lazy layer must have had its first forward. */
static inline dt_status cnn_xavier(dt_module *net) {
  int i, n = dt_module_num_params(net), prev = dt_set_grad_enabled(0);
  dt_status s = DT_OK;
  for (i = 0; i < n && s == DT_OK; i++) {
    const char *name;
    dt_tensor *p = dt_module_param(net, i, &name), *u, *w;
    dt_shape sh;
    double rf = 1, bound;
    int k;
    if (!p) { s = dt_last_status(); break; }
    sh = dt_shape_of(p);
    if (!strstr(name, "weight") || sh.ndim < 2) continue;
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

/* the CSV's curves as an SVG beside it, with gnuplot where it is installed */
static inline void cnn_plot(const char *path) {
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

typedef struct cnn_log { FILE *csv; double first_loss, last_loss, test_acc; } cnn_log;

static inline void cnn_on_epoch(const dt_trainer *tr, const dt_epoch_result *r, void *user) {
  cnn_log *lg = (cnn_log *)user;
  printf("epoch %2d/%d  train loss %.4f  train acc %.4f  test acc %.4f  %.2f s\n", r->epoch, tr->max_epochs, r->loss,
         r->train_acc, r->val_acc, r->seconds);
  fflush(stdout);
  if (lg->csv) fprintf(lg->csv, "%d,%.6f,%.6f,%.6f,%.6f\n", r->epoch, r->loss, r->train_acc, r->val_acc, r->seconds);
  if (r->epoch == 1) lg->first_loss = r->loss;
  lg->last_loss = r->loss;
  lg->test_acc = r->val_acc;
}

/* Trains net (on the CPU, a lazy layer already sized or not) with SGD at o->lr and the trainer on
   one GPU (the CPU without one), testing on (Xt, yt) after each epoch. First prints
   "<title> on <device>: ...", then a line per epoch; writes the CSV and its plot. The exit status:
   0, or 1 (the reason on stderr, prefixed with prog). */
static inline int cnn_fit(const char *prog, const char *title, dt_module *net, const cnn_opts *o, const dt_tensor *X,
                   const dt_tensor *y, const dt_tensor *Xt, const dt_tensor *yt) {
  dt_optimizer *opt = dt_sgd(net, o->lr, 0.0, 0.0);
  dt_trainer tr;
  cnn_log lg;
  char dn[48];
  FILE *csv;
  int rc = 0, csv_ok;
  dt_shape xs = dt_shape_of(X);
  if (!opt) {
    fprintf(stderr, "%s: %s\n", prog, dt_last_error());
    return 1;
  }
  memset(&lg, 0, sizeof lg);
  dt_trainer_init(&tr, o->epochs, 1);
  tr.batch_size = o->batch; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.quiet = 1; tr.optimizer = opt;
  tr.on_epoch = cnn_on_epoch; tr.user = &lg;
  tr.autocast = o->autocast; tr.cuda_graph = o->graph;
  if (o->tf32) dt_set_float32_matmul_precision("high");
  printf("%s on %s: %lld training and %lld test examples at %lldx%lld, lr %g, batch %lld\n", title,
         dt_device_str(tr.device, dn, sizeof dn), (long long)xs.dims[0], (long long)dt_shape_of(Xt).dims[0],
         (long long)xs.dims[2], (long long)xs.dims[3], o->lr, (long long)o->batch);
  if (!(csv = fopen(o->csv_path, "w"))) fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->csv_path, strerror(errno));
  if (csv) fprintf(csv, "epoch,train_loss,train_acc,test_acc,seconds\n");
  lg.csv = csv;
  if (dt_trainer_fit_val(&tr, net, X, y, Xt, yt) != DT_OK) {
    fprintf(stderr, "%s: %s\n", prog, dt_last_error());
    rc = 1;
  } else if (o->min_acc >= 0 && (!(lg.test_acc >= o->min_acc) || (o->epochs > 1 && !(lg.last_loss < lg.first_loss)))) {
    fprintf(stderr, "%s: test accuracy %.4f (want >= %.4f), train loss %.4f in the first epoch and %.4f in the last\n",
            prog, lg.test_acc, o->min_acc, lg.first_loss, lg.last_loss);
    rc = 1;
  }
  csv_ok = csv && !ferror(csv);
  if (csv && fclose(csv) != 0) csv_ok = 0;
  if (!csv_ok) { printf("%s not written, so no plot\n", o->csv_path); if (rc == 0) rc = 1; }
  else { printf("wrote %s\n", o->csv_path); cnn_plot(o->csv_path); }
  dt_trainer_free(&tr);
  dt_optimizer_free(opt);
  return rc;
}
#endif
