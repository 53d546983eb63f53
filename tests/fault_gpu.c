/* GPU fault injection: the CUDA allocator's cudaMalloc number N fails.

   This program defines cudaMalloc itself, so the backend's calls come here
   (the executable's definition wins over libcudart's, or the emulator's), and
   passes the others on to the real one (dlsym RTLD_NEXT). A workload on
   cuda:0 (tensors, every kind of kernel, reductions with scratch space, gemm,
   copies both ways, batch norm with its channels split, a network moved to the GPU, forward/backward/SGD,
   save/load straight onto the GPU, a CNN's step through autograd) runs once
   for every N = 1, 2, ... with cudaMalloc number N failing ("single": the
   allocator's flush-and-retry may absorb it) and again with N and every later one failing ("persistent"),
   until a run makes fewer than N calls. Each run starts with an empty cache,
   so every block comes from cudaMalloc.

   Checked in every run: a failed step reports DT_ERR_OUT_OF_MEMORY with a
   message naming the function and "out of memory on cuda:0"; a step that
   succeeds computed the right values; a tensor held across all runs and a
   network whose move to the GPU failed are unchanged; after the workload has
   released everything, devtensor's allocated bytes on cuda:0 are back to
   where they were (no device block leaks). Host leaks: LeakSanitizer in the
   emulator build (make test-emu). Without a GPU it reports one SKIP.

   Built by make test (CUDA builds, run on a GPU when there is one) and by
   make test-emu (on the emulator, two GPUs). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"

/* ---- the failing cudaMalloc (cudaError_t is an int-sized enum; 2 is cudaErrorMemoryAllocation) ---- */

typedef int (*fg_malloc_fn)(void **, size_t);
static long fg_calls, fg_fail_at, fg_injected;
static int fg_persistent;

int cudaMalloc(void **p, size_t n);
int cudaMalloc(void **p, size_t n) {
  static fg_malloc_fn real;
  if (!real) {
    void *sym = dlsym(RTLD_NEXT, "cudaMalloc");
    if (!sym) return 3; /* cudaErrorInitializationError */
    memcpy(&real, &sym, sizeof real);
  }
  fg_calls++;
  if (fg_fail_at > 0 && (fg_calls == fg_fail_at || (fg_persistent && fg_calls > fg_fail_at))) {
    fg_injected++;
    if (p) *p = NULL;
    return 2;
  }
  return real(p, n);
}

/* ---- the workload ---- */

static long fg_problems;
static long fg_run_n; /* N of the run, for messages */
static int fg_verbose_left = 30;
static const char *fg_mode = "warm-up";
static char fg_path[256];

static void fg_problem(int line, const char *what) {
  fg_problems++;
  if (fg_verbose_left-- > 0)
    printf("  %s mode, N = %ld, tests/fault_gpu.c:%d: %s [status %d, \"%s\"]\n", fg_mode, fg_run_n, line, what,
           (int)dt_last_status(), dt_last_error());
}

static void fg_check_failure(int line, long injected_before) {
  const char *msg = dt_last_error();
  if (fg_injected == injected_before) { fg_problem(line, "a step failed with no injected failure"); return; }
  if (dt_last_status() != DT_ERR_OUT_OF_MEMORY) fg_problem(line, "status is not DT_ERR_OUT_OF_MEMORY");
  else if (strncmp(msg, "dt_", 3) != 0 || !strstr(msg, "out of memory on cuda:0"))
    fg_problem(line, "message does not read \"dt_xxx: ... out of memory on cuda:0 ...\"");
}

#define STEP(ok) do { long inj_ = fg_injected; dt_clear_error(); \
    if (!(ok)) { fg_check_failure(__LINE__, inj_); goto out; } } while (0)
#define VERIFY(cond) do { if (!(cond)) fg_problem(__LINE__, "wrong result: " #cond); } while (0)

#define POOL 64
static dt_tensor *pool[POOL];
static int npool;
static dt_tensor *keep(dt_tensor *t) {
  if (t && npool < POOL) pool[npool++] = t;
  else if (t) fg_problem(__LINE__, "test pool full");
  return t;
}
#define NEW(var, expr) STEP(((var) = keep(expr)) != NULL)

static double at(const dt_tensor *t, int64_t i) { /* element i of a GPU tensor, through the host */
  double v = 0;
  dt_tensor *h = dt_to((dt_tensor *)t, dt_cpu());
  if (!h) return -12345;
  switch (dt_dtype_of(h)) {
    case DT_F32: v = ((const float *)dt_data_ptr(h))[i]; break;
    case DT_F64: v = ((const double *)dt_data_ptr(h))[i]; break;
    case DT_I32: v = ((const int32_t *)dt_data_ptr(h))[i]; break;
    case DT_I64: v = (double)((const int64_t *)dt_data_ptr(h))[i]; break;
    case DT_U8: case DT_BOOL: v = ((const uint8_t *)dt_data_ptr(h))[i]; break;
    default: break; /* float16, bfloat16: tests/test_half.c */
  }
  dt_release(h);
  return v;
}

