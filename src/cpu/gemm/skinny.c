/* Work (m * n * k) per thread, at least, for the skinny kernel. */
#ifndef DT__GEMM_SKINNY_PAR
#define DT__GEMM_SKINNY_PAR (256 * 1024) /* less is not worth a fork/join */
#endif
/* Problems up to this size (m * n * k) take the rows kernel (no packing of A). */
#ifndef DT__GEMM_ROWS_MAX
#define DT__GEMM_ROWS_MAX (64 * 64 * 64)
#endif
/* The most bytes of op(B) copied for the rows kernel when its rows are not contiguous. */
#ifndef DT__GEMM_ROWS_COPY
#define DT__GEMM_ROWS_COPY ((size_t)1 << 20)
#endif

/* One thread's share of the rows kernel: rows (a multiple of 4) or columns (whole blocks) per. */
typedef struct dt__gemm_rows_job {
  const dt__gemm_plan *pl;
  int64_t m, n, k, rsa, csa, ldb, ldt, per;
  double alpha, beta;
  const void *a, *b, *tail;
  void *c;
  int by_rows;
} dt__gemm_rows_job;

static void dt__gemm_rows_part(const dt__gemm_rows_job *j, int64_t t) {
  const size_t es = j->pl->es;
  const int64_t lo = t * j->per;
  int64_t hi = dt__gemm_min(j->by_rows ? j->m : j->n, lo + j->per);
  /* a last part of fewer than 4 rows goes with the one before: the rows kernel does fewer than 4
     rows another way (axpy), so the bits would depend on the number of threads */
  if (j->by_rows && j->m - lo < 4 && lo > 0) return;
  if (j->by_rows && j->m - hi < 4) hi = j->m;
  if (lo >= hi) return;
  if (j->by_rows)
    j->pl->rows(hi - lo, j->n, j->k, j->alpha, (const char *)j->a + (size_t)(lo * j->rsa) * es, j->rsa, j->csa, j->b,
                j->ldb, j->tail, j->ldt, j->beta, (char *)j->c + (size_t)(lo * j->n) * es, j->n);
  else
    j->pl->rows(j->m, hi - lo, j->k, j->alpha, j->a, j->rsa, j->csa, (const char *)j->b + (size_t)lo * es, j->ldb,
                j->tail, j->ldt, j->beta, (char *)j->c + (size_t)lo * es, j->n);
}

static void dt__gemm_rows_task(void *ctx, int64_t lo, int64_t hi) {
  for (; lo < hi; lo++) dt__gemm_rows_part((const dt__gemm_rows_job *)ctx, lo);
}

/* The rows kernel, where it pays: few rows of C (a vector times a matrix), little depth, few
   columns, or a small problem. op(B) is read in place when its rows are contiguous (csb == 1;
   its last columns, short of a whole block, copied zero padded), else copied whole when small.
   Rows (or, for fewer rows than threads, columns) are split in nt parts for the pool's threads.
   Returns 0, having done nothing, where it does not fit or out of memory. */
/* The shapes dt__gemm_skinny takes. */
static int dt__gemm_skinny_fits(const dt__gemm_plan *pl, int64_t m, int64_t n, int64_t k) {
  return pl->rows && (m <= 4 || k <= 16 || n <= 16 || (double)m * (double)n * (double)k <= (double)DT__GEMM_ROWS_MAX);
}

static int dt__gemm_skinny(const dt__gemm_plan *pl, int64_t m, int64_t n, int64_t k, double alpha, const void *a,
                           int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb, double beta, void *c) {
  const size_t es = pl->es;
  const double work = (double)m * (double)n * (double)k;
  const int64_t rw = pl->rw, jt = rw ? n / rw * rw : 0;
  const void *bb = b, *tail = NULL;
  int64_t ldb = rsb, ldt = rw;
  char *buf = NULL;
  size_t bsz = 0;
  int nt = 1;
  if (!dt__gemm_skinny_fits(pl, m, n, k)) return 0;
  if (csb != 1) { /* op(B) copied: (k, npad), zero padded; its last block is the tail */
    const int64_t npad = dt__gemm_roundup(n, rw);
    bsz = (size_t)(k * npad) * es;
    if (bsz > DT__GEMM_ROWS_COPY || !(buf = (char *)DT__GEMM_MALLOC(bsz))) return 0;
    pl->pack(n, k, b, csb, rsb, (int)npad, buf);
    bb = buf;
    ldb = ldt = npad;
    tail = buf + (size_t)jt * es;
  } else if (jt < n) { /* the last n - jt columns: (k, rw), zero padded */
    bsz = (size_t)(k * rw) * es;
    if (!(buf = (char *)DT__GEMM_MALLOC(bsz))) return 0;
    pl->pack(n - jt, k, (const char *)b + (size_t)jt * es, 1, rsb, (int)rw, buf);
    tail = buf;
  }
  {
    const double w = work / (double)DT__GEMM_SKINNY_PAR;
    nt = dt__cpu_threads();
    if (w < nt) nt = (int)w;
    if (nt < 1) nt = 1;
  }
  {
    dt__gemm_rows_job job;
    job.pl = pl; job.m = m; job.n = n; job.k = k; job.alpha = alpha; job.beta = beta;
    job.a = a; job.rsa = rsa; job.csa = csa; job.b = bb; job.ldb = ldb; job.tail = tail; job.ldt = ldt; job.c = c;
    job.by_rows = m >= 4 * (int64_t)nt;
    job.per = job.by_rows ? ((m + nt - 1) / nt + 3) / 4 * 4 : dt__gemm_roundup((n + nt - 1) / nt, rw);
    if (nt == 1) dt__gemm_rows_part(&job, 0); /* a plain call: no job for the pool */
    else dt__par_for(nt, 1, dt__gemm_rows_task, &job);
  }
  if (buf) DT__GEMM_FREE(buf, bsz);
  return 1;
}

