/* GPU self-check of devtensor_cuda.cu (scratch; for the first session with a GPU).
   Differential: every backend entry is run on the CUDA backend and on the CPU
   backend (the reference) with the same inputs, then compared. Plus copies,
   the allocator under 8 threads, out-of-memory recovery and a few timings.

     make build/cuda/gpu_check             (nvcc, the library's GENCODE: sm_80 + sm_90 + PTX)
     ./build/cuda/gpu_check                 (prints FAIL lines, then "N checks, N failed")
   make test-emu builds and runs it on the CPU emulator (tests/emu) with --no-timings. */
#define DEVTENSOR_IMPLEMENTATION
#ifndef DEVTENSOR_CUDA
#define DEVTENSOR_CUDA
#endif
#include "devtensor.h"

#include <cuda_runtime.h>
#ifndef DTEMU
#include <cublas_v2.h>
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const dt__backend *G, *C;
static int thread_iters = 300; /* fewer on the emulator (--no-timings) */
static int checks, fails; /* counted atomically: the thread check runs 8 at once */
#define CHECK(c, ...) do { __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED); if (!(c)) { __atomic_add_fetch(&fails, 1, __ATOMIC_RELAXED); printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); fflush(stdout); } } while (0)
#define OK(call) do { dt_status s_ = (call); CHECK(s_ == DT_OK, "%s -> %d: %s", #call, (int)s_, G->last_error()); } while (0)

static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }

static uint64_t rng = 88172645463325252ull;
static double urand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (double)(rng >> 11) / 9007199254740992.0; }

/* host buffer of n elements of t with values in [-3, 3] (ints: [-1000, 1000]) */
static void *hrand(dt_dtype t, int64_t n) {
  void *p = malloc((size_t)(n ? n : 1) * dt_dtype_size(t));
  for (int64_t i = 0; i < n; i++) {
    double v = urand() * 6 - 3;
    switch (t) {
      case DT_F32: ((float *)p)[i] = (float)v; break;
      case DT_F64: ((double *)p)[i] = v; break;
      case DT_I32: ((int32_t *)p)[i] = (int32_t)(v * 333); break;
      case DT_I64: ((int64_t *)p)[i] = (int64_t)(v * 333) * (i % 3 ? 1 : 100000000000ll); break;
      case DT_U8: ((uint8_t *)p)[i] = (uint8_t)(int)(v * 40 + 128); break;
      case DT_BOOL: ((uint8_t *)p)[i] = v > 0; break;
      default: break; /* float16, bfloat16: tests/test_half.c */
    }
  }
  return p;
}
static void *up(const void *h, size_t n) {
  void *d = NULL;
  OK(G->alloc(0, n, &d));
  if (n) OK(G->copy(0, d, -1, h, n));
  return d;
}
static void *down(const void *d, size_t n) {
  void *h = malloc(n ? n : 1);
  if (n) OK(G->copy(-1, h, 0, d, n));
  return h;
}
static double val(dt_dtype t, const void *p, int64_t i) {
  switch (t) {
    case DT_F32: return ((const float *)p)[i];
    case DT_F64: return ((const double *)p)[i];
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    case DT_U8: case DT_BOOL: return ((const uint8_t *)p)[i];
    default: break; /* float16, bfloat16: tests/test_half.c */
  }
  return 0;
}
/* gpu vs ref: ints exact, floats |g - r| <= atol + rtol |r|, NaN == NaN */
static int same(dt_dtype t, const void *g, const void *r, int64_t n, double rtol, double atol, const char *what) {
  for (int64_t i = 0; i < n; i++) {
    if (t == DT_I32 || t == DT_I64) {
      size_t es = dt_dtype_size(t);
      if (memcmp((const char *)g + i * es, (const char *)r + i * es, es) != 0) {
        CHECK(0, "%s: element %lld: gpu %.17g, cpu %.17g", what, (long long)i, val(t, g, i), val(t, r, i));
        return 0;
      }
      continue;
    }
    double a = val(t, g, i), b = val(t, r, i);
    if ((a != a && b != b) || a == b) continue;
    if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
      CHECK(0, "%s: element %lld of %lld: gpu %.9g, cpu %.9g", what, (long long)i, (long long)n, a, b);
      return 0;
    }
  }
  checks++;
  return 1;
}

static void check_fill(void) {
  double vals[] = {0, 1.5, -2.7, NAN, INFINITY, 1e20, -1e20, 3e9, -3e9, 2147483647.5};
  int64_t ns[] = {1, 3, 4, 5, 17, 1000003};
  for (int t = 0; t <= DT_BOOL; t++)
    for (size_t vi = 0; vi < sizeof vals / sizeof *vals; vi++)
      for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
        int64_t n = ns[ni];
        size_t nb = (size_t)n * dt_dtype_size((dt_dtype)t);
        void *d, *r = malloc(nb), *h;
        OK(G->alloc(0, nb, &d));
        OK(G->fill(0, (dt_dtype)t, n, vals[vi], d));
        C->fill(0, (dt_dtype)t, n, vals[vi], r);
        h = down(d, nb);
        char what[64];
        snprintf(what, sizeof what, "fill %s %g n=%lld", dt_dtype_name((dt_dtype)t), vals[vi], (long long)n);
        same((dt_dtype)t, h, r, n, 0, 0, what);
        G->free(0, d, nb); free(r); free(h);
      }
}

