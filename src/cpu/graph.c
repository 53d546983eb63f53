/* The CPU's graphs: while the CPU is captured (dt__cpu_capturing), dt__be hands out the
   recording table below. Its kernel slots append the call, with its arguments by value (the
   geometry structs copied) and its buffer pointers, to the capture's list instead of running
   it; memory, copies between tensors and queries go through. Replay runs the list in order
   with the CPU's own kernels, so the CPU gives what a GPU's replay gives: captured work runs
   only when replayed, never during the capture. The core keeps the memory the calls use
   (src/core/graph.c). The checks the core makes on host memory at call time (labels and
   indices in range) are made as the graph replays instead: at capture time those values may
   not be written yet. */

typedef enum dt__cpu_call_kind {
  DT__RC_COPY = 0, DT__RC_FILL, DT__RC_UNARY, DT__RC_BINARY, DT__RC_CAST, DT__RC_REDUCE, DT__RC_GEMM, DT__RC_GEMM_OPT,
  DT__RC_AXPY, DT__RC_RANDOM, DT__RC_OPTIM, DT__RC_COMPARE, DT__RC_COPY_STRIDED, DT__RC_INDEX_SELECT, DT__RC_ARG_REDUCE,
  DT__RC_SOFTMAX, DT__RC_XENT, DT__RC_IM2COL, DT__RC_COL2IM, DT__RC_POOL, DT__RC_POOL_BACKWARD,
  DT__RC_WHERE, DT__RC_GATHER, DT__RC_SCATTER_ADD, DT__RC_INDEX_ADD, DT__RC_RANDOM_INT, DT__RC_NLL, DT__RC_BN, DT__RC_BN_BACKWARD
} dt__cpu_call_kind;

/* One recorded call: which slot, its scalars (meaning per kind, see dt__cpu_call_run) and
   its buffers a, b (read), y, z (written). */
typedef struct dt__cpu_call {
  dt__cpu_call_kind kind;
  int op, ta, tb;
  dt_dtype t, t2;
  size_t es;
  int64_t i[6];
  double d[2];
  uint64_t u[2];
  const void *a, *b, *w;  /* w: a third input (where's cond, the index of gather and scatter_add) */
  void *y, *z;
  int64_t cs[DT_MAX_DIMS]; /* where's strides of cond */
  union {
    dt__bcast g;
    dt__optim_hp h;
    dt__conv2d cv;
    dt__pool2d pl;
    dt__bn bn;
  } geo;
} dt__cpu_call;

typedef struct dt__cpu_graph {
  dt__cpu_call *v;
  int n, cap;
} dt__cpu_graph;

static dt__cpu_graph *dt__cpu_cap;     /* the capture in progress */
static int dt__cpu_cap_failed;         /* a call could not be recorded: the capture fails */
static volatile int dt__cpu_cap_lk;

/* Appends c to the capture. */
static dt_status dt__cpu_rec(const dt__cpu_call *c) {
  dt_status s = DT_OK;
  dt__lock(&dt__cpu_cap_lk);
  if (!dt__cpu_cap) {
    s = DT_ERR_BACKEND;
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "the CPU's capture ended while this call was being recorded");
  } else {
    dt__cpu_graph *g = dt__cpu_cap;
    if (g->n == g->cap) {
      int cap = g->cap ? 2 * g->cap : 64;
      dt__cpu_call *v = (dt__cpu_call *)DT_MALLOC(sizeof(dt__cpu_call) * (size_t)cap);
      if (!v) {
        dt__cpu_cap_failed = 1;
        s = DT_ERR_OUT_OF_MEMORY;
        snprintf(dt__cpu_err, sizeof dt__cpu_err, "out of memory on the host recording a call into the CPU's graph");
      } else {
        if (g->n) memcpy(v, g->v, sizeof(dt__cpu_call) * (size_t)g->n);
        DT_FREE(g->v);
        g->v = v;
        g->cap = cap;
      }
    }
    if (s == DT_OK) g->v[g->n++] = *c;
  }
  dt__unlock(&dt__cpu_cap_lk);
  return s;
}

static dt__cpu_call dt__cpu_call_of(dt__cpu_call_kind kind) {
  dt__cpu_call c;
  memset(&c, 0, sizeof c);
  c.kind = kind;
  return c;
}

