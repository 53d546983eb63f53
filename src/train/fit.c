/* tr.gradient_clip_val > 0: the gradients of m's parameters clipped to that total 2-norm. */
static dt_status dt__trainer_clip(dt_trainer *tr, dt_module *m) {
  dt_tensor **p;
  dt_status s = DT_OK;
  int n, i;
  if (!(tr->gradient_clip_val > 0)) return DT_OK;
  if ((n = dt_module_num_params(m)) <= 0) return DT_OK;
  if (!(p = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)n)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "dt_trainer_fit: out of memory on the host clipping the gradients");
  for (i = 0; i < n && s == DT_OK; i++) /* the table hands out the gradients: the leaves hold them */
    if (!(p[i] = dt_module_param(m, i, NULL))) s = dt_last_status();
  if (s == DT_OK) s = dt_clip_grad_norm_(p, n, tr->gradient_clip_val, NULL);
  DT_FREE(p);
  return s;
}

/* The update from the gradients of the step's backward: clip and step; under autocast DT_F16,
   unscale first, clip and step unless a gradient holds an inf or a NaN, and update the scale. */
static dt_status dt__trainer_update(dt_trainer *tr, dt_module *m) {
  dt_status s;
  if (tr->autocast == DT_F16 && tr->grad_scaler) {
    if ((s = dt__params_build("dt_trainer_fit", m)) != DT_OK ||
        (s = dt__grad_scaler_unscale("dt_trainer_fit", tr->grad_scaler, m->grads, m->nparams)) != DT_OK)
      return s;
    if (!tr->grad_scaler->found_inf && (s = dt__trainer_clip(tr, m)) == DT_OK)
      s = tr->optimizer ? dt_optimizer_step(tr->optimizer) : dt_sgd_step(m, tr->lr);
    if (s == DT_OK) s = dt_grad_scaler_update(tr->grad_scaler);
    return s;
  }
  if ((s = dt__trainer_clip(tr, m)) != DT_OK) return s;
  return tr->optimizer ? dt_optimizer_step(tr->optimizer) : dt_sgd_step(m, tr->lr);
}

/* A training step through autograd, for a model the fused backward cannot take (convolutions,
   user-written modules): zero the gradients, forward, the loss, its backward, the update.
   scale: NULL, or under autocast DT_F16 the grad scaler's scale as an F32 scalar on the device,
   which the loss is multiplied by instead of the scaler's value (a graph reads it as it runs). */
static dt_status dt__trainer_step_autograd(dt_trainer *tr, dt_module *m, const dt_tensor *xb, const dt_tensor *yb,
                                           dt__tr_sums *sums, int phase, const dt_tensor *scale) {
  dt_tensor *pred = NULL, *loss = NULL, *scaled = NULL;
  dt_status s;
  int prev;
  dt_dtype ac;
  if (phase == DT__STEP_UPDATE) return dt__trainer_update(tr, m);
  ac = dt_set_autocast(tr->device.type, tr->autocast); /* the forward and the loss under tr.autocast */
  if ((s = tr->optimizer ? dt_optimizer_zero_grad(tr->optimizer) : dt_zero_grad(m)) != DT_OK) goto done;
  if (!(pred = dt_forward(m, xb))) { s = dt_last_status(); goto done; }
  prev = dt__no_grad;
  dt__no_grad = 1; /* the sums record nothing */
  s = dt__tr_accumulate(tr, pred, yb, sums);
  dt__no_grad = prev;
  if (s == DT_OK) {
    loss = tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? dt_cross_entropy(pred, yb) : dt_mse_loss(pred, yb);
    dt_set_autocast(tr->device.type, ac); /* the backward and the step as the caller had it */
    if (!loss) s = dt_last_status();
    else if (tr->autocast == DT_F16 && tr->grad_scaler) { /* the scaled loss's backward */
      if (!(scaled = scale ? dt_mul(loss, scale) : dt_grad_scaler_scale(tr->grad_scaler, loss))) s = dt_last_status();
      else s = dt_autograd_backward(scaled, NULL);
    } else {
      s = dt_autograd_backward(loss, NULL);
    }
    if (s == DT_OK && phase == DT__STEP_ALL) s = dt__trainer_update(tr, m);
  }
done:
  dt_set_autocast(tr->device.type, ac);
  dt_release(pred); dt_release(loss); dt_release(scaled);
  return s;
}

