/* Threads: 8 threads at once create, compute (broadcasting binary ops,
   matmul, reductions), print and release tensors, train and save small
   networks, and share one tensor through dt_retain/dt_release, dt_to and
   dt_reshape. Half of them provoke errors all along; each thread checks
   that its error state is its own: the clean threads never see an error,
   the failing ones always see exactly theirs. The first GPU query (a lazily
   initialised global) happens in all threads at once.

   Worker threads record problems in their own struct; only the main thread
   uses the harness. Link with -pthread; run under ThreadSanitizer with
     gcc -std=c99 -fsanitize=thread -O1 -g -pthread -I. tests/test_threads.c -lm
   (without -fopenmp: libgomp is not instrumented). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"

#define NTHREADS 8
#ifndef THREAD_ITERS
#define THREAD_ITERS 40
#endif

typedef struct worker {
  int id;
  pthread_t th;
  int problems;
  char first[2048];
  int errors_made;     /* errors this thread provoked on purpose */
  int ngpus;
  dt_device dev;       /* the device it works on */
} worker;

static dt_tensor *SHARED;          /* f32 (32, 32) of 2s, shared by every thread (on the first device of the run) */
static pthread_barrier_t START;
static long handler_calls;         /* updated atomically */

static void on_error(dt_status s, const char *msg, void *user) {
  (void)s; (void)msg; (void)user;
  __atomic_add_fetch(&handler_calls, 1, __ATOMIC_RELAXED);
}

static void problem(worker *w, int line, const char *what) {
  if (!w->problems) snprintf(w->first, sizeof w->first, "thread %d, line %d: %s [status %d, \"%s\"]", w->id, line, what,
                             (int)dt_last_status(), dt_last_error());
  w->problems++;
}
#define W_CHECK(cond) do { if (!(cond)) problem(w, __LINE__, #cond); } while (0)
/* a clean thread's error state must stay empty; a failing thread's must still hold its own last error */
#define W_STATE() do { if (w->id % 2 == 0) { W_CHECK(dt_last_status() == DT_OK && dt_last_error()[0] == 0); } \
    else if (w->errors_made) { W_CHECK(dt_last_status() == DT_ERR_SHAPE && strstr(dt_last_error(), own) != NULL); } } while (0)

static double item_release(dt_tensor *t) {
  double v = t ? dt_item(t) : -1e300;
  dt_release(t);
  return v;
}

