/* a: op(A) (m, k) at a[i * rsa + p * csa]; b: op(B) (k, n) at b[p * rsb + j * csb]; c: (m, n).
   Rows of C as sums of rows of op(B) when those are contiguous and long, else dot products
   with four partial sums. */
#define DT__GEMM_DEFINE_SIMPLE(NAME, T)                                                             \
  static void NAME(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa, int64_t csa, \
                   const T *b, int64_t rsb, int64_t csb, T beta, T *c) {                            \
    int64_t i, j, p;                                                                                \
    for (i = 0; i < m; i++) {                                                                       \
      T *DT__GEMM_RESTRICT ci = c + i * n;                                                          \
      const T *ai = a + i * rsa;                                                                    \
      if (csb == 1 && n >= 16) { /* c_i = beta c_i + sum_p (alpha a_ip) b_p */                     \
        if (beta == 0)                                                                              \
          for (j = 0; j < n; j++) ci[j] = 0;                                                        \
        else if (beta != 1)                                                                         \
          for (j = 0; j < n; j++) ci[j] *= beta;                                                    \
        for (p = 0; p < k; p++) {                                                                   \
          const T aip = alpha * ai[p * csa];                                                        \
          const T *DT__GEMM_RESTRICT bp = b + p * rsb;                                              \
          for (j = 0; j < n; j++) ci[j] += aip * bp[j];                                             \
        }                                                                                           \
      } else {                                                                                      \
        for (j = 0; j < n; j++) {                                                                   \
          const T *bj = b + j * csb;                                                                \
          T s0 = 0, s1 = 0, s2 = 0, s3 = 0, s;                                                      \
          for (p = 0; p + 4 <= k; p += 4) {                                                         \
            s0 += ai[p * csa] * bj[p * rsb];                                                        \
            s1 += ai[(p + 1) * csa] * bj[(p + 1) * rsb];                                            \
            s2 += ai[(p + 2) * csa] * bj[(p + 2) * rsb];                                            \
            s3 += ai[(p + 3) * csa] * bj[(p + 3) * rsb];                                            \
          }                                                                                         \
          for (; p < k; p++) s0 += ai[p * csa] * bj[p * rsb];                                       \
          s = (s0 + s1) + (s2 + s3);                                                                \
          ci[j] = beta == 0 ? alpha * s : alpha * s + beta * ci[j];                                 \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }
DT__GEMM_DEFINE_SIMPLE(dt__gemm_simple_f32, float)
DT__GEMM_DEFINE_SIMPLE(dt__gemm_simple_f64, double)
