/* Graphs (dt_graph_*, torch.cuda.CUDAGraph) on the CPU and every GPU: a captured chain of
   operations replayed with new inputs gives the eager values (exact small-integer arithmetic,
   checked against the values computed here); a captured training step replayed N times gives
   the parameters of N eager steps, bit for bit; the memory a capture uses stays with the graph
   and everything goes back after dt_graph_free; random draws replayed afresh; and the refusals. */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"

/* The emulator's hooks (tests/emu), absent elsewhere; the CUDA runtime's stream synchronize
   (its cudaStream_t is a pointer, cudaError_t an int-sized enum), absent without CUDA. */
#if defined(__GNUC__)
#ifdef __cplusplus
extern "C" {
#endif
void dtemu_fail_graph_instantiate(int n) __attribute__((weak));
int cudaStreamSynchronize(void *stream) __attribute__((weak));
#ifdef __cplusplus
}
#endif
#define HAVE_EMU_HOOKS (dtemu_fail_graph_instantiate != NULL)
#define HAVE_CUDART_SYNC (cudaStreamSynchronize != NULL)
#else
#define HAVE_EMU_HOOKS 0
#define HAVE_CUDART_SYNC 0
#endif

/* What devtensor holds on d for tensors (memory_allocated). A GPU's first capture makes its
   cuBLAS handle and workspace (as its first matmul does): an empty capture first, so that the
   baseline counts them. */
static size_t allocated(dt_device d) {
  dt_memory_stats m;
  if (dt_graph_begin(d) == DT_OK) dt_graph_free(dt_graph_end(d));
  if (dt_memory_stats_get(d, &m) != DT_OK) return (size_t)-1;
  return m.allocated;
}