static void *work(void *arg) {
  worker *w = (worker *)arg;
  dt_device dv = w->dev; /* where this thread works */
  char own[64], buf[256], path[128];
  int it;
  snprintf(own, sizeof own, "negative dimension -%d ", 1000 + w->id);
  snprintf(path, sizeof path, "build/test_threads_%ld_%d.safetensors", (long)getpid(), w->id);
  dt_clear_error();
  pthread_barrier_wait(&START);
  /* everyone asks for the GPUs at once: the lazily initialised count */
  w->ngpus = dt_num_gpus();
  dt_clear_error(); /* dt_num_gpus leaves the reason when there is none */
  for (it = 0; it < THREAD_ITERS; it++) {
    const double fill = 1 + w->id;
    dt_tensor *a = dt_full(dt_shape2(16, 24), fill, dv), *b = dt_ones(dt_shape1(24), dv);
    dt_tensor *c = dt_add(a, b), *d, *m1, *m2, *p, *r, *s;
    W_STATE();
    W_CHECK(item_release(dt_sum(c)) == 16 * 24 * (fill + 1));
    d = dt_mul(c, b);
    W_CHECK(item_release(dt_mean(d)) == fill + 1);
    W_CHECK(item_release(dt_norm(b)) > 4.898 && item_release(dt_norm(b)) < 4.899);
    r = dt_sum_dim(d, 0);
    W_CHECK(r && dt_numel(r) == 24 && item_release(dt_sum(r)) == 16 * 24 * (fill + 1));
    dt_release(r);
    /* a matmul big enough for the packed kernel (and its buffer), and a batched one */
    m1 = dt_full(dt_shape2(40, 40), 1, dv);
    m2 = dt_full(dt_shape2(40, 40), fill, dv);
    p = dt_matmul(m1, m2);
    W_CHECK(p && item_release(dt_mean(p)) == 40 * fill);
    dt_release(p); dt_release(m1); dt_release(m2);
    m1 = dt_ones(dt_shape3(2, 3, 4), dv);
    m2 = dt_full(dt_shape3(2, 4, 5), fill, dv);
    p = dt_matmul(m1, m2);
    W_CHECK(p && item_release(dt_sum(p)) == 2 * 3 * 5 * 4 * fill);
    dt_release(p); dt_release(m1); dt_release(m2);
    /* printing */
    s = dt_full(dt_shape1(2), fill, dv);
    W_CHECK(dt_snprint(buf, sizeof buf, s) > 0);
    {
      char want[64];
      if (dv.type == DT_CUDA) snprintf(want, sizeof want, "tensor([%d., %d.], device='cuda:%d')", (int)fill, (int)fill, dv.index);
      else snprintf(want, sizeof want, "tensor([%d., %d.])", (int)fill, (int)fill);
      W_CHECK(strcmp(buf, want) == 0);
    }
    dt_release(s);
    /* the shared tensor: more references, views and copies, from every thread */
    {
      /* on another GPU than SHARED's, dt_to and dt_copyto are peer copies */
      dt_tensor *h = dt_retain(SHARED), *h2 = dt_to(SHARED, dv), *v = dt_reshape(SHARED, dt_shape1(-1));
      dt_tensor *cp = dt_copyto(SHARED, dv);
      W_CHECK(h == SHARED && v && dt_numel(v) == 1024);
      W_CHECK(dt_device_equal(dv, dt_device_of(SHARED)) ? h2 == SHARED : (h2 != SHARED && item_release(dt_sum(h2)) == 2048));
      W_CHECK(item_release(dt_sum(v)) == 2048 && item_release(dt_sum(cp)) == 2048);
      dt_release(cp); dt_release(v); dt_release(h2); dt_release(h);
    }
    W_STATE();
    /* the failing threads provoke their own error, with their own numbers in it */
    if (w->id % 2 == 1) {
      dt_tensor *bad = dt_zeros(dt_shape2(3, -(1000 + w->id)), dv);
      W_CHECK(bad == NULL);
      w->errors_made++;
      W_CHECK(dt_last_status() == DT_ERR_SHAPE && strstr(dt_last_error(), own) != NULL);
    }
    /* a small network: forward, loss, backward, step; sometimes save and load */
    {
      dt_module *net = dt_sequential();
      dt_tensor *x = dt_randn(dt_shape2(8, 3), dv), *y = dt_rand(dt_shape2(8, 1), dv), *pred, *g, *gx;
      W_CHECK(dt_sequential_add(net, dt_linear(3, 4)) == DT_OK);
      W_CHECK(dt_sequential_add(net, dt_relu_layer()) == DT_OK);
      W_CHECK(dt_sequential_add(net, dt_linear(0, 1)) == DT_OK);
      W_CHECK(dt_module_to(net, dv) == DT_OK);
      pred = dt_forward(net, x);
      g = pred ? dt_mse_loss_grad(pred, y) : NULL;
      W_CHECK(dt_zero_grad(net) == DT_OK);
      gx = g ? dt_backward(net, g) : NULL;
      W_CHECK(gx && dt_dim(gx, 0) == 8 && dt_dim(gx, 1) == 3);
      W_CHECK(dt_sgd_step(net, 0.01) == DT_OK);
      if (it % 8 == 0) {
        W_CHECK(dt_module_save(net, path) == DT_OK);
        W_CHECK(dt_module_load(net, path) == DT_OK);
      }
      dt_release(gx); dt_release(g); dt_release(pred); dt_release(x); dt_release(y);
      dt_module_free(net);
    }
    W_STATE();
    dt_release(a); dt_release(b); dt_release(c); dt_release(d);
  }
  remove(path);
  return NULL;
}

