#include <errno.h>
#if defined(_WIN32)
#include <sys/stat.h>
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
/* safetensors: 8-byte little-endian header length N, N bytes of JSON
   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
    "__metadata__": {...}}, then the raw little-endian data. The tensors' byte ranges,
   sorted by begin, tile the data: the first begins at 0, each begins where the one before
   ends, the last ends at the end of the file. */

#define DT__ST_MAX_HEADER ((uint64_t)100 << 20) /* the format's own limit: 100 MB */

static const char *dt__st_dtype(dt_dtype t) {
  switch (t) {
    case DT_F32: return "F32"; case DT_F64: return "F64"; case DT_I32: return "I32"; case DT_I64: return "I64";
    case DT_U8: return "U8"; case DT_BOOL: return "BOOL"; case DT_F16: return "F16"; case DT_BF16: return "BF16";
  }
  return "?";
}

/* The system's reason for a failed file call, from its errno, in the C library's words
   (glibc's); strerror itself may share one buffer among threads, so not it. */
static const char *dt__errno_str(int e) {
  switch (e) {
    case 0: return "unknown error";
#ifdef ENOENT
    case ENOENT: return "No such file or directory";
#endif
#ifdef EACCES
    case EACCES: return "Permission denied";
#endif
#ifdef EPERM
    case EPERM: return "Operation not permitted";
#endif
#ifdef EISDIR
    case EISDIR: return "Is a directory";
#endif
#ifdef ENOTDIR
    case ENOTDIR: return "Not a directory";
#endif
#ifdef ENAMETOOLONG
    case ENAMETOOLONG: return "File name too long";
#endif
#ifdef ELOOP
    case ELOOP: return "Too many levels of symbolic links";
#endif
#ifdef EMFILE
    case EMFILE: return "Too many open files";
#endif
#ifdef ENFILE
    case ENFILE: return "Too many open files in system";
#endif
#ifdef ENOSPC
    case ENOSPC: return "No space left on device";
#endif
#ifdef EDQUOT
    case EDQUOT: return "Disk quota exceeded";
#endif
#ifdef EROFS
    case EROFS: return "Read-only file system";
#endif
#ifdef EEXIST
    case EEXIST: return "File exists";
#endif
#ifdef EIO
    case EIO: return "Input/output error";
#endif
#ifdef EFBIG
    case EFBIG: return "File too large";
#endif
#ifdef ENOMEM
    case ENOMEM: return "Cannot allocate memory";
#endif
#ifdef ETXTBSY
    case ETXTBSY: return "Text file busy";
#endif
#ifdef EBUSY
    case EBUSY: return "Device or resource busy";
#endif
#ifdef ENXIO
    case ENXIO: return "No such device or address";
#endif
#ifdef ENODEV
    case ENODEV: return "No such device";
#endif
#ifdef EINVAL
    case EINVAL: return "Invalid argument";
#endif
#ifdef EOVERFLOW
    case EOVERFLOW: return "Value too large for defined data type";
#endif
#ifdef EXDEV
    case EXDEV: return "Invalid cross-device link";
#endif
#ifdef ESTALE
    case ESTALE: return "Stale file handle";
#endif
    default: return NULL;
  }
}
/* "No such file or directory", or "error 123" for an errno the table lacks, in buf. */
static const char *dt__errno_text(int e, char *buf, size_t n) {
  const char *s = dt__errno_str(e);
  if (s) return s;
  snprintf(buf, n, "error %d", e);
  return buf;
}

static int dt__little_endian(void) { const uint16_t one = 1; return *(const uint8_t *)&one == 1; }

#if !defined(_WIN32)
#ifdef O_CLOEXEC
#define DT__O_CLOEXEC O_CLOEXEC
#else
#define DT__O_CLOEXEC 0   /* strict C99 hides it: fcntl(FD_CLOEXEC) right after the open instead */
#endif
static void dt__cloexec(int fd) { if (DT__O_CLOEXEC == 0) fcntl(fd, F_SETFD, FD_CLOEXEC); }
#endif

/* A file written whole or not at all: the bytes go to a new temporary file beside path
   (created exclusively), which is renamed over path once complete, and removed on any
   failure, so a failed save leaves an old file as it was. An existing path that is not a
   regular file (a FIFO would wait for a reader forever, a directory or a device is no
   file to replace) is refused before anything is created. On Windows the old file is
   removed just before the rename (rename does not replace there). */
