/* ======================================================================== */
/*  BACKEND CONTRACT: for the implementation and devtensor_cuda.cu only.     */
/*  A user's translation unit never sees it: it opens only where             */
/*  DEVTENSOR_IMPLEMENTATION or DEVTENSOR_BACKEND (devtensor_cuda.cu) is     */
/*  defined. Its own guard, so an earlier plain include does not hide it.   */
/* ======================================================================== */
#if (defined(DEVTENSOR_IMPLEMENTATION) || defined(DEVTENSOR_BACKEND)) && !defined(DEVTENSOR_BACKEND_H)
#define DEVTENSOR_BACKEND_H
#include <string.h> /* memcpy: the half precision conversions' bit casts */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- backend: interface ----
   What a device backend implements. The core checks every argument (NULL,
   dtype, shape, device) before it calls a backend, so a backend may assume
   valid input: pointers are its own, sizes fit, dtypes are supported.
   `dev` is the device index. A function that can fail returns a dt_status
   and leaves a message for `last_error`. devtensor_cuda.cu exports
   dt__cuda_backend(); nothing else couples the core to CUDA. */

typedef enum dt__unary_op {
  DT__U_AFFINE = 0,   /* y = p0 * x + p1 */
  DT__U_EXP, DT__U_LOG, DT__U_SQRT, DT__U_NEG, DT__U_RELU,
  /* activations beyond relu, and abs */
  DT__U_SIGMOID, DT__U_TANH, DT__U_ABS, /* ABS also on I32/I64 (wrapping) */
  /* float only: sin, cos, erf; gelu x Phi(x) (the erf form) and its derivative Phi(x) + x phi(x);
     pow x^p0; clamp min(max(x, p0), p1) with NaN kept (x, p0 or p1 NaN: NaN; p0 > p1: p1) */
  DT__U_SIN, DT__U_COS, DT__U_ERF, DT__U_GELU, DT__U_GELU_GRAD, DT__U_POW, DT__U_CLAMP,
  /* float only: softplus max(x, 0) + log1p(exp(-|x|)), which never overflows (the losses) */
  DT__U_SOFTPLUS
} dt__unary_op;

/* comparisons: y = a op b as DT_BOOL (one byte, 0 or 1); the core turns gt/ge into lt/le
   with the operands swapped. NaN: only NE is true. */
typedef enum dt__compare_op { DT__C_EQ = 0, DT__C_NE, DT__C_LT, DT__C_LE } dt__compare_op;

typedef enum dt__binary_op {
  DT__B_ADD = 0, DT__B_SUB, DT__B_MUL, DT__B_DIV,
  DT__B_RELU_GRAD,    /* y = a * (b > 0): the gradient of relu at b */
  DT__B_COPY_A,       /* y = a (b unused): a strided copy, e.g. a transpose */
  /* float only, the gradients of sigmoid and tanh from their output b, as PyTorch's kernels */
  DT__B_SIGMOID_GRAD, /* y = a (1 - b) b */
  DT__B_TANH_GRAD     /* y = a (1 - b b) */
} dt__binary_op;

typedef enum dt__reduce_op { DT__R_SUM = 0, DT__R_MEAN, DT__R_NORM } dt__reduce_op;

/* optimizers: what an optimizer step does to one parameter p, as PyTorch's single-tensor
   loops, every value rounded to p's dtype at each operation as PyTorch's ops do:
   SGD:   d = g + weight_decay p; with momentum: buf1 = first ? d : momentum buf1 + d, d = buf1;
          p = p - lr d
   Adam:  d = g + weight_decay p; buf1 = beta1 buf1 + (1 - beta1) d;
          buf2 = beta2 buf2 + (1 - beta2) d d; p = p - step_size buf1 / (sqrt(buf2) / bc2_sqrt + eps)
   AdamW: p = p (1 - lr weight_decay), then Adam's update with d = g.
   step_size = lr / (1 - beta1^step) and bc2_sqrt = sqrt(1 - beta2^step) come from the core.
   F16 and BF16: dt__optim_half1 (src/backend/optim_half.h) spells out each rounding. */
