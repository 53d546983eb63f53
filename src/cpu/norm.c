/* Batch normalisation on the thread pool, by blocks of channels: a channel's values are its
   n runs of l (one per image), each channel summed by one thread in one fixed order (the same
   bits for any number of threads). A channel is read two or three times in a row (mean,
   variance, result), so the later passes find it in cache.
   F64: in double, four partial sums per run. F32: on vectors of four floats, each chunk of 64
   values summed in float and the chunks' sums in double; the variance is taken about the mean
   rounded to float, mf, and corrected to the mean m in double (sum (x - m)^2 = sum (x - mf)^2 -
   N (m - mf)^2), y = (x - mf) a + c; the backward's sums and the input gradient are about the
   saved mean, which is mf. Each channel's coefficients are computed in double, rounded once. */

/* F64: the sum of the run of l values, less m each and squared (sq) or not */
static double dt__bn_run_f64(const double *v, int64_t l, double m, int sq) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t p = 0;
  if (sq) {
    for (; p + 4 <= l; p += 4) {
      const double a = v[p] - m, b = v[p + 1] - m, c = v[p + 2] - m, d = v[p + 3] - m;
      s0 += a * a; s1 += b * b; s2 += c * c; s3 += d * d;
    }
    for (; p < l; p++) { const double a = v[p] - m; s0 += a * a; }
  } else {
    for (; p + 4 <= l; p += 4) { s0 += v[p]; s1 += v[p + 1]; s2 += v[p + 2]; s3 += v[p + 3]; }
    for (; p < l; p++) s0 += v[p];
  }
  return (s0 + s1) + (s2 + s3);
}
/* F64: sum g and sum g (x - m) over a run */
static void dt__bn_dot_f64(const double *g, const double *x, int64_t l, double m, double *sg, double *sgx) {
  double a0 = 0, a1 = 0, b0 = 0, b1 = 0;
  int64_t p = 0;
  for (; p + 2 <= l; p += 2) {
    a0 += g[p]; a1 += g[p + 1];
    b0 += g[p] * (x[p] - m); b1 += g[p + 1] * (x[p + 1] - m);
  }
  if (p < l) { a0 += g[p]; b0 += g[p] * (x[p] - m); }
  *sg += a0 + a1; *sgx += b0 + b1;
}

/* channel ch's running statistics moved towards the batch's mean and (biased) variance, the
   variance unbiased: r = (1 - momentum) r + momentum s, in double, rounded to the dtype once */
static void dt__bn_running(const dt__bn *p, int dbl, int64_t ch, double mean, double var) {
  const int64_t N = p->n * p->l;
  const double m = p->momentum, uv = m * var * (double)N / (double)(N - 1); /* momentum times the unbiased variance */
  if (dbl) {
    if (p->rmean) ((double *)p->rmean)[ch] = (1.0 - m) * ((double *)p->rmean)[ch] + m * mean;
    if (p->rvar) ((double *)p->rvar)[ch] = (1.0 - m) * ((double *)p->rvar)[ch] + uv;
  } else {
    if (p->rmean) ((float *)p->rmean)[ch] = (float)((1.0 - m) * (double)((float *)p->rmean)[ch] + m * mean);
    if (p->rvar) ((float *)p->rvar)[ch] = (float)((1.0 - m) * (double)((float *)p->rvar)[ch] + uv);
  }
}