/* 8 threads at once on `ndev` devices (thread i on devs[i % ndev]); every
   thread's work checked, every device's memory back where it was. */
static void threads_on(const dt_device *devs, int ndev) {
  worker w[NTHREADS];
  dt_memory_stats before[NTHREADS], after;
  int i, made = 0, ngpus0;
  memset(w, 0, sizeof w);
  handler_calls = 0;
  for (i = 0; i < ndev; i++) { /* a first matmul: a GPU's cuBLAS workspace stays allocated for the process */
    dt_tensor *m = dt_ones(dt_shape2(2, 2), devs[i]), *p = dt_matmul(m, m);
    T_CHECK(p != NULL);
    dt_release(p); dt_release(m);
    T_CHECK(dt_memory_stats_get(devs[i], &before[i]) == DT_OK);
  }
  SHARED = dt_full(dt_shape2(32, 32), 2, devs[0]);
  T_CHECK(SHARED != NULL);
  T_CHECK(pthread_barrier_init(&START, NULL, NTHREADS) == 0);
  dt_set_error_handler(on_error, NULL);
  for (i = 0; i < NTHREADS; i++) {
    w[i].id = i;
    w[i].dev = devs[i % ndev];
    T_CHECK(pthread_create(&w[i].th, NULL, work, &w[i]) == 0);
  }
  for (i = 0; i < NTHREADS; i++) pthread_join(w[i].th, NULL);
  dt_set_error_handler(NULL, NULL);
  pthread_barrier_destroy(&START);
  ngpus0 = dt_num_gpus();
  for (i = 0; i < NTHREADS; i++) {
    T_CHECK_MSG(w[i].problems == 0, "%d problems; the first: %s", w[i].problems, w[i].first);
    T_CHECK(w[i].ngpus == ngpus0);
    made += w[i].errors_made;
  }
  T_CHECK(made == (NTHREADS / 2) * THREAD_ITERS);
  /* the handler ran once per error: the provoked ones, and dt_num_gpus's reason when there is no GPU */
  T_CHECK_MSG(handler_calls == made + (ngpus0 == 0 ? NTHREADS : 0), "%ld handler calls, %d errors made", handler_calls, made);
  /* the shared tensor is intact and every thread's memory is back */
  T_CHECK(item_release(dt_sum(SHARED)) == 2048);
  dt_release(SHARED);
  for (i = 0; i < ndev; i++) {
    T_CHECK(dt_memory_stats_get(devs[i], &after) == DT_OK);
    T_CHECK_MSG(after.allocated == before[i].allocated, "device %d: %zu bytes allocated before, %zu after", i,
                before[i].allocated, after.allocated);
  }
  /* the main thread's error state was never touched by the workers */
  dt_clear_error();
}

static void test_threads(void) {
  dt_device cpu = dt_cpu();
  threads_on(&cpu, 1);
}

/* the same on the GPUs (spread over all of them), where there are any */
static void test_threads_gpu(void) {
  dt_device devs[NTHREADS];
  int i, n = dt_num_gpus();
  dt_clear_error();
  if (n == 0) T_SKIP("no GPU on this machine");
  if (n > NTHREADS) n = NTHREADS;
  for (i = 0; i < n; i++) devs[i] = dt_gpu(i);
  threads_on(devs, n);
}

/* The CPU's caching allocator from 8 threads at once: each makes and releases tensors of many
   sizes (the same size classes as the others, so blocks pass from thread to thread through the
   cache), fills each with its own number and checks that nobody else wrote into it; afterwards
   nothing is allocated that was not before and dt_empty_cache gives every cached byte back. */
