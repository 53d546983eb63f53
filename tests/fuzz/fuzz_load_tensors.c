/* libFuzzer target: dt_load_tensors (every tensor of a safetensors file) on
   arbitrary bytes. Invariants (a violation aborts):
   - loading never crashes, leaks or reads out of bounds (the sanitizers), and a
     header that claims more data than the file holds allocates no more than the file;
   - a refused file gives DT_ERR_FORMAT or DT_ERR_DTYPE (or DT_ERR_SHAPE), the same
     status from dt_last_status(), a message starting "dt_load_tensors: ", and
     *n = 0, *names = *ts = NULL;
   - an accepted file round-trips: dt_save_tensors of what was loaded (when the
     names are ones it writes), loaded again, gives the same names, dtypes, shapes
     and bytes.
   Seeds: tests/fuzz/corpus_safetensors (shared with fuzz_safetensors).
   Without FUZZ_LIBFUZZER it has a main that replays files or directories. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../../devtensor.h"

#define FZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_load_tensors: invariant failed: %s (%s:%d); last error: %s\n", \
                                                 #c, __FILE__, __LINE__, dt_last_error()); abort(); } } while (0)

static char fz_path[256], fz_path2[256];

static void fz_cleanup(void) { if (fz_path[0]) { remove(fz_path); remove(fz_path2); } }

static void fz_init(void) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !tmp[0]) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(fz_path, sizeof fz_path, "%s/dt_fuzz_load_tensors_%ld.bin", tmp, (long)getpid());
  snprintf(fz_path2, sizeof fz_path2, "%s/dt_fuzz_load_tensors_%ld.out", tmp, (long)getpid());
  atexit(fz_cleanup);
}

/* names dt_save_tensors writes: not empty, no control characters (loaded names are unique and UTF-8) */
static int fz_writable(char **names, int n) {
  int i;
  const char *p;
  for (i = 0; i < n; i++) {
    if (!names[i][0]) return 0;
    for (p = names[i]; *p; p++) if ((unsigned char)*p < 0x20) return 0;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  FILE *f;
  int n = -1, n2 = -1, i, k;
  char **names = (char **)&n, **names2 = NULL;
  dt_tensor **ts = (dt_tensor **)&n, **ts2 = NULL;
  dt_status s;
  if (!ready) { fz_init(); ready = 1; }
  f = fopen(fz_path, "wb");
  FZ_CHECK(f != NULL);
  FZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
  FZ_CHECK(fclose(f) == 0);
  dt_clear_error();
  s = dt_load_tensors(fz_path, dt_cpu(), &n, &names, &ts);
  FZ_CHECK(dt_last_status() == s);
  if (s != DT_OK) {
    FZ_CHECK(s == DT_ERR_FORMAT || s == DT_ERR_DTYPE || s == DT_ERR_SHAPE);
    FZ_CHECK(strncmp(dt_last_error(), "dt_load_tensors: ", 17) == 0);
    FZ_CHECK(n == 0 && names == NULL && ts == NULL);
    return 0;
  }
  FZ_CHECK(n >= 0 && (n == 0 || (names && ts)));
  for (i = 0; i < n; i++) FZ_CHECK(names[i] && ts[i] && strcmp(names[i], "__metadata__") != 0);
  if (fz_writable(names, n)) {
    FZ_CHECK(dt_save_tensors(fz_path2, (const char *const *)names, (const dt_tensor *const *)ts, n) == DT_OK);
    FZ_CHECK(dt_load_tensors(fz_path2, dt_cpu(), &n2, &names2, &ts2) == DT_OK);
    FZ_CHECK(n2 == n);
    for (i = 0; i < n; i++) {
      FZ_CHECK(strcmp(names[i], names2[i]) == 0 && dt_dtype_of(ts[i]) == dt_dtype_of(ts2[i]));
      FZ_CHECK(dt_ndim(ts[i]) == dt_ndim(ts2[i]) && dt_nbytes(ts[i]) == dt_nbytes(ts2[i]));
      for (k = 0; k < dt_ndim(ts[i]); k++) FZ_CHECK(dt_dim(ts[i], k) == dt_dim(ts2[i], k));
      FZ_CHECK(dt_nbytes(ts[i]) == 0 || memcmp(dt_data_ptr(ts[i]), dt_data_ptr(ts2[i]), dt_nbytes(ts[i])) == 0);
    }
    dt_free_tensors(n2, names2, ts2);
  }
  dt_free_tensors(n, names, ts);
  return 0;
}

#ifndef FUZZ_LIBFUZZER
#define FUZZ_NAME "fuzz_load_tensors_replay"
#define FUZZ_DEFAULT_DIR "tests/fuzz/corpus_safetensors"
#include "replay_main.h"
#endif
