/* Bad input, table-driven: every public function called with NULL pointers,
   negative and overflowing dims, unknown dtypes, mismatched shapes, devices
   that do not exist, and tensors (or a module and a tensor) on two devices:
   cpu and cuda:0, cuda:0 and cuda:1 (a row that needs GPUs this machine or
   build lacks is reported as skipped). Each call must fail the documented
   way: NULL, -1, NaN or a non-OK status; dt_last_status() the documented
   status; and a message that starts with the called function's name
   ("dt_xxx: ") and names the argument or the values at fault (for mixed
   devices: both arguments and both devices). The error handler must see
   the same. After the table, a few scenarios that need state (networks,
   outputs left untouched on failure). */
#define _POSIX_C_SOURCE 200809L
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- fixtures, made in main ---- */

static dt_tensor *F;     /* f32 (2, 3) */
static dt_tensor *D;     /* f64 (2, 3) */
static dt_tensor *I;     /* i32 (2, 3) */
static dt_tensor *L;     /* i64 (3,) */
static dt_tensor *V;     /* f32 (3,) */
static dt_tensor *S;     /* f32 0-d */
static dt_tensor *X;     /* f32 (5, 3): net input */
static dt_tensor *Y;     /* f32 (5, 2): net target */
static dt_tensor *M4;    /* f32 (2, 2, 2, 2) */
static dt_module *NET;   /* Sequential(Linear(3, 4), ReLU, Linear(4, 2)), never run */
static dt_module *LAZY;  /* Sequential(LazyLinear(2)) */
static dt_module *RELU;  /* a ReLU layer on its own */
static dt_module *NETR;  /* like NET, after a forward of X: (5, 2) out */
static dt_tensor *YD;    /* f64 (5, 2) */
static dt_tensor *B3;    /* f32 (2, 3, 4) */
static dt_tensor *C3;    /* f32 (2, 4, 5) */
static dt_tensor *C35;   /* f32 (3, 4, 5) */
static dt_tensor *T8;    /* f32 8-d, one element */
static const dt_tensor *STK[3]; /* F, F, F: a list for dt_stack */
/* on cuda:0, made when there is a GPU (the rows that use them skip otherwise) */
static dt_tensor *G0;    /* f32 (2, 3), F's values */
static dt_tensor *G0V;   /* f32 (3,) */
static dt_tensor *GD0;   /* f64 (2, 3) */
static dt_tensor *GX;    /* f32 (5, 3), X's values */
static dt_tensor *GY;    /* f32 (5, 2), Y's values */
static dt_tensor *G0B3;  /* f32 (2, 3, 4) */
static dt_tensor *G0C3;  /* f32 (2, 4, 5) */
static dt_module *NETG;  /* like NET on cuda:0, after a forward of GX */
/* on cuda:1, made when there are two GPUs */
static dt_tensor *G1;    /* f32 (2, 3), F's values */
static dt_tensor *G1X;   /* f32 (5, 3) */
static dt_tensor *G1Y;   /* f32 (5, 2) */
static dt_tensor *G1C3;  /* f32 (2, 4, 5) */
static int NGPU;         /* dt_num_gpus() */
static char NEED1[160], NEED2[160]; /* why a row that needs one or two GPUs skips */
static dt_trainer TR;
static char OUTPATH[256];  /* a file that cannot be created */
static char BADFILE[256];  /* a corrupt safetensors file */
static char TEXTFILE[256]; /* a text file, the start of /etc/passwd */
static char SHORTFILE[256]; /* a header length of 100 and 2 bytes after it */
static char NETFILE[256];  /* NET saved: 0.weight (4, 3), 0.bias, 2.weight (2, 4), 2.bias */
static char SMALLBUF[64];
static FILE *RO;           /* a stream open for reading only */
/* interop */
static struct DLManagedTensorVersioned DLZ;  /* all zero: DLPack version 0.0 */
static struct DLManagedTensor DLZL;          /* all zero: dtype int0 */
static const char *NAMES1[1] = {"f"}, *NAMES2[2] = {"f", "f"};
static int LN;
static char **LNAMES;
static dt_tensor **LTS;
static double HOST[64];
static dt_device DEV;
static dt_device_info INFO;
static dt_memory_stats STATS;

/* A call that should fail: 1 when it did. A tensor made anyway is released. */
static int nul(dt_tensor *t) { if (!t) return 1; dt_release(t); return 0; }
static int nulm(dt_module *m) { if (!m) return 1; dt_module_free(m); return 0; }
static int bad(dt_status s) { return s != DT_OK; }
static int neg(int64_t v) { return v < 0; }
static int isnanv(double v) { return isnan(v); }

/* A row that needs n GPUs: runs the call, or marks the row skipped (reported
   as SKIP, not PASS) when this machine or build has fewer. */
static int need_gpus(int n) {
  if (NGPU >= n) return 1;
  t_cur_skip = n == 1 ? NEED1 : NEED2;
  return 0;
}
#define GPUS(n, call) (need_gpus(n) ? (call) : 1)

static dt_tensor *stack2(const dt_tensor *a, const dt_tensor *b) {
  const dt_tensor *ts[2];
  ts[0] = a; ts[1] = b;
  return dt_stack(ts, 2);
}
static dt_tensor *stack3(const dt_tensor *a, const dt_tensor *b, const dt_tensor *c) {
  const dt_tensor *ts[3];
  ts[0] = a; ts[1] = b; ts[2] = c;
  return dt_stack(ts, 3);
}
/* A Linear(in, out) on cuda:i, for dt_sequential_add (which takes it, also when it refuses it). */
static dt_module *linear_on(int64_t in, int64_t out, int i) {
  dt_module *l = dt_linear(in, out);
  if (l && dt_module_to(l, dt_gpu(i)) != DT_OK) { dt_module_free(l); return NULL; }
  return l;
}

/* indexing: lists for dt_cat, permutations, and index tensors made on the spot */
static dt_tensor *cat2(const dt_tensor *a, const dt_tensor *b, int dim) {
  const dt_tensor *ts[2];
  ts[0] = a; ts[1] = b;
  return dt_cat(ts, 2, dim);
}
static const int PERM_RANGE[2] = {0, 2}, PERM_REPEAT[2] = {1, -1}, PERM_NEG[2] = {-1, -2};
/* dt_index_select(t, dim, index) with index = values (I64, n of them; shaped (n, 1) when two_d) on device d */
static dt_tensor *isel(const dt_tensor *t, int dim, const int64_t *values, int n, int two_d, dt_device d) {
  dt_tensor *i = dt_from_data(values, two_d ? dt_shape2(n, 1) : dt_shape1(n), DT_I64, d), *r;
  if (!i) return NULL;
  r = dt_index_select(t, dim, i);
  dt_release(i);
  return r;
}
static const int64_t IDX_NEG[2] = {0, -1}, IDX_OK[2] = {1, 0};
static const int64_t ONES9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}; /* dims for dt_shape_n(9, ...) */

/* autograd: a leaf (2, 3) float32 with F's values that requires grad, and one misuse of it:
   0 backward of a non-scalar without grad_out, 1 2 3 a grad_out of another shape, dtype,
   device (cuda:0), 4 a second backward, 5 a saved tensor changed in place, 6 requires_grad_
   of a result, 7 dt_fill_ of the leaf with grad mode on */
static dt_status ag_misuse(int what) {
  dt_tensor *x = dt_copyto(F, dt_cpu()), *y = NULL, *l = NULL, *g = NULL, *c = NULL;
  dt_status s = DT_ERR_BACKEND;
  if (!x || dt_requires_grad_(x, 1) != DT_OK) { dt_release(x); return DT_OK; }
  if (what == 5) { c = dt_copyto(F, dt_cpu()); y = c ? dt_mul(x, c) : NULL; }
  else y = dt_exp(x);
  if (!y) { dt_release(x); dt_release(c); return DT_OK; }
  switch (what) {
    case 0: s = dt_autograd_backward(y, NULL); break;
    case 1: g = dt_ones(dt_shape1(6), dt_cpu()); s = dt_autograd_backward(y, g); break;
    case 2: g = dt_cast(F, DT_F64); s = dt_autograd_backward(y, g); break;
    case 3: g = dt_copyto(F, dt_gpu(0)); s = g ? dt_autograd_backward(y, g) : DT_OK; break;
    case 4: l = dt_sum(y); if (l && dt_autograd_backward(l, NULL) == DT_OK) s = dt_autograd_backward(l, NULL); break;
    case 5: l = dt_sum(y); if (l && dt_fill_(c, 1.0) == DT_OK) s = dt_autograd_backward(l, NULL); break;
    case 6: s = dt_requires_grad_(y, 1); break;
    case 7: s = dt_fill_(x, 0.0); break;
  }
  dt_release(g); dt_release(l); dt_release(y); dt_release(c); dt_release(x);
  return s;
}

/* NETFILE into another network: Linear(in, 4), then Linear(4, 2) when two (no ReLU between:
   its second layer is 1.*, the file's 2.*); or (wide) Linear(3, 8), ReLU, Linear(8, 2). */
static dt_status load_other_net(int64_t in, int two, int wide) {
  dt_module *net = dt_sequential();
  dt_status s;
  dt_sequential_add(net, dt_linear(in, wide ? 8 : 4));
  if (wide) dt_sequential_add(net, dt_relu_layer());
  if (two || wide) dt_sequential_add(net, dt_linear(wide ? 8 : 4, 2));
  s = dt_module_load(net, NETFILE);
  dt_module_free(net);
  return s;
}

/* Adds a sequential to the innermost of DT_MODULE_MAX_DEPTH nested ones (one too deep); frees them. */
static dt_status add_too_deep(void) {
  dt_module *top = dt_sequential(), *cur = top, *s;
  dt_status st;
  int i;
  for (i = 1; i < DT_MODULE_MAX_DEPTH; i++) { s = dt_sequential(); if (dt_sequential_add(cur, s) != DT_OK) break; cur = s; }
  st = dt_sequential_add(cur, dt_sequential());
  dt_module_free(top);
  return st;
}

/* optimizers and no_grad */
static int nulo(dt_optimizer *o) { if (!o) return 1; dt_optimizer_free(o); return 0; }
/* an optimizer on tensors given bad params: 0 NULL, 1 none, 2 a NULL one, 3 an integer one,
   4 a result of recorded operations, 5 one tensor twice */
static int opt_tensors_bad(int what) {
  dt_tensor *a = dt_copyto(F, dt_cpu()), *b = NULL, *p[2];
  int r = 1, n = 2;
  if (!a || dt_requires_grad_(a, 1) != DT_OK) { dt_release(a); return 0; }
  p[0] = a; p[1] = a;
  if (what == 2) p[1] = NULL;
  if (what == 3) p[0] = I;
  if (what == 4) { b = dt_exp(a); p[0] = b; }
  if (what == 1) n = 0;
  r = nulo(dt_adam_tensors(what == 0 ? NULL : p, what == 5 ? 2 : (what >= 2 && what <= 4 ? (what == 2 ? 2 : 1) : n), 0.1, 0.9, 0.999, 1e-8, 0));
  dt_release(b); dt_release(a);
  return r;
}
/* a user-written module and one misuse of it: 0 a NULL parameter, 1 an integer one, 2 a result of
   recorded operations, 3 a name with a dot, 4 an empty name, 5 a name taken, 6 a child added twice
   (to another module), 7 a NULL child, 8 a child named like a parameter, 9 a missing parameter,
   10 a missing child, 11 a NULL name, 12 a trainer that cannot go back through it, 13 a forward
   that returns NULL without a library error (an earlier error is still the last); the module keeps
   its one parameter "w" */
static dt_tensor *user_fwd(dt_module *self, const dt_tensor *x, void *user) { (void)self; (void)user; return dt_relu(x); }
static dt_tensor *null_fwd(dt_module *self, const dt_tensor *x, void *user) { (void)self; (void)x; (void)user; return NULL; }
static int user_bad(int what) {
  dt_module *m = dt_module_new("M", user_fwd, NULL, NULL), *other = dt_module_new("O", user_fwd, NULL, NULL), *c;
  dt_tensor *w = dt_copyto(F, dt_cpu()), *e = NULL;
  dt_status s = DT_OK;
  int r = 0;
  if (!m || !other || !w || dt_module_add_param(m, "w", w) != DT_OK) { dt_module_free(m); dt_module_free(other); dt_release(w); return 0; }
  switch (what) {
    case 0: s = dt_module_add_param(m, "v", NULL); break;
    case 1: s = dt_module_add_param(m, "v", I); break;
    case 2: e = dt_exp(w); s = dt_module_add_param(m, "v", e); break;
    case 3: s = dt_module_add_param(m, "a.b", w); break;
    case 4: s = dt_module_add_param(m, "", w); break;
    case 5: s = dt_module_add_param(m, "w", w); break;
    case 6: c = dt_linear(2, 2); if (dt_module_add_child(other, "c", c) == DT_OK) s = dt_module_add_child(m, "c", c); break;
    case 7: s = dt_module_add_child(m, "c", NULL); break;
    case 8: s = dt_module_add_child(m, "w", dt_relu_layer()); break;
    case 9: r = dt_module_get_param(m, "v") == NULL; break;
    case 10: r = dt_module_get_child(m, "w") == NULL; break;
    case 11: s = dt_module_add_param(m, NULL, w); break;
    case 12: { /* the trainer trains it through autograd, but its output does not depend on its parameter
                  (m's parameter is float32 (2, 3): X (4, 3), y (4, 3)): the backward is refused, m unchanged */
      dt_trainer tr;
      dt_tensor *X = dt_zeros(dt_shape2(4, 3), dt_cpu()), *Y = dt_zeros(dt_shape2(4, 3), dt_cpu());
      if (X && Y && dt_trainer_init(&tr, 1, 0) == DT_OK) { tr.quiet = 1; s = dt_trainer_fit(&tr, m, X, Y); dt_trainer_free(&tr); }
      dt_release(X); dt_release(Y);
      break;
    }
    case 13: {
      dt_module *n = dt_module_new("N", null_fwd, NULL, NULL);
      dt_tensor *y;
      (void)dt_module_get_child(m, "missing");
      y = n && dt_module_add_child(m, "n", n) == DT_OK ? dt_forward(n, F) : NULL;
      s = y ? DT_OK : dt_last_status();
      dt_release(y);
      break;
    }
  }
  if (what < 9 || what >= 11) r = s != DT_OK;
  r = r && dt_module_num_params(m) == 1 && dt_module_param(m, 0, NULL) == w;
  dt_release(e); dt_release(w);
  dt_module_free(m); dt_module_free(other);
  return r;
}

/* dt_clip_grad_norm_ of a leaf with a gradient, with max_norm; the gradient unchanged after a refusal */
static int clip_bad(double max_norm) {
  dt_tensor *a = dt_copyto(F, dt_cpu()), *y, *l;
  double before, total = 5, after;
  int r;
  if (!a || dt_requires_grad_(a, 1) != DT_OK) { dt_release(a); return 0; }
  y = dt_mul(a, a); l = y ? dt_sum(y) : NULL;
  if (!l || dt_autograd_backward(l, NULL) != DT_OK) { dt_release(y); dt_release(l); dt_release(a); return 0; }
  before = ((float *)dt_data_ptr(dt_grad(a)))[1];
  r = bad(dt_clip_grad_norm_(&a, 1, max_norm, &total));
  after = ((float *)dt_data_ptr(dt_grad(a)))[1];
  dt_release(y); dt_release(l); dt_release(a);
  return r && before == after && total == 0;
}
/* dt_backward (params 0) or dt_backward_params (1) on NETR with grad disabled on this thread */
static int backward_no_grad(int params) {
  int prev = dt_set_grad_enabled(0), failed;
  if (params) failed = bad(dt_backward_params(NETR, Y));
  else failed = nul(dt_backward(NETR, Y));
  dt_set_grad_enabled(prev);
  return failed;
}
/* dt_backward after a forward with grad disabled, grad enabled again */
static int backward_after_no_grad(void) {
  dt_module *net = dt_sequential();
  dt_tensor *y;
  int prev, failed;
  dt_sequential_add(net, dt_linear(3, 2));
  prev = dt_set_grad_enabled(0);
  y = dt_forward(net, X);
  dt_set_grad_enabled(prev);
  failed = y ? nul(dt_backward(net, y)) : 0;
  dt_release(y);
  dt_module_free(net);
  return failed;
}
/* dt_backward (what 0), dt_backward_params (1) before any forward, and dt_backward after one (2),
   on a module of dt_module_new's kind (a Sequential(Conv2d(2, 2, 1)) for 0 and 2, a user
   module for 1): refused as such, not as "no forward", since a forward would not help */
static int backward_user(int what) {
  dt_module *m;
  dt_tensor *y = NULL, *x4 = NULL;
  int failed = 0;
  if (what == 1) m = dt_module_new("Block", user_fwd, NULL, NULL);
  else {
    m = dt_sequential();
    if (m) dt_sequential_add(m, dt_conv2d(2, 2, 1, 1, 0));
  }
  if (!m) return 0;
  if (what == 0) failed = nul(dt_backward(m, Y));
  else if (what == 1) failed = bad(dt_backward_params(m, Y));
  else {
    x4 = dt_ones(dt_shape4(1, 2, 3, 3), dt_cpu());
    y = x4 ? dt_forward(m, x4) : NULL;
    failed = y ? nul(dt_backward(m, y)) : 0;
  }
  dt_release(y); dt_release(x4);
  dt_module_free(m);
  return failed;
}
/* a step after the network grew: 4 parameters when made, 6 now */
static int step_after_growth(void) {
  dt_module *net = dt_sequential();
  dt_optimizer *o;
  dt_status s;
  dt_sequential_add(net, dt_linear(3, 4));
  dt_sequential_add(net, dt_linear(4, 2));
  o = dt_adam(net, 0.1, 0.9, 0.999, 1e-8, 0);
  dt_sequential_add(net, dt_linear(2, 2));
  s = o ? dt_optimizer_step(o) : DT_OK;
  dt_optimizer_free(o);
  dt_module_free(net);
  return bad(s);
}
/* a lazy layer's first input of 0 features, (2, 0), behind a ReLU (its input) or at the
   front: refused, and the layer still lazy after the first refusal; the second's message. */
static int lazy_zero_features(int behind_relu) {
  dt_module *net = dt_sequential();
  dt_tensor *x = dt_zeros(dt_shape2(2, 0), dt_cpu()), *y;
  int failed;
  if (behind_relu) dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(0, 2));
  y = dt_forward(net, x);
  failed = y == NULL && dt_linear_weight(dt_sequential_get(net, behind_relu)) == NULL;
  dt_release(y);
  y = dt_forward(net, x);
  failed = failed && y == NULL;
  dt_release(y); dt_release(x);
  dt_module_free(net);
  return failed;
}
/* uint8 / bool operands made for one call and released after it */
static dt_tensor *cmp_u8(void) { return dt_arange(0, 6, 1, DT_U8, dt_cpu()); }
static dt_tensor *cmp_bool(void) { dt_tensor *u = cmp_u8(), *b = u ? dt_cast(u, DT_BOOL) : NULL; dt_release(u); return b; }
static dt_tensor *scatter_bool2(const dt_tensor *x, const dt_tensor *src) { /* dim 0, index zeros (1, 6) */
  static const int64_t z[6] = {0, 0, 0, 0, 0, 0};
  dt_tensor *i = dt_from_data(z, dt_shape2(1, 6), DT_I64, dt_cpu()), *y;
  dt_tensor *x2 = x ? dt_reshape(x, dt_shape2(1, 6)) : NULL, *s2 = src ? dt_reshape(src, dt_shape2(1, 6)) : NULL;
  y = dt_scatter_add(x2, 0, i, s2);
  dt_release(i); dt_release(x2); dt_release(s2);
  return y;
}
static dt_tensor *cmp_1(dt_tensor *(*fn)(const dt_tensor *), dt_tensor *a) { dt_tensor *y = fn(a); dt_release(a); return y; }
static dt_tensor *cmp_rsub(dt_tensor *a) { dt_tensor *y = dt_rsub_scalar(a, 1); dt_release(a); return y; }
static dt_tensor *cmp_2(dt_tensor *(*fn)(const dt_tensor *, const dt_tensor *), dt_tensor *a, dt_tensor *b) {
  dt_tensor *y = fn(a, b); dt_release(a); dt_release(b); return y;
}
/* classification: dt_cross_entropy(_grad) of F (2, 3) with labels {a, b} (I64) on the CPU; F's
   label row 1 = b. 1 when it failed (NULL). */
static int xent_labels(int grad, int64_t a, int64_t b) {
  int64_t lab[2];
  dt_tensor *t, *y;
  lab[0] = a; lab[1] = b;
  t = dt_from_data(lab, dt_shape1(2), DT_I64, dt_cpu());
  y = grad ? dt_cross_entropy_grad(F, t) : dt_cross_entropy(F, t);
  dt_release(t);
  return nul(y);
}
/* dt_max_dim(e, 0) of e (0, 3), or (all) dt_max(e) of e (2, 0): refused, as PyTorch refuses them */
static int empty_reduce(int all) {
  dt_tensor *e = dt_empty(all ? dt_shape2(2, 0) : dt_shape2(0, 3), DT_F32, dt_cpu());
  int r = nul(all ? dt_max(e) : dt_max_dim(e, 0));
  dt_release(e);
  return r;
}
/* logits on cuda:0 and labels on the CPU (device mismatch) */
static int xent_gpu_cpu(int grad) {
  int64_t lab[2] = {0, 1};
  dt_tensor *t = dt_from_data(lab, dt_shape1(2), DT_I64, dt_cpu()), *y = grad ? dt_cross_entropy_grad(G0, t) : dt_cross_entropy(G0, t);
  dt_release(t);
  return nul(y);
}
/* distributed: a collective on the one-rank world, set up and torn down around it */
static dt_status dist_ar(dt_tensor *t, int op) {
  dt_status s;
  if (dt_dist_init() != DT_OK) return DT_OK; /* counted as not failing: the row fails */
  s = dt_all_reduce_(t, (dt_reduce_op)op);
  dt_dist_finalize();
  return s;
}
static dt_status dist_bc(dt_tensor *t, int root) {
  dt_status s;
  if (dt_dist_init() != DT_OK) return DT_OK;
  s = dt_broadcast_(t, root);
  dt_dist_finalize();
  return s;
}
static dt_status dist_init_twice(void) {
  dt_status s;
  if (dt_dist_init() != DT_OK) return DT_OK;
  s = dt_dist_init();
  dt_dist_finalize();
  return s;
}
/* a launcher's WORLD_SIZE of 3 in a build without DEVTENSOR_MPI */
static dt_status dist_init_world3(void) {
  dt_status s;
#ifdef _WIN32
  static char set[] = "WORLD_SIZE=3", unset[] = "WORLD_SIZE=";
  _putenv(set);
  s = dt_dist_init();
  _putenv(unset);
#else
  setenv("WORLD_SIZE", "3", 1);
  s = dt_dist_init();
  unsetenv("WORLD_SIZE");
#endif
  if (s == DT_OK) dt_dist_finalize();
  return s;
}

#define U64(x) ((int64_t)1 << (x))
#define BIG INT64_MAX
#define GPU7 dt_gpu(7)
#define GPUM dt_gpu(-1)
#define CPU3 (DEV.type = DT_CPU, DEV.index = 3, DEV)
#define ALIEN (DEV.type = (dt_device_type)5, DEV.index = 0, DEV)
#define BADT ((dt_dtype)9)
static int ALL_GPUS = 1; /* what dt_try_all_gpus counts: every GPU, or the CPU alone; set in main */

/* the trainer's classification. NETC: Linear(3, 2) on the CPU, its own
   (the label checks run it); labels (5,): LAB valid, LABBIG holds 2, LABNEG -1; LABF
   float32; XI int64 (5, 3). fit_loss / eval_ce: TR with that loss and batch size. */
static dt_module *NETC;
static dt_tensor *LAB, *LABBIG, *LABNEG, *LABF, *XI;
static int clf_fixtures(void) {
  static const int64_t lab[5] = {0, 1, 1, 0, 1}, big[5] = {0, 1, 2, 0, 1}, negl[5] = {0, -1, 1, 0, 1};
  static const float labf[5] = {0, 1, 1, 0, 1};
  static const int64_t xi[15] = {0};
  NETC = dt_linear(3, 2);
  LAB = dt_from_data(lab, dt_shape1(5), DT_I64, dt_cpu()); LABBIG = dt_from_data(big, dt_shape1(5), DT_I64, dt_cpu());
  LABNEG = dt_from_data(negl, dt_shape1(5), DT_I64, dt_cpu()); LABF = dt_from_data(labf, dt_shape1(5), DT_F32, dt_cpu());
  XI = dt_from_data(xi, dt_shape2(5, 3), DT_I64, dt_cpu());
  return NETC && LAB && LABBIG && LABNEG && LABF && XI;
}
static void clf_release(void) {
  dt_module_free(NETC);
  dt_release(LAB); dt_release(LABBIG); dt_release(LABNEG); dt_release(LABF); dt_release(XI);
}
static dt_status fit_loss(int loss_fn, int64_t batch, const dt_tensor *x, const dt_tensor *y) {
  dt_status s;
  TR.loss_fn = (dt_loss_fn)loss_fn; TR.batch_size = batch;
  s = dt_trainer_fit(&TR, NETC, x, y);
  TR.loss_fn = DT_LOSS_MSE; TR.batch_size = 32;
  return s;
}
static dt_status fit_val_ce(const dt_tensor *y_val) {
  dt_status s;
  TR.loss_fn = DT_LOSS_CROSS_ENTROPY;
  s = dt_trainer_fit_val(&TR, NETC, X, LAB, X, y_val);
  TR.loss_fn = DT_LOSS_MSE;
  return s;
}
static dt_status eval_ce(const dt_tensor *y) {
  dt_status s;
  TR.loss_fn = DT_LOSS_CROSS_ENTROPY;
  s = dt_trainer_evaluate(&TR, NETC, X, y, HOST, HOST);
  TR.loss_fn = DT_LOSS_MSE;
  return s;
}

/* A classification fit (0), fit_val (1, y_val bad) or evaluate (2) of a lazy network,
   Sequential(Linear(0, 2)), with the label 2 (LABBIG) on the CPU or cuda:0: refused before
   anything changes: the layer still lazy, the generator not drawn from (its next draw is a
   fresh seed's first). The call runs again last, for the message. */
static int lazy_label_unchanged(int which, int gpu) {
  dt_module *net = dt_sequential();
  dt_tensor *x = gpu ? dt_to(X, dt_gpu(0)) : dt_retain(X), *y = gpu ? dt_to(LAB, dt_gpu(0)) : dt_retain(LAB);
  dt_tensor *yb = gpu ? dt_to(LABBIG, dt_gpu(0)) : dt_retain(LABBIG), *r;
  dt_device was = TR.device;
  float first = 0, next = -1;
  int failed = 0, k;
  dt_sequential_add(net, dt_linear(0, 2));
  dt_manual_seed(1234);
  r = dt_rand(dt_shape1(1), dt_cpu());
  if (r) dt_to_host(r, &first, sizeof first);
  dt_release(r);
  dt_manual_seed(1234);
  TR.loss_fn = DT_LOSS_CROSS_ENTROPY;
  if (gpu) TR.device = dt_gpu(0);
  for (k = 0; k < 2 && x && y && yb; k++) {
    dt_status s = which == 0 ? dt_trainer_fit(&TR, net, x, yb) : which == 1 ? dt_trainer_fit_val(&TR, net, x, y, x, yb)
                : dt_trainer_evaluate(&TR, net, x, yb, HOST, HOST);
    if (k == 0) {
      failed = s != DT_OK && dt_linear_weight(dt_sequential_get(net, 0)) == NULL && dt_module_device(net).type == DT_CPU;
      r = dt_rand(dt_shape1(1), dt_cpu());
      if (r) dt_to_host(r, &next, sizeof next);
      dt_release(r);
      failed = failed && next == first;
    } else {
      failed = failed && s != DT_OK;
    }
  }
  TR.loss_fn = DT_LOSS_MSE; TR.device = was;
  dt_release(x); dt_release(y); dt_release(yb);
  dt_module_free(net);
  return failed;
}

/* convolution and pooling: images and weights made by the rows that use them (zeros of shape
   (a, b, c, d); _on: on a device, _t: of a dtype), kept here and released at the end of main */
static dt_tensor *CVT[256];
static int NCVT;
static dt_tensor *cv_keep(dt_tensor *t) {
  if (t && NCVT < 256) CVT[NCVT++] = t;
  else if (t) { dt_release(t); t = NULL; } /* a full list: the row fails, and says so */
  return t;
}
static dt_tensor *cv_on(dt_device d, dt_dtype t, int64_t a, int64_t b, int64_t c, int64_t e) {
  dt_tensor *z = dt_zeros(dt_shape4(a, b, c, e), d), *r = z && t != DT_F32 ? dt_cast(z, t) : z;
  if (r != z) dt_release(z);
  return cv_keep(r);
}
static dt_tensor *cv(int64_t a, int64_t b, int64_t c, int64_t e) { return cv_on(dt_cpu(), DT_F32, a, b, c, e); }
static dt_tensor *cv_t(dt_dtype t, int64_t a, int64_t b, int64_t c, int64_t e) { return cv_on(dt_cpu(), t, a, b, c, e); }
static dt_tensor *cv_g(int64_t a, int64_t b, int64_t c, int64_t e) { return cv_on(dt_gpu(0), DT_F32, a, b, c, e); }
/* dt_f_conv2d_backward of x (1, 2, 5, 5), w (3, 2, 3, 3) (output (1, 3, 3, 3)) with gy; every gradient asked */
static dt_status conv_bw(const dt_tensor *gy, const dt_tensor *x, const dt_tensor *w, int groups) {
  dt_tensor *gx = NULL, *gw = NULL, *gb = NULL;
  dt_status s = dt_f_conv2d_backward(gy, x, w, 1, 1, 0, 0, 1, 1, groups, &gx, &gw, &gb);
  dt_release(gx); dt_release(gw); dt_release(gb);
  return s;
}
/* max pooling's indices (I64) of shape (a, b, c, d) */
static dt_tensor *cv_idx(int64_t a, int64_t b, int64_t c, int64_t e) { return cv_t(DT_I64, a, b, c, e); }

/* the layers' modules: a module made by the row, run on x and freed; 1 when the forward failed */
static int mod_fwd(dt_module *m, const dt_tensor *x) {
  dt_tensor *y;
  if (!m) return 1; /* the constructor's failure, which the row's message then names */
  y = dt_forward(m, x);
  dt_module_free(m);
  return nul(y);
}
/* a (1, c) batch: one value per channel */
/* I64 indices of 8 dims (the result would need 9) */
static dt_tensor *idx8(void) {
  static const int64_t dims[8] = {1, 1, 1, 1, 1, 1, 1, 2};
  dt_tensor *z = dt_zeros(dt_shape_n(8, dims), dt_cpu()), *i = z ? dt_cast(z, DT_I64) : NULL;
  dt_release(z);
  return cv_keep(i);
}
static dt_tensor *row1(int64_t c) { return cv_keep(dt_zeros(dt_shape2(1, c), dt_cpu())); }
/* buffers: on a batch norm module of 3 channels (0: a second "running_mean", 1: one named like a
   parameter, 2: one on cuda:0, 3: one that requires grad, 4: on a sequential, 5: NULL) */