/* the largest |a - b| of two float32 tensors of one size, a on the GPU, b on the CPU (through
   the host: no cudaMalloc); -1 where they cannot be compared */
static double max_diff(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *h = a && b ? dt_to((dt_tensor *)a, dt_cpu()) : NULL;
  double m = -1;
  int64_t i;
  if (h && dt_numel(h) == dt_numel(b))
    for (m = 0, i = 0; i < dt_numel(h); i++) {
      double d = fabs((double)((const float *)dt_data_ptr(h))[i] - (double)((const float *)dt_data_ptr((dt_tensor *)b))[i]);
      if (d > m) m = d;
    }
  dt_release(h);
  return m;
}

/* the parameters of m as doubles, copied through the host (no cudaMalloc) */
static int params_of(dt_module *m, double *out, int cap) {
  int i, n = 0;
  for (i = 0; i < dt_module_num_params(m); i++) {
    dt_tensor *p = dt_module_param(m, i, NULL), *h = dt_to(p, dt_cpu());
    int64_t j;
    if (!h) return -1;
    for (j = 0; j < dt_numel(h) && n < cap; j++) out[n++] = ((const float *)dt_data_ptr(h))[j];
    dt_release(h);
  }
  return n;
}

static dt_tensor *held;     /* on cuda:0 for every run: must not change */

