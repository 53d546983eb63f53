/* ---- float16 and bfloat16 elements ----
   Two bytes each, converted by the bit code every backend shares (dt__f32_to_f16 and friends,
   src/backend/backend.h), so a cast gives the CPU's bits on every GPU. Every other dtype
   converts through float, as on the CPU. */
struct Half16 { uint16_t v; };
struct BHalf16 { uint16_t v; };

template <typename D> struct Conv<Half16, D> { __device__ static D f(Half16 v) { return Conv<float, D>::f(dt__f16_to_f32(v.v)); } };
template <typename D> struct Conv<BHalf16, D> { __device__ static D f(BHalf16 v) { return Conv<float, D>::f(dt__bf16_to_f32(v.v)); } };
template <typename S> struct Conv<S, Half16> { __device__ static Half16 f(S v) { return Half16{dt__f32_to_f16(Conv<S, float>::f(v))}; } };
template <typename S> struct Conv<S, BHalf16> { __device__ static BHalf16 f(S v) { return BHalf16{dt__f32_to_bf16(Conv<S, float>::f(v))}; } };
/* the pairs both templates above (or those of bool) match */
template <> struct Conv<Half16, B8> { __device__ static B8 f(Half16 v) { return B8{(uint8_t)(dt__f16_to_f32(v.v) != 0.0f)}; } };
template <> struct Conv<BHalf16, B8> { __device__ static B8 f(BHalf16 v) { return B8{(uint8_t)(dt__bf16_to_f32(v.v) != 0.0f)}; } };
template <> struct Conv<B8, Half16> { __device__ static Half16 f(B8 v) { return Half16{(uint16_t)(v.v ? 0x3C00u : 0u)}; } };
template <> struct Conv<B8, BHalf16> { __device__ static BHalf16 f(B8 v) { return BHalf16{(uint16_t)(v.v ? 0x3F80u : 0u)}; } };
template <> struct Conv<Half16, BHalf16> { __device__ static BHalf16 f(Half16 v) { return BHalf16{dt__f32_to_bf16(dt__f16_to_f32(v.v))}; } };
template <> struct Conv<BHalf16, Half16> { __device__ static Half16 f(BHalf16 v) { return Half16{dt__f32_to_f16(dt__bf16_to_f32(v.v))}; } };
template <> struct Conv<Half16, Half16> { __device__ static Half16 f(Half16 v) { return v; } };
template <> struct Conv<BHalf16, BHalf16> { __device__ static BHalf16 f(BHalf16 v) { return v; } };

/* Kernels written once for float, double and the half types, over elements of storage type S: an
   element is read as what it holds (ld: a half one as float, exactly; ldd: as double), the kernel
   computes in Calc<S> (float for a half S, else S), and each result is rounded to S once on the
   way out (sto: from double through float, as the F32 kernel's result cast to the half dtype).
   So a half kernel gives the bits of the F32 kernel on the converted operands, rounded once, in
   one pass and without temporaries; for float and double these are the plain loads and casts. */
template <typename S> struct Calc { typedef S type; };
template <> struct Calc<Half16> { typedef float type; };
template <> struct Calc<BHalf16> { typedef float type; };
template <typename S> __device__ inline typename Calc<S>::type ld(S v) { return Conv<S, typename Calc<S>::type>::f(v); }
template <typename S> __device__ inline double ldd(S v) { return Conv<S, double>::f(v); }
template <typename S, typename V> __device__ inline S sto(V v) { return Conv<V, S>::f(v); }

/* by_float, with float16 and bfloat16 (f(Half16()), f(BHalf16())) for the kernels above */
template <class F>
dt_status by_float_half(dt_dtype t, const char *what, F f) {
  if (t == DT_F16) return f(Half16());
  if (t == DT_BF16) return f(BHalf16());
  return by_float(t, what, f);
}
