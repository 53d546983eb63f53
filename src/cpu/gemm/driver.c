/* Largest problem (m * n * k) that takes the simple loop: packing does not pay below it. */
#ifndef DT__GEMM_SMALL
#define DT__GEMM_SMALL 1024
#endif
/* Work (m * n * k) per thread, at least: less does not pay for waking a thread. */
#ifndef DT__GEMM_PAR_MIN
#define DT__GEMM_PAR_MIN (128 * 128 * 64)
#endif

static int64_t dt__gemm_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t dt__gemm_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t dt__gemm_roundup(int64_t a, int64_t r) { return (a + r - 1) / r * r; }

#ifndef DT__GEMM_ADIRECT
/* reading A in place (dt__gemm_slab's adirect): 0 never, 1 only for the column split, 2 wherever
   each thread has its own rows (the column split and row tasks) */
#define DT__GEMM_ADIRECT 2
#endif
/* Most micro-panels of A in a slab for which op(B)'s rows, when contiguous, are read in place
   rather than packed: each packed element would serve at most this many micro-kernel calls (8:
   96 rows of AVX-512 F32). bench/RESULTS.md has the products this was measured on. */
#ifndef DT__GEMM_BDIRECT_PANELS
#define DT__GEMM_BDIRECT_PANELS 8
#endif
/* Most threads that pack their own rows of A (dt__gemm_blocked). */
#define DT__GEMM_PRIV_MAX 64
/* Largest packed copy of A (bytes) kept at once; bigger A is done in slabs of rows. */
#ifndef DT__GEMM_ABYTES
#define DT__GEMM_ABYTES ((size_t)16 << 20)
#endif

/* One task of a slab of dt__gemm_blocked: the rows r0..r1 of the slab, the columns jc..jc+nc of C. */
typedef struct dt__gemm_slab {
  const dt__gemm_plan *pl;
  int64_t k, n, kc, ncol, ncw, rpt, sm, smp, s0, rsb, csb;
  const char *abuf; /* A's slab packed (see dt__gemm_apack), or NULL: each thread packs its rows in apriv */
  double alpha, beta;
  const void *b;
  void *c;
  char *bbuf;  /* thread w's B buffer: bbuf + w * bsz */
  size_t bsz;
  const char *a;  /* with apriv: row s0 of op(A), element (i, p) at a[i * rsa + p * csa] */
  int64_t rsa, csa;
  char *apriv;    /* thread w's A buffer: apriv + w * asz, holding the rows of row task aown[w] */
  size_t asz;
  int64_t *aown;
  int bdirect;    /* op(B)'s rows contiguous (csb 1): its whole micro-panels are read in place, not packed */
  int adirect;    /* with apriv, op(A)'s rows contiguous (csa 1): its whole micro-panels are read in place by
                     the plan's kernd; only a last panel of fewer than mr rows is packed */
  const char *bias; /* or NULL: C's rows start as this row (n), not as beta * C */
  char *asum;       /* or NULL: the sums of op(A)'s rows go to asum[s0 + i] (see dt__gemm_opts) */
} dt__gemm_slab;

/* out[i - r0] = the sum of op(A)'s row i over its k depths, for rows r0..r1 of an op(A) whose
   rows are contiguous (rsa 1, as g^T's are): column sums of the (k, csa) matrix at a, taken as
   dt_sum_dim takes them (dt__red_cols: in double, in order), so with the same bits. */
static void dt__gemm_row_sums(size_t es, const char *a, int64_t csa, int64_t r0, int64_t r1, int64_t k, char *out) {
  double acc[DT__COL_TILE];
  int64_t i0, i, cnt;
  for (i0 = r0; i0 < r1; i0 += cnt) {
    cnt = r1 - i0 < DT__COL_TILE ? r1 - i0 : DT__COL_TILE;
    for (i = 0; i < cnt; i++) acc[i] = 0;
    if (es == sizeof(float)) dt__red_cols_f32(0, (const float *)a + i0, k, csa, cnt, acc);
    else dt__red_cols_f64(0, (const double *)a + i0, k, csa, cnt, acc);
    for (i = 0; i < cnt; i++) {
      if (es == sizeof(float)) ((float *)out)[i0 - r0 + i] = (float)acc[i];
      else ((double *)out)[i0 - r0 + i] = acc[i];
    }
  }
}