typedef enum dt__optim_kind { DT__OPT_SGD = 0, DT__OPT_ADAM, DT__OPT_ADAMW } dt__optim_kind;
typedef struct dt__optim_hp {
  dt__optim_kind kind;
  int first;                    /* SGD with momentum: the first step (buf1 = d) */
  double lr, momentum, weight_decay, beta1, beta2, eps;
  double step_size, bc2_sqrt;   /* Adam, AdamW */
} dt__optim_hp;

/* Broadcast geometry of y = a op b: out dims, and each operand's element
   strides over those dims (0 where it broadcasts). `contiguous` is 1 when
   a, b and y all have the same shape, so element i of each is at i. */
typedef struct dt__bcast {
  int     ndim;
  int     contiguous;
  int64_t numel;
  int64_t dims[DT_MAX_DIMS];
  int64_t astride[DT_MAX_DIMS];
  int64_t bstride[DT_MAX_DIMS];
} dt__bcast;

/* convolution and pooling geometry (every size in elements; see im2col, col2im, pool2d):
   x: (n, c, h, w); a convolution's weight: (oc, c / groups, kh, kw), its output (n, oc, oh, ow);
   flip (0 or 1, read by im2col only): the taps in reverse order, row (ci, t) of col holding tap
   kh kw - 1 - t (the input gradient taken as a convolution of gy, src/ops/conv.c) */
typedef struct dt__conv2d {
  int64_t n, c, h, w, oc, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int64_t flip;
} dt__conv2d;
/* max: windows of kh x kw every sh, sw rows and columns from -ph, -pw, the padding -inf;
   avg: the same windows, each sum divided by its size clipped to (h + ph, w + pw) only
   (count_include_pad); adaptive avg: output row i averages rows floor(i h / oh) to
   ceil((i + 1) h / oh) - 1, and so for columns (kh .. pw unused). y: (n, c, oh, ow). */
typedef enum dt__pool2d_kind { DT__POOL2D_MAX = 0, DT__POOL2D_AVG, DT__POOL2D_ADAPTIVE_AVG } dt__pool2d_kind;
typedef struct dt__pool2d {
  dt__pool2d_kind kind;
  int64_t n, c, h, w, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
} dt__pool2d;

/* Batch normalisation of x viewed as (n, c, l), per channel over its n l >= 2 values (see the
   batch_norm slots). Pointers not used by a call are NULL; vectors are (c,) in x's dtype. */
typedef struct dt__bn {
  int64_t n, c, l;
  double eps, momentum;
  int train;                /* 1: the batch's statistics; 0: the running ones */
  const void *x, *w, *b;    /* w, b: NULL for 1 and 0 */
  void *rmean, *rvar;       /* the running statistics: read (eval), updated where not NULL (train) */
  void *mean, *var;         /* train: the batch's mean and biased variance, written; the backward reads them */
  void *y;                  /* the forward's result, like x */
  const void *gy;           /* the backward's: the gradient of y */
  void *gx, *gw, *gb;       /* the backward's results, any of them NULL when not wanted */
  void *ws;                 /* the backward's: 2 c doubles of scratch, for a backend that wants it */
} dt__bn;

/* Each table entry is written by name: DT__SLOT(alloc) dt__cpu_alloc, ... It is a
   designated initializer where the language has one (C99; C++20, which also
   checks the order), a plain positional entry in C++11-17. A slot written
   under the wrong name fails the C build; one out of order fails C++20. */
#if !defined(__cplusplus) || __cplusplus >= 202002L
#define DT__SLOT(name) .name =
#else
#define DT__SLOT(name)
#endif

