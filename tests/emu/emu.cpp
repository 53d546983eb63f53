/* tests/emu/emu.cpp — a CUDA runtime and cuBLAS emulator for testing
   devtensor_cuda.cu on a machine without a GPU (a test double; see
   cuda_runtime.h). Built as a shared library (libcudart_emu.so) so a test can
   interpose cudaMalloc exactly as it would over the real libcudart.

   What it models:
   - devices (DTEMU_GPUS), each with DTEMU_MEM_MB of memory; the current device
     is per host thread, as in CUDA;
   - streams as worker threads running their queue in order; the legacy stream
     (a null handle) per device; events recorded on and waited for by streams;
   - copies with CUDA's host-side timing: a copy from pageable memory to the
     device returns once the source was read, a copy to pageable memory waits,
     copies with page-locked memory and device-to-device copies are queued;
   - kernels: each block's threads run one after another, or as fibers (ucontext)
     switching at __syncthreads and __shfl_*_sync when the launch is marked
     cooperative; the fibers of a block meet at barriers like a real block, and a
     barrier that not all threads reach is reported (divergent barrier);
   - cuBLAS gemm (column-major, double accumulation) on the handle's stream;
   - cuDNN's NCHW convolutions (forward, backward data, backward filter) as plain loops in
     double on the handle's stream, with descriptors checked as cuDNN checks them.

   What it checks, aborting with a message (these are bugs in the caller, which
   a GPU would report as an error or a crash, or not at all):
   - launch configurations beyond CUDA's limits, a stream used with another
     device current, a cuBLAS handle used with another device current;
   - copies whose kind does not match the pointers, device ranges that run past
     their allocation, cuBLAS operands outside their allocation;
   - cudaFree of something that is not a device allocation.
   Fresh device memory is filled with 0xff bytes (NaN, -1), so reading memory
   nobody wrote shows up in results; with memory protection keys (x86 PKU),
   device memory faults when a host thread touches it (see device_map). */
/* _FORTIFY_SOURCE turns the C library's longjmp into __longjmp_chk, which refuses
   a jump between the scheduler's stack and a fiber's (Ubuntu's gcc enables it) */
#undef _FORTIFY_SOURCE
#include "cuda_runtime.h"
#include "cublas_v2.h"
#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "nccl.h"
#include "cudnn.h"

#include <setjmp.h>
#include <ucontext.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define DTEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DTEMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define DTEMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DTEMU_TSAN 1
#endif
#endif
#ifdef DTEMU_TSAN
/* ThreadSanitizer follows fibers through its own API, and only across swapcontext */
extern "C" void *__tsan_get_current_fiber(void);
extern "C" void *__tsan_create_fiber(unsigned flags);
extern "C" void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif
#ifdef DTEMU_ASAN
extern "C" void __asan_poison_memory_region(void const volatile *addr, size_t size);
extern "C" void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old);
#endif

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

namespace {

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "dtemu: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  abort();
}

/* DTEMU_ORDER=reverse runs blocks and threads last to first (an order
   dependence between them is a race on a GPU); DTEMU_SMS the multiprocessor
   count reported (4; the H100 has 132), which steers the reductions' splits */
bool g_reverse = [] { const char *v = getenv("DTEMU_ORDER"); return v && strcmp(v, "reverse") == 0; }();
int g_sms = [] { const char *v = getenv("DTEMU_SMS"); int n = v ? atoi(v) : 0; return n > 0 ? n : 4; }();

thread_local cudaError_t t_last = cudaSuccess;
thread_local int t_dev = 0;

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) t_last = e;
  return e;
}

int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

/* ---- device memory the host cannot touch ----
   Where the CPU has memory protection keys (x86 PKU), device memory is mapped
   with its own key, which host threads have access-disabled and stream workers
   enabled: a host-side read or write of device memory (a bug a GPU punishes
   with a crash or garbage) faults at once, with the stack that did it.
   Elsewhere (or DTEMU_NO_PKEY=1) device memory is ordinary heap memory. */

int g_pkey = -1;

void pkey_init() {
#ifdef PKEY_DISABLE_ACCESS
  const char *off = getenv("DTEMU_NO_PKEY");
  if (off && *off && *off != '0') return;
  g_pkey = pkey_alloc(0, 0);
  if (g_pkey >= 0) pkey_set(g_pkey, PKEY_DISABLE_ACCESS); /* this thread and the threads it starts */
#endif
}

/* the calling thread's access to device memory: set, returning the old setting */
int device_access(int allow) {
#ifdef PKEY_DISABLE_ACCESS
  if (g_pkey < 0) return 1;
  int old = pkey_get(g_pkey);
  pkey_set(g_pkey, allow ? 0 : PKEY_DISABLE_ACCESS);
  return old == 0;
#else
  (void)allow;
  return 1;
#endif
}

size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

void *device_map(size_t n) {
  if (g_pkey < 0) {
    void *m = nullptr;
    return posix_memalign(&m, 256, n) == 0 ? m : nullptr; /* any size; ASan's redzone right after n */
  }
  size_t len = page_round(n);
  void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
#ifdef PKEY_DISABLE_ACCESS
  if (pkey_mprotect(m, len, PROT_READ | PROT_WRITE, g_pkey) != 0) die("pkey_mprotect failed");
#endif
#ifdef DTEMU_ASAN
  if (len > n) __asan_poison_memory_region((char *)m + n, len - n); /* past the end, as the heap's redzones */
#endif
  return m;
}

void device_unmap(void *p, size_t n) {
  if (g_pkey < 0) { free(p); return; }
  size_t len = page_round(n);
#ifdef DTEMU_ASAN
  __asan_unpoison_memory_region(p, len);
#endif
  munmap(p, len);
}

/* ---- streams ---- */

struct Stream {
  int dev;
  std::mutex mu;
  std::condition_variable cv, idle;
  std::deque<std::function<void()>> q;
  uint64_t pushed = 0, done = 0; /* work items queued / finished */
  std::thread worker;
  /* stream capture: while capturing, pushed work goes to `cap` instead of the queue (any
     thread's, as CUDA's); cap_invalid: a prohibited call invalidated it (later work dropped) */
  bool capturing = false, cap_invalid = false;
  int cap_mode = 0;
  std::thread::id cap_thread;
  std::vector<std::function<void()>> cap;
  explicit Stream(int d) : dev(d) {
    worker = std::thread([this] { run(); });
  }
  void run() {
    device_access(1); /* the "GPU" side */
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      cv.wait(lk, [this] { return !q.empty(); }); /* a worker lives as long as the process */
      std::function<void()> f = std::move(q.front());
      q.pop_front();
      lk.unlock();
      f();
      lk.lock();
      done++;
      idle.notify_all();
    }
  }
  void push(std::function<void()> f) {
    std::lock_guard<std::mutex> lk(mu);
    if (capturing) {
      if (!cap_invalid) cap.push_back(std::move(f));
      return;
    }
    q.push_back(std::move(f));
    pushed++;
    cv.notify_one();
  }
  /* A call that would wait for this stream, or that CUDA does not allow in a capture: while
     capturing it invalidates the capture and fails (cudaErrorStreamCaptureUnsupported). */
  bool refuse_in_capture() {
    std::lock_guard<std::mutex> lk(mu);
    if (!capturing) return false;
    cap_invalid = true;
    cap.clear();
    return true;
  }
  /* waits for the work queued before the call (not for what others add meanwhile) */
  void drain() {
    std::unique_lock<std::mutex> lk(mu);
    uint64_t upto = pushed;
    idle.wait(lk, [this, upto] { return done >= upto; });
  }
};

struct Event {
  int dev;
  unsigned flags;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0, completed = 0;
  double t = 0;
  Event(int d, unsigned f) : dev(d), flags(f) {}
  void wait(uint64_t g) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return completed >= g; });
  }
};

struct Alloc {
  size_t size;
  int dev; /* -1: page-locked host memory */
};

struct Device {
  std::atomic<bool> ctx{false}; /* its primary context exists: something ran with it current */
  size_t total = 0, used = 0;
  Stream *legacy = nullptr;
  std::vector<Stream *> streams;
  bool peer[64] = {};
};

struct World {
  int ndev = 0;
  cudaError_t absent = cudaErrorNoDevice; /* what calls answer when there is no device */
  bool no_peer = false;
  Device dev[64];
  std::mutex mu; /* allocations, stream and event tables */
  std::map<uintptr_t, Alloc> allocs;
  std::set<Stream *> streams;
  std::map<Event *, std::shared_ptr<Event>> events;
  World() {
    pkey_init();
    ndev = env_int("DTEMU_GPUS", 1);
    if (ndev < 0) ndev = 0;
    if (ndev > 64) ndev = 64;
    /* DTEMU_DRIVER=none: a machine without the NVIDIA driver, where cudart
       answers every call with cudaErrorInsufficientDriver */
    const char *drv = getenv("DTEMU_DRIVER");
    if (drv && strcmp(drv, "none") == 0) { ndev = 0; absent = cudaErrorInsufficientDriver; }
    no_peer = env_int("DTEMU_NO_PEER", 0) != 0;
    size_t mb = (size_t)env_int("DTEMU_MEM_MB", 2048);
    for (int d = 0; d < ndev; d++) dev[d].total = mb << 20;
  }
};

/* Never destroyed: stream workers and late frees from atexit handlers still use it. */
World &W() {
  static World *w = new World;
  return *w;
}

double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The stream a handle names (null: the legacy stream of the current device). */
Stream *stream_of(cudaStream_t s) {
  World &w = W();
  if (!s) {
    std::lock_guard<std::mutex> lk(w.mu);
    Device &d = w.dev[t_dev];
    if (!d.legacy) {
      d.legacy = new Stream(t_dev);
      w.streams.insert(d.legacy);
      d.streams.push_back(d.legacy);
    }
    return d.legacy;
  }
  Stream *st = reinterpret_cast<Stream *>(s);
  std::lock_guard<std::mutex> lk(w.mu);
  if (!w.streams.count(st)) die("stream %p is not a stream (destroyed, or never created)", (void *)s);
  return st;
}

void drain_device(int dev) {
  World &w = W();
  std::vector<Stream *> v;
  {
    std::lock_guard<std::mutex> lk(w.mu);
    v = w.dev[dev].streams;
  }
  for (Stream *s : v) s->drain();
}

std::shared_ptr<Event> event_of(cudaEvent_t e) {
  World &w = W();
  std::lock_guard<std::mutex> lk(w.mu);
  auto it = w.events.find(reinterpret_cast<Event *>(e));
  if (it == w.events.end()) return nullptr;
  return it->second;
}

/* What p points into: a device allocation (dev >= 0), page-locked host memory
   (dev == -1), or nothing known (false). */
bool find_alloc(const void *p, uintptr_t *base, Alloc *a) {
  World &w = W();
  uintptr_t u = (uintptr_t)p;
  std::lock_guard<std::mutex> lk(w.mu);
  auto it = w.allocs.upper_bound(u);
  if (it == w.allocs.begin()) return false;
  --it;
  if (u >= it->first + (it->second.size ? it->second.size : 1)) return false;
  *base = it->first;
  *a = it->second;
  return true;
}

/* n bytes at p lie in a device allocation; its device */
int device_range(const void *p, size_t n, const char *what) {
  uintptr_t base;
  Alloc a;
  if (!find_alloc(p, &base, &a) || a.dev < 0) die("%s: %p is not device memory", what, p);
  if ((uintptr_t)p + n > base + a.size)
    die("%s: %zu bytes at %p run past the end of their allocation (%zu bytes at %p)", what, n, p, a.size, (void *)base);
  return a.dev;
}

bool is_device(const void *p) {
  uintptr_t base;
  Alloc a;
  return find_alloc(p, &base, &a) && a.dev >= 0;
}