typedef struct dt__wfile {
#if defined(_WIN32)
  FILE *f;
#else
  int fd;
#endif
  char *tmp;
  int err;   /* the errno of the last failed call, for the message */
} dt__wfile;

static dt_status dt__wfile_open(const char *op, const char *path, dt__wfile *w) {
  size_t cap = strlen(path) + 48;
  const char *kind = NULL;
  char eb[32];
  int k, have = 0;
#if defined(_WIN32)
  struct _stat64 st;
  w->err = 0;
  if (_stat64(path, &st) == 0) {
    have = 1;
    if ((st.st_mode & _S_IFMT) != _S_IFREG) kind = (st.st_mode & _S_IFMT) == _S_IFDIR ? "a directory" : "";
  }
#else
  struct stat st;
  w->err = 0;
  if (stat(path, &st) == 0) {
    have = 1;
    if (!S_ISREG(st.st_mode))
      kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
           : S_ISBLK(st.st_mode) ? "a block device" : "";
  }
#endif
  if (kind) return dt__fail(DT_ERR_IO, "%s: %s is %s%snot a regular file to write", op, path, kind, kind[0] ? ", " : "");
  if (!(w->tmp = (char *)DT_MALLOC(cap))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
#if defined(_WIN32)
  w->f = NULL;
#else
  w->fd = -1;
#endif
  for (k = 0; k < 100; k++) {
    /* unique enough per process and thread (the address of w); O_EXCL makes it certain */
#if defined(_WIN32)
    snprintf(w->tmp, cap, "%s.tmp%lx.%d", path, (unsigned long)((uintptr_t)w >> 4), k);
    if (_stat64(w->tmp, &st) == 0) continue;
    if ((w->f = fopen(w->tmp, "wb")) != NULL) break;
    w->err = errno;
#else
    int fd;
    snprintf(w->tmp, cap, "%s.tmp%lx.%lx.%d", path, (unsigned long)getpid(), (unsigned long)((uintptr_t)w >> 4), k);
    do fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | DT__O_CLOEXEC, 0666); while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
      dt__cloexec(fd);
      if (have) chmod(w->tmp, st.st_mode & 07777);   /* the replaced file's permissions stay */
      w->fd = fd;
      break;
    }
    w->err = errno;
    if (errno != EEXIST) break;
#endif
  }
  (void)have;
#if defined(_WIN32)
  if (!w->f) {
#else
  if (w->fd < 0) {
#endif
    DT_FREE(w->tmp);
    w->tmp = NULL;
    return dt__fail(DT_ERR_IO, "%s: cannot open %s for writing (a temporary file beside it could not be created: %s)", op, path,
                    dt__errno_text(w->err, eb, sizeof eb));
  }
  return DT_OK;
}

/* n bytes at the end of w: 1 when written, 0 on an error. */
static int dt__wfile_write(dt__wfile *w, const void *buf, size_t n) {
#if defined(_WIN32)
  if (fwrite(buf, 1, n, w->f) == n) return 1;
  w->err = errno;
  return 0;
#else
  size_t at = 0;
  while (at < n) {
    size_t want = n - at < ((size_t)1 << 30) ? n - at : ((size_t)1 << 30);
    long k = (long)write(w->fd, (const char *)buf + at, want);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) { w->err = k < 0 ? errno : 0; return 0; }
    at += (size_t)k;
  }
  return 1;
#endif
}

/* A failed write to w as the status of the save. */
static dt_status dt__wfile_write_failed(const char *op, const char *path, const dt__wfile *w) {
  char eb[32];
  return dt__fail(DT_ERR_IO, "%s: writing %s failed: %s", op, path, w->err ? dt__errno_text(w->err, eb, sizeof eb) : "nothing was written");
}

/* Closes w; when s is DT_OK, puts it in place of path (or fails with DT_ERR_IO), else
   removes it. Returns the status of the save. */
