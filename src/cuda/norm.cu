/* Batch normalisation. The sums (a channel's mean and variance; the backward's sum of gy and of
   gy (x - mean)) take one block of 512 threads per channel (a block takes channel after channel
   where there are more than kBnGrid), in double, reduced over the block in
   a fixed order (team_reduce); the result (y, gx) is an elementwise map over every element (a
   full grid), which reads the per-channel values. So a training step's forward and backward
   are two launches each. A thread walks its channel's values (image i, position q) in steps of
   the block's size without dividing: (i, q) += (block / l, block % l), carried. */

constexpr int kBnBlock = 512;
/* the most blocks a launch of the sums takes (a block then takes channel after channel); the
   emulator's build takes fewer, so that its tests walk that loop with a few hundred channels */
#ifdef DTEMU
constexpr int64_t kBnGrid = 256;
#else
constexpr int64_t kBnGrid = kMaxGrid;
#endif

/* the channel's values a thread of the block visits: f(offset) for each */
template <typename F>
__device__ inline void bn_walk(const dt__bn &p, int64_t ch, F f) {
  const int64_t bd = blockDim.x, di = bd / p.l, dq = bd % p.l;
  int64_t i = threadIdx.x / p.l, q = threadIdx.x % p.l;
  while (i < p.n) {
    f((i * p.c + ch) * p.l + q);
    i += di; q += dq;
    if (q >= p.l) { q -= p.l; i++; }
  }
}

template <typename T>
__device__ void bn_stats_channel(const dt__bn &p, int64_t ch) {
  const int64_t N = p.n * p.l;
  const T *x = static_cast<const T *>(p.x);
  double s = 0;
  bn_walk(p, ch, [&](int64_t o) { s += (double)x[o]; });
  const double mean = team_reduce<true>(s, Plus<double>()) / (double)N;
  s = 0;
  bn_walk(p, ch, [&](int64_t o) { const double d = (double)x[o] - mean; s += d * d; });
  const double var = team_reduce<true>(s, Plus<double>()) / (double)N;
  if (threadIdx.x == 0) {
    static_cast<T *>(p.mean)[ch] = (T)mean;
    static_cast<T *>(p.var)[ch] = (T)var;
    if (p.rmean) {
      T *r = static_cast<T *>(p.rmean);
      r[ch] = (T)((1.0 - p.momentum) * (double)r[ch] + p.momentum * mean);
    }
    if (p.rvar) {
      T *r = static_cast<T *>(p.rvar);
      r[ch] = (T)((1.0 - p.momentum) * (double)r[ch] + p.momentum * var * (double)N / (double)(N - 1));
    }
  }
}

template <typename T>
__global__ void k_bn_stats(dt__bn p) {
  for (int64_t ch = blockIdx.x; ch < p.c; ch += gridDim.x) bn_stats_channel<T>(p, ch);
}

/* element e's channel (I: uint32_t when the tensor has fewer than 2^31 elements, so l and c do too) */
template <typename I>
__device__ inline int64_t bn_channel(I e, const dt__bn &p) {
  if (sizeof(I) == 4) return (int64_t)(((uint32_t)e / (uint32_t)p.l) % (uint32_t)p.c);
  return ((int64_t)e / p.l) % p.c;
}

/* y = (x - mean) / sqrt(var + eps) w + b, the statistics from m and v */
template <typename T>
struct BnApply {
  dt__bn p; const T *m, *v;
  template <typename I> __device__ void operator()(I e) const {
    const int64_t ch = bn_channel(e, p);
    const double k = 1.0 / sqrt((double)v[ch] + p.eps);
    const double a = p.w ? k * (double)static_cast<const T *>(p.w)[ch] : k;
    const double b = p.b ? (double)static_cast<const T *>(p.b)[ch] : 0.0;
    static_cast<T *>(p.y)[e] = (T)(((double)static_cast<const T *>(p.x)[e] - (double)m[ch]) * a + b);
  }
};

