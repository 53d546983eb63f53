/* Host memory for tensors comes from a caching allocator, as on the GPU (README, Memory):
   - a request is rounded up to a size class: 64 bytes at least, four classes per power of two
     (at most a quarter more than asked); from DT__CPU_HUGE (4 MiB) on, also to a multiple of 2 MiB;
   - blocks of DT__CPU_HUGE and more are mapped straight from the kernel on Linux (mmap), 2 MiB
     aligned, with madvise(MADV_HUGEPAGE): a fresh 64 MiB block faults in 32 huge pages instead of
     16384 small ones; smaller blocks, and every block elsewhere, come from DT_MALLOC;
   - a released block goes to its class's free list (linked through the block's first bytes) and
     the next request of that class takes it without asking the system; the cache holds at most
     DEVTENSOR_CPU_CACHE_MAX bytes (default 1 GiB; 0, or DEVTENSOR_CPU_NO_CACHE: no cache): a block that does not fit in it
     pushes out cached blocks of the largest classes first, or, larger than the cap itself, goes
     straight back to the system;
   - when the system refuses, the cache is given back and the request tried once more;
   - `allocated` counts the rounded sizes of live tensors; `reserved` every byte held: live
     tensors, the matmul's packing buffers while they are in use, and the cache;
   - with user-defined DT_MALLOC/DT_FREE, every block is one DT_MALLOC of the exact size, given back
     with DT_FREE on release: no rounding, no cache, no mmap (the user's allocator sees and decides
     everything); reserved == allocated + packing buffers in use.
   One spinlock (DT__ATOMIC_CAS) guards the lists and counters; no system call is made under it.
   Under AddressSanitizer the cache stays but mmap does not, and cached blocks are poisoned, so a
   use after release is still reported. */

#ifndef DEVTENSOR_CPU_CACHE_MAX
#define DEVTENSOR_CPU_CACHE_MAX ((size_t)1 << 30)
#endif
#define DT__CPU_HUGE ((size_t)4 << 20)
#define DT__CPU_PAGE2M ((size_t)2 << 20)
#define DT__CPU_NBINS 240

#if defined(__SANITIZE_ADDRESS__)
#define DT__CPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DT__CPU_ASAN 1
#endif
#endif
#ifndef DT__CPU_ASAN
#define DT__CPU_ASAN 0
#endif

#if defined(DT__HOST_DEFAULT_ALLOC) && !defined(DEVTENSOR_CPU_NO_CACHE)
#define DT__CPU_CACHE 1
#else
#define DT__CPU_CACHE 0
#endif

/* mmap + madvise(MADV_HUGEPAGE) for large blocks: Linux, on the architectures whose MAP_ANONYMOUS
   is 0x20 (ISO C modes hide it and madvise; their kernel values are used then). */
#if defined(DT__HOST_DEFAULT_ALLOC) && !DT__CPU_ASAN && !defined(DEVTENSOR_CPU_NO_MMAP) && defined(__linux__) && \
    (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || defined(__riscv) || \
     defined(__powerpc__) || defined(__s390__))
#define DT__CPU_MMAP 1
#include <sys/mman.h>
#ifdef MAP_ANONYMOUS
#define DT__CPU_MAP_ANON MAP_ANONYMOUS
#else
#define DT__CPU_MAP_ANON 0x20
#endif
#ifdef MADV_HUGEPAGE
#define DT__CPU_MADV_HUGEPAGE MADV_HUGEPAGE
#else /* madvise is hidden with MADV_HUGEPAGE (ISO C mode) */
#define DT__CPU_MADV_HUGEPAGE 14
#ifdef __cplusplus
extern "C" int madvise(void *addr, size_t len, int advice);
#else
extern int madvise(void *addr, size_t len, int advice);
#endif
#endif
#else
#define DT__CPU_MMAP 0
#endif