/* One training step on a minibatch on the device: forward, loss (summed into `sums`,
   with the right answers), backward, the optimizer's step (plain SGD without one); or one
   part of it (phase, scale: see above). Nothing here waits for the device (but the grad
   scaler's check under autocast DT_F16, and clipping). */
static dt_status dt__trainer_step(dt_trainer *tr, dt__replicas *rep, dt_module *m, const dt_tensor *xb, const dt_tensor *yb,
                                  dt__tr_sums *sums, int phase, const dt_tensor *scale) {
  dt_tensor *pred, *g = NULL;
  dt_status s;
  if (rep && (rep->n > 1 || rep->ranks > 1)) return dt__dp_step(tr, rep, xb, yb); /* data parallel */
  if (dt__trainer_uses_autograd(tr, m))
    return dt__trainer_step_autograd(tr, m, xb, yb, sums, phase, scale);
  if (phase == DT__STEP_UPDATE) return dt__trainer_update(tr, m);
  if (!(pred = dt_forward(m, xb))) return dt_last_status();
  if ((s = dt__tr_accumulate(tr, pred, yb, sums)) == DT_OK) {
    g = tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? dt_cross_entropy_grad(pred, yb) : dt_mse_loss_grad(pred, yb);
    /* the minibatch needs no gradient: dt_backward_params skips the first layer's g W; the
       gradients are written, as after dt_zero_grad, without zeroing them first */
    if (g) s = dt__backward_params_assign(m, g);
    if (!g || s != DT_OK) s = dt_last_status();
    else if (phase == DT__STEP_ALL) s = dt__trainer_update(tr, m);
  }
  dt_release(pred); dt_release(g);
  return s;
}

/* One epoch over the data in a fresh shuffled order; sums on the device, nothing read.
   X on the device: the order goes there once and each minibatch is gathered there. X on
   the host: y goes to the device once, in the epoch's order, and each minibatch of X is
   gathered on the host and copied. Minibatch k + 1 is gathered (and copied) right after
   step k is queued, so it is ready when step k finishes and the host never waits for
   the device. */
static dt_status dt__trainer_epoch(const char *op, dt_trainer *tr, dt__replicas *rep, dt_module *m, const dt__tr_data *d,
                                   int64_t *idx, dt__tr_sums *sums, dt__tr_graph *gr) {
  int64_t n = d->n, bs = tr->batch_size, b;
  dt_tensor *perm_h, *yh = NULL, *xb = NULL, *yb = NULL;
  dt__tr_order o;
  dt_status s = DT_OK;
  int was = dt_set_grad_enabled(1); /* training needs the activations, whatever the caller's setting */
  o.perm = o.y_perm = NULL;
  dt__shuffle(idx, n);
  if (!(perm_h = dt_from_blob(idx, dt_shape1(n), DT_I64, dt_cpu(), NULL, NULL))) { dt_set_grad_enabled(was); return dt_last_status(); }
  if (d->Xd) o.perm = dt_to(perm_h, tr->device);
  else if ((yh = dt_index_select(d->y, 0, perm_h)) != NULL && (o.y_perm = dt_trainer_prepare_batch(tr, yh)) != NULL)
    o.perm = dt_retain(perm_h);
  if (!o.perm) { s = dt_last_status(); goto done; }
  if (n > 0 && (s = dt__tr_batch(tr, d, &o, 0, bs < n ? bs : n, &xb, &yb)) != DT_OK) goto done;
  for (b = 0; b < n; b += bs) {
    dt_tensor *x = xb, *y = yb;
    if (tr->cuda_graph && x->shape.dims[0] == bs) { /* a full minibatch */
      int had = gr->g != NULL;
      s = dt__tr_graph_step(op, tr, rep, m, gr, x, y, sums);
      if (!had && gr->g) { dt_tensor *ts[4]; ts[0] = perm_h; ts[1] = o.perm; ts[2] = o.y_perm; ts[3] = yh; dt__tr_graph_hold(gr, ts, 4); }
    } else {
      s = dt__trainer_step(tr, rep, m, x, y, sums, DT__STEP_ALL, NULL);
    }
    xb = yb = NULL;
    if (s == DT_OK && b + bs < n) s = dt__tr_batch(tr, d, &o, b + bs, n - (b + bs) < bs ? n - (b + bs) : bs, &xb, &yb);
    dt_release(x); dt_release(y);
    if (s != DT_OK) break;
  }
done:
  dt_release(xb); dt_release(yb);
  dt_release(o.perm); dt_release(o.y_perm); dt_release(yh); dt_release(perm_h);
  dt_set_grad_enabled(was);
  return s;
}

