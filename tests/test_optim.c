/* Optimizers (dt_sgd, dt_adam, dt_adamw) against PyTorch's, their state on devices, and
   torch.no_grad() (dt_set_grad_enabled). */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#endif
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include "harness.h"
#include <stdlib.h>

static int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

/* The fixed start: Sequential(Linear(3, 4), ReLU, Linear(4, 2)), input X (5, 3), target Y (5, 2). */
static const double W0[12] = {0.5, -0.3, 0.2, -0.4, 0.6, 0.1, 0.3, 0.2, -0.5, 0.1, -0.2, 0.4};
static const double B0[4] = {0.1, -0.1, 0.2, 0.05};
static const double W1[8] = {0.3, -0.6, 0.4, 0.2, -0.5, 0.1, 0.3, -0.2};
static const double B1[2] = {0.05, -0.05};
static const double XV[15] = {1.0, 2.0, -1.0, 0.5, -1.5, 2.0, -1.0, 0.5, 1.5, 2.0, 1.0, 0.5, -0.5, -1.0, -2.0};
static const double YV[10] = {1.0, -1.0, 0.5, 0.0, -0.5, 1.0, 2.0, 0.5, 0.0, -0.5};

/* The parameters (0.weight, 0.bias, 2.weight, 2.bias, flattened) after 5 steps of
     opt.zero_grad(); F.mse_loss(net(X), Y).backward(); opt.step()
   from the start above, in float64, by torch 1.13 (Debian's /usr/bin/python3):

   import torch
   W0 = [[0.5, -0.3, 0.2], [-0.4, 0.6, 0.1], [0.3, 0.2, -0.5], [0.1, -0.2, 0.4]]
   B0 = [0.1, -0.1, 0.2, 0.05]
   W1 = [[0.3, -0.6, 0.4, 0.2], [-0.5, 0.1, 0.3, -0.2]]
   B1 = [0.05, -0.05]
   X = [[1.0, 2.0, -1.0], [0.5, -1.5, 2.0], [-1.0, 0.5, 1.5], [2.0, 1.0, 0.5], [-0.5, -1.0, -2.0]]
   Y = [[1.0, -1.0], [0.5, 0.0], [-0.5, 1.0], [2.0, 0.5], [0.0, -0.5]]
   def run(make):
       net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
       with torch.no_grad():
           net[0].weight.copy_(torch.tensor(W0)); net[0].bias.copy_(torch.tensor(B0))
           net[2].weight.copy_(torch.tensor(W1)); net[2].bias.copy_(torch.tensor(B1))
       opt = make(net.parameters())
       x = torch.tensor(X, dtype=torch.float64); y = torch.tensor(Y, dtype=torch.float64)
       for _ in range(5):
           opt.zero_grad()
           torch.nn.functional.mse_loss(net(x), y).backward()
           opt.step()
       return [v for p in net.parameters() for v in p.detach().flatten().tolist()]
   cases = [
       ("sgd",         lambda p: torch.optim.SGD(p, lr=0.1)),
       ("sgd_mom",     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
       ("sgd_mom_wd",  lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.1)),
       ("adam",        lambda p: torch.optim.Adam(p, lr=0.01)),
       ("adam_wd",     lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
       ("adamw",       lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)),
   ]
   for name, mk in cases:
       print(name, ["%.17g" % t for t in run(mk)])

   Tolerance: float64 runs 1e-12 absolute (summation order in the matmuls is the only
   difference); float32 runs 2e-6 absolute + 1e-5 relative (the same script in float32 differs
   from float64 by at most 1.6e-7). */