static void *churn(void *arg) {
  worker *w = (worker *)arg;
  static float bufs[NTHREADS][5000];
  float *buf = bufs[w->id];
  int it, j;
  pthread_barrier_wait(&START);
  for (it = 0; it < THREAD_ITERS * 4; it++) {
    dt_tensor *t[6];
    for (j = 0; j < 6; j++) t[j] = dt_full(dt_shape1(1 + ((it * 7 + j * 131 + w->id) % 5000)), w->id + 1, dt_cpu());
    for (j = 0; j < 6; j++) {
      int64_t k, n = t[j] ? dt_numel(t[j]) : 0, bad = 0;
      W_CHECK(t[j] && dt_to_host(t[j], buf, (size_t)n * sizeof(float)) == DT_OK);
      for (k = 0; k < n; k++) bad += buf[k] != (float)(w->id + 1);
      W_CHECK(bad == 0);
    }
    for (j = 0; j < 6; j++) dt_release(t[j]);
  }
  return NULL;
}
static void test_cpu_allocator_threads(void) {
  worker w[NTHREADS];
  dt_memory_stats before, after;
  int i;
  memset(w, 0, sizeof w);
  T_CHECK(dt_memory_stats_get(dt_cpu(), &before) == DT_OK);
  T_CHECK(pthread_barrier_init(&START, NULL, NTHREADS) == 0);
  for (i = 0; i < NTHREADS; i++) {
    w[i].id = i;
    T_CHECK(pthread_create(&w[i].th, NULL, churn, &w[i]) == 0);
  }
  for (i = 0; i < NTHREADS; i++) pthread_join(w[i].th, NULL);
  pthread_barrier_destroy(&START);
  for (i = 0; i < NTHREADS; i++) T_CHECK_MSG(w[i].problems == 0, "%d problems; the first: %s", w[i].problems, w[i].first);
  T_CHECK(dt_memory_stats_get(dt_cpu(), &after) == DT_OK);
  T_CHECK_MSG(after.allocated == before.allocated, "%zu bytes allocated before, %zu after", before.allocated, after.allocated);
  T_CHECK(after.reserved >= after.allocated);
  T_CHECK(dt_empty_cache(dt_cpu()) == DT_OK && dt_memory_stats_get(dt_cpu(), &after) == DT_OK);
  T_CHECK_MSG(after.reserved == after.allocated, "after dt_empty_cache: %zu reserved, %zu allocated", after.reserved,
              after.allocated);
}

/* The main thread's error is not another thread's. */
static void *fail_once(void *arg) {
  (void)arg;
  dt_clear_error();
  if (dt_sum(NULL) != NULL || dt_last_status() != DT_ERR_INVALID_ARGUMENT) return (void *)1;
  return NULL;
}
/* dt_graph_end on another thread than dt_graph_begin's: refused, the capture goes on, and its
   own thread ends it (on the CPU and on a GPU alike) */
static void *end_elsewhere(void *arg) {
  dt_device *d = (dt_device *)arg;
  dt_graph *g = dt_graph_end(*d);
  int ok = g == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT && strstr(dt_last_error(), "begun on another thread") != NULL;
  dt_graph_free(g);
  return ok ? NULL : (void *)1;
}
static void test_graph_end_on_its_thread(void) {
  dt_device devs[2];
  int k, n = dt_num_gpus() > 0 ? 2 : 1;
  devs[0] = dt_cpu(); devs[1] = dt_gpu(0);
  for (k = 0; k < n; k++) {
    pthread_t th;
    void *res = (void *)2;
    dt_tensor *a = dt_ones(dt_shape1(4), devs[k]), *b = NULL;
    dt_graph *g;
    T_CHECK(a && dt_graph_begin(devs[k]) == DT_OK);
    b = dt_add(a, a);
    T_CHECK(pthread_create(&th, NULL, end_elsewhere, &devs[k]) == 0);
    pthread_join(th, &res);
    T_CHECK_MSG(res == NULL, "the other thread's dt_graph_end was not refused as it should be (device %d)", k);
    g = dt_graph_end(devs[k]);
    T_CHECK_MSG(g != NULL, "%s", dt_last_error());
    T_CHECK(g && dt_graph_replay(g) == DT_OK);
    {
      float h[4] = {0, 0, 0, 0};
      T_CHECK(b && dt_to_host(b, h, sizeof h) == DT_OK && h[0] == 2.0f && h[3] == 2.0f);
    }
    dt_graph_free(g);
    dt_release(a); dt_release(b);
  }
}

