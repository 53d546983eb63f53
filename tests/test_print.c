/* Printing real tensors on every device: the text PyTorch prints, with the
   device suffix on GPU tensors (the formatter itself: test_print_format.c);
   printing modules: print(net)'s text. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

/* The expected text for `dev`: `cpu_text` with PyTorch's suffix rule applied
   for short tensors (the device suffix goes first, before any dtype). */
static void expect(dt_device dev, const char *cpu_text, char *out, size_t n) {
  const char *dtype = strstr(cpu_text, ", dtype=");
  size_t body = dtype ? (size_t)(dtype - cpu_text) : strlen(cpu_text) - 1;
  if (dev.type == DT_CPU) { snprintf(out, n, "%s", cpu_text); return; }
  snprintf(out, n, "%.*s, device='cuda:%d'%s", (int)body, cpu_text, dev.index, dtype ? dtype : ")");
}

static void check_print(dt_device dev, const dt_tensor *t, const char *cpu_text) {
  char want[512], got[512];
  int len;
  expect(dev, cpu_text, want, sizeof want);
  len = dt_snprint(got, sizeof got, t);
  T_STREQ(got, want);
  T_CHECK(len == (int)strlen(want));
}

static void test_print_devices(dt_device dev) {
  float f[6] = {1, 2, 3, 4, 5, 6};
  double d[2] = {1.0 / 3.0, 2};
  int32_t i32[3] = {-1, 0, 7};
  int64_t i64[2] = {5, -6};
  dt_tensor *t;
  t = dt_ones(dt_shape2(2, 3), dev);
  check_print(dev, t, "tensor([[1., 1., 1.],\n        [1., 1., 1.]])");
  dt_release(t);
  t = dt_from_data(f, dt_shape2(3, 2), DT_F32, dev);
  check_print(dev, t, "tensor([[1., 2.],\n        [3., 4.],\n        [5., 6.]])");
  dt_release(t);
  t = dt_from_data(d, dt_shape1(2), DT_F64, dev);
  check_print(dev, t, "tensor([0.3333, 2.0000], dtype=torch.float64)");
  dt_release(t);
  t = dt_from_data(i32, dt_shape1(3), DT_I32, dev);
  check_print(dev, t, "tensor([-1,  0,  7], dtype=torch.int32)");
  dt_release(t);
  t = dt_from_data(i64, dt_shape1(2), DT_I64, dev);
  check_print(dev, t, "tensor([ 5, -6])");
  dt_release(t);
  t = dt_full(dt_shape0(), 3.5, dev);
  check_print(dev, t, "tensor(3.5000)");
  dt_release(t);
  /* the chapter's X = torch.ones(2, 3, device=try_gpu()) on cuda:0, literally */
  if (dev.type == DT_CUDA && dev.index == 0) {
    char got[128];
    t = dt_ones(dt_shape2(2, 3), dev);
    dt_snprint(got, sizeof got, t);
    T_STREQ(got, "tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='cuda:0')");
    dt_release(t);
  }
}

static void test_print_big_and_files(dt_device dev) {
  dt_tensor *t = dt_arange(0, 5000, 1, DT_F32, dev);
  char small[16];
  FILE *f = tmpfile();
  int len = dt_snprint(NULL, 0, t);
  char *buf = (char *)malloc((size_t)len + 1);
  T_CHECK(len > 0 && dt_snprint(buf, (size_t)len + 1, t) == len);
  /* print(torch.arange(0, 5000.)), with the device suffix on a GPU */
  {
    char want[256];
    expect(dev, "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.9970e+03, 4.9980e+03,\n        4.9990e+03])",
           want, sizeof want);
    T_STREQ(buf, want);
  }
  /* truncation keeps snprintf's contract */
  T_CHECK(dt_snprint(small, sizeof small, t) == len && strlen(small) == sizeof small - 1);
  T_CHECK(f != NULL);
  if (f) {
    char back[1024];
    size_t r;
    T_CHECK(dt_fprint(f, t) == DT_OK);
    rewind(f);
    r = fread(back, 1, sizeof back - 1, f);
    back[r] = 0;
    T_CHECK(r == (size_t)len + 1 && back[len] == '\n' && strncmp(back, buf, (size_t)len) == 0);
    fclose(f);
  }
  T_CHECK(dt_fprint(NULL, t) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_snprint(small, sizeof small, NULL) == -1 && small[0] == 0 && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_snprint(NULL, 5, t) == -1 && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_print(NULL) == DT_ERR_INVALID_ARGUMENT);
  free(buf);
  dt_release(t);
}

