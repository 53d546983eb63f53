/* A port of torch/_tensor_str.py (PyTorch 1.13) with the default print
   options: precision 4, threshold 1000, edgeitems 3, linewidth 80.
   No heap: a first pass over the (summarised) values picks the number mode
   and the column width, a second pass writes the text. */

#define DT__PRINT_PRECISION 4
#define DT__PRINT_THRESHOLD 1000
#define DT__PRINT_EDGEITEMS 3
#define DT__PRINT_LINEWIDTH 80
#define DT__PRINT_INDENT    7   /* strlen("tensor(") */
#define DT__PRINT_NUMBUF    512 /* "%.4f" of DBL_MAX is 315 chars */

/* snprintf-style sink: counts everything, stores what fits. */
typedef struct dt__print_out {
  char  *buf;
  size_t cap, len;
  size_t col;       /* characters since the last newline */
} dt__print_out;

typedef struct dt__print_ctx {
  const void *host;
  dt_dtype    t;
  int         ndim;
  int64_t     dims[DT_MAX_DIMS], strides[DT_MAX_DIMS];
  int         summarize;                 /* numel > threshold */
  int         int_mode, sci_mode, width; /* _Formatter's state */
} dt__print_ctx;

static void dt__print_putc(dt__print_out *o, char ch) {
  if (o->cap && o->len < o->cap - 1) o->buf[o->len] = ch;
  o->len++;
  o->col = ch == '\n' ? 0 : o->col + 1;
}

static void dt__print_puts(dt__print_out *o, const char *s) {
  while (*s) dt__print_putc(o, *s++);
}

static void dt__print_spaces(dt__print_out *o, int64_t k) {
  while (k-- > 0) dt__print_putc(o, ' ');
}

