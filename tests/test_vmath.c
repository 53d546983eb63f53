/* tests/test_vmath.c — the CPU backend's elementwise and reduction kernels on their own.

   Every variant this CPU runs (baseline vectors, AVX2, AVX-512; see "cpu elementwise kernels"
   in devtensor.h) is checked:
   - F32 exp and log against exp/log in double over a sweep of every 1021st float and the edge
     cases (0, -0, subnormals, FLT_MIN, FLT_MAX, inf, NaN, the over- and underflow thresholds,
     the ends of the polynomials' ranges): at most DT_TEST_ULPS (1) ulp from the true value,
     and NaN, inf and 0 where libm gives them;
   - F32 sigmoid over the same sweep: at most DT_TEST_SIGMOID_ULPS (2.5) ulps from 1 / (1 + exp(-x))
     in double, the same bits in every variant, and exactly 0, 1 and NaN where they belong;
     the fused gradients of sigmoid and tanh within three roundings of the expression in double,
     a rounding measured on the terms' scale |a| (1 + |b|) |b| and |a| (1 + b b) (1 - b b cancels);
   - add, sub, mul, div (F32, F64; contiguous and with either side a broadcast scalar), fill and
     the F32 <-> F64 casts give the bits of the plain C expression in every variant;
   - the casts between float32 and float16 / bfloat16 give the scalar conversions' bits (every
     half bit pattern; float32 values around every rounding boundary of each exponent);
   - sums and sums of squares give the same bits in every variant, within n * 2^-52 of the sum
     of |x| from the exact value (a long double sum of sorted... compared to a compensated sum);
   - float32 max pooling by vectors of output columns (dt__pool_vplane_*, each variant) gives the
     values and indices of the scalar plane loop, bit for bit, over random geometries and values
     with ties, NaN and infinities;
   - threads: a sum of 2^22 elements is the same whether its blocks run on the pool or one after
     another; small work (a 10x10 add, a 16-element fill) never goes to the pool; big work does
     when the pool has workers (-fopenmp builds). */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <float.h>
#include <stdlib.h>

#define DT_TEST_ULPS 1.0
#define DT_TEST_SIGMOID_ULPS 2.5

static const char *const t_isa_name[DT__EW_NISA] = {"baseline", "avx2", "avx512"};

