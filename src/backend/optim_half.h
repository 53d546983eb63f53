/* ---- backend: optimizers on float16 and bfloat16 parameters ----
   One element of dt__optim_hp's update on a half parameter, shared by every backend so that
   the CPU and a GPU give the same bits. It follows PyTorch's single-tensor loops (foreach
   off) on the CPU, where every tensor op rounds its result to the parameter's dtype (r below)
   and a Python float meets a half tensor rounded to that dtype too (h below), except that
   addcmul_ and addcdiv_ compute in float with their value in float (f below) and round once:
   SGD:   d = g; d = r(d + r(h(wd) p)); with momentum: buf1 = first ? d : r(r(buf1 h(momentum)) + d),
          d = buf1; p = r(p + r(h(-lr) d))
   Adam:  d = g; d = r(d + r(h(wd) p)); buf1 = r(r(buf1 h(beta1)) + r(h(1 - beta1) d));
          buf2 = r(buf2 h(beta2)); buf2 = r(buf2 + f(1 - beta2) d d);
          den = r(r(r(sqrt(buf2)) / h(bc2_sqrt)) + h(eps)); p = r(p + f(-step_size) buf1 / den)
   AdamW: p = r(p h(1 - lr wd)), then Adam's update with d = g.
   Products and sums in float are rounded one at a time (no FMA: __fmul_rn and __fadd_rn on a
   GPU; on the CPU each is its own statement, which C compilers do not fuse unless told to). */
#if defined(DEVTENSOR_BACKEND_H) && !defined(DEVTENSOR_OPTIM_HALF_H)
#define DEVTENSOR_OPTIM_HALF_H

/* the hyperparameters as the half update uses them: h() values as floats, f() values */
typedef struct dt__optim_hc {
  int kind, bf, l2, use_mom, first;
  float nlr, wd, mom, beta1, beta2, c1, eps, bc2, decay; /* h() */
  float c2, nstep;                                     /* f() */
} dt__optim_hc;

/* a double (a Python float) as a half tensor op takes it: to float, then to the dtype */
static inline float dt__optim_h(int bf, double v) { return dt__half_to_f32(bf, dt__f32_to_half(bf, (float)v)); }

static inline void dt__optim_half_consts(const dt__optim_hp *h, int bf, dt__optim_hc *c) {
  c->kind = (int)h->kind; c->bf = bf;
  c->l2 = h->kind != DT__OPT_ADAMW && h->weight_decay != 0;
  c->use_mom = h->momentum != 0; c->first = h->first;
  c->nlr = dt__optim_h(bf, -h->lr); c->wd = dt__optim_h(bf, h->weight_decay); c->mom = dt__optim_h(bf, h->momentum);
  c->beta1 = dt__optim_h(bf, h->beta1); c->beta2 = dt__optim_h(bf, h->beta2); c->c1 = dt__optim_h(bf, 1.0 - h->beta1);
  c->eps = dt__optim_h(bf, h->eps); c->bc2 = dt__optim_h(bf, h->bc2_sqrt); c->decay = dt__optim_h(bf, 1.0 - h->lr * h->weight_decay);
  c->c2 = (float)(1.0 - h->beta2); c->nstep = (float)(-h->step_size);
}

static DT__HD inline float dt__ohmul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
static DT__HD inline float dt__ohadd(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
/* v rounded to the half dtype, as a float */
static DT__HD inline float dt__ohr(int bf, float v) { return dt__half_to_f32(bf, dt__f32_to_half(bf, v)); }

/* element i: p, its gradient g, its state b1 (momentum, exp_avg) and b2 (exp_avg_sq), all of
   c's half dtype (b1, b2 unused where the kind has none) */
static DT__HD inline void dt__optim_half1(const dt__optim_hc *c, uint16_t *p, uint16_t *b1, uint16_t *b2, uint16_t g) {
  const int bf = c->bf;
  float pv = dt__half_to_f32(bf, *p), d = dt__half_to_f32(bf, g), m, v, den, t;
  if (c->kind == DT__OPT_SGD) {
    if (c->l2) d = dt__ohr(bf, dt__ohadd(d, dt__ohr(bf, dt__ohmul(c->wd, pv))));
    if (c->use_mom) {
      if (!c->first) d = dt__ohr(bf, dt__ohadd(dt__ohr(bf, dt__ohmul(dt__half_to_f32(bf, *b1), c->mom)), d));
      *b1 = dt__f32_to_half(bf, d);
    }
    *p = dt__f32_to_half(bf, dt__ohadd(pv, dt__ohr(bf, dt__ohmul(c->nlr, d))));
    return;
  }
  if (c->kind == DT__OPT_ADAMW) pv = dt__ohr(bf, dt__ohmul(pv, c->decay));
  else if (c->l2) d = dt__ohr(bf, dt__ohadd(d, dt__ohr(bf, dt__ohmul(c->wd, pv))));
  m = dt__ohr(bf, dt__ohadd(dt__ohr(bf, dt__ohmul(dt__half_to_f32(bf, *b1), c->beta1)), dt__ohr(bf, dt__ohmul(c->c1, d))));
  v = dt__ohr(bf, dt__ohmul(dt__half_to_f32(bf, *b2), c->beta2));
  t = dt__ohmul(dt__ohmul(c->c2, d), d);
  v = dt__ohr(bf, dt__ohadd(v, t));
  den = dt__ohr(bf, sqrtf(v));
  den = dt__ohr(bf, den / c->bc2);
  den = dt__ohr(bf, dt__ohadd(den, c->eps));
  t = dt__ohmul(c->nstep, m) / den;
  *b1 = dt__f32_to_half(bf, m); *b2 = dt__f32_to_half(bf, v);
  *p = dt__f32_to_half(bf, dt__ohadd(pv, t));
}

#endif
