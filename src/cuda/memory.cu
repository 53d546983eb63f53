constexpr size_t kSmallMax = (size_t)1 << 20; /* up to here: size classes (round_size) */
constexpr size_t kSmallStep = 512;
constexpr size_t kLargeStep = (size_t)2 << 20;

/* Up to 1 MiB: size classes, four per power of two (512, 640, 768, 896, 1024,
   1280, ...; at most 25% over the request), so blocks freed by tensors of
   slightly different sizes serve each other (44 classes instead of 2048
   multiples of 512). Above: multiples of 2 MiB. */
size_t round_size(size_t n) {
  if (n <= kSmallStep) return kSmallStep;
  if (n <= kSmallMax) {
    size_t p = kSmallStep; /* the largest power of two below n */
    while (p * 2 < n) p *= 2;
    size_t step = p / 4;
    return (n + step - 1) / step * step;
  }
  if (n > SIZE_MAX - kLargeStep) return n; /* cannot be had anyway; cudaMalloc says so */
  return (n + kLargeStep - 1) & ~(kLargeStep - 1);
}

/* DEVTENSOR_CUDA_NO_CACHE=1 (read once): every block straight from cudaMalloc and
   back with cudaFree, exact sizes, so compute-sanitizer sees every overrun and
   use after free (as PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING). Slow. */
bool no_cache() {
  static const bool off = [] {
    const char *v = getenv("DEVTENSOR_CUDA_NO_CACHE");
    return v && *v && strcmp(v, "0") != 0;
  }();
  return off;
}

/* Records p as handed out. The map insertion is the only step that can throw
   (std::bad_alloc), and it comes first: if it throws, nothing has changed. */
void hand_out(DevState &s, void *p, size_t size) {
  s.live.emplace(p, size);
  s.allocated += size;
  if (s.allocated > s.peak) s.peak = s.allocated;
}

/* Hands out a cached block of `want` bytes or a little more, if there is one. */
bool cache_take(DevState &s, size_t want, void **p) {
  auto it = s.cache.lower_bound(want);
  if (it == s.cache.end()) return false;
  if (want <= kSmallMax ? it->first != want : it->first > want + want / 8) return false;
  hand_out(s, it->second, it->first);
  *p = it->second;
  s.cache.erase(it);
  return true;
}

/* cudaFree of every cached block; the stream must have drained. Call under s.mu. */
cudaError_t release_cache(DevState &s) {
  cudaError_t first = cudaSuccess;
  for (auto &b : s.cache) {
    cudaError_t e = cudaFree(b.second);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      if (first == cudaSuccess) first = e;
    }
    s.reserved -= b.first;
  }
  s.cache.clear();
  return first;
}

/* Empties the cache once the stream has drained. Call under s.mu with the device current. */
dt_status drop_cache(DevState &s) {
  dt_status st = sync_stream(s);
  if (st != DT_OK) return st;
  cudaError_t e = release_cache(s);
  return e == cudaSuccess ? DT_OK : cuda_fail("cudaFree", e);
}

/* Straight back to CUDA once the work queued on the block is done (cudaFree alone may not wait);
   errors are dropped. Call under s.mu. */
void free_now(int dev, DevState &s, void *p, size_t size) {
  DeviceGuard g(dev);
  RelaxCapture relax(captures_other(dev)); /* (this device is not captured: see cu_free) */
  if (g.error() != cudaSuccess || (s.stream && cudaStreamSynchronize(s.stream) != cudaSuccess) || cudaFree(p) != cudaSuccess)
    (void)cudaGetLastError();
  s.reserved -= size;
}

