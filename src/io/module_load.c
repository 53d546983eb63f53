typedef struct dt__st_entry {
  int seen, idx, ndim;           /* ndim: all the dims the file gives; the first DT_MAX_DIMS are kept */
  char dtype[16];
  size_t dtype_len;
  uint64_t dims[DT_MAX_DIMS], begin, end;
} dt__st_entry;

/* The dtypes the format knows (its reference's Dtype): others are not safetensors. */
static int dt__st_known_dtype(const dt__st_entry *e) {
  static const char *const known[] = {"BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64",
                                      "U64", "C64", "F4", "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0", "E8M0"};
  size_t i;
  for (i = 0; i < sizeof known / sizeof known[0]; i++)
    if (e->dtype_len == strlen(known[i]) && strcmp(e->dtype, known[i]) == 0) return 1;
  return 0;
}

/* A file's dtype string for a message, as JSON writes it (a NUL or control byte escaped,
   so "F3\u00002" does not show as "F3"), its first 15 bytes and "..." past them. */
static const char *dt__st_dtype_shown(const dt__st_entry *e, char *buf, size_t n) {
  size_t i, at = 0, len = e->dtype_len < sizeof e->dtype - 1 ? e->dtype_len : sizeof e->dtype - 1;
  buf[0] = 0;
  for (i = 0; i < len && at + 8 < n; i++) {
    unsigned char c = (unsigned char)e->dtype[i];
    if (c < 0x20) at += (size_t)snprintf(buf + at, n - at, "\\u%04x", (unsigned)c);
    else if (c == '"' || c == '\\') { buf[at++] = '\\'; buf[at++] = (char)c; buf[at] = 0; }
    else { buf[at++] = (char)c; buf[at] = 0; }
  }
  if (e->dtype_len > len && at + 4 <= n) memcpy(buf + at, "...", 4);
  return buf;
}

/* One tensor's description: {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, each
   key once; other keys are skipped (their values checked), as serde's derive does. */
static int dt__st_parse_entry(dt__json *j, dt__st_entry *e) {
  static const char *const keys[3] = {"dtype", "shape", "data_offsets"};
  char key[16];
  size_t klen;
  int first, r, have = 0, k;
  if (!dt__json_open(j, '{')) return 0;
  for (first = 1; (r = dt__json_next(j, '}', first)) > 0; first = 0) {
    if (!dt__json_string(j, key, sizeof key, &klen) || !dt__json_eat(j, ':')) return dt__json_bad(j, "expected \"key\": value");
    for (k = 0; k < 3 && !(klen == strlen(keys[k]) && strcmp(key, keys[k]) == 0); k++) {}
    if (k < 3 && (have & (1 << k))) return dt__json_bad(j, k == 0 ? "a second \"dtype\"" : k == 1 ? "a second \"shape\"" : "a second \"data_offsets\"");
    if (k < 3) have |= 1 << k;
    if (k == 0) {
      if (!dt__json_peek(j, '"')) return dt__json_bad(j, "\"dtype\" must be a string");
      if (!dt__json_string(j, e->dtype, sizeof e->dtype, &e->dtype_len)) return 0;
    } else if (k == 1) {
      int fr, r2;
      uint64_t v;
      e->ndim = 0;
      if (!dt__json_open(j, '[')) return dt__json_bad(j, "\"shape\" must be an array of non-negative integers");
      for (fr = 1; (r2 = dt__json_next(j, ']', fr)) > 0; fr = 0) {
        if (!dt__json_uint(j, &v)) return 0;
        if (e->ndim < DT_MAX_DIMS) e->dims[e->ndim] = v;
        e->ndim++;
      }
      if (r2 < 0) return 0;
    } else if (k == 2) {
      if (!dt__json_open(j, '[')) return dt__json_bad(j, "\"data_offsets\" must be [begin, end]");
      if (!dt__json_uint(j, &e->begin) || !dt__json_eat(j, ',') || !dt__json_uint(j, &e->end) || !dt__json_eat(j, ']'))
        return dt__json_bad(j, "\"data_offsets\" must be [begin, end]");
      j->depth--;
    } else if (!dt__json_skip(j)) return 0;
  }
  if (r < 0) return 0;
  if (have != 7) return dt__json_bad(j, !(have & 1) ? "no \"dtype\"" : !(have & 2) ? "no \"shape\"" : "no \"data_offsets\"");
  return 1;
}