static void test_error_is_per_thread(void) {
  pthread_t th;
  void *res = (void *)2;
  dt_tensor *t = dt_zeros(dt_shape1(-7), dt_cpu());
  T_CHECK(t == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(pthread_create(&th, NULL, fail_once, NULL) == 0);
  pthread_join(th, &res);
  T_CHECK(res == NULL);
  T_CHECK(dt_last_status() == DT_ERR_SHAPE);
  T_CHECK_MSG(strstr(dt_last_error(), "dt_zeros: negative dimension -7") == dt_last_error(), "%s", dt_last_error());
}

/* The generator is one consistent state: with dt_manual_seed called again and
   again (seeds 2, 3, ...) while other threads draw, the draws under seed s
   are exactly draws 0, 1, ..., c_s - 1 of s, each once. Every recorded draw
   is looked up among those: a draw that read the seed and the counter apart
   pairs a new seed with the old count (or the old seed with the count reset)
   and leaves a draw that is no seed's next one, or one drawn twice. To make
   the reseeding thread stop between its two stores often enough, the main
   thread interrupts it with a signal every 100 us; the handler spins ~30 us
   while the others draw (the new code holds its lock there: they wait). */
#define RNG_DRAWERS 3
#ifndef RNG_DRAWS
#define RNG_DRAWS 20000
#endif
#ifndef RNG_SPIN
#define RNG_SPIN 300
#endif
#ifndef RNG_SIGNALS
#define RNG_SIGNALS 2000
#endif
/* a draw's numbers; the seed it must be under is in [lo, hi + 1]: the seeds published before and after it */
typedef struct rng_rec { float v[4]; uint64_t lo, hi; int seen; } rng_rec;
static rng_rec *rng_out;
static int rng_stop, rng_failed, rng_count[RNG_DRAWERS];
static uint64_t rng_pub = 1; /* the last seed set */
static volatile int rng_sink; /* spin loops the compiler keeps */
static void rng_pause(int sig) {
  int i;
  (void)sig;
  for (i = 0; i < 30000; i++) rng_sink = i;
}
static void *rng_reseed(void *arg) {
  uint64_t s = 2;
  (void)arg;
  while (!DT__ATOMIC_LOAD(&rng_stop)) {
    int i;
    dt_manual_seed(s);
    DT__ATOMIC_STORE(&rng_pub, s);
    s++;
    for (i = 0; i < RNG_SPIN; i++) rng_sink = i; /* a draw or so per seed */
  }
  return NULL;
}
static void *rng_draw(void *arg) {
  int id = (int)(intptr_t)arg, i;
  rng_rec *out = rng_out + (size_t)id * RNG_DRAWS;
  for (i = 0; i < RNG_DRAWS && !DT__ATOMIC_LOAD(&rng_stop); i++) {
    dt_tensor *t;
    out[i].lo = DT__ATOMIC_LOAD(&rng_pub);
    t = dt_rand(dt_shape1(4), dt_cpu());
    out[i].hi = DT__ATOMIC_LOAD(&rng_pub);
    if (!t || dt_to_host(t, out[i].v, sizeof out[i].v) != DT_OK) DT__ATOMIC_ADD(&rng_failed, 1);
    dt_release(t);
  }
  rng_count[id] = i;
  return NULL;
}
static int rng_cmp(const void *a, const void *b) { return memcmp(a, b, sizeof(float[4])); }
static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static void test_seed_while_drawing(void) {
  pthread_t re, dr[RNG_DRAWERS];
  struct sigaction sa, old;
  size_t i, j, n = (size_t)RNG_DRAWERS * RNG_DRAWS, matched = 0, twice = 0, nseeds;
  uint64_t s, *seeds;
  rng_out = (rng_rec *)calloc(n, sizeof *rng_out);
  T_CHECK(rng_out != NULL);
  if (!rng_out) return;
  rng_stop = 0; rng_failed = 0; rng_pub = 1;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = rng_pause;
  sigemptyset(&sa.sa_mask);
  T_CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
  dt_manual_seed(1);
  T_CHECK(pthread_create(&re, NULL, rng_reseed, NULL) == 0);
  for (i = 0; i < RNG_DRAWERS; i++) T_CHECK(pthread_create(&dr[i], NULL, rng_draw, (void *)(intptr_t)i) == 0);
  for (i = 0; i < RNG_SIGNALS; i++) {
    struct timespec ts = {0, 100000};
    pthread_kill(re, SIGUSR1);
    nanosleep(&ts, NULL);
  }
  DT__ATOMIC_STORE(&rng_stop, 1);
  for (i = 0; i < RNG_DRAWERS; i++) pthread_join(dr[i], NULL);
  pthread_join(re, NULL);
  sigaction(SIGUSR1, &old, NULL);
  T_CHECK(rng_failed == 0);
  /* the unused records at the end of each drawer's share: zeros, no draw's numbers (those are in (0, 1)) */
  for (i = 0, n = 0; i < RNG_DRAWERS; i++) {
    memmove(rng_out + n, rng_out + (size_t)i * RNG_DRAWS, (size_t)rng_count[i] * sizeof *rng_out);
    n += (size_t)rng_count[i];
  }
  qsort(rng_out, n, sizeof *rng_out, rng_cmp);
  /* the seeds some draw may be under */
  for (i = 0, nseeds = 0; i < n; i++) nseeds += (size_t)(rng_out[i].hi - rng_out[i].lo + 2);
  seeds = (uint64_t *)malloc((nseeds + 1) * sizeof *seeds);
  T_CHECK(seeds != NULL);
  if (!seeds) { free(rng_out); return; }
  for (i = 0, nseeds = 0; i < n; i++)
    for (s = rng_out[i].lo; s <= rng_out[i].hi + 1; s++) seeds[nseeds++] = s;
  qsort(seeds, nseeds, sizeof *seeds, u64_cmp);
  /* each such seed's draws 0, 1, ... until one was not drawn */
  for (j = 0; j < nseeds; j++) {
    uint64_t k;
    if (j && seeds[j] == seeds[j - 1]) continue;
    s = seeds[j];
    for (k = 0;; k++) {
      rng_rec want, *got;
      memset(&want, 0, sizeof want);
      T_CHECK(dt__cpu_backend()->random(0, 0, s, k, NULL, 4, want.v) == DT_OK);
      got = (rng_rec *)bsearch(&want, rng_out, n, sizeof *rng_out, rng_cmp);
      if (!got) break;
      while (got > rng_out && rng_cmp(got - 1, &want) == 0) got--;
      for (; got < rng_out + n && rng_cmp(got, &want) == 0; got++) { twice += got->seen; got->seen = 1; matched++; }
    }
  }
  T_CHECK_MSG(matched == n && twice == 0, "of %zu draws under %llu seeds, %zu are some seed's next draw, %zu repeat one: "
              "a torn (seed, draw) state", n, (unsigned long long)DT__ATOMIC_LOAD(&rng_pub), matched - twice, twice);
  free(seeds);
  free(rng_out);
  dt_manual_seed(67280421310721ull);
}

/* Threads waiting for another to ask the driver for the GPU count give the
   processor away instead of spinning: four threads wait 500 ms (the state
   set by hand to "being asked"), the process uses little CPU meanwhile. */
static int gpu_waiters_seen;
static double gpu_waiters_cpu[4]; /* each waiter's own CPU seconds (not OpenMP's idle workers') */
static void *gpu_wait(void *arg) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  (void)dt_num_gpus();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  gpu_waiters_cpu[(intptr_t)arg] = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  DT__ATOMIC_ADD(&gpu_waiters_seen, 1);
  return NULL;
}
static void test_gpu_count_wait_yields(void) {
  pthread_t th[4];
  int i, n = dt_num_gpus();
  double cpu = 0;
  struct timespec ts = {0, 500000000};
  dt_clear_error();
  T_CHECK(n == dt__gpu_n && DT__ATOMIC_LOAD(&dt__gpu_state) == 2);
  gpu_waiters_seen = 0;
  DT__ATOMIC_STORE(&dt__gpu_state, 1); /* as if another thread were asking the driver */
  for (i = 0; i < 4; i++) T_CHECK(pthread_create(&th[i], NULL, gpu_wait, (void *)(intptr_t)i) == 0);
  nanosleep(&ts, NULL);
  T_CHECK(DT__ATOMIC_LOAD(&gpu_waiters_seen) == 0); /* still waiting */
  DT__ATOMIC_STORE(&dt__gpu_state, 2);
  for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
  T_CHECK(gpu_waiters_seen == 4);
  for (i = 0; i < 4; i++) cpu += gpu_waiters_cpu[i];
  /* spinning: 500 to 2000 ms of CPU (one to four cores; 160 ms on 2 cores at load 13); yielding and sleeping: ~10 ms */
  T_CHECK_MSG(cpu < 0.06, "the waiting threads used %.0f ms of CPU in 500 ms", 1000.0 * cpu);
  dt_clear_error();
}

