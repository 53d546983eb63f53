/* The "GPUs" chapter of Dive into Deep Learning, in C with devtensor.
   Each step prints the chapter's PyTorch line, then what devtensor does, in
   PyTorch's formats; a line in parentheses says where this machine differs
   from the chapter's (no GPU, or one). Runs on a GPU when there is one and
   on the CPU otherwise, as the chapter's try_gpu() does.

     make run                       (CPU build, or CUDA when nvcc is found)
     nvcc -I. -DDEVTENSOR_CUDA examples/gpus.c devtensor_cuda.cu -lcublas -o gpus */
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"

#include <stdio.h>
#include <string.h>

/* A device as PyTorch prints it: device(type='cuda', index=0). */
static const char *repr(dt_device d, char *buf, size_t n) {
  if (d.type == DT_CPU) snprintf(buf, n, "device(type='cpu')");
  else snprintf(buf, n, "device(type='cuda', index=%d)", d.index);
  return buf;
}

/* A tuple of devices, the last n_list of them in a list, as IPython prints it:
   on one line when it fits in 79 columns, else one item per line (and the list
   too, one device per line, when it does not fit on its own). */
static void print_tuple(const dt_device *d, int n_items, int n_list) {
  char line[2048], list[1024], r[64];
  int i, n_plain = n_items - (n_list >= 0 ? 1 : 0);
  list[0] = '\0';
  for (i = 0; n_list >= 0 && i < n_list; i++) {
    strcat(list, i ? ", " : "");
    strcat(list, repr(d[n_plain + i], r, sizeof r));
  }
  strcpy(line, "(");
  for (i = 0; i < n_plain; i++) {
    strcat(line, i ? ", " : "");
    strcat(line, repr(d[i], r, sizeof r));
  }
  if (n_list >= 0) snprintf(line + strlen(line), sizeof line - strlen(line), "%s[%s]", n_plain ? ", " : "", list);
  strcat(line, ")");
  if (strlen(line) <= 79) { printf("%s\n", line); return; }
  for (i = 0; i < n_plain; i++)
    printf("%s%s%s", i ? " " : "(", repr(d[i], r, sizeof r), n_list < 0 && i + 1 == n_plain ? ")\n" : ",\n");
  if (n_list < 0) return;
  if (1 + 1 + strlen(list) + 2 <= 79) { printf(" [%s])\n", list); return; }
  for (i = 0; i < n_list; i++)
    printf("%s%s%s", i ? "  " : " [", repr(d[n_plain + i], r, sizeof r), i + 1 < n_list ? ",\n" : "])\n");
}

static void step(const char *python) { printf("\n>>> %s\n", python); }

/* Stops the walk-through with the library's reason on an unexpected failure. */
static int check(const void *p) {
  if (p) return 1;
  fprintf(stderr, "gpus: unexpected failure: %s\n", dt_last_error());
  return 0;
}