static int contains(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

/* y = relu(x * w + 1) (elementwise, w broadcast over rows), s = sum(y), p = x @ q: all exact
   in float for these small values */
static void test_graph_chain(dt_device dev) {
  static const float w_h[3] = {2.0f, -1.0f, 0.5f};
  static const float q_h[6] = {1, 2, -1, 0, 3, 1}; /* (3, 2) */
  static const float batches[3][6] = {{1, 2, 3, -1, -2, 4}, {0.5f, -4, 2, 8, 1, -6}, {-3, 0, 10, 2.5f, 7, -1}};
  size_t base = allocated(dev);
  dt_tensor *x = dt_zeros(dt_shape2(2, 3), dev);
  dt_tensor *w = dt_from_data(w_h, dt_shape1(3), DT_F32, dev);
  dt_tensor *q = dt_from_data(q_h, dt_shape2(3, 2), DT_F32, dev);
  dt_tensor *y = NULL, *s = NULL, *p = NULL, *t = NULL, *u = NULL;
  dt_graph *g;
  int b, i, j, k;
  T_CHECK(x && w && q);
  if (!x || !w || !q) goto done;
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  t = dt_mul(x, w);
  u = dt_add_scalar(t, 1.0);
  y = dt_relu(u);
  s = dt_sum(y);
  p = dt_matmul(x, q);
  dt_release(t); t = NULL; /* intermediates released during the capture: the graph keeps their memory */
  dt_release(u); u = NULL;
  g = dt_graph_end(dev);
  T_CHECK_MSG(g != NULL, "%s", dt_last_error());
  T_CHECK(y && s && p);
  if (!g || !y || !s || !p) { dt_graph_free(g); goto done; }
  for (b = 0; b < 3; b++) {
    dt_tensor *in = dt_from_data(batches[b], dt_shape2(2, 3), DT_F32, dev);
    float yh[6], ph[4], sh, ey, es = 0;
    T_CHECK(in && dt_copy_(x, in) == DT_OK);
    dt_release(in);
    T_CHECK(dt_graph_replay(g) == DT_OK);
    T_CHECK(dt_to_host(y, yh, sizeof yh) == DT_OK && dt_to_host(p, ph, sizeof ph) == DT_OK && dt_to_host(s, &sh, sizeof sh) == DT_OK);
    for (i = 0; i < 2; i++)
      for (j = 0; j < 3; j++) {
        ey = batches[b][i * 3 + j] * w_h[j] + 1.0f;
        if (ey < 0) ey = 0;
        es += ey;
        T_CHECK_MSG(yh[i * 3 + j] == ey, "batch %d y[%d][%d] = %g, expected %g", b, i, j, yh[i * 3 + j], ey);
      }
    T_CHECK_MSG(sh == es, "batch %d sum %g, expected %g", b, sh, es);
    for (i = 0; i < 2; i++)
      for (k = 0; k < 2; k++) {
        float e = 0;
        for (j = 0; j < 3; j++) e += batches[b][i * 3 + j] * q_h[j * 2 + k];
        T_CHECK_MSG(ph[i * 2 + k] == e, "batch %d p[%d][%d] = %g, expected %g", b, i, k, ph[i * 2 + k], e);
      }
  }
  dt_graph_free(g);
done:
  dt_release(t); dt_release(u); dt_release(y); dt_release(s); dt_release(p);
  dt_release(x); dt_release(w); dt_release(q);
  T_CHECK(allocated(dev) == base);
}

/* The operations beside the first ones, captured: where, gather, scatter_add, a float16 chain
   (its float32 temporaries) and nll_loss; each replay after new inputs were copied in gives the
   eager results of the same calls on those inputs, bit for bit. */
static dt_tensor *newer_ops(const dt_tensor *x, const dt_tensor *idx, const dt_tensor *lab) {
  dt_tensor *m = dt_gt_scalar(x, 0), *z = dt_zeros_like(x), *w = m && z ? dt_where(m, x, z) : NULL;
  dt_tensor *ga = w ? dt_gather(w, 1, idx) : NULL, *sc = ga ? dt_scatter_add(x, 1, idx, ga) : NULL;
  dt_tensor *h = sc ? dt_cast(sc, DT_F16) : NULL, *h2 = h ? dt_mul(h, h) : NULL, *hs = h2 ? dt_cast(h2, DT_F32) : NULL;
  dt_tensor *lp = hs ? dt_log_softmax(hs, 1) : NULL, *nl = lp ? dt_nll_loss_ex(lp, lab, DT_REDUCTION_NONE) : NULL;
  dt_tensor *r = nl ? dt_reshape(hs, dt_shape1(6)) : NULL, *out;
  const dt_tensor *parts[2];
  parts[0] = r; parts[1] = nl;
  out = r ? dt_cat(parts, 2, 0) : NULL;
  dt_release(r);
  dt_release(m); dt_release(z); dt_release(w); dt_release(ga); dt_release(sc); dt_release(h); dt_release(h2); dt_release(hs);
  dt_release(lp); dt_release(nl);
  return out;
}
static void test_graph_newer_ops(dt_device dev) {
  static const float batches[3][6] = {{1, -2, 3, -1, 2, 0.5f}, {0.5f, 4, -2, 1, 1, -6}, {-3, 0.25f, 1, 2.5f, -1, 1}};
  static const int64_t idx_h[4] = {2, 0, 1, 1}, lab_h[2] = {1, 2};
  size_t base = allocated(dev);
  dt_tensor *x = dt_zeros(dt_shape2(2, 3), dev), *idx = dt_from_data(idx_h, dt_shape2(2, 2), DT_I64, dev);
  dt_tensor *lab = dt_from_data(lab_h, dt_shape1(2), DT_I64, dev), *y = NULL;
  dt_graph *g = NULL;
  int b;
  T_CHECK(x && idx && lab);
  if (!x || !idx || !lab) goto done;
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  y = newer_ops(x, idx, lab);
  g = dt_graph_end(dev);
  T_CHECK_MSG(g != NULL && y != NULL, "%s", dt_last_error());
  if (!g || !y) goto done;
  for (b = 0; b < 3; b++) {
    dt_tensor *in = dt_from_data(batches[b], dt_shape2(2, 3), DT_F32, dev), *e;
    float got[8], want[8];
    int i;
    T_CHECK(in && dt_copy_(x, in) == DT_OK);
    T_CHECK_MSG(dt_graph_replay(g) == DT_OK, "%s", dt_last_error());
    e = in ? newer_ops(in, idx, lab) : NULL;
    T_CHECK(e && dt_numel(e) == 8 && dt_numel(y) == 8);
    if (e && dt_numel(e) == 8 && dt_to_host(y, got, sizeof got) == DT_OK && dt_to_host(e, want, sizeof want) == DT_OK)
      for (i = 0; i < 8; i++) T_CHECK_MSG(got[i] == want[i], "batch %d [%d]: replay %g, eager %g", b, i, got[i], want[i]);
    dt_release(e); dt_release(in);
  }
done:
  dt_graph_free(g);
  dt_release(y); dt_release(x); dt_release(idx); dt_release(lab);
  T_CHECK(allocated(dev) == base);
}

/* Batch norm's forward and backward captured (on a GPU, 2 channels of 32768 values are split
   in slices, the partial sums in scratch the graph keeps): each replay gives the eager step's y
   and x's gradient, bit for bit. */
#define GBN_N 65536
static void test_graph_batch_norm(dt_device dev) {
  const dt_shape s = dt_shape3(8, 2, 4096);
  size_t base = allocated(dev);
  dt_tensor *x = dt_zeros(s, dev), *gy = dt_zeros(s, dev), *y = NULL;
  dt_graph *g = NULL;
  int b, prev;
  T_CHECK(x && gy && dt_requires_grad_(x, 1) == DT_OK);
  if (!x || !gy) goto done;
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  y = dt_f_batch_norm(x, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5);
  T_CHECK_MSG(y && dt_autograd_backward(y, gy) == DT_OK, "%s", dt_last_error());
  g = dt_graph_end(dev);
  T_CHECK_MSG(g != NULL && y != NULL && dt_grad(x) != NULL, "%s", dt_last_error());
  if (!g || !y || !dt_grad(x)) goto done;
  for (b = 0; b < 3; b++) {
    dt_tensor *in, *gin, *xe = NULL, *ye = NULL;
    dt_manual_seed(60 + (uint64_t)b);
    in = dt_randn(s, dev); gin = dt_randn(s, dev);
    prev = dt_set_grad_enabled(0); /* x.copy_(in) under torch.no_grad(): x is a leaf that requires grad */
    T_CHECK_MSG(in && gin && dt_copy_(x, in) == DT_OK && dt_copy_(gy, gin) == DT_OK, "%s", dt_last_error());
    dt_set_grad_enabled(prev);
    T_CHECK_MSG(dt_graph_replay(g) == DT_OK, "%s", dt_last_error());
    if (in && gin && (xe = dt_copyto(in, dev)) && dt_requires_grad_(xe, 1) == DT_OK &&
        (ye = dt_f_batch_norm(xe, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5)) && dt_autograd_backward(ye, gin) == DT_OK) {
      static float got[GBN_N], want[GBN_N];
      int i, bad = 0;
      T_CHECK(dt_to_host(y, got, sizeof got) == DT_OK && dt_to_host(ye, want, sizeof want) == DT_OK);
      for (i = 0; i < GBN_N && bad < 3; i++)
        if (!(got[i] == want[i])) { bad++; T_CHECK_MSG(0, "batch %d y[%d]: replay %g, eager %g", b, i, got[i], want[i]); }
      T_CHECK(dt_to_host(dt_grad(x), got, sizeof got) == DT_OK && dt_to_host(dt_grad(xe), want, sizeof want) == DT_OK);
      for (i = 0; i < GBN_N && bad < 3; i++)
        if (!(got[i] == want[i])) { bad++; T_CHECK_MSG(0, "batch %d gx[%d]: replay %g, eager %g", b, i, got[i], want[i]); }
    } else
      T_CHECK_MSG(0, "the eager step: %s", dt_last_error());
    dt_release(ye); dt_release(xe); dt_release(in); dt_release(gin);
  }
done:
  dt_graph_free(g);
  dt_release(y); dt_release(x); dt_release(gy);
  T_CHECK(allocated(dev) == base);
}

/* A tiny MLP, the same initial weights every call (seeded). */
static dt_module *mlp(dt_device dev) {
  dt_module *m = dt_sequential();
  dt_manual_seed(7);
  if (!m || dt_sequential_add(m, dt_linear(4, 8)) != DT_OK || dt_sequential_add(m, dt_relu_layer()) != DT_OK ||
      dt_sequential_add(m, dt_linear(8, 2)) != DT_OK || dt_module_to(m, dev) != DT_OK) {
    dt_module_free(m);
    return NULL;
  }
  return m;
}

/* forward, MSE loss, backward, SGD with momentum: the step a trainer captures */
static dt_tensor *train_step(dt_module *m, dt_optimizer *o, const dt_tensor *x, const dt_tensor *y) {
  dt_tensor *out, *loss;
  if (dt_optimizer_zero_grad(o) != DT_OK) return NULL;
  if (!(out = dt_forward(m, x))) return NULL;
  loss = dt_mse_loss(out, y);
  dt_release(out);
  if (!loss) return NULL;
  if (dt_autograd_backward(loss, NULL) != DT_OK || dt_optimizer_step(o) != DT_OK) { dt_release(loss); return NULL; }
  return loss;
}

#define NSTEPS 6
static void test_graph_train_step(dt_device dev) {
  float xb[NSTEPS][6 * 4], yb[NSTEPS][6 * 2];
  dt_tensor *xs[NSTEPS], *ys[NSTEPS];
  dt_module *a = NULL, *b = NULL;
  dt_optimizer *oa = NULL, *ob = NULL;
  dt_tensor *x = NULL, *y = NULL, *loss_b = NULL, *loss_a = NULL, *l;
  dt_graph *g = NULL;
  size_t base = allocated(dev);
  int i, k, np;
  for (i = 0; i < NSTEPS; i++) {
    for (k = 0; k < 24; k++) xb[i][k] = (float)((i * 31 + k * 7) % 13) / 6.5f - 1.0f;
    for (k = 0; k < 12; k++) yb[i][k] = (float)((i * 17 + k * 5) % 11) / 5.5f - 1.0f;
    xs[i] = dt_from_data(xb[i], dt_shape2(6, 4), DT_F32, dev);
    ys[i] = dt_from_data(yb[i], dt_shape2(6, 2), DT_F32, dev);
  }
  a = mlp(dev); b = mlp(dev);
  oa = a ? dt_sgd(a, 0.05, 0.9, 0.0) : NULL;
  ob = b ? dt_sgd(b, 0.05, 0.9, 0.0) : NULL;
  x = dt_zeros(dt_shape2(6, 4), dev);
  y = dt_zeros(dt_shape2(6, 2), dev);
  T_CHECK(oa && ob && x && y);
  if (!oa || !ob || !x || !y) goto done;
  /* eager: NSTEPS steps */
  for (i = 0; i < NSTEPS; i++) {
    dt_release(loss_a);
    T_CHECK_MSG((loss_a = train_step(a, oa, xs[i], ys[i])) != NULL, "%s", dt_last_error());
  }
  /* graph: one eager warm-up step (the momentum buffers exist), then the step captured once
     and replayed for the others, each after copying its batch into x and y */
  l = train_step(b, ob, xs[0], ys[0]);
  T_CHECK(l != NULL);
  dt_release(l);
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  loss_b = train_step(b, ob, x, y);
  g = dt_graph_end(dev);
  T_CHECK_MSG(loss_b && g, "%s", dt_last_error());
  if (!g) goto done;
  for (i = 1; i < NSTEPS; i++) {
    T_CHECK(dt_copy_(x, xs[i]) == DT_OK && dt_copy_(y, ys[i]) == DT_OK);
    T_CHECK_MSG(dt_graph_replay(g) == DT_OK, "%s", dt_last_error());
  }
  np = dt_module_num_params(a);
  T_CHECK(np == 4 && dt_module_num_params(b) == np);
  for (k = 0; k < np; k++) {
    dt_tensor *pa = dt_module_param(a, k, NULL), *pb = dt_module_param(b, k, NULL);
    float ha[64], hb[64];
    size_t n = dt_nbytes(pa);
    T_CHECK(n <= sizeof ha && n == dt_nbytes(pb));
    if (n > sizeof ha) continue;
    T_CHECK(dt_to_host(pa, ha, sizeof ha) == DT_OK && dt_to_host(pb, hb, sizeof hb) == DT_OK);
    T_CHECK_MSG(memcmp(ha, hb, n) == 0, "parameter %d differs after %d steps (first values %.9g and %.9g)", k, NSTEPS, ha[0], hb[0]);
  }
  /* the loss tensor the graph writes holds the last replay's loss */
  T_CHECK(dt_item(loss_b) == dt_item(loss_a));
  T_CHECK(dt_item(loss_b) > 0);
done:
  dt_graph_free(g);
  dt_release(loss_a); dt_release(loss_b); dt_release(x); dt_release(y);
  dt_optimizer_free(oa); dt_optimizer_free(ob);
  dt_module_free(a); dt_module_free(b);
  for (i = 0; i < NSTEPS; i++) { dt_release(xs[i]); dt_release(ys[i]); }
  T_CHECK_MSG(allocated(dev) == base, "%llu bytes allocated, %llu before", (unsigned long long)allocated(dev), (unsigned long long)base);
}

/* Memory released during a capture is not handed out again while the graph lives. */
static void test_graph_memory(dt_device dev) {
  size_t base = allocated(dev);
  dt_tensor *x = dt_ones(dt_shape1(1000), dev), *t, *u, *z;
  void *tp;
  dt_graph *g;
  float h[2];
  T_CHECK(x != NULL);
  if (!x) return;
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  t = dt_add(x, x);
  tp = t ? dt_data_ptr(t) : NULL;
  u = dt_mul(t, t);
  dt_release(t);
  g = dt_graph_end(dev);
  T_CHECK(g && u);
  z = dt_empty(dt_shape1(1000), DT_F32, dev); /* the same size: must not get t's block */
  T_CHECK(z && dt_data_ptr(z) != tp);
  T_CHECK(dt_fill_(z, 5.0) == DT_OK);
  T_CHECK(dt_graph_replay(g) == DT_OK);
  T_CHECK(dt_to_host(u, h, 0) != DT_OK); /* too small a buffer: refused */
  {
    float all[1000];
    T_CHECK(dt_to_host(u, all, sizeof all) == DT_OK && all[0] == 4.0f && all[999] == 4.0f);
    T_CHECK(dt_to_host(z, all, sizeof all) == DT_OK && all[0] == 5.0f && all[999] == 5.0f);
  }
  /* the captured output released before the graph: its memory stays the graph's, replays go on */
  dt_release(u);
  T_CHECK(dt_graph_replay(g) == DT_OK);
  dt_graph_free(g);
  dt_release(z);
  dt_release(x);
  T_CHECK_MSG(allocated(dev) == base, "%llu bytes allocated, %llu before", (unsigned long long)allocated(dev), (unsigned long long)base);
  (void)h;
}

/* begin twice, end without begin, synchronizing calls inside a capture, a stale graph, a
   device that does not exist */
static void test_graph_refusals(dt_device dev) {
  size_t base = allocated(dev);
  dt_tensor *x = dt_ones(dt_shape1(4), dev), *one = dt_ones(dt_shape0(), dev), *y, *old;
  dt_graph *g;
  float h[4];
  double v;
  T_CHECK_MSG(x && one, "%s", dt_last_error());
  if (!x || !one) { dt_release(x); dt_release(one); return; }
  T_CHECK(dt_graph_end(dev) == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "not being captured"));
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  T_CHECK(dt_graph_begin(dev) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "already being captured"));
  y = dt_add(x, x);
  T_CHECK(y != NULL);
  /* a read to the host: refused before anything is issued; the capture is invalid then */
  v = dt_item(one);
  T_CHECK(v != v && dt_last_status() == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "dt_item") &&
          contains(dt_last_error(), "captured"));
  T_CHECK(dt_to_host(x, h, sizeof h) == DT_ERR_UNSUPPORTED);
  T_CHECK(dt_synchronize(dev) == DT_ERR_UNSUPPORTED);
  T_CHECK(dt_snprint(NULL, 0, x) < 0);
  T_CHECK(dt_from_data(h, dt_shape1(4), DT_F32, dev) == NULL && dt_last_status() == DT_ERR_UNSUPPORTED);
  g = dt_graph_end(dev);
  T_CHECK(g == NULL && dt_last_status() == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "invalid") &&
          contains(dt_last_error(), "dt_item"));
  dt_release(y);
  /* after it, the device works as before */
  y = dt_sum(x);
  T_CHECK(y && dt_item(y) == 4.0);
  dt_release(y);
  /* a stale graph: a tensor from before the capture, which it reads, released after it */
  old = dt_ones(dt_shape1(4), dev);
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  y = dt_add(old, x);
  g = dt_graph_end(dev);
  T_CHECK(g != NULL);
  T_CHECK(dt_graph_replay(g) == DT_OK);
  dt_release(old);
  T_CHECK(dt_graph_replay(g) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "existed when the capture began"));
  dt_graph_free(g);
  dt_release(y);
  /* replaying while the device is captured */
  old = dt_ones(dt_shape1(4), dev);
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  y = dt_add(old, x);
  g = dt_graph_end(dev);
  T_CHECK(g && dt_graph_begin(dev) == DT_OK);
  T_CHECK(dt_graph_replay(g) == DT_ERR_UNSUPPORTED);
  dt_graph_free(dt_graph_end(dev)); /* an empty capture is a graph that does nothing */
  T_CHECK(dt_graph_replay(g) == DT_OK);
  dt_graph_free(g);
  dt_release(y); dt_release(old);
  /* the user's own synchronize on the device's stream during a capture: CUDA refuses it and
     invalidates the capture, and dt_graph_end reports that */
  if (dev.type == DT_CUDA && HAVE_CUDART_SYNC) {
    T_CHECK(dt_graph_begin(dev) == DT_OK);
    y = dt_add(x, x);
    T_CHECK(cudaStreamSynchronize(dt_cuda_stream(dev)) != 0);
    g = dt_graph_end(dev);
    T_CHECK(g == NULL && contains(dt_last_error(), "cudaStreamEndCapture"));
    dt_release(y);
  }
  /* instantiation failing (the emulator's hook): a clean error, nothing kept */
  if (dev.type == DT_CUDA && HAVE_EMU_HOOKS) {
    T_CHECK(dt_graph_begin(dev) == DT_OK);
    y = dt_sum(x);
    dtemu_fail_graph_instantiate(1);
    g = dt_graph_end(dev);
    T_CHECK(g == NULL && dt_last_status() == DT_ERR_OUT_OF_MEMORY && contains(dt_last_error(), "instantiating"));
    dt_release(y);
  }
  T_CHECK(dt_synchronize(dev) == DT_OK);
  dt_release(x); dt_release(one);
  T_CHECK_MSG(allocated(dev) == base, "%llu bytes allocated, %llu before", (unsigned long long)allocated(dev), (unsigned long long)base);
}

