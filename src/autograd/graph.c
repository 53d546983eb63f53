/* Autograd's graph, as torch.autograd's (DESIGN.md "Autograd"). A result of a recorded
   operation owns one reference to its node; a node owns one reference to each input's node,
   one to each input that is a leaf requiring grad (its gradient lands there), and detached
   aliases of the tensors its backward reads, with their storage's version at the time. So a
   graph lives as long as the last result that reaches it, and has no cycles: a saved output is
   an alias without the node. The operations record through dt__ag_record (src/autograd/
   functions.c) behind one test, DT__AG_ON: nothing happens when no input requires grad. The
   engine (src/autograd/engine.c) walks a graph once and then frees what it saved. */

static DT__TLS int dt__no_grad; /* per thread (dt_set_grad_enabled): 0, the default, is grad enabled */

/* The recorded operations: each has a backward in src/autograd/functions.c. */
typedef enum dt__ag_op {
  DT__AG_ADD = 0, DT__AG_SUB, DT__AG_MUL, DT__AG_DIV, DT__AG_ADD_SCALAR, DT__AG_MUL_SCALAR,
  DT__AG_NEG, DT__AG_EXP, DT__AG_LOG, DT__AG_SQRT, DT__AG_RELU, DT__AG_SIGMOID, DT__AG_TANH, DT__AG_ABS,
  DT__AG_MATMUL, DT__AG_TRANSPOSE, DT__AG_RESHAPE, DT__AG_PERMUTE, DT__AG_SLICE, DT__AG_INDEX_SELECT,
  DT__AG_CAT, DT__AG_STACK, DT__AG_SUM, DT__AG_MEAN, DT__AG_SUM_DIM, DT__AG_NORM, DT__AG_MAX_DIM,
  DT__AG_MIN_DIM, DT__AG_MAX, DT__AG_MIN, DT__AG_SOFTMAX, DT__AG_LOG_SOFTMAX, DT__AG_CROSS_ENTROPY,
  DT__AG_MSE_LOSS, DT__AG_CAST, DT__AG_COPYTO,
  DT__AG_LINEAR, /* a linear layer (dt_forward): inputs x, weight, bias; the layer's fused backward */
  DT__AG_SIN, DT__AG_COS, DT__AG_ERF, DT__AG_GELU, DT__AG_POW, DT__AG_CLAMP,
  /* convolution and pooling (src/ops/conv.c): their backwards are the public backward functions;
     the int arguments in the node's perm: conv (sh, sw, ph, pw, dh, dw, groups), pools (kh, kw,
     sh, sw, ph, pw); max pooling's indices in saved[2], and a CPU convolution's col when it kept one */
  DT__AG_CONV2D, DT__AG_MAX_POOL2D, DT__AG_AVG_POOL2D, DT__AG_ADAPTIVE_AVG_POOL2D,
  /* src/ops/index2.c: where's inputs (cond, a, b); gather's (x, index); scatter_add's (x, index, src);
     pad keeps each dim's left padding in perm */
  DT__AG_WHERE, DT__AG_GATHER, DT__AG_SCATTER_ADD, DT__AG_PAD,
  /* the losses of src/ops/losses.c (backward: dt__ag_loss_bw there); the node's dim is the
     reduction, p smooth_l1's beta */
  DT__AG_BCE_WITH_LOGITS, DT__AG_NLL_LOSS, DT__AG_L1_LOSS, DT__AG_SMOOTH_L1_LOSS, DT__AG_MSE_LOSS_EX,
  /* batch norm in one pass (src/nn/norm.c): inputs x (and weight, bias); eps in p, training in
     dim, the statistics it normalised with in saved[2] */
  DT__AG_BATCH_NORM
} dt__ag_op;

/* One input of a node: where its gradient goes (a node, a leaf, or nowhere) and its geometry. */
typedef struct dt__ag_edge {
  struct dt__node *node; /* the input's node: it was a result of recorded operations */
  dt_tensor *leaf;       /* or the input itself (one reference): a leaf that requires grad */
  dt_shape shape;
  dt_dtype dtype;
  dt_device device;
} dt__ag_edge;

/* What an operation passes to its node beside its inputs. */
typedef struct dt__ag_args {
  double p;        /* dt_mul_scalar's scalar */
  int dim;         /* the dim of slices, index_select, cat, reductions, softmax */
  int64_t start;   /* dt_slice's start, after clamping */
  const int *perm; /* dt_permute's dims */
  double p2;       /* a second scalar: dt_clamp's hi (p its lo) */
} dt__ag_args;