static void workload(void) {
  dt_device g = dt_gpu(0);
  dt_tensor *a, *b, *c, *s, *t, *h, *big, *x, *y, *pred, *loss, *grad;
  dt_module *net = NULL, *net2 = NULL, *l, *cnn = NULL;
  dt_optimizer *opt = NULL, *copt = NULL;
  static double before[4096], after[4096];
  long inj;
  int nb, i;
  npool = 0;
  dt_manual_seed(7);
  /* elementwise, broadcasting, casts, fills (the small bins) */
  NEW(a, dt_rand(dt_shape2(64, 32), g));
  NEW(b, dt_full(dt_shape1(32), 2.0, g));
  NEW(c, dt_mul(a, b));
  NEW(t, dt_cast(c, DT_F64));
  STEP(dt_fill_(t, 3.0) == DT_OK);
  NEW(s, dt_sum(t));
  VERIFY(at(s, 0) == 3.0 * 64 * 32);
  /* gemm through cuBLAS, its result reduced */
  NEW(b, dt_ones(dt_shape2(32, 16), g));
  NEW(c, dt_matmul(a, b));
  NEW(t, dt_sum_dim(c, 1)); /* 16 times a's row sums */
  NEW(s, dt_sum(a));
  NEW(t, dt_sum(t));
  VERIFY(fabs(at(t, 0) - 16 * at(s, 0)) <= 1e-3 * fabs(at(t, 0)));
  /* a large block (the 2 MiB bins) and a long reduction (scratch from the allocator) */
  NEW(big, dt_ones(dt_shape1((int64_t)3 << 20), g));
  NEW(s, dt_sum(big));
  VERIFY(at(s, 0) == (double)(3 << 20));
  NEW(s, dt_norm(big));
  VERIFY(fabs(at(s, 0) - sqrt((double)(3 << 20))) < 1e-3);
  /* batch norm's statistics and backward sums with the channels split in slices (2 channels of
     16384 values: on any GPU), partial sums in a scratch block from the allocator, and where that
     block cannot be had, one block per channel: the CPU's values either way */
  {
    dt_tensor *h0, *hx, *hg, *hy, *bx, *bg, *by;
    NEW(h0, dt_randn(dt_shape3(4, 2, 4096), dt_cpu()));
    NEW(hx, dt_copyto(h0, dt_cpu()));
    NEW(hg, dt_randn(dt_shape3(4, 2, 4096), dt_cpu()));
    STEP(dt_requires_grad_(hx, 1) == DT_OK);
    NEW(hy, dt_f_batch_norm(hx, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5));
    STEP(dt_autograd_backward(hy, hg) == DT_OK);
    NEW(bx, dt_to(h0, g));
    NEW(bg, dt_to(hg, g));
    STEP(dt_requires_grad_(bx, 1) == DT_OK);
    NEW(by, dt_f_batch_norm(bx, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5));
    VERIFY(max_diff(by, hy) >= 0 && max_diff(by, hy) < 1e-4);
    STEP(dt_autograd_backward(by, bg) == DT_OK);
    VERIFY(max_diff(dt_grad(bx), dt_grad(hx)) >= 0 && max_diff(dt_grad(bx), dt_grad(hx)) < 1e-4);
  }
  /* copies: device to host and back, device to device */
  NEW(h, dt_to(c, dt_cpu()));
  NEW(t, dt_to(h, g));
  NEW(t, dt_copyto(t, g));
  /* a network: moved to the GPU (all or nothing), trained one step, saved and loaded onto the GPU */
  STEP((net = dt_sequential()) != NULL);
  STEP((l = dt_linear(32, 64)) != NULL && dt_sequential_add(net, l) == DT_OK);
  STEP((l = dt_relu_layer()) != NULL && dt_sequential_add(net, l) == DT_OK);
  STEP((l = dt_linear(64, 4)) != NULL && dt_sequential_add(net, l) == DT_OK);
  nb = params_of(net, before, 4096);
  inj = fg_injected;
  dt_clear_error();
  if (dt_module_to(net, g) != DT_OK) { /* all or nothing: still on the CPU, unchanged */
    fg_check_failure(__LINE__, inj);
    VERIFY(dt_module_device(net).type == DT_CPU);
    VERIFY(params_of(net, after, 4096) == nb && memcmp(before, after, sizeof(double) * (size_t)nb) == 0);
    goto out;
  }
  NEW(x, dt_randn(dt_shape2(16, 32), g));
  NEW(y, dt_zeros(dt_shape2(16, 4), g));
  NEW(pred, dt_forward(net, x));
  NEW(loss, dt_mse_loss(pred, y));
  NEW(grad, dt_mse_loss_grad(pred, y));
  /* cross-entropy: its scratch and the device's label record (made once) come from cudaMalloc
     too (argmax, max/min and softmax allocate only their result, as every op) */
  {
    int64_t labs[16];
    dt_tensor *lab;
    for (i = 0; i < 16; i++) labs[i] = i % 4;
    NEW(lab, dt_from_data(labs, dt_shape1(16), DT_I64, g));
    NEW(t, dt_cross_entropy(pred, lab)); VERIFY(at(t, 0) > 0);
    NEW(t, dt_cross_entropy_grad(pred, lab));
  }
  STEP(dt_zero_grad(net) == DT_OK);
  STEP(dt_backward_params(net, grad) == DT_OK);
  STEP(dt_sgd_step(net, 0.1) == DT_OK);
  STEP(dt_module_save(net, fg_path) == DT_OK);
  STEP((net2 = dt_sequential()) != NULL);
  STEP((l = dt_linear(32, 64)) != NULL && dt_sequential_add(net2, l) == DT_OK);
  STEP((l = dt_relu_layer()) != NULL && dt_sequential_add(net2, l) == DT_OK);
  STEP((l = dt_linear(64, 4)) != NULL && dt_sequential_add(net2, l) == DT_OK);
  STEP(dt_module_to(net2, g) == DT_OK);
  nb = params_of(net2, before, 4096);
  inj = fg_injected;
  dt_clear_error();
  if (dt_module_load(net2, fg_path) != DT_OK) { /* all or nothing: the parameters as they were */
    fg_check_failure(__LINE__, inj);
    VERIFY(params_of(net2, after, 4096) == nb && memcmp(before, after, sizeof(double) * (size_t)nb) == 0);
    goto out;
  }
  nb = params_of(net, before, 4096);
  VERIFY(params_of(net2, after, 4096) == nb && memcmp(before, after, sizeof(double) * (size_t)nb) == 0);
  /* an optimizer's first step on the GPU: when making its state fails, the parameters are as they were */
  STEP((opt = dt_adam(net, 0.01, 0.9, 0.999, 1e-8, 0.1)) != NULL);
  nb = params_of(net, before, 4096);
  inj = fg_injected;
  dt_clear_error();
  if (dt_optimizer_step(opt) != DT_OK) {
    fg_check_failure(__LINE__, inj);
    VERIFY(params_of(net, after, 4096) == nb && memcmp(before, after, sizeof(double) * (size_t)nb) == 0);
    goto out;
  }
  VERIFY(params_of(net, after, 4096) == nb && memcmp(before, after, sizeof(double) * (size_t)nb) != 0);
  STEP(dt_optimizer_step(opt) == DT_OK);
  /* a small CNN moved to the GPU and trained one step through autograd: Conv2d(1, 2, 3, padding
     1), BatchNorm2d(2), ReLU, MaxPool2d(2), Flatten, Linear(8, 3) on x (2, 1, 4, 4), the
     cross-entropy (its im2col scratch, batch norm's statistics and the backward's sums,
     pooling indices, the backward's col2im and gradients from cudaMalloc),
     dt_autograd_backward, an SGD step: a failed step leaves the parameters as they were */
  STEP((cnn = dt_sequential()) != NULL);
  STEP((l = dt_conv2d(1, 2, 3, 1, 1)) != NULL && dt_sequential_add(cnn, l) == DT_OK);
  STEP((l = dt_batch_norm(2)) != NULL && dt_sequential_add(cnn, l) == DT_OK);
  STEP((l = dt_relu_layer()) != NULL && dt_sequential_add(cnn, l) == DT_OK);
  STEP((l = dt_max_pool2d(2, 2, 0)) != NULL && dt_sequential_add(cnn, l) == DT_OK);
  STEP((l = dt_flatten_layer()) != NULL && dt_sequential_add(cnn, l) == DT_OK);
  STEP((l = dt_linear(8, 3)) != NULL && dt_sequential_add(cnn, l) == DT_OK);
  STEP(dt_module_to(cnn, g) == DT_OK);
  {
    int64_t labs[2] = {0, 2};
    dt_tensor *cx, *lab, *cp = NULL, *cl = NULL;
    dt_status cs;
    NEW(t, dt_arange(0, 32, 1, DT_F32, g));
    NEW(c, dt_mul_scalar(t, 0.1));
    NEW(cx, dt_reshape(c, dt_shape4(2, 1, 4, 4)));
    NEW(lab, dt_from_data(labs, dt_shape1(2), DT_I64, g));
    nb = params_of(cnn, before, 4096);
    VERIFY(nb == 51);
    inj = fg_injected;
    dt_clear_error();
    cs = (cp = keep(dt_forward(cnn, cx))) != NULL && (cl = keep(dt_cross_entropy(cp, lab))) != NULL ? DT_OK : dt_last_status();
    if (cs == DT_OK) cs = dt_autograd_backward(cl, NULL);
    if (cs == DT_OK && !(copt = dt_sgd(cnn, 0.1, 0, 0))) cs = dt_last_status();
    if (cs == DT_OK) cs = dt_optimizer_step(copt);
    if (cs != DT_OK) {
      fg_check_failure(__LINE__, inj);
      VERIFY(params_of(cnn, after, 4096) == nb && memcmp(before, after, sizeof(double) * (size_t)nb) == 0);
      goto out;
    }
    VERIFY(dt_dim(cp, 0) == 2 && dt_dim(cp, 1) == 3 && at(cl, 0) > 0);
    VERIFY(params_of(cnn, after, 4096) == nb && memcmp(before, after, sizeof(double) * (size_t)nb) != 0);
  }
out:
  dt_optimizer_free(opt);
  dt_optimizer_free(copt);
  dt_module_free(cnn);
  for (i = 0; i < npool; i++) dt_release(pool[i]);
  npool = 0;
  dt_module_free(net);
  dt_module_free(net2);
}