/* Task t of a slab, on the pool's thread w (the caller is 0). */
static void dt__gemm_task(const dt__gemm_slab *g, int64_t t, int w) {
  const dt__gemm_plan *pl = g->pl;
  const size_t es = pl->es;
  const int mr = pl->mr, nr = pl->nr;
  const int64_t r0 = t / g->ncol * g->rpt, r1 = dt__gemm_min(g->sm, r0 + g->rpt); /* rows of the slab */
  const int64_t jc = t % g->ncol * g->ncw, nc = dt__gemm_min(g->ncw, g->n - jc); /* columns of C */
  char *bbuf = g->bbuf + (size_t)w * g->bsz;
  const char *abuf = g->abuf;
  int64_t p0, jr, ir, astr = g->smp, arow = 0; /* A's depth block p0 at abuf + astr * p0, row ir's panel at (ir - arow) * kc */
  if (!abuf) { /* this thread's copy of A's rows r0..r1, packed when its last task had other rows */
    char *ab = g->apriv + (size_t)w * g->asz;
    astr = dt__gemm_roundup(r1 - r0, mr); arow = r0;
    if (g->aown[w] != t / g->ncol) {
      const int64_t re = g->adirect ? r0 + (r1 - r0) / mr * mr : r0; /* the rows packed: re..r1 */
      if (re < r1)
        for (p0 = 0; p0 < g->k; p0 += g->kc)
          pl->pack(r1 - re, dt__gemm_min(g->kc, g->k - p0), g->a + (size_t)(re * g->rsa + p0 * g->csa) * es, g->rsa,
                   g->csa, mr, ab + (size_t)(astr * p0 + (re - r0) * dt__gemm_min(g->kc, g->k - p0)) * es);
      g->aown[w] = t / g->ncol;
    }
    abuf = ab;
  }
  if (g->asum && t % g->ncol == 0) /* the first column task of a row task sums its rows of A */
    dt__gemm_row_sums(es, g->a, g->csa, r0, r1, g->k, g->asum + (size_t)(g->s0 + r0) * es);
  for (p0 = 0; p0 < g->k; p0 += g->kc) {
    const int64_t kcur = dt__gemm_min(g->kc, g->k - p0);
    const double bet = p0 == 0 && !g->bias ? g->beta : 1.0;
    /* the first depth block adds the bias row (the kernel reads it for every row: lds 0), the
       others what is already in C */
    const int fromb = p0 == 0 && g->bias;
    const char *ap = abuf + (size_t)(astr * p0) * es;
    const char *bsrc = (const char *)g->b + (size_t)(p0 * g->rsb + jc * g->csb) * es;
    const int64_t nfull = g->bdirect ? nc / nr * nr : 0; /* B's micro-panels read where they are */
    /* pack B(p0:p0+kcur, jc+nfull:jc+nc) */
    if (nfull < nc) pl->pack(nc - nfull, kcur, bsrc + (size_t)(nfull * g->csb) * es, g->csb, g->rsb, nr, bbuf);
    for (ir = r0; ir < r1; ir += mr) { /* A's micro-panel stays in L1, B's panels stream from L2 */
      const char *pa = ap + (size_t)((ir - arow) * kcur) * es;
      char *cr = (char *)g->c + (size_t)((g->s0 + ir) * g->n + jc) * es;
      const int mrr = (int)dt__gemm_min(mr, g->sm - ir);
      /* a whole micro-panel of A read where it is (adirect), or the packed one */
      const int dir = g->adirect && mrr == mr && ir + mr <= r1;
      dt__gemm_kern_fn kern = dir ? pl->kernd : pl->kern;
      const char *pk = dir ? g->a + (size_t)(ir * g->rsa + p0) * es : pa;
      const int64_t lda = dir ? g->rsa : 0, lds = fromb ? 0 : g->n;
      const char *cs = fromb ? g->bias + (size_t)jc * es : cr;
      /* a packed panel of 4 or 8 rows (256 = 21 x 12 + 4): the edge kernels, which skip the zero rows */
      if (!dir && mrr <= 4 && pl->kern4) kern = pl->kern4;
      else if (!dir && mrr <= 8 && pl->kern8) kern = pl->kern8;
      for (jr = 0; jr < nfull; jr += nr)
        kern(kcur, pk, lda, bsrc + (size_t)jr * es, g->rsb, cr + (size_t)jr * es, g->n, cs + (size_t)jr * es, lds, mrr,
             nr, g->alpha, bet);
      for (; jr < nc; jr += nr) {
        /* a last half panel of B (or less): one vector wide, whether A is read in place or packed, so
           that an element of C takes the same kernel (and bits) however the columns are split */
        dt__gemm_kern_fn kj = kern;
        if (nc - jr <= nr / 2 && kern == pl->kern && pl->kernh) kj = pl->kernh;
        else if (nc - jr <= nr / 2 && kern == pl->kernd && pl->kernhd) kj = pl->kernhd;
        kj(kcur, pk, lda, bbuf + (size_t)((jr - nfull) * kcur) * es, nr, cr + (size_t)jr * es, g->n,
           cs + (size_t)jr * es, lds, mrr, (int)dt__gemm_min(nr, nc - jr), g->alpha, bet);
      }
    }
  }
}

