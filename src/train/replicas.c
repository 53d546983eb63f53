/* dt_trainer_fit with num_gpus > 1 in one process: a replica of the model on each kept
   GPU (the model itself on the first), each minibatch split in contiguous parts, one
   per replica; each replica's loss gradient is weighted by its share of the rows, the
   parameter gradients are summed over the replicas (NCCL's grouped all-reduce when
   devtensor_cuda.cu has NCCL, else copies through the first GPU), and every replica
   takes the same SGD step, so the replicas stay identical and the run equals one GPU
   on the same minibatches to float rounding. With tr->optimizer (made on the caller's
   model) the first replica takes the optimizer's step and its parameters are then
   broadcast to the others (NCCL's grouped broadcast, or copies). Each replica sums its
   part's loss and right answers on its own GPU; at the epoch's end they are added into
   the first GPU's sums by device-to-device copies, so the epoch still has one read.
   Work is queued on each GPU's own stream, so the replicas run at the same time.
   A model the trainer takes through autograd (the library's convolution, pooling, norm,
   dropout, embedding and activation layers; half parameters; tr.autocast) goes back per
   replica from its part's loss times its share of the rows (times the grad scaler's scale
   under autocast DT_F16), through dt_autograd_backward. As torch.nn.DataParallel, each
   replica's batch norm normalises by its own part's statistics, and the caller's model
   keeps the running statistics of its own part (the first) of every minibatch. */
typedef struct dt__replicas {
  int n;                  /* replicas; 0 when training on one device */
  dt_module *m[8];        /* m[0] is the caller's model, the others clones */
  dt__tr_sums sums[8];    /* each replica's loss and right answers on its GPU (sums[0]: the trainer's own, borrowed) */
  dt_device dev[8];
  int idx[8];             /* device indices, for the backend */
  void *comm[8];          /* NCCL communicators, or all NULL: sums by copies */
  int rank, ranks;        /* a distributed run (dt_dist_init, more than one rank): this rank's part of every minibatch */
} dt__replicas;


/* The size of the layer struct of a module the library made with dt_module_new (convolution,
   pooling, flatten, activations; dropout, batch and layer norm, embedding, GELU), which a copy
   duplicates; 0 for a module the caller wrote, whose forward and state a copy cannot know. */
static size_t dt__library_layer_size(const dt_module *m) {
  if (m->kind != DT__M_USER || m->n != 0) return 0;
  if (m->fwd == dt__layer_forward && m->free_user == dt__layer_free) return sizeof(dt__layer);
  if (m->fwd == dt__norm_forward && m->free_user == dt__norm_layer_free) return sizeof(dt__norm_layer);
  return 0;
}

/* 1 when dt__module_clone can copy m: built-in linear and ReLU layers, sequentials, and the
   library's own layers made with dt_module_new; not a module the caller wrote. */
static int dt__module_clonable(const dt_module *m) {
  int i;
  if (m->kind == DT__M_USER) return dt__library_layer_size(m) != 0;
  for (i = 0; m->kind == DT__M_SEQ && i < m->n; i++)
    if (!dt__module_clonable(m->layers[i])) return 0;
  return 1;
}

/* A library layer's copy on device d: its layer struct, its parameters (new leaves with zero
   gradients) and buffers (batch norm's running statistics) copied, in m's order and names. */
