/* Writes `name` as a JSON string ("" and \ escaped) into hdr at len (measures when hdr is NULL). */
static size_t dt__st_put_name(char *hdr, size_t len, const char *name) {
  const char *p;
  if (hdr) hdr[len] = '"';
  len++;
  for (p = name; *p; p++) {
    if (*p == '"' || *p == '\\') { if (hdr) hdr[len] = '\\'; len++; }
    if (hdr) hdr[len] = *p;
    len++;
  }
  if (hdr) hdr[len] = '"';
  return len + 1;
}

DTDEF dt_status dt_save_tensors(const char *path, const char *const *names, const dt_tensor *const *ts, int n) {
  const char *op = "dt_save_tensors";
  char *hdr = NULL, num[128];
  size_t len = 0, maxbytes = 0, k, bad;
  uint64_t off = 0;
  unsigned char lenbuf[8];
  void *host = NULL;
  dt__wfile f;
  int opened = 0;
  dt_status s = DT_OK;
  int i, j, pass, d;
  if (!path) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
  if (n < 0) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: n is %d", op, n);
  if (n > 0 && (!names || !ts)) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is NULL for n = %d", op, names ? "ts" : "names", n);
  if (!dt__little_endian()) return dt__fail(DT_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", op);
  for (i = 0; i < n; i++) {
    const char *p;
    if (!names[i]) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] is NULL", op, i);
    if (!ts[i]) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: ts[%d] (\"%.64s\") is NULL", op, i, names[i]);
    if (!names[i][0] || strcmp(names[i], "__metadata__") == 0)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] \"%.64s\" is not a tensor name (not empty, not __metadata__)", op, i, names[i]);
    for (p = names[i]; *p; p++)
      if ((unsigned char)*p < 0x20)
        return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] has a control character (byte %d)", op, i, (int)(p - names[i]));
    if ((bad = dt__utf8_check((const unsigned char *)names[i], (size_t)(p - names[i]))) < (size_t)(p - names[i]))
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] is not valid UTF-8: byte %zu (0x%02x, after \"%.*s\"), which safetensors readers refuse",
                      op, i, bad, (unsigned)(unsigned char)names[i][bad], (int)(bad < 64 ? bad : 64), names[i] + (bad < 64 ? 0 : bad - 64));
    if (ts[i]->nbytes > maxbytes) maxbytes = ts[i]->nbytes;
  }
  /* each name once: sorted, a repeat sits next to itself (O(n log n), not O(n^2)) */
  if (n > 1) {
    dt__st_name *by = (dt__st_name *)DT_MALLOC(sizeof(dt__st_name) * (size_t)n);
    if (!by) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    for (i = 0; i < n; i++) { by[i].name = names[i]; by[i].idx = i; }
    qsort(by, (size_t)n, sizeof *by, dt__st_name_cmp);
    for (i = 1; i < n && strcmp(by[i - 1].name, by[i].name) != 0; i++) {}
    if (i < n) {
      j = by[i - 1].idx < by[i].idx ? by[i - 1].idx : by[i].idx;
      d = by[i - 1].idx < by[i].idx ? by[i].idx : by[i - 1].idx;
      dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: names[%d] and names[%d] are both \"%.64s\"", op, j, d, names[j]);
      DT_FREE(by);
      return DT_ERR_INVALID_ARGUMENT;
    }
    DT_FREE(by);
  }
  /* the header, measured on pass 0 and written on pass 1 */
  for (pass = 0; pass < 2; pass++) {
    len = 0; off = 0;
    if (hdr) hdr[len] = '{';
    len++;
    for (i = 0; i < n; i++) {
      const dt_tensor *t = ts[i];
      size_t at = 0;
      if (i) { if (hdr) hdr[len] = ','; len++; }
      len = dt__st_put_name(hdr, len, names[i]);
      at += (size_t)snprintf(num, sizeof num, ":{\"dtype\":\"%s\",\"shape\":[", dt__st_dtype(t->dtype));
      if (hdr) memcpy(hdr + len, num, at);
      len += at;
      for (d = 0; d < t->shape.ndim; d++) {
        at = (size_t)snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)t->shape.dims[d]);
        if (hdr) memcpy(hdr + len, num, at);
        len += at;
      }
      at = (size_t)snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                            (unsigned long long)(off + t->nbytes));
      if (hdr) memcpy(hdr + len, num, at);
      len += at;
      off += t->nbytes;
    }
    k = (size_t)snprintf(num, sizeof num, "%s\"__metadata__\":{\"format\":\"pt\"}}", n ? "," : "");
    if (hdr) memcpy(hdr + len, num, k);
    len += k;
    if (pass == 0 && (uint64_t)(len + 7) / 8 * 8 > DT__ST_MAX_HEADER)   /* what the loaders (and safetensors) read at most */
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the header would be %zu bytes, past the format's 100 MB (fewer or shorter names)", op, (len + 7) / 8 * 8);
    if (pass == 0 && !(hdr = (char *)DT_MALLOC(len + 8))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
  }
  while (len % 8) hdr[len++] = ' ';   /* the data starts 8-byte aligned, as safetensors writes it */
  for (k = 0; k < 8; k++) lenbuf[k] = (unsigned char)((uint64_t)len >> (8 * k));
  if (maxbytes && !(host = DT_MALLOC(maxbytes))) { s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); goto done; }
  if ((s = dt__wfile_open(op, path, &f)) != DT_OK) goto done;
  opened = 1;
  if (!dt__wfile_write(&f, lenbuf, 8) || !dt__wfile_write(&f, hdr, len)) { s = dt__wfile_write_failed(op, path, &f); goto done; }
  for (i = 0; i < n; i++) {
    if (ts[i]->nbytes == 0) continue;
    if ((s = dt_to_host(ts[i], host, maxbytes)) != DT_OK) goto done;
    if (!dt__wfile_write(&f, host, ts[i]->nbytes)) { s = dt__wfile_write_failed(op, path, &f); goto done; }
  }
