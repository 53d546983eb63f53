/* tr.cuda_graph: the trainer's step captured into a graph (torch.cuda.graphs' whole-network
   capture). The first full minibatch of the fit runs eagerly (it makes lazy layers' parameters,
   the optimizer's state, the backend's workspaces); the second is copied into the static inputs
   and its step captured, then replayed for it and for every later full minibatch, each copied
   into the static inputs first (gathered outside the graph). A smaller last minibatch runs
   eagerly. The loss and right answers accumulate into the trainer's sums inside the graph. */

static dt_status dt__trainer_step(dt_trainer *tr, dt__replicas *rep, dt_module *m, const dt_tensor *xb, const dt_tensor *yb,
                                  dt__tr_sums *sums); /* "fit" */

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
} dt__tr_graph;

static void dt__tr_graph_free(dt__tr_graph *gr) {
  int i;
  dt_graph_free(gr->g); /* first: the graph reads x and y */
  dt_release(gr->x); dt_release(gr->y);
  for (i = 0; i < gr->nhold; i++) dt_release(gr->hold[i]);
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

/* 1 when m is or holds a dropout layer with p > 0 (it draws in training mode). */
static int dt__module_has_dropout(const dt_module *m) {
  int i;
  if (m->kind == DT__M_USER && m->fwd == dt__norm_forward && m->user &&
      ((const dt__norm_layer *)m->user)->kind == DT__N_DROPOUT && ((const dt__norm_layer *)m->user)->p > 0)
    return 1;
  for (i = 0; i < m->n; i++) if (dt__module_has_dropout(m->layers[i])) return 1;
  return 0;
}

/* What a replayed step cannot do as an eager one does, refused before anything changes. */
static dt_status dt__trainer_graph_check(const char *op, const dt_trainer *tr, const dt_module *m) {
  const char *why = NULL;
  if (tr->cuda_graph == 0) return DT_OK;
  if (tr->cuda_graph != 1) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: tr.cuda_graph must be 0 (off) or 1, got %d", op, tr->cuda_graph);
  if (tr->num_gpus > 1 || dt_dist_world_size() > 1)
    why = "data parallel training (num_gpus > 1 or several ranks) sums the gradients between devices at each step";
  else if (tr->optimizer && tr->optimizer->hp.kind != DT__OPT_SGD)
    why = "Adam and AdamW count their steps on the host (the bias correction would stay the captured step's): use dt_sgd";
  else if (tr->gradient_clip_val > 0)
    why = "gradient_clip_val > 0 reads the gradients' norm on the host at each step";
  else if (tr->autocast == DT_F16)
    why = "autocast DT_F16's grad scaler reads on the host whether the gradients hold an inf or a NaN at each step "
          "(DT_BF16 needs no scaler)";
  else if (dt__module_has_dropout(m))
    why = "the model holds dropout with p > 0: every replay would draw the captured step's mask again";
  if (why) return dt__fail(DT_ERR_UNSUPPORTED, "%s: tr.cuda_graph cannot capture the training step: %s", op, why);
  return DT_OK;
}

/* Captures the step on the static inputs gr->x, gr->y (already holding the minibatch): nothing
   runs. A step that draws random numbers is refused (replays would repeat the draws). */
static dt_status dt__tr_graph_capture(const char *op, dt_trainer *tr, dt__replicas *rep, dt_module *m, dt__tr_graph *gr,
                                      dt__tr_sums *sums) {
  uint64_t draws = dt__rng_draws();
  dt_status s;
  dt_graph *g;
  if ((s = dt_graph_begin(tr->device)) != DT_OK) return s;
  s = dt__trainer_step(tr, rep, m, gr->x, gr->y, sums);
  g = dt_graph_end(tr->device); /* ends the capture whatever the step said */
  if (s == DT_OK && !g) s = dt_last_status();
  if (s == DT_OK && dt__rng_draws() != draws)
    s = dt__fail(DT_ERR_UNSUPPORTED, "%s: tr.cuda_graph cannot capture the training step: it draws random numbers (dropout, "
                 "dt_rand in a module's forward), and every replay would draw the captured step's numbers again", op);
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
    if ((s = dt__trainer_step(tr, rep, m, xb, yb, sums)) == DT_OK) gr->warm = 1;
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
  return dt_graph_replay(gr->g);
}

/* After the step that captured the graph: the epoch's tensors from before the capture, held. */
static void dt__tr_graph_hold(dt__tr_graph *gr, dt_tensor *const *ts, int n) {
  int i;
  for (i = 0; i < n; i++)
    if (ts[i] && gr->nhold < (int)(sizeof gr->hold / sizeof gr->hold[0])) gr->hold[gr->nhold++] = dt_retain(ts[i]);
}