/* ---- the recording slots ---- */

static dt_status dt__cpu_rec_copy(int dst_dev, void *dst, int src_dev, const void *src, size_t nbytes) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_COPY);
  (void)dst_dev; (void)src_dev;
  c.es = nbytes; c.a = src; c.y = dst;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_fill(int dev, dt_dtype t, int64_t n, double v, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_FILL);
  (void)dev;
  c.t = t; c.i[0] = n; c.d[0] = v; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_unary(int dev, dt__unary_op op, dt_dtype t, int64_t n, const void *x, void *y, double p0, double p1) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_UNARY);
  (void)dev;
  c.op = (int)op; c.t = t; c.i[0] = n; c.a = x; c.y = y; c.d[0] = p0; c.d[1] = p1;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_binary(int dev, dt__binary_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_BINARY);
  (void)dev;
  c.op = (int)op; c.t = t; c.geo.g = *g; c.a = a; c.b = b; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_cast(int dev, dt_dtype from, dt_dtype to, int64_t n, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_CAST);
  (void)dev;
  c.t = from; c.t2 = to; c.i[0] = n; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_reduce(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_REDUCE);
  (void)dev;
  c.op = (int)op; c.t = t; c.i[0] = outer; c.i[1] = len; c.i[2] = inner; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_gemm(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                                  double alpha, const void *a, int64_t stride_a, const void *b, int64_t stride_b,
                                  double beta, void *cc, int64_t stride_c) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_GEMM);
  (void)dev;
  c.t = t; c.ta = ta; c.tb = tb; c.i[0] = batch; c.i[1] = m; c.i[2] = n; c.i[3] = k; c.i[4] = stride_a; c.i[5] = stride_b;
  c.u[0] = (uint64_t)stride_c; c.d[0] = alpha; c.d[1] = beta; c.a = a; c.b = b; c.y = cc;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_AXPY);
  (void)dev;
  c.t = t; c.i[0] = n; c.d[0] = alpha; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_random(int dev, int normal, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, float *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_RANDOM);
  (void)dev;
  c.op = normal; c.u[0] = seed; c.u[1] = draw; c.w = gen; c.i[0] = n; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_optim_step(int dev, dt_dtype t, int64_t n, const dt__optim_hp *h, void *p, const void *g,
                                        void *buf1, void *buf2) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_OPTIM);
  (void)dev;
  c.t = t; c.i[0] = n; c.geo.h = *h; c.y = p; c.a = g; c.z = buf1; c.b = buf2;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_compare(int dev, dt__compare_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_COMPARE);
  (void)dev;
  c.op = (int)op; c.t = t; c.geo.g = *g; c.a = a; c.b = b; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_copy_strided(int dev, size_t es, const dt__bcast *g, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_COPY_STRIDED);
  (void)dev;
  c.es = es; c.geo.g = *g; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_index_select(int dev, size_t es, int64_t outer, int64_t n, int64_t inner, const int64_t *idx,
                                          int64_t k, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_INDEX_SELECT);
  (void)dev;
  c.es = es; c.i[0] = outer; c.i[1] = n; c.i[2] = inner; c.i[3] = k; c.b = idx; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_arg_reduce(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x,
                                        void *vals, int64_t *idx) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_ARG_REDUCE);
  (void)dev;
  c.op = min; c.t = t; c.i[0] = outer; c.i[1] = len; c.i[2] = inner; c.a = x; c.y = vals; c.z = idx;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_softmax(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_SOFTMAX);
  (void)dev;
  c.op = lg; c.t = t; c.i[0] = outer; c.i[1] = len; c.i[2] = inner; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_cross_entropy(int dev, int grad, dt_dtype t, int64_t n, int64_t cc, const void *logits,
                                           const int64_t *target, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_XENT);
  (void)dev;
  c.op = grad; c.t = t; c.i[0] = n; c.i[1] = cc; c.a = logits; c.b = target; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_IM2COL);
  (void)dev;
  c.t = t; c.geo.cv = *g; c.i[0] = nimg; c.a = x; c.y = col;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_COL2IM);
  (void)dev;
  c.t = t; c.geo.cv = *g; c.i[0] = nimg; c.a = col; c.y = x;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_POOL);
  (void)dev;
  c.t = t; c.geo.pl = *p; c.a = x; c.y = y; c.z = idx;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_POOL_BACKWARD);
  (void)dev;
  c.t = t; c.geo.pl = *p; c.a = gy; c.b = idx; c.y = gx;
  return dt__cpu_rec(&c);
}

