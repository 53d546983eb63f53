/* DT__TLS: thread-local storage. MSVC's C++ reports __cplusplus 199711 unless
   /Zc:__cplusplus, and its C has no _Thread_local: __declspec(thread) there. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define DT__TLS thread_local
#elif defined(_MSC_VER)
#define DT__TLS __declspec(thread)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DT__TLS _Thread_local
#else
#define DT__TLS __thread
#endif

#if defined(__MINGW_PRINTF_FORMAT) /* mingw-w64: C99's %zu with __USE_MINGW_ANSI_STDIO=1; msvcrt's printf lacks it */
#define DT__PRINTF(f, a) __attribute__((format(__MINGW_PRINTF_FORMAT, f, a)))
#elif defined(__GNUC__) || defined(__clang__)
#define DT__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DT__PRINTF(f, a)
#endif

/* Atomics on int, size_t and 64-bit integer objects (4 or 8 bytes):
   DT__ATOMIC_ADD(p, v) adds and returns the new value, DT__ATOMIC_LOAD(p)
   acquires, DT__ATOMIC_STORE(p, v) releases, DT__ATOMIC_CAS(p, &expected,
   desired) returns 1 when *p was expected and is now desired, else 0 with
   expected set to *p. Two implementations:
   - GCC, Clang and compilers that define __GNUC__: the __atomic builtins;
   - MSVC: the Interlocked intrinsics of <intrin.h> (full barriers; a load is a
     compare-exchange of 0 with 0), on x86, x64 and ARM64 alike. A mingw-w64
     build takes this path with -DDT__FORCE_INTERLOCKED (make mingw does).
   C11 <stdatomic.h> is not used: its functions take _Atomic objects only,
   which C99 and C++ before C++23 cannot declare. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(DT__FORCE_INTERLOCKED)
#define DT__ATOMIC_ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_ACQ_REL)
#define DT__ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define DT__ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define DT__ATOMIC_CAS(p, expected, desired) \
  __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#elif defined(_MSC_VER) || (defined(_WIN32) && defined(DT__FORCE_INTERLOCKED))
#include <intrin.h>
/* 8 bytes: __int64 (long long); 4 bytes: long (32 bits on Windows). Results
   are computed unsigned and come back as long long, converted by the caller. */
static long long dt__atomic_add(volatile void *p, long long v, size_t size) {
  if (size == 8) {
    long long old = _InterlockedExchangeAdd64((volatile long long *)p, v);
    return (long long)((unsigned long long)old + (unsigned long long)v);
  } else {
    long old = _InterlockedExchangeAdd((volatile long *)p, (long)v);
    return (long)((unsigned long)old + (unsigned long)(long)v);
  }
}
static long long dt__atomic_load(volatile void *p, size_t size) {
  if (size == 8) return _InterlockedCompareExchange64((volatile long long *)p, 0, 0);
  return _InterlockedCompareExchange((volatile long *)p, 0, 0);
}
static void dt__atomic_store(volatile void *p, long long v, size_t size) {
  if (size == 8) (void)_InterlockedExchange64((volatile long long *)p, v);
  else (void)_InterlockedExchange((volatile long *)p, (long)v);
}
static int dt__atomic_cas(volatile void *p, void *expected, long long desired, size_t size) {
  if (size == 8) {
    long long e, old;
    memcpy(&e, expected, 8);
    old = _InterlockedCompareExchange64((volatile long long *)p, desired, e);
    if (old == e) return 1;
    memcpy(expected, &old, 8);
  } else {
    long e, old;
    memcpy(&e, expected, 4);
    old = _InterlockedCompareExchange((volatile long *)p, (long)desired, e);
    if (old == e) return 1;
    memcpy(expected, &old, 4);
  }
  return 0;
}
#define DT__ATOMIC_ADD(p, v) dt__atomic_add((p), (long long)(v), sizeof *(p))
#define DT__ATOMIC_LOAD(p) dt__atomic_load((p), sizeof *(p))
#define DT__ATOMIC_STORE(p, v) dt__atomic_store((p), (long long)(v), sizeof *(p))
#define DT__ATOMIC_CAS(p, expected, desired) dt__atomic_cas((p), (expected), (long long)(desired), sizeof *(p))
#else
#error "devtensor: no atomics for this compiler (GCC/Clang __atomic builtins or MSVC Interlocked intrinsics)"
#endif

/* One pause instruction, for spin-waits (the pool's workers, a collective's first microseconds). */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define DT__CPU_RELAX() __builtin_ia32_pause()
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
#define DT__CPU_RELAX() __asm__ __volatile__("yield")
#else
#define DT__CPU_RELAX() ((void)0)
#endif

/* Giving the processor away while waiting for another thread: the first
   waits yield, later ones sleep a millisecond or two (a GPU driver can take a
   second to answer its first query). */
#if defined(_WIN32)
/* <windows.h>'s declarations (DWORD is unsigned long, BOOL int), without its macros */
#ifdef __cplusplus
extern "C" {
#endif
__declspec(dllimport) void __stdcall Sleep(unsigned long ms);
__declspec(dllimport) int __stdcall SwitchToThread(void);
#ifdef __cplusplus
}
#endif
static void dt__pause(int waits) {
  if (waits < 64) (void)SwitchToThread();
  else Sleep(1);
}
#elif defined(__unix__) || defined(__unix) || defined(__APPLE__)
#include <poll.h>
#include <sched.h>
static void dt__pause(int waits) {
  if (waits < 64) (void)sched_yield();
  else (void)poll(NULL, 0, 2);
}
#else
static void dt__pause(int waits) { (void)waits; } /* no threads to yield to that we know of */
#endif

static void dt__fork_guard(void);

/* A lock for a few loads and stores (the random generator's state, the error
   handler and its argument): 0 free, 1 held. */
static void dt__lock(volatile int *l) {
  int waits = 0, expected = 0;
  dt__fork_guard();
  while (!DT__ATOMIC_CAS(l, &expected, 1)) {
    expected = 0;
    dt__pause(waits);
    if (waits < 64) waits++;
  }
}
static void dt__unlock(volatile int *l) { DT__ATOMIC_STORE(l, 0); }
