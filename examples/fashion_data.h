/* Fashion-MNIST from its IDX files, gzip-compressed as distributed (Debian's
   dataset-fashion-mnist puts them in /usr/share/datasets/fashion-mnist). Read with
   zlib (link -lz): example code, not part of the library, which needs no zlib.

   IDX: a big-endian header, magic 0x00 0x00 <type> <ndim>, then ndim 32-bit
   big-endian sizes, then the data, row-major. Images: type 0x08 (unsigned byte),
   3 dims (n, 28, 28); labels: type 0x08, 1 dim (n), each in 0..9. Every header
   field and the data's length is checked: a corrupt, truncated or overlong file
   is an error naming the file and what is wrong, never a crash.

     fashion_set s;
     char err[512];
     if (fashion_load(dir, "train", 0, &s, err, sizeof err) != 0) puts(err);
     ... s.images: s.n x s.pixels bytes, s.labels: s.n bytes ...
     fashion_free(&s); */
#ifndef DT_EXAMPLES_FASHION_DATA_H
#define DT_EXAMPLES_FASHION_DATA_H
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define FASHION_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define FASHION_PACKAGE "dataset-fashion-mnist"
#define FASHION_MAX_ITEMS 100000000 /* far above the 70000 of the data set: a bound on a hostile header */

typedef struct fashion_set {
  int64_t n;                /* examples */
  int rows, cols;           /* 28 x 28 */
  int64_t pixels;           /* rows * cols */
  unsigned char *images;    /* n x pixels, 0..255 */
  unsigned char *labels;    /* n, 0..9 */
} fashion_set;

static int fashion__err(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  if (err && n) { va_start(ap, fmt); vsnprintf(err, n, fmt, ap); va_end(ap); }
  return -1;
}

/* Reads exactly n bytes; -1 with a message on a short read or a zlib error. */
static int fashion__read(gzFile f, const char *path, void *dst, size_t n, const char *what, char *err, size_t errn) {
  unsigned char *p = (unsigned char *)dst;
  while (n > 0) {
    unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
    int got = gzread(f, p, chunk);
    if (got < 0) {
      int zerr;
      const char *msg = gzerror(f, &zerr);
      return fashion__err(err, errn, "%s: corrupt gzip data while reading the %s: %s", path, what, msg ? msg : "zlib error");
    }
    if (got == 0) {
      int zerr;
      const char *msg = gzerror(f, &zerr);
      if (zerr != Z_OK && zerr != Z_STREAM_END && msg && *msg)
        return fashion__err(err, errn, "%s: corrupt gzip data while reading the %s: %s", path, what, msg);
      return fashion__err(err, errn, "%s: truncated: the file ends inside the %s (%zu bytes missing)", path, what, n);
    }
    p += got; n -= (size_t)got;
  }
  return 0;
}

/* One IDX file of unsigned bytes with `ndim` dimensions: its sizes into dims
   and its data into *data (malloc'd). `limit` > 0 reads only the first `limit`
   items (dims[0] is then the count read). */
static int fashion__read_idx(const char *path, int ndim, int64_t dims[3], int64_t limit, unsigned char **data,
                             char *err, size_t errn) {
  unsigned char hdr[4 + 4 * 3], extra;
  gzFile f;
  int i, rc;
  size_t item = 1, total;
  *data = NULL;
  if (!(f = gzopen(path, "rb"))) {
    FILE *t = fopen(path, "rb");
    if (!t)
      return fashion__err(err, errn, "%s: cannot open it: Fashion-MNIST is not installed there "
                          "(apt-get install %s, or give its directory with --data DIR)", path, FASHION_PACKAGE);
    fclose(t);
    return fashion__err(err, errn, "%s: zlib cannot open it", path);
  }
  if ((rc = fashion__read(f, path, hdr, 4 + 4 * (size_t)ndim, "header", err, errn)) != 0) { gzclose(f); return rc; }
  if (hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 || hdr[3] != (unsigned char)ndim) {
    gzclose(f);
    return fashion__err(err, errn, "%s: not an IDX file of unsigned bytes with %d dimension%s: its magic is "
                        "%02x %02x %02x %02x, expected 00 00 08 %02x", path, ndim, ndim == 1 ? "" : "s",
                        hdr[0], hdr[1], hdr[2], hdr[3], ndim);
  }
  for (i = 0; i < ndim; i++) {
    const unsigned char *b = hdr + 4 + 4 * i;
    uint32_t v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
    dims[i] = (int64_t)v;
    if (v == 0 || v > (i == 0 ? FASHION_MAX_ITEMS : 4096u)) {
      gzclose(f);
      return fashion__err(err, errn, "%s: dimension %d of the header is %lu, outside 1..%lu", path, i, (unsigned long)v,
                          (unsigned long)(i == 0 ? FASHION_MAX_ITEMS : 4096u));
    }
    if (i > 0) item *= (size_t)v;
  }
  if (limit > 0 && limit < dims[0]) dims[0] = limit;
  total = (size_t)dims[0] * item;
  if (!(*data = (unsigned char *)malloc(total ? total : 1))) {
    gzclose(f);
    return fashion__err(err, errn, "%s: out of memory for %zu bytes", path, total);
  }
  if ((rc = fashion__read(f, path, *data, total, "data", err, errn)) != 0) { free(*data); *data = NULL; gzclose(f); return rc; }
  /* the whole file was read: nothing may follow the data */
  if (limit <= 0 && gzread(f, &extra, 1) != 0) {
    free(*data); *data = NULL; gzclose(f);
    return fashion__err(err, errn, "%s: longer than its header says (%lld items of %zu bytes)", path, (long long)dims[0], item);
  }
  gzclose(f);
  return 0;
}

static void fashion_free(fashion_set *s) {
  if (!s) return;
  free(s->images); free(s->labels);
  memset(s, 0, sizeof *s);
}

/* Loads <dir>/<which>-images-idx3-ubyte.gz and <which>-labels-idx1-ubyte.gz
   (which: "train" or "t10k"); limit > 0 keeps the first `limit` examples.
   0 on success; -1 with a message in err, and *out empty. */
static int fashion_load(const char *dir, const char *which, int64_t limit, fashion_set *out, char *err, size_t errn) {
  char pi[1024], pl[1024];
  int64_t di[3], dl[3];
  unsigned char *img = NULL, *lab = NULL;
  int64_t i;
  memset(out, 0, sizeof *out);
  if ((size_t)snprintf(pi, sizeof pi, "%s/%s-images-idx3-ubyte.gz", dir, which) >= sizeof pi ||
      (size_t)snprintf(pl, sizeof pl, "%s/%s-labels-idx1-ubyte.gz", dir, which) >= sizeof pl)
    return fashion__err(err, errn, "fashion_load: the directory name is too long");
  if (fashion__read_idx(pi, 3, di, limit, &img, err, errn) != 0) return -1;
  if (fashion__read_idx(pl, 1, dl, limit, &lab, err, errn) != 0) { free(img); return -1; }
  if (di[0] != dl[0]) {
    free(img); free(lab);
    return fashion__err(err, errn, "%s holds %lld images but %s %lld labels", pi, (long long)di[0], pl, (long long)dl[0]);
  }
  for (i = 0; i < dl[0]; i++)
    if (lab[i] > 9) {
      int v = lab[i];
      free(img); free(lab);
      return fashion__err(err, errn, "%s: label %lld is %d, outside 0..9", pl, (long long)i, v);
    }
  out->n = di[0]; out->rows = (int)di[1]; out->cols = (int)di[2];
  out->pixels = di[1] * di[2];
  out->images = img; out->labels = lab;
  return 0;
}
#endif
