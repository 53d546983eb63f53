/* libFuzzer target: dt_module_load on arbitrary bytes.

   The input is written to a per-process file (in $TMPDIR, /dev/shm or /tmp)
   and loaded into two fixed networks, Sequential(Linear(2, 3), ReLU,
   Linear(3, 1)) in float32 and the same in float64. Invariants (a violation aborts):
   - loading never crashes, leaks or reads out of bounds (the sanitizers);
   - a refused file gives DT_ERR_FORMAT, DT_ERR_DTYPE or DT_ERR_SHAPE, the
     same status from dt_last_status(), a message starting "dt_module_load: ",
     and leaves every parameter byte as it was (all or nothing);
   - an accepted file is then undone, so every input starts from the same nets.
   An input "DTNN<program>\n<file>" (tests/fuzz/nest_decode.h) first builds a network of
   nested sequentials, linear and ReLU layers from <program>, then checks: depth past
   DT_MODULE_MAX_DEPTH is refused exactly there; the parameters' names are the state_dict's,
   whole; the network saves and loads itself back; <file> loads into it under the invariants
   above; a forward gives a result or DT_ERR_SHAPE.

   libFuzzer build (from the repository root):
     clang -g -O1 -fsanitize=fuzzer,address,undefined -DFUZZ_LIBFUZZER -I. \
       tests/fuzz/fuzz_safetensors.c -o build/fuzz/fuzz_safetensors -lm
     build/fuzz/fuzz_safetensors -max_total_time=60 build/fuzz/corpus_st tests/fuzz/corpus_safetensors
   Without FUZZ_LIBFUZZER it has a main that replays files or directories
   (default tests/fuzz/corpus_safetensors), for gcc, ASan and valgrind builds. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../../devtensor.h"
#include "nest_decode.h"

#define FZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_safetensors: invariant failed: %s (%s:%d); last error: %s\n", \
                                                 #c, __FILE__, __LINE__, dt_last_error()); abort(); } } while (0)

#define FZ_NETS 2
#define FZ_PARAMS 4
static dt_module *fz_net[FZ_NETS];
static dt_tensor *fz_orig[FZ_NETS][FZ_PARAMS];   /* copies of the parameters as made */
static char fz_path[256];

static void fz_cleanup(void) {
  int n, i;
  if (fz_path[0]) remove(fz_path);
  for (n = 0; n < FZ_NETS; n++) {
    for (i = 0; i < FZ_PARAMS; i++) dt_release(fz_orig[n][i]);
    dt_module_free(fz_net[n]);
  }
}

static void fz_init(void) {
  int n, i;
  /* $TMPDIR, else /dev/shm (memory: some 15x the executions per second of a disk), else /tmp */
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !tmp[0]) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(fz_path, sizeof fz_path, "%s/dt_fuzz_safetensors_%ld.bin", tmp, (long)getpid());
  dt_manual_seed(1);
  for (n = 0; n < FZ_NETS; n++) {
    dt_module *net = dt_sequential();
    FZ_CHECK(net != NULL);
    FZ_CHECK(dt_sequential_add(net, dt_linear(2, 3)) == DT_OK);
    FZ_CHECK(dt_sequential_add(net, dt_relu_layer()) == DT_OK);
    FZ_CHECK(dt_sequential_add(net, dt_linear(3, 1)) == DT_OK);
    if (n == 1) FZ_CHECK(dt_module_to_dtype(net, DT_F64) == DT_OK);
    FZ_CHECK(dt_module_num_params(net) == FZ_PARAMS);
    for (i = 0; i < FZ_PARAMS; i++) FZ_CHECK((fz_orig[n][i] = dt_copyto(dt_module_param(net, i, NULL), dt_cpu())) != NULL);
    fz_net[n] = net;
  }
  atexit(fz_cleanup);
}

static int fz_same(const dt_tensor *a, const dt_tensor *b) {
  return dt_nbytes(a) == dt_nbytes(b) &&
         memcmp(dt_data_ptr((dt_tensor *)a), dt_data_ptr((dt_tensor *)b), dt_nbytes(a)) == 0;
}

static void fz_write(const char *path, const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  FZ_CHECK(f != NULL);
  FZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
  FZ_CHECK(fclose(f) == 0);
}

