/* Exercise 2: train a small network (on the GPU when there is one), save its
   parameters, and load them straight onto a GPU and onto the CPU; check they
   are equal to the trained ones. Without a GPU, only the CPU load runs.
     ex2_params_io [path]      (default build/ex2_params.safetensors) */
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dt_module *make_net(void) {
  dt_module *net = dt_sequential();
  dt_sequential_add(net, dt_linear(2, 16));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(16, 1));
  return net;
}

/* Parameter i of a and b hold the same bytes. */
static int same_param(dt_module *a, dt_module *b, int i) {
  dt_tensor *pa = dt_module_param(a, i, NULL), *pb = dt_module_param(b, i, NULL);
  size_t n = dt_nbytes(pa);
  void *ha = malloc(n), *hb = malloc(n);
  int same = ha && hb && dt_nbytes(pb) == n && dt_to_host(pa, ha, n) == DT_OK && dt_to_host(pb, hb, n) == DT_OK &&
             memcmp(ha, hb, n) == 0;
  free(ha); free(hb);
  return same;
}

/* One row of the table: parameter i loaded into m, compared with the trained net's. */
static int row(dt_module *trained, dt_module *m, int i) {
  const char *name;
  dt_tensor *p = dt_module_param(m, i, &name);
  char shape[48], d[32];
  int eq = same_param(trained, m, i);
  if (dt_ndim(p) == 1) snprintf(shape, sizeof shape, "(%lld,)", (long long)dt_dim(p, 0));
  else snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)dt_dim(p, 0), (long long)dt_dim(p, 1));
  printf("%-10s %-10s %-10s %s\n", name, shape, dt_device_str(dt_device_of(p), d, sizeof d), eq ? "yes" : "NO");
  return eq;
}

#define USAGE "usage: ex2_params_io [path]   (default build/ex2_params.safetensors)"

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "build/ex2_params.safetensors";
  dt_device gpu = dt_try_gpu(0);
  int has_gpu = gpu.type == DT_CUDA;
  dt_module *net = make_net(), *on_gpu = has_gpu ? make_net() : NULL, *on_cpu = make_net();
  dt_tensor *X, *y, *x2;
  dt_trainer tr;
  char d[32];
  int i, ok = 1;
  if (argc > 2 || (argc > 1 && argv[1][0] == '-')) { /* --help, or an option taken for the path to write */
    int help = argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (!help) fprintf(stderr, "ex2: bad arguments\n");
    fprintf(help ? stdout : stderr, "%s\n", USAGE);
    dt_module_free(net); dt_module_free(on_gpu); dt_module_free(on_cpu);
    return help ? 0 : 2;
  }
  dt_manual_seed(1);
  X = dt_randn(dt_shape2(256, 2), dt_cpu());
  x2 = dt_mul(X, X);
  y = dt_sum_dim(x2, 1);                    /* y = x0^2 + x1^2, (256,) */
  {
    dt_tensor *y2 = dt_reshape(y, dt_shape2(256, 1));
    dt_release(y); y = y2;
  }
  dt_trainer_init(&tr, 5, 1);
  tr.quiet = 1;
  if (dt_trainer_fit(&tr, net, X, y) != DT_OK) { fprintf(stderr, "ex2: %s\n", dt_last_error()); return 1; }
  printf("trained on %s: loss %.4f -> %.4f\n", dt_device_str(tr.device, d, sizeof d), tr.epoch_loss[0], tr.last_loss);
  if (dt_module_save(net, path) != DT_OK) {
    fprintf(stderr, "ex2: %s (the default path is relative to the repo root; give a writable path as the first argument)\n",
            dt_last_error());
    return 1;
  }
  printf("saved %d parameters from %s to %s\n", dt_module_num_params(net), dt_device_str(dt_module_device(net), d, sizeof d), path);
  /* load straight onto the device each module is on */
  if ((has_gpu && (dt_module_to(on_gpu, gpu) != DT_OK || dt_module_load(on_gpu, path) != DT_OK)) ||
      dt_module_load(on_cpu, path) != DT_OK) {
    fprintf(stderr, "ex2: loading %s: %s\n", path, dt_last_error());
    return 1;
  }
  if (!has_gpu) printf("(no GPU: loaded onto the cpu only)\n");
  printf("%-10s %-10s %-10s %s\n", "parameter", "shape", "loaded on", "equal to the trained one");
  for (i = 0; i < dt_module_num_params(net); i++) {
    if (has_gpu) ok = row(net, on_gpu, i) && ok;
    ok = row(net, on_cpu, i) && ok;
  }
  printf(ok ? "all parameters equal\n" : "MISMATCH\n");
  dt_trainer_free(&tr);
  dt_release(X); dt_release(x2); dt_release(y);
  dt_module_free(net); dt_module_free(on_gpu); dt_module_free(on_cpu);
  return ok ? 0 : 1;
}