static float t_bits_f(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
static uint32_t t_f_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
static uint64_t t_d_bits(double f) { uint64_t u; memcpy(&u, &f, sizeof u); return u; }

/* |y - r| in units of the float spacing at r (r exact, in double) */
static double t_ulps(float y, double r) {
  double a = fabs(r), sp;
  int e;
  if (a < FLT_MIN) sp = ldexp(1.0, -149);
  else { frexp(a, &e); sp = ldexp(1.0, e - 24); }
  if (a > FLT_MAX) return isinf(y) && (y > 0) == (r > 0) ? 0 : 1e30;
  return fabs((double)y - r) / sp;
}

static uint64_t t_rng = 0x9E3779B97F4A7C15ull;
static uint64_t t_next(void) {
  t_rng ^= t_rng << 13;
  t_rng ^= t_rng >> 7;
  t_rng ^= t_rng << 17;
  return t_rng;
}

/* The edge cases and the sweep: every 1021st bit pattern. */
static float *t_sweep(int64_t *n) {
  static const float edge[] = {0.0f, -0.0f, 1.0f, -1.0f, 1.4e-45f, -1.4e-45f, 1.1754942e-38f, 1.17549435e-38f,
                               3.40282347e38f, -3.40282347e38f, 88.0f, 88.000008f, 88.72283f, 88.72284f, 89.0f,
                               -87.0f, -87.00001f, -87.33655f, -87.33656f, -103.27893f, -103.97208f,
                               -103.97209f, -104.0f, -150.0f, 0.5f, 2.0f, 1.41421354f, 1.41421366f,
                               0.70710677f, 1e-7f, -1e-7f, 0.693147182f, 1.00000012f, 0.99999994f};
  int64_t m = (int64_t)(sizeof edge / sizeof edge[0]), k = 0, i;
  uint64_t u;
  float *x = (float *)malloc(sizeof(float) * (size_t)(m + 4 + (((uint64_t)1 << 32) / 1021 + 1)));
  if (!x) return NULL;
  for (i = 0; i < m; i++) x[k++] = edge[i];
  x[k++] = (float)INFINITY; x[k++] = -(float)INFINITY; x[k++] = (float)NAN; x[k++] = -(float)NAN;
  for (u = 0; u < ((uint64_t)1 << 32); u += 1021) x[k++] = t_bits_f((uint32_t)u);
  *n = k;
  return x;
}

static int t_isa_max(void) { return dt__ew_isa(); }

static void test_exp_log_ulps(void) {
  int64_t n, i;
  float *x = t_sweep(&n), *y = x ? (float *)malloc(sizeof(float) * (size_t)n) : NULL;
  int isa, f;
  if (!y) { free(x); T_SKIP("no memory for the sweep"); }
  for (isa = 0; isa <= t_isa_max(); isa++)
    for (f = 0; f < 2; f++) {
      double worst = 0, worst_x = 0, worst_libm = 0;
      dt__map_fn fn = f ? dt__ew_vtabs[isa].log_f32 : dt__ew_vtabs[isa].exp_f32;
      fn(n, x, y, 0, 0);
      for (i = 0; i < n; i++) {
        double r = f ? log((double)x[i]) : exp((double)x[i]), e;
        float lm = f ? logf(x[i]) : expf(x[i]);
        if (isnan(r)) { T_CHECK_MSG(isnan(y[i]), "%s %s(%a) = %a, not NaN", t_isa_name[isa], f ? "log" : "exp", x[i], y[i]); continue; }
        if (r == 0 || isinf(r)) {
          T_CHECK_MSG(y[i] == r || (r == 0 && y[i] == lm), "%s %s(%a) = %a, not %a", t_isa_name[isa], f ? "log" : "exp", x[i], y[i], r);
          continue;
        }
        e = t_ulps(y[i], r);
        if (e > worst) { worst = e; worst_x = x[i]; }
        e = fabs(((double)t_f_bits(y[i]) - (double)t_f_bits(lm)));
        if (e > worst_libm) worst_libm = e;
      }
      T_CHECK_MSG(worst <= DT_TEST_ULPS, "%s %s: %.3f ulps at %a", t_isa_name[isa], f ? "log" : "exp", worst, worst_x);
      T_CHECK_MSG(worst_libm <= 1, "%s %s: %g ulps from libm", t_isa_name[isa], f ? "log" : "exp", worst_libm);
      printf("  %s %s: %.3f ulps at most (at %a), %g from libm's\n", t_isa_name[isa], f ? "logf" : "expf", worst, worst_x, worst_libm);
    }
  free(x); free(y);
}

/* Every variant gives the baseline's bits for exp and log (no variant fuses a multiply-add:
   clang's AVX-512 target implies FMA and fused 16941 of 2^20 exps before) */
static void test_exp_log_same_bits(void) {
  int64_t n, i;
  float *x = t_sweep(&n), *y0 = x ? (float *)malloc(sizeof(float) * (size_t)n) : NULL,
        *y = y0 ? (float *)malloc(sizeof(float) * (size_t)n) : NULL;
  int isa, f;
  if (!y) { free(x); free(y0); T_SKIP("no memory for the sweep"); }
  for (f = 0; f < 2; f++) {
    (f ? dt__ew_vtabs[0].log_f32 : dt__ew_vtabs[0].exp_f32)(n, x, y0, 0, 0);
    for (isa = 1; isa <= t_isa_max(); isa++) {
      int64_t bad = 0;
      (f ? dt__ew_vtabs[isa].log_f32 : dt__ew_vtabs[isa].exp_f32)(n, x, y, 0, 0);
      for (i = 0; i < n; i++)
        if (t_f_bits(y[i]) != t_f_bits(y0[i]) && !(isnan(y[i]) && isnan(y0[i]))) bad++;
      T_CHECK_MSG(bad == 0, "%s %s: %lld of %lld results differ from the baseline's", t_isa_name[isa],
                  f ? "log" : "exp", (long long)bad, (long long)n);
    }
  }
  free(x); free(y0); free(y);
}

static double t_sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }

static void test_sigmoid(void) {
  int64_t n, i;
  float *x = t_sweep(&n), *y0 = x ? (float *)malloc(sizeof(float) * (size_t)n) : NULL,
        *y = y0 ? (float *)malloc(sizeof(float) * (size_t)n) : NULL;
  int isa;
  if (!y) { free(x); free(y0); T_SKIP("no memory for the sweep"); }
  for (isa = 0; isa <= t_isa_max(); isa++) {
    double worst = 0, worst_x = 0;
    int64_t bad = 0;
    dt__ew_vtabs[isa].sigmoid_f32(n, x, isa ? y : y0, 0, 0);
    for (i = 0; i < n; i++) {
      const float v = (isa ? y : y0)[i];
      double r, e;
      if (isnan(x[i])) { T_CHECK_MSG(isnan(v), "%s sigmoid(%a) = %a, not NaN", t_isa_name[isa], x[i], v); continue; }
      r = t_sigmoid((double)x[i]);
      e = t_ulps(v, r);
      if (e > worst) { worst = e; worst_x = x[i]; }
      if (isa && t_f_bits(v) != t_f_bits(y0[i])) bad++;
    }
    T_CHECK_MSG(worst <= DT_TEST_SIGMOID_ULPS, "%s sigmoid: %.3f ulps at %a", t_isa_name[isa], worst, worst_x);
    T_CHECK_MSG(bad == 0, "%s sigmoid: %lld of %lld results differ from the baseline's", t_isa_name[isa], (long long)bad, (long long)n);
    printf("  %s sigmoid: %.3f ulps at most (at %a)\n", t_isa_name[isa], worst, worst_x);
  }
  {
    const float e[] = {(float)INFINITY, -(float)INFINITY, 0.0f, -0.0f, 200.0f, -200.0f};
    float out[6];
    dt__ew_vtabs[t_isa_max()].sigmoid_f32(6, e, out, 0, 0);
    T_CHECK(out[0] == 1.0f && out[1] == 0.0f && out[2] == 0.5f && out[3] == 0.5f && out[4] == 1.0f && out[5] == 0.0f);
  }
  free(x); free(y0); free(y);
}

/* a * (1 - b) * b and a * (1 - b b), contiguous and with either side a broadcast scalar */
static void test_activation_grads(void) {
  enum { N = 1037 };
  static float a[N], b[N], y[N];
  int isa, f, side;
  int64_t i;
  for (i = 0; i < N; i++) {
    a[i] = (float)((double)(int64_t)(t_next() % 2000001) / 1e5 - 10.0);
    b[i] = (float)((double)(t_next() % 1000001) / 5e5 - 1.0); /* an activation's output, in [-1, 1] */
  }
  for (isa = 0; isa <= t_isa_max(); isa++)
    for (f = 0; f < 2; f++)
      for (side = 0; side < 3; side++) {
        const int64_t sa = side == 1 ? 0 : 1, sb = side == 2 ? 0 : 1;
        double worst = 0;
        (f ? dt__ew_vtabs[isa].tanh_grad_f32 : dt__ew_vtabs[isa].sigmoid_grad_f32)(N, a, sa, b, sb, y);
        for (i = 0; i < N; i++) {
          const double u = a[i * sa], w = b[i * sb], r = f ? u * (1.0 - w * w) : u * (1.0 - w) * w;
          const double scale = f ? fabs(u) * (1.0 + w * w) : fabs(u) * (1.0 + fabs(w)) * fabs(w);
          const double err = fabs((double)y[i] - r) / (scale * FLT_EPSILON + 1e-30);
          if (err > worst) worst = err;
        }
        T_CHECK_MSG(worst <= 3.0, "%s %s grad (side %d): %.2f roundings off", t_isa_name[isa], f ? "tanh" : "sigmoid", side, worst);
      }
}

/* random floats of every magnitude, with some zeros, infs and NaNs */
static void t_fill_random(float *a, double *d, int64_t n) {
  int64_t i;
  for (i = 0; i < n; i++) {
    uint64_t r = t_next();
    a[i] = t_bits_f((uint32_t)r);
    if (r % 97 == 0) a[i] = 0.0f;
    d[i] = (double)((int64_t)r) * ldexp(1.0, (int)(r >> 58) - 40);
    if (r % 89 == 0) d[i] = r % 2 ? INFINITY : NAN;
  }
}

