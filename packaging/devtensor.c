/* The implementation of devtensor.h, compiled once for libdevtensor.so / .a
   (`make lib`). A program that links the library includes devtensor.h without
   DEVTENSOR_IMPLEMENTATION. The Makefile adds -DDEVTENSOR_CUDA when it builds
   the CUDA variant (with devtensor_cuda.cu in the same library). */
#define DEVTENSOR_IMPLEMENTATION
#include "devtensor.h"