/* Tasks [lo, hi) of a slab on the pool's thread w. */
static void dt__gemm_slab_task(void *ctx, int64_t lo, int64_t hi, int w) {
  const dt__gemm_slab *g = (const dt__gemm_slab *)ctx;
  for (; lo < hi; lo++) dt__gemm_task(g, lo, w);
}

/* Packing a slab of A: task t packs DT__GEMM_APACK_PANELS micro-panels of depth block t % nkb. */
#define DT__GEMM_APACK_PANELS 8
typedef struct dt__gemm_apack {
  const dt__gemm_plan *pl;
  const char *a;  /* row s0 of op(A) */
  int64_t rsa, csa, sm, smp, k, kc, nkb;
  char *abuf;
} dt__gemm_apack;

static void dt__gemm_apack_part(const dt__gemm_apack *q, int64_t t) {
  const size_t es = q->pl->es;
  const int64_t pc = t % q->nkb * q->kc, kcur = dt__gemm_min(q->kc, q->k - pc);
  const int64_t r0 = t / q->nkb * DT__GEMM_APACK_PANELS * q->pl->mr, r1 = dt__gemm_min(q->sm, r0 + DT__GEMM_APACK_PANELS * q->pl->mr);
  if (r0 < r1)
    q->pl->pack(r1 - r0, kcur, q->a + (size_t)(r0 * q->rsa + pc * q->csa) * es, q->rsa, q->csa, q->pl->mr,
                q->abuf + (size_t)(q->smp * pc + r0 * kcur) * es);
}

static void dt__gemm_apack_task(void *ctx, int64_t lo, int64_t hi, int w) {
  (void)w;
  for (; lo < hi; lo++) dt__gemm_apack_part((const dt__gemm_apack *)ctx, lo);
}

/* op(A) element (i, p) is a[i * rsa + p * csa]; op(B) element (p, j) is b[p * rsb + j * csb];
   c: (m, n) contiguous. m, n, k >= 1. Returns 0, having done nothing, if out of memory.
   A slab of rows of op(A) is packed whole; then each task, a block of (rows of the slab,
   nc columns) of C, packs its own (kc, nc) panels of op(B) (kept in L2) and, for each (mr, kc)
   micro-panel of A (kept in L1), runs the micro-kernel along them. The tasks go to the pool's
   threads dynamically, each with its own B buffer, and share nothing but the packed A, so the threads meet only at the end
   of the slab, and a thread that the OS has descheduled (a busy machine) does not hold up the
   others. A is packed first, by the pool's threads in small dynamic tasks (a second join). */
static void dt__gemm_fill_bias(size_t es, int64_t m, int64_t n, const void *bias, void *c) { /* C's rows = bias */
  int64_t i;
  for (i = 0; i < m; i++) memcpy((char *)c + (size_t)(i * n) * es, bias, (size_t)n * es);
}

/* With o (or NULL), a linear layer's asks (see dt__gemm_opts): with o->bias (a row of n elements),
   C = alpha op(A) op(B) + bias, beta unused; o->by_cols, the column split; o->asum, the row sums. */