bool is_pinned(const void *p) {
  uintptr_t base;
  Alloc a;
  return find_alloc(p, &base, &a) && a.dev < 0;
}

/* ---- fibers for cooperative blocks ----
   A worker thread keeps one fiber per thread of the largest cooperative block
   it has run. A fiber is entered once through makecontext/swapcontext; after
   that every switch is the compiler's __builtin_setjmp/__builtin_longjmp (no
   system call), and a fiber that finishes its thread's work parks in a loop,
   ready for the next block. Under ThreadSanitizer every switch is a swapcontext
   announced to it.
   Not the C library's _longjmp: under AddressSanitizer it (its interceptor, and
   the call ASan puts before any call that does not return) unpoisons the whole
   stack and asks the kernel for the signal stack, a system call and a shadow
   clear at every switch, most of an emulated run's time. Nothing is abandoned
   at a switch here (the scheduler and every fiber resume where they left), so
   there is nothing to unpoison: the jump is not instrumented, and its callers
   call it through a volatile pointer, so that the compiler, not knowing that it
   does not return, puts no such call before it either. */
typedef void *JmpBuf[5];
#define JMP_SAVE(jb) __builtin_setjmp(jb)
/* a function of its own: __builtin_longjmp may not be in the function that set the buffer */
__attribute__((noinline, no_sanitize_address)) void jump_impl(JmpBuf jb) { __builtin_longjmp(jb, 1); }
void (*volatile jump_to)(JmpBuf) = jump_impl;

constexpr size_t kFiberStack = (size_t)64 << 10;
enum { F_READY, F_WAIT_BLOCK, F_WAIT_WARP, F_DONE };

struct Fiber {
  JmpBuf jb;
  ucontext_t ctx;
  char *stack = nullptr;
  bool started = false;
  int state = F_READY;
  int lane = 0, src = 0;
  void *out = nullptr;
  size_t size = 0;
#ifdef DTEMU_ASAN
  void *fake = nullptr;
#endif
#ifdef DTEMU_TSAN
  void *tsan = nullptr;
#endif
};

struct Warp {
  unsigned gen = 0;
  unsigned char buf[2][32][16];
};

struct BlockRun {
  std::vector<std::unique_ptr<Fiber>> f; /* stable addresses: parked fibers keep theirs */
  std::vector<Warp> warps;
  JmpBuf sched_jb;
  ucontext_t sched_ctx;
  const std::function<void()> *body = nullptr;
  int cur = -1;
  bool coop = false;
#ifdef DTEMU_ASAN
  const void *sched_bottom = nullptr;
  size_t sched_size = 0;
  void *sched_fake = nullptr;
#endif
#ifdef DTEMU_TSAN
  void *sched_tsan = nullptr;
#endif
};

thread_local BlockRun *t_run = nullptr;

void set_thread(unsigned t) {
  threadIdx.x = t % blockDim.x;
  threadIdx.y = (t / blockDim.x) % blockDim.y;
  threadIdx.z = t / (blockDim.x * blockDim.y);
}

/* fiber -> scheduler; returns when the scheduler resumes this fiber */
void yield_to_sched() {
  BlockRun *r = t_run;
  Fiber &me = *r->f[r->cur];
#ifdef DTEMU_ASAN
  __sanitizer_start_switch_fiber(&me.fake, r->sched_bottom, r->sched_size);
#endif
#ifdef DTEMU_TSAN
  __tsan_switch_to_fiber(r->sched_tsan, 0);
  swapcontext(&me.ctx, &r->sched_ctx);
#else
  if (JMP_SAVE(me.jb) == 0) jump_to(r->sched_jb);
#endif
#ifdef DTEMU_ASAN
  __sanitizer_finish_switch_fiber(me.fake, &r->sched_bottom, &r->sched_size);
#endif
}

void fiber_main() {
#ifdef DTEMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &t_run->sched_bottom, &t_run->sched_size);
#endif
  for (;;) {
    BlockRun *r = t_run;
    (*r->body)();
    r->f[r->cur]->state = F_DONE;
    yield_to_sched(); /* parked until the next block */
  }
}

/* scheduler -> fiber t, until it waits at a barrier or finishes */
void resume(BlockRun &r, unsigned t) {
  Fiber &fb = *r.f[t];
  r.cur = (int)t;
  set_thread(t);
#ifdef DTEMU_ASAN
  __sanitizer_start_switch_fiber(&r.sched_fake, fb.stack, kFiberStack);
#endif
#ifdef DTEMU_TSAN
  if (!r.sched_tsan) r.sched_tsan = __tsan_get_current_fiber();
  if (!fb.tsan) fb.tsan = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(fb.tsan, 0);
  swapcontext(&r.sched_ctx, &fb.ctx); /* the fiber saves its place in fb.ctx when it yields */
#else
  if (JMP_SAVE(r.sched_jb) == 0) {
    if (!fb.started) {
      fb.started = true;
      swapcontext(&r.sched_ctx, &fb.ctx); /* the fiber comes back by jump_to */
    } else {
      jump_to(fb.jb);
    }
  }
#endif
#ifdef DTEMU_ASAN
  __sanitizer_finish_switch_fiber(r.sched_fake, nullptr, nullptr);
#endif
}

void run_block_coop(BlockRun &r, unsigned nthreads) {
  while (r.f.size() < nthreads) r.f.emplace_back(new Fiber);
  r.warps.assign((nthreads + 31) / 32, Warp());
  for (unsigned t = 0; t < nthreads; t++) {
    Fiber &fb = *r.f[t];
    if (!fb.stack) {
      /* a guard page below the stack: an overflow faults instead of corrupting */
      void *m = mmap(nullptr, kFiberStack + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE) != 0) die("cannot map a fiber stack");
      fb.stack = (char *)m + 4096;
      getcontext(&fb.ctx);
      fb.ctx.uc_stack.ss_sp = fb.stack;
      fb.ctx.uc_stack.ss_size = kFiberStack;
      fb.ctx.uc_link = nullptr;
      makecontext(&fb.ctx, fiber_main, 0);
    }
    fb.state = F_READY;
  }
  for (;;) {
    for (unsigned i = 0; i < nthreads; i++) {
      unsigned t = g_reverse ? nthreads - 1 - i : i;
      if (r.f[t]->state == F_READY) resume(r, t);
    }
    /* every fiber now waits at a barrier or is done */
    unsigned done = 0, at_block = 0, at_warp = 0;
    for (unsigned t = 0; t < nthreads; t++) {
      int st = r.f[t]->state;
      done += st == F_DONE;
      at_block += st == F_WAIT_BLOCK;
      at_warp += st == F_WAIT_WARP;
    }
    if (done == nthreads) return;
    bool released = false;
    for (unsigned w = 0; w < r.warps.size(); w++) {
      unsigned lo = w * 32, hi = lo + 32 < nthreads ? lo + 32 : nthreads, waiting = 0;
      for (unsigned t = lo; t < hi; t++) waiting += r.f[t]->state == F_WAIT_WARP;
      if (waiting == 0 || waiting != hi - lo) continue; /* a partial warp is judged below if nothing moves */
      Warp &wp = r.warps[w];
      for (unsigned t = lo; t < hi; t++) {
        Fiber &fb = *r.f[t];
        memcpy(fb.out, wp.buf[wp.gen & 1][fb.src], fb.size);
        fb.state = F_READY;
      }
      wp.gen++;
      released = true;
    }
    if (!released && at_warp == 0 && at_block + done == nthreads) {
      for (unsigned t = 0; t < nthreads; t++)
        if (r.f[t]->state == F_WAIT_BLOCK) r.f[t]->state = F_READY;
      released = true;
    }
    if (!released)
      die("deadlock in block (%u,%u,%u): %u threads at __syncthreads, %u at a warp shuffle, %u finished "
          "(a barrier inside divergent code, or a shuffle with lanes missing)",
          blockIdx.x, blockIdx.y, blockIdx.z, at_block, at_warp, done);
  }
}

/* one kernel launch, on the stream's worker thread */
void run_grid(dim3 grid, dim3 block, bool coop, const std::function<void()> &body) {
  static thread_local BlockRun run;
  unsigned nthreads = block.x * block.y * block.z;
  gridDim = grid;
  blockDim = block;
  run.body = &body;
  run.coop = coop;
  BlockRun *prev = t_run;
  t_run = &run;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        blockIdx.x = g_reverse ? grid.x - 1 - bx : bx;
        blockIdx.y = g_reverse ? grid.y - 1 - by : by;
        blockIdx.z = g_reverse ? grid.z - 1 - bz : bz;
        if (coop) {
          run_block_coop(run, nthreads);
        } else {
          run.cur = -1;
          for (unsigned i = 0; i < nthreads; i++) {
            set_thread(g_reverse ? nthreads - 1 - i : i);
            body();
          }
        }
      }
  t_run = prev;
}

/* ---- cuBLAS ---- */

struct Blas {
  int dev;
  cudaStream_t stream = nullptr;
  void *ws = nullptr;
  size_t ws_bytes = 0;
};

std::mutex g_blas_mu;
std::set<Blas *> g_blas;

Blas *blas_of(cublasHandle_t h, const char *what) {
  Blas *b = reinterpret_cast<Blas *>(h);
  {
    std::lock_guard<std::mutex> lk(g_blas_mu);
    if (!g_blas.count(b)) die("%s: %p is not a cuBLAS handle", what, (void *)h);
  }
  if (b->dev != t_dev)
    die("%s: the handle belongs to device %d but device %d is current (cuBLAS needs its handle's device current)", what,
        b->dev, t_dev);
  return b;
}

/* the extent in elements of a column-major rows x cols matrix with leading dimension ld */
size_t extent(int rows, int cols, int ld) { return rows == 0 || cols == 0 ? 0 : (size_t)(cols - 1) * ld + rows; }