#if DT__CPU_ASAN && DT__CPU_CACHE
#ifdef __cplusplus
extern "C" {
#endif
void __asan_poison_memory_region(void const volatile *addr, size_t size);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#ifdef __cplusplus
}
#endif
#endif
/* Under AddressSanitizer a cached block of n bytes at p is unaddressable but for its first two
   words (the free list's link and the block's size); taken from the cache, addressable again. */
static inline void dt__cpu_poison(void *p, size_t n) {
#if DT__CPU_ASAN && DT__CPU_CACHE
  __asan_poison_memory_region((const char *)p + 2 * sizeof(size_t), n - 2 * sizeof(size_t));
#else
  (void)p; (void)n;
#endif
}
static inline void dt__cpu_unpoison(void *p, size_t n) {
#if DT__CPU_ASAN && DT__CPU_CACHE
  __asan_unpoison_memory_region(p, n);
#else
  (void)p; (void)n;
#endif
}

static int dt__cpu_lock_word;
static size_t dt__cpu_allocated, dt__cpu_peak, dt__cpu_scratch, dt__cpu_cached;
#if DT__CPU_CACHE
static void *dt__cpu_bins[DT__CPU_NBINS]; /* free blocks of each class, linked through their first word */
#endif

static void dt__cpu_lock(void) {
  dt__fork_guard();
  for (;;) {
    int expected = 0, spins = 0, waits = 0;
    if (DT__ATOMIC_CAS(&dt__cpu_lock_word, &expected, 1)) return;
    /* held for a few list operations: spin a little, then give the core to the holder (on a
       loaded machine it may be waiting for one) */
    while (DT__ATOMIC_LOAD(&dt__cpu_lock_word)) {
      if (++spins < 100) continue;
      dt__pause(waits);
      if (waits < 64) waits++;
    }
  }
}
static void dt__cpu_unlock(void) { DT__ATOMIC_STORE(&dt__cpu_lock_word, 0); }

/* fork() while another thread holds one of these locks would leave it held forever in the
   child (glibc's malloc, which the allocator's cache stands in front of, guards its own locks
   the same way): before a fork every lock is taken, in one order, and both processes give
   them back after it, so the child starts with every structure whole and every lock free. */
#if (defined(__unix__) || defined(__unix) || defined(__APPLE__)) && !defined(_WIN32)
#include <pthread.h>
static void dt__fork_prepare(void) { dt__lock(&dt__err_lock); dt__lock(&dt__rng_lock); dt__cpu_lock(); }
static void dt__fork_release(void) { dt__cpu_unlock(); dt__unlock(&dt__rng_lock); dt__unlock(&dt__err_lock); }
static int dt__fork_registered;
static void dt__fork_guard(void) {
  int expected = 0;
  if (DT__ATOMIC_LOAD(&dt__fork_registered)) return;
  if (DT__ATOMIC_CAS(&dt__fork_registered, &expected, 1) &&
      pthread_atfork(dt__fork_prepare, dt__fork_release, dt__fork_release) != 0)
    DT__ATOMIC_STORE(&dt__fork_registered, 0); /* not registered (out of memory): try again next time */
}
#else
static void dt__fork_guard(void) {}
#endif

/* The class of a request: its bin and rounded size; 0 when nbytes is too large to round. */
static int dt__cpu_class(size_t nbytes, size_t *rounded) {
#if DT__CPU_CACHE
  size_t r = nbytes < 64 ? 64 : nbytes, base, step, size;
  int e = 6;
  if (r > (SIZE_MAX >> 2)) { *rounded = 0; return 0; }
  while (((size_t)1 << (e + 1)) < r) e++;          /* 2^e < r <= 2^(e+1), or r == 64 */
  base = (size_t)1 << e;
  step = base >> 2;
  size = r <= base ? base : base + (r - base + step - 1) / step * step;
  if (size >= DT__CPU_HUGE) size = (size + DT__CPU_PAGE2M - 1) & ~(DT__CPU_PAGE2M - 1);
  *rounded = size;
  return (e - 6) * 4 + (int)((size - base + step - 1) / step); /* size's own class for 2 MiB roundings */
#else
  *rounded = nbytes ? nbytes : 1;
  return 0;
#endif
}

