static const dt__backend *dt__cpu_backend(void);
static const dt__backend *dt__half_table(int cuda); /* src/core/half.c */

static volatile int dt__gpu_state;   /* 0 not asked, 1 asking, 2 known */
static int dt__gpu_n;
static char dt__gpu_why[512];

/* The number of GPUs, asked once; the reason when there are none. */
static int dt__gpu_count(void) {
  int expected = 0;
  if (DT__ATOMIC_LOAD(&dt__gpu_state) == 2) return dt__gpu_n;
  if (DT__ATOMIC_CAS(&dt__gpu_state, &expected, 1)) {
    int n = 0;
#ifdef DEVTENSOR_CUDA
    char why[480];
    why[0] = 0;
    n = dt__cuda_backend()->device_count(why, sizeof why);
    if (n <= 0) { n = 0; snprintf(dt__gpu_why, sizeof dt__gpu_why, "CUDA unavailable: %s", why[0] ? why : "no GPU found"); }
#else
    snprintf(dt__gpu_why, sizeof dt__gpu_why,
             "devtensor was built without CUDA (define DEVTENSOR_CUDA and link devtensor_cuda.cu)");
#endif
    dt__gpu_n = n;
    DT__ATOMIC_STORE(&dt__gpu_state, 2);
  } else {
    int waits = 0;
    while (DT__ATOMIC_LOAD(&dt__gpu_state) != 2) { /* another thread is asking the driver */
      dt__pause(waits);
      if (waits < 64) waits++;
    }
  }
  return dt__gpu_n;
}

DTDEF dt_device dt_cpu(void) { dt_device d; d.type = DT_CPU; d.index = 0; return d; }
DTDEF dt_device dt_gpu(int i) { dt_device d; d.type = DT_CUDA; d.index = i; return d; }

DTDEF int dt_num_gpus(void) {
  int n = dt__gpu_count();
  if (n == 0) dt__fail(DT_ERR_NO_DEVICE, "dt_num_gpus: %s", dt__gpu_why); /* the reason, for whoever asks */
  return n;
}
DTDEF dt_device dt_try_gpu(int i) { return (i >= 0 && i < dt__gpu_count()) ? dt_gpu(i) : dt_cpu(); }
DTDEF int dt_try_all_gpus(dt_device *out, int capacity) {
  int n = dt__gpu_count(), i;
  if (n == 0) { if (out && capacity > 0) out[0] = dt_cpu(); return 1; }
  for (i = 0; out && i < n && i < capacity; i++) out[i] = dt_gpu(i);
  return n;
}
DTDEF int dt_device_equal(dt_device a, dt_device b) { return a.type == b.type && a.index == b.index; }

DTDEF const char *dt_device_str(dt_device d, char *buf, size_t n) {
  char tmp[48];
  size_t len;
  if (!buf || n == 0) return "";
  if (d.type == DT_CPU && d.index == 0) snprintf(tmp, sizeof tmp, "cpu");
  else if (d.type == DT_CPU) snprintf(tmp, sizeof tmp, "cpu:%d", d.index);
  else if (d.type == DT_CUDA) snprintf(tmp, sizeof tmp, "cuda:%d", d.index);
  else snprintf(tmp, sizeof tmp, "device?%d:%d", (int)d.type, d.index);
  len = strlen(tmp) < n - 1 ? strlen(tmp) : n - 1; /* truncates like snprintf */
  memcpy(buf, tmp, len);
  buf[len] = 0;
  return buf;
}

DTDEF dt_status dt_device_parse(const char *s, dt_device *out) {
  dt_device d;
  const char *p;
  int v = 0, too_big = 0;
  if (!s) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: s is NULL");
  if (!out) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: out is NULL");
  if (strncmp(s, "cpu", 3) == 0) { d = dt_cpu(); p = s + 3; }
  else if (strncmp(s, "cuda", 4) == 0) { d = dt_gpu(0); p = s + 4; }
  else if (strncmp(s, "gpu", 3) == 0) { d = dt_gpu(0); p = s + 3; } /* d2l's gpu(i), MXNet's mx.gpu(i) */
  else return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"%.64s\"", s);
  if (*p == ':') {
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++) { /* int arithmetic only: long may be 32 bits */
      if (v > (INT_MAX - (*p - '0')) / 10) { too_big = 1; break; }
      v = v * 10 + (*p - '0');
    }
    if (d.type == DT_CUDA && (digits == 0 || *p != 0 || too_big))
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: bad device index in \"%.64s\" (expected \"%s:N\", N a decimal "
                      "index from 0 to %d)", s, s[0] == 'g' ? "gpu" : "cuda", INT_MAX);
    if (d.type == DT_CPU && (digits == 0 || *p != 0 || too_big || v != 0))
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: the CPU is \"cpu\" or \"cpu:0\", got \"%.64s\"", s);
    d.index = v;
  } else if (*p != 0) {
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_parse: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"%.64s\"", s);
  }
  *out = d;
  return DT_OK;
}

