/* libFuzzer target: dt_snprint on arbitrary tensors and buffer sizes.

   The input picks a dtype, a shape (up to 4 dims, each 0..63, so that both
   the full and the summarised "..." forms appear) and the values (its bytes,
   repeated: NaN, infinities, subnormals and extremes included), then a
   buffer size. When that shape is empty (a dim is 0) and bit 6 of the second
   byte is set, the bytes after the first four (values an empty tensor does
   not need) give the dims instead, one byte each: v = b & 63, and b & 64
   makes it 2^v (INT64_MAX for v = 63); so (0, 2^62, 4) and dims whose product
   overflows int64 appear (00 44 00 50 00 7e 04 is (0, 2^62, 4)). Those dims
   are used when one of them is 0. Invariants (a violation aborts):
   - dt_snprint keeps snprintf's contract: the same length for every buffer
     size, never a byte written past n (the buffer is exactly n bytes, under
     ASan), the text NUL-terminated at min(len, n - 1) and a prefix of the
     full text; it starts with "tensor(" and ends with ")";
   - dt_fprint writes the same text and a newline.

   libFuzzer build (from the repository root):
     clang -g -O1 -fsanitize=fuzzer,address,undefined -DFUZZ_LIBFUZZER -I. \
       tests/fuzz/fuzz_print.c -o build/fuzz/fuzz_print -lm
   Without FUZZ_LIBFUZZER it has a main that replays files or directories
   (default tests/fuzz/corpus_print). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../../devtensor.h"

#define FZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_print: invariant failed: %s (%s:%d); last error: %s\n", \
                                                 #c, __FILE__, __LINE__, dt_last_error()); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *sink;
  dt_dtype t;
  dt_shape s;
  dt_tensor *x;
  unsigned char *host;
  char *full, *buf;
  size_t es, nb, i, n, flen;
  int len, d, empty = 0;
  int64_t numel = 1;
  if (size < 4) return 0;
  t = (dt_dtype)(data[0] % 6); /* F32, F64, I32, I64, U8, BOOL (bool bytes as given: nonzero prints True) */
  s = dt_shape0();
  s.ndim = data[1] % 5;
  for (d = 0; d < s.ndim; d++) {
    s.dims[d] = (int64_t)(data[2 + d % 2] >> (d * 2 % 6)) & 63;
    if (d >= 2) s.dims[d] = (s.dims[d] & 3) + (data[1] >> 7); /* keep 3-d and 4-d tensors small */
    if (s.dims[d] == 0) empty = 1;
  }
  if (empty && (data[1] & 0x40) && size >= 4 + (size_t)s.ndim) { /* huge empty dims */
    dt_shape h = s;
    int zero = 0;
    for (d = 0; d < s.ndim; d++) {
      int v = data[4 + d] & 63;
      h.dims[d] = !(data[4 + d] & 64) ? v : v == 63 ? INT64_MAX : (int64_t)1 << v;
      if (h.dims[d] == 0) zero = 1;
    }
    if (zero) s = h;
  }
  for (d = 0; d < s.ndim; d++) numel = empty ? 0 : numel * s.dims[d];
  n = (size_t)data[3] * 7 % 1200;  /* the buffer size: 0 .. 1199 */
  es = dt_dtype_size(t);
  nb = (size_t)numel * es;
  host = (unsigned char *)malloc(nb + 1);
  FZ_CHECK(host != NULL);
  for (i = 0; i < nb; i++) host[i] = size > 4 ? data[4 + i % (size - 4)] : 0;
  x = dt_from_data(host, s, t, dt_cpu());
  FZ_CHECK(x != NULL);
  len = dt_snprint(NULL, 0, x);
  FZ_CHECK(len >= 8);
  full = (char *)malloc((size_t)len + 1);
  FZ_CHECK(full != NULL);
  FZ_CHECK(dt_snprint(full, (size_t)len + 1, x) == len);
  FZ_CHECK(strlen(full) == (size_t)len && strncmp(full, "tensor(", 7) == 0 && full[len - 1] == ')');
  buf = (char *)malloc(n ? n : 1);
  FZ_CHECK(buf != NULL);
  FZ_CHECK(dt_snprint(n ? buf : NULL, n, x) == len);
  if (n) {
    flen = strlen(buf);
    FZ_CHECK(flen == ((size_t)len < n - 1 ? (size_t)len : n - 1));
    FZ_CHECK(memcmp(buf, full, flen) == 0);
  }
  /* dt_fprint: the same text and a newline */
  if (!sink) sink = tmpfile();
  if (sink) {
    char *back = (char *)malloc((size_t)len + 2);
    FZ_CHECK(back != NULL);
    rewind(sink);
    FZ_CHECK(dt_fprint(sink, x) == DT_OK);
    fflush(sink);
    flen = (size_t)ftell(sink);
    FZ_CHECK(flen == (size_t)len + 1);
    rewind(sink);
    FZ_CHECK(fread(back, 1, flen, sink) == flen && memcmp(back, full, (size_t)len) == 0 && back[len] == '\n');
    free(back);
  }
  free(buf); free(full); free(host);
  dt_release(x);
  return 0;
}

#ifndef FUZZ_LIBFUZZER
#define FUZZ_NAME "fuzz_print_replay"
#define FUZZ_DEFAULT_DIR "tests/fuzz/corpus_print"
#include "replay_main.h"
#endif
