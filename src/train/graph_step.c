/* tr.cuda_graph: the trainer's step captured into a graph (torch.cuda.graphs' whole-network
   capture). The first full minibatch of the fit runs eagerly (it makes lazy layers' parameters,
   the optimizer's state, the backend's workspaces); the second is copied into the static inputs
   and its step captured, then replayed for it and for every later full minibatch, each copied
   into the static inputs first (gathered outside the graph). A smaller last minibatch runs
   eagerly. The loss and right answers accumulate into the trainer's sums inside the graph.
   Random draws in the step (dropout) are the graph's: each replay draws afresh, what the eager
   step would have drawn (dt_graph_replay).

   The whole step is captured with plain SGD (with or without a dt_sgd optimizer). Otherwise
   the graph holds the gradients' part (zeroing, forward, loss, backward) and the update runs
   eagerly after each replay, on the gradients the graph wrote: Adam's and AdamW's bias
   correction counts the steps on the host, clipping reads the gradients' norm, and the grad
   scaler of autocast DT_F16 reads whether they hold an inf or a NaN and changes its scale,
   which the graph then reads from a scalar on the device. An autograd backward stores new gradient tensors, whose memory the module takes
   in (dt__grad_adopt), so an eager step (the smaller last minibatch) leaves the module holding
   memory other than the graph's: the memory the captured backward wrote is held (gr->grads)
   and handed back to the parameters before each eager update. */

/* What a step runs: all of it, or one of its two parts for the capture of the gradients
   alone (above): the gradients (zeroing them, the forward, the
   loss, the backward: what a graph replays) or the update (the grad scaler's check, clipping,
   the optimizer's step: what runs eagerly after each replay). */
enum { DT__STEP_ALL, DT__STEP_GRADS, DT__STEP_UPDATE };

static dt_status dt__trainer_step(dt_trainer *tr, dt__replicas *rep, dt_module *m, const dt_tensor *xb, const dt_tensor *yb,
                                  dt__tr_sums *sums, int phase, const dt_tensor *scale); /* "fit" */

/* The captured step and its inputs, kept across the epochs of one fit. */
typedef struct dt__tr_graph {
  int warm;         /* the eager warm-up step ran */
  dt_tensor *x, *y; /* the static minibatch the graph reads, on tr->device */
  dt_graph *g;
  /* the tensors of the fit that were alive when the capture began and would be released while
     the graph lives (the epoch's order, the minibatch): a storage from before the capture
     released after it makes the graph refuse to replay, so they are released after it */
  dt_tensor *hold[6];
  int nhold;
  int split;        /* the graph holds the gradients' part only; the update runs after each replay */
  dt_tensor **grads;/* split: each parameter's gradient as the graph writes it (NULL where it has none) */
  int ngrads;
  dt_tensor *scale; /* autocast DT_F16: the grad scaler's scale, F32 () on tr->device, as the graph reads it */
  double scale_at;  /* the value in it */
} dt__tr_graph;

static void dt__tr_graph_free(dt__tr_graph *gr) {
  int i;
  dt_graph_free(gr->g); /* first: the graph reads x and y */
  dt_release(gr->x); dt_release(gr->y); dt_release(gr->scale);
  for (i = 0; i < gr->nhold; i++) dt_release(gr->hold[i]);
  for (i = 0; i < gr->ngrads; i++) dt_release(gr->grads[i]);
  DT_FREE(gr->grads);
  memset(gr, 0, sizeof *gr);
}

/* The random draws made so far (dt__rng_next's counter). */
static uint64_t dt__rng_draws(void) {
  uint64_t d;
  dt__lock(&dt__rng_lock);
  d = dt__draw;
  dt__unlock(&dt__rng_lock);
  return d;
}

/* What a replayed step cannot do as an eager one does, refused before anything changes. */
static dt_status dt__trainer_graph_check(const char *op, const dt_trainer *tr) {
  if (tr->cuda_graph == 0) return DT_OK;
  if (tr->cuda_graph != 1) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: tr.cuda_graph must be 0 (off) or 1, got %d", op, tr->cuda_graph);
  if (tr->num_gpus > 1 || dt_dist_world_size() > 1)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: tr.cuda_graph cannot capture the training step: data parallel training (num_gpus > 1 "
                    "or several ranks) sums the gradients between devices at each step", op);
  return DT_OK;
}

/* During the capture, after the gradients' part: the gradients it wrote, held (the module has
   taken them in: their memory stays its as long as no eager step runs). */
static dt_status dt__tr_graph_grads_keep(const char *op, dt__tr_graph *gr, dt_module *m) {
  int n = dt_module_num_params(m), i;
  if (n <= 0) return DT_OK;
  if (!(gr->grads = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)n)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host keeping the captured gradients", op);
  memset(gr->grads, 0, sizeof(dt_tensor *) * (size_t)n);
  gr->ngrads = n;
  for (i = 0; i < n; i++) {
    dt_tensor *p = dt_module_param(m, i, NULL); /* the module takes in the new gradients */
    if (!p) return dt_last_status();
    if (p->grad && !(gr->grads[i] = dt_detach(p->grad))) return dt_last_status();
  }
  return DT_OK;
}