#if DT__CPU_MMAP
/* A large block's mapped size: whole 2 MiB pages (the cache's sizes already are; without the
   cache, a tensor's own byte count is not, and munmap of an unaligned tail fails). 0: too large. */
static size_t dt__cpu_map_size(size_t size) {
  if (size > SIZE_MAX - 2 * DT__CPU_PAGE2M) return 0;
  return (size + DT__CPU_PAGE2M - 1) & ~(DT__CPU_PAGE2M - 1);
}
#endif

static void *dt__cpu_sys_alloc(size_t size) {
#if DT__CPU_MMAP
  if (size >= DT__CPU_HUGE) {
    char *p;
    size_t head;
    if (!(size = dt__cpu_map_size(size))) return NULL;
    p = (char *)mmap(NULL, size + DT__CPU_PAGE2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | DT__CPU_MAP_ANON, -1, 0);
    if (p == (char *)MAP_FAILED) return NULL;
    head = (size_t)(-(uintptr_t)p & (DT__CPU_PAGE2M - 1)); /* to the next 2 MiB boundary */
    if (head) munmap(p, head);
    if (DT__CPU_PAGE2M - head) munmap(p + head + size, DT__CPU_PAGE2M - head);
    (void)madvise(p + head, size, DT__CPU_MADV_HUGEPAGE); /* advice only: without THP it changes nothing */
    return p + head;
  }
#endif
  return DT_MALLOC(size);
}

static void dt__cpu_sys_free(void *p, size_t size) {
#if DT__CPU_MMAP
  if (size >= DT__CPU_HUGE) {
    munmap(p, dt__cpu_map_size(size));
    return;
  }
#endif
  (void)size;
  DT_FREE(p);
}

#if DT__CPU_CACHE
/* Gives back a list of cached blocks (taken out under the lock), outside the lock. */
static void dt__cpu_release_list(void *list) {
  while (list) {
    void *next;
    size_t size;
    memcpy(&next, list, sizeof next);
    memcpy(&size, (char *)list + sizeof next, sizeof size);
    dt__cpu_sys_free(list, size);
    list = next;
  }
}

/* Takes blocks out of the cache, largest classes first, until at most keep bytes stay; returns them
   as a list (next pointer, then size, at the start of each). Under the lock. */
static void *dt__cpu_trim_locked(size_t keep) {
  void *out = NULL;
  int bin;
  for (bin = DT__CPU_NBINS - 1; bin >= 0 && dt__cpu_cached > keep; bin--)
    while (dt__cpu_bins[bin] && dt__cpu_cached > keep) {
      void *b = dt__cpu_bins[bin], *next;
      size_t size;
      dt__cpu_unpoison(b, 2 * sizeof(size_t));
      memcpy(&next, b, sizeof next);
      memcpy(&size, (char *)b + sizeof next, sizeof size);
      dt__cpu_unpoison(b, size);
      dt__cpu_bins[bin] = next;
      dt__cpu_cached -= size;
      memcpy(b, &out, sizeof out);
      out = b;
    }
  return out;
}
#endif

/* A block of at least nbytes (its rounded size in *rounded); NULL when the system has none. tensor:
   counted in `allocated` (else a packing buffer). */
