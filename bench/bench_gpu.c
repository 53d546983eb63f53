/* bench/bench_gpu.c — devtensor on cuda:0 against plain CUDA, in one process; pairs with
   bench_torch.py and bench_train.c, and compare_gpu.py reads all three (bench/run_gpu.sh).

     cc -std=c99 -O2 -DDEVTENSOR_CUDA -I. -isystem <cuda>/include bench/bench_gpu.c \
        build/cuda/devtensor_cuda.o -o build/bench_gpu -L<cuda>/lib64 -lcudart -lcublas -lstdc++ -lm

   Measures, each as the median of REPS timed repetitions after warm-up (best= is also printed):
     add_overhead_100x100    1000 async dt_add of two F32 (100, 100) tensors, each result
                             released; wall clock from the first launch to dt_synchronize, per op;
                             also the host's enqueue time (to the last dt_add returning, per op)
                             and the GPU span between cudaEvents around the loop, per op
     alloc_cached_1024x1024  dt_empty((1024, 1024), F32) + dt_release, every one a cache hit, per pair
     add_f32_268435456       dt_add of two F32 tensors of 2^28 elements (1 GiB each), cudaEvents on
                             dt_cuda_stream; GB/s counting 3 arrays (read a, read b, write y)
       peer: cudamemcpy d2d_1gib, cudaMemcpyAsync of 1 GiB device to device on the same stream,
             GB/s counting 2 x bytes (read + write)
     matmul_f32_4096         dt_matmul of two F32 (4096, 4096) tensors, cudaEvents; 2 n^3 flops
                             (plain FP32 cuBLAS, no TF32)
     h2d_pinned_256mib       dt_from_data from a cudaHostAlloc'd 256 MiB buffer to cuda:0, then
                             dt_synchronize; wall clock
       peer: cudamemcpy h2d_pinned_256mib, cudaMemcpy from the same buffer
     h2d_pageable_256mib     the same from malloc'd memory (information), peer: cudaMemcpy from it
     d2h_to_cpu_256mib       dt_to(x, cpu) of a 256 MiB F32 tensor on cuda:0: new host memory each
                             time, as torch's x.cpu() (the peer) takes; wall clock
     d2h_pageable_256mib     dt_copy_ into a malloc'd 256 MiB host tensor whose pages are already
                             touched (information), peer: cudaMemcpy into the same buffer
     sum_f32_268435456       dt_sum of 2^28 F32 ones (whole tensor), cudaEvents; GB/s counting the
                             bytes read; sum_dim0_f32_8192x8192, sum_dim1_f32_8192x8192: dt_sum_dim
                             of an F32 (8192, 8192) over dim 0 and 1; sum_dim0_f32_1000000x2:
                             dt_sum_dim of an F32 (10^6, 2) over dim 0 (small integers: exact sums,
                             every result checked after the timed part)
   devtensor and its cudaMemcpy peer are timed alternately, repetition by repetition.
   Each line is `<library> <benchmark> key=value ...`; lines starting with '#' are comments.
   Without a GPU it prints `SKIP: no GPU (<reason>)` and exits 0. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef DEVTENSOR_CUDA
/* cudart's headers use unnamed unions, which -std=c99 -pedantic refuses */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cuda_runtime.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#ifndef BENCH_SMOKE
#define REPS 20           /* timed repetitions of everything */
#define OVH_OPS 1000      /* dt_add per repetition of the overhead loop */
#define ALLOC_PAIRS 10000 /* dt_empty + dt_release per repetition */
#define BIG_N ((int64_t)1 << 28)
#define MM_N 4096
#define H2D_BYTES ((size_t)256 << 20)
#define H2D_REPS 10
#define SUM_N ((int64_t)1 << 28)
#define SQ_N 8192         /* dt_sum_dim of (SQ_N, SQ_N) */
#define TALL_N 1000000    /* dt_sum_dim of (TALL_N, 2) over dim 0 */
#else /* tiny sizes: make test-emu runs the program on the emulator to see it work, not to time it */
#define REPS 2
#define OVH_OPS 20
#define ALLOC_PAIRS 50
#define BIG_N ((int64_t)1 << 16)
#define MM_N 64
#define H2D_BYTES ((size_t)1 << 20)
#define H2D_REPS 2
#define SUM_N ((int64_t)1 << 16)
#define SQ_N 64
#define TALL_N 1000
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "bench_gpu: %s failed: %s\n", what, dt_last_error());
  exit(1);
}

