/* Errors, devices, tensor creation and properties, copy rules, memory stats. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

static int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

static void test_devices_without_gpu(void) {
  dt_device all[4];
  char buf[32];
  int n = dt_num_gpus();
  dt_tensor *t;
  if (n > 0) T_SKIP("this machine has a GPU");
  T_CHECK(dt_try_gpu(0).type == DT_CPU);
  T_CHECK(dt_try_gpu(10).type == DT_CPU);
  T_CHECK(dt_try_all_gpus(all, 4) == 1 && all[0].type == DT_CPU);
  T_CHECK(dt_try_all_gpus(NULL, 0) == 1);
  dt_clear_error();
  t = dt_ones(dt_shape2(2, 3), dt_gpu(1));
  T_CHECK(t == NULL);
  T_CHECK(dt_last_status() == DT_ERR_NO_DEVICE);
  T_CHECK_MSG(contains(dt_last_error(), "dt_ones: no such device cuda:1"), "%s", dt_last_error());
  /* and why there is none: the build, or CUDA's own reason */
#ifdef DEVTENSOR_CUDA
  T_CHECK_MSG(contains(dt_last_error(), "(no GPU available: CUDA unavailable: "), "%s", dt_last_error());
#else
  T_CHECK_MSG(contains(dt_last_error(), "(no GPU available: devtensor was built without CUDA"), "%s", dt_last_error());
#endif
  T_CHECK(strcmp(dt_device_str(dt_gpu(1), buf, sizeof buf), "cuda:1") == 0);
}

