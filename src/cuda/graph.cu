/* Graphs: CUDA stream capture of the device's stream (dt_graph_begin .. dt_graph_end), a
   cudaGraphExec that dt_graph_replay launches on that stream.
   - Mode: cudaStreamCaptureModeThreadLocal. The core refuses every synchronizing call on a
     captured device from any thread before it is issued (src/core/graph.c), so the runtime's
     own check need only cover the capturing thread; the global mode would also fail other
     threads' unrelated calls (a cudaFree on another device) while a capture runs. The
     capturing thread's own calls on other devices run with its interaction mode relaxed
     (t_capturing, Entered): CUDA forbids that thread the unsafe calls on every device.
   - Memory: the core keeps the tensors a capture may use (see there); the scratch blocks a
     call takes from the caching allocator and gives back inside itself (the reductions'
     workspaces) stay in the capture's own list (DevState::cap_kept) instead of the cache, are
     reused by later calls of the same capture, and go with the graph until dt_graph_free.
   - cuBLAS runs on the device's stream with the workspace the allocator gave it
     (cublasSetWorkspace, as PyTorch does), so it allocates nothing while captured; the handle
     and the error records the kernels write are made before the capture begins, and so is
     cuDNN's handle (its workspaces come from the allocator). */

struct CuGraph {
  cudaGraphExec_t exec = nullptr;
  std::vector<std::pair<size_t, void *>> kept; /* scratch blocks the captured calls use */
};

/* Blocks a graph kept go back: to the cache, or to a capture in progress (its work may use
   them from now on). Call under s.mu. */
void graph_return_blocks(DevState &s, std::vector<std::pair<size_t, void *>> &blocks) {
  for (auto &b : blocks) {
    try {
      if (s.capturing) s.cap_kept.emplace(b.first, b.second);
      else s.cache.emplace(b.first, b.second);
    } catch (...) { /* no room in the map: give it to CUDA (none of these calls is captured) */
      if (cudaFree(b.second) != cudaSuccess) (void)cudaGetLastError();
      s.reserved -= b.first;
    }
  }
  blocks.clear();
}

#ifdef DEVTENSOR_CUDNN
dt_status cudnn_before_capture(int dev, DevState &s); /* src/cuda/cudnn.cu */
#endif

dt_status cu_graph_begin(int dev) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  DevState &s = *in.s;
  cublasHandle_t h;
  int64_t *rec = nullptr;
  IndexErr *ie = nullptr;
  dt_status st;
  if ((st = blas_handle(dev, s, &h)) != DT_OK || (st = label_record(dev, s, &rec)) != DT_OK ||
      (st = index_err_record(dev, s, &ie)) != DT_OK)
    return st;
#ifdef DEVTENSOR_CUDNN
  if ((st = cudnn_before_capture(dev, s)) != DT_OK) return st;
#endif
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.capturing = true;
    s.cap_failed = false;
  }
  cudaError_t e = cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    std::lock_guard<std::mutex> lk(s.mu);
    s.capturing = false;
    return cuda_fail("cudaStreamBeginCapture", e);
  }
  t_capturing |= (uint64_t)1 << dev;
  return DT_OK;
}

dt_status cu_graph_end(int dev, void **out) {
  *out = nullptr;
  Entered in(dev);
  if (!in.ok()) return in.status();
  DevState &s = *in.s;
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamEndCapture(s.stream, &graph);
  t_capturing &= ~((uint64_t)1 << dev);
  CuGraph *g = new (std::nothrow) CuGraph;
  std::lock_guard<std::mutex> lk(s.mu);
  s.capturing = false;
  dt_status st = DT_OK;
  if (e != cudaSuccess) st = cuda_fail("cudaStreamEndCapture", e);
  else if (s.cap_failed) {
    set_err("out of host memory in the CUDA allocator's bookkeeping during the capture");
    st = DT_ERR_OUT_OF_MEMORY;
  } else if (!g) {
    set_err("out of host memory making a graph");
    st = DT_ERR_OUT_OF_MEMORY;
  } else if ((e = cudaGraphInstantiateWithFlags(&g->exec, graph, 0)) != cudaSuccess) {
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      set_err("out of memory on cuda:%d instantiating a graph", dev);
      st = DT_ERR_OUT_OF_MEMORY;
    } else {
      st = cuda_fail("cudaGraphInstantiateWithFlags", e);
    }
  }
  if (graph && cudaGraphDestroy(graph) != cudaSuccess) (void)cudaGetLastError();
  std::vector<std::pair<size_t, void *>> kept;
  try {
    kept.reserve(s.cap_kept.size());
    for (auto &b : s.cap_kept) kept.emplace_back(b.first, b.second);
  } catch (...) {
    if (st == DT_OK) { set_err("out of host memory making a graph"); st = DT_ERR_OUT_OF_MEMORY; }
    for (auto &b : s.cap_kept) { /* nothing ran: the cache may have them */
      if (cudaFree(b.second) != cudaSuccess) (void)cudaGetLastError();
      s.reserved -= b.first;
    }
    s.cap_kept.clear();
  }
  s.cap_kept.clear();
  if (st != DT_OK) {
    graph_return_blocks(s, kept); /* nothing of the capture ever runs */
    if (g && g->exec && cudaGraphExecDestroy(g->exec) != cudaSuccess) (void)cudaGetLastError();
    delete g;
    return st;
  }
  g->kept.swap(kept);
  *out = g;
  return DT_OK;
}

/* the captured draws' base for the next replay (dt__rng_at) */
__global__ void k_set_gen(uint64_t *gen, uint64_t seed, uint64_t draw) {
  gen[0] = seed;
  gen[1] = draw;
}

dt_status cu_graph_replay(int dev, void *graph, uint64_t *gen, uint64_t seed, uint64_t draw) {
  CuGraph *g = static_cast<CuGraph *>(graph);
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (gen) {
    DT_LAUNCH(1, 1, in.s->stream, k_set_gen)(gen, seed, draw);
    dt_status st = launched("graph_replay");
    if (st != DT_OK) return st;
  }
  cudaError_t e = cudaGraphLaunch(g->exec, in.s->stream);
  if (e != cudaSuccess) return cuda_fail("cudaGraphLaunch", e);
  /* the captured kernels may have recorded a bad index or label: the next synchronizing call reads them */
  in.s->index_pending.store(true);
  in.s->label_pending.store(true);
  return DT_OK;
}

void cu_graph_free(int dev, void *graph) {
  CuGraph *g = static_cast<CuGraph *>(graph);
  if (!g) return;
  DeviceGuard dg(dev);
  if (g->exec && cudaGraphExecDestroy(g->exec) != cudaSuccess) (void)cudaGetLastError();
  {
    DevState &s = state(dev);
    std::lock_guard<std::mutex> lk(s.mu);
    graph_return_blocks(s, g->kept); /* replays queued before are ahead of any later use on the stream */
  }
  delete g;
}