/* The loss and right answers of the model on a data set, in order, without
   gradients (no activations kept); sums on the device, nothing read. In batches of
   4x the training batch, up to 1024 rows (and never fewer than the training batch):
   without activations kept that takes no more memory than a training step of a few
   layers, and the products are bigger, so faster. */
#define DT__TR_EVAL_ROWS 1024
static dt_status dt__trainer_eval(dt_trainer *tr, dt_module *m, const dt__tr_data *d, dt__tr_sums *sums) {
  int64_t n = d->n, b, bs = tr->batch_size;
  int was = dt_set_grad_enabled(0), training = m->training;
  dt_status s = DT_OK;
  dt_dtype ac = dt_set_autocast(tr->device.type, tr->autocast);
  dt_module_train(m, 0); /* net.eval() */
  if (bs < DT__TR_EVAL_ROWS) bs = 4 * bs < DT__TR_EVAL_ROWS ? 4 * bs : DT__TR_EVAL_ROWS;
  for (b = 0; b < n && s == DT_OK; b += bs) {
    dt_tensor *xb, *yb, *pred;
    if ((s = dt__tr_batch(tr, d, NULL, b, n - b < bs ? n - b : bs, &xb, &yb)) != DT_OK) break;
    if ((pred = dt_forward(m, xb)) != NULL) s = dt__tr_accumulate(tr, pred, yb, sums);
    else s = dt_last_status();
    dt_release(pred); dt_release(xb); dt_release(yb);
  }
  dt_module_train(m, training);
  dt_set_grad_enabled(was);
  dt_set_autocast(tr->device.type, ac);
  return s;
}

/* The sums of up to two dt__tr_sums, read to the host in one copy: out[0..3] =
   a.loss, a.right, b.loss, b.right (NaN where absent). */
static dt_status dt__tr_read(const char *op, const dt__tr_sums *a, const dt__tr_sums *b, double out[4]) {
  const dt_tensor *src[4];
  dt_tensor *parts[4], *all = NULL;
  double raw[4];
  int k = 0, i, j;
  dt_status s = DT_OK;
  src[0] = a->loss; src[1] = a->right; src[2] = b ? b->loss : NULL; src[3] = b ? b->right : NULL;
  for (i = 0; i < 4; i++) {
    dt_tensor *c;
    out[i] = NAN;
    if (!src[i]) continue;
    c = dt_cast(src[i], DT_F64);
    parts[k] = c ? dt_reshape(c, dt_shape1(1)) : NULL;
    dt_release(c);
    if (!parts[k]) { s = dt_last_status(); break; }
    k++;
  }
  if (s == DT_OK && !(all = k == 1 ? dt_retain(parts[0]) : dt_cat((const dt_tensor *const *)parts, k, 0))) s = dt_last_status();
  /* the one read */
  if (s == DT_OK) s = dt_to_host(all, raw, sizeof(double) * (size_t)k);
  for (i = 0, j = 0; s == DT_OK && i < 4; i++)
    if (src[i]) out[i] = raw[j++];
  for (i = 0; i < k; i++) dt_release(parts[i]);
  dt_release(all);
  (void)op;
  return s;
}

/* (X, y) as loss_fn needs them: MSE, X (n, in) float and y (n, out) of its dtype;
   cross-entropy, X (n, in) float and y (n,) int64 labels; on one device. */