/* The best plan this CPU supports. */
static void dt__gemm_plan_best(int dbl, dt__gemm_plan *pl) {
  int isa;
  for (isa = DT__GEMM_ISA_COUNT - 1; isa > 0; isa--)
    if (dt__gemm_plan_get(isa, dbl, pl)) return;
  dt__gemm_plan_get(DT__GEMM_ISA_C, dbl, pl);
}

/* Built-in gemm with plan pl (NULL: the best one). c: (m, n). */
/* With bias (a row of n elements, or NULL): C = alpha op(A) op(B) + bias, beta unused; the
   blocked kernel's tasks write it into their blocks of C, other paths start from a copy. */
static void dt__gemm_builtin_b(const dt__gemm_plan *pl, int dbl, int ta, int tb, int64_t m, int64_t n,
                               int64_t k, double alpha, const void *a, const void *b, double beta, void *c,
                               dt__gemm_opts *o) {
  const int64_t rsa = ta ? 1 : k, csa = ta ? m : 1; /* op(A)(i, p) */
  const int64_t rsb = tb ? 1 : n, csb = tb ? k : 1; /* op(B)(p, j) */
  const void *bias = o ? o->bias : NULL;
  dt__gemm_opts nb; /* o without its bias, once the bias is in C */
  dt__gemm_plan best;
  if (m <= 0 || n <= 0) return;
  if (o) nb = *o;
  else memset(&nb, 0, sizeof nb);
  nb.bias = NULL;
  if (bias) {
    const size_t es = dbl ? sizeof(double) : sizeof(float);
    if (!dt__gemm_dot_takes(dbl, ta, tb, m, n, k) && k > 0 && alpha != 0 && (double)m * (double)n * (double)k > (double)DT__GEMM_SMALL && m > 2 && n > 2) {
      if (!pl) {
        dt__gemm_plan_best(dbl, &best);
        pl = &best;
      }
      if (!dt__gemm_skinny_fits(pl, m, n, k) && dt__gemm_blocked_b(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, 0.0, c, o))
        return;
    }
    dt__gemm_fill_bias(es, m, n, bias, c);
    beta = 1.0;
  }
  if (k <= 0 || alpha == 0) { /* C = beta * C */
    int64_t i, mn = m * n;
    if (dbl) {
      double *cd = (double *)c;
      for (i = 0; i < mn; i++) cd[i] = beta == 0 ? 0.0 : beta * cd[i];
    } else {
      float *cf = (float *)c;
      for (i = 0; i < mn; i++) cf[i] = beta == 0 ? 0.0f : (float)beta * cf[i];
    }
    return;
  }
#if DT__GEMM_VEC
  /* A B^T with few rows and columns and a long depth: dot products of rows, no packing */
  if (dt__gemm_dot_takes(dbl, ta, tb, m, n, k) && dt__gemm_dot(NULL, m, n, k, (float)alpha, (const float *)a, (const float *)b, (float)beta, (float *)c)) return;
#endif
  /* packing pays for itself unless the problem is tiny, or one row or column (or two) wide */
  if ((double)m * (double)n * (double)k > (double)DT__GEMM_SMALL) {
    if (!pl) {
      dt__gemm_plan_best(dbl, &best);
      pl = &best;
    }
    if (dt__gemm_skinny(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c)) return;
    if (m > 2 && n > 2 && dt__gemm_blocked_b(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, o ? &nb : NULL)) {
      if (o) o->asum_done = nb.asum_done;
      return;
    }
  }
  if (dbl)
    dt__gemm_simple_f64(m, n, k, alpha, (const double *)a, rsa, csa, (const double *)b, rsb, csb, beta,
                        (double *)c);
  else
    dt__gemm_simple_f32(m, n, k, (float)alpha, (const float *)a, rsa, csa, (const float *)b, rsb, csb,
                        (float)beta, (float *)c);
}

static DT__GEMM_MAYBE_UNUSED void dt__gemm_builtin(const dt__gemm_plan *pl, int dbl, int ta, int tb, int64_t m, int64_t n,
                                                    int64_t k, double alpha, const void *a, const void *b, double beta, void *c) {
  dt__gemm_builtin_b(pl, dbl, ta, tb, m, n, k, alpha, a, b, beta, c, NULL);
}
