/* devtensor.h — tensors that live on a device (the CPU or a CUDA GPU), in one C header.

   USING IT
   In exactly one C or C++ file of your program:

       #define DEVTENSOR_IMPLEMENTATION
       #include "devtensor.h"

   Everywhere else just #include "devtensor.h".

   To get GPUs, also #define DEVTENSOR_CUDA before the include in that one file,
   compile devtensor_cuda.cu with nvcc and link -lcudart -lcublas:

       nvcc -O2 -DDEVTENSOR_CUDA examples/gpus.c devtensor_cuda.cu -lcublas -o gpus

   Without DEVTENSOR_CUDA the same program builds and runs on the CPU and
   dt_num_gpus() is 0.

   OPTIONS (define before the implementation include)
     DEVTENSOR_STATIC        every function is static (DTDEF is `static`)
     DEVTENSOR_CUDA          use the CUDA backend from devtensor_cuda.cu
     DEVTENSOR_CBLAS         CPU matmul through cblas_sgemm/cblas_dgemm (link e.g. -lopenblas)
     DT_MALLOC(sz)/DT_FREE(p) host allocator (define both or neither)
     DT_ASSERT(c)            internal invariant checks (default: assert)
     -fopenmp                the CPU matmul and large elementwise ops use every core

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

   LICENSE: MIT (see README.md). */

#ifndef DEVTENSOR_H
#define DEVTENSOR_H

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

/* ---- errors ---- */

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

/* ---- devices ---- */

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

/* ---- tensors ---- */

typedef enum dt_dtype { DT_F32 = 0, DT_F64, DT_I32, DT_I64 } dt_dtype;
#define DT_MAX_DIMS 8
typedef struct dt_shape { int ndim; int64_t dims[DT_MAX_DIMS]; } dt_shape;

DTDEF dt_shape dt_shape0(void);
DTDEF dt_shape dt_shape1(int64_t a);
DTDEF dt_shape dt_shape2(int64_t a, int64_t b);
DTDEF dt_shape dt_shape3(int64_t a, int64_t b, int64_t c);
DTDEF dt_shape dt_shape4(int64_t a, int64_t b, int64_t c, int64_t d);
DTDEF dt_shape dt_shape_n(int ndim, const int64_t *dims); /* ndim outside 0..8 or dims NULL: ndim = -1, refused on use */
DTDEF size_t   dt_dtype_size(dt_dtype t);                 /* 4 or 8; 0 for an unknown dtype */
DTDEF const char *dt_dtype_name(dt_dtype t);              /* "float32", "float64", "int32", "int64" */

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

/* ---- copies ---- */

DTDEF dt_tensor *dt_to(dt_tensor *t, dt_device d);            /* already on d: t itself, one more reference; else a copy */
DTDEF dt_tensor *dt_copyto(const dt_tensor *t, dt_device d);  /* always new memory, also on the same device */
DTDEF dt_status  dt_copy_(dt_tensor *dst, const dt_tensor *src); /* same shape and dtype, any two devices */
DTDEF dt_status  dt_to_host(const dt_tensor *t, void *dst, size_t nbytes); /* waits */
DTDEF double     dt_item(const dt_tensor *t);                 /* one element -> value; waits; NAN on error */

/* ---- operations ---- */

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

/* ---- printing ---- */

DTDEF dt_status dt_print(const dt_tensor *t);                        /* stdout, then newline */
DTDEF dt_status dt_fprint(FILE *f, const dt_tensor *t);              /* f, then newline */
DTDEF int       dt_snprint(char *buf, size_t n, const dt_tensor *t); /* snprintf's contract; -1 on error */

/* ---- memory ---- */

typedef struct dt_memory_stats { size_t allocated, reserved, peak_allocated; } dt_memory_stats;
DTDEF dt_status dt_memory_stats_get(dt_device d, dt_memory_stats *out); /* torch.cuda.memory_allocated / _reserved */
DTDEF dt_status dt_empty_cache(dt_device d);

/* ---- neural networks ---- */