template <typename T>
cublasStatus_t gemm(const char *what, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const T *alpha, const T *a, int lda, long long sa, const T *b, int ldb, long long sb, const T *beta,
                    T *c, int ldc, long long sc, int batch) {
  Blas *bl = blas_of(h, what);
  if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T)) return CUBLAS_STATUS_INVALID_VALUE;
  int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
  int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  if (batch > 1 && (sc < 0 ? -sc : sc) < (long long)extent(m, n, ldc))
    die("%s: C's batch stride %lld makes its %d items overlap (each spans %zu elements)", what, sc, batch,
        extent(m, n, ldc));
  T al = *alpha, be = *beta; /* host pointer mode: read now */
  for (int i = 0; i < batch; i++) {
    if (k > 0 && al != (T)0) {
      if (device_range(a + i * sa, extent(ar, ac, lda) * sizeof(T), what) != bl->dev ||
          device_range(b + i * sb, extent(br, bc, ldb) * sizeof(T), what) != bl->dev)
        die("%s: an operand is on another device than the handle's (%d)", what, bl->dev);
    }
    if (device_range(c + i * sc, extent(m, n, ldc) * sizeof(T), what) != bl->dev)
      die("%s: C is on another device than the handle's (%d)", what, bl->dev);
  }
  stream_of(bl->stream)->push([=] {
    for (int i = 0; i < batch; i++) {
      const T *A = a + i * sa, *B = b + i * sb;
      T *C = c + i * sc;
      for (int col = 0; col < n; col++)
        for (int row = 0; row < m; row++) {
          double acc = 0;
          if (al != (T)0)
            for (int p = 0; p < k; p++) {
              double x = ta == CUBLAS_OP_N ? A[row + (size_t)p * lda] : A[p + (size_t)row * lda];
              double y = tb == CUBLAS_OP_N ? B[p + (size_t)col * ldb] : B[col + (size_t)p * ldb];
              acc += x * y;
            }
          T &out = C[row + (size_t)col * ldc];
          T v = (T)((double)al * acc);
          out = be == (T)0 ? v : (T)(v + be * out);
        }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

/* the Ex gemms' elements: read as float (then as the compute type sees them), written rounded */
size_t ex_size(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }
float ex_load(cudaDataType_t t, const void *p, size_t i) {
  if (t == CUDA_R_32F) return static_cast<const float *>(p)[i];
  unsigned short x = static_cast<const unsigned short *>(p)[i];
  if (t == CUDA_R_16F) { __half h; h.x = x; return __half2float(h); }
  __nv_bfloat16 b; b.x = x; return __bfloat162float(b);
}
void ex_store(cudaDataType_t t, void *p, size_t i, float v) {
  if (t == CUDA_R_32F) static_cast<float *>(p)[i] = v;
  else if (t == CUDA_R_16F) static_cast<unsigned short *>(p)[i] = __float2half_rn(v).x;
  else static_cast<unsigned short *>(p)[i] = __float2bfloat16(v).x;
}
/* an F32 input as a reduced compute type reads it */
float ex_reduce(cublasComputeType_t ct, float v) {
  if (ct == CUBLAS_COMPUTE_32F_FAST_16BF) return __bfloat162float(__float2bfloat16(v));
  if (ct == CUBLAS_COMPUTE_32F_FAST_16F) return __half2float(__float2half_rn(v));
  if (ct == CUBLAS_COMPUTE_32F_FAST_TF32 && std::isfinite(v)) { /* 10-bit mantissa, to nearest, ties away from zero */
    uint32_t u;
    memcpy(&u, &v, 4);
    u = (u + 0x1000u) & ~0x1FFFu;
    memcpy(&v, &u, 4);
  }
  return v;
}

cublasStatus_t gemm_ex(const char *what, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                       const void *alpha, const void *a, cudaDataType_t at, int lda, long long sa, const void *b,
                       cudaDataType_t bt, int ldb, long long sb, const void *beta, void *c, cudaDataType_t ctp, int ldc,
                       long long sc, int batch, cublasComputeType_t ct, cublasGemmAlgo_t algo) {
  Blas *bl = blas_of(h, what);
  if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T)) return CUBLAS_STATUS_INVALID_VALUE;
  if (algo != CUBLAS_GEMM_DEFAULT) return CUBLAS_STATUS_NOT_SUPPORTED;
  /* the combinations devtensor uses: one storage type, computing in F32 (reduced inputs only for F32 storage) */
  if (at != bt || at != ctp || (at != CUDA_R_32F && at != CUDA_R_16F && at != CUDA_R_16BF)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (ct != CUBLAS_COMPUTE_32F && !(at == CUDA_R_32F && (ct == CUBLAS_COMPUTE_32F_FAST_TF32 || ct == CUBLAS_COMPUTE_32F_FAST_16BF ||
                                                         ct == CUBLAS_COMPUTE_32F_FAST_16F)))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
  int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  if (batch > 1 && (sc < 0 ? -sc : sc) < (long long)extent(m, n, ldc))
    die("%s: C's batch stride %lld makes its %d items overlap (each spans %zu elements)", what, sc, batch, extent(m, n, ldc));
  size_t es = ex_size(at);
  float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta); /* host pointer mode: read now */
  for (int i = 0; i < batch; i++) {
    if (k > 0 && al != 0.0f) {
      if (device_range(static_cast<const char *>(a) + i * sa * (long long)es, extent(ar, ac, lda) * es, what) != bl->dev ||
          device_range(static_cast<const char *>(b) + i * sb * (long long)es, extent(br, bc, ldb) * es, what) != bl->dev)
        die("%s: an operand is on another device than the handle's (%d)", what, bl->dev);
    }
    if (device_range(static_cast<char *>(c) + i * sc * (long long)es, extent(m, n, ldc) * es, what) != bl->dev)
      die("%s: C is on another device than the handle's (%d)", what, bl->dev);
  }
  stream_of(bl->stream)->push([=] {
    for (int i = 0; i < batch; i++) {
      const char *A = static_cast<const char *>(a) + i * sa * (long long)es, *B = static_cast<const char *>(b) + i * sb * (long long)es;
      char *C = static_cast<char *>(c) + i * sc * (long long)es;
      for (int col = 0; col < n; col++)
        for (int row = 0; row < m; row++) {
          double acc = 0;
          if (al != 0.0f)
            for (int p = 0; p < k; p++) {
              double x = ex_reduce(ct, ex_load(at, A, ta == CUBLAS_OP_N ? row + (size_t)p * lda : p + (size_t)row * lda));
              double y = ex_reduce(ct, ex_load(at, B, tb == CUBLAS_OP_N ? p + (size_t)col * ldb : col + (size_t)p * ldb));
              acc += x * y;
            }
          size_t at_c = row + (size_t)col * ldc;
          float v = (float)((double)al * acc);
          ex_store(at, C, at_c, be == 0.0f ? v : v + be * ex_load(at, C, at_c));
        }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

/* A call that works in the current device's context: as in CUDA 12+, that
   context now exists (cudaSetDevice, allocations, streams, events, copies,
   launches, cuBLAS handles). Device queries and cudaGetDevice make none. */
void use_ctx() {
  if (t_dev >= 0 && t_dev < W().ndev) W().dev[t_dev].ctx = true;
}

cudaError_t check_dev(int dev) {
  int n = W().ndev;
  if (n == 0) return W().absent;
  return dev < 0 || dev >= n ? cudaErrorInvalidDevice : cudaSuccess;
}

/* check_dev of the current device, for a call that works in its context */
cudaError_t check_cur() {
  use_ctx();
  return check_dev(t_dev);
}

} /* namespace */

/* ---- device code support ---- */

void dtemu::launch(dim3 grid, dim3 block, cudaStream_t s, bool coop, std::function<void()> body) {
  unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
  if (W().ndev == 0) { ret(W().absent); return; }
  if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
    ret(cudaErrorInvalidConfiguration);
    return;
  }
  Stream *st = stream_of(s);
  use_ctx();
  if (st->dev != t_dev) die("kernel launched on a stream of device %d while device %d is current", st->dev, t_dev);
  st->push([grid, block, coop, body] { run_grid(grid, block, coop, body); });
}

void dtemu::syncthreads() {
  BlockRun *r = t_run;
  if (!r || !r->coop || r->cur < 0) die("__syncthreads in a kernel launched without DT_LAUNCH_COOP");
  r->f[r->cur]->state = F_WAIT_BLOCK;
  yield_to_sched();
}

void dtemu::shfl(const void *mine, void *out, size_t size, unsigned mask, int src_lane) {
  BlockRun *r = t_run;
  if (!r || !r->coop || r->cur < 0) die("warp shuffle in a kernel launched without DT_LAUNCH_COOP");
  if (mask != 0xffffffffu) die("warp shuffle with a partial mask (0x%08x): the emulator only models full warps", mask);
  if (size > 16) die("warp shuffle of %zu bytes", size);
  unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  if (nthreads % 32) die("warp shuffle in a block of %u threads (not whole warps)", nthreads);
  Fiber &me = *r->f[r->cur];
  Warp &wp = r->warps[r->cur / 32];
  me.lane = r->cur & 31;
  me.src = src_lane;
  me.out = out;
  me.size = size;
  memcpy(wp.buf[wp.gen & 1][me.lane], mine, size);
  me.state = F_WAIT_WARP;
  yield_to_sched();
}

/* ---- runtime API ---- */

extern "C" {

/* The two driver entry points devtensor asks for (has_primary_context). */
static int drv_device_get(int *d, int ordinal) {
  if (!d || ordinal < 0 || ordinal >= W().ndev) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *d = ordinal;
  return 0;
}
static int drv_primary_ctx_state(int d, unsigned int *flags, int *active) {
  if (!flags || !active) return 1; /* CUDA_ERROR_INVALID_VALUE */
  if (d < 0 || d >= W().ndev) return 101;
  *flags = 0;
  *active = W().dev[d].ctx ? 1 : 0;
  return 0;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status) {
  (void)version; (void)flags;
  if (!symbol || !fn) return ret(cudaErrorInvalidValue);
  *fn = nullptr;
  if (strcmp(symbol, "cuDeviceGet") == 0) *fn = reinterpret_cast<void *>(&drv_device_get);
  else if (strcmp(symbol, "cuDevicePrimaryCtxGetState") == 0) *fn = reinterpret_cast<void *>(&drv_primary_ctx_state);
  if (status) *status = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

int dtemu_context_active(int dev) { return dev >= 0 && dev < W().ndev && W().dev[dev].ctx ? 1 : 0; }

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return ret(cudaErrorInvalidValue);
  *count = W().ndev;
  if (W().ndev == 0) return ret(W().absent);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev) {
  if (!dev) return ret(cudaErrorInvalidValue);
  if (W().ndev == 0) return ret(W().absent);
  *dev = t_dev;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) {
  cudaError_t e = check_dev(dev);
  if (e != cudaSuccess) return ret(e);
  t_dev = dev;
  use_ctx();
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev) {
  cudaError_t e = check_dev(dev);
  if (e != cudaSuccess) return ret(e);
  if (!p) return ret(cudaErrorInvalidValue);
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "devtensor CUDA emulator");
  p->totalGlobalMem = W().dev[dev].total;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = g_sms;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev) {
  cudaError_t e = check_dev(dev);
  if (e != cudaSuccess) return ret(e);
  if (!value) return ret(cudaErrorInvalidValue);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = g_sms; return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
  }
  return ret(cudaErrorInvalidValue);
}

/* The calling thread's capture interaction mode (cudaThreadExchangeStreamCaptureMode; global
   unless changed), which decides which captures forbid it the "potentially unsafe" calls. */
static thread_local cudaStreamCaptureMode t_cap_mode = cudaStreamCaptureModeGlobal;

/* A prohibited call (cudaDeviceSynchronize, cudaFree, cudaMalloc), on any device: as CUDA's
   capture modes say, a thread whose interaction mode is global may not make it while it has a
   capture of its own that was not begun relaxed, or while another thread has a global one; in
   the thread-local mode only its own such captures count; in the relaxed mode none. The rule
   is the thread's, not the device's: a capture on one device forbids the call on every other
   one too. Each capture that forbids it is invalidated and the call fails. */
static bool prohibited_in_capture() {
  World &w = W();
  std::vector<Stream *> v; /* valid after the lock: a stream lives as long as the process */
  {
    std::lock_guard<std::mutex> lk(w.mu);
    for (int d = 0; d < w.ndev; d++) v.insert(v.end(), w.dev[d].streams.begin(), w.dev[d].streams.end());
  }
  bool hit = false;
  for (Stream *s : v) {
    std::lock_guard<std::mutex> lk(s->mu);
    bool own = s->cap_thread == std::this_thread::get_id();
    if (s->capturing && t_cap_mode != cudaStreamCaptureModeRelaxed && s->cap_mode != cudaStreamCaptureModeRelaxed &&
        (own || (t_cap_mode == cudaStreamCaptureModeGlobal && s->cap_mode == cudaStreamCaptureModeGlobal))) {
      s->cap_invalid = true;
      s->cap.clear();
      hit = true;
    }
  }
  return hit;
}

cudaError_t cudaDeviceSynchronize(void) {
  cudaError_t e = check_cur();
  if (e != cudaSuccess) return ret(e);
  if (prohibited_in_capture()) return ret(cudaErrorStreamCaptureUnsupported);
  drain_device(t_dev);
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer) {
  cudaError_t e = check_dev(dev);
  if (e == cudaSuccess) e = check_dev(peer);
  if (e != cudaSuccess) return ret(e);
  if (!can) return ret(cudaErrorInvalidValue);
  *can = dev != peer && !W().no_peer;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags) {
  use_ctx();
  World &w = W();
  cudaError_t e = check_dev(peer);
  if (e != cudaSuccess) return ret(e);
  if (flags != 0 || peer == t_dev || w.no_peer) return ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lk(w.mu);
  if (w.dev[t_dev].peer[peer]) return ret(cudaErrorPeerAccessAlreadyEnabled);
  w.dev[t_dev].peer[peer] = true;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  World &w = W();
  cudaError_t e = check_cur();
  if (e != cudaSuccess) return ret(e);
  if (!free_bytes || !total_bytes) return ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lk(w.mu);
  *total_bytes = w.dev[t_dev].total;
  *free_bytes = w.dev[t_dev].total - w.dev[t_dev].used;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n) {
  World &w = W();
  cudaError_t e = check_cur();
  if (e != cudaSuccess) return ret(e);
  if (!p) return ret(cudaErrorInvalidValue);
  *p = nullptr;
  if (prohibited_in_capture()) return ret(cudaErrorStreamCaptureUnsupported);
  if (n == 0) return cudaSuccess;
  size_t rounded = (n + 255) & ~(size_t)255;
  if (rounded < n) return ret(cudaErrorMemoryAllocation);
  {
    std::lock_guard<std::mutex> lk(w.mu);
    Device &d = w.dev[t_dev];
    if (rounded > d.total - d.used) return ret(cudaErrorMemoryAllocation);
    d.used += rounded;
  }
  void *m = device_map(n); /* bytes past n are poisoned (ASan) or unmapped */
  if (m) {
    int was = device_access(1);
    memset(m, 0xff, n);
    device_access(was);
  }
  std::lock_guard<std::mutex> lk(w.mu);
  if (!m) {
    w.dev[t_dev].used -= rounded;
    return ret(cudaErrorMemoryAllocation);
  }
  w.allocs[(uintptr_t)m] = Alloc{n, t_dev}; /* copies and cuBLAS operands are checked against n */
  *p = m;
  return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
  World &w = W();
  if (!p) return cudaSuccess;
  uintptr_t base;
  Alloc a;
  if (!find_alloc(p, &base, &a) || a.dev < 0 || base != (uintptr_t)p) die("cudaFree(%p): not a device allocation", p);
  if (prohibited_in_capture()) return ret(cudaErrorStreamCaptureUnsupported);
  drain_device(a.dev); /* cudaFree waits for the device */
  {
    std::lock_guard<std::mutex> lk(w.mu);
    w.allocs.erase(base);
    w.dev[a.dev].used -= (a.size + 255) & ~(size_t)255; /* as counted by cudaMalloc */
  }
  device_unmap(p, a.size);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) {
  use_ctx();
  World &w = W();
  (void)flags;
  if (!p) return ret(cudaErrorInvalidValue);
  size_t rounded = (n + 4095) & ~(size_t)4095;
  void *m = aligned_alloc(4096, rounded ? rounded : 4096);
  if (!m) return ret(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lk(w.mu);
  w.allocs[(uintptr_t)m] = Alloc{n, -1};
  *p = m;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t n) { return cudaHostAlloc(p, n, 0); }

cudaError_t cudaFreeHost(void *p) {
  World &w = W();
  if (!p) return cudaSuccess;
  uintptr_t base;
  Alloc a;
  if (!find_alloc(p, &base, &a) || a.dev >= 0 || base != (uintptr_t)p) die("cudaFreeHost(%p): not page-locked memory", p);
  for (int d = 0; d < w.ndev; d++) drain_device(d);
  {
    std::lock_guard<std::mutex> lk(w.mu);
    w.allocs.erase(base);
  }
  free(p);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
  uintptr_t base;
  Alloc al;
  if (!a) return ret(cudaErrorInvalidValue);
  memset(a, 0, sizeof *a);
  a->device = -2;
  if (find_alloc(p, &base, &al)) {
    a->type = al.dev >= 0 ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
    a->device = al.dev >= 0 ? al.dev : t_dev;
    a->devicePointer = (void *)p;
    if (al.dev < 0) a->hostPointer = (void *)p;
  }
  return cudaSuccess;
}

/* device-to-host copies made so far, for tests that count host reads */
static std::atomic<unsigned long long> g_d2h{0};
extern "C" unsigned long long dtemu_d2h_copies(void) { return g_d2h.load(); }

/* Checks a copy's pointers against its kind and queues it on st; pageable
   sources are read now, pageable destinations are waited for. */
static cudaError_t do_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, Stream *st, bool sync,
                           const char *what) {
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return ret(cudaErrorInvalidValue);
  bool dd = is_device(dst), sd = is_device(src);
  if (sd && !dd) g_d2h++;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      if (!dd || sd) die("%s: cudaMemcpyHostToDevice from %s to %s", what, sd ? "device" : "host", dd ? "device" : "host");
      break;
    case cudaMemcpyDeviceToHost:
      if (dd || !sd) die("%s: cudaMemcpyDeviceToHost from %s to %s", what, sd ? "device" : "host", dd ? "device" : "host");
      break;
    case cudaMemcpyDeviceToDevice:
      if (!dd || !sd) die("%s: cudaMemcpyDeviceToDevice from %s to %s", what, sd ? "device" : "host", dd ? "device" : "host");
      break;
    case cudaMemcpyHostToHost:
      if (dd || sd) die("%s: cudaMemcpyHostToHost with device memory", what);
      break;
    case cudaMemcpyDefault:
      break;
    default:
      return ret(cudaErrorInvalidMemcpyDirection);
  }
  if (dd) device_range(dst, n, what);
  if (sd) device_range(src, n, what);
  /* in a capture: no waiting copy, none to or from pageable memory (the graph could not hold it) */
  if ((sync || (!dd && !is_pinned(dst)) || (!sd && !is_pinned(src))) && st->refuse_in_capture())
    return ret(cudaErrorStreamCaptureUnsupported);
  if (!dd && !sd) { /* host to host: synchronous */
    st->drain();
    memmove(dst, src, n);
    return cudaSuccess;
  }
  if (!sd && !is_pinned(src)) {
    /* pageable source: read before returning, the DMA may come later */
    std::shared_ptr<std::vector<char>> snap = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + n);
    st->push([dst, snap] { memcpy(dst, snap->data(), snap->size()); });
  } else {
    if (dd && sd && (const char *)dst < (const char *)src + n && (const char *)src < (const char *)dst + n)
      die("%s: device ranges overlap (%p and %p, %zu bytes): CUDA copies must not overlap", what, dst, src, n);
    st->push([dst, src, n] { memcpy(dst, src, n); });
  }
  if (sync || (!dd && !is_pinned(dst))) st->drain(); /* to pageable memory: waits */
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
  cudaError_t e = check_cur();
  if (e != cudaSuccess) return ret(e);
  return do_copy(dst, src, n, kind, stream_of(nullptr), true, "cudaMemcpy");
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s) {
  cudaError_t e = check_cur();
  if (e != cudaSuccess) return ret(e);
  return do_copy(dst, src, n, kind, stream_of(s), false, "cudaMemcpyAsync");
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev, size_t n, cudaStream_t s) {
  cudaError_t e = check_dev(dst_dev);
  if (e == cudaSuccess) e = check_dev(src_dev);
  if (e != cudaSuccess) return ret(e);
  if (n == 0) return cudaSuccess;
  if (device_range(dst, n, "cudaMemcpyPeerAsync (destination)") != dst_dev ||
      device_range(src, n, "cudaMemcpyPeerAsync (source)") != src_dev)
    die("cudaMemcpyPeerAsync: a pointer is not on the device given for it");
  stream_of(s)->push([dst, src, n] { memcpy(dst, src, n); }); /* different devices: never overlapping */
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s) {
  use_ctx();
  if (n == 0) return cudaSuccess;
  device_range(p, n, "cudaMemsetAsync");
  stream_of(s)->push([p, value, n] { memset(p, value, n); });
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  World &w = W();
  cudaError_t e = check_cur();
  if (e != cudaSuccess) return ret(e);
  if (!s || flags > 1) return ret(cudaErrorInvalidValue);
  Stream *st = new Stream(t_dev);
  std::lock_guard<std::mutex> lk(w.mu);
  w.streams.insert(st);
  w.dev[t_dev].streams.push_back(st);
  *s = reinterpret_cast<cudaStream_t>(st);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  /* kept: queued work finishes; the worker lives on with the process */
  (void)stream_of(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (W().ndev == 0) return ret(W().absent);
  Stream *st = stream_of(s);
  if (st->refuse_in_capture()) return ret(cudaErrorStreamCaptureUnsupported);
  st->drain();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  std::shared_ptr<Event> ev = event_of(e);
  if (!ev || flags) return ret(cudaErrorInvalidResourceHandle);
  uint64_t g;
  {
    std::lock_guard<std::mutex> lk(ev->mu);
    g = ev->recorded;
  }
  stream_of(s)->push([ev, g] { ev->wait(g); });
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
  World &w = W();
  cudaError_t er = check_cur();
  if (er != cudaSuccess) return ret(er);
  if (!e) return ret(cudaErrorInvalidValue);
  std::shared_ptr<Event> ev = std::make_shared<Event>(t_dev, flags);
  std::lock_guard<std::mutex> lk(w.mu);
  w.events[ev.get()] = ev;
  *e = reinterpret_cast<cudaEvent_t>(ev.get());
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  std::shared_ptr<Event> ev = event_of(e);
  if (!ev) return ret(cudaErrorInvalidResourceHandle);
  Stream *st = stream_of(s);
  if (st->dev != ev->dev) return ret(cudaErrorInvalidResourceHandle); /* event and stream of different devices */
  uint64_t g;
  {
    std::lock_guard<std::mutex> lk(ev->mu);
    g = ++ev->recorded;
  }
  st->push([ev, g] {
    std::lock_guard<std::mutex> lk(ev->mu);
    if (ev->completed < g) ev->completed = g;
    ev->t = now_ms();
    ev->cv.notify_all();
  });
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::shared_ptr<Event> ev = event_of(e);
  if (!ev) return ret(cudaErrorInvalidResourceHandle);
  uint64_t g;
  {
    std::lock_guard<std::mutex> lk(ev->mu);
    g = ev->recorded; /* never recorded: returns at once, as CUDA */
  }
  ev->wait(g);
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  std::shared_ptr<Event> ev = event_of(e);
  if (!ev) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lk(ev->mu);
  return ev->completed >= ev->recorded ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  std::shared_ptr<Event> ea = event_of(a), eb = event_of(b);
  if (!ea || !eb || !ms) return ret(cudaErrorInvalidResourceHandle);
  if ((ea->flags | eb->flags) & cudaEventDisableTiming) return ret(cudaErrorInvalidResourceHandle);
  if (ea == eb) { /* the same event twice: one lock */
    std::lock_guard<std::mutex> l(ea->mu);
    if (ea->completed < ea->recorded || ea->recorded == 0) return ret(cudaErrorNotReady);
    *ms = 0;
    return cudaSuccess;
  }
  std::lock_guard<std::mutex> l1(ea->mu);
  if (ea->completed < ea->recorded || ea->recorded == 0) return ret(cudaErrorNotReady);
  std::lock_guard<std::mutex> l2(eb->mu);
  if (eb->completed < eb->recorded || eb->recorded == 0) return ret(cudaErrorNotReady);
  *ms = (float)(eb->t - ea->t);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  World &w = W();
  std::lock_guard<std::mutex> lk(w.mu);
  /* work still queued holds its own reference */
  if (!w.events.erase(reinterpret_cast<Event *>(e))) return ret(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = t_last;
  t_last = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return t_last; }

const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorPeerAccessAlreadyEnabled: return "cudaErrorPeerAccessAlreadyEnabled";
    case cudaErrorPeerAccessNotEnabled: return "cudaErrorPeerAccessNotEnabled";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    default: break; /* the emulator never returns the other faults */
  }
  return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    default: break;
  }
  return "unknown error";
}