dt_status cu_alloc(int dev, size_t nbytes, void **out) {
  size_t want = no_cache() ? (nbytes ? nbytes : 1) : round_size(nbytes);
  void *p = nullptr;
  try {
    DevState &s0 = state(dev);
    {
      std::lock_guard<std::mutex> lk(s0.mu);
      if (s0.capturing) { /* a block this capture gave back: its own work is ordered on the stream */
        auto it = s0.cap_kept.find(want);
        if (it != s0.cap_kept.end()) {
          hand_out(s0, it->second, it->first);
          *out = it->second;
          s0.cap_kept.erase(it);
          return DT_OK;
        }
      }
      if (cache_take(s0, want, &p)) {
        *out = p;
        return DT_OK;
      }
    }
    Entered in(dev);
    if (!in.ok()) return in.status();
    std::lock_guard<std::mutex> lk(in.s->mu);
    if (cache_take(*in.s, want, &p)) { /* another thread freed one meanwhile */
      *out = p;
      return DT_OK;
    }
    RelaxCapture relax(in.s->capturing);
    cudaError_t e = cudaMalloc(&p, want);
    if (e == cudaErrorMemoryAllocation && !in.s->capturing) { /* (cudaFree is not allowed in a capture) */
      size_t fr = 0, tot = 0;
      (void)cudaGetLastError();
      if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) { (void)cudaGetLastError(); tot = SIZE_MAX; }
      if (!in.s->cache.empty() && want <= tot) {
        /* free the cache and try once more */
        dt_status st = drop_cache(*in.s);
        if (st != DT_OK) return st;
        e = cudaMalloc(&p, want);
      }
    }
    if (e != cudaSuccess) {
      char a[32], b[32], c[32], d[32];
      size_t fr = 0, tot = 0;
      bool info;
      (void)cudaGetLastError();
      info = cudaMemGetInfo(&fr, &tot) == cudaSuccess;
      if (!info) (void)cudaGetLastError();
      /* an absurd size may come back as "invalid argument": it is still out of memory */
      if (e != cudaErrorMemoryAllocation && !(e == cudaErrorInvalidValue && info && want > tot))
        return cuda_fail("cudaMalloc", e);
      /* as PyTorch's message does, what devtensor holds is split into live blocks and its cache */
      char l[32], k[32];
      dt__bytes_str((double)in.s->allocated, l, sizeof l);
      dt__bytes_str((double)(in.s->reserved - (in.s->allocated < in.s->reserved ? in.s->allocated : in.s->reserved)), k, sizeof k);
      if (info)
        set_err("out of memory on cuda:%d: tried to allocate %s; %s total, %s free, %s held by devtensor (%s in use, %s cached)", dev,
                dt__bytes_str((double)nbytes, a, sizeof a), dt__bytes_str((double)tot, b, sizeof b),
                dt__bytes_str((double)fr, c, sizeof c), dt__bytes_str((double)in.s->reserved, d, sizeof d), l, k);
      else
        set_err("out of memory on cuda:%d: tried to allocate %s; %s held by devtensor (%s in use, %s cached)", dev,
                dt__bytes_str((double)nbytes, a, sizeof a), dt__bytes_str((double)in.s->reserved, d, sizeof d), l, k);
      return DT_ERR_OUT_OF_MEMORY;
    }
    try {
      hand_out(*in.s, p, want);
    } catch (...) { /* no room to record it: give it back rather than lose it */
      if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
      throw;
    }
    in.s->reserved += want;
    *out = p;
    return DT_OK;
  } catch (...) { /* std::bad_alloc from the bookkeeping, before any block changed hands */
    set_err("out of host memory in the CUDA allocator's bookkeeping");
    return DT_ERR_OUT_OF_MEMORY;
  }
}

/* Back to the cache; no CUDA call (see POLICIES for why reuse is safe). */
void cu_free(int dev, void *p, size_t nbytes) {
  (void)nbytes; /* the block's own size is known */
  if (!p) return;
  try {
    DevState &s = state(dev);
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.live.find(p);
    if (it == s.live.end()) return;
    size_t size = it->second;
    s.live.erase(it);
    s.allocated -= size;
    if (s.capturing) { /* captured work may still use it: the capture keeps it (see graph.cu) */
      try {
        s.cap_kept.emplace(size, p);
      } catch (...) {
        s.cap_failed = true; /* the capture fails; the block stays reserved, unused */
      }
      return;
    }
    if (no_cache()) {
      free_now(dev, s, p, size);
      return;
    }
    try {
      s.cache.emplace(size, p);
    } catch (...) { /* no room in the cache's map */
      free_now(dev, s, p, size);
    }
  } catch (...) {
  }
}

dt_status cu_memory_stats(int dev, dt_memory_stats *out) {
  DevState &s = state(dev);
  std::lock_guard<std::mutex> lk(s.mu);
  out->allocated = s.allocated;
  out->reserved = s.reserved;
  out->peak_allocated = s.peak;
  return DT_OK;
}

dt_status cu_empty_cache(int dev) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  std::lock_guard<std::mutex> lk(in.s->mu);
  return in.s->cache.empty() ? DT_OK : drop_cache(*in.s);
}