static dt_status dt__trainer_check_xy(const char *op, const dt_trainer *tr, const char *xn, const dt_tensor *X,
                                      const char *yn, const dt_tensor *y) {
  dt_status s;
  char a[200], c[200];
  if ((s = dt__check_tensor(op, xn, X)) != DT_OK || (s = dt__check_tensor(op, yn, y)) != DT_OK) return s;
  if ((s = dt__same_device(op, xn, X, yn, y)) != DT_OK) return s;
  if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY) {
    if (X->shape.ndim < 2 || y->shape.ndim != 1 || X->shape.dims[0] != y->shape.dims[0])
      return dt__fail(DT_ERR_SHAPE, "%s: expected %s (n, ...) and %s (n,) of class labels for the cross-entropy loss, got %s and %s",
                      op, xn, yn, dt__shape_str(&X->shape, a, sizeof a), dt__shape_str(&y->shape, c, sizeof c));
    if (y->dtype != DT_I64)
      return dt__fail(DT_ERR_DTYPE, "%s: expected %s to hold int64 class labels for the cross-entropy loss, got %s (convert with dt_cast)",
                      op, yn, dt_dtype_name(y->dtype));
    return dt__float_only(op, xn, X);
  }
  if (dt__is_float(X->dtype) && !dt__is_float(y->dtype)) /* integer targets are most likely class labels */
    return dt__fail(DT_ERR_DTYPE, "%s: %s is %s but the MSE loss (tr.loss_fn DT_LOSS_MSE, the default) needs %s targets like %s's: "
                    "for class labels set tr.loss_fn = DT_LOSS_CROSS_ENTROPY%s; for regression cast %s to %s (dt_cast(%s, %s))",
                    op, yn, dt_dtype_name(y->dtype), dt_dtype_name(X->dtype), xn,
                    y->dtype == DT_I64 ? "" : y->shape.ndim == 1 ? " with int64 labels (dt_cast to DT_I64)" : " with (n,) int64 labels",
                    yn, dt_dtype_name(X->dtype), yn, X->dtype == DT_F64 ? "DT_F64" : "DT_F32");
  if ((s = dt__same_dtype(op, xn, X, yn, y)) != DT_OK) return s;
  if (X->shape.ndim < 2 || y->shape.ndim != 2 || X->shape.dims[0] != y->shape.dims[0])
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s (n, ...) and %s (n, out), got %s and %s", op, xn, yn,
                    dt__shape_str(&X->shape, a, sizeof a), dt__shape_str(&y->shape, c, sizeof c));
  return dt__float_only(op, xn, X);
}

/* The labels of y (int64, on any device) in [0, classes): checked once, on the host,
   before the first step (the loss would otherwise see them on the device). -1: none. */
static dt_status dt__trainer_label_range(const char *op, const char *yn, const dt_tensor *y, int64_t *lo, int64_t *hi) {
  int64_t *h, i;
  dt_status s;
  *lo = 0; *hi = -1;
  if (y->numel == 0) return DT_OK;
  if (!(h = (int64_t *)DT_MALLOC(y->nbytes))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host reading %s", op, yn);
  if ((s = dt_to_host(y, h, y->nbytes)) == DT_OK) {
    *lo = *hi = h[0];
    for (i = 1; i < y->numel; i++) { if (h[i] < *lo) *lo = h[i]; if (h[i] > *hi) *hi = h[i]; }
    if (*lo < 0) s = dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s holds the class label %lld; labels must be >= 0", op, yn, (long long)*lo);
  }
  DT_FREE(h);
  return s;
}

static dt_status dt__trainer_check(const char *op, dt_trainer *tr, dt_module *m) {
  if (!tr) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: tr is NULL", op);
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (tr->autocast != DT_F32 && tr->autocast != DT_F16 && tr->autocast != DT_BF16)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: tr.autocast must be DT_F32 (off), DT_F16 or DT_BF16, got %s", op,
                    dt_dtype_name(tr->autocast));
  if (tr->loss_fn != DT_LOSS_MSE && tr->loss_fn != DT_LOSS_CROSS_ENTROPY)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: loss_fn must be DT_LOSS_MSE or DT_LOSS_CROSS_ENTROPY, got %d", op, (int)tr->loss_fn);
  if (tr->batch_size <= 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: batch_size must be positive, got %lld", op, (long long)tr->batch_size);
  return DT_OK;
}

/* The width of m's output for an input of `in` columns, without running it (a lazy layer
   knows its out_features): the last linear layer's, or `in` when there is none. */
static int64_t dt__module_out_width(const dt_module *m, int64_t in) {
  int i;
  if (m->kind == DT__M_LINEAR) return m->out;
  for (i = 0; m->kind == DT__M_SEQ && i < m->n; i++) in = dt__module_out_width(m->layers[i], in);
  return in;
}

/* Before anything changes (the model's device, a lazy layer's first draw): the labels' largest
   against the classes the model will give. */
static dt_status dt__trainer_label_classes(const char *op, dt_module *m, const dt_tensor *X, int64_t hi, const char *yn) {
  int64_t classes;
  if (hi < 0 || X->shape.ndim != 2 || dt__module_has_user(m)) return DT_OK; /* else from a first forward (below) */
  classes = dt__module_out_width(m, X->shape.dims[1]);
  if (hi >= classes)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s holds the class label %lld, but the model has %lld outputs (classes 0..%lld)",
                    op, yn, (long long)hi, (long long)classes, (long long)classes - 1);
  return DT_OK;
}