/* ---- cuBLAS ---- */

cublasStatus_t cublasCreate(cublasHandle_t *h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  if (check_cur() != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  Blas *b = new Blas;
  b->dev = t_dev;
  std::lock_guard<std::mutex> lk(g_blas_mu);
  g_blas.insert(b);
  *h = reinterpret_cast<cublasHandle_t>(b);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h) {
  Blas *b = reinterpret_cast<Blas *>(h);
  std::lock_guard<std::mutex> lk(g_blas_mu);
  if (!g_blas.erase(b)) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete b;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
  Blas *b = blas_of(h, "cublasSetStream");
  if (stream_of(s)->dev != b->dev) die("cublasSetStream: a stream of device %d for a handle of device %d", stream_of(s)->dev, b->dev);
  b->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  (void)blas_of(h, "cublasSetMathMode");
  /* the gemms here always sum in double to the end: the reduction flag changes nothing */
  return (mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) <= CUBLAS_TF32_TENSOR_OP_MATH ? CUBLAS_STATUS_SUCCESS
                                                                                               : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes) {
  Blas *b = blas_of(h, "cublasSetWorkspace");
  if (bytes && device_range(ws, bytes, "cublasSetWorkspace") != b->dev) die("cublasSetWorkspace: workspace on another device");
  if (((uintptr_t)ws & 255) != 0) return CUBLAS_STATUS_INVALID_VALUE;
  b->ws = ws;
  b->ws_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t s) { return cublasGetStatusName(s); }

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta,
                           float *c, int ldc) {
  return gemm<float>("cublasSgemm", h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *a, int lda, const double *b, int ldb, const double *beta,
                           double *c, int ldc) {
  return gemm<double>("cublasDgemm", h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda, long long sa, const float *b, int ldb,
                                         long long sb, const float *beta, float *c, int ldc, long long sc, int batch) {
  return gemm<float>("cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                         const double *alpha, const double *a, int lda, long long sa, const double *b,
                                         int ldb, long long sb, const double *beta, double *c, int ldc, long long sc,
                                         int batch) {
  return gemm<double>("cublasDgemmStridedBatched", h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                      batch);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
                            const void *a, cudaDataType_t atype, int lda, const void *b, cudaDataType_t btype, int ldb,
                            const void *beta, void *c, cudaDataType_t ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
  return gemm_ex("cublasGemmEx", h, ta, tb, m, n, k, alpha, a, atype, lda, 0, b, btype, ldb, 0, beta, c, ctype, ldc, 0, 1,
                 compute, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *a, cudaDataType_t atype, int lda, long long sa,
                                          const void *b, cudaDataType_t btype, int ldb, long long sb, const void *beta, void *c,
                                          cudaDataType_t ctype, int ldc, long long sc, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t algo) {
  return gemm_ex("cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, alpha, a, atype, lda, sa, b, btype, ldb, sb, beta, c, ctype,
                 ldc, sc, batch, compute, algo);
}

} /* extern "C" */


/* ---- NCCL ----
   Communicators over this process's emulated GPUs (ncclCommInitAll, or ncclCommInitRank
   with every rank in this process). A collective is the n-th call on each communicator
   of a clique: each rank's call queues an item on its stream that registers its
   buffers and waits for the other ranks' items, as NCCL's kernels wait for their peers;
   the last to arrive reduces (in rank order, in the element type; AVG divides the sum)
   and writes every rank's result. Stops with a message where NCCL would hang or fail:
   ranks whose n-th collectives differ, a stream of another device, buffers outside
   device memory, several GPUs driven by one thread outside ncclGroupStart/End. */
namespace {
struct NcclOp {
  int kind = 0; /* 1 all-reduce, 2 broadcast */
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  int arg = 0;  /* op or root */
  int arrived = 0, left = 0;
  bool done = false;
  std::vector<const void *> send;
  std::vector<void *> recv;
};
struct NcclClique {
  int n = 0, joined = 0;
  bool init_all = false;
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, std::shared_ptr<NcclOp>> ops;
};
struct NcclComm {
  std::shared_ptr<NcclClique> c;
  int rank = 0, dev = 0;
  uint64_t seq = 0;
};
std::mutex g_nccl_mu;
std::set<NcclComm *> g_nccl_comms;
std::map<std::string, std::shared_ptr<NcclClique>> g_nccl_ids;
std::atomic<unsigned long long> g_nccl_id_counter{0};
std::atomic<unsigned long long> g_nccl_calls{0}; /* collectives queued: dtemu_nccl_collectives() */
thread_local int t_nccl_group = 0;

size_t nccl_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
  }
  return 0;
}

template <class T>
void nccl_reduce_t(const NcclOp &o, int n, std::vector<char> &out) {
  T *r = reinterpret_cast<T *>(out.data());
  for (size_t i = 0; i < o.count; i++) {
    T acc = static_cast<const T *>(o.send[0])[i];
    for (int k = 1; k < n; k++) {
      T v = static_cast<const T *>(o.send[k])[i];
      switch (o.arg) {
        case ncclMax: acc = v > acc ? v : acc; break;
        case ncclMin: acc = v < acc ? v : acc; break;
        case ncclProd: acc = (T)(acc * v); break;
        default: acc = (T)(acc + v); break;
      }
    }
    if (o.arg == ncclAvg) acc = (T)(acc / (T)n);
    r[i] = acc;
  }
}

/* float16 and bfloat16 as NCCL reduces them: each pair in float, rounded back to the type at
   each step (to nearest even); ncclAvg's division too */
template <class H>
void nccl_reduce_half(const NcclOp &o, int n, std::vector<char> &out, float (*to_f)(H), H (*from_f)(float)) {
  unsigned short *r = reinterpret_cast<unsigned short *>(out.data());
  for (size_t i = 0; i < o.count; i++) {
    H acc, v;
    acc.x = static_cast<const unsigned short *>(o.send[0])[i];
    for (int k = 1; k < n; k++) {
      v.x = static_cast<const unsigned short *>(o.send[k])[i];
      float a = to_f(acc), b = to_f(v);
      switch (o.arg) {
        case ncclMax: acc = b > a ? v : acc; break;
        case ncclMin: acc = b < a ? v : acc; break;
        case ncclProd: acc = from_f(a * b); break;
        default: acc = from_f(a + b); break;
      }
    }
    if (o.arg == ncclAvg) acc = from_f(to_f(acc) / (float)n);
    r[i] = acc.x;
  }
}
float nccl_h2f(__half h) { return __half2float(h); }
__half nccl_f2h(float f) { return __float2half_rn(f); }
float nccl_b2f(__nv_bfloat16 h) { return __bfloat162float(h); }
__nv_bfloat16 nccl_f2b(float f) { return __float2bfloat16(f); }

void nccl_reduce(const NcclOp &o, int n, std::vector<char> &out) {
  switch (o.type) {
    case ncclInt8: nccl_reduce_t<int8_t>(o, n, out); break;
    case ncclUint8: nccl_reduce_t<uint8_t>(o, n, out); break;
    case ncclInt32: nccl_reduce_t<int32_t>(o, n, out); break;
    case ncclUint32: nccl_reduce_t<uint32_t>(o, n, out); break;
    case ncclInt64: nccl_reduce_t<int64_t>(o, n, out); break;
    case ncclUint64: nccl_reduce_t<uint64_t>(o, n, out); break;
    case ncclFloat32: nccl_reduce_t<float>(o, n, out); break;
    case ncclFloat64: nccl_reduce_t<double>(o, n, out); break;
    case ncclFloat16: nccl_reduce_half<__half>(o, n, out, nccl_h2f, nccl_f2h); break;
    case ncclBfloat16: nccl_reduce_half<__nv_bfloat16>(o, n, out, nccl_b2f, nccl_f2b); break;
    default: die("NCCL: the emulator does not reduce type %d", (int)o.type);
  }
}

NcclComm *nccl_comm(ncclComm_t c, const char *what) {
  std::lock_guard<std::mutex> lk(g_nccl_mu);
  NcclComm *x = reinterpret_cast<NcclComm *>(c);
  if (!g_nccl_comms.count(x)) die("%s: %p is not a communicator (destroyed, or never made)", what, (void *)c);
  return x;
}

ncclResult_t nccl_collective(const char *what, int kind, const void *send, void *recv, size_t count, ncclDataType_t type,
                             int arg, ncclComm_t comm, cudaStream_t stream) {
  NcclComm *c = nccl_comm(comm, what);
  size_t es = nccl_size(type);
  if (es == 0) return ncclInvalidArgument;
  if (kind == 1 && (arg < ncclSum || arg > ncclAvg)) return ncclInvalidArgument;
  if (kind == 2 && (arg < 0 || arg >= c->c->n)) return ncclInvalidArgument;
  Stream *st = stream_of(stream);
  if (st->dev != c->dev) die("%s: the stream is on device %d, the communicator on device %d", what, st->dev, c->dev);
  if (c->c->n > 1 && c->c->init_all && t_nccl_group == 0)
    die("%s: a communicator of ncclCommInitAll used outside ncclGroupStart/ncclGroupEnd: one thread driving several "
        "GPUs deadlocks NCCL", what);
  if (count > 0) {
    if (kind == 1 || c->rank == arg) device_range(send, count * es, what);
    device_range(recv, count * es, what);
  }
  g_nccl_calls++;
  std::shared_ptr<NcclClique> q = c->c;
  std::shared_ptr<NcclOp> o;
  int rank = c->rank;
  {
    std::lock_guard<std::mutex> lk(q->mu);
    uint64_t seq = c->seq++;
    auto it = q->ops.find(seq);
    if (it == q->ops.end()) {
      o = std::make_shared<NcclOp>();
      o->kind = kind; o->count = count; o->type = type; o->arg = arg;
      o->send.assign(q->n, nullptr); o->recv.assign(q->n, nullptr);
      q->ops[seq] = o;
    } else {
      o = it->second;
      if (o->kind != kind || o->count != count || o->type != type || o->arg != arg)
        die("%s: rank %d's collective %llu differs from another rank's (kind %d/%d, count %zu/%zu, type %d/%d, op or root "
            "%d/%d): NCCL would hang or corrupt memory", what, rank, (unsigned long long)seq, kind, o->kind, count,
            o->count, (int)type, (int)o->type, arg, o->arg);
    }
    o->send[rank] = send; o->recv[rank] = recv;
  }
  st->push([q, o, es] {
    std::unique_lock<std::mutex> lk(q->mu);
    if (++o->arrived == q->n) {
      std::vector<char> out(o->count * es + 1);
      if (o->kind == 1) nccl_reduce(*o, q->n, out);
      else if (o->count) memcpy(out.data(), o->send[o->arg], o->count * es);
      for (int k = 0; k < q->n; k++)
        if (o->count) memcpy(o->recv[k], out.data(), o->count * es);
      o->done = true;
      q->cv.notify_all();
    } else {
      q->cv.wait(lk, [&] { return o->done; });
    }
    if (++o->left == q->n)
      for (auto it = q->ops.begin(); it != q->ops.end(); ++it)
        if (it->second == o) { q->ops.erase(it); break; }
  });
  return ncclSuccess;
}
} /* namespace */

extern "C" {

unsigned long long dtemu_nccl_collectives(void) { return g_nccl_calls.load(); }

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
  }
  return "unknown result code";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  if (!id) return ncclInvalidArgument;
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "dtemu-%d-%llu", (int)getpid(), ++g_nccl_id_counter);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  if (check_cur() != cudaSuccess) return ncclUnhandledCudaError;
  std::string key(id.internal, strnlen(id.internal, sizeof id.internal));
  /* the emulated GPUs and their cliques live in one process: an id made by another process
     (ranks under mpirun, each with its own emulator) can never gather its ranks here */
  char mine[32];
  snprintf(mine, sizeof mine, "dtemu-%d-", (int)getpid());
  if (key.compare(0, strlen(mine), mine) != 0) return ncclSystemError;
  std::shared_ptr<NcclClique> q;
  NcclComm *c = new NcclComm;
  {
    std::lock_guard<std::mutex> lk(g_nccl_mu);
    std::shared_ptr<NcclClique> &slot = g_nccl_ids[key];
    if (!slot) { slot = std::make_shared<NcclClique>(); slot->n = nranks; }
    q = slot;
    if (q->n != nranks) { delete c; return ncclInvalidArgument; }
    c->c = q; c->rank = rank; c->dev = t_dev;
    g_nccl_comms.insert(c);
  }
  std::unique_lock<std::mutex> lk(q->mu);
  q->joined++;
  q->cv.notify_all();
  /* as NCCL: returns once every rank has joined; a rank that never comes (it failed) is
     waited for DTEMU_NCCL_TIMEOUT seconds (default 60), then this one fails as NCCL's
     bootstrap does when a peer is gone */
  if (!q->cv.wait_for(lk, std::chrono::seconds(env_int("DTEMU_NCCL_TIMEOUT", 60)), [&] { return q->joined >= q->n; })) {
    q->joined--;
    lk.unlock();
    std::lock_guard<std::mutex> g(g_nccl_mu);
    g_nccl_comms.erase(c);
    delete c;
    return ncclRemoteError;
  }
  *comm = reinterpret_cast<ncclComm_t>(c);
  return ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  if (!comms || ndev < 1) return ncclInvalidArgument;
  std::vector<int> devs(ndev);
  for (int i = 0; i < ndev; i++) {
    devs[i] = devlist ? devlist[i] : i;
    if (check_dev(devs[i]) != cudaSuccess) return ncclUnhandledCudaError;
    for (int j = 0; j < i; j++)
      if (devs[j] == devs[i]) return ncclInvalidUsage; /* NCCL: "Duplicate GPU detected" */
  }
  std::shared_ptr<NcclClique> q = std::make_shared<NcclClique>();
  q->n = ndev; q->joined = ndev; q->init_all = true;
  std::lock_guard<std::mutex> lk(g_nccl_mu);
  for (int i = 0; i < ndev; i++) {
    NcclComm *c = new NcclComm;
    c->c = q; c->rank = i; c->dev = devs[i];
    W().dev[devs[i]].ctx = true;
    g_nccl_comms.insert(c);
    comms[i] = reinterpret_cast<ncclComm_t>(c);
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NcclComm *c = nccl_comm(comm, "ncclCommDestroy");
  drain_device(c->dev); /* as NCCL: after the communicator's queued work */
  std::lock_guard<std::mutex> lk(g_nccl_mu);
  g_nccl_comms.erase(c);
  delete c;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) { t_nccl_group++; return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) {
  if (t_nccl_group == 0) return ncclInvalidUsage;
  t_nccl_group--;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return nccl_collective("ncclAllReduce", 1, send, recv, count, type, (int)op, comm, stream);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return nccl_collective("ncclBroadcast", 2, send, recv, count, type, root, comm, stream);
}

} /* extern "C" */

