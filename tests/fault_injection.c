/* Fault injection, SQLite-style: every host allocation devtensor makes goes
   through a counting allocator (DT_MALLOC/DT_FREE, which also back the CPU
   backend's tensor data). A representative workload runs once for every
   N = 1, 2, ... with allocation number N failing ("single" mode), and again
   with N and every allocation after it failing ("persistent" mode), until a
   run completes without an injected failure.

   Every injected failure must surface as a NULL / non-OK return with
   dt_last_status() == DT_ERR_OUT_OF_MEMORY and a message that names the
   function ("dt_xxx: ... out of memory ..."); what the workload already held
   must be unchanged (checked for tensors, a network's parameters and a
   failed load); once the workload has released everything, the number of
   live allocations must be back to zero. The only allocations whose failure
   may be absorbed are the CPU matmul's packing buffers (the CPU matmul falls
   back to a loop that needs no memory); their results are checked. Calls
   that must be refused for their arguments (dt_stack's NULL list, count 0,
   NULL item, shapes, dtypes) must be refused before they allocate, so with
   their own status whatever is failing.

   Build: cc -std=c99 -I. tests/fault_injection.c -lm, also with -fopenmp and with
   -fsanitize=address,undefined (make fault builds and runs all three). FAULT_EVERY=k in
   the environment runs only N = 1, 1 + k, 1 + 2k, ... in each mode (make valgrind, where
   memcheck's cost falls on every run; the other builds run every N). Run from the repository root (it writes
   build/fault_injection_<pid>.safetensors and removes it). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- the counting allocator ---- */

static long fi_calls;            /* allocations asked for in this run */
static long fi_fail_at;          /* 0: never fail; else the number of the first failing one */
static int fi_persistent;        /* fail every allocation from fi_fail_at on */
static long fi_live;             /* live allocations */
static long fi_injected;         /* injected failures in this run */
static long fi_injected_hard;    /* ... of them at sites that must report it */
static long fi_bad_free;         /* DT_FREE of something DT_MALLOC did not give */
static long fi_max_calls;        /* the most allocations a complete run made */

#define FI_MAGIC 0x6474616c6c6f63ULL /* "dtalloc" */
#define FI_HDR 16                    /* keeps 16-byte alignment */

static void *fi_malloc(size_t n, const char *func) {
  unsigned char *p;
  fi_calls++;
  if (fi_fail_at > 0 && (fi_calls == fi_fail_at || (fi_persistent && fi_calls > fi_fail_at))) {
    fi_injected++;
    /* the CPU matmul's packing buffer: failure falls back to a loop, by design */
    if (strncmp(func, "dt__gemm_", 9) != 0) fi_injected_hard++;
    return NULL;
  }
  if (n > (size_t)-1 - FI_HDR) return NULL;
  p = (unsigned char *)malloc(n + FI_HDR);
  if (!p) return NULL;
  {
    uint64_t magic = FI_MAGIC;
    memcpy(p, &magic, sizeof magic);
  }
  fi_live++;
  return p + FI_HDR;
}

static void fi_free(void *q) {
  unsigned char *p;
  uint64_t magic;
  if (!q) return;
  p = (unsigned char *)q - FI_HDR;
  memcpy(&magic, p, sizeof magic);
  if (magic != FI_MAGIC) { fi_bad_free++; return; } /* not ours, or freed twice: leak it rather than crash */
  magic = 0;
  memcpy(p, &magic, sizeof magic);
  fi_live--;
  free(p);
}

#define DT_MALLOC(sz) fi_malloc((sz), __func__) /* the calling function: gemm sites are dt__gemm_* */
#define DT_FREE(p) fi_free(p)
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"

/* ---- the workload ---- */

static char fi_path[256];
static int fi_verbose_left = 30;     /* problem lines printed, at most */
static long fi_problems;             /* in this run */
static const char *fi_mode_name;
static long fi_run_n;                /* N of the run, for messages */

static void fi_problem(int line, const char *what) {
  fi_problems++;
  if (fi_verbose_left > 0) {
    fi_verbose_left--;
    printf("  %s mode, N = %ld, tests/fault_injection.c:%d: %s [status %d, \"%s\"]\n", fi_mode_name, fi_run_n, line, what,
           (int)dt_last_status(), dt_last_error());
  }
}

/* A failed step: it must be an injected failure, reported as out of memory by a dt_ function. */
static void fi_check_failure(int line, long injected_before) {
  const char *msg = dt_last_error();
  if (fi_injected == injected_before) { fi_problem(line, "a step failed with no injected failure"); return; }
  if (dt_last_status() != DT_ERR_OUT_OF_MEMORY) fi_problem(line, "status is not DT_ERR_OUT_OF_MEMORY");
  if (!msg || !msg[0]) fi_problem(line, "empty message");
  else if (strncmp(msg, "dt_", 3) != 0 || !strchr(msg, ':')) fi_problem(line, "message does not start with \"dt_xxx:\"");
  else if (!strstr(msg, "out of memory")) fi_problem(line, "message does not say \"out of memory\"");
}

/* Every step: clear the error, run it, and on failure check the report and
   unwind. A step that succeeds must not have swallowed an injected failure. */
#define STEP(ok) do { long inj_ = fi_injected, hard_ = fi_injected_hard; dt_clear_error(); \
    if (!(ok)) { fi_check_failure(__LINE__, inj_); failed_line = __LINE__; goto out; } \
    if (fi_injected_hard != hard_) fi_problem(__LINE__, "a step succeeded although an allocation it made failed"); \
  } while (0)
/* A check of a value (never expected to fail, injected failure or not). */
#define VERIFY(cond) do { if (!(cond)) fi_problem(__LINE__, "wrong result: " #cond); } while (0)

#define POOL 320
static dt_tensor *pool[POOL];
static int npool;
static dt_tensor *keep(dt_tensor *t) {
  if (t) { if (npool < POOL) pool[npool++] = t; else fi_problem(__LINE__, "test pool full"); }
  return t;
}
/* dt_sequential_add takes the layer, also when it fails */
#define ADD(seq) do { dt_module *l_ = l; l = NULL; STEP(dt_sequential_add((seq), l_) == DT_OK); } while (0)
#define NEW(var, expr) STEP(((var) = keep(expr)) != NULL)
/* A call refused for its arguments: refused before it allocates anything, so with the
   status it documents whatever fails (never out of memory), and no tensor made. */