static const double REF_SGD[26] = {
  0.4907486585409026, -0.24215187842262109, 0.13075094879989718, -0.46454884388349249,
  0.52595546286233108, 0.17555946238645004, 0.44399840255391909, 0.28362775614777247,
  -0.38948734023799264, 0.13521588643836568, -0.17696904706323804, 0.35197309133860566,
  0.06859984323434315, -0.12050634751992069, 0.2253532680592972, 0.030409012665348952,
  0.37919324583735348, -0.59217448615977064, 0.54520494491359706, 0.201364711559293,
  -0.36163207225781918, 0.11811296438169391, 0.12335183916063718, -0.064682719470436828,
  0.13075809986490755, -0.0071307362737893986
};
static const double REF_SGD_MOM[26] = {
  0.46934937840027408, -0.15293436374300159, 0.018562496528151808, -0.55945546728563411,
  0.42603636047174209, 0.28844491467133043, 0.64956840242817249, 0.39266422779347687,
  -0.20891092880174714, 0.18778850358239099, -0.13859501557218065, 0.27566343640018487,
  0.015768044256747479, -0.14349765539110695, 0.24958600916438498, -0.00077741734570159569,
  0.496377261745791, -0.57868485598691766, 0.73586656146629204, 0.2002845098235741,
  -0.1445819492746416, 0.15641227367101229, -0.14836803661828121, 0.14443474196164435,
  0.23256568639859918, 0.05867721036721206
};
static const double REF_SGD_MOM_WD[26] = {
  0.41938589981222557, -0.1207834600404489, 0.01106534753495151, -0.50844179486693397,
  0.34849964183085008, 0.27597069602695734, 0.61005210338465876, 0.37136233751314113,
  -0.16397633583236168, 0.17722199494717414, -0.11594922674644458, 0.23325738077906263,
  0.01642300912084026, -0.13087513189430139, 0.23399519571542299, -0.0016020253765059262,
  0.46302281960287728, -0.50549514288259723, 0.69628016310628649, 0.18279530530467794,
  -0.10246669944017431, 0.14343425771091681, -0.16339807521416388, 0.14911820734848666,
  0.24018522847560453, 0.058873256103484317
};
static const double REF_ADAM[26] = {
  0.45415579984777737, -0.25021969144948242, 0.1505873935208028, -0.44955034499003632,
  0.55077536883570832, 0.14961304707588574, 0.34981661043153489, 0.2497356887158472,
  -0.45002165964849228, 0.15021058903811926, -0.15003566893148054, 0.3505139545411694,
  0.051006764216150101, -0.14862799021651435, 0.24911954755525184, 0.0010911645427875705,
  0.34954725729541786, -0.55496496025426478, 0.44981420583915638, 0.25021657667782637,
  -0.45065754337067493, 0.10238045348355569, 0.24997697078843556, -0.15056641282077657,
  0.099152202948133081, -0.002004451970775074
};
static const double REF_ADAM_WD[26] = {
  0.45223951803363333, -0.25046957111444818, 0.15110259739195944, -0.44841045185619194,
  0.55103349119495804, 0.14896861162328739, 0.34960908207970715, 0.24940399711833325,
  -0.45006442994223761, 0.14989669093927227, -0.15086435316032107, 0.35084337478804112,
  0.051824677114667886, -0.14695153346685005, 0.24668229791781393, 0.0014675399604148383,
  0.34926035284160667, -0.55195226362169558, 0.44959016694563331, 0.20332931142978719,
  -0.45096317752661963, 0.088883874224989612, 0.2499856094162424, -0.15092946284910583,
  0.098833594817732934, -0.0028375890101861676
};
static const double REF_ADAMW[26] = {
  0.45207726349652949, -0.24883754899928617, 0.14972543868945293, -0.44745631032524397,
  0.54788312138773665, 0.14901658472341814, 0.34821958752105708, 0.24864195031371164,
  -0.44763549957069115, 0.14961305037897626, -0.14914952277732113, 0.34864043092072017,
  0.050671473097056115, -0.14801802690372629, 0.24808414362391976, 0.00098864671317755622,
  0.34796598511033877, -0.5521177458999984, 0.44772433840159059, 0.24912503553270979,
  -0.44828279372256763, 0.10208550348782357, 0.24858644995558063, -0.14968679678485095,
  0.098836960071930019, -0.0018803789682122363
};

typedef enum { SGD, SGD_MOM, SGD_MOM_WD, ADAM, ADAM_WD, ADAMW, NCASES } optcase;
static const char *const CASE_NAME[NCASES] = {"sgd", "sgd_mom", "sgd_mom_wd", "adam", "adam_wd", "adamw"};
static const double *const CASE_REF[NCASES] = {REF_SGD, REF_SGD_MOM, REF_SGD_MOM_WD, REF_ADAM, REF_ADAM_WD, REF_ADAMW};

static dt_optimizer *make_opt(optcase c, dt_module *net) {
  switch (c) {
    case SGD: return dt_sgd(net, 0.1, 0, 0);
    case SGD_MOM: return dt_sgd(net, 0.1, 0.9, 0);
    case SGD_MOM_WD: return dt_sgd(net, 0.1, 0.9, 0.1);
    case ADAM: return dt_adam(net, 0.01, 0.9, 0.999, 1e-8, 0);
    case ADAM_WD: return dt_adam(net, 0.01, 0.8, 0.99, 1e-6, 0.1);
    case ADAMW: return dt_adamw(net, 0.01, 0.9, 0.999, 1e-8, 0.1);
    case NCASES: break;
  }
  return NULL;
}

static dt_tensor *tensor_of(const double *v, dt_shape s, dt_dtype t, dt_device d) {
  dt_tensor *h = dt_from_data(v, s, DT_F64, dt_cpu()), *c = h ? dt_cast(h, t) : NULL, *r = c ? dt_to(c, d) : NULL;
  dt_release(h); dt_release(c);
  return r;
}

/* Sets a parameter from doubles, wherever it is. */
static int set_param(dt_module *net, int i, const double *v) {
  dt_tensor *p = dt_module_param(net, i, NULL), *src;
  int ok;
  if (!p) return 0;
  src = tensor_of(v, dt_shape_of(p), dt_dtype_of(p), dt_device_of(p));
  { /* a parameter requires grad: set with grad mode off, as under torch.no_grad() */
    int prev = dt_set_grad_enabled(0);
    ok = src && dt_copy_(p, src) == DT_OK;
    dt_set_grad_enabled(prev);
  }
  dt_release(src);
  return ok;
}

static dt_module *fixed_net(int64_t in) {
  dt_module *net = dt_sequential();
  dt_sequential_add(net, dt_linear(in, 4));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(4, 2));
  if (in && !(set_param(net, 0, W0) && set_param(net, 1, B0) && set_param(net, 2, W1) && set_param(net, 3, B1))) {
    dt_module_free(net);
    return NULL;
  }
  return net;
}

