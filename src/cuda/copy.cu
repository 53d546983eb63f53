/* Page-locked (or otherwise CUDA-known) host memory can be DMA'd directly. */
bool host_is_registered(const void *p) {
  cudaPointerAttributes a;
  memset(&a, 0, sizeof a);
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) { (void)cudaGetLastError(); return false; }
  return a.type != cudaMemoryTypeUnregistered;
}

/* Two pinned staging buffers and their events, made on first use; false when
   pinned memory cannot be had (copies then go unstaged). Call under stage_mu
   with the device current. */
bool stage_ready(DevState &s) {
  if (s.stage_tried) return s.stage_ok;
  s.stage_tried = true;
  for (int b = 0; b < 2; b++) {
    if (cudaHostAlloc((void **)&s.stage[b], kStageBytes, cudaHostAllocPortable) != cudaSuccess ||
        cudaEventCreateWithFlags(&s.stage_ev[b], cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaGetLastError();
      for (int c = 0; c < 2; c++) {
        if (s.stage[c]) (void)cudaFreeHost(s.stage[c]);
        if (s.stage_ev[c]) (void)cudaEventDestroy(s.stage_ev[c]);
        s.stage[c] = nullptr;
        s.stage_ev[c] = nullptr;
      }
      (void)cudaGetLastError();
      return s.stage_ok = false;
    }
  }
  return s.stage_ok = true;
}

/* Bytes in staging chunk starting at `off` of an n-byte copy. */
size_t stage_len(size_t n, size_t off) { return n - off < kStageBytes ? n - off : kStageBytes; }

/* A copy between the host and device `dev` that has finished when it returns.
   Pageable `host` memory goes through the two pinned staging buffers
   (`staged`, under stage_mu); page-locked memory, or no staging buffers, one
   direct copy and a wait. `what` names the direct copy in errors. */
template <class Staged>
dt_status copy_host(int dev, const void *host, void *dst, const void *src, size_t n, const char *what, Staged staged) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (!host_is_registered(host)) {
    std::lock_guard<std::mutex> lk(in.s->stage_mu);
    if (stage_ready(*in.s)) return staged(*in.s);
  }
  cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, in.s->stream);
  if (e != cudaSuccess) return cuda_fail(what, e);
  return sync_stream(*in.s);
}

/* Host to device; returns once `src` may be reused. */
dt_status copy_h2d(int dev, void *dst, const void *src, size_t n) {
  return copy_host(dev, src, dst, src, n, "cudaMemcpyAsync (host to device)", [&](DevState &s) -> dt_status {
    const char *from = (const char *)src;
    char *to = (char *)dst;
    cudaError_t e;
    size_t off = 0;
    while (off < n) {
      /* alternate across calls too: a small copy made right after the previous one
         waits for the copy before that, not for the one just queued behind the work
         before it (a trainer copying each minibatch while the last step runs) */
      int b = s.stage_next;
      s.stage_next ^= 1;
      size_t len = stage_len(n, off);
      /* the DMA that last read buffer b has finished */
      if ((e = cudaEventSynchronize(s.stage_ev[b])) != cudaSuccess) return cuda_fail("cudaEventSynchronize", e);
      memcpy(s.stage[b], from + off, len);
      if ((e = cudaMemcpyAsync(to + off, s.stage[b], len, cudaMemcpyHostToDevice, s.stream)) != cudaSuccess)
        return cuda_fail("cudaMemcpyAsync (host to device)", e);
      if ((e = cudaEventRecord(s.stage_ev[b], s.stream)) != cudaSuccess) return cuda_fail("cudaEventRecord", e);
      off += len;
    }
    return DT_OK;
  });
}

/* Device to host, after the work queued on the device; waits. */
dt_status copy_d2h(void *dst, int dev, const void *src, size_t n) {
  return copy_host(dev, dst, dst, src, n, "cudaMemcpyAsync (device to host)", [&](DevState &s) -> dt_status {
    const char *from = (const char *)src;
    char *to = (char *)dst;
    size_t chunks = (n + kStageBytes - 1) / kStageBytes;
    dt_status st;
    /* DMA chunk c + 1 into one buffer while chunk c is copied out of the other */
    auto issue = [&](size_t c) -> dt_status {
      size_t off = c * kStageBytes;
      cudaError_t e = cudaMemcpyAsync(s.stage[c & 1], from + off, stage_len(n, off), cudaMemcpyDeviceToHost, s.stream);
      if (e != cudaSuccess) return cuda_fail("cudaMemcpyAsync (device to host)", e);
      if ((e = cudaEventRecord(s.stage_ev[c & 1], s.stream)) != cudaSuccess) return cuda_fail("cudaEventRecord", e);
      return DT_OK;
    };
    if ((st = issue(0)) != DT_OK) return st;
    for (size_t c = 0; c < chunks; c++) {
      size_t off = c * kStageBytes;
      cudaError_t e;
      if (c + 1 < chunks && (st = issue(c + 1)) != DT_OK) return st;
      if ((e = cudaEventSynchronize(s.stage_ev[c & 1])) != cudaSuccess) return cuda_fail("cudaEventSynchronize", e);
      memcpy(to + off, s.stage[c & 1], stage_len(n, off));
    }
    return DT_OK;
  });
}

