/* DT_LAUNCH(grid, block, stream, kernel)(args...) is kernel<<<grid, block, 0,
   stream>>>(args...). DT_LAUNCH_COOP marks a kernel whose threads meet at
   __syncthreads or warp shuffles. The spelling lets tests/emu (the CPU emulator
   the test suite uses where there is no GPU) run the same kernels: there
   DTEMU is defined and a launch is queued on an emulated stream, cooperative
   blocks as fibers. */
#ifdef DTEMU
#define DT_LAUNCH(grid, block, stream, ...) (dtemu::Launch{dim3(grid), dim3(block), (stream), false}.kernel(__VA_ARGS__))
#define DT_LAUNCH_COOP(grid, block, stream, ...) (dtemu::Launch{dim3(grid), dim3(block), (stream), true}.kernel(__VA_ARGS__))
#else
#define DT_LAUNCH(grid, block, stream, ...) __VA_ARGS__<<<(grid), (block), 0, (stream)>>>
#define DT_LAUNCH_COOP(grid, block, stream, ...) __VA_ARGS__<<<(grid), (block), 0, (stream)>>>
#endif

constexpr int kBlock = 256;
constexpr int64_t kMaxGrid = 65536;

/* f(i) for i in [0, n), grid-stride. I is uint32_t when n < 2^31 (i + stride
   stays below 2^32), else int64_t. */
template <typename I, typename F>
__global__ void k_map(I n, F f) {
  I stride = (I)blockDim.x * (I)gridDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += stride) f(i);
}

unsigned grid_for(int64_t count, int block) {
  int64_t g = (count + block - 1) / block;
  if (g > kMaxGrid) g = kMaxGrid;
  if (g < 1) g = 1;
  return (unsigned)g;
}

template <typename F>
dt_status run_map(const char *what, cudaStream_t st, int64_t count, const F &f) {
  if (count <= 0) return DT_OK;
  if (count <= (int64_t)INT32_MAX) DT_LAUNCH(grid_for(count, kBlock), kBlock, st, k_map<uint32_t, F>)((uint32_t)count, f);
  else DT_LAUNCH(grid_for(count, kBlock), kBlock, st, k_map<int64_t, F>)(count, f);
  return launched(what);
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* 16 bytes of T: loads and stores as one vector instruction */
template <typename T>
struct alignas(16) Vec16 {
  T v[16 / sizeof(T)];
};

/* ---- kernels: conversions shared by fill and cast ---- */

/* float to int as the CPU's dt__f2i32/dt__f2i64: toward zero, NaN -> 0, saturating */
__host__ __device__ inline int32_t f2i32(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;
}
__host__ __device__ inline int64_t f2i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

template <typename S, typename D>
struct Conv {
  __device__ static D f(S v) { return (D)v; }
};
template <> struct Conv<float, int32_t> { __device__ static int32_t f(float v) { return f2i32((double)v); } };
template <> struct Conv<float, int64_t> { __device__ static int64_t f(float v) { return f2i64((double)v); } };
template <> struct Conv<double, int32_t> { __device__ static int32_t f(double v) { return f2i32(v); } };
template <> struct Conv<double, int64_t> { __device__ static int64_t f(double v) { return f2i64(v); } };
/* int64 to int32 keeps the low 32 bits, as PyTorch */
template <> struct Conv<int64_t, int32_t> { __device__ static int32_t f(int64_t v) { return (int32_t)(uint32_t)v; } };

/* uint8 and bool. Float to uint8 as the CPU's dt__f2u8 (PyTorch's CPU conversion):
   toward zero through int32, the low 8 bits; NaN, +-inf and beyond int32 give 0. Integers to uint8
   keep the low 8 bits (the generic conversion). Bool is one byte, 0 or 1, spelled B8 here so its
   conversions differ from uint8's: to bool is nonzero (NaN too), from bool is 0 or 1. */
__host__ __device__ inline uint8_t f2u8(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return 0;
  return (uint8_t)(uint32_t)(int32_t)v;
}
struct B8 { uint8_t v; };
template <> struct Conv<float, uint8_t> { __device__ static uint8_t f(float v) { return f2u8((double)v); } };
template <> struct Conv<double, uint8_t> { __device__ static uint8_t f(double v) { return f2u8(v); } };
template <typename S> struct Conv<S, B8> { __device__ static B8 f(S v) { return B8{(uint8_t)(v != (S)0)}; } };
template <typename D> struct Conv<B8, D> { __device__ static D f(B8 v) { return (D)(v.v != 0); } };
template <> struct Conv<B8, B8> { __device__ static B8 f(B8 v) { return B8{(uint8_t)(v.v != 0)}; } };