/* One training step as the reference's loop: zero_grad, forward, MSE, backward, step. */
static int train_step(dt_optimizer *o, dt_module *net, const dt_tensor *x, const dt_tensor *y) {
  dt_tensor *pred, *g;
  int ok;
  if (dt_optimizer_zero_grad(o) != DT_OK) return 0;
  pred = dt_forward(net, x);
  g = pred ? dt_mse_loss_grad(pred, y) : NULL;
  ok = g && dt_backward_params(net, g) == DT_OK && dt_optimizer_step(o) == DT_OK;
  if (!ok) printf("  train_step: %s\n", dt_last_error());
  dt_release(pred); dt_release(g);
  return ok;
}

/* The 26 parameters, flattened, in state_dict order. */
static int params_of(dt_module *net, double *out) {
  int i, n = 0;
  for (i = 0; i < 4; i++) {
    dt_tensor *p = dt_module_param(net, i, NULL), *c = p ? dt_cast(p, DT_F64) : NULL;
    if (!c) return 0;
    if (n + dt_numel(c) > 26 || dt_to_host(c, out + n, sizeof(double) * (size_t)(26 - n)) != DT_OK) { dt_release(c); return 0; }
    n += (int)dt_numel(c);
    dt_release(c);
  }
  return n;
}

static void check_ref(dt_module *net, const double *ref, dt_dtype t, const char *what) {
  double v[26];
  int i, bad = 0;
  double atol = t == DT_F64 ? 1e-12 : 2e-6, rtol = t == DT_F64 ? 0 : 1e-5;
  T_CHECK_MSG(params_of(net, v) == 26, "%s: %s", what, dt_last_error());
  for (i = 0; i < 26; i++)
    if (!(fabs(v[i] - ref[i]) <= atol + rtol * fabs(ref[i]))) {
      if (bad++ < 4) printf("  %s: param %d is %.12g, PyTorch's %.12g\n", what, i, v[i], ref[i]);
    }
  T_CHECK_MSG(bad == 0, "%s: %d of 26 values off", what, bad);
}

/* Each optimizer, float32 and float64, 5 steps on dev: PyTorch's values. */
static void test_optim_vs_torch(dt_device dev) {
  int c, k, s;
  for (c = 0; c < NCASES; c++)
    for (k = 0; k < 2; k++) {
      dt_dtype t = k ? DT_F64 : DT_F32;
      dt_module *net = fixed_net(3);
      dt_tensor *x = tensor_of(XV, dt_shape2(5, 3), t, dev), *y = tensor_of(YV, dt_shape2(5, 2), t, dev);
      dt_optimizer *o;
      char what[64];
      T_CHECK(net && x && y);
      if (!net || !x || !y) { dt_module_free(net); dt_release(x); dt_release(y); return; }
      T_CHECK(dt_module_to_dtype(net, t) == DT_OK && dt_module_to(net, dev) == DT_OK);
      o = make_opt((optcase)c, net);
      T_CHECK(o != NULL);
      for (s = 0; s < 5 && o; s++) T_CHECK(train_step(o, net, x, y));
      snprintf(what, sizeof what, "%s %s", CASE_NAME[c], dt_dtype_name(t));
      check_ref(net, CASE_REF[c], t, what);
      dt_optimizer_free(o);
      dt_module_free(net); dt_release(x); dt_release(y);
    }
}

/* State follows dt_module_to: 2 steps on the CPU, 3 on dev, gives the 5-step result; on a GPU
   the state leaves it at the first step after the module has (the memory comes back). Also
   dt_module_to_dtype mid-training: the state is converted (float32 precision then). */
static void test_optim_follows_module_to(dt_device dev) {
  int c, s;
  for (c = 0; c < NCASES; c++) {
    dt_module *net = fixed_net(3);
    dt_tensor *x = tensor_of(XV, dt_shape2(5, 3), DT_F32, dt_cpu()), *y = tensor_of(YV, dt_shape2(5, 2), DT_F32, dt_cpu());
    dt_tensor *xd = NULL, *yd = NULL;
    dt_optimizer *o = net ? make_opt((optcase)c, net) : NULL;
    dt_memory_stats before, mid, after;
    char what[64];
    /* what dev holds before (test_optim_vs_torch ran there first: cuBLAS's workspace is made) */
    T_CHECK(dt_memory_stats_get(dev, &before) == DT_OK);
    xd = tensor_of(XV, dt_shape2(5, 3), DT_F32, dev); yd = tensor_of(YV, dt_shape2(5, 2), DT_F32, dev);
    T_CHECK(net && x && y && xd && yd && o);
    if (!net || !x || !y || !xd || !yd || !o) goto done;
    for (s = 0; s < 2; s++) T_CHECK(train_step(o, net, x, y));
    T_CHECK(dt_module_to(net, dev) == DT_OK);
    for (s = 0; s < 3; s++) T_CHECK(train_step(o, net, xd, yd));
    snprintf(what, sizeof what, "%s cpu -> %s", CASE_NAME[c], dev.type == DT_CPU ? "cpu" : "gpu");
    check_ref(net, CASE_REF[c], DT_F32, what);
    if (dev.type != DT_CPU && c != SGD) { /* SGD without momentum has no state */
      /* back to the CPU: the state stays on the GPU until the next step moves it too */
      dt_release(xd); dt_release(yd); xd = yd = NULL;
      T_CHECK(dt_module_to(net, dt_cpu()) == DT_OK);
      T_CHECK(dt_memory_stats_get(dev, &mid) == DT_OK);
      T_CHECK_MSG(mid.allocated > before.allocated, "%zu bytes on the GPU before, %zu with the state", before.allocated, mid.allocated);
      T_CHECK(train_step(o, net, x, y));
      T_CHECK(dt_memory_stats_get(dev, &after) == DT_OK);
      T_CHECK_MSG(after.allocated == before.allocated, "%zu bytes on the GPU before, %zu after the state left", before.allocated, after.allocated);
    }
  done:
    dt_optimizer_free(o);
    dt_module_free(net);
    dt_release(x); dt_release(y); dt_release(xd); dt_release(yd);
  }
}

