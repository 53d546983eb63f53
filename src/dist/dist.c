/* dt_dist_* and the collectives. The world is set up once by dt_dist_init: without
   DEVTENSOR_MPI it is this process alone; with it, a duplicate of MPI_COMM_WORLD whose
   errors return (MPI_ERRORS_RETURN) instead of aborting. Every collective first agrees
   on what it is about to do: one nonblocking MPI_Iallreduce (MAX) of (kind, count,
   dtype, op or root, device type) and their negations gives every rank the largest and
   smallest of each, so a mismatch is seen on every rank and refused before any data
   moves, and a rank that never arrives is waited for at most DT_DIST_TIMEOUT seconds.
   Then CPU tensors go through MPI_Allreduce / MPI_Bcast, GPU tensors through the CUDA
   backend's NCCL communicator (dist_* slots) on the device's stream. */
#ifdef DEVTENSOR_MPI
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1 /* Open MPI's C++ bindings: not wanted, and they need the C++ runtime */
#endif
#include <mpi.h>
#endif

static int dt__dist_on;              /* dt_dist_init succeeded and no dt_dist_finalize since */
static int dt__dist_rank_v, dt__dist_size_v = 1;
static dt_device dt__dist_dev;
#ifdef DEVTENSOR_MPI
static MPI_Comm dt__dist_comm;
static int dt__dist_started_mpi;     /* dt_dist_init called MPI_Init_thread */
static void *dt__dist_nccl;          /* the CUDA backend's communicator for dt__dist_dev, or NULL */
#endif

/* An environment variable as a positive integer, else 0 (unset, not a number, or 0). */
static long dt__env_long(const char *name) {
  const char *v = getenv(name);
  char *end = NULL;
  long x;
  if (!v || !*v) return 0;
  x = strtol(v, &end, 10);
  return end && *end == 0 && x > 0 ? x : 0;
}

/* The world size the launcher announced (mpirun, srun/PMI, torchrun), or 0 when none did. */
static long dt__env_world(const char **which) {
  static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "WORLD_SIZE"};
  int i;
  for (i = 0; i < 4; i++) {
    long v = dt__env_long(names[i]);
    if (v > 0) { *which = names[i]; return v; }
  }
  return 0;
}

/* This rank's index among the ranks of its machine (LOCAL_RANK and the launchers' names). */
static long dt__env_local_rank(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK"};
  int i;
  for (i = 0; i < 3; i++) {
    const char *v = getenv(names[i]);
    if (v && *v) return strtol(v, NULL, 10) > 0 ? strtol(v, NULL, 10) : 0;
  }
  return 0;
}

static dt_device dt__dist_pick_device(long local) {
  const char *force = getenv("DT_DIST_DEVICE");   /* "cpu": every rank on the CPU, GPUs or not */
  int n = dt__gpu_count();
  if ((force && strcmp(force, "cpu") == 0) || n == 0) return dt_cpu();
  return dt_gpu((int)(local % n));
}

#ifdef DEVTENSOR_MPI
static dt_status dt__mpi_fail(const char *op, const char *what, int rc) {
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  msg[0] = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", rc);
  msg[len < MPI_MAX_ERROR_STRING ? (len > 0 ? len : 0) : MPI_MAX_ERROR_STRING] = 0;
  return dt__fail(DT_ERR_BACKEND, "%s: %s failed: %s", op, what, msg);
}
#endif

#ifdef DEVTENSOR_MPI
static dt_status dt__dist_init_mpi(const char *op, long env_world, const char *which);
#endif

DTDEF dt_status dt_dist_init(void) {
  const char *op = "dt_dist_init", *which = NULL;
  long env_world = dt__env_world(&which);
  if (dt__dist_on)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: already initialised (rank %d of %d); call dt_dist_finalize first", op,
                    dt__dist_rank_v, dt__dist_size_v);
#ifndef DEVTENSOR_MPI
  if (env_world > 1)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: this process is one of %ld ranks (%s=%ld), but devtensor was built without "
                    "DEVTENSOR_MPI: build with mpicc -DDEVTENSOR_MPI to train on more than one rank", op, env_world, which, env_world);
  dt__dist_rank_v = 0;
  dt__dist_size_v = 1;
  dt__dist_dev = dt__dist_pick_device(dt__env_local_rank());
  dt__dist_on = 1;
  return DT_OK;
