/* DEVTENSOR_STATIC: the whole library static in one unit; the functions this
   unit does not call must not warn (-Wall -Wextra -Werror). */
#define DEVTENSOR_STATIC
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"

static void test_static_unit(void) {
  dt_tensor *a = dt_ones(dt_shape1(3), dt_cpu()), *s = dt_sum(a);
  T_CHECK(dt_item(s) == 3);
  dt_release(a); dt_release(s);
}

int main(void) {
  T_RUN(test_static_unit);
  return t_finish();
}
