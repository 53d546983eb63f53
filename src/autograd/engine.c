/* The autograd engine: dt_autograd_backward walks the graph under a result once, in an order
   where each node runs after every node that uses its result (Kahn's, with counts of the uses
   within the graph), and then frees what the walked nodes saved (retain_graph=False). The leaves'
   new gradients are made first and stored together at the end, so a failed backward changes no
   gradient and no node. Also the leaf functions: dt_requires_grad_, dt_grad, dt_detach, ... */

/* Frees n when this was its last reference, and so every node only it reached: iteratively,
   through the nodes' `next` fields, so a long chain does not deepen the C stack. */
static void dt__node_release(dt__node *n) {
  dt__node *todo = NULL;
  if (n && DT__ATOMIC_ADD(&n->refs, -1) == 0) { n->next = NULL; todo = n; }
  while (todo) {
    dt__node *x = todo;
    int i;
    todo = x->next;
    for (i = 0; i < x->nin; i++) {
      dt__node *c = x->in[i].node;
      if (c && DT__ATOMIC_ADD(&c->refs, -1) == 0) { c->next = todo; todo = c; }
      dt_release(x->in[i].leaf); /* a leaf has no node */
    }
    for (i = 0; i < DT__AG_SAVED; i++) dt_release(x->saved[i]);
    dt_release(x->gacc);
    DT_FREE(x);
  }
}

/* A leaf reached by a backward and the sum of its gradients over the paths so far. */
typedef struct dt__ag_leafacc { dt_tensor *leaf, *acc, *final; } dt__ag_leafacc;

static int dt__same_shape(const dt_shape *a, const dt_shape *b) {
  return a->ndim == b->ndim && memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* 1 when leaf l's gradient is there and held by l alone (no other reference to the tensor or its
   memory, not a view, not foreign memory): the backward then adds into it in place. */
static int dt__grad_in_place(const dt_tensor *l) {
  const dt_tensor *g = l->grad;
  return g && g->refs == 1 && g->st->refs == 1 && !g->st->base && !g->st->foreign && g->dtype == l->dtype;
}

/* Adds gradient g (taken) into *acc (NULL: g becomes it). */
static dt_status dt__ag_accumulate(dt_tensor **acc, dt_tensor *g) {
  dt_tensor *s;
  if (!*acc) { *acc = g; return DT_OK; }
  s = dt_add(*acc, g);
  dt_release(g);
  if (!s) return dt_last_status();
  dt_release(*acc);
  *acc = s;
  return DT_OK;
}

/* Reports a failure inside the backward of node n, keeping the failing call's message. */
static dt_status dt__ag_fail_in(const char *op, const dt__node *n, dt_status s) {
  char msg[1024];
  size_t len = strlen(dt_last_error());
  if (len >= sizeof msg) len = sizeof msg - 1;
  memcpy(msg, dt_last_error(), len); /* dt__fail rewrites the message that this quotes */
  msg[len] = 0;
  return dt__fail(s != DT_OK ? s : DT_ERR_BACKEND, "%s: the backward of %s failed: %s", op, n->name, msg);
}