done:
  if (opened) s = dt__wfile_finish(op, path, &f, s);
  if (host) DT_FREE(host);
  DT_FREE(hdr);
  return s;
}

DTDEF void dt_free_tensors(int n, char **names, dt_tensor **ts) {
  int i;
  for (i = 0; i < n; i++) {
    if (names && names[i]) DT_FREE(names[i]);
    if (ts) dt_release(ts[i]);
  }
  if (names) DT_FREE(names);
  if (ts) DT_FREE(ts);
}

/* Reads nb bytes of f into a new buffer *out (NULL for 0) that grows as they arrive, so a
   header that claims more data than the file holds costs no more than the file.
   1: done; 0: the file ends first; -1: a read error; -2: out of memory. */
static int dt__st_read_grow(dt__rfile *f, size_t nb, void **out) {
  size_t got = 0, cap = nb < ((size_t)1 << 20) ? nb : ((size_t)1 << 20);
  char *buf;
  int rc;
  *out = NULL;
  if (nb == 0) return 1;
  if (!(buf = (char *)DT_MALLOC(cap))) return -2;
  for (;;) {
    if ((rc = dt__rfile_read(f, buf + got, cap - got, NULL)) != 1) { DT_FREE(buf); return rc; }
    got = cap;
    if (got == nb) break;
    {
      size_t ncap = cap < nb / 2 ? cap * 2 : nb;
      char *bigger = (char *)DT_MALLOC(ncap);
      if (!bigger) { DT_FREE(buf); return -2; }
      memcpy(bigger, buf, got);
      DT_FREE(buf);
      buf = bigger; cap = ncap;
    }
  }
  *out = buf;
  return 1;
}

/* The header's tensors, in its order, into the growing arrays *ents and *names (n of them,
   room for *cap); the module loader's JSON reader, entry parser and metadata rules. */