#else
  {
    dt_status s = dt__dist_init_mpi(op, env_world, which);
    if (s != DT_OK && dt__dist_started_mpi) { /* nothing was set up: MPI goes as it came */
      MPI_Finalize();
      dt__dist_started_mpi = 0;
    }
    return s;
  }
#endif
}

#ifdef DEVTENSOR_MPI
static dt_status dt__dist_init_mpi(const char *op, long env_world, const char *which) {
  {
    int inited = 0, finalized = 0, provided = 0, rc, rank = 0, size = 1;
    MPI_Comm comm = MPI_COMM_NULL;
    dt_device dev;
    MPI_Finalized(&finalized);
    if (finalized) return dt__fail(DT_ERR_UNSUPPORTED, "%s: MPI was finalized in this process and cannot start again", op);
    MPI_Initialized(&inited);
    if (!inited) {
      if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided)) != MPI_SUCCESS) return dt__mpi_fail(op, "MPI_Init_thread", rc);
      dt__dist_started_mpi = 1;
    }
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm)) != MPI_SUCCESS) return dt__mpi_fail(op, "MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (env_world > 0 && env_world != size) {
      MPI_Comm_free(&comm);
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s=%ld, but MPI sees %d process%s: launch the ranks with mpirun -np %ld", op,
                      which, env_world, size, size == 1 ? "" : "es", env_world);
    }
    dev = dt__dist_pick_device(dt__env_local_rank());
    dt__dist_nccl = NULL;
#ifdef DEVTENSOR_CUDA
    if (dev.type == DT_CUDA && size > 1) {
      /* NCCL: rank 0 makes the unique id, MPI carries it to the others; then every rank
         joins. All ranks learn whether every rank succeeded, so none waits for a failed
         one. A build without NCCL starts without it: CPU tensors work, GPU ones are refused. */
      const dt__backend *be = dt__cuda_backend();
      unsigned char id[128];
      int code = 0, ok = 1, all = 0; /* code, rank 0's: 0 an id, 1 no NCCL in this build, 2 NCCL failed */
      /* NCCL takes one GPU per rank: ranks of a machine with fewer GPUs than ranks would share one,
         and ncclCommInitRank would only say "invalid usage" (seen on a one-GPU H100 machine). Every
         rank learns first whether any rank is in that case. */
      long local = dt__env_local_rank();
      int gpus = dt__gpu_count(), shared = local >= gpus, any = shared;
      if ((rc = MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS) {
        MPI_Comm_free(&comm);
        return dt__mpi_fail(op, "MPI_Allreduce", rc);
      }
      if (any) {
        MPI_Comm_free(&comm);
        if (shared)
          return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: rank %d is local rank %ld of a machine with %d GPU%s, so it would share cuda:%ld with "
                          "another rank, and NCCL takes one GPU per rank: start at most %d rank%s per machine, or set DT_DIST_DEVICE=cpu",
                          op, rank, local, gpus, gpus == 1 ? "" : "s", local % gpus, gpus, gpus == 1 ? "" : "s");
        return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: another rank would share a GPU (its machine has more ranks than GPUs), and NCCL "
                        "takes one GPU per rank: start at most as many ranks per machine as it has GPUs, or set DT_DIST_DEVICE=cpu", op);
      }
      memset(id, 0, sizeof id);
      if (rank == 0) { dt_status st = be->dist_unique_id(id); code = st == DT_OK ? 0 : st == DT_ERR_UNSUPPORTED ? 1 : 2; }
      if ((rc = MPI_Bcast(&code, 1, MPI_INT, 0, comm)) == MPI_SUCCESS && code == 0)
        rc = MPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, comm);
      if (rc != MPI_SUCCESS) { MPI_Comm_free(&comm); return dt__mpi_fail(op, "MPI_Bcast of the NCCL id", rc); }
      if (code == 2) {
        const char *why = be->last_error();
        MPI_Comm_free(&comm);
        if (rank == 0) return dt__fail(DT_ERR_BACKEND, "%s: NCCL did not start: %s", op, why && why[0] ? why : "ncclGetUniqueId failed");
        return dt__fail(DT_ERR_BACKEND, "%s: NCCL did not start on rank 0 (its dt_last_error() says why)", op);
      }
      if (code == 0) {
        ok = be->dist_comm_init(dev.index, size, rank, id, &dt__dist_nccl) == DT_OK;
        all = ok;
        if ((rc = MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm)) != MPI_SUCCESS) all = 0;
        if (!all) {
          const char *why = be->last_error();
          if (dt__dist_nccl) be->dist_comm_free(dt__dist_nccl);
          dt__dist_nccl = NULL;
          MPI_Comm_free(&comm);
          if (!ok) return dt__fail(DT_ERR_BACKEND, "%s: NCCL did not start on rank %d: %s", op, rank, why && why[0] ? why : "unknown reason");
          return dt__fail(DT_ERR_BACKEND, "%s: NCCL did not start on another rank (this one, rank %d, was ready)", op, rank);
        }
      }
    }
