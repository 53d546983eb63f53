/* Row-major C = alpha * op(A) @ op(B) + beta * C for F32 and F64: dt__cpu_sgemm, dt__cpu_dgemm.

   The built-in kernel follows BLIS/GotoBLAS: op(A) is packed in (kc, mr) panels and op(B) in
   (kc, nr) panels into 64-byte aligned buffers, and a register-blocked micro-kernel computes an
   (mr, nr) tile of C from one panel of each, keeping the tile in registers for kc steps.
   The micro-kernels are written with GCC/Clang vector extensions (no intrinsics). On x86 with
   GCC >= 6 or Clang >= 5 they are also compiled for AVX2+FMA (6x16) and AVX-512 (12x32) through
   `target` attributes (each with edge kernels for a last panel of a few rows or of half the
   columns), and the best one the CPU has is picked at run time, so a plain -O2 build
   runs at full speed; DEVTENSOR_NO_CPU_DISPATCH turns that off (then the compiler flags decide:
   16-byte vectors for plain x86-64, wider with -mavx / -march=native). Other compilers get a
   plain C kernel. With -fopenmp the blocks of C are shared among the CPU backend's pool of
   threads (see "cpu threads": no OpenMP region is entered). F32 A B^T with few rows and columns
   and a long depth (a convolution's weight gradient) takes dot products of rows instead
   (dot.c: nothing packed, the depth in chunks on the threads). Tiny problems
   (m n k <= DT__GEMM_SMALL), thin ones (m or n <= 2), and any whose packing buffers cannot be
   allocated take a simple loop that needs no memory; nothing aborts or prints.

   With DEVTENSOR_CBLAS, cblas_sgemm/cblas_dgemm do the work (sizes above INT_MAX still take the
   built-in kernel). Their prototypes are declared here with int arguments and the standard CBLAS
   values (RowMajor 101, NoTrans 111, Trans 112), so no cblas.h is needed; if a cblas.h was
   included before this point (its guard CBLAS_H is defined), its declarations are used instead.
   An LP64 BLAS (32-bit int: -lopenblas, -lblas on Linux distributions, Accelerate) is assumed. */

/* Packing buffers: from the CPU backend's cache (a released buffer is the next call's: no system
   allocation per call once warm), or one DT_MALLOC per call where the user defined DT_MALLOC. */
#ifdef DT__HOST_DEFAULT_ALLOC
#define DT__GEMM_MALLOC(sz) dt__gemm_scratch_get(sz)
#define DT__GEMM_FREE(p, sz) dt__cpu_block_put((p), (sz), 0)
static void *dt__gemm_scratch_get(size_t sz) {
  size_t rounded;
  return dt__cpu_block_get(sz, 0, &rounded);
}
#else
#define DT__GEMM_MALLOC(sz) DT_MALLOC(sz)
#define DT__GEMM_FREE(p, sz) DT_FREE(p)
#endif

#if defined(__GNUC__) || defined(__clang__)
#ifndef DT__GEMM_VEC
#define DT__GEMM_VEC 1 /* GCC/Clang vector extensions (-DDT__GEMM_VEC=0: plain C, for testing) */
#endif
#define DT__GEMM_RESTRICT __restrict
#define DT__GEMM_MAYBE_UNUSED __attribute__((unused))
#else
#undef DT__GEMM_VEC
#define DT__GEMM_VEC 0
#define DT__GEMM_RESTRICT
#define DT__GEMM_MAYBE_UNUSED
#endif

/* ISO C/C++ modes make GCC stop fusing a*b+c into an FMA; the kernels want it. */
#if defined(__GNUC__) && !defined(__clang__)
#define DT__GEMM_FMA_ATTR __attribute__((optimize("fp-contract=fast")))
#else
#define DT__GEMM_FMA_ATTR
#endif

/* Run-time choice among AVX-512 / AVX2+FMA / baseline kernels (x86, GCC >= 6 or Clang >= 5). */
#if DT__GEMM_VEC && !defined(DEVTENSOR_NO_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__)) && \
    ((defined(__clang__) && __clang_major__ >= 5) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 6))
#define DT__GEMM_X86 1
#else
#define DT__GEMM_X86 0
#endif

/* Kernel families, in dt__gemm_plan_get's order of preference. */
enum { DT__GEMM_ISA_C = 0, DT__GEMM_ISA_AVX2 = 1, DT__GEMM_ISA_AVX512 = 2, DT__GEMM_ISA_COUNT = 3 };

/* c: (mr, nr) tile of C with row stride ldc; pa: (kc, MR) packed (lda unused); pb: kc rows of NR, ldb
   apart (NR: packed; or op(B)'s own rows, read in place, when they are contiguous and nr == NR).
   c = alpha * pa^T @ pb + beta * s on the first mr rows and nr columns, where s is the tile at cs with
   row stride lds: c itself (cs == c, lds == ldc), or a linear layer's bias row (lds 0), which then
   takes no pass of its own over C; beta == 0: cs is not read.
   The plan's kernd is the same kernel reading A in place: MR rows of kc contiguous elements, lda
   apart (mr == MR: it reads all MR rows); the same operations in the same order, so the same bits. */
typedef void (*dt__gemm_kern_fn)(int64_t kc, const void *pa, int64_t lda, const void *pb, int64_t ldb, void *c,
                                 int64_t ldc, const void *cs, int64_t lds, int mr, int nr, double alpha, double beta);
/* src: element (x, p) at src[x * rs + p * cs], x < rows, p < kc.
   dst: ceil(rows / r) panels of (kc, r), zero padded: panel q holds dst[(q * kc + p) * r + i] = src(q * r + i, p). */
typedef void (*dt__gemm_pack_fn)(int64_t rows, int64_t kc, const void *src, int64_t rs, int64_t cs, int r, void *dst);

/* the skinny kernel (no packing of A): see DT__GEMM_DEFINE_ROWS; NULL in plain C builds */
typedef void (*dt__gemm_rows_fn)(int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t rsa, int64_t csa,
                                 const void *b, int64_t rsb, const void *tail, int64_t ldt, double beta, void *c,
                                 int64_t ldc);

typedef struct dt__gemm_plan {
  dt__gemm_kern_fn kern;
  dt__gemm_kern_fn kernd; /* the kernel reading A in place, or NULL (plain C builds) */
  /* or NULL: kern for an edge of a packed panel, with the same operations on fewer rows or columns
     (so the same bits): the first 4 or 8 of its mr rows; its first nr / 2 columns (one vector) */
  dt__gemm_kern_fn kern4, kern8, kernh, kernhd; /* kernhd: kernh reading A in place, as kernd */
  dt__gemm_pack_fn pack;
  dt__gemm_rows_fn rows;
  int rw;                /* the rows kernel's column block (2 vectors) */
  size_t es;             /* element size */
  int mr, nr;            /* micro-tile */
  int64_t kc, nc;        /* depth of a packed panel (mr * kc fits L1), columns per task (kc * nc fits L2) */
} dt__gemm_plan;