static void test_device_names(void) {
  dt_device d;
  char buf[32];
  T_STREQ(dt_device_str(dt_cpu(), buf, sizeof buf), "cpu");
  T_STREQ(dt_device_str(dt_gpu(0), buf, sizeof buf), "cuda:0");
  T_STREQ(dt_device_str(dt_gpu(12), buf, sizeof buf), "cuda:12");
  T_STREQ(dt_device_str(dt_gpu(12), buf, 4), "cud"); /* truncates like snprintf */
  T_CHECK(dt_device_parse("cpu", &d) == DT_OK && d.type == DT_CPU && d.index == 0);
  T_CHECK(dt_device_parse("cpu:0", &d) == DT_OK && d.type == DT_CPU);
  T_CHECK(dt_device_parse("cuda", &d) == DT_OK && d.type == DT_CUDA && d.index == 0);
  T_CHECK(dt_device_parse("cuda:1", &d) == DT_OK && d.type == DT_CUDA && d.index == 1);
  T_CHECK(dt_device_parse("cuda:17", &d) == DT_OK && d.index == 17);
  T_CHECK(dt_device_parse("gpu", &d) == DT_OK && d.type == DT_CUDA && d.index == 0);
  T_CHECK(dt_device_parse("gpu:2", &d) == DT_OK && d.type == DT_CUDA && d.index == 2);
  T_CHECK(dt_device_parse("cuda:", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse("cuda:1x", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse("cuda:-1", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse("cuda:99999999999", &d) == DT_ERR_INVALID_ARGUMENT);
  /* the largest index, and the first past it; 2^32 and 2^32 + 1 wrap to 0 and 1 in a 32-bit long (Windows) */
  T_CHECK(dt_device_parse("cuda:2147483647", &d) == DT_OK && d.type == DT_CUDA && d.index == 2147483647);
  T_CHECK(dt_device_parse("cuda:2147483648", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse("cuda:4294967296", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse("cuda:4294967297", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse("cuda:000000000000000000001", &d) == DT_OK && d.index == 1);
  T_CHECK(dt_device_parse("cpu:1", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse("tpu", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK_MSG(contains(dt_last_error(), "dt_device_parse") && contains(dt_last_error(), "tpu"), "%s", dt_last_error());
  T_CHECK(dt_device_parse("", &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse(NULL, &d) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_parse("cpu", NULL) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_device_equal(dt_gpu(1), dt_gpu(1)));
  T_CHECK(!dt_device_equal(dt_gpu(1), dt_gpu(0)));
  T_CHECK(!dt_device_equal(dt_gpu(0), dt_cpu()));
}

static void test_bad_devices(void) {
  dt_device d;
  dt_device_info info;
  d.type = (dt_device_type)7; d.index = 0;
  T_CHECK(dt_zeros(dt_shape1(2), d) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_zeros(dt_shape1(2), dt_gpu(-1)) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  d.type = DT_CPU; d.index = 3;
  T_CHECK(dt_zeros(dt_shape1(2), d) == NULL && dt_last_status() == DT_ERR_NO_DEVICE);
  T_CHECK(dt_zeros(dt_shape1(2), dt_gpu(dt_num_gpus() + 2)) == NULL && dt_last_status() == DT_ERR_NO_DEVICE);
  T_CHECK(dt_device_get_info(dt_gpu(99), &info) == DT_ERR_NO_DEVICE);
  T_CHECK(dt_device_get_info(dt_cpu(), NULL) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_synchronize(dt_gpu(99)) == DT_ERR_NO_DEVICE);
  T_CHECK(dt_cuda_stream(dt_gpu(99)) == NULL && dt_last_status() == DT_ERR_NO_DEVICE);
  T_CHECK(dt_cuda_stream(dt_cpu()) == NULL);
}

static void test_device_info(dt_device dev) {
  dt_device_info info;
  T_CHECK(dt_device_get_info(dev, &info) == DT_OK);
  T_CHECK(info.name[0] != 0);
  T_CHECK(info.multiprocessors >= 1 || dev.type == DT_CPU);
  if (dev.type == DT_CUDA) {
    T_CHECK(info.total_memory > 0 && info.free_memory <= info.total_memory);
    T_CHECK(info.compute_major >= 3);
  }
  T_CHECK(dt_synchronize(dev) == DT_OK);
}

static void test_errors(void) {
  dt_clear_error();
  T_CHECK(dt_last_status() == DT_OK);
  T_STREQ(dt_last_error(), "");
  T_CHECK(dt_add(NULL, NULL) == NULL);
  T_CHECK(dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_STREQ(dt_last_error(), "dt_add: a is NULL");
  dt_clear_error();
  T_STREQ(dt_last_error(), "");
  T_STREQ(dt_status_string(DT_OK), "ok");
  T_STREQ(dt_status_string(DT_ERR_OUT_OF_MEMORY), "out of memory");
  T_CHECK(strlen(dt_status_string((dt_status)99)) > 0);
}

static int handler_calls;
static dt_status handler_status;
static char handler_msg[256];
static void handler(dt_status s, const char *m, void *user) {
  handler_calls += *(int *)user;
  handler_status = s;
  snprintf(handler_msg, sizeof handler_msg, "%s", m);
}

static void test_error_handler(void) {
  int one = 1;
  dt_set_error_handler(handler, &one);
  T_CHECK(dt_reshape(NULL, dt_shape1(1)) == NULL);
  T_CHECK(handler_calls == 1 && handler_status == DT_ERR_INVALID_ARGUMENT);
  T_STREQ(handler_msg, "dt_reshape: a is NULL");
  dt_set_error_handler(NULL, NULL);
  T_CHECK(dt_reshape(NULL, dt_shape1(1)) == NULL);
  T_CHECK(handler_calls == 1);
}

static void test_shapes(void) {
  int64_t dims[3] = {2, 3, 4};
  dt_shape s = dt_shape_n(3, dims);
  T_CHECK(s.ndim == 3 && s.dims[2] == 4);
  T_CHECK(dt_shape_n(9, dims).ndim == -1);
  T_CHECK(dt_shape_n(2, NULL).ndim == -1);
  T_CHECK(dt_shape0().ndim == 0);
  T_CHECK(dt_shape4(1, 2, 3, 4).dims[3] == 4);
  T_CHECK(dt_dtype_size(DT_F32) == 4 && dt_dtype_size(DT_I64) == 8 && dt_dtype_size((dt_dtype)9) == 0);
}

static void test_bad_shapes(dt_device dev) {
  dt_tensor *t;
  dt_shape s = dt_shape2(2, -1);
  t = dt_zeros(s, dev);
  T_CHECK(t == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK_MSG(contains(dt_last_error(), "dt_zeros: negative dimension -1 in shape (2, -1)"), "%s", dt_last_error());
  /* 2^62 * 4 bytes overflows */
  t = dt_empty(dt_shape2((int64_t)1 << 31, (int64_t)1 << 31), DT_F32, dev);
  T_CHECK(t == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK_MSG(contains(dt_last_error(), "too large"), "%s", dt_last_error());
  t = dt_empty(dt_shape4(INT64_MAX, INT64_MAX, 2, 2), DT_F64, dev);
  T_CHECK(t == NULL && dt_last_status() == DT_ERR_SHAPE);
  /* a zero dim makes any shape empty, and valid */
  t = dt_empty(dt_shape3(INT64_MAX, 0, INT64_MAX), DT_F32, dev);
  T_CHECK(t != NULL && dt_numel(t) == 0 && dt_nbytes(t) == 0);
  dt_release(t);
  t = dt_shape_n(9, NULL).ndim == -1 ? dt_zeros(dt_shape_n(9, NULL), dev) : NULL;
  T_CHECK(t == NULL && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK(dt_empty(dt_shape1(2), (dt_dtype)17, dev) == NULL && dt_last_status() == DT_ERR_DTYPE);
}

static void test_creation(dt_device dev) {
  float f[6];
  double d[3];
  int32_t i32[4];
  int64_t i64[5];
  int i;
  dt_tensor *t = dt_ones(dt_shape2(2, 3), dev);
  T_CHECK(t != NULL);
  T_CHECK(dt_device_equal(dt_device_of(t), dev));
  T_CHECK(dt_dtype_of(t) == DT_F32 && dt_ndim(t) == 2 && dt_dim(t, 0) == 2 && dt_dim(t, -1) == 3);
  T_CHECK(dt_numel(t) == 6 && dt_nbytes(t) == 24);
  T_CHECK(dt_data_ptr(t) != NULL);
  T_CHECK(dt_dim(t, 2) == -1 && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_to_host(t, f, sizeof f) == DT_OK);
  for (i = 0; i < 6; i++) T_CHECK(f[i] == 1.0f);
  dt_release(t);

  t = dt_zeros(dt_shape1(6), dev);
  T_CHECK(dt_to_host(t, f, sizeof f) == DT_OK);
  for (i = 0; i < 6; i++) T_CHECK(f[i] == 0.0f);
  T_CHECK(dt_fill_(t, 2.5) == DT_OK);
  T_CHECK(dt_to_host(t, f, sizeof f) == DT_OK);
  for (i = 0; i < 6; i++) T_CHECK(f[i] == 2.5f);
  dt_release(t);

  t = dt_full(dt_shape0(), 7.25, dev);
  T_CHECK(dt_ndim(t) == 0 && dt_numel(t) == 1 && dt_item(t) == 7.25);
  dt_release(t);

  t = dt_arange(0, 3, 1, DT_F64, dev);
  T_CHECK(dt_numel(t) == 3 && dt_dtype_of(t) == DT_F64);
  T_CHECK(dt_to_host(t, d, sizeof d) == DT_OK && d[0] == 0 && d[1] == 1 && d[2] == 2);
  dt_release(t);
  t = dt_arange(1, 2, 0.25, DT_F32, dev);
  T_CHECK(dt_numel(t) == 4 && dt_to_host(t, f, sizeof f) == DT_OK && f[3] == 1.75f);
  dt_release(t);
  t = dt_arange(10, 0, -3, DT_I32, dev);
  T_CHECK(dt_numel(t) == 4 && dt_to_host(t, i32, sizeof i32) == DT_OK && i32[0] == 10 && i32[3] == 1);
  dt_release(t);
  t = dt_arange(0, 5, 1, DT_I64, dev);
  T_CHECK(dt_to_host(t, i64, sizeof i64) == DT_OK && i64[4] == 4);
  dt_release(t);
  t = dt_arange(0, 0, 1, DT_F32, dev);
  T_CHECK(t && dt_numel(t) == 0);
  dt_release(t);
  T_CHECK(dt_arange(0, 1, 0, DT_F32, dev) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_arange(0, -1, 1, DT_F32, dev) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_arange(0, INFINITY, 1, DT_F32, dev) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_arange(0, NAN, 1, DT_F32, dev) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_arange(0, 1e300, 1e-300, DT_F32, dev) == NULL && dt_last_status() == DT_ERR_SHAPE);

  {
    int64_t src[5] = {INT64_MIN, -1, 0, 1, INT64_MAX}, back[5];
    t = dt_from_data(src, dt_shape1(5), DT_I64, dev);
    T_CHECK(t && dt_to_host(t, back, sizeof back) == DT_OK && memcmp(src, back, sizeof src) == 0);
    T_CHECK(dt_to_host(t, back, sizeof back - 1) == DT_ERR_INVALID_ARGUMENT);
    T_CHECK(dt_to_host(t, NULL, sizeof back) == DT_ERR_INVALID_ARGUMENT);
    dt_release(t);
  }
  T_CHECK(dt_from_data(NULL, dt_shape1(2), DT_F32, dev) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  t = dt_from_data(NULL, dt_shape1(0), DT_F32, dev);
  T_CHECK(t != NULL);
  dt_release(t);
}

static void test_refcounts(dt_device dev) {
  dt_tensor *t = dt_zeros(dt_shape1(4), dev), *r;
  T_CHECK(dt_retain(t) == t);
  dt_release(t);
  r = dt_reshape(t, dt_shape2(2, 2));
  dt_release(t); /* r keeps the memory alive */
  T_CHECK(dt_fill_(r, 3) == DT_OK && dt_numel(r) == 4);
  dt_release(r);
  dt_release(NULL);
  T_CHECK(dt_retain(NULL) == NULL);
}

static void test_properties_of_null(void) {
  T_CHECK(dt_numel(NULL) == -1 && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_ndim(NULL) == -1);
  T_CHECK(dt_nbytes(NULL) == 0);
  T_CHECK(dt_data_ptr(NULL) == NULL);
  T_CHECK(dt_shape_of(NULL).ndim == -1);
  T_CHECK(isnan(dt_item(NULL)));
  T_CHECK(dt_to(NULL, dt_cpu()) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_copyto(NULL, dt_cpu()) == NULL);
  T_CHECK(dt_copy_(NULL, NULL) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_fill_(NULL, 1) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_memory_stats_get(dt_cpu(), NULL) == DT_ERR_INVALID_ARGUMENT);
}

/* The chapter's copy rules: to() is a no-op on the same device, copyto never is. */
static void test_copy_rules(dt_device dev) {
  float src[6] = {1, 2, 3, 4, 5, 6}, out[6];
  dt_tensor *x = dt_from_data(src, dt_shape2(2, 3), DT_F32, dev), *y, *z, *c;
  T_CHECK(x != NULL);
  y = dt_to(x, dev);
  T_CHECK(y == x); /* Z.cuda(1) is Z */
  dt_release(y);
  c = dt_copyto(x, dev);
  T_CHECK(c != NULL && c != x && dt_data_ptr(c) != dt_data_ptr(x));
  T_CHECK(dt_to_host(c, out, sizeof out) == DT_OK && memcmp(out, src, sizeof src) == 0);
  /* to the CPU and back */
  z = dt_to(x, dt_cpu());
  T_CHECK(z && dt_device_of(z).type == DT_CPU);
  T_CHECK(dt_to_host(z, out, sizeof out) == DT_OK && memcmp(out, src, sizeof src) == 0);
  T_CHECK((z == x) == (dev.type == DT_CPU));
  /* copy_ between devices */
  T_CHECK(dt_fill_(c, 0) == DT_OK);
  T_CHECK(dt_copy_(c, z) == DT_OK);
  T_CHECK(dt_to_host(c, out, sizeof out) == DT_OK && memcmp(out, src, sizeof src) == 0);
  {
    dt_tensor *w = dt_zeros(dt_shape2(3, 2), dev), *d64 = dt_zeros(dt_shape2(2, 3), dev), *e;
    T_CHECK(dt_copy_(w, x) == DT_ERR_SHAPE);
    T_CHECK_MSG(contains(dt_last_error(), "dt_copy_: dst has shape (3, 2) but src has shape (2, 3)"), "%s", dt_last_error());
    e = dt_cast(d64, DT_F64);
    T_CHECK(dt_copy_(e, x) == DT_ERR_DTYPE);
    dt_release(w); dt_release(d64); dt_release(e);
  }
  T_CHECK(dt_copyto(x, dt_gpu(dt_num_gpus())) == NULL && dt_last_status() == DT_ERR_NO_DEVICE);
  T_CHECK(dt_to(x, dt_gpu(dt_num_gpus())) == NULL && dt_last_status() == DT_ERR_NO_DEVICE);
  dt_release(x); dt_release(c); dt_release(z);
}

/* GPU to GPU and across two GPUs, where there are two. */
static void test_two_gpus(void) {
  float src[4] = {1, 2, 3, 4}, out[4];
  dt_tensor *x, *y, *z, *s;
  if (dt_num_gpus() < 2) T_SKIP("needs two GPUs");
  x = dt_from_data(src, dt_shape1(4), DT_F32, dt_gpu(0));
  y = dt_to(x, dt_gpu(1));
  T_CHECK(y && y != x && dt_device_of(y).index == 1);
  z = dt_to(y, dt_gpu(1));
  T_CHECK(z == y);
  T_CHECK(dt_to_host(y, out, sizeof out) == DT_OK && memcmp(out, src, sizeof src) == 0);
  s = dt_add(x, y);
  T_CHECK(s == NULL && dt_last_status() == DT_ERR_DEVICE_MISMATCH);
  dt_release(x); dt_release(y); dt_release(z);
}

static void test_memory_stats(dt_device dev) {
  dt_memory_stats before, during, after;
  dt_tensor *t;
  T_CHECK(dt_memory_stats_get(dev, &before) == DT_OK);
  t = dt_zeros(dt_shape1(1 << 20), dev);
  T_CHECK(dt_memory_stats_get(dev, &during) == DT_OK);
  T_CHECK(during.allocated >= before.allocated + ((size_t)4 << 20));
  T_CHECK(during.reserved >= during.allocated && during.peak_allocated >= during.allocated);
  dt_release(t);
  T_CHECK(dt_memory_stats_get(dev, &after) == DT_OK);
  T_CHECK(after.allocated == before.allocated);
  T_CHECK(dt_empty_cache(dev) == DT_OK);
  T_CHECK(dt_memory_stats_get(dev, &after) == DT_OK && after.reserved >= after.allocated);
}

/* Tensors of 262 different sizes up to 1 MiB, made and released one at a time
   (one live at a time): a caching allocator must serve them from a few cached
   blocks, not keep one block per size (the GPU's size classes: four per power
   of two, so at most about 6.5 MiB in all for sizes up to 1 MiB). */
static void test_cache_reuse(dt_device dev) {
  dt_memory_stats before, after;
  int i;
  T_CHECK(dt_empty_cache(dev) == DT_OK);
  T_CHECK(dt_memory_stats_get(dev, &before) == DT_OK);
  for (i = 0; i < 262; i++) {
    dt_tensor *t = dt_empty(dt_shape1(1000 + (int64_t)i * 1000), DT_F32, dev); /* 4 kB to 1.05 MB */
    T_CHECK(t != NULL);
    dt_release(t);
  }
  T_CHECK(dt_memory_stats_get(dev, &after) == DT_OK);
  T_CHECK(after.allocated == before.allocated);
  T_CHECK_MSG(after.reserved - before.reserved <= ((size_t)16 << 20), "%zu bytes reserved for one live tensor at a time",
              after.reserved - before.reserved);
  T_CHECK(dt_empty_cache(dev) == DT_OK);
}

/* The CPU's cache: a released block is kept (reserved, not allocated) and the next tensor of its
   size class gets it back; dt_empty_cache gives it to the system; a block of 64 MiB (mapped
   with huge pages on Linux) is reused the same way; what is read back is what was written. */
static void test_cpu_cache(void) {
  dt_device cpu = dt_cpu();
  dt_memory_stats s0, s1, s2;
  dt_tensor *t, *u;
  void *p = NULL;
  int64_t sizes[2] = {1000, (int64_t)1 << 24};
  int i;
#if defined(DEVTENSOR_CPU_NO_CACHE)
  T_SKIP("built with DEVTENSOR_CPU_NO_CACHE");
#endif
  for (i = 0; i < 2; i++) {
    const int64_t n = sizes[i];
    const size_t bytes = (size_t)n * sizeof(float);
    T_CHECK(dt_empty_cache(cpu) == DT_OK);
    T_CHECK(dt_memory_stats_get(cpu, &s0) == DT_OK);
    T_CHECK_MSG(s0.reserved == s0.allocated, "nothing cached after dt_empty_cache: %zu reserved, %zu allocated", s0.reserved,
                s0.allocated);
    t = dt_full(dt_shape1(n), 3, cpu);
    T_CHECK(t != NULL && (p = dt_data_ptr(t)) != NULL);
    T_CHECK(dt_memory_stats_get(cpu, &s1) == DT_OK);
    /* allocated counts the rounded size: at most a quarter more (and a 2 MiB page) */
    T_CHECK_MSG(s1.allocated - s0.allocated >= bytes && s1.allocated - s0.allocated <= bytes + bytes / 4 + ((size_t)2 << 20),
                "%zu bytes for a %zu-byte tensor", s1.allocated - s0.allocated, bytes);
    T_CHECK(s1.reserved == s1.allocated && s1.peak_allocated >= s1.allocated);
    dt_release(t);
    T_CHECK(dt_memory_stats_get(cpu, &s2) == DT_OK);
    T_CHECK(s2.allocated == s0.allocated);
    T_CHECK_MSG(s2.reserved == s1.reserved, "the released block stays reserved: %zu, was %zu", s2.reserved, s1.reserved);
    /* the same size class (a little smaller) gets the same block back, zeroed when asked */
    u = dt_zeros(dt_shape1(n - 7), cpu);
    T_CHECK(u != NULL && dt_data_ptr(u) == p);
    {
      dt_tensor *su = dt_sum(u);
      T_CHECK(su && dt_item(su) == 0);
      dt_release(su);
    }
    dt_release(u);
    T_CHECK(dt_empty_cache(cpu) == DT_OK);
    T_CHECK(dt_memory_stats_get(cpu, &s2) == DT_OK);
    T_CHECK_MSG(s2.reserved == s0.reserved && s2.allocated == s0.allocated, "after dt_empty_cache: %zu reserved, want %zu",
                s2.reserved, s0.reserved);
  }
}

/* The CPU matmul's packing buffer comes from the cache: after a first matmul it waits there (reserved,
   not allocated) with the released result, and the next matmuls of that shape take both back: the
   reserved bytes do not move. */
static void test_cpu_matmul_buffer_cached(void) {
  dt_device cpu = dt_cpu();
  dt_tensor *a = dt_rand(dt_shape2(200, 300), cpu), *b = dt_rand(dt_shape2(300, 200), cpu), *c;
  dt_memory_stats s0, s1, s2;
  const size_t cbytes = 200 * 200 * sizeof(float);
  int i;
#if defined(DEVTENSOR_CPU_NO_CACHE)
  dt_release(a); dt_release(b);
  T_SKIP("built with DEVTENSOR_CPU_NO_CACHE");
#endif
  T_CHECK(a && b && dt_empty_cache(cpu) == DT_OK && dt_memory_stats_get(cpu, &s0) == DT_OK);
  c = dt_matmul(a, b);
  T_CHECK(c != NULL);
  dt_release(c);
  T_CHECK(dt_memory_stats_get(cpu, &s1) == DT_OK && s1.allocated == s0.allocated);
  /* cached: the result's block (at most a quarter more than its bytes) and the packing buffer */
  T_CHECK_MSG(s1.reserved - s1.allocated > cbytes + cbytes / 4, "%zu bytes cached after a matmul", s1.reserved - s1.allocated);
  for (i = 0; i < 5; i++) {
    c = dt_matmul(a, b);
    T_CHECK(c != NULL);
    dt_release(c);
  }
  T_CHECK(dt_memory_stats_get(cpu, &s2) == DT_OK);
  T_CHECK_MSG(s2.reserved == s1.reserved, "reserved %zu after more matmuls, %zu after the first", s2.reserved, s1.reserved);
  dt_release(a); dt_release(b);
  T_CHECK(dt_empty_cache(cpu) == DT_OK);
}

static void test_out_of_memory(dt_device dev) {
  /* 2^60 bytes: no machine has it; the error names the size, and all keeps working */
  dt_tensor *t = dt_empty(dt_shape1((int64_t)1 << 58), DT_F32, dev), *u, *s;
  T_CHECK(t == NULL && dt_last_status() == DT_ERR_OUT_OF_MEMORY);
  T_CHECK_MSG(contains(dt_last_error(), "dt_empty: out of memory on") && contains(dt_last_error(), "1.00 EiB"), "%s", dt_last_error());
  if (dev.type == DT_CUDA) { /* DESIGN.md's message: requested, device, total, free, and what devtensor holds */
    char where[96];
    snprintf(where, sizeof where, "out of memory on cuda:%d: tried to allocate 1.00 EiB; ", dev.index);
    T_CHECK_MSG(contains(dt_last_error(), where) && contains(dt_last_error(), " total, ") &&
                    contains(dt_last_error(), " free, ") && contains(dt_last_error(), " held by devtensor (") &&
                    contains(dt_last_error(), " in use, ") && contains(dt_last_error(), " cached)"), "%s", dt_last_error());
  }
  u = dt_ones(dt_shape1(8), dev);
  s = dt_sum(u);
  T_CHECK(u != NULL && s != NULL && dt_item(s) == 8);
  dt_release(u); dt_release(s);
}

static void test_item(dt_device dev) {
  dt_tensor *t = dt_full(dt_shape2(1, 1), -3.5, dev), *u = dt_ones(dt_shape1(2), dev);
  T_CHECK(dt_item(t) == -3.5);
  T_CHECK(isnan(dt_item(u)) && dt_last_status() == DT_ERR_SHAPE);
  T_CHECK_MSG(contains(dt_last_error(), "dt_item: expected a tensor with one element, got shape (2,)"), "%s", dt_last_error());
  dt_release(t); dt_release(u);
}

int main(void) {
  T_RUN(test_errors);
  T_RUN(test_error_handler);
  T_RUN(test_device_names);
  T_RUN(test_devices_without_gpu);
  T_RUN(test_bad_devices);
  T_RUN(test_shapes);
  T_RUN(test_properties_of_null);
  T_RUN(test_two_gpus);
  T_RUN_ALL_DEVICES(test_device_info);
  T_RUN_ALL_DEVICES(test_bad_shapes);
  T_RUN_ALL_DEVICES(test_creation);
  T_RUN_ALL_DEVICES(test_refcounts);
  T_RUN_ALL_DEVICES(test_copy_rules);
  T_RUN_ALL_DEVICES(test_memory_stats);
  T_RUN_ALL_DEVICES(test_cache_reuse);
  T_RUN(test_cpu_cache);
  T_RUN(test_cpu_matmul_buffer_cached);
  T_RUN_ALL_DEVICES(test_out_of_memory);
  T_RUN_ALL_DEVICES(test_item);
  return t_finish();
}
