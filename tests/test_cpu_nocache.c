/* The CPU allocator built without its cache (DEVTENSOR_CPU_NO_CACHE): large tensors are still
   mapped 2 MiB-aligned, and each one's whole mapping goes back when it is released. A tensor
   whose byte count is not a multiple of 2 MiB left up to 2 MiB of address space behind at every
   release before (munmap of an unaligned tail fails): 1000 of them grew VmSize by 2 GiB. */
#define DEVTENSOR_CPU_NO_CACHE
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

/* the process's address space in kB, from /proc (Linux); -1 elsewhere */
static long t_vmsize_kb(void) {
  char line[256];
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmSize:", 7) == 0) v = atol(line + 7);
  fclose(f);
  return v;
}

/* 200 tensors: the 2 MiB left behind at each release would grow VmSize by 400 MiB, far past
   the 64 MiB allowed (1000 took half a minute under wine, in make mingw) */
#define T_NOCACHE_TENSORS 200

static void test_large_blocks_unmapped_whole(void) {
  long before = t_vmsize_kb(), after;
  int i, ok = 1;
  if (before < 0) T_SKIP("no /proc/self/status on this system");
#if DT__CPU_ASAN
  T_SKIP("under AddressSanitizer: large blocks come from malloc, and its quarantine keeps freed memory mapped");
#endif
  for (i = 0; i < T_NOCACHE_TENSORS && ok; i++) {
    dt_tensor *t = dt_empty(dt_shape1((1 << 20) + 1), DT_F32, dt_cpu()); /* 4 MiB + 4 bytes */
    ok = t != NULL && dt_fill_(t, 1.0) == DT_OK;
    if (ok) ok = ((const float *)dt_data_ptr(t))[1 << 20] == 1.0f; /* the last element, on the CPU */
    dt_release(t);
  }
  T_CHECK_MSG(ok, "allocation %d: %s", i, dt_last_error());
  after = t_vmsize_kb();
  T_CHECK_MSG(after - before < 64 * 1024, "VmSize grew from %ld kB to %ld kB over %d tensors of 4 MiB + 4 bytes", before, after,
              T_NOCACHE_TENSORS);
}

int main(void) {
  T_RUN(test_large_blocks_unmapped_whole);
  return t_finish();
}
