/* Casts to and from float16 and bfloat16 on the CPU: through float, a block of elements at a
   time, in vectors (cpu/half_vec.c: the bits of dt__f32_to_f16 and friends in
   src/backend/backend.h), as PyTorch converts them. */

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
    case DT_F16: case DT_BF16: dt__hv_kernel(from == DT_BF16, 0)(n, x, f); break;
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
    case DT_F16: case DT_BF16: dt__hv_kernel(to == DT_BF16, 1)(n, f, y); break;
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
  if (j->from == DT_F32 || j->to == DT_F32) { /* one kernel, in vectors */
    int to = j->from == DT_F32;
    dt__hv_kernel((to ? j->to : j->from) == DT_BF16, to)(hi - lo, j->x + (size_t)lo * xs, j->y + (size_t)lo * ys);
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