/* Python's "{}".format(v) for an int. */
static int dt__fmt_int(char *out, int64_t v) {
  char tmp[24];
  int k = 0, n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do { tmp[k++] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
  if (v < 0) out[n++] = '-';
  while (k) out[n++] = tmp[--k];
  out[n] = '\0';
  return n;
}

/* Python's format(v, spec) for spec ".4f" (mode 'f'), ".4e" ('e') or ".0f"
   ('0'). nan/inf as Python writes them (never "-nan"); the decimal point is
   always '.', whatever the C locale says. */
static int dt__fmt_float(char *out, double v, char mode) {
  char tmp[DT__PRINT_NUMBUF];
  int i = 0, n = 0;
  if (isnan(v)) { memcpy(out, "nan", 4); return 3; }
  if (isinf(v)) { if (v < 0) out[n++] = '-'; memcpy(out + n, "inf", 4); return n + 3; }
  if (mode == 'e') snprintf(tmp, sizeof tmp, "%.*e", DT__PRINT_PRECISION, v);
  else snprintf(tmp, sizeof tmp, "%.*f", mode == '0' ? 0 : DT__PRINT_PRECISION, v);
  tmp[sizeof tmp - 1] = '\0';
  if (tmp[i] == '-') out[n++] = tmp[i++];
  while (tmp[i] >= '0' && tmp[i] <= '9') out[n++] = tmp[i++];
  if (tmp[i] && tmp[i] != 'e') {            /* the locale's decimal point, any length */
    while (tmp[i] && (tmp[i] < '0' || tmp[i] > '9')) i++;
    out[n++] = '.';
  }
  while (tmp[i]) out[n++] = tmp[i++];
  out[n] = '\0';
  return n;
}

static double dt__print_getf(const dt__print_ctx *c, int64_t i) {
  if (c->t == DT_F16 || c->t == DT_BF16) return (double)dt__half_to_f32(c->t == DT_BF16, ((const uint16_t *)c->host)[i]);
  return c->t == DT_F32 ? (double)((const float *)c->host)[i] : ((const double *)c->host)[i];
}

static int64_t dt__print_geti(const dt__print_ctx *c, int64_t i) {
  switch (c->t) {
    case DT_I32: return (int64_t)((const int32_t *)c->host)[i];
    case DT_U8: return (int64_t)((const uint8_t *)c->host)[i];
    case DT_BOOL: return ((const uint8_t *)c->host)[i] != 0;
    default: return ((const int64_t *)c->host)[i];
  }
}

/* integers and bool print as Python's f"{value}": 7, True, False */
static int dt__print_is_int(dt_dtype t) { return t == DT_I32 || t == DT_I64 || t == DT_U8 || t == DT_BOOL; }
static int dt__fmt_intval(char *out, const dt__print_ctx *c, int64_t i) {
  if (c->t == DT_BOOL) {
    int v = ((const uint8_t *)c->host)[i] != 0;
    memcpy(out, v ? "True" : "False", v ? 5 : 6);
    return v ? 4 : 5;
  }
  return dt__fmt_int(out, dt__print_geti(c, i));
}

/* Dim d shows `count` entries; the p-th is element `index` (summarised:
   the first and last edgeitems). */
static int dt__print_summ(const dt__print_ctx *c, int d) {
  return c->summarize && c->dims[d] > 2 * DT__PRINT_EDGEITEMS;
}

static int64_t dt__print_count(const dt__print_ctx *c, int d) {
  return dt__print_summ(c, d) ? 2 * DT__PRINT_EDGEITEMS : c->dims[d];
}

static int64_t dt__print_index(const dt__print_ctx *c, int d, int64_t p) {
  if (dt__print_summ(c, d) && p >= DT__PRINT_EDGEITEMS) return c->dims[d] - 2 * DT__PRINT_EDGEITEMS + p;
  return p;
}

/* One scan over get_summarized_data(). pass 0: int widths; 1: float
   min/max/int_mode; 2: float widths. */
static void dt__print_scan(dt__print_ctx *c, int pass, double *mn, double *mx, int *have) {
  int64_t pos[DT_MAX_DIMS];
  char num[DT__PRINT_NUMBUF];
  int d, w;
  for (d = 0; d < c->ndim; d++) pos[d] = 0;
  for (;;) {
    int64_t off = 0;
    for (d = 0; d < c->ndim; d++) off += dt__print_index(c, d, pos[d]) * c->strides[d];
    if (pass == 0) {
      w = dt__fmt_intval(num, c, off);
      if (w > c->width) c->width = w;
    } else {
      double v = dt__print_getf(c, off), a = fabs(v);
      if (!isnan(v) && !isinf(v) && v != 0) {       /* nonzero_finite_vals */
        if (pass == 1) {
          if (!*have || a < *mn) *mn = a;
          if (!*have || a > *mx) *mx = a;
          *have = 1;
          if (v != ceil(v)) c->int_mode = 0;
        } else {
          w = dt__fmt_float(num, v, c->sci_mode ? 'e' : c->int_mode ? '0' : 'f');
          if (c->int_mode && !c->sci_mode) w++;      /* the '.' */
          if (w > c->width) c->width = w;
        }
      }
    }
    for (d = c->ndim - 1; d >= 0; d--) {
      if (++pos[d] < dt__print_count(c, d)) break;
      pos[d] = 0;
    }
    if (d < 0) break;
  }
}

/* _Formatter.__init__ */
static void dt__print_formatter(dt__print_ctx *c) {
  double mn = 0, mx = 0;
  int have = 0;
  c->int_mode = 1; c->sci_mode = 0; c->width = 1;
  if (dt__print_is_int(c->t)) { dt__print_scan(c, 0, &mn, &mx, &have); return; }
  dt__print_scan(c, 1, &mn, &mx, &have);
  if (!have) return;
  if (mx / mn > 1000.0 || mx > 1.0e8 || (!c->int_mode && mn < 1.0e-4)) c->sci_mode = 1;
  dt__print_scan(c, 2, &mn, &mx, &have);
}

/* _Formatter.format: one element, right-aligned to the common width. */
static void dt__print_elem(dt__print_out *o, const dt__print_ctx *c, int64_t off) {
  char num[DT__PRINT_NUMBUF];
  int w;
  if (dt__print_is_int(c->t)) {
    w = dt__fmt_intval(num, c, off);
  } else {
    double v = dt__print_getf(c, off);
    w = dt__fmt_float(num, v, c->sci_mode ? 'e' : c->int_mode ? '0' : 'f');
    if (c->int_mode && !c->sci_mode && !isnan(v) && !isinf(v)) { num[w++] = '.'; num[w] = '\0'; }
  }
  dt__print_spaces(o, (int64_t)c->width - w);
  dt__print_puts(o, num);
}

/* _tensor_str_with_formatter / _vector_str for dims d.. at element `off`. */
static void dt__print_rec(dt__print_out *o, const dt__print_ctx *c, int d, int64_t off, int indent) {
  int64_t k, p, items = dt__print_count(c, d);
  int summ = dt__print_summ(c, d), i;
  if (summ) items++;                              /* the "..." entry */
  dt__print_putc(o, '[');
  if (d == c->ndim - 1) {
    int64_t per_line = (DT__PRINT_LINEWIDTH - indent) / (c->width + 2);
    if (per_line < 1) per_line = 1;
    for (k = 0; k < items; k++) {
      if (k && k % per_line == 0) { dt__print_puts(o, ",\n"); dt__print_spaces(o, indent + 1); }
      else if (k) dt__print_puts(o, ", ");
      if (summ && k == DT__PRINT_EDGEITEMS) { dt__print_puts(o, " ..."); continue; }
      p = summ && k > DT__PRINT_EDGEITEMS ? k - 1 : k;
      dt__print_elem(o, c, off + dt__print_index(c, d, p) * c->strides[d]);
    }
  } else {
    for (k = 0; k < items; k++) {
      if (k) {
        dt__print_putc(o, ',');
        for (i = d + 1; i < c->ndim; i++) dt__print_putc(o, '\n');
        dt__print_spaces(o, indent + 1);
      }
      if (summ && k == DT__PRINT_EDGEITEMS) { dt__print_puts(o, "..."); continue; }
      p = summ && k > DT__PRINT_EDGEITEMS ? k - 1 : k;
      dt__print_rec(o, c, d + 1, off + dt__print_index(c, d, p) * c->strides[d], indent + 1);
    }
  }
  dt__print_putc(o, ']');
}

/* _add_suffixes, one suffix a+b+c: wraps onto a new line when the current
   one would pass the line width. *last is PyTorch's last_line_len. */
static void dt__print_suffix(dt__print_out *o, size_t *last, const char *a, const char *b, const char *c) {
  size_t len = strlen(a) + strlen(b) + strlen(c);
  if (*last + len + 2 > DT__PRINT_LINEWIDTH) {
    dt__print_puts(o, ",\n");
    dt__print_spaces(o, DT__PRINT_INDENT);
    *last = DT__PRINT_INDENT + len;
  } else {
    dt__print_puts(o, ", ");
    *last += len + 2;
  }
  dt__print_puts(o, a); dt__print_puts(o, b); dt__print_puts(o, c);
}

/* Writes PyTorch's repr of a tensor whose values are in `host` (contiguous,
   row-major, native dtype) into buf with snprintf's contract. `device` is
   NULL (or "cpu") for the CPU, else e.g. "cuda:0". Returns -1 for bad
   arguments (buf, when n > 0, then holds ""). */
static int dt__format_tensor(char *buf, size_t n, const void *host, dt_dtype t, const dt_shape *s, const char *device) {
  dt__print_out o;
  dt__print_ctx c;
  char sizebuf[8 + DT_MAX_DIMS * 24];
  int64_t numel = 1;
  size_t last;
  int d, empty = 0;
  const char *tname = dt__dtype_str(t);

  if (buf && n) buf[0] = '\0';
  if ((!buf && n) || !s || s->ndim < 0 || s->ndim > DT_MAX_DIMS || (int)t < (int)DT_F32 || (int)t > (int)DT_BF16) return -1;
  for (d = 0; d < s->ndim; d++) {
    if (s->dims[d] < 0) return -1;
    if (s->dims[d] == 0) empty = 1;
    else if (numel <= DT__PRINT_THRESHOLD)   /* only compared to the threshold: no overflow */
      numel = s->dims[d] > DT__PRINT_THRESHOLD ? DT__PRINT_THRESHOLD + 1 : numel * s->dims[d];
  }
  if (!empty && !host) return -1;

  o.buf = buf; o.cap = n; o.len = 0; o.col = 0;
  memset(&c, 0, sizeof c);
  c.host = host; c.t = t; c.ndim = s->ndim;
  for (d = c.ndim - 1; d >= 0; d--) {
    c.dims[d] = s->dims[d];
    /* an empty tensor's dims may multiply past int64 ((0, 2^62, 4)); it reads no element */
    c.strides[d] = d == c.ndim - 1 || empty ? 1 : c.strides[d + 1] * c.dims[d + 1];
  }
  c.summarize = !empty && numel > DT__PRINT_THRESHOLD;

  dt__print_puts(&o, "tensor(");
  if (empty) {
    dt__print_puts(&o, "[]");
  } else {
    dt__print_formatter(&c);
    if (c.ndim == 0) dt__print_elem(&o, &c, 0);
    else dt__print_rec(&o, &c, 0, 0, DT__PRINT_INDENT);
  }

  /* _str_intern: device, then (empty) size, then dtype. */
  last = o.col + 2;   /* len(s) - s.rfind("\n") + 1 */
  if (device && strcmp(device, "cpu") != 0) dt__print_suffix(&o, &last, "device='", device, "'");
  if (empty) {
    if (c.ndim != 1) {
      int k = 0;
      memcpy(sizebuf, "size=(", 6); k = 6;
      for (d = 0; d < c.ndim; d++) {
        if (d) { sizebuf[k++] = ','; sizebuf[k++] = ' '; }
        k += dt__fmt_int(sizebuf + k, c.dims[d]);
      }
      sizebuf[k++] = ')'; sizebuf[k] = '\0';
      dt__print_suffix(&o, &last, sizebuf, "", "");
    }
    if (t != DT_F32) dt__print_suffix(&o, &last, "dtype=torch.", tname, "");
  } else if (t == DT_F64 || t == DT_I32 || t == DT_U8 || t == DT_F16 || t == DT_BF16) { /* not the defaults float32, int64, bool */
    dt__print_suffix(&o, &last, "dtype=torch.", tname, "");
  }
  dt__print_putc(&o, ')');

  if (n) buf[o.len < n ? o.len : n - 1] = '\0';
  return o.len > (size_t)0x7fffffff ? -1 : (int)o.len;
}

DTDEF int dt_snprint(char *buf, size_t n, const dt_tensor *t) {
  const char *op = "dt_snprint";
  void *host = NULL;
  char dev[48];
  int r;
  if (buf && n > 0) buf[0] = 0;
  if (dt__check_tensor(op, "t", t) != DT_OK) return -1;
  if (!buf && n > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: buf is NULL but n is %llu", op, (unsigned long long)n); return -1; }
  if (dt__graph_forbid(op, t->st->device, "a copy to host memory") != DT_OK) return -1;
  if (t->nbytes > 0) {
    if (t->st->device.type == DT_CPU) host = t->st->ptr;
    else if (!(host = DT_MALLOC(t->nbytes))) {
      char b[32];
      dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host: tried to allocate %s", op, dt__bytes_str((double)t->nbytes, b, sizeof b));
      return -1;
    } else if (dt__copy_bytes(op, dt_cpu(), host, t->st->device, t->st->ptr, t->nbytes) != DT_OK) {
      DT_FREE(host);
      return -1;
    }
  }
  r = dt__format_tensor(buf, n, host, t->dtype, &t->shape,
                        t->st->device.type == DT_CPU ? NULL : dt_device_str(t->st->device, dev, sizeof dev));
  if (host && host != t->st->ptr) DT_FREE(host);
  return r;
}

/* f gets the text sn writes of obj (snprintf's contract), then a newline: written into the
   caller's n bytes at small when it fits, else into one allocation of its length. dt_fprint's and
   dt_module_fprint's. */
static dt_status dt__fprint_text(FILE *f, const char *op, char *small, size_t n, int (*sn)(char *, size_t, const void *),
                                 const void *obj) {
  char *buf = small;
  int len;
  dt_status s = DT_OK;
  if ((len = sn(small, n, obj)) < 0) return dt_last_status();
  if ((size_t)len >= n) {
    if (!(buf = (char *)DT_MALLOC((size_t)len + 1)))
      return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host formatting %d characters", op, len);
    if (sn(buf, (size_t)len + 1, obj) < 0) { DT_FREE(buf); return dt_last_status(); }
  }
  if (fputs(buf, f) < 0 || fputc('\n', f) == EOF) s = dt__fail(DT_ERR_IO, "%s: writing failed", op);
  if (buf != small) DT_FREE(buf);
  return s;
}

static int dt__snprint_tensor(char *buf, size_t n, const void *t) { return dt_snprint(buf, n, (const dt_tensor *)t); }

DTDEF dt_status dt_fprint(FILE *f, const dt_tensor *t) {
  const char *op = "dt_fprint";
  char small[512];
  if (!f) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: f is NULL", op);
  if (!t) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: t is NULL", op);
  return dt__fprint_text(f, op, small, sizeof small, dt__snprint_tensor, t);
}

DTDEF dt_status dt_print(const dt_tensor *t) {
  if (!t) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_print: t is NULL");
  return dt_fprint(stdout, t);
}
