/* Normals on x86 (GCC/Clang): dt__box_muller on vectors of pairs, compiled for the baseline,
   AVX2 and AVX-512 as the elementwise kernels are. Every lane does dt__box_muller's operations
   in its order, with the same constants, so the results are its bits (tests/test_random.c
   compares them over many words and the edge cases); what differs: log's scaling of x into
   [sqrt(1/2), sqrt(2)) reads x's exponent from its bits instead of doubling in a loop (the
   same m and e: the scaling is exact), and the octant's branch is a select. Contraction into
   FMA stays off (GCC: the optimize attribute, whatever the -std or -ffp-contract; Clang: the
   pragma, as in dt__box_muller, which an explicit -ffp-contract=fast overrides in both). */
#if DT__EW_X86
#if defined(__clang__)
#define DT__BM_ATTR
#else
#define DT__BM_ATTR __attribute__((optimize("fp-contract=off")))
#endif
#define DT__BM_NP 16 /* pairs per call */
/* dt__box_muller on DT__BM_NP pairs of words, L = sizeof(VD) / 8 lanes at a time */
#define DT__BM_BOX_MULLER_N(NAME, TARGET, VD, VI)                                                         \
  TARGET DT__BM_ATTR static void NAME(const uint32_t *w0, const uint32_t *w1, float *z0, float *z1) {     \
    DT__NO_CONTRACT                                                                                       \
    static const double lc[13] = {1.0 / 27, 1.0 / 25, 1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15,   \
                                  1.0 / 13, 1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};             \
    static const double sin_c[9] = {-1.0 / 121645100408832000.0, 1.0 / 355687428096000.0,                 \
                                    -1.0 / 1307674368000.0, 1.0 / 6227020800.0, -1.0 / 39916800.0,        \
                                    1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0};              \
    static const double cos_c[10] = {1.0 / 2432902008176640000.0, -1.0 / 6402373705728000.0,              \
                                     1.0 / 20922789888000.0, -1.0 / 87178291200.0, 1.0 / 479001600.0,     \
                                     -1.0 / 3628800.0, 1.0 / 40320.0, -1.0 / 720.0, 1.0 / 24.0, -1.0 / 2.0}; \
    enum { L = sizeof(VD) / 8 };                                                                          \
    int v, l, i;                                                                                          \
    for (v = 0; v < DT__BM_NP; v += L) {                                                                  \
      /* x, t and q start at zero: their lanes are set one by one below, which some GCC versions'         \
         -Wuninitialized call a use of the whole vector */                                                \
      VD x = {0}, t = {0}, mant, m, ed, f, s, z, p, lg, r, a, zz, ps, pc, sn, cs, S, C, c, d, rc, rd;     \
      VI bits, ex, big, lo, q = {0}, q0, q1, q2, q3;                                                      \
      for (l = 0; l < L; l++) {                                                                           \
        x[l] = (double)w0[v + l] + 1.0;                                                                   \
        t[l] = (double)(w1[v + l] & 0x3FFFFFFFu);                                                         \
        q[l] = (long long)(w1[v + l] >> 30);                                                              \
      }                                                                                                   \
      x = x * (1.0 / 4294967296.0); /* u1 in (0, 1], exact */                                             \
      t = t * (1.0 / 1073741824.0);                                                                       \
      /* dt__log_unit(x): m = x 2^-e in [sqrt(1/2), sqrt(2)) (x = 1: m = 1, e = 0) */                     \
      bits = (VI)x;                                                                                       \
      ex = ((bits >> 52) & 0x7FF) - 1023;                                                                 \
      mant = (VD)((bits & 0x000FFFFFFFFFFFFFLL) | 0x3FF0000000000000LL); /* [1, 2) */                     \
      big = (VI)(mant >= 2.0 * 0.7071067811865476);                                                       \
      m = (VD)(((VI)(mant * 0.5) & big) | ((VI)mant & ~big));                                             \
      ex = ex - big;                                                                                      \
      ed = (VD)((ex + 1024) | 0x4330000000000000LL) - 4503599627371520.0; /* (double)e */                 \
      f = m + -1.0;                                                                                       \
      s = f / (f + 2.0);                                                                                  \
      z = s * s;                                                                                          \
      p = z * 0.0 + lc[0]; /* z >= 0: lc[0] */                                                            \
      for (i = 1; i < 13; i++) p = p * z + lc[i];                                                         \
      lg = ed * 0.6931471806019545 + (ed * -4.2009150726810846e-11 + (2.0 * s + (2.0 * s) * (z * p)));    \
      r = -2.0 * lg;                                                                                      \
      for (l = 0; l < L; l++) r[l] = DT__DSQRT(r[l]);                                                     \
      /* sin and cos of the octant */                                                                     \
      lo = (VI)(t <= 0.5);                                                                                \
      a = (VD)(((VI)t & lo) | ((VI)(1.0 + -t) & ~lo));                                                    \
      a = a * 1.5707963267948966;                                                                         \
      zz = a * a;                                                                                         \
      ps = zz * 0.0 + sin_c[0];                                                                           \
      pc = zz * 0.0 + cos_c[0];                                                                           \
      for (i = 1; i < 9; i++) ps = ps * zz + sin_c[i];                                                    \
      for (i = 1; i < 10; i++) pc = pc * zz + cos_c[i];                                                   \
      sn = a + (a * zz) * ps;                                                                             \
      cs = 1.0 + zz * pc;                                                                                 \
      S = (VD)(((VI)sn & lo) | ((VI)cs & ~lo));                                                           \
      C = (VD)(((VI)cs & lo) | ((VI)sn & ~lo));                                                           \
      q0 = (VI)(q == 0); q1 = (VI)(q == 1);                                                               \
      q2 = (VI)(q == 2); q3 = (VI)(q == 3);                                                               \
      c = (VD)(((VI)C & q0) | ((VI)(-S) & q1) |                                                           \
                          ((VI)(-C) & q2) | ((VI)S & q3));                                                \
      d = (VD)(((VI)S & q0) | ((VI)C & q1) |                                                              \
                          ((VI)(-S) & q2) | ((VI)(-C) & q3));                                             \
      rc = r * c;                                                                                         \
      rd = r * d;                                                                                         \
      for (l = 0; l < L; l++) { z0[v + l] = (float)rc[l]; z1[v + l] = (float)rd[l]; }                     \
    }                                                                                                     \
  }