/* the driver library devtensor_cuda.cu tries to load when CUDA fails
   (DT_CU_LIBCUDA): DTEMU_LIBCUDA, else the real one's name */
const char *dtemu_libcuda(void) {
  const char *v = getenv("DTEMU_LIBCUDA");
  return v && *v ? v : "libcuda.so.1";
}

/* ---- stream capture and graphs ----
   A capture collects the work pushed on its stream (kernels, copies, memsets, cuBLAS calls,
   any thread's) instead of queueing it; a graph is that list; launching an instance queues
   the list, in order, on a stream as one item. Prohibited calls during a capture (a waiting
   copy, one to or from pageable memory, cudaStreamSynchronize of the captured stream;
   cudaDeviceSynchronize, cudaFree and cudaMalloc per the capture's mode and the calling thread's
   interaction mode, cudaThreadExchangeStreamCaptureMode) fail with
   cudaErrorStreamCaptureUnsupported and invalidate it: cudaStreamEndCapture then answers
   cudaErrorStreamCaptureInvalidated. */

struct dtemu_graph {
  int dev;
  std::shared_ptr<std::vector<std::function<void()>>> work;
};
struct dtemu_graph_exec {
  int dev;
  std::shared_ptr<std::vector<std::function<void()>>> work;
};

namespace {
std::mutex g_graph_mu;
std::set<dtemu_graph *> g_graphs;
std::set<dtemu_graph_exec *> g_execs;
std::atomic<int> g_fail_instantiate{0};
}