static void test_arith_bits(void) {
  enum { N = 1037 };
  static float a[N], b[N], y[N];
  static double ad[N], bd[N], yd[N];
  int isa, op, side;
  int64_t i;
  t_fill_random(a, ad, N);
  t_fill_random(b, bd, N);
  for (isa = 0; isa <= t_isa_max(); isa++)
    for (op = 0; op < 4; op++)
      for (side = 0; side < 3; side++) { /* contiguous, b broadcast, a broadcast */
        int64_t sa = side == 2 ? 0 : 1, sb = side == 1 ? 0 : 1;
        int bad = 0, badd = 0;
        dt__ew_vtabs[isa].arith[0][op](N, a, sa, b, sb, y);
        dt__ew_vtabs[isa].arith[1][op](N, ad, sa, bd, sb, yd);
        for (i = 0; i < N; i++) {
          float u = a[i * sa], w = b[i * sb], r = op == 0 ? u + w : op == 1 ? u - w : op == 2 ? u * w : u / w;
          double ud = ad[i * sa], wd = bd[i * sb], rd = op == 0 ? ud + wd : op == 1 ? ud - wd : op == 2 ? ud * wd : ud / wd;
          if (t_f_bits(y[i]) != t_f_bits(r) && !(isnan(y[i]) && isnan(r))) bad++;
          if (t_d_bits(yd[i]) != t_d_bits(rd) && !(isnan(yd[i]) && isnan(rd))) badd++;
        }
        T_CHECK_MSG(bad == 0 && badd == 0, "%s op %d side %d: %d f32 and %d f64 elements differ", t_isa_name[isa], op, side, bad, badd);
      }
}

static void test_fill_cast_bits(void) {
  enum { N = 1001 };
  static float a[N], y[N], back[N];
  static double d[N], yd[N];
  int isa;
  int64_t i;
  t_fill_random(a, d, N);
  for (isa = 0; isa <= t_isa_max(); isa++) {
    int bad = 0;
    float v = -3.25f;
    int64_t v64 = -1234567890123ll;
    dt__ew_vtabs[isa].f32_f64(N, a, yd);
    dt__ew_vtabs[isa].f64_f32(N, d, y);
    dt__ew_vtabs[isa].f64_f32(N, yd, back);
    for (i = 0; i < N; i++) {
      if (t_d_bits(yd[i]) != t_d_bits((double)a[i]) && !isnan(a[i])) bad++;
      if (t_f_bits(y[i]) != t_f_bits((float)d[i]) && !isnan(d[i])) bad++;
      if (t_f_bits(back[i]) != t_f_bits(a[i]) && !isnan(a[i])) bad++;
      if (!isnan(a[i]) != !isnan(yd[i]) || !isnan(d[i]) != !isnan(y[i])) bad++; /* isnan: any nonzero value */
    }
    dt__ew_vtabs[isa].fill[0](N - 3, &v, y);
    dt__ew_vtabs[isa].fill[1](N - 5, &v64, yd);
    for (i = 0; i < N - 5; i++) {
      int64_t g;
      memcpy(&g, &yd[i], sizeof g);
      if (y[i] != v || g != v64) bad++;
    }
    T_CHECK_MSG(bad == 0, "%s: %d elements differ", t_isa_name[isa], bad);
  }
}

/* The casts between float32 and the half dtypes (dt__hv_kernel_at, each variant) against the
   scalar conversions (whose bits test_half checks against PyTorch's): every float16 and bfloat16
   bit pattern to float32; to the half dtypes, every 1021st float32 bit pattern, the edge cases,
   and for each exponent from 2^-27 to 2^17 the mantissas around every rounding boundary (ties,
   one above, one below) and random ones; lengths that leave a tail past the last vector. */