typedef struct dt__backend {
  const char *name;
  /* Number of devices; 0 with a reason in `why` when unavailable. */
  int       (*device_count)(char *why, size_t n);
  dt_status (*device_info)(int dev, dt_device_info *out);
  const char *(*last_error)(void);
  /* Memory: a caching allocator. alloc of 0 bytes may return any pointer. */
  dt_status (*alloc)(int dev, size_t nbytes, void **out);
  void      (*free)(int dev, void *p, size_t nbytes);
  dt_status (*memory_stats)(int dev, dt_memory_stats *out);
  dt_status (*empty_cache)(int dev);
  /* Copies between this backend's device and the host or another of its
     devices. dst_dev/src_dev < 0 means host memory. Device to host waits. */
  dt_status (*copy)(int dst_dev, void *dst, int src_dev, const void *src, size_t nbytes);
  dt_status (*synchronize)(int dev);
  void     *(*stream)(int dev);
  /* Kernels. n counts elements. */
  dt_status (*fill)(int dev, dt_dtype t, int64_t n, double v, void *y);
  dt_status (*unary)(int dev, dt__unary_op op, dt_dtype t, int64_t n, const void *x, void *y, double p0, double p1);
  dt_status (*binary)(int dev, dt__binary_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y);
  dt_status (*cast)(int dev, dt_dtype from, dt_dtype to, int64_t n, const void *x, void *y);
  /* y[o, i] = op over r of x[o, r, i], for x of shape (outer, len, inner). */
  dt_status (*reduce)(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y);
  /* Row-major batched C = alpha * op(A) @ op(B) + beta * C, op(A): (m, k), op(B): (k, n), C: (m, n);
     ta/tb: A is stored (k, m) / B is stored (n, k). Strides between batch items in elements (0: shared). */
  dt_status (*gemm)(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                    double alpha, const void *a, int64_t stride_a, const void *b, int64_t stride_b,
                    double beta, void *c, int64_t stride_c);
  /* y[i] += alpha * x[i] */
  dt_status (*axpy)(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y);
  /* Philox 4x32-10 with key = seed and counter = (i / 4, draw): uniform [0, 1) or standard normal, F32.
     gen: NULL, or a draw captured into a graph, whose seed and first draw the kernel reads as it
     runs (dt__rng_at) */
  dt_status (*random)(int dev, int normal, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, float *y);
  /* optimizers: one optimizer's update of a parameter p (n elements, F32, F64, F16 or BF16) from its
     gradient g and its state buf1, buf2 (see dt__optim_hp), in one pass */
  dt_status (*optim_step)(int dev, dt_dtype t, int64_t n, const dt__optim_hp *h, void *p, const void *g, void *buf1, void *buf2);
  /* comparisons: y (DT_BOOL, contiguous over g's dims) = a op b, a and b of dtype t read through g */
  dt_status (*compare)(int dev, dt__compare_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y);
  /* indexing (slice, cat, permute, index_select); elements of es bytes (1, 2, 4 or 8), any dtype */
  /* y[sum_d i_d * bstride_d] = x[sum_d i_d * astride_d] for every index (i_0, ..) over g->dims (g->numel of them) */
  dt_status (*copy_strided)(int dev, size_t es, const dt__bcast *g, const void *x, void *y);
  /* x: (outer, n, inner), idx: (k,) I64 on the device -> y: (outer, k, inner), y[o, j, i] = x[o, idx[j], i].
     An idx[j] outside [0, n) is never followed: its entries of y are zeros, and the failure is kept for
     the next synchronize or device-to-host copy to report (the CPU core checks idx before it calls). */
  dt_status (*index_select)(int dev, size_t es, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k,
                            const void *x, void *y);
  /* classification (argmax, softmax, cross-entropy). x: (outer, len, inner), len >= 1.
     vals[o, i] = max (min: 1) over r of x[o, r, i], NaN above all; idx[o, i] = its first r. Either may be NULL. */
  dt_status (*arg_reduce)(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x,
                          void *vals, int64_t *idx);
  /* y = softmax (lg: log_softmax) of x over r; x, y: (outer, len, inner) */
  dt_status (*softmax)(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y);
  /* logits: (n, c), target: (n,). grad 0: y 0-d, the mean of log-sum-exp(row) - row[label];
     grad 1: y (n, c) = (softmax - onehot) / n. A label outside [0, c) is never read with: its row
     is NaN; the CPU core refuses such labels first, the CUDA backend records the first one per
     device and fails the device's next synchronizing call (synchronize, a copy to the host). */
  dt_status (*cross_entropy)(int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits,
                             const int64_t *target, void *y);
  /* distributed: NCCL communicators and collectives. NULL, or DT_ERR_UNSUPPORTED,
     where the backend has none. dist_unique_id fills 128 bytes (ncclUniqueId);
     dist_comm_init joins rank `rank` of `nranks` on device `dev` (ncclCommInitRank);
     dist_comm_init_all makes one communicator per device of `devs` in this process
     (ncclCommInitAll). The collectives run one call per communicator in one group, each on
     its device's stream; op is a dt_reduce_op. */
  dt_status (*dist_unique_id)(void *id);
  dt_status (*dist_comm_init)(int dev, int nranks, int rank, const void *id, void **comm);
  dt_status (*dist_comm_init_all)(int ndev, const int *devs, void **comms);
  void      (*dist_comm_free)(void *comm);
  dt_status (*dist_all_reduce)(int ncomm, void *const *comms, const int *devs, dt_dtype t, int op, int64_t n, void *const *bufs);
  dt_status (*dist_broadcast)(int ncomm, void *const *comms, const int *devs, dt_dtype t, int64_t n, void *const *bufs, int root);
  /* convolution (the core multiplies with gemm) and pooling; F32, F64; g's sizes all > 0.
     im2col: x (nimg, c, h, w) -> col (c kh kw, nimg, oh ow), every image's entries of one kernel tap in one row,
     col[(ci kh + ki) kw + kj, i, oy ow + ox] = x[i, ci, oy sh - ph + ki dh, ox sw - pw + kj dw], 0 outside x
     (with g->flip, row (ci kh + ki) kw + kj holds tap (kh - 1 - ki, kw - 1 - kj))
     (so that one gemm multiplies a block of images: (oc, c kh kw) @ col is (oc, nimg oh ow)).
     col2im, its adjoint: x (overwritten) at each position = the sum of the col entries im2col puts it in. */
  dt_status (*im2col)(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col);
  dt_status (*col2im)(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x);
  /* y (n, c, oh, ow) from x (n, c, h, w); max also writes idx (like y): where in its plane
     (row h_in * w + column) the max is: the first max, or the last NaN (NaN wins, as PyTorch's) */
  dt_status (*pool2d)(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx);
  /* gx (n, c, h, w), overwritten: each position's sum over the windows that hold it of gy's entry,
     divided by the window's count for avg; for max only where idx names that position */
  dt_status (*pool2d_backward)(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx);
  /* where, gather, scatter-add, index-add, random integers (src/ops/index2.c) */
  /* y (contiguous over g's dims) = c ? a : b, elements of es bytes, a and b read through g's strides,
     c (DT_BOOL, one byte) through cstride (one per dim of g) */
  dt_status (*where)(int dev, size_t es, const dt__bcast *g, const int64_t *cstride, const void *c, const void *a,
                     const void *b, void *y);
  /* Over the index's elements e (g->numel of them, g->dims its shape, idx contiguous), with
     oa(e) = sum_d i_d astride_d (the dim indexed has astride 0) and ob(e) = sum_d i_d bstride_d:
     gather:      y[ob(e)] = x[oa(e) + idx[e] stride], elements of es bytes;
     scatter_add: y[oa(e) + idx[e] stride] += src[ob(e)], dtype t (F32, F64, I32, I64).
     An idx[e] outside [0, n) is never followed, as index_select's (gather writes 0 for it). */
  dt_status (*gather)(int dev, size_t es, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                      const void *x, void *y);
  dt_status (*scatter_add)(int dev, dt_dtype t, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                           const void *src, void *y);
  /* y: (outer, n, inner) += src: (outer, k, inner) by rows: y[o, idx[j], i] += src[o, j, i]; F32, F64.
     index_select's backward; an idx[j] outside [0, n) as above. */
  dt_status (*index_add)(int dev, dt_dtype t, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k,
                         const void *src, void *y);
  /* y[i] = low + v mod range, I64, v the 64-bit word (w[2h] << 32 | w[2h + 1]), h = i % 2, of
     Philox block i / 2 of draw `draw` (dt__random_int_at); range >= 1; gen as random's */
  dt_status (*random_int)(int dev, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, int64_t low, uint64_t range,
                          int64_t *y);
  /* losses: logp (n, c), target (n,) -> y (n,) = -logp[i, target[i]] (nll_loss without reduction).
     A label outside [0, c) is never read with: its y is NaN; the CPU core refuses such labels first,
     the CUDA backend records them as cross_entropy does (reported as dt_nll_loss's). */
  dt_status (*nll_loss)(int dev, dt_dtype t, int64_t n, int64_t c, const void *logp, const int64_t *target, void *y);
  /* half precision: every slot above that takes a dtype may be given DT_F16 and DT_BF16 only
     through the core's table (src/core/half.c), which converts to F32 around the backend's
     kernels, except cast, fill, copy_strided and index_select, which a backend does itself,
     gemm where half_gemm is 1 (A, B, C in the half dtype, accumulating in F32), unary and binary
     (F32 operations on elements converted to F32, each result rounded once; a COPY_A moves
     the bits) and compare; and the CUDA backend's reduce, arg_reduce, softmax, cross_entropy,
     nll_loss, axpy, im2col, col2im, pool2d and pool2d_backward, which compute what their F32
     kernels compute on the elements converted on the way, each result rounded once (the same
     bits as the F32 route), and the CPU backend's reduce (a block of elements converted at a
     time, the same bits). */
  int half_gemm;
  /* torch.set_float32_matmul_precision for F32 gemm: 0 "highest" (F32), 1 "high" (TF32),
     2 "medium" (BF16); NULL where the backend computes F32 one way */
  void (*set_matmul_precision)(int level);
  /* graphs (dt_graph_*): graph_begin starts capturing the work issued on dev (CUDA: stream
     capture of the device's stream; the CPU: its recording table, see dt__cpu_rec_backend);
     graph_end stops and hands back what was captured, ready to replay (NULL and an error when
     the capture failed: then nothing is kept); scratch memory the backend took and released
     during the capture stays with that graph until graph_free. graph_replay with gen not NULL
     first writes gen[0] = seed, gen[1] = draw in the device's order (the captured draws' base,
     see dt__rng_at). */
  dt_status (*graph_begin)(int dev);
  dt_status (*graph_end)(int dev, void **graph);
  dt_status (*graph_replay)(int dev, void *graph, uint64_t *gen, uint64_t seed, uint64_t draw);
  void      (*graph_free)(int dev, void *graph);
  /* convolution through a vendor library (cuDNN: the CUDA backend built with DEVTENSOR_CUDNN);
     NULL where the backend has none, and then the core multiplies with im2col + gemm. F32, F64,
     F16 and BF16 (the half dtypes straight from the core: computed in F32, rounded once); g's
     sizes all > 0, g->n the images of this call. DT_ERR_UNSUPPORTED, with nothing written, for
     a case the library refuses (the core then takes im2col + gemm); any other failure is one.
     conv2d_forward:         y (n, oc, oh, ow) = conv(x (n, c, h, w), w (oc, c / groups, kh, kw)), overwritten
     conv2d_backward_data:   gx (n, c, h, w) = the input gradient from gy (n, oc, oh, ow), overwritten
     conv2d_backward_filter: gw = the weight gradient from x and gy + beta gw (beta 0: gw not read) */
  dt_status (*conv2d_forward)(int dev, dt_dtype t, const dt__conv2d *g, const void *x, const void *w, void *y);
  dt_status (*conv2d_backward_data)(int dev, dt_dtype t, const dt__conv2d *g, const void *w, const void *gy, void *gx);
  dt_status (*conv2d_backward_filter)(int dev, dt_dtype t, const dt__conv2d *g, const void *x, const void *gy, double beta,
                                      void *gw);
  /* batch normalisation in one pass per channel, F32 and F64 (the core composes it from the
     operations above for the half dtypes, or where these are NULL); sums in double (the CPU's
     F32 adds chunks of 64 values in float, then the chunks in double).
     batch_norm: train: mean, var = the channel's mean and biased variance (two passes), and the
     running statistics, where given, r = (1 - momentum) r + momentum s (the variance unbiased:
     times n l / (n l - 1)); eval: mean, var = rmean, rvar. Then y = (x - mean) / sqrt(var + eps) w + b.
     batch_norm_backward: from gy, x, mean and var (train: the saved batch statistics; eval: the
     running ones) and w, with k = 1 / sqrt(var + eps), N = n l: gb = sum gy, gw = k sum gy (x - mean),
     gx = w k (gy - gb / N - (x - mean) k gw / N) (train), w k gy (eval). */
  dt_status (*batch_norm)(int dev, dt_dtype t, const dt__bn *p);
  dt_status (*batch_norm_backward)(int dev, dt_dtype t, const dt__bn *p);
} dt__backend;