typedef struct dt_module dt_module;
DTDEF dt_module *dt_linear(int64_t in_features, int64_t out_features); /* y = x W^T + b; in_features 0: lazy */
DTDEF dt_module *dt_relu_layer(void);
DTDEF dt_module *dt_sequential(void);
DTDEF dt_status  dt_sequential_add(dt_module *seq, dt_module *layer);   /* takes ownership, also on failure */
DTDEF dt_module *dt_sequential_get(dt_module *seq, int i);              /* net[i], borrowed */
DTDEF int        dt_sequential_len(const dt_module *seq);
DTDEF dt_status  dt_module_to(dt_module *m, dt_device d);               /* params and grads; all or nothing */
DTDEF dt_status  dt_module_to_dtype(dt_module *m, dt_dtype t);          /* F32 or F64: net.double() */
DTDEF dt_device  dt_module_device(const dt_module *m);
DTDEF dt_tensor *dt_forward(dt_module *m, const dt_tensor *x);          /* x: (n, in) on the module's device */
DTDEF dt_tensor *dt_linear_weight(dt_module *m);                        /* borrowed: net[0].weight, (out, in) */
DTDEF dt_tensor *dt_linear_bias(dt_module *m);                          /* borrowed: (out,) */
DTDEF int        dt_module_num_params(const dt_module *m);
DTDEF dt_tensor *dt_module_param(dt_module *m, int i, const char **name); /* borrowed; names as state_dict: "0.weight" */
DTDEF dt_tensor *dt_module_grad(dt_module *m, int i);                   /* borrowed */
DTDEF void       dt_module_free(dt_module *m);

DTDEF dt_tensor *dt_mse_loss(const dt_tensor *pred, const dt_tensor *target);      /* mean((pred - target)^2), 0-d */
DTDEF dt_tensor *dt_mse_loss_grad(const dt_tensor *pred, const dt_tensor *target); /* 2 (pred - target) / numel */
DTDEF dt_status  dt_zero_grad(dt_module *m);
DTDEF dt_tensor *dt_backward(dt_module *m, const dt_tensor *grad_output); /* after dt_forward; accumulates grads; returns grad wrt input */
DTDEF dt_status  dt_sgd_step(dt_module *m, double lr);

DTDEF dt_status  dt_module_save(const dt_module *m, const char *path);   /* safetensors */
DTDEF dt_status  dt_module_load(dt_module *m, const char *path);         /* into params on the module's device */

/* The chapter's Trainer(max_epochs, num_gpus): keeps min(num_gpus, dt_num_gpus()) GPUs,
   moves the model and each minibatch to the first, sums the loss on the device and
   reads it once per epoch. */
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
} dt_trainer;
DTDEF dt_status  dt_trainer_init(dt_trainer *tr, int max_epochs, int num_gpus);
DTDEF dt_status  dt_trainer_prepare_model(dt_trainer *tr, dt_module *m);
DTDEF dt_tensor *dt_trainer_prepare_batch(dt_trainer *tr, const dt_tensor *batch); /* on tr->device */
DTDEF dt_status  dt_trainer_fit(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y); /* MSE + SGD */
DTDEF void       dt_trainer_free(dt_trainer *tr);

/* ---- backend interface ----
   What a device backend implements. The core checks every argument (NULL,
   dtype, shape, device) before it calls a backend, so a backend may assume
   valid input: pointers are its own, sizes fit, dtypes are supported.
   `dev` is the device index. A function that can fail returns a dt_status
   and leaves a message for `last_error`. devtensor_cuda.cu exports
   dt__cuda_backend(); nothing else couples the core to CUDA. */

typedef enum dt__unary_op {
  DT__U_AFFINE = 0,   /* y = p0 * x + p1 */
  DT__U_EXP, DT__U_LOG, DT__U_SQRT, DT__U_NEG, DT__U_RELU
} dt__unary_op;

typedef enum dt__binary_op {
  DT__B_ADD = 0, DT__B_SUB, DT__B_MUL, DT__B_DIV,
  DT__B_RELU_GRAD,    /* y = a * (b > 0): the gradient of relu at b */
  DT__B_COPY_A        /* y = a (b unused): a strided copy, e.g. a transpose */
} dt__binary_op;