/* Random draws captured into a graph are drawn afresh by each replay, the generator's next
   draws as eager calls would have taken them: rand, randn, randint and dropout, replayed three
   times, give bit for bit what the same calls gave eagerly from the same seed, and the draws
   after the replays go on from there. A permutation (made on the host) is refused. */
static void test_graph_draws(dt_device dev) {
  size_t base = allocated(dev);
  enum { R = 3, N = 37 };
  float want[R][3][N], got[3][N], after_want[N], after_got[N];
  int64_t iwant[R][N], igot[N];
  dt_tensor *ones = dt_ones(dt_shape1(N), dev), *t[4] = {NULL, NULL, NULL, NULL}, *a;
  dt_graph *g;
  int r, k;
  T_CHECK(ones != NULL);
  if (!ones) return;
  /* eagerly: R rounds of the four draws, then one more rand */
  dt_manual_seed(77);
  for (r = 0; r < R; r++) {
    t[0] = dt_rand(dt_shape1(N), dev); t[1] = dt_randn(dt_shape1(N), dev);
    t[2] = dt_randint(-5, 1000, dt_shape1(N), dev); t[3] = dt_f_dropout(ones, 0.5, 1);
    T_CHECK_MSG(t[0] && t[1] && t[2] && t[3], "%s", dt_last_error());
    if (t[0] && t[1] && t[2] && t[3]) {
      T_CHECK(dt_to_host(t[0], want[r][0], sizeof want[r][0]) == DT_OK && dt_to_host(t[1], want[r][1], sizeof want[r][1]) == DT_OK &&
              dt_to_host(t[2], iwant[r], sizeof iwant[r]) == DT_OK && dt_to_host(t[3], want[r][2], sizeof want[r][2]) == DT_OK);
    }
    for (k = 0; k < 4; k++) { dt_release(t[k]); t[k] = NULL; }
  }
  a = dt_rand(dt_shape1(N), dev);
  T_CHECK(a && dt_to_host(a, after_want, sizeof after_want) == DT_OK);
  dt_release(a);
  /* captured once, replayed R times */
  dt_manual_seed(77);
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  t[0] = dt_rand(dt_shape1(N), dev); t[1] = dt_randn(dt_shape1(N), dev);
  t[2] = dt_randint(-5, 1000, dt_shape1(N), dev); t[3] = dt_f_dropout(ones, 0.5, 1);
  g = dt_graph_end(dev);
  T_CHECK_MSG(g && t[0] && t[1] && t[2] && t[3], "%s", dt_last_error());
  for (r = 0; r < R && g; r++) {
    T_CHECK_MSG(dt_graph_replay(g) == DT_OK, "%s", dt_last_error());
    T_CHECK(dt_to_host(t[0], got[0], sizeof got[0]) == DT_OK && dt_to_host(t[1], got[1], sizeof got[1]) == DT_OK &&
            dt_to_host(t[2], igot, sizeof igot) == DT_OK && dt_to_host(t[3], got[2], sizeof got[2]) == DT_OK);
    T_CHECK_MSG(memcmp(got[0], want[r][0], sizeof got[0]) == 0, "replay %d: rand", r);
    T_CHECK_MSG(memcmp(got[1], want[r][1], sizeof got[1]) == 0, "replay %d: randn", r);
    T_CHECK_MSG(memcmp(igot, iwant[r], sizeof igot) == 0, "replay %d: randint", r);
    T_CHECK_MSG(memcmp(got[2], want[r][2], sizeof got[2]) == 0, "replay %d: dropout", r);
  }
  a = dt_rand(dt_shape1(N), dev);
  T_CHECK(a && dt_to_host(a, after_got, sizeof after_got) == DT_OK && memcmp(after_got, after_want, sizeof after_got) == 0);
  dt_release(a);
  for (k = 0; k < 4; k++) dt_release(t[k]);
  dt_graph_free(g);
  /* a permutation is made on the host at once: refused during a capture */
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  a = dt_randperm(10, dev);
  T_CHECK(a == NULL && dt_last_status() == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "dt_randperm") &&
          contains(dt_last_error(), "permutation made on the host"));
  T_CHECK(dt_graph_end(dev) == NULL && dt_last_status() == DT_ERR_UNSUPPORTED);
  dt_release(ones);
  T_CHECK_MSG(allocated(dev) == base, "%llu bytes allocated, %llu before", (unsigned long long)allocated(dev), (unsigned long long)base);
}