/* "DTNN<program>\n<file>": a network built from <program>, <file> loaded into it. */
static void fz_nested(const uint8_t *data, size_t size) {
  const uint8_t *nl = (const uint8_t *)memchr(data, '\n', size);
  size_t plen = nl ? (size_t)(nl - data) - 4 : size - 4, i;
  nest_net n;
  dt_tensor *orig[2 * NEST_MAX_LAYERS];
  char self[300];
  dt_status s;
  FZ_CHECK(nest_build(&n, data + 4, plen));
  FZ_CHECK(dt_module_num_params(n.net) == n.nparams);
  for (i = 0; i < (size_t)n.nparams; i++) {
    const char *name = NULL;
    FZ_CHECK(dt_module_param(n.net, (int)i, &name) != NULL && name && strcmp(name, n.names[i]) == 0);
    FZ_CHECK((orig[i] = dt_copyto(dt_module_param(n.net, (int)i, NULL), dt_cpu())) != NULL);
  }
  /* it saves and loads itself back, names and all */
  snprintf(self, sizeof self, "%s.self", fz_path);
  FZ_CHECK(dt_module_save(n.net, self) == DT_OK);
  FZ_CHECK(dt_module_load(n.net, self) == DT_OK);
  remove(self);
  for (i = 0; i < (size_t)n.nparams; i++) FZ_CHECK(fz_same(dt_module_param(n.net, (int)i, NULL), orig[i]));
  /* the file: all or nothing */
  fz_write(fz_path, nl ? nl + 1 : data + size, nl ? size - (size_t)(nl + 1 - data) : 0);
  dt_clear_error();
  s = dt_module_load(n.net, fz_path);
  FZ_CHECK(dt_last_status() == s);
  if (s != DT_OK) {
    FZ_CHECK(s == DT_ERR_FORMAT || s == DT_ERR_DTYPE || s == DT_ERR_SHAPE);
    FZ_CHECK(strncmp(dt_last_error(), "dt_module_load: ", 16) == 0);
    for (i = 0; i < (size_t)n.nparams; i++) FZ_CHECK(fz_same(dt_module_param(n.net, (int)i, NULL), orig[i]));
  }
  /* a forward: through every layer, or a shape error naming one */
  if (n.in_first) {
    dt_tensor *x = dt_zeros(dt_shape2(2, n.in_first), dt_cpu()), *x2 = x, *y;
    FZ_CHECK(x != NULL);
    if (n.f64) FZ_CHECK((x2 = dt_cast(x, DT_F64)) != NULL);
    y = dt_forward(n.net, x2);
    FZ_CHECK(y != NULL || (dt_last_status() == DT_ERR_SHAPE && strncmp(dt_last_error(), "dt_forward: ", 12) == 0));
    dt_release(y);
    if (x2 != x) dt_release(x2);
    dt_release(x);
  }
  for (i = 0; i < (size_t)n.nparams; i++) dt_release(orig[i]);
  nest_free(&n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  FILE *f;
  int n, i;
  if (!ready) { fz_init(); ready = 1; }
  if (size >= 4 && memcmp(data, "DTNN", 4) == 0) { fz_nested(data, size); return 0; }
  f = fopen(fz_path, "wb");
  FZ_CHECK(f != NULL);
  FZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
  FZ_CHECK(fclose(f) == 0);
  for (n = 0; n < FZ_NETS; n++) {
    dt_module *net = fz_net[n];
    dt_status s;
    dt_clear_error();
    s = dt_module_load(net, fz_path);
    FZ_CHECK(dt_last_status() == s);
    if (s != DT_OK) {
      FZ_CHECK(s == DT_ERR_FORMAT || s == DT_ERR_DTYPE || s == DT_ERR_SHAPE);
      FZ_CHECK(strncmp(dt_last_error(), "dt_module_load: ", 16) == 0);
      for (i = 0; i < FZ_PARAMS; i++) FZ_CHECK(fz_same(dt_module_param(net, i, NULL), fz_orig[n][i]));
    } else { /* back as it was: parameters are leaves that require grad, set with grad mode off */
      const int grad_was = dt_set_grad_enabled(0);
      for (i = 0; i < FZ_PARAMS; i++) FZ_CHECK(dt_copy_(dt_module_param(net, i, NULL), fz_orig[n][i]) == DT_OK);
      dt_set_grad_enabled(grad_was);
    }
  }
  return 0;
}

#ifndef FUZZ_LIBFUZZER
#define FUZZ_NAME "fuzz_safetensors_replay"
#define FUZZ_DEFAULT_DIR "tests/fuzz/corpus_safetensors"
#include "replay_main.h"
#endif