/* "__metadata__": an object of strings, or null (the reference's Option<HashMap<String, String>>). */
static int dt__st_parse_metadata(dt__json *j) {
  int first, r;
  dt__json_ws(j);
  if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) { j->p += 4; return 1; }
  if (!dt__json_peek(j, '{')) return dt__json_bad(j, "\"__metadata__\" must be an object of strings");
  if (!dt__json_open(j, '{')) return 0;
  for (first = 1; (r = dt__json_next(j, '}', first)) > 0; first = 0) {
    if (!dt__json_string(j, NULL, 0, NULL) || !dt__json_eat(j, ':')) return dt__json_bad(j, "expected \"key\": value");
    if (!dt__json_peek(j, '"')) return dt__json_bad(j, "\"__metadata__\"'s values must be strings");
    if (!dt__json_string(j, NULL, 0, NULL)) return 0;
  }
  return r == 0;
}

/* Data offsets in file order: by begin, then end (zero-byte tensors first at a shared offset). */
static int dt__st_cmp(const void *a, const void *b) {
  const dt__st_entry *x = (const dt__st_entry *)a, *y = (const dt__st_entry *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* A file read front to back. POSIX: opened without blocking and refused unless it is a regular
   file (a FIFO would wait for a writer forever; a directory or a device is no safetensors file). */
typedef struct dt__rfile {
#if defined(_WIN32)
  FILE *f;
#else
  int fd;
#endif
  int err;   /* the errno of a failed read, for the message */
  int64_t size;   /* the file's size when it opened, -1 unknown: for the messages about a header length */
} dt__rfile;

static dt_status dt__rfile_open(const char *op, const char *path, dt__rfile *r) {
  const char *kind = NULL;
  char eb[32];
#if defined(_WIN32)
  struct _stat64 st;
  r->err = 0; r->size = -1;
  if (_stat64(path, &st) == 0) {
    if ((st.st_mode & _S_IFMT) != _S_IFREG) kind = (st.st_mode & _S_IFMT) == _S_IFDIR ? "a directory" : "";
    else r->size = (int64_t)st.st_size;
  }
  if (!kind && !(r->f = fopen(path, "rb"))) return dt__fail(DT_ERR_IO, "%s: cannot open %s: %s", op, path, dt__errno_text(errno, eb, sizeof eb));
#else
  struct stat st;
  int fd, fl, e;
  r->err = 0; r->size = -1;
  do fd = open(path, O_RDONLY | O_NONBLOCK | DT__O_CLOEXEC); while (fd < 0 && errno == EINTR);
  if (fd < 0) return dt__fail(DT_ERR_IO, "%s: cannot open %s: %s", op, path, dt__errno_text(errno, eb, sizeof eb));
  dt__cloexec(fd);
  if (fstat(fd, &st) != 0) {
    e = errno;
    close(fd);
    return dt__fail(DT_ERR_IO, "%s: cannot read %s: %s", op, path, dt__errno_text(e, eb, sizeof eb));
  }
  if (!S_ISREG(st.st_mode))
    kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
         : S_ISBLK(st.st_mode) ? "a block device" : "";
  if (kind) close(fd);
  else {
    if ((fl = fcntl(fd, F_GETFL)) >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); /* reads of a regular file never wait anyway */
    r->fd = fd;
    r->size = (int64_t)st.st_size;
  }
#endif
  if (kind) return dt__fail(DT_ERR_IO, "%s: %s is %s%snot a regular file", op, path, kind, kind[0] ? ", " : "");
  return DT_OK;
}

/* n bytes into buf: 1 when they all came, 0 when the file ended first, -1 on an error; *got: how many came. */
static int dt__rfile_read(dt__rfile *r, void *buf, size_t n, size_t *got) {
  size_t at = 0;
#if defined(_WIN32)
  at = fread(buf, 1, n, r->f);
  if (got) *got = at;
  if (at != n && ferror(r->f)) { r->err = errno; return -1; }
  return at == n;
#else
  while (at < n) {
    size_t want = n - at < ((size_t)1 << 30) ? n - at : ((size_t)1 << 30);
    long k = (long)read(r->fd, (char *)buf + at, want);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (got) *got = at;
      if (k < 0) r->err = errno;
      return k < 0 ? -1 : 0;
    }
    at += (size_t)k;
  }
  if (got) *got = at;
  return 1;
#endif
}

/* A failed read of r as a status. */
static dt_status dt__rfile_read_failed(const char *op, const char *path, const dt__rfile *r) {
  char eb[32];
  return dt__fail(DT_ERR_IO, "%s: reading %s failed: %s", op, path, dt__errno_text(r->err, eb, sizeof eb));
}

static void dt__rfile_close(dt__rfile *r) {
#if defined(_WIN32)
  fclose(r->f);
#else
  close(r->fd);
#endif
}

/* Reading: the header's length and its bytes, in a buffer that grows as they arrive (a length
   that lies about a short file costs no more memory than the file holds). */
static dt_status dt__st_read_header(const char *op, const char *path, dt__rfile *f, char **hdr_out, size_t *hlen_out) {
  unsigned char lenbuf[8];
  uint64_t hlen = 0;
  size_t got = 0, cap, want;
  char *hdr;
  int k, rc;
  if ((rc = dt__rfile_read(f, lenbuf, 8, &got)) != 1) {
    if (rc < 0) return dt__rfile_read_failed(op, path, f);
    return dt__fail(DT_ERR_FORMAT, "%s: %s is too short for a safetensors file (%llu bytes)", op, path, (unsigned long long)got);
  }
  for (k = 7; k >= 0; k--) hlen = (hlen << 8) | lenbuf[k];
  /* a length past the format's limit is no safetensors file (a text file's first 8 characters
     read as a little-endian number are around 10^18); one past the end of the file may be a
     file cut short */
  if (hlen < 2 || hlen > DT__ST_MAX_HEADER)
    return dt__fail(DT_ERR_FORMAT, "%s: %s is not a safetensors file: its first 8 bytes, read as the header length, give %llu, "
                    "which is not within the format's 2 bytes to 100 MB", op, path, (unsigned long long)hlen);
  if (f->size >= 8 && hlen > (uint64_t)f->size - 8)
    return dt__fail(DT_ERR_FORMAT, "%s: %s is not a safetensors file, or is cut short: its first 8 bytes, read as the header length, "
                    "give %llu, but only %llu bytes follow them", op, path, (unsigned long long)hlen, (unsigned long long)f->size - 8);
  cap = (size_t)(hlen < 65536 ? hlen : 65536);
  got = 0;
  if (!(hdr = (char *)DT_MALLOC(cap + 1))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  while (got < (size_t)hlen) {
    if (got == cap) {
      size_t ncap = cap * 2 < (size_t)hlen ? cap * 2 : (size_t)hlen;
      char *bigger = (char *)DT_MALLOC(ncap + 1);
      if (!bigger) { DT_FREE(hdr); return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); }
      memcpy(bigger, hdr, got);
      DT_FREE(hdr);
      hdr = bigger; cap = ncap;
    }
    want = cap - got;
    if ((rc = dt__rfile_read(f, hdr + got, want, NULL)) != 1) {
      DT_FREE(hdr);
      if (rc < 0) return dt__rfile_read_failed(op, path, f);
      return dt__fail(DT_ERR_FORMAT, "%s: %s: header length %llu runs past the end of the file", op, path, (unsigned long long)hlen);
    }
    got = cap;
  }
  hdr[hlen] = 0;
  *hdr_out = hdr; *hlen_out = (size_t)hlen;
  return DT_OK;
}

/* The module's names, sorted, for finding a file's in O(log n). */
typedef struct dt__st_name { const char *name; int idx; } dt__st_name;
static int dt__st_name_cmp(const void *a, const void *b) {
  return strcmp(((const dt__st_name *)a)->name, ((const dt__st_name *)b)->name);
}

/* Validating the JSON, and matching its tensors to the module's names (sorted in byname):
   ents[i] gets the entry of m->names[i]. Each tensor once; those the module lacks are counted
   in *nunknown, the first named in unknown (refused later, after the shapes of those it has:
   a network of another architecture is told by a shape more clearly than by a name). */
static dt_status dt__st_parse_header(const char *op, const char *path, dt_module *m, const dt__st_name *byname, const char *hdr,
                                     size_t hlen, dt__st_entry *ents, char *unknown, size_t ucap, int *nunknown) {
  char name[DT__NAME_MAX + 1];
  size_t nlen, bad;
  dt__json j;
  int first, r, meta = 0, i;
  if ((bad = dt__utf8_check((const unsigned char *)hdr, hlen)) < hlen)
    return dt__fail(DT_ERR_FORMAT, "%s: %s: the header is not valid UTF-8 (byte %llu of the file)", op, path,
                    (unsigned long long)(bad + 8));
  memset(&j, 0, sizeof j);
  j.p = j.begin = hdr; j.end = hdr + hlen;
  if (!dt__json_open(&j, '{')) goto bad_json;
  for (first = 1; (r = dt__json_next(&j, '}', first)) > 0; first = 0) {
    dt__st_entry e;
    if (!dt__json_string(&j, name, sizeof name, &nlen) || !dt__json_eat(&j, ':')) { dt__json_bad(&j, "expected \"name\": {...}"); goto bad_json; }
    if (nlen == 12 && memcmp(name, "__metadata__", 12) == 0) {
      if (meta++) { dt__json_bad(&j, "a second \"__metadata__\""); goto bad_json; }
      if (!dt__st_parse_metadata(&j)) goto bad_json;
      continue;
    }
    memset(&e, 0, sizeof e);
    if (!dt__st_parse_entry(&j, &e))
      return dt__fail(DT_ERR_FORMAT, "%s: %s: the entry of \"%.200s\" is not valid: %s (byte %ld of the file)", op, path, name,
                      j.why ? j.why : "malformed", (long)(j.at - hdr) + 8);
    {
      dt__st_name key, *hit = NULL;
      key.name = name; key.idx = 0;
      if (nlen == strlen(name) && m->nparams) /* (a name with a NUL in it is none of the module's) */
        hit = (dt__st_name *)bsearch(&key, byname, (size_t)m->nparams, sizeof *byname, dt__st_name_cmp);
      i = hit ? hit->idx : m->nparams;
    }
    if (i == m->nparams) {
      if ((*nunknown)++ == 0) snprintf(unknown, ucap, "%.200s%s", name, nlen > 200 ? "..." : "");
      continue;
    }
    if (ents[i].seen) return dt__fail(DT_ERR_FORMAT, "%s: %s holds \"%s\" twice", op, path, m->names[i]);
    ents[i] = e;
    ents[i].seen = 1;
    ents[i].idx = i;
  }
  if (r < 0) goto bad_json;
  dt__json_ws(&j);
  if (j.p != j.end) { dt__json_bad(&j, "bytes after the header's object"); goto bad_json; }
  return DT_OK;
bad_json:
  return dt__fail(DT_ERR_FORMAT, "%s: %s: the header is not valid JSON: %s (byte %ld of the file)", op, path,
                  j.why ? j.why : "malformed", (long)((j.why ? j.at : j.p) - hdr) + 8);
}

/* "(2, 3)" for a file's shape, whose dims may not fit an int64. */
static const char *dt__st_shape_str(const dt__st_entry *e, char *buf, size_t n) {
  size_t at = (size_t)snprintf(buf, n, "(");
  int i;
  for (i = 0; i < e->ndim && i < DT_MAX_DIMS && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, i ? ", %llu" : "%llu", (unsigned long long)e->dims[i]);
  if (at < n) snprintf(buf + at, n - at, e->ndim > DT_MAX_DIMS ? ", ...: %d dims)" : e->ndim == 1 ? ",)" : ")", e->ndim);
  return buf;
}

/* Validating each tensor against the module's: of its dtype and shape, then each name the
   file or the module lacks, then the byte counts. A dtype or shape that does not fit names
   the names that do not match too (another network's file). */
static dt_status dt__st_check_entries(const char *op, const char *path, dt_module *m, const dt__st_entry *ents,
                                      const char *unknown, int nunknown) {
  char un[280], mis[280], names[600];
  int i, k, nmissing = 0, missing = -1;
  for (i = 0; i < m->nparams; i++)
    if (!ents[i].seen && nmissing++ == 0) missing = i;
  un[0] = mis[0] = 0;
  if (nunknown) snprintf(un, sizeof un, nunknown > 1 ? "\"%s\" and %d more, which the module does not have" : "\"%s\", which the module does not have",
                         unknown, nunknown - 1);
  if (nmissing) snprintf(mis, sizeof mis, nmissing > 1 ? "the module's \"%.200s\" and %d more are not in the file" : "the module's \"%.200s\" is not in the file",
                         m->names[missing], nmissing - 1);
  snprintf(names, sizeof names, "%s%s%s%s", un[0] ? "; the file also holds " : "", un, mis[0] ? "; " : "", mis);
  for (i = 0; i < m->nparams; i++) {
    const dt_tensor *t = m->params[i];
    const dt__st_entry *e = &ents[i];
    char a[200], b[200];
    int same;
    if (!e->seen) continue;
    if (!dt__st_known_dtype(e))
    {
      char db[112];
      return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" has dtype \"%s\", which is not a safetensors dtype", op, path, m->names[i],
                      dt__st_dtype_shown(e, db, sizeof db));
    }
    if (strcmp(e->dtype, dt__st_dtype(t->dtype)) != 0)
      return dt__fail(DT_ERR_DTYPE, "%s: %s: \"%s\" is %s but the module's is %s%s", op, path, m->names[i], e->dtype, dt__st_dtype(t->dtype),
                      names);
    same = e->ndim == t->shape.ndim;
    for (k = 0; same && k < e->ndim; k++) same = e->dims[k] == (uint64_t)t->shape.dims[k];
    if (!same)
      return dt__fail(DT_ERR_SHAPE, "%s: %s: \"%s\" has shape %s but the module's has %s%s", op, path, m->names[i],
                      dt__st_shape_str(e, a, sizeof a), dt__shape_str(&t->shape, b, sizeof b), names);
  }
  if (nunknown) return dt__fail(DT_ERR_FORMAT, "%s: %s holds %s%s%s", op, path, un, mis[0] ? "; " : "", mis);
  if (nmissing) return dt__fail(DT_ERR_FORMAT, "%s: %s has no \"%s\"%s", op, path, m->names[missing],
                                nmissing > 1 ? " (nor others of the module's)" : "");
  for (i = 0; i < m->nparams; i++) {
    const dt_tensor *t = m->params[i];
    const dt__st_entry *e = &ents[i];
    if (e->begin > e->end || e->end - e->begin != (uint64_t)t->nbytes)
      return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" has data_offsets [%llu, %llu], which do not hold its %llu bytes",
                      op, path, m->names[i], (unsigned long long)e->begin, (unsigned long long)e->end,
                      (unsigned long long)t->nbytes);
  }
  return DT_OK;
}

