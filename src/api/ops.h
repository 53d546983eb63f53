DTDEF dt_tensor *dt_add(const dt_tensor *a, const dt_tensor *b);    /* broadcasting like NumPy */
DTDEF dt_tensor *dt_sub(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_mul(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_div(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_add_scalar(const dt_tensor *a, double s);
DTDEF dt_tensor *dt_mul_scalar(const dt_tensor *a, double s);
DTDEF dt_tensor *dt_exp(const dt_tensor *a);
DTDEF dt_tensor *dt_log(const dt_tensor *a);
DTDEF dt_tensor *dt_sqrt(const dt_tensor *a);
DTDEF dt_tensor *dt_neg(const dt_tensor *a);
DTDEF dt_tensor *dt_relu(const dt_tensor *a);
DTDEF dt_tensor *dt_matmul(const dt_tensor *a, const dt_tensor *b); /* (m,k)@(k,n); (b,m,k)@(b,k,n) */
DTDEF dt_tensor *dt_transpose(const dt_tensor *a);                  /* 2-D; a copy */
DTDEF dt_tensor *dt_reshape(const dt_tensor *a, dt_shape s);        /* shares a's memory; one dim may be -1 */
DTDEF dt_tensor *dt_sum(const dt_tensor *a);                        /* 0-d, stays on the device */
DTDEF dt_tensor *dt_mean(const dt_tensor *a);
DTDEF dt_tensor *dt_sum_dim(const dt_tensor *a, int dim);           /* reduces one dimension (removed) */
DTDEF dt_tensor *dt_norm(const dt_tensor *a);                       /* Frobenius, 0-d, on the device */
DTDEF dt_tensor *dt_cast(const dt_tensor *a, dt_dtype t);
DTDEF dt_tensor *dt_stack(const dt_tensor *const *ts, int n);      /* torch.stack: (n, ...) on their device */
DTDEF dt_status  dt_fill_(dt_tensor *t, double v);
DTDEF dt_status  dt_axpy_(dt_tensor *y, double alpha, const dt_tensor *x); /* y += alpha * x; x overlapping y (not y itself): refused */
/* in place (a.add_(b), a.sub_(b), a.mul_(b), a.div_(b)): b broadcast to a's shape, one dtype
   (div_: a float one), one device; b may be a itself but not overlap a's memory otherwise; a leaf
   that requires grad is refused while grad mode is on, as every _ function */
DTDEF dt_status  dt_add_(dt_tensor *a, const dt_tensor *b);
DTDEF dt_status  dt_sub_(dt_tensor *a, const dt_tensor *b);
DTDEF dt_status  dt_mul_(dt_tensor *a, const dt_tensor *b);
DTDEF dt_status  dt_div_(dt_tensor *a, const dt_tensor *b);
DTDEF dt_status  dt_add_scalar_(dt_tensor *a, double s);           /* a.add_(s); an integer a takes whole numbers */
DTDEF dt_status  dt_mul_scalar_(dt_tensor *a, double s);           /* a.mul_(s) */
/* indexing: slices, index_select, cat, permute; every dtype */
DTDEF dt_tensor *dt_slice(const dt_tensor *t, int dim, int64_t start, int64_t end); /* t[start:end] along dim, Python's clamping and negatives; dim 0 shares t's memory (a view, like dt_reshape), other dims copy */
DTDEF dt_tensor *dt_index_select(const dt_tensor *t, int dim, const dt_tensor *index); /* index: I64 (k,) on t's device, each in [0, n); on a GPU a bad one is reported at the next synchronizing call */
DTDEF dt_tensor *dt_cat(const dt_tensor *const *ts, int n, int dim);  /* torch.cat: shapes equal but along dim; (0,) tensors are skipped */
DTDEF dt_tensor *dt_permute(const dt_tensor *t, const int *dims);     /* a copy: y's dim i is t's dim dims[i] */

/* comparisons, sigmoid/tanh/abs, the _like constructors. Comparisons return DT_BOOL
   and broadcast like NumPy; operands of two dtypes compare in PyTorch's promoted dtype
   (bool < uint8 < int32 < int64 < float16, bfloat16 < float32 < float64, float16 with bfloat16: float32;
   a 0-d operand does not widen a tensor
   with dims of its own kind: integer, float or bool). NaN compares as IEEE: only dt_ne is true. */
DTDEF dt_tensor *dt_eq(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_ne(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_lt(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_le(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_gt(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_ge(const dt_tensor *a, const dt_tensor *b);
DTDEF dt_tensor *dt_sigmoid(const dt_tensor *a);                   /* float32/64; 1 / (1 + e^-x), stable for any x */
DTDEF dt_tensor *dt_tanh(const dt_tensor *a);                      /* float32/64 */
DTDEF dt_tensor *dt_abs(const dt_tensor *a);                       /* float32/64, int32/64 (wrapping: |INT_MIN| = INT_MIN), uint8 */
DTDEF dt_tensor *dt_zeros_like(const dt_tensor *t);                /* same shape, dtype, device */
DTDEF dt_tensor *dt_ones_like(const dt_tensor *t);
DTDEF dt_tensor *dt_empty_like(const dt_tensor *t);

/* classification: arg/max/min reductions, softmax, cross-entropy (F32, F64). dim < 0 counts from
   the end; a 0-d t takes dim 0 or -1. An empty reduction is refused, as PyTorch refuses it. NaN is
   the max and the min (first NaN wins); ties go to the first occurrence. */
DTDEF dt_tensor *dt_argmax(const dt_tensor *t, int dim);            /* I64, dim removed */
DTDEF dt_tensor *dt_argmin(const dt_tensor *t, int dim);
DTDEF dt_tensor *dt_max_dim(const dt_tensor *t, int dim);           /* values, dim removed */
DTDEF dt_tensor *dt_min_dim(const dt_tensor *t, int dim);
DTDEF dt_tensor *dt_max(const dt_tensor *t);                        /* over all elements: 0-d, on the device */
DTDEF dt_tensor *dt_min(const dt_tensor *t);
DTDEF dt_tensor *dt_softmax(const dt_tensor *t, int dim);           /* stable for any finite input */
DTDEF dt_tensor *dt_log_softmax(const dt_tensor *t, int dim);
DTDEF dt_tensor *dt_cross_entropy(const dt_tensor *logits, const dt_tensor *target);      /* (n, c), I64 (n,): mean loss, 0-d */
DTDEF dt_tensor *dt_cross_entropy_grad(const dt_tensor *logits, const dt_tensor *target); /* (softmax - onehot) / n: (n, c) */

/* ---- api: printing ---- */

DTDEF dt_status dt_print(const dt_tensor *t);                        /* stdout, then newline */
DTDEF dt_status dt_fprint(FILE *f, const dt_tensor *t);              /* f, then newline */
DTDEF int       dt_snprint(char *buf, size_t n, const dt_tensor *t); /* snprintf's contract; -1 on error */

/* ---- api: memory ---- */

typedef struct dt_memory_stats { size_t allocated, reserved, peak_allocated; } dt_memory_stats;
DTDEF dt_status dt_memory_stats_get(dt_device d, dt_memory_stats *out); /* torch.cuda.memory_allocated / _reserved */
DTDEF dt_status dt_empty_cache(dt_device d);

/* views and shape helpers (each shares t's memory, as dt_reshape; dim < 0 counts from the end) */
DTDEF dt_tensor *dt_flatten(const dt_tensor *t, int start_dim, int end_dim); /* torch.flatten: dims start..end joined; 0-d -> (1,) */
DTDEF dt_tensor *dt_unsqueeze(const dt_tensor *t, int dim);          /* a dim of 1 inserted at dim, in [-ndim-1, ndim] */
DTDEF dt_tensor *dt_squeeze(const dt_tensor *t, int dim);            /* dim removed if it is 1, else t's shape unchanged */
/* reductions over one dim with keepdim (the dim kept as 1), float32/64 */
DTDEF dt_tensor *dt_sum_dim_ex(const dt_tensor *t, int dim, int keepdim);  /* torch.sum(t, dim, keepdim) */
DTDEF dt_tensor *dt_mean_dim(const dt_tensor *t, int dim, int keepdim);    /* torch.mean(t, dim, keepdim); an empty dim: NaN */
DTDEF dt_tensor *dt_rsub_scalar(const dt_tensor *t, double s);            /* s - t (torch.rsub(t, s)) */
/* t op s as DT_BOOL, every dtype: exact as numbers (an integer tensor against a fraction compares in float64) */
DTDEF dt_tensor *dt_eq_scalar(const dt_tensor *t, double s);
DTDEF dt_tensor *dt_ne_scalar(const dt_tensor *t, double s);
DTDEF dt_tensor *dt_lt_scalar(const dt_tensor *t, double s);
DTDEF dt_tensor *dt_le_scalar(const dt_tensor *t, double s);
DTDEF dt_tensor *dt_gt_scalar(const dt_tensor *t, double s);
DTDEF dt_tensor *dt_ge_scalar(const dt_tensor *t, double s);
DTDEF dt_tensor *dt_one_hot(const dt_tensor *labels, int64_t num_classes); /* I64 (...) -> I64 (..., num_classes); -1: max + 1 */
/* elementwise functions, float32/64, recorded for autograd */
DTDEF dt_tensor *dt_sin(const dt_tensor *a);
DTDEF dt_tensor *dt_cos(const dt_tensor *a);
DTDEF dt_tensor *dt_erf(const dt_tensor *a);
DTDEF dt_tensor *dt_gelu(const dt_tensor *a);                      /* F.gelu (approximate='none'): x (1 + erf(x / sqrt 2)) / 2 */
DTDEF dt_tensor *dt_pow_scalar(const dt_tensor *a, double p);      /* torch.pow(a, p) */
DTDEF dt_tensor *dt_clamp(const dt_tensor *a, double lo, double hi); /* torch.clamp(a, lo, hi): NaN stays NaN; +-INFINITY for no bound */
/* where, gather, scatter_add, pad, randperm, randint (recorded for autograd where differentiable) */
DTDEF dt_tensor *dt_where(const dt_tensor *cond, const dt_tensor *a, const dt_tensor *b); /* torch.where: cond bool; the three broadcast; a, b promote as PyTorch's */
DTDEF dt_tensor *dt_gather(const dt_tensor *x, int dim, const dt_tensor *index);          /* torch.gather: index I64 of x's ndim; the result has index's shape */
DTDEF dt_tensor *dt_scatter_add(const dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src); /* x.scatter_add(dim, index, src): a new tensor */
DTDEF dt_status  dt_scatter_add_(dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src);      /* x.scatter_add_(dim, index, src): not recorded; src or index sharing x's memory: refused */
DTDEF dt_tensor *dt_pad(const dt_tensor *x, const int64_t *pad, int npad, double value); /* F.pad(x, pad, value=value): (left, right) of the last dim, then the one before...; negative crops */
DTDEF dt_tensor *dt_randperm(int64_t n, dt_device d);                                  /* torch.randperm(n): I64 (n,), from the seeded generator */
DTDEF dt_tensor *dt_randint(int64_t low, int64_t high, dt_shape s, dt_device d);       /* torch.randint(low, high, s): I64 in [low, high) */
/* losses, as torch.nn.functional's: target has input's shape, dtype (float32/64) and device (nll_loss:
   int64 class indices); recorded for autograd (gradients also for a target that requires grad, but
   nll_loss's). The plain forms are the mean over every element (reduction='mean', PyTorch's default;
   an empty input gives NaN); the _ex forms take PyTorch's reduction. */
typedef enum dt_reduction { DT_REDUCTION_NONE = 0, DT_REDUCTION_MEAN, DT_REDUCTION_SUM } dt_reduction; /* 'none', 'mean', 'sum' */
DTDEF dt_tensor *dt_bce_with_logits(const dt_tensor *logits, const dt_tensor *target);   /* max(x, 0) - x t + log1p(exp(-|x|)) */
DTDEF dt_tensor *dt_bce_with_logits_ex(const dt_tensor *logits, const dt_tensor *target, dt_reduction reduction);
DTDEF dt_tensor *dt_nll_loss(const dt_tensor *log_probs, const dt_tensor *target);      /* (n, c), I64 (n,): -log_probs[i, target[i]] */
DTDEF dt_tensor *dt_nll_loss_ex(const dt_tensor *log_probs, const dt_tensor *target, dt_reduction reduction);
DTDEF dt_tensor *dt_l1_loss(const dt_tensor *x, const dt_tensor *y);                    /* |x - y| */
DTDEF dt_tensor *dt_l1_loss_ex(const dt_tensor *x, const dt_tensor *y, dt_reduction reduction);
DTDEF dt_tensor *dt_smooth_l1_loss(const dt_tensor *x, const dt_tensor *y, double beta); /* 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; beta 0: l1 */
DTDEF dt_tensor *dt_smooth_l1_loss_ex(const dt_tensor *x, const dt_tensor *y, double beta, dt_reduction reduction);
DTDEF dt_tensor *dt_mse_loss_ex(const dt_tensor *pred, const dt_tensor *target, dt_reduction reduction); /* (pred - target)^2 */
/* half precision: float16, bfloat16 (casts, creation, elementwise ops, reductions, softmax, matmul) and
   torch.set_float32_matmul_precision: "highest" (default: F32), "high" (TF32 tensor cores), "medium"
   (BF16 tensor cores) for F32 matmuls on the GPU; the CPU computes F32 in F32 whatever the setting */
DTDEF dt_status   dt_set_float32_matmul_precision(const char *precision);
DTDEF const char *dt_get_float32_matmul_precision(void);     /* torch.get_float32_matmul_precision */
/* torch.autocast(device_type=where, dtype=t), per thread: with DT_BF16 or DT_F16 on, dt_matmul,
   the Linear layer's forward and dt_f_conv2d(_ex) cast their float inputs to t and run in t (F32
   accumulation, the result in t); dt_softmax, dt_log_softmax, dt_cross_entropy, dt_nll_loss, the
   mse, l1, smooth_l1 and bce_with_logits losses, dt_sum, dt_sum_dim(_ex) and dt_norm cast half
   inputs up and run in F32; the rest run in their inputs' dtype. The casts are recorded, so F32
   parameters get F32 gradients. A module on that device takes a float input of any dtype.
   DT_F32 turns it off. Returns the previous setting; (dt_dtype)-1 for a bad where or t. */
DTDEF dt_dtype dt_set_autocast(dt_device_type where, dt_dtype t);
DTDEF dt_dtype dt_get_autocast(dt_device_type where);            /* torch.get_autocast_gpu_dtype; DT_F32 when off */