extern "C" {

void dtemu_fail_graph_instantiate(int n) { g_fail_instantiate.store(n); }

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  cudaError_t e = check_cur();
  if (e != cudaSuccess) return ret(e);
  if (!s) return ret(cudaErrorStreamCaptureUnsupported); /* the legacy stream cannot be captured */
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal && mode != cudaStreamCaptureModeRelaxed)
    return ret(cudaErrorInvalidValue);
  Stream *st = stream_of(s);
  if (st->dev != t_dev) die("cudaStreamBeginCapture: a stream of device %d while device %d is current", st->dev, t_dev);
  std::lock_guard<std::mutex> lk(st->mu);
  if (st->capturing) return ret(cudaErrorIllegalState);
  st->capturing = true;
  st->cap_invalid = false;
  st->cap_mode = (int)mode;
  st->cap_thread = std::this_thread::get_id();
  st->cap.clear();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
  if (!graph || !s) return ret(cudaErrorInvalidValue);
  Stream *st = stream_of(s);
  std::vector<std::function<void()>> work;
  {
    std::lock_guard<std::mutex> lk(st->mu);
    if (!st->capturing) return ret(cudaErrorIllegalState);
    if (st->cap_mode != cudaStreamCaptureModeRelaxed && st->cap_thread != std::this_thread::get_id())
      return ret(cudaErrorStreamCaptureWrongThread);
    st->capturing = false;
    work.swap(st->cap);
    *graph = nullptr;
    if (st->cap_invalid) {
      st->cap_invalid = false;
      return ret(cudaErrorStreamCaptureInvalidated);
    }
  }
  dtemu_graph *g = new dtemu_graph;
  g->dev = st->dev;
  g->work = std::make_shared<std::vector<std::function<void()>>>(std::move(work));
  std::lock_guard<std::mutex> lk(g_graph_mu);
  g_graphs.insert(g);
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
  if (!mode || (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
                *mode != cudaStreamCaptureModeRelaxed))
    return ret(cudaErrorInvalidValue);
  cudaStreamCaptureMode prev = t_cap_mode;
  t_cap_mode = *mode;
  *mode = prev;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status) {
  if (!status) return ret(cudaErrorInvalidValue);
  Stream *st = stream_of(s);
  std::lock_guard<std::mutex> lk(st->mu);
  *status = !st->capturing ? cudaStreamCaptureStatusNone
                           : st->cap_invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
  if (!exec || flags) return ret(cudaErrorInvalidValue);
  *exec = nullptr;
  std::lock_guard<std::mutex> lk(g_graph_mu);
  if (!g_graphs.count(graph)) die("cudaGraphInstantiateWithFlags: %p is not a graph", (void *)graph);
  int f = g_fail_instantiate.load();
  if (f > 0) {
    g_fail_instantiate.store(f - 1);
    return ret(cudaErrorMemoryAllocation);
  }
  dtemu_graph_exec *x = new dtemu_graph_exec;
  x->dev = graph->dev;
  x->work = graph->work; /* the instance does not depend on the graph afterwards */
  g_execs.insert(x);
  *exec = x;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  std::shared_ptr<std::vector<std::function<void()>>> work;
  {
    std::lock_guard<std::mutex> lk(g_graph_mu);
    if (!g_execs.count(exec)) die("cudaGraphLaunch: %p is not an instantiated graph", (void *)exec);
    work = exec->work;
  }
  Stream *st = stream_of(s);
  use_ctx();
  if (st->dev != exec->dev) die("cudaGraphLaunch: a graph of device %d on a stream of device %d", exec->dev, st->dev);
  st->push([work] {
    for (auto &f : *work) f();
  });
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  std::lock_guard<std::mutex> lk(g_graph_mu);
  if (!g_execs.erase(exec)) die("cudaGraphExecDestroy: %p is not an instantiated graph", (void *)exec);
  delete exec; /* launches still queued hold the work */
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard<std::mutex> lk(g_graph_mu);
  if (!g_graphs.erase(graph)) die("cudaGraphDestroy: %p is not a graph", (void *)graph);
  delete graph;
  return cudaSuccess;
}

} /* extern "C" */

/* ---- cuDNN ----
   The legacy convolution API devtensor_cuda.cu uses with DEVTENSOR_CUDNN: a handle per device
   bound to a stream; tensor, filter and convolution descriptors, each checked when set
   (CUDNN_STATUS_BAD_PARAM for sizes below 1, NOT_SUPPORTED for what is not emulated: other
   layouts, integer types) and again together when used (types agreeing, channels and groups,
   the output's size; BAD_PARAM otherwise); the heuristics' list in a fixed order, whose first
   forward algorithm asks for more workspace than any device has and whose next ones for some
   (so that a caller's workspace path and its fallback run), and the convolutions, queued on the
   handle's stream: inputs read as float or double (F32 reduced to TF32 where the math type
   allows tensor cores), sums in double, out = alpha op + beta out (out not read where beta is 0),
   rounded once. A given workspace is written over first, as a GPU's kernels would. */