static int buffer_bad(int what) {
  dt_module *m = what == 4 ? dt_sequential() : dt_batch_norm(3);
  dt_tensor *t = what == 5 ? NULL : what == 2 ? dt_zeros(dt_shape1(3), dt_gpu(0)) : dt_zeros(dt_shape1(3), dt_cpu());
  dt_status s;
  if (what == 3) dt_requires_grad_(t, 1);
  s = dt_module_add_buffer(m, what == 0 ? "running_mean" : what == 1 ? "bias" : "extra", t);
  dt_release(t);
  dt_module_free(m);
  return s != DT_OK;
}

/* name, expected status, message prefix, words the message must hold ('|' between), the call (1: failed).
   Words that start with '=' are the whole message after the prefix, word for word.
   GPUS(n, call): a row that needs n GPUs; it is reported as skipped where there are fewer. */
/* a row that needs POSIX device files: skipped in the Windows build (make mingw) */
#ifdef _WIN32
#define POSIX_ONLY(call) (t_cur_skip = "POSIX device files", 1)
#else
#define POSIX_ONLY(call) (call)
#endif

/* where, gather, scatter_add, pad: a bool cond of c > 0, and index tensors (I64, shape s, on d) made
   and released around the call */
static dt_tensor *where_gt(const dt_tensor *c, const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *m = c ? dt_gt_scalar(c, 0) : NULL, *y = dt_where(m ? m : c, a, b);
  dt_release(m);
  return y;
}
static dt_tensor *gat(const dt_tensor *x, int dim, const int64_t *v, dt_shape s, dt_device d) {
  dt_tensor *i = dt_from_data(v, s, DT_I64, d), *y;
  if (!i) return NULL;
  y = dt_gather(x, dim, i);
  dt_release(i);
  return y;
}
static dt_tensor *sca(const dt_tensor *x, int dim, const int64_t *v, dt_shape s, dt_device d, const dt_tensor *src) {
  dt_tensor *i = dt_from_data(v, s, DT_I64, d), *y;
  if (!i) return NULL;
  y = dt_scatter_add(x, dim, i, src);
  dt_release(i);
  return y;
}
/* dt_scatter_add_ into a copy of F (what: 0 plain, 1 the copy a leaf that requires grad, 2 src one,
   3 src the copy itself) */
static dt_status sca_(int what) {
  static const int64_t v[3] = {0, 1, 0};
  dt_tensor *x = dt_copyto(F, dt_cpu()), *src = dt_copyto(F, dt_cpu()), *i = dt_from_data(v, dt_shape2(1, 3), DT_I64, dt_cpu());
  dt_status s = DT_ERR_BACKEND;
  if (x && src && i && (what != 1 || dt_requires_grad_(x, 1) == DT_OK) && (what != 2 || dt_requires_grad_(src, 1) == DT_OK))
    s = dt_scatter_add_(x, 0, i, what == 3 ? x : src);
  dt_release(x); dt_release(src); dt_release(i);
  return s;
}
static dt_tensor *empty_gather(void) {
  static const int64_t v[3] = {0, 0, 0};
  dt_tensor *x = dt_zeros(dt_shape2(0, 3), dt_cpu()), *y = x ? gat(x, 0, v, dt_shape2(1, 3), dt_cpu()) : NULL;
  dt_release(x);
  return y;
}
static const int64_t GI_OK[3] = {0, 1, 0}, GI_BIG[8] = {0, 1, 0, 1, 0, 1, 0, 1}, GI_RANGE[3] = {0, 2, 1}, GI_NEG[3] = {0, -1, 0};
static const int64_t PAD_ODD[3] = {1, 1, 1}, PAD_CROP[2] = {-2, -2}, PAD_HUGE[2] = {1, (int64_t)1 << 40};
/* float16 and bfloat16 where they are refused, and the dtypes half modules and optimizers still
   refuse: 1 an optimizer on an int32 tensor, 2 dt_backward_params of a bfloat16 module (autograd
   goes back through it), 3 collectives, 4 a module to int64; and 5 a half module's data parallel fit
   under autocast, which trains (0 when it did) */
static int half_misuse(int k) {
  dt_tensor *a = dt_zeros(dt_shape1(2), dt_cpu()), *h = dt_cast(a, DT_F16), *b = dt_cast(a, DT_BF16);
  int r = 0;
  if (k == 1) {
    dt_tensor *i = dt_cast(a, DT_I32);
    r = nulo(dt_sgd_tensors(&i, 1, 0.1, 0, 0));
    dt_release(i);
  } else if (k == 2) {
    dt_module *m = dt_linear(2, 2);
    dt_tensor *x = dt_zeros(dt_shape2(1, 2), dt_cpu()), *xb = x ? dt_cast(x, DT_BF16) : NULL, *y = NULL;
    if (m && xb && dt_module_to_dtype(m, DT_BF16) == DT_OK && (y = dt_forward(m, xb)) != NULL) r = bad(dt_backward_params(m, y));
    dt_release(x); dt_release(xb); dt_release(y);
    dt_module_free(m);
  } else if (k == 4) {
    dt_module *m = dt_linear(2, 2);
    r = bad(dt_module_to_dtype(m, DT_I64));
    dt_module_free(m);
  } else if (k == 5) { /* a bfloat16 module, data parallel on two GPUs under tr.autocast */
    dt_module *m = dt_sequential();
    dt_tensor *y = dt_zeros(dt_shape2(2, 1), dt_cpu()), *xb = dt_cast(F, DT_BF16), *yb = y ? dt_cast(y, DT_BF16) : NULL;
    dt_trainer tr;
    if (m && xb && yb && dt_sequential_add(m, dt_linear(3, 1)) == DT_OK && dt_module_to_dtype(m, DT_BF16) == DT_OK &&
        dt_trainer_init(&tr, 1, 2) == DT_OK) {
      tr.quiet = 1;
      tr.autocast = DT_BF16;
      r = bad(dt_trainer_fit(&tr, m, xb, yb));
      dt_trainer_free(&tr);
    }
    dt_release(y); dt_release(xb); dt_release(yb);
    dt_module_free(m);
  } else if (k == 3) { /* float16 is taken; an unknown op is still refused */
    r = bad(dist_ar(h, 9));
  }
  dt_release(a); dt_release(h); dt_release(b);
  return r;
}
/* graphs: 0 begin twice (the second's failure), 1 dt_synchronize in a capture, 2 dt_item of a
   cuda:0 tensor in its capture, 3 a copy from cuda:0 to the CPU in the CPU's capture (each then
   ends the capture: dt_graph_end's failure, which names the refused call), 4 a replay after a
   tensor from before the capture was released, 5 dt_randperm in the CPU's capture. Returns 1 when it
   failed as expected. */
static int gnul(dt_graph *g) { if (!g) return 1; dt_graph_free(g); return 0; }
static int graph_misuse(int which) {
  dt_tensor *t, *y, *r;
  dt_graph *g;
  dt_status s;
  int failed = 0;
  switch (which) {
    case 0:
      if (dt_graph_begin(dt_cpu()) != DT_OK) return 0;
      s = dt_graph_begin(dt_cpu());
      g = dt_graph_end(dt_cpu());
      dt_graph_free(g);
      return s != DT_OK && g != NULL;
    case 1: case 2: case 3: {
      dt_device d = which == 2 ? dt_gpu(0) : dt_cpu();
      if (dt_graph_begin(d) != DT_OK) return 0;
      if (which == 1) failed = dt_synchronize(d) != DT_OK;
      else if (which == 2) {
        double v;
        t = dt_sum(G0);
        v = t ? dt_item(t) : 0.0;
        failed = v != v; /* NaN: refused */
        dt_release(t);
      } else {
        r = dt_to(G0, dt_cpu());
        failed = r == NULL;
        dt_release(r);
      }
      g = dt_graph_end(d);
      dt_graph_free(g);
      return failed && g == NULL;
    }
    case 4:
      t = dt_ones(dt_shape1(3), dt_cpu());
      if (dt_graph_begin(dt_cpu()) != DT_OK) return 0;
      y = dt_add(t, V);
      g = dt_graph_end(dt_cpu());
      dt_release(t);
      failed = g && dt_graph_replay(g) != DT_OK;
      dt_graph_free(g);
      dt_release(y);
      return failed;
    case 5: /* a permutation made on the host at once, which no replay could draw afresh */
      if (dt_graph_begin(dt_cpu()) != DT_OK) return 0;
      r = dt_randperm(5, dt_cpu());
      failed = r == NULL;
      dt_release(r);
      g = dt_graph_end(dt_cpu());
      dt_graph_free(g);
      return failed && g == NULL;
  }
  return 0;
}

/* autocast and the grad scaler: 0 autocast refused; 1 the scaler's update with no step since;
   2 a scaler's step without an optimizer; 3 the trainer's tr.autocast int64 */
static int ac_dt(dt_dtype t) { return t == (dt_dtype)-1; }
static int autocast_misuse(int k) {
  dt_grad_scaler *s = dt_grad_scaler_new(2.0);
  int r = 0;
  if (!s) return 0;
  if (k == 1) r = dt_grad_scaler_update(s) != DT_OK;
  if (k == 2) r = dt_grad_scaler_step(s, NULL) != DT_OK;
  if (k == 3) {
    dt_trainer tr;
    dt_module *m = dt_linear(3, 1);
    dt_tensor *y = dt_zeros(dt_shape2(2, 1), dt_cpu());
    if (m && y && dt_trainer_init(&tr, 1, 0) == DT_OK) {
      tr.quiet = 1; tr.autocast = DT_I64;
      r = dt_trainer_fit(&tr, m, F, y) != DT_OK;
      dt_trainer_free(&tr);
    }
    dt_module_free(m); dt_release(y);
  }
  dt_grad_scaler_free(s);
  return r;
}
static int autocast_scale_int(void) {
  dt_grad_scaler *s = dt_grad_scaler_new(2.0);
  int r = s ? nul(dt_grad_scaler_scale(s, I)) : 0;
  dt_grad_scaler_free(s);
  return r;
}
static int scaler_nul(dt_grad_scaler *s) { if (!s) return 1; dt_grad_scaler_free(s); return 0; }

/* tr.cuda_graph refused before anything changes: 4 num_gpus 2, 5 cuda_graph 2 (0 to 3 were
   Adam, clipping, autocast F16 and dropout, which a graph now takes). Returns 1 when the fit
   failed and left the model's parameters, the trainer's scaler and epochs as they were. */
static int graph_trainer_refused(int k) {
  dt_trainer tr;
  dt_module *m = dt_sequential();
  dt_optimizer *o = NULL;
  dt_tensor *y = dt_zeros(dt_shape2(2, 1), dt_cpu());
  float before[4] = {0}, after[4] = {0};
  int r = 0;
  if (m && y && dt_sequential_add(m, dt_linear(3, 1)) == DT_OK && (k != 3 || dt_sequential_add(m, dt_dropout(0.5)) == DT_OK) &&
      dt_trainer_init(&tr, 2, 0) == DT_OK && dt_to_host(dt_module_param(m, 0, NULL), before, sizeof(float) * 3) == DT_OK) {
    tr.quiet = 1; tr.batch_size = 1; tr.cuda_graph = k == 5 ? 2 : 1;
    if (k == 0) tr.optimizer = o = dt_adam(m, 0.1, 0.9, 0.999, 1e-8, 0.0);
    if (k == 1) tr.gradient_clip_val = 1.0;
    if (k == 2) tr.autocast = DT_F16;
    if (k == 4) tr.num_gpus = 2;
    r = dt_trainer_fit(&tr, m, F, y) != DT_OK && tr.epochs_run == 0 && !tr.grad_scaler &&
        dt_to_host(dt_module_param(m, 0, NULL), after, sizeof(float) * 3) == DT_OK && memcmp(before, after, sizeof before) == 0;
    if (r) dt_trainer_fit(&tr, m, F, y); /* the error again: the checks above may have replaced it */
    dt_trainer_free(&tr);
  }
  dt_optimizer_free(o); dt_module_free(m); dt_release(y);
  return r;
}

/* Data parallel training on two GPUs refused before anything changes: 0 a module written with
   dt_module_new (its forward and state cannot be copied to the second GPU), 1 a lazy convolution,
   2 a lazy batch norm (their sizes are not known before a first forward, so no copy can be made;
   the MSE loss runs none first). Returns 1 when the fit failed without an epoch (and for 0 before
   anything changed: the model still on the CPU). */
static int dp_refused(int k) {
  dt_trainer tr;
  dt_module *m = k == 0 ? dt_module_new("M", user_fwd, NULL, NULL) : dt_sequential();
  dt_tensor *x = dt_zeros(dt_shape4(4, 1, 3, 3), dt_cpu()), *y = dt_zeros(dt_shape2(4, 1), dt_cpu());
  int r = 0, ok = m && x && y;
  if (ok && k > 0)
    ok = dt_sequential_add(m, k == 1 ? dt_conv2d(0, 1, 3, 1, 0) : dt_batch_norm(0)) == DT_OK &&
         dt_sequential_add(m, dt_flatten_layer()) == DT_OK && dt_sequential_add(m, dt_linear(k == 1 ? 1 : 9, 1)) == DT_OK;
  if (ok && dt_trainer_init(&tr, 1, 2) == DT_OK) {
    tr.quiet = 1; tr.batch_size = 2;
    r = dt_trainer_fit(&tr, m, x, y) != DT_OK && tr.epochs_run == 0 && (k > 0 || dt_device_equal(dt_module_device(m), dt_cpu()));
    if (r) dt_trainer_fit(&tr, m, x, y); /* the error again: the checks above may have replaced it */
    dt_trainer_free(&tr);
  }
  dt_module_free(m); dt_release(x); dt_release(y);
  return r;
}

/* in-place arithmetic: 0 b a slice of a (its memory), 1 a leaf that requires grad. Returns
   1 when refused and a is unchanged. */
static int inplace_refused(int k) {
  dt_tensor *a = dt_ones(dt_shape2(2, 3), dt_cpu()), *v = NULL;
  float h[6] = {0};
  int r = 0, i;
  if (!a) return 0;
  if (k == 0 && (v = dt_slice(a, 0, 1, 2)) != NULL) r = dt_add_(a, v) != DT_OK;
  if (k == 1 && dt_requires_grad_(a, 1) == DT_OK) r = dt_mul_scalar_(a, 2.0) != DT_OK;
  if (r && dt_to_host(a, h, sizeof h) == DT_OK)
    for (i = 0; i < 6; i++) r = r && h[i] == 1.0f;
  if (r) { if (k == 0) dt_add_(a, v); else dt_mul_scalar_(a, 2.0); } /* the error again */
  dt_release(v); dt_release(a);
  return r;
}

/* dt_copy_ (k 0) and dt_axpy_ (k 1) between the overlapping slices t[0:2] and t[1:3] of a (3, 3):
   refused, t unchanged */
