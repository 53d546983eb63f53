/* devtensor.h — tensors that live on a device (the CPU or a CUDA GPU), in one C header.

   USING IT
   In exactly one C or C++ file of your program:

       #define DEVTENSOR_IMPLEMENTATION
       #include "devtensor.h"

   Everywhere else just #include "devtensor.h".

   To get GPUs, also #define DEVTENSOR_CUDA before the include in that one file,
   compile devtensor_cuda.cu with nvcc and link -lcudart -lcublas:

       nvcc -I. -DDEVTENSOR_CUDA examples/gpus.c devtensor_cuda.cu -lcublas -o gpus

   Without DEVTENSOR_CUDA the same program builds and runs on the CPU and
   dt_num_gpus() is 0.

   OPTIONS (define before the implementation include)
     DEVTENSOR_STATIC        every function is static (DTDEF is `static`)
     DEVTENSOR_CUDA          use the CUDA backend from devtensor_cuda.cu
     DEVTENSOR_CBLAS         CPU matmul through cblas_sgemm/cblas_dgemm (link e.g. -lopenblas)
     DEVTENSOR_NO_CPU_DISPATCH  no AVX2/AVX-512 matmul kernels picked at run time: only what the
                             compiler flags allow (plain -O2 on x86-64 is SSE2: about 5x slower)
     DT_MALLOC(sz)/DT_FREE(p) host allocator (define both or neither)
     DT_ASSERT(c)            internal invariant checks (default: assert)
     -fopenmp                the CPU matmul and large elementwise ops use every core
     DEVTENSOR_MPI           dt_dist_* over MPI: more than one rank (compile with mpicc, run with mpirun)
     DEVTENSOR_NCCL          (compiling devtensor_cuda.cu) GPU collectives through NCCL: link -lnccl
     DEVTENSOR_CUDNN         (compiling devtensor_cuda.cu) GPU convolutions through cuDNN: link -lcudnn
                             (without it: im2col + cuBLAS)

   EXAMPLE
       dt_device dev = dt_try_gpu(0);               // cuda:0, or the CPU when there is none
       dt_tensor *x = dt_ones(dt_shape2(2, 3), dev);
       dt_tensor *y = dt_rand(dt_shape2(2, 3), dev);
       dt_tensor *z = dt_add(x, y);                 // runs where x and y are
       if (!z) fprintf(stderr, "%s\n", dt_last_error());
       dt_print(z);                                 // tensor([[...]], device='cuda:0')
       dt_release(x); dt_release(y); dt_release(z);

   ERRORS
   Nothing aborts, exits or prints. A function that makes a tensor or module
   returns NULL on failure; the others return a dt_status. dt_last_error()
   says why, per thread.

   CONTENTS
   This file is generated: tools/amalgamate.py joins the parts written in src/, in
   the order src/MANIFEST gives, each under a banner naming it ("---- src/nn/module.c").
   Edit the parts and run `make amalgamate`; CI fails when this file differs.
     src/header.h, api/      this text and the public declarations: errors, devices,
                             tensors, operations, printing, neural networks and
                             optimizers, autograd, convolution, interop, distributed
     src/backend/            the contract between the core and a device backend (the
                             dt__backend table, broadcast geometry, Philox, Box-Muller);
                             seen only by the implementation and devtensor_cuda.cu
     src/core/               errors, shapes and dtypes, devices, tensors and memory,
                             random numbers, copies
     src/ops/                arithmetic and reductions, comparisons, indexing,
                             classification (argmax, softmax, cross-entropy),
                             convolution and pooling (dt_f_conv2d, dt_f_max_pool2d, ...)
     src/autograd/           the graph that operations record, the backward of each
                             operation, the engine (dt_autograd_backward)
     src/nn/                 grad mode, modules, forward and backward, optimizers
     src/train/              the trainer: its data, its data-parallel replicas, its epochs
     src/io/                 printing, safetensors (modules and any named tensors, with
                             a strict JSON reader), DLPack
     src/dist/               dt_dist_*, dt_all_reduce_, dt_broadcast_ (MPI, NCCL)
     src/cpu/                the CPU backend: memory, threads, elementwise kernels,
                             reductions, random numbers, classification, optimizers,
                             indexing, and its table dt__cpu_backend()
     src/cpu/gemm/           the CPU matmul: packing, micro-kernels, blocked driver,
                             skinny shapes, cblas, entry points
     src/cuda/               devtensor_cuda.cu, the CUDA backend: the same table,
                             dt__cuda_backend()
   README.md's "Reading the code" follows dt_add and dt_cross_entropy through them.

   VERSION
   DEVTENSOR_VERSION_MAJOR/MINOR/PATCH below; DEVTENSOR_VERSION is
   MAJOR * 10000 + MINOR * 100 + PATCH, for #if checks. Changes:
     unreleased          DT_U8 and DT_BOOL (creation, casts, printing, safetensors, DLPack),
                         dt_eq/ne/lt/le/gt/ge, dt_sigmoid/tanh/abs, dt_*_like (dt_sum of bool
                         or uint8 is int64); dt_slice (dim 0 a view), dt_index_select, dt_cat,
                         dt_permute; dt_argmax/argmin, dt_max/min(_dim), dt_softmax,
                         dt_log_softmax, dt_cross_entropy(_grad); dt_set_grad_enabled;
                         autograd over tensor operations (dt_requires_grad_, dt_autograd_backward,
                         dt_grad, dt_detach, dt_zero_grad_, dt_is_leaf); dt_f_conv2d(_ex),
                         the 2-d max, average and adaptive average poolings, and their backward;
                         dt_sgd/dt_adam/dt_adamw; the trainer's classification (loss_fn,
                         optimizer, dt_trainer_fit_val, dt_trainer_evaluate); dt_dist_* over
                         MPI and NCCL, num_gpus > 1 replicas; CPU pool workers block signals;
                         fixes from running on an H100 (GCC 13 warnings, narrow column sums,
                         out-of-memory text splits in-use and cached, ranks sharing a GPU
                         refused before NCCL); gemm packs A on the pool; the pool spins briefly
     0.2.0               interop (DLPack 1.x and legacy, dt_from_blob, dt_save_tensors,
                         dt_load_tensors), libdevtensor.so/.a with pkg-config and CMake;
                         a caching CPU allocator, a CPU thread pool instead of OpenMP for
                         elementwise work, vector exp/log/add/sum chosen at run time;
                         strict safetensors JSON, nesting at most DT_MODULE_MAX_DEPTH,
                         parameter names of any length, saves through a temporary file
     0.1.0               the first numbered version: CPU and CUDA backends, the
                         chapter's API, modules, trainer, safetensors (before
                         it, see git log)

   LICENSE: MIT (see README.md). */

#ifndef DEVTENSOR_H
#define DEVTENSOR_H

#define DEVTENSOR_VERSION_MAJOR 0
#define DEVTENSOR_VERSION_MINOR 2
#define DEVTENSOR_VERSION_PATCH 0
#define DEVTENSOR_VERSION \
  (DEVTENSOR_VERSION_MAJOR * 10000 + DEVTENSOR_VERSION_MINOR * 100 + DEVTENSOR_VERSION_PATCH)

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>

#if defined(__GNUC__) || defined(__clang__)
#define DT__UNUSED __attribute__((unused))
#else
#define DT__UNUSED
#endif

#ifndef DTDEF
#ifdef DEVTENSOR_STATIC
#define DTDEF static DT__UNUSED
#else
#define DTDEF extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- src/api/core.h ---- */
typedef enum dt_status {
  DT_OK = 0,
  DT_ERR_INVALID_ARGUMENT,
  DT_ERR_SHAPE,
  DT_ERR_DTYPE,
  DT_ERR_DEVICE_MISMATCH,
  DT_ERR_NO_DEVICE,
  DT_ERR_OUT_OF_MEMORY,
  DT_ERR_BACKEND,
  DT_ERR_IO,
  DT_ERR_FORMAT,
  DT_ERR_UNSUPPORTED
} dt_status;

DTDEF dt_status   dt_last_status(void);
DTDEF const char *dt_last_error(void);            /* "" when none */
DTDEF void        dt_clear_error(void);
DTDEF const char *dt_status_string(dt_status s);
typedef void (*dt_error_handler)(dt_status s, const char *message, void *user);
DTDEF void        dt_set_error_handler(dt_error_handler fn, void *user); /* NULL: none */

/* ---- api: devices ---- */

typedef enum dt_device_type { DT_CPU = 0, DT_CUDA = 1 } dt_device_type;
typedef struct dt_device { dt_device_type type; int index; } dt_device;

DTDEF dt_device   dt_cpu(void);
DTDEF dt_device   dt_gpu(int i);                  /* names cuda:i; existence checked on use */
DTDEF int         dt_num_gpus(void);              /* 0 without CUDA, driver or GPU; then dt_last_error() says why */
DTDEF dt_device   dt_try_gpu(int i);              /* gpu(i) if it exists, else cpu */
DTDEF int         dt_try_all_gpus(dt_device *out, int capacity); /* every GPU; [cpu] when none; returns count */
DTDEF int         dt_device_equal(dt_device a, dt_device b);
DTDEF const char *dt_device_str(dt_device d, char *buf, size_t n); /* "cpu", "cuda:0" */
DTDEF dt_status   dt_device_parse(const char *s, dt_device *out);  /* "cpu", "cuda", "cuda:1" */

typedef struct dt_device_info {
  char   name[256];
  size_t total_memory, free_memory;
  int    compute_major, compute_minor, multiprocessors;
} dt_device_info;

DTDEF dt_status   dt_device_get_info(dt_device d, dt_device_info *out);
DTDEF dt_status   dt_synchronize(dt_device d);
DTDEF void       *dt_cuda_stream(dt_device d);    /* the device's cudaStream_t as void *; NULL for the CPU */

/* ---- api: tensors ---- */

typedef enum dt_dtype { DT_F32 = 0, DT_F64, DT_I32, DT_I64, DT_U8, DT_BOOL, DT_F16, DT_BF16 } dt_dtype; /* appended: old values keep their numbers; BOOL is one byte, 0 or 1; F16 IEEE half, BF16 bfloat16 */
#define DT_MAX_DIMS 8
typedef struct dt_shape { int ndim; int64_t dims[DT_MAX_DIMS]; } dt_shape;

DTDEF dt_shape dt_shape0(void);
DTDEF dt_shape dt_shape1(int64_t a);
DTDEF dt_shape dt_shape2(int64_t a, int64_t b);
DTDEF dt_shape dt_shape3(int64_t a, int64_t b, int64_t c);
DTDEF dt_shape dt_shape4(int64_t a, int64_t b, int64_t c, int64_t d);
DTDEF dt_shape dt_shape_n(int ndim, const int64_t *dims); /* ndim outside 0..8 or dims NULL: ndim = -1, refused on use */
DTDEF size_t   dt_dtype_size(dt_dtype t);                 /* 4, 8, 2 (F16, BF16) or 1 (U8, BOOL); 0 for an unknown dtype */
DTDEF const char *dt_dtype_name(dt_dtype t);              /* "float32", "float64", "int32", "int64", "uint8", "bool", "float16", "bfloat16" */

typedef struct dt_tensor dt_tensor;

DTDEF dt_tensor *dt_empty(dt_shape s, dt_dtype t, dt_device d);
DTDEF dt_tensor *dt_zeros(dt_shape s, dt_device d);           /* F32, like the rest below */
DTDEF dt_tensor *dt_ones(dt_shape s, dt_device d);
DTDEF dt_tensor *dt_full(dt_shape s, double value, dt_device d);
DTDEF dt_tensor *dt_arange(double start, double end, double step, dt_dtype t, dt_device d);
DTDEF dt_tensor *dt_from_data(const void *host, dt_shape s, dt_dtype t, dt_device d); /* copies */
DTDEF dt_tensor *dt_rand(dt_shape s, dt_device d);            /* uniform [0, 1) */
DTDEF dt_tensor *dt_randn(dt_shape s, dt_device d);           /* standard normal */
DTDEF void       dt_manual_seed(uint64_t seed);

DTDEF dt_device  dt_device_of(const dt_tensor *t);            /* x.device */
DTDEF dt_dtype   dt_dtype_of(const dt_tensor *t);
DTDEF dt_shape   dt_shape_of(const dt_tensor *t);
DTDEF int        dt_ndim(const dt_tensor *t);
DTDEF int64_t    dt_dim(const dt_tensor *t, int i);           /* i < 0 counts from the end */
DTDEF int64_t    dt_numel(const dt_tensor *t);
DTDEF size_t     dt_nbytes(const dt_tensor *t);
DTDEF void      *dt_data_ptr(dt_tensor *t);                   /* host or device pointer */
DTDEF dt_tensor *dt_retain(dt_tensor *t);
DTDEF void       dt_release(dt_tensor *t);

/* ---- api: copies ---- */

DTDEF dt_tensor *dt_to(dt_tensor *t, dt_device d);            /* already on d: t itself, one more reference; else a copy */
DTDEF dt_tensor *dt_copyto(const dt_tensor *t, dt_device d);  /* always new memory, also on the same device */
DTDEF dt_status  dt_copy_(dt_tensor *dst, const dt_tensor *src); /* same shape and dtype, any two devices */
DTDEF dt_status  dt_to_host(const dt_tensor *t, void *dst, size_t nbytes); /* waits */
DTDEF double     dt_item(const dt_tensor *t);                 /* one element -> value; waits; NAN on error */

/* ---- src/api/ops.h ---- */
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
DTDEF dt_status  dt_axpy_(dt_tensor *y, double alpha, const dt_tensor *x); /* y += alpha * x */
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
DTDEF dt_status  dt_scatter_add_(dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src);      /* x.scatter_add_(dim, index, src): not recorded */
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

/* ---- src/api/nn.h ---- */
typedef struct dt_module dt_module;
DTDEF dt_module *dt_linear(int64_t in_features, int64_t out_features); /* y = x W^T + b; in_features 0: lazy */
/* A lazy layer takes in_features from its first input's columns; a first input of 0 columns is
   refused (DT_ERR_SHAPE) and the layer stays lazy (PyTorch's LazyLinear leaves its parameters
   uninitialised then; here the bias bound 1/sqrt(0) would make NaN). */
DTDEF dt_module *dt_relu_layer(void);
DTDEF dt_module *dt_sequential(void);
DTDEF dt_status  dt_sequential_add(dt_module *seq, dt_module *layer);   /* takes ownership, also on failure */
#define DT_MODULE_MAX_DEPTH 64 /* sequentials nest at most this deep (the outermost counts 1): deeper, dt_sequential_add refuses */
DTDEF dt_module *dt_sequential_get(dt_module *seq, int i);              /* net[i], borrowed */
DTDEF int        dt_sequential_len(const dt_module *seq);
DTDEF dt_status  dt_module_to(dt_module *m, dt_device d);               /* params and grads; all or nothing */
DTDEF dt_status  dt_module_to_dtype(dt_module *m, dt_dtype t);          /* F32, F64, F16, BF16: net.double(), net.half(), net.bfloat16() */
DTDEF dt_device  dt_module_device(const dt_module *m);
DTDEF dt_tensor *dt_forward(dt_module *m, const dt_tensor *x);          /* x: (n, in) on the module's device */
DTDEF dt_tensor *dt_linear_weight(dt_module *m);                        /* borrowed: net[0].weight, (out, in) */
DTDEF dt_tensor *dt_linear_bias(dt_module *m);                          /* borrowed: (out,) */
DTDEF int        dt_module_num_params(const dt_module *m);
DTDEF dt_tensor *dt_module_param(dt_module *m, int i, const char **name); /* borrowed; names as state_dict: "0.weight" */
DTDEF dt_tensor *dt_module_grad(dt_module *m, int i);                   /* borrowed */
DTDEF void       dt_module_free(dt_module *m);
DTDEF dt_status  dt_module_print(const dt_module *m);                   /* print(net): PyTorch's text, stdout, then newline */
DTDEF dt_status  dt_module_fprint(FILE *f, const dt_module *m);         /* f, then newline */
DTDEF int        dt_module_snprint(char *buf, size_t n, const dt_module *m); /* snprintf's contract; -1 on error */

DTDEF dt_tensor *dt_mse_loss(const dt_tensor *pred, const dt_tensor *target);      /* mean((pred - target)^2), 0-d */
DTDEF dt_tensor *dt_mse_loss_grad(const dt_tensor *pred, const dt_tensor *target); /* 2 (pred - target) / numel */
DTDEF dt_status  dt_zero_grad(dt_module *m);
DTDEF dt_tensor *dt_backward(dt_module *m, const dt_tensor *grad_output); /* after dt_forward; accumulates grads; returns grad wrt input */
DTDEF dt_status  dt_backward_params(dt_module *m, const dt_tensor *grad_output); /* dt_backward's grads, bit for bit, but no grad wrt input (x needs none): for training */
DTDEF dt_status  dt_sgd_step(dt_module *m, double lr);

DTDEF dt_status  dt_module_save(const dt_module *m, const char *path);   /* safetensors */
DTDEF dt_status  dt_module_load(dt_module *m, const char *path);         /* into params on the module's device */

/* The chapter's Trainer(max_epochs, num_gpus): keeps min(num_gpus, dt_num_gpus()) GPUs,
   moves the model and each minibatch to the first, sums the loss (and for classification
   the right answers) on the device and reads them once per epoch.
   Regression: loss_fn DT_LOSS_MSE, y (n, out) of X's dtype. Classification: loss_fn
   DT_LOSS_CROSS_ENTROPY, the model's output (n, classes) are logits, y holds int64 class
   labels (n,). X is (n, ...): minibatches along dim 0, e.g. (n, 1, 28, 28) images for a CNN.
   The model is put in training mode (dt_module_train(m, 1)) for each epoch and in evaluation
   mode (0) while evaluating, and left as it was when the call returns. A network of built-in
   linear and ReLU layers trains through their fused backward; any other (convolutions, modules
   made by dt_module_new) through autograd: dt_zero_grad, dt_forward, the loss,
   dt_autograd_backward, then the step. X on tr->device: minibatches are gathered there (dt_index_select of a
   shuffled order); X on the CPU while training on a GPU: gathered on the host, and the
   next minibatch is gathered and copied while the current step computes. */
typedef enum dt_loss_fn { DT_LOSS_MSE = 0, DT_LOSS_CROSS_ENTROPY = 1 } dt_loss_fn;
typedef struct dt_epoch_result {
  int    epoch;                  /* 1, 2, ... */
  double loss;                   /* mean training loss over the epoch (each minibatch before its step) */
  double train_acc;              /* fraction of the training examples classified right, likewise; NaN for MSE */
  double val_loss, val_acc;      /* on the validation set after the epoch; NaN without one (val_acc: also for MSE) */
  double seconds;                /* wall-clock time of the epoch, its validation included */
} dt_epoch_result;
typedef struct dt_trainer {
  int       max_epochs;
  int       num_gpus;            /* GPUs kept: min(asked, available) */
  dt_device gpus[8];
  dt_device device;              /* where training runs: gpus[0], or the CPU */
  int64_t   batch_size;          /* default 32 */
  double    lr;                  /* default 0.03 */
  int       quiet;               /* 0: one progress line per epoch on stdout */
  int       epochs_run;
  double    epoch_loss[64];      /* mean training loss of each epoch (the first 64) */
  double    last_loss;           /* mean training loss of the last epoch */
  /* classification, an optimizer, validation, per-epoch results */
  dt_loss_fn loss_fn;            /* DT_LOSS_MSE (default) or DT_LOSS_CROSS_ENTROPY */
  struct dt_optimizer *optimizer;/* borrowed, made on the same module (dt_sgd, dt_adam, ...); NULL: dt_sgd_step(m, lr) */
  void (*on_epoch)(const struct dt_trainer *tr, const dt_epoch_result *r, void *user); /* after each epoch; may be NULL */
  void     *user;                /* handed to on_epoch */
  dt_epoch_result last;          /* the last epoch's results */
  dt_epoch_result epochs[64];    /* each epoch's results (the first 64) */
  double    gradient_clip_val;   /* > 0: the gradients' total 2-norm clipped to it before each step (dt_clip_grad_norm_); 0 (default): off */
  dt_dtype  autocast;            /* DT_F32 (default): off; DT_BF16, DT_F16: each step's forward and loss, and evaluation, under
                                    dt_set_autocast(tr->device's type, autocast), through autograd; DT_F16 with a grad scaler */
  struct dt_grad_scaler *grad_scaler; /* autocast DT_F16: the scaler the first fit makes (init_scale 65536) and later ones
                                    go on with; dt_trainer_free frees it */
  int       cuda_graph;          /* 1: the first full minibatch runs eagerly (warm-up), the second's step is captured into a
                                    graph (dt_graph_begin) and replayed for it and every later full minibatch of the fit, each
                                    copied into the graph's input first; a smaller last one runs eagerly. With Adam or AdamW,
                                    gradient_clip_val > 0 or autocast DT_F16 the graph holds the forward and backward and the
                                    update runs eagerly after each replay. Dropout draws afresh at each replay. Refused with
                                    data parallel. 0 (default): off */
} dt_trainer;
DTDEF dt_status  dt_trainer_init(dt_trainer *tr, int max_epochs, int num_gpus);
DTDEF dt_status  dt_trainer_prepare_model(dt_trainer *tr, dt_module *m);
DTDEF dt_tensor *dt_trainer_prepare_batch(dt_trainer *tr, const dt_tensor *batch); /* on tr->device */
DTDEF dt_status  dt_trainer_fit(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y); /* no validation set */
DTDEF dt_status  dt_trainer_fit_val(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                    const dt_tensor *X_val, const dt_tensor *y_val); /* X_val, y_val: NULL for none */
DTDEF dt_status  dt_trainer_evaluate(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                     double *loss, double *accuracy); /* no grad, on tr->device, one read; either out may be NULL */
DTDEF void       dt_trainer_free(dt_trainer *tr);

/* ---- api: optimizers (and torch.no_grad) ---- */

/* Whether dt_forward keeps what a backward pass needs, for the calling thread: 1 (the default)
   yes, 0 no (torch.no_grad(): inference holds no activations, dt_backward refuses). Returns the
   previous setting. */
DTDEF int dt_set_grad_enabled(int enabled);

/* torch.optim's SGD (dampening 0, no Nesterov), Adam (L2 weight decay added to the gradient,
   no amsgrad) and AdamW (decoupled decay: p *= 1 - lr * weight_decay), same update rules. The
   optimizer borrows m (which must outlive it) and takes m's parameters at each step, in
   state_dict order, a lazy layer's once it has them. Its state (momentum buffers, exp_avg,
   exp_avg_sq) is made at the first step on the parameters' device, and follows dt_module_to
   and dt_module_to_dtype: a step moves (or converts) it to where the parameters are first. A
   step is all or nothing against failures of memory: it makes or moves every state first. */
typedef struct dt_optimizer dt_optimizer;
DTDEF dt_optimizer *dt_sgd(dt_module *m, double lr, double momentum, double weight_decay);
DTDEF dt_optimizer *dt_adam(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay);
DTDEF dt_optimizer *dt_adamw(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay);
DTDEF dt_status     dt_optimizer_step(dt_optimizer *o);
DTDEF dt_status     dt_optimizer_zero_grad(dt_optimizer *o);  /* dt_zero_grad of its module */
DTDEF void          dt_optimizer_free(dt_optimizer *o);

/* torch.amp.GradScaler (growth_factor 2, backoff_factor 0.5, growth_interval 2000, PyTorch's
   defaults): scale multiplies the loss by the scale (recorded); step divides the optimizer's
   parameters' gradients by it in place and, when any holds an inf or a NaN, skips the optimizer's
   step (the gradients left as they were); update halves the scale after a skipped step and
   doubles it after 2000 good steps in a row, and needs a step since the last update. */
typedef struct dt_grad_scaler dt_grad_scaler;
DTDEF dt_grad_scaler *dt_grad_scaler_new(double init_scale);                 /* init_scale > 0; PyTorch's default 65536 */
DTDEF dt_tensor      *dt_grad_scaler_scale(dt_grad_scaler *s, const dt_tensor *loss);
DTDEF dt_status       dt_grad_scaler_step(dt_grad_scaler *s, dt_optimizer *o);
DTDEF dt_status       dt_grad_scaler_update(dt_grad_scaler *s);
DTDEF double          dt_grad_scaler_get_scale(const dt_grad_scaler *s);     /* scaler.get_scale() */
DTDEF void            dt_grad_scaler_free(dt_grad_scaler *s);

/* ---- src/api/autograd.h ---- */

/* ---- api: autograd ---- */

/* Reverse-mode automatic differentiation over tensor operations, as torch.autograd. With grad
   mode on (dt_set_grad_enabled), an operation with an input that requires grad records how it
   made its result, which then requires grad itself; dt_autograd_backward walks that record from
   a result to the leaves and adds each leaf's gradient (summed over every path, reduced over
   broadcast dims, in the leaf's dtype and on its device) into dt_grad(leaf). The backward frees
   what the operations saved (PyTorch's retain_graph=False): a second backward through the same
   results is refused. The record lives as long as the last result that reaches it. A tensor that
   an operation saved and that is then changed in place (dt_fill_, dt_axpy_, dt_copy_, any `_`
   function) makes the backward refuse; a leaf that requires grad cannot be changed in place
   while grad mode is on. The modules (dt_forward, dt_backward) keep their own backward. */
DTDEF dt_status  dt_requires_grad_(dt_tensor *t, int on);  /* t.requires_grad_(); leaves only, float dtypes (float16, bfloat16 too) */
DTDEF int        dt_requires_grad(const dt_tensor *t);           /* t.requires_grad */
DTDEF dt_tensor *dt_grad(dt_tensor *t);                          /* borrowed: t.grad; NULL until a backward reaches t; replaced by the next backward or dt_zero_grad_ */
DTDEF dt_status  dt_autograd_backward(dt_tensor *out, const dt_tensor *grad_out); /* torch.autograd.backward(out, grad_out); grad_out NULL: out must have one element, seed 1 */
DTDEF dt_tensor *dt_detach(const dt_tensor *t);                  /* t.detach(): a new reference to the same memory, no history, requires_grad 0 */
DTDEF dt_status  dt_zero_grad_(dt_tensor *t);                    /* t.grad = None */
DTDEF int        dt_is_leaf(const dt_tensor *t);                 /* t.is_leaf: not a result of recorded operations */

/* Layers a user writes (an nn.Module subclass): dt_module_new makes a module whose dt_forward calls
   forward(self, x, user), written with any recorded operations and dt_forward of its children;
   its parameters (leaves that require grad, on one device in one dtype with the rest of the
   network) and children are registered by name, and name the state_dict as PyTorch's
   ("features.0.weight": the module's own parameters first, in the order added, then each child's),
   so that dt_module_save / dt_module_load, dt_module_to, dt_module_param / dt_module_grad and the
   optimizers work on it as on the built-in modules. It goes back with dt_autograd_backward (not
   dt_backward). Names: 1..DT_MODULE_NAME_MAX characters without '.', unique within a module. */
#define DT_MODULE_NAME_MAX 64
typedef dt_tensor *(*dt_forward_fn)(dt_module *self, const dt_tensor *x, void *user);
DTDEF dt_module *dt_module_new(const char *name, dt_forward_fn forward, void *user, void (*free_user)(void *user)); /* free_user(user) when the module is freed; may be NULL */
DTDEF dt_status  dt_module_add_param(dt_module *m, const char *name, dt_tensor *t);   /* registers t (one more reference); makes it require grad */
DTDEF dt_status  dt_module_add_child(dt_module *m, const char *name, dt_module *child); /* takes ownership, also on failure */
DTDEF dt_tensor *dt_module_get_param(dt_module *m, const char *name);                 /* borrowed: self.weight inside forward; "child.weight" too */
DTDEF dt_module *dt_module_get_child(dt_module *m, const char *name);                 /* borrowed */
DTDEF dt_status  dt_module_train(dt_module *m, int training);                          /* net.train() / net.eval(), for m and every module under it */
DTDEF int        dt_module_is_training(const dt_module *m);                            /* self.training */

/* Optimizers on any tensors (torch.optim.SGD([w, b], ...)): the same update rules and kernels as
   dt_sgd / dt_adam / dt_adamw on a module, over float leaves given once each (the optimizer holds
   a reference to each). A step uses each dt_grad and skips a parameter whose gradient is NULL,
   as torch.optim does; dt_optimizer_zero_grad sets the gradients to NULL (set_to_none). */
DTDEF dt_optimizer *dt_sgd_tensors(dt_tensor *const *params, int n, double lr, double momentum, double weight_decay);
DTDEF dt_optimizer *dt_adam_tensors(dt_tensor *const *params, int n, double lr, double beta1, double beta2, double eps, double weight_decay);
DTDEF dt_optimizer *dt_adamw_tensors(dt_tensor *const *params, int n, double lr, double beta1, double beta2, double eps, double weight_decay);
/* torch.nn.utils.clip_grad_norm_(params, max_norm): the 2-norm of all the gradients together (in
   float64) into *total_norm (may be NULL); above max_norm (finite, > 0) each gradient is scaled in
   place by max_norm / (total + 1e-6). Parameters without a gradient are skipped. */
DTDEF dt_status     dt_clip_grad_norm_(dt_tensor *const *params, int n, double max_norm, double *total_norm);

/* ---- src/api/conv.h ---- */
/* ---- api: convolution and pooling (torch.nn.functional) ----
   Batched images x: (n, c, h, w), F32 or F64, every tensor of a call on one device and of one
   dtype. Output sizes as PyTorch's (ceil_mode off): oh = (h + 2 ph - dh (kh - 1) - 1) / sh + 1,
   and so ow; an input smaller than the kernel (oh or ow below 1) is refused, as are c, h or w
   of 0 (n may be 0). Each backward takes what its forward took and the gradient of the loss
   with respect to its output, grad_output, shaped like that output, and returns the gradients
   of its inputs; the backwards are separate calls so that autograd and modules can use them. */

/* F.conv2d(x, w, b, stride, padding): square stride and padding, no dilation, groups 1.
   w: (oc, c, kh, kw), b: (oc,) or NULL (no bias) -> (n, oc, oh, ow) */
DTDEF dt_tensor *dt_f_conv2d(const dt_tensor *x, const dt_tensor *w, const dt_tensor *b, int stride, int padding);
/* F.conv2d(x, w, b, (sh, sw), (ph, pw), (dh, dw), groups): w: (oc, c / groups, kh, kw); groups
   divides c and oc; stride and dilation >= 1, padding >= 0. */
DTDEF dt_tensor *dt_f_conv2d_ex(const dt_tensor *x, const dt_tensor *w, const dt_tensor *b, int sh, int sw, int ph, int pw,
                                int dh, int dw, int groups);
/* The gradients of dt_f_conv2d_ex(x, w, b, ...) given grad_output (n, oc, oh, ow): *grad_input
   (like x), *grad_weight (like w), *grad_bias ((oc,)); pass NULL for one not wanted. New tensors
   the caller releases; on failure none is made and the pointers are left as they were. */
DTDEF dt_status  dt_f_conv2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *w, int sh, int sw,
                                      int ph, int pw, int dh, int dw, int groups, dt_tensor **grad_input,
                                      dt_tensor **grad_weight, dt_tensor **grad_bias);

/* F.max_pool2d(x, kernel_size, stride, padding): stride 0 means kernel_size (PyTorch's default);
   the padding (at most half the kernel) is -inf; NaN is the max of any window that holds one. */
DTDEF dt_tensor *dt_f_max_pool2d(const dt_tensor *x, int kernel_size, int stride, int padding);
/* F.max_pool2d(x, (kh, kw), (sh, sw), (ph, pw), return_indices=True): *indices (NULL: not wanted)
   gets an I64 tensor shaped like the output: where in its (h, w) plane each max is (row * w +
   column): the first max of its window, or the last NaN. sh, sw 0: kh, kw. */
DTDEF dt_tensor *dt_f_max_pool2d_ex(const dt_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, dt_tensor **indices);
/* grad_input (like x): each grad_output entry goes to the position its index names; an index
   outside its window is never followed. */
DTDEF dt_tensor *dt_f_max_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *indices, int kh,
                                          int kw, int sh, int sw, int ph, int pw);

/* F.avg_pool2d(x, kernel_size, stride, padding) with count_include_pad (PyTorch's default): each
   window's sum over the kernel's size, but for the padding beyond h + ph, w + pw. stride 0: kernel_size. */
DTDEF dt_tensor *dt_f_avg_pool2d(const dt_tensor *x, int kernel_size, int stride, int padding);
DTDEF dt_tensor *dt_f_avg_pool2d_ex(const dt_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw);
DTDEF dt_tensor *dt_f_avg_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x, int kh, int kw, int sh, int sw,
                                          int ph, int pw);

/* F.adaptive_avg_pool2d(x, (out_h, out_w)), out_h, out_w >= 1: output row i averages input rows
   floor(i h / out_h) to ceil((i + 1) h / out_h) - 1, and so the columns. */
DTDEF dt_tensor *dt_f_adaptive_avg_pool2d(const dt_tensor *x, int64_t out_h, int64_t out_w);
DTDEF dt_tensor *dt_f_adaptive_avg_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x);

/* The modules (torch.nn's Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten, Sigmoid,
   Tanh): modules of dt_module_new's kind, so they go back with dt_autograd_backward (not
   dt_backward) and every dt_module_* function works on them. A convolution's parameters are
   "weight" (out, in / groups, kh, kw) and "bias" (out,), initialised as PyTorch's: uniform in
   +-1/sqrt(fan_in), fan_in = in / groups * kh * kw (kaiming_uniform with a = sqrt(5)), drawn
   from the generator dt_manual_seed seeds; in_channels 0: LazyConv2d, the parameters made at the
   first forward from its input's channels, on its device in its dtype. Pooling: stride 0 means
   kernel_size; padding at most half the kernel. */
DTDEF dt_module *dt_conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, int stride, int padding); /* bias on */
DTDEF dt_module *dt_conv2d_ex(int64_t in_channels, int64_t out_channels, int kh, int kw, int sh, int sw, int ph, int pw,
                              int groups, int bias);
DTDEF dt_module *dt_max_pool2d(int kernel_size, int stride, int padding);
DTDEF dt_module *dt_avg_pool2d(int kernel_size, int stride, int padding);   /* count_include_pad */
DTDEF dt_module *dt_adaptive_avg_pool2d(int out_h, int out_w);
DTDEF dt_module *dt_flatten_layer(void);  /* nn.Flatten(): (n, ...) -> (n, rest) */
DTDEF dt_module *dt_sigmoid_layer(void);  /* nn.Sigmoid() */
DTDEF dt_module *dt_tanh_layer(void);     /* nn.Tanh() */

/* ---- src/api/interop.h ---- */
/* DLPack (github.com/dmlc/dlpack) is how tensors cross into PyTorch, CuPy, JAX and
   NumPy without a copy. Its ABI types are declared here under dlpack.h's own names
   and include guard, unless a dlpack.h came first (either order works; a pre-1.0
   dlpack.h first gets the 1.x types added). devtensor holds dense row-major tensors
   of float32/64, int32/64, uint8 and bool on the CPU or a CUDA GPU: an import of anything else
   (strided views, read-only arrays, int8, float16, ...) is refused with a
   message saying what to convert, and the capsule stays with its caller. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define DT__DLPACK_TYPEDEF   /* DLManagedTensorVersioned is a typedef here (upstream's is a struct tag only) */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#if defined(_WIN32) && defined(DLPACK_EXPORTS)
#define DLPACK_DLL __declspec(dllexport)
#elif defined(_WIN32)
#define DLPACK_DLL __declspec(dllimport)
#else
#define DLPACK_DLL
#endif
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLOpenCL = 4, kDLVulkan = 7, kDLMetal = 8, kDLVPI = 9,
  kDLROCM = 10, kDLROCMHost = 11, kDLExtDev = 12, kDLCUDAManaged = 13, kDLOneAPI = 14,
  kDLWebGPU = 15, kDLHexagon = 16, kDLMAIA = 17
} DLDeviceType;
typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;
typedef enum {
  kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U, kDLOpaqueHandle = 3U, kDLBfloat = 4U, kDLComplex = 5U, kDLBool = 6U,
  /* 1.1: the narrow floats (bits 8, 6 or 4) */
  kDLFloat8_e3m4 = 7U, kDLFloat8_e4m3 = 8U, kDLFloat8_e4m3b11fnuz = 9U, kDLFloat8_e4m3fn = 10U, kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U, kDLFloat8_e5m2fnuz = 13U, kDLFloat8_e8m0fnu = 14U, kDLFloat6_e2m3fn = 15U, kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data;              /* plus byte_offset: the first element */
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;        /* in elements; NULL: compact row-major */
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)
#define DT__DLPACK_DECLARE_MTV
#elif (!defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1) && !defined(DT__DLPACK_VERSIONED)
/* a pre-1.0 dlpack.h (e.g. PyTorch's ATen/dlpack.h) came first: add what 1.x added */
#define DT__DLPACK_VERSIONED
#define DT__DLPACK_TYPEDEF
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
#ifndef DLPACK_FLAG_BITMASK_READ_ONLY
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#endif
#define DT__DLPACK_DECLARE_MTV
#endif
#ifdef DT__DLPACK_DECLARE_MTV /* devtensor's own declarations, or 1.x's addition to a pre-1.0 dlpack.h */
#undef DT__DLPACK_DECLARE_MTV
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif
#if !defined(DT__DLPACK_TYPEDEF) && !defined(__cplusplus)
/* dlpack.h 1.x came first: it declares struct DLManagedTensorVersioned without a typedef;
   the bare name works in C here too, as it does in C++ (C99 allows one typedef only, so
   devtensor's own declarations above say DT__DLPACK_TYPEDEF) */
#define DT__DLPACK_TYPEDEF
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;
#endif

/* Zero copy both ways. The capsule dt_to_dlpack makes holds a reference to t (t may be
   released at once); its deleter drops it. For a CUDA tensor, devtensor's stream is
   drained first, so the consumer may read on any stream. dt_from_dlpack takes ownership
   on success only: m->deleter runs once, when the last tensor over that memory is
   released (after devtensor's stream is drained); on failure m is untouched and still
   the caller's to delete. That holds for a capsule of another DLPack major version too,
   although DLPack asks the consumer to call that one's deleter: one rule for every
   refusal (devtensor never deletes a capsule it did not take). Imports: kDLCPU, kDLCUDAHost (as CPU tensors) and kDLCUDA; float32/64,
   int32/64, uint8 (kDLUInt, 8 bits), bool (kDLBool, 8 bits); compact row-major (strides NULL or matching); not read-only. A CUDA
   producer must make its data ready for dt_cuda_stream(dev) first (Python:
   x.__dlpack__(stream=that stream)). */
DTDEF struct DLManagedTensorVersioned *dt_to_dlpack(dt_tensor *t);
DTDEF dt_tensor *dt_from_dlpack(struct DLManagedTensorVersioned *m);
DTDEF struct DLManagedTensor *dt_to_dlpack_legacy(dt_tensor *t);  /* pre-1.0 capsules: NumPy < 2.1, PyTorch < 2.4 */
DTDEF dt_tensor *dt_from_dlpack_legacy(struct DLManagedTensor *m);
/* Wraps memory the caller owns (host memory for the CPU, a device pointer for cuda:i),
   compact row-major, aligned to the element size. deleter(data, ctx) runs once when the
   last reference goes; NULL: the caller frees it after the tensor is released. On
   failure the deleter is not called. */
DTDEF dt_tensor *dt_from_blob(void *data, dt_shape s, dt_dtype t, dt_device d,
                              void (*deleter)(void *data, void *ctx), void *ctx);
/* safetensors.torch.save_file / load_file: names unique, not empty, valid UTF-8 without
   control characters, not "__metadata__". Written to a temporary file beside path, then
   renamed over it (as dt_module_save): a failed save leaves an existing file as it was. */
DTDEF dt_status  dt_save_tensors(const char *path, const char *const *names, const dt_tensor *const *ts, int n);
/* Every tensor of a safetensors file, on device d, in the header's order. On success
   *n, *names and *ts are set; free them with dt_free_tensors. On failure they are
   set to 0 and NULL. */
DTDEF dt_status  dt_load_tensors(const char *path, dt_device d, int *n, char ***names, dt_tensor ***ts);
DTDEF void       dt_free_tensors(int n, char **names, dt_tensor **ts);

/* ---- src/api/graph.h ---- */
/* ---- api: graphs (torch.cuda.CUDAGraph) ----
   Record the work one step issues on a device once, then run it again as one launch:
     dt_graph_begin(d); ...the step's operations on d...; g = dt_graph_end(d);
     for each batch: dt_copy_(x, batch); dt_graph_replay(g); ...read the outputs...
     dt_graph_free(g);
   On a GPU this is CUDA stream capture on the device's stream and a cudaGraphExec. On the
   CPU the capture records each kernel call with its arguments and replay calls them again,
   in order: a program written for the GPU gives the same results on the CPU.
   - Captured work does not run during the capture (on either device): the captured tensors
     hold their values only after a replay. Warm up (run the step once or more) first.
   - Replay works on the same memory: copy new inputs into the tensors the capture read
     (dt_copy_), read outputs from the tensors it wrote. Host values of the capture are fixed:
     scalars, the learning rate, Adam's step count, random draws (each replay draws the same
     numbers).
   - Memory: every tensor made during the capture, and every tensor released during it,
     stays with the graph until dt_graph_free (its memory is never handed to anything else
     while the graph can still write it). A tensor that existed before the capture and is
     released after it makes later replays refuse: keep such tensors alive while the graph
     lives.
   - Refused during a capture, before anything is issued: anything that waits for the device
     or moves data between the host and the capturing device (dt_synchronize, dt_item,
     dt_to_host, printing, dt_from_data, dt_arange, dt_empty_cache, DLPack export) and a
     copy between the capturing device and another. Such a call invalidates the capture:
     dt_graph_end then returns NULL with the reason. */
typedef struct dt_graph dt_graph;
DTDEF dt_status dt_graph_begin(dt_device d);    /* capture the work issued on d from here (any thread) */
DTDEF dt_graph *dt_graph_end(dt_device d);      /* what was captured, ready to replay; NULL with the reason */
DTDEF dt_status dt_graph_replay(dt_graph *g);   /* the same work again, on the same tensors (copy new inputs into them first) */
DTDEF void      dt_graph_free(dt_graph *g);     /* NULL is fine */

/* ---- src/api/dist.h ---- */
/* ---- api: distributed (data parallel over ranks; NCCL for GPU tensors, MPI for
   launching, bootstrapping NCCL and CPU tensors) ----
   Build with DEVTENSOR_MPI (compile with mpicc, run under mpirun -np N) for more than one
   rank, and DEVTENSOR_NCCL with DEVTENSOR_CUDA (compile devtensor_cuda.cu with
   -DDEVTENSOR_NCCL, link -lnccl) for GPU tensors across ranks. Without DEVTENSOR_MPI the
   world is this one process: dt_dist_init succeeds as rank 0 of 1 (and reports
   DT_ERR_UNSUPPORTED when the environment says the process is one of several ranks:
   WORLD_SIZE, OMPI_COMM_WORLD_SIZE or PMI_SIZE above 1), and a collective over one rank
   is the identity, so the same program runs unchanged. Every rank calls each collective
   in the same order with the same element count, dtype and op (and root); when they
   disagree every rank gets DT_ERR_SHAPE, and a rank that does not arrive within
   DT_DIST_TIMEOUT seconds (environment; default 300) makes the others fail with
   DT_ERR_BACKEND instead of hanging. */
typedef enum dt_reduce_op { DT_REDUCE_SUM = 0, DT_REDUCE_AVG, DT_REDUCE_MAX, DT_REDUCE_MIN } dt_reduce_op;
DTDEF dt_status dt_dist_init(void);          /* under mpirun (or torchrun-style RANK, WORLD_SIZE, LOCAL_RANK) */
DTDEF int       dt_dist_rank(void);          /* 0 before dt_dist_init */
DTDEF int       dt_dist_world_size(void);    /* 1 before dt_dist_init */
DTDEF dt_device dt_dist_device(void);        /* this rank's GPU (local rank modulo the GPUs), or the CPU */
DTDEF dt_status dt_all_reduce_(dt_tensor *t, dt_reduce_op op); /* in place, every rank; AVG: float dtypes only */
DTDEF dt_status dt_broadcast_(dt_tensor *t, int root);         /* root's values into every rank's t */
DTDEF dt_status dt_dist_finalize(void);      /* frees the communicators; MPI_Finalize if dt_dist_init started MPI (MPI cannot start twice) */

#ifdef __cplusplus
}
#endif

#endif /* DEVTENSOR_H */

/* ---- src/api/norm.h ---- */
/* ---- api: dropout, normalisation, embedding (torch.nn.functional and torch.nn) ----
   Each is written with the recorded operations, so it runs wherever its input is (the CPU or a
   GPU) and goes back with dt_autograd_backward; every tensor of a call on one device, the float
   ones of one dtype (F32, F64, F16 or BF16). */

/* F.dropout(x, p, training): inverted dropout, each element kept with probability 1 - p and then
   scaled by 1 / (1 - p); the mask comes from one draw of the generator dt_manual_seed seeds (the
   same elements drop on the CPU and on a GPU for the same seed and draw). training 0 or p 0: x
   itself (a new reference, no draw); p 1: zeros. p outside [0, 1] is refused. The backward is the
   same mask times the same scale. */
DTDEF dt_tensor *dt_f_dropout(const dt_tensor *x, double p, int training);

/* F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps): x (n, c),
   (n, c, l) or (n, c, h, w), normalised per channel c. training: by the batch's mean and biased
   variance; running_mean and running_var (c,), when given, are updated in place to
   (1 - momentum) r + momentum s, with the unbiased variance for running_var (as PyTorch); one
   value per channel (n * h * w == 1) is refused. Not training: by running_mean and running_var
   (both needed). weight, bias (c,) or NULL (no affine). Returns x's shape. */
DTDEF dt_tensor *dt_f_batch_norm(const dt_tensor *x, dt_tensor *running_mean, dt_tensor *running_var, const dt_tensor *weight,
                                 const dt_tensor *bias, int training, double momentum, double eps);

/* F.layer_norm(x, (normalized_shape,), weight, bias, eps): x (..., d) with d == normalized_shape,
   normalised over its last dim by its mean and biased variance; weight, bias (d,) or NULL. Under
   autocast (dt_set_autocast on x's device type) half tensors are cast up and the result is F32,
   as torch.autocast's layer_norm. */
DTDEF dt_tensor *dt_f_layer_norm(const dt_tensor *x, int64_t normalized_shape, const dt_tensor *weight, const dt_tensor *bias,
                                 double eps);

/* F.embedding(idx, weight): idx I64 of any shape (at most 7 dims), each in [0, num), weight
   (num, dim) -> (*idx.shape, dim), weight's rows (dt_index_select); the gradient flows to weight. */
DTDEF dt_tensor *dt_f_embedding(const dt_tensor *idx, const dt_tensor *weight);

/* The modules (torch.nn's Dropout, BatchNorm1d/BatchNorm2d, LayerNorm, Embedding, GELU), of
   dt_module_new's kind. dt_dropout: training mode (dt_module_train(m, 1), the default) drops,
   evaluation passes x through. dt_batch_norm(num_features): BatchNorm1d on (n, c) or (n, c, l),
   BatchNorm2d on (n, c, h, w); eps 1e-5, momentum 0.1; parameters "weight" (ones) and "bias"
   (zeros); buffers "running_mean" (zeros), "running_var" (ones) and "num_batches_tracked" (I64,
   0-d, 0), which save, load and move with the module; training normalises by the batch and
   updates the buffers, evaluation normalises by the running statistics; num_features 0: lazy,
   made at the first forward from x's channels, on its device in its dtype. dt_layer_norm(d):
   over the last dim, eps 1e-5, "weight" ones and "bias" zeros. dt_embedding(num, dim): "weight"
   (num, dim) drawn from N(0, 1) (the generator dt_manual_seed seeds), input I64 indices. */
DTDEF dt_module *dt_dropout(double p);
DTDEF dt_module *dt_batch_norm(int64_t num_features);
DTDEF dt_module *dt_layer_norm(int64_t normalized_shape);
DTDEF dt_module *dt_embedding(int64_t num_embeddings, int64_t embedding_dim);
DTDEF dt_module *dt_gelu_layer(void);     /* nn.GELU() */

/* self.register_buffer(name, t): state of a module made by dt_module_new that is no parameter (no
   gradient, the optimizers skip it) but joins its state_dict (after its own parameters, named as
   PyTorch's: "bn.running_mean"), dt_module_save / dt_module_load, dt_module_to and
   dt_module_to_dtype (an integer buffer keeps its dtype). Holds one more reference to t, which
   must not require grad. Names as parameters', unique among m's parameters, buffers and children. */
DTDEF dt_status  dt_module_add_buffer(dt_module *m, const char *name, dt_tensor *t);
DTDEF dt_tensor *dt_module_get_buffer(dt_module *m, const char *name);  /* borrowed; "child.name" too */

/* ---- src/backend/backend.h ---- */
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
     kernels, except cast, fill, copy_strided and index_select, which a backend does itself, and
     gemm where half_gemm is 1 (A, B, C in the half dtype, accumulating in F32). */
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

/* ---- src/backend/optim_half.h ---- */
/* ---- backend: optimizers on float16 and bfloat16 parameters ----
   One element of dt__optim_hp's update on a half parameter, shared by every backend so that
   the CPU and a GPU give the same bits. It follows PyTorch's single-tensor loops (foreach
   off) on the CPU, where every tensor op rounds its result to the parameter's dtype (r below)
   and a Python float meets a half tensor rounded to that dtype too (h below), except that
   addcmul_ and addcdiv_ compute in float with their value in float (f below) and round once:
   SGD:   d = g; d = r(d + r(h(wd) p)); with momentum: buf1 = first ? d : r(r(buf1 h(momentum)) + d),
          d = buf1; p = r(p + r(h(-lr) d))
   Adam:  d = g; d = r(d + r(h(wd) p)); buf1 = r(r(buf1 h(beta1)) + r(h(1 - beta1) d));
          buf2 = r(buf2 h(beta2)); buf2 = r(buf2 + f(1 - beta2) d d);
          den = r(r(r(sqrt(buf2)) / h(bc2_sqrt)) + h(eps)); p = r(p + f(-step_size) buf1 / den)
   AdamW: p = r(p h(1 - lr wd)), then Adam's update with d = g.
   Products and sums in float are rounded one at a time (no FMA: __fmul_rn and __fadd_rn on a
   GPU; on the CPU each is its own statement, which C compilers do not fuse unless told to). */
#if defined(DEVTENSOR_BACKEND_H) && !defined(DEVTENSOR_OPTIM_HALF_H)
#define DEVTENSOR_OPTIM_HALF_H

/* the hyperparameters as the half update uses them: h() values as floats, f() values */
typedef struct dt__optim_hc {
  int kind, bf, l2, use_mom, first;
  float nlr, wd, mom, beta1, beta2, c1, eps, bc2, decay; /* h() */
  float c2, nstep;                                     /* f() */
} dt__optim_hc;

/* a double (a Python float) as a half tensor op takes it: to float, then to the dtype */
static inline float dt__optim_h(int bf, double v) { return dt__half_to_f32(bf, dt__f32_to_half(bf, (float)v)); }

static inline void dt__optim_half_consts(const dt__optim_hp *h, int bf, dt__optim_hc *c) {
  c->kind = (int)h->kind; c->bf = bf;
  c->l2 = h->kind != DT__OPT_ADAMW && h->weight_decay != 0;
  c->use_mom = h->momentum != 0; c->first = h->first;
  c->nlr = dt__optim_h(bf, -h->lr); c->wd = dt__optim_h(bf, h->weight_decay); c->mom = dt__optim_h(bf, h->momentum);
  c->beta1 = dt__optim_h(bf, h->beta1); c->beta2 = dt__optim_h(bf, h->beta2); c->c1 = dt__optim_h(bf, 1.0 - h->beta1);
  c->eps = dt__optim_h(bf, h->eps); c->bc2 = dt__optim_h(bf, h->bc2_sqrt); c->decay = dt__optim_h(bf, 1.0 - h->lr * h->weight_decay);
  c->c2 = (float)(1.0 - h->beta2); c->nstep = (float)(-h->step_size);
}

static DT__HD inline float dt__ohmul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
static DT__HD inline float dt__ohadd(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
/* v rounded to the half dtype, as a float */
static DT__HD inline float dt__ohr(int bf, float v) { return dt__half_to_f32(bf, dt__f32_to_half(bf, v)); }

/* element i: p, its gradient g, its state b1 (momentum, exp_avg) and b2 (exp_avg_sq), all of
   c's half dtype (b1, b2 unused where the kind has none) */
static DT__HD inline void dt__optim_half1(const dt__optim_hc *c, uint16_t *p, uint16_t *b1, uint16_t *b2, uint16_t g) {
  const int bf = c->bf;
  float pv = dt__half_to_f32(bf, *p), d = dt__half_to_f32(bf, g), m, v, den, t;
  if (c->kind == DT__OPT_SGD) {
    if (c->l2) d = dt__ohr(bf, dt__ohadd(d, dt__ohr(bf, dt__ohmul(c->wd, pv))));
    if (c->use_mom) {
      if (!c->first) d = dt__ohr(bf, dt__ohadd(dt__ohr(bf, dt__ohmul(dt__half_to_f32(bf, *b1), c->mom)), d));
      *b1 = dt__f32_to_half(bf, d);
    }
    *p = dt__f32_to_half(bf, dt__ohadd(pv, dt__ohr(bf, dt__ohmul(c->nlr, d))));
    return;
  }
  if (c->kind == DT__OPT_ADAMW) pv = dt__ohr(bf, dt__ohmul(pv, c->decay));
  else if (c->l2) d = dt__ohr(bf, dt__ohadd(d, dt__ohr(bf, dt__ohmul(c->wd, pv))));
  m = dt__ohr(bf, dt__ohadd(dt__ohr(bf, dt__ohmul(dt__half_to_f32(bf, *b1), c->beta1)), dt__ohr(bf, dt__ohmul(c->c1, d))));
  v = dt__ohr(bf, dt__ohmul(dt__half_to_f32(bf, *b2), c->beta2));
  t = dt__ohmul(dt__ohmul(c->c2, d), d);
  v = dt__ohr(bf, dt__ohadd(v, t));
  den = dt__ohr(bf, sqrtf(v));
  den = dt__ohr(bf, den / c->bc2);
  den = dt__ohr(bf, dt__ohadd(den, c->eps));
  t = dt__ohmul(c->nstep, m) / den;
  *b1 = dt__f32_to_half(bf, m); *b2 = dt__f32_to_half(bf, v);
  *p = dt__f32_to_half(bf, dt__ohadd(pv, t));
}

#endif

/* ---- src/core/prelude.c ---- */
/* ======================================================================== */
/*                              IMPLEMENTATION                              */
/* ======================================================================== */
/* Once per unit. A unit compiled with DEVTENSOR_IMPLEMENTATION_DONE already defined gets no
   implementation and links one compiled elsewhere (the Makefile's devtensor_impl.o, shared by the
   tests that use only the public API). */
#ifdef DEVTENSOR_IMPLEMENTATION
#ifndef DEVTENSOR_IMPLEMENTATION_DONE
#define DEVTENSOR_IMPLEMENTATION_DONE

#if defined(__CUDACC__) /* nvcc compiling the implementation in a user's .cu */
#pragma nv_diagnostic push
#pragma nv_diag_suppress 550 /* "set but never used": the elementwise kernels' (void)-cast operands (DT__EW_ZIP) */
#pragma nv_diag_suppress 1675 /* "unrecognized GCC pragma": the CPU kernels' GCC unroll hints, for the host compiler */
#endif

#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#if defined(DT_MALLOC) && defined(DT_FREE)
#elif !defined(DT_MALLOC) && !defined(DT_FREE)
#define DT_MALLOC(sz) malloc(sz)
#define DT_FREE(p) free(p)
#define DT__HOST_DEFAULT_ALLOC 1 /* the CPU backend may cache blocks and map huge pages */
#else
#error "devtensor: define both DT_MALLOC and DT_FREE, or neither"
#endif
#ifndef DT_ASSERT
#include <assert.h>
#define DT_ASSERT(c) assert(c)
#endif

/* ---- src/core/platform.c ---- */
/* DT__TLS: thread-local storage. MSVC's C++ reports __cplusplus 199711 unless
   /Zc:__cplusplus, and its C has no _Thread_local: __declspec(thread) there. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define DT__TLS thread_local
#elif defined(_MSC_VER)
#define DT__TLS __declspec(thread)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DT__TLS _Thread_local
#else
#define DT__TLS __thread
#endif

#if defined(__MINGW_PRINTF_FORMAT) /* mingw-w64: C99's %zu with __USE_MINGW_ANSI_STDIO=1; msvcrt's printf lacks it */
#define DT__PRINTF(f, a) __attribute__((format(__MINGW_PRINTF_FORMAT, f, a)))
#elif defined(__GNUC__) || defined(__clang__)
#define DT__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DT__PRINTF(f, a)
#endif

/* Atomics on int, size_t and 64-bit integer objects (4 or 8 bytes):
   DT__ATOMIC_ADD(p, v) adds and returns the new value, DT__ATOMIC_LOAD(p)
   acquires, DT__ATOMIC_STORE(p, v) releases, DT__ATOMIC_CAS(p, &expected,
   desired) returns 1 when *p was expected and is now desired, else 0 with
   expected set to *p. Two implementations:
   - GCC, Clang and compilers that define __GNUC__: the __atomic builtins;
   - MSVC: the Interlocked intrinsics of <intrin.h> (full barriers; a load is a
     compare-exchange of 0 with 0), on x86, x64 and ARM64 alike. A mingw-w64
     build takes this path with -DDT__FORCE_INTERLOCKED (make mingw does).
   C11 <stdatomic.h> is not used: its functions take _Atomic objects only,
   which C99 and C++ before C++23 cannot declare. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(DT__FORCE_INTERLOCKED)
#define DT__ATOMIC_ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_ACQ_REL)
#define DT__ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define DT__ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define DT__ATOMIC_CAS(p, expected, desired) \
  __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#elif defined(_MSC_VER) || (defined(_WIN32) && defined(DT__FORCE_INTERLOCKED))
#include <intrin.h>
/* 8 bytes: __int64 (long long); 4 bytes: long (32 bits on Windows). Results
   are computed unsigned and come back as long long, converted by the caller. */
static long long dt__atomic_add(volatile void *p, long long v, size_t size) {
  if (size == 8) {
    long long old = _InterlockedExchangeAdd64((volatile long long *)p, v);
    return (long long)((unsigned long long)old + (unsigned long long)v);
  } else {
    long old = _InterlockedExchangeAdd((volatile long *)p, (long)v);
    return (long)((unsigned long)old + (unsigned long)(long)v);
  }
}
static long long dt__atomic_load(volatile void *p, size_t size) {
  if (size == 8) return _InterlockedCompareExchange64((volatile long long *)p, 0, 0);
  return _InterlockedCompareExchange((volatile long *)p, 0, 0);
}
static void dt__atomic_store(volatile void *p, long long v, size_t size) {
  if (size == 8) (void)_InterlockedExchange64((volatile long long *)p, v);
  else (void)_InterlockedExchange((volatile long *)p, (long)v);
}
static int dt__atomic_cas(volatile void *p, void *expected, long long desired, size_t size) {
  if (size == 8) {
    long long e, old;
    memcpy(&e, expected, 8);
    old = _InterlockedCompareExchange64((volatile long long *)p, desired, e);
    if (old == e) return 1;
    memcpy(expected, &old, 8);
  } else {
    long e, old;
    memcpy(&e, expected, 4);
    old = _InterlockedCompareExchange((volatile long *)p, (long)desired, e);
    if (old == e) return 1;
    memcpy(expected, &old, 4);
  }
  return 0;
}
#define DT__ATOMIC_ADD(p, v) dt__atomic_add((p), (long long)(v), sizeof *(p))
#define DT__ATOMIC_LOAD(p) dt__atomic_load((p), sizeof *(p))
#define DT__ATOMIC_STORE(p, v) dt__atomic_store((p), (long long)(v), sizeof *(p))
#define DT__ATOMIC_CAS(p, expected, desired) dt__atomic_cas((p), (expected), (long long)(desired), sizeof *(p))
#else
#error "devtensor: no atomics for this compiler (GCC/Clang __atomic builtins or MSVC Interlocked intrinsics)"
#endif

/* One pause instruction, for spin-waits (the pool's workers, a collective's first microseconds). */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define DT__CPU_RELAX() __builtin_ia32_pause()
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
#define DT__CPU_RELAX() __asm__ __volatile__("yield")
#else
#define DT__CPU_RELAX() ((void)0)
#endif

/* Giving the processor away while waiting for another thread: the first
   waits yield, later ones sleep a millisecond or two (a GPU driver can take a
   second to answer its first query). */
#if defined(_WIN32)
/* <windows.h>'s declarations (DWORD is unsigned long, BOOL int), without its macros */
#ifdef __cplusplus
extern "C" {
#endif
__declspec(dllimport) void __stdcall Sleep(unsigned long ms);
__declspec(dllimport) int __stdcall SwitchToThread(void);
#ifdef __cplusplus
}
#endif
static void dt__pause(int waits) {
  if (waits < 64) (void)SwitchToThread();
  else Sleep(1);
}
#elif defined(__unix__) || defined(__unix) || defined(__APPLE__)
#include <poll.h>
#include <sched.h>
static void dt__pause(int waits) {
  if (waits < 64) (void)sched_yield();
  else (void)poll(NULL, 0, 2);
}
#else
static void dt__pause(int waits) { (void)waits; } /* no threads to yield to that we know of */
#endif

static void dt__fork_guard(void);

/* A lock for a few loads and stores (the random generator's state, the error
   handler and its argument): 0 free, 1 held. */
static void dt__lock(volatile int *l) {
  int waits = 0, expected = 0;
  dt__fork_guard();
  while (!DT__ATOMIC_CAS(l, &expected, 1)) {
    expected = 0;
    dt__pause(waits);
    if (waits < 64) waits++;
  }
}
static void dt__unlock(volatile int *l) { DT__ATOMIC_STORE(l, 0); }

/* ---- src/core/errors.c ---- */
static DT__TLS dt_status dt__err_status;
static DT__TLS char dt__err_msg[1024];
static DT__TLS unsigned dt__err_count; /* errors reported on this thread: what a user's callback reported, if anything */
static dt_error_handler dt__err_handler;  /* the handler and its argument, set together under the lock */
static void *dt__err_user;
static volatile int dt__err_lock;

static DT__PRINTF(2, 3) dt_status dt__fail(dt_status s, const char *fmt, ...) {
  va_list ap;
  dt_error_handler h;
  void *user;
  va_start(ap, fmt);
  vsnprintf(dt__err_msg, sizeof dt__err_msg, fmt, ap);
  va_end(ap);
  dt__err_status = s;
  dt__err_count++;
  dt__lock(&dt__err_lock);
  h = dt__err_handler;
  user = dt__err_user;
  dt__unlock(&dt__err_lock);
  if (h) h(s, dt__err_msg, user);
  return s;
}

DTDEF dt_status dt_last_status(void) { return dt__err_status; }
DTDEF const char *dt_last_error(void) { return dt__err_msg; }
DTDEF void dt_clear_error(void) { dt__err_status = DT_OK; dt__err_msg[0] = 0; }
DTDEF void dt_set_error_handler(dt_error_handler fn, void *user) {
  dt__lock(&dt__err_lock);
  dt__err_handler = fn;
  dt__err_user = user;
  dt__unlock(&dt__err_lock);
}

DTDEF const char *dt_status_string(dt_status s) {
  switch (s) {
    case DT_OK: return "ok";
    case DT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case DT_ERR_SHAPE: return "shape mismatch";
    case DT_ERR_DTYPE: return "unsupported dtype";
    case DT_ERR_DEVICE_MISMATCH: return "device mismatch";
    case DT_ERR_NO_DEVICE: return "no such device";
    case DT_ERR_OUT_OF_MEMORY: return "out of memory";
    case DT_ERR_BACKEND: return "backend failure";
    case DT_ERR_IO: return "i/o error";
    case DT_ERR_FORMAT: return "bad file format";
    case DT_ERR_UNSUPPORTED: return "unsupported";
  }
  return "unknown status";
}

/* "(2, 3)", "(3,)", "()" as Python prints a shape */
static const char *dt__shape_str(const dt_shape *s, char *buf, size_t n) {
  size_t at = 0;
  int i;
  if (n == 0) return buf;
  buf[0] = 0;
  if (s->ndim < 0 || s->ndim > DT_MAX_DIMS) { snprintf(buf, n, "(invalid shape, %d dims)", s->ndim); return buf; }
  at += (size_t)snprintf(buf, n, "(");
  for (i = 0; i < s->ndim && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, i ? ", %lld" : "%lld", (long long)s->dims[i]);
  if (at < n) snprintf(buf + at, n - at, s->ndim == 1 ? ",)" : ")");
  return buf;
}

/* ---- src/core/shape.c ---- */
DTDEF dt_shape dt_shape0(void) { dt_shape s; memset(&s, 0, sizeof s); return s; }
DTDEF dt_shape dt_shape1(int64_t a) { dt_shape s = dt_shape0(); s.ndim = 1; s.dims[0] = a; return s; }
DTDEF dt_shape dt_shape2(int64_t a, int64_t b) { dt_shape s = dt_shape1(a); s.ndim = 2; s.dims[1] = b; return s; }
DTDEF dt_shape dt_shape3(int64_t a, int64_t b, int64_t c) { dt_shape s = dt_shape2(a, b); s.ndim = 3; s.dims[2] = c; return s; }
DTDEF dt_shape dt_shape4(int64_t a, int64_t b, int64_t c, int64_t d) {
  dt_shape s = dt_shape3(a, b, c); s.ndim = 4; s.dims[3] = d; return s;
}
DTDEF dt_shape dt_shape_n(int ndim, const int64_t *dims) {
  dt_shape s = dt_shape0();
  int i;
  if (ndim < 0 || ndim > DT_MAX_DIMS || (ndim > 0 && !dims)) { s.ndim = -1; return s; }
  s.ndim = ndim;
  for (i = 0; i < ndim; i++) s.dims[i] = dims[i];
  return s;
}

DTDEF size_t dt_dtype_size(dt_dtype t) { return dt__dtype_bytes(t); }
DTDEF const char *dt_dtype_name(dt_dtype t) { return dt__dtype_str(t); }
static int dt__is_half(dt_dtype t) { return t == DT_F16 || t == DT_BF16; }
static int dt__is_float(dt_dtype t) { return t == DT_F32 || t == DT_F64 || dt__is_half(t); }
/* float32 and float64: what parameters, optimizers and convolutions take */

static dt_status dt__check_dtype(const char *op, dt_dtype t) {
  if (dt_dtype_size(t) == 0) return dt__fail(DT_ERR_DTYPE, "%s: unknown dtype %d", op, (int)t);
  return DT_OK;
}

/* Checks a shape and gives its element count and byte size. */
static dt_status dt__check_shape(const char *op, const dt_shape *s, dt_dtype t, int64_t *numel, size_t *nbytes) {
  char sb[200];
  int64_t count = 1;
  size_t es = dt_dtype_size(t);
  int i;
  if (s->ndim < 0 || s->ndim > DT_MAX_DIMS)
    return dt__fail(DT_ERR_SHAPE, "%s: a shape has 0 to %d dimensions, got %d", op, DT_MAX_DIMS, s->ndim);
  for (i = 0; i < s->ndim; i++)
    if (s->dims[i] < 0)
      return dt__fail(DT_ERR_SHAPE, "%s: negative dimension %lld in shape %s", op, (long long)s->dims[i],
                      dt__shape_str(s, sb, sizeof sb));
  for (i = 0; i < s->ndim; i++) {
    int64_t d = s->dims[i];
    if (d != 0 && count > INT64_MAX / d) { count = -1; break; }
    count *= d;
  }
  if (count < 0 || (uint64_t)count > (uint64_t)(INT64_MAX / 8) || (uint64_t)count > (uint64_t)(SIZE_MAX / 8)) {
    /* a zero dimension anywhere makes the tensor empty, whatever the rest */
    for (i = 0; i < s->ndim; i++)
      if (s->dims[i] == 0) { count = 0; break; }
    if (count != 0)
      return dt__fail(DT_ERR_SHAPE, "%s: shape %s is too large: its size in bytes overflows", op,
                      dt__shape_str(s, sb, sizeof sb));
  }
  if (numel) *numel = count;
  if (nbytes) *nbytes = (size_t)count * es;
  return DT_OK;
}

/* ---- src/core/device.c ---- */
static const dt__backend *dt__cpu_backend(void);
static const dt__backend *dt__half_table(int cuda); /* src/core/half.c */

static volatile int dt__gpu_state;   /* 0 not asked, 1 asking, 2 known */
static int dt__gpu_n;
static char dt__gpu_why[512];

/* The number of GPUs, asked once; the reason when there are none. */
static int dt__gpu_count(void) {
  int expected = 0;
  if (DT__ATOMIC_LOAD(&dt__gpu_state) == 2) return dt__gpu_n;
  if (DT__ATOMIC_CAS(&dt__gpu_state, &expected, 1)) {
    int n = 0;
#ifdef DEVTENSOR_CUDA
    char why[480];
    why[0] = 0;
    n = dt__cuda_backend()->device_count(why, sizeof why);
    if (n <= 0) { n = 0; snprintf(dt__gpu_why, sizeof dt__gpu_why, "CUDA unavailable: %s", why[0] ? why : "no GPU found"); }
#else
    snprintf(dt__gpu_why, sizeof dt__gpu_why,
             "devtensor was built without CUDA (define DEVTENSOR_CUDA and link devtensor_cuda.cu)");
#endif
    dt__gpu_n = n;
    DT__ATOMIC_STORE(&dt__gpu_state, 2);
  } else {
    int waits = 0;
    while (DT__ATOMIC_LOAD(&dt__gpu_state) != 2) { /* another thread is asking the driver */
      dt__pause(waits);
      if (waits < 64) waits++;
    }
  }
  return dt__gpu_n;
}

DTDEF dt_device dt_cpu(void) { dt_device d; d.type = DT_CPU; d.index = 0; return d; }
DTDEF dt_device dt_gpu(int i) { dt_device d; d.type = DT_CUDA; d.index = i; return d; }

DTDEF int dt_num_gpus(void) {
  int n = dt__gpu_count();
  if (n == 0) dt__fail(DT_ERR_NO_DEVICE, "dt_num_gpus: %s", dt__gpu_why); /* the reason, for whoever asks */
  return n;
}
DTDEF dt_device dt_try_gpu(int i) { return (i >= 0 && i < dt__gpu_count()) ? dt_gpu(i) : dt_cpu(); }
DTDEF int dt_try_all_gpus(dt_device *out, int capacity) {
  int n = dt__gpu_count(), i;
  if (n == 0) { if (out && capacity > 0) out[0] = dt_cpu(); return 1; }
  for (i = 0; out && i < n && i < capacity; i++) out[i] = dt_gpu(i);
  return n;
}
DTDEF int dt_device_equal(dt_device a, dt_device b) { return a.type == b.type && a.index == b.index; }

DTDEF const char *dt_device_str(dt_device d, char *buf, size_t n) {
  char tmp[48];
  size_t len;
  if (!buf || n == 0) return "";
  if (d.type == DT_CPU && d.index == 0) snprintf(tmp, sizeof tmp, "cpu");
  else if (d.type == DT_CPU) snprintf(tmp, sizeof tmp, "cpu:%d", d.index);
  else if (d.type == DT_CUDA) snprintf(tmp, sizeof tmp, "cuda:%d", d.index);
  else snprintf(tmp, sizeof tmp, "device?%d:%d", (int)d.type, d.index);
  len = strlen(tmp) < n - 1 ? strlen(tmp) : n - 1; /* truncates like snprintf */
  memcpy(buf, tmp, len);
  buf[len] = 0;
  return buf;
}

DTDEF dt_status dt_device_parse(const char *s, dt_device *out) {
  dt_device d;
  const char *p;
  int v = 0, too_big = 0;
  if (!s) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: s is NULL");
  if (!out) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: out is NULL");
  if (strncmp(s, "cpu", 3) == 0) { d = dt_cpu(); p = s + 3; }
  else if (strncmp(s, "cuda", 4) == 0) { d = dt_gpu(0); p = s + 4; }
  else if (strncmp(s, "gpu", 3) == 0) { d = dt_gpu(0); p = s + 3; }
  else return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"%.64s\"", s);
  if (*p == ':') {
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++) { /* int arithmetic only: long may be 32 bits */
      if (v > (INT_MAX - (*p - '0')) / 10) { too_big = 1; break; }
      v = v * 10 + (*p - '0');
    }
    if (digits == 0 || *p != 0 || too_big)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: bad device index in \"%.64s\"", s);
    if (d.type == DT_CPU && v != 0)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: the CPU is \"cpu\" or \"cpu:0\", got \"%.64s\"", s);
    d.index = v;
  } else if (*p != 0) {
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"%.64s\"", s);
  }
  *out = d;
  return DT_OK;
}

/* Checks that a device exists; `op` names the caller in the message. */
static dt_status dt__check_device(const char *op, dt_device d) {
  char db[48];
  int n;
  if (d.type == DT_CPU) {
    if (d.index == 0) return DT_OK;
    return dt__fail(DT_ERR_NO_DEVICE, "%s: no such device %s (the CPU is cpu, index 0)", op, dt_device_str(d, db, sizeof db));
  }
  if (d.type != DT_CUDA) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: unknown device type %d", op, (int)d.type);
  if (d.index < 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid device index %d for cuda", op, d.index);
  n = dt__gpu_count();
  if (d.index >= n) {
    if (n == 0) return dt__fail(DT_ERR_NO_DEVICE, "%s: no such device %s (no GPU available: %s)", op, dt_device_str(d, db, sizeof db), dt__gpu_why);
    return dt__fail(DT_ERR_NO_DEVICE, "%s: no such device %s (%d GPU%s available)", op, dt_device_str(d, db, sizeof db), n, n == 1 ? "" : "s");
  }
  return DT_OK;
}

/* 1 while the CPU's work is being captured into a graph (src/core/graph.c): then the CPU's
   table is the recording one (src/cpu/graph.c), whose kernels are recorded, not run. A GPU
   needs no such switch: its stream records (CUDA stream capture). */
static volatile int dt__cpu_capturing;
static const dt__backend *dt__cpu_rec_backend(void);
/* dt__cpu_gemm_opt (the Linear layer's fused CPU products), recorded while the CPU is captured */
struct dt__gemm_opts;
static dt_status dt__cpu_gemm_opt_rec(dt_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                                      const void *a, const void *b, double beta, void *c, struct dt__gemm_opts *o);

/* The backend of a device that dt__check_device accepted (with half precision: src/core/half.c;
   while the CPU is captured, its recording table, which replays through the half precision one). */
static const dt__backend *dt__be(dt_device d) {
#ifdef DEVTENSOR_CUDA
  if (d.type == DT_CUDA) return dt__half_table(1);
#endif
  DT_ASSERT(d.type == DT_CPU);
  if (DT__ATOMIC_LOAD(&dt__cpu_capturing)) return dt__cpu_rec_backend();
  return dt__half_table(0);
}

/* A backend failure with the backend's reason, prefixed by the operation. */
static dt_status dt__backend_fail(const char *op, dt_device d, dt_status s) {
  const char *why = dt__be(d)->last_error();
  return dt__fail(s == DT_OK ? DT_ERR_BACKEND : s, "%s: %s", op, why && why[0] ? why : dt_status_string(s));
}

DTDEF dt_status dt_device_get_info(dt_device d, dt_device_info *out) {
  dt_status s;
  if (!out) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_get_info: out is NULL");
  if ((s = dt__check_device("dt_device_get_info", d)) != DT_OK) return s;
  memset(out, 0, sizeof *out);
  if ((s = dt__be(d)->device_info(d.index, out)) != DT_OK) return dt__backend_fail("dt_device_get_info", d, s);
  return DT_OK;
}

static dt_status dt__graph_forbid(const char *op, dt_device d, const char *what);

DTDEF dt_status dt_synchronize(dt_device d) {
  dt_status s;
  if ((s = dt__check_device("dt_synchronize", d)) != DT_OK) return s;
  if ((s = dt__graph_forbid("dt_synchronize", d, "waiting for the device")) != DT_OK) return s;
  if ((s = dt__be(d)->synchronize(d.index)) != DT_OK) return dt__backend_fail("dt_synchronize", d, s);
  return DT_OK;
}

DTDEF void *dt_cuda_stream(dt_device d) {
  void *s;
  if (dt__check_device("dt_cuda_stream", d) != DT_OK) return NULL;
  s = dt__be(d)->stream(d.index);
  if (!s && d.type == DT_CUDA) dt__backend_fail("dt_cuda_stream", d, DT_ERR_BACKEND);
  return s;
}

/* ---- src/core/half.c ---- */
/* Half precision (float16, bfloat16) on every backend, for the kernels written for float32:
   dt__be hands the core a copy of the device's table whose dtype-taking kernels, given F16 or
   BF16, convert their operands to F32 temporaries on the device (the backend's own cast),
   run the F32 kernel and round each result once to the half dtype. That is what PyTorch does
   per element (its half ops compute in float: elementwise ops, comparisons, reductions
   accumulating in float, softmax); exact where F32 is (comparisons, max, argmax). Casts and
   fills take the half dtypes in each backend itself, and so does a backend's gemm where it
   says so (`half_gemm`: cuBLAS with F32 accumulation; on the CPU, a BF16 kernel where the CPU
   has the instructions, else this F32 route). Other dtypes go straight through. */

typedef struct dt__hscratch {
  const dt__backend *be;
  int dev;
  void *p;
  size_t nbytes;
} dt__hscratch;

/* n floats of device memory, one allocation for a kernel's temporaries */
static dt_status dt__hscratch_get(dt__hscratch *s, const dt__backend *be, int dev, int64_t n) {
  s->be = be; s->dev = dev; s->p = NULL; s->nbytes = (size_t)n * sizeof(float);
  return be->alloc(dev, s->nbytes, &s->p);
}
static void dt__hscratch_put(dt__hscratch *s) {
  if (s->p) s->be->free(s->dev, s->p, s->nbytes);
  s->p = NULL;
}

/* the number of elements read through strides (dims, stride) from offset 0: 1 + the largest offset */
static int64_t dt__hextent(const dt__bcast *g, int b) {
  int64_t e = 1;
  int d;
  for (d = 0; d < g->ndim; d++) e += (g->dims[d] - 1) * (b ? g->bstride[d] : g->astride[d]);
  return e;
}

static dt_status dt__half_unary(const dt__backend *be, int dev, dt__unary_op op, dt_dtype t, int64_t n, const void *x, void *y,
                                double p0, double p1) {
  dt__hscratch s;
  dt_status rc;
  if (!dt__is_half(t)) return be->unary(dev, op, t, n, x, y, p0, p1);
  if ((rc = dt__hscratch_get(&s, be, dev, n)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, n, x, s.p)) == DT_OK && (rc = be->unary(dev, op, DT_F32, n, s.p, s.p, p0, p1)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, n, s.p, y);
  dt__hscratch_put(&s);
  return rc;
}

/* a strided copy of halves as two-byte elements: y contiguous over g's dims */
static dt_status dt__half_copy_a(const dt__backend *be, int dev, const dt__bcast *g, const void *a, void *y) {
  dt__bcast c = *g;
  int64_t st = 1;
  int d;
  for (d = c.ndim - 1; d >= 0; d--) { c.bstride[d] = st; st *= c.dims[d]; }
  return be->copy_strided(dev, 2, &c, a, y);
}

static dt_status dt__half_binary(const dt__backend *be, int dev, dt__binary_op op, dt_dtype t, const dt__bcast *g, const void *a,
                                 const void *b, void *y) {
  dt__hscratch s;
  dt_status rc;
  int64_t ea, eb;
  float *fa, *fb, *fy;
  if (!dt__is_half(t)) return be->binary(dev, op, t, g, a, b, y);
  if (op == DT__B_COPY_A) return dt__half_copy_a(be, dev, g, a, y);
  ea = dt__hextent(g, 0); eb = dt__hextent(g, 1);
  if ((rc = dt__hscratch_get(&s, be, dev, ea + eb + g->numel)) != DT_OK) return rc;
  fa = (float *)s.p; fb = fa + ea; fy = fb + eb;
  if ((rc = be->cast(dev, t, DT_F32, ea, a, fa)) == DT_OK && (rc = be->cast(dev, t, DT_F32, eb, b, fb)) == DT_OK &&
      (rc = be->binary(dev, op, DT_F32, g, fa, fb, fy)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, g->numel, fy, y);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_reduce(const dt__backend *be, int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner,
                                 const void *x, void *y) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = outer * len * inner;
  if (!dt__is_half(t)) return be->reduce(dev, op, t, outer, len, inner, x, y);
  if ((rc = dt__hscratch_get(&s, be, dev, nx + outer * inner)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, nx, x, s.p)) == DT_OK &&
      (rc = be->reduce(dev, op, DT_F32, outer, len, inner, s.p, (float *)s.p + nx)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, outer * inner, (float *)s.p + nx, y);
  dt__hscratch_put(&s);
  return rc;
}

/* elements spanned by batch items of `item` elements every `stride` (0: one shared item) */
static int64_t dt__hspan(int64_t batch, int64_t item, int64_t stride) { return stride == 0 ? item : (batch - 1) * stride + item; }

/* the gemm slot's product in half dtype t through F32 copies of A, B (and C where beta != 0):
   the route of a backend whose gemm does not take t itself (and the CPU's gemm for what its BF16
   kernel does not take) */
static dt_status dt__half_gemm_f32(const dt__backend *be, int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n,
                                   int64_t k, double alpha, const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c,
                                   int64_t sc) {
  dt__hscratch s;
  dt_status rc;
  int64_t na, nb, nc;
  float *fa, *fb, *fc;
  if (batch <= 0 || m <= 0 || n <= 0) return DT_OK;
  na = dt__hspan(batch, m * k, sa); nb = dt__hspan(batch, k * n, sb); nc = dt__hspan(batch, m * n, sc);
  if ((rc = dt__hscratch_get(&s, be, dev, na + nb + nc)) != DT_OK) return rc;
  fa = (float *)s.p; fb = fa + na; fc = fb + nb;
  rc = be->cast(dev, t, DT_F32, na, a, fa);
  if (rc == DT_OK) rc = be->cast(dev, t, DT_F32, nb, b, fb);
  if (rc == DT_OK && beta != 0.0) rc = be->cast(dev, t, DT_F32, nc, c, fc);
  if (rc == DT_OK) rc = be->gemm(dev, DT_F32, ta, tb, batch, m, n, k, alpha, fa, sa, fb, sb, beta, fc, sc);
  if (rc == DT_OK) rc = be->cast(dev, DT_F32, t, nc, fc, c);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_gemm(const dt__backend *be, int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                               double alpha, const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c, int64_t sc) {
  if (!dt__is_half(t) || be->half_gemm) return be->gemm(dev, t, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
  return dt__half_gemm_f32(be, dev, t, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
}

static dt_status dt__half_axpy(const dt__backend *be, int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  dt__hscratch s;
  dt_status rc;
  if (!dt__is_half(t)) return be->axpy(dev, t, n, alpha, x, y);
  if ((rc = dt__hscratch_get(&s, be, dev, 2 * n)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, n, x, s.p)) == DT_OK && (rc = be->cast(dev, t, DT_F32, n, y, (float *)s.p + n)) == DT_OK &&
      (rc = be->axpy(dev, DT_F32, n, alpha, s.p, (float *)s.p + n)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, n, (float *)s.p + n, y);
  dt__hscratch_put(&s);
  return rc;
}

/* comparisons in float32 hold every half value exactly: the same answers */
static dt_status dt__half_compare(const dt__backend *be, int dev, dt__compare_op op, dt_dtype t, const dt__bcast *g, const void *a,
                                  const void *b, void *y) {
  dt__hscratch s;
  dt_status rc;
  int64_t ea, eb;
  if (!dt__is_half(t)) return be->compare(dev, op, t, g, a, b, y);
  ea = dt__hextent(g, 0); eb = dt__hextent(g, 1);
  if ((rc = dt__hscratch_get(&s, be, dev, ea + eb)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, ea, a, s.p)) == DT_OK && (rc = be->cast(dev, t, DT_F32, eb, b, (float *)s.p + ea)) == DT_OK)
    rc = be->compare(dev, op, DT_F32, g, s.p, (float *)s.p + ea, y);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_arg_reduce(const dt__backend *be, int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner,
                                     const void *x, void *vals, int64_t *idx) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = outer * len * inner;
  float *fv;
  if (!dt__is_half(t)) return be->arg_reduce(dev, min, t, outer, len, inner, x, vals, idx);
  if ((rc = dt__hscratch_get(&s, be, dev, nx + (vals ? outer * inner : 0))) != DT_OK) return rc;
  fv = vals ? (float *)s.p + nx : NULL;
  if ((rc = be->cast(dev, t, DT_F32, nx, x, s.p)) == DT_OK && (rc = be->arg_reduce(dev, min, DT_F32, outer, len, inner, s.p, fv, idx)) == DT_OK &&
      vals)
    rc = be->cast(dev, DT_F32, t, outer * inner, fv, vals);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_softmax(const dt__backend *be, int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner,
                                  const void *x, void *y) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = outer * len * inner;
  if (!dt__is_half(t)) return be->softmax(dev, lg, t, outer, len, inner, x, y);
  if ((rc = dt__hscratch_get(&s, be, dev, 2 * nx)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, nx, x, s.p)) == DT_OK &&
      (rc = be->softmax(dev, lg, DT_F32, outer, len, inner, s.p, (float *)s.p + nx)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, nx, (float *)s.p + nx, y);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_cross_entropy(const dt__backend *be, int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits,
                                        const int64_t *target, void *y) {
  dt__hscratch s;
  dt_status rc;
  int64_t ny = grad ? n * c : 1;
  if (!dt__is_half(t)) return be->cross_entropy(dev, grad, t, n, c, logits, target, y);
  if ((rc = dt__hscratch_get(&s, be, dev, n * c + ny)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, n * c, logits, s.p)) == DT_OK &&
      (rc = be->cross_entropy(dev, grad, DT_F32, n, c, s.p, target, (float *)s.p + n * c)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, ny, (float *)s.p + n * c, y);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_nll_loss(const dt__backend *be, int dev, dt_dtype t, int64_t n, int64_t c, const void *logp,
                                   const int64_t *target, void *y) {
  dt__hscratch s;
  dt_status rc;
  if (!dt__is_half(t)) return be->nll_loss(dev, t, n, c, logp, target, y);
  if ((rc = dt__hscratch_get(&s, be, dev, n * c + n)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, n * c, logp, s.p)) == DT_OK &&
      (rc = be->nll_loss(dev, DT_F32, n, c, s.p, target, (float *)s.p + n * c)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, n, (float *)s.p + n * c, y);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_im2col(const dt__backend *be, int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = nimg * g->c * g->h * g->w, nc = nimg * g->c * g->kh * g->kw * g->oh * g->ow;
  if (!dt__is_half(t)) return be->im2col(dev, t, g, nimg, x, col);
  if ((rc = dt__hscratch_get(&s, be, dev, nx + nc)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, nx, x, s.p)) == DT_OK && (rc = be->im2col(dev, DT_F32, g, nimg, s.p, (float *)s.p + nx)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, nc, (float *)s.p + nx, col);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_col2im(const dt__backend *be, int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = nimg * g->c * g->h * g->w, nc = nimg * g->c * g->kh * g->kw * g->oh * g->ow;
  if (!dt__is_half(t)) return be->col2im(dev, t, g, nimg, col, x);
  if ((rc = dt__hscratch_get(&s, be, dev, nx + nc)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, nc, col, s.p)) == DT_OK && (rc = be->col2im(dev, DT_F32, g, nimg, s.p, (float *)s.p + nc)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, nx, (float *)s.p + nc, x);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_pool2d(const dt__backend *be, int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = p->n * p->c * p->h * p->w, ny = p->n * p->c * p->oh * p->ow;
  if (!dt__is_half(t)) return be->pool2d(dev, t, p, x, y, idx);
  if ((rc = dt__hscratch_get(&s, be, dev, nx + ny)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, nx, x, s.p)) == DT_OK && (rc = be->pool2d(dev, DT_F32, p, s.p, (float *)s.p + nx, idx)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, ny, (float *)s.p + nx, y);
  dt__hscratch_put(&s);
  return rc;
}

static dt_status dt__half_pool2d_backward(const dt__backend *be, int dev, dt_dtype t, const dt__pool2d *p, const void *gy,
                                          const int64_t *idx, void *gx) {
  dt__hscratch s;
  dt_status rc;
  int64_t nx = p->n * p->c * p->h * p->w, ny = p->n * p->c * p->oh * p->ow;
  if (!dt__is_half(t)) return be->pool2d_backward(dev, t, p, gy, idx, gx);
  if ((rc = dt__hscratch_get(&s, be, dev, nx + ny)) != DT_OK) return rc;
  if ((rc = be->cast(dev, t, DT_F32, ny, gy, s.p)) == DT_OK &&
      (rc = be->pool2d_backward(dev, DT_F32, p, s.p, idx, (float *)s.p + ny)) == DT_OK)
    rc = be->cast(dev, DT_F32, t, nx, (float *)s.p + ny, gx);
  dt__hscratch_put(&s);
  return rc;
}

/* The tables: the backend's own, with the slots above in front of it. One set of entry points
   per backend, each naming its backend (a slot has no room for it). */
static dt_status dt__hc_unary(int dev, dt__unary_op op, dt_dtype t, int64_t n, const void *x, void *y, double p0, double p1) {
  return dt__half_unary(dt__cpu_backend(), dev, op, t, n, x, y, p0, p1);
}
static dt_status dt__hc_binary(int dev, dt__binary_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  return dt__half_binary(dt__cpu_backend(), dev, op, t, g, a, b, y);
}
static dt_status dt__hc_reduce(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  return dt__half_reduce(dt__cpu_backend(), dev, op, t, outer, len, inner, x, y);
}
static dt_status dt__hc_gemm(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                             const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c, int64_t sc) {
  return dt__half_gemm(dt__cpu_backend(), dev, t, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
}
static dt_status dt__hc_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  return dt__half_axpy(dt__cpu_backend(), dev, t, n, alpha, x, y);
}
static dt_status dt__hc_compare(int dev, dt__compare_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  return dt__half_compare(dt__cpu_backend(), dev, op, t, g, a, b, y);
}
static dt_status dt__hc_arg_reduce(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *vals,
                                   int64_t *idx) {
  return dt__half_arg_reduce(dt__cpu_backend(), dev, min, t, outer, len, inner, x, vals, idx);
}
static dt_status dt__hc_softmax(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  return dt__half_softmax(dt__cpu_backend(), dev, lg, t, outer, len, inner, x, y);
}
static dt_status dt__hc_cross_entropy(int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits, const int64_t *target,
                                      void *y) {
  return dt__half_cross_entropy(dt__cpu_backend(), dev, grad, t, n, c, logits, target, y);
}
static dt_status dt__hc_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  return dt__half_im2col(dt__cpu_backend(), dev, t, g, nimg, x, col);
}
static dt_status dt__hc_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  return dt__half_col2im(dt__cpu_backend(), dev, t, g, nimg, col, x);
}
static dt_status dt__hc_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  return dt__half_pool2d(dt__cpu_backend(), dev, t, p, x, y, idx);
}
static dt_status dt__hc_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  return dt__half_pool2d_backward(dt__cpu_backend(), dev, t, p, gy, idx, gx);
}
static dt_status dt__hc_nll_loss(int dev, dt_dtype t, int64_t n, int64_t c, const void *logp, const int64_t *target, void *y) {
  return dt__half_nll_loss(dt__cpu_backend(), dev, t, n, c, logp, target, y);
}
#ifdef DEVTENSOR_CUDA
static dt_status dt__hg_unary(int dev, dt__unary_op op, dt_dtype t, int64_t n, const void *x, void *y, double p0, double p1) {
  return dt__half_unary(dt__cuda_backend(), dev, op, t, n, x, y, p0, p1);
}
static dt_status dt__hg_binary(int dev, dt__binary_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  return dt__half_binary(dt__cuda_backend(), dev, op, t, g, a, b, y);
}
static dt_status dt__hg_reduce(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  return dt__half_reduce(dt__cuda_backend(), dev, op, t, outer, len, inner, x, y);
}
static dt_status dt__hg_gemm(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                             const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c, int64_t sc) {
  return dt__half_gemm(dt__cuda_backend(), dev, t, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
}
static dt_status dt__hg_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  return dt__half_axpy(dt__cuda_backend(), dev, t, n, alpha, x, y);
}
static dt_status dt__hg_compare(int dev, dt__compare_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  return dt__half_compare(dt__cuda_backend(), dev, op, t, g, a, b, y);
}
static dt_status dt__hg_arg_reduce(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *vals,
                                   int64_t *idx) {
  return dt__half_arg_reduce(dt__cuda_backend(), dev, min, t, outer, len, inner, x, vals, idx);
}
static dt_status dt__hg_softmax(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  return dt__half_softmax(dt__cuda_backend(), dev, lg, t, outer, len, inner, x, y);
}
static dt_status dt__hg_cross_entropy(int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits, const int64_t *target,
                                      void *y) {
  return dt__half_cross_entropy(dt__cuda_backend(), dev, grad, t, n, c, logits, target, y);
}
static dt_status dt__hg_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  return dt__half_im2col(dt__cuda_backend(), dev, t, g, nimg, x, col);
}
static dt_status dt__hg_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  return dt__half_col2im(dt__cuda_backend(), dev, t, g, nimg, col, x);
}
static dt_status dt__hg_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  return dt__half_pool2d(dt__cuda_backend(), dev, t, p, x, y, idx);
}
static dt_status dt__hg_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  return dt__half_pool2d_backward(dt__cuda_backend(), dev, t, p, gy, idx, gx);
}
static dt_status dt__hg_nll_loss(int dev, dt_dtype t, int64_t n, int64_t c, const void *logp, const int64_t *target, void *y) {
  return dt__half_nll_loss(dt__cuda_backend(), dev, t, n, c, logp, target, y);
}
#endif

static dt__backend dt__half_tables[2];
static volatile int dt__half_state[2]; /* 0 not made, 1 making, 2 made */

/* The table the core calls for a device type (cuda 0: the CPU, 1: CUDA), made once. */
static const dt__backend *dt__half_table(int cuda) {
  int expected = 0;
  if (DT__ATOMIC_LOAD(&dt__half_state[cuda]) == 2) return &dt__half_tables[cuda];
  if (DT__ATOMIC_CAS(&dt__half_state[cuda], &expected, 1)) {
    dt__backend *h = &dt__half_tables[cuda];
#ifdef DEVTENSOR_CUDA
    if (cuda) {
      *h = *dt__cuda_backend();
      h->unary = dt__hg_unary; h->binary = dt__hg_binary; h->reduce = dt__hg_reduce; h->gemm = dt__hg_gemm;
      h->axpy = dt__hg_axpy; h->compare = dt__hg_compare; h->arg_reduce = dt__hg_arg_reduce; h->softmax = dt__hg_softmax;
      h->cross_entropy = dt__hg_cross_entropy; h->im2col = dt__hg_im2col; h->col2im = dt__hg_col2im; h->pool2d = dt__hg_pool2d;
      h->pool2d_backward = dt__hg_pool2d_backward; h->nll_loss = dt__hg_nll_loss;
    } else
#endif
    {
      *h = *dt__cpu_backend();
      h->unary = dt__hc_unary; h->binary = dt__hc_binary; h->reduce = dt__hc_reduce; h->gemm = dt__hc_gemm;
      h->axpy = dt__hc_axpy; h->compare = dt__hc_compare; h->arg_reduce = dt__hc_arg_reduce; h->softmax = dt__hc_softmax;
      h->cross_entropy = dt__hc_cross_entropy; h->im2col = dt__hc_im2col; h->col2im = dt__hc_col2im; h->pool2d = dt__hc_pool2d;
      h->pool2d_backward = dt__hc_pool2d_backward; h->nll_loss = dt__hc_nll_loss;
    }
    DT__ATOMIC_STORE(&dt__half_state[cuda], 2);
  } else {
    int waits = 0;
    while (DT__ATOMIC_LOAD(&dt__half_state[cuda]) != 2) {
      dt__pause(waits);
      if (waits < 64) waits++;
    }
  }
  return &dt__half_tables[cuda];
}

/* ---- src/core/tensor.c ---- */
typedef struct dt__storage {
  int refs;
  dt_device device;
  void *ptr;
  size_t nbytes;
  /* foreign memory (dt_from_blob, dt_from_dlpack; see "interop"): not the backend's to
     free. The last release drains the device's stream, then calls deleter(del_data,
     del_ctx) if there is one. Views (dt_reshape, dt_to on the same device) share it. */
  int foreign;
  void (*deleter)(void *data, void *ctx);
  void *del_data, *del_ctx;
  /* a view into another storage at an offset (dt_slice along dim 0): ptr points into base's
     memory and this storage holds one reference to base, dropped when it goes; nothing else */
  struct dt__storage *base;
  /* bumped by every in-place change (dt_fill_, dt_axpy_, dt_copy_, an optimizer's step, ...),
     on the base of a view, so that autograd sees a tensor it saved change (see dt__version) */
  unsigned version;
  /* when it was made, in the order of every storage made (see src/core/graph.c: what a graph
     keeps and what makes it stale) */
  long long serial;
} dt__storage;

static volatile long long dt__storage_serial;
static volatile int dt__graphs_live; /* graphs (capturing or captured) that exist */
static int dt__graph_on_release(dt__storage *st);

struct dt_tensor {
  int refs;
  dt_dtype dtype;
  dt_shape shape;
  int64_t numel;
  size_t nbytes;
  dt__storage *st;
  /* autograd (see src/autograd/): all zero for a tensor outside any graph */
  int requires_grad;      /* a leaf marked by dt_requires_grad_, or a result of recorded operations */
  dt_tensor *grad;        /* a leaf's accumulated gradient (owned); NULL until a backward reaches it */
  struct dt__node *node;  /* the recorded operation that made it (one reference); NULL for a leaf */
};

struct dt__node;
static void dt__node_release(struct dt__node *n); /* src/autograd/graph.c */

/* The version counter of t's memory: a view's is its base's. */
static unsigned *dt__version(const dt_tensor *t) { return t->st->base ? &t->st->base->version : &t->st->version; }

/* Gives a storage's memory back (its last reference went): to the backend, or to the
   owner of foreign memory. */
static void dt__storage_free(dt__storage *st) {
  if (!st->foreign) {
    dt__be(st->device)->free(st->device.index, st->ptr, st->nbytes);
  } else {
    /* queued work may still read it; the owner frees it once that is done */
    if (st->device.type != DT_CPU) (void)dt__be(st->device)->synchronize(st->device.index);
    if (st->deleter) st->deleter(st->del_data, st->del_ctx);
  }
  DT_FREE(st);
}

static void dt__storage_release(dt__storage *st) {
  if (st && DT__ATOMIC_ADD(&st->refs, -1) == 0) {
    if (st->base) {
      dt__storage_release(st->base); /* a view: base is never a view itself (see dt_slice) */
      DT_FREE(st);
      return;
    }
    /* a graph that may still write or read it keeps it until dt_graph_free */
    if (DT__ATOMIC_LOAD(&dt__graphs_live) > 0 && dt__graph_on_release(st)) return;
    dt__storage_free(st);
  }
}

/* A tensor header over storage `st` (whose reference it takes). */
static dt_tensor *dt__wrap(const char *op, dt__storage *st, const dt_shape *s, dt_dtype t, int64_t numel, size_t nbytes) {
  dt_tensor *x = (dt_tensor *)DT_MALLOC(sizeof(dt_tensor));
  if (!x) {
    dt__storage_release(st);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a tensor header", op);
    return NULL;
  }
  x->refs = 1; x->dtype = t; x->shape = *s; x->numel = numel; x->nbytes = nbytes; x->st = st;
  x->requires_grad = 0; x->grad = NULL; x->node = NULL;
  return x;
}

/* A new uninitialised tensor. Checks dtype, shape and device first. */
static dt_tensor *dt__new(const char *op, dt_shape s, dt_dtype t, dt_device d) {
  int64_t numel = 0;
  size_t nbytes = 0;
  dt__storage *st;
  dt_status rc;
  if (dt__check_device(op, d) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (dt__check_shape(op, &s, t, &numel, &nbytes) != DT_OK) return NULL;
  st = (dt__storage *)DT_MALLOC(sizeof(dt__storage));
  if (!st) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a tensor header", op); return NULL; }
  st->refs = 1; st->device = d; st->nbytes = nbytes; st->ptr = NULL;
  st->foreign = 0; st->deleter = NULL; st->del_data = st->del_ctx = NULL; st->base = NULL; st->version = 0;
  st->serial = DT__ATOMIC_ADD(&dt__storage_serial, 1);
  if ((rc = dt__be(d)->alloc(d.index, nbytes, &st->ptr)) != DT_OK) {
    DT_FREE(st);
    dt__backend_fail(op, d, rc);
    return NULL;
  }
  return dt__wrap(op, st, &s, t, numel, nbytes);
}

/* An uninitialised tensor shaped like `a` on a's device. */
static dt_tensor *dt__new_like(const char *op, const dt_tensor *a, dt_dtype t) {
  return dt__new(op, a->shape, t, a->st->device);
}

static dt_status dt__check_tensor(const char *op, const char *name, const dt_tensor *t) {
  if (!t) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, name);
  return DT_OK;
}

static dt_status dt__same_device(const char *op, const char *an, const dt_tensor *a, const char *bn, const dt_tensor *b) {
  char x[48], y[48];
  if (dt_device_equal(a->st->device, b->st->device)) return DT_OK;
  return dt__fail(DT_ERR_DEVICE_MISMATCH,
                  "%s: expected all tensors on the same device, but %s is on %s and %s is on %s (move one with dt_to)",
                  op, bn, dt_device_str(b->st->device, y, sizeof y), an, dt_device_str(a->st->device, x, sizeof x));
}

static dt_status dt__same_dtype(const char *op, const char *an, const dt_tensor *a, const char *bn, const dt_tensor *b) {
  if (a->dtype == b->dtype) return DT_OK;
  return dt__fail(DT_ERR_DTYPE, "%s: expected tensors of one dtype, but %s is %s and %s is %s (convert one with dt_cast)",
                  op, an, dt_dtype_name(a->dtype), bn, dt_dtype_name(b->dtype));
}

/* uint8 and bool hold pixels, labels and masks: creation, copy, cast, print, compare, but no arithmetic */
static dt_status dt__no_arith(const char *op, const char *name, const dt_tensor *a) {
  if (a->dtype != DT_U8 && a->dtype != DT_BOOL) return DT_OK;
  return dt__fail(DT_ERR_DTYPE, "%s: %s is %s, which has no arithmetic here (convert with dt_cast to int32, int64 or a float dtype)",
                  op, name, dt_dtype_name(a->dtype));
}

static dt_status dt__float_only(const char *op, const char *name, const dt_tensor *a) {
  if (dt__is_float(a->dtype)) return DT_OK;
  return dt__fail(DT_ERR_DTYPE, "%s: %s is %s, but this operation needs float32, float64, float16 or bfloat16 (convert with dt_cast)",
                  op, name, dt_dtype_name(a->dtype));
}

static dt_status dt__run(const char *op, dt_device d, dt_status s) {
  return s == DT_OK ? DT_OK : dt__backend_fail(op, d, s);
}

/* Runs a backend call that fills tensor `y`; on failure releases y and returns NULL. */
static dt_tensor *dt__done(const char *op, dt_tensor *y, dt_status s) {
  if (s == DT_OK) return y;
  dt__backend_fail(op, y->st->device, s);
  dt_release(y);
  return NULL;
}

DTDEF dt_tensor *dt_empty(dt_shape s, dt_dtype t, dt_device d) { return dt__new("dt_empty", s, t, d); }

static dt_tensor *dt__filled(const char *op, dt_shape s, dt_dtype t, double v, dt_device d) {
  dt_tensor *y = dt__new(op, s, t, d);
  if (!y || y->numel == 0) return y;
  return dt__done(op, y, dt__be(d)->fill(d.index, t, y->numel, v, y->st->ptr));
}

DTDEF dt_tensor *dt_zeros(dt_shape s, dt_device d) { return dt__filled("dt_zeros", s, DT_F32, 0.0, d); }
DTDEF dt_tensor *dt_ones(dt_shape s, dt_device d) { return dt__filled("dt_ones", s, DT_F32, 1.0, d); }
DTDEF dt_tensor *dt_full(dt_shape s, double value, dt_device d) { return dt__filled("dt_full", s, DT_F32, value, d); }

/* Copies bytes between any two devices (or within one). */
static dt_status dt__copy_bytes(const char *op, dt_device dd, void *dst, dt_device sd, const void *src, size_t n) {
  dt_status s;
  if (n == 0) return DT_OK;
  if (!dst || !src) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: a NULL pointer for %llu bytes", op, (unsigned long long)n);
  if (!dt_device_equal(dd, sd) && DT__ATOMIC_LOAD(&dt__graphs_live) > 0 &&
      ((s = dt__graph_forbid(op, dd, "a copy from another device")) != DT_OK ||
       (s = dt__graph_forbid(op, sd, "a copy to another device")) != DT_OK))
    return s;
  if (dd.type == DT_CPU && sd.type == DT_CPU) {
    if (DT__ATOMIC_LOAD(&dt__cpu_capturing)) return dt__run(op, dd, dt__be(dd)->copy(-1, dst, -1, src, n)); /* recorded */
    memmove(dst, src, n);
    return DT_OK;
  }
  if (dd.type == DT_CPU) s = dt__be(sd)->copy(-1, dst, sd.index, src, n);
  else if (sd.type == DT_CPU) s = dt__be(dd)->copy(dd.index, dst, -1, src, n);
  else s = dt__be(dd)->copy(dd.index, dst, sd.index, src, n);
  return dt__run(op, dd.type == DT_CPU ? sd : dd, s);
}

DTDEF dt_tensor *dt_from_data(const void *host, dt_shape s, dt_dtype t, dt_device d) {
  dt_tensor *y;
  if (dt__check_device("dt_from_data", d) != DT_OK || dt__graph_forbid("dt_from_data", d, "a copy from host memory") != DT_OK)
    return NULL;
  if (!(y = dt__new("dt_from_data", s, t, d))) return NULL;
  if (!host && y->numel > 0) {
    dt_release(y);
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_from_data: host is NULL");
    return NULL;
  }
  if (dt__copy_bytes("dt_from_data", d, y->st->ptr, dt_cpu(), host, y->nbytes) != DT_OK) { dt_release(y); return NULL; }
  return y;
}

static int64_t dt__f2i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}
static int32_t dt__f2i32(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;
}
/* float to uint8 as PyTorch's CPU conversion (x86-64): toward zero through int32, keeping the low
   8 bits, so 255.9 -> 255, -1.5 -> 255, 300 -> 44; NaN, +-inf and values whose truncation does
   not fit in int32 give 0 (there the int32 conversion yields INT32_MIN, whose low byte is 0). The
   same on every device. */
static uint8_t dt__f2u8(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return 0;
  return (uint8_t)(uint32_t)(int32_t)v;
}

DTDEF dt_tensor *dt_arange(double start, double end, double step, dt_dtype t, dt_device d) {
  const char *op = "dt_arange";
  double count;
  int64_t n, i;
  void *host;
  dt_tensor *y;
  if (dt__check_device(op, d) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (t == DT_BOOL) { dt__fail(DT_ERR_DTYPE, "%s: no arange of bool (as PyTorch); make a uint8 one and compare or cast it", op); return NULL; }
  if (!(start == start && end == end && step == step) || start - start != 0 || end - end != 0 || step - step != 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: start, end and step must be finite, got %g, %g, %g", op, start, end, step);
    return NULL;
  }
  if (step == 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: step must be nonzero", op); return NULL; }
  if ((step > 0 && end < start) || (step < 0 && end > start)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: end %g is on the wrong side of start %g for step %g", op, end, start, step);
    return NULL;
  }
  count = ceil((end - start) / step);
  if (!(count <= 1e15)) { dt__fail(DT_ERR_SHAPE, "%s: %g elements is too many", op, count); return NULL; }
  n = (int64_t)count;
  if (dt__check_device(op, d) != DT_OK || dt__graph_forbid(op, d, "a copy from host memory") != DT_OK) return NULL;
  y = dt__new(op, dt_shape1(n), t, d);
  if (!y || n == 0) return y;
  host = d.type == DT_CPU ? y->st->ptr : DT_MALLOC(y->nbytes);
  if (!host) {
    dt_release(y);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host staging %lld elements", op, (long long)n);
    return NULL;
  }
  for (i = 0; i < n; i++) {
    double v = start + (double)i * step;
    switch (t) {
      case DT_F32: ((float *)host)[i] = (float)v; break;
      case DT_F64: ((double *)host)[i] = v; break;
      case DT_I32: ((int32_t *)host)[i] = dt__f2i32(v); break;
      case DT_I64: ((int64_t *)host)[i] = dt__f2i64(v); break;
      case DT_U8: ((uint8_t *)host)[i] = dt__f2u8(v); break;
      case DT_BOOL: ((uint8_t *)host)[i] = v != 0; break; /* refused above */
      case DT_F16: case DT_BF16: ((uint16_t *)host)[i] = dt__f32_to_half(t == DT_BF16, (float)v); break;
    }
  }
  if (host != y->st->ptr) {
    dt_status s = dt__copy_bytes(op, d, y->st->ptr, dt_cpu(), host, y->nbytes);
    DT_FREE(host);
    if (s != DT_OK) { dt_release(y); return NULL; }
  }
  return y;
}

DTDEF dt_device dt_device_of(const dt_tensor *t) {
  if (dt__check_tensor("dt_device_of", "t", t) != DT_OK) return dt_cpu();
  return t->st->device;
}
DTDEF dt_dtype dt_dtype_of(const dt_tensor *t) {
  if (dt__check_tensor("dt_dtype_of", "t", t) != DT_OK) return DT_F32;
  return t->dtype;
}
DTDEF dt_shape dt_shape_of(const dt_tensor *t) {
  if (dt__check_tensor("dt_shape_of", "t", t) != DT_OK) { dt_shape s = dt_shape0(); s.ndim = -1; return s; }
  return t->shape;
}
DTDEF int dt_ndim(const dt_tensor *t) {
  if (dt__check_tensor("dt_ndim", "t", t) != DT_OK) return -1;
  return t->shape.ndim;
}
DTDEF int64_t dt_dim(const dt_tensor *t, int i) {
  if (dt__check_tensor("dt_dim", "t", t) != DT_OK) return -1;
  if (i < -t->shape.ndim || i >= t->shape.ndim) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_dim: dimension %d out of range for a %d-d tensor", i, t->shape.ndim);
    return -1;
  }
  return t->shape.dims[i < 0 ? i + t->shape.ndim : i];
}
DTDEF int64_t dt_numel(const dt_tensor *t) {
  if (dt__check_tensor("dt_numel", "t", t) != DT_OK) return -1;
  return t->numel;
}
DTDEF size_t dt_nbytes(const dt_tensor *t) {
  if (dt__check_tensor("dt_nbytes", "t", t) != DT_OK) return 0;
  return t->nbytes;
}
DTDEF void *dt_data_ptr(dt_tensor *t) {
  if (dt__check_tensor("dt_data_ptr", "t", t) != DT_OK) return NULL;
  return t->st->ptr;
}
DTDEF dt_tensor *dt_retain(dt_tensor *t) {
  if (t) DT__ATOMIC_ADD(&t->refs, 1);
  return t;
}
DTDEF void dt_release(dt_tensor *t) {
  if (t && DT__ATOMIC_ADD(&t->refs, -1) == 0) {
    dt__storage_release(t->st);
    dt_release(t->grad); /* a gradient has neither a gradient nor a node */
    if (t->node) dt__node_release(t->node);
    DT_FREE(t);
  }
}

/* Memory statistics and the cache, per device (torch.cuda.memory_allocated, empty_cache). */
DTDEF dt_status dt_memory_stats_get(dt_device d, dt_memory_stats *out) {
  dt_status s;
  if (!out) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_memory_stats_get: out is NULL");
  if ((s = dt__check_device("dt_memory_stats_get", d)) != DT_OK) return s;
  memset(out, 0, sizeof *out);
  return dt__run("dt_memory_stats_get", d, dt__be(d)->memory_stats(d.index, out));
}

DTDEF dt_status dt_empty_cache(dt_device d) {
  dt_status s;
  if ((s = dt__check_device("dt_empty_cache", d)) != DT_OK) return s;
  if ((s = dt__graph_forbid("dt_empty_cache", d, "emptying the cache (it waits for the device)")) != DT_OK) return s;
  return dt__run("dt_empty_cache", d, dt__be(d)->empty_cache(d.index));
}

/* ---- src/autograd/graph.c ---- */
/* Autograd's graph, as torch.autograd's (DESIGN.md "Autograd"). A result of a recorded
   operation owns one reference to its node; a node owns one reference to each input's node,
   one to each input that is a leaf requiring grad (its gradient lands there), and detached
   aliases of the tensors its backward reads, with their storage's version at the time. So a
   graph lives as long as the last result that reaches it, and has no cycles: a saved output is
   an alias without the node. The operations record through dt__ag_record (src/autograd/
   functions.c) behind one test, DT__AG_ON: nothing happens when no input requires grad. The
   engine (src/autograd/engine.c) walks a graph once and then frees what it saved. */

static DT__TLS int dt__no_grad; /* per thread (dt_set_grad_enabled): 0, the default, is grad enabled */

/* The recorded operations: each has a backward in src/autograd/functions.c. */
typedef enum dt__ag_op {
  DT__AG_ADD = 0, DT__AG_SUB, DT__AG_MUL, DT__AG_DIV, DT__AG_ADD_SCALAR, DT__AG_MUL_SCALAR,
  DT__AG_NEG, DT__AG_EXP, DT__AG_LOG, DT__AG_SQRT, DT__AG_RELU, DT__AG_SIGMOID, DT__AG_TANH, DT__AG_ABS,
  DT__AG_MATMUL, DT__AG_TRANSPOSE, DT__AG_RESHAPE, DT__AG_PERMUTE, DT__AG_SLICE, DT__AG_INDEX_SELECT,
  DT__AG_CAT, DT__AG_STACK, DT__AG_SUM, DT__AG_MEAN, DT__AG_SUM_DIM, DT__AG_NORM, DT__AG_MAX_DIM,
  DT__AG_MIN_DIM, DT__AG_MAX, DT__AG_MIN, DT__AG_SOFTMAX, DT__AG_LOG_SOFTMAX, DT__AG_CROSS_ENTROPY,
  DT__AG_MSE_LOSS, DT__AG_CAST, DT__AG_COPYTO,
  DT__AG_LINEAR, /* a linear layer (dt_forward): inputs x, weight, bias; the layer's fused backward */
  DT__AG_SIN, DT__AG_COS, DT__AG_ERF, DT__AG_GELU, DT__AG_POW, DT__AG_CLAMP,
  /* convolution and pooling (src/ops/conv.c): their backwards are the public backward functions;
     the int arguments in the node's perm: conv (sh, sw, ph, pw, dh, dw, groups), pools (kh, kw,
     sh, sw, ph, pw); max pooling's indices in saved[2], and a CPU convolution's col when it kept one */
  DT__AG_CONV2D, DT__AG_MAX_POOL2D, DT__AG_AVG_POOL2D, DT__AG_ADAPTIVE_AVG_POOL2D,
  /* src/ops/index2.c: where's inputs (cond, a, b); gather's (x, index); scatter_add's (x, index, src);
     pad keeps each dim's left padding in perm */
  DT__AG_WHERE, DT__AG_GATHER, DT__AG_SCATTER_ADD, DT__AG_PAD,
  /* the losses of src/ops/losses.c (backward: dt__ag_loss_bw there); the node's dim is the
     reduction, p smooth_l1's beta */
  DT__AG_BCE_WITH_LOGITS, DT__AG_NLL_LOSS, DT__AG_L1_LOSS, DT__AG_SMOOTH_L1_LOSS, DT__AG_MSE_LOSS_EX,
  /* batch norm in one pass (src/nn/norm.c): inputs x (and weight, bias); eps in p, training in
     dim, the statistics it normalised with in saved[2] */
  DT__AG_BATCH_NORM
} dt__ag_op;

/* One input of a node: where its gradient goes (a node, a leaf, or nowhere) and its geometry. */
typedef struct dt__ag_edge {
  struct dt__node *node; /* the input's node: it was a result of recorded operations */
  dt_tensor *leaf;       /* or the input itself (one reference): a leaf that requires grad */
  dt_shape shape;
  dt_dtype dtype;
  dt_device device;
} dt__ag_edge;

/* What an operation passes to its node beside its inputs. */
typedef struct dt__ag_args {
  double p;        /* dt_mul_scalar's scalar */
  int dim;         /* the dim of slices, index_select, cat, reductions, softmax */
  int64_t start;   /* dt_slice's start, after clamping */
  const int *perm; /* dt_permute's dims */
  double p2;       /* a second scalar: dt_clamp's hi (p its lo) */
} dt__ag_args;

#define DT__AG_SAVED 3
typedef struct dt__node {
  int refs;
  dt__ag_op op;
  const char *name;   /* the operation, for messages: "dt_mul" */
  int nin;
  dt__ag_edge *in;    /* nin of them, in the same allocation */
  dt_tensor *saved[DT__AG_SAVED];     /* detached aliases the backward reads */
  unsigned saved_version[DT__AG_SAVED];
  dt_shape yshape;    /* the result's */
  double p;
  int dim;
  int64_t start;
  int perm[DT_MAX_DIMS];
  double p2;
  int done;           /* a backward walked it and released what it saved */
  /* the engine's, during one backward */
  int deps, mark;
  dt_tensor *gacc;    /* the gradient of the result, summed over its uses so far */
  struct dt__node *next;
} dt__node;

/* Whether a result of a (and b) records: grad mode on and an input requires grad. */
#define DT__AG_ON(a) ((a)->requires_grad && !dt__no_grad)
#define DT__AG_ON2(a, b) (((a)->requires_grad | (b)->requires_grad) && !dt__no_grad)

/* Records y = op(in[0..nin)) and returns y, now requiring grad; on failure releases y and
   returns NULL (the message names name). */
static dt_tensor *dt__ag_record(dt_tensor *y, dt__ag_op op, const char *name, int nin, const dt_tensor *const *in,
                                const dt__ag_args *args);
static dt_tensor *dt__ag_record1(dt_tensor *y, dt__ag_op op, const char *name, const dt_tensor *a) {
  return dt__ag_record(y, op, name, 1, &a, NULL);
}
static dt_tensor *dt__ag_record2(dt_tensor *y, dt__ag_op op, const char *name, const dt_tensor *a, const dt_tensor *b) {
  const dt_tensor *in[2];
  in[0] = a; in[1] = b;
  return dt__ag_record(y, op, name, 2, in, NULL);
}

/* An in-place change of t by op: refused while grad mode is on and t requires grad (a leaf:
   PyTorch's "a leaf Variable that requires grad is being used in an in-place operation"; a
   result of recorded operations: not supported here). */
static dt_status dt__inplace_check(const char *op, const char *name, const dt_tensor *t) {
  if (!t->requires_grad || dt__no_grad) return DT_OK;
  if (!t->node)
    return dt__fail(DT_ERR_INVALID_ARGUMENT,
                    "%s: %s is a leaf that requires grad and grad mode is on: it cannot be changed in place "
                    "(change it with grad mode off, dt_set_grad_enabled(0), as an optimizer does)", op, name);
  return dt__fail(DT_ERR_UNSUPPORTED,
                  "%s: %s is a result of recorded operations (it requires grad): changing it in place is not supported "
                  "(change a dt_detach of it, or turn grad mode off)", op, name);
}
/* After an in-place change of t: a node that saved t's memory sees it at backward. */
static void dt__bump(dt_tensor *t) { (void)DT__ATOMIC_ADD(dt__version(t), 1); }

/* y, recorded as op of a (and b) when that is wanted: the one test on the way of every operation */
#define DT__AG1(y, op, name, a) ((y) && DT__AG_ON(a) ? dt__ag_record1((y), (op), (name), (a)) : (y))
#define DT__AG2(y, op, name, a, b) ((y) && DT__AG_ON2(a, b) ? dt__ag_record2((y), (op), (name), (a), (b)) : (y))
/* the same for an operation with a scalar, a dim, a start or a permutation */
static dt_tensor *dt__ag_record1a(dt_tensor *y, dt__ag_op op, const char *name, const dt_tensor *a, double p, int dim,
                                  int64_t start, const int *perm) {
  dt__ag_args g;
  g.p = p; g.dim = dim; g.start = start; g.perm = perm; g.p2 = 0;
  return dt__ag_record(y, op, name, 1, &a, &g);
}
/* whether a result of ts[0..n) records (ts checked by the operation, which made y) */
static int dt__ag_on_list(const dt_tensor *const *ts, int n) {
  int i;
  if (dt__no_grad) return 0;
  for (i = 0; i < n; i++) if (ts[i]->requires_grad) return 1;
  return 0;
}

/* ---- src/core/random.c ---- */
/* The generator's state: one seed and the number of draws since it was set,
   read and changed together under a lock (PyTorch's default generator is one
   locked state too): every draw gets its own (seed, draw) pair, the n-th
   after dt_manual_seed(s) is (s, n), whatever the threads do. */
static uint64_t dt__seed = 67280421310721ull; /* PyTorch's default seed */
static uint64_t dt__draw;                     /* draws since dt_manual_seed */
static volatile int dt__rng_lock;

DTDEF void dt_manual_seed(uint64_t seed) {
  dt__lock(&dt__rng_lock);
  dt__seed = seed;
  dt__draw = 0;
  dt__unlock(&dt__rng_lock);
}

/* The next draw: its seed and its number. */
static void dt__rng_next(uint64_t *seed, uint64_t *draw) {
  dt__lock(&dt__rng_lock);
  *seed = dt__seed;
  *draw = dt__draw++;
  dt__unlock(&dt__rng_lock);
}

static int dt__graph_draw(dt_device d, uint64_t *draw, const uint64_t **gen);

/* The next draw for work on device d: the generator's, or while d is being captured into a
   graph, the graph's next one (*gen set: see dt__rng_at), which its replays draw afresh. */
static void dt__rng_next_on(dt_device d, uint64_t *seed, uint64_t *draw, const uint64_t **gen) {
  *gen = NULL;
  if (dt__graph_draw(d, draw, gen)) { *seed = 0; return; }
  dt__rng_next(seed, draw);
}

static dt_tensor *dt__random(const char *op, dt_shape s, dt_device d, int normal) {
  dt_tensor *y = dt__new(op, s, DT_F32, d);
  uint64_t draw, seed;
  const uint64_t *gen;
  if (!y) return NULL;
  dt__rng_next_on(d, &seed, &draw, &gen);
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(d)->random(d.index, normal, seed, draw, gen, y->numel, (float *)y->st->ptr));
}
DTDEF dt_tensor *dt_rand(dt_shape s, dt_device d) { return dt__random("dt_rand", s, d, 0); }
DTDEF dt_tensor *dt_randn(dt_shape s, dt_device d) { return dt__random("dt_randn", s, d, 1); }

/* ---- src/core/copy.c ---- */
static dt_tensor *dt__copyto(const dt_tensor *t, dt_device d) {
  dt_tensor *y;
  if (dt__check_tensor("dt_copyto", "t", t) != DT_OK) return NULL;
  if (!(y = dt__new("dt_copyto", t->shape, t->dtype, d))) return NULL;
  if (dt__copy_bytes("dt_copyto", d, y->st->ptr, t->st->device, t->st->ptr, t->nbytes) != DT_OK) { dt_release(y); return NULL; }
  return y;
}
DTDEF dt_tensor *dt_copyto(const dt_tensor *t, dt_device d) {
  dt_tensor *y = dt__copyto(t, d);
  return DT__AG1(y, DT__AG_COPYTO, "dt_copyto", t);
}

DTDEF dt_tensor *dt_to(dt_tensor *t, dt_device d) {
  if (dt__check_tensor("dt_to", "t", t) != DT_OK || dt__check_device("dt_to", d) != DT_OK) return NULL;
  if (dt_device_equal(t->st->device, d)) return dt_retain(t);
  return dt_copyto(t, d);
}

DTDEF dt_status dt_copy_(dt_tensor *dst, const dt_tensor *src) {
  const char *op = "dt_copy_";
  dt_status s;
  char a[200], b[200];
  if ((s = dt__check_tensor(op, "dst", dst)) != DT_OK || (s = dt__check_tensor(op, "src", src)) != DT_OK) return s;
  if ((s = dt__same_dtype(op, "dst", dst, "src", src)) != DT_OK || (s = dt__inplace_check(op, "dst", dst)) != DT_OK) return s;
  if (dst->numel != src->numel || dst->shape.ndim != src->shape.ndim ||
      memcmp(dst->shape.dims, src->shape.dims, sizeof(int64_t) * (size_t)dst->shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: dst has shape %s but src has shape %s", op,
                    dt__shape_str(&dst->shape, a, sizeof a), dt__shape_str(&src->shape, b, sizeof b));
  s = dt__copy_bytes(op, dst->st->device, dst->st->ptr, src->st->device, src->st->ptr, src->nbytes);
  if (s == DT_OK) dt__bump(dst);
  return s;
}

DTDEF dt_status dt_to_host(const dt_tensor *t, void *dst, size_t nbytes) {
  const char *op = "dt_to_host";
  dt_status s;
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if (!dst && t->nbytes > 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dst is NULL", op);
  if (nbytes < t->nbytes)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dst holds %llu bytes but the tensor has %llu", op,
                    (unsigned long long)nbytes, (unsigned long long)t->nbytes);
  if ((s = dt__graph_forbid(op, t->st->device, "a copy to host memory")) != DT_OK) return s;
  return dt__copy_bytes(op, dt_cpu(), dst, t->st->device, t->st->ptr, t->nbytes);
}

static double dt__host_value(const void *p, dt_dtype t, int64_t i) {
  switch (t) {
    case DT_F32: return (double)((const float *)p)[i];
    case DT_F64: return ((const double *)p)[i];
    case DT_I32: return (double)((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    case DT_U8: return (double)((const uint8_t *)p)[i];
    case DT_BOOL: return ((const uint8_t *)p)[i] != 0 ? 1.0 : 0.0;
    case DT_F16: case DT_BF16: return (double)dt__half_to_f32(t == DT_BF16, ((const uint16_t *)p)[i]);
  }
  return 0;
}

/* dt_item's value in *v (NAN on failure) and whether it was read: the library's callers ask the
   status, since a NaN is a value too and dt_last_status() may hold an earlier error */
static dt_status dt__item(const dt_tensor *t, double *v) {
  double b[1];
  dt_status s;
  *v = NAN;
  if ((s = dt__check_tensor("dt_item", "t", t)) != DT_OK) return s;
  if (t->numel != 1) {
    char sb[200];
    return dt__fail(DT_ERR_SHAPE, "dt_item: expected a tensor with one element, got shape %s (%lld elements)",
                    dt__shape_str(&t->shape, sb, sizeof sb), (long long)t->numel);
  }
  if ((s = dt__graph_forbid("dt_item", t->st->device, "a copy to host memory")) != DT_OK) return s;
  if ((s = dt__copy_bytes("dt_item", dt_cpu(), b, t->st->device, t->st->ptr, t->nbytes)) != DT_OK) return s;
  *v = dt__host_value(b, t->dtype, 0);
  return DT_OK;
}

DTDEF double dt_item(const dt_tensor *t) {
  double v;
  (void)dt__item(t, &v);
  return v;
}

/* ---- src/core/graph.c ---- */
/* Graphs (torch.cuda.CUDAGraph): what a capture keeps, what makes a graph stale, and the
   calls refused while a device is captured. The backends capture and replay (graph_* slots:
   CUDA stream capture in src/cuda/graph.cu, the CPU's recording table in src/cpu/graph.c).

   The memory rule. Every storage has a serial number, in the order storages are made; a
   capture on device d takes the serials [serial_begin, serial_end) of the storages made
   during it. When a storage's last reference goes:
   - during a capture on its device: the capture keeps it (its memory is not given back);
     captured work may still write or read it, so nothing else may get that memory;
   - after the capture, a storage made during it: the graph keeps it (replays write it);
   - after the capture, a storage made before it: the captured work may use it, and its
     memory goes back; the graph is stale and refuses to replay.
   dt_graph_free gives back everything the graph kept. A storage made during a capture and
   still alive then is the caller's, as any other. Scratch memory a backend takes inside one
   call (the CUDA reductions' workspaces) is kept by the backend's graph the same way. */

struct dt_graph {
  dt_device device;
  int capturing;              /* 1 from dt_graph_begin to dt_graph_end */
  int invalid;                /* a capture that a refused call ended: dt_graph_end reports why */
  int stale;                  /* a storage from before the capture was released: replays refuse */
  char why[400];              /* what made it invalid or stale */
  dt_status status;           /* and the status dt_graph_end or dt_graph_replay reports for it */
  long long serial_begin, serial_end;
  dt__storage **kept;         /* storages released that captured work may use, given back by dt_graph_free */
  int nkept, capkept;
  void *be_graph;             /* the backend's captured work */
  uint64_t *gen;              /* 2 words on the device, the backend's own block (no storage, so no memory rule): the
                                 generator's seed and the first draw of a replay */
  uint64_t ndraws;            /* the random draws captured, numbered 0.. within the graph (dt__rng_at) */
  struct dt_graph *next;      /* every graph, capturing or captured, under dt__graph_lk */
  const void *owner;          /* the thread that began the capture: &dt__graph_thread there */
};

static volatile int dt__graph_lk;
/* Its address names the calling thread: a capture is ended on the thread that began it (CUDA's
   thread-local capture; the CPU keeps the same rule, so a program behaves alike on both). */
static DT__TLS char dt__graph_thread;
static struct dt_graph *dt__graph_list;

/* The capture in progress on d, or NULL. Call under dt__graph_lk. */
static dt_graph *dt__graph_capture_of(dt_device d) {
  dt_graph *g;
  for (g = dt__graph_list; g; g = g->next)
    if (g->capturing && dt_device_equal(g->device, d)) return g;
  return NULL;
}

/* Keeps st in g; 0 when there is no host memory for the list. Call under dt__graph_lk. */
static int dt__graph_keep(dt_graph *g, dt__storage *st) {
  if (g->nkept == g->capkept) {
    int cap = g->capkept ? 2 * g->capkept : 16;
    dt__storage **k = (dt__storage **)DT_MALLOC(sizeof(dt__storage *) * (size_t)cap);
    if (!k) return 0;
    if (g->nkept) memcpy(k, g->kept, sizeof(dt__storage *) * (size_t)g->nkept);
    DT_FREE(g->kept);
    g->kept = k;
    g->capkept = cap;
  }
  g->kept[g->nkept++] = st;
  return 1;
}

/* dt__storage_release's question for a storage (not a view) whose last reference went:
   1 when a graph keeps it. Marks graphs stale as the memory rule says. */
static int dt__graph_on_release(dt__storage *st) {
  dt_graph *g;
  int kept = 0;
  char db[48];
  dt__lock(&dt__graph_lk);
  for (g = dt__graph_list; g; g = g->next) {
    if (!dt_device_equal(g->device, st->device)) continue;
    if (g->capturing || (st->serial >= g->serial_begin && st->serial < g->serial_end)) {
      if (kept) continue;
      if (dt__graph_keep(g, st)) { kept = 1; continue; }
      /* no room to keep it: then the graph must never run (the memory goes back) */
      if (g->capturing && !g->invalid) {
        g->invalid = 1;
        g->status = DT_ERR_OUT_OF_MEMORY;
        snprintf(g->why, sizeof g->why, "out of memory on the host keeping a released tensor during the capture");
      } else if (!g->capturing && !g->stale) {
        g->stale = 1;
        g->status = DT_ERR_OUT_OF_MEMORY;
        snprintf(g->why, sizeof g->why, "out of memory on the host keeping a released tensor that the graph writes");
      }
    } else if (st->serial < g->serial_begin && !g->stale) {
      g->stale = 1;
      g->status = DT_ERR_INVALID_ARGUMENT;
      snprintf(g->why, sizeof g->why,
               "a tensor on %s that existed when the capture began was released after it (%llu bytes at %p), and the "
               "captured work may use it: keep every such tensor alive until dt_graph_free",
               dt_device_str(st->device, db, sizeof db), (unsigned long long)st->nbytes, st->ptr);
    }
  }
  dt__unlock(&dt__graph_lk);
  return kept;
}

/* Refuses `what`, which would wait for d or move its data to or from the host or another
   device, while d is being captured; the capture is then invalid (dt_graph_end says why). */
static dt_status dt__graph_forbid(const char *op, dt_device d, const char *what) {
  dt_graph *g;
  char db[48];
  if (DT__ATOMIC_LOAD(&dt__graphs_live) == 0) return DT_OK;
  dt__lock(&dt__graph_lk);
  g = dt__graph_capture_of(d);
  if (g && !g->invalid) {
    g->invalid = 1;
    g->status = DT_ERR_UNSUPPORTED;
    snprintf(g->why, sizeof g->why, "%s (%s) was refused during the capture", op, what);
  }
  dt__unlock(&dt__graph_lk);
  if (!g) return DT_OK;
  return dt__fail(DT_ERR_UNSUPPORTED,
                  "%s: %s is not allowed while %s is being captured into a graph (nothing was issued); the capture is "
                  "invalid now: end it with dt_graph_end, which returns NULL",
                  op, what, dt_device_str(d, db, sizeof db));
}

/* Gives back what g kept and g itself; g is out of the list. */
static void dt__graph_destroy(dt_graph *g) {
  int i;
  if (g->be_graph) dt__be(g->device)->graph_free(g->device.index, g->be_graph);
  for (i = 0; i < g->nkept; i++) dt__storage_free(g->kept[i]);
  DT_FREE(g->kept);
  if (g->gen) dt__be(g->device)->free(g->device.index, g->gen, 2 * sizeof(uint64_t)); /* after replays queued before */
  DT_FREE(g);
}

/* While d is being captured: the capture's next draw, numbered within the graph, and in *gen
   where each replay puts the generator's seed and the graph's first draw; 0 when d is not
   being captured. */
static int dt__graph_draw(dt_device d, uint64_t *draw, const uint64_t **gen) {
  dt_graph *g;
  if (DT__ATOMIC_LOAD(&dt__graphs_live) == 0) return 0;
  dt__lock(&dt__graph_lk);
  g = dt__graph_capture_of(d);
  if (g) {
    *draw = g->ndraws++;
    *gen = g->gen;
  }
  dt__unlock(&dt__graph_lk);
  return g != NULL;
}

/* Takes g out of the list. */
static void dt__graph_unlink(dt_graph *g) {
  dt_graph **p;
  dt__lock(&dt__graph_lk);
  for (p = &dt__graph_list; *p; p = &(*p)->next)
    if (*p == g) { *p = g->next; break; }
  dt__unlock(&dt__graph_lk);
  DT__ATOMIC_ADD(&dt__graphs_live, -1);
}

DTDEF dt_status dt_graph_begin(dt_device d) {
  const char *op = "dt_graph_begin";
  dt_graph *g;
  dt_status s;
  void *gen = NULL;
  char db[48];
  if ((s = dt__check_device(op, d)) != DT_OK) return s;
  if (!(g = (dt_graph *)DT_MALLOC(sizeof(dt_graph))))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a graph", op);
  memset(g, 0, sizeof *g);
  g->device = d;
  g->capturing = 1;
  g->serial_end = LLONG_MAX;
  g->owner = &dt__graph_thread;
  if ((s = dt__be(d)->alloc(d.index, 2 * sizeof(uint64_t), &gen)) != DT_OK) {
    DT_FREE(g);
    return dt__backend_fail(op, d, s);
  }
  g->gen = (uint64_t *)gen;
  dt__lock(&dt__graph_lk);
  if (dt__graph_capture_of(d)) {
    dt__unlock(&dt__graph_lk);
    dt__be(d)->free(d.index, gen, 2 * sizeof(uint64_t));
    DT_FREE(g);
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is already being captured (end that capture with dt_graph_end first)", op,
                    dt_device_str(d, db, sizeof db));
  }
  /* listed first, so that every storage released from here on is kept */
  g->serial_begin = DT__ATOMIC_ADD(&dt__storage_serial, 1);
  g->next = dt__graph_list;
  dt__graph_list = g;
  DT__ATOMIC_ADD(&dt__graphs_live, 1);
  dt__unlock(&dt__graph_lk);
  if ((s = dt__be(d)->graph_begin(d.index)) != DT_OK) {
    dt__backend_fail(op, d, s);
    dt__graph_unlink(g);
    dt__graph_destroy(g);
    return dt_last_status();
  }
  return DT_OK;
}

DTDEF dt_graph *dt_graph_end(dt_device d) {
  const char *op = "dt_graph_end";
  dt_graph *g;
  dt_status s;
  void *bg = NULL;
  char db[48];
  if (dt__check_device(op, d) != DT_OK) return NULL;
  dt__lock(&dt__graph_lk);
  g = dt__graph_capture_of(d);
  dt__unlock(&dt__graph_lk);
  if (!g) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not being captured (start a capture with dt_graph_begin)", op,
             dt_device_str(d, db, sizeof db));
    return NULL;
  }
  if (g->owner != (const void *)&dt__graph_thread) { /* the capture goes on: its own thread may end it */
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the capture on %s was begun on another thread; end it on that thread", op,
             dt_device_str(d, db, sizeof db));
    return NULL;
  }
  s = dt__be(d)->graph_end(d.index, &bg);
  if (s != DT_OK) dt__backend_fail(op, d, s);
  dt__lock(&dt__graph_lk);
  g->capturing = 0;
  g->serial_end = DT__ATOMIC_ADD(&dt__storage_serial, 1);
  g->be_graph = bg;
  dt__unlock(&dt__graph_lk);
  if (s != DT_OK || g->invalid) {
    if (s == DT_OK) dt__fail(g->status, "%s: the capture on %s is invalid: %s", op, dt_device_str(d, db, sizeof db), g->why);
    dt__graph_unlink(g);
    dt__graph_destroy(g); /* nothing ran: what it kept goes back */
    return NULL;
  }
  return g;
}

DTDEF dt_status dt_graph_replay(dt_graph *g) {
  const char *op = "dt_graph_replay";
  dt_status s;
  int stale, busy;
  uint64_t seed, draw;
  dt_status why_status;
  char why[400], db[48];
  if (!g) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: g is NULL", op);
  dt__lock(&dt__graph_lk);
  stale = g->stale;
  if (stale) memcpy(why, g->why, sizeof why);
  why_status = g->status;
  busy = dt__graph_capture_of(g->device) != NULL;
  dt__unlock(&dt__graph_lk);
  if (stale) return dt__fail(why_status, "%s: the graph cannot run: %s", op, why);
  if (busy)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: %s is being captured; replay its graphs after dt_graph_end", op,
                    dt_device_str(g->device, db, sizeof db));
  if (g->ndraws == 0) {
    if ((s = dt__be(g->device)->graph_replay(g->device.index, g->be_graph, NULL, 0, 0)) != DT_OK) return dt__backend_fail(op, g->device, s);
    return DT_OK;
  }
  /* the replay's draws are the generator's next g->ndraws, as eager calls would have taken */
  dt__lock(&dt__rng_lock);
  seed = dt__seed;
  draw = dt__draw;
  dt__draw += g->ndraws;
  dt__unlock(&dt__rng_lock);
  if ((s = dt__be(g->device)->graph_replay(g->device.index, g->be_graph, g->gen, seed, draw)) != DT_OK) {
    dt__lock(&dt__rng_lock); /* nothing ran: the draws go back unless another thread drew since */
    if (dt__seed == seed && dt__draw == draw + g->ndraws) dt__draw = draw;
    dt__unlock(&dt__rng_lock);
    return dt__backend_fail(op, g->device, s);
  }
  return DT_OK;
}

DTDEF void dt_graph_free(dt_graph *g) {
  dt_graph *c;
  int i;
  if (!g) return;
  dt__graph_unlink(g);
  /* a capture in progress on the device keeps what g kept: its work may use that memory now */
  dt__lock(&dt__graph_lk);
  c = dt__graph_capture_of(g->device);
  for (i = 0; c && i < g->nkept; i++)
    if (dt__graph_keep(c, g->kept[i])) g->kept[i] = NULL;
    else if (!c->invalid) {
      c->invalid = 1;
      c->status = DT_ERR_OUT_OF_MEMORY;
      snprintf(c->why, sizeof c->why, "out of memory on the host keeping a freed graph's memory during the capture");
    }
  dt__unlock(&dt__graph_lk);
  if (c) { /* what c could not take goes back, which is safe: c will never run */
    int j = 0;
    for (i = 0; i < g->nkept; i++)
      if (g->kept[i]) g->kept[j++] = g->kept[i];
    g->nkept = j;
  }
  dt__graph_destroy(g);
}

/* ---- src/core/autocast.c ---- */
/* torch.autocast per thread and device type: dt__autocast[DT_CPU], dt__autocast[DT_CUDA] hold the
   lower precision dtype (F16, BF16) or F32 for off. The operations of PyTorch's "lower precision"
   list (matmul, linear, conv2d) cast their float inputs to it and run there (F32 accumulation,
   the result in it); those of its "float32" list (softmax, log_softmax, the losses, sum, norm)
   cast half inputs up to F32; the rest run in their inputs' dtype. Each such operation asks
   below, casts through dt_cast (recorded by autograd: F32 parameters get F32 gradients) and
   calls itself again on the cast inputs, which then ask for nothing. */
static DT__TLS dt_dtype dt__autocast[2];

DTDEF dt_dtype dt_set_autocast(dt_device_type where, dt_dtype t) {
  dt_dtype prev;
  if (where != DT_CPU && where != DT_CUDA) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_set_autocast: where must be DT_CPU or DT_CUDA, got %d", (int)where);
    return (dt_dtype)-1;
  }
  if (t != DT_F32 && t != DT_F16 && t != DT_BF16) {
    dt__fail(DT_ERR_DTYPE, "dt_set_autocast: autocast runs in float16 or bfloat16 (float32 turns it off), got %s "
             "(integer tensors are never autocast)", dt_dtype_name(t));
    return (dt_dtype)-1;
  }
  prev = dt__autocast[where];
  dt__autocast[where] = t;
  return prev;
}

DTDEF dt_dtype dt_get_autocast(dt_device_type where) {
  return where == DT_CPU || where == DT_CUDA ? dt__autocast[where] : DT_F32;
}

/* The dtype a lower precision operation on a, b, c (b, c may be NULL) runs in: the autocast dtype of
   their device when it is on, all are float tensors on that one device, and one of them is not in
   it yet; else DT_F32 (run as given: bad inputs are then refused by the operation's own checks). */
static dt_dtype dt__autocast_low(const dt_tensor *a, const dt_tensor *b, const dt_tensor *c) {
  const dt_tensor *v[3];
  dt_dtype t;
  int i, differs = 0;
  if (!a) return DT_F32;
  t = dt__autocast[a->st->device.type == DT_CUDA];
  if (t == DT_F32) return DT_F32;
  v[0] = a; v[1] = b; v[2] = c;
  for (i = 0; i < 3; i++) {
    if (!v[i]) continue;
    if (!dt__is_float(v[i]->dtype) || !dt_device_equal(v[i]->st->device, a->st->device)) return DT_F32;
    if (v[i]->dtype != t) differs = 1;
  }
  return differs ? t : DT_F32;
}

/* Whether a float32 operation casts a (and b) up: autocast on for a's device and a or b half. */
static int dt__autocast_up(const dt_tensor *a, const dt_tensor *b) {
  if (!a || dt__autocast[a->st->device.type == DT_CUDA] == DT_F32) return 0;
  if (b && !dt_device_equal(a->st->device, b->st->device)) return 0;
  return dt__is_half(a->dtype) || (b && dt__is_half(b->dtype));
}

/* a in t: a new reference, cast (and recorded) when a is a float tensor not in t (up to F32: only a
   half one); NULL stays NULL; *failed set when a cast fails */
static dt_tensor *dt__autocast_cast(const dt_tensor *a, dt_dtype t, int *failed) {
  dt_tensor *y;
  if (!a || *failed) return NULL;
  if (a->dtype == t || !dt__is_float(a->dtype) || (t == DT_F32 && !dt__is_half(a->dtype))) return dt_retain((dt_tensor *)a);
  if (!(y = dt_cast(a, t))) *failed = 1;
  return y;
}

/* ---- src/ops/arith.c ---- */
/* The broadcast geometry of a op b (NumPy's rules), with dims merged where
   both operands run contiguously across them. */
static dt_status dt__broadcast(const char *op, const dt_shape *a, const dt_shape *b, dt_shape *out, dt__bcast *g) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim, i, k, big = 0;
  uint64_t as = 1, bs = 1, n = 1; /* unsigned: empty operands may have huge dims, and wrapping is defined */
  dt__bcast full;
  memset(&full, 0, sizeof full);
  *out = dt_shape0();
  out->ndim = nd;
  for (i = nd - 1; i >= 0; i--) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1, d;
    if (da != db && da != 1 && db != 1) {
      char x[200], y[200];
      return dt__fail(DT_ERR_SHAPE, "%s: shapes %s and %s cannot be broadcast: a has %lld and b has %lld at dimension %d",
                      op, dt__shape_str(a, x, sizeof x), dt__shape_str(b, y, sizeof y), (long long)da, (long long)db, i);
    }
    d = da == 1 ? db : da;
    out->dims[i] = d;
    full.dims[i] = d;
    full.astride[i] = (da == 1 && d != 1) ? 0 : (int64_t)as;
    full.bstride[i] = (db == 1 && d != 1) ? 0 : (int64_t)bs;
    if (d != 0 && n > (uint64_t)INT64_MAX / (uint64_t)d) big = 1;
    as *= (uint64_t)da; bs *= (uint64_t)db; n *= (uint64_t)d;
  }
  memset(g, 0, sizeof *g);
  if (n == 0 || big) { /* nothing to compute, or a shape too large that dt__new refuses */
    g->ndim = 1; g->numel = 0; g->astride[0] = 1; g->bstride[0] = 1;
    return DT_OK;
  }
  /* merge: drop size-1 dims, join a dim into the next when both strides chain */
  g->numel = (int64_t)n;
  k = 0;
  for (i = 0; i < nd; i++) {
    if (full.dims[i] == 1) continue;
    if (k > 0 && g->astride[k - 1] == full.astride[i] * full.dims[i] && g->bstride[k - 1] == full.bstride[i] * full.dims[i]) {
      g->dims[k - 1] *= full.dims[i];
      g->astride[k - 1] = full.astride[i];
      g->bstride[k - 1] = full.bstride[i];
      continue;
    }
    g->dims[k] = full.dims[i]; g->astride[k] = full.astride[i]; g->bstride[k] = full.bstride[i];
    k++;
  }
  if (k == 0) { k = 1; g->dims[0] = 1; g->astride[0] = 1; g->bstride[0] = 1; }
  g->ndim = k;
  g->contiguous = (k == 1 && g->astride[0] == 1 && g->bstride[0] == 1);
  return DT_OK;
}

static dt_dtype dt__result_type(const dt_tensor *a, const dt_tensor *b);            /* src/ops/compare.c */
static dt_tensor *dt__as_dtype(const char *op, const dt_tensor *x, dt_dtype t);

/* a op b (add, sub, mul, div) where the dtypes differ, or where the common dtype has no kernel
   of its own: PyTorch's type promotion (torch.result_type; true division of integers or bools
   gives float32; bool - anything is refused, as PyTorch refuses it). The operands go to the
   dtype computed in (a temporary each, where it is not theirs); uint8 and bool results are
   computed in int32 and converted back (uint8 wraps, bool is nonzero). */
static dt_tensor *dt__binary_promoted(const char *op, dt__binary_op bop, const dt_tensor *a, const dt_tensor *b) {
  dt_shape s;
  dt__bcast g;
  dt_dtype rt = dt__result_type(a, b), ct;
  dt_tensor *ca = NULL, *cb = NULL, *y = NULL, *r;
  if (bop == DT__B_SUB && (a->dtype == DT_BOOL || b->dtype == DT_BOOL)) {
    dt__fail(DT_ERR_DTYPE, "%s: subtraction with a bool tensor is not supported (%s is bool; as in PyTorch: convert with "
             "dt_cast, or for a mask use dt_ne_scalar)", op, a->dtype == DT_BOOL ? "a" : "b");
    return NULL;
  }
  if (bop == DT__B_DIV && !dt__is_float(rt)) rt = DT_F32; /* true division: the default float dtype */
  ct = rt == DT_U8 || rt == DT_BOOL ? DT_I32 : rt;
  if (dt__broadcast(op, &a->shape, &b->shape, &s, &g) != DT_OK) return NULL;
  if (g.numel == 0) return dt__new(op, s, rt, a->st->device);
  if (!(ca = dt__as_dtype(op, a, ct)) || !(cb = dt__as_dtype(op, b, ct))) goto out;
  if (!(y = dt__new(op, s, ct, a->st->device))) goto out;
  y = dt__done(op, y, dt__be(a->st->device)->binary(a->st->device.index, bop, ct, &g, ca->st->ptr, cb->st->ptr, y->st->ptr));
  if (y && ct != rt) { r = dt__as_dtype(op, y, rt); dt_release(y); y = r; }
out:
  dt_release(ca); dt_release(cb);
  return y;
}

static dt_tensor *dt__binary(const char *op, dt__binary_op bop, const dt_tensor *a, const dt_tensor *b) {
  dt_shape s;
  dt__bcast g;
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_tensor(op, "b", b) != DT_OK) return NULL;
  if (dt__same_device(op, "a", a, "b", b) != DT_OK) return NULL;
  if (bop <= DT__B_DIV && (a->dtype != b->dtype || a->dtype == DT_U8 || a->dtype == DT_BOOL || (bop == DT__B_DIV && !dt__is_float(a->dtype))))
    return dt__binary_promoted(op, bop, a, b);
  if (dt__same_dtype(op, "a", a, "b", b) != DT_OK) return NULL;
  if ((bop == DT__B_DIV || bop >= DT__B_RELU_GRAD) && bop != DT__B_COPY_A && dt__float_only(op, "a", a) != DT_OK) return NULL;
  if (dt__no_arith(op, "a", a) != DT_OK) return NULL;
  if (dt__broadcast(op, &a->shape, &b->shape, &s, &g) != DT_OK) return NULL;
  if (!(y = dt__new(op, s, a->dtype, a->st->device))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->binary(a->st->device.index, bop, a->dtype, &g, a->st->ptr, b->st->ptr, y->st->ptr));
}

DTDEF dt_tensor *dt_add(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__binary("dt_add", DT__B_ADD, a, b);
  return DT__AG2(y, DT__AG_ADD, "dt_add", a, b);
}
DTDEF dt_tensor *dt_sub(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__binary("dt_sub", DT__B_SUB, a, b);
  return DT__AG2(y, DT__AG_SUB, "dt_sub", a, b);
}
DTDEF dt_tensor *dt_mul(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__binary("dt_mul", DT__B_MUL, a, b);
  return DT__AG2(y, DT__AG_MUL, "dt_mul", a, b);
}
DTDEF dt_tensor *dt_div(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__binary("dt_div", DT__B_DIV, a, b);
  return DT__AG2(y, DT__AG_DIV, "dt_div", a, b);
}

/* Whether a scalar counts as a Python int in type promotion: a whole number within +-2^53 (every
   integer a double holds exactly); any other (a fraction, a larger value, inf, NaN) counts as a
   Python float. */
static int dt__scalar_is_int(double v) { return v == floor(v) && fabs(v) <= 9007199254740992.0; }
static dt_tensor *dt__unary(const char *op, dt__unary_op uop, const dt_tensor *a, double p0, double p1);

/* p0 a + p1 for an integer or bool a, as PyTorch promotes a tensor with Python scalars: int
   scalars keep a's dtype (bool: int64), a float scalar gives float32. uint8 is computed in int32
   and wraps back; bool goes to int64 first. */
static dt_tensor *dt__affine_promoted(const char *op, const dt_tensor *a, double p0, double p1) {
  dt_dtype ct, rt;
  dt_tensor *x, *y, *r;
  if (dt__scalar_is_int(p0) && dt__scalar_is_int(p1)) { rt = a->dtype == DT_BOOL ? DT_I64 : a->dtype; ct = rt == DT_U8 ? DT_I32 : rt; }
  else rt = ct = DT_F32;
  if (!(x = dt__as_dtype(op, a, ct))) return NULL;
  y = dt__unary(op, DT__U_AFFINE, x, p0, p1);
  dt_release(x);
  if (y && ct != rt) { r = dt__as_dtype(op, y, rt); dt_release(y); y = r; }
  return y;
}

/* y = op(a). Integer tensors take AFFINE (promoted by dt__affine_promoted where the scalars or
   the dtype ask), NEG and ABS. */
static dt_tensor *dt__unary(const char *op, dt__unary_op uop, const dt_tensor *a, double p0, double p1) {
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK) return NULL;
  if (!dt__is_float(a->dtype)) {
    if (uop != DT__U_AFFINE && uop != DT__U_NEG && uop != DT__U_ABS) { dt__float_only(op, "a", a); return NULL; }
    if (uop == DT__U_AFFINE && (a->dtype == DT_U8 || a->dtype == DT_BOOL || !dt__scalar_is_int(p0) || !dt__scalar_is_int(p1)))
      return dt__affine_promoted(op, a, p0, p1);
    if (dt__no_arith(op, "a", a) != DT_OK) return NULL;
  }
  if (!(y = dt__new_like(op, a, a->dtype))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->unary(a->st->device.index, uop, a->dtype, a->numel, a->st->ptr, y->st->ptr, p0, p1));
}

DTDEF dt_tensor *dt_add_scalar(const dt_tensor *a, double s) {
  dt_tensor *y = dt__unary("dt_add_scalar", DT__U_AFFINE, a, 1.0, s);
  return DT__AG1(y, DT__AG_ADD_SCALAR, "dt_add_scalar", a);
}
DTDEF dt_tensor *dt_mul_scalar(const dt_tensor *a, double s) {
  dt_tensor *y = dt__unary("dt_mul_scalar", DT__U_AFFINE, a, s, 0.0);
  return y && DT__AG_ON(a) ? dt__ag_record1a(y, DT__AG_MUL_SCALAR, "dt_mul_scalar", a, s, 0, 0, NULL) : y;
}
DTDEF dt_tensor *dt_exp(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_exp", DT__U_EXP, a, 0, 0);
  return DT__AG1(y, DT__AG_EXP, "dt_exp", a);
}
DTDEF dt_tensor *dt_log(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_log", DT__U_LOG, a, 0, 0);
  return DT__AG1(y, DT__AG_LOG, "dt_log", a);
}
DTDEF dt_tensor *dt_sqrt(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_sqrt", DT__U_SQRT, a, 0, 0);
  return DT__AG1(y, DT__AG_SQRT, "dt_sqrt", a);
}
DTDEF dt_tensor *dt_neg(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_neg", DT__U_NEG, a, 0, 0);
  return DT__AG1(y, DT__AG_NEG, "dt_neg", a);
}
DTDEF dt_tensor *dt_relu(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_relu", DT__U_RELU, a, 0, 0);
  return DT__AG1(y, DT__AG_RELU, "dt_relu", a);
}

/* Row-major batched matmul with the shapes already checked; y is made here. */
static dt_tensor *dt__gemm(const char *op, const dt_tensor *a, const dt_tensor *b, int ta, int tb, int64_t batch,
                           int64_t m, int64_t n, int64_t k, int64_t sa, int64_t sb, dt_shape ys) {
  dt_tensor *y = dt__new(op, ys, a->dtype, a->st->device);
  if (!y || y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->gemm(a->st->device.index, a->dtype, ta, tb, batch, m, n, k, 1.0,
                                                     a->st->ptr, sa, b->st->ptr, sb, 0.0, y->st->ptr, m * n));
}

static dt_tensor *dt__matmul(const dt_tensor *a, const dt_tensor *b) {
  const char *op = "dt_matmul";
  int na, nb;
  int64_t batch = 1, m, k, k2, n, sa, sb;
  dt_shape ys = dt_shape0();
  char x[200], y[200];
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_tensor(op, "b", b) != DT_OK) return NULL;
  if (dt__same_device(op, "a", a, "b", b) != DT_OK || dt__same_dtype(op, "a", a, "b", b) != DT_OK) return NULL;
  if (dt__float_only(op, "a", a) != DT_OK) return NULL;
  na = a->shape.ndim; nb = b->shape.ndim;
  if (na < 1 || na > 3 || nb < 1 || nb > 3 || (na == 1 && nb == 3) || (na == 3 && nb == 1)) {
    dt__fail(DT_ERR_SHAPE, "%s: expected (m, k) @ (k, n), (b, m, k) @ (b, k, n) or vectors, got %s and %s", op,
             dt__shape_str(&a->shape, x, sizeof x), dt__shape_str(&b->shape, y, sizeof y));
    return NULL;
  }
  /* a: (m, k) or (k,) as (1, k) or (batch, m, k) */
  m = na == 1 ? 1 : a->shape.dims[na - 2];
  k = a->shape.dims[na - 1];
  /* b: (k, n) or (k,) as (k, 1) or (batch, k, n) */
  k2 = nb == 1 ? b->shape.dims[0] : b->shape.dims[nb - 2];
  n = nb == 1 ? 1 : b->shape.dims[nb - 1];
  if (k != k2) {
    dt__fail(DT_ERR_SHAPE, "%s: shapes %s and %s cannot be multiplied (%lld != %lld)", op,
             dt__shape_str(&a->shape, x, sizeof x), dt__shape_str(&b->shape, y, sizeof y), (long long)k, (long long)k2);
    return NULL;
  }
  sa = (int64_t)((uint64_t)m * (uint64_t)k); sb = (int64_t)((uint64_t)k * (uint64_t)n); /* wrap-safe for empty operands */
  if (na == 3 || nb == 3) {
    int64_t ba = na == 3 ? a->shape.dims[0] : 1, bb = nb == 3 ? b->shape.dims[0] : 1;
    if (na == 3 && nb == 3 && ba != bb) {
      dt__fail(DT_ERR_SHAPE, "%s: batch sizes differ: %s and %s", op, dt__shape_str(&a->shape, x, sizeof x),
               dt__shape_str(&b->shape, y, sizeof y));
      return NULL;
    }
    batch = na == 3 ? ba : bb;
    if (na != 3) sa = 0;
    if (nb != 3) sb = 0;
    ys = dt_shape3(batch, m, n);
  } else if (na == 2 && nb == 2) ys = dt_shape2(m, n);
  else if (na == 2) ys = dt_shape1(m);
  else if (nb == 2) ys = dt_shape1(n);
  return dt__gemm(op, a, b, 0, 0, batch, m, n, k, sa, sb, ys);
}
DTDEF dt_tensor *dt_matmul(const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y;
  dt_dtype t = dt__autocast_low(a, b, NULL);
  if (t != DT_F32) { /* autocast: in t */
    int failed = 0;
    dt_tensor *ca = dt__autocast_cast(a, t, &failed), *cb = dt__autocast_cast(b, t, &failed);
    y = failed ? NULL : dt_matmul(ca, cb);
    dt_release(ca); dt_release(cb);
    return y;
  }
  y = dt__matmul(a, b);
  return DT__AG2(y, DT__AG_MATMUL, "dt_matmul", a, b);
}

static dt_tensor *dt__transpose(const dt_tensor *a) {
  const char *op = "dt_transpose";
  dt__bcast g;
  dt_tensor *y;
  char sb[200];
  if (dt__check_tensor(op, "a", a) != DT_OK) return NULL;
  if (a->shape.ndim != 2) {
    dt__fail(DT_ERR_SHAPE, "%s: expected a 2-d tensor, got shape %s", op, dt__shape_str(&a->shape, sb, sizeof sb));
    return NULL;
  }
  if (!(y = dt__new(op, dt_shape2(a->shape.dims[1], a->shape.dims[0]), a->dtype, a->st->device))) return NULL;
  if (y->numel == 0) return y;
  /* y: (n, m), y[j, i] = a[i, j] at i * n + j */
  memset(&g, 0, sizeof g);
  g.ndim = 2; g.numel = y->numel;
  g.dims[0] = a->shape.dims[1]; g.dims[1] = a->shape.dims[0];
  g.astride[0] = 1; g.astride[1] = a->shape.dims[1];
  return dt__done(op, y, dt__be(a->st->device)->binary(a->st->device.index, DT__B_COPY_A, a->dtype, &g, a->st->ptr, a->st->ptr, y->st->ptr));
}
DTDEF dt_tensor *dt_transpose(const dt_tensor *a) {
  dt_tensor *y = dt__transpose(a);
  return DT__AG1(y, DT__AG_TRANSPOSE, "dt_transpose", a);
}

static dt_tensor *dt__reshape(const dt_tensor *a, dt_shape s) {
  const char *op = "dt_reshape";
  int i, infer = -1;
  int64_t known = 1, numel = 0;
  char x[200], y[200];
  if (dt__check_tensor(op, "a", a) != DT_OK) return NULL;
  if (s.ndim < 0 || s.ndim > DT_MAX_DIMS) {
    dt__fail(DT_ERR_SHAPE, "%s: a shape has 0 to %d dimensions, got %d", op, DT_MAX_DIMS, s.ndim);
    return NULL;
  }
  for (i = 0; i < s.ndim; i++) {
    if (s.dims[i] == -1 && infer < 0) { infer = i; continue; }
    if (s.dims[i] < 0) {
      dt__fail(DT_ERR_SHAPE, "%s: invalid dimension %lld in shape %s", op, (long long)s.dims[i], dt__shape_str(&s, x, sizeof x));
      return NULL;
    }
    if (s.dims[i] != 0 && known > INT64_MAX / s.dims[i]) known = -1;
    if (known >= 0) known *= s.dims[i];
  }
  if (infer >= 0) {
    if (known <= 0 || a->numel % known != 0) {
      dt__fail(DT_ERR_SHAPE, "%s: shape %s is invalid for %lld elements", op, dt__shape_str(&s, x, sizeof x), (long long)a->numel);
      return NULL;
    }
    s.dims[infer] = a->numel / known;
  }
  if (dt__check_shape(op, &s, a->dtype, &numel, NULL) != DT_OK) return NULL;
  if (numel != a->numel) {
    dt__fail(DT_ERR_SHAPE, "%s: cannot reshape %s (%lld elements) to %s (%lld elements)", op,
             dt__shape_str(&a->shape, x, sizeof x), (long long)a->numel, dt__shape_str(&s, y, sizeof y), (long long)numel);
    return NULL;
  }
  DT__ATOMIC_ADD(&a->st->refs, 1);
  return dt__wrap(op, a->st, &s, a->dtype, a->numel, a->nbytes);
}
DTDEF dt_tensor *dt_reshape(const dt_tensor *a, dt_shape s) {
  dt_tensor *y = dt__reshape(a, s);
  return DT__AG1(y, DT__AG_RESHAPE, "dt_reshape", a);
}

static dt_tensor *dt__reduce(const char *op, dt__reduce_op rop, const dt_tensor *a, int64_t outer, int64_t len,
                             int64_t inner, dt_shape ys) {
  dt_tensor *y = dt__new(op, ys, a->dtype, a->st->device);
  if (!y || y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->reduce(a->st->device.index, rop, a->dtype, outer, len, inner, a->st->ptr, y->st->ptr));
}

static dt_tensor *dt__reduce_all(const char *op, dt__reduce_op rop, const dt_tensor *a) {
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__float_only(op, "a", a) != DT_OK) return NULL;
  return dt__reduce(op, rop, a, 1, a->numel, 1, dt_shape0());
}
static dt_tensor *dt__sum_bytes(const char *op, const dt_tensor *a); /* sum of U8/BOOL, I64 */
/* autocast's float32 list: f(a in F32) for a half a */
static dt_tensor *dt__autocast_f32_1(dt_tensor *(*f)(const dt_tensor *), const dt_tensor *a) {
  dt_tensor *ca = dt_cast(a, DT_F32), *y = ca ? f(ca) : NULL;
  dt_release(ca);
  return y;
}
DTDEF dt_tensor *dt_sum(const dt_tensor *a) {
  dt_tensor *y;
  if (dt__autocast_up(a, NULL)) return dt__autocast_f32_1(dt_sum, a);
  if (a && (a->dtype == DT_U8 || a->dtype == DT_BOOL)) return dt__sum_bytes("dt_sum", a);
  y = dt__reduce_all("dt_sum", DT__R_SUM, a);
  return DT__AG1(y, DT__AG_SUM, "dt_sum", a);
}
DTDEF dt_tensor *dt_mean(const dt_tensor *a) {
  dt_tensor *y = dt__reduce_all("dt_mean", DT__R_MEAN, a);
  return DT__AG1(y, DT__AG_MEAN, "dt_mean", a);
}
DTDEF dt_tensor *dt_norm(const dt_tensor *a) {
  dt_tensor *y;
  if (dt__autocast_up(a, NULL)) return dt__autocast_f32_1(dt_norm, a);
  y = dt__reduce_all("dt_norm", DT__R_NORM, a);
  return DT__AG1(y, DT__AG_NORM, "dt_norm", a);
}

static dt_tensor *dt__sum_dim(const dt_tensor *a, int dim) {
  const char *op = "dt_sum_dim";
  int nd, i, j;
  uint64_t outer = 1, inner = 1; /* wrap-safe: an empty a may have huge dims; dt__new checks ys */
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__float_only(op, "a", a) != DT_OK) return NULL;
  nd = a->shape.ndim;
  if (nd == 0 || dim < -nd || dim >= nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor", op, dim, nd);
    return NULL;
  }
  if (dim < 0) dim += nd;
  for (i = 0, j = 0; i < nd; i++) {
    if (i < dim) outer *= (uint64_t)a->shape.dims[i];
    if (i > dim) inner *= (uint64_t)a->shape.dims[i];
    if (i != dim) ys.dims[j++] = a->shape.dims[i];
  }
  ys.ndim = nd - 1;
  return dt__reduce(op, DT__R_SUM, a, (int64_t)outer, a->shape.dims[dim], (int64_t)inner, ys);
}
DTDEF dt_tensor *dt_sum_dim(const dt_tensor *a, int dim) {
  dt_tensor *y;
  if (dt__autocast_up(a, NULL)) {
    dt_tensor *ca = dt_cast(a, DT_F32);
    y = ca ? dt_sum_dim(ca, dim) : NULL;
    dt_release(ca);
    return y;
  }
  y = dt__sum_dim(a, dim);
  return y && DT__AG_ON(a) ? dt__ag_record1a(y, DT__AG_SUM_DIM, "dt_sum_dim", a, 0, dim, 0, NULL) : y;
}

static dt_tensor *dt__cast(const dt_tensor *a, dt_dtype t) {
  const char *op = "dt_cast";
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (!(y = dt__new_like(op, a, t))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->cast(a->st->device.index, a->dtype, t, a->numel, a->st->ptr, y->st->ptr));
}
/* between float dtypes the gradient goes back cast; to an integer one it stops (as PyTorch) */
DTDEF dt_tensor *dt_cast(const dt_tensor *a, dt_dtype t) {
  dt_tensor *y = dt__cast(a, t);
  return y && DT__AG_ON(a) && dt__is_float(t) ? dt__ag_record1(y, DT__AG_CAST, "dt_cast", a) : y;
}

static dt_tensor *dt__stack(const dt_tensor *const *ts, int n) {
  const char *op = "dt_stack";
  dt_shape s;
  dt_tensor *y;
  int i, k;
  char name[24], other[24], a[200], b[200];
  if (!ts) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: ts is NULL", op); return NULL; }
  if (n <= 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: expected at least one tensor, got n = %d", op, n); return NULL; }
  for (i = 0; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__check_tensor(op, name, ts[i]) != DT_OK) return NULL;
  }
  snprintf(other, sizeof other, "ts[0]");
  for (i = 1; i < n; i++) { /* devices first, as every operation checks them */
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_device(op, other, ts[0], name, ts[i]) != DT_OK) return NULL;
  }
  if (ts[0]->shape.ndim >= DT_MAX_DIMS) { dt__fail(DT_ERR_SHAPE, "%s: stacking %d-d tensors exceeds %d dims", op, ts[0]->shape.ndim, DT_MAX_DIMS); return NULL; }
  for (i = 1; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_dtype(op, other, ts[0], name, ts[i]) != DT_OK) return NULL;
    if (ts[i]->shape.ndim != ts[0]->shape.ndim || memcmp(ts[i]->shape.dims, ts[0]->shape.dims, sizeof(int64_t) * (size_t)ts[0]->shape.ndim) != 0) {
      dt__fail(DT_ERR_SHAPE, "%s: ts[0] has shape %s but %s has shape %s", op, dt__shape_str(&ts[0]->shape, a, sizeof a), name,
               dt__shape_str(&ts[i]->shape, b, sizeof b));
      return NULL;
    }
  }
  s = dt_shape0();
  s.ndim = ts[0]->shape.ndim + 1;
  s.dims[0] = n;
  for (k = 0; k < ts[0]->shape.ndim; k++) s.dims[k + 1] = ts[0]->shape.dims[k];
  if (!(y = dt__new(op, s, ts[0]->dtype, ts[0]->st->device))) return NULL;
  for (i = 0; i < n; i++)
    if (dt__copy_bytes(op, y->st->device, (char *)y->st->ptr + (size_t)i * ts[0]->nbytes, ts[i]->st->device, ts[i]->st->ptr, ts[i]->nbytes) != DT_OK) {
      dt_release(y);
      return NULL;
    }
  return y;
}
DTDEF dt_tensor *dt_stack(const dt_tensor *const *ts, int n) {
  dt_tensor *y = dt__stack(ts, n);
  return y && dt__ag_on_list(ts, n) ? dt__ag_record(y, DT__AG_STACK, "dt_stack", n, ts, NULL) : y;
}

DTDEF dt_status dt_fill_(dt_tensor *t, double v) {
  dt_status s;
  if ((s = dt__check_tensor("dt_fill_", "t", t)) != DT_OK || (s = dt__inplace_check("dt_fill_", "t", t)) != DT_OK) return s;
  if (t->numel == 0) return DT_OK;
  s = dt__run("dt_fill_", t->st->device, dt__be(t->st->device)->fill(t->st->device.index, t->dtype, t->numel, v, t->st->ptr));
  if (s == DT_OK) dt__bump(t);
  return s;
}

/* Two tensors `an` and `bn` of op: valid, on one device, one floating dtype, one shape
   (the checks in this order, each message naming both). */
static dt_status dt__same_float_shape(const char *op, const char *an, const dt_tensor *a, const char *bn,
                                      const dt_tensor *b) {
  dt_status s;
  char sa[200], sb[200];
  if ((s = dt__check_tensor(op, an, a)) != DT_OK || (s = dt__check_tensor(op, bn, b)) != DT_OK) return s;
  if ((s = dt__same_device(op, an, a, bn, b)) != DT_OK || (s = dt__same_dtype(op, an, a, bn, b)) != DT_OK) return s;
  if ((s = dt__float_only(op, an, a)) != DT_OK) return s;
  if (a->shape.ndim != b->shape.ndim || memcmp(a->shape.dims, b->shape.dims, sizeof(int64_t) * (size_t)a->shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: %s has shape %s but %s has shape %s", op, an, dt__shape_str(&a->shape, sa, sizeof sa),
                    bn, dt__shape_str(&b->shape, sb, sizeof sb));
  return DT_OK;
}

DTDEF dt_status dt_axpy_(dt_tensor *y, double alpha, const dt_tensor *x) {
  const char *op = "dt_axpy_";
  dt_status s;
  if ((s = dt__same_float_shape(op, "y", y, "x", x)) != DT_OK || (s = dt__inplace_check(op, "y", y)) != DT_OK) return s;
  if (y->numel == 0) return DT_OK;
  s = dt__run(op, y->st->device, dt__be(y->st->device)->axpy(y->st->device.index, y->dtype, y->numel, alpha, x->st->ptr, y->st->ptr));
  if (s == DT_OK) dt__bump(y);
  return s;
}

/* ---- in-place arithmetic (torch's a.add_(b), a.mul_(s), ...) ---- */

/* a op= b: b broadcast to a's shape, which stays (b may not make it larger); one dtype, no
   promotion; one device; b neither overlapping a's memory other than as a itself (a slice of
   it: disjoint slices of one tensor are fine) nor a tensor that autograd would have to record
   (a changed in place is refused as dt_fill_'s t). */
static dt_status dt__binary_(const char *op, dt__binary_op bop, dt_tensor *a, const dt_tensor *b) {
  dt_shape sh;
  dt__bcast g;
  dt_status s;
  char x[200], y[200];
  if ((s = dt__check_tensor(op, "a", a)) != DT_OK || (s = dt__check_tensor(op, "b", b)) != DT_OK) return s;
  if ((s = dt__same_device(op, "a", a, "b", b)) != DT_OK || (s = dt__same_dtype(op, "a", a, "b", b)) != DT_OK) return s;
  if ((s = dt__no_arith(op, "a", a)) != DT_OK) return s;
  if (bop == DT__B_DIV && (s = dt__float_only(op, "a", a)) != DT_OK) return s;
  if ((s = dt__broadcast(op, &a->shape, &b->shape, &sh, &g)) != DT_OK) return s;
  if (sh.ndim != a->shape.ndim || memcmp(sh.dims, a->shape.dims, sizeof(int64_t) * (size_t)a->shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: a has shape %s, but a and b broadcast to %s: an in-place result keeps a's shape", op,
                    dt__shape_str(&a->shape, x, sizeof x), dt__shape_str(&sh, y, sizeof y));
  if ((a->st->base ? a->st->base : a->st) == (b->st->base ? b->st->base : b->st) && !(a->st->ptr == b->st->ptr && a->nbytes == b->nbytes) &&
      (const char *)a->st->ptr < (const char *)b->st->ptr + b->nbytes && (const char *)b->st->ptr < (const char *)a->st->ptr + a->nbytes)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: b overlaps a's memory without being a itself (a slice of one tensor): the "
                    "result would depend on the order elements are written (pass a copy of b: dt_copyto(b, its device))", op);
  if ((s = dt__inplace_check(op, "a", a)) != DT_OK) return s;
  if (b->requires_grad && !dt__no_grad)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: b requires grad and grad mode is on: an in-place result is not recorded by "
                    "autograd (use the out-of-place operation, or turn grad mode off)", op);
  if (a->numel == 0) return DT_OK;
  s = dt__run(op, a->st->device, dt__be(a->st->device)->binary(a->st->device.index, bop, a->dtype, &g, a->st->ptr, b->st->ptr, a->st->ptr));
  if (s == DT_OK) dt__bump(a);
  return s;
}

DTDEF dt_status dt_add_(dt_tensor *a, const dt_tensor *b) { return dt__binary_("dt_add_", DT__B_ADD, a, b); }
DTDEF dt_status dt_sub_(dt_tensor *a, const dt_tensor *b) { return dt__binary_("dt_sub_", DT__B_SUB, a, b); }
DTDEF dt_status dt_mul_(dt_tensor *a, const dt_tensor *b) { return dt__binary_("dt_mul_", DT__B_MUL, a, b); }
DTDEF dt_status dt_div_(dt_tensor *a, const dt_tensor *b) { return dt__binary_("dt_div_", DT__B_DIV, a, b); }

/* a = p0 a + p1 in place; an integer a takes whole numbers only (its dtype stays) */
static dt_status dt__affine_(const char *op, dt_tensor *a, double p0, double p1) {
  dt_status s;
  if ((s = dt__check_tensor(op, "a", a)) != DT_OK || (s = dt__no_arith(op, "a", a)) != DT_OK) return s;
  if (!dt__is_float(a->dtype) && (!dt__scalar_is_int(p0) || !dt__scalar_is_int(p1)))
    return dt__fail(DT_ERR_DTYPE, "%s: a is %s and the scalar %g is not a whole number: the result could not stay %s "
                    "(convert a with dt_cast)", op, dt_dtype_name(a->dtype), dt__scalar_is_int(p0) ? p1 : p0, dt_dtype_name(a->dtype));
  if ((s = dt__inplace_check(op, "a", a)) != DT_OK) return s;
  if (a->numel == 0) return DT_OK;
  s = dt__run(op, a->st->device, dt__be(a->st->device)->unary(a->st->device.index, DT__U_AFFINE, a->dtype, a->numel, a->st->ptr,
                                                               a->st->ptr, p0, p1));
  if (s == DT_OK) dt__bump(a);
  return s;
}

DTDEF dt_status dt_add_scalar_(dt_tensor *a, double s) { return dt__affine_("dt_add_scalar_", a, 1.0, s); }
DTDEF dt_status dt_mul_scalar_(dt_tensor *a, double s) { return dt__affine_("dt_mul_scalar_", a, s, 0.0); }

/* ---- src/ops/compare.c ---- */
/* Comparisons give DT_BOOL (one byte, 0 or 1) and broadcast with dt__broadcast, the binary ops'
   geometry. Operands of two dtypes are first converted (by the backend's cast, into temporaries)
   to PyTorch's result type: the wider in bool < uint8 < int32 < int64 < float16, bfloat16 < float32 < float64
   (float16 with bfloat16: float32), except
   that a 0-d operand does not widen an operand with dims unless it is of a higher kind (bool <
   integer < float): uint8 (n,) == int64 0-d compares in uint8, as torch.eq does. */

static int dt__dtype_rank(dt_dtype t) {
  switch (t) {
    case DT_BOOL: return 0; case DT_U8: return 1; case DT_I32: return 2; case DT_I64: return 3; case DT_F32: return 5; case DT_F64: return 6;
    case DT_F16: case DT_BF16: return 4; /* float16 with bfloat16: float32, as PyTorch */
  }
  return -1;
}
static int dt__dtype_kind(dt_dtype t) { return t == DT_BOOL ? 0 : dt__is_float(t) ? 2 : 1; }

static dt_dtype dt__result_type(const dt_tensor *a, const dt_tensor *b) {
  int za = a->shape.ndim == 0, zb = b->shape.ndim == 0;
  const dt_tensor *dim, *zero;
  if (a->dtype == b->dtype) return a->dtype;
  if (za == zb) {
    if (dt__is_half(a->dtype) && dt__is_half(b->dtype)) return DT_F32;
    return dt__dtype_rank(a->dtype) > dt__dtype_rank(b->dtype) ? a->dtype : b->dtype;
  }
  dim = za ? b : a; zero = za ? a : b;
  return dt__dtype_kind(zero->dtype) > dt__dtype_kind(dim->dtype) ? zero->dtype : dim->dtype;
}

/* x as dtype t on its device: x itself (one more reference) or a converted copy. */
static dt_tensor *dt__as_dtype(const char *op, const dt_tensor *x, dt_dtype t) {
  dt_tensor *y;
  if (x->dtype == t) { DT__ATOMIC_ADD(&((dt_tensor *)x)->refs, 1); return (dt_tensor *)x; }
  if (!(y = dt__new_like(op, x, t)) || y->numel == 0) return y;
  return dt__done(op, y, dt__be(x->st->device)->cast(x->st->device.index, x->dtype, t, x->numel, x->st->ptr, y->st->ptr));
}

/* y = a op b; swap: b op' a (gt, ge as lt, le). */
static dt_tensor *dt__compare(const char *op, dt__compare_op cop, int swap, const dt_tensor *a, const dt_tensor *b) {
  dt_shape s;
  dt__bcast g;
  dt_tensor *y, *ca = NULL, *cb = NULL;
  dt_dtype ct;
  dt_status rc;
  dt_device d;
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_tensor(op, "b", b) != DT_OK) return NULL;
  if (dt__same_device(op, "a", a, "b", b) != DT_OK) return NULL;
  if (dt__broadcast(op, &a->shape, &b->shape, &s, &g) != DT_OK) return NULL;
  d = a->st->device;
  if (!(y = dt__new(op, s, DT_BOOL, d)) || y->numel == 0) return y;
  ct = dt__result_type(a, b);
  if (!(ca = dt__as_dtype(op, a, ct)) || !(cb = dt__as_dtype(op, b, ct))) { dt_release(ca); dt_release(y); return NULL; }
  if (swap) {
    int k;
    for (k = 0; k < g.ndim; k++) { int64_t t = g.astride[k]; g.astride[k] = g.bstride[k]; g.bstride[k] = t; }
    rc = dt__be(d)->compare(d.index, cop, ct, &g, cb->st->ptr, ca->st->ptr, y->st->ptr);
  } else {
    rc = dt__be(d)->compare(d.index, cop, ct, &g, ca->st->ptr, cb->st->ptr, y->st->ptr);
  }
  y = dt__done(op, y, rc);
  dt_release(ca);
  dt_release(cb);
  return y;
}

DTDEF dt_tensor *dt_eq(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_eq", DT__C_EQ, 0, a, b); }
DTDEF dt_tensor *dt_ne(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_ne", DT__C_NE, 0, a, b); }
DTDEF dt_tensor *dt_lt(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_lt", DT__C_LT, 0, a, b); }
DTDEF dt_tensor *dt_le(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_le", DT__C_LE, 0, a, b); }
DTDEF dt_tensor *dt_gt(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_gt", DT__C_LT, 1, a, b); }
DTDEF dt_tensor *dt_ge(const dt_tensor *a, const dt_tensor *b) { return dt__compare("dt_ge", DT__C_LE, 1, a, b); }

/* sigmoid: e = exp(-|x|), then 1 / (1 + e) for x >= 0 and e / (1 + e) below, so no exp
   overflows (0 and 1 at the ends, NaN stays NaN), in the tensor's own precision. Accuracy
   (tests/test_dtypes.c measures it against long double on every device): within 4 ulp. */
DTDEF dt_tensor *dt_sigmoid(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_sigmoid", DT__U_SIGMOID, a, 0, 0);
  return DT__AG1(y, DT__AG_SIGMOID, "dt_sigmoid", a);
}
/* tanh: libm's tanhf / tanh on the CPU, CUDA's on a GPU (within 4 ulp, measured as sigmoid's;
   +-1 for large |x|). */
DTDEF dt_tensor *dt_tanh(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_tanh", DT__U_TANH, a, 0, 0);
  return DT__AG1(y, DT__AG_TANH, "dt_tanh", a);
}
DTDEF dt_tensor *dt_abs(const dt_tensor *a) {
  const char *op = "dt_abs";
  dt_tensor *y;
  if (!a || a->dtype != DT_U8) {
    y = dt__unary(op, DT__U_ABS, a, 0, 0);
    return DT__AG1(y, DT__AG_ABS, op, a);
  }
  /* uint8: |x| = x, a copy (torch.abs does the same) */
  if (!(y = dt__new_like(op, a, a->dtype))) return NULL;
  if (dt__copy_bytes(op, y->st->device, y->st->ptr, a->st->device, a->st->ptr, a->nbytes) != DT_OK) { dt_release(y); return NULL; }
  return y;
}

DTDEF dt_tensor *dt_empty_like(const dt_tensor *t) {
  if (dt__check_tensor("dt_empty_like", "t", t) != DT_OK) return NULL;
  return dt__new("dt_empty_like", t->shape, t->dtype, t->st->device);
}
DTDEF dt_tensor *dt_zeros_like(const dt_tensor *t) {
  if (dt__check_tensor("dt_zeros_like", "t", t) != DT_OK) return NULL;
  return dt__filled("dt_zeros_like", t->shape, t->dtype, 0.0, t->st->device);
}
DTDEF dt_tensor *dt_ones_like(const dt_tensor *t) {
  if (dt__check_tensor("dt_ones_like", "t", t) != DT_OK) return NULL;
  return dt__filled("dt_ones_like", t->shape, t->dtype, 1.0, t->st->device);
}

/* dt_sum of uint8 or bool: an int64 0-d tensor, as torch.sum. The values go to float64 (a
   temporary of 8 bytes an element), are summed there by the backend's reduction and the sum goes
   to int64: exact, since every partial sum is an integer below 2^53 (255 * numel < 2^53 for any
   tensor that fits in memory). */
static dt_tensor *dt__sum_bytes(const char *op, const dt_tensor *a) {
  dt_tensor *f = NULL, *sf = NULL, *y = NULL;
  const dt__backend *be = dt__be(a->st->device);
  int dev = a->st->device.index;
  if (!(y = dt__new(op, dt_shape0(), DT_I64, a->st->device))) return NULL;
  if (a->numel == 0) return dt__done(op, y, be->fill(dev, DT_I64, 1, 0.0, y->st->ptr));
  if (!(f = dt__as_dtype(op, a, DT_F64))) { dt_release(y); return NULL; }
  if (!(sf = dt__reduce(op, DT__R_SUM, f, 1, f->numel, 1, dt_shape0()))) { dt_release(f); dt_release(y); return NULL; }
  y = dt__done(op, y, be->cast(dev, DT_F64, DT_I64, 1, sf->st->ptr, y->st->ptr));
  dt_release(f);
  dt_release(sf);
  return y;
}

/* ---- src/ops/index.c ---- */
/* A tensor is seen as (outer, len, inner) around the dim in question. Everything
   moves elements of dt_dtype_size bytes, whatever the dtype, through two backend calls:
   copy_strided (slices along dims > 0, cat, permute) and index_select. A slice along dim 0
   is a view: a storage with `base` set, pointing into t's memory (see dt__storage). */

/* dim of an nd-d tensor wrapped into [0, nd) (negatives count from the end); -1 with a message when out of range */
static int dt__wrap_dim(const char *op, const char *name, int dim, int nd) {
  if (nd == 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s %d out of range: a 0-d tensor has no dimensions", op, name, dim);
    return -1;
  }
  if (dim < -nd || dim >= nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s %d out of range for a %d-d tensor (expected %d to %d)", op, name, dim, nd,
             -nd, nd - 1);
    return -1;
  }
  return dim < 0 ? dim + nd : dim;
}

/* The products of the dims before and after dim (wrap-safe: only used when the tensor is not empty). */
static void dt__around(const dt_shape *s, int dim, int64_t *outer, int64_t *inner) {
  uint64_t o = 1, in = 1;
  int i;
  for (i = 0; i < dim; i++) o *= (uint64_t)s->dims[i];
  for (i = dim + 1; i < s->ndim; i++) in *= (uint64_t)s->dims[i];
  *outer = (int64_t)o;
  *inner = (int64_t)in;
}

/* y[sum i_d bstride_d] = x[sum i_d astride_d] over dims (g->ndim of them, g->numel elements, > 0):
   size-1 dims dropped, a dim joined into the next where both strides chain; a plain copy when
   that leaves one contiguous run. x and y are on device d. */
static dt_status dt__strided_copy(const char *op, dt_device d, size_t es, dt__bcast *g, const void *x, void *y) {
  dt__bcast m;
  int i, k = 0;
  memset(&m, 0, sizeof m);
  m.numel = g->numel;
  for (i = 0; i < g->ndim; i++) {
    if (g->dims[i] == 1) continue;
    if (k > 0 && m.astride[k - 1] == g->astride[i] * g->dims[i] && m.bstride[k - 1] == g->bstride[i] * g->dims[i]) {
      m.dims[k - 1] *= g->dims[i];
      m.astride[k - 1] = g->astride[i];
      m.bstride[k - 1] = g->bstride[i];
      continue;
    }
    m.dims[k] = g->dims[i]; m.astride[k] = g->astride[i]; m.bstride[k] = g->bstride[i];
    k++;
  }
  if (k == 0) { k = 1; m.dims[0] = 1; m.astride[0] = 1; m.bstride[0] = 1; }
  m.ndim = k;
  m.contiguous = k == 1 && m.astride[0] == 1 && m.bstride[0] == 1;
  if (m.contiguous) return dt__copy_bytes(op, d, y, d, x, (size_t)m.numel * es);
  return dt__run(op, d, dt__be(d)->copy_strided(d.index, es, &m, x, y));
}

static dt_tensor *dt__slice(const dt_tensor *t, int dim, int64_t start, int64_t end) {
  const char *op = "dt_slice";
  int64_t n, outer, inner, numel;
  size_t es, nbytes;
  dt_shape ys;
  dt_device d;
  dt_tensor *y;
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  if ((dim = dt__wrap_dim(op, "dim", dim, t->shape.ndim)) < 0) return NULL;
  n = t->shape.dims[dim];
  /* Python's t[start:end]: negatives count from the end, then both clamp to [0, n] */
  if (start < 0) start += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  if (end < 0) end += n;
  if (end < 0) end = 0;
  if (end > n) end = n;
  if (end < start) end = start;
  ys = t->shape;
  ys.dims[dim] = end - start;
  if (dt__check_shape(op, &ys, t->dtype, &numel, &nbytes) != DT_OK) return NULL;
  es = dt_dtype_size(t->dtype);
  d = t->st->device;
  if (dim == 0) { /* a view: rows start .. end - 1 of t's memory */
    dt__storage *root = t->st->base ? t->st->base : t->st, *st;
    size_t row = n > 0 ? (size_t)(t->numel / n) * es : 0;
    if (!(st = (dt__storage *)DT_MALLOC(sizeof(dt__storage)))) {
      dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a tensor header", op);
      return NULL;
    }
    st->refs = 1; st->device = d; st->nbytes = nbytes;
    st->ptr = (char *)t->st->ptr + (size_t)start * row;
    st->foreign = 0; st->deleter = NULL; st->del_data = st->del_ctx = NULL;
    st->base = root; st->version = 0;
    DT__ATOMIC_ADD(&root->refs, 1);
    return dt__wrap(op, st, &ys, t->dtype, numel, nbytes); /* on failure releases st, and so root */
  }
  if (!(y = dt__new(op, ys, t->dtype, d)) || numel == 0) return y;
  {
    /* y: (outer, end - start, inner) from t: (outer, n, inner), rows start .. end - 1 */
    dt__bcast g;
    dt__around(&t->shape, dim, &outer, &inner);
    memset(&g, 0, sizeof g);
    g.ndim = 2; g.numel = numel;
    g.dims[0] = outer; g.dims[1] = (end - start) * inner;
    g.astride[0] = n * inner; g.astride[1] = 1;
    g.bstride[0] = (end - start) * inner; g.bstride[1] = 1;
    if (dt__strided_copy(op, d, es, &g, (const char *)t->st->ptr + (size_t)(start * inner) * es, y->st->ptr) != DT_OK) {
      dt_release(y);
      return NULL;
    }
  }
  return y;
}
DTDEF dt_tensor *dt_slice(const dt_tensor *t, int dim, int64_t start, int64_t end) {
  dt_tensor *y = dt__slice(t, dim, start, end);
  if (y && DT__AG_ON(t)) { /* the start as dt__slice clamped it */
    int64_t n = t->shape.dims[dim < 0 ? dim + t->shape.ndim : dim];
    if (start < 0) start += n;
    if (start < 0) start = 0;
    if (start > n) start = n;
    y = dt__ag_record1a(y, DT__AG_SLICE, "dt_slice", t, 0, dim, start, NULL);
  }
  return y;
}

static dt_tensor *dt__index_select(const dt_tensor *t, int dim, const dt_tensor *index) {
  const char *op = "dt_index_select";
  int64_t n, k, outer = 1, inner = 1, j;
  dt_shape ys;
  dt_device d;
  dt_tensor *y;
  char sb[200];
  dt_status s;
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__check_tensor(op, "index", index) != DT_OK) return NULL;
  if (dt__same_device(op, "t", t, "index", index) != DT_OK) return NULL;
  if (index->dtype != DT_I64) {
    dt__fail(DT_ERR_DTYPE, "%s: index is %s, but it must be int64 (convert it with dt_cast)", op, dt_dtype_name(index->dtype));
    return NULL;
  }
  if (index->shape.ndim > 1) {
    dt__fail(DT_ERR_SHAPE, "%s: index must be 1-d (k,) or 0-d, got shape %s", op, dt__shape_str(&index->shape, sb, sizeof sb));
    return NULL;
  }
  k = index->numel;
  d = t->st->device;
  ys = t->shape;
  if (t->shape.ndim == 0) { /* PyTorch: a 0-d t takes dim 0 (or -1) and one index, 0 */
    if (dim != 0 && dim != -1) {
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a 0-d tensor (expected -1 or 0)", op, dim);
      return NULL;
    }
    if (k != 1) {
      dt__fail(DT_ERR_SHAPE, "%s: t is 0-d, so index must hold one value, but it holds %lld", op, (long long)k);
      return NULL;
    }
    n = 1;
  } else {
    if ((dim = dt__wrap_dim(op, "dim", dim, t->shape.ndim)) < 0) return NULL;
    n = t->shape.dims[dim];
    ys.dims[dim] = k;
  }
  if (k > 0 && n == 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index holds %lld values, but dimension %d of t (shape %s) has size 0, so none is in range",
             op, (long long)k, dim, dt__shape_str(&t->shape, sb, sizeof sb));
    return NULL;
  }
  /* the index is in host memory: every value checked now (a CPU graph checks them as it replays) */
  if (d.type == DT_CPU && !DT__ATOMIC_LOAD(&dt__cpu_capturing))
    for (j = 0; j < k; j++) {
      int64_t v = ((const int64_t *)index->st->ptr)[j];
      if (v < 0 || v >= n) {
        dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index[%lld] = %lld is out of range for dimension %d of t, of size %lld (expected 0 to %lld)",
                 op, (long long)j, (long long)v, dim, (long long)n, (long long)(n - 1));
        return NULL;
      }
    }
  if (!(y = dt__new(op, ys, t->dtype, d)) || k == 0) return y;
  /* on a GPU an empty y still has its indices checked (the backend's kernel records a bad one) */
  if (y->numel == 0 && d.type == DT_CPU) return y;
  if (t->shape.ndim > 0 && t->numel > 0) dt__around(&t->shape, dim, &outer, &inner);
  else if (t->shape.ndim > 0) { outer = 0; inner = 0; }
  s = dt__be(d)->index_select(d.index, dt_dtype_size(t->dtype), outer, n, inner, (const int64_t *)index->st->ptr, k,
                              t->st->ptr, y->st->ptr);
  return dt__done(op, y, s);
}
DTDEF dt_tensor *dt_index_select(const dt_tensor *t, int dim, const dt_tensor *index) {
  dt_tensor *y = dt__index_select(t, dim, index);
  if (y && DT__AG_ON(t)) {
    const dt_tensor *in[2];
    dt__ag_args g;
    in[0] = t; in[1] = index;
    g.p = 0; g.dim = dim; g.start = 0; g.perm = NULL;
    y = dt__ag_record(y, DT__AG_INDEX_SELECT, "dt_index_select", 2, in, &g);
  }
  return y;
}

/* torch.cat's legacy rule: a 1-d tensor with no elements, (0,), is skipped whatever the others' shapes */
static int dt__cat_skipped(const dt_tensor *t) { return t->shape.ndim == 1 && t->shape.dims[0] == 0; }

static dt_tensor *dt__cat(const dt_tensor *const *ts, int n, int dim) {
  const char *op = "dt_cat";
  const dt_tensor *ref = NULL;
  int i, r, k, nd;
  int64_t total = 0, off = 0, outer, inner;
  dt_shape ys;
  dt_device d;
  dt_tensor *y;
  char name[24], a[200], b[200];
  if (!ts) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: ts is NULL", op); return NULL; }
  if (n <= 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: expected at least one tensor, got n = %d", op, n); return NULL; }
  for (i = 0; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__check_tensor(op, name, ts[i]) != DT_OK) return NULL;
  }
  for (i = 1; i < n; i++) { /* devices first, as every operation checks them */
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_device(op, "ts[0]", ts[0], name, ts[i]) != DT_OK) return NULL;
  }
  for (i = 1; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_dtype(op, "ts[0]", ts[0], name, ts[i]) != DT_OK) return NULL;
  }
  d = ts[0]->st->device;
  for (r = 0; r < n && dt__cat_skipped(ts[r]); r++) {}
  if (r == n) return dt__new(op, dt_shape1(0), ts[0]->dtype, d); /* all (0,): PyTorch ignores dim then */
  ref = ts[r];
  for (i = 0; i < n; i++)
    if (ts[i]->shape.ndim == 0) {
      dt__fail(DT_ERR_SHAPE, "%s: ts[%d] is 0-d, and a 0-d tensor cannot be concatenated (dt_stack stacks them)", op, i);
      return NULL;
    }
  nd = ref->shape.ndim;
  if ((dim = dt__wrap_dim(op, "dim", dim, nd)) < 0) return NULL;
  for (i = 0; i < n; i++) {
    const dt_shape *s = &ts[i]->shape;
    if (dt__cat_skipped(ts[i])) continue;
    for (k = 0; k < nd; k++)
      if (s->ndim != nd || (k != dim && s->dims[k] != ref->shape.dims[k])) {
        dt__fail(DT_ERR_SHAPE, "%s: ts[%d] has shape %s but ts[%d] has shape %s: sizes must match except in dimension %d", op, r,
                 dt__shape_str(&ref->shape, a, sizeof a), i, dt__shape_str(s, b, sizeof b), dim);
        return NULL;
      }
    if (s->dims[dim] > INT64_MAX - total) {
      dt__fail(DT_ERR_SHAPE, "%s: the sizes along dimension %d add up past int64", op, dim);
      return NULL;
    }
    total += s->dims[dim];
  }
  ys = ref->shape;
  ys.dims[dim] = total;
  if (!(y = dt__new(op, ys, ref->dtype, d)) || y->numel == 0) return y;
  dt__around(&ys, dim, &outer, &inner);
  for (i = 0; i < n; i++) {
    const dt_tensor *x = ts[i];
    size_t es = dt_dtype_size(x->dtype);
    dt__bcast g;
    if (dt__cat_skipped(x)) continue;
    if (x->numel > 0) {
      /* y[o, off + j, c] = x[o, j, c]: outer rows of len * inner elements, len * inner apart in x, total * inner in y */
      memset(&g, 0, sizeof g);
      g.ndim = 2; g.numel = x->numel;
      g.dims[0] = outer; g.dims[1] = x->shape.dims[dim] * inner;
      g.astride[0] = g.dims[1]; g.astride[1] = 1;
      g.bstride[0] = total * inner; g.bstride[1] = 1;
      if (dt__strided_copy(op, d, es, &g, x->st->ptr, (char *)y->st->ptr + (size_t)(off * inner) * es) != DT_OK) {
        dt_release(y);
        return NULL;
      }
    }
    off += x->shape.dims[dim];
  }
  return y;
}
DTDEF dt_tensor *dt_cat(const dt_tensor *const *ts, int n, int dim) {
  dt_tensor *y = dt__cat(ts, n, dim);
  if (y && dt__ag_on_list(ts, n)) {
    dt__ag_args g;
    g.p = 0; g.dim = dim; g.start = 0; g.perm = NULL;
    y = dt__ag_record(y, DT__AG_CAT, "dt_cat", n, ts, &g);
  }
  return y;
}

static dt_tensor *dt__permute(const dt_tensor *t, const int *dims) {
  const char *op = "dt_permute";
  int nd, i, p[DT_MAX_DIMS], seen[DT_MAX_DIMS];
  int64_t xs[DT_MAX_DIMS], ystr;
  dt_shape ys;
  dt__bcast g;
  dt_tensor *y;
  char name[24];
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  nd = t->shape.ndim;
  if (!dims && nd > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dims is NULL for a %d-d tensor", op, nd); return NULL; }
  memset(seen, 0, sizeof seen);
  for (i = 0; i < nd; i++) {
    snprintf(name, sizeof name, "dims[%d]", i);
    if ((p[i] = dt__wrap_dim(op, name, dims[i], nd)) < 0) return NULL;
    if (seen[p[i]]) {
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dims[%d] = %d repeats dimension %d: dims must be a permutation of 0..%d", op, i,
               dims[i], p[i], nd - 1);
      return NULL;
    }
    seen[p[i]] = 1;
  }
  ys = t->shape;
  for (i = 0; i < nd; i++) ys.dims[i] = t->shape.dims[p[i]];
  if (!(y = dt__new(op, ys, t->dtype, t->st->device)) || y->numel == 0) return y;
  /* y[i_0, ..] = t[.., i_k at dim p[k], ..]: y's dim k walks t with t's stride of dim p[k] */
  for (i = nd - 1, ystr = 1; i >= 0; i--) { xs[i] = ystr; ystr *= t->shape.dims[i]; }
  memset(&g, 0, sizeof g);
  g.ndim = nd > 0 ? nd : 1; g.numel = y->numel;
  if (nd == 0) { g.dims[0] = 1; g.astride[0] = 1; g.bstride[0] = 1; }
  for (i = nd - 1, ystr = 1; i >= 0; i--) {
    g.dims[i] = ys.dims[i];
    g.astride[i] = xs[p[i]];
    g.bstride[i] = ystr;
    ystr *= ys.dims[i];
  }
  if (dt__strided_copy(op, t->st->device, dt_dtype_size(t->dtype), &g, t->st->ptr, y->st->ptr) != DT_OK) {
    dt_release(y);
    return NULL;
  }
  return y;
}
DTDEF dt_tensor *dt_permute(const dt_tensor *t, const int *dims) {
  dt_tensor *y = dt__permute(t, dims);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_PERMUTE, "dt_permute", t, 0, 0, 0, dims) : y;
}

/* ---- src/ops/classify.c ---- */
/* dt_argmax/dt_argmin, dt_max_dim/dt_min_dim, dt_max/dt_min, dt_softmax/dt_log_softmax and
   dt_cross_entropy with its gradient. Each works on the (outer, len, inner) geometry of its dim,
   as dt_sum_dim does, through the backend's arg_reduce, softmax and cross_entropy. */

/* t's geometry around `dim` (< 0 counts from the end; a 0-d t is (1, 1, 1) with dim 0 or -1),
   and the shape with dim removed. */
static dt_status dt__dim_geom(const char *op, const dt_tensor *t, int dim, int64_t *outer, int64_t *len,
                              int64_t *inner, dt_shape *ys) {
  int nd = t->shape.ndim, i, j, lo = nd ? -nd : -1, hi = nd ? nd - 1 : 0;
  uint64_t o = 1, in = 1; /* wrap-safe: an empty t may have huge dims; dt__new checks ys */
  if (dim < lo || dim > hi)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor (expected %d to %d)", op, dim, nd, lo, hi);
  *ys = dt_shape0();
  if (nd == 0) { *outer = *len = *inner = 1; return DT_OK; }
  if (dim < 0) dim += nd;
  for (i = 0, j = 0; i < nd; i++) {
    if (i < dim) o *= (uint64_t)t->shape.dims[i];
    if (i > dim) in *= (uint64_t)t->shape.dims[i];
    if (i != dim) ys->dims[j++] = t->shape.dims[i];
  }
  ys->ndim = nd - 1;
  *outer = (int64_t)o; *len = t->shape.dims[dim]; *inner = (int64_t)in;
  return DT_OK;
}

/* values (idx 0) or indices (idx 1) of the max (min 0) or min (min 1) over dim; all: over every element */
static dt_tensor *dt__arg_reduce(const char *op, int min, int idx, int all, const dt_tensor *t, int dim) {
  int64_t outer = 1, len = 0, inner = 1;
  dt_shape ys = dt_shape0();
  dt_tensor *y;
  char sb[200];
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__float_only(op, "t", t) != DT_OK) return NULL;
  if (all) {
    len = t->numel;
    if (len == 0) {
      dt__fail(DT_ERR_SHAPE, "%s: t has no elements (shape %s): the %s of nothing is undefined", op,
               dt__shape_str(&t->shape, sb, sizeof sb), min ? "min" : "max");
      return NULL;
    }
  } else {
    if (dt__dim_geom(op, t, dim, &outer, &len, &inner, &ys) != DT_OK) return NULL;
    if (len == 0) {
      dt__fail(DT_ERR_SHAPE, "%s: expected reduction dim %d to have non-zero size, but t has shape %s", op, dim,
               dt__shape_str(&t->shape, sb, sizeof sb));
      return NULL;
    }
  }
  if (!(y = dt__new(op, ys, idx ? DT_I64 : t->dtype, t->st->device))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(t->st->device)->arg_reduce(t->st->device.index, min, t->dtype, outer, len, inner, t->st->ptr,
                                                           idx ? NULL : y->st->ptr, idx ? (int64_t *)y->st->ptr : NULL));
}

DTDEF dt_tensor *dt_argmax(const dt_tensor *t, int dim) { return dt__arg_reduce("dt_argmax", 0, 1, 0, t, dim); }
DTDEF dt_tensor *dt_argmin(const dt_tensor *t, int dim) { return dt__arg_reduce("dt_argmin", 1, 1, 0, t, dim); }
DTDEF dt_tensor *dt_max_dim(const dt_tensor *t, int dim) {
  dt_tensor *y = dt__arg_reduce("dt_max_dim", 0, 0, 0, t, dim);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_MAX_DIM, "dt_max_dim", t, 0, dim, 0, NULL) : y;
}
DTDEF dt_tensor *dt_min_dim(const dt_tensor *t, int dim) {
  dt_tensor *y = dt__arg_reduce("dt_min_dim", 1, 0, 0, t, dim);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_MIN_DIM, "dt_min_dim", t, 0, dim, 0, NULL) : y;
}
DTDEF dt_tensor *dt_max(const dt_tensor *t) {
  dt_tensor *y = dt__arg_reduce("dt_max", 0, 0, 1, t, 0);
  return DT__AG1(y, DT__AG_MAX, "dt_max", t);
}
DTDEF dt_tensor *dt_min(const dt_tensor *t) {
  dt_tensor *y = dt__arg_reduce("dt_min", 1, 0, 1, t, 0);
  return DT__AG1(y, DT__AG_MIN, "dt_min", t);
}

static dt_tensor *dt__softmax(const char *op, int lg, const dt_tensor *t, int dim) {
  int64_t outer = 0, len = 0, inner = 0; /* set by dt__dim_geom (zeros: GCC -O3 cannot tell) */
  dt_shape ys;
  dt_tensor *y;
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__float_only(op, "t", t) != DT_OK) return NULL;
  if (dt__dim_geom(op, t, dim, &outer, &len, &inner, &ys) != DT_OK) return NULL;
  if (!(y = dt__new_like(op, t, t->dtype))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(t->st->device)->softmax(t->st->device.index, lg, t->dtype, outer, len, inner, t->st->ptr, y->st->ptr));
}
/* autocast's float32 list: softmax and log_softmax (lg) of a half t in F32 */
static dt_tensor *dt__autocast_softmax(int lg, const dt_tensor *t, int dim) {
  dt_tensor *ct = dt_cast(t, DT_F32), *y = ct ? (lg ? dt_log_softmax(ct, dim) : dt_softmax(ct, dim)) : NULL;
  dt_release(ct);
  return y;
}
DTDEF dt_tensor *dt_softmax(const dt_tensor *t, int dim) {
  dt_tensor *y;
  if (dt__autocast_up(t, NULL)) return dt__autocast_softmax(0, t, dim);
  y = dt__softmax("dt_softmax", 0, t, dim);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_SOFTMAX, "dt_softmax", t, 0, dim, 0, NULL) : y;
}
DTDEF dt_tensor *dt_log_softmax(const dt_tensor *t, int dim) {
  dt_tensor *y;
  if (dt__autocast_up(t, NULL)) return dt__autocast_softmax(1, t, dim);
  y = dt__softmax("dt_log_softmax", 1, t, dim);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_LOG_SOFTMAX, "dt_log_softmax", t, 0, dim, 0, NULL) : y;
}

/* The class-index losses' inputs (cross_entropy's logits, nll_loss's log_probs): x (n, c)
   floating, target I64 (n,), on one device; on the CPU every label in [0, c), checked now (the
   GPU checks on the device; a CPU graph, as it replays). *n, *c: x's sizes. */
static dt_status dt__check_class_target(const char *op, const char *xname, const dt_tensor *x, const dt_tensor *target,
                                        int64_t *n, int64_t *c) {
  char sa[200], sb[200];
  dt_status s;
  if ((s = dt__check_tensor(op, xname, x)) != DT_OK || (s = dt__check_tensor(op, "target", target)) != DT_OK) return s;
  if ((s = dt__same_device(op, xname, x, "target", target)) != DT_OK) return s;
  if ((s = dt__float_only(op, xname, x)) != DT_OK) return s;
  if (target->dtype != DT_I64)
    return dt__fail(DT_ERR_DTYPE, "%s: target must be int64 (class indices), got %s", op, dt_dtype_name(target->dtype));
  if (x->shape.ndim != 2 || target->shape.ndim != 1 || target->shape.dims[0] != x->shape.dims[0])
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s (n, c) and target (n,), got %s and %s", op, xname,
                    dt__shape_str(&x->shape, sa, sizeof sa), dt__shape_str(&target->shape, sb, sizeof sb));
  *n = x->shape.dims[0]; *c = x->shape.dims[1];
  if (x->st->device.type == DT_CPU && !DT__ATOMIC_LOAD(&dt__cpu_capturing)) {
    const int64_t *lab = (const int64_t *)target->st->ptr;
    int64_t i;
    for (i = 0; i < *n; i++)
      if (lab[i] < 0 || lab[i] >= *c)
        return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: target[%lld] = %lld is out of range for %lld classes (expected 0 <= label < %lld)",
                        op, (long long)i, (long long)lab[i], (long long)*c, (long long)*c);
  }
  return DT_OK;
}

static dt_tensor *dt__cross_entropy(const char *op, int grad, const dt_tensor *logits, const dt_tensor *target) {
  int64_t n, c;
  dt_tensor *y;
  if (dt__check_class_target(op, "logits", logits, target, &n, &c) != DT_OK) return NULL;
  if (!(y = dt__new(op, grad ? logits->shape : dt_shape0(), logits->dtype, logits->st->device))) return NULL;
  if (n == 0) { /* the mean of no losses is NaN, as PyTorch's; the gradient is empty */
    if (grad || y->numel == 0) return y;
    return dt__done(op, y, dt__be(y->st->device)->fill(y->st->device.index, y->dtype, 1, NAN, y->st->ptr));
  }
  return dt__done(op, y, dt__be(logits->st->device)->cross_entropy(logits->st->device.index, grad, logits->dtype, n, c, logits->st->ptr,
                                                                   (const int64_t *)target->st->ptr, y->st->ptr));
}
DTDEF dt_tensor *dt_cross_entropy(const dt_tensor *logits, const dt_tensor *target) {
  dt_tensor *y;
  if (dt__autocast_up(logits, NULL)) { /* autocast: in F32 */
    dt_tensor *cl = dt_cast(logits, DT_F32);
    y = cl ? dt_cross_entropy(cl, target) : NULL;
    dt_release(cl);
    return y;
  }
  y = dt__cross_entropy("dt_cross_entropy", 0, logits, target);
  return y && DT__AG_ON(logits) ? dt__ag_record2(y, DT__AG_CROSS_ENTROPY, "dt_cross_entropy", logits, target) : y;
}
DTDEF dt_tensor *dt_cross_entropy_grad(const dt_tensor *logits, const dt_tensor *target) {
  return dt__cross_entropy("dt_cross_entropy_grad", 1, logits, target);
}

/* ---- src/ops/conv.c ---- */
/* dt_f_conv2d and its backward, and 2-d max, average and adaptive average pooling with
   theirs. A convolution is im2col and one gemm on any backend: a block of images is unfolded
   into col (c kh kw, images, oh ow) in one scratch tensor on the device (at most
   DT__CONV_COL_BYTES, one image at least), so each group's weights (oc / groups,
   c kh kw / groups) multiply its rows of col for every image of the block at once, the groups
   in one batched gemm; the product, (oc, images, oh ow), goes to y's layout with the bias in one
   strided pass. The weight gradient is one gemm per block (beta 1 after the first) against gy's
   block in that layout, the input gradient a gemm into col that col2im folds back (or, at unit
   strides, a convolution of gy: dt__conv_gx_as_conv), the bias gradient two sums. A backend with a convolution library (the CUDA backend built with
   DEVTENSOR_CUDNN: cuDNN) computes the forward and the input and weight gradients through it
   instead, wherever it takes the case; the bias stays a separate add, its gradient the same sums. */

#define DT__CONV_COL_BYTES ((int64_t)32 << 20)

/* x: a 4-d F32/F64 tensor (n, c, h, w) with c, h and w above 0 */
static dt_status dt__check_images(const char *op, const char *name, const dt_tensor *x) {
  char sb[200];
  if (x->shape.ndim != 4)
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s to be 4-d (n, c, h, w), got shape %s", op, name,
                    dt__shape_str(&x->shape, sb, sizeof sb));
  if (x->shape.dims[1] == 0 || x->shape.dims[2] == 0 || x->shape.dims[3] == 0)
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s to have non-zero channels, height and width, got shape %s", op, name,
                    dt__shape_str(&x->shape, sb, sizeof sb));
  return DT_OK;
}

/* one output size, (in + 2 p - d (k - 1) - 1) / s + 1; -1 when below 1 (the input smaller than the kernel) */
static int64_t dt__conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  /* in is a tensor's dim, p and d ints, k a dim: compared in double first, so that d (k - 1) cannot wrap */
  if ((double)d * (double)(k - 1) >= (double)in + 2.0 * (double)p) return -1;
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* The checks every convolution call makes (gy: NULL for the forward), in their order: NULLs,
   devices, dtypes, the int arguments, shapes. Fills g. */
static dt_status dt__conv_check(const char *op, const dt_tensor *gy, const dt_tensor *x, const dt_tensor *w, const dt_tensor *b,
                                int sh, int sw, int ph, int pw, int dh, int dw, int groups, dt__conv2d *g) {
  char sx[200], sw_[200], sy[200];
  int64_t kh, kw;
  if (dt__check_tensor(op, "x", x) != DT_OK || dt__check_tensor(op, "w", w) != DT_OK) return dt_last_status();
  if (dt__same_device(op, "x", x, "w", w) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (b && dt__same_device(op, "x", x, "b", b) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (gy && dt__same_device(op, "x", x, "grad_output", gy) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (dt__float_only(op, "x", x) != DT_OK || dt__same_dtype(op, "x", x, "w", w) != DT_OK) return DT_ERR_DTYPE;
  if (b && dt__same_dtype(op, "x", x, "b", b) != DT_OK) return DT_ERR_DTYPE;
  if (gy && dt__same_dtype(op, "x", x, "grad_output", gy) != DT_OK) return DT_ERR_DTYPE;
  if (sh < 1 || sw < 1)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: stride must be at least 1, got (%d, %d)", op, sh, sw);
  if (ph < 0 || pw < 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: padding must be non-negative, got (%d, %d)", op, ph, pw);
  if (dh < 1 || dw < 1)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dilation must be at least 1, got (%d, %d)", op, dh, dw);
  if (groups < 1) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: groups must be at least 1, got %d", op, groups);
  if (dt__check_images(op, "x", x) != DT_OK) return DT_ERR_SHAPE;
  dt__shape_str(&x->shape, sx, sizeof sx);
  dt__shape_str(&w->shape, sw_, sizeof sw_);
  if (w->shape.ndim != 4 || w->shape.dims[0] == 0 || w->shape.dims[2] == 0 || w->shape.dims[3] == 0)
    return dt__fail(DT_ERR_SHAPE, "%s: expected w to be 4-d (out_channels, in_channels / groups, kh, kw) with every size above 0, got shape %s",
                    op, sw_);
  if (x->shape.dims[1] % groups != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: groups %d does not divide x's %lld channels (x: %s)", op, groups,
                    (long long)x->shape.dims[1], sx);
  if (w->shape.dims[0] % groups != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: groups %d does not divide w's %lld output channels (w: %s)", op, groups,
                    (long long)w->shape.dims[0], sw_);
  if (w->shape.dims[1] * groups != x->shape.dims[1])
    return dt__fail(DT_ERR_SHAPE, "%s: expected w's dim 1 to be x's channels / groups = %lld / %d = %lld, got w %s for x %s", op,
                    (long long)x->shape.dims[1], groups, (long long)(x->shape.dims[1] / groups), sw_, sx);
  if (b && (b->shape.ndim != 1 || b->shape.dims[0] != w->shape.dims[0]))
    return dt__fail(DT_ERR_SHAPE, "%s: expected b of shape (%lld,) (w's output channels), got %s", op, (long long)w->shape.dims[0],
                    dt__shape_str(&b->shape, sy, sizeof sy));
  memset(g, 0, sizeof *g);
  kh = w->shape.dims[2]; kw = w->shape.dims[3];
  g->n = x->shape.dims[0]; g->c = x->shape.dims[1]; g->h = x->shape.dims[2]; g->w = x->shape.dims[3];
  g->oc = w->shape.dims[0]; g->kh = kh; g->kw = kw;
  g->sh = sh; g->sw = sw; g->ph = ph; g->pw = pw; g->dh = dh; g->dw = dw; g->groups = groups;
  if ((g->oh = dt__conv_out(g->h, kh, sh, ph, dh)) < 1 || (g->ow = dt__conv_out(g->w, kw, sw, pw, dw)) < 1)
    return dt__fail(DT_ERR_SHAPE,
                    "%s: input smaller than the kernel: x %s padded by (%d, %d) against kernel (%lld, %lld) dilated by (%d, %d)",
                    op, sx, ph, pw, (long long)kh, (long long)kw, dh, dw);
  if (gy && (gy->shape.ndim != 4 || gy->shape.dims[0] != g->n || gy->shape.dims[1] != g->oc || gy->shape.dims[2] != g->oh ||
             gy->shape.dims[3] != g->ow))
    return dt__fail(DT_ERR_SHAPE, "%s: expected grad_output of shape (%lld, %lld, %lld, %lld) (the output's), got %s", op,
                    (long long)g->n, (long long)g->oc, (long long)g->oh, (long long)g->ow,
                    dt__shape_str(&gy->shape, sy, sizeof sy));
  return DT_OK;
}

/* The images per block, and two scratch tensors for a block: col (c kh kw, nb, oh ow) and
   tmp (oc, nb, oh ow), the product before it goes to y's layout (or gy in that layout). Each is
   at most DT__CONV_COL_BYTES, or one image's. */
static dt_status dt__conv_scratch(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, int64_t *nb, dt_tensor **col,
                                  dt_tensor **tmp) {
  const double ckk = (double)g->c * (double)g->kh * (double)g->kw, l = (double)g->oh * (double)g->ow;
  const double per = (ckk > (double)g->oc ? ckk : (double)g->oc) * l; /* the larger scratch's elements per image */
  const size_t es = dt__dtype_bytes(t);
  int64_t k;
  *col = *tmp = NULL;
  if (per * (double)es > 4e18)
    return dt__fail(DT_ERR_SHAPE, "%s: too large: one image unfolds into %.0f elements", op, per);
  k = (int64_t)per;
  *nb = k * (int64_t)es >= DT__CONV_COL_BYTES ? 1 : DT__CONV_COL_BYTES / (k * (int64_t)es);
  if (*nb > g->n) *nb = g->n;
  if (*nb < 1) *nb = 1;
  if (!(*col = dt__new(op, dt_shape1(*nb * (int64_t)ckk * g->oh * g->ow), t, d)) ||
      !(*tmp = dt__new(op, dt_shape1(*nb * g->oc * g->oh * g->ow), t, d))) {
    dt_release(*col);
    *col = NULL;
    return dt_last_status();
  }
  return DT_OK;
}

/* y (m, oc, l) = tp (oc, m, l), plus b[o] when b: one strided pass */
static dt_status dt__conv_to_y(const char *op, dt_device d, dt_dtype t, int64_t m, int64_t oc, int64_t l, const void *tp,
                               const void *b, void *y) {
  dt__bcast bc;
  memset(&bc, 0, sizeof bc);
  bc.ndim = 3; bc.numel = m * oc * l;
  bc.dims[0] = m; bc.dims[1] = oc; bc.dims[2] = l;
  bc.astride[0] = l; bc.astride[1] = m * l; bc.astride[2] = 1;
  bc.bstride[1] = b ? 1 : 0;
  return dt__run(op, d, dt__be(d)->binary(d.index, b ? DT__B_ADD : DT__B_COPY_A, t, &bc, tp, b ? b : tp, y));
}

/* Through the backend's convolution library (cuDNN, src/cuda/cudnn.cu), over the batch in blocks
   of images whose x and y each hold fewer than 2^31 elements (the library's int sizes); a first
   block it refuses is halved, down to one image. dir 0: y = conv(x = a, w = b); 1: gx from
   w = a and gy = b; 2: gw from x = a and gy = b, the blocks after the first adding to it (beta 1),
   as the im2col path's gemm does. DT_ERR_UNSUPPORTED, no error set, where the backend has no
   library or it refuses the case: the caller then takes im2col + gemm, which overwrites every
   output whatever a refused later block left. */
static dt_status dt__conv_lib(const char *op, int dir, const dt__conv2d *g, dt_dtype t, dt_device d, const void *a, const void *b,
                              void *out) {
  const dt__backend *be = dt__be(d);
  const size_t es = dt__dtype_bytes(t);
  const int64_t xi = g->c * g->h * g->w, yi = g->oc * g->oh * g->ow, big = xi > yi ? xi : yi;
  int64_t nb = big >= (int64_t)INT32_MAX ? 1 : (int64_t)INT32_MAX / big, n0 = 0;
  if (!(dir == 0 ? be->conv2d_forward != NULL : dir == 1 ? be->conv2d_backward_data != NULL : be->conv2d_backward_filter != NULL))
    return DT_ERR_UNSUPPORTED;
  if (nb > g->n) nb = g->n;
  while (n0 < g->n) {
    dt__conv2d gb = *g;
    dt_status s;
    gb.n = g->n - n0 < nb ? g->n - n0 : nb;
    if (dir == 0)
      s = be->conv2d_forward(d.index, t, &gb, (const char *)a + (size_t)(n0 * xi) * es, b, (char *)out + (size_t)(n0 * yi) * es);
    else if (dir == 1)
      s = be->conv2d_backward_data(d.index, t, &gb, a, (const char *)b + (size_t)(n0 * yi) * es, (char *)out + (size_t)(n0 * xi) * es);
    else
      s = be->conv2d_backward_filter(d.index, t, &gb, (const char *)a + (size_t)(n0 * xi) * es, (const char *)b + (size_t)(n0 * yi) * es,
                                     n0 == 0 ? 0.0 : 1.0, out);
    if (s == DT_ERR_UNSUPPORTED && n0 == 0 && nb > 1) { /* smaller blocks */
      nb = (nb + 1) / 2;
      continue;
    }
    if (s == DT_ERR_UNSUPPORTED) return s;
    if (s != DT_OK) return dt__run(op, d, s);
    n0 += gb.n;
  }
  return DT_OK;
}

/* y (n, oc, l) += b[o], in place */
static dt_status dt__conv_add_bias(const char *op, dt_device d, dt_dtype t, int64_t n, int64_t oc, int64_t l, const void *b, void *y) {
  dt__bcast bc;
  memset(&bc, 0, sizeof bc);
  bc.ndim = 3; bc.numel = n * oc * l;
  bc.dims[0] = n; bc.dims[1] = oc; bc.dims[2] = l;
  bc.astride[0] = oc * l; bc.astride[1] = l; bc.astride[2] = 1;
  bc.bstride[1] = 1;
  return dt__run(op, d, dt__be(d)->binary(d.index, DT__B_ADD, t, &bc, y, b, y));
}

/* y = conv(x, w) + b (b may be NULL); g->n > 0. Through the backend's convolution library where
   it has one and takes the case (then nothing is kept), else per block of m images: col = im2col(the block),
   tmp_g = w_g (ocg, kg) @ col_g (kg, m l) for every group g in one batched gemm, then y = tmp + b.
   keep (or NULL): where the whole batch was one block, col for the backward (else NULL). */
static dt_status dt__conv_forward(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, const void *x, const void *w,
                                  const void *b, void *y, dt_tensor **keep) {
  const dt__backend *be = dt__be(d);
  const size_t es = dt__dtype_bytes(t);
  const int64_t l = g->oh * g->ow, ocg = g->oc / g->groups, kg = g->c / g->groups * g->kh * g->kw;
  int64_t nb = 0, n0;
  dt_tensor *col = NULL, *tmp = NULL;
  dt_status s = dt__conv_lib(op, 0, g, t, d, x, w, y);
  if (s == DT_OK) return b ? dt__conv_add_bias(op, d, t, g->n, g->oc, l, b, y) : DT_OK;
  if (s != DT_ERR_UNSUPPORTED) return s;
  if ((s = dt__conv_scratch(op, g, t, d, &nb, &col, &tmp)) != DT_OK) return s;
  for (n0 = 0; n0 < g->n && s == DT_OK; n0 += nb) {
    const int64_t m = g->n - n0 < nb ? g->n - n0 : nb;
    s = dt__run(op, d, be->im2col(d.index, t, g, m, (const char *)x + (size_t)(n0 * g->c * g->h * g->w) * es, col->st->ptr));
    if (s == DT_OK)
      s = dt__run(op, d, be->gemm(d.index, t, 0, 0, g->groups, ocg, m * l, kg, 1.0, w, ocg * kg, col->st->ptr, kg * m * l, 0.0,
                                  tmp->st->ptr, ocg * m * l));
    if (s == DT_OK) s = dt__conv_to_y(op, d, t, m, g->oc, l, tmp->st->ptr, b, (char *)y + (size_t)(n0 * g->oc * l) * es);
  }
  if (keep && s == DT_OK && nb >= g->n) {
    *keep = col;
    col = NULL;
  }
  dt_release(col);
  dt_release(tmp);
  return s;
}

DTDEF dt_tensor *dt_f_conv2d_ex(const dt_tensor *x, const dt_tensor *w, const dt_tensor *b, int sh, int sw, int ph, int pw,
                                int dh, int dw, int groups) {
  const char *op = "dt_f_conv2d";
  dt__conv2d g;
  dt_tensor *y;
  dt_status s;
  dt_dtype at = dt__autocast_low(x, w, b);
  if (at != DT_F32) { /* autocast: in at */
    int failed = 0;
    dt_tensor *cx = dt__autocast_cast(x, at, &failed), *cw = dt__autocast_cast(w, at, &failed), *cb = dt__autocast_cast(b, at, &failed);
    y = failed ? NULL : dt_f_conv2d_ex(cx, cw, cb, sh, sw, ph, pw, dh, dw, groups);
    dt_release(cx); dt_release(cw); dt_release(cb);
    return y;
  }
  if (dt__conv_check(op, NULL, x, w, b, sh, sw, ph, pw, dh, dw, groups, &g) != DT_OK) return NULL;
  if (!(y = dt__new(op, dt_shape4(g.n, g.oc, g.oh, g.ow), x->dtype, x->st->device))) return NULL;
  {
    const int rec = !dt__no_grad && (x->requires_grad || w->requires_grad || (b && b->requires_grad));
    /* on the CPU a recorded convolution keeps its col for the weight gradient, which then need not
       unfold x again (a GPU unfolds faster than it would hold the memory) */
    dt_tensor *kept = NULL;
    if (g.n > 0) {
      s = dt__conv_forward(op, &g, x->dtype, x->st->device, x->st->ptr, w->st->ptr, b ? b->st->ptr : NULL, y->st->ptr,
                           rec && w->requires_grad && x->st->device.type == DT_CPU ? &kept : NULL);
      if (s != DT_OK) { dt_release(y); return NULL; }
    }
    if (rec) {
      /* autograd: a node of x, w (and b) whose backward is dt_f_conv2d_backward, its int arguments in perm */
      const dt_tensor *in[3];
      in[0] = x; in[1] = w; in[2] = b;
      if (!(y = dt__ag_record(y, DT__AG_CONV2D, op, b ? 3 : 2, in, NULL))) { dt_release(kept); return NULL; }
      y->node->perm[0] = sh; y->node->perm[1] = sw; y->node->perm[2] = ph; y->node->perm[3] = pw;
      y->node->perm[4] = dh; y->node->perm[5] = dw; y->node->perm[6] = groups;
      if (kept) { y->node->saved[2] = kept; y->node->saved_version[2] = *dt__version(kept); }
    } else
      dt_release(kept);
  }
  return y;
}

DTDEF dt_tensor *dt_f_conv2d(const dt_tensor *x, const dt_tensor *w, const dt_tensor *b, int stride, int padding) {
  return dt_f_conv2d_ex(x, w, b, stride, stride, padding, padding, 1, 1, 1);
}

/* gb (oc,) = the sums of gy (n, oc, l) over n and l, through tmp (n, oc) */
static dt_status dt__conv_bias_grad(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, const void *gy, void *tmp,
                                    void *gb) {
  const dt__backend *be = dt__be(d);
  dt_status s = dt__run(op, d, be->reduce(d.index, DT__R_SUM, t, g->n * g->oc, g->oh * g->ow, 1, gy, tmp));
  return s != DT_OK ? s : dt__run(op, d, be->reduce(d.index, DT__R_SUM, t, 1, g->n, g->oc, tmp, gb));
}

/* gx (like x) and gw (like w), either NULL, from gy; g->n > 0. Per block of m images, with gt =
   gy's block as (oc, m l) and col = im2col(x's block): gw_g (+)= gt_g @ col_g^T, one gemm over
   the block's images; gcol_g = w_g^T @ gt_g into col, which col2im folds into gx (a 1x1 kernel at unit
   strides without padding: col is gx transposed, one strided copy). */
static dt_status dt__conv_backward(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, const void *gy, const void *x,
                                   const void *w, const dt_tensor *kept, void *gx, void *gw) {
  const dt__backend *be = dt__be(d);
  const size_t es = dt__dtype_bytes(t);
  const int64_t l = g->oh * g->ow, ocg = g->oc / g->groups, kg = g->c / g->groups * g->kh * g->kw;
  const int64_t chw = g->c * g->h * g->w;
  int64_t nb = 0, n0;
  dt_tensor *col = NULL, *tmp = NULL;
  dt_status s;
  if ((s = dt__conv_scratch(op, g, t, d, &nb, &col, &tmp)) != DT_OK) return s;
  for (n0 = 0; n0 < g->n && s == DT_OK; n0 += nb) {
    const int64_t m = g->n - n0 < nb ? g->n - n0 : nb;
    const char *gyb = (const char *)gy + (size_t)(n0 * g->oc * l) * es;
    const void *gt = gyb; /* (oc, m, l): one image's block is already in that layout */
    if (m > 1) { /* gt[o, i, p] = gy[n0 + i, o, p] */
      dt__bcast bc;
      memset(&bc, 0, sizeof bc);
      bc.ndim = 3; bc.numel = m * g->oc * l;
      bc.dims[0] = g->oc; bc.dims[1] = m; bc.dims[2] = l;
      bc.astride[0] = l; bc.astride[1] = g->oc * l; bc.astride[2] = 1;
      s = dt__run(op, d, be->binary(d.index, DT__B_COPY_A, t, &bc, gyb, gyb, tmp->st->ptr));
      gt = tmp->st->ptr;
    }
    if (gw && s == DT_OK) { /* the forward's col when it kept the whole batch's */
      const void *cb = kept && m == g->n ? kept->st->ptr : col->st->ptr;
      if (cb == col->st->ptr)
        s = dt__run(op, d, be->im2col(d.index, t, g, m, (const char *)x + (size_t)(n0 * chw) * es, col->st->ptr));
      if (s == DT_OK)
        s = dt__run(op, d, be->gemm(d.index, t, 0, 1, g->groups, ocg, kg, m * l, 1.0, gt, ocg * m * l, cb, kg * m * l,
                                    n0 == 0 ? 0.0 : 1.0, gw, ocg * kg));
    }
    if (gx && s == DT_OK) {
      s = dt__run(op, d, be->gemm(d.index, t, 1, 0, g->groups, kg, m * l, ocg, 1.0, w, ocg * kg, gt, ocg * m * l, 0.0,
                                  col->st->ptr, kg * m * l));
      if (s == DT_OK && g->kh * g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0)
        s = dt__conv_to_y(op, d, t, m, g->c, l, col->st->ptr, NULL, (char *)gx + (size_t)(n0 * chw) * es); /* col is gx transposed */
      else if (s == DT_OK)
        s = dt__run(op, d, be->col2im(d.index, t, g, m, col->st->ptr, (char *)gx + (size_t)(n0 * chw) * es));
    }
  }
  dt_release(col);
  dt_release(tmp);
  return s;
}

/* The input gradient of a convolution at unit strides is itself a convolution: of gy, padded by
   (k - 1) d - p, with each group's weights transposed (c / groups, oc / groups kh kw) and the taps
   in reverse order (im2col's flip). Its im2col unfolds gy, oc kh kw rows, where the adjoint path
   multiplies into c kh kw rows of col that col2im folds back; with oc oh ow <= c h w that moves less
   memory, and its gemm is deeper (oc / groups kh kw against oc / groups). Not for a 1x1 kernel:
   there both are the one gemm. */
static int dt__conv_gx_as_conv(const dt__conv2d *g) {
  return g->sh == 1 && g->sw == 1 && g->kh * g->kw > 1 && g->ph <= (g->kh - 1) * g->dh && g->pw <= (g->kw - 1) * g->dw &&
         (double)g->oc * (double)g->h * (double)g->w <= (double)g->c * (double)g->oh * (double)g->ow;
}

/* gx = conv(gy, w transposed and flipped), as dt__conv_gx_as_conv takes it: per block of m images,
   col = im2col(gy's block), tmp_g (c / groups, m h w) = wt_g @ col_g, then gx = tmp in x's layout
   (one image: the gemm writes gx itself) */
static dt_status dt__conv_gx_conv(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, const void *gy, const void *w,
                                  void *gx) {
  const dt__backend *be = dt__be(d);
  const size_t es = dt__dtype_bytes(t);
  const int64_t kk = g->kh * g->kw, ocg = g->oc / g->groups, cg = g->c / g->groups, hw = g->h * g->w, l = g->oh * g->ow;
  dt__conv2d gt = *g; /* the convolution of gy: oc channels of oh x ow in, c of h x w out */
  dt_tensor *wt = NULL, *col = NULL, *tmp = NULL;
  int64_t nb = 0, n0;
  dt_status s;
  dt__bcast bc;
  gt.c = g->oc; gt.h = g->oh; gt.w = g->ow; gt.oc = g->c; gt.oh = g->h; gt.ow = g->w;
  gt.ph = (g->kh - 1) * g->dh - g->ph; gt.pw = (g->kw - 1) * g->dw - g->pw; gt.flip = 1;
  if (!(wt = dt__new(op, dt_shape1(g->oc * cg * kk), t, d))) return dt_last_status();
  /* wt (groups, cg, ocg, kk) = w (groups, ocg, cg, kk) */
  memset(&bc, 0, sizeof bc);
  bc.ndim = 4; bc.numel = g->oc * cg * kk;
  bc.dims[0] = g->groups; bc.dims[1] = cg; bc.dims[2] = ocg; bc.dims[3] = kk;
  bc.astride[0] = ocg * cg * kk; bc.astride[1] = kk; bc.astride[2] = cg * kk; bc.astride[3] = 1;
  s = dt__run(op, d, be->binary(d.index, DT__B_COPY_A, t, &bc, w, w, wt->st->ptr));
  if (s == DT_OK) s = dt__conv_scratch(op, &gt, t, d, &nb, &col, &tmp);
  for (n0 = 0; n0 < g->n && s == DT_OK; n0 += nb) {
    const int64_t m = g->n - n0 < nb ? g->n - n0 : nb;
    char *gxb = (char *)gx + (size_t)(n0 * g->c * hw) * es;
    void *out = m == 1 ? (void *)gxb : tmp->st->ptr;
    s = dt__run(op, d, be->im2col(d.index, t, &gt, m, (const char *)gy + (size_t)(n0 * g->oc * l) * es, col->st->ptr));
    if (s == DT_OK)
      s = dt__run(op, d, be->gemm(d.index, t, 0, 0, g->groups, cg, m * hw, ocg * kk, 1.0, wt->st->ptr, cg * ocg * kk, col->st->ptr,
                                  ocg * kk * m * hw, 0.0, out, cg * m * hw));
    if (s == DT_OK && m > 1) s = dt__conv_to_y(op, d, t, m, g->c, hw, tmp->st->ptr, NULL, gxb);
  }
  dt_release(wt);
  dt_release(col);
  dt_release(tmp);
  return s;
}

/* dt_f_conv2d_backward, with the col a recorded forward kept (or NULL) */
static dt_status dt__conv2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *w, const dt_tensor *kept,
                                     int sh, int sw, int ph, int pw, int dh, int dw, int groups, dt_tensor **grad_input,
                                     dt_tensor **grad_weight, dt_tensor **grad_bias) {
  const char *op = "dt_f_conv2d_backward";
  dt__conv2d g;
  dt_tensor *gx = NULL, *gw = NULL, *gb = NULL, *tmp = NULL;
  dt_device d;
  dt_dtype t;
  dt_status s = DT_OK;
  if (dt__check_tensor(op, "grad_output", grad_output) != DT_OK) return dt_last_status();
  if ((s = dt__conv_check(op, grad_output, x, w, NULL, sh, sw, ph, pw, dh, dw, groups, &g)) != DT_OK) return s;
  d = x->st->device; t = x->dtype;
  if ((grad_input && !(gx = dt__new(op, x->shape, t, d))) || (grad_weight && !(gw = dt__new(op, w->shape, t, d))) ||
      (grad_bias && (!(gb = dt__new(op, dt_shape1(g.oc), t, d)) || !(tmp = dt__new(op, dt_shape2(g.n, g.oc), t, d)))))
    s = dt_last_status();
  if (s == DT_OK && g.n == 0) { /* no images: the weight and bias gradients are zeros */
    if (gw) s = dt__run(op, d, dt__be(d)->fill(d.index, t, gw->numel, 0.0, gw->st->ptr));
    if (gb && s == DT_OK) s = dt__run(op, d, dt__be(d)->fill(d.index, t, gb->numel, 0.0, gb->st->ptr));
  } else if (s == DT_OK) {
    if (gb) s = dt__conv_bias_grad(op, &g, t, d, grad_output->st->ptr, tmp->st->ptr, gb->st->ptr);
    if (s == DT_OK && (gx || gw)) { /* each gradient through the convolution library where it takes it, else im2col + gemm */
      void *px = gx ? gx->st->ptr : NULL, *pw = gw ? gw->st->ptr : NULL;
      dt_status ls;
      if (pw && (ls = dt__conv_lib(op, 2, &g, t, d, x->st->ptr, grad_output->st->ptr, pw)) != DT_ERR_UNSUPPORTED) {
        s = ls;
        pw = NULL;
      }
      if (s == DT_OK && px && (ls = dt__conv_lib(op, 1, &g, t, d, w->st->ptr, grad_output->st->ptr, px)) != DT_ERR_UNSUPPORTED) {
        s = ls;
        px = NULL;
      }
      if (s == DT_OK && px && dt__conv_gx_as_conv(&g)) {
        s = dt__conv_gx_conv(op, &g, t, d, grad_output->st->ptr, w->st->ptr, px);
        px = NULL;
      }
      if (s == DT_OK && (px || pw)) s = dt__conv_backward(op, &g, t, d, grad_output->st->ptr, x->st->ptr, w->st->ptr, kept, px, pw);
    }
  }
  dt_release(tmp);
  if (s != DT_OK) {
    dt_release(gx); dt_release(gw); dt_release(gb);
    return s;
  }
  if (grad_input) *grad_input = gx;
  if (grad_weight) *grad_weight = gw;
  if (grad_bias) *grad_bias = gb;
  return DT_OK;
}

DTDEF dt_status dt_f_conv2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *w, int sh, int sw,
                                     int ph, int pw, int dh, int dw, int groups, dt_tensor **grad_input,
                                     dt_tensor **grad_weight, dt_tensor **grad_bias) {
  return dt__conv2d_backward(grad_output, x, w, NULL, sh, sw, ph, pw, dh, dw, groups, grad_input, grad_weight, grad_bias);
}

/* ---- pooling ---- */

/* The checks of a pooling call (gy: NULL for the forward; idx: max's backward), in their order:
   NULLs, devices, dtypes, the int arguments, shapes. Fills p (the output size from gy for an
   adaptive backward: out_h, out_w < 0). */
static dt_status dt__pool_check(const char *op, dt__pool2d_kind kind, const dt_tensor *gy, const dt_tensor *x, const dt_tensor *idx,
                                int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, dt__pool2d *p) {
  char sx[200], sy[200];
  if (gy && dt__check_tensor(op, "grad_output", gy) != DT_OK) return dt_last_status();
  if (dt__check_tensor(op, "x", x) != DT_OK) return dt_last_status();
  if (kind == DT__POOL2D_MAX && gy && dt__check_tensor(op, "indices", idx) != DT_OK) return dt_last_status();
  if (gy && dt__same_device(op, "x", x, "grad_output", gy) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (idx && dt__same_device(op, "x", x, "indices", idx) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (dt__float_only(op, "x", x) != DT_OK) return DT_ERR_DTYPE;
  if (gy && dt__same_dtype(op, "x", x, "grad_output", gy) != DT_OK) return DT_ERR_DTYPE;
  if (idx && idx->dtype != DT_I64)
    return dt__fail(DT_ERR_DTYPE, "%s: indices must be int64 (as dt_f_max_pool2d_ex makes them), got %s", op, dt_dtype_name(idx->dtype));
  memset(p, 0, sizeof *p);
  p->kind = kind;
  if (kind == DT__POOL2D_ADAPTIVE_AVG) {
    if (!gy && (kh < 1 || kw < 1))
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: output size must be at least 1, got (%lld, %lld)", op, (long long)kh, (long long)kw);
  } else {
    if (kh < 1 || kw < 1)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: kernel size must be at least 1, got (%lld, %lld)", op, (long long)kh, (long long)kw);
    if (sh == 0) sh = kh;
    if (sw == 0) sw = kw;
    if (sh < 0 || sw < 0)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: stride must be at least 1 (0: the kernel size), got (%lld, %lld)", op,
                      (long long)sh, (long long)sw);
    if (ph < 0 || pw < 0 || ph > kh / 2 || pw > kw / 2)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: padding must be between 0 and half the kernel size, got (%lld, %lld) for kernel (%lld, %lld)",
                      op, (long long)ph, (long long)pw, (long long)kh, (long long)kw);
  }
  if (dt__check_images(op, "x", x) != DT_OK) return DT_ERR_SHAPE;
  dt__shape_str(&x->shape, sx, sizeof sx);
  p->n = x->shape.dims[0]; p->c = x->shape.dims[1]; p->h = x->shape.dims[2]; p->w = x->shape.dims[3];
  if (kind == DT__POOL2D_ADAPTIVE_AVG) {
    if (gy) {
      if (gy->shape.ndim != 4 || gy->shape.dims[0] != p->n || gy->shape.dims[1] != p->c || gy->shape.dims[2] < 1 || gy->shape.dims[3] < 1)
        return dt__fail(DT_ERR_SHAPE, "%s: expected grad_output of shape (%lld, %lld, out_h, out_w) (out_h, out_w >= 1), got %s", op,
                        (long long)p->n, (long long)p->c, dt__shape_str(&gy->shape, sy, sizeof sy));
      kh = gy->shape.dims[2]; kw = gy->shape.dims[3];
    }
    p->oh = kh; p->ow = kw;
    if ((double)kh * (double)p->h > 4e18 || (double)kw * (double)p->w > 4e18) /* the windows' bounds take o h and i out_h */
      return dt__fail(DT_ERR_SHAPE, "%s: too large: output size (%lld, %lld) for x %s", op, (long long)kh, (long long)kw, sx);
    return DT_OK;
  }
  p->kh = kh; p->kw = kw; p->sh = sh; p->sw = sw; p->ph = ph; p->pw = pw;
  p->oh = dt__conv_out(p->h, kh, sh, ph, 1);
  p->ow = dt__conv_out(p->w, kw, sw, pw, 1);
  if (p->oh < 1 || p->ow < 1)
    return dt__fail(DT_ERR_SHAPE, "%s: input smaller than the kernel: x %s padded by (%lld, %lld) against kernel (%lld, %lld)", op, sx,
                    (long long)ph, (long long)pw, (long long)kh, (long long)kw);
  if (gy && (gy->shape.ndim != 4 || gy->shape.dims[0] != p->n || gy->shape.dims[1] != p->c || gy->shape.dims[2] != p->oh ||
             gy->shape.dims[3] != p->ow))
    return dt__fail(DT_ERR_SHAPE, "%s: expected grad_output of shape (%lld, %lld, %lld, %lld) (the output's), got %s", op,
                    (long long)p->n, (long long)p->c, (long long)p->oh, (long long)p->ow, dt__shape_str(&gy->shape, sy, sizeof sy));
  if (idx && (idx->shape.ndim != 4 || idx->shape.dims[0] != p->n || idx->shape.dims[1] != p->c || idx->shape.dims[2] != p->oh ||
              idx->shape.dims[3] != p->ow))
    return dt__fail(DT_ERR_SHAPE, "%s: expected indices of shape (%lld, %lld, %lld, %lld) (the output's), got %s", op,
                    (long long)p->n, (long long)p->c, (long long)p->oh, (long long)p->ow, dt__shape_str(&idx->shape, sy, sizeof sy));
  return DT_OK;
}

/* y = pool(x), and for max the indices when `indices` is not NULL */
static dt_tensor *dt__pool_forward(const char *op, dt__pool2d_kind kind, const dt_tensor *x, int64_t kh, int64_t kw, int64_t sh,
                                   int64_t sw, int64_t ph, int64_t pw, dt_tensor **indices) {
  dt__pool2d p;
  dt_tensor *y, *idx = NULL, *saved = NULL;
  dt_status s;
  int rec; /* autograd: a node whose backward is the pooling's backward function */
  if (dt__pool_check(op, kind, NULL, x, NULL, kh, kw, sh, sw, ph, pw, &p) != DT_OK) return NULL;
  rec = DT__AG_ON(x);
  if (!(y = dt__new(op, dt_shape4(p.n, p.c, p.oh, p.ow), x->dtype, x->st->device))) return NULL;
  if ((indices || (rec && kind == DT__POOL2D_MAX)) && !(idx = dt__new(op, y->shape, DT_I64, x->st->device))) {
    dt_release(y);
    return NULL;
  }
  s = y->numel == 0 ? DT_OK
                    : dt__run(op, x->st->device, dt__be(x->st->device)->pool2d(x->st->device.index, x->dtype, &p, x->st->ptr, y->st->ptr,
                                                                               idx ? (int64_t *)idx->st->ptr : NULL));
  if (s == DT_OK && rec && idx && !(saved = indices ? dt_detach(idx) : dt_retain(idx))) s = dt_last_status();
  if (s != DT_OK) { dt_release(y); dt_release(idx); return NULL; }
  if (rec) {
    if (!(y = dt__ag_record(y, kind == DT__POOL2D_MAX ? DT__AG_MAX_POOL2D : kind == DT__POOL2D_AVG ? DT__AG_AVG_POOL2D
                                                                                                  : DT__AG_ADAPTIVE_AVG_POOL2D,
                            op, 1, &x, NULL))) {
      dt_release(saved);
      dt_release(idx);
      return NULL;
    }
    y->node->perm[0] = (int)kh; y->node->perm[1] = (int)kw; y->node->perm[2] = (int)sh; y->node->perm[3] = (int)sw;
    y->node->perm[4] = (int)ph; y->node->perm[5] = (int)pw;
    if (saved) { y->node->saved[2] = saved; y->node->saved_version[2] = *dt__version(saved); }
  }
  if (indices) *indices = idx;
  else dt_release(idx); /* only the node's */
  return y;
}

/* gx = the pooling's backward from gy (and idx for max) */
static dt_tensor *dt__pool_backward(const char *op, dt__pool2d_kind kind, const dt_tensor *gy, const dt_tensor *x, const dt_tensor *idx,
                                    int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
  dt__pool2d p;
  dt_tensor *gx;
  if (dt__check_tensor(op, "grad_output", gy) != DT_OK) return NULL;
  if (dt__pool_check(op, kind, gy, x, idx, kh, kw, sh, sw, ph, pw, &p) != DT_OK) return NULL;
  if (!(gx = dt__new(op, x->shape, x->dtype, x->st->device))) return NULL;
  if (gx->numel == 0) return gx;
  return dt__done(op, gx, dt__be(x->st->device)->pool2d_backward(x->st->device.index, x->dtype, &p, gy->st->ptr,
                                                                 idx ? (const int64_t *)idx->st->ptr : NULL, gx->st->ptr));
}

DTDEF dt_tensor *dt_f_max_pool2d(const dt_tensor *x, int kernel_size, int stride, int padding) {
  return dt__pool_forward("dt_f_max_pool2d", DT__POOL2D_MAX, x, kernel_size, kernel_size, stride, stride, padding, padding, NULL);
}
DTDEF dt_tensor *dt_f_max_pool2d_ex(const dt_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, dt_tensor **indices) {
  return dt__pool_forward("dt_f_max_pool2d", DT__POOL2D_MAX, x, kh, kw, sh, sw, ph, pw, indices);
}
DTDEF dt_tensor *dt_f_max_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *indices, int kh,
                                          int kw, int sh, int sw, int ph, int pw) {
  return dt__pool_backward("dt_f_max_pool2d_backward", DT__POOL2D_MAX, grad_output, x, indices, kh, kw, sh, sw, ph, pw);
}
DTDEF dt_tensor *dt_f_avg_pool2d(const dt_tensor *x, int kernel_size, int stride, int padding) {
  return dt__pool_forward("dt_f_avg_pool2d", DT__POOL2D_AVG, x, kernel_size, kernel_size, stride, stride, padding, padding, NULL);
}
DTDEF dt_tensor *dt_f_avg_pool2d_ex(const dt_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw) {
  return dt__pool_forward("dt_f_avg_pool2d", DT__POOL2D_AVG, x, kh, kw, sh, sw, ph, pw, NULL);
}
DTDEF dt_tensor *dt_f_avg_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x, int kh, int kw, int sh, int sw,
                                          int ph, int pw) {
  return dt__pool_backward("dt_f_avg_pool2d_backward", DT__POOL2D_AVG, grad_output, x, NULL, kh, kw, sh, sw, ph, pw);
}
DTDEF dt_tensor *dt_f_adaptive_avg_pool2d(const dt_tensor *x, int64_t out_h, int64_t out_w) {
  return dt__pool_forward("dt_f_adaptive_avg_pool2d", DT__POOL2D_ADAPTIVE_AVG, x, out_h, out_w, 0, 0, 0, 0, NULL);
}
DTDEF dt_tensor *dt_f_adaptive_avg_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x) {
  return dt__pool_backward("dt_f_adaptive_avg_pool2d_backward", DT__POOL2D_ADAPTIVE_AVG, grad_output, x, NULL, 0, 0, 0, 0, 0, 0);
}

/* ---- src/ops/more.c ---- */
/* Views and shape helpers (dt_flatten, dt_unsqueeze, dt_squeeze: each shares t's memory and records
   as dt_reshape does), reductions with keepdim, scalar forms of arithmetic and comparisons,
   dt_one_hot, and the elementwise functions beyond those of arith.c (sin, cos, erf, gelu, pow,
   clamp). Compositions are written with the public operations, so they run on every backend and
   record for autograd through the operations they are made of. */

/* dim of a tensor of nd dims, as PyTorch wraps it: [-n, n) with n = max(nd, 1) (a 0-d tensor
   takes 0 and -1); the wrapped dim in *out. */
static dt_status dt__wrap_dim0(const char *op, int dim, int nd, int *out) {
  int n = nd > 0 ? nd : 1;
  if (dim < -n || dim >= n)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor (expected %d to %d)", op, dim, nd,
                    -n, n - 1);
  *out = dim < 0 ? dim + n : dim;
  return DT_OK;
}

/* a new header over a's memory with shape s (as many elements), recorded as a reshape */
static dt_tensor *dt__view_as(const char *op, const dt_tensor *a, dt_shape s) {
  dt_tensor *y;
  DT__ATOMIC_ADD(&a->st->refs, 1);
  y = dt__wrap(op, a->st, &s, a->dtype, a->numel, a->nbytes); /* on failure drops the reference */
  return DT__AG1(y, DT__AG_RESHAPE, op, a);
}

DTDEF dt_tensor *dt_flatten(const dt_tensor *t, int start_dim, int end_dim) {
  const char *op = "dt_flatten";
  int nd, s = 0, e = 0, i, k = 0;
  uint64_t n = 1;
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  nd = t->shape.ndim;
  if (dt__wrap_dim0(op, start_dim, nd, &s) != DT_OK || dt__wrap_dim0(op, end_dim, nd, &e) != DT_OK) return NULL;
  if (s > e) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: start_dim %d comes after end_dim %d (%d > %d once wrapped)", op, start_dim,
             end_dim, s, e);
    return NULL;
  }
  if (nd == 0) return dt__view_as(op, t, dt_shape1(1)); /* torch.flatten of a 0-d tensor: (1,) */
  for (i = 0; i < s; i++) ys.dims[k++] = t->shape.dims[i];
  for (i = s; i <= e; i++) n *= (uint64_t)t->shape.dims[i];
  ys.dims[k++] = (int64_t)n; /* the product of dims of a tensor that exists: fits */
  for (i = e + 1; i < nd; i++) ys.dims[k++] = t->shape.dims[i];
  ys.ndim = k;
  return dt__view_as(op, t, ys);
}

DTDEF dt_tensor *dt_unsqueeze(const dt_tensor *t, int dim) {
  const char *op = "dt_unsqueeze";
  int nd, d, i;
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  nd = t->shape.ndim;
  if (dim < -(nd + 1) || dim > nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor (expected %d to %d)", op, dim, nd,
             -(nd + 1), nd);
    return NULL;
  }
  if (nd + 1 > DT_MAX_DIMS) {
    dt__fail(DT_ERR_SHAPE, "%s: t has %d dims already, the most a tensor has", op, nd);
    return NULL;
  }
  d = dim < 0 ? dim + nd + 1 : dim;
  for (i = 0; i < d; i++) ys.dims[i] = t->shape.dims[i];
  ys.dims[d] = 1;
  for (i = d; i < nd; i++) ys.dims[i + 1] = t->shape.dims[i];
  ys.ndim = nd + 1;
  return dt__view_as(op, t, ys);
}

DTDEF dt_tensor *dt_squeeze(const dt_tensor *t, int dim) {
  const char *op = "dt_squeeze";
  int nd, d = 0, i, k = 0;
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  nd = t->shape.ndim;
  if (dt__wrap_dim0(op, dim, nd, &d) != DT_OK) return NULL;
  if (nd == 0 || t->shape.dims[d] != 1) return dt__view_as(op, t, t->shape); /* as torch: a view, unchanged */
  for (i = 0; i < nd; i++) if (i != d) ys.dims[k++] = t->shape.dims[i];
  ys.ndim = k;
  return dt__view_as(op, t, ys);
}

/* ---- reductions with keepdim ---- */

/* sum over dim, then the dim put back as 1 when keepdim */
static dt_tensor *dt__keep(dt_tensor *y, const dt_tensor *t, int d, int keepdim) {
  dt_tensor *k;
  if (!y || !keepdim || t->shape.ndim == 0) return y;
  k = dt_unsqueeze(y, d);
  dt_release(y);
  return k;
}

DTDEF dt_tensor *dt_sum_dim_ex(const dt_tensor *t, int dim, int keepdim) {
  const char *op = "dt_sum_dim_ex";
  int d = 0;
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__float_only(op, "t", t) != DT_OK) return NULL;
  if (t->shape.ndim == 0) { /* torch.sum(0-d, 0) is the tensor */
    if (dt__wrap_dim0(op, dim, 0, &d) != DT_OK) return NULL;
    return dt__view_as(op, t, t->shape);
  }
  if (dt__wrap_dim0(op, dim, t->shape.ndim, &d) != DT_OK) return NULL;
  return dt__keep(dt_sum_dim(t, d), t, d, keepdim);
}

DTDEF dt_tensor *dt_mean_dim(const dt_tensor *t, int dim, int keepdim) {
  const char *op = "dt_mean_dim";
  int d = 0;
  dt_tensor *s, *n, *y;
  if (dt__check_tensor(op, "t", t) != DT_OK || dt__float_only(op, "t", t) != DT_OK) return NULL;
  if (dt__wrap_dim0(op, dim, t->shape.ndim, &d) != DT_OK) return NULL;
  if (t->shape.ndim == 0) return dt__view_as(op, t, t->shape);
  /* the sum divided by the count (as torch.mean: an empty dim gives NaN) */
  if (!(n = dt__filled(op, dt_shape0(), t->dtype, (double)t->shape.dims[d], t->st->device))) return NULL;
  s = dt_sum_dim(t, d);
  y = s ? dt_div(s, n) : NULL;
  dt_release(s);
  dt_release(n);
  return dt__keep(y, t, d, keepdim);
}

/* ---- scalar forms ---- */

DTDEF dt_tensor *dt_rsub_scalar(const dt_tensor *t, double s) {
  const char *op = "dt_rsub_scalar";
  dt_tensor *y;
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  if (t->dtype == DT_BOOL) {
    dt__fail(DT_ERR_DTYPE, "%s: subtraction with a bool tensor is not supported (t is bool; as in PyTorch: convert with dt_cast)", op);
    return NULL;
  }
  y = dt__unary(op, DT__U_AFFINE, t, -1.0, s);
  return y && DT__AG_ON(t) ? dt__ag_record1a(y, DT__AG_MUL_SCALAR, op, t, -1.0, 0, 0, NULL) : y;
}

/* t op s: s as a 0-d tensor of t's dtype where it is exactly one (a float dtype, or a whole
   number within an integer dtype's range), else float64, so an integer tensor and a fraction
   compare exactly as numbers (PyTorch compares them in float32). */
static dt_tensor *dt__compare_scalar(const char *op, dt__compare_op cop, int swap, const dt_tensor *t, double s) {
  dt_dtype st;
  dt_tensor *b, *y;
  int whole = s == floor(s);
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  switch (t->dtype) {
    case DT_F32: case DT_F64: case DT_F16: case DT_BF16: st = t->dtype; break;
    case DT_I32: st = whole && s >= -2147483648.0 && s <= 2147483647.0 ? DT_I32 : DT_F64; break;
    case DT_I64: st = whole && s >= -9007199254740992.0 && s <= 9007199254740992.0 ? DT_I64 : DT_F64; break;
    case DT_U8: st = whole && s >= 0 && s <= 255 ? DT_U8 : DT_F64; break;
    default: st = s == 0 || s == 1 ? DT_BOOL : DT_F64; break;
  }
  if (!(b = dt__filled(op, dt_shape0(), st, s, t->st->device))) return NULL;
  y = dt__compare(op, cop, swap, t, b);
  dt_release(b);
  return y;
}
DTDEF dt_tensor *dt_eq_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_eq_scalar", DT__C_EQ, 0, t, s); }
DTDEF dt_tensor *dt_ne_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_ne_scalar", DT__C_NE, 0, t, s); }
DTDEF dt_tensor *dt_lt_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_lt_scalar", DT__C_LT, 0, t, s); }
DTDEF dt_tensor *dt_le_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_le_scalar", DT__C_LE, 0, t, s); }
DTDEF dt_tensor *dt_gt_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_gt_scalar", DT__C_LT, 1, t, s); }
DTDEF dt_tensor *dt_ge_scalar(const dt_tensor *t, double s) { return dt__compare_scalar("dt_ge_scalar", DT__C_LE, 1, t, s); }

/* one_hot: labels (...) I64 -> (..., num_classes) I64, as torch.nn.functional.one_hot. The labels'
   range is checked first (on a GPU that reads their min and max back: the call waits). */
DTDEF dt_tensor *dt_one_hot(const dt_tensor *labels, int64_t num_classes) {
  const char *op = "dt_one_hot";
  dt_tensor *f = NULL, *mn = NULL, *mx = NULL, *col = NULL, *ar = NULL, *eq = NULL, *y = NULL;
  double lo = 0, hi = -1;
  int nd;
  if (dt__check_tensor(op, "labels", labels) != DT_OK) return NULL;
  if (labels->dtype != DT_I64) {
    dt__fail(DT_ERR_DTYPE, "%s: labels is %s, but one_hot takes int64 labels (convert with dt_cast)", op,
             dt_dtype_name(labels->dtype));
    return NULL;
  }
  nd = labels->shape.ndim;
  if (nd + 1 > DT_MAX_DIMS) { dt__fail(DT_ERR_SHAPE, "%s: labels has %d dims, the most a tensor has", op, nd); return NULL; }
  if (num_classes < -1) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: num_classes must be -1 (the largest label + 1) or at least 0, got %lld", op,
             (long long)num_classes);
    return NULL;
  }
  if (labels->numel == 0 && num_classes == -1) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: labels is empty, so num_classes cannot be inferred (pass it)", op);
    return NULL;
  }
  if (labels->numel > 0) {
    if ((f = dt_cast(labels, DT_F64)) && (mn = dt_min(f)) && (mx = dt_max(f))) { lo = dt_item(mn); hi = dt_item(mx); }
    dt_release(f); f = NULL;
    if (!mn || !mx || hi != hi || lo != lo) goto out;
    if (lo < 0) {
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: labels holds %.0f; every label must be at least 0", op, lo);
      goto out;
    }
    if (num_classes == -1) num_classes = (int64_t)hi + 1;
    else if (hi >= (double)num_classes) {
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: labels holds %.0f, but num_classes is %lld (labels in [0, %lld))", op, hi,
               (long long)num_classes, (long long)num_classes);
      goto out;
    }
  }
  if (!(col = dt_unsqueeze(labels, -1))) goto out;
  if (!(ar = dt_arange(0, (double)num_classes, 1, DT_I64, labels->st->device))) goto out;
  if (!(eq = dt_eq(col, ar))) goto out;
  y = dt_cast(eq, DT_I64);
out:
  dt_release(mn); dt_release(mx); dt_release(col); dt_release(ar); dt_release(eq);
  return y;
}

/* ---- elementwise functions (float32/64) ---- */

/* sin, cos, erf: libm's on the CPU, CUDA's on a GPU */
DTDEF dt_tensor *dt_sin(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_sin", DT__U_SIN, a, 0, 0);
  return DT__AG1(y, DT__AG_SIN, "dt_sin", a);
}
DTDEF dt_tensor *dt_cos(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_cos", DT__U_COS, a, 0, 0);
  return DT__AG1(y, DT__AG_COS, "dt_cos", a);
}
DTDEF dt_tensor *dt_erf(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_erf", DT__U_ERF, a, 0, 0);
  return DT__AG1(y, DT__AG_ERF, "dt_erf", a);
}
/* x Phi(x) = x (1 + erf(x / sqrt 2)) / 2: torch's gelu with approximate='none' */
DTDEF dt_tensor *dt_gelu(const dt_tensor *a) {
  dt_tensor *y = dt__unary("dt_gelu", DT__U_GELU, a, 0, 0);
  return DT__AG1(y, DT__AG_GELU, "dt_gelu", a);
}
/* x^p by the maths library's pow (a negative x to a fractional p: NaN) */
DTDEF dt_tensor *dt_pow_scalar(const dt_tensor *a, double p) {
  dt_tensor *y = dt__unary("dt_pow_scalar", DT__U_POW, a, p, 0);
  return y && DT__AG_ON(a) ? dt__ag_record1a(y, DT__AG_POW, "dt_pow_scalar", a, p, 0, 0, NULL) : y;
}
DTDEF dt_tensor *dt_clamp(const dt_tensor *a, double lo, double hi) {
  dt_tensor *y = dt__unary("dt_clamp", DT__U_CLAMP, a, lo, hi);
  dt__ag_args g;
  if (!y || !DT__AG_ON(a)) return y;
  g.p = lo; g.p2 = hi; g.dim = 0; g.start = 0; g.perm = NULL;
  return dt__ag_record(y, DT__AG_CLAMP, "dt_clamp", 1, &a, &g);
}

/* ---- src/ops/index2.c ---- */
/* torch.where, gather and scatter_add, F.pad (constant), randperm and randint, and the
   index-add that is index_select's backward. Checked here; the backends' where, gather,
   scatter_add, index_add and random_int slots compute. Indices on the CPU are checked before
   anything runs; on a GPU (where they are in device memory) the kernels never follow a bad one
   and report it at the next synchronizing call, as dt_index_select. */

/* the element strides of a contiguous tensor of shape s */
static void dt__contig_strides(const dt_shape *s, int64_t *st) {
  int64_t m = 1;
  int i;
  for (i = s->ndim - 1; i >= 0; i--) { st[i] = m; m *= s->dims[i]; }
}

/* ---- where ---- */

static dt_tensor *dt__where(const dt_tensor *cond, const dt_tensor *a, const dt_tensor *b) {
  const char *op = "dt_where";
  const dt_tensor *ts[3];
  static const char *const names[3] = {"cond", "a", "b"};
  int64_t st[3][DT_MAX_DIMS], cs[DT_MAX_DIMS];
  dt__bcast g;
  dt_shape ys;
  dt_tensor *y, *ca = NULL, *cb = NULL;
  dt_dtype ct;
  dt_device d;
  int nd = 0, i, k;
  char s0[200], s1[200], s2[200];
  ts[0] = cond; ts[1] = a; ts[2] = b;
  for (k = 0; k < 3; k++) if (dt__check_tensor(op, names[k], ts[k]) != DT_OK) return NULL;
  if (dt__same_device(op, "cond", cond, "a", a) != DT_OK || dt__same_device(op, "a", a, "b", b) != DT_OK) return NULL;
  if (cond->dtype != DT_BOOL) {
    dt__fail(DT_ERR_DTYPE, "%s: cond is %s, but it must be bool (a comparison's result, or dt_cast(cond, DT_BOOL))", op,
             dt_dtype_name(cond->dtype));
    return NULL;
  }
  /* the three shapes broadcast together, as NumPy's rules */
  for (k = 0; k < 3; k++) if (ts[k]->shape.ndim > nd) nd = ts[k]->shape.ndim;
  ys = dt_shape0();
  ys.ndim = nd;
  for (i = nd - 1; i >= 0; i--) {
    int64_t size = 1;
    for (k = 0; k < 3; k++) {
      int j = i - (nd - ts[k]->shape.ndim);
      int64_t dk = j >= 0 ? ts[k]->shape.dims[j] : 1;
      if (dk == 1) continue;
      if (size != 1 && dk != size) {
        dt__fail(DT_ERR_SHAPE, "%s: shapes %s (cond), %s (a) and %s (b) cannot be broadcast together: sizes %lld and %lld at dimension %d",
                 op, dt__shape_str(&cond->shape, s0, sizeof s0), dt__shape_str(&a->shape, s1, sizeof s1),
                 dt__shape_str(&b->shape, s2, sizeof s2), (long long)size, (long long)dk, i);
        return NULL;
      }
      size = dk;
    }
    ys.dims[i] = size;
  }
  d = a->st->device;
  ct = dt__result_type(a, b);
  if (!(y = dt__new(op, ys, ct, d)) || y->numel == 0) return y;
  for (k = 0; k < 3; k++) { /* each operand's strides over y's dims, 0 where it broadcasts */
    const dt_shape *s = &ts[k]->shape;
    int64_t m = 1;
    for (i = nd - 1; i >= 0; i--) {
      int j = i - (nd - s->ndim);
      int64_t dk = j >= 0 ? s->dims[j] : 1;
      st[k][i] = dk == 1 ? 0 : m;
      m *= dk;
    }
  }
  memset(&g, 0, sizeof g);
  g.numel = y->numel;
  g.ndim = nd > 0 ? nd : 1;
  if (nd == 0) { g.dims[0] = 1; cs[0] = 0; }
  for (i = 0; i < nd; i++) {
    g.dims[i] = ys.dims[i];
    g.astride[i] = st[1][i];
    g.bstride[i] = st[2][i];
    cs[i] = st[0][i];
  }
  if (!(ca = dt__as_dtype(op, a, ct)) || !(cb = dt__as_dtype(op, b, ct))) { dt_release(ca); dt_release(y); return NULL; }
  y = dt__done(op, y, dt__be(d)->where(d.index, dt_dtype_size(ct), &g, cs, cond->st->ptr, ca->st->ptr, cb->st->ptr, y->st->ptr));
  dt_release(ca);
  dt_release(cb);
  return y;
}
DTDEF dt_tensor *dt_where(const dt_tensor *cond, const dt_tensor *a, const dt_tensor *b) {
  dt_tensor *y = dt__where(cond, a, b);
  if (y && DT__AG_ON2(a, b)) {
    const dt_tensor *in[3];
    in[0] = cond; in[1] = a; in[2] = b;
    y = dt__ag_record(y, DT__AG_WHERE, "dt_where", 3, in, NULL);
  }
  return y;
}

/* ---- gather and scatter_add ---- */

/* The index of gather or scatter_add (and its src) against x: I64, x's ndim, each size within x's
   (but along dim) and src's; dim wrapped. On the CPU every value is checked to be in [0, n). */
static dt_status dt__gs_check(const char *op, const dt_tensor *x, int *dim, const dt_tensor *index, int scatter,
                              const dt_tensor *src) {
  int nd, i;
  int64_t n;
  char sa[200], sb[200];
  if (dt__check_tensor(op, "x", x) != DT_OK || dt__check_tensor(op, "index", index) != DT_OK) return dt_last_status();
  if (scatter && dt__check_tensor(op, "src", src) != DT_OK) return dt_last_status();
  if (dt__same_device(op, "x", x, "index", index) != DT_OK) return dt_last_status();
  if (src && dt__same_device(op, "x", x, "src", src) != DT_OK) return dt_last_status();
  if (index->dtype != DT_I64)
    return dt__fail(DT_ERR_DTYPE, "%s: index is %s, but it must be int64 (convert it with dt_cast)", op, dt_dtype_name(index->dtype));
  if (src) {
    if (dt__same_dtype(op, "x", x, "src", src) != DT_OK) return dt_last_status();
    if (x->dtype != DT_F32 && x->dtype != DT_F64 && x->dtype != DT_I32 && x->dtype != DT_I64)
      return dt__fail(DT_ERR_DTYPE, "%s: x is %s, but adding needs float32, float64, int32 or int64 (convert with dt_cast)", op,
                      dt_dtype_name(x->dtype));
  }
  nd = x->shape.ndim;
  if (index->shape.ndim != nd)
    return dt__fail(DT_ERR_SHAPE, "%s: index has %d dimensions (shape %s) but x has %d (shape %s): they must have the same number",
                    op, index->shape.ndim, dt__shape_str(&index->shape, sa, sizeof sa), nd, dt__shape_str(&x->shape, sb, sizeof sb));
  if (src && src->shape.ndim != nd)
    return dt__fail(DT_ERR_SHAPE, "%s: src has %d dimensions (shape %s) but x has %d (shape %s): they must have the same number", op,
                    src->shape.ndim, dt__shape_str(&src->shape, sa, sizeof sa), nd, dt__shape_str(&x->shape, sb, sizeof sb));
  if (nd == 0) { /* PyTorch: 0-d tensors take dim 0 or -1, as one element */
    if (*dim != 0 && *dim != -1)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a 0-d tensor (expected -1 or 0)", op, *dim);
    *dim = 0;
  } else if ((*dim = dt__wrap_dim(op, "dim", *dim, nd)) < 0) {
    return dt_last_status();
  }
  for (i = 0; i < nd; i++) {
    if (i != *dim && index->shape.dims[i] > x->shape.dims[i])
      return dt__fail(DT_ERR_SHAPE, "%s: index has shape %s and x has shape %s: index's size %lld at dimension %d is larger than x's, %lld "
                      "(only along dim %d may it be larger)", op, dt__shape_str(&index->shape, sa, sizeof sa),
                      dt__shape_str(&x->shape, sb, sizeof sb), (long long)index->shape.dims[i], i, (long long)x->shape.dims[i], *dim);
    if (src && index->shape.dims[i] > src->shape.dims[i])
      return dt__fail(DT_ERR_SHAPE, "%s: index has shape %s and src has shape %s: index's size %lld at dimension %d is larger than src's, %lld",
                      op, dt__shape_str(&index->shape, sa, sizeof sa), dt__shape_str(&src->shape, sb, sizeof sb),
                      (long long)index->shape.dims[i], i, (long long)src->shape.dims[i]);
  }
  n = nd == 0 ? 1 : x->shape.dims[*dim];
  if (index->numel > 0 && n == 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index holds %lld values, but dimension %d of x (shape %s) has size 0, so none is in range",
                    op, (long long)index->numel, *dim, dt__shape_str(&x->shape, sb, sizeof sb));
  /* host memory: every value checked now (a CPU graph checks them as it replays) */
  if (index->st->device.type == DT_CPU && !DT__ATOMIC_LOAD(&dt__cpu_capturing)) {
    const int64_t *v = (const int64_t *)index->st->ptr;
    int64_t j;
    for (j = 0; j < index->numel; j++)
      if (v[j] < 0 || v[j] >= n)
        return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index holds %lld (its element %lld), out of range for dimension %d of x, of size %lld (expected 0 to %lld)",
                        op, (long long)v[j], (long long)j, *dim, (long long)n, (long long)(n - 1));
  }
  return DT_OK;
}

/* The geometry over index's elements: astride x's strides with 0 at dim, bstride other's
   (contiguous, of shape os); *stride x's stride at dim, *n its size. */
static void dt__gs_geom(const dt_tensor *x, int dim, const dt_tensor *index, const dt_shape *os, dt__bcast *g, int64_t *n,
                        int64_t *stride) {
  int64_t xs[DT_MAX_DIMS], bs[DT_MAX_DIMS];
  int nd = x->shape.ndim, i;
  dt__contig_strides(&x->shape, xs);
  dt__contig_strides(os, bs);
  memset(g, 0, sizeof *g);
  g->numel = index->numel;
  if (nd == 0) {
    g->ndim = 1; g->dims[0] = 1;
    *n = 1; *stride = 0;
    return;
  }
  g->ndim = nd;
  for (i = 0; i < nd; i++) {
    g->dims[i] = index->shape.dims[i];
    g->astride[i] = i == dim ? 0 : xs[i];
    g->bstride[i] = bs[i];
  }
  *n = x->shape.dims[dim];
  *stride = xs[dim];
}

static dt_tensor *dt__gather(const dt_tensor *x, int dim, const dt_tensor *index) {
  const char *op = "dt_gather";
  dt__bcast g;
  int64_t n, stride;
  dt_tensor *y;
  dt_device d;
  if (dt__gs_check(op, x, &dim, index, 0, NULL) != DT_OK) return NULL;
  d = x->st->device;
  if (!(y = dt__new(op, index->shape, x->dtype, d)) || y->numel == 0) return y;
  dt__gs_geom(x, dim, index, &index->shape, &g, &n, &stride);
  return dt__done(op, y, dt__be(d)->gather(d.index, dt_dtype_size(x->dtype), &g, n, stride, (const int64_t *)index->st->ptr,
                                           x->st->ptr, y->st->ptr));
}
DTDEF dt_tensor *dt_gather(const dt_tensor *x, int dim, const dt_tensor *index) {
  dt_tensor *y = dt__gather(x, dim, index);
  if (y && DT__AG_ON(x)) {
    const dt_tensor *in[2];
    dt__ag_args a;
    in[0] = x; in[1] = index;
    a.p = 0; a.dim = dim; a.start = 0; a.perm = NULL; a.p2 = 0;
    y = dt__ag_record(y, DT__AG_GATHER, "dt_gather", 2, in, &a);
  }
  return y;
}

/* y += src at index along dim (y: x's shape and dtype, on its device; checked by dt__gs_check) */
static dt_status dt__scatter_add_into(const char *op, dt_tensor *y, int dim, const dt_tensor *index, const dt_tensor *src) {
  dt__bcast g;
  int64_t n, stride;
  dt_device d = y->st->device;
  if (index->numel == 0) return DT_OK;
  dt__gs_geom(y, dim, index, &src->shape, &g, &n, &stride);
  return dt__run(op, d, dt__be(d)->scatter_add(d.index, y->dtype, &g, n, stride, (const int64_t *)index->st->ptr, src->st->ptr,
                                               y->st->ptr));
}

static dt_tensor *dt__scatter_add(const dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src) {
  const char *op = "dt_scatter_add";
  dt_tensor *y;
  if (dt__gs_check(op, x, &dim, index, 1, src) != DT_OK) return NULL;
  if (!(y = dt__new(op, x->shape, x->dtype, x->st->device))) return NULL;
  if (dt__copy_bytes(op, x->st->device, y->st->ptr, x->st->device, x->st->ptr, x->nbytes) != DT_OK ||
      dt__scatter_add_into(op, y, dim, index, src) != DT_OK) {
    dt_release(y);
    return NULL;
  }
  return y;
}
DTDEF dt_tensor *dt_scatter_add(const dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src) {
  dt_tensor *y = dt__scatter_add(x, dim, index, src);
  if (y && (x->requires_grad | src->requires_grad) && !dt__no_grad) {
    const dt_tensor *in[3];
    dt__ag_args a;
    in[0] = x; in[1] = index; in[2] = src;
    a.p = 0; a.dim = dim; a.start = 0; a.perm = NULL; a.p2 = 0;
    y = dt__ag_record(y, DT__AG_SCATTER_ADD, "dt_scatter_add", 3, in, &a);
  }
  return y;
}
/* in place: not recorded, so refused while grad mode is on and x or src requires grad */
DTDEF dt_status dt_scatter_add_(dt_tensor *x, int dim, const dt_tensor *index, const dt_tensor *src) {
  const char *op = "dt_scatter_add_";
  dt_status s;
  if ((s = dt__gs_check(op, x, &dim, index, 1, src)) != DT_OK) return s;
  if ((s = dt__inplace_check(op, "x", x)) != DT_OK) return s;
  if (src->requires_grad && !dt__no_grad)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: src requires grad and grad mode is on: the in-place form records no backward "
                    "(use dt_scatter_add, which does)", op);
  if ((s = dt__scatter_add_into(op, x, dim, index, src)) == DT_OK && index->numel > 0) dt__bump(x);
  return s;
}

/* ---- index-add: index_select's backward ---- */

/* zeros of shape s (dtype t, on d) with y[o, idx[j], i] += g[o, j, i] along dim (g: (outer, k, inner));
   F32, F64 */
static dt_tensor *dt__index_add_rows(const char *op, dt_shape s, dt_dtype t, dt_device d, int dim, const dt_tensor *index,
                                     const dt_tensor *g) {
  dt_tensor *y = dt__new(op, s, t, d);
  int64_t outer, inner;
  dt_status st;
  if (!y || y->numel == 0) return y;
  if ((st = dt__run(op, d, dt__be(d)->fill(d.index, t, y->numel, 0.0, y->st->ptr))) != DT_OK) { dt_release(y); return NULL; }
  if (g->numel == 0 || index->numel == 0) return y;
  dt__around(&s, dim, &outer, &inner);
  st = dt__be(d)->index_add(d.index, t, outer, s.dims[dim], inner, (const int64_t *)index->st->ptr, index->numel, g->st->ptr,
                            y->st->ptr);
  return dt__done(op, y, st);
}

/* ---- pad ---- */

static dt_tensor *dt__pad(const dt_tensor *x, const int64_t *pad, int npad, double value, int *left) {
  const char *op = "dt_pad";
  int nd, i, k, any = 1;
  int64_t xs[DT_MAX_DIMS], ystr[DT_MAX_DIMS], xoff = 0, yoff = 0, numel = 0;
  size_t nbytes = 0, es;
  dt_shape ys;
  dt__bcast g;
  dt_tensor *y;
  dt_device d;
  char sb[200];
  if (dt__check_tensor(op, "x", x) != DT_OK) return NULL;
  nd = x->shape.ndim;
  if (npad < 0 || npad % 2 != 0 || npad / 2 > nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: npad is %d, but it must be even and at most twice x's dimensions (%d, shape %s)", op,
             npad, 2 * nd, dt__shape_str(&x->shape, sb, sizeof sb));
    return NULL;
  }
  if (npad > 0 && !pad) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: pad is NULL and npad is %d", op, npad); return NULL; }
  ys = x->shape;
  for (i = 0; i < nd; i++) left[i] = 0;
  for (k = 0; k < npad / 2; k++) { /* pad[2k], pad[2k + 1]: before and after dim nd - 1 - k */
    int dim = nd - 1 - k;
    int64_t l = pad[2 * k], r = pad[2 * k + 1], size = x->shape.dims[dim];
    for (i = 0; i < 2; i++)
      if (pad[2 * k + i] > INT_MAX || pad[2 * k + i] < -INT_MAX) {
        dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: pad[%d] = %lld is beyond +-%d", op, 2 * k + i, (long long)pad[2 * k + i], INT_MAX);
        return NULL;
      }
    if (size + l + r < 0) {
      dt__fail(DT_ERR_SHAPE, "%s: dimension %d of x (shape %s) has size %lld, which pad[%d] = %lld and pad[%d] = %lld make negative (%lld)",
               op, dim, dt__shape_str(&x->shape, sb, sizeof sb), (long long)size, 2 * k, (long long)l, 2 * k + 1, (long long)r,
               (long long)(size + l + r));
      return NULL;
    }
    ys.dims[dim] = size + l + r;
    left[dim] = (int)l;
  }
  if (dt__check_shape(op, &ys, x->dtype, &numel, &nbytes) != DT_OK) return NULL;
  d = x->st->device;
  if (!(y = dt__new(op, ys, x->dtype, d)) || y->numel == 0) return y;
  if (dt__run(op, d, dt__be(d)->fill(d.index, x->dtype, y->numel, value, y->st->ptr)) != DT_OK) { dt_release(y); return NULL; }
  /* x's part that stays: along each dim from max(0, -left) in x to max(0, left) in y */
  dt__contig_strides(&x->shape, xs);
  dt__contig_strides(&ys, ystr);
  memset(&g, 0, sizeof g);
  g.ndim = nd > 0 ? nd : 1;
  g.numel = 1;
  if (nd == 0) { g.dims[0] = 1; g.astride[0] = 1; g.bstride[0] = 1; }
  for (i = 0; i < nd; i++) {
    int64_t xf = left[i] < 0 ? -(int64_t)left[i] : 0, yf = left[i] > 0 ? left[i] : 0;
    int64_t len = x->shape.dims[i] - xf, room = ys.dims[i] - yf;
    if (room < len) len = room;
    if (len <= 0) { any = 0; break; }
    g.dims[i] = len; g.astride[i] = xs[i]; g.bstride[i] = ystr[i];
    g.numel *= len;
    xoff += xf * xs[i]; yoff += yf * ystr[i];
  }
  if (!any) return y;
  es = dt_dtype_size(x->dtype);
  if (dt__strided_copy(op, d, es, &g, (const char *)x->st->ptr + (size_t)xoff * es, (char *)y->st->ptr + (size_t)yoff * es) != DT_OK) {
    dt_release(y);
    return NULL;
  }
  return y;
}
DTDEF dt_tensor *dt_pad(const dt_tensor *x, const int64_t *pad, int npad, double value) {
  int left[DT_MAX_DIMS];
  dt_tensor *y = dt__pad(x, pad, npad, value, left);
  /* the node keeps each dim's left padding (the right: from the shapes) */
  return y && DT__AG_ON(x) ? dt__ag_record1a(y, DT__AG_PAD, "dt_pad", x, 0, 0, 0, left) : y;
}

/* ---- randperm, randint ---- */

/* A permutation of 0..n-1 from one draw (seed, draw): Fisher-Yates from the top, the swap for
   position i with r = v mod (i + 1), v the 64-bit word (w[0] << 32 | w[1]) of Philox block i.
   Computed on the host, so every device gets the same numbers. */
static void dt__randperm_host(int64_t *idx, int64_t n, uint64_t seed, uint64_t draw) {
  uint32_t w[4];
  int64_t i;
  for (i = 0; i < n; i++) idx[i] = i;
  for (i = n - 1; i > 0; i--) {
    uint64_t r;
    int64_t t;
    dt__philox_block(seed, draw, (uint64_t)i, w);
    r = ((uint64_t)w[0] << 32 | w[1]) % (uint64_t)(i + 1);
    t = idx[i]; idx[i] = idx[(int64_t)r]; idx[(int64_t)r] = t;
  }
}

DTDEF dt_tensor *dt_randperm(int64_t n, dt_device d) {
  const char *op = "dt_randperm";
  uint64_t seed, draw;
  int64_t *h;
  dt_tensor *y;
  dt_status s;
  if (n < 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: n is %lld, but it must be >= 0", op, (long long)n); return NULL; }
  /* made on the host now: a graph's replays could not draw it afresh */
  if (dt__graph_forbid(op, d, "a permutation made on the host") != DT_OK) return NULL;
  if (!(y = dt__new(op, dt_shape1(n), DT_I64, d))) return NULL;
  if (d.type == DT_CPU) {
    dt__rng_next(&seed, &draw);
    dt__randperm_host((int64_t *)y->st->ptr, n, seed, draw);
    return y;
  }
  if (!(h = (int64_t *)DT_MALLOC(y->nbytes > 0 ? y->nbytes : 1))) {
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host: the permutation's %llu bytes", op, (unsigned long long)y->nbytes);
    dt_release(y);
    return NULL;
  }
  dt__rng_next(&seed, &draw);
  dt__randperm_host(h, n, seed, draw);
  s = dt__copy_bytes(op, d, y->st->ptr, dt_cpu(), h, y->nbytes);
  DT_FREE(h);
  if (s != DT_OK) { dt_release(y); return NULL; }
  return y;
}

DTDEF dt_tensor *dt_randint(int64_t low, int64_t high, dt_shape s, dt_device d) {
  const char *op = "dt_randint";
  uint64_t seed, draw;
  const uint64_t *gen;
  dt_tensor *y;
  if (low >= high) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: low is %lld and high is %lld, but low must be less than high", op, (long long)low,
             (long long)high);
    return NULL;
  }
  if (!(y = dt__new(op, s, DT_I64, d))) return NULL;
  dt__rng_next_on(d, &seed, &draw, &gen);
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(d)->random_int(d.index, seed, draw, gen, y->numel, low, (uint64_t)high - (uint64_t)low,
                                               (int64_t *)y->st->ptr));
}

/* ---- src/ops/losses.c ---- */
/* The losses of torch.nn.functional: binary_cross_entropy_with_logits, nll_loss, l1_loss,
   smooth_l1_loss (and mse_loss with a reduction), each with PyTorch's reduction ('none', 'mean',
   'sum'). The elementwise loss is made of the backend's elementwise kernels (softplus for the
   cross-entropy, so it never overflows) and nll_loss's gather; each loss records one autograd node,
   whose backward (dt__ag_loss_bw) is written with the public operations, so on a GPU it runs there. */

static dt_status dt__check_reduction(const char *op, dt_reduction r) {
  if (r == DT_REDUCTION_NONE || r == DT_REDUCTION_MEAN || r == DT_REDUCTION_SUM) return DT_OK;
  return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: unknown reduction %d (expected DT_REDUCTION_NONE, DT_REDUCTION_MEAN or DT_REDUCTION_SUM)",
                  op, (int)r);
}

/* l (owned) reduced as r: itself, or its mean or sum as a 0-d tensor (the mean of nothing is NaN,
   the sum 0, as PyTorch's) */
static dt_tensor *dt__loss_reduce(const char *op, dt_tensor *l, dt_reduction r) {
  dt_tensor *y;
  if (!l || r == DT_REDUCTION_NONE) return l;
  if (l->numel == 0) y = dt__filled(op, dt_shape0(), l->dtype, r == DT_REDUCTION_MEAN ? NAN : 0.0, l->st->device);
  else y = dt__reduce(op, r == DT_REDUCTION_MEAN ? DT__R_MEAN : DT__R_SUM, l, 1, l->numel, 1, dt_shape0());
  dt_release(l);
  return y;
}

/* f(a, b) with a and b owned (NULL: a failure already reported, passed on) */
static dt_tensor *dt__loss_take2(dt_tensor *(*f)(const dt_tensor *, const dt_tensor *), dt_tensor *a, dt_tensor *b) {
  dt_tensor *y = a && b ? f(a, b) : NULL;
  dt_release(a);
  dt_release(b);
  return y;
}

/* the elementwise loss of x and t (checked: one float dtype, one shape, one device), not recorded */
static dt_tensor *dt__loss_elem(const char *op, dt__ag_op kind, const dt_tensor *x, const dt_tensor *t, double beta) {
  dt_tensor *d, *a, *c, *q;
  if (kind == DT__AG_BCE_WITH_LOGITS) /* softplus(x) - x t = max(x, 0) - x t + log1p(exp(-|x|)) */
    return dt__loss_take2(dt_sub, dt__unary(op, DT__U_SOFTPLUS, x, 0, 0), dt__binary(op, DT__B_MUL, x, t));
  if (!(d = dt__binary(op, DT__B_SUB, x, t))) return NULL;
  if (kind == DT__AG_MSE_LOSS_EX) { a = dt__binary(op, DT__B_MUL, d, d); dt_release(d); return a; }
  a = dt__unary(op, DT__U_ABS, d, 0, 0);
  dt_release(d);
  if (kind == DT__AG_L1_LOSS || beta == 0 || !a) return a;
  /* smooth l1 with c = min(|d|, beta): 0.5 c^2 / beta + (|d| - c), which is 0.5 d^2 / beta below
     beta and |d| - 0.5 beta from it on (and inf for an infinite d, not NaN) */
  if (!(c = dt__unary(op, DT__U_CLAMP, a, -INFINITY, beta))) { dt_release(a); return NULL; }
  q = dt__binary(op, DT__B_MUL, c, c);
  if (q) { d = dt__unary(op, DT__U_AFFINE, q, 0.5 / beta, 0.0); dt_release(q); q = d; }
  d = dt__binary(op, DT__B_SUB, a, c);
  dt_release(a); dt_release(c);
  return dt__loss_take2(dt_add, q, d);
}

/* the node of a loss y of x and t, with its reduction and beta */
static dt_tensor *dt__loss_record(dt_tensor *y, dt__ag_op kind, const char *op, const dt_tensor *x, const dt_tensor *t,
                                  dt_reduction r, double beta) {
  const dt_tensor *in[2];
  dt__ag_args g;
  if (!y || !DT__AG_ON2(x, t)) return y;
  in[0] = x; in[1] = t;
  g.p = beta; g.dim = (int)r; g.start = 0; g.perm = NULL; g.p2 = 0;
  return dt__ag_record(y, kind, op, 2, in, &g);
}

/* bce_with_logits, l1, smooth_l1, mse: logits/x/pred and target/y of one float dtype and shape */
static dt_tensor *dt__loss_pair(const char *op, dt__ag_op kind, const char *xn, const dt_tensor *x, const char *tn,
                                const dt_tensor *t, double beta, dt_reduction r) {
  if (dt__autocast_up(x, t) && dt__is_float(x->dtype) && dt__is_float(t->dtype)) { /* autocast: both in F32 */
    int failed = 0;
    dt_tensor *cx = dt__autocast_cast(x, DT_F32, &failed), *ct = dt__autocast_cast(t, DT_F32, &failed), *y;
    y = failed ? NULL : dt__loss_pair(op, kind, xn, cx, tn, ct, beta, r);
    dt_release(cx); dt_release(ct);
    return y;
  }
  if (dt__same_float_shape(op, xn, x, tn, t) != DT_OK || dt__check_reduction(op, r) != DT_OK) return NULL;
  if (kind == DT__AG_SMOOTH_L1_LOSS && !(beta >= 0)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: beta must be at least 0 (0 is l1_loss), got %g", op, beta);
    return NULL;
  }
  return dt__loss_record(dt__loss_reduce(op, dt__loss_elem(op, kind, x, t, beta), r), kind, op, x, t, r, beta);
}

DTDEF dt_tensor *dt_bce_with_logits_ex(const dt_tensor *logits, const dt_tensor *target, dt_reduction reduction) {
  return dt__loss_pair("dt_bce_with_logits", DT__AG_BCE_WITH_LOGITS, "logits", logits, "target", target, 0, reduction);
}
DTDEF dt_tensor *dt_bce_with_logits(const dt_tensor *logits, const dt_tensor *target) {
  return dt_bce_with_logits_ex(logits, target, DT_REDUCTION_MEAN);
}
DTDEF dt_tensor *dt_l1_loss_ex(const dt_tensor *x, const dt_tensor *y, dt_reduction reduction) {
  return dt__loss_pair("dt_l1_loss", DT__AG_L1_LOSS, "x", x, "y", y, 0, reduction);
}
DTDEF dt_tensor *dt_l1_loss(const dt_tensor *x, const dt_tensor *y) { return dt_l1_loss_ex(x, y, DT_REDUCTION_MEAN); }
DTDEF dt_tensor *dt_smooth_l1_loss_ex(const dt_tensor *x, const dt_tensor *y, double beta, dt_reduction reduction) {
  return dt__loss_pair("dt_smooth_l1_loss", DT__AG_SMOOTH_L1_LOSS, "x", x, "y", y, beta, reduction);
}
DTDEF dt_tensor *dt_smooth_l1_loss(const dt_tensor *x, const dt_tensor *y, double beta) {
  return dt_smooth_l1_loss_ex(x, y, beta, DT_REDUCTION_MEAN);
}
DTDEF dt_tensor *dt_mse_loss_ex(const dt_tensor *pred, const dt_tensor *target, dt_reduction reduction) {
  return dt__loss_pair("dt_mse_loss_ex", DT__AG_MSE_LOSS_EX, "pred", pred, "target", target, 0, reduction);
}

/* log_probs: (n, c) floating, target: I64 (n,), on one device; on the CPU every label in [0, c)
   (checked before anything runs; a GPU checks on the device and reports at the next synchronizing
   call, as dt_cross_entropy does). No ignore_index: every row counts. */
DTDEF dt_tensor *dt_nll_loss_ex(const dt_tensor *log_probs, const dt_tensor *target, dt_reduction reduction) {
  const char *op = "dt_nll_loss";
  int64_t n, c;
  dt_tensor *l;
  if (dt__autocast_up(log_probs, NULL)) { /* autocast: in F32 */
    dt_tensor *cl = dt_cast(log_probs, DT_F32);
    l = cl ? dt_nll_loss_ex(cl, target, reduction) : NULL;
    dt_release(cl);
    return l;
  }
  if (dt__check_class_target(op, "log_probs", log_probs, target, &n, &c) != DT_OK) return NULL;
  if (dt__check_reduction(op, reduction) != DT_OK) return NULL;
  if (!(l = dt__new(op, dt_shape1(n), log_probs->dtype, log_probs->st->device))) return NULL;
  if (n > 0)
    l = dt__done(op, l, dt__be(l->st->device)->nll_loss(l->st->device.index, l->dtype, n, c, log_probs->st->ptr,
                                                        (const int64_t *)target->st->ptr, l->st->ptr));
  l = dt__loss_reduce(op, l, reduction);
  return l && DT__AG_ON(log_probs) ? dt__loss_record(l, DT__AG_NLL_LOSS, op, log_probs, target, reduction, 0) : l;
}
DTDEF dt_tensor *dt_nll_loss(const dt_tensor *log_probs, const dt_tensor *target) {
  return dt_nll_loss_ex(log_probs, target, DT_REDUCTION_MEAN);
}

/* ---- the backward ---- */

/* x (owned) as dtype t */
static dt_tensor *dt__loss_cast(dt_tensor *x, dt_dtype t) {
  dt_tensor *y = x ? dt_cast(x, t) : NULL;
  dt_release(x);
  return y;
}

/* sign(d) (0 at 0 and NaN) as d's dtype; d owned */
static dt_tensor *dt__loss_sign(dt_tensor *d) {
  dt_tensor *pos = NULL, *neg = NULL;
  if (!d) return NULL;
  if ((pos = dt__loss_cast(dt_gt_scalar(d, 0), d->dtype))) neg = dt__loss_cast(dt_lt_scalar(d, 0), d->dtype);
  dt_release(d);
  return dt__loss_take2(dt_sub, pos, neg);
}

/* the gradients of a loss node from g (0-d, or the elementwise loss's shape for 'none'):
   dl/dx G times g, divided by the count for 'mean'; the target's where it needs one:
   bce: G = sigmoid(x) - t, dl/dt = -x; l1: sign(x - t); smooth l1: clamp(x - t, -beta, beta) / beta
   (beta 0: sign); mse: 2 (x - t); the target's of these three -G; nll: -1 at (i, target[i]). */
static dt_status dt__ag_loss_bw(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const dt_tensor *x = n->saved[0], *t = n->saved[1];
  dt_reduction r = (dt_reduction)n->dim;
  int need1 = n->in[1].node || n->in[1].leaf;
  int64_t cnt = n->op == DT__AG_NLL_LOSS ? x->shape.dims[0] : x->numel;
  double scale = r == DT_REDUCTION_MEAN ? (cnt ? 1.0 / (double)cnt : 0.0) : 1.0;
  dt_tensor *gs = dt_mul_scalar(g, n->op == DT__AG_NLL_LOSS ? -scale : scale), *G = NULL;
  if (!gs) return dt_last_status();
  switch (n->op) {
    case DT__AG_BCE_WITH_LOGITS:
      G = dt__loss_take2(dt_sub, dt_sigmoid(x), dt_retain((dt_tensor *)t));
      if (G && need1 && !(gin[1] = dt__loss_take2(dt_mul, dt_neg(x), dt_retain(gs)))) { dt_release(G); G = NULL; }
      break;
    case DT__AG_L1_LOSS: G = dt__loss_sign(dt_sub(x, t)); break;
    case DT__AG_SMOOTH_L1_LOSS:
      if (n->p == 0) G = dt__loss_sign(dt_sub(x, t));
      else {
        dt_tensor *d = dt_sub(x, t), *c = d ? dt_clamp(d, -n->p, n->p) : NULL;
        G = c ? dt_mul_scalar(c, 1.0 / n->p) : NULL;
        dt_release(d); dt_release(c);
      }
      break;
    case DT__AG_MSE_LOSS_EX: {
      dt_tensor *d = dt_sub(x, t);
      G = d ? dt_mul_scalar(d, 2.0) : NULL;
      dt_release(d);
      break;
    }
    case DT__AG_NLL_LOSS: { /* the one-hot (n, c) of the labels, times -g (n, 1) or 0-d */
      dt_tensor *ar = dt_arange(0, (double)x->shape.dims[1], 1, DT_I64, x->st->device), *row = NULL, *col = NULL;
      if (ar) row = dt_reshape(ar, dt_shape2(1, x->shape.dims[1]));
      if (row) col = dt_reshape(t, dt_shape2(x->shape.dims[0], 1));
      G = row && col ? dt__loss_cast(dt_eq(row, col), x->dtype) : NULL;
      dt_release(ar); dt_release(row); dt_release(col);
      if (G && gs->shape.ndim == 1) {
        dt_tensor *g2 = dt_reshape(gs, dt_shape2(gs->shape.dims[0], 1));
        dt_release(gs);
        gs = g2;
      }
      break;
    }
    default: break;
  }
  if (G && gs) gin[0] = dt_mul(G, gs);
  if (gin[0] && need1 && n->op != DT__AG_BCE_WITH_LOGITS && n->op != DT__AG_NLL_LOSS) gin[1] = dt_neg(gin[0]);
  dt_release(G);
  dt_release(gs);
  if (!gin[0] || (need1 && n->op != DT__AG_NLL_LOSS && !gin[1])) {
    dt_release(gin[0]); dt_release(gin[1]);
    gin[0] = gin[1] = NULL;
    return dt_last_status() != DT_OK ? dt_last_status() : DT_ERR_BACKEND;
  }
  return DT_OK;
}

/* ---- src/ops/half.c ---- */
/* torch.set_float32_matmul_precision: one setting for the process, handed to every backend
   that computes F32 matmuls more than one way (cuBLAS: CUBLAS_COMPUTE_32F, _FAST_TF32,
   _FAST_16BF). */
static volatile int dt__f32_precision; /* 0 highest, 1 high, 2 medium */

DTDEF dt_status dt_set_float32_matmul_precision(const char *precision) {
  static const char *const names[3] = {"highest", "high", "medium"};
  int i;
  if (!precision) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_set_float32_matmul_precision: precision is NULL");
  for (i = 0; i < 3; i++)
    if (strcmp(precision, names[i]) == 0) break;
  if (i == 3)
    return dt__fail(DT_ERR_INVALID_ARGUMENT,
                    "dt_set_float32_matmul_precision: expected \"highest\", \"high\" or \"medium\", got \"%.64s\"", precision);
  DT__ATOMIC_STORE(&dt__f32_precision, i);
#ifdef DEVTENSOR_CUDA
  if (dt__cuda_backend()->set_matmul_precision) dt__cuda_backend()->set_matmul_precision(i);
#endif
  return DT_OK;
}

DTDEF const char *dt_get_float32_matmul_precision(void) {
  int i = DT__ATOMIC_LOAD(&dt__f32_precision);
  return i == 2 ? "medium" : i == 1 ? "high" : "highest";
}

/* ---- src/io/print.c ---- */
/* A port of torch/_tensor_str.py (PyTorch 1.13) with the default print
   options: precision 4, threshold 1000, edgeitems 3, linewidth 80.
   No heap: a first pass over the (summarised) values picks the number mode
   and the column width, a second pass writes the text. */

#define DT__PRINT_PRECISION 4
#define DT__PRINT_THRESHOLD 1000
#define DT__PRINT_EDGEITEMS 3
#define DT__PRINT_LINEWIDTH 80
#define DT__PRINT_INDENT    7   /* strlen("tensor(") */
#define DT__PRINT_NUMBUF    512 /* "%.4f" of DBL_MAX is 315 chars */

/* snprintf-style sink: counts everything, stores what fits. */
typedef struct dt__print_out {
  char  *buf;
  size_t cap, len;
  size_t col;       /* characters since the last newline */
} dt__print_out;

typedef struct dt__print_ctx {
  const void *host;
  dt_dtype    t;
  int         ndim;
  int64_t     dims[DT_MAX_DIMS], strides[DT_MAX_DIMS];
  int         summarize;                 /* numel > threshold */
  int         int_mode, sci_mode, width; /* _Formatter's state */
} dt__print_ctx;

static void dt__print_putc(dt__print_out *o, char ch) {
  if (o->cap && o->len < o->cap - 1) o->buf[o->len] = ch;
  o->len++;
  o->col = ch == '\n' ? 0 : o->col + 1;
}

static void dt__print_puts(dt__print_out *o, const char *s) {
  while (*s) dt__print_putc(o, *s++);
}

static void dt__print_spaces(dt__print_out *o, int64_t k) {
  while (k-- > 0) dt__print_putc(o, ' ');
}

/* Python's "{}".format(v) for an int. */
static int dt__fmt_int(char *out, int64_t v) {
  char tmp[24];
  int k = 0, n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do { tmp[k++] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
  if (v < 0) out[n++] = '-';
  while (k) out[n++] = tmp[--k];
  out[n] = '\0';
  return n;
}

/* Python's format(v, spec) for spec ".4f" (mode 'f'), ".4e" ('e') or ".0f"
   ('0'). nan/inf as Python writes them (never "-nan"); the decimal point is
   always '.', whatever the C locale says. */
static int dt__fmt_float(char *out, double v, char mode) {
  char tmp[DT__PRINT_NUMBUF];
  int i = 0, n = 0;
  if (isnan(v)) { memcpy(out, "nan", 4); return 3; }
  if (isinf(v)) { if (v < 0) out[n++] = '-'; memcpy(out + n, "inf", 4); return n + 3; }
  if (mode == 'e') snprintf(tmp, sizeof tmp, "%.*e", DT__PRINT_PRECISION, v);
  else snprintf(tmp, sizeof tmp, "%.*f", mode == '0' ? 0 : DT__PRINT_PRECISION, v);
  tmp[sizeof tmp - 1] = '\0';
  if (tmp[i] == '-') out[n++] = tmp[i++];
  while (tmp[i] >= '0' && tmp[i] <= '9') out[n++] = tmp[i++];
  if (tmp[i] && tmp[i] != 'e') {            /* the locale's decimal point, any length */
    while (tmp[i] && (tmp[i] < '0' || tmp[i] > '9')) i++;
    out[n++] = '.';
  }
  while (tmp[i]) out[n++] = tmp[i++];
  out[n] = '\0';
  return n;
}

static double dt__print_getf(const dt__print_ctx *c, int64_t i) {
  if (c->t == DT_F16 || c->t == DT_BF16) return (double)dt__half_to_f32(c->t == DT_BF16, ((const uint16_t *)c->host)[i]);
  return c->t == DT_F32 ? (double)((const float *)c->host)[i] : ((const double *)c->host)[i];
}

static int64_t dt__print_geti(const dt__print_ctx *c, int64_t i) {
  switch (c->t) {
    case DT_I32: return (int64_t)((const int32_t *)c->host)[i];
    case DT_U8: return (int64_t)((const uint8_t *)c->host)[i];
    case DT_BOOL: return ((const uint8_t *)c->host)[i] != 0;
    default: return ((const int64_t *)c->host)[i];
  }
}

/* integers and bool print as Python's f"{value}": 7, True, False */
static int dt__print_is_int(dt_dtype t) { return t == DT_I32 || t == DT_I64 || t == DT_U8 || t == DT_BOOL; }
static int dt__fmt_intval(char *out, const dt__print_ctx *c, int64_t i) {
  if (c->t == DT_BOOL) {
    int v = ((const uint8_t *)c->host)[i] != 0;
    memcpy(out, v ? "True" : "False", v ? 5 : 6);
    return v ? 4 : 5;
  }
  return dt__fmt_int(out, dt__print_geti(c, i));
}

/* Dim d shows `count` entries; the p-th is element `index` (summarised:
   the first and last edgeitems). */
static int dt__print_summ(const dt__print_ctx *c, int d) {
  return c->summarize && c->dims[d] > 2 * DT__PRINT_EDGEITEMS;
}

static int64_t dt__print_count(const dt__print_ctx *c, int d) {
  return dt__print_summ(c, d) ? 2 * DT__PRINT_EDGEITEMS : c->dims[d];
}

static int64_t dt__print_index(const dt__print_ctx *c, int d, int64_t p) {
  if (dt__print_summ(c, d) && p >= DT__PRINT_EDGEITEMS) return c->dims[d] - 2 * DT__PRINT_EDGEITEMS + p;
  return p;
}

/* One scan over get_summarized_data(). pass 0: int widths; 1: float
   min/max/int_mode; 2: float widths. */
static void dt__print_scan(dt__print_ctx *c, int pass, double *mn, double *mx, int *have) {
  int64_t pos[DT_MAX_DIMS];
  char num[DT__PRINT_NUMBUF];
  int d, w;
  for (d = 0; d < c->ndim; d++) pos[d] = 0;
  for (;;) {
    int64_t off = 0;
    for (d = 0; d < c->ndim; d++) off += dt__print_index(c, d, pos[d]) * c->strides[d];
    if (pass == 0) {
      w = dt__fmt_intval(num, c, off);
      if (w > c->width) c->width = w;
    } else {
      double v = dt__print_getf(c, off), a = fabs(v);
      if (!isnan(v) && !isinf(v) && v != 0) {       /* nonzero_finite_vals */
        if (pass == 1) {
          if (!*have || a < *mn) *mn = a;
          if (!*have || a > *mx) *mx = a;
          *have = 1;
          if (v != ceil(v)) c->int_mode = 0;
        } else {
          w = dt__fmt_float(num, v, c->sci_mode ? 'e' : c->int_mode ? '0' : 'f');
          if (c->int_mode && !c->sci_mode) w++;      /* the '.' */
          if (w > c->width) c->width = w;
        }
      }
    }
    for (d = c->ndim - 1; d >= 0; d--) {
      if (++pos[d] < dt__print_count(c, d)) break;
      pos[d] = 0;
    }
    if (d < 0) break;
  }
}

/* _Formatter.__init__ */
static void dt__print_formatter(dt__print_ctx *c) {
  double mn = 0, mx = 0;
  int have = 0;
  c->int_mode = 1; c->sci_mode = 0; c->width = 1;
  if (dt__print_is_int(c->t)) { dt__print_scan(c, 0, &mn, &mx, &have); return; }
  dt__print_scan(c, 1, &mn, &mx, &have);
  if (!have) return;
  if (mx / mn > 1000.0 || mx > 1.0e8 || (!c->int_mode && mn < 1.0e-4)) c->sci_mode = 1;
  dt__print_scan(c, 2, &mn, &mx, &have);
}

/* _Formatter.format: one element, right-aligned to the common width. */
static void dt__print_elem(dt__print_out *o, const dt__print_ctx *c, int64_t off) {
  char num[DT__PRINT_NUMBUF];
  int w;
  if (dt__print_is_int(c->t)) {
    w = dt__fmt_intval(num, c, off);
  } else {
    double v = dt__print_getf(c, off);
    w = dt__fmt_float(num, v, c->sci_mode ? 'e' : c->int_mode ? '0' : 'f');
    if (c->int_mode && !c->sci_mode && !isnan(v) && !isinf(v)) { num[w++] = '.'; num[w] = '\0'; }
  }
  dt__print_spaces(o, (int64_t)c->width - w);
  dt__print_puts(o, num);
}

/* _tensor_str_with_formatter / _vector_str for dims d.. at element `off`. */
static void dt__print_rec(dt__print_out *o, const dt__print_ctx *c, int d, int64_t off, int indent) {
  int64_t k, p, items = dt__print_count(c, d);
  int summ = dt__print_summ(c, d), i;
  if (summ) items++;                              /* the "..." entry */
  dt__print_putc(o, '[');
  if (d == c->ndim - 1) {
    int64_t per_line = (DT__PRINT_LINEWIDTH - indent) / (c->width + 2);
    if (per_line < 1) per_line = 1;
    for (k = 0; k < items; k++) {
      if (k && k % per_line == 0) { dt__print_puts(o, ",\n"); dt__print_spaces(o, indent + 1); }
      else if (k) dt__print_puts(o, ", ");
      if (summ && k == DT__PRINT_EDGEITEMS) { dt__print_puts(o, " ..."); continue; }
      p = summ && k > DT__PRINT_EDGEITEMS ? k - 1 : k;
      dt__print_elem(o, c, off + dt__print_index(c, d, p) * c->strides[d]);
    }
  } else {
    for (k = 0; k < items; k++) {
      if (k) {
        dt__print_putc(o, ',');
        for (i = d + 1; i < c->ndim; i++) dt__print_putc(o, '\n');
        dt__print_spaces(o, indent + 1);
      }
      if (summ && k == DT__PRINT_EDGEITEMS) { dt__print_puts(o, "..."); continue; }
      p = summ && k > DT__PRINT_EDGEITEMS ? k - 1 : k;
      dt__print_rec(o, c, d + 1, off + dt__print_index(c, d, p) * c->strides[d], indent + 1);
    }
  }
  dt__print_putc(o, ']');
}

/* _add_suffixes, one suffix a+b+c: wraps onto a new line when the current
   one would pass the line width. *last is PyTorch's last_line_len. */
static void dt__print_suffix(dt__print_out *o, size_t *last, const char *a, const char *b, const char *c) {
  size_t len = strlen(a) + strlen(b) + strlen(c);
  if (*last + len + 2 > DT__PRINT_LINEWIDTH) {
    dt__print_puts(o, ",\n");
    dt__print_spaces(o, DT__PRINT_INDENT);
    *last = DT__PRINT_INDENT + len;
  } else {
    dt__print_puts(o, ", ");
    *last += len + 2;
  }
  dt__print_puts(o, a); dt__print_puts(o, b); dt__print_puts(o, c);
}

/* Writes PyTorch's repr of a tensor whose values are in `host` (contiguous,
   row-major, native dtype) into buf with snprintf's contract. `device` is
   NULL (or "cpu") for the CPU, else e.g. "cuda:0". Returns -1 for bad
   arguments (buf, when n > 0, then holds ""). */
static int dt__format_tensor(char *buf, size_t n, const void *host, dt_dtype t, const dt_shape *s, const char *device) {
  dt__print_out o;
  dt__print_ctx c;
  char sizebuf[8 + DT_MAX_DIMS * 24];
  int64_t numel = 1;
  size_t last;
  int d, empty = 0;
  const char *tname = dt__dtype_str(t);

  if (buf && n) buf[0] = '\0';
  if ((!buf && n) || !s || s->ndim < 0 || s->ndim > DT_MAX_DIMS || (int)t < (int)DT_F32 || (int)t > (int)DT_BF16) return -1;
  for (d = 0; d < s->ndim; d++) {
    if (s->dims[d] < 0) return -1;
    if (s->dims[d] == 0) empty = 1;
    else if (numel <= DT__PRINT_THRESHOLD)   /* only compared to the threshold: no overflow */
      numel = s->dims[d] > DT__PRINT_THRESHOLD ? DT__PRINT_THRESHOLD + 1 : numel * s->dims[d];
  }
  if (!empty && !host) return -1;

  o.buf = buf; o.cap = n; o.len = 0; o.col = 0;
  memset(&c, 0, sizeof c);
  c.host = host; c.t = t; c.ndim = s->ndim;
  for (d = c.ndim - 1; d >= 0; d--) {
    c.dims[d] = s->dims[d];
    /* an empty tensor's dims may multiply past int64 ((0, 2^62, 4)); it reads no element */
    c.strides[d] = d == c.ndim - 1 || empty ? 1 : c.strides[d + 1] * c.dims[d + 1];
  }
  c.summarize = !empty && numel > DT__PRINT_THRESHOLD;

  dt__print_puts(&o, "tensor(");
  if (empty) {
    dt__print_puts(&o, "[]");
  } else {
    dt__print_formatter(&c);
    if (c.ndim == 0) dt__print_elem(&o, &c, 0);
    else dt__print_rec(&o, &c, 0, 0, DT__PRINT_INDENT);
  }

  /* _str_intern: device, then (empty) size, then dtype. */
  last = o.col + 2;   /* len(s) - s.rfind("\n") + 1 */
  if (device && strcmp(device, "cpu") != 0) dt__print_suffix(&o, &last, "device='", device, "'");
  if (empty) {
    if (c.ndim != 1) {
      int k = 0;
      memcpy(sizebuf, "size=(", 6); k = 6;
      for (d = 0; d < c.ndim; d++) {
        if (d) { sizebuf[k++] = ','; sizebuf[k++] = ' '; }
        k += dt__fmt_int(sizebuf + k, c.dims[d]);
      }
      sizebuf[k++] = ')'; sizebuf[k] = '\0';
      dt__print_suffix(&o, &last, sizebuf, "", "");
    }
    if (t != DT_F32) dt__print_suffix(&o, &last, "dtype=torch.", tname, "");
  } else if (t == DT_F64 || t == DT_I32 || t == DT_U8 || t == DT_F16 || t == DT_BF16) { /* not the defaults float32, int64, bool */
    dt__print_suffix(&o, &last, "dtype=torch.", tname, "");
  }
  dt__print_putc(&o, ')');

  if (n) buf[o.len < n ? o.len : n - 1] = '\0';
  return o.len > (size_t)0x7fffffff ? -1 : (int)o.len;
}

DTDEF int dt_snprint(char *buf, size_t n, const dt_tensor *t) {
  const char *op = "dt_snprint";
  void *host = NULL;
  char dev[48];
  int r;
  if (buf && n > 0) buf[0] = 0;
  if (dt__check_tensor(op, "t", t) != DT_OK) return -1;
  if (!buf && n > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: buf is NULL but n is %llu", op, (unsigned long long)n); return -1; }
  if (dt__graph_forbid(op, t->st->device, "a copy to host memory") != DT_OK) return -1;
  if (t->nbytes > 0) {
    if (t->st->device.type == DT_CPU) host = t->st->ptr;
    else if (!(host = DT_MALLOC(t->nbytes))) {
      char b[32];
      dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host: tried to allocate %s", op, dt__bytes_str((double)t->nbytes, b, sizeof b));
      return -1;
    } else if (dt__copy_bytes(op, dt_cpu(), host, t->st->device, t->st->ptr, t->nbytes) != DT_OK) {
      DT_FREE(host);
      return -1;
    }
  }
  r = dt__format_tensor(buf, n, host, t->dtype, &t->shape,
                        t->st->device.type == DT_CPU ? NULL : dt_device_str(t->st->device, dev, sizeof dev));
  if (host && host != t->st->ptr) DT_FREE(host);
  return r;
}

/* f gets the text sn writes of obj (snprintf's contract), then a newline: written into the
   caller's n bytes at small when it fits, else into one allocation of its length. dt_fprint's and
   dt_module_fprint's. */
static dt_status dt__fprint_text(FILE *f, const char *op, char *small, size_t n, int (*sn)(char *, size_t, const void *),
                                 const void *obj) {
  char *buf = small;
  int len;
  dt_status s = DT_OK;
  if ((len = sn(small, n, obj)) < 0) return dt_last_status();
  if ((size_t)len >= n) {
    if (!(buf = (char *)DT_MALLOC((size_t)len + 1)))
      return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host formatting %d characters", op, len);
    if (sn(buf, (size_t)len + 1, obj) < 0) { DT_FREE(buf); return dt_last_status(); }
  }
  if (fputs(buf, f) < 0 || fputc('\n', f) == EOF) s = dt__fail(DT_ERR_IO, "%s: writing failed", op);
  if (buf != small) DT_FREE(buf);
  return s;
}

static int dt__snprint_tensor(char *buf, size_t n, const void *t) { return dt_snprint(buf, n, (const dt_tensor *)t); }

DTDEF dt_status dt_fprint(FILE *f, const dt_tensor *t) {
  const char *op = "dt_fprint";
  char small[512];
  if (!f) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: f is NULL", op);
  if (!t) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: t is NULL", op);
  return dt__fprint_text(f, op, small, sizeof small, dt__snprint_tensor, t);
}

DTDEF dt_status dt_print(const dt_tensor *t) {
  if (!t) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_print: t is NULL");
  return dt_fprint(stdout, t);
}

/* ---- src/cpu/gemm/opts.h ---- */
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

/* ---- src/nn/grad_mode.c ---- */
/* torch.no_grad() per thread (dt__no_grad, in src/autograd/graph.c): with grad disabled dt_forward
   keeps nothing for a backward pass (no layer holds its input), dt_backward refuses and no
   operation records for autograd. */

DTDEF int dt_set_grad_enabled(int enabled) {
  int prev = !dt__no_grad;
  dt__no_grad = !enabled;
  return prev;
}

/* ---- src/nn/module.c ---- */
typedef enum dt__mkind { DT__M_LINEAR = 0, DT__M_RELU, DT__M_SEQ, DT__M_USER } dt__mkind;
/* modules that hold others: a sequential, a user-written module (its children) */
#define DT__M_HOLDS(m) ((m)->kind == DT__M_SEQ || (m)->kind == DT__M_USER)

struct dt_module {
  dt__mkind kind;
  dt_device device;
  dt_dtype dtype;
  /* linear: weight (out, in), bias (out,), their grads; in == 0 until a lazy layer's first forward */
  int64_t in, out;
  dt_tensor *weight, *bias, *gweight, *gbias;
  dt_tensor *input;        /* linear, relu: the last forward's input, for backward */
  dt_shape out_shape;      /* the last forward's output shape; ndim -1 before any */
  int nograd_fwd;          /* the last forward called on this module ran with grad disabled: it kept nothing */
  /* linear: gzero, its grads are zero but not written yet: dt_zero_grad leaves them so while
     nothing outside the layer can see them (gshared 0), and the next backward writes them with
     beta 0 instead of adding to zeros (the trainer's assign), which saves a pass over gW and a
     read of it; gshared, they were handed out (a parameter table: dt_module_grad, optimizers):
     from then on dt_zero_grad writes zeros at once. See dt__grads_walk. */
  int gzero, gshared;
  /* sequential */
  dt_module **layers;
  int n, cap;
  dt_module *parent;       /* the sequential that holds this module (it has one owner), or NULL */
  int height;              /* sequentials from this module down to its deepest layer: 0 for a layer, 1 for a flat sequential */
  /* the parameter table, rebuilt when asked: names as PyTorch's state_dict */
  int nparams;
  char **names;            /* nparams pointers into name_pool */
  char *name_pool;
  size_t pool_bytes;
  dt_tensor **params, **grads;
  /* user-written (dt_module_new): its forward, its own parameters (one reference each, in the
     order added) with their gradient tensors (as a linear layer's: each one's dt_grad, adopted
     after an autograd backward), and its children's names (the children are layers[]) */
  dt_forward_fn fwd;
  char cls[DT_MODULE_NAME_MAX + 1]; /* the class name given to dt_module_new (print(net)); "Module" for NULL */
  void *user;
  void (*free_user)(void *user);
  int np, pcap;
  char **pnames, **cnames;
  dt_tensor **pts, **pgs;
  int training;            /* net.train() / net.eval() */
  /* buffers (register_buffer): state that saves, loads and moves with the module but is no
     parameter (no gradient, no optimizer step), one reference each, in the order added */
  int nb, bcap;
  char **bnames;
  dt_tensor **bts;
};

/* The longest parameter name: one "index." (an int has at most 10 digits) or "name." per holding
   module, then the parameter's name. */
#define DT__NAME_MAX (DT_MODULE_MAX_DEPTH * (DT_MODULE_NAME_MAX + 1) + DT_MODULE_NAME_MAX + 1)

static dt_module *dt__module_new(const char *op, dt__mkind kind) {
  dt_module *m = (dt_module *)DT_MALLOC(sizeof(dt_module));
  if (!m) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); return NULL; }
  memset(m, 0, sizeof *m);
  m->kind = kind; m->device = dt_cpu(); m->dtype = DT_F32; m->out_shape.ndim = -1; m->training = 1;
  return m;
}

/* A linear layer's parameters are autograd's leaves: they require grad, and each one's dt_grad is
   the layer's own gradient tensor (gweight, gbias: one header, held by both), which the fused
   backward writes and the optimizers read. While the layer's gradients are zeros not yet written
   (gzero) the leaves hold none: an autograd backward then stores its gradient itself, and
   dt__linear_sync adopts it. */
static void dt__linear_link(dt_module *m) {
  m->weight->requires_grad = 1; m->bias->requires_grad = 1;
  if (m->gzero) return;
  if (m->weight->grad != m->gweight) { dt_release(m->weight->grad); m->weight->grad = dt_retain(m->gweight); }
  if (m->bias->grad != m->gbias) { dt_release(m->bias->grad); m->bias->grad = dt_retain(m->gbias); }
}

/* Takes into *slot the gradient g that an autograd backward (or dt_clip_grad_norm_, ...) stored in
   leaf p: into the memory of the header the layer has handed out (their storages swap: no copy, a
   borrowed dt_module_grad stays valid), or the header itself when they differ in shape or dtype or
   something else holds g. */
static void dt__grad_adopt(dt_tensor *p, dt_tensor **slot) {
  dt_tensor *g = p->grad, *h = *slot;
  if (g == h) return;
  if (g->refs == 1 && g->st->refs == 1 && !g->st->base && !g->st->foreign && /* only the leaf holds g */
      g->dtype == h->dtype && g->numel == h->numel && g->nbytes == h->nbytes && !g->node && !h->node &&
      g->shape.ndim == h->shape.ndim && memcmp(g->shape.dims, h->shape.dims, sizeof(int64_t) * (size_t)g->shape.ndim) == 0) {
    dt__storage *t = h->st;
    h->st = g->st; g->st = t;
    dt_release(g);
    p->grad = dt_retain(h);
  } else {
    dt_release(h);
    *slot = dt_retain(g);
  }
}

/* Brings a linear layer's gradients (gweight, gbias) and its leaves' dt_grad together again after
   autograd or a caller changed the latter: adopts a gradient stored there; a gradient set to NULL
   (dt_zero_grad_) is zeros. Every entry point that reads or writes the layer's gradients calls it. */
static dt_status dt__linear_sync(dt_module *m) {
  dt_tensor *ps[2], **slots[2];
  int k;
  if (m->kind != DT__M_LINEAR || !m->weight) return DT_OK;
  ps[0] = m->weight; ps[1] = m->bias; slots[0] = &m->gweight; slots[1] = &m->gbias;
  if (m->gzero && !ps[0]->grad && !ps[1]->grad) return DT_OK; /* still zeros not written */
  for (k = 0; k < 2; k++) /* a leaf without a gradient: zeros */
    if (!ps[k]->grad) {
      dt_status s = dt_fill_(*slots[k], 0.0);
      if (s != DT_OK) return s;
      ps[k]->grad = dt_retain(*slots[k]);
    }
  for (k = 0; k < 2; k++) dt__grad_adopt(ps[k], slots[k]);
  m->gzero = 0;
  return DT_OK;
}
/* A user-written module's parameter k: as dt__linear_sync, without pending zeros. */
static dt_status dt__uparam_sync(dt_module *m, int k) {
  dt_tensor *p = m->pts[k];
  if (!p->grad) {
    dt_status s = dt_fill_(m->pgs[k], 0.0);
    if (s != DT_OK) return s;
    p->grad = dt_retain(m->pgs[k]);
  }
  dt__grad_adopt(p, &m->pgs[k]);
  return DT_OK;
}
static dt_status dt__module_sync(dt_module *m) {
  dt_status s;
  int i;
  if (m->kind == DT__M_LINEAR) return dt__linear_sync(m);
  for (i = 0; i < m->np; i++) if ((s = dt__uparam_sync(m, i)) != DT_OK) return s;
  for (i = 0; i < m->n; i++) if ((s = dt__module_sync(m->layers[i])) != DT_OK) return s;
  return DT_OK;
}

/* Draws a linear layer's parameters: uniform in +-1/sqrt(in), as PyTorch's default. */
static dt_status dt__linear_init(const char *op, dt_module *m, int64_t in) {
  double bound = 1.0 / sqrt((double)in);
  dt_tensor *w = NULL, *b = NULL, *gw = NULL, *gb = NULL, *u;
  dt_status s = DT_OK;
  if ((u = dt__random(op, dt_shape2(m->out, in), m->device, 0))) {
    w = dt__unary(op, DT__U_AFFINE, u, 2 * bound, -bound); dt_release(u);
  }
  if (w && (u = dt__random(op, dt_shape1(m->out), m->device, 0))) {
    b = dt__unary(op, DT__U_AFFINE, u, 2 * bound, -bound); dt_release(u);
  }
  if (b && m->dtype != DT_F32) {
    dt_tensor *w2 = dt_cast(w, m->dtype), *b2 = w2 ? dt_cast(b, m->dtype) : NULL;
    dt_release(w); dt_release(b); w = w2; b = b2;
  }
  if (b) gw = dt__filled(op, dt_shape2(m->out, in), m->dtype, 0.0, m->device);
  if (gw) gb = dt__filled(op, dt_shape1(m->out), m->dtype, 0.0, m->device);
  if (!gb) {
    s = dt_last_status();
    dt_release(w); dt_release(b); dt_release(gw);
    return s == DT_OK ? DT_ERR_OUT_OF_MEMORY : s;
  }
  m->in = in; m->weight = w; m->bias = b; m->gweight = gw; m->gbias = gb;
  dt__linear_link(m);
  return DT_OK;
}

DTDEF dt_module *dt_linear(int64_t in_features, int64_t out_features) {
  const char *op = "dt_linear";
  dt_module *m;
  if (in_features < 0 || out_features <= 0) {
    dt__fail(DT_ERR_SHAPE, "%s: expected in_features >= 0 (0: lazy) and out_features > 0, got %lld and %lld", op,
             (long long)in_features, (long long)out_features);
    return NULL;
  }
  if (in_features > ((int64_t)1 << 40) || out_features > ((int64_t)1 << 40) ||
      (in_features > 0 && out_features > (INT64_MAX / 8) / in_features)) {
    dt__fail(DT_ERR_SHAPE, "%s: %lld x %lld weights are too large", op, (long long)out_features, (long long)in_features);
    return NULL;
  }
  if (!(m = dt__module_new(op, DT__M_LINEAR))) return NULL;
  m->out = out_features;
  if (in_features > 0 && dt__linear_init(op, m, in_features) != DT_OK) { DT_FREE(m); return NULL; }
  return m;
}

DTDEF dt_module *dt_relu_layer(void) { return dt__module_new("dt_relu_layer", DT__M_RELU); }
DTDEF dt_module *dt_sequential(void) {
  dt_module *m = dt__module_new("dt_sequential", DT__M_SEQ);
  if (m) m->height = 1;
  return m;
}

static int dt__module_has_params(const dt_module *m) {
  int i;
  if (m->kind == DT__M_LINEAR) return m->weight != NULL;
  if (m->np) return 1;
  if (DT__M_HOLDS(m))
    for (i = 0; i < m->n; i++) if (dt__module_has_params(m->layers[i])) return 1;
  return 0;
}

/* Sets the device and dtype of a module whose parameters (if any) are already there. */
static void dt__module_set_place(dt_module *m, dt_device d, dt_dtype t) {
  int i;
  m->device = d; m->dtype = t;
  for (i = 0; i < m->n; i++) dt__module_set_place(m->layers[i], d, t);
}

DTDEF void dt_module_free(dt_module *m) {
  int i;
  if (!m) return;
  if (m->parent) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_free: m belongs to a sequential, which frees it"); return; }
  dt_release(m->weight); dt_release(m->bias); dt_release(m->gweight); dt_release(m->gbias); dt_release(m->input);
  for (i = 0; i < m->n; i++) { m->layers[i]->parent = NULL; dt_module_free(m->layers[i]); } /* at most DT_MODULE_MAX_DEPTH deep */
  for (i = 0; i < m->np; i++) { dt_release(m->pts[i]); dt_release(m->pgs[i]); DT_FREE(m->pnames[i]); }
  for (i = 0; m->cnames && i < m->n; i++) DT_FREE(m->cnames[i]);
  for (i = 0; i < m->nb; i++) { dt_release(m->bts[i]); DT_FREE(m->bnames[i]); }
  if (m->bts) { DT_FREE(m->bts); DT_FREE(m->bnames); }
  if (m->pts) { DT_FREE(m->pts); DT_FREE(m->pgs); DT_FREE(m->pnames); }
  if (m->cnames) DT_FREE(m->cnames);
  if (m->free_user) m->free_user(m->user);
  if (m->layers) DT_FREE(m->layers);
  if (m->names) DT_FREE(m->names);
  if (m->name_pool) DT_FREE(m->name_pool);
  if (m->params) DT_FREE(m->params);
  if (m->grads) DT_FREE(m->grads);
  DT_FREE(m);
}

/* The outermost sequential that holds m (m itself when none does), and how many sequentials
   lie on the way from it to m, m included when it is one: at most DT_MODULE_MAX_DEPTH steps. */
static dt_module *dt__module_root(dt_module *m, int *depth) {
  int d = DT__M_HOLDS(m);
  while (m->parent) { m = m->parent; d++; }
  if (depth) *depth = d;
  return m;
}

/* dt_sequential_add, and dt_module_add_child (cname: the child's name, a copy the holder keeps). */
static dt_status dt__module_attach(const char *op, dt_module *seq, dt_module *layer, char *cname);
DTDEF dt_status dt_sequential_add(dt_module *seq, dt_module *layer) { return dt__module_attach("dt_sequential_add", seq, layer, NULL); }
static dt_status dt__module_attach(const char *op, dt_module *seq, dt_module *layer, char *cname) {
  char a[48], b[48];
  dt_module *root, *up;
  int depth;
  /* not freed on these two failures: its owner, or seq itself, still holds it */
  if (layer && layer->parent) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: layer already belongs to a sequential (a module has one owner)", op);
  if (layer && seq) /* layer holds seq when it is seq or one of the sequentials above it */
    for (up = seq; up; up = up->parent)
      if (up == layer) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: cannot add a sequential to itself or to one of its own layers", op);
  if (!seq) { dt_module_free(layer); if (cname) DT_FREE(cname); return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: seq is NULL", op); }
  if (!layer) { /* usually dt_sequential_add(net, dt_linear(...)) whose constructor failed: keep its reason */
    char prev[sizeof dt__err_msg];
    dt_status ps = dt__err_status;
    if (ps == DT_OK) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: layer is NULL", op);
    memcpy(prev, dt__err_msg, sizeof prev);
    return dt__fail(ps, "%s: layer is NULL, after %.900s", op, prev);
  }
  if (seq->kind != (cname ? DT__M_USER : DT__M_SEQ)) {
    dt_module_free(layer); if (cname) DT_FREE(cname);
    return dt__fail(DT_ERR_INVALID_ARGUMENT, cname ? "%s: m is not a module made by dt_module_new" : "%s: seq is not a sequential", op);
  }
  root = dt__module_root(seq, &depth);
  if (depth + layer->height > DT_MODULE_MAX_DEPTH) {
    dt_status s = dt__fail(DT_ERR_INVALID_ARGUMENT,
                           "%s: sequentials nest at most %d deep (DT_MODULE_MAX_DEPTH), but seq is %d deep and the layer "
                           "holds %d more, which would make %d", op, DT_MODULE_MAX_DEPTH, depth, layer->height, depth + layer->height);
    dt_module_free(layer); if (cname) DT_FREE(cname);
    return s;
  }
  /* the whole network, from its outermost sequential down, is on one device in one dtype */
  if (dt__module_has_params(layer) && !dt_device_equal(layer->device, root->device)) {
    if (dt__module_has_params(root)) {
      dt_status s = dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: the layer is on %s but the sequential is on %s (move one with dt_module_to)",
                             op, dt_device_str(layer->device, a, sizeof a), dt_device_str(root->device, b, sizeof b));
      dt_module_free(layer); if (cname) DT_FREE(cname);
      return s;
    }
    dt__module_set_place(root, layer->device, layer->dtype); /* nothing to move yet: follow the layer */
  }
  if (dt__module_has_params(layer) && layer->dtype != root->dtype) {
    if (dt__module_has_params(root)) {
      dt_status s = dt__fail(DT_ERR_DTYPE, "%s: the layer is %s but the sequential is %s", op,
                             dt_dtype_name(layer->dtype), dt_dtype_name(root->dtype));
      dt_module_free(layer); if (cname) DT_FREE(cname);
      return s;
    }
    dt__module_set_place(root, root->device, layer->dtype);
  }
  if (seq->n == seq->cap) {
    int cap = seq->cap ? seq->cap * 2 : 8;
    dt_module **l = seq->cap > INT_MAX / 2 ? NULL : (dt_module **)DT_MALLOC(sizeof(dt_module *) * (size_t)cap);
    char **cn = l && cname ? (char **)DT_MALLOC(sizeof(char *) * (size_t)cap) : NULL;
    if (l && cname && !cn) { DT_FREE(l); l = NULL; }
    if (!l) { dt_module_free(layer); if (cname) DT_FREE(cname); return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); }
    if (seq->n) memcpy(l, seq->layers, sizeof(dt_module *) * (size_t)seq->n);
    if (seq->layers) DT_FREE(seq->layers);
    if (cn) {
      if (seq->n) memcpy(cn, seq->cnames, sizeof(char *) * (size_t)seq->n);
      if (seq->cnames) DT_FREE(seq->cnames);
      seq->cnames = cn;
    }
    seq->layers = l; seq->cap = cap;
  }
  dt__module_set_place(layer, seq->device, seq->dtype); /* a layer without parameters holds no data */
  if (cname) seq->cnames[seq->n] = cname;
  seq->layers[seq->n++] = layer;
  layer->parent = seq;
  /* the heights above it: each step stops at the first sequential already as high */
  for (up = seq; up && up->height < layer->height + 1; layer = up, up = up->parent) up->height = layer->height + 1;
  return DT_OK;
}

DTDEF dt_module *dt_sequential_get(dt_module *seq, int i) {
  if (!seq) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sequential_get: seq is NULL"); return NULL; }
  if (seq->kind != DT__M_SEQ) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sequential_get: seq is not a sequential"); return NULL; }
  if (i < -seq->n || i >= seq->n) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sequential_get: index %d out of range for %d layers", i, seq->n);
    return NULL;
  }
  return seq->layers[i < 0 ? i + seq->n : i];
}

DTDEF int dt_sequential_len(const dt_module *seq) {
  if (!seq || seq->kind != DT__M_SEQ) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sequential_len: seq is not a sequential"); return -1; }
  return seq->n;
}

DTDEF dt_device dt_module_device(const dt_module *m) {
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_device: m is NULL"); return dt_cpu(); }
  return m->device;
}

/* Every parameter slot of m (weights, biases and grads), in state_dict order. */
static int dt__module_slots(dt_module *m, dt_tensor ***slots, int cap, int at) {
  int i;
  if (m->kind == DT__M_LINEAR && m->weight) {
    if (at + 4 <= cap) { slots[at] = &m->weight; slots[at + 1] = &m->bias; slots[at + 2] = &m->gweight; slots[at + 3] = &m->gbias; }
    return at + 4;
  }
  for (i = 0; i < m->np; i++, at += 2)
    if (at + 2 <= cap) { slots[at] = &m->pts[i]; slots[at + 1] = &m->pgs[i]; }
  for (i = 0; i < m->n; i++) at = dt__module_slots(m->layers[i], slots, cap, at);
  return at;
}

static void dt__module_drop_saved(dt_module *m) {
  int i;
  dt_release(m->input); m->input = NULL; m->out_shape.ndim = -1; m->nograd_fwd = 0;
  for (i = 0; i < m->n; i++) dt__module_drop_saved(m->layers[i]);
}

/* Converts every parameter and grad with `conv`; all or nothing. */
static dt_status dt__module_convert_ng(const char *op, dt_module *m, dt_device d, dt_dtype t);
/* (with grad mode off: a parameter moved is a new leaf, not a copy recorded by autograd) */
static dt_status dt__module_convert(const char *op, dt_module *m, dt_device d, dt_dtype t) {
  int prev = dt__no_grad;
  dt_status s;
  dt__no_grad = 1;
  s = dt__module_sync(m);
  if (s == DT_OK) s = dt__module_convert_ng(op, m, d, t);
  dt__no_grad = prev;
  return s;
}
static void dt__module_link(dt_module *m) {
  int i;
  if (m->kind == DT__M_LINEAR && m->weight) dt__linear_link(m);
  for (i = 0; i < m->np; i++) {
    m->pts[i]->requires_grad = 1;
    if (m->pts[i]->grad != m->pgs[i]) { dt_release(m->pts[i]->grad); m->pts[i]->grad = dt_retain(m->pgs[i]); }
  }
  for (i = 0; i < m->n; i++) dt__module_link(m->layers[i]);
}
/* Every buffer slot of m, after the parameter slots (at). */
static int dt__module_bslots(dt_module *m, dt_tensor ***slots, int cap, int at) {
  int i;
  for (i = 0; i < m->nb; i++, at++) if (at < cap) slots[at] = &m->bts[i];
  for (i = 0; i < m->n; i++) at = dt__module_bslots(m->layers[i], slots, cap, at);
  return at;
}
static dt_status dt__module_convert_ng(const char *op, dt_module *m, dt_device d, dt_dtype t) {
  dt_tensor ***slots, **fresh;
  int np = dt__module_slots(m, NULL, 0, 0), n = dt__module_bslots(m, NULL, 0, np), i;
  slots = n ? (dt_tensor ***)DT_MALLOC(sizeof(dt_tensor **) * (size_t)n) : NULL;
  fresh = n ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)n) : NULL;
  if (n && (!slots || !fresh)) {
    if (slots) DT_FREE(slots);
    if (fresh) DT_FREE(fresh);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  dt__module_slots(m, slots, n, 0);
  dt__module_bslots(m, slots, n, np);
  for (i = 0; i < n; i++) {
    dt_tensor *moved = dt_to(*slots[i], d);
    /* an integer buffer (num_batches_tracked) keeps its dtype, as under PyTorch's .double() */
    fresh[i] = moved && dt_dtype_of(moved) != t && (i < np || dt__is_float(moved->dtype)) ? dt_cast(moved, t) : moved;
    if (fresh[i] != moved) dt_release(moved);
    if (!fresh[i]) {
      dt_status s = dt_last_status();
      while (i-- > 0) dt_release(fresh[i]);
      DT_FREE(slots); DT_FREE(fresh);
      return s;
    }
  }
  for (i = 0; i < n; i++) {
    if (fresh[i] != *slots[i] && (*slots[i])->grad) { dt_release((*slots[i])->grad); (*slots[i])->grad = NULL; } /* the old leaf lets go of its gradient */
    dt_release(*slots[i]); *slots[i] = fresh[i];
  }
  if (n) { DT_FREE(slots); DT_FREE(fresh); }
  dt__module_link(m);
  dt__module_drop_saved(m);
  dt__module_set_place(m, d, t);
  return DT_OK;
}

/* A layer of a sequential moves with it: moving it alone would make a module
   whose parameters sit on two devices (or in two dtypes). Staying put is fine. */
static dt_status dt__module_check_borrowed(const char *op, const dt_module *m, dt_device d, dt_dtype t) {
  char a[48], b[48];
  if (!m->parent || (dt_device_equal(d, m->device) && t == m->dtype)) return DT_OK;
  return dt__fail(DT_ERR_INVALID_ARGUMENT,
                  "%s: m is a layer of a sequential (on %s, %s); move the sequential that holds it, so that all its "
                  "parameters stay on one device in one dtype (asked for %s, %s)",
                  op, dt_device_str(m->device, a, sizeof a), dt_dtype_name(m->dtype), dt_device_str(d, b, sizeof b),
                  dt_dtype_name(t));
}

DTDEF dt_status dt_module_to(dt_module *m, dt_device d) {
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_to: m is NULL");
  if ((s = dt__check_device("dt_module_to", d)) != DT_OK) return s;
  if ((s = dt__module_check_borrowed("dt_module_to", m, d, m->dtype)) != DT_OK) return s;
  return dt__module_convert("dt_module_to", m, d, m->dtype);
}

DTDEF dt_status dt_module_to_dtype(dt_module *m, dt_dtype t) {
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_to_dtype: m is NULL");
  if (!dt__is_float(t))
    return dt__fail(DT_ERR_DTYPE, "dt_module_to_dtype: parameters are float32, float64, float16 or bfloat16, not %s", dt_dtype_name(t));
  if ((s = dt__module_check_borrowed("dt_module_to_dtype", m, m->device, t)) != DT_OK) return s;
  return dt__module_convert("dt_module_to_dtype", m, m->device, t);
}

/* Walks m's parameters in state_dict order, names as PyTorch's ("0.weight"): counts them in
   *count and their names' bytes (NULs included) in *bytes, and when root->names is set, fills
   root's table. prefix (DT__NAME_MAX bytes) holds plen bytes of the name so far; a name never
   runs past it, as sequentials nest at most DT_MODULE_MAX_DEPTH deep. */
static void dt__params_walk(dt_module *root, dt_module *m, char *prefix, size_t plen, int *count, size_t *bytes) {
  int i;
  if (m->kind == DT__M_LINEAR) {
    int k;
    for (k = 0; k < 2; k++) {
      size_t len = plen + (k ? 4 : 6);
      if (root->names && *count < root->nparams) {
        char *name = root->name_pool + *bytes;
        memcpy(name, prefix, plen);
        memcpy(name + plen, k ? "bias" : "weight", len - plen + 1);
        root->names[*count] = name;
        root->params[*count] = k ? m->bias : m->weight;
        root->grads[*count] = k ? m->gbias : m->gweight;
        m->gshared = 1; /* seen from outside the layer now: zeroed at once from here on */
      }
      (*count)++;
      *bytes += len + 1;
    }
  } else if (DT__M_HOLDS(m)) {
    for (i = 0; i < m->np; i++) { /* a user-written module's own, then its children's: state_dict's order */
      size_t len = plen + strlen(m->pnames[i]);
      if (root->names && *count < root->nparams) {
        char *name = root->name_pool + *bytes;
        memcpy(name, prefix, plen);
        memcpy(name + plen, m->pnames[i], len - plen + 1);
        root->names[*count] = name;
        root->params[*count] = m->pts[i];
        root->grads[*count] = m->pgs[i];
      }
      (*count)++;
      *bytes += len + 1;
    }
    for (i = 0; i < m->n; i++) {
      int w = m->cnames ? snprintf(prefix + plen, DT__NAME_MAX - plen, "%s.", m->cnames[i])
                        : snprintf(prefix + plen, DT__NAME_MAX - plen, "%d.", i);
      dt__params_walk(root, m->layers[i], prefix, plen + (size_t)w, count, bytes);
    }
  }
}

static void dt__params_free(dt_module *m) {
  if (m->names) DT_FREE(m->names);
  if (m->name_pool) DT_FREE(m->name_pool);
  if (m->params) DT_FREE(m->params);
  if (m->grads) DT_FREE(m->grads);
  m->names = NULL; m->name_pool = NULL; m->params = m->grads = NULL; m->nparams = 0; m->pool_bytes = 0;
}

enum { DT__G_ZERO, DT__G_SETTLE, DT__G_SGD }; /* what dt__grads_walk does */
static dt_status dt__grads_walk(dt_module *m, int what, double lr);

/* Rebuilds m's parameter table: names as PyTorch's state_dict ("0.weight"), as long as they are.
   While the count and the names' bytes stay, the table stays where it is (a name handed out
   by dt_module_param stays valid). The table hands out the grads: pending zeros (gzero) are
   written first, and the layers are marked gshared. */
static dt_status dt__params_build(const char *op, dt_module *m) {
  dt_status s;
  int count = 0;
  size_t bytes = 0;
  char prefix[DT__NAME_MAX];
  dt_module probe = *m;
  probe.names = NULL;
  dt__params_walk(&probe, m, prefix, 0, &count, &bytes);
  if (count > 0 && (s = dt__module_sync(m)) != DT_OK) return s;
  if (count > 0 && (s = dt__grads_walk(m, DT__G_SETTLE, 0.0)) != DT_OK) return s; /* the table hands out grads */
  if (count == m->nparams && bytes == m->pool_bytes && m->names) {
    count = 0; bytes = 0;
    dt__params_walk(m, m, prefix, 0, &count, &bytes);
    return DT_OK;
  }
  dt__params_free(m);
  if (count == 0) return DT_OK;
  m->names = (char **)DT_MALLOC(sizeof(char *) * (size_t)count);
  m->name_pool = (char *)DT_MALLOC(bytes);
  m->params = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)count);
  m->grads = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)count);
  if (!m->names || !m->name_pool || !m->params || !m->grads) {
    dt__params_free(m);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  m->nparams = count; m->pool_bytes = bytes;
  count = 0; bytes = 0;
  dt__params_walk(m, m, prefix, 0, &count, &bytes);
  return DT_OK;
}

DTDEF int dt_module_num_params(const dt_module *m) {
  int count = 0;
  size_t bytes = 0;
  char prefix[DT__NAME_MAX];
  dt_module probe;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_num_params: m is NULL"); return -1; }
  probe = *m; probe.names = NULL;
  dt__params_walk(&probe, (dt_module *)m, prefix, 0, &count, &bytes);
  return count;
}

DTDEF dt_tensor *dt_module_param(dt_module *m, int i, const char **name) {
  const char *op = "dt_module_param";
  if (name) *name = NULL;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (dt__params_build(op, m) != DT_OK) return NULL;
  if (i < 0 || i >= m->nparams) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index %d out of range for %d parameters", op, i, m->nparams); return NULL; }
  if (name) *name = m->names[i];
  if (!m->params[i]) dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not initialised yet (a lazy layer: run a forward first)", op, m->names[i]);
  return m->params[i];
}

DTDEF dt_tensor *dt_module_grad(dt_module *m, int i) {
  const char *op = "dt_module_grad";
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (dt__params_build(op, m) != DT_OK) return NULL;
  if (i < 0 || i >= m->nparams) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: index %d out of range for %d parameters", op, i, m->nparams); return NULL; }
  if (!m->grads[i]) dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not initialised yet (a lazy layer: run a forward first)", op, m->names[i]);
  return m->grads[i];
}

DTDEF dt_tensor *dt_linear_weight(dt_module *m) {
  if (!m || m->kind != DT__M_LINEAR) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_linear_weight: m is not a linear layer"); return NULL; }
  if (!m->weight) dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_linear_weight: a lazy layer has no weight before its first forward");
  return m->weight;
}
DTDEF dt_tensor *dt_linear_bias(dt_module *m) {
  if (!m || m->kind != DT__M_LINEAR) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_linear_bias: m is not a linear layer"); return NULL; }
  if (!m->bias) dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_linear_bias: a lazy layer has no bias before its first forward");
  return m->bias;
}

/* 1 when m is or holds a module made by dt_module_new. */
static int dt__module_has_user(const dt_module *m) {
  int i;
  if (m->kind == DT__M_USER) return 1;
  for (i = 0; i < m->n; i++) if (dt__module_has_user(m->layers[i])) return 1;
  return 0;
}

/* 1 when m is or holds a linear layer (lazy or not). */
static int dt__module_has_linear(const dt_module *m) {
  int i;
  if (m->kind == DT__M_LINEAR || m->np) return 1;
  for (i = 0; i < m->n; i++) if (dt__module_has_linear(m->layers[i])) return 1;
  return 0;
}

/* ---- layers a user writes: an nn.Module subclass (DESIGN.md "Autograd") ---- */

DTDEF dt_module *dt_module_new(const char *name, dt_forward_fn forward, void *user, void (*free_user)(void *user)) {
  const char *op = "dt_module_new";
  dt_module *m;
  if (!forward) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: forward is NULL", op); return NULL; }
  if (!(m = dt__module_new(op, DT__M_USER))) return NULL;
  /* the class's name, which print(net) shows (parameter names come from the holders); cut to
     DT_MODULE_NAME_MAX characters */
  snprintf(m->cls, sizeof m->cls, "%s", name ? name : "Module");
  m->fwd = forward; m->user = user; m->free_user = free_user; m->height = 1;
  return m;
}

/* A parameter's or child's name: 1..DT_MODULE_NAME_MAX characters, no '.', not taken in m. */
static dt_status dt__module_name_check(const char *op, const char *what, dt_module *m, const char *name) {
  size_t len;
  int i;
  if (!name) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: name is NULL", op);
  len = strlen(name);
  if (len == 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the %s's name is empty", op, what);
  if (len > DT_MODULE_NAME_MAX)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the %s's name \"%.40s...\" has %zu characters, at most %d", op, what, name, len, DT_MODULE_NAME_MAX);
  if (strchr(name, '.'))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the %s's name \"%s\" contains a '.' (PyTorch: attribute name can't contain \".\")", op, what, name);
  for (i = 0; i < m->np; i++)
    if (strcmp(m->pnames[i], name) == 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m already has a parameter named \"%s\"", op, name);
  for (i = 0; m->cnames && i < m->n; i++)
    if (strcmp(m->cnames[i], name) == 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m already has a child named \"%s\"", op, name);
  for (i = 0; i < m->nb; i++)
    if (strcmp(m->bnames[i], name) == 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m already has a buffer named \"%s\"", op, name);
  return DT_OK;
}

static char *dt__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = (char *)DT_MALLOC(n);
  if (c) memcpy(c, s, n);
  return c;
}

DTDEF dt_status dt_module_add_param(dt_module *m, const char *name, dt_tensor *t) {
  const char *op = "dt_module_add_param";
  dt_module *root;
  dt_tensor *g = NULL;
  char *nm, a[48], b[48];
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (m->kind != DT__M_USER) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is not a module made by dt_module_new", op);
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if ((s = dt__module_name_check(op, "parameter", m, name)) != DT_OK) return s;
  if (!dt__is_float(t->dtype))
    return dt__fail(DT_ERR_DTYPE, "%s: %s is %s; a parameter is float32, float64, float16 or bfloat16", op, name, dt_dtype_name(t->dtype));
  if (t->node)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not a leaf (the result of %s): a parameter is a leaf (use dt_detach)", op, name, t->node->name);
  root = dt__module_root(m, NULL);
  if (dt__module_has_params(root)) { /* the whole network on one device in one dtype */
    if (!dt_device_equal(t->st->device, root->device))
      return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: %s is on %s but the module is on %s", op, name,
                      dt_device_str(t->st->device, a, sizeof a), dt_device_str(root->device, b, sizeof b));
    if (t->dtype != root->dtype)
      return dt__fail(DT_ERR_DTYPE, "%s: %s is %s but the module is %s", op, name, dt_dtype_name(t->dtype), dt_dtype_name(root->dtype));
  }
  { /* its gradient tensor: the one it has, else zeros */
    if (t->grad && t->grad->dtype == t->dtype && t->grad->numel == t->numel) g = dt_retain(t->grad);
    else if (!(g = dt__filled(op, t->shape, t->dtype, 0.0, t->st->device))) return dt_last_status();
  }
  nm = dt__strdup(name);
  if (m->np == m->pcap) {
    int cap = m->pcap ? m->pcap * 2 : 4;
    char **pn = nm && m->pcap < INT_MAX / 2 ? (char **)DT_MALLOC(sizeof(char *) * (size_t)cap) : NULL;
    dt_tensor **pt = pn ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)cap) : NULL;
    dt_tensor **pg = pt ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)cap) : NULL;
    if (!pg) {
      if (pn) DT_FREE(pn);
      if (pt) DT_FREE(pt);
      if (nm) DT_FREE(nm);
      dt_release(g);
      return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    }
    if (m->np) {
      memcpy(pn, m->pnames, sizeof(char *) * (size_t)m->np);
      memcpy(pt, m->pts, sizeof(dt_tensor *) * (size_t)m->np);
      memcpy(pg, m->pgs, sizeof(dt_tensor *) * (size_t)m->np);
      DT_FREE(m->pnames); DT_FREE(m->pts); DT_FREE(m->pgs);
    }
    m->pnames = pn; m->pts = pt; m->pgs = pg; m->pcap = cap;
  } else if (!nm) {
    dt_release(g);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  if (!dt__module_has_params(root)) dt__module_set_place(root, t->st->device, t->dtype);
  m->pnames[m->np] = nm; m->pts[m->np] = dt_retain(t); m->pgs[m->np] = g;
  m->np++;
  t->requires_grad = 1;
  if (t->grad != g) { dt_release(t->grad); t->grad = dt_retain(g); }
  return DT_OK;
}

DTDEF dt_status dt_module_add_child(dt_module *m, const char *name, dt_module *child) {
  const char *op = "dt_module_add_child";
  dt_module *up;
  char *nm;
  dt_status s;
  /* not freed on these two failures: its owner, or m itself, still holds it */
  if (child && child->parent) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: child already belongs to a module (a module has one owner)", op);
  if (child && m)
    for (up = m; up; up = up->parent)
      if (up == child) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: cannot add a module to itself or to one of its own children", op);
  if (!m) { dt_module_free(child); return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); }
  if (!child) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: child is NULL", op);
  if (m->kind != DT__M_USER) { dt_module_free(child); return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is not a module made by dt_module_new", op); }
  if ((s = dt__module_name_check(op, "child", m, name)) != DT_OK) { dt_module_free(child); return s; }
  if (!(nm = dt__strdup(name))) { dt_module_free(child); return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); }
  return dt__module_attach(op, m, child, nm);
}

DTDEF dt_tensor *dt_module_get_param(dt_module *m, const char *name) {
  const char *op = "dt_module_get_param", *dot;
  int i;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (!name) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: name is NULL", op); return NULL; }
  if ((dot = strchr(name, '.')) != NULL) { /* "block.weight", "features.0.weight": through the children */
    for (i = 0; i < m->n; i++) {
      char idx[16];
      const char *cn = idx;
      if (m->cnames) cn = m->cnames[i];
      else snprintf(idx, sizeof idx, "%d", i); /* a sequential's layers: by index */
      if (strlen(cn) == (size_t)(dot - name) && memcmp(cn, name, (size_t)(dot - name)) == 0)
        return dt_module_get_param(m->layers[i], dot + 1);
    }
  } else {
    for (i = 0; i < m->np; i++) if (strcmp(m->pnames[i], name) == 0) return m->pts[i];
    if (m->kind == DT__M_LINEAR && m->weight && strcmp(name, "weight") == 0) return m->weight;
    if (m->kind == DT__M_LINEAR && m->weight && strcmp(name, "bias") == 0) return m->bias;
  }
  dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m has no parameter named \"%.200s\"", op, name);
  return NULL;
}

DTDEF dt_module *dt_module_get_child(dt_module *m, const char *name) {
  const char *op = "dt_module_get_child";
  int i;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (!name) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: name is NULL", op); return NULL; }
  for (i = 0; m->cnames && i < m->n; i++) if (strcmp(m->cnames[i], name) == 0) return m->layers[i];
  dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m has no child named \"%.200s\"", op, name);
  return NULL;
}

DTDEF dt_status dt_module_train(dt_module *m, int training) {
  int i;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_train: m is NULL");
  m->training = training != 0;
  for (i = 0; i < m->n; i++) dt_module_train(m->layers[i], training); /* at most DT_MODULE_MAX_DEPTH deep */
  return DT_OK;
}

DTDEF int dt_module_is_training(const dt_module *m) {
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_is_training: m is NULL"); return 0; }
  return m->training;
}

/* ---- buffers (register_buffer) and the state_dict they join ---- */

DTDEF dt_status dt_module_add_buffer(dt_module *m, const char *name, dt_tensor *t) {
  const char *op = "dt_module_add_buffer";
  dt_module *root;
  char *nm, a[48], b[48];
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (m->kind != DT__M_USER) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is not a module made by dt_module_new", op);
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if ((s = dt__module_name_check(op, "buffer", m, name)) != DT_OK) return s;
  if (t->requires_grad || t->node)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s requires grad; a buffer is state without a gradient (use dt_detach)", op, name);
  root = dt__module_root(m, NULL);
  if (dt__module_has_params(root) && !dt_device_equal(t->st->device, root->device))
    return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: %s is on %s but the module is on %s", op, name,
                    dt_device_str(t->st->device, a, sizeof a), dt_device_str(root->device, b, sizeof b));
  if (dt__module_has_params(root) && dt__is_float(t->dtype) && t->dtype != root->dtype)
    return dt__fail(DT_ERR_DTYPE, "%s: %s is %s but the module is %s", op, name, dt_dtype_name(t->dtype), dt_dtype_name(root->dtype));
  if (!(nm = dt__strdup(name))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  if (m->nb == m->bcap) {
    int cap = m->bcap ? m->bcap * 2 : 4;
    char **bn = m->bcap < INT_MAX / 2 ? (char **)DT_MALLOC(sizeof(char *) * (size_t)cap) : NULL;
    dt_tensor **bt = bn ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)cap) : NULL;
    if (!bt) {
      if (bn) DT_FREE(bn);
      DT_FREE(nm);
      return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    }
    if (m->nb) {
      memcpy(bn, m->bnames, sizeof(char *) * (size_t)m->nb);
      memcpy(bt, m->bts, sizeof(dt_tensor *) * (size_t)m->nb);
      DT_FREE(m->bnames); DT_FREE(m->bts);
    }
    m->bnames = bn; m->bts = bt; m->bcap = cap;
  }
  m->bnames[m->nb] = nm; m->bts[m->nb] = dt_retain(t);
  m->nb++;
  return DT_OK;
}

/* m's buffer of that name ("child.name" through the children), or NULL */
static dt_tensor *dt__module_buffer(dt_module *m, const char *name) {
  const char *dot = strchr(name, '.');
  int i;
  if (dot) { /* "bn.running_mean", "0.running_mean": through the children */
    for (i = 0; i < m->n; i++) {
      char idx[16];
      const char *cn = idx;
      if (m->cnames) cn = m->cnames[i];
      else snprintf(idx, sizeof idx, "%d", i);
      if (strlen(cn) == (size_t)(dot - name) && memcmp(cn, name, (size_t)(dot - name)) == 0)
        return dt__module_buffer(m->layers[i], dot + 1);
    }
    return NULL;
  }
  for (i = 0; i < m->nb; i++) if (strcmp(m->bnames[i], name) == 0) return m->bts[i];
  return NULL;
}

DTDEF dt_tensor *dt_module_get_buffer(dt_module *m, const char *name) {
  const char *op = "dt_module_get_buffer";
  dt_tensor *t;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (!name) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: name is NULL", op); return NULL; }
  if (!(t = dt__module_buffer(m, name))) dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m has no buffer named \"%.200s\"", op, name);
  return t;
}

static int dt__module_has_buffers(const dt_module *m) {
  int i;
  if (m->nb) return 1;
  for (i = 0; i < m->n; i++) if (dt__module_has_buffers(m->layers[i])) return 1;
  return 0;
}

/* The state_dict's walk: as dt__params_walk, with each module's buffers after its own
   parameters and before its children's (PyTorch's order). Fills view's names and params when
   view->names is set. */
static void dt__state_walk(dt_module *view, dt_module *m, char *prefix, size_t plen, int *count, size_t *bytes) {
  int i, k, np = m->kind == DT__M_LINEAR ? 2 : m->np;
  for (k = 0; k < np + m->nb; k++) {
    const char *nm = m->kind == DT__M_LINEAR ? (k == 0 ? "weight" : k == 1 ? "bias" : m->bnames[k - 2])
                                             : k < np ? m->pnames[k] : m->bnames[k - np];
    size_t len = plen + strlen(nm);
    if (view->names && *count < view->nparams) {
      char *name = view->name_pool + *bytes;
      memcpy(name, prefix, plen);
      memcpy(name + plen, nm, len - plen + 1);
      view->names[*count] = name;
      view->params[*count] = m->kind == DT__M_LINEAR ? (k == 0 ? m->weight : k == 1 ? m->bias : m->bts[k - 2])
                                                     : k < np ? m->pts[k] : m->bts[k - np];
    }
    (*count)++;
    *bytes += len + 1;
  }
  for (i = 0; DT__M_HOLDS(m) && i < m->n; i++) {
    int w = m->cnames ? snprintf(prefix + plen, DT__NAME_MAX - plen, "%s.", m->cnames[i])
                      : snprintf(prefix + plen, DT__NAME_MAX - plen, "%d.", i);
    dt__state_walk(view, m->layers[i], prefix, plen + (size_t)w, count, bytes);
  }
}

/* What dt_module_save and dt_module_load read of m (nparams, names, params) with its buffers
   in the state_dict: m itself when it holds none, else *view, a copy of m whose table (made
   here) names its parameters and buffers; dt__state_view_free lets go of it. m's parameter
   table is built (dt__params_build) first. */
static dt_module *dt__state_view(const char *op, dt_module *m, dt_module *view) {
  char prefix[DT__NAME_MAX];
  int count = 0;
  size_t bytes = 0;
  if (!dt__module_has_buffers(m)) return m;
  *view = *m;
  view->names = NULL;
  dt__state_walk(view, m, prefix, 0, &count, &bytes);
  view->names = (char **)DT_MALLOC(sizeof(char *) * (size_t)count);
  view->name_pool = view->names ? (char *)DT_MALLOC(bytes) : NULL;
  view->params = view->name_pool ? (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)count) : NULL;
  if (!view->params) {
    if (view->name_pool) DT_FREE(view->name_pool);
    if (view->names) DT_FREE(view->names);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    return NULL;
  }
  view->grads = NULL; view->nparams = count; view->pool_bytes = bytes;
  count = 0; bytes = 0;
  dt__state_walk(view, m, prefix, 0, &count, &bytes);
  return view;
}
static void dt__state_view_free(dt_module *m, dt_module *v) {
  if (!v || v == m) return;
  DT_FREE(v->names); DT_FREE(v->name_pool); DT_FREE(v->params);
}

/* ---- src/nn/forward_backward.c ---- */
/* The first parameter's name, for messages, a lazy layer's too ("the module" when it has none). */
static const char *dt__first_param(dt_module *m, char *buf, size_t n) {
  int i;
  size_t at = 0;
  for (;;) {
    if (m->kind == DT__M_LINEAR) { snprintf(buf + at, n - at, "weight"); return buf; }
    if (m->kind == DT__M_USER && m->np) { snprintf(buf + at, n - at, "%s", m->pnames[0]); return buf; }
    if (m->kind != DT__M_SEQ) break;
    for (i = 0; i < m->n && !dt__module_has_linear(m->layers[i]); i++) {}
    if (i == m->n) break;
    at += (size_t)snprintf(buf + at, n - at, "%d.", i);
    if (at >= n) return buf;
    m = m->layers[i];
  }
  snprintf(buf, n, "the module");
  return buf;
}

/* Where a forward is: the network's input, and the path of the layer running ("2.", "1.0."). */
typedef struct dt__fwd { const dt_tensor *input; char path[DT__NAME_MAX]; size_t plen; } dt__fwd;

/* A linear layer's input that does not fit: names the layer and the network's input,
   "layer 2 (linear, 3 -> 1) takes 3 features, but its input has shape (4, 2) (the network's input has shape (4, 5))". */
static void dt__forward_misfit(const char *op, const dt_module *m, const dt_tensor *x, const dt__fwd *fw) {
  char want[64], in[24], xs[200], ns[200], who[DT__NAME_MAX + 64];
  if (m->in) snprintf(in, sizeof in, "%lld", (long long)m->in); else snprintf(in, sizeof in, "lazy");
  if (x->shape.ndim != 2) snprintf(want, sizeof want, "input of shape (n, %s)", m->in ? in : "in_features");
  else snprintf(want, sizeof want, "%lld features", (long long)m->in);
  if (fw->plen) snprintf(who, sizeof who, "layer %.*s (linear, %s -> %lld)", (int)fw->plen - 1, fw->path, in, (long long)m->out);
  else snprintf(who, sizeof who, "the layer (linear, %s -> %lld)", in, (long long)m->out);
  dt__shape_str(&x->shape, xs, sizeof xs);
  if (x == fw->input)
    dt__fail(DT_ERR_SHAPE, "%s: %s takes %s, but %s has shape %s", op, who, want, fw->plen ? "the network's input" : "the input", xs);
  else
    dt__fail(DT_ERR_SHAPE, "%s: %s takes %s, but its input has shape %s (the network's input has shape %s)", op, who, want, xs,
             dt__shape_str(&fw->input->shape, ns, sizeof ns));
}

/* A lazy layer's first input with 0 features: refused, the layer left lazy. Its weight would be
   (out, 0) and its bias drawn within +-1/sqrt(0), which makes NaN; PyTorch's LazyLinear leaves
   its parameters uninitialised memory then (reset_parameters skips in_features 0), no number to
   follow, and a lazy layer here cannot be made again with in_features 0 (0 means lazy). */
static void dt__forward_lazy_zero(const char *op, const dt_module *m, const dt_tensor *x, const dt__fwd *fw) {
  char xs[200], ns[200], who[DT__NAME_MAX + 64];
  if (fw->plen) snprintf(who, sizeof who, "layer %.*s (linear, lazy -> %lld)", (int)fw->plen - 1, fw->path, (long long)m->out);
  else snprintf(who, sizeof who, "the layer (linear, lazy -> %lld)", (long long)m->out);
  dt__shape_str(&x->shape, xs, sizeof xs);
  if (x == fw->input)
    dt__fail(DT_ERR_SHAPE, "%s: %s takes its in_features from its first input, but %s has shape %s: 0 features, nothing to weigh "
             "(the layer stays lazy)", op, who, fw->plen ? "the network's input" : "the input", xs);
  else
    dt__fail(DT_ERR_SHAPE, "%s: %s takes its in_features from its first input, but its input has shape %s (the network's input has "
             "shape %s): 0 features, nothing to weigh (the layer stays lazy)", op, who, xs, dt__shape_str(&fw->input->shape, ns, sizeof ns));
}

/* A linear layer under autocast: y = x W^T + b in the autocast dtype t, of x, W and b cast to t
   through autograd's recorded ops (the layer's fused backward takes its own dtype only, so the
   layer keeps no input: dt_backward refuses, dt_autograd_backward goes through). x in t already,
   autocast off since (a module on a lower precision input): W and b cast to x's dtype. A float16
   or bfloat16 layer (dt_module_to_dtype) runs here too, with nothing cast. */
static dt_tensor *dt__forward_linear_autocast(dt_module *m, const dt_tensor *x) {
  dt_dtype t = dt__autocast_low(x, m->weight, m->bias);
  int failed = 0;
  dt_tensor *cx, *cw, *cb, *wt = NULL, *p = NULL, *y = NULL;
  if (t == DT_F32) t = x->dtype;
  cx = dt__autocast_cast(x, t, &failed); cw = dt__autocast_cast(m->weight, t, &failed); cb = dt__autocast_cast(m->bias, t, &failed);
  if (!failed && (wt = dt_transpose(cw)) != NULL && (p = dt_matmul(cx, wt)) != NULL) y = dt_add(p, cb);
  dt_release(cx); dt_release(cw); dt_release(cb); dt_release(wt); dt_release(p);
  dt_release(m->input); m->input = NULL; m->out_shape.ndim = -1;
  return y;
}

static dt_tensor *dt__forward(const char *op, dt_module *m, const dt_tensor *x, dt__fwd *fw) {
  dt_tensor *y, *cur;
  int i;
  switch (m->kind) {
    case DT__M_LINEAR: {
      dt__bcast g;
      dt_status s;
      if (x->shape.ndim != 2) { dt__forward_misfit(op, m, x, fw); return NULL; }
      if (!m->weight && x->shape.dims[1] == 0) { dt__forward_lazy_zero(op, m, x, fw); return NULL; }
      if (!m->weight && dt__linear_init(op, m, x->shape.dims[1]) != DT_OK) return NULL;
      if (x->shape.dims[1] != m->in) { dt__forward_misfit(op, m, x, fw); return NULL; }
      /* a half layer too: the fused kernels take F32 and F64 */
      if (dt__autocast_low(x, m->weight, m->bias) != DT_F32 || x->dtype != m->dtype || dt__is_half(m->dtype))
        return dt__forward_linear_autocast(m, x);
      /* y: (n, out) = bias broadcast over rows, then += x W^T */
      if (!(y = dt__new(op, dt_shape2(x->shape.dims[0], m->out), m->dtype, m->device))) return NULL;
      if (y->numel > 0) {
        memset(&g, 0, sizeof g);
        g.ndim = 2; g.numel = y->numel; g.dims[0] = x->shape.dims[0]; g.dims[1] = m->out; g.astride[1] = 1;
        if (m->device.type == DT_CPU) {
          /* the CPU gemm starts C from the bias itself; in training it splits C by columns, W's
             rows, as the optimizer's step splits them; without grad (evaluation) the plain
             split: A = x is not packed by every thread (see dt__gemm_opts) */
          dt__gemm_opts o;
          memset(&o, 0, sizeof o);
          o.bias = m->bias->st->ptr;
          o.by_cols = !dt__no_grad;
          s = dt__cpu_gemm_opt_rec(m->dtype, 0, 1, x->shape.dims[0], m->out, m->in, 1.0, x->st->ptr, m->weight->st->ptr,
                               1.0, y->st->ptr, &o);
        } else { /* a copy of the bias, then the product with beta 1 */
          s = dt__be(m->device)->binary(m->device.index, DT__B_COPY_A, m->dtype, &g, m->bias->st->ptr, m->bias->st->ptr, y->st->ptr);
          if (s == DT_OK)
            s = dt__be(m->device)->gemm(m->device.index, m->dtype, 0, 1, 1, x->shape.dims[0], m->out, m->in, 1.0,
                                        x->st->ptr, 0, m->weight->st->ptr, 0, 1.0, y->st->ptr, 0);
        }
        if (!(y = dt__done(op, y, s))) return NULL;
      }
      if (!dt__no_grad) { /* what backward needs; with grad disabled nothing (dt_forward dropped the last) */
        dt_release(m->input);
        m->input = dt_retain((dt_tensor *)x);
        m->out_shape = y->shape;
        if (x->requires_grad || m->weight->requires_grad) { /* autograd's node: its backward is the fused one below */
          const dt_tensor *in[3];
          in[0] = x; in[1] = m->weight; in[2] = m->bias;
          if (!(y = dt__ag_record(y, DT__AG_LINEAR, "dt_linear", 3, in, NULL))) { dt__module_drop_saved(m); return NULL; }
        }
      }
      return y;
    }
    case DT__M_RELU:
      if (!(y = dt__unary(op, DT__U_RELU, x, 0, 0))) return NULL;
      if (!(y = DT__AG1(y, DT__AG_RELU, "dt_relu", x))) return NULL;
      if (!dt__no_grad) {
        dt_release(m->input);
        m->input = dt_retain((dt_tensor *)x);
        m->out_shape = y->shape;
      }
      return y;
    case DT__M_USER: { /* the user's forward: autograd records what it does */
      unsigned errs = dt__err_count;
      if (!(y = m->fwd(m, x, m->user))) {
        /* a forward that fails without a library error behind it (an earlier one may still be the last) */
        if (dt__err_count == errs) dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the module's forward returned NULL", op);
        return NULL;
      }
      if (!dt__no_grad) m->out_shape = y->shape;
      return y;
    }
    case DT__M_SEQ: {
      size_t plen = fw->plen;
      cur = dt_retain((dt_tensor *)x);
      for (i = 0; i < m->n && cur; i++) {
        fw->plen = plen + (size_t)snprintf(fw->path + plen, sizeof fw->path - plen, "%d.", i);
        y = dt__forward(op, m->layers[i], cur, fw);
        dt_release(cur);
        cur = y;
      }
      fw->plen = plen;
      if (cur && !dt__no_grad) m->out_shape = cur->shape;
      else if (!cur) dt__module_drop_saved(m); /* the layers before the failing one saved this forward: no backward through a mix */
      return cur;
    }
  }
  return NULL;
}

/* 1 when the first module x meets (through sequentials) is of dt_module_new's kind: its forward
   may take integer x (an embedding's indices) and checks what it takes itself. */
static int dt__module_first_is_user(const dt_module *m) {
  while (m->kind == DT__M_SEQ && m->n > 0) m = m->layers[0];
  return m->kind == DT__M_USER;
}

DTDEF dt_tensor *dt_forward(dt_module *m, const dt_tensor *x) {
  const char *op = "dt_forward";
  char a[48], b[48], pn[DT__NAME_MAX];
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (dt__check_tensor(op, "x", x) != DT_OK) return NULL;
  if (!dt_device_equal(x->st->device, m->device)) {
    dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: x is on %s but %s is on %s (move one with dt_to or dt_module_to)", op,
             dt_device_str(x->st->device, a, sizeof a), dt__first_param(m, pn, sizeof pn), dt_device_str(m->device, b, sizeof b));
    return NULL;
  }
  if (x->dtype != m->dtype && !(!dt__is_float(x->dtype) && dt__module_first_is_user(m)) &&
      !(dt__autocast[m->device.type == DT_CUDA] != DT_F32 && dt__is_float(x->dtype))) {
    dt__fail(DT_ERR_DTYPE, "%s: x is %s but the module is %s (convert with dt_cast)", op, dt_dtype_name(x->dtype), dt_dtype_name(m->dtype));
    return NULL;
  }
  {
    dt__fwd fw;
    fw.input = x; fw.plen = 0; fw.path[0] = 0;
    if (dt__no_grad) { /* inference: the last forward's activations go now, and this one keeps none */
      dt__module_drop_saved(m);
      m->nograd_fwd = 1;
    } else {
      m->nograd_fwd = 0;
    }
    return dt__forward(op, m, x, &fw);
  }
}

/* One layer's check before going back: a forward to go back through, and a gradient shaped
   like its output (each layer goes back only through its own last forward: one run on its own
   since breaks the chain). */
static dt_status dt__backward_check(const char *op, const dt_module *m, const dt_shape *gs) {
  if (m->kind == DT__M_USER) return DT_OK; /* refused by dt__backward itself */
  if (m->out_shape.ndim < 0 || (m->kind != DT__M_SEQ && !m->input) || gs->ndim != m->out_shape.ndim ||
      memcmp(gs->dims, m->out_shape.dims, sizeof(int64_t) * (size_t)gs->ndim) != 0) {
    char a[200], b[200];
    return dt__fail(DT_ERR_SHAPE, "%s: a layer's gradient has shape %s but its last forward gave %s (was a layer run on its own since?)",
                    op, dt__shape_str(gs, a, sizeof a), dt__shape_str(&m->out_shape, b, sizeof b));
  }
  return DT_OK;
}

/* The shape of the input of m's last forward (m checked). */
static const dt_shape *dt__forward_in_shape(const dt_module *m) {
  if (m->kind == DT__M_USER) return &m->out_shape;
  if (m->kind != DT__M_SEQ) return &m->input->shape;
  return m->n ? dt__forward_in_shape(m->layers[0]) : &m->out_shape;
}

/* The checks of dt__backward alone, for layers that have nothing to compute. */
static dt_status dt__backward_check_all(const char *op, const dt_module *m, const dt_shape *gs) {
  dt_status s;
  int i;
  if ((s = dt__backward_check(op, m, gs)) != DT_OK) return s;
  if (m->kind == DT__M_SEQ)
    for (i = m->n - 1; i >= 0; i--) {
      if ((s = dt__backward_check_all(op, m->layers[i], gs)) != DT_OK) return s;
      gs = dt__forward_in_shape(m->layers[i]);
    }
  return DT_OK;
}

/* The index of the first layer of a sequential that holds parameters; m->n when none does. */
static int dt__first_param_layer(const dt_module *m) {
  int i;
  for (i = 0; i < m->n; i++) {
    const dt_module *l = m->layers[i];
    if (l->kind == DT__M_LINEAR || l->kind == DT__M_USER || (l->kind == DT__M_SEQ && dt__first_param_layer(l) < l->n)) break;
  }
  return i;
}

/* Goes back through m's last forward with g, the gradient wrt its output: adds to the
   parameters' gradients and, when gx is not NULL, sets *gx to the gradient wrt its input.
   With gx NULL no input gradient is computed for m, nor for any layer in front of the
   first one with parameters (PyTorch's input that does not require grad). */
/* assign 1 (the trainer's step): each parameter's gradient is written, not added to, which is
   what dt_zero_grad and then dt_backward_params give (a module has one owner, so each gradient
   gets one term), without a pass to zero them first. */
static dt_status dt__backward(const char *op, dt_module *m, const dt_tensor *g, dt_tensor **gx, int assign) {
  dt_tensor *cur, *nx;
  dt_status s;
  int i, k;
  if ((s = dt__backward_check(op, m, &g->shape)) != DT_OK) return s;
  switch (m->kind) {
    case DT__M_USER:
      return dt__fail(DT_ERR_UNSUPPORTED, "%s: a module made by dt_module_new goes back with dt_autograd_backward on its loss "
                      "(its forward is recorded), not through the layers' own backward", op);
    case DT__M_LINEAR: {
      const dt__backend *be = dt__be(m->device);
      int dev = m->device.index;
      int64_t n = m->input->shape.dims[0];
      dt_tensor *gb, *x = NULL;
      if ((s = dt__linear_sync(m)) != DT_OK) return s; /* what an autograd backward stored, first */
      s = DT_OK;
      if (m->gzero) assign = 1; /* the grads are zeros not yet written (dt_zero_grad): write, not add */
      /* gW (out, in) += g^T x; gb (out,) += sum over rows of g; gx (n, in) = g W (with assign,
         gW = and gb = ) */
      if (gx && !(x = dt__new(op, m->input->shape, m->dtype, m->device))) return dt_last_status();
      /* on the CPU the gemm sums g's columns as it goes (dt__gemm_opts' asum), where it can */
      if (m->device.type == DT_CPU && n > 0 && m->out > 0) gb = dt__new(op, m->bias->shape, m->dtype, m->device);
      else gb = dt__reduce(op, DT__R_SUM, g, 1, n, m->out, m->bias->shape);
      if (!gb) { dt_release(x); return dt_last_status(); }
      if (n > 0) {
        const double beta = assign ? 0.0 : 1.0;
        if (m->device.type == DT_CPU && m->out > 0) {
          dt__gemm_opts o;
          memset(&o, 0, sizeof o);
          o.asum = gb->st->ptr;
          s = dt__cpu_gemm_opt_rec(m->dtype, 1, 0, m->out, m->in, n, 1.0, g->st->ptr, m->input->st->ptr, beta,
                               m->gweight->st->ptr, &o);
          /* not summed there: as dt_sum_dim does */
          if (s == DT_OK && !o.asum_done) s = be->reduce(dev, DT__R_SUM, m->dtype, 1, n, m->out, g->st->ptr, gb->st->ptr);
        } else
          s = be->gemm(dev, m->dtype, 1, 0, 1, m->out, m->in, n, 1.0, g->st->ptr, 0, m->input->st->ptr, 0, beta,
                       m->gweight->st->ptr, 0);
      } else if (assign)
        s = be->fill(dev, m->dtype, m->gweight->numel, 0.0, m->gweight->st->ptr);
      if (s == DT_OK && assign)
        s = be->copy(dev, m->gbias->st->ptr, dev, gb->st->ptr, (size_t)m->out * dt_dtype_size(m->dtype));
      else if (s == DT_OK) s = be->axpy(dev, m->dtype, m->out, 1.0, gb->st->ptr, m->gbias->st->ptr);
      if (s == DT_OK && x && x->numel > 0) s = be->gemm(dev, m->dtype, 0, 0, 1, n, m->in, m->out, 1.0, g->st->ptr, 0, m->weight->st->ptr, 0, 0.0, x->st->ptr, 0);
      dt_release(gb);
      if (s == DT_OK && m->gzero) { m->gzero = 0; dt__linear_link(m); } /* written; a failure leaves them zeros, as before the call */
      if (!gx) return s == DT_OK ? DT_OK : dt__backend_fail(op, m->device, s);
      if (!(*gx = dt__done(op, x, s))) return dt_last_status();
      return DT_OK;
    }
    case DT__M_RELU: {
      dt__bcast bc;
      if (!gx) return DT_OK; /* no parameters: nothing to do without the input gradient */
      if (!(nx = dt__new(op, g->shape, m->dtype, m->device))) return dt_last_status();
      if (nx->numel > 0) {
        memset(&bc, 0, sizeof bc);
        bc.ndim = 1; bc.contiguous = 1; bc.numel = nx->numel; bc.dims[0] = nx->numel; bc.astride[0] = 1; bc.bstride[0] = 1;
        if (!(nx = dt__done(op, nx, dt__be(m->device)->binary(m->device.index, DT__B_RELU_GRAD, m->dtype, &bc, g->st->ptr, m->input->st->ptr, nx->st->ptr))))
          return dt_last_status();
      }
      *gx = nx;
      return DT_OK;
    }
    case DT__M_SEQ:
      /* layers after the first one with parameters pass their input gradient on; that one
         needs none (unless asked), and the layers in front of it are only checked */
      k = gx ? 0 : dt__first_param_layer(m);
      cur = dt_retain((dt_tensor *)g);
      for (i = m->n - 1; i >= k; i--) {
        nx = NULL;
        s = dt__backward(op, m->layers[i], cur, gx || i > k ? &nx : NULL, assign);
        dt_release(cur);
        cur = nx;
        if (s != DT_OK) { dt_release(cur); return s; }
      }
      if (gx) { *gx = cur; return DT_OK; }
      dt_release(cur);
      for (i = k - 1; i >= 0; i--) {
        const dt_shape *gs = i + 1 < m->n ? dt__forward_in_shape(m->layers[i + 1]) : &g->shape;
        if ((s = dt__backward_check_all(op, m->layers[i], gs)) != DT_OK) return s;
      }
      return DT_OK;
  }
  return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: not a module", op);
}

/* The checks shared by dt_backward and dt_backward_params. */
static dt_status dt__backward_args(const char *op, dt_module *m, const dt_tensor *grad_output) {
  char a[200], b[200];
  dt_status s;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if ((s = dt__check_tensor(op, "grad_output", grad_output)) != DT_OK) return s;
  if (dt__no_grad)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: grad is disabled on this thread (dt_set_grad_enabled(0), torch.no_grad()); "
                    "enable it with dt_set_grad_enabled(1) and run dt_forward again", op);
  if (m->out_shape.ndim < 0 && m->nograd_fwd)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the last forward ran with grad disabled (dt_set_grad_enabled(0)) and kept "
                    "nothing to go back through; run dt_forward with grad enabled", op);
  if (dt__is_half(m->dtype))
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: m is %s; a float16 or bfloat16 module goes back with dt_autograd_backward on its loss "
                    "(its forward is recorded), not through the layers' own backward", op, dt_dtype_name(m->dtype));
  if (m->out_shape.ndim < 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: no forward to go back through (call dt_forward first)", op);
  if (!dt_device_equal(grad_output->st->device, m->device))
    return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: grad_output is on %s but the module is on %s", op,
                    dt_device_str(grad_output->st->device, a, sizeof a), dt_device_str(m->device, b, sizeof b));
  if (grad_output->dtype != m->dtype)
    return dt__fail(DT_ERR_DTYPE, "%s: grad_output is %s but the module is %s", op, dt_dtype_name(grad_output->dtype), dt_dtype_name(m->dtype));
  if (grad_output->shape.ndim != m->out_shape.ndim ||
      memcmp(grad_output->shape.dims, m->out_shape.dims, sizeof(int64_t) * (size_t)m->out_shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: grad_output has shape %s but the forward gave %s", op,
                    dt__shape_str(&grad_output->shape, a, sizeof a), dt__shape_str(&m->out_shape, b, sizeof b));
  return DT_OK;
}

DTDEF dt_tensor *dt_backward(dt_module *m, const dt_tensor *grad_output) {
  const char *op = "dt_backward";
  dt_tensor *gx = NULL;
  if (dt__backward_args(op, m, grad_output) != DT_OK || dt__backward(op, m, grad_output, &gx, 0) != DT_OK) return NULL;
  return gx;
}

DTDEF dt_status dt_backward_params(dt_module *m, const dt_tensor *grad_output) {
  const char *op = "dt_backward_params";
  dt_status s;
  if ((s = dt__backward_args(op, m, grad_output)) != DT_OK) return s;
  return dt__backward(op, m, grad_output, NULL, 0);
}

/* dt_zero_grad then dt_backward_params in one pass: each gradient written, not added to (the
   trainer's step) */
static dt_status dt__backward_params_assign(dt_module *m, const dt_tensor *grad_output) {
  const char *op = "dt_backward_params";
  dt_status s;
  if ((s = dt__backward_args(op, m, grad_output)) != DT_OK) return s;
  return dt__backward(op, m, grad_output, NULL, 1);
}

/* Every linear layer of m with parameters, in order: DT__G_ZERO zeroes its grads (dt_zero_grad:
   only marks them zero, gzero, where nothing outside the layer holds them), DT__G_SETTLE writes
   the zeros that gzero stands for, DT__G_SGD takes a plain SGD step with lr (after settling: a
   step right after dt_zero_grad must add exactly +0, as it always did). Recursion at most
   DT_MODULE_MAX_DEPTH deep; no limit on the layers. */
static dt_status dt__grads_walk(dt_module *m, int what, double lr) {
  dt_status s;
  int i;
  if (m->kind == DT__M_LINEAR && m->weight) {
    int prev;
    if ((s = dt__linear_sync(m)) != DT_OK) return s;
    if (what == DT__G_ZERO && !m->gshared) { /* the leaves hold no gradient while it is zeros not written */
      m->gzero = 1;
      dt_release(m->weight->grad); m->weight->grad = NULL;
      dt_release(m->bias->grad); m->bias->grad = NULL;
      return DT_OK;
    }
    if (what == DT__G_ZERO || m->gzero) {
      if ((s = dt_fill_(m->gweight, 0)) != DT_OK || (s = dt_fill_(m->gbias, 0)) != DT_OK) return s;
      m->gzero = 0;
      dt__linear_link(m);
    }
    if (what != DT__G_SGD) return DT_OK;
    prev = dt__no_grad; /* the parameters are leaves that require grad: changed with grad mode off, as torch.optim does */
    dt__no_grad = 1;
    if ((s = dt_axpy_(m->weight, -lr, m->gweight)) == DT_OK) s = dt_axpy_(m->bias, -lr, m->gbias);
    dt__no_grad = prev;
    return s;
  }
  for (i = 0; i < m->np; i++) { /* a user-written module's own: zeros written at once */
    int prev;
    if ((s = dt__uparam_sync(m, i)) != DT_OK) return s;
    if (what == DT__G_ZERO && (s = dt_fill_(m->pgs[i], 0)) != DT_OK) return s;
    if (what != DT__G_SGD) continue;
    prev = dt__no_grad;
    dt__no_grad = 1;
    s = dt_axpy_(m->pts[i], -lr, m->pgs[i]);
    dt__no_grad = prev;
    if (s != DT_OK) return s;
  }
  for (i = 0; i < m->n; i++) if ((s = dt__grads_walk(m->layers[i], what, lr)) != DT_OK) return s;
  return DT_OK;
}

DTDEF dt_status dt_zero_grad(dt_module *m) {
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_zero_grad: m is NULL");
  return dt__grads_walk(m, DT__G_ZERO, 0.0);
}

DTDEF dt_status dt_sgd_step(dt_module *m, double lr) {
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sgd_step: m is NULL");
  if (!(lr == lr) || lr - lr != 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_sgd_step: lr must be finite, got %g", lr);
  return dt__grads_walk(m, DT__G_SGD, lr);
}

static dt_status dt__loss_check(const char *op, const dt_tensor *p, const dt_tensor *t) {
  return dt__same_float_shape(op, "pred", p, "target", t);
}

DTDEF dt_tensor *dt_mse_loss(const dt_tensor *pred, const dt_tensor *target) {
  const char *op = "dt_mse_loss";
  dt_tensor *d, *sq, *l;
  if (dt__autocast_up(pred, target) && dt__is_float(pred->dtype) && dt__is_float(target->dtype)) { /* autocast: both in F32 */
    int failed = 0;
    dt_tensor *cp = dt__autocast_cast(pred, DT_F32, &failed), *ct = dt__autocast_cast(target, DT_F32, &failed);
    l = failed ? NULL : dt_mse_loss(cp, ct);
    dt_release(cp); dt_release(ct);
    return l;
  }
  if (dt__loss_check(op, pred, target) != DT_OK) return NULL;
  if (!(d = dt__binary(op, DT__B_SUB, pred, target))) return NULL;
  sq = dt__binary(op, DT__B_MUL, d, d);
  dt_release(d);
  if (!sq) return NULL;
  l = dt__reduce(op, DT__R_MEAN, sq, 1, sq->numel, 1, dt_shape0());
  dt_release(sq);
  return DT__AG2(l, DT__AG_MSE_LOSS, op, pred, target);
}

DTDEF dt_tensor *dt_mse_loss_grad(const dt_tensor *pred, const dt_tensor *target) {
  const char *op = "dt_mse_loss_grad";
  dt_tensor *d, *g;
  if (dt__loss_check(op, pred, target) != DT_OK) return NULL;
  if (!(d = dt__binary(op, DT__B_SUB, pred, target))) return NULL;
  g = dt__unary(op, DT__U_AFFINE, d, pred->numel ? 2.0 / (double)pred->numel : 0.0, 0.0);
  dt_release(d);
  return g;
}

/* ---- src/nn/layers.c ---- */
/* The convolution, pooling, flatten and activation modules (DESIGN.md "Layers and the operations
   a PyTorch user reaches for"): modules of the user-written kind (dt_module_new) whose forward
   calls the recorded functions, so that they go back with dt_autograd_backward, and their
   parameters ("weight", "bias") follow every dt_module_* function as a user's do. */

typedef enum dt__layer_kind {
  DT__L_CONV = 0, DT__L_MAX_POOL, DT__L_AVG_POOL, DT__L_ADAPTIVE_AVG_POOL, DT__L_FLATTEN, DT__L_SIGMOID, DT__L_TANH
} dt__layer_kind;

typedef struct dt__layer {
  dt__layer_kind kind;
  int64_t in, out;          /* conv: channels; in 0 until a lazy layer's first forward */
  int kh, kw, sh, sw, ph, pw, groups, bias;
  int64_t oh, ow;           /* adaptive pooling's output size */
} dt__layer;

static void dt__layer_free(void *p) { DT_FREE(p); }

/* PyTorch's Conv2d.reset_parameters: kaiming_uniform_(weight, a = sqrt(5)), which is uniform in
   +-gain sqrt(3 / fan_in) with gain sqrt(2 / (1 + 5)): +-1/sqrt(fan_in); the bias uniform in
   +-1/sqrt(fan_in); fan_in = in / groups * kh * kw. Drawn in float32 from the Philox generator
   (as dt_linear's), then converted to t. */
static dt_status dt__conv_init(const char *op, dt_module *m, dt__layer *L, int64_t in, dt_device d, dt_dtype t) {
  double bound = 1.0 / sqrt((double)(in / L->groups * L->kh * L->kw));
  dt_tensor *w = NULL, *b = NULL, *u;
  dt_status s;
  if ((u = dt__random(op, dt_shape4(L->out, in / L->groups, L->kh, L->kw), d, 0))) {
    w = dt__unary(op, DT__U_AFFINE, u, 2 * bound, -bound); dt_release(u);
  }
  if (w && L->bias && (u = dt__random(op, dt_shape1(L->out), d, 0))) {
    b = dt__unary(op, DT__U_AFFINE, u, 2 * bound, -bound); dt_release(u);
  }
  if (w && (b || !L->bias) && t != DT_F32) {
    dt_tensor *w2 = dt_cast(w, t), *b2 = w2 && b ? dt_cast(b, t) : NULL;
    dt_release(w); dt_release(b); w = w2; b = b2;
  }
  if (!w || (L->bias && !b)) {
    s = dt_last_status();
    dt_release(w); dt_release(b);
    return s == DT_OK ? DT_ERR_OUT_OF_MEMORY : s;
  }
  s = dt_module_add_param(m, "weight", w);
  if (s == DT_OK && b && (s = dt_module_add_param(m, "bias", b)) != DT_OK) { /* no half-made layer */
    dt_release(m->pts[0]); dt_release(m->pgs[0]); DT_FREE(m->pnames[0]);
    w->requires_grad = 0;
    m->np = 0;
  }
  dt_release(w); dt_release(b);
  if (s == DT_OK) L->in = in;
  return s;
}

static dt_tensor *dt__layer_forward(dt_module *m, const dt_tensor *x, void *user) {
  dt__layer *L = (dt__layer *)user;
  switch (L->kind) {
    case DT__L_CONV: {
      const char *op = "dt_conv2d";
      if (L->in == 0) { /* lazy: in_channels from the first input */
        char sb[200];
        if (dt__check_images(op, "x", x) != DT_OK) return NULL;
        if (x->shape.dims[1] % L->groups != 0) {
          dt__fail(DT_ERR_SHAPE, "%s: groups %d does not divide x's %lld channels (x: %s)", op, L->groups,
                   (long long)x->shape.dims[1], dt__shape_str(&x->shape, sb, sizeof sb));
          return NULL;
        }
        if (dt__float_only(op, "x", x) != DT_OK) return NULL;
        if (dt__conv_init(op, m, L, x->shape.dims[1], x->st->device, x->dtype) != DT_OK) return NULL;
      }
      return dt_f_conv2d_ex(x, m->pts[0], L->bias ? m->pts[1] : NULL, L->sh, L->sw, L->ph, L->pw, 1, 1, L->groups);
    }
    case DT__L_MAX_POOL: return dt_f_max_pool2d_ex(x, L->kh, L->kw, L->sh, L->sw, L->ph, L->pw, NULL);
    case DT__L_AVG_POOL: return dt_f_avg_pool2d_ex(x, L->kh, L->kw, L->sh, L->sw, L->ph, L->pw);
    case DT__L_ADAPTIVE_AVG_POOL: return dt_f_adaptive_avg_pool2d(x, L->oh, L->ow);
    case DT__L_FLATTEN: {
      int64_t rest = 1;
      int i;
      if (x->shape.ndim < 1) {
        dt__fail(DT_ERR_SHAPE, "dt_flatten_layer: expected x with a batch dim (at least 1-d), got a 0-d tensor");
        return NULL;
      }
      for (i = 1; i < x->shape.ndim; i++) rest *= x->shape.dims[i];
      return dt_reshape(x, dt_shape2(x->shape.dims[0], rest));
    }
    case DT__L_SIGMOID: return dt_sigmoid(x);
    case DT__L_TANH: return dt_tanh(x);
  }
  return NULL;
}

static dt_module *dt__layer_new(const char *op, const dt__layer *proto) {
  dt__layer *L = (dt__layer *)DT_MALLOC(sizeof(dt__layer));
  dt_module *m;
  if (!L) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); return NULL; }
  *L = *proto;
  if (!(m = dt_module_new(op, dt__layer_forward, L, dt__layer_free))) { DT_FREE(L); return NULL; }
  return m;
}

DTDEF dt_module *dt_conv2d_ex(int64_t in_channels, int64_t out_channels, int kh, int kw, int sh, int sw, int ph, int pw, int groups,
                              int bias) {
  const char *op = "dt_conv2d";
  dt__layer L;
  dt_module *m;
  if (in_channels < 0 || out_channels <= 0 || in_channels > ((int64_t)1 << 40) || out_channels > ((int64_t)1 << 40)) {
    dt__fail(DT_ERR_SHAPE, "%s: expected in_channels >= 0 (0: lazy) and out_channels > 0, got %lld and %lld", op,
             (long long)in_channels, (long long)out_channels);
    return NULL;
  }
  if (kh < 1 || kw < 1) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: kernel_size must be at least 1, got (%d, %d)", op, kh, kw); return NULL; }
  if (sh < 1 || sw < 1) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: stride must be at least 1, got (%d, %d)", op, sh, sw); return NULL; }
  if (ph < 0 || pw < 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: padding must be non-negative, got (%d, %d)", op, ph, pw); return NULL; }
  if (groups < 1 || (in_channels % groups) != 0 || (out_channels % groups) != 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: groups must be at least 1 and divide in_channels %lld and out_channels %lld, got %d", op,
             (long long)in_channels, (long long)out_channels, groups);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__L_CONV; L.out = out_channels; L.kh = kh; L.kw = kw; L.sh = sh; L.sw = sw; L.ph = ph; L.pw = pw;
  L.groups = groups; L.bias = bias != 0;
  if (!(m = dt__layer_new(op, &L))) return NULL;
  if (in_channels > 0 && dt__conv_init(op, m, (dt__layer *)m->user, in_channels, dt_cpu(), DT_F32) != DT_OK) {
    dt_module_free(m);
    return NULL;
  }
  return m;
}
DTDEF dt_module *dt_conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, int stride, int padding) {
  return dt_conv2d_ex(in_channels, out_channels, kernel_size, kernel_size, stride, stride, padding, padding, 1, 1);
}

static dt_module *dt__pool_layer(const char *op, dt__layer_kind kind, int k, int stride, int padding) {
  dt__layer L;
  if (k < 1) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: kernel_size must be at least 1, got %d", op, k); return NULL; }
  if (stride < 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: stride must be at least 1 (0: kernel_size), got %d", op, stride); return NULL; }
  if (padding < 0 || padding > k / 2) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: padding must be between 0 and half the kernel size %d, got %d", op, k, padding);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = kind; L.kh = L.kw = k; L.sh = L.sw = stride ? stride : k; L.ph = L.pw = padding;
  return dt__layer_new(op, &L);
}
DTDEF dt_module *dt_max_pool2d(int kernel_size, int stride, int padding) {
  return dt__pool_layer("dt_max_pool2d", DT__L_MAX_POOL, kernel_size, stride, padding);
}
DTDEF dt_module *dt_avg_pool2d(int kernel_size, int stride, int padding) {
  return dt__pool_layer("dt_avg_pool2d", DT__L_AVG_POOL, kernel_size, stride, padding);
}
DTDEF dt_module *dt_adaptive_avg_pool2d(int out_h, int out_w) {
  dt__layer L;
  if (out_h < 1 || out_w < 1) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_adaptive_avg_pool2d: the output size must be at least 1, got (%d, %d)", out_h, out_w);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__L_ADAPTIVE_AVG_POOL; L.oh = out_h; L.ow = out_w;
  return dt__layer_new("dt_adaptive_avg_pool2d", &L);
}
static dt_module *dt__plain_layer(const char *op, dt__layer_kind kind) {
  dt__layer L;
  memset(&L, 0, sizeof L);
  L.kind = kind;
  return dt__layer_new(op, &L);
}
DTDEF dt_module *dt_flatten_layer(void) { return dt__plain_layer("dt_flatten_layer", DT__L_FLATTEN); }
DTDEF dt_module *dt_sigmoid_layer(void) { return dt__plain_layer("dt_sigmoid_layer", DT__L_SIGMOID); }
DTDEF dt_module *dt_tanh_layer(void) { return dt__plain_layer("dt_tanh_layer", DT__L_TANH); }

/* ---- src/nn/norm.c ---- */
/* Dropout, batch and layer normalisation, embedding and GELU (DESIGN.md "Layers and the
   operations a PyTorch user reaches for"): the functional forms are written with the recorded
   operations (so each runs on the backend of its input and goes back with autograd), but for
   batch norm in F32 and F64, which is the backend's batch_norm slots, recorded as one node
   (dt__bn_fused); the modules are of the user-module kind (dt_module_new), their state as
   PyTorch's: parameters and buffers. */

/* Holds v (may be NULL) among the tensors t[0..*nt) made on the way to a result; returns v. */
static dt_tensor *dt__norm_hold(dt_tensor **t, int *nt, dt_tensor *v) {
  if (v) t[(*nt)++] = v;
  return v;
}
/* Releases the tensors made on the way to a result. */
static void dt__release_all(dt_tensor **t, int n) {
  int i;
  for (i = 0; i < n; i++) dt_release(t[i]);
}

DTDEF dt_tensor *dt_f_dropout(const dt_tensor *x, double p, int training) {
  const char *op = "dt_f_dropout";
  dt_tensor *t[4] = {NULL, NULL, NULL, NULL}, *y = NULL;
  if (dt__check_tensor(op, "x", x) != DT_OK || dt__float_only(op, "x", x) != DT_OK) return NULL;
  if (!(p >= 0.0 && p <= 1.0)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dropout probability has to be between 0 and 1, but got %g", op, p);
    return NULL;
  }
  if (!training || p == 0.0 || x->numel == 0) return dt_retain((dt_tensor *)x); /* as PyTorch: x itself, no draw */
  if (p == 1.0) return dt_mul_scalar(x, 0.0);
  /* keep where u < 1 - p, u uniform in [0, 1) from one draw: the same on every backend */
  if ((t[0] = dt__random(op, x->shape, x->st->device, 0)) && (t[1] = dt_lt_scalar(t[0], 1.0 - p)) &&
      (t[2] = dt_cast(t[1], x->dtype)) && (t[3] = dt_mul_scalar(t[2], 1.0 / (1.0 - p))))
    y = dt_mul(x, t[3]);
  dt__release_all(t, 4);
  return y;
}

/* A per-channel vector of dt_f_batch_norm or dt_f_layer_norm: (c,) on x's device in x's dtype. */
static dt_status dt__norm_vec(const char *op, const char *name, const dt_tensor *v, const dt_tensor *x, int64_t c) {
  char a[200];
  dt_status s;
  if ((s = dt__same_device(op, "x", x, name, v)) != DT_OK || (s = dt__same_dtype(op, "x", x, name, v)) != DT_OK) return s;
  if (v->shape.ndim != 1 || v->shape.dims[0] != c)
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s of shape (%lld,), got %s", op, name, (long long)c, dt__shape_str(&v->shape, a, sizeof a));
  return DT_OK;
}

/* dt_f_batch_norm's checks, which allocate nothing; *l: the product of x's dims after the channels. */
static dt_status dt__bn_check(const char *op, const dt_tensor *x, const dt_tensor *running_mean, const dt_tensor *running_var,
                              const dt_tensor *weight, const dt_tensor *bias, int training, double momentum, double eps, int64_t *l) {
  char a[200];
  dt_status s;
  int64_t c;
  int k;
  if ((s = dt__check_tensor(op, "x", x)) != DT_OK || (s = dt__float_only(op, "x", x)) != DT_OK) return s;
  if (x->shape.ndim < 2 || x->shape.ndim > 4)
    return dt__fail(DT_ERR_SHAPE, "%s: expected x of 2 to 4 dims, (n, c), (n, c, l) or (n, c, h, w), got %s", op,
                    dt__shape_str(&x->shape, a, sizeof a));
  c = x->shape.dims[1];
  for (*l = 1, k = 2; k < x->shape.ndim; k++) *l *= x->shape.dims[k];
  if ((running_mean && (s = dt__norm_vec(op, "running_mean", running_mean, x, c)) != DT_OK) ||
      (running_var && (s = dt__norm_vec(op, "running_var", running_var, x, c)) != DT_OK) ||
      (weight && (s = dt__norm_vec(op, "weight", weight, x, c)) != DT_OK) || (bias && (s = dt__norm_vec(op, "bias", bias, x, c)) != DT_OK))
    return s;
  if (!training && (!running_mean || !running_var))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: running_mean and running_var are needed when not training", op);
  if (training && running_mean && running_mean->requires_grad)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: running_mean requires grad; the running statistics are updated in place", op);
  if (training && running_var && running_var->requires_grad)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: running_var requires grad; the running statistics are updated in place", op);
  if (training && x->shape.dims[0] * *l <= 1)
    return dt__fail(DT_ERR_SHAPE, "%s: Expected more than 1 value per channel when training, got input size %s", op,
                    dt__shape_str(&x->shape, a, sizeof a));
  if (!(momentum >= 0.0 && momentum <= 1.0) || !(eps >= 0.0))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: expected momentum in [0, 1] and eps >= 0, got %g and %g", op, momentum, eps);
  return DT_OK;
}

/* dt_f_batch_norm through the backend's batch_norm slot (F32 and F64, weight and bias both given
   or both not, x not empty): one pass per channel, recorded as one node whose backward is the
   backend's batch_norm_backward. saved[2] holds the statistics the forward normalised with, as
   (2, c): the batch's mean and biased variance (training), or a copy of the running ones. */
static int dt__bn_fused_ok(const dt_tensor *x, const dt_tensor *weight, const dt_tensor *bias) {
  const dt__backend *be = dt__be(x->st->device);
  return (x->dtype == DT_F32 || x->dtype == DT_F64) && x->numel > 0 && !weight == !bias && be->batch_norm &&
         be->batch_norm_backward;
}
static dt_tensor *dt__bn_fused(const char *op, const dt_tensor *x, dt_tensor *running_mean, dt_tensor *running_var,
                               const dt_tensor *weight, const dt_tensor *bias, int training, double momentum, double eps, int64_t l) {
  const dt_device d = x->st->device;
  const int64_t c = x->shape.dims[1];
  const size_t es = dt__dtype_bytes(x->dtype);
  const int rec = !dt__no_grad && (x->requires_grad || (weight && (weight->requires_grad || bias->requires_grad)));
  dt_tensor *y, *st = NULL;
  dt__bn p;
  dt_status s;
  if (!(y = dt__new(op, x->shape, x->dtype, d))) return NULL;
  if (training) st = dt__new(op, dt_shape2(2, c), x->dtype, d);
  else if (rec) {
    const dt_tensor *rv[2];
    int prev = dt__no_grad;
    rv[0] = running_mean; rv[1] = running_var;
    dt__no_grad = 1;
    st = dt_stack(rv, 2);
    dt__no_grad = prev;
  }
  if ((training || rec) && !st) { dt_release(y); return NULL; }
  if (rec) { /* recorded before it runs: a failure to record leaves the running statistics as they were */
    const dt_tensor *in[3];
    dt__ag_args args;
    memset(&args, 0, sizeof args);
    args.p = eps; args.dim = training;
    in[0] = x; in[1] = weight; in[2] = bias;
    if (!(y = dt__ag_record(y, DT__AG_BATCH_NORM, op, weight ? 3 : 1, in, &args))) { dt_release(st); return NULL; }
    y->node->saved[2] = st; /* the node's now */
    y->node->saved_version[2] = *dt__version(st);
  }
  memset(&p, 0, sizeof p);
  p.n = x->shape.dims[0]; p.c = c; p.l = l; p.eps = eps; p.momentum = momentum; p.train = training;
  p.x = x->st->ptr; p.w = weight ? weight->st->ptr : NULL; p.b = bias ? bias->st->ptr : NULL;
  p.rmean = running_mean ? running_mean->st->ptr : NULL; p.rvar = running_var ? running_var->st->ptr : NULL;
  if (training) { p.mean = st->st->ptr; p.var = (char *)st->st->ptr + (size_t)c * es; }
  p.y = y->st->ptr;
  s = dt__run(op, d, dt__be(d)->batch_norm(d.index, x->dtype, &p));
  if (!rec) dt_release(st);
  if (s != DT_OK) { dt_release(y); return NULL; }
  if (training && running_mean) dt__bump(running_mean);
  if (training && running_var) dt__bump(running_var);
  return y;
}

/* The gradients of a fused batch norm's node (see dt__bn_fused) from g: *gx, *gw, *gb, each
   wanted where its pointer is not NULL. */
static dt_status dt__bn_backward(const dt_tensor *g, const dt_tensor *x, const dt_tensor *w, const dt_tensor *st, double eps,
                                 int training, dt_tensor **gx, dt_tensor **gw, dt_tensor **gb) {
  const char *op = "dt_f_batch_norm (backward)";
  const dt_device d = x->st->device;
  const int64_t c = x->shape.dims[1];
  const size_t es = dt__dtype_bytes(x->dtype);
  dt_tensor *ox = NULL, *ow = NULL, *ob = NULL, *ws;
  dt__bn p;
  dt_status s = DT_OK;
  int k;
  if (!(ws = dt__new(op, dt_shape2(2, c), DT_F64, d)) || (gx && !(ox = dt__new(op, x->shape, x->dtype, d))) ||
      (gw && !(ow = dt__new(op, dt_shape1(c), x->dtype, d))) || (gb && !(ob = dt__new(op, dt_shape1(c), x->dtype, d))))
    s = dt_last_status();
  if (s == DT_OK) {
    memset(&p, 0, sizeof p);
    p.n = x->shape.dims[0]; p.c = c; p.eps = eps; p.train = training;
    for (p.l = 1, k = 2; k < x->shape.ndim; k++) p.l *= x->shape.dims[k];
    p.x = x->st->ptr; p.w = w ? w->st->ptr : NULL; p.gy = g->st->ptr;
    p.mean = st->st->ptr; p.var = (char *)st->st->ptr + (size_t)c * es;
    p.gx = ox ? ox->st->ptr : NULL; p.gw = ow ? ow->st->ptr : NULL; p.gb = ob ? ob->st->ptr : NULL;
    p.ws = ws->st->ptr;
    s = dt__run(op, d, dt__be(d)->batch_norm_backward(d.index, x->dtype, &p));
  }
  dt_release(ws);
  if (s != DT_OK) {
    dt_release(ox); dt_release(ow); dt_release(ob);
    return s;
  }
  if (gx) *gx = ox;
  if (gw) *gw = ow;
  if (gb) *gb = ob;
  return DT_OK;
}

DTDEF dt_tensor *dt_f_batch_norm(const dt_tensor *x, dt_tensor *running_mean, dt_tensor *running_var, const dt_tensor *weight,
                                 const dt_tensor *bias, int training, double momentum, double eps) {
  const char *op = "dt_f_batch_norm";
  dt_tensor *t[16], *r, *u, *mean = NULL, *var = NULL, *d = NULL, *y = NULL, *out = NULL;
  dt_shape cs;
  int64_t n, c, l = 1, count;
  int nt = 0;
  memset(t, 0, sizeof t);
  if (dt__bn_check(op, x, running_mean, running_var, weight, bias, training, momentum, eps, &l) != DT_OK) return NULL;
  if (dt__bn_fused_ok(x, weight, bias)) return dt__bn_fused(op, x, running_mean, running_var, weight, bias, training, momentum, eps, l);
  n = x->shape.dims[0]; c = x->shape.dims[1];
  count = n * l;
  cs = dt_shape3(1, c, 1);
  /* x as (n, c, l); the statistics (1, c, 1) */
  if (!(r = dt__norm_hold(t, &nt, dt_reshape(x, dt_shape3(n, c, l))))) goto done;
  if (training) {
    if (!(u = dt__norm_hold(t, &nt, dt_mean_dim(r, 2, 1))) || !(mean = dt__norm_hold(t, &nt, dt_mean_dim(u, 0, 1))) ||
        !(d = dt__norm_hold(t, &nt, dt_sub(r, mean))) || !(u = dt__norm_hold(t, &nt, dt_mul(d, d))) ||
        !(u = dt__norm_hold(t, &nt, dt_mean_dim(u, 2, 1))) || !(var = dt__norm_hold(t, &nt, dt_mean_dim(u, 0, 1))))
      goto done;
  } else {
    if (!(mean = dt__norm_hold(t, &nt, dt_reshape(running_mean, cs))) || !(d = dt__norm_hold(t, &nt, dt_sub(r, mean))) ||
        !(var = dt__norm_hold(t, &nt, dt_reshape(running_var, cs))))
      goto done;
  }
  if (!(u = dt__norm_hold(t, &nt, dt_add_scalar(var, eps))) || !(u = dt__norm_hold(t, &nt, dt_pow_scalar(u, -0.5))) ||
      !(y = dt__norm_hold(t, &nt, dt_mul(d, u))))
    goto done;
  if (weight && (!(u = dt__norm_hold(t, &nt, dt_reshape(weight, cs))) || !(y = dt__norm_hold(t, &nt, dt_mul(y, u))))) goto done;
  if (bias && (!(u = dt__norm_hold(t, &nt, dt_reshape(bias, cs))) || !(y = dt__norm_hold(t, &nt, dt_add(y, u))))) goto done;
  if (!(out = dt_reshape(y, x->shape))) goto done;
  if (training && (running_mean || running_var)) {
    /* r = (1 - momentum) r + momentum s, the new values made first: a failure changes nothing */
    dt_tensor *u[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *nm = NULL, *nv = NULL;
    dt_status s = DT_OK;
    int prev = dt__no_grad;
    dt__no_grad = 1;
    if (running_mean && (!(u[0] = dt_reshape(mean, dt_shape1(c))) || !(u[1] = dt_mul_scalar(u[0], momentum)) ||
                         !(u[2] = dt_mul_scalar(running_mean, 1.0 - momentum)) || !(nm = dt_add(u[1], u[2]))))
      s = dt_last_status();
    if (s == DT_OK && running_var &&
        (!(u[3] = dt_reshape(var, dt_shape1(c))) || !(u[4] = dt_mul_scalar(u[3], momentum * (double)count / (double)(count - 1))) ||
         !(u[5] = dt_mul_scalar(running_var, 1.0 - momentum)) || !(nv = dt_add(u[4], u[5]))))
      s = dt_last_status();
    if (s == DT_OK && nm) s = dt_copy_(running_mean, nm);
    if (s == DT_OK && nv) s = dt_copy_(running_var, nv);
    dt__no_grad = prev;
    dt__release_all(u, 6); dt_release(nm); dt_release(nv);
    if (s != DT_OK) { dt_release(out); out = NULL; }
  }
done:
  dt__release_all(t, nt);
  return out;
}

DTDEF dt_tensor *dt_f_layer_norm(const dt_tensor *x, int64_t normalized_shape, const dt_tensor *weight, const dt_tensor *bias,
                                 double eps) {
  const char *op = "dt_f_layer_norm";
  dt_tensor *t[10], *u, *y = NULL, *d = NULL;
  char a[200];
  int nt = 0, last;
  memset(t, 0, sizeof t);
  if (dt__check_tensor(op, "x", x) != DT_OK || dt__float_only(op, "x", x) != DT_OK) return NULL;
  if (dt__autocast_up(x, weight) || dt__autocast_up(x, bias)) { /* autocast: in F32, as torch.autocast's layer_norm */
    int failed = 0;
    dt_tensor *cx = dt__autocast_cast(x, DT_F32, &failed), *cw = dt__autocast_cast(weight, DT_F32, &failed),
              *cb = dt__autocast_cast(bias, DT_F32, &failed);
    y = failed ? NULL : dt_f_layer_norm(cx, normalized_shape, cw, cb, eps);
    dt_release(cx); dt_release(cw); dt_release(cb);
    return y;
  }
  if (x->shape.ndim < 1 || x->shape.dims[x->shape.ndim - 1] != normalized_shape || normalized_shape < 1) {
    dt__fail(DT_ERR_SHAPE, "%s: expected x of shape (*, %lld) (normalized_shape at least 1), got %s", op, (long long)normalized_shape,
             dt__shape_str(&x->shape, a, sizeof a));
    return NULL;
  }
  if ((weight && dt__norm_vec(op, "weight", weight, x, normalized_shape) != DT_OK) ||
      (bias && dt__norm_vec(op, "bias", bias, x, normalized_shape) != DT_OK))
    return NULL;
  if (!(eps >= 0.0)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: expected eps >= 0, got %g", op, eps); return NULL; }
  last = x->shape.ndim - 1;
  if (!(u = dt__norm_hold(t, &nt, dt_mean_dim(x, last, 1))) || !(d = dt__norm_hold(t, &nt, dt_sub(x, u))) ||
      !(u = dt__norm_hold(t, &nt, dt_mul(d, d))) || !(u = dt__norm_hold(t, &nt, dt_mean_dim(u, last, 1))) ||
      !(u = dt__norm_hold(t, &nt, dt_add_scalar(u, eps))) || !(u = dt__norm_hold(t, &nt, dt_pow_scalar(u, -0.5))) ||
      !(y = dt__norm_hold(t, &nt, dt_mul(d, u))))
    y = NULL;
  if (y && weight) y = dt__norm_hold(t, &nt, dt_mul(y, weight));
  if (y && bias) y = dt__norm_hold(t, &nt, dt_add(y, bias));
  if (y) dt_retain(y);
  dt__release_all(t, nt);
  return y;
}

DTDEF dt_tensor *dt_f_embedding(const dt_tensor *idx, const dt_tensor *weight) {
  const char *op = "dt_f_embedding";
  dt_tensor *flat, *rows, *y;
  dt_shape s;
  char a[200];
  if (dt__check_tensor(op, "idx", idx) != DT_OK || dt__check_tensor(op, "weight", weight) != DT_OK) return NULL;
  if (idx->dtype != DT_I64) {
    dt__fail(DT_ERR_DTYPE, "%s: idx is %s; indices are int64 (convert with dt_cast)", op, dt_dtype_name(idx->dtype));
    return NULL;
  }
  if (dt__float_only(op, "weight", weight) != DT_OK || dt__same_device(op, "weight", weight, "idx", idx) != DT_OK) return NULL;
  if (weight->shape.ndim != 2) {
    dt__fail(DT_ERR_SHAPE, "%s: expected weight of shape (num_embeddings, embedding_dim), got %s", op, dt__shape_str(&weight->shape, a, sizeof a));
    return NULL;
  }
  if (idx->shape.ndim >= DT_MAX_DIMS) {
    dt__fail(DT_ERR_SHAPE, "%s: idx has %d dims; the result adds one and a tensor has at most %d", op, idx->shape.ndim, DT_MAX_DIMS);
    return NULL;
  }
  s = idx->shape;
  s.dims[s.ndim++] = weight->shape.dims[1];
  if (!(flat = dt_reshape(idx, dt_shape1(idx->numel)))) return NULL;
  rows = dt_index_select(weight, 0, flat);
  dt_release(flat);
  if (!rows) { /* an index out of range: said as this function's */
    char prev[sizeof dt__err_msg];
    dt_status ps = dt__err_status;
    memcpy(prev, dt__err_msg, sizeof prev);
    dt__fail(ps, "%s: idx does not fit weight %s: %.900s", op, dt__shape_str(&weight->shape, a, sizeof a), prev);
    return NULL;
  }
  y = dt_reshape(rows, s);
  dt_release(rows);
  return y;
}

/* ---- the modules ---- */

typedef enum dt__norm_kind { DT__N_DROPOUT = 0, DT__N_BATCH_NORM, DT__N_LAYER_NORM, DT__N_EMBEDDING, DT__N_GELU } dt__norm_kind;

typedef struct dt__norm_layer {
  dt__norm_kind kind;
  double p;                 /* dropout */
  int64_t features;         /* batch norm: channels, 0 until a lazy layer's first forward; layer norm: the last dim */
  int ndim;                 /* batch norm: the last input's dims (4: BatchNorm2d, 2 or 3: BatchNorm1d), 0 before any */
} dt__norm_layer;

static void dt__norm_layer_free(void *p) { DT_FREE(p); }

/* Lets go of a module's own parameters and buffers (a half-made layer). */
static void dt__module_drop_own(dt_module *m) {
  int i;
  for (i = 0; i < m->np; i++) { dt_release(m->pts[i]); dt_release(m->pgs[i]); DT_FREE(m->pnames[i]); }
  for (i = 0; i < m->nb; i++) { dt_release(m->bts[i]); DT_FREE(m->bnames[i]); }
  m->np = 0; m->nb = 0;
}

/* Registers the tensors t[0..n) (those before nparams as parameters, the rest as buffers), all
   or none; takes the references in t in any case. */
static dt_status dt__module_own(const char *op, dt_module *m, dt_tensor **t, const char *const *names, int n, int nparams) {
  dt_status s = DT_OK;
  int i;
  for (i = 0; i < n; i++)
    if (!t[i]) { s = dt_last_status(); if (s == DT_OK) s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory", op); }
  for (i = 0; i < n && s == DT_OK; i++) s = i < nparams ? dt_module_add_param(m, names[i], t[i]) : dt_module_add_buffer(m, names[i], t[i]);
  if (s != DT_OK) dt__module_drop_own(m);
  for (i = 0; i < n; i++) {
    if (t[i] && s != DT_OK) { t[i]->requires_grad = 0; dt_release(t[i]->grad); t[i]->grad = NULL; }
    dt_release(t[i]);
  }
  return s;
}

/* BatchNorm's state: weight ones, bias zeros, running_mean zeros, running_var ones, num_batches_tracked 0. */
static dt_status dt__bn_init(const char *op, dt_module *m, dt__norm_layer *L, int64_t c, dt_device d, dt_dtype t) {
  static const char *const names[5] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
  static const double v[5] = {1.0, 0.0, 0.0, 1.0, 0.0};
  dt_tensor *ts[5] = {NULL, NULL, NULL, NULL, NULL};
  dt_status s;
  int i;
  for (i = 0; i < 5 && (i == 0 || ts[i - 1]); i++) ts[i] = dt__filled(op, i == 4 ? dt_shape0() : dt_shape1(c), i == 4 ? DT_I64 : t, v[i], d);
  if ((s = dt__module_own(op, m, ts, names, 5, 2)) == DT_OK) L->features = c;
  return s;
}

static dt_tensor *dt__norm_forward(dt_module *m, const dt_tensor *x, void *user) {
  dt__norm_layer *L = (dt__norm_layer *)user;
  switch (L->kind) {
    case DT__N_DROPOUT: return dt_f_dropout(x, L->p, m->training);
    case DT__N_BATCH_NORM: {
      const char *op = "dt_batch_norm";
      dt_tensor *nb = NULL, *y;
      char a[200];
      if (dt__check_tensor(op, "x", x) != DT_OK) return NULL;
      if (dt__is_half(x->dtype) && x->dtype != m->dtype && dt__autocast[x->st->device.type == DT_CUDA] != DT_F32) {
        /* under autocast (a convolution's half output, float32 parameters): as PyTorch's batch norm of
           mixed dtypes, normalised in the parameters' dtype, the result in x's (casts autograd records) */
        dt_tensor *xf = dt_cast(x, m->dtype), *yf = xf ? dt__norm_forward(m, xf, user) : NULL;
        y = yf ? dt_cast(yf, x->dtype) : NULL;
        dt_release(xf); dt_release(yf);
        return y;
      }
      if (x->shape.ndim < 2 || x->shape.ndim > 4) {
        dt__fail(DT_ERR_SHAPE, "%s: expected x (n, c), (n, c, l) or (n, c, h, w), got %s", op, dt__shape_str(&x->shape, a, sizeof a));
        return NULL;
      }
      if (L->features == 0) { /* lazy: the channels from the first input */
        if (dt__float_only(op, "x", x) != DT_OK) return NULL;
        if (x->shape.dims[1] < 1) {
          dt__fail(DT_ERR_SHAPE, "%s: a lazy layer takes its channels from x, which has none: %s", op, dt__shape_str(&x->shape, a, sizeof a));
          return NULL;
        }
        if (dt__bn_init(op, m, L, x->shape.dims[1], x->st->device, x->dtype) != DT_OK) return NULL;
      }
      if (x->shape.dims[1] != L->features) {
        dt__fail(DT_ERR_SHAPE, "%s: expected x with %lld channels (dim 1), got %s", op, (long long)L->features, dt__shape_str(&x->shape, a, sizeof a));
        return NULL;
      }
      { /* refused before anything is made */
        int64_t l;
        if (dt__bn_check("dt_f_batch_norm", x, m->bts[0], m->bts[1], m->pts[0], m->pts[1], m->training, 0.1, 1e-5, &l) != DT_OK) return NULL;
      }
      L->ndim = x->shape.ndim;
      if (m->training) { /* num_batches_tracked + 1, made first: a failed forward changes nothing */
        int prev = dt__no_grad;
        dt__no_grad = 1;
        nb = dt_add_scalar(m->bts[2], 1.0);
        dt__no_grad = prev;
        if (!nb) return NULL;
      }
      y = dt_f_batch_norm(x, m->bts[0], m->bts[1], m->pts[0], m->pts[1], m->training, 0.1, 1e-5);
      if (y && nb && dt_copy_(m->bts[2], nb) != DT_OK) { dt_release(y); y = NULL; }
      dt_release(nb);
      return y;
    }
    case DT__N_LAYER_NORM: return dt_f_layer_norm(x, L->features, m->pts[0], m->pts[1], 1e-5);
    case DT__N_EMBEDDING: return dt_f_embedding(x, m->pts[0]);
    case DT__N_GELU: return dt_gelu(x);
  }
  return NULL;
}

static dt_module *dt__norm_new(const char *op, const dt__norm_layer *proto) {
  dt__norm_layer *L = (dt__norm_layer *)DT_MALLOC(sizeof(dt__norm_layer));
  dt_module *m;
  if (!L) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); return NULL; }
  *L = *proto;
  if (!(m = dt_module_new(op, dt__norm_forward, L, dt__norm_layer_free))) { DT_FREE(L); return NULL; }
  return m;
}

DTDEF dt_module *dt_dropout(double p) {
  dt__norm_layer L;
  if (!(p >= 0.0 && p <= 1.0)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_dropout: dropout probability has to be between 0 and 1, but got %g", p);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__N_DROPOUT; L.p = p;
  return dt__norm_new("dt_dropout", &L);
}

DTDEF dt_module *dt_batch_norm(int64_t num_features) {
  const char *op = "dt_batch_norm";
  dt__norm_layer L;
  dt_module *m;
  if (num_features < 0 || num_features > ((int64_t)1 << 40)) {
    dt__fail(DT_ERR_SHAPE, "%s: expected num_features >= 0 (0: lazy), got %lld", op, (long long)num_features);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__N_BATCH_NORM;
  if (!(m = dt__norm_new(op, &L))) return NULL;
  if (num_features > 0 && dt__bn_init(op, m, (dt__norm_layer *)m->user, num_features, dt_cpu(), DT_F32) != DT_OK) {
    dt_module_free(m);
    return NULL;
  }
  return m;
}

DTDEF dt_module *dt_layer_norm(int64_t normalized_shape) {
  static const char *const names[2] = {"weight", "bias"};
  const char *op = "dt_layer_norm";
  dt__norm_layer L;
  dt_tensor *ts[2];
  dt_module *m;
  if (normalized_shape < 1 || normalized_shape > ((int64_t)1 << 40)) {
    dt__fail(DT_ERR_SHAPE, "%s: expected normalized_shape >= 1, got %lld", op, (long long)normalized_shape);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__N_LAYER_NORM; L.features = normalized_shape;
  if (!(m = dt__norm_new(op, &L))) return NULL;
  ts[0] = dt__filled(op, dt_shape1(normalized_shape), DT_F32, 1.0, dt_cpu());
  ts[1] = ts[0] ? dt__filled(op, dt_shape1(normalized_shape), DT_F32, 0.0, dt_cpu()) : NULL;
  if (dt__module_own(op, m, ts, names, 2, 2) != DT_OK) { dt_module_free(m); return NULL; }
  return m;
}

DTDEF dt_module *dt_embedding(int64_t num_embeddings, int64_t embedding_dim) {
  static const char *const names[1] = {"weight"};
  const char *op = "dt_embedding";
  dt__norm_layer L;
  dt_tensor *w;
  dt_module *m;
  if (num_embeddings < 1 || embedding_dim < 1 || num_embeddings > ((int64_t)1 << 40) || embedding_dim > ((int64_t)1 << 40) ||
      num_embeddings > (INT64_MAX / 8) / embedding_dim) {
    dt__fail(DT_ERR_SHAPE, "%s: expected num_embeddings and embedding_dim >= 1 (and a weight that fits), got %lld and %lld", op,
             (long long)num_embeddings, (long long)embedding_dim);
    return NULL;
  }
  memset(&L, 0, sizeof L);
  L.kind = DT__N_EMBEDDING;
  if (!(m = dt__norm_new(op, &L))) return NULL;
  w = dt__random(op, dt_shape2(num_embeddings, embedding_dim), dt_cpu(), 1); /* N(0, 1), as PyTorch's normal_ */
  if (dt__module_own(op, m, &w, names, 1, 1) != DT_OK) { dt_module_free(m); return NULL; }
  return m;
}

DTDEF dt_module *dt_gelu_layer(void) {
  dt__norm_layer L;
  memset(&L, 0, sizeof L);
  L.kind = DT__N_GELU;
  return dt__norm_new("dt_gelu_layer", &L);
}

/* ---- src/nn/repr.c ---- */
/* print(net): a module's text as PyTorch's Module.__repr__ writes it (PyTorch 1.13). A layer is
   its class name and its arguments on one line ("Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1),
   padding=(2, 2))"); a module that holds others is its class name, then one line per child,
   "(name): " and the child's text, two spaces deeper each level, then ")". A lazy layer is
   "LazyConv2d(0, ...)" until its first forward and "Conv2d(1, ...)" after, as in PyTorch.
   dt_batch_norm serves BatchNorm1d and BatchNorm2d: it prints as the one its last input made it
   (2-d or 3-d: 1d, 4-d: 2d), and as "BatchNorm" before any. */

/* Python's repr of a float: the shortest "%.*g" that reads back as v, with ".0" where that has
   neither a point nor an exponent ("0.5", "1e-05", "1.0"); v here is a probability or a constant,
   never so large that Python would switch to an exponent where %g does not */
static void dt__repr_float(dt__print_out *o, double v) {
  char b[40];
  int p;
  char *c;
  for (p = 1; p <= 17; p++) {
    snprintf(b, sizeof b, "%.*g", p, v);
    if (strtod(b, NULL) == v) break; /* both in the C locale's own decimal point */
  }
  for (c = b; *c; c++)
    if (*c == ',') *c = '.'; /* Python's point, whatever the locale says */
  dt__print_puts(o, b);
  if (!strpbrk(b, ".eEn")) dt__print_puts(o, ".0"); /* "n": nan and inf stay as they are */
}

static void dt__repr_int(dt__print_out *o, int64_t v) {
  char b[24];
  dt__fmt_int(b, v);
  dt__print_puts(o, b);
}

/* "(a, b)" */
static void dt__repr_pair(dt__print_out *o, int64_t a, int64_t b) {
  dt__print_putc(o, '(');
  dt__repr_int(o, a);
  dt__print_puts(o, ", ");
  dt__repr_int(o, b);
  dt__print_putc(o, ')');
}

/* a convolution's or pooling's layer, with its arguments */
static void dt__repr_layer(dt__print_out *o, const dt__layer *L) {
  switch (L->kind) {
    case DT__L_CONV:
      dt__print_puts(o, L->in == 0 ? "LazyConv2d(" : "Conv2d(");
      dt__repr_int(o, L->in); dt__print_puts(o, ", "); dt__repr_int(o, L->out);
      dt__print_puts(o, ", kernel_size="); dt__repr_pair(o, L->kh, L->kw);
      dt__print_puts(o, ", stride="); dt__repr_pair(o, L->sh, L->sw);
      if (L->ph || L->pw) { dt__print_puts(o, ", padding="); dt__repr_pair(o, L->ph, L->pw); }
      if (L->groups != 1) { dt__print_puts(o, ", groups="); dt__repr_int(o, L->groups); }
      if (!L->bias) dt__print_puts(o, ", bias=False");
      dt__print_putc(o, ')');
      return;
    case DT__L_MAX_POOL: case DT__L_AVG_POOL:
      dt__print_puts(o, L->kind == DT__L_MAX_POOL ? "MaxPool2d(kernel_size=" : "AvgPool2d(kernel_size=");
      dt__repr_int(o, L->kh);
      dt__print_puts(o, ", stride="); dt__repr_int(o, L->sh);
      dt__print_puts(o, ", padding="); dt__repr_int(o, L->ph);
      dt__print_puts(o, L->kind == DT__L_MAX_POOL ? ", dilation=1, ceil_mode=False)" : ")");
      return;
    case DT__L_ADAPTIVE_AVG_POOL:
      dt__print_puts(o, "AdaptiveAvgPool2d(output_size=");
      dt__repr_pair(o, L->oh, L->ow);
      dt__print_putc(o, ')');
      return;
    case DT__L_FLATTEN: dt__print_puts(o, "Flatten(start_dim=1, end_dim=-1)"); return;
    case DT__L_SIGMOID: dt__print_puts(o, "Sigmoid()"); return;
    case DT__L_TANH: dt__print_puts(o, "Tanh()"); return;
  }
}

/* dropout, normalisation, embedding, GELU */
static void dt__repr_norm(dt__print_out *o, const dt_module *m, const dt__norm_layer *L) {
  switch (L->kind) {
    case DT__N_DROPOUT:
      dt__print_puts(o, "Dropout(p=");
      dt__repr_float(o, L->p);
      dt__print_puts(o, ", inplace=False)");
      return;
    case DT__N_BATCH_NORM:
      if (L->features == 0) dt__print_puts(o, "Lazy");
      dt__print_puts(o, L->ndim == 4 ? "BatchNorm2d(" : L->ndim ? "BatchNorm1d(" : "BatchNorm(");
      dt__repr_int(o, L->features);
      dt__print_puts(o, ", eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
      return;
    case DT__N_LAYER_NORM:
      dt__print_puts(o, "LayerNorm((");
      dt__repr_int(o, L->features);
      dt__print_puts(o, ",), eps=1e-05, elementwise_affine=True)");
      return;
    case DT__N_EMBEDDING:
      dt__print_puts(o, "Embedding(");
      dt__repr_int(o, m->pts[0]->shape.dims[0]);
      dt__print_puts(o, ", ");
      dt__repr_int(o, m->pts[0]->shape.dims[1]);
      dt__print_putc(o, ')');
      return;
    case DT__N_GELU: dt__print_puts(o, "GELU(approximate='none')"); return;
  }
}

/* m's text; its lines after the first start with indent spaces */
static void dt__repr_module(dt__print_out *o, const dt_module *m, int indent) {
  int i;
  switch (m->kind) {
    case DT__M_LINEAR:
      dt__print_puts(o, m->in == 0 ? "LazyLinear(in_features=" : "Linear(in_features=");
      dt__repr_int(o, m->in);
      dt__print_puts(o, ", out_features=");
      dt__repr_int(o, m->out);
      dt__print_puts(o, ", bias=True)");
      return;
    case DT__M_RELU: dt__print_puts(o, "ReLU()"); return;
    case DT__M_SEQ: dt__print_puts(o, "Sequential("); break;
    case DT__M_USER:
      if (m->fwd == dt__layer_forward) { dt__repr_layer(o, (const dt__layer *)m->user); return; }
      if (m->fwd == dt__norm_forward) { dt__repr_norm(o, m, (const dt__norm_layer *)m->user); return; }
      dt__print_puts(o, m->cls);
      dt__print_putc(o, '(');
      break;
  }
  for (i = 0; i < m->n; i++) {
    dt__print_putc(o, '\n');
    dt__print_spaces(o, indent + 2);
    dt__print_putc(o, '(');
    if (m->kind == DT__M_SEQ) dt__repr_int(o, i);
    else dt__print_puts(o, m->cnames[i]);
    dt__print_puts(o, "): ");
    dt__repr_module(o, m->layers[i], indent + 2);
  }
  if (m->n > 0) {
    dt__print_putc(o, '\n');
    dt__print_spaces(o, indent);
  }
  dt__print_putc(o, ')');
}

DTDEF int dt_module_snprint(char *buf, size_t n, const dt_module *m) {
  const char *op = "dt_module_snprint";
  dt__print_out o;
  if (buf && n > 0) buf[0] = 0;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return -1; }
  if (!buf && n > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: buf is NULL but n is %llu", op, (unsigned long long)n); return -1; }
  o.buf = buf; o.cap = n; o.len = 0; o.col = 0;
  dt__repr_module(&o, m, 0);
  if (n > 0) buf[o.len < n ? o.len : n - 1] = 0;
  if (o.len > (size_t)INT_MAX) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the text is longer than INT_MAX", op); return -1; }
  return (int)o.len;
}

static int dt__snprint_module(char *buf, size_t n, const void *m) { return dt_module_snprint(buf, n, (const dt_module *)m); }

DTDEF dt_status dt_module_fprint(FILE *f, const dt_module *m) {
  const char *op = "dt_module_fprint";
  char small[128]; /* most networks need more: then one allocation of the length */
  if (!f) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: f is NULL", op);
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  return dt__fprint_text(f, op, small, sizeof small, dt__snprint_module, m);
}

DTDEF dt_status dt_module_print(const dt_module *m) {
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_print: m is NULL");
  return dt_module_fprint(stdout, m);
}

/* ---- src/nn/optim.c ---- */
/* torch.optim.SGD, Adam and AdamW. The optimizer borrows its module and holds, per parameter
   (state_dict order), its state and step count. A step: (1) checks, and makes every missing
   state (at the first step: zeros for Adam, an unset momentum buffer the kernel fills) or moves
   every state to where its parameter now is (dt_module_to, dt_module_to_dtype): all of it
   before any parameter changes, so a failed allocation leaves the module as it was; (2) one
   fused backend kernel per parameter (dt__optim_hp, the backend's optim_step). */

typedef struct dt__optim_state {
  dt_tensor *buf1, *buf2; /* SGD: the momentum buffer; Adam, AdamW: exp_avg, exp_avg_sq. NULL until the first step */
  int64_t step;           /* steps taken by this parameter */
} dt__optim_state;

struct dt_optimizer {
  dt__optim_hp hp;   /* kind and hyperparameters (first, step_size and bc2_sqrt set per step) */
  dt_module *m;      /* borrowed; NULL for an optimizer on tensors */
  dt_tensor **ps;    /* an optimizer on tensors: its n parameters (one reference each) */
  int n;             /* parameters, lazy ones included, when it was made */
  dt__optim_state *st;
};

static int dt__optim_finite(double v) { return v == v && v - v == 0; }

/* An optimizer on module m, or (m NULL) on the np tensors ps. */
static dt_optimizer *dt__optim_new(const char *op, dt_module *m, dt_tensor *const *ps, int np, dt__optim_kind kind, double lr,
                                   double momentum, double beta1, double beta2, double eps, double weight_decay) {
  dt_optimizer *o;
  int n, i, j;
  if (!m && !ps) { dt__fail(DT_ERR_INVALID_ARGUMENT, ps || np >= 0 ? "%s: params is NULL" : "%s: m is NULL", op); return NULL; }
  if (!(lr >= 0) || !dt__optim_finite(lr)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid learning rate lr = %g (expected a finite lr >= 0)", op, lr); return NULL; }
  if (kind == DT__OPT_SGD && (!(momentum >= 0) || !dt__optim_finite(momentum))) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid momentum = %g (expected a finite momentum >= 0)", op, momentum);
    return NULL;
  }
  if (kind != DT__OPT_SGD) {
    if (!(beta1 >= 0 && beta1 < 1)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid beta1 = %g (expected 0 <= beta1 < 1)", op, beta1); return NULL; }
    if (!(beta2 >= 0 && beta2 < 1)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid beta2 = %g (expected 0 <= beta2 < 1)", op, beta2); return NULL; }
    if (!(eps >= 0) || !dt__optim_finite(eps)) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid eps = %g (expected a finite eps >= 0)", op, eps); return NULL; }
  }
  if (!(weight_decay >= 0) || !dt__optim_finite(weight_decay)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid weight_decay = %g (expected a finite weight_decay >= 0)", op, weight_decay);
    return NULL;
  }
  if (!m) { /* tensors: float leaves, each once (PyTorch: "some parameters appear in more than one parameter group") */
    if (np <= 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: n = %d, expected at least one parameter (PyTorch: optimizer got an empty parameter list)", op, np); return NULL; }
    for (i = 0; i < np; i++) {
      char nm[32];
      snprintf(nm, sizeof nm, "params[%d]", i);
      if (dt__check_tensor(op, nm, ps[i]) != DT_OK) return NULL;
      if (!dt__is_float(ps[i]->dtype)) { dt__fail(DT_ERR_DTYPE, "%s: params[%d] is %s; only float tensors can be optimized", op, i, dt_dtype_name(ps[i]->dtype)); return NULL; }
      if (ps[i]->node) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: params[%d] is not a leaf (the result of %s): optimize leaves only (PyTorch: can't optimize a non-leaf Tensor)", op, i, ps[i]->node->name); return NULL; }
      for (j = 0; j < i; j++)
        if (ps[j] == ps[i]) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: params[%d] and params[%d] are the same tensor (a parameter appears once)", op, j, i); return NULL; }
    }
    n = np;
  } else if ((n = dt_module_num_params(m)) <= 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m has no parameters to optimize (PyTorch: optimizer got an empty parameter list)", op);
    return NULL;
  }
  if (!(o = (dt_optimizer *)DT_MALLOC(sizeof(dt_optimizer)))) { dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); return NULL; }
  memset(o, 0, sizeof *o);
  if (!(o->st = (dt__optim_state *)DT_MALLOC(sizeof(dt__optim_state) * (size_t)n))) {
    DT_FREE(o);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    return NULL;
  }
  memset(o->st, 0, sizeof(dt__optim_state) * (size_t)n);
  if (!m) {
    if (!(o->ps = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)n))) {
      DT_FREE(o->st); DT_FREE(o);
      dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
      return NULL;
    }
    for (i = 0; i < n; i++) o->ps[i] = dt_retain(ps[i]);
  }
  o->n = n; o->m = m;
  o->hp.kind = kind; o->hp.lr = lr; o->hp.momentum = momentum; o->hp.weight_decay = weight_decay;
  o->hp.beta1 = beta1; o->hp.beta2 = beta2; o->hp.eps = eps;
  return o;
}

DTDEF dt_optimizer *dt_sgd(dt_module *m, double lr, double momentum, double weight_decay) {
  return dt__optim_new("dt_sgd", m, NULL, -1, DT__OPT_SGD, lr, momentum, 0, 0, 0, weight_decay);
}
DTDEF dt_optimizer *dt_adam(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adam", m, NULL, -1, DT__OPT_ADAM, lr, 0, beta1, beta2, eps, weight_decay);
}
DTDEF dt_optimizer *dt_adamw(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adamw", m, NULL, -1, DT__OPT_ADAMW, lr, 0, beta1, beta2, eps, weight_decay);
}

DTDEF dt_optimizer *dt_sgd_tensors(dt_tensor *const *params, int n, double lr, double momentum, double weight_decay) {
  return dt__optim_new("dt_sgd_tensors", NULL, params, n, DT__OPT_SGD, lr, momentum, 0, 0, 0, weight_decay);
}
DTDEF dt_optimizer *dt_adam_tensors(dt_tensor *const *params, int n, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adam_tensors", NULL, params, n, DT__OPT_ADAM, lr, 0, beta1, beta2, eps, weight_decay);
}
DTDEF dt_optimizer *dt_adamw_tensors(dt_tensor *const *params, int n, double lr, double beta1, double beta2, double eps, double weight_decay) {
  return dt__optim_new("dt_adamw_tensors", NULL, params, n, DT__OPT_ADAMW, lr, 0, beta1, beta2, eps, weight_decay);
}

DTDEF void dt_optimizer_free(dt_optimizer *o) {
  int i;
  if (!o) return;
  for (i = 0; i < o->n; i++) { dt_release(o->st[i].buf1); dt_release(o->st[i].buf2); }
  if (o->ps) { for (i = 0; i < o->n; i++) dt_release(o->ps[i]); DT_FREE(o->ps); }
  DT_FREE(o->st);
  DT_FREE(o);
}

DTDEF dt_status dt_optimizer_zero_grad(dt_optimizer *o) {
  int i;
  if (!o) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_optimizer_zero_grad: o is NULL");
  if (o->m) return dt__grads_walk(o->m, DT__G_ZERO, 0.0);
  for (i = 0; i < o->n; i++) { dt_release(o->ps[i]->grad); o->ps[i]->grad = NULL; } /* set_to_none, as torch's default */
  return DT_OK;
}

/* State k (0: buf1, 1: buf2) of parameter p as the step needs it: *out is a new tensor when
   it must be made (zeros; SGD's momentum buffer unset) or moved / converted to p's device and
   dtype, else NULL (the state is where it should be). */
static dt_status dt__optim_prepare(const char *op, const dt_optimizer *o, const char *name, const dt_tensor *p,
                                   const dt_tensor *cur, dt_tensor **out) {
  dt_device d = p->st->device;
  *out = NULL;
  if (!cur) {
    *out = o->hp.kind == DT__OPT_SGD ? dt__new(op, p->shape, p->dtype, d) : dt__filled(op, p->shape, p->dtype, 0.0, d);
    return *out ? DT_OK : dt_last_status();
  }
  if (cur->shape.ndim != p->shape.ndim || memcmp(cur->shape.dims, p->shape.dims, sizeof(int64_t) * (size_t)p->shape.ndim) != 0) {
    char a[200], b[200];
    return dt__fail(DT_ERR_SHAPE, "%s: parameter %s has shape %s but its optimizer state %s (was the module changed after the optimizer was made?)",
                    op, name, dt__shape_str(&p->shape, a, sizeof a), dt__shape_str(&cur->shape, b, sizeof b));
  }
  if (!dt_device_equal(cur->st->device, d)) {
    dt_tensor *moved = dt_copyto(cur, d);
    if (moved && moved->dtype != p->dtype) {
      dt_tensor *c = dt_cast(moved, p->dtype);
      dt_release(moved);
      moved = c;
    }
    *out = moved;
    return moved ? DT_OK : dt_last_status();
  }
  if (cur->dtype != p->dtype) {
    *out = dt_cast(cur, p->dtype);
    return *out ? DT_OK : dt_last_status();
  }
  return DT_OK;
}

/* One parameter's step with the backend's fused kernel (its state prepared). */
static dt_status dt__optim_step1(const char *op, dt_optimizer *o, int i, dt_tensor *p, const dt_tensor *g) {
  dt__optim_hp hp = o->hp;
  double step;
  dt_status s;
  if (!p || p->numel == 0) return DT_OK;
  step = (double)(o->st[i].step + 1);
  hp.first = o->st[i].step == 0;
  if (hp.kind != DT__OPT_SGD) { /* PyTorch's bias corrections, in double */
    hp.step_size = hp.lr / (1.0 - pow(hp.beta1, step));
    hp.bc2_sqrt = sqrt(1.0 - pow(hp.beta2, step));
  }
  s = dt__be(p->st->device)->optim_step(p->st->device.index, p->dtype, p->numel, &hp, p->st->ptr, g->st->ptr,
                                       o->st[i].buf1 ? o->st[i].buf1->st->ptr : NULL,
                                       o->st[i].buf2 ? o->st[i].buf2->st->ptr : NULL);
  if (s != DT_OK) return dt__backend_fail(op, p->st->device, s);
  o->st[i].step++;
  dt__bump(p); /* autograd sees the parameter changed */
  return DT_OK;
}

/* The step of an optimizer on tensors: as torch.optim, a parameter without a gradient (dt_grad
   NULL) is skipped, its state and step count left alone. Every state first, as for a module. */
static dt_status dt__optim_step_tensors(const char *op, dt_optimizer *o) {
  dt_tensor **fresh;
  dt_status s = DT_OK;
  int i, k, nbuf = o->hp.kind == DT__OPT_SGD ? (o->hp.momentum != 0 ? 1 : 0) : 2;
  char nm[32];
  for (i = 0; i < o->n; i++) {
    const dt_tensor *p = o->ps[i], *g = p->grad;
    if (!g) continue;
    snprintf(nm, sizeof nm, "params[%d]", i);
    if (g->dtype != p->dtype || !dt_device_equal(g->st->device, p->st->device) || g->numel != p->numel)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s's gradient does not match it (dtype, device or size changed since the backward)", op, nm);
  }
  if (!(fresh = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * 2 * (size_t)o->n)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  memset(fresh, 0, sizeof(dt_tensor *) * 2 * (size_t)o->n);
  for (i = 0; i < o->n && s == DT_OK; i++) {
    if (!o->ps[i]->grad) continue;
    snprintf(nm, sizeof nm, "params[%d]", i);
    for (k = 0; k < nbuf && s == DT_OK; k++)
      s = dt__optim_prepare(op, o, nm, o->ps[i], k ? o->st[i].buf2 : o->st[i].buf1, &fresh[2 * i + k]);
  }
  if (s != DT_OK) {
    for (i = 0; i < 2 * o->n; i++) dt_release(fresh[i]);
    DT_FREE(fresh);
    return s;
  }
  for (i = 0; i < o->n; i++)
    for (k = 0; k < 2; k++) {
      dt_tensor **slot = k ? &o->st[i].buf2 : &o->st[i].buf1;
      if (fresh[2 * i + k]) { dt_release(*slot); *slot = fresh[2 * i + k]; }
    }
  DT_FREE(fresh);
  for (i = 0; i < o->n; i++)
    if (o->ps[i]->grad && (s = dt__optim_step1(op, o, i, o->ps[i], o->ps[i]->grad)) != DT_OK) return s;
  return DT_OK;
}

DTDEF dt_status dt_optimizer_step(dt_optimizer *o) {
  const char *op = "dt_optimizer_step";
  dt_tensor **fresh;
  dt_module *m;
  dt_status s = DT_OK;
  int i, k, nbuf;
  if (!o) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: o is NULL", op);
  m = o->m;
  if (!m) return dt__optim_step_tensors(op, o);
  if ((s = dt__params_build(op, m)) != DT_OK) return s;
  if (m->nparams != o->n)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the module has %d parameters but had %d when the optimizer was made "
                    "(make a new optimizer after changing the network)", op, m->nparams, o->n);
  nbuf = o->hp.kind == DT__OPT_SGD ? (o->hp.momentum != 0 ? 1 : 0) : 2;
  if (!(fresh = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * 2 * (size_t)o->n)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  memset(fresh, 0, sizeof(dt_tensor *) * 2 * (size_t)o->n);
  /* (1) every state made or moved, before anything changes */
  for (i = 0; i < o->n && s == DT_OK; i++) {
    const dt_tensor *p = m->params[i];
    if (!p) continue; /* a lazy layer before its first forward: nothing to step yet */
    for (k = 0; k < nbuf && s == DT_OK; k++)
      s = dt__optim_prepare(op, o, m->names[i], p, k ? o->st[i].buf2 : o->st[i].buf1, &fresh[2 * i + k]);
  }
  if (s != DT_OK) {
    for (i = 0; i < 2 * o->n; i++) dt_release(fresh[i]);
    DT_FREE(fresh);
    return s;
  }
  for (i = 0; i < o->n; i++)
    for (k = 0; k < 2; k++) {
      dt_tensor **slot = k ? &o->st[i].buf2 : &o->st[i].buf1;
      if (fresh[2 * i + k]) { dt_release(*slot); *slot = fresh[2 * i + k]; }
    }
  DT_FREE(fresh);
  /* (2) one kernel per parameter */
  for (i = 0; i < o->n; i++)
    if ((s = dt__optim_step1(op, o, i, m->params[i], m->grads[i])) != DT_OK) return s;
  return DT_OK;
}

/* v rounded to the half dtype t, through float (as a Python float meets a half tensor) */
static double dt__clip_round(dt_dtype t, double v) { return (double)dt__half_to_f32(t == DT_BF16, dt__f32_to_half(t == DT_BF16, (float)v)); }

/* torch.nn.utils.clip_grad_norm_ (norm_type 2, error_if_nonfinite off): the norm of all the
   gradients together, in float64 whatever their dtype, and when it is above max_norm each
   gradient scaled in place by max_norm / (total + 1e-6). Gradients all of one half dtype t go
   as PyTorch's ops on them go: each gradient's norm rounded to t, their norm rounded to t (the
   total returned), and the factor r(r(1 / r(total + 1e-6)) max_norm), each step rounded to t.
   Parameters without a gradient are skipped. The scaled gradients are all made before any is
   written. */
DTDEF dt_status dt_clip_grad_norm_(dt_tensor *const *params, int n, double max_norm, double *total_norm) {
  const char *op = "dt_clip_grad_norm_";
  dt_tensor **scaled = NULL;
  double sq = 0, total, coef;
  dt_status s = DT_OK;
  dt_dtype half = DT_F32;
  int i, prev;
  char nm[32];
  if (total_norm) *total_norm = 0;
  if (!params) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: params is NULL", op);
  if (n < 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: n = %d, expected n >= 0", op, n);
  if (!(max_norm > 0) || max_norm - max_norm != 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: max_norm = %g, expected a finite max_norm > 0", op, max_norm);
  for (i = 0; i < n; i++) {
    snprintf(nm, sizeof nm, "params[%d]", i);
    if ((s = dt__check_tensor(op, nm, params[i])) != DT_OK) return s;
  }
  for (i = 0; i < n; i++) /* the half dtype all the gradients have, else F32 */
    if (params[i]->grad) {
      dt_dtype g = params[i]->grad->dtype;
      if (!dt__is_half(g) || (half != DT_F32 && half != g)) { half = DT_F32; break; }
      half = g;
    }
  prev = dt__no_grad;
  dt__no_grad = 1; /* gradients hold no history; nothing here records */
  for (i = 0; i < n && s == DT_OK; i++) {
    dt_tensor *g = params[i]->grad, *g64, *nr;
    double v;
    if (!g) continue;
    g64 = g->dtype == DT_F64 ? dt_retain(g) : dt_cast(g, DT_F64);
    nr = g64 ? dt_norm(g64) : NULL;
    dt_release(g64);
    if (!nr) { s = dt_last_status(); break; }
    s = dt__item(nr, &v);
    dt_release(nr);
    if (s != DT_OK) break;
    if (half != DT_F32) v = dt__clip_round(half, v);
    sq += v * v;
  }
  total = sqrt(sq);
  coef = max_norm / (total + 1e-6);
  if (half != DT_F32) {
    total = dt__clip_round(half, total);
    coef = dt__clip_round(half, (float)dt__clip_round(half, total + (float)dt__clip_round(half, 1e-6)));
    coef = dt__clip_round(half, 1.0f / (float)coef);
    coef = dt__clip_round(half, (float)coef * (float)dt__clip_round(half, max_norm));
  }
  if (s == DT_OK && !(coef >= 1.0)) { /* above max_norm, or not finite: PyTorch scales then too (by NaN or 0) */
    if (!(scaled = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)(n ? n : 1)))) {
      s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    } else {
      memset(scaled, 0, sizeof(dt_tensor *) * (size_t)(n ? n : 1));
      for (i = 0; i < n && s == DT_OK; i++)
        if (params[i]->grad && !(scaled[i] = dt_mul_scalar(params[i]->grad, coef))) s = dt_last_status();
      for (i = 0; i < n && s == DT_OK; i++) /* into the gradients' memory: borrowed pointers stay valid */
        if (scaled[i]) s = dt_copy_(params[i]->grad, scaled[i]);
      for (i = 0; i < n; i++) dt_release(scaled[i]);
      DT_FREE(scaled);
    }
  }
  dt__no_grad = prev;
  if (s != DT_OK) return s;
  if (total_norm) *total_norm = total;
  return DT_OK;
}

/* ---- src/nn/grad_scaler.c ---- */
/* torch.amp.GradScaler with PyTorch's defaults (growth_factor 2, backoff_factor 0.5,
   growth_interval 2000): the loss is multiplied by the scale before its backward, so small F16
   gradients do not flush to zero; the step divides the gradients by it and skips the optimizer's
   step when one of them holds an inf or a NaN; the update halves the scale after such a step and
   doubles it after 2000 good ones in a row. */
struct dt_grad_scaler {
  double scale;
  int growth_tracker; /* good steps since the scale last changed */
  int found_inf;      /* the last step's check: -1 none since the last update, 0 finite, 1 inf/NaN */
};

DTDEF dt_grad_scaler *dt_grad_scaler_new(double init_scale) {
  dt_grad_scaler *s;
  if (!(init_scale > 0) || init_scale - init_scale != 0) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_new: init_scale must be finite and > 0 (PyTorch's default is 65536), got %g",
             init_scale);
    return NULL;
  }
  if (!(s = (dt_grad_scaler *)DT_MALLOC(sizeof *s))) {
    dt__fail(DT_ERR_OUT_OF_MEMORY, "dt_grad_scaler_new: out of memory on the host");
    return NULL;
  }
  s->scale = init_scale;
  s->growth_tracker = 0;
  s->found_inf = -1;
  return s;
}

DTDEF void dt_grad_scaler_free(dt_grad_scaler *s) { DT_FREE(s); }

DTDEF double dt_grad_scaler_get_scale(const dt_grad_scaler *s) {
  if (!s) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_get_scale: s is NULL"); return NAN; }
  return s->scale;
}

DTDEF dt_tensor *dt_grad_scaler_scale(dt_grad_scaler *s, const dt_tensor *loss) {
  const char *op = "dt_grad_scaler_scale";
  if (!s) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: s is NULL", op); return NULL; }
  if (dt__check_tensor(op, "loss", loss) != DT_OK || dt__float_only(op, "loss", loss) != DT_OK) return NULL;
  return dt_mul_scalar(loss, s->scale);
}

/* The optimizer's gradients (borrowed; NULL where a parameter has none) into *gs, *n of them. */
static dt_status dt__optim_grads(const char *op, dt_optimizer *o, dt_tensor ***gs, int *n) {
  int i, k;
  dt_status st;
  *gs = NULL; *n = 0;
  if (o->m && (st = dt__params_build(op, o->m)) != DT_OK) return st;
  k = o->m ? o->m->nparams : o->n;
  if (k > 0 && !(*gs = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)k)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  for (i = 0; i < k; i++) (*gs)[i] = o->m ? o->m->grads[i] : o->ps[i]->grad;
  *n = k;
  return DT_OK;
}

/* Whether any gradient holds an inf or a NaN: the sum of g * 0 over each is NaN exactly then
   (finite values give 0, which no sum can overflow); the sums gathered on the first gradient's
   device and read once. */
static dt_status dt__scaler_found_inf(const char *op, dt_tensor *const *gs, int n, int *found) {
  dt_tensor *acc = NULL;
  dt_status st = DT_OK;
  int i;
  *found = 0;
  for (i = 0; i < n && st == DT_OK; i++) {
    dt_tensor *z, *sm, *f, *fd;
    if (!gs[i] || gs[i]->numel == 0) continue;
    z = dt_mul_scalar(gs[i], 0.0);
    sm = z ? dt_sum(z) : NULL;
    f = sm ? dt_cast(sm, DT_F32) : NULL;
    fd = f ? (acc ? dt_to(f, acc->st->device) : dt_retain(f)) : NULL;
    if (!fd) st = dt_last_status();
    else if (!acc) acc = dt_retain(fd);
    else st = dt_axpy_(acc, 1.0, fd);
    dt_release(z); dt_release(sm); dt_release(f); dt_release(fd);
  }
  if (st == DT_OK && acc) {
    double v;
    if ((st = dt__item(acc, &v)) == DT_OK) *found = v != v;
  }
  dt_release(acc);
  (void)op; /* a failure keeps the message of the operation that failed */
  return st;
}

/* The n gradients gs (NULL where a parameter has none) times f, in place. */
static dt_status dt__grads_scale(const char *op, dt_tensor *const *gs, int n, double f) {
  dt_status st = DT_OK;
  int i;
  for (i = 0; i < n && st == DT_OK; i++) {
    dt_tensor *g = gs[i];
    if (!g || g->numel == 0) continue;
    st = dt__run(op, g->st->device, dt__be(g->st->device)->unary(g->st->device.index, DT__U_AFFINE, g->dtype, g->numel, g->st->ptr,
                                                                 g->st->ptr, f, 0.0));
  }
  return st;
}

/* The n gradients gs checked, and unscaled when all are finite; s->found_inf says which. */
static dt_status dt__grad_scaler_unscale(const char *op, dt_grad_scaler *s, dt_tensor *const *gs, int n) {
  dt_status st;
  int found = 0, prev = dt__no_grad;
  dt__no_grad = 1; /* the checks record nothing */
  st = dt__scaler_found_inf(op, gs, n, &found);
  /* unscale in place: g *= 1 / scale (skipped with inf/NaN: the step is skipped too) */
  if (st == DT_OK && !found) st = dt__grads_scale(op, gs, n, 1.0 / s->scale);
  dt__no_grad = prev;
  if (st == DT_OK) s->found_inf = found;
  return st;
}

DTDEF dt_status dt_grad_scaler_step(dt_grad_scaler *s, dt_optimizer *o) {
  const char *op = "dt_grad_scaler_step";
  dt_tensor **gs = NULL;
  dt_status st;
  int n = 0;
  if (!s) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: s is NULL", op);
  if (!o) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: o is NULL", op);
  if ((st = dt__optim_grads(op, o, &gs, &n)) != DT_OK) return st;
  st = dt__grad_scaler_unscale(op, s, gs, n);
  DT_FREE(gs);
  if (st != DT_OK) return st;
  return s->found_inf ? DT_OK : dt_optimizer_step(o);
}

DTDEF dt_status dt_grad_scaler_update(dt_grad_scaler *s) {
  if (!s) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_update: s is NULL");
  if (s->found_inf < 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_grad_scaler_update: no dt_grad_scaler_step since the last update (no inf checks recorded)");
  if (s->found_inf) {
    s->scale *= 0.5;
    s->growth_tracker = 0;
  } else if (++s->growth_tracker == 2000) {
    s->scale *= 2.0;
    s->growth_tracker = 0;
  }
  s->found_inf = -1;
  return DT_OK;
}

/* ---- src/autograd/functions.c ---- */
/* What each recorded operation saves (dt__ag_record) and its backward (dt__ag_backward): the
   gradients of its inputs from the gradient g of its result, written with the public operations
   (the engine runs them with grad mode off, so they record nothing), so that a backward on a GPU
   runs there through the same backend. Saved slots: 0 and 1 the inputs, 2 the result (or, for
   max/min by dim, the indices of the extremes). */

/* A header over t's memory with no history (dt_detach; what a node saves). */
static dt_tensor *dt__alias(const char *op, const dt_tensor *t) {
  DT__ATOMIC_ADD(&t->st->refs, 1);
  return dt__wrap(op, t->st, &t->shape, t->dtype, t->numel, t->nbytes); /* on failure drops the reference */
}

/* Whether op's backward reads input 0, input 1 (given which inputs need a gradient), the result. */
static void dt__ag_saves(dt__ag_op op, int need0, int need1, int want[DT__AG_SAVED]) {
  want[0] = want[1] = want[2] = 0;
  switch (op) {
    case DT__AG_MUL: case DT__AG_MATMUL: want[0] = need1; want[1] = need0; break;
    case DT__AG_DIV: want[0] = need1; want[1] = 1; break;
    case DT__AG_LOG: case DT__AG_ABS: want[0] = 1; break;
    case DT__AG_SIN: case DT__AG_COS: case DT__AG_ERF: case DT__AG_GELU: case DT__AG_POW: case DT__AG_CLAMP: want[0] = 1; break;
    case DT__AG_EXP: case DT__AG_SQRT: case DT__AG_RELU: case DT__AG_SIGMOID: case DT__AG_TANH:
    case DT__AG_SOFTMAX: case DT__AG_LOG_SOFTMAX: want[2] = 1; break;
    case DT__AG_NORM: case DT__AG_MAX: case DT__AG_MIN: want[0] = 1; want[2] = 1; break;
    case DT__AG_INDEX_SELECT: want[1] = 1; break;
    case DT__AG_CROSS_ENTROPY: case DT__AG_MSE_LOSS: want[0] = 1; want[1] = 1; break;
    case DT__AG_BCE_WITH_LOGITS: case DT__AG_NLL_LOSS: case DT__AG_L1_LOSS: case DT__AG_SMOOTH_L1_LOSS: case DT__AG_MSE_LOSS_EX:
      want[0] = want[1] = 1; break;
    case DT__AG_MAX_DIM: case DT__AG_MIN_DIM: want[2] = 1; break; /* the indices, made below */
    case DT__AG_LINEAR: want[0] = need1; want[1] = need0; break; /* x for the weight's gradient, W for x's */
    case DT__AG_CONV2D: want[0] = want[1] = 1; break; /* dt_f_conv2d_backward reads both */
    case DT__AG_BATCH_NORM: want[0] = 1; want[1] = 1; break; /* x, and the weight where there is one */
    case DT__AG_MAX_POOL2D: case DT__AG_AVG_POOL2D: case DT__AG_ADAPTIVE_AVG_POOL2D: want[0] = 1; break; /* max's indices: the forward's */
    case DT__AG_WHERE: want[0] = 1; break;                              /* cond */
    case DT__AG_GATHER: case DT__AG_SCATTER_ADD: want[1] = 1; break;    /* the index */
    default: break;
  }
}

static dt_tensor *dt__ag_record(dt_tensor *y, dt__ag_op op, const char *name, int nin, const dt_tensor *const *in,
                                const dt__ag_args *args) {
  dt__node *n;
  dt_tensor *sv[DT__AG_SAVED] = {NULL, NULL, NULL};
  int want[DT__AG_SAVED], i;
  if (!y) return NULL;
  dt__ag_saves(op, in[0]->requires_grad, nin > 1 && in[1]->requires_grad, want);
  for (i = 0; i < DT__AG_SAVED; i++) {
    if (!want[i] || (i < 2 && i >= nin)) continue;
    if (i == 2 && (op == DT__AG_MAX_DIM || op == DT__AG_MIN_DIM))
      sv[i] = op == DT__AG_MAX_DIM ? dt_argmax(in[0], args->dim) : dt_argmin(in[0], args->dim);
    else
      sv[i] = dt__alias(name, i < 2 ? in[i] : y);
    if (!sv[i]) goto fail;
  }
  n = (dt__node *)DT_MALLOC(sizeof(dt__node) + (size_t)nin * sizeof(dt__ag_edge));
  if (!n) {
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host recording the operation for autograd", name);
    goto fail;
  }
  memset(n, 0, sizeof *n);
  n->refs = 1; n->op = op; n->name = name; n->nin = nin;
  n->in = (dt__ag_edge *)(void *)(n + 1);
  for (i = 0; i < DT__AG_SAVED; i++) {
    n->saved[i] = sv[i];
    n->saved_version[i] = sv[i] ? *dt__version(sv[i]) : 0;
  }
  n->yshape = y->shape;
  if (args) {
    n->p = args->p; n->dim = args->dim; n->start = args->start; n->p2 = args->p2;
    if (args->perm) memcpy(n->perm, args->perm, sizeof(int) * (size_t)in[0]->shape.ndim);
  }
  for (i = 0; i < nin; i++) {
    dt__ag_edge *e = &n->in[i];
    e->node = NULL; e->leaf = NULL;
    e->shape = in[i]->shape; e->dtype = in[i]->dtype; e->device = in[i]->st->device;
    if (in[i]->node) { e->node = in[i]->node; DT__ATOMIC_ADD(&e->node->refs, 1); }
    else if (in[i]->requires_grad) e->leaf = dt_retain((dt_tensor *)in[i]);
  }
  y->node = n;
  y->requires_grad = 1;
  return y;
fail:
  for (i = 0; i < DT__AG_SAVED; i++) dt_release(sv[i]);
  dt_release(y);
  return NULL;
}

/* ---- helpers of the backwards: each takes ownership of a tensor argument named x (NULL: a
   failure already reported, passed on) ---- */

static dt_tensor *dt__ag_zeros(dt_shape s, dt_dtype t, dt_device d) {
  dt_tensor *z = dt_empty(s, t, d);
  if (z && dt_fill_(z, 0.0) != DT_OK) { dt_release(z); return NULL; }
  return z;
}

/* x summed down to shape s (the gradient of an operand broadcast to x's shape) */
static dt_tensor *dt__ag_sum_to(dt_tensor *x, const dt_shape *s) {
  int i, lead;
  dt_tensor *nx;
  if (!x) return NULL;
  lead = x->shape.ndim - s->ndim;
  for (i = 0; i < lead; i++) {
    nx = dt_sum_dim(x, 0);
    dt_release(x);
    if (!(x = nx)) return NULL;
  }
  for (i = s->ndim - 1; i >= 0; i--) /* last first: the dims before keep their places */
    if (s->dims[i] == 1 && x->shape.dims[i] != 1) {
      nx = dt_sum_dim(x, i);
      dt_release(x);
      if (!(x = nx)) return NULL;
    }
  if (x->shape.ndim == s->ndim && memcmp(x->shape.dims, s->dims, sizeof(int64_t) * (size_t)s->ndim) == 0) return x;
  nx = dt_reshape(x, *s);
  dt_release(x);
  return nx;
}

/* x broadcast to shape s (a copy) */
static dt_tensor *dt__ag_expand(dt_tensor *x, const dt_shape *s) {
  dt_tensor *z, *y;
  if (!x) return NULL;
  if (!(z = dt__ag_zeros(*s, x->dtype, x->st->device))) { dt_release(x); return NULL; }
  y = dt_add(z, x);
  dt_release(z);
  dt_release(x);
  return y;
}

static dt_tensor *dt__ag_reshape(dt_tensor *x, dt_shape s) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt_reshape(x, s);
  dt_release(x);
  return y;
}

/* a op x, or x op a */
static dt_tensor *dt__ag_bin(dt_tensor *(*f)(const dt_tensor *, const dt_tensor *), const dt_tensor *a, dt_tensor *x, int x_first) {
  dt_tensor *y;
  if (!x) return NULL;
  y = x_first ? f(x, a) : f(a, x);
  dt_release(x);
  return y;
}

static dt_tensor *dt__ag_affine(const char *op, dt_tensor *x, double p0, double p1) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt__unary(op, DT__U_AFFINE, x, p0, p1);
  dt_release(x);
  return y;
}

static dt_tensor *dt__ag_cast(dt_tensor *x, dt_dtype t) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt_cast(x, t);
  dt_release(x);
  return y;
}

static dt_tensor *dt__ag_exp(dt_tensor *x) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt_exp(x);
  dt_release(x);
  return y;
}

/* s with dim set to 1 (the shape of a reduction over dim that kept it) */
static dt_shape dt__ag_keep(dt_shape s, int dim) { if (s.ndim > 0) s.dims[dim] = 1; return s; }

static dt_tensor *dt__ag_sum_dim(dt_tensor *x, int dim) {
  dt_tensor *y;
  if (!x) return NULL;
  y = dt_sum_dim(x, dim);
  dt_release(x);
  return y;
}

/* x summed over dim, the dim kept (a 0-d x: itself) */
static dt_tensor *dt__ag_sum_keep(dt_tensor *x, int dim) {
  dt_shape k;
  if (!x || x->shape.ndim == 0) return x;
  k = dt__ag_keep(x->shape, dim);
  return dt__ag_reshape(dt__ag_sum_dim(x, dim), k);
}

/* x's last two dims swapped: (m, k) -> (k, m), (b, m, k) -> (b, k, m) */
static dt_tensor *dt__ag_mT(const dt_tensor *a) {
  static const int p[3] = {0, 2, 1};
  return a->shape.ndim == 2 ? dt_transpose(a) : dt_permute(a, p);
}

/* a 0-d tensor of value v */
static dt_tensor *dt__ag_scalar(double v, dt_dtype t, dt_device d) {
  dt_tensor *z = dt_empty(dt_shape0(), t, d);
  if (z && dt_fill_(z, v) != DT_OK) { dt_release(z); return NULL; }
  return z;
}

/* a mask (0/1 of dtype t) of a == b, broadcasting */
static dt_tensor *dt__ag_eq_mask(const dt_tensor *a, const dt_tensor *b, dt_dtype t) {
  return dt__ag_cast(dt_eq(a, b), t);
}

/* ---- the backwards ---- */

/* matmul, every shape dt_matmul takes: vectors as (1, k) and (k, 1), then the 2-d and 3-d cases */
static dt_status dt__ag_matmul_bw(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const dt__ag_edge *ea = &n->in[0], *eb = &n->in[1];
  int need0 = ea->node || ea->leaf, need1 = eb->node || eb->leaf;
  dt_tensor *A = NULL, *B = NULL, *G = NULL, *t = NULL;
  int na = ea->shape.ndim, nb = eb->shape.ndim;
  int64_t m = na == 1 ? 1 : ea->shape.dims[na - 2], k = ea->shape.dims[na - 1], nn = nb == 1 ? 1 : eb->shape.dims[nb - 1];
  dt_shape gs = nb == 3 || na == 3 ? dt_shape3(n->yshape.dims[0], m, nn) : dt_shape2(m, nn);
  if (need1) A = na == 1 ? dt_reshape(n->saved[0], dt_shape2(1, k)) : dt_retain(n->saved[0]);
  if (need0) B = nb == 1 ? dt_reshape(n->saved[1], dt_shape2(k, 1)) : dt_retain(n->saved[1]);
  if ((need1 && !A) || (need0 && !B) || !(G = dt_reshape(g, gs))) goto fail;
  if (need0) { /* dA = G B^T, summed over the batch when A has none */
    if (!(t = dt__ag_mT(B))) goto fail;
    gin[0] = dt_matmul(G, t);
    dt_release(t); t = NULL;
    if (gin[0] && na == 2 && nb == 3) gin[0] = dt__ag_sum_dim(gin[0], 0);
    if (!(gin[0] = dt__ag_reshape(gin[0], ea->shape))) goto fail;
  }
  if (need1) { /* dB = A^T G; A batched and B not: A and G as (b m, k) and (b m, n) */
    if (na == 3 && nb == 2) {
      dt_tensor *a2 = dt_reshape(A, dt_shape2(ea->shape.dims[0] * m, k));
      dt_tensor *g2 = dt_reshape(G, dt_shape2(ea->shape.dims[0] * m, nn));
      if (a2 && g2) t = dt__ag_mT(a2);
      gin[1] = t ? dt_matmul(t, g2) : NULL;
      dt_release(a2); dt_release(g2);
    } else {
      if ((t = dt__ag_mT(A))) gin[1] = dt_matmul(t, G);
    }
    dt_release(t); t = NULL;
    if (!(gin[1] = dt__ag_reshape(gin[1], eb->shape))) goto fail;
  }
  dt_release(A); dt_release(B); dt_release(G);
  return DT_OK;
fail:
  dt_release(A); dt_release(B); dt_release(G);
  return DT_ERR_OUT_OF_MEMORY; /* the status is the last error's; see dt__ag_backward */
}

/* the gradient of t[start:start+len] along dim: g between zeros */
static dt_tensor *dt__ag_slice_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[0];
  int dim = n->dim < 0 ? n->dim + e->shape.ndim : n->dim, k = 0, i;
  int64_t len = n->yshape.dims[dim], after = e->shape.dims[dim] - n->start - len;
  dt_tensor *parts[3] = {NULL, NULL, NULL}, *y;
  dt_shape s = e->shape;
  if (n->start == 0 && after == 0) return dt_retain((dt_tensor *)g);
  if (n->start > 0) { s.dims[dim] = n->start; if (!(parts[k++] = dt__ag_zeros(s, e->dtype, e->device))) return NULL; }
  parts[k++] = dt_retain((dt_tensor *)g);
  if (after > 0) {
    s.dims[dim] = after;
    if (!(parts[k++] = dt__ag_zeros(s, e->dtype, e->device))) { for (i = 0; i < k; i++) dt_release(parts[i]); return NULL; }
  }
  y = dt_cat((const dt_tensor *const *)parts, k, dim);
  for (i = 0; i < k; i++) dt_release(parts[i]);
  return y;
}

/* index_select's: g's rows added into zeros at the index (the backend's index_add); a dtype
   index_add lacks: as a product with the one-hot (n, k) matrix of the index, (n, k) @ g as
   (outer, k, inner) */
static dt_tensor *dt__ag_index_select_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[0];
  const dt_tensor *index = n->saved[1];
  int nd = e->shape.ndim, dim = nd == 0 ? 0 : (n->dim < 0 ? n->dim + nd : n->dim), i;
  int64_t len = nd == 0 ? 1 : e->shape.dims[dim], k = index->numel, outer = 1, inner = 1;
  dt_tensor *ar, *col, *row, *oh, *g3, *y;
  if (nd == 0) return dt_reshape(g, e->shape); /* one index, 0 */
  if (e->dtype == DT_F32 || e->dtype == DT_F64) return dt__index_add_rows(n->name, e->shape, e->dtype, e->device, dim, index, g);
  if (g->numel == 0 || k == 0) return dt__ag_zeros(e->shape, e->dtype, e->device);
  for (i = 0; i < dim; i++) outer *= e->shape.dims[i];
  for (i = dim + 1; i < nd; i++) inner *= e->shape.dims[i];
  if (!(ar = dt_arange(0, (double)len, 1, DT_I64, e->device))) return NULL;
  col = dt__ag_reshape(ar, dt_shape2(len, 1));
  row = col ? dt_reshape(index, dt_shape2(1, k)) : NULL;
  oh = row ? dt__ag_eq_mask(col, row, e->dtype) : NULL;
  dt_release(col); dt_release(row);
  if (!oh) return NULL;
  if (!(g3 = dt_reshape(g, dt_shape3(outer, k, inner)))) { dt_release(oh); return NULL; }
  y = dt_matmul(oh, g3);
  dt_release(oh); dt_release(g3);
  return dt__ag_reshape(y, e->shape);
}

/* where's: g to a where cond holds, to b elsewhere, each summed to its operand's shape and in its dtype */
static dt_status dt__ag_where_bw(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const dt_tensor *cond = n->saved[0];
  dt_tensor *z = dt__ag_scalar(0.0, g->dtype, n->in[1].device);
  int i;
  if (!z) return dt_last_status();
  for (i = 1; i < 3; i++) {
    const dt__ag_edge *e = &n->in[i];
    dt_tensor *t;
    if (!e->node && !e->leaf) continue;
    t = dt__ag_sum_to(i == 1 ? dt_where(cond, g, z) : dt_where(cond, z, g), &e->shape);
    if (t && t->dtype != e->dtype) t = dt__ag_cast(t, e->dtype);
    if (!(gin[i] = t)) { dt_release(z); return dt_last_status(); }
  }
  dt_release(z);
  return DT_OK;
}

/* pad's: g with the padding taken back off (a crop given back as zeros): pad by the negated amounts */
static dt_tensor *dt__ag_pad_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[0];
  int64_t pad[2 * DT_MAX_DIMS];
  int nd = e->shape.ndim, i;
  for (i = 0; i < nd; i++) { /* pad[2k], pad[2k + 1]: dim nd - 1 - k */
    int dim = nd - 1 - i;
    int64_t l = n->perm[dim], r = n->yshape.dims[dim] - e->shape.dims[dim] - l;
    pad[2 * i] = -l;
    pad[2 * i + 1] = -r;
  }
  return dt_pad(g, pad, 2 * nd, 0.0);
}

/* scatter_add's gradient of src: g gathered at the index, zeros where src reaches past the index */
static dt_tensor *dt__ag_scatter_src_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[2];
  const dt_tensor *index = n->saved[1];
  int64_t pad[2 * DT_MAX_DIMS];
  int nd = e->shape.ndim, i, same = 1;
  dt_tensor *t = dt_gather(g, n->dim, index), *y;
  if (!t) return NULL;
  for (i = 0; i < nd; i++) {
    int dim = nd - 1 - i;
    pad[2 * i] = 0;
    pad[2 * i + 1] = e->shape.dims[dim] - index->shape.dims[dim];
    if (pad[2 * i + 1] != 0) same = 0;
  }
  if (same) return t;
  y = dt_pad(t, pad, 2 * nd, 0.0);
  dt_release(t);
  return y;
}

/* max/min by dim: g to the position of the extreme that the result took (its index) */
static dt_tensor *dt__ag_arg_bw(dt__node *n, const dt_tensor *g) {
  const dt__ag_edge *e = &n->in[0];
  int nd = e->shape.ndim, dim = nd == 0 ? 0 : (n->dim < 0 ? n->dim + nd : n->dim), i;
  dt_shape ks, as;
  dt_tensor *ar, *idx, *mask, *gk, *y;
  if (nd == 0) return dt_reshape(g, e->shape);
  ks = dt__ag_keep(e->shape, dim);
  as = e->shape;
  for (i = 0; i < nd; i++) if (i != dim) as.dims[i] = 1;
  if (!(ar = dt__ag_reshape(dt_arange(0, (double)e->shape.dims[dim], 1, DT_I64, e->device), as))) return NULL;
  idx = dt_reshape(n->saved[2], ks);
  mask = idx ? dt__ag_eq_mask(ar, idx, e->dtype) : NULL;
  dt_release(ar); dt_release(idx);
  if (!mask) return NULL;
  gk = dt_reshape(g, ks);
  y = gk ? dt_mul(mask, gk) : NULL;
  dt_release(gk); dt_release(mask);
  return y;
}

/* Fills gin[i] for every input that needs a gradient (NULL for the others); on failure makes
   none and returns the status of the error reported. */
/* A linear layer's node (x (n, in), W (out, in), b (out,) -> y = x W^T + b): the fused backward of
   dt_backward_params with its gradients written (beta 0) into new tensors: on the CPU one gemm
   gW = g^T x that sums g's columns into gb as it packs (dt__gemm_opts' asum), gx = g W. */
static dt_status dt__ag_linear_bw(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const char *op = "dt_linear";
  const dt__ag_edge *ex = &n->in[0], *ew = &n->in[1], *eb = &n->in[2];
  dt_device d = ew->device;
  const dt__backend *be = dt__be(d);
  dt_dtype t = ew->dtype;
  int64_t rows = g->shape.dims[0], out = ew->shape.dims[0], in = ew->shape.dims[1];
  dt_tensor *gw = NULL, *gb = NULL, *gx = NULL;
  dt_status s = DT_OK;
  int need_w = ew->node || ew->leaf, need_b = eb->node || eb->leaf, need_x = ex->node || ex->leaf;
  if (need_w || need_b) {
    gw = dt__new(op, ew->shape, t, d);
    gb = gw ? dt__new(op, eb->shape, t, d) : NULL;
    if (!gb) { dt_release(gw); return dt_last_status(); }
    if (rows == 0 || out == 0) {
      if (gw->numel) s = be->fill(d.index, t, gw->numel, 0.0, gw->st->ptr);
      if (s == DT_OK && gb->numel) s = be->fill(d.index, t, gb->numel, 0.0, gb->st->ptr);
    } else if (d.type == DT_CPU) {
      dt__gemm_opts o;
      memset(&o, 0, sizeof o);
      o.asum = gb->st->ptr;
      s = dt__cpu_gemm_opt_rec(t, 1, 0, out, in, rows, 1.0, g->st->ptr, n->saved[0]->st->ptr, 0.0, gw->st->ptr, &o);
      if (s == DT_OK && !o.asum_done) s = be->reduce(d.index, DT__R_SUM, t, 1, rows, out, g->st->ptr, gb->st->ptr);
    } else {
      s = be->gemm(d.index, t, 1, 0, 1, out, in, rows, 1.0, g->st->ptr, 0, n->saved[0]->st->ptr, 0, 0.0, gw->st->ptr, 0);
      if (s == DT_OK) s = be->reduce(d.index, DT__R_SUM, t, 1, rows, out, g->st->ptr, gb->st->ptr);
    }
  }
  if (s == DT_OK && need_x) {
    if (!(gx = dt__new(op, ex->shape, t, d))) s = dt_last_status();
    else if (gx->numel > 0 && out > 0)
      s = be->gemm(d.index, t, 0, 0, 1, rows, in, out, 1.0, g->st->ptr, 0, n->saved[1]->st->ptr, 0, 0.0, gx->st->ptr, 0);
    else if (gx->numel > 0)
      s = be->fill(d.index, t, gx->numel, 0.0, gx->st->ptr);
  }
  if (s != DT_OK) {
    dt_release(gw); dt_release(gb); dt_release(gx);
    return dt__backend_fail(op, d, s);
  }
  gin[0] = gx;
  if (need_w) gin[1] = gw; else dt_release(gw);
  if (need_b) gin[2] = gb; else dt_release(gb);
  return DT_OK;
}

static dt_status dt__ag_backward(dt__node *n, const dt_tensor *g, dt_tensor **gin) {
  const dt__ag_edge *e0 = &n->in[0], *e1 = n->nin > 1 ? &n->in[1] : NULL;
  int need0 = e0->node || e0->leaf, need1 = e1 && (e1->node || e1->leaf), i;
  dt_tensor *const *sv = n->saved;
  dt_tensor *t = NULL;
  const char *op = n->name;
  for (i = 0; i < n->nin; i++) gin[i] = NULL;
  switch (n->op) {
    case DT__AG_ADD:
      if (need0) gin[0] = dt__ag_sum_to(dt_retain((dt_tensor *)g), &e0->shape);
      if (need1) gin[1] = dt__ag_sum_to(dt_retain((dt_tensor *)g), &e1->shape);
      break;
    case DT__AG_SUB:
      if (need0) gin[0] = dt__ag_sum_to(dt_retain((dt_tensor *)g), &e0->shape);
      if (need1) gin[1] = dt__ag_sum_to(dt_neg(g), &e1->shape);
      break;
    case DT__AG_MUL:
      if (need0) gin[0] = dt__ag_sum_to(dt_mul(g, sv[1]), &e0->shape);
      if (need1) gin[1] = dt__ag_sum_to(dt_mul(g, sv[0]), &e1->shape);
      break;
    case DT__AG_DIV: /* d(a/b) = g/b, -g a/b^2 */
      if (!(t = dt_div(g, sv[1]))) break;
      if (need1) gin[1] = dt__ag_sum_to(dt__ag_affine(op, dt__ag_bin(dt_div, sv[1], dt__ag_bin(dt_mul, sv[0], dt_retain(t), 1), 1), -1.0, 0.0), &e1->shape);
      if (need0) gin[0] = dt__ag_sum_to(dt_retain(t), &e0->shape);
      break;
    case DT__AG_ADD_SCALAR: gin[0] = dt_retain((dt_tensor *)g); break;
    case DT__AG_MUL_SCALAR: gin[0] = dt_mul_scalar(g, n->p); break;
    case DT__AG_NEG: gin[0] = dt_neg(g); break;
    case DT__AG_EXP: gin[0] = dt_mul(g, sv[2]); break;
    case DT__AG_LOG: gin[0] = dt_div(g, sv[0]); break;
    case DT__AG_SQRT: gin[0] = dt__ag_bin(dt_div, g, dt_mul_scalar(sv[2], 2.0), 0); break;
    case DT__AG_RELU: gin[0] = dt__binary(op, DT__B_RELU_GRAD, g, sv[2]); break; /* y > 0 where x > 0 */
    case DT__AG_SIGMOID: gin[0] = dt__binary(op, DT__B_SIGMOID_GRAD, g, sv[2]); break; /* g (1 - y) y */
    case DT__AG_TANH: gin[0] = dt__binary(op, DT__B_TANH_GRAD, g, sv[2]); break;       /* g (1 - y^2) */
    case DT__AG_ABS: { /* g sign(x), sign(0) = 0 */
      dt_tensor *z = dt__ag_scalar(0.0, e0->dtype, e0->device), *pos = NULL, *neg = NULL;
      if (z) pos = dt__ag_cast(dt_gt(sv[0], z), e0->dtype);
      if (pos) neg = dt__ag_cast(dt_lt(sv[0], z), e0->dtype);
      if (neg) gin[0] = dt__ag_bin(dt_mul, g, dt__ag_bin(dt_sub, pos, dt_retain(neg), 0), 0);
      dt_release(z); dt_release(pos); dt_release(neg);
      break;
    }
    case DT__AG_MATMUL: if (dt__ag_matmul_bw(n, g, gin) != DT_OK) goto fail; break;
    case DT__AG_LINEAR: if (dt__ag_linear_bw(n, g, gin) != DT_OK) goto fail; break;
    case DT__AG_TRANSPOSE: gin[0] = dt_transpose(g); break;
    case DT__AG_RESHAPE: gin[0] = dt_reshape(g, e0->shape); break;
    case DT__AG_PERMUTE: {
      int inv[DT_MAX_DIMS], nd = e0->shape.ndim;
      for (i = 0; i < nd; i++) inv[n->perm[i] < 0 ? n->perm[i] + nd : n->perm[i]] = i;
      gin[0] = dt_permute(g, inv);
      break;
    }
    case DT__AG_SLICE: gin[0] = dt__ag_slice_bw(n, g); break;
    case DT__AG_INDEX_SELECT: gin[0] = dt__ag_index_select_bw(n, g); break;
    case DT__AG_CAT: case DT__AG_STACK: {
      int nd = n->yshape.ndim, dim = n->op == DT__AG_STACK ? 0 : (n->dim < 0 ? n->dim + nd : n->dim);
      int64_t off = 0;
      for (i = 0; i < n->nin; i++) {
        const dt__ag_edge *e = &n->in[i];
        int64_t len = n->op == DT__AG_STACK ? 1 : (e->shape.ndim == 1 && e->shape.dims[0] == 0) ? 0 : e->shape.dims[dim];
        if (e->node || e->leaf) {
          if (len == 0 && n->op == DT__AG_CAT) gin[i] = dt_empty(e->shape, e->dtype, e->device);
          else gin[i] = dt__ag_reshape(dt_slice(g, dim, off, off + len), e->shape);
          if (!gin[i]) goto fail;
        }
        off += len;
      }
      break;
    }
    case DT__AG_SUM: gin[0] = dt__ag_expand(dt_retain((dt_tensor *)g), &e0->shape); break;
    case DT__AG_MEAN: {
      int64_t cnt = 1;
      for (i = 0; i < e0->shape.ndim; i++) cnt *= e0->shape.dims[i];
      gin[0] = dt__ag_expand(dt_mul_scalar(g, cnt ? 1.0 / (double)cnt : 0.0), &e0->shape);
      break;
    }
    case DT__AG_SUM_DIM: {
      int dim = n->dim < 0 ? n->dim + e0->shape.ndim : n->dim;
      gin[0] = dt__ag_expand(dt_reshape(g, dt__ag_keep(e0->shape, dim)), &e0->shape);
      break;
    }
    case DT__AG_NORM: { /* g x / |x|, 0 where |x| = 0 (as PyTorch) */
      dt_tensor *z = dt__ag_scalar(0.0, e0->dtype, e0->device), *nz = NULL, *den = NULL;
      if (z) nz = dt__ag_cast(dt_ne(sv[2], z), e0->dtype);
      if (nz) den = dt__ag_bin(dt_add, sv[2], dt__ag_cast(dt_eq(sv[2], z), e0->dtype), 0);
      if (den) gin[0] = dt__ag_bin(dt_mul, sv[0], dt__ag_bin(dt_div, den, dt__ag_bin(dt_mul, nz, dt_retain((dt_tensor *)g), 1), 1), 0);
      dt_release(z); dt_release(nz); dt_release(den);
      break;
    }
    case DT__AG_MAX_DIM: case DT__AG_MIN_DIM: gin[0] = dt__ag_arg_bw(n, g); break;
    case DT__AG_MAX: case DT__AG_MIN: { /* split evenly between the elements equal to the result */
      dt_tensor *mask = dt__ag_eq_mask(sv[0], sv[2], e0->dtype), *cnt = mask ? dt_sum(mask) : NULL;
      if (cnt) gin[0] = dt__ag_bin(dt_mul, mask, dt_div(g, cnt), 0);
      dt_release(mask); dt_release(cnt);
      break;
    }
    case DT__AG_SOFTMAX: { /* y (g - sum(g y)) */
      int dim = n->dim < 0 ? n->dim + e0->shape.ndim : n->dim;
      gin[0] = dt__ag_bin(dt_mul, sv[2], dt__ag_bin(dt_sub, g, dt__ag_sum_keep(dt_mul(g, sv[2]), dim), 0), 0);
      break;
    }
    case DT__AG_LOG_SOFTMAX: { /* g - exp(y) sum(g) */
      int dim = n->dim < 0 ? n->dim + e0->shape.ndim : n->dim;
      t = dt__ag_sum_keep(dt_retain((dt_tensor *)g), dim);
      if (t) gin[0] = dt__ag_bin(dt_sub, g, dt__ag_bin(dt_mul, t, dt_exp(sv[2]), 1), 0);
      break;
    }
    case DT__AG_CROSS_ENTROPY: gin[0] = dt__ag_bin(dt_mul, g, dt_cross_entropy_grad(sv[0], sv[1]), 1); break;
    case DT__AG_MSE_LOSS:
      if (!(t = dt__ag_bin(dt_mul, g, dt_mse_loss_grad(sv[0], sv[1]), 1))) break;
      if (need0) gin[0] = dt_retain(t);
      if (need1) gin[1] = dt_neg(t);
      break;
    case DT__AG_CAST: gin[0] = dt_cast(g, e0->dtype); break;
    case DT__AG_COPYTO: gin[0] = dt_copyto(g, e0->device); break;
    case DT__AG_SIN: gin[0] = dt__ag_bin(dt_mul, g, dt_cos(sv[0]), 0); break;
    case DT__AG_COS: gin[0] = dt__ag_bin(dt_mul, g, dt__ag_affine(op, dt_sin(sv[0]), -1.0, 0.0), 0); break;
    case DT__AG_ERF: /* g 2/sqrt(pi) exp(-x^2) */
      gin[0] = dt__ag_bin(dt_mul, g, dt__ag_affine(op, dt__ag_exp(dt__ag_affine(op, dt_mul(sv[0], sv[0]), -1.0, 0.0)),
                                                   1.1283791670955126, 0.0), 0);
      break;
    case DT__AG_GELU: gin[0] = dt__ag_bin(dt_mul, g, dt__unary(op, DT__U_GELU_GRAD, sv[0], 0, 0), 0); break;
    case DT__AG_POW: /* g p x^(p-1); p = 0: zeros, as PyTorch */
      if (n->p == 0) gin[0] = dt__ag_zeros(e0->shape, e0->dtype, e0->device);
      else gin[0] = dt__ag_bin(dt_mul, g, dt__ag_affine(op, dt__unary(op, DT__U_POW, sv[0], n->p - 1.0, 0), n->p, 0.0), 0);
      break;
    case DT__AG_CLAMP: { /* g where lo <= x <= hi (NaN x: 0), as PyTorch */
      dt_tensor *ge = dt__ag_cast(dt_ge_scalar(sv[0], n->p), e0->dtype), *le = ge ? dt__ag_cast(dt_le_scalar(sv[0], n->p2), e0->dtype) : NULL;
      if (le) gin[0] = dt__ag_bin(dt_mul, g, dt__ag_bin(dt_mul, ge, dt_retain(le), 0), 0);
      dt_release(ge); dt_release(le);
      break;
    }
    case DT__AG_CONV2D: {
      const int *q = n->perm;
      int need2 = n->nin > 2 && (n->in[2].node || n->in[2].leaf);
      if (dt__conv2d_backward(g, sv[0], sv[1], sv[2], q[0], q[1], q[2], q[3], q[4], q[5], q[6], need0 ? &gin[0] : NULL,
                              need1 ? &gin[1] : NULL, need2 ? &gin[2] : NULL) != DT_OK)
        goto fail;
      break;
    }
    case DT__AG_BATCH_NORM: {
      int need2 = n->nin > 2 && (n->in[2].node || n->in[2].leaf);
      if (dt__bn_backward(g, sv[0], n->nin > 1 ? sv[1] : NULL, sv[2], n->p, n->dim, need0 ? &gin[0] : NULL, need1 ? &gin[1] : NULL,
                          need2 ? &gin[2] : NULL) != DT_OK)
        goto fail;
      break;
    }
    case DT__AG_MAX_POOL2D:
      gin[0] = dt_f_max_pool2d_backward(g, sv[0], sv[2], n->perm[0], n->perm[1], n->perm[2], n->perm[3], n->perm[4], n->perm[5]);
      break;
    case DT__AG_AVG_POOL2D:
      gin[0] = dt_f_avg_pool2d_backward(g, sv[0], n->perm[0], n->perm[1], n->perm[2], n->perm[3], n->perm[4], n->perm[5]);
      break;
    case DT__AG_ADAPTIVE_AVG_POOL2D: gin[0] = dt_f_adaptive_avg_pool2d_backward(g, sv[0]); break;
    case DT__AG_WHERE: if (dt__ag_where_bw(n, g, gin) != DT_OK) goto fail; break;
    case DT__AG_GATHER: /* scatter-add of g into zeros */
      if ((t = dt__ag_zeros(e0->shape, e0->dtype, e0->device))) gin[0] = dt_scatter_add(t, n->dim, sv[1], g);
      break;
    case DT__AG_SCATTER_ADD:
      if (need0) gin[0] = dt_retain((dt_tensor *)g);
      if (n->in[2].node || n->in[2].leaf) gin[2] = dt__ag_scatter_src_bw(n, g);
      break;
    case DT__AG_PAD: gin[0] = dt__ag_pad_bw(n, g); break;
    case DT__AG_BCE_WITH_LOGITS: case DT__AG_NLL_LOSS: case DT__AG_L1_LOSS: case DT__AG_SMOOTH_L1_LOSS: case DT__AG_MSE_LOSS_EX:
      if (dt__ag_loss_bw(n, g, gin) != DT_OK) goto fail;
      break;
  }
  dt_release(t);
  for (i = 0; i < n->nin; i++) {
    if ((n->in[i].node || n->in[i].leaf) && !gin[i]) goto fail;
    /* an input of another dtype than the result's (type promotion): its gradient in its own dtype */
    if (gin[i] && gin[i]->dtype != n->in[i].dtype && !(gin[i] = dt__ag_cast(gin[i], n->in[i].dtype))) goto fail;
  }
  return DT_OK;
fail:
  for (i = 0; i < n->nin; i++) { dt_release(gin[i]); gin[i] = NULL; }
  return dt_last_status() != DT_OK ? dt_last_status() : DT_ERR_BACKEND;
}

/* ---- src/autograd/engine.c ---- */
/* The autograd engine: dt_autograd_backward walks the graph under a result once, in an order
   where each node runs after every node that uses its result (Kahn's, with counts of the uses
   within the graph), and then frees what the walked nodes saved (retain_graph=False). The leaves'
   new gradients are made first and stored together at the end, so a failed backward changes no
   gradient and no node. Also the leaf functions: dt_requires_grad_, dt_grad, dt_detach, ... */

/* Frees n when this was its last reference, and so every node only it reached: iteratively,
   through the nodes' `next` fields, so a long chain does not deepen the C stack. */
static void dt__node_release(dt__node *n) {
  dt__node *todo = NULL;
  if (n && DT__ATOMIC_ADD(&n->refs, -1) == 0) { n->next = NULL; todo = n; }
  while (todo) {
    dt__node *x = todo;
    int i;
    todo = x->next;
    for (i = 0; i < x->nin; i++) {
      dt__node *c = x->in[i].node;
      if (c && DT__ATOMIC_ADD(&c->refs, -1) == 0) { c->next = todo; todo = c; }
      dt_release(x->in[i].leaf); /* a leaf has no node */
    }
    for (i = 0; i < DT__AG_SAVED; i++) dt_release(x->saved[i]);
    dt_release(x->gacc);
    DT_FREE(x);
  }
}

/* A leaf reached by a backward and the sum of its gradients over the paths so far. */
typedef struct dt__ag_leafacc { dt_tensor *leaf, *acc, *final; } dt__ag_leafacc;

static int dt__same_shape(const dt_shape *a, const dt_shape *b) {
  return a->ndim == b->ndim && memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* Adds gradient g (taken) into *acc (NULL: g becomes it). */
static dt_status dt__ag_accumulate(dt_tensor **acc, dt_tensor *g) {
  dt_tensor *s;
  if (!*acc) { *acc = g; return DT_OK; }
  s = dt_add(*acc, g);
  dt_release(g);
  if (!s) return dt_last_status();
  dt_release(*acc);
  *acc = s;
  return DT_OK;
}

/* Reports a failure inside the backward of node n, keeping the failing call's message. */
static dt_status dt__ag_fail_in(const char *op, const dt__node *n, dt_status s) {
  char msg[1024];
  size_t len = strlen(dt_last_error());
  if (len >= sizeof msg) len = sizeof msg - 1;
  memcpy(msg, dt_last_error(), len); /* dt__fail rewrites the message that this quotes */
  msg[len] = 0;
  return dt__fail(s != DT_OK ? s : DT_ERR_BACKEND, "%s: the backward of %s failed: %s", op, n->name, msg);
}

static dt_status dt__ag_run(const char *op, dt_tensor *out, dt_tensor *seed) {
  dt__node **nodes = NULL, *ready = NULL;
  dt__ag_leafacc *leaves = NULL;
  dt_tensor **gin = NULL;
  int nn = 0, cap = 0, nleaf_edges = 0, nl = 0, maxin = 1, i, j;
  dt_status s = DT_OK;
  char sb[200];
  if (!out->node) { /* a leaf: its own gradient */
    nleaf_edges = 1;
  } else {
    /* the nodes under out, breadth first (the array is the queue), each counting its uses */
    cap = 16;
    if (!(nodes = (dt__node **)DT_MALLOC(sizeof(dt__node *) * (size_t)cap))) goto oom;
    nodes[nn++] = out->node;
    out->node->mark = 1;
    for (i = 0; i < nn; i++) {
      dt__node *x = nodes[i];
      if (x->done) {
        s = dt__fail(DT_ERR_INVALID_ARGUMENT,
                     "%s: trying to backward through the graph a second time: a backward already went through %s and freed "
                     "what it saved (build the expression again for another backward)", op, x->name);
        goto done;
      }
      for (j = 0; j < DT__AG_SAVED; j++)
        if (x->saved[j] && *dt__version(x->saved[j]) != x->saved_version[j]) {
          s = dt__fail(DT_ERR_INVALID_ARGUMENT,
                       "%s: a tensor that %s saved for the backward was changed in place since (dt_fill_, dt_axpy_, dt_copy_ "
                       "or another _ function): it is at version %u, expected %u (change a copy instead)", op, x->name,
                       *dt__version(x->saved[j]), x->saved_version[j]);
          goto done;
        }
      if (x->nin > maxin) maxin = x->nin;
      for (j = 0; j < x->nin; j++) {
        dt__node *c = x->in[j].node;
        if (x->in[j].leaf) nleaf_edges++;
        if (!c) continue;
        if (!c->mark) {
          if (nn == cap) {
            dt__node **bigger;
            if (cap > (1 << 28) || !(bigger = (dt__node **)DT_MALLOC(sizeof(dt__node *) * (size_t)cap * 2))) goto oom;
            memcpy(bigger, nodes, sizeof(dt__node *) * (size_t)nn);
            DT_FREE(nodes);
            nodes = bigger;
            cap *= 2;
          }
          c->mark = 1;
          nodes[nn++] = c;
        }
        c->deps++;
      }
    }
  }
  if (nleaf_edges && !(leaves = (dt__ag_leafacc *)DT_MALLOC(sizeof(dt__ag_leafacc) * (size_t)nleaf_edges))) goto oom;
  if (!(gin = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)maxin))) goto oom;
  if (!out->node) {
    leaves[0].leaf = out; leaves[0].acc = dt_retain(seed); leaves[0].final = NULL;
    nl = 1;
  } else {
    out->node->gacc = dt_retain(seed);
    out->node->next = NULL;
    ready = out->node;
  }
  while (ready) {
    dt__node *x = ready;
    ready = x->next;
    s = dt__ag_backward(x, x->gacc, gin);
    if (s != DT_OK) { s = dt__ag_fail_in(op, x, s); goto done; }
    dt_release(x->gacc);
    x->gacc = NULL;
    for (j = 0; j < x->nin; j++) {
      dt__ag_edge *e = &x->in[j];
      dt_tensor *g = gin[j];
      gin[j] = NULL;
      if (g && (!dt__same_shape(&g->shape, &e->shape) || g->dtype != e->dtype || !dt_device_equal(g->st->device, e->device))) {
        s = dt__fail(DT_ERR_BACKEND, "%s: the backward of %s made a gradient of shape %s for input %d, which does not match it "
                     "(an internal error)", op, x->name, dt__shape_str(&g->shape, sb, sizeof sb), j);
        dt_release(g);
        for (j = j + 1; j < x->nin; j++) { dt_release(gin[j]); gin[j] = NULL; }
        goto done;
      }
      if (e->node) {
        s = dt__ag_accumulate(&e->node->gacc, g);
        if (--e->node->deps == 0) { e->node->next = ready; ready = e->node; }
      } else if (e->leaf) {
        for (i = 0; i < nl && leaves[i].leaf != e->leaf; i++) {}
        if (i == nl) { leaves[nl].leaf = e->leaf; leaves[nl].acc = NULL; leaves[nl].final = NULL; nl++; }
        s = dt__ag_accumulate(&leaves[i].acc, g);
      } else {
        dt_release(g);
      }
      if (s != DT_OK) {
        for (j = j + 1; j < x->nin; j++) { dt_release(gin[j]); gin[j] = NULL; }
        s = dt__ag_fail_in(op, x, s);
        goto done;
      }
    }
  }
  /* the new gradients, then (nothing can fail from here) stored; a gradient that something else
     also holds (the seed, a view, one tensor given to two leaves) is copied, so that each leaf
     owns its gradient */
  for (i = 0; i < nl; i++) {
    dt_tensor *l = leaves[i].leaf, *a = leaves[i].acc;
    if (l->grad) leaves[i].final = dt_add(l->grad, a);
    else if (a->refs > 1 || a->st->refs > 1 || a->st->base || a->st->foreign) leaves[i].final = dt_copyto(a, a->st->device);
    else leaves[i].final = dt_retain(a);
    if (!leaves[i].final) { s = dt_last_status(); goto done; }
  }
  for (i = 0; i < nl; i++) {
    dt_release(leaves[i].leaf->grad);
    leaves[i].leaf->grad = leaves[i].final;
    leaves[i].final = NULL;
  }
  for (i = 0; i < nn; i++) { /* retain_graph=False */
    for (j = 0; j < DT__AG_SAVED; j++) { dt_release(nodes[i]->saved[j]); nodes[i]->saved[j] = NULL; }
    nodes[i]->done = 1;
  }
  goto done;
oom:
  s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host walking the graph", op);
done:
  for (i = 0; i < nn; i++) {
    nodes[i]->mark = 0; nodes[i]->deps = 0;
    dt_release(nodes[i]->gacc);
    nodes[i]->gacc = NULL;
  }
  for (i = 0; i < nl; i++) { dt_release(leaves[i].acc); dt_release(leaves[i].final); }
  DT_FREE(nodes);
  DT_FREE(leaves);
  DT_FREE(gin);
  return s;
}

DTDEF dt_status dt_autograd_backward(dt_tensor *out, const dt_tensor *grad_out) {
  const char *op = "dt_autograd_backward";
  dt_tensor *seed;
  dt_status s;
  int prev;
  char a[200], c[200], b[48];
  if ((s = dt__check_tensor(op, "out", out)) != DT_OK) return s;
  if (!out->requires_grad)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: out does not require grad and has no recorded history (mark a leaf with "
                    "dt_requires_grad_ before the operations, with grad mode on)", op);
  if (!grad_out) {
    if (out->numel != 1)
      return dt__fail(DT_ERR_SHAPE, "%s: grad_out is NULL, which is allowed only for an out of one element, but out has "
                      "shape %s (%lld elements): pass a grad_out of that shape", op,
                      dt__shape_str(&out->shape, a, sizeof a), (long long)out->numel);
    if (!(seed = dt_ones_like(out))) return dt_last_status();
  } else {
    if (!dt__same_shape(&grad_out->shape, &out->shape))
      return dt__fail(DT_ERR_SHAPE, "%s: grad_out has shape %s but out has shape %s", op,
                      dt__shape_str(&grad_out->shape, a, sizeof a), dt__shape_str(&out->shape, c, sizeof c));
    if (grad_out->dtype != out->dtype)
      return dt__fail(DT_ERR_DTYPE, "%s: grad_out is %s but out is %s", op, dt_dtype_name(grad_out->dtype), dt_dtype_name(out->dtype));
    if (!dt_device_equal(grad_out->st->device, out->st->device))
      return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: grad_out is on %s but out is on %s", op,
                      dt_device_str(grad_out->st->device, b, sizeof b), dt_device_str(out->st->device, c, sizeof c));
    seed = dt_retain((dt_tensor *)grad_out);
  }
  prev = dt__no_grad;
  dt__no_grad = 1; /* the backwards record nothing */
  s = dt__ag_run(op, out, seed);
  dt__no_grad = prev;
  dt_release(seed);
  return s;
}

DTDEF dt_status dt_requires_grad_(dt_tensor *t, int on) {
  const char *op = "dt_requires_grad_";
  dt_status s;
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if (t->node)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: t is not a leaf (it is the result of %s, recorded): only a leaf's "
                    "requires_grad can be set (use dt_detach for a tensor outside the graph)", op, t->node->name);
  if (on && !dt__is_float(t->dtype))
    return dt__fail(DT_ERR_DTYPE, "%s: t is %s, but only float32 and float64 tensors can require grad", op, dt_dtype_name(t->dtype));
  t->requires_grad = on != 0;
  return DT_OK;
}

DTDEF int dt_requires_grad(const dt_tensor *t) {
  if (dt__check_tensor("dt_requires_grad", "t", t) != DT_OK) return 0;
  return t->requires_grad;
}

DTDEF dt_tensor *dt_grad(dt_tensor *t) {
  if (dt__check_tensor("dt_grad", "t", t) != DT_OK) return NULL;
  return t->grad;
}

DTDEF int dt_is_leaf(const dt_tensor *t) {
  if (dt__check_tensor("dt_is_leaf", "t", t) != DT_OK) return 0;
  return t->node == NULL;
}

DTDEF dt_tensor *dt_detach(const dt_tensor *t) {
  if (dt__check_tensor("dt_detach", "t", t) != DT_OK) return NULL;
  return dt__alias("dt_detach", t);
}

DTDEF dt_status dt_zero_grad_(dt_tensor *t) {
  dt_status s;
  if ((s = dt__check_tensor("dt_zero_grad_", "t", t)) != DT_OK) return s;
  dt_release(t->grad);
  t->grad = NULL;
  return DT_OK;
}

/* ---- src/io/module_save.c ---- */
#include <errno.h>
#if defined(_WIN32)
#include <sys/stat.h>
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
/* safetensors: 8-byte little-endian header length N, N bytes of JSON
   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
    "__metadata__": {...}}, then the raw little-endian data. The tensors' byte ranges,
   sorted by begin, tile the data: the first begins at 0, each begins where the one before
   ends, the last ends at the end of the file. */

#define DT__ST_MAX_HEADER ((uint64_t)100 << 20) /* the format's own limit: 100 MB */

static const char *dt__st_dtype(dt_dtype t) {
  switch (t) {
    case DT_F32: return "F32"; case DT_F64: return "F64"; case DT_I32: return "I32"; case DT_I64: return "I64";
    case DT_U8: return "U8"; case DT_BOOL: return "BOOL"; case DT_F16: return "F16"; case DT_BF16: return "BF16";
  }
  return "?";
}

/* The system's reason for a failed file call, from its errno, in the C library's words
   (glibc's); strerror itself may share one buffer among threads, so not it. */
static const char *dt__errno_str(int e) {
  switch (e) {
    case 0: return "unknown error";
#ifdef ENOENT
    case ENOENT: return "No such file or directory";
#endif
#ifdef EACCES
    case EACCES: return "Permission denied";
#endif
#ifdef EPERM
    case EPERM: return "Operation not permitted";
#endif
#ifdef EISDIR
    case EISDIR: return "Is a directory";
#endif
#ifdef ENOTDIR
    case ENOTDIR: return "Not a directory";
#endif
#ifdef ENAMETOOLONG
    case ENAMETOOLONG: return "File name too long";
#endif
#ifdef ELOOP
    case ELOOP: return "Too many levels of symbolic links";
#endif
#ifdef EMFILE
    case EMFILE: return "Too many open files";
#endif
#ifdef ENFILE
    case ENFILE: return "Too many open files in system";
#endif
#ifdef ENOSPC
    case ENOSPC: return "No space left on device";
#endif
#ifdef EDQUOT
    case EDQUOT: return "Disk quota exceeded";
#endif
#ifdef EROFS
    case EROFS: return "Read-only file system";
#endif
#ifdef EEXIST
    case EEXIST: return "File exists";
#endif
#ifdef EIO
    case EIO: return "Input/output error";
#endif
#ifdef EFBIG
    case EFBIG: return "File too large";
#endif
#ifdef ENOMEM
    case ENOMEM: return "Cannot allocate memory";
#endif
#ifdef ETXTBSY
    case ETXTBSY: return "Text file busy";
#endif
#ifdef EBUSY
    case EBUSY: return "Device or resource busy";
#endif
#ifdef ENXIO
    case ENXIO: return "No such device or address";
#endif
#ifdef ENODEV
    case ENODEV: return "No such device";
#endif
#ifdef EINVAL
    case EINVAL: return "Invalid argument";
#endif
#ifdef EOVERFLOW
    case EOVERFLOW: return "Value too large for defined data type";
#endif
#ifdef EXDEV
    case EXDEV: return "Invalid cross-device link";
#endif
#ifdef ESTALE
    case ESTALE: return "Stale file handle";
#endif
    default: return NULL;
  }
}
/* "No such file or directory", or "error 123" for an errno the table lacks, in buf. */
static const char *dt__errno_text(int e, char *buf, size_t n) {
  const char *s = dt__errno_str(e);
  if (s) return s;
  snprintf(buf, n, "error %d", e);
  return buf;
}

static int dt__little_endian(void) { const uint16_t one = 1; return *(const uint8_t *)&one == 1; }

#if !defined(_WIN32)
#ifdef O_CLOEXEC
#define DT__O_CLOEXEC O_CLOEXEC
#else
#define DT__O_CLOEXEC 0   /* strict C99 hides it: fcntl(FD_CLOEXEC) right after the open instead */
#endif
static void dt__cloexec(int fd) { if (DT__O_CLOEXEC == 0) fcntl(fd, F_SETFD, FD_CLOEXEC); }
#endif

/* A file written whole or not at all: the bytes go to a new temporary file beside path
   (created exclusively), which is renamed over path once complete, and removed on any
   failure, so a failed save leaves an old file as it was. An existing path that is not a
   regular file (a FIFO would wait for a reader forever, a directory or a device is no
   file to replace) is refused before anything is created. On Windows the old file is
   removed just before the rename (rename does not replace there). */
typedef struct dt__wfile {
#if defined(_WIN32)
  FILE *f;
#else
  int fd;
#endif
  char *tmp;
  int err;   /* the errno of the last failed call, for the message */
} dt__wfile;

static dt_status dt__wfile_open(const char *op, const char *path, dt__wfile *w) {
  size_t cap = strlen(path) + 48;
  const char *kind = NULL;
  char eb[32];
  int k, have = 0;
#if defined(_WIN32)
  struct _stat64 st;
  w->err = 0;
  if (_stat64(path, &st) == 0) {
    have = 1;
    if ((st.st_mode & _S_IFMT) != _S_IFREG) kind = (st.st_mode & _S_IFMT) == _S_IFDIR ? "a directory" : "";
  }
#else
  struct stat st;
  w->err = 0;
  if (stat(path, &st) == 0) {
    have = 1;
    if (!S_ISREG(st.st_mode))
      kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
           : S_ISBLK(st.st_mode) ? "a block device" : "";
  }
#endif
  if (kind) return dt__fail(DT_ERR_IO, "%s: %s is %s%snot a regular file to write", op, path, kind, kind[0] ? ", " : "");
  if (!(w->tmp = (char *)DT_MALLOC(cap))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
#if defined(_WIN32)
  w->f = NULL;
#else
  w->fd = -1;
#endif
  for (k = 0; k < 100; k++) {
    /* unique enough per process and thread (the address of w); O_EXCL makes it certain */
#if defined(_WIN32)
    snprintf(w->tmp, cap, "%s.tmp%lx.%d", path, (unsigned long)((uintptr_t)w >> 4), k);
    if (_stat64(w->tmp, &st) == 0) continue;
    if ((w->f = fopen(w->tmp, "wb")) != NULL) break;
    w->err = errno;
#else
    int fd;
    snprintf(w->tmp, cap, "%s.tmp%lx.%lx.%d", path, (unsigned long)getpid(), (unsigned long)((uintptr_t)w >> 4), k);
    do fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | DT__O_CLOEXEC, 0666); while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
      dt__cloexec(fd);
      if (have) chmod(w->tmp, st.st_mode & 07777);   /* the replaced file's permissions stay */
      w->fd = fd;
      break;
    }
    w->err = errno;
    if (errno != EEXIST) break;
#endif
  }
  (void)have;
#if defined(_WIN32)
  if (!w->f) {
#else
  if (w->fd < 0) {
#endif
    DT_FREE(w->tmp);
    w->tmp = NULL;
    return dt__fail(DT_ERR_IO, "%s: cannot open %s for writing (a temporary file beside it could not be created: %s)", op, path,
                    dt__errno_text(w->err, eb, sizeof eb));
  }
  return DT_OK;
}

/* n bytes at the end of w: 1 when written, 0 on an error. */
static int dt__wfile_write(dt__wfile *w, const void *buf, size_t n) {
#if defined(_WIN32)
  if (fwrite(buf, 1, n, w->f) == n) return 1;
  w->err = errno;
  return 0;
#else
  size_t at = 0;
  while (at < n) {
    size_t want = n - at < ((size_t)1 << 30) ? n - at : ((size_t)1 << 30);
    long k = (long)write(w->fd, (const char *)buf + at, want);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) { w->err = k < 0 ? errno : 0; return 0; }
    at += (size_t)k;
  }
  return 1;
#endif
}

/* A failed write to w as the status of the save. */
static dt_status dt__wfile_write_failed(const char *op, const char *path, const dt__wfile *w) {
  char eb[32];
  return dt__fail(DT_ERR_IO, "%s: writing %s failed: %s", op, path, w->err ? dt__errno_text(w->err, eb, sizeof eb) : "nothing was written");
}

/* Closes w; when s is DT_OK, puts it in place of path (or fails with DT_ERR_IO), else
   removes it. Returns the status of the save. */
static dt_status dt__wfile_finish(const char *op, const char *path, dt__wfile *w, dt_status s) {
  char eb[32];
#if defined(_WIN32)
  if (fclose(w->f) != 0 && s == DT_OK) { w->err = errno; s = dt__wfile_write_failed(op, path, w); }
  if (s == DT_OK) {
    remove(path);
    if (rename(w->tmp, path) != 0) s = dt__fail(DT_ERR_IO, "%s: cannot replace %s: %s", op, path, dt__errno_text(errno, eb, sizeof eb));
  }
  if (s != DT_OK) remove(w->tmp);
#else
  if (close(w->fd) != 0 && s == DT_OK) { w->err = errno; s = dt__wfile_write_failed(op, path, w); }
  if (s == DT_OK && rename(w->tmp, path) != 0) s = dt__fail(DT_ERR_IO, "%s: cannot replace %s: %s", op, path, dt__errno_text(errno, eb, sizeof eb));
  if (s != DT_OK) unlink(w->tmp);
#endif
  DT_FREE(w->tmp);
  w->tmp = NULL;
  return s;
}

DTDEF dt_status dt_module_save(const dt_module *mc, const char *path) {
  const char *op = "dt_module_save";
  dt_module *m = (dt_module *)mc, view;
  char *hdr = NULL;
  size_t cap = 0, len = 0, maxbytes = 0;
  uint64_t off = 0, hlen;
  unsigned char lenbuf[8];
  void *host = NULL;
  dt__wfile f;
  int opened = 0;
  dt_status s = DT_OK;
  int i, pass, k;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (!path) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
  if (!dt__little_endian()) return dt__fail(DT_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", op);
  if ((s = dt__params_build(op, m)) != DT_OK) return s;
  if (!(m = dt__state_view(op, m, &view))) return dt_last_status(); /* with its buffers */
  for (i = 0; i < m->nparams; i++) {
    if (!m->params[i]) {
      s = dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not initialised yet (a lazy layer: run a forward first)", op, m->names[i]);
      dt__state_view_free((dt_module *)mc, m);
      return s;
    }
    if (m->params[i]->nbytes > maxbytes) maxbytes = m->params[i]->nbytes;
  }
  /* the header, measured on pass 0 and written on pass 1 */
  for (pass = 0; pass < 2; pass++) {
    len = 0; off = 0;
#define DT__ST_PUT(...) do { int w_ = snprintf(hdr ? hdr + len : NULL, hdr ? cap - len : 0, __VA_ARGS__); len += (size_t)w_; } while (0)
    DT__ST_PUT("{");
    for (i = 0; i < m->nparams; i++) {
      dt_tensor *t = m->params[i];
      DT__ST_PUT("%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", m->names[i], dt__st_dtype(t->dtype));
      for (k = 0; k < t->shape.ndim; k++) DT__ST_PUT("%s%lld", k ? "," : "", (long long)t->shape.dims[k]);
      DT__ST_PUT("],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + t->nbytes));
      off += t->nbytes;
    }
    DT__ST_PUT("%s\"__metadata__\":{\"format\":\"pt\"}}", m->nparams ? "," : "");
#undef DT__ST_PUT
    if (pass == 0) {
      if ((uint64_t)(len + 7) / 8 * 8 > DT__ST_MAX_HEADER) {
        s = dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the header would be %zu bytes, past the format's 100 MB", op, (len + 7) / 8 * 8);
        dt__state_view_free((dt_module *)mc, m);
        return s;
      }
      cap = len + 8 + 1; /* room for padding to 8 bytes */
      if (!(hdr = (char *)DT_MALLOC(cap))) {
        dt__state_view_free((dt_module *)mc, m);
        return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
      }
    }
  }
  while (len % 8) hdr[len++] = ' ';
  hlen = len;
  for (k = 0; k < 8; k++) lenbuf[k] = (unsigned char)(hlen >> (8 * k));
  if (maxbytes && !(host = DT_MALLOC(maxbytes))) { s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); goto done; }
  if ((s = dt__wfile_open(op, path, &f)) != DT_OK) goto done;
  opened = 1;
  if (!dt__wfile_write(&f, lenbuf, 8) || !dt__wfile_write(&f, hdr, len)) { s = dt__wfile_write_failed(op, path, &f); goto done; }
  for (i = 0; i < m->nparams; i++) {
    dt_tensor *t = m->params[i];
    if (t->nbytes == 0) continue;
    if ((s = dt_to_host(t, host, maxbytes)) != DT_OK) goto done;
    if (!dt__wfile_write(&f, host, t->nbytes)) { s = dt__wfile_write_failed(op, path, &f); goto done; }
  }
done:
  if (opened) s = dt__wfile_finish(op, path, &f, s);
  if (host) DT_FREE(host);
  DT_FREE(hdr);
  dt__state_view_free((dt_module *)mc, m);
  return s;
}

/* ---- src/io/json.c ---- */
/* It takes what serde_json (the reader of the format's reference implementation) takes and
   refuses what it refuses (RFC 8259): whitespace is space, tab, CR and LF; literals are
   exactly true, false, null; numbers have no '+', no leading zeros, digits on both sides of
   a '.', and must be finite as doubles; strings have no control characters, only the escapes
   \" \\ \/ \b \f \n \r \t \uXXXX (four hex digits, surrogates in pairs); containers have no
   trailing commas and nest at most 127 deep (serde_json's limit). UTF-8 is checked over the
   whole header first, as the reference does. A failure leaves its reason in `why`. */

#define DT__JSON_MAX_DEPTH 127

typedef struct dt__json { const char *p, *begin, *end; int depth; const char *why, *at; } dt__json;

static int dt__json_bad(dt__json *j, const char *why) {
  if (!j->why) { j->why = why; j->at = j->p; }
  return 0;
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF); returns the offset of
   the first bad byte, or n. */
static size_t dt__utf8_check(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i], need, cp, k;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { need = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { need = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { need = 3; cp = c & 0x07; }
    else return i;
    if (n - i <= need) return i;
    for (k = 1; k <= need; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((need == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff))) return i;
    i += need + 1;
  }
  return n;
}

static void dt__json_ws(dt__json *j) { while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++; }
static int dt__json_eat(dt__json *j, char c) { dt__json_ws(j); if (j->p < j->end && *j->p == c) { j->p++; return 1; } return 0; }
static int dt__json_peek(dt__json *j, char c) { dt__json_ws(j); return j->p < j->end && *j->p == c; }

static int dt__json_hex4(dt__json *j, unsigned *v) {
  int k;
  *v = 0;
  for (k = 0; k < 4; k++) {
    char h = j->p < j->end ? *j->p : 0;
    unsigned d = h >= '0' && h <= '9' ? (unsigned)(h - '0') : h >= 'a' && h <= 'f' ? (unsigned)(h - 'a' + 10) : h >= 'A' && h <= 'F' ? (unsigned)(h - 'A' + 10) : 16;
    if (d == 16) return dt__json_bad(j, "a \\u escape needs four hex digits");
    *v = *v * 16 + d;
    j->p++;
  }
  return 1;
}

/* A string: its bytes, escapes decoded (as UTF-8), into out when out is not NULL: at most
   cap - 1 of them, then a NUL; *len gets its whole length (a longer one fits no name here). */
static int dt__json_string(dt__json *j, char *out, size_t cap, size_t *len) {
  size_t n = 0;
  if (!dt__json_eat(j, '"')) return dt__json_bad(j, "expected a string");
  for (;;) {
    unsigned char c;
    unsigned cp;
    char u[4];
    int k, nu = 1;
    if (j->p >= j->end) return dt__json_bad(j, "an unterminated string");
    c = (unsigned char)*j->p;
    if (c == '"') break;
    if (c < 0x20) return dt__json_bad(j, "a control character in a string (escape it)");
    j->p++;
    u[0] = (char)c;
    if (c == '\\') {
      char e = j->p < j->end ? *j->p : 0;
      j->p++;
      switch (e) {
        case '"': case '\\': case '/': u[0] = e; break;
        case 'b': u[0] = '\b'; break; case 'f': u[0] = '\f'; break; case 'n': u[0] = '\n'; break;
        case 'r': u[0] = '\r'; break; case 't': u[0] = '\t'; break;
        case 'u':
          if (!dt__json_hex4(j, &cp)) return 0;
          if (cp >= 0xdc00 && cp <= 0xdfff) return dt__json_bad(j, "a lone low surrogate in a \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned lo;
            if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') return dt__json_bad(j, "a lone high surrogate in a \\u escape");
            j->p += 2;
            if (!dt__json_hex4(j, &lo)) return 0;
            if (lo < 0xdc00 || lo > 0xdfff) return dt__json_bad(j, "a high surrogate not followed by a low one");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          if (cp < 0x80) u[0] = (char)cp;
          else if (cp < 0x800) { u[0] = (char)(0xc0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3f)); nu = 2; }
          else if (cp < 0x10000) { u[0] = (char)(0xe0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); u[2] = (char)(0x80 | (cp & 0x3f)); nu = 3; }
          else { u[0] = (char)(0xf0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 0x3f)); u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); u[3] = (char)(0x80 | (cp & 0x3f)); nu = 4; }
          break;
        default: j->p--; return dt__json_bad(j, "an unknown escape in a string");
      }
    }
    for (k = 0; k < nu; k++, n++) if (out && n + 1 < cap) out[n] = u[k];
  }
  j->p++;
  if (out && cap) out[n < cap ? n : cap - 1] = 0;
  if (len) *len = n;
  return 1;
}

static int dt__json_digit(const dt__json *j) { return j->p < j->end && *j->p >= '0' && *j->p <= '9'; }

/* A number, checked: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, finite as a double. */
static int dt__json_number(dt__json *j) {
  const char *ip, *ie, *fp = NULL, *fe = NULL, *d;
  long e10 = 0, lead = -1, at = 0;
  int eneg = 0;
  static const char dmax[] = "1797693134862315807937289714053034150799"; /* DBL_MAX rounds up to infinity from here */
  if (j->p < j->end && *j->p == '-') j->p++;
  if (!dt__json_digit(j)) return dt__json_bad(j, "expected a value");
  ip = j->p;
  if (*j->p == '0') j->p++;
  else while (dt__json_digit(j)) j->p++;
  ie = j->p;
  if (j->p < j->end && *j->p == '.') {
    j->p++;
    if (!dt__json_digit(j)) return dt__json_bad(j, "a number with no digit after its '.'");
    fp = j->p;
    while (dt__json_digit(j)) j->p++;
    fe = j->p;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-')) eneg = *j->p++ == '-';
    if (!dt__json_digit(j)) return dt__json_bad(j, "a number with no digit in its exponent");
    while (dt__json_digit(j)) { if (e10 < 100000000L) e10 = e10 * 10 + (*j->p - '0'); j->p++; }
    if (eneg) e10 = -e10;
  }
  /* the power of ten of the first nonzero digit, against DBL_MAX's 308 */
  for (d = ip; d < ie && lead < 0; d++, at++) if (*d != '0') lead = at;
  for (d = fp; fp && d < fe && lead < 0; d++, at++) if (*d != '0') lead = at;
  if (lead < 0) return 1; /* zero */
  e10 += (long)(ie - ip) - 1 - lead;
  if (e10 < 308) return 1;
  if (e10 == 308) { /* compare the digits with DBL_MAX's rounding boundary */
    int k = 0, cmp = 0;
    for (d = ip; d < ie && cmp == 0; d++) if (d - ip >= lead) cmp = k < 40 ? *d - dmax[k++] : (*d != '0');
    for (d = fp; fp && d < fe && cmp == 0; d++) if ((ie - ip) + (d - fp) >= lead) cmp = k < 40 ? *d - dmax[k++] : (*d != '0');
    if (cmp < 0 || (cmp == 0 && k <= 40)) return 1;
  }
  return dt__json_bad(j, "a number out of a double's range");
}

/* An unsigned integer that serde_json reads as a usize: digits only (no sign, '.', exponent,
   leading zero), at most 2^64 - 1. */
static int dt__json_uint(dt__json *j, uint64_t *v) {
  dt__json_ws(j);
  *v = 0;
  if (!dt__json_digit(j)) return dt__json_bad(j, "expected a non-negative integer");
  if (*j->p == '0') j->p++;
  else
    while (dt__json_digit(j)) {
      unsigned dg = (unsigned)(*j->p - '0');
      if (*v > (UINT64_MAX - dg) / 10) return dt__json_bad(j, "an integer past 2^64 - 1");
      *v = *v * 10 + dg;
      j->p++;
    }
  if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')) return dt__json_bad(j, "expected an integer, not a fraction");
  return 1;
}

static int dt__json_open(dt__json *j, char c) {
  if (!dt__json_eat(j, c)) return dt__json_bad(j, c == '{' ? "expected an object" : "expected an array");
  if (++j->depth > DT__JSON_MAX_DEPTH) return dt__json_bad(j, "containers nested more than 127 deep");
  return 1;
}

/* Between the members of an object or array: 1 for another, 0 at its end (closed), -1 on an error. */
static int dt__json_next(dt__json *j, char close, int first) {
  if (dt__json_eat(j, close)) { j->depth--; return 0; }
  if (!first && !dt__json_eat(j, ',')) { dt__json_bad(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'"); return -1; }
  if (!first && dt__json_peek(j, close)) { dt__json_bad(j, "a trailing comma"); return -1; }
  return 1;
}

/* Any value, checked and skipped. */
static int dt__json_skip(dt__json *j) {
  int first, r;
  dt__json_ws(j);
  if (j->p >= j->end) return dt__json_bad(j, "expected a value");
  switch (*j->p) {
    case '"': return dt__json_string(j, NULL, 0, NULL);
    case '{': case '[': {
      char close = *j->p == '{' ? '}' : ']';
      if (!dt__json_open(j, *j->p)) return 0;
      for (first = 1; (r = dt__json_next(j, close, first)) > 0; first = 0) {
        if (close == '}' && (!dt__json_string(j, NULL, 0, NULL) || !dt__json_eat(j, ':'))) return dt__json_bad(j, "expected \"key\": value");
        if (!dt__json_skip(j)) return 0;
      }
      return r == 0;
    }
    case 't': case 'f': case 'n': {
      const char *lit = *j->p == 't' ? "true" : *j->p == 'f' ? "false" : "null";
      size_t n = strlen(lit);
      if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) return dt__json_bad(j, "an unknown word (JSON has true, false and null)");
      j->p += n;
      return 1;
    }
    default: return dt__json_number(j);
  }
}

/* ---- src/io/module_load.c ---- */
typedef struct dt__st_entry {
  int seen, idx, ndim;           /* ndim: all the dims the file gives; the first DT_MAX_DIMS are kept */
  char dtype[16];
  size_t dtype_len;
  uint64_t dims[DT_MAX_DIMS], begin, end;
} dt__st_entry;

/* The dtypes the format knows (its reference's Dtype): others are not safetensors. */
static int dt__st_known_dtype(const dt__st_entry *e) {
  static const char *const known[] = {"BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64",
                                      "U64", "C64", "F4", "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0", "E8M0"};
  size_t i;
  for (i = 0; i < sizeof known / sizeof known[0]; i++)
    if (e->dtype_len == strlen(known[i]) && strcmp(e->dtype, known[i]) == 0) return 1;
  return 0;
}

/* A file's dtype string for a message, as JSON writes it (a NUL or control byte escaped,
   so "F3\u00002" does not show as "F3"), its first 15 bytes and "..." past them. */
static const char *dt__st_dtype_shown(const dt__st_entry *e, char *buf, size_t n) {
  size_t i, at = 0, len = e->dtype_len < sizeof e->dtype - 1 ? e->dtype_len : sizeof e->dtype - 1;
  buf[0] = 0;
  for (i = 0; i < len && at + 8 < n; i++) {
    unsigned char c = (unsigned char)e->dtype[i];
    if (c < 0x20) at += (size_t)snprintf(buf + at, n - at, "\\u%04x", (unsigned)c);
    else if (c == '"' || c == '\\') { buf[at++] = '\\'; buf[at++] = (char)c; buf[at] = 0; }
    else { buf[at++] = (char)c; buf[at] = 0; }
  }
  if (e->dtype_len > len && at + 4 <= n) memcpy(buf + at, "...", 4);
  return buf;
}

/* One tensor's description: {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, each
   key once; other keys are skipped (their values checked), as serde's derive does. */
static int dt__st_parse_entry(dt__json *j, dt__st_entry *e) {
  static const char *const keys[3] = {"dtype", "shape", "data_offsets"};
  char key[16];
  size_t klen;
  int first, r, have = 0, k;
  if (!dt__json_open(j, '{')) return 0;
  for (first = 1; (r = dt__json_next(j, '}', first)) > 0; first = 0) {
    if (!dt__json_string(j, key, sizeof key, &klen) || !dt__json_eat(j, ':')) return dt__json_bad(j, "expected \"key\": value");
    for (k = 0; k < 3 && !(klen == strlen(keys[k]) && strcmp(key, keys[k]) == 0); k++) {}
    if (k < 3 && (have & (1 << k))) return dt__json_bad(j, k == 0 ? "a second \"dtype\"" : k == 1 ? "a second \"shape\"" : "a second \"data_offsets\"");
    if (k < 3) have |= 1 << k;
    if (k == 0) {
      if (!dt__json_peek(j, '"')) return dt__json_bad(j, "\"dtype\" must be a string");
      if (!dt__json_string(j, e->dtype, sizeof e->dtype, &e->dtype_len)) return 0;
    } else if (k == 1) {
      int fr, r2;
      uint64_t v;
      e->ndim = 0;
      if (!dt__json_open(j, '[')) return dt__json_bad(j, "\"shape\" must be an array of non-negative integers");
      for (fr = 1; (r2 = dt__json_next(j, ']', fr)) > 0; fr = 0) {
        if (!dt__json_uint(j, &v)) return 0;
        if (e->ndim < DT_MAX_DIMS) e->dims[e->ndim] = v;
        e->ndim++;
      }
      if (r2 < 0) return 0;
    } else if (k == 2) {
      if (!dt__json_open(j, '[')) return dt__json_bad(j, "\"data_offsets\" must be [begin, end]");
      if (!dt__json_uint(j, &e->begin) || !dt__json_eat(j, ',') || !dt__json_uint(j, &e->end) || !dt__json_eat(j, ']'))
        return dt__json_bad(j, "\"data_offsets\" must be [begin, end]");
      j->depth--;
    } else if (!dt__json_skip(j)) return 0;
  }
  if (r < 0) return 0;
  if (have != 7) return dt__json_bad(j, !(have & 1) ? "no \"dtype\"" : !(have & 2) ? "no \"shape\"" : "no \"data_offsets\"");
  return 1;
}

/* "__metadata__": an object of strings, or null (the reference's Option<HashMap<String, String>>). */
static int dt__st_parse_metadata(dt__json *j) {
  int first, r;
  dt__json_ws(j);
  if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) { j->p += 4; return 1; }
  if (!dt__json_peek(j, '{')) return dt__json_bad(j, "\"__metadata__\" must be an object of strings");
  if (!dt__json_open(j, '{')) return 0;
  for (first = 1; (r = dt__json_next(j, '}', first)) > 0; first = 0) {
    if (!dt__json_string(j, NULL, 0, NULL) || !dt__json_eat(j, ':')) return dt__json_bad(j, "expected \"key\": value");
    if (!dt__json_peek(j, '"')) return dt__json_bad(j, "\"__metadata__\"'s values must be strings");
    if (!dt__json_string(j, NULL, 0, NULL)) return 0;
  }
  return r == 0;
}

/* Data offsets in file order: by begin, then end (zero-byte tensors first at a shared offset). */
static int dt__st_cmp(const void *a, const void *b) {
  const dt__st_entry *x = (const dt__st_entry *)a, *y = (const dt__st_entry *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* A file read front to back. POSIX: opened without blocking and refused unless it is a regular
   file (a FIFO would wait for a writer forever; a directory or a device is no safetensors file). */
typedef struct dt__rfile {
#if defined(_WIN32)
  FILE *f;
#else
  int fd;
#endif
  int err;   /* the errno of a failed read, for the message */
  int64_t size;   /* the file's size when it opened, -1 unknown: for the messages about a header length */
} dt__rfile;

static dt_status dt__rfile_open(const char *op, const char *path, dt__rfile *r) {
  const char *kind = NULL;
  char eb[32];
#if defined(_WIN32)
  struct _stat64 st;
  r->err = 0; r->size = -1;
  if (_stat64(path, &st) == 0) {
    if ((st.st_mode & _S_IFMT) != _S_IFREG) kind = (st.st_mode & _S_IFMT) == _S_IFDIR ? "a directory" : "";
    else r->size = (int64_t)st.st_size;
  }
  if (!kind && !(r->f = fopen(path, "rb"))) return dt__fail(DT_ERR_IO, "%s: cannot open %s: %s", op, path, dt__errno_text(errno, eb, sizeof eb));
#else
  struct stat st;
  int fd, fl, e;
  r->err = 0; r->size = -1;
  do fd = open(path, O_RDONLY | O_NONBLOCK | DT__O_CLOEXEC); while (fd < 0 && errno == EINTR);
  if (fd < 0) return dt__fail(DT_ERR_IO, "%s: cannot open %s: %s", op, path, dt__errno_text(errno, eb, sizeof eb));
  dt__cloexec(fd);
  if (fstat(fd, &st) != 0) {
    e = errno;
    close(fd);
    return dt__fail(DT_ERR_IO, "%s: cannot read %s: %s", op, path, dt__errno_text(e, eb, sizeof eb));
  }
  if (!S_ISREG(st.st_mode))
    kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
         : S_ISBLK(st.st_mode) ? "a block device" : "";
  if (kind) close(fd);
  else {
    if ((fl = fcntl(fd, F_GETFL)) >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); /* reads of a regular file never wait anyway */
    r->fd = fd;
    r->size = (int64_t)st.st_size;
  }
#endif
  if (kind) return dt__fail(DT_ERR_IO, "%s: %s is %s%snot a regular file", op, path, kind, kind[0] ? ", " : "");
  return DT_OK;
}

/* n bytes into buf: 1 when they all came, 0 when the file ended first, -1 on an error; *got: how many came. */
static int dt__rfile_read(dt__rfile *r, void *buf, size_t n, size_t *got) {
  size_t at = 0;
#if defined(_WIN32)
  at = fread(buf, 1, n, r->f);
  if (got) *got = at;
  if (at != n && ferror(r->f)) { r->err = errno; return -1; }
  return at == n;
#else
  while (at < n) {
    size_t want = n - at < ((size_t)1 << 30) ? n - at : ((size_t)1 << 30);
    long k = (long)read(r->fd, (char *)buf + at, want);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (got) *got = at;
      if (k < 0) r->err = errno;
      return k < 0 ? -1 : 0;
    }
    at += (size_t)k;
  }
  if (got) *got = at;
  return 1;
#endif
}

/* A failed read of r as a status. */
static dt_status dt__rfile_read_failed(const char *op, const char *path, const dt__rfile *r) {
  char eb[32];
  return dt__fail(DT_ERR_IO, "%s: reading %s failed: %s", op, path, dt__errno_text(r->err, eb, sizeof eb));
}

static void dt__rfile_close(dt__rfile *r) {
#if defined(_WIN32)
  fclose(r->f);
#else
  close(r->fd);
#endif
}

/* Reading: the header's length and its bytes, in a buffer that grows as they arrive (a length
   that lies about a short file costs no more memory than the file holds). */
static dt_status dt__st_read_header(const char *op, const char *path, dt__rfile *f, char **hdr_out, size_t *hlen_out) {
  unsigned char lenbuf[8];
  uint64_t hlen = 0;
  size_t got = 0, cap, want;
  char *hdr;
  int k, rc;
  if ((rc = dt__rfile_read(f, lenbuf, 8, &got)) != 1) {
    if (rc < 0) return dt__rfile_read_failed(op, path, f);
    return dt__fail(DT_ERR_FORMAT, "%s: %s is too short for a safetensors file (%llu bytes)", op, path, (unsigned long long)got);
  }
  for (k = 7; k >= 0; k--) hlen = (hlen << 8) | lenbuf[k];
  /* a length past the format's limit is no safetensors file (a text file's first 8 characters
     read as a little-endian number are around 10^18); one past the end of the file may be a
     file cut short */
  if (hlen < 2 || hlen > DT__ST_MAX_HEADER)
    return dt__fail(DT_ERR_FORMAT, "%s: %s is not a safetensors file: its first 8 bytes, read as the header length, give %llu, "
                    "which is not within the format's 2 bytes to 100 MB", op, path, (unsigned long long)hlen);
  if (f->size >= 8 && hlen > (uint64_t)f->size - 8)
    return dt__fail(DT_ERR_FORMAT, "%s: %s is not a safetensors file, or is cut short: its first 8 bytes, read as the header length, "
                    "give %llu, but only %llu bytes follow them", op, path, (unsigned long long)hlen, (unsigned long long)f->size - 8);
  cap = (size_t)(hlen < 65536 ? hlen : 65536);
  got = 0;
  if (!(hdr = (char *)DT_MALLOC(cap + 1))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  while (got < (size_t)hlen) {
    if (got == cap) {
      size_t ncap = cap * 2 < (size_t)hlen ? cap * 2 : (size_t)hlen;
      char *bigger = (char *)DT_MALLOC(ncap + 1);
      if (!bigger) { DT_FREE(hdr); return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); }
      memcpy(bigger, hdr, got);
      DT_FREE(hdr);
      hdr = bigger; cap = ncap;
    }
    want = cap - got;
    if ((rc = dt__rfile_read(f, hdr + got, want, NULL)) != 1) {
      DT_FREE(hdr);
      if (rc < 0) return dt__rfile_read_failed(op, path, f);
      return dt__fail(DT_ERR_FORMAT, "%s: %s: header length %llu runs past the end of the file", op, path, (unsigned long long)hlen);
    }
    got = cap;
  }
  hdr[hlen] = 0;
  *hdr_out = hdr; *hlen_out = (size_t)hlen;
  return DT_OK;
}

/* The module's names, sorted, for finding a file's in O(log n). */
typedef struct dt__st_name { const char *name; int idx; } dt__st_name;
static int dt__st_name_cmp(const void *a, const void *b) {
  return strcmp(((const dt__st_name *)a)->name, ((const dt__st_name *)b)->name);
}

/* Validating the JSON, and matching its tensors to the module's names (sorted in byname):
   ents[i] gets the entry of m->names[i]. Each tensor once; those the module lacks are counted
   in *nunknown, the first named in unknown (refused later, after the shapes of those it has:
   a network of another architecture is told by a shape more clearly than by a name). */
static dt_status dt__st_parse_header(const char *op, const char *path, dt_module *m, const dt__st_name *byname, const char *hdr,
                                     size_t hlen, dt__st_entry *ents, char *unknown, size_t ucap, int *nunknown) {
  char name[DT__NAME_MAX + 1];
  size_t nlen, bad;
  dt__json j;
  int first, r, meta = 0, i;
  if ((bad = dt__utf8_check((const unsigned char *)hdr, hlen)) < hlen)
    return dt__fail(DT_ERR_FORMAT, "%s: %s: the header is not valid UTF-8 (byte %llu of the file)", op, path,
                    (unsigned long long)(bad + 8));
  memset(&j, 0, sizeof j);
  j.p = j.begin = hdr; j.end = hdr + hlen;
  if (!dt__json_open(&j, '{')) goto bad_json;
  for (first = 1; (r = dt__json_next(&j, '}', first)) > 0; first = 0) {
    dt__st_entry e;
    if (!dt__json_string(&j, name, sizeof name, &nlen) || !dt__json_eat(&j, ':')) { dt__json_bad(&j, "expected \"name\": {...}"); goto bad_json; }
    if (nlen == 12 && memcmp(name, "__metadata__", 12) == 0) {
      if (meta++) { dt__json_bad(&j, "a second \"__metadata__\""); goto bad_json; }
      if (!dt__st_parse_metadata(&j)) goto bad_json;
      continue;
    }
    memset(&e, 0, sizeof e);
    if (!dt__st_parse_entry(&j, &e))
      return dt__fail(DT_ERR_FORMAT, "%s: %s: the entry of \"%.200s\" is not valid: %s (byte %ld of the file)", op, path, name,
                      j.why ? j.why : "malformed", (long)(j.at - hdr) + 8);
    {
      dt__st_name key, *hit = NULL;
      key.name = name; key.idx = 0;
      if (nlen == strlen(name) && m->nparams) /* (a name with a NUL in it is none of the module's) */
        hit = (dt__st_name *)bsearch(&key, byname, (size_t)m->nparams, sizeof *byname, dt__st_name_cmp);
      i = hit ? hit->idx : m->nparams;
    }
    if (i == m->nparams) {
      if ((*nunknown)++ == 0) snprintf(unknown, ucap, "%.200s%s", name, nlen > 200 ? "..." : "");
      continue;
    }
    if (ents[i].seen) return dt__fail(DT_ERR_FORMAT, "%s: %s holds \"%s\" twice", op, path, m->names[i]);
    ents[i] = e;
    ents[i].seen = 1;
    ents[i].idx = i;
  }
  if (r < 0) goto bad_json;
  dt__json_ws(&j);
  if (j.p != j.end) { dt__json_bad(&j, "bytes after the header's object"); goto bad_json; }
  return DT_OK;
bad_json:
  return dt__fail(DT_ERR_FORMAT, "%s: %s: the header is not valid JSON: %s (byte %ld of the file)", op, path,
                  j.why ? j.why : "malformed", (long)((j.why ? j.at : j.p) - hdr) + 8);
}

/* "(2, 3)" for a file's shape, whose dims may not fit an int64. */
static const char *dt__st_shape_str(const dt__st_entry *e, char *buf, size_t n) {
  size_t at = (size_t)snprintf(buf, n, "(");
  int i;
  for (i = 0; i < e->ndim && i < DT_MAX_DIMS && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, i ? ", %llu" : "%llu", (unsigned long long)e->dims[i]);
  if (at < n) snprintf(buf + at, n - at, e->ndim > DT_MAX_DIMS ? ", ...: %d dims)" : e->ndim == 1 ? ",)" : ")", e->ndim);
  return buf;
}

/* Validating each tensor against the module's: of its dtype and shape, then each name the
   file or the module lacks, then the byte counts. A dtype or shape that does not fit names
   the names that do not match too (another network's file). */
static dt_status dt__st_check_entries(const char *op, const char *path, dt_module *m, const dt__st_entry *ents,
                                      const char *unknown, int nunknown) {
  char un[280], mis[280], names[600];
  int i, k, nmissing = 0, missing = -1;
  for (i = 0; i < m->nparams; i++)
    if (!ents[i].seen && nmissing++ == 0) missing = i;
  un[0] = mis[0] = 0;
  if (nunknown) snprintf(un, sizeof un, nunknown > 1 ? "\"%s\" and %d more, which the module does not have" : "\"%s\", which the module does not have",
                         unknown, nunknown - 1);
  if (nmissing) snprintf(mis, sizeof mis, nmissing > 1 ? "the module's \"%.200s\" and %d more are not in the file" : "the module's \"%.200s\" is not in the file",
                         m->names[missing], nmissing - 1);
  snprintf(names, sizeof names, "%s%s%s%s", un[0] ? "; the file also holds " : "", un, mis[0] ? "; " : "", mis);
  for (i = 0; i < m->nparams; i++) {
    const dt_tensor *t = m->params[i];
    const dt__st_entry *e = &ents[i];
    char a[200], b[200];
    int same;
    if (!e->seen) continue;
    if (!dt__st_known_dtype(e))
    {
      char db[112];
      return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" has dtype \"%s\", which is not a safetensors dtype", op, path, m->names[i],
                      dt__st_dtype_shown(e, db, sizeof db));
    }
    if (strcmp(e->dtype, dt__st_dtype(t->dtype)) != 0)
      return dt__fail(DT_ERR_DTYPE, "%s: %s: \"%s\" is %s but the module's is %s%s", op, path, m->names[i], e->dtype, dt__st_dtype(t->dtype),
                      names);
    same = e->ndim == t->shape.ndim;
    for (k = 0; same && k < e->ndim; k++) same = e->dims[k] == (uint64_t)t->shape.dims[k];
    if (!same)
      return dt__fail(DT_ERR_SHAPE, "%s: %s: \"%s\" has shape %s but the module's has %s%s", op, path, m->names[i],
                      dt__st_shape_str(e, a, sizeof a), dt__shape_str(&t->shape, b, sizeof b), names);
  }
  if (nunknown) return dt__fail(DT_ERR_FORMAT, "%s: %s holds %s%s%s", op, path, un, mis[0] ? "; " : "", mis);
  if (nmissing) return dt__fail(DT_ERR_FORMAT, "%s: %s has no \"%s\"%s", op, path, m->names[missing],
                                nmissing > 1 ? " (nor others of the module's)" : "");
  for (i = 0; i < m->nparams; i++) {
    const dt_tensor *t = m->params[i];
    const dt__st_entry *e = &ents[i];
    if (e->begin > e->end || e->end - e->begin != (uint64_t)t->nbytes)
      return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" has data_offsets [%llu, %llu], which do not hold its %llu bytes",
                      op, path, m->names[i], (unsigned long long)e->begin, (unsigned long long)e->end,
                      (unsigned long long)t->nbytes);
  }
  return DT_OK;
}

/* Checking the byte ranges: sorted by offset, the tensors tile the data buffer from byte 0,
   each beginning where the one before ends (no holes, no overlaps; no bytes after the last is
   checked at the end of the file). *end: where the data ends. Sorts ents. */
static dt_status dt__st_check_ranges(const char *op, const char *path, dt_module *m, dt__st_entry *ents, uint64_t *end) {
  uint64_t at = 0;
  int i;
  if (m->nparams > 1) qsort(ents, (size_t)m->nparams, sizeof *ents, dt__st_cmp);
  for (i = 0; i < m->nparams; i++) {
    const dt__st_entry *e = &ents[i], *p = i ? &ents[i - 1] : NULL;
    if (e->begin == at) { at = e->end; continue; }
    if (!p)
      return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\", the first tensor in the data, begins at byte %llu, not 0 (safetensors data has no gaps)",
                      op, path, m->names[e->idx], (unsigned long long)e->begin);
    if (e->begin > at)
      return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" begins at data byte %llu but \"%s\" before it ends at %llu (safetensors data has no gaps)",
                      op, path, m->names[e->idx], (unsigned long long)e->begin, m->names[p->idx], (unsigned long long)at);
    return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" at data bytes [%llu, %llu] overlaps \"%s\" at [%llu, %llu]", op, path,
                    m->names[e->idx], (unsigned long long)e->begin, (unsigned long long)e->end, m->names[p->idx],
                    (unsigned long long)p->begin, (unsigned long long)p->end);
  }
  *end = at;
  return DT_OK;
}

/* Reading the data: each tensor in file order, straight onto the module's device into fresh[],
   then one byte more must be the end of the file. */
static dt_status dt__st_read_data(const char *op, const char *path, dt_module *m, dt__rfile *f, const dt__st_entry *ents,
                                  uint64_t end, dt_tensor **fresh) {
  unsigned char one;
  int k, rc;
  for (k = 0; k < m->nparams; k++) {
    const dt__st_entry *e = &ents[k];
    dt_tensor *t = m->params[e->idx];
    void *host = NULL;
    if (t->nbytes) {
      if (!(host = DT_MALLOC(t->nbytes))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
      if ((rc = dt__rfile_read(f, host, t->nbytes, NULL)) != 1) {
        DT_FREE(host);
        if (rc < 0) return dt__rfile_read_failed(op, path, f);
        return dt__fail(DT_ERR_FORMAT, "%s: %s is cut short: the data of \"%s\" is [%llu, %llu] but the file ends before", op, path,
                        m->names[e->idx], (unsigned long long)e->begin, (unsigned long long)e->end);
      }
    }
    fresh[e->idx] = dt_from_data(host, t->shape, t->dtype, t->st->device);
    if (host) DT_FREE(host);
    if (!fresh[e->idx]) return dt_last_status();
  }
  if ((rc = dt__rfile_read(f, &one, 1, NULL)) != 0) {
    if (rc < 0) return dt__rfile_read_failed(op, path, f);
    if (m->nparams)
      return dt__fail(DT_ERR_FORMAT, "%s: %s: bytes follow the data of the last tensor, \"%s\", which ends at data byte %llu (safetensors data has no trailing bytes)",
                      op, path, m->names[ents[m->nparams - 1].idx], (unsigned long long)end);
    return dt__fail(DT_ERR_FORMAT, "%s: %s holds no tensors but has data bytes after its header", op, path);
  }
  return DT_OK;
}

/* The file is read front to back and never seeked: the header, then (once the offsets are
   known to tile the data buffer) each tensor in the order of its data, then one byte more
   must be the end of the file. So no file size is needed, and none is limited to a long. */
DTDEF dt_status dt_module_load(dt_module *m, const char *path) {
  const char *op = "dt_module_load";
  dt__rfile f;
  char *hdr = NULL;
  size_t hlen = 0;
  uint64_t end = 0;
  dt__st_entry *ents = NULL;
  dt__st_name *byname = NULL;
  dt_tensor **fresh = NULL;
  dt_module *mm, view;
  char unknown[208];
  dt_status s;
  int i, nunknown = 0;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (!path) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
  if (!dt__little_endian()) return dt__fail(DT_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", op);
  if ((s = dt__params_build(op, m)) != DT_OK) return s;
  if (!(m = dt__state_view(op, mm = m, &view))) return dt_last_status(); /* with its buffers */
  for (i = 0; i < m->nparams; i++)
    if (!m->params[i]) {
      s = dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not initialised yet (a lazy layer: run a forward first)", op, m->names[i]);
      dt__state_view_free(mm, m);
      return s;
    }
  ents = (dt__st_entry *)DT_MALLOC(sizeof(dt__st_entry) * (size_t)(m->nparams + 1));
  fresh = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)(m->nparams + 1));
  byname = (dt__st_name *)DT_MALLOC(sizeof(dt__st_name) * (size_t)(m->nparams + 1));
  if (!ents || !fresh || !byname) {
    if (ents) DT_FREE(ents);
    if (fresh) DT_FREE(fresh);
    if (byname) DT_FREE(byname);
    dt__state_view_free(mm, m);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  for (i = 0; i < m->nparams; i++) { byname[i].name = m->names[i]; byname[i].idx = i; }
  if (m->nparams > 1) qsort(byname, (size_t)m->nparams, sizeof *byname, dt__st_name_cmp);
  memset(ents, 0, sizeof(dt__st_entry) * (size_t)(m->nparams + 1));
  memset(fresh, 0, sizeof(dt_tensor *) * (size_t)(m->nparams + 1));
  if ((s = dt__rfile_open(op, path, &f)) == DT_OK) {
    if ((s = dt__st_read_header(op, path, &f, &hdr, &hlen)) == DT_OK &&
        (s = dt__st_parse_header(op, path, m, byname, hdr, hlen, ents, unknown, sizeof unknown, &nunknown)) == DT_OK &&
        (s = dt__st_check_entries(op, path, m, ents, unknown, nunknown)) == DT_OK &&
        (s = dt__st_check_ranges(op, path, m, ents, &end)) == DT_OK &&
        (s = dt__st_read_data(op, path, m, &f, ents, end, fresh)) == DT_OK) {
      int prev = dt__no_grad; /* the parameters are leaves that require grad: written with grad mode off */
      dt__no_grad = 1;
      for (i = 0; i < m->nparams && s == DT_OK; i++) s = dt_copy_(m->params[i], fresh[i]); /* into the existing tensors: borrowed pointers stay valid */
      dt__no_grad = prev;
    }
    dt__rfile_close(&f);
  }
  for (i = 0; i < m->nparams; i++) dt_release(fresh[i]);
  DT_FREE(fresh);
  DT_FREE(ents);
  DT_FREE(byname);
  if (hdr) DT_FREE(hdr);
  dt__state_view_free(mm, m);
  return s;
}

/* ---- src/train/trainer.c ---- */
static int dt__dist_world(dt_device *dev);                       /* "distributed" */
static dt_status dt__dist_start(const char *op, dt_module *m);
/* The chapter's Trainer: the model on the first kept GPU, each minibatch moved
   there, the loss summed on the device and read once per epoch. */

DTDEF dt_status dt_trainer_init(dt_trainer *tr, int max_epochs, int num_gpus) {
  int n, i;
  if (!tr) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_init: tr is NULL");
  if (max_epochs < 0 || num_gpus < 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_init: max_epochs and num_gpus must be >= 0, got %d and %d", max_epochs, num_gpus);
  memset(tr, 0, sizeof *tr);
  tr->max_epochs = max_epochs;
  n = dt__gpu_count();
  n = num_gpus < n ? num_gpus : n;
  n = n < 8 ? n : 8;
  for (i = 0; i < n; i++) tr->gpus[i] = dt_gpu(i);
  if (n > 0 && dt__dist_world(&tr->gpus[0]) > 1) /* a distributed run: this rank's device, cuda:(local rank) */
    n = tr->gpus[0].type == DT_CUDA ? 1 : 0;
  tr->num_gpus = n;
  tr->device = n ? tr->gpus[0] : dt_cpu();
  tr->batch_size = 32;
  tr->lr = 0.03;
  return DT_OK;
}

DTDEF dt_status dt_trainer_prepare_model(dt_trainer *tr, dt_module *m) {
  if (!tr) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_model: tr is NULL");
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_model: m is NULL");
  return dt_module_to(m, tr->device);
}

DTDEF dt_tensor *dt_trainer_prepare_batch(dt_trainer *tr, const dt_tensor *batch) {
  if (!tr) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_batch: tr is NULL"); return NULL; }
  if (!batch) { dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_prepare_batch: batch is NULL"); return NULL; }
  return dt_to((dt_tensor *)batch, tr->device);
}

/* A permutation of 0..n-1 from the seeded Philox generator (Fisher-Yates). */
static void dt__shuffle(int64_t *idx, int64_t n) {
  uint64_t seed, draw;
  uint32_t w[4];
  int64_t i;
  dt__rng_next(&seed, &draw);
  for (i = 0; i < n; i++) idx[i] = i;
  for (i = n - 1; i > 0; i--) {
    uint64_t r;
    dt__philox_block(seed, draw, (uint64_t)i, w);
    r = ((uint64_t)w[0] << 32 | w[1]) % (uint64_t)(i + 1);
    { int64_t t = idx[i]; idx[i] = idx[(int64_t)r]; idx[(int64_t)r] = t; }
  }
}

/* Wall-clock seconds, for the epochs' times. */
#if defined(_WIN32) && !defined(__MINGW32__)
#include <time.h>
static double dt__wall_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; } /* wall time on Windows */
#else
#include <sys/time.h>
static double dt__wall_seconds(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}
#endif

/* A data set as the trainer reads it: y on the device; X on the device (rows
   gathered there), or on the host when the trainer runs on a GPU and X is on the
   CPU (rows gathered on the host, each minibatch copied). */
typedef struct dt__tr_data {
  const dt_tensor *X, *y; /* as given */
  dt_tensor *Xd;        /* X on the device; NULL: gathered on the host */
  dt_tensor *yd;        /* y on the device */
  int64_t n;
} dt__tr_data;

/* The sums of an epoch or an evaluation, on the device: loss * rows (X's dtype; float32 for
   a half X) and right answers (float64; classification only). */
typedef struct dt__tr_sums { dt_tensor *loss, *right; } dt__tr_sums;

static void dt__tr_data_free(dt__tr_data *d) { dt_release(d->Xd); dt_release(d->yd); d->Xd = d->yd = NULL; }
static void dt__tr_sums_free(dt__tr_sums *s) { dt_release(s->loss); dt_release(s->right); s->loss = s->right = NULL; }

static dt_status dt__tr_data_init(dt_trainer *tr, const dt_tensor *X, const dt_tensor *y, dt__tr_data *d) {
  int host = X->st->device.type == DT_CPU && tr->device.type != DT_CPU;
  d->X = X; d->y = y; d->n = X->shape.dims[0];
  d->Xd = host ? NULL : dt_to((dt_tensor *)X, tr->device);
  d->yd = (host || d->Xd) ? dt_to((dt_tensor *)y, tr->device) : NULL;
  if ((!host && !d->Xd) || !d->yd) { dt__tr_data_free(d); return dt_last_status(); }
  return DT_OK;
}

static dt_status dt__tr_sums_init(const char *op, dt_trainer *tr, const dt_tensor *X, dt__tr_sums *s) {
  s->right = NULL;
  if (!(s->loss = dt__filled(op, dt_shape0(), dt__is_half(X->dtype) ? DT_F32 : X->dtype, 0.0, tr->device))) return dt_last_status();
  if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY && !(s->right = dt__filled(op, dt_shape0(), DT_F64, 0.0, tr->device))) {
    dt__tr_sums_free(s);
    return dt_last_status();
  }
  return DT_OK;
}

/* An epoch's order: `perm` (I64 (n,)) on the device when X is there, else on the CPU,
   with y already in that order on the device (`y_perm`). */
typedef struct dt__tr_order { dt_tensor *perm, *y_perm; } dt__tr_order;

/* Rows [b, b + rows) of the data set on the device, in the order `o`, or in the data's
   order when o is NULL. Gathered on the device (X there), or X's rows on the host and
   y's a view of y_perm (no gather on the device, so no index check for it to report). */
static dt_status dt__tr_batch(dt_trainer *tr, const dt__tr_data *d, const dt__tr_order *o,
                              int64_t b, int64_t rows, dt_tensor **xb, dt_tensor **yb) {
  dt_tensor *idx = NULL, *xh = NULL;
  *xb = *yb = NULL;
  if (o) {
    if ((idx = dt_slice(o->perm, 0, b, b + rows))) {
      if (d->Xd) { if ((*yb = dt_index_select(d->yd, 0, idx))) *xb = dt_index_select(d->Xd, 0, idx); }
      else if ((*yb = dt_slice(o->y_perm, 0, b, b + rows))) xh = dt_index_select(d->X, 0, idx);
    }
  } else if ((*yb = dt_slice(d->yd, 0, b, b + rows))) {
    if (d->Xd) *xb = dt_slice(d->Xd, 0, b, b + rows);
    else xh = dt_slice(d->X, 0, b, b + rows);
  }
  /* the host rows go to the device: queued behind the work already queued there,
     returning once xh has been read (the CUDA backend stages pageable memory) */
  if (xh) *xb = dt_trainer_prepare_batch(tr, xh);
  dt_release(idx); dt_release(xh);
  if (!*xb || !*yb) { dt_release(*xb); dt_release(*yb); *xb = *yb = NULL; return dt_last_status(); }
  return DT_OK;
}

/* Adds rows * loss(pred, yb) and (classification) the right answers to `sums`, on the device. */
static dt_status dt__tr_accumulate(dt_trainer *tr, const dt_tensor *pred, const dt_tensor *yb, dt__tr_sums *sums) {
  dt_tensor *loss = tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? dt_cross_entropy(pred, yb) : dt_mse_loss(pred, yb);
  dt_status s;
  if (loss && loss->dtype != sums->loss->dtype) { /* a half module's loss, summed in float32 */
    dt_tensor *c = dt_cast(loss, sums->loss->dtype);
    dt_release(loss);
    loss = c;
  }
  s = loss ? dt_axpy_(sums->loss, (double)pred->shape.dims[0], loss) : dt_last_status();
  dt_release(loss);
  if (s == DT_OK && sums->right) { /* sum(argmax(pred) == y), counted in float64 (exact below 2^53) */
    dt_tensor *am = dt_argmax(pred, 1), *eq = am ? dt_eq(am, yb) : NULL, *c = eq ? dt_sum(eq) : NULL;
    dt_tensor *c64 = c ? dt_cast(c, DT_F64) : NULL;
    s = c64 ? dt_axpy_(sums->right, 1.0, c64) : dt_last_status();
    dt_release(am); dt_release(eq); dt_release(c); dt_release(c64);
  }
  return s;
}

/* ---- src/train/replicas.c ---- */
/* dt_trainer_fit with num_gpus > 1 in one process: a replica of the model on each kept
   GPU (the model itself on the first), each minibatch split in contiguous parts, one
   per replica; each replica's loss gradient is weighted by its share of the rows, the
   parameter gradients are summed over the replicas (NCCL's grouped all-reduce when
   devtensor_cuda.cu has NCCL, else copies through the first GPU), and every replica
   takes the same SGD step, so the replicas stay identical and the run equals one GPU
   on the same minibatches to float rounding. With tr->optimizer (made on the caller's
   model) the first replica takes the optimizer's step and its parameters are then
   broadcast to the others (NCCL's grouped broadcast, or copies). Each replica sums its
   part's loss and right answers on its own GPU; at the epoch's end they are added into
   the first GPU's sums by device-to-device copies, so the epoch still has one read.
   Work is queued on each GPU's own stream, so the replicas run at the same time.
   A model the trainer takes through autograd (the library's convolution, pooling, norm,
   dropout, embedding and activation layers; half parameters; tr.autocast) goes back per
   replica from its part's loss times its share of the rows (times the grad scaler's scale
   under autocast DT_F16), through dt_autograd_backward. As torch.nn.DataParallel, each
   replica's batch norm normalises by its own part's statistics, and the caller's model
   keeps the running statistics of its own part (the first) of every minibatch. */
typedef struct dt__replicas {
  int n;                  /* replicas; 0 when training on one device */
  dt_module *m[8];        /* m[0] is the caller's model, the others clones */
  dt__tr_sums sums[8];    /* each replica's loss and right answers on its GPU (sums[0]: the trainer's own, borrowed) */
  dt_device dev[8];
  int idx[8];             /* device indices, for the backend */
  void *comm[8];          /* NCCL communicators, or all NULL: sums by copies */
  int rank, ranks;        /* a distributed run (dt_dist_init, more than one rank): this rank's part of every minibatch */
} dt__replicas;


/* The size of the layer struct of a module the library made with dt_module_new (convolution,
   pooling, flatten, activations; dropout, batch and layer norm, embedding, GELU), which a copy
   duplicates; 0 for a module the caller wrote, whose forward and state a copy cannot know. */
static size_t dt__library_layer_size(const dt_module *m) {
  if (m->kind != DT__M_USER || m->n != 0) return 0;
  if (m->fwd == dt__layer_forward && m->free_user == dt__layer_free) return sizeof(dt__layer);
  if (m->fwd == dt__norm_forward && m->free_user == dt__norm_layer_free) return sizeof(dt__norm_layer);
  return 0;
}

/* 1 when dt__module_clone can copy m: built-in linear and ReLU layers, sequentials, and the
   library's own layers made with dt_module_new; not a module the caller wrote. */
static int dt__module_clonable(const dt_module *m) {
  int i;
  if (m->kind == DT__M_USER) return dt__library_layer_size(m) != 0;
  for (i = 0; m->kind == DT__M_SEQ && i < m->n; i++)
    if (!dt__module_clonable(m->layers[i])) return 0;
  return 1;
}

/* A library layer's copy on device d: its layer struct, its parameters (new leaves with zero
   gradients) and buffers (batch norm's running statistics) copied, in m's order and names. */
static dt_module *dt__layer_clone(const char *op, const dt_module *m, dt_device d) {
  size_t ub = dt__library_layer_size(m);
  void *u = ub ? DT_MALLOC(ub) : NULL;
  dt_module *c;
  dt_status s = DT_OK;
  int i, prev;
  if (!u) {
    if (ub) dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    else dt__fail(DT_ERR_UNSUPPORTED, "%s: a module made by dt_module_new cannot be copied to another GPU", op);
    return NULL;
  }
  memcpy(u, m->user, ub);
  if (!(c = dt_module_new(op, m->fwd, u, m->free_user))) { DT_FREE(u); return NULL; }
  c->device = d; c->dtype = m->dtype; c->training = m->training;
  prev = dt__no_grad; /* new leaves and buffers, not copies recorded by autograd */
  dt__no_grad = 1;
  for (i = 0; i < m->np + m->nb && s == DT_OK; i++) {
    dt_tensor *t = dt_copyto(i < m->np ? m->pts[i] : m->bts[i - m->np], d);
    if (!t) s = dt_last_status();
    else s = i < m->np ? dt_module_add_param(c, m->pnames[i], t) : dt_module_add_buffer(c, m->bnames[i - m->np], t);
    dt_release(t);
  }
  dt__no_grad = prev;
  if (s != DT_OK) { dt_module_free(c); return NULL; }
  return c;
}

/* A copy of m on device d with m's parameters and buffers, zero gradients, and no draw from
   the generator (so the shuffles stay those of a one-GPU run). Its parameters come in m's
   order (dt_module_param, dt_module_grad): the gradients are summed index by index. */
static dt_module *dt__module_clone(const char *op, const dt_module *m, dt_device d) {
  dt_module *c;
  int i;
  if (m->kind == DT__M_USER) return dt__layer_clone(op, m, d);
  if (!(c = dt__module_new(op, m->kind))) return NULL;
  c->device = d; c->dtype = m->dtype; c->in = m->in; c->out = m->out; c->training = m->training;
  if (m->kind == DT__M_LINEAR && m->weight) {
    int prev = dt__no_grad; /* new leaves, not copies recorded by autograd */
    dt__no_grad = 1;
    c->weight = dt_copyto(m->weight, d);
    c->bias = c->weight ? dt_copyto(m->bias, d) : NULL;
    dt__no_grad = prev;
    c->gweight = c->bias ? dt__filled(op, m->weight->shape, m->dtype, 0.0, d) : NULL;
    c->gbias = c->gweight ? dt__filled(op, m->bias->shape, m->dtype, 0.0, d) : NULL;
    if (!c->gbias) { dt_module_free(c); return NULL; }
    dt__linear_link(c);
  }
  if (m->kind == DT__M_SEQ) c->height = 1;
  for (i = 0; m->kind == DT__M_SEQ && i < m->n; i++) {
    dt_module *l = dt__module_clone(op, m->layers[i], d);
    if (!l || dt_sequential_add(c, l) != DT_OK) { dt_module_free(c); return NULL; }
  }
  return c;
}

/* 1 when m holds a layer whose size is not known before its first forward: a lazy linear,
   convolution or batch norm. */
static int dt__module_is_lazy(const dt_module *m) {
  int i;
  if (m->kind == DT__M_LINEAR) return m->weight == NULL;
  if (m->kind == DT__M_USER && m->fwd == dt__layer_forward && ((const dt__layer *)m->user)->kind == DT__L_CONV)
    return ((const dt__layer *)m->user)->in == 0;
  if (m->kind == DT__M_USER && m->fwd == dt__norm_forward && ((const dt__norm_layer *)m->user)->kind == DT__N_BATCH_NORM)
    return ((const dt__norm_layer *)m->user)->features == 0;
  for (i = 0; DT__M_HOLDS(m) && i < m->n; i++)
    if (dt__module_is_lazy(m->layers[i])) return 1;
  return 0;
}

static void dt__replicas_free(dt__replicas *r) {
  int g;
  for (g = 0; g < r->n; g++) {
#ifdef DEVTENSOR_CUDA
    if (r->comm[g]) dt__cuda_backend()->dist_comm_free(r->comm[g]);
#endif
    if (g > 0) { dt_module_free(r->m[g]); dt__tr_sums_free(&r->sums[g]); }
  }
  memset(r, 0, sizeof *r);
}

#ifdef DEVTENSOR_CUDA
/* An environment variable set to anything but "" or "0". */
static int dt__env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}
#endif

/* The replicas for tr's GPUs (none for one device); m is on tr->gpus[0] already. */
static dt_status dt__replicas_init(const char *op, dt_trainer *tr, dt_module *m, const dt__tr_sums *sums, dt__replicas *r) {
  int g;
  memset(r, 0, sizeof *r);
  if (dt__dist_world(NULL) > 1) {
    /* a distributed run: one device per rank, every rank from rank 0's parameters and generator
       (so the shuffles agree), each rank its part of every minibatch (DistributedSampler) */
    dt_status s;
    if (tr->num_gpus > 1)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: in a distributed run each rank trains on one device (dt_dist_device()), "
                      "but the trainer keeps %d GPUs: dt_trainer_init with num_gpus 0 or 1", op, tr->num_gpus);
    if (dt__module_is_lazy(m))
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: in a distributed run every rank starts from rank 0's parameters, but the "
                      "model has a lazy layer whose size is not known yet: run one dt_forward first", op);
    if ((s = dt__dist_start(op, m)) != DT_OK) return s;
    r->n = 1; r->m[0] = m; r->sums[0] = *sums; r->dev[0] = tr->device; r->idx[0] = tr->device.index;
    r->rank = dt_dist_rank(); r->ranks = dt_dist_world_size();
    return DT_OK;
  }
  if (tr->num_gpus < 2 || tr->device.type != DT_CUDA) return DT_OK;
  if (dt__module_is_lazy(m))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: training on %d GPUs copies the model to each, but it has a lazy layer "
                    "whose size is not known yet: run one dt_forward first, or give the layer its input size", op, tr->num_gpus);
  r->n = tr->num_gpus;
  for (g = 0; g < r->n; g++) { r->dev[g] = tr->gpus[g]; r->idx[g] = tr->gpus[g].index; }
  r->m[0] = m; r->sums[0] = *sums;
  for (g = 1; g < r->n; g++) {
    if (!(r->m[g] = dt__module_clone(op, m, r->dev[g])) ||
        !(r->sums[g].loss = dt__filled(op, dt_shape0(), sums->loss->dtype, 0.0, r->dev[g])) ||
        (sums->right && !(r->sums[g].right = dt__filled(op, dt_shape0(), DT_F64, 0.0, r->dev[g])))) {
      dt_status s = dt_last_status();
      dt__replicas_free(r);
      return s;
    }
  }
#ifdef DEVTENSOR_CUDA
  if (!dt__env_flag("DEVTENSOR_NO_NCCL")) { /* DEVTENSOR_NO_NCCL=1: sums by copies, NCCL or not */
    dt_status s = dt__cuda_backend()->dist_comm_init_all(r->n, r->idx, r->comm);
    if (s == DT_ERR_UNSUPPORTED) memset(r->comm, 0, sizeof r->comm); /* no NCCL in this build: copies */
    else if (s != DT_OK) { dt__backend_fail(op, r->dev[0], s); dt__replicas_free(r); return s; }
  }
#endif
  return DT_OK;
}

/* Rows [r0, r1) of the contiguous t (minibatch features, images, targets or labels), on device d. */
static dt_tensor *dt__rows_to(const char *op, const dt_tensor *t, int64_t r0, int64_t r1, dt_device d) {
  size_t rb = t->nbytes / (size_t)t->shape.dims[0];
  dt_shape sh = t->shape;
  dt_tensor *y;
  sh.dims[0] = r1 - r0;
  y = dt__new(op, sh, t->dtype, d);
  if (y && dt__copy_bytes(op, d, y->st->ptr, t->st->device, (const char *)dt_data_ptr((dt_tensor *)t) + (size_t)r0 * rb, (size_t)(r1 - r0) * rb) != DT_OK) {
    dt_release(y);
    return NULL;
  }
  return y;
}

/* The replicas' gradients summed, in every replica. */
static dt_status dt__replicas_sum_grads(const char *op, dt__replicas *r) {
  int i, g, np = dt_module_num_params(r->m[0]);
  dt_status s = DT_OK;
  (void)op;
  for (i = 0; i < np && s == DT_OK; i++) {
    dt_tensor *g0 = dt_module_grad(r->m[0], i);
#ifdef DEVTENSOR_CUDA
    if (r->comm[0]) {
      void *bufs[8];
      for (g = 0; g < r->n; g++) bufs[g] = dt_data_ptr(dt_module_grad(r->m[g], i));
      s = dt__cuda_backend()->dist_all_reduce(r->n, r->comm, r->idx, g0->dtype, (int)DT_REDUCE_SUM, g0->numel, bufs);
      if (s != DT_OK) return dt__backend_fail(op, r->dev[0], s);
      continue;
    }
#endif
    for (g = 1; g < r->n && s == DT_OK; g++) { /* without NCCL: into the first GPU's, then back */
      dt_tensor *t = dt_copyto(dt_module_grad(r->m[g], i), r->dev[0]);
      s = t ? dt_axpy_(g0, 1.0, t) : dt_last_status();
      dt_release(t);
    }
    for (g = 1; g < r->n && s == DT_OK; g++) s = dt_copy_(dt_module_grad(r->m[g], i), g0);
    if (r->ranks > 1 && s == DT_OK) s = dt_all_reduce_(g0, DT_REDUCE_SUM); /* over the ranks (one replica each) */
  }
  return s;
}

/* The first replica's parameters into every other (after the optimizer's step on it). */
static dt_status dt__replicas_bcast_params(const char *op, dt__replicas *r) {
  int i, g, np = dt_module_num_params(r->m[0]);
  dt_status s = DT_OK;
  for (i = 0; i < np && s == DT_OK; i++) {
    dt_tensor *p0 = dt_module_param(r->m[0], i, NULL);
#ifdef DEVTENSOR_CUDA
    if (r->comm[0]) {
      void *bufs[8];
      for (g = 0; g < r->n; g++) bufs[g] = dt_data_ptr(dt_module_param(r->m[g], i, NULL));
      s = dt__cuda_backend()->dist_broadcast(r->n, r->comm, r->idx, p0->dtype, p0->numel, bufs, 0);
      if (s != DT_OK) return dt__backend_fail(op, r->dev[0], s);
      continue;
    }
#endif
    for (g = 1; g < r->n && s == DT_OK; g++) {
      int prev = dt__no_grad; /* parameters are leaves that require grad: written with grad mode off */
      dt__no_grad = 1;
      s = dt_copy_(dt_module_param(r->m[g], i, NULL), p0);
      dt__no_grad = prev;
    }
  }
  (void)op;
  return s;
}

/* The sums of a replica's part, recorded by nothing (a half module's prediction requires grad). */
static dt_status dt__dp_accumulate(dt_trainer *tr, const dt_tensor *pred, const dt_tensor *y, dt__tr_sums *sums) {
  int prev = dt__no_grad;
  dt_status s;
  dt__no_grad = 1;
  s = dt__tr_accumulate(tr, pred, y, sums);
  dt__no_grad = prev;
  return s;
}

/* The loss's gradient with respect to pred, computed as a constant (not recorded). */
static dt_tensor *dt__dp_loss_grad(int ce, const dt_tensor *pred, const dt_tensor *y) {
  int prev = dt__no_grad;
  dt_tensor *g;
  dt__no_grad = 1;
  g = ce ? dt_cross_entropy_grad(pred, y) : dt_mse_loss_grad(pred, y);
  dt__no_grad = prev;
  return g;
}

/* Whether the trainer takes m through autograd (dt__trainer_step_autograd, dt__dp_part_autograd):
   modules the fused backward cannot take, autocast, a half module. */
static int dt__trainer_uses_autograd(const dt_trainer *tr, const dt_module *m) {
  return dt__module_has_user(m) || tr->autocast != DT_F32 || dt__is_half(m->dtype);
}

/* A replica's part (x, y on its device dev) through autograd: the forward and the loss under
   tr.autocast, its sums, and the backward of the loss times `share` (its share of the
   minibatch's rows), and times the grad scaler's scale under autocast DT_F16. */
static dt_status dt__dp_part_autograd(dt_trainer *tr, dt_module *m, dt_device dev, const dt_tensor *x, const dt_tensor *y,
                                      dt__tr_sums *sums, double share) {
  dt_tensor *pred = NULL, *loss = NULL, *part = NULL, *scaled = NULL;
  dt_status s;
  dt_dtype ac = dt_set_autocast(dev.type, tr->autocast);
  if (!(pred = dt_forward(m, x))) s = dt_last_status();
  else if ((s = dt__dp_accumulate(tr, pred, y, sums)) == DT_OK) {
    loss = tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? dt_cross_entropy(pred, y) : dt_mse_loss(pred, y);
    dt_set_autocast(dev.type, ac); /* the backward as the caller had it */
    if (!loss || !(part = dt_mul_scalar(loss, share))) s = dt_last_status();
    else if (tr->autocast == DT_F16 && tr->grad_scaler)
      s = (scaled = dt_grad_scaler_scale(tr->grad_scaler, part)) ? dt_autograd_backward(scaled, NULL) : dt_last_status();
    else
      s = dt_autograd_backward(part, NULL);
  }
  dt_set_autocast(dev.type, ac);
  dt_release(pred); dt_release(loss); dt_release(part); dt_release(scaled);
  return s;
}

/* The gradients of m times f, in place (the grad scaler's unscale of a replica's copy). */
static dt_status dt__dp_grads_scale(const char *op, dt_module *m, double f) {
  dt_status s = dt__params_build(op, m);
  return s == DT_OK ? dt__grads_scale(op, m->grads, m->nparams, f) : s;
}

static dt_status dt__trainer_clip(dt_trainer *tr, dt_module *m);

/* The step from the gradients summed over replicas and ranks (every replica and rank holds the
   same): under autocast DT_F16, unscaled and checked for an inf or a NaN once, on the first
   replica's, the step skipped on every replica and rank when found (all see the same sums, so
   all agree), and the scale updated; clipped (tr.gradient_clip_val); then plain SGD on every
   replica, or the optimizer on the first and its parameters broadcast to the others. */
static dt_status dt__dp_update(const char *op, dt_trainer *tr, dt__replicas *r) {
  int g, steppers = tr->optimizer ? 1 : r->n, scaler = tr->autocast == DT_F16 && tr->grad_scaler;
  dt_status s = DT_OK;
  if (scaler) {
    if ((s = dt__params_build(op, r->m[0])) != DT_OK ||
        (s = dt__grad_scaler_unscale(op, tr->grad_scaler, r->m[0]->grads, r->m[0]->nparams)) != DT_OK)
      return s;
    if (tr->grad_scaler->found_inf) return dt_grad_scaler_update(tr->grad_scaler);
    for (g = 1; g < steppers && s == DT_OK; g++) s = dt__dp_grads_scale(op, r->m[g], 1.0 / tr->grad_scaler->scale);
  }
  for (g = 0; g < steppers && s == DT_OK; g++) s = dt__trainer_clip(tr, r->m[g]);
  if (s == DT_OK && !tr->optimizer)
    for (g = 0; g < r->n && s == DT_OK; g++) s = dt_sgd_step(r->m[g], tr->lr);
  else if (s == DT_OK && (s = dt_optimizer_step(tr->optimizer)) == DT_OK && r->n > 1)
    s = dt__replicas_bcast_params(op, r);
  if (s == DT_OK && scaler) s = dt_grad_scaler_update(tr->grad_scaler);
  return s;
}

/* One minibatch (on the first GPU, or this rank's device) over the replicas and ranks: each
   takes its contiguous part of the rows, sums its loss (times its rows) and right answers
   into its own sums, weights its loss gradient by its share of the rows (or, through
   autograd, its loss); the gradients are summed over replicas and ranks; then the update
   (dt__dp_update). */
static dt_status dt__dp_step(dt_trainer *tr, dt__replicas *r, const dt_tensor *xb, const dt_tensor *yb) {
  const char *op = "dt_trainer_fit";
  int64_t rows = xb->shape.dims[0];
  dt_status s = DT_OK;
  int g;
  int parts = r->n * (r->ranks > 1 ? r->ranks : 1), ce = tr->loss_fn == DT_LOSS_CROSS_ENTROPY;
  int ag = dt__trainer_uses_autograd(tr, r->m[0]);
  for (g = 0; g < r->n && s == DT_OK; g++) {
    int64_t p = (int64_t)r->rank * r->n + g, r0 = rows * p / parts, r1 = rows * (p + 1) / parts;
    double share = (double)(r1 - r0) / (double)rows; /* this replica's share of the mean */
    dt_tensor *x = NULL, *y = NULL, *pred = NULL, *lg = NULL, *lgs = NULL;
    if ((s = dt_zero_grad(r->m[g])) != DT_OK || r1 == r0) continue; /* no rows: its gradients stay zero */
    if (!(x = dt__rows_to(op, xb, r0, r1, r->dev[g])) || !(y = dt__rows_to(op, yb, r0, r1, r->dev[g])))
      s = dt_last_status();
    else if (ag)
      s = dt__dp_part_autograd(tr, r->m[g], r->dev[g], x, y, &r->sums[g], share);
    else if ((pred = dt_forward(r->m[g], x)) && dt__dp_accumulate(tr, pred, y, &r->sums[g]) == DT_OK &&
             (lg = dt__dp_loss_grad(ce, pred, y)) && (lgs = dt_mul_scalar(lg, share)))
      s = dt_backward_params(r->m[g], lgs);
    else
      s = dt_last_status();
    dt_release(x); dt_release(y); dt_release(pred); dt_release(lg); dt_release(lgs);
  }
  if (s == DT_OK) s = dt__replicas_sum_grads(op, r);
  if (s != DT_OK) return s;
  return dt__dp_update(op, tr, r);
}

/* Before the epoch's read: the sums of replicas 1..n-1 since the last call (which zeroes them)
   added into the first replica's, on its GPU (device-to-device copies, no read). */
static dt_status dt__replicas_gather_sums(dt__replicas *r) {
  int g, k;
  dt_status s = DT_OK;
  for (g = 1; g < r->n && s == DT_OK; g++)
    for (k = 0; k < 2 && s == DT_OK; k++) {
      dt_tensor *src = k ? r->sums[g].right : r->sums[g].loss, *dst = k ? r->sums[0].right : r->sums[0].loss, *t;
      if (!src) continue;
      t = dt_copyto(src, r->dev[0]);
      s = t ? dt_axpy_(dst, 1.0, t) : dt_last_status();
      dt_release(t);
      if (s == DT_OK) s = dt_fill_(src, 0);
    }
  return s;
}

/* After the epoch's read, in a distributed run: the training sums v[0] (loss * rows) and v[1]
   (right answers; NaN for MSE) summed over the ranks. */
static dt_status dt__replicas_rank_sums(dt__replicas *r, double v[2]) {
  dt_tensor *t;
  dt_status s;
  if (r->ranks < 2) return DT_OK;
  if (!(t = dt__new("dt_trainer_fit", dt_shape1(2), DT_F64, dt_cpu()))) return dt_last_status();
  ((double *)t->st->ptr)[0] = v[0]; ((double *)t->st->ptr)[1] = v[1] == v[1] ? v[1] : 0.0;
  if ((s = dt_all_reduce_(t, DT_REDUCE_SUM)) == DT_OK) {
    v[0] = ((double *)t->st->ptr)[0];
    if (v[1] == v[1]) v[1] = ((double *)t->st->ptr)[1];
  }
  dt_release(t);
  return s;
}

/* ---- src/train/graph_step.c ---- */
/* tr.cuda_graph: the trainer's step captured into a graph (torch.cuda.graphs' whole-network
   capture). The first full minibatch of the fit runs eagerly (it makes lazy layers' parameters,
   the optimizer's state, the backend's workspaces); the second is copied into the static inputs
   and its step captured, then replayed for it and for every later full minibatch, each copied
   into the static inputs first (gathered outside the graph). A smaller last minibatch runs
   eagerly. The loss and right answers accumulate into the trainer's sums inside the graph.
   Random draws in the step (dropout) are the graph's: each replay draws afresh, what the eager
   step would have drawn (dt_graph_replay).

   The whole step is captured with plain SGD (with or without a dt_sgd optimizer). Otherwise
   the graph holds the gradients' part (zeroing, forward, loss, backward) and the update runs
   eagerly after each replay, on the gradients the graph wrote: Adam's and AdamW's bias
   correction counts the steps on the host, clipping reads the gradients' norm, and the grad
   scaler of autocast DT_F16 reads whether they hold an inf or a NaN and changes its scale,
   which the graph then reads from a scalar on the device. An autograd backward stores new gradient tensors, whose memory the module takes
   in (dt__grad_adopt), so an eager step (the smaller last minibatch) leaves the module holding
   memory other than the graph's: the memory the captured backward wrote is held (gr->grads)
   and handed back to the parameters before each eager update. */

/* What a step runs: all of it, or one of its two parts for the capture of the gradients
   alone (above): the gradients (zeroing them, the forward, the
   loss, the backward: what a graph replays) or the update (the grad scaler's check, clipping,
   the optimizer's step: what runs eagerly after each replay). */
enum { DT__STEP_ALL, DT__STEP_GRADS, DT__STEP_UPDATE };

static dt_status dt__trainer_step(dt_trainer *tr, dt__replicas *rep, dt_module *m, const dt_tensor *xb, const dt_tensor *yb,
                                  dt__tr_sums *sums, int phase, const dt_tensor *scale); /* "fit" */

/* The captured step and its inputs, kept across the epochs of one fit. */
typedef struct dt__tr_graph {
  int warm;         /* the eager warm-up step ran */
  dt_tensor *x, *y; /* the static minibatch the graph reads, on tr->device */
  dt_graph *g;
  /* the tensors of the fit that were alive when the capture began and would be released while
     the graph lives (the epoch's order, the minibatch): a storage from before the capture
     released after it makes the graph refuse to replay, so they are released after it */
  dt_tensor *hold[6];
  int nhold;
  int split;        /* the graph holds the gradients' part only; the update runs after each replay */
  dt_tensor **grads;/* split: each parameter's gradient as the graph writes it (NULL where it has none) */
  int ngrads;
  dt_tensor *scale; /* autocast DT_F16: the grad scaler's scale, F32 () on tr->device, as the graph reads it */
  double scale_at;  /* the value in it */
} dt__tr_graph;

static void dt__tr_graph_free(dt__tr_graph *gr) {
  int i;
  dt_graph_free(gr->g); /* first: the graph reads x and y */
  dt_release(gr->x); dt_release(gr->y); dt_release(gr->scale);
  for (i = 0; i < gr->nhold; i++) dt_release(gr->hold[i]);
  for (i = 0; i < gr->ngrads; i++) dt_release(gr->grads[i]);
  DT_FREE(gr->grads);
  memset(gr, 0, sizeof *gr);
}

/* The random draws made so far (dt__rng_next's counter). */
static uint64_t dt__rng_draws(void) {
  uint64_t d;
  dt__lock(&dt__rng_lock);
  d = dt__draw;
  dt__unlock(&dt__rng_lock);
  return d;
}

/* What a replayed step cannot do as an eager one does, refused before anything changes. */
static dt_status dt__trainer_graph_check(const char *op, const dt_trainer *tr) {
  if (tr->cuda_graph == 0) return DT_OK;
  if (tr->cuda_graph != 1) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: tr.cuda_graph must be 0 (off) or 1, got %d", op, tr->cuda_graph);
  if (tr->num_gpus > 1 || dt_dist_world_size() > 1)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: tr.cuda_graph cannot capture the training step: data parallel training (num_gpus > 1 "
                    "or several ranks) sums the gradients between devices at each step", op);
  return DT_OK;
}

/* During the capture, after the gradients' part: the gradients it wrote, held (the module has
   taken them in: their memory stays its as long as no eager step runs). */
static dt_status dt__tr_graph_grads_keep(const char *op, dt__tr_graph *gr, dt_module *m) {
  int n = dt_module_num_params(m), i;
  if (n <= 0) return DT_OK;
  if (!(gr->grads = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)n)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host keeping the captured gradients", op);
  memset(gr->grads, 0, sizeof(dt_tensor *) * (size_t)n);
  gr->ngrads = n;
  for (i = 0; i < n; i++) {
    dt_tensor *p = dt_module_param(m, i, NULL); /* the module takes in the new gradients */
    if (!p) return dt_last_status();
    if (p->grad && !(gr->grads[i] = dt_detach(p->grad))) return dt_last_status();
  }
  return DT_OK;
}

/* Before an eager update after a replay: each parameter's gradient is the memory the graph
   wrote (an eager step since may have given the module other memory). */
static dt_status dt__tr_graph_grads_give(dt__tr_graph *gr, dt_module *m) {
  int i;
  for (i = 0; i < gr->ngrads; i++) {
    dt_tensor *p, *h;
    if (!gr->grads[i]) continue;
    if (!(p = dt_module_param(m, i, NULL))) return dt_last_status();
    if (p->grad && p->grad->st == gr->grads[i]->st) continue;
    if (!(h = dt_detach(gr->grads[i]))) return dt_last_status();
    dt_release(p->grad);
    p->grad = h;
  }
  return DT_OK;
}

/* Captures the step, or its gradients' part, on the static inputs gr->x, gr->y (already holding
   the minibatch): nothing runs. A step that draws random numbers on the host is refused (the
   replays could not draw them afresh). */
static dt_status dt__tr_graph_capture(const char *op, dt_trainer *tr, dt__replicas *rep, dt_module *m, dt__tr_graph *gr,
                                      dt__tr_sums *sums) {
  uint64_t draws = dt__rng_draws();
  dt_status s;
  dt_graph *g;
  gr->split = (tr->optimizer && tr->optimizer->hp.kind != DT__OPT_SGD) || tr->gradient_clip_val > 0 ||
              (tr->autocast == DT_F16 && tr->grad_scaler);
  if (tr->autocast == DT_F16 && tr->grad_scaler && !gr->scale) {
    if (!(gr->scale = dt_full(dt_shape0(), tr->grad_scaler->scale, tr->device))) return dt_last_status();
    gr->scale_at = tr->grad_scaler->scale;
  }
  if ((s = dt_graph_begin(tr->device)) != DT_OK) return s;
  s = dt__trainer_step(tr, rep, m, gr->x, gr->y, sums, gr->split ? DT__STEP_GRADS : DT__STEP_ALL, gr->scale);
  if (s == DT_OK && gr->split) s = dt__tr_graph_grads_keep(op, gr, m);
  g = dt_graph_end(tr->device); /* ends the capture whatever the step said */
  if (s == DT_OK && !g) s = dt_last_status();
  if (s == DT_OK && dt__rng_draws() != draws)
    s = dt__fail(DT_ERR_UNSUPPORTED, "%s: tr.cuda_graph cannot capture the training step: it draws random numbers on the host, "
                 "which the replays could not draw afresh", op);
  if (s != DT_OK) { dt_graph_free(g); return s; }
  gr->g = g;
  return DT_OK;
}

/* One full minibatch's step under tr.cuda_graph: the warm-up runs eagerly, then the minibatch
   goes into the static inputs (a copy on the device) and the graph, captured the first time,
   replays. The caller holds the epoch's other tensors once gr->g is set (dt__tr_graph_hold). */
static dt_status dt__tr_graph_step(const char *op, dt_trainer *tr, dt__replicas *rep, dt_module *m, dt__tr_graph *gr,
                                   const dt_tensor *xb, const dt_tensor *yb, dt__tr_sums *sums) {
  dt_status s;
  if (!gr->warm) {
    if ((s = dt__trainer_step(tr, rep, m, xb, yb, sums, DT__STEP_ALL, NULL)) == DT_OK) gr->warm = 1;
    return s;
  }
  if (!gr->x) {
    if (!(gr->x = dt__new(op, xb->shape, xb->dtype, tr->device)) || !(gr->y = dt__new(op, yb->shape, yb->dtype, tr->device))) {
      dt_release(gr->x); gr->x = NULL;
      return dt_last_status();
    }
  }
  if ((s = dt_copy_(gr->x, xb)) != DT_OK || (s = dt_copy_(gr->y, yb)) != DT_OK) return s;
  if (!gr->g) {
    if ((s = dt__tr_graph_capture(op, tr, rep, m, gr, sums)) != DT_OK) return s;
    gr->hold[gr->nhold++] = dt_retain((dt_tensor *)xb);
    gr->hold[gr->nhold++] = dt_retain((dt_tensor *)yb);
  }
  if (gr->scale && gr->scale_at != tr->grad_scaler->scale) { /* the scaler changed it after a step */
    if ((s = dt_fill_(gr->scale, tr->grad_scaler->scale)) != DT_OK) return s;
    gr->scale_at = tr->grad_scaler->scale;
  }
  if ((s = dt_graph_replay(gr->g)) != DT_OK || !gr->split) return s;
  if ((s = dt__tr_graph_grads_give(gr, m)) != DT_OK) return s;
  return dt__trainer_step(tr, rep, m, gr->x, gr->y, sums, DT__STEP_UPDATE, NULL);
}

/* After the step that captured the graph: the epoch's tensors from before the capture, held. */
static void dt__tr_graph_hold(dt__tr_graph *gr, dt_tensor *const *ts, int n) {
  int i;
  for (i = 0; i < n; i++)
    if (ts[i] && gr->nhold < (int)(sizeof gr->hold / sizeof gr->hold[0])) gr->hold[gr->nhold++] = dt_retain(ts[i]);
}

/* ---- src/train/fit.c ---- */
/* tr.gradient_clip_val > 0: the gradients of m's parameters clipped to that total 2-norm. */
static dt_status dt__trainer_clip(dt_trainer *tr, dt_module *m) {
  dt_tensor **p;
  dt_status s = DT_OK;
  int n, i;
  if (!(tr->gradient_clip_val > 0)) return DT_OK;
  if ((n = dt_module_num_params(m)) <= 0) return DT_OK;
  if (!(p = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)n)))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "dt_trainer_fit: out of memory on the host clipping the gradients");
  for (i = 0; i < n && s == DT_OK; i++) /* the table hands out the gradients: the leaves hold them */
    if (!(p[i] = dt_module_param(m, i, NULL))) s = dt_last_status();
  if (s == DT_OK) s = dt_clip_grad_norm_(p, n, tr->gradient_clip_val, NULL);
  DT_FREE(p);
  return s;
}

/* The update from the gradients of the step's backward: clip and step; under autocast DT_F16,
   unscale first, clip and step unless a gradient holds an inf or a NaN, and update the scale. */
static dt_status dt__trainer_update(dt_trainer *tr, dt_module *m) {
  dt_status s;
  if (tr->autocast == DT_F16 && tr->grad_scaler) {
    if ((s = dt__params_build("dt_trainer_fit", m)) != DT_OK ||
        (s = dt__grad_scaler_unscale("dt_trainer_fit", tr->grad_scaler, m->grads, m->nparams)) != DT_OK)
      return s;
    if (!tr->grad_scaler->found_inf && (s = dt__trainer_clip(tr, m)) == DT_OK)
      s = tr->optimizer ? dt_optimizer_step(tr->optimizer) : dt_sgd_step(m, tr->lr);
    if (s == DT_OK) s = dt_grad_scaler_update(tr->grad_scaler);
    return s;
  }
  if ((s = dt__trainer_clip(tr, m)) != DT_OK) return s;
  return tr->optimizer ? dt_optimizer_step(tr->optimizer) : dt_sgd_step(m, tr->lr);
}

/* A training step through autograd, for a model the fused backward cannot take (convolutions,
   user-written modules): zero the gradients, forward, the loss, its backward, the update.
   scale: NULL, or under autocast DT_F16 the grad scaler's scale as an F32 scalar on the device,
   which the loss is multiplied by instead of the scaler's value (a graph reads it as it runs). */
static dt_status dt__trainer_step_autograd(dt_trainer *tr, dt_module *m, const dt_tensor *xb, const dt_tensor *yb,
                                           dt__tr_sums *sums, int phase, const dt_tensor *scale) {
  dt_tensor *pred = NULL, *loss = NULL, *scaled = NULL;
  dt_status s;
  int prev;
  dt_dtype ac;
  if (phase == DT__STEP_UPDATE) return dt__trainer_update(tr, m);
  ac = dt_set_autocast(tr->device.type, tr->autocast); /* the forward and the loss under tr.autocast */
  if ((s = tr->optimizer ? dt_optimizer_zero_grad(tr->optimizer) : dt_zero_grad(m)) != DT_OK) goto done;
  if (!(pred = dt_forward(m, xb))) { s = dt_last_status(); goto done; }
  prev = dt__no_grad;
  dt__no_grad = 1; /* the sums record nothing */
  s = dt__tr_accumulate(tr, pred, yb, sums);
  dt__no_grad = prev;
  if (s == DT_OK) {
    loss = tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? dt_cross_entropy(pred, yb) : dt_mse_loss(pred, yb);
    dt_set_autocast(tr->device.type, ac); /* the backward and the step as the caller had it */
    if (!loss) s = dt_last_status();
    else if (tr->autocast == DT_F16 && tr->grad_scaler) { /* the scaled loss's backward */
      if (!(scaled = scale ? dt_mul(loss, scale) : dt_grad_scaler_scale(tr->grad_scaler, loss))) s = dt_last_status();
      else s = dt_autograd_backward(scaled, NULL);
    } else {
      s = dt_autograd_backward(loss, NULL);
    }
    if (s == DT_OK && phase == DT__STEP_ALL) s = dt__trainer_update(tr, m);
  }
done:
  dt_set_autocast(tr->device.type, ac);
  dt_release(pred); dt_release(loss); dt_release(scaled);
  return s;
}

/* One training step on a minibatch on the device: forward, loss (summed into `sums`,
   with the right answers), backward, the optimizer's step (plain SGD without one); or one
   part of it (phase, scale: see above). Nothing here waits for the device (but the grad
   scaler's check under autocast DT_F16, and clipping). */
static dt_status dt__trainer_step(dt_trainer *tr, dt__replicas *rep, dt_module *m, const dt_tensor *xb, const dt_tensor *yb,
                                  dt__tr_sums *sums, int phase, const dt_tensor *scale) {
  dt_tensor *pred, *g = NULL;
  dt_status s;
  if (rep && (rep->n > 1 || rep->ranks > 1)) return dt__dp_step(tr, rep, xb, yb); /* data parallel */
  if (dt__trainer_uses_autograd(tr, m))
    return dt__trainer_step_autograd(tr, m, xb, yb, sums, phase, scale);
  if (phase == DT__STEP_UPDATE) return dt__trainer_update(tr, m);
  if (!(pred = dt_forward(m, xb))) return dt_last_status();
  if ((s = dt__tr_accumulate(tr, pred, yb, sums)) == DT_OK) {
    g = tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? dt_cross_entropy_grad(pred, yb) : dt_mse_loss_grad(pred, yb);
    /* the minibatch needs no gradient: dt_backward_params skips the first layer's g W; the
       gradients are written, as after dt_zero_grad, without zeroing them first */
    if (g) s = dt__backward_params_assign(m, g);
    if (!g || s != DT_OK) s = dt_last_status();
    else if (phase == DT__STEP_ALL) s = dt__trainer_update(tr, m);
  }
  dt_release(pred); dt_release(g);
  return s;
}

/* One epoch over the data in a fresh shuffled order; sums on the device, nothing read.
   X on the device: the order goes there once and each minibatch is gathered there. X on
   the host: y goes to the device once, in the epoch's order, and each minibatch of X is
   gathered on the host and copied. Minibatch k + 1 is gathered (and copied) right after
   step k is queued, so it is ready when step k finishes and the host never waits for
   the device. */
static dt_status dt__trainer_epoch(const char *op, dt_trainer *tr, dt__replicas *rep, dt_module *m, const dt__tr_data *d,
                                   int64_t *idx, dt__tr_sums *sums, dt__tr_graph *gr) {
  int64_t n = d->n, bs = tr->batch_size, b;
  dt_tensor *perm_h, *yh = NULL, *xb = NULL, *yb = NULL;
  dt__tr_order o;
  dt_status s = DT_OK;
  int was = dt_set_grad_enabled(1); /* training needs the activations, whatever the caller's setting */
  o.perm = o.y_perm = NULL;
  dt__shuffle(idx, n);
  if (!(perm_h = dt_from_blob(idx, dt_shape1(n), DT_I64, dt_cpu(), NULL, NULL))) { dt_set_grad_enabled(was); return dt_last_status(); }
  if (d->Xd) o.perm = dt_to(perm_h, tr->device);
  else if ((yh = dt_index_select(d->y, 0, perm_h)) != NULL && (o.y_perm = dt_trainer_prepare_batch(tr, yh)) != NULL)
    o.perm = dt_retain(perm_h);
  if (!o.perm) { s = dt_last_status(); goto done; }
  if (n > 0 && (s = dt__tr_batch(tr, d, &o, 0, bs < n ? bs : n, &xb, &yb)) != DT_OK) goto done;
  for (b = 0; b < n; b += bs) {
    dt_tensor *x = xb, *y = yb;
    if (tr->cuda_graph && x->shape.dims[0] == bs) { /* a full minibatch */
      int had = gr->g != NULL;
      s = dt__tr_graph_step(op, tr, rep, m, gr, x, y, sums);
      if (!had && gr->g) { dt_tensor *ts[4]; ts[0] = perm_h; ts[1] = o.perm; ts[2] = o.y_perm; ts[3] = yh; dt__tr_graph_hold(gr, ts, 4); }
    } else {
      s = dt__trainer_step(tr, rep, m, x, y, sums, DT__STEP_ALL, NULL);
    }
    xb = yb = NULL;
    if (s == DT_OK && b + bs < n) s = dt__tr_batch(tr, d, &o, b + bs, n - (b + bs) < bs ? n - (b + bs) : bs, &xb, &yb);
    dt_release(x); dt_release(y);
    if (s != DT_OK) break;
  }
done:
  dt_release(xb); dt_release(yb);
  dt_release(o.perm); dt_release(o.y_perm); dt_release(yh); dt_release(perm_h);
  dt_set_grad_enabled(was);
  return s;
}

/* The loss and right answers of the model on a data set, in order, without
   gradients (no activations kept); sums on the device, nothing read. In batches of
   4x the training batch, up to 1024 rows (and never fewer than the training batch):
   without activations kept that takes no more memory than a training step of a few
   layers, and the products are bigger, so faster. */
#define DT__TR_EVAL_ROWS 1024
static dt_status dt__trainer_eval(dt_trainer *tr, dt_module *m, const dt__tr_data *d, dt__tr_sums *sums) {
  int64_t n = d->n, b, bs = tr->batch_size;
  int was = dt_set_grad_enabled(0), training = m->training;
  dt_status s = DT_OK;
  dt_dtype ac = dt_set_autocast(tr->device.type, tr->autocast);
  dt_module_train(m, 0); /* net.eval() */
  if (bs < DT__TR_EVAL_ROWS) bs = 4 * bs < DT__TR_EVAL_ROWS ? 4 * bs : DT__TR_EVAL_ROWS;
  for (b = 0; b < n && s == DT_OK; b += bs) {
    dt_tensor *xb, *yb, *pred;
    if ((s = dt__tr_batch(tr, d, NULL, b, n - b < bs ? n - b : bs, &xb, &yb)) != DT_OK) break;
    if ((pred = dt_forward(m, xb)) != NULL) s = dt__tr_accumulate(tr, pred, yb, sums);
    else s = dt_last_status();
    dt_release(pred); dt_release(xb); dt_release(yb);
  }
  dt_module_train(m, training);
  dt_set_grad_enabled(was);
  dt_set_autocast(tr->device.type, ac);
  return s;
}

/* The sums of up to two dt__tr_sums, read to the host in one copy: out[0..3] =
   a.loss, a.right, b.loss, b.right (NaN where absent). */
static dt_status dt__tr_read(const char *op, const dt__tr_sums *a, const dt__tr_sums *b, double out[4]) {
  const dt_tensor *src[4];
  dt_tensor *parts[4], *all = NULL;
  double raw[4];
  int k = 0, i, j;
  dt_status s = DT_OK;
  src[0] = a->loss; src[1] = a->right; src[2] = b ? b->loss : NULL; src[3] = b ? b->right : NULL;
  for (i = 0; i < 4; i++) {
    dt_tensor *c;
    out[i] = NAN;
    if (!src[i]) continue;
    c = dt_cast(src[i], DT_F64);
    parts[k] = c ? dt_reshape(c, dt_shape1(1)) : NULL;
    dt_release(c);
    if (!parts[k]) { s = dt_last_status(); break; }
    k++;
  }
  if (s == DT_OK && !(all = k == 1 ? dt_retain(parts[0]) : dt_cat((const dt_tensor *const *)parts, k, 0))) s = dt_last_status();
  /* the one read */
  if (s == DT_OK) s = dt_to_host(all, raw, sizeof(double) * (size_t)k);
  for (i = 0, j = 0; s == DT_OK && i < 4; i++)
    if (src[i]) out[i] = raw[j++];
  for (i = 0; i < k; i++) dt_release(parts[i]);
  dt_release(all);
  (void)op;
  return s;
}

/* (X, y) as loss_fn needs them: MSE, X (n, in) float and y (n, out) of its dtype;
   cross-entropy, X (n, in) float and y (n,) int64 labels; on one device. */
static dt_status dt__trainer_check_xy(const char *op, const dt_trainer *tr, const char *xn, const dt_tensor *X,
                                      const char *yn, const dt_tensor *y) {
  dt_status s;
  char a[200], c[200];
  if ((s = dt__check_tensor(op, xn, X)) != DT_OK || (s = dt__check_tensor(op, yn, y)) != DT_OK) return s;
  if ((s = dt__same_device(op, xn, X, yn, y)) != DT_OK) return s;
  if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY) {
    if (X->shape.ndim < 2 || y->shape.ndim != 1 || X->shape.dims[0] != y->shape.dims[0])
      return dt__fail(DT_ERR_SHAPE, "%s: expected %s (n, ...) and %s (n,) of class labels for the cross-entropy loss, got %s and %s",
                      op, xn, yn, dt__shape_str(&X->shape, a, sizeof a), dt__shape_str(&y->shape, c, sizeof c));
    if (y->dtype != DT_I64)
      return dt__fail(DT_ERR_DTYPE, "%s: expected %s to hold int64 class labels for the cross-entropy loss, got %s (convert with dt_cast)",
                      op, yn, dt_dtype_name(y->dtype));
    return dt__float_only(op, xn, X);
  }
  if (dt__is_float(X->dtype) && !dt__is_float(y->dtype)) /* integer targets are most likely class labels */
    return dt__fail(DT_ERR_DTYPE, "%s: %s is %s but the MSE loss (tr.loss_fn DT_LOSS_MSE, the default) needs %s targets like %s's: "
                    "for class labels set tr.loss_fn = DT_LOSS_CROSS_ENTROPY%s; for regression cast %s to %s (dt_cast(%s, %s))",
                    op, yn, dt_dtype_name(y->dtype), dt_dtype_name(X->dtype), xn,
                    y->dtype == DT_I64 ? "" : y->shape.ndim == 1 ? " with int64 labels (dt_cast to DT_I64)" : " with (n,) int64 labels",
                    yn, dt_dtype_name(X->dtype), yn, X->dtype == DT_F64 ? "DT_F64" : "DT_F32");
  if ((s = dt__same_dtype(op, xn, X, yn, y)) != DT_OK) return s;
  if (X->shape.ndim < 2 || y->shape.ndim != 2 || X->shape.dims[0] != y->shape.dims[0])
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s (n, ...) and %s (n, out), got %s and %s", op, xn, yn,
                    dt__shape_str(&X->shape, a, sizeof a), dt__shape_str(&y->shape, c, sizeof c));
  return dt__float_only(op, xn, X);
}

/* The labels of y (int64, on any device) in [0, classes): checked once, on the host,
   before the first step (the loss would otherwise see them on the device). -1: none. */
static dt_status dt__trainer_label_range(const char *op, const char *yn, const dt_tensor *y, int64_t *lo, int64_t *hi) {
  int64_t *h, i;
  dt_status s;
  *lo = 0; *hi = -1;
  if (y->numel == 0) return DT_OK;
  if (!(h = (int64_t *)DT_MALLOC(y->nbytes))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host reading %s", op, yn);
  if ((s = dt_to_host(y, h, y->nbytes)) == DT_OK) {
    *lo = *hi = h[0];
    for (i = 1; i < y->numel; i++) { if (h[i] < *lo) *lo = h[i]; if (h[i] > *hi) *hi = h[i]; }
    if (*lo < 0) s = dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s holds the class label %lld; labels must be >= 0", op, yn, (long long)*lo);
  }
  DT_FREE(h);
  return s;
}

static dt_status dt__trainer_check(const char *op, dt_trainer *tr, dt_module *m) {
  if (!tr) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: tr is NULL", op);
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (tr->autocast != DT_F32 && tr->autocast != DT_F16 && tr->autocast != DT_BF16)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: tr.autocast must be DT_F32 (off), DT_F16 or DT_BF16, got %s", op,
                    dt_dtype_name(tr->autocast));
  if (tr->loss_fn != DT_LOSS_MSE && tr->loss_fn != DT_LOSS_CROSS_ENTROPY)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: loss_fn must be DT_LOSS_MSE or DT_LOSS_CROSS_ENTROPY, got %d", op, (int)tr->loss_fn);
  if (tr->batch_size <= 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: batch_size must be positive, got %lld", op, (long long)tr->batch_size);
  return DT_OK;
}

/* The width of m's output for an input of `in` columns, without running it (a lazy layer
   knows its out_features): the last linear layer's, or `in` when there is none. */
static int64_t dt__module_out_width(const dt_module *m, int64_t in) {
  int i;
  if (m->kind == DT__M_LINEAR) return m->out;
  for (i = 0; m->kind == DT__M_SEQ && i < m->n; i++) in = dt__module_out_width(m->layers[i], in);
  return in;
}

/* Before anything changes (the model's device, a lazy layer's first draw): the labels' largest
   against the classes the model will give. */
static dt_status dt__trainer_label_classes(const char *op, dt_module *m, const dt_tensor *X, int64_t hi, const char *yn) {
  int64_t classes;
  if (hi < 0 || X->shape.ndim != 2 || dt__module_has_user(m)) return DT_OK; /* else from a first forward (below) */
  classes = dt__module_out_width(m, X->shape.dims[1]);
  if (hi >= classes)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s holds the class label %lld, but the model has %lld outputs (classes 0..%lld)",
                    op, yn, (long long)hi, (long long)classes, (long long)classes - 1);
  return DT_OK;
}

/* After the labels passed dt__trainer_label_classes: a first forward of one row, which sizes a
   lazy layer before data-parallel copies are made, and the model's classes against the labels'
   largest once more, from the output itself. */
static dt_status dt__trainer_check_classes(const char *op, dt_module *m, const dt__tr_data *d, int64_t hi, const char *yn) {
  dt_tensor *xb, *pred;
  int64_t classes;
  int was, training;
  if (hi < 0 || d->n == 0) return DT_OK;
  was = dt_set_grad_enabled(0);
  xb = d->Xd ? dt_slice(d->Xd, 0, 0, 1) : NULL;
  if (!d->Xd) { dt_tensor *xh = dt_slice(d->X, 0, 0, 1); xb = xh ? dt_to(xh, dt_module_device(m)) : NULL; dt_release(xh); }
  /* in evaluation mode: batch norm neither updates its running statistics from one row nor
     refuses it, dropout draws nothing */
  training = m->training;
  dt_module_train(m, 0);
  pred = xb ? dt_forward(m, xb) : NULL;
  dt_module_train(m, training);
  dt_set_grad_enabled(was);
  dt_release(xb);
  if (!pred) return dt_last_status();
  classes = pred->shape.ndim == 2 ? pred->shape.dims[1] : -1;
  dt_release(pred);
  if (classes < 0) return dt__fail(DT_ERR_SHAPE, "%s: the model's output must be (n, classes) for the cross-entropy loss", op);
  if (hi >= classes)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s holds the class label %lld, but the model has %lld outputs (classes 0..%lld)",
                    op, yn, (long long)hi, (long long)classes, (long long)classes - 1);
  return DT_OK;
}

static dt_status dt__trainer_fit(const char *op, dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                 const dt_tensor *Xv, const dt_tensor *yv) {
  dt__tr_data d, dv;
  dt__tr_sums sums, vs;
  dt__replicas rep;
  dt__tr_graph gr;
  int64_t *idx = NULL, lo, hi, vlo, vhi;
  int epoch, val = Xv || yv, training = m ? m->training : 1;
  dt_status s;
  memset(&rep, 0, sizeof rep);
  memset(&gr, 0, sizeof gr);
  memset(&d, 0, sizeof d); memset(&dv, 0, sizeof dv); memset(&sums, 0, sizeof sums); memset(&vs, 0, sizeof vs);
  if ((s = dt__trainer_check(op, tr, m)) != DT_OK) return s;
  if ((s = dt__trainer_graph_check(op, tr)) != DT_OK) return s;
  if (tr->num_gpus > 1 && dt_dist_world_size() < 2 && !dt__module_clonable(m)) /* the replicas are copies of m */
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: training on %d GPUs copies the model to each, but m holds a module written with "
                    "dt_module_new, whose forward and state cannot be copied: train it on one GPU, or one rank per GPU "
                    "(dt_dist_init), which copies nothing", op, tr->num_gpus);
  if (tr->autocast == DT_F16 && !tr->grad_scaler && !(tr->grad_scaler = dt_grad_scaler_new(65536.0))) return dt_last_status();
  if ((s = dt__trainer_check_xy(op, tr, "X", X, "y", y)) != DT_OK) return s;
  if (val) {
    char a[200], c[200];
    if ((s = dt__trainer_check_xy(op, tr, "X_val", Xv, "y_val", yv)) != DT_OK) return s;
    if (Xv->dtype != X->dtype || Xv->shape.ndim != X->shape.ndim ||
        memcmp(Xv->shape.dims + 1, X->shape.dims + 1, sizeof(int64_t) * (size_t)(X->shape.ndim - 1)) != 0 ||
        (y->shape.ndim == 2 && yv->shape.dims[1] != y->shape.dims[1]))
      return dt__fail(DT_ERR_SHAPE, "%s: expected X_val and y_val with X's and y's columns and dtype, got X %s %s and X_val %s %s", op,
                      dt__shape_str(&X->shape, a, sizeof a), dt_dtype_name(X->dtype), dt__shape_str(&Xv->shape, c, sizeof c),
                      dt_dtype_name(Xv->dtype));
  }
  if ((uint64_t)X->shape.dims[0] >= (uint64_t)(SIZE_MAX / sizeof(int64_t)))  /* the shuffle's index: 8 bytes a row */
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host: X has %lld rows, and an index of 8 bytes a row "
                    "to shuffle them does not fit in memory", op, (long long)X->shape.dims[0]);
  if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY) {
    if ((s = dt__trainer_label_range(op, "y", y, &lo, &hi)) != DT_OK) return s;
    if (val && (s = dt__trainer_label_range(op, "y_val", yv, &vlo, &vhi)) != DT_OK) return s;
    if ((s = dt__trainer_label_classes(op, m, X, hi, "y")) != DT_OK) return s;
    if (val && (s = dt__trainer_label_classes(op, m, Xv, vhi, "y_val")) != DT_OK) return s;
  } else {
    hi = vhi = -1;
  }
  if ((s = dt_trainer_prepare_model(tr, m)) != DT_OK) return s;
  if (!(idx = (int64_t *)DT_MALLOC(sizeof(int64_t) * (size_t)(X->shape.dims[0] + 1))))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  if ((s = dt__tr_data_init(tr, X, y, &d)) != DT_OK) goto done;
  if (val && (s = dt__tr_data_init(tr, Xv, yv, &dv)) != DT_OK) goto done;
  if ((s = dt__trainer_check_classes(op, m, &d, hi, "y")) != DT_OK) goto done;
  if (val && (s = dt__trainer_check_classes(op, m, &dv, vhi, "y_val")) != DT_OK) goto done;
  if ((s = dt__tr_sums_init(op, tr, X, &sums)) != DT_OK) goto done;
  if (val && (s = dt__tr_sums_init(op, tr, X, &vs)) != DT_OK) goto done;
  if ((s = dt__replicas_init(op, tr, m, &sums, &rep)) != DT_OK) goto done; /* num_gpus > 1, or ranks: data parallel */
  for (epoch = 0; epoch < tr->max_epochs; epoch++) {
    double t0 = dt__wall_seconds(), v[4];
    dt_epoch_result r;
    dt_module_train(m, 1); /* net.train() */
    if ((s = dt__trainer_epoch(op, tr, &rep, m, &d, idx, &sums, &gr)) != DT_OK) goto done;
    if ((s = dt__replicas_gather_sums(&rep)) != DT_OK) goto done; /* the other GPUs' parts, on the first */
    if (val && (s = dt__trainer_eval(tr, m, &dv, &vs)) != DT_OK) goto done;
    if ((s = dt__tr_read(op, &sums, val ? &vs : NULL, v)) != DT_OK) goto done;
    if ((s = dt__replicas_rank_sums(&rep, v)) != DT_OK) goto done; /* the other ranks' parts */
    r.epoch = epoch + 1;
    r.loss = v[0] / (double)d.n;
    r.train_acc = v[1] / (double)d.n;
    r.val_loss = val ? v[2] / (double)dv.n : NAN;
    r.val_acc = val ? v[3] / (double)dv.n : NAN;
    r.seconds = dt__wall_seconds() - t0;
    if (epoch < 64) { tr->epoch_loss[epoch] = r.loss; tr->epochs[epoch] = r; }
    tr->last_loss = r.loss;
    tr->last = r;
    tr->epochs_run = epoch + 1;
    if (!tr->quiet) {
      char dn[48];
      printf("epoch %d/%d, loss %.6f", epoch + 1, tr->max_epochs, r.loss);
      if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY) printf(", train acc %.4f", r.train_acc);
      if (val) printf(tr->loss_fn == DT_LOSS_CROSS_ENTROPY ? ", val loss %.6f, val acc %.4f" : ", val loss %.6f", r.val_loss, r.val_acc);
      printf(", on %s\n", dt_device_str(tr->device, dn, sizeof dn));
      fflush(stdout);
    }
    if (tr->on_epoch) tr->on_epoch(tr, &r, tr->user);
    if ((s = dt_fill_(sums.loss, 0)) != DT_OK || (sums.right && (s = dt_fill_(sums.right, 0)) != DT_OK)) goto done;
    if (val && ((s = dt_fill_(vs.loss, 0)) != DT_OK || (vs.right && (s = dt_fill_(vs.right, 0)) != DT_OK))) goto done;
  }
done:
  dt_module_train(m, training);
  dt__tr_graph_free(&gr);
  dt__replicas_free(&rep);
  dt__tr_sums_free(&sums); dt__tr_sums_free(&vs);
  dt__tr_data_free(&d); dt__tr_data_free(&dv);
  if (idx) DT_FREE(idx);
  return s;
}

DTDEF dt_status dt_trainer_fit(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y) {
  return dt__trainer_fit("dt_trainer_fit", tr, m, X, y, NULL, NULL);
}

DTDEF dt_status dt_trainer_fit_val(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                   const dt_tensor *X_val, const dt_tensor *y_val) {
  const char *op = "dt_trainer_fit_val";
  if (tr && m && X && y && (!X_val) != (!y_val))
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: give X_val and y_val both or neither, got X_val %s and y_val %s", op,
                    X_val ? "set" : "NULL", y_val ? "set" : "NULL");
  return dt__trainer_fit(op, tr, m, X, y, X_val, y_val);
}

DTDEF dt_status dt_trainer_evaluate(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                    double *loss, double *accuracy) {
  const char *op = "dt_trainer_evaluate";
  dt__tr_data d;
  dt__tr_sums sums;
  int64_t lo, hi = -1;
  double v[4];
  dt_status s;
  memset(&d, 0, sizeof d); memset(&sums, 0, sizeof sums);
  if ((s = dt__trainer_check(op, tr, m)) != DT_OK || (s = dt__trainer_check_xy(op, tr, "X", X, "y", y)) != DT_OK) return s;
  if (tr->loss_fn == DT_LOSS_CROSS_ENTROPY && ((s = dt__trainer_label_range(op, "y", y, &lo, &hi)) != DT_OK ||
                                               (s = dt__trainer_label_classes(op, m, X, hi, "y")) != DT_OK)) return s;
  if ((s = dt_trainer_prepare_model(tr, m)) != DT_OK) return s;
  if ((s = dt__tr_data_init(tr, X, y, &d)) == DT_OK && (s = dt__trainer_check_classes(op, m, &d, hi, "y")) == DT_OK &&
      (s = dt__tr_sums_init(op, tr, X, &sums)) == DT_OK && (s = dt__trainer_eval(tr, m, &d, &sums)) == DT_OK &&
      (s = dt__tr_read(op, &sums, NULL, v)) == DT_OK) {
    if (loss) *loss = v[0] / (double)d.n;
    if (accuracy) *accuracy = v[1] / (double)d.n;
  }
  dt__tr_sums_free(&sums);
  dt__tr_data_free(&d);
  return s;
}

DTDEF void dt_trainer_free(dt_trainer *tr) {
  if (!tr) return;
  dt_grad_scaler_free(tr->grad_scaler);
  memset(tr, 0, sizeof *tr);
}

/* ---- src/io/dlpack.c ---- */
/* DLPack capsules both ways, memory the caller owns (dt_from_blob), and safetensors
   files of any named tensors. Foreign memory lives in a dt__storage with `foreign` set
   and a deleter (see dt__storage_release). The safetensors part reuses the module
   reader's JSON functions and entry parser. */

/* DLPack's ABI constants by value, so that any dlpack.h (0.6's too) works */
enum { DT__DL_CPU = 1, DT__DL_CUDA = 2, DT__DL_CUDA_HOST = 3, DT__DL_CUDA_MANAGED = 13 };
enum { DT__DL_INT = 0, DT__DL_UINT = 1, DT__DL_FLOAT = 2, DT__DL_BFLOAT = 4, DT__DL_COMPLEX = 5, DT__DL_BOOL = 6 };

/* A tensor over memory devtensor does not own. Allocates both headers before it
   records the deleter, so a failure never calls it. */
static dt_tensor *dt__foreign(const char *op, dt_device d, void *ptr, const dt_shape *s, dt_dtype t, int64_t numel,
                              size_t nbytes, void (*deleter)(void *, void *), void *del_data, void *del_ctx) {
  dt__storage *st = (dt__storage *)DT_MALLOC(sizeof(dt__storage));
  dt_tensor *x = st ? (dt_tensor *)DT_MALLOC(sizeof(dt_tensor)) : NULL;
  if (!x) {
    if (st) DT_FREE(st);
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a tensor header", op);
    return NULL;
  }
  st->refs = 1; st->device = d; st->ptr = ptr; st->nbytes = nbytes;
  st->foreign = 1; st->deleter = deleter; st->del_data = del_data; st->del_ctx = del_ctx; st->base = NULL; st->version = 0;
  st->serial = DT__ATOMIC_ADD(&dt__storage_serial, 1);
  x->refs = 1; x->dtype = t; x->shape = *s; x->numel = numel; x->nbytes = nbytes; x->st = st;
  x->requires_grad = 0; x->grad = NULL; x->node = NULL;
  return x;
}

static dt_status dt__check_aligned(const char *op, const void *p, dt_dtype t) {
  size_t es = dt_dtype_size(t);
  if (es && ((uintptr_t)p % es) != 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: data %p is not aligned to the %zu bytes of a %s element (copy it to aligned memory)",
                    op, p, es, dt_dtype_name(t));
  return DT_OK;
}

DTDEF dt_tensor *dt_from_blob(void *data, dt_shape s, dt_dtype t, dt_device d, void (*deleter)(void *data, void *ctx), void *ctx) {
  const char *op = "dt_from_blob";
  int64_t numel = 0;
  size_t nbytes = 0;
  if (dt__check_device(op, d) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (dt__check_shape(op, &s, t, &numel, &nbytes) != DT_OK) return NULL;
  if (!data && numel > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: data is NULL for %lld elements", op, (long long)numel); return NULL; }
  if (dt__check_aligned(op, data, t) != DT_OK) return NULL;
  return dt__foreign(op, d, data, &s, t, numel, nbytes, deleter, data, ctx);
}

/* ---- interop: DLPack export ---- */

typedef struct dt__dl_export {
  struct DLManagedTensorVersioned v;   /* one of the two is handed out; manager_ctx points here */
  struct DLManagedTensor legacy;
  dt_tensor *t;                        /* the capsule's reference */
  int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
} dt__dl_export;

static void dt__dl_export_free(dt__dl_export *e) {
  dt_release(e->t);
  DT_FREE(e);
}
static void dt__dl_delete_v(struct DLManagedTensorVersioned *self) {
  if (self) dt__dl_export_free((dt__dl_export *)self->manager_ctx);
}
static void dt__dl_delete_legacy(struct DLManagedTensor *self) {
  if (self) dt__dl_export_free((dt__dl_export *)self->manager_ctx);
}

/* A capsule's state (its reference to t, shape, compact strides); first drains the
   device's stream so that the consumer may use the data on any stream (the producer's
   half of __dlpack__(stream=...)). A 0 dim counts as 1 in the strides, as in PyTorch; an
   empty tensor's other dims may be huge, (0, 2^62, 4): a stride whose bytes pass int64
   (only an empty tensor's can) is 0 there and outside it, as no element is ever reached. */
static dt__dl_export *dt__dl_export_new(const char *op, dt_tensor *t) {
  dt__dl_export *e;
  uint64_t stride = 1, most;
  int i;
  dt_device d;
  if (dt__check_tensor(op, "t", t) != DT_OK) return NULL;
  most = (uint64_t)INT64_MAX / dt_dtype_size(t->dtype);   /* the largest stride whose bytes fit an int64 */
  d = t->st->device;
  if (dt__graph_forbid(op, d, "an export (it waits for the device)") != DT_OK) return NULL;
  if (d.type != DT_CPU && dt__run(op, d, dt__be(d)->synchronize(d.index)) != DT_OK) return NULL;
  if (!(e = (dt__dl_export *)DT_MALLOC(sizeof(dt__dl_export)))) {
    dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a DLPack capsule", op);
    return NULL;
  }
  memset(e, 0, sizeof *e);
  e->t = dt_retain(t);
  for (i = t->shape.ndim - 1; i >= 0; i--) {
    uint64_t n = t->shape.dims[i] > 0 ? (uint64_t)t->shape.dims[i] : 1;
    e->shape[i] = t->shape.dims[i];
    e->strides[i] = stride <= most ? (int64_t)stride : 0;
    stride = stride <= most && n <= most / stride ? stride * n : most + 1;
  }
  return e;
}

static void dt__dl_fill(dt__dl_export *e, DLTensor *x) {
  dt_tensor *t = e->t;
  x->data = t->numel > 0 ? t->st->ptr : NULL;  /* the spec: NULL for an empty tensor */
  x->device.device_type = (DLDeviceType)(t->st->device.type == DT_CUDA ? DT__DL_CUDA : DT__DL_CPU);
  x->device.device_id = t->st->device.type == DT_CUDA ? t->st->device.index : 0;
  x->ndim = t->shape.ndim;
  x->dtype.code = (uint8_t)(t->dtype == DT_BF16 ? DT__DL_BFLOAT : dt__is_float(t->dtype) ? DT__DL_FLOAT : t->dtype == DT_U8 ? DT__DL_UINT : t->dtype == DT_BOOL ? DT__DL_BOOL : DT__DL_INT);
  x->dtype.bits = (uint8_t)(8 * dt_dtype_size(t->dtype));
  x->dtype.lanes = 1;
  x->shape = e->shape;
  x->strides = e->strides;   /* always given: DLPack 1.2 asks for them, older consumers accept them */
  x->byte_offset = 0;
}

DTDEF struct DLManagedTensorVersioned *dt_to_dlpack(dt_tensor *t) {
  dt__dl_export *e = dt__dl_export_new("dt_to_dlpack", t);
  if (!e) return NULL;
  e->v.version.major = 1;
  e->v.version.minor = 1;
  e->v.manager_ctx = e;
  e->v.deleter = dt__dl_delete_v;
  e->v.flags = 0;            /* writable, shared (not a copy) */
  dt__dl_fill(e, &e->v.dl_tensor);
  return &e->v;
}

DTDEF struct DLManagedTensor *dt_to_dlpack_legacy(dt_tensor *t) {
  dt__dl_export *e = dt__dl_export_new("dt_to_dlpack_legacy", t);
  if (!e) return NULL;
  e->legacy.manager_ctx = e;
  e->legacy.deleter = dt__dl_delete_legacy;
  dt__dl_fill(e, &e->legacy.dl_tensor);
  return &e->legacy;
}

/* ---- interop: DLPack import ---- */

static void dt__dl_release_v(void *data, void *ctx) {
  struct DLManagedTensorVersioned *m = (struct DLManagedTensorVersioned *)ctx;
  (void)data;
  if (m->deleter) m->deleter(m);
}
static void dt__dl_release_legacy(void *data, void *ctx) {
  struct DLManagedTensor *m = (struct DLManagedTensor *)ctx;
  (void)data;
  if (m->deleter) m->deleter(m);
}

static const char *dt__dl_type_name(DLDataType t, char *buf, size_t n) {
  /* DLPack 1.1's narrow floats, by code 7 to 17, named as PyTorch and ml_dtypes name them */
  static const char *const narrow[11] = {"float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
                                         "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
                                         "float4_e2m1fn"};
  const char *base;
  if (t.code >= 7 && t.code <= 17) {
    snprintf(buf, n, "%s (%u bits)", narrow[t.code - 7], (unsigned)t.bits);
    if (t.lanes != 1) { size_t l = strlen(buf); snprintf(buf + l, n - l, " x %u lanes", (unsigned)t.lanes); }
    return buf;
  }
  switch (t.code) {
    case DT__DL_INT: base = "int"; break;
    case DT__DL_UINT: base = "uint"; break;
    case DT__DL_FLOAT: base = "float"; break;
    case DT__DL_BFLOAT: base = "bfloat"; break;
    case DT__DL_COMPLEX: base = "complex"; break;
    case DT__DL_BOOL: base = "bool"; break;
    default: base = "type code "; break;
  }
  if (t.code == DT__DL_BOOL) snprintf(buf, n, "bool (%u bits)", (unsigned)t.bits);
  else if (base[0] == 't') snprintf(buf, n, "type code %u, %u bits", (unsigned)t.code, (unsigned)t.bits);
  else snprintf(buf, n, "%s%u", base, (unsigned)t.bits);
  if (t.lanes != 1) { size_t l = strlen(buf); snprintf(buf + l, n - l, " x %u lanes", (unsigned)t.lanes); }
  return buf;
}

/* The conversion to suggest for a dtype devtensor lacks: a float to float32 (float64 when it
   is wider), an int to int64, a wider bool to bool; a complex number has no devtensor dtype. */
static const char *dt__dl_type_advice(DLDataType t) {
  if (t.lanes != 1) return "convert it first: devtensor has no vector types (one value per element; make the lanes a dimension)";
  if (t.code == DT__DL_FLOAT || t.code == DT__DL_BFLOAT || (t.code >= 7 && t.code <= 17))
    return t.bits > 64 ? "convert it first, e.g. x.to(torch.float64) or x.astype(np.float64)"
                       : "convert it first, e.g. x.to(torch.float32) or x.astype(np.float32)";
  if (t.code == DT__DL_INT || t.code == DT__DL_UINT)
    return t.code == DT__DL_UINT && t.bits == 64 ? "convert it first, e.g. x.to(torch.int64) or x.astype(np.int64) (values below 2^63)"
                                                  : "convert it first, e.g. x.to(torch.int64) or x.astype(np.int64)";
  if (t.code == DT__DL_BOOL) return "convert it first, e.g. x.to(torch.bool) or x.astype(np.bool_)";
  if (t.code == DT__DL_COMPLEX) return "devtensor has no complex dtype: import the real and imaginary parts apart (x.real, x.imag)";
  return "convert it to one of them first";
}

/* Checks a DLTensor and wraps it; `rel` and `m` release it later. */
static dt_tensor *dt__dl_import(const char *op, const DLTensor *x, void (*rel)(void *, void *), void *m) {
  dt_shape s;
  dt_dtype t;
  dt_device d;
  int64_t numel = 0, want = 1;
  size_t nbytes = 0;
  char *data;
  char tb[64], sb[200];
  int i, ok = 1;
  if (x->ndim < 0 || x->ndim > DT_MAX_DIMS) {
    dt__fail(DT_ERR_SHAPE, "%s: %d dimensions, devtensor holds 0 to %d (reshape it first)", op, (int)x->ndim, DT_MAX_DIMS);
    return NULL;
  }
  if (x->ndim > 0 && !x->shape) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dl_tensor.shape is NULL for %d dimensions", op, (int)x->ndim); return NULL; }
  if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_FLOAT && x->dtype.bits == 32) t = DT_F32;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_FLOAT && x->dtype.bits == 64) t = DT_F64;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_INT && x->dtype.bits == 32) t = DT_I32;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_INT && x->dtype.bits == 64) t = DT_I64;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_UINT && x->dtype.bits == 8) t = DT_U8;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_BOOL && x->dtype.bits == 8) t = DT_BOOL;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_FLOAT && x->dtype.bits == 16) t = DT_F16;
  else if (x->dtype.lanes == 1 && x->dtype.code == DT__DL_BFLOAT && x->dtype.bits == 16) t = DT_BF16;
  else {
    dt__fail(DT_ERR_DTYPE, "%s: dtype %s has no devtensor dtype (float32, float64, int32, int64, uint8, bool, float16, bfloat16): %s",
             op, dt__dl_type_name(x->dtype, tb, sizeof tb), dt__dl_type_advice(x->dtype));
    return NULL;
  }
  switch ((int)x->device.device_type) {
    case DT__DL_CPU: case DT__DL_CUDA_HOST: d = dt_cpu(); break;   /* pinned host memory is host memory */
    case DT__DL_CUDA:
      if (x->device.device_id < 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: CUDA device id %d", op, (int)x->device.device_id); return NULL; }
      d = dt_gpu(x->device.device_id);
      break;
    case DT__DL_CUDA_MANAGED:
      dt__fail(DT_ERR_UNSUPPORTED, "%s: CUDA managed (unified) memory is not supported: copy it to a CUDA device tensor first", op);
      return NULL;
    default:
      dt__fail(DT_ERR_UNSUPPORTED, "%s: DLPack device type %d is not supported (devtensor takes kDLCPU, kDLCUDAHost and kDLCUDA): copy it to the CPU or a CUDA GPU first",
               op, (int)x->device.device_type);
      return NULL;
  }
  if (dt__check_device(op, d) != DT_OK) return NULL;
  s = dt_shape_n(x->ndim, x->shape);
  if (dt__check_shape(op, &s, t, &numel, &nbytes) != DT_OK) return NULL;
  if (x->strides && numel > 0)
    for (i = x->ndim - 1; i >= 0; i--) {
      if (s.dims[i] != 1 && x->strides[i] != want) ok = 0;   /* a dimension of size 1 may have any stride */
      want *= s.dims[i];
    }
  if (!ok) {
    size_t at = 0;
    sb[0] = 0;
    for (i = 0; i < x->ndim && at < sizeof sb; i++)
      at += (size_t)snprintf(sb + at, sizeof sb - at, i ? ", %lld" : "%lld", (long long)x->strides[i]);
    dt__fail(DT_ERR_UNSUPPORTED, "%s: strides (%s) are not compact row-major, which devtensor needs: make it contiguous first (x.contiguous(), np.ascontiguousarray(x))",
             op, sb);
    return NULL;
  }
  data = (char *)x->data;
  /* the data, byte_offset on from data, must lie within the address space */
  if (x->byte_offset > (uint64_t)PTRDIFF_MAX || x->byte_offset > (uint64_t)(SIZE_MAX - nbytes) ||
      (data && (uintptr_t)data > UINTPTR_MAX - (uintptr_t)x->byte_offset - nbytes)) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dl_tensor.byte_offset %llu with %zu bytes of data runs past the address space", op,
             (unsigned long long)x->byte_offset, nbytes);
    return NULL;
  }
  if (!data && numel > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dl_tensor.data is NULL for %lld elements", op, (long long)numel); return NULL; }
  if (data) data += x->byte_offset;
  if (dt__check_aligned(op, data, t) != DT_OK) return NULL;
  return dt__foreign(op, d, data, &s, t, numel, nbytes, rel, NULL, m);
}

DTDEF dt_tensor *dt_from_dlpack(struct DLManagedTensorVersioned *m) {
  const char *op = "dt_from_dlpack";
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  if (m->version.major != 1) {
    dt__fail(DT_ERR_UNSUPPORTED, "%s: DLPack version %u.%u, devtensor reads 1.x (the caller keeps the capsule and must call its deleter)",
             op, (unsigned)m->version.major, (unsigned)m->version.minor);
    return NULL;
  }
  if (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) {
    dt__fail(DT_ERR_UNSUPPORTED, "%s: the tensor is read-only and devtensor's tensors are writable: export a writable copy (e.g. np.array(x, copy=True)) or use dt_from_data",
             op);
    return NULL;
  }
  /* DLPACK_FLAG_BITMASK_IS_COPIED: ours alone either way, nothing to do */
  return dt__dl_import(op, &m->dl_tensor, dt__dl_release_v, m);
}

DTDEF dt_tensor *dt_from_dlpack_legacy(struct DLManagedTensor *m) {
  const char *op = "dt_from_dlpack_legacy";
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return NULL; }
  return dt__dl_import(op, &m->dl_tensor, dt__dl_release_legacy, m);
}

/* ---- src/io/tensors_file.c ---- */
/* Writes `name` as a JSON string ("" and \ escaped) into hdr at len (measures when hdr is NULL). */
static size_t dt__st_put_name(char *hdr, size_t len, const char *name) {
  const char *p;
  if (hdr) hdr[len] = '"';
  len++;
  for (p = name; *p; p++) {
    if (*p == '"' || *p == '\\') { if (hdr) hdr[len] = '\\'; len++; }
    if (hdr) hdr[len] = *p;
    len++;
  }
  if (hdr) hdr[len] = '"';
  return len + 1;
}

DTDEF dt_status dt_save_tensors(const char *path, const char *const *names, const dt_tensor *const *ts, int n) {
  const char *op = "dt_save_tensors";
  char *hdr = NULL, num[128];
  size_t len = 0, maxbytes = 0, k, bad;
  uint64_t off = 0;
  unsigned char lenbuf[8];
  void *host = NULL;
  dt__wfile f;
  int opened = 0;
  dt_status s = DT_OK;
  int i, j, pass, d;
  if (!path) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
  if (n < 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: n is %d", op, n);
  if (n > 0 && (!names || !ts)) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is NULL for n = %d", op, names ? "ts" : "names", n);
  if (!dt__little_endian()) return dt__fail(DT_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", op);
  for (i = 0; i < n; i++) {
    const char *p;
    if (!names[i]) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] is NULL", op, i);
    if (!ts[i]) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: ts[%d] (\"%.64s\") is NULL", op, i, names[i]);
    if (!names[i][0] || strcmp(names[i], "__metadata__") == 0)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] \"%.64s\" is not a tensor name (not empty, not __metadata__)", op, i, names[i]);
    for (p = names[i]; *p; p++)
      if ((unsigned char)*p < 0x20)
        return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] has a control character (byte %d)", op, i, (int)(p - names[i]));
    if ((bad = dt__utf8_check((const unsigned char *)names[i], (size_t)(p - names[i]))) < (size_t)(p - names[i]))
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] is not valid UTF-8: byte %zu (0x%02x, after \"%.*s\"), which safetensors readers refuse",
                      op, i, bad, (unsigned)(unsigned char)names[i][bad], (int)(bad < 64 ? bad : 64), names[i] + (bad < 64 ? 0 : bad - 64));
    if (ts[i]->nbytes > maxbytes) maxbytes = ts[i]->nbytes;
  }
  /* each name once: sorted, a repeat sits next to itself (O(n log n), not O(n^2)) */
  if (n > 1) {
    dt__st_name *by = (dt__st_name *)DT_MALLOC(sizeof(dt__st_name) * (size_t)n);
    if (!by) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    for (i = 0; i < n; i++) { by[i].name = names[i]; by[i].idx = i; }
    qsort(by, (size_t)n, sizeof *by, dt__st_name_cmp);
    for (i = 1; i < n && strcmp(by[i - 1].name, by[i].name) != 0; i++) {}
    if (i < n) {
      j = by[i - 1].idx < by[i].idx ? by[i - 1].idx : by[i].idx;
      d = by[i - 1].idx < by[i].idx ? by[i].idx : by[i - 1].idx;
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] and names[%d] are both \"%.64s\"", op, j, d, names[j]);
      DT_FREE(by);
      return DT_ERR_INVALID_ARGUMENT;
    }
    DT_FREE(by);
  }
  /* the header, measured on pass 0 and written on pass 1 */
  for (pass = 0; pass < 2; pass++) {
    len = 0; off = 0;
    if (hdr) hdr[len] = '{';
    len++;
    for (i = 0; i < n; i++) {
      const dt_tensor *t = ts[i];
      size_t at = 0;
      if (i) { if (hdr) hdr[len] = ','; len++; }
      len = dt__st_put_name(hdr, len, names[i]);
      at += (size_t)snprintf(num, sizeof num, ":{\"dtype\":\"%s\",\"shape\":[", dt__st_dtype(t->dtype));
      if (hdr) memcpy(hdr + len, num, at);
      len += at;
      for (d = 0; d < t->shape.ndim; d++) {
        at = (size_t)snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)t->shape.dims[d]);
        if (hdr) memcpy(hdr + len, num, at);
        len += at;
      }
      at = (size_t)snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                            (unsigned long long)(off + t->nbytes));
      if (hdr) memcpy(hdr + len, num, at);
      len += at;
      off += t->nbytes;
    }
    k = (size_t)snprintf(num, sizeof num, "%s\"__metadata__\":{\"format\":\"pt\"}}", n ? "," : "");
    if (hdr) memcpy(hdr + len, num, k);
    len += k;
    if (pass == 0 && (uint64_t)(len + 7) / 8 * 8 > DT__ST_MAX_HEADER)   /* what the loaders (and safetensors) read at most */
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the header would be %zu bytes, past the format's 100 MB (fewer or shorter names)", op, (len + 7) / 8 * 8);
    if (pass == 0 && !(hdr = (char *)DT_MALLOC(len + 8))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  while (len % 8) hdr[len++] = ' ';   /* the data starts 8-byte aligned, as safetensors writes it */
  for (k = 0; k < 8; k++) lenbuf[k] = (unsigned char)((uint64_t)len >> (8 * k));
  if (maxbytes && !(host = DT_MALLOC(maxbytes))) { s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); goto done; }
  if ((s = dt__wfile_open(op, path, &f)) != DT_OK) goto done;
  opened = 1;
  if (!dt__wfile_write(&f, lenbuf, 8) || !dt__wfile_write(&f, hdr, len)) { s = dt__wfile_write_failed(op, path, &f); goto done; }
  for (i = 0; i < n; i++) {
    if (ts[i]->nbytes == 0) continue;
    if ((s = dt_to_host(ts[i], host, maxbytes)) != DT_OK) goto done;
    if (!dt__wfile_write(&f, host, ts[i]->nbytes)) { s = dt__wfile_write_failed(op, path, &f); goto done; }
  }
done:
  if (opened) s = dt__wfile_finish(op, path, &f, s);
  if (host) DT_FREE(host);
  DT_FREE(hdr);
  return s;
}

DTDEF void dt_free_tensors(int n, char **names, dt_tensor **ts) {
  int i;
  for (i = 0; i < n; i++) {
    if (names && names[i]) DT_FREE(names[i]);
    if (ts) dt_release(ts[i]);
  }
  if (names) DT_FREE(names);
  if (ts) DT_FREE(ts);
}

/* Reads nb bytes of f into a new buffer *out (NULL for 0) that grows as they arrive, so a
   header that claims more data than the file holds costs no more than the file.
   1: done; 0: the file ends first; -1: a read error; -2: out of memory. */
static int dt__st_read_grow(dt__rfile *f, size_t nb, void **out) {
  size_t got = 0, cap = nb < ((size_t)1 << 20) ? nb : ((size_t)1 << 20);
  char *buf;
  int rc;
  *out = NULL;
  if (nb == 0) return 1;
  if (!(buf = (char *)DT_MALLOC(cap))) return -2;
  for (;;) {
    if ((rc = dt__rfile_read(f, buf + got, cap - got, NULL)) != 1) { DT_FREE(buf); return rc; }
    got = cap;
    if (got == nb) break;
    {
      size_t ncap = cap < nb / 2 ? cap * 2 : nb;
      char *bigger = (char *)DT_MALLOC(ncap);
      if (!bigger) { DT_FREE(buf); return -2; }
      memcpy(bigger, buf, got);
      DT_FREE(buf);
      buf = bigger; cap = ncap;
    }
  }
  *out = buf;
  return 1;
}

/* The header's tensors, in its order, into the growing arrays *ents and *names (n of them,
   room for *cap); the module loader's JSON reader, entry parser and metadata rules. */
static dt_status dt__st_list_header(const char *op, const char *path, const char *hdr, size_t hlen, dt__st_entry **ents,
                                    char ***names, dt_tensor ***ts, int *n, int *cap) {
  char name[256];
  size_t nlen, bad;
  dt__json j;
  int first, r, meta = 0, i;
  if ((bad = dt__utf8_check((const unsigned char *)hdr, hlen)) < hlen)
    return dt__fail(DT_ERR_FORMAT, "%s: %s: the header is not valid UTF-8 (byte %zu of the file)", op, path, bad + 8);
  memset(&j, 0, sizeof j);
  j.p = j.begin = hdr; j.end = hdr + hlen;
  if (!dt__json_open(&j, '{')) goto bad_json;
  for (first = 1; (r = dt__json_next(&j, '}', first)) > 0; first = 0) {
    dt__st_entry e;
    const char *start;
    char *own;
    dt__json_ws(&j);
    start = j.p;
    if (!dt__json_string(&j, name, sizeof name, &nlen) || !dt__json_eat(&j, ':')) {
      dt__json_bad(&j, "expected \"name\": {...}");
      goto bad_json;
    }
    if (nlen == 12 && memcmp(name, "__metadata__", 12) == 0) {
      if (meta++) { dt__json_bad(&j, "a second \"__metadata__\""); goto bad_json; }
      if (!dt__st_parse_metadata(&j)) goto bad_json;
      continue;
    }
    /* the name as long as it is: a longer one than name holds is read again, into its own buffer */
    if (!(own = (char *)DT_MALLOC(nlen + 1))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    if (nlen < sizeof name) memcpy(own, name, nlen + 1);
    else {
      const char *after = j.p;
      j.p = start;
      dt__json_string(&j, own, nlen + 1, NULL);
      j.p = after;
    }
    if (nlen != strlen(own)) {
      dt__fail(DT_ERR_FORMAT, "%s: %s: the tensor name \"%s\\u0000...\" holds a NUL character", op, path, own);
      DT_FREE(own);
      return DT_ERR_FORMAT;
    }
    memset(&e, 0, sizeof e);
    if (!dt__st_parse_entry(&j, &e)) {
      dt__fail(DT_ERR_FORMAT, "%s: %s: the entry of \"%s\" is not valid: %s (byte %ld of the file)", op, path, own,
               j.why ? j.why : "malformed", (long)(j.at - hdr) + 8);
      DT_FREE(own);
      return DT_ERR_FORMAT;
    }
    if (*n == *cap) {   /* ents, names and ts grow together */
      int ncap = *cap ? 2 * *cap : 8;
      dt__st_entry *ne = (dt__st_entry *)DT_MALLOC(sizeof(dt__st_entry) * (size_t)ncap);
      char **nn = (char **)DT_MALLOC(sizeof(char *) * (size_t)ncap);
      dt_tensor **nt = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)ncap);
      if (!ne || !nn || !nt) {
        if (ne) DT_FREE(ne);
        if (nn) DT_FREE(nn);
        if (nt) DT_FREE(nt);
        DT_FREE(own);
        return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
      }
      if (*n) { memcpy(ne, *ents, sizeof(dt__st_entry) * (size_t)*n); memcpy(nn, *names, sizeof(char *) * (size_t)*n); }
      memset(nt, 0, sizeof(dt_tensor *) * (size_t)ncap);
      if (*ents) DT_FREE(*ents);
      if (*names) DT_FREE(*names);
      if (*ts) DT_FREE(*ts);
      *ents = ne; *names = nn; *ts = nt; *cap = ncap;
    }
    (*names)[*n] = own;
    (*ents)[*n] = e;
    (*ents)[*n].idx = *n;
    (*n)++;
  }
  if (r < 0) goto bad_json;
  dt__json_ws(&j);
  if (j.p != j.end) { dt__json_bad(&j, "bytes after the header's object"); goto bad_json; }
  /* each name once: sorted, a repeat sits next to itself (O(n log n), not O(n^2)) */
  if (*n > 1) {
    dt__st_name *by = (dt__st_name *)DT_MALLOC(sizeof(dt__st_name) * (size_t)*n);
    if (!by) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    for (i = 0; i < *n; i++) { by[i].name = (*names)[i]; by[i].idx = i; }
    qsort(by, (size_t)*n, sizeof *by, dt__st_name_cmp);
    for (i = 1; i < *n && strcmp(by[i - 1].name, by[i].name) != 0; i++) {}
    if (i < *n) {
      dt__fail(DT_ERR_FORMAT, "%s: %s holds \"%s\" twice", op, path, by[i].name);
      DT_FREE(by);
      return DT_ERR_FORMAT;
    }
    DT_FREE(by);
  }
  return DT_OK;
bad_json:
  return dt__fail(DT_ERR_FORMAT, "%s: %s: the header is not valid JSON: %s (byte %ld of the file)", op, path,
                  j.why ? j.why : "malformed", (long)((j.why ? j.at : j.p) - hdr) + 8);
}

DTDEF dt_status dt_load_tensors(const char *path, dt_device dev, int *n_out, char ***names_out, dt_tensor ***ts_out) {
  const char *op = "dt_load_tensors";
  dt__rfile f;
  int opened = 0;
  size_t hlen = 0;
  uint64_t at;
  char *hdr = NULL;
  dt__st_entry *ents = NULL, *sorted = NULL;
  char **names = NULL;
  dt_tensor **ts = NULL;
  dt_dtype *types = NULL;
  dt_status s = DT_OK;
  int n = 0, cap = 0, i, k, rc;
  unsigned char one;
  if (n_out) *n_out = 0;
  if (names_out) *names_out = NULL;
  if (ts_out) *ts_out = NULL;
  if (!path) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
  if (!n_out || !names_out || !ts_out)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, !n_out ? "n" : !names_out ? "names" : "ts");
  if ((s = dt__check_device(op, dev)) != DT_OK) return s;
  if (!dt__little_endian()) return dt__fail(DT_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", op);
  if ((s = dt__rfile_open(op, path, &f)) != DT_OK) return s;
  opened = 1;
  if ((s = dt__st_read_header(op, path, &f, &hdr, &hlen)) != DT_OK) goto done;
  if ((s = dt__st_list_header(op, path, hdr, hlen, &ents, &names, &ts, &n, &cap)) != DT_OK) goto done;
  if (n && !(types = (dt_dtype *)DT_MALLOC(sizeof(dt_dtype) * (size_t)n))) { s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); goto done; }
  for (i = 0; i < n; i++) {
    dt__st_entry *e = &ents[i];
    dt_shape es;
    size_t nbytes = 0;
    char sb[200];
    if (!dt__st_known_dtype(e)) {
      char db[112];
      s = dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" has dtype \"%s\", which is not a safetensors dtype", op, path, names[i],
                   dt__st_dtype_shown(e, db, sizeof db));
      goto done;
    }
    if (strcmp(e->dtype, "F32") == 0) types[i] = DT_F32;
    else if (strcmp(e->dtype, "F64") == 0) types[i] = DT_F64;
    else if (strcmp(e->dtype, "I32") == 0) types[i] = DT_I32;
    else if (strcmp(e->dtype, "I64") == 0) types[i] = DT_I64;
    else if (strcmp(e->dtype, "U8") == 0) types[i] = DT_U8;
    else if (strcmp(e->dtype, "BOOL") == 0) types[i] = DT_BOOL;
    else if (strcmp(e->dtype, "F16") == 0) types[i] = DT_F16;
    else if (strcmp(e->dtype, "BF16") == 0) types[i] = DT_BF16;
    else {
      s = dt__fail(DT_ERR_DTYPE, "%s: %s: \"%s\" is %s, which devtensor has no dtype for (F32, F64, I32, I64, U8, BOOL, F16, BF16): convert it before saving, e.g. t.float()",
                   op, path, names[i], e->dtype);
      goto done;
    }
    es = dt_shape0();
    es.ndim = e->ndim;
    for (k = 0; k < e->ndim && k < DT_MAX_DIMS; k++) {
      if (e->dims[k] > (uint64_t)INT64_MAX) { es.ndim = -1; break; }
      es.dims[k] = (int64_t)e->dims[k];
    }
    if (e->ndim > DT_MAX_DIMS || es.ndim < 0) {
      s = dt__fail(DT_ERR_SHAPE, "%s: %s: \"%s\" has shape %s, which devtensor cannot hold (at most %d dims, each below 2^63)", op, path,
                   names[i], dt__st_shape_str(e, sb, sizeof sb), DT_MAX_DIMS);
      goto done;
    }
    if ((s = dt__check_shape(op, &es, types[i], NULL, &nbytes)) != DT_OK) goto done;
    if (e->begin > e->end || e->end - e->begin != (uint64_t)nbytes) {
      s = dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" has data_offsets [%llu, %llu], which do not hold its %zu bytes",
                   op, path, names[i], (unsigned long long)e->begin, (unsigned long long)e->end, nbytes);
      goto done;
    }
  }
  /* the tensors, sorted by offset, tile the data from byte 0 (no holes, no overlaps) */
  /* n > 0 rather than n != 0: a newer GCC's -Walloc-size-larger-than= and -Wstringop-overflow= otherwise
     see a negative int turned into a size */
  if (n > 0 && !(sorted = (dt__st_entry *)DT_MALLOC(sizeof(dt__st_entry) * (size_t)n))) { s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); goto done; }
  if (n > 0) memcpy(sorted, ents, sizeof(dt__st_entry) * (size_t)n);
  if (n > 1) qsort(sorted, (size_t)n, sizeof *sorted, dt__st_cmp);
  for (i = 0, at = 0; i < n; i++) {
    if (sorted[i].begin != at) {
      s = dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" begins at data byte %llu but the data before it ends at %llu (safetensors data has no gaps or overlaps)",
                   op, path, names[sorted[i].idx], (unsigned long long)sorted[i].begin, (unsigned long long)at);
      goto done;
    }
    at = sorted[i].end;
  }
  /* read each tensor in the order of its data, straight onto the device */
  for (k = 0; k < n; k++) {
    const dt__st_entry *e = &sorted[k];
    size_t nb = (size_t)(e->end - e->begin);
    dt_shape es = dt_shape0();
    void *host = NULL;
    es.ndim = e->ndim;
    for (i = 0; i < e->ndim; i++) es.dims[i] = (int64_t)e->dims[i];
    if ((rc = dt__st_read_grow(&f, nb, &host)) != 1) {
      if (rc == -2) s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host reading \"%s\" (%zu bytes)", op, names[e->idx], nb);
      else if (rc < 0) s = dt__rfile_read_failed(op, path, &f);
      else s = dt__fail(DT_ERR_FORMAT, "%s: %s is cut short: the data of \"%s\" is [%llu, %llu] but the file ends before", op, path,
                        names[e->idx], (unsigned long long)e->begin, (unsigned long long)e->end);
      goto done;
    }
    ts[e->idx] = dt_from_data(host, es, types[e->idx], dev);
    if (host) DT_FREE(host);
    if (!ts[e->idx]) { s = dt_last_status(); goto done; }
  }
  if ((rc = dt__rfile_read(&f, &one, 1, NULL)) != 0) {
    if (rc < 0) s = dt__rfile_read_failed(op, path, &f);
    else s = dt__fail(DT_ERR_FORMAT, "%s: %s: bytes follow the last tensor's data, which ends at data byte %llu (safetensors data has no trailing bytes)",
                      op, path, (unsigned long long)at);
    goto done;
  }
done:
  if (opened) dt__rfile_close(&f);
  if (types) DT_FREE(types);
  if (sorted) DT_FREE(sorted);
  if (ents) DT_FREE(ents);
  if (hdr) DT_FREE(hdr);
  if (s != DT_OK) { dt_free_tensors(n, names, ts); return s; }
  *n_out = n; *names_out = names; *ts_out = ts;
  return DT_OK;
}

/* ---- src/dist/dist.c ---- */
/* dt_dist_* and the collectives. The world is set up once by dt_dist_init: without
   DEVTENSOR_MPI it is this process alone; with it, a duplicate of MPI_COMM_WORLD whose
   errors return (MPI_ERRORS_RETURN) instead of aborting. Every collective first agrees
   on what it is about to do: one nonblocking MPI_Iallreduce (MAX) of (kind, count,
   dtype, op or root, device type) and their negations gives every rank the largest and
   smallest of each, so a mismatch is seen on every rank and refused before any data
   moves, and a rank that never arrives is waited for at most DT_DIST_TIMEOUT seconds.
   Then CPU tensors go through MPI_Allreduce / MPI_Bcast, GPU tensors through the CUDA
   backend's NCCL communicator (dist_* slots) on the device's stream. */
#ifdef DEVTENSOR_MPI
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1 /* Open MPI's C++ bindings: not wanted, and they need the C++ runtime */
#endif
#include <mpi.h>
#endif

static int dt__dist_on;              /* dt_dist_init succeeded and no dt_dist_finalize since */
static int dt__dist_rank_v, dt__dist_size_v = 1;
static dt_device dt__dist_dev;
#ifdef DEVTENSOR_MPI
static MPI_Comm dt__dist_comm;
static int dt__dist_started_mpi;     /* dt_dist_init called MPI_Init_thread */
static void *dt__dist_nccl;          /* the CUDA backend's communicator for dt__dist_dev, or NULL */
#endif

/* An environment variable as a positive integer, else 0 (unset, not a number, or 0). */
static long dt__env_long(const char *name) {
  const char *v = getenv(name);
  char *end = NULL;
  long x;
  if (!v || !*v) return 0;
  x = strtol(v, &end, 10);
  return end && *end == 0 && x > 0 ? x : 0;
}

/* The world size the launcher announced (mpirun, srun/PMI, torchrun), or 0 when none did. */
static long dt__env_world(const char **which) {
  static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "WORLD_SIZE"};
  int i;
  for (i = 0; i < 4; i++) {
    long v = dt__env_long(names[i]);
    if (v > 0) { *which = names[i]; return v; }
  }
  return 0;
}

/* This rank's index among the ranks of its machine (LOCAL_RANK and the launchers' names). */
static long dt__env_local_rank(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK"};
  int i;
  for (i = 0; i < 3; i++) {
    const char *v = getenv(names[i]);
    if (v && *v) return strtol(v, NULL, 10) > 0 ? strtol(v, NULL, 10) : 0;
  }
  return 0;
}

static dt_device dt__dist_pick_device(long local) {
  const char *force = getenv("DT_DIST_DEVICE");   /* "cpu": every rank on the CPU, GPUs or not */
  int n = dt__gpu_count();
  if ((force && strcmp(force, "cpu") == 0) || n == 0) return dt_cpu();
  return dt_gpu((int)(local % n));
}

#ifdef DEVTENSOR_MPI
static dt_status dt__mpi_fail(const char *op, const char *what, int rc) {
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  msg[0] = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", rc);
  msg[len < MPI_MAX_ERROR_STRING ? (len > 0 ? len : 0) : MPI_MAX_ERROR_STRING] = 0;
  return dt__fail(DT_ERR_BACKEND, "%s: %s failed: %s", op, what, msg);
}
#endif

#ifdef DEVTENSOR_MPI
static dt_status dt__dist_init_mpi(const char *op, long env_world, const char *which);
#endif

DTDEF dt_status dt_dist_init(void) {
  const char *op = "dt_dist_init", *which = NULL;
  long env_world = dt__env_world(&which);
  if (dt__dist_on)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: already initialised (rank %d of %d); call dt_dist_finalize first", op,
                    dt__dist_rank_v, dt__dist_size_v);
#ifndef DEVTENSOR_MPI
  if (env_world > 1)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: this process is one of %ld ranks (%s=%ld), but devtensor was built without "
                    "DEVTENSOR_MPI: build with mpicc -DDEVTENSOR_MPI to train on more than one rank", op, env_world, which, env_world);
  dt__dist_rank_v = 0;
  dt__dist_size_v = 1;
  dt__dist_dev = dt__dist_pick_device(dt__env_local_rank());
  dt__dist_on = 1;
  return DT_OK;
#else
  {
    dt_status s = dt__dist_init_mpi(op, env_world, which);
    if (s != DT_OK && dt__dist_started_mpi) { /* nothing was set up: MPI goes as it came */
      MPI_Finalize();
      dt__dist_started_mpi = 0;
    }
    return s;
  }
#endif
}

#ifdef DEVTENSOR_MPI
static dt_status dt__dist_init_mpi(const char *op, long env_world, const char *which) {
  {
    int inited = 0, finalized = 0, provided = 0, rc, rank = 0, size = 1;
    MPI_Comm comm = MPI_COMM_NULL;
    dt_device dev;
    MPI_Finalized(&finalized);
    if (finalized) return dt__fail(DT_ERR_UNSUPPORTED, "%s: MPI was finalized in this process and cannot start again", op);
    MPI_Initialized(&inited);
    if (!inited) {
      if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided)) != MPI_SUCCESS) return dt__mpi_fail(op, "MPI_Init_thread", rc);
      dt__dist_started_mpi = 1;
    }
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm)) != MPI_SUCCESS) return dt__mpi_fail(op, "MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (env_world > 0 && env_world != size) {
      MPI_Comm_free(&comm);
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s=%ld, but MPI sees %d process%s: launch the ranks with mpirun -np %ld", op,
                      which, env_world, size, size == 1 ? "" : "es", env_world);
    }
    dev = dt__dist_pick_device(dt__env_local_rank());
    dt__dist_nccl = NULL;
#ifdef DEVTENSOR_CUDA
    if (dev.type == DT_CUDA && size > 1) {
      /* NCCL: rank 0 makes the unique id, MPI carries it to the others; then every rank
         joins. All ranks learn whether every rank succeeded, so none waits for a failed
         one. A build without NCCL starts without it: CPU tensors work, GPU ones are refused. */
      const dt__backend *be = dt__cuda_backend();
      unsigned char id[128];
      int code = 0, ok = 1, all = 0; /* code, rank 0's: 0 an id, 1 no NCCL in this build, 2 NCCL failed */
      /* NCCL takes one GPU per rank: ranks of a machine with fewer GPUs than ranks would share one,
         and ncclCommInitRank would only say "invalid usage" (seen on a one-GPU H100 machine). Every
         rank learns first whether any rank is in that case. */
      long local = dt__env_local_rank();
      int gpus = dt__gpu_count(), shared = local >= gpus, any = shared;
      if ((rc = MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS) {
        MPI_Comm_free(&comm);
        return dt__mpi_fail(op, "MPI_Allreduce", rc);
      }
      if (any) {
        MPI_Comm_free(&comm);
        if (shared)
          return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: rank %d is local rank %ld of a machine with %d GPU%s, so it would share cuda:%ld with "
                          "another rank, and NCCL takes one GPU per rank: start at most %d rank%s per machine, or set DT_DIST_DEVICE=cpu",
                          op, rank, local, gpus, gpus == 1 ? "" : "s", local % gpus, gpus, gpus == 1 ? "" : "s");
        return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: another rank would share a GPU (its machine has more ranks than GPUs), and NCCL "
                        "takes one GPU per rank: start at most as many ranks per machine as it has GPUs, or set DT_DIST_DEVICE=cpu", op);
      }
      memset(id, 0, sizeof id);
      if (rank == 0) { dt_status st = be->dist_unique_id(id); code = st == DT_OK ? 0 : st == DT_ERR_UNSUPPORTED ? 1 : 2; }
      if ((rc = MPI_Bcast(&code, 1, MPI_INT, 0, comm)) == MPI_SUCCESS && code == 0)
        rc = MPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, comm);
      if (rc != MPI_SUCCESS) { MPI_Comm_free(&comm); return dt__mpi_fail(op, "MPI_Bcast of the NCCL id", rc); }
      if (code == 2) {
        const char *why = be->last_error();
        MPI_Comm_free(&comm);
        if (rank == 0) return dt__fail(DT_ERR_BACKEND, "%s: NCCL did not start: %s", op, why && why[0] ? why : "ncclGetUniqueId failed");
        return dt__fail(DT_ERR_BACKEND, "%s: NCCL did not start on rank 0 (its dt_last_error() says why)", op);
      }
      if (code == 0) {
        ok = be->dist_comm_init(dev.index, size, rank, id, &dt__dist_nccl) == DT_OK;
        all = ok;
        if ((rc = MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm)) != MPI_SUCCESS) all = 0;
        if (!all) {
          const char *why = be->last_error();
          if (dt__dist_nccl) be->dist_comm_free(dt__dist_nccl);
          dt__dist_nccl = NULL;
          MPI_Comm_free(&comm);
          if (!ok) return dt__fail(DT_ERR_BACKEND, "%s: NCCL did not start on rank %d: %s", op, rank, why && why[0] ? why : "unknown reason");
          return dt__fail(DT_ERR_BACKEND, "%s: NCCL did not start on another rank (this one, rank %d, was ready)", op, rank);
        }
      }
    }
#endif
    dt__dist_comm = comm;
    dt__dist_rank_v = rank;
    dt__dist_size_v = size;
    dt__dist_dev = dev;
    dt__dist_on = 1;
    return DT_OK;
  }
}
#endif

/* For the trainer: the world size (1 when none was set up) and this rank's device. */
static int dt__dist_world(dt_device *dev) {
  if (!dt__dist_on) return 1;
  if (dev) *dev = dt__dist_dev;
  return dt__dist_size_v;
}

/* For the trainer: rank 0's parameters and random generator on every rank. */
static dt_status dt__dist_start(const char *op, dt_module *m) {
  int i, np = dt_module_num_params(m);
  dt_tensor *g = dt__new(op, dt_shape1(2), DT_I64, dt_cpu());
  dt_status s = DT_OK;
  if (!g) return dt_last_status();
  dt__lock(&dt__rng_lock);
  ((int64_t *)g->st->ptr)[0] = (int64_t)dt__seed; ((int64_t *)g->st->ptr)[1] = (int64_t)dt__draw;
  dt__unlock(&dt__rng_lock);
  {
    const int grad_was = dt_set_grad_enabled(0); /* the parameters are leaves that require grad */
    for (i = 0; i < np && s == DT_OK; i++) s = dt_broadcast_(dt_module_param(m, i, NULL), 0);
    dt_set_grad_enabled(grad_was);
  }
  if (s == DT_OK && (s = dt_broadcast_(g, 0)) == DT_OK) {
    dt__lock(&dt__rng_lock);
    dt__seed = (uint64_t)((int64_t *)g->st->ptr)[0]; dt__draw = (uint64_t)((int64_t *)g->st->ptr)[1];
    dt__unlock(&dt__rng_lock);
  }
  dt_release(g);
  return s;
}

DTDEF int dt_dist_rank(void) { return dt__dist_on ? dt__dist_rank_v : 0; }
DTDEF int dt_dist_world_size(void) { return dt__dist_on ? dt__dist_size_v : 1; }
DTDEF dt_device dt_dist_device(void) { return dt__dist_on ? dt__dist_dev : dt__dist_pick_device(dt__env_local_rank()); }

DTDEF dt_status dt_dist_finalize(void) {
  if (!dt__dist_on) return DT_OK;
#ifdef DEVTENSOR_MPI
#ifdef DEVTENSOR_CUDA
  if (dt__dist_nccl) dt__cuda_backend()->dist_comm_free(dt__dist_nccl);
  dt__dist_nccl = NULL;
#endif
  MPI_Comm_free(&dt__dist_comm);
  if (dt__dist_started_mpi) {
    int rc = MPI_Finalize();
    dt__dist_started_mpi = 0;
    dt__dist_on = 0;
    if (rc != MPI_SUCCESS) return dt__fail(DT_ERR_BACKEND, "dt_dist_finalize: MPI_Finalize failed (error %d)", rc);
  }
#endif
  dt__dist_on = 0;
  dt__dist_rank_v = 0;
  dt__dist_size_v = 1;
  return DT_OK;
}

/* The checks every collective makes: initialised, a tensor, a known op, a dtype the op
   takes. Bool sums are ORs (as PyTorch's), AVG needs a float dtype. */
#ifdef DEVTENSOR_MPI
static int dt__dist_is_bool(dt_dtype t) { return t == DT_BOOL; }
#endif
static dt_status dt__dist_check(const char *op, const dt_tensor *t) {
  dt_status s;
  if (!dt__dist_on) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: call dt_dist_init first (no process group yet)", op);
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  return DT_OK;
}

#ifdef DEVTENSOR_MPI
/* Waiting for a collective's request: MPI_Test in a loop, its cost growing with the wait.
   Two ranks that arrive together finish in a few microseconds, and Open MPI's nonblocking
   collectives progress only inside MPI_Test: a rank that sleeps delays every rank (a fixed
   2 ms sleep made single calls take milliseconds). So for DT__DIST_SPIN_US microseconds
   it polls with a pause instruction between tests (one core, briefly), then until
   DT__DIST_YIELD_US it yields the processor between tests (a rank sharing its core with
   another gets it at once), then it sleeps between tests, from DT__DIST_SLEEP_MIN_US
   doubling to DT__DIST_SLEEP_MAX_US, so a long wait (a slower rank, a straggler) costs
   about a thousand short wake-ups a second and answers within about a millisecond. The
   timeout is checked at every step. */
#ifndef DT__DIST_SPIN_US
#define DT__DIST_SPIN_US 100
#endif
#ifndef DT__DIST_YIELD_US
#define DT__DIST_YIELD_US 1000
#endif
#ifndef DT__DIST_SLEEP_MIN_US
#define DT__DIST_SLEEP_MIN_US 20
#endif
#ifndef DT__DIST_SLEEP_MAX_US
#define DT__DIST_SLEEP_MAX_US 1000
#endif
#if defined(_WIN32)
static void dt__dist_sleep_us(long us) { (void)us; dt__pause(64); } /* Sleep(1): Windows sleeps whole milliseconds */
#elif defined(__unix__) || defined(__unix) || defined(__APPLE__)
#include <sys/select.h>
static void dt__dist_sleep_us(long us) { /* select: microseconds, declared in every POSIX mode (nanosleep needs _POSIX_C_SOURCE) */
  struct timeval tv;
  tv.tv_sec = us / 1000000;
  tv.tv_usec = us % 1000000;
  (void)select(0, NULL, NULL, NULL, &tv);
}
#else
static void dt__dist_sleep_us(long us) { (void)us; dt__pause(0); }
#endif

/* Waits for req at most `limit` seconds from t0 (MPI_Wtime). */
static dt_status dt__dist_wait(const char *op, MPI_Request *req, double t0, double limit) {
  long sleep_us = DT__DIST_SLEEP_MIN_US;
  int done = 0, rc, k;
  for (;;) {
    double waited;
    if ((rc = MPI_Test(req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS) return dt__mpi_fail(op, "MPI_Test", rc);
    if (done) return DT_OK;
    waited = MPI_Wtime() - t0;
    if (waited > limit)
      /* the request stays pending: the communicator is unusable from here on, as after any
         failed collective; the program should end (mpirun then stops the other ranks) */
      return dt__fail(DT_ERR_BACKEND, "%s: rank %d waited %.0f s (DT_DIST_TIMEOUT) for the other ranks to reach this "
                      "collective; a rank has failed or is in another call. The process group is unusable now: end the program",
                      op, dt__dist_rank_v, limit);
    if (waited < DT__DIST_SPIN_US * 1e-6) {
      for (k = 0; k < 16; k++) DT__CPU_RELAX();
    } else if (waited < DT__DIST_YIELD_US * 1e-6) {
      dt__pause(0);
    } else {
      dt__dist_sleep_us(sleep_us);
      if (sleep_us < DT__DIST_SLEEP_MAX_US) sleep_us = 2 * sleep_us < DT__DIST_SLEEP_MAX_US ? 2 * sleep_us : DT__DIST_SLEEP_MAX_US;
    }
  }
}

/* Every rank learns the largest and smallest of each of the n (<= 8) values; waits at
   most DT_DIST_TIMEOUT seconds for the others. */
static dt_status dt__dist_agree(const char *op, const int64_t *v, int n, int64_t *mx, int64_t *mn) {
  int64_t buf[16];
  MPI_Request req;
  long timeout = dt__env_long("DT_DIST_TIMEOUT");
  double t0, limit = timeout > 0 ? (double)timeout : 300.0;
  int i, rc;
  dt_status s;
  for (i = 0; i < n; i++) { buf[i] = v[i]; buf[n + i] = v[i] == INT64_MIN ? INT64_MAX : -v[i]; }
  t0 = MPI_Wtime();
  if ((rc = MPI_Iallreduce(MPI_IN_PLACE, buf, 2 * n, MPI_INT64_T, MPI_MAX, dt__dist_comm, &req)) != MPI_SUCCESS)
    return dt__mpi_fail(op, "MPI_Iallreduce", rc);
  if ((s = dt__dist_wait(op, &req, t0, limit)) != DT_OK) return s;
  for (i = 0; i < n; i++) { mx[i] = buf[i]; mn[i] = -buf[n + i]; }
  return DT_OK;
}

static MPI_Datatype dt__mpi_type(dt_dtype t) {
  switch (t) {
    case DT_F32: return MPI_FLOAT;
    case DT_F64: return MPI_DOUBLE;
    case DT_I32: return MPI_INT32_T;
    case DT_I64: return MPI_INT64_T;
    case DT_U8: case DT_BOOL: return MPI_UINT8_T; /* bools are 0 or 1: MAX is OR, MIN is AND */
    case DT_F16: case DT_BF16: break; /* reduced as float32 (dt__dist_all_reduce_half), broadcast as bytes */
  }
  return MPI_BYTE; /* not reached: the dtype was checked */
}
#endif

/* What every rank must agree on before a collective moves data; `ready` 0: this rank could not
   get the host memory it needs (every rank refuses then, and none waits in MPI for it). */
static dt_status dt__dist_prelude(const char *op, const dt_tensor *t, int kind, int arg, int ready) {
#ifdef DEVTENSOR_MPI
  int64_t v[5], mx[5], mn[5];
  dt_status s;
  if (dt__dist_size_v == 1) return DT_OK;
  v[0] = kind; v[1] = t->numel; v[2] = (int64_t)t->dtype; v[3] = (int64_t)arg * 2 + (t->st->device.type == DT_CUDA);
  v[4] = ready != 0;
  if ((s = dt__dist_agree(op, v, 5, mx, mn)) != DT_OK) return s;
  if (mn[4] == 0) {
    if (!ready) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host for the float32 scratch (rank %d); nothing moved", op, dt__dist_rank_v);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host of another rank (its float32 scratch); nothing moved", op);
  }
  if (mx[0] != mn[0])
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the ranks are in different collectives (dt_all_reduce_ on some, dt_broadcast_ "
                    "on others): every rank calls the same collectives in the same order", op);
  if (mx[1] != mn[1])
    return dt__fail(DT_ERR_SHAPE, "%s: the ranks' tensors differ in size: from %lld to %lld elements (rank %d has %lld); "
                    "every rank passes a tensor of the same size", op, (long long)mn[1], (long long)mx[1], dt__dist_rank_v,
                    (long long)t->numel);
  if (mx[2] != mn[2])
    return dt__fail(DT_ERR_DTYPE, "%s: the ranks' tensors differ in dtype (rank %d has %s); every rank passes the same dtype",
                    op, dt__dist_rank_v, dt_dtype_name(t->dtype));
  if (mx[3] != mn[3]) {
    if ((mx[3] & 1) != (mn[3] & 1))
      return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: some ranks pass CPU tensors and others GPU tensors (rank %d's is on %s); "
                      "every rank's tensor is on dt_dist_device() or every rank's on the CPU", op, dt__dist_rank_v,
                      t->st->device.type == DT_CUDA ? "a GPU" : "the CPU");
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the ranks pass different %s (rank %d passes %s %d)", op,
                    kind == 1 ? "ops" : "roots", dt__dist_rank_v, kind == 1 ? "op" : "root", arg);
  }
  return DT_OK;
#else
  (void)op; (void)t; (void)kind; (void)arg; (void)ready;
  return DT_OK;
#endif
}

#if defined(DEVTENSOR_MPI) && defined(DEVTENSOR_CUDA)
/* A GPU tensor goes through this rank's NCCL communicator, on this rank's device only. */
static dt_status dt__dist_nccl_ready(const char *fn, const dt_tensor *t) {
  char d[48], e[48];
  if (!dt__dist_nccl)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: t is on %s, but this rank has no NCCL communicator (its device is %s; GPU "
                    "tensors need devtensor_cuda.cu compiled with -DDEVTENSOR_NCCL and -lnccl): dt_to the CPU and reduce there", fn,
                    dt_device_str(t->st->device, d, sizeof d), dt_device_str(dt__dist_dev, e, sizeof e));
  if (!dt_device_equal(t->st->device, dt__dist_dev))
    return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: t is on %s, but this rank's device is %s (dt_dist_device())", fn,
                    dt_device_str(t->st->device, d, sizeof d), dt_device_str(dt__dist_dev, e, sizeof e));
  return DT_OK;
}
#endif

#ifdef DEVTENSOR_MPI
/* Elements of a half tensor reduced per MPI call on the CPU: the float32 scratch's size. */
#ifndef DT__DIST_HALF_CHUNK
#define DT__DIST_HALF_CHUNK ((int64_t)1 << 20)
#endif

/* A float16 or bfloat16 CPU tensor all-reduced in float32, DT__DIST_HALF_CHUNK elements at a
   time through `scratch`: each chunk cast to float32, MPI_Allreduce in MPI_FLOAT, AVG's
   division in float32, then rounded once to the half dtype (to nearest even). Two ranks: the
   same bits as a sum (max, min) in the half dtype; more: one rounding where NCCL and Gloo
   round at each step. */
static dt_status dt__dist_all_reduce_half(const char *fn, dt_tensor *t, dt_reduce_op op, float *scratch) {
  const dt__backend *be = dt__be(t->st->device);
  MPI_Op mop = op == DT_REDUCE_MAX ? MPI_MAX : op == DT_REDUCE_MIN ? MPI_MIN : MPI_SUM;
  char *p = (char *)dt_data_ptr(t);
  int64_t at = 0;
  int rc;
  dt_status s;
  while (at < t->numel) {
    int64_t n = t->numel - at < DT__DIST_HALF_CHUNK ? t->numel - at : DT__DIST_HALF_CHUNK;
    char *h = p + (size_t)at * 2;
    if ((s = dt__run(fn, t->st->device, be->cast(0, t->dtype, DT_F32, n, h, scratch))) != DT_OK) return s;
    if ((rc = MPI_Allreduce(MPI_IN_PLACE, scratch, (int)n, MPI_FLOAT, mop, dt__dist_comm)) != MPI_SUCCESS)
      return dt__mpi_fail(fn, "MPI_Allreduce", rc);
    if (op == DT_REDUCE_AVG &&
        (s = dt__run(fn, t->st->device, be->unary(0, DT__U_AFFINE, DT_F32, n, scratch, scratch, 1.0 / (double)dt__dist_size_v, 0.0))) != DT_OK)
      return s;
    if ((s = dt__run(fn, t->st->device, be->cast(0, DT_F32, t->dtype, n, scratch, h))) != DT_OK) return s;
    at += n;
  }
  return DT_OK;
}
#endif

DTDEF dt_status dt_all_reduce_(dt_tensor *t, dt_reduce_op op) {
  const char *fn = "dt_all_reduce_";
  float *scratch = NULL;
  int need = 0;
  dt_status s;
  if ((s = dt__dist_check(fn, t)) != DT_OK) return s;
  if ((s = dt__inplace_check(fn, "t", t)) != DT_OK) return s;
  dt__bump(t); /* before: a collective that fails may have written part of t */
  if ((int)op < (int)DT_REDUCE_SUM || (int)op > (int)DT_REDUCE_MIN)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: unknown op %d (DT_REDUCE_SUM, _AVG, _MAX or _MIN)", fn, (int)op);
  if ((s = dt__check_dtype(fn, t->dtype)) != DT_OK) return s;
  if (op == DT_REDUCE_AVG && !dt__is_float(t->dtype) && !dt__is_half(t->dtype))
    return dt__fail(DT_ERR_DTYPE, "%s: DT_REDUCE_AVG needs a float dtype, t is %s (use DT_REDUCE_SUM, or dt_cast)", fn, dt_dtype_name(t->dtype));
  /* a half CPU tensor on several ranks: its float32 scratch before the ranks agree, so that a
     rank without the memory is known to every rank before any data moves */
#ifdef DEVTENSOR_MPI
  need = dt__dist_size_v > 1 && t->numel > 0 && dt__is_half(t->dtype) && t->st->device.type == DT_CPU;
  if (need) scratch = (float *)DT_MALLOC(sizeof(float) * (size_t)(t->numel < DT__DIST_HALF_CHUNK ? t->numel : DT__DIST_HALF_CHUNK));
#endif
  if ((s = dt__dist_prelude(fn, t, 1, (int)op, !need || scratch)) != DT_OK) {
    if (scratch) DT_FREE(scratch);
    return s;
  }
  /* one rank: the sum, mean, max and min of one value are that value */
  if (dt__dist_size_v == 1 || t->numel == 0) return DT_OK;
#ifdef DEVTENSOR_MPI
  if (scratch) {
    s = dt__dist_all_reduce_half(fn, t, op, scratch);
    DT_FREE(scratch);
    return s;
  }
  if (t->st->device.type == DT_CPU) {
    MPI_Op mop = op == DT_REDUCE_MAX ? MPI_MAX : op == DT_REDUCE_MIN ? MPI_MIN : MPI_SUM;
    char *p = (char *)dt_data_ptr(t);
    size_t es = dt_dtype_size(t->dtype);
    int64_t at = 0;
    int rc;
    if (dt__dist_is_bool(t->dtype) && op == DT_REDUCE_SUM) mop = MPI_MAX; /* a sum of bools is their OR (PyTorch's rule) */
    while (at < t->numel) {
      int64_t n = t->numel - at < (int64_t)(INT_MAX / 8) ? t->numel - at : (int64_t)(INT_MAX / 8);
      if ((rc = MPI_Allreduce(MPI_IN_PLACE, p + (size_t)at * es, (int)n, dt__mpi_type(t->dtype), mop, dt__dist_comm)) != MPI_SUCCESS)
        return dt__mpi_fail(fn, "MPI_Allreduce", rc);
      at += n;
    }
    if (op == DT_REDUCE_AVG)
      return dt__run(fn, t->st->device, dt__be(t->st->device)->unary(0, DT__U_AFFINE, t->dtype, t->numel, p, p,
                                                                       1.0 / (double)dt__dist_size_v, 0.0));
    return DT_OK;
  }
#ifdef DEVTENSOR_CUDA
  if ((s = dt__dist_nccl_ready(fn, t)) != DT_OK) return s;
  {
    void *ptr = dt_data_ptr(t);
    int o = (int)op;
    if (dt__dist_is_bool(t->dtype) && op == DT_REDUCE_SUM) o = (int)DT_REDUCE_MAX;
    return dt__run(fn, t->st->device, dt__cuda_backend()->dist_all_reduce(1, &dt__dist_nccl, &t->st->device.index, t->dtype,
                                                                         o, t->numel, &ptr));
  }
#endif
#endif
  return dt__fail(DT_ERR_UNSUPPORTED, "%s: no collective for tensors on this device in this build", fn);
}

DTDEF dt_status dt_broadcast_(dt_tensor *t, int root) {
  const char *fn = "dt_broadcast_";
  dt_status s;
  if ((s = dt__dist_check(fn, t)) != DT_OK) return s;
  if ((s = dt__inplace_check(fn, "t", t)) != DT_OK) return s;
  dt__bump(t); /* before: a collective that fails may have written part of t */
  if (root < 0 || root >= dt__dist_size_v) {
    if (dt__dist_size_v == 1) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: root %d is not a rank (the world has rank 0 only)", fn, root);
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: root %d is not a rank (the world has ranks 0 to %d)", fn, root, dt__dist_size_v - 1);
  }
  if ((s = dt__check_dtype(fn, t->dtype)) != DT_OK) return s;
  if ((s = dt__dist_prelude(fn, t, 2, root, 1)) != DT_OK) return s;
  if (dt__dist_size_v == 1 || t->numel == 0) return DT_OK;
#ifdef DEVTENSOR_MPI
  if (t->st->device.type == DT_CPU) {
    char *p = (char *)dt_data_ptr(t);
    size_t at = 0, nb = t->nbytes;
    int rc;
    while (at < nb) {
      size_t n = nb - at < (size_t)(INT_MAX / 2) ? nb - at : (size_t)(INT_MAX / 2);
      if ((rc = MPI_Bcast(p + at, (int)n, MPI_BYTE, root, dt__dist_comm)) != MPI_SUCCESS) return dt__mpi_fail(fn, "MPI_Bcast", rc);
      at += n;
    }
    return DT_OK;
  }
#ifdef DEVTENSOR_CUDA
  if ((s = dt__dist_nccl_ready(fn, t)) != DT_OK) return s;
  {
    void *ptr = dt_data_ptr(t);
    return dt__run(fn, t->st->device, dt__cuda_backend()->dist_broadcast(1, &dt__dist_nccl, &t->st->device.index, t->dtype,
                                                                        t->numel, &ptr, root));
  }
#endif
#endif
  return dt__fail(DT_ERR_UNSUPPORTED, "%s: no collective for tensors on this device in this build", fn);
}

/* ---- src/cpu/device.c ---- */
static DT__TLS char dt__cpu_err[256];

static const char *dt__cpu_last_error(void) { return dt__cpu_err; }

static int dt__cpu_device_count(char *why, size_t n) { (void)why; (void)n; return 1; }

/* Name, memory and cores from /proc on Linux; zeros elsewhere. */
static dt_status dt__cpu_device_info(int dev, dt_device_info *out) {
  (void)dev;
  snprintf(out->name, sizeof out->name, "cpu");
#ifdef __linux__
  {
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
      int named = 0;
      while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "processor", 9) == 0) out->multiprocessors++;
        if (!named && strncmp(line, "model name", 10) == 0) {
          const char *p = strchr(line, ':');
          size_t l;
          if (p) {
            for (p++; *p == ' ' || *p == '\t'; p++) {}
            l = strcspn(p, "\n");
            if (l >= sizeof out->name) l = sizeof out->name - 1;
            memcpy(out->name, p, l);
            out->name[l] = 0;
            named = 1;
          }
        }
      }
      fclose(f);
    }
    f = fopen("/proc/meminfo", "r");
    if (f) {
      while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) out->total_memory = (size_t)kb * 1024;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) out->free_memory = (size_t)kb * 1024;
      }
      fclose(f);
    }
  }
#endif
  return DT_OK;
}

/* ---- src/cpu/memory.c ---- */
/* Host memory for tensors comes from a caching allocator, as on the GPU (README, Memory):
   - a request is rounded up to a size class: 64 bytes at least, four classes per power of two
     (at most a quarter more than asked); from DT__CPU_HUGE (4 MiB) on, also to a multiple of 2 MiB;
   - blocks of DT__CPU_HUGE and more are mapped straight from the kernel on Linux (mmap), 2 MiB
     aligned, with madvise(MADV_HUGEPAGE): a fresh 64 MiB block faults in 32 huge pages instead of
     16384 small ones; smaller blocks, and every block elsewhere, come from DT_MALLOC;
   - a released block goes to its class's free list (linked through the block's first bytes) and
     the next request of that class takes it without asking the system; the cache holds at most
     DEVTENSOR_CPU_CACHE_MAX bytes (default 1 GiB; 0, or DEVTENSOR_CPU_NO_CACHE: no cache): a block that does not fit in it
     pushes out cached blocks of the largest classes first, or, larger than the cap itself, goes
     straight back to the system;
   - when the system refuses, the cache is given back and the request tried once more;
   - `allocated` counts the rounded sizes of live tensors; `reserved` every byte held: live
     tensors, the matmul's packing buffers while they are in use, and the cache;
   - with user-defined DT_MALLOC/DT_FREE, every block is one DT_MALLOC of the exact size, given back
     with DT_FREE on release: no rounding, no cache, no mmap (the user's allocator sees and decides
     everything); reserved == allocated + packing buffers in use.
   One spinlock (DT__ATOMIC_CAS) guards the lists and counters; no system call is made under it.
   Under AddressSanitizer the cache stays but mmap does not, and cached blocks are poisoned, so a
   use after release is still reported. */

#ifndef DEVTENSOR_CPU_CACHE_MAX
#define DEVTENSOR_CPU_CACHE_MAX ((size_t)1 << 30)
#endif
#define DT__CPU_HUGE ((size_t)4 << 20)
#define DT__CPU_PAGE2M ((size_t)2 << 20)
#define DT__CPU_NBINS 240

#if defined(__SANITIZE_ADDRESS__)
#define DT__CPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DT__CPU_ASAN 1
#endif
#endif
#ifndef DT__CPU_ASAN
#define DT__CPU_ASAN 0
#endif

#if defined(DT__HOST_DEFAULT_ALLOC) && !defined(DEVTENSOR_CPU_NO_CACHE)
#define DT__CPU_CACHE 1
#else
#define DT__CPU_CACHE 0
#endif

/* mmap + madvise(MADV_HUGEPAGE) for large blocks: Linux, on the architectures whose MAP_ANONYMOUS
   is 0x20 (ISO C modes hide it and madvise; their kernel values are used then). */
#if defined(DT__HOST_DEFAULT_ALLOC) && !DT__CPU_ASAN && !defined(DEVTENSOR_CPU_NO_MMAP) && defined(__linux__) && \
    (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || defined(__riscv) || \
     defined(__powerpc__) || defined(__s390__))
#define DT__CPU_MMAP 1
#include <sys/mman.h>
#ifdef MAP_ANONYMOUS
#define DT__CPU_MAP_ANON MAP_ANONYMOUS
#else
#define DT__CPU_MAP_ANON 0x20
#endif
#ifdef MADV_HUGEPAGE
#define DT__CPU_MADV_HUGEPAGE MADV_HUGEPAGE
#else /* madvise is hidden with MADV_HUGEPAGE (ISO C mode) */
#define DT__CPU_MADV_HUGEPAGE 14
#ifdef __cplusplus
extern "C" int madvise(void *addr, size_t len, int advice);
#else
extern int madvise(void *addr, size_t len, int advice);
#endif
#endif
#else
#define DT__CPU_MMAP 0
#endif

#if DT__CPU_ASAN && DT__CPU_CACHE
#ifdef __cplusplus
extern "C" {
#endif
void __asan_poison_memory_region(void const volatile *addr, size_t size);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#ifdef __cplusplus
}
#endif
#endif
/* Under AddressSanitizer a cached block of n bytes at p is unaddressable but for its first two
   words (the free list's link and the block's size); taken from the cache, addressable again. */
static inline void dt__cpu_poison(void *p, size_t n) {
#if DT__CPU_ASAN && DT__CPU_CACHE
  __asan_poison_memory_region((const char *)p + 2 * sizeof(size_t), n - 2 * sizeof(size_t));
#else
  (void)p; (void)n;
#endif
}
static inline void dt__cpu_unpoison(void *p, size_t n) {
#if DT__CPU_ASAN && DT__CPU_CACHE
  __asan_unpoison_memory_region(p, n);
#else
  (void)p; (void)n;
#endif
}

static int dt__cpu_lock_word;
static size_t dt__cpu_allocated, dt__cpu_peak, dt__cpu_scratch, dt__cpu_cached;
#if DT__CPU_CACHE
static void *dt__cpu_bins[DT__CPU_NBINS]; /* free blocks of each class, linked through their first word */
#endif

static void dt__cpu_lock(void) {
  dt__fork_guard();
  for (;;) {
    int expected = 0, spins = 0, waits = 0;
    if (DT__ATOMIC_CAS(&dt__cpu_lock_word, &expected, 1)) return;
    /* held for a few list operations: spin a little, then give the core to the holder (on a
       loaded machine it may be waiting for one) */
    while (DT__ATOMIC_LOAD(&dt__cpu_lock_word)) {
      if (++spins < 100) continue;
      dt__pause(waits);
      if (waits < 64) waits++;
    }
  }
}
static void dt__cpu_unlock(void) { DT__ATOMIC_STORE(&dt__cpu_lock_word, 0); }

/* fork() while another thread holds one of these locks would leave it held forever in the
   child (glibc's malloc, which the allocator's cache stands in front of, guards its own locks
   the same way): before a fork every lock is taken, in one order, and both processes give
   them back after it, so the child starts with every structure whole and every lock free. */
#if (defined(__unix__) || defined(__unix) || defined(__APPLE__)) && !defined(_WIN32)
#include <pthread.h>
static void dt__fork_prepare(void) { dt__lock(&dt__err_lock); dt__lock(&dt__rng_lock); dt__cpu_lock(); }
static void dt__fork_release(void) { dt__cpu_unlock(); dt__unlock(&dt__rng_lock); dt__unlock(&dt__err_lock); }
static int dt__fork_registered;
static void dt__fork_guard(void) {
  int expected = 0;
  if (DT__ATOMIC_LOAD(&dt__fork_registered)) return;
  if (DT__ATOMIC_CAS(&dt__fork_registered, &expected, 1) &&
      pthread_atfork(dt__fork_prepare, dt__fork_release, dt__fork_release) != 0)
    DT__ATOMIC_STORE(&dt__fork_registered, 0); /* not registered (out of memory): try again next time */
}
#else
static void dt__fork_guard(void) {}
#endif

/* The class of a request: its bin and rounded size; 0 when nbytes is too large to round. */
static int dt__cpu_class(size_t nbytes, size_t *rounded) {
#if DT__CPU_CACHE
  size_t r = nbytes < 64 ? 64 : nbytes, base, step, size;
  int e = 6;
  if (r > (SIZE_MAX >> 2)) { *rounded = 0; return 0; }
  while (((size_t)1 << (e + 1)) < r) e++;          /* 2^e < r <= 2^(e+1), or r == 64 */
  base = (size_t)1 << e;
  step = base >> 2;
  size = r <= base ? base : base + (r - base + step - 1) / step * step;
  if (size >= DT__CPU_HUGE) size = (size + DT__CPU_PAGE2M - 1) & ~(DT__CPU_PAGE2M - 1);
  *rounded = size;
  return (e - 6) * 4 + (int)((size - base + step - 1) / step); /* size's own class for 2 MiB roundings */
#else
  *rounded = nbytes ? nbytes : 1;
  return 0;
#endif
}

#if DT__CPU_MMAP
/* A large block's mapped size: whole 2 MiB pages (the cache's sizes already are; without the
   cache, a tensor's own byte count is not, and munmap of an unaligned tail fails). 0: too large. */
static size_t dt__cpu_map_size(size_t size) {
  if (size > SIZE_MAX - 2 * DT__CPU_PAGE2M) return 0;
  return (size + DT__CPU_PAGE2M - 1) & ~(DT__CPU_PAGE2M - 1);
}
#endif

static void *dt__cpu_sys_alloc(size_t size) {
#if DT__CPU_MMAP
  if (size >= DT__CPU_HUGE) {
    char *p;
    size_t head;
    if (!(size = dt__cpu_map_size(size))) return NULL;
    p = (char *)mmap(NULL, size + DT__CPU_PAGE2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | DT__CPU_MAP_ANON, -1, 0);
    if (p == (char *)MAP_FAILED) return NULL;
    head = (size_t)(-(uintptr_t)p & (DT__CPU_PAGE2M - 1)); /* to the next 2 MiB boundary */
    if (head) munmap(p, head);
    if (DT__CPU_PAGE2M - head) munmap(p + head + size, DT__CPU_PAGE2M - head);
    (void)madvise(p + head, size, DT__CPU_MADV_HUGEPAGE); /* advice only: without THP it changes nothing */
    return p + head;
  }
#endif
  return DT_MALLOC(size);
}

static void dt__cpu_sys_free(void *p, size_t size) {
#if DT__CPU_MMAP
  if (size >= DT__CPU_HUGE) {
    munmap(p, dt__cpu_map_size(size));
    return;
  }
#endif
  (void)size;
  DT_FREE(p);
}

#if DT__CPU_CACHE
/* Gives back a list of cached blocks (taken out under the lock), outside the lock. */
static void dt__cpu_release_list(void *list) {
  while (list) {
    void *next;
    size_t size;
    memcpy(&next, list, sizeof next);
    memcpy(&size, (char *)list + sizeof next, sizeof size);
    dt__cpu_sys_free(list, size);
    list = next;
  }
}

/* Takes blocks out of the cache, largest classes first, until at most keep bytes stay; returns them
   as a list (next pointer, then size, at the start of each). Under the lock. */
static void *dt__cpu_trim_locked(size_t keep) {
  void *out = NULL;
  int bin;
  for (bin = DT__CPU_NBINS - 1; bin >= 0 && dt__cpu_cached > keep; bin--)
    while (dt__cpu_bins[bin] && dt__cpu_cached > keep) {
      void *b = dt__cpu_bins[bin], *next;
      size_t size;
      dt__cpu_unpoison(b, 2 * sizeof(size_t));
      memcpy(&next, b, sizeof next);
      memcpy(&size, (char *)b + sizeof next, sizeof size);
      dt__cpu_unpoison(b, size);
      dt__cpu_bins[bin] = next;
      dt__cpu_cached -= size;
      memcpy(b, &out, sizeof out);
      out = b;
    }
  return out;
}
#endif

/* A block of at least nbytes (its rounded size in *rounded); NULL when the system has none. tensor:
   counted in `allocated` (else a packing buffer). */
static void *dt__cpu_block_get(size_t nbytes, int tensor, size_t *rounded) {
  size_t size;
  void *p = NULL;
  int bin = dt__cpu_class(nbytes, &size);
  if (size < nbytes) return NULL; /* too large to round */
#if !DT__CPU_CACHE
  (void)bin;
#else
  dt__cpu_lock();
  if ((p = dt__cpu_bins[bin]) != NULL) {
    void *next;
    dt__cpu_unpoison(p, size);
    memcpy(&next, p, sizeof next);
    dt__cpu_bins[bin] = next;
    dt__cpu_cached -= size;
  }
  dt__cpu_unlock();
#endif
  if (!p && !(p = dt__cpu_sys_alloc(size))) {
#if DT__CPU_CACHE
    void *list;
    dt__cpu_lock();
    list = dt__cpu_trim_locked(0);
    dt__cpu_unlock();
    if (list) {
      dt__cpu_release_list(list);
      p = dt__cpu_sys_alloc(size);
    }
#endif
    if (!p) return NULL;
  }
  dt__cpu_lock();
  if (tensor) {
    dt__cpu_allocated += size;
    if (dt__cpu_allocated > dt__cpu_peak) dt__cpu_peak = dt__cpu_allocated;
  } else dt__cpu_scratch += size;
  dt__cpu_unlock();
  *rounded = size;
  return p;
}

/* Back to the cache (or the system) a block dt__cpu_block_get gave for nbytes. */
static void dt__cpu_block_put(void *p, size_t nbytes, int tensor) {
  size_t size;
  int bin = dt__cpu_class(nbytes, &size);
  void *list = NULL;
  if (!p) return;
  dt__cpu_lock();
  if (tensor) dt__cpu_allocated -= size;
  else dt__cpu_scratch -= size;
#if DT__CPU_CACHE
  if (size <= DEVTENSOR_CPU_CACHE_MAX) {
    if (dt__cpu_cached + size > DEVTENSOR_CPU_CACHE_MAX) list = dt__cpu_trim_locked(DEVTENSOR_CPU_CACHE_MAX - size);
    memcpy(p, &dt__cpu_bins[bin], sizeof(void *));
    memcpy((char *)p + sizeof(void *), &size, sizeof size);
    dt__cpu_bins[bin] = p;
    dt__cpu_cached += size;
    dt__cpu_poison(p, size);
    p = NULL;
  }
#else
  (void)bin;
#endif
  dt__cpu_unlock();
#if DT__CPU_CACHE
  dt__cpu_release_list(list);
#else
  (void)list;
#endif
  if (p) dt__cpu_sys_free(p, size);
}

static dt_status dt__cpu_alloc(int dev, size_t nbytes, void **out) {
  size_t rounded;
  char b[32];
  (void)dev;
  if (!(*out = dt__cpu_block_get(nbytes, 1, &rounded))) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "out of memory on cpu: tried to allocate %s",
             dt__bytes_str((double)nbytes, b, sizeof b));
    return DT_ERR_OUT_OF_MEMORY;
  }
  return DT_OK;
}

static void dt__cpu_free(int dev, void *p, size_t nbytes) {
  (void)dev;
  dt__cpu_block_put(p, nbytes, 1);
}

static dt_status dt__cpu_memory_stats(int dev, dt_memory_stats *out) {
  (void)dev;
  dt__cpu_lock();
  out->allocated = dt__cpu_allocated;
  out->reserved = dt__cpu_allocated + dt__cpu_scratch + dt__cpu_cached;
  out->peak_allocated = dt__cpu_peak;
  dt__cpu_unlock();
  return DT_OK;
}

static dt_status dt__cpu_empty_cache(int dev) {
  (void)dev;
#if DT__CPU_CACHE
  {
    void *list;
    dt__cpu_lock();
    list = dt__cpu_trim_locked(0);
    dt__cpu_unlock();
    dt__cpu_release_list(list);
  }
#endif
  return DT_OK;
}

static dt_status dt__cpu_copy(int dst_dev, void *dst, int src_dev, const void *src, size_t nbytes) {
  (void)dst_dev; (void)src_dev;
  if (nbytes == 0) return DT_OK;
  if (!dst || !src) return DT_ERR_INVALID_ARGUMENT; /* callers check first; GCC -O3 -Wnonnull cannot tell */
  memmove(dst, src, nbytes);
  return DT_OK;
}

static dt_status dt__cpu_synchronize(int dev) { (void)dev; return DT_OK; }
static void *dt__cpu_stream(int dev) { (void)dev; return NULL; }

/* ---- src/cpu/threads.c ---- */
/* With -fopenmp (how a build asks for threads) big elementwise work and reductions are shared
   among a small pool of worker threads on pthreads, started once at the first big call:
   omp_get_max_threads() - 1 of them (OMP_NUM_THREADS is honoured). They are not OpenMP threads:
   libgomp may print "out of memory" and exit the process when it cannot make its team, and it
   spin-waits between regions, which costs a lot on a loaded machine. Here:
   - small work (fewer than two grains of elements) is a plain call, no lock, no thread wake-up;
   - if a worker cannot be started (no memory for its stack) the pool has fewer workers, down to
     none, and the work runs on the calling thread; once started, a dispatch allocates nothing;
   - idle workers spin briefly (DT__POOL_SPIN pause instructions) for the next job, then sleep
     on a condition variable; the caller takes chunks as the workers do and waits (the same
     short spin, then the condition variable) only for chunks a worker has taken, so a worker
     that does not get a core soon costs nothing but its share of the speed-up;
   - waking a sleeping worker costs the caller a system call (tens of microseconds on a VM whose
     idle vCPU halts), more than a job of a few chunks takes: such a small job wakes sleepers
     only every DT__POOL_WAKE_AFTER-th time (a worker still spinning joins it anyway); a worker
     that finds the job it woke for already done spins for the next one instead of sleeping again;
   - a long spin yields the core now and then: a busy machine can put a worker on the caller's
     core, where its spinning would take the time the caller needs;
   - the chunks are split into one contiguous range per thread, and each thread (the caller 0,
     worker i always i) starts on its own range, then takes chunks from the others' ranges; so
     the same part of the data goes to the same core call after call, and stays in that core's
     caches (a VM's two cores may sit on two L3s), while a thread that falls behind still has its
     range finished by the others;
   - one job at a time: a second thread that finds the pool busy runs its work itself;
   - a forked child runs everything on its one thread.
   Chunk boundaries depend on the size of the work only, never on the number of threads, so the
   results (sums included) are the same with any number of threads. */

/* fn(ctx, lo, hi) does items [lo, hi) of a job; fnw(ctx, lo, hi, w) too, w being the index
   (0 .. maxw-1) of the thread that runs it among the job's threads (the caller is 0), for work
   that needs a scratch buffer per thread (made before the job: a job allocates nothing). */
typedef void (*dt__task_fn)(void *ctx, int64_t lo, int64_t hi);
typedef void (*dt__task_w_fn)(void *ctx, int64_t lo, int64_t hi, int w);

#if defined(_OPENMP) && !defined(DEVTENSOR_NO_THREADS) && !defined(_WIN32)
#define DT__POOL 1
#include <omp.h>
#include <pthread.h>
#include <signal.h>

#define DT__POOL_MAX 63 /* workers */

typedef struct dt__pool_t {
  pthread_mutex_t mu;       /* guards everything below but next */
  pthread_cond_t work;      /* a job was opened */
  pthread_cond_t done;      /* busy fell to 0 */
  pthread_mutex_t dispatch; /* held by the thread whose job the pool runs */
  int nworkers;             /* started workers; 0: everything runs on the caller */
  unsigned gen;             /* job number */
  int open;                 /* workers may still join job gen */
  int busy;                 /* workers that joined job gen and have not finished */
  int joined, maxw;         /* threads in job gen (the caller included), the most it takes */
  int sleeping;             /* workers waiting on `work` */
  int lonely;               /* small jobs dispatched in a row without waking them */
  dt__task_fn fn;           /* one of fn, fnw */
  dt__task_w_fn fnw;
  void *ctx;
  int64_t n, grain, nranges;
  int64_t dispatches;       /* jobs that went to the pool (atomic; read by the tests) */
} dt__pool_t;

/* Thread r's range of chunks: next (atomic; taken by any thread) up to end. A cache line each. */
typedef struct dt__pool_range {
  int64_t next, end;
  char pad[48];
} dt__pool_range;
static dt__pool_range dt__pool_ranges[DT__POOL_MAX + 1];

static dt__pool_t dt__pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
                              PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0, 0, 0, 0};
static pthread_once_t dt__pool_once = PTHREAD_ONCE_INIT;

/* Spins before sleeping, in iterations of a pause instruction (a few to a few hundred cycles
   each, by processor): a training step's operations come a few microseconds apart, its serial
   parts (a small layer, the loss) take tens, and on a virtual machine a futex wake costs tens of
   microseconds, more than many of them take; a spin much shorter than DT__POOL_SPIN lets the
   workers fall asleep within each step. The spin yields the core (dt__pool_relax), so on a
   loaded machine it costs little. */
#ifndef DT__POOL_SPIN
#define DT__POOL_SPIN 10000
#endif
#ifndef DT__POOL_WAKE_CHUNKS
#define DT__POOL_WAKE_CHUNKS 8
#endif
#ifndef DT__POOL_WAKE_AFTER
#define DT__POOL_WAKE_AFTER 4
#endif

/* One turn of a spin-wait: a pause, and every DT__POOL_YIELD turns the core, in case the thread
   waited for shares it (a busy machine can put a worker on the caller's core, where its spinning
   would take the time the caller needs). */
#ifndef DT__POOL_YIELD
#define DT__POOL_YIELD 64
#endif
#ifndef DT__POOL_YIELD_AFTER
#define DT__POOL_YIELD_AFTER 256
#endif
static void dt__pool_relax(int spin) {
  DT__CPU_RELAX();
  if (spin >= DT__POOL_YIELD_AFTER && spin % DT__POOL_YIELD == DT__POOL_YIELD - 1) (void)sched_yield();
}

/* Runs chunks of the job until none is left: those of range `home` (mod nranges) first, then
   the other ranges' in turn. w: the thread's index in the job (for fnw). */
static void dt__pool_take(dt__task_fn fn, dt__task_w_fn fnw, void *ctx, int64_t n, int64_t grain, int64_t nranges,
                          int home, int w) {
  int64_t r;
  for (r = 0; r < nranges; r++) {
    dt__pool_range *rg = &dt__pool_ranges[(home + r) % nranges];
    const int64_t end = rg->end;
    int64_t c;
    while ((c = DT__ATOMIC_ADD(&rg->next, 1) - 1) < end) {
      int64_t lo = c * grain, hi = n - lo < grain ? n : lo + grain;
      if (fnw) fnw(ctx, lo, hi, w);
      else fn(ctx, lo, hi);
    }
  }
}

static void *dt__pool_worker(void *arg) {
  unsigned seen = 0;
  const int id = (int)(intptr_t)arg; /* 1 .. nworkers: this worker's range */
  for (;;) {
    dt__task_fn fn;
    dt__task_w_fn fnw;
    void *ctx;
    int64_t n, grain, nranges;
    int w, spin;
    for (spin = 0; spin < DT__POOL_SPIN && DT__ATOMIC_LOAD(&dt__pool.gen) == seen; spin++) dt__pool_relax(spin);
    pthread_mutex_lock(&dt__pool.mu);
    if (dt__pool.gen == seen) {
      dt__pool.sleeping++;
      while (dt__pool.gen == seen) pthread_cond_wait(&dt__pool.work, &dt__pool.mu);
      dt__pool.sleeping--;
    }
    seen = dt__pool.gen;
    if (!dt__pool.open || dt__pool.joined >= dt__pool.maxw) { /* missed it, or it has the threads it takes */
      pthread_mutex_unlock(&dt__pool.mu);
      continue;
    }
    w = dt__pool.joined++;
    DT__ATOMIC_ADD(&dt__pool.busy, 1);
    fn = dt__pool.fn; fnw = dt__pool.fnw; ctx = dt__pool.ctx;
    n = dt__pool.n; grain = dt__pool.grain; nranges = dt__pool.nranges;
    pthread_mutex_unlock(&dt__pool.mu);
    dt__pool_take(fn, fnw, ctx, n, grain, nranges, id, w);
    pthread_mutex_lock(&dt__pool.mu);
    if (DT__ATOMIC_ADD(&dt__pool.busy, -1) == 0) pthread_cond_signal(&dt__pool.done);
    pthread_mutex_unlock(&dt__pool.mu);
  }
  return NULL;
}

static void dt__pool_forked(void) { dt__pool.nworkers = 0; }

/* OMP_NUM_THREADS as read once, when the pool starts: LLVM's libomp sets up (allocates) a
   thread's OpenMP state the first time that thread asks, so asking on every call from every
   user thread could fail there, which libomp reports by exiting. */
static int dt__pool_nt;

static void dt__pool_start(void) {
  int nt = omp_get_max_threads(), i = 0;
  pthread_attr_t at;
  DT__ATOMIC_STORE(&dt__pool_nt, nt < 1 ? 1 : nt);
  if (nt > 1 && pthread_attr_init(&at) == 0) {
    /* workers start with every signal blocked, so that a signal the program handles (SIGINT,
       SIGALRM, ...) goes to one of its own threads, never into a kernel of the pool. Where the
       system headers declare no POSIX signal masks (clang -std=c99 without _POSIX_C_SOURCE), the
       workers take signals like any thread. */
#if defined(SIG_SETMASK) && (!defined(__GLIBC__) || defined(__USE_POSIX199506))
    sigset_t all, old;
    int masked = sigfillset(&all) == 0 && pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
#endif
    pthread_attr_setstacksize(&at, (size_t)1 << 19); /* the kernels need little stack */
    for (; i < nt - 1 && i < DT__POOL_MAX; i++) {
      pthread_t th;
      if (pthread_create(&th, &at, dt__pool_worker, (void *)(intptr_t)(i + 1)) != 0) break; /* fewer workers */
      pthread_detach(th);
    }
#if defined(SIG_SETMASK) && (!defined(__GLIBC__) || defined(__USE_POSIX199506))
    if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
    pthread_attr_destroy(&at);
  }
  if (i > 0) pthread_atfork(NULL, NULL, dt__pool_forked);
  DT__ATOMIC_STORE(&dt__pool.nworkers, i);
}

/* The threads a job may get (the caller and the started workers); starts the pool. */
static int dt__pool_threads(void) {
  pthread_once(&dt__pool_once, dt__pool_start);
  return DT__ATOMIC_LOAD(&dt__pool.nworkers) + 1;
}

/* The threads work is partitioned for (OMP_NUM_THREADS): not the pool's size, so that a
   partition, where it matters, does not depend on whether workers could be started. */
static int dt__cpu_threads(void) {
  pthread_once(&dt__pool_once, dt__pool_start);
  return DT__ATOMIC_LOAD(&dt__pool_nt);
}

/* fn (or fnw, with at most maxw threads) over [0, n) in chunks of grain items: on the pool when
   there are two chunks or more, workers and maxw > 1, else as one plain call on the caller. */
static void dt__par_run(int64_t n, int64_t grain, int maxw, dt__task_fn fn, dt__task_w_fn fnw, void *ctx) {
  if (n <= 0) return;
  if (n >= 2 * grain && maxw > 1) {
    const int64_t nchunks = (n + grain - 1) / grain;
    const int small = grain > 1 && nchunks < DT__POOL_WAKE_CHUNKS; /* a few chunks of elements */
    pthread_once(&dt__pool_once, dt__pool_start);
    if (DT__ATOMIC_LOAD(&dt__pool.nworkers) > 0 && pthread_mutex_trylock(&dt__pool.dispatch) == 0) {
      int wake = 0;
      int64_t nranges = DT__ATOMIC_LOAD(&dt__pool.nworkers) + 1, r; /* a range per thread that may join */
      if (nranges > maxw) nranges = maxw;
      if (nranges > nchunks) nranges = nchunks;
      DT__ATOMIC_ADD(&dt__pool.dispatches, 1);
      for (r = 0; r < nranges; r++) { /* read by the workers after they take the mutex */
        dt__pool_ranges[r].end = (r + 1) * nchunks / nranges;
        DT__ATOMIC_STORE(&dt__pool_ranges[r].next, r * nchunks / nranges);
      }
      pthread_mutex_lock(&dt__pool.mu);
      dt__pool.fn = fn; dt__pool.fnw = fnw; dt__pool.ctx = ctx;
      dt__pool.n = n; dt__pool.grain = grain; dt__pool.nranges = nranges;
      dt__pool.joined = 1; /* the caller is thread 0 */
      dt__pool.maxw = maxw;
      DT__ATOMIC_ADD(&dt__pool.gen, 1u); /* read unlocked by spinning workers */
      dt__pool.open = 1;
      if (dt__pool.sleeping == 0 || !small || ++dt__pool.lonely >= DT__POOL_WAKE_AFTER)
        dt__pool.lonely = 0, wake = 1;
      pthread_mutex_unlock(&dt__pool.mu);
      /* unlocked, so that a woken worker does not block on mu. Only for a job of big chunks (tasks,
         blocks) or of many: waking a sleeping thread costs the caller tens of microseconds on a VM,
         more than a few chunks take, and a worker still spinning joins without it. */
      if (wake) pthread_cond_broadcast(&dt__pool.work);
      dt__pool_take(fn, fnw, ctx, n, grain, nranges, 0, 0);
      pthread_mutex_lock(&dt__pool.mu);
      dt__pool.open = 0; /* every chunk is taken: late workers stay asleep */
      if (dt__pool.busy > 0) { /* a worker is finishing a chunk: spin a little, then sleep */
        int spin;
        pthread_mutex_unlock(&dt__pool.mu);
        for (spin = 0; spin < DT__POOL_SPIN && DT__ATOMIC_LOAD(&dt__pool.busy) > 0; spin++) dt__pool_relax(spin);
        pthread_mutex_lock(&dt__pool.mu);
        while (dt__pool.busy > 0) pthread_cond_wait(&dt__pool.done, &dt__pool.mu);
      }
      pthread_mutex_unlock(&dt__pool.mu);
      pthread_mutex_unlock(&dt__pool.dispatch);
      return;
    }
  }
  if (fnw) fnw(ctx, 0, n, 0);
  else fn(ctx, 0, n);
}
#else
#define DT__POOL 0
static int dt__pool_threads(void) { return 1; }
static int dt__cpu_threads(void) { return 1; }
static void dt__par_run(int64_t n, int64_t grain, int maxw, dt__task_fn fn, dt__task_w_fn fnw, void *ctx) {
  (void)grain; (void)maxw;
  if (n <= 0) return;
  if (fnw) fnw(ctx, 0, n, 0);
  else fn(ctx, 0, n);
}
#endif

static void dt__par_for(int64_t n, int64_t grain, dt__task_fn fn, void *ctx) {
  dt__par_run(n, grain, 1 << 30, fn, NULL, ctx); /* every thread the pool has */
}
/* As dt__par_for, on at most maxw threads, each chunk told its thread's index (below maxw). */
static void dt__par_for_w(int64_t n, int64_t grain, int maxw, dt__task_w_fn fnw, void *ctx) {
  dt__par_run(n, grain, maxw, NULL, fnw, ctx);
}

/* Grains (items per chunk): some ten microseconds of work each. */
#define DT__GRAIN_MEM 32768  /* memory-bound elementwise work: fill, add, cast, axpy */
#define DT__GRAIN_MATH 8192  /* exp, log, sqrt, random */

/* ---- src/cpu/elementwise.c ---- */
/* Typed kernels, chosen from small tables by dtype and operation. This part: the choice of
   variant and the scalar kernels; cpu/vmath.c and cpu/elementwise_vec.c: the vector kernels.
   The loops that matter most (F32/F64 add, sub, mul, div; F32 exp and log; fill; F32 <-> F64
   casts; sums and norms) are written with GCC/Clang vector types and compiled three times on
   x86 (GCC >= 6, Clang >= 5): for the baseline (16-byte vectors), AVX2 and AVX-512;
   dt__ew_isa() picks the widest one the CPU has, once, as the matmul does
   (DEVTENSOR_NO_CPU_DISPATCH: the baseline only).
   - add, sub, mul, div, fill and casts give the same bits in every variant (one IEEE operation
     per element; no FMA: the AVX2 variant is compiled without it, AVX-512's has no a*b+c);
   - F32 exp and log: polynomials (Cephes' expf and logf coefficients, after Cody-Waite range
     reduction) on the vectors, the same operations in every variant; arguments outside the
     polynomial's range (exp: x < -87 or x > 88, log: x not a positive normal, and inf, NaN)
     take libm's expf / logf. Error: at most 1 ulp (tests/test_vmath.c measures it against
     exp/log in double over a sweep of the floats and the edge cases);
   - sums and norms accumulate in double: sixteen partial sums per block of elements, the same
     in every variant, blocks combined in order. */

#if !defined(DEVTENSOR_NO_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__)) &&            \
    ((defined(__clang__) && __clang_major__ >= 5) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 6))
#define DT__EW_X86 1
#else
#define DT__EW_X86 0
#endif
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 9)
#define DT__EW_CONVERT(v, T) __builtin_convertvector(v, T)
#endif

enum { DT__EW_BASE = 0, DT__EW_AVX2 = 1, DT__EW_AVX512 = 2, DT__EW_NISA = 3 };

#if DT__EW_X86 /* implied by DT__GEMM_X86 (the same conditions and more) */
#include <cpuid.h>
/* Whether the operating system saves the register state in mask (XCR0 bits: 0x6 for the
   YMM registers, 0xE6 for the ZMM registers and opmasks) on a context switch. The CPU may
   have AVX-512 that the kernel has not enabled; older compilers' __builtin_cpu_supports
   does not always ask. */
static int dt__x86_xcr0_cached = -1; /* read once: CPUID traps to the hypervisor in a VM */
static int dt__x86_os_saves(unsigned mask) {
  int xcr0 = DT__ATOMIC_LOAD(&dt__x86_xcr0_cached);
  if (xcr0 < 0) {
    unsigned a, b, c, d, lo = 0, hi;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27))) { /* OSXSAVE, else no XGETBV */
      __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      (void)hi;
    }
    xcr0 = (int)(lo & 0xFFu);
    DT__ATOMIC_STORE(&dt__x86_xcr0_cached, xcr0);
  }
  return ((unsigned)xcr0 & mask) == mask;
}
static int dt__x86_has_avx2(void) { return __builtin_cpu_supports("avx2") && dt__x86_os_saves(0x6); }
/* unused where the gemm is built without vector kernels (-DDT__GEMM_VEC=0) */
__attribute__((unused)) static int dt__x86_has_avx2_fma(void) { return dt__x86_has_avx2() && __builtin_cpu_supports("fma"); }
static int dt__x86_has_avx512f(void) { return __builtin_cpu_supports("avx512f") && dt__x86_os_saves(0xE6); }
#endif

/* The widest variant this CPU runs, found once. */
static int dt__ew_isa_cached = -1;
static int dt__ew_isa(void) {
  int isa = DT__ATOMIC_LOAD(&dt__ew_isa_cached);
  if (isa < 0) {
    isa = DT__EW_BASE;
#if DT__EW_X86
    if (dt__x86_has_avx512f()) isa = DT__EW_AVX512;
    else if (dt__x86_has_avx2()) isa = DT__EW_AVX2;
#endif
    DT__ATOMIC_STORE(&dt__ew_isa_cached, isa);
  }
  return isa;
}

/* The variants' function attributes, and their vector types: vf, vi, vd, vl: float, uint32_t,
   double, uint64_t in the variant's width; vh: float in half of it (as many lanes as vd). */
#define DT__TARGET_BASE
typedef float dt__vf_base __attribute__((vector_size(16)));
typedef uint32_t dt__vi_base __attribute__((vector_size(16)));
typedef double dt__vd_base __attribute__((vector_size(16)));
typedef uint64_t dt__vl_base __attribute__((vector_size(16)));
typedef float dt__vh_base __attribute__((vector_size(8)));
#if DT__EW_X86
#define DT__TARGET_AVX2 __attribute__((target("avx2")))
typedef float dt__vf_avx2 __attribute__((vector_size(32)));
typedef uint32_t dt__vi_avx2 __attribute__((vector_size(32)));
typedef double dt__vd_avx2 __attribute__((vector_size(32)));
typedef uint64_t dt__vl_avx2 __attribute__((vector_size(32)));
typedef float dt__vh_avx2 __attribute__((vector_size(16)));
#define DT__TARGET_AVX512 __attribute__((target("avx512f")))
typedef float dt__vf_avx512 __attribute__((vector_size(64)));
typedef uint32_t dt__vi_avx512 __attribute__((vector_size(64)));
typedef double dt__vd_avx512 __attribute__((vector_size(64)));
typedef uint64_t dt__vl_avx512 __attribute__((vector_size(64)));
typedef float dt__vh_avx512 __attribute__((vector_size(32)));
#endif

/* y[i] = a[i * sa] op b[i * sb], i < n */
typedef void (*dt__zip_fn)(int64_t n, const void *a, int64_t sa, const void *b, int64_t sb, void *y);
/* y[i] = f(x[i]), i < n; p0, p1: the operation's parameters */
typedef void (*dt__map_fn)(int64_t n, const void *x, void *y, double p0, double p1);
/* y[i] = x[i] converted, i < n */
typedef void (*dt__conv_fn)(int64_t n, const void *x, void *y);
/* the 16 partial sums (of squares when sq) of x[0..n) in acc: acc[j] gets the elements i % 16 == j */
typedef void (*dt__sum16_fn)(int64_t n, const void *x, int sq, double acc[16]);
/* y[i] = v, i < n */
typedef void (*dt__fill_fn)(int64_t n, const void *v, void *y);

/* Scalar kernels: EXPR of u (from a) and w (from b). */
#define DT__EW_ZIP(NAME, T, EXPR)                                                                   \
  static void NAME(int64_t n, const void *a_, int64_t sa, const void *b_, int64_t sb, void *y_) {   \
    const T *a = (const T *)a_, *b = (const T *)b_;                                                 \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    if (sa == 1 && sb == 1)                                                                         \
      for (i = 0; i < n; i++) { T u = a[i], w = b[i]; (void)w; y[i] = (T)(EXPR); }                  \
    else if (sa == 1 && sb == 0) {                                                                  \
      T w = b[0]; (void)w;                                                                          \
      for (i = 0; i < n; i++) { T u = a[i]; y[i] = (T)(EXPR); }                                     \
    } else if (sa == 0 && sb == 1) {                                                                \
      T u = a[0];                                                                                   \
      for (i = 0; i < n; i++) { T w = b[i]; (void)w; y[i] = (T)(EXPR); }                            \
    } else                                                                                          \
      for (i = 0; i < n; i++) { T u = a[i * sa], w = b[i * sb]; (void)w; y[i] = (T)(EXPR); }        \
  }
DT__EW_ZIP(dt__zip_copy_f32, float, u)
DT__EW_ZIP(dt__zip_relu_grad_f64, double, w > 0.0 ? u : 0.0)
DT__EW_ZIP(dt__zip_sigmoid_grad_f64, double, u * (1.0 - w) * w)
DT__EW_ZIP(dt__zip_tanh_grad_f64, double, u * (1.0 - w * w))
DT__EW_ZIP(dt__zip_copy_f64, double, u)
/* integers: wrapping arithmetic through unsigned, as PyTorch's */
DT__EW_ZIP(dt__zip_add_i32, int32_t, (uint32_t)u + (uint32_t)w)
DT__EW_ZIP(dt__zip_sub_i32, int32_t, (uint32_t)u - (uint32_t)w)
DT__EW_ZIP(dt__zip_mul_i32, int32_t, (uint32_t)u * (uint32_t)w)
DT__EW_ZIP(dt__zip_copy_i32, int32_t, u)
DT__EW_ZIP(dt__zip_add_i64, int64_t, (uint64_t)u + (uint64_t)w)
DT__EW_ZIP(dt__zip_sub_i64, int64_t, (uint64_t)u - (uint64_t)w)
DT__EW_ZIP(dt__zip_mul_i64, int64_t, (uint64_t)u * (uint64_t)w)
DT__EW_ZIP(dt__zip_copy_i64, int64_t, u)

#define DT__EW_MAP(NAME, T, EXPR)                                                                   \
  static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                     \
    const T *x = (const T *)x_;                                                                     \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    (void)p0; (void)p1;                                                                             \
    for (i = 0; i < n; i++) { T v = x[i]; y[i] = (T)(EXPR); }                                       \
  }
DT__EW_MAP(dt__map_sqrt_f32, float, sqrtf(v))
DT__EW_MAP(dt__map_neg_f32, float, -v)
DT__EW_MAP(dt__map_exp_f64, double, exp(v))
DT__EW_MAP(dt__map_log_f64, double, log(v))
DT__EW_MAP(dt__map_sqrt_f64, double, sqrt(v))
DT__EW_MAP(dt__map_neg_f64, double, -v)
DT__EW_MAP(dt__map_relu_f64, double, v > 0.0 ? v : (v != v ? v : 0.0))
DT__EW_MAP(dt__map_affine_f64, double, p0 * v + p1)
/* sin, cos, erf, gelu (the erf form, as torch's approximate='none') and its derivative, pow,
   clamp (NaN in x or a bound gives NaN; lo > hi gives hi, as torch.clamp) */
DT__EW_MAP(dt__map_sin_f32, float, sinf(v))
DT__EW_MAP(dt__map_cos_f32, float, cosf(v))
DT__EW_MAP(dt__map_erf_f32, float, erff(v))
DT__EW_MAP(dt__map_gelu_f32, float, v * 0.5f * (1.0f + erff(v * 0.70710678118654752f)))
DT__EW_MAP(dt__map_gelu_grad_f32, float, 0.5f * (1.0f + erff(v * 0.70710678118654752f)) + v * 0.39894228040143268f * expf(-0.5f * v * v))
DT__EW_MAP(dt__map_pow_f32, float, powf(v, (float)p0))
DT__EW_MAP(dt__map_sin_f64, double, sin(v))
DT__EW_MAP(dt__map_cos_f64, double, cos(v))
DT__EW_MAP(dt__map_erf_f64, double, erf(v))
DT__EW_MAP(dt__map_gelu_f64, double, v * 0.5 * (1.0 + erf(v * 0.70710678118654752)))
DT__EW_MAP(dt__map_gelu_grad_f64, double, 0.5 * (1.0 + erf(v * 0.70710678118654752)) + v * 0.39894228040143268 * exp(-0.5 * v * v))
DT__EW_MAP(dt__map_pow_f64, double, pow(v, p0))
#define DT__EW_CLAMP(NAME, T)                                                                       \
  static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                     \
    const T *x = (const T *)x_, lo = (T)p0, hi = (T)p1;                                             \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    for (i = 0; i < n; i++) {                                                                       \
      T r = x[i];                                                                                   \
      if (r < lo) r = lo;                                                                           \
      if (r > hi) r = hi;                                                                           \
      if (lo != lo) r = lo;                                                                         \
      if (hi != hi) r = hi;                                                                         \
      y[i] = r;                                                                                     \
    }                                                                                               \
  }
DT__EW_CLAMP(dt__map_clamp_f32, float)
DT__EW_CLAMP(dt__map_clamp_f64, double)
/* softplus: max(x, 0) + log1p(exp(-|x|)), no overflow for any x; NaN stays NaN */
DT__EW_MAP(dt__map_softplus_f32, float, (v > 0.0f ? v : 0.0f) + log1pf(expf(-fabsf(v))))
DT__EW_MAP(dt__map_softplus_f64, double, (v > 0.0 ? v : 0.0) + log1p(exp(-fabs(v))))
/* integer affine and neg (a = -1, b = 0): wrapping */
DT__EW_MAP(dt__map_neg_i32, int32_t, (int32_t)((uint32_t)0 - (uint32_t)v))
DT__EW_MAP(dt__map_neg_i64, int64_t, (int64_t)((uint64_t)0 - (uint64_t)v))

#define DT__EW_AFFINE_INT(NAME, T, U)                                                               \
  static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                     \
    const T *x = (const T *)x_;                                                                     \
    const U a = (U)dt__f2i64(p0), b = (U)dt__f2i64(p1);                                             \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    for (i = 0; i < n; i++) y[i] = (T)(a * (U)x[i] + b);                                            \
  }
DT__EW_AFFINE_INT(dt__map_affine_i32, int32_t, uint32_t)
DT__EW_AFFINE_INT(dt__map_affine_i64, int64_t, uint64_t)

static void dt__map_affine_f32(int64_t n, const void *x_, void *y_, double p0, double p1) {
  const float *x = (const float *)x_, a = (float)p0, b = (float)p1;
  float *y = (float *)y_;
  int64_t i;
  for (i = 0; i < n; i++) y[i] = a * x[i] + b;
}

/* y += alpha * x on [0, n) 32 bytes at a time where the compiler has vector extensions, the same
   operations per element as the scalar loop in DT__EW_AXPY; returns where that loop goes on. The
   scalar loop alone waits on y's elements in turn (an SGD step, dt_axpy_, is this loop). */
#if defined(__GNUC__) || defined(__clang__)
#define DT__EW_DEFINE_AXPY_VEC(NAME, T)                                                             \
  static int64_t NAME(int64_t n, const T *x, T *y, T al) {                                          \
    typedef T dt__av __attribute__((vector_size(32)));                                              \
    enum { W = 32 / sizeof(T) };                                                                    \
    const dt__av vz = {0}, va = vz + al;                                                            \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      dt__av xv, yv;                                                                                \
      memcpy(&xv, x + i, sizeof xv);                                                                \
      memcpy(&yv, y + i, sizeof yv);                                                                \
      yv = yv + va * xv;                                                                            \
      memcpy(y + i, &yv, sizeof yv);                                                                \
    }                                                                                               \
    return i;                                                                                       \
  }
#else
#define DT__EW_DEFINE_AXPY_VEC(NAME, T)                                                             \
  static int64_t NAME(int64_t n, const T *x, T *y, T al) {                                          \
    (void)n; (void)x; (void)y; (void)al;                                                            \
    return 0;                                                                                       \
  }
#endif
DT__EW_DEFINE_AXPY_VEC(dt__axpy_vec_f32, float)
DT__EW_DEFINE_AXPY_VEC(dt__axpy_vec_f64, double)

/* axpy: y += p0 * x, p0 rounded to T (the map that reads y) */
#define DT__EW_AXPY(NAME, T, VEC)                                                                   \
  static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                     \
    const T *x = (const T *)x_, al = (T)p0;                                                         \
    T *y = (T *)y_;                                                                                 \
    int64_t i;                                                                                      \
    (void)p1;                                                                                       \
    for (i = VEC(n, x, y, al); i < n; i++) y[i] += al * x[i];                                       \
  }
DT__EW_AXPY(dt__map_axpy_f32, float, dt__axpy_vec_f32)
DT__EW_AXPY(dt__map_axpy_f64, double, dt__axpy_vec_f64)
#undef DT__EW_AXPY

#define DT__EW_CONV(NAME, S, D, EXPR)                                                               \
  static void NAME(int64_t n, const void *x_, void *y_) {                                           \
    const S *x = (const S *)x_;                                                                     \
    D *y = (D *)y_;                                                                                 \
    int64_t i;                                                                                      \
    for (i = 0; i < n; i++) { S v = x[i]; y[i] = EXPR; }                                            \
  }
DT__EW_CONV(dt__conv_f32_i32, float, int32_t, dt__f2i32(v))
DT__EW_CONV(dt__conv_f32_i64, float, int64_t, dt__f2i64(v))
DT__EW_CONV(dt__conv_f64_i32, double, int32_t, dt__f2i32(v))
DT__EW_CONV(dt__conv_f64_i64, double, int64_t, dt__f2i64(v))
DT__EW_CONV(dt__conv_i32_f32, int32_t, float, (float)v)
DT__EW_CONV(dt__conv_i32_f64, int32_t, double, (double)v)
DT__EW_CONV(dt__conv_i32_i64, int32_t, int64_t, (int64_t)v)
DT__EW_CONV(dt__conv_i64_f32, int64_t, float, (float)v)
DT__EW_CONV(dt__conv_i64_f64, int64_t, double, (double)v)
DT__EW_CONV(dt__conv_i64_i32, int64_t, int32_t, (int32_t)(uint32_t)v) /* the low 32 bits, as PyTorch */

#define DT__EW_FILL(NAME, T)                                                                        \
  static void NAME(int64_t n, const void *v, void *y_) {                                            \
    T x, *y = (T *)y_;                                                                              \
    int64_t i;                                                                                      \
    memcpy(&x, v, sizeof x);                                                                        \
    for (i = 0; i < n; i++) y[i] = x;                                                               \
  }
DT__EW_FILL(dt__fill_32, uint32_t)
DT__EW_FILL(dt__fill_64, uint64_t)

/* ---- src/cpu/vmath.c ---- */
/* F32 exp, log and sigmoid on vectors (see cpu/elementwise.c): the polynomials as functions of one
   vector, and the kernels that run them over an array, falling back on libm lane by lane;
   each written once by a macro and instantiated per variant under its full name. */

/* exp and log compute the same operations in every variant: no multiply-add is fused, though an
   AVX-512 target implies FMA (Clang: the pragma DT__NO_CONTRACT in the body; GCC in a GNU mode:
   this attribute; GCC in ISO C mode does not fuse anyway). */
#if defined(__GNUC__) && !defined(__clang__)
#define DT__EW_NOFMA __attribute__((optimize("fp-contract=off")))
#else
#define DT__EW_NOFMA
#endif

/* expf on a vector of floats in the polynomial's range (-87 <= x <= 88): exp(x) = 2^k exp(r),
   k = round(x / ln 2), r = x - k ln 2 in two parts (k * 0.693359375 is exact). */
#define DT__EW_VEXPF(NAME, ATTR, VF, VI)                                                            \
  ATTR DT__EW_NOFMA static VF NAME(VF x) {                                                          \
    DT__NO_CONTRACT                                                                                 \
    VF t = x * 1.44269504088896341f + 12582912.0f, k = t - 12582912.0f, r, z, p;                    \
    VI e;                                                                                           \
    memcpy(&e, &t, sizeof e);                                                                       \
    e = (e - 0x4B400000u + 127u) << 23; /* 2^k */                                                   \
    r = x - k * 0.693359375f;                                                                       \
    r = r + k * 2.12194440e-4f;                                                                     \
    z = r * r;                                                                                      \
    p = r * 1.9875691500e-4f + 1.3981999507e-3f;                                                    \
    p = p * r + 8.3334519073e-3f;                                                                   \
    p = p * r + 4.1665795894e-2f;                                                                   \
    p = p * r + 1.6666665459e-1f;                                                                   \
    p = p * r + 5.0000001201e-1f;                                                                   \
    p = p * z + r;                                                                                  \
    p = p + 1.0f;                                                                                   \
    memcpy(&t, &e, sizeof t);                                                                       \
    return p * t;                                                                                   \
  }

/* logf on a vector of positive normal floats: x = 2^e m, m in [sqrt(1/2), sqrt(2)),
   log x = e ln 2 + log1p(m - 1). */
#define DT__EW_VLOGF(NAME, ATTR, VF, VI)                                                            \
  ATTR DT__EW_NOFMA static VF NAME(VF x) {                                                          \
    DT__NO_CONTRACT                                                                                 \
    const VF vz = {0}, sqrt2 = vz + 1.41421356f;                                                    \
    VI b, e, big, hb;                                                                               \
    VF m, h, f, z, p, ef;                                                                           \
    memcpy(&b, &x, sizeof b);                                                                       \
    e = (b >> 23) - 127u;                                                                           \
    b = (b & 0x007fffffu) | 0x3f800000u;                                                            \
    memcpy(&m, &b, sizeof m); /* [1, 2) */                                                          \
    h = m * 0.5f;                                                                                   \
    big = (VI)(m > sqrt2); /* -1 where m is halved */                                               \
    memcpy(&hb, &h, sizeof hb);                                                                     \
    b = (b & ~big) | (hb & big);                                                                    \
    memcpy(&m, &b, sizeof m);                                                                       \
    e = e - big;                                                                                    \
    e = e + 0x4B400000u; /* e as a float: 1.5 * 2^23 + e, less 1.5 * 2^23 */                        \
    memcpy(&ef, &e, sizeof ef);                                                                     \
    ef = ef - 12582912.0f;                                                                          \
    f = m - 1.0f;                                                                                   \
    z = f * f;                                                                                      \
    p = f * 7.0376836292e-2f - 1.1514610310e-1f;                                                    \
    p = p * f + 1.1676998740e-1f;                                                                   \
    p = p * f - 1.2420140846e-1f;                                                                   \
    p = p * f + 1.4249322787e-1f;                                                                   \
    p = p * f - 1.6668057665e-1f;                                                                   \
    p = p * f + 2.0000714765e-1f;                                                                   \
    p = p * f - 2.4999993993e-1f;                                                                   \
    p = p * f + 3.3333331174e-1f;                                                                   \
    p = p * f;                                                                                      \
    p = p * z;                                                                                      \
    p = p - ef * 2.12194440e-4f;                                                                    \
    p = p - z * 0.5f;                                                                               \
    p = f + p;                                                                                      \
    return p + ef * 0.693359375f;                                                                   \
  }

/* sigmoid through e = exp(-|v|) in (0, 1]: no overflow for any v */
static float dt__sigmoidf(float v) {
  float e = expf(-fabsf(v));
  return v >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
/* the same on a vector of floats with |x| <= 87, through the vector exp */
#define DT__EW_VSIGMOIDF(NAME, ATTR, VF, VI, VEXPF)                                                 \
  ATTR DT__EW_NOFMA static VF NAME(VF x) {                                                          \
    DT__NO_CONTRACT                                                                                 \
    const VF vz = {0};                                                                              \
    VI b, neg;                                                                                      \
    VF e, d, hi, lo;                                                                                \
    memcpy(&b, &x, sizeof b);                                                                       \
    b = b | 0x80000000u; /* -|x| */                                                                 \
    memcpy(&e, &b, sizeof e);                                                                       \
    e = VEXPF(e);                                                                                   \
    d = e + 1.0f;                                                                                   \
    hi = (vz + 1.0f) / d;                                                                           \
    lo = e / d;                                                                                     \
    neg = (VI)(x < vz);                                                                             \
    b = ((VI)hi & ~neg) | ((VI)lo & neg);                                                           \
    memcpy(&e, &b, sizeof e);                                                                       \
    return e;                                                                                       \
  }

/* y = FN(x) on whole vectors (the last one padded), lanes outside [LO, HI] (and NaN) from LIBM. */
#define DT__EW_VMATH(NAME, ATTR, VF, VI, FN, LO, HI, LIBM)                                          \
  ATTR static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                \
    enum { W = sizeof(VF) / sizeof(float) };                                                        \
    const float *x = (const float *)x_;                                                             \
    float *y = (float *)y_;                                                                         \
    const VF vz = {0}, lo = vz + (LO), hi = vz + (HI);                                              \
    int64_t i;                                                                                      \
    int j;                                                                                          \
    (void)p0; (void)p1;                                                                             \
    for (i = 0; i < n; i += W) {                                                                    \
      float in[W];                                                                                  \
      uint32_t ok[W], all = 0xffffffffu;                                                            \
      const int m = n - i < W ? (int)(n - i) : W;                                                   \
      VF v;                                                                                         \
      VI k;                                                                                         \
      if (m == W) memcpy(&v, x + i, sizeof v);                                                      \
      else { /* the last, partial vector: padded with 1 */                                          \
        for (j = 0; j < W; j++) in[j] = j < m ? x[i + j] : 1.0f;                                    \
        memcpy(&v, in, sizeof v);                                                                   \
      }                                                                                             \
      k = (VI)(v >= lo) & (VI)(v <= hi);                                                            \
      memcpy(ok, &k, sizeof ok);                                                                    \
      for (j = 0; j < W; j++) all &= ok[j];                                                         \
      memcpy(in, &v, sizeof v);                                                                     \
      v = FN(v);                                                                                    \
      if (all != 0xffffffffu) {                                                                     \
        float out[W];                                                                               \
        memcpy(out, &v, sizeof v);                                                                  \
        for (j = 0; j < W; j++)                                                                     \
          if (!ok[j]) out[j] = LIBM(in[j]);                                                         \
        memcpy(&v, out, sizeof v);                                                                  \
      }                                                                                             \
      if (m == W) memcpy(y + i, &v, sizeof v);                                                      \
      else {                                                                                        \
        float out[W];                                                                               \
        memcpy(out, &v, sizeof v);                                                                  \
        for (j = 0; j < m; j++) y[i + j] = out[j];                                                  \
      }                                                                                             \
    }                                                                                               \
  }


DT__EW_VEXPF(dt__vexpf_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base)
DT__EW_VLOGF(dt__vlogf_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base)
DT__EW_VMATH(dt__exp_f32_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base, dt__vexpf_base, -87.0f, 88.0f, expf)
DT__EW_VMATH(dt__log_f32_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base, dt__vlogf_base, FLT_MIN, FLT_MAX, logf)
DT__EW_VSIGMOIDF(dt__vsigmoidf_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base, dt__vexpf_base)
DT__EW_VMATH(dt__sigmoid_f32_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base, dt__vsigmoidf_base, -87.0f, 87.0f, dt__sigmoidf)
#if DT__EW_X86
DT__EW_VEXPF(dt__vexpf_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2)
DT__EW_VLOGF(dt__vlogf_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2)
DT__EW_VMATH(dt__exp_f32_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2, dt__vexpf_avx2, -87.0f, 88.0f, expf)
DT__EW_VMATH(dt__log_f32_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2, dt__vlogf_avx2, FLT_MIN, FLT_MAX, logf)
DT__EW_VSIGMOIDF(dt__vsigmoidf_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2, dt__vexpf_avx2)
DT__EW_VMATH(dt__sigmoid_f32_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2, dt__vsigmoidf_avx2, -87.0f, 87.0f, dt__sigmoidf)
DT__EW_VEXPF(dt__vexpf_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512)
DT__EW_VLOGF(dt__vlogf_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512)
DT__EW_VMATH(dt__exp_f32_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512, dt__vexpf_avx512, -87.0f, 88.0f, expf)
DT__EW_VMATH(dt__log_f32_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512, dt__vlogf_avx512, FLT_MIN, FLT_MAX, logf)
DT__EW_VSIGMOIDF(dt__vsigmoidf_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512, dt__vexpf_avx512)
DT__EW_VMATH(dt__sigmoid_f32_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512, dt__vsigmoidf_avx512, -87.0f, 87.0f, dt__sigmoidf)
#endif

/* ---- src/cpu/elementwise_vec.c ---- */
/* The vector kernels but exp and log (cpu/vmath.c): add, sub, mul, div (F32, F64), relu and
   its gradient (F32), fill, sums (cpu/reduce.c) and F32 <-> F64 casts, each written once by a
   macro and instantiated per variant under its full name, and the table of each variant's
   kernels. Vectors move to and from memory through memcpy (one unaligned load or store). */

/* y = f(a, b), a dt__zip_fn: VEXPR of vectors u, w (vz: zeros), SEXPR of a[i * sa], b[i * sb];
   vectors where both are contiguous, or one side a broadcast scalar (sa or sb 0) */
#define DT__EW_VZIP(NAME, ATTR, T, V, VEXPR, SEXPR)                                                 \
  ATTR static void NAME(int64_t n, const void *a_, int64_t sa, const void *b_, int64_t sb, void *y_) { \
    enum { W = sizeof(V) / sizeof(T) };                                                             \
    const T *a = (const T *)a_, *b = (const T *)b_;                                                 \
    T *y = (T *)y_;                                                                                 \
    int64_t i = 0;                                                                                  \
    if (n > 0 && (sa | sb) == 1 && (sa & ~(int64_t)1) == 0 && (sb & ~(int64_t)1) == 0) {            \
      /* a broadcast side is read from W copies of its value that the loop does not step over */    \
      const V vz = {0}; /* for VEXPR */                                                             \
      T ab[W], bb[W];                                                                               \
      const T *pa = sa ? a : ab, *pb = sb ? b : bb;                                                 \
      const int64_t da = sa ? W : 0, db = sb ? W : 0;                                               \
      int k;                                                                                        \
      (void)vz;                                                                                     \
      for (k = 0; k < W; k++) { ab[k] = a[0]; bb[k] = b[0]; }                                       \
      for (; i + W <= n; i += W, pa += da, pb += db) {                                              \
        V u, w;                                                                                     \
        memcpy(&u, pa, sizeof u);                                                                   \
        memcpy(&w, pb, sizeof w);                                                                   \
        u = VEXPR;                                                                                  \
        memcpy(y + i, &u, sizeof u);                                                                \
      }                                                                                             \
    }                                                                                               \
    for (; i < n; i++) y[i] = SEXPR;                                                                \
  }

#define DT__EW_VFILL(NAME, ATTR, T, V)                                                              \
  ATTR static void NAME(int64_t n, const void *v_, void *y_) {                                      \
    enum { W = sizeof(V) / sizeof(T) };                                                             \
    const V vz = {0};                                                                               \
    T x, *y = (T *)y_;                                                                              \
    V v;                                                                                            \
    int64_t i = 0;                                                                                  \
    memcpy(&x, v_, sizeof x);                                                                       \
    v = vz + x;                                                                                     \
    for (; i + W <= n; i += W) memcpy(y + i, &v, sizeof v);                                         \
    for (; i < n; i++) y[i] = x;                                                                    \
  }

/* Asks GCC to unroll a short loop over an array of vectors, so that the array lives in registers. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
#define DT__UNROLL8 _Pragma("GCC unroll 8")
#else
#define DT__UNROLL8
#endif

/* 16 partial sums in double; VH: half as many lanes of T as VD has doubles' bytes / 8 */
#define DT__EW_VSUM16(NAME, ATTR, T, VH, VD)                                                        \
  ATTR static void NAME(int64_t n, const void *x_, int sq, double acc[16]) {                        \
    enum { L = sizeof(VD) / sizeof(double), Q = 16 / L };                                           \
    const T *x = (const T *)x_;                                                                     \
    const VD vz = {0};                                                                              \
    VD s[2 * Q]; /* two sets of 16 lanes: at least 4 independent chains of adds (latency 3-4) */   \
    int64_t i = 0;                                                                                  \
    int q, j;                                                                                       \
    for (q = 0; q < 2 * Q; q++) s[q] = vz;                                                          \
    for (; i + 32 <= n; i += 32)                                                                    \
      DT__UNROLL8 for (q = 0; q < 2 * Q; q++) {                                                     \
        VH h;                                                                                       \
        VD d;                                                                                       \
        memcpy(&h, x + i + q * L, sizeof h);                                                        \
        d = DT__EW_CONVERT(h, VD);                                                                  \
        s[q] += sq ? d * d : d;                                                                     \
      }                                                                                             \
    for (q = 0; q < Q; q++) {                                                                       \
      s[q] += s[q + Q];                                                                             \
      memcpy(acc + q * L, &s[q], sizeof s[q]);                                                      \
    }                                                                                               \
    for (j = 0; i < n; i++, j++) acc[j & 15] += sq ? (double)x[i] * x[i] : (double)x[i];            \
  }

#define DT__EW_VCONV(NAME, ATTR, S, D, VS, VD)                                                      \
  ATTR static void NAME(int64_t n, const void *x_, void *y_) {                                      \
    enum { W = sizeof(VS) / sizeof(S) };                                                            \
    const S *x = (const S *)x_;                                                                     \
    D *y = (D *)y_;                                                                                 \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      VS a;                                                                                         \
      VD b;                                                                                         \
      memcpy(&a, x + i, sizeof a);                                                                  \
      b = DT__EW_CONVERT(a, VD);                                                                    \
      memcpy(y + i, &b, sizeof b);                                                                  \
    }                                                                                               \
    for (; i < n; i++) y[i] = (D)x[i];                                                              \
  }

/* relu on F32 without a branch (its gradient, y = a where b > 0, else 0, is a DT__EW_VZIP): with
   the signs of a layer's pre-activations random, a scalar loop mispredicts half its branches.
   A NaN stays a NaN. */
#define DT__EW_VRELU(NAME, ATTR, VF, VI)                                                            \
  ATTR static void NAME(int64_t n, const void *x_, void *y_, double p0, double p1) {                \
    enum { W = sizeof(VF) / sizeof(float) };                                                        \
    const float *x = (const float *)x_;                                                             \
    float *y = (float *)y_;                                                                         \
    const VF vz = {0};                                                                              \
    int64_t i = 0;                                                                                  \
    (void)p0; (void)p1;                                                                             \
    for (; i + W <= n; i += W) {                                                                    \
      VF v;                                                                                         \
      VI m;                                                                                         \
      memcpy(&v, x + i, sizeof v);                                                                  \
      m = (VI)((v > vz) | (v != v));                                                                \
      m &= (VI)v;                                                                                   \
      memcpy(y + i, &m, sizeof m);                                                                  \
    }                                                                                               \
    for (; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : (x[i] != x[i] ? x[i] : 0.0f);                    \
  }

#ifndef DT__EW_CONVERT /* no __builtin_convertvector: sums and casts are plain loops */
#define DT__EW_SUM16_LOOP(NAME, ATTR, T)                                                            \
  ATTR static void NAME(int64_t n, const void *x_, int sq, double acc[16]) {                        \
    const T *x = (const T *)x_;                                                                     \
    int64_t i;                                                                                      \
    int j;                                                                                          \
    for (j = 0; j < 16; j++) acc[j] = 0;                                                            \
    for (i = 0; i < n; i++) acc[i & 15] += sq ? (double)x[i] * x[i] : (double)x[i];                 \
  }
#endif

/* baseline: 16-byte vectors */
DT__EW_VRELU(dt__relu_f32_base, DT__TARGET_BASE, dt__vf_base, dt__vi_base)
DT__EW_VZIP(dt__relu_grad_f32_base, DT__TARGET_BASE, float, dt__vf_base, (dt__vf_base)((dt__vi_base)(w > vz) & (dt__vi_base)u),
            b[i * sb] > 0.0f ? a[i * sa] : 0.0f)
DT__EW_VZIP(dt__sigmoid_grad_f32_base, DT__TARGET_BASE, float, dt__vf_base, u * (1.0f - w) * w, a[i * sa] * (1.0f - b[i * sb]) * b[i * sb])
DT__EW_VZIP(dt__tanh_grad_f32_base, DT__TARGET_BASE, float, dt__vf_base, u * (1.0f - w * w), a[i * sa] * (1.0f - b[i * sb] * b[i * sb]))
DT__EW_VZIP(dt__add_f32_base, DT__TARGET_BASE, float, dt__vf_base, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f32_base, DT__TARGET_BASE, float, dt__vf_base, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f32_base, DT__TARGET_BASE, float, dt__vf_base, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f32_base, DT__TARGET_BASE, float, dt__vf_base, u / w, a[i * sa] / b[i * sb])
DT__EW_VZIP(dt__add_f64_base, DT__TARGET_BASE, double, dt__vd_base, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f64_base, DT__TARGET_BASE, double, dt__vd_base, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f64_base, DT__TARGET_BASE, double, dt__vd_base, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f64_base, DT__TARGET_BASE, double, dt__vd_base, u / w, a[i * sa] / b[i * sb])
DT__EW_VFILL(dt__fill_32_base, DT__TARGET_BASE, uint32_t, dt__vi_base)
DT__EW_VFILL(dt__fill_64_base, DT__TARGET_BASE, uint64_t, dt__vl_base)
#ifdef DT__EW_CONVERT
DT__EW_VSUM16(dt__sum16_f32_base, DT__TARGET_BASE, float, dt__vh_base, dt__vd_base)
DT__EW_VSUM16(dt__sum16_f64_base, DT__TARGET_BASE, double, dt__vd_base, dt__vd_base)
DT__EW_VCONV(dt__conv_f32_f64_base, DT__TARGET_BASE, float, double, dt__vh_base, dt__vd_base)
DT__EW_VCONV(dt__conv_f64_f32_base, DT__TARGET_BASE, double, float, dt__vd_base, dt__vh_base)
#else
DT__EW_SUM16_LOOP(dt__sum16_f32_base, DT__TARGET_BASE, float)
DT__EW_SUM16_LOOP(dt__sum16_f64_base, DT__TARGET_BASE, double)
DT__EW_CONV(dt__conv_f32_f64_base, float, double, (double)v)
DT__EW_CONV(dt__conv_f64_f32_base, double, float, (float)v)
#endif
#if DT__EW_X86
/* AVX2: 32-byte vectors (no FMA) */
DT__EW_VRELU(dt__relu_f32_avx2, DT__TARGET_AVX2, dt__vf_avx2, dt__vi_avx2)
DT__EW_VZIP(dt__relu_grad_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, (dt__vf_avx2)((dt__vi_avx2)(w > vz) & (dt__vi_avx2)u),
            b[i * sb] > 0.0f ? a[i * sa] : 0.0f)
DT__EW_VZIP(dt__sigmoid_grad_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u * (1.0f - w) * w, a[i * sa] * (1.0f - b[i * sb]) * b[i * sb])
DT__EW_VZIP(dt__tanh_grad_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u * (1.0f - w * w), a[i * sa] * (1.0f - b[i * sb] * b[i * sb]))
DT__EW_VZIP(dt__add_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f32_avx2, DT__TARGET_AVX2, float, dt__vf_avx2, u / w, a[i * sa] / b[i * sb])
DT__EW_VZIP(dt__add_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, u / w, a[i * sa] / b[i * sb])
DT__EW_VFILL(dt__fill_32_avx2, DT__TARGET_AVX2, uint32_t, dt__vi_avx2)
DT__EW_VFILL(dt__fill_64_avx2, DT__TARGET_AVX2, uint64_t, dt__vl_avx2)
#ifdef DT__EW_CONVERT
DT__EW_VSUM16(dt__sum16_f32_avx2, DT__TARGET_AVX2, float, dt__vh_avx2, dt__vd_avx2)
DT__EW_VSUM16(dt__sum16_f64_avx2, DT__TARGET_AVX2, double, dt__vd_avx2, dt__vd_avx2)
DT__EW_VCONV(dt__conv_f32_f64_avx2, DT__TARGET_AVX2, float, double, dt__vh_avx2, dt__vd_avx2)
DT__EW_VCONV(dt__conv_f64_f32_avx2, DT__TARGET_AVX2, double, float, dt__vd_avx2, dt__vh_avx2)
#else
DT__EW_SUM16_LOOP(dt__sum16_f32_avx2, DT__TARGET_AVX2, float)
DT__EW_SUM16_LOOP(dt__sum16_f64_avx2, DT__TARGET_AVX2, double)
DT__EW_CONV(dt__conv_f32_f64_avx2, float, double, (double)v)
DT__EW_CONV(dt__conv_f64_f32_avx2, double, float, (float)v)
#endif
/* AVX-512: 64-byte vectors */
DT__EW_VRELU(dt__relu_f32_avx512, DT__TARGET_AVX512, dt__vf_avx512, dt__vi_avx512)
DT__EW_VZIP(dt__relu_grad_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, (dt__vf_avx512)((dt__vi_avx512)(w > vz) & (dt__vi_avx512)u),
            b[i * sb] > 0.0f ? a[i * sa] : 0.0f)
DT__EW_VZIP(dt__sigmoid_grad_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u * (1.0f - w) * w, a[i * sa] * (1.0f - b[i * sb]) * b[i * sb])
DT__EW_VZIP(dt__tanh_grad_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u * (1.0f - w * w), a[i * sa] * (1.0f - b[i * sb] * b[i * sb]))
DT__EW_VZIP(dt__add_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f32_avx512, DT__TARGET_AVX512, float, dt__vf_avx512, u / w, a[i * sa] / b[i * sb])
DT__EW_VZIP(dt__add_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, u + w, a[i * sa] + b[i * sb])
DT__EW_VZIP(dt__sub_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, u - w, a[i * sa] - b[i * sb])
DT__EW_VZIP(dt__mul_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, u * w, a[i * sa] * b[i * sb])
DT__EW_VZIP(dt__div_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, u / w, a[i * sa] / b[i * sb])
DT__EW_VFILL(dt__fill_32_avx512, DT__TARGET_AVX512, uint32_t, dt__vi_avx512)
DT__EW_VFILL(dt__fill_64_avx512, DT__TARGET_AVX512, uint64_t, dt__vl_avx512)
#ifdef DT__EW_CONVERT
DT__EW_VSUM16(dt__sum16_f32_avx512, DT__TARGET_AVX512, float, dt__vh_avx512, dt__vd_avx512)
DT__EW_VSUM16(dt__sum16_f64_avx512, DT__TARGET_AVX512, double, dt__vd_avx512, dt__vd_avx512)
DT__EW_VCONV(dt__conv_f32_f64_avx512, DT__TARGET_AVX512, float, double, dt__vh_avx512, dt__vd_avx512)
DT__EW_VCONV(dt__conv_f64_f32_avx512, DT__TARGET_AVX512, double, float, dt__vd_avx512, dt__vh_avx512)
#else
DT__EW_SUM16_LOOP(dt__sum16_f32_avx512, DT__TARGET_AVX512, float)
DT__EW_SUM16_LOOP(dt__sum16_f64_avx512, DT__TARGET_AVX512, double)
DT__EW_CONV(dt__conv_f32_f64_avx512, float, double, (double)v)
DT__EW_CONV(dt__conv_f64_f32_avx512, double, float, (float)v)
#endif
#endif

/* The vector kernels of each variant, [isa][f64]. */
typedef struct dt__ew_vtab {
  dt__zip_fn arith[2][4]; /* add, sub, mul, div */
  dt__map_fn exp_f32, log_f32;
  dt__fill_fn fill[2];    /* 32-bit, 64-bit */
  dt__sum16_fn sum16[2];
  dt__conv_fn f32_f64, f64_f32;
  dt__map_fn relu_f32;
  dt__zip_fn relu_grad_f32;
  dt__map_fn sigmoid_f32;
  dt__zip_fn sigmoid_grad_f32, tanh_grad_f32;
} dt__ew_vtab;

static const dt__ew_vtab dt__ew_vtabs[DT__EW_NISA] = {
  {{{dt__add_f32_base, dt__sub_f32_base, dt__mul_f32_base, dt__div_f32_base},
    {dt__add_f64_base, dt__sub_f64_base, dt__mul_f64_base, dt__div_f64_base}},
   dt__exp_f32_base, dt__log_f32_base, {dt__fill_32_base, dt__fill_64_base},
   {dt__sum16_f32_base, dt__sum16_f64_base}, dt__conv_f32_f64_base, dt__conv_f64_f32_base,
   dt__relu_f32_base, dt__relu_grad_f32_base,
   dt__sigmoid_f32_base, dt__sigmoid_grad_f32_base, dt__tanh_grad_f32_base},
#if DT__EW_X86
  {{{dt__add_f32_avx2, dt__sub_f32_avx2, dt__mul_f32_avx2, dt__div_f32_avx2},
    {dt__add_f64_avx2, dt__sub_f64_avx2, dt__mul_f64_avx2, dt__div_f64_avx2}},
   dt__exp_f32_avx2, dt__log_f32_avx2, {dt__fill_32_avx2, dt__fill_64_avx2},
   {dt__sum16_f32_avx2, dt__sum16_f64_avx2}, dt__conv_f32_f64_avx2, dt__conv_f64_f32_avx2,
   dt__relu_f32_avx2, dt__relu_grad_f32_avx2,
   dt__sigmoid_f32_avx2, dt__sigmoid_grad_f32_avx2, dt__tanh_grad_f32_avx2},
  {{{dt__add_f32_avx512, dt__sub_f32_avx512, dt__mul_f32_avx512, dt__div_f32_avx512},
    {dt__add_f64_avx512, dt__sub_f64_avx512, dt__mul_f64_avx512, dt__div_f64_avx512}},
   dt__exp_f32_avx512, dt__log_f32_avx512, {dt__fill_32_avx512, dt__fill_64_avx512},
   {dt__sum16_f32_avx512, dt__sum16_f64_avx512}, dt__conv_f32_f64_avx512, dt__conv_f64_f32_avx512,
   dt__relu_f32_avx512, dt__relu_grad_f32_avx512,
   dt__sigmoid_f32_avx512, dt__sigmoid_grad_f32_avx512, dt__tanh_grad_f32_avx512}
#else
  {{{dt__add_f32_base, dt__sub_f32_base, dt__mul_f32_base, dt__div_f32_base},
    {dt__add_f64_base, dt__sub_f64_base, dt__mul_f64_base, dt__div_f64_base}},
   dt__exp_f32_base, dt__log_f32_base, {dt__fill_32_base, dt__fill_64_base},
   {dt__sum16_f32_base, dt__sum16_f64_base}, dt__conv_f32_f64_base, dt__conv_f64_f32_base,
   dt__relu_f32_base, dt__relu_grad_f32_base,
   dt__sigmoid_f32_base, dt__sigmoid_grad_f32_base, dt__tanh_grad_f32_base},
  {{{dt__add_f32_base, dt__sub_f32_base, dt__mul_f32_base, dt__div_f32_base},
    {dt__add_f64_base, dt__sub_f64_base, dt__mul_f64_base, dt__div_f64_base}},
   dt__exp_f32_base, dt__log_f32_base, {dt__fill_32_base, dt__fill_64_base},
   {dt__sum16_f32_base, dt__sum16_f64_base}, dt__conv_f32_f64_base, dt__conv_f64_f32_base,
   dt__relu_f32_base, dt__relu_grad_f32_base,
   dt__sigmoid_f32_base, dt__sigmoid_grad_f32_base, dt__tanh_grad_f32_base}
#endif
};

static const dt__ew_vtab *dt__ew_kernels(void) { return &dt__ew_vtabs[dt__ew_isa()]; }

/* ---- src/cpu/compare.c ---- */
/* Plain loops (no vector variants): each function one dtype, the operation chosen outside the
   loop. BOOL is one byte, 0 or 1; a byte read as bool counts as true when nonzero. */

/* sigmoid in F64 as dt__sigmoidf in F32 (cpu/vmath.c) */
static double dt__sigmoid(double v) {
  double e = exp(-fabs(v));
  return v >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
DT__EW_MAP(dt__map_sigmoid_f64, double, dt__sigmoid(v))
DT__EW_MAP(dt__map_tanh_f32, float, tanhf(v))
DT__EW_MAP(dt__map_tanh_f64, double, tanh(v))
DT__EW_MAP(dt__map_abs_f32, float, fabsf(v))
DT__EW_MAP(dt__map_abs_f64, double, fabs(v))
/* integers: |INT_MIN| wraps to INT_MIN, as PyTorch's */
DT__EW_MAP(dt__map_abs_i32, int32_t, v < 0 ? (int32_t)((uint32_t)0 - (uint32_t)v) : v)
DT__EW_MAP(dt__map_abs_i64, int64_t, v < 0 ? (int64_t)((uint64_t)0 - (uint64_t)v) : v)

/* a strided copy of bytes (DT__B_COPY_A for uint8 and bool: transposes) */
static void dt__zip_copy_u8(int64_t n, const void *a_, int64_t sa, const void *b_, int64_t sb, void *y_) {
  const uint8_t *a = (const uint8_t *)a_;
  uint8_t *y = (uint8_t *)y_;
  int64_t i;
  (void)b_; (void)sb;
  for (i = 0; i < n; i++) y[i] = a[i * sa];
}

/* casts to uint8 (tobool 0: dt__f2u8 from floats, the low byte from integers) or bool (nonzero) */
static void dt__conv_to_bytes(int64_t n, dt_dtype from, int tobool, const void *x, uint8_t *y) {
  int64_t i;
  switch (from) {
    case DT_F32: {
      const float *p = (const float *)x;
      if (tobool) for (i = 0; i < n; i++) y[i] = p[i] != 0.0f;
      else for (i = 0; i < n; i++) y[i] = dt__f2u8((double)p[i]);
      break;
    }
    case DT_F64: {
      const double *p = (const double *)x;
      if (tobool) for (i = 0; i < n; i++) y[i] = p[i] != 0.0;
      else for (i = 0; i < n; i++) y[i] = dt__f2u8(p[i]);
      break;
    }
    case DT_I32: {
      const int32_t *p = (const int32_t *)x;
      if (tobool) for (i = 0; i < n; i++) y[i] = p[i] != 0;
      else for (i = 0; i < n; i++) y[i] = (uint8_t)(uint32_t)p[i];
      break;
    }
    case DT_I64: {
      const int64_t *p = (const int64_t *)x;
      if (tobool) for (i = 0; i < n; i++) y[i] = p[i] != 0;
      else for (i = 0; i < n; i++) y[i] = (uint8_t)(uint64_t)p[i];
      break;
    }
    case DT_U8: case DT_BOOL: {
      const uint8_t *p = (const uint8_t *)x;
      if (tobool || from == DT_BOOL) for (i = 0; i < n; i++) y[i] = p[i] != 0;
      else memcpy(y, p, (size_t)n);
      break;
    }
    case DT_F16: case DT_BF16: break; /* src/cpu/half.c */
  }
}
/* casts from uint8 or bool (frombool: nonzero is 1) to float32/64, int32/64 */
static void dt__conv_from_bytes(int64_t n, int frombool, dt_dtype to, const uint8_t *x, void *y) {
  int64_t i;
  switch (to) {
    case DT_F32: { float *q = (float *)y; for (i = 0; i < n; i++) q[i] = (float)(frombool ? x[i] != 0 : x[i]); break; }
    case DT_F64: { double *q = (double *)y; for (i = 0; i < n; i++) q[i] = (double)(frombool ? x[i] != 0 : x[i]); break; }
    case DT_I32: { int32_t *q = (int32_t *)y; for (i = 0; i < n; i++) q[i] = (int32_t)(frombool ? x[i] != 0 : x[i]); break; }
    case DT_I64: { int64_t *q = (int64_t *)y; for (i = 0; i < n; i++) q[i] = (int64_t)(frombool ? x[i] != 0 : x[i]); break; }
    case DT_U8: case DT_BOOL: dt__conv_to_bytes(n, frombool ? DT_BOOL : DT_U8, to == DT_BOOL, x, (uint8_t *)y); break;
    case DT_F16: case DT_BF16: break; /* src/cpu/half.c */
  }
}

typedef struct dt__bytes_job {
  dt_dtype from, to;
  const char *x;
  char *y;
} dt__bytes_job;

static void dt__bytes_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__bytes_job *j = (const dt__bytes_job *)ctx;
  const char *x = j->x + (size_t)lo * dt_dtype_size(j->from);
  char *y = j->y + (size_t)lo * dt_dtype_size(j->to);
  if (j->to == DT_U8 || j->to == DT_BOOL) dt__conv_to_bytes(hi - lo, j->from, j->to == DT_BOOL, x, (uint8_t *)y);
  else dt__conv_from_bytes(hi - lo, j->from == DT_BOOL, j->to, (const uint8_t *)x, y);
}

/* y[i] = a[i * sa] op b[i * sb], i < n, as 0 or 1 */
typedef void (*dt__cmp_fn)(dt__compare_op op, int64_t n, const void *a, int64_t sa, const void *b, int64_t sb, uint8_t *y);

/* one function per element type; the comparison is chosen per call, the loop per op */
#define DT__CMP_KERNEL(NAME, T)                                                                     \
  static void NAME(dt__compare_op op, int64_t n, const void *a_, int64_t sa, const void *b_, int64_t sb, \
                   uint8_t *y) {                                                                    \
    const T *a = (const T *)a_, *b = (const T *)b_;                                                 \
    int64_t i;                                                                                      \
    switch (op) {                                                                                   \
      case DT__C_EQ: for (i = 0; i < n; i++) y[i] = a[i * sa] == b[i * sb]; break;                  \
      case DT__C_NE: for (i = 0; i < n; i++) y[i] = a[i * sa] != b[i * sb]; break;                  \
      case DT__C_LT: for (i = 0; i < n; i++) y[i] = a[i * sa] < b[i * sb]; break;                   \
      case DT__C_LE: for (i = 0; i < n; i++) y[i] = a[i * sa] <= b[i * sb]; break;                  \
    }                                                                                               \
  }
DT__CMP_KERNEL(dt__cmp_f32, float)
DT__CMP_KERNEL(dt__cmp_f64, double)
DT__CMP_KERNEL(dt__cmp_i32, int32_t)
DT__CMP_KERNEL(dt__cmp_i64, int64_t)
DT__CMP_KERNEL(dt__cmp_u8, uint8_t) /* uint8 and bool (bool's bytes are 0 or 1) */
#undef DT__CMP_KERNEL

/* The offsets in a and b (elements) of row r of g, a row being g's innermost dim. */
static void dt__bcast_row(const dt__bcast *g, int64_t r, int64_t *oa, int64_t *ob) {
  int64_t rem = r, a = 0, b = 0;
  int d;
  for (d = g->ndim - 2; d >= 0; d--) {
    int64_t q = rem % g->dims[d];
    rem /= g->dims[d];
    a += q * g->astride[d];
    b += q * g->bstride[d];
  }
  *oa = a;
  *ob = b;
}

/* A job y = f(a, b) over g (a and b read through its strides, y contiguous): a comparison
   (cmp with op, y of bytes) or a binary op (zip). Contiguous: items are elements; else rows of
   the innermost dim (items are rows). */
typedef struct dt__pair_job {
  dt__cmp_fn cmp;
  dt__compare_op op;
  dt__zip_fn zip;
  const dt__bcast *g;
  const char *a, *b;
  char *y;
  size_t es, ys; /* element sizes: a's and b's, y's */
} dt__pair_job;

/* n elements: a and b from elements oa and ob at strides sa and sb, into y from element at */
static void dt__pair_run(const dt__pair_job *j, int64_t n, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t at) {
  const char *a = j->a + (size_t)oa * j->es, *b = j->b + (size_t)ob * j->es;
  char *y = j->y + (size_t)at * j->ys;
  if (j->cmp) j->cmp(j->op, n, a, sa, b, sb, (uint8_t *)y);
  else j->zip(n, a, sa, b, sb, y);
}

static void dt__pair_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__pair_job *j = (const dt__pair_job *)ctx;
  const dt__bcast *g = j->g;
  const int nd = g->ndim;
  int64_t inner, r;
  if (g->contiguous) {
    dt__pair_run(j, hi - lo, lo, 1, lo, 1, lo);
    return;
  }
  inner = g->dims[nd - 1];
  for (r = lo; r < hi; r++) {
    int64_t oa, ob;
    dt__bcast_row(g, r, &oa, &ob);
    dt__pair_run(j, inner, oa, g->astride[nd - 1], ob, g->bstride[nd - 1], r * inner);
  }
}

static void dt__pair_par(dt__pair_job *j) {
  const dt__bcast *g = j->g;
  if (g->numel <= 0) return;
  if (g->contiguous) dt__par_for(g->numel, DT__GRAIN_MEM, dt__pair_task, j);
  else {
    int64_t inner = g->dims[g->ndim - 1], rows = g->numel / inner;
    dt__par_for(rows, (DT__GRAIN_MEM + inner - 1) / inner, dt__pair_task, j);
  }
}

static dt_status dt__cpu_compare(int dev, dt__compare_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  dt__pair_job j;
  (void)dev;
  memset(&j, 0, sizeof j);
  switch (t) {
    case DT_F32: j.cmp = dt__cmp_f32; break;
    case DT_F64: j.cmp = dt__cmp_f64; break;
    case DT_I32: j.cmp = dt__cmp_i32; break;
    case DT_I64: j.cmp = dt__cmp_i64; break;
    case DT_U8: case DT_BOOL: j.cmp = dt__cmp_u8; break;
    default: return DT_ERR_DTYPE;
  }
  j.op = op; j.g = g; j.a = (const char *)a; j.b = (const char *)b; j.y = (char *)y;
  j.es = dt_dtype_size(t); j.ys = 1;
  dt__pair_par(&j);
  return DT_OK;
}

/* ---- src/cpu/half_vec.c ---- */
/* float32 <-> bfloat16 casts in vectors (cpu/half.c takes them for these two casts): the same
   bits as dt__f32_to_bf16 and dt__bf16_to_f32, lane by lane. Autocast BF16 casts the weights,
   the inputs and every half elementwise operation's operands and results through them. */

/* y (n, bfloat16) = x (n, float32), rounded to nearest even; a NaN gives 0x7FC0.
   VI: uint32_t lanes, VS: as many uint16_t lanes. */
#define DT__HV_TO_BF16(NAME, ATTR, VI, VS)                                                          \
  ATTR static void NAME(int64_t n, const void *x_, void *y_) {                                      \
    enum { W = sizeof(VI) / sizeof(uint32_t) };                                                     \
    const char *x = (const char *)x_;                                                               \
    uint16_t *y = (uint16_t *)y_;                                                                   \
    const VI vz = {0}, inf = vz + 0x7F800000u, abs = vz + 0x7FFFFFFFu, qnan = vz + 0x7FC0u;        \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      VI u, r, nan;                                                                                 \
      VS h;                                                                                         \
      memcpy(&u, x + i * 4, sizeof u);                                                              \
      nan = (VI)((u & abs) > inf);                                                                  \
      r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;                                                   \
      r = (r & ~nan) | (qnan & nan);                                                                \
      h = DT__EW_CONVERT(r, VS);                                                                    \
      memcpy(y + i, &h, sizeof h);                                                                  \
    }                                                                                               \
    for (; i < n; i++) {                                                                            \
      float f;                                                                                      \
      memcpy(&f, x + i * 4, sizeof f);                                                              \
      y[i] = dt__f32_to_bf16(f);                                                                    \
    }                                                                                               \
  }

/* y (n, float32) = x (n, bfloat16): its bits in the high half. */
#define DT__HV_FROM_BF16(NAME, ATTR, VI, VS)                                                        \
  ATTR static void NAME(int64_t n, const void *x_, void *y_) {                                      \
    enum { W = sizeof(VI) / sizeof(uint32_t) };                                                     \
    const uint16_t *x = (const uint16_t *)x_;                                                       \
    char *y = (char *)y_;                                                                           \
    int64_t i = 0;                                                                                  \
    for (; i + W <= n; i += W) {                                                                    \
      VS h;                                                                                         \
      VI u;                                                                                         \
      memcpy(&h, x + i, sizeof h);                                                                  \
      u = DT__EW_CONVERT(h, VI) << 16;                                                              \
      memcpy(y + i * 4, &u, sizeof u);                                                              \
    }                                                                                               \
    for (; i < n; i++) {                                                                            \
      float f = dt__bf16_to_f32(x[i]);                                                              \
      memcpy(y + i * 4, &f, sizeof f);                                                              \
    }                                                                                               \
  }

#ifndef DT__EW_CONVERT
/* the plain loops, where the compiler has no __builtin_convertvector */
static void dt__hv_to_bf16_loop(int64_t n, const void *x_, void *y_) {
  const float *x = (const float *)x_;
  uint16_t *y = (uint16_t *)y_;
  int64_t i;
  for (i = 0; i < n; i++) y[i] = dt__f32_to_bf16(x[i]);
}
static void dt__hv_from_bf16_loop(int64_t n, const void *x_, void *y_) {
  const uint16_t *x = (const uint16_t *)x_;
  float *y = (float *)y_;
  int64_t i;
  for (i = 0; i < n; i++) y[i] = dt__bf16_to_f32(x[i]);
}
#else
typedef uint16_t dt__vs_base __attribute__((vector_size(8)));
DT__HV_TO_BF16(dt__hv_to_bf16_base, DT__TARGET_BASE, dt__vi_base, dt__vs_base)
DT__HV_FROM_BF16(dt__hv_from_bf16_base, DT__TARGET_BASE, dt__vi_base, dt__vs_base)
#if DT__EW_X86
typedef uint16_t dt__vs_avx2 __attribute__((vector_size(16)));
typedef uint16_t dt__vs_avx512 __attribute__((vector_size(32)));
DT__HV_TO_BF16(dt__hv_to_bf16_avx2, DT__TARGET_AVX2, dt__vi_avx2, dt__vs_avx2)
DT__HV_FROM_BF16(dt__hv_from_bf16_avx2, DT__TARGET_AVX2, dt__vi_avx2, dt__vs_avx2)
DT__HV_TO_BF16(dt__hv_to_bf16_avx512, DT__TARGET_AVX512, dt__vi_avx512, dt__vs_avx512)
DT__HV_FROM_BF16(dt__hv_from_bf16_avx512, DT__TARGET_AVX512, dt__vi_avx512, dt__vs_avx512)
#endif
#endif

/* This CPU's float32 -> bfloat16 (to 1) or bfloat16 -> float32 (to 0) kernel. */
static dt__conv_fn dt__hv_bf16_kernel(int to) {
#ifdef DT__EW_CONVERT
  switch (dt__ew_isa()) {
#if DT__EW_X86
    case DT__EW_AVX512: return to ? dt__hv_to_bf16_avx512 : dt__hv_from_bf16_avx512;
    case DT__EW_AVX2: return to ? dt__hv_to_bf16_avx2 : dt__hv_from_bf16_avx2;
#endif
    default: return to ? dt__hv_to_bf16_base : dt__hv_from_bf16_base;
  }
#else
  return to ? dt__hv_to_bf16_loop : dt__hv_from_bf16_loop;
#endif
}

/* ---- src/cpu/half.c ---- */
/* Casts to and from float16 and bfloat16 on the CPU: through float, a block of elements at a
   time (dt__f32_to_f16 and friends in src/backend/backend.h), as PyTorch converts them. */

#define DT__HALF_BLOCK 256

/* n elements of `from` to float (from not a half dtype) */
static void dt__half_in(dt_dtype from, int64_t n, const void *x, float *f) {
  int64_t i;
  switch (from) {
    case DT_F32: memcpy(f, x, (size_t)n * sizeof(float)); break;
    case DT_F64: for (i = 0; i < n; i++) f[i] = (float)((const double *)x)[i]; break;
    case DT_I32: for (i = 0; i < n; i++) f[i] = (float)((const int32_t *)x)[i]; break;
    case DT_I64: for (i = 0; i < n; i++) f[i] = (float)((const int64_t *)x)[i]; break;
    case DT_U8: for (i = 0; i < n; i++) f[i] = (float)((const uint8_t *)x)[i]; break;
    case DT_BOOL: for (i = 0; i < n; i++) f[i] = ((const uint8_t *)x)[i] != 0 ? 1.0f : 0.0f; break;
    case DT_F16: for (i = 0; i < n; i++) f[i] = dt__f16_to_f32(((const uint16_t *)x)[i]); break;
    case DT_BF16: for (i = 0; i < n; i++) f[i] = dt__bf16_to_f32(((const uint16_t *)x)[i]); break;
  }
}
/* n floats to `to`, as the float32 casts convert (saturating integers, dt__f2u8, nonzero bools) */
static void dt__half_out(dt_dtype to, int64_t n, const float *f, void *y) {
  int64_t i;
  switch (to) {
    case DT_F32: memcpy(y, f, (size_t)n * sizeof(float)); break;
    case DT_F64: for (i = 0; i < n; i++) ((double *)y)[i] = (double)f[i]; break;
    case DT_I32: for (i = 0; i < n; i++) ((int32_t *)y)[i] = dt__f2i32((double)f[i]); break;
    case DT_I64: for (i = 0; i < n; i++) ((int64_t *)y)[i] = dt__f2i64((double)f[i]); break;
    case DT_U8: for (i = 0; i < n; i++) ((uint8_t *)y)[i] = dt__f2u8((double)f[i]); break;
    case DT_BOOL: for (i = 0; i < n; i++) ((uint8_t *)y)[i] = f[i] != 0.0f; break;
    case DT_F16: for (i = 0; i < n; i++) ((uint16_t *)y)[i] = dt__f32_to_f16(f[i]); break;
    case DT_BF16: for (i = 0; i < n; i++) ((uint16_t *)y)[i] = dt__f32_to_bf16(f[i]); break;
  }
}

typedef struct dt__half_job {
  dt_dtype from, to;
  const char *x;
  char *y;
} dt__half_job;

static void dt__half_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__half_job *j = (const dt__half_job *)ctx;
  size_t xs = dt_dtype_size(j->from), ys = dt_dtype_size(j->to);
  float f[DT__HALF_BLOCK];
  if ((j->from == DT_F32 && j->to == DT_BF16) || (j->from == DT_BF16 && j->to == DT_F32)) { /* in vectors */
    dt__hv_bf16_kernel(j->to == DT_BF16)(hi - lo, j->x + (size_t)lo * xs, j->y + (size_t)lo * ys);
    return;
  }
  while (lo < hi) {
    int64_t n = hi - lo < DT__HALF_BLOCK ? hi - lo : DT__HALF_BLOCK;
    dt__half_in(j->from, n, j->x + (size_t)lo * xs, f);
    dt__half_out(j->to, n, f, j->y + (size_t)lo * ys);
    lo += n;
  }
}

/* y (n, to) = x (n, from) with from or to a half dtype, from != to */
static dt_status dt__cpu_cast_half(dt_dtype from, dt_dtype to, int64_t n, const void *x, void *y) {
  dt__half_job j;
  j.from = from; j.to = to; j.x = (const char *)x; j.y = (char *)y;
  dt__par_for(n, DT__GRAIN_MEM, dt__half_task, &j);
  return DT_OK;
}

/* ---- src/cpu/elementwise_entry.c ---- */
/* A job of n elements: y[i] = f(x[i]) by a dt__map_fn, dt__conv_fn or dt__fill_fn. */
typedef struct dt__ew_job {
  dt__map_fn map;
  dt__conv_fn conv;
  dt__fill_fn fill;
  const char *x;
  char *y;
  size_t xs, ys; /* element sizes */
  double p0, p1;
  unsigned char v[8]; /* fill: the value */
} dt__ew_job;

static void dt__ew_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__ew_job *j = (const dt__ew_job *)ctx;
  char *y = j->y + (size_t)lo * j->ys;
  if (j->fill) j->fill(hi - lo, j->v, y);
  else if (j->conv) j->conv(hi - lo, j->x + (size_t)lo * j->xs, y);
  else j->map(hi - lo, j->x + (size_t)lo * j->xs, y, j->p0, j->p1);
}

static dt_status dt__cpu_fill(int dev, dt_dtype t, int64_t n, double v, void *y) {
  dt__ew_job j;
  (void)dev;
  memset(&j, 0, sizeof j);
  j.y = (char *)y;
  j.ys = dt_dtype_size(t);
  switch (t) {
    case DT_F32: { float x = (float)v; memcpy(j.v, &x, sizeof x); break; }
    case DT_F64: memcpy(j.v, &v, sizeof v); break;
    case DT_I32: { int32_t x = dt__f2i32(v); memcpy(j.v, &x, sizeof x); break; }
    case DT_I64: { int64_t x = dt__f2i64(v); memcpy(j.v, &x, sizeof x); break; }
    case DT_U8: j.v[0] = dt__f2u8(v); break;
    case DT_BOOL: j.v[0] = v != 0; break;
    case DT_F16: case DT_BF16: { /* through float, as every conversion to them */
      uint16_t h = dt__f32_to_half(t == DT_BF16, (float)v), *q = (uint16_t *)y;
      int64_t i;
      for (i = 0; i < n; i++) q[i] = h;
      return DT_OK;
    }
  }
  if (j.ys == 1) { memset(y, j.v[0], (size_t)n); return DT_OK; }
  if (n < 2 * DT__GRAIN_MEM) { /* small: no table, no job */
    if (j.ys == 4) dt__fill_32(n, j.v, y); else dt__fill_64(n, j.v, y);
    return DT_OK;
  }
  j.fill = dt__ew_kernels()->fill[j.ys == 8];
  dt__par_for(n, DT__GRAIN_MEM, dt__ew_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_unary(int dev, dt__unary_op op, dt_dtype t, int64_t n, const void *x, void *y, double p0, double p1) {
  dt__ew_job j;
  int math = op == DT__U_EXP || op == DT__U_LOG || op == DT__U_SQRT || op == DT__U_SIGMOID || op == DT__U_TANH || op >= DT__U_SIN;
  (void)dev;
  memset(&j, 0, sizeof j);
  switch (t) {
    case DT_F32: {
      static const dt__map_fn tab[] = {dt__map_affine_f32, NULL, NULL, dt__map_sqrt_f32, dt__map_neg_f32, NULL,
                                       NULL, dt__map_tanh_f32, dt__map_abs_f32, dt__map_sin_f32,
                                       dt__map_cos_f32, dt__map_erf_f32, dt__map_gelu_f32, dt__map_gelu_grad_f32,
                                       dt__map_pow_f32, dt__map_clamp_f32, dt__map_softplus_f32};
      j.map = op == DT__U_EXP    ? dt__ew_kernels()->exp_f32
              : op == DT__U_LOG  ? dt__ew_kernels()->log_f32
              : op == DT__U_RELU ? dt__ew_kernels()->relu_f32
              : op == DT__U_SIGMOID ? dt__ew_kernels()->sigmoid_f32
                                 : tab[op];
      break;
    }
    case DT_F64: {
      static const dt__map_fn tab[] = {dt__map_affine_f64, dt__map_exp_f64, dt__map_log_f64, dt__map_sqrt_f64, dt__map_neg_f64, dt__map_relu_f64,
                                       dt__map_sigmoid_f64, dt__map_tanh_f64, dt__map_abs_f64, dt__map_sin_f64,
                                       dt__map_cos_f64, dt__map_erf_f64, dt__map_gelu_f64, dt__map_gelu_grad_f64,
                                       dt__map_pow_f64, dt__map_clamp_f64, dt__map_softplus_f64};
      j.map = tab[op];
      break;
    }
    case DT_I32: j.map = op == DT__U_NEG ? dt__map_neg_i32 : op == DT__U_ABS ? dt__map_abs_i32 : dt__map_affine_i32; break;
    case DT_I64: j.map = op == DT__U_NEG ? dt__map_neg_i64 : op == DT__U_ABS ? dt__map_abs_i64 : dt__map_affine_i64; break;
    case DT_U8: case DT_BOOL: return DT_ERR_DTYPE; /* the core refuses them first */
    case DT_F16: case DT_BF16: return DT_ERR_DTYPE; /* through F32: the core's table (src/core/half.c) */
  }
  j.x = (const char *)x; j.y = (char *)y;
  j.xs = j.ys = dt_dtype_size(t);
  j.p0 = p0; j.p1 = p1;
  dt__par_for(n, math ? DT__GRAIN_MATH : DT__GRAIN_MEM, dt__ew_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_cast(int dev, dt_dtype from, dt_dtype to, int64_t n, const void *x, void *y) {
  static const dt__conv_fn tab[4][4] = {
    {NULL, NULL, dt__conv_f32_i32, dt__conv_f32_i64},
    {NULL, NULL, dt__conv_f64_i32, dt__conv_f64_i64},
    {dt__conv_i32_f32, dt__conv_i32_f64, NULL, dt__conv_i32_i64},
    {dt__conv_i64_f32, dt__conv_i64_f64, dt__conv_i64_i32, NULL}};
  dt__ew_job j;
  (void)dev;
  if (from == to) { memcpy(y, x, (size_t)n * dt_dtype_size(to)); return DT_OK; }
  if (from == DT_F16 || from == DT_BF16 || to == DT_F16 || to == DT_BF16) return dt__cpu_cast_half(from, to, n, x, y);
  if (from == DT_U8 || from == DT_BOOL || to == DT_U8 || to == DT_BOOL) { /* bytes: dt__bytes_task */
    dt__bytes_job bj;
    bj.from = from; bj.to = to; bj.x = (const char *)x; bj.y = (char *)y;
    dt__par_for(n, DT__GRAIN_MEM, dt__bytes_task, &bj);
    return DT_OK;
  }
  if ((unsigned)from > DT_I64 || (unsigned)to > DT_I64) return DT_ERR_DTYPE; /* checked by dt_cast; GCC -O3 cannot tell */
  memset(&j, 0, sizeof j);
  j.conv = from == DT_F32 && to == DT_F64 ? dt__ew_kernels()->f32_f64
           : from == DT_F64 && to == DT_F32 ? dt__ew_kernels()->f64_f32 : tab[from][to];
  j.x = (const char *)x; j.y = (char *)y;
  j.xs = dt_dtype_size(from); j.ys = dt_dtype_size(to);
  dt__par_for(n, DT__GRAIN_MEM, dt__ew_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_binary(int dev, dt__binary_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  static const dt__zip_fn itab[2][6] = {
    {dt__zip_add_i32, dt__zip_sub_i32, dt__zip_mul_i32, NULL, NULL, dt__zip_copy_i32},
    {dt__zip_add_i64, dt__zip_sub_i64, dt__zip_mul_i64, NULL, NULL, dt__zip_copy_i64}};
  dt__pair_job j;
  (void)dev;
  memset(&j, 0, sizeof j);
  if (t == DT_F32 || t == DT_F64) {
    int dbl = t == DT_F64;
    if (op <= DT__B_DIV) j.zip = dt__ew_kernels()->arith[dbl][op];
    else if (op == DT__B_RELU_GRAD) j.zip = dbl ? dt__zip_relu_grad_f64 : dt__ew_kernels()->relu_grad_f32;
    else if (op == DT__B_SIGMOID_GRAD) j.zip = dbl ? dt__zip_sigmoid_grad_f64 : dt__ew_kernels()->sigmoid_grad_f32;
    else if (op == DT__B_TANH_GRAD) j.zip = dbl ? dt__zip_tanh_grad_f64 : dt__ew_kernels()->tanh_grad_f32;
    else j.zip = dbl ? dt__zip_copy_f64 : dt__zip_copy_f32;
  } else if (t == DT_U8 || t == DT_BOOL) { /* copies only (transposes); the core refuses arithmetic */
    if (op != DT__B_COPY_A) return DT_ERR_DTYPE;
    j.zip = dt__zip_copy_u8;
  } else {
    if (op > DT__B_COPY_A) return DT_ERR_DTYPE; /* float only: the core refuses them first */
    j.zip = itab[t == DT_I64][op];
    if (!j.zip) return DT_ERR_DTYPE;
  }
  j.g = g; j.a = (const char *)a; j.b = (const char *)b; j.y = (char *)y;
  j.es = j.ys = dt_dtype_size(t);
  dt__pair_par(&j);
  return DT_OK;
}


static dt_status dt__cpu_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  dt__ew_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  memset(&j, 0, sizeof j);
  j.map = t == DT_F32 ? dt__map_axpy_f32 : dt__map_axpy_f64;
  j.x = (const char *)x; j.y = (char *)y;
  j.xs = j.ys = dt_dtype_size(t);
  j.p0 = alpha;
  dt__par_for(n, DT__GRAIN_MEM, dt__ew_task, &j);
  return DT_OK;
}

/* ---- src/cpu/random.c ---- */
/* Normals on x86 (GCC/Clang): dt__box_muller on vectors of pairs, compiled for the baseline,
   AVX2 and AVX-512 as the elementwise kernels are. Every lane does dt__box_muller's operations
   in its order, with the same constants, so the results are its bits (tests/test_random.c
   compares them over many words and the edge cases); what differs: log's scaling of x into
   [sqrt(1/2), sqrt(2)) reads x's exponent from its bits instead of doubling in a loop (the
   same m and e: the scaling is exact), and the octant's branch is a select. Contraction into
   FMA stays off (GCC: the optimize attribute, whatever the -std or -ffp-contract; Clang: the
   pragma, as in dt__box_muller, which an explicit -ffp-contract=fast overrides in both). */
#if DT__EW_X86
#if defined(__clang__)
#define DT__BM_ATTR
#else
#define DT__BM_ATTR __attribute__((optimize("fp-contract=off")))
#endif
#define DT__BM_NP 16 /* pairs per call */
/* dt__box_muller on DT__BM_NP pairs of words, L = sizeof(VD) / 8 lanes at a time */
#define DT__BM_BOX_MULLER_N(NAME, TARGET, VD, VI)                                                         \
  TARGET DT__BM_ATTR static void NAME(const uint32_t *w0, const uint32_t *w1, float *z0, float *z1) {     \
    DT__NO_CONTRACT                                                                                       \
    static const double lc[13] = {1.0 / 27, 1.0 / 25, 1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15,   \
                                  1.0 / 13, 1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};             \
    static const double sin_c[9] = {-1.0 / 121645100408832000.0, 1.0 / 355687428096000.0,                 \
                                    -1.0 / 1307674368000.0, 1.0 / 6227020800.0, -1.0 / 39916800.0,        \
                                    1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0};              \
    static const double cos_c[10] = {1.0 / 2432902008176640000.0, -1.0 / 6402373705728000.0,              \
                                     1.0 / 20922789888000.0, -1.0 / 87178291200.0, 1.0 / 479001600.0,     \
                                     -1.0 / 3628800.0, 1.0 / 40320.0, -1.0 / 720.0, 1.0 / 24.0, -1.0 / 2.0}; \
    enum { L = sizeof(VD) / 8 };                                                                          \
    int v, l, i;                                                                                          \
    for (v = 0; v < DT__BM_NP; v += L) {                                                                  \
      /* x, t and q start at zero: their lanes are set one by one below, which some GCC versions'         \
         -Wuninitialized call a use of the whole vector */                                                \
      VD x = {0}, t = {0}, mant, m, ed, f, s, z, p, lg, r, a, zz, ps, pc, sn, cs, S, C, c, d, rc, rd;     \
      VI bits, ex, big, lo, q = {0}, q0, q1, q2, q3;                                                      \
      for (l = 0; l < L; l++) {                                                                           \
        x[l] = (double)w0[v + l] + 1.0;                                                                   \
        t[l] = (double)(w1[v + l] & 0x3FFFFFFFu);                                                         \
        q[l] = (long long)(w1[v + l] >> 30);                                                              \
      }                                                                                                   \
      x = x * (1.0 / 4294967296.0); /* u1 in (0, 1], exact */                                             \
      t = t * (1.0 / 1073741824.0);                                                                       \
      /* dt__log_unit(x): m = x 2^-e in [sqrt(1/2), sqrt(2)) (x = 1: m = 1, e = 0) */                     \
      bits = (VI)x;                                                                                       \
      ex = ((bits >> 52) & 0x7FF) - 1023;                                                                 \
      mant = (VD)((bits & 0x000FFFFFFFFFFFFFLL) | 0x3FF0000000000000LL); /* [1, 2) */                     \
      big = (VI)(mant >= 2.0 * 0.7071067811865476);                                                       \
      m = (VD)(((VI)(mant * 0.5) & big) | ((VI)mant & ~big));                                             \
      ex = ex - big;                                                                                      \
      ed = (VD)((ex + 1024) | 0x4330000000000000LL) - 4503599627371520.0; /* (double)e */                 \
      f = m + -1.0;                                                                                       \
      s = f / (f + 2.0);                                                                                  \
      z = s * s;                                                                                          \
      p = z * 0.0 + lc[0]; /* z >= 0: lc[0] */                                                            \
      for (i = 1; i < 13; i++) p = p * z + lc[i];                                                         \
      lg = ed * 0.6931471806019545 + (ed * -4.2009150726810846e-11 + (2.0 * s + (2.0 * s) * (z * p)));    \
      r = -2.0 * lg;                                                                                      \
      for (l = 0; l < L; l++) r[l] = DT__DSQRT(r[l]);                                                     \
      /* sin and cos of the octant */                                                                     \
      lo = (VI)(t <= 0.5);                                                                                \
      a = (VD)(((VI)t & lo) | ((VI)(1.0 + -t) & ~lo));                                                    \
      a = a * 1.5707963267948966;                                                                         \
      zz = a * a;                                                                                         \
      ps = zz * 0.0 + sin_c[0];                                                                           \
      pc = zz * 0.0 + cos_c[0];                                                                           \
      for (i = 1; i < 9; i++) ps = ps * zz + sin_c[i];                                                    \
      for (i = 1; i < 10; i++) pc = pc * zz + cos_c[i];                                                   \
      sn = a + (a * zz) * ps;                                                                             \
      cs = 1.0 + zz * pc;                                                                                 \
      S = (VD)(((VI)sn & lo) | ((VI)cs & ~lo));                                                           \
      C = (VD)(((VI)cs & lo) | ((VI)sn & ~lo));                                                           \
      q0 = (VI)(q == 0); q1 = (VI)(q == 1);                                                               \
      q2 = (VI)(q == 2); q3 = (VI)(q == 3);                                                               \
      c = (VD)(((VI)C & q0) | ((VI)(-S) & q1) |                                                           \
                          ((VI)(-C) & q2) | ((VI)S & q3));                                                \
      d = (VD)(((VI)S & q0) | ((VI)C & q1) |                                                              \
                          ((VI)(-S) & q2) | ((VI)(-C) & q3));                                             \
      rc = r * c;                                                                                         \
      rd = r * d;                                                                                         \
      for (l = 0; l < L; l++) { z0[v + l] = (float)rc[l]; z1[v + l] = (float)rd[l]; }                     \
    }                                                                                                     \
  }

/* dt__philox_block for blocks j0 .. j0 + DT__BM_NP / 2 - 1, words in pair order: pair 2b is words 0      \
   and 1 of block b, pair 2b + 1 words 2 and 3 */
#define DT__BM_PHILOX_N(NAME, TARGET, VU)                                                                 \
  TARGET static void NAME(uint64_t seed, uint64_t draw, uint64_t j0, uint32_t *w0, uint32_t *w1) {        \
    enum { L = sizeof(VU) / 8 };                                                                          \
    int v, l, r;                                                                                          \
    for (v = 0; v < DT__BM_NP / 2; v += L) {                                                              \
      VU c0, c1, c2, c3, p0, p1, m32;                                                                     \
      uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);                                          \
      for (l = 0; l < L; l++) {                                                                           \
        const uint64_t j = j0 + (uint64_t)(v + l);                                                        \
        c0[l] = (uint32_t)j; c1[l] = (uint32_t)(j >> 32); m32[l] = 0xFFFFFFFFu;                           \
      }                                                                                                   \
      c2 = m32 & (uint32_t)draw; c3 = m32 & (uint32_t)(draw >> 32);                                       \
      for (r = 0; r < 10; r++) {                                                                          \
        VU n0, n2;                                                                                        \
        p0 = c0 * 0xD2511F53u; p1 = c2 * 0xCD9E8D57u;                                                     \
        n0 = (p1 >> 32) ^ c1 ^ k0; n2 = (p0 >> 32) ^ c3 ^ k1;                                             \
        c1 = p1 & m32; c3 = p0 & m32; c0 = n0; c2 = n2;                                                   \
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;                                                             \
      }                                                                                                   \
      for (l = 0; l < L; l++) {                                                                           \
        const int b = v + l;                                                                              \
        w0[2 * b] = (uint32_t)c0[l]; w1[2 * b] = (uint32_t)c1[l];                                         \
        w0[2 * b + 1] = (uint32_t)c2[l]; w1[2 * b + 1] = (uint32_t)c3[l];                                 \
      }                                                                                                   \
    }                                                                                                     \
  }

/* the variants' vectors of 64-bit integers (their doubles: dt__vd_*) */
typedef long long dt__bm_i_base __attribute__((vector_size(16)));
typedef unsigned long long dt__bm_u_base __attribute__((vector_size(16)));
typedef long long dt__bm_i_avx2 __attribute__((vector_size(32)));
typedef unsigned long long dt__bm_u_avx2 __attribute__((vector_size(32)));
typedef long long dt__bm_i_avx512 __attribute__((vector_size(64)));
typedef unsigned long long dt__bm_u_avx512 __attribute__((vector_size(64)));
DT__BM_BOX_MULLER_N(dt__box_muller_n_base, DT__TARGET_BASE, dt__vd_base, dt__bm_i_base)
DT__BM_PHILOX_N(dt__philox_n_base, DT__TARGET_BASE, dt__bm_u_base)
DT__BM_BOX_MULLER_N(dt__box_muller_n_avx2, DT__TARGET_AVX2, dt__vd_avx2, dt__bm_i_avx2)
DT__BM_PHILOX_N(dt__philox_n_avx2, DT__TARGET_AVX2, dt__bm_u_avx2)
DT__BM_BOX_MULLER_N(dt__box_muller_n_avx512, DT__TARGET_AVX512, dt__vd_avx512, dt__bm_i_avx512)
DT__BM_PHILOX_N(dt__philox_n_avx512, DT__TARGET_AVX512, dt__bm_u_avx512)
typedef void (*dt__box_muller_n_fn)(const uint32_t *w0, const uint32_t *w1, float *z0, float *z1);
typedef void (*dt__philox_n_fn)(uint64_t seed, uint64_t draw, uint64_t j0, uint32_t *w0, uint32_t *w1);
static const dt__philox_n_fn dt__philox_n_tab[DT__EW_NISA] = {dt__philox_n_base, dt__philox_n_avx2, dt__philox_n_avx512};
static const dt__box_muller_n_fn dt__box_muller_n_tab[DT__EW_NISA] = {dt__box_muller_n_base, dt__box_muller_n_avx2,
                                                                      dt__box_muller_n_avx512};
#endif

typedef struct dt__random_job {
  int normal;
  uint64_t seed, draw;
  int64_t n;
  float *y;
} dt__random_job;

/* Philox blocks [lo, hi) */
static void dt__random_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__random_job *r = (const dt__random_job *)ctx;
  int64_t j = lo;
#if DT__EW_X86
  { /* DT__BM_NP / 2 blocks at a time on vectors */
    const dt__box_muller_n_fn bm = dt__box_muller_n_tab[dt__ew_isa()];
    const dt__philox_n_fn ph = dt__philox_n_tab[dt__ew_isa()];
    uint32_t w0[DT__BM_NP], w1[DT__BM_NP];
    float z0[DT__BM_NP], z1[DT__BM_NP];
    int b, q;
    for (; hi - j >= DT__BM_NP / 2; j += DT__BM_NP / 2) {
      ph(r->seed, r->draw, (uint64_t)j, w0, w1);
      if (r->normal) bm(w0, w1, z0, z1);
      else
        for (b = 0; b < DT__BM_NP; b++) { z0[b] = dt__u32_to_uniform(w0[b]); z1[b] = dt__u32_to_uniform(w1[b]); }
      for (b = 0; b < DT__BM_NP / 2; b++) {
        const int64_t i0 = (j + b) * 4;
        const float zb[4] = {z0[2 * b], z1[2 * b], z0[2 * b + 1], z1[2 * b + 1]};
        for (q = 0; q < 4 && i0 + q < r->n; q++) r->y[i0 + q] = zb[q];
      }
    }
  }
#endif
  for (; j < hi; j++) {
    uint32_t w[4];
    float z[4];
    int q;
    dt__philox_block(r->seed, r->draw, (uint64_t)j, w);
    if (r->normal) { dt__box_muller(w[0], w[1], &z[0], &z[1]); dt__box_muller(w[2], w[3], &z[2], &z[3]); }
    else for (q = 0; q < 4; q++) z[q] = dt__u32_to_uniform(w[q]);
    for (q = 0; q < 4 && j * 4 + q < r->n; q++) r->y[j * 4 + q] = z[q];
  }
}

/* y[i] = word i % 4 of Philox block i / 4, as uniform or normal. y: (n,) */
static dt_status dt__cpu_random(int dev, int normal, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, float *y) {
  dt__random_job r;
  (void)dev;
  dt__rng_at(gen, &seed, &draw);
  r.normal = normal; r.seed = seed; r.draw = draw; r.n = n; r.y = y;
  dt__par_for((n + 3) / 4, DT__GRAIN_MATH / 4, dt__random_task, &r);
  return DT_OK;
}

/* ---- src/cpu/reduce.c ---- */
/* Sums in double. x: (outer, len, inner) -> y: (outer, inner). A sum over contiguous elements
   (inner == 1) adds blocks of dt__red_block(len) elements, each as 16 partial sums
   (dt__sum16_fn) added pairwise, and then the blocks' sums in order; the blocks of one long
   row (outer == 1) go to the threads. Other shapes keep a double per output column and add
   the rows in order; the (outer, 256-column) tiles go to the threads. */

#define DT__RED_MAXBLOCKS 1024

static int64_t dt__red_block(int64_t len) {
  int64_t b = 65536;
  if (len > b * DT__RED_MAXBLOCKS) b = ((len + DT__RED_MAXBLOCKS - 1) / DT__RED_MAXBLOCKS + 15) & ~(int64_t)15;
  return b;
}

/* What the reductions, arg reductions and softmax work on: x: (outer, len, inner) of t (F32 or
   F64) into y (arg reductions: the values, or NULL); a long row is cut in blocks of block elements. */
typedef struct dt__rows {
  dt_dtype t;
  int64_t outer, len, inner, block;
  const char *x;
  char *y;
} dt__rows;

static dt__rows dt__rows_of(dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__rows r;
  r.t = t; r.outer = outer; r.len = len; r.inner = inner; r.block = dt__red_block(len);
  r.x = (const char *)x; r.y = (char *)y;
  return r;
}

/* block b of the one row (outer == inner == 1): where it starts; its length in *n */
static const char *dt__rows_block(const dt__rows *r, int64_t b, int64_t *n) {
  const int64_t s = b * r->block;
  *n = r->len - s < r->block ? r->len - s : r->block;
  return r->x + (size_t)s * dt_dtype_size(r->t);
}

typedef struct dt__red_job {
  dt__rows r;
  dt__reduce_op op;
  dt__sum16_fn sum16;
  double *part; /* outer == 1: one sum per block */
} dt__red_job;

static double dt__red_block_sum(const dt__red_job *j, const void *x, int64_t n) {
  double a[16];
  int k;
  j->sum16(n, x, j->op == DT__R_NORM, a);
  for (k = 0; k < 8; k++) a[k] += a[k + 8];
  for (k = 0; k < 4; k++) a[k] += a[k + 4];
  return (a[0] + a[2]) + (a[1] + a[3]);
}

static void dt__red_store(const dt__red_job *j, int64_t at, double v) {
  if (j->op == DT__R_MEAN) v = j->r.len ? v / (double)j->r.len : NAN;
  else if (j->op == DT__R_NORM) v = sqrt(v);
  if (j->r.t == DT_F32) ((float *)j->r.y)[at] = (float)v;
  else ((double *)j->r.y)[at] = v;
}

/* outer == 1, inner == 1: items are blocks */
static void dt__red_task_blocks(void *ctx, int64_t lo, int64_t hi) {
  const dt__red_job *j = (const dt__red_job *)ctx;
  int64_t b, n;
  for (b = lo; b < hi; b++) {
    const char *x = dt__rows_block(&j->r, b, &n);
    j->part[b] = dt__red_block_sum(j, x, n);
  }
}

/* inner == 1: items are rows */
static void dt__red_task_rows(void *ctx, int64_t lo, int64_t hi) {
  const dt__red_job *j = (const dt__red_job *)ctx;
  size_t es = dt_dtype_size(j->r.t);
  int64_t o, s;
  for (o = lo; o < hi; o++) {
    double acc = 0;
    for (s = 0; s < j->r.len; s += j->r.block)
      acc += dt__red_block_sum(j, j->r.x + (size_t)(o * j->r.len + s) * es, j->r.len - s < j->r.block ? j->r.len - s : j->r.block);
    dt__red_store(j, o, acc);
  }
}

/* (outer, inner) split in tiles of DT__COL_TILE columns (inner > 1): item it is tile (o, columns
   i0 .. i0 + cnt). Narrower tiles (64 columns) give a (256, 256) column sum more tasks, but each
   takes nearly as long as a tile of 256, and two threads were slower than one. */
#define DT__COL_TILE 256
typedef struct dt__col_tile {
  int64_t o, i0, cnt;
} dt__col_tile;

static dt__col_tile dt__col_tile_of(int64_t it, int64_t inner) {
  const int64_t tiles = (inner + DT__COL_TILE - 1) / DT__COL_TILE;
  dt__col_tile c;
  c.o = it / tiles;
  c.i0 = it % tiles * DT__COL_TILE;
  c.cnt = inner - c.i0 < DT__COL_TILE ? inner - c.i0 : DT__COL_TILE;
  return c;
}

/* runs fn over the outer * tiles items, each of len * cnt elements, in chunks of about grain elements */
static void dt__par_col_tiles(int64_t outer, int64_t len, int64_t inner, int64_t grain, dt__task_fn fn, void *ctx) {
  int64_t tiles = (inner + DT__COL_TILE - 1) / DT__COL_TILE, per = (len ? len : 1) * (inner < DT__COL_TILE ? inner : DT__COL_TILE);
  dt__par_for(outer * tiles, (grain + per - 1) / per, fn, ctx);
}

/* acc[0 .. cnt) = the sums (of squares with norm) of the len rows x + r * inner, in row order */
#define DT__RED_COLS_DEFINE(NAME, T)                                                                \
  static void NAME(int norm, const T *x, int64_t len, int64_t inner, int64_t cnt, double *acc) {     \
    int64_t ic, r;                                                                                  \
    for (ic = 0; ic < cnt; ic++) acc[ic] = 0;                                                       \
    for (r = 0; r < len; r++) {                                                                     \
      const T *p = x + r * inner;                                                                   \
      if (norm) for (ic = 0; ic < cnt; ic++) acc[ic] += (double)p[ic] * p[ic];                      \
      else for (ic = 0; ic < cnt; ic++) acc[ic] += p[ic];                                           \
    }                                                                                               \
  }
DT__RED_COLS_DEFINE(dt__red_cols_f32, float)
DT__RED_COLS_DEFINE(dt__red_cols_f64, double)
#undef DT__RED_COLS_DEFINE

/* inner > 1: items are (o, 256-column tile) pairs */
static void dt__red_task_cols(void *ctx, int64_t lo, int64_t hi) {
  const dt__red_job *j = (const dt__red_job *)ctx;
  const int norm = j->op == DT__R_NORM;
  int64_t it, ic;
  for (it = lo; it < hi; it++) {
    const dt__col_tile c = dt__col_tile_of(it, j->r.inner);
    const int64_t off = c.o * j->r.len * j->r.inner + c.i0;
    double acc[DT__COL_TILE];
    if (j->r.t == DT_F32) dt__red_cols_f32(norm, (const float *)j->r.x + off, j->r.len, j->r.inner, c.cnt, acc);
    else dt__red_cols_f64(norm, (const double *)j->r.x + off, j->r.len, j->r.inner, c.cnt, acc);
    for (ic = 0; ic < c.cnt; ic++) dt__red_store(j, c.o * j->r.inner + c.i0 + ic, acc[ic]);
  }
}

static dt_status dt__cpu_reduce(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__red_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  j.r = dt__rows_of(t, outer, len, inner, x, y);
  j.op = op;
  j.sum16 = dt__ew_kernels()->sum16[t == DT_F64];
  j.part = NULL;
  if (outer <= 0 || inner <= 0) return DT_OK;
  if (inner == 1 && outer == 1) {
    double part[DT__RED_MAXBLOCKS], acc = 0;
    int64_t nb = (len + j.r.block - 1) / j.r.block, b;
    j.part = part;
    dt__par_for(nb, 1, dt__red_task_blocks, &j);
    for (b = 0; b < nb; b++) acc += part[b];
    dt__red_store(&j, 0, acc);
  } else if (inner == 1)
    dt__par_for(outer, (DT__GRAIN_MEM + len - 1) / (len ? len : 1), dt__red_task_rows, &j);
  else
    dt__par_col_tiles(outer, len, inner, DT__GRAIN_MEM, dt__red_task_cols, &j);
  return DT_OK;
}

/* ---- src/cpu/classify.c ---- */
/* x: (outer, len, inner). Rows (inner == 1) go to the threads in chunks of rows; other shapes in
   (outer, 256-column) tiles, each column's state (max, sum) kept in a small array. F32 softmax
   takes the vector exp (dt__ew_kernels()->exp_f32) on contiguous rows; sums are in double. */

/* v beats best at a later index: NaN beats everything but an earlier NaN; ties keep the earlier */
#define DT__ARG_BEATS(v, best, min) ((best) == (best) && ((v) != (v) || ((min) ? (v) < (best) : (v) > (best))))

typedef struct dt__arg_job {
  dt__rows r; /* r.y: the values (or NULL) */
  int min;
  int64_t *idx;
  double *pv;  /* one long row: per block, the best value and its index */
  int64_t *pi;
} dt__arg_job;

/* the best of x[0 .. n) at stride s: value and index */
#define DT__ARG_SCAN_DEFINE(NAME, T)                                                                \
  static void NAME(int min, const T *x, int64_t n, int64_t s, double *val, int64_t *at) {            \
    T best = x[0];                                                                                  \
    int64_t bi = 0, r;                                                                              \
    for (r = 1; r < n && best == best; r++) {                                                       \
      const T v = x[r * s];                                                                         \
      const int beats = DT__ARG_BEATS(v, best, min); /* no branch: mispredicted on random rows */   \
      best = beats ? v : best;                                                                      \
      bi = beats ? r : bi;                                                                          \
    }                                                                                               \
    *val = (double)best;                                                                            \
    *at = bi;                                                                                       \
  }
DT__ARG_SCAN_DEFINE(dt__arg_scan_f32, float)
DT__ARG_SCAN_DEFINE(dt__arg_scan_f64, double)
#undef DT__ARG_SCAN_DEFINE

static void dt__arg_scan(dt_dtype t, int min, const void *x, int64_t n, int64_t s, double *val, int64_t *at) {
  if (t == DT_F32) dt__arg_scan_f32(min, (const float *)x, n, s, val, at);
  else dt__arg_scan_f64(min, (const double *)x, n, s, val, at);
}

static void dt__arg_store(const dt__arg_job *j, int64_t at, double v, int64_t i) {
  if (j->r.y) {
    if (j->r.t == DT_F32) ((float *)j->r.y)[at] = (float)v;
    else ((double *)j->r.y)[at] = v;
  }
  if (j->idx) j->idx[at] = i;
}

/* outer == inner == 1: items are blocks of the one row */
static void dt__arg_task_blocks(void *ctx, int64_t lo, int64_t hi) {
  const dt__arg_job *j = (const dt__arg_job *)ctx;
  int64_t b, n;
  for (b = lo; b < hi; b++) {
    const char *x = dt__rows_block(&j->r, b, &n);
    dt__arg_scan(j->r.t, j->min, x, n, 1, &j->pv[b], &j->pi[b]);
    j->pi[b] += b * j->r.block;
  }
}

/* items are output positions (o, i), strided scans of len */
static void dt__arg_task_outs(void *ctx, int64_t lo, int64_t hi) {
  const dt__arg_job *j = (const dt__arg_job *)ctx;
  size_t es = dt_dtype_size(j->r.t);
  int64_t k;
  for (k = lo; k < hi; k++) {
    int64_t o = k / j->r.inner, i = k % j->r.inner, at;
    double v;
    dt__arg_scan(j->r.t, j->min, j->r.x + (size_t)(o * j->r.len * j->r.inner + i) * es, j->r.len, j->r.inner, &v, &at);
    dt__arg_store(j, k, v, at);
  }
}

static dt_status dt__cpu_arg_reduce(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x,
                                    void *vals, int64_t *idx) {
  dt__arg_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  if (outer <= 0 || inner <= 0 || len <= 0) return DT_OK;
  j.r = dt__rows_of(t, outer, len, inner, x, vals);
  j.min = min; j.idx = idx;
  if (outer == 1 && inner == 1 && len > j.r.block) {
    double pv[DT__RED_MAXBLOCKS];
    int64_t pi[DT__RED_MAXBLOCKS], nb = (len + j.r.block - 1) / j.r.block, b, bi;
    double bv;
    pv[0] = 0; pi[0] = 0; /* nb >= 2: every one is written by the tasks */
    j.pv = pv; j.pi = pi;
    dt__par_for(nb, 1, dt__arg_task_blocks, &j);
    bv = pv[0]; bi = pi[0];
    for (b = 1; b < nb; b++)
      if (DT__ARG_BEATS(pv[b], bv, min)) { bv = pv[b]; bi = pi[b]; }
    dt__arg_store(&j, 0, bv, bi);
    return DT_OK;
  }
  j.pv = NULL; j.pi = NULL;
  dt__par_for(outer * inner, (DT__GRAIN_MEM + len - 1) / len, dt__arg_task_outs, &j);
  return DT_OK;
}

typedef struct dt__smax_job {
  dt__rows r;
  int log;
} dt__smax_job;

/* The max of x[0 .. n), NaN if any is NaN (-inf for n 0). No data-dependent branches: on random
   logits the max's branch was mispredicted (half of a 256x10 cross-entropy's time). */
#define DT__ROW_MAX_DEFINE(NAME, T)                                                                 \
  static T NAME(const T *x, int64_t n) {                                                            \
    T m = -INFINITY;                                                                                \
    int64_t r;                                                                                      \
    int nan = 0;                                                                                    \
    for (r = 0; r < n; r++) {                                                                       \
      const T v = x[r];                                                                             \
      nan |= v != v;                                                                                \
      m = v > m ? v : m;                                                                            \
    }                                                                                               \
    return nan ? NAN : m;                                                                           \
  }
DT__ROW_MAX_DEFINE(dt__row_max_f32, float)
DT__ROW_MAX_DEFINE(dt__row_max_f64, double)

/* one contiguous F32 row: y = softmax(x) or log_softmax(x) */
static void dt__smax_row_f32(int lg, int64_t len, const float *x, float *y) {
  const dt__map_fn vexp = dt__ew_kernels()->exp_f32;
  const float m = dt__row_max_f32(x, len); /* a NaN anywhere makes the whole row NaN, as in PyTorch */
  float tmp[256];
  double s = 0;
  int64_t r, k;
  for (r = 0; r < len; r++) y[r] = x[r] - m; /* all -inf (m = -inf) or an inf: NaN, as in PyTorch */
  if (!lg) {
    float inv;
    vexp(len, y, y, 0, 0);
    for (r = 0; r < len; r++) s += y[r];
    inv = (float)(1.0 / s);
    for (r = 0; r < len; r++) y[r] *= inv;
    return;
  }
  for (r = 0; r < len; r += 256) {
    int64_t c = len - r < 256 ? len - r : 256;
    vexp(c, y + r, tmp, 0, 0);
    for (k = 0; k < c; k++) s += tmp[k];
  }
  {
    float ls = (float)log(s);
    for (r = 0; r < len; r++) y[r] -= ls;
  }
}

static void dt__smax_row_f64(int lg, int64_t len, const double *x, double *y) {
  const double m = dt__row_max_f64(x, len);
  double s = 0;
  int64_t r;
  for (r = 0; r < len; r++) s += exp(x[r] - m);
  if (lg) { double ls = log(s); for (r = 0; r < len; r++) y[r] = x[r] - m - ls; }
  else for (r = 0; r < len; r++) y[r] = exp(x[r] - m) / s;
}

/* inner == 1: items are rows */
static void dt__smax_task_rows(void *ctx, int64_t lo, int64_t hi) {
  const dt__smax_job *j = (const dt__smax_job *)ctx;
  int64_t o;
  for (o = lo; o < hi; o++) {
    if (j->r.t == DT_F32) dt__smax_row_f32(j->log, j->r.len, (const float *)j->r.x + o * j->r.len, (float *)j->r.y + o * j->r.len);
    else dt__smax_row_f64(j->log, j->r.len, (const double *)j->r.x + o * j->r.len, (double *)j->r.y + o * j->r.len);
  }
}

/* softmax (log_softmax with lg) of cnt columns down len rows, x + r * inner to y + r * inner;
   three passes down the columns */
#define DT__SMAX_COLS_DEFINE(NAME, T, EXP)                                                          \
  static void NAME(int lg, const T *x, T *y, int64_t len, int64_t inner, int64_t cnt) {              \
    T m[DT__COL_TILE];                                                                              \
    double s[DT__COL_TILE];                                                                         \
    char nan[DT__COL_TILE];                                                                         \
    int64_t ic, r;                                                                                  \
    for (ic = 0; ic < cnt; ic++) { m[ic] = -INFINITY; s[ic] = 0; nan[ic] = 0; }                     \
    for (r = 0; r < len; r++)                                                                       \
      for (ic = 0; ic < cnt; ic++) {                                                                \
        T v = x[r * inner + ic];                                                                    \
        if (v > m[ic]) m[ic] = v;                                                                   \
        else if (v != v) nan[ic] = 1;                                                               \
      }                                                                                             \
    for (ic = 0; ic < cnt; ic++) if (nan[ic]) m[ic] = (T)NAN;                                       \
    for (r = 0; r < len; r++)                                                                       \
      for (ic = 0; ic < cnt; ic++) s[ic] += EXP(x[r * inner + ic] - m[ic]);                         \
    for (ic = 0; ic < cnt; ic++) s[ic] = lg ? log(s[ic]) : 1.0 / s[ic];                             \
    for (r = 0; r < len; r++)                                                                       \
      for (ic = 0; ic < cnt; ic++) {                                                                \
        T d = x[r * inner + ic] - m[ic];                                                            \
        y[r * inner + ic] = lg ? (T)(d - (T)s[ic]) : (T)(EXP(d) * (T)s[ic]);                        \
      }                                                                                             \
  }
DT__SMAX_COLS_DEFINE(dt__smax_cols_f32, float, expf)
DT__SMAX_COLS_DEFINE(dt__smax_cols_f64, double, exp)
#undef DT__SMAX_COLS_DEFINE

/* inner > 1: items are (o, 256-column tile) pairs */
static void dt__smax_task_cols(void *ctx, int64_t lo, int64_t hi) {
  const dt__smax_job *j = (const dt__smax_job *)ctx;
  int64_t it;
  for (it = lo; it < hi; it++) {
    const dt__col_tile c = dt__col_tile_of(it, j->r.inner);
    const int64_t off = c.o * j->r.len * j->r.inner + c.i0;
    if (j->r.t == DT_F32) dt__smax_cols_f32(j->log, (const float *)j->r.x + off, (float *)j->r.y + off, j->r.len, j->r.inner, c.cnt);
    else dt__smax_cols_f64(j->log, (const double *)j->r.x + off, (double *)j->r.y + off, j->r.len, j->r.inner, c.cnt);
  }
}

static dt_status dt__cpu_softmax(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__smax_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  if (outer <= 0 || inner <= 0 || len <= 0) return DT_OK;
  j.r = dt__rows_of(t, outer, len, inner, x, y);
  j.log = lg;
  if (inner == 1) dt__par_for(outer, (DT__GRAIN_MATH + len - 1) / len, dt__smax_task_rows, &j);
  else dt__par_col_tiles(outer, len, inner, DT__GRAIN_MATH, dt__smax_task_cols, &j);
  return DT_OK;
}

typedef struct dt__xent_job {
  int grad;
  dt_dtype t;
  int64_t n, c, block;
  const char *x;
  const int64_t *target;
  char *y;
  double *part; /* loss: one sum per block of rows */
} dt__xent_job;

/* one row xr of c logits with label lab: its loss (log-sum-exp - xr[lab]), and with g its gradient
   row (softmax - onehot) * scale. A label outside [0, c) is never used: the loss and the row are NaN. */
#define DT__XENT_ROW_DEFINE(NAME, T, EXP, MAX)                                                      \
  static double NAME(const T *xr, int64_t c, int64_t lab, T *g, double scale) {                      \
    const int ok = lab >= 0 && lab < c;                                                             \
    const T m = MAX(xr, c);                                                                         \
    double s = 0;                                                                                   \
    int64_t k;                                                                                      \
    if (g) { /* each exp once: kept in g until the sum is known */                                 \
      for (k = 0; k < c; k++) s += g[k] = EXP(xr[k] - m);                                           \
      for (k = 0; k < c; k++)                                                                       \
        g[k] = ok ? (T)((g[k] / s - (k == lab ? 1.0 : 0.0)) * scale) : (T)NAN;                      \
    } else                                                                                          \
      for (k = 0; k < c; k++) s += EXP(xr[k] - m);                                                  \
    return ok ? log(s) + (double)m - (double)xr[lab] : NAN;                                         \
  }
DT__XENT_ROW_DEFINE(dt__xent_row_f32, float, expf, dt__row_max_f32)
DT__XENT_ROW_DEFINE(dt__xent_row_f64, double, exp, dt__row_max_f64)
#undef DT__XENT_ROW_DEFINE

/* row i of the job; g: the gradient's base (NULL: the loss only) */
static double dt__xent_row(const dt__xent_job *j, int64_t i, void *g, double scale) {
  const int64_t lab = j->target[i];
  if (j->t == DT_F32)
    return dt__xent_row_f32((const float *)j->x + i * j->c, j->c, lab, g ? (float *)g + i * j->c : NULL, scale);
  return dt__xent_row_f64((const double *)j->x + i * j->c, j->c, lab, g ? (double *)g + i * j->c : NULL, scale);
}

/* F32 rows [lo, hi): the sum of their losses and, with g (the gradient's base), their gradient
   rows, as dt__xent_row_f32 gives them but with the exps of a block of rows taken at once by the
   vector exp (expf one element at a time was most of a training step's loss). */
#define DT__XENT_BLOCK 1024 /* elements */
static double dt__xent_rows_f32(const dt__xent_job *j, int64_t lo, int64_t hi, float *g, double scale) {
  const int64_t c = j->c;
  const float *x = (const float *)j->x;
  const dt__map_fn vexp = dt__ew_kernels()->exp_f32;
  float buf[DT__XENT_BLOCK], mx[DT__XENT_BLOCK];
  double acc = 0;
  int64_t r0, r1, r, k;
  if (c > DT__XENT_BLOCK) { /* wide rows: one at a time */
    for (r = lo; r < hi; r++) acc += dt__xent_row_f32(x + r * c, c, j->target[r], g ? g + r * c : NULL, scale);
    return acc;
  }
  for (r0 = lo; r0 < hi; r0 = r1) {
    float *e = g ? g + r0 * c : buf; /* x - max, then its exp, then (with g) the gradient */
    r1 = r0 + DT__XENT_BLOCK / c < hi ? r0 + DT__XENT_BLOCK / c : hi;
    for (r = r0; r < r1; r++) {
      const float *xr = x + r * c;
      const float m = dt__row_max_f32(xr, c);
      mx[r - r0] = m;
      for (k = 0; k < c; k++) e[(r - r0) * c + k] = xr[k] - m;
    }
    vexp((r1 - r0) * c, e, e, 0, 0);
    for (r = r0; r < r1; r++) {
      const int64_t lab = j->target[r];
      const int ok = lab >= 0 && lab < c;
      float *er = e + (r - r0) * c;
      double s = 0, inv;
      for (k = 0; k < c; k++) s += er[k];
      inv = 1.0 / s;
      if (g)
        for (k = 0; k < c; k++) er[k] = ok ? (float)((er[k] * inv - (k == lab ? 1.0 : 0.0)) * scale) : NAN;
      acc += ok ? log(s) + (double)mx[r - r0] - (double)x[r * c + lab] : NAN;
    }
  }
  return acc;
}

static void dt__xent_task_grad(void *ctx, int64_t lo, int64_t hi) {
  const dt__xent_job *j = (const dt__xent_job *)ctx;
  int64_t i;
  if (j->t == DT_F32) {
    (void)dt__xent_rows_f32(j, lo, hi, (float *)j->y, 1.0 / (double)j->n);
    return;
  }
  for (i = lo; i < hi; i++) (void)dt__xent_row(j, i, j->y, 1.0 / (double)j->n);
}

/* items are blocks of rows; each block's losses summed in order */
static void dt__xent_task_loss(void *ctx, int64_t lo, int64_t hi) {
  const dt__xent_job *j = (const dt__xent_job *)ctx;
  int64_t b, i;
  for (b = lo; b < hi; b++) {
    int64_t r1 = (b + 1) * j->block < j->n ? (b + 1) * j->block : j->n;
    double acc = 0;
    if (j->t == DT_F32) acc = dt__xent_rows_f32(j, b * j->block, r1, NULL, 0);
    else
      for (i = b * j->block; i < r1; i++) acc += dt__xent_row(j, i, NULL, 0);
    j->part[b] = acc;
  }
}

static dt_status dt__cpu_cross_entropy(int dev, int grad, dt_dtype t, int64_t n, int64_t c, const void *logits,
                                       const int64_t *target, void *y) {
  dt__xent_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64) return DT_ERR_DTYPE;
  if (n <= 0) return DT_OK;
  j.grad = grad; j.t = t; j.n = n; j.c = c; j.x = (const char *)logits; j.target = target; j.y = (char *)y; j.part = NULL;
  if (grad) {
    dt__par_for(n, (DT__GRAIN_MATH + c) / (c + 1), dt__xent_task_grad, &j);
  } else {
    double part[DT__RED_MAXBLOCKS], acc = 0;
    int64_t per = (DT__GRAIN_MATH + c) / (c + 1), nb, b;
    if (per * DT__RED_MAXBLOCKS < n) per = (n + DT__RED_MAXBLOCKS - 1) / DT__RED_MAXBLOCKS;
    j.block = per;
    nb = (n + per - 1) / per;
    j.part = part;
    dt__par_for(nb, 1, dt__xent_task_loss, &j);
    for (b = 0; b < nb; b++) acc += part[b];
    acc /= (double)n;
    if (t == DT_F32) *(float *)y = (float)acc;
    else *(double *)y = acc;
  }
  return DT_OK;
}

/* ---- src/cpu/gemm/overview.c ---- */
/* Row-major C = alpha * op(A) @ op(B) + beta * C for F32 and F64: dt__cpu_sgemm, dt__cpu_dgemm.

   The built-in kernel follows BLIS/GotoBLAS: op(A) is packed in (kc, mr) panels and op(B) in
   (kc, nr) panels into 64-byte aligned buffers, and a register-blocked micro-kernel computes an
   (mr, nr) tile of C from one panel of each, keeping the tile in registers for kc steps.
   The micro-kernels are written with GCC/Clang vector extensions (no intrinsics). On x86 with
   GCC >= 6 or Clang >= 5 they are also compiled for AVX2+FMA (6x16) and AVX-512 (12x32) through
   `target` attributes (each with edge kernels for a last panel of a few rows or of half the
   columns), and the best one the CPU has is picked at run time, so a plain -O2 build
   runs at full speed; DEVTENSOR_NO_CPU_DISPATCH turns that off (then the compiler flags decide:
   16-byte vectors for plain x86-64, wider with -mavx / -march=native). Other compilers get a
   plain C kernel. With -fopenmp the blocks of C are shared among the CPU backend's pool of
   threads (see "cpu threads": no OpenMP region is entered). F32 A B^T with few rows and columns
   and a long depth (a convolution's weight gradient) takes dot products of rows instead
   (dot.c: nothing packed, the depth in chunks on the threads). Tiny problems
   (m n k <= DT__GEMM_SMALL), thin ones (m or n <= 2), and any whose packing buffers cannot be
   allocated take a simple loop that needs no memory; nothing aborts or prints.

   With DEVTENSOR_CBLAS, cblas_sgemm/cblas_dgemm do the work (sizes above INT_MAX still take the
   built-in kernel). Their prototypes are declared here with int arguments and the standard CBLAS
   values (RowMajor 101, NoTrans 111, Trans 112), so no cblas.h is needed; if a cblas.h was
   included before this point (its guard CBLAS_H is defined), its declarations are used instead.
   An LP64 BLAS (32-bit int: -lopenblas, -lblas on Linux distributions, Accelerate) is assumed. */

/* Packing buffers: from the CPU backend's cache (a released buffer is the next call's: no system
   allocation per call once warm), or one DT_MALLOC per call where the user defined DT_MALLOC. */
#ifdef DT__HOST_DEFAULT_ALLOC
#define DT__GEMM_MALLOC(sz) dt__gemm_scratch_get(sz)
#define DT__GEMM_FREE(p, sz) dt__cpu_block_put((p), (sz), 0)
static void *dt__gemm_scratch_get(size_t sz) {
  size_t rounded;
  return dt__cpu_block_get(sz, 0, &rounded);
}
#else
#define DT__GEMM_MALLOC(sz) DT_MALLOC(sz)
#define DT__GEMM_FREE(p, sz) DT_FREE(p)
#endif

#if defined(__GNUC__) || defined(__clang__)
#ifndef DT__GEMM_VEC
#define DT__GEMM_VEC 1 /* GCC/Clang vector extensions (-DDT__GEMM_VEC=0: plain C, for testing) */
#endif
#define DT__GEMM_RESTRICT __restrict
#define DT__GEMM_MAYBE_UNUSED __attribute__((unused))
#else
#undef DT__GEMM_VEC
#define DT__GEMM_VEC 0
#define DT__GEMM_RESTRICT
#define DT__GEMM_MAYBE_UNUSED
#endif

/* ISO C/C++ modes make GCC stop fusing a*b+c into an FMA; the kernels want it. */
#if defined(__GNUC__) && !defined(__clang__)
#define DT__GEMM_FMA_ATTR __attribute__((optimize("fp-contract=fast")))
#else
#define DT__GEMM_FMA_ATTR
#endif

/* Run-time choice among AVX-512 / AVX2+FMA / baseline kernels (x86, GCC >= 6 or Clang >= 5). */
#if DT__GEMM_VEC && !defined(DEVTENSOR_NO_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__)) && \
    ((defined(__clang__) && __clang_major__ >= 5) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 6))
#define DT__GEMM_X86 1
#else
#define DT__GEMM_X86 0
#endif

/* Kernel families, in dt__gemm_plan_get's order of preference. */
enum { DT__GEMM_ISA_C = 0, DT__GEMM_ISA_AVX2 = 1, DT__GEMM_ISA_AVX512 = 2, DT__GEMM_ISA_COUNT = 3 };

/* c: (mr, nr) tile of C with row stride ldc; pa: (kc, MR) packed (lda unused); pb: kc rows of NR, ldb
   apart (NR: packed; or op(B)'s own rows, read in place, when they are contiguous and nr == NR).
   c = alpha * pa^T @ pb + beta * s on the first mr rows and nr columns, where s is the tile at cs with
   row stride lds: c itself (cs == c, lds == ldc), or a linear layer's bias row (lds 0), which then
   takes no pass of its own over C; beta == 0: cs is not read.
   The plan's kernd is the same kernel reading A in place: MR rows of kc contiguous elements, lda
   apart (mr == MR: it reads all MR rows); the same operations in the same order, so the same bits. */
typedef void (*dt__gemm_kern_fn)(int64_t kc, const void *pa, int64_t lda, const void *pb, int64_t ldb, void *c,
                                 int64_t ldc, const void *cs, int64_t lds, int mr, int nr, double alpha, double beta);
/* src: element (x, p) at src[x * rs + p * cs], x < rows, p < kc.
   dst: ceil(rows / r) panels of (kc, r), zero padded: panel q holds dst[(q * kc + p) * r + i] = src(q * r + i, p). */
typedef void (*dt__gemm_pack_fn)(int64_t rows, int64_t kc, const void *src, int64_t rs, int64_t cs, int r, void *dst);

/* the skinny kernel (no packing of A): see DT__GEMM_DEFINE_ROWS; NULL in plain C builds */
typedef void (*dt__gemm_rows_fn)(int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t rsa, int64_t csa,
                                 const void *b, int64_t rsb, const void *tail, int64_t ldt, double beta, void *c,
                                 int64_t ldc);

typedef struct dt__gemm_plan {
  dt__gemm_kern_fn kern;
  dt__gemm_kern_fn kernd; /* the kernel reading A in place, or NULL (plain C builds) */
  /* or NULL: kern for an edge of a packed panel, with the same operations on fewer rows or columns
     (so the same bits): the first 4 or 8 of its mr rows; its first nr / 2 columns (one vector) */
  dt__gemm_kern_fn kern4, kern8, kernh, kernhd; /* kernhd: kernh reading A in place, as kernd */
  dt__gemm_pack_fn pack;
  dt__gemm_rows_fn rows;
  int rw;                /* the rows kernel's column block (2 vectors) */
  size_t es;             /* element size */
  int mr, nr;            /* micro-tile */
  int64_t kc, nc;        /* depth of a packed panel (mr * kc fits L1), columns per task (kc * nc fits L2) */
} dt__gemm_plan;

/* ---- src/cpu/gemm/pack.c ---- */
/* Four rows x0..x0+3 of a source whose depths are contiguous (cs == 1) into a panel of width r:
   d[p * r + i] = s[i * rs + p]. F32 with vector shuffles (GCC >= 12, Clang) goes 4x4 blocks at a
   time: four 16-byte loads, eight shuffles, four 16-byte stores, several times faster than the
   scalar copy (which reads one element of each row in turn). */
#if DT__GEMM_VEC && (defined(__clang__) || __GNUC__ >= 12)
typedef float dt__gemm_t4 __attribute__((vector_size(16)));
static void dt__gemm_tr4_f32(const void *s_, int64_t rs, int64_t kc, int r, void *d_) {
  const float *s = (const float *)s_;
  float *d = (float *)d_;
  int64_t p;
  int i;
  for (p = 0; p + 4 <= kc; p += 4) {
    dt__gemm_t4 r0, r1, r2, r3, t0, t1, t2, t3, o0, o1, o2, o3;
    memcpy(&r0, s + p, sizeof r0);
    memcpy(&r1, s + rs + p, sizeof r1);
    memcpy(&r2, s + 2 * rs + p, sizeof r2);
    memcpy(&r3, s + 3 * rs + p, sizeof r3);
    t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5); /* a0 b0 a1 b1 */
    t1 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7); /* a2 b2 a3 b3 */
    t2 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5); /* c0 d0 c1 d1 */
    t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7); /* c2 d2 c3 d3 */
    o0 = __builtin_shufflevector(t0, t2, 0, 1, 4, 5); /* a0 b0 c0 d0 */
    o1 = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    o2 = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    o3 = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
    memcpy(d + p * r, &o0, sizeof o0);
    memcpy(d + (p + 1) * r, &o1, sizeof o1);
    memcpy(d + (p + 2) * r, &o2, sizeof o2);
    memcpy(d + (p + 3) * r, &o3, sizeof o3);
  }
  for (; p < kc; p++)
    for (i = 0; i < 4; i++) d[p * r + i] = s[i * rs + p];
}
#endif
/* The plain copy, for F64 and where there are no vector shuffles. */
#define DT__GEMM_DEFINE_TR4(NAME, T)                                                                \
  static void NAME(const void *s_, int64_t rs, int64_t kc, int r, void *d_) {                       \
    const T *s = (const T *)s_;                                                                     \
    T *d = (T *)d_;                                                                                 \
    int64_t p;                                                                                      \
    int i;                                                                                          \
    for (i = 0; i < 4; i++)                                                                         \
      for (p = 0; p < kc; p++) d[p * r + i] = s[i * rs + p];                                        \
  }
#if !(DT__GEMM_VEC && (defined(__clang__) || __GNUC__ >= 12))
DT__GEMM_DEFINE_TR4(dt__gemm_tr4_f32, float)
#endif
DT__GEMM_DEFINE_TR4(dt__gemm_tr4_f64, double)

/* Defines NAME, a dt__gemm_pack_fn for element T; TR4 packs four rows of a source with cs == 1. */
#define DT__GEMM_DEFINE_PACK(NAME, T, TR4)                                                          \
  static void NAME(int64_t rows, int64_t kc, const void *src_, int64_t rs, int64_t cs, int r,       \
                   void *dst_) {                                                                    \
    const T *src = (const T *)src_;                                                                 \
    T *dst = (T *)dst_;                                                                             \
    int64_t x0, p;                                                                                  \
    int i;                                                                                          \
    for (x0 = 0; x0 < rows; x0 += r, dst += kc * r) {                                               \
      int w = rows - x0 < r ? (int)(rows - x0) : r;                                                 \
      const T *s = src + x0 * rs;                                                                   \
      if (rs == 1) { /* x contiguous: copy rows of the panel */                                     \
        for (p = 0; p < kc; p++) {                                                                  \
          const T *sp = s + p * cs;                                                                 \
          T *d = dst + p * r;                                                                       \
          for (i = 0; i + 4 <= w; i += 4) memcpy(d + i, sp + i, 4 * sizeof(T)); /* inlined moves */ \
          for (; i < w; i++) d[i] = sp[i];                                                          \
          for (; i < r; i++) d[i] = 0;                                                              \
        }                                                                                           \
      } else {                                                                                      \
        int64_t p0, p1;                                                                             \
        int x1 = 0; /* the x packed by TR4 */                                                       \
        if (cs == 1) /* p contiguous: four x at a time, each read in one sequential run */          \
          for (; x1 + 4 <= w; x1 += 4) TR4(s + x1 * rs, rs, kc, r, dst + x1);                       \
        for (p0 = 0; p0 < kc; p0 = p1) { /* the other x: each one, 64 depths at a time */           \
          p1 = p0 + 64 < kc ? p0 + 64 : kc;                                                         \
          for (i = x1; i < w; i++) {                                                                \
            const T *sx = s + i * rs;                                                               \
            T *d = dst + i;                                                                         \
            for (p = p0; p < p1; p++) d[p * r] = sx[p * cs];                                        \
          }                                                                                         \
        }                                                                                           \
        for (i = w; i < r; i++)                                                                     \
          for (p = 0; p < kc; p++) dst[p * r + i] = 0;                                              \
      }                                                                                             \
    }                                                                                               \
  }

DT__GEMM_DEFINE_PACK(dt__gemm_pack_f32, float, dt__gemm_tr4_f32)
DT__GEMM_DEFINE_PACK(dt__gemm_pack_f64, double, dt__gemm_tr4_f64)

/* ---- src/cpu/gemm/kernels_vec.c ---- */
#if DT__GEMM_VEC
/* The kernels' bodies, written with GCC/Clang vector extensions (no intrinsics). C has no
   generics, so each body is written once by a macro per vector type and instantiated below
   under its full name; the per-ISA kernels (kernels_isa.c) are one-line functions that give a
   body its target and constant shape. A body is always inlined there, and its loops over rows
   and vectors have constant trip counts then: the compiler unrolls them completely
   (DT__GEMM_UNROLL) and keeps the small accumulator arrays in registers. */

/* Vector types. Memory goes in and out of them through memcpy (one load or store). */
typedef float dt__gemm_f32x4 __attribute__((vector_size(16)));
typedef float dt__gemm_f32x8 __attribute__((vector_size(32)));
typedef float dt__gemm_f32x16 __attribute__((vector_size(64)));
typedef double dt__gemm_f64x2 __attribute__((vector_size(16)));
typedef double dt__gemm_f64x4 __attribute__((vector_size(32)));
typedef double dt__gemm_f64x8 __attribute__((vector_size(64)));

/* A body: inlined into each kernel (which gives it a target), never compiled on its own. */
#define DT__GEMM_INLINE static inline __attribute__((always_inline, unused))
/* Unrolls the loop that follows completely when its trip count is a constant (up to 16 for GCC):
   GCC's -O2 unrolls only loops that do not grow, and Clang unrolls a loop with a count pragma too
   late to keep the arrays in registers. Older GCC lacks the pragma (the loops stay loops: slower). */
#if defined(__clang__)
#define DT__GEMM_UNROLL _Pragma("unroll")
#elif __GNUC__ >= 8
#define DT__GEMM_UNROLL _Pragma("GCC unroll 16")
#else
#define DT__GEMM_UNROLL
#endif

/* The micro-kernel (a dt__gemm_kern_fn) on vector type V of W lanes of T: MR rows (at most 12)
   by NV vectors (1 or 2) of columns, acc[i] the accumulators of row i. AP: A's packed panel height
   (its step per depth; MR or more, the panel's first MR rows), or 0: A read in place, row i at
   pa + i * lda, one element a depth. tile: MR * NV * W elements of scratch for an edge tile
   (sized by the kernel: MR is a constant only there). */
#define DT__GEMM_DEFINE_TILE(NAME, T, V, W)                                                         \
  DT__GEMM_INLINE DT__GEMM_FMA_ATTR void NAME(const int MR, const int NV, const int AP, T *tile, int64_t kc, \
                            const void *pa_, int64_t lda, const void *pb_, int64_t ldb, void *c_,   \
                            int64_t ldc, const void *cs_, int64_t lds, int mr, int nr, double alpha, \
                            double beta) {                                                          \
    const T *DT__GEMM_RESTRICT pa = (const T *)pa_;                                                 \
    const T *DT__GEMM_RESTRICT pb = (const T *)pb_;                                                 \
    T *c = (T *)c_;                                                                                 \
    const T *cs = (const T *)cs_;                                                                   \
    const V vz = {0};                                                                               \
    const V va = vz + (T)alpha, vb = vz + (T)beta;                                                  \
    const int64_t ars = AP ? 1 : lda, step = AP ? AP : 1; /* A's row i at pa[i * ars] */            \
    /* row i: acc[i][0], and acc[i][1] when NV is 2; zeroed by the initializer (Clang kept the   \
       arrays of a zeroing loop in memory for 16-byte vectors) */                                   \
    V acc[12][2] = {{vz}};                                                                          \
    int64_t p;                                                                                      \
    int i, j;                                                                                       \
    for (p = 0; p < kc; p++) {                                                                      \
      V b0, b1 = vz;                                                                                \
      memcpy(&b0, pb, sizeof b0);                                                                   \
      if (NV == 2) memcpy(&b1, pb + W, sizeof b1);                                                  \
      DT__GEMM_UNROLL for (i = 0; i < MR; i++) {                                                    \
        const V ai = pa[i * ars] - vz; /* a splat */                                                \
        acc[i][0] += ai * b0;                                                                       \
        if (NV == 2) acc[i][1] += ai * b1;                                                          \
      }                                                                                             \
      pa += step;                                                                                   \
      pb += ldb;                                                                                    \
    }                                                                                               \
    if ((mr == MR) & (nr == NV * W)) { /* one test (&): GCC guesses it as for constants */        \
      if (beta == 0) {                                                                              \
        DT__GEMM_UNROLL for (i = 0; i < MR; i++) {                                                  \
          V r0 = va * acc[i][0], r1 = NV == 2 ? va * acc[i][1] : vz;                                \
          memcpy(c + i * ldc, &r0, sizeof r0);                                                      \
          if (NV == 2) memcpy(c + i * ldc + W, &r1, sizeof r1);                                     \
        }                                                                                           \
      } else {                                                                                      \
        DT__GEMM_UNROLL for (i = 0; i < MR; i++) {                                                  \
          V o0, o1 = vz;                                                                            \
          memcpy(&o0, cs + i * lds, sizeof o0);                                                     \
          if (NV == 2) memcpy(&o1, cs + i * lds + W, sizeof o1);                                    \
          o0 = va * acc[i][0] + vb * o0;                                                            \
          if (NV == 2) o1 = va * acc[i][1] + vb * o1;                                               \
          memcpy(c + i * ldc, &o0, sizeof o0);                                                      \
          if (NV == 2) memcpy(c + i * ldc + W, &o1, sizeof o1);                                     \
        }                                                                                           \
      }                                                                                             \
    } else { /* edge tile: through a buffer */                                                      \
      DT__GEMM_UNROLL for (i = 0; i < MR; i++) {                                                    \
        memcpy(tile + i * NV * W, &acc[i][0], sizeof(V));                                           \
        if (NV == 2) memcpy(tile + i * NV * W + W, &acc[i][1], sizeof(V));                          \
      }                                                                                             \
      for (i = 0; i < mr; i++)                                                                      \
        for (j = 0; j < nr; j++) {                                                                  \
          T x = (T)alpha * tile[i * NV * W + j];                                                    \
          c[i * ldc + j] = beta == 0 ? x : x + (T)beta * cs[i * lds + j];                           \
        }                                                                                           \
    }                                                                                               \
  }
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f32x4, float, dt__gemm_f32x4, 4)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f32x8, float, dt__gemm_f32x8, 8)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f32x16, float, dt__gemm_f32x16, 16)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f64x2, double, dt__gemm_f64x2, 2)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f64x4, double, dt__gemm_f64x4, 4)
DT__GEMM_DEFINE_TILE(dt__gemm_tile_f64x8, double, dt__gemm_f64x8, 8)

/* Skinny kernels, no packing of A. A block computes R rows (4 or 1) and NV vectors (2 or 1) of
   W lanes of columns of C = alpha op(A) op(B) + beta C, op(B)'s rows contiguous at b + p * ldb
   (a multiple of NV vectors readable), its accumulators s[r] in registers over all of k: every
   element of op(B) is loaded once per R rows. w: the columns of C written (NV * W, or fewer from
   a zero-padded tail). For a vector times a matrix, little depth, few columns or small problems,
   where packing does not pay. */
#define DT__GEMM_DEFINE_RBLOCK(NAME, T, V, W)                                                       \
  DT__GEMM_INLINE DT__GEMM_FMA_ATTR void NAME(const int R, const int NV, int64_t k, int64_t w, T alpha, const T *a, \
                            int64_t rsa, int64_t csa, const T *b, int64_t ldb, T beta, T *c,        \
                            int64_t ldc) {                                                          \
    const V vz = {0};                                                                               \
    const V va = vz + alpha, vb = vz + beta;                                                        \
    T out[2 * W];                                                                                   \
    V s[4][2];                                                                                      \
    int64_t p, q;                                                                                   \
    int r;                                                                                          \
    DT__GEMM_UNROLL for (r = 0; r < R; r++) s[r][0] = s[r][1] = vz;                                 \
    p = 0;                                                                                          \
    if (NV == 1) /* two depths a step, into s[r][0] and s[r][1]: twice the FMA chains in flight */  \
      for (; p + 2 <= k; p += 2) {                                                                  \
        V b0, b1;                                                                                   \
        memcpy(&b0, b + p * ldb, sizeof b0);                                                        \
        memcpy(&b1, b + (p + 1) * ldb, sizeof b1);                                                  \
        DT__GEMM_UNROLL for (r = 0; r < R; r++) {                                                   \
          const V x0 = a[r * rsa + p * csa] - vz, x1 = a[r * rsa + (p + 1) * csa] - vz;             \
          s[r][0] += x0 * b0;                                                                       \
          s[r][1] += x1 * b1;                                                                       \
        }                                                                                           \
      }                                                                                             \
    for (; p < k; p++) {                                                                            \
      V b0, b1 = vz;                                                                                \
      memcpy(&b0, b + p * ldb, sizeof b0);                                                          \
      if (NV == 2) memcpy(&b1, b + p * ldb + W, sizeof b1);                                         \
      DT__GEMM_UNROLL for (r = 0; r < R; r++) {                                                     \
        const V x = a[r * rsa + p * csa] - vz; /* a splat (x - 0 is x, also for -0) */              \
        s[r][0] += x * b0;                                                                          \
        if (NV == 2) s[r][1] += x * b1;                                                             \
      }                                                                                             \
    }                                                                                               \
    if (NV == 1) {                                                                                  \
      DT__GEMM_UNROLL for (r = 0; r < R; r++) {                                                     \
        s[r][0] += s[r][1];                                                                         \
        s[r][1] = vz;                                                                               \
      }                                                                                             \
    }                                                                                               \
    DT__GEMM_UNROLL for (r = 0; r < R; r++) {                                                       \
      T *cr = c + r * ldc;                                                                          \
      if (w == NV * W) { /* whole vectors */                                                        \
        V o0 = va * s[r][0], o1 = va * s[r][1];                                                     \
        if (beta != 0) {                                                                            \
          V c0, c1 = vz;                                                                            \
          memcpy(&c0, cr, sizeof c0);                                                               \
          if (NV == 2) memcpy(&c1, cr + W, sizeof c1);                                              \
          o0 += vb * c0;                                                                            \
          o1 += vb * c1;                                                                            \
        }                                                                                           \
        memcpy(cr, &o0, sizeof o0);                                                                 \
        if (NV == 2) memcpy(cr + W, &o1, sizeof o1);                                                \
      } else {                                                                                      \
        memcpy(out, &s[r][0], sizeof(V));                                                           \
        memcpy(out + W, &s[r][1], sizeof(V));                                                       \
        if (beta == 0)                                                                              \
          for (q = 0; q < w; q++) cr[q] = alpha * out[q];                                           \
        else                                                                                        \
          for (q = 0; q < w; q++) cr[q] = alpha * out[q] + beta * cr[q];                            \
      }                                                                                             \
    }                                                                                               \
  }
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f32x4, float, dt__gemm_f32x4, 4)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f32x8, float, dt__gemm_f32x8, 8)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f32x16, float, dt__gemm_f32x16, 16)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f64x2, double, dt__gemm_f64x2, 2)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f64x4, double, dt__gemm_f64x4, 4)
DT__GEMM_DEFINE_RBLOCK(dt__gemm_rblock_f64x8, double, dt__gemm_f64x8, 8)

/* One row of C, c = alpha sum_p a[p * csa] op(B)(p, :) + beta c, four rows of op(B) a step
   (for fewer rows of C than a block: op(B) is read row after row, as it lies in memory). */
#define DT__GEMM_DEFINE_AXPY(NAME, T, V, W)                                                         \
  DT__GEMM_INLINE DT__GEMM_FMA_ATTR void NAME(int64_t n, int64_t k, T alpha, const T *a, int64_t csa, const T *b, \
                            int64_t ldb, T beta, T *c) {                                            \
    const V vz = {0};                                                                               \
    int64_t j, p;                                                                                   \
    if (beta == 0)                                                                                  \
      for (j = 0; j < n; j++) c[j] = 0;                                                             \
    else if (beta != 1)                                                                             \
      for (j = 0; j < n; j++) c[j] *= beta;                                                         \
    for (p = 0; p + 4 <= k; p += 4) {                                                               \
      const T x0 = alpha * a[p * csa], x1 = alpha * a[(p + 1) * csa];                               \
      const T x2 = alpha * a[(p + 2) * csa], x3 = alpha * a[(p + 3) * csa];                         \
      const V v0 = x0 - vz, v1 = x1 - vz, v2 = x2 - vz, v3 = x3 - vz;                               \
      const T *b0 = b + p * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;                    \
      for (j = 0; j + W <= n; j += W) {                                                             \
        V cv, y0, y1, y2, y3;                                                                       \
        memcpy(&cv, c + j, sizeof cv);                                                              \
        memcpy(&y0, b0 + j, sizeof y0); memcpy(&y1, b1 + j, sizeof y1);                             \
        memcpy(&y2, b2 + j, sizeof y2); memcpy(&y3, b3 + j, sizeof y3);                             \
        cv += v0 * y0 + v1 * y1 + v2 * y2 + v3 * y3;                                                \
        memcpy(c + j, &cv, sizeof cv);                                                              \
      }                                                                                             \
      for (; j < n; j++) c[j] += x0 * b0[j] + x1 * b1[j] + x2 * b2[j] + x3 * b3[j];                 \
    }                                                                                               \
    for (; p < k; p++) { /* the last k % 4 rows */                                                  \
      const T x0 = alpha * a[p * csa];                                                              \
      const V v0 = x0 - vz;                                                                         \
      const T *b0 = b + p * ldb;                                                                    \
      for (j = 0; j + W <= n; j += W) {                                                             \
        V cv, y0;                                                                                   \
        memcpy(&cv, c + j, sizeof cv);                                                              \
        memcpy(&y0, b0 + j, sizeof y0);                                                             \
        cv += v0 * y0;                                                                              \
        memcpy(c + j, &cv, sizeof cv);                                                              \
      }                                                                                             \
      for (; j < n; j++) c[j] += x0 * b0[j];                                                        \
    }                                                                                               \
  }
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f32x4, float, dt__gemm_f32x4, 4)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f32x8, float, dt__gemm_f32x8, 8)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f32x16, float, dt__gemm_f32x16, 16)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f64x2, double, dt__gemm_f64x2, 2)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f64x4, double, dt__gemm_f64x4, 4)
DT__GEMM_DEFINE_AXPY(dt__gemm_axpy_f64x8, double, dt__gemm_f64x8, 8)

/* The rows kernel (a dt__gemm_rows_fn) over a family's blocks (W lanes a vector): C (m, n) (row
   stride ldc) from op(B) (k, n) at b (row stride rsb; columns up to the last multiple of 2 * W),
   its last n % (2 * W) columns (if any) from tail (row stride ldt, 2 * W readable, zero padded).
   b4x2 is the block of 4 rows and 2 vectors, and so on; axpy does one row. */
typedef void (*dt__gemm_rblock_f32_fn)(int64_t k, int64_t w, float alpha, const float *a, int64_t rsa, int64_t csa,
                                       const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
typedef void (*dt__gemm_rblock_f64_fn)(int64_t k, int64_t w, double alpha, const double *a, int64_t rsa, int64_t csa,
                                       const double *b, int64_t ldb, double beta, double *c, int64_t ldc);
typedef void (*dt__gemm_axpy_f32_fn)(int64_t n, int64_t k, float alpha, const float *a, int64_t csa, const float *b,
                                     int64_t ldb, float beta, float *c);
typedef void (*dt__gemm_axpy_f64_fn)(int64_t n, int64_t k, double alpha, const double *a, int64_t csa,
                                     const double *b, int64_t ldb, double beta, double *c);
#define DT__GEMM_DEFINE_ROWS(NAME, T, RBLOCK_FN, AXPY_FN)                                           \
  DT__GEMM_INLINE void NAME(const int W, RBLOCK_FN b4x2, RBLOCK_FN b4x1, RBLOCK_FN b1x2,            \
                            RBLOCK_FN b1x1, AXPY_FN axpy, int64_t m, int64_t n, int64_t k,          \
                            double alpha_, const void *a_, int64_t rsa, int64_t csa, const void *b_, \
                            int64_t rsb, const void *tail_, int64_t ldt, double beta_, void *c_,    \
                            int64_t ldc) {                                                          \
    const T *a = (const T *)a_, *b = (const T *)b_, *tail = (const T *)tail_;                       \
    T *c = (T *)c_;                                                                                 \
    const T alpha = (T)alpha_, beta = (T)beta_;                                                     \
    const int64_t jt = n / (2 * W) * (2 * W), tw = n - jt;                                          \
    int64_t i, j;                                                                                   \
    if (m < 4) { /* a row or three: each row of C a sum of rows of op(B), read in order */          \
      for (i = 0; i < m; i++) axpy(n, k, alpha, a + i * rsa, csa, b, rsb, beta, c + i * ldc);       \
      return;                                                                                       \
    }                                                                                               \
    for (i = 0; i + 4 <= m; i += 4) {                                                               \
      for (j = 0; j < jt; j += 2 * W)                                                               \
        b4x2(k, 2 * W, alpha, a + i * rsa, rsa, csa, b + j, rsb, beta, c + i * ldc + j, ldc);       \
      if (tw > W) b4x2(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
      else if (tw) b4x1(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
    }                                                                                               \
    for (; i < m; i++) {                                                                            \
      for (j = 0; j < jt; j += 2 * W)                                                               \
        b1x2(k, 2 * W, alpha, a + i * rsa, rsa, csa, b + j, rsb, beta, c + i * ldc + j, ldc);       \
      if (tw > W) b1x2(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
      else if (tw) b1x1(k, tw, alpha, a + i * rsa, rsa, csa, tail, ldt, beta, c + i * ldc + jt, ldc); \
    }                                                                                               \
  }
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_body_f32, float, dt__gemm_rblock_f32_fn, dt__gemm_axpy_f32_fn)
DT__GEMM_DEFINE_ROWS(dt__gemm_rows_body_f64, double, dt__gemm_rblock_f64_fn, dt__gemm_axpy_f64_fn)
#endif /* DT__GEMM_VEC */

/* ---- src/cpu/gemm/kernels_isa.c ---- */
#if DT__GEMM_VEC
/* The kernels of each family (DT__GEMM_ISA_*), under the names dt__gemm_plan_get picks them by:
   each a function with its family's target that runs a body of kernels_vec.c at a constant shape.
   The bodies are inlined, so every kernel is compiled for its own target. */
#define DT__GEMM_AVX2 __attribute__((target("avx2,fma")))
#define DT__GEMM_AVX512 __attribute__((target("avx512f")))

/* NAME: a dt__gemm_kern_fn with target ATTR, TILE (on W lanes of T) for MR rows, NV vectors, A's
   panel AP (0: A in place); see DT__GEMM_DEFINE_TILE. */
#define DT__GEMM_KERNEL(NAME, ATTR, T, W, TILE, MR, NV, AP)                                         \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t kc, const void *pa, int64_t lda, const void *pb,  \
                                          int64_t ldb, void *c, int64_t ldc, const void *cs,        \
                                          int64_t lds, int mr, int nr, double alpha, double beta) { \
    T tile[(MR) * (NV) * (W)];                                                                      \
    TILE(MR, NV, AP, tile, kc, pa, lda, pb, ldb, c, ldc, cs, lds, mr, nr, alpha, beta);             \
  }
/* NAME: the skinny block BLOCK of R rows by NV vectors, with target ATTR; see DT__GEMM_DEFINE_RBLOCK. */
#define DT__GEMM_RBLOCK(NAME, ATTR, T, BLOCK, R, NV)                                                \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t k, int64_t w, T alpha, const T *a, int64_t rsa,   \
                                          int64_t csa, const T *b, int64_t ldb, T beta, T *c,       \
                                          int64_t ldc) {                                            \
    BLOCK(R, NV, k, w, alpha, a, rsa, csa, b, ldb, beta, c, ldc);                                   \
  }
/* NAME: AXPY with target ATTR; see DT__GEMM_DEFINE_AXPY. */
#define DT__GEMM_AXPY(NAME, ATTR, T, AXPY)                                                          \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t n, int64_t k, T alpha, const T *a, int64_t csa,   \
                                          const T *b, int64_t ldb, T beta, T *c) {                  \
    AXPY(n, k, alpha, a, csa, b, ldb, beta, c);                                                     \
  }
/* NAME: a dt__gemm_rows_fn, ROWS over the blocks B4X2..B1X1 and AXPY of W lanes (with their
   family's target; this one needs none); see DT__GEMM_DEFINE_ROWS. */
#define DT__GEMM_ROWS(NAME, ROWS, W, B4X2, B4X1, B1X2, B1X1, AXPY)                                  \
  static void NAME(int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t rsa,       \
                   int64_t csa, const void *b, int64_t rsb, const void *tail, int64_t ldt,          \
                   double beta, void *c, int64_t ldc) {                                             \
    ROWS(W, B4X2, B4X1, B1X2, B1X1, AXPY, m, n, k, alpha, a, rsa, csa, b, rsb, tail, ldt, beta, c, ldc); \
  }

/* Baseline: the widest vectors the compiler flags allow: 12x32 / 12x16 with AVX-512 (-march=...),
   6x16 / 6x8 with AVX, else 16-byte vectors (SSE2 on x86-64, NEON on arm64): 6x8 F32, 6x4 F64.
   Two vectors of lanes per row of the tile; F64 has half the lanes of F32. */
#if defined(__AVX512F__)
#define DT__GEMM_C_MR 12
#define DT__GEMM_C_LANES_F32 16
#define DT__GEMM_C_TILE_F32 dt__gemm_tile_f32x16
#define DT__GEMM_C_TILE_F64 dt__gemm_tile_f64x8
#elif defined(__AVX__)
#define DT__GEMM_C_MR 6
#define DT__GEMM_C_LANES_F32 8
#define DT__GEMM_C_TILE_F32 dt__gemm_tile_f32x8
#define DT__GEMM_C_TILE_F64 dt__gemm_tile_f64x4
#else
#define DT__GEMM_C_MR 6
#define DT__GEMM_C_LANES_F32 4
#define DT__GEMM_C_TILE_F32 dt__gemm_tile_f32x4
#define DT__GEMM_C_TILE_F64 dt__gemm_tile_f64x2
#endif
#define DT__GEMM_C_LANES_F64 (DT__GEMM_C_LANES_F32 / 2)
#define DT__GEMM_C_NR_F32 (2 * DT__GEMM_C_LANES_F32)
#define DT__GEMM_C_NR_F64 (2 * DT__GEMM_C_LANES_F64)
/* the full tile, the same reading A in place, the first 4 rows of a panel, half the columns
   (packed, in place); with 12 rows, also the first 8 rows */
DT__GEMM_KERNEL(dt__gemm_kern_f32_c, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, DT__GEMM_C_MR, 2, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_d, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, DT__GEMM_C_MR, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_e4, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, 4, 2, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_h, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, DT__GEMM_C_MR, 1, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_hd, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, DT__GEMM_C_MR, 1, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, DT__GEMM_C_MR, 2, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_d, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, DT__GEMM_C_MR, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_e4, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, 4, 2, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_h, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, DT__GEMM_C_MR, 1, DT__GEMM_C_MR)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_hd, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, DT__GEMM_C_MR, 1, 0)
#if DT__GEMM_C_MR == 12
DT__GEMM_KERNEL(dt__gemm_kern_f32_c_e8, , float, DT__GEMM_C_LANES_F32, DT__GEMM_C_TILE_F32, 8, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_c_e8, , double, DT__GEMM_C_LANES_F64, DT__GEMM_C_TILE_F64, 8, 2, 12)
#endif
/* the skinny kernels on 16-byte vectors */
DT__GEMM_RBLOCK(dt__gemm_rows_f32_c_4x2, , float, dt__gemm_rblock_f32x4, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_c_4x1, , float, dt__gemm_rblock_f32x4, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_c_1x2, , float, dt__gemm_rblock_f32x4, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_c_1x1, , float, dt__gemm_rblock_f32x4, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f32_c_axpy, , float, dt__gemm_axpy_f32x4)
DT__GEMM_ROWS(dt__gemm_rows_f32_c, dt__gemm_rows_body_f32, 4, dt__gemm_rows_f32_c_4x2, dt__gemm_rows_f32_c_4x1,
              dt__gemm_rows_f32_c_1x2, dt__gemm_rows_f32_c_1x1, dt__gemm_rows_f32_c_axpy)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_c_4x2, , double, dt__gemm_rblock_f64x2, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_c_4x1, , double, dt__gemm_rblock_f64x2, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_c_1x2, , double, dt__gemm_rblock_f64x2, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_c_1x1, , double, dt__gemm_rblock_f64x2, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f64_c_axpy, , double, dt__gemm_axpy_f64x2)
DT__GEMM_ROWS(dt__gemm_rows_f64_c, dt__gemm_rows_body_f64, 2, dt__gemm_rows_f64_c_4x2, dt__gemm_rows_f64_c_4x1,
              dt__gemm_rows_f64_c_1x2, dt__gemm_rows_f64_c_1x1, dt__gemm_rows_f64_c_axpy)

#if DT__GEMM_X86
/* AVX2+FMA: 16 ymm registers; 6x16 F32, 6x8 F64 (12 accumulators). */
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 6, 2, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2_d, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 6, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2_e4, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 4, 2, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2_h, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 6, 1, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx2_hd, DT__GEMM_AVX2, float, 8, dt__gemm_tile_f32x8, 6, 1, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 6, 2, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2_d, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 6, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2_e4, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 4, 2, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2_h, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 6, 1, 6)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx2_hd, DT__GEMM_AVX2, double, 4, dt__gemm_tile_f64x4, 6, 1, 0)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx2_4x2, DT__GEMM_AVX2, float, dt__gemm_rblock_f32x8, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx2_4x1, DT__GEMM_AVX2, float, dt__gemm_rblock_f32x8, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx2_1x2, DT__GEMM_AVX2, float, dt__gemm_rblock_f32x8, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx2_1x1, DT__GEMM_AVX2, float, dt__gemm_rblock_f32x8, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f32_avx2_axpy, DT__GEMM_AVX2, float, dt__gemm_axpy_f32x8)
DT__GEMM_ROWS(dt__gemm_rows_f32_avx2, dt__gemm_rows_body_f32, 8, dt__gemm_rows_f32_avx2_4x2, dt__gemm_rows_f32_avx2_4x1,
              dt__gemm_rows_f32_avx2_1x2, dt__gemm_rows_f32_avx2_1x1, dt__gemm_rows_f32_avx2_axpy)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx2_4x2, DT__GEMM_AVX2, double, dt__gemm_rblock_f64x4, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx2_4x1, DT__GEMM_AVX2, double, dt__gemm_rblock_f64x4, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx2_1x2, DT__GEMM_AVX2, double, dt__gemm_rblock_f64x4, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx2_1x1, DT__GEMM_AVX2, double, dt__gemm_rblock_f64x4, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f64_avx2_axpy, DT__GEMM_AVX2, double, dt__gemm_axpy_f64x4)
DT__GEMM_ROWS(dt__gemm_rows_f64_avx2, dt__gemm_rows_body_f64, 4, dt__gemm_rows_f64_avx2_4x2, dt__gemm_rows_f64_avx2_4x1,
              dt__gemm_rows_f64_avx2_1x2, dt__gemm_rows_f64_avx2_1x1, dt__gemm_rows_f64_avx2_axpy)

/* AVX-512: 32 zmm registers; 12x32 F32, 12x16 F64 (24 accumulators), and the edge kernels 4x32,
   8x32 and 12x16 F32 (4x16, 8x16, 12x8 F64): a last panel of a few rows or half the columns costs
   what it computes, not a whole tile. */
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 12, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_d, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 12, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_e4, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 4, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_e8, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 8, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_h, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 12, 1, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f32_avx512_hd, DT__GEMM_AVX512, float, 16, dt__gemm_tile_f32x16, 12, 1, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 12, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_d, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 12, 2, 0)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_e4, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 4, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_e8, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 8, 2, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_h, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 12, 1, 12)
DT__GEMM_KERNEL(dt__gemm_kern_f64_avx512_hd, DT__GEMM_AVX512, double, 8, dt__gemm_tile_f64x8, 12, 1, 0)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx512_4x2, DT__GEMM_AVX512, float, dt__gemm_rblock_f32x16, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx512_4x1, DT__GEMM_AVX512, float, dt__gemm_rblock_f32x16, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx512_1x2, DT__GEMM_AVX512, float, dt__gemm_rblock_f32x16, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f32_avx512_1x1, DT__GEMM_AVX512, float, dt__gemm_rblock_f32x16, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f32_avx512_axpy, DT__GEMM_AVX512, float, dt__gemm_axpy_f32x16)
DT__GEMM_ROWS(dt__gemm_rows_f32_avx512, dt__gemm_rows_body_f32, 16, dt__gemm_rows_f32_avx512_4x2,
              dt__gemm_rows_f32_avx512_4x1, dt__gemm_rows_f32_avx512_1x2, dt__gemm_rows_f32_avx512_1x1,
              dt__gemm_rows_f32_avx512_axpy)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx512_4x2, DT__GEMM_AVX512, double, dt__gemm_rblock_f64x8, 4, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx512_4x1, DT__GEMM_AVX512, double, dt__gemm_rblock_f64x8, 4, 1)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx512_1x2, DT__GEMM_AVX512, double, dt__gemm_rblock_f64x8, 1, 2)
DT__GEMM_RBLOCK(dt__gemm_rows_f64_avx512_1x1, DT__GEMM_AVX512, double, dt__gemm_rblock_f64x8, 1, 1)
DT__GEMM_AXPY(dt__gemm_rows_f64_avx512_axpy, DT__GEMM_AVX512, double, dt__gemm_axpy_f64x8)
DT__GEMM_ROWS(dt__gemm_rows_f64_avx512, dt__gemm_rows_body_f64, 8, dt__gemm_rows_f64_avx512_4x2,
              dt__gemm_rows_f64_avx512_4x1, dt__gemm_rows_f64_avx512_1x2, dt__gemm_rows_f64_avx512_1x1,
              dt__gemm_rows_f64_avx512_axpy)
#endif

#else /* !DT__GEMM_VEC: plain C, 4x4 */

#define DT__GEMM_DEFINE_KERNEL_C(NAME, T)                                                           \
  static void NAME(int64_t kc, const void *pa_, int64_t lda, const void *pb_, int64_t ldb, void *c_, \
                   int64_t ldc, const void *cs_, int64_t lds, int mr, int nr, double alpha,         \
                   double beta) {                                                                   \
    const T *pa = (const T *)pa_, *pb = (const T *)pb_, *cs = (const T *)cs_;                       \
    T *c = (T *)c_;                                                                                 \
    T acc[16] = {0};                                                                                \
    int64_t p;                                                                                      \
    int i, j;                                                                                       \
    (void)lda;                                                                                      \
    for (p = 0; p < kc; p++, pa += 4, pb += ldb)                                                    \
      for (i = 0; i < 4; i++)                                                                       \
        for (j = 0; j < 4; j++) acc[i * 4 + j] += pa[i] * pb[j];                                    \
    for (i = 0; i < mr; i++)                                                                        \
      for (j = 0; j < nr; j++) {                                                                    \
        T v = (T)alpha * acc[i * 4 + j];                                                            \
        c[i * ldc + j] = beta == 0 ? v : v + (T)beta * cs[i * lds + j];                             \
      }                                                                                             \
  }
DT__GEMM_DEFINE_KERNEL_C(dt__gemm_kern_f32_c, float)
DT__GEMM_DEFINE_KERNEL_C(dt__gemm_kern_f64_c, double)
#define DT__GEMM_C_MR 4
#define DT__GEMM_C_NR_F32 4
#define DT__GEMM_C_NR_F64 4
#endif

static void dt__gemm_plan_set(dt__gemm_plan *pl, dt__gemm_kern_fn kern, dt__gemm_kern_fn kernd, dt__gemm_rows_fn rows,
                              int rw, int mr, int nr, int64_t kc, int64_t nc) {
  pl->kern = kern; pl->kernd = kernd; pl->rows = rows; pl->rw = rw;
  pl->kern4 = pl->kern8 = pl->kernh = pl->kernhd = NULL;
  pl->mr = mr; pl->nr = nr; pl->kc = kc; pl->nc = nc;
}

/* The plan for kernel family isa (DT__GEMM_ISA_*) and F64 when dbl; 0 when this CPU or build lacks it. */
static int dt__gemm_plan_get(int isa, int dbl, dt__gemm_plan *pl) {
  pl->pack = dbl ? dt__gemm_pack_f64 : dt__gemm_pack_f32;
  pl->es = dbl ? sizeof(double) : sizeof(float);
  switch (isa) {
    case DT__GEMM_ISA_C:
#if DT__GEMM_VEC
      dt__gemm_plan_set(pl, dbl ? dt__gemm_kern_f64_c : dt__gemm_kern_f32_c, dbl ? dt__gemm_kern_f64_c_d : dt__gemm_kern_f32_c_d,
                        dbl ? dt__gemm_rows_f64_c : dt__gemm_rows_f32_c, dbl ? 4 : 8,
#else
      dt__gemm_plan_set(pl, dbl ? dt__gemm_kern_f64_c : dt__gemm_kern_f32_c, NULL, NULL, 0,
#endif
                        DT__GEMM_C_MR, dbl ? DT__GEMM_C_NR_F64 : DT__GEMM_C_NR_F32, 256,
                        DT__GEMM_C_MR == 12 ? (dbl ? 192 : 256) : dbl ? 64 : 128);
#if DT__GEMM_VEC
      pl->kern4 = dbl ? dt__gemm_kern_f64_c_e4 : dt__gemm_kern_f32_c_e4;
      pl->kernh = dbl ? dt__gemm_kern_f64_c_h : dt__gemm_kern_f32_c_h;
      pl->kernhd = dbl ? dt__gemm_kern_f64_c_hd : dt__gemm_kern_f32_c_hd;
#if DT__GEMM_C_MR == 12
      pl->kern8 = dbl ? dt__gemm_kern_f64_c_e8 : dt__gemm_kern_f32_c_e8;
#endif
#endif
      return 1;
#if DT__GEMM_X86
    case DT__GEMM_ISA_AVX2: /* L2 of 256 KiB and up: B's panels 128 KiB */
      if (!dt__x86_has_avx2_fma()) return 0;
      dt__gemm_plan_set(pl, dbl ? dt__gemm_kern_f64_avx2 : dt__gemm_kern_f32_avx2,
                        dbl ? dt__gemm_kern_f64_avx2_d : dt__gemm_kern_f32_avx2_d,
                        dbl ? dt__gemm_rows_f64_avx2 : dt__gemm_rows_f32_avx2, dbl ? 8 : 16, 6, dbl ? 8 : 16, 256,
                        dbl ? 64 : 128);
      pl->kern4 = dbl ? dt__gemm_kern_f64_avx2_e4 : dt__gemm_kern_f32_avx2_e4;
      pl->kernh = dbl ? dt__gemm_kern_f64_avx2_h : dt__gemm_kern_f32_avx2_h;
      pl->kernhd = dbl ? dt__gemm_kern_f64_avx2_hd : dt__gemm_kern_f32_avx2_hd;
      return 1;
    case DT__GEMM_ISA_AVX512: /* L2 of 1 MiB and up: B's panels 384 KiB; A's micro-panel 18 / 24 KiB */
      if (!dt__x86_has_avx512f()) return 0;
      dt__gemm_plan_set(pl, dbl ? dt__gemm_kern_f64_avx512 : dt__gemm_kern_f32_avx512,
                        dbl ? dt__gemm_kern_f64_avx512_d : dt__gemm_kern_f32_avx512_d,
                        dbl ? dt__gemm_rows_f64_avx512 : dt__gemm_rows_f32_avx512, dbl ? 16 : 32, 12, dbl ? 16 : 32,
                        dbl ? 256 : 384, dbl ? 192 : 256);
      /* 256 rows are 21 panels of 12 and 4 rows; 784 columns 24 panels of 32 and 16 */
      pl->kern4 = dbl ? dt__gemm_kern_f64_avx512_e4 : dt__gemm_kern_f32_avx512_e4;
      pl->kern8 = dbl ? dt__gemm_kern_f64_avx512_e8 : dt__gemm_kern_f32_avx512_e8;
      pl->kernh = dbl ? dt__gemm_kern_f64_avx512_h : dt__gemm_kern_f32_avx512_h;
      pl->kernhd = dbl ? dt__gemm_kern_f64_avx512_hd : dt__gemm_kern_f32_avx512_hd;
      return 1;
#endif
    default: return 0;
  }
}

/* ---- src/cpu/gemm/simple.c ---- */
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

/* ---- src/cpu/gemm/dot.c ---- */
/* F32 C = alpha A B^T + beta C for few rows and columns and a long depth (A: (m, k), B: (n, k),
   both with k contiguous; a convolution's weight gradient, gy (oc, images oh ow) against col
   (c kh kw, images oh ow)): every entry of C is a dot product of two contiguous rows, so nothing
   is packed. The depth is cut in chunks of DT__GEMM_DOT_KC, whose rows of A and B stay in the
   L2 cache while every dot product of the chunk reads them; each chunk's sums go to their own
   slice of a scratch, on the pool's threads, and the slices are added in order afterwards: the
   same bits for any number of threads. */
#ifndef DT__GEMM_DOT_KC
#define DT__GEMM_DOT_KC 1024
#endif

#if DT__GEMM_VEC
typedef void (*dt__gemm_dot_fn)(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb, float *out, int64_t ldo);

/* out[r ldo + s] = sum over p < kc of a[r lda + p] b[s ldb + p], for R rows of A by S of B (R, S
   at most 4): R S vector accumulators, their lanes added in order, then the last kc % W terms */
#define DT__GEMM_DEFINE_DOT(NAME, V, W)                                                             \
  DT__GEMM_INLINE DT__GEMM_FMA_ATTR void NAME(const int R, const int S, int64_t kc, const float *a, int64_t lda, \
                                              const float *b, int64_t ldb, float *out, int64_t ldo) { \
    const V vz = {0};                                                                               \
    V acc[4][4] = {{vz}};                                                                           \
    int64_t p = 0, q;                                                                               \
    int r, s, l;                                                                                    \
    for (; p + W <= kc; p += W) {                                                                   \
      V av[4], bv[4];                                                                               \
      DT__GEMM_UNROLL for (r = 0; r < R; r++) memcpy(&av[r], a + r * lda + p, sizeof(V));           \
      DT__GEMM_UNROLL for (s = 0; s < S; s++) memcpy(&bv[s], b + s * ldb + p, sizeof(V));           \
      DT__GEMM_UNROLL for (r = 0; r < R; r++)                                                       \
        DT__GEMM_UNROLL for (s = 0; s < S; s++) acc[r][s] += av[r] * bv[s];                         \
    }                                                                                               \
    for (r = 0; r < R; r++)                                                                         \
      for (s = 0; s < S; s++) {                                                                     \
        float lanes[W], t = 0;                                                                      \
        memcpy(lanes, &acc[r][s], sizeof lanes);                                                    \
        for (l = 0; l < W; l++) t += lanes[l];                                                      \
        for (q = p; q < kc; q++) t += a[r * lda + q] * b[s * ldb + q];                              \
        out[r * ldo + s] = t;                                                                       \
      }                                                                                             \
  }
/* NAME: the body at R rows by S columns, with target ATTR */
#define DT__GEMM_DOT(NAME, ATTR, BODY, R, S)                                                        \
  ATTR DT__GEMM_FMA_ATTR static void NAME(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb, \
                                          float *out, int64_t ldo) {                                \
    BODY(R, S, kc, a, lda, b, ldb, out, ldo);                                                       \
  }

/* a family's dot blocks: 4 x 4 (3 x 4 on 16-byte vectors, whose 16 registers hold 12
   accumulators and the 7 vectors they read only at that shape), and the edges 1 x S, R x 1, 1 x 1 */
typedef struct dt__gemm_dot_set {
  int r, s;
  dt__gemm_dot_fn full, row, col, one;
} dt__gemm_dot_set;

#if defined(__AVX512F__)
#define DT__GEMM_DOT_C_V dt__gemm_f32x16
#define DT__GEMM_DOT_C_W 16
#define DT__GEMM_DOT_C_R 4
#elif defined(__AVX__)
#define DT__GEMM_DOT_C_V dt__gemm_f32x8
#define DT__GEMM_DOT_C_W 8
#define DT__GEMM_DOT_C_R 3
#else
#define DT__GEMM_DOT_C_V dt__gemm_f32x4
#define DT__GEMM_DOT_C_W 4
#define DT__GEMM_DOT_C_R 3
#endif
DT__GEMM_DEFINE_DOT(dt__gemm_dot_body_c, DT__GEMM_DOT_C_V, DT__GEMM_DOT_C_W)
DT__GEMM_DOT(dt__gemm_dot_c_full, , dt__gemm_dot_body_c, DT__GEMM_DOT_C_R, 4)
DT__GEMM_DOT(dt__gemm_dot_c_row, , dt__gemm_dot_body_c, 1, 4)
DT__GEMM_DOT(dt__gemm_dot_c_col, , dt__gemm_dot_body_c, DT__GEMM_DOT_C_R, 1)
DT__GEMM_DOT(dt__gemm_dot_c_one, , dt__gemm_dot_body_c, 1, 1)
static const dt__gemm_dot_set dt__gemm_dot_c = {DT__GEMM_DOT_C_R, 4, dt__gemm_dot_c_full, dt__gemm_dot_c_row,
                                                dt__gemm_dot_c_col, dt__gemm_dot_c_one};
#if DT__GEMM_X86
DT__GEMM_DEFINE_DOT(dt__gemm_dot_body_8, dt__gemm_f32x8, 8)
DT__GEMM_DOT(dt__gemm_dot_avx2_full, DT__GEMM_AVX2, dt__gemm_dot_body_8, 3, 4)
DT__GEMM_DOT(dt__gemm_dot_avx2_row, DT__GEMM_AVX2, dt__gemm_dot_body_8, 1, 4)
DT__GEMM_DOT(dt__gemm_dot_avx2_col, DT__GEMM_AVX2, dt__gemm_dot_body_8, 3, 1)
DT__GEMM_DOT(dt__gemm_dot_avx2_one, DT__GEMM_AVX2, dt__gemm_dot_body_8, 1, 1)
static const dt__gemm_dot_set dt__gemm_dot_avx2 = {3, 4, dt__gemm_dot_avx2_full, dt__gemm_dot_avx2_row, dt__gemm_dot_avx2_col,
                                                   dt__gemm_dot_avx2_one};
DT__GEMM_DEFINE_DOT(dt__gemm_dot_body_16, dt__gemm_f32x16, 16)
DT__GEMM_DOT(dt__gemm_dot_avx512_full, DT__GEMM_AVX512, dt__gemm_dot_body_16, 4, 4)
DT__GEMM_DOT(dt__gemm_dot_avx512_row, DT__GEMM_AVX512, dt__gemm_dot_body_16, 1, 4)
DT__GEMM_DOT(dt__gemm_dot_avx512_col, DT__GEMM_AVX512, dt__gemm_dot_body_16, 4, 1)
DT__GEMM_DOT(dt__gemm_dot_avx512_one, DT__GEMM_AVX512, dt__gemm_dot_body_16, 1, 1)
static const dt__gemm_dot_set dt__gemm_dot_avx512 = {4, 4, dt__gemm_dot_avx512_full, dt__gemm_dot_avx512_row,
                                                     dt__gemm_dot_avx512_col, dt__gemm_dot_avx512_one};
#endif

/* the set of the widest vectors this CPU has (the gemm plan's choice) */
static const dt__gemm_dot_set *dt__gemm_dot_best(void) {
#if DT__GEMM_X86
  if (dt__x86_has_avx512f()) return &dt__gemm_dot_avx512;
  if (dt__x86_has_avx2_fma()) return &dt__gemm_dot_avx2;
#endif
  return &dt__gemm_dot_c;
}

typedef struct dt__gemm_dot_job {
  const dt__gemm_dot_set *set;
  int64_t m, n, k;
  const float *a, *b;
  float *part; /* (chunks, m, n) */
} dt__gemm_dot_job;

/* chunks [lo, hi): each one's (m, n) sums over its depth */
static void dt__gemm_dot_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gemm_dot_job *j = (const dt__gemm_dot_job *)ctx;
  const dt__gemm_dot_set *ds = j->set;
  int64_t c, i, jj;
  for (c = lo; c < hi; c++) {
    const int64_t p0 = c * DT__GEMM_DOT_KC, kc = j->k - p0 < DT__GEMM_DOT_KC ? j->k - p0 : DT__GEMM_DOT_KC;
    float *out = j->part + c * j->m * j->n;
    for (i = 0; i < j->m;) {
      const int rows = j->m - i >= ds->r ? ds->r : 1;
      const float *a = j->a + i * j->k + p0;
      for (jj = 0; jj < j->n;) {
        const int cols = j->n - jj >= ds->s ? ds->s : 1;
        const float *b = j->b + jj * j->k + p0;
        if (rows > 1) (cols > 1 ? ds->full : ds->col)(kc, a, j->k, b, j->k, out + i * j->n + jj, j->n);
        else (cols > 1 ? ds->row : ds->one)(kc, a, j->k, b, j->k, out + i * j->n + jj, j->n);
        jj += cols;
      }
      i += rows;
    }
  }
}

/* Where it pays: C small (m n at most 4096), the depth two chunks at least and four times its
   rows and its columns; the chunks' sums at most 16 MiB of scratch. */
static int dt__gemm_dot_fits(int64_t m, int64_t n, int64_t k) {
  return m * n <= 4096 && k >= 2048 && k >= 4 * m && k >= 4 * n && (k / DT__GEMM_DOT_KC + 1) * m * n <= ((int64_t)1 << 22);
}

/* The products dt__gemm_dot takes: F32 A B^T that fits (with a bias, C starts from it) */
static int dt__gemm_dot_takes(int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k) {
  return !dbl && !ta && tb && dt__gemm_dot_fits(m, n, k);
}

/* C (m, n) = alpha A (m, k) B (n, k)^T + beta C, F32, rows contiguous, with the blocks of ds
   (NULL: the best this CPU has). Returns 0, having done nothing, where it does not fit or the
   scratch cannot be had. */
static int dt__gemm_dot(const dt__gemm_dot_set *ds, int64_t m, int64_t n, int64_t k, float alpha, const float *a, const float *b,
                        float beta, float *c) {
  dt__gemm_dot_job j;
  const int64_t nch = (k + DT__GEMM_DOT_KC - 1) / DT__GEMM_DOT_KC;
  const size_t sz = sizeof(float) * (size_t)(nch * m * n);
  int64_t i, ch;
  if (!dt__gemm_dot_fits(m, n, k) || !(j.part = (float *)DT__GEMM_MALLOC(sz))) return 0;
  j.set = ds ? ds : dt__gemm_dot_best();
  j.m = m; j.n = n; j.k = k; j.a = a; j.b = b;
  dt__par_for(nch, 1, dt__gemm_dot_task, &j);
  for (i = 0; i < m * n; i++) {
    float t = j.part[i];
    for (ch = 1; ch < nch; ch++) t += j.part[ch * m * n + i];
    c[i] = beta == 0 ? alpha * t : alpha * t + beta * c[i];
  }
  DT__GEMM_FREE(j.part, sz);
  return 1;
}
#else
static int dt__gemm_dot_takes(int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k) {
  (void)dbl; (void)ta; (void)tb; (void)m; (void)n; (void)k;
  return 0;
}
#endif

/* ---- src/cpu/gemm/driver.c ---- */
/* Largest problem (m * n * k) that takes the simple loop: packing does not pay below it. */
#ifndef DT__GEMM_SMALL
#define DT__GEMM_SMALL 1024
#endif
/* Work (m * n * k) per thread, at least: less does not pay for waking a thread. */
#ifndef DT__GEMM_PAR_MIN
#define DT__GEMM_PAR_MIN (128 * 128 * 64)
#endif

static int64_t dt__gemm_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t dt__gemm_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t dt__gemm_roundup(int64_t a, int64_t r) { return (a + r - 1) / r * r; }

#ifndef DT__GEMM_ADIRECT
/* reading A in place (dt__gemm_slab's adirect): 0 never, 1 only for the column split, 2 wherever
   each thread has its own rows (the column split and row tasks) */
#define DT__GEMM_ADIRECT 2
#endif
/* Most micro-panels of A in a slab for which op(B)'s rows, when contiguous, are read in place
   rather than packed: each packed element would serve at most this many micro-kernel calls (8:
   96 rows of AVX-512 F32). Measured on Zen 5 with wide B (n 8192, k 1152): in place was 10-40%
   faster for 32 to 192 rows, and no slower for square products up to 2048. */
#ifndef DT__GEMM_BDIRECT_PANELS
#define DT__GEMM_BDIRECT_PANELS 8
#endif
/* Most threads that pack their own rows of A (dt__gemm_blocked). */
#define DT__GEMM_PRIV_MAX 64
/* Largest packed copy of A (bytes) kept at once; bigger A is done in slabs of rows. */
#ifndef DT__GEMM_ABYTES
#define DT__GEMM_ABYTES ((size_t)16 << 20)
#endif

/* One task of a slab of dt__gemm_blocked: the rows r0..r1 of the slab, the columns jc..jc+nc of C. */
typedef struct dt__gemm_slab {
  const dt__gemm_plan *pl;
  int64_t k, n, kc, ncol, ncw, rpt, sm, smp, s0, rsb, csb;
  const char *abuf; /* A's slab packed (see dt__gemm_apack), or NULL: each thread packs its rows in apriv */
  double alpha, beta;
  const void *b;
  void *c;
  char *bbuf;  /* thread w's B buffer: bbuf + w * bsz */
  size_t bsz;
  const char *a;  /* with apriv: row s0 of op(A), element (i, p) at a[i * rsa + p * csa] */
  int64_t rsa, csa;
  char *apriv;    /* thread w's A buffer: apriv + w * asz, holding the rows of row task aown[w] */
  size_t asz;
  int64_t *aown;
  int bdirect;    /* op(B)'s rows contiguous (csb 1): its whole micro-panels are read in place, not packed */
  int adirect;    /* with apriv, op(A)'s rows contiguous (csa 1): its whole micro-panels are read in place by
                     the plan's kernd; only a last panel of fewer than mr rows is packed */
  const char *bias; /* or NULL: C's rows start as this row (n), not as beta * C */
  char *asum;       /* or NULL: the sums of op(A)'s rows go to asum[s0 + i] (see dt__gemm_opts) */
} dt__gemm_slab;

/* out[i - r0] = the sum of op(A)'s row i over its k depths, for rows r0..r1 of an op(A) whose
   rows are contiguous (rsa 1, as g^T's are): column sums of the (k, csa) matrix at a, taken as
   dt_sum_dim takes them (dt__red_cols: in double, in order), so with the same bits. */
static void dt__gemm_row_sums(size_t es, const char *a, int64_t csa, int64_t r0, int64_t r1, int64_t k, char *out) {
  double acc[DT__COL_TILE];
  int64_t i0, i, cnt;
  for (i0 = r0; i0 < r1; i0 += cnt) {
    cnt = r1 - i0 < DT__COL_TILE ? r1 - i0 : DT__COL_TILE;
    if (es == sizeof(float)) dt__red_cols_f32(0, (const float *)a + i0, k, csa, cnt, acc);
    else dt__red_cols_f64(0, (const double *)a + i0, k, csa, cnt, acc);
    for (i = 0; i < cnt; i++) {
      if (es == sizeof(float)) ((float *)out)[i0 - r0 + i] = (float)acc[i];
      else ((double *)out)[i0 - r0 + i] = acc[i];
    }
  }
}

/* Task t of a slab, on the pool's thread w (the caller is 0). */
static void dt__gemm_task(const dt__gemm_slab *g, int64_t t, int w) {
  const dt__gemm_plan *pl = g->pl;
  const size_t es = pl->es;
  const int mr = pl->mr, nr = pl->nr;
  const int64_t r0 = t / g->ncol * g->rpt, r1 = dt__gemm_min(g->sm, r0 + g->rpt); /* rows of the slab */
  const int64_t jc = t % g->ncol * g->ncw, nc = dt__gemm_min(g->ncw, g->n - jc); /* columns of C */
  char *bbuf = g->bbuf + (size_t)w * g->bsz;
  const char *abuf = g->abuf;
  int64_t p0, jr, ir, astr = g->smp, arow = 0; /* A's depth block p0 at abuf + astr * p0, row ir's panel at (ir - arow) * kc */
  if (!abuf) { /* this thread's copy of A's rows r0..r1, packed when its last task had other rows */
    char *ab = g->apriv + (size_t)w * g->asz;
    astr = dt__gemm_roundup(r1 - r0, mr); arow = r0;
    if (g->aown[w] != t / g->ncol) {
      const int64_t re = g->adirect ? r0 + (r1 - r0) / mr * mr : r0; /* the rows packed: re..r1 */
      if (re < r1)
        for (p0 = 0; p0 < g->k; p0 += g->kc)
          pl->pack(r1 - re, dt__gemm_min(g->kc, g->k - p0), g->a + (size_t)(re * g->rsa + p0 * g->csa) * es, g->rsa,
                   g->csa, mr, ab + (size_t)(astr * p0 + (re - r0) * dt__gemm_min(g->kc, g->k - p0)) * es);
      g->aown[w] = t / g->ncol;
    }
    abuf = ab;
  }
  if (g->asum && t % g->ncol == 0) /* the first column task of a row task sums its rows of A */
    dt__gemm_row_sums(es, g->a, g->csa, r0, r1, g->k, g->asum + (size_t)(g->s0 + r0) * es);
  for (p0 = 0; p0 < g->k; p0 += g->kc) {
    const int64_t kcur = dt__gemm_min(g->kc, g->k - p0);
    const double bet = p0 == 0 && !g->bias ? g->beta : 1.0;
    /* the first depth block adds the bias row (the kernel reads it for every row: lds 0), the
       others what is already in C */
    const int fromb = p0 == 0 && g->bias;
    const char *ap = abuf + (size_t)(astr * p0) * es;
    const char *bsrc = (const char *)g->b + (size_t)(p0 * g->rsb + jc * g->csb) * es;
    const int64_t nfull = g->bdirect ? nc / nr * nr : 0; /* B's micro-panels read where they are */
    /* pack B(p0:p0+kcur, jc+nfull:jc+nc) */
    if (nfull < nc) pl->pack(nc - nfull, kcur, bsrc + (size_t)(nfull * g->csb) * es, g->csb, g->rsb, nr, bbuf);
    for (ir = r0; ir < r1; ir += mr) { /* A's micro-panel stays in L1, B's panels stream from L2 */
      const char *pa = ap + (size_t)((ir - arow) * kcur) * es;
      char *cr = (char *)g->c + (size_t)((g->s0 + ir) * g->n + jc) * es;
      const int mrr = (int)dt__gemm_min(mr, g->sm - ir);
      /* a whole micro-panel of A read where it is (adirect), or the packed one */
      const int dir = g->adirect && mrr == mr && ir + mr <= r1;
      dt__gemm_kern_fn kern = dir ? pl->kernd : pl->kern;
      const char *pk = dir ? g->a + (size_t)(ir * g->rsa + p0) * es : pa;
      const int64_t lda = dir ? g->rsa : 0, lds = fromb ? 0 : g->n;
      const char *cs = fromb ? g->bias + (size_t)jc * es : cr;
      /* a packed panel of 4 or 8 rows (256 = 21 x 12 + 4): the edge kernels, which skip the zero rows */
      if (!dir && mrr <= 4 && pl->kern4) kern = pl->kern4;
      else if (!dir && mrr <= 8 && pl->kern8) kern = pl->kern8;
      for (jr = 0; jr < nfull; jr += nr)
        kern(kcur, pk, lda, bsrc + (size_t)jr * es, g->rsb, cr + (size_t)jr * es, g->n, cs + (size_t)jr * es, lds, mrr,
             nr, g->alpha, bet);
      for (; jr < nc; jr += nr) {
        /* a last half panel of B (or less): one vector wide, whether A is read in place or packed, so
           that an element of C takes the same kernel (and bits) however the columns are split */
        dt__gemm_kern_fn kj = kern;
        if (nc - jr <= nr / 2 && kern == pl->kern && pl->kernh) kj = pl->kernh;
        else if (nc - jr <= nr / 2 && kern == pl->kernd && pl->kernhd) kj = pl->kernhd;
        kj(kcur, pk, lda, bbuf + (size_t)((jr - nfull) * kcur) * es, nr, cr + (size_t)jr * es, g->n,
           cs + (size_t)jr * es, lds, mrr, (int)dt__gemm_min(nr, nc - jr), g->alpha, bet);
      }
    }
  }
}

/* Tasks [lo, hi) of a slab on the pool's thread w. */
static void dt__gemm_slab_task(void *ctx, int64_t lo, int64_t hi, int w) {
  const dt__gemm_slab *g = (const dt__gemm_slab *)ctx;
  for (; lo < hi; lo++) dt__gemm_task(g, lo, w);
}

/* Packing a slab of A: task t packs DT__GEMM_APACK_PANELS micro-panels of depth block t % nkb. */
#define DT__GEMM_APACK_PANELS 8
typedef struct dt__gemm_apack {
  const dt__gemm_plan *pl;
  const char *a;  /* row s0 of op(A) */
  int64_t rsa, csa, sm, smp, k, kc, nkb;
  char *abuf;
} dt__gemm_apack;

static void dt__gemm_apack_part(const dt__gemm_apack *q, int64_t t) {
  const size_t es = q->pl->es;
  const int64_t pc = t % q->nkb * q->kc, kcur = dt__gemm_min(q->kc, q->k - pc);
  const int64_t r0 = t / q->nkb * DT__GEMM_APACK_PANELS * q->pl->mr, r1 = dt__gemm_min(q->sm, r0 + DT__GEMM_APACK_PANELS * q->pl->mr);
  if (r0 < r1)
    q->pl->pack(r1 - r0, kcur, q->a + (size_t)(r0 * q->rsa + pc * q->csa) * es, q->rsa, q->csa, q->pl->mr,
                q->abuf + (size_t)(q->smp * pc + r0 * kcur) * es);
}

static void dt__gemm_apack_task(void *ctx, int64_t lo, int64_t hi, int w) {
  (void)w;
  for (; lo < hi; lo++) dt__gemm_apack_part((const dt__gemm_apack *)ctx, lo);
}

/* op(A) element (i, p) is a[i * rsa + p * csa]; op(B) element (p, j) is b[p * rsb + j * csb];
   c: (m, n) contiguous. m, n, k >= 1. Returns 0, having done nothing, if out of memory.
   A slab of rows of op(A) is packed whole; then each task, a block of (rows of the slab,
   nc columns) of C, packs its own (kc, nc) panels of op(B) (kept in L2) and, for each (mr, kc)
   micro-panel of A (kept in L1), runs the micro-kernel along them. The tasks go to the pool's
   threads dynamically, each with its own B buffer, and share nothing but the packed A, so the threads meet only at the end
   of the slab, and a thread that the OS has descheduled (a busy machine) does not hold up the
   others. A is packed first, by the pool's threads in small dynamic tasks (a second join). */
static void dt__gemm_fill_bias(size_t es, int64_t m, int64_t n, const void *bias, void *c) { /* C's rows = bias */
  int64_t i;
  for (i = 0; i < m; i++) memcpy((char *)c + (size_t)(i * n) * es, bias, (size_t)n * es);
}

/* With o (or NULL), a linear layer's asks (see dt__gemm_opts): with o->bias (a row of n elements),
   C = alpha op(A) op(B) + bias, beta unused; o->by_cols, the column split; o->asum, the row sums. */
static int dt__gemm_blocked_b(const dt__gemm_plan *pl, int64_t m, int64_t n, int64_t k, double alpha,
                              const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                              int64_t csb, double beta, void *c, dt__gemm_opts *o) {
  const void *bias = o ? o->bias : NULL;
  const int by_cols = o && o->by_cols;
  const size_t es = pl->es;
  const int mr = pl->mr, nr = pl->nr;
  /* depth of a block: at most the plan's, the blocks of k as even as can be (784 = 392 + 392, not
     384 + 384 + 16: a thin last block costs a whole pass over C) */
  const int64_t kc = dt__gemm_min(dt__gemm_roundup((k + (k + pl->kc - 1) / pl->kc - 1) / ((k + pl->kc - 1) / pl->kc), 8), k);
  int64_t ncw = dt__gemm_roundup(dt__gemm_min(pl->nc, n), nr);           /* task width */
  int64_t ncol;                                                           /* column tasks */
  int64_t ms = (int64_t)(DT__GEMM_ABYTES / ((size_t)k * es)) / mr * mr;   /* rows per slab */
  int64_t nrow = 1;                                                       /* row tasks per slab */
  int nt = 1, nbuf;                                                       /* threads, B buffers */
  int priv;                                                               /* A packed per row task */
  int64_t aown[DT__GEMM_PRIV_MAX];
  size_t asz, bsz, rawsz;
  char *raw, *abuf;
  int64_t s0;
  if ((size_t)mr * (size_t)k * es > DT__GEMM_ABYTES && k > kc) { /* very deep: one slice of k at a time */
    const int64_t ks = dt__gemm_max(kc, (int64_t)(DT__GEMM_ABYTES / ((size_t)mr * es)) / kc * kc);
    dt__gemm_opts so; /* each slice's: the bias with the first; no row sums (over all of k: not slice by slice) */
    int64_t p0;
    memset(&so, 0, sizeof so);
    so.by_cols = by_cols;
    for (p0 = 0; p0 < k; p0 += ks) {
      const int64_t kk = dt__gemm_min(ks, k - p0);
      const void *ap = (const char *)a + (size_t)(p0 * csa) * es, *bp = (const char *)b + (size_t)(p0 * rsb) * es;
      const void *bs = p0 == 0 ? bias : NULL;
      double bet = p0 == 0 ? beta : 1.0;
      so.bias = bs;
      if (dt__gemm_blocked_b(pl, m, n, kk, alpha, ap, rsa, csa, bp, rsb, csb, bet, c, &so)) continue;
      if (bs) { dt__gemm_fill_bias(es, m, n, bs, c); bet = 1.0; }
      if (es == sizeof(double)) /* out of memory */
        dt__gemm_simple_f64(m, n, kk, alpha, (const double *)ap, rsa, csa, (const double *)bp, rsb, csb, bet,
                            (double *)c);
      else
        dt__gemm_simple_f32(m, n, kk, (float)alpha, (const float *)ap, rsa, csa, (const float *)bp, rsb, csb,
                            (float)bet, (float *)c);
    }
    return 1;
  }
  if (ms < mr) ms = mr;
  if (ms > m) ms = dt__gemm_roundup(m, mr);
  { /* at most one thread per DT__GEMM_PAR_MIN of work */
    double w = (double)m * (double)n * (double)k / (double)DT__GEMM_PAR_MIN;
    nt = dt__cpu_threads();
    if (w < nt) nt = (int)w;
    if (nt < 1) nt = 1;
  }
  if (nt > 1) { /* about 4 tasks per thread: narrower tasks (down to 4 micro-panels), then row tasks
                   (of 128 rows or more, as each packs its B again) */
    ncw = dt__gemm_min(ncw, dt__gemm_max(4 * nr, dt__gemm_roundup((n + 4 * nt - 1) / (4 * nt), nr)));
    if ((n + ncw - 1) / ncw < 4 * (int64_t)nt)
      nrow = dt__gemm_max(1, dt__gemm_min((4 * (int64_t)nt * ncw + n - 1) / n, dt__gemm_min(ms, m) / 128));
    { /* fewer than two tasks per thread (128^3: one; 192^3: two of 128 and 64 columns), n within
         two of the plan's task widths: row tasks of 4 micro-panels or more across all of n, which
         read B in place (bdirect) and each pack only their own rows of A, where column tasks share
         one packing of A (a join) and each packs B; only where that makes more tasks (not on many
         cores, where the column tasks are already more) */
      const int64_t tasks = (n + ncw - 1) / ncw * nrow;
      const int64_t rows = dt__gemm_min(4 * (int64_t)nt, dt__gemm_min(ms, m) / (4 * mr));
      if (csb == 1 && tasks < 2 * (int64_t)nt && rows > tasks && n <= 2 * pl->nc) {
        ncw = dt__gemm_roundup(n, nr);
        nrow = rows;
      }
    }
    if (by_cols) { /* a linear layer's x W^T: two column tasks per thread, each thread's W rows its own */
      ncw = dt__gemm_roundup((n + 2 * nt - 1) / (2 * nt), nr);
      nrow = 1;
    }
  }
  ncol = (n + ncw - 1) / ncw;
  /* the tasks are partitioned for nt threads; B buffers for as many as the pool has */
  nbuf = nt > 1 ? dt__pool_threads() : 1;
  if (nbuf > nt) nbuf = nt;
  asz = ((size_t)(ms * k) * es + 63) & ~(size_t)63;
  /* with row tasks, or split by columns for a linear layer, each thread packs the rows of A of its
     tasks itself, in its own buffer (on a VM whose two cores sit on two L3s, a shared packing phase
     was slower than one thread's) */
  priv = 0;
  if ((nrow > 1 || by_cols) && nbuf > 1 && nbuf <= DT__GEMM_PRIV_MAX) {
    const int64_t rpt0 = (dt__gemm_roundup(dt__gemm_min(ms, m), mr) / mr + nrow - 1) / nrow * mr; /* the first slab's */
    const size_t psz = ((size_t)(rpt0 * k) * es + 63) & ~(size_t)63;
    if ((size_t)nbuf * psz <= DT__GEMM_ABYTES) { priv = 1; asz = (size_t)nbuf * psz; }
  }
  bsz = ((size_t)(kc * ncw) * es + 63) & ~(size_t)63;
  rawsz = asz + (size_t)nbuf * bsz + 64;
  raw = (char *)DT__GEMM_MALLOC(rawsz);
  if (!raw) return 0;
  abuf = raw + (64 - (size_t)((uintptr_t)raw & 63));

  for (s0 = 0; s0 < m; s0 += ms) {
    const int64_t sm = dt__gemm_min(ms, m - s0);       /* rows in this slab */
    const int64_t smp = dt__gemm_roundup(sm, mr);      /* padded */
    const int64_t npan = smp / mr;                     /* A micro-panels per depth block */
    const int64_t rpt = (npan + nrow - 1) / nrow * mr; /* rows per row task */
    const int64_t nrt = (sm + rpt - 1) / rpt;          /* row tasks */
    int64_t t;
    /* pack A(s0:s0+sm, :): depth block pc at abuf + smp * pc, its panel i at + i * kcur; with the
       pool, in parallel (packed by one thread it is a sizeable share of a threaded product) */
    if (!priv) {
      dt__gemm_apack q;
      q.pl = pl; q.a = (const char *)a + (size_t)(s0 * rsa) * es; q.rsa = rsa; q.csa = csa; q.sm = sm; q.smp = smp;
      q.k = k; q.kc = kc; q.nkb = (k + kc - 1) / kc; q.abuf = abuf;
      /* the packing tasks; one plain call where nbuf is 1 or there is one task */
      dt__par_for_w((npan + DT__GEMM_APACK_PANELS - 1) / DT__GEMM_APACK_PANELS * q.nkb, 1, nbuf, dt__gemm_apack_task, &q);
    }
    {
      dt__gemm_slab g;
      g.pl = pl; g.k = k; g.n = n; g.kc = kc; g.ncol = ncol; g.ncw = ncw; g.rpt = rpt; g.sm = sm; g.smp = smp;
      g.s0 = s0; g.abuf = abuf; g.alpha = alpha; g.beta = beta; g.b = b; g.rsb = rsb; g.csb = csb; g.c = c;
      g.bbuf = abuf + asz; g.bsz = bsz;
      g.a = (const char *)a + (size_t)(s0 * rsa) * es; g.rsa = rsa; g.csa = csa; g.aown = aown;
      g.apriv = priv ? abuf : NULL; g.asz = asz / (size_t)nbuf;
      /* with row tasks, each would pack the same B again: read its rows where they are instead;
         with few micro-panels of A (a convolution's gemm against a block of col, with 32 or 64
         output channels; a 10-wide output layer's weight gradient), B's elements are used a few
         times: packing them does not pay */
      g.bdirect = csb == 1 && (nrow > 1 || npan <= DT__GEMM_BDIRECT_PANELS);
      /* each thread's rows of A, when they are contiguous, read in place rather than packed: for the
         column split each thread would pack all of A (a linear layer's x, 800 KB in Fashion-MNIST) */
      g.adirect = priv && csa == 1 && pl->kernd && (DT__GEMM_ADIRECT > 1 || (DT__GEMM_ADIRECT == 1 && by_cols));
      g.bias = (const char *)bias;
      g.asum = priv && rsa == 1 && o ? (char *)o->asum : NULL; /* A packed by each thread, rows contiguous: its row sums too */
      if (priv) {
        int w;
        g.abuf = NULL;
        for (w = 0; w < nbuf; w++) aown[w] = -1;
      }
      if (nbuf == 1) { /* a plain loop: no job for the pool */
        for (t = 0; t < nrt * ncol; t++) dt__gemm_task(&g, t, 0);
      } else
        dt__par_for_w(nrt * ncol, 1, nbuf, dt__gemm_slab_task, &g);
    }
  }
  DT__GEMM_FREE(raw, rawsz);
  if (priv && rsa == 1 && o && o->asum) o->asum_done = 1; /* written: see dt__gemm_opts */
  return 1;
}

static DT__GEMM_MAYBE_UNUSED int dt__gemm_blocked(const dt__gemm_plan *pl, int64_t m, int64_t n, int64_t k, double alpha,
                            const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                            int64_t csb, double beta, void *c) {
  return dt__gemm_blocked_b(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, NULL);
}

/* ---- src/cpu/gemm/skinny.c ---- */
/* Work (m * n * k) per thread, at least, for the skinny kernel. */
#ifndef DT__GEMM_SKINNY_PAR
#define DT__GEMM_SKINNY_PAR (256 * 1024) /* less is not worth a fork/join */
#endif
/* Problems up to this size (m * n * k) take the rows kernel (no packing of A). */
#ifndef DT__GEMM_ROWS_MAX
#define DT__GEMM_ROWS_MAX (64 * 64 * 64)
#endif
/* The most bytes of op(B) copied for the rows kernel when its rows are not contiguous. */
#ifndef DT__GEMM_ROWS_COPY
#define DT__GEMM_ROWS_COPY ((size_t)1 << 20)
#endif

/* One thread's share of the rows kernel: rows (a multiple of 4) or columns (whole blocks) per. */
typedef struct dt__gemm_rows_job {
  const dt__gemm_plan *pl;
  int64_t m, n, k, rsa, csa, ldb, ldt, per;
  double alpha, beta;
  const void *a, *b, *tail;
  void *c;
  int by_rows;
} dt__gemm_rows_job;

static void dt__gemm_rows_part(const dt__gemm_rows_job *j, int64_t t) {
  const size_t es = j->pl->es;
  const int64_t lo = t * j->per;
  int64_t hi = dt__gemm_min(j->by_rows ? j->m : j->n, lo + j->per);
  /* a last part of fewer than 4 rows goes with the one before: the rows kernel does fewer than 4
     rows another way (axpy), so the bits would depend on the number of threads */
  if (j->by_rows && j->m - lo < 4 && lo > 0) return;
  if (j->by_rows && j->m - hi < 4) hi = j->m;
  if (lo >= hi) return;
  if (j->by_rows)
    j->pl->rows(hi - lo, j->n, j->k, j->alpha, (const char *)j->a + (size_t)(lo * j->rsa) * es, j->rsa, j->csa, j->b,
                j->ldb, j->tail, j->ldt, j->beta, (char *)j->c + (size_t)(lo * j->n) * es, j->n);
  else
    j->pl->rows(j->m, hi - lo, j->k, j->alpha, j->a, j->rsa, j->csa, (const char *)j->b + (size_t)lo * es, j->ldb,
                j->tail, j->ldt, j->beta, (char *)j->c + (size_t)lo * es, j->n);
}

static void dt__gemm_rows_task(void *ctx, int64_t lo, int64_t hi) {
  for (; lo < hi; lo++) dt__gemm_rows_part((const dt__gemm_rows_job *)ctx, lo);
}

/* The rows kernel, where it pays: few rows of C (a vector times a matrix), little depth, few
   columns, or a small problem. op(B) is read in place when its rows are contiguous (csb == 1;
   its last columns, short of a whole block, copied zero padded), else copied whole when small.
   Rows (or, for fewer rows than threads, columns) are split in nt parts for the pool's threads.
   Returns 0, having done nothing, where it does not fit or out of memory. */
/* The shapes dt__gemm_skinny takes. */
static int dt__gemm_skinny_fits(const dt__gemm_plan *pl, int64_t m, int64_t n, int64_t k) {
  return pl->rows && (m <= 4 || k <= 16 || n <= 16 || (double)m * (double)n * (double)k <= (double)DT__GEMM_ROWS_MAX);
}

static int dt__gemm_skinny(const dt__gemm_plan *pl, int64_t m, int64_t n, int64_t k, double alpha, const void *a,
                           int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb, double beta, void *c) {
  const size_t es = pl->es;
  const double work = (double)m * (double)n * (double)k;
  const int64_t rw = pl->rw, jt = rw ? n / rw * rw : 0;
  const void *bb = b, *tail = NULL;
  int64_t ldb = rsb, ldt = rw;
  char *buf = NULL;
  size_t bsz = 0;
  int nt = 1;
  if (!dt__gemm_skinny_fits(pl, m, n, k)) return 0;
  if (csb != 1) { /* op(B) copied: (k, npad), zero padded; its last block is the tail */
    const int64_t npad = dt__gemm_roundup(n, rw);
    bsz = (size_t)(k * npad) * es;
    if (bsz > DT__GEMM_ROWS_COPY || !(buf = (char *)DT__GEMM_MALLOC(bsz))) return 0;
    pl->pack(n, k, b, csb, rsb, (int)npad, buf);
    bb = buf;
    ldb = ldt = npad;
    tail = buf + (size_t)jt * es;
  } else if (jt < n) { /* the last n - jt columns: (k, rw), zero padded */
    bsz = (size_t)(k * rw) * es;
    if (!(buf = (char *)DT__GEMM_MALLOC(bsz))) return 0;
    pl->pack(n - jt, k, (const char *)b + (size_t)jt * es, 1, rsb, (int)rw, buf);
    tail = buf;
  }
  {
    const double w = work / (double)DT__GEMM_SKINNY_PAR;
    nt = dt__cpu_threads();
    if (w < nt) nt = (int)w;
    if (nt < 1) nt = 1;
  }
  {
    dt__gemm_rows_job job;
    job.pl = pl; job.m = m; job.n = n; job.k = k; job.alpha = alpha; job.beta = beta;
    job.a = a; job.rsa = rsa; job.csa = csa; job.b = bb; job.ldb = ldb; job.tail = tail; job.ldt = ldt; job.c = c;
    job.by_rows = m >= 4 * (int64_t)nt;
    job.per = job.by_rows ? ((m + nt - 1) / nt + 3) / 4 * 4 : dt__gemm_roundup((n + nt - 1) / nt, rw);
    if (nt == 1) dt__gemm_rows_part(&job, 0); /* a plain call: no job for the pool */
    else dt__par_for(nt, 1, dt__gemm_rows_task, &job);
  }
  if (buf) DT__GEMM_FREE(buf, bsz);
  return 1;
}

/* The best plan this CPU supports. */
static void dt__gemm_plan_best(int dbl, dt__gemm_plan *pl) {
  int isa;
  for (isa = DT__GEMM_ISA_COUNT - 1; isa > 0; isa--)
    if (dt__gemm_plan_get(isa, dbl, pl)) return;
  dt__gemm_plan_get(DT__GEMM_ISA_C, dbl, pl);
}

/* Built-in gemm with plan pl (NULL: the best one). c: (m, n). */
/* With bias (a row of n elements, or NULL): C = alpha op(A) op(B) + bias, beta unused; the
   blocked kernel's tasks write it into their blocks of C, other paths start from a copy. */
static void dt__gemm_builtin_b(const dt__gemm_plan *pl, int dbl, int ta, int tb, int64_t m, int64_t n,
                               int64_t k, double alpha, const void *a, const void *b, double beta, void *c,
                               dt__gemm_opts *o) {
  const int64_t rsa = ta ? 1 : k, csa = ta ? m : 1; /* op(A)(i, p) */
  const int64_t rsb = tb ? 1 : n, csb = tb ? k : 1; /* op(B)(p, j) */
  const void *bias = o ? o->bias : NULL;
  dt__gemm_opts nb; /* o without its bias, once the bias is in C */
  dt__gemm_plan best;
  if (m <= 0 || n <= 0) return;
  if (o) nb = *o;
  else memset(&nb, 0, sizeof nb);
  nb.bias = NULL;
  if (bias) {
    const size_t es = dbl ? sizeof(double) : sizeof(float);
    if (!dt__gemm_dot_takes(dbl, ta, tb, m, n, k) && k > 0 && alpha != 0 && (double)m * (double)n * (double)k > (double)DT__GEMM_SMALL && m > 2 && n > 2) {
      if (!pl) {
        dt__gemm_plan_best(dbl, &best);
        pl = &best;
      }
      if (!dt__gemm_skinny_fits(pl, m, n, k) && dt__gemm_blocked_b(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, 0.0, c, o))
        return;
    }
    dt__gemm_fill_bias(es, m, n, bias, c);
    beta = 1.0;
  }
  if (k <= 0 || alpha == 0) { /* C = beta * C */
    int64_t i, mn = m * n;
    if (dbl) {
      double *cd = (double *)c;
      for (i = 0; i < mn; i++) cd[i] = beta == 0 ? 0.0 : beta * cd[i];
    } else {
      float *cf = (float *)c;
      for (i = 0; i < mn; i++) cf[i] = beta == 0 ? 0.0f : (float)beta * cf[i];
    }
    return;
  }
#if DT__GEMM_VEC
  /* A B^T with few rows and columns and a long depth: dot products of rows, no packing */
  if (dt__gemm_dot_takes(dbl, ta, tb, m, n, k) && dt__gemm_dot(NULL, m, n, k, (float)alpha, (const float *)a, (const float *)b, (float)beta, (float *)c)) return;
#endif
  /* packing pays for itself unless the problem is tiny, or one row or column (or two) wide */
  if ((double)m * (double)n * (double)k > (double)DT__GEMM_SMALL) {
    if (!pl) {
      dt__gemm_plan_best(dbl, &best);
      pl = &best;
    }
    if (dt__gemm_skinny(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c)) return;
    if (m > 2 && n > 2 && dt__gemm_blocked_b(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, o ? &nb : NULL)) {
      if (o) o->asum_done = nb.asum_done;
      return;
    }
  }
  if (dbl)
    dt__gemm_simple_f64(m, n, k, alpha, (const double *)a, rsa, csa, (const double *)b, rsb, csb, beta,
                        (double *)c);
  else
    dt__gemm_simple_f32(m, n, k, (float)alpha, (const float *)a, rsa, csa, (const float *)b, rsb, csb,
                        (float)beta, (float *)c);
}

static DT__GEMM_MAYBE_UNUSED void dt__gemm_builtin(const dt__gemm_plan *pl, int dbl, int ta, int tb, int64_t m, int64_t n,
                                                    int64_t k, double alpha, const void *a, const void *b, double beta, void *c) {
  dt__gemm_builtin_b(pl, dbl, ta, tb, m, n, k, alpha, a, b, beta, c, NULL);
}

/* ---- src/cpu/gemm/cblas.c ---- */
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

/* ---- src/cpu/gemm/bf16.c ---- */
/* Half precision products on the CPU (the gemm slot given DT_F16 or DT_BF16; the table's
   half_gemm is 1): BF16 with the AVX512_BF16 instruction VDPBF16PS where the CPU has it, as
   oneDNN does for PyTorch, and everything else (F16, BF16 on other CPUs or builds) through F32
   copies (dt__half_gemm_f32).

   The BF16 kernel: C (bf16) = alpha op(A) op(B) + beta C, A and B in bfloat16. VDPBF16PS adds
   the two products of a pair of bf16 depths to each F32 lane; the sums stay in F32 over all of
   k and are rounded to bfloat16 once, with alpha and beta applied in F32 (rounded to float, as
   the F32 gemm takes them). op(A) is packed in panels of 12 rows, the depth pair (2q, 2q+1) of
   a row one 32-bit word; op(B) in panels of 32 columns, the depth pair of each column side by
   side (the layout VDPBF16PS reads); an odd k gets a zero depth, a last panel zero rows or
   columns. A 12x32 tile of C stays in 24 registers for all of k; the tasks, a group of A's
   panels (kept in L2) by a group of B's, go to the CPU backend's threads. VDPBF16PS takes
   bf16 subnormals as zero and flushes subnormal results, as oneDNN's kernels do. */

/* GCC >= 10 and Clang >= 9 (Apple's >= 12) know the avx512bf16 target */
#if DT__GEMM_X86 && ((defined(__clang__) && !defined(__apple_build_version__) && __clang_major__ >= 9) || \
                     (defined(__clang__) && defined(__apple_build_version__) && __clang_major__ >= 12) ||  \
                     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define DT__GEMM_BF16 1
#include <immintrin.h>
#else
#define DT__GEMM_BF16 0
#endif

#if DT__GEMM_BF16
#define DT__BF16_MR 12
#define DT__BF16_NR 32
#define DT__BF16_RG 8 /* A's panels per task: 96 rows (192 KiB of A at k = 1024) */
#define DT__BF16_CG 8 /* B's panels per task: 256 columns */
#define DT__BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* CPUID leaf 7 subleaf 1, EAX bit 5: AVX512_BF16; with AVX-512 (F, BW, VL) that the OS saves */
static int dt__gemm_bf16_cached = -1;
static int dt__gemm_bf16_ok(void) {
  int ok = DT__ATOMIC_LOAD(&dt__gemm_bf16_cached);
  if (ok < 0) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    ok = 0;
    if (dt__x86_has_avx512f() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __get_cpuid_max(0, NULL) >= 7) {
      __cpuid_count(7, 1, a, b, c, d);
      ok = (a >> 5) & 1u;
    }
    (void)b; (void)c; (void)d;
    DT__ATOMIC_STORE(&dt__gemm_bf16_cached, ok);
  }
  return ok;
}

/* pa: (kq, 12) words of A's panel; pb: (kq, 32, 2) bf16 of B's panel -> out: (12, 32) F32 sums */
DT__BF16_TARGET static void dt__gemm_bf16_kern(int64_t kq, const uint32_t *pa, const uint16_t *pb, float *out) {
  __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0,
         c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0, c16 = c0, c17 = c0, c18 = c0, c19 = c0, c20 = c0, c21 = c0,
         c22 = c0, c23 = c0;
  int64_t q;
  for (q = 0; q < kq; q++, pa += DT__BF16_MR, pb += 2 * DT__BF16_NR) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)pb), b1 = (__m512bh)_mm512_loadu_si512((const void *)(pb + 32));
    __m512bh x;
    x = (__m512bh)_mm512_set1_epi32((int)pa[0]); c0 = _mm512_dpbf16_ps(c0, x, b0); c1 = _mm512_dpbf16_ps(c1, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[1]); c2 = _mm512_dpbf16_ps(c2, x, b0); c3 = _mm512_dpbf16_ps(c3, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[2]); c4 = _mm512_dpbf16_ps(c4, x, b0); c5 = _mm512_dpbf16_ps(c5, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[3]); c6 = _mm512_dpbf16_ps(c6, x, b0); c7 = _mm512_dpbf16_ps(c7, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[4]); c8 = _mm512_dpbf16_ps(c8, x, b0); c9 = _mm512_dpbf16_ps(c9, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[5]); c10 = _mm512_dpbf16_ps(c10, x, b0); c11 = _mm512_dpbf16_ps(c11, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[6]); c12 = _mm512_dpbf16_ps(c12, x, b0); c13 = _mm512_dpbf16_ps(c13, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[7]); c14 = _mm512_dpbf16_ps(c14, x, b0); c15 = _mm512_dpbf16_ps(c15, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[8]); c16 = _mm512_dpbf16_ps(c16, x, b0); c17 = _mm512_dpbf16_ps(c17, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[9]); c18 = _mm512_dpbf16_ps(c18, x, b0); c19 = _mm512_dpbf16_ps(c19, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[10]); c20 = _mm512_dpbf16_ps(c20, x, b0); c21 = _mm512_dpbf16_ps(c21, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[11]); c22 = _mm512_dpbf16_ps(c22, x, b0); c23 = _mm512_dpbf16_ps(c23, x, b1);
  }
  _mm512_storeu_ps(out, c0); _mm512_storeu_ps(out + 16, c1); _mm512_storeu_ps(out + 32, c2); _mm512_storeu_ps(out + 48, c3);
  _mm512_storeu_ps(out + 64, c4); _mm512_storeu_ps(out + 80, c5); _mm512_storeu_ps(out + 96, c6); _mm512_storeu_ps(out + 112, c7);
  _mm512_storeu_ps(out + 128, c8); _mm512_storeu_ps(out + 144, c9); _mm512_storeu_ps(out + 160, c10);
  _mm512_storeu_ps(out + 176, c11); _mm512_storeu_ps(out + 192, c12); _mm512_storeu_ps(out + 208, c13);
  _mm512_storeu_ps(out + 224, c14); _mm512_storeu_ps(out + 240, c15); _mm512_storeu_ps(out + 256, c16);
  _mm512_storeu_ps(out + 272, c17); _mm512_storeu_ps(out + 288, c18); _mm512_storeu_ps(out + 304, c19);
  _mm512_storeu_ps(out + 320, c20); _mm512_storeu_ps(out + 336, c21); _mm512_storeu_ps(out + 352, c22);
  _mm512_storeu_ps(out + 368, c23);
}

/* One product: op(A) element (i, p) at a[i * rsa + p * csa], op(B) element (p, j) at b[p * rsb + j * csb],
   c: (m, n); pa, pb: the packing buffers; kq = ceil(k / 2). */
typedef struct dt__gemm_bf16_job {
  const uint16_t *a, *b;
  uint16_t *c;
  int64_t m, n, k, kq, rsa, csa, rsb, csb, npa, npb, ntc;
  float alpha, beta;
  uint32_t *pa;
  uint16_t *pb;
} dt__gemm_bf16_job;

/* A's panel x: pa[(x * kq + q) * 12 + r] = a(i, 2q) | a(i, 2q + 1) << 16, i = 12 x + r (zero past m or k) */
static void dt__gemm_bf16_pack_a(const dt__gemm_bf16_job *g, int64_t x) {
  uint32_t *d = g->pa + (size_t)(x * g->kq * DT__BF16_MR);
  int64_t q;
  int r;
  for (r = 0; r < DT__BF16_MR; r++) {
    const int64_t i = x * DT__BF16_MR + r;
    const uint16_t *s = g->a + i * g->rsa;
    if (i >= g->m) {
      for (q = 0; q < g->kq; q++) d[q * DT__BF16_MR + r] = 0;
      continue;
    }
    for (q = 0; q < g->k / 2; q++)
      d[q * DT__BF16_MR + r] = (uint32_t)s[2 * q * g->csa] | (uint32_t)s[(2 * q + 1) * g->csa] << 16;
    if (g->k & 1) d[q * DT__BF16_MR + r] = s[2 * q * g->csa];
  }
}

/* B's panel y: pb[((y * kq + q) * 32 + c) * 2 + e] = b(2q + e, j), j = 32 y + c (zero past n or k) */
static void dt__gemm_bf16_pack_b(const dt__gemm_bf16_job *g, int64_t y) {
  uint16_t *d = g->pb + (size_t)(y * g->kq * 2 * DT__BF16_NR);
  int64_t p, j;
  int cc;
  for (p = 0; p < 2 * g->kq; p++) {
    uint16_t *dp = d + (p >> 1) * 2 * DT__BF16_NR + (p & 1);
    for (cc = 0; cc < DT__BF16_NR; cc++) {
      j = y * DT__BF16_NR + cc;
      dp[2 * cc] = p < g->k && j < g->n ? g->b[p * g->rsb + j * g->csb] : 0;
    }
  }
}

static void dt__gemm_bf16_pack_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gemm_bf16_job *g = (const dt__gemm_bf16_job *)ctx;
  for (; lo < hi; lo++) {
    if (lo < g->npa) dt__gemm_bf16_pack_a(g, lo);
    else dt__gemm_bf16_pack_b(g, lo - g->npa);
  }
}

/* Task t: A's panels of row group t / ntc by B's panels of column group t % ntc. */
static void dt__gemm_bf16_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gemm_bf16_job *g = (const dt__gemm_bf16_job *)ctx;
  float acc[DT__BF16_MR * DT__BF16_NR];
  for (; lo < hi; lo++) {
    const int64_t x0 = lo / g->ntc * DT__BF16_RG, y0 = lo % g->ntc * DT__BF16_CG;
    const int64_t x1 = dt__gemm_min(g->npa, x0 + DT__BF16_RG), y1 = dt__gemm_min(g->npb, y0 + DT__BF16_CG);
    int64_t x, y;
    for (y = y0; y < y1; y++)
      for (x = x0; x < x1; x++) {
        const int64_t i0 = x * DT__BF16_MR, j0 = y * DT__BF16_NR;
        const int mr = (int)dt__gemm_min(DT__BF16_MR, g->m - i0), nr = (int)dt__gemm_min(DT__BF16_NR, g->n - j0);
        int r, cc;
        dt__gemm_bf16_kern(g->kq, g->pa + (size_t)(x * g->kq * DT__BF16_MR), g->pb + (size_t)(y * g->kq * 2 * DT__BF16_NR), acc);
        for (r = 0; r < mr; r++) {
          uint16_t *ci = g->c + (i0 + r) * g->n + j0;
          const float *ar = acc + r * DT__BF16_NR;
          if (g->beta == 0.0f)
            for (cc = 0; cc < nr; cc++) ci[cc] = dt__f32_to_bf16(g->alpha * ar[cc]);
          else
            for (cc = 0; cc < nr; cc++) ci[cc] = dt__f32_to_bf16(g->alpha * ar[cc] + g->beta * dt__bf16_to_f32(ci[cc]));
        }
      }
  }
}

/* C (m, n) = alpha op(A) op(B) + beta C in bfloat16 (a: (m, k) or (k, m) when ta; b: (k, n) or
   (n, k) when tb); m, n >= 1. Returns 0, having done nothing, when the packing buffers cannot be had. */
static int dt__gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, const void *b, double beta,
                         void *c) {
  dt__gemm_bf16_job g;
  size_t asz, bsz, rawsz;
  char *raw, *al;
  g.a = (const uint16_t *)a; g.b = (const uint16_t *)b; g.c = (uint16_t *)c;
  g.m = m; g.n = n; g.k = k; g.kq = (k + 1) / 2;
  g.rsa = ta ? 1 : k; g.csa = ta ? m : 1; g.rsb = tb ? 1 : n; g.csb = tb ? k : 1;
  g.npa = (m + DT__BF16_MR - 1) / DT__BF16_MR; g.npb = (n + DT__BF16_NR - 1) / DT__BF16_NR;
  g.ntc = (g.npb + DT__BF16_CG - 1) / DT__BF16_CG;
  g.alpha = (float)alpha; g.beta = (float)beta;
  asz = ((size_t)(g.npa * g.kq * DT__BF16_MR) * sizeof(uint32_t) + 63) & ~(size_t)63;
  bsz = (size_t)(g.npb * g.kq * 2 * DT__BF16_NR) * sizeof(uint16_t);
  rawsz = asz + bsz + 64;
  raw = (char *)DT__GEMM_MALLOC(rawsz);
  if (!raw) return 0;
  al = raw + (64 - (size_t)((uintptr_t)raw & 63));
  g.pa = (uint32_t *)(void *)al; g.pb = (uint16_t *)(void *)(al + asz);
  dt__par_for(g.npa + g.npb, 4, dt__gemm_bf16_pack_task, &g);
  dt__par_for((g.npa + DT__BF16_RG - 1) / DT__BF16_RG * g.ntc, 1, dt__gemm_bf16_task, &g);
  DT__GEMM_FREE(raw, rawsz);
  return 1;
}
#endif

/* The CPU's gemm slot for t = DT_F16 or DT_BF16: the arguments of dt__cpu_gemm. */
static dt_status dt__cpu_gemm_half(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                                   const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c, int64_t sc) {
  int64_t i = 0;
#if DT__GEMM_BF16
  if (t == DT_BF16 && m > 0 && n > 0 && dt__gemm_bf16_ok())
    for (; i < batch; i++)
      if (!dt__gemm_bf16(ta, tb, m, n, k, alpha, (const uint16_t *)a + i * sa, (const uint16_t *)b + i * sb, beta,
                         (uint16_t *)c + i * sc))
        break; /* out of memory: the rest through F32 copies (which say so if they cannot be had either) */
  if (i == batch) return DT_OK;
#endif
  return dt__half_gemm_f32(dt__cpu_backend(), dev, t, ta, tb, batch - i, m, n, k, alpha, (const uint16_t *)a + i * sa, sa,
                           (const uint16_t *)b + i * sb, sb, beta, (uint16_t *)c + i * sc, sc);
}

/* ---- src/cpu/gemm/entry.c ---- */
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

/* ---- src/cpu/optim.c ---- */
/* One pass over a parameter per step: dt__optim_hp's update, element by element, each value
   rounded to T at every operation in PyTorch's order (multiply, then add: no FMA in ISO C
   builds), on the pool for large parameters; float16 and bfloat16 parameters element by
   element through dt__optim_half1 (src/backend/optim_half.h). */

/* SGD's step on [lo, hi) 32 bytes at a time, the same operations per element as the scalar loop
   in DT__OPTIM_DEFINE below; returns where that loop goes on (the tail). The scalar loop alone
   waits on each parameter in turn (often last read by another core). */
#if DT__GEMM_VEC
#define DT__OPTIM_DEFINE_SGD_VEC(NAME, T)                                                                            \
  static int64_t NAME(const dt__optim_hp *h, T *p, T *b1, const T *g, int64_t lo, int64_t hi) {                     \
    typedef T dt__ov __attribute__((vector_size(32)));                                                               \
    enum { W = 32 / sizeof(T) };                                                                                     \
    const dt__ov vz = {0}, vlr = vz + (T)h->lr, vwd = vz + (T)h->weight_decay, vmom = vz + (T)h->momentum;           \
    const int l2 = h->weight_decay != 0, use_mom = h->momentum != 0, first = h->first;                               \
    int64_t i = lo;                                                                                                  \
    for (; i + W <= hi; i += W) {                                                                                    \
      dt__ov d, pv, bv;                                                                                              \
      memcpy(&d, g + i, sizeof d);                                                                                   \
      memcpy(&pv, p + i, sizeof pv);                                                                                 \
      if (l2) d = d + vwd * pv;                                                                                      \
      if (use_mom) {                                                                                                 \
        if (first) bv = d;                                                                                           \
        else {                                                                                                       \
          memcpy(&bv, b1 + i, sizeof bv);                                                                            \
          bv = vmom * bv + d;                                                                                        \
        }                                                                                                            \
        memcpy(b1 + i, &bv, sizeof bv);                                                                              \
        d = bv;                                                                                                      \
      }                                                                                                              \
      pv = pv - vlr * d;                                                                                             \
      memcpy(p + i, &pv, sizeof pv);                                                                                 \
    }                                                                                                                \
    return i;                                                                                                        \
  }
#else
#define DT__OPTIM_DEFINE_SGD_VEC(NAME, T)                                                                            \
  static int64_t NAME(const dt__optim_hp *h, T *p, T *b1, const T *g, int64_t lo, int64_t hi) {                     \
    (void)h; (void)p; (void)b1; (void)g; (void)hi;                                                                   \
    return lo;                                                                                                       \
  }
#endif
DT__OPTIM_DEFINE_SGD_VEC(dt__sgd_vec_f32, float)
DT__OPTIM_DEFINE_SGD_VEC(dt__sgd_vec_f64, double)
#undef DT__OPTIM_DEFINE_SGD_VEC

/* p[lo, hi) one step along g with buffers b1 (momentum, first moment) and b2 (second moment) */
#define DT__OPTIM_DEFINE(NAME, T, SQRT, SGD_VEC)                                                                        \
  static void NAME(const dt__optim_hp *h, T *p, T *b1, T *b2, const T *g, int64_t lo, int64_t hi) {                 \
    const T lr = (T)h->lr, wd = (T)h->weight_decay, mom = (T)h->momentum;                                            \
    const T beta1 = (T)h->beta1, beta2 = (T)h->beta2, c1 = (T)(1.0 - h->beta1), c2 = (T)(1.0 - h->beta2);            \
    const T eps = (T)h->eps, bc2 = (T)h->bc2_sqrt, nstep = (T)(-h->step_size);                                       \
    const T decay = (T)(1.0 - h->lr * h->weight_decay);                                                              \
    const int l2 = h->kind != DT__OPT_ADAMW && h->weight_decay != 0, first = h->first;                               \
    int64_t i;                                                                                                       \
    if (h->kind == DT__OPT_SGD) {                                                                                    \
      const int use_mom = h->momentum != 0;                                                                          \
      i = SGD_VEC(h, p, b1, g, lo, hi);                                                                              \
      for (; i < hi; i++) {                                                                                          \
        T d = g[i];                                                                                                  \
        if (l2) d = d + wd * p[i];                                                                                   \
        if (use_mom) { b1[i] = first ? d : mom * b1[i] + d; d = b1[i]; }                                             \
        p[i] = p[i] - lr * d;                                                                                        \
      }                                                                                                              \
    } else {                                                                                                         \
      const int adamw = h->kind == DT__OPT_ADAMW;                                                                    \
      for (i = lo; i < hi; i++) {                                                                                    \
        T d = g[i], pv = p[i], m, v;                                                                                 \
        if (adamw) pv = pv * decay;                                                                                  \
        else if (l2) d = d + wd * pv;                                                                                \
        m = beta1 * b1[i] + c1 * d;                                                                                  \
        v = beta2 * b2[i] + c2 * d * d;                                                                              \
        b1[i] = m; b2[i] = v;                                                                                        \
        p[i] = pv + nstep * (m / (SQRT(v) / bc2 + eps));                                                             \
      }                                                                                                              \
    }                                                                                                                \
  }
DT__OPTIM_DEFINE(dt__optim_f32, float, sqrtf, dt__sgd_vec_f32)
DT__OPTIM_DEFINE(dt__optim_f64, double, sqrt, dt__sgd_vec_f64)
#undef DT__OPTIM_DEFINE

typedef struct dt__optim_job {
  const dt__optim_hp *h;
  dt__optim_hc hc; /* F16, BF16: the constants of dt__optim_half1 */
  dt_dtype t;
  void *p, *b1, *b2;
  const void *g;
} dt__optim_job;

static void dt__optim_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__optim_job *j = (const dt__optim_job *)ctx;
  if (dt__is_half(j->t)) {
    uint16_t *p = (uint16_t *)j->p, *b1 = (uint16_t *)j->b1, *b2 = (uint16_t *)j->b2;
    const uint16_t *g = (const uint16_t *)j->g;
    int64_t i;
    for (i = lo; i < hi; i++) dt__optim_half1(&j->hc, p + i, b1 ? b1 + i : NULL, b2 ? b2 + i : NULL, g[i]);
  } else if (j->t == DT_F32) dt__optim_f32(j->h, (float *)j->p, (float *)j->b1, (float *)j->b2, (const float *)j->g, lo, hi);
  else dt__optim_f64(j->h, (double *)j->p, (double *)j->b1, (double *)j->b2, (const double *)j->g, lo, hi);
}

static dt_status dt__cpu_optim_step(int dev, dt_dtype t, int64_t n, const dt__optim_hp *h, void *p, const void *g,
                                    void *buf1, void *buf2) {
  dt__optim_job j;
  (void)dev;
  if (t != DT_F32 && t != DT_F64 && !dt__is_half(t)) return DT_ERR_DTYPE;
  if (dt__is_half(t)) dt__optim_half_consts(h, t == DT_BF16, &j.hc);
  j.h = h; j.t = t; j.p = p; j.g = g; j.b1 = buf1; j.b2 = buf2;
  dt__par_for(n, DT__GRAIN_MATH, dt__optim_task, &j);
  return DT_OK;
}

/* ---- src/cpu/index.c ---- */
/* The strided copy (slices along dims > 0, cat, permute) and index_select, on
   elements of es bytes moved by memcpy of a constant size (one load and one store), so one
   kernel serves every dtype. Both run over rows of the innermost dim on the thread pool. */

/* NAME: n elements of ES bytes, xs and ys elements apart; one function per element size, so that
   each memcpy is of a constant size: one load and one store */
#define DT__STRIDED_ROW(NAME, ES)                                                                  \
  static void NAME(int64_t n, const char *x, int64_t xs, char *y, int64_t ys) {                    \
    int64_t i;                                                                                     \
    for (i = 0; i < n; i++) memcpy(y + (size_t)(i * ys) * ES, x + (size_t)(i * xs) * ES, ES);      \
  }
DT__STRIDED_ROW(dt__strided_row_1, 1)
DT__STRIDED_ROW(dt__strided_row_2, 2)
DT__STRIDED_ROW(dt__strided_row_4, 4)
DT__STRIDED_ROW(dt__strided_row_8, 8)
#undef DT__STRIDED_ROW

typedef struct dt__strided_job {
  const dt__bcast *g;
  size_t es;
  const char *x;
  char *y;
} dt__strided_job;

/* rows [lo, hi) of g's innermost dim */
static void dt__strided_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__strided_job *j = (const dt__strided_job *)ctx;
  const dt__bcast *g = j->g;
  const int nd = g->ndim;
  const int64_t inner = g->dims[nd - 1], as = g->astride[nd - 1], bs = g->bstride[nd - 1];
  int64_t r;
  for (r = lo; r < hi; r++) {
    int64_t ox, oy;
    const char *x;
    char *y;
    dt__bcast_row(g, r, &ox, &oy);
    x = j->x + (size_t)ox * j->es;
    y = j->y + (size_t)oy * j->es;
    if (as == 1 && bs == 1) memcpy(y, x, (size_t)inner * j->es);
    else if (j->es == 1) dt__strided_row_1(inner, x, as, y, bs);
    else if (j->es == 2) dt__strided_row_2(inner, x, as, y, bs);
    else if (j->es == 4) dt__strided_row_4(inner, x, as, y, bs);
    else dt__strided_row_8(inner, x, as, y, bs);
  }
}

static dt_status dt__cpu_copy_strided(int dev, size_t es, const dt__bcast *g, const void *x, void *y) {
  dt__strided_job j;
  int64_t inner;
  (void)dev;
  if (g->numel <= 0) return DT_OK;
  if (es != 1 && es != 2 && es != 4 && es != 8) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "copy_strided: elements of %zu bytes are not supported", es);
    return DT_ERR_DTYPE;
  }
  j.g = g; j.es = es; j.x = (const char *)x; j.y = (char *)y;
  inner = g->dims[g->ndim - 1];
  dt__par_for(g->numel / inner, (DT__GRAIN_MEM + inner - 1) / inner, dt__strided_task, &j);
  return DT_OK;
}

typedef struct dt__gather_job {
  size_t row;          /* bytes in a row: inner elements */
  int64_t n, k;
  const int64_t *idx;
  const char *x;
  char *y;
} dt__gather_job;

/* rows [lo, hi) of y: (outer, k) rows of inner elements */
static void dt__gather_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gather_job *j = (const dt__gather_job *)ctx;
  int64_t r;
  for (r = lo; r < hi; r++) {
    int64_t o = r / j->k, v = j->idx[r % j->k];
#if defined(__GNUC__) || defined(__clang__)
    if (r + 1 < hi && j->row >= 256) { /* the next row (its first 4 KiB) on its way: rows picked at
                                          random (a shuffled minibatch) are not prefetched otherwise */
      const int64_t o1 = (r + 1) / j->k, v1 = j->idx[(r + 1) % j->k];
      if (v1 >= 0 && v1 < j->n) {
        const char *nx = j->x + (size_t)(o1 * j->n + v1) * j->row;
        size_t b;
        for (b = 0; b < j->row && b < 4096; b += 64) __builtin_prefetch(nx + b);
      }
    }
#endif
    if (v < 0 || v >= j->n) memset(j->y + (size_t)r * j->row, 0, j->row); /* never read: the core refused it already */
    else memcpy(j->y + (size_t)r * j->row, j->x + (size_t)(o * j->n + v) * j->row, j->row);
  }
}

/* x: (outer, n, inner), idx: (k,) -> y: (outer, k, inner) */
static dt_status dt__cpu_index_select(int dev, size_t es, int64_t outer, int64_t n, int64_t inner, const int64_t *idx,
                                      int64_t k, const void *x, void *y) {
  dt__gather_job j;
  (void)dev;
  if (outer <= 0 || inner <= 0 || k <= 0) return DT_OK;
  j.row = (size_t)inner * es; j.n = n; j.k = k; j.idx = idx; j.x = (const char *)x; j.y = (char *)y;
  dt__par_for(outer * k, (DT__GRAIN_MEM + inner - 1) / inner, dt__gather_task, &j);
  return DT_OK;
}

/* ---- src/cpu/index2.c ---- */
/* where, gather, scatter-add, index-add (index_select's backward) and random integers on the
   CPU. Elements that are only moved (where, gather) move as es bytes, whatever the dtype. The
   core checks every index before it calls (src/ops/index2.c); an index outside [0, n) is still
   never followed here. */

/* one element of es bytes (1, 2, 4 or 8), each a copy of a constant size */
static void dt__mv_elem(char *y, const char *x, size_t es) {
  switch (es) {
    case 1: memcpy(y, x, 1); break;
    case 2: memcpy(y, x, 2); break;
    case 4: memcpy(y, x, 4); break;
    default: memcpy(y, x, 8); break;
  }
}

/* the offsets (a, b and, with cs, c) of the first element of row r of g (the rows: every dim but the last) */
static void dt__row_offsets(const dt__bcast *g, const int64_t *cs, int64_t r, int64_t *oa, int64_t *ob, int64_t *oc) {
  int d;
  *oa = 0; *ob = 0; *oc = 0;
  for (d = g->ndim - 2; d >= 0; d--) {
    int64_t i = r % g->dims[d];
    r /= g->dims[d];
    *oa += i * g->astride[d];
    *ob += i * g->bstride[d];
    if (cs) *oc += i * cs[d];
  }
}

typedef struct dt__where_job {
  const dt__bcast *g;
  const int64_t *cs;
  size_t es;
  const uint8_t *c;
  const char *a, *b;
  char *y;
} dt__where_job;

/* rows [lo, hi) of y (contiguous over g's dims): y = c ? a : b */
static void dt__where_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__where_job *j = (const dt__where_job *)ctx;
  const dt__bcast *g = j->g;
  const int nd = g->ndim;
  const int64_t inner = g->dims[nd - 1], as = g->astride[nd - 1], bs = g->bstride[nd - 1], cs = j->cs[nd - 1];
  const size_t es = j->es;
  int64_t r, i;
  for (r = lo; r < hi; r++) {
    int64_t oa, ob, oc;
    char *y = j->y + (size_t)(r * inner) * es;
    dt__row_offsets(g, j->cs, r, &oa, &ob, &oc);
    for (i = 0; i < inner; i++) {
      const char *src = j->c[oc + i * cs] ? j->a + (size_t)(oa + i * as) * es : j->b + (size_t)(ob + i * bs) * es;
      dt__mv_elem(y + (size_t)i * es, src, es);
    }
  }
}

static dt_status dt__cpu_where(int dev, size_t es, const dt__bcast *g, const int64_t *cstride, const void *c, const void *a,
                               const void *b, void *y) {
  dt__where_job j;
  int64_t inner;
  (void)dev;
  if (g->numel <= 0) return DT_OK;
  j.g = g; j.cs = cstride; j.es = es; j.c = (const uint8_t *)c; j.a = (const char *)a; j.b = (const char *)b; j.y = (char *)y;
  inner = g->dims[g->ndim - 1];
  dt__par_for(g->numel / inner, (DT__GRAIN_MEM + inner - 1) / inner, dt__where_task, &j);
  return DT_OK;
}

typedef struct dt__gs_job {
  const dt__bcast *g;
  size_t es;
  int64_t n, stride;
  const int64_t *idx;
  const char *x;
  char *y;
} dt__gs_job;

/* gather, rows [lo, hi) of the index: y[ob] = x[oa + idx stride] (0 for an index out of range) */
static void dt__gather2_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gs_job *j = (const dt__gs_job *)ctx;
  const dt__bcast *g = j->g;
  const int nd = g->ndim;
  const int64_t inner = g->dims[nd - 1], as = g->astride[nd - 1], bs = g->bstride[nd - 1];
  const size_t es = j->es;
  int64_t r, i;
  for (r = lo; r < hi; r++) {
    int64_t oa, ob, oc;
    const int64_t *ix = j->idx + r * inner;
    dt__row_offsets(g, NULL, r, &oa, &ob, &oc);
    for (i = 0; i < inner; i++) {
      int64_t v = ix[i];
      char *y = j->y + (size_t)(ob + i * bs) * es;
      if (v < 0 || v >= j->n) memset(y, 0, es);
      else dt__mv_elem(y, j->x + (size_t)(oa + i * as + v * j->stride) * es, es);
    }
  }
}

static dt_status dt__cpu_gather(int dev, size_t es, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                                const void *x, void *y) {
  dt__gs_job j;
  int64_t inner;
  (void)dev;
  if (g->numel <= 0) return DT_OK;
  j.g = g; j.es = es; j.n = n; j.stride = stride; j.idx = idx; j.x = (const char *)x; j.y = (char *)y;
  inner = g->dims[g->ndim - 1];
  dt__par_for(g->numel / inner, (DT__GRAIN_MEM + inner - 1) / inner, dt__gather2_task, &j);
  return DT_OK;
}

/* scatter_add in T, the sum computed in U (the unsigned type for integers: they wrap, as PyTorch's):
   y[oa + idx stride] += src[ob], over the index in order (one thread: several elements may land on
   one, and their sum is then in the index's order, as PyTorch's CPU loop) */
#define DT__SCATTER_ADD(NAME, T, U)                                                                      \
  static void NAME(const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx, const void *src_, \
                   void *y_) {                                                                           \
    const T *src = (const T *)src_;                                                                      \
    T *y = (T *)y_;                                                                                      \
    const int nd = g->ndim;                                                                              \
    const int64_t inner = g->dims[nd - 1], as = g->astride[nd - 1], bs = g->bstride[nd - 1];             \
    int64_t r, i, rows = g->numel / inner;                                                               \
    for (r = 0; r < rows; r++) {                                                                         \
      int64_t oa, ob, oc;                                                                                \
      const int64_t *ix = idx + r * inner;                                                               \
      dt__row_offsets(g, NULL, r, &oa, &ob, &oc);                                                        \
      for (i = 0; i < inner; i++)                                                                        \
        if (ix[i] >= 0 && ix[i] < n) {                                                                   \
          T *p = &y[oa + i * as + ix[i] * stride];                                                       \
          *p = (T)((U)*p + (U)src[ob + i * bs]);                                                         \
        }                                                                                                \
    }                                                                                                    \
  }
DT__SCATTER_ADD(dt__scatter_add_f32, float, float)
DT__SCATTER_ADD(dt__scatter_add_f64, double, double)
DT__SCATTER_ADD(dt__scatter_add_i32, int32_t, uint32_t)
DT__SCATTER_ADD(dt__scatter_add_i64, int64_t, uint64_t)
#undef DT__SCATTER_ADD

static dt_status dt__cpu_scatter_add(int dev, dt_dtype t, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                                     const void *src, void *y) {
  (void)dev;
  if (g->numel <= 0) return DT_OK;
  switch (t) {
    case DT_F32: dt__scatter_add_f32(g, n, stride, idx, src, y); return DT_OK;
    case DT_F64: dt__scatter_add_f64(g, n, stride, idx, src, y); return DT_OK;
    case DT_I32: dt__scatter_add_i32(g, n, stride, idx, src, y); return DT_OK;
    case DT_I64: dt__scatter_add_i64(g, n, stride, idx, src, y); return DT_OK;
    default: break;
  }
  snprintf(dt__cpu_err, sizeof dt__cpu_err, "scatter_add: %s is not supported", dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

typedef struct dt__iadd_job {
  int f64;
  int64_t n, inner, k, cols; /* cols: column blocks per outer item */
  const int64_t *idx;
  const void *src;
  void *y;
} dt__iadd_job;

#define DT__IADD_COLS 256 /* columns a task adds at a time */

/* tasks [lo, hi) of (outer, column block): for each j in order, y[o, idx[j], block] += src[o, j, block].
   Each task owns its columns, so the sums are the same (j in order) on any number of threads. */
static void dt__iadd_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__iadd_job *j = (const dt__iadd_job *)ctx;
  int64_t t, r, c;
  for (t = lo; t < hi; t++) {
    int64_t o = t / j->cols, c0 = (t % j->cols) * DT__IADD_COLS;
    int64_t c1 = c0 + DT__IADD_COLS < j->inner ? c0 + DT__IADD_COLS : j->inner;
    for (r = 0; r < j->k; r++) {
      int64_t v = j->idx[r];
      size_t yo, so;
      if (v < 0 || v >= j->n) continue;
      yo = (size_t)((o * j->n + v) * j->inner);
      so = (size_t)((o * j->k + r) * j->inner);
      if (j->f64) {
        double *y = (double *)j->y + yo;
        const double *s = (const double *)j->src + so;
        for (c = c0; c < c1; c++) y[c] += s[c];
      } else {
        float *y = (float *)j->y + yo;
        const float *s = (const float *)j->src + so;
        for (c = c0; c < c1; c++) y[c] += s[c];
      }
    }
  }
}

static dt_status dt__cpu_index_add(int dev, dt_dtype t, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k,
                                   const void *src, void *y) {
  dt__iadd_job j;
  int64_t per;
  (void)dev;
  if (outer <= 0 || inner <= 0 || k <= 0) return DT_OK;
  if (t != DT_F32 && t != DT_F64) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "index_add: %s is not supported", dt__dtype_str(t));
    return DT_ERR_DTYPE;
  }
  j.f64 = t == DT_F64; j.n = n; j.inner = inner; j.k = k; j.idx = idx; j.src = src; j.y = y;
  j.cols = (inner + DT__IADD_COLS - 1) / DT__IADD_COLS;
  per = k * (inner < DT__IADD_COLS ? inner : DT__IADD_COLS); /* elements a task adds */
  dt__par_for(outer * j.cols, (DT__GRAIN_MEM + per - 1) / per, dt__iadd_task, &j);
  return DT_OK;
}

typedef struct dt__randint_job {
  uint64_t seed, draw, range;
  int64_t low;
  int64_t *y;
} dt__randint_job;

static void dt__randint_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__randint_job *j = (const dt__randint_job *)ctx;
  int64_t i;
  for (i = lo; i < hi; i++) j->y[i] = dt__random_int_at(j->seed, j->draw, (uint64_t)i, j->low, j->range);
}

static dt_status dt__cpu_random_int(int dev, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, int64_t low, uint64_t range,
                                    int64_t *y) {
  dt__randint_job j;
  (void)dev;
  dt__rng_at(gen, &seed, &draw);
  j.seed = seed; j.draw = draw; j.range = range; j.low = low; j.y = y;
  dt__par_for(n, DT__GRAIN_MATH, dt__randint_task, &j);
  return DT_OK;
}

/* ---- src/cpu/conv.c ---- */
/* Convolution's im2col and col2im, and 2-d pooling with its backward, on the thread pool:
   im2col by rows of col, everything else by (image, channel) planes, so that each thread
   writes only its own planes and every sum runs in one fixed order (the same bits for any
   number of threads). The pooling backward passes gather: each input position sums the
   windows that hold it, so nothing is scattered and a bogus max index is never followed.
   Pooling sums in double; the inner loops (a row of im2col or col2im, a pooling window) are
   typed, the rest reads and writes through dt__cv_get/dt__cv_set (F32 or F64 by a flag). */

/* the output rows (or columns) whose windows [o s - p, o s - p + k) hold input position i: [*lo, *hi) within [0, on) */
static void dt__pool_span(int64_t i, int64_t k, int64_t s, int64_t p, int64_t on, int64_t *lo, int64_t *hi) {
  int64_t a = i + p - k + 1, b = (i + p) / s + 1;
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  *hi = b < on ? b : on;
}
/* adaptive pooling: window o of `in` positions over `on` outputs is [start, end), as PyTorch's */
static int64_t dt__adapt_start(int64_t o, int64_t in, int64_t on) { return (o / on) * in + ((o % on) * in) / on; }
static int64_t dt__adapt_end(int64_t o, int64_t in, int64_t on) { return 1 + ((o + 1) * in - 1) / on; }
/* avg pooling's divisor for the window from a (a row or column, padding counted) of k, clipped to n + p */
static int64_t dt__avg_extent(int64_t a, int64_t k, int64_t n, int64_t p) { return (a + k < n + p ? a + k : n + p) - a; }

static double dt__cv_get(int dbl, const void *p, int64_t i) { return dbl ? ((const double *)p)[i] : (double)((const float *)p)[i]; }
static void dt__cv_set(int dbl, void *p, int64_t i, double v) {
  if (dbl) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v;
}

typedef struct dt__conv_job {
  int dbl;                   /* F64, else F32 */
  int64_t nimg;              /* im2col and col2im: the images in col */
  const dt__conv2d *g;
  const dt__pool2d *p;
  const void *x;
  void *y;
  const int64_t *idx;        /* pool2d_backward's (max) */
  int64_t *idx_out;          /* pool2d's (max) */
} dt__conv_job;

/* the columns ox in [*a, *b) of an output row whose input column ox sw + x0 is within [0, w) */
static void dt__col_span(int64_t ow, int64_t sw, int64_t x0, int64_t w, int64_t *a, int64_t *b) {
  *a = x0 >= 0 ? 0 : (-x0 + sw - 1) / sw;
  *b = w - 1 - x0 < 0 ? 0 : (w - 1 - x0) / sw + 1;
  if (*b > ow) *b = ow;
  if (*a > *b) *a = *b;
}
/* one output row of col: row[ox] = xrow[ox sw + x0] on [a, b) (dt__col_span's), else 0; at unit
   stride in 16-byte pieces, which compilers copy with a vector move each (a call to memcpy per
   row cost more than the copy: rows are a few dozen elements) */
#define DT__IM2COL_ROW_DEFINE(NAME, T)                                                              \
  static void NAME(T *row, const T *xrow, int64_t ow, int64_t sw, int64_t x0, int64_t a, int64_t b) { \
    enum { P = 16 / sizeof(T) };                                                                    \
    int64_t ox = 0;                                                                                 \
    for (; ox < a; ox++) row[ox] = 0;                                                               \
    if (sw == 1) {                                                                                  \
      const T *src = xrow + x0;                                                                     \
      for (; ox + P <= b; ox += P) memcpy(row + ox, src + ox, 16);                                  \
      for (; ox < b; ox++) row[ox] = src[ox];                                                       \
    } else                                                                                          \
      for (; ox < b; ox++) row[ox] = xrow[ox * sw + x0];                                            \
    for (; ox < ow; ox++) row[ox] = 0;                                                              \
  }
DT__IM2COL_ROW_DEFINE(dt__im2col_row_f32, float)
DT__IM2COL_ROW_DEFINE(dt__im2col_row_f64, double)
#undef DT__IM2COL_ROW_DEFINE
/* its adjoint: xrow[ox sw + x0] += row[ox] on [a, b); at unit stride on vectors of 16 bytes */
#define DT__COL2IM_ROW_DEFINE(NAME, T, V)                                                           \
  static void NAME(const T *row, T *xrow, int64_t sw, int64_t x0, int64_t a, int64_t b) {           \
    enum { P = sizeof(V) / sizeof(T) };                                                             \
    int64_t ox = a;                                                                                 \
    if (sw == 1) {                                                                                  \
      T *dst = xrow + x0;                                                                           \
      for (; ox + P <= b; ox += P) {                                                                \
        V u, v;                                                                                     \
        memcpy(&u, dst + ox, sizeof u);                                                             \
        memcpy(&v, row + ox, sizeof v);                                                             \
        u += v;                                                                                     \
        memcpy(dst + ox, &u, sizeof u);                                                             \
      }                                                                                             \
      for (; ox < b; ox++) dst[ox] += row[ox];                                                      \
    } else                                                                                          \
      for (; ox < b; ox++) xrow[ox * sw + x0] += row[ox];                                           \
  }
DT__COL2IM_ROW_DEFINE(dt__col2im_row_f32, float, dt__vf_base)
DT__COL2IM_ROW_DEFINE(dt__col2im_row_f64, double, dt__vd_base)
#undef DT__COL2IM_ROW_DEFINE

/* a pooling window's sum in double: plane xp (w columns), rows [y0, y1), columns [x0, x1) */
static double dt__window_sum_f32(const float *xp, int64_t w, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  double s = 0;
  int64_t iy, ix;
  for (iy = y0; iy < y1; iy++)
    for (ix = x0; ix < x1; ix++) s += (double)xp[iy * w + ix];
  return s;
}
static double dt__window_sum_f64(const double *xp, int64_t w, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  double s = 0;
  int64_t iy, ix;
  for (iy = y0; iy < y1; iy++)
    for (ix = x0; ix < x1; ix++) s += xp[iy * w + ix];
  return s;
}

/* rows [lo, hi) of col: (c kh kw, nimg, oh ow), row q = (tap r, image i), from x: (nimg, c, h, w).
   The rows of one tap are taken together: a tap that reads only padding is one memset; the output
   rows [y0, y1) that read the image, the rest zeros. Where a row of the output is as wide as the
   image at unit strides (a "same" convolution, or a 1x1 one), the output row oy reads input row
   oy + dy shifted by x0 columns for every oy, so those rows are one copy of consecutive input,
   whose (at most |x0|) columns that fell outside the image are then zeroed. */
static void dt__im2col_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__conv_job *j = (const dt__conv_job *)ctx;
  const dt__conv2d *g = j->g;
  const size_t es = j->dbl ? sizeof(double) : sizeof(float);
  const int64_t kk = g->kh * g->kw, l = g->oh * g->ow, hw = g->h * g->w;
  const int shifted = g->sw == 1 && g->sh == 1 && g->ow == g->w;
  int64_t q = lo, oy;
  while (q < hi) {
    const int64_t r = q / j->nimg, ch = r / kk, tap = g->flip ? kk - 1 - r % kk : r % kk, ki = tap / g->kw, kj = tap % g->kw;
    const int64_t qe = (r + 1) * j->nimg < hi ? (r + 1) * j->nimg : hi;
    const int64_t x0 = kj * g->dw - g->pw, dy = ki * g->dh - g->ph;
    int64_t a, b, y0, y1, i = q % j->nimg;
    char *row = (char *)j->y + (size_t)(q * l) * es;
    dt__col_span(g->ow, g->sw, x0, g->w, &a, &b);
    dt__col_span(g->oh, g->sh, dy, g->h, &y0, &y1);
    if (a >= b || y0 >= y1) { /* the tap reads only padding */
      memset(row, 0, (size_t)((qe - q) * l) * es);
      q = qe;
      continue;
    }
    for (; q < qe; q++, i++, row += (size_t)l * es) {
      const char *xp = (const char *)j->x + (size_t)((i * g->c + ch) * hw) * es;
      memset(row, 0, (size_t)(y0 * g->ow) * es);
      if (shifted) { /* elements [a, (y1 - y0) ow - (ow - b)) of the block, from input (y0 + dy) w + x0 on */
        const int64_t n = (y1 - y0) * g->ow - (g->ow - b) - a;
        char *blk = row + (size_t)(y0 * g->ow) * es;
        memcpy(blk + (size_t)a * es, xp + (size_t)((y0 + dy) * g->w + x0 + a) * es, (size_t)n * es);
        if (a > 0 || b < g->ow)
          for (oy = 0; oy < y1 - y0; oy++) {
            char *br = blk + (size_t)(oy * g->ow) * es;
            memset(br, 0, (size_t)a * es);
            memset(br + (size_t)b * es, 0, (size_t)(g->ow - b) * es);
          }
      } else
        for (oy = y0; oy < y1; oy++) {
          char *dst = row + (size_t)(oy * g->ow) * es;
          const int64_t iy = oy * g->sh + dy;
          if (j->dbl) dt__im2col_row_f64((double *)dst, (const double *)xp + iy * g->w, g->ow, g->sw, x0, a, b);
          else dt__im2col_row_f32((float *)dst, (const float *)xp + iy * g->w, g->ow, g->sw, x0, a, b);
        }
      memset(row + (size_t)(y1 * g->ow) * es, 0, (size_t)((g->oh - y1) * g->ow) * es);
    }
  }
}

/* planes [lo, hi) of x: (nimg, c, h, w), each the sum of its entries of col: (c kh kw, nimg, oh ow),
   tap after tap; rows that read only padding are skipped, and where im2col copied a tap's rows as
   one block (see above) they are added back as one run per output row */
static void dt__col2im_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__conv_job *j = (const dt__conv_job *)ctx;
  const dt__conv2d *g = j->g;
  const size_t es = j->dbl ? sizeof(double) : sizeof(float);
  const int64_t kk = g->kh * g->kw, l = g->oh * g->ow;
  int64_t plane, k, oy;
  for (plane = lo; plane < hi; plane++) {
    const int64_t i = plane / g->c, ch = plane % g->c;
    char *xp = (char *)j->y + (size_t)(plane * g->h * g->w) * es;
    memset(xp, 0, (size_t)(g->h * g->w) * es);
    for (k = 0; k < kk; k++) {
      const int64_t ki = k / g->kw, kj = k % g->kw, x0 = kj * g->dw - g->pw, dy = ki * g->dh - g->ph;
      const char *row = (const char *)j->x + (size_t)(((ch * kk + k) * j->nimg + i) * l) * es;
      int64_t a, b, y0, y1;
      dt__col_span(g->ow, g->sw, x0, g->w, &a, &b);
      dt__col_span(g->oh, g->sh, dy, g->h, &y0, &y1);
      if (a >= b) continue;
      if (g->sw == 1 && g->sh == 1 && g->ow == g->w && a == 0 && b == g->ow) { /* whole rows: one run */
        const int64_t n = (y1 - y0) * g->ow;
        if (n <= 0) continue;
        if (j->dbl) dt__col2im_row_f64((const double *)row + y0 * g->ow, (double *)xp + (y0 + dy) * g->w, 1, 0, 0, n);
        else dt__col2im_row_f32((const float *)row + y0 * g->ow, (float *)xp + (y0 + dy) * g->w, 1, 0, 0, n);
        continue;
      }
      for (oy = y0; oy < y1; oy++) {
        const int64_t iy = oy * g->sh + dy;
        const char *rr = row + (size_t)(oy * g->ow) * es;
        if (j->dbl) dt__col2im_row_f64((const double *)rr, (double *)xp + iy * g->w, g->sw, x0, a, b);
        else dt__col2im_row_f32((const float *)rr, (float *)xp + iy * g->w, g->sw, x0, a, b);
      }
    }
  }
}

/* max and average pooling of one plane, typed: each window clipped to the plane, the average
   divided by its size clipped to (h + ph, w + pw) only (count_include_pad); the max the first
   one, NaN winning (the last NaN), and where */
#define DT__POOL_PLANE_DEFINE(NAME, T)                                                              \
  static void NAME(const dt__pool2d *p, const T *xp, T *yp, int64_t *ip) {                          \
    int64_t oy, ox, iy, ix;                                                                         \
    for (oy = 0; oy < p->oh; oy++) {                                                                \
      const int64_t a = oy * p->sh - p->ph, y0 = a < 0 ? 0 : a, y1 = a + p->kh < p->h ? a + p->kh : p->h; \
      const int64_t ey = dt__avg_extent(a, p->kh, p->h, p->ph);                                     \
      for (ox = 0; ox < p->ow; ox++) {                                                              \
        const int64_t b = ox * p->sw - p->pw, x0 = b < 0 ? 0 : b, x1 = b + p->kw < p->w ? b + p->kw : p->w; \
        if (p->kind == DT__POOL2D_MAX) {                                                            \
          T best = -INFINITY;                                                                       \
          int64_t at = y0 * p->w + x0;                                                              \
          for (iy = y0; iy < y1; iy++)                                                              \
            for (ix = x0; ix < x1; ix++) {                                                          \
              const T v = xp[iy * p->w + ix];                                                       \
              const int beats = v > best || v != v; /* no branch: mispredicted on random windows */ \
              best = beats ? v : best;                                                              \
              at = beats ? iy * p->w + ix : at;                                                     \
            }                                                                                       \
          yp[oy * p->ow + ox] = best;                                                               \
          if (ip) ip[oy * p->ow + ox] = at;                                                         \
        } else {                                                                                    \
          double sum = 0;                                                                           \
          for (iy = y0; iy < y1; iy++)                                                              \
            for (ix = x0; ix < x1; ix++) sum += (double)xp[iy * p->w + ix];                         \
          yp[oy * p->ow + ox] = (T)(sum / (double)(ey * dt__avg_extent(b, p->kw, p->w, p->pw)));    \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }
DT__POOL_PLANE_DEFINE(dt__pool_plane_f32, float)
DT__POOL_PLANE_DEFINE(dt__pool_plane_f64, double)
#undef DT__POOL_PLANE_DEFINE

/* planes [lo, hi) of y: (n, c, oh, ow) (and idx for max) from x: (n, c, h, w) */
static void dt__pool_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__conv_job *j = (const dt__conv_job *)ctx;
  const dt__pool2d *p = j->p;
  const int dbl = j->dbl;
  int64_t plane, oy, ox;
  for (plane = lo; plane < hi; plane++) {
    const int64_t xo = plane * p->h * p->w, yo = plane * p->oh * p->ow;
    if (p->kind != DT__POOL2D_ADAPTIVE_AVG) {
      int64_t *ip = j->idx_out ? j->idx_out + yo : NULL;
      if (dbl) dt__pool_plane_f64(p, (const double *)j->x + xo, (double *)j->y + yo, ip);
      else dt__pool_plane_f32(p, (const float *)j->x + xo, (float *)j->y + yo, ip);
      continue;
    }
    for (oy = 0; oy < p->oh; oy++)
      for (ox = 0; ox < p->ow; ox++) {
        const int64_t y0 = dt__adapt_start(oy, p->h, p->oh), y1 = dt__adapt_end(oy, p->h, p->oh);
        const int64_t x0 = dt__adapt_start(ox, p->w, p->ow), x1 = dt__adapt_end(ox, p->w, p->ow);
        const double s = dbl ? dt__window_sum_f64((const double *)j->x + xo, p->w, y0, y1, x0, x1)
                             : dt__window_sum_f32((const float *)j->x + xo, p->w, y0, y1, x0, x1);
        dt__cv_set(dbl, j->y, yo + oy * p->ow + ox, s / (double)((y1 - y0) * (x1 - x0)));
      }
  }
}

/* windows that do not overlap (stride >= kernel) and no padding: each input position is in one
   window at most, so each window writes its own positions (those in none stay 0), with the bits of
   the general gather below (a sum from 0 in double of the one term) */
static int dt__pool_disjoint(const dt__pool2d *p) {
  return p->kind != DT__POOL2D_ADAPTIVE_AVG && p->sh >= p->kh && p->sw >= p->kw && p->ph == 0 && p->pw == 0;
}
#define DT__POOL_BACK_DISJOINT_DEFINE(NAME, T)                                                      \
  static void NAME(const dt__pool2d *p, const T *gy, const int64_t *idx, T *gx, int64_t plane) {    \
    const int64_t xo = plane * p->h * p->w, yo = plane * p->oh * p->ow;                             \
    int64_t oy, ox, iy, ix;                                                                         \
    T *xp = gx + xo;                                                                                \
    memset(xp, 0, sizeof(T) * (size_t)(p->h * p->w));                                               \
    for (oy = 0; oy < p->oh; oy++)                                                                  \
      for (ox = 0; ox < p->ow; ox++) {                                                              \
        const int64_t o = yo + oy * p->ow + ox, y0 = oy * p->sh, x0 = ox * p->sw;                   \
        if (p->kind == DT__POOL2D_MAX) {                                                            \
          const int64_t at = idx[o];                                                                \
          const T v = (T)(0.0 + (double)gy[o]);                                                     \
          for (iy = y0; iy < y0 + p->kh; iy++)                                                      \
            for (ix = x0; ix < x0 + p->kw; ix++)                                                    \
              if (at == iy * p->w + ix) xp[at] = v;                                                 \
        } else {                                                                                    \
          const T v = (T)(0.0 + (double)gy[o] / (double)(dt__avg_extent(y0, p->kh, p->h, 0) *       \
                                                          dt__avg_extent(x0, p->kw, p->w, 0)));     \
          for (iy = y0; iy < y0 + p->kh; iy++)                                                      \
            for (ix = x0; ix < x0 + p->kw; ix++) xp[iy * p->w + ix] = v;                            \
        }                                                                                           \
      }                                                                                             \
  }
DT__POOL_BACK_DISJOINT_DEFINE(dt__pool_back_disjoint_f32, float)
DT__POOL_BACK_DISJOINT_DEFINE(dt__pool_back_disjoint_f64, double)
#undef DT__POOL_BACK_DISJOINT_DEFINE

/* max pooling's backward of one plane whose windows overlap, as the gather below computes it
   (each input position the sum in double, from 0, of the gradients of the windows whose max it
   is, in the windows' order) but scattering: each window adds its gradient to the position its
   index names, where that is inside the window. Bands of input rows are summed in acc, the
   output rows whose windows reach into the band visited in order. Planes wider than acc take
   the gather (returns 0). */
#define DT__POOL_ACC 2048
#define DT__POOL_BACK_MAX_DEFINE(NAME, T)                                                           \
  static int NAME(const dt__pool2d *p, const T *gy, const int64_t *idx, T *gx, int64_t plane) {     \
    double acc[DT__POOL_ACC];                                                                       \
    const int64_t band = DT__POOL_ACC / p->w, yo = plane * p->oh * p->ow;                           \
    int64_t r0, t, oy, ox, o0, o1, e0, e1;                                                          \
    T *xp = gx + plane * p->h * p->w;                                                               \
    if (band < 1) return 0;                                                                         \
    for (r0 = 0; r0 < p->h; r0 += band) {                                                           \
      const int64_t r1 = r0 + band < p->h ? r0 + band : p->h;                                       \
      for (t = 0; t < (r1 - r0) * p->w; t++) acc[t] = 0;                                            \
      dt__pool_span(r0, p->kh, p->sh, p->ph, p->oh, &o0, &e0);                                      \
      dt__pool_span(r1 - 1, p->kh, p->sh, p->ph, p->oh, &e1, &o1);                                  \
      for (oy = o0; oy < o1; oy++) {                                                                \
        const int64_t wy = oy * p->sh - p->ph;                                                      \
        for (ox = 0; ox < p->ow; ox++) {                                                            \
          const int64_t o = yo + oy * p->ow + ox, at = idx[o], wx = ox * p->sw - p->pw;              \
          int64_t iy, ix;                                                                           \
          if (at < r0 * p->w || at >= r1 * p->w) continue;                                          \
          iy = at / p->w; ix = at - iy * p->w;                                                      \
          if (iy < wy || iy >= wy + p->kh || ix < wx || ix >= wx + p->kw) continue;                 \
          acc[at - r0 * p->w] += (double)gy[o];                                                     \
        }                                                                                           \
      }                                                                                             \
      for (t = 0; t < (r1 - r0) * p->w; t++) xp[r0 * p->w + t] = (T)acc[t];                         \
    }                                                                                               \
    (void)e0; (void)e1;                                                                             \
    return 1;                                                                                       \
  }
DT__POOL_BACK_MAX_DEFINE(dt__pool_back_max_f32, float)
DT__POOL_BACK_MAX_DEFINE(dt__pool_back_max_f64, double)
#undef DT__POOL_BACK_MAX_DEFINE

/* planes [lo, hi) of gx: (n, c, h, w) from gy: (n, c, oh, ow) (and idx for max) */
static void dt__pool_back_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__conv_job *j = (const dt__conv_job *)ctx;
  const dt__pool2d *p = j->p;
  const int dbl = j->dbl;
  int64_t plane, oy, ox, iy, ix;
  if (dt__pool_disjoint(p)) {
    for (plane = lo; plane < hi; plane++)
      if (dbl) dt__pool_back_disjoint_f64(p, (const double *)j->x, j->idx, (double *)j->y, plane);
      else dt__pool_back_disjoint_f32(p, (const float *)j->x, j->idx, (float *)j->y, plane);
    return;
  }
  for (plane = lo; plane < hi; plane++) {
    const int64_t xo = plane * p->h * p->w, yo = plane * p->oh * p->ow;
    if (p->kind == DT__POOL2D_MAX &&
        (dbl ? dt__pool_back_max_f64(p, (const double *)j->x, j->idx, (double *)j->y, plane)
             : dt__pool_back_max_f32(p, (const float *)j->x, j->idx, (float *)j->y, plane)))
      continue;
    for (iy = 0; iy < p->h; iy++)
      for (ix = 0; ix < p->w; ix++) {
        int64_t y0, y1, x0, x1;
        double s = 0;
        if (p->kind == DT__POOL2D_ADAPTIVE_AVG) {
          y0 = iy * p->oh / p->h; y1 = ((iy + 1) * p->oh + p->h - 1) / p->h;
          x0 = ix * p->ow / p->w; x1 = ((ix + 1) * p->ow + p->w - 1) / p->w;
          if (y1 > p->oh) y1 = p->oh;
          if (x1 > p->ow) x1 = p->ow;
        } else {
          dt__pool_span(iy, p->kh, p->sh, p->ph, p->oh, &y0, &y1);
          dt__pool_span(ix, p->kw, p->sw, p->pw, p->ow, &x0, &x1);
        }
        for (oy = y0; oy < y1; oy++)
          for (ox = x0; ox < x1; ox++) {
            const int64_t o = yo + oy * p->ow + ox;
            if (p->kind == DT__POOL2D_MAX) {
              if (j->idx[o] == iy * p->w + ix) s += dt__cv_get(dbl, j->x, o);
            } else if (p->kind == DT__POOL2D_AVG) {
              s += dt__cv_get(dbl, j->x, o) / (double)(dt__avg_extent(oy * p->sh - p->ph, p->kh, p->h, p->ph) *
                                                       dt__avg_extent(ox * p->sw - p->pw, p->kw, p->w, p->pw));
            } else {
              const int64_t a = dt__adapt_start(oy, p->h, p->oh), e = dt__adapt_end(oy, p->h, p->oh);
              const int64_t b = dt__adapt_start(ox, p->w, p->ow), f = dt__adapt_end(ox, p->w, p->ow);
              if (iy >= a && iy < e && ix >= b && ix < f) s += dt__cv_get(dbl, j->x, o) / (double)((e - a) * (f - b));
            }
          }
        dt__cv_set(dbl, j->y, xo + iy * p->w + ix, s);
      }
  }
}

static dt_status dt__cpu_conv_job(const char *what, dt_dtype t, dt__conv_job *j) {
  memset(j, 0, sizeof *j);
  j->dbl = t == DT_F64;
  if (t == DT_F32 || t == DT_F64) return DT_OK;
  snprintf(dt__cpu_err, sizeof dt__cpu_err, "%s is not defined for %s", what, dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

/* items of about `work` elements each, in chunks of some DT__GRAIN_MEM elements */
static int64_t dt__conv_grain(int64_t work) { return work >= DT__GRAIN_MEM ? 1 : (DT__GRAIN_MEM + work - 1) / (work > 0 ? work : 1); }

static dt_status dt__cpu_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  dt__conv_job j;
  (void)dev;
  if (dt__cpu_conv_job("im2col", t, &j) != DT_OK) return DT_ERR_DTYPE;
  j.g = g; j.x = x; j.y = col; j.nimg = nimg;
  dt__par_for(nimg * g->c * g->kh * g->kw, dt__conv_grain(g->oh * g->ow), dt__im2col_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  dt__conv_job j;
  (void)dev;
  if (dt__cpu_conv_job("col2im", t, &j) != DT_OK) return DT_ERR_DTYPE;
  j.g = g; j.x = col; j.y = x; j.nimg = nimg;
  dt__par_for(nimg * g->c, dt__conv_grain(g->kh * g->kw * g->oh * g->ow), dt__col2im_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  dt__conv_job j;
  (void)dev;
  if (dt__cpu_conv_job("pool2d", t, &j) != DT_OK) return DT_ERR_DTYPE;
  j.p = p; j.x = x; j.y = y; j.idx_out = p->kind == DT__POOL2D_MAX ? idx : NULL;
  dt__par_for(p->n * p->c, dt__conv_grain(p->h * p->w + p->oh * p->ow), dt__pool_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  dt__conv_job j;
  (void)dev;
  if (dt__cpu_conv_job("pool2d_backward", t, &j) != DT_OK) return DT_ERR_DTYPE;
  j.p = p; j.x = gy; j.y = gx; j.idx = idx;
  dt__par_for(p->n * p->c, dt__conv_grain(p->h * p->w + p->oh * p->ow), dt__pool_back_task, &j);
  return DT_OK;
}

/* ---- src/cpu/losses.c ---- */
/* Losses: nll_loss's per-row values (the core checks the labels first and reduces). */

/* y (n,) = -logp[i, target[i]] of logp (n, c); a label outside [0, c) gives NaN (never read with) */
static dt_status dt__cpu_nll_loss(int dev, dt_dtype t, int64_t n, int64_t c, const void *logp, const int64_t *target, void *y) {
  int64_t i;
  (void)dev;
  for (i = 0; i < n; i++) {
    int ok = target[i] >= 0 && target[i] < c;
    if (t == DT_F32) ((float *)y)[i] = ok ? -((const float *)logp)[i * c + target[i]] : NAN;
    else if (t == DT_F64) ((double *)y)[i] = ok ? -((const double *)logp)[i * c + target[i]] : NAN;
    else return DT_ERR_DTYPE;
  }
  return DT_OK;
}

/* ---- src/cpu/norm.c ---- */
/* Batch normalisation on the thread pool, by blocks of channels: a channel's values are its
   n runs of l (one per image), each channel summed by one thread in one fixed order (the same
   bits for any number of threads). A channel is read two or three times in a row (mean,
   variance, result), so the later passes find it in cache.
   F64: in double, four partial sums per run. F32: on vectors of four floats, each chunk of 64
   values summed in float and the chunks' sums in double; the variance is taken about the mean
   rounded to float, mf, and corrected to the mean m in double (sum (x - m)^2 = sum (x - mf)^2 -
   N (m - mf)^2), y = (x - mf) a + c; the backward's sums and the input gradient are about the
   saved mean, which is mf. Each channel's coefficients are computed in double, rounded once. */

/* F64: the sum of the run of l values, less m each and squared (sq) or not */
static double dt__bn_run_f64(const double *v, int64_t l, double m, int sq) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t p = 0;
  if (sq) {
    for (; p + 4 <= l; p += 4) {
      const double a = v[p] - m, b = v[p + 1] - m, c = v[p + 2] - m, d = v[p + 3] - m;
      s0 += a * a; s1 += b * b; s2 += c * c; s3 += d * d;
    }
    for (; p < l; p++) { const double a = v[p] - m; s0 += a * a; }
  } else {
    for (; p + 4 <= l; p += 4) { s0 += v[p]; s1 += v[p + 1]; s2 += v[p + 2]; s3 += v[p + 3]; }
    for (; p < l; p++) s0 += v[p];
  }
  return (s0 + s1) + (s2 + s3);
}
/* F64: sum g and sum g (x - m) over a run */
static void dt__bn_dot_f64(const double *g, const double *x, int64_t l, double m, double *sg, double *sgx) {
  double a0 = 0, a1 = 0, b0 = 0, b1 = 0;
  int64_t p = 0;
  for (; p + 2 <= l; p += 2) {
    a0 += g[p]; a1 += g[p + 1];
    b0 += g[p] * (x[p] - m); b1 += g[p + 1] * (x[p + 1] - m);
  }
  if (p < l) { a0 += g[p]; b0 += g[p] * (x[p] - m); }
  *sg += a0 + a1; *sgx += b0 + b1;
}

/* channel ch's running statistics moved towards the batch's mean and (biased) variance, the
   variance unbiased: r = (1 - momentum) r + momentum s, in double, rounded to the dtype once */
static void dt__bn_running(const dt__bn *p, int dbl, int64_t ch, double mean, double var) {
  const int64_t N = p->n * p->l;
  const double m = p->momentum, uv = m * var * (double)N / (double)(N - 1); /* momentum times the unbiased variance */
  if (dbl) {
    if (p->rmean) ((double *)p->rmean)[ch] = (1.0 - m) * ((double *)p->rmean)[ch] + m * mean;
    if (p->rvar) ((double *)p->rvar)[ch] = (1.0 - m) * ((double *)p->rvar)[ch] + uv;
  } else {
    if (p->rmean) ((float *)p->rmean)[ch] = (float)((1.0 - m) * (double)((float *)p->rmean)[ch] + m * mean);
    if (p->rvar) ((float *)p->rvar)[ch] = (float)((1.0 - m) * (double)((float *)p->rvar)[ch] + uv);
  }
}

/* F32 on 4-float vectors: the sum of v[0..l) less m each (squared: sq), chunks of 64 in float */
static double dt__bn_vsum_f32(const float *v, int64_t l, float m, int sq) {
  const dt__vf_base vm = {m, m, m, m};
  double tot = 0;
  int64_t p = 0;
  while (p < l) {
    const int64_t e = p + 64 < l ? p + 64 : l;
    dt__vf_base a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};
    float r = 0;
    for (; p + 8 <= e; p += 8) {
      dt__vf_base u, w;
      memcpy(&u, v + p, sizeof u);
      memcpy(&w, v + p + 4, sizeof w);
      u -= vm; w -= vm;
      if (sq) { u *= u; w *= w; }
      a0 += u; a1 += w;
    }
    for (; p < e; p++) { const float d = v[p] - m; r += sq ? d * d : d; }
    a0 += a1;
    tot += (double)((a0[0] + a0[1]) + (a0[2] + a0[3])) + (double)r;
  }
  return tot;
}
/* sum g and sum g (x - m) over a run, likewise */
static void dt__bn_vdot_f32(const float *g, const float *x, int64_t l, float m, double *sg, double *sgx) {
  const dt__vf_base vm = {m, m, m, m};
  int64_t p = 0;
  while (p < l) {
    const int64_t e = p + 64 < l ? p + 64 : l;
    dt__vf_base a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
    float ra = 0, rb = 0;
    for (; p + 4 <= e; p += 4) {
      dt__vf_base u, w;
      memcpy(&u, g + p, sizeof u);
      memcpy(&w, x + p, sizeof w);
      a += u;
      b += u * (w - vm);
    }
    for (; p < e; p++) { ra += g[p]; rb += g[p] * (x[p] - m); }
    *sg += (double)((a[0] + a[1]) + (a[2] + a[3])) + (double)ra;
    *sgx += (double)((b[0] + b[1]) + (b[2] + b[3])) + (double)rb;
  }
}
/* y = (x - m) a + c over a run */
static void dt__bn_vapply_f32(const float *x, float *y, int64_t l, float m, float a, float c) {
  const dt__vf_base vm = {m, m, m, m}, va = {a, a, a, a}, vc = {c, c, c, c};
  int64_t p = 0;
  for (; p + 4 <= l; p += 4) {
    dt__vf_base u;
    memcpy(&u, x + p, sizeof u);
    u = (u - vm) * va + vc;
    memcpy(y + p, &u, sizeof u);
  }
  for (; p < l; p++) y[p] = (x[p] - m) * a + c;
}
/* gx = (g - c1 - (x - m) c2) a over a run */
static void dt__bn_vgrad_f32(const float *g, const float *x, float *gx, int64_t l, float m, float c1, float c2, float a) {
  const dt__vf_base vm = {m, m, m, m}, v1 = {c1, c1, c1, c1}, v2 = {c2, c2, c2, c2}, va = {a, a, a, a};
  int64_t p = 0;
  for (; p + 4 <= l; p += 4) {
    dt__vf_base u, w;
    memcpy(&u, g + p, sizeof u);
    memcpy(&w, x + p, sizeof w);
    u = (u - v1 - (w - vm) * v2) * va;
    memcpy(gx + p, &u, sizeof u);
  }
  for (; p < l; p++) gx[p] = (g[p] - c1 - (x[p] - m) * c2) * a;
}

static void dt__bn_fwd_f32(const dt__bn *p, int64_t lo, int64_t hi) {
  const int64_t N = p->n * p->l;
  const float *x = (const float *)p->x;
  float *y = (float *)p->y;
  int64_t ch, i;
  for (ch = lo; ch < hi; ch++) {
    double mean, var, k, a, b;
    float mf;
    if (p->train) {
      double s = 0;
      for (i = 0; i < p->n; i++) s += dt__bn_vsum_f32(x + (i * p->c + ch) * p->l, p->l, 0.0f, 0);
      mean = s / (double)N;
      mf = (float)mean;
      for (s = 0, i = 0; i < p->n; i++) s += dt__bn_vsum_f32(x + (i * p->c + ch) * p->l, p->l, mf, 1);
      var = s / (double)N - (mean - (double)mf) * (mean - (double)mf);
      if (var < 0) var = 0;
      ((float *)p->mean)[ch] = mf;
      ((float *)p->var)[ch] = (float)var;
      dt__bn_running(p, 0, ch, mean, var);
    } else {
      mean = (double)((const float *)p->rmean)[ch];
      var = (double)((const float *)p->rvar)[ch];
      mf = (float)mean;
    }
    k = 1.0 / sqrt(var + p->eps);
    a = p->w ? k * (double)((const float *)p->w)[ch] : k;
    b = (p->b ? (double)((const float *)p->b)[ch] : 0.0) - (mean - (double)mf) * a;
    for (i = 0; i < p->n; i++) {
      const int64_t o = (i * p->c + ch) * p->l;
      dt__bn_vapply_f32(x + o, y + o, p->l, mf, (float)a, (float)b);
    }
  }
}

static void dt__bn_bwd_f32(const dt__bn *p, int64_t lo, int64_t hi) {
  const int64_t N = p->n * p->l;
  const float *x = (const float *)p->x, *g = (const float *)p->gy;
  int64_t ch, i;
  for (ch = lo; ch < hi; ch++) {
    const double var = (double)((const float *)p->var)[ch];
    const double k = 1.0 / sqrt(var + p->eps), wv = p->w ? (double)((const float *)p->w)[ch] : 1.0;
    const float mf = ((const float *)p->mean)[ch]; /* the saved mean, a float: no correction */
    double sg = 0, sgx = 0;
    if (p->gw || p->gb || (p->gx && p->train))
      for (i = 0; i < p->n; i++) {
        const int64_t o = (i * p->c + ch) * p->l;
        dt__bn_vdot_f32(g + o, x + o, p->l, mf, &sg, &sgx);
      }
    if (p->gb) ((float *)p->gb)[ch] = (float)sg;
    if (p->gw) ((float *)p->gw)[ch] = (float)(sgx * k);
    if (p->gx) {
      const double a = wv * k, c1 = p->train ? sg / (double)N : 0.0, c2 = p->train ? k * k * sgx / (double)N : 0.0;
      for (i = 0; i < p->n; i++) {
        const int64_t o = (i * p->c + ch) * p->l;
        dt__bn_vgrad_f32(g + o, x + o, (float *)p->gx + o, p->l, mf, (float)c1, (float)c2, (float)a);
      }
    }
  }
}

/* F64: channels [lo, hi) of the forward */
static void dt__bn_fwd_f64(const dt__bn *p, int64_t lo, int64_t hi) {
  const int64_t N = p->n * p->l;
  const double *x = (const double *)p->x;
  double *y = (double *)p->y;
  int64_t ch, i, q;
  for (ch = lo; ch < hi; ch++) {
    double mean, var, k, a, b;
    if (p->train) {
      double s = 0;
      for (i = 0; i < p->n; i++) s += dt__bn_run_f64(x + (i * p->c + ch) * p->l, p->l, 0, 0);
      mean = s / (double)N;
      for (s = 0, i = 0; i < p->n; i++) s += dt__bn_run_f64(x + (i * p->c + ch) * p->l, p->l, mean, 1);
      var = s / (double)N;
      ((double *)p->mean)[ch] = mean;
      ((double *)p->var)[ch] = var;
      dt__bn_running(p, 1, ch, mean, var);
    } else {
      mean = ((const double *)p->rmean)[ch];
      var = ((const double *)p->rvar)[ch];
    }
    k = 1.0 / sqrt(var + p->eps);
    a = p->w ? k * ((const double *)p->w)[ch] : k;
    b = p->b ? ((const double *)p->b)[ch] : 0.0;
    for (i = 0; i < p->n; i++) {
      const int64_t o = (i * p->c + ch) * p->l;
      for (q = 0; q < p->l; q++) y[o + q] = (x[o + q] - mean) * a + b;
    }
  }
}

/* F64: channels [lo, hi) of the backward */
static void dt__bn_bwd_f64(const dt__bn *p, int64_t lo, int64_t hi) {
  const int64_t N = p->n * p->l;
  const double *x = (const double *)p->x, *g = (const double *)p->gy;
  int64_t ch, i, q;
  for (ch = lo; ch < hi; ch++) {
    const double mean = ((const double *)p->mean)[ch], var = ((const double *)p->var)[ch];
    const double k = 1.0 / sqrt(var + p->eps), wv = p->w ? ((const double *)p->w)[ch] : 1.0;
    double sg = 0, sgx = 0;
    if (p->gw || p->gb || (p->gx && p->train))
      for (i = 0; i < p->n; i++) {
        const int64_t o = (i * p->c + ch) * p->l;
        dt__bn_dot_f64(g + o, x + o, p->l, mean, &sg, &sgx);
      }
    if (p->gb) ((double *)p->gb)[ch] = sg;
    if (p->gw) ((double *)p->gw)[ch] = sgx * k;
    if (p->gx) {
      const double a = wv * k, c1 = p->train ? sg / (double)N : 0.0, c2 = p->train ? k * k * sgx / (double)N : 0.0;
      double *gx = (double *)p->gx;
      for (i = 0; i < p->n; i++) {
        const int64_t o = (i * p->c + ch) * p->l;
        for (q = 0; q < p->l; q++) gx[o + q] = (g[o + q] - c1 - (x[o + q] - mean) * c2) * a;
      }
    }
  }
}

typedef struct dt__bn_job {
  const dt__bn *p;
  int dbl, back;
} dt__bn_job;

static void dt__bn_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__bn_job *j = (const dt__bn_job *)ctx;
  if (j->back) {
    if (j->dbl) dt__bn_bwd_f64(j->p, lo, hi);
    else dt__bn_bwd_f32(j->p, lo, hi);
  } else if (j->dbl) dt__bn_fwd_f64(j->p, lo, hi);
  else dt__bn_fwd_f32(j->p, lo, hi);
}

static dt_status dt__cpu_bn_run(const char *what, dt_dtype t, const dt__bn *p, int back) {
  dt__bn_job j;
  const int64_t per = p->n * p->l * 3; /* a channel's elements read and written */
  if (t != DT_F32 && t != DT_F64) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "%s is not defined for %s", what, dt__dtype_str(t));
    return DT_ERR_DTYPE;
  }
  j.p = p; j.dbl = t == DT_F64; j.back = back;
  dt__par_for(p->c, dt__conv_grain(per), dt__bn_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_batch_norm(int dev, dt_dtype t, const dt__bn *p) {
  (void)dev;
  return dt__cpu_bn_run("batch_norm", t, p, 0);
}
static dt_status dt__cpu_batch_norm_backward(int dev, dt_dtype t, const dt__bn *p) {
  (void)dev;
  return dt__cpu_bn_run("batch_norm_backward", t, p, 1);
}

/* ---- src/cpu/graph.c ---- */
/* The CPU's graphs: while the CPU is captured (dt__cpu_capturing), dt__be hands out the
   recording table below. Its kernel slots append the call, with its arguments by value (the
   geometry structs copied) and its buffer pointers, to the capture's list instead of running
   it; memory, copies between tensors and queries go through. Replay runs the list in order
   with the CPU's own kernels, so the CPU gives what a GPU's replay gives: captured work runs
   only when replayed, never during the capture. The core keeps the memory the calls use
   (src/core/graph.c). The checks the core makes on host memory at call time (labels and
   indices in range) are made as the graph replays instead: at capture time those values may
   not be written yet. */

typedef enum dt__cpu_call_kind {
  DT__RC_COPY = 0, DT__RC_FILL, DT__RC_UNARY, DT__RC_BINARY, DT__RC_CAST, DT__RC_REDUCE, DT__RC_GEMM, DT__RC_GEMM_OPT,
  DT__RC_AXPY, DT__RC_RANDOM, DT__RC_OPTIM, DT__RC_COMPARE, DT__RC_COPY_STRIDED, DT__RC_INDEX_SELECT, DT__RC_ARG_REDUCE,
  DT__RC_SOFTMAX, DT__RC_XENT, DT__RC_IM2COL, DT__RC_COL2IM, DT__RC_POOL, DT__RC_POOL_BACKWARD,
  DT__RC_WHERE, DT__RC_GATHER, DT__RC_SCATTER_ADD, DT__RC_INDEX_ADD, DT__RC_RANDOM_INT, DT__RC_NLL, DT__RC_BN, DT__RC_BN_BACKWARD
} dt__cpu_call_kind;

/* One recorded call: which slot, its scalars (meaning per kind, see dt__cpu_call_run) and
   its buffers a, b (read), y, z (written). */
typedef struct dt__cpu_call {
  dt__cpu_call_kind kind;
  int op, ta, tb;
  dt_dtype t, t2;
  size_t es;
  int64_t i[6];
  double d[2];
  uint64_t u[2];
  const void *a, *b, *w;  /* w: a third input (where's cond, the index of gather and scatter_add) */
  void *y, *z;
  int64_t cs[DT_MAX_DIMS]; /* where's strides of cond */
  union {
    dt__bcast g;
    dt__optim_hp h;
    dt__conv2d cv;
    dt__pool2d pl;
    dt__bn bn;
  } geo;
} dt__cpu_call;

typedef struct dt__cpu_graph {
  dt__cpu_call *v;
  int n, cap;
} dt__cpu_graph;

static dt__cpu_graph *dt__cpu_cap;     /* the capture in progress */
static int dt__cpu_cap_failed;         /* a call could not be recorded: the capture fails */
static volatile int dt__cpu_cap_lk;

/* Appends c to the capture. */
static dt_status dt__cpu_rec(const dt__cpu_call *c) {
  dt_status s = DT_OK;
  dt__lock(&dt__cpu_cap_lk);
  if (!dt__cpu_cap) {
    s = DT_ERR_BACKEND;
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "the CPU's capture ended while this call was being recorded");
  } else {
    dt__cpu_graph *g = dt__cpu_cap;
    if (g->n == g->cap) {
      int cap = g->cap ? 2 * g->cap : 64;
      dt__cpu_call *v = (dt__cpu_call *)DT_MALLOC(sizeof(dt__cpu_call) * (size_t)cap);
      if (!v) {
        dt__cpu_cap_failed = 1;
        s = DT_ERR_OUT_OF_MEMORY;
        snprintf(dt__cpu_err, sizeof dt__cpu_err, "out of memory on the host recording a call into the CPU's graph");
      } else {
        if (g->n) memcpy(v, g->v, sizeof(dt__cpu_call) * (size_t)g->n);
        DT_FREE(g->v);
        g->v = v;
        g->cap = cap;
      }
    }
    if (s == DT_OK) g->v[g->n++] = *c;
  }
  dt__unlock(&dt__cpu_cap_lk);
  return s;
}

static dt__cpu_call dt__cpu_call_of(dt__cpu_call_kind kind) {
  dt__cpu_call c;
  memset(&c, 0, sizeof c);
  c.kind = kind;
  return c;
}

/* ---- the recording slots ---- */

static dt_status dt__cpu_rec_copy(int dst_dev, void *dst, int src_dev, const void *src, size_t nbytes) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_COPY);
  (void)dst_dev; (void)src_dev;
  c.es = nbytes; c.a = src; c.y = dst;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_fill(int dev, dt_dtype t, int64_t n, double v, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_FILL);
  (void)dev;
  c.t = t; c.i[0] = n; c.d[0] = v; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_unary(int dev, dt__unary_op op, dt_dtype t, int64_t n, const void *x, void *y, double p0, double p1) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_UNARY);
  (void)dev;
  c.op = (int)op; c.t = t; c.i[0] = n; c.a = x; c.y = y; c.d[0] = p0; c.d[1] = p1;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_binary(int dev, dt__binary_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_BINARY);
  (void)dev;
  c.op = (int)op; c.t = t; c.geo.g = *g; c.a = a; c.b = b; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_cast(int dev, dt_dtype from, dt_dtype to, int64_t n, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_CAST);
  (void)dev;
  c.t = from; c.t2 = to; c.i[0] = n; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_reduce(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_REDUCE);
  (void)dev;
  c.op = (int)op; c.t = t; c.i[0] = outer; c.i[1] = len; c.i[2] = inner; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_gemm(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                                  double alpha, const void *a, int64_t stride_a, const void *b, int64_t stride_b,
                                  double beta, void *cc, int64_t stride_c) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_GEMM);
  (void)dev;
  c.t = t; c.ta = ta; c.tb = tb; c.i[0] = batch; c.i[1] = m; c.i[2] = n; c.i[3] = k; c.i[4] = stride_a; c.i[5] = stride_b;
  c.u[0] = (uint64_t)stride_c; c.d[0] = alpha; c.d[1] = beta; c.a = a; c.b = b; c.y = cc;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_axpy(int dev, dt_dtype t, int64_t n, double alpha, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_AXPY);
  (void)dev;
  c.t = t; c.i[0] = n; c.d[0] = alpha; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_random(int dev, int normal, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, float *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_RANDOM);
  (void)dev;
  c.op = normal; c.u[0] = seed; c.u[1] = draw; c.w = gen; c.i[0] = n; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_optim_step(int dev, dt_dtype t, int64_t n, const dt__optim_hp *h, void *p, const void *g,
                                        void *buf1, void *buf2) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_OPTIM);
  (void)dev;
  c.t = t; c.i[0] = n; c.geo.h = *h; c.y = p; c.a = g; c.z = buf1; c.b = buf2;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_compare(int dev, dt__compare_op op, dt_dtype t, const dt__bcast *g, const void *a, const void *b, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_COMPARE);
  (void)dev;
  c.op = (int)op; c.t = t; c.geo.g = *g; c.a = a; c.b = b; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_copy_strided(int dev, size_t es, const dt__bcast *g, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_COPY_STRIDED);
  (void)dev;
  c.es = es; c.geo.g = *g; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_index_select(int dev, size_t es, int64_t outer, int64_t n, int64_t inner, const int64_t *idx,
                                          int64_t k, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_INDEX_SELECT);
  (void)dev;
  c.es = es; c.i[0] = outer; c.i[1] = n; c.i[2] = inner; c.i[3] = k; c.b = idx; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_arg_reduce(int dev, int min, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x,
                                        void *vals, int64_t *idx) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_ARG_REDUCE);
  (void)dev;
  c.op = min; c.t = t; c.i[0] = outer; c.i[1] = len; c.i[2] = inner; c.a = x; c.y = vals; c.z = idx;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_softmax(int dev, int lg, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_SOFTMAX);
  (void)dev;
  c.op = lg; c.t = t; c.i[0] = outer; c.i[1] = len; c.i[2] = inner; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_cross_entropy(int dev, int grad, dt_dtype t, int64_t n, int64_t cc, const void *logits,
                                           const int64_t *target, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_XENT);
  (void)dev;
  c.op = grad; c.t = t; c.i[0] = n; c.i[1] = cc; c.a = logits; c.b = target; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_IM2COL);
  (void)dev;
  c.t = t; c.geo.cv = *g; c.i[0] = nimg; c.a = x; c.y = col;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_COL2IM);
  (void)dev;
  c.t = t; c.geo.cv = *g; c.i[0] = nimg; c.a = col; c.y = x;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_POOL);
  (void)dev;
  c.t = t; c.geo.pl = *p; c.a = x; c.y = y; c.z = idx;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_POOL_BACKWARD);
  (void)dev;
  c.t = t; c.geo.pl = *p; c.a = gy; c.b = idx; c.y = gx;
  return dt__cpu_rec(&c);
}

static dt_status dt__cpu_gemm_opt_rec(dt_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                                      const void *a, const void *b, double beta, void *cc, struct dt__gemm_opts *o) {
  dt__cpu_call c;
  if (!DT__ATOMIC_LOAD(&dt__cpu_capturing)) return dt__cpu_gemm_opt(t, ta, tb, m, n, k, alpha, a, b, beta, cc, o);
  /* the bias and the column split are recorded; the bias gradient (asum) is not asked for,
     so the caller records its reduction (asum_done stays 0), which gives the same bits */
  c = dt__cpu_call_of(DT__RC_GEMM_OPT);
  c.t = t; c.ta = ta; c.tb = tb; c.i[1] = m; c.i[2] = n; c.i[3] = k; c.d[0] = alpha; c.d[1] = beta;
  c.a = a; c.b = b; c.y = cc; c.z = (void *)(uintptr_t)o->bias; c.op = o->by_cols;
  o->asum_done = 0;
  return dt__cpu_rec(&c);
}

static dt_status dt__cpu_rec_where(int dev, size_t es, const dt__bcast *g, const int64_t *cstride, const void *cond, const void *a,
                                   const void *b, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_WHERE);
  int d;
  (void)dev;
  for (d = 0; d < g->ndim; d++) c.cs[d] = cstride[d];
  c.es = es; c.geo.g = *g; c.w = cond; c.a = a; c.b = b; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_gather(int dev, size_t es, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                                    const void *x, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_GATHER);
  (void)dev;
  c.es = es; c.geo.g = *g; c.i[0] = n; c.i[1] = stride; c.w = idx; c.a = x; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_scatter_add(int dev, dt_dtype t, const dt__bcast *g, int64_t n, int64_t stride, const int64_t *idx,
                                         const void *src, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_SCATTER_ADD);
  (void)dev;
  c.t = t; c.geo.g = *g; c.i[0] = n; c.i[1] = stride; c.w = idx; c.a = src; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_index_add(int dev, dt_dtype t, int64_t outer, int64_t n, int64_t inner, const int64_t *idx, int64_t k,
                                       const void *src, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_INDEX_ADD);
  (void)dev;
  c.t = t; c.i[0] = outer; c.i[1] = n; c.i[2] = inner; c.i[3] = k; c.b = idx; c.a = src; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_random_int(int dev, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, int64_t low,
                                        uint64_t range, int64_t *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_RANDOM_INT);
  (void)dev;
  c.u[0] = seed; c.u[1] = draw; c.w = gen; c.i[0] = n; c.i[1] = low; c.i[2] = (int64_t)range; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_nll_loss(int dev, dt_dtype t, int64_t n, int64_t cl, const void *logp, const int64_t *target, void *y) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_NLL);
  (void)dev;
  c.t = t; c.i[0] = n; c.i[1] = cl; c.a = logp; c.b = target; c.y = y;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_batch_norm(int dev, dt_dtype t, const dt__bn *p) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_BN);
  (void)dev;
  c.t = t; c.geo.bn = *p;
  return dt__cpu_rec(&c);
}
static dt_status dt__cpu_rec_batch_norm_backward(int dev, dt_dtype t, const dt__bn *p) {
  dt__cpu_call c = dt__cpu_call_of(DT__RC_BN_BACKWARD);
  (void)dev;
  c.t = t; c.geo.bn = *p;
  return dt__cpu_rec(&c);
}

/* ---- replay ---- */

/* the index values a recorded call reads, checked as it replays (the core could not: at capture
   time they may not be written yet); 0 and a message for the first out of [0, n) */
static int dt__cpu_replay_index_ok(const char *op, const char *what, const int64_t *v, int64_t k, int64_t n) {
  int64_t j;
  for (j = 0; j < k; j++)
    if (v[j] < 0 || v[j] >= n) {
      snprintf(dt__cpu_err, sizeof dt__cpu_err, "%s: %s[%lld] = %lld is out of range (expected 0 to %lld)", op, what,
               (long long)j, (long long)v[j], (long long)(n - 1));
      return 0;
    }
  return 1;
}

static dt_status dt__cpu_call_run(const dt__cpu_call *c) {
  /* the kernels through the half precision table: a float16 or bfloat16 call recorded as it
     was made runs as it would have outside the capture */
  const dt__backend *be = dt__half_table(0);
  int64_t j;
  switch (c->kind) {
    case DT__RC_COPY: return dt__cpu_copy(-1, c->y, -1, c->a, c->es);
    case DT__RC_FILL: return dt__cpu_fill(0, c->t, c->i[0], c->d[0], c->y);
    case DT__RC_UNARY: return be->unary(0, (dt__unary_op)c->op, c->t, c->i[0], c->a, c->y, c->d[0], c->d[1]);
    case DT__RC_BINARY: return be->binary(0, (dt__binary_op)c->op, c->t, &c->geo.g, c->a, c->b, c->y);
    case DT__RC_CAST: return dt__cpu_cast(0, c->t, c->t2, c->i[0], c->a, c->y);
    case DT__RC_REDUCE: return be->reduce(0, (dt__reduce_op)c->op, c->t, c->i[0], c->i[1], c->i[2], c->a, c->y);
    case DT__RC_GEMM:
      return be->gemm(0, c->t, c->ta, c->tb, c->i[0], c->i[1], c->i[2], c->i[3], c->d[0], c->a, c->i[4], c->b, c->i[5],
                          c->d[1], c->y, (int64_t)c->u[0]);
    case DT__RC_GEMM_OPT: {
      dt__gemm_opts o;
      memset(&o, 0, sizeof o);
      o.bias = c->z;
      o.by_cols = c->op;
      return dt__cpu_gemm_opt(c->t, c->ta, c->tb, c->i[1], c->i[2], c->i[3], c->d[0], c->a, c->b, c->d[1], c->y, &o);
    }
    case DT__RC_AXPY: return be->axpy(0, c->t, c->i[0], c->d[0], c->a, c->y);
    case DT__RC_RANDOM: return dt__cpu_random(0, c->op, c->u[0], c->u[1], (const uint64_t *)c->w, c->i[0], (float *)c->y);
    case DT__RC_OPTIM: return dt__cpu_optim_step(0, c->t, c->i[0], &c->geo.h, c->y, c->a, c->z, (void *)(uintptr_t)c->b);
    case DT__RC_COMPARE: return be->compare(0, (dt__compare_op)c->op, c->t, &c->geo.g, c->a, c->b, c->y);
    case DT__RC_COPY_STRIDED: return dt__cpu_copy_strided(0, c->es, &c->geo.g, c->a, c->y);
    case DT__RC_INDEX_SELECT: {
      const int64_t *idx = (const int64_t *)c->b;
      for (j = 0; j < c->i[3]; j++)
        if (idx[j] < 0 || idx[j] >= c->i[1]) {
          snprintf(dt__cpu_err, sizeof dt__cpu_err, "dt_index_select: index[%lld] = %lld is out of range for a dimension of size %lld",
                   (long long)j, (long long)idx[j], (long long)c->i[1]);
          return DT_ERR_INVALID_ARGUMENT;
        }
      return dt__cpu_index_select(0, c->es, c->i[0], c->i[1], c->i[2], idx, c->i[3], c->a, c->y);
    }
    case DT__RC_ARG_REDUCE: return be->arg_reduce(0, c->op, c->t, c->i[0], c->i[1], c->i[2], c->a, c->y, (int64_t *)c->z);
    case DT__RC_SOFTMAX: return be->softmax(0, c->op, c->t, c->i[0], c->i[1], c->i[2], c->a, c->y);
    case DT__RC_XENT: {
      const int64_t *lab = (const int64_t *)c->b;
      for (j = 0; j < c->i[0]; j++)
        if (lab[j] < 0 || lab[j] >= c->i[1]) {
          snprintf(dt__cpu_err, sizeof dt__cpu_err, "dt_cross_entropy: target[%lld] = %lld is out of range for %lld classes",
                   (long long)j, (long long)lab[j], (long long)c->i[1]);
          return DT_ERR_INVALID_ARGUMENT;
        }
      return be->cross_entropy(0, c->op, c->t, c->i[0], c->i[1], c->a, lab, c->y);
    }
    case DT__RC_IM2COL: return be->im2col(0, c->t, &c->geo.cv, c->i[0], c->a, c->y);
    case DT__RC_COL2IM: return be->col2im(0, c->t, &c->geo.cv, c->i[0], c->a, c->y);
    case DT__RC_POOL: return be->pool2d(0, c->t, &c->geo.pl, c->a, c->y, (int64_t *)c->z);
    case DT__RC_POOL_BACKWARD: return be->pool2d_backward(0, c->t, &c->geo.pl, c->a, (const int64_t *)c->b, c->y);
    case DT__RC_WHERE: return dt__cpu_where(0, c->es, &c->geo.g, c->cs, (const void *)c->w, c->a, c->b, c->y);
    case DT__RC_GATHER:
      if (!dt__cpu_replay_index_ok("dt_gather", "index", (const int64_t *)c->w, c->geo.g.numel, c->i[0])) return DT_ERR_INVALID_ARGUMENT;
      return dt__cpu_gather(0, c->es, &c->geo.g, c->i[0], c->i[1], (const int64_t *)c->w, c->a, c->y);
    case DT__RC_SCATTER_ADD:
      if (!dt__cpu_replay_index_ok("dt_scatter_add", "index", (const int64_t *)c->w, c->geo.g.numel, c->i[0])) return DT_ERR_INVALID_ARGUMENT;
      return dt__cpu_scatter_add(0, c->t, &c->geo.g, c->i[0], c->i[1], (const int64_t *)c->w, c->a, c->y);
    case DT__RC_INDEX_ADD:
      if (!dt__cpu_replay_index_ok("dt_index_select", "index", (const int64_t *)c->b, c->i[3], c->i[1])) return DT_ERR_INVALID_ARGUMENT;
      return dt__cpu_index_add(0, c->t, c->i[0], c->i[1], c->i[2], (const int64_t *)c->b, c->i[3], c->a, c->y);
    case DT__RC_RANDOM_INT:
      return dt__cpu_random_int(0, c->u[0], c->u[1], (const uint64_t *)c->w, c->i[0], c->i[1], (uint64_t)c->i[2], (int64_t *)c->y);
    case DT__RC_NLL:
      if (!dt__cpu_replay_index_ok("dt_nll_loss", "target", (const int64_t *)c->b, c->i[0], c->i[1])) return DT_ERR_INVALID_ARGUMENT;
      return be->nll_loss(0, c->t, c->i[0], c->i[1], c->a, (const int64_t *)c->b, c->y);
    case DT__RC_BN: return dt__cpu_batch_norm(0, c->t, &c->geo.bn);
    case DT__RC_BN_BACKWARD: return dt__cpu_batch_norm_backward(0, c->t, &c->geo.bn);
  }
  return DT_OK;
}

/* ---- the graph slots ---- */

static dt_status dt__cpu_graph_begin(int dev) {
  dt__cpu_graph *g = (dt__cpu_graph *)DT_MALLOC(sizeof(dt__cpu_graph));
  (void)dev;
  if (!g) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "out of memory on the host starting a capture");
    return DT_ERR_OUT_OF_MEMORY;
  }
  memset(g, 0, sizeof *g);
  dt__lock(&dt__cpu_cap_lk);
  dt__cpu_cap = g;
  dt__cpu_cap_failed = 0;
  dt__unlock(&dt__cpu_cap_lk);
  DT__ATOMIC_STORE(&dt__cpu_capturing, 1);
  return DT_OK;
}

static void dt__cpu_graph_free(int dev, void *graph) {
  dt__cpu_graph *g = (dt__cpu_graph *)graph;
  (void)dev;
  if (!g) return;
  DT_FREE(g->v);
  DT_FREE(g);
}

static dt_status dt__cpu_graph_end(int dev, void **graph) {
  dt__cpu_graph *g;
  int failed;
  DT__ATOMIC_STORE(&dt__cpu_capturing, 0);
  dt__lock(&dt__cpu_cap_lk);
  g = dt__cpu_cap;
  failed = dt__cpu_cap_failed;
  dt__cpu_cap = NULL;
  dt__unlock(&dt__cpu_cap_lk);
  *graph = NULL;
  if (failed) {
    dt__cpu_graph_free(dev, g);
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "out of memory on the host recording the CPU's graph (a call could not be kept)");
    return DT_ERR_OUT_OF_MEMORY;
  }
  *graph = g;
  return DT_OK;
}

static dt_status dt__cpu_graph_replay(int dev, void *graph, uint64_t *gen, uint64_t seed, uint64_t draw) {
  const dt__cpu_graph *g = (const dt__cpu_graph *)graph;
  int i;
  dt_status s;
  (void)dev;
  if (gen) { gen[0] = seed; gen[1] = draw; }
  for (i = 0; i < g->n; i++)
    if ((s = dt__cpu_call_run(&g->v[i])) != DT_OK) return s;
  return DT_OK;
}

/* The table dt__be hands out while the CPU is captured. */
static const dt__backend *dt__cpu_rec_backend(void) {
  static const dt__backend be = {
    DT__SLOT(name) "cpu",
    DT__SLOT(device_count) dt__cpu_device_count,
    DT__SLOT(device_info) dt__cpu_device_info,
    DT__SLOT(last_error) dt__cpu_last_error,
    DT__SLOT(alloc) dt__cpu_alloc,
    DT__SLOT(free) dt__cpu_free,
    DT__SLOT(memory_stats) dt__cpu_memory_stats,
    DT__SLOT(empty_cache) dt__cpu_empty_cache,
    DT__SLOT(copy) dt__cpu_rec_copy,
    DT__SLOT(synchronize) dt__cpu_synchronize,
    DT__SLOT(stream) dt__cpu_stream,
    DT__SLOT(fill) dt__cpu_rec_fill,
    DT__SLOT(unary) dt__cpu_rec_unary,
    DT__SLOT(binary) dt__cpu_rec_binary,
    DT__SLOT(cast) dt__cpu_rec_cast,
    DT__SLOT(reduce) dt__cpu_rec_reduce,
    DT__SLOT(gemm) dt__cpu_rec_gemm,
    DT__SLOT(axpy) dt__cpu_rec_axpy,
    DT__SLOT(random) dt__cpu_rec_random,
    DT__SLOT(optim_step) dt__cpu_rec_optim_step,
    DT__SLOT(compare) dt__cpu_rec_compare,
    DT__SLOT(copy_strided) dt__cpu_rec_copy_strided,
    DT__SLOT(index_select) dt__cpu_rec_index_select,
    DT__SLOT(arg_reduce) dt__cpu_rec_arg_reduce,
    DT__SLOT(softmax) dt__cpu_rec_softmax,
    DT__SLOT(cross_entropy) dt__cpu_rec_cross_entropy,
    DT__SLOT(dist_unique_id) NULL,
    DT__SLOT(dist_comm_init) NULL,
    DT__SLOT(dist_comm_init_all) NULL,
    DT__SLOT(dist_comm_free) NULL,
    DT__SLOT(dist_all_reduce) NULL,
    DT__SLOT(dist_broadcast) NULL,
    DT__SLOT(im2col) dt__cpu_rec_im2col,
    DT__SLOT(col2im) dt__cpu_rec_col2im,
    DT__SLOT(pool2d) dt__cpu_rec_pool2d,
    DT__SLOT(pool2d_backward) dt__cpu_rec_pool2d_backward,
    DT__SLOT(where) dt__cpu_rec_where,
    DT__SLOT(gather) dt__cpu_rec_gather,
    DT__SLOT(scatter_add) dt__cpu_rec_scatter_add,
    DT__SLOT(index_add) dt__cpu_rec_index_add,
    DT__SLOT(random_int) dt__cpu_rec_random_int,
    DT__SLOT(nll_loss) dt__cpu_rec_nll_loss,
    DT__SLOT(half_gemm) 1, /* as the CPU's table: its gemm takes the half dtypes (replayed through the half table) */
    DT__SLOT(set_matmul_precision) NULL,
    DT__SLOT(graph_begin) dt__cpu_graph_begin,
    DT__SLOT(graph_end) dt__cpu_graph_end,
    DT__SLOT(graph_replay) dt__cpu_graph_replay,
    DT__SLOT(graph_free) dt__cpu_graph_free,
    /* convolution through a vendor library: none (im2col + gemm) */
    DT__SLOT(conv2d_forward) NULL,
    DT__SLOT(conv2d_backward_data) NULL,
    DT__SLOT(conv2d_backward_filter) NULL,
    DT__SLOT(batch_norm) dt__cpu_rec_batch_norm,
    DT__SLOT(batch_norm_backward) dt__cpu_rec_batch_norm_backward
  };
  return &be;
}

/* ---- src/cpu/table.c ---- */
static const dt__backend *dt__cpu_backend(void) {
  static const dt__backend be = {
    DT__SLOT(name) "cpu",
    DT__SLOT(device_count) dt__cpu_device_count,
    DT__SLOT(device_info) dt__cpu_device_info,
    DT__SLOT(last_error) dt__cpu_last_error,
    DT__SLOT(alloc) dt__cpu_alloc,
    DT__SLOT(free) dt__cpu_free,
    DT__SLOT(memory_stats) dt__cpu_memory_stats,
    DT__SLOT(empty_cache) dt__cpu_empty_cache,
    DT__SLOT(copy) dt__cpu_copy,
    DT__SLOT(synchronize) dt__cpu_synchronize,
    DT__SLOT(stream) dt__cpu_stream,
    DT__SLOT(fill) dt__cpu_fill,
    DT__SLOT(unary) dt__cpu_unary,
    DT__SLOT(binary) dt__cpu_binary,
    DT__SLOT(cast) dt__cpu_cast,
    DT__SLOT(reduce) dt__cpu_reduce,
    DT__SLOT(gemm) dt__cpu_gemm,
    DT__SLOT(axpy) dt__cpu_axpy,
    DT__SLOT(random) dt__cpu_random,
    /* optimizers */
    DT__SLOT(optim_step) dt__cpu_optim_step,
    /* comparisons */
    DT__SLOT(compare) dt__cpu_compare,
    /* indexing */
    DT__SLOT(copy_strided) dt__cpu_copy_strided,
    DT__SLOT(index_select) dt__cpu_index_select,
    /* classification */
    DT__SLOT(arg_reduce) dt__cpu_arg_reduce,
    DT__SLOT(softmax) dt__cpu_softmax,
    DT__SLOT(cross_entropy) dt__cpu_cross_entropy,
    /* distributed: CPU tensors go through MPI in the core ("distributed") */
    DT__SLOT(dist_unique_id) NULL,
    DT__SLOT(dist_comm_init) NULL,
    DT__SLOT(dist_comm_init_all) NULL,
    DT__SLOT(dist_comm_free) NULL,
    DT__SLOT(dist_all_reduce) NULL,
    DT__SLOT(dist_broadcast) NULL,
    /* convolution and pooling */
    DT__SLOT(im2col) dt__cpu_im2col,
    DT__SLOT(col2im) dt__cpu_col2im,
    DT__SLOT(pool2d) dt__cpu_pool2d,
    DT__SLOT(pool2d_backward) dt__cpu_pool2d_backward,
    /* where, gather, scatter-add, index-add, random integers */
    DT__SLOT(where) dt__cpu_where,
    DT__SLOT(gather) dt__cpu_gather,
    DT__SLOT(scatter_add) dt__cpu_scatter_add,
    DT__SLOT(index_add) dt__cpu_index_add,
    DT__SLOT(random_int) dt__cpu_random_int,
    /* losses */
    DT__SLOT(nll_loss) dt__cpu_nll_loss,
    /* half precision: gemm takes F16 and BF16 (src/cpu/gemm/bf16.c); F32 one way */
    DT__SLOT(half_gemm) 1,
    DT__SLOT(set_matmul_precision) NULL,
    /* graphs */
    DT__SLOT(graph_begin) dt__cpu_graph_begin,
    DT__SLOT(graph_end) dt__cpu_graph_end,
    DT__SLOT(graph_replay) dt__cpu_graph_replay,
    DT__SLOT(graph_free) dt__cpu_graph_free,
    /* convolution through a vendor library: none (im2col + gemm) */
    DT__SLOT(conv2d_forward) NULL,
    DT__SLOT(conv2d_backward_data) NULL,
    DT__SLOT(conv2d_backward_filter) NULL,
    /* batch normalisation */
    DT__SLOT(batch_norm) dt__cpu_batch_norm,
    DT__SLOT(batch_norm_backward) dt__cpu_batch_norm_backward
  };
  return &be;
}

/* ---- src/core/end.c ---- */

#if defined(__CUDACC__)
#pragma nv_diagnostic pop
#endif

#endif /* DEVTENSOR_IMPLEMENTATION_DONE */
#endif /* DEVTENSOR_IMPLEMENTATION */
