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

/* torch.set_float32_matmul_precision: 0 highest (F32), 1 high (TF32 tensor cores), 2 medium (BF16) */
std::atomic<int> g_f32_precision{0};
void cu_set_matmul_precision(int level) { g_f32_precision.store(level, std::memory_order_relaxed); }

/* cuBLAS's Ex gemm: A, B and C of type `ty`, alpha and beta floats, computing as `ct` */
cublasStatus_t gemm_ex(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                       const void *b, int ldb, long long sb, const void *a, int lda, long long sa, const float *beta, void *c,
                       int ldc, long long sc, int batch, cudaDataType_t ty, cublasComputeType_t ct) {
  if (batch == 1) return cublasGemmEx(h, opb, opa, n, m, k, alpha, b, ty, ldb, a, ty, lda, beta, c, ty, ldc, ct, CUBLAS_GEMM_DEFAULT);
  return cublasGemmStridedBatchedEx(h, opb, opa, n, m, k, alpha, b, ty, ldb, sb, a, ty, lda, sa, beta, c, ty, ldc, sc, batch, ct,
                                    CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                         const float *b, int ldb, long long sb, const float *a, int lda, long long sa, const float *beta,
                         float *c, int ldc, long long sc, int batch) {
  int p = g_f32_precision.load(std::memory_order_relaxed);
  if (p != 0)
    return gemm_ex(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch, CUDA_R_32F,
                   p == 1 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_FAST_16BF);
  if (batch == 1) return cublasSgemm(h, opb, opa, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
  return cublasSgemmStridedBatched(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch);
}
cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const double *alpha,
                         const double *b, int ldb, long long sb, const double *a, int lda, long long sa, const double *beta,
                         double *c, int ldc, long long sc, int batch) {
  if (batch == 1) return cublasDgemm(h, opb, opa, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
  return cublasDgemmStridedBatched(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch);
}

/* float16 and bfloat16 operands: C = alpha A B + beta C in F32 on the tensor cores, rounded once */
cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                         const Half16 *b, int ldb, long long sb, const Half16 *a, int lda, long long sa, const float *beta,
                         Half16 *c, int ldc, long long sc, int batch) {
  return gemm_ex(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch, CUDA_R_16F, CUBLAS_COMPUTE_32F);
}
cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t opb, cublasOperation_t opa, int n, int m, int k, const float *alpha,
                         const BHalf16 *b, int ldb, long long sb, const BHalf16 *a, int lda, long long sa, const float *beta,
                         BHalf16 *c, int ldc, long long sc, int batch) {
  return gemm_ex(h, opb, opa, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, ldc, sc, batch, CUDA_R_16BF, CUBLAS_COMPUTE_32F);
}
/* the scalar type alpha and beta are given in: float for the half dtypes */
template <typename T> struct GemmScalar { typedef T type; };
template <> struct GemmScalar<Half16> { typedef float type; };
template <> struct GemmScalar<BHalf16> { typedef float type; };
template <typename T> const char *gemm_name(bool batched) {
  if (sizeof(T) == 2) return batched ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
  if (sizeof(T) == 4) return batched ? "cublasSgemmStridedBatched" : "cublasSgemm";
  return batched ? "cublasDgemmStridedBatched" : "cublasDgemm";
}

/* C = beta C for the half dtypes (k = 0), through float */
template <typename H>
struct ScaleCHalf {
  H *c; float beta; int64_t mn, stride_c;
  template <typename I> __device__ void operator()(I i) const {
    int64_t b = (int64_t)i / mn, j = (int64_t)i - b * mn;
    H *p = c + b * stride_c + j;
    *p = beta == 0.0f ? Conv<float, H>::f(0.0f) : Conv<float, H>::f(beta * Conv<H, float>::f(*p));
  }
};
template <typename T, typename S> struct ScaleOf { typedef ScaleC<T> type; };
template <typename S> struct ScaleOf<Half16, S> { typedef ScaleCHalf<Half16> type; };
template <typename S> struct ScaleOf<BHalf16, S> { typedef ScaleCHalf<BHalf16> type; };

/* Row-major C = alpha op(A) op(B) + beta C is column-major C^T = op(B)^T op(A)^T:
   cuBLAS gets (n, m, k) with B first. */
template <typename T, typename S = typename GemmScalar<T>::type>
dt_status gemm_t(int dev, DevState &s, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, S alpha, const T *a,
                 int64_t sa, const T *b, int64_t sb, S beta, T *c, int64_t sc) {
  if (k == 0) return run_map("gemm (k = 0)", s.stream, batch * m * n, typename ScaleOf<T, S>::type{c, beta, m * n, sc});
  /* (batch, m, k) @ (k, n), A's items back to back: one gemm of (batch*m, k) @ (k, n) */
  if (batch > 1 && sb == 0 && !ta && sa == m * k && sc == m * n && m * batch <= INT_MAX) {
    m *= batch;
    batch = 1;
  }
  const char *name = gemm_name<T>(batch != 1);
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
      if (st != CUBLAS_STATUS_SUCCESS) return blas_fail(gemm_name<T>(false), st);
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
  if (t == DT_F16)
    return gemm_t<Half16>(dev, *in.s, ta, tb, batch, m, n, k, (float)alpha, static_cast<const Half16 *>(a), stride_a,
                          static_cast<const Half16 *>(b), stride_b, (float)beta, static_cast<Half16 *>(c), stride_c);
  if (t == DT_BF16)
    return gemm_t<BHalf16>(dev, *in.s, ta, tb, batch, m, n, k, (float)alpha, static_cast<const BHalf16 *>(a), stride_a,
                           static_cast<const BHalf16 *>(b), stride_b, (float)beta, static_cast<BHalf16 *>(c), stride_c);
  return by_float(t, "gemm", [&](auto z) {
    using T = decltype(z);
    return gemm_t<T>(dev, *in.s, ta, tb, batch, m, n, k, (T)alpha, static_cast<const T *>(a), stride_a,
                     static_cast<const T *>(b), stride_b, (T)beta, static_cast<T *>(c), stride_c);
  });
}

/* ---- axpy ---- */

/* y[i] += alpha * x[i] for T = float or double (alpha rounded to T); in a half dtype, the float
   operation on the converted elements, rounded once */
template <class T>
dt_status axpy_t(cudaStream_t st, int64_t n, double alpha, const void *x, void *y) {
  T *yp = static_cast<T *>(y);
  return zip_contig<T>(st, n, yp, static_cast<const T *>(x), yp, BAxpy<T>{(T)alpha}, "axpy");
}

/* the same in a half dtype: BAxpy<float> on the converted elements, rounded once */
template <bool BF> struct HalfAxpy {
  BAxpy<float> op;
  __device__ uint16_t operator()(uint16_t u, uint16_t w) const {
    return dt__f32_to_half(BF, op(dt__half_to_f32(BF, u), dt__half_to_f32(BF, w)));
  }
};

dt_status cu_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (t == DT_F16 || t == DT_BF16) {
    uint16_t *yp = static_cast<uint16_t *>(y);
    const uint16_t *xp = static_cast<const uint16_t *>(x);
    const BAxpy<float> op{(float)alpha};
    if (t == DT_F16) return zip_contig<uint16_t>(in.s->stream, n, yp, xp, yp, HalfAxpy<false>{op}, "axpy");
    return zip_contig<uint16_t>(in.s->stream, n, yp, xp, yp, HalfAxpy<true>{op}, "axpy");
  }
  return by_float(t, "axpy", [&](auto z) { return axpy_t<decltype(z)>(in.s->stream, n, alpha, x, y); });
}