/* Big enough for the parallel loops (elementwise and reductions from 65536
   elements, the packed matmul's row tasks): four threads each running them at
   once, so that with -fopenmp the OpenMP teams of several threads overlap
   (make tsan-omp runs this under ThreadSanitizer with clang's libomp). */
typedef struct omp_worker { pthread_t th; int id, problems; } omp_worker;
static void *omp_work(void *arg) {
  omp_worker *w = (omp_worker *)arg;
  int it;
  for (it = 0; it < 3; it++) {
    const double f = 1 + w->id;
    dt_tensor *a = dt_full(dt_shape2(300, 300), f, dt_cpu()), *b = dt_ones(dt_shape2(300, 300), dt_cpu());
    dt_tensor *c = dt_add(a, b), *d = dt_mul(c, a), *e = dt_mul_scalar(d, 0.5), *m = dt_matmul(a, b);
    dt_tensor *sd = e ? dt_sum_dim(e, 1) : NULL;
    if (!c || !d || !e || !m || !sd) w->problems++;
    else {
      /* sums of small integers: exact in any order */
      if (item_release(dt_sum(c)) != 90000 * (f + 1)) w->problems++;
      if (item_release(dt_sum(e)) != 90000 * (f + 1) * f / 2) w->problems++;
      if (item_release(dt_mean(m)) != 300 * f) w->problems++;
      if (item_release(dt_sum(sd)) != 90000 * (f + 1) * f / 2) w->problems++;
    }
    dt_release(a); dt_release(b); dt_release(c); dt_release(d); dt_release(e); dt_release(m); dt_release(sd);
  }
  return NULL;
}
static void test_parallel_loops_from_threads(void) {
  omp_worker w[4];
  int i;
  memset(w, 0, sizeof w);
  for (i = 0; i < 4; i++) { w[i].id = i; T_CHECK(pthread_create(&w[i].th, NULL, omp_work, &w[i]) == 0); }
  for (i = 0; i < 4; i++) pthread_join(w[i].th, NULL);
  for (i = 0; i < 4; i++) T_CHECK_MSG(w[i].problems == 0, "thread %d: %d wrong results", i, w[i].problems);
}