/* Small helpers shared by the core and every backend (a backend cannot call
   the core's functions: with DEVTENSOR_STATIC they are static in the user's file). */
static inline size_t dt__dtype_bytes(dt_dtype t) {
  switch (t) {
    case DT_F32: case DT_I32: return 4; case DT_F64: case DT_I64: return 8; case DT_U8: case DT_BOOL: return 1;
    case DT_F16: case DT_BF16: return 2;
  }
  return 0;
}
static inline const char *dt__dtype_str(dt_dtype t) {
  switch (t) {
    case DT_F32: return "float32"; case DT_F64: return "float64"; case DT_I32: return "int32"; case DT_I64: return "int64";
    case DT_U8: return "uint8"; case DT_BOOL: return "bool"; case DT_F16: return "float16"; case DT_BF16: return "bfloat16";
  }
  return "unknown dtype";
}
/* "4.00 GiB", as every out-of-memory message writes sizes */
static inline const char *dt__bytes_str(double b, char *buf, size_t n) {
  static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  if (b < 1024.0) { snprintf(buf, n, "%.0f bytes", b); return buf; }
  while (b >= 1024.0 && u < 6) { b /= 1024.0; u++; }
  snprintf(buf, n, "%.2f %s", b, unit[u]);
  return buf;
}

/* Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
   SC'11), shared by every backend so that a seed gives the same numbers on
   every device. Element i of draw d uses counter (i / 4, d) and key seed, and
   takes word i % 4 of the block. */
#if defined(__CUDACC__)
#define DT__HD __host__ __device__
#else
#define DT__HD
#endif
static DT__HD inline void dt__philox(uint32_t ctr[4], uint64_t seed) {
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  int r;
  for (r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p1 = (uint64_t)0xCD9E8D57u * ctr[2];
    uint32_t c0 = (uint32_t)(p1 >> 32) ^ ctr[1] ^ k0, c2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
    ctr[1] = (uint32_t)p1; ctr[3] = (uint32_t)p0; ctr[0] = c0; ctr[2] = c2;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
}
/* Half precision, bit by bit and the same on every device (PyTorch's c10::Half and
   c10::BFloat16): float to float16 and bfloat16 rounds to nearest, ties to even, with
   subnormals, overflow to inf (float16 from 65520 up) and NaN made quiet (float16: the sign
   kept, 0x7e00; bfloat16: 0x7fc0, as c10::BFloat16's round_to_nearest_even); back to float
   is exact (a float16 NaN made quiet). Every other dtype converts through float, as
   PyTorch's static_cast<c10::Half> does (float64 rounds twice, as there). */
static DT__HD inline uint32_t dt__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static DT__HD inline float dt__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static DT__HD inline uint16_t dt__f32_to_f16(float f) {
  uint32_t x = dt__f32_bits(f), ax = x & 0x7FFFFFFFu, r, rem, half;
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  int shift;
  if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);           /* NaN */
  if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);          /* 65520 and up (and inf): inf */
  if (ax >= 0x38800000u) {                                           /* normal: 2^-14 and up */
    r = (ax >> 13) - (112u << 10); rem = ax & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  if (ax <= 0x33000000u) return sign;                                /* 2^-25 and below: a tie at most, to 0 */
  shift = 126 - (int)(ax >> 23);                                     /* subnormal: units of 2^-24, shift 14..24 */
  r = ((ax & 0x7FFFFFu) | 0x800000u) >> shift;
  rem = ((ax & 0x7FFFFFu) | 0x800000u) & ((1u << shift) - 1u); half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) r++;
  return (uint16_t)(sign | r);
}
static DT__HD inline float dt__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1Fu) return dt__bits_f32(sign | 0x7F800000u | (m << 13) | (m ? 0x400000u : 0u));
  if (e == 0) { float v = (float)m * 5.9604644775390625e-8f; return sign ? -v : v; } /* m 2^-24, exact */
  return dt__bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}