/* Before an eager update after a replay: each parameter's gradient is the memory the graph
   wrote (an eager step since may have given the module other memory). */
static dt_status dt__tr_graph_grads_give(dt__tr_graph *gr, dt_module *m) {
  int i;
  for (i = 0; i < gr->ngrads; i++) {
    dt_tensor *p, *h;
    if (!gr->grads[i]) continue;
    if (!(p = dt_module_param(m, i, NULL))) return dt_last_status();
    if (p->grad && p->grad->st == gr->grads[i]->st) continue;
    if (!(h = dt_detach(gr->grads[i]))) return dt_last_status();
    dt_release(p->grad);
    p->grad = h;
  }
  return DT_OK;
}

/* Captures the step, or its gradients' part, on the static inputs gr->x, gr->y (already holding
   the minibatch): nothing runs. A step that draws random numbers on the host is refused (the
   replays could not draw them afresh). */
static dt_status dt__tr_graph_capture(const char *op, dt_trainer *tr, dt__replicas *rep, dt_module *m, dt__tr_graph *gr,
                                      dt__tr_sums *sums) {
  uint64_t draws = dt__rng_draws();
  dt_status s;
  dt_graph *g;
  gr->split = (tr->optimizer && tr->optimizer->hp.kind != DT__OPT_SGD) || tr->gradient_clip_val > 0 ||
              (tr->autocast == DT_F16 && tr->grad_scaler);
  if (tr->autocast == DT_F16 && tr->grad_scaler && !gr->scale) {
    if (!(gr->scale = dt_full(dt_shape0(), tr->grad_scaler->scale, tr->device))) return dt_last_status();
    gr->scale_at = tr->grad_scaler->scale;
  }
  if ((s = dt_graph_begin(tr->device)) != DT_OK) return s;
  s = dt__trainer_step(tr, rep, m, gr->x, gr->y, sums, gr->split ? DT__STEP_GRADS : DT__STEP_ALL, gr->scale);
  if (s == DT_OK && gr->split) s = dt__tr_graph_grads_keep(op, gr, m);
  g = dt_graph_end(tr->device); /* ends the capture whatever the step said */
  if (s == DT_OK && !g) s = dt_last_status();
  if (s == DT_OK && dt__rng_draws() != draws)
    s = dt__fail(DT_ERR_UNSUPPORTED, "%s: tr.cuda_graph cannot capture the training step: it draws random numbers on the host, "
                 "which the replays could not draw afresh", op);
  if (s != DT_OK) { dt_graph_free(g); return s; }
  gr->g = g;
  return DT_OK;
}

/* One full minibatch's step under tr.cuda_graph: the warm-up runs eagerly, then the minibatch
   goes into the static inputs (a copy on the device) and the graph, captured the first time,
   replays. The caller holds the epoch's other tensors once gr->g is set (dt__tr_graph_hold). */
static dt_status dt__tr_graph_step(const char *op, dt_trainer *tr, dt__replicas *rep, dt_module *m, dt__tr_graph *gr,
                                   const dt_tensor *xb, const dt_tensor *yb, dt__tr_sums *sums) {
  dt_status s;
  if (!gr->warm) {
    if ((s = dt__trainer_step(tr, rep, m, xb, yb, sums, DT__STEP_ALL, NULL)) == DT_OK) gr->warm = 1;
    return s;
  }
  if (!gr->x) {
    if (!(gr->x = dt__new(op, xb->shape, xb->dtype, tr->device)) || !(gr->y = dt__new(op, yb->shape, yb->dtype, tr->device))) {
      dt_release(gr->x); gr->x = NULL;
      return dt_last_status();
    }
  }
  if ((s = dt_copy_(gr->x, xb)) != DT_OK || (s = dt_copy_(gr->y, yb)) != DT_OK) return s;
  if (!gr->g) {
    if ((s = dt__tr_graph_capture(op, tr, rep, m, gr, sums)) != DT_OK) return s;
    gr->hold[gr->nhold++] = dt_retain((dt_tensor *)xb);
    gr->hold[gr->nhold++] = dt_retain((dt_tensor *)yb);
  }
  if (gr->scale && gr->scale_at != tr->grad_scaler->scale) { /* the scaler changed it after a step */
    if ((s = dt_fill_(gr->scale, tr->grad_scaler->scale)) != DT_OK) return s;
    gr->scale_at = tr->grad_scaler->scale;
  }
  if ((s = dt_graph_replay(gr->g)) != DT_OK || !gr->split) return s;
  if ((s = dt__tr_graph_grads_give(gr, m)) != DT_OK) return s;
  return dt__trainer_step(tr, rep, m, gr->x, gr->y, sums, DT__STEP_UPDATE, NULL);
}

/* After the step that captured the graph: the epoch's tensors from before the capture, held. */
static void dt__tr_graph_hold(dt__tr_graph *gr, dt_tensor *const *ts, int n) {
  int i;
  for (i = 0; i < n; i++)
    if (ts[i] && gr->nhold < (int)(sizeof gr->hold / sizeof gr->hold[0])) gr->hold[gr->nhold++] = dt_retain(ts[i]);
}