int main(void) {
  char a[64];
  dt_device devs[3 + 16];
  int n, ngpu;
  dt_tensor *x, *X, *Y, *Z, *S, *W;

  printf("== Computing devices\n");
  step("cpu(), gpu(), gpu(1)");
  devs[0] = dt_cpu(); devs[1] = dt_gpu(0); devs[2] = dt_gpu(1);
  print_tuple(devs, 3, -1);

  step("num_gpus()");
  ngpu = dt_num_gpus();
  printf("%d\n", ngpu);
  if (ngpu == 0) printf("(why: %s)\n", dt_last_error());
  dt_clear_error();

  step("try_gpu(), try_gpu(10), try_all_gpus()");
  devs[0] = dt_try_gpu(0); devs[1] = dt_try_gpu(10);
  n = dt_try_all_gpus(devs + 2, 16);
  if (n > 16) n = 16;
  print_tuple(devs, 3, n);

  printf("\n== Tensors and GPUs\n");
  step("x = torch.tensor([1, 2, 3]); x.device");
  {
    int64_t v[3] = {1, 2, 3};
    x = dt_from_data(v, dt_shape1(3), DT_I64, dt_cpu());
    if (!check(x)) return 1;
    printf("%s\n", repr(dt_device_of(x), a, sizeof a));
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
  if (ngpu < 2)
    printf("(%d GPU%s, so try_gpu(1) fell back to the cpu: Y here and Z = X.cuda(1) below are on the cpu)\n", ngpu,
           ngpu == 1 ? "" : "s");

  printf("\n== Copying\n");
  step("X + Y   # on two devices: an exception");
  S = dt_add(X, Y);
  if (S) {
    /* no GPU: both on the CPU. The words below are dt_add's (tests/emu/examples.sh checks them on one GPU). */
    printf("(X and Y are both on %s, so they add:)\n", dt_device_str(dt_device_of(X), a, sizeof a));
    dt_print(S);
    dt_release(S);
    printf("(with one GPU, X is on cuda:0 and Y on the cpu, and dt_add refuses them:\n"
           " \"dt_add: expected all tensors on the same device, but b is on cpu and a is on cuda:0 (move one with dt_to)\")\n");
  } else {
    printf("refused: %s\n", dt_last_error());
  }

  /* .cuda(1) is .to(cuda:1): the same tensor when it is already there */
  step("Z = X.cuda(1); print(X); print(Z)");
  Z = dt_to(X, dt_try_gpu(1));
  if (!check(Z)) return 1;
  dt_print(X);
  dt_print(Z);

  step("Y + Z");
  S = dt_add(Y, Z);
  if (!check(S)) return 1;
  dt_print(S);
  dt_release(S);

  step("Z.cuda(1) is Z");
  W = dt_to(Z, dt_try_gpu(1));
  printf("%s\n", W == Z ? "True" : "False");
  dt_release(W);

  step("Z.copyto(try_gpu(1)) is Z   # MXNet's copyto always copies");
  W = dt_copyto(Z, dt_try_gpu(1));
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

  printf("\n== Training on the GPU\n");
  step("model = LinearRegression(lr=0.03); data = SyntheticRegressionData(w=torch.tensor([2, -3.4]), b=4.2, batch_size=10)");
  {
    float w_true[2] = {2.0f, -3.4f};
    dt_tensor *wt = dt_from_data(w_true, dt_shape2(2, 1), DT_F32, dt_cpu());
    dt_tensor *feats = dt_randn(dt_shape2(1000, 2), dt_cpu()), *xw = dt_matmul(feats, wt);
    dt_tensor *noise = dt_randn(dt_shape2(1000, 1), dt_cpu()), *small = dt_mul_scalar(noise, 0.01);
    dt_tensor *shifted = dt_add_scalar(xw, 4.2), *labels = dt_add(shifted, small);
    dt_tensor *w, *b, *w1, *wt1, *ew, *nb, *eb;
    dt_module *net = dt_sequential();
    dt_trainer tr;
    if (!check(labels) || dt_sequential_add(net, dt_linear(2, 1)) != DT_OK || dt_trainer_init(&tr, 3, 1) != DT_OK) {
      fprintf(stderr, "gpus: %s\n", dt_last_error());
      return 1;
    }
    tr.batch_size = 10;
    tr.lr = 0.03;
    step("trainer = d2l.Trainer(max_epochs=3, num_gpus=1); trainer.fit(model, data)");
    if (dt_trainer_fit(&tr, net, feats, labels) != DT_OK) { fprintf(stderr, "gpus: %s\n", dt_last_error()); return 1; }

    step("model.net.weight.data.device");
    printf("%s\n", repr(dt_device_of(dt_module_param(net, 0, NULL)), a, sizeof a));

    /* the errors on the CPU, where data.w and data.b are */
    step("w, b = model.get_w_b(); w, b = w.cpu(), b.cpu()   # to where data.w is");
    w = dt_to(dt_module_param(net, 0, NULL), dt_cpu());
    b = dt_to(dt_module_param(net, 1, NULL), dt_cpu());
    w1 = w ? dt_reshape(w, dt_shape1(2)) : NULL;
    wt1 = dt_reshape(wt, dt_shape1(2));
    ew = w1 && wt1 ? dt_sub(wt1, w1) : NULL;
    nb = b ? dt_neg(b) : NULL;
    eb = nb ? dt_add_scalar(nb, 4.2) : NULL;
    if (!check(ew) || !check(eb)) return 1;
    step("print(f'error in estimating w: {data.w - w.reshape(data.w.shape)}')");
    printf("error in estimating w: ");
    dt_print(ew);
    step("print(f'error in estimating b: {data.b - b}')");
    printf("error in estimating b: ");
    dt_print(eb);
    dt_release(w); dt_release(b); dt_release(w1); dt_release(wt1); dt_release(ew); dt_release(nb); dt_release(eb);
    dt_trainer_free(&tr);
    dt_module_free(net);
    dt_release(wt); dt_release(feats); dt_release(xw); dt_release(noise); dt_release(small);
    dt_release(shifted); dt_release(labels);
  }

  dt_release(x); dt_release(X); dt_release(Y); dt_release(Z);
  return 0;
}
