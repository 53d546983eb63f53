/* The collectives of dt_all_reduce_ / dt_broadcast_ for GPU tensors and the trainer's
   replicas: NCCL communicators, one per device, and one grouped call per collective
   (ncclGroupStart/End around one call per communicator, each on its device's stream).
   Built only with DEVTENSOR_NCCL (link -lnccl); without it every entry says so. */
#ifdef DEVTENSOR_NCCL
static_assert(sizeof(ncclUniqueId) == 128, "the core passes NCCL's unique id as 128 bytes");

dt_status nccl_fail(const char *what, ncclResult_t r) {
  (void)cudaGetLastError();
  set_err("%s failed: %s", what, ncclGetErrorString(r));
  return DT_ERR_BACKEND;
}

/* NCCL's type for t. Halves reduce in NCCL's own ncclFloat16 and ncclBfloat16, rounding to the
   type at each step as PyTorch's NCCL all_reduce does. Both, and ncclAvg, came with NCCL 2.10
   (2021; CUDA 12's NCCL is newer). */
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE < 21000
#error "DEVTENSOR_NCCL needs NCCL 2.10 or newer (ncclBfloat16, ncclAvg)"
#endif
dt_status nccl_type(dt_dtype t, ncclDataType_t *out) {
  switch (t) {
    case DT_F32: *out = ncclFloat32; return DT_OK;
    case DT_F64: *out = ncclFloat64; return DT_OK;
    case DT_I32: *out = ncclInt32; return DT_OK;
    case DT_I64: *out = ncclInt64; return DT_OK;
    case DT_U8: case DT_BOOL: *out = ncclUint8; return DT_OK; /* bools are 0 or 1: MAX is OR, MIN is AND */
    case DT_F16: *out = ncclFloat16; return DT_OK;
    case DT_BF16: *out = ncclBfloat16; return DT_OK;
  }
  set_err("NCCL collectives are not defined for %s", dt__dtype_str(t));
  return DT_ERR_DTYPE;
}

dt_status cu_dist_unique_id(void *id) {
  ncclResult_t r = ncclGetUniqueId((ncclUniqueId *)id);
  return r == ncclSuccess ? DT_OK : nccl_fail("ncclGetUniqueId", r);
}

dt_status cu_dist_comm_init(int dev, int nranks, int rank, const void *id, void **comm) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  ncclUniqueId uid;
  memcpy(&uid, id, sizeof uid);
  ncclComm_t c = nullptr;
  ncclResult_t r = ncclCommInitRank(&c, nranks, uid, rank);
  if (r != ncclSuccess) return nccl_fail("ncclCommInitRank", r);
  *comm = (void *)c;
  return DT_OK;
}

dt_status cu_dist_comm_init_all(int ndev, const int *devs, void **comms) {
  ncclComm_t c[kMaxDevices];
  if (ndev <= 0 || ndev > kMaxDevices) { set_err("ncclCommInitAll: %d devices (1 to %d)", ndev, kMaxDevices); return DT_ERR_INVALID_ARGUMENT; }
  for (int i = 0; i < ndev; i++) { /* every device's context and stream first */
    Entered in(devs[i]);
    if (!in.ok()) return in.status();
  }
  ncclResult_t r = ncclCommInitAll(c, ndev, devs);
  if (r != ncclSuccess) return nccl_fail("ncclCommInitAll", r);
  for (int i = 0; i < ndev; i++) comms[i] = (void *)c[i];
  return DT_OK;
}

void cu_dist_comm_free(void *comm) { if (comm) (void)ncclCommDestroy((ncclComm_t)comm); }

/* One grouped call: collective(i) for every communicator i, on device devs[i]'s stream. */
template <class F>
dt_status nccl_grouped(const char *what, int ncomm, const int *devs, F collective) {
  DevState *st[kMaxDevices];
  if (ncomm <= 0 || ncomm > kMaxDevices) { set_err("%s: %d communicators (1 to %d)", what, ncomm, kMaxDevices); return DT_ERR_INVALID_ARGUMENT; }
  for (int i = 0; i < ncomm; i++) {
    Entered in(devs[i]);
    if (!in.ok()) return in.status();
    st[i] = in.s;
  }
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return nccl_fail("ncclGroupStart", r);
  ncclResult_t first = ncclSuccess;
  for (int i = 0; i < ncomm; i++) {
    DeviceGuard g(devs[i]);
    r = collective(i, (cudaStream_t)st[i]->stream);
    if (r != ncclSuccess && first == ncclSuccess) first = r;
  }
  r = ncclGroupEnd();
  if (first != ncclSuccess) return nccl_fail(what, first);
  if (r != ncclSuccess) return nccl_fail("ncclGroupEnd", r);
  return DT_OK;
}

dt_status cu_dist_all_reduce(int ncomm, void *const *comms, const int *devs, dt_dtype t, int op, int64_t n, void *const *bufs) {
  ncclDataType_t ty;
  dt_status st = nccl_type(t, &ty);
  if (st != DT_OK) return st;
  ncclRedOp_t o = op == DT_REDUCE_AVG ? ncclAvg : op == DT_REDUCE_MAX ? ncclMax : op == DT_REDUCE_MIN ? ncclMin : ncclSum;
  return nccl_grouped("ncclAllReduce", ncomm, devs, [&](int i, cudaStream_t stream) {
    return ncclAllReduce(bufs[i], bufs[i], (size_t)n, ty, o, (ncclComm_t)comms[i], stream);
  });
}

dt_status cu_dist_broadcast(int ncomm, void *const *comms, const int *devs, dt_dtype t, int64_t n, void *const *bufs, int root) {
  ncclDataType_t ty;
  dt_status st = nccl_type(t, &ty);
  if (st != DT_OK) return st;
  return nccl_grouped("ncclBroadcast", ncomm, devs, [&](int i, cudaStream_t stream) {
    return ncclBroadcast(bufs[i], bufs[i], (size_t)n, ty, root, (ncclComm_t)comms[i], stream);
  });
}
#else
dt_status no_nccl() {
  set_err("devtensor_cuda.cu was built without NCCL (compile it with -DDEVTENSOR_NCCL and link -lnccl)");
  return DT_ERR_UNSUPPORTED;
}
dt_status cu_dist_unique_id(void *) { return no_nccl(); }
dt_status cu_dist_comm_init(int, int, int, const void *, void **) { return no_nccl(); }
dt_status cu_dist_comm_init_all(int, const int *, void **) { return no_nccl(); }
void cu_dist_comm_free(void *) {}
dt_status cu_dist_all_reduce(int, void *const *, const int *, dt_dtype, int, int64_t, void *const *) { return no_nccl(); }
dt_status cu_dist_broadcast(int, void *const *, const int *, dt_dtype, int64_t, void *const *, int) { return no_nccl(); }
#endif
