/* Uses the library through the declarations alone, linked with two_units_a.c. */
#include "harness.h"

/* A user's unit sees the public API only: the backend contract is fenced off. */
#if defined(DEVTENSOR_BACKEND_H) || defined(DT__SLOT) || defined(DT__HD)
#error "the backend contract (dt__backend) leaked into a unit without DEVTENSOR_IMPLEMENTATION"
#endif
#ifndef DEVTENSOR_VERSION
#error "DEVTENSOR_VERSION is missing"
#endif

static void test_version(void) {
  T_CHECK(DEVTENSOR_VERSION == DEVTENSOR_VERSION_MAJOR * 10000 + DEVTENSOR_VERSION_MINOR * 100 + DEVTENSOR_VERSION_PATCH);
  T_CHECK(DEVTENSOR_VERSION >= 100); /* 0.1.0, the first numbered version */
}

static void test_two_units(void) {
  dt_tensor *x = dt_arange(0, 4, 1, DT_F32, dt_cpu()), *y = dt_mul(x, x), *s = dt_sum(y);
  char buf[64];
  T_CHECK(dt_item(s) == 14);
  T_CHECK(dt_snprint(buf, sizeof buf, s) > 0);
  dt_release(x); dt_release(y); dt_release(s);
}

int main(void) {
  T_RUN(test_two_units);
  T_RUN(test_version);
  return t_finish();
}