static dt_module *dt__layer_clone(const char *op, const dt_module *m, dt_device d) {
  size_t ub = dt__library_layer_size(m);
  void *u = ub ? DT_MALLOC(ub) : NULL;
  dt_module *c;
  dt_status s = DT_OK;
  int i, prev;
  if (!u) {
    if (ub) dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    else dt__fail(DT_ERR_UNSUPPORTED, "%s: a module made by dt_module_new cannot be copied to another GPU", op);
    return NULL;
  }
  memcpy(u, m->user, ub);
  if (!(c = dt_module_new(op, m->fwd, u, m->free_user))) { DT_FREE(u); return NULL; }
  c->device = d; c->dtype = m->dtype; c->training = m->training;
  prev = dt__no_grad; /* new leaves and buffers, not copies recorded by autograd */
  dt__no_grad = 1;
  for (i = 0; i < m->np + m->nb && s == DT_OK; i++) {
    dt_tensor *t = dt_copyto(i < m->np ? m->pts[i] : m->bts[i - m->np], d);
    if (!t) s = dt_last_status();
    else s = i < m->np ? dt_module_add_param(c, m->pnames[i], t) : dt_module_add_buffer(c, m->bnames[i - m->np], t);
    dt_release(t);
  }
  dt__no_grad = prev;
  if (s != DT_OK) { dt_module_free(c); return NULL; }
  return c;
}

/* A copy of m on device d with m's parameters and buffers, zero gradients, and no draw from
   the generator (so the shuffles stay those of a one-GPU run). Its parameters come in m's
   order (dt_module_param, dt_module_grad): the gradients are summed index by index. */
static dt_module *dt__module_clone(const char *op, const dt_module *m, dt_device d) {
  dt_module *c;
  int i;
  if (m->kind == DT__M_USER) return dt__layer_clone(op, m, d);
  if (!(c = dt__module_new(op, m->kind))) return NULL;
  c->device = d; c->dtype = m->dtype; c->in = m->in; c->out = m->out; c->training = m->training;
  if (m->kind == DT__M_LINEAR && m->weight) {
    int prev = dt__no_grad; /* new leaves, not copies recorded by autograd */
    dt__no_grad = 1;
    c->weight = dt_copyto(m->weight, d);
    c->bias = c->weight ? dt_copyto(m->bias, d) : NULL;
    dt__no_grad = prev;
    c->gweight = c->bias ? dt__filled(op, m->weight->shape, m->dtype, 0.0, d) : NULL;
    c->gbias = c->gweight ? dt__filled(op, m->bias->shape, m->dtype, 0.0, d) : NULL;
    if (!c->gbias) { dt_module_free(c); return NULL; }
    dt__linear_link(c);
  }
  if (m->kind == DT__M_SEQ) c->height = 1;
  for (i = 0; m->kind == DT__M_SEQ && i < m->n; i++) {
    dt_module *l = dt__module_clone(op, m->layers[i], d);
    if (!l || dt_sequential_add(c, l) != DT_OK) { dt_module_free(c); return NULL; }
  }
  return c;
}

/* 1 when m holds a layer whose size is not known before its first forward: a lazy linear,
   convolution or batch norm. */
static int dt__module_is_lazy(const dt_module *m) {
  int i;
  if (m->kind == DT__M_LINEAR) return m->weight == NULL;
  if (m->kind == DT__M_USER && m->fwd == dt__layer_forward && ((const dt__layer *)m->user)->kind == DT__L_CONV)
    return ((const dt__layer *)m->user)->in == 0;
  if (m->kind == DT__M_USER && m->fwd == dt__norm_forward && ((const dt__norm_layer *)m->user)->kind == DT__N_BATCH_NORM)
    return ((const dt__norm_layer *)m->user)->features == 0;
  for (i = 0; DT__M_HOLDS(m) && i < m->n; i++)
    if (dt__module_is_lazy(m->layers[i])) return 1;
  return 0;
}

static void dt__replicas_free(dt__replicas *r) {
  int g;
  for (g = 0; g < r->n; g++) {
#ifdef DEVTENSOR_CUDA
    if (r->comm[g]) dt__cuda_backend()->dist_comm_free(r->comm[g]);
#endif
    if (g > 0) { dt_module_free(r->m[g]); dt__tr_sums_free(&r->sums[g]); }
  }
  memset(r, 0, sizeof *r);
}

#ifdef DEVTENSOR_CUDA
/* An environment variable set to anything but "" or "0". */
static int dt__env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}
#endif

