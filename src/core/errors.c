static DT__TLS dt_status dt__err_status;
static DT__TLS char dt__err_msg[1024];
static DT__TLS unsigned dt__err_count; /* errors reported on this thread: what a user's callback reported, if anything */
static dt_error_handler dt__err_handler;  /* the handler and its argument, set together under the lock */
static void *dt__err_user;
static volatile int dt__err_lock;

static DT__PRINTF(2, 3) dt_status dt__fail(dt_status s, const char *fmt, ...) {
  va_list ap;
  dt_error_handler h;
  void *user;
  va_start(ap, fmt);
  vsnprintf(dt__err_msg, sizeof dt__err_msg, fmt, ap);
  va_end(ap);
  dt__err_status = s;
  dt__err_count++;
  dt__lock(&dt__err_lock);
  h = dt__err_handler;
  user = dt__err_user;
  dt__unlock(&dt__err_lock);
  if (h) h(s, dt__err_msg, user);
  return s;
}

DTDEF dt_status dt_last_status(void) { return dt__err_status; }
DTDEF const char *dt_last_error(void) { return dt__err_msg; }
DTDEF void dt_clear_error(void) { dt__err_status = DT_OK; dt__err_msg[0] = 0; }
DTDEF void dt_set_error_handler(dt_error_handler fn, void *user) {
  dt__lock(&dt__err_lock);
  dt__err_handler = fn;
  dt__err_user = user;
  dt__unlock(&dt__err_lock);
}

DTDEF const char *dt_status_string(dt_status s) {
  switch (s) {
    case DT_OK: return "ok";
    case DT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case DT_ERR_SHAPE: return "shape mismatch";
    case DT_ERR_DTYPE: return "unsupported dtype";
    case DT_ERR_DEVICE_MISMATCH: return "device mismatch";
    case DT_ERR_NO_DEVICE: return "no such device";
    case DT_ERR_OUT_OF_MEMORY: return "out of memory";
    case DT_ERR_BACKEND: return "backend failure";
    case DT_ERR_IO: return "i/o error";
    case DT_ERR_FORMAT: return "bad file format";
    case DT_ERR_UNSUPPORTED: return "unsupported";
  }
  return "unknown status";
}

/* "(2, 3)", "(3,)", "()" as Python prints a shape */
static const char *dt__shape_str(const dt_shape *s, char *buf, size_t n) {
  size_t at = 0;
  int i;
  if (n == 0) return buf;
  buf[0] = 0;
  if (s->ndim < 0 || s->ndim > DT_MAX_DIMS) { snprintf(buf, n, "(invalid shape, %d dims)", s->ndim); return buf; }
  at += (size_t)snprintf(buf, n, "(");
  for (i = 0; i < s->ndim && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, i ? ", %lld" : "%lld", (long long)s->dims[i]);
  if (at < n) snprintf(buf + at, n - at, s->ndim == 1 ? ",)" : ")");
  return buf;
}