static int overlap_refused(int k) {
  static const float v[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  float h[9] = {0};
  int r, i;
  dt_tensor *t = dt_from_data(v, dt_shape2(3, 3), DT_F32, dt_cpu()), *x = t ? dt_slice(t, 0, 0, 2) : NULL,
            *y = t ? dt_slice(t, 0, 1, 3) : NULL;
  r = x && y && (k == 0 ? dt_copy_(y, x) : dt_axpy_(y, 1.0, x)) != DT_OK;
  if (r && dt_to_host(t, h, sizeof h) == DT_OK)
    for (i = 0; i < 9; i++) r = r && h[i] == v[i];
  if (r) { if (k == 0) dt_copy_(y, x); else dt_axpy_(y, 1.0, x); } /* the error again */
  dt_release(x); dt_release(y); dt_release(t);
  return r;
}

#define BAD_CASES(X_)                                                                                                      \
  /* errors */                                                                                                              \
  X_(status_string_unknown, DT_OK, "", "", strcmp(dt_status_string((dt_status)99), "unknown status") != 0)                  \
  X_(status_string_negative, DT_OK, "", "", strcmp(dt_status_string((dt_status)-1), "unknown status") != 0)                 \
  X_(dtype_name_unknown, DT_OK, "", "", strcmp(dt_dtype_name(BADT), "unknown dtype") != 0)                                  \
  X_(dtype_size_unknown, DT_OK, "", "", dt_dtype_size(BADT) != 0 || dt_dtype_size((dt_dtype)-1) != 0)                        \
  X_(shape_n_negative, DT_OK, "", "", dt_shape_n(-1, NULL).ndim != -1 || dt_shape_n(INT_MIN, NULL).ndim != -1)               \
  X_(release_null_ok, DT_OK, "", "", (dt_release(NULL), dt_module_free(NULL), dt_trainer_free(NULL), 0))                     \
  /* devices */                                                                                                             \
  X_(try_gpu_7, DT_OK, "", "", dt_try_gpu(7).type != DT_CPU)                                                               \
  X_(try_gpu_minus1, DT_OK, "", "", dt_try_gpu(-1).type != DT_CPU)                                                         \
  X_(try_all_gpus_null, DT_OK, "", "", dt_try_all_gpus(NULL, 4) != ALL_GPUS)                                               \
  X_(try_all_gpus_negcap, DT_OK, "", "", dt_try_all_gpus(&DEV, -1) != ALL_GPUS)                                            \
  X_(device_str_null, DT_OK, "", "", dt_device_str(dt_cpu(), NULL, 10)[0] != 0)                                            \
  X_(device_str_alien, DT_OK, "", "", strcmp(dt_device_str(ALIEN, SMALLBUF, sizeof SMALLBUF), "device?5:0") != 0)          \
  X_(device_str_short, DT_OK, "", "", strcmp(dt_device_str(GPU7, SMALLBUF, 3), "cu") != 0)                                \
  X_(parse_null, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "s is NULL", bad(dt_device_parse(NULL, &DEV)))                \
  X_(parse_null_out, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "out is NULL", bad(dt_device_parse("cpu", NULL)))          \
  X_(parse_tpu, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"tpu:0\"", bad(dt_device_parse("tpu:0", &DEV)))              \
  X_(parse_empty, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"\"", bad(dt_device_parse("", &DEV)))                      \
  X_(parse_colon, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "index|\"cuda:\"", bad(dt_device_parse("cuda:", &DEV)))      \
  X_(parse_negative, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"cuda:-1\"", bad(dt_device_parse("cuda:-1", &DEV)))     \
  X_(parse_huge, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "99999999999", bad(dt_device_parse("cuda:99999999999", &DEV))) \
  X_(parse_trailing, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"cuda:1x\"", bad(dt_device_parse("cuda:1x", &DEV)))     \
  X_(parse_cpu3, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"cpu:3\"", bad(dt_device_parse("cpu:3", &DEV)))             \
  X_(parse_cuda_x, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"cuda:x\"|expected \"cuda:N\"", bad(dt_device_parse("cuda:x", &DEV))) \
  X_(parse_gpu_x, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"gpu:x\"|expected \"gpu:N\"", bad(dt_device_parse("gpu:x", &DEV))) \
  X_(parse_cpu_x, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"cpu:x\"|\"cpu\" or \"cpu:0\"", bad(dt_device_parse("cpu:x", &DEV))) \
  X_(parse_space, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\" cpu\"", bad(dt_device_parse(" cpu", &DEV)))              \
  X_(parse_cpux, DT_ERR_INVALID_ARGUMENT, "dt_device_parse:", "\"cpux\"", bad(dt_device_parse("cpux", &DEV)))               \
  X_(info_null, DT_ERR_INVALID_ARGUMENT, "dt_device_get_info:", "out is NULL", bad(dt_device_get_info(dt_cpu(), NULL)))    \
  X_(info_gpu7, DT_ERR_NO_DEVICE, "dt_device_get_info:", "cuda:7", bad(dt_device_get_info(GPU7, &INFO)))                    \
  X_(info_gpum, DT_ERR_INVALID_ARGUMENT, "dt_device_get_info:", "-1", bad(dt_device_get_info(GPUM, &INFO)))                 \
  X_(info_cpu3, DT_ERR_NO_DEVICE, "dt_device_get_info:", "cpu:3", bad(dt_device_get_info(CPU3, &INFO)))                     \
  X_(info_alien, DT_ERR_INVALID_ARGUMENT, "dt_device_get_info:", "device type 5", bad(dt_device_get_info(ALIEN, &INFO)))    \
  X_(sync_gpu7, DT_ERR_NO_DEVICE, "dt_synchronize:", "cuda:7", bad(dt_synchronize(GPU7)))                                   \
  X_(sync_gpum, DT_ERR_INVALID_ARGUMENT, "dt_synchronize:", "-1", bad(dt_synchronize(GPUM)))                                \
  X_(sync_cpu3, DT_ERR_NO_DEVICE, "dt_synchronize:", "cpu:3", bad(dt_synchronize(CPU3)))                                    \
  X_(sync_alien, DT_ERR_INVALID_ARGUMENT, "dt_synchronize:", "device type 5", bad(dt_synchronize(ALIEN)))                   \
  X_(stream_gpu7, DT_ERR_NO_DEVICE, "dt_cuda_stream:", "cuda:7", dt_cuda_stream(GPU7) == NULL)                              \
  X_(stream_alien, DT_ERR_INVALID_ARGUMENT, "dt_cuda_stream:", "device type 5", dt_cuda_stream(ALIEN) == NULL)              \
  /* creation */                                                                                                            \
  X_(empty_neg, DT_ERR_SHAPE, "dt_empty:", "negative dimension -1|(2, -1)", nul(dt_empty(dt_shape2(2, -1), DT_F32, dt_cpu()))) \
  X_(empty_overflow, DT_ERR_SHAPE, "dt_empty:", "too large", nul(dt_empty(dt_shape2(BIG, 2), DT_F32, dt_cpu())))            \
  X_(empty_overflow_bytes, DT_ERR_SHAPE, "dt_empty:", "too large", nul(dt_empty(dt_shape1(U64(61)), DT_F64, dt_cpu())))     \
  X_(empty_overflow_4d, DT_ERR_SHAPE, "dt_empty:", "too large", nul(dt_empty(dt_shape4(U64(20), U64(20), U64(20), 8), DT_I32, dt_cpu()))) \
  X_(empty_huge_oom, DT_ERR_OUT_OF_MEMORY, "dt_empty:", "out of memory|cpu|EiB", nul(dt_empty(dt_shape1(U64(59)), DT_F32, dt_cpu()))) \
  X_(empty_zero_dim_ok, DT_OK, "", "", nul(dt_empty(dt_shape3(BIG, 0, BIG), DT_F64, dt_cpu())))                            \
  X_(empty_bad_ndim, DT_ERR_SHAPE, "dt_empty:", "0 to 8 dimensions|-1", nul(dt_empty(dt_shape_n(9, NULL), DT_F32, dt_cpu()))) \
  X_(zeros_shape_n_9, DT_ERR_SHAPE, "dt_zeros:", "0 to 8 dimensions, got -1|what dt_shape_n makes of an ndim outside 0 to 8", nul(dt_zeros(dt_shape_n(9, ONES9), dt_cpu()))) \
  X_(empty_null_dims, DT_ERR_SHAPE, "dt_empty:", "dimensions", nul(dt_empty(dt_shape_n(2, NULL), DT_F32, dt_cpu())))        \
  X_(empty_dtype, DT_ERR_DTYPE, "dt_empty:", "unknown dtype 9", nul(dt_empty(dt_shape1(2), BADT, dt_cpu())))                \
  X_(empty_dtype_neg, DT_ERR_DTYPE, "dt_empty:", "unknown dtype -1", nul(dt_empty(dt_shape1(2), (dt_dtype)-1, dt_cpu())))   \
  X_(empty_gpu7_first, DT_ERR_NO_DEVICE, "dt_empty:", "no such device cuda:7", nul(dt_empty(dt_shape1(-1), BADT, GPU7)))    \
  X_(empty_gpum, DT_ERR_INVALID_ARGUMENT, "dt_empty:", "device index -1", nul(dt_empty(dt_shape1(2), DT_F32, GPUM)))        \
  X_(empty_cpu3, DT_ERR_NO_DEVICE, "dt_empty:", "cpu:3", nul(dt_empty(dt_shape1(2), DT_F32, CPU3)))                         \
  X_(empty_alien, DT_ERR_INVALID_ARGUMENT, "dt_empty:", "device type 5", nul(dt_empty(dt_shape1(2), DT_F32, ALIEN)))        \
  X_(zeros_neg, DT_ERR_SHAPE, "dt_zeros:", "negative dimension -5", nul(dt_zeros(dt_shape1(-5), dt_cpu())))                \
  X_(zeros_gpu7, DT_ERR_NO_DEVICE, "dt_zeros:", "cuda:7", nul(dt_zeros(dt_shape1(2), GPU7)))                               \
  X_(ones_overflow, DT_ERR_SHAPE, "dt_ones:", "too large", nul(dt_ones(dt_shape3(BIG, BIG, BIG), dt_cpu())))                \
  X_(ones_cpu3, DT_ERR_NO_DEVICE, "dt_ones:", "cpu:3", nul(dt_ones(dt_shape1(2), CPU3)))                                    \
  X_(full_neg, DT_ERR_SHAPE, "dt_full:", "negative", nul(dt_full(dt_shape2(-1, -1), 1.0, dt_cpu())))                        \
  X_(full_alien, DT_ERR_INVALID_ARGUMENT, "dt_full:", "device type 5", nul(dt_full(dt_shape1(1), 1.0, ALIEN)))              \
  X_(arange_step0, DT_ERR_INVALID_ARGUMENT, "dt_arange:", "step", nul(dt_arange(0, 10, 0, DT_F32, dt_cpu())))               \
  X_(arange_nan, DT_ERR_INVALID_ARGUMENT, "dt_arange:", "finite", nul(dt_arange(0, NAN, 1, DT_F32, dt_cpu())))              \
  X_(arange_inf, DT_ERR_INVALID_ARGUMENT, "dt_arange:", "finite", nul(dt_arange(0, 1, INFINITY, DT_F32, dt_cpu())))         \
  X_(arange_side, DT_ERR_INVALID_ARGUMENT, "dt_arange:", "wrong side", nul(dt_arange(0, 10, -1, DT_F32, dt_cpu())))         \
  X_(arange_many, DT_ERR_SHAPE, "dt_arange:", "too many", nul(dt_arange(0, 1e300, 1, DT_F32, dt_cpu())))                    \
  X_(arange_many_tiny, DT_ERR_SHAPE, "dt_arange:", "too many", nul(dt_arange(0, 1, 1e-300, DT_F32, dt_cpu())))              \
  X_(arange_dtype, DT_ERR_DTYPE, "dt_arange:", "unknown dtype", nul(dt_arange(0, 10, 1, BADT, dt_cpu())))                   \
  X_(arange_gpu7, DT_ERR_NO_DEVICE, "dt_arange:", "cuda:7", nul(dt_arange(0, 10, 1, DT_F32, GPU7)))                         \
  X_(arange_empty_ok, DT_OK, "", "", nul(dt_arange(3, 3, 1, DT_I64, dt_cpu())))                                             \
  X_(from_data_null, DT_ERR_INVALID_ARGUMENT, "dt_from_data:", "host is NULL", nul(dt_from_data(NULL, dt_shape1(3), DT_F32, dt_cpu()))) \
  X_(from_data_null_empty_ok, DT_OK, "", "", nul(dt_from_data(NULL, dt_shape2(0, 3), DT_F32, dt_cpu())))                   \
  X_(from_data_dtype, DT_ERR_DTYPE, "dt_from_data:", "unknown dtype", nul(dt_from_data(HOST, dt_shape1(3), BADT, dt_cpu()))) \
  X_(from_data_neg, DT_ERR_SHAPE, "dt_from_data:", "negative", nul(dt_from_data(HOST, dt_shape1(-3), DT_F32, dt_cpu())))    \
  X_(from_data_gpu7, DT_ERR_NO_DEVICE, "dt_from_data:", "cuda:7", nul(dt_from_data(HOST, dt_shape1(3), DT_F32, GPU7)))      \
  X_(rand_neg, DT_ERR_SHAPE, "dt_rand:", "negative", nul(dt_rand(dt_shape1(-1), dt_cpu())))                                 \
  X_(rand_gpu7, DT_ERR_NO_DEVICE, "dt_rand:", "cuda:7", nul(dt_rand(dt_shape1(1), GPU7)))                                   \
  X_(randn_overflow, DT_ERR_SHAPE, "dt_randn:", "too large", nul(dt_randn(dt_shape2(BIG, 3), dt_cpu())))                    \
  X_(randn_gpum, DT_ERR_INVALID_ARGUMENT, "dt_randn:", "-1", nul(dt_randn(dt_shape1(1), GPUM)))                              \
  /* properties */                                                                                                          \
  X_(device_of_null, DT_ERR_INVALID_ARGUMENT, "dt_device_of:", "t is NULL", dt_device_of(NULL).type == DT_CPU)              \
  X_(dtype_of_null, DT_ERR_INVALID_ARGUMENT, "dt_dtype_of:", "t is NULL", dt_dtype_of(NULL) == DT_F32)                     \
  X_(shape_of_null, DT_ERR_INVALID_ARGUMENT, "dt_shape_of:", "t is NULL", dt_shape_of(NULL).ndim == -1)                    \
  X_(ndim_null, DT_ERR_INVALID_ARGUMENT, "dt_ndim:", "t is NULL", neg(dt_ndim(NULL)))                                       \
  X_(dim_null, DT_ERR_INVALID_ARGUMENT, "dt_dim:", "t is NULL", neg(dt_dim(NULL, 0)))                                       \
  X_(dim_range, DT_ERR_INVALID_ARGUMENT, "dt_dim:", "dimension 2|2-d", neg(dt_dim(F, 2)))                                   \
  X_(dim_range_neg, DT_ERR_INVALID_ARGUMENT, "dt_dim:", "dimension -3", neg(dt_dim(F, -3)))                                 \
  X_(dim_intmin, DT_ERR_INVALID_ARGUMENT, "dt_dim:", "out of range", neg(dt_dim(F, INT_MIN)))                               \
  X_(dim_scalar, DT_ERR_INVALID_ARGUMENT, "dt_dim:", "0-d", neg(dt_dim(S, 0)))                                              \
  X_(numel_null, DT_ERR_INVALID_ARGUMENT, "dt_numel:", "t is NULL", neg(dt_numel(NULL)))                                    \
  X_(nbytes_null, DT_ERR_INVALID_ARGUMENT, "dt_nbytes:", "t is NULL", dt_nbytes(NULL) == 0)                                 \
  X_(data_ptr_null, DT_ERR_INVALID_ARGUMENT, "dt_data_ptr:", "t is NULL", dt_data_ptr(NULL) == NULL)                        \
  X_(retain_null_ok, DT_OK, "", "", dt_retain(NULL) != NULL)                                                               \
  /* copies */                                                                                                              \
  X_(to_null, DT_ERR_INVALID_ARGUMENT, "dt_to:", "t is NULL", nul(dt_to(NULL, dt_cpu())))                                   \
  X_(to_gpu7, DT_ERR_NO_DEVICE, "dt_to:", "cuda:7", nul(dt_to(F, GPU7)))                                                    \
  X_(to_gpum, DT_ERR_INVALID_ARGUMENT, "dt_to:", "-1", nul(dt_to(F, GPUM)))                                                 \
  X_(to_cpu3, DT_ERR_NO_DEVICE, "dt_to:", "cpu:3", nul(dt_to(F, CPU3)))                                                     \
  X_(to_alien, DT_ERR_INVALID_ARGUMENT, "dt_to:", "device type 5", nul(dt_to(F, ALIEN)))                                    \
  X_(copyto_null, DT_ERR_INVALID_ARGUMENT, "dt_copyto:", "t is NULL", nul(dt_copyto(NULL, dt_cpu())))                       \
  X_(copyto_gpu7, DT_ERR_NO_DEVICE, "dt_copyto:", "cuda:7", nul(dt_copyto(F, GPU7)))                                        \
  X_(copyto_cpu3, DT_ERR_NO_DEVICE, "dt_copyto:", "cpu:3", nul(dt_copyto(F, CPU3)))                                         \
  X_(copy_null_dst, DT_ERR_INVALID_ARGUMENT, "dt_copy_:", "dst is NULL", bad(dt_copy_(NULL, F)))                            \
  X_(copy_null_src, DT_ERR_INVALID_ARGUMENT, "dt_copy_:", "src is NULL", bad(dt_copy_(F, NULL)))                            \
  X_(copy_dtype, DT_ERR_DTYPE, "dt_copy_:", "dst is float32|src is float64", bad(dt_copy_(F, D)))                           \
  X_(copy_shape, DT_ERR_SHAPE, "dt_copy_:", "dst has shape (2, 3)|src has shape (3,)", bad(dt_copy_(F, V)))                 \
  X_(to_host_null, DT_ERR_INVALID_ARGUMENT, "dt_to_host:", "t is NULL", bad(dt_to_host(NULL, HOST, sizeof HOST)))            \
  X_(to_host_null_dst, DT_ERR_INVALID_ARGUMENT, "dt_to_host:", "dst is NULL", bad(dt_to_host(F, NULL, 24)))                  \
  X_(to_host_small, DT_ERR_INVALID_ARGUMENT, "dt_to_host:", "dst holds 8 bytes|24", bad(dt_to_host(F, HOST, 8)))             \
  X_(item_null, DT_ERR_INVALID_ARGUMENT, "dt_item:", "t is NULL", isnanv(dt_item(NULL)))                                    \
  X_(item_shape, DT_ERR_SHAPE, "dt_item:", "one element|(2, 3)", isnanv(dt_item(F)))                                        \
  /* elementwise */                                                                                                         \
  X_(add_null_a, DT_ERR_INVALID_ARGUMENT, "dt_add:", "a is NULL", nul(dt_add(NULL, F)))                                     \
  X_(add_null_b, DT_ERR_INVALID_ARGUMENT, "dt_add:", "b is NULL", nul(dt_add(F, NULL)))                                     \
  X_(add_bcast, DT_ERR_SHAPE, "dt_add:", "(2, 3)|(2, 2, 2, 2)|broadcast", nul(dt_add(F, M4)))                               \
  X_(sub_bcast, DT_ERR_SHAPE, "dt_sub:", "(3,)|(2, 2, 2, 2)", nul(dt_sub(V, M4)))                                           \
  X_(div_null, DT_ERR_INVALID_ARGUMENT, "dt_div:", "=b is NULL", nul(dt_div(F, NULL)))                                     \
  X_(div_null_a, DT_ERR_INVALID_ARGUMENT, "dt_div:", "=a is NULL", nul(dt_div(NULL, F)))                                    \
  X_(div_bcast, DT_ERR_SHAPE, "dt_div:", "=shapes (2, 3) and (2, 2, 2, 2) cannot be broadcast: a has 3 and b has 2 at dimension 3", nul(dt_div(F, M4))) \
  /* elementwise: tensors on two devices (the device check comes before the dtype and shape checks) */                  \
  X_(add_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_add:", "=expected all tensors on the same device, but b is on cpu and a is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_add(G0, F)))) \
  X_(add_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_add:", "=expected all tensors on the same device, but b is on cuda:0 and a is on cpu (move one with dt_to)", GPUS(1, nul(dt_add(F, G0)))) \
  X_(sub_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_sub:", "=expected all tensors on the same device, but b is on cpu and a is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_sub(G0, F)))) \
  X_(mul_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_mul:", "=expected all tensors on the same device, but b is on cuda:0 and a is on cpu (move one with dt_to)", GPUS(1, nul(dt_mul(F, G0)))) \
  X_(div_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_div:", "=expected all tensors on the same device, but b is on cpu and a is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_div(G0, F)))) \
  X_(div_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_div:", "=expected all tensors on the same device, but b is on cuda:0 and a is on cpu (move one with dt_to)", GPUS(1, nul(dt_div(F, G0)))) \
  X_(add_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_add:", "b is on cuda:0|a is on cpu", GPUS(1, nul(dt_add(F, GD0)))) \
  X_(mul_device_before_shape, DT_ERR_DEVICE_MISMATCH, "dt_mul:", "b is on cuda:0|a is on cpu", GPUS(1, nul(dt_mul(M4, G0)))) \
  X_(div_device_before_int, DT_ERR_DEVICE_MISMATCH, "dt_div:", "b is on cuda:0|a is on cpu", GPUS(1, nul(dt_div(I, G0))))   \
  X_(add_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_add:", "=expected all tensors on the same device, but b is on cuda:1 and a is on cuda:0 (move one with dt_to)", GPUS(2, nul(dt_add(G0, G1)))) \
  X_(sub_gpu1_gpu0, DT_ERR_DEVICE_MISMATCH, "dt_sub:", "b is on cuda:0|a is on cuda:1", GPUS(2, nul(dt_sub(G1, G0))))       \
  X_(mul_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_mul:", "b is on cuda:1|a is on cuda:0", GPUS(2, nul(dt_mul(G0, G1))))       \
  X_(div_gpu1_gpu0, DT_ERR_DEVICE_MISMATCH, "dt_div:", "=expected all tensors on the same device, but b is on cuda:0 and a is on cuda:1 (move one with dt_to)", GPUS(2, nul(dt_div(G1, G0)))) \
  X_(add_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_add_scalar:", "a is NULL", nul(dt_add_scalar(NULL, 1)))                  \
  X_(exp_int, DT_ERR_DTYPE, "dt_exp:", "a is int32", nul(dt_exp(I)))                                                        \
  X_(log_null, DT_ERR_INVALID_ARGUMENT, "dt_log:", "a is NULL", nul(dt_log(NULL)))                                          \
  X_(sqrt_int, DT_ERR_DTYPE, "dt_sqrt:", "a is int64", nul(dt_sqrt(L)))                                                     \
  X_(neg_null, DT_ERR_INVALID_ARGUMENT, "dt_neg:", "a is NULL", nul(dt_neg(NULL)))                                          \
  X_(relu_int, DT_ERR_DTYPE, "dt_relu:", "a is int32", nul(dt_relu(I)))                                                     \
  /* matmul, transpose, reshape */                                                                                          \
  X_(matmul_null, DT_ERR_INVALID_ARGUMENT, "dt_matmul:", "a is NULL", nul(dt_matmul(NULL, F)))                              \
  X_(matmul_null_b, DT_ERR_INVALID_ARGUMENT, "dt_matmul:", "b is NULL", nul(dt_matmul(F, NULL)))                            \
  X_(matmul_int, DT_ERR_DTYPE, "dt_matmul:", "int32", nul(dt_matmul(I, I)))                                                 \
  X_(matmul_dtype, DT_ERR_DTYPE, "dt_matmul:", "float32|float64", nul(dt_matmul(F, D)))                                     \
  X_(matmul_inner, DT_ERR_SHAPE, "dt_matmul:", "(2, 3)|3 != 2", nul(dt_matmul(F, F)))                                       \
  X_(matmul_0d, DT_ERR_SHAPE, "dt_matmul:", "()", nul(dt_matmul(S, F)))                                                     \
  X_(matmul_4d, DT_ERR_SHAPE, "dt_matmul:", "(2, 2, 2, 2)", nul(dt_matmul(M4, M4)))                                         \
  X_(bmm_batch, DT_ERR_SHAPE, "dt_matmul:", "=batch sizes differ: (2, 3, 4) and (3, 4, 5)", nul(dt_matmul(B3, C35)))        \
  X_(matmul_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_matmul:", "=expected all tensors on the same device, but b is on cuda:0 and a is on cpu (move one with dt_to)", GPUS(1, nul(dt_matmul(F, G0V)))) \
  X_(matmul_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_matmul:", "b is on cpu|a is on cuda:0", GPUS(1, nul(dt_matmul(G0, V))))    \
  X_(matmul_device_before_shape, DT_ERR_DEVICE_MISMATCH, "dt_matmul:", "b is on cuda:0|a is on cpu", GPUS(1, nul(dt_matmul(F, G0)))) \
  X_(matmul_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_matmul:", "b is on cuda:0|a is on cpu", GPUS(1, nul(dt_matmul(I, GD0)))) \
  X_(bmm_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_matmul:", "=expected all tensors on the same device, but b is on cuda:0 and a is on cpu (move one with dt_to)", GPUS(1, nul(dt_matmul(B3, G0C3)))) \
  X_(bmm_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_matmul:", "b is on cpu|a is on cuda:0", GPUS(1, nul(dt_matmul(G0B3, C3))))    \
  X_(bmm_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_matmul:", "=expected all tensors on the same device, but b is on cuda:1 and a is on cuda:0 (move one with dt_to)", GPUS(2, nul(dt_matmul(G0B3, G1C3)))) \
  X_(transpose_null, DT_ERR_INVALID_ARGUMENT, "dt_transpose:", "a is NULL", nul(dt_transpose(NULL)))                        \
  X_(transpose_1d, DT_ERR_SHAPE, "dt_transpose:", "2-d|(3,)", nul(dt_transpose(V)))                                         \
  X_(reshape_null, DT_ERR_INVALID_ARGUMENT, "dt_reshape:", "a is NULL", nul(dt_reshape(NULL, dt_shape1(6))))                \
  X_(reshape_count, DT_ERR_SHAPE, "dt_reshape:", "(2, 3)|(4, 2)", nul(dt_reshape(F, dt_shape2(4, 2))))                      \
  X_(reshape_two_infer, DT_ERR_SHAPE, "dt_reshape:", "-1", nul(dt_reshape(F, dt_shape2(-1, -1))))                           \
  X_(reshape_infer_zero, DT_ERR_SHAPE, "dt_reshape:", "(-1, 0)|6 elements", nul(dt_reshape(F, dt_shape2(-1, 0))))           \
  X_(reshape_infer_uneven, DT_ERR_SHAPE, "dt_reshape:", "(-1, 4)", nul(dt_reshape(F, dt_shape2(-1, 4))))                    \
  X_(reshape_neg, DT_ERR_SHAPE, "dt_reshape:", "-5", nul(dt_reshape(F, dt_shape2(-5, 2))))                                  \
  X_(reshape_overflow, DT_ERR_SHAPE, "dt_reshape:", "too large", nul(dt_reshape(F, dt_shape3(BIG, BIG, 2))))                \
  X_(reshape_infer_overflow, DT_ERR_SHAPE, "dt_reshape:", "6 elements", nul(dt_reshape(F, dt_shape3(BIG, -1, BIG))))        \
  X_(reshape_ndim, DT_ERR_SHAPE, "dt_reshape:", "0 to 8 dimensions, got -1|what dt_shape_n makes", nul(dt_reshape(F, dt_shape_n(9, NULL)))) \
  /* reductions, casts, in place */                                                                                         \
  X_(sum_null, DT_ERR_INVALID_ARGUMENT, "dt_sum:", "a is NULL", nul(dt_sum(NULL)))                                          \
  X_(sum_int, DT_ERR_DTYPE, "dt_sum:", "a is int32", nul(dt_sum(I)))                                                        \
  X_(mean_int, DT_ERR_DTYPE, "dt_mean:", "a is int64", nul(dt_mean(L)))                                                     \
  X_(norm_null, DT_ERR_INVALID_ARGUMENT, "dt_norm:", "a is NULL", nul(dt_norm(NULL)))                                       \
  X_(sum_dim_null, DT_ERR_INVALID_ARGUMENT, "dt_sum_dim:", "a is NULL", nul(dt_sum_dim(NULL, 0)))                           \
  X_(sum_dim_range, DT_ERR_INVALID_ARGUMENT, "dt_sum_dim:", "dim 2|2-d", nul(dt_sum_dim(F, 2)))                             \
  X_(sum_dim_range_neg, DT_ERR_INVALID_ARGUMENT, "dt_sum_dim:", "dim -3", nul(dt_sum_dim(F, -3)))                           \
  X_(sum_dim_intmin, DT_ERR_INVALID_ARGUMENT, "dt_sum_dim:", "out of range", nul(dt_sum_dim(F, INT_MIN)))                   \
  X_(sum_dim_0d, DT_ERR_INVALID_ARGUMENT, "dt_sum_dim:", "0-d", nul(dt_sum_dim(S, 1)))                                      \
  X_(sum_dim_int, DT_ERR_DTYPE, "dt_sum_dim:", "int32", nul(dt_sum_dim(I, 0)))                                              \
  X_(cast_null, DT_ERR_INVALID_ARGUMENT, "dt_cast:", "a is NULL", nul(dt_cast(NULL, DT_F64)))                               \
  X_(cast_dtype, DT_ERR_DTYPE, "dt_cast:", "unknown dtype 9", nul(dt_cast(F, BADT)))                                        \
  /* dt_stack: the list, its length, shapes, dtypes, devices */                                                             \
  X_(stack_null, DT_ERR_INVALID_ARGUMENT, "dt_stack:", "=ts is NULL", nul(dt_stack(NULL, 2)))                               \
  X_(stack_n0, DT_ERR_INVALID_ARGUMENT, "dt_stack:", "=expected at least one tensor, got n = 0", nul(dt_stack(STK, 0)))     \
  X_(stack_n_neg, DT_ERR_INVALID_ARGUMENT, "dt_stack:", "=expected at least one tensor, got n = -1", nul(dt_stack(STK, -1))) \
  X_(stack_n_intmin, DT_ERR_INVALID_ARGUMENT, "dt_stack:", "n = -2147483648", nul(dt_stack(STK, INT_MIN)))                  \
  X_(stack_null_first, DT_ERR_INVALID_ARGUMENT, "dt_stack:", "=ts[0] is NULL", nul(stack2(NULL, F)))                        \
  X_(stack_null_last, DT_ERR_INVALID_ARGUMENT, "dt_stack:", "=ts[2] is NULL", nul(stack3(F, F, NULL)))                      \
  X_(stack_shape, DT_ERR_SHAPE, "dt_stack:", "=ts[0] has shape (2, 3) but ts[1] has shape (3,)", nul(stack2(F, V)))         \
  X_(stack_shape_last, DT_ERR_SHAPE, "dt_stack:", "=ts[0] has shape (2, 3) but ts[2] has shape (2, 2, 2, 2)", nul(stack3(F, F, M4))) \
  X_(stack_shape_0d, DT_ERR_SHAPE, "dt_stack:", "=ts[0] has shape () but ts[1] has shape (3,)", nul(stack2(S, V)))          \
  X_(stack_dtype, DT_ERR_DTYPE, "dt_stack:", "=expected tensors of one dtype, but ts[0] is float32 and ts[1] is float64 (convert one with dt_cast)", nul(stack2(F, D))) \
  X_(stack_dtype_before_shape, DT_ERR_DTYPE, "dt_stack:", "ts[0] is float32|ts[2] is int64", nul(stack3(F, F, L)))          \
  X_(stack_int_mixed, DT_ERR_DTYPE, "dt_stack:", "ts[0] is int32|ts[1] is float32", nul(stack2(I, F)))                      \
  X_(stack_8d, DT_ERR_SHAPE, "dt_stack:", "=stacking 8-d tensors exceeds 8 dims", nul(stack2(T8, T8)))                      \
  X_(stack_one_ok, DT_OK, "", "", nul(dt_stack(STK, 1)))                                                                    \
  X_(stack_0d_ok, DT_OK, "", "", nul(stack2(S, S)))                                                                         \
  X_(stack_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_stack:", "=expected all tensors on the same device, but ts[1] is on cuda:0 and ts[0] is on cpu (move one with dt_to)", GPUS(1, nul(stack2(F, G0)))) \
  X_(stack_gpu_cpu_last, DT_ERR_DEVICE_MISMATCH, "dt_stack:", "=expected all tensors on the same device, but ts[2] is on cpu and ts[0] is on cuda:0 (move one with dt_to)", GPUS(1, nul(stack3(G0, G0, F)))) \
  X_(stack_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_stack:", "ts[1] is on cuda:0|ts[0] is on cpu", GPUS(1, nul(stack2(F, GD0)))) \
  X_(stack_device_before_shape, DT_ERR_DEVICE_MISMATCH, "dt_stack:", "ts[1] is on cuda:0|ts[0] is on cpu", GPUS(1, nul(stack2(F, G0V)))) \
  X_(stack_device_before_earlier_dtype, DT_ERR_DEVICE_MISMATCH, "dt_stack:", "ts[2] is on cuda:0|ts[0] is on cpu", GPUS(1, nul(stack3(F, D, G0)))) \
  X_(stack_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_stack:", "=expected all tensors on the same device, but ts[1] is on cuda:1 and ts[0] is on cuda:0 (move one with dt_to)", GPUS(2, nul(stack2(G0, G1)))) \
  X_(stack_gpu_ok, DT_OK, "", "", GPUS(1, nul(stack3(G0, G0, G0))))                                                         \
  X_(fill_null, DT_ERR_INVALID_ARGUMENT, "dt_fill_:", "t is NULL", bad(dt_fill_(NULL, 1)))                                  \
  X_(axpy_null_y, DT_ERR_INVALID_ARGUMENT, "dt_axpy_:", "y is NULL", bad(dt_axpy_(NULL, 1, F)))                             \
  X_(axpy_null_x, DT_ERR_INVALID_ARGUMENT, "dt_axpy_:", "x is NULL", bad(dt_axpy_(F, 1, NULL)))                             \
  X_(axpy_dtype, DT_ERR_DTYPE, "dt_axpy_:", "float32|float64", bad(dt_axpy_(F, 1, D)))                                      \
  X_(axpy_int, DT_ERR_DTYPE, "dt_axpy_:", "y is int32", bad(dt_axpy_(I, 1, I)))                                             \
  X_(axpy_shape, DT_ERR_SHAPE, "dt_axpy_:", "y has shape (2, 3)|x has shape (3,)", bad(dt_axpy_(F, 1, V)))                  \
  X_(axpy_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_axpy_:", "=expected all tensors on the same device, but x is on cpu and y is on cuda:0 (move one with dt_to)", GPUS(1, bad(dt_axpy_(G0, 1, F)))) \
  X_(axpy_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_axpy_:", "=expected all tensors on the same device, but x is on cuda:0 and y is on cpu (move one with dt_to)", GPUS(1, bad(dt_axpy_(F, 1, G0)))) \
  X_(axpy_device_before_shape, DT_ERR_DEVICE_MISMATCH, "dt_axpy_:", "x is on cuda:0|y is on cpu", GPUS(1, bad(dt_axpy_(F, 1, G0V)))) \
  X_(axpy_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_axpy_:", "x is on cuda:0|y is on cpu", GPUS(1, bad(dt_axpy_(I, 1, GD0)))) \
  /* in-place arithmetic */                                                                                                 \
  X_(inplace_add_null_a, DT_ERR_INVALID_ARGUMENT, "dt_add_:", "a is NULL", bad(dt_add_(NULL, F)))                           \
  X_(inplace_add_null_b, DT_ERR_INVALID_ARGUMENT, "dt_add_:", "b is NULL", bad(dt_add_(F, NULL)))                           \
  X_(inplace_add_dtype, DT_ERR_DTYPE, "dt_add_:", "float32|float64", bad(dt_add_(F, D)))                                    \
  X_(inplace_div_int, DT_ERR_DTYPE, "dt_div_:", "a is int32", bad(dt_div_(I, I)))                                          \
  X_(inplace_mul_grows, DT_ERR_SHAPE, "dt_mul_:", "a has shape (3,)|broadcast to (2, 3)|keeps a's shape", bad(dt_mul_(V, F))) \
  X_(inplace_sub_broadcast, DT_ERR_SHAPE, "dt_sub_:", "cannot be broadcast", bad(dt_sub_(F, M4)))                           \
  X_(inplace_add_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_add_:", "cuda:0|cpu", GPUS(1, bad(dt_add_(G0, F))))                     \
  X_(inplace_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_mul_scalar_:", "a is NULL", bad(dt_mul_scalar_(NULL, 2.0)))          \
  X_(inplace_scalar_fraction, DT_ERR_DTYPE, "dt_add_scalar_:", "a is int32|0.5 is not a whole number", bad(dt_add_scalar_(I, 0.5))) \
  X_(inplace_shares_memory, DT_ERR_INVALID_ARGUMENT, "dt_add_:", "b overlaps a's memory", inplace_refused(0))              \
  X_(inplace_leaf_grad, DT_ERR_INVALID_ARGUMENT, "dt_mul_scalar_:", "a is a leaf that requires grad", inplace_refused(1))   \
  X_(copy_shares_memory, DT_ERR_INVALID_ARGUMENT, "dt_copy_:", "src overlaps dst's memory", overlap_refused(0))           \
  X_(axpy_shares_memory, DT_ERR_INVALID_ARGUMENT, "dt_axpy_:", "x overlaps y's memory", overlap_refused(1))                 \
  X_(axpy_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_axpy_:", "=expected all tensors on the same device, but x is on cuda:1 and y is on cuda:0 (move one with dt_to)", GPUS(2, bad(dt_axpy_(G0, 1, G1)))) \
  /* classification: argmax/min, max/min, softmax, cross-entropy */                                                          \
  X_(argmax_null, DT_ERR_INVALID_ARGUMENT, "dt_argmax:", "t is NULL", nul(dt_argmax(NULL, 0)))                               \
  X_(argmax_range, DT_ERR_INVALID_ARGUMENT, "dt_argmax:", "=dim 2 out of range for a 2-d tensor (expected -2 to 1)", nul(dt_argmax(F, 2))) \
  X_(argmin_range_neg, DT_ERR_INVALID_ARGUMENT, "dt_argmin:", "dim -3|2-d", nul(dt_argmin(F, -3)))                         \
  X_(argmax_intmin, DT_ERR_INVALID_ARGUMENT, "dt_argmax:", "out of range", nul(dt_argmax(F, INT_MIN)))                     \
  X_(argmax_0d_dim1, DT_ERR_INVALID_ARGUMENT, "dt_argmax:", "dim 1|0-d|-1 to 0", nul(dt_argmax(S, 1)))                     \
  X_(argmax_int, DT_ERR_DTYPE, "dt_argmax:", "t is int32", nul(dt_argmax(I, 0)))                                            \
  X_(max_dim_null, DT_ERR_INVALID_ARGUMENT, "dt_max_dim:", "t is NULL", nul(dt_max_dim(NULL, 0)))                           \
  X_(min_dim_int, DT_ERR_DTYPE, "dt_min_dim:", "t is int64", nul(dt_min_dim(L, 0)))                                         \
  X_(max_dim_empty, DT_ERR_SHAPE, "dt_max_dim:", "non-zero size|(0, 3)", empty_reduce(0)) \
  X_(max_null, DT_ERR_INVALID_ARGUMENT, "dt_max:", "t is NULL", nul(dt_max(NULL)))                                          \
  X_(min_int, DT_ERR_DTYPE, "dt_min:", "t is int32", nul(dt_min(I)))                                                        \
  X_(max_empty, DT_ERR_SHAPE, "dt_max:", "no elements|(2, 0)", empty_reduce(1))   \
  X_(softmax_null, DT_ERR_INVALID_ARGUMENT, "dt_softmax:", "t is NULL", nul(dt_softmax(NULL, 0)))                           \
  X_(softmax_range, DT_ERR_INVALID_ARGUMENT, "dt_softmax:", "dim 2|2-d", nul(dt_softmax(F, 2)))                             \
  X_(log_softmax_range, DT_ERR_INVALID_ARGUMENT, "dt_log_softmax:", "dim -3|2-d", nul(dt_log_softmax(F, -3)))               \
  X_(log_softmax_int, DT_ERR_DTYPE, "dt_log_softmax:", "t is int64", nul(dt_log_softmax(L, 0)))                             \
  X_(xent_null_logits, DT_ERR_INVALID_ARGUMENT, "dt_cross_entropy:", "logits is NULL", nul(dt_cross_entropy(NULL, L)))      \
  X_(xent_null_target, DT_ERR_INVALID_ARGUMENT, "dt_cross_entropy:", "target is NULL", nul(dt_cross_entropy(F, NULL)))      \
  X_(xent_int_logits, DT_ERR_DTYPE, "dt_cross_entropy:", "logits is int32", nul(dt_cross_entropy(I, L)))                    \
  X_(xent_float_target, DT_ERR_DTYPE, "dt_cross_entropy:", "target must be int64|float32", nul(dt_cross_entropy(F, V)))     \
  X_(xent_shape, DT_ERR_SHAPE, "dt_cross_entropy:", "=expected logits (n, c) and target (n,), got (2, 3) and (3,)", nul(dt_cross_entropy(F, L))) \
  X_(xent_1d_logits, DT_ERR_SHAPE, "dt_cross_entropy_grad:", "(3,)|(n, c)", nul(dt_cross_entropy_grad(V, L)))              \
  X_(xent_label_neg, DT_ERR_INVALID_ARGUMENT, "dt_cross_entropy:", "=target[0] = -1 is out of range for 3 classes (expected 0 <= label < 3)", xent_labels(0, -1, 0)) \
  X_(xent_label_c, DT_ERR_INVALID_ARGUMENT, "dt_cross_entropy:", "target[1] = 3|3 classes", xent_labels(0, 0, 3))           \
  X_(xent_grad_label_big, DT_ERR_INVALID_ARGUMENT, "dt_cross_entropy_grad:", "target[1] = 9223372036854775807", xent_labels(1, 2, INT64_MAX)) \
  X_(xent_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_cross_entropy:", "=expected all tensors on the same device, but target is on cpu and logits is on cuda:0 (move one with dt_to)", GPUS(1, xent_gpu_cpu(0))) \
  X_(xent_grad_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_cross_entropy_grad:", "target is on cpu|logits is on cuda:0", GPUS(1, xent_gpu_cpu(1))) \
  X_(argmax_gpu_ok, DT_OK, "", "", GPUS(1, nul(dt_argmax(G0, 1))))                                                          \
  /* convolution and pooling */                                                                                             \
  X_(conv_null_x, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d:", "=x is NULL", nul(dt_f_conv2d(NULL, cv(3, 2, 3, 3), NULL, 1, 0))) \
  X_(conv_null_w, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d:", "=w is NULL", nul(dt_f_conv2d(cv(1, 2, 5, 5), NULL, NULL, 1, 0))) \
  X_(conv_stride0, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d:", "=stride must be at least 1, got (0, 0)", nul(dt_f_conv2d(cv(1, 2, 5, 5), cv(3, 2, 3, 3), NULL, 0, 0))) \
  X_(conv_stride_neg, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d:", "stride|(1, -2)", nul(dt_f_conv2d_ex(cv(1, 2, 5, 5), cv(3, 2, 3, 3), NULL, 1, -2, 0, 0, 1, 1, 1))) \
  X_(conv_padding_neg, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d:", "=padding must be non-negative, got (-1, -1)", nul(dt_f_conv2d(cv(1, 2, 5, 5), cv(3, 2, 3, 3), NULL, 1, -1))) \
  X_(conv_dilation0, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d:", "=dilation must be at least 1, got (1, 0)", nul(dt_f_conv2d_ex(cv(1, 2, 5, 5), cv(3, 2, 3, 3), NULL, 1, 1, 0, 0, 1, 0, 1))) \
  X_(conv_groups0, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d:", "=groups must be at least 1, got 0", nul(dt_f_conv2d_ex(cv(1, 2, 5, 5), cv(3, 2, 3, 3), NULL, 1, 1, 0, 0, 1, 1, 0))) \
  X_(conv_groups_c, DT_ERR_SHAPE, "dt_f_conv2d:", "=groups 4 does not divide x's 6 channels (x: (1, 6, 5, 5))", nul(dt_f_conv2d_ex(cv(1, 6, 5, 5), cv(4, 2, 3, 3), NULL, 1, 1, 0, 0, 1, 1, 4))) \
  X_(conv_groups_oc, DT_ERR_SHAPE, "dt_f_conv2d:", "groups 4 does not divide w's 6 output channels", nul(dt_f_conv2d_ex(cv(1, 4, 5, 5), cv(6, 1, 3, 3), NULL, 1, 1, 0, 0, 1, 1, 4))) \
  X_(conv_channels, DT_ERR_SHAPE, "dt_f_conv2d:", "=expected w's dim 1 to be x's channels / groups = 3 / 1 = 3, got w (4, 2, 3, 3) for x (1, 3, 5, 5)", nul(dt_f_conv2d(cv(1, 3, 5, 5), cv(4, 2, 3, 3), NULL, 1, 0))) \
  X_(conv_channels_groups, DT_ERR_SHAPE, "dt_f_conv2d:", "x's channels / groups = 4 / 2 = 2|(4, 4, 3, 3)", nul(dt_f_conv2d_ex(cv(1, 4, 5, 5), cv(4, 4, 3, 3), NULL, 1, 1, 0, 0, 1, 1, 2))) \
  X_(conv_small, DT_ERR_SHAPE, "dt_f_conv2d:", "=input smaller than the kernel: x (1, 2, 2, 2) padded by (0, 0) against kernel (3, 3) dilated by (1, 1)", nul(dt_f_conv2d(cv(1, 2, 2, 2), cv(3, 2, 3, 3), NULL, 1, 0))) \
  X_(conv_small_dilated, DT_ERR_SHAPE, "dt_f_conv2d:", "input smaller than the kernel|dilated by (2147483647, 1)", nul(dt_f_conv2d_ex(cv(1, 2, 5, 5), cv(3, 2, 3, 3), NULL, 1, 1, 0, 0, INT_MAX, 1, 1))) \
  X_(conv_small_wide, DT_ERR_SHAPE, "dt_f_conv2d:", "input smaller than the kernel|(1, 2, 5, 5)", nul(dt_f_conv2d_ex(cv(1, 2, 5, 5), cv(3, 2, 1, 7), NULL, 1, 1, 0, 0, 1, 1, 1))) \
  X_(conv_padded_ok, DT_OK, "", "", nul(dt_f_conv2d(cv(1, 2, 2, 2), cv(3, 2, 3, 3), NULL, 1, 1)))                           \
  X_(conv_x_3d, DT_ERR_SHAPE, "dt_f_conv2d:", "=expected x to be 4-d (n, c, h, w), got shape (2, 3, 4)", nul(dt_f_conv2d(B3, cv(3, 2, 3, 3), NULL, 1, 0))) \
  X_(conv_w_2d, DT_ERR_SHAPE, "dt_f_conv2d:", "expected w to be 4-d|(2, 3)", nul(dt_f_conv2d(cv(1, 2, 5, 5), F, NULL, 1, 0))) \
  X_(conv_x_empty_hw, DT_ERR_SHAPE, "dt_f_conv2d:", "non-zero channels, height and width|(1, 2, 0, 5)", nul(dt_f_conv2d(cv(1, 2, 0, 5), cv(3, 2, 3, 3), NULL, 1, 1))) \
  X_(conv_bias_shape, DT_ERR_SHAPE, "dt_f_conv2d:", "=expected b of shape (3,) (w's output channels), got (2, 3)", nul(dt_f_conv2d(cv(1, 2, 5, 5), cv(3, 2, 3, 3), F, 1, 0))) \
  X_(conv_int, DT_ERR_DTYPE, "dt_f_conv2d:", "x is int32|float32, float64, float16 or bfloat16", nul(dt_f_conv2d(cv_t(DT_I32, 1, 2, 5, 5), cv_t(DT_I32, 3, 2, 3, 3), NULL, 1, 0))) \
  X_(conv_mixed_dtype, DT_ERR_DTYPE, "dt_f_conv2d:", "=expected tensors of one dtype, but x is float32 and w is float64 (convert one with dt_cast)", nul(dt_f_conv2d(cv(1, 2, 5, 5), cv_t(DT_F64, 3, 2, 3, 3), NULL, 1, 0))) \
  X_(conv_bias_dtype, DT_ERR_DTYPE, "dt_f_conv2d:", "x is float32 and b is float64", nul(dt_f_conv2d(cv(1, 2, 5, 5), cv(2, 2, 3, 3), D, 1, 0))) \
  X_(conv_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_f_conv2d:", "=expected all tensors on the same device, but w is on cpu and x is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_f_conv2d(cv_g(1, 2, 5, 5), cv(3, 2, 3, 3), NULL, 1, 0)))) \
  X_(conv_bias_cpu, DT_ERR_DEVICE_MISMATCH, "dt_f_conv2d:", "b is on cpu and x is on cuda:0", GPUS(1, nul(dt_f_conv2d(cv_g(1, 2, 5, 5), cv_g(2, 2, 3, 3), V, 1, 0)))) \
  X_(conv_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_f_conv2d:", "w is on cuda:0|x is on cpu", GPUS(1, nul(dt_f_conv2d(cv_t(DT_I32, 1, 2, 5, 5), cv_g(3, 2, 9, 9), NULL, 1, 0)))) \
  X_(conv_gpu_ok, DT_OK, "", "", GPUS(1, nul(dt_f_conv2d(cv_g(1, 2, 5, 5), cv_g(3, 2, 3, 3), NULL, 1, 0))))                 \
  X_(conv_bw_null_gy, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d_backward:", "=grad_output is NULL", bad(conv_bw(NULL, cv(1, 2, 5, 5), cv(3, 2, 3, 3), 1))) \
  X_(conv_bw_null_x, DT_ERR_INVALID_ARGUMENT, "dt_f_conv2d_backward:", "=x is NULL", bad(conv_bw(cv(1, 3, 3, 3), NULL, cv(3, 2, 3, 3), 1))) \
  X_(conv_bw_shape, DT_ERR_SHAPE, "dt_f_conv2d_backward:", "=expected grad_output of shape (1, 3, 3, 3) (the output's), got (1, 3, 5, 5)", bad(conv_bw(cv(1, 3, 5, 5), cv(1, 2, 5, 5), cv(3, 2, 3, 3), 1))) \
  X_(conv_bw_dtype, DT_ERR_DTYPE, "dt_f_conv2d_backward:", "x is float32 and grad_output is float64", bad(conv_bw(cv_t(DT_F64, 1, 3, 3, 3), cv(1, 2, 5, 5), cv(3, 2, 3, 3), 1))) \
  X_(conv_bw_groups, DT_ERR_SHAPE, "dt_f_conv2d_backward:", "groups 3 does not divide x's 2 channels", bad(conv_bw(cv(1, 3, 3, 3), cv(1, 2, 5, 5), cv(3, 2, 3, 3), 3))) \
  X_(conv_bw_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_f_conv2d_backward:", "grad_output is on cuda:0 and x is on cpu", GPUS(1, bad(conv_bw(cv_g(1, 3, 3, 3), cv(1, 2, 5, 5), cv(3, 2, 3, 3), 1)))) \
  X_(maxpool_null, DT_ERR_INVALID_ARGUMENT, "dt_f_max_pool2d:", "=x is NULL", nul(dt_f_max_pool2d(NULL, 2, 2, 0)))            \
  X_(maxpool_kernel0, DT_ERR_INVALID_ARGUMENT, "dt_f_max_pool2d:", "=kernel size must be at least 1, got (0, 0)", nul(dt_f_max_pool2d(cv(1, 2, 5, 5), 0, 1, 0))) \
  X_(maxpool_stride_neg, DT_ERR_INVALID_ARGUMENT, "dt_f_max_pool2d:", "stride must be at least 1 (0: the kernel size), got (-1, -1)", nul(dt_f_max_pool2d(cv(1, 2, 5, 5), 2, -1, 0))) \
  X_(maxpool_padding_half, DT_ERR_INVALID_ARGUMENT, "dt_f_max_pool2d:", "=padding must be between 0 and half the kernel size, got (2, 2) for kernel (3, 3)", nul(dt_f_max_pool2d(cv(1, 2, 5, 5), 3, 1, 2))) \
  X_(maxpool_padding_neg, DT_ERR_INVALID_ARGUMENT, "dt_f_max_pool2d:", "padding|(0, -1)", nul(dt_f_max_pool2d_ex(cv(1, 2, 5, 5), 3, 3, 1, 1, 0, -1, NULL))) \
  X_(maxpool_small, DT_ERR_SHAPE, "dt_f_max_pool2d:", "=input smaller than the kernel: x (1, 2, 2, 2) padded by (0, 0) against kernel (3, 3)", nul(dt_f_max_pool2d(cv(1, 2, 2, 2), 3, 1, 0))) \
  X_(maxpool_3d, DT_ERR_SHAPE, "dt_f_max_pool2d:", "4-d (n, c, h, w)|(2, 3, 4)", nul(dt_f_max_pool2d(B3, 2, 2, 0)))          \
  X_(maxpool_int, DT_ERR_DTYPE, "dt_f_max_pool2d:", "x is int64", nul(dt_f_max_pool2d(cv_t(DT_I64, 1, 2, 5, 5), 2, 2, 0)))   \
  X_(maxpool_bw_null_idx, DT_ERR_INVALID_ARGUMENT, "dt_f_max_pool2d_backward:", "=indices is NULL", nul(dt_f_max_pool2d_backward(cv(1, 2, 2, 2), cv(1, 2, 5, 5), NULL, 2, 2, 2, 2, 0, 0))) \
  X_(maxpool_bw_idx_dtype, DT_ERR_DTYPE, "dt_f_max_pool2d_backward:", "indices must be int64|float32", nul(dt_f_max_pool2d_backward(cv(1, 2, 2, 2), cv(1, 2, 5, 5), cv(1, 2, 2, 2), 2, 2, 2, 2, 0, 0))) \
  X_(maxpool_bw_idx_shape, DT_ERR_SHAPE, "dt_f_max_pool2d_backward:", "=expected indices of shape (1, 2, 2, 2) (the output's), got (1, 2, 3, 3)", nul(dt_f_max_pool2d_backward(cv(1, 2, 2, 2), cv(1, 2, 5, 5), cv_idx(1, 2, 3, 3), 2, 2, 2, 2, 0, 0))) \
  X_(maxpool_bw_gy_shape, DT_ERR_SHAPE, "dt_f_max_pool2d_backward:", "expected grad_output of shape (1, 2, 2, 2)|(1, 2, 3, 3)", nul(dt_f_max_pool2d_backward(cv(1, 2, 3, 3), cv(1, 2, 5, 5), cv_idx(1, 2, 2, 2), 2, 2, 0, 0, 0, 0))) \
  X_(maxpool_bw_gpu_idx, DT_ERR_DEVICE_MISMATCH, "dt_f_max_pool2d_backward:", "indices is on cpu and x is on cuda:0", GPUS(1, nul(dt_f_max_pool2d_backward(cv_g(1, 2, 2, 2), cv_g(1, 2, 5, 5), cv_idx(1, 2, 2, 2), 2, 2, 2, 2, 0, 0)))) \
  X_(maxpool_gpu_ok, DT_OK, "", "", GPUS(1, nul(dt_f_max_pool2d(cv_g(1, 2, 5, 5), 3, 2, 1))))                               \
  X_(avgpool_padding_half, DT_ERR_INVALID_ARGUMENT, "dt_f_avg_pool2d:", "half the kernel size|(2, 1)|(3, 2)", nul(dt_f_avg_pool2d_ex(cv(1, 2, 5, 5), 3, 2, 1, 1, 2, 1))) \
  X_(avgpool_small, DT_ERR_SHAPE, "dt_f_avg_pool2d:", "input smaller than the kernel", nul(dt_f_avg_pool2d_ex(cv(1, 2, 5, 1), 2, 2, 1, 1, 0, 0))) \
  X_(avgpool_f64_ok, DT_OK, "", "", nul(dt_f_avg_pool2d(cv_t(DT_F64, 1, 2, 5, 5), 2, 0, 1)))                                \
  X_(avgpool_bw_shape, DT_ERR_SHAPE, "dt_f_avg_pool2d_backward:", "expected grad_output of shape (1, 2, 3, 3)|(1, 2, 2, 2)", nul(dt_f_avg_pool2d_backward(cv(1, 2, 2, 2), cv(1, 2, 5, 5), 2, 2, 2, 2, 1, 1))) \
  X_(avgpool_bw_null, DT_ERR_INVALID_ARGUMENT, "dt_f_avg_pool2d_backward:", "=grad_output is NULL", nul(dt_f_avg_pool2d_backward(NULL, cv(1, 2, 5, 5), 2, 2, 2, 2, 1, 1))) \
  X_(avgpool_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_f_avg_pool2d_backward:", "grad_output is on cpu and x is on cuda:0", GPUS(1, nul(dt_f_avg_pool2d_backward(cv(1, 2, 3, 3), cv_g(1, 2, 5, 5), 2, 2, 2, 2, 1, 1)))) \
  X_(adaptive_zero, DT_ERR_INVALID_ARGUMENT, "dt_f_adaptive_avg_pool2d:", "=output size must be at least 1, got (0, 3)", nul(dt_f_adaptive_avg_pool2d(cv(1, 2, 5, 5), 0, 3))) \
  X_(adaptive_too_large, DT_ERR_SHAPE, "dt_f_adaptive_avg_pool2d:", "=too large: output size (4611686018427387904, 1) for x (1, 2, 5, 5)", nul(dt_f_adaptive_avg_pool2d(cv(1, 2, 5, 5), (int64_t)1 << 62, 1))) \
  X_(adaptive_int, DT_ERR_DTYPE, "dt_f_adaptive_avg_pool2d:", "x is int32", nul(dt_f_adaptive_avg_pool2d(cv_t(DT_I32, 1, 2, 5, 5), 1, 1))) \
  X_(adaptive_empty_c, DT_ERR_SHAPE, "dt_f_adaptive_avg_pool2d:", "non-zero channels|(1, 0, 5, 5)", nul(dt_f_adaptive_avg_pool2d(cv(1, 0, 5, 5), 1, 1))) \
  X_(adaptive_bw_shape, DT_ERR_SHAPE, "dt_f_adaptive_avg_pool2d_backward:", "(1, 2, out_h, out_w)|(1, 3, 2, 2)", nul(dt_f_adaptive_avg_pool2d_backward(cv(1, 3, 2, 2), cv(1, 2, 5, 5)))) \
  X_(adaptive_bw_dtype, DT_ERR_DTYPE, "dt_f_adaptive_avg_pool2d_backward:", "x is float32 and grad_output is float64", nul(dt_f_adaptive_avg_pool2d_backward(cv_t(DT_F64, 1, 2, 2, 2), cv(1, 2, 5, 5)))) \
  X_(adaptive_gpu_ok, DT_OK, "", "", GPUS(1, nul(dt_f_adaptive_avg_pool2d(cv_g(1, 2, 5, 5), 7, 2))))                          \
  /* dt_copy_ is one of the functions that move data: any two devices, same dtype and shape */                              \
  X_(copy_gpu_from_cpu_ok, DT_OK, "", "", GPUS(1, bad(dt_copy_(G0, F))))                                                    \
  X_(copy_gpu1_from_gpu0_ok, DT_OK, "", "", GPUS(2, bad(dt_copy_(G1, G0))))                                                 \
  X_(copy_gpu_dtype, DT_ERR_DTYPE, "dt_copy_:", "=expected tensors of one dtype, but dst is float32 and src is float64 (convert one with dt_cast)", GPUS(1, bad(dt_copy_(G0, D)))) \
  X_(copy_gpu_shape, DT_ERR_SHAPE, "dt_copy_:", "=dst has shape (2, 3) but src has shape (3,)", GPUS(1, bad(dt_copy_(F, G0V)))) \
  X_(copy_gpu1_shape, DT_ERR_SHAPE, "dt_copy_:", "=dst has shape (2, 3) but src has shape (2, 4, 5)", GPUS(2, bad(dt_copy_(G1, G0C3)))) \
  /* printing */                                                                                                            \
  X_(print_null, DT_ERR_INVALID_ARGUMENT, "dt_print:", "t is NULL", bad(dt_print(NULL)))                                    \
  X_(fprint_null_f, DT_ERR_INVALID_ARGUMENT, "dt_fprint:", "f is NULL", bad(dt_fprint(NULL, F)))                            \
  X_(fprint_readonly, DT_ERR_IO, "dt_fprint:", "writing", bad(dt_fprint(RO, F)))                                         \
  X_(fprint_null_t, DT_ERR_INVALID_ARGUMENT, "dt_fprint:", "t is NULL", bad(dt_fprint(stdout, NULL)))                       \
  X_(snprint_null_t, DT_ERR_INVALID_ARGUMENT, "dt_snprint:", "t is NULL", neg(dt_snprint(SMALLBUF, sizeof SMALLBUF, NULL)))  \
  X_(snprint_null_buf, DT_ERR_INVALID_ARGUMENT, "dt_snprint:", "buf is NULL|10", neg(dt_snprint(NULL, 10, F)))              \
  X_(snprint_measure_ok, DT_OK, "", "", dt_snprint(NULL, 0, F) <= 0)                                                       \
  X_(snprint_tiny_ok, DT_OK, "", "", dt_snprint(SMALLBUF, 1, F) <= 0 || SMALLBUF[0] != 0)                                 \
  X_(module_print_null, DT_ERR_INVALID_ARGUMENT, "dt_module_print:", "m is NULL", bad(dt_module_print(NULL)))              \
  X_(module_fprint_null_f, DT_ERR_INVALID_ARGUMENT, "dt_module_fprint:", "f is NULL", bad(dt_module_fprint(NULL, NET)))     \
  X_(module_fprint_null_m, DT_ERR_INVALID_ARGUMENT, "dt_module_fprint:", "m is NULL", bad(dt_module_fprint(stdout, NULL)))  \
  X_(module_fprint_readonly, DT_ERR_IO, "dt_module_fprint:", "writing", bad(dt_module_fprint(RO, NET)))                      \
  X_(module_snprint_null_m, DT_ERR_INVALID_ARGUMENT, "dt_module_snprint:", "m is NULL", neg(dt_module_snprint(SMALLBUF, sizeof SMALLBUF, NULL))) \
  X_(module_snprint_null_buf, DT_ERR_INVALID_ARGUMENT, "dt_module_snprint:", "buf is NULL|10", neg(dt_module_snprint(NULL, 10, NET))) \
  /* memory */                                                                                                              \
  X_(stats_null, DT_ERR_INVALID_ARGUMENT, "dt_memory_stats_get:", "out is NULL", bad(dt_memory_stats_get(dt_cpu(), NULL)))  \
  X_(stats_gpu7, DT_ERR_NO_DEVICE, "dt_memory_stats_get:", "cuda:7", bad(dt_memory_stats_get(GPU7, &STATS)))                \
  X_(stats_alien, DT_ERR_INVALID_ARGUMENT, "dt_memory_stats_get:", "device type 5", bad(dt_memory_stats_get(ALIEN, &STATS))) \
  X_(empty_cache_gpum, DT_ERR_INVALID_ARGUMENT, "dt_empty_cache:", "-1", bad(dt_empty_cache(GPUM)))                         \
  X_(empty_cache_cpu3, DT_ERR_NO_DEVICE, "dt_empty_cache:", "cpu:3", bad(dt_empty_cache(CPU3)))                             \
  /* modules */                                                                                                             \
  X_(linear_neg_in, DT_ERR_SHAPE, "dt_linear:", "in_features|-1", nulm(dt_linear(-1, 2)))                                   \
  X_(linear_zero_out, DT_ERR_SHAPE, "dt_linear:", "out_features|0", nulm(dt_linear(2, 0)))                                  \
  X_(linear_huge, DT_ERR_SHAPE, "dt_linear:", "too large", nulm(dt_linear(U64(41), 1)))                                     \
  X_(linear_overflow, DT_ERR_SHAPE, "dt_linear:", "too large", nulm(dt_linear(U64(40), U64(40))))                           \
  X_(linear_max, DT_ERR_SHAPE, "dt_linear:", "too large", nulm(dt_linear(BIG, BIG)))                                        \
  X_(linear_oom, DT_ERR_OUT_OF_MEMORY, "dt_linear:", "out of memory", nulm(dt_linear(U64(30), U64(28))))                   \
  X_(seq_add_null_seq, DT_ERR_INVALID_ARGUMENT, "dt_sequential_add:", "seq is NULL", bad(dt_sequential_add(NULL, dt_relu_layer()))) \
  X_(seq_add_null_layer, DT_ERR_INVALID_ARGUMENT, "dt_sequential_add:", "layer is NULL", bad(dt_sequential_add(NET, NULL))) \
  X_(seq_add_not_seq, DT_ERR_INVALID_ARGUMENT, "dt_sequential_add:", "seq is not a sequential", bad(dt_sequential_add(RELU, dt_relu_layer()))) \
  X_(seq_add_self, DT_ERR_INVALID_ARGUMENT, "dt_sequential_add:", "itself", bad(dt_sequential_add(NET, NET)))              \
  X_(seq_add_gpu_layer, DT_ERR_DEVICE_MISMATCH, "dt_sequential_add:", "=the layer is on cuda:0 but the sequential is on cpu (move one with dt_module_to)", GPUS(1, bad(dt_sequential_add(NET, linear_on(2, 2, 0))))) \
  X_(seq_add_cpu_layer, DT_ERR_DEVICE_MISMATCH, "dt_sequential_add:", "=the layer is on cpu but the sequential is on cuda:0 (move one with dt_module_to)", GPUS(1, bad(dt_sequential_add(NETG, dt_linear(2, 2))))) \
  X_(seq_add_gpu1_layer, DT_ERR_DEVICE_MISMATCH, "dt_sequential_add:", "=the layer is on cuda:1 but the sequential is on cuda:0 (move one with dt_module_to)", GPUS(2, bad(dt_sequential_add(NETG, linear_on(2, 2, 1))))) \
  X_(seq_get_null, DT_ERR_INVALID_ARGUMENT, "dt_sequential_get:", "seq is NULL", dt_sequential_get(NULL, 0) == NULL)        \
  X_(seq_get_not_seq, DT_ERR_INVALID_ARGUMENT, "dt_sequential_get:", "not a sequential", dt_sequential_get(RELU, 0) == NULL) \
  X_(seq_get_range, DT_ERR_INVALID_ARGUMENT, "dt_sequential_get:", "index 3|3 layers", dt_sequential_get(NET, 3) == NULL)   \
  X_(seq_get_range_neg, DT_ERR_INVALID_ARGUMENT, "dt_sequential_get:", "index -4", dt_sequential_get(NET, -4) == NULL)      \
  X_(seq_get_intmin, DT_ERR_INVALID_ARGUMENT, "dt_sequential_get:", "out of range", dt_sequential_get(NET, INT_MIN) == NULL) \
  X_(seq_len_null, DT_ERR_INVALID_ARGUMENT, "dt_sequential_len:", "seq", neg(dt_sequential_len(NULL)))                      \
  X_(seq_len_not_seq, DT_ERR_INVALID_ARGUMENT, "dt_sequential_len:", "not a sequential", neg(dt_sequential_len(RELU)))      \
  X_(module_to_null, DT_ERR_INVALID_ARGUMENT, "dt_module_to:", "m is NULL", bad(dt_module_to(NULL, dt_cpu())))              \
  X_(module_to_gpu7, DT_ERR_NO_DEVICE, "dt_module_to:", "cuda:7", bad(dt_module_to(NET, GPU7)))                             \
  X_(module_to_gpum, DT_ERR_INVALID_ARGUMENT, "dt_module_to:", "-1", bad(dt_module_to(NET, GPUM)))                          \
  X_(module_to_cpu3, DT_ERR_NO_DEVICE, "dt_module_to:", "cpu:3", bad(dt_module_to(NET, CPU3)))                              \
  X_(module_to_alien, DT_ERR_INVALID_ARGUMENT, "dt_module_to:", "device type 5", bad(dt_module_to(NET, ALIEN)))             \
  X_(module_to_dtype_null, DT_ERR_INVALID_ARGUMENT, "dt_module_to_dtype:", "m is NULL", bad(dt_module_to_dtype(NULL, DT_F64))) \
  X_(module_to_dtype_int, DT_ERR_DTYPE, "dt_module_to_dtype:", "int32", bad(dt_module_to_dtype(NET, DT_I32)))               \
  X_(module_to_dtype_bad, DT_ERR_DTYPE, "dt_module_to_dtype:", "unknown dtype", bad(dt_module_to_dtype(NET, BADT)))         \
  X_(module_device_null, DT_ERR_INVALID_ARGUMENT, "dt_module_device:", "m is NULL", dt_module_device(NULL).type == DT_CPU)   \
  X_(forward_null_m, DT_ERR_INVALID_ARGUMENT, "dt_forward:", "m is NULL", nul(dt_forward(NULL, X)))                         \
  X_(forward_null_x, DT_ERR_INVALID_ARGUMENT, "dt_forward:", "x is NULL", nul(dt_forward(NET, NULL)))                       \
  X_(forward_dtype, DT_ERR_DTYPE, "dt_forward:", "x is float64|float32", nul(dt_forward(NET, D)))                           \
  X_(forward_1d, DT_ERR_SHAPE, "dt_forward:", "(3,)", nul(dt_forward(NET, V)))                                             \
  X_(forward_features, DT_ERR_SHAPE, "dt_forward:", "(2, 2, 2, 2)", nul(dt_forward(NET, M4)))                              \
  X_(forward_in, DT_ERR_SHAPE, "dt_forward:", "(5, 2)|3 features", nul(dt_forward(NET, Y)))                                \
  X_(forward_gpu_x, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "=x is on cuda:0 but 0.weight is on cpu (move one with dt_to or dt_module_to)", GPUS(1, nul(dt_forward(NET, GX)))) \
  X_(forward_gpu_net, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "=x is on cpu but 0.weight is on cuda:0 (move one with dt_to or dt_module_to)", GPUS(1, nul(dt_forward(NETG, X)))) \
  X_(forward_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "x is on cuda:0|0.weight is on cpu", GPUS(1, nul(dt_forward(NET, GD0)))) \
  X_(forward_device_before_shape, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "x is on cuda:0|0.weight is on cpu", GPUS(1, nul(dt_forward(NET, G0V)))) \
  X_(forward_lazy_gpu_x, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "x is on cuda:0|0.weight is on cpu", GPUS(1, nul(dt_forward(LAZY, GX)))) \
  X_(forward_relu_gpu_x, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "=x is on cuda:0 but the module is on cpu (move one with dt_to or dt_module_to)", GPUS(1, nul(dt_forward(RELU, G0)))) \
  X_(forward_gpu1_x, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "=x is on cuda:1 but 0.weight is on cuda:0 (move one with dt_to or dt_module_to)", GPUS(2, nul(dt_forward(NETG, G1X)))) \
  X_(weight_null, DT_ERR_INVALID_ARGUMENT, "dt_linear_weight:", "m", dt_linear_weight(NULL) == NULL)                       \
  X_(weight_relu, DT_ERR_INVALID_ARGUMENT, "dt_linear_weight:", "not a linear layer", dt_linear_weight(RELU) == NULL)       \
  X_(weight_lazy, DT_ERR_INVALID_ARGUMENT, "dt_linear_weight:", "lazy", dt_linear_weight(dt_sequential_get(LAZY, 0)) == NULL) \
  X_(bias_seq, DT_ERR_INVALID_ARGUMENT, "dt_linear_bias:", "not a linear layer", dt_linear_bias(NET) == NULL)               \
  X_(bias_lazy, DT_ERR_INVALID_ARGUMENT, "dt_linear_bias:", "lazy", dt_linear_bias(dt_sequential_get(LAZY, 0)) == NULL)     \
  X_(num_params_null, DT_ERR_INVALID_ARGUMENT, "dt_module_num_params:", "m is NULL", neg(dt_module_num_params(NULL)))       \
  X_(param_null, DT_ERR_INVALID_ARGUMENT, "dt_module_param:", "m is NULL", dt_module_param(NULL, 0, NULL) == NULL)          \
  X_(param_range, DT_ERR_INVALID_ARGUMENT, "dt_module_param:", "index 4|4 parameters", dt_module_param(NET, 4, NULL) == NULL) \
  X_(param_neg, DT_ERR_INVALID_ARGUMENT, "dt_module_param:", "index -1", dt_module_param(NET, -1, NULL) == NULL)            \
  X_(param_lazy, DT_ERR_INVALID_ARGUMENT, "dt_module_param:", "0.weight|lazy", dt_module_param(LAZY, 0, NULL) == NULL) \
  X_(param_relu, DT_ERR_INVALID_ARGUMENT, "dt_module_param:", "0 parameters", dt_module_param(RELU, 0, NULL) == NULL)       \
  X_(grad_null, DT_ERR_INVALID_ARGUMENT, "dt_module_grad:", "m is NULL", dt_module_grad(NULL, 0) == NULL)                   \
  X_(grad_range, DT_ERR_INVALID_ARGUMENT, "dt_module_grad:", "index 9", dt_module_grad(NET, 9) == NULL)                     \
  X_(mse_null_pred, DT_ERR_INVALID_ARGUMENT, "dt_mse_loss:", "=pred is NULL", nul(dt_mse_loss(NULL, Y)))                    \
  X_(mse_null_target, DT_ERR_INVALID_ARGUMENT, "dt_mse_loss:", "=target is NULL", nul(dt_mse_loss(Y, NULL)))                \
  X_(mse_shape, DT_ERR_SHAPE, "dt_mse_loss:", "=pred has shape (5, 2) but target has shape (5, 3)", nul(dt_mse_loss(Y, X))) \
  X_(mse_dtype, DT_ERR_DTYPE, "dt_mse_loss:", "=expected tensors of one dtype, but pred is float32 and target is float64 (convert one with dt_cast)", nul(dt_mse_loss(F, D))) \
  X_(mse_int, DT_ERR_DTYPE, "dt_mse_loss:", "=pred is int32, but this operation needs float32, float64, float16 or bfloat16 (convert with dt_cast)", nul(dt_mse_loss(I, I))) \
  X_(mse_gpu_target, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss:", "=expected all tensors on the same device, but target is on cuda:0 and pred is on cpu (move one with dt_to)", GPUS(1, nul(dt_mse_loss(Y, GY)))) \
  X_(mse_gpu_pred, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss:", "=expected all tensors on the same device, but target is on cpu and pred is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_mse_loss(GY, Y)))) \
  X_(mse_device_before_shape, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss:", "target is on cuda:0|pred is on cpu", GPUS(1, nul(dt_mse_loss(X, GY)))) \
  X_(mse_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss:", "target is on cuda:0|pred is on cpu", GPUS(1, nul(dt_mse_loss(I, GD0)))) \
  X_(mse_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss:", "=expected all tensors on the same device, but target is on cuda:1 and pred is on cuda:0 (move one with dt_to)", GPUS(2, nul(dt_mse_loss(GY, G1Y)))) \
  X_(mse_grad_null_pred, DT_ERR_INVALID_ARGUMENT, "dt_mse_loss_grad:", "=pred is NULL", nul(dt_mse_loss_grad(NULL, F)))     \
  X_(mse_grad_null, DT_ERR_INVALID_ARGUMENT, "dt_mse_loss_grad:", "=target is NULL", nul(dt_mse_loss_grad(F, NULL)))        \
  X_(mse_grad_shape, DT_ERR_SHAPE, "dt_mse_loss_grad:", "=pred has shape (2, 3) but target has shape (3,)", nul(dt_mse_loss_grad(F, V))) \
  X_(mse_grad_dtype, DT_ERR_DTYPE, "dt_mse_loss_grad:", "=expected tensors of one dtype, but pred is float64 and target is float32 (convert one with dt_cast)", nul(dt_mse_loss_grad(YD, Y))) \
  X_(mse_grad_int, DT_ERR_DTYPE, "dt_mse_loss_grad:", "=pred is int64, but this operation needs float32, float64, float16 or bfloat16 (convert with dt_cast)", nul(dt_mse_loss_grad(L, L))) \
  X_(mse_grad_gpu_target, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss_grad:", "=expected all tensors on the same device, but target is on cuda:0 and pred is on cpu (move one with dt_to)", GPUS(1, nul(dt_mse_loss_grad(Y, GY)))) \
  X_(mse_grad_gpu_pred, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss_grad:", "=expected all tensors on the same device, but target is on cpu and pred is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_mse_loss_grad(GY, Y)))) \
  X_(mse_grad_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss_grad:", "target is on cuda:0|pred is on cpu", GPUS(1, nul(dt_mse_loss_grad(YD, GY)))) \
  X_(mse_grad_gpu1_gpu0, DT_ERR_DEVICE_MISMATCH, "dt_mse_loss_grad:", "=expected all tensors on the same device, but target is on cuda:0 and pred is on cuda:1 (move one with dt_to)", GPUS(2, nul(dt_mse_loss_grad(G1Y, GY)))) \
  X_(zero_grad_null, DT_ERR_INVALID_ARGUMENT, "dt_zero_grad:", "m is NULL", bad(dt_zero_grad(NULL)))                        \
  X_(backward_null_m, DT_ERR_INVALID_ARGUMENT, "dt_backward:", "=m is NULL", nul(dt_backward(NULL, Y)))                     \
  X_(backward_null_g, DT_ERR_INVALID_ARGUMENT, "dt_backward:", "=grad_output is NULL", nul(dt_backward(NET, NULL)))         \
  X_(backward_no_forward, DT_ERR_INVALID_ARGUMENT, "dt_backward:", "=no forward to go back through (call dt_forward first)", nul(dt_backward(NET, Y))) \
  X_(backward_relu_no_forward, DT_ERR_INVALID_ARGUMENT, "dt_backward:", "forward", nul(dt_backward(RELU, Y)))               \
  X_(backward_user_seq, DT_ERR_UNSUPPORTED, "dt_backward:", "m holds dt_conv2d|dt_module_new's kind|dt_autograd_backward", backward_user(0)) \
  X_(backward_params_user, DT_ERR_UNSUPPORTED, "dt_backward_params:", "m is Block|dt_autograd_backward", backward_user(1)) \
  X_(backward_user_after_forward, DT_ERR_UNSUPPORTED, "dt_backward:", "m holds dt_conv2d|dt_autograd_backward", backward_user(2)) \
  X_(backward_dtype, DT_ERR_DTYPE, "dt_backward:", "=grad_output is float64 but the module is float32", nul(dt_backward(NETR, YD))) \
  X_(backward_shape, DT_ERR_SHAPE, "dt_backward:", "=grad_output has shape (2, 3) but the forward gave (5, 2)", nul(dt_backward(NETR, F))) \
  X_(backward_gpu_grad, DT_ERR_DEVICE_MISMATCH, "dt_backward:", "=grad_output is on cuda:0 but the module is on cpu", GPUS(1, nul(dt_backward(NETR, GY)))) \
  X_(backward_gpu_net, DT_ERR_DEVICE_MISMATCH, "dt_backward:", "=grad_output is on cpu but the module is on cuda:0", GPUS(1, nul(dt_backward(NETG, Y)))) \
  X_(backward_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_backward:", "grad_output is on cuda:0|module is on cpu", GPUS(1, nul(dt_backward(NETR, GD0)))) \
  X_(backward_gpu1_grad, DT_ERR_DEVICE_MISMATCH, "dt_backward:", "=grad_output is on cuda:1 but the module is on cuda:0", GPUS(2, nul(dt_backward(NETG, G1Y)))) \
  X_(backward_params_null_m, DT_ERR_INVALID_ARGUMENT, "dt_backward_params:", "=m is NULL", bad(dt_backward_params(NULL, Y))) \
  X_(backward_params_null_g, DT_ERR_INVALID_ARGUMENT, "dt_backward_params:", "=grad_output is NULL", bad(dt_backward_params(NET, NULL))) \
  X_(backward_params_no_forward, DT_ERR_INVALID_ARGUMENT, "dt_backward_params:", "=no forward to go back through (call dt_forward first)", bad(dt_backward_params(NET, Y))) \
  X_(backward_params_relu_no_forward, DT_ERR_INVALID_ARGUMENT, "dt_backward_params:", "forward", bad(dt_backward_params(RELU, Y))) \
  X_(backward_params_dtype, DT_ERR_DTYPE, "dt_backward_params:", "=grad_output is float64 but the module is float32", bad(dt_backward_params(NETR, YD))) \
  X_(backward_params_shape, DT_ERR_SHAPE, "dt_backward_params:", "=grad_output has shape (2, 3) but the forward gave (5, 2)", bad(dt_backward_params(NETR, F))) \
  X_(backward_params_gpu_grad, DT_ERR_DEVICE_MISMATCH, "dt_backward_params:", "=grad_output is on cuda:0 but the module is on cpu", GPUS(1, bad(dt_backward_params(NETR, GY)))) \
  X_(backward_params_gpu_net, DT_ERR_DEVICE_MISMATCH, "dt_backward_params:", "=grad_output is on cpu but the module is on cuda:0", GPUS(1, bad(dt_backward_params(NETG, Y)))) \
  X_(backward_params_device_before_dtype, DT_ERR_DEVICE_MISMATCH, "dt_backward_params:", "grad_output is on cuda:0|module is on cpu", GPUS(1, bad(dt_backward_params(NETR, GD0)))) \
  X_(backward_params_gpu1_grad, DT_ERR_DEVICE_MISMATCH, "dt_backward_params:", "=grad_output is on cuda:1 but the module is on cuda:0", GPUS(2, bad(dt_backward_params(NETG, G1Y)))) \
  X_(sgd_null, DT_ERR_INVALID_ARGUMENT, "dt_sgd_step:", "m is NULL", bad(dt_sgd_step(NULL, 0.1)))                           \
  X_(sgd_nan, DT_ERR_INVALID_ARGUMENT, "dt_sgd_step:", "lr|nan", bad(dt_sgd_step(NET, NAN)))                                \
  X_(sgd_inf, DT_ERR_INVALID_ARGUMENT, "dt_sgd_step:", "lr|inf", bad(dt_sgd_step(NET, -INFINITY)))                          \
  X_(save_null_m, DT_ERR_INVALID_ARGUMENT, "dt_module_save:", "m is NULL", bad(dt_module_save(NULL, OUTPATH)))              \
  X_(save_null_path, DT_ERR_INVALID_ARGUMENT, "dt_module_save:", "path is NULL", bad(dt_module_save(NET, NULL)))            \
  X_(save_lazy, DT_ERR_INVALID_ARGUMENT, "dt_module_save:", "0.weight|lazy", bad(dt_module_save(LAZY, OUTPATH)))            \
  X_(save_nodir, DT_ERR_IO, "dt_module_save:", "no/such/dir", bad(dt_module_save(NET, OUTPATH)))                            \
  X_(load_null_m, DT_ERR_INVALID_ARGUMENT, "dt_module_load:", "m is NULL", bad(dt_module_load(NULL, BADFILE)))              \
  X_(load_null_path, DT_ERR_INVALID_ARGUMENT, "dt_module_load:", "path is NULL", bad(dt_module_load(NET, NULL)))            \
  X_(load_missing, DT_ERR_IO, "dt_module_load:", "no/such/dir", bad(dt_module_load(NET, OUTPATH)))                          \
  X_(load_lazy, DT_ERR_INVALID_ARGUMENT, "dt_module_load:", "0.weight|lazy", bad(dt_module_load(LAZY, BADFILE)))            \
  X_(load_corrupt, DT_ERR_FORMAT, "dt_module_load:", "header length", bad(dt_module_load(NET, BADFILE)))                    \
  X_(load_dir, DT_ERR_IO, "dt_module_load:", "build", bad(dt_module_load(NET, "build")))                                    \
  X_(load_dir_words, DT_ERR_IO, "dt_module_load:", "=build is a directory, not a regular file", bad(dt_module_load(NET, "build"))) \
  X_(load_device, DT_ERR_IO, "dt_module_load:", "=/dev/null is a character device, not a regular file", POSIX_ONLY(bad(dt_module_load(NET, "/dev/null")))) \
  X_(load_missing_reason, DT_ERR_IO, "dt_module_load:", "=cannot open build/no/such/dir/x.safetensors: No such file or directory", bad(dt_module_load(NET, OUTPATH))) \
  X_(save_nodir_reason, DT_ERR_IO, "dt_module_save:", "=cannot open build/no/such/dir/x.safetensors for writing (a temporary file beside it could not be created: No such file or directory)", bad(dt_module_save(NET, OUTPATH))) \
  X_(load_text_file, DT_ERR_FORMAT, "dt_module_load:", "is not a safetensors file: its first 8 bytes|read as the header length, give 3475222254926655346, which|not within the format's 2 bytes to 100 MB", bad(dt_module_load(NET, TEXTFILE))) \
  X_(load_other_net, DT_ERR_SHAPE, "dt_module_load:", "\"0.weight\" has shape (4, 3) but the module's has (4, 5); the file also holds|\"2.weight\" and 1 more, which the module does not have; the module's \"1.weight\" and 1 more are not in the file", bad(load_other_net(5, 1, 0))) \
  X_(load_other_net_fewer, DT_ERR_SHAPE, "dt_module_load:", "\"0.weight\" has shape (4, 3) but the module's has (4, 5); the file also holds|\"2.weight\" and 1 more, which the module does not have", bad(load_other_net(5, 0, 0))) \
  X_(load_other_net_wide, DT_ERR_SHAPE, "dt_module_load:", "\"0.weight\" has shape (4, 3) but the module's has (8, 3)", bad(load_other_net(3, 0, 1))) \
  X_(load_other_net_names, DT_ERR_FORMAT, "dt_module_load:", "holds \"2.weight\" and 1 more, which the module does not have; the module's \"1.weight\" and 1 more are not in the file", bad(load_other_net(3, 1, 0))) \
  X_(load_cut_short, DT_ERR_FORMAT, "dt_module_load:", "is not a safetensors file, or is cut short: its first 8 bytes|read as the header length, give 100, but only 2 bytes follow them", bad(dt_module_load(NET, SHORTFILE))) \
  X_(seq_add_too_deep, DT_ERR_INVALID_ARGUMENT, "dt_sequential_add:", "=sequentials nest at most 64 deep (DT_MODULE_MAX_DEPTH), but seq is 64 deep and the layer holds 1 more, which would make 65", bad(add_too_deep())) \
  X_(forward_lazy_zero_features, DT_ERR_SHAPE, "dt_forward:", "=layer 0 (linear, lazy -> 2) takes its in_features from its first input, but the network's input has shape (2, 0): 0 features, nothing to weigh (the layer stays lazy)", lazy_zero_features(0)) \
  X_(forward_lazy_zero_features_later, DT_ERR_SHAPE, "dt_forward:", "=layer 1 (linear, lazy -> 2) takes its in_features from its first input, but its input has shape (2, 0) (the network's input has shape (2, 0)): 0 features, nothing to weigh (the layer stays lazy)", lazy_zero_features(1)) \
  X_(forward_in_words, DT_ERR_SHAPE, "dt_forward:", "=layer 0 (linear, 3 -> 4) takes 3 features, but the network's input has shape (5, 2)", nul(dt_forward(NET, Y))) \
  /* interop */                                                                                                             \
  X_(to_dlpack_null, DT_ERR_INVALID_ARGUMENT, "dt_to_dlpack:", "t is NULL", dt_to_dlpack(NULL) == NULL)                     \
  X_(to_dlpack_legacy_null, DT_ERR_INVALID_ARGUMENT, "dt_to_dlpack_legacy:", "t is NULL", dt_to_dlpack_legacy(NULL) == NULL) \
  X_(from_dlpack_null, DT_ERR_INVALID_ARGUMENT, "dt_from_dlpack:", "m is NULL", nul(dt_from_dlpack(NULL)))                  \
  X_(from_dlpack_v0, DT_ERR_UNSUPPORTED, "dt_from_dlpack:", "version 0.0|caller keeps", nul(dt_from_dlpack(&DLZ)))          \
  X_(from_dlpack_legacy_null, DT_ERR_INVALID_ARGUMENT, "dt_from_dlpack_legacy:", "m is NULL", nul(dt_from_dlpack_legacy(NULL))) \
  X_(from_dlpack_legacy_int0, DT_ERR_DTYPE, "dt_from_dlpack_legacy:", "int0|float32", nul(dt_from_dlpack_legacy(&DLZL)))    \
  X_(from_blob_null, DT_ERR_INVALID_ARGUMENT, "dt_from_blob:", "data is NULL for 3 elements", nul(dt_from_blob(NULL, dt_shape1(3), DT_F32, dt_cpu(), NULL, NULL))) \
  X_(from_blob_neg, DT_ERR_SHAPE, "dt_from_blob:", "negative dimension -2", nul(dt_from_blob(SMALLBUF, dt_shape1(-2), DT_F32, dt_cpu(), NULL, NULL))) \
  X_(from_blob_dtype, DT_ERR_DTYPE, "dt_from_blob:", "unknown dtype 9", nul(dt_from_blob(SMALLBUF, dt_shape1(2), BADT, dt_cpu(), NULL, NULL))) \
  X_(from_blob_gpu7, DT_ERR_NO_DEVICE, "dt_from_blob:", "cuda:7", nul(dt_from_blob(SMALLBUF, dt_shape1(2), DT_F32, GPU7, NULL, NULL))) \
  X_(from_blob_misaligned, DT_ERR_INVALID_ARGUMENT, "dt_from_blob:", "not aligned to the 8 bytes|float64", nul(dt_from_blob(SMALLBUF + 1, dt_shape1(2), DT_F64, dt_cpu(), NULL, NULL))) \
  X_(save_tensors_null_path, DT_ERR_INVALID_ARGUMENT, "dt_save_tensors:", "path is NULL", bad(dt_save_tensors(NULL, NAMES1, STK, 1))) \
  X_(save_tensors_neg_n, DT_ERR_INVALID_ARGUMENT, "dt_save_tensors:", "n is -1", bad(dt_save_tensors(OUTPATH, NAMES1, STK, -1))) \
  X_(save_tensors_null_names, DT_ERR_INVALID_ARGUMENT, "dt_save_tensors:", "names is NULL", bad(dt_save_tensors(OUTPATH, NULL, STK, 1))) \
  X_(save_tensors_dup, DT_ERR_INVALID_ARGUMENT, "dt_save_tensors:", "names[0] and names[1]|\"f\"", bad(dt_save_tensors(OUTPATH, NAMES2, STK, 2))) \
  X_(save_tensors_nodir, DT_ERR_IO, "dt_save_tensors:", "no/such/dir", bad(dt_save_tensors(OUTPATH, NAMES1, STK, 1)))        \
  X_(load_tensors_null_path, DT_ERR_INVALID_ARGUMENT, "dt_load_tensors:", "path is NULL", bad(dt_load_tensors(NULL, dt_cpu(), &LN, &LNAMES, &LTS))) \
  X_(load_tensors_null_ts, DT_ERR_INVALID_ARGUMENT, "dt_load_tensors:", "ts is NULL", bad(dt_load_tensors(BADFILE, dt_cpu(), &LN, &LNAMES, NULL))) \
  X_(load_tensors_gpu7, DT_ERR_NO_DEVICE, "dt_load_tensors:", "cuda:7", bad(dt_load_tensors(BADFILE, GPU7, &LN, &LNAMES, &LTS))) \
  X_(load_tensors_missing, DT_ERR_IO, "dt_load_tensors:", "no/such/dir", bad(dt_load_tensors(OUTPATH, dt_cpu(), &LN, &LNAMES, &LTS))) \
  X_(load_tensors_corrupt, DT_ERR_FORMAT, "dt_load_tensors:", "header length", bad(dt_load_tensors(BADFILE, dt_cpu(), &LN, &LNAMES, &LTS))) \
  X_(load_tensors_missing_reason, DT_ERR_IO, "dt_load_tensors:", "=cannot open build/no/such/dir/x.safetensors: No such file or directory", bad(dt_load_tensors(OUTPATH, dt_cpu(), &LN, &LNAMES, &LTS))) \
  X_(save_tensors_nodir_reason, DT_ERR_IO, "dt_save_tensors:", "=cannot open build/no/such/dir/x.safetensors for writing (a temporary file beside it could not be created: No such file or directory)", bad(dt_save_tensors(OUTPATH, NAMES1, STK, 1))) \
  X_(load_tensors_text_file, DT_ERR_FORMAT, "dt_load_tensors:", "is not a safetensors file: its first 8 bytes, read as the header length, give 3475222254926655346,", bad(dt_load_tensors(TEXTFILE, dt_cpu(), &LN, &LNAMES, &LTS))) \
  X_(load_tensors_cut_short, DT_ERR_FORMAT, "dt_load_tensors:", "is not a safetensors file, or is cut short|give 100, but only 2 bytes follow them", bad(dt_load_tensors(SHORTFILE, dt_cpu(), &LN, &LNAMES, &LTS))) \
  /* optimizers and no_grad */                                                                                         \
  X_(sgd_new_null, DT_ERR_INVALID_ARGUMENT, "dt_sgd:", "=m is NULL", nulo(dt_sgd(NULL, 0.1, 0, 0)))                              \
  X_(sgd_lr_neg, DT_ERR_INVALID_ARGUMENT, "dt_sgd:", "=invalid learning rate lr = -0.1 (expected a finite lr >= 0)", nulo(dt_sgd(NET, -0.1, 0, 0))) \
  X_(sgd_lr_nan, DT_ERR_INVALID_ARGUMENT, "dt_sgd:", "learning rate|nan", nulo(dt_sgd(NET, NAN, 0, 0)))                      \
  X_(sgd_lr_inf, DT_ERR_INVALID_ARGUMENT, "dt_sgd:", "learning rate|inf", nulo(dt_sgd(NET, INFINITY, 0, 0)))                 \
  X_(sgd_momentum_neg, DT_ERR_INVALID_ARGUMENT, "dt_sgd:", "=invalid momentum = -0.9 (expected a finite momentum >= 0)", nulo(dt_sgd(NET, 0.1, -0.9, 0))) \
  X_(sgd_wd_neg, DT_ERR_INVALID_ARGUMENT, "dt_sgd:", "=invalid weight_decay = -0.01 (expected a finite weight_decay >= 0)", nulo(dt_sgd(NET, 0.1, 0, -0.01))) \
  X_(sgd_no_params, DT_ERR_INVALID_ARGUMENT, "dt_sgd:", "m has no parameters", nulo(dt_sgd(RELU, 0.1, 0, 0)))               \
  X_(adam_null, DT_ERR_INVALID_ARGUMENT, "dt_adam:", "=m is NULL", nulo(dt_adam(NULL, 0.1, 0.9, 0.999, 1e-8, 0)))           \
  X_(adam_lr_neg, DT_ERR_INVALID_ARGUMENT, "dt_adam:", "learning rate|-1", nulo(dt_adam(NET, -1, 0.9, 0.999, 1e-8, 0)))     \
  X_(adam_beta1_one, DT_ERR_INVALID_ARGUMENT, "dt_adam:", "=invalid beta1 = 1 (expected 0 <= beta1 < 1)", nulo(dt_adam(NET, 0.1, 1, 0.999, 1e-8, 0))) \
  X_(adam_beta1_neg, DT_ERR_INVALID_ARGUMENT, "dt_adam:", "beta1 = -0.5", nulo(dt_adam(NET, 0.1, -0.5, 0.999, 1e-8, 0)))    \
  X_(adam_beta2_big, DT_ERR_INVALID_ARGUMENT, "dt_adam:", "=invalid beta2 = 1.5 (expected 0 <= beta2 < 1)", nulo(dt_adam(NET, 0.1, 0.9, 1.5, 1e-8, 0))) \
  X_(adam_eps_neg, DT_ERR_INVALID_ARGUMENT, "dt_adam:", "=invalid eps = -1 (expected a finite eps >= 0)", nulo(dt_adam(NET, 0.1, 0.9, 0.999, -1, 0))) \
  X_(adam_wd_neg, DT_ERR_INVALID_ARGUMENT, "dt_adam:", "weight_decay = -1", nulo(dt_adam(NET, 0.1, 0.9, 0.999, 1e-8, -1)))  \
  X_(adam_no_params, DT_ERR_INVALID_ARGUMENT, "dt_adam:", "m has no parameters", nulo(dt_adam(RELU, 0.1, 0.9, 0.999, 1e-8, 0))) \
  X_(adamw_null, DT_ERR_INVALID_ARGUMENT, "dt_adamw:", "=m is NULL", nulo(dt_adamw(NULL, 0.1, 0.9, 0.999, 1e-8, 0.01)))     \
  X_(adamw_lr_nan, DT_ERR_INVALID_ARGUMENT, "dt_adamw:", "learning rate|nan", nulo(dt_adamw(NET, NAN, 0.9, 0.999, 1e-8, 0.01))) \
  X_(adamw_beta2_nan, DT_ERR_INVALID_ARGUMENT, "dt_adamw:", "beta2 = nan", nulo(dt_adamw(NET, 0.1, 0.9, NAN, 1e-8, 0.01)))  \
  X_(adamw_wd_inf, DT_ERR_INVALID_ARGUMENT, "dt_adamw:", "weight_decay = inf", nulo(dt_adamw(NET, 0.1, 0.9, 0.999, 1e-8, INFINITY))) \
  X_(optimizer_step_null, DT_ERR_INVALID_ARGUMENT, "dt_optimizer_step:", "=o is NULL", bad(dt_optimizer_step(NULL)))        \
  X_(optimizer_step_grown, DT_ERR_INVALID_ARGUMENT, "dt_optimizer_step:", "=the module has 6 parameters but had 4 when the optimizer was made (make a new optimizer after changing the network)", step_after_growth()) \
  X_(optimizer_zero_grad_null, DT_ERR_INVALID_ARGUMENT, "dt_optimizer_zero_grad:", "=o is NULL", bad(dt_optimizer_zero_grad(NULL))) \
  X_(sgd_tensors_null, DT_ERR_INVALID_ARGUMENT, "dt_sgd_tensors:", "=params is NULL", nulo(dt_sgd_tensors(NULL, 1, 0.1, 0, 0))) \
  X_(sgd_tensors_lr_neg, DT_ERR_INVALID_ARGUMENT, "dt_sgd_tensors:", "learning rate|-1", nulo(dt_sgd_tensors(&F, 1, -1, 0, 0))) \
  X_(adam_tensors_null, DT_ERR_INVALID_ARGUMENT, "dt_adam_tensors:", "=params is NULL", opt_tensors_bad(0))            \
  X_(adam_tensors_none, DT_ERR_INVALID_ARGUMENT, "dt_adam_tensors:", "n = 0|at least one parameter", opt_tensors_bad(1)) \
  X_(adam_tensors_null_one, DT_ERR_INVALID_ARGUMENT, "dt_adam_tensors:", "params[1]", opt_tensors_bad(2))              \
  X_(adam_tensors_int, DT_ERR_DTYPE, "dt_adam_tensors:", "params[0] is int32", opt_tensors_bad(3))                    \
  X_(adam_tensors_non_leaf, DT_ERR_INVALID_ARGUMENT, "dt_adam_tensors:", "params[0] is not a leaf|dt_exp", opt_tensors_bad(4)) \
  X_(adam_tensors_twice, DT_ERR_INVALID_ARGUMENT, "dt_adam_tensors:", "params[0] and params[1] are the same tensor", opt_tensors_bad(5)) \
  X_(adamw_tensors_beta1, DT_ERR_INVALID_ARGUMENT, "dt_adamw_tensors:", "beta1 = 1", nulo(dt_adamw_tensors(&F, 1, 0.1, 1, 0.999, 1e-8, 0))) \
  X_(module_new_null_forward, DT_ERR_INVALID_ARGUMENT, "dt_module_new:", "=forward is NULL", nulm(dt_module_new("M", NULL, NULL, NULL))) \
  X_(module_add_param_null_m, DT_ERR_INVALID_ARGUMENT, "dt_module_add_param:", "=m is NULL", bad(dt_module_add_param(NULL, "w", F))) \
  X_(module_add_param_not_user, DT_ERR_INVALID_ARGUMENT, "dt_module_add_param:", "=m is not a module made by dt_module_new", bad(dt_module_add_param(RELU, "w", F))) \
  X_(module_add_param_null, DT_ERR_INVALID_ARGUMENT, "dt_module_add_param:", "t is NULL", user_bad(0))                       \
  X_(module_add_param_int, DT_ERR_DTYPE, "dt_module_add_param:", "v is int32|float32, float64, float16 or bfloat16", user_bad(1))              \
  X_(module_add_param_non_leaf, DT_ERR_INVALID_ARGUMENT, "dt_module_add_param:", "v is not a leaf|dt_exp", user_bad(2))     \
  X_(module_add_param_dot, DT_ERR_INVALID_ARGUMENT, "dt_module_add_param:", "name \"a.b\" contains a '.'", user_bad(3))    \
  X_(module_add_param_empty, DT_ERR_INVALID_ARGUMENT, "dt_module_add_param:", "name is empty", user_bad(4))                 \
  X_(module_add_param_taken, DT_ERR_INVALID_ARGUMENT, "dt_module_add_param:", "=m already has a parameter named \"w\"", user_bad(5)) \
  X_(module_add_param_null_name, DT_ERR_INVALID_ARGUMENT, "dt_module_add_param:", "=name is NULL", user_bad(11))           \
  X_(module_add_child_twice, DT_ERR_INVALID_ARGUMENT, "dt_module_add_child:", "already belongs to a module", user_bad(6))  \
  X_(module_add_child_null, DT_ERR_INVALID_ARGUMENT, "dt_module_add_child:", "=child is NULL", user_bad(7))                \
  X_(module_forward_null, DT_ERR_INVALID_ARGUMENT, "dt_forward:", "the module's forward returned NULL", user_bad(13))   \
  X_(module_add_child_taken, DT_ERR_INVALID_ARGUMENT, "dt_module_add_child:", "=m already has a parameter named \"w\"", user_bad(8)) \
  X_(module_get_param_missing, DT_ERR_INVALID_ARGUMENT, "dt_module_get_param:", "=m has no parameter named \"v\"", user_bad(9)) \
  X_(module_get_child_missing, DT_ERR_INVALID_ARGUMENT, "dt_module_get_child:", "=m has no child named \"w\"", user_bad(10)) \
  X_(trainer_fit_user_module_no_grad, DT_ERR_INVALID_ARGUMENT, "dt_autograd_backward:", "out does not require grad", user_bad(12)) \
  X_(module_train_null, DT_ERR_INVALID_ARGUMENT, "dt_module_train:", "=m is NULL", bad(dt_module_train(NULL, 1)))         \
  X_(clip_null, DT_ERR_INVALID_ARGUMENT, "dt_clip_grad_norm_:", "=params is NULL", bad(dt_clip_grad_norm_(NULL, 1, 1.0, NULL))) \
  X_(clip_n_neg, DT_ERR_INVALID_ARGUMENT, "dt_clip_grad_norm_:", "n = -1", bad(dt_clip_grad_norm_(&F, -1, 1.0, NULL)))  \
  X_(clip_max_zero, DT_ERR_INVALID_ARGUMENT, "dt_clip_grad_norm_:", "=max_norm = 0, expected a finite max_norm > 0", clip_bad(0.0)) \
  X_(clip_max_neg, DT_ERR_INVALID_ARGUMENT, "dt_clip_grad_norm_:", "max_norm = -1", clip_bad(-1.0))                      \
  X_(clip_max_nan, DT_ERR_INVALID_ARGUMENT, "dt_clip_grad_norm_:", "max_norm = nan", clip_bad(NAN))                      \
  X_(clip_max_inf, DT_ERR_INVALID_ARGUMENT, "dt_clip_grad_norm_:", "max_norm = inf", clip_bad(INFINITY))                 \
  X_(optimizer_free_null, DT_OK, "", "", (dt_optimizer_free(NULL), 0))                                                       \
  X_(set_grad_enabled_ok, DT_OK, "", "", dt_set_grad_enabled(dt_set_grad_enabled(1)) != 1)                                  \
  X_(backward_no_grad, DT_ERR_INVALID_ARGUMENT, "dt_backward:", "grad is disabled on this thread|dt_set_grad_enabled(1)", backward_no_grad(0)) \
  X_(backward_params_no_grad, DT_ERR_INVALID_ARGUMENT, "dt_backward_params:", "grad is disabled on this thread", backward_no_grad(1)) \
  X_(backward_after_no_grad, DT_ERR_INVALID_ARGUMENT, "dt_backward:", "last forward ran with grad disabled|kept nothing", backward_after_no_grad()) \
  /* comparisons, sigmoid / tanh / abs, _like, uint8 and bool */                                        \
  X_(eq_null_a, DT_ERR_INVALID_ARGUMENT, "dt_eq:", "a is NULL", nul(dt_eq(NULL, F)))                                        \
  X_(ne_null_b, DT_ERR_INVALID_ARGUMENT, "dt_ne:", "b is NULL", nul(dt_ne(F, NULL)))                                        \
  X_(lt_null_a, DT_ERR_INVALID_ARGUMENT, "dt_lt:", "a is NULL", nul(dt_lt(NULL, NULL)))                                     \
  X_(le_null_b, DT_ERR_INVALID_ARGUMENT, "dt_le:", "b is NULL", nul(dt_le(I, NULL)))                                        \
  X_(gt_null_a, DT_ERR_INVALID_ARGUMENT, "dt_gt:", "a is NULL", nul(dt_gt(NULL, V)))                                        \
  X_(ge_null_b, DT_ERR_INVALID_ARGUMENT, "dt_ge:", "b is NULL", nul(dt_ge(S, NULL)))                                        \
  X_(eq_bcast, DT_ERR_SHAPE, "dt_eq:", "(2, 3)|(2, 2, 2, 2)|broadcast", nul(dt_eq(F, M4)))                                  \
  X_(gt_bcast, DT_ERR_SHAPE, "dt_gt:", "(5, 3)|(2, 3)|a has 5 and b has 2", nul(dt_gt(X, F)))                               \
  X_(lt_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_lt:", "=expected all tensors on the same device, but b is on cpu and a is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_lt(G0, F)))) \
  X_(ge_device_before_shape, DT_ERR_DEVICE_MISMATCH, "dt_ge:", "b is on cuda:0|a is on cpu", GPUS(1, nul(dt_ge(M4, G0))))   \
  X_(ne_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_ne:", "b is on cuda:1|a is on cuda:0", GPUS(2, nul(dt_ne(G0, G1))))           \
  X_(sigmoid_null, DT_ERR_INVALID_ARGUMENT, "dt_sigmoid:", "a is NULL", nul(dt_sigmoid(NULL)))                             \
  X_(sigmoid_int, DT_ERR_DTYPE, "dt_sigmoid:", "a is int32|float32, float64, float16 or bfloat16", nul(dt_sigmoid(I)))                         \
  X_(tanh_null, DT_ERR_INVALID_ARGUMENT, "dt_tanh:", "a is NULL", nul(dt_tanh(NULL)))                                       \
  X_(tanh_int, DT_ERR_DTYPE, "dt_tanh:", "a is int64", nul(dt_tanh(L)))                                                     \
  X_(abs_null, DT_ERR_INVALID_ARGUMENT, "dt_abs:", "a is NULL", nul(dt_abs(NULL)))                                          \
  X_(abs_bool, DT_ERR_DTYPE, "dt_abs:", "a is bool", nul(cmp_1(dt_abs, cmp_bool())))                                          \
  X_(zeros_like_null, DT_ERR_INVALID_ARGUMENT, "dt_zeros_like:", "t is NULL", nul(dt_zeros_like(NULL)))                     \
  X_(ones_like_null, DT_ERR_INVALID_ARGUMENT, "dt_ones_like:", "t is NULL", nul(dt_ones_like(NULL)))                        \
  X_(empty_like_null, DT_ERR_INVALID_ARGUMENT, "dt_empty_like:", "t is NULL", nul(dt_empty_like(NULL)))                     \
  X_(flatten_null, DT_ERR_INVALID_ARGUMENT, "dt_flatten:", "t is NULL", nul(dt_flatten(NULL, 0, -1)))                        \
  X_(flatten_order, DT_ERR_INVALID_ARGUMENT, "dt_flatten:", "start_dim 1|end_dim 0", nul(dt_flatten(F, 1, 0)))               \
  X_(flatten_range, DT_ERR_INVALID_ARGUMENT, "dt_flatten:", "dim 2|2-d|-2 to 1", nul(dt_flatten(F, 0, 2)))                   \
  X_(flatten_intmin, DT_ERR_INVALID_ARGUMENT, "dt_flatten:", "out of range", nul(dt_flatten(F, INT_MIN, 0)))                 \
  X_(unsqueeze_null, DT_ERR_INVALID_ARGUMENT, "dt_unsqueeze:", "t is NULL", nul(dt_unsqueeze(NULL, 0)))                      \
  X_(unsqueeze_range, DT_ERR_INVALID_ARGUMENT, "dt_unsqueeze:", "dim 3|2-d|-3 to 2", nul(dt_unsqueeze(F, 3)))                \
  X_(unsqueeze_intmin, DT_ERR_INVALID_ARGUMENT, "dt_unsqueeze:", "out of range", nul(dt_unsqueeze(F, INT_MIN)))              \
  X_(unsqueeze_8d, DT_ERR_SHAPE, "dt_unsqueeze:", "8 dims", nul(dt_unsqueeze(T8, 0)))                                        \
  X_(squeeze_null, DT_ERR_INVALID_ARGUMENT, "dt_squeeze:", "t is NULL", nul(dt_squeeze(NULL, 0)))                            \
  X_(squeeze_range, DT_ERR_INVALID_ARGUMENT, "dt_squeeze:", "dim -3|2-d", nul(dt_squeeze(F, -3)))                            \
  X_(squeeze_0d, DT_ERR_INVALID_ARGUMENT, "dt_squeeze:", "dim 1|0-d", nul(dt_squeeze(S, 1)))                                 \
  X_(sum_dim_ex_null, DT_ERR_INVALID_ARGUMENT, "dt_sum_dim_ex:", "t is NULL", nul(dt_sum_dim_ex(NULL, 0, 1)))                \
  X_(sum_dim_ex_int, DT_ERR_DTYPE, "dt_sum_dim_ex:", "t is int32", nul(dt_sum_dim_ex(I, 0, 1)))                              \
  X_(sum_dim_ex_range, DT_ERR_INVALID_ARGUMENT, "dt_sum_dim_ex:", "dim 2|2-d", nul(dt_sum_dim_ex(F, 2, 0)))                  \
  X_(mean_dim_null, DT_ERR_INVALID_ARGUMENT, "dt_mean_dim:", "t is NULL", nul(dt_mean_dim(NULL, 0, 0)))                      \
  X_(mean_dim_int, DT_ERR_DTYPE, "dt_mean_dim:", "t is int64", nul(dt_mean_dim(L, 0, 0)))                                    \
  X_(mean_dim_range, DT_ERR_INVALID_ARGUMENT, "dt_mean_dim:", "dim -3|2-d", nul(dt_mean_dim(F, -3, 1)))                      \
  X_(rsub_null, DT_ERR_INVALID_ARGUMENT, "dt_rsub_scalar:", "t is NULL", nul(dt_rsub_scalar(NULL, 1)))                       \
  X_(eq_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_eq_scalar:", "t is NULL", nul(dt_eq_scalar(NULL, 1)))                      \
  X_(ne_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_ne_scalar:", "t is NULL", nul(dt_ne_scalar(NULL, 1)))                      \
  X_(lt_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_lt_scalar:", "t is NULL", nul(dt_lt_scalar(NULL, 1)))                      \
  X_(le_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_le_scalar:", "t is NULL", nul(dt_le_scalar(NULL, 1)))                      \
  X_(gt_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_gt_scalar:", "t is NULL", nul(dt_gt_scalar(NULL, 1)))                      \
  X_(ge_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_ge_scalar:", "t is NULL", nul(dt_ge_scalar(NULL, 1)))                      \
  X_(one_hot_null, DT_ERR_INVALID_ARGUMENT, "dt_one_hot:", "labels is NULL", nul(dt_one_hot(NULL, 3)))                       \
  X_(one_hot_dtype, DT_ERR_DTYPE, "dt_one_hot:", "labels is int32", nul(dt_one_hot(I, 3)))                                   \
  X_(one_hot_classes, DT_ERR_INVALID_ARGUMENT, "dt_one_hot:", "-2", nul(dt_one_hot(L, -2)))                                  \
  X_(one_hot_range, DT_ERR_INVALID_ARGUMENT, "dt_one_hot:", "labels holds 3|num_classes is 3", nul(dt_one_hot(L, 3)))        \
  X_(sin_null, DT_ERR_INVALID_ARGUMENT, "dt_sin:", "a is NULL", nul(dt_sin(NULL)))                                           \
  X_(sin_int, DT_ERR_DTYPE, "dt_sin:", "a is int32|float32, float64, float16 or bfloat16", nul(dt_sin(I)))                                      \
  X_(cos_null, DT_ERR_INVALID_ARGUMENT, "dt_cos:", "a is NULL", nul(dt_cos(NULL)))                                           \
  X_(cos_int, DT_ERR_DTYPE, "dt_cos:", "a is int32|float32, float64, float16 or bfloat16", nul(dt_cos(I)))                                      \
  X_(erf_null, DT_ERR_INVALID_ARGUMENT, "dt_erf:", "a is NULL", nul(dt_erf(NULL)))                                           \
  X_(erf_int, DT_ERR_DTYPE, "dt_erf:", "a is int32|float32, float64, float16 or bfloat16", nul(dt_erf(I)))                                      \
  X_(gelu_null, DT_ERR_INVALID_ARGUMENT, "dt_gelu:", "a is NULL", nul(dt_gelu(NULL)))                                        \
  X_(gelu_int, DT_ERR_DTYPE, "dt_gelu:", "a is int32|float32, float64, float16 or bfloat16", nul(dt_gelu(I)))                                   \
  X_(pow_scalar_null, DT_ERR_INVALID_ARGUMENT, "dt_pow_scalar:", "a is NULL", nul(dt_pow_scalar(NULL, 2)))                   \
  X_(pow_scalar_int, DT_ERR_DTYPE, "dt_pow_scalar:", "a is int64", nul(dt_pow_scalar(L, 2)))                                 \
  X_(clamp_null, DT_ERR_INVALID_ARGUMENT, "dt_clamp:", "a is NULL", nul(dt_clamp(NULL, 0, 1)))                               \
  X_(clamp_int, DT_ERR_DTYPE, "dt_clamp:", "a is int32", nul(dt_clamp(I, 0, 1)))                                             \
  X_(sub_bool, DT_ERR_DTYPE, "dt_sub:", "a is bool", nul(cmp_2(dt_sub, cmp_bool(), cmp_bool())))                               \
  X_(sub_float_bool, DT_ERR_DTYPE, "dt_sub:", "=subtraction with a bool tensor is not supported (b is bool; as in PyTorch: convert with dt_cast, or for a mask use dt_ne_scalar)", nul(cmp_2(dt_sub, cmp_1(dt_abs, cmp_u8()), cmp_bool()))) \
  X_(rsub_bool, DT_ERR_DTYPE, "dt_rsub_scalar:", "t is bool|not supported", nul(cmp_rsub(cmp_bool())))                    \
  X_(neg_bool, DT_ERR_DTYPE, "dt_neg:", "a is bool", nul(cmp_1(dt_neg, cmp_bool())))                                          \
  X_(mean_bool, DT_ERR_DTYPE, "dt_mean:", "a is bool|float32, float64, float16 or bfloat16", nul(cmp_1(dt_mean, cmp_bool())))                    \
  X_(arange_bool, DT_ERR_DTYPE, "dt_arange:", "bool", nul(dt_arange(0, 2, 1, DT_BOOL, dt_cpu())))                           \
  X_(empty_dtype_8, DT_ERR_DTYPE, "dt_empty:", "unknown dtype 8", nul(dt_empty(dt_shape1(2), (dt_dtype)8, dt_cpu())))       \
  X_(cast_dtype_8, DT_ERR_DTYPE, "dt_cast:", "unknown dtype 8", nul(dt_cast(F, (dt_dtype)8)))                               \
  /* the trainer */                                                                                                         \
  /* indexing: dt_slice, dt_index_select, dt_cat, dt_permute */                                                  \
  X_(slice_null, DT_ERR_INVALID_ARGUMENT, "dt_slice:", "=t is NULL", nul(dt_slice(NULL, 0, 0, 1)))                           \
  X_(slice_dim, DT_ERR_INVALID_ARGUMENT, "dt_slice:", "=dim 2 out of range for a 2-d tensor (expected -2 to 1)", nul(dt_slice(F, 2, 0, 1))) \
  X_(slice_dim_neg, DT_ERR_INVALID_ARGUMENT, "dt_slice:", "dim -3|2-d", nul(dt_slice(F, -3, 0, 1)))                         \
  X_(slice_dim_intmin, DT_ERR_INVALID_ARGUMENT, "dt_slice:", "dim -2147483648", nul(dt_slice(F, INT_MIN, 0, 1)))            \
  X_(slice_0d, DT_ERR_INVALID_ARGUMENT, "dt_slice:", "=dim 0 out of range: a 0-d tensor has no dimensions", nul(dt_slice(S, 0, 0, 1))) \
  X_(slice_empty_ok, DT_OK, "", "", nul(dt_slice(F, 1, 2, -2)))                                                              \
  X_(isel_null_t, DT_ERR_INVALID_ARGUMENT, "dt_index_select:", "=t is NULL", nul(dt_index_select(NULL, 0, L)))               \
  X_(isel_null_index, DT_ERR_INVALID_ARGUMENT, "dt_index_select:", "=index is NULL", nul(dt_index_select(F, 0, NULL)))       \
  X_(isel_index_i32, DT_ERR_DTYPE, "dt_index_select:", "=index is int32, but it must be int64 (convert it with dt_cast)", nul(dt_index_select(F, 0, I))) \
  X_(isel_index_f32, DT_ERR_DTYPE, "dt_index_select:", "index is float32|int64", nul(dt_index_select(F, 0, V)))             \
  X_(isel_index_2d, DT_ERR_SHAPE, "dt_index_select:", "=index must be 1-d (k,) or 0-d, got shape (2, 1)", nul(isel(F, 0, IDX_OK, 2, 1, dt_cpu()))) \
  X_(isel_dim, DT_ERR_INVALID_ARGUMENT, "dt_index_select:", "=dim 2 out of range for a 2-d tensor (expected -2 to 1)", nul(dt_index_select(F, 2, L))) \
  X_(isel_range, DT_ERR_INVALID_ARGUMENT, "dt_index_select:", "=index[1] = 2 is out of range for dimension 0 of t, of size 2 (expected 0 to 1)", nul(dt_index_select(F, 0, L))) \
  X_(isel_negative, DT_ERR_INVALID_ARGUMENT, "dt_index_select:", "index[1] = -1|size 3", nul(isel(F, 1, IDX_NEG, 2, 0, dt_cpu()))) \
  X_(isel_0d_many, DT_ERR_SHAPE, "dt_index_select:", "=t is 0-d, so index must hold one value, but it holds 3", nul(dt_index_select(S, 0, L))) \
  X_(isel_0d_dim, DT_ERR_INVALID_ARGUMENT, "dt_index_select:", "dim 1|0-d", nul(dt_index_select(S, 1, L)))                  \
  X_(isel_ok, DT_OK, "", "", nul(isel(F, 1, IDX_OK, 2, 0, dt_cpu())))                                                        \
  X_(isel_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_index_select:", "=expected all tensors on the same device, but index is on cpu and t is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_index_select(G0, 0, L)))) \
  X_(isel_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_index_select:", "index is on cuda:0|t is on cpu", GPUS(1, nul(isel(F, 0, IDX_OK, 2, 0, dt_gpu(0))))) \
  X_(isel_gpu1_gpu0, DT_ERR_DEVICE_MISMATCH, "dt_index_select:", "index is on cuda:0|t is on cuda:1", GPUS(2, nul(isel(G1, 0, IDX_OK, 2, 0, dt_gpu(0))))) \
  X_(cat_null, DT_ERR_INVALID_ARGUMENT, "dt_cat:", "=ts is NULL", nul(dt_cat(NULL, 2, 0)))                                   \
  X_(cat_n0, DT_ERR_INVALID_ARGUMENT, "dt_cat:", "=expected at least one tensor, got n = 0", nul(dt_cat(STK, 0, 0)))        \
  X_(cat_n_intmin, DT_ERR_INVALID_ARGUMENT, "dt_cat:", "n = -2147483648", nul(dt_cat(STK, INT_MIN, 0)))                     \
  X_(cat_null_item, DT_ERR_INVALID_ARGUMENT, "dt_cat:", "=ts[1] is NULL", nul(cat2(F, NULL, 0)))                             \
  X_(cat_shape, DT_ERR_SHAPE, "dt_cat:", "=ts[0] has shape (2, 3) but ts[1] has shape (3,): sizes must match except in dimension 0", nul(cat2(F, V, 0))) \
  X_(cat_shape_other_dim, DT_ERR_SHAPE, "dt_cat:", "(2, 3)|(2, 2, 2, 2)|dimension 1", nul(cat2(F, M4, 1)))                   \
  X_(cat_dtype, DT_ERR_DTYPE, "dt_cat:", "=expected tensors of one dtype, but ts[0] is float32 and ts[1] is float64 (convert one with dt_cast)", nul(cat2(F, D, 0))) \
  X_(cat_0d, DT_ERR_SHAPE, "dt_cat:", "=ts[0] is 0-d, and a 0-d tensor cannot be concatenated (dt_stack stacks them)", nul(cat2(S, S, 0))) \
  X_(cat_dim, DT_ERR_INVALID_ARGUMENT, "dt_cat:", "=dim 2 out of range for a 2-d tensor (expected -2 to 1)", nul(cat2(F, F, 2))) \
  X_(cat_ok, DT_OK, "", "", nul(cat2(F, F, -1)))                                                                             \
  X_(cat_cpu_gpu, DT_ERR_DEVICE_MISMATCH, "dt_cat:", "=expected all tensors on the same device, but ts[1] is on cuda:0 and ts[0] is on cpu (move one with dt_to)", GPUS(1, nul(cat2(F, G0, 0)))) \
  X_(cat_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_cat:", "ts[1] is on cuda:1|ts[0] is on cuda:0", GPUS(2, nul(cat2(G0, G1, 0)))) \
  X_(permute_null, DT_ERR_INVALID_ARGUMENT, "dt_permute:", "=t is NULL", nul(dt_permute(NULL, PERM_NEG)))                   \
  X_(permute_null_dims, DT_ERR_INVALID_ARGUMENT, "dt_permute:", "=dims is NULL for a 2-d tensor", nul(dt_permute(F, NULL))) \
  X_(permute_range, DT_ERR_INVALID_ARGUMENT, "dt_permute:", "=dims[1] 2 out of range for a 2-d tensor (expected -2 to 1)", nul(dt_permute(F, PERM_RANGE))) \
  X_(permute_repeat, DT_ERR_INVALID_ARGUMENT, "dt_permute:", "=dims[1] = -1 repeats dimension 1: dims must be a permutation of 0..1", nul(dt_permute(F, PERM_REPEAT))) \
  X_(permute_neg_ok, DT_OK, "", "", nul(dt_permute(F, PERM_NEG)))                                                            \
  X_(permute_0d_ok, DT_OK, "", "", nul(dt_permute(S, NULL)))                                                                 \
  X_(trainer_init_null, DT_ERR_INVALID_ARGUMENT, "dt_trainer_init:", "tr is NULL", bad(dt_trainer_init(NULL, 1, 0)))        \
  X_(trainer_init_neg, DT_ERR_INVALID_ARGUMENT, "dt_trainer_init:", "max_epochs|-1", bad(dt_trainer_init(&TR, -1, 0)))      \
  X_(trainer_init_neg_gpus, DT_ERR_INVALID_ARGUMENT, "dt_trainer_init:", "num_gpus|-2", bad(dt_trainer_init(&TR, 1, -2)))    \
  X_(prepare_model_null_tr, DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_model:", "tr is NULL", bad(dt_trainer_prepare_model(NULL, NET))) \
  X_(prepare_model_null_m, DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_model:", "m is NULL", bad(dt_trainer_prepare_model(&TR, NULL))) \
  X_(prepare_batch_null_tr, DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_batch:", "tr is NULL", nul(dt_trainer_prepare_batch(NULL, X))) \
  X_(prepare_batch_null, DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_batch:", "batch is NULL", nul(dt_trainer_prepare_batch(&TR, NULL))) \
  X_(prepare_batch_moves_ok, DT_OK, "", "", GPUS(1, nul(dt_trainer_prepare_batch(&TR, G0))))                                \
  X_(fit_null_tr, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "tr is NULL", bad(dt_trainer_fit(NULL, NET, X, Y)))           \
  X_(fit_null_m, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "m is NULL", bad(dt_trainer_fit(&TR, NULL, X, Y)))             \
  X_(fit_null_x, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "X is NULL", bad(dt_trainer_fit(&TR, NET, NULL, Y)))           \
  X_(fit_null_y, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "y is NULL", bad(dt_trainer_fit(&TR, NET, X, NULL)))           \
  X_(fit_1d, DT_ERR_SHAPE, "dt_trainer_fit:", "(3,)", bad(dt_trainer_fit(&TR, NET, V, Y)))                                  \
  X_(fit_rows, DT_ERR_SHAPE, "dt_trainer_fit:", "(2, 3)|(5, 2)", bad(dt_trainer_fit(&TR, NET, F, Y)))                       \
  X_(fit_int, DT_ERR_DTYPE, "dt_trainer_fit:", "int32", bad(dt_trainer_fit(&TR, NET, I, I)))                                \
  X_(fit_dtypes, DT_ERR_DTYPE, "dt_trainer_fit:", "float64|float32", bad(dt_trainer_fit(&TR, NET, D, F)))                   \
  X_(fit_features, DT_ERR_SHAPE, "dt_forward:", "(5, 2)|3 features", bad(dt_trainer_fit(&TR, NET, Y, Y)))                    \
  /* the trainer's classification, validation set and evaluation */                                           \
  X_(fit_val_half, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit_val:", "X_val set|y_val NULL", bad(dt_trainer_fit_val(&TR, NETC, X, Y, X, NULL))) \
  X_(fit_val_half2, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit_val:", "X_val NULL|y_val set", bad(dt_trainer_fit_val(&TR, NETC, X, Y, NULL, Y))) \
  X_(fit_val_null_tr, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit_val:", "tr is NULL", bad(dt_trainer_fit_val(NULL, NETC, X, Y, X, Y))) \
  X_(fit_val_null_m, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit_val:", "m is NULL", bad(dt_trainer_fit_val(&TR, NULL, X, Y, X, Y))) \
  X_(fit_val_null_x, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit_val:", "X is NULL", bad(dt_trainer_fit_val(&TR, NETC, NULL, Y, X, Y))) \
  X_(fit_val_cols, DT_ERR_SHAPE, "dt_trainer_fit_val:", "X_val|(5, 3)|(5, 2)", bad(dt_trainer_fit_val(&TR, NETC, X, Y, Y, Y))) \
  X_(fit_val_rows, DT_ERR_SHAPE, "dt_trainer_fit_val:", "X_val|y_val|(2, 3)|(5, 2)", bad(dt_trainer_fit_val(&TR, NETC, X, Y, F, Y))) \
  X_(fit_val_dtype, DT_ERR_DTYPE, "dt_trainer_fit_val:", "X_val|y_val|float64|float32", bad(dt_trainer_fit_val(&TR, NETC, X, Y, YD, Y))) \
  X_(fit_val_devices, DT_ERR_DEVICE_MISMATCH, "dt_trainer_fit_val:", "y_val is on cpu|X_val is on cuda:0", GPUS(1, bad(dt_trainer_fit_val(&TR, NETC, X, Y, GX, Y)))) \
  X_(fit_loss_fn, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "loss_fn|DT_LOSS_CROSS_ENTROPY|7", bad(fit_loss(7, 32, X, Y))) \
  X_(fit_batch_zero, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "batch_size|0", bad(fit_loss(DT_LOSS_MSE, 0, X, Y)))        \
  X_(fit_ce_y_2d, DT_ERR_SHAPE, "dt_trainer_fit:", "(5, 3)|(5, 2)|class labels", bad(fit_loss(DT_LOSS_CROSS_ENTROPY, 32, X, Y))) \
  X_(fit_ce_rows, DT_ERR_SHAPE, "dt_trainer_fit:", "(5, 3)|(3,)", bad(fit_loss(DT_LOSS_CROSS_ENTROPY, 32, X, L)))            \
  X_(fit_ce_y_float, DT_ERR_DTYPE, "dt_trainer_fit:", "y|float32|int64", bad(fit_loss(DT_LOSS_CROSS_ENTROPY, 32, X, LABF)))  \
  X_(fit_ce_x_int, DT_ERR_DTYPE, "dt_trainer_fit:", "X is int64", bad(fit_loss(DT_LOSS_CROSS_ENTROPY, 32, XI, LAB)))         \
  X_(fit_ce_label_big, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "class label 2|2 outputs", bad(fit_loss(DT_LOSS_CROSS_ENTROPY, 32, X, LABBIG))) \
  X_(fit_ce_label_neg, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "class label -1", bad(fit_loss(DT_LOSS_CROSS_ENTROPY, 32, X, LABNEG))) \
  X_(fit_ce_devices, DT_ERR_DEVICE_MISMATCH, "dt_trainer_fit:", "y is on cpu|X is on cuda:0", GPUS(1, bad(fit_loss(DT_LOSS_CROSS_ENTROPY, 32, GX, LAB)))) \
  X_(fit_mse_int_labels, DT_ERR_DTYPE, "dt_trainer_fit:", "=y is int64 but the MSE loss (tr.loss_fn DT_LOSS_MSE, the default) needs float32 targets like X's: for class labels set tr.loss_fn = DT_LOSS_CROSS_ENTROPY; for regression cast y to float32 (dt_cast(y, DT_F32))", bad(dt_trainer_fit(&TR, NETC, X, LAB))) \
  X_(fit_mse_int32_labels, DT_ERR_DTYPE, "dt_trainer_fit:", "y is int32|needs float64 targets|DT_LOSS_CROSS_ENTROPY with (n,) int64 labels|dt_cast(y, DT_F64)", bad(dt_trainer_fit(&TR, NETC, D, I))) \
  X_(fit_val_mse_int_labels, DT_ERR_DTYPE, "dt_trainer_fit_val:", "y_val is int64|MSE|DT_LOSS_CROSS_ENTROPY|dt_cast(y_val, DT_F32)", bad(dt_trainer_fit_val(&TR, NETC, X, Y, X, LAB))) \
  X_(evaluate_mse_int_labels, DT_ERR_DTYPE, "dt_trainer_evaluate:", "y is int64|MSE|tr.loss_fn = DT_LOSS_CROSS_ENTROPY|dt_cast(y, DT_F32)", bad(dt_trainer_evaluate(&TR, NETC, X, LAB, HOST, HOST))) \
  X_(fit_ce_label_lazy_unchanged, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "=y holds the class label 2, but the model has 2 outputs (classes 0..1)", lazy_label_unchanged(0, 0)) \
  X_(fit_val_ce_label_lazy_unchanged, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit_val:", "=y_val holds the class label 2, but the model has 2 outputs (classes 0..1)", lazy_label_unchanged(1, 0)) \
  X_(evaluate_ce_label_lazy_unchanged, DT_ERR_INVALID_ARGUMENT, "dt_trainer_evaluate:", "=y holds the class label 2, but the model has 2 outputs (classes 0..1)", lazy_label_unchanged(2, 0)) \
  X_(fit_ce_label_lazy_unchanged_gpu, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "=y holds the class label 2, but the model has 2 outputs (classes 0..1)", GPUS(1, lazy_label_unchanged(0, 1))) \
  X_(fit_val_ce_label_lazy_unchanged_gpu, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit_val:", "=y_val holds the class label 2, but the model has 2 outputs (classes 0..1)", GPUS(1, lazy_label_unchanged(1, 1))) \
  X_(evaluate_ce_label_lazy_unchanged_gpu, DT_ERR_INVALID_ARGUMENT, "dt_trainer_evaluate:", "=y holds the class label 2, but the model has 2 outputs (classes 0..1)", GPUS(1, lazy_label_unchanged(2, 1))) \
  X_(fit_val_label_big, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit_val:", "y_val|class label 2", bad(fit_val_ce(LABBIG)))      \
  X_(evaluate_null_tr, DT_ERR_INVALID_ARGUMENT, "dt_trainer_evaluate:", "tr is NULL", bad(dt_trainer_evaluate(NULL, NETC, X, Y, HOST, HOST))) \
  X_(evaluate_null_m, DT_ERR_INVALID_ARGUMENT, "dt_trainer_evaluate:", "m is NULL", bad(dt_trainer_evaluate(&TR, NULL, X, Y, HOST, HOST))) \
  X_(evaluate_null_x, DT_ERR_INVALID_ARGUMENT, "dt_trainer_evaluate:", "X is NULL", bad(dt_trainer_evaluate(&TR, NETC, NULL, Y, HOST, HOST))) \
  X_(evaluate_null_y, DT_ERR_INVALID_ARGUMENT, "dt_trainer_evaluate:", "y is NULL", bad(dt_trainer_evaluate(&TR, NETC, X, NULL, HOST, HOST))) \
  X_(evaluate_rows, DT_ERR_SHAPE, "dt_trainer_evaluate:", "(2, 3)|(5, 2)", bad(dt_trainer_evaluate(&TR, NETC, F, Y, HOST, HOST))) \
  X_(evaluate_devices, DT_ERR_DEVICE_MISMATCH, "dt_trainer_evaluate:", "y is on cpu|X is on cuda:0", GPUS(1, bad(dt_trainer_evaluate(&TR, NETC, GX, Y, HOST, HOST)))) \
  X_(evaluate_features, DT_ERR_SHAPE, "dt_forward:", "(5, 2)|3 features", bad(dt_trainer_evaluate(&TR, NETC, Y, Y, HOST, HOST))) \
  X_(evaluate_label_big, DT_ERR_INVALID_ARGUMENT, "dt_trainer_evaluate:", "class label 2|2 outputs", bad(eval_ce(LABBIG)))   \
  X_(evaluate_untouched, DT_ERR_SHAPE, "dt_forward:", "3 features", (HOST[0] = 7, HOST[1] = 8, bad(dt_trainer_evaluate(&TR, NETC, Y, Y, HOST, HOST + 1)) && HOST[0] == 7 && HOST[1] == 8)) \
  /* distributed */                                                                                            \
  X_(all_reduce_no_init, DT_ERR_INVALID_ARGUMENT, "dt_all_reduce_:", "=call dt_dist_init first (no process group yet)", bad(dt_all_reduce_(F, DT_REDUCE_SUM))) \
  X_(broadcast_no_init, DT_ERR_INVALID_ARGUMENT, "dt_broadcast_:", "call dt_dist_init first", bad(dt_broadcast_(F, 0)))   \
  X_(all_reduce_null, DT_ERR_INVALID_ARGUMENT, "dt_all_reduce_:", "t is NULL", bad(dist_ar(NULL, DT_REDUCE_SUM)))        \
  X_(all_reduce_bad_op, DT_ERR_INVALID_ARGUMENT, "dt_all_reduce_:", "unknown op 9", bad(dist_ar(F, 9)))                   \
  X_(all_reduce_neg_op, DT_ERR_INVALID_ARGUMENT, "dt_all_reduce_:", "unknown op -1", bad(dist_ar(F, -1)))                 \
  X_(all_reduce_avg_int, DT_ERR_DTYPE, "dt_all_reduce_:", "DT_REDUCE_AVG needs a float dtype, t is int32", bad(dist_ar(I, DT_REDUCE_AVG))) \
  X_(broadcast_null, DT_ERR_INVALID_ARGUMENT, "dt_broadcast_:", "t is NULL", bad(dist_bc(NULL, 0)))                      \
  X_(broadcast_root_1, DT_ERR_INVALID_ARGUMENT, "dt_broadcast_:", "=root 1 is not a rank (the world has rank 0 only)", bad(dist_bc(F, 1))) \
  X_(broadcast_root_neg, DT_ERR_INVALID_ARGUMENT, "dt_broadcast_:", "root -1 is not a rank", bad(dist_bc(F, -1)))         \
  X_(dist_init_twice, DT_ERR_INVALID_ARGUMENT, "dt_dist_init:", "already initialised (rank 0 of 1)", bad(dist_init_twice())) \
  X_(dist_init_world3, DT_ERR_UNSUPPORTED, "dt_dist_init:", "one of 3 ranks (WORLD_SIZE=3)|DEVTENSOR_MPI", bad(dist_init_world3())) \
  X_(dist_finalize_uninit_ok, DT_OK, "", "", bad(dt_dist_finalize()))                                                     \
  X_(dist_world_default, DT_OK, "", "", dt_dist_rank() != 0 || dt_dist_world_size() != 1) \
  /* autograd */                                                                                                            \
  X_(requires_grad_null, DT_ERR_INVALID_ARGUMENT, "dt_requires_grad_:", "=t is NULL", bad(dt_requires_grad_(NULL, 1)))     \
  X_(requires_grad_int, DT_ERR_DTYPE, "dt_requires_grad_:", "t is int32|float32 and float64", bad(dt_requires_grad_(I, 1))) \
  X_(requires_grad_result, DT_ERR_INVALID_ARGUMENT, "dt_requires_grad_:", "not a leaf|dt_exp", bad(ag_misuse(6)))          \
  X_(requires_grad_get_null, DT_ERR_INVALID_ARGUMENT, "dt_requires_grad:", "=t is NULL", dt_requires_grad(NULL) == 0)     \
  X_(ag_grad_null, DT_ERR_INVALID_ARGUMENT, "dt_grad:", "=t is NULL", nul(dt_grad(NULL)))                                     \
  X_(grad_none_ok, DT_OK, "", "", dt_grad(F) != NULL)                                                                       \
  X_(detach_null, DT_ERR_INVALID_ARGUMENT, "dt_detach:", "=t is NULL", nul(dt_detach(NULL)))                               \
  X_(ag_zero_grad_null, DT_ERR_INVALID_ARGUMENT, "dt_zero_grad_:", "=t is NULL", bad(dt_zero_grad_(NULL)))                    \
  X_(is_leaf_null, DT_ERR_INVALID_ARGUMENT, "dt_is_leaf:", "=t is NULL", dt_is_leaf(NULL) == 0)                             \
  X_(autograd_backward_null, DT_ERR_INVALID_ARGUMENT, "dt_autograd_backward:", "=out is NULL", bad(dt_autograd_backward(NULL, NULL))) \
  X_(autograd_backward_no_grad, DT_ERR_INVALID_ARGUMENT, "dt_autograd_backward:", "out does not require grad", bad(dt_autograd_backward(F, NULL))) \
  X_(autograd_backward_not_scalar, DT_ERR_SHAPE, "dt_autograd_backward:", "grad_out is NULL|(2, 3) (6 elements)", bad(ag_misuse(0))) \
  X_(autograd_backward_grad_shape, DT_ERR_SHAPE, "dt_autograd_backward:", "grad_out has shape (6,) but out has shape (2, 3)", bad(ag_misuse(1))) \
  X_(autograd_backward_grad_dtype, DT_ERR_DTYPE, "dt_autograd_backward:", "grad_out is float64 but out is float32", bad(ag_misuse(2))) \
  X_(autograd_backward_grad_device, DT_ERR_DEVICE_MISMATCH, "dt_autograd_backward:", "grad_out is on cuda:0 but out is on cpu", GPUS(1, bad(ag_misuse(3)))) \
  X_(autograd_backward_twice, DT_ERR_INVALID_ARGUMENT, "dt_autograd_backward:", "second time|dt_sum", bad(ag_misuse(4)))    \
  X_(autograd_backward_changed, DT_ERR_INVALID_ARGUMENT, "dt_autograd_backward:", "dt_mul saved|changed in place|version 1, expected 0", bad(ag_misuse(5))) \
  X_(fill_leaf_requires_grad, DT_ERR_INVALID_ARGUMENT, "dt_fill_:", "t is a leaf that requires grad", bad(ag_misuse(7))) \
  /* where, gather, scatter_add, pad, randperm, randint */                                                           \
  X_(where_null_cond, DT_ERR_INVALID_ARGUMENT, "dt_where:", "=cond is NULL", nul(dt_where(NULL, F, F)))                \
  X_(where_null_a, DT_ERR_INVALID_ARGUMENT, "dt_where:", "=a is NULL", nul(where_gt(F, NULL, F)))                      \
  X_(where_null_b, DT_ERR_INVALID_ARGUMENT, "dt_where:", "=b is NULL", nul(where_gt(F, F, NULL)))                      \
  X_(where_cond_f32, DT_ERR_DTYPE, "dt_where:", "cond is float32|must be bool", nul(dt_where(F, F, F)))               \
  X_(where_shape, DT_ERR_SHAPE, "dt_where:", "(2, 3) (cond)|(3,) (a)|(2, 3, 4) (b)|cannot be broadcast", nul(where_gt(F, V, B3))) \
  X_(where_cond_device, DT_ERR_DEVICE_MISMATCH, "dt_where:", "a is on cuda:0|cond is on cpu", GPUS(1, nul(where_gt(F, G0, G0)))) \
  X_(where_b_device, DT_ERR_DEVICE_MISMATCH, "dt_where:", "b is on cpu|a is on cuda:0", GPUS(1, nul(where_gt(G0, G0, F)))) \
  X_(gather_null_x, DT_ERR_INVALID_ARGUMENT, "dt_gather:", "=x is NULL", nul(dt_gather(NULL, 0, L)))                   \
  X_(gather_null_index, DT_ERR_INVALID_ARGUMENT, "dt_gather:", "=index is NULL", nul(dt_gather(F, 0, NULL)))           \
  X_(gather_index_i32, DT_ERR_DTYPE, "dt_gather:", "index is int32|must be int64", nul(dt_gather(F, 0, I)))             \
  X_(gather_ndim, DT_ERR_SHAPE, "dt_gather:", "index has 1 dimensions (shape (3,))|x has 2", nul(dt_gather(F, 0, L)))    \
  X_(gather_dim, DT_ERR_INVALID_ARGUMENT, "dt_gather:", "dim 2 out of range for a 2-d tensor", nul(gat(F, 2, GI_OK, dt_shape2(1, 3), dt_cpu()))) \
  X_(gather_size, DT_ERR_SHAPE, "dt_gather:", "index has shape (2, 4)|size 4 at dimension 1 is larger than x's, 3", nul(gat(F, 0, GI_BIG, dt_shape2(2, 4), dt_cpu()))) \
  X_(gather_range, DT_ERR_INVALID_ARGUMENT, "dt_gather:", "index holds 2 (its element 1)|size 2 (expected 0 to 1)", nul(gat(F, 0, GI_RANGE, dt_shape2(1, 3), dt_cpu()))) \
  X_(gather_negative, DT_ERR_INVALID_ARGUMENT, "dt_gather:", "index holds -1", nul(gat(F, 0, GI_NEG, dt_shape2(1, 3), dt_cpu()))) \
  X_(gather_empty_dim, DT_ERR_INVALID_ARGUMENT, "dt_gather:", "has size 0, so none is in range", nul(empty_gather()))     \
  X_(gather_device, DT_ERR_DEVICE_MISMATCH, "dt_gather:", "index is on cpu|x is on cuda:0", GPUS(1, nul(gat(G0, 0, GI_OK, dt_shape2(1, 3), dt_cpu())))) \
  X_(scatter_null_x, DT_ERR_INVALID_ARGUMENT, "dt_scatter_add:", "=x is NULL", nul(dt_scatter_add(NULL, 0, L, F)))     \
  X_(scatter_null_src, DT_ERR_INVALID_ARGUMENT, "dt_scatter_add:", "=src is NULL", nul(sca(F, 0, GI_OK, dt_shape2(1, 3), dt_cpu(), NULL))) \
  X_(scatter_dtype, DT_ERR_DTYPE, "dt_scatter_add:", "x is float32 and src is float64", nul(sca(F, 0, GI_OK, dt_shape2(1, 3), dt_cpu(), D))) \
  X_(scatter_bool, DT_ERR_DTYPE, "dt_scatter_add:", "x is bool|float32, float64, int32 or int64", nul(cmp_2(scatter_bool2, cmp_bool(), cmp_bool()))) \
  X_(scatter_src_small, DT_ERR_SHAPE, "dt_scatter_add:", "larger than src's", nul(sca(F, 0, GI_BIG, dt_shape2(2, 3), dt_cpu(), Y))) \
  X_(scatter_range, DT_ERR_INVALID_ARGUMENT, "dt_scatter_add:", "index holds 2 (its element 1)", nul(sca(F, 0, GI_RANGE, dt_shape2(1, 3), dt_cpu(), F))) \
  X_(scatter_device, DT_ERR_DEVICE_MISMATCH, "dt_scatter_add:", "src is on cuda:0|x is on cpu", GPUS(1, nul(sca(F, 0, GI_OK, dt_shape2(1, 3), dt_cpu(), G0)))) \
  X_(scatter_inplace_ok, DT_OK, "", "", bad(sca_(0)))                                                                  \
  X_(scatter_inplace_leaf, DT_ERR_INVALID_ARGUMENT, "dt_scatter_add_:", "x is a leaf that requires grad", bad(sca_(1))) \
  X_(scatter_inplace_src_grad, DT_ERR_UNSUPPORTED, "dt_scatter_add_:", "src requires grad|use dt_scatter_add", bad(sca_(2))) \
  X_(scatter_inplace_src_is_x, DT_ERR_INVALID_ARGUMENT, "dt_scatter_add_:", "src shares x's memory", bad(sca_(3)))           \
  X_(pad_null, DT_ERR_INVALID_ARGUMENT, "dt_pad:", "=x is NULL", nul(dt_pad(NULL, PAD_ODD, 2, 0)))                       \
  X_(pad_odd, DT_ERR_INVALID_ARGUMENT, "dt_pad:", "npad is 3|even", nul(dt_pad(F, PAD_ODD, 3, 0)))                      \
  X_(pad_too_many, DT_ERR_INVALID_ARGUMENT, "dt_pad:", "npad is 6|at most twice", nul(dt_pad(F, GI_BIG, 6, 0)))        \
  X_(pad_null_pad, DT_ERR_INVALID_ARGUMENT, "dt_pad:", "pad is NULL", nul(dt_pad(F, NULL, 2, 0)))                      \
  X_(pad_negative_size, DT_ERR_SHAPE, "dt_pad:", "has size 3|pad[0] = -2|negative (-1)", nul(dt_pad(F, PAD_CROP, 2, 0))) \
  X_(pad_huge, DT_ERR_INVALID_ARGUMENT, "dt_pad:", "pad[1] = 1099511627776", nul(dt_pad(F, PAD_HUGE, 2, 0)))          \
  X_(randperm_negative, DT_ERR_INVALID_ARGUMENT, "dt_randperm:", "n is -1", nul(dt_randperm(-1, dt_cpu())))             \
  X_(randperm_gpu7, DT_ERR_NO_DEVICE, "dt_randperm:", "cuda:7", nul(dt_randperm(4, GPU7)))                              \
  X_(randint_empty_range, DT_ERR_INVALID_ARGUMENT, "dt_randint:", "low is 3 and high is 3", nul(dt_randint(3, 3, dt_shape1(2), dt_cpu()))) \
  X_(randint_neg_shape, DT_ERR_SHAPE, "dt_randint:", "negative", nul(dt_randint(0, 3, dt_shape1(-1), dt_cpu()))) \
  /* the losses */                                                                                                           \
  X_(bce_null_logits, DT_ERR_INVALID_ARGUMENT, "dt_bce_with_logits:", "=logits is NULL", nul(dt_bce_with_logits(NULL, F)))  \
  X_(bce_null_target, DT_ERR_INVALID_ARGUMENT, "dt_bce_with_logits:", "=target is NULL", nul(dt_bce_with_logits(F, NULL)))  \
  X_(bce_dtype, DT_ERR_DTYPE, "dt_bce_with_logits:", "logits is float32 and target is float64", nul(dt_bce_with_logits(F, D))) \
  X_(bce_shape, DT_ERR_SHAPE, "dt_bce_with_logits:", "=logits has shape (2, 3) but target has shape (3,)", nul(dt_bce_with_logits(F, V))) \
  X_(bce_int, DT_ERR_DTYPE, "dt_bce_with_logits:", "logits is int32|float32, float64", nul(dt_bce_with_logits(I, I)))   \
  X_(bce_reduction, DT_ERR_INVALID_ARGUMENT, "dt_bce_with_logits:", "unknown reduction 7", nul(dt_bce_with_logits_ex(F, F, (dt_reduction)7))) \
  X_(bce_reduction_neg, DT_ERR_INVALID_ARGUMENT, "dt_bce_with_logits:", "unknown reduction -1", nul(dt_bce_with_logits_ex(F, F, (dt_reduction)-1))) \
  X_(bce_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_bce_with_logits:", "target is on cpu|logits is on cuda:0", GPUS(1, nul(dt_bce_with_logits(G0, F)))) \
  X_(bce_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_bce_with_logits:", "target is on cuda:1|logits is on cuda:0", GPUS(2, nul(dt_bce_with_logits(G0, G1)))) \
  X_(nll_null, DT_ERR_INVALID_ARGUMENT, "dt_nll_loss:", "=log_probs is NULL", nul(dt_nll_loss(NULL, L)))                   \
  X_(nll_null_target, DT_ERR_INVALID_ARGUMENT, "dt_nll_loss:", "=target is NULL", nul(dt_nll_loss(F, NULL)))               \
  X_(nll_int, DT_ERR_DTYPE, "dt_nll_loss:", "log_probs is int32", nul(dt_nll_loss(I, L)))                                  \
  X_(nll_target_float, DT_ERR_DTYPE, "dt_nll_loss:", "=target must be int64 (class indices), got float32", nul(dt_nll_loss(X, LABF))) \
  X_(nll_shape, DT_ERR_SHAPE, "dt_nll_loss:", "=expected log_probs (n, c) and target (n,), got (2, 3) and (3,)", nul(dt_nll_loss(F, L))) \
  X_(nll_label_big, DT_ERR_INVALID_ARGUMENT, "dt_nll_loss:", "target[2] = 2 is out of range for 2 classes", nul(dt_nll_loss(Y, LABBIG))) \
  X_(nll_label_neg, DT_ERR_INVALID_ARGUMENT, "dt_nll_loss:", "target[1] = -1 is out of range", nul(dt_nll_loss(Y, LABNEG))) \
  X_(nll_reduction, DT_ERR_INVALID_ARGUMENT, "dt_nll_loss:", "unknown reduction 3", nul(dt_nll_loss_ex(Y, LAB, (dt_reduction)3))) \
  X_(nll_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_nll_loss:", "target is on cpu|log_probs is on cuda:0", GPUS(1, nul(dt_nll_loss(GY, LAB)))) \
  X_(l1_null, DT_ERR_INVALID_ARGUMENT, "dt_l1_loss:", "=x is NULL", nul(dt_l1_loss(NULL, F)))                              \
  X_(l1_null_y, DT_ERR_INVALID_ARGUMENT, "dt_l1_loss:", "=y is NULL", nul(dt_l1_loss_ex(F, NULL, DT_REDUCTION_SUM)))       \
  X_(l1_dtype, DT_ERR_DTYPE, "dt_l1_loss:", "x is float64 and y is float32", nul(dt_l1_loss(D, F)))                        \
  X_(l1_shape, DT_ERR_SHAPE, "dt_l1_loss:", "x has shape (2, 3) but y has shape (2, 2, 2, 2)", nul(dt_l1_loss(F, M4)))     \
  X_(l1_gpu_cpu, DT_ERR_DEVICE_MISMATCH, "dt_l1_loss:", "y is on cuda:0|x is on cpu", GPUS(1, nul(dt_l1_loss(F, G0))))    \
  X_(smooth_l1_null, DT_ERR_INVALID_ARGUMENT, "dt_smooth_l1_loss:", "=x is NULL", nul(dt_smooth_l1_loss(NULL, F, 1)))     \
  X_(smooth_l1_beta_neg, DT_ERR_INVALID_ARGUMENT, "dt_smooth_l1_loss:", "=beta must be at least 0 (0 is l1_loss), got -1", nul(dt_smooth_l1_loss(F, F, -1))) \
  X_(smooth_l1_beta_nan, DT_ERR_INVALID_ARGUMENT, "dt_smooth_l1_loss:", "beta must be at least 0|nan", nul(dt_smooth_l1_loss(F, F, NAN))) \
  X_(smooth_l1_int, DT_ERR_DTYPE, "dt_smooth_l1_loss:", "x is int32", nul(dt_smooth_l1_loss_ex(I, I, 1, DT_REDUCTION_NONE))) \
  X_(smooth_l1_gpu0_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_smooth_l1_loss:", "y is on cuda:1|x is on cuda:0", GPUS(2, nul(dt_smooth_l1_loss(G0, G1, 1)))) \
  X_(mse_ex_null, DT_ERR_INVALID_ARGUMENT, "dt_mse_loss_ex:", "=pred is NULL", nul(dt_mse_loss_ex(NULL, F, DT_REDUCTION_MEAN))) \
  X_(mse_ex_reduction, DT_ERR_INVALID_ARGUMENT, "dt_mse_loss_ex:", "unknown reduction 9", nul(dt_mse_loss_ex(F, F, (dt_reduction)9))) \
  X_(mse_ex_dtype, DT_ERR_DTYPE, "dt_mse_loss_ex:", "pred is float32 and target is float64", nul(dt_mse_loss_ex(F, D, DT_REDUCTION_SUM))) \
  X_(matmul_precision_bad, DT_ERR_INVALID_ARGUMENT, "dt_set_float32_matmul_precision:", "=expected \"highest\", \"high\" or \"medium\", got \"fast\"", bad(dt_set_float32_matmul_precision("fast"))) \
  X_(matmul_precision_null, DT_ERR_INVALID_ARGUMENT, "dt_set_float32_matmul_precision:", "precision is NULL", bad(dt_set_float32_matmul_precision(NULL))) \
  X_(half_sgd, DT_ERR_DTYPE, "dt_sgd_tensors:", "params[0] is int32; only float tensors", half_misuse(1))                     \
  X_(half_backward, DT_ERR_UNSUPPORTED, "dt_backward_params:", "m is bfloat16; a float16 or bfloat16 module goes back with dt_autograd_backward", half_misuse(2)) \
  X_(half_data_parallel, DT_OK, "", "", GPUS(2, half_misuse(5)))                                                          \
  X_(half_param_i64, DT_ERR_DTYPE, "dt_module_to_dtype:", "float32, float64, float16 or bfloat16, not int64", half_misuse(4))  \
  X_(half_all_reduce, DT_ERR_INVALID_ARGUMENT, "dt_all_reduce_:", "unknown op 9", half_misuse(3)) \
  /* graphs */                                                                                                              \
  X_(graph_begin_no_device, DT_ERR_NO_DEVICE, "dt_graph_begin:", "no such device cuda:7", bad(dt_graph_begin(dt_gpu(7)))) \
  X_(graph_begin_neg_device, DT_ERR_INVALID_ARGUMENT, "dt_graph_begin:", "invalid device index -1", bad(dt_graph_begin(dt_gpu(-1)))) \
  X_(graph_end_no_device, DT_ERR_NO_DEVICE, "dt_graph_end:", "no such device cuda:7", gnul(dt_graph_end(dt_gpu(7))))      \
  X_(graph_end_no_begin, DT_ERR_INVALID_ARGUMENT, "dt_graph_end:", "=cpu is not being captured (start a capture with dt_graph_begin)", gnul(dt_graph_end(dt_cpu()))) \
  X_(graph_begin_twice, DT_ERR_INVALID_ARGUMENT, "dt_graph_begin:", "cpu is already being captured", graph_misuse(0))  \
  X_(graph_sync_in_capture, DT_ERR_UNSUPPORTED, "dt_graph_end:", "invalid|dt_synchronize|waiting for the device", graph_misuse(1)) \
  X_(graph_item_in_capture, DT_ERR_UNSUPPORTED, "dt_graph_end:", "cuda:0 is invalid|dt_item|host memory", GPUS(1, graph_misuse(2))) \
  X_(graph_other_device, DT_ERR_UNSUPPORTED, "dt_graph_end:", "invalid|dt_copyto|another device", GPUS(1, graph_misuse(3))) \
  X_(graph_replay_stale, DT_ERR_INVALID_ARGUMENT, "dt_graph_replay:", "existed when the capture began|released", graph_misuse(4)) \
  X_(graph_replay_null, DT_ERR_INVALID_ARGUMENT, "dt_graph_replay:", "=g is NULL", bad(dt_graph_replay(NULL))) \
  X_(graph_randperm_in_capture, DT_ERR_UNSUPPORTED, "dt_graph_end:", "invalid|dt_randperm|permutation made on the host", graph_misuse(5)) \
  /* dropout, batch and layer norm, embedding, GELU, buffers */                                                              \
  X_(f_dropout_null, DT_ERR_INVALID_ARGUMENT, "dt_f_dropout:", "=x is NULL", nul(dt_f_dropout(NULL, 0.5, 1)))                \
  X_(f_dropout_p_big, DT_ERR_INVALID_ARGUMENT, "dt_f_dropout:", "=dropout probability has to be between 0 and 1, but got 1.5", nul(dt_f_dropout(F, 1.5, 1))) \
  X_(f_dropout_p_neg_eval, DT_ERR_INVALID_ARGUMENT, "dt_f_dropout:", "between 0 and 1|-0.25", nul(dt_f_dropout(F, -0.25, 0))) \
  X_(f_dropout_p_nan, DT_ERR_INVALID_ARGUMENT, "dt_f_dropout:", "between 0 and 1", nul(dt_f_dropout(F, NAN, 1)))             \
  X_(f_dropout_int, DT_ERR_DTYPE, "dt_f_dropout:", "x is int32|float32, float64", nul(dt_f_dropout(I, 0.5, 1)))            \
  X_(f_dropout_eval_ok, DT_OK, "", "", nul(dt_f_dropout(F, 0.5, 0)))                                                         \
  X_(f_dropout_gpu_ok, DT_OK, "", "", GPUS(1, nul(dt_f_dropout(G0, 0.5, 1))))                                                \
  X_(dropout_p, DT_ERR_INVALID_ARGUMENT, "dt_dropout:", "=dropout probability has to be between 0 and 1, but got -0.5", nulm(dt_dropout(-0.5))) \
  X_(dropout_fwd_int, DT_ERR_DTYPE, "dt_f_dropout:", "x is int32", mod_fwd(dt_dropout(0.5), I))                              \
  X_(f_bn_null, DT_ERR_INVALID_ARGUMENT, "dt_f_batch_norm:", "=x is NULL", nul(dt_f_batch_norm(NULL, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))) \
  X_(f_bn_int, DT_ERR_DTYPE, "dt_f_batch_norm:", "x is int32", nul(dt_f_batch_norm(I, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))) \
  X_(f_bn_1d, DT_ERR_SHAPE, "dt_f_batch_norm:", "=expected x of 2 to 4 dims, (n, c), (n, c, l) or (n, c, h, w), got (3,)", nul(dt_f_batch_norm(V, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))) \
  X_(f_bn_weight_shape, DT_ERR_SHAPE, "dt_f_batch_norm:", "=expected weight of shape (3,), got (2, 3)", nul(dt_f_batch_norm(F, NULL, NULL, F, NULL, 1, 0.1, 1e-5))) \
  X_(f_bn_bias_dtype, DT_ERR_DTYPE, "dt_f_batch_norm:", "x is float32 and bias is float64", nul(dt_f_batch_norm(F, NULL, NULL, V, D, 1, 0.1, 1e-5))) \
  X_(f_bn_running_shape, DT_ERR_SHAPE, "dt_f_batch_norm:", "running_var of shape (3,)|(2, 3)", nul(dt_f_batch_norm(F, V, F, NULL, NULL, 1, 0.1, 1e-5))) \
  X_(f_bn_eval_no_running, DT_ERR_INVALID_ARGUMENT, "dt_f_batch_norm:", "=running_mean and running_var are needed when not training", nul(dt_f_batch_norm(F, V, NULL, NULL, NULL, 0, 0.1, 1e-5))) \
  X_(f_bn_one_value, DT_ERR_SHAPE, "dt_f_batch_norm:", "=Expected more than 1 value per channel when training, got input size (1, 3)", nul(dt_f_batch_norm(row1(3), NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))) \
  X_(f_bn_one_value_eval_ok, DT_OK, "", "", nul(dt_f_batch_norm(row1(3), V, V, NULL, NULL, 0, 0.1, 1e-5)))                   \
  X_(f_bn_momentum, DT_ERR_INVALID_ARGUMENT, "dt_f_batch_norm:", "momentum in [0, 1]|got 2 and", nul(dt_f_batch_norm(F, NULL, NULL, NULL, NULL, 1, 2.0, 1e-5))) \
  X_(f_bn_eps, DT_ERR_INVALID_ARGUMENT, "dt_f_batch_norm:", "eps >= 0", nul(dt_f_batch_norm(F, NULL, NULL, NULL, NULL, 1, 0.1, -1.0))) \
  X_(f_bn_weight_cpu, DT_ERR_DEVICE_MISMATCH, "dt_f_batch_norm:", "=expected all tensors on the same device, but weight is on cpu and x is on cuda:0 (move one with dt_to)", GPUS(1, nul(dt_f_batch_norm(G0, NULL, NULL, V, NULL, 1, 0.1, 1e-5)))) \
  X_(f_bn_running_gpu1, DT_ERR_DEVICE_MISMATCH, "dt_f_batch_norm:", "running_mean is on cuda:0 and x is on cuda:1", GPUS(2, nul(dt_f_batch_norm(G1, G0V, NULL, NULL, NULL, 1, 0.1, 1e-5)))) \
  X_(f_bn_gpu_ok, DT_OK, "", "", GPUS(1, nul(dt_f_batch_norm(G0, G0V, G0V, G0V, G0V, 1, 0.1, 1e-5))))                        \
  X_(bn_neg, DT_ERR_SHAPE, "dt_batch_norm:", "=expected num_features >= 0 (0: lazy), got -1", nulm(dt_batch_norm(-1)))       \
  X_(bn_channels, DT_ERR_SHAPE, "dt_batch_norm:", "=expected x with 3 channels (dim 1), got (1, 2, 5, 5)", mod_fwd(dt_batch_norm(3), cv(1, 2, 5, 5))) \
  X_(bn_1d, DT_ERR_SHAPE, "dt_batch_norm:", "(n, c, h, w)|got (3,)", mod_fwd(dt_batch_norm(3), V))                           \
  X_(bn_one_value, DT_ERR_SHAPE, "dt_f_batch_norm:", "Expected more than 1 value per channel when training|(1, 3)", mod_fwd(dt_batch_norm(3), row1(3))) \
  X_(bn_lazy_no_channels, DT_ERR_SHAPE, "dt_batch_norm:", "takes its channels from x|(2, 0, 1, 1)", mod_fwd(dt_batch_norm(0), cv(2, 0, 1, 1))) \
  X_(bn_lazy_int, DT_ERR_DTYPE, "dt_batch_norm:", "x is int32|float32, float64", mod_fwd(dt_batch_norm(0), I))         \
  X_(bn_dtype, DT_ERR_DTYPE, "dt_forward:", "x is float64 but the module is float32|dt_cast|dt_module_to_dtype", mod_fwd(dt_batch_norm(3), D)) \
  X_(forward_int_x, DT_ERR_DTYPE, "dt_forward:", "=x is int32 but the module is float32 (convert x with dt_cast)", nul(dt_forward(NET, I))) \
  X_(bn_gpu_x, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "x is on cuda:0 but|cpu", GPUS(1, mod_fwd(dt_batch_norm(3), G0)))      \
  X_(f_ln_null, DT_ERR_INVALID_ARGUMENT, "dt_f_layer_norm:", "=x is NULL", nul(dt_f_layer_norm(NULL, 3, NULL, NULL, 1e-5)))  \
  X_(f_ln_int, DT_ERR_DTYPE, "dt_f_layer_norm:", "x is int32", nul(dt_f_layer_norm(I, 3, NULL, NULL, 1e-5)))                 \
  X_(f_ln_shape, DT_ERR_SHAPE, "dt_f_layer_norm:", "=expected x of shape (*, 4) (normalized_shape at least 1), got (2, 3)", nul(dt_f_layer_norm(F, 4, NULL, NULL, 1e-5))) \
  X_(f_ln_0d, DT_ERR_SHAPE, "dt_f_layer_norm:", "(*, 1)|got ()", nul(dt_f_layer_norm(S, 1, NULL, NULL, 1e-5)))               \
  X_(f_ln_weight_shape, DT_ERR_SHAPE, "dt_f_layer_norm:", "=expected weight of shape (3,), got (2, 3)", nul(dt_f_layer_norm(F, 3, F, NULL, 1e-5))) \
  X_(f_ln_bias_dtype, DT_ERR_DTYPE, "dt_f_layer_norm:", "x is float32 and bias is float64", nul(dt_f_layer_norm(F, 3, V, D, 1e-5))) \
  X_(f_ln_eps, DT_ERR_INVALID_ARGUMENT, "dt_f_layer_norm:", "eps >= 0|-1", nul(dt_f_layer_norm(F, 3, NULL, NULL, -1.0)))     \
  X_(f_ln_weight_cpu, DT_ERR_DEVICE_MISMATCH, "dt_f_layer_norm:", "weight is on cpu and x is on cuda:0", GPUS(1, nul(dt_f_layer_norm(G0, 3, V, NULL, 1e-5)))) \
  X_(f_ln_gpu_ok, DT_OK, "", "", GPUS(1, nul(dt_f_layer_norm(G0, 3, G0V, G0V, 1e-5))))                                       \
  X_(ln_zero, DT_ERR_SHAPE, "dt_layer_norm:", "=expected normalized_shape >= 1, got 0", nulm(dt_layer_norm(0)))              \
  X_(ln_fwd_shape, DT_ERR_SHAPE, "dt_f_layer_norm:", "(*, 4)|(2, 3)", mod_fwd(dt_layer_norm(4), F))                          \
  X_(f_emb_null_idx, DT_ERR_INVALID_ARGUMENT, "dt_f_embedding:", "=idx is NULL", nul(dt_f_embedding(NULL, F)))               \
  X_(f_emb_null_weight, DT_ERR_INVALID_ARGUMENT, "dt_f_embedding:", "=weight is NULL", nul(dt_f_embedding(L, NULL)))         \
  X_(f_emb_idx_dtype, DT_ERR_DTYPE, "dt_f_embedding:", "=idx is int32; indices are int64 (convert with dt_cast)", nul(dt_f_embedding(I, F))) \
  X_(f_emb_weight_int, DT_ERR_DTYPE, "dt_f_embedding:", "weight is int32", nul(dt_f_embedding(L, I)))                        \
  X_(f_emb_weight_1d, DT_ERR_SHAPE, "dt_f_embedding:", "=expected weight of shape (num_embeddings, embedding_dim), got (3,)", nul(dt_f_embedding(L, V))) \
  X_(f_emb_range, DT_ERR_INVALID_ARGUMENT, "dt_f_embedding:", "idx does not fit weight (2, 3)|out of range", nul(dt_f_embedding(L, F))) \
  X_(f_emb_8d, DT_ERR_SHAPE, "dt_f_embedding:", "idx has 8 dims", nul(dt_f_embedding(idx8(), F))) \
  X_(f_emb_gpu_weight, DT_ERR_DEVICE_MISMATCH, "dt_f_embedding:", "idx is on cpu and weight is on cuda:0", GPUS(1, nul(dt_f_embedding(L, G0)))) \
  X_(emb_zero, DT_ERR_SHAPE, "dt_embedding:", "num_embeddings and embedding_dim >= 1|0 and 3", nulm(dt_embedding(0, 3)))     \
  X_(emb_huge, DT_ERR_SHAPE, "dt_embedding:", "fits", nulm(dt_embedding(BIG, BIG)))                                          \
  X_(emb_fwd_float, DT_ERR_DTYPE, "dt_f_embedding:", "idx is float32", mod_fwd(dt_embedding(3, 2), F))                       \
  X_(emb_fwd_int32, DT_ERR_DTYPE, "dt_f_embedding:", "idx is int32", mod_fwd(dt_embedding(3, 2), I))                         \
  X_(gelu_layer_int, DT_ERR_DTYPE, "dt_gelu:", "int32", mod_fwd(dt_gelu_layer(), I))                                         \
  X_(add_buffer_null, DT_ERR_INVALID_ARGUMENT, "dt_module_add_buffer:", "=m is NULL", bad(dt_module_add_buffer(NULL, "b", F))) \
  X_(add_buffer_null_t, DT_ERR_INVALID_ARGUMENT, "dt_module_add_buffer:", "=t is NULL", buffer_bad(5))                       \
  X_(add_buffer_not_user, DT_ERR_INVALID_ARGUMENT, "dt_module_add_buffer:", "not a module made by dt_module_new", bad(dt_module_add_buffer(NET, "b", F))) \
  X_(add_buffer_twice, DT_ERR_INVALID_ARGUMENT, "dt_module_add_buffer:", "=m already has a buffer named \"running_mean\"", buffer_bad(0)) \
  X_(add_buffer_param_name, DT_ERR_INVALID_ARGUMENT, "dt_module_add_buffer:", "already has a parameter named \"bias\"", buffer_bad(1)) \
  X_(add_buffer_device, DT_ERR_DEVICE_MISMATCH, "dt_module_add_buffer:", "extra is on cuda:0 but the module is on cpu", GPUS(1, buffer_bad(2))) \
  X_(add_buffer_requires_grad, DT_ERR_INVALID_ARGUMENT, "dt_module_add_buffer:", "requires grad", buffer_bad(3))             \
  X_(add_buffer_seq, DT_ERR_INVALID_ARGUMENT, "dt_module_add_buffer:", "not a module made by dt_module_new", buffer_bad(4))  \
  X_(get_buffer_null, DT_ERR_INVALID_ARGUMENT, "dt_module_get_buffer:", "=m is NULL", nul(dt_module_get_buffer(NULL, "running_mean"))) \
  X_(get_buffer_missing, DT_ERR_INVALID_ARGUMENT, "dt_module_get_buffer:", "=m has no buffer named \"0.running_mean\"", nul(dt_module_get_buffer(NET, "0.running_mean"))) \
  /* the convolution and pooling modules */                                                                                  \
  X_(conv2d_kernel0, DT_ERR_INVALID_ARGUMENT, "dt_conv2d:", "=kernel_size must be at least 1, got (0, 0)", nulm(dt_conv2d(3, 4, 0, 1, 0))) \
  X_(conv2d_stride0, DT_ERR_INVALID_ARGUMENT, "dt_conv2d:", "=stride must be at least 1, got (0, 0)", nulm(dt_conv2d(3, 4, 3, 0, 0))) \
  X_(conv2d_padding_neg, DT_ERR_INVALID_ARGUMENT, "dt_conv2d:", "=padding must be non-negative, got (-1, -1)", nulm(dt_conv2d(3, 4, 3, 1, -1))) \
  X_(conv2d_in_neg, DT_ERR_SHAPE, "dt_conv2d:", "in_channels >= 0 (0: lazy)|-1 and 4", nulm(dt_conv2d(-1, 4, 3, 1, 0)))      \
  X_(conv2d_out0, DT_ERR_SHAPE, "dt_conv2d:", "out_channels > 0|3 and 0", nulm(dt_conv2d(3, 0, 3, 1, 0)))                    \
  X_(conv2d_groups, DT_ERR_INVALID_ARGUMENT, "dt_conv2d:", "groups|divide in_channels 3 and out_channels 4, got 2", nulm(dt_conv2d_ex(3, 4, 3, 3, 1, 1, 0, 0, 2, 1))) \
  X_(conv2d_channels, DT_ERR_SHAPE, "dt_f_conv2d:", "x's channels / groups = 2 / 1 = 2|(4, 3, 3, 3)", mod_fwd(dt_conv2d(3, 4, 3, 1, 0), cv(1, 2, 8, 8))) \
  X_(conv2d_small, DT_ERR_SHAPE, "dt_f_conv2d:", "input smaller than the kernel|(1, 2, 4, 4)", mod_fwd(dt_conv2d(2, 4, 5, 1, 0), cv(1, 2, 4, 4))) \
  X_(conv2d_x_3d, DT_ERR_SHAPE, "dt_f_conv2d:", "4-d (n, c, h, w)|(2, 3, 4)", mod_fwd(dt_conv2d(3, 4, 3, 1, 0), B3))         \
  X_(conv2d_lazy_groups, DT_ERR_SHAPE, "dt_conv2d:", "groups 2 does not divide x's 3 channels", mod_fwd(dt_conv2d_ex(0, 4, 3, 3, 1, 1, 0, 0, 2, 1), cv(1, 3, 5, 5))) \
  X_(conv2d_lazy_3d, DT_ERR_SHAPE, "dt_conv2d:", "(2, 3, 4)", mod_fwd(dt_conv2d(0, 4, 3, 1, 0), B3))                         \
  X_(conv2d_gpu_x, DT_ERR_DEVICE_MISMATCH, "dt_forward:", "x is on cuda:0 but|cpu", GPUS(1, mod_fwd(dt_conv2d(2, 4, 3, 1, 0), cv_g(1, 2, 5, 5)))) \
  X_(max_pool2d_kernel0, DT_ERR_INVALID_ARGUMENT, "dt_max_pool2d:", "=kernel_size must be at least 1, got 0", nulm(dt_max_pool2d(0, 1, 0))) \
  X_(max_pool2d_stride_neg, DT_ERR_INVALID_ARGUMENT, "dt_max_pool2d:", "stride must be at least 1|-1", nulm(dt_max_pool2d(2, -1, 0))) \
  X_(max_pool2d_padding, DT_ERR_INVALID_ARGUMENT, "dt_max_pool2d:", "=padding must be between 0 and half the kernel size 2, got 2", nulm(dt_max_pool2d(2, 1, 2))) \
  X_(max_pool2d_small, DT_ERR_SHAPE, "dt_f_max_pool2d:", "(1, 1, 2, 2)", mod_fwd(dt_max_pool2d(3, 1, 0), cv(1, 1, 2, 2)))    \
  X_(avg_pool2d_kernel0, DT_ERR_INVALID_ARGUMENT, "dt_avg_pool2d:", "kernel_size must be at least 1", nulm(dt_avg_pool2d(0, 1, 0))) \
  X_(avg_pool2d_padding_neg, DT_ERR_INVALID_ARGUMENT, "dt_avg_pool2d:", "padding|-1", nulm(dt_avg_pool2d(3, 1, -1)))         \
  X_(avg_pool2d_x_2d, DT_ERR_SHAPE, "dt_f_avg_pool2d:", "(2, 3)", mod_fwd(dt_avg_pool2d(2, 0, 0), F))                        \
  X_(adaptive_avg_pool2d_zero, DT_ERR_INVALID_ARGUMENT, "dt_adaptive_avg_pool2d:", "=the output size must be at least 1, got (0, 2)", nulm(dt_adaptive_avg_pool2d(0, 2))) \
  X_(adaptive_avg_pool2d_x_3d, DT_ERR_SHAPE, "dt_f_adaptive_avg_pool2d:", "(2, 3, 4)", mod_fwd(dt_adaptive_avg_pool2d(2, 2), B3)) \
  /* autocast and the grad scaler */                                                                                      \
  X_(autocast_int, DT_ERR_DTYPE, "dt_set_autocast:", "float16 or bfloat16|got int32|integer tensors are never autocast", ac_dt(dt_set_autocast(DT_CPU, DT_I32))) \
  X_(autocast_where, DT_ERR_INVALID_ARGUMENT, "dt_set_autocast:", "=where must be DT_CPU or DT_CUDA, got 5", ac_dt(dt_set_autocast((dt_device_type)5, DT_BF16))) \
  X_(scaler_init_zero, DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_new:", "init_scale must be finite and > 0|got 0", scaler_nul(dt_grad_scaler_new(0))) \
  X_(scaler_init_nan, DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_new:", "init_scale must be finite and > 0", scaler_nul(dt_grad_scaler_new(NAN))) \
  X_(scaler_scale_null, DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_scale:", "=s is NULL", nul(dt_grad_scaler_scale(NULL, F))) \
  X_(scaler_scale_int, DT_ERR_DTYPE, "dt_grad_scaler_scale:", "loss is int32", autocast_scale_int()) \
  X_(scaler_step_null, DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_step:", "=o is NULL", autocast_misuse(2)) \
  X_(scaler_update_null, DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_update:", "=s is NULL", bad(dt_grad_scaler_update(NULL))) \
  X_(scaler_update_no_step, DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_update:", "no dt_grad_scaler_step since the last update", autocast_misuse(1)) \
  X_(trainer_autocast_int, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "tr.autocast must be DT_F32 (off), DT_F16 or DT_BF16, got int64", autocast_misuse(3)) \
  /* the trainer's tr.cuda_graph */                                                                                       \
  X_(trainer_graph_data_parallel, DT_ERR_UNSUPPORTED, "dt_trainer_fit:", "tr.cuda_graph cannot capture|data parallel|num_gpus > 1", graph_trainer_refused(4)) \
  X_(trainer_graph_value, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "=tr.cuda_graph must be 0 (off) or 1, got 2", graph_trainer_refused(5)) \
  /* data parallel training on two GPUs: what cannot be copied to the second */                                        \
  X_(trainer_dp_user_module, DT_ERR_UNSUPPORTED, "dt_trainer_fit:", "training on 2 GPUs copies the model to each|written with dt_module_new|cannot be copied", GPUS(2, dp_refused(0))) \
  X_(trainer_dp_lazy_conv, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "training on 2 GPUs copies the model to each, but it has a lazy layer", GPUS(2, dp_refused(1))) \
  X_(trainer_dp_lazy_batch_norm, DT_ERR_INVALID_ARGUMENT, "dt_trainer_fit:", "training on 2 GPUs copies the model to each, but it has a lazy layer", GPUS(2, dp_refused(2)))

#define X_DEF(name, want, prefix, words, call) static int bad_##name(void) { return (call); }
BAD_CASES(X_DEF)
#undef X_DEF

typedef struct bad_case { const char *name; int (*call)(void); dt_status want; const char *prefix, *words; } bad_case;
#define X_ROW(name, want, prefix, words, call) { #name, bad_##name, want, prefix, words },
static const bad_case CASES[] = { BAD_CASES(X_ROW) };
#undef X_ROW

static int h_calls;
static dt_status h_status;
static char h_msg[1024];
static void on_error(dt_status s, const char *msg, void *user) {
  (void)user;
  h_calls++; h_status = s;
  snprintf(h_msg, sizeof h_msg, "%s", msg);
}

/* Every word of `words` ('|' between them) is in msg. */
static int has_words(const char *msg, const char *words, char *missing, size_t n) {
  const char *w = words;
  while (*w) {
    const char *e = strchr(w, '|');
    size_t len = e ? (size_t)(e - w) : strlen(w);
    char word[128];
    if (len >= sizeof word) len = sizeof word - 1;
    memcpy(word, w, len); word[len] = 0;
    if (len && !strstr(msg, word)) { snprintf(missing, n, "%s", word); return 0; }
    w += len + (e ? 1 : 0);
    if (!e) break;
  }
  return 1;
}

static void run_cases(void) {
  size_t i, n = sizeof CASES / sizeof CASES[0];
  char name[128];
  for (i = 0; i < n; i++) {
    const bad_case *c = &CASES[i];
    int failed;
    char missing[128];
    t_cur_failed = 0; t_cur_skip = NULL;
    dt_clear_error();
    h_calls = 0; h_msg[0] = 0;
    dt_set_error_handler(on_error, NULL);
    failed = c->call();
    dt_set_error_handler(NULL, NULL);
    snprintf(name, sizeof name, "bad_input/%s", c->name);
    if (t_cur_skip) { /* a row for GPUs this machine does not have: nothing ran */
      T_CHECK_MSG(h_calls == 0, "a skipped row reported \"%s\"", h_msg);
    } else if (c->want == DT_OK) {
      T_CHECK_MSG(!failed, "the call failed: %s", dt_last_error());
      T_CHECK_MSG(dt_last_status() == DT_OK, "status %d: %s", (int)dt_last_status(), dt_last_error());
    } else {
      const char *msg = dt_last_error();
      T_CHECK_MSG(failed, "the call did not report a failure (status %d, \"%s\")", (int)dt_last_status(), msg);
      T_CHECK_MSG(dt_last_status() == c->want, "status %d (%s), expected %d (%s); \"%s\"", (int)dt_last_status(),
                  dt_status_string(dt_last_status()), (int)c->want, dt_status_string(c->want), msg);
      T_CHECK_MSG(strncmp(msg, c->prefix, strlen(c->prefix)) == 0 && msg[strlen(c->prefix)] == ' ',
                  "message does not start with \"%s \": \"%s\"", c->prefix, msg);
      if (c->words[0] == '=')
        T_CHECK_MSG(strncmp(msg, c->prefix, strlen(c->prefix)) == 0 && msg[strlen(c->prefix)] == ' ' &&
                    strcmp(msg + strlen(c->prefix) + 1, c->words + 1) == 0,
                    "message is not, word for word, \"%s %s\": \"%s\"", c->prefix, c->words + 1, msg);
      else
        T_CHECK_MSG(has_words(msg, c->words, missing, sizeof missing), "message lacks \"%s\": \"%s\"", missing, msg);
      T_CHECK_MSG(h_calls >= 1 && h_status == dt_last_status() && strcmp(h_msg, msg) == 0,
                  "the handler saw %d calls, last %d \"%s\"", h_calls, (int)h_status, h_msg);
    }
    t_report(name, NULL);
  }
}

/* ---- scenarios with state ---- */

static dt_module *mlp(int64_t in, int64_t hidden, int64_t out) {
  dt_module *net = dt_sequential();
  dt_sequential_add(net, dt_linear(in, hidden));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(hidden, out));
  return net;
}

