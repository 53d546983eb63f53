/* Half precision products on the CPU (the gemm slot given DT_F16 or DT_BF16; the table's
   half_gemm is 1): BF16 with the AVX512_BF16 instruction VDPBF16PS where the CPU has it, as
   oneDNN does for PyTorch, and everything else (F16, BF16 on other CPUs or builds) through F32
   copies (dt__half_gemm_f32).

   The BF16 kernel: C (bf16) = alpha op(A) op(B) + beta C, A and B in bfloat16. VDPBF16PS adds
   the two products of a pair of bf16 depths to each F32 lane; the sums stay in F32 over all of
   k and are rounded to bfloat16 once, with alpha and beta applied in F32 (rounded to float, as
   the F32 gemm takes them). op(A) is packed in panels of 12 rows, the depth pair (2q, 2q+1) of
   a row one 32-bit word; op(B) in panels of 32 columns, the depth pair of each column side by
   side (the layout VDPBF16PS reads); an odd k gets a zero depth, a last panel zero rows or
   columns. A 12x32 tile of C stays in 24 registers for all of k; the tasks, a group of A's
   panels (kept in L2) by a group of B's, go to the CPU backend's threads. VDPBF16PS takes
   bf16 subnormals as zero and flushes subnormal results, as oneDNN's kernels do. */

/* GCC >= 10 and Clang >= 9 (Apple's >= 12) know the avx512bf16 target */
#if DT__GEMM_X86 && ((defined(__clang__) && !defined(__apple_build_version__) && __clang_major__ >= 9) || \
                     (defined(__clang__) && defined(__apple_build_version__) && __clang_major__ >= 12) ||  \
                     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define DT__GEMM_BF16 1
#include <immintrin.h>
#else
#define DT__GEMM_BF16 0
#endif

#if DT__GEMM_BF16
#define DT__BF16_MR 12
#define DT__BF16_NR 32
#define DT__BF16_RG 8 /* A's panels per task: 96 rows (192 KiB of A at k = 1024) */
#define DT__BF16_CG 8 /* B's panels per task: 256 columns */
#define DT__BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* CPUID leaf 7 subleaf 1, EAX bit 5: AVX512_BF16; with AVX-512 (F, BW, VL) that the OS saves */
static int dt__gemm_bf16_cached = -1;
static int dt__gemm_bf16_ok(void) {
  int ok = DT__ATOMIC_LOAD(&dt__gemm_bf16_cached);
  if (ok < 0) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    ok = 0;
    if (dt__x86_has_avx512f() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __get_cpuid_max(0, NULL) >= 7) {
      __cpuid_count(7, 1, a, b, c, d);
      ok = (a >> 5) & 1u;
    }
    (void)b; (void)c; (void)d;
    DT__ATOMIC_STORE(&dt__gemm_bf16_cached, ok);
  }
  return ok;
}

/* pa: (kq, 12) words of A's panel; pb: (kq, 32, 2) bf16 of B's panel -> out: (12, 32) F32 sums */
DT__BF16_TARGET static void dt__gemm_bf16_kern(int64_t kq, const uint32_t *pa, const uint16_t *pb, float *out) {
  __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0,
         c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0, c16 = c0, c17 = c0, c18 = c0, c19 = c0, c20 = c0, c21 = c0,
         c22 = c0, c23 = c0;
  int64_t q;
  for (q = 0; q < kq; q++, pa += DT__BF16_MR, pb += 2 * DT__BF16_NR) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)pb), b1 = (__m512bh)_mm512_loadu_si512((const void *)(pb + 32));
    __m512bh x;
    x = (__m512bh)_mm512_set1_epi32((int)pa[0]); c0 = _mm512_dpbf16_ps(c0, x, b0); c1 = _mm512_dpbf16_ps(c1, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[1]); c2 = _mm512_dpbf16_ps(c2, x, b0); c3 = _mm512_dpbf16_ps(c3, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[2]); c4 = _mm512_dpbf16_ps(c4, x, b0); c5 = _mm512_dpbf16_ps(c5, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[3]); c6 = _mm512_dpbf16_ps(c6, x, b0); c7 = _mm512_dpbf16_ps(c7, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[4]); c8 = _mm512_dpbf16_ps(c8, x, b0); c9 = _mm512_dpbf16_ps(c9, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[5]); c10 = _mm512_dpbf16_ps(c10, x, b0); c11 = _mm512_dpbf16_ps(c11, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[6]); c12 = _mm512_dpbf16_ps(c12, x, b0); c13 = _mm512_dpbf16_ps(c13, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[7]); c14 = _mm512_dpbf16_ps(c14, x, b0); c15 = _mm512_dpbf16_ps(c15, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[8]); c16 = _mm512_dpbf16_ps(c16, x, b0); c17 = _mm512_dpbf16_ps(c17, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[9]); c18 = _mm512_dpbf16_ps(c18, x, b0); c19 = _mm512_dpbf16_ps(c19, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[10]); c20 = _mm512_dpbf16_ps(c20, x, b0); c21 = _mm512_dpbf16_ps(c21, x, b1);
    x = (__m512bh)_mm512_set1_epi32((int)pa[11]); c22 = _mm512_dpbf16_ps(c22, x, b0); c23 = _mm512_dpbf16_ps(c23, x, b1);
  }
  _mm512_storeu_ps(out, c0); _mm512_storeu_ps(out + 16, c1); _mm512_storeu_ps(out + 32, c2); _mm512_storeu_ps(out + 48, c3);
  _mm512_storeu_ps(out + 64, c4); _mm512_storeu_ps(out + 80, c5); _mm512_storeu_ps(out + 96, c6); _mm512_storeu_ps(out + 112, c7);
  _mm512_storeu_ps(out + 128, c8); _mm512_storeu_ps(out + 144, c9); _mm512_storeu_ps(out + 160, c10);
  _mm512_storeu_ps(out + 176, c11); _mm512_storeu_ps(out + 192, c12); _mm512_storeu_ps(out + 208, c13);
  _mm512_storeu_ps(out + 224, c14); _mm512_storeu_ps(out + 240, c15); _mm512_storeu_ps(out + 256, c16);
  _mm512_storeu_ps(out + 272, c17); _mm512_storeu_ps(out + 288, c18); _mm512_storeu_ps(out + 304, c19);
  _mm512_storeu_ps(out + 320, c20); _mm512_storeu_ps(out + 336, c21); _mm512_storeu_ps(out + 352, c22);
  _mm512_storeu_ps(out + 368, c23);
}