static void check_unary(void) {
  int64_t ns[] = {1, 7, 1000, (1 << 20) + 3};
  for (int t = 0; t <= DT_I64; t++)
    for (int op = 0; op <= DT__U_CLAMP; op++) {
      if (t >= DT_I32 && op != DT__U_AFFINE && op != DT__U_NEG && op != DT__U_ABS) continue;
      for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
        int64_t n = ns[ni];
        size_t nb = (size_t)n * dt_dtype_size((dt_dtype)t);
        void *x = hrand((dt_dtype)t, n), *r = malloc(nb), *dx = up(x, nb), *dy, *h;
        double p0 = t >= DT_I32 ? 3 : 1.7, p1 = t >= DT_I32 ? -7 : 0.3;
        OK(G->alloc(0, nb, &dy));
        OK(G->unary(0, (dt__unary_op)op, (dt_dtype)t, n, dx, dy, p0, p1));
        C->unary(0, (dt__unary_op)op, (dt_dtype)t, n, x, r, p0, p1);
        h = down(dy, nb);
        char what[64];
        snprintf(what, sizeof what, "unary op %d %s n=%lld", op, dt_dtype_name((dt_dtype)t), (long long)n);
        /* sin, cos, erf, gelu, pow: the two maths libraries differ by ulps, so near a zero of the
           function (cos near pi/2) an absolute tolerance too */
        same((dt_dtype)t, h, r, n, t == DT_F32 ? 1e-6 : 1e-14, op >= DT__U_SIN ? (t == DT_F32 ? 1e-6 : 1e-14) : 0, what);
        G->free(0, dx, nb); G->free(0, dy, nb); free(x); free(r); free(h);
      }
    }
}

static void run_binary(dt__binary_op op, dt_dtype t, const dt_shape *sa, const dt_shape *sb) {
  dt_shape so;
  dt__bcast g;
  int64_t na = 1, nb = 1;
  if (dt__broadcast("check", sa, sb, &so, &g) != DT_OK) { CHECK(0, "broadcast refused"); return; }
  for (int i = 0; i < sa->ndim; i++) na *= sa->dims[i];
  for (int i = 0; i < sb->ndim; i++) nb *= sb->dims[i];
  size_t es = dt_dtype_size(t);
  void *a = hrand(t, na), *b = hrand(t, nb), *r = malloc((size_t)g.numel * es);
  void *da = up(a, (size_t)na * es), *db = up(b, (size_t)nb * es), *dy, *h;
  OK(G->alloc(0, (size_t)g.numel * es, &dy));
  OK(G->binary(0, op, t, &g, da, db, dy));
  C->binary(0, op, t, &g, a, b, r);
  h = down(dy, (size_t)g.numel * es);
  char what[96];
  snprintf(what, sizeof what, "binary op %d %s ndim=%d numel=%lld contiguous=%d", (int)op, dt_dtype_name(t), g.ndim,
           (long long)g.numel, g.contiguous);
  same(t, h, r, g.numel, 0, 0, what); /* one rounding each: exact */
  G->free(0, da, 0); G->free(0, db, 0); G->free(0, dy, 0);
  free(a); free(b); free(r); free(h);
}

static void check_binary(void) {
  dt_shape pairs[][2] = {
    {dt_shape1(1000003), dt_shape1(1000003)}, {dt_shape1(5), dt_shape1(5)},
    {dt_shape2(300, 257), dt_shape1(257)}, {dt_shape2(300, 257), dt_shape2(300, 1)},
    {dt_shape3(7, 1, 33), dt_shape3(1, 9, 33)}, {dt_shape4(2, 3, 1, 5), dt_shape2(4, 1)},
    {dt_shape0(), dt_shape2(31, 3)}, {dt_shape2(31, 3), dt_shape0()},
  };
  for (int t = 0; t < 4; t++)
    for (int op = 0; op <= DT__B_TANH_GRAD; op++) {
      if (t >= DT_I32 && (op == DT__B_DIV || op == DT__B_RELU_GRAD || op > DT__B_COPY_A)) continue; /* the last two: float only */
      for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) run_binary((dt__binary_op)op, (dt_dtype)t, &pairs[i][0], &pairs[i][1]);
    }
  /* the transpose geometry of dt_transpose: y (n, m) from a (m, n) */
  for (int t = 0; t <= DT_BOOL; t++) {
    int64_t m = 1025, n = 333;
    size_t es = dt_dtype_size((dt_dtype)t);
    dt__bcast g;
    memset(&g, 0, sizeof g);
    g.ndim = 2; g.numel = m * n; g.dims[0] = n; g.dims[1] = m; g.astride[0] = 1; g.astride[1] = n;
    void *a = hrand((dt_dtype)t, m * n), *r = malloc((size_t)(m * n) * es), *da = up(a, (size_t)(m * n) * es), *dy, *h;
    OK(G->alloc(0, (size_t)(m * n) * es, &dy));
    OK(G->binary(0, DT__B_COPY_A, (dt_dtype)t, &g, da, da, dy));
    C->binary(0, DT__B_COPY_A, (dt_dtype)t, &g, a, a, r);
    h = down(dy, (size_t)(m * n) * es);
    same((dt_dtype)t, h, r, m * n, 0, 0, "transpose");
    G->free(0, da, 0); G->free(0, dy, 0); free(a); free(r); free(h);
  }
}

