/* tests/emu/cuda_fp16.h — CUDA's __half on the host, for the emulator: the type and the
   conversions the emulated cuBLAS uses, rounding as the hardware's cvt.rn.f16.f32 (to nearest,
   ties to even, subnormals, overflow to inf; a NaN becomes the canonical quiet one). Written
   apart from devtensor's bit code (in double arithmetic here), so each checks the other. */
#ifndef DTEMU_CUDA_FP16_H
#define DTEMU_CUDA_FP16_H
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct __half { unsigned short x; } __half;

static inline __half __float2half_rn(float f) {
  uint32_t u, sign;
  double a = fabs((double)f), r;
  int ex;
  __half h;
  memcpy(&u, &f, 4);
  sign = (u >> 16) & 0x8000u;
  if (a != a) { h.x = (unsigned short)(sign | 0x7E00u); return h; }
  if (a >= 65520.0) { h.x = (unsigned short)(sign | 0x7C00u); return h; }
  if (a < 6.103515625e-05) { /* below 2^-14: units of 2^-24, to nearest even (rint) */
    h.x = (unsigned short)(sign | (uint32_t)rint(a * 16777216.0));
    return h;
  }
  (void)frexp(a, &ex);                 /* a = fr 2^ex, fr in [0.5, 1) */
  r = rint(ldexp(a, 11 - ex));         /* 11 significant bits, in [1024, 2048] */
  if (r == 2048.0) { r = 1024.0; ex++; }
  h.x = (unsigned short)(sign | ((uint32_t)(ex + 14) << 10) | ((uint32_t)r - 1024u));
  return h;
}
static inline float __half2float(__half h) {
  uint32_t sign = (uint32_t)(h.x & 0x8000u) << 16, e = (h.x >> 10) & 0x1Fu, m = h.x & 0x3FFu, u;
  float f;
  if (e == 0x1F) {
    u = sign | 0x7F800000u | (m << 13) | (m ? 0x400000u : 0u);
    memcpy(&f, &u, 4);
    return f;
  }
  f = (float)ldexp((double)(e ? (m | 0x400u) : m), (int)(e ? e : 1) - 25);
  return sign ? -f : f;
}
#endif