static void test_half_cast_variants(void) {
  int64_t n = 0, m = 0, i;
  float *x = t_sweep(&n), *f = NULL;
  uint16_t *h = NULL, *all = (uint16_t *)malloc(sizeof(uint16_t) * 65536);
  int isa, bf, sg;
  if (x) {
    float *grown = (float *)realloc(x, sizeof(float) * (size_t)(n + 2 * 45 * (24 * 3 * 3 + 256)));
    if (grown) x = grown; else { free(x); x = NULL; }
  }
  T_CHECK(x && all);
  if (!x || !all) { free(x); free(all); return; }
  for (sg = 0; sg < 2; sg++) { /* around the boundaries: bit k of the mantissa is the last one kept */
    uint32_t e;
    for (e = 100; e < 145; e++) {
      uint32_t base = ((uint32_t)sg << 31) | (e << 23), k, j;
      for (k = 0; k < 24; k++)
        for (j = 1; j <= 3; j++) {
          uint32_t mant = (j << k) & 0x7FFFFFu, lo = k ? mant - (1u << (k - 1)) : mant;
          x[n++] = t_bits_f(base | (lo & 0x7FFFFFu));
          x[n++] = t_bits_f(base | ((lo + 1u) & 0x7FFFFFu));
          x[n++] = t_bits_f(base | ((lo - 1u) & 0x7FFFFFu));
        }
      for (k = 0; k < 256; k++) x[n++] = t_bits_f(base | ((uint32_t)t_next() & 0x7FFFFFu));
    }
  }
  for (i = 0; i < 65536; i++) all[i] = (uint16_t)i;
  h = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)n);
  f = (float *)malloc(sizeof(float) * (size_t)(n > 65536 ? n : 65536));
  T_CHECK(h && f);
  if (!h || !f) { free(x); free(f); free(h); free(all); return; }
  for (isa = 0; isa <= t_isa_max(); isa++)
    for (bf = 0; bf < 2; bf++) {
      int64_t bad = 0, len;
      for (len = n - 7; len <= n; len += 7) { /* n - 7, then n: the elements past len untouched */
        memset(h, 0xA5, sizeof(uint16_t) * (size_t)n);
        dt__hv_kernel_at(isa, bf, 1)(len, x, h);
        for (i = 0; i < len; i++)
          if (h[i] != (bf ? dt__f32_to_bf16(x[i]) : dt__f32_to_f16(x[i]))) {
            if (!bad) printf("  %s to %s: %a (0x%08X) gave 0x%04X, not 0x%04X\n", t_isa_name[isa], bf ? "bfloat16" : "float16",
                             x[i], (unsigned)t_f_bits(x[i]), h[i], bf ? dt__f32_to_bf16(x[i]) : dt__f32_to_f16(x[i]));
            bad++;
          }
        for (; i < n; i++) bad += h[i] != 0xA5A5;
      }
      for (m = 65536 - 3; m <= 65536; m += 3) {
        dt__hv_kernel_at(isa, bf, 0)(m, all, f);
        for (i = 0; i < m; i++)
          if (t_f_bits(f[i]) != t_f_bits(bf ? dt__bf16_to_f32(all[i]) : dt__f16_to_f32(all[i]))) {
            if (!bad) printf("  %s from %s: 0x%04X gave 0x%08X\n", t_isa_name[isa], bf ? "bfloat16" : "float16", (unsigned)all[i],
                             (unsigned)t_f_bits(f[i]));
            bad++;
          }
      }
      T_CHECK_MSG(bad == 0, "%s %s casts: %lld differ from the scalar conversion's bits", t_isa_name[isa], bf ? "bfloat16" : "float16",
                  (long long)bad);
    }
  free(x); free(f); free(h); free(all);
}

/* the sum of x (squares when sq) to about 106 bits: two-sum compensated in double */
static double t_sum_exact(const double *x, int64_t n, int sq, double *abs_sum) {
  double s = 0, c = 0, as = 0;
  int64_t i;
  for (i = 0; i < n; i++) {
    double v = sq ? x[i] * x[i] : x[i], t = s + v, bp = t - s;
    c += (s - (t - bp)) + (v - bp);
    s = t;
    as += fabs(v);
  }
  *abs_sum = as;
  return s + c;
}