/* After the labels passed dt__trainer_label_classes: a first forward of one row, which sizes a
   lazy layer before data-parallel copies are made, and the model's classes against the labels'
   largest once more, from the output itself. */
static dt_status dt__trainer_check_classes(const char *op, dt_module *m, const dt__tr_data *d, int64_t hi, const char *yn) {
  dt_tensor *xb, *pred;
  int64_t classes;
  int was, training;
  if (hi < 0 || d->n == 0) return DT_OK;
  was = dt_set_grad_enabled(0);
  xb = d->Xd ? dt_slice(d->Xd, 0, 0, 1) : NULL;
  if (!d->Xd) { dt_tensor *xh = dt_slice(d->X, 0, 0, 1); xb = xh ? dt_to(xh, dt_module_device(m)) : NULL; dt_release(xh); }
  /* in evaluation mode: batch norm neither updates its running statistics from one row nor
     refuses it, dropout draws nothing */
  training = m->training;
  dt_module_train(m, 0);
  pred = xb ? dt_forward(m, xb) : NULL;
  dt_module_train(m, training);
  dt_set_grad_enabled(was);
  dt_release(xb);
  if (!pred) return dt_last_status();
  classes = pred->shape.ndim == 2 ? pred->shape.dims[1] : -1;
  dt_release(pred);
  if (classes < 0) return dt__fail(DT_ERR_SHAPE, "%s: the model's output must be (n, classes) for the cross-entropy loss", op);
  if (hi >= classes)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s holds the class label %lld, but the model has %lld outputs (classes 0..%lld)",
                    op, yn, (long long)hi, (long long)classes, (long long)classes - 1);
  return DT_OK;
}