/* One product: op(A) element (i, p) at a[i * rsa + p * csa], op(B) element (p, j) at b[p * rsb + j * csb],
   c: (m, n); pa, pb: the packing buffers; kq = ceil(k / 2). */
typedef struct dt__gemm_bf16_job {
  const uint16_t *a, *b;
  uint16_t *c;
  int64_t m, n, k, kq, rsa, csa, rsb, csb, npa, npb, ntc;
  float alpha, beta;
  uint32_t *pa;
  uint16_t *pb;
} dt__gemm_bf16_job;

/* A's panel x: pa[(x * kq + q) * 12 + r] = a(i, 2q) | a(i, 2q + 1) << 16, i = 12 x + r (zero past m or k) */
static void dt__gemm_bf16_pack_a(const dt__gemm_bf16_job *g, int64_t x) {
  uint32_t *d = g->pa + (size_t)(x * g->kq * DT__BF16_MR);
  int64_t q;
  int r;
  for (r = 0; r < DT__BF16_MR; r++) {
    const int64_t i = x * DT__BF16_MR + r;
    const uint16_t *s = g->a + i * g->rsa;
    if (i >= g->m) {
      for (q = 0; q < g->kq; q++) d[q * DT__BF16_MR + r] = 0;
      continue;
    }
    for (q = 0; q < g->k / 2; q++)
      d[q * DT__BF16_MR + r] = (uint32_t)s[2 * q * g->csa] | (uint32_t)s[(2 * q + 1) * g->csa] << 16;
    if (g->k & 1) d[q * DT__BF16_MR + r] = s[2 * q * g->csa];
  }
}

/* B's panel y: pb[((y * kq + q) * 32 + c) * 2 + e] = b(2q + e, j), j = 32 y + c (zero past n or k) */
static void dt__gemm_bf16_pack_b(const dt__gemm_bf16_job *g, int64_t y) {
  uint16_t *d = g->pb + (size_t)(y * g->kq * 2 * DT__BF16_NR);
  int64_t p, j;
  int cc;
  for (p = 0; p < 2 * g->kq; p++) {
    uint16_t *dp = d + (p >> 1) * 2 * DT__BF16_NR + (p & 1);
    for (cc = 0; cc < DT__BF16_NR; cc++) {
      j = y * DT__BF16_NR + cc;
      dp[2 * cc] = p < g->k && j < g->n ? g->b[p * g->rsb + j * g->csb] : 0;
    }
  }
}

static void dt__gemm_bf16_pack_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gemm_bf16_job *g = (const dt__gemm_bf16_job *)ctx;
  for (; lo < hi; lo++) {
    if (lo < g->npa) dt__gemm_bf16_pack_a(g, lo);
    else dt__gemm_bf16_pack_b(g, lo - g->npa);
  }
}