#endif
    dt__dist_comm = comm;
    dt__dist_rank_v = rank;
    dt__dist_size_v = size;
    dt__dist_dev = dev;
    dt__dist_on = 1;
    return DT_OK;
  }
}
#endif

/* For the trainer: the world size (1 when none was set up) and this rank's device. */
static int dt__dist_world(dt_device *dev) {
  if (!dt__dist_on) return 1;
  if (dev) *dev = dt__dist_dev;
  return dt__dist_size_v;
}

/* For the trainer: rank 0's parameters and random generator on every rank. */
static dt_status dt__dist_start(const char *op, dt_module *m) {
  int i, np = dt_module_num_params(m);
  dt_tensor *g = dt__new(op, dt_shape1(2), DT_I64, dt_cpu());
  dt_status s = DT_OK;
  if (!g) return dt_last_status();
  dt__lock(&dt__rng_lock);
  ((int64_t *)g->st->ptr)[0] = (int64_t)dt__seed; ((int64_t *)g->st->ptr)[1] = (int64_t)dt__draw;
  dt__unlock(&dt__rng_lock);
  {
    const int grad_was = dt_set_grad_enabled(0); /* the parameters are leaves that require grad */
    for (i = 0; i < np && s == DT_OK; i++) s = dt_broadcast_(dt_module_param(m, i, NULL), 0);
    dt_set_grad_enabled(grad_was);
  }
  if (s == DT_OK && (s = dt_broadcast_(g, 0)) == DT_OK) {
    dt__lock(&dt__rng_lock);
    dt__seed = (uint64_t)((int64_t *)g->st->ptr)[0]; dt__draw = (uint64_t)((int64_t *)g->st->ptr)[1];
    dt__unlock(&dt__rng_lock);
  }
  dt_release(g);
  return s;
}

DTDEF int dt_dist_rank(void) { return dt__dist_on ? dt__dist_rank_v : 0; }
DTDEF int dt_dist_world_size(void) { return dt__dist_on ? dt__dist_size_v : 1; }
DTDEF dt_device dt_dist_device(void) { return dt__dist_on ? dt__dist_dev : dt__dist_pick_device(dt__env_local_rank()); }

DTDEF dt_status dt_dist_finalize(void) {
  if (!dt__dist_on) return DT_OK;
#ifdef DEVTENSOR_MPI
#ifdef DEVTENSOR_CUDA
  if (dt__dist_nccl) dt__cuda_backend()->dist_comm_free(dt__dist_nccl);
  dt__dist_nccl = NULL;
#endif
  MPI_Comm_free(&dt__dist_comm);
  if (dt__dist_started_mpi) {
    int rc = MPI_Finalize();
    dt__dist_started_mpi = 0;
    dt__dist_on = 0;
    if (rc != MPI_SUCCESS) return dt__fail(DT_ERR_BACKEND, "dt_dist_finalize: MPI_Finalize failed (error %d)", rc);
  }
#endif
  dt__dist_on = 0;
  dt__dist_rank_v = 0;
  dt__dist_size_v = 1;
  return DT_OK;
}

/* The checks every collective makes: initialised, a tensor, a known op, a dtype the op
   takes. Bool sums are ORs (as PyTorch's), AVG needs a float dtype. */
#ifdef DEVTENSOR_MPI
static int dt__dist_is_bool(dt_dtype t) { return t == DT_BOOL; }
#endif
static dt_status dt__dist_check(const char *op, const dt_tensor *t) {
  dt_status s;
  if (!dt__dist_on) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: call dt_dist_init first (no process group yet)", op);
  if ((s = dt__check_tensor(op, "t", t)) != DT_OK) return s;
  return DT_OK;
}