/* dtype change mid-training: 2 steps in float32, 3 in float64 (state converted with the params). */
static void test_optim_follows_dtype(dt_device dev) {
  int c, s;
  for (c = 0; c < NCASES; c++) {
    dt_module *net = fixed_net(3);
    dt_tensor *x = tensor_of(XV, dt_shape2(5, 3), DT_F32, dev), *y = tensor_of(YV, dt_shape2(5, 2), DT_F32, dev);
    dt_tensor *x64 = tensor_of(XV, dt_shape2(5, 3), DT_F64, dev), *y64 = tensor_of(YV, dt_shape2(5, 2), DT_F64, dev);
    dt_optimizer *o = NULL;
    char what[64];
    T_CHECK(net && x && y && x64 && y64);
    if (net && x && y && x64 && y64 && dt_module_to(net, dev) == DT_OK && (o = make_opt((optcase)c, net))) {
      for (s = 0; s < 2; s++) T_CHECK(train_step(o, net, x, y));
      T_CHECK(dt_module_to_dtype(net, DT_F64) == DT_OK);
      for (s = 0; s < 3; s++) T_CHECK(train_step(o, net, x64, y64));
      snprintf(what, sizeof what, "%s float32 -> float64", CASE_NAME[c]);
      check_ref(net, CASE_REF[c], DT_F32, what);
    }
    dt_optimizer_free(o);
    dt_module_free(net);
    dt_release(x); dt_release(y); dt_release(x64); dt_release(y64);
  }
}

/* An optimizer on the module's tensors (dt_sgd_tensors, ...) made before dt_module_to and
   dt_module_to_dtype goes on stepping the module's parameters, as torch.optim does after
   net.to(...): 2 steps in float32 on the CPU, then 3 in float64 on dev, give the 5 steps of the
   reference (float32 precision). The parameters keep their tensors (dt_module_param's pointers). */
static void test_optim_tensors_follow_module(dt_device dev) {
  static const optcase cases[3] = {SGD, SGD_MOM, ADAMW};
  int c, s, i;
  for (c = 0; c < 3; c++) {
    dt_module *net = fixed_net(3);
    dt_tensor *x = tensor_of(XV, dt_shape2(5, 3), DT_F32, dt_cpu()), *y = tensor_of(YV, dt_shape2(5, 2), DT_F32, dt_cpu());
    dt_tensor *x64 = tensor_of(XV, dt_shape2(5, 3), DT_F64, dev), *y64 = tensor_of(YV, dt_shape2(5, 2), DT_F64, dev);
    dt_tensor *ps[4];
    dt_optimizer *o = NULL;
    char what[64];
    T_CHECK(net && x && y && x64 && y64);
    if (!net || !x || !y || !x64 || !y64) goto done;
    for (i = 0; i < 4; i++) ps[i] = dt_module_param(net, i, NULL);
    o = cases[c] == SGD ? dt_sgd_tensors(ps, 4, 0.1, 0, 0)
        : cases[c] == SGD_MOM ? dt_sgd_tensors(ps, 4, 0.1, 0.9, 0) : dt_adamw_tensors(ps, 4, 0.01, 0.9, 0.999, 1e-8, 0.1);
    T_CHECK(o != NULL);
    if (!o) goto done;
    for (s = 0; s < 5; s++) {
      const dt_tensor *xs = s < 2 ? x : x64, *ys = s < 2 ? y : y64;
      dt_tensor *pred, *loss;
      if (s == 2) {
        T_CHECK(dt_module_to(net, dev) == DT_OK && dt_module_to_dtype(net, DT_F64) == DT_OK);
        for (i = 0; i < 4; i++) T_CHECK_MSG(dt_module_param(net, i, NULL) == ps[i], "parameter %d is another tensor after the move", i);
      }
      T_CHECK(dt_optimizer_zero_grad(o) == DT_OK);
      pred = dt_forward(net, xs);
      loss = pred ? dt_mse_loss(pred, ys) : NULL;
      T_CHECK_MSG(loss && dt_autograd_backward(loss, NULL) == DT_OK && dt_optimizer_step(o) == DT_OK, "step %d: %s", s, dt_last_error());
      dt_release(loss); dt_release(pred);
    }
    snprintf(what, sizeof what, "%s_tensors cpu float32 -> float64", CASE_NAME[cases[c]]);
    check_ref(net, CASE_REF[cases[c]], DT_F32, what);
  done:
    dt_optimizer_free(o);
    dt_module_free(net);
    dt_release(x); dt_release(y); dt_release(x64); dt_release(y64);
  }
}

