/* One kernel per parameter and step: dt__optim_hp's update (devtensor.h), each value rounded
   to T at every operation in the CPU backend's order (multiplies and adds explicitly rounded,
   so nvcc fuses none into an FMA; IEEE division and square root); float16 and bfloat16 through
   the element every backend shares. */

template <class T>
struct OptimStep {
  T *p, *b1, *b2;
  const T *g;
  int kind, l2, use_mom, first;
  T lr, wd, mom, beta1, beta2, c1, c2, eps, bc2, nstep, decay;
  template <typename I>
  __device__ void operator()(I i) const {
    T d = g[i];
    if (kind == DT__OPT_SGD) {
      if (l2) d = d_affine(wd, p[i], d);
      if (use_mom) { b1[i] = first ? d : d_affine(mom, b1[i], d); d = b1[i]; }
      p[i] = d_affine(-lr, d, p[i]);
      return;
    }
    T pv = p[i];
    if (kind == DT__OPT_ADAMW) pv = d_mul(pv, decay);
    else if (l2) d = d_affine(wd, pv, d);
    T m = d_add(d_mul(beta1, b1[i]), d_mul(c1, d));
    T v = d_add(d_mul(beta2, b2[i]), d_mul(d_mul(c2, d), d));
    b1[i] = m; b2[i] = v;
    p[i] = d_affine(nstep, m / d_add(d_sqrt(v) / bc2, eps), pv);
  }
};

template <class T>
dt_status optim_t(cudaStream_t st, int64_t n, const dt__optim_hp *h, void *p, const void *g, void *buf1, void *buf2) {
  OptimStep<T> f;
  f.p = static_cast<T *>(p); f.g = static_cast<const T *>(g);
  f.b1 = static_cast<T *>(buf1); f.b2 = static_cast<T *>(buf2);
  f.kind = (int)h->kind; f.l2 = h->kind != DT__OPT_ADAMW && h->weight_decay != 0;
  f.use_mom = h->momentum != 0; f.first = h->first;
  f.lr = (T)h->lr; f.wd = (T)h->weight_decay; f.mom = (T)h->momentum;
  f.beta1 = (T)h->beta1; f.beta2 = (T)h->beta2; f.c1 = (T)(1.0 - h->beta1); f.c2 = (T)(1.0 - h->beta2);
  f.eps = (T)h->eps; f.bc2 = (T)h->bc2_sqrt; f.nstep = (T)(-h->step_size);
  f.decay = (T)(1.0 - h->lr * h->weight_decay);
  return run_map("optimizer step", st, n, f);
}

/* float16 and bfloat16 parameters: dt__optim_half1 (devtensor.h), the CPU backend's element */
struct OptimHalfStep {
  dt__optim_hc c;
  uint16_t *p, *b1, *b2;
  const uint16_t *g;
  template <typename I>
  __device__ void operator()(I i) const { dt__optim_half1(&c, p + i, b1 ? b1 + i : nullptr, b2 ? b2 + i : nullptr, g[i]); }
};

dt_status cu_optim_step(int dev, dt_dtype t, int64_t n, const dt__optim_hp *h, void *p, const void *g, void *buf1,
                        void *buf2) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (t == DT_F16 || t == DT_BF16) {
    OptimHalfStep f;
    dt__optim_half_consts(h, t == DT_BF16, &f.c);
    f.p = static_cast<uint16_t *>(p); f.g = static_cast<const uint16_t *>(g);
    f.b1 = static_cast<uint16_t *>(buf1); f.b2 = static_cast<uint16_t *>(buf2);
    return run_map("optimizer step", in.s->stream, n, f);
  }
  return by_float(t, "an optimizer step", [&](auto z) { return optim_t<decltype(z)>(in.s->stream, n, h, p, g, buf1, buf2); });
}