static dt_status dt__cpu_gemm_opt_rec(dt_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                                      const void *a, const void *b, double beta, void *cc, struct dt__gemm_opts *o) {
  dt__cpu_call c;
  if (!DT__ATOMIC_LOAD(&dt__cpu_capturing)) return dt__cpu_gemm_opt(t, ta, tb, m, n, k, alpha, a, b, beta, cc, o);
  /* the bias and the column split are recorded; the bias gradient (asum) is not asked for,
     so the caller records its reduction (asum_done stays 0), which gives the same bits */
  c = dt__cpu_call_of(DT__RC_GEMM_OPT);
  c.t = t; c.ta = ta; c.tb = tb; c.i[1] = m; c.i[2] = n; c.i[3] = k; c.d[0] = alpha; c.d[1] = beta;
  c.a = a; c.b = b; c.y = cc; c.z = (void *)(uintptr_t)o->bias; c.op = o->by_cols;
  o->asum_done = 0;
  return dt__cpu_rec(&c);
}

static dt_status dt__cpu_rec_where(int dev, size_t es, const dt__bcast *g, const int64_t *cstride, const void *cond, const void *a,
                                   const void *b, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_WHERE);
  int d;
  (void)dev;
  for (d = 0; d < g->ndim; d++) c.cs[d] = cstride[d];
  c.es = es; c.geo.g = *g; c.w = cond; c.a = a; c.b = b; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_gather(int dev, size_t es, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                                    const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_GATHER);
  (void)dev;
  c.es = es; c.geo.g = *g; c.i[0] = n; c.i[1] = stride; c.w = idx; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_scatter_add(int dev, dt_dtype t, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                                         const void *src, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_SCATTER_ADD);
  (void)dev;
  c.t = t; c.geo.g = *g; c.i[0] = n; c.i[1] = stride; c.w = idx; c.a = src; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_index_add(int dev, dt_dtype t, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k,
                                       const void *src, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_INDEX_ADD);
  (void)dev;
  c.t = t; c.i[0] = outer; c.i[1] = n; c.i[2] = inner; c.i[3] = k; c.b = idx; c.a = src; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_random_int(int dev, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, int64_t low,
                                        uint64_t range, int64_t *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_RANDOM_INT);
  (void)dev;
  c.u[0] = seed; c.u[1] = draw; c.w = gen; c.i[0] = n; c.i[1] = low; c.i[2] = (int64_t)range; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_nll_loss(int dev, dt_dtype t, int64_t n, int64_t cl, const void *logp, const int64_t *target, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_NLL);
  (void)dev;
  c.t = t; c.i[0] = n; c.i[1] = cl; c.a = logp; c.b = target; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_batch_norm(int dev, dt_dtype t, const dt__bn *p) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_BN);
  (void)dev;
  c.t = t; c.geo.bn = *p;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_batch_norm_backward(int dev, dt_dtype t, const dt__bn *p) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_BN_BACKWARD);
  (void)dev;
  c.t = t; c.geo.bn = *p;
  return dt__cpu_rec(&c);
}

/* ---- replay ---- */

/* the index values a recorded call reads, checked as it replays (the core could not: at capture
   time they may not be written yet); 0 and a message for the first out of [0, n) */
static int dt__cpu_replay_index_ok(const char *op, const char *what, const int64_t *v, int64_t k, int64_t n) {
  int64_t j;
  for (j = 0; j < k; j++)
    if (v[j] < 0 || v[j] >= n) {
      snprintf(dt__cpu_err, sizeof dt__cpu_err, "%s: %s[%lld] = %lld is out of range (expected 0 to %lld)", op, what,
               (long long)j, (long long)v[j], (long long)(n - 1));
      return 0;
    }
  return 1;
}

