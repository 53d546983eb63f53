#ifdef DEVTENSOR_CBLAS
#ifndef CBLAS_H
#ifdef __cplusplus
extern "C" {
#endif
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
void cblas_dgemm(int order, int transa, int transb, int m, int n, int k, double alpha, const double *a,
                 int lda, const double *b, int ldb, double beta, double *c, int ldc);
#ifdef __cplusplus
}
#endif
#define DT__GEMM_CBLAS_ROW 101
#define DT__GEMM_CBLAS_N 111
#define DT__GEMM_CBLAS_T 112
#else
#define DT__GEMM_CBLAS_ROW CblasRowMajor
#define DT__GEMM_CBLAS_N CblasNoTrans
#define DT__GEMM_CBLAS_T CblasTrans
#endif
/* CBLAS needs int sizes and leading dimensions >= 1. */
static int dt__gemm_cblas_ok(int64_t m, int64_t n, int64_t k) {
  return m > 0 && n > 0 && k > 0 && m <= INT_MAX && n <= INT_MAX && k <= INT_MAX;
}
#endif
