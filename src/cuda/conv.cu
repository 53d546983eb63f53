/* Convolution's im2col and col2im, and 2-d pooling with its backward: one thread per element
   written (grid-stride, run_map), so every sum is one thread's, in a fixed order, and nothing
   is scattered: col2im and the pooling backwards gather, each input position summing the
   windows that hold it (a bogus max index is never followed). Sums are in double, as the
   CPU's pooling. The core multiplies with cuBLAS through the gemm slot. T: float, double or a half
   type (half.cu's ld, ldd and sto; im2col copies the bits). */

/* the output rows (or columns) whose windows [o s - p, o s - p + k) hold input position i: [*lo, *hi) within [0, on) */
__device__ inline void pool_span(int64_t i, int64_t k, int64_t s, int64_t p, int64_t on, int64_t *lo, int64_t *hi) {
  int64_t a = i + p - k + 1, b = (i + p) / s + 1;
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  *hi = b < on ? b : on;
}
/* adaptive pooling: window o of `in` positions over `on` outputs is [start, end), as PyTorch's */
__device__ inline int64_t adapt_start(int64_t o, int64_t in, int64_t on) { return (o / on) * in + ((o % on) * in) / on; }
__device__ inline int64_t adapt_end(int64_t o, int64_t in, int64_t on) { return 1 + ((o + 1) * in - 1) / on; }
/* avg pooling's divisor for the window from a (padding counted) of k, clipped to n + p */
__device__ inline int64_t avg_extent(int64_t a, int64_t k, int64_t n, int64_t p) { return (a + k < n + p ? a + k : n + p) - a; }

/* col: (c kh kw, nimg, oh ow) from x: (nimg, c, h, w); i indexes col */
template <typename T>
struct Im2col {
  dt__conv2d g; int64_t nimg; const T *x; T *col;
  template <typename I> __device__ void operator()(I i) const {
    const int64_t l = g.oh * g.ow, kk = g.kh * g.kw, q = (int64_t)i / l, pos = (int64_t)i - q * l;
    const int64_t r = q / nimg, img = q - r * nimg, ch = r / kk, k = g.flip ? kk - 1 - (r - ch * kk) : r - ch * kk;
    const int64_t ki = k / g.kw, kj = k - ki * g.kw;
    const int64_t oy = pos / g.ow, ox = pos - oy * g.ow;
    const int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
    col[i] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? x[((img * g.c + ch) * g.h + iy) * g.w + ix] : T{};
  }
};

/* x: (nimg, c, h, w), each position the sum of its entries of col: (c kh kw, nimg, oh ow); i indexes x */
template <typename T>
struct Col2im {
  dt__conv2d g; int64_t nimg; const T *col; T *x;
  template <typename I> __device__ void operator()(I i) const {
    const int64_t hw = g.h * g.w, plane = (int64_t)i / hw, pos = (int64_t)i - plane * hw, iy = pos / g.w, ix = pos - iy * g.w;
    const int64_t img = plane / g.c, ch = plane - img * g.c, l = g.oh * g.ow, kk = g.kh * g.kw;
    double s = 0;
    for (int64_t ki = 0; ki < g.kh; ki++) {
      const int64_t ty = iy + g.ph - ki * g.dh; /* oy sh */
      if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) continue;
      for (int64_t kj = 0; kj < g.kw; kj++) {
        const int64_t tx = ix + g.pw - kj * g.dw;
        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) continue;
        s += ldd(col[((ch * kk + ki * g.kw + kj) * nimg + img) * l + (ty / g.sh) * g.ow + tx / g.sw]);
      }
    }
    x[i] = sto<T>(s);
  }
};

/* y: (n, c, oh, ow) (and idx for max) from x: (n, c, h, w); i indexes y */
template <typename T>
struct Pool {
  dt__pool2d p; const T *x; T *y; int64_t *idx;
  template <typename I> __device__ void operator()(I i) const {
    const int64_t ohw = p.oh * p.ow, plane = (int64_t)i / ohw, pos = (int64_t)i - plane * ohw, oy = pos / p.ow, ox = pos - oy * p.ow;
    const T *xp = x + plane * p.h * p.w;
    int64_t y0, y1, x0, x1;
    double div;
    if (p.kind == DT__POOL2D_ADAPTIVE_AVG) {
      y0 = adapt_start(oy, p.h, p.oh); y1 = adapt_end(oy, p.h, p.oh);
      x0 = adapt_start(ox, p.w, p.ow); x1 = adapt_end(ox, p.w, p.ow);
      div = (double)((y1 - y0) * (x1 - x0));
    } else {
      y0 = oy * p.sh - p.ph; x0 = ox * p.sw - p.pw;
      div = (double)(avg_extent(y0, p.kh, p.h, p.ph) * avg_extent(x0, p.kw, p.w, p.pw)); /* count_include_pad */
      y1 = y0 + p.kh < p.h ? y0 + p.kh : p.h;
      x1 = x0 + p.kw < p.w ? x0 + p.kw : p.w;
      if (y0 < 0) y0 = 0;
      if (x0 < 0) x0 = 0;
    }
    if (p.kind == DT__POOL2D_MAX) {
      typename Calc<T>::type best = -CUDART_INF;
      int64_t at = y0 * p.w + x0;
      for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) {
          const typename Calc<T>::type v = ld(xp[iy * p.w + ix]);
          if (v > best || v != v) { best = v; at = iy * p.w + ix; }
        }
      y[i] = sto<T>(best);
      if (idx) idx[i] = at;
    } else {
      double s = 0;
      for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) s += ldd(xp[iy * p.w + ix]);
      y[i] = sto<T>(s / div);
    }
  }
};

