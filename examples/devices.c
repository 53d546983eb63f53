/* A device table like nvidia-smi's: every device, its memory, compute
   capability and multiprocessors, and what devtensor's allocator holds there.
   On a machine without a GPU it says why there is none. */
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"

#include <stdio.h>

static double mib(size_t b) { return (double)b / (1024.0 * 1024.0); }

static void row(dt_device d) {
  dt_device_info info;
  dt_memory_stats st;
  char name[32], cc[16];
  if (dt_device_get_info(d, &info) != DT_OK) { printf("| %-7s | %s\n", dt_device_str(d, name, sizeof name), dt_last_error()); return; }
  if (dt_memory_stats_get(d, &st) != DT_OK) st.allocated = st.reserved = st.peak_allocated = 0;
  if (d.type == DT_CUDA) snprintf(cc, sizeof cc, "%d.%d", info.compute_major, info.compute_minor);
  else snprintf(cc, sizeof cc, "-");
  printf("| %-7s | %-38.38s | %9.0fMiB / %9.0fMiB | %-5s | %4d | %9.1fMiB %9.1fMiB %9.1fMiB |\n",
         dt_device_str(d, name, sizeof name), info.name, mib(info.total_memory - info.free_memory), mib(info.total_memory),
         cc, info.multiprocessors, mib(st.allocated), mib(st.reserved), mib(st.peak_allocated));
}

int main(void) {
  int n = dt_num_gpus(), i;
  const char *line = "+---------+----------------------------------------+-----------------------------+-------+------+----------------------------------------+";
  char why[1024];
  snprintf(why, sizeof why, "%s", n == 0 ? dt_last_error() : "");
  dt_tensor *t;
  printf("%s\n", line);
  printf("| %-7s | %-38s | %-27s | %-5s | %-4s | %-38s |\n", "device", "name", "memory used / total", "cc", "SMs", "devtensor: allocated  reserved   peak");
  printf("%s\n", line);
  /* a tensor on each device, so the allocator figures show something */
  t = dt_zeros(dt_shape2(1024, 1024), dt_cpu());
  row(dt_cpu());
  for (i = 0; i < n; i++) {
    dt_tensor *g = dt_zeros(dt_shape2(1024, 1024), dt_gpu(i));
    row(dt_gpu(i));
    dt_release(g);
  }
  printf("%s\n", line);
  if (n == 0) printf("No GPU: %s\n", why);
  else printf("%d GPU%s. (CPU 'memory used' is what the OS does not report as available.)\n", n, n == 1 ? "" : "s");
  dt_release(t);
  return 0;
}
