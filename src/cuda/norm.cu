/* Batch normalisation. The sums (a channel's mean and variance; the backward's sum of gy and of
   gy (x - mean)) are in double, reduced over a block of 512 threads in a fixed order
   (team_reduce). Where the channels alone would leave the GPU's SMs idle (fewer than
   kBnBlocksPerSm blocks per SM) and a channel has values enough, each channel is split into S
   slices of consecutive (image, position) values, a block each: a slice's mean and sum of
   squared deviations from it (two passes over the slice; the second reads from L2 where the
   slices in flight fit in it), or its two backward sums, into a scratch block from the caching
   allocator; then one thread per channel joins its S slices in order (Chan's pairwise update
   for the variance, plain sums for the backward). Else (or where the scratch cannot be had) one
   block per channel, a block taking channel after channel where there are more than kBnGrid.
   The result (y, gx) is an elementwise map over every element (a full grid), which reads the
   per-channel values. So a training step's forward and backward are two launches each, three
   where the channels are split. A thread walks its slice's values in steps of the block's size
   without dividing: (image, position) += (block / l, block % l), carried, four offsets at a time
   so that four loads are in flight. */

constexpr int kBnBlock = 512;
/* the most blocks a launch of the sums takes (a block then takes channel after channel); the
   least values per thread a split channel's slice holds. The emulator's build takes fewer of
   both, so that its tests walk the loop with a few hundred channels and split channels of a
   thousand values */
#ifdef DTEMU
constexpr int64_t kBnGrid = 256;
constexpr int64_t kBnPerThread = 1;
#else
constexpr int64_t kBnGrid = kMaxGrid;
constexpr int64_t kBnPerThread = 16;
#endif
/* the blocks of 512 an SM holds at once: the kernels of the sums are compiled for it
   (__launch_bounds__: at most 64 registers a thread) */
constexpr int kBnBlocksPerSm = 2;

/* the slices each channel of p is split into on a GPU of `sms` SMs (1: one block per channel):
   as many as keep the c S blocks within one wave of kBnBlocksPerSm blocks per SM */
int64_t bn_splits(const dt__bn &p, int sms) {
  const int64_t want = kBnBlocksPerSm * (int64_t)sms, N = p.n * p.l;
  int64_t s = want / p.c;
  const int64_t most = N / (kBnBlock * kBnPerThread);
  if (s > most) s = most;
  return s > 1 ? s : 1;
}

/* values [lo, hi) of channel ch, numbered (image i, position q) -> i l + q: f4(o0, o1, o2, o3)
   for four of a thread's offsets at a time, then f(o) for the rest */
template <typename F4, typename F>
__device__ inline void bn_walk(const dt__bn &p, int64_t ch, int64_t lo, int64_t hi, F4 f4, F f) {
  const int64_t bd = blockDim.x, di = bd / p.l, dq = bd % p.l, cl = p.c * p.l;
  int64_t pos = lo + threadIdx.x;
  int64_t i = pos / p.l, q = pos % p.l;
  int64_t o = (i * p.c + ch) * p.l + q; /* the offset of (i, q) */
  auto next = [&] {
    const int64_t at = o;
    pos += bd; q += dq; o += di * cl + dq;
    if (q >= p.l) { q -= p.l; o += cl - p.l; }
    return at;
  };
  while (pos + 3 * bd < hi) {
    const int64_t o0 = next(), o1 = next(), o2 = next(), o3 = next();
    f4(o0, o1, o2, o3);
  }
  while (pos < hi) f(next());
}

/* the mean of channel ch's values [lo, hi) and the sum of their squared deviations from it,
   in every thread of the block */
template <typename T>
__device__ void bn_slice_stats(const dt__bn &p, int64_t ch, int64_t lo, int64_t hi, double *mean, double *m2) {
  const T *x = static_cast<const T *>(p.x);
  double s = 0;
  bn_walk(p, ch, lo, hi, [&](int64_t a, int64_t b, int64_t c, int64_t d) {
    const double va = (double)x[a], vb = (double)x[b], vc = (double)x[c], vd = (double)x[d];
    s += (va + vb) + (vc + vd);
  }, [&](int64_t a) { s += (double)x[a]; });
  const double m = team_reduce<true>(s, Plus<double>()) / (double)(hi - lo);
  s = 0;
  bn_walk(p, ch, lo, hi, [&](int64_t a, int64_t b, int64_t c, int64_t d) {
    const double da = (double)x[a] - m, db = (double)x[b] - m, dc = (double)x[c] - m, dd = (double)x[d] - m;
    s += (da * da + db * db) + (dc * dc + dd * dd);
  }, [&](int64_t a) { const double da = (double)x[a] - m; s += da * da; });
  *mean = m;
  *m2 = team_reduce<true>(s, Plus<double>());
}

