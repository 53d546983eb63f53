/* bench/bench_train.c — one training step of a 784-256-10 MLP on cuda:0; pairs with the
   train_step benchmark of bench_torch.py (bench/run_gpu.sh runs both, compare_gpu.py compares).

     cc -std=c99 -O2 -DDEVTENSOR_CUDA -I. bench/bench_train.c build/cuda/devtensor_cuda.o \
        -o build/bench_train -L<cuda>/lib64 -lcudart -lcublas -lstdc++ -lm

   The step, F32, batch 256, the batch already on the GPU (as in the PyTorch peer):
     pred = net(X); loss = mse(pred, Y); g = dmse/dpred; zero_grad; backward_params(g); sgd_step(lr)
   (dt_backward_params: the parameters' gradients only, no gradient for X, which PyTorch does
   not compute either since X does not require grad)
   with net = Linear(784, 256), ReLU, Linear(256, 10), every temporary released each step and
   the loss never read on the host inside the timed loop. WARMUP steps, then REPS times STEPS
   steps, wall clock from dt_synchronize to dt_synchronize; prints the median seconds per step
   (best= too) and the loss before and after, read once each outside the timing:
     devtensor train_step_mlp_784_256_10_b256 seconds_per_step=... best=... loss_start=... loss_end=...
   Without a GPU it prints `SKIP: no GPU (<reason>)` and exits 0. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 256
#define IN 784
#define HIDDEN 256
#define OUT 10
#define LR 0.01
#ifndef BENCH_SMOKE
#define WARMUP 20
#define STEPS 200
#define REPS 5
#else /* make test-emu: a few steps on the emulator, to see it work */
#define WARMUP 1
#define STEPS 3
#define REPS 2
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "bench_train: %s failed: %s\n", what, dt_last_error());
  exit(1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* forward, MSE loss, its gradient, zero_grad, backward (parameters only), SGD; nothing read on the host */
static void step(dt_module *net, const dt_tensor *X, const dt_tensor *Y) {
  dt_tensor *pred, *loss, *g;
  if (!(pred = dt_forward(net, X))) die("dt_forward");
  if (!(loss = dt_mse_loss(pred, Y))) die("dt_mse_loss");
  if (!(g = dt_mse_loss_grad(pred, Y))) die("dt_mse_loss_grad");
  if (dt_zero_grad(net) != DT_OK) die("dt_zero_grad");
  if (dt_backward_params(net, g) != DT_OK) die("dt_backward_params"); /* X needs no gradient, as in PyTorch */
  if (dt_sgd_step(net, LR) != DT_OK) die("dt_sgd_step");
  dt_release(pred); dt_release(loss); dt_release(g);
}

/* the loss of the current parameters, read on the host */
static double loss_now(dt_module *net, const dt_tensor *X, const dt_tensor *Y) {
  dt_tensor *pred, *loss;
  double v;
  if (!(pred = dt_forward(net, X))) die("dt_forward");
  if (!(loss = dt_mse_loss(pred, Y))) die("dt_mse_loss");
  dt_clear_error();
  v = dt_item(loss);
  if (dt_last_status() != DT_OK) die("dt_item");
  dt_release(pred); dt_release(loss);
  return v;
}

int main(void) {
  dt_device gpu = dt_gpu(0);
  dt_module *net;
  dt_tensor *X, *Y;
  double t[REPS], loss0, loss1;
  int r, i;
  if (dt_num_gpus() < 1) {
    printf("SKIP: no GPU (%s)\n", dt_last_error());
    return 0;
  }
  printf("# bench_train: %d-%d-%d MLP with ReLU, batch %d, F32, SGD lr %g, on cuda:0; %d warm-up steps, median of %d runs of %d steps\n",
         IN, HIDDEN, OUT, BATCH, LR, WARMUP, REPS, STEPS);
  fflush(stdout);
  dt_manual_seed(0);
  net = dt_sequential();
  if (!net) die("dt_sequential");
  if (dt_sequential_add(net, dt_linear(IN, HIDDEN)) != DT_OK || dt_sequential_add(net, dt_relu_layer()) != DT_OK ||
      dt_sequential_add(net, dt_linear(HIDDEN, OUT)) != DT_OK)
    die("dt_sequential_add");
  if (dt_module_to(net, gpu) != DT_OK) die("dt_module_to");
  X = dt_randn(dt_shape2(BATCH, IN), gpu);
  Y = dt_randn(dt_shape2(BATCH, OUT), gpu);
  if (!X || !Y) die("dt_randn");

  loss0 = loss_now(net, X, Y);
  for (i = 0; i < WARMUP; i++) step(net, X, Y);
  for (r = 0; r < REPS; r++) {
    double t0;
    if (dt_synchronize(gpu) != DT_OK) die("dt_synchronize");
    t0 = now();
    for (i = 0; i < STEPS; i++) step(net, X, Y);
    if (dt_synchronize(gpu) != DT_OK) die("dt_synchronize");
    t[r] = (now() - t0) / STEPS;
  }
  loss1 = loss_now(net, X, Y);
  if (!(loss1 < loss0)) {
    fprintf(stderr, "bench_train: the loss did not go down (%g -> %g)\n", loss0, loss1);
    return 1;
  }
  qsort(t, REPS, sizeof *t, cmp_double);
  printf("devtensor train_step_mlp_784_256_10_b256 seconds_per_step=%.9f best=%.9f steps=%d reps=%d warmup=%d stat=median "
         "loss_start=%.6f loss_end=%.6f\n",
         t[REPS / 2], t[0], STEPS, REPS, WARMUP, loss0, loss1);
  dt_release(X); dt_release(Y);
  dt_module_free(net);
  return 0;
}
