/* libFuzzer target: dt_device_parse (and dt_device_str) on arbitrary bytes.

   The input, NUL-terminated, is parsed and compared with a reference
   grammar: ("cpu" | "cuda" | "gpu") [":" digits], the index at most
   INT_MAX and 0 for the CPU. Invariants (a violation aborts):
   - accepted exactly when the reference accepts, with the same device;
   - a refusal is DT_ERR_INVALID_ARGUMENT with a message starting
     "dt_device_parse: ", and leaves *out as it was;
   - dt_device_str of the result parses back to the same device, and
     dt_device_str truncates like snprintf for every buffer size.

   libFuzzer build (from the repository root):
     clang -g -O1 -fsanitize=fuzzer,address,undefined -DFUZZ_LIBFUZZER -I. \
       tests/fuzz/fuzz_device_parse.c -o build/fuzz/fuzz_device_parse -lm
   Without FUZZ_LIBFUZZER it has a main that replays files or directories
   (default tests/fuzz/corpus_device). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../../devtensor.h"

#define FZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_device_parse: invariant failed: %s (%s:%d); last error: %s\n", \
                                                 #c, __FILE__, __LINE__, dt_last_error()); abort(); } } while (0)

/* The reference: 1 and *out when s names a device. */
static int ref_parse(const char *s, dt_device *out) {
  dt_device d;
  const char *p;
  long long v = 0;
  if (strncmp(s, "cpu", 3) == 0) { d.type = DT_CPU; p = s + 3; }
  else if (strncmp(s, "cuda", 4) == 0) { d.type = DT_CUDA; p = s + 4; }
  else if (strncmp(s, "gpu", 3) == 0) { d.type = DT_CUDA; p = s + 3; }
  else return 0;
  d.index = 0;
  if (*p == ':') {
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
      v = v * 10 + (*p - '0');
      if (v > INT_MAX) return 0;
    }
    if (!digits || *p) return 0;
    if (d.type == DT_CPU && v != 0) return 0;
    d.index = (int)v;
  } else if (*p) {
    return 0;
  }
  *out = d;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = (char *)malloc(size + 1), str[64], small[64];
  dt_device d, r, back, sentinel;
  dt_status st;
  int ok;
  size_t n;
  FZ_CHECK(s != NULL);
  if (size) memcpy(s, data, size);
  s[size] = 0;
  sentinel.type = (dt_device_type)7; sentinel.index = -77;
  d = sentinel;
  dt_clear_error();
  st = dt_device_parse(s, &d);
  ok = ref_parse(s, &r);
  FZ_CHECK((st == DT_OK) == ok);
  if (st == DT_OK) {
    FZ_CHECK(dt_device_equal(d, r));
    FZ_CHECK(dt_last_status() == DT_OK);
    dt_device_str(d, str, sizeof str);
    FZ_CHECK(dt_device_parse(str, &back) == DT_OK && dt_device_equal(back, d));
  } else {
    FZ_CHECK(st == DT_ERR_INVALID_ARGUMENT && dt_last_status() == st);
    FZ_CHECK(strncmp(dt_last_error(), "dt_device_parse: ", 17) == 0);
    FZ_CHECK(d.type == sentinel.type && d.index == sentinel.index);
  }
  /* dt_device_str of arbitrary devices: the first 8 bytes as type and index, every buffer size */
  if (size >= 8) {
    int32_t t32, i32;
    memcpy(&t32, data, 4); memcpy(&i32, data + 4, 4);
    d.type = (dt_device_type)(t32 & 3); d.index = i32;
    dt_device_str(d, str, sizeof str);
    for (n = 0; n <= strlen(str) + 1; n++) {
      memset(small, 'x', sizeof small);
      dt_device_str(d, small, n);
      if (n) FZ_CHECK(strlen(small) == (strlen(str) < n - 1 ? strlen(str) : n - 1) && strncmp(small, str, strlen(small)) == 0);
      else FZ_CHECK(small[0] == 'x');
    }
  }
  free(s);
  return 0;
}

#ifndef FUZZ_LIBFUZZER
#define FUZZ_NAME "fuzz_device_parse_replay"
#define FUZZ_DEFAULT_DIR "tests/fuzz/corpus_device"
#include "replay_main.h"
#endif