#define DT__AG_SAVED 3
typedef struct dt__node {
  int refs;
  dt__ag_op op;
  const char *name;   /* the operation, for messages: "dt_mul" */
  int nin;
  dt__ag_edge *in;    /* nin of them, in the same allocation */
  dt_tensor *saved[DT__AG_SAVED];     /* detached aliases the backward reads */
  unsigned saved_version[DT__AG_SAVED];
  dt_shape yshape;    /* the result's */
  double p;
  int dim;
  int64_t start;
  int perm[DT_MAX_DIMS];
  double p2;
  int done;           /* a backward walked it and released what it saved */
  /* the engine's, during one backward */
  int deps, mark;
  dt_tensor *gacc;    /* the gradient of the result, summed over its uses so far */
  struct dt__node *next;
} dt__node;

/* Whether a result of a (and b) records: grad mode on and an input requires grad. */
#define DT__AG_ON(a) ((a)->requires_grad && !dt__no_grad)
#define DT__AG_ON2(a, b) (((a)->requires_grad | (b)->requires_grad) && !dt__no_grad)

/* Records y = op(in[0..nin)) and returns y, now requiring grad; on failure releases y and
   returns NULL (the message names name). */
static dt_tensor *dt__ag_record(dt_tensor *y, dt__ag_op op, const char *name, int nin, const dt_tensor *const *in,
                                const dt__ag_args *args);
static dt_tensor *dt__ag_record1(dt_tensor *y, dt__ag_op op, const char *name, const dt_tensor *a) {
  return dt__ag_record(y, op, name, 1, &a, NULL);
}
static dt_tensor *dt__ag_record2(dt_tensor *y, dt__ag_op op, const char *name, const dt_tensor *a, const dt_tensor *b) {
  const dt_tensor *in[2];
  in[0] = a; in[1] = b;
  return dt__ag_record(y, op, name, 2, in, NULL);
}

/* An in-place change of t by op: refused while grad mode is on and t requires grad (a leaf:
   PyTorch's "a leaf Variable that requires grad is being used in an in-place operation"; a
   result of recorded operations: not supported here). */
static dt_status dt__inplace_check(const char *op, const char *name, const dt_tensor *t) {
  if (!t->requires_grad || dt__no_grad) return DT_OK;
  if (!t->node)
    return dt__fail(DT_ERR_INVALID_ARGUMENT,
                    "%s: %s is a leaf that requires grad and grad mode is on: it cannot be changed in place "
                    "(change it with grad mode off, dt_set_grad_enabled(0), as an optimizer does)", op, name);
  return dt__fail(DT_ERR_UNSUPPORTED,
                  "%s: %s is a result of recorded operations (it requires grad): changing it in place is not supported "
                  "(change a dt_detach of it, or turn grad mode off)", op, name);
}
/* After an in-place change of t: a node that saved t's memory sees it at backward. */
static void dt__bump(dt_tensor *t) { (void)DT__ATOMIC_ADD(dt__version(t), 1); }

/* y, recorded as op of a (and b) when that is wanted: the one test on the way of every operation */
#define DT__AG1(y, op, name, a) ((y) && DT__AG_ON(a) ? dt__ag_record1((y), (op), (name), (a)) : (y))
#define DT__AG2(y, op, name, a, b) ((y) && DT__AG_ON2(a, b) ? dt__ag_record2((y), (op), (name), (a), (b)) : (y))
/* the same for an operation with a scalar, a dim, a start or a permutation */
static dt_tensor *dt__ag_record1a(dt_tensor *y, dt__ag_op op, const char *name, const dt_tensor *a, double p, int dim,
                                  int64_t start, const int *perm) {
  dt__ag_args g;
  g.p = p; g.dim = dim; g.start = start; g.perm = perm; g.p2 = 0;
  return dt__ag_record(y, op, name, 1, &a, &g);
}
/* whether a result of ts[0..n) records (ts checked by the operation, which made y) */
static int dt__ag_on_list(const dt_tensor *const *ts, int n) {
  int i;
  if (dt__no_grad) return 0;
  for (i = 0; i < n; i++) if (ts[i]->requires_grad) return 1;
  return 0;
}
