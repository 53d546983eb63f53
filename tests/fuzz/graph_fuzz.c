/* Differential fuzzer of the graph calls (dt_graph_begin / end / replay / free) against eager
   execution, on one device (the CPU, or a GPU: the emulator's or a real one).

   Each case draws, from (seed, case) alone, a small program: input tensors (shapes with
   broadcastable partners, float32, float64, float16 and bfloat16), persistent parameters that
   require grad, and 3 to 15 operations of the public API (elementwise and scalar ops, in-place
   ops, comparisons and where, matmul, reductions, softmax, casts, losses, convolution, pooling,
   layer and batch norm with running statistics, dropout and random draws, shape ops, gather,
   autograd backward, reading and zeroing gradients, an SGD, Adam or AdamW step). The program is
   drawn while it runs once eagerly on throwaway tensors: an operation that fails there is left
   out, so every recorded one is valid.

   Then two worlds, each with its own inputs, parameters and optimizer, start from the same
   values. The eager world runs the program once as a warm-up and then once per round; the graph
   world runs the same warm-up, captures the program on its own (static) inputs, and replays it
   once per round. Before each round the same new values are copied into both worlds' inputs
   (dt_copy_, grad mode off), and the generator is seeded the same before each side's run (a
   replay draws afresh from the generator, as the eager calls would). After each round every
   output, every gradient of a leaf and every parameter and running statistic must be equal bit
   for bit (docs/API.md, "Graphs": on the CPU and the emulator the replay runs the same kernels on
   the same shapes). Adam and AdamW fix their step count at the capture (documented), so a program
   with one replays only once.

   Some cases also check what the documentation promises beside that:
   - a call refused during a capture (dt_item, dt_to_host, dt_synchronize, dt_snprint,
     dt_from_data, dt_arange, dt_empty_cache, dt_randperm, dt_clip_grad_norm_) fails with
     DT_ERR_UNSUPPORTED, naming the call, and dt_graph_end then returns NULL naming it; the device
     works afterwards;
   - released captured outputs leave replays working; a released input that existed before the
     capture makes dt_graph_replay refuse with DT_ERR_INVALID_ARGUMENT; dt_graph_free then gives
     everything back: the device's allocated bytes return to what they were before the case.
   Run it under AddressSanitizer with leak detection for the rest (make fuzz-graph-emu does).

   Usage: graph_fuzz [--device cpu|cuda:N] [--seed S] [--cases N] [--case I] [--time SECONDS] [-v]
   Prints one line per mismatch with its replay command (--seed S --case I runs just that case)
   and a summary; the exit status is 1 when any case failed. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef DEVTENSOR_IMPLEMENTATION_DONE
#define DEVTENSOR_IMPLEMENTATION
#endif
#include "../../devtensor.h"

/* ---- random numbers from (seed, case) ---- */
typedef struct { uint64_t s; } fz_rng;
static uint64_t fz_next(fz_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static int fz_int(fz_rng *r, int n) { return n <= 1 ? 0 : (int)(fz_next(r) % (uint64_t)n); }
static int fz_range(fz_rng *r, int lo, int hi) { return lo + fz_int(r, hi - lo + 1); }
static double fz_unit(fz_rng *r) { return (double)(fz_next(r) >> 11) / 9007199254740992.0; }
static int fz_chance(fz_rng *r, int pct) { return fz_int(r, 100) < pct; }

/* ---- the program ---- */
#define FZ_MAXSLOT 96
#define FZ_MAXOP 40
#define FZ_MAXP 4

enum { IN_FLOAT = 0, IN_LABEL, IN_INDEX, IN_PARAM, IN_RUNMEAN, IN_RUNVAR };

typedef struct {
  int kind;      /* IN_*: how its values are made */
  dt_shape shape;
  dt_dtype dtype;
  int grad;      /* requires grad (a leaf) */
  int64_t range; /* IN_LABEL, IN_INDEX: values in [0, range) */
} fz_input;

enum {
  OP_UNARY = 0, OP_SCALAR, OP_BINARY, OP_COMPARE, OP_WHERE, OP_INPLACE, OP_MATMUL, OP_REDUCE, OP_SOFTMAX, OP_CAST, OP_LOSS,
  OP_XENT, OP_CONV, OP_POOL, OP_LAYERNORM, OP_BATCHNORM, OP_DROPOUT, OP_RAND, OP_SHAPE, OP_GATHER, OP_BACKWARD,
  OP_ZERO_GRAD, OP_GRAD, OP_OPTIM, OP_ONE_HOT, OP_KINDS
};
static const char *const fz_op_names[OP_KINDS] = {
  "unary", "scalar", "binary", "compare", "where", "inplace", "matmul", "reduce", "softmax", "cast", "loss", "xent", "conv",
  "pool", "layernorm", "batchnorm", "dropout", "rand", "shape", "gather", "backward", "zero_grad", "grad", "optim", "one_hot"};

typedef struct {
  int kind, sub;
  int a, b, c, d, e; /* slots (-1: none) */
  int out;           /* the slot it makes, -1 for none */
  int i[8];
  double s[2];
} fz_op;

typedef struct {
  int nslot;
  int is_input[FZ_MAXSLOT]; /* index into in[] + 1, or 0 for an op's result */
  fz_input in[FZ_MAXSLOT];
  int nin;
  fz_op op[FZ_MAXOP];
  int nop;
  int optim;        /* 0 none, 1 sgd, 2 adam, 3 adamw */
  double hp[4];
  int params[FZ_MAXP], nparams; /* slots */
} fz_prog;

/* ---- a world: the tensors one side runs the program on ---- */
typedef struct {
  dt_tensor *v[FZ_MAXSLOT];
  int st[FZ_MAXOP]; /* each op's status in the last run: 0 ok */
  dt_optimizer *opt;
} fz_world;

static dt_device g_dev;
static int g_verbose;
static long g_checks, g_mismatch;
static char g_where[200];

#define FZ_FAIL(...) do { g_mismatch++; printf("MISMATCH %s: ", g_where); printf(__VA_ARGS__); printf("\n"); fflush(stdout); } while (0)

static int is_half(dt_dtype t) { return t == DT_F16 || t == DT_BF16; }
static int is_float(dt_dtype t) { return t == DT_F32 || t == DT_F64 || is_half(t); }

static dt_dtype fz_float_dtype(fz_rng *r) {
  static const dt_dtype ts[] = {DT_F32, DT_F32, DT_F32, DT_F64, DT_F16, DT_BF16};
  return ts[fz_int(r, 6)];
}
static dt_shape fz_shape(fz_rng *r, int minnd, int maxnd) {
  dt_shape s = dt_shape0();
  int d;
  s.ndim = fz_range(r, minnd, maxnd);
  for (d = 0; d < s.ndim; d++) s.dims[d] = fz_range(r, 1, 5);
  return s;
}
/* a shape that broadcasts against s: leading dims dropped, some dims made 1 */
static dt_shape fz_bshape(fz_rng *r, dt_shape s) {
  dt_shape b = dt_shape0();
  int drop = fz_int(r, s.ndim + 1), d;
  if (fz_chance(r, 50)) drop = 0;
  b.ndim = s.ndim - drop;
  for (d = 0; d < b.ndim; d++) b.dims[d] = fz_chance(r, 30) ? 1 : s.dims[d + drop];
  return b;
}

/* ---- values ---- */

/* fills host buffer h (F64) with n values for an input of kind k */
static void fz_values(fz_rng *r, const fz_input *in, double *h, int64_t n) {
  int64_t j;
  for (j = 0; j < n; j++) {
    if (in->kind == IN_LABEL || in->kind == IN_INDEX) h[j] = (double)fz_int(r, (int)in->range);
    else if (in->kind == IN_RUNVAR) h[j] = 0.5 + fz_unit(r);
    else {
      int c = fz_int(r, 200);
      if (c == 0) h[j] = 0.0;
      else if (c == 1) h[j] = -0.0;
      else h[j] = (fz_unit(r) * 4.0 - 2.0);
    }
  }
}

/* a tensor on g_dev of in's dtype holding h's values */
static dt_tensor *fz_tensor_of(const fz_input *in, const double *h) {
  dt_tensor *t64, *t;
  t64 = dt_from_data(h, in->shape, DT_F64, g_dev);
  if (!t64) return NULL;
  if (in->dtype == DT_F64) return t64;
  t = dt_cast(t64, in->dtype);
  dt_release(t64);
  return t;
}

/* ---- running one operation ---- */

static dt_tensor *fz_v(fz_world *w, int slot) { return slot >= 0 ? w->v[slot] : NULL; }

/* runs op o on w's tensors: its result into *out (NULL when it makes none); 0 on success */
static int fz_exec(const fz_op *o, fz_world *w, dt_tensor **out) {
  dt_tensor *a = fz_v(w, o->a), *b = fz_v(w, o->b), *c = fz_v(w, o->c), *y = NULL;
  dt_status s = DT_OK;
  *out = NULL;
  switch (o->kind) {
    case OP_UNARY: {
      dt_tensor *(*const f[])(const dt_tensor *) = {dt_exp, dt_log, dt_sqrt, dt_neg, dt_relu, dt_sigmoid,
                                                   dt_tanh, dt_abs, dt_sin, dt_cos, dt_erf, dt_gelu};
      y = f[o->sub](a);
      break;
    }
    case OP_SCALAR:
      switch (o->sub) {
        case 0: y = dt_add_scalar(a, o->s[0]); break;
        case 1: y = dt_mul_scalar(a, o->s[0]); break;
        case 2: y = dt_rsub_scalar(a, o->s[0]); break;
        case 3: y = dt_pow_scalar(a, o->s[0]); break;
        default: y = dt_clamp(a, o->s[0], o->s[1]); break;
      }
      break;
    case OP_BINARY: {
      dt_tensor *(*const f[])(const dt_tensor *, const dt_tensor *) = {dt_add, dt_sub, dt_mul, dt_div};
      y = f[o->sub](a, b);
      break;
    }
    case OP_COMPARE:
      switch (o->sub) {
        case 0: y = dt_eq(a, b); break;
        case 1: y = dt_lt(a, b); break;
        case 2: y = dt_ge(a, b); break;
        case 3: y = dt_gt_scalar(a, o->s[0]); break;
        default: y = dt_le_scalar(a, o->s[0]); break;
      }
      break;
    case OP_WHERE: y = dt_where(a, b, c); break;
    case OP_INPLACE:
      switch (o->sub) {
        case 0: s = dt_add_(a, b); break;
        case 1: s = dt_sub_(a, b); break;
        case 2: s = dt_mul_(a, b); break;
        case 3: s = dt_div_(a, b); break;
        case 4: s = dt_add_scalar_(a, o->s[0]); break;
        case 5: s = dt_mul_scalar_(a, o->s[0]); break;
        case 6: s = dt_fill_(a, o->s[0]); break;
        default: s = dt_axpy_(a, o->s[0], b); break;
      }
      return s != DT_OK;
    case OP_MATMUL: y = dt_matmul(a, b); break;
    case OP_REDUCE:
      switch (o->sub) {
        case 0: y = dt_sum(a); break;
        case 1: y = dt_mean(a); break;
        case 2: y = dt_norm(a); break;
        case 3: y = dt_max(a); break;
        case 4: y = dt_min(a); break;
        case 5: y = dt_sum_dim(a, o->i[0]); break;
        case 6: y = dt_sum_dim_ex(a, o->i[0], o->i[1]); break;
        case 7: y = dt_mean_dim(a, o->i[0], o->i[1]); break;
        case 8: y = dt_max_dim(a, o->i[0]); break;
        case 9: y = dt_min_dim(a, o->i[0]); break;
        case 10: y = dt_argmax(a, o->i[0]); break;
        default: y = dt_argmin(a, o->i[0]); break;
      }
      break;
    case OP_SOFTMAX: y = o->sub ? dt_log_softmax(a, o->i[0]) : dt_softmax(a, o->i[0]); break;
    case OP_CAST: y = dt_cast(a, (dt_dtype)o->i[0]); break;
    case OP_LOSS:
      switch (o->sub) {
        case 0: y = dt_mse_loss(a, b); break;
        case 1: y = dt_l1_loss_ex(a, b, (dt_reduction)o->i[0]); break;
        case 2: y = dt_smooth_l1_loss_ex(a, b, o->s[0], (dt_reduction)o->i[0]); break;
        case 3: y = dt_bce_with_logits_ex(a, b, (dt_reduction)o->i[0]); break;
        default: y = dt_mse_loss_ex(a, b, (dt_reduction)o->i[0]); break;
      }
      break;
    case OP_XENT:
      switch (o->sub) {
        case 0: y = dt_cross_entropy(a, b); break;
        case 1: y = dt_nll_loss_ex(a, b, (dt_reduction)o->i[0]); break;
        default: y = dt_cross_entropy_grad(a, b); break;
      }
      break;
    case OP_CONV: y = dt_f_conv2d_ex(a, b, c, o->i[0], o->i[1], o->i[2], o->i[3], o->i[4], o->i[5], o->i[6]); break;
    case OP_POOL:
      switch (o->sub) {
        case 0: y = dt_f_max_pool2d_ex(a, o->i[0], o->i[1], o->i[2], o->i[3], o->i[4], o->i[5], NULL); break;
        case 1: y = dt_f_avg_pool2d_ex(a, o->i[0], o->i[1], o->i[2], o->i[3], o->i[4], o->i[5]); break;
        default: y = dt_f_adaptive_avg_pool2d(a, o->i[0], o->i[1]); break;
      }
      break;
    case OP_LAYERNORM: y = dt_f_layer_norm(a, o->i[0], b, c, 1e-5); break;
    case OP_BATCHNORM: y = dt_f_batch_norm(a, b, c, fz_v(w, o->d), fz_v(w, o->e), 1, o->s[0], 1e-5); break;
    case OP_DROPOUT: y = dt_f_dropout(a, o->s[0], 1); break;
    case OP_RAND: {
      dt_shape sh = dt_shape0();
      int d;
      sh.ndim = o->i[0];
      for (d = 0; d < sh.ndim; d++) sh.dims[d] = o->i[1 + d];
      if (o->sub == 0) y = dt_rand(sh, g_dev);
      else if (o->sub == 1) y = dt_randn(sh, g_dev);
      else y = dt_randint(-3, 7, sh, g_dev);
      break;
    }
    case OP_SHAPE:
      switch (o->sub) {
        case 0: y = dt_reshape(a, dt_shape1(-1)); break;
        case 1: y = dt_transpose(a); break;
        case 2: {
          int perm[DT_MAX_DIMS], d, n = dt_ndim(a);
          for (d = 0; d < n && d < DT_MAX_DIMS; d++) perm[d] = n - 1 - d;
          y = dt_permute(a, perm);
          break;
        }
        case 3: y = dt_slice(a, o->i[0], o->i[1], o->i[2]); break;
        case 4: { const dt_tensor *ts[2]; ts[0] = a; ts[1] = b ? b : a; y = dt_cat(ts, 2, o->i[0]); break; }
        case 5: { const dt_tensor *ts[2]; ts[0] = a; ts[1] = b ? b : a; y = dt_stack(ts, 2); break; }
        case 6: { int64_t pad[2]; pad[0] = o->i[0]; pad[1] = o->i[1]; y = dt_pad(a, pad, 2, o->s[0]); break; }
        case 7: y = dt_unsqueeze(a, o->i[0]); break;
        case 8: y = dt_copyto(a, g_dev); break;
        default: y = dt_to(a, g_dev); break;
      }
      break;
    case OP_GATHER: y = o->sub ? dt_index_select(a, o->i[0], b) : dt_gather(a, o->i[0], b); break;
    case OP_BACKWARD:
      y = o->sub ? dt_mean(a) : dt_sum(a);
      if (!y) return 1;
      if (dt_autograd_backward(y, NULL) != DT_OK) { dt_release(y); return 1; }
      break;
    case OP_ZERO_GRAD: return dt_zero_grad_(a) != DT_OK;
    case OP_GRAD: { /* a copy: a reference held to the gradient would make the next backward replace it
                       (out of place) rather than add into it, and a replay cannot move it */
      dt_tensor *g = dt_grad(a);
      *out = g ? dt_copyto(g, g_dev) : NULL;
      return g && !*out;
    }
    case OP_OPTIM: return dt_optimizer_step(w->opt) != DT_OK;
    case OP_ONE_HOT: y = dt_one_hot(a, o->i[0]); break;
  }
  *out = y;
  return y == NULL;
}

/* ---- drawing a program while it runs on a throwaway world ---- */

static fz_rng g_vrng; /* the values of the inputs the generation makes */

/* a new input slot in p, its tensor made in w (when w is not NULL) */
static int fz_add_input(fz_prog *p, fz_world *w, int kind, dt_shape sh, dt_dtype t, int grad, int64_t range) {
  fz_input *in;
  int slot;
  if (p->nslot >= FZ_MAXSLOT || p->nin >= FZ_MAXSLOT) return -1;
  slot = p->nslot++;
  in = &p->in[p->nin++];
  in->kind = kind; in->shape = sh; in->dtype = t; in->grad = grad; in->range = range;
  p->is_input[slot] = p->nin;
  if (w) {
    int64_t n = 1, d;
    double *h;
    for (d = 0; d < sh.ndim; d++) n *= sh.dims[d];
    h = (double *)malloc(sizeof(double) * (size_t)(n + 1));
    fz_values(&g_vrng, in, h, n);
    w->v[slot] = fz_tensor_of(in, h);
    free(h);
    if (w->v[slot] && grad) dt_requires_grad_(w->v[slot], 1);
  }
  return slot;
}

static dt_shape fz_shape_of_t(const dt_tensor *t) { return dt_shape_of(t); }

/* a slot of w holding a tensor that pred accepts, the later ones more often; -1 if none */
typedef int (*fz_pred)(const dt_tensor *t);
static int p_float(const dt_tensor *t) { return is_float(dt_dtype_of(t)); }
static int p_float2d(const dt_tensor *t) { return p_float(t) && (dt_ndim(t) == 2 || dt_ndim(t) == 3); }
static int p_float4d(const dt_tensor *t) { return p_float(t) && dt_ndim(t) == 4; }
static int p_floatnd(const dt_tensor *t) { return p_float(t) && dt_ndim(t) >= 1; }
static int p_bool(const dt_tensor *t) { return dt_dtype_of(t) == DT_BOOL; }
static int p_grad(const dt_tensor *t) { return dt_requires_grad(t); }
static int p_leafgrad(const dt_tensor *t) { return dt_requires_grad(t) && dt_is_leaf(t); }
static int p_label(const dt_tensor *t) { return dt_dtype_of(t) == DT_I64 && dt_ndim(t) == 1; }
static int fz_pick(fz_rng *r, const fz_prog *p, fz_world *w, fz_pred pred) {
  int cand[FZ_MAXSLOT], n = 0, i;
  for (i = 0; i < p->nslot; i++)
    if (w->v[i] && pred(w->v[i])) cand[n++] = i;
  if (!n) return -1;
  if (fz_chance(r, 60)) return cand[n - 1 - fz_int(r, n < 3 ? n : 3)];
  return cand[fz_int(r, n)];
}

/* draws one operation's kind and operands from what w holds */
static void fz_draw_op(fz_rng *r, fz_prog *p, fz_world *w, fz_op *o) {
  static const int weights[OP_KINDS] = {8, 6, 10, 3, 2, 5, 5, 7, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 6, 2, 6, 2, 3, 0, 0};
  int tot = 0, k, x;
  memset(o, 0, sizeof *o);
  o->a = o->b = o->c = o->d = o->e = o->out = -1;
  for (k = 0; k < OP_KINDS; k++) tot += weights[k];
  x = fz_int(r, tot);
  for (k = 0; x >= weights[k]; k++) x -= weights[k];
  o->kind = k;
  switch (k) {
    case OP_UNARY: o->sub = fz_int(r, 12); o->a = fz_pick(r, p, w, p_float); break;
    case OP_SCALAR:
      o->sub = fz_int(r, 5); o->a = fz_pick(r, p, w, p_float);
      o->s[0] = o->sub == 3 ? (double)fz_range(r, 1, 3) : (fz_unit(r) * 4 - 2);
      o->s[1] = o->s[0] + fz_unit(r) * 2;
      if (o->sub == 4 && fz_chance(r, 20)) o->s[1] = INFINITY;
      break;
    case OP_BINARY: case OP_COMPARE: case OP_INPLACE: {
      int bro = fz_int(r, 3);
      o->sub = fz_int(r, k == OP_BINARY ? 4 : k == OP_COMPARE ? 5 : 8);
      o->a = fz_pick(r, p, w, p_float);
      o->s[0] = fz_unit(r) * 4 - 2;
      if (o->a < 0) break;
      if (bro == 0) o->b = fz_pick(r, p, w, p_float);
      else {
        dt_shape sh = fz_shape_of_t(w->v[o->a]);
        dt_dtype t = fz_chance(r, 70) ? dt_dtype_of(w->v[o->a]) : fz_float_dtype(r);
        if (bro == 2) sh = fz_bshape(r, sh);
        o->b = fz_add_input(p, w, IN_FLOAT, sh, t, fz_chance(r, 20), 0);
      }
      break;
    }
    case OP_WHERE:
      o->a = fz_pick(r, p, w, p_bool); o->b = fz_pick(r, p, w, p_float); o->c = fz_pick(r, p, w, p_float);
      break;
    case OP_MATMUL:
      o->a = fz_pick(r, p, w, p_float2d);
      if (o->a >= 0) {
        dt_shape sa = dt_shape_of(w->v[o->a]), sb = sa;
        int nd = sa.ndim;
        sb.dims[nd - 2] = sa.dims[nd - 1];
        sb.dims[nd - 1] = fz_range(r, 1, 6);
        o->b = fz_add_input(p, w, IN_FLOAT, sb, fz_chance(r, 80) ? dt_dtype_of(w->v[o->a]) : fz_float_dtype(r), fz_chance(r, 30), 0);
      }
      break;
    case OP_REDUCE: case OP_SOFTMAX:
      o->sub = fz_int(r, k == OP_REDUCE ? 12 : 2);
      o->a = fz_pick(r, p, w, p_float);
      if (o->a >= 0) {
        int nd = dt_ndim(w->v[o->a]);
        o->i[0] = nd ? fz_int(r, nd) - (fz_chance(r, 30) ? nd : 0) : 0;
        o->i[1] = fz_int(r, 2);
      }
      break;
    case OP_CAST: {
      static const dt_dtype ts[] = {DT_F32, DT_F64, DT_F16, DT_BF16, DT_I32, DT_I64};
      o->a = fz_pick(r, p, w, p_float);
      o->i[0] = (int)ts[fz_int(r, fz_chance(r, 80) ? 4 : 6)];
      break;
    }
    case OP_LOSS:
      o->sub = fz_int(r, 5); o->a = fz_pick(r, p, w, p_float);
      o->i[0] = fz_int(r, 3); o->s[0] = fz_chance(r, 20) ? 0.0 : fz_unit(r) * 2;
      if (o->a >= 0) {
        int tg = fz_chance(r, 30);
        o->b = fz_add_input(p, w, IN_FLOAT, dt_shape_of(w->v[o->a]), dt_dtype_of(w->v[o->a]), tg, 0);
      }
      break;
    case OP_XENT: {
      dt_shape sh;
      o->sub = fz_int(r, 3); o->i[0] = fz_int(r, 3);
      o->a = fz_pick(r, p, w, p_float2d);
      if (o->a < 0 || dt_ndim(w->v[o->a]) != 2) {
        sh = dt_shape2(fz_range(r, 1, 6), fz_range(r, 1, 6));
        o->a = fz_add_input(p, w, IN_FLOAT, sh, fz_chance(r, 80) ? DT_F32 : fz_float_dtype(r), fz_chance(r, 50), 0);
      }
      if (o->a < 0) break;
      sh = dt_shape_of(w->v[o->a]);
      if (sh.dims[0] < 1 || sh.dims[1] < 1) { o->a = -1; break; }
      o->b = fz_pick(r, p, w, p_label);
      /* labels made for as many classes or fewer (a bad label is an error, on a GPU reported later) */
      if (o->b >= 0 && (!p->is_input[o->b] || p->in[p->is_input[o->b] - 1].kind != IN_LABEL ||
                        p->in[p->is_input[o->b] - 1].range > sh.dims[1]))
        o->b = -1;
      if (o->b < 0 || dt_dim(w->v[o->b], 0) != sh.dims[0] || fz_chance(r, 50))
        o->b = fz_add_input(p, w, IN_LABEL, dt_shape1(sh.dims[0]), DT_I64, 0, sh.dims[1]);
      break;
    }
    case OP_CONV: {
      dt_shape xs, ws;
      int groups = 1;
      o->a = fz_pick(r, p, w, p_float4d);
      if (o->a < 0 || fz_chance(r, 30)) {
        xs = dt_shape4(fz_range(r, 1, 3), fz_range(r, 1, 4), fz_range(r, 2, 7), fz_range(r, 2, 7));
        o->a = fz_add_input(p, w, IN_FLOAT, xs, fz_chance(r, 70) ? DT_F32 : fz_float_dtype(r), fz_chance(r, 40), 0);
      }
      if (o->a < 0) break;
      xs = dt_shape_of(w->v[o->a]);
      if (xs.dims[1] % 2 == 0 && fz_chance(r, 30)) groups = 2;
      o->i[0] = fz_range(r, 1, 2); o->i[1] = fz_range(r, 1, 2); o->i[2] = fz_int(r, 2); o->i[3] = fz_int(r, 2);
      o->i[4] = fz_chance(r, 80) ? 1 : 2; o->i[5] = 1; o->i[6] = groups;
      ws = dt_shape4(fz_range(r, 1, 3) * groups, xs.dims[1] / groups, fz_range(r, 1, 3), fz_range(r, 1, 3));
      o->b = fz_add_input(p, w, fz_chance(r, 40) ? IN_PARAM : IN_FLOAT, ws, dt_dtype_of(w->v[o->a]), 1, 0);
      if (o->b >= 0 && p->in[p->is_input[o->b] - 1].kind == IN_PARAM && p->nparams < FZ_MAXP) p->params[p->nparams++] = o->b;
      else if (o->b >= 0) p->in[p->is_input[o->b] - 1].grad = fz_chance(r, 50), dt_requires_grad_(w->v[o->b], p->in[p->is_input[o->b] - 1].grad);
      if (fz_chance(r, 60)) o->c = fz_add_input(p, w, IN_FLOAT, dt_shape1(ws.dims[0]), dt_dtype_of(w->v[o->a]), fz_chance(r, 50), 0);
      break;
    }
    case OP_POOL:
      o->sub = fz_int(r, 3);
      o->a = fz_pick(r, p, w, p_float4d);
      if (o->a < 0) {
        dt_shape xs = dt_shape4(fz_range(r, 1, 3), fz_range(r, 1, 3), fz_range(r, 2, 7), fz_range(r, 2, 7));
        o->a = fz_add_input(p, w, IN_FLOAT, xs, fz_chance(r, 70) ? DT_F32 : fz_float_dtype(r), fz_chance(r, 40), 0);
      }
      o->i[0] = fz_range(r, 1, 3); o->i[1] = fz_range(r, 1, 3); o->i[2] = fz_int(r, 3); o->i[3] = fz_int(r, 3);
      o->i[4] = fz_int(r, 2) * (o->i[0] / 2); o->i[5] = fz_int(r, 2) * (o->i[1] / 2);
      if (o->sub == 2) { o->i[0] = fz_range(r, 1, 4); o->i[1] = fz_range(r, 1, 4); }
      break;
    case OP_LAYERNORM:
      o->a = fz_pick(r, p, w, p_floatnd);
      if (o->a >= 0) {
        dt_tensor *t = w->v[o->a];
        int64_t d = dt_dim(t, -1);
        o->i[0] = (int)d;
        if (fz_chance(r, 60)) o->b = fz_add_input(p, w, IN_FLOAT, dt_shape1(d), dt_dtype_of(t), fz_chance(r, 50), 0);
        if (fz_chance(r, 60)) o->c = fz_add_input(p, w, IN_FLOAT, dt_shape1(d), dt_dtype_of(t), fz_chance(r, 50), 0);
      }
      break;
    case OP_BATCHNORM:
      o->a = fz_pick(r, p, w, p_float);
      if (o->a >= 0 && dt_ndim(w->v[o->a]) >= 2) {
        dt_tensor *t = w->v[o->a];
        int64_t ch = dt_dim(t, 1);
        dt_dtype tt = dt_dtype_of(t);
        o->s[0] = fz_unit(r) * 0.5;
        if (fz_chance(r, 70)) {
          o->b = fz_add_input(p, w, IN_RUNMEAN, dt_shape1(ch), tt, 0, 0);
          o->c = fz_add_input(p, w, IN_RUNVAR, dt_shape1(ch), tt, 0, 0);
        }
        if (fz_chance(r, 50)) o->d = fz_add_input(p, w, IN_FLOAT, dt_shape1(ch), tt, fz_chance(r, 50), 0);
        if (fz_chance(r, 50)) o->e = fz_add_input(p, w, IN_FLOAT, dt_shape1(ch), tt, fz_chance(r, 50), 0);
      }
      break;
    case OP_DROPOUT: o->a = fz_pick(r, p, w, p_float); o->s[0] = fz_chance(r, 10) ? 1.0 : fz_unit(r); break;
    case OP_RAND: {
      dt_shape sh = fz_shape(r, 0, 3);
      int d;
      o->sub = fz_int(r, 3); o->i[0] = sh.ndim;
      for (d = 0; d < sh.ndim; d++) o->i[1 + d] = (int)sh.dims[d];
      break;
    }
    case OP_SHAPE:
      o->sub = fz_int(r, 10);
      o->a = fz_pick(r, p, w, o->sub == 1 ? p_float2d : p_floatnd);
      if (o->a >= 0) {
        int nd = dt_ndim(w->v[o->a]);
        int64_t n;
        o->i[0] = fz_int(r, nd > 0 ? nd : 1);
        if (o->sub == 7) o->i[0] = fz_int(r, nd + 1);
        n = nd ? dt_dim(w->v[o->a], o->i[0]) : 1;
        o->i[1] = fz_int(r, (int)n + 1); o->i[2] = o->i[1] + fz_range(r, 1, (int)n);
        if (o->sub == 6) { o->i[0] = fz_int(r, 3) - 1; o->i[1] = fz_int(r, 3); }
        o->s[0] = fz_unit(r);
        if ((o->sub == 4 || o->sub == 5) && fz_chance(r, 50))
          o->b = fz_add_input(p, w, IN_FLOAT, dt_shape_of(w->v[o->a]), dt_dtype_of(w->v[o->a]), fz_chance(r, 30), 0);
      }
      break;
    case OP_GATHER:
      o->sub = fz_int(r, 2);
      o->a = fz_pick(r, p, w, p_floatnd);
      if (o->a >= 0) {
        dt_shape sh = dt_shape_of(w->v[o->a]), is = sh;
        int dim = fz_int(r, sh.ndim);
        o->i[0] = dim;
        if (o->sub) is = dt_shape1(fz_range(r, 1, 6));
        else is.dims[dim] = fz_range(r, 1, 4);
        o->b = fz_add_input(p, w, IN_INDEX, is, DT_I64, 0, sh.dims[dim]);
      }
      break;
    case OP_BACKWARD: o->sub = fz_int(r, 2); o->a = fz_pick(r, p, w, p_grad); break;
    case OP_ZERO_GRAD: o->a = fz_pick(r, p, w, p_leafgrad); break;
    case OP_GRAD: o->a = fz_pick(r, p, w, p_leafgrad); break;
    case OP_ONE_HOT: o->a = fz_pick(r, p, w, p_label); o->i[0] = fz_range(r, 6, 8); break;
  }
}

/* ---- the worlds ---- */

static int fz_persistent(int kind) { return kind == IN_PARAM || kind == IN_RUNMEAN || kind == IN_RUNVAR; }

static void fz_world_free(fz_world *w) {
  int i;
  dt_optimizer_free(w->opt);
  w->opt = NULL;
  for (i = 0; i < FZ_MAXSLOT; i++) { dt_release(w->v[i]); w->v[i] = NULL; }
}

/* the op results of w released (inputs kept) */
static void fz_world_drop_outputs(const fz_prog *p, fz_world *w) {
  int i;
  for (i = 0; i < p->nslot; i++)
    if (!p->is_input[i]) { dt_release(w->v[i]); w->v[i] = NULL; }
}

static dt_optimizer *fz_make_opt(const fz_prog *p, fz_world *w) {
  dt_tensor *ps[FZ_MAXP];
  int i;
  for (i = 0; i < p->nparams; i++) ps[i] = w->v[p->params[i]];
  switch (p->optim) {
    case 1: return dt_sgd_tensors(ps, p->nparams, p->hp[0], p->hp[1], p->hp[2]);
    case 2: return dt_adam_tensors(ps, p->nparams, p->hp[0], 0.9, 0.999, 1e-8, p->hp[2]);
    case 3: return dt_adamw_tensors(ps, p->nparams, p->hp[0], 0.9, 0.999, 1e-8, p->hp[2]);
  }
  return NULL;
}

/* both worlds' inputs: persistent ones from pvals (the same for both), the others from round 0 */
static int fz_worlds_make(const fz_prog *p, fz_world *w0, fz_world *w1, uint64_t vseed) {
  int i, k;
  fz_rng vr;
  vr.s = vseed;
  for (i = 0; i < p->nslot; i++) {
    const fz_input *in;
    int64_t n = 1, d;
    double *h;
    if (!p->is_input[i]) continue;
    in = &p->in[p->is_input[i] - 1];
    for (d = 0; d < in->shape.ndim; d++) n *= in->shape.dims[d];
    h = (double *)malloc(sizeof(double) * (size_t)(n + 1));
    fz_values(&vr, in, h, n);
    for (k = 0; k < 2; k++) {
      fz_world *w = k ? w1 : w0;
      w->v[i] = fz_tensor_of(in, h);
      if (!w->v[i] || (in->grad && dt_requires_grad_(w->v[i], 1) != DT_OK)) { free(h); return 1; }
    }
    free(h);
  }
  if (p->optim && p->nparams) {
    w0->opt = fz_make_opt(p, w0);
    w1->opt = fz_make_opt(p, w1);
    if (!w0->opt || !w1->opt) return 1;
  }
  return 0;
}

/* new values for the inputs that are not persistent, copied into both worlds */
static int fz_new_values(const fz_prog *p, fz_world *w0, fz_world *w1, uint64_t vseed) {
  int i, prev = dt_set_grad_enabled(0), bad = 0;
  fz_rng vr;
  vr.s = vseed;
  for (i = 0; i < p->nslot && !bad; i++) {
    const fz_input *in;
    int64_t n = 1, d;
    double *h;
    dt_tensor *t;
    if (!p->is_input[i]) continue;
    in = &p->in[p->is_input[i] - 1];
    if (fz_persistent(in->kind)) continue;
    for (d = 0; d < in->shape.ndim; d++) n *= in->shape.dims[d];
    h = (double *)malloc(sizeof(double) * (size_t)(n + 1));
    fz_values(&vr, in, h, n);
    t = fz_tensor_of(in, h);
    free(h);
    if (!t || (w0 && dt_copy_(w0->v[i], t) != DT_OK) || (w1 && dt_copy_(w1->v[i], t) != DT_OK)) {
      printf("ERROR %s: copying new input values: %s\n", g_where, dt_last_error());
      bad = 1;
    }
    dt_release(t);
  }
  dt_set_grad_enabled(prev);
  return bad;
}

/* runs p on w: each op's result replaces its slot; returns the first failing op's index, or -1 */
static int fz_run(const fz_prog *p, fz_world *w, int upto) {
  int k, first = -1;
  for (k = 0; k < p->nop && k < upto; k++) {
    const fz_op *o = &p->op[k];
    dt_tensor *y;
    w->st[k] = fz_exec(o, w, &y);
    if (w->st[k] && first < 0) first = k;
    if (o->out >= 0) { dt_release(w->v[o->out]); w->v[o->out] = y; }
    else dt_release(y);
  }
  return first;
}

/* equal shape, dtype and bytes */
static void fz_same(const char *what, int slot, dt_tensor *e, dt_tensor *g) {
  size_t n;
  unsigned char *he, *hg;
  dt_shape se, sg;
  g_checks++;
  if (!e && !g) return;
  if (!e || !g) { FZ_FAIL("%s of slot %d: eager %s, graph %s", what, slot, e ? "a tensor" : "NULL", g ? "a tensor" : "NULL"); return; }
  se = dt_shape_of(e); sg = dt_shape_of(g);
  if (se.ndim != sg.ndim || memcmp(se.dims, sg.dims, sizeof(int64_t) * (size_t)se.ndim) != 0 || dt_dtype_of(e) != dt_dtype_of(g)) {
    FZ_FAIL("%s of slot %d: shape or dtype differ", what, slot);
    return;
  }
  n = dt_nbytes(e);
  he = (unsigned char *)malloc(n + 1); hg = (unsigned char *)malloc(n + 1);
  if (dt_to_host(e, he, n) != DT_OK || dt_to_host(g, hg, n) != DT_OK) FZ_FAIL("%s of slot %d: reading it: %s", what, slot, dt_last_error());
  else if (memcmp(he, hg, n) != 0) {
    size_t j, es = dt_dtype_size(dt_dtype_of(e));
    for (j = 0; j + es <= n && memcmp(he + j, hg + j, es) == 0; j += es) {}
    if (dt_dtype_of(e) == DT_F32) {
      float fe, fg;
      memcpy(&fe, he + j, 4); memcpy(&fg, hg + j, 4);
      FZ_FAIL("%s of slot %d (%s): element %zu differs: eager %.9g, graph %.9g", what, slot, dt_dtype_name(dt_dtype_of(e)), j / es, fe, fg);
    } else if (dt_dtype_of(e) == DT_F64) {
      double fe, fg;
      memcpy(&fe, he + j, 8); memcpy(&fg, hg + j, 8);
      FZ_FAIL("%s of slot %d (%s): element %zu differs: eager %.17g, graph %.17g", what, slot, dt_dtype_name(dt_dtype_of(e)), j / es, fe, fg);
    } else
      FZ_FAIL("%s of slot %d (%s): element %zu differs", what, slot, dt_dtype_name(dt_dtype_of(e)), j / es);
  }
  free(he); free(hg);
}

/* every output, input (changed in place), parameter and gradient of a leaf */
static void fz_compare(const fz_prog *p, fz_world *e, fz_world *g, const char *when, int released) {
  int i;
  char what[64];
  for (i = 0; i < p->nslot; i++) {
    snprintf(what, sizeof what, "%s: %s", when, p->is_input[i] ? "input" : "output");
    if (!p->is_input[i] && released && !g->v[i]) continue; /* released graph outputs */
    if (p->is_input[i] || e->v[i] || g->v[i]) fz_same(what, i, e->v[i], g->v[i]);
    if (p->is_input[i] && e->v[i] && g->v[i] && dt_requires_grad(e->v[i])) {
      snprintf(what, sizeof what, "%s: gradient", when);
      fz_same(what, i, dt_grad(e->v[i]), dt_grad(g->v[i]));
    }
  }
}

/* what devtensor holds on d for tensors; an empty capture first (a GPU's first capture makes its
   cuBLAS handle and workspace, as test_graph.c says) */
static size_t fz_allocated(dt_device d) {
  dt_memory_stats m;
  if (dt_graph_begin(d) == DT_OK) dt_graph_free(dt_graph_end(d));
  if (dt_memory_stats_get(d, &m) != DT_OK) return (size_t)-1;
  return m.allocated;
}

static void fz_print_prog(const fz_prog *p) {
  int k, i;
  for (i = 0; i < p->nslot; i++)
    if (p->is_input[i]) {
      const fz_input *in = &p->in[p->is_input[i] - 1];
      int d;
      printf("  slot %d: input kind %d %s grad %d (", i, in->kind, dt_dtype_name(in->dtype), in->grad);
      for (d = 0; d < in->shape.ndim; d++) printf("%s%lld", d ? ", " : "", (long long)in->shape.dims[d]);
      printf(")\n");
    }
  for (k = 0; k < p->nop; k++) {
    const fz_op *o = &p->op[k];
    printf("  op %d: %s/%d a=%d b=%d c=%d d=%d e=%d -> %d i=(%d %d %d %d %d %d %d) s=(%g %g)\n", k, fz_op_names[o->kind], o->sub, o->a,
           o->b, o->c, o->d, o->e, o->out, o->i[0], o->i[1], o->i[2], o->i[3], o->i[4], o->i[5], o->i[6], o->s[0], o->s[1]);
  }
  printf("  optimizer %d (lr %g momentum %g wd %g)\n", p->optim, p->hp[0], p->hp[1], p->hp[2]);
}

/* ---- one case ---- */

static int fz_pure(int kind) {
  return kind != OP_BACKWARD && kind != OP_ZERO_GRAD && kind != OP_OPTIM && kind != OP_INPLACE && kind != OP_BATCHNORM &&
         kind != OP_GRAD;
}

/* a call documented as refused during a capture, on w's tensors: 0 when it was refused as documented */
static const char *const fz_refused_names[] = {"dt_item", "dt_to_host", "dt_synchronize", "dt_snprint", "dt_from_data",
                                               "dt_arange", "dt_empty_cache", "dt_randperm", "dt_clip_grad_norm_", "dt_one_hot"};
static int fz_refused_call(int which, fz_world *w, const fz_prog *p) {
  dt_tensor *t = NULL, *any = NULL;
  int i, ok = 0;
  char buf[64];
  double h[4] = {1, 2, 3, 4};
  for (i = 0; i < p->nslot; i++)
    if (w->v[i]) { any = w->v[i]; break; }
  switch (which) {
    case 0: { /* a 0-d tensor made during the capture */
      double v;
      t = dt_zeros(dt_shape0(), g_dev);
      v = t ? dt_item(t) : 0;
      ok = t && v != v;
      break;
    }
    case 1: {
      void *hb = any ? malloc(dt_nbytes(any) + 1) : NULL;
      ok = any && dt_to_host(any, hb, dt_nbytes(any)) != DT_OK;
      free(hb);
      break;
    }
    case 2: ok = dt_synchronize(g_dev) != DT_OK; break;
    case 3: ok = dt_snprint(buf, sizeof buf, any) < 0; break;
    case 4: t = dt_from_data(h, dt_shape1(4), DT_F64, g_dev); ok = t == NULL; break;
    case 5: t = dt_arange(0, 4, 1, DT_F32, g_dev); ok = t == NULL; break;
    case 6: ok = dt_empty_cache(g_dev) != DT_OK; break;
    case 7: t = dt_randperm(5, g_dev); ok = t == NULL; break;
    case 9: { /* labels made during the capture: their range would be read to the host */
      dt_tensor *lab = dt_randint(0, 3, dt_shape1(4), g_dev);
      t = lab ? dt_one_hot(lab, 3) : NULL;
      ok = lab && !t;
      dt_release(lab);
      break;
    }
    default: {
      dt_tensor *ps[FZ_MAXP];
      double norm;
      int n = 0;
      for (i = 0; i < p->nparams; i++) if (dt_grad(w->v[p->params[i]])) ps[n++] = w->v[p->params[i]];
      if (!n) return -1; /* nothing to clip: not drawn */
      ok = dt_clip_grad_norm_(ps, n, 0.5, &norm) != DT_OK;
      break;
    }
  }
  dt_release(t);
  if (which == 0 || which == 1 || which == 3) { /* the ones that need a tensor */
    if (!any) return -1;
  }
  if (!ok) { FZ_FAIL("%s during a capture was not refused", fz_refused_names[which]); return 1; }
  if (dt_last_status() != DT_ERR_UNSUPPORTED || !strstr(dt_last_error(), "captur")) {
    FZ_FAIL("%s during a capture: status %s, message \"%s\"", fz_refused_names[which], dt_status_string(dt_last_status()), dt_last_error());
    return 1;
  }
  return 0;
}

static int fz_case(uint64_t seed, int ci) {
  fz_rng r;
  fz_prog *p = (fz_prog *)calloc(1, sizeof(fz_prog));
  fz_world *wg = (fz_world *)calloc(1, sizeof(fz_world)), *we = (fz_world *)calloc(1, sizeof(fz_world)),
           *wc = (fz_world *)calloc(1, sizeof(fz_world));
  dt_graph *g = NULL;
  dt_tensor *hold[FZ_MAXSLOT * 2];
  int nhold = 0;
  long before = g_mismatch;
  int target, tries, k, rounds, round, i;
  size_t base;
  uint64_t vseed, rseed;
  r.s = seed * 0x100000001b3ULL + (uint64_t)ci * 0x9e3779b97f4a7c15ULL + 1;
  g_vrng.s = fz_next(&r);
  vseed = fz_next(&r);
  rseed = fz_next(&r);
  snprintf(g_where, sizeof g_where, "seed %llu case %d", (unsigned long long)seed, ci);
  base = fz_allocated(g_dev);

  /* the program, drawn while it runs on the throwaway world wg */
  for (k = fz_range(&r, 1, 3); k > 0; k--) {
    dt_shape sh = fz_shape(&r, 0, 4);
    fz_add_input(p, wg, IN_FLOAT, sh, fz_float_dtype(&r), fz_chance(&r, 40), 0);
  }
  for (k = fz_int(&r, 3); k > 0; k--) {
    int s = fz_add_input(p, wg, IN_PARAM, fz_shape(&r, 1, 3), fz_chance(&r, 80) ? DT_F32 : fz_float_dtype(&r), 1, 0);
    if (s >= 0) p->params[p->nparams++] = s;
  }
  p->optim = fz_chance(&r, 70) ? 1 : fz_chance(&r, 50) ? 2 : 3;
  p->hp[0] = 0.01 + fz_unit(&r) * 0.1;
  p->hp[1] = fz_chance(&r, 70) ? fz_unit(&r) * 0.9 : 0.0;
  p->hp[2] = fz_chance(&r, 30) ? fz_unit(&r) * 0.1 : 0.0;
  target = fz_range(&r, 3, 15);
  dt_manual_seed(rseed);
  for (tries = 0; p->nop < target - 1 && tries < 6 * target; tries++) {
    fz_op o;
    dt_tensor *y;
    int need_b;
    fz_draw_op(&r, p, wg, &o);
    need_b = o.kind == OP_BINARY || o.kind == OP_WHERE || o.kind == OP_MATMUL || o.kind == OP_LOSS || o.kind == OP_XENT ||
             o.kind == OP_CONV || o.kind == OP_GATHER || (o.kind == OP_INPLACE && (o.sub < 4 || o.sub == 7)) || o.kind == OP_COMPARE;
    if (o.kind == OP_COMPARE && o.sub >= 3) need_b = 0;
    if ((o.kind != OP_RAND && o.a < 0) || (need_b && o.b < 0) || (o.kind == OP_WHERE && o.c < 0)) continue;
    /* a gradient zeroed after a backward of the step would be a new tensor at the step's end
       (the next backward makes it), not the one the next step's first backward adds into: a
       step a replay cannot repeat (the capture fixes which memory each backward adds into) */
    if (o.kind == OP_ZERO_GRAD) {
      for (k = 0; k < p->nop && p->op[k].kind != OP_BACKWARD; k++) {}
      if (k < p->nop) continue;
    }
    if (p->nslot >= FZ_MAXSLOT || p->nop >= FZ_MAXOP - 1) break;
    if (fz_exec(&o, wg, &y)) { dt_clear_error(); continue; }
    if (y) { o.out = p->nslot++; wg->v[o.out] = y; }
    p->op[p->nop++] = o;
  }
  /* a training step's end: the optimizer's step on the parameters (their gradients, where a
     backward reached them); at its start, sometimes, their gradients zeroed */
  if (p->nparams && p->nop < FZ_MAXOP - FZ_MAXP - 1) {
    fz_op o;
    memset(&o, 0, sizeof o);
    o.kind = OP_OPTIM; o.a = o.b = o.c = o.d = o.e = o.out = -1;
    p->op[p->nop++] = o;
    if (fz_chance(&r, 50)) {
      memmove(&p->op[p->nparams], &p->op[0], sizeof(fz_op) * (size_t)p->nop);
      for (k = 0; k < p->nparams; k++) {
        memset(&p->op[k], 0, sizeof o);
        p->op[k].kind = OP_ZERO_GRAD; p->op[k].a = p->params[k]; p->op[k].b = p->op[k].c = p->op[k].d = p->op[k].e = p->op[k].out = -1;
      }
      p->nop += p->nparams;
    }
  } else p->optim = 0;
  fz_world_free(wg);
  dt_clear_error();
  if (g_verbose) { printf("%s:\n", g_where); fz_print_prog(p); }

  /* the two worlds, the warm-up on each */
  if (fz_worlds_make(p, we, wg, vseed)) { printf("ERROR %s: making the inputs: %s\n", g_where, dt_last_error()); g_mismatch++; goto done; }
  dt_manual_seed(rseed);
  k = fz_run(p, we, FZ_MAXOP);
  if (k >= 0) { printf("NOTE %s: op %d (%s) failed eagerly in the warm-up: %s\n", g_where, k, fz_op_names[p->op[k].kind], dt_last_error()); goto done; }
  dt_manual_seed(rseed);
  k = fz_run(p, wg, FZ_MAXOP);
  if (k >= 0) { FZ_FAIL("op %d (%s) failed in the graph world's warm-up: %s", k, fz_op_names[p->op[k].kind], dt_last_error()); goto done; }
  fz_compare(p, we, wg, "warm-up", 0);
  fz_world_drop_outputs(p, wg); /* from before the capture: released now, not after it */
  /* the eager world's tensors from before the capture are held until the graph is freed: any
     tensor on the device that existed when a capture began and is released after it makes the
     graph refuse to replay (docs/API.md, "Graphs") */
  for (i = 0; i < p->nslot && nhold < FZ_MAXSLOT * 2; i++) {
    if (we->v[i] && !p->is_input[i]) hold[nhold++] = dt_retain(we->v[i]);
    if (we->v[i] && p->is_input[i] && dt_grad(we->v[i])) hold[nhold++] = dt_retain(dt_grad(we->v[i]));
  }

  /* the capture */
  if (dt_graph_begin(g_dev) != DT_OK) { FZ_FAIL("dt_graph_begin: %s", dt_last_error()); goto done; }
  k = fz_run(p, wg, FZ_MAXOP);
  if (k >= 0) FZ_FAIL("op %d (%s) failed during the capture: %s", k, fz_op_names[p->op[k].kind], dt_last_error());
  g = dt_graph_end(g_dev);
  if (!g) { FZ_FAIL("dt_graph_end: %s", dt_last_error()); goto done; }

  /* the rounds: new inputs, an eager run against a replay */
  rounds = p->optim >= 2 ? 1 : 3;
  for (round = 1; round <= rounds && g_mismatch == before; round++) {
    char when[32];
    if (fz_new_values(p, we, wg, vseed + (uint64_t)round)) { g_mismatch++; goto done; }
    dt_manual_seed(rseed + (uint64_t)round);
    k = fz_run(p, we, FZ_MAXOP);
    if (k >= 0) { printf("NOTE %s: op %d (%s) failed eagerly in round %d: %s\n", g_where, k, fz_op_names[p->op[k].kind], round, dt_last_error()); goto done; }
    dt_manual_seed(rseed + (uint64_t)round);
    if (dt_graph_replay(g) != DT_OK) { FZ_FAIL("dt_graph_replay in round %d: %s", round, dt_last_error()); goto done; }
    snprintf(when, sizeof when, "round %d", round);
    fz_compare(p, we, wg, when, 0);
  }
  if (g_mismatch != before) goto done;

  /* a refused call during a second capture (pure ops only: a capture that never runs must not
     change the worlds' state), some captured outputs of g released during it; then a round */
  if (p->optim < 2 && fz_chance(&r, 30)) {
    int which = fz_int(&r, 10), upto = fz_int(&r, p->nop + 1), rel = fz_chance(&r, 50), res;
    char made[FZ_MAXSLOT];
    memset(made, 0, sizeof made);
    memcpy(wc->v, wg->v, sizeof wc->v);
    if (dt_graph_begin(g_dev) != DT_OK) { FZ_FAIL("dt_graph_begin (second): %s", dt_last_error()); goto done; }
    for (k = 0; k < upto; k++) {
      const fz_op *o = &p->op[k];
      dt_tensor *y;
      if (!fz_pure(o->kind)) continue;
      if (fz_exec(o, wc, &y) == 0 && o->out >= 0) { wc->v[o->out] = y; made[o->out] = 1; } /* released below */
      else dt_release(y);
    }
    if (rel)
      for (i = 0; i < p->nslot; i++)
        if (!p->is_input[i] && wg->v[i]) {
          if (!made[i]) wc->v[i] = NULL;
          dt_release(wg->v[i]);
          wg->v[i] = NULL;
        }
    res = fz_refused_call(which, wc, p);
    {
      dt_graph *g2 = dt_graph_end(g_dev);
      if (res == 0 && (g2 || dt_last_status() != DT_ERR_UNSUPPORTED || !strstr(dt_last_error(), fz_refused_names[which])))
        FZ_FAIL("dt_graph_end after %s was refused: %s, \"%s\"", fz_refused_names[which], g2 ? "a graph" : "NULL", dt_last_error());
      dt_graph_free(g2);
    }
    /* the second capture's results (those not g's) */
    for (i = 0; i < p->nslot; i++)
      if (made[i]) dt_release(wc->v[i]);
    memset(wc->v, 0, sizeof wc->v);
    if (g_mismatch != before) goto done;
    /* the device works, and g still replays as the eager steps run */
    if (fz_new_values(p, we, wg, vseed + 100)) { g_mismatch++; goto done; }
    dt_manual_seed(rseed + 100);
    if (fz_run(p, we, FZ_MAXOP) >= 0) goto done;
    dt_manual_seed(rseed + 100);
    if (dt_graph_replay(g) != DT_OK) { FZ_FAIL("dt_graph_replay after the refused capture: %s", dt_last_error()); goto done; }
    fz_compare(p, we, wg, "after a refused capture", rel);
  }

  /* releasing: the captured outputs (replays go on), then an input from before the capture
     (replays refuse), then the graph */
  if (fz_chance(&r, 30)) {
    int victim = -1;
    fz_world_drop_outputs(p, wg);
    if (dt_graph_replay(g) != DT_OK) FZ_FAIL("dt_graph_replay after the outputs were released: %s", dt_last_error());
    for (i = 0; i < p->nslot; i++)
      if (p->is_input[i] && !fz_persistent(p->in[p->is_input[i] - 1].kind) && wg->v[i]) victim = i;
    if (victim >= 0) {
      dt_release(wg->v[victim]);
      wg->v[victim] = NULL;
      if (dt_graph_replay(g) != DT_ERR_INVALID_ARGUMENT || !strstr(dt_last_error(), "existed when the capture began"))
        FZ_FAIL("dt_graph_replay after input slot %d was released: %s, \"%s\"", victim, dt_status_string(dt_last_status()), dt_last_error());
    }
  }

done:
  dt_graph_free(g);
  for (i = 0; i < nhold; i++) dt_release(hold[i]);
  fz_world_free(we);
  fz_world_free(wg);
  dt_clear_error();
  {
    size_t now = fz_allocated(g_dev);
    g_checks++;
    if (now != base) FZ_FAIL("%llu bytes allocated on the device after the case, %llu before", (unsigned long long)now, (unsigned long long)base);
  }
  if (g_mismatch != before) {
    printf("  replay: graph_fuzz --device %s --seed %llu --case %d -v\n", g_dev.type == DT_CPU ? "cpu" : "cuda:N",
           (unsigned long long)seed, ci);
    if (!g_verbose) fz_print_prog(p);
  }
  free(p); free(wg); free(we); free(wc);
  return g_mismatch != before;
}

int main(int argc, char **argv) {
  uint64_t seed = 1;
  int cases = 200, one = -1, i, failed = 0, ran = 0;
  double limit = 0;
  time_t t0 = time(NULL);
  g_dev = dt_cpu();
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      if (dt_device_parse(argv[++i], &g_dev) != DT_OK) { fprintf(stderr, "graph_fuzz: %s\n", dt_last_error()); return 2; }
    } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--cases") && i + 1 < argc) cases = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) one = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--time") && i + 1 < argc) limit = atof(argv[++i]);
    else if (!strcmp(argv[i], "-v")) g_verbose = 1;
    else {
      fprintf(stderr, "usage: graph_fuzz [--device cpu|cuda:N] [--seed S] [--cases N] [--case I] [--time SECONDS] [-v]\n");
      return 2;
    }
  }
  if (g_dev.type == DT_CUDA && g_dev.index >= dt_num_gpus()) {
    printf("SKIP graph_fuzz: no %s (%s)\n", argv[0], dt_last_error());
    return 0;
  }
  for (i = one >= 0 ? one : 0; one >= 0 ? i == one : i < cases; i++) {
    if (limit > 0 && difftime(time(NULL), t0) > limit) break;
    failed += fz_case(seed, i);
    ran++;
  }
  printf("graph_fuzz: %d cases from seed %llu on %s, %ld checks, %d failed cases, %ld mismatches\n", ran,
         (unsigned long long)seed, g_dev.type == DT_CPU ? "cpu" : "cuda", g_checks, failed, g_mismatch);
  return failed ? 1 : 0;
}