/* dt_num_gpus: 0 leaves the reason, naming the function; with GPUs, no error. */
static void test_num_gpus(void) {
  int n;
  dt_clear_error();
  n = dt_num_gpus();
  T_CHECK(n >= 0);
  if (n == 0) {
    T_CHECK(dt_last_status() == DT_ERR_NO_DEVICE);
    T_CHECK_MSG(strncmp(dt_last_error(), "dt_num_gpus: ", 13) == 0 && strstr(dt_last_error(), "CUDA"), "%s", dt_last_error());
  } else {
    T_CHECK(dt_last_status() == DT_OK);
  }
  T_CHECK(dt_try_all_gpus(NULL, 0) == (n ? n : 1));
}

/* A failing call changes none of its outputs. */
static void test_outputs_untouched(void) {
  dt_device d = dt_gpu(5);
  float buf[6] = {9, 9, 9, 9, 9, 9};
  dt_tensor *c = dt_copyto(F, dt_cpu());
  float before[6], after[6];
  int i;
  T_CHECK(dt_device_parse("cuda:x", &d) != DT_OK && d.type == DT_CUDA && d.index == 5);
  T_CHECK(dt_device_parse("cpu:1", &d) != DT_OK && d.index == 5);
  T_CHECK(dt_to_host(F, buf, 8) != DT_OK && buf[0] == 9 && buf[5] == 9);
  dt_to_host(c, before, sizeof before);
  T_CHECK(dt_copy_(c, V) == DT_ERR_SHAPE);
  T_CHECK(dt_copy_(c, D) == DT_ERR_DTYPE);
  T_CHECK(dt_axpy_(c, 1, V) == DT_ERR_SHAPE);
  dt_to_host(c, after, sizeof after);
  for (i = 0; i < 6; i++) T_CHECK(before[i] == after[i]);
  T_CHECK(dt_device_get_info(dt_gpu(7), &INFO) == DT_ERR_NO_DEVICE);
  dt_release(c);
}