/* F32 on 4-float vectors: the sum of v[0..l) less m each (squared: sq), chunks of 64 in float */
static double dt__bn_vsum_f32(const float *v, int64_t l, float m, int sq) {
  const dt__vf_base vm = {m, m, m, m};
  double tot = 0;
  int64_t p = 0;
  while (p < l) {
    const int64_t e = p + 64 < l ? p + 64 : l;
    dt__vf_base a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};
    float r = 0;
    for (; p + 8 <= e; p += 8) {
      dt__vf_base u, w;
      memcpy(&u, v + p, sizeof u);
      memcpy(&w, v + p + 4, sizeof w);
      u -= vm; w -= vm;
      if (sq) { u *= u; w *= w; }
      a0 += u; a1 += w;
    }
    for (; p < e; p++) { const float d = v[p] - m; r += sq ? d * d : d; }
    a0 += a1;
    tot += (double)((a0[0] + a0[1]) + (a0[2] + a0[3])) + (double)r;
  }
  return tot;
}
/* sum g and sum g (x - m) over a run, likewise */
static void dt__bn_vdot_f32(const float *g, const float *x, int64_t l, float m, double *sg, double *sgx) {
  const dt__vf_base vm = {m, m, m, m};
  int64_t p = 0;
  while (p < l) {
    const int64_t e = p + 64 < l ? p + 64 : l;
    dt__vf_base a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
    float ra = 0, rb = 0;
    for (; p + 4 <= e; p += 4) {
      dt__vf_base u, w;
      memcpy(&u, g + p, sizeof u);
      memcpy(&w, x + p, sizeof w);
      a += u;
      b += u * (w - vm);
    }
    for (; p < e; p++) { ra += g[p]; rb += g[p] * (x[p] - m); }
    *sg += (double)((a[0] + a[1]) + (a[2] + a[3])) + (double)ra;
    *sgx += (double)((b[0] + b[1]) + (b[2] + b[3])) + (double)rb;
  }
}
/* y = (x - m) a + c over a run */
static void dt__bn_vapply_f32(const float *x, float *y, int64_t l, float m, float a, float c) {
  const dt__vf_base vm = {m, m, m, m}, va = {a, a, a, a}, vc = {c, c, c, c};
  int64_t p = 0;
  for (; p + 4 <= l; p += 4) {
    dt__vf_base u;
    memcpy(&u, x + p, sizeof u);
    u = (u - vm) * va + vc;
    memcpy(y + p, &u, sizeof u);
  }
  for (; p < l; p++) y[p] = (x[p] - m) * a + c;
}
/* gx = (g - c1 - (x - m) c2) a over a run */
static void dt__bn_vgrad_f32(const float *g, const float *x, float *gx, int64_t l, float m, float c1, float c2, float a) {
  const dt__vf_base vm = {m, m, m, m}, v1 = {c1, c1, c1, c1}, v2 = {c2, c2, c2, c2}, va = {a, a, a, a};
  int64_t p = 0;
  for (; p + 4 <= l; p += 4) {
    dt__vf_base u, w;
    memcpy(&u, g + p, sizeof u);
    memcpy(&w, x + p, sizeof w);
    u = (u - v1 - (w - vm) * v2) * va;
    memcpy(gx + p, &u, sizeof u);
  }
  for (; p < l; p++) gx[p] = (g[p] - c1 - (x[p] - m) * c2) * a;
}

static void dt__bn_fwd_f32(const dt__bn *p, int64_t lo, int64_t hi) {
  const int64_t N = p->n * p->l;
  const float *x = (const float *)p->x;
  float *y = (float *)p->y;
  int64_t ch, i;
  for (ch = lo; ch < hi; ch++) {
    double mean, var, k, a, b;
    float mf;
    if (p->train) {
      double s = 0;
      for (i = 0; i < p->n; i++) s += dt__bn_vsum_f32(x + (i * p->c + ch) * p->l, p->l, 0.0f, 0);
      mean = s / (double)N;
      mf = (float)mean;
      for (s = 0, i = 0; i < p->n; i++) s += dt__bn_vsum_f32(x + (i * p->c + ch) * p->l, p->l, mf, 1);
      var = s / (double)N - (mean - (double)mf) * (mean - (double)mf);
      if (var < 0) var = 0;
      ((float *)p->mean)[ch] = mf;
      ((float *)p->var)[ch] = (float)var;
      dt__bn_running(p, 0, ch, mean, var);
    } else {
      mean = (double)((const float *)p->rmean)[ch];
      var = (double)((const float *)p->rvar)[ch];
      mf = (float)mean;
    }
    k = 1.0 / sqrt(var + p->eps);
    a = p->w ? k * (double)((const float *)p->w)[ch] : k;
    b = (p->b ? (double)((const float *)p->b)[ch] : 0.0) - (mean - (double)mf) * a;
    for (i = 0; i < p->n; i++) {
      const int64_t o = (i * p->c + ch) * p->l;
      dt__bn_vapply_f32(x + o, y + o, p->l, mf, (float)a, (float)b);
    }
  }
}

static void dt__bn_bwd_f32(const dt__bn *p, int64_t lo, int64_t hi) {
  const int64_t N = p->n * p->l;
  const float *x = (const float *)p->x, *g = (const float *)p->gy;
  int64_t ch, i;
  for (ch = lo; ch < hi; ch++) {
    const double var = (double)((const float *)p->var)[ch];
    const double k = 1.0 / sqrt(var + p->eps), wv = p->w ? (double)((const float *)p->w)[ch] : 1.0;
    const float mf = ((const float *)p->mean)[ch]; /* the saved mean, a float: no correction */
    double sg = 0, sgx = 0;
    if (p->gw || p->gb || (p->gx && p->train))
      for (i = 0; i < p->n; i++) {
        const int64_t o = (i * p->c + ch) * p->l;
        dt__bn_vdot_f32(g + o, x + o, p->l, mf, &sg, &sgx);
      }
    if (p->gb) ((float *)p->gb)[ch] = (float)sg;
    if (p->gw) ((float *)p->gw)[ch] = (float)(sgx * k);
    if (p->gx) {
      const double a = wv * k, c1 = p->train ? sg / (double)N : 0.0, c2 = p->train ? k * k * sgx / (double)N : 0.0;
      for (i = 0; i < p->n; i++) {
        const int64_t o = (i * p->c + ch) * p->l;
        dt__bn_vgrad_f32(g + o, x + o, (float *)p->gx + o, p->l, mf, (float)c1, (float)c2, (float)a);
      }
    }
  }
}