/* A backward captured without zeroing the gradient first: each replay adds into the leaf's
   gradient, as each eager backward does (the gradient is the same memory from step to step). */
static void test_graph_grad_accumulates(dt_device dev) {
  static const float xs[4][3] = {{1, 2, 3}, {-1, 4, 0.5f}, {2, -2, 8}, {0.25f, 1, -3}};
  size_t base = allocated(dev);
  dt_tensor *w = dt_ones(dt_shape1(3), dev), *x = dt_zeros(dt_shape1(3), dev), *p = NULL, *l = NULL, *in;
  dt_graph *g = NULL;
  float got[3], want[3] = {0, 0, 0};
  int r, j;
  T_CHECK(w && x && dt_requires_grad_(w, 1) == DT_OK);
  if (!w || !x) goto done;
  for (r = 0; r < 4; r++) { /* r 0: the eager warm-up; then replays */
    for (j = 0; j < 3; j++) want[j] += xs[r][j];
    in = dt_from_data(xs[r], dt_shape1(3), DT_F32, dev);
    T_CHECK(in && dt_copy_(x, in) == DT_OK);
    dt_release(in);
    if (r == 0) {
      p = dt_mul(w, x); l = p ? dt_sum(p) : NULL;
      T_CHECK_MSG(l && dt_autograd_backward(l, NULL) == DT_OK, "%s", dt_last_error());
      dt_release(p); dt_release(l); p = l = NULL;
      T_CHECK(dt_graph_begin(dev) == DT_OK);
      p = dt_mul(w, x); l = p ? dt_sum(p) : NULL;
      T_CHECK_MSG(l && dt_autograd_backward(l, NULL) == DT_OK, "%s", dt_last_error());
      g = dt_graph_end(dev);
      T_CHECK_MSG(g != NULL, "%s", dt_last_error());
      if (!g) goto done;
    } else
      T_CHECK_MSG(dt_graph_replay(g) == DT_OK, "%s", dt_last_error());
    T_CHECK(dt_grad(w) && dt_to_host(dt_grad(w), got, sizeof got) == DT_OK);
    for (j = 0; j < 3; j++) T_CHECK_MSG(got[j] == want[j], "after %d steps grad[%d] = %g, expected %g", r + 1, j, got[j], want[j]);
  }
done:
  dt_graph_free(g);
  dt_release(p); dt_release(l); dt_release(x); dt_release(w);
  T_CHECK_MSG(allocated(dev) == base, "%llu bytes allocated, %llu before", (unsigned long long)allocated(dev), (unsigned long long)base);
}