/* fork() while other threads allocate, draw random numbers and set error handlers: the child
   must find every lock free (the allocator's, the generator's, the error handler's). Before
   they were guarded, 41-60 of 200 children hung at their first dt_empty (41 of 100 here). */
static volatile int fork_stop;
static void *fork_churn(void *arg) {
  (void)arg;
  while (!fork_stop) {
    dt_tensor *x = dt_empty(dt_shape1(1000), DT_F32, dt_cpu()), *r = dt_rand(dt_shape1(8), dt_cpu());
    dt_set_error_handler(NULL, NULL);
    dt_release(x); dt_release(r);
  }
  return NULL;
}
static void test_fork_while_threads_allocate(void) {
  pthread_t th[2];
  int i, hung = 0, failed = 0;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  T_SKIP("fork of a threaded process under a sanitizer (its own runtime locks)");
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
  T_SKIP("fork of a threaded process under a sanitizer (its own runtime locks)");
#endif
#endif
  fork_stop = 0;
  for (i = 0; i < 2; i++) T_CHECK(pthread_create(&th[i], NULL, fork_churn, NULL) == 0);
  for (i = 0; i < 50; i++) {
    int st = 0;
    pid_t p = fork();
    if (p == 0) {
      dt_tensor *x, *r;
      alarm(10);
      x = dt_empty(dt_shape1(16), DT_F32, dt_cpu());
      r = dt_rand(dt_shape1(4), dt_cpu());
      dt_set_error_handler(NULL, NULL);
      _exit(x && r ? 0 : 3);
    }
    if (p < 0) { failed++; continue; }
    if (waitpid(p, &st, 0) != p) { failed++; continue; }
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) hung++;
    else if (WIFSIGNALED(st) || WEXITSTATUS(st) == 3) failed++; /* (under valgrind a child's exit status is its leak report's) */
  }
  fork_stop = 1;
  for (i = 0; i < 2; i++) pthread_join(th[i], NULL);
  T_CHECK_MSG(hung == 0 && failed == 0, "of 50 children, %d hung on a lock and %d failed", hung, failed);
}

