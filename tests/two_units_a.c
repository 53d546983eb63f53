/* The implementation lives in this unit; two_units_b.c sees only the declarations.
   The header is included twice, plain first (as another header of the program
   might), then with the implementation: the second include must still bring
   the backend contract and the implementation. */
#include "../devtensor.h"
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