/* Backwards that need the indices 0..n-1 (nll_loss's one-hot, max_dim's positions, a float16
   index_select's) make them on the device, so they can be captured; the calls that read to the
   host inside (dt_one_hot, dt_clip_grad_norm_) are refused naming themselves. */
static void test_graph_backward_indices(dt_device dev) {
  static const float xh[6] = {0.5f, -1, 2, 3, 0.25f, -2};
  static const int64_t lab_h[2] = {2, 0}, idx_h[3] = {1, 0, 1};
  size_t base = allocated(dev);
  dt_tensor *x = dt_from_data(xh, dt_shape2(2, 3), DT_F32, dev), *lab = dt_from_data(lab_h, dt_shape1(2), DT_I64, dev);
  dt_tensor *idx = dt_from_data(idx_h, dt_shape1(3), DT_I64, dev), *h = x ? dt_cast(x, DT_F16) : NULL;
  dt_tensor *ge = NULL, *gh = NULL, *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
  dt_graph *g = NULL;
  int k, pass;
  T_CHECK(x && lab && idx && h && dt_requires_grad_(x, 1) == DT_OK && dt_requires_grad_(h, 1) == DT_OK);
  if (!x || !lab || !idx || !h) goto done;
  for (pass = 0; pass < 2; pass++) { /* eager, then captured and replayed */
    dt_zero_grad_(x); dt_zero_grad_(h);
    if (pass && dt_graph_begin(dev) != DT_OK) { T_CHECK(0); break; }
    t[0] = dt_log_softmax(x, 1); t[1] = t[0] ? dt_nll_loss(t[0], lab) : NULL;
    t[2] = dt_max_dim(x, 1); t[3] = t[2] ? dt_sum(t[2]) : NULL;
    t[4] = dt_index_select(h, 0, idx); t[5] = t[4] ? dt_sum(t[4]) : NULL;
    T_CHECK_MSG(t[1] && t[3] && t[5] && dt_autograd_backward(t[1], NULL) == DT_OK && dt_autograd_backward(t[3], NULL) == DT_OK &&
                dt_autograd_backward(t[5], NULL) == DT_OK, "%s", dt_last_error());
    if (pass) {
      g = dt_graph_end(dev);
      T_CHECK_MSG(g != NULL, "%s", dt_last_error());
      T_CHECK(g && dt_graph_replay(g) == DT_OK);
    }
    for (k = 0; k < 6; k++) { dt_release(t[k]); t[k] = NULL; }
    if (!pass) { ge = dt_grad(x) ? dt_copyto(dt_grad(x), dev) : NULL; gh = dt_grad(h) ? dt_copyto(dt_grad(h), dev) : NULL; }
  }
  if (g && ge && gh && dt_grad(x) && dt_grad(h)) {
    float a[6], b[6];
    uint16_t c[6], d[6];
    T_CHECK(dt_to_host(ge, a, sizeof a) == DT_OK && dt_to_host(dt_grad(x), b, sizeof b) == DT_OK && memcmp(a, b, sizeof a) == 0);
    T_CHECK(dt_to_host(gh, c, sizeof c) == DT_OK && dt_to_host(dt_grad(h), d, sizeof d) == DT_OK && memcmp(c, d, sizeof c) == 0);
  } else
    T_CHECK(0);
  dt_graph_free(g);
  g = NULL;
  /* reading to the host inside: refused, naming the call */
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  T_CHECK(dt_one_hot(lab, 3) == NULL && dt_last_status() == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "dt_one_hot"));
  T_CHECK(dt_graph_end(dev) == NULL && contains(dt_last_error(), "dt_one_hot"));
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  T_CHECK(dt_clip_grad_norm_(&x, 1, 1.0, NULL) == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "dt_clip_grad_norm_"));
  T_CHECK(dt_graph_end(dev) == NULL && contains(dt_last_error(), "dt_clip_grad_norm_"));