static void test_sum_variants(void) {
  enum { N = 70001 }; /* two blocks, and a tail that is no multiple of 16 */
  static float a[N];
  static double d[N], ad[N];
  int64_t lens[] = {0, 1, 15, 16, 17, 1000, N}, i;
  int li, isa, sq, t;
  for (i = 0; i < N; i++) {
    d[i] = (double)(int64_t)t_next() * ldexp(1.0, -63) * (i % 7 == 0 ? 1e3 : 1.0);
    a[i] = (float)d[i];
    ad[i] = a[i];
  }
  for (li = 0; li < (int)(sizeof lens / sizeof lens[0]); li++)
    for (t = 0; t < 2; t++)
      for (sq = 0; sq < 2; sq++) {
        double first = 0, as, ex = t_sum_exact(t ? d : ad, lens[li], sq, &as);
        for (isa = 0; isa <= t_isa_max(); isa++) {
          dt__red_job j;
          double part = 0;
          int64_t s;
          memset(&j, 0, sizeof j);
          j.op = sq ? DT__R_NORM : DT__R_SUM; j.r.t = t ? DT_F64 : DT_F32; j.r.len = lens[li]; j.r.block = dt__red_block(lens[li]);
          j.sum16 = dt__ew_vtabs[isa].sum16[t];
          for (s = 0; s < j.r.len; s += j.r.block)
            part += dt__red_block_sum(&j, t ? (const void *)(d + s) : (const void *)(a + s), j.r.len - s < j.r.block ? j.r.len - s : j.r.block,
                                      NULL);
          if (isa == 0) first = part;
          T_CHECK_MSG(t_d_bits(part) == t_d_bits(first), "%s len %lld f%d sq %d: %a vs baseline %a", t_isa_name[isa],
                      (long long)lens[li], t ? 64 : 32, sq, part, first);
          T_CHECK_MSG(fabs(part - ex) <= (double)lens[li] * DBL_EPSILON * as, "len %lld: %a vs %a", (long long)lens[li], part, ex);
        }
      }
}

/* max pooling of a float32 plane by vectors, each variant this CPU runs, against the scalar loop */
static void test_pool_vplane_variants(void) {
  static const dt__pool_vplane_fn fns[DT__EW_NISA] = {
    dt__pool_vplane_base,
#if DT__EW_X86
    dt__pool_vplane_avx2, dt__pool_vplane_avx512
#endif
  };
  enum { MAXP = 40 * 40 };
  float x[MAXP], y0[MAXP], y[MAXP], buf[DT__POOL_VBUF];
  int64_t i0[MAXP], ix[MAXP];
  long runs[DT__EW_NISA] = {0}, bad = 0;
  int it, isa;
  for (it = 0; it < 3000; it++) {
    dt__pool2d p;
    int64_t k;
    memset(&p, 0, sizeof p);
    p.kind = DT__POOL2D_MAX;
    p.n = p.c = 1;
    p.h = 1 + (int64_t)(t_next() % 40);
    p.w = 1 + (int64_t)(t_next() % 40);
    p.kh = 1 + (int64_t)(t_next() % 5);
    p.kw = 1 + (int64_t)(t_next() % 5);
    p.sh = 1 + (int64_t)(t_next() % 3);
    p.sw = 1 + (int64_t)(t_next() % 3);
    p.ph = (int64_t)(t_next() % (p.kh / 2 + 1));
    p.pw = (int64_t)(t_next() % (p.kw / 2 + 1));
    if (p.h + 2 * p.ph < p.kh || p.w + 2 * p.pw < p.kw) continue;
    p.oh = (p.h + 2 * p.ph - p.kh) / p.sh + 1;
    p.ow = (p.w + 2 * p.pw - p.kw) / p.sw + 1;
    if (p.oh * p.ow > MAXP) continue; /* (padding can make 41 x 41 outputs) */
    if (!dt__pool_vplane(&p)) continue; /* the scalar loop's shapes */
    for (k = 0; k < p.h * p.w; k++) { /* few distinct values (ties), some NaN and infinities */
      const uint64_t r = t_next() % 64;
      x[k] = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : r == 3 ? -0.0f : (float)(int)(r % 7) - 3.0f;
    }
    dt__pool_plane_f32(&p, x, y0, i0);
    for (isa = 0; isa <= t_isa_max(); isa++) {
      fns[isa](&p, x, y, ix, buf);
      runs[isa]++;
      for (k = 0; k < p.oh * p.ow; k++)
        if (t_f_bits(y[k]) != t_f_bits(y0[k]) || ix[k] != i0[k]) {
          if (bad++ < 5)
            T_CHECK_MSG(0, "%s: plane %lldx%lld, kernel %lldx%lld, stride %lld,%lld, padding %lld,%lld: output %lld is %a at %lld, not %a at %lld",
                        t_isa_name[isa], (long long)p.h, (long long)p.w, (long long)p.kh, (long long)p.kw, (long long)p.sh,
                        (long long)p.sw, (long long)p.ph, (long long)p.pw, (long long)k, y[k], (long long)ix[k], y0[k], (long long)i0[k]);
          break;
        }
    }
  }
  T_CHECK_MSG(bad == 0, "%ld planes differ", bad);
  T_CHECK(runs[0] > 1000);
  for (isa = 0; isa <= t_isa_max(); isa++) printf("  %s: %ld planes\n", t_isa_name[isa], runs[isa]);
}