/* gx: (n, c, h, w) from gy: (n, c, oh, ow) (and idx for max); i indexes gx */
template <typename T>
struct PoolBack {
  dt__pool2d p; const T *gy; const int64_t *idx; T *gx;
  template <typename I> __device__ void operator()(I i) const {
    const int64_t hw = p.h * p.w, plane = (int64_t)i / hw, pos = (int64_t)i - plane * hw, iy = pos / p.w, ix = pos - iy * p.w;
    const int64_t yo = plane * p.oh * p.ow;
    int64_t y0, y1, x0, x1;
    double s = 0;
    if (p.kind == DT__POOL2D_ADAPTIVE_AVG) {
      y0 = iy * p.oh / p.h; y1 = ((iy + 1) * p.oh + p.h - 1) / p.h;
      x0 = ix * p.ow / p.w; x1 = ((ix + 1) * p.ow + p.w - 1) / p.w;
      if (y1 > p.oh) y1 = p.oh;
      if (x1 > p.ow) x1 = p.ow;
    } else {
      pool_span(iy, p.kh, p.sh, p.ph, p.oh, &y0, &y1);
      pool_span(ix, p.kw, p.sw, p.pw, p.ow, &x0, &x1);
    }
    for (int64_t oy = y0; oy < y1; oy++)
      for (int64_t ox = x0; ox < x1; ox++) {
        const int64_t o = yo + oy * p.ow + ox;
        if (p.kind == DT__POOL2D_MAX) {
          if (idx[o] == pos) s += ldd(gy[o]);
        } else if (p.kind == DT__POOL2D_AVG) {
          s += ldd(gy[o]) / (double)(avg_extent(oy * p.sh - p.ph, p.kh, p.h, p.ph) * avg_extent(ox * p.sw - p.pw, p.kw, p.w, p.pw));
        } else {
          const int64_t a = adapt_start(oy, p.h, p.oh), e = adapt_end(oy, p.h, p.oh);
          const int64_t b = adapt_start(ox, p.w, p.ow), f = adapt_end(ox, p.w, p.ow);
          if (iy >= a && iy < e && ix >= b && ix < f) s += ldd(gy[o]) / (double)((e - a) * (f - b));
        }
      }
    gx[i] = sto<T>(s);
  }
};

dt_status cu_im2col(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *x, void *col) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float_half(t, "im2col", [&](auto z) {
    using T = decltype(z);
    return run_map("im2col", in.s->stream, nimg * g->c * g->kh * g->kw * g->oh * g->ow,
                   Im2col<T>{*g, nimg, static_cast<const T *>(x), static_cast<T *>(col)});
  });
}

dt_status cu_col2im(int dev, dt_dtype t, const dt__conv2d *g, int64_t nimg, const void *col, void *x) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float_half(t, "col2im", [&](auto z) {
    using T = decltype(z);
    return run_map("col2im", in.s->stream, nimg * g->c * g->h * g->w, Col2im<T>{*g, nimg, static_cast<const T *>(col), static_cast<T *>(x)});
  });
}

dt_status cu_pool2d(int dev, dt_dtype t, const dt__pool2d *p, const void *x, void *y, int64_t *idx) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float_half(t, "pool2d", [&](auto z) {
    using T = decltype(z);
    return run_map("pool2d", in.s->stream, p->n * p->c * p->oh * p->ow,
                   Pool<T>{*p, static_cast<const T *>(x), static_cast<T *>(y), p->kind == DT__POOL2D_MAX ? idx : nullptr});
  });
}

dt_status cu_pool2d_backward(int dev, dt_dtype t, const dt__pool2d *p, const void *gy, const int64_t *idx, void *gx) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  return by_float_half(t, "pool2d_backward", [&](auto z) {
    using T = decltype(z);
    return run_map("pool2d_backward", in.s->stream, p->n * p->c * p->h * p->w,
                   PoolBack<T>{*p, static_cast<const T *>(gy), idx, static_cast<T *>(gx)});
  });
}
