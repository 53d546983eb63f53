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