typedef enum dt__reduce_op { DT__R_SUM = 0, DT__R_MEAN, DT__R_NORM } dt__reduce_op;

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
  /* Philox 4x32-10 with key = seed and counter = (i / 4, draw): uniform [0, 1) or standard normal, F32. */
  dt_status (*random)(int dev, int normal, uint64_t seed, uint64_t draw, int64_t n, float *y);
} dt__backend;


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
/* Block j of draw d: four 32-bit words. */
static DT__HD inline void dt__philox_block(uint64_t seed, uint64_t draw, uint64_t j, uint32_t out[4]) {
  out[0] = (uint32_t)j; out[1] = (uint32_t)(j >> 32); out[2] = (uint32_t)draw; out[3] = (uint32_t)(draw >> 32);
  dt__philox(out, seed);
}
/* uniform [0, 1) from the top 24 bits: exactly representable in float */
static DT__HD inline float dt__u32_to_uniform(uint32_t w) { return (float)(w >> 8) * (1.0f / 16777216.0f); }
/* Box-Muller in double on every device, then rounded: words (w0, w1) give two normals. */
static DT__HD inline void dt__box_muller(uint32_t w0, uint32_t w1, float *z0, float *z1) {
  double u1 = ((double)w0 + 1.0) * (1.0 / 4294967296.0); /* (0, 1] */
  double u2 = (double)w1 * (1.0 / 4294967296.0);         /* [0, 1) */
  double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
  *z0 = (float)(r * cos(th)); *z1 = (float)(r * sin(th));
}

#ifdef DEVTENSOR_CUDA
const dt__backend *dt__cuda_backend(void); /* defined in devtensor_cuda.cu */
#endif

#ifdef __cplusplus
}
#endif

#endif /* DEVTENSOR_H */

/* ======================================================================== */
/*                              IMPLEMENTATION                              */
/* ======================================================================== */
#ifdef DEVTENSOR_IMPLEMENTATION
#ifndef DEVTENSOR_IMPLEMENTATION_DONE
#define DEVTENSOR_IMPLEMENTATION_DONE

#if defined(__CUDACC__) /* nvcc compiling the implementation in a user's .cu */
#pragma nv_diagnostic push
#pragma nv_diag_suppress 550 /* "set but never used": loop flags read only by OpenMP */
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
#else
#error "devtensor: define both DT_MALLOC and DT_FREE, or neither"
#endif
#ifndef DT_ASSERT
#include <assert.h>
#define DT_ASSERT(c) assert(c)
#endif

#if defined(__cplusplus) && __cplusplus >= 201103L
#define DT__TLS thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DT__TLS _Thread_local
#elif defined(_MSC_VER)
#define DT__TLS __declspec(thread)
#else
#define DT__TLS __thread
#endif

#if defined(__GNUC__) || defined(__clang__)
#define DT__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define DT__ATOMIC_ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_ACQ_REL)
#define DT__ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define DT__ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define DT__ATOMIC_CAS(p, expected, desired) \
  __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#else
#error "devtensor: needs GCC or Clang atomics (__atomic builtins)"
#endif

#ifdef _OPENMP
#define DT__OMP_FOR _Pragma("omp parallel for if(dt__par) schedule(static)")
#else
#define DT__OMP_FOR
#endif
/* Elementwise loops go parallel from this many elements (with -fopenmp). */
#define DT__PAR_MIN 65536

/* ---- errors ---- */

static DT__TLS dt_status dt__err_status;
static DT__TLS char dt__err_msg[1024];
static dt_error_handler dt__err_handler;
static void *dt__err_user;

static DT__PRINTF(2, 3) dt_status dt__fail(dt_status s, const char *fmt, ...) {
  va_list ap;
  dt_error_handler h;
  va_start(ap, fmt);
  vsnprintf(dt__err_msg, sizeof dt__err_msg, fmt, ap);
  va_end(ap);
  dt__err_status = s;
  h = (dt_error_handler)DT__ATOMIC_LOAD(&dt__err_handler);
  if (h) h(s, dt__err_msg, DT__ATOMIC_LOAD(&dt__err_user));
  return s;
}