static void check_cast(void) {
  double specials[] = {1.9, -1.9, NAN, INFINITY, -INFINITY, -3e9, 3e9, 1e19, -1e19, 0.5, -0.0, 16777217, 2147483647.0, -2147483648.0};
  int64_t n = 1000 + (int64_t)(sizeof specials / sizeof *specials);
  for (int f = 0; f <= DT_BOOL; f++)
    for (int t = 0; t <= DT_BOOL; t++) {
      size_t fs = dt_dtype_size((dt_dtype)f), ts = dt_dtype_size((dt_dtype)t);
      void *x = hrand((dt_dtype)f, n), *r = malloc((size_t)n * ts), *dx, *dy, *h;
      if (f <= DT_F64)
        for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) {
          if (f == DT_F32) ((float *)x)[i] = (float)specials[i]; else ((double *)x)[i] = specials[i];
        }
      if (f == DT_I64) ((int64_t *)x)[0] = ((int64_t)1 << 33) + 5, ((int64_t *)x)[1] = INT64_MIN, ((int64_t *)x)[2] = INT64_MAX;
      dx = up(x, (size_t)n * fs);
      OK(G->alloc(0, (size_t)n * ts, &dy));
      OK(G->cast(0, (dt_dtype)f, (dt_dtype)t, n, dx, dy));
      C->cast(0, (dt_dtype)f, (dt_dtype)t, n, x, r);
      h = down(dy, (size_t)n * ts);
      char what[64];
      snprintf(what, sizeof what, "cast %s -> %s", dt_dtype_name((dt_dtype)f), dt_dtype_name((dt_dtype)t));
      same((dt_dtype)t, h, r, n, 0, 0, what); /* conversions are exact/correctly rounded on both */
      G->free(0, dx, 0); G->free(0, dy, 0); free(x); free(r); free(h);
    }
}

/* comparisons, every dtype, the broadcast geometries of check_binary */
static void check_compare(void) {
  dt_shape pairs[][2] = {
    {dt_shape1(1000003), dt_shape1(1000003)}, {dt_shape2(300, 257), dt_shape1(257)}, {dt_shape3(7, 1, 33), dt_shape3(1, 9, 33)},
    {dt_shape0(), dt_shape2(31, 3)},
  };
  for (int t = 0; t <= DT_BOOL; t++)
    for (int op = 0; op <= DT__C_LE; op++)
      for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        dt_shape so;
        dt__bcast g;
        int64_t na = 1, nb = 1;
        if (dt__broadcast("check", &pairs[i][0], &pairs[i][1], &so, &g) != DT_OK) { CHECK(0, "broadcast refused"); return; }
        for (int k = 0; k < pairs[i][0].ndim; k++) na *= pairs[i][0].dims[k];
        for (int k = 0; k < pairs[i][1].ndim; k++) nb *= pairs[i][1].dims[k];
        size_t es = dt_dtype_size((dt_dtype)t);
        void *a = hrand((dt_dtype)t, na), *b = hrand((dt_dtype)t, nb), *r = malloc((size_t)g.numel);
        if (t == DT_F32 && na > 2) { ((float *)a)[0] = NAN; ((float *)a)[1] = ((float *)b)[1 % nb]; }  /* NaN; equal values */
        if (t == DT_F64 && na > 2) { ((double *)a)[0] = NAN; ((double *)a)[1] = ((double *)b)[1 % nb]; }
        void *da = up(a, (size_t)na * es), *db = up(b, (size_t)nb * es), *dy, *h;
        OK(G->alloc(0, (size_t)g.numel, &dy));
        OK(G->compare(0, (dt__compare_op)op, (dt_dtype)t, &g, da, db, dy));
        C->compare(0, (dt__compare_op)op, (dt_dtype)t, &g, a, b, r);
        h = down(dy, (size_t)g.numel);
        char what[96];
        snprintf(what, sizeof what, "compare op %d %s ndim=%d numel=%lld", op, dt_dtype_name((dt_dtype)t), g.ndim, (long long)g.numel);
        same(DT_BOOL, h, r, g.numel, 0, 0, what);
        G->free(0, da, 0); G->free(0, db, 0); G->free(0, dy, 0);
        free(a); free(b); free(r); free(h);
      }
}

/* The largest cases of check_reduce: on a GPU, rows past 2^24 (F32 sums exact only in double)
   and past kMaxChunks blocks of 4096, and 5000 short rows (a block each); on the emulator (4
   multiprocessors: 32 chunks at most, so no clamp to reach; a block's threads are coroutines)
   smaller: the 5000 rows alone took two of its four minutes there. */
#ifdef DTEMU
#define GC_LONG_ROW ((1 << 20) + 3)
#define GC_LONG_ROW2 300001
#define GC_MANY_ROWS 500
#else
#define GC_LONG_ROW ((1 << 24) + 3)
#define GC_LONG_ROW2 3000001
#define GC_MANY_ROWS 5000
#endif