/* F64: channels [lo, hi) of the forward */
static void dt__bn_fwd_f64(const dt__bn *p, int64_t lo, int64_t hi) {
  const int64_t N = p->n * p->l;
  const double *x = (const double *)p->x;
  double *y = (double *)p->y;
  int64_t ch, i, q;
  for (ch = lo; ch < hi; ch++) {
    double mean, var, k, a, b;
    if (p->train) {
      double s = 0;
      for (i = 0; i < p->n; i++) s += dt__bn_run_f64(x + (i * p->c + ch) * p->l, p->l, 0, 0);
      mean = s / (double)N;
      for (s = 0, i = 0; i < p->n; i++) s += dt__bn_run_f64(x + (i * p->c + ch) * p->l, p->l, mean, 1);
      var = s / (double)N;
      ((double *)p->mean)[ch] = mean;
      ((double *)p->var)[ch] = var;
      dt__bn_running(p, 1, ch, mean, var);
    } else {
      mean = ((const double *)p->rmean)[ch];
      var = ((const double *)p->rvar)[ch];
    }
    k = 1.0 / sqrt(var + p->eps);
    a = p->w ? k * ((const double *)p->w)[ch] : k;
    b = p->b ? ((const double *)p->b)[ch] : 0.0;
    for (i = 0; i < p->n; i++) {
      const int64_t o = (i * p->c + ch) * p->l;
      for (q = 0; q < p->l; q++) y[o + q] = (x[o + q] - mean) * a + b;
    }
  }
}

/* F64: channels [lo, hi) of the backward */
static void dt__bn_bwd_f64(const dt__bn *p, int64_t lo, int64_t hi) {
  const int64_t N = p->n * p->l;
  const double *x = (const double *)p->x, *g = (const double *)p->gy;
  int64_t ch, i, q;
  for (ch = lo; ch < hi; ch++) {
    const double mean = ((const double *)p->mean)[ch], var = ((const double *)p->var)[ch];
    const double k = 1.0 / sqrt(var + p->eps), wv = p->w ? ((const double *)p->w)[ch] : 1.0;
    double sg = 0, sgx = 0;
    if (p->gw || p->gb || (p->gx && p->train))
      for (i = 0; i < p->n; i++) {
        const int64_t o = (i * p->c + ch) * p->l;
        dt__bn_dot_f64(g + o, x + o, p->l, mean, &sg, &sgx);
      }
    if (p->gb) ((double *)p->gb)[ch] = sg;
    if (p->gw) ((double *)p->gw)[ch] = sgx * k;
    if (p->gx) {
      const double a = wv * k, c1 = p->train ? sg / (double)N : 0.0, c2 = p->train ? k * k * sgx / (double)N : 0.0;
      double *gx = (double *)p->gx;
      for (i = 0; i < p->n; i++) {
        const int64_t o = (i * p->c + ch) * p->l;
        for (q = 0; q < p->l; q++) gx[o + q] = (g[o + q] - c1 - (x[o + q] - mean) * c2) * a;
      }
    }
  }
}

typedef struct dt__bn_job {
  const dt__bn *p;
  int dbl, back;
} dt__bn_job;

static void dt__bn_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__bn_job *j = (const dt__bn_job *)ctx;
  if (j->back) {
    if (j->dbl) dt__bn_bwd_f64(j->p, lo, hi);
    else dt__bn_bwd_f32(j->p, lo, hi);
  } else if (j->dbl) dt__bn_fwd_f64(j->p, lo, hi);
  else dt__bn_fwd_f32(j->p, lo, hi);
}

static dt_status dt__cpu_bn_run(const char *what, dt_dtype t, const dt__bn *p, int back) {
  dt__bn_job j;
  const int64_t per = p->n * p->l * 3; /* a channel's elements read and written */
  if (t != DT_F32 && t != DT_F64) {
    snprintf(dt__cpu_err, sizeof dt__cpu_err, "%s is not defined for %s", what, dt__dtype_str(t));
    return DT_ERR_DTYPE;
  }
  j.p = p; j.dbl = t == DT_F64; j.back = back;
  dt__par_for(p->c, dt__conv_grain(per), dt__bn_task, &j);
  return DT_OK;
}

static dt_status dt__cpu_batch_norm(int dev, dt_dtype t, const dt__bn *p) {
  (void)dev;
  return dt__cpu_bn_run("batch_norm", t, p, 0);
}
static dt_status dt__cpu_batch_norm_backward(int dev, dt_dtype t, const dt__bn *p) {
  (void)dev;
  return dt__cpu_bn_run("batch_norm_backward", t, p, 1);
}