/* The replicas for tr's GPUs (none for one device); m is on tr->gpus[0] already. */
static dt_status dt__replicas_init(const char *op, dt_trainer *tr, dt_module *m, const dt__tr_sums *sums, dt__replicas *r) {
  int g;
  memset(r, 0, sizeof *r);
  if (dt__dist_world(NULL) > 1) {
    /* a distributed run: one device per rank, every rank from rank 0's parameters and generator
       (so the shuffles agree), each rank its part of every minibatch (DistributedSampler) */
    dt_status s;
    if (tr->num_gpus > 1)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: in a distributed run each rank trains on one device (dt_dist_device()), "
                      "but the trainer keeps %d GPUs: dt_trainer_init with num_gpus 0 or 1", op, tr->num_gpus);
    if (dt__module_is_lazy(m))
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: in a distributed run every rank starts from rank 0's parameters, but the "
                      "model has a lazy layer whose size is not known yet: run one dt_forward first", op);
    if ((s = dt__dist_start(op, m)) != DT_OK) return s;
    r->n = 1; r->m[0] = m; r->sums[0] = *sums; r->dev[0] = tr->device; r->idx[0] = tr->device.index;
    r->rank = dt_dist_rank(); r->ranks = dt_dist_world_size();
    return DT_OK;
  }
  if (tr->num_gpus < 2 || tr->device.type != DT_CUDA) return DT_OK;
  if (dt__module_is_lazy(m))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: training on %d GPUs copies the model to each, but it has a lazy layer "
                    "whose size is not known yet: run one dt_forward first, or give the layer its input size", op, tr->num_gpus);
  r->n = tr->num_gpus;
  for (g = 0; g < r->n; g++) { r->dev[g] = tr->gpus[g]; r->idx[g] = tr->gpus[g].index; }
  r->m[0] = m; r->sums[0] = *sums;
  for (g = 1; g < r->n; g++) {
    if (!(r->m[g] = dt__module_clone(op, m, r->dev[g])) ||
        !(r->sums[g].loss = dt__filled(op, dt_shape0(), sums->loss->dtype, 0.0, r->dev[g])) ||
        (sums->right && !(r->sums[g].right = dt__filled(op, dt_shape0(), DT_F64, 0.0, r->dev[g])))) {
      dt_status s = dt_last_status();
      dt__replicas_free(r);
      return s;
    }
  }
#ifdef DEVTENSOR_CUDA
  if (!dt__env_flag("DEVTENSOR_NO_NCCL")) { /* DEVTENSOR_NO_NCCL=1: sums by copies, NCCL or not */
    dt_status s = dt__cuda_backend()->dist_comm_init_all(r->n, r->idx, r->comm);
    if (s == DT_ERR_UNSUPPORTED) memset(r->comm, 0, sizeof r->comm); /* no NCCL in this build: copies */
    else if (s != DT_OK) { dt__backend_fail(op, r->dev[0], s); dt__replicas_free(r); return s; }
  }
#endif
  return DT_OK;
}

/* Rows [r0, r1) of the contiguous t (minibatch features, images, targets or labels), on device d. */
static dt_tensor *dt__rows_to(const char *op, const dt_tensor *t, int64_t r0, int64_t r1, dt_device d) {
  size_t rb = t->nbytes / (size_t)t->shape.dims[0];
  dt_shape sh = t->shape;
  dt_tensor *y;
  sh.dims[0] = r1 - r0;
  y = dt__new(op, sh, t->dtype, d);
  if (y && dt__copy_bytes(op, d, y->st->ptr, t->st->device, (const char *)dt_data_ptr((dt_tensor *)t) + (size_t)r0 * rb, (size_t)(r1 - r0) * rb) != DT_OK) {
    dt_release(y);
    return NULL;
  }
  return y;
}