static void run_mode(const char *mode, int persistent, size_t baseline, long *runs) {
  long n;
  fg_mode = mode;
  fg_persistent = persistent;
  for (n = 1; n < 10000; n++) {
    dt_memory_stats st;
    dt_empty_cache(dt_gpu(0));
    fg_calls = 0;
    fg_injected = 0;
    fg_fail_at = fg_run_n = n;
    workload();
    fg_fail_at = 0;
    dt_clear_error();
    if (dt_memory_stats_get(dt_gpu(0), &st) != DT_OK || st.allocated != baseline) {
      char what[128];
      snprintf(what, sizeof what, "%zu bytes allocated after the run, %zu before", st.allocated, baseline);
      fg_problem(__LINE__, what);
    }
    if (at(held, 0) != 0.5 || at(held, 999) != 0.5) fg_problem(__LINE__, "the held tensor changed");
    (*runs)++;
    if (fg_injected == 0) break; /* the workload made fewer than n calls: all done */
  }
}

static void test_gpu_allocation_failures(void) {
  dt_memory_stats st;
  long runs = 0;
  if (dt_num_gpus() == 0) T_SKIP("no GPU on this machine");
  snprintf(fg_path, sizeof fg_path, "build/fault_gpu_%ld.safetensors", (long)getpid());
  held = dt_full(dt_shape1(1000), 0.5, dt_gpu(0));
  T_CHECK(held != NULL);
  workload(); /* warm-up: streams, the cuBLAS handle and its workspace, pinned staging: kept for the process */
  T_CHECK_MSG(fg_problems == 0, "the workload fails without injected failures");
  dt_empty_cache(dt_gpu(0));
  T_CHECK(dt_memory_stats_get(dt_gpu(0), &st) == DT_OK);
  run_mode("single", 0, st.allocated, &runs);
  run_mode("persistent", 1, st.allocated, &runs);
  printf("  %ld runs, the longest making %ld cudaMalloc calls\n", runs, fg_calls);
  T_CHECK_MSG(fg_problems == 0, "%ld problems", fg_problems);
  T_CHECK(runs > 4);
  dt_release(held);
  remove(fg_path);
}

int main(void) {
  T_RUN(test_gpu_allocation_failures);
  return t_finish();
}
