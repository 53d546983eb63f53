/* Why there is no GPU, as dt_last_error() says it: on a machine without the
   NVIDIA driver cudart answers "CUDA driver version is insufficient for CUDA
   runtime version"; devtensor says "no NVIDIA driver found" when the driver's
   library (libcuda.so.1) cannot be loaded, and keeps CUDA's words when it can
   (an old driver, or a driver without a GPU). Each case runs in a child process
   (dt_num_gpus asks CUDA once per process) with the emulator told what the
   machine has: DTEMU_DRIVER=none (cudart's cudaErrorInsufficientDriver),
   DTEMU_GPUS=0, and DTEMU_LIBCUDA, the library devtensor tries to load. */
#define _POSIX_C_SOURCE 200809L
#define DEVTENSOR_IMPLEMENTATION
#include "../../devtensor.h"
#include "../harness.h"
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define NO_LIB "libdtemu-no-such-driver.so.1"

/* In a child: the machine as the environment says; dt_num_gpus() is 0 and its
   reason, and a tensor asked of cuda:0, carry `reason`. Exits with the number
   of failed checks. */
static void child(const char *driver, const char *gpus, const char *lib, const char *reason) {
  char want[256];
  dt_tensor *t;
  if (driver) setenv("DTEMU_DRIVER", driver, 1); else unsetenv("DTEMU_DRIVER");
  setenv("DTEMU_GPUS", gpus, 1);
  setenv("DTEMU_LIBCUDA", lib, 1);
  dt_clear_error();
  T_CHECK(dt_num_gpus() == 0);
  T_CHECK(dt_last_status() == DT_ERR_NO_DEVICE);
  snprintf(want, sizeof want, "dt_num_gpus: CUDA unavailable: %s", reason);
  T_STREQ(dt_last_error(), want);
  t = dt_ones(dt_shape1(3), dt_gpu(0));
  T_CHECK(t == NULL && dt_last_status() == DT_ERR_NO_DEVICE);
  snprintf(want, sizeof want, "dt_ones: no such device cuda:0 (no GPU available: CUDA unavailable: %s)", reason);
  T_STREQ(dt_last_error(), want);
  dt_release(t);
  fflush(stdout);
  _exit(t_cur_failed > 125 ? 125 : t_cur_failed);
}

static void run_case(const char *driver, const char *gpus, const char *lib, const char *reason) {
  int st = 0;
  pid_t pid;
  fflush(stdout);
  pid = fork();
  if (pid == 0) child(driver, gpus, lib, reason);
  T_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
  T_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child %s with %d", WIFEXITED(st) ? "exited" : "was killed",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* no driver at all: the reason names the library that is missing */
static void test_no_driver(void) {
  run_case("none", "2", NO_LIB, "no NVIDIA driver found (" NO_LIB " cannot be loaded)");
}

/* a driver whose library loads but that cudart finds too old: CUDA's words */
static void test_old_driver(void) {
  run_case("none", "2", "libc.so.6", "CUDA driver version is insufficient for CUDA runtime version");
}

/* a driver and no GPU: CUDA's words */
static void test_driver_without_gpu(void) {
  run_case(NULL, "0", "libc.so.6", "no CUDA-capable device is detected");
}

int main(void) {
  T_RUN(test_no_driver);
  T_RUN(test_old_driver);
  T_RUN(test_driver_without_gpu);
  return t_finish();
}