/* the backward's sums: ws[ch] = sum gy, ws[c + ch] = sum gy (x - mean); gb, gw where wanted */
template <typename T>
__device__ void bn_back_sums_channel(const dt__bn &p, int64_t ch) {
  const T *x = static_cast<const T *>(p.x), *g = static_cast<const T *>(p.gy);
  const double mean = (double)static_cast<const T *>(p.mean)[ch];
  double sg = 0, sgx = 0;
  bn_walk(p, ch, [&](int64_t o) {
    const double gv = (double)g[o];
    sg += gv;
    sgx += gv * ((double)x[o] - mean);
  });
  sg = team_reduce<true>(sg, Plus<double>());
  sgx = team_reduce<true>(sgx, Plus<double>());
  if (threadIdx.x == 0) {
    double *ws = static_cast<double *>(p.ws);
    ws[ch] = sg; ws[p.c + ch] = sgx;
    if (p.gb) static_cast<T *>(p.gb)[ch] = (T)sg;
    if (p.gw) static_cast<T *>(p.gw)[ch] = (T)(sgx / sqrt((double)static_cast<const T *>(p.var)[ch] + p.eps));
  }
}

template <typename T>
__global__ void k_bn_back_sums(dt__bn p) {
  for (int64_t ch = blockIdx.x; ch < p.c; ch += gridDim.x) bn_back_sums_channel<T>(p, ch);
}

/* gx = w k (gy - sum gy / N - (x - mean) k^2 sum gy (x - mean) / N) (train), w k gy (eval) */
template <typename T>
struct BnGradInput {
  dt__bn p;
  template <typename I> __device__ void operator()(I e) const {
    const int64_t ch = bn_channel(e, p), N = p.n * p.l;
    const double k = 1.0 / sqrt((double)static_cast<const T *>(p.var)[ch] + p.eps);
    const double a = p.w ? k * (double)static_cast<const T *>(p.w)[ch] : k;
    const double gv = (double)static_cast<const T *>(p.gy)[e];
    double r = gv;
    if (p.train) {
      const double *ws = static_cast<const double *>(p.ws);
      const double xm = (double)static_cast<const T *>(p.x)[e] - (double)static_cast<const T *>(p.mean)[ch];
      r = gv - ws[ch] / (double)N - xm * k * k * ws[p.c + ch] / (double)N;
    }
    static_cast<T *>(p.gx)[e] = (T)(r * a);
  }
};

dt_status cu_batch_norm(int dev, dt_dtype t, const dt__bn *p) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (p->c <= 0 || p->n * p->l <= 0) return DT_OK;
  return by_float(t, "batch_norm", [&](auto z) {
    using T = decltype(z);
    if (p->train) {
      DT_LAUNCH_COOP((unsigned)(p->c < kBnGrid ? p->c : kBnGrid), kBnBlock, in.s->stream, k_bn_stats<T>)(*p);
      dt_status s = launched("batch_norm");
      if (s != DT_OK) return s;
    }
    const T *m = static_cast<const T *>(p->train ? p->mean : p->rmean), *v = static_cast<const T *>(p->train ? p->var : p->rvar);
    return run_map("batch_norm", in.s->stream, p->n * p->c * p->l, BnApply<T>{*p, m, v});
  });
}

dt_status cu_batch_norm_backward(int dev, dt_dtype t, const dt__bn *p) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (p->c <= 0 || p->n * p->l <= 0) return DT_OK;
  return by_float(t, "batch_norm_backward", [&](auto z) {
    using T = decltype(z);
    if (p->gw || p->gb || (p->gx && p->train)) {
      DT_LAUNCH_COOP((unsigned)(p->c < kBnGrid ? p->c : kBnGrid), kBnBlock, in.s->stream, k_bn_back_sums<T>)(*p);
      dt_status s = launched("batch_norm_backward");
      if (s != DT_OK) return s;
    }
    return p->gx ? run_map("batch_norm_backward", in.s->stream, p->n * p->c * p->l, BnGradInput<T>{*p}) : DT_OK;
  });
}
