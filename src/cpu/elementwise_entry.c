/* A job of n elements: y[i] = f(x[i]) by a dt__map_fn, dt__conv_fn or dt__fill_fn. half: x and
   y are float16 (1) or bfloat16 (2) and map the float32 kernel, run on blocks of them converted
   to float32, each result rounded once. */
typedef struct dt__ew_job {
  dt__map_fn map;
  dt__conv_fn conv;
  dt__fill_fn fill;
  const char *x;
  char *y;
  size_t xs, ys; /* element sizes */
  double p0, p1;
  unsigned char v[8]; /* fill: the value */
  int half;
} dt__ew_job;

static void dt__ew_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__ew_job *j = (const dt__ew_job *)ctx;
  char *y = j->y + (size_t)lo * j->ys;
  if (j->fill) j->fill(hi - lo, j->v, y);
  else if (j->conv) j->conv(hi - lo, j->x + (size_t)lo * j->xs, y);
  else if (j->half) {
    const dt__conv_fn in = dt__hv_kernel(j->half == 2, 0), out = dt__hv_kernel(j->half == 2, 1);
    const uint16_t *x = (const uint16_t *)j->x + lo;
    float f[DT__HALF_EW_BLOCK];
    int64_t k, m, n = hi - lo;
    for (k = 0; k < n; k += m) {
      m = n - k < DT__HALF_EW_BLOCK ? n - k : DT__HALF_EW_BLOCK;
      in(m, x + k, f);
      j->map(m, f, f, j->p0, j->p1);
      out(m, f, (uint16_t *)y + k);
    }
  } else j->map(hi - lo, j->x + (size_t)lo * j->xs, y, j->p0, j->p1);
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
    case DT_F16: case DT_BF16: /* the float32 kernel on blocks converted to float32 */
      j.half = t == DT_BF16 ? 2 : 1;
      /* fall through */
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
  if (dt__is_half(t) && op == DT__B_COPY_A) j.zip = dt__zip_copy_u16;
  else if (t == DT_F32 || t == DT_F64 || dt__is_half(t)) { /* half: the float32 kernel on blocks converted to float32 */
    int dbl = t == DT_F64;
    j.half = t == DT_F16 ? 1 : t == DT_BF16 ? 2 : 0;
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
