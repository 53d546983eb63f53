/* With -fopenmp (how a build asks for threads) big elementwise work and reductions are shared
   among a small pool of worker threads on pthreads, started once at the first big call:
   omp_get_max_threads() - 1 of them (OMP_NUM_THREADS is honoured). They are not OpenMP threads:
   libgomp may print "out of memory" and exit the process when it cannot make its team, and it
   spin-waits between regions, which costs a lot on a loaded machine. Here:
   - small work (fewer than two grains of elements) is a plain call, no lock, no thread wake-up;
   - if a worker cannot be started (no memory for its stack) the pool has fewer workers, down to
     none, and the work runs on the calling thread; once started, a dispatch allocates nothing;
   - idle workers spin briefly (DT__POOL_SPIN pause instructions) for the next job, then sleep
     on a condition variable; the caller takes chunks as the workers do and waits (the same
     short spin, then the condition variable) only for chunks a worker has taken, so a worker
     that does not get a core soon costs nothing but its share of the speed-up;
   - waking a sleeping worker costs the caller a system call (tens of microseconds on a VM whose
     idle vCPU halts), more than a job of a few chunks takes: such a small job wakes sleepers
     only every DT__POOL_WAKE_AFTER-th time (a worker still spinning joins it anyway); a worker
     that finds the job it woke for already done spins for the next one instead of sleeping again;
   - a long spin yields the core now and then: a busy machine can put a worker on the caller's
     core, where its spinning would take the time the caller needs;
   - the chunks are split into one contiguous range per thread, and each thread (the caller 0,
     worker i always i) starts on its own range, then takes chunks from the others' ranges; so
     the same part of the data goes to the same core call after call, and stays in that core's
     caches (a VM's two cores may sit on two L3s), while a thread that falls behind still has its
     range finished by the others;
   - one job at a time: a second thread that finds the pool busy runs its work itself;
   - a forked child runs everything on its one thread.
   Chunk boundaries depend on the size of the work only, never on the number of threads, so the
   results (sums included) are the same with any number of threads. */

/* fn(ctx, lo, hi) does items [lo, hi) of a job; fnw(ctx, lo, hi, w) too, w being the index
   (0 .. maxw-1) of the thread that runs it among the job's threads (the caller is 0), for work
   that needs a scratch buffer per thread (made before the job: a job allocates nothing). */
typedef void (*dt__task_fn)(void *ctx, int64_t lo, int64_t hi);
typedef void (*dt__task_w_fn)(void *ctx, int64_t lo, int64_t hi, int w);

#if defined(_OPENMP) && !defined(DEVTENSOR_NO_THREADS) && !defined(_WIN32)
#define DT__POOL 1
#include <omp.h>
#include <pthread.h>
#include <signal.h>

#define DT__POOL_MAX 63 /* workers */

typedef struct dt__pool_t {
  pthread_mutex_t mu;       /* guards everything below but next */
  pthread_cond_t work;      /* a job was opened */
  pthread_cond_t done;      /* busy fell to 0 */
  pthread_mutex_t dispatch; /* held by the thread whose job the pool runs */
  int nworkers;             /* started workers; 0: everything runs on the caller */
  unsigned gen;             /* job number */
  int open;                 /* workers may still join job gen */
  int busy;                 /* workers that joined job gen and have not finished */
  int joined, maxw;         /* threads in job gen (the caller included), the most it takes */
  int sleeping;             /* workers waiting on `work` */
  int lonely;               /* small jobs dispatched in a row without waking them */
  dt__task_fn fn;           /* one of fn, fnw */
  dt__task_w_fn fnw;
  void *ctx;
  int64_t n, grain, nranges;
  int64_t dispatches;       /* jobs that went to the pool (atomic; read by the tests) */
} dt__pool_t;