#define REFUSE(expr, want) do { long calls_ = fi_calls; dt_tensor *r_; dt_clear_error(); r_ = (expr); \
    if (r_) { fi_problem(__LINE__, "a call that must be refused made a tensor: " #expr); dt_release(r_); } \
    else if (dt_last_status() != (want)) fi_problem(__LINE__, "a refused call gave another status: " #expr); \
    if (fi_calls != calls_) fi_problem(__LINE__, "a refused call allocated: " #expr); \
  } while (0)

static double val(dt_tensor *t, int64_t i) {
  const void *p = dt_data_ptr(t);
  switch (dt_dtype_of(t)) {
    case DT_F32: return ((const float *)p)[i];
    case DT_F64: return ((const double *)p)[i];
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    case DT_U8: case DT_BOOL: return ((const uint8_t *)p)[i];
    default: break; /* float16, bfloat16: tests/test_half.c */
  }
  return 0;
}

/* The parameters of a Sequential(Linear, ReLU, Linear), in order, as doubles. Allocates nothing. */
static int snap_net(dt_module *net, double *out, int cap, dt_dtype *dtype) {
  int n = 0, l, k;
  int64_t i;
  for (l = 0; l < 3; l += 2) {
    dt_module *lin = dt_sequential_get(net, l);
    for (k = 0; k < 2; k++) {
      dt_tensor *p = lin ? (k ? dt_linear_bias(lin) : dt_linear_weight(lin)) : NULL;
      if (!p) continue;
      if (dtype) *dtype = dt_dtype_of(p);
      for (i = 0; i < dt_numel(p) && n < cap; i++) out[n++] = val(p, i);
    }
  }
  return n;
}
static int same(const double *a, const double *b, int n) {
  int i;
  for (i = 0; i < n; i++) if (a[i] != b[i]) return 0;
  return 1;
}

/* s, with a problem noted where a call that failed (s not DT_OK) set its outputs (changed) */
static dt_status fi_outputs(dt_status s, int changed, int line) {
  if (s != DT_OK && changed) fi_problem(line, "a failed call set its outputs");
  return s;
}

static const float A6[6] = {1, 2, 3, 4, 5, 6};
static const int FI_PERM[2] = {1, 0}, FI_PERM_BAD[2] = {1, 1}; /* indexing */
/* dt_from_blob's memory and its deleter's count */
static float fi_blob[4] = {1, 2, 3, 4};
static int fi_blob_freed;
static void fi_blob_free(void *data, void *ctx) { (void)ctx; if (data == (void *)fi_blob) fi_blob_freed++; }

/* A forward with grad disabled; the setting comes back whatever happens. */
static dt_tensor *forward_no_grad(dt_module *m, const dt_tensor *x) {
  int prev = dt_set_grad_enabled(0);
  dt_tensor *y = dt_forward(m, x);
  dt_set_grad_enabled(prev);
  return y;
}

/* One run; returns the line of the failed step, 0 when it ran to the end. */
/* A user-written block: fc2(tanh(fc1(x))) */
static dt_tensor *fi_block_fwd(dt_module *self, const dt_tensor *x, void *user) {
  dt_tensor *h = dt_forward(dt_module_get_child(self, "fc1"), x), *t, *y;
  (void)user;
  if (!h) return NULL;
  t = dt_tanh(h);
  dt_release(h);
  if (!t) return NULL;
  y = dt_forward(dt_module_get_child(self, "fc2"), t);
  dt_release(t);
  return y;
}
/* Its parameters, as doubles (allocates nothing). */
static int snap_user(dt_module *um, double *out, int cap) {
  static const char *const names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  int n = 0, k;
  int64_t i;
  for (k = 0; k < 4; k++) {
    dt_tensor *p = dt_module_get_param(um, names[k]);
    for (i = 0; p && i < dt_numel(p) && n < cap; i++) out[n++] = val(p, i);
  }
  return n;
}

/* The parameters of the CNN below (Conv2d, ReLU, MaxPool2d, Flatten, Linear), as doubles
   (allocates nothing). */
static int snap_cnn(dt_module *cnn, double *out, int cap) {
  static const char *const names[4] = {"0.weight", "0.bias", "4.weight", "4.bias"};
  int n = 0, k;
  int64_t i;
  for (k = 0; k < 4; k++) {
    dt_tensor *p = dt_module_get_param(cnn, names[k]);
    for (i = 0; p && i < dt_numel(p) && n < cap; i++) out[n++] = val(p, i);
  }
  return n;
}

/* The parameters of a Sequential(Linear, ReLU, Linear) as their bits (float32 values, half
   bits), and their dtype. Allocates nothing. */
static int snap_bits(dt_module *net, double *out, int cap, dt_dtype *dtype) {
  int n = 0, l, k;
  int64_t i;
  for (l = 0; l < 3; l += 2) {
    dt_module *lin = dt_sequential_get(net, l);
    for (k = 0; k < 2; k++) {
      dt_tensor *p = lin ? (k ? dt_linear_bias(lin) : dt_linear_weight(lin)) : NULL;
      if (!p) continue;
      *dtype = dt_dtype_of(p);
      for (i = 0; i < dt_numel(p) && n < cap; i++)
        out[n++] = *dtype == DT_F16 || *dtype == DT_BF16 ? (double)((const uint16_t *)dt_data_ptr(p))[i] : val(p, i);
    }
  }
  return n;
}

static int workload(void) {
  int failed_line = 0;
  dt_tensor *a = NULL, *b = NULL, *a64 = NULL, *b64 = NULL, *i32 = NULL, *i64 = NULL, *e = NULL, *t = NULL, *u = NULL;
  dt_tensor *m1 = NULL, *m2 = NULL, *big1 = NULL, *big2 = NULL, *x4 = NULL, *x8 = NULL, *y4 = NULL, *pred = NULL, *g = NULL;
  dt_tensor *bigt = NULL, *X = NULL, *Y = NULL;
  dt_tensor *Yc = NULL; dt_module *netc = NULL; dt_optimizer *opt_c = NULL;
  dt_module *netg = NULL; dt_optimizer *opt_g = NULL;
  dt_module *net = NULL, *net2 = NULL, *l = NULL, *net3 = NULL, *inner = NULL, *um = NULL;
  double usnap[32];
  int nusnap = 0;
  FILE *tf = NULL;
  double snap[64], snap2[64], host[64], v;
  int nsnap = 0, nsnap2 = 0, i, k, loaded = 0, net_rows = 0;
  dt_dtype sdt = DT_F32;
  char buf[256];
  const dt_tensor *ts[3];
  dt_trainer tr;
  struct DLManagedTensorVersioned *dlv = NULL;   /* a capsule still ours (not imported) */
  struct DLManagedTensor *dll = NULL;
  static const char *const st_names[3] = {"a", "i32", "i64"};
  char **lnames = NULL;
  dt_tensor **lts = NULL;
  int ln = 0, blob_made = 0;
  dt_optimizer *opt = NULL;
  dt_graph *gr = NULL; /* graphs: the graph, and whether a capture of the CPU is open */
  dt_grad_scaler *gsc = NULL; /* autocast and the grad scaler: the scaler, its module and optimizer */
  dt_module *acm = NULL;
  dt_optimizer *aco = NULL;
  int gcap = 0;
  /* dropout, normalisation, embedding, GELU: the modules, batch norm's running statistics as
     the last successful step left them (checked after a failed one) */
  dt_module *bn = NULL, *bn2 = NULL, *lyr = NULL;
  dt_tensor *bx = NULL, *ei = NULL;
  double bn_snap[4];
  int bn_have = 0;
  dt_tensor *hbn_m = NULL, *hbn_v = NULL; /* bfloat16 running statistics, zeros until a batch norm succeeds */
  int hbn_pending = 0;                    /* that batch norm is the step under way */
  dt_tensor *ag_w = NULL, *ag_m = NULL, *ag_c = NULL, *ag_d = NULL;
  double ag_snap[6];
  int ag_have = 0, ag_done = 0; /* a gradient snapshot taken; the backward after it done */
  dt_module *cnn = NULL;
  dt_module *hm = NULL; /* a module in bfloat16 and its optimizer */
  dt_optimizer *hopt = NULL;
  double hsnap[32];
  int nhsnap = 0;
  dt_dtype hdt = DT_F32;
  double csnap[64], cnow[64];
  int ncsnap = 0;

  npool = 0;
  fi_blob_freed = 0;

  /* creation, every dtype */
  NEW(a, dt_from_data(A6, dt_shape2(2, 3), DT_F32, dt_cpu()));
  NEW(b, dt_arange(1, 4, 1, DT_F32, dt_cpu()));                 /* (3,) broadcasts over a's rows */
  NEW(a64, dt_cast(a, DT_F64));
  NEW(b64, dt_full(dt_shape2(2, 1), 0.5, dt_cpu()));
  NEW(t, dt_cast(b64, DT_F64)); b64 = t;
  NEW(i32, dt_arange(0, 6, 1, DT_I32, dt_cpu()));
  NEW(i64, dt_arange(-3, 3, 1, DT_I64, dt_cpu()));
  NEW(e, dt_empty(dt_shape2(0, 3), DT_F32, dt_cpu()));
  NEW(t, dt_zeros(dt_shape3(2, 2, 2), dt_cpu())); VERIFY(val(t, 7) == 0);
  NEW(t, dt_ones(dt_shape0(), dt_cpu())); VERIFY(val(t, 0) == 1);
  NEW(t, dt_empty(dt_shape1(4), DT_I64, dt_cpu()));

  /* binary, with broadcasting */
  NEW(t, dt_add(a, b)); VERIFY(val(t, 4) == 7);
  NEW(t, dt_sub(a, b)); VERIFY(val(t, 5) == 3);
  NEW(t, dt_mul(a, b)); VERIFY(val(t, 5) == 18);
  NEW(t, dt_div(a, b)); VERIFY(val(t, 3) == 4);
  NEW(t, dt_add(a64, b64)); VERIFY(val(t, 5) == 6.5);
  NEW(t, dt_div(a64, b64)); VERIFY(val(t, 0) == 2);
  NEW(t, dt_add(i32, i32)); VERIFY(val(t, 5) == 10);
  NEW(t, dt_mul(i64, i64)); VERIFY(val(t, 0) == 9);
  NEW(t, dt_add(e, b)); VERIFY(dt_numel(t) == 0);

  /* unary and scalar */
  NEW(t, dt_exp(a)); NEW(t, dt_log(a)); NEW(t, dt_sqrt(a64)); NEW(t, dt_neg(i32)); VERIFY(val(t, 5) == -5);
  NEW(t, dt_relu(a)); NEW(t, dt_add_scalar(i64, 2)); VERIFY(val(t, 0) == -1);
  NEW(t, dt_mul_scalar(a64, 3)); VERIFY(val(t, 5) == 18);

  /* autograd: a forward and a backward into a leaf's gradient, then another whose failure at
     any allocation must leave that gradient as it was (checked at out) */
  NEW(ag_w, dt_cast(a, DT_F64));
  STEP(dt_requires_grad_(ag_w, 1) == DT_OK);
  NEW(t, dt_mul(ag_w, b64)); NEW(t, dt_exp(t)); NEW(t, dt_sum(t));
  STEP(dt_autograd_backward(t, NULL) == DT_OK);
  VERIFY(dt_grad(ag_w) && fabs(val(dt_grad(ag_w), 0) - 0.5 * exp(0.5)) < 1e-12);
  for (i = 0; i < 6; i++) ag_snap[i] = val(dt_grad(ag_w), i);
  ag_have = 1;
  NEW(ag_m, dt_cast(a, DT_F64)); NEW(ag_m, dt_reshape(ag_m, dt_shape2(3, 2)));
  NEW(t, dt_matmul(ag_w, ag_m)); NEW(t, dt_log_softmax(t, 1)); NEW(t, dt_sum_dim(t, 0));
  NEW(u, dt_slice(ag_w, 1, 0, 2)); NEW(u, dt_tanh(u)); NEW(u, dt_sum_dim(u, 0));
  NEW(t, dt_mul(t, u)); NEW(t, dt_mean(t));
  STEP(dt_autograd_backward(t, NULL) == DT_OK);
  ag_done = 1;
  VERIFY(dt_grad(ag_w) && val(dt_grad(ag_w), 5) != ag_snap[5]);

  /* matmul: (2,3)@(3,2), vectors, batched, and one big enough for the packed kernel */
  NEW(u, dt_transpose(a)); VERIFY(val(u, 1) == 4);
  NEW(t, dt_matmul(a, u)); VERIFY(val(t, 0) == 14 && val(t, 3) == 77);
  NEW(t, dt_matmul(a, b)); VERIFY(val(t, 1) == 32);
  NEW(u, dt_transpose(a64));
  NEW(t, dt_matmul(a64, u)); VERIFY(val(t, 1) == 32);
  NEW(t, dt_reshape(i32, dt_shape3(1, 2, -1)));
  NEW(m1, dt_rand(dt_shape3(2, 3, 4), dt_cpu()));
  NEW(m2, dt_randn(dt_shape3(2, 4, 5), dt_cpu()));
  NEW(t, dt_matmul(m1, m2)); VERIFY(dt_dim(t, 0) == 2 && dt_dim(t, 2) == 5);
  NEW(u, dt_ones(dt_shape2(4, 2), dt_cpu()));
  NEW(t, dt_matmul(m1, u)); VERIFY(dt_dim(t, 0) == 2 && dt_dim(t, 2) == 2);
  NEW(big1, dt_arange(0, 48 * 48, 1, DT_F32, dt_cpu()));
  NEW(t, dt_reshape(big1, dt_shape2(48, -1))); big1 = t;
  NEW(big2, dt_full(dt_shape2(48, 48), 0.25, dt_cpu()));
  NEW(t, dt_matmul(big1, big2));
  /* row i of big1 sums to 48*48*i + 48*47/2; times 0.25 */
  for (i = 0; i < 48; i += 7) VERIFY(val(t, i * 48 + 5) == 0.25 * (48.0 * 48.0 * i + 1128.0));
  NEW(u, dt_cast(big1, DT_F64));
  NEW(t, dt_cast(big2, DT_F64));
  NEW(t, dt_matmul(u, t)); VERIFY(val(t, 47 * 48) == 0.25 * (48.0 * 48.0 * 47 + 1128.0));

  /* reshape, reductions, casts */
  NEW(t, dt_reshape(a, dt_shape1(-1))); VERIFY(dt_numel(t) == 6);
  NEW(t, dt_sum(a)); VERIFY(val(t, 0) == 21);
  NEW(t, dt_mean(a64)); VERIFY(val(t, 0) == 3.5);
  NEW(t, dt_norm(a)); NEW(t, dt_sum_dim(a, 0)); VERIFY(val(t, 2) == 9);
  NEW(t, dt_sum_dim(a64, -1)); VERIFY(val(t, 1) == 15);
  NEW(t, dt_cast(i32, DT_F32)); NEW(t, dt_cast(i64, DT_I32)); NEW(t, dt_cast(a, DT_I64)); VERIFY(val(t, 5) == 6);
  NEW(t, dt_cast(e, DT_F64));

  /* uint8 and bool, comparisons, sigmoid / tanh / abs, _like */
  NEW(u, dt_cast(i32, DT_U8)); VERIFY(val(u, 5) == 5);
  NEW(t, dt_gt(a, b)); VERIFY(dt_dtype_of(t) == DT_BOOL && val(t, 0) == 0 && val(t, 3) == 1);
  NEW(t, dt_eq(u, i64)); VERIFY(val(t, 0) == 0);          /* uint8 and int64: compares in int64 (a temporary) */
  NEW(t, dt_le(u, i32)); NEW(t, dt_sum(t)); VERIFY(dt_dtype_of(t) == DT_I64 && val(t, 0) == 6);
  NEW(t, dt_ne(e, b)); VERIFY(dt_numel(t) == 0);
  STEP(dt_snprint(buf, sizeof buf, t) > 0);
  NEW(t, dt_sigmoid(a)); NEW(t, dt_tanh(a64)); NEW(t, dt_abs(i64)); VERIFY(val(t, 0) == 3);
  NEW(t, dt_abs(u)); VERIFY(val(t, 4) == 4);
  NEW(t, dt_zeros_like(u)); NEW(t, dt_ones_like(a64)); VERIFY(val(t, 5) == 1); NEW(t, dt_empty_like(e));

  /* views, keepdim reductions, scalar forms, one_hot */
  NEW(t, dt_flatten(a, 0, -1)); VERIFY(dt_numel(t) == 6 && dt_ndim(t) == 1);
  NEW(t, dt_unsqueeze(a, 1)); NEW(t, dt_squeeze(t, 1)); VERIFY(dt_ndim(t) == 2);
  NEW(t, dt_sum_dim_ex(a, 0, 1)); VERIFY(dt_ndim(t) == 2 && val(t, 2) == 9);
  NEW(t, dt_mean_dim(a64, -1, 0)); VERIFY(val(t, 1) == 5);
  NEW(t, dt_rsub_scalar(i64, 1)); VERIFY(val(t, 0) == 4);
  NEW(t, dt_gt_scalar(a, 3)); VERIFY(val(t, 2) == 0 && val(t, 3) == 1);
  NEW(t, dt_lt_scalar(i32, 2.5)); VERIFY(val(t, 2) == 1 && val(t, 3) == 0);
  NEW(t, dt_abs(i64)); NEW(t, dt_one_hot(t, -1)); VERIFY(dt_dim(t, 1) == 4 && val(t, 3) == 1);
  NEW(t, dt_sin(a)); NEW(t, dt_cos(a64)); NEW(t, dt_erf(a)); NEW(t, dt_gelu(a64));
  NEW(t, dt_pow_scalar(a64, 2)); VERIFY(val(t, 2) == 9);
  NEW(t, dt_clamp(a, 2, 4)); VERIFY(val(t, 0) == 2 && val(t, 5) == 4);
  NEW(ag_c, dt_cast(a, DT_F64)); STEP(dt_requires_grad_(ag_c, 1) == DT_OK);
  NEW(t, dt_gelu(ag_c)); NEW(t, dt_clamp(t, 0, 3)); NEW(ag_d, dt_pow_scalar(ag_c, 1.5)); NEW(t, dt_mul(t, ag_d));
  NEW(ag_d, dt_sin(ag_c)); NEW(t, dt_add(t, ag_d)); NEW(t, dt_mean_dim(t, 0, 1)); NEW(t, dt_sum(t));
  STEP(dt_autograd_backward(t, NULL) == DT_OK); VERIFY(dt_grad(ag_c) != NULL);
  /* type promotion: uint8 + uint8 wraps, float32 * float64, int / int is float32, an int tensor and a
     float scalar, a float32 leaf's gradient through a float64 product; bool - bool is refused */
  NEW(t, dt_add_scalar(u, 250)); VERIFY(dt_dtype_of(t) == DT_U8 && val(t, 5) == 255 && val(t, 4) == 254);
  NEW(t, dt_add(t, u)); VERIFY(dt_dtype_of(t) == DT_U8 && val(t, 5) == 4);
  NEW(t, dt_mul(a, a64)); VERIFY(dt_dtype_of(t) == DT_F64 && val(t, 2) == 9);
  NEW(t, dt_div(i32, u)); VERIFY(dt_dtype_of(t) == DT_F32 && val(t, 3) == 1);
  NEW(t, dt_add_scalar(i32, 0.5)); VERIFY(dt_dtype_of(t) == DT_F32 && val(t, 1) == 1.5);
  NEW(ag_c, dt_cast(a, DT_F32)); STEP(dt_requires_grad_(ag_c, 1) == DT_OK);
  NEW(t, dt_mul(ag_c, a64)); NEW(t, dt_sum(t));
  STEP(dt_autograd_backward(t, NULL) == DT_OK); VERIFY(dt_grad(ag_c) && dt_dtype_of(dt_grad(ag_c)) == DT_F32 && val(dt_grad(ag_c), 2) == 3);
  NEW(t, dt_cast(u, DT_BOOL));
  REFUSE(dt_sub(t, t), DT_ERR_DTYPE);
  REFUSE(dt_sigmoid(i32), DT_ERR_DTYPE);

  /* stack: (3, 2, 3) from a, a + 10, a; 0-d sums into a vector; empty tensors; the refusals */
  NEW(u, dt_add_scalar(a, 10));
  ts[0] = a; ts[1] = u; ts[2] = a;
  NEW(t, dt_stack(ts, 3)); VERIFY(dt_ndim(t) == 3 && dt_dim(t, 0) == 3 && val(t, 6) == 11 && val(t, 11) == 16 && val(t, 17) == 6);
  NEW(u, dt_sum(a)); NEW(t, dt_sum(b));
  ts[0] = u; ts[1] = t;
  NEW(t, dt_stack(ts, 2)); VERIFY(dt_ndim(t) == 1 && val(t, 0) == 21 && val(t, 1) == 6);
  ts[0] = a64; ts[1] = b64;
  NEW(t, dt_stack(ts, 1)); VERIFY(dt_dim(t, 0) == 1 && val(t, 5) == 6);
  ts[0] = e; ts[1] = e;
  NEW(t, dt_stack(ts, 2)); VERIFY(dt_dim(t, 0) == 2 && dt_dim(t, 1) == 0 && dt_numel(t) == 0);
  REFUSE(dt_stack(NULL, 2), DT_ERR_INVALID_ARGUMENT);
  ts[0] = a; ts[1] = b; ts[2] = NULL;
  REFUSE(dt_stack(ts, 0), DT_ERR_INVALID_ARGUMENT);
  REFUSE(dt_stack(ts, 3), DT_ERR_INVALID_ARGUMENT);                 /* ts[2] is NULL */
  REFUSE(dt_stack(ts, 2), DT_ERR_SHAPE);                            /* (2, 3) and (3,) */
  ts[1] = a64;
  REFUSE(dt_stack(ts, 2), DT_ERR_DTYPE);                            /* float32 and float64 */
  /* (mixed devices need a GPU: tests/test_bad_input.c and the emulator's runs) */

  /* indexing: a slice along dim 0 is a view (a header and a storage, no data); along
     dim 1, index_select, cat and permute copy; the refusals allocate nothing */
  NEW(u, dt_slice(a, 0, 1, 2));
  VERIFY(dt_dim(u, 0) == 1 && val(u, 0) == 4 && (char *)dt_data_ptr(u) == (char *)dt_data_ptr(a) + 3 * sizeof(float));
  NEW(t, dt_slice(a, 1, -2, 3)); VERIFY(dt_dim(t, 1) == 2 && val(t, 0) == 2 && val(t, 3) == 6);
  NEW(u, dt_slice(i64, 0, 3, 5)); VERIFY(val(u, 0) == 0 && val(u, 1) == 1); /* [0, 1], the index below */
  NEW(t, dt_index_select(a, 1, u)); VERIFY(dt_dim(t, 1) == 2 && val(t, 2) == 4);
  NEW(t, dt_index_select(a64, 0, u)); VERIFY(val(t, 5) == 6);
  ts[0] = a; ts[1] = e;
  NEW(t, dt_cat(ts, 2, 0)); VERIFY(dt_dim(t, 0) == 2 && val(t, 5) == 6);   /* (2, 3) and (0, 3) */
  ts[1] = a;
  NEW(t, dt_cat(ts, 2, 1)); VERIFY(dt_dim(t, 1) == 6 && val(t, 3) == 1 && val(t, 11) == 6);
  NEW(t, dt_permute(a, FI_PERM)); VERIFY(dt_dim(t, 0) == 3 && val(t, 1) == 4);
  REFUSE(dt_index_select(a, 0, i64), DT_ERR_INVALID_ARGUMENT);      /* -3 */
  REFUSE(dt_permute(a, FI_PERM_BAD), DT_ERR_INVALID_ARGUMENT);      /* (1, 1) */
  REFUSE(dt_slice(a, 2, 0, 1), DT_ERR_INVALID_ARGUMENT);
  ts[1] = b;
  REFUSE(dt_cat(ts, 2, 0), DT_ERR_SHAPE);                           /* (2, 3) and (3,) */

  /* classification: argmax/min, max/min, softmax, cross-entropy; a = [[1, 2, 3], [4, 5, 6]] */
  {
    static const int64_t lab[2] = {2, 0}, badlab[2] = {0, 3};
    const double lse0 = log(exp(1.0) + exp(2.0) + exp(3.0));
    NEW(t, dt_argmax(a, 1)); VERIFY(dt_dtype_of(t) == DT_I64 && val(t, 0) == 2 && val(t, 1) == 2);
    NEW(t, dt_argmin(a64, 0)); VERIFY(val(t, 2) == 0);
    NEW(t, dt_max_dim(a, 0)); VERIFY(val(t, 1) == 5);
    NEW(t, dt_min_dim(a64, -1)); VERIFY(val(t, 1) == 4);
    NEW(t, dt_max(a)); VERIFY(val(t, 0) == 6);
    NEW(t, dt_min(a64)); VERIFY(val(t, 0) == 1);
    NEW(t, dt_softmax(a, 1)); VERIFY(fabs(val(t, 3) + val(t, 4) + val(t, 5) - 1) < 1e-6);
    NEW(t, dt_log_softmax(a64, -1)); VERIFY(fabs(val(t, 2) - (3 - lse0)) < 1e-12);
    NEW(u, dt_from_data(lab, dt_shape1(2), DT_I64, dt_cpu()));
    NEW(t, dt_cross_entropy(a, u)); VERIFY(fabs(val(t, 0) - (lse0 - 3 + (lse0 + 3) - 4) / 2) < 1e-5);
    NEW(t, dt_cross_entropy_grad(a64, u)); VERIFY(fabs(val(t, 2) - (exp(3 - lse0) - 1) / 2) < 1e-12);
    REFUSE(dt_argmax(e, 0), DT_ERR_SHAPE);                          /* an empty dim */
    REFUSE(dt_max(e), DT_ERR_SHAPE);
    REFUSE(dt_cross_entropy(a, i64), DT_ERR_SHAPE);                 /* (2, 3) and (6,) */
    NEW(u, dt_from_data(badlab, dt_shape1(2), DT_I64, dt_cpu()));
    REFUSE(dt_cross_entropy_grad(a, u), DT_ERR_INVALID_ARGUMENT);   /* label 3 of 3 classes */
  }

  /* convolution and pooling: x (2, 4, 5, 5) = 0, 1, ..., w ones (6, 2, 3, 3), b ones; a grouped,
     strided, padded convolution, its gradients (a failed backward leaves its outputs as they
     were), every pooling with its backward; the refusals allocate nothing */
  {
    dt_tensor *cx = NULL, *cw = NULL, *cb = NULL, *cy = NULL, *gx = a, *gw = a, *gb = a, *ci = a;
    dt_status cs;
    NEW(u, dt_arange(0, 200, 1, DT_F32, dt_cpu()));
    NEW(cx, dt_reshape(u, dt_shape4(2, 4, 5, 5)));
    NEW(cw, dt_ones(dt_shape4(6, 2, 3, 3), dt_cpu()));
    NEW(cb, dt_ones(dt_shape1(6), dt_cpu()));
    NEW(cy, dt_f_conv2d_ex(cx, cw, cb, 2, 1, 1, 0, 1, 1, 2)); /* y[0, 0, 0, 0]: rows 0-1, columns 0-2 of channels 0, 1 */
    VERIFY(dt_dim(cy, 2) == 3 && dt_dim(cy, 3) == 3 && val(cy, 0) == 193);
    NEW(u, dt_ones(dt_shape4(3, 4, 1, 1), dt_cpu()));
    NEW(t, dt_f_conv2d(cx, u, NULL, 1, 0)); VERIFY(val(t, 0) == 150);                /* 1x1: x itself multiplied */
    STEP((cs = dt_f_conv2d_backward(cy, cx, cw, 2, 1, 1, 0, 1, 1, 2, &gx, &gw, &gb),
          fi_outputs(cs, gx != a || gw != a || gb != a, __LINE__)) == DT_OK);
    keep(gx); keep(gw); keep(gb);
    VERIFY(dt_dim(gx, 1) == 4 && dt_dim(gw, 1) == 2 && dt_numel(gb) == 6);
    { /* the input gradients at unit strides: fewer output channels than input (a convolution of
         gy), and a 1x1 kernel (its columns copied back); values from PyTorch */
      dt_tensor *gx2 = a, *gx3 = a;
      STEP((cs = dt_f_conv2d_backward(t, cx, u, 1, 1, 0, 0, 1, 1, 1, &gx3, NULL, NULL), fi_outputs(cs, gx3 != a, __LINE__)) == DT_OK);
      keep(gx3);
      VERIFY(val(gx3, 0) == 450 && val(gx3, 57) == 534);
      NEW(u, dt_ones(dt_shape4(2, 2, 3, 3), dt_cpu()));
      NEW(t, dt_f_conv2d_ex(cx, u, NULL, 1, 1, 1, 1, 1, 1, 2));
      STEP((cs = dt_f_conv2d_backward(t, cx, u, 1, 1, 1, 1, 1, 1, 2, &gx2, NULL, NULL), fi_outputs(cs, gx2 != a, __LINE__)) == DT_OK);
      keep(gx2);
      VERIFY(val(gx2, 0) == 865 && val(gx2, 57) == 10188);
    }
    STEP((t = dt_f_max_pool2d_ex(cx, 3, 3, 2, 2, 1, 1, &ci), fi_outputs(t ? DT_OK : dt_last_status(), !t && ci != a, __LINE__)) == DT_OK);
    keep(t); keep(ci);
    VERIFY(val(t, 0) == 6 && val(ci, 0) == 6);
    NEW(u, dt_f_max_pool2d_backward(t, cx, ci, 3, 3, 2, 2, 1, 1)); VERIFY(val(u, 6) == 6);
    NEW(t, dt_f_avg_pool2d(cx, 2, 0, 1)); VERIFY(val(t, 0) == 0);
    NEW(u, dt_f_avg_pool2d_backward(t, cx, 2, 2, 2, 2, 1, 1));
    NEW(t, dt_f_adaptive_avg_pool2d(cx, 1, 1)); VERIFY(val(t, 0) == 12);
    NEW(u, dt_f_adaptive_avg_pool2d_backward(t, cx)); VERIFY(fabs(val(u, 0) - 0.48) < 1e-6);
    REFUSE(dt_f_conv2d(cx, cw, NULL, 1, 0), DT_ERR_SHAPE);          /* w (6, 2, 3, 3) for 4 channels, groups 1 */
    REFUSE(dt_f_conv2d_ex(cx, cw, NULL, 1, 1, 0, 0, 1, 1, 3), DT_ERR_SHAPE); /* groups 3 of 4 channels */
    REFUSE(dt_f_max_pool2d(cx, 3, 1, 2), DT_ERR_INVALID_ARGUMENT);  /* padding above half the kernel */
    REFUSE(dt_f_adaptive_avg_pool2d(a, 2, 2), DT_ERR_SHAPE);        /* 2-d */
  }

  { /* where, gather, scatter_add(_), pad, randperm, randint, and their backwards (index_select's: an index-add) */
    static const int64_t gidx[6] = {1, 0, 1, 0, 1, 0}, pads[4] = {1, -1, 0, 1}, sidx[2] = {2, 0};
    dt_tensor *wc = NULL, *gi = NULL, *ga = NULL, *gd = NULL, *si = NULL;
    NEW(wc, dt_gt_scalar(a, 3));
    NEW(t, dt_where(wc, b, a64)); VERIFY(dt_dtype_of(t) == DT_F64 && val(t, 0) == 1 && val(t, 5) == 3);
    NEW(gi, dt_from_data(gidx, dt_shape2(2, 3), DT_I64, dt_cpu()));
    NEW(t, dt_gather(a, 0, gi)); VERIFY(val(t, 0) == 4 && val(t, 1) == 2);
    NEW(t, dt_scatter_add(a, 0, gi, a)); VERIFY(val(t, 0) == 5 && val(t, 3) == 5 && val(t, 4) == 10);
    NEW(ga, dt_copyto(a, dt_cpu())); STEP(dt_scatter_add_(ga, 0, gi, a) == DT_OK); VERIFY(val(ga, 4) == 10);
    NEW(t, dt_pad(a, pads, 4, 9)); VERIFY(dt_dim(t, 0) == 3 && dt_dim(t, 1) == 3 && val(t, 0) == 9 && val(t, 1) == 1);
    NEW(t, dt_randperm(5, dt_cpu())); VERIFY(val(t, 0) + val(t, 1) + val(t, 2) + val(t, 3) + val(t, 4) == 10);
    NEW(t, dt_randint(2, 4, dt_shape1(8), dt_cpu())); VERIFY(val(t, 7) >= 2 && val(t, 7) < 4);
    NEW(gd, dt_cast(a, DT_F64)); STEP(dt_requires_grad_(gd, 1) == DT_OK);
    NEW(si, dt_from_data(sidx, dt_shape1(2), DT_I64, dt_cpu()));
    NEW(t, dt_gather(gd, 1, gi)); NEW(t, dt_scatter_add(gd, 0, gi, t)); NEW(t, dt_where(wc, t, gd));
    NEW(t, dt_pad(t, pads, 4, 0)); NEW(t, dt_index_select(t, 0, si)); NEW(t, dt_sum(t));
    STEP(dt_autograd_backward(t, NULL) == DT_OK); VERIFY(dt_grad(gd) != NULL);
    REFUSE(dt_gather(a, 0, a), DT_ERR_DTYPE);
    REFUSE(dt_pad(a, pads, 3, 0), DT_ERR_INVALID_ARGUMENT);
    REFUSE(dt_randint(4, 2, dt_shape1(8), dt_cpu()), DT_ERR_INVALID_ARGUMENT);
  }

  /* in place */
  NEW(t, dt_zeros(dt_shape2(2, 3), dt_cpu()));
  STEP(dt_fill_(t, 2) == DT_OK);
  STEP(dt_axpy_(t, 2, a) == DT_OK); VERIFY(val(t, 5) == 14);
  STEP(dt_fill_(i32, 7) == DT_OK);

  /* copies */
  NEW(t, dt_to(a, dt_cpu())); VERIFY(t == a);
  NEW(t, dt_copyto(a, dt_cpu())); VERIFY(t != a && val(t, 2) == 3);
  STEP(dt_copy_(t, a) == DT_OK);
  STEP(dt_to_host(a, host, sizeof host) == DT_OK); VERIFY(host[0] != 0);
  NEW(t, dt_sum(a64));
  v = dt_item(t);
  STEP(!isnan(v)); VERIFY(v == 21);

  /* printing */
  STEP(dt_snprint(buf, sizeof buf, a) > 0); VERIFY(strncmp(buf, "tensor([[1., 2., 3.],", 21) == 0);
  STEP(dt_snprint(NULL, 0, i32) > 0);
  tf = tmpfile();
  if (tf) {
    STEP(dt_fprint(tf, a64) == DT_OK);
    NEW(bigt, dt_arange(0, 300, 1.5, DT_F32, dt_cpu()));      /* 200 values: more than 512 characters */
    STEP(dt_snprint(NULL, 0, bigt) > 512);
    STEP(dt_fprint(tf, bigt) == DT_OK);
  }

  /* a network: Sequential(Linear(2, 3), ReLU, LazyLinear(1)) */
  STEP((net = dt_sequential()) != NULL);
  STEP((l = dt_linear(2, 3)) != NULL);
  ADD(net);
  STEP((l = dt_relu_layer()) != NULL);
  ADD(net);
  STEP((l = dt_linear(0, 1)) != NULL);
  ADD(net);
  NEW(x4, dt_randn(dt_shape2(4, 2), dt_cpu()));
  NEW(y4, dt_rand(dt_shape2(4, 1), dt_cpu()));
  NEW(pred, dt_forward(net, x4)); net_rows = 4;              /* sizes the lazy layer */
  VERIFY(dt_module_num_params(net) == 4);
  /* print(net): its 139 characters, and into a file (more than dt_module_fprint's 128 on its stack) */
  STEP(dt_module_snprint(NULL, 0, net) == 139);
  if (tf) { STEP(dt_module_fprint(tf, net) == DT_OK); }
  STEP(dt_module_param(net, 2, NULL) != NULL);
  STEP(dt_module_grad(net, 3) != NULL);
  NEW(t, dt_mse_loss(pred, y4));
  NEW(g, dt_mse_loss_grad(pred, y4));
  STEP(dt_zero_grad(net) == DT_OK);
  NEW(t, dt_backward(net, g)); VERIFY(dt_dim(t, 0) == 4 && dt_dim(t, 1) == 2);
  STEP(dt_backward_params(net, g) == DT_OK);                 /* the training step's backward: no input gradient */
  STEP(dt_sgd_step(net, 0.1) == DT_OK);
  /* a forward with another batch size; a failure in its middle must leave a consistent net */
  NEW(x8, dt_randn(dt_shape2(8, 2), dt_cpu()));
  NEW(t, dt_forward(net, x8)); net_rows = 8;

  /* net.double(), all or nothing, and back */
  nsnap = snap_net(net, snap, 64, &sdt);
  STEP(dt_module_to_dtype(net, DT_F64) == DT_OK);
  net_rows = 0;
  NEW(u, dt_cast(x4, DT_F64));
  NEW(t, dt_forward(net, u)); VERIFY(dt_dtype_of(t) == DT_F64);
  net_rows = 4;
  STEP(dt_module_to_dtype(net, DT_F32) == DT_OK);
  net_rows = 0;
  STEP(dt_module_to(net, dt_cpu()) == DT_OK);
  nsnap = snap_net(net, snap, 64, &sdt);

  /* save, then load into a second net of the same shape */
  STEP(dt_module_save(net, fi_path) == DT_OK);
  STEP((net2 = dt_sequential()) != NULL);
  STEP((l = dt_linear(2, 3)) != NULL);
  ADD(net2);
  STEP((l = dt_relu_layer()) != NULL);
  ADD(net2);
  STEP((l = dt_linear(3, 1)) != NULL);
  ADD(net2);
  nsnap2 = snap_net(net2, snap2, 64, NULL);
  STEP(dt_module_load(net2, fi_path) == DT_OK);
  loaded = 1;
  {
    double now[64];
    VERIFY(snap_net(net2, now, 64, NULL) == nsnap && same(now, snap, nsnap));
  }

  /* a short training */
  NEW(X, dt_randn(dt_shape2(10, 2), dt_cpu()));
  NEW(Y, dt_rand(dt_shape2(10, 1), dt_cpu()));
  STEP(dt_trainer_init(&tr, 2, 0) == DT_OK);
  tr.quiet = 1; tr.batch_size = 4;
  STEP(dt_trainer_fit(&tr, net2, X, Y) == DT_OK);
  VERIFY(tr.epochs_run == 2 && tr.last_loss == tr.last_loss);
  dt_trainer_free(&tr);

  /* classification: cross-entropy with an optimizer and a validation set, then
     dt_trainer_evaluate, which must see what the last validation saw */
  {
    static const int64_t labs[10] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0};
    double ev_loss = -1, ev_acc = -1;
    NEW(Yc, dt_from_data(labs, dt_shape1(10), DT_I64, dt_cpu()));
    STEP((netc = dt_linear(2, 3)) != NULL);
    STEP((opt_c = dt_sgd(netc, 0.1, 0.9, 0.0)) != NULL);
    STEP(dt_trainer_init(&tr, 2, 0) == DT_OK);
    tr.quiet = 1; tr.batch_size = 4; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.optimizer = opt_c;
    STEP(dt_trainer_fit_val(&tr, netc, X, Yc, X, Yc) == DT_OK);
    VERIFY(tr.epochs_run == 2 && tr.last.train_acc >= 0 && tr.last.train_acc <= 1);
    STEP(dt_trainer_evaluate(&tr, netc, X, Yc, &ev_loss, &ev_acc) == DT_OK);
    VERIFY(ev_acc == tr.last.val_acc && ev_loss == tr.last.val_loss);
    dt_trainer_free(&tr);
  }
  /* tr.cuda_graph with dropout and Adam: the gradients' part captured (draws and all) and
     replayed, Adam's update eager after each replay; 10 rows in 4s: warm-up, capture, eager */
  {
    STEP((netg = dt_sequential()) != NULL);
    STEP((l = dt_linear(2, 4)) != NULL);
    ADD(netg);
    STEP((l = dt_dropout(0.25)) != NULL);
    ADD(netg);
    STEP((l = dt_linear(4, 3)) != NULL);
    ADD(netg);
    STEP((opt_g = dt_adam(netg, 0.01, 0.9, 0.999, 1e-8, 0.0)) != NULL);
    STEP(dt_trainer_init(&tr, 2, 0) == DT_OK);
    tr.quiet = 1; tr.batch_size = 4; tr.loss_fn = DT_LOSS_CROSS_ENTROPY; tr.optimizer = opt_g; tr.cuda_graph = 1;
    STEP(dt_trainer_fit(&tr, netg, X, Yc) == DT_OK);
    VERIFY(tr.epochs_run == 2 && tr.last_loss == tr.last_loss);
    dt_trainer_free(&tr);
  }

  /* a nested network (names "0.0.1.weight"): built, saved, loaded back, run */
  STEP((net3 = dt_sequential()) != NULL);
  STEP((l = dt_sequential()) != NULL);
  ADD(net3);
  STEP((l = dt_sequential()) != NULL);
  ADD(dt_sequential_get(net3, 0));
  STEP((inner = dt_sequential_get(dt_sequential_get(net3, 0), 0)) != NULL);
  STEP((l = dt_relu_layer()) != NULL);
  ADD(inner);
  STEP((l = dt_linear(2, 3)) != NULL);
  ADD(inner);
  STEP(dt_module_save(net3, fi_path) == DT_OK);
  STEP(dt_module_load(net3, fi_path) == DT_OK);
  NEW(t, dt_forward(net3, x4));
  VERIFY(dt_dim(t, 1) == 3);
  /* interop: DLPack both ways (a refused import leaves the capsule ours), dt_from_blob, safetensors of named tensors */
  STEP((dlv = dt_to_dlpack(a)) != NULL);
  NEW(t, dt_from_dlpack(dlv)); dlv = NULL;
  VERIFY(dt_data_ptr(t) == dt_data_ptr(a));
  STEP((dll = dt_to_dlpack_legacy(i64)) != NULL);
  NEW(t, dt_from_dlpack_legacy(dll)); dll = NULL;
  VERIFY(val(t, 5) == 2);
  NEW(t, dt_from_blob(fi_blob, dt_shape2(2, 2), DT_F32, dt_cpu(), fi_blob_free, NULL)); blob_made = 1;
  NEW(u, dt_mul_scalar(t, 2)); VERIFY(val(u, 3) == 8);
  ts[0] = a; ts[1] = i32; ts[2] = i64;
  STEP(dt_save_tensors(fi_path, st_names, ts, 3) == DT_OK);
  STEP(dt_load_tensors(fi_path, dt_cpu(), &ln, &lnames, &lts) == DT_OK);
  VERIFY(ln == 3 && strcmp(lnames[2], "i64") == 0 && val(lts[0], 5) == 6 && val(lts[1], 4) == 7 && val(lts[2], 0) == -3);
  /* distributed: the one-rank world; collectives on a copy (a stays as it was) */
  STEP(dt_dist_init() == DT_OK);
  NEW(t, dt_copyto(a, dt_cpu()));
  STEP(dt_all_reduce_(t, DT_REDUCE_AVG) == DT_OK);
  STEP(dt_broadcast_(t, 0) == DT_OK);
  VERIFY(val(t, 5) == A6[5] && dt_dist_world_size() == 1);
  NEW(u, dt_cast(a, DT_BF16)); /* a bfloat16 tensor is taken: the one-rank world leaves it as it was */
  STEP(dt_all_reduce_(u, DT_REDUCE_AVG) == DT_OK);
  STEP(dt_broadcast_(u, 0) == DT_OK);
  VERIFY(dt_dtype_of(u) == DT_BF16 && ((const uint16_t *)dt_data_ptr(u))[5] == 0x40C0); /* 6.0 */
  STEP(dt_dist_finalize() == DT_OK);

  /* optimizers and no_grad: a first step that fails (making its state) leaves the
     parameters as they were (checked at out: against the snapshot) */
  nsnap = snap_net(net, snap, 64, &sdt);
  STEP((opt = dt_adam(net, 0.01, 0.9, 0.999, 1e-8, 0.1)) != NULL);
  STEP(dt_optimizer_step(opt) == DT_OK);
  nsnap = snap_net(net, snap, 64, &sdt);
  STEP(dt_optimizer_step(opt) == DT_OK);
  nsnap = snap_net(net, snap, 64, &sdt);
  STEP(dt_optimizer_zero_grad(opt) == DT_OK);
  dt_optimizer_free(opt); opt = NULL;
  STEP((opt = dt_sgd(net, 0.1, 0.9, 0.01)) != NULL);
  STEP(dt_optimizer_step(opt) == DT_OK);
  nsnap = snap_net(net, snap, 64, &sdt);
  dt_optimizer_free(opt); opt = NULL;
  NEW(t, forward_no_grad(net, x4)); VERIFY(dt_dim(t, 0) == 4);
  net_rows = 0; /* nothing kept to go back through */
  VERIFY(dt_backward_params(net, t) == DT_ERR_INVALID_ARGUMENT);

  /* a user-written module's training step through autograd: forward, loss, dt_autograd_backward,
     an optimizer's step; a failure leaves its parameters as they were (checked at out:) */
  STEP((um = dt_module_new("Block", fi_block_fwd, NULL, NULL)) != NULL);
  STEP((l = dt_linear(2, 3)) != NULL);
  { dt_module *l_ = l; l = NULL; STEP(dt_module_add_child(um, "fc1", l_) == DT_OK); }
  STEP((l = dt_linear(3, 1)) != NULL);
  { dt_module *l_ = l; l = NULL; STEP(dt_module_add_child(um, "fc2", l_) == DT_OK); }
  nusnap = snap_user(um, usnap, 32);
  STEP(dt_zero_grad(um) == DT_OK);
  NEW(t, dt_forward(um, x4)); VERIFY(dt_dim(t, 0) == 4 && dt_dim(t, 1) == 1);
  NEW(u, dt_sum(t));
  STEP(dt_autograd_backward(u, NULL) == DT_OK);
  STEP((opt = dt_sgd(um, 0.1, 0.9, 0)) != NULL);
  STEP(dt_optimizer_step(opt) == DT_OK);
  nusnap = snap_user(um, usnap, 32);
  dt_optimizer_free(opt); opt = NULL;

  /* the losses, with reductions, and their backward; the refusals allocate nothing */
  {
    static const int64_t lab2[2] = {2, 0}, badlab[2] = {0, 3};
    NEW(ag_c, dt_cast(a, DT_F64)); STEP(dt_requires_grad_(ag_c, 1) == DT_OK);
    NEW(u, dt_mul_scalar(a64, 0.1));
    NEW(t, dt_bce_with_logits(ag_c, u)); VERIFY(val(t, 0) > 0 && val(t, 0) < 10);
    NEW(ag_d, dt_l1_loss_ex(ag_c, u, DT_REDUCTION_SUM)); NEW(t, dt_add(t, ag_d));
    NEW(ag_d, dt_smooth_l1_loss_ex(ag_c, u, 1.0, DT_REDUCTION_NONE)); NEW(ag_d, dt_sum(ag_d)); NEW(t, dt_add(t, ag_d));
    NEW(ag_d, dt_mse_loss_ex(ag_c, u, DT_REDUCTION_MEAN)); NEW(t, dt_add(t, ag_d));
    NEW(u, dt_from_data(lab2, dt_shape1(2), DT_I64, dt_cpu()));
    NEW(ag_d, dt_log_softmax(ag_c, 1)); NEW(ag_d, dt_nll_loss_ex(ag_d, u, DT_REDUCTION_NONE)); NEW(ag_d, dt_mean(ag_d));
    NEW(t, dt_add(t, ag_d));
    STEP(dt_autograd_backward(t, NULL) == DT_OK); VERIFY(dt_grad(ag_c) != NULL && dt_numel(dt_grad(ag_c)) == 6);
    NEW(u, dt_from_data(badlab, dt_shape1(2), DT_I64, dt_cpu()));
    REFUSE(dt_nll_loss(a64, u), DT_ERR_INVALID_ARGUMENT);
    REFUSE(dt_l1_loss(a, a64), DT_ERR_DTYPE);
    REFUSE(dt_smooth_l1_loss(a, a, -1), DT_ERR_INVALID_ARGUMENT);
    REFUSE(dt_bce_with_logits_ex(a, a, (dt_reduction)7), DT_ERR_INVALID_ARGUMENT);
  }
  /* float16 and bfloat16: each operation's float32 temporaries failing in turn */
  {
    dt_tensor *h16, *hb, *hy, *ht;
    char pb[256];
    NEW(t, dt_from_data(A6, dt_shape2(2, 3), DT_F32, dt_cpu()));
    NEW(h16, dt_cast(t, DT_F16));
    NEW(hb, dt_cast(t, DT_BF16));
    NEW(hy, dt_add(h16, h16));
    NEW(hy, dt_cast(hy, DT_F64)); VERIFY(val(hy, 5) == 2 * A6[5]);
    NEW(hy, dt_mul_scalar(hb, 2.0));
    NEW(hy, dt_exp(h16));
    NEW(ht, dt_transpose(h16));
    NEW(hy, dt_matmul(h16, ht));
    NEW(ht, dt_transpose(hb));
    NEW(hy, dt_matmul(hb, ht));
    NEW(hy, dt_sum(h16));
    NEW(hy, dt_sum_dim(hb, 1));
    NEW(hy, dt_mean_dim(hb, 0, 1));
    NEW(hy, dt_softmax(h16, 1));
    NEW(hy, dt_max_dim(hb, 0));
    NEW(hy, dt_lt(h16, h16));
    NEW(hy, dt_cast(hb, DT_F16));
    STEP(dt_axpy_(h16, 0.5, h16) == DT_OK);
    /* in-place arithmetic in half: through float32 temporaries */
    STEP(dt_add_(h16, h16) == DT_OK);
    STEP(dt_mul_(hb, hb) == DT_OK);
    STEP(dt_mul_scalar_(hb, 0.5) == DT_OK);
    STEP(dt_snprint(pb, sizeof pb, hb) > 0);
  }
  /* a graph: a chain captured on the CPU, replayed after a new input was copied in; an allocation
     failing in the capture, its end or the replay: a clean error (the capture is ended at out:, and
     what it kept goes back) */
  {
    dt_tensor *gin = NULL, *gx = NULL, *gt = NULL, *gu = NULL, *gd = NULL;
    NEW(gx, dt_zeros(dt_shape1(6), dt_cpu()));
    NEW(gin, dt_from_data(A6, dt_shape1(6), DT_F32, dt_cpu()));
    STEP(dt_graph_begin(dt_cpu()) == DT_OK);
    gcap = 1;
    NEW(gt, dt_add_scalar(gx, 1.0));
    NEW(gu, dt_mul(gt, gt));
    NEW(gd, dt_rand(dt_shape1(6), dt_cpu())); /* a draw the replay makes afresh */
    gcap = 0;
    STEP((gr = dt_graph_end(dt_cpu())) != NULL);
    STEP(dt_copy_(gx, gin) == DT_OK);
    STEP(dt_graph_replay(gr) == DT_OK);
    VERIFY(val(gu, 0) == 4.0 && val(gu, 5) == 49.0 && val(gd, 0) >= 0.0 && val(gd, 0) < 1.0);
    dt_graph_free(gr); gr = NULL;
  }
  /* dropout, layer norm, embedding, GELU and batch norm: functional forms and modules; batch
     norm's training steps update its buffers (a failed one leaves them, checked at out:), save
     and load them, and convert them; the refusals allocate nothing */
  NEW(u, dt_arange(0, 24, 1, DT_F32, dt_cpu()));
  NEW(bx, dt_reshape(u, dt_shape4(2, 3, 2, 2)));            /* channel 0: 0..3 and 12..15, mean 7.5 */
  NEW(t, dt_f_dropout(bx, 0.5, 1)); VERIFY(val(t, 1) == 0 || val(t, 1) == 2);
  NEW(t, dt_f_layer_norm(bx, 2, NULL, NULL, 0.0)); VERIFY(fabs(val(t, 1) - 1) < 1e-6);
  NEW(t, dt_f_batch_norm(bx, NULL, NULL, NULL, NULL, 1, 0.1, 0.0)); VERIFY(val(t, 0) < 0);
  { /* in bfloat16: through float32, the running statistics rounded back (a failed batch norm
       leaves them zeros, checked at out:) */
    dt_tensor *hx;
    NEW(hx, dt_cast(bx, DT_BF16));
    NEW(u, dt_zeros(dt_shape1(3), dt_cpu()));
    NEW(hbn_m, dt_cast(u, DT_BF16));
    NEW(hbn_v, dt_cast(u, DT_BF16));
    NEW(t, dt_f_layer_norm(hx, 2, NULL, NULL, 0.0));
    NEW(u, dt_cast(t, DT_F32)); VERIFY(fabs(val(u, 1) - 1) < 1e-2);
    hbn_pending = 1;
    NEW(t, dt_f_batch_norm(hx, hbn_m, hbn_v, NULL, NULL, 1, 0.1, 1e-5));
    hbn_pending = 0;
    NEW(u, dt_cast(hbn_m, DT_F32)); VERIFY(val(u, 0) == 0.75);
  }
  STEP((lyr = dt_dropout(0.25)) != NULL);
  NEW(t, dt_forward(lyr, bx));
  dt_module_free(lyr); lyr = NULL;
  STEP((lyr = dt_layer_norm(2)) != NULL);
  NEW(t, dt_forward(lyr, bx));
  NEW(u, dt_sum(t));
  STEP(dt_autograd_backward(u, NULL) == DT_OK);
  dt_module_free(lyr); lyr = NULL;
  STEP((lyr = dt_gelu_layer()) != NULL);
  NEW(t, dt_forward(lyr, bx)); VERIFY(val(t, 1) > 0.84 && val(t, 1) < 0.85);
  dt_module_free(lyr); lyr = NULL;
  {
    static const int64_t eiv[4] = {1, 4, 1, 0};
    STEP((lyr = dt_embedding(5, 3)) != NULL);
    NEW(ei, dt_from_data(eiv, dt_shape2(2, 2), DT_I64, dt_cpu()));
    NEW(t, dt_forward(lyr, ei)); VERIFY(dt_ndim(t) == 3 && val(t, 0) == val(t, 6));
    NEW(u, dt_sum(t));
    STEP(dt_autograd_backward(u, NULL) == DT_OK);
    dt_module_free(lyr); lyr = NULL;
  }
  STEP((bn = dt_batch_norm(3)) != NULL);
  NEW(t, dt_forward(bn, bx));
  bn_snap[0] = val(dt_module_get_buffer(bn, "running_mean"), 0); bn_snap[1] = val(dt_module_get_buffer(bn, "running_var"), 2);
  bn_snap[2] = val(dt_module_get_buffer(bn, "num_batches_tracked"), 0); bn_have = 1;
  VERIFY(fabs(bn_snap[0] - 0.75) < 1e-6 && bn_snap[2] == 1);
  NEW(u, dt_sum(t));
  STEP(dt_autograd_backward(u, NULL) == DT_OK);
  NEW(t, dt_forward(bn, bx));
  bn_snap[0] = val(dt_module_get_buffer(bn, "running_mean"), 0); bn_snap[1] = val(dt_module_get_buffer(bn, "running_var"), 2);
  bn_snap[2] = val(dt_module_get_buffer(bn, "num_batches_tracked"), 0);
  VERIFY(fabs(bn_snap[0] - 1.425) < 1e-6 && bn_snap[2] == 2);
  STEP(dt_module_train(bn, 0) == DT_OK);
  NEW(t, dt_forward(bn, bx));
  STEP(dt_module_train(bn, 1) == DT_OK);
  STEP(dt_module_save(bn, fi_path) == DT_OK);
  STEP((bn2 = dt_batch_norm(3)) != NULL);
  STEP(dt_module_load(bn2, fi_path) == DT_OK);
  VERIFY(val(dt_module_get_buffer(bn2, "running_mean"), 0) == bn_snap[0] && val(dt_module_get_buffer(bn2, "num_batches_tracked"), 0) == 2);
  STEP(dt_module_to_dtype(bn2, DT_F64) == DT_OK);
  VERIFY(dt_dtype_of(dt_module_get_buffer(bn2, "running_var")) == DT_F64 && dt_dtype_of(dt_module_get_buffer(bn2, "num_batches_tracked")) == DT_I64);
  NEW(u, dt_zeros(dt_shape2(1, 3), dt_cpu()));
  REFUSE(dt_f_batch_norm(u, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5), DT_ERR_SHAPE);   /* one value per channel */
  REFUSE(dt_f_dropout(bx, 1.5, 1), DT_ERR_INVALID_ARGUMENT);
  REFUSE(dt_f_layer_norm(bx, 3, NULL, NULL, 1e-5), DT_ERR_SHAPE);
  REFUSE(dt_f_embedding(bx, u), DT_ERR_DTYPE);
  REFUSE(dt_forward(bn, u), DT_ERR_SHAPE);                                         /* 1 channel... of 3: (1, 3) is one value each */
  /* autocast (BF16 on the CPU): a linear layer's forward, matmul and the loss in F32, its backward to
     F32 gradients; the grad scaler's scale, step (a check, the unscale, SGD) and update */
  {
    static const int64_t lab2[2] = {1, 0};
    dt_tensor *ax = NULL, *ay = NULL, *aw = NULL, *am = NULL, *alab = NULL, *al = NULL, *asl = NULL, *agr = NULL;
    NEW(ax, dt_from_data(A6, dt_shape2(2, 3), DT_F32, dt_cpu()));
    STEP((acm = dt_linear(3, 2)) != NULL);
    STEP((aco = dt_sgd(acm, 0.1, 0, 0)) != NULL);
    STEP((gsc = dt_grad_scaler_new(8.0)) != NULL);
    dt_set_autocast(DT_CPU, DT_BF16);
    NEW(ay, dt_forward(acm, ax));
    NEW(aw, dt_from_data(A6, dt_shape2(3, 2), DT_F32, dt_cpu()));
    NEW(am, dt_matmul(ax, aw));
    NEW(alab, dt_from_data(lab2, dt_shape1(2), DT_I64, dt_cpu()));
    NEW(al, dt_cross_entropy(ay, alab));
    dt_set_autocast(DT_CPU, DT_F32);
    NEW(asl, dt_grad_scaler_scale(gsc, al));
    STEP(dt_autograd_backward(asl, NULL) == DT_OK);
    STEP((agr = dt_module_grad(acm, 0)) != NULL); /* borrowed; it builds the module's table, which may fail */
    VERIFY(dt_dtype_of(ay) == DT_BF16 && dt_dtype_of(am) == DT_BF16 && dt_dtype_of(al) == DT_F32 && dt_dtype_of(agr) == DT_F32);
    STEP(dt_grad_scaler_step(gsc, aco) == DT_OK);
    STEP(dt_grad_scaler_update(gsc) == DT_OK);
    VERIFY(dt_grad_scaler_get_scale(gsc) == 8.0);
  }
  /* a small CNN's training step through autograd: Conv2d(1, 2, 3, padding 1), ReLU,
     MaxPool2d(2), Flatten, Linear(8, 3) on x (2, 1, 4, 4) = 0, 0.1, ..., its cross-entropy,
     dt_autograd_backward, an SGD step; a failure leaves its parameters as they were (checked at
     out:) */
  STEP((cnn = dt_sequential()) != NULL);
  STEP((l = dt_conv2d(1, 2, 3, 1, 1)) != NULL); ADD(cnn);
  STEP((l = dt_relu_layer()) != NULL); ADD(cnn);
  STEP((l = dt_max_pool2d(2, 2, 0)) != NULL); ADD(cnn);
  STEP((l = dt_flatten_layer()) != NULL); ADD(cnn);
  STEP((l = dt_linear(8, 3)) != NULL); ADD(cnn);
  ncsnap = snap_cnn(cnn, csnap, 64);
  VERIFY(ncsnap == 47);
  {
    static const int64_t clab[2] = {0, 2};
    dt_tensor *cx, *cl, *cp;
    NEW(u, dt_arange(0, 32, 1, DT_F32, dt_cpu()));
    NEW(t, dt_mul_scalar(u, 0.1));
    NEW(cx, dt_reshape(t, dt_shape4(2, 1, 4, 4)));
    NEW(cl, dt_from_data(clab, dt_shape1(2), DT_I64, dt_cpu()));
    NEW(cp, dt_forward(cnn, cx)); VERIFY(dt_dim(cp, 0) == 2 && dt_dim(cp, 1) == 3);
    NEW(t, dt_cross_entropy(cp, cl)); VERIFY(val(t, 0) > 0);
    STEP(dt_autograd_backward(t, NULL) == DT_OK);
    VERIFY(dt_grad(dt_module_get_param(cnn, "0.weight")) != NULL && dt_grad(dt_module_get_param(cnn, "4.bias")) != NULL);
    STEP((opt = dt_sgd(cnn, 0.1, 0, 0)) != NULL);
    STEP(dt_optimizer_step(opt) == DT_OK);
    VERIFY(snap_cnn(cnn, cnow, 64) == ncsnap && !same(cnow, csnap, ncsnap)); /* the step changed them */
    ncsnap = snap_cnn(cnn, csnap, 64);
    dt_optimizer_free(opt); opt = NULL;
  }

  /* net.bfloat16(), all or nothing, trained through autograd by Adam and clipped: a failure
     leaves the parameters as they were, dtype and bits (checked at out:) */
  STEP((hm = dt_sequential()) != NULL);
  STEP((l = dt_linear(2, 3)) != NULL); ADD(hm);
  STEP((l = dt_relu_layer()) != NULL); ADD(hm);
  STEP((l = dt_linear(3, 1)) != NULL); ADD(hm);
  nhsnap = snap_bits(hm, hsnap, 32, &hdt);
  STEP(dt_module_to_dtype(hm, DT_BF16) == DT_OK);
  nhsnap = snap_bits(hm, hsnap, 32, &hdt); VERIFY(hdt == DT_BF16 && nhsnap == 13);
  NEW(u, dt_cast(x4, DT_BF16));
  NEW(t, dt_forward(hm, u)); VERIFY(dt_dtype_of(t) == DT_BF16);
  NEW(t, dt_sum(t));
  STEP(dt_autograd_backward(t, NULL) == DT_OK);
  STEP((hopt = dt_adam(hm, 0.01, 0.9, 0.999, 1e-8, 0.1)) != NULL);
  STEP(dt_optimizer_step(hopt) == DT_OK);
  nhsnap = snap_bits(hm, hsnap, 32, &hdt);
  {
    dt_tensor *hp[4];
    hp[0] = dt_linear_weight(dt_sequential_get(hm, 0)); hp[1] = dt_linear_bias(dt_sequential_get(hm, 0));
    hp[2] = dt_linear_weight(dt_sequential_get(hm, 2)); hp[3] = dt_linear_bias(dt_sequential_get(hm, 2));
    STEP(dt_clip_grad_norm_(hp, 4, 1e-3, NULL) == DT_OK);
  }
  STEP((opt = dt_sgd(hm, 0.1, 0.9, 0.01)) != NULL);
  STEP(dt_optimizer_step(opt) == DT_OK);
  nhsnap = snap_bits(hm, hsnap, 32, &hdt);
  dt_optimizer_free(opt); opt = NULL;
  STEP(dt_module_to_dtype(hm, DT_F32) == DT_OK);
  nhsnap = snap_bits(hm, hsnap, 32, &hdt);
  STEP(dt_optimizer_step(hopt) == DT_OK); /* its state follows to float32 first */
  nhsnap = snap_bits(hm, hsnap, 32, &hdt); VERIFY(hdt == DT_F32);

out:
  dt_set_autocast(DT_CPU, DT_F32);
  dt_grad_scaler_free(gsc);
  dt_optimizer_free(aco);
  dt_module_free(acm);
  if (gcap) dt_graph_free(dt_graph_end(dt_cpu()));
  dt_graph_free(gr);
  dt_optimizer_free(opt);
  dt_dist_finalize(); /* after a failed step: the next run starts with no process group */
  if (failed_line && !ln && (lnames || lts)) fi_problem(failed_line, "a failed dt_load_tensors left its outputs set");
  dt_free_tensors(ln, lnames, lts);
  if (dlv) dlv->deleter(dlv);   /* refused: still ours, so ours to delete (a second delete would show as a bad free) */
  if (dll) dll->deleter(dll);
  if (!blob_made && fi_blob_freed) fi_problem(failed_line, "a failed dt_from_blob called the deleter");
  /* nothing held was changed by a failure */
  if (a) { for (k = 0; k < 6; k++) if (val(a, k) != A6[k]) { fi_problem(__LINE__, "tensor a was changed"); break; } }
  if (net && nsnap && failed_line) {
    double now[64];
    dt_dtype ndt = DT_F32;
    int n = snap_net(net, now, 64, &ndt);
    if (ndt == sdt && (n != nsnap || !same(now, snap, nsnap))) fi_problem(failed_line, "net's parameters changed by a failed step");
  }
  if (um && nusnap && failed_line) {
    double now[32];
    if (snap_user(um, now, 32) != nusnap || !same(now, usnap, nusnap)) fi_problem(failed_line, "a user module's parameters changed by a failed step");
  }
  if (hm && nhsnap && failed_line) {
    double now[32];
    dt_dtype ndt = DT_F32;
    if (snap_bits(hm, now, 32, &ndt) != nhsnap || ndt != hdt || !same(now, hsnap, nhsnap))
      fi_problem(failed_line, "a half module's parameters changed by a failed step");
  }
  if (cnn && ncsnap && failed_line && (snap_cnn(cnn, cnow, 64) != ncsnap || !same(cnow, csnap, ncsnap)))
    fi_problem(failed_line, "a CNN's parameters changed by a failed step");
  if (net2 && nsnap2 && failed_line && !loaded) {
    double now[64];
    if (snap_net(net2, now, 64, NULL) != nsnap2 || !same(now, snap2, nsnap2)) fi_problem(failed_line, "a failed dt_module_load changed the net");
  }
  if (bn && bn_have && failed_line &&
      (val(dt_module_get_buffer(bn, "running_mean"), 0) != bn_snap[0] || val(dt_module_get_buffer(bn, "running_var"), 2) != bn_snap[1] ||
       val(dt_module_get_buffer(bn, "num_batches_tracked"), 0) != bn_snap[2]))
    fi_problem(failed_line, "a failed step changed batch norm's running statistics");
  if (hbn_pending && failed_line) {
    const uint16_t *m = (const uint16_t *)dt_data_ptr(hbn_m), *v = (const uint16_t *)dt_data_ptr(hbn_v);
    for (i = 0; i < 3; i++)
      if (m[i] || v[i]) { fi_problem(failed_line, "a failed bfloat16 batch norm changed its running statistics"); break; }
  }
  /* the program can go on: with no more failures, what is held still works */
  if (failed_line) {
    long save = fi_fail_at;
    fi_fail_at = 0;
    dt_clear_error();
    if (net) {
      /* a backward shaped like the last successful forward: must be computed or refused, never read out of bounds */
      if (net_rows > 0) {
        dt_tensor *g1 = dt_ones(dt_shape2(net_rows, 1), dt_cpu());
        dt_tensor *gg = g1 ? dt_cast(g1, dt_dtype_of(dt_linear_weight(dt_sequential_get(net, 0)))) : NULL;
        dt_tensor *gx = gg ? dt_backward(net, gg) : NULL;
        dt_release(g1);
        if (gx && dt_dim(gx, 0) != net_rows) fi_problem(failed_line, "backward after a failed step gave a wrong shape");
        if (gg && (dt_backward_params(net, gg) == DT_OK) != (gx != NULL))
          fi_problem(failed_line, "dt_backward_params and dt_backward disagree after a failed step");
        dt_release(gx); dt_release(gg);
      }
      if (x4) {
        dt_tensor *xx = dt_module_device(net).type == DT_CPU ? dt_cast(x4, dt_dtype_of(dt_linear_weight(dt_sequential_get(net, 0)))) : NULL;
        dt_tensor *yy = xx ? dt_forward(net, xx) : NULL;
        if (xx && dt_linear_weight(dt_sequential_get(net, 0)) && !yy) fi_problem(failed_line, "forward after a failed step fails");
        dt_release(yy); dt_release(xx);
      }
    }
    if (ag_have && !ag_done) {
      dt_tensor *gw = dt_grad(ag_w);
      for (i = 0; i < 6 && gw; i++)
        if (val(gw, i) != ag_snap[i]) { fi_problem(failed_line, "a failed forward or backward changed a leaf's gradient"); break; }
      if (!gw) fi_problem(failed_line, "a failed forward or backward dropped a leaf's gradient");
    }
    if (a) {
      dt_tensor *s = dt_sum(a);
      if (!s || val(s, 0) != 21) fi_problem(failed_line, "dt_sum after a failed step");
      dt_release(s);
    }
    fi_fail_at = save;
  }
  if (tf) fclose(tf);
  dt_module_free(l);
  dt_module_free(net);
  dt_module_free(net2);
  dt_module_free(net3);
  dt_module_free(um);
  dt_module_free(bn); dt_module_free(bn2); dt_module_free(lyr);
  dt_module_free(cnn);
  dt_optimizer_free(hopt); dt_module_free(hm);
  dt_optimizer_free(opt_c); dt_module_free(netc);
  dt_optimizer_free(opt_g); dt_module_free(netg);
  for (i = 0; i < npool; i++) dt_release(pool[i]);
  npool = 0;
  if (fi_blob_freed != blob_made) fi_problem(failed_line, "dt_from_blob's deleter did not run exactly once at the last release");
  return failed_line;
}

/* Runs the workload for N = 1, 2, ... until a run sees no injected failure. */
static void fault_mode(int persistent) {
  long n, covered = 0, runs_with_problems = 0, every = 1;
  const char *ev = getenv("FAULT_EVERY");
  if (ev && atol(ev) > 1) every = atol(ev);
  fi_persistent = persistent;
  fi_mode_name = persistent ? "persistent" : "single";
  for (n = 1;; n += every) {
    int line;
    fi_calls = 0; fi_fail_at = n; fi_run_n = n; fi_injected = 0; fi_injected_hard = 0; fi_problems = 0; fi_bad_free = 0;
    line = workload();
    if (fi_live != 0) { fi_problem(line, "allocations still live after the workload released everything (a leak)"); fi_live = 0; }
    if (fi_bad_free) fi_problem(line, "DT_FREE of a pointer DT_MALLOC did not give (or a double free)");
    if (fi_problems) runs_with_problems++;
    covered++;
    if (fi_injected == 0) {                       /* ran to the end: every allocation has been failed once */
      if (line) { fi_problem(line, "the run without failures did not complete"); runs_with_problems++; }
      break;
    }
    if (!line && fi_injected_hard) { fi_problem(0, "an injected failure was never reported"); runs_with_problems++; }
    if (n > 100000) { fi_problem(0, "runaway"); break; }
  }
  T_CHECK_MSG(runs_with_problems == 0, "%ld of %ld runs had problems", runs_with_problems, covered);
  printf("  %s mode: %ld runs (N = 1..%ld", fi_mode_name, covered, n);
  if (every > 1) printf(" in steps of %ld", every);
  printf("; a complete run makes %ld allocations)\n", fi_calls);
  if (fi_calls > fi_max_calls) fi_max_calls = fi_calls;
}

static void test_reference_run(void) {
  int line;
  fi_mode_name = "reference"; fi_fail_at = 0; fi_calls = 0; fi_problems = 0; fi_injected = 0; fi_injected_hard = 0;
  line = workload();
  T_CHECK_MSG(line == 0, "the workload fails without injected failures at line %d: %s", line, dt_last_error());
  T_CHECK(fi_problems == 0);
  T_CHECK_MSG(fi_live == 0, "%ld allocations live", fi_live);
  T_CHECK(fi_calls > 100);
  printf("  a complete run makes %ld allocations\n", fi_calls);
}
static void test_fault_single(void) { fault_mode(0); }
static void test_fault_persistent(void) { fault_mode(1); }

int main(void) {
  mkdir("build", 0777);
  snprintf(fi_path, sizeof fi_path, "build/fault_injection_%ld.safetensors", (long)getpid());
  T_RUN(test_reference_run);
  T_RUN(test_fault_single);
  T_RUN(test_fault_persistent);
  remove(fi_path);
  return t_finish();
}
