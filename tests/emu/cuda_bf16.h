/* tests/emu/cuda_bf16.h — CUDA's __nv_bfloat16 on the host, for the emulator: round to
   nearest, ties to even (in double arithmetic, apart from devtensor's bit code); a NaN becomes
   0x7fc0 (c10::BFloat16's; the hardware's canonical one is 0x7fff). */
#ifndef DTEMU_CUDA_BF16_H
#define DTEMU_CUDA_BF16_H
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct __nv_bfloat16 { unsigned short x; } __nv_bfloat16;

static inline __nv_bfloat16 __float2bfloat16(float f) {
  double a = fabs((double)f), r;
  uint32_t u, sign;
  int ex;
  __nv_bfloat16 h;
  memcpy(&u, &f, 4);
  sign = (u >> 16) & 0x8000u;
  if (a != a) { h.x = 0x7FC0u; return h; }
  if (a == 0.0 || a == INFINITY) { h.x = (unsigned short)(u >> 16); return h; }
  (void)frexp(a, &ex);
  if (ex < -125) ex = -125;            /* subnormal floats: the same units as the smallest normal */
  r = ldexp(rint(ldexp(a, 8 - ex)), ex - 8);
  if (r >= 3.3961775292304e+38) { h.x = (unsigned short)(sign | 0x7F80u); return h; } /* past the largest finite */
  {
    float g = (float)r;
    memcpy(&u, &g, 4);
  }
  h.x = (unsigned short)(sign | ((u >> 16) & 0x7FFFu));
  return h;
}
static inline float __bfloat162float(__nv_bfloat16 h) {
  uint32_t u = (uint32_t)h.x << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
#endif