/* The replicas' gradients summed, in every replica. */
static dt_status dt__replicas_sum_grads(const char *op, dt__replicas *r) {
  int i, g, np = dt_module_num_params(r->m[0]);
  dt_status s = DT_OK;
  (void)op;
  for (i = 0; i < np && s == DT_OK; i++) {
    dt_tensor *g0 = dt_module_grad(r->m[0], i);
#ifdef DEVTENSOR_CUDA
    if (r->comm[0]) {
      void *bufs[8];
      for (g = 0; g < r->n; g++) bufs[g] = dt_data_ptr(dt_module_grad(r->m[g], i));
      s = dt__cuda_backend()->dist_all_reduce(r->n, r->comm, r->idx, g0->dtype, (int)DT_REDUCE_SUM, g0->numel, bufs);
      if (s != DT_OK) return dt__backend_fail(op, r->dev[0], s);
      continue;
    }
#endif
    for (g = 1; g < r->n && s == DT_OK; g++) { /* without NCCL: into the first GPU's, then back */
      dt_tensor *t = dt_copyto(dt_module_grad(r->m[g], i), r->dev[0]);
      s = t ? dt_axpy_(g0, 1.0, t) : dt_last_status();
      dt_release(t);
    }
    for (g = 1; g < r->n && s == DT_OK; g++) s = dt_copy_(dt_module_grad(r->m[g], i), g0);
    if (r->ranks > 1 && s == DT_OK) s = dt_all_reduce_(g0, DT_REDUCE_SUM); /* over the ranks (one replica each) */
  }
  return s;
}

/* The first replica's parameters into every other (after the optimizer's step on it). */
static dt_status dt__replicas_bcast_params(const char *op, dt__replicas *r) {
  int i, g, np = dt_module_num_params(r->m[0]);
  dt_status s = DT_OK;
  for (i = 0; i < np && s == DT_OK; i++) {
    dt_tensor *p0 = dt_module_param(r->m[0], i, NULL);
#ifdef DEVTENSOR_CUDA
    if (r->comm[0]) {
      void *bufs[8];
      for (g = 0; g < r->n; g++) bufs[g] = dt_data_ptr(dt_module_param(r->m[g], i, NULL));
      s = dt__cuda_backend()->dist_broadcast(r->n, r->comm, r->idx, p0->dtype, p0->numel, bufs, 0);
      if (s != DT_OK) return dt__backend_fail(op, r->dev[0], s);
      continue;
    }
#endif
    for (g = 1; g < r->n && s == DT_OK; g++) {
      int prev = dt__no_grad; /* parameters are leaves that require grad: written with grad mode off */
      dt__no_grad = 1;
      s = dt_copy_(dt_module_param(r->m[g], i, NULL), p0);
      dt__no_grad = prev;
    }
  }
  (void)op;
  return s;
}

/* The sums of a replica's part, recorded by nothing (a half module's prediction requires grad). */
static dt_status dt__dp_accumulate(dt_trainer *tr, const dt_tensor *pred, const dt_tensor *y, dt__tr_sums *sums) {
  int prev = dt__no_grad;
  dt_status s;
  dt__no_grad = 1;
  s = dt__tr_accumulate(tr, pred, y, sums);
  dt__no_grad = prev;
  return s;
}

/* The loss's gradient with respect to pred, computed as a constant (not recorded). */
static dt_tensor *dt__dp_loss_grad(int ce, const dt_tensor *pred, const dt_tensor *y) {
  int prev = dt__no_grad;
  dt_tensor *g;
  dt__no_grad = 1;
  g = ce ? dt_cross_entropy_grad(pred, y) : dt_mse_loss_grad(pred, y);
  dt__no_grad = prev;
  return g;
}

/* Whether the trainer takes m through autograd (dt__trainer_step_autograd, dt__dp_part_autograd):
   modules the fused backward cannot take, autocast, a half module. */
static int dt__trainer_uses_autograd(const dt_trainer *tr, const dt_module *m) {
  return dt__module_has_user(m) || tr->autocast != DT_F32 || dt__is_half(m->dtype);
}

/* A replica's part (x, y on its device dev) through autograd: the forward and the loss under
   tr.autocast, its sums, and the backward of the loss times `share` (its share of the
   minibatch's rows), and times the grad scaler's scale under autocast DT_F16. */
static dt_status dt__dp_part_autograd(dt_trainer *tr, dt_module *m, dt_device dev, const dt_tensor *x, const dt_tensor *y,
                                      dt__tr_sums *sums, double share) {
  dt_tensor *pred = NULL, *loss = NULL, *part = NULL, *scaled = NULL;
  dt_status s;
  dt_dtype ac = dt_set_autocast(dev.type, tr->autocast);
  if (!(pred = dt_forward(m, x))) s = dt_last_status();
  else if ((s = dt__dp_accumulate(tr, pred, y, sums)) == DT_OK) {
    loss = tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? dt_cross_entropy(pred, y) : dt_mse_loss(pred, y);
    dt_set_autocast(dev.type, ac); /* the backward as the caller had it */
    if (!loss || !(part = dt_mul_scalar(loss, share))) s = dt_last_status();
    else if (tr->autocast == DT_F16 && tr->grad_scaler)
      s = (scaled = dt_grad_scaler_scale(tr->grad_scaler, part)) ? dt_autograd_backward(scaled, NULL) : dt_last_status();
    else
      s = dt_autograd_backward(part, NULL);
  }
  dt_set_autocast(dev.type, ac);
  dt_release(pred); dt_release(loss); dt_release(part); dt_release(scaled);
  return s;
}

/* The gradients of m times f, in place (the grad scaler's unscale of a replica's copy). */
static dt_status dt__dp_grads_scale(const char *op, dt_module *m, double f) {
  dt_status s = dt__params_build(op, m);
  return s == DT_OK ? dt__grads_scale(op, m->grads, m->nparams, f) : s;
}

static dt_status dt__trainer_clip(dt_trainer *tr, dt_module *m);

/* The step from the gradients summed over replicas and ranks (every replica and rank holds the
   same): under autocast DT_F16, unscaled and checked for an inf or a NaN once, on the first
   replica's, the step skipped on every replica and rank when found (all see the same sums, so
   all agree), and the scale updated; clipped (tr.gradient_clip_val); then plain SGD on every
   replica, or the optimizer on the first and its parameters broadcast to the others. */
static dt_status dt__dp_update(const char *op, dt_trainer *tr, dt__replicas *r) {
  int g, steppers = tr->optimizer ? 1 : r->n, scaler = tr->autocast == DT_F16 && tr->grad_scaler;
  dt_status s = DT_OK;
  if (scaler) {
    if ((s = dt__params_build(op, r->m[0])) != DT_OK ||
        (s = dt__grad_scaler_unscale(op, tr->grad_scaler, r->m[0]->grads, r->m[0]->nparams)) != DT_OK)
      return s;
    if (tr->grad_scaler->found_inf) return dt_grad_scaler_update(tr->grad_scaler);
    for (g = 1; g < steppers && s == DT_OK; g++) s = dt__dp_grads_scale(op, r->m[g], 1.0 / tr->grad_scaler->scale);
  }
  for (g = 0; g < steppers && s == DT_OK; g++) s = dt__trainer_clip(tr, r->m[g]);
  if (s == DT_OK && !tr->optimizer)
    for (g = 0; g < r->n && s == DT_OK; g++) s = dt_sgd_step(r->m[g], tr->lr);
  else if (s == DT_OK && (s = dt_optimizer_step(tr->optimizer)) == DT_OK && r->n > 1)
    s = dt__replicas_bcast_params(op, r);
  if (s == DT_OK && scaler) s = dt_grad_scaler_update(tr->grad_scaler);
  return s;
}

/* One minibatch (on the first GPU, or this rank's device) over the replicas and ranks: each
   takes its contiguous part of the rows, sums its loss (times its rows) and right answers
   into its own sums, weights its loss gradient by its share of the rows (or, through
   autograd, its loss); the gradients are summed over replicas and ranks; then the update
   (dt__dp_update). */
