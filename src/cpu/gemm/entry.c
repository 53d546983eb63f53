/* One row-major C = alpha * op(A) @ op(B) + beta * C, F64 when dbl, else F32 (alpha and beta
   rounded to float). a: (m, k), or (k, m) when ta; b: (k, n), or (n, k) when tb; c: (m, n). */
static void dt__cpu_gemm_one(int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                             const void *a, const void *b, double beta, void *c, dt__gemm_opts *o) {
  if (!dbl) { alpha = (float)alpha; beta = (float)beta; }
#ifdef DEVTENSOR_CBLAS
  if (dt__gemm_cblas_ok(m, n, k)) {
    const void *bias = o ? o->bias : NULL;
    if (bias) { dt__gemm_fill_bias(dbl ? sizeof(double) : sizeof(float), m, n, bias, c); beta = 1.0; }
    const int lda = ta ? (int)m : (int)k, ldb = tb ? (int)k : (int)n;
#define DT__GEMM_CBLAS_OPS DT__GEMM_CBLAS_ROW, ta ? DT__GEMM_CBLAS_T : DT__GEMM_CBLAS_N, tb ? DT__GEMM_CBLAS_T : DT__GEMM_CBLAS_N, (int)m, (int)n, (int)k
    if (dbl)
      cblas_dgemm(DT__GEMM_CBLAS_OPS, alpha, (const double *)a, lda, (const double *)b, ldb, beta, (double *)c, (int)n);
    else
      cblas_sgemm(DT__GEMM_CBLAS_OPS, (float)alpha, (const float *)a, lda, (const float *)b, ldb, (float)beta, (float *)c, (int)n);
#undef DT__GEMM_CBLAS_OPS
    return;
  }
#endif
  dt__gemm_builtin_b(NULL, dbl, ta, tb, m, n, k, alpha, a, b, beta, c, o);
}

/* The typed entry points (tests/test_gemm_kernel.c and bench/bench_gemm_kernel.c call them). */
static DT__GEMM_MAYBE_UNUSED void dt__cpu_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                                                const float *a, const float *b, float beta, float *c) {
  dt__cpu_gemm_one(0, ta, tb, m, n, k, alpha, a, b, beta, c, NULL);
}
static DT__GEMM_MAYBE_UNUSED void dt__cpu_dgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                                                const double *a, const double *b, double beta, double *c) {
  dt__cpu_gemm_one(1, ta, tb, m, n, k, alpha, a, b, beta, c, NULL);
}

static dt_status dt__cpu_gemm(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                              double alpha, const void *a, int64_t stride_a, const void *b, int64_t stride_b,
                              double beta, void *c, int64_t stride_c) {
  int64_t i;
  if (t == DT_F16 || t == DT_BF16) return dt__cpu_gemm_half(dev, t, ta, tb, batch, m, n, k, alpha, a, stride_a, b, stride_b, beta, c, stride_c);
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  for (i = 0; i < batch; i++) {
    size_t es = t == DT_F64 ? 8 : 4;
    dt__cpu_gemm_one(t == DT_F64, ta, tb, m, n, k, alpha, (const char *)a + (size_t)(i * stride_a) * es,
                     (const char *)b + (size_t)(i * stride_b) * es, beta, (char *)c + (size_t)(i * stride_c) * es, NULL);
  }
  return DT_OK;
}

/* One product with a linear layer's asks (see dt__gemm_opts; o may be NULL): the nn code's
   entry on the CPU, and tests/test_gemm_kernel.c's. */
static dt_status dt__cpu_gemm_opt(dt_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                                  const void *a, const void *b, double beta, void *c, dt__gemm_opts *o) {
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  if (o) o->asum_done = 0;
  dt__cpu_gemm_one(t == DT_F64, ta, tb, m, n, k, alpha, a, b, beta, c, o);
  return DT_OK;
}