#ifdef DEVTENSOR_MPI
/* Waiting for a collective's request: MPI_Test in a loop, its cost growing with the wait.
   Two ranks that arrive together finish in a few microseconds, and Open MPI's nonblocking
   collectives progress only inside MPI_Test: a rank that sleeps delays every rank (a fixed
   2 ms sleep made single calls take milliseconds). So for DT__DIST_SPIN_US microseconds
   it polls with a pause instruction between tests (one core, briefly), then until
   DT__DIST_YIELD_US it yields the processor between tests (a rank sharing its core with
   another gets it at once), then it sleeps between tests, from DT__DIST_SLEEP_MIN_US
   doubling to DT__DIST_SLEEP_MAX_US, so a long wait (a slower rank, a straggler) costs
   about a thousand short wake-ups a second and answers within about a millisecond. The
   timeout is checked at every step. */
#ifndef DT__DIST_SPIN_US
#define DT__DIST_SPIN_US 100
#endif
#ifndef DT__DIST_YIELD_US
#define DT__DIST_YIELD_US 1000
#endif
#ifndef DT__DIST_SLEEP_MIN_US
#define DT__DIST_SLEEP_MIN_US 20
#endif
#ifndef DT__DIST_SLEEP_MAX_US
#define DT__DIST_SLEEP_MAX_US 1000
#endif
#if defined(_WIN32)
static void dt__dist_sleep_us(long us) { (void)us; dt__pause(64); } /* Sleep(1): Windows sleeps whole milliseconds */
#elif defined(__unix__) || defined(__unix) || defined(__APPLE__)
#include <sys/select.h>
static void dt__dist_sleep_us(long us) { /* select: microseconds, declared in every POSIX mode (nanosleep needs _POSIX_C_SOURCE) */
  struct timeval tv;
  tv.tv_sec = us / 1000000;
  tv.tv_usec = us % 1000000;
  (void)select(0, NULL, NULL, NULL, &tv);
}
#else
static void dt__dist_sleep_us(long us) { (void)us; dt__pause(0); }
#endif