/* print(net) for D2L 8.5's LeNet with batch norm (lazy layers) and for a GoogLeNet Inception block
   written with dt_module_new: PyTorch 1.13's text, printed by
     net = bench/modern_cnn_torch.py's bnlenet(); print(net)
     net.eval(); net(torch.zeros(2, 1, 28, 28)); print(net)
     g = nn.Sequential(Inception(64, (96, 128), (16, 32), 32), nn.Dropout(0.25)); g.eval(); g(torch.zeros(1, 3, 8, 8)); print(g)
   Before the first forward the lazy batch norms read "LazyBatchNorm(0" where PyTorch has
   LazyBatchNorm2d or LazyBatchNorm1d: dt_batch_norm is both until an input says which. */
static const char *const BN_LENET_LAZY =
  "Sequential(\n"
  "  (0): LazyConv2d(0, 6, kernel_size=(5, 5), stride=(1, 1))\n"
  "  (1): LazyBatchNorm(0, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
  "  (2): Sigmoid()\n"
  "  (3): AvgPool2d(kernel_size=2, stride=2, padding=0)\n"
  "  (4): LazyConv2d(0, 16, kernel_size=(5, 5), stride=(1, 1))\n"
  "  (5): LazyBatchNorm(0, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
  "  (6): Sigmoid()\n"
  "  (7): AvgPool2d(kernel_size=2, stride=2, padding=0)\n"
  "  (8): Flatten(start_dim=1, end_dim=-1)\n"
  "  (9): LazyLinear(in_features=0, out_features=120, bias=True)\n"
  "  (10): LazyBatchNorm(0, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
  "  (11): Sigmoid()\n"
  "  (12): LazyLinear(in_features=0, out_features=84, bias=True)\n"
  "  (13): LazyBatchNorm(0, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
  "  (14): Sigmoid()\n"
  "  (15): LazyLinear(in_features=0, out_features=10, bias=True)\n"
  ")";
static const char *const BN_LENET =
  "Sequential(\n"
  "  (0): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))\n"
  "  (1): BatchNorm2d(6, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
  "  (2): Sigmoid()\n"
  "  (3): AvgPool2d(kernel_size=2, stride=2, padding=0)\n"
  "  (4): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))\n"
  "  (5): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
  "  (6): Sigmoid()\n"
  "  (7): AvgPool2d(kernel_size=2, stride=2, padding=0)\n"
  "  (8): Flatten(start_dim=1, end_dim=-1)\n"
  "  (9): Linear(in_features=256, out_features=120, bias=True)\n"
  "  (10): BatchNorm1d(120, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
  "  (11): Sigmoid()\n"
  "  (12): Linear(in_features=120, out_features=84, bias=True)\n"
  "  (13): BatchNorm1d(84, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
  "  (14): Sigmoid()\n"
  "  (15): Linear(in_features=84, out_features=10, bias=True)\n"
  ")";
static const char *const INCEPTION =
  "Sequential(\n"
  "  (0): Inception(\n"
  "    (b1_1): Conv2d(3, 64, kernel_size=(1, 1), stride=(1, 1))\n"
  "    (b2_1): Conv2d(3, 96, kernel_size=(1, 1), stride=(1, 1))\n"
  "    (b2_2): Conv2d(96, 128, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
  "    (b3_1): Conv2d(3, 16, kernel_size=(1, 1), stride=(1, 1))\n"
  "    (b3_2): Conv2d(16, 32, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))\n"
  "    (b4_1): MaxPool2d(kernel_size=3, stride=1, padding=1, dilation=1, ceil_mode=False)\n"
  "    (b4_2): Conv2d(3, 32, kernel_size=(1, 1), stride=(1, 1))\n"
  "  )\n"
  "  (1): Dropout(p=0.25, inplace=False)\n"
  ")";