/* dt__philox_block for blocks j0 .. j0 + DT__BM_NP / 2 - 1, words in pair order: pair 2b is words 0      \
   and 1 of block b, pair 2b + 1 words 2 and 3 */
#define DT__BM_PHILOX_N(NAME, TARGET, VU)                                                                 \
  TARGET static void NAME(uint64_t seed, uint64_t draw, uint64_t j0, uint32_t *w0, uint32_t *w1) {        \
    enum { L = sizeof(VU) / 8 };                                                                          \
    int v, l, r;                                                                                          \
    for (v = 0; v < DT__BM_NP / 2; v += L) {                                                              \
      VU c0, c1, c2, c3, p0, p1, m32;                                                                     \
      uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);                                          \
      for (l = 0; l < L; l++) {                                                                           \
        const uint64_t j = j0 + (uint64_t)(v + l);                                                        \
        c0[l] = (uint32_t)j; c1[l] = (uint32_t)(j >> 32); m32[l] = 0xFFFFFFFFu;                           \
      }                                                                                                   \
      c2 = m32 & (uint32_t)draw; c3 = m32 & (uint32_t)(draw >> 32);                                       \
      for (r = 0; r < 10; r++) {                                                                          \
        VU n0, n2;                                                                                        \
        p0 = c0 * 0xD2511F53u; p1 = c2 * 0xCD9E8D57u;                                                     \
        n0 = (p1 >> 32) ^ c1 ^ k0; n2 = (p0 >> 32) ^ c3 ^ k1;                                             \
        c1 = p1 & m32; c3 = p0 & m32; c0 = n0; c2 = n2;                                                   \
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;                                                             \
      }                                                                                                   \
      for (l = 0; l < L; l++) {                                                                           \
        const int b = v + l;                                                                              \
        w0[2 * b] = (uint32_t)c0[l]; w1[2 * b] = (uint32_t)c1[l];                                         \
        w0[2 * b + 1] = (uint32_t)c2[l]; w1[2 * b + 1] = (uint32_t)c3[l];                                 \
      }                                                                                                   \
    }                                                                                                     \
  }