/* A lazy first layer: the optimizer is made before its parameters exist; a step then has
   nothing to do for them, and their state is made at the first step after the first forward. */
static void test_optim_lazy(dt_device dev) {
  dt_module *net = fixed_net(0), *lazy1 = dt_sequential();
  dt_tensor *x = tensor_of(XV, dt_shape2(5, 3), DT_F32, dev), *y = tensor_of(YV, dt_shape2(5, 2), DT_F32, dev), *out;
  dt_optimizer *o = NULL, *o1 = NULL;
  int s;
  T_CHECK(net && lazy1 && x && y);
  if (!net || !lazy1 || !x || !y) goto done;
  T_CHECK(dt_sequential_add(lazy1, dt_linear(0, 2)) == DT_OK);
  T_CHECK(dt_module_to(net, dev) == DT_OK && dt_module_to(lazy1, dev) == DT_OK);
  /* nothing but a lazy layer: a step before any forward changes nothing and succeeds */
  o1 = dt_adam(lazy1, 0.1, 0.9, 0.999, 1e-8, 0);
  T_CHECK(o1 && dt_optimizer_step(o1) == DT_OK && dt_optimizer_zero_grad(o1) == DT_OK);
  out = dt_forward(lazy1, x);
  T_CHECK(out && dt_module_param(lazy1, 0, NULL));
  dt_release(out);
  T_CHECK(o1 && dt_optimizer_step(o1) == DT_OK);
  /* the fixed net with a lazy first layer: sized by a forward, then set to the start */
  o = dt_adam(net, 0.01, 0.9, 0.999, 1e-8, 0);
  T_CHECK(o != NULL);
  out = dt_forward(net, x);
  T_CHECK(out != NULL);
  dt_release(out);
  T_CHECK(set_param(net, 0, W0) && set_param(net, 1, B0) && set_param(net, 2, W1) && set_param(net, 3, B1));
  for (s = 0; s < 5 && o; s++) T_CHECK(train_step(o, net, x, y));
  check_ref(net, REF_ADAM, DT_F32, "adam, lazy first layer");
done:
  dt_optimizer_free(o); dt_optimizer_free(o1);
  dt_module_free(net); dt_module_free(lazy1);
  dt_release(x); dt_release(y);
}

static void test_optim_zero_grad(dt_device dev) {
  dt_module *net = fixed_net(3);
  dt_tensor *x = tensor_of(XV, dt_shape2(5, 3), DT_F32, dev), *y = tensor_of(YV, dt_shape2(5, 2), DT_F32, dev), *pred = NULL, *g = NULL;
  dt_optimizer *o = NULL;
  int i, j, nonzero = 0, left = 0;
  T_CHECK(net && x && y);
  if (!net || !x || !y || dt_module_to(net, dev) != DT_OK || !(o = dt_sgd(net, 0.1, 0.5, 0))) goto done;
  pred = dt_forward(net, x);
  g = pred ? dt_mse_loss_grad(pred, y) : NULL;
  T_CHECK(g && dt_backward_params(net, g) == DT_OK);
  for (i = 0; i < 4; i++) {
    double v[12];
    dt_tensor *c = dt_cast(dt_module_grad(net, i), DT_F64);
    T_CHECK(c && dt_to_host(c, v, sizeof v) == DT_OK);
    for (j = 0; c && j < dt_numel(c); j++) nonzero += v[j] != 0;
    dt_release(c);
  }
  T_CHECK(nonzero > 10);
  T_CHECK(dt_optimizer_zero_grad(o) == DT_OK);
  for (i = 0; i < 4; i++) {
    double v[12];
    dt_tensor *c = dt_cast(dt_module_grad(net, i), DT_F64);
    T_CHECK(c && dt_to_host(c, v, sizeof v) == DT_OK);
    for (j = 0; c && j < dt_numel(c); j++) left += v[j] != 0;
    dt_release(c);
  }
  T_CHECK(left == 0);
done:
  dt_optimizer_free(o);
  dt_module_free(net);
  dt_release(x); dt_release(y); dt_release(pred); dt_release(g);
}

