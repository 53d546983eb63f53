/* Printing real tensors on every device: the text PyTorch prints, with the
   device suffix on GPU tensors (the formatter itself: test_print_format.c). */
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

int main(void) {
  T_RUN_ALL_DEVICES(test_print_devices);
  T_RUN_ALL_DEVICES(test_print_big_and_files);
  return t_finish();
}
