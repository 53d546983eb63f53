/* tests/oom_exhaust.c — out of host memory in the -fopenmp build: errors, never an exit.

   Run by tests/oom_exhaust.sh under `ulimit -v` (it can also run alone: the limit is then the
   machine's). Small and big tensors are made first; then 1 MiB and 4 KiB tensors are allocated
   until dt_empty fails, which must be DT_ERR_OUT_OF_MEMORY with a message, not an exit. With
   no memory left, the CPU's elementwise work must still run and give the right values: a
   16-element fill (a plain call: no thread, no libgomp region), then a 2^20-element fill, add,
   axpy and exp into tensors made before (the pool's first big job: starting its workers fails
   or succeeds, the work runs either way), and out-of-place ops must fail with
   DT_ERR_OUT_OF_MEMORY. Then a few MiB are released (room for an output and the gemm's packing
   buffers, none for a thread stack) and matmuls big enough to be shared among threads
   (512x512x512, and 1x1024x1024 for the skinny kernel) must answer with the right values or
   DT_ERR_OUT_OF_MEMORY. libgomp exits the process (`Out of memory allocating ... bytes`) when
   it cannot make a team, so an OpenMP region entered here would end the program before its
   summary line. Then everything is released and allocation works again.

     cc -std=c99 -O1 -g -fopenmp -I. tests/oom_exhaust.c -lm
     (ulimit -v 300000; ./a.out) */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

#define MAXT 200000
static dt_tensor *hog[MAXT];
static int nhog;

static int t_all(dt_tensor *t, double v) { /* every element == v */
  const float *p = (const float *)dt_data_ptr(t);
  int64_t i, n = dt_numel(t);
  for (i = 0; i < n; i++)
    if (p[i] != (float)v) return 0;
  return 1;
}

/* y = a @ b with a, b filled with va, vb (exact in F32): every element va * vb * k, or OOM. */
static void check_matmul(const dt_tensor *a, const dt_tensor *b, double v, const char *what) {
  dt_tensor *y = dt_matmul(a, b);
  if (y) {
    T_CHECK_MSG(t_all(y, v), "%s: wrong values", what);
    dt_release(y);
  } else
    T_CHECK_MSG(dt_last_status() == DT_ERR_OUT_OF_MEMORY, "%s: %s", what, dt_last_error());
}

static void test_exhaust(void) {
  const int64_t big = (int64_t)1 << 20;
  dt_tensor *ma = dt_empty(dt_shape2(512, 512), DT_F32, dt_cpu()), *mb = dt_empty(dt_shape2(512, 512), DT_F32, dt_cpu());
  dt_tensor *va = dt_empty(dt_shape2(1, 1024), DT_F32, dt_cpu()), *vb = dt_empty(dt_shape2(1024, 1024), DT_F32, dt_cpu());
  dt_tensor *s16 = dt_zeros(dt_shape1(16), dt_cpu());
  dt_tensor *a = dt_zeros(dt_shape1(big), dt_cpu()), *b = dt_zeros(dt_shape1(big), dt_cpu());
  dt_tensor *y;
  int64_t per[2] = {(int64_t)1 << 18, 1024}; /* floats: 1 MiB, then 4 KiB */
  int k, fails = 0;
  dt_status st = DT_OK;
  if (!s16 || !a || !b || !ma || !mb || !va || !vb) T_SKIP("no memory for the test's own tensors");
  for (k = 0; k < 2; k++)
    for (;;) {
      dt_tensor *t;
      if (nhog == MAXT) break;
      t = dt_empty(dt_shape1(per[k]), DT_F32, dt_cpu());
      if (!t) { st = dt_last_status(); fails++; break; }
      hog[nhog++] = t;
    }
  if (nhog == MAXT) { T_SKIP("memory did not run out (run under ulimit -v: tests/oom_exhaust.sh)"); }
  printf("  %d tensors held when memory ran out\n", nhog);
  T_CHECK(fails == 2 && st == DT_ERR_OUT_OF_MEMORY);
  T_CHECK_MSG(strstr(dt_last_error(), "out of memory") != NULL, "%s", dt_last_error());

  /* no memory: in-place work on tensors made before */
  T_CHECK(dt_fill_(s16, 2.0) == DT_OK && t_all(s16, 2.0));
  T_CHECK(dt_fill_(a, 1.5) == DT_OK && t_all(a, 1.5));
  T_CHECK(dt_fill_(b, -0.5) == DT_OK && t_all(b, -0.5));
  T_CHECK(dt_axpy_(b, 2.0, a) == DT_OK && t_all(b, 2.5));
  T_CHECK(dt_copy_(a, b) == DT_OK && t_all(a, 2.5));
  /* out of place: the output cannot be made */
  y = dt_add(a, b);
  if (y) { T_CHECK(t_all(y, 5.0)); dt_release(y); }
  else T_CHECK_MSG(dt_last_status() == DT_ERR_OUT_OF_MEMORY, "dt_add: %s", dt_last_error());
  y = dt_exp(s16);
  if (y) { T_CHECK(t_all(y, (float)exp(2.0))); dt_release(y); }
  else T_CHECK_MSG(dt_last_status() == DT_ERR_OUT_OF_MEMORY, "dt_exp: %s", dt_last_error());

  /* a little memory back: matmuls big enough for threads (the pool's or none) */
  for (k = 0; k < 6 && nhog > 0; k++) dt_release(hog[--nhog]);  /* 4 KiB ones, the last made */
  for (k = 0; k < 6 && nhog > 0; k++) dt_release(hog[k]);        /* 1 MiB ones */
  T_CHECK(dt_fill_(ma, 0.5) == DT_OK && dt_fill_(mb, 3.0) == DT_OK);
  T_CHECK(dt_fill_(va, 0.25) == DT_OK && dt_fill_(vb, -2.0) == DT_OK);
  check_matmul(ma, mb, 0.5 * 3.0 * 512, "512x512x512");
  check_matmul(va, vb, 0.25 * -2.0 * 1024, "1x1024x1024");
  for (k = 0; k < 6 && nhog > 0; k++) hog[k] = hog[--nhog];     /* keep the rest releasable */

  /* memory back */
  while (nhog > 0) dt_release(hog[--nhog]);
  y = dt_add(a, b);
  T_CHECK(y && t_all(y, 5.0));
  dt_release(y);
  y = dt_exp(a);
  T_CHECK(y && t_all(y, expf(2.5f)));
  dt_release(y);
  check_matmul(ma, mb, 0.5 * 3.0 * 512, "512x512x512 (memory back)");
  dt_release(s16); dt_release(a); dt_release(b);
  dt_release(ma); dt_release(mb); dt_release(va); dt_release(vb);
}

int main(void) {
  T_RUN(test_exhaust);
  return t_finish();
}