done:
  dt_graph_free(g);
  dt_release(ge); dt_release(gh);
  dt_release(x); dt_release(h); dt_release(lab); dt_release(idx);
  T_CHECK_MSG(allocated(dev) == base, "%llu bytes allocated, %llu before", (unsigned long long)allocated(dev), (unsigned long long)base);
}

/* A captured output of one graph released during another capture: the memory stays with the
   graph that writes it when the other is freed, or fails (refused call), not handed out again. */
static void test_graph_two_graphs(dt_device dev) {
  size_t base = allocated(dev);
  dt_tensor *x = dt_ones(dt_shape1(1000), dev), *y = NULL, *z = NULL, *y2 = NULL, *z2 = NULL;
  dt_graph *g1 = NULL, *g2 = NULL, *g3 = NULL;
  float h[1000];
  int failed;
  T_CHECK(x != NULL);
  if (!x) return;
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  y = dt_add(x, x);
  y2 = dt_mul(x, x);
  g1 = dt_graph_end(dev);
  T_CHECK_MSG(g1 && y && y2, "%s", dt_last_error());
  for (failed = 0; failed < 2 && g1; failed++) {
    T_CHECK(dt_graph_begin(dev) == DT_OK);
    if (!failed) { dt_release(y); y = NULL; }
    else { dt_release(y2); y2 = NULL; T_CHECK(dt_synchronize(dev) == DT_ERR_UNSUPPORTED); }
    g2 = dt_graph_end(dev);
    T_CHECK(failed ? g2 == NULL : g2 != NULL);
    dt_graph_free(g2);
    g2 = NULL;
    z = dt_empty(dt_shape1(1000), DT_F32, dev); /* must not get y's (y2's) block */
    T_CHECK(z && dt_fill_(z, 5.0) == DT_OK);
    T_CHECK_MSG(dt_graph_replay(g1) == DT_OK, "%s", dt_last_error());
    T_CHECK(z && dt_to_host(z, h, sizeof h) == DT_OK && h[0] == 5.0f && h[999] == 5.0f);
    dt_release(z); z = NULL;
  }
  /* and a third graph captured after: the memory it gets is not g1's */
  T_CHECK(dt_graph_begin(dev) == DT_OK);
  z2 = dt_full(dt_shape1(1000), 7.0, dev);
  g3 = dt_graph_end(dev);
  T_CHECK(g3 && z2 && dt_graph_replay(g3) == DT_OK && dt_graph_replay(g1) == DT_OK);
  T_CHECK(z2 && dt_to_host(z2, h, sizeof h) == DT_OK && h[0] == 7.0f && h[999] == 7.0f);
  dt_graph_free(g3);
  dt_graph_free(g1);
  dt_release(y); dt_release(y2); dt_release(z2); dt_release(x);
  T_CHECK_MSG(allocated(dev) == base, "%llu bytes allocated, %llu before", (unsigned long long)allocated(dev), (unsigned long long)base);
}