static dt_status dt__st_list_header(const char *op, const char *path, const char *hdr, size_t hlen, dt__st_entry **ents,
                                    char ***names, dt_tensor ***ts, int *n, int *cap) {
  char name[256];
  size_t nlen, bad;
  dt__json j;
  int first, r, meta = 0, i;
  if ((bad = dt__utf8_check((const unsigned char *)hdr, hlen)) < hlen)
    return dt__fail(DT_ERR_FORMAT, "%s: %s: the header is not valid UTF-8 (byte %zu of the file)", op, path, bad + 8);
  memset(&j, 0, sizeof j);
  j.p = j.begin = hdr; j.end = hdr + hlen;
  if (!dt__json_open(&j, '{')) goto bad_json;
  for (first = 1; (r = dt__json_next(&j, '}', first)) > 0; first = 0) {
    dt__st_entry e;
    const char *start;
    char *own;
    dt__json_ws(&j);
    start = j.p;
    if (!dt__json_string(&j, name, sizeof name, &nlen) || !dt__json_eat(&j, ':')) {
      dt__json_bad(&j, "expected \"name\": {...}");
      goto bad_json;
    }
    if (nlen == 12 && memcmp(name, "__metadata__", 12) == 0) {
      if (meta++) { dt__json_bad(&j, "a second \"__metadata__\""); goto bad_json; }
      if (!dt__st_parse_metadata(&j)) goto bad_json;
      continue;
    }
    /* the name as long as it is: a longer one than name holds is read again, into its own buffer */
    if (!(own = (char *)DT_MALLOC(nlen + 1))) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    if (nlen < sizeof name) memcpy(own, name, nlen + 1);
    else {
      const char *after = j.p;
      j.p = start;
      dt__json_string(&j, own, nlen + 1, NULL);
      j.p = after;
    }
    if (nlen != strlen(own)) {
      dt__fail(DT_ERR_FORMAT, "%s: %s: the tensor name \"%s\\u0000...\" holds a NUL character", op, path, own);
      DT_FREE(own);
      return DT_ERR_FORMAT;
    }
    memset(&e, 0, sizeof e);
    if (!dt__st_parse_entry(&j, &e)) {
      dt__fail(DT_ERR_FORMAT, "%s: %s: the entry of \"%s\" is not valid: %s (byte %ld of the file)", op, path, own,
               j.why ? j.why : "malformed", (long)(j.at - hdr) + 8);
      DT_FREE(own);
      return DT_ERR_FORMAT;
    }
    if (*n == *cap) {   /* ents, names and ts grow together */
      int ncap = *cap ? 2 * *cap : 8;
      dt__st_entry *ne = (dt__st_entry *)DT_MALLOC(sizeof(dt__st_entry) * (size_t)ncap);
      char **nn = (char **)DT_MALLOC(sizeof(char *) * (size_t)ncap);
      dt_tensor **nt = (dt_tensor **)DT_MALLOC(sizeof(dt_tensor *) * (size_t)ncap);
      if (!ne || !nn || !nt) {
        if (ne) DT_FREE(ne);
        if (nn) DT_FREE(nn);
        if (nt) DT_FREE(nt);
        DT_FREE(own);
        return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
      }
      if (*n) { memcpy(ne, *ents, sizeof(dt__st_entry) * (size_t)*n); memcpy(nn, *names, sizeof(char *) * (size_t)*n); }
      memset(nt, 0, sizeof(dt_tensor *) * (size_t)ncap);
      if (*ents) DT_FREE(*ents);
      if (*names) DT_FREE(*names);
      if (*ts) DT_FREE(*ts);
      *ents = ne; *names = nn; *ts = nt; *cap = ncap;
    }
    (*names)[*n] = own;
    (*ents)[*n] = e;
    (*ents)[*n].idx = *n;
    (*n)++;
  }
  if (r < 0) goto bad_json;
  dt__json_ws(&j);
  if (j.p != j.end) { dt__json_bad(&j, "bytes after the header's object"); goto bad_json; }
  /* each name once: sorted, a repeat sits next to itself (O(n log n), not O(n^2)) */
  if (*n > 1) {
    dt__st_name *by = (dt__st_name *)DT_MALLOC(sizeof(dt__st_name) * (size_t)*n);
    if (!by) return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op);
    for (i = 0; i < *n; i++) { by[i].name = (*names)[i]; by[i].idx = i; }
    qsort(by, (size_t)*n, sizeof *by, dt__st_name_cmp);
    for (i = 1; i < *n && strcmp(by[i - 1].name, by[i].name) != 0; i++) {}
    if (i < *n) {
      dt__fail(DT_ERR_FORMAT, "%s: %s holds \"%s\" twice", op, path, by[i].name);
      DT_FREE(by);
      return DT_ERR_FORMAT;
    }
    DT_FREE(by);
  }
  return DT_OK;