static void check_reduce(void) {
  /* (outer, len, inner): every path of reduce_t */
  int64_t shapes[][3] = {
    {1, 1, 1}, {1, 0, 1}, {3, 0, 4}, {1, 33, 1}, {1, 5, 1}, {1000000, 5, 1}, {GC_MANY_ROWS, 100, 1}, {7, 3000, 1},
    {1, GC_LONG_ROW, 1}, {3, 100003, 1}, {1, 1 << 20, 3}, {100, 7, 1000}, {6, 50, 7}, {2, 70001, 2}, {1, GC_LONG_ROW2, 1},
    /* narrow columns (k_reduce_cols_narrow): inner 2, 4, 8, 16, 32 add up their warps by shuffles,
       3, 5, 33 and 64 through shared memory */
    {2, 5000, 64}, {3, 3000, 33}, {1, 4097, 2}, {2, 3000, 4}, {4, 1500, 8}, {1, 9000, 16}, {1, 2000, 32}, {2, 2500, 5},
  };
  for (int t = 0; t < 2; t++)
    for (int op = 0; op <= DT__R_NORM; op++)
      for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int64_t o = shapes[i][0], l = shapes[i][1], in = shapes[i][2], nx = o * l * in, ny = o * in;
        size_t es = dt_dtype_size((dt_dtype)t);
        void *x = hrand((dt_dtype)t, nx), *r = malloc((size_t)ny * es), *dx = up(x, (size_t)nx * es), *dy, *h;
        OK(G->alloc(0, (size_t)ny * es, &dy));
        OK(G->reduce(0, (dt__reduce_op)op, (dt_dtype)t, o, l, in, dx, dy));
        C->reduce(0, (dt__reduce_op)op, (dt_dtype)t, o, l, in, x, r);
        h = down(dy, (size_t)ny * es);
        char what[96];
        snprintf(what, sizeof what, "reduce op %d %s (%lld, %lld, %lld)", op, dt_dtype_name((dt_dtype)t), (long long)o,
                 (long long)l, (long long)in);
        /* both sum in double; only the order differs (sums of +-3 values: absolute slack) */
        same((dt_dtype)t, h, r, ny, t == DT_F32 ? 2e-7 : 1e-12, 1e-9 * (double)l, what);
        G->free(0, dx, 0); G->free(0, dy, 0); free(x); free(r); free(h);
      }
}

/* classification: arg_reduce, softmax, cross_entropy against the CPU; rows of a warp and of a
   block, columns, and (on a GPU: big) more rows than the grid holds */
static void check_classification(int big) {
  int64_t shapes[][3] = {{1, 1, 1}, {7, 1, 1}, {1, 5000, 1}, {300, 10, 1}, {3, 1500, 1}, {4, 33, 5}, {2, 1, 7},
                         {600000, 10, 1}, {1, 3000001, 1}, {2, 2000, 300}};
  size_t nshapes = sizeof shapes / sizeof *shapes - (big ? 0 : 3);
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < nshapes; i++) {
      int64_t o = shapes[i][0], l = shapes[i][1], in = shapes[i][2], nx = o * l * in, ny = o * in;
      size_t es = dt_dtype_size((dt_dtype)t);
      void *x = hrand((dt_dtype)t, nx), *dx, *r = malloc((size_t)nx * es), *dy, *h;
      int64_t *ri = (int64_t *)malloc((size_t)ny * 8), *di;
      char what[96];
      if (nx > 10) memcpy((char *)x + 3 * es, (char *)x + 7 * es, es); /* a tie */
      dx = up(x, (size_t)nx * es);
      for (int mn = 0; mn < 2; mn++) {
        OK(G->alloc(0, (size_t)ny * es, &dy)); OK(G->alloc(0, (size_t)ny * 8, (void **)&di));
        OK(G->arg_reduce(0, mn, (dt_dtype)t, o, l, in, dx, dy, di));
        C->arg_reduce(0, mn, (dt_dtype)t, o, l, in, x, r, ri);
        snprintf(what, sizeof what, "arg_reduce min=%d %s (%lld, %lld, %lld)", mn, dt_dtype_name((dt_dtype)t), (long long)o, (long long)l, (long long)in);
        h = down(dy, (size_t)ny * es); same((dt_dtype)t, h, r, ny, 0, 0, what); free(h);
        h = down(di, (size_t)ny * 8); same(DT_I64, h, ri, ny, 0, 0, what); free(h);
        G->free(0, dy, 0); G->free(0, di, 0);
      }
      for (int lg = 0; lg < 2; lg++) {
        OK(G->alloc(0, (size_t)nx * es, &dy));
        OK(G->softmax(0, lg, (dt_dtype)t, o, l, in, dx, dy));
        C->softmax(0, lg, (dt_dtype)t, o, l, in, x, r);
        snprintf(what, sizeof what, "softmax log=%d %s (%lld, %lld, %lld)", lg, dt_dtype_name((dt_dtype)t), (long long)o, (long long)l, (long long)in);
        h = down(dy, (size_t)nx * es); same((dt_dtype)t, h, r, nx, t == DT_F32 ? 1e-4 : 1e-11, 1e-7, what); free(h);
        G->free(0, dy, 0);
      }
      if (in == 1) { /* cross-entropy of (o, l) with labels 7k % l */
        int64_t *lab = (int64_t *)malloc((size_t)o * 8);
        void *dl;
        for (int64_t k = 0; k < o; k++) lab[k] = (k * 7) % l;
        dl = up(lab, (size_t)o * 8);
        for (int gr = 0; gr < 2; gr++) {
          int64_t ny2 = gr ? nx : 1;
          OK(G->alloc(0, (size_t)ny2 * es, &dy));
          OK(G->cross_entropy(0, gr, (dt_dtype)t, o, l, dx, (const int64_t *)dl, dy));
          C->cross_entropy(0, gr, (dt_dtype)t, o, l, x, lab, r);
          snprintf(what, sizeof what, "cross_entropy grad=%d %s (%lld, %lld)", gr, dt_dtype_name((dt_dtype)t), (long long)o, (long long)l);
          h = down(dy, (size_t)ny2 * es);
          same((dt_dtype)t, h, r, ny2, t == DT_F32 ? 1e-4 : 1e-11, 1e-7, what); free(h);
          G->free(0, dy, 0);
        }
        G->free(0, dl, 0); free(lab);
      }
      G->free(0, dx, 0); free(x); free(r); free(ri);
    }
  OK(G->synchronize(0)); /* every label was good: no report */
}