/* channel ch's statistics from its mean and biased variance: the batch's, and the running ones */
template <typename T>
__device__ void bn_stats_write(const dt__bn &p, int64_t ch, double mean, double var) {
  const int64_t N = p.n * p.l;
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

/* slice k of channel ch (of S): values [N k / S, N (k + 1) / S) */
__device__ inline void bn_slice(int64_t N, int64_t S, int64_t k, int64_t *lo, int64_t *hi) {
  *lo = N * k / S;
  *hi = N * (k + 1) / S;
}

/* a thread per channel: its S slices joined in order (Chan et al.'s update of the mean and the
   sum of squared deviations) */
template <typename T>
__global__ void k_bn_stats_join(dt__bn p, int64_t S, const double *part) {
  const int64_t N = p.n * p.l;
  for (int64_t ch = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ch < p.c; ch += (int64_t)gridDim.x * blockDim.x) {
    const double *v = part + 2 * ch * S;
    int64_t lo, hi;
    bn_slice(N, S, 0, &lo, &hi);
    double na = (double)(hi - lo), mean = v[0], m2 = v[1];
    for (int64_t k = 1; k < S; k++) {
      bn_slice(N, S, k, &lo, &hi);
      const double nb = (double)(hi - lo), n = na + nb, d = v[2 * k] - mean;
      mean += d * nb / n;
      m2 += v[2 * k + 1] + d * d * na * nb / n;
      na = n;
    }
    bn_stats_write<T>(p, ch, mean, m2 / (double)N);
  }
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

/* the backward's sums over channel ch's values [lo, hi), in every thread of the block: sum gy,
   sum gy (x - mean) */
template <typename T>
__device__ void bn_slice_back(const dt__bn &p, int64_t ch, int64_t lo, int64_t hi, double *sg, double *sgx) {
  const T *x = static_cast<const T *>(p.x), *g = static_cast<const T *>(p.gy);
  const double mean = (double)static_cast<const T *>(p.mean)[ch];
  double a = 0, b = 0;
  bn_walk(p, ch, lo, hi, [&](int64_t o0, int64_t o1, int64_t o2, int64_t o3) {
    const double g0 = (double)g[o0], g1 = (double)g[o1], g2 = (double)g[o2], g3 = (double)g[o3];
    const double x0 = (double)x[o0], x1 = (double)x[o1], x2 = (double)x[o2], x3 = (double)x[o3];
    a += (g0 + g1) + (g2 + g3);
    b += (g0 * (x0 - mean) + g1 * (x1 - mean)) + (g2 * (x2 - mean) + g3 * (x3 - mean));
  }, [&](int64_t o) {
    const double gv = (double)g[o];
    a += gv;
    b += gv * ((double)x[o] - mean);
  });
  *sg = team_reduce<true>(a, Plus<double>());
  *sgx = team_reduce<true>(b, Plus<double>());
}

/* ws[ch] = sum gy, ws[c + ch] = sum gy (x - mean); gb, gw where wanted */
template <typename T>
__device__ void bn_back_write(const dt__bn &p, int64_t ch, double sg, double sgx) {
  double *ws = static_cast<double *>(p.ws);
  ws[ch] = sg; ws[p.c + ch] = sgx;
  if (p.gb) static_cast<T *>(p.gb)[ch] = (T)sg;
  if (p.gw) static_cast<T *>(p.gw)[ch] = (T)(sgx / sqrt((double)static_cast<const T *>(p.var)[ch] + p.eps));
}

/* block b of c S: slice b % S of channel b / S; part[2 b], part[2 b + 1] its two sums: the
   backward's (Back), else its mean and sum of squared deviations */
template <typename T, bool Back>
__global__ void __launch_bounds__(kBnBlock, kBnBlocksPerSm) k_bn_part(dt__bn p, int64_t S, double *part) {
  const int64_t N = p.n * p.l;
  for (int64_t b = blockIdx.x; b < p.c * S; b += gridDim.x) {
    int64_t lo, hi;
    double u, v;
    bn_slice(N, S, b % S, &lo, &hi);
    if (Back) bn_slice_back<T>(p, b / S, lo, hi, &u, &v);
    else bn_slice_stats<T>(p, b / S, lo, hi, &u, &v);
    if (threadIdx.x == 0) { part[2 * b] = u; part[2 * b + 1] = v; }
  }
}

/* one block per channel (a block taking channel after channel where there are more than its
   grid): the statistics (Back false) or the backward's sums, written */
template <typename T, bool Back>
__global__ void __launch_bounds__(kBnBlock, kBnBlocksPerSm) k_bn_one(dt__bn p) {
  const int64_t N = p.n * p.l;
  for (int64_t ch = blockIdx.x; ch < p.c; ch += gridDim.x) {
    double u, v;
    if (Back) bn_slice_back<T>(p, ch, 0, N, &u, &v);
    else bn_slice_stats<T>(p, ch, 0, N, &u, &v);
    if (threadIdx.x == 0) {
      if (Back) bn_back_write<T>(p, ch, u, v);
      else bn_stats_write<T>(p, ch, u, v / (double)N);
    }
  }
}

/* a thread per channel: its S slices' sums added in order */
template <typename T>
__global__ void k_bn_back_join(dt__bn p, int64_t S, const double *part) {
  for (int64_t ch = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ch < p.c; ch += (int64_t)gridDim.x * blockDim.x) {
    const double *v = part + 2 * ch * S;
    double sg = v[0], sgx = v[1];
    for (int64_t k = 1; k < S; k++) { sg += v[2 * k]; sgx += v[2 * k + 1]; }
    bn_back_write<T>(p, ch, sg, sgx);
  }
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

/* The sums of p (Back: the backward's, else the statistics) on in's stream: one block per
   channel (k_bn_one), or the channels split in S slices (k_bn_part, then the join) through a
   scratch block of 2 c S doubles; one block per channel where that block cannot be had. */
template <typename T, bool Back>
dt_status bn_sums(const char *what, int dev, const Entered &in, const dt__bn &p) {
  int64_t S = bn_splits(p, in.s->sms);
  void *ws = nullptr;
  const size_t bytes = (size_t)(2 * p.c * S) * sizeof(double);
  if (S > 1 && cu_alloc(dev, bytes, &ws) != DT_OK) S = 1;
  if (S > 1) {
    const int64_t blocks = p.c * S;
    DT_LAUNCH_COOP((unsigned)(blocks < kBnGrid ? blocks : kBnGrid), kBnBlock, in.s->stream, k_bn_part<T, Back>)(p, S,
                                                                                                               static_cast<double *>(ws));
    dt_status s = launched(what);
    if (s == DT_OK) {
      void (*join)(dt__bn, int64_t, const double *) = Back ? k_bn_back_join<T> : k_bn_stats_join<T>;
      DT_LAUNCH(grid_for(p.c, kBlock), kBlock, in.s->stream, join)(p, S, static_cast<const double *>(ws));
      s = launched(what);
    }
    cu_free(dev, ws, bytes); /* queued work first: the stream orders its reuse */
    return s;
  }
  DT_LAUNCH_COOP((unsigned)(p.c < kBnGrid ? p.c : kBnGrid), kBnBlock, in.s->stream, k_bn_one<T, Back>)(p);
  return launched(what);
}

dt_status cu_batch_norm(int dev, dt_dtype t, const dt__bn *p) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (p->c <= 0 || p->n * p->l <= 0) return DT_OK;
  return by_float(t, "batch_norm", [&](auto z) {
    using T = decltype(z);
    if (p->train) {
      dt_status s = bn_sums<T, false>("batch_norm", dev, in, *p);
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
      dt_status s = bn_sums<T, true>("batch_norm_backward", dev, in, *p);
      if (s != DT_OK) return s;
    }
    return p->gx ? run_map("batch_norm_backward", in.s->stream, p->n * p->c * p->l, BnGradInput<T>{*p}) : DT_OK;
  });
}
