/* Everything accumulates in double, in a fixed order (deterministic). T is the elements' type:
   float, double or a half type (read and rounded as half.cu's ld and sto say). */

__device__ inline double r_term(double v, int op) { return op == DT__R_NORM ? v * v : v; }

__device__ inline double r_final(double acc, int op, int64_t len) {
  if (op == DT__R_MEAN) return len ? acc / (double)len : CUDART_NAN;
  if (op == DT__R_NORM) return sqrt(acc);
  return acc;
}

/* The sum of v over the block (blockDim.x a multiple of 32, at most 1024),
   valid in thread 0. Every thread of the block must call it. */
__device__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  __syncthreads(); /* warp_sums may still be read from a previous call */
  if (lane == 0) warp_sums[w] = v;
  __syncthreads();
  v = 0.0;
  if (w == 0) {
    v = lane < nw ? warp_sums[lane] : 0.0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  }
  return v;
}

/* Rows (inner == 1): x: (outer, len). Task t = (row o, chunk c) is one block;
   it reduces x[o, c*chunk : (c+1)*chunk]. With one chunk per row the block
   writes y[o]; otherwise partial[o * nchunks + c]. */
template <typename T>
__global__ void k_reduce_rows(const T *x, int64_t outer, int64_t len, int64_t chunk, int64_t nchunks, int op,
                              double *partial, T *y) {
  int64_t tasks = outer * nchunks;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    int64_t o = t / nchunks, c = t - o * nchunks;
    int64_t r0 = c * chunk, r1 = r0 + chunk < len ? r0 + chunk : len;
    const T *p = x + o * len;
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int64_t r = r0 + threadIdx.x, step = blockDim.x;
    for (; r + 3 * step < r1; r += 4 * step) {
      a0 += r_term(ldd(p[r]), op);
      a1 += r_term(ldd(p[r + step]), op);
      a2 += r_term(ldd(p[r + 2 * step]), op);
      a3 += r_term(ldd(p[r + 3 * step]), op);
    }
    for (; r < r1; r += step) a0 += r_term(ldd(p[r]), op);
    double acc = block_sum((a0 + a1) + (a2 + a3));
    if (threadIdx.x == 0) {
      if (nchunks == 1) y[o] = sto<T>(r_final(acc, op, len));
      else partial[t] = acc;
    }
  }
}

/* Second pass of the rows: y[o] = final(sum over c of partial[o * nchunks + c]). */
template <typename T>
__global__ void k_reduce_rows_finish(const double *partial, int64_t outer, int64_t nchunks, int64_t len, int op, T *y) {
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    double acc = 0.0;
    for (int64_t c = threadIdx.x; c < nchunks; c += blockDim.x) acc += partial[o * nchunks + c];
    acc = block_sum(acc);
    if (threadIdx.x == 0) y[o] = sto<T>(r_final(acc, op, len));
  }
}

/* Columns: x: (outer, len, inner), one thread per output (o, i), i fastest, so
   a warp reads consecutive addresses. blockIdx.y is the chunk of len; with
   one chunk the thread writes y[o, i], else partial[c, o * inner + i]. */
template <typename T>
__global__ void k_reduce_cols(const T *x, int64_t outer, int64_t len, int64_t inner, int64_t chunk, int64_t nchunks,
                              int op, double *partial, T *y) {
  int64_t nout = outer * inner, c = blockIdx.y;
  int64_t r0 = c * chunk, r1 = r0 + chunk < len ? r0 + chunk : len;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < nout; t += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = t / inner, i = t - o * inner;
    const T *p = x + o * len * inner + i;
    double a0 = 0.0, a1 = 0.0;
    int64_t r = r0;
    for (; r + 1 < r1; r += 2) {
      a0 += r_term(ldd(p[r * inner]), op);
      a1 += r_term(ldd(p[(r + 1) * inner]), op);
    }
    if (r < r1) a0 += r_term(ldd(p[r * inner]), op);
    double acc = a0 + a1;
    if (nchunks == 1) y[t] = sto<T>(r_final(acc, op, len));
    else partial[c * nout + t] = acc;
  }
}