/* The CPU pool's workers block every signal: a signal sent to the process goes to a thread of
   the program's own, never into a pool kernel. With the main thread blocking SIGUSR1 the signal
   must stay pending (on the old code a worker, which had it unblocked, took it at once). */
static volatile sig_atomic_t usr1_hits, usr1_off_main;
static pthread_t usr1_main;
static void on_usr1(int sig) {
  (void)sig;
  usr1_hits = usr1_hits + 1; /* not ++: C++20 deprecates it on a volatile */
  if (!pthread_equal(pthread_self(), usr1_main)) usr1_off_main = usr1_off_main + 1;
}
static void test_pool_workers_block_signals(void) {
  struct sigaction sa, old_sa;
  sigset_t usr1, old_mask;
  struct timespec ts = {0, 50 * 1000 * 1000};
  dt_tensor *a, *b;
#if !defined(_OPENMP)
  T_SKIP("no CPU pool without -fopenmp");
#endif
  usr1_main = pthread_self();
  usr1_hits = 0;
  usr1_off_main = 0;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  T_CHECK(sigaction(SIGUSR1, &sa, &old_sa) == 0);
  a = dt_ones(dt_shape1(1 << 22), dt_cpu()); /* big enough for the pool: starts its workers */
  b = a ? dt_add(a, a) : NULL;
  T_CHECK(b != NULL && item_release(dt_sum(b)) == 2.0 * (1 << 22));
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  T_CHECK(pthread_sigmask(SIG_BLOCK, &usr1, &old_mask) == 0);
  kill(getpid(), SIGUSR1);
  nanosleep(&ts, NULL);
  T_CHECK_MSG(usr1_hits == 0, "a signal the program blocks was taken by %d other thread(s)", (int)usr1_off_main);
  T_CHECK(pthread_sigmask(SIG_SETMASK, &old_mask, NULL) == 0); /* now it is delivered, here */
  nanosleep(&ts, NULL);
  T_CHECK(usr1_hits == 1 && usr1_off_main == 0);
  sigaction(SIGUSR1, &old_sa, NULL);
  dt_release(a); dt_release(b);
}

int main(void) {
  T_RUN(test_pool_workers_block_signals);
  T_RUN(test_graph_end_on_its_thread);
  T_RUN(test_seed_while_drawing);
  T_RUN(test_gpu_count_wait_yields);
  T_RUN(test_parallel_loops_from_threads);
  T_RUN(test_threads);
  T_RUN(test_threads_gpu);
  T_RUN(test_error_is_per_thread);
  T_RUN(test_cpu_allocator_threads);
  T_RUN(test_fork_while_threads_allocate);
  return t_finish();
}
