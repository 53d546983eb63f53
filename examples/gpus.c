/* The "GPUs" chapter of Dive into Deep Learning, in C with devtensor.
   Each step prints the chapter's PyTorch line, then what devtensor does.
   Runs on a GPU when there is one and on the CPU otherwise, as the
   chapter's try_gpu() does.

     make run                       (CPU build, or CUDA when nvcc is found)
     nvcc -I. -DDEVTENSOR_CUDA examples/gpus.c devtensor_cuda.cu -lcublas -o gpus */
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"

#include <stdio.h>

/* A device as PyTorch prints it: device(type='cuda', index=0). */
static const char *repr(dt_device d, char *buf, size_t n) {
  if (d.type == DT_CPU) snprintf(buf, n, "device(type='cpu')");
  else snprintf(buf, n, "device(type='cuda', index=%d)", d.index);
  return buf;
}

static void step(const char *python) { printf("\n>>> %s\n", python); }

/* Stops the walk-through with the library's reason on an unexpected failure. */
static int check(const void *p) {
  if (p) return 1;
  fprintf(stderr, "gpus: unexpected failure: %s\n", dt_last_error());
  return 0;
}

int main(void) {
  char a[64], b[64], c[64];
  dt_device all[16];
  int i, n, ngpu;
  dt_tensor *x, *X, *Y, *Z, *S, *W;

  printf("== Computing devices\n");
  step("cpu(), gpu(), gpu(1)");
  printf("(%s, %s, %s)\n", repr(dt_cpu(), a, sizeof a), repr(dt_gpu(0), b, sizeof b), repr(dt_gpu(1), c, sizeof c));

  step("num_gpus()");
  ngpu = dt_num_gpus();
  printf("%d\n", ngpu);
  if (ngpu == 0) printf("(why: %s)\n", dt_last_error());
  dt_clear_error();

  step("try_gpu(), try_gpu(10), try_all_gpus()");
  n = dt_try_all_gpus(all, 16);
  printf("(%s,\n %s,\n [", repr(dt_try_gpu(0), a, sizeof a), repr(dt_try_gpu(10), b, sizeof b));
  for (i = 0; i < n && i < 16; i++) printf("%s%s", i ? ", " : "", repr(all[i], c, sizeof c));
  printf("])\n");

  printf("\n== Tensors and GPUs\n");
  step("x = torch.tensor([1, 2, 3]); x.device");
  {
    int64_t v[3] = {1, 2, 3};
    x = dt_from_data(v, dt_shape1(3), DT_I64, dt_cpu());
    if (!check(x)) return 1;
    printf("%s\n", repr(dt_device_of(x), a, sizeof a));
    dt_print(x);
  }

  printf("\n== Storage on the GPU\n");
  step("X = torch.ones(2, 3, device=try_gpu()); X");
  X = dt_ones(dt_shape2(2, 3), dt_try_gpu(0));
  if (!check(X)) return 1;
  dt_print(X);

  step("Y = torch.rand(2, 3, device=try_gpu(1)); Y");
  dt_manual_seed(0);
  Y = dt_rand(dt_shape2(2, 3), dt_try_gpu(1));
  if (!check(Y)) return 1;
  dt_print(Y);

  printf("\n== Copying\n");
  step("X + Y   # X and Y on different devices?");
  S = dt_add(X, Y);
  if (S) {
    printf("(X and Y are both on %s, so they add:)\n", dt_device_str(dt_device_of(X), a, sizeof a));
    dt_print(S);
    dt_release(S);
  } else {
    printf("refused: %s\n", dt_last_error());
  }
  /* the refusal, shown with a tensor on another device when there is one */
  W = dt_device_of(X).type == DT_CPU ? NULL : dt_ones(dt_shape2(2, 3), dt_cpu());
  if (W) {
    step("X + torch.ones(2, 3)   # a GPU tensor plus a CPU tensor");
    S = dt_add(X, W);
    printf("%s\n", S ? "(unexpectedly added)" : dt_last_error());
    dt_release(S);
    dt_release(W);
  } else {
    printf("(with no GPU every tensor is on the CPU; on a GPU machine, adding a cuda:0 tensor to a cpu tensor\n"
           " is refused with: dt_add: expected all tensors on the same device, but b is on cpu and a is on cuda:0)\n");
  }

  step("Z = X.cuda(1); print(X); print(Z)");
  Z = dt_copyto(X, dt_device_of(Y));
  if (!check(Z)) return 1;
  dt_print(X);
  dt_print(Z);

  step("Y + Z");
  S = dt_add(Y, Z);
  if (!check(S)) return 1;
  dt_print(S);
  dt_release(S);

  step("Z.cuda(1) is Z");
  W = dt_to(Z, dt_device_of(Z));
  printf("%s\n", W == Z ? "True" : "False");
  dt_release(W);

  step("Z.copyto(Z.device) is Z   # MXNet's copyto always copies");
  W = dt_copyto(Z, dt_device_of(Z));
  printf("%s\n", W == Z ? "True" : "False");
  dt_release(W);

  printf("\n== Neural networks and GPUs\n");
  step("net = nn.Sequential(nn.LazyLinear(1)); net = net.to(device=try_gpu()); net(X)");
  {
    dt_module *net = dt_sequential();
    dt_tensor *out;
    if (dt_sequential_add(net, dt_linear(0, 1)) != DT_OK || dt_module_to(net, dt_try_gpu(0)) != DT_OK) {
      fprintf(stderr, "gpus: %s\n", dt_last_error());
      return 1;
    }
    out = dt_forward(net, X);
    if (!check(out)) return 1;
    dt_print(out);
    dt_release(out);

    step("net[0].weight.data.device");
    printf("%s\n", repr(dt_device_of(dt_linear_weight(dt_sequential_get(net, 0))), a, sizeof a));
    dt_module_free(net);
  }

  printf("\n== Training on the GPU: Trainer(max_epochs=3, num_gpus=1)\n");
  step("model = LinearRegression(lr=0.03); data = SyntheticRegressionData(w=[2, -3.4], b=4.2)");
  {
    float w_true[2] = {2.0f, -3.4f};
    dt_tensor *wt = dt_from_data(w_true, dt_shape2(2, 1), DT_F32, dt_cpu());
    dt_tensor *feats = dt_randn(dt_shape2(1000, 2), dt_cpu()), *xw = dt_matmul(feats, wt);
    dt_tensor *noise = dt_randn(dt_shape2(1000, 1), dt_cpu()), *small = dt_mul_scalar(noise, 0.01);
    dt_tensor *shifted = dt_add_scalar(xw, 4.2), *labels = dt_add(shifted, small);
    dt_module *net = dt_sequential();
    dt_trainer tr;
    float w[2], bias[1];
    dt_sequential_add(net, dt_linear(2, 1));
    dt_trainer_init(&tr, 3, 1);
    tr.batch_size = 10;
    tr.lr = 0.03;
    step("trainer.fit(model, data)");
    if (dt_trainer_fit(&tr, net, feats, labels) != DT_OK) { fprintf(stderr, "gpus: %s\n", dt_last_error()); return 1; }
    dt_to_host(dt_module_param(net, 0, NULL), w, sizeof w);
    dt_to_host(dt_module_param(net, 1, NULL), bias, sizeof bias);
    printf("error in estimating w: [%.4f, %.4f]\n", 2.0 - w[0], -3.4 - w[1]);
    printf("error in estimating b: [%.4f]\n", 4.2 - bias[0]);
    printf("(the parameters are on %s)\n", dt_device_str(dt_device_of(dt_module_param(net, 0, NULL)), a, sizeof a));
    dt_trainer_free(&tr);
    dt_module_free(net);
    dt_release(wt); dt_release(feats); dt_release(xw); dt_release(noise); dt_release(small);
    dt_release(shifted); dt_release(labels);
  }

  dt_release(x); dt_release(X); dt_release(Y); dt_release(Z);
  return 0;
}