namespace {
struct DnnHandle { int dev; cudaStream_t stream = nullptr; };
struct DnnTensor { bool set = false; cudnnDataType_t t = CUDNN_DATA_FLOAT; int n = 0, c = 0, h = 0, w = 0; };
struct DnnFilter { bool set = false; cudnnDataType_t t = CUDNN_DATA_FLOAT; int k = 0, c = 0, h = 0, w = 0; };
struct DnnConv {
  bool set = false;
  int ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1, groups = 1;
  cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
  cudnnDataType_t ct = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
std::mutex g_dnn_mu;
std::set<void *> g_dnn_objs; /* every live handle and descriptor */
std::map<std::string, std::pair<int, int>> g_dnn_fail; /* function -> (status, calls left) */
std::atomic<unsigned long long> g_dnn_convs{0}, g_dnn_ws{0};
std::atomic<int> g_dnn_last_algo[3] = {{-1}, {-1}, {-1}}; /* each direction's last algorithm run */
std::atomic<long long> g_dnn_max{INT_MAX};
std::atomic<size_t> g_dnn_align{0}; /* dtemu_cudnn_align: 0, each operand aligned to its element */

/* dtemu_cudnn_fail's injected status for this call of fn, if any */
bool dnn_injected(const char *fn, cudnnStatus_t *st) {
  std::lock_guard<std::mutex> lk(g_dnn_mu);
  auto it = g_dnn_fail.find(fn);
  if (it == g_dnn_fail.end() || it->second.second <= 0) return false;
  *st = (cudnnStatus_t)it->second.first;
  if (--it->second.second == 0) g_dnn_fail.erase(it);
  return true;
}
#define DNN_INJECT(fn)                          \
  do {                                          \
    cudnnStatus_t inj_;                         \
    if (dnn_injected(fn, &inj_)) return inj_;   \
  } while (0)

template <typename T> T *dnn_obj(void *p) {
  std::lock_guard<std::mutex> lk(g_dnn_mu);
  return p && g_dnn_objs.count(p) ? static_cast<T *>(p) : nullptr;
}
template <typename T> cudnnStatus_t dnn_create(T **out) {
  if (!out) return CUDNN_STATUS_BAD_PARAM;
  T *o = new T;
  std::lock_guard<std::mutex> lk(g_dnn_mu);
  g_dnn_objs.insert(o);
  *out = o;
  return CUDNN_STATUS_SUCCESS;
}
template <typename T> cudnnStatus_t dnn_destroy(T *o) {
  if (!o) return CUDNN_STATUS_SUCCESS;
  std::lock_guard<std::mutex> lk(g_dnn_mu);
  if (!g_dnn_objs.erase(o)) return CUDNN_STATUS_BAD_PARAM;
  delete o;
  return CUDNN_STATUS_SUCCESS;
}

DnnHandle *dnn_handle(cudnnHandle_t h, const char *what) {
  DnnHandle *d = dnn_obj<DnnHandle>(h);
  if (!d) die("%s: %p is not a cuDNN handle", what, (void *)h);
  if (d->dev != t_dev)
    die("%s: the handle belongs to device %d but device %d is current (cuDNN needs its handle's device current)", what, d->dev, t_dev);
  return d;
}

size_t dnn_size(cudnnDataType_t t) { return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_FLOAT ? 4 : 2; }
bool dnn_float_type(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16;
}
double dnn_load(cudnnDataType_t t, const void *p, size_t i, bool tf32) {
  if (t == CUDNN_DATA_DOUBLE) return static_cast<const double *>(p)[i];
  if (t == CUDNN_DATA_FLOAT) {
    float v = static_cast<const float *>(p)[i];
    return tf32 ? ex_reduce(CUBLAS_COMPUTE_32F_FAST_TF32, v) : v;
  }
  unsigned short x = static_cast<const unsigned short *>(p)[i];
  if (t == CUDNN_DATA_HALF) { __half h; h.x = x; return __half2float(h); }
  __nv_bfloat16 b; b.x = x; return __bfloat162float(b);
}
void dnn_store(cudnnDataType_t t, void *p, size_t i, double v) {
  if (t == CUDNN_DATA_DOUBLE) static_cast<double *>(p)[i] = v;
  else if (t == CUDNN_DATA_FLOAT) static_cast<float *>(p)[i] = (float)v;
  else if (t == CUDNN_DATA_HALF) static_cast<unsigned short *>(p)[i] = __float2half_rn((float)v).x;
  else static_cast<unsigned short *>(p)[i] = __float2bfloat16((float)v).x;
}

/* one convolution's geometry, checked from its four descriptors */
struct DnnGeom {
  cudnnDataType_t t;
  int n, c, h, w, k, kh, kw, oh, ow, ph, pw, sh, sw, dh, dw, groups;
  bool tf32;
};
cudnnStatus_t dnn_geom(const cudnnTensorDescriptor_t xd, const cudnnFilterDescriptor_t wd, const cudnnConvolutionDescriptor_t cd,
                       const cudnnTensorDescriptor_t yd, DnnGeom *g) {
  DnnTensor *x = dnn_obj<DnnTensor>(xd), *y = dnn_obj<DnnTensor>(yd);
  DnnFilter *w = dnn_obj<DnnFilter>(wd);
  DnnConv *c = dnn_obj<DnnConv>(cd);
  if (!x || !y || !w || !c || !x->set || !y->set || !w->set || !c->set) return CUDNN_STATUS_BAD_PARAM;
  const long long lim = g_dnn_max.load(); /* dtemu_cudnn_max_elements, when used too */
  if ((long long)x->n * x->c * x->h * x->w > lim || (long long)y->n * y->c * y->h * y->w > lim) return CUDNN_STATUS_NOT_SUPPORTED;
  if (x->t != y->t || x->t != w->t) return CUDNN_STATUS_BAD_PARAM;
  /* the compute types cuDNN takes for each data type */
  bool ok = x->t == CUDNN_DATA_DOUBLE ? c->ct == CUDNN_DATA_DOUBLE
          : x->t == CUDNN_DATA_HALF   ? c->ct == CUDNN_DATA_FLOAT || c->ct == CUDNN_DATA_HALF
                                      : c->ct == CUDNN_DATA_FLOAT;
  if (!ok) return CUDNN_STATUS_NOT_SUPPORTED;
  if (x->c != w->c * c->groups || w->k % c->groups != 0 || y->n != x->n || y->c != w->k) return CUDNN_STATUS_BAD_PARAM;
  long long oh = ((long long)x->h + 2LL * c->ph - (long long)c->dh * (w->h - 1) - 1) / c->sh + 1;
  long long ow = ((long long)x->w + 2LL * c->pw - (long long)c->dw * (w->w - 1) - 1) / c->sw + 1;
  if ((long long)x->h + 2LL * c->ph < (long long)c->dh * (w->h - 1) + 1 || (long long)x->w + 2LL * c->pw < (long long)c->dw * (w->w - 1) + 1 ||
      oh != y->h || ow != y->w)
    return CUDNN_STATUS_BAD_PARAM;
  if (c->mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_NOT_SUPPORTED; /* not emulated: the flipped kernel */
  *g = DnnGeom{x->t, x->n, x->c, x->h, x->w, w->k, w->h, w->w, y->h, y->w, c->ph, c->pw, c->sh, c->sw, c->dh, c->dw, c->groups,
               x->t == CUDNN_DATA_FLOAT && (c->math == CUDNN_TENSOR_OP_MATH || c->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)};
  return CUDNN_STATUS_SUCCESS;
}

/* The emulated algorithms: dir 0 forward, 1 backward data, 2 backward filter, in the heuristics'
   order; the workspace each asks for, or NOT_SUPPORTED. Forward: FFT (more than any device has),
   IMPLICIT_PRECOMP_GEMM (an index table), IMPLICIT_GEMM (none); backward data and filter: ALGO_1
   (one image's unfolded input), ALGO_0 (none). */
const int kDnnOrder[3][3] = {{CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                              CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM},
                             {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, -1},
                             {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, -1}};
const int kDnnCount[3] = {CUDNN_CONVOLUTION_FWD_ALGO_COUNT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT};
cudnnStatus_t dnn_ws(int dir, int algo, const DnnGeom &g, size_t *ws) {
  size_t col = (size_t)g.c / g.groups * g.kh * g.kw * g.oh * g.ow * dnn_size(g.t);
  if (dir == 0 && algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT) *ws = (size_t)1 << 50;
  else if (dir == 0 && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) *ws = (size_t)g.c / g.groups * g.kh * g.kw * sizeof(int);
  else if (dir == 0 && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) *ws = 0;
  else if (dir != 0 && algo == 1) *ws = col;
  else if (dir != 0 && algo == 0) *ws = 0;
  else return CUDNN_STATUS_NOT_SUPPORTED;
  return CUDNN_STATUS_SUCCESS;
}

/* the heuristics' list for dir: every algorithm, the emulated ones first in their order */
template <typename Perf, typename Algo>
cudnnStatus_t dnn_heuristics(int dir, cudnnHandle_t h, const DnnGeom &g, cudnnMathType_t math, int requested, int *returned, Perf *perf) {
  if (!returned || !perf || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  int n = 0;
  for (int i = 0; i < 3 && n < requested; i++) {
    if (kDnnOrder[dir][i] < 0) continue;
    Perf p;
    memset(&p, 0, sizeof p);
    p.algo = (Algo)kDnnOrder[dir][i];
    p.status = dnn_ws(dir, kDnnOrder[dir][i], g, &p.memory);
    p.time = (float)(i + 1);
    /* as cuDNN's: the gradients' algorithm 0 adds with atomics */
    p.determinism = dir != 0 && kDnnOrder[dir][i] == 0 ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;
    p.mathType = math;
    perf[n++] = p;
  }
  for (int a = 0; a < kDnnCount[dir] && n < requested; a++) {
    bool listed = false;
    for (int i = 0; i < 3; i++) listed = listed || kDnnOrder[dir][i] == a;
    if (listed) continue;
    Perf p;
    memset(&p, 0, sizeof p);
    p.algo = (Algo)a;
    p.status = CUDNN_STATUS_NOT_SUPPORTED;
    p.time = -1.0f;
    p.mathType = math;
    perf[n++] = p;
  }
  (void)h;
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnMathType_t dnn_math(cudnnConvolutionDescriptor_t cd) {
  DnnConv *c = dnn_obj<DnnConv>(cd);
  return c ? c->math : CUDNN_DEFAULT_MATH;
}

/* One convolution call: dir 0 y = conv(x, w), 1 dx from w and dy, 2 dw from x and dy; a, b its
   inputs in that order, out its output; checked, then queued on the handle's stream. */
cudnnStatus_t dnn_run(const char *what, int dir, cudnnHandle_t h, const void *alpha, const void *a, const void *b,
                      const cudnnTensorDescriptor_t xd, const cudnnFilterDescriptor_t wd, const cudnnConvolutionDescriptor_t cd,
                      const cudnnTensorDescriptor_t yd, int algo, void *ws, size_t ws_bytes, const void *beta, void *out) {
  DnnHandle *hd = dnn_handle(h, what);
  DnnGeom g;
  cudnnStatus_t st = dnn_geom(xd, wd, cd, yd, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!alpha || !beta || !a || !b || !out) return CUDNN_STATUS_BAD_PARAM;
  const size_t al_need = g_dnn_align.load() ? g_dnn_align.load() : dnn_size(g.t); /* the data pointers' alignment */
  if ((uintptr_t)a % al_need || (uintptr_t)b % al_need || (uintptr_t)out % al_need) return CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER;
  size_t need = 0;
  if (algo < 0 || algo >= kDnnCount[dir]) return CUDNN_STATUS_BAD_PARAM;
  if ((st = dnn_ws(dir, algo, g, &need)) != CUDNN_STATUS_SUCCESS) return st;
  if (ws_bytes < need || (need > 0 && !ws)) return CUDNN_STATUS_BAD_PARAM;
  const size_t es = dnn_size(g.t);
  const size_t nx = (size_t)g.n * g.c * g.h * g.w, nw = (size_t)g.k * (g.c / g.groups) * g.kh * g.kw, ny = (size_t)g.n * g.k * g.oh * g.ow;
  const void *x = dir == 1 ? nullptr : a, *w = dir == 1 ? a : dir == 0 ? b : nullptr, *dy = dir == 0 ? nullptr : b;
  const size_t sizes[3][3] = {{nx, nw, ny}, {nw, ny, nx}, {nx, ny, nw}};
  if (device_range(a, sizes[dir][0] * es, what) != hd->dev || device_range(b, sizes[dir][1] * es, what) != hd->dev ||
      device_range(out, sizes[dir][2] * es, what) != hd->dev)
    die("%s: an operand is on another device than the handle's (%d)", what, hd->dev);
  if (ws_bytes > 0 && ws && device_range(ws, ws_bytes, what) != hd->dev) die("%s: the workspace is on another device than the handle's", what);
  double al, be;
  if (g.t == CUDNN_DATA_DOUBLE) { al = *static_cast<const double *>(alpha); be = *static_cast<const double *>(beta); }
  else { al = *static_cast<const float *>(alpha); be = *static_cast<const float *>(beta); }
  g_dnn_convs++;
  g_dnn_last_algo[dir] = algo;
  if (ws && ws_bytes > 0) g_dnn_ws++;
  stream_of(hd->stream)->push([=] {
    if (ws && ws_bytes > 0) memset(ws, 0xab, ws_bytes);
    const int cg = g.c / g.groups, kg = g.k / g.groups;
    std::vector<double> acc(sizes[dir][2], 0.0);
    for (int n = 0; n < g.n; n++)
      for (int o = 0; o < g.k; o++)
        for (int oy = 0; oy < g.oh; oy++)
          for (int ox = 0; ox < g.ow; ox++) {
            const size_t yi = (((size_t)n * g.k + o) * g.oh + oy) * g.ow + ox;
            const double gy = dir == 0 ? 0.0 : dnn_load(g.t, dy, yi, g.tf32);
            double sum = 0;
            for (int ci = 0; ci < cg; ci++)
              for (int ky = 0; ky < g.kh; ky++)
                for (int kx = 0; kx < g.kw; kx++) {
                  const long iy = (long)oy * g.sh - g.ph + (long)ky * g.dh, ix = (long)ox * g.sw - g.pw + (long)kx * g.dw;
                  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                  const size_t xi = (((size_t)n * g.c + (size_t)(o / kg) * cg + ci) * g.h + iy) * g.w + ix;
                  const size_t wi = (((size_t)o * cg + ci) * g.kh + ky) * g.kw + kx;
                  if (dir == 0) sum += dnn_load(g.t, x, xi, g.tf32) * dnn_load(g.t, w, wi, g.tf32);
                  else if (dir == 1) acc[xi] += gy * dnn_load(g.t, w, wi, g.tf32);
                  else acc[wi] += gy * dnn_load(g.t, x, xi, g.tf32);
                }
            if (dir == 0) acc[yi] = sum;
          }
    for (size_t i = 0; i < acc.size(); i++) {
      double v = al * acc[i];
      if (be != 0.0) v += be * dnn_load(g.t, out, i, false);
      dnn_store(g.t, out, i, v);
    }
  });
  return CUDNN_STATUS_SUCCESS;
}
} /* namespace */

extern "C" {

unsigned long long dtemu_cudnn_convolutions(void) { return g_dnn_convs.load(); }
unsigned long long dtemu_cudnn_workspace_uses(void) { return g_dnn_ws.load(); }
int dtemu_cudnn_last_algo(int dir) { return dir >= 0 && dir < 3 ? g_dnn_last_algo[dir].load() : -1; }
void dtemu_cudnn_fail(const char *fn, int status, int count) {
  std::lock_guard<std::mutex> lk(g_dnn_mu);
  if (count <= 0) g_dnn_fail.erase(fn);
  else g_dnn_fail[fn] = std::make_pair(status, count);
}
void dtemu_cudnn_max_elements(long long n) { g_dnn_max.store(n > 0 ? n : INT_MAX); }
void dtemu_cudnn_align(size_t bytes) { g_dnn_align.store(bytes); }
unsigned long long dtemu_cudnn_live_objects(void) {
  std::lock_guard<std::mutex> lk(g_dnn_mu);
  return g_dnn_objs.size();
}

const char *cudnnGetErrorString(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH: return "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH";
    case CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH: return "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH";
    case CUDNN_STATUS_DEPRECATED: return "CUDNN_STATUS_DEPRECATED";
    case CUDNN_STATUS_LICENSE_ERROR: return "CUDNN_STATUS_LICENSE_ERROR";
    case CUDNN_STATUS_RUNTIME_IN_PROGRESS: return "CUDNN_STATUS_RUNTIME_IN_PROGRESS";
    case CUDNN_STATUS_RUNTIME_FP_OVERFLOW: return "CUDNN_STATUS_RUNTIME_FP_OVERFLOW";
    case CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED: return "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND: return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT: return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED: return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
    case CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED: return "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED_CUDART: return "CUDNN_STATUS_EXECUTION_FAILED_CUDART";
  }
  return "CUDNN_STATUS_UNKNOWN";
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  DNN_INJECT("cudnnCreate");
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  if (check_cur() != cudaSuccess) return CUDNN_STATUS_NOT_INITIALIZED;
  DnnHandle *h = nullptr;
  cudnnStatus_t st = dnn_create(&h);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  h->dev = t_dev;
  *handle = reinterpret_cast<cudnnHandle_t>(h);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) { return dnn_destroy(dnn_obj<DnnHandle>(handle)); }
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t s) {
  DNN_INJECT("cudnnSetStream");
  DnnHandle *h = dnn_handle(handle, "cudnnSetStream");
  if (stream_of(s)->dev != h->dev) return CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH;
  h->stream = s;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) {
  DNN_INJECT("cudnnCreateTensorDescriptor");
  DnnTensor *o = nullptr;
  cudnnStatus_t st = dnn_create(&o);
  if (st == CUDNN_STATUS_SUCCESS) *d = reinterpret_cast<cudnnTensorDescriptor_t>(o);
  return st;
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t t, int n, int c,
                                         int h, int w) {
  DNN_INJECT("cudnnSetTensor4dDescriptor");
  DnnTensor *o = dnn_obj<DnnTensor>(d);
  if (!o || n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW || !dnn_float_type(t)) return CUDNN_STATUS_NOT_SUPPORTED;
  if ((long double)n * c * h * w > (long double)g_dnn_max.load()) return CUDNN_STATUS_NOT_SUPPORTED; /* cuDNN: at most 2^31 - 1 elements */
  o->set = true; o->t = t; o->n = n; o->c = c; o->h = h; o->w = w;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return dnn_destroy(dnn_obj<DnnTensor>(d)); }

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) {
  DNN_INJECT("cudnnCreateFilterDescriptor");
  DnnFilter *o = nullptr;
  cudnnStatus_t st = dnn_create(&o);
  if (st == CUDNN_STATUS_SUCCESS) *d = reinterpret_cast<cudnnFilterDescriptor_t>(o);
  return st;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t format, int k, int c,
                                         int h, int w) {
  DNN_INJECT("cudnnSetFilter4dDescriptor");
  DnnFilter *o = dnn_obj<DnnFilter>(d);
  if (!o || k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW || !dnn_float_type(t)) return CUDNN_STATUS_NOT_SUPPORTED;
  o->set = true; o->t = t; o->k = k; o->c = c; o->h = h; o->w = w;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { return dnn_destroy(dnn_obj<DnnFilter>(d)); }

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) {
  DNN_INJECT("cudnnCreateConvolutionDescriptor");
  DnnConv *o = nullptr;
  cudnnStatus_t st = dnn_create(&o);
  if (st == CUDNN_STATUS_SUCCESS) *d = reinterpret_cast<cudnnConvolutionDescriptor_t>(o);
  return st;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType) {
  DNN_INJECT("cudnnSetConvolution2dDescriptor");
  DnnConv *o = dnn_obj<DnnConv>(d);
  if (!o || pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dilation_h <= 0 || dilation_w <= 0 ||
      (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION))
    return CUDNN_STATUS_BAD_PARAM;
  if (!dnn_float_type(computeType)) return CUDNN_STATUS_NOT_SUPPORTED;
  o->set = true; o->ph = pad_h; o->pw = pad_w; o->sh = u; o->sw = v; o->dh = dilation_h; o->dw = dilation_w;
  o->mode = mode; o->ct = computeType;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groupCount) {
  DNN_INJECT("cudnnSetConvolutionGroupCount");
  DnnConv *o = dnn_obj<DnnConv>(d);
  if (!o || groupCount < 1) return CUDNN_STATUS_BAD_PARAM;
  o->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t mathType) {
  DNN_INJECT("cudnnSetConvolutionMathType");
  DnnConv *o = dnn_obj<DnnConv>(d);
  if (!o || (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH && mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
             mathType != CUDNN_FMA_MATH))
    return CUDNN_STATUS_BAD_PARAM;
  o->math = mathType;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { return dnn_destroy(dnn_obj<DnnConv>(d)); }

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const cudnnFilterDescriptor_t wd,
                                                     const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t yd,
                                                     const int requested, int *returned, cudnnConvolutionFwdAlgoPerf_t *perf) {
  DNN_INJECT("cudnnGetConvolutionForwardAlgorithm_v7");
  (void)dnn_handle(h, "cudnnGetConvolutionForwardAlgorithm_v7");
  DnnGeom g;
  cudnnStatus_t st = dnn_geom(xd, wd, cd, yd, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  return dnn_heuristics<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(0, h, g, dnn_math(cd), requested, returned, perf);
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const cudnnFilterDescriptor_t wd,
                                                      const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t yd,
                                                      cudnnConvolutionFwdAlgo_t algo, size_t *size) {
  DNN_INJECT("cudnnGetConvolutionForwardWorkspaceSize");
  (void)dnn_handle(h, "cudnnGetConvolutionForwardWorkspaceSize");
  DnnGeom g;
  cudnnStatus_t st = dnn_geom(xd, wd, cd, yd, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!size) return CUDNN_STATUS_BAD_PARAM;
  return dnn_ws(0, (int)algo, g, size);
}
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,
                                      const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_bytes, const void *beta,
                                      const cudnnTensorDescriptor_t yd, void *y) {
  DNN_INJECT("cudnnConvolutionForward");
  return dnn_run("cudnnConvolutionForward", 0, h, alpha, x, w, xd, wd, cd, yd, (int)algo, ws, ws_bytes, beta, y);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t h, const cudnnFilterDescriptor_t wd,
                                                          const cudnnTensorDescriptor_t dyd, const cudnnConvolutionDescriptor_t cd,
                                                          const cudnnTensorDescriptor_t dxd, const int requested, int *returned,
                                                          cudnnConvolutionBwdDataAlgoPerf_t *perf) {
  DNN_INJECT("cudnnGetConvolutionBackwardDataAlgorithm_v7");
  (void)dnn_handle(h, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  DnnGeom g;
  cudnnStatus_t st = dnn_geom(dxd, wd, cd, dyd, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  return dnn_heuristics<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(1, h, g, dnn_math(cd), requested, returned,
                                                                                          perf);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t h, const cudnnFilterDescriptor_t wd,
                                                           const cudnnTensorDescriptor_t dyd, const cudnnConvolutionDescriptor_t cd,
                                                           const cudnnTensorDescriptor_t dxd, cudnnConvolutionBwdDataAlgo_t algo,
                                                           size_t *size) {
  DNN_INJECT("cudnnGetConvolutionBackwardDataWorkspaceSize");
  (void)dnn_handle(h, "cudnnGetConvolutionBackwardDataWorkspaceSize");
  DnnGeom g;
  cudnnStatus_t st = dnn_geom(dxd, wd, cd, dyd, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!size) return CUDNN_STATUS_BAD_PARAM;
  return dnn_ws(1, (int)algo, g, size);
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, const cudnnFilterDescriptor_t wd, const void *w,
                                           const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t cd,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *ws, size_t ws_bytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxd, void *dx) {
  DNN_INJECT("cudnnConvolutionBackwardData");
  return dnn_run("cudnnConvolutionBackwardData", 1, h, alpha, w, dy, dxd, wd, cd, dyd, (int)algo, ws, ws_bytes, beta, dx);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t xd,
                                                            const cudnnTensorDescriptor_t dyd, const cudnnConvolutionDescriptor_t cd,
                                                            const cudnnFilterDescriptor_t dwd, const int requested, int *returned,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
  DNN_INJECT("cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  (void)dnn_handle(h, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  DnnGeom g;
  cudnnStatus_t st = dnn_geom(xd, dwd, cd, dyd, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  return dnn_heuristics<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(2, h, g, dnn_math(cd), requested,
                                                                                              returned, perf);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t xd,
                                                             const cudnnTensorDescriptor_t dyd, const cudnnConvolutionDescriptor_t cd,
                                                             const cudnnFilterDescriptor_t dwd, cudnnConvolutionBwdFilterAlgo_t algo,
                                                             size_t *size) {
  DNN_INJECT("cudnnGetConvolutionBackwardFilterWorkspaceSize");
  (void)dnn_handle(h, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  DnnGeom g;
  cudnnStatus_t st = dnn_geom(xd, dwd, cd, dyd, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!size) return CUDNN_STATUS_BAD_PARAM;
  return dnn_ws(2, (int)algo, g, size);
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,
                                             const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t ws_bytes, const void *beta,
                                             const cudnnFilterDescriptor_t dwd, void *dw) {
  DNN_INJECT("cudnnConvolutionBackwardFilter");
  return dnn_run("cudnnConvolutionBackwardFilter", 2, h, alpha, x, dy, xd, dwd, cd, dyd, (int)algo, ws, ws_bytes, beta, dw);
}

} /* extern "C" */