static dt_status dt__cpu_call_run(const dt__cpu_call *c) {
  /* the kernels through the half precision table: a float16 or bfloat16 call recorded as it
     was made runs as it would have outside the capture */
  const dt__backend *be = dt__half_table(0);
  int64_t j;
  switch (c->kind) {
    case DT__RC_COPY: return dt__cpu_copy(-1, c->y, -1, c->a, c->es);
    case DT__RC_FILL: return dt__cpu_fill(0, c->t, c->i[0], c->d[0], c->y);
    case DT__RC_UNARY: return be->unary(0, (dt__unary_op)c->op, c->t, c->i[0], c->a, c->y, c->d[0], c->d[1]);
    case DT__RC_BINARY: return be->binary(0, (dt__binary_op)c->op, c->t, &c->geo.g, c->a, c->b, c->y);
    case DT__RC_CAST: return dt__cpu_cast(0, c->t, c->t2, c->i[0], c->a, c->y);
    case DT__RC_REDUCE: return be->reduce(0, (dt__reduce_op)c->op, c->t, c->i[0], c->i[1], c->i[2], c->a, c->y);
    case DT__RC_GEMM:
      return be->gemm(0, c->t, c->ta, c->tb, c->i[0], c->i[1], c->i[2], c->i[3], c->d[0], c->a, c->i[4], c->b, c->i[5],
                          c->d[1], c->y, (int64_t)c->u[0]);
    case DT__RC_GEMM_OPT: {
      dt__gemm_opts o;
      memset(&o, 0, sizeof o);
      o.bias = c->z;
      o.by_cols = c->op;
      return dt__cpu_gemm_opt(c->t, c->ta, c->tb, c->i[1], c->i[2], c->i[3], c->d[0], c->a, c->b, c->d[1], c->y, &o);
    }
    case DT__RC_AXPY: return be->axpy(0, c->t, c->i[0], c->d[0], c->a, c->y);
    case DT__RC_RANDOM: return dt__cpu_random(0, c->op, c->u[0], c->u[1], (const uint64_t *)c->w, c->i[0], (float *)c->y);
    case DT__RC_OPTIM: return dt__cpu_optim_step(0, c->t, c->i[0], &c->geo.h, c->y, c->a, c->z, (void *)(uintptr_t)c->b);
    case DT__RC_COMPARE: return be->compare(0, (dt__compare_op)c->op, c->t, &c->geo.g, c->a, c->b, c->y);
    case DT__RC_COPY_STRIDED: return dt__cpu_copy_strided(0, c->es, &c->geo.g, c->a, c->y);
    case DT__RC_INDEX_SELECT: {
      const int64_t *idx = (const int64_t *)c->b;
      for (j = 0; j < c->i[3]; j++)
        if (idx[j] < 0 || idx[j] >= c->i[1]) {
          snprintf(dt__cpu_err, sizeof dt__cpu_err, "dt_index_select: index[%lld] = %lld is out of range for a dimension of size %lld",
                   (long long)j, (long long)idx[j], (long long)c->i[1]);
          return DT_ERR_INVALID_ARGUMENT;
        }
      return dt__cpu_index_select(0, c->es, c->i[0], c->i[1], c->i[2], idx, c->i[3], c->a, c->y);
    }
    case DT__RC_ARG_REDUCE: return be->arg_reduce(0, c->op, c->t, c->i[0], c->i[1], c->i[2], c->a, c->y, (int64_t *)c->z);
    case DT__RC_SOFTMAX: return be->softmax(0, c->op, c->t, c->i[0], c->i[1], c->i[2], c->a, c->y);
    case DT__RC_XENT: {
      const int64_t *lab = (const int64_t *)c->b;
      for (j = 0; j < c->i[0]; j++)
        if (lab[j] < 0 || lab[j] >= c->i[1]) {
          snprintf(dt__cpu_err, sizeof dt__cpu_err, "dt_cross_entropy: target[%lld] = %lld is out of range for %lld classes",
                   (long long)j, (long long)lab[j], (long long)c->i[1]);
          return DT_ERR_INVALID_ARGUMENT;
        }
      return be->cross_entropy(0, c->op, c->t, c->i[0], c->i[1], c->a, lab, c->y);
    }
    case DT__RC_IM2COL: return be->im2col(0, c->t, &c->geo.cv, c->i[0], c->a, c->y);
    case DT__RC_COL2IM: return be->col2im(0, c->t, &c->geo.cv, c->i[0], c->a, c->y);
    case DT__RC_POOL: return be->pool2d(0, c->t, &c->geo.pl, c->a, c->y, (int64_t *)c->z);
    case DT__RC_POOL_BACKWARD: return be->pool2d_backward(0, c->t, &c->geo.pl, c->a, (const int64_t *)c->b, c->y);
    case DT__RC_WHERE: return dt__cpu_where(0, c->es, &c->geo.g, c->cs, (const void *)c->w, c->a, c->b, c->y);
    case DT__RC_GATHER:
      if (!dt__cpu_replay_index_ok("dt_gather", "index", (const int64_t *)c->w, c->geo.g.numel, c->i[0])) return DT_ERR_INVALID_ARGUMENT;
      return dt__cpu_gather(0, c->es, &c->geo.g, c->i[0], c->i[1], (const int64_t *)c->w, c->a, c->y);
    case DT__RC_SCATTER_ADD:
      if (!dt__cpu_replay_index_ok("dt_scatter_add", "index", (const int64_t *)c->w, c->geo.g.numel, c->i[0])) return DT_ERR_INVALID_ARGUMENT;
      return dt__cpu_scatter_add(0, c->t, &c->geo.g, c->i[0], c->i[1], (const int64_t *)c->w, c->a, c->y);
    case DT__RC_INDEX_ADD:
      if (!dt__cpu_replay_index_ok("dt_index_select", "index", (const int64_t *)c->b, c->i[3], c->i[1])) return DT_ERR_INVALID_ARGUMENT;
      return dt__cpu_index_add(0, c->t, c->i[0], c->i[1], c->i[2], (const int64_t *)c->b, c->i[3], c->a, c->y);
    case DT__RC_RANDOM_INT:
      return dt__cpu_random_int(0, c->u[0], c->u[1], (const uint64_t *)c->w, c->i[0], c->i[1], (uint64_t)c->i[2], (int64_t *)c->y);
    case DT__RC_NLL:
      if (!dt__cpu_replay_index_ok("dt_nll_loss", "target", (const int64_t *)c->b, c->i[0], c->i[1])) return DT_ERR_INVALID_ARGUMENT;
      return be->nll_loss(0, c->t, c->i[0], c->i[1], c->a, (const int64_t *)c->b, c->y);
    case DT__RC_BN: return dt__cpu_batch_norm(0, c->t, &c->geo.bn);
    case DT__RC_BN_BACKWARD: return dt__cpu_batch_norm_backward(0, c->t, &c->geo.bn);
  }
  return DT_OK;
}