/* Waits for req at most `limit` seconds from t0 (MPI_Wtime). */
static dt_status dt__dist_wait(const char *op, MPI_Request *req, double t0, double limit) {
  long sleep_us = DT__DIST_SLEEP_MIN_US;
  int done = 0, rc, k;
  for (;;) {
    double waited;
    if ((rc = MPI_Test(req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS) return dt__mpi_fail(op, "MPI_Test", rc);
    if (done) return DT_OK;
    waited = MPI_Wtime() - t0;
    if (waited > limit)
      /* the request stays pending: the communicator is unusable from here on, as after any
         failed collective; the program should end (mpirun then stops the other ranks) */
      return dt__fail(DT_ERR_BACKEND, "%s: rank %d waited %.0f s (DT_DIST_TIMEOUT) for the other ranks to reach this "
                      "collective; a rank has failed or is in another call. The process group is unusable now: end the program",
                      op, dt__dist_rank_v, limit);
    if (waited < DT__DIST_SPIN_US * 1e-6) {
      for (k = 0; k < 16; k++) DT__CPU_RELAX();
    } else if (waited < DT__DIST_YIELD_US * 1e-6) {
      dt__pause(0);
    } else {
      dt__dist_sleep_us(sleep_us);
      if (sleep_us < DT__DIST_SLEEP_MAX_US) sleep_us = 2 * sleep_us < DT__DIST_SLEEP_MAX_US ? 2 * sleep_us : DT__DIST_SLEEP_MAX_US;
    }
  }
}

/* Every rank learns the largest and smallest of each of the n (<= 8) values; waits at
   most DT_DIST_TIMEOUT seconds for the others. */
static dt_status dt__dist_agree(const char *op, const int64_t *v, int n, int64_t *mx, int64_t *mn) {
  int64_t buf[16];
  MPI_Request req;
  long timeout = dt__env_long("DT_DIST_TIMEOUT");
  double t0, limit = timeout > 0 ? (double)timeout : 300.0;
  int i, rc;
  dt_status s;
  for (i = 0; i < n; i++) { buf[i] = v[i]; buf[n + i] = v[i] == INT64_MIN ? INT64_MAX : -v[i]; }
  t0 = MPI_Wtime();
  if ((rc = MPI_Iallreduce(MPI_IN_PLACE, buf, 2 * n, MPI_INT64_T, MPI_MAX, dt__dist_comm, &req)) != MPI_SUCCESS)
    return dt__mpi_fail(op, "MPI_Iallreduce", rc);
  if ((s = dt__dist_wait(op, &req, t0, limit)) != DT_OK) return s;
  for (i = 0; i < n; i++) { mx[i] = buf[i]; mn[i] = -buf[n + i]; }
  return DT_OK;
}

static MPI_Datatype dt__mpi_type(dt_dtype t) {
  switch (t) {
    case DT_F32: return MPI_FLOAT;
    case DT_F64: return MPI_DOUBLE;
    case DT_I32: return MPI_INT32_T;
    case DT_I64: return MPI_INT64_T;
    case DT_U8: case DT_BOOL: return MPI_UINT8_T; /* bools are 0 or 1: MAX is OR, MIN is AND */
    case DT_F16: case DT_BF16: break; /* reduced as float32 (dt__dist_all_reduce_half), broadcast as bytes */
  }
  return MPI_BYTE; /* not reached: the dtype was checked */
}
#endif

/* What every rank must agree on before a collective moves data; `ready` 0: this rank could not
   get the host memory it needs (every rank refuses then, and none waits in MPI for it). */
static dt_status dt__dist_prelude(const char *op, const dt_tensor *t, int kind, int arg, int ready) {
#ifdef DEVTENSOR_MPI
  int64_t v[5], mx[5], mn[5];
  dt_status s;
  if (dt__dist_size_v == 1) return DT_OK;
  v[0] = kind; v[1] = t->numel; v[2] = (int64_t)t->dtype; v[3] = (int64_t)arg * 2 + (t->st->device.type == DT_CUDA);
  v[4] = ready != 0;
  if ((s = dt__dist_agree(op, v, 5, mx, mn)) != DT_OK) return s;
  if (mn[4] == 0) {
    if (!ready) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host for the float32 scratch (rank %d); nothing moved", op, dt__dist_rank_v);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host of another rank (its float32 scratch); nothing moved", op);
  }
  if (mx[0] != mn[0])
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the ranks are in different collectives (dt_all_reduce_ on some, dt_broadcast_ "
                    "on others): every rank calls the same collectives in the same order", op);
  if (mx[1] != mn[1])
    return dt__fail(DT_ERR_SHAPE, "%s: the ranks' tensors differ in size: from %lld to %lld elements (rank %d has %lld); "
                    "every rank passes a tensor of the same size", op, (long long)mn[1], (long long)mx[1], dt__dist_rank_v,
                    (long long)t->numel);
  if (mx[2] != mn[2])
    return dt__fail(DT_ERR_DTYPE, "%s: the ranks' tensors differ in dtype (rank %d has %s); every rank passes the same dtype",
                    op, dt__dist_rank_v, dt_dtype_name(t->dtype));
  if (mx[3] != mn[3]) {
    if ((mx[3] & 1) != (mn[3] & 1))
      return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: some ranks pass CPU tensors and others GPU tensors (rank %d's is on %s); "
                      "every rank's tensor is on dt_dist_device() or every rank's on the CPU", op, dt__dist_rank_v,
                      t->st->device.type == DT_CUDA ? "a GPU" : "the CPU");
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the ranks pass different %s (rank %d passes %s %d)", op,
                    kind == 1 ? "ops" : "roots", dt__dist_rank_v, kind == 1 ? "op" : "root", arg);
  }
  return DT_OK;
#else
  (void)op; (void)t; (void)kind; (void)arg; (void)ready;
  return DT_OK;
#endif
}

#if defined(DEVTENSOR_MPI) && defined(DEVTENSOR_CUDA)
/* A GPU tensor goes through this rank's NCCL communicator, on this rank's device only. */
static dt_status dt__dist_nccl_ready(const char *fn, const dt_tensor *t) {
  char d[48], e[48];
  if (!dt__dist_nccl)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: t is on %s, but this rank has no NCCL communicator (its device is %s; GPU "
                    "tensors need devtensor_cuda.cu compiled with -DDEVTENSOR_NCCL and -lnccl): dt_to the CPU and reduce there", fn,
                    dt_device_str(t->st->device, d, sizeof d), dt_device_str(dt__dist_dev, e, sizeof e));
  if (!dt_device_equal(t->st->device, dt__dist_dev))
    return dt__fail(DT_ERR_DEVICE_MISMATCH, "%s: t is on %s, but this rank's device is %s (dt_dist_device())", fn,
                    dt_device_str(t->st->device, d, sizeof d), dt_device_str(dt__dist_dev, e, sizeof e));
  return DT_OK;
}
#endif

