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