/* Task t: A's panels of row group t / ntc by B's panels of column group t % ntc. */
static void dt__gemm_bf16_task(void *ctx, int64_t lo, int64_t hi) {
  const dt__gemm_bf16_job *g = (const dt__gemm_bf16_job *)ctx;
  float acc[DT__BF16_MR * DT__BF16_NR];
  for (; lo < hi; lo++) {
    const int64_t x0 = lo / g->ntc * DT__BF16_RG, y0 = lo % g->ntc * DT__BF16_CG;
    const int64_t x1 = dt__gemm_min(g->npa, x0 + DT__BF16_RG), y1 = dt__gemm_min(g->npb, y0 + DT__BF16_CG);
    int64_t x, y;
    for (y = y0; y < y1; y++)
      for (x = x0; x < x1; x++) {
        const int64_t i0 = x * DT__BF16_MR, j0 = y * DT__BF16_NR;
        const int mr = (int)dt__gemm_min(DT__BF16_MR, g->m - i0), nr = (int)dt__gemm_min(DT__BF16_NR, g->n - j0);
        int r, cc;
        dt__gemm_bf16_kern(g->kq, g->pa + (size_t)(x * g->kq * DT__BF16_MR), g->pb + (size_t)(y * g->kq * 2 * DT__BF16_NR), acc);
        for (r = 0; r < mr; r++) {
          uint16_t *ci = g->c + (i0 + r) * g->n + j0;
          const float *ar = acc + r * DT__BF16_NR;
          if (g->beta == 0.0f)
            for (cc = 0; cc < nr; cc++) ci[cc] = dt__f32_to_bf16(g->alpha * ar[cc]);
          else
            for (cc = 0; cc < nr; cc++) ci[cc] = dt__f32_to_bf16(g->alpha * ar[cc] + g->beta * dt__bf16_to_f32(ci[cc]));
        }
      }
  }
}

/* C (m, n) = alpha op(A) op(B) + beta C in bfloat16 (a: (m, k) or (k, m) when ta; b: (k, n) or
   (n, k) when tb); m, n >= 1. Returns 0, having done nothing, when the packing buffers cannot be had. */
static int dt__gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, const void *b, double beta,
                         void *c) {
  dt__gemm_bf16_job g;
  size_t asz, bsz, rawsz;
  char *raw, *al;
  g.a = (const uint16_t *)a; g.b = (const uint16_t *)b; g.c = (uint16_t *)c;
  g.m = m; g.n = n; g.k = k; g.kq = (k + 1) / 2;
  g.rsa = ta ? 1 : k; g.csa = ta ? m : 1; g.rsb = tb ? 1 : n; g.csb = tb ? k : 1;
  g.npa = (m + DT__BF16_MR - 1) / DT__BF16_MR; g.npb = (n + DT__BF16_NR - 1) / DT__BF16_NR;
  g.ntc = (g.npb + DT__BF16_CG - 1) / DT__BF16_CG;
  g.alpha = (float)alpha; g.beta = (float)beta;
  asz = ((size_t)(g.npa * g.kq * DT__BF16_MR) * sizeof(uint32_t) + 63) & ~(size_t)63;
  bsz = (size_t)(g.npb * g.kq * 2 * DT__BF16_NR) * sizeof(uint16_t);
  rawsz = asz + bsz + 64;
  raw = (char *)DT__GEMM_MALLOC(rawsz);
  if (!raw) return 0;
  al = raw + (64 - (size_t)((uintptr_t)raw & 63));
  g.pa = (uint32_t *)(void *)al; g.pb = (uint16_t *)(void *)(al + asz);
  dt__par_for(g.npa + g.npb, 4, dt__gemm_bf16_pack_task, &g);
  dt__par_for((g.npa + DT__BF16_RG - 1) / DT__BF16_RG * g.ntc, 1, dt__gemm_bf16_task, &g);
  DT__GEMM_FREE(raw, rawsz);
  return 1;
}
#endif

/* The CPU's gemm slot for t = DT_F16 or DT_BF16: the arguments of dt__cpu_gemm. */
static dt_status dt__cpu_gemm_half(int dev, dt_dtype t, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                                   const void *a, int64_t sa, const void *b, int64_t sb, double beta, void *c, int64_t sc) {
  int64_t i = 0;
#if DT__GEMM_BF16
  if (t == DT_BF16 && m > 0 && n > 0 && dt__gemm_bf16_ok())
    for (; i < batch; i++)
      if (!dt__gemm_bf16(ta, tb, m, n, k, alpha, (const uint16_t *)a + i * sa, (const uint16_t *)b + i * sb, beta,
                         (uint16_t *)c + i * sc))
        break; /* out of memory: the rest through F32 copies (which say so if they cannot be had either) */
  if (i == batch) return DT_OK;
#endif
  return dt__half_gemm_f32(dt__cpu_backend(), dev, t, ta, tb, batch - i, m, n, k, alpha, (const uint16_t *)a + i * sa, sa,
                           (const uint16_t *)b + i * sb, sb, beta, (uint16_t *)c + i * sc, sc);
}