/* Checking the byte ranges: sorted by offset, the tensors tile the data buffer from byte 0,
   each beginning where the one before ends (no holes, no overlaps; no bytes after the last is
   checked at the end of the file). *end: where the data ends. Sorts ents. */
static dt_status dt__st_check_ranges(const char *op, const char *path, dt_module *m, dt__st_entry *ents, uint64_t *end) {
  uint64_t at = 0;
  int i;
  if (m->nparams > 1) qsort(ents, (size_t)m->nparams, sizeof *ents, dt__st_cmp);
  for (i = 0; i < m->nparams; i++) {
    const dt__st_entry *e = &ents[i], *p = i ? &ents[i - 1] : NULL;
    if (e->begin == at) { at = e->end; continue; }
    if (!p)
      return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\", the first tensor in the data, begins at byte %llu, not 0 (safetensors data has no gaps)",
                      op, path, m->names[e->idx], (unsigned long long)e->begin);
    if (e->begin > at)
      return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" begins at data byte %llu but \"%s\" before it ends at %llu (safetensors data has no gaps)",
                      op, path, m->names[e->idx], (unsigned long long)e->begin, m->names[p->idx], (unsigned long long)at);
    return dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" at data bytes [%llu, %llu] overlaps \"%s\" at [%llu, %llu]", op, path,
                    m->names[e->idx], (unsigned long long)e->begin, (unsigned long long)e->end, m->names[p->idx],
                    (unsigned long long)p->begin, (unsigned long long)p->end);
  }
  *end = at;
  return DT_OK;
}

