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