/* the variants' vectors of 64-bit integers (their doubles: dt__vd_*) */
typedef long long dt__bm_i_base __attribute__((vector_size(16)));
typedef unsigned long long dt__bm_u_base __attribute__((vector_size(16)));
typedef long long dt__bm_i_avx2 __attribute__((vector_size(32)));
typedef unsigned long long dt__bm_u_avx2 __attribute__((vector_size(32)));
typedef long long dt__bm_i_avx512 __attribute__((vector_size(64)));
typedef unsigned long long dt__bm_u_avx512 __attribute__((vector_size(64)));
DT__BM_BOX_MULLER_N(dt__box_muller_n_base, DT__TARGET_BASE, dt__vd_base, dt__bm_i_base)
DT__BM_PHILOX_N(dt__philox_n_base, DT__TARGET_BASE, dt__bm_u_base)
DT__BM_BOX_MULLER_N(dt__box_muller_n_avx2, DT__TARGET_AVX2, dt__vd_avx2, dt__bm_i_avx2)
DT__BM_PHILOX_N(dt__philox_n_avx2, DT__TARGET_AVX2, dt__bm_u_avx2)
DT__BM_BOX_MULLER_N(dt__box_muller_n_avx512, DT__TARGET_AVX512, dt__vd_avx512, dt__bm_i_avx512)
DT__BM_PHILOX_N(dt__philox_n_avx512, DT__TARGET_AVX512, dt__bm_u_avx512)
typedef void (*dt__box_muller_n_fn)(const uint32_t *w0, const uint32_t *w1, float *z0, float *z1);
typedef void (*dt__philox_n_fn)(uint64_t seed, uint64_t draw, uint64_t j0, uint32_t *w0, uint32_t *w1);
static const dt__philox_n_fn dt__philox_n_tab[DT__EW_NISA] = {dt__philox_n_base, dt__philox_n_avx2, dt__philox_n_avx512};
static const dt__box_muller_n_fn dt__box_muller_n_tab[DT__EW_NISA] = {dt__box_muller_n_base, dt__box_muller_n_avx2,
                                                                      dt__box_muller_n_avx512};
#endif

typedef struct dt__random_job {
  int normal;
  uint64_t seed, draw;
  int64_t n;
  float *y;
} dt__random_job;

/* Philox blocks [lo, hi) */
static void dt__random_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__random_job *r = (const dt__random_job *)ctx;
  int64_t j = lo;
#if DT__EW_X86
  { /* DT__BM_NP / 2 blocks at a time on vectors */
    const dt__box_muller_n_fn bm = dt__box_muller_n_tab[dt__ew_isa()];
    const dt__philox_n_fn ph = dt__philox_n_tab[dt__ew_isa()];
    uint32_t w0[DT__BM_NP], w1[DT__BM_NP];
    float z0[DT__BM_NP], z1[DT__BM_NP];
    int b, q;
    for (; hi - j >= DT__BM_NP / 2; j += DT__BM_NP / 2) {
      ph(r->seed, r->draw, (uint64_t)j, w0, w1);
      if (r->normal) bm(w0, w1, z0, z1);
      else
        for (b = 0; b < DT__BM_NP; b++) { z0[b] = dt__u32_to_uniform(w0[b]); z1[b] = dt__u32_to_uniform(w1[b]); }
      for (b = 0; b < DT__BM_NP / 2; b++) {
        const int64_t i0 = (j + b) * 4;
        const float zb[4] = {z0[2 * b], z1[2 * b], z0[2 * b + 1], z1[2 * b + 1]};
        for (q = 0; q < 4 && i0 + q < r->n; q++) r->y[i0 + q] = zb[q];
      }
    }
  }
#endif
  for (; j < hi; j++) {
    uint32_t w[4];
    float z[4];
    int q;
    dt__philox_block(r->seed, r->draw, (uint64_t)j, w);
    if (r->normal) { dt__box_muller(w[0], w[1], &z[0], &z[1]); dt__box_muller(w[2], w[3], &z[2], &z[3]); }
    else for (q = 0; q < 4; q++) z[q] = dt__u32_to_uniform(w[q]);
    for (q = 0; q < 4 && j * 4 + q < r->n; q++) r->y[j * 4 + q] = z[q];
  }
}

/* y[i] = word i % 4 of Philox block i / 4, as uniform or normal. y: (n,) */
static dt_status dt__cpu_random(int dev, int normal, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, float *y) {
  dt__random_job r;
  (void)dev;
  dt__rng_at(gen, &seed, &draw);
  r.normal = normal; r.seed = seed; r.draw = draw; r.n = n; r.y = y;
  dt__par_for((n + 3) / 4, DT__GRAIN_MATH / 4, dt__random_task, &r);
  return DT_OK;
}