static int dt__gemm_blocked_b(const dt__gemm_plan *pl, int64_t m, int64_t n, int64_t k, double alpha,
                              const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                              int64_t csb, double beta, void *c, dt__gemm_opts *o) {
  const void *bias = o ? o->bias : NULL;
  const int by_cols = o && o->by_cols;
  const size_t es = pl->es;
  const int mr = pl->mr, nr = pl->nr;
  /* depth of a block: at most the plan's, the blocks of k as even as can be (784 = 392 + 392, not
     384 + 384 + 16: a thin last block costs a whole pass over C) */
  const int64_t kc = dt__gemm_min(dt__gemm_roundup((k + (k + pl->kc - 1) / pl->kc - 1) / ((k + pl->kc - 1) / pl->kc), 8), k);
  int64_t ncw = dt__gemm_roundup(dt__gemm_min(pl->nc, n), nr);           /* task width */
  int64_t ncol;                                                           /* column tasks */
  int64_t ms = (int64_t)(DT__GEMM_ABYTES / ((size_t)k * es)) / mr * mr;   /* rows per slab */
  int64_t nrow = 1;                                                       /* row tasks per slab */
  int nt = 1, nbuf;                                                       /* threads, B buffers */
  int priv;                                                               /* A packed per row task */
  int64_t aown[DT__GEMM_PRIV_MAX];
  size_t asz, bsz, rawsz;
  char *raw, *abuf;
  int64_t s0;
  if ((size_t)mr * (size_t)k * es > DT__GEMM_ABYTES && k > kc) { /* very deep: one slice of k at a time */
    const int64_t ks = dt__gemm_max(kc, (int64_t)(DT__GEMM_ABYTES / ((size_t)mr * es)) / kc * kc);
    dt__gemm_opts so; /* each slice's: the bias with the first; no row sums (over all of k: not slice by slice) */
    int64_t p0;
    memset(&so, 0, sizeof so);
    so.by_cols = by_cols;
    for (p0 = 0; p0 < k; p0 += ks) {
      const int64_t kk = dt__gemm_min(ks, k - p0);
      const void *ap = (const char *)a + (size_t)(p0 * csa) * es, *bp = (const char *)b + (size_t)(p0 * rsb) * es;
      const void *bs = p0 == 0 ? bias : NULL;
      double bet = p0 == 0 ? beta : 1.0;
      so.bias = bs;
      if (dt__gemm_blocked_b(pl, m, n, kk, alpha, ap, rsa, csa, bp, rsb, csb, bet, c, &so)) continue;
      if (bs) { dt__gemm_fill_bias(es, m, n, bs, c); bet = 1.0; }
      if (es == sizeof(double)) /* out of memory */
        dt__gemm_simple_f64(m, n, kk, alpha, (const double *)ap, rsa, csa, (const double *)bp, rsb, csb, bet,
                            (double *)c);
      else
        dt__gemm_simple_f32(m, n, kk, (float)alpha, (const float *)ap, rsa, csa, (const float *)bp, rsb, csb,
                            (float)bet, (float *)c);
    }
    return 1;
  }
  if (ms < mr) ms = mr;
  if (ms > m) ms = dt__gemm_roundup(m, mr);
  { /* at most one thread per DT__GEMM_PAR_MIN of work */
    double w = (double)m * (double)n * (double)k / (double)DT__GEMM_PAR_MIN;
    nt = dt__cpu_threads();
    if (w < nt) nt = (int)w;
    if (nt < 1) nt = 1;
  }
  if (nt > 1) { /* about 4 tasks per thread: narrower tasks (down to 4 micro-panels), then row tasks
                   (of 128 rows or more, as each packs its B again) */
    ncw = dt__gemm_min(ncw, dt__gemm_max(4 * nr, dt__gemm_roundup((n + 4 * nt - 1) / (4 * nt), nr)));
    if ((n + ncw - 1) / ncw < 4 * (int64_t)nt)
      nrow = dt__gemm_max(1, dt__gemm_min((4 * (int64_t)nt * ncw + n - 1) / n, dt__gemm_min(ms, m) / 128));
    { /* fewer than two tasks per thread (128^3: one; 192^3: two of 128 and 64 columns), n within
         two of the plan's task widths: row tasks of 4 micro-panels or more across all of n, which
         read B in place (bdirect) and each pack only their own rows of A, where column tasks share
         one packing of A (a join) and each packs B; only where that makes more tasks (not on many
         cores, where the column tasks are already more) */
      const int64_t tasks = (n + ncw - 1) / ncw * nrow;
      const int64_t rows = dt__gemm_min(4 * (int64_t)nt, dt__gemm_min(ms, m) / (4 * mr));
      if (csb == 1 && tasks < 2 * (int64_t)nt && rows > tasks && n <= 2 * pl->nc) {
        ncw = dt__gemm_roundup(n, nr);
        nrow = rows;
      }
    }
    if (by_cols) { /* a linear layer's x W^T: two column tasks per thread, each thread's W rows its own */
      ncw = dt__gemm_roundup((n + 2 * nt - 1) / (2 * nt), nr);
      nrow = 1;
    }
  }
  ncol = (n + ncw - 1) / ncw;
  /* the tasks are partitioned for nt threads; B buffers for as many as the pool has */
  nbuf = nt > 1 ? dt__pool_threads() : 1;
  if (nbuf > nt) nbuf = nt;
  asz = ((size_t)(ms * k) * es + 63) & ~(size_t)63;
  /* with row tasks, or split by columns for a linear layer, each thread packs the rows of A of its
     tasks itself, in its own buffer (on a VM whose two cores sit on two L3s, a shared packing phase
     was slower than one thread's) */
  priv = 0;
  if ((nrow > 1 || by_cols) && nbuf > 1 && nbuf <= DT__GEMM_PRIV_MAX) {
    const int64_t rpt0 = (dt__gemm_roundup(dt__gemm_min(ms, m), mr) / mr + nrow - 1) / nrow * mr; /* the first slab's */
    const size_t psz = ((size_t)(rpt0 * k) * es + 63) & ~(size_t)63;
    if ((size_t)nbuf * psz <= DT__GEMM_ABYTES) { priv = 1; asz = (size_t)nbuf * psz; }
  }
  bsz = ((size_t)(kc * ncw) * es + 63) & ~(size_t)63;
  rawsz = asz + (size_t)nbuf * bsz + 64;
  raw = (char *)DT__GEMM_MALLOC(rawsz);
  if (!raw) return 0;
  abuf = raw + (64 - (size_t)((uintptr_t)raw & 63));

  for (s0 = 0; s0 < m; s0 += ms) {
    const int64_t sm = dt__gemm_min(ms, m - s0);       /* rows in this slab */
    const int64_t smp = dt__gemm_roundup(sm, mr);      /* padded */
    const int64_t npan = smp / mr;                     /* A micro-panels per depth block */
    const int64_t rpt = (npan + nrow - 1) / nrow * mr; /* rows per row task */
    const int64_t nrt = (sm + rpt - 1) / rpt;          /* row tasks */
    int64_t t;
    /* pack A(s0:s0+sm, :): depth block pc at abuf + smp * pc, its panel i at + i * kcur; with the
       pool, in parallel (packed by one thread it is a sizeable share of a threaded product) */
    if (!priv) {
      dt__gemm_apack q;
      q.pl = pl; q.a = (const char *)a + (size_t)(s0 * rsa) * es; q.rsa = rsa; q.csa = csa; q.sm = sm; q.smp = smp;
      q.k = k; q.kc = kc; q.nkb = (k + kc - 1) / kc; q.abuf = abuf;
      /* the packing tasks; one plain call where nbuf is 1 or there is one task */
      dt__par_for_w((npan + DT__GEMM_APACK_PANELS - 1) / DT__GEMM_APACK_PANELS * q.nkb, 1, nbuf, dt__gemm_apack_task, &q);
    }
    {
      dt__gemm_slab g;
      g.pl = pl; g.k = k; g.n = n; g.kc = kc; g.ncol = ncol; g.ncw = ncw; g.rpt = rpt; g.sm = sm; g.smp = smp;
      g.s0 = s0; g.abuf = abuf; g.alpha = alpha; g.beta = beta; g.b = b; g.rsb = rsb; g.csb = csb; g.c = c;
      g.bbuf = abuf + asz; g.bsz = bsz;
      g.a = (const char *)a + (size_t)(s0 * rsa) * es; g.rsa = rsa; g.csa = csa; g.aown = aown;
      g.apriv = priv ? abuf : NULL; g.asz = asz / (size_t)nbuf;
      /* with row tasks, each would pack the same B again: read its rows where they are instead;
         with few micro-panels of A (a convolution's gemm against a block of col, with 32 or 64
         output channels; a 10-wide output layer's weight gradient), B's elements are used a few
         times: packing them does not pay */
      g.bdirect = csb == 1 && (nrow > 1 || npan <= DT__GEMM_BDIRECT_PANELS);
      /* each thread's rows of A, when they are contiguous, read in place rather than packed: for the
         column split each thread would pack all of A (a linear layer's x, 800 KB in Fashion-MNIST) */
      g.adirect = priv && csa == 1 && pl->kernd && (DT__GEMM_ADIRECT > 1 || (DT__GEMM_ADIRECT == 1 && by_cols));
      g.bias = (const char *)bias;
      g.asum = priv && rsa == 1 && o ? (char *)o->asum : NULL; /* A packed by each thread, rows contiguous: its row sums too */
      if (priv) {
        int w;
        g.abuf = NULL;
        for (w = 0; w < nbuf; w++) aown[w] = -1;
      }
      if (nbuf == 1) { /* a plain loop: no job for the pool */
        for (t = 0; t < nrt * ncol; t++) dt__gemm_task(&g, t, 0);
      } else
        dt__par_for_w(nrt * ncol, 1, nbuf, dt__gemm_slab_task, &g);
    }
  }
  DT__GEMM_FREE(raw, rawsz);
  if (priv && rsa == 1 && o && o->asum) o->asum_done = 1; /* written: see dt__gemm_opts */
  return 1;
}

static DT__GEMM_MAYBE_UNUSED int dt__gemm_blocked(const dt__gemm_plan *pl, int64_t m, int64_t n, int64_t k, double alpha,
                            const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                            int64_t csb, double beta, void *c) {
  return dt__gemm_blocked_b(pl, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, NULL);
}