static dt_status dt__dp_step(dt_trainer *tr, dt__replicas *r, const dt_tensor *xb, const dt_tensor *yb) {
  const char *op = "dt_trainer_fit";
  int64_t rows = xb->shape.dims[0];
  dt_status s = DT_OK;
  int g;
  int parts = r->n * (r->ranks > 1 ? r->ranks : 1), ce = tr->loss_fn == DT_LOSS_CROSS_ENTROPY;
  int ag = dt__trainer_uses_autograd(tr, r->m[0]);
  for (g = 0; g < r->n && s == DT_OK; g++) {
    int64_t p = (int64_t)r->rank * r->n + g, r0 = rows * p / parts, r1 = rows * (p + 1) / parts;
    double share = (double)(r1 - r0) / (double)rows; /* this replica's share of the mean */
    dt_tensor *x = NULL, *y = NULL, *pred = NULL, *lg = NULL, *lgs = NULL;
    if ((s = dt_zero_grad(r->m[g])) != DT_OK || r1 == r0) continue; /* no rows: its gradients stay zero */
    if (!(x = dt__rows_to(op, xb, r0, r1, r->dev[g])) || !(y = dt__rows_to(op, yb, r0, r1, r->dev[g])))
      s = dt_last_status();
    else if (ag)
      s = dt__dp_part_autograd(tr, r->m[g], r->dev[g], x, y, &r->sums[g], share);
    else if ((pred = dt_forward(r->m[g], x)) && dt__dp_accumulate(tr, pred, y, &r->sums[g]) == DT_OK &&
             (lg = dt__dp_loss_grad(ce, pred, y)) && (lgs = dt_mul_scalar(lg, share)))
      s = dt_backward_params(r->m[g], lgs);
    else
      s = dt_last_status();
    dt_release(x); dt_release(y); dt_release(pred); dt_release(lg); dt_release(lgs);
  }
  if (s == DT_OK) s = dt__replicas_sum_grads(op, r);
  if (s != DT_OK) return s;
  return dt__dp_update(op, tr, r);
}

/* Before the epoch's read: the sums of replicas 1..n-1 since the last call (which zeroes them)
   added into the first replica's, on its GPU (device-to-device copies, no read). */
static dt_status dt__replicas_gather_sums(dt__replicas *r) {
  int g, k;
  dt_status s = DT_OK;
  for (g = 1; g < r->n && s == DT_OK; g++)
    for (k = 0; k < 2 && s == DT_OK; k++) {
      dt_tensor *src = k ? r->sums[g].right : r->sums[g].loss, *dst = k ? r->sums[0].right : r->sums[0].loss, *t;
      if (!src) continue;
      t = dt_copyto(src, r->dev[0]);
      s = t ? dt_axpy_(dst, 1.0, t) : dt_last_status();
      dt_release(t);
      if (s == DT_OK) s = dt_fill_(src, 0);
    }
  return s;
}

/* After the epoch's read, in a distributed run: the training sums v[0] (loss * rows) and v[1]
   (right answers; NaN for MSE) summed over the ranks. */
static dt_status dt__replicas_rank_sums(dt__replicas *r, double v[2]) {
  dt_tensor *t;
  dt_status s;
  if (r->ranks < 2) return DT_OK;
  if (!(t = dt__new("dt_trainer_fit", dt_shape1(2), DT_F64, dt_cpu()))) return dt_last_status();
  ((double *)t->st->ptr)[0] = v[0]; ((double *)t->st->ptr)[1] = v[1] == v[1] ? v[1] : 0.0;
  if ((s = dt_all_reduce_(t, DT_REDUCE_SUM)) == DT_OK) {
    v[0] = ((double *)t->st->ptr)[0];
    if (v[1] == v[1]) v[1] = ((double *)t->st->ptr)[1];
  }
  dt_release(t);
  return s;
}