std::mutex g_peer_mu;
unsigned char g_peer_tried[kMaxDevices][kMaxDevices];

/* Lets `from` reach `to`'s memory directly where the hardware allows; once. */
void enable_peer(DeviceGuard &g, int from, int to) {
  std::lock_guard<std::mutex> lk(g_peer_mu);
  if (g_peer_tried[from][to]) return;
  g_peer_tried[from][to] = 1;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess) { (void)cudaGetLastError(); return; }
  if (!can || g.set(from) != cudaSuccess) return;
  cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e != cudaSuccess) (void)cudaGetLastError(); /* already enabled, or not possible: the copy still works */
}

/* GPU to GPU: on dst's stream after src's queued work; src's stream then waits
   for the copy, so a block freed on src is not reused under it. */
dt_status copy_peer(int dd, void *dst, int sd, const void *src, size_t n) {
  Entered in(sd);
  DeviceGuard &g = in.g;
  DevState *S = in.s, *D;
  cudaEvent_t evs = nullptr, evd = nullptr;
  cudaError_t e;
  dt_status st;
  if (!in.ok()) return in.status();
  if ((e = g.set(dd)) != cudaSuccess) return cuda_fail("cudaSetDevice", e);
  if ((st = ready(dd, &D)) != DT_OK) return st;
  enable_peer(g, dd, sd);
  enable_peer(g, sd, dd);
  const char *what = nullptr;
  if ((e = g.set(sd)) != cudaSuccess) { what = "cudaSetDevice"; goto done; }
  if ((e = cudaEventCreateWithFlags(&evs, cudaEventDisableTiming)) != cudaSuccess) { what = "cudaEventCreate"; goto done; }
  if ((e = cudaEventRecord(evs, S->stream)) != cudaSuccess) { what = "cudaEventRecord"; goto done; }
  if ((e = g.set(dd)) != cudaSuccess) { what = "cudaSetDevice"; goto done; }
  if ((e = cudaEventCreateWithFlags(&evd, cudaEventDisableTiming)) != cudaSuccess) { what = "cudaEventCreate"; goto done; }
  if ((e = cudaStreamWaitEvent(D->stream, evs, 0)) != cudaSuccess) { what = "cudaStreamWaitEvent"; goto done; }
  if ((e = cudaMemcpyPeerAsync(dst, dd, src, sd, n, D->stream)) != cudaSuccess) { what = "cudaMemcpyPeerAsync"; goto done; }
  if ((e = cudaEventRecord(evd, D->stream)) != cudaSuccess) { what = "cudaEventRecord"; goto done; }
  if ((e = g.set(sd)) != cudaSuccess) { what = "cudaSetDevice"; goto done; }
  if ((e = cudaStreamWaitEvent(S->stream, evd, 0)) != cudaSuccess) { what = "cudaStreamWaitEvent"; goto done; }
done:
  if (what) (void)cudaGetLastError();
  /* destroying an event with work pending is fine: it is released once done */
  if (evs && g.set(sd) == cudaSuccess) (void)cudaEventDestroy(evs);
  if (evd && g.set(dd) == cudaSuccess) (void)cudaEventDestroy(evd);
  (void)cudaGetLastError();
  return what ? cuda_fail(what, e) : DT_OK;
}

dt_status cu_copy(int dst_dev, void *dst, int src_dev, const void *src, size_t n) {
  if (n == 0) return DT_OK;
  if (dst_dev < 0 && src_dev < 0) { memmove(dst, src, n); return DT_OK; }
  if (src_dev < 0) return copy_h2d(dst_dev, dst, src, n);
  if (dst_dev < 0 && state(src_dev).index_pending.load(std::memory_order_acquire)) {
    /* a dt_index_select ran since the last check: a bad index fails the copy before it writes */
    Entered in(src_dev);
    dt_status st = in.ok() ? index_errors(src_dev, *in.s) : in.status();
    if (st != DT_OK) return st;
  }
  if (dst_dev < 0) {
    if (state(src_dev).label_pending.load(std::memory_order_acquire)) { /* a bad label fails the copy, which writes nothing */
      Entered in(src_dev);
      dt_status st = in.ok() ? labels_report(src_dev, *in.s) : in.status();
      if (st != DT_OK) return st;
    }
    return copy_d2h(dst, src_dev, src, n);
  }
  if (dst_dev != src_dev) return copy_peer(dst_dev, dst, src_dev, src, n);
  if (dst == src) return DT_OK; /* dt_copy_(t, t): cudaMemcpy forbids overlapping ranges */
  Entered in(dst_dev);
  if (!in.ok()) return in.status();
  cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, in.s->stream);
  return e == cudaSuccess ? DT_OK : cuda_fail("cudaMemcpyAsync (device to device)", e);
}