/* Thread r's range of chunks: next (atomic; taken by any thread) up to end. A cache line each. */
typedef struct dt__pool_range {
  int64_t next, end;
  char pad[48];
} dt__pool_range;
static dt__pool_range dt__pool_ranges[DT__POOL_MAX + 1];

static dt__pool_t dt__pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
                              PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0, 0, 0, 0};
static pthread_once_t dt__pool_once = PTHREAD_ONCE_INIT;

/* Spins before sleeping, in iterations of a pause instruction (a few to a few hundred cycles
   each, by processor): a training step's operations come a few microseconds apart, its serial
   parts (a small layer, the loss) take tens, and on a virtual machine a futex wake costs tens of
   microseconds, more than many of them take; a spin much shorter than DT__POOL_SPIN lets the
   workers fall asleep within each step. The spin yields the core (dt__pool_relax), so on a
   loaded machine it costs little. */
#ifndef DT__POOL_SPIN
#define DT__POOL_SPIN 10000
#endif
#ifndef DT__POOL_WAKE_CHUNKS
#define DT__POOL_WAKE_CHUNKS 8
#endif
#ifndef DT__POOL_WAKE_AFTER
#define DT__POOL_WAKE_AFTER 4
#endif

/* One turn of a spin-wait: a pause, and every DT__POOL_YIELD turns the core, in case the thread
   waited for shares it (a busy machine can put a worker on the caller's core, where its spinning
   would take the time the caller needs). */
#ifndef DT__POOL_YIELD
#define DT__POOL_YIELD 64
#endif
#ifndef DT__POOL_YIELD_AFTER
#define DT__POOL_YIELD_AFTER 256
#endif
static void dt__pool_relax(int spin) {
  DT__CPU_RELAX();
  if (spin >= DT__POOL_YIELD_AFTER && spin % DT__POOL_YIELD == DT__POOL_YIELD - 1) (void)sched_yield();
}

/* Runs chunks of the job until none is left: those of range `home` (mod nranges) first, then
   the other ranges' in turn. w: the thread's index in the job (for fnw). */
static void dt__pool_take(dt__task_fn fn, dt__task_w_fn fnw, void *ctx, int64_t n, int64_t grain, int64_t nranges,
                          int home, int w) {
  int64_t r;
  for (r = 0; r < nranges; r++) {
    dt__pool_range *rg = &dt__pool_ranges[(home + r) % nranges];
    const int64_t end = rg->end;
    int64_t c;
    while ((c = DT__ATOMIC_ADD(&rg->next, 1) - 1) < end) {
      int64_t lo = c * grain, hi = n - lo < grain ? n : lo + grain;
      if (fnw) fnw(ctx, lo, hi, w);
      else fn(ctx, lo, hi);
    }
  }
}

static void *dt__pool_worker(void *arg) {
  unsigned seen = 0;
  const int id = (int)(intptr_t)arg; /* 1 .. nworkers: this worker's range */
  for (;;) {
    dt__task_fn fn;
    dt__task_w_fn fnw;
    void *ctx;
    int64_t n, grain, nranges;
    int w, spin;
    for (spin = 0; spin < DT__POOL_SPIN && DT__ATOMIC_LOAD(&dt__pool.gen) == seen; spin++) dt__pool_relax(spin);
    pthread_mutex_lock(&dt__pool.mu);
    if (dt__pool.gen == seen) {
      dt__pool.sleeping++;
      while (dt__pool.gen == seen) pthread_cond_wait(&dt__pool.work, &dt__pool.mu);
      dt__pool.sleeping--;
    }
    seen = dt__pool.gen;
    if (!dt__pool.open || dt__pool.joined >= dt__pool.maxw) { /* missed it, or it has the threads it takes */
      pthread_mutex_unlock(&dt__pool.mu);
      continue;
    }
    w = dt__pool.joined++;
    DT__ATOMIC_ADD(&dt__pool.busy, 1);
    fn = dt__pool.fn; fnw = dt__pool.fnw; ctx = dt__pool.ctx;
    n = dt__pool.n; grain = dt__pool.grain; nranges = dt__pool.nranges;
    pthread_mutex_unlock(&dt__pool.mu);
    dt__pool_take(fn, fnw, ctx, n, grain, nranges, id, w);
    pthread_mutex_lock(&dt__pool.mu);
    if (DT__ATOMIC_ADD(&dt__pool.busy, -1) == 0) pthread_cond_signal(&dt__pool.done);
    pthread_mutex_unlock(&dt__pool.mu);
  }
  return NULL;
}