static void check_gemm(void) {
  int64_t sizes[][3] = {{1, 1, 1}, {17, 33, 65}, {128, 64, 1}, {5, 7, 0}, {64, 1, 300}, {1, 129, 31}};
  for (int t = 0; t < 2; t++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (int bi = 0; bi < 2; bi++)
          for (int shared = 0; shared < 3; shared++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
              for (int bz = 0; bz < 2; bz++) {
                int64_t batch = bi ? 3 : 1, m = sizes[si][0], n = sizes[si][1], k = sizes[si][2];
                int64_t sa = (shared == 1 && batch > 1) ? 0 : m * k, sb = (shared == 2 && batch > 1) ? 0 : k * n, sc = m * n;
                double alpha = 1.5, beta = bz ? 0.5 : 0.0;
                size_t es = dt_dtype_size((dt_dtype)t);
                int64_t na = sa ? batch * m * k : m * k, nb = sb ? batch * k * n : k * n, nc = batch * m * n;
                void *a = hrand((dt_dtype)t, na), *b = hrand((dt_dtype)t, nb), *c = hrand((dt_dtype)t, nc);
                void *da = up(a, (size_t)na * es), *db = up(b, (size_t)nb * es), *dc = up(c, (size_t)nc * es), *h;
                OK(G->gemm(0, (dt_dtype)t, ta, tb, batch, m, n, k, alpha, da, sa, db, sb, beta, dc, sc));
                C->gemm(0, (dt_dtype)t, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
                h = down(dc, (size_t)nc * es);
                char what[128];
                snprintf(what, sizeof what, "gemm %s ta=%d tb=%d batch=%lld (%lld,%lld,%lld) sa=%lld sb=%lld beta=%g",
                         dt_dtype_name((dt_dtype)t), ta, tb, (long long)batch, (long long)m, (long long)n, (long long)k,
                         (long long)sa, (long long)sb, beta);
                same((dt_dtype)t, h, c, nc, t == DT_F32 ? 1e-4 : 1e-12, (t == DT_F32 ? 1e-5 : 1e-13) * (double)(k + 1) * 9, what);
                G->free(0, da, 0); G->free(0, db, 0); G->free(0, dc, 0);
                free(a); free(b); free(c); free(h);
              }
}

static void check_axpy_random(void) {
  for (int t = 0; t < 2; t++) {
    int64_t n = 1000003;
    size_t es = dt_dtype_size((dt_dtype)t);
    void *x = hrand((dt_dtype)t, n), *y = hrand((dt_dtype)t, n), *dx = up(x, (size_t)n * es), *dy = up(y, (size_t)n * es), *h;
    OK(G->axpy(0, (dt_dtype)t, n, -0.37, dx, dy));
    C->axpy(0, (dt_dtype)t, n, -0.37, x, y);
    h = down(dy, (size_t)n * es);
    same((dt_dtype)t, h, y, n, 0, 0, "axpy");
    G->free(0, dx, 0); G->free(0, dy, 0); free(x); free(y); free(h);
  }
  for (int normal = 0; normal < 2; normal++) {
    int64_t ns[] = {1, 2, 3, 4, 5, 1000003};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
      int64_t n = ns[i];
      float *r = (float *)malloc((size_t)n * 4), *h;
      void *d;
      OK(G->alloc(0, (size_t)n * 4, &d));
      OK(G->random(0, normal, 1234567ull, 42, NULL, n, (float *)d));
      C->random(0, normal, 1234567ull, 42, NULL, n, r);
      h = (float *)down(d, (size_t)n * 4);
      same(DT_F32, h, r, n, 0, 0, normal ? "randn" : "rand"); /* bit for bit, normals too */
      G->free(0, d, 0); free(r); free(h);
    }
  }
}

/* indexing: copy_strided (a permute, a slice along a middle dim, a cat into a wider
   y) and index_select (bad indices included: zeros, and reported once at the next synchronize)
   for elements of 1, 2, 4 and 8 bytes, byte for byte against the CPU backend */
static void check_indexing(void) {
  static const size_t ess[] = {1, 2, 4, 8};
  for (size_t e = 0; e < sizeof ess / sizeof *ess; e++) {
    size_t es = ess[e];
    int64_t nx = 40000, ny = 60000;
    unsigned char *x = (unsigned char *)malloc((size_t)nx * es), *y = (unsigned char *)malloc((size_t)ny * es), *h;
    for (int64_t i = 0; i < nx * (int64_t)es; i++) x[i] = (unsigned char)(urand() * 256);
    void *dx = up(x, (size_t)nx * es), *dy;
    /* x as (7, 13, 5, 3) permuted (2, 0, 3, 1); a slice [40:300) of dim 1 of (50, 517, 1) at offset 40 as
       (50, 260); x (50, 400) into columns 100..499 of y (50, 600) */
    dt__bcast gs[3];
    memset(gs, 0, sizeof gs);
    gs[0].ndim = 4; gs[0].numel = 7 * 13 * 5 * 3;
    gs[0].dims[0] = 5; gs[0].dims[1] = 7; gs[0].dims[2] = 3; gs[0].dims[3] = 13;
    gs[0].astride[0] = 3; gs[0].astride[1] = 13 * 5 * 3; gs[0].astride[2] = 1; gs[0].astride[3] = 5 * 3;
    gs[0].bstride[0] = 7 * 3 * 13; gs[0].bstride[1] = 3 * 13; gs[0].bstride[2] = 13; gs[0].bstride[3] = 1;
    gs[1].ndim = 2; gs[1].numel = 50 * 260;
    gs[1].dims[0] = 50; gs[1].dims[1] = 260; gs[1].astride[0] = 517; gs[1].astride[1] = 1; gs[1].bstride[0] = 260; gs[1].bstride[1] = 1;
    gs[2].ndim = 2; gs[2].numel = 50 * 400;
    gs[2].dims[0] = 50; gs[2].dims[1] = 400; gs[2].astride[0] = 400; gs[2].astride[1] = 1; gs[2].bstride[0] = 600; gs[2].bstride[1] = 1;
    for (int c = 0; c < 3; c++) {
      size_t xoff = c == 1 ? 40 * es : 0, yoff = c == 2 ? 100 * es : 0;
      memset(y, 0x5a, (size_t)ny * es);
      dy = up(y, (size_t)ny * es);
      OK(G->copy_strided(0, es, &gs[c], (char *)dx + xoff, (char *)dy + yoff));
      C->copy_strided(0, es, &gs[c], x + xoff, y + yoff);
      h = (unsigned char *)down(dy, (size_t)ny * es);
      CHECK(memcmp(h, y, (size_t)ny * es) == 0, "copy_strided case %d, %zu-byte elements", c, es);
      G->free(0, dy, 0); free(h);
    }
    /* index_select: x as (6, 100, 7) -> y (6, 50, 7); then a bad index: zeros, reported once */
    {
      int64_t idx[50];
      for (int j = 0; j < 50; j++) idx[j] = (int64_t)(urand() * 100);
      void *di = up(idx, sizeof idx);
      dy = up(y, (size_t)6 * 50 * 7 * es);
      OK(G->index_select(0, es, 6, 100, 7, (const int64_t *)di, 50, dx, dy));
      C->index_select(0, es, 6, 100, 7, idx, 50, x, y);
      OK(G->synchronize(0));
      h = (unsigned char *)down(dy, (size_t)6 * 50 * 7 * es);
      CHECK(memcmp(h, y, (size_t)6 * 50 * 7 * es) == 0, "index_select, %zu-byte elements", es);
      free(h);
      idx[3] = 100; idx[17] = -1; idx[49] = INT64_MIN;
      G->free(0, di, 0);
      di = up(idx, sizeof idx);
      OK(G->index_select(0, es, 6, 100, 7, (const int64_t *)di, 50, dx, dy));
      C->index_select(0, es, 6, 100, 7, idx, 50, x, y); /* the CPU backend writes zeros too */
      CHECK(G->synchronize(0) == DT_ERR_INVALID_ARGUMENT && strstr(G->last_error(), "size 100"), "index_select's bad index: %s",
            G->last_error());
      OK(G->synchronize(0));
      h = (unsigned char *)down(dy, (size_t)6 * 50 * 7 * es);
      CHECK(memcmp(h, y, (size_t)6 * 50 * 7 * es) == 0, "index_select with bad indices, %zu-byte elements", es);
      free(h);
      G->free(0, di, 0); G->free(0, dy, 0);
    }
    G->free(0, dx, 0); free(x); free(y);
  }
}

static void check_copies(void) {
  size_t sizes[] = {1, 13, 4096, ((size_t)8 << 20) - 1, (size_t)8 << 20, ((size_t)8 << 20) + 1, ((size_t)100 << 20) + 13};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i];
    unsigned char *h = (unsigned char *)malloc(n), *back;
    for (size_t j = 0; j < n; j++) h[j] = (unsigned char)(j * 131 + i);
    void *d = up(h, n), *d2;
    memset(h, 0, n > 64 ? 64 : n); /* the source may be reused right away */
    back = (unsigned char *)down(d, n);
    for (size_t j = 0; j < (n > 64 ? 64 : n); j++) h[j] = (unsigned char)(j * 131 + i);
    CHECK(memcmp(h, back, n) == 0, "host round trip of %zu bytes", n);
    OK(G->alloc(0, n, &d2));
    OK(G->copy(0, d2, 0, d, n));
    free(back);
    back = (unsigned char *)down(d2, n);
    CHECK(memcmp(h, back, n) == 0, "device to device copy of %zu bytes", n);
    /* page-locked host memory takes the direct path */
    unsigned char *pin;
    CHECK(cudaMallocHost((void **)&pin, n) == cudaSuccess, "cudaMallocHost");
    memcpy(pin, h, n);
    OK(G->copy(0, d2, -1, pin, n));
    memset(pin, 0, n);
    OK(G->copy(-1, pin, 0, d2, n));
    CHECK(memcmp(h, pin, n) == 0, "pinned round trip of %zu bytes", n);
    cudaFreeHost(pin);
    G->free(0, d, 0); G->free(0, d2, 0); free(h); free(back);
  }
  if (dt_num_gpus() >= 2) {
    size_t n = ((size_t)64 << 20) + 5;
    unsigned char *h = (unsigned char *)malloc(n), *back;
    for (size_t j = 0; j < n; j++) h[j] = (unsigned char)(j * 7);
    void *d0 = up(h, n), *d1;
    OK(G->alloc(1, n, &d1));
    OK(G->copy(1, d1, 0, d0, n));
    back = (unsigned char *)malloc(n);
    OK(G->copy(-1, back, 1, d1, n));
    CHECK(memcmp(h, back, n) == 0, "peer copy cuda:0 -> cuda:1");
    G->free(0, d0, 0); G->free(1, d1, 0); free(h); free(back);
  } else printf("(one GPU: peer copies not checked)\n");
}

