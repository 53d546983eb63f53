/* torch.no_grad() per thread (dt__no_grad, in src/autograd/graph.c): with grad disabled dt_forward
   keeps nothing for a backward pass (no layer holds its input), dt_backward refuses and no
   operation records for autograd. */
/* What a linear layer asks of the CPU gemm beyond C = alpha op(A) op(B) + beta C, passed to
   dt__cpu_gemm_opt (the backend's gemm slot takes none; the CUDA layer does these steps apart):
   - bias: the forward's bias (a row of n, the product's dtype) that C starts from, C = bias +
     x W^T (beta unused): each gemm task writes the bias into its own block of C, on the core that
     then adds the product into it, instead of a copy pass over all of C before the product;
   - by_cols: the forward's product x W^T in training: the threads split C by columns (W's rows)
     into contiguous parts, as the optimizer's step, and the product g^T x for W's gradient, split
     W by rows; so each core reads the rows of W that it last wrote (see dt__gemm_blocked_b);
   - asum: the backward's product g^T x: where the sums of the rows of op(A) = g^T go (the bias
     gradient: g's column sums, in double, in row order, as dt_sum_dim gives them). The blocked
     driver writes them when each thread packs its own rows of A and they are contiguous (g^T's
     are), and then sets asum_done; asum_done still 0 after the call: nothing was written (the
     caller reduces g itself). */
typedef struct dt__gemm_opts {
  const void *bias;
  int by_cols;
  void *asum;
  int asum_done;
} dt__gemm_opts;
static dt_status dt__cpu_gemm_opt(dt_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                                  const void *a, const void *b, double beta, void *c, dt__gemm_opts *o);

DTDEF int dt_set_grad_enabled(int enabled) {
  int prev = !dt__no_grad;
  dt__no_grad = !enabled;
  return prev;
}
