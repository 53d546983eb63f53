/* A program built against the installed package (tests/packaging.sh): the header
   from PREFIX/include without DEVTENSOR_IMPLEMENTATION, the code from libdevtensor.
   Prints the harness's lines. */
#include <devtensor.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;
static void check(const char *name, int ok) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", name);
  if (ok) passed++; else failed++;
}

int main(int argc, char **argv) {
  float host[4] = {1, 2, 3, 4};
  dt_tensor *x = dt_from_blob(host, dt_shape2(2, 2), DT_F32, dt_cpu(), NULL, NULL);
  dt_tensor *y = x ? dt_mul_scalar(x, 10) : NULL, *s = y ? dt_sum(y) : NULL;
  struct DLManagedTensorVersioned *m = y ? dt_to_dlpack(y) : NULL;
  const char *how = argc > 1 ? argv[1] : "consumer";
  char name[128];
  snprintf(name, sizeof name, "%s: DEVTENSOR_VERSION is %d", how, DEVTENSOR_VERSION);
  check(name, DEVTENSOR_VERSION == DEVTENSOR_VERSION_MAJOR * 10000 + DEVTENSOR_VERSION_MINOR * 100 + DEVTENSOR_VERSION_PATCH);
  snprintf(name, sizeof name, "%s: sum(10 * [1, 2, 3, 4]) = 100 through the library", how);
  check(name, s && dt_item(s) == 100.0);
  snprintf(name, sizeof name, "%s: dt_to_dlpack shares the data pointer", how);
  check(name, m && m->dl_tensor.data == dt_data_ptr(y) && m->dl_tensor.ndim == 2);
  if (m) m->deleter(m);
  dt_release(s); dt_release(y); dt_release(x);
  printf("%d passed, %d failed, 0 skipped\n", passed, failed);
  return failed != 0;
}
