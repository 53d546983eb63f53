/* Data-parallel training over ranks (PyTorch's DistributedDataParallel, by hand).

   Every rank holds the same model (rank 0's parameters, broadcast), takes its shard
   of every global minibatch, computes its gradients, and the gradients are summed
   over the ranks (each weighted by its share of the rows) before every rank takes
   the same SGD step. N ranks then train exactly as one process on the whole
   minibatch: the same losses and parameters up to float rounding.

     one process:  make build/ex/ddp && ./build/ex/ddp
     two ranks:    make build/dist/ex/ddp && mpirun -np 2 ./build/dist/ex/ddp
                   (CPU ranks: DT_DIST_DEVICE=cpu; GPU ranks need devtensor_cuda.cu
                   built with -DDEVTENSOR_NCCL, see README "More than one GPU")

   The data: y = X (2, -3.4)^T + 4.2 + noise, the chapter's synthetic regression. */
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
#include <stdlib.h>

#define N 1000      /* rows */
#define BATCH 100   /* the global minibatch */
#define EPOCHS 5

static int fail(const char *what) {
  fprintf(stderr, "rank %d: %s: %s\n", dt_dist_rank(), what, dt_last_error());
  dt_dist_finalize();
  return 1;
}

int main(void) {
  static float X[N * 2], Y[N];
  dt_tensor *xr, *nr, *a, *b;
  dt_module *net;
  dt_device dev;
  int rank, world, epoch, i;
  char d[32];
  if (dt_dist_init() != DT_OK) return fail("dt_dist_init");
  rank = dt_dist_rank(); world = dt_dist_world_size(); dev = dt_dist_device();
  printf("rank %d of %d on %s\n", rank, world, dt_device_str(dev, d, sizeof d));

  /* the same data on every rank (same seed); a real program would read its shard */
  dt_manual_seed(0);
  xr = dt_randn(dt_shape2(N, 2), dt_cpu());
  nr = dt_randn(dt_shape1(N), dt_cpu());
  if (!xr || !nr || dt_to_host(xr, X, sizeof X) != DT_OK || dt_to_host(nr, Y, sizeof Y) != DT_OK) return fail("data");
  for (i = 0; i < N; i++) Y[i] = 2.0f * X[2 * i] - 3.4f * X[2 * i + 1] + 4.2f + 0.01f * Y[i];
  dt_release(xr); dt_release(nr);

  /* a model per rank, then rank 0's parameters everywhere */
  dt_manual_seed(1000 + (uint64_t)rank);
  net = dt_sequential();
  if (dt_sequential_add(net, dt_linear(2, 1)) != DT_OK || dt_module_to(net, dev) != DT_OK) return fail("model");
  dt_set_grad_enabled(0); /* parameters require grad: changed in place with grad off, as under torch.no_grad() */
  for (i = 0; i < dt_module_num_params(net); i++)
    if (dt_broadcast_(dt_module_param(net, i, NULL), 0) != DT_OK) return fail("dt_broadcast_");
  dt_set_grad_enabled(1);

  for (epoch = 0; epoch < EPOCHS; epoch++) {
    dt_tensor *total = dt_zeros(dt_shape0(), dev);
    int start;
    if (!total) return fail("dt_zeros");
    for (start = 0; start < N; start += BATCH) {
      /* this rank's shard of the minibatch: rows [lo, hi) */
      int lo = start + BATCH * rank / world, hi = start + BATCH * (rank + 1) / world;
      dt_tensor *xc = dt_from_data(X + 2 * lo, dt_shape2(hi - lo, 2), DT_F32, dt_cpu());
      dt_tensor *yc = dt_from_data(Y + lo, dt_shape2(hi - lo, 1), DT_F32, dt_cpu());
      dt_tensor *x = xc ? dt_to(xc, dev) : NULL, *y = yc ? dt_to(yc, dev) : NULL;
      dt_tensor *pred = x ? dt_forward(net, x) : NULL;
      dt_tensor *loss = pred && y ? dt_mse_loss(pred, y) : NULL;
      dt_tensor *g = pred && y ? dt_mse_loss_grad(pred, y) : NULL;
      /* the gradient of the mean over the whole minibatch: this shard's share */
      dt_tensor *gs = g ? dt_mul_scalar(g, (double)(hi - lo) / BATCH) : NULL;
      dt_status s = gs && loss ? dt_axpy_(total, hi - lo, loss) : DT_ERR_BACKEND;
      if (s == DT_OK) s = dt_zero_grad(net);
      if (s == DT_OK) s = dt_backward_params(net, gs);
      for (i = 0; s == DT_OK && i < dt_module_num_params(net); i++)
        s = dt_all_reduce_(dt_module_grad(net, i), DT_REDUCE_SUM); /* the ranks' shares add up to the mean */
      if (s == DT_OK) s = dt_sgd_step(net, 0.1);
      dt_release(xc); dt_release(yc); dt_release(x); dt_release(y);
      dt_release(pred); dt_release(loss); dt_release(g); dt_release(gs);
      if (s != DT_OK) return fail("training step");
    }
    if (dt_all_reduce_(total, DT_REDUCE_SUM) != DT_OK) return fail("dt_all_reduce_ of the loss");
    if (rank == 0) printf("epoch %d, loss %.6f\n", epoch + 1, dt_item(total) / N);
    dt_release(total);
  }
  a = dt_linear_weight(dt_sequential_get(net, 0));
  b = dt_linear_bias(dt_sequential_get(net, 0));
  if (rank == 0) {
    float w[2], bias[1];
    if (dt_to_host(a, w, sizeof w) != DT_OK || dt_to_host(b, bias, sizeof bias) != DT_OK) return fail("dt_to_host");
    printf("w = (%.3f, %.3f) (true: 2, -3.4), b = %.3f (true: 4.2)\n", w[0], w[1], bias[0]);
  }
  dt_module_free(net);
  return dt_dist_finalize() == DT_OK ? 0 : fail("dt_dist_finalize");
}