static dt_tensor *first_child(dt_module *self, const dt_tensor *x, void *user) {
  (void)user;
  return dt_forward(dt_module_get_child(self, "b1_1"), x);
}

/* m's text against want; also through a buffer too small (snprintf's contract: the length it
   needs, what fits, terminated) */
static void check_module_text(dt_module *m, const char *want) {
  char buf[2048], small[16];
  int len = dt_module_snprint(buf, sizeof buf, m);
  T_CHECK_MSG(len == (int)strlen(want) && strcmp(buf, want) == 0, "got (%d characters):\n%s\nwant:\n%s", len, buf, want);
  T_CHECK(dt_module_snprint(small, sizeof small, m) == len && strlen(small) == sizeof small - 1 &&
          strncmp(small, want, sizeof small - 1) == 0);
  T_CHECK(dt_module_snprint(NULL, 0, m) == len);
}

static void test_print_modules(dt_device dev) {
  static const char *const names[7] = {"b1_1", "b2_1", "b2_2", "b3_1", "b3_2", "b4_1", "b4_2"};
  dt_module *net = dt_sequential(), *g = dt_sequential(), *inc = dt_module_new("Inception", first_child, NULL, NULL), *kids[7];
  dt_tensor *x, *y;
  int ok = net && g && inc, i;
  int64_t c[7] = {64, 96, 128, 16, 32, 0, 32}, in[7] = {3, 3, 96, 3, 16, 0, 3};
  int k[7] = {1, 1, 3, 1, 5, 3, 1};
#define ADD(l) (ok = ok && dt_sequential_add(net, (l)) == DT_OK)
  ADD(dt_conv2d(0, 6, 5, 1, 0)); ADD(dt_batch_norm(0)); ADD(dt_sigmoid_layer()); ADD(dt_avg_pool2d(2, 2, 0));
  ADD(dt_conv2d(0, 16, 5, 1, 0)); ADD(dt_batch_norm(0)); ADD(dt_sigmoid_layer()); ADD(dt_avg_pool2d(2, 2, 0));
  ADD(dt_flatten_layer());
  ADD(dt_linear(0, 120)); ADD(dt_batch_norm(0)); ADD(dt_sigmoid_layer());
  ADD(dt_linear(0, 84)); ADD(dt_batch_norm(0)); ADD(dt_sigmoid_layer());
  ADD(dt_linear(0, 10));
#undef ADD
  T_CHECK(ok);
  check_module_text(net, BN_LENET_LAZY);
  x = dt_zeros(dt_shape4(2, 1, 28, 28), dev);
  T_CHECK(x && dt_module_to(net, dev) == DT_OK && dt_module_train(net, 0) == DT_OK);
  y = x ? dt_forward(net, x) : NULL;
  T_CHECK_MSG(y != NULL, "%s", dt_last_error());
  check_module_text(net, BN_LENET);
  dt_release(x); dt_release(y);
  /* a user-written module holding layers (PyTorch's Inception block, made with its in_channels) */
  for (i = 0; i < 7; i++) kids[i] = i == 5 ? dt_max_pool2d(3, 1, 1) : dt_conv2d(in[i], c[i], k[i], 1, k[i] / 2);
  for (i = 0; i < 7; i++) ok = ok && dt_module_add_child(inc, names[i], kids[i]) == DT_OK;
  T_CHECK(ok && dt_sequential_add(g, inc) == DT_OK && dt_sequential_add(g, dt_dropout(0.25)) == DT_OK);
  check_module_text(g, INCEPTION);
  dt_module_free(net); dt_module_free(g);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_print_devices);
  T_RUN_ALL_DEVICES(test_print_big_and_files);
  T_RUN_ALL_DEVICES(test_print_modules);
  return t_finish();
}