static void test_graph_bad_devices(void) {
  char db[48];
  T_CHECK(dt_graph_begin(dt_gpu(99)) == DT_ERR_NO_DEVICE && contains(dt_last_error(), "dt_graph_begin") &&
          contains(dt_last_error(), dt_device_str(dt_gpu(99), db, sizeof db)));
  T_CHECK(dt_graph_end(dt_gpu(99)) == NULL && dt_last_status() == DT_ERR_NO_DEVICE);
  T_CHECK(dt_graph_begin(dt_gpu(-1)) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK(dt_graph_replay(NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "g is NULL"));
  dt_graph_free(NULL);
  /* a capture that touches another device: a copy between it and the captured one */
  if (dt_num_gpus() >= 1) {
    dt_tensor *c = dt_ones(dt_shape1(4), dt_cpu()), *gt = dt_ones(dt_shape1(4), dt_gpu(0)), *r;
    T_CHECK(dt_graph_begin(dt_cpu()) == DT_OK);
    r = dt_to(gt, dt_cpu());
    T_CHECK(r == NULL && dt_last_status() == DT_ERR_UNSUPPORTED && contains(dt_last_error(), "another device"));
    T_CHECK(dt_graph_end(dt_cpu()) == NULL);
    T_CHECK(dt_graph_begin(dt_gpu(0)) == DT_OK);
    T_CHECK(dt_copy_(gt, c) == DT_ERR_UNSUPPORTED);
    T_CHECK(dt_graph_end(dt_gpu(0)) == NULL);
    if (dt_num_gpus() >= 2) {
      T_CHECK(dt_graph_begin(dt_gpu(1)) == DT_OK);
      r = dt_to(gt, dt_gpu(1));
      T_CHECK(r == NULL && contains(dt_last_error(), "cuda:1"));
      T_CHECK(dt_graph_end(dt_gpu(1)) == NULL);
    }
    dt_release(c); dt_release(gt);
  } else {
    dt_clear_error();
  }
}

/* Eager work on another GPU by the capturing thread while cuda:0 is captured: CUDA forbids the
   thread that began a (thread-local) capture the unsafe calls on every device, so the other
   GPU's cudaMalloc (a size its cache lacks), a copy from the host, a read back and an emptied
   cache (cudaFree) must not end the capture; the graph then replays. */
static void test_graph_other_gpu(void) {
  dt_device d0 = dt_gpu(0), d1 = dt_gpu(1);
  dt_tensor *x, *y = NULL, *a = NULL, *b = NULL, *s = NULL;
  dt_graph *g = NULL;
  float h[4] = {1, 2, 3, 4}, got[4];
  double v = 0;
  if (dt_num_gpus() < 2) T_SKIP("needs two GPUs");
  x = dt_from_data(h, dt_shape1(4), DT_F32, d0);
  T_CHECK(x && dt_empty_cache(d1) == DT_OK);
  T_CHECK(dt_graph_begin(d0) == DT_OK);
  y = x ? dt_mul_scalar(x, 3) : NULL;
  a = dt_full(dt_shape1(777777), 0.5, d1); /* a block cuda:1's cache lacks: cudaMalloc */
  b = a ? dt_from_data(h, dt_shape1(4), DT_F32, d1) : NULL;
  s = a ? dt_sum(a) : NULL;
  v = s ? dt_item(s) : 0;
  T_CHECK_MSG(b && v == 777777 * 0.5, "%s", dt_last_error());
  dt_release(s); dt_release(a); dt_release(b);
  T_CHECK_MSG(dt_empty_cache(d1) == DT_OK, "%s", dt_last_error());
  g = dt_graph_end(d0);
  T_CHECK_MSG(g != NULL && y != NULL, "%s", dt_last_error());
  if (g && y && dt_graph_replay(g) == DT_OK && dt_to_host(y, got, sizeof got) == DT_OK)
    T_CHECK(got[0] == 3 && got[3] == 12);
  dt_graph_free(g);
  dt_release(y); dt_release(x);
}

int main(void) {
  T_RUN_ALL_DEVICES(test_graph_chain);
  T_RUN_ALL_DEVICES(test_graph_newer_ops);
  T_RUN_ALL_DEVICES(test_graph_batch_norm);
  T_RUN_ALL_DEVICES(test_graph_train_step);
  T_RUN_ALL_DEVICES(test_graph_memory);
  T_RUN_ALL_DEVICES(test_graph_refusals);
  T_RUN_ALL_DEVICES(test_graph_draws);
  T_RUN_ALL_DEVICES(test_graph_grad_accumulates);
  T_RUN_ALL_DEVICES(test_graph_backward_indices);
  T_RUN_ALL_DEVICES(test_graph_two_graphs);
  T_RUN(test_graph_bad_devices);
  T_RUN(test_graph_other_gpu);
  return t_finish();
}