/* ---- the graph slots ---- */

static dt_status dt__cpu_graph_begin(int dev) {
  dt__cpu_graph *g = (dt__cpu_graph *)DT_MALLOC(sizeof(dt__cpu_graph));
  (void)dev;
  if (!g) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "out of memory on the host starting a capture");
    return DT_ERR_OUT_OF_MEMORY;
  }
  memset(g, 0, sizeof *g);
  dt__lock(&dt__cpu_cap_lk);
  dt__cpu_cap = g;
  dt__cpu_cap_failed = 0;
  dt__unlock(&dt__cpu_cap_lk);
  DT__ATOMIC_STORE(&dt__cpu_capturing, 1);
  return DT_OK;
}

static void dt__cpu_graph_free(int dev, void *graph) {
  dt__cpu_graph *g = (dt__cpu_graph *)graph;
  (void)dev;
  if (!g) return;
  DT_FREE(g->v);
  DT_FREE(g);
}

static dt_status dt__cpu_graph_end(int dev, void **graph) {
  dt__cpu_graph *g;
  int failed;
  DT__ATOMIC_STORE(&dt__cpu_capturing, 0);
  dt__lock(&dt__cpu_cap_lk);
  g = dt__cpu_cap;
  failed = dt__cpu_cap_failed;
  dt__cpu_cap = NULL;
  dt__unlock(&dt__cpu_cap_lk);
  *graph = NULL;
  if (failed) {
    dt__cpu_graph_free(dev, g);
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "out of memory on the host recording the CPU's graph (a call could not be kept)");
    return DT_ERR_OUT_OF_MEMORY;
  }
  *graph = g;
  return DT_OK;
}

