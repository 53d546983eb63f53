static int dt__dist_world(dt_device *dev);                       /* "distributed" */
static dt_status dt__dist_start(const char *op, dt_module *m);
/* The chapter's Trainer: the model on the first kept GPU, each minibatch moved
   there, the loss summed on the device and read once per epoch. */

DTDEF dt_status dt_trainer_init(dt_trainer *tr, int max_epochs, int num_gpus) {
  int n, i;
  if (!tr) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_init: tr is NULL");
  if (max_epochs < 0 || num_gpus < 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_init: max_epochs and num_gpus must be >= 0, got %d and %d", max_epochs, num_gpus);
  memset(tr, 0, sizeof *tr);
  tr->max_epochs = max_epochs;
  n = dt__gpu_count();
  n = num_gpus < n ? num_gpus : n;
  n = n < 8 ? n : 8;
  for (i = 0; i < n; i++) tr->gpus[i] = dt_gpu(i);
  if (n > 0 && dt__dist_world(&tr->gpus[0]) > 1) /* a distributed run: this rank's device, cuda:(local rank) */
    n = tr->gpus[0].type == DT_CUDA ? 1 : 0;
  tr->num_gpus = n;
  tr->device = n ? tr->gpus[0] : dt_cpu();
  tr->batch_size = 32;
  tr->lr = 0.03;
  return DT_OK;
}

DTDEF dt_status dt_trainer_prepare_model(dt_trainer *tr, dt_module *m) {
  if (!tr) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_model: tr is NULL");
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_model: m is NULL");
  return dt_module_to(m, tr->device);
}

DTDEF dt_tensor *dt_trainer_prepare_batch(dt_trainer *tr, const dt_tensor *batch) {
  if (!tr) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_batch: tr is NULL"); return NULL; }
  if (!batch) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_batch: batch is NULL"); return NULL; }
  return dt_to((dt_tensor *)batch, tr->device);
}

/* A permutation of 0..n-1 from the seeded Philox generator (Fisher-Yates). */
static void dt__shuffle(int64_t *idx, int64_t n) {
  uint64_t seed, draw;
  uint32_t w[4];
  int64_t i;
  dt__rng_next(&seed, &draw);
  for (i = 0; i < n; i++) idx[i] = i;
  for (i = n - 1; i > 0; i--) {
    uint64_t r;
    dt__philox_block(seed, draw, (uint64_t)i, w);
    r = ((uint64_t)w[0] << 32 | w[1]) % (uint64_t)(i + 1);
    { int64_t t = idx[i]; idx[i] = idx[(int64_t)r]; idx[(int64_t)r] = t; }
  }
}

/* Wall-clock seconds, for the epochs' times. */
#if defined(_WIN32) && !defined(__MINGW32__)
#include <time.h>
static double dt__wall_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; } /* wall time on Windows */
#else
#include <sys/time.h>
static double dt__wall_seconds(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}
#endif

/* A data set as the trainer reads it: y on the device; X on the device (rows
   gathered there), or on the host when the trainer runs on a GPU and X is on the
   CPU (rows gathered on the host, each minibatch copied). */
typedef struct dt__tr_data {
  const dt_tensor *X, *y; /* as given */
  dt_tensor *Xd;        /* X on the device; NULL: gathered on the host */
  dt_tensor *yd;        /* y on the device */
  int64_t n;
} dt__tr_data;

/* The sums of an epoch or an evaluation, on the device: loss * rows (X's dtype; float32 for
   a half X) and right answers (float64; classification only). */
typedef struct dt__tr_sums { dt_tensor *loss, *right; } dt__tr_sums;

static void dt__tr_data_free(dt__tr_data *d) { dt_release(d->Xd); dt_release(d->yd); d->Xd = d->yd = NULL; }
static void dt__tr_sums_free(dt__tr_sums *s) { dt_release(s->loss); dt_release(s->right); s->loss = s->right = NULL; }