/* dt_sequential_add owns the layer; refused adds that would make a cycle or a layer with two owners. */
static void test_sequential_ownership(void) {
  dt_module *a = dt_sequential(), *b = dt_sequential(), *l = dt_linear(2, 2), *c = dt_sequential();
  T_CHECK(dt_sequential_add(a, l) == DT_OK);
  /* the same layer again: two owners would free it twice */
  T_CHECK(dt_sequential_add(a, l) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK_MSG(strncmp(dt_last_error(), "dt_sequential_add: ", 19) == 0, "%s", dt_last_error());
  T_CHECK(dt_sequential_add(b, dt_sequential_get(a, 0)) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_sequential_len(a) == 1 && dt_sequential_len(b) == 0);
  /* a cycle: b in a, then a in b */
  T_CHECK(dt_sequential_add(a, b) == DT_OK);
  T_CHECK(dt_sequential_add(b, a) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_sequential_add(c, c) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_module_num_params(a) == 2);
  /* freeing a borrowed layer is refused (the sequential frees it) */
  dt_clear_error();
  dt_module_free(dt_sequential_get(a, 0));
  T_CHECK(dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_sequential_len(a) == 2 && dt_linear_weight(dt_sequential_get(a, 0)) != NULL);
  dt_module_free(a); /* frees l and b too */
  dt_module_free(c);
}

/* A layer run on its own between a network's forward and backward breaks the chain: refused, never read out of bounds. */
static void test_backward_after_sublayer_forward(void) {
  dt_module *net = mlp(2, 3, 1);
  dt_tensor *x4 = dt_randn(dt_shape2(4, 2), dt_cpu()), *x8 = dt_randn(dt_shape2(8, 2), dt_cpu());
  dt_tensor *y = dt_forward(net, x4), *y0, *g = dt_ones(dt_shape2(4, 1), dt_cpu()), *gx;
  T_CHECK(y != NULL);
  y0 = dt_forward(dt_sequential_get(net, 0), x8); /* net[0] now holds an 8-row input */
  T_CHECK(y0 != NULL);
  gx = dt_backward(net, g);
  T_CHECK_MSG(gx == NULL && dt_last_status() == DT_ERR_SHAPE, "%s", dt_last_error());
  T_CHECK_MSG(strncmp(dt_last_error(), "dt_backward: ", 13) == 0, "%s", dt_last_error());
  dt_release(gx);
  T_CHECK_MSG(dt_backward_params(net, g) == DT_ERR_SHAPE && strncmp(dt_last_error(), "dt_backward_params: ", 20) == 0, "%s", dt_last_error());
  /* a fresh forward makes it whole again */
  dt_release(y);
  y = dt_forward(net, x4);
  gx = dt_backward(net, g);
  T_CHECK(gx && dt_dim(gx, 0) == 4 && dt_dim(gx, 1) == 2);
  T_CHECK(dt_backward_params(net, g) == DT_OK);
  dt_release(gx); dt_release(y); dt_release(y0); dt_release(g); dt_release(x4); dt_release(x8);
  dt_module_free(net);
}

/* A forward that fails in a later layer leaves no half-saved state behind. */
static void test_failed_forward_then_backward(void) {
  dt_module *net = dt_sequential();
  dt_tensor *x = dt_ones(dt_shape2(4, 2), dt_cpu()), *x8 = dt_ones(dt_shape2(8, 2), dt_cpu()), *bad, *y, *g, *gx;
  dt_sequential_add(net, dt_linear(2, 3));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(0, 2)); /* lazy: sized by the first forward */
  y = dt_forward(net, x);
  T_CHECK(y && dt_dim(y, 1) == 2);
  /* x of another dtype fails up front and leaves the last forward's state as it was */
  bad = dt_cast(x8, DT_F64);
  T_CHECK(dt_forward(net, bad) == NULL && dt_last_status() == DT_ERR_DTYPE);
  g = dt_ones(dt_shape2(4, 2), dt_cpu());
  gx = dt_backward(net, g);
  T_CHECK_MSG(gx && dt_dim(gx, 0) == 4, "%s", dt_last_error());
  dt_release(gx); dt_release(bad); dt_release(y); dt_release(g);
  dt_release(x); dt_release(x8);
  dt_module_free(net);
}