static dt_status dt__ag_run(const char *op, dt_tensor *out, dt_tensor *seed) {
  dt__node **nodes = NULL, *ready = NULL;
  dt__ag_leafacc *leaves = NULL;
  dt_tensor **gin = NULL;
  int nn = 0, cap = 0, nleaf_edges = 0, nl = 0, maxin = 1, i, j;
  dt_status s = DT_OK;
  char sb[200];
  if (!out->node) { /* a leaf: its own gradient */
    nleaf_edges = 1;
  } else {
    /* the nodes under out, breadth first (the array is the queue), each counting its uses */
    cap = 16;
    if (!(nodes = (dt__node **)DT_MALLOC(sizeof(dt__node *) * (size_t)cap))) goto oom;
    nodes[nn++] = out->node;
    out->node->mark = 1;
    for (i = 0; i < nn; i++) {
      dt__node *x = nodes[i];
      if (x->done) {
        s = dt__fail(DT_ERR_INVALID_ARGUMENT,
                     "%s: trying to backward through the graph a second time: a backward already went through %s and freed "
                     "what it saved (build the expression again for another backward)", op, x->name);
        goto done;
      }
      for (j = 0; j < DT__AG_SAVED; j++)
        if (x->saved[j] && *dt__version(x->saved[j]) != x->saved_version[j]) {
          s = dt__fail(DT_ERR_INVALID_ARGUMENT,
                       "%s: a tensor that %s saved for the backward was changed in place since (dt_fill_, dt_axpy_, dt_copy_ "
                       "or another _ function): it is at version %u, expected %u (change a copy instead)", op, x->name,
                       *dt__version(x->saved[j]), x->saved_version[j]);
          goto done;
        }
      if (x->nin > maxin) maxin = x->nin;
      for (j = 0; j < x->nin; j++) {
        dt__node *c = x->in[j].node;
        if (x->in[j].leaf) nleaf_edges++;
        if (!c) continue;
        if (!c->mark) {
          if (nn == cap) {
            dt__node **bigger;
            if (cap > (1 << 28) || !(bigger = (dt__node **)DT_MALLOC(sizeof(dt__node *) * (size_t)cap * 2))) goto oom;
            memcpy(bigger, nodes, sizeof(dt__node *) * (size_t)nn);
            DT_FREE(nodes);
            nodes = bigger;
            cap *= 2;
          }
          c->mark = 1;
          nodes[nn++] = c;
        }
        c->deps++;
      }
    }
  }
  if (nleaf_edges && !(leaves = (dt__ag_leafacc *)DT_MALLOC(sizeof(dt__ag_leafacc) * (size_t)nleaf_edges))) goto oom;
  if (!(gin = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)maxin))) goto oom;
  if (!out->node) {
    leaves[0].leaf = out; leaves[0].acc = dt_retain(seed); leaves[0].final = NULL;
    nl = 1;
  } else {
    out->node->gacc = dt_retain(seed);
    out->node->next = NULL;
    ready = out->node;
  }
  while (ready) {
    dt__node *x = ready;
    ready = x->next;
    s = dt__ag_backward(x, x->gacc, gin);
    if (s != DT_OK) { s = dt__ag_fail_in(op, x, s); goto done; }
    dt_release(x->gacc);
    x->gacc = NULL;
    for (j = 0; j < x->nin; j++) {
      dt__ag_edge *e = &x->in[j];
      dt_tensor *g = gin[j];
      gin[j] = NULL;
      if (g && (!dt__same_shape(&g->shape, &e->shape) || g->dtype != e->dtype || !dt_device_equal(g->st->device, e->device))) {
        s = dt__fail(DT_ERR_BACKEND, "%s: the backward of %s made a gradient of shape %s for input %d, which does not match it "
                     "(an internal error)", op, x->name, dt__shape_str(&g->shape, sb, sizeof sb), j);
        dt_release(g);
        for (j = j + 1; j < x->nin; j++) { dt_release(gin[j]); gin[j] = NULL; }
        goto done;
      }
      if (e->node) {
        s = dt__ag_accumulate(&e->node->gacc, g);
        if (--e->node->deps == 0) { e->node->next = ready; ready = e->node; }
      } else if (e->leaf) {
        for (i = 0; i < nl && leaves[i].leaf != e->leaf; i++) {}
        if (i == nl) { leaves[nl].leaf = e->leaf; leaves[nl].acc = NULL; leaves[nl].final = NULL; nl++; }
        s = dt__ag_accumulate(&leaves[i].acc, g);
      } else {
        dt_release(g);
      }
      if (s != DT_OK) {
        for (j = j + 1; j < x->nin; j++) { dt_release(gin[j]); gin[j] = NULL; }
        s = dt__ag_fail_in(op, x, s);
        goto done;
      }
    }
  }
  /* the new gradients, then (nothing can fail from here but the device) stored; a gradient that
     something else also holds (the seed, a view, one tensor given to two leaves) is copied, so
     that each leaf owns its gradient */
  for (i = 0; i < nl; i++) {
    dt_tensor *l = leaves[i].leaf, *a = leaves[i].acc;
    if (l->grad) leaves[i].final = dt_add(l->grad, a);
    else if (a->refs > 1 || a->st->refs > 1 || a->st->base || a->st->foreign) leaves[i].final = dt_copyto(a, a->st->device);
    else leaves[i].final = dt_retain(a);
    if (!leaves[i].final) { s = dt_last_status(); goto done; }
  }
  /* a gradient only its leaf holds takes the new value in place (PyTorch's AccumulateGrad): the
     same memory from step to step, so that a graph that captured this backward accumulates into
     it at each replay as eager steps do; the sum is made first, so a failure changes nothing */
  for (i = 0; i < nl; i++) {
    dt_tensor *l = leaves[i].leaf;
    if (dt__grad_in_place(l)) {
      if ((s = dt_copy_(l->grad, leaves[i].final)) != DT_OK) goto done;
      dt_release(leaves[i].final);
    } else {
      dt_release(l->grad);
      l->grad = leaves[i].final;
    }
    leaves[i].final = NULL;
  }
  for (i = 0; i < nn; i++) { /* retain_graph=False */
    for (j = 0; j < DT__AG_SAVED; j++) { dt_release(nodes[i]->saved[j]); nodes[i]->saved[j] = NULL; }
    nodes[i]->done = 1;
  }
  goto done;