bad_json:
  return dt__fail(DT_ERR_FORMAT, "%s: %s: the header is not valid JSON: %s (byte %ld of the file)", op, path,
                  j.why ? j.why : "malformed", (long)((j.why ? j.at : j.p) - hdr) + 8);
}

DTDEF dt_status dt_load_tensors(const char *path, dt_device dev, int *n_out, char ***names_out, dt_tensor ***ts_out) {
  const char *op = "dt_load_tensors";
  dt__rfile f;
  int opened = 0;
  size_t hlen = 0;
  uint64_t at;
  char *hdr = NULL;
  dt__st_entry *ents = NULL, *sorted = NULL;
  char **names = NULL;
  dt_tensor **ts = NULL;
  dt_dtype *types = NULL;
  dt_status s = DT_OK;
  int n = 0, cap = 0, i, k, rc;
  unsigned char one;
  if (n_out) *n_out = 0;
  if (names_out) *names_out = NULL;
  if (ts_out) *ts_out = NULL;
  if (!path) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
  if (!n_out || !names_out || !ts_out)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, !n_out ? "n" : !names_out ? "names" : "ts");
  if ((s = dt__check_device(op, dev)) != DT_OK) return s;
  if (!dt__little_endian()) return dt__fail(DT_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", op);
  if ((s = dt__rfile_open(op, path, &f)) != DT_OK) return s;
  opened = 1;
  if ((s = dt__st_read_header(op, path, &f, &hdr, &hlen)) != DT_OK) goto done;
  if ((s = dt__st_list_header(op, path, hdr, hlen, &ents, &names, &ts, &n, &cap)) != DT_OK) goto done;
  if (n && !(types = (dt_dtype *)DT_MALLOC(sizeof(dt_dtype) * (size_t)n))) { s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); goto done; }
  for (i = 0; i < n; i++) {
    dt__st_entry *e = &ents[i];
    dt_shape es;
    size_t nbytes = 0;
    char sb[200];
    if (!dt__st_known_dtype(e)) {
      char db[112];
      s = dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" has dtype \"%s\", which is not a safetensors dtype", op, path, names[i],
                   dt__st_dtype_shown(e, db, sizeof db));
      goto done;
    }
    if (strcmp(e->dtype, "F32") == 0) types[i] = DT_F32;
    else if (strcmp(e->dtype, "F64") == 0) types[i] = DT_F64;
    else if (strcmp(e->dtype, "I32") == 0) types[i] = DT_I32;
    else if (strcmp(e->dtype, "I64") == 0) types[i] = DT_I64;
    else if (strcmp(e->dtype, "U8") == 0) types[i] = DT_U8;
    else if (strcmp(e->dtype, "BOOL") == 0) types[i] = DT_BOOL;
    else if (strcmp(e->dtype, "F16") == 0) types[i] = DT_F16;
    else if (strcmp(e->dtype, "BF16") == 0) types[i] = DT_BF16;
    else {
      s = dt__fail(DT_ERR_DTYPE, "%s: %s: \"%s\" is %s, which devtensor has no dtype for (F32, F64, I32, I64, U8, BOOL, F16, BF16): convert it before saving, e.g. t.float()",
                   op, path, names[i], e->dtype);
      goto done;
    }
    es = dt_shape0();
    es.ndim = e->ndim;
    for (k = 0; k < e->ndim && k < DT_MAX_DIMS; k++) {
      if (e->dims[k] > (uint64_t)INT64_MAX) { es.ndim = -1; break; }
      es.dims[k] = (int64_t)e->dims[k];
    }
    if (e->ndim > DT_MAX_DIMS || es.ndim < 0) {
      s = dt__fail(DT_ERR_SHAPE, "%s: %s: \"%s\" has shape %s, which devtensor cannot hold (at most %d dims, each below 2^63)", op, path,
                   names[i], dt__st_shape_str(e, sb, sizeof sb), DT_MAX_DIMS);
      goto done;
    }
    if ((s = dt__check_shape(op, &es, types[i], NULL, &nbytes)) != DT_OK) goto done;
    if (e->begin > e->end || e->end - e->begin != (uint64_t)nbytes) {
      s = dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" has data_offsets [%llu, %llu], which do not hold its %zu bytes",
                   op, path, names[i], (unsigned long long)e->begin, (unsigned long long)e->end, nbytes);
      goto done;
    }
  }
  /* the tensors, sorted by offset, tile the data from byte 0 (no holes, no overlaps) */
  /* n > 0 rather than n != 0: a newer GCC's -Walloc-size-larger-than= and -Wstringop-overflow= otherwise
     see a negative int turned into a size */
  if (n > 0 && !(sorted = (dt__st_entry *)DT_MALLOC(sizeof(dt__st_entry) * (size_t)n))) { s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host", op); goto done; }
  if (n > 0) memcpy(sorted, ents, sizeof(dt__st_entry) * (size_t)n);
  if (n > 1) qsort(sorted, (size_t)n, sizeof *sorted, dt__st_cmp);
  for (i = 0, at = 0; i < n; i++) {
    if (sorted[i].begin != at) {
      s = dt__fail(DT_ERR_FORMAT, "%s: %s: \"%s\" begins at data byte %llu but the data before it ends at %llu (safetensors data has no gaps or overlaps)",
                   op, path, names[sorted[i].idx], (unsigned long long)sorted[i].begin, (unsigned long long)at);
      goto done;
    }
    at = sorted[i].end;
  }
  /* read each tensor in the order of its data, straight onto the device */
  for (k = 0; k < n; k++) {
    const dt__st_entry *e = &sorted[k];
    size_t nb = (size_t)(e->end - e->begin);
    dt_shape es = dt_shape0();
    void *host = NULL;
    es.ndim = e->ndim;
    for (i = 0; i < e->ndim; i++) es.dims[i] = (int64_t)e->dims[i];
    if ((rc = dt__st_read_grow(&f, nb, &host)) != 1) {
      if (rc == -2) s = dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host reading \"%s\" (%zu bytes)", op, names[e->idx], nb);
      else if (rc < 0) s = dt__rfile_read_failed(op, path, &f);
      else s = dt__fail(DT_ERR_FORMAT, "%s: %s is cut short: the data of \"%s\" is [%llu, %llu] but the file ends before", op, path,
                        names[e->idx], (unsigned long long)e->begin, (unsigned long long)e->end);
      goto done;
    }
    ts[e->idx] = dt_from_data(host, es, types[e->idx], dev);
    if (host) DT_FREE(host);
    if (!ts[e->idx]) { s = dt_last_status(); goto done; }
  }
  if ((rc = dt__rfile_read(&f, &one, 1, NULL)) != 0) {
    if (rc < 0) s = dt__rfile_read_failed(op, path, &f);
    else s = dt__fail(DT_ERR_FORMAT, "%s: %s: bytes follow the last tensor's data, which ends at data byte %llu (safetensors data has no trailing bytes)",
                      op, path, (unsigned long long)at);
    goto done;
  }
done:
  if (opened) dt__rfile_close(&f);
  if (types) DT_FREE(types);
  if (sorted) DT_FREE(sorted);
  if (ents) DT_FREE(ents);
  if (hdr) DT_FREE(hdr);
  if (s != DT_OK) { dt_free_tensors(n, names, ts); return s; }
  *n_out = n; *names_out = names; *ts_out = ts;
  return DT_OK;
}