static dt_status dt__wfile_finish(const char *op, const char *path, dt__wfile *w, dt_status s) {
  char eb[32];
#if defined(_WIN32)
  if (fclose(w->f) != 0 && s == DT_OK) { w->err = errno; s = dt__wfile_write_failed(op, path, w); }
  if (s == DT_OK) {
    remove(path);
    if (rename(w->tmp, path) != 0) s = dt__fail(DT_ERR_IO, "%s: cannot replace %s: %s", op, path, dt__errno_text(errno, eb, sizeof eb));
  }
  if (s != DT_OK) remove(w->tmp);
#else
  if (close(w->fd) != 0 && s == DT_OK) { w->err = errno; s = dt__wfile_write_failed(op, path, w); }
  if (s == DT_OK && rename(w->tmp, path) != 0) s = dt__fail(DT_ERR_IO, "%s: cannot replace %s: %s", op, path, dt__errno_text(errno, eb, sizeof eb));
  if (s != DT_OK) unlink(w->tmp);
#endif
  DT_FREE(w->tmp);
  w->tmp = NULL;
  return s;
}

DTDEF dt_status dt_module_save(const dt_module *mc, const char *path) {
  const char *op = "dt_module_save";
  dt_module *m = (dt_module *)mc, view;
  char *hdr = NULL;
  size_t cap = 0, len = 0, maxbytes = 0;
  uint64_t off = 0, hlen;
  unsigned char lenbuf[8];
  void *host = NULL;
  dt__wfile f;
  int opened = 0;
  dt_status s = DT_OK;
  int i, pass, k;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (!path) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
  if (!dt__little_endian()) return dt__fail(DT_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", op);
  if ((s = dt__params_build(op, m)) != DT_OK) return s;
  if (!(m = dt__state_view(op, m, &view))) return dt_last_status(); /* with its buffers */
  for (i = 0; i < m->nparams; i++) {
    if (!m->params[i]) {
      s = dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not initialised yet (a lazy layer: run a forward first)", op, m->names[i]);
      dt__state_view_free((dt_module *)mc, m);
      return s;
    }
    if (m->params[i]->nbytes > maxbytes) maxbytes = m->params[i]->nbytes;
  }
  /* the header, measured on pass 0 and written on pass 1 */
  for (pass = 0; pass < 2; pass++) {
    len = 0; off = 0;
#define DT__ST_PUT(...) do { int w_ = snprintf(hdr ? hdr + len : NULL, hdr ? cap - len : 0, __VA_ARGS__); len += (size_t)w_; } while (0)
    DT__ST_PUT("{");
    for (i = 0; i < m->nparams; i++) {
      dt_tensor *t = m->params[i];
      DT__ST_PUT("%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", m->names[i], dt__st_dtype(t->dtype));
      for (k = 0; k < t->shape.ndim; k++) DT__ST_PUT("%s%lld", k ? "," : "", (long long)t->shape.dims[k]);
      DT__ST_PUT("],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + t->nbytes));
      off += t->nbytes;
    }
    DT__ST_PUT("%s\"__metadata__\":{\"format\":\"pt\"}}", m->nparams ? "," : "");
#undef DT__ST_PUT
    if (pass == 0) {
      if ((uint64_t)(len + 7) / 8 * 8 > DT__ST_MAX_HEADER) {
        s = dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the header would be %zu bytes, past the format's 100 MB", op, (len + 7) / 8 * 8);
        dt__state_view_free((dt_module *)mc, m);
        return s;
      }
      cap = len + 8 + 1; /* room for padding to 8 bytes */
      if (!(hdr = (char *)DT_MALLOC(cap))) {
        dt__state_view_free((dt_module *)mc, m);
        return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
      }
    }
  }
  while (len % 8) hdr[len++] = ' ';
  hlen = len;
  for (k = 0; k < 8; k++) lenbuf[k] = (unsigned char)(hlen >> (8 * k));
  if (maxbytes && !(host = DT_MALLOC(maxbytes))) { s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); goto done; }
  if ((s = dt__wfile_open(op, path, &f)) != DT_OK) goto done;
  opened = 1;
  if (!dt__wfile_write(&f, lenbuf, 8) || !dt__wfile_write(&f, hdr, len)) { s = dt__wfile_write_failed(op, path, &f); goto done; }
  for (i = 0; i < m->nparams; i++) {
    dt_tensor *t = m->params[i];
    if (t->nbytes == 0) continue;
    if ((s = dt_to_host(t, host, maxbytes)) != DT_OK) goto done;
    if (!dt__wfile_write(&f, host, t->nbytes)) { s = dt__wfile_write_failed(op, path, &f); goto done; }
  }
done:
  if (opened) s = dt__wfile_finish(op, path, &f, s);
  if (host) DT_FREE(host);
  DT_FREE(hdr);
  dt__state_view_free((dt_module *)mc, m);
  return s;
}
