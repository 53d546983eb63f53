/* The implementation lives in this unit; two_units_b.c sees only the declarations. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