/* Arguments PyTorch refuses, refused with the function and the value named; nothing made. */
static void test_optim_bad_args(void) {
  dt_module *net = fixed_net(3), *relu = dt_relu_layer();
  dt_optimizer *o;
  double before[26], after[26];
  struct { dt_optimizer *o; const char *words; } c[15];
  int i, n = 0;
  c[n].o = dt_sgd(NULL, 0.1, 0, 0); c[n++].words = "dt_sgd: m is NULL";
  c[n].o = dt_sgd(net, -0.1, 0, 0); c[n++].words = "dt_sgd: invalid learning rate lr = -0.1";
  c[n].o = dt_sgd(net, NAN, 0, 0); c[n++].words = "dt_sgd: invalid learning rate lr = nan";
  c[n].o = dt_sgd(net, INFINITY, 0, 0); c[n++].words = "dt_sgd: invalid learning rate lr = inf";
  c[n].o = dt_sgd(net, 0.1, -0.5, 0); c[n++].words = "dt_sgd: invalid momentum = -0.5";
  c[n].o = dt_sgd(net, 0.1, 0, -1); c[n++].words = "dt_sgd: invalid weight_decay = -1";
  c[n].o = dt_sgd(relu, 0.1, 0, 0); c[n++].words = "dt_sgd: m has no parameters";
  c[n].o = dt_adam(net, -1, 0.9, 0.999, 1e-8, 0); c[n++].words = "dt_adam: invalid learning rate lr = -1";
  c[n].o = dt_adam(net, 0.1, 1.0, 0.999, 1e-8, 0); c[n++].words = "dt_adam: invalid beta1 = 1 (expected 0 <= beta1 < 1)";
  c[n].o = dt_adam(net, 0.1, 0.9, -0.1, 1e-8, 0); c[n++].words = "dt_adam: invalid beta2 = -0.1";
  c[n].o = dt_adam(net, 0.1, 0.9, 0.999, -1e-8, 0); c[n++].words = "dt_adam: invalid eps = -1e-08";
  c[n].o = dt_adam(net, 0.1, 0.9, 0.999, 1e-8, NAN); c[n++].words = "dt_adam: invalid weight_decay = nan";
  c[n].o = dt_adamw(net, 0.1, NAN, 0.999, 1e-8, 0); c[n++].words = "dt_adamw: invalid beta1 = nan";
  c[n].o = dt_adamw(NULL, 0.1, 0.9, 0.999, 1e-8, 0.01); c[n++].words = "dt_adamw: m is NULL";
  for (i = 0; i < n; i++) {
    T_CHECK_MSG(c[i].o == NULL, "case %d made an optimizer", i);
    dt_optimizer_free(c[i].o);
  }
  /* each message, checked again one by one (the last one is in dt_last_error) */
  for (i = 0; i < n; i++) {
    dt_optimizer *again = NULL;
    switch (i) {
      case 0: again = dt_sgd(NULL, 0.1, 0, 0); break;
      case 1: again = dt_sgd(net, -0.1, 0, 0); break;
      case 2: again = dt_sgd(net, NAN, 0, 0); break;
      case 3: again = dt_sgd(net, INFINITY, 0, 0); break;
      case 4: again = dt_sgd(net, 0.1, -0.5, 0); break;
      case 5: again = dt_sgd(net, 0.1, 0, -1); break;
      case 6: again = dt_sgd(relu, 0.1, 0, 0); break;
      case 7: again = dt_adam(net, -1, 0.9, 0.999, 1e-8, 0); break;
      case 8: again = dt_adam(net, 0.1, 1.0, 0.999, 1e-8, 0); break;
      case 9: again = dt_adam(net, 0.1, 0.9, -0.1, 1e-8, 0); break;
      case 10: again = dt_adam(net, 0.1, 0.9, 0.999, -1e-8, 0); break;
      case 11: again = dt_adam(net, 0.1, 0.9, 0.999, 1e-8, NAN); break;
      case 12: again = dt_adamw(net, 0.1, NAN, 0.999, 1e-8, 0); break;
      default: again = dt_adamw(NULL, 0.1, 0.9, 0.999, 1e-8, 0.01); break;
    }
    T_CHECK(again == NULL);
    T_CHECK_MSG(dt_last_status() == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), c[i].words),
                "expected \"%s\", got \"%s\"", c[i].words, dt_last_error());
  }
  /* edges PyTorch takes: lr 0, beta 0, eps 0 */
  o = dt_adam(net, 0, 0, 0, 0, 0); T_CHECK(o != NULL); dt_optimizer_free(o);
  o = dt_sgd(net, 0, 0, 0); T_CHECK(o != NULL); dt_optimizer_free(o);
  T_CHECK(dt_optimizer_step(NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_optimizer_step: o is NULL"));
  T_CHECK(dt_optimizer_zero_grad(NULL) == DT_ERR_INVALID_ARGUMENT && contains(dt_last_error(), "dt_optimizer_zero_grad: o is NULL"));
  dt_optimizer_free(NULL);
  /* the network grew after the optimizer was made: refused, nothing changed */
  o = dt_sgd(net, 0.1, 0.9, 0);
  T_CHECK(o && params_of(net, before) == 26);
  T_CHECK(dt_sequential_add(net, dt_linear(2, 2)) == DT_OK);
  T_CHECK(o && dt_optimizer_step(o) == DT_ERR_INVALID_ARGUMENT);
  T_CHECK_MSG(contains(dt_last_error(), "dt_optimizer_step: the module has 6 parameters but had 4"), "%s", dt_last_error());
  T_CHECK(params_of(net, after) == 26 && memcmp(before, after, sizeof before) == 0);
  dt_optimizer_free(o);
  dt_module_free(net); dt_module_free(relu);
}

/* More than 256 linear layers (the old fixed tables' limit): plain SGD, zero_grad, moves,
   and an optimizer all work on 300. */
static void test_many_layers(void) {
  dt_module *net = dt_sequential();
  dt_tensor *x = dt_ones(dt_shape2(1, 1), dt_cpu()), *y, *g;
  dt_optimizer *o;
  float w0, w1, w2, w3, gr;
  int i;
  for (i = 0; i < 300; i++) T_CHECK(dt_sequential_add(net, dt_linear(1, 1)) == DT_OK);
  { /* a parameter requires grad: changed with grad mode off, as under torch.no_grad() */
    int prev = dt_set_grad_enabled(0);
    T_CHECK(dt_fill_(dt_module_param(net, 2 * 299, NULL), 0.5) == DT_OK);
    dt_set_grad_enabled(prev);
  }
  T_CHECK(dt_to_host(dt_module_param(net, 2 * 299, NULL), &w0, sizeof w0) == DT_OK);
  y = dt_forward(net, x);
  g = dt_ones(dt_shape2(1, 1), dt_cpu());
  T_CHECK(y && g && dt_backward_params(net, g) == DT_OK);
  T_CHECK(dt_sgd_step(net, 0.5) == DT_OK);
  T_CHECK(dt_to_host(dt_module_param(net, 2 * 299, NULL), &w1, sizeof w1) == DT_OK);
  T_CHECK_MSG(w1 != w0, "the last layer's weight did not move: %g", w1);
  T_CHECK(dt_zero_grad(net) == DT_OK);
  T_CHECK(dt_to_host(dt_module_grad(net, 2 * 299), &gr, sizeof gr) == DT_OK && gr == 0);
  T_CHECK(dt_module_to_dtype(net, DT_F64) == DT_OK && dt_module_to_dtype(net, DT_F32) == DT_OK);
  T_CHECK(dt_module_to(net, dt_try_gpu(0)) == DT_OK && dt_module_to(net, dt_cpu()) == DT_OK);
  o = dt_sgd(net, 0.5, 0, 0);
  dt_release(y);
  y = dt_forward(net, x);
  T_CHECK(o && y && dt_backward_params(net, g) == DT_OK && dt_optimizer_step(o) == DT_OK);
  T_CHECK(dt_to_host(dt_module_param(net, 2 * 299, NULL), &w2, sizeof w2) == DT_OK);
  T_CHECK(w2 != w1);
  T_CHECK(o && dt_optimizer_zero_grad(o) == DT_OK);
  T_CHECK(dt_to_host(dt_module_grad(net, 2 * 299), &w3, sizeof w3) == DT_OK && w3 == 0);
  dt_optimizer_free(o);
  dt_release(x); dt_release(y); dt_release(g);
  dt_module_free(net);
}

/* ---- torch.no_grad() ---- */

/* A forward with grad disabled keeps no activations: the memory allocated after it is lower by
   at least the two saved (n, hidden) activations; backward is refused, also after grad is
   enabled again, until a forward with grad. */
static void test_no_grad(dt_device dev) {
  const int64_t n = 256, in = 32, hidden = 512;
  dt_module *net = dt_sequential();
  dt_tensor *x = dt_randn(dt_shape2(n, in), dev), *yg = NULL, *yn = NULL, *g = NULL, *gx;
  dt_memory_stats s0, sg, sn;
  double vg[256 * 4], vn[256 * 4];
  T_CHECK(net && x);
  if (!net || !x) goto done;
  T_CHECK(dt_sequential_add(net, dt_linear(in, hidden)) == DT_OK);
  T_CHECK(dt_sequential_add(net, dt_relu_layer()) == DT_OK);
  T_CHECK(dt_sequential_add(net, dt_linear(hidden, 4)) == DT_OK);
  T_CHECK(dt_module_to(net, dev) == DT_OK);
  T_CHECK(dt_memory_stats_get(dev, &s0) == DT_OK);
  yg = dt_forward(net, x);
  T_CHECK(dt_memory_stats_get(dev, &sg) == DT_OK);
  if (yg) { /* yg's autograd graph holds the activations too (as PyTorch's): keep its values only */
    dt_tensor *d = dt_detach(yg);
    dt_release(yg);
    yg = d;
  }
  T_CHECK(dt_set_grad_enabled(0) == 1);
  T_CHECK(dt_set_grad_enabled(0) == 0); /* the previous setting, again */
  yn = dt_forward(net, x);
  T_CHECK(dt_memory_stats_get(dev, &sn) == DT_OK);
  T_CHECK(yg && yn);
  /* with grad: y, and the hidden layer's output and its relu, both (n, hidden), kept for backward;
     without: y only (and the activations of the forward with grad, released by it) */
  T_CHECK_MSG(sg.allocated >= s0.allocated + (size_t)(2 * n * hidden * 4),
              "a forward with grad added %zu bytes", sg.allocated - s0.allocated);
  T_CHECK_MSG(sn.allocated + (size_t)(2 * n * hidden * 4) <= sg.allocated + (size_t)(n * 4 * 4), /* + yn */
              "with grad %zu bytes, without %zu", sg.allocated, sn.allocated);
  T_CHECK_MSG(sn.allocated <= s0.allocated + 2 * (size_t)(n * 4 * 4), "after the no-grad forward %zu bytes, before both %zu",
              sn.allocated, s0.allocated);
  { /* the same values */
    dt_tensor *a = yg ? dt_cast(yg, DT_F64) : NULL, *b = yn ? dt_cast(yn, DT_F64) : NULL;
    T_CHECK(a && b && dt_to_host(a, vg, sizeof vg) == DT_OK && dt_to_host(b, vn, sizeof vn) == DT_OK &&
            memcmp(vg, vn, sizeof vg) == 0);
    dt_release(a); dt_release(b);
  }
  g = dt_ones(dt_shape2(n, 4), dev);
  gx = dt_backward(net, g);
  T_CHECK(gx == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK_MSG(contains(dt_last_error(), "dt_backward: grad is disabled on this thread"), "%s", dt_last_error());
  T_CHECK(dt_backward_params(net, g) == DT_ERR_INVALID_ARGUMENT &&
          contains(dt_last_error(), "dt_backward_params: grad is disabled"));
  T_CHECK(dt_set_grad_enabled(1) == 0);
  gx = dt_backward(net, g);
  T_CHECK(gx == NULL && dt_last_status() == DT_ERR_INVALID_ARGUMENT);
  T_CHECK_MSG(contains(dt_last_error(), "dt_backward: the last forward ran with grad disabled"), "%s", dt_last_error());
  /* with grad again: forward, backward work */
  dt_release(yn);
  yn = dt_forward(net, x);
  gx = yn ? dt_backward(net, g) : NULL;
  T_CHECK_MSG(gx && dt_dim(gx, 0) == n && dt_dim(gx, 1) == in, "%s", dt_last_error());
  dt_release(gx);
done:
  dt_set_grad_enabled(1);
  dt_release(x); dt_release(yg); dt_release(yn); dt_release(g);
  dt_module_free(net);
}

#if !defined(_WIN32)
static void *other_thread(void *arg) {
  int *out = (int *)arg;
  out[0] = dt_set_grad_enabled(0); /* this thread's setting: enabled, whatever main's is */
  out[1] = dt_set_grad_enabled(1);
  return NULL;
}
#endif

/* The setting is per thread, as torch.no_grad(). */
static void test_no_grad_per_thread(void) {
#if defined(_WIN32)
  T_SKIP("POSIX threads");
#else
  pthread_t th;
  int seen[2] = {-1, -1};
  T_CHECK(dt_set_grad_enabled(0) == 1);
  T_CHECK(pthread_create(&th, NULL, other_thread, seen) == 0 && pthread_join(th, NULL) == 0);
  T_CHECK(seen[0] == 1 && seen[1] == 0);
  T_CHECK(dt_set_grad_enabled(7) == 0); /* still disabled here; any nonzero enables */
  T_CHECK(dt_set_grad_enabled(1) == 1);
#endif
}

/* dt_clip_grad_norm_ on a gradient holding a NaN or an inf, with an earlier error still the last
   (a lookup the program handled): not a failure. As torch.nn.utils.clip_grad_norm_ (1.13, error_if_nonfinite
   False): the total is NaN or inf and the gradients are multiplied by max_norm / (total + 1e-6),
   clamped to 1: NaN (every element NaN), or 0 (inf * 0 is NaN, the finite ones 0). */
static void test_clip_nonfinite(dt_device dev) {
  int k, i;
  for (k = 0; k < 2; k++) {
    float gv[3] = {k == 0 ? NAN : INFINITY, 1.0f, 2.0f}, got[3];
    dt_tensor *p = dt_zeros(dt_shape1(3), dev), *g = dt_from_data(gv, dt_shape1(3), DT_F32, dev), *y, *l;
    dt_module *m = dt_sequential();
    double total = 0;
    T_CHECK(p && g && m && dt_requires_grad_(p, 1) == DT_OK);
    y = dt_mul(p, g); l = y ? dt_sum(y) : NULL;
    T_CHECK(l && dt_autograd_backward(l, NULL) == DT_OK);
    T_CHECK(dt_module_get_child(m, "missing") == NULL && dt_last_status() != DT_OK);
    T_CHECK_MSG(dt_clip_grad_norm_(&p, 1, 1.0, &total) == DT_OK, "%s", dt_last_error());
    T_CHECK_MSG(k == 0 ? total != total : total == INFINITY, "total %g", total);
    T_CHECK(dt_to_host(dt_grad(p), got, sizeof got) == DT_OK);
    for (i = 0; i < 3; i++) T_CHECK_MSG(k == 0 || i == 0 ? got[i] != got[i] : got[i] == 0.0f, "element %d: %g", i, got[i]);
    dt_release(y); dt_release(l); dt_release(g); dt_release(p);
    dt_module_free(m);
  }
}

int main(void) {
  T_RUN_ALL_DEVICES(test_optim_vs_torch);
  T_RUN_ALL_DEVICES(test_clip_nonfinite);
  T_RUN_ALL_DEVICES(test_optim_follows_module_to);
  T_RUN_ALL_DEVICES(test_optim_follows_dtype);
  T_RUN_ALL_DEVICES(test_optim_tensors_follow_module);
  T_RUN_ALL_DEVICES(test_optim_lazy);
  T_RUN_ALL_DEVICES(test_optim_zero_grad);
  T_RUN(test_optim_bad_args);
  T_RUN(test_many_layers);
  T_RUN_ALL_DEVICES(test_no_grad);
  T_RUN(test_no_grad_per_thread);
  return t_finish();
}
