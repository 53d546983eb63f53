/* ======================================================================== */
/*                              IMPLEMENTATION                              */
/* ======================================================================== */
/* Once per unit. A unit compiled with DEVTENSOR_IMPLEMENTATION_DONE already defined gets no
   implementation and links one compiled elsewhere (the Makefile's devtensor_impl.o, shared by the
   tests that use only the public API). */
#ifdef DEVTENSOR_IMPLEMENTATION
#ifndef DEVTENSOR_IMPLEMENTATION_DONE
#define DEVTENSOR_IMPLEMENTATION_DONE

#if defined(__CUDACC__) /* nvcc compiling the implementation in a user's .cu */
#pragma nv_diagnostic push
#pragma nv_diag_suppress 550 /* "set but never used": the elementwise kernels' (void)-cast operands (DT__EW_ZIP) */
#pragma nv_diag_suppress 1675 /* "unrecognized GCC pragma": the CPU kernels' GCC unroll hints, for the host compiler */
#endif

#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#if defined(DT_MALLOC) && defined(DT_FREE)
#elif !defined(DT_MALLOC) && !defined(DT_FREE)
#define DT_MALLOC(sz) malloc(sz)
#define DT_FREE(p) free(p)
#define DT__HOST_DEFAULT_ALLOC 1 /* the CPU backend may cache blocks and map huge pages */
#else
#error "devtensor: define both DT_MALLOC and DT_FREE, or neither"
#endif
#ifndef DT_ASSERT
#include <assert.h>
#define DT_ASSERT(c) assert(c)
#endif