static dt_status dt__cpu_graph_replay(int dev, void *graph, uint64_t *gen, uint64_t seed, uint64_t draw) {
  const dt__cpu_graph *g = (const dt__cpu_graph *)graph;
  int i;
  dt_status s;
  (void)dev;
  if (gen) { gen[0] = seed; gen[1] = draw; }
  for (i = 0; i < g->n; i++)
    if ((s = dt__cpu_call_run(&g->v[i])) != DT_OK) return s;
  return DT_OK;
}

/* The table dt__be hands out while the CPU is captured. */
static const dt__backend *dt__cpu_rec_backend(void) {
  static const dt__backend be = {
    DT__SLOT(name) "cpu",
    DT__SLOT(device_count) dt__cpu_device_count,
    DT__SLOT(device_info) dt__cpu_device_info,
    DT__SLOT(last_error) dt__cpu_last_error,
    DT__SLOT(alloc) dt__cpu_alloc,
    DT__SLOT(free) dt__cpu_free,
    DT__SLOT(memory_stats) dt__cpu_memory_stats,
    DT__SLOT(empty_cache) dt__cpu_empty_cache,
    DT__SLOT(copy) dt__cpu_rec_copy,
    DT__SLOT(synchronize) dt__cpu_synchronize,
    DT__SLOT(stream) dt__cpu_stream,
    DT__SLOT(fill) dt__cpu_rec_fill,
    DT__SLOT(unary) dt__cpu_rec_unary,
    DT__SLOT(binary) dt__cpu_rec_binary,
    DT__SLOT(cast) dt__cpu_rec_cast,
    DT__SLOT(reduce) dt__cpu_rec_reduce,
    DT__SLOT(gemm) dt__cpu_rec_gemm,
    DT__SLOT(axpy) dt__cpu_rec_axpy,
    DT__SLOT(random) dt__cpu_rec_random,
    DT__SLOT(optim_step) dt__cpu_rec_optim_step,
    DT__SLOT(compare) dt__cpu_rec_compare,
    DT__SLOT(copy_strided) dt__cpu_rec_copy_strided,
    DT__SLOT(index_select) dt__cpu_rec_index_select,
    DT__SLOT(arg_reduce) dt__cpu_rec_arg_reduce,
    DT__SLOT(softmax) dt__cpu_rec_softmax,
    DT__SLOT(cross_entropy) dt__cpu_rec_cross_entropy,
    DT__SLOT(dist_unique_id) NULL,
    DT__SLOT(dist_comm_init) NULL,
    DT__SLOT(dist_comm_init_all) NULL,
    DT__SLOT(dist_comm_free) NULL,
    DT__SLOT(dist_all_reduce) NULL,
    DT__SLOT(dist_broadcast) NULL,
    DT__SLOT(im2col) dt__cpu_rec_im2col,
    DT__SLOT(col2im) dt__cpu_rec_col2im,
    DT__SLOT(pool2d) dt__cpu_rec_pool2d,
    DT__SLOT(pool2d_backward) dt__cpu_rec_pool2d_backward,
    DT__SLOT(where) dt__cpu_rec_where,
    DT__SLOT(gather) dt__cpu_rec_gather,
    DT__SLOT(scatter_add) dt__cpu_rec_scatter_add,
    DT__SLOT(index_add) dt__cpu_rec_index_add,
    DT__SLOT(random_int) dt__cpu_rec_random_int,
    DT__SLOT(nll_loss) dt__cpu_rec_nll_loss,
    DT__SLOT(half_gemm) 1, /* as the CPU's table: its gemm takes the half dtypes (replayed through the half table) */
    DT__SLOT(set_matmul_precision) NULL,
    DT__SLOT(graph_begin) dt__cpu_graph_begin,
    DT__SLOT(graph_end) dt__cpu_graph_end,
    DT__SLOT(graph_replay) dt__cpu_graph_replay,
    DT__SLOT(graph_free) dt__cpu_graph_free,
    /* convolution through a vendor library: none (im2col + gemm) */
    DT__SLOT(conv2d_forward) NULL,
    DT__SLOT(conv2d_backward_data) NULL,
    DT__SLOT(conv2d_backward_filter) NULL,
    DT__SLOT(batch_norm) dt__cpu_rec_batch_norm,
    DT__SLOT(batch_norm_backward) dt__cpu_rec_batch_norm_backward
  };
  return &be;
}