#ifdef DEVTENSOR_MPI
/* Elements of a half tensor reduced per MPI call on the CPU: the float32 scratch's size. */
#ifndef DT__DIST_HALF_CHUNK
#define DT__DIST_HALF_CHUNK ((int64_t)1 << 20)
#endif

/* A float16 or bfloat16 CPU tensor all-reduced in float32, DT__DIST_HALF_CHUNK elements at a
   time through `scratch`: each chunk cast to float32, MPI_Allreduce in MPI_FLOAT, AVG's
   division in float32, then rounded once to the half dtype (to nearest even). Two ranks: the
   same bits as a sum (max, min) in the half dtype; more: one rounding where NCCL and Gloo
   round at each step. */
static dt_status dt__dist_all_reduce_half(const char *fn, dt_tensor *t, dt_reduce_op op, float *scratch) {
  const dt__backend *be = dt__be(t->st->device);
  MPI_Op mop = op == DT_REDUCE_MAX ? MPI_MAX : op == DT_REDUCE_MIN ? MPI_MIN : MPI_SUM;
  char *p = (char *)dt_data_ptr(t);
  int64_t at = 0;
  int rc;
  dt_status s;
  while (at < t->numel) {
    int64_t n = t->numel - at < DT__DIST_HALF_CHUNK ? t->numel - at : DT__DIST_HALF_CHUNK;
    char *h = p + (size_t)at * 2;
    if ((s = dt__run(fn, t->st->device, be->cast(0, t->dtype, DT_F32, n, h, scratch))) != DT_OK) return s;
    if ((rc = MPI_Allreduce(MPI_IN_PLACE, scratch, (int)n, MPI_FLOAT, mop, dt__dist_comm)) != MPI_SUCCESS)
      return dt__mpi_fail(fn, "MPI_Allreduce", rc);
    if (op == DT_REDUCE_AVG &&
        (s = dt__run(fn, t->st->device, be->unary(0, DT__U_AFFINE, DT_F32, n, scratch, scratch, 1.0 / (double)dt__dist_size_v, -0.0))) != DT_OK)
      return s;
    if ((s = dt__run(fn, t->st->device, be->cast(0, DT_F32, t->dtype, n, scratch, h))) != DT_OK) return s;
    at += n;
  }
  return DT_OK;
}
#endif

