/* tests/harness.h — a tiny test harness.
   A test program defines test functions and lists them in main:

       static void test_add(dt_device dev) { ... T_CHECK(x == y); ... }
       int main(void) { T_RUN_ALL_DEVICES(test_add); T_RUN(test_print); return t_finish(); }

   Each test prints one line: "PASS name [device]", "FAIL name [device]: where"
   or "SKIP name: why". t_finish() prints "N passed, N failed, N skipped" for
   the program and returns nonzero when something failed; tests/run.sh adds the
   programs' lines up. T_RUN_ALL_DEVICES runs a test on the CPU and on every
   GPU present; where the build has CUDA but the machine has no GPU, the GPU
   case is reported as skipped (as failed under DT_REQUIRE_GPU=1).

   A program with its own kind of test (test_gemm_kernel, test_print_format)
   prints its PASS/FAIL/SKIP lines itself, counts them in t_passed, t_failed
   and t_skipped, and ends with t_finish(): one set of counters, one summary. */
#ifndef DT_TEST_HARNESS_H
#define DT_TEST_HARNESS_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../devtensor.h"

/* The emulator's count of device-to-host copies (tests/emu), for tests of how often a loop reads
   from the device: 0 and HAVE_D2H_COUNT false where the program is not linked with it. */
#if defined(__GNUC__)
#ifdef __cplusplus
extern "C"
#endif
unsigned long long dtemu_d2h_copies(void) __attribute__((weak));
#define D2H_COPIES() (dtemu_d2h_copies ? dtemu_d2h_copies() : 0ULL)
#define HAVE_D2H_COUNT (dtemu_d2h_copies != NULL)
#else
#define D2H_COPIES() 0ULL
#define HAVE_D2H_COUNT 0
#endif

static int t_passed, t_failed, t_skipped;
static int t_cur_failed;          /* checks failed in the running test */
static const char *t_cur_skip;    /* set by T_SKIP */

#define T_CHECK(cond) do { if (!(cond)) { t_cur_failed++; \
  printf("  check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); } } while (0)
#define T_CHECK_MSG(cond, ...) do { if (!(cond)) { t_cur_failed++; \
  printf("  check failed: %s (%s:%d): ", #cond, __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)
/* |a - b| <= atol + rtol * |b| */
#define T_CLOSE(a, b, atol, rtol) do { double t_a_ = (double)(a), t_b_ = (double)(b); \
  if (!(fabs(t_a_ - t_b_) <= (atol) + (rtol) * fabs(t_b_))) { t_cur_failed++; \
  printf("  not close: %s = %.9g, %s = %.9g (%s:%d)\n", #a, t_a_, #b, t_b_, __FILE__, __LINE__); } } while (0)
#define T_STREQ(a, b) do { const char *t_x_ = (a), *t_y_ = (b); \
  if (!t_x_ || !t_y_ || strcmp(t_x_, t_y_) != 0) { t_cur_failed++; \
  printf("  strings differ (%s:%d)\n  got:      [%s]\n  expected: [%s]\n", __FILE__, __LINE__, \
         t_x_ ? t_x_ : "(null)", t_y_ ? t_y_ : "(null)"); } } while (0)
#define T_SKIP(why) do { t_cur_skip = (why); return; } while (0)

static DT__UNUSED void t_report(const char *name, const char *dev) {
  if (t_cur_skip) { t_skipped++; printf("SKIP %s%s%s%s: %s\n", name, dev ? " [" : "", dev ? dev : "", dev ? "]" : "", t_cur_skip); }
  else if (t_cur_failed) { t_failed++; printf("FAIL %s%s%s%s\n", name, dev ? " [" : "", dev ? dev : "", dev ? "]" : ""); }
  else { t_passed++; printf("PASS %s%s%s%s\n", name, dev ? " [" : "", dev ? dev : "", dev ? "]" : ""); }
  fflush(stdout);
}

static DT__UNUSED void t_run_one(const char *name, void (*fn)(void)) {
  t_cur_failed = 0; t_cur_skip = NULL; dt_clear_error();
  fn();
  t_report(name, NULL);
}

/* DT_REQUIRE_GPU=1 (a run on a machine that has a GPU): a CUDA build that finds no GPU fails
   instead of skipping its GPU cases, so such a run cannot pass by skipping. */
static DT__UNUSED int t_require_gpu(void) {
  const char *e = getenv("DT_REQUIRE_GPU");
  return e && strcmp(e, "1") == 0;
}

/* The devices a device test runs on: the CPU, then every GPU. */
static DT__UNUSED void t_run_devices(const char *name, void (*fn)(dt_device)) {
  char buf[32];
  int g, ngpu = dt_num_gpus();
  t_cur_failed = 0; t_cur_skip = NULL; dt_clear_error();
  fn(dt_cpu());
  t_report(name, "cpu");
  for (g = 0; g < ngpu; g++) {
    t_cur_failed = 0; t_cur_skip = NULL; dt_clear_error();
    fn(dt_gpu(g));
    t_report(name, dt_device_str(dt_gpu(g), buf, sizeof buf));
  }
#ifdef DEVTENSOR_CUDA
  if (ngpu == 0 && t_require_gpu()) { t_failed++; printf("FAIL %s [cuda]: no GPU on this machine, and DT_REQUIRE_GPU=1\n", name); }
  else if (ngpu == 0) { t_skipped++; printf("SKIP %s [cuda]: no GPU on this machine\n", name); }
#endif
}

#define T_RUN(fn) t_run_one(#fn, fn)
#define T_RUN_ALL_DEVICES(fn) t_run_devices(#fn, fn)

static DT__UNUSED int t_finish(void) {
#ifdef DEVTENSOR_CUDA
  if (t_require_gpu() && dt_num_gpus() == 0) {
    t_failed++;
    printf("FAIL DT_REQUIRE_GPU=1: this CUDA build sees no GPU (%s)\n", dt_last_error());
  }
#endif
  printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped);
  return t_failed ? 1 : 0;
}
#endif
