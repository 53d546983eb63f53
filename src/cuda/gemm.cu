/* C = beta * C (beta 0: zeros, C not read) for batch items of m*n at stride_c */
template <typename T>
struct ScaleC {
  T *c; T beta; int64_t mn, stride_c;
  template <typename I> __device__ void operator()(I i) const {
    int64_t b = (int64_t)i / mn, j = (int64_t)i - b * mn;
    T *p = c + b * stride_c + j;
    *p = beta == (T)0 ? (T)0 : beta * *p;
  }
};

cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                         const float *b, int ldb, long long sb, const float *a, int lda, long long sa, const float *beta,
                         float *c, int ldc, long long sc, int batch) {
  if (batch == 1) return cublasSgemm(h, opb, opa, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
  return cublasSgemmStridedBatched(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch);
}
cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const double *alpha,
                         const double *b, int ldb, long long sb, const double *a, int lda, long long sa, const double *beta,
                         double *c, int ldc, long long sc, int batch) {
  if (batch == 1) return cublasDgemm(h, opb, opa, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
  return cublasDgemmStridedBatched(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch);
}

/* Row-major C = alpha op(A) op(B) + beta C is column-major C^T = op(B)^T op(A)^T:
   cuBLAS gets (n, m, k) with B first. */
template <typename T>
dt_status gemm_t(int dev, DevState &s, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, T alpha, const T *a,
                 int64_t sa, const T *b, int64_t sb, T beta, T *c, int64_t sc) {
  if (k == 0) return run_map("gemm (k = 0)", s.stream, batch * m * n, ScaleC<T>{c, beta, m * n, sc});
  /* (batch, m, k) @ (k, n), A's items back to back: one gemm of (batch*m, k) @ (k, n) */
  if (batch > 1 && sb == 0 && !ta && sa == m * k && sc == m * n && m * batch <= INT_MAX) {
    m *= batch;
    batch = 1;
  }
  const char *name = sizeof(T) == 4 ? (batch == 1 ? "cublasSgemm" : "cublasSgemmStridedBatched")
                                    : (batch == 1 ? "cublasDgemm" : "cublasDgemmStridedBatched");
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    set_err("%s: matrix sizes m = %lld, n = %lld, k = %lld exceed cuBLAS's int range", name, (long long)m, (long long)n,
            (long long)k);
    return DT_ERR_UNSUPPORTED;
  }
  cublasHandle_t h;
  dt_status rc = blas_handle(dev, s, &h);
  if (rc != DT_OK) return rc;
  cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n), ldc = (int)n;
  std::lock_guard<std::mutex> lk(s.blas_mu);
  if ((sa == 0 || sb == 0) && batch > 1) {
    /* A shared operand: one strided-batched call with a zero stride for it
       (cuBLAS takes a batch stride of 0 for A or B; C's items never overlap).
       Should a cuBLAS refuse it, or the batch exceed an int, one call per item. */
    if (batch <= INT_MAX) {
      cublasStatus_t st = gemm_call(h, opb, opa, (int)n, (int)m, (int)k, &alpha, b, ldb, (long long)sb, a, lda,
                                    (long long)sa, &beta, c, ldc, (long long)sc, (int)batch);
      if (st == CUBLAS_STATUS_SUCCESS) return DT_OK;
      if (st != CUBLAS_STATUS_INVALID_VALUE && st != CUBLAS_STATUS_NOT_SUPPORTED) return blas_fail(name, st);
    }
    for (int64_t i = 0; i < batch; i++) {
      cublasStatus_t st = gemm_call(h, opb, opa, (int)n, (int)m, (int)k, &alpha, b + i * sb, ldb, 0, a + i * sa, lda, 0,
                                    &beta, c + i * sc, ldc, 0, 1);
      if (st != CUBLAS_STATUS_SUCCESS) return blas_fail(sizeof(T) == 4 ? "cublasSgemm" : "cublasDgemm", st);
    }
    return DT_OK;
  }
  if (batch > INT_MAX) {
    set_err("%s: batch %lld exceeds cuBLAS's int range", name, (long long)batch);
    return DT_ERR_UNSUPPORTED;
  }
  cublasStatus_t st = gemm_call(h, opb, opa, (int)n, (int)m, (int)k, &alpha, b, ldb, (long long)sb, a, lda, (long long)sa,
                                &beta, c, ldc, (long long)sc, (int)batch);
  return st == CUBLAS_STATUS_SUCCESS ? DT_OK : blas_fail(name, st);
}

dt_status cu_gemm(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                  const void *a, int64_t stride_a, const void *b, int64_t stride_b, double beta, void *c, int64_t stride_c) {
  if (batch <= 0 || m <= 0 || n <= 0) return DT_OK;
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float(t, "gemm", [&](auto z) {
    using T = decltype(z);
    return gemm_t<T>(dev, *in.s, ta, tb, batch, m, n, k, (T)alpha, static_cast<const T *>(a), stride_a,
                     static_cast<const T *>(b), stride_b, (T)beta, static_cast<T *>(c), stride_c);
  });
}

/* ---- axpy ---- */

/* y[i] += alpha * x[i] for T = float or double (alpha rounded to T) */
template <class T>
dt_status axpy_t(cudaStream_t st, int64_t n, double alpha, const void *x, void *y) {
  T *yp = static_cast<T *>(y);
  return zip_contig<T>(st, n, yp, static_cast<const T *>(x), yp, BAxpy<T>{(T)alpha}, "axpy");
}

dt_status cu_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float(t, "axpy", [&](auto z) { return axpy_t<decltype(z)>(in.s->stream, n, alpha, x, y); });
}