/* Checks that a device exists; `op` names the caller in the message. */
static dt_status dt__check_device(const char *op, dt_device d) {
  char db[48];
  int n;
  if (d.type == DT_CPU) {
    if (d.index == 0) return DT_OK;
    return dt__fail(DT_ERR_NO_DEVICE, "%s: no such device %s (the CPU is cpu, index 0)", op, dt_device_str(d, db, sizeof db));
  }
  if (d.type != DT_CUDA) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: unknown device type %d", op, (int)d.type);
  if (d.index < 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: invalid device index %d for cuda", op, d.index);
  n = dt__gpu_count();
  if (d.index >= n) {
    if (n == 0) return dt__fail(DT_ERR_NO_DEVICE, "%s: no such device %s (no GPU available: %s)", op, dt_device_str(d, db, sizeof db), dt__gpu_why);
    return dt__fail(DT_ERR_NO_DEVICE, "%s: no such device %s (%d GPU%s available)", op, dt_device_str(d, db, sizeof db), n, n == 1 ? "" : "s");
  }
  return DT_OK;
}

/* 1 while the CPU's work is being captured into a graph (src/core/graph.c): then the CPU's
   table is the recording one (src/cpu/graph.c), whose kernels are recorded, not run. A GPU
   needs no such switch: its stream records (CUDA stream capture). */
static volatile int dt__cpu_capturing;
static const dt__backend *dt__cpu_rec_backend(void);
/* dt__cpu_gemm_opt (the Linear layer's fused CPU products), recorded while the CPU is captured */
struct dt__gemm_opts;
static dt_status dt__cpu_gemm_opt_rec(dt_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                                      const void *a, const void *b, double beta, void *c, struct dt__gemm_opts *o);

/* The backend of a device that dt__check_device accepted (with half precision: src/core/half.c;
   while the CPU is captured, its recording table, which replays through the half precision one). */
static const dt__backend *dt__be(dt_device d) {
#ifdef DEVTENSOR_CUDA
  if (d.type == DT_CUDA) return dt__half_table(1);
#endif
  DT_ASSERT(d.type == DT_CPU);
  if (DT__ATOMIC_LOAD(&dt__cpu_capturing)) return dt__cpu_rec_backend();
  return dt__half_table(0);
}

/* A backend failure with the backend's reason, prefixed by the operation. */
static dt_status dt__backend_fail(const char *op, dt_device d, dt_status s) {
  const char *why = dt__be(d)->last_error();
  return dt__fail(s == DT_OK ? DT_ERR_BACKEND : s, "%s: %s", op, why && why[0] ? why : dt_status_string(s));
}

DTDEF dt_status dt_device_get_info(dt_device d, dt_device_info *out) {
  dt_status s;
  if (!out) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_device_get_info: out is NULL");
  if ((s = dt__check_device("dt_device_get_info", d)) != DT_OK) return s;
  memset(out, 0, sizeof *out);
  if ((s = dt__be(d)->device_info(d.index, out)) != DT_OK) return dt__backend_fail("dt_device_get_info", d, s);
  return DT_OK;
}

static dt_status dt__graph_forbid(const char *op, dt_device d, const char *what);

DTDEF dt_status dt_synchronize(dt_device d) {
  dt_status s;
  if ((s = dt__check_device("dt_synchronize", d)) != DT_OK) return s;
  if ((s = dt__graph_forbid("dt_synchronize", d, "waiting for the device")) != DT_OK) return s;
  if ((s = dt__be(d)->synchronize(d.index)) != DT_OK) return dt__backend_fail("dt_synchronize", d, s);
  return DT_OK;
}

DTDEF void *dt_cuda_stream(dt_device d) {
  void *s;
  if (dt__check_device("dt_cuda_stream", d) != DT_OK) return NULL;
  s = dt__be(d)->stream(d.index);
  if (!s && d.type == DT_CUDA) dt__backend_fail("dt_cuda_stream", d, DT_ERR_BACKEND);
  return s;
}
