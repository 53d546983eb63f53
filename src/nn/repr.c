/* print(net): a module's text as PyTorch's Module.__repr__ writes it (PyTorch 1.13). A layer is
   its class name and its arguments on one line ("Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1),
   padding=(2, 2))"); a module that holds others is its class name, then one line per child,
   "(name): " and the child's text, two spaces deeper each level, then ")". A lazy layer is
   "LazyConv2d(0, ...)" until its first forward and "Conv2d(1, ...)" after, as in PyTorch.
   dt_batch_norm serves BatchNorm1d and BatchNorm2d: it prints as the one its last input made it
   (2-d or 3-d: 1d, 4-d: 2d), and as "BatchNorm" before any. */

/* Python's repr of a float: the shortest "%.*g" that reads back as v, with ".0" where that has
   neither a point nor an exponent ("0.5", "1e-05", "1.0"); v here is a probability or a constant,
   never so large that Python would switch to an exponent where %g does not */
static void dt__repr_float(dt__print_out *o, double v) {
  char b[40];
  int p;
  char *c;
  for (p = 1; p <= 17; p++) {
    snprintf(b, sizeof b, "%.*g", p, v);
    if (strtod(b, NULL) == v) break; /* both in the C locale's own decimal point */
  }
  for (c = b; *c; c++)
    if (*c == ',') *c = '.'; /* Python's point, whatever the locale says */
  dt__print_puts(o, b);
  if (!strpbrk(b, ".eEn")) dt__print_puts(o, ".0"); /* "n": nan and inf stay as they are */
}

static void dt__repr_int(dt__print_out *o, int64_t v) {
  char b[24];
  dt__fmt_int(b, v);
  dt__print_puts(o, b);
}

/* "(a, b)" */
static void dt__repr_pair(dt__print_out *o, int64_t a, int64_t b) {
  dt__print_putc(o, '(');
  dt__repr_int(o, a);
  dt__print_puts(o, ", ");
  dt__repr_int(o, b);
  dt__print_putc(o, ')');
}

/* a convolution's or pooling's layer, with its arguments */
static void dt__repr_layer(dt__print_out *o, const dt__layer *L) {
  switch (L->kind) {
    case DT__L_CONV:
      dt__print_puts(o, L->in == 0 ? "LazyConv2d(" : "Conv2d(");
      dt__repr_int(o, L->in); dt__print_puts(o, ", "); dt__repr_int(o, L->out);
      dt__print_puts(o, ", kernel_size="); dt__repr_pair(o, L->kh, L->kw);
      dt__print_puts(o, ", stride="); dt__repr_pair(o, L->sh, L->sw);
      if (L->ph || L->pw) { dt__print_puts(o, ", padding="); dt__repr_pair(o, L->ph, L->pw); }
      if (L->groups != 1) { dt__print_puts(o, ", groups="); dt__repr_int(o, L->groups); }
      if (!L->bias) dt__print_puts(o, ", bias=False");
      dt__print_putc(o, ')');
      return;
    case DT__L_MAX_POOL: case DT__L_AVG_POOL:
      dt__print_puts(o, L->kind == DT__L_MAX_POOL ? "MaxPool2d(kernel_size=" : "AvgPool2d(kernel_size=");
      dt__repr_int(o, L->kh);
      dt__print_puts(o, ", stride="); dt__repr_int(o, L->sh);
      dt__print_puts(o, ", padding="); dt__repr_int(o, L->ph);
      dt__print_puts(o, L->kind == DT__L_MAX_POOL ? ", dilation=1, ceil_mode=False)" : ")");
      return;
    case DT__L_ADAPTIVE_AVG_POOL:
      dt__print_puts(o, "AdaptiveAvgPool2d(output_size=");
      dt__repr_pair(o, L->oh, L->ow);
      dt__print_putc(o, ')');
      return;
    case DT__L_FLATTEN: dt__print_puts(o, "Flatten(start_dim=1, end_dim=-1)"); return;
    case DT__L_SIGMOID: dt__print_puts(o, "Sigmoid()"); return;
    case DT__L_TANH: dt__print_puts(o, "Tanh()"); return;
  }
}