static void dt__pool_forked(void) { dt__pool.nworkers = 0; }

/* OMP_NUM_THREADS as read once, when the pool starts: LLVM's libomp sets up (allocates) a
   thread's OpenMP state the first time that thread asks, so asking on every call from every
   user thread could fail there, which libomp reports by exiting. */
static int dt__pool_nt;

static void dt__pool_start(void) {
  int nt = omp_get_max_threads(), i = 0;
  pthread_attr_t at;
  DT__ATOMIC_STORE(&dt__pool_nt, nt < 1 ? 1 : nt);
  if (nt > 1 && pthread_attr_init(&at) == 0) {
    /* workers start with every signal blocked, so that a signal the program handles (SIGINT,
       SIGALRM, ...) goes to one of its own threads, never into a kernel of the pool. Where the
       system headers declare no POSIX signal masks (clang -std=c99 without _POSIX_C_SOURCE), the
       workers take signals like any thread. */
#if defined(SIG_SETMASK) && (!defined(__GLIBC__) || defined(__USE_POSIX199506))
    sigset_t all, old;
    int masked = sigfillset(&all) == 0 && pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
#endif
    pthread_attr_setstacksize(&at, (size_t)1 << 19); /* the kernels need little stack */
    for (; i < nt - 1 && i < DT__POOL_MAX; i++) {
      pthread_t th;
      if (pthread_create(&th, &at, dt__pool_worker, (void *)(intptr_t)(i + 1)) != 0) break; /* fewer workers */
      pthread_detach(th);
    }
#if defined(SIG_SETMASK) && (!defined(__GLIBC__) || defined(__USE_POSIX199506))
    if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
    pthread_attr_destroy(&at);
  }
  if (i > 0) pthread_atfork(NULL, NULL, dt__pool_forked);
  DT__ATOMIC_STORE(&dt__pool.nworkers, i);
}

/* The threads a job may get (the caller and the started workers); starts the pool. */
static int dt__pool_threads(void) {
  pthread_once(&dt__pool_once, dt__pool_start);
  return DT__ATOMIC_LOAD(&dt__pool.nworkers) + 1;
}

/* The threads work is partitioned for (OMP_NUM_THREADS): not the pool's size, so that a
   partition, where it matters, does not depend on whether workers could be started. */
static int dt__cpu_threads(void) {
  pthread_once(&dt__pool_once, dt__pool_start);
  return DT__ATOMIC_LOAD(&dt__pool_nt);
}

/* fn (or fnw, with at most maxw threads) over [0, n) in chunks of grain items: on the pool when
   there are two chunks or more, workers and maxw > 1, else as one plain call on the caller. */