static dt_status dt__trainer_fit(const char *op, dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                 const dt_tensor *Xv, const dt_tensor *yv) {
  dt__tr_data d, dv;
  dt__tr_sums sums, vs;
  dt__replicas rep;
  dt__tr_graph gr;
  int64_t *idx = NULL, lo, hi, vlo, vhi;
  int epoch, val = Xv || yv, training = m ? m->training : 1;
  dt_status s;
  memset(&rep, 0, sizeof rep);
  memset(&gr, 0, sizeof gr);
  memset(&d, 0, sizeof d); memset(&dv, 0, sizeof dv); memset(&sums, 0, sizeof sums); memset(&vs, 0, sizeof vs);
  if ((s = dt__trainer_check(op, tr, m)) != DT_OK) return s;
  if ((s = dt__trainer_graph_check(op, tr)) != DT_OK) return s;
  if (tr->num_gpus > 1 && dt_dist_world_size() < 2 && !dt__module_clonable(m)) /* the replicas are copies of m */
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: training on %d GPUs copies the model to each, but m holds a module written with "
                    "dt_module_new, whose forward and state cannot be copied: train it on one GPU, or one rank per GPU "
                    "(dt_dist_init), which copies nothing", op, tr->num_gpus);
  if (tr->autocast == DT_F16 && !tr->grad_scaler && !(tr->grad_scaler = dt_grad_scaler_new(65536.0))) return dt_last_status();
  if ((s = dt__trainer_check_xy(op, tr, "X", X, "y", y)) != DT_OK) return s;
  if (val) {
    char a[200], c[200];
    if ((s = dt__trainer_check_xy(op, tr, "X_val", Xv, "y_val", yv)) != DT_OK) return s;
    if (Xv->dtype != X->dtype || Xv->shape.ndim != X->shape.ndim ||
        memcmp(Xv->shape.dims + 1, X->shape.dims + 1, sizeof(int64_t) * (size_t)(X->shape.ndim - 1)) != 0 ||
        (y->shape.ndim == 2 && yv->shape.dims[1] != y->shape.dims[1]))
      return dt__fail(DT_ERR_SHAPE, "%s: expected X_val and y_val with X's and y's columns and dtype, got X %s %s and X_val %s %s", op,
                      dt__shape_str(&X->shape, a, sizeof a), dt_dtype_name(X->dtype), dt__shape_str(&Xv->shape, c, sizeof c),
                      dt_dtype_name(Xv->dtype));
  }
  if ((uint64_t)X->shape.dims[0] >= (uint64_t)(SIZE_MAX / sizeof(int64_t)))  /* the shuffle's index: 8 bytes a row */
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host: X has %lld rows, and an index of 8 bytes a row "
                    "to shuffle them does not fit in memory", op, (long long)X->shape.dims[0]);
  if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY) {
    if ((s = dt__trainer_label_range(op, "y", y, &lo, &hi)) != DT_OK) return s;
    if (val && (s = dt__trainer_label_range(op, "y_val", yv, &vlo, &vhi)) != DT_OK) return s;
    if ((s = dt__trainer_label_classes(op, m, X, hi, "y")) != DT_OK) return s;
    if (val && (s = dt__trainer_label_classes(op, m, Xv, vhi, "y_val")) != DT_OK) return s;
  } else {
    hi = vhi = -1;
  }
  if ((s = dt_trainer_prepare_model(tr, m)) != DT_OK) return s;
  if (!(idx = (int64_t *)DT_MALLOC(sizeof(int64_t) * (size_t)(X->shape.dims[0] + 1))))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  if ((s = dt__tr_data_init(tr, X, y, &d)) != DT_OK) goto done;
  if (val && (s = dt__tr_data_init(tr, Xv, yv, &dv)) != DT_OK) goto done;
  if ((s = dt__trainer_check_classes(op, m, &d, hi, "y")) != DT_OK) goto done;
  if (val && (s = dt__trainer_check_classes(op, m, &dv, vhi, "y_val")) != DT_OK) goto done;
  if ((s = dt__tr_sums_init(op, tr, X, &sums)) != DT_OK) goto done;
  if (val && (s = dt__tr_sums_init(op, tr, X, &vs)) != DT_OK) goto done;
  if ((s = dt__replicas_init(op, tr, m, &sums, &rep)) != DT_OK) goto done; /* num_gpus > 1, or ranks: data parallel */
  for (epoch = 0; epoch < tr->max_epochs; epoch++) {
    double t0 = dt__wall_seconds(), v[4];
    dt_epoch_result r;
    dt_module_train(m, 1); /* net.train() */
    if ((s = dt__trainer_epoch(op, tr, &rep, m, &d, idx, &sums, &gr)) != DT_OK) goto done;
    if ((s = dt__replicas_gather_sums(&rep)) != DT_OK) goto done; /* the other GPUs' parts, on the first */
    if (val && (s = dt__trainer_eval(tr, m, &dv, &vs)) != DT_OK) goto done;
    if ((s = dt__tr_read(op, &sums, val ? &vs : NULL, v)) != DT_OK) goto done;
    if ((s = dt__replicas_rank_sums(&rep, v)) != DT_OK) goto done; /* the other ranks' parts */
    r.epoch = epoch + 1;
    r.loss = v[0] / (double)d.n;
    r.train_acc = v[1] / (double)d.n;
    r.val_loss = val ? v[2] / (double)dv.n : NAN;
    r.val_acc = val ? v[3] / (double)dv.n : NAN;
    r.seconds = dt__wall_seconds() - t0;
    if (epoch < 64) { tr->epoch_loss[epoch] = r.loss; tr->epochs[epoch] = r; }
    tr->last_loss = r.loss;
    tr->last = r;
    tr->epochs_run = epoch + 1;
    if (!tr->quiet) {
      char dn[48];
      printf("epoch %d/%d, loss %.6f", epoch + 1, tr->max_epochs, r.loss);
      if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY) printf(", train acc %.4f", r.train_acc);
      if (val) printf(tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? ", val loss %.6f, val acc %.4f" : ", val loss %.6f", r.val_loss, r.val_acc);
      printf(", on %s\n", dt_device_str(tr->device, dn, sizeof dn));
      fflush(stdout);
    }
    if (tr->on_epoch) tr->on_epoch(tr, &r, tr->user);
    if ((s = dt_fill_(sums.loss, 0)) != DT_OK || (sums.right && (s = dt_fill_(sums.right, 0)) != DT_OK)) goto done;
    if (val && ((s = dt_fill_(vs.loss, 0)) != DT_OK || (vs.right && (s = dt_fill_(vs.right, 0)) != DT_OK))) goto done;
  }