DTDEF dt_status dt_last_status(void) { return dt__err_status; }
DTDEF const char *dt_last_error(void) { return dt__err_msg; }
DTDEF void dt_clear_error(void) { dt__err_status = DT_OK; dt__err_msg[0] = 0; }
DTDEF void dt_set_error_handler(dt_error_handler fn, void *user) {
  DT__ATOMIC_STORE(&dt__err_user, user);
  DT__ATOMIC_STORE(&dt__err_handler, fn);
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

/* "4.00 GiB" */
static const char *dt__bytes_str(double b, char *buf, size_t n) {
  static const char *unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  if (b < 1024.0) { snprintf(buf, n, "%.0f bytes", b); return buf; }
  while (b >= 1024.0 && u < 6) { b /= 1024.0; u++; }
  snprintf(buf, n, "%.2f %s", b, unit[u]);
  return buf;
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

/* ---- shapes and dtypes ---- */

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

DTDEF size_t dt_dtype_size(dt_dtype t) {
  switch (t) { case DT_F32: case DT_I32: return 4; case DT_F64: case DT_I64: return 8; }
  return 0;
}
DTDEF const char *dt_dtype_name(dt_dtype t) {
  switch (t) { case DT_F32: return "float32"; case DT_F64: return "float64"; case DT_I32: return "int32"; case DT_I64: return "int64"; }
  return "unknown dtype";
}
static int dt__is_float(dt_dtype t) { return t == DT_F32 || t == DT_F64; }

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

/* ---- devices ---- */

static const dt__backend *dt__cpu_backend(void);

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
    while (DT__ATOMIC_LOAD(&dt__gpu_state) != 2) { /* another thread is asking the driver */ }
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
  long v = 0;
  if (!s) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: s is NULL");
  if (!out) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: out is NULL");
  if (strncmp(s, "cpu", 3) == 0) { d = dt_cpu(); p = s + 3; }
  else if (strncmp(s, "cuda", 4) == 0) { d = dt_gpu(0); p = s + 4; }
  else if (strncmp(s, "gpu", 3) == 0) { d = dt_gpu(0); p = s + 3; }
  else return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"%.64s\"", s);
  if (*p == ':') {
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
      v = v * 10 + (*p - '0');
      if (v > INT_MAX) break;
    }
    if (digits == 0 || *p != 0 || v > INT_MAX)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: bad device index in \"%.64s\"", s);
    if (d.type == DT_CPU && v != 0)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: the CPU is \"cpu\" or \"cpu:0\", got \"%.64s\"", s);
    d.index = (int)v;
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

/* The backend of a device that dt__check_device accepted. */
static const dt__backend *dt__be(dt_device d) {
#ifdef DEVTENSOR_CUDA
  if (d.type == DT_CUDA) return dt__cuda_backend();
#endif
  DT_ASSERT(d.type == DT_CPU);
  return dt__cpu_backend();
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

DTDEF dt_status dt_synchronize(dt_device d) {
  dt_status s;
  if ((s = dt__check_device("dt_synchronize", d)) != DT_OK) return s;
  if ((s = dt__be(d)->synchronize(d.index)) != DT_OK) return dt__backend_fail("dt_synchronize", d, s);
  return DT_OK;
}

DTDEF void *dt_cuda_stream(dt_device d) {
  if (dt__check_device("dt_cuda_stream", d) != DT_OK) return NULL;
  return dt__be(d)->stream(d.index);
}

/* ---- tensors ---- */

typedef struct dt__storage {
  int refs;
  dt_device device;
  void *ptr;
  size_t nbytes;
} dt__storage;

struct dt_tensor {
  int refs;
  dt_dtype dtype;
  dt_shape shape;
  int64_t numel;
  size_t nbytes;
  dt__storage *st;
};

static void dt__storage_release(dt__storage *st) {
  if (st && DT__ATOMIC_ADD(&st->refs, -1) == 0) {
    dt__be(st->device)->free(st->device.index, st->ptr, st->nbytes);
    DT_FREE(st);
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

static dt_status dt__float_only(const char *op, const char *name, const dt_tensor *a) {
  if (dt__is_float(a->dtype)) return DT_OK;
  return dt__fail(DT_ERR_DTYPE, "%s: %s is %s, but this operation needs float32 or float64 (convert with dt_cast)",
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
  if (dd.type == DT_CPU && sd.type == DT_CPU) { memmove(dst, src, n); return DT_OK; }
  if (dd.type == DT_CPU) s = dt__be(sd)->copy(-1, dst, sd.index, src, n);
  else if (sd.type == DT_CPU) s = dt__be(dd)->copy(dd.index, dst, -1, src, n);
  else s = dt__be(dd)->copy(dd.index, dst, sd.index, src, n);
  return dt__run(op, dd.type == DT_CPU ? sd : dd, s);
}

DTDEF dt_tensor *dt_from_data(const void *host, dt_shape s, dt_dtype t, dt_device d) {
  dt_tensor *y = dt__new("dt_from_data", s, t, d);
  if (!y) return NULL;
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

DTDEF dt_tensor *dt_arange(double start, double end, double step, dt_dtype t, dt_device d) {
  const char *op = "dt_arange";
  double count;
  int64_t n, i;
  void *host;
  dt_tensor *y;
  if (dt__check_device(op, d) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
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
    }
  }
  if (host != y->st->ptr) {
    dt_status s = dt__copy_bytes(op, d, y->st->ptr, dt_cpu(), host, y->nbytes);
    DT_FREE(host);
    if (s != DT_OK) { dt_release(y); return NULL; }
  }
  return y;
}

/* ---- random numbers ---- */

static uint64_t dt__seed = 67280421310721ull; /* PyTorch's default seed */
static uint64_t dt__draw;                     /* draws since dt_manual_seed */

DTDEF void dt_manual_seed(uint64_t seed) {
  DT__ATOMIC_STORE(&dt__seed, seed);
  DT__ATOMIC_STORE(&dt__draw, (uint64_t)0);
}

static dt_tensor *dt__random(const char *op, dt_shape s, dt_device d, int normal) {
  dt_tensor *y = dt__new(op, s, DT_F32, d);
  uint64_t draw, seed;
  if (!y) return NULL;
  seed = DT__ATOMIC_LOAD(&dt__seed);
  draw = DT__ATOMIC_ADD(&dt__draw, (uint64_t)1) - 1;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(d)->random(d.index, normal, seed, draw, y->numel, (float *)y->st->ptr));
}
DTDEF dt_tensor *dt_rand(dt_shape s, dt_device d) { return dt__random("dt_rand", s, d, 0); }
DTDEF dt_tensor *dt_randn(dt_shape s, dt_device d) { return dt__random("dt_randn", s, d, 1); }

/* ---- tensor properties ---- */

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
    DT_FREE(t);
  }
}

/* ---- copies ---- */

DTDEF dt_tensor *dt_copyto(const dt_tensor *t, dt_device d) {
  dt_tensor *y;
  if (dt__check_tensor("dt_copyto", "t", t) != DT_OK) return NULL;
  if (!(y = dt__new("dt_copyto", t->shape, t->dtype, d))) return NULL;
  if (dt__copy_bytes("dt_copyto", d, y->st->ptr, t->st->device, t->st->ptr, t->nbytes) != DT_OK) { dt_release(y); return NULL; }
  return y;
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
  if ((s = dt__same_dtype(op, "dst", dst, "src", src)) != DT_OK) return s;
  if (dst->numel != src->numel || dst->shape.ndim != src->shape.ndim ||
      memcmp(dst->shape.dims, src->shape.dims, sizeof(int64_t) * (size_t)dst->shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: dst has shape %s but src has shape %s", op,
                    dt__shape_str(&dst->shape, a, sizeof a), dt__shape_str(&src->shape, b, sizeof b));
  return dt__copy_bytes(op, dst->st->device, dst->st->ptr, src->st->device, src->st->ptr, src->nbytes);
}

DTDEF dt_status dt_to_host(const dt_tensor *t, void *dst, size_t nbytes) {
  const char *op = "dt_to_host";
  dt_status s;
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  if (!dst && t->nbytes > 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dst is NULL", op);
  if (nbytes < t->nbytes)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dst holds %zu bytes but the tensor has %zu", op, nbytes, t->nbytes);
  return dt__copy_bytes(op, dt_cpu(), dst, t->st->device, t->st->ptr, t->nbytes);
}

static double dt__host_value(const void *p, dt_dtype t, int64_t i) {
  switch (t) {
    case DT_F32: return (double)((const float *)p)[i];
    case DT_F64: return ((const double *)p)[i];
    case DT_I32: return (double)((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
  }
  return 0;
}

DTDEF double dt_item(const dt_tensor *t) {
  double v[1];
  if (dt__check_tensor("dt_item", "t", t) != DT_OK) return NAN;
  if (t->numel != 1) {
    char sb[200];
    dt__fail(DT_ERR_SHAPE, "dt_item: expected a tensor with one element, got shape %s (%lld elements)",
             dt__shape_str(&t->shape, sb, sizeof sb), (long long)t->numel);
    return NAN;
  }
  if (dt__copy_bytes("dt_item", dt_cpu(), v, t->st->device, t->st->ptr, t->nbytes) != DT_OK) return NAN;
  return dt__host_value(v, t->dtype, 0);
}

/* ---- operations ---- */

/* The broadcast geometry of a op b (NumPy's rules), with dims merged where
   both operands run contiguously across them. */
static dt_status dt__broadcast(const char *op, const dt_shape *a, const dt_shape *b, dt_shape *out, dt__bcast *g) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim, i, k;
  int64_t as = 1, bs = 1, n = 1;
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
    full.astride[i] = (da == 1 && d != 1) ? 0 : as;
    full.bstride[i] = (db == 1 && d != 1) ? 0 : bs;
    as *= da; bs *= db; n *= d;
  }
  /* merge: drop size-1 dims, join a dim into the next when both strides chain */
  memset(g, 0, sizeof *g);
  g->numel = n;
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

static dt_tensor *dt__binary(const char *op, dt__binary_op bop, const dt_tensor *a, const dt_tensor *b) {
  dt_shape s;
  dt__bcast g;
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_tensor(op, "b", b) != DT_OK) return NULL;
  if (dt__same_device(op, "a", a, "b", b) != DT_OK || dt__same_dtype(op, "a", a, "b", b) != DT_OK) return NULL;
  if ((bop == DT__B_DIV || bop == DT__B_RELU_GRAD) && dt__float_only(op, "a", a) != DT_OK) return NULL;
  if (dt__broadcast(op, &a->shape, &b->shape, &s, &g) != DT_OK) return NULL;
  if (!(y = dt__new(op, s, a->dtype, a->st->device))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->binary(a->st->device.index, bop, a->dtype, &g, a->st->ptr, b->st->ptr, y->st->ptr));
}

DTDEF dt_tensor *dt_add(const dt_tensor *a, const dt_tensor *b) { return dt__binary("dt_add", DT__B_ADD, a, b); }
DTDEF dt_tensor *dt_sub(const dt_tensor *a, const dt_tensor *b) { return dt__binary("dt_sub", DT__B_SUB, a, b); }
DTDEF dt_tensor *dt_mul(const dt_tensor *a, const dt_tensor *b) { return dt__binary("dt_mul", DT__B_MUL, a, b); }
DTDEF dt_tensor *dt_div(const dt_tensor *a, const dt_tensor *b) { return dt__binary("dt_div", DT__B_DIV, a, b); }

/* y = op(a). Integer tensors take AFFINE with integral p0, p1 and NEG. */
static dt_tensor *dt__unary(const char *op, dt__unary_op uop, const dt_tensor *a, double p0, double p1) {
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK) return NULL;
  if (!dt__is_float(a->dtype)) {
    if (uop != DT__U_AFFINE && uop != DT__U_NEG) { dt__float_only(op, "a", a); return NULL; }
    if (uop == DT__U_AFFINE && (p0 != floor(p0) || p1 != floor(p1) || fabs(p0) > 9e15 || fabs(p1) > 9e15)) {
      dt__fail(DT_ERR_DTYPE, "%s: a is %s, so the scalar must be a whole number, got %g", op, dt_dtype_name(a->dtype),
               p0 != floor(p0) ? p0 : p1);
      return NULL;
    }
  }
  if (!(y = dt__new_like(op, a, a->dtype))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->unary(a->st->device.index, uop, a->dtype, a->numel, a->st->ptr, y->st->ptr, p0, p1));
}

DTDEF dt_tensor *dt_add_scalar(const dt_tensor *a, double s) { return dt__unary("dt_add_scalar", DT__U_AFFINE, a, 1.0, s); }
DTDEF dt_tensor *dt_mul_scalar(const dt_tensor *a, double s) { return dt__unary("dt_mul_scalar", DT__U_AFFINE, a, s, 0.0); }
DTDEF dt_tensor *dt_exp(const dt_tensor *a) { return dt__unary("dt_exp", DT__U_EXP, a, 0, 0); }
DTDEF dt_tensor *dt_log(const dt_tensor *a) { return dt__unary("dt_log", DT__U_LOG, a, 0, 0); }
DTDEF dt_tensor *dt_sqrt(const dt_tensor *a) { return dt__unary("dt_sqrt", DT__U_SQRT, a, 0, 0); }
DTDEF dt_tensor *dt_neg(const dt_tensor *a) { return dt__unary("dt_neg", DT__U_NEG, a, 0, 0); }
DTDEF dt_tensor *dt_relu(const dt_tensor *a) { return dt__unary("dt_relu", DT__U_RELU, a, 0, 0); }

/* Row-major batched matmul with the shapes already checked; y is made here. */
static dt_tensor *dt__gemm(const char *op, const dt_tensor *a, const dt_tensor *b, int ta, int tb, int64_t batch,
                           int64_t m, int64_t n, int64_t k, int64_t sa, int64_t sb, dt_shape ys) {
  dt_tensor *y = dt__new(op, ys, a->dtype, a->st->device);
  if (!y || y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->gemm(a->st->device.index, a->dtype, ta, tb, batch, m, n, k, 1.0,
                                                     a->st->ptr, sa, b->st->ptr, sb, 0.0, y->st->ptr, m * n));
}

DTDEF dt_tensor *dt_matmul(const dt_tensor *a, const dt_tensor *b) {
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
  sa = m * k; sb = k * n;
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

DTDEF dt_tensor *dt_transpose(const dt_tensor *a) {
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

DTDEF dt_tensor *dt_reshape(const dt_tensor *a, dt_shape s) {
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
DTDEF dt_tensor *dt_sum(const dt_tensor *a) { return dt__reduce_all("dt_sum", DT__R_SUM, a); }
DTDEF dt_tensor *dt_mean(const dt_tensor *a) { return dt__reduce_all("dt_mean", DT__R_MEAN, a); }
DTDEF dt_tensor *dt_norm(const dt_tensor *a) { return dt__reduce_all("dt_norm", DT__R_NORM, a); }

DTDEF dt_tensor *dt_sum_dim(const dt_tensor *a, int dim) {
  const char *op = "dt_sum_dim";
  int nd, i, j;
  int64_t outer = 1, inner = 1;
  dt_shape ys = dt_shape0();
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__float_only(op, "a", a) != DT_OK) return NULL;
  nd = a->shape.ndim;
  if (nd == 0 || dim < -nd || dim >= nd) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dim %d out of range for a %d-d tensor", op, dim, nd);
    return NULL;
  }
  if (dim < 0) dim += nd;
  for (i = 0, j = 0; i < nd; i++) {
    if (i < dim) outer *= a->shape.dims[i];
    if (i > dim) inner *= a->shape.dims[i];
    if (i != dim) ys.dims[j++] = a->shape.dims[i];
  }
  ys.ndim = nd - 1;
  return dt__reduce(op, DT__R_SUM, a, outer, a->shape.dims[dim], inner, ys);
}

DTDEF dt_tensor *dt_cast(const dt_tensor *a, dt_dtype t) {
  const char *op = "dt_cast";
  dt_tensor *y;
  if (dt__check_tensor(op, "a", a) != DT_OK || dt__check_dtype(op, t) != DT_OK) return NULL;
  if (!(y = dt__new_like(op, a, t))) return NULL;
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(a->st->device)->cast(a->st->device.index, a->dtype, t, a->numel, a->st->ptr, y->st->ptr));
}

DTDEF dt_tensor *dt_stack(const dt_tensor *const *ts, int n) {
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
  if (ts[0]->shape.ndim >= DT_MAX_DIMS) { dt__fail(DT_ERR_SHAPE, "%s: stacking %d-d tensors exceeds %d dims", op, ts[0]->shape.ndim, DT_MAX_DIMS); return NULL; }
  snprintf(other, sizeof other, "ts[0]");
  for (i = 1; i < n; i++) {
    snprintf(name, sizeof name, "ts[%d]", i);
    if (dt__same_device(op, other, ts[0], name, ts[i]) != DT_OK || dt__same_dtype(op, other, ts[0], name, ts[i]) != DT_OK) return NULL;
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

DTDEF dt_status dt_fill_(dt_tensor *t, double v) {
  dt_status s;
  if ((s = dt__check_tensor("dt_fill_", "t", t)) != DT_OK) return s;
  if (t->numel == 0) return DT_OK;
  return dt__run("dt_fill_", t->st->device, dt__be(t->st->device)->fill(t->st->device.index, t->dtype, t->numel, v, t->st->ptr));
}

DTDEF dt_status dt_axpy_(dt_tensor *y, double alpha, const dt_tensor *x) {
  const char *op = "dt_axpy_";
  dt_status s;
  char a[200], b[200];
  if ((s = dt__check_tensor(op, "y", y)) != DT_OK || (s = dt__check_tensor(op, "x", x)) != DT_OK) return s;
  if ((s = dt__same_device(op, "y", y, "x", x)) != DT_OK || (s = dt__same_dtype(op, "y", y, "x", x)) != DT_OK) return s;
  if ((s = dt__float_only(op, "y", y)) != DT_OK) return s;
  if (y->shape.ndim != x->shape.ndim || memcmp(y->shape.dims, x->shape.dims, sizeof(int64_t) * (size_t)y->shape.ndim) != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: y has shape %s but x has shape %s", op, dt__shape_str(&y->shape, a, sizeof a),
                    dt__shape_str(&x->shape, b, sizeof b));
  if (y->numel == 0) return DT_OK;
  return dt__run(op, y->st->device, dt__be(y->st->device)->axpy(y->st->device.index, y->dtype, y->numel, alpha, x->st->ptr, y->st->ptr));
}

/* ---- printing ---- */

#include "parts/print.inc"

DTDEF int dt_snprint(char *buf, size_t n, const dt_tensor *t) {
  const char *op = "dt_snprint";
  void *host = NULL;
  char dev[48];
  int r;
  if (buf && n > 0) buf[0] = 0;
  if (dt__check_tensor(op, "t", t) != DT_OK) return -1;
  if (!buf && n > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: buf is NULL but n is %zu", op, n); return -1; }
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

DTDEF dt_status dt_fprint(FILE *f, const dt_tensor *t) {
  const char *op = "dt_fprint";
  char small[512], *buf = small;
  int len;
  dt_status s = DT_OK;
  if (!f) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: f is NULL", op);
  if (!t) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: t is NULL", op);
  if ((len = dt_snprint(small, sizeof small, t)) < 0) return dt_last_status();
  if ((size_t)len >= sizeof small) {
    if (!(buf = (char *)DT_MALLOC((size_t)len + 1)))
      return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host formatting %d characters", op, len);
    if (dt_snprint(buf, (size_t)len + 1, t) < 0) { DT_FREE(buf); return dt_last_status(); }
  }
  if (fputs(buf, f) < 0 || fputc('\n', f) == EOF) s = dt__fail(DT_ERR_IO, "%s: writing failed", op);
  if (buf != small) DT_FREE(buf);
  return s;
}

DTDEF dt_status dt_print(const dt_tensor *t) {
  if (!t) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_print: t is NULL");
  return dt_fprint(stdout, t);
}

/* ---- memory ---- */

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
  return dt__run("dt_empty_cache", d, dt__be(d)->empty_cache(d.index));
}

/* ---- neural networks ---- */

#include "parts/nn.inc"

/* ---- CPU backend ---- */

#include "parts/cpu_backend.inc"

#if defined(__CUDACC__)
#pragma nv_diagnostic pop
#endif

#endif /* DEVTENSOR_IMPLEMENTATION_DONE */
#endif /* DEVTENSOR_IMPLEMENTATION */