/* Shapes and numbers at the edges that are valid. */
static void test_valid_edges(void) {
  dt_tensor *e = dt_zeros(dt_shape2(0, 3), dt_cpu()), *s, *m, *r;
  dt_module *net = mlp(3, 2, 1);
  dt_tensor *x0 = dt_zeros(dt_shape2(0, 3), dt_cpu()), *y0;
  char buf[64];
  T_CHECK(e != NULL);
  s = dt_sum(e); T_CHECK(s && dt_item(s) == 0); dt_release(s);
  m = dt_mean(e); T_CHECK(m && isnan(dt_item(m)) && dt_last_status() == DT_OK); dt_release(m); /* mean of nothing is nan, as PyTorch */
  r = dt_matmul(e, F); T_CHECK(r == NULL); /* (0,3)@(2,3): shapes refuse */
  r = dt_sum_dim(e, 0); T_CHECK(r && dt_numel(r) == 3); dt_release(r);
  T_CHECK(dt_snprint(buf, sizeof buf, e) > 0);
  T_STREQ(buf, "tensor([], size=(0, 3))");
  y0 = dt_forward(net, x0);
  T_CHECK(y0 && dt_dim(y0, 0) == 0 && dt_dim(y0, 1) == 1);
  dt_release(y0); dt_release(x0); dt_release(e);
  dt_module_free(net);
}

