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
   the innermost dim (items are rows). half: a and b are float16 (1) or bfloat16 (2), and so is
   y for a zip: the float32 kernel runs on blocks of them converted to float32, each result
   rounded once. */
typedef struct dt__pair_job {
  dt__cmp_fn cmp;
  dt__compare_op op;
  dt__zip_fn zip;
  const dt__bcast *g;
  const char *a, *b;
  char *y;
  size_t es, ys; /* element sizes: a's and b's, y's */
  int half;
} dt__pair_job;

/* The elements of a half-precision block in float32 at the block's own stride fs: one value
   (s == 0), or n of them read at stride s. */
#define DT__HALF_EW_BLOCK 512
static void dt__half_block_in(int bf, dt__conv_fn in, const uint16_t *x, int64_t s, int64_t n, float *f, int64_t *fs) {
  int64_t i;
  *fs = s != 0;
  if (s == 0) f[0] = dt__half_to_f32(bf, x[0]);
  else if (s == 1) in(n, x, f);
  else for (i = 0; i < n; i++) f[i] = dt__half_to_f32(bf, x[i * s]);
}

/* n elements: a and b from elements oa and ob at strides sa and sb, into y from element at */
static void dt__pair_run(const dt__pair_job *j, int64_t n, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t at) {
  const char *a = j->a + (size_t)oa * j->es, *b = j->b + (size_t)ob * j->es;
  char *y = j->y + (size_t)at * j->ys;
  if (j->half) {
    const int bf = j->half == 2;
    const dt__conv_fn in = dt__hv_kernel(bf, 0), out = dt__hv_kernel(bf, 1);
    float fa[DT__HALF_EW_BLOCK], fb[DT__HALF_EW_BLOCK], fy[DT__HALF_EW_BLOCK];
    int64_t k, m, fsa, fsb;
    for (k = 0; k < n; k += m) {
      m = n - k < DT__HALF_EW_BLOCK ? n - k : DT__HALF_EW_BLOCK;
      dt__half_block_in(bf, in, (const uint16_t *)a + k * sa, sa, m, fa, &fsa);
      dt__half_block_in(bf, in, (const uint16_t *)b + k * sb, sb, m, fb, &fsb);
      if (j->cmp) j->cmp(j->op, m, fa, fsa, fb, fsb, (uint8_t *)y + k);
      else {
        j->zip(m, fa, fsa, fb, fsb, fy);
        out(m, fy, (uint16_t *)y + k);
      }
    }
  } else if (j->cmp) j->cmp(j->op, n, a, sa, b, sb, (uint8_t *)y);
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
    case DT_F16: case DT_BF16: j.cmp = dt__cmp_f32; j.half = t == DT_BF16 ? 2 : 1; break; /* float32 holds every half value */
    default: return DT_ERR_DTYPE;
  }
  j.op = op; j.g = g; j.a = (const char *)a; j.b = (const char *)b; j.y = (char *)y;
  j.es = dt_dtype_size(t); j.ys = 1;
  dt__pair_par(&j);
  return DT_OK;
}