oom:
  s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host walking the graph", op);
done:
  for (i = 0; i < nn; i++) {
    nodes[i]->mark = 0; nodes[i]->deps = 0;
    dt_release(nodes[i]->gacc);
    nodes[i]->gacc = NULL;
  }
  for (i = 0; i < nl; i++) { dt_release(leaves[i].acc); dt_release(leaves[i].final); }
  DT_FREE(nodes);
  DT_FREE(leaves);
  DT_FREE(gin);
  return s;
}

DTDEF dt_status dt_autograd_backward(dt_tensor *out, const dt_tensor *grad_out) {
  const char *op = "dt_autograd_backward";
  dt_tensor *seed;
  dt_status s;
  int prev;
  char a[200], c[200], b[48];
  if ((s = dt__check_tensor(op, "out", out)) != DT_OK) return s;
  if (!out->requires_grad)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: out does not require grad and has no recorded history (mark a leaf with "
                    "dt_requires_grad_ before the operations, with grad mode on)", op);
  if (!grad_out) {
    if (out->numel != 1)
      return dt__fail(DT_ERR_SHAPE, "%s: grad_out is NULL, which is allowed only for an out of one element, but out has "
                      "shape %s (%lld elements): pass a grad_out of that shape", op,
                      dt__shape_str(&out->shape, a, sizeof a), (long long)out->numel);
    if (!(seed = dt_ones_like(out))) return dt_last_status();
  } else {
    if (!dt__same_shape(&grad_out->shape, &out->shape))
      return dt__fail(DT_ERR_SHAPE, "%s: grad_out has shape %s but out has shape %s", op,
                      dt__shape_str(&grad_out->shape, a, sizeof a), dt__shape_str(&out->shape, c, sizeof c));
    if (grad_out->dtype != out->dtype)
      return dt__fail(DT_ERR_DTYPE, "%s: grad_out is %s but out is %s", op, dt_dtype_name(grad_out->dtype), dt_dtype_name(out->dtype));
    if (!dt_device_equal(grad_out->st->device, out->st->device))
      return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: grad_out is on %s but out is on %s", op,
                      dt_device_str(grad_out->st->device, b, sizeof b), dt_device_str(out->st->device, c, sizeof c));
    seed = dt_retain((dt_tensor *)grad_out);
  }
  prev = dt__no_grad;
  dt__no_grad = 1; /* the backwards record nothing */
  s = dt__ag_run(op, out, seed);
  dt__no_grad = prev;
  dt_release(seed);
  return s;
}

DTDEF dt_status dt_requires_grad_(dt_tensor *t, int on) {
  const char *op = "dt_requires_grad_";
  dt_status s;
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if (t->node)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: t is not a leaf (it is the result of %s, recorded): only a leaf's "
                    "requires_grad can be set (use dt_detach for a tensor outside the graph)", op, t->node->name);
  if (on && !dt__is_float(t->dtype))
    return dt__fail(DT_ERR_DTYPE, "%s: t is %s, but only float32 and float64 tensors can require grad", op, dt_dtype_name(t->dtype));
  t->requires_grad = on != 0;
  return DT_OK;
}

DTDEF int dt_requires_grad(const dt_tensor *t) {
  if (dt__check_tensor("dt_requires_grad", "t", t) != DT_OK) return 0;
  return t->requires_grad;
}

DTDEF dt_tensor *dt_grad(dt_tensor *t) {
  if (dt__check_tensor("dt_grad", "t", t) != DT_OK) return NULL;
  return t->grad;
}

DTDEF int dt_is_leaf(const dt_tensor *t) {
  if (dt__check_tensor("dt_is_leaf", "t", t) != DT_OK) return 0;
  return t->node == NULL;
}

DTDEF dt_tensor *dt_detach(const dt_tensor *t) {
  if (dt__check_tensor("dt_detach", "t", t) != DT_OK) return NULL;
  return dt__alias("dt_detach", t);
}

DTDEF dt_status dt_zero_grad_(dt_tensor *t) {
  dt_status s;
  if ((s = dt__check_tensor("dt_zero_grad_", "t", t)) != DT_OK) return s;
  dt_release(t->grad);
  t->grad = NULL;
  return DT_OK;
}