static void *dt__cpu_block_get(size_t nbytes, int tensor, size_t *rounded) {
  size_t size;
  void *p = NULL;
  int bin = dt__cpu_class(nbytes, &size);
  if (size < nbytes) return NULL; /* too large to round */
#if !DT__CPU_CACHE
  (void)bin;
#else
  dt__cpu_lock();
  if ((p = dt__cpu_bins[bin]) != NULL) {
    void *next;
    dt__cpu_unpoison(p, size);
    memcpy(&next, p, sizeof next);
    dt__cpu_bins[bin] = next;
    dt__cpu_cached -= size;
  }
  dt__cpu_unlock();
#endif
  if (!p && !(p = dt__cpu_sys_alloc(size))) {
#if DT__CPU_CACHE
    void *list;
    dt__cpu_lock();
    list = dt__cpu_trim_locked(0);
    dt__cpu_unlock();
    if (list) {
      dt__cpu_release_list(list);
      p = dt__cpu_sys_alloc(size);
    }
#endif
    if (!p) return NULL;
  }
  dt__cpu_lock();
  if (tensor) {
    dt__cpu_allocated += size;
    if (dt__cpu_allocated > dt__cpu_peak) dt__cpu_peak = dt__cpu_allocated;
  } else dt__cpu_scratch += size;
  dt__cpu_unlock();
  *rounded = size;
  return p;
}

/* Back to the cache (or the system) a block dt__cpu_block_get gave for nbytes. */
static void dt__cpu_block_put(void *p, size_t nbytes, int tensor) {
  size_t size;
  int bin = dt__cpu_class(nbytes, &size);
  void *list = NULL;
  if (!p) return;
  dt__cpu_lock();
  if (tensor) dt__cpu_allocated -= size;
  else dt__cpu_scratch -= size;
#if DT__CPU_CACHE
  if (size <= DEVTENSOR_CPU_CACHE_MAX) {
    if (dt__cpu_cached + size > DEVTENSOR_CPU_CACHE_MAX) list = dt__cpu_trim_locked(DEVTENSOR_CPU_CACHE_MAX - size);
    memcpy(p, &dt__cpu_bins[bin], sizeof(void *));
    memcpy((char *)p + sizeof(void *), &size, sizeof size);
    dt__cpu_bins[bin] = p;
    dt__cpu_cached += size;
    dt__cpu_poison(p, size);
    p = NULL;
  }
#else
  (void)bin;
#endif
  dt__cpu_unlock();
#if DT__CPU_CACHE
  dt__cpu_release_list(list);
#else
  (void)list;
#endif
  if (p) dt__cpu_sys_free(p, size);
}

static dt_status dt__cpu_alloc(int dev, size_t nbytes, void **out) {
  size_t rounded;
  char b[32];
  (void)dev;
  if (!(*out = dt__cpu_block_get(nbytes, 1, &rounded))) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "out of memory on cpu: tried to allocate %s",
             dt__bytes_str((double)nbytes, b, sizeof b));
    return DT_ERR_OUT_OF_MEMORY;
  }
  return DT_OK;
}

static void dt__cpu_free(int dev, void *p, size_t nbytes) {
  (void)dev;
  dt__cpu_block_put(p, nbytes, 1);
}

static dt_status dt__cpu_memory_stats(int dev, dt_memory_stats *out) {
  (void)dev;
  dt__cpu_lock();
  out->allocated = dt__cpu_allocated;
  out->reserved = dt__cpu_allocated + dt__cpu_scratch + dt__cpu_cached;
  out->peak_allocated = dt__cpu_peak;
  dt__cpu_unlock();
  return DT_OK;
}

static dt_status dt__cpu_empty_cache(int dev) {
  (void)dev;
#if DT__CPU_CACHE
  {
    void *list;
    dt__cpu_lock();
    list = dt__cpu_trim_locked(0);
    dt__cpu_unlock();
    dt__cpu_release_list(list);
  }
#endif
  return DT_OK;
}

static dt_status dt__cpu_copy(int dst_dev, void *dst, int src_dev, const void *src, size_t nbytes) {
  (void)dst_dev; (void)src_dev;
  if (nbytes == 0) return DT_OK;
  if (!dst || !src) return DT_ERR_INVALID_ARGUMENT; /* callers check first; GCC -O3 -Wnonnull cannot tell */
  memmove(dst, src, nbytes);
  return DT_OK;
}

static dt_status dt__cpu_synchronize(int dev) { (void)dev; return DT_OK; }
static void *dt__cpu_stream(int dev) { (void)dev; return NULL; }