/* Second pass of the columns: y[t] = final(sum over c of partial[c, t]). */
template <typename T>
__global__ void k_reduce_cols_finish(const double *partial, int64_t nout, int64_t nchunks, int64_t len, int op, T *y) {
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < nout; t += (int64_t)gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (int64_t c = 0; c < nchunks; c++) acc += partial[c * nout + t];
    y[t] = sto<T>(r_final(acc, op, len));
  }
}

/* Columns with a narrow inner (2..64) and few outputs, e.g. (10^6, 2) over dim 0: k_reduce_cols
   would keep 2 threads of each block busy, each striding through memory. Here the (len, inner)
   slab of one o is contiguous, so a block reads its rows r0..r1 as consecutive elements
   (coalesced); its blockDim.x threads (a multiple of inner) each keep one column,
   i = threadIdx.x % inner, and the block then adds up the threads of each column into
   partial[o * inner + i, c], one row of chunks per output, which k_reduce_rows_finish adds
   up a block per output (a thread per output walking 1024 partials one after another is
   slow for a few wide outputs, such as (10^6, 2)'s two).
   blockIdx.x is the chunk of rows, blockIdx.y is o. */
template <typename T>
__global__ void k_reduce_cols_narrow(const T *x, int64_t len, int64_t inner, int64_t chunk, int op, double *partial) {
  __shared__ double sh[kBlock];
  int64_t o = blockIdx.y, c = blockIdx.x, nchunks = gridDim.x;
  int64_t r0 = c * chunk, r1 = r0 + chunk < len ? r0 + chunk : len;
  const T *p = x + o * len * inner;
  double acc = 0.0;
  for (int64_t e = r0 * inner + threadIdx.x; e < r1 * inner; e += blockDim.x) acc += r_term(ldd(p[e]), op);
  if (inner <= 32 && (inner & (inner - 1)) == 0) {
    /* a power of two (the block is then kBlock threads, whole warps): lanes L and L + off,
       off a multiple of inner, keep the same column, so shuffles leave each warp's column
       sums in its lanes 0..inner-1, and the first inner threads add up the warps */
    for (int off = 16; off >= inner; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane < inner) sh[warp * inner + lane] = acc;
    __syncthreads();
    if (threadIdx.x < inner) {
      double sum = 0.0;
      for (unsigned w = 0; w < blockDim.x >> 5; w++) sum += sh[w * inner + threadIdx.x];
      partial[(o * inner + threadIdx.x) * nchunks + c] = sum;
    }
    return;
  }
  sh[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x < inner) {
    double sum = 0.0;
    for (unsigned k = threadIdx.x; k < blockDim.x; k += (unsigned)inner) sum += sh[k];
    partial[(o * inner + threadIdx.x) * nchunks + c] = sum;
  }
}

constexpr int64_t kMaxChunks = 1024;

/* How a reduction splits `len` rows of `per` elements each, for `outer` reductions side by side:
   enough blocks for 8 a multiprocessor, at least 4096 elements a block, at most kMaxChunks.
   Returns the number of chunks, and their rows in *chunk. */
int64_t split_rows(const DevState &s, int64_t outer, int64_t len, int64_t per, int64_t *chunk) {
  int64_t want_blocks = (int64_t)s.sms * 8;
  int64_t nchunks = (len * per + 4095) / 4096;
  int64_t by_gpu = (want_blocks + outer - 1) / outer;
  if (nchunks > by_gpu) nchunks = by_gpu;
  if (nchunks > kMaxChunks) nchunks = kMaxChunks;
  if (nchunks < 1) nchunks = 1;
  *chunk = (len + nchunks - 1) / nchunks;
  return (len + *chunk - 1) / *chunk;
}