static void ck(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "bench_gpu: %s failed: %s\n", what, cudaGetErrorString(e));
  exit(1);
}
#define CK(call) ck((call), #call)

static void sync_all(dt_device gpu) {
  if (dt_synchronize(gpu) != DT_OK) die("dt_synchronize");
  CK(cudaDeviceSynchronize());
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* median and minimum of v[0..n); sorts v */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
static double lowest(const double *v, int n) {
  double m = v[0];
  int i;
  for (i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
  return m;
}

static cudaStream_t stream; /* devtensor's stream on cuda:0 */
static cudaEvent_t ev0, ev1;

/* seconds between ev0 and ev1, waiting for ev1 */
static double event_seconds(void) {
  float ms = 0;
  CK(cudaEventSynchronize(ev1));
  CK(cudaEventElapsedTime(&ms, ev0, ev1));
  return 1e-3 * (double)ms;
}

/* dt_sum(t) read on the host: checks a result outside the timed part */
static double sum_of(const dt_tensor *t) {
  dt_tensor *s = dt_sum(t);
  double v;
  if (!s) die("dt_sum");
  dt_clear_error();
  v = dt_item(s);
  if (dt_last_status() != DT_OK) die("dt_item");
  dt_release(s);
  return v;
}

static void check_value(const char *what, double got, double want, double rtol) {
  if (fabs(got - want) <= rtol * fabs(want)) return;
  fprintf(stderr, "bench_gpu: wrong result in %s: %.17g, expected %.17g\n", what, got, want);
  exit(1);
}

/* 1. per-op overhead: async dt_add on (100, 100). Per repetition: the host's time to enqueue all
   OVH_OPS (wall clock to the last dt_add returning), the time to dt_synchronize (the existing
   per-op figure), and the span between cudaEvents recorded on the stream before the first and
   after the last launch (GPU side; it includes idle gaps while the GPU waits for the host) */
static void bench_add_overhead(dt_device gpu) {
  dt_tensor *a = dt_rand(dt_shape2(100, 100), gpu), *b = dt_rand(dt_shape2(100, 100), gpu);
  double t[REPS], te[REPS], tg[REPS];
  int r, i;
  if (!a || !b) die("dt_rand");
  for (r = -3; r < REPS; r++) { /* three warm-up rounds */
    double t0, t1, t2, g;
    if (dt_synchronize(gpu) != DT_OK) die("dt_synchronize");
    CK(cudaEventRecord(ev0, stream)); /* outside the wall-clock interval */
    t0 = now();
    for (i = 0; i < OVH_OPS; i++) {
      dt_tensor *c = dt_add(a, b);
      if (!c) die("dt_add");
      dt_release(c);
    }
    t1 = now();
    CK(cudaEventRecord(ev1, stream));
    if (dt_synchronize(gpu) != DT_OK) die("dt_synchronize");
    t2 = now();
    g = event_seconds();
    if (r >= 0) {
      t[r] = (t2 - t0) / OVH_OPS;
      te[r] = (t1 - t0) / OVH_OPS;
      tg[r] = g / OVH_OPS;
    }
  }
  {
    double mt = median(t, REPS), bt = lowest(t, REPS), me = median(te, REPS), be = lowest(te, REPS);
    double mg = median(tg, REPS);
    printf("devtensor add_overhead_100x100 seconds_per_op=%.9f best=%.9f enqueue_seconds_per_op=%.9f enqueue_best=%.9f "
           "gpu_span_seconds_per_op=%.9f ops=%d reps=%d stat=median\n", mt, bt, me, be, mg, OVH_OPS, REPS);
  }
  fflush(stdout);
  dt_release(a); dt_release(b);
}

/* 2. dt_empty + dt_release of 4 MiB, every allocation a cache hit */
static void alloc_loop(dt_device gpu) {
  int i;
  for (i = 0; i < ALLOC_PAIRS; i++) {
    dt_tensor *x = dt_empty(dt_shape2(1024, 1024), DT_F32, gpu);
    if (!x) die("dt_empty");
    dt_release(x);
  }
}

static void bench_alloc(dt_device gpu) {
  dt_memory_stats m0, m1;
  double t[REPS];
  int r;
  alloc_loop(gpu); /* warm-up: the one cudaMalloc */
  if (dt_memory_stats_get(gpu, &m0) != DT_OK) die("dt_memory_stats_get");
  for (r = 0; r < REPS; r++) {
    double t0 = now();
    alloc_loop(gpu);
    t[r] = (now() - t0) / ALLOC_PAIRS;
  }
  if (dt_memory_stats_get(gpu, &m1) != DT_OK) die("dt_memory_stats_get");
  printf("devtensor alloc_cached_1024x1024 seconds_per_pair=%.9f best=%.9f pairs=%d reps=%d stat=median cache_misses=%s\n",
         median(t, REPS), lowest(t, REPS), ALLOC_PAIRS, REPS, m1.reserved == m0.reserved ? "0" : "some");
  fflush(stdout);
}

/* 3. dt_add of 2^28 floats against cudaMemcpyAsync of 1 GiB device to device */
static void bench_add_bandwidth(dt_device gpu) {
  size_t bytes = (size_t)BIG_N * sizeof(float);
  dt_tensor *a = dt_full(dt_shape1(BIG_N), 1.0, gpu), *b = dt_full(dt_shape1(BIG_N), 2.0, gpu);
  dt_tensor *dst = dt_empty(dt_shape1(BIG_N), DT_F32, gpu), *y;
  double td[REPS], tc[REPS], s;
  int r;
  if (!a || !b) die("dt_full");
  if (!dst) die("dt_empty");
  for (r = -2; r < REPS; r++) {
    double t;
    sync_all(gpu);
    CK(cudaEventRecord(ev0, stream));
    y = dt_add(a, b);
    if (!y) die("dt_add");
    dt_release(y); /* back to the cache; the kernel is ordered before any reuse */
    CK(cudaEventRecord(ev1, stream));
    t = event_seconds();
    if (r >= 0) td[r] = t;

    CK(cudaEventRecord(ev0, stream));
    CK(cudaMemcpyAsync(dt_data_ptr(dst), dt_data_ptr(a), bytes, cudaMemcpyDeviceToDevice, stream));
    CK(cudaEventRecord(ev1, stream));
    t = event_seconds();
    if (r >= 0) tc[r] = t;
  }
  y = dt_add(a, b);
  if (!y) die("dt_add");
  s = sum_of(y);
  check_value("dt_add", s, 3.0 * (double)BIG_N, 0);
  s = sum_of(dst);
  check_value("cudaMemcpyAsync", s, (double)BIG_N, 0);
  {
    double md = median(td, REPS), mc = median(tc, REPS);
    printf("devtensor add_f32_268435456 seconds=%.9f gbps=%.1f best_gbps=%.1f bytes_counted=3x%zu reps=%d stat=median timer=cudaEvent\n",
           md, 3.0 * (double)bytes / md / 1e9, 3.0 * (double)bytes / lowest(td, REPS) / 1e9, bytes, REPS);
    printf("cudamemcpy d2d_1gib seconds=%.9f gbps=%.1f best_gbps=%.1f bytes_counted=2x%zu reps=%d stat=median timer=cudaEvent\n",
           mc, 2.0 * (double)bytes / mc / 1e9, 2.0 * (double)bytes / lowest(tc, REPS) / 1e9, bytes, REPS);
  }
  fflush(stdout);
  dt_release(y); dt_release(a); dt_release(b); dt_release(dst);
  if (dt_empty_cache(gpu) != DT_OK) die("dt_empty_cache");
}

/* 4. dt_matmul (4096, 4096) @ (4096, 4096) in F32 */
static void bench_matmul(dt_device gpu) {
  const int64_t n = MM_N;
  size_t bytes = (size_t)(n * n) * sizeof(float);
  dt_tensor *a = dt_rand(dt_shape2(n, n), gpu), *b = dt_rand(dt_shape2(n, n), gpu), *c;
  double t[REPS], flops = 2.0 * (double)n * (double)n * (double)n, md;
  float *ha, *hb, *hc;
  int r, p;
  if (!a || !b) die("dt_rand");
  for (r = -3; r < REPS; r++) {
    double tt;
    sync_all(gpu);
    CK(cudaEventRecord(ev0, stream));
    c = dt_matmul(a, b);
    if (!c) die("dt_matmul");
    dt_release(c);
    CK(cudaEventRecord(ev1, stream));
    tt = event_seconds();
    if (r >= 0) t[r] = tt;
  }
  /* a few elements against a dot product in double */
  ha = (float *)malloc(bytes); hb = (float *)malloc(bytes); hc = (float *)malloc(bytes);
  if (!ha || !hb || !hc) { fprintf(stderr, "bench_gpu: out of host memory\n"); exit(1); }
  if (!(c = dt_matmul(a, b))) die("dt_matmul");
  if (dt_to_host(a, ha, bytes) != DT_OK || dt_to_host(b, hb, bytes) != DT_OK || dt_to_host(c, hc, bytes) != DT_OK)
    die("dt_to_host");
  for (p = 0; p < 4; p++) {
    int64_t i = (p * 1237) % n, j = (p * 3001 + 17) % n, k;
    double dot = 0;
    for (k = 0; k < n; k++) dot += (double)ha[i * n + k] * (double)hb[k * n + j];
    check_value("dt_matmul", (double)hc[i * n + j], dot, 1e-4);
  }
  free(ha); free(hb); free(hc);
  md = median(t, REPS);
  printf("devtensor matmul_f32_4096 seconds=%.9f gflops=%.1f best_gflops=%.1f reps=%d stat=median timer=cudaEvent tf32=off\n",
         md, flops / md / 1e9, flops / lowest(t, REPS) / 1e9, REPS);
  fflush(stdout);
  dt_release(c); dt_release(a); dt_release(b);
  if (dt_empty_cache(gpu) != DT_OK) die("dt_empty_cache");
}

/* 5. host to device: dt_from_data against cudaMemcpy, from pinned and from pageable memory */
static void bench_h2d(dt_device gpu) {
  const int64_t n = (int64_t)(H2D_BYTES / sizeof(float));
  float *pinned = NULL, *pageable = (float *)malloc(H2D_BYTES);
  void *dd = NULL;
  double tdp[H2D_REPS], tcp[H2D_REPS], tdg[H2D_REPS], tcg[H2D_REPS], want = 0;
  int64_t i;
  int r, k;
  CK(cudaHostAlloc((void **)&pinned, H2D_BYTES, cudaHostAllocDefault));
  CK(cudaMalloc(&dd, H2D_BYTES));
  if (!pageable) { fprintf(stderr, "bench_gpu: out of host memory\n"); exit(1); }
  for (i = 0; i < n; i++) pinned[i] = pageable[i] = (float)(i & 1023); /* also touches every page */
  for (i = 0; i < 1024; i++) want += (double)i;
  want *= (double)(n / 1024);
  for (r = -1; r < H2D_REPS; r++) {
    for (k = 0; k < 2; k++) { /* k = 0: pinned, 1: pageable */
      const float *src = k == 0 ? pinned : pageable;
      dt_tensor *y;
      double t0, t;
      sync_all(gpu);
      t0 = now();
      y = dt_from_data(src, dt_shape1(n), DT_F32, gpu);
      if (!y) die("dt_from_data");
      if (dt_synchronize(gpu) != DT_OK) die("dt_synchronize");
      t = now() - t0;
      if (r >= 0) (k == 0 ? tdp : tdg)[r] = t;
      if (r == -1) check_value(k == 0 ? "dt_from_data (pinned)" : "dt_from_data (pageable)", sum_of(y), want, 0);
      dt_release(y);

      sync_all(gpu);
      t0 = now();
      CK(cudaMemcpy(dd, src, H2D_BYTES, cudaMemcpyHostToDevice));
      t = now() - t0;
      if (r >= 0) (k == 0 ? tcp : tcg)[r] = t;
    }
  }
  {
    double b = (double)H2D_BYTES, m;
    m = median(tdp, H2D_REPS);
    printf("devtensor h2d_pinned_256mib seconds=%.9f gbps=%.2f best_gbps=%.2f reps=%d stat=median timer=wall\n",
           m, b / m / 1e9, b / lowest(tdp, H2D_REPS) / 1e9, H2D_REPS);
    m = median(tcp, H2D_REPS);
    printf("cudamemcpy h2d_pinned_256mib seconds=%.9f gbps=%.2f best_gbps=%.2f reps=%d stat=median timer=wall\n",
           m, b / m / 1e9, b / lowest(tcp, H2D_REPS) / 1e9, H2D_REPS);
    m = median(tdg, H2D_REPS);
    printf("devtensor h2d_pageable_256mib seconds=%.9f gbps=%.2f best_gbps=%.2f reps=%d stat=median timer=wall\n",
           m, b / m / 1e9, b / lowest(tdg, H2D_REPS) / 1e9, H2D_REPS);
    m = median(tcg, H2D_REPS);
    printf("cudamemcpy h2d_pageable_256mib seconds=%.9f gbps=%.2f best_gbps=%.2f reps=%d stat=median timer=wall\n",
           m, b / m / 1e9, b / lowest(tcg, H2D_REPS) / 1e9, H2D_REPS);
  }
  fflush(stdout);
  CK(cudaFree(dd));
  CK(cudaFreeHost(pinned));
  free(pageable);
  if (dt_empty_cache(gpu) != DT_OK) die("dt_empty_cache");
}

/* 6. device to host: dt_to(x, cpu) (new host memory: its first touch counts, as in torch's
   x.cpu()), and dt_copy_ into touched pageable memory against cudaMemcpy into the same */
static void bench_d2h(dt_device gpu) {
  const int64_t n = (int64_t)(H2D_BYTES / sizeof(float));
  float *pageable = (float *)malloc(H2D_BYTES);
  double tto[H2D_REPS], tcp[H2D_REPS], tcm[H2D_REPS], want = 0;
  dt_tensor *x, *host;
  int64_t i;
  int r;
  if (!pageable) { fprintf(stderr, "bench_gpu: out of host memory\n"); exit(1); }
  for (i = 0; i < n; i++) pageable[i] = (float)(i & 1023); /* touches every page */
  for (i = 0; i < 1024; i++) want += (double)i;
  want *= (double)(n / 1024);
  if (!(x = dt_from_data(pageable, dt_shape1(n), DT_F32, gpu))) die("dt_from_data");
  memset(pageable, 0, H2D_BYTES);
  if (!(host = dt_from_blob(pageable, dt_shape1(n), DT_F32, dt_cpu(), NULL, NULL))) die("dt_from_blob");
  for (r = -1; r < H2D_REPS; r++) {
    dt_tensor *y;
    double t0, t;
    sync_all(gpu);
    t0 = now();
    if (!(y = dt_to(x, dt_cpu()))) die("dt_to(cpu)");
    t = now() - t0;
    if (r >= 0) tto[r] = t;
    if (r == -1) check_value("dt_to(x, cpu)", sum_of(y), want, 0);
    dt_release(y);

    sync_all(gpu);
    t0 = now();
    if (dt_copy_(host, x) != DT_OK) die("dt_copy_ (to host)");
    t = now() - t0;
    if (r >= 0) tcp[r] = t;
    if (r == -1) check_value("dt_copy_ (to pageable host)", sum_of(host), want, 0);

    sync_all(gpu);
    t0 = now();
    CK(cudaMemcpy(pageable, dt_data_ptr(x), H2D_BYTES, cudaMemcpyDeviceToHost));
    t = now() - t0;
    if (r >= 0) tcm[r] = t;
  }
  {
    double b = (double)H2D_BYTES, m;
    m = median(tto, H2D_REPS);
    printf("devtensor d2h_to_cpu_256mib seconds=%.9f gbps=%.2f best_gbps=%.2f reps=%d stat=median timer=wall\n",
           m, b / m / 1e9, b / lowest(tto, H2D_REPS) / 1e9, H2D_REPS);
    m = median(tcp, H2D_REPS);
    printf("devtensor d2h_pageable_256mib seconds=%.9f gbps=%.2f best_gbps=%.2f reps=%d stat=median timer=wall\n",
           m, b / m / 1e9, b / lowest(tcp, H2D_REPS) / 1e9, H2D_REPS);
    m = median(tcm, H2D_REPS);
    printf("cudamemcpy d2h_pageable_256mib seconds=%.9f gbps=%.2f best_gbps=%.2f reps=%d stat=median timer=wall\n",
           m, b / m / 1e9, b / lowest(tcm, H2D_REPS) / 1e9, H2D_REPS);
  }
  fflush(stdout);
  dt_release(host);
  dt_release(x);
  free(pageable);
  if (dt_empty_cache(gpu) != DT_OK) die("dt_empty_cache");
}

/* 7. reductions: dt_sum of the whole tensor, dt_sum_dim over one dimension; cudaEvents; GB/s
   counting the bytes read. dim = -1: dt_sum. want[0..nwant): the exact result */
static void bench_reduce(const char *name, const dt_tensor *x, int dim, const double *want, int64_t nwant) {
  size_t bytes = (size_t)dt_numel(x) * sizeof(float);
  double t[REPS], md;
  float *got = (float *)malloc((size_t)nwant * sizeof(float));
  dt_tensor *y;
  int64_t k;
  int r;
  if (!got) { fprintf(stderr, "bench_gpu: out of host memory\n"); exit(1); }
  for (r = -3; r < REPS; r++) { /* three warm-up rounds */
    double tt;
    sync_all(dt_device_of(x));
    CK(cudaEventRecord(ev0, stream));
    y = dim < 0 ? dt_sum(x) : dt_sum_dim(x, dim);
    if (!y) die(dim < 0 ? "dt_sum" : "dt_sum_dim");
    dt_release(y); /* back to the cache; the kernel is ordered before any reuse */
    CK(cudaEventRecord(ev1, stream));
    tt = event_seconds();
    if (r >= 0) t[r] = tt;
  }
  y = dim < 0 ? dt_sum(x) : dt_sum_dim(x, dim);
  if (!y) die(dim < 0 ? "dt_sum" : "dt_sum_dim");
  if (dt_numel(y) != nwant) { fprintf(stderr, "bench_gpu: %s: %lld results, expected %lld\n", name, (long long)dt_numel(y), (long long)nwant); exit(1); }
  if (dt_to_host(y, got, (size_t)nwant * sizeof(float)) != DT_OK) die("dt_to_host");
  for (k = 0; k < nwant; k++) check_value(name, (double)got[k], want[k], 0);
  md = median(t, REPS);
  printf("devtensor %s seconds=%.9f gbps=%.1f best_gbps=%.1f bytes_counted=%zu reps=%d stat=median timer=cudaEvent\n",
         name, md, (double)bytes / md / 1e9, (double)bytes / lowest(t, REPS) / 1e9, bytes, REPS);
  fflush(stdout);
  dt_release(y);
  free(got);
}

/* x (rows, cols) F32 with x[i, j] = (i % 4) + 4 (j % 2) (tall: (i % 3) + j); small integers,
   so every partial sum is exact in F32 and the column and row sums differ */
static dt_tensor *pattern(int64_t rows, int64_t cols, int tall, double *col_sums, double *row_sums, dt_device gpu) {
  float *h = (float *)malloc((size_t)(rows * cols) * sizeof(float));
  dt_tensor *x;
  int64_t i, j;
  if (!h) { fprintf(stderr, "bench_gpu: out of host memory\n"); exit(1); }
  for (j = 0; j < cols; j++) col_sums[j] = 0;
  for (i = 0; i < rows; i++) {
    row_sums[i] = 0;
    for (j = 0; j < cols; j++) {
      float v = tall ? (float)(i % 3 + j) : (float)(i % 4 + 4 * (j % 2));
      h[i * cols + j] = v;
      col_sums[j] += v;
      row_sums[i] += v;
    }
  }
  x = dt_from_data(h, dt_shape2(rows, cols), DT_F32, gpu);
  if (!x) die("dt_from_data");
  free(h);
  return x;
}

static void bench_reductions(dt_device gpu) {
  double all = (double)SUM_N, *cs, *rs;
  dt_tensor *x = dt_full(dt_shape1(SUM_N), 1.0, gpu);
  if (!x) die("dt_full");
  bench_reduce("sum_f32_268435456", x, -1, &all, 1);
  dt_release(x);
  if (dt_empty_cache(gpu) != DT_OK) die("dt_empty_cache");

  cs = (double *)malloc((size_t)(TALL_N > SQ_N ? TALL_N : SQ_N) * sizeof(double)); /* both shapes */
  rs = (double *)malloc((size_t)(TALL_N > SQ_N ? TALL_N : SQ_N) * sizeof(double));
  if (!cs || !rs) { fprintf(stderr, "bench_gpu: out of host memory\n"); exit(1); }
  x = pattern(SQ_N, SQ_N, 0, cs, rs, gpu);
  bench_reduce("sum_dim0_f32_8192x8192", x, 0, cs, SQ_N);
  bench_reduce("sum_dim1_f32_8192x8192", x, 1, rs, SQ_N);
  dt_release(x);
  x = pattern(TALL_N, 2, 1, cs, rs, gpu);
  bench_reduce("sum_dim0_f32_1000000x2", x, 0, cs, 2);
  dt_release(x);
  free(cs); free(rs);
  if (dt_empty_cache(gpu) != DT_OK) die("dt_empty_cache");
}

int main(void) {
  dt_device gpu = dt_gpu(0);
  dt_device_info info;
  if (dt_num_gpus() < 1) {
    printf("SKIP: no GPU (%s)\n", dt_last_error());
    return 0;
  }
  if (dt_device_get_info(gpu, &info) != DT_OK) die("dt_device_get_info");
  printf("# bench_gpu: cuda:0 is %s, compute %d.%d, %d SMs, %.1f GiB\n", info.name, info.compute_major,
         info.compute_minor, info.multiprocessors, (double)info.total_memory / (double)(1 << 30));
  printf("# median of %d timed repetitions after warm-up (best also shown); devtensor and cudaMemcpy alternate\n", REPS);
  fflush(stdout);
  if (!(stream = (cudaStream_t)dt_cuda_stream(gpu))) die("dt_cuda_stream");
  CK(cudaSetDevice(0));
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  bench_add_overhead(gpu);
  bench_alloc(gpu);
  bench_add_bandwidth(gpu);
  bench_matmul(gpu);
  bench_h2d(gpu);
  bench_d2h(gpu);
  bench_reductions(gpu);
  CK(cudaEventDestroy(ev0));
  CK(cudaEventDestroy(ev1));
  return 0;
}

#else /* built without DEVTENSOR_CUDA: nothing to measure */
int main(void) {
  if (dt_num_gpus() < 1) printf("SKIP: no GPU (%s)\n", dt_last_error());
  return 0;
}
#endif