/* dt_sum on the pool (when it has workers) against the same blocks one after another */
static void test_threads_sum(void) {
  const int64_t n = (int64_t)1 << 22;
  dt_tensor *x = dt_empty(dt_shape1(n), DT_F32, dt_cpu()), *s;
  float *p;
  dt__red_job j;
  double ref = 0;
  int64_t i, b;
  if (!x) T_SKIP("no memory");
  p = (float *)dt_data_ptr(x);
  for (i = 0; i < n; i++) p[i] = (float)((double)(int64_t)t_next() * ldexp(1.0, -63));
  memset(&j, 0, sizeof j);
  j.op = DT__R_SUM; j.r.t = DT_F32; j.r.len = n; j.r.block = dt__red_block(n); j.sum16 = dt__ew_kernels()->sum16[0];
  for (b = 0; b < n; b += j.r.block) ref += dt__red_block_sum(&j, p + b, n - b < j.r.block ? n - b : j.r.block, NULL);
  s = dt_sum(x);
  T_CHECK(s != NULL);
  if (s) T_CHECK_MSG(dt_item(s) == (double)(float)ref, "%.9g vs %.9g", dt_item(s), (double)(float)ref);
  dt_release(s);
  dt_release(x);
}

static DT__UNUSED double t_sum_of(const dt_tensor *t) {
  dt_tensor *s = dt_sum(t);
  double v = dt_item(s);
  dt_release(s);
  return v;
}

static void test_small_work_stays_serial(void) {
#if DT__POOL
  dt_tensor *a = dt_full(dt_shape2(10, 10), 1.5, dt_cpu()), *b = dt_full(dt_shape2(10, 10), 2.0, dt_cpu());
  dt_tensor *f = dt_zeros(dt_shape1(16), dt_cpu()), *y, *big, *big2;
  int64_t before = DT__ATOMIC_LOAD(&dt__pool.dispatches);
  int k;
  T_CHECK(a && b && f);
  for (k = 0; k < 100; k++) {
    y = dt_add(a, b);
    T_CHECK(y && t_sum_of(y) == 350.0); /* the sum of 100 elements: small too */
    dt_release(y);
    T_CHECK(dt_fill_(f, 2.0) == DT_OK);
  }
  T_CHECK_MSG(DT__ATOMIC_LOAD(&dt__pool.dispatches) == before, "%lld jobs went to the pool",
              (long long)(DT__ATOMIC_LOAD(&dt__pool.dispatches) - before));
  big = dt_full(dt_shape1((int64_t)1 << 20), 1.0, dt_cpu());
  big2 = big ? dt_add(big, big) : NULL;
  T_CHECK(big2 && t_sum_of(big2) == 2097152.0);
  if (DT__ATOMIC_LOAD(&dt__pool.nworkers) > 0)
    T_CHECK_MSG(DT__ATOMIC_LOAD(&dt__pool.dispatches) > before, "a 2^20 add did not use the pool's %d workers",
                DT__ATOMIC_LOAD(&dt__pool.nworkers));
  dt_release(big); dt_release(big2); dt_release(a); dt_release(b); dt_release(f);
#else
  T_SKIP("no thread pool in this build (no -fopenmp)");
#endif
}

int main(void) {
  printf("  elementwise kernels: %s variant\n", t_isa_name[t_isa_max()]);
  T_RUN(test_exp_log_ulps);
  T_RUN(test_exp_log_same_bits);
  T_RUN(test_sigmoid);
  T_RUN(test_activation_grads);
  T_RUN(test_arith_bits);
  T_RUN(test_fill_cast_bits);
  T_RUN(test_half_cast_variants);
  T_RUN(test_sum_variants);
  T_RUN(test_pool_vplane_variants);
  T_RUN(test_threads_sum);
  T_RUN(test_small_work_stays_serial);
  return t_finish();
}
