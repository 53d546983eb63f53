/* Wall-clock seconds for the examples (POSIX clock_gettime). */
#ifndef DT_EXAMPLES_TIMING_H
#define DT_EXAMPLES_TIMING_H
#include <time.h>
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif
