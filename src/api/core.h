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
DTDEF dt_status   dt_device_parse(const char *s, dt_device *out);  /* "cpu", "cuda", "cuda:1" ("gpu", "gpu:1": the same) */

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
DTDEF dt_status  dt_copy_(dt_tensor *dst, const dt_tensor *src); /* same shape and dtype, any two devices; src overlapping dst (not dst itself): refused */
DTDEF dt_status  dt_to_host(const dt_tensor *t, void *dst, size_t nbytes); /* waits */
DTDEF double     dt_item(const dt_tensor *t);                 /* one element -> value; waits; NAN on error */
