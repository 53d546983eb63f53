/* Which devices get a CUDA context: a program that works only on cuda:1 must
   not create one on cuda:0 (since CUDA 12, cudaSetDevice creates the context,
   so restoring a thread's never-chosen device 0 after every call would). Runs
   on the emulator with two GPUs (DTEMU_GPUS=2), which records which devices'
   primary contexts exist and answers devtensor's cuDevicePrimaryCtxGetState. */
#define _POSIX_C_SOURCE 200809L
#define DEVTENSOR_IMPLEMENTATION
#include "../../devtensor.h"
#include "../harness.h"
#include <pthread.h>

/* from the emulator's cuda_runtime.h, declared here to keep this file C */
int cudaGetDevice(int *dev);
int cudaSetDevice(int dev);
int dtemu_context_active(int dev);

/* tensors, a matmul (cuBLAS), a reduction read back, a network: all on d */
static int work_on(dt_device d) {
  dt_tensor *x = dt_ones(dt_shape2(4, 3), d), *w = dt_randn(dt_shape2(3, 2), d);
  dt_tensor *y = dt_matmul(x, w), *s = dt_sum(y), *h = dt_to(y, dt_cpu());
  dt_module *net = dt_linear(3, 2);
  dt_tensor *o = NULL;
  int ok = x && w && y && s && h && dt_module_to(net, d) == DT_OK && (o = dt_forward(net, x)) != NULL &&
           !isnan(dt_item(s)) && dt_last_status() == DT_OK;
  dt_release(x); dt_release(w); dt_release(y); dt_release(s); dt_release(h); dt_release(o);
  dt_module_free(net);
  return ok;
}

static void *thread_main(void *arg) {
  *(int *)arg = work_on(dt_gpu(1));
  return NULL;
}

static void test_only_cuda1(void) {
  int cur = -1, ok = 0;
  pthread_t th;
  if (dt_num_gpus() < 2) T_SKIP("needs two (emulated) GPUs");
  T_CHECK(!dtemu_context_active(0) && !dtemu_context_active(1)); /* counting devices makes none */
  T_CHECK_MSG(work_on(dt_gpu(1)), "%s", dt_last_error());
  T_CHECK(pthread_create(&th, NULL, thread_main, &ok) == 0 && pthread_join(th, NULL) == 0);
  T_CHECK_MSG(ok, "%s", dt_last_error());
  T_CHECK(dtemu_context_active(1));
  T_CHECK_MSG(!dtemu_context_active(0), "working on cuda:1 alone made a context on cuda:0");
  /* the thread stayed on cuda:1: restoring device 0 would have made its context */
  T_CHECK(cudaGetDevice(&cur) == 0 && cur == 1);
  /* once the program itself uses cuda:0, its choice is restored after every call */
  T_CHECK(cudaSetDevice(0) == 0 && dtemu_context_active(0));
  T_CHECK_MSG(work_on(dt_gpu(1)), "%s", dt_last_error());
  T_CHECK(cudaGetDevice(&cur) == 0 && cur == 0);
}

int main(void) {
  T_RUN(test_only_cuda1);
  return t_finish();
}