static void dt__par_run(int64_t n, int64_t grain, int maxw, dt__task_fn fn, dt__task_w_fn fnw, void *ctx) {
  if (n <= 0) return;
  if (n >= 2 * grain && maxw > 1) {
    const int64_t nchunks = (n + grain - 1) / grain;
    const int small = grain > 1 && nchunks < DT__POOL_WAKE_CHUNKS; /* a few chunks of elements */
    pthread_once(&dt__pool_once, dt__pool_start);
    if (DT__ATOMIC_LOAD(&dt__pool.nworkers) > 0 && pthread_mutex_trylock(&dt__pool.dispatch) == 0) {
      int wake = 0;
      int64_t nranges = DT__ATOMIC_LOAD(&dt__pool.nworkers) + 1, r; /* a range per thread that may join */
      if (nranges > maxw) nranges = maxw;
      if (nranges > nchunks) nranges = nchunks;
      DT__ATOMIC_ADD(&dt__pool.dispatches, 1);
      for (r = 0; r < nranges; r++) { /* read by the workers after they take the mutex */
        dt__pool_ranges[r].end = (r + 1) * nchunks / nranges;
        DT__ATOMIC_STORE(&dt__pool_ranges[r].next, r * nchunks / nranges);
      }
      pthread_mutex_lock(&dt__pool.mu);
      dt__pool.fn = fn; dt__pool.fnw = fnw; dt__pool.ctx = ctx;
      dt__pool.n = n; dt__pool.grain = grain; dt__pool.nranges = nranges;
      dt__pool.joined = 1; /* the caller is thread 0 */
      dt__pool.maxw = maxw;
      DT__ATOMIC_ADD(&dt__pool.gen, 1u); /* read unlocked by spinning workers */
      dt__pool.open = 1;
      if (dt__pool.sleeping == 0 || !small || ++dt__pool.lonely >= DT__POOL_WAKE_AFTER)
        dt__pool.lonely = 0, wake = 1;
      pthread_mutex_unlock(&dt__pool.mu);
      /* unlocked, so that a woken worker does not block on mu. Only for a job of big chunks (tasks,
         blocks) or of many: waking a sleeping thread costs the caller tens of microseconds on a VM,
         more than a few chunks take, and a worker still spinning joins without it. */
      if (wake) pthread_cond_broadcast(&dt__pool.work);
      dt__pool_take(fn, fnw, ctx, n, grain, nranges, 0, 0);
      pthread_mutex_lock(&dt__pool.mu);
      dt__pool.open = 0; /* every chunk is taken: late workers stay asleep */
      if (dt__pool.busy > 0) { /* a worker is finishing a chunk: spin a little, then sleep */
        int spin;
        pthread_mutex_unlock(&dt__pool.mu);
        for (spin = 0; spin < DT__POOL_SPIN && DT__ATOMIC_LOAD(&dt__pool.busy) > 0; spin++) dt__pool_relax(spin);
        pthread_mutex_lock(&dt__pool.mu);
        while (dt__pool.busy > 0) pthread_cond_wait(&dt__pool.done, &dt__pool.mu);
      }
      pthread_mutex_unlock(&dt__pool.mu);
      pthread_mutex_unlock(&dt__pool.dispatch);
      return;
    }
  }
  if (fnw) fnw(ctx, 0, n, 0);
  else fn(ctx, 0, n);
}
#else
#define DT__POOL 0
static int dt__pool_threads(void) { return 1; }
static int dt__cpu_threads(void) { return 1; }
static void dt__par_run(int64_t n, int64_t grain, int maxw, dt__task_fn fn, dt__task_w_fn fnw, void *ctx) {
  (void)grain; (void)maxw;
  if (n <= 0) return;
  if (fnw) fnw(ctx, 0, n, 0);
  else fn(ctx, 0, n);
}
#endif

static void dt__par_for(int64_t n, int64_t grain, dt__task_fn fn, void *ctx) {
  dt__par_run(n, grain, 1 << 30, fn, NULL, ctx); /* every thread the pool has */
}
/* As dt__par_for, on at most maxw threads, each chunk told its thread's index (below maxw). */
static void dt__par_for_w(int64_t n, int64_t grain, int maxw, dt__task_w_fn fnw, void *ctx) {
  dt__par_run(n, grain, maxw, NULL, fnw, ctx);
}

/* Grains (items per chunk): some ten microseconds of work each. */
#define DT__GRAIN_MEM 32768  /* memory-bound elementwise work: fill, add, cast, axpy */
#define DT__GRAIN_MATH 8192  /* exp, log, sqrt, random */