static dt_status dt__tr_data_init(dt_trainer *tr, const dt_tensor *X, const dt_tensor *y, dt__tr_data *d) {
  int host = X->st->device.type == DT_CPU && tr->device.type != DT_CPU;
  d->X = X; d->y = y; d->n = X->shape.dims[0];
  d->Xd = host ? NULL : dt_to((dt_tensor *)X, tr->device);
  d->yd = (host || d->Xd) ? dt_to((dt_tensor *)y, tr->device) : NULL;
  if ((!host && !d->Xd) || !d->yd) { dt__tr_data_free(d); return dt_last_status(); }
  return DT_OK;
}

static dt_status dt__tr_sums_init(const char *op, dt_trainer *tr, const dt_tensor *X, dt__tr_sums *s) {
  s->right = NULL;
  if (!(s->loss = dt__filled(op, dt_shape0(), dt__is_half(X->dtype) ? DT_F32 : X->dtype, 0.0, tr->device))) return dt_last_status();
  if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY && !(s->right = dt__filled(op, dt_shape0(), DT_F64, 0.0, tr->device))) {
    dt__tr_sums_free(s);
    return dt_last_status();
  }
  return DT_OK;
}

/* An epoch's order: `perm` (I64 (n,)) on the device when X is there, else on the CPU,
   with y already in that order on the device (`y_perm`). */
typedef struct dt__tr_order { dt_tensor *perm, *y_perm; } dt__tr_order;

/* Rows [b, b + rows) of the data set on the device, in the order `o`, or in the data's
   order when o is NULL. Gathered on the device (X there), or X's rows on the host and
   y's a view of y_perm (no gather on the device, so no index check for it to report). */
static dt_status dt__tr_batch(dt_trainer *tr, const dt__tr_data *d, const dt__tr_order *o,
                              int64_t b, int64_t rows, dt_tensor **xb, dt_tensor **yb) {
  dt_tensor *idx = NULL, *xh = NULL;
  *xb = *yb = NULL;
  if (o) {
    if ((idx = dt_slice(o->perm, 0, b, b + rows))) {
      if (d->Xd) { if ((*yb = dt_index_select(d->yd, 0, idx))) *xb = dt_index_select(d->Xd, 0, idx); }
      else if ((*yb = dt_slice(o->y_perm, 0, b, b + rows))) xh = dt_index_select(d->X, 0, idx);
    }
  } else if ((*yb = dt_slice(d->yd, 0, b, b + rows))) {
    if (d->Xd) *xb = dt_slice(d->Xd, 0, b, b + rows);
    else xh = dt_slice(d->X, 0, b, b + rows);
  }
  /* the host rows go to the device: queued behind the work already queued there,
     returning once xh has been read (the CUDA backend stages pageable memory) */
  if (xh) *xb = dt_trainer_prepare_batch(tr, xh);
  dt_release(idx); dt_release(xh);
  if (!*xb || !*yb) { dt_release(*xb); dt_release(*yb); *xb = *yb = NULL; return dt_last_status(); }
  return DT_OK;
}

/* Adds rows * loss(pred, yb) and (classification) the right answers to `sums`, on the device. */
static dt_status dt__tr_accumulate(dt_trainer *tr, const dt_tensor *pred, const dt_tensor *yb, dt__tr_sums *sums) {
  dt_tensor *loss = tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? dt_cross_entropy(pred, yb) : dt_mse_loss(pred, yb);
  dt_status s;
  if (loss && loss->dtype != sums->loss->dtype) { /* a half module's loss, summed in float32 */
    dt_tensor *c = dt_cast(loss, sums->loss->dtype);
    dt_release(loss);
    loss = c;
  }
  s = loss ? dt_axpy_(sums->loss, (double)pred->shape.dims[0], loss) : dt_last_status();
  dt_release(loss);
  if (s == DT_OK && sums->right) { /* sum(argmax(pred) == y), counted in float64 (exact below 2^53) */
    dt_tensor *am = dt_argmax(pred, 1), *eq = am ? dt_eq(am, yb) : NULL, *c = eq ? dt_sum(eq) : NULL;
    dt_tensor *c64 = c ? dt_cast(c, DT_F64) : NULL;
    s = c64 ? dt_axpy_(sums->right, 1.0, c64) : dt_last_status();
    dt_release(am); dt_release(eq); dt_release(c); dt_release(c64);
  }
  return s;
}