done:
  dt_module_train(m, training);
  dt__tr_graph_free(&gr);
  dt__replicas_free(&rep);
  dt__tr_sums_free(&sums); dt__tr_sums_free(&vs);
  dt__tr_data_free(&d); dt__tr_data_free(&dv);
  if (idx) DT_FREE(idx);
  return s;
}

DTDEF dt_status dt_trainer_fit(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y) {
  return dt__trainer_fit("dt_trainer_fit", tr, m, X, y, NULL, NULL);
}

DTDEF dt_status dt_trainer_fit_val(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                   const dt_tensor *X_val, const dt_tensor *y_val) {
  const char *op = "dt_trainer_fit_val";
  if (tr && m && X && y && (!X_val) != (!y_val))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: give X_val and y_val both or neither, got X_val %s and y_val %s", op,
                    X_val ? "set" : "NULL", y_val ? "set" : "NULL");
  return dt__trainer_fit(op, tr, m, X, y, X_val, y_val);
}

DTDEF dt_status dt_trainer_evaluate(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                    double *loss, double *accuracy) {
  const char *op = "dt_trainer_evaluate";
  dt__tr_data d;
  dt__tr_sums sums;
  int64_t lo, hi = -1;
  double v[4];
  dt_status s;
  memset(&d, 0, sizeof d); memset(&sums, 0, sizeof sums);
  if ((s = dt__trainer_check(op, tr, m)) != DT_OK || (s = dt__trainer_check_xy(op, tr, "X", X, "y", y)) != DT_OK) return s;
  if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY && ((s = dt__trainer_label_range(op, "y", y, &lo, &hi)) != DT_OK ||
                                               (s = dt__trainer_label_classes(op, m, X, hi, "y")) != DT_OK)) return s;
  if ((s = dt_trainer_prepare_model(tr, m)) != DT_OK) return s;
  if ((s = dt__tr_data_init(tr, X, y, &d)) == DT_OK && (s = dt__trainer_check_classes(op, m, &d, hi, "y")) == DT_OK &&
      (s = dt__tr_sums_init(op, tr, X, &sums)) == DT_OK && (s = dt__trainer_eval(tr, m, &d, &sums)) == DT_OK &&
      (s = dt__tr_read(op, &sums, NULL, v)) == DT_OK) {
    if (loss) *loss = v[0] / (double)d.n;
    if (accuracy) *accuracy = v[1] / (double)d.n;
  }
  dt__tr_sums_free(&sums);
  dt__tr_data_free(&d);
  return s;
}

DTDEF void dt_trainer_free(dt_trainer *tr) {
  if (!tr) return;
  dt_grad_scaler_free(tr->grad_scaler);
  memset(tr, 0, sizeof *tr);
}
