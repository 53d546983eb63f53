/* bench/bench_gemm_bf16.c — the CPU's BF16 matmul both ways: the gemm slot (the AVX512_BF16
   kernel where the CPU has it) and the F32 route (F32 copies, the F32 gemm, one rounding).

     cc -O2 [-fopenmp] bench/bench_gemm_bf16.c -o bench_gemm_bf16 -lm
     nice ./bench_gemm_bf16 [size ...]      (default 1024 2048; best of 5 each) */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* best of 5 seconds of one (n, n) @ (n, n) in bfloat16, by the slot (f32 0) or the F32 route */
static double best(int f32, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *c) {
  double bt = 1e30;
  int r;
  for (r = 0; r < 6; r++) { /* the first warms the caches and the buffers */
    double t0 = now(), t;
    if (f32) dt__half_gemm_f32(dt__cpu_backend(), 0, DT_BF16, 0, 0, 1, n, n, n, 1.0, a, 0, b, 0, 0.0, c, 0);
    else dt__cpu_gemm(0, DT_BF16, 0, 0, 1, n, n, n, 1.0, a, 0, b, 0, 0.0, c, 0);
    t = now() - t0;
    if (r > 0 && t < bt) bt = t;
  }
  return bt;
}

int main(int argc, char **argv) {
  int64_t sizes[8] = {1024, 2048};
  int ns = 2, i;
  if (argc > 1) {
    ns = argc - 1 < 8 ? argc - 1 : 8;
    for (i = 0; i < ns; i++) sizes[i] = atoll(argv[i + 1]);
  }
#if DT__GEMM_BF16
  printf("BF16 kernel: %s; %d threads\n", dt__gemm_bf16_ok() ? "AVX512_BF16" : "absent (the F32 route)", dt__cpu_threads());
#else
  printf("BF16 kernel: not in this build (the F32 route); %d threads\n", dt__cpu_threads());
#endif
  for (i = 0; i < ns; i++) {
    const int64_t n = sizes[i];
    uint16_t *a = (uint16_t *)malloc((size_t)(n * n) * 2), *b = (uint16_t *)malloc((size_t)(n * n) * 2);
    uint16_t *c = (uint16_t *)malloc((size_t)(n * n) * 2);
    double tk, tf, fl = 2.0 * (double)n * (double)n * (double)n;
    int64_t j;
    if (!a || !b || !c) return 1;
    for (j = 0; j < n * n; j++) {
      a[j] = dt__f32_to_bf16((float)((j * 7 % 13) - 6) / 8.0f);
      b[j] = dt__f32_to_bf16((float)((j * 5 % 11) - 5) / 8.0f);
    }
    tk = best(0, n, a, b, c);
    tf = best(1, n, a, b, c);
    printf("%lld^3 bf16: slot %.1f ms (%.1f GFLOP/s), F32 route %.1f ms (%.1f GFLOP/s), %.2fx\n", (long long)n, 1e3 * tk,
           fl / tk * 1e-9, 1e3 * tf, fl / tf * 1e-9, tf / tk);
    free(a); free(b); free(c);
  }
  return 0;
}