DTDEF dt_status dt_all_reduce_(dt_tensor *t, dt_reduce_op op) {
  const char *fn = "dt_all_reduce_";
  float *scratch = NULL;
  int need = 0;
  dt_status s;
  if ((s = dt__dist_check(fn, t)) != DT_OK) return s;
  if ((s = dt__inplace_check(fn, "t", t)) != DT_OK) return s;
  dt__bump(t); /* before: a collective that fails may have written part of t */
  if ((int)op < (int)DT_REDUCE_SUM || (int)op > (int)DT_REDUCE_MIN)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: unknown op %d (DT_REDUCE_SUM, _AVG, _MAX or _MIN)", fn, (int)op);
  if ((s = dt__check_dtype(fn, t->dtype)) != DT_OK) return s;
  if (op == DT_REDUCE_AVG && !dt__is_float(t->dtype) && !dt__is_half(t->dtype))
    return dt__fail(DT_ERR_DTYPE, "%s: DT_REDUCE_AVG needs a float dtype, t is %s (use DT_REDUCE_SUM, or dt_cast)", fn, dt_dtype_name(t->dtype));
  /* a half CPU tensor on several ranks: its float32 scratch before the ranks agree, so that a
     rank without the memory is known to every rank before any data moves */
#ifdef DEVTENSOR_MPI
  need = dt__dist_size_v > 1 && t->numel > 0 && dt__is_half(t->dtype) && t->st->device.type == DT_CPU;
  if (need) scratch = (float *)DT_MALLOC(sizeof(float) * (size_t)(t->numel < DT__DIST_HALF_CHUNK ? t->numel : DT__DIST_HALF_CHUNK));
#endif
  if ((s = dt__dist_prelude(fn, t, 1, (int)op, !need || scratch)) != DT_OK) {
    if (scratch) DT_FREE(scratch);
    return s;
  }
  /* one rank: the sum, mean, max and min of one value are that value */
  if (dt__dist_size_v == 1 || t->numel == 0) return DT_OK;
#ifdef DEVTENSOR_MPI
  if (scratch) {
    s = dt__dist_all_reduce_half(fn, t, op, scratch);
    DT_FREE(scratch);
    return s;
  }
  if (t->st->device.type == DT_CPU) {
    MPI_Op mop = op == DT_REDUCE_MAX ? MPI_MAX : op == DT_REDUCE_MIN ? MPI_MIN : MPI_SUM;
    char *p = (char *)dt_data_ptr(t);
    size_t es = dt_dtype_size(t->dtype);
    int64_t at = 0;
    int rc;
    if (dt__dist_is_bool(t->dtype) && op == DT_REDUCE_SUM) mop = MPI_MAX; /* a sum of bools is their OR (PyTorch's rule) */
    while (at < t->numel) {
      int64_t n = t->numel - at < (int64_t)(INT_MAX / 8) ? t->numel - at : (int64_t)(INT_MAX / 8);
      if ((rc = MPI_Allreduce(MPI_IN_PLACE, p + (size_t)at * es, (int)n, dt__mpi_type(t->dtype), mop, dt__dist_comm)) != MPI_SUCCESS)
        return dt__mpi_fail(fn, "MPI_Allreduce", rc);
      at += n;
    }
    if (op == DT_REDUCE_AVG)
      return dt__run(fn, t->st->device, dt__be(t->st->device)->unary(0, DT__U_AFFINE, t->dtype, t->numel, p, p,
                                                                       1.0 / (double)dt__dist_size_v, -0.0));
    return DT_OK;
  }
#ifdef DEVTENSOR_CUDA
  if ((s = dt__dist_nccl_ready(fn, t)) != DT_OK) return s;
  {
    void *ptr = dt_data_ptr(t);
    int o = (int)op;
    if (dt__dist_is_bool(t->dtype) && op == DT_REDUCE_SUM) o = (int)DT_REDUCE_MAX;
    return dt__run(fn, t->st->device, dt__cuda_backend()->dist_all_reduce(1, &dt__dist_nccl, &t->st->device.index, t->dtype,
                                                                         o, t->numel, &ptr));
  }
#endif
#endif
  return dt__fail(DT_ERR_UNSUPPORTED, "%s: no collective for tensors on this device in this build", fn);
}

DTDEF dt_status dt_broadcast_(dt_tensor *t, int root) {
  const char *fn = "dt_broadcast_";
  dt_status s;
  if ((s = dt__dist_check(fn, t)) != DT_OK) return s;
  if ((s = dt__inplace_check(fn, "t", t)) != DT_OK) return s;
  dt__bump(t); /* before: a collective that fails may have written part of t */
  if (root < 0 || root >= dt__dist_size_v) {
    if (dt__dist_size_v == 1) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: root %d is not a rank (the world has rank 0 only)", fn, root);
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: root %d is not a rank (the world has ranks 0 to %d)", fn, root, dt__dist_size_v - 1);
  }
  if ((s = dt__check_dtype(fn, t->dtype)) != DT_OK) return s;
  if ((s = dt__dist_prelude(fn, t, 2, root, 1)) != DT_OK) return s;
  if (dt__dist_size_v == 1 || t->numel == 0) return DT_OK;
#ifdef DEVTENSOR_MPI
  if (t->st->device.type == DT_CPU) {
    char *p = (char *)dt_data_ptr(t);
    size_t at = 0, nb = t->nbytes;
    int rc;
    while (at < nb) {
      size_t n = nb - at < (size_t)(INT_MAX / 2) ? nb - at : (size_t)(INT_MAX / 2);
      if ((rc = MPI_Bcast(p + at, (int)n, MPI_BYTE, root, dt__dist_comm)) != MPI_SUCCESS) return dt__mpi_fail(fn, "MPI_Bcast", rc);
      at += n;
    }
    return DT_OK;
  }
#ifdef DEVTENSOR_CUDA
  if ((s = dt__dist_nccl_ready(fn, t)) != DT_OK) return s;
  {
    void *ptr = dt_data_ptr(t);
    return dt__run(fn, t->st->device, dt__cuda_backend()->dist_broadcast(1, &dt__dist_nccl, &t->st->device.index, t->dtype,
                                                                        t->numel, &ptr, root));
  }
#endif
#endif
  return dt__fail(DT_ERR_UNSUPPORTED, "%s: no collective for tensors on this device in this build", fn);
}