/* 8 threads: tensors made, computed on, checked and freed at once */
static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  dt_device dev = dt_gpu(0);
  for (int it = 0; it < thread_iters; it++) {
    int64_t n = 1 + (int64_t)((it * 7919 + id * 104729) % 300000);
    dt_tensor *a = dt_full(dt_shape1(n), (double)id, dev), *b = dt_add_scalar(a, 1.0), *s = dt_sum(b);
    double v = s ? dt_item(s) : -1;
    if (v != (double)n * (id + 1)) { CHECK(0, "thread %d iteration %d: sum %g, expected %g (%s)", id, it, v, (double)n * (id + 1), dt_last_error()); }
    dt_release(a); dt_release(b); dt_release(s);
  }
  return NULL;
}

static void check_threads_and_memory(void) {
  dt_memory_stats before, after;
  pthread_t th[8];
  OK(G->memory_stats(0, &before));
  for (int i = 0; i < 8; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
  OK(G->memory_stats(0, &after));
  CHECK(after.allocated == before.allocated, "allocated %zu after the threads, %zu before", after.allocated, before.allocated);
  printf("after 8 threads: allocated %zu, reserved %zu, peak %zu\n", after.allocated, after.reserved, after.peak_allocated);

  /* out of memory: reported, recovered from */
  dt_device_info info;
  dt_device_get_info(dt_gpu(0), &info);
  int64_t big = (int64_t)(info.total_memory * 0.6) / 4;
  dt_tensor *t1 = dt_empty(dt_shape1(big), DT_F32, dt_gpu(0)), *t2;
  CHECK(t1 != NULL, "60%% of the GPU: %s", dt_last_error());
  t2 = dt_empty(dt_shape1(big), DT_F32, dt_gpu(0));
  CHECK(t2 == NULL && dt_last_status() == DT_ERR_OUT_OF_MEMORY, "a second 60%% must fail");
  printf("OOM message: %s\n", dt_last_error());
  dt_release(t1);
  t2 = dt_empty(dt_shape1(big), DT_F32, dt_gpu(0));
  CHECK(t2 != NULL, "after the release (from the cache): %s", dt_last_error());
  dt_release(t2);
  /* something else big: the cache must be flushed to fit it */
  t2 = dt_empty(dt_shape1(big + (big >> 3)), DT_F32, dt_gpu(0)); /* rounded above the cached block's 1/8 slack */
  CHECK(t2 != NULL, "after flushing the cache: %s", dt_last_error());
  dt_release(t2);
  OK(G->empty_cache(0));
  OK(G->memory_stats(0, &after));
  CHECK(after.reserved < (size_t)big * 4, "reserved %zu after empty_cache", after.reserved);
  t2 = dt_empty(dt_shape1((int64_t)1 << 58), DT_F32, dt_gpu(0));
  CHECK(t2 == NULL && strstr(dt_last_error(), "1.00 EiB"), "%s", dt_last_error());
  printf("absurd size: %s\n", dt_last_error());
  t1 = dt_ones(dt_shape1(8), dt_gpu(0));
  t2 = dt_sum(t1);
  CHECK(t2 && dt_item(t2) == 8, "works after OOM");
  dt_release(t1); dt_release(t2);

  /* the caller's current device is left as it was */
  int cur = -1;
  cudaSetDevice(dt_num_gpus() - 1);
  t1 = dt_ones(dt_shape1(8), dt_gpu(0));
  cudaGetDevice(&cur);
  CHECK(cur == dt_num_gpus() - 1, "current device changed to %d", cur);
  dt_release(t1);
  cudaSetDevice(0);
}

static void timings(void) {
  dt_device d = dt_gpu(0);
  double t0;
  dt_tensor *x = dt_ones(dt_shape1((int64_t)1 << 28), d), *s;
  dt_synchronize(d);
  t0 = now();
  s = dt_sum(x);
  dt_synchronize(d);
  t0 = now() - t0;
  printf("sum of 2^28 floats: %.3f ms (%.0f GB/s), value %.0f\n", t0 * 1e3, 1.073741824 / t0, dt_item(s));
  dt_release(s);
  float *h = (float *)malloc((size_t)4 << 28);
  t0 = now();
  dt_to_host(x, h, (size_t)4 << 28);
  printf("1 GiB device to pageable host: %.1f GB/s\n", 1.073741824 / (now() - t0));
  dt_tensor *y = dt_empty(dt_shape1((int64_t)1 << 28), DT_F32, d);
  dt_synchronize(d);
  t0 = now();
  dt__copy_bytes("t", d, dt_data_ptr(y), dt_cpu(), h, (size_t)4 << 28);
  dt_synchronize(d);
  printf("1 GiB pageable host to device: %.1f GB/s\n", 1.073741824 / (now() - t0));
  free(h);
  dt_release(x); dt_release(y);
  dt_tensor *a = dt_rand(dt_shape2(4096, 4096), d), *b = dt_rand(dt_shape2(4096, 4096), d), *c = dt_matmul(a, b);
  dt_release(c);
  dt_synchronize(d);
  t0 = now();
  for (int i = 0; i < 10; i++) { c = dt_matmul(a, b); dt_release(c); }
  dt_synchronize(d);
  printf("sgemm 4096^3: %.1f TFLOP/s (FP32, no TF32)\n", 10 * 2.0 * 4096.0 * 4096.0 * 4096.0 / (now() - t0) / 1e12);
  dt_release(a);
  a = dt_rand(dt_shape1(1 << 26), d);
  dt_synchronize(d);
  t0 = now();
  for (int i = 0; i < 10; i++) { c = dt_add(a, a); dt_release(c); }
  dt_synchronize(d);
  printf("add of 2^26 floats: %.0f GB/s\n", 10 * 3.0 * 4 * (1 << 26) / (now() - t0) / 1e9);
  dt_release(a); dt_release(b);
}

int main(int argc, char **argv) {
  int n = dt_num_gpus();
  int no_timings = argc > 1 && strcmp(argv[1], "--no-timings") == 0; /* the emulator (tests/emu) is too slow for them */
  if (no_timings) thread_iters = 20;
  if (n == 0) { printf("no GPU: %s\n0 checks, 0 failed\n", dt_last_error()); return 0; }
  G = dt__cuda_backend();
  C = dt__cpu_backend();
  dt_device_info info;
  dt_device_get_info(dt_gpu(0), &info);
  printf("%d GPU(s); cuda:0 is %s, sm_%d%d, %d SMs, %.1f GiB\n", n, info.name, info.compute_major, info.compute_minor,
         info.multiprocessors, info.total_memory / 1073741824.0);
#ifndef DTEMU
  { /* the libraries this program runs with (cuBLAS's version beside PyTorch's) */
    int maj = 0, mnr = 0, pat = 0, drv = 0, rt = 0;
    cublasGetProperty(MAJOR_VERSION, &maj); cublasGetProperty(MINOR_VERSION, &mnr); cublasGetProperty(PATCH_LEVEL, &pat);
    cudaDriverGetVersion(&drv); cudaRuntimeGetVersion(&rt);
    printf("cuBLAS %d.%d.%d (built for cudart %zu), cudart %d, driver API %d\n", maj, mnr, pat, cublasGetCudartVersion(), rt, drv);
  }
#endif
  check_fill(); printf("fill done\n"); fflush(stdout);
  check_unary(); printf("unary done\n"); fflush(stdout);
  check_binary(); printf("binary done\n"); fflush(stdout);
  check_cast(); printf("cast done\n"); fflush(stdout);
  check_compare(); printf("compare done\n"); fflush(stdout);
  check_reduce(); printf("reduce done\n"); fflush(stdout);
  check_classification(!no_timings); printf("classification done\n"); fflush(stdout);
  check_gemm(); printf("gemm done\n"); fflush(stdout);
  check_axpy_random(); printf("axpy/random done\n"); fflush(stdout);
  check_indexing(); printf("indexing done\n"); fflush(stdout);
  check_copies(); printf("copies done\n"); fflush(stdout);
  check_threads_and_memory(); printf("threads/memory done\n"); fflush(stdout);
  OK(G->synchronize(0));
  if (!no_timings) timings();
  printf("%d checks, %d failed\n", checks, fails);
  return fails ? 1 : 0;
}