/* Empty tensors may have huge other dims: no arithmetic on them may overflow (UBSan watches). */
static void test_empty_huge_dims(void) {
  dt_tensor *a = dt_empty(dt_shape3(0, U64(62), 4), DT_F32, dt_cpu());
  dt_tensor *b = dt_empty(dt_shape3(0, 1, U64(62)), DT_F32, dt_cpu());
  dt_tensor *c = dt_empty(dt_shape4(U64(62), 4, 0, 5), DT_F32, dt_cpu());
  dt_tensor *m1 = dt_empty(dt_shape3(0, 4, U64(62)), DT_F32, dt_cpu());
  dt_tensor *m2 = dt_empty(dt_shape3(0, U64(62), 4), DT_F32, dt_cpu());
  dt_tensor *r;
  T_CHECK(a && b && c && m1 && m2);
  r = dt_add(a, a); T_CHECK(r && dt_numel(r) == 0); dt_release(r);
  r = dt_mul(a, b); /* (0, 2^62, 4) with (0, 1, 2^62): 4 and 2^62 do not broadcast */
  T_CHECK(r == NULL && dt_last_status() == DT_ERR_SHAPE);
  r = dt_sum_dim(c, 3); T_CHECK_MSG(r && dt_numel(r) == 0 && dt_ndim(r) == 3, "%s", dt_last_error()); dt_release(r);
  r = dt_sum_dim(c, 2); /* (2^62, 4, 5) holds too many elements */
  T_CHECK(r == NULL && dt_last_status() == DT_ERR_SHAPE);
  r = dt_sum_dim(a, 0); T_CHECK(r == NULL && dt_last_status() == DT_ERR_SHAPE);
  r = dt_matmul(m1, m2); T_CHECK_MSG(r && dt_numel(r) == 0 && dt_dim(r, 2) == 4, "%s", dt_last_error()); dt_release(r);
  r = dt_sum(a); T_CHECK(r && dt_item(r) == 0); dt_release(r);
  r = dt_reshape(a, dt_shape2(-1, 4)); T_CHECK(r && dt_dim(r, 0) == 0 && dt_dim(r, 1) == 4); dt_release(r); /* as PyTorch */
  dt_release(a); dt_release(b); dt_release(c); dt_release(m1); dt_release(m2);
}