/* Reading the data: each tensor in file order, straight onto the module's device into fresh[],
   then one byte more must be the end of the file. */
static dt_status dt__st_read_data(const char *op, const char *path, dt_module *m, dt__rfile *f, const dt__st_entry *ents,
                                  uint64_t end, dt_tensor **fresh) {
  unsigned char one;
  int k, rc;
  for (k = 0; k < m->nparams; k++) {
    const dt__st_entry *e = &ents[k];
    dt_tensor *t = m->params[e->idx];
    void *host = NULL;
    if (t->nbytes) {
      if (!(host = DT_MALLOC(t->nbytes))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
      if ((rc = dt__rfile_read(f, host, t->nbytes, NULL)) != 1) {
        DT_FREE(host);
        if (rc < 0) return dt__rfile_read_failed(op, path, f);
        return dt__fail(DT_ERR_FORMAT, "%s: %s is cut short: the data of \"%s\" is [%llu, %llu] but the file ends before", op, path,
                        m->names[e->idx], (unsigned long long)e->begin, (unsigned long long)e->end);
      }
    }
    fresh[e->idx] = dt_from_data(host, t->shape, t->dtype, t->st->device);
    if (host) DT_FREE(host);
    if (!fresh[e->idx]) return dt_last_status();
  }
  if ((rc = dt__rfile_read(f, &one, 1, NULL)) != 0) {
    if (rc < 0) return dt__rfile_read_failed(op, path, f);
    if (m->nparams)
      return dt__fail(DT_ERR_FORMAT, "%s: %s: bytes follow the data of the last tensor, \"%s\", which ends at data byte %llu (safetensors data has no trailing bytes)",
                      op, path, m->names[ents[m->nparams - 1].idx], (unsigned long long)end);
    return dt__fail(DT_ERR_FORMAT, "%s: %s holds no tensors but has data bytes after its header", op, path);
  }
  return DT_OK;
}

/* The file is read front to back and never seeked: the header, then (once the offsets are
   known to tile the data buffer) each tensor in the order of its data, then one byte more
   must be the end of the file. So no file size is needed, and none is limited to a long. */
DTDEF dt_status dt_module_load(dt_module *m, const char *path) {
  const char *op = "dt_module_load";
  dt__rfile f;
  char *hdr = NULL;
  size_t hlen = 0;
  uint64_t end = 0;
  dt__st_entry *ents = NULL;
  dt__st_name *byname = NULL;
  dt_tensor **fresh = NULL;
  dt_module *mm, view;
  char unknown[208];
  dt_status s;
  int i, nunknown = 0;
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  if (!path) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
  if (!dt__little_endian()) return dt__fail(DT_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", op);
  if ((s = dt__params_build(op, m)) != DT_OK) return s;
  if (!(m = dt__state_view(op, mm = m, &view))) return dt_last_status(); /* with its buffers */
  for (i = 0; i < m->nparams; i++)
    if (!m->params[i]) {
      s = dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not initialised yet (a lazy layer: run a forward first)", op, m->names[i]);
      dt__state_view_free(mm, m);
      return s;
    }
  ents = (dt__st_entry *)DT_MALLOC(sizeof(dt__st_entry) * (size_t)(m->nparams + 1));
  fresh = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)(m->nparams + 1));
  byname = (dt__st_name *)DT_MALLOC(sizeof(dt__st_name) * (size_t)(m->nparams + 1));
  if (!ents || !fresh || !byname) {
    if (ents) DT_FREE(ents);
    if (fresh) DT_FREE(fresh);
    if (byname) DT_FREE(byname);
    dt__state_view_free(mm, m);
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  for (i = 0; i < m->nparams; i++) { byname[i].name = m->names[i]; byname[i].idx = i; }
  if (m->nparams > 1) qsort(byname, (size_t)m->nparams, sizeof *byname, dt__st_name_cmp);
  memset(ents, 0, sizeof(dt__st_entry) * (size_t)(m->nparams + 1));
  memset(fresh, 0, sizeof(dt_tensor *) * (size_t)(m->nparams + 1));
  if ((s = dt__rfile_open(op, path, &f)) == DT_OK) {
    if ((s = dt__st_read_header(op, path, &f, &hdr, &hlen)) == DT_OK &&
        (s = dt__st_parse_header(op, path, m, byname, hdr, hlen, ents, unknown, sizeof unknown, &nunknown)) == DT_OK &&
        (s = dt__st_check_entries(op, path, m, ents, unknown, nunknown)) == DT_OK &&
        (s = dt__st_check_ranges(op, path, m, ents, &end)) == DT_OK &&
        (s = dt__st_read_data(op, path, m, &f, ents, end, fresh)) == DT_OK) {
      int prev = dt__no_grad; /* the parameters are leaves that require grad: written with grad mode off */
      dt__no_grad = 1;
      for (i = 0; i < m->nparams && s == DT_OK; i++) s = dt_copy_(m->params[i], fresh[i]); /* into the existing tensors: borrowed pointers stay valid */
      dt__no_grad = prev;
    }
    dt__rfile_close(&f);
  }
  for (i = 0; i < m->nparams; i++) dt_release(fresh[i]);
  DT_FREE(fresh);
  DT_FREE(ents);
  DT_FREE(byname);
  if (hdr) DT_FREE(hdr);
  dt__state_view_free(mm, m);
  return s;
}