/* dropout, normalisation, embedding, GELU */
static void dt__repr_norm(dt__print_out *o, const dt_module *m, const dt__norm_layer *L) {
  switch (L->kind) {
    case DT__N_DROPOUT:
      dt__print_puts(o, "Dropout(p=");
      dt__repr_float(o, L->p);
      dt__print_puts(o, ", inplace=False)");
      return;
    case DT__N_BATCH_NORM:
      if (L->features == 0) dt__print_puts(o, "Lazy");
      dt__print_puts(o, L->ndim == 4 ? "BatchNorm2d(" : L->ndim ? "BatchNorm1d(" : "BatchNorm(");
      dt__repr_int(o, L->features);
      dt__print_puts(o, ", eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
      return;
    case DT__N_LAYER_NORM:
      dt__print_puts(o, "LayerNorm((");
      dt__repr_int(o, L->features);
      dt__print_puts(o, ",), eps=1e-05, elementwise_affine=True)");
      return;
    case DT__N_EMBEDDING:
      dt__print_puts(o, "Embedding(");
      dt__repr_int(o, m->pts[0]->shape.dims[0]);
      dt__print_puts(o, ", ");
      dt__repr_int(o, m->pts[0]->shape.dims[1]);
      dt__print_putc(o, ')');
      return;
    case DT__N_GELU: dt__print_puts(o, "GELU(approximate='none')"); return;
  }
}

/* m's text; its lines after the first start with indent spaces */
static void dt__repr_module(dt__print_out *o, const dt_module *m, int indent) {
  int i;
  switch (m->kind) {
    case DT__M_LINEAR:
      dt__print_puts(o, m->in == 0 ? "LazyLinear(in_features=" : "Linear(in_features=");
      dt__repr_int(o, m->in);
      dt__print_puts(o, ", out_features=");
      dt__repr_int(o, m->out);
      dt__print_puts(o, ", bias=True)");
      return;
    case DT__M_RELU: dt__print_puts(o, "ReLU()"); return;
    case DT__M_SEQ: dt__print_puts(o, "Sequential("); break;
    case DT__M_USER:
      if (m->fwd == dt__layer_forward) { dt__repr_layer(o, (const dt__layer *)m->user); return; }
      if (m->fwd == dt__norm_forward) { dt__repr_norm(o, m, (const dt__norm_layer *)m->user); return; }
      dt__print_puts(o, m->cls);
      dt__print_putc(o, '(');
      break;
  }
  for (i = 0; i < m->n; i++) {
    dt__print_putc(o, '\n');
    dt__print_spaces(o, indent + 2);
    dt__print_putc(o, '(');
    if (m->kind == DT__M_SEQ) dt__repr_int(o, i);
    else dt__print_puts(o, m->cnames[i]);
    dt__print_puts(o, "): ");
    dt__repr_module(o, m->layers[i], indent + 2);
  }
  if (m->n > 0) {
    dt__print_putc(o, '\n');
    dt__print_spaces(o, indent);
  }
  dt__print_putc(o, ')');
}

DTDEF int dt_module_snprint(char *buf, size_t n, const dt_module *m) {
  const char *op = "dt_module_snprint";
  dt__print_out o;
  if (buf && n > 0) buf[0] = 0;
  if (!m) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op); return -1; }
  if (!buf && n > 0) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: buf is NULL but n is %llu", op, (unsigned long long)n); return -1; }
  o.buf = buf; o.cap = n; o.len = 0; o.col = 0;
  dt__repr_module(&o, m, 0);
  if (n > 0) buf[o.len < n ? o.len : n - 1] = 0;
  if (o.len > (size_t)INT_MAX) { dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the text is longer than INT_MAX", op); return -1; }
  return (int)o.len;
}

static int dt__snprint_module(char *buf, size_t n, const void *m) { return dt_module_snprint(buf, n, (const dt_module *)m); }

DTDEF dt_status dt_module_fprint(FILE *f, const dt_module *m) {
  const char *op = "dt_module_fprint";
  char small[128]; /* most networks need more: then one allocation of the length */
  if (!f) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: f is NULL", op);
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: m is NULL", op);
  return dt__fprint_text(f, op, small, sizeof small, dt__snprint_module, m);
}

DTDEF dt_status dt_module_print(const dt_module *m) {
  if (!m) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_module_print: m is NULL");
  return dt_module_fprint(stdout, m);
}