/* Huge empty shapes where they reach a size in bytes or a stride: dt_trainer_fit's
   shuffle index (8 * (2^62 + 1) bytes wrapped to 8) and the printer's strides. */
static void test_empty_huge_fit_print(void) {
  dt_tensor *x = dt_empty(dt_shape2(U64(62), 0), DT_F32, dt_cpu());
  dt_tensor *y = dt_empty(dt_shape2(U64(62), 0), DT_F32, dt_cpu());
  dt_tensor *p = dt_empty(dt_shape3(0, U64(62), 4), DT_F32, dt_cpu());
  dt_tensor *q = dt_empty(dt_shape4(3, 0, INT64_MAX, INT64_MAX), DT_I64, dt_cpu());
  char buf[128];
  T_CHECK(x && y && p && q);
  dt_clear_error();
  T_CHECK(dt_trainer_fit(&TR, NET, x, y) == DT_ERR_OUT_OF_MEMORY);
  T_CHECK_MSG(strstr(dt_last_error(), "dt_trainer_fit: out of memory on the host: X has 4611686018427387904 rows") == dt_last_error(),
              "%s", dt_last_error());
  T_CHECK(dt_snprint(buf, sizeof buf, p) > 0);
  T_STREQ(buf, "tensor([], size=(0, 4611686018427387904, 4))"); /* torch.empty(0, 2**62, 4) */
  T_CHECK(dt_snprint(buf, sizeof buf, q) > 0);
  T_STREQ(buf, "tensor([], size=(3, 0, 9223372036854775807, 9223372036854775807),\n       dtype=torch.int64)"); /* past 80 columns */
  dt_release(x); dt_release(y); dt_release(p); dt_release(q);
}

/* Networks deeper than the parameter table: training must not skip layers silently. */
static void test_many_layers(void) {
  dt_module *net = dt_sequential();
  dt_tensor *x = dt_ones(dt_shape2(1, 1), dt_cpu()), *y, *g, *gx, *w;
  float before, after;
  dt_status s;
  int i;
  for (i = 0; i < 300; i++) T_CHECK(dt_sequential_add(net, dt_linear(1, 1)) == DT_OK);
  w = dt_linear_weight(dt_sequential_get(net, 299));
  dt_to_host(w, &before, sizeof before);
  y = dt_forward(net, x);
  g = dt_ones(dt_shape2(1, 1), dt_cpu());
  gx = dt_backward(net, g);
  T_CHECK(y && gx);
  s = dt_zero_grad(net);
  T_CHECK_MSG(s == DT_OK, "%s", dt_last_error()); /* no limit on the layers any more */
  dt_release(gx);
  gx = dt_backward(net, g);
  s = dt_sgd_step(net, 0.5);
  dt_to_host(w, &after, sizeof after);
  T_CHECK_MSG(s == DT_OK && after != before, "status %d, %g -> %g: %s", (int)s, before, after, dt_last_error());
  dt_release(gx); dt_release(g); dt_release(y); dt_release(x);
  dt_module_free(net);
}

int main(void) {
  static const float f6[6] = {1, 2, 3, 4, 5, 6};
  static const double d6[6] = {1, 2, 3, 4, 5, 6};
  static const int32_t i6[6] = {1, 2, 3, 4, 5, 6};
  static const int64_t l3[3] = {1, 2, 3}, ones8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  FILE *f;
  dt_tensor *y;
  int gpus_ok = 1;
  NGPU = dt_num_gpus();
  if (NGPU > 0) ALL_GPUS = NGPU;
#ifdef DEVTENSOR_CUDA
  snprintf(NEED1, sizeof NEED1, "needs a GPU; this machine has none");
  snprintf(NEED2, sizeof NEED2, "needs two GPUs; this machine has %d", NGPU);
#else
  snprintf(NEED1, sizeof NEED1, "needs a GPU; built without CUDA");
  snprintf(NEED2, sizeof NEED2, "needs two GPUs; built without CUDA");
#endif
  dt_clear_error();
  F = dt_from_data(f6, dt_shape2(2, 3), DT_F32, dt_cpu());
  D = dt_from_data(d6, dt_shape2(2, 3), DT_F64, dt_cpu());
  I = dt_from_data(i6, dt_shape2(2, 3), DT_I32, dt_cpu());
  L = dt_from_data(l3, dt_shape1(3), DT_I64, dt_cpu());
  V = dt_ones(dt_shape1(3), dt_cpu());
  S = dt_full(dt_shape0(), 2.0, dt_cpu());
  X = dt_randn(dt_shape2(5, 3), dt_cpu());
  Y = dt_randn(dt_shape2(5, 2), dt_cpu());
  M4 = dt_ones(dt_shape4(2, 2, 2, 2), dt_cpu());
  NET = mlp(3, 4, 2);
  LAZY = dt_sequential();
  dt_sequential_add(LAZY, dt_linear(0, 2));
  RELU = dt_relu_layer();
  NETR = mlp(3, 4, 2);
  y = dt_forward(NETR, X);
  if (!y) { dt_module_free(NETR); NETR = NULL; } /* reported as a fixture failure below */
  dt_release(y);
  YD = dt_cast(Y, DT_F64);
  B3 = dt_ones(dt_shape3(2, 3, 4), dt_cpu());
  C3 = dt_ones(dt_shape3(2, 4, 5), dt_cpu());
  C35 = dt_ones(dt_shape3(3, 4, 5), dt_cpu());
  T8 = dt_ones(dt_shape_n(8, ones8), dt_cpu());
  STK[0] = STK[1] = STK[2] = F;
  if (NGPU >= 1) {
    dt_device g = dt_gpu(0);
    G0 = dt_to(F, g); G0V = dt_to(V, g); GD0 = dt_to(D, g); GX = dt_to(X, g); GY = dt_to(Y, g);
    G0B3 = dt_to(B3, g); G0C3 = dt_to(C3, g);
    NETG = mlp(3, 4, 2);
    y = NETG && dt_module_to(NETG, g) == DT_OK ? dt_forward(NETG, GX) : NULL;
    gpus_ok = G0 && G0V && GD0 && GX && GY && G0B3 && G0C3 && y;
    dt_release(y);
  }
  if (NGPU >= 2) {
    dt_device g = dt_gpu(1);
    G1 = dt_to(F, g); G1X = dt_to(X, g); G1Y = dt_to(Y, g); G1C3 = dt_to(C3, g);
    gpus_ok = gpus_ok && G1 && G1X && G1Y && G1C3;
  }
  dt_trainer_init(&TR, 1, 0);
  TR.quiet = 1;
  gpus_ok = clf_fixtures() && gpus_ok;
  snprintf(OUTPATH, sizeof OUTPATH, "build/no/such/dir/x.safetensors");
  snprintf(BADFILE, sizeof BADFILE, "build/bad_input_%ld.safetensors", (long)getpid());
  f = fopen(BADFILE, "wb");
  if (f) { fwrite("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 1, 10, f); fclose(f); }
  RO = fopen(BADFILE, "rb");
  snprintf(TEXTFILE, sizeof TEXTFILE, "build/bad_input_%ld.txt", (long)getpid());
  snprintf(NETFILE, sizeof NETFILE, "build/bad_input_net_%ld.safetensors", (long)getpid());
  if (f && dt_module_save(NET, NETFILE) != DT_OK) f = NULL;
  snprintf(SHORTFILE, sizeof SHORTFILE, "build/bad_input_short_%ld.safetensors", (long)getpid());
  if (f && (f = fopen(TEXTFILE, "wb")) != NULL) { fputs("root:x:0:0:root:/root:/bin/bash\n", f); fclose(f); }
  if (f && (f = fopen(SHORTFILE, "wb")) != NULL) { fwrite("\x64\0\0\0\0\0\0\0{}", 1, 10, f); fclose(f); }
  if (!F || !D || !I || !L || !V || !S || !X || !Y || !M4 || !NET || !LAZY || !RELU || !NETR || !YD || !B3 || !C3 || !C35 ||
      !T8 || !gpus_ok || !f || !RO) {
    printf("FAIL bad_input: fixtures: %s\n0 passed, 1 failed, 0 skipped\n", dt_last_error());
    return 1;
  }
  run_cases();
  T_RUN(test_num_gpus);
  T_RUN(test_outputs_untouched);
  T_RUN(test_sequential_ownership);
  T_RUN(test_backward_after_sublayer_forward);
  T_RUN(test_failed_forward_then_backward);
  T_RUN(test_valid_edges);
  T_RUN(test_empty_huge_dims);
  T_RUN(test_empty_huge_fit_print);
  T_RUN(test_many_layers);
  fclose(RO);
  remove(BADFILE);
  remove(TEXTFILE);
  remove(SHORTFILE);
  remove(NETFILE);
  dt_release(F); dt_release(D); dt_release(I); dt_release(L); dt_release(V); dt_release(S);
  dt_release(X); dt_release(Y); dt_release(M4);
  dt_release(YD); dt_release(B3); dt_release(C3); dt_release(C35); dt_release(T8);
  dt_release(G0); dt_release(G0V); dt_release(GD0); dt_release(GX); dt_release(GY); dt_release(G0B3); dt_release(G0C3);
  dt_release(G1); dt_release(G1X); dt_release(G1Y); dt_release(G1C3);
  while (NCVT > 0) dt_release(CVT[--NCVT]);
  clf_release();
  dt_module_free(NET); dt_module_free(LAZY); dt_module_free(RELU); dt_module_free(NETR); dt_module_free(NETG);
  return t_finish();
}
