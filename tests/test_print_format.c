/* tests/test_print_format.c — dt__format_tensor against the text PyTorch prints.

   The cases come from tests/print_cases.inc (tests/gen_print_cases.py).
   Prints "PASS name" / "FAIL name" / "SKIP name: why" and a final
   "N passed, N failed, N skipped" through tests/harness.h's counters. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <locale.h>

#include "print_cases.inc"

static void t_result(const char *name, int failed) {
  if (failed) t_failed++; else t_passed++;
  printf("%s %s\n", failed ? "FAIL" : "PASS", name);
  fflush(stdout);
}

/* Host values of a case, in its dtype. */
static union {
  float    f[DT_PRINT_CASES_MAX_NUMEL];
  double   d[DT_PRINT_CASES_MAX_NUMEL];
  int32_t  i[DT_PRINT_CASES_MAX_NUMEL];
  int64_t  l[DT_PRINT_CASES_MAX_NUMEL];
} host;

static char expected[DT_PRINT_CASES_MAX_LEN + 1];
static char got[DT_PRINT_CASES_MAX_LEN + 64];

static void set_value(dt_dtype t, int64_t i, uint64_t bits) {
  uint32_t b32 = (uint32_t)bits;
  switch (t) {
  case DT_F32: memcpy(&host.f[i], &b32, 4); break;
  case DT_F64: memcpy(&host.d[i], &bits, 8); break;
  case DT_I32: host.i[i] = (int32_t)(int64_t)bits; break;
  default:     host.l[i] = (int64_t)bits; break;
  }
}

static void fill_case(const dt_print_case *c, dt_shape *s) {
  int64_t i, numel = 1;
  int d;
  s->ndim = c->ndim;
  for (d = 0; d < DT_MAX_DIMS; d++) s->dims[d] = d < c->ndim ? c->dims[d] : 0;
  for (d = 0; d < c->ndim; d++) numel *= c->dims[d];
  for (i = 0; i < numel; i++) {
    if (c->bits) { set_value(c->dtype, i, c->bits[i]); continue; }
    {
      int64_t k = (i * c->mul + c->add) % c->mod;
      if (c->dtype == DT_F32 || c->dtype == DT_F64) {
        volatile double p = (double)k * c->scale;   /* no fused multiply-add */
        double v = p + c->offset;
        if (c->dtype == DT_F32) host.f[i] = (float)v; else host.d[i] = v;
      } else {
        int64_t v = k * c->iscale + c->ioffset;
        if (c->dtype == DT_I32) host.i[i] = (int32_t)v; else host.l[i] = v;
      }
    }
  }
  for (d = 0; d < c->npatch; d++) set_value(c->dtype, c->patch_at[d], c->patch_bits[d]);
  expected[0] = '\0';
  for (d = 0; c->expected[d]; d++) strcat(expected, c->expected[d]);
}

/* The full text, then snprintf's contract: a length query, and truncation
   to a NUL-terminated prefix that leaves the rest of the buffer alone. */
static int check_case(const dt_print_case *c, int verbose) {
  dt_shape s;
  int len, r, failed = 0, j;
  size_t ns[6];
  fill_case(c, &s);
  len = (int)strlen(expected);

  memset(got, 'X', sizeof got);
  r = dt__format_tensor(got, sizeof got, &host, c->dtype, &s, c->device);
  if (r != len || strcmp(got, expected) != 0) {
    if (verbose) printf("  returned %d, expected %d\n  got:\n%s\n  expected:\n%s\n", r, len, got, expected);
    return 1;
  }
  r = dt__format_tensor(NULL, 0, &host, c->dtype, &s, c->device);
  if (r != len) { if (verbose) printf("  length query returned %d, expected %d\n", r, len); failed = 1; }

  ns[0] = 1; ns[1] = 2; ns[2] = (size_t)len / 2 + 1; ns[3] = (size_t)len; ns[4] = (size_t)len + 1; ns[5] = 0;
  for (j = 0; j < 6; j++) {
    size_t n = ns[j], keep = n ? (n - 1 < (size_t)len ? n - 1 : (size_t)len) : 0, q;
    memset(got, 'X', sizeof got);
    r = dt__format_tensor(got, n, &host, c->dtype, &s, c->device);
    if (r != len) failed = 1;
    if (n && (memcmp(got, expected, keep) != 0 || got[keep] != '\0')) failed = 1;
    for (q = n; q < n + 8; q++) if (got[q] != 'X') failed = 1;
    if (failed) { if (verbose) printf("  truncation to n=%d broke the contract (returned %d)\n", (int)n, r); break; }
  }
  return failed;
}

static void test_cases(void) {
  int i;
  for (i = 0; i < DT_PRINT_NCASES; i++) t_result(dt_print_cases[i].name, check_case(&dt_print_cases[i], 1));
}

/* The decimal point stays '.' under a locale whose point is ','. */
static void test_locale(void) {
  const char *names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", NULL };
  int i, failed = 0;
  for (i = 0; names[i]; i++) if (setlocale(LC_NUMERIC, names[i])) break;
  if (!names[i]) { t_skipped++; printf("SKIP print_locale: no de_DE/fr_FR locale installed\n"); return; }
  for (i = 0; i < DT_PRINT_NCASES; i++)
    if (check_case(&dt_print_cases[i], 0)) { printf("  %s differs under %s\n", dt_print_cases[i].name, setlocale(LC_NUMERIC, NULL)); failed = 1; }
  setlocale(LC_NUMERIC, "C");
  t_result("print_locale", failed);
}

static void test_bad_arguments(void) {
  dt_shape s;
  float v = 1.0f;
  char b[16];
  int failed = 0;
  memset(&s, 0, sizeof s);
  s.ndim = 1; s.dims[0] = 1;
  if (dt__format_tensor(b, sizeof b, &v, DT_F32, NULL, NULL) != -1 || b[0]) failed = 1;
  if (dt__format_tensor(b, sizeof b, NULL, DT_F32, &s, NULL) != -1 || b[0]) failed = 1;  /* no values */
  if (dt__format_tensor(NULL, 4, &v, DT_F32, &s, NULL) != -1) failed = 1;
  s.ndim = DT_MAX_DIMS + 1;
  if (dt__format_tensor(b, sizeof b, &v, DT_F32, &s, NULL) != -1 || b[0]) failed = 1;
  s.ndim = 1; s.dims[0] = -1;
  if (dt__format_tensor(b, sizeof b, &v, DT_F32, &s, NULL) != -1) failed = 1;
  s.dims[0] = 0;                                   /* empty: values not needed */
  if (dt__format_tensor(b, sizeof b, NULL, DT_F32, &s, NULL) != 10 || strcmp(b, "tensor([])") != 0) failed = 1;
  s.dims[0] = 1;                                   /* "cpu" is the CPU */
  if (dt__format_tensor(b, sizeof b, &v, DT_F32, &s, "cpu") != 12 || strcmp(b, "tensor([1.])") != 0) failed = 1;
  t_result("print_bad_arguments", failed);
}

int main(void) {
  test_cases();
  test_bad_arguments();
  test_locale();
  return t_finish();
}
