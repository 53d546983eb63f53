/* Uses the library through the declarations alone, linked with two_units_a.c. */
#include "harness.h"

static void test_two_units(void) {
  dt_tensor *x = dt_arange(0, 4, 1, DT_F32, dt_cpu()), *y = dt_mul(x, x), *s = dt_sum(y);
  char buf[64];
  T_CHECK(dt_item(s) == 14);
  T_CHECK(dt_snprint(buf, sizeof buf, s) > 0);
  dt_release(x); dt_release(y); dt_release(s);
}

int main(void) {
  T_RUN(test_two_units);
  return t_finish();
}