static DT__HD inline uint16_t dt__f32_to_bf16(float f) {
  uint32_t x = dt__f32_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
static DT__HD inline float dt__bf16_to_f32(uint16_t h) { return dt__bits_f32((uint32_t)h << 16); }
/* either half dtype, t DT_F16 or DT_BF16 */
static DT__HD inline uint16_t dt__f32_to_half(int bf, float f) { return bf ? dt__f32_to_bf16(f) : dt__f32_to_f16(f); }
static DT__HD inline float dt__half_to_f32(int bf, uint16_t h) { return bf ? dt__bf16_to_f32(h) : dt__f16_to_f32(h); }

/* A draw's seed and number as a kernel runs: a draw captured into a graph is numbered from 0
   within the graph, and each replay writes the generator's seed and the graph's first draw
   into gen first (dt_graph_replay), so replays draw what eager calls would have drawn. */
static DT__HD inline void dt__rng_at(const uint64_t *gen, uint64_t *seed, uint64_t *draw) {
  if (gen) { *seed = gen[0]; *draw += gen[1]; }
}

/* Block j of draw d: four 32-bit words. */
static DT__HD inline void dt__philox_block(uint64_t seed, uint64_t draw, uint64_t j, uint32_t out[4]) {
  out[0] = (uint32_t)j; out[1] = (uint32_t)(j >> 32); out[2] = (uint32_t)draw; out[3] = (uint32_t)(draw >> 32);
  dt__philox(out, seed);
}
/* uniform [0, 1) from the top 24 bits: exactly representable in float */
static DT__HD inline float dt__u32_to_uniform(uint32_t w) { return (float)(w >> 8) * (1.0f / 16777216.0f); }
/* Box-Muller in double, then rounded: words (w0, w1) give two normals. The
   same on every device, bit for bit: log, sin and cos are computed here from
   +, -, *, / and sqrt alone (correctly rounded everywhere), in a fixed order,
   rather than by each platform's maths library (glibc's and CUDA's differ by
   an ulp now and then). On the GPU every step is an explicitly rounded
   intrinsic, so nvcc cannot fuse a multiply and an add; on the host clang is
   told not to (FP_CONTRACT OFF), and GCC does not in ISO modes (-std=c99,
   -std=c11). GCC in a GNU mode with an FMA -march, or any compiler given
   -ffp-contract=fast, may fuse on the CPU and differ in a last bit now and
   then. Accuracy: about 2 ulp of double before the rounding to float. */
#if defined(__clang__)
#define DT__NO_CONTRACT _Pragma("STDC FP_CONTRACT OFF")
#else
#define DT__NO_CONTRACT
#endif
#if defined(__CUDA_ARCH__)
#define DT__DMUL(a, b) __dmul_rn((a), (b))
#define DT__DADD(a, b) __dadd_rn((a), (b))
#define DT__DDIV(a, b) __ddiv_rn((a), (b))
#define DT__DSQRT(a) __dsqrt_rn(a)
#else
#define DT__DMUL(a, b) ((a) * (b))
#define DT__DADD(a, b) ((a) + (b))
#define DT__DDIV(a, b) ((a) / (b))
#define DT__DSQRT(a) sqrt(a)
#endif
/* log(x) for x = k / 2^32, 1 <= k <= 2^32: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
   log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^27. */
static DT__HD inline double dt__log_unit(double x) {
  DT__NO_CONTRACT
  static const double ln2_hi = 0.6931471806019545, ln2_lo = -4.2009150726810846e-11; /* ln2_hi: 32 bits, so e * ln2_hi is exact */
  static const double c[13] = {1.0 / 27, 1.0 / 25, 1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15,
                               1.0 / 13, 1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};
  double m = x, f, s, z, p;
  int e = 0, i;
  while (m < 0.7071067811865476) { m = DT__DMUL(m, 2.0); e--; } /* exact; at most 32 steps */
  f = DT__DADD(m, -1.0);                                          /* exact (Sterbenz) */
  s = DT__DDIV(f, DT__DADD(f, 2.0));
  z = DT__DMUL(s, s);
  p = c[0];
  for (i = 1; i < 13; i++) p = DT__DADD(DT__DMUL(p, z), c[i]);  /* Horner from 1/27 down to 1/3 */
  /* log m = 2s + 2s z p; log x = e ln2_hi + (e ln2_lo + log m) */
  return DT__DADD(DT__DMUL((double)e, ln2_hi),
                  DT__DADD(DT__DMUL((double)e, ln2_lo), DT__DADD(DT__DMUL(2.0, s), DT__DMUL(DT__DMUL(2.0, s), DT__DMUL(z, p)))));
}
/* sin a and cos a for 0 <= a <= pi/4, by their Taylor series to a^19 / a^20. */
static DT__HD inline void dt__sincos_octant(double a, double *sn, double *cs) {
  DT__NO_CONTRACT
  /* -1/19!, 1/17!, ..., -1/3! and 1/20!, -1/18!, ..., -1/2!: Horner from the highest term down */
  static const double sin_c[9] = {-1.0 / 121645100408832000.0, 1.0 / 355687428096000.0, -1.0 / 1307674368000.0,
                                  1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0,
                                  -1.0 / 6.0};
  static const double cos_c[10] = {1.0 / 2432902008176640000.0, -1.0 / 6402373705728000.0, 1.0 / 20922789888000.0,
                                   -1.0 / 87178291200.0, 1.0 / 479001600.0, -1.0 / 3628800.0, 1.0 / 40320.0, -1.0 / 720.0,
                                   1.0 / 24.0, -1.0 / 2.0};
  double z = DT__DMUL(a, a), ps = sin_c[0], pc = cos_c[0];
  int i;
  for (i = 1; i < 9; i++) ps = DT__DADD(DT__DMUL(ps, z), sin_c[i]);
  for (i = 1; i < 10; i++) pc = DT__DADD(DT__DMUL(pc, z), cos_c[i]);
  *sn = DT__DADD(a, DT__DMUL(DT__DMUL(a, z), ps));          /* a + a z ps */
  *cs = DT__DADD(1.0, DT__DMUL(z, pc));                     /* 1 + z pc */
}
static DT__HD inline void dt__box_muller(uint32_t w0, uint32_t w1, float *z0, float *z1) {
  DT__NO_CONTRACT
  double u1 = DT__DMUL((double)w0 + 1.0, 1.0 / 4294967296.0); /* (0, 1], exact */
  double t = DT__DMUL((double)(w1 & 0x3FFFFFFFu), 1.0 / 1073741824.0); /* [0, 1): where in its quarter turn theta = 2 pi w1 / 2^32 is, exact */
  double r = DT__DSQRT(DT__DMUL(-2.0, dt__log_unit(u1))), sn, cs, c, d;
  unsigned q = w1 >> 30;                                      /* the quarter turn */
  if (t <= 0.5) {
    dt__sincos_octant(DT__DMUL(t, 1.5707963267948966), &sn, &cs);
  } else { /* sin(pi/2 - a) = cos a */
    dt__sincos_octant(DT__DMUL(DT__DADD(1.0, -t), 1.5707963267948966), &cs, &sn);
  }
  /* (cos, sin) of theta = q pi/2 + t pi/2 */
  c = q == 0 ? cs : q == 1 ? -sn : q == 2 ? -cs : sn;
  d = q == 0 ? sn : q == 1 ? cs : q == 2 ? -sn : -cs;
  *z0 = (float)DT__DMUL(r, c); *z1 = (float)DT__DMUL(r, d);
}

/* element i of dt_randint's draw: low + v mod range (see the backend's random_int) */
static DT__HD inline int64_t dt__random_int_at(uint64_t seed, uint64_t draw, uint64_t i, int64_t low, uint64_t range) {
  uint32_t w[4];
  unsigned h = (unsigned)(i & 1u) * 2u;
  uint64_t v;
  dt__philox_block(seed, draw, i >> 1, w);
  v = (uint64_t)w[h] << 32 | w[h + 1];
  return (int64_t)((uint64_t)low + v % range); /* wrapping: low + (v mod range) < 2^63 */
}

#ifdef DEVTENSOR_CUDA
const dt__backend *dt__cuda_backend(void); /* defined in devtensor_cuda.cu */
#endif

#ifdef __cplusplus
}
#endif

#endif /* DEVTENSOR_BACKEND_H */
