/* tests/emu/cublas_v2.h — the cuBLAS calls devtensor makes, run on the CPU by
   the emulator (tests/emu/emu.cpp): column-major gemm with double accumulation,
   queued on the handle's stream. Arguments are checked as cuBLAS checks them
   (sizes, leading dimensions), and more: every matrix must lie inside one
   device allocation of the handle's device, and the handle must be used with
   its own device current. */
#ifndef DTEMU_CUBLAS_V2_H
#define DTEMU_CUBLAS_V2_H
#include "cuda_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum {
  CUBLAS_DEFAULT_MATH = 0, CUBLAS_TENSOR_OP_MATH = 1, CUBLAS_PEDANTIC_MATH = 2, CUBLAS_TF32_TENSOR_OP_MATH = 3,
  CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16 /* a flag, or'd with one of the above */
} cublasMath_t;
typedef struct dtemu_blas *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes);
const char *cublasGetStatusName(cublasStatus_t s);
const char *cublasGetStatusString(cublasStatus_t s);

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta,
                           float *c, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *a, int lda, const double *b, int ldb, const double *beta,
                           double *c, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda, long long sa, const float *b, int ldb,
                                         long long sb, const float *beta, float *c, int ldc, long long sc, int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                         const double *alpha, const double *a, int lda, long long sa, const double *b,
                                         int ldb, long long sb, const double *beta, double *c, int ldc, long long sc,
                                         int batch);

/* the Ex gemms: types of A, B, C and how the products are computed (library_types.h and
   cublas_api.h's values). Emulated: A, B, C of 16F, 16BF or 32F alike with an F32 compute type;
   the products in double from the inputs as the compute type sees them (FAST_TF32: rounded to
   TF32's 10-bit mantissa, to nearest with ties away as cvt.rna.tf32.f32; FAST_16BF: to
   bfloat16; FAST_16F: to float16), alpha and beta floats. Anything else: NOT_SUPPORTED. */
typedef enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType_t;
typedef cudaDataType_t cudaDataType;
typedef enum {
  CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_PEDANTIC = 69, CUBLAS_COMPUTE_64F = 70,
  CUBLAS_COMPUTE_32F_FAST_16F = 74, CUBLAS_COMPUTE_32F_FAST_16BF = 75, CUBLAS_COMPUTE_32F_FAST_TF32 = 77
} cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
                            const void *a, cudaDataType_t atype, int lda, const void *b, cudaDataType_t btype, int ldb,
                            const void *beta, void *c, cudaDataType_t ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *a, cudaDataType_t atype, int lda, long long sa,
                                          const void *b, cudaDataType_t btype, int ldb, long long sb, const void *beta, void *c,
                                          cudaDataType_t ctype, int ldc, long long sc, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t algo);

#ifdef __cplusplus
}
#endif
#endif
