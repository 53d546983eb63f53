/* tests/emu/math_constants.h — CUDA's math_constants.h, as far as devtensor uses it. */
#ifndef DTEMU_MATH_CONSTANTS_H
#define DTEMU_MATH_CONSTANTS_H
#define CUDART_NAN __builtin_nan("")
#define CUDART_INF __builtin_inf()
#endif