template <typename T>
dt_status reduce_t(int dev, DevState &s, int op, int64_t outer, int64_t len, int64_t inner, const T *x, T *y) {
  cudaStream_t st = s.stream;
  double *partial = nullptr;
  void *ws = nullptr;
  dt_status rc;
  int64_t chunk, nchunks;
  if (inner == 1 && len > 32) {
    /* block per row (or per piece of a long row) */
    int block = len >= 2048 ? 256 : len >= 512 ? 128 : 64;
    nchunks = split_rows(s, outer, len, 1, &chunk);
    if (nchunks > 1) {
      if ((rc = cu_alloc(dev, (size_t)(outer * nchunks) * sizeof(double), &ws)) != DT_OK) return rc;
      partial = static_cast<double *>(ws);
    }
    int64_t tasks = outer * nchunks;
    unsigned grid = (unsigned)(tasks < kMaxGrid ? tasks : kMaxGrid);
    DT_LAUNCH_COOP(grid, block, st, k_reduce_rows<T>)(x, outer, len, chunk, nchunks, op, partial, y);
    rc = launched("reduce");
    if (rc == DT_OK && nchunks > 1) {
      unsigned g2 = (unsigned)(outer < kMaxGrid ? outer : kMaxGrid);
      int b2 = nchunks >= 256 ? 256 : nchunks >= 128 ? 128 : 64;
      DT_LAUNCH_COOP(g2, b2, st, k_reduce_rows_finish<T>)(partial, outer, nchunks, len, op, y);
      rc = launched("reduce (second pass)");
    }
  } else if (inner >= 2 && inner <= 64 && outer <= 65535 && outer * inner < (int64_t)s.sms * 1024 && len * inner >= 8192) {
    /* narrow columns, few outputs: blocks over chunks of rows of each slab, then the second pass */
    int64_t nout = outer * inner;
    int block = (int)((kBlock / inner) * inner);
    nchunks = split_rows(s, outer, len, inner, &chunk);
    if ((rc = cu_alloc(dev, (size_t)(nout * nchunks) * sizeof(double), &ws)) != DT_OK) return rc;
    partial = static_cast<double *>(ws);
    dim3 grid((unsigned)nchunks, (unsigned)outer);
    DT_LAUNCH_COOP(grid, block, st, k_reduce_cols_narrow<T>)(x, len, inner, chunk, op, partial);
    rc = launched("reduce");
    if (rc == DT_OK) { /* partial is (nout, nchunks): a block per output adds up its chunks */
      int b2 = nchunks >= 256 ? 256 : nchunks >= 128 ? 128 : 64;
      DT_LAUNCH_COOP((unsigned)(nout < kMaxGrid ? nout : kMaxGrid), b2, st, k_reduce_rows_finish<T>)(partial, nout, nchunks, len, op, y);
      rc = launched("reduce (second pass)");
    }
  } else {
    /* thread per output; split len over blockIdx.y when there are few outputs */
    int64_t nout = outer * inner;
    int64_t want_threads = (int64_t)s.sms * 2048;
    nchunks = 1;
    if (nout < want_threads / 2 && len > 64) {
      nchunks = (want_threads + nout - 1) / nout;
      int64_t by_len = (len + 31) / 32; /* at least 32 rows a chunk */
      if (nchunks > by_len) nchunks = by_len;
      if (nchunks > kMaxChunks) nchunks = kMaxChunks;
      if (nchunks < 1) nchunks = 1;
    }
    chunk = len > 0 ? (len + nchunks - 1) / nchunks : 0;
    if (len > 0) nchunks = (len + chunk - 1) / chunk;
    if (nchunks > 1) {
      if ((rc = cu_alloc(dev, (size_t)(nout * nchunks) * sizeof(double), &ws)) != DT_OK) return rc;
      partial = static_cast<double *>(ws);
    }
    dim3 grid(grid_for(nout, kBlock), (unsigned)nchunks);
    DT_LAUNCH(grid, kBlock, st, k_reduce_cols<T>)(x, outer, len, inner, chunk, nchunks, op, partial, y);
    rc = launched("reduce");
    if (rc == DT_OK && nchunks > 1) {
      DT_LAUNCH(grid_for(nout, kBlock), kBlock, st, k_reduce_cols_finish<T>)(partial, nout, nchunks, len, op, y);
      rc = launched("reduce (second pass)");
    }
  }
  /* back to the cache now: later work on this stream comes after these kernels */
  if (ws) cu_free(dev, ws, 0);
  return rc;
}

dt_status cu_reduce(int dev, dt__reduce_op op, dt_dtype t, int64_t outer, int64_t len, int64_t inner, const void *x, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (outer <= 0 || inner <= 0) return DT_OK;
  return by_float_half(t, "reduce", [&](auto z) {
    using T = decltype(z);
    return reduce_t<T>(dev, *in.s, (int)op, outer, len, inner, static_cast<const T *>(x), static_cast<T *>(y));
  });
}
