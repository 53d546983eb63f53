"""The op families: each draws one random case and checks it with Case.run."""
import ctypes as C
import math
import re

import torch
import torch.nn.functional as F

from check import FLOATS, tolcmp
from dtlib import DT_OF, DTError, Device, shape


def f_binary(c):
    lib = c.lib.c
    op = c.R.choice(["add", "sub", "mul", "div"])
    sa, sb = c.bcast_pair()
    kinds = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8,
             torch.bool]
    if c.R.random() < 0.6:
        da = db = c.fdt()
    else:
        da, db = c.R.choice(kinds), c.R.choice(kinds)
    def mk(s, dt_):
        if dt_.is_floating_point:
            return c.values(s, dt_, special=0.1 if c.R.random() < 0.3 else 0)
        if dt_ == torch.bool:
            return torch.rand(s) < 0.5
        if dt_ == torch.uint8:
            return torch.randint(0, 256, s).to(dt_)
        return torch.randint(-50, 50, s).to(dt_)
    a, b = mk(sa, da), mk(sb, db)
    if op == "div" and not db.is_floating_point and c.R.random() < 0.5:
        b = torch.where(b == 0, torch.ones_like(b), b)
    grad = [k for k, t in enumerate((a, b)) if t.is_floating_point()]
    tf = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op]
    fin = all(torch.isfinite(t).all() for t in (a, b) if t.is_floating_point())
    def ref(ts):
        # float64 where the result is floating (integer division too), else the integer op itself
        if op == "sub" and torch.bool in (a.dtype, b.dtype):
            raise RuntimeError("subtraction of bool tensors")
        if torch.result_type(a, b).is_floating_point or op == "div":
            x = [t.double() if not t.is_floating_point() else t for t in ts]
            return tf(x[0], x[1])
        return tf(ts[0], ts[1])
    dtfn = lambda A, p: getattr(lib, "dt_" + op)(p[0], p[1])
    c.run(op, [a, b], dtfn, ref, grad=grad if fin else (), exact_dtype=False)
    # the result's dtype (type promotion) and values against PyTorch on the inputs as they are
    c.run("promote", [a, b], dtfn, lambda ts: tf(a, b), note=op)


UNARY = {
    "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "neg": torch.neg, "relu": torch.relu,
    "sigmoid": torch.sigmoid, "tanh": torch.tanh, "abs": torch.abs, "sin": torch.sin, "cos": torch.cos,
    "erf": torch.erf, "gelu": F.gelu,
}


def f_unary(c):
    lib = c.lib.c
    op = c.R.choice(list(UNARY) + ["pow", "clamp", "add_scalar", "mul_scalar", "rsub_scalar"])
    dtype = c.fdt()
    s = c.rshape(allow0=True)
    sp = 0.1 if c.R.random() < 0.3 else 0
    x = c.values(s, dtype, special=sp)
    if op in ("log", "sqrt") and c.R.random() < 0.7:
        x = x.abs()
    grad = [0] if sp == 0 else []
    if op in UNARY:
        c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0]), lambda ts: UNARY[op](ts[0]), grad=grad)
    elif op == "pow":
        e = c.R.choice([0, 1, 2, 3, -1, 0.5, -0.5, 1.5, 2.5, -2, 0.0, 4])
        if e in (0.5, -0.5, 1.5, 2.5, -1, -2) and c.R.random() < 0.7:
            x = x.abs() + 0.1
        c.run("pow", [x], lambda A, p: lib.dt_pow_scalar(p[0], e), lambda ts: torch.pow(ts[0], e), grad=grad,
            note="p=%r" % e)
    elif op == "clamp":
        lo = c.R.choice([-1.0, 0.0, -math.inf, 0.5, math.nan])
        hi = c.R.choice([1.0, 0.0, math.inf, 2.0, -2.0])
        c.run("clamp", [x], lambda A, p: lib.dt_clamp(p[0], lo, hi),
            lambda ts: torch.clamp(ts[0], lo, hi)
            if not (lo == -math.inf and hi == math.inf) else ts[0] * 1, grad=grad, note="lo=%r hi=%r" % (lo, hi))
    else:
        sv = c.R.choice([2.0, -1.5, 0.0, 3.0, 1e-3])
        f = {"add_scalar": lambda t: t + sv, "mul_scalar": lambda t: t * sv, "rsub_scalar": lambda t: sv - t}[op]

        def zero_sign(got):
            """The sign of a zero result, which the tolerance does not see: IEEE's, as PyTorch's
            (-x * 0 and -0 * s are -0)."""
            r = f(x.double())
            z = (r == 0) & (got.double() == 0)
            if z.any() and not torch.equal(torch.signbit(got.double()[z]), torch.signbit(r[z])):
                k = (z & (torch.signbit(got.double()) != torch.signbit(r))).nonzero()[0].tolist()
                return "sign of zero at %s: %r, PyTorch's %r" % (k, got[tuple(k)].item(), r[tuple(k)].item())
            return None
        c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0], sv), lambda ts: f(ts[0]), grad=grad, note="s=%r" % sv,
              check=zero_sign)


def f_matmul(c):
    lib = c.lib.c
    dtype = c.fdt()
    k = c.R.choice([0, 1, 2, 3, 5, 17])
    m, n = c.R.randint(1, 6), c.R.randint(1, 6)
    b = c.R.randint(1, 3)
    if c.big:
        k, m, n = c.R.randint(1, 300), c.R.randint(1, 150), c.R.randint(1, 150)
    form = c.R.choice(["mm", "bmm", "b2", "vm", "mv", "vv", "2b"])
    sa, sb = {"mm": ([m, k], [k, n]), "bmm": ([b, m, k], [b, k, n]), "b2": ([b, m, k], [k, n]),
              "vm": ([k], [k, n]), "mv": ([m, k], [k]), "vv": ([k], [k]), "2b": ([m, k], [b, k, n])}[form]
    a, bb = c.values(sa, dtype), c.values(sb, dtype)
    c.run("matmul", [a, bb], lambda A, p: lib.dt_matmul(p[0], p[1]), lambda ts: torch.matmul(ts[0], ts[1]), grad=[0, 1],
        scale_extra=max(1, k) ** 0.5, note=form)


def f_reduce(c):
    lib = c.lib.c
    dtype = c.fdt()
    s = c.rshape(allow0=True)
    sp = 0.1 if c.R.random() < 0.3 else 0
    x = c.values(s, dtype, special=sp, ties=c.R.random() < 0.3)
    nd = len(s)
    grad = [0] if sp == 0 else []
    op = c.R.choice(["sum", "mean", "norm", "max", "min", "sum_dim", "sum_dim_ex", "mean_dim", "max_dim", "min_dim",
                   "argmax", "argmin"])
    sc = max(1, x.numel()) ** 0.5 * 3
    if op in ("sum", "mean", "norm", "max", "min"):
        tf = {"sum": torch.sum, "mean": torch.mean, "norm": torch.linalg.norm, "max": torch.max, "min": torch.min}[op]
        c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0]), lambda ts: tf(ts[0]), grad=grad, scale_extra=sc,
            exact_dtype=op not in ("sum",))
        return
    dim = c.R.randint(-max(nd, 1), max(nd, 1) - 1)
    kd = c.R.randint(0, 1)
    if op == "sum_dim":
        if nd == 0:
            return
        c.run(op, [x], lambda A, p: lib.dt_sum_dim(p[0], dim), lambda ts: torch.sum(ts[0], dim), grad=grad, scale_extra=sc,
            note="dim=%d" % dim)
    elif op == "sum_dim_ex":
        c.run(op, [x], lambda A, p: lib.dt_sum_dim_ex(p[0], dim, kd), lambda ts: torch.sum(ts[0], dim, keepdim=bool(kd)),
            grad=grad, scale_extra=sc, note="dim=%d kd=%d" % (dim, kd))
    elif op == "mean_dim":
        c.run(op, [x], lambda A, p: lib.dt_mean_dim(p[0], dim, kd), lambda ts: torch.mean(ts[0], dim, keepdim=bool(kd)),
            grad=grad, scale_extra=sc, note="dim=%d kd=%d" % (dim, kd))
    elif op in ("max_dim", "min_dim"):
        tf = torch.max if op == "max_dim" else torch.min
        c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0], dim), lambda ts: tf(ts[0], dim).values, grad=grad,
            note="dim=%d" % dim)
    else:
        tf = torch.argmax if op == "argmax" else torch.argmin
        c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0], dim), lambda ts: tf(ts[0], dim), note="dim=%d" % dim)


def f_softmax(c):
    lib = c.lib.c
    dtype = c.fdt()
    s = c.rshape(allow0=True)
    sp = 0.1 if c.R.random() < 0.2 else 0
    x = c.values(s, dtype, special=sp)
    nd = len(s)
    dim = c.R.randint(-max(nd, 1), max(nd, 1) - 1)
    op = c.R.choice(["softmax", "log_softmax"])
    tf = F.softmax if op == "softmax" else F.log_softmax
    c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0], dim), lambda ts: tf(ts[0], dim),
        grad=[0] if sp == 0 else [], note="dim=%d" % dim)


def f_loss(c):
    lib = c.lib.c
    dtype = c.fdt((5, 4, 1, 1))
    op = c.R.choice(["cross_entropy", "nll", "bce", "l1", "smooth_l1", "mse"])
    red = c.R.randint(0, 2)
    rname = ["none", "mean", "sum"][red]
    if op in ("cross_entropy", "nll"):
        n, nc = c.R.randint(0, 5), c.R.randint(1, 6)
        x = c.values([n, nc], dtype, special=0.1 if c.R.random() < 0.2 else 0)
        if op == "nll":
            x = F.log_softmax(x.double(), 1).to(dtype)
        t = torch.randint(0, nc, [n])
        if op == "cross_entropy":
            c.run(op, [x, t], lambda A, p: lib.dt_cross_entropy(p[0], p[1]), lambda ts: F.cross_entropy(ts[0], ts[1]),
                grad=[0])
        else:
            c.run(op, [x, t], lambda A, p: lib.dt_nll_loss_ex(p[0], p[1], red),
                lambda ts: F.nll_loss(ts[0], ts[1], reduction=rname), grad=[0], note=rname)
        return
    s = c.rshape(allow0=True)
    x, y = c.values(s, dtype), c.values(s, dtype)
    if op == "bce":
        y = torch.rand(s).to(dtype)
        c.run(op, [x, y], lambda A, p: lib.dt_bce_with_logits_ex(p[0], p[1], red),
            lambda ts: F.binary_cross_entropy_with_logits(ts[0], ts[1], reduction=rname), grad=[0, 1], note=rname)
    elif op == "l1":
        c.run(op, [x, y], lambda A, p: lib.dt_l1_loss_ex(p[0], p[1], red),
            lambda ts: F.l1_loss(ts[0], ts[1], reduction=rname), grad=[0, 1], note=rname)
    elif op == "mse":
        c.run(op, [x, y], lambda A, p: lib.dt_mse_loss_ex(p[0], p[1], red),
            lambda ts: F.mse_loss(ts[0], ts[1], reduction=rname), grad=[0, 1], note=rname)
    else:
        beta = c.R.choice([1.0, 0.5, 0.0, 2.0])

        def ref(ts):
            if beta == 0:
                # beta 0 is l1, whose gradient where d = x - y is 0 is 0 (docs/API.md, the row of
                # dt_smooth_l1_loss: "0 is l1 (its gradient where d is 0 too: 0, where PyTorch 1.13
                # gives -1)"); F.l1_loss's gradient is sign(d), 0 there
                return F.l1_loss(ts[0], ts[1], reduction=rname)
            return F.smooth_l1_loss(ts[0], ts[1], reduction=rname, beta=beta)
        c.run(op, [x, y], lambda A, p: lib.dt_smooth_l1_loss_ex(p[0], p[1], beta, red), ref, grad=[0, 1],
              note="%s beta=%r" % (rname, beta))


def f_conv(c):
    lib = c.lib.c
    dtype = c.fdt((5, 4, 1, 1))
    g = c.R.choice([1, 1, 1, 2, 3])
    ch = g * c.R.randint(1, 3)
    oc = g * c.R.randint(1, 3)
    kh, kw = c.R.randint(1, 4), c.R.randint(1, 4)
    sh, sw = c.R.randint(1, 3), c.R.randint(1, 3)
    ph, pw = c.R.randint(0, 2), c.R.randint(0, 2)
    dh, dw = c.R.choice([1, 1, 2]), c.R.choice([1, 1, 2])
    n = c.R.choice([0, 1, 1, 2, 3])
    h, w = c.R.randint(1, 8), c.R.randint(1, 8)
    if c.big:
        h, w = c.R.randint(1, 40), c.R.randint(1, 40)
    x = c.values([n, ch, h, w], dtype)
    wt = c.values([oc, ch // g, kh, kw], dtype)
    bias = c.R.random() < 0.7
    ins = [x, wt] + ([c.values([oc], dtype)] if bias else [])
    note = "g=%d k=%dx%d s=%d,%d p=%d,%d d=%d,%d" % (g, kh, kw, sh, sw, ph, pw, dh, dw)
    c.run("conv2d", ins,
        lambda A, p: lib.dt_f_conv2d_ex(p[0], p[1], p[2] if bias else None, sh, sw, ph, pw, dh, dw, g),
        lambda ts: F.conv2d(ts[0], ts[1], ts[2] if bias else None, (sh, sw), (ph, pw), (dh, dw), g),
        grad=list(range(len(ins))), scale_extra=(ch * kh * kw) ** 0.5, note=note)


def f_pool(c):
    lib = c.lib.c
    dtype = c.fdt((5, 4, 1, 1))
    op = c.R.choice(["max", "avg", "adaptive"])
    n, ch = c.R.choice([0, 1, 2]), c.R.randint(1, 3)
    h, w = c.R.randint(1, 9), c.R.randint(1, 9)
    if c.big:
        h, w = c.R.randint(1, 80), c.R.randint(1, 80)
    sp = 0.05 if c.R.random() < 0.3 else 0
    x = c.values([n, ch, h, w], dtype, special=sp, ties=c.R.random() < 0.4)
    grad = [0] if sp == 0 else []
    if op == "adaptive":
        oh, ow = c.R.randint(1, 10), c.R.randint(1, 10)
        c.run("adaptive_avg_pool2d", [x], lambda A, p: lib.dt_f_adaptive_avg_pool2d(p[0], oh, ow),
            lambda ts: F.adaptive_avg_pool2d(ts[0], (oh, ow)), grad=grad, note="out=%d,%d" % (oh, ow))
        return
    kh, kw = c.R.randint(1, 4), c.R.randint(1, 4)
    sh, sw = c.R.randint(1, 3), c.R.randint(1, 3)
    ph, pw = c.R.randint(0, kh // 2), c.R.randint(0, kw // 2)
    note = "k=%d,%d s=%d,%d p=%d,%d" % (kh, kw, sh, sw, ph, pw)
    if op == "max":
        c.run("max_pool2d", [x], lambda A, p: lib.dt_f_max_pool2d_ex(p[0], kh, kw, sh, sw, ph, pw, None),
            lambda ts: F.max_pool2d(ts[0], (kh, kw), (sh, sw), (ph, pw)), grad=grad, note=note)
        # indices
        def dtidx(A, p):
            ind = C.c_void_p()
            o = lib.dt_f_max_pool2d_ex(p[0], kh, kw, sh, sw, ph, pw, C.byref(ind))
            A(o)
            return ind.value
        c.run("max_pool2d_idx", [x], dtidx,
            lambda ts: F.max_pool2d(ts[0], (kh, kw), (sh, sw), (ph, pw), return_indices=True)[1], note=note)
    else:
        c.run("avg_pool2d", [x], lambda A, p: lib.dt_f_avg_pool2d_ex(p[0], kh, kw, sh, sw, ph, pw),
            lambda ts: F.avg_pool2d(ts[0], (kh, kw), (sh, sw), (ph, pw)), grad=grad, note=note)


def f_norm(c):
    lib = c.lib.c
    dtype = c.fdt((5, 4, 1, 1))
    op = c.R.choice(["bn_train", "bn_eval", "ln"])
    eps = c.R.choice([1e-5, 1e-3, 0.1])
    if op == "ln":
        nd = c.R.randint(1, 4)
        s = c.rshape(nd)
        d = s[-1]
        x = c.values(s, dtype)
        aff = c.R.randint(0, 2)  # 0 none 1 weight+bias 2 weight only
        ins = [x] + ([c.values([d], dtype), c.values([d], dtype)] if aff == 1 else [c.values([d], dtype)] if aff == 2 else [])
        c.run("layer_norm", ins,
            lambda A, p: lib.dt_f_layer_norm(p[0], d, p[1] if aff else None, p[2] if aff == 1 else None, eps),
            lambda ts: F.layer_norm(ts[0], (d,), ts[1] if aff else None, ts[2] if aff == 1 else None, eps),
            grad=list(range(len(ins))), note="aff=%d eps=%g" % (aff, eps), scale_extra=10)
        return
    nd = c.R.choice([2, 3, 4])
    s = [c.R.choice([1, 2, 3, 5])] + [c.R.randint(1, 4) for _ in range(nd - 1)]
    ch = s[1]
    x = c.values(s, dtype)
    aff = c.R.randint(0, 3)  # 0 none, 1 both, 2 weight only, 3 bias only
    w = c.values([ch], dtype) if aff in (1, 2) else None
    b = c.values([ch], dtype) if aff in (1, 3) else None
    mom = c.R.choice([0.1, 0.5, 1.0, 0.0])
    rm = c.values([ch], dtype)
    rv = (torch.rand([ch]) + 0.5).to(dtype)
    training = op == "bn_train"
    ins = [x] + [t for t in (w, b) if t is not None]
    has_run = c.R.random() < 0.7 or not training
    note = "%s aff=%d mom=%g eps=%g shape=%s run=%d" % (op, aff, mom, eps, s, has_run)

    holder = {}

    def wb(xs):  # the weight and bias among the inputs after x (None where not drawn)
        rest = iter(xs[1:])
        return (next(rest) if w is not None else None), (next(rest) if b is not None else None)

    def dtfn(A, p):
        rmp = A.t(rm) if has_run else None
        rvp = A.t(rv) if has_run else None
        wp, bp = wb(p)
        o = lib.dt_f_batch_norm(p[0], rmp, rvp, wp, bp, int(training), mom, eps)
        holder["rm"], holder["rv"] = rmp, rvp
        return o

    def ref(ts):
        wt, bt = wb(ts)
        rrm, rrv = (rm.double().clone(), rv.double().clone()) if has_run else (None, None)
        y = F.batch_norm(ts[0], rrm, rrv, wt, bt, training, mom, eps)
        holder.setdefault("ref", (rrm, rrv))  # the first call's: the inputs in float64
        return y

    def running(got):
        """The running statistics batch_norm updated in training, against PyTorch's."""
        if not (training and has_run):
            return None
        for name, p, r in zip(("running_mean", "running_var"), (holder["rm"], holder["rv"]), holder["ref"]):
            m = tolcmp(c.to_torch(p), r, dtype, 10)
            if m:
                return name + " " + m
        return None

    c.run("batch_norm", ins, dtfn, ref, grad=list(range(len(ins))), note=note, scale_extra=10, check=running)


def f_index(c):
    lib = c.lib.c
    dtype = c.R.choice(FLOATS + [torch.int64, torch.int32])
    op = c.R.choice(["slice", "index_select", "cat", "stack", "permute", "where", "gather", "scatter_add", "pad",
                   "flatten", "unsqueeze", "squeeze", "transpose", "embedding", "one_hot"])
    isf = dtype.is_floating_point
    def mk(s):
        return c.values(s, dtype) if isf else torch.randint(-9, 9, s).to(dtype)
    grad = [0] if isf else []
    if op == "slice":
        s = c.rshape(c.R.randint(1, 4), allow0=True)
        x = mk(s)
        dim = c.R.randint(-len(s), len(s) - 1)
        st, en = c.R.randint(-7, 7), c.R.randint(-7, 7)
        c.run(op, [x], lambda A, p: lib.dt_slice(p[0], dim, st, en),
            lambda ts: ts[0].narrow(dim, 0, ts[0].shape[dim])[(slice(None),) * (dim % len(s)) + (slice(st, en),)] * 1,
            grad=grad, note="dim=%d %d:%d" % (dim, st, en))
    elif op == "index_select":
        s = c.rshape(c.R.randint(1, 4), allow0=True)
        x = mk(s)
        dim = c.R.randint(-len(s), len(s) - 1)
        nn_ = s[dim]
        k = c.R.randint(0, 6)
        idx = torch.randint(0, max(nn_, 1), [k]) if c.R.random() < 0.95 else torch.tensor([nn_])
        if c.R.random() < 0.1 and k:
            idx = idx[0]
        c.run(op, [x, idx], lambda A, p: lib.dt_index_select(p[0], dim, p[1]),
            lambda ts: torch.index_select(ts[0], dim, ts[1]), grad=grad, note="dim=%d" % dim)
    elif op in ("cat", "stack"):
        nt = c.R.randint(1, 4)
        s = c.rshape(c.R.randint(1, 4))
        dim = c.R.randint(-len(s), len(s) - 1)
        xs = []
        for _ in range(nt):
            s2 = list(s)
            if op == "cat":
                s2[dim] = c.R.randint(0, 3)
            xs.append(mk(s2))
        if op == "cat" and c.R.random() < 0.1:
            xs.append(mk([0]))
        def dtfn(A, p):
            arr = (C.c_void_p * len(p))(*p)
            return lib.dt_cat(arr, len(p), dim) if op == "cat" else lib.dt_stack(arr, len(p))
        c.run(op, xs, dtfn, lambda ts: torch.cat(ts, dim) if op == "cat" else torch.stack(ts),
            grad=list(range(len(xs))) if isf else [], note="dim=%d" % dim)
    elif op == "permute":
        s = c.rshape(c.R.randint(0, 5))
        x = mk(s)
        perm = list(range(len(s)))
        c.R.shuffle(perm)
        perm = [q - len(s) if c.R.random() < 0.3 else q for q in perm]
        arr = (C.c_int * max(1, len(perm)))(*perm)
        c.run(op, [x], lambda A, p: lib.dt_permute(p[0], arr), lambda ts: ts[0].permute(perm) * 1, grad=grad,
            note="perm=%s" % perm)
    elif op == "where":
        sa, sb = c.bcast_pair()
        sc_ = c.R.choice([sa, sb, [1] * len(sa)])
        cond = torch.rand(sc_) < 0.5
        a = mk(sa)
        b = mk(sb) if c.R.random() < 0.7 else c.values(sb, c.fdt())
        g = [k for k, t in enumerate([cond, a, b]) if t.is_floating_point()]
        c.run(op, [cond, a, b], lambda A, p: lib.dt_where(p[0], p[1], p[2]), lambda ts: torch.where(ts[0], ts[1], ts[2]),
            grad=g)
    elif op in ("gather", "scatter_add"):
        s = c.rshape(c.R.randint(1, 4))
        x = mk(s)
        dim = c.R.randint(-len(s), len(s) - 1)
        si = [c.R.randint(0, d_) for d_ in s]
        si[dim] = c.R.randint(0, 5)
        idx = torch.randint(0, s[dim], si)
        if op == "gather":
            c.run(op, [x, idx], lambda A, p: lib.dt_gather(p[0], dim, p[1]), lambda ts: torch.gather(ts[0], dim, ts[1]),
                grad=grad, note="dim=%d" % dim)
        else:
            ss = [max(a_, c.R.randint(a_, a_ + 2)) for a_ in si]
            src = mk(ss)
            if dtype in (torch.float16, torch.bfloat16, torch.uint8):
                return  # PyTorch 1.13's CPU has no scatter_add for these
            c.run(op, [x, idx, src], lambda A, p: lib.dt_scatter_add(p[0], dim, p[1], p[2]),
                lambda ts: ts[0].scatter_add(dim, ts[1], ts[2]), grad=[0] if isf else [], note="dim=%d src=%s" % (dim, ss))
    elif op == "pad":
        s = c.rshape(c.R.randint(1, 4))
        x = mk(s)
        npad = 2 * c.R.randint(1, len(s))
        pads = [c.R.randint(-1, 2) for _ in range(npad)]
        val = c.R.choice([0.0, 1.5, -2.0]) if isf else c.R.choice([0.0, 3.0])
        arr = (C.c_int64 * npad)(*pads)
        out = list(s)
        for k in range(npad // 2):
            out[len(s) - 1 - k] += pads[2 * k] + pads[2 * k + 1]

        def ref(ts):
            try:
                return F.pad(ts[0], pads, value=val)
            except RuntimeError:
                # docs/API.md, dt_pad: "a dimension cropped below size 0 is refused, to exactly 0 is
                # allowed"; PyTorch 1.13 refuses some of those: the reference is the empty result
                if min(out) != 0:
                    raise
                return (torch.zeros(out, dtype=ts[0].dtype) + ts[0].sum() * 0).to(ts[0].dtype)
        c.run(op, [x], lambda A, p: lib.dt_pad(p[0], arr, npad, val), ref, grad=grad,
              note="pad=%s val=%r" % (pads, val))
    elif op == "flatten":
        s = c.rshape(c.R.randint(0, 4))
        x = mk(s)
        nd = max(len(s), 1)
        a_ = c.R.randint(-nd, nd - 1)
        b_ = c.R.randint(-nd, nd - 1)
        c.run(op, [x], lambda A, p: lib.dt_flatten(p[0], a_, b_), lambda ts: torch.flatten(ts[0], a_, b_) * 1, grad=grad,
            note="%d..%d" % (a_, b_))
    elif op == "unsqueeze":
        s = c.rshape(c.R.randint(0, 4))
        x = mk(s)
        dim = c.R.randint(-len(s) - 1, len(s))
        c.run(op, [x], lambda A, p: lib.dt_unsqueeze(p[0], dim), lambda ts: ts[0].unsqueeze(dim) * 1, grad=grad,
            note="dim=%d" % dim)
    elif op == "squeeze":
        s = c.rshape(c.R.randint(0, 4))
        x = mk(s)
        nd = max(len(s), 1)
        dim = c.R.randint(-nd, nd - 1)
        c.run(op, [x], lambda A, p: lib.dt_squeeze(p[0], dim), lambda ts: ts[0].squeeze(dim) * 1, grad=grad,
            note="dim=%d" % dim)
    elif op == "transpose":
        s = c.rshape(2, allow0=True)
        x = mk(s)
        c.run(op, [x], lambda A, p: lib.dt_transpose(p[0]), lambda ts: ts[0].t() * 1, grad=grad)
    elif op == "embedding":
        if not isf:
            return
        num, dim_ = c.R.randint(1, 6), c.R.randint(1, 4)
        wt = c.values([num, dim_], dtype)
        idx = torch.randint(0, num, c.rshape(c.R.randint(0, 3)))
        c.run(op, [idx, wt], lambda A, p: lib.dt_f_embedding(p[0], p[1]), lambda ts: F.embedding(ts[0], ts[1]), grad=[1])
    elif op == "one_hot":
        s = c.rshape(c.R.randint(0, 3), allow0=True)
        nc = c.R.choice([-1, 3, 5])
        lab = torch.randint(0, 3, s)
        c.run(op, [lab], lambda A, p: lib.dt_one_hot(p[0], nc), lambda ts: F.one_hot(ts[0], nc), note="nc=%d" % nc)


def f_compare(c):
    lib = c.lib.c
    op = c.R.choice(["eq", "ne", "lt", "le", "gt", "ge"])
    sa, sb = c.bcast_pair()
    kinds = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8]
    da, db = c.R.choice(kinds), c.R.choice(kinds)
    a = c.values(sa, da, special=0.1, ties=True) if da.is_floating_point else torch.randint(0, 4, sa).to(da)
    b = c.values(sb, db, special=0.1, ties=True) if db.is_floating_point else torch.randint(0, 4, sb).to(db)
    tf = getattr(torch, op)
    c.run(op, [a, b], lambda A, p: getattr(lib, "dt_" + op)(p[0], p[1]), lambda ts: tf(a, b))
    sv = c.R.choice([0.0, 1.0, 0.5, -1.0, math.nan, math.inf, 300.0, 2.0])
    # against the scalar exactly, in float64: docs/API.md, the row of dt_eq_scalar: "an integer tensor
    # against a fraction or a value beyond its range compares in float64 (PyTorch: float32)"
    c.run(op + "_scalar", [a], lambda A, p: getattr(lib, "dt_" + op + "_scalar")(p[0], sv),
          lambda ts: tf(a.double(), sv), note="s=%r" % sv)


def f_cast(c):
    lib = c.lib.c
    kinds = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8,
             torch.bool]
    da, db = c.R.choice(kinds), c.R.choice(kinds)
    s = c.rshape(allow0=True)
    if da.is_floating_point:
        a = c.values(s, da, special=0.2, scale=c.R.choice([1, 100, 1e5]))
        if not db.is_floating_point and db != torch.bool:
            # non-finite values and values beyond the integer's range convert as C's undefined
            # behaviour does in PyTorch: left out
            a = torch.where(torch.isfinite(a), a, torch.zeros_like(a))
            if db in (torch.int32, torch.uint8):
                a = a.double().clamp(-2e9, 2e9).to(da)
    else:
        a = torch.randint(-300, 300, s).to(da)
    c.run("cast", [a], lambda A, p: lib.dt_cast(p[0], DT_OF[db]), lambda ts: a.to(db),
        grad=[0] if (da.is_floating_point and db.is_floating_point and torch.isfinite(a).all()) else [],
        note="%s->%s" % (da, db))


def f_inplace(c):
    lib = c.lib.c
    op = c.R.choice(["add_", "sub_", "mul_", "div_"])
    dtype = c.R.choice(FLOATS + [torch.int32, torch.int64])
    if op == "div_" and not dtype.is_floating_point:
        dtype = torch.float32
    sa = c.rshape()
    sb = [d_ if c.R.random() < 0.6 else 1 for d_ in sa]
    if c.R.random() < 0.3:
        sb = sb[c.R.randint(0, len(sb)):]
    if c.R.random() < 0.05:
        sb = [2] + sb  # would make a larger
    def mk(s):
        return c.values(s, dtype) if dtype.is_floating_point else torch.randint(-20, 20, s).to(dtype)
    a, b = mk(sa), mk(sb)
    tf = {"add_": torch.add, "sub_": torch.sub, "mul_": torch.mul, "div_": torch.div}[op]
    def dtfn(A, p):
        if getattr(lib, "dt_" + op)(p[0], p[1]) != 0:
            return None
        return lib.dt_retain(p[0])
    def ref(ts):
        r = ts[0].clone()
        getattr(r, op)(ts[1])
        return r
    c.run(op, [a, b], dtfn, ref)


def f_dropout(c):
    """Dropout's result is random: checked is that each element is 0 or x / (1 - p), and that
    the gradient is the output gradient through the same mask and scale."""
    lib = c.lib.c
    dtype = c.fdt()
    s = c.rshape(allow0=True)
    x = c.values(s, dtype)
    p = c.R.choice([0.0, 1.0, 0.3, 0.5, 0.9])
    tr = c.R.randint(0, 1)
    note = "p=%r training=%d" % (p, tr)
    c.count()
    A = c.arena()
    try:
        px = A.t(x, True)
        y = A(lib.dt_f_dropout(px, p, tr))
        if not y:
            return c.record("dropout", [x], note, "refused: " + c.lib.error())
        yt = c.to_torch(y)
        xd, yd = x.double(), yt.double()
        if not tr or p == 0:
            ok = torch.equal(yd, xd)
        elif p == 1:
            ok = bool((yd == 0).all())
        else:
            kept = yd != 0
            ok = tolcmp(yt[kept], (xd * (1.0 / (1 - p)))[kept], dtype) is None
        if not ok:
            return c.record("dropout", [x], note, "values", yt, x)
        if not yt.numel():
            return None
        g = c.values(list(yt.shape), dtype, scale=1.0)
        if lib.dt_autograd_backward(y, A.t(g)) != 0:
            return c.record("dropout", [x], note, "backward failed: " + c.lib.error())
        gp = lib.dt_grad(px)
        gx = c.to_torch(gp).double() if gp else torch.zeros(s, dtype=torch.float64)
        if not tr or p == 0:
            mask, scale = torch.ones(s, dtype=torch.bool), 1.0
        elif p == 1:
            mask, scale = torch.zeros(s, dtype=torch.bool), 1.0
        else:
            mask, scale = yd != 0, 1.0 / (1.0 - p)
        expg = torch.where(mask, g.double() * scale, torch.zeros_like(xd))
        m = tolcmp(gx, expg, dtype)
        # where x is 0 the mask cannot be read from the output
        if m and not (tr and 0 < p < 1 and (xd == 0).any()):
            return c.record("dropout", [x], note, "gradient " + m, gx, expg)
        return None
    finally:
        A.free()


def f_scalar_int(c):
    lib = c.lib.c
    op = c.R.choice(["add_scalar", "mul_scalar", "rsub_scalar"])
    dtype = c.R.choice([torch.int32, torch.int64, torch.uint8, torch.bool, torch.float16, torch.bfloat16, torch.float32])
    s = c.rshape(allow0=True)
    if dtype == torch.bool:
        x = torch.rand(s) < 0.5
    elif dtype.is_floating_point:
        x = c.values(s, dtype)
    else:
        x = torch.randint(0 if dtype == torch.uint8 else -100, 256 if dtype == torch.uint8 else 100, s).to(dtype)
    sv = c.R.choice([2.0, -3.0, 0.5, 0.0, 1e10, 300.0, -1.25, 2.0 ** 40])
    pv = int(sv) if sv == int(sv) and abs(sv) <= 2 ** 53 else sv
    f = {"add_scalar": lambda t: t + pv, "mul_scalar": lambda t: t * pv, "rsub_scalar": lambda t: pv - t}[op]

    def ref(ts):
        if dtype in (torch.float16, torch.bfloat16):
            # the scalar stays float32 and the result is rounded once (docs/API.md, "Half precision":
            # "A scalar operand ... stays a float32 value on every device"; PyTorch's CPU rounds it
            # to the half dtype first)
            return f(x.float()).to(dtype)
        return f(x)
    c.run(op + "_int", [x], lambda A, p: getattr(lib, "dt_" + op)(p[0], sv), ref, note="s=%r %s" % (sv, dtype))


def f_selfop(c):
    lib = c.lib.c
    dtype = c.fdt()
    s = c.rshape()
    x = c.values(s, dtype)
    op = c.R.choice(["add", "sub", "mul", "div", "matmul"])
    if op == "matmul":
        n = c.R.randint(1, 5)
        x = c.values([n, n], dtype)
    if op == "div":
        x = x.abs() + 0.5
    tf = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "matmul": torch.matmul}[op]
    c.run("self_" + op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0], p[0]), lambda ts: tf(ts[0], ts[0]), grad=[0])


def _ulps_equal(got, ref):
    """Bit equality of two half tensors, NaN equal to NaN (its payload aside)."""
    g, r = got.float(), ref.float()
    both_nan = torch.isnan(g) & torch.isnan(r)
    return bool(((g == r) | both_nan).all()) and torch.equal(torch.signbit(g) | both_nan,
                                                            torch.signbit(r) | both_nan)


def _optim_cmp(got, ref, dtype, scale_extra):
    """None when devtensor's parameter (or gradient) matches PyTorch's after the same steps.
    Float32 and float64 within the dtype's tolerance; float16 and bfloat16 bit for bit where
    the parameter has fewer than 32 elements (docs/API.md, Half precision: the optimizers round
    "as PyTorch 1.13's single-tensor loops ... match them bit for bit (PyTorch's vector loops,
    for 32 elements and more, fuse some of those roundings: they may differ from it by an ulp
    there)"), else within the half tolerance."""
    if tuple(got.shape) != tuple(ref.shape):
        return "shape %s, PyTorch's %s" % (tuple(got.shape), tuple(ref.shape))
    if dtype in (torch.float16, torch.bfloat16) and ref.numel() < 32:
        if _ulps_equal(got, ref):
            return None
        g, r = got.float().flatten(), ref.float().flatten()
        bad = ~((g == r) & (torch.signbit(g) == torch.signbit(r))) & ~(torch.isnan(g) & torch.isnan(r))
        k = bad.nonzero()[0].item()
        return "not bit for bit at flat index %d: %r, PyTorch's %r" % (k, g[k].item(), r[k].item())
    return tolcmp(got, ref, dtype, scale_extra)


def f_optim(c):
    """A few steps of dt_sgd_tensors / dt_adam_tensors / dt_adamw_tensors (and
    dt_clip_grad_norm_ before some of them) on random parameters and gradients, against
    torch.optim (foreach=False) on copies of the same parameters in the same dtype. A parameter
    without a gradient at a step (None in PyTorch, NULL here) is skipped by both."""
    lib = c.lib.c
    R = c.R
    kind = R.choice(["sgd", "adam", "adamw", "clip"])
    dtype = c.fdt((5, 4, 2, 2))
    if kind in ("adam", "adamw") and dtype == torch.float16:
        # PyTorch 1.13 has no float16 addcmul_ on the CPU (docs/API.md, Half precision): no reference
        dtype = torch.bfloat16
    nparam = R.randint(1, 3)
    shapes = [c.rshape(R.randint(0, 3), allow0=True) for _ in range(nparam)]
    params = [c.values(s, dtype, scale=R.choice([1, 0.1, 10])) for s in shapes]
    steps = R.randint(1, 4)
    sp = 0.05 if R.random() < 0.1 else 0
    # the gradients of each step (None: no gradient for that parameter at that step)
    grads = [[None if R.random() < 0.1 else c.values(s, dtype, special=sp, scale=R.choice([1, 1e-3, 10]))
              for s in shapes] for _ in range(steps)]
    lr = R.choice([0.1, 0.01, 1.0, 0.0, 1e-3])
    wd = R.choice([0.0, 0.0, 0.01, 0.1])
    clip = R.random() < 0.3 or kind == "clip"
    max_norm = R.choice([1.0, 0.5, 10.0, 1e-3, 100.0])
    bad = R.random() < 0.03  # an argument PyTorch refuses: both must refuse
    if kind in ("sgd", "clip"):
        mom = R.choice([0.0, 0.0, 0.9, 0.5, 1.0])
        if bad:
            lr = -0.1
        hp = dict(lr=lr, momentum=mom, weight_decay=wd)
        note = "sgd lr=%g momentum=%g wd=%g" % (lr, mom, wd)
        make_dt = lambda arr, n: lib.dt_sgd_tensors(arr, n, lr, mom, wd)
        make_ref = lambda ps: torch.optim.SGD(ps, foreach=False, **hp)
    else:
        b1 = R.choice([0.9, 0.0, 0.5, 0.99])
        b2 = R.choice([0.999, 0.9, 0.0, 0.5])
        eps = R.choice([1e-8, 1e-3, 0.0, 1e-6])
        if bad:
            b1 = R.choice([1.0, -0.1])
        hp = dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
        note = "%s lr=%g betas=(%g,%g) eps=%g wd=%g" % (kind, lr, b1, b2, eps, wd)
        f = lib.dt_adam_tensors if kind == "adam" else lib.dt_adamw_tensors
        make_dt = lambda arr, n: f(arr, n, lr, b1, b2, eps, wd)
        T = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
        make_ref = lambda ps: T(ps, foreach=False, amsgrad=False, **hp)
    if clip:
        note += " clip max_norm=%g" % max_norm
    note += " %s steps=%d shapes=%s" % (str(dtype).replace("torch.", ""), steps, shapes)
    op = kind if kind != "clip" else "clip_grad_norm_"
    inputs = params + [g for st in grads for g in st if g is not None]
    c.count()
    # PyTorch
    terr = None
    tps = [p.clone().requires_grad_(True) for p in params]
    ref_hist = []   # per step: (clip totals, parameters after the step)
    try:
        opt = make_ref(tps)
        for st in grads:
            for tp, g in zip(tps, st):
                tp.grad = None if g is None else g.clone()
            total = None
            if clip:
                with_grad = [tp for tp in tps if tp.grad is not None]
                total = torch.nn.utils.clip_grad_norm_(with_grad, max_norm).item() if with_grad else 0.0
            clipped = [None if tp.grad is None else tp.grad.detach().clone() for tp in tps]
            if kind != "clip":
                opt.step()
            ref_hist.append((total, clipped, [tp.detach().clone() for tp in tps]))
    except Exception as e:  # PyTorch refuses (an argument, or no kernel for the dtype)
        terr = str(e).split("\n")[0][:150]
    A = c.arena()
    o = None
    try:
        lib.dt_clear_error()
        ps = [A.t(p, True) for p in params]
        arr = (C.c_void_p * nparam)(*ps)
        o = make_dt(arr, nparam)
        derr = None if o else c.lib.error()
        if terr is not None and derr is not None:
            c.report.both_refuse[c.family] += 1
            return None
        if terr is not None:
            if not bad and "not implemented" in terr:
                return None  # PyTorch's CPU has no kernel for this dtype: nothing to compare with
            return c.record(op, inputs, note, "PyTorch refuses (%s) but devtensor gives a result" % terr)
        if derr is not None:
            return c.record(op, inputs, note, "devtensor refuses (%s) but PyTorch gives a result" % derr)
        for k, (st, (total, clipped, after)) in enumerate(zip(grads, ref_hist)):
            for p, g in zip(ps, st):
                lib.dt_zero_grad_(p)
                if g is not None and lib.dt_autograd_backward(p, A.t(g)) != 0:
                    return c.record(op, inputs, note, "setting a gradient failed: " + c.lib.error())
            if clip:
                tot = C.c_double(-1.0)
                if lib.dt_clip_grad_norm_(arr, nparam, max_norm, C.byref(tot)) != 0:
                    return c.record(op, inputs, note, "dt_clip_grad_norm_ failed: " + c.lib.error())
                m = _optim_cmp(torch.tensor([tot.value], dtype=torch.float64), torch.tensor([total], dtype=torch.float64),
                               dtype if dtype in (torch.float16, torch.bfloat16) else torch.float32, 1.0)
                if m:
                    return c.record(op, inputs, note, "step %d: total norm %s" % (k, m),
                                    torch.tensor(tot.value), torch.tensor(total))
                for j, (p, cg) in enumerate(zip(ps, clipped)):
                    gp = lib.dt_grad(p)
                    if cg is None or not gp:
                        if (cg is None) != (not gp):
                            return c.record(op, inputs, note, "step %d: gradient %d present on one side only" % (k, j))
                        continue
                    gt = c.to_torch(gp)
                    m = _optim_cmp(gt, cg, dtype, 1.0)
                    if m:
                        return c.record(op, inputs, note, "step %d: clipped gradient %d %s" % (k, j, m), gt, cg)
            if kind == "clip":
                continue
            if lib.dt_optimizer_step(o) != 0:
                return c.record(op, inputs, note, "step %d failed: %s" % (k, c.lib.error()))
            for j, (p, r) in enumerate(zip(ps, after)):
                if not c.lib.on_device(p):
                    return c.record(op, inputs, note, "parameter %d left %s" % (j, c.lib.device_name))
                got = c.to_torch(p)
                if got.dtype != r.dtype:
                    return c.record(op, inputs, note, "parameter %d's dtype %s, PyTorch's %s" % (j, got.dtype, r.dtype))
                # Adam divides by sqrt(v) + eps: an ulp of v's difference moves the step by lr times it
                m = _optim_cmp(got, r, dtype, 4.0 * max(1.0, lr) * (k + 1))
                if m:
                    return c.record(op, inputs, note, "step %d: parameter %d %s" % (k, j, m), got, r)
        return None
    finally:
        if o:
            lib.dt_optimizer_free(o)
        A.free()


def f_layers(c):
    """The functional forms the other families leave out: the losses' plain (mean) forms, the
    explicit gradients dt_cross_entropy_grad and dt_mse_loss_grad, dt_f_conv2d and the pooling
    functions with square arguments, and the public backward functions of convolution and
    pooling against PyTorch's autograd."""
    lib = c.lib.c
    R = c.R
    dtype = c.fdt((5, 4, 1, 1))
    op = R.choice(["mse_loss", "l1_loss", "bce_with_logits", "nll_loss", "smooth_l1_loss", "cross_entropy_grad",
                   "mse_loss_grad", "conv2d", "conv2d_backward", "max_pool2d", "max_pool2d_backward", "avg_pool2d",
                   "avg_pool2d_backward", "adaptive_avg_pool2d_backward"])
    if op in ("nll_loss", "cross_entropy_grad"):
        n, nc = R.randint(0, 5), R.randint(1, 6)
        x = c.values([n, nc], dtype, special=0.1 if R.random() < 0.2 else 0)
        t = torch.randint(0, nc, [n])
        if op == "nll_loss":
            x = F.log_softmax(x.double(), 1).to(dtype)
            c.run(op, [x, t], lambda A, p: lib.dt_nll_loss(p[0], p[1]), lambda ts: F.nll_loss(ts[0], ts[1]), grad=[0])
        else:
            def ref(ts):
                xx = ts[0].detach().clone().requires_grad_(True)
                return torch.autograd.grad(F.cross_entropy(xx, ts[1]), xx)[0]
            c.run(op, [x, t], lambda A, p: lib.dt_cross_entropy_grad(p[0], p[1]), ref)
        return
    if op in ("mse_loss", "l1_loss", "bce_with_logits", "smooth_l1_loss", "mse_loss_grad"):
        s = c.rshape(allow0=True)
        x, y = c.values(s, dtype), c.values(s, dtype)
        if op == "bce_with_logits":
            y = torch.rand(s).to(dtype)
            c.run(op, [x, y], lambda A, p: lib.dt_bce_with_logits(p[0], p[1]),
                  lambda ts: F.binary_cross_entropy_with_logits(ts[0], ts[1]), grad=[0, 1])
        elif op == "smooth_l1_loss":
            beta = R.choice([1.0, 0.5, 2.0, 0.0])
            # beta 0: l1, its gradient 0 where d is 0 (docs/API.md, the row of dt_smooth_l1_loss)
            c.run(op, [x, y], lambda A, p: lib.dt_smooth_l1_loss(p[0], p[1], beta),
                  lambda ts: F.l1_loss(ts[0], ts[1]) if beta == 0 else F.smooth_l1_loss(ts[0], ts[1], beta=beta),
                  grad=[0, 1], note="beta=%r" % beta)
        elif op == "mse_loss_grad":
            c.run(op, [x, y], lambda A, p: lib.dt_mse_loss_grad(p[0], p[1]),
                  lambda ts: 2 * (ts[0] - ts[1]) / max(1, ts[0].numel()) if ts[0].numel() else ts[0] * 1)
        else:
            tf = F.mse_loss if op == "mse_loss" else F.l1_loss
            c.run(op, [x, y], lambda A, p: getattr(lib, "dt_" + op)(p[0], p[1]), lambda ts: tf(ts[0], ts[1]),
                  grad=[0, 1])
        return
    if op.startswith("conv2d"):
        ch, oc = R.randint(1, 3), R.randint(1, 3)
        k, st, pd = R.randint(1, 3), R.randint(1, 3), R.randint(0, 2)
        n = R.choice([0, 1, 2])
        h, w = R.randint(1, 8), R.randint(1, 8)
        if c.big:
            h, w = R.randint(1, 30), R.randint(1, 30)
        x, wt, b = c.values([n, ch, h, w], dtype), c.values([oc, ch, k, k], dtype), c.values([oc], dtype)
        bias = R.random() < 0.7
        note = "k=%d s=%d p=%d" % (k, st, pd)
        sc = (ch * k * k) ** 0.5
        if op == "conv2d":
            ins = [x, wt] + ([b] if bias else [])
            c.run(op, ins, lambda A, p: lib.dt_f_conv2d(p[0], p[1], p[2] if bias else None, st, pd),
                  lambda ts: F.conv2d(ts[0], ts[1], ts[2] if bias else None, st, pd), grad=list(range(len(ins))),
                  scale_extra=sc, note=note)
            return
        oh, ow = (h + 2 * pd - k) // st + 1, (w + 2 * pd - k) // st + 1
        if oh < 1 or ow < 1:
            return
        gy = c.values([n, oc, oh, ow], dtype, scale=1.0)
        which = R.randint(0, 2)  # grad_input, grad_weight, grad_bias

        def dtfn(A, p):
            outs = [C.c_void_p(), C.c_void_p(), C.c_void_p()]
            if lib.dt_f_conv2d_backward(p[0], p[1], p[2], st, st, pd, pd, 1, 1, 1,
                                        *[C.byref(o) if k_ == which else None for k_, o in enumerate(outs)]) != 0:
                return None
            return outs[which].value

        def ref(ts):
            xx = ts[1].detach().clone().requires_grad_(True)
            ww = ts[2].detach().clone().requires_grad_(True)
            bb = torch.zeros([oc], dtype=xx.dtype, requires_grad=True)
            y = F.conv2d(xx, ww, bb, st, pd)
            return torch.autograd.grad(y, [xx, ww, bb][which], ts[0])[0]
        c.run(op, [gy, x, wt], dtfn, ref, scale_extra=sc * max(1, n * oh * ow) ** 0.5,
              note=note + " grad=%s" % ["input", "weight", "bias"][which])
        return
    n, ch = R.choice([0, 1, 2]), R.randint(1, 3)
    h, w = R.randint(1, 9), R.randint(1, 9)
    if c.big:
        h, w = R.randint(1, 60), R.randint(1, 60)
    sp = 0.05 if R.random() < 0.3 else 0
    x = c.values([n, ch, h, w], dtype, special=sp, ties=R.random() < 0.4)
    grad = [0] if sp == 0 else []
    if op == "adaptive_avg_pool2d_backward":
        oh, ow = R.randint(1, 10), R.randint(1, 10)
        gy = c.values([n, ch, oh, ow], dtype, scale=1.0)

        def ref(ts):
            xx = ts[1].detach().clone().requires_grad_(True)
            return torch.autograd.grad(F.adaptive_avg_pool2d(xx, (oh, ow)), xx, ts[0])[0]
        c.run(op, [gy, x], lambda A, p: lib.dt_f_adaptive_avg_pool2d_backward(p[0], p[1]), ref,
              note="out=%d,%d" % (oh, ow))
        return
    k = R.randint(1, 4)
    st = R.randint(0, 3)  # 0: the kernel size (PyTorch's default)
    pd = R.randint(0, k // 2)
    s_ = st or k
    note = "k=%d s=%d p=%d" % (k, st, pd)
    tf = F.max_pool2d if op.startswith("max") else F.avg_pool2d
    if op in ("max_pool2d", "avg_pool2d"):
        c.run(op, [x], lambda A, p: getattr(lib, "dt_f_" + op)(p[0], k, st, pd), lambda ts: tf(ts[0], k, s_, pd),
              grad=grad, note=note)
        return
    oh, ow = (h + 2 * pd - k) // s_ + 1, (w + 2 * pd - k) // s_ + 1
    if oh < 1 or ow < 1:
        return
    gy = c.values([n, ch, oh, ow], dtype, scale=1.0)
    if op == "avg_pool2d_backward":
        def ref(ts):
            xx = ts[1].detach().clone().requires_grad_(True)
            return torch.autograd.grad(F.avg_pool2d(xx, k, s_, pd), xx, ts[0])[0]
        c.run(op, [gy, x], lambda A, p: lib.dt_f_avg_pool2d_backward(p[0], p[1], k, k, st, st, pd, pd), ref,
              note=note)
        return
    # max_pool2d_backward with the indices of devtensor's forward (checked against PyTorch's by the
    # pool family): the gradient each output sends to the position its index names
    idx = F.max_pool2d(x.double(), k, s_, pd, return_indices=True)[1]

    def ref(ts):
        xx = ts[1].detach().clone().requires_grad_(True)
        return torch.autograd.grad(F.max_pool2d(xx, k, s_, pd), xx, ts[0])[0]
    c.run(op, [gy, x, idx], lambda A, p: lib.dt_f_max_pool2d_backward(p[0], p[1], p[2], k, k, st, st, pd, pd), ref,
          note=note)


def f_autocast(c):
    """dt_matmul and dt_f_conv2d_ex under dt_set_autocast(where, DT_BF16) on float32 or float64
    inputs: the inputs cast to bfloat16, a bfloat16 result accumulated in float32, gradients
    back in the inputs' dtype through the recorded casts (docs/API.md, "Autocast and the
    gradient scaler"), against torch.autocast's bfloat16 on the same ops: PyTorch in float64 on
    the inputs rounded to bfloat16, compared within bfloat16's tolerance."""
    lib = c.lib.c
    R = c.R
    dtype = R.choice([torch.float32, torch.float64])
    where = 0 if c.lib.device.type == 0 else 1
    bf = lambda t: t.to(torch.bfloat16).double()
    if R.random() < 0.6:
        k = R.choice([1, 2, 3, 5, 17])
        m, n = R.randint(1, 6), R.randint(1, 6)
        if c.big:
            k, m, n = R.randint(1, 200), R.randint(1, 100), R.randint(1, 100)
        a, b = c.values([m, k], dtype), c.values([k, n], dtype)
        op, ins, sc = "matmul", [a, b], max(1, k) ** 0.5
        dtcall = lambda A, p: lib.dt_matmul(p[0], p[1])
        ref = lambda ts: torch.matmul(bf(ts[0]), bf(ts[1]))
        note = "%dx%dx%d" % (m, k, n)
    else:
        ch, oc, kk = R.randint(1, 3), R.randint(1, 3), R.randint(1, 3)
        x, w = c.values([R.randint(1, 2), ch, R.randint(kk, 7), R.randint(kk, 7)], dtype), c.values([oc, ch, kk, kk], dtype)
        bias = c.values([oc], dtype)
        op, ins, sc = "conv2d", [x, w, bias], (ch * kk * kk) ** 0.5
        dtcall = lambda A, p: lib.dt_f_conv2d_ex(p[0], p[1], p[2], 1, 1, 0, 0, 1, 1, 1)
        ref = lambda ts: F.conv2d(bf(ts[0]), bf(ts[1]), bf(ts[2]))
        note = "k=%d" % kk

    def dtfn(A, p):
        prev = lib.dt_set_autocast(where, DT_OF[torch.bfloat16])
        try:
            return dtcall(A, p)
        finally:
            lib.dt_set_autocast(where, prev)

    def check(got):
        return None if got.dtype == torch.bfloat16 else "dtype %s, torch.autocast's bfloat16" % got.dtype
    # the result rounded to bfloat16 once, and its gradient through a bfloat16 product: scaled
    c.run(op, ins, dtfn, ref, grad=list(range(len(ins))), exact_dtype=False, scale_extra=4 * sc,
          note=note + " " + str(dtype).replace("torch.", ""), check=check)


# ---------------------------------------------------------------- modules

# torch.nn's modules for a layer spec (float64 for the reference; `lazy` for the text before the
# first forward)
def _torch_layer(sp, lazy=False):
    k = sp["k"]
    nn = torch.nn
    if k == "seq":
        return nn.Sequential(*[_torch_layer(s, lazy) for s in sp["ch"]])
    if k == "linear":
        return nn.LazyLinear(sp["out"]) if lazy and sp["lazy"] else nn.Linear(sp["in"], sp["out"])
    if k == "conv":
        args = dict(kernel_size=(sp["kh"], sp["kw"]), stride=(sp["sh"], sp["sw"]), padding=(sp["ph"], sp["pw"]),
                    groups=sp["g"], bias=bool(sp["bias"]))
        if lazy and sp["lazy"]:
            return nn.LazyConv2d(sp["out"], **args)
        return nn.Conv2d(sp["in"], sp["out"], **args)
    if k in ("maxpool", "avgpool"):
        T = nn.MaxPool2d if k == "maxpool" else nn.AvgPool2d
        return T(sp["ks"], sp["s"] or sp["ks"], sp["p"])
    if k == "adaptive":
        return nn.AdaptiveAvgPool2d((sp["oh"], sp["ow"]))
    if k == "bn":
        if lazy and sp["lazy"]:
            return nn.LazyBatchNorm2d() if sp["nd"] == 4 else nn.LazyBatchNorm1d()
        return (nn.BatchNorm2d if sp["nd"] == 4 else nn.BatchNorm1d)(sp["c"])
    if k == "ln":
        return nn.LayerNorm(sp["d"])
    if k == "emb":
        return nn.Embedding(sp["num"], sp["dim"])
    if k == "dropout":
        return nn.Dropout(sp["p"])
    return {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "gelu": nn.GELU, "flatten": nn.Flatten}[k]()


def _dt_layer(lib, sp):
    """devtensor's module for a layer spec (None when it is refused)."""
    k = sp["k"]
    if k == "seq":
        m = lib.dt_sequential()
        for s in sp["ch"]:
            ch = _dt_layer(lib, s)
            if not ch or lib.dt_sequential_add(m, ch) != 0:  # takes ch, also on failure
                lib.dt_module_free(m)
                return None
        return m
    if k == "linear":
        return lib.dt_linear(0 if sp["lazy"] else sp["in"], sp["out"])
    if k == "conv":
        return lib.dt_conv2d_ex(0 if sp["lazy"] else sp["in"], sp["out"], sp["kh"], sp["kw"], sp["sh"], sp["sw"], sp["ph"],
                                sp["pw"], sp["g"], sp["bias"])
    if k == "maxpool":
        return lib.dt_max_pool2d(sp["ks"], sp["s"], sp["p"])
    if k == "avgpool":
        return lib.dt_avg_pool2d(sp["ks"], sp["s"], sp["p"])
    if k == "adaptive":
        return lib.dt_adaptive_avg_pool2d(sp["oh"], sp["ow"])
    if k == "bn":
        return lib.dt_batch_norm(0 if sp["lazy"] else sp["c"])
    if k == "ln":
        return lib.dt_layer_norm(sp["d"])
    if k == "emb":
        return lib.dt_embedding(sp["num"], sp["dim"])
    if k == "dropout":
        return lib.dt_dropout(sp["p"])
    return {"relu": lib.dt_relu_layer, "sigmoid": lib.dt_sigmoid_layer, "tanh": lib.dt_tanh_layer,
            "gelu": lib.dt_gelu_layer, "flatten": lib.dt_flatten_layer}[k]()


def _mod_chain(c, shape, training, depth=0, nmax=4, flat=None):
    """A random chain of layers that takes `shape`: (specs, the output's shape, tolerance factor).
    A layer norm over a last dim of 1 gives its bias, x - mean being 0 in exact arithmetic: an
    ulp either side of 0 on one side and 0 on the other, which a ReLU or a max pooling after it
    (`flat`) would turn into different gradients, both right. None follows it, nor a batch norm
    in training, which on a channel of one value divides rounding errors by sqrt(eps). So too a
    layer norm over rows of one value repeated: an adaptive pooling from a width of 1 makes them
    (`same_rows`, until a layer mixes the last dim), and the input's gradient is then a sum that
    cancels to 0 of terms divided by sqrt(eps) twice, rounding's to the last bit."""
    R = c.R
    specs, sc = [], 1.0
    flat = flat if flat is not None else [False]
    same_rows = False
    for _ in range(R.randint(1, nmax)):
        nd = len(shape)
        if depth < 2 and R.random() < 0.15:
            ch, shape, f = _mod_chain(c, shape, training, depth + 1, 3, flat)
            specs.append({"k": "seq", "ch": ch})
            sc *= f
            continue
        kinds = ["relu", "sigmoid", "tanh", "gelu", "dropout", "bn", "ln", "flatten"]
        kinds += {4: ["conv", "conv", "maxpool", "avgpool", "adaptive"], 3: [], 2: ["linear", "linear", "linear"]}[nd]
        if flat[0]:
            kinds = [k_ for k_ in kinds if k_ not in ("relu", "maxpool") and not (k_ == "bn" and training)]
        k = R.choice(kinds)
        sp = {"k": k, "lazy": R.random() < 0.2}
        if k == "linear":
            sp["in"], sp["out"] = shape[1], R.randint(1, 6)
            shape = [shape[0], sp["out"]]
            sc *= max(1, sp["in"]) ** 0.5
            same_rows = False
        elif k == "conv":
            n_, ch_, h, w = shape
            g = R.choice([d_ for d_ in (1, 1, 2, 3) if ch_ % d_ == 0])
            sp.update(**{"in": ch_, "out": g * R.randint(1, 3), "g": g, "ph": R.randint(0, 1), "pw": R.randint(0, 1),
                         "sh": R.randint(1, 2), "sw": R.randint(1, 2), "bias": int(R.random() < 0.7)})
            sp["kh"] = R.randint(1, min(3, h + 2 * sp["ph"]))
            sp["kw"] = R.randint(1, min(3, w + 2 * sp["pw"]))
            shape = [n_, sp["out"], (h + 2 * sp["ph"] - sp["kh"]) // sp["sh"] + 1,
                     (w + 2 * sp["pw"] - sp["kw"]) // sp["sw"] + 1]
            sc *= (ch_ // g * sp["kh"] * sp["kw"]) ** 0.5
            same_rows = same_rows and sp["kw"] == 1 and sp["pw"] == 0
        elif k in ("maxpool", "avgpool"):
            n_, ch_, h, w = shape
            ks = R.randint(1, min(3, h, w))
            sp.update(ks=ks, s=R.randint(0, 2), p=R.randint(0, ks // 2))
            s_ = sp["s"] or ks
            shape = [n_, ch_, (h + 2 * sp["p"] - ks) // s_ + 1, (w + 2 * sp["p"] - ks) // s_ + 1]
        elif k == "adaptive":
            sp.update(oh=R.randint(1, 4), ow=R.randint(1, 4))
            same_rows = same_rows or shape[3] == 1
            shape = shape[:2] + [sp["oh"], sp["ow"]]
        elif k == "bn":
            sp.update(c=shape[1], nd=nd)
            sc *= 10
        elif k == "ln":
            sp["d"] = shape[-1]
            sc *= 10
            flat[0] = flat[0] or sp["d"] == 1 or same_rows
        elif k == "flatten":
            shape = [shape[0], int(math.prod(shape[1:]))]
            same_rows = False
        elif k == "dropout":
            # training mode drops at random (the dropout family checks that): here p 0 and 1 only
            sp["p"] = R.choice([0.0, 1.0]) if training else R.choice([0.0, 0.1, 0.25, 0.5, 1.0])
        specs.append(sp)
        if 0 in shape[1:] or math.prod(shape) > 20000:
            break
    return specs, shape, sc


def _bn_paths(specs, prefix=""):
    """(state_dict prefix, spec) of every batch norm in a chain, as a Sequential names them."""
    out = []
    for i, sp in enumerate(specs):
        if sp["k"] == "seq":
            out += _bn_paths(sp["ch"], "%s%d." % (prefix, i))
        elif sp["k"] == "bn":
            out.append(("%s%d." % (prefix, i), sp))
    return out


def _find(sp, kinds):
    """The layers of these kinds in a spec and the Sequentials under it."""
    if sp["k"] == "seq":
        return [f for s in sp["ch"] for f in _find(s, kinds)]
    return [sp] if sp["k"] in kinds else []


def _only_linear_relu(specs):
    return all(sp["k"] in ("linear", "relu") or (sp["k"] == "seq" and _only_linear_relu(sp["ch"])) for sp in specs)


def _mod_text(lib, m):
    n = lib.dt_module_snprint(None, 0, m)
    if n < 0:
        return None
    buf = C.create_string_buffer(n + 1)
    lib.dt_module_snprint(buf, n + 1, m)
    return buf.value.decode()


def f_modules(c):
    """The layer modules through dt_forward, alone or in Sequentials (nested too), against
    torch.nn's modules holding the same parameters (devtensor's, copied after its first forward,
    or random ones set into both): the output of 1 to 3 forwards in training or evaluation mode,
    the gradients of the input and, after them, of every parameter (through dt_autograd_backward
    of the output with a random gradient or of an MSE loss, or through dt_backward for networks of
    Linear and ReLU layers), batch norm's running statistics and num_batches_tracked, the
    state_dict names, and dt_module_snprint against repr(module) before and after the first
    forward."""
    lib = c.lib.c
    R = c.R
    dtype = c.fdt((6, 5, 1, 1))
    training = R.random() < 0.5
    lib.dt_manual_seed(R.randrange(1 << 62))
    big = 3 if c.big else 1
    kind = R.choice(["img", "img", "vec", "vec", "seq3", "idx"])
    n = R.choice([0, 1, 2, 2, 3, 4]) if R.random() < 0.1 else R.choice([1, 2, 3, 4, 5])
    if kind == "img":
        shape = [n, R.randint(1, 4), R.randint(1, 6 * big), R.randint(1, 6 * big)]
    elif kind == "vec":
        shape = [n, R.randint(1, 8 * big)]
    elif kind == "seq3":
        shape = [n, R.randint(1, 4), R.randint(1, 5 * big)]
    else:
        shape = [n] + ([R.randint(1, 4)] if R.random() < 0.5 else [])
    pre = []
    if kind == "idx":
        emb = {"k": "emb", "num": R.randint(1, 8), "dim": R.randint(1, 5), "lazy": False}
        pre = [emb]
        xshape = list(shape)
        shape = shape + [emb["dim"]]
    # an embedding's rows repeat: a batch norm's channel may hold one value, the same 0 in exact
    # arithmetic as a layer norm over one value (_mod_chain)
    specs, oshape, sc = _mod_chain(c, shape, training, flat=[kind == "idx"])
    specs = pre + specs
    if R.random() < 0.3 and len(specs) == 1 and specs[0]["k"] != "seq":
        top = specs[0]      # a layer alone, not in a Sequential
    else:
        top = {"k": "seq", "ch": specs}
    bns = _bn_paths([top] if top["k"] != "seq" else specs)
    if top["k"] != "seq":
        bns = [("", sp) for _, sp in bns]
    # Values that are equal only in exact arithmetic (the centred middle of a row of small integers
    # in layer or batch norm: 0 on one side, an ulp away on the other) meet a ReLU or a max pooling
    # at its kink, where either gradient is right: with a norm layer, normal values only.
    centred = bool(_find(top, ("bn", "ln")))

    def vals(s, scale):
        if centred:
            return (torch.randn(s, dtype=torch.float64) * scale).to(dtype)
        return c.values(s, dtype, scale=scale)
    if kind == "idx":
        x_steps = [torch.randint(0, pre[0]["num"], xshape) for _ in range(3)]
    else:
        x_steps = [vals(shape, R.choice([1, 1, 3, 0.1])) for _ in range(3)]
    steps = R.randint(1, 3)
    how = R.choice(["grad", "grad", "mse"])
    if _only_linear_relu([top]) and dtype in (torch.float32, torch.float64) and R.random() < 0.5:
        how = R.choice(["dt_backward", "dt_backward_params"])
    randomize = R.random() < 0.5
    half = dtype in (torch.float16, torch.bfloat16)
    if half:
        sc *= 4 * (len(specs) + 1)
    note = "%s %s %s steps=%d %s%s net=%s" % (str(dtype).replace("torch.", ""), "train" if training else "eval", how,
                                                steps, kind, " random-params" if randomize else "", _spec_str(top))
    inputs = [x_steps[0]]
    A = c.arena()
    m = None
    try:
        m = _dt_layer(lib, top)
        if not m:
            c.count()
            return c.record("build", inputs, note, "devtensor refuses the network: " + c.lib.error())
        # the text before the first forward: lazy layers as PyTorch's; batch norm, which serves
        # BatchNorm1d and BatchNorm2d, prints as "BatchNorm(" before its first input (docs/API.md,
        # nn modules: "as `BatchNorm(64, ...)` before any")
        c.count()
        want = re.sub(r"BatchNorm[12]d\(", "BatchNorm(", repr(_torch_layer(top, lazy=True)))
        got_text = _mod_text(lib, m)
        if got_text != want:
            return c.record("repr", inputs, note, "text before the first forward:\n%s\nPyTorch's:\n%s" % (got_text, want))
        if dtype != torch.float32 and lib.dt_module_to_dtype(m, DT_OF[dtype]) != 0:
            return c.record("build", inputs, note, "dt_module_to_dtype: " + c.lib.error())
        if lib.dt_module_to(m, c.lib.device) != 0:
            return c.record("build", inputs, note, "dt_module_to: " + c.lib.error())
        lib.dt_module_train(m, int(training))
        tm = _torch_layer(top).double()
        tm.train(training)
        tnamed = dict(tm.named_parameters())
        # random parameters and running statistics, set into both (the lazy layers' are made later)
        init_buf = {}
        if randomize:
            prev = lib.dt_set_grad_enabled(0)
            try:
                for i in range(lib.dt_module_num_params(m)):
                    p = lib.dt_module_param(m, i, None)
                    if not p:
                        continue  # a lazy layer's, made at the first forward
                    t = c.to_torch(p)
                    v = vals(list(t.shape), 1.0)
                    if lib.dt_copy_(p, A.t(v)) != 0:
                        return c.record("build", inputs, note, "dt_copy_ into a parameter: " + c.lib.error())
                for path, sp in bns:
                    if sp["lazy"]:
                        continue
                    rm = vals([sp["c"]], 1.0)
                    rv = (torch.rand([sp["c"]]) + 0.5).to(dtype)
                    for name, v in (("running_mean", rm), ("running_var", rv)):
                        b = lib.dt_module_get_buffer(m, (path + name).encode())
                        if not b or lib.dt_copy_(b, A.t(v)) != 0:
                            return c.record("build", inputs, note, "setting %s%s: %s" % (path, name, c.lib.error()))
                        init_buf[path + name] = v
            finally:
                lib.dt_set_grad_enabled(prev)
        loaded = False
        for step in range(steps):
            x = x_steps[step]
            inputs = x_steps[:step + 1]
            isf = x.is_floating_point()
            c.count()
            lib.dt_clear_error()
            px = A.t(x, isf and how in ("grad", "mse"))
            try:
                out = A(lib.dt_forward(m, px))
                derr = None if out else c.lib.error()
                got = c.to_torch(out) if out else None
            except DTError as e:
                out, derr, got = None, str(e), None
            if not loaded and derr is None:
                # PyTorch's module holds devtensor's parameters (rounded to the dtype) in float64
                names = []
                with torch.no_grad():
                    for i in range(lib.dt_module_num_params(m)):
                        nm = C.c_char_p()
                        p = lib.dt_module_param(m, i, C.byref(nm))
                        names.append(nm.value.decode())
                        if names[-1] in tnamed:
                            tnamed[names[-1]].copy_(c.to_torch(p).double())
                    for k_, v in init_buf.items():
                        tm.get_buffer(k_).copy_(v.double())
                if names != list(tnamed):
                    return c.record("state_dict", inputs, note, "parameter names %s, PyTorch's %s" % (names, list(tnamed)))
                loaded = True
            tx = x.double().requires_grad_(True) if isf else x.clone()
            terr = None
            try:
                ref = tm(tx)
            except Exception as e:
                terr = str(e).split("\n")[0][:150]
            if terr is not None and derr is not None:
                c.report.both_refuse[c.family] += 1
                return None
            if terr is not None:
                return c.record("forward", inputs, note, "step %d: PyTorch refuses (%s) but devtensor gives a result"
                                % (step, terr))
            if derr is not None:
                return c.record("forward", inputs, note, "step %d: devtensor refuses (%s) but PyTorch gives a result"
                                % (step, derr))
            if not c.lib.on_device(out):
                return c.record("forward", inputs, note, "the result is not on %s" % c.lib.device_name)
            if got.dtype != dtype:
                return c.record("forward", inputs, note, "step %d: dtype %s, the module's %s" % (step, got.dtype, dtype))
            msg = tolcmp(got, ref, dtype, sc)
            if msg:
                return c.record("forward", inputs, note, "step %d: %s" % (step, msg), got, ref)
            # backward
            g = c.values(list(got.shape), dtype, scale=1.0)
            gx = None
            if how == "mse":
                y = c.values(list(got.shape), dtype, scale=1.0)
                loss = A(lib.dt_mse_loss(out, A.t(y)))
                ok = loss and lib.dt_autograd_backward(loss, None) == 0
                tl = F.mse_loss(ref, y.double())
                if tl.requires_grad:
                    tl.backward()
            elif how == "grad":
                ok = lib.dt_autograd_backward(out, A.t(g)) == 0
                if ref.requires_grad:
                    ref.backward(g.double())
            elif how == "dt_backward":
                gx = A(lib.dt_backward(m, A.t(g)))
                ok = bool(gx)
                ref.backward(g.double())
            else:
                ok = lib.dt_backward_params(m, A.t(g)) == 0
                ref.backward(g.double())
            if not ok:
                return c.record("backward", inputs, note, "step %d: %s failed: %s" % (step, how, c.lib.error()))
            gsc = sc * max(1.0, g.abs().max().item() if g.numel() else 1.0)
            if half:
                gsc *= max([1.0] + [t.abs().max().item() for t in (x,) if t.numel() and t.is_floating_point()])
            if isf and how != "dt_backward_params":
                gp = gx if how == "dt_backward" else lib.dt_grad(px)
                want = tx.grad if tx.grad is not None else torch.zeros_like(tx)
                gt = c.to_torch(gp) if gp else torch.zeros(x.shape, dtype=dtype)
                msg = tolcmp(gt, want, dtype, gsc)
                if msg:
                    return c.record("input_grad", inputs, note, "step %d: %s" % (step, msg), gt, want)
            # running statistics after each step
            for path, sp in bns:
                for name in ("running_mean", "running_var", "num_batches_tracked"):
                    b = lib.dt_module_get_buffer(m, (path + name).encode())
                    if not b:
                        return c.record("buffers", inputs, note, "no buffer %s%s" % (path, name))
                    bt, rb = c.to_torch(b), tm.get_buffer(path + name)
                    msg = tolcmp(bt, rb, dtype, 10) if bt.is_floating_point() else tolcmp(bt, rb, torch.float64)
                    if msg:
                        return c.record("buffers", inputs, note, "step %d: %s%s %s" % (step, path, name, msg), bt, rb)
        # the parameters' gradients, summed over the steps
        c.count()
        for i, (name, tp) in enumerate(tnamed.items()):
            gp = lib.dt_module_grad(m, i)
            gt = c.to_torch(gp) if gp else torch.zeros(tp.shape, dtype=dtype)
            want = tp.grad if tp.grad is not None else torch.zeros_like(tp)
            gsc = sc * steps * max([1.0] + [t.abs().max().item() for t in x_steps if t.numel() and t.is_floating_point()])
            if gt.dtype != dtype:
                return c.record("param_grad", inputs, note, "%s's gradient is %s" % (name, gt.dtype))
            msg = tolcmp(gt, want, dtype, gsc)
            if msg:
                return c.record("param_grad", inputs, note, "%s: %s" % (name, msg), gt, want)
        # the text after the first forward: lazy layers sized, batch norm as the 1d or 2d one
        c.count()
        want = repr(_torch_layer(top))
        got_text = _mod_text(lib, m)
        if got_text != want:
            return c.record("repr", inputs, note, "text after the forward:\n%s\nPyTorch's:\n%s" % (got_text, want))
        return None
    finally:
        A.free()
        if m:
            lib.dt_module_free(m)


def _spec_str(sp):
    k = sp["k"]
    if k == "seq":
        return "Seq(%s)" % ",".join(_spec_str(s) for s in sp["ch"])
    args = {kk: v for kk, v in sp.items() if kk not in ("k", "ch") and not (kk == "lazy" and not v)}
    return "%s%s" % (k, "" if not args else "(%s)" % " ".join("%s=%s" % kv for kv in args.items()))


def _ks_d(a, b):
    """The two-sample Kolmogorov-Smirnov statistic of two 1-d float64 tensors."""
    a, b = torch.sort(a)[0], torch.sort(b)[0]
    allv = torch.cat([a, b])
    fa = torch.searchsorted(a, allv, right=True).double() / len(a)
    fb = torch.searchsorted(b, allv, right=True).double() / len(b)
    return (fa - fb).abs().max().item()


def f_init(c):
    """PyTorch's default initialisation, in distribution: a new Linear (LazyLinear), Conv2d
    (LazyConv2d, groups), Embedding, BatchNorm and LayerNorm's parameters and buffers against
    the rules of torch.nn's reset_parameters: every uniform value within its bound (computed as
    torch.nn.init computes it), mean and variance within 6 standard errors of the distribution's,
    the largest value near the bound, and a two-sample Kolmogorov-Smirnov test against the values
    of PyTorch's own module of the same sizes (at 1e-6); batch and layer norm's exactly."""
    lib = c.lib.c
    R = c.R
    nn = torch.nn
    lib.dt_manual_seed(R.randrange(1 << 62))
    kind = R.choice(["linear", "linear", "conv", "conv", "embedding", "bn", "ln"])
    lazy = R.random() < 0.3
    big = c.big
    if kind == "linear":
        fin, fout = R.randint(1, 300 if big else 40), R.randint(1, 300 if big else 40)
        spec = {"k": "linear", "in": fin, "out": fout, "lazy": lazy}
        xshape = [2, fin]
    elif kind == "conv":
        g = R.choice([1, 1, 2, 3])
        ch, oc = g * R.randint(1, 6 if big else 3), g * R.randint(1, 12 if big else 4)
        kh, kw = R.randint(1, 5), R.randint(1, 5)
        spec = {"k": "conv", "in": ch, "out": oc, "kh": kh, "kw": kw, "sh": 1, "sw": 1, "ph": 0, "pw": 0, "g": g,
                "bias": int(R.random() < 0.8), "lazy": lazy}
        xshape = [1, ch, kh, kw]
    elif kind == "embedding":
        spec = {"k": "emb", "num": R.randint(1, 200 if big else 30), "dim": R.randint(1, 50 if big else 8), "lazy": False}
    elif kind == "bn":
        spec = {"k": "bn", "c": R.randint(1, 20), "nd": 2, "lazy": lazy}
        xshape = [3, spec["c"]]
    else:
        spec = {"k": "ln", "d": R.randint(1, 20), "lazy": False}
    note = _spec_str(spec)
    tm = _torch_layer(spec)
    A = c.arena()
    m = _dt_layer(lib, spec)
    try:
        c.count()
        if not m:
            return c.record("init", [], note, "refused: " + c.lib.error())
        if lib.dt_module_to(m, c.lib.device) != 0:
            return c.record("init", [], note, "dt_module_to: " + c.lib.error())
        if spec["lazy"]:  # made at the first forward, on the input's device
            lib.dt_module_train(m, 0)  # the first forward leaves batch norm's statistics as they are
            y = A(lib.dt_forward(m, A.t(torch.zeros(xshape))))
            if not y:
                return c.record("init", [], note, "the lazy layer's first forward: " + c.lib.error())
        tparams = dict(tm.named_parameters())
        for i in range(lib.dt_module_num_params(m)):
            nm = C.c_char_p()
            p = lib.dt_module_param(m, i, C.byref(nm))
            name = nm.value.decode() if nm.value else "?"
            if not p or name not in tparams:
                return c.record("init", [], note, "parameter %d (%s): not PyTorch's %s" % (i, name, list(tparams)))
            v = c.to_torch(p)
            tv = tparams[name].detach()
            if tuple(v.shape) != tuple(tv.shape) or v.dtype != torch.float32:
                return c.record("init", [], note, "%s: %s %s, PyTorch's %s float32" % (name, v.dtype, list(v.shape),
                                                                                    list(tv.shape)))
            v, tv = v.double().flatten(), tv.double().flatten()
            n = v.numel()
            if kind in ("bn", "ln"):
                if not torch.equal(v, tv):
                    return c.record("init", [], note, "%s: %s, PyTorch's %s" % (name, v.tolist(), tv.tolist()))
                continue
            if kind == "embedding":  # normal_(weight): N(0, 1)
                mean, var = 0.0, 1.0
                m_tol, v_tol = 6 / n ** 0.5, 6 * (2.0 / n) ** 0.5
                bound = None
            else:
                w = tparams["weight"]
                fan_in, _ = nn.init._calculate_fan_in_and_fan_out(w)
                if name == "weight":  # kaiming_uniform_(weight, a=sqrt(5))
                    bound = math.sqrt(3.0) * nn.init.calculate_gain("leaky_relu", math.sqrt(5)) / math.sqrt(fan_in)
                else:
                    bound = 1 / math.sqrt(fan_in)
                mean, var = 0.0, bound * bound / 3
                m_tol, v_tol = 6 * bound / (3 * n) ** 0.5, 6 * bound * bound * (4.0 / 45 / n) ** 0.5
                # float32 values of bound * u: within half an ulp of float32 beyond the bound
                lim = bound * (1 + 2.0 ** -23)
                if (v.abs() > lim).any():
                    k = (v.abs() > lim).nonzero()[0].item()
                    return c.record("init", [], note, "%s[%d] = %r beyond PyTorch's bound %r" % (name, k, v[k].item(), bound))
                if n >= 20 and v.abs().max().item() < bound * (1 - 25.0 / n):
                    return c.record("init", [], note, "%s: largest magnitude %r, far below PyTorch's bound %r"
                                    % (name, v.abs().max().item(), bound))
            if n < 20:
                continue
            if abs(v.mean().item() - mean) > m_tol:
                return c.record("init", [], note, "%s: mean %r of %d values, expected %r within %r"
                                % (name, v.mean().item(), n, mean, m_tol))
            sv = ((v - mean) ** 2).mean().item()
            if abs(sv - var) > v_tol:
                return c.record("init", [], note, "%s: variance %r of %d values, expected %r within %r"
                                % (name, sv, n, var, v_tol))
            d = _ks_d(v, tv)
            crit = 3.0 * ((2.0 * n) / (n * n)) ** 0.5   # alpha about 1e-7
            if d > crit:
                return c.record("init", [], note, "%s: Kolmogorov-Smirnov distance %.4f to PyTorch's values (limit %.4f)"
                                % (name, d, crit))
        if kind == "bn":  # the buffers
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                b = lib.dt_module_get_buffer(m, name.encode())
                if not b:
                    return c.record("init", [], note, "no buffer " + name)
                bt = c.to_torch(b)
                want = tm.get_buffer(name)
                if bt.dtype != (torch.int64 if name == "num_batches_tracked" else torch.float32) or \
                        not torch.equal(bt.double(), want.double()):
                    return c.record("init", [], note, "%s: %s %s, PyTorch's %s" % (name, bt.dtype, bt.tolist(), want.tolist()))
        return None
    finally:
        A.free()
        if m:
            lib.dt_module_free(m)


def f_argreduce(c):
    """dt_argmax, dt_argmin, dt_max_dim, dt_min_dim, dt_max and dt_min on values full of ties,
    NaN, +-inf and +-0, with empty dims, against PyTorch's exact indices (on the inputs as they
    are: float64 holds every value exactly and in order), the sign of a zero max or min, and the
    gradients (to the index for the dim forms, split between ties for the others)."""
    lib = c.lib.c
    R = c.R
    dtype = R.choices(FLOATS + [torch.int32, torch.int64, torch.uint8, torch.bool], (5, 4, 2, 2, 1, 1, 1, 1))[0]
    s = c.rshape(R.randint(0, 4), allow0=R.random() < 0.3)
    style = R.choice(["ties", "ties", "nan", "inf", "zeros", "normal", "rows"])
    if not dtype.is_floating_point:
        x = (torch.rand(s) < 0.5) if dtype == torch.bool else torch.randint(0, 4, s).to(dtype)
    elif style == "ties":
        x = torch.randint(-2, 3, s).to(dtype)
    elif style == "zeros":
        x = torch.where(torch.rand(s) < 0.5, torch.tensor(0.0), torch.tensor(-0.0))
        x = torch.where(torch.rand(s) < 0.2, torch.randint(-1, 2, s).double(), x.double()).to(dtype)
    elif style in ("nan", "inf"):
        x = torch.randint(-2, 3, s).double()
        sp = torch.tensor([math.nan, math.inf, -math.inf] if style == "nan" else [math.inf, -math.inf],
                          dtype=torch.float64)
        m = torch.rand(s) < R.choice([0.1, 0.3, 0.8])
        x[m] = sp[torch.randint(0, len(sp), s)][m]
        x = x.to(dtype)
    elif style == "rows":  # whole rows of one special value
        x = c.values(s, torch.float64)
        if x.dim() >= 1 and x.numel():
            v = R.choice([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0])
            x[R.randrange(x.shape[0])] = v
        x = x.to(dtype)
    else:
        x = c.values(s, dtype)
    nd = len(s)
    op = R.choice(["argmax", "argmin", "max_dim", "min_dim", "max", "min"])
    isf = dtype.is_floating_point
    finite = isf and bool(torch.isfinite(x).all())
    note = "%s %s" % (style, str(dtype).replace("torch.", ""))

    def refuse_int(ts):
        # docs/API.md, Reductions: "The max/min/arg reductions take F32 and F64" (and the half
        # dtypes, Half precision); other dtypes are refused (DT_ERR_DTYPE), where PyTorch takes them
        if not isf:
            raise RuntimeError("integer input: refused by devtensor as documented")

    if op in ("max", "min"):
        tf = torch.max if op == "max" else torch.min

        def ref(ts):
            refuse_int(ts)
            return tf(ts[0])
        c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0]), ref, grad=[0] if finite else [], note=note)
        return
    dim = R.randint(-max(nd, 1), max(nd, 1) - 1)
    note += " dim=%d" % dim
    if op in ("argmax", "argmin"):
        tf = torch.argmax if op == "argmax" else torch.argmin

        def ref(ts):
            refuse_int(ts)
            return tf(ts[0], dim)
        c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0], dim), ref, note=note)
        return
    tf = torch.max if op == "max_dim" else torch.min

    def ref(ts):
        refuse_int(ts)
        return tf(ts[0], dim).values

    def zero_sign(got):
        """The value at PyTorch's index, so a zero's sign too."""
        r = tf(x.double(), dim).values
        z = (r == 0) & (got.double() == 0)
        if z.any() and not torch.equal(torch.signbit(got.double()[z]), torch.signbit(r[z])):
            k = (z & (torch.signbit(got.double()) != torch.signbit(r))).nonzero()[0].tolist()
            return "sign of zero at %s: %r, PyTorch's %r" % (k, got[tuple(k)].item(), r[tuple(k)].item())
        return None
    c.run(op, [x], lambda A, p: getattr(lib, "dt_" + op)(p[0], dim), ref, grad=[0] if finite else [], note=note,
          check=zero_sign)


def f_print(c):
    """dt_snprint against str(tensor): PyTorch's text byte for byte (docs/API.md, Printing) for
    every dtype, shapes from 0-d to 4-d, empty ones, more than 1000 elements (summarised), values
    of every scale, integers, NaN and +-inf. On a GPU the text of the tensor names its device
    and its CPU copy's text is compared."""
    lib = c.lib.c
    R = c.R
    dtype = R.choice(FLOATS + FLOATS + [torch.int32, torch.int64, torch.uint8, torch.bool])
    nd = R.choice([0, 1, 1, 2, 2, 3, 4])
    s = c.rshape(nd, allow0=True)
    if R.random() < 0.15:
        s = [R.randint(1, 40) for _ in range(R.randint(1, 3))]
        s[0] = R.randint(1, 1200 // max(1, int(math.prod(s[1:]))) + 5)
    if R.random() < 0.1:
        s = [R.randint(20, 400)]
    if dtype == torch.bool:
        x = torch.rand(s) < 0.5
    elif dtype == torch.uint8:
        x = torch.randint(0, 256, s).to(dtype)
    elif not dtype.is_floating_point:
        big = R.choice([10, 1000, 10 ** 6, 2 ** 31 - 1])
        x = torch.randint(-big, big, s).to(dtype)
        if dtype == torch.int64 and R.random() < 0.2:
            x = x * R.choice([10 ** 9, 2 ** 32])
    else:
        style = R.choice(["normal", "scale", "ints", "special", "mixed"])
        if style == "normal":
            x = c.values(s, dtype)
        elif style == "scale":
            x = torch.randn(s, dtype=torch.float64) * 10.0 ** R.randint(-9, 9)
        elif style == "ints":
            x = torch.randint(-1000, 1000, s).double() * R.choice([1, 1, 1000, 1e-3])
        elif style == "special":
            x = c.values(s, torch.float64, special=0.3)
        else:
            x = torch.randn(s, dtype=torch.float64) * torch.pow(10.0, torch.randint(-6, 7, s).double())
        x = x.to(dtype)
    note = "%s %s" % (str(dtype).replace("torch.", ""), list(s))
    c.count()
    A = c.arena()
    try:
        p = A.t(x)
        on_gpu = c.lib.device.type != 0
        n = lib.dt_snprint(None, 0, p)
        if n < 0:
            return c.record("print", [x], note, "refused: " + c.lib.error())
        buf = C.create_string_buffer(n + 1)
        lib.dt_snprint(buf, n + 1, p)
        text = buf.value.decode()
        want = str(x)  # PyTorch's default print options
        if on_gpu:
            dev = "device='%s'" % c.lib.device_name
            if dev not in text:
                return c.record("print", [x], note, "the text does not name %s:\n%s" % (dev, text))
            cpu = Device()
            cpu.type, cpu.index = 0, 0
            q = A(lib.dt_to(p, cpu))
            n = lib.dt_snprint(None, 0, q)
            buf = C.create_string_buffer(n + 1)
            lib.dt_snprint(buf, n + 1, q)
            text = buf.value.decode()
        if text != want:
            return c.record("print", [x], note, "text:\n%s\nPyTorch's:\n%s" % (text, want))
        return None
    finally:
        A.free()


def f_fill(c):
    """The in-place and creation functions no other family calls: dt_fill_ and dt_full,
    dt_arange, dt_add_scalar_ and dt_mul_scalar_, dt_axpy_, dt_copy_ (between devices too) and
    dt_scatter_add_, against PyTorch's fill_, full, arange, add_, mul_, add_(x, alpha=),
    copy_ and scatter_add_ on the same dtype."""
    lib = c.lib.c
    R = c.R
    op = R.choice(["fill_", "full", "arange", "add_scalar_", "mul_scalar_", "axpy_", "copy_", "scatter_add_"])
    kinds = FLOATS + [torch.int32, torch.int64, torch.uint8, torch.bool]
    s = c.rshape(allow0=True)
    if op == "full":
        v = R.choice([0.0, 1.5, -2.25, 1e30, math.inf, math.nan, 3.0, 1e-40])
        c.run(op, [], lambda A, p: lib.dt_full(shape(s), v, c.lib.device),
              lambda ts: torch.full(s, v, dtype=torch.float32), note="v=%r %s" % (v, s))
        return
    if op == "arange":
        dtype = R.choice([torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8, torch.float16,
                          torch.bfloat16])
        start = R.choice([0, 0, 1, -3, 0.5, 2.5, -1.25, 10])
        step = R.choice([1, 1, 2, -1, 0.5, 0.1, 3, -0.25, 0.3])
        end = start + step * R.choice([0, 1, 2, 5, 7.5, 10, 33, 0.5, -1])
        if dtype == torch.uint8:
            start, end = abs(start), abs(end)

        def ref(ts):
            if not dtype.is_floating_point and any(v != int(v) for v in (start, end, step)):
                # docs/API.md, the row of dt_arange: ceil((end - start) / step) values start + i step
                # computed in double and converted, also for an integer dtype given fractions (PyTorch
                # truncates those first)
                if (end - start) * step < 0:
                    raise RuntimeError("end on the wrong side of start")
                n_ = math.ceil((end - start) / step)
                return torch.tensor([start + i * step for i in range(n_)], dtype=torch.float64).to(dtype)
            return torch.arange(start, end, step, dtype=dtype)
        c.run(op, [], lambda A, p: lib.dt_arange(float(start), float(end), float(step), DT_OF[dtype], c.lib.device), ref,
              note="%r..%r step %r %s" % (start, end, step, str(dtype).replace("torch.", "")))
        return
    if op == "scatter_add_":
        dtype = R.choice([torch.float32, torch.float64, torch.int32, torch.int64])
        s = c.rshape(R.randint(1, 3))
        x = c.values(s, dtype) if dtype.is_floating_point else torch.randint(-9, 9, s).to(dtype)
        dim = R.randint(-len(s), len(s) - 1)
        si = [R.randint(0, d_) for d_ in s]
        si[dim] = R.randint(0, 5)
        idx = torch.randint(0, s[dim], si)
        src = c.values(si, dtype) if dtype.is_floating_point else torch.randint(-9, 9, si).to(dtype)

        def dtfn(A, p):
            if lib.dt_scatter_add_(p[0], dim, p[1], p[2]) != 0:
                return None
            return lib.dt_retain(p[0])
        c.run(op, [x, idx, src], dtfn, lambda ts: ts[0].clone().scatter_add_(dim, ts[1], ts[2]), note="dim=%d" % dim)
        return
    if op == "fill_":
        dtype = R.choice(kinds)
        v = R.choice([0.0, 1.0, -1.0, 2.5, -2.5, 255.9, 300.0, 1e5, math.nan, math.inf, -0.0, 1e-3, 65519.0, 70000.0])
        if not dtype.is_floating_point and dtype != torch.bool and not (abs(v) < 2 ** 31):
            v = 7.0  # non-finite and out-of-range values convert as C's undefined behaviour in PyTorch
        x = torch.zeros(s, dtype=dtype)

        def dtfn(A, p):
            if lib.dt_fill_(p[0], v) != 0:
                return None
            return lib.dt_retain(p[0])

        def ref(ts):
            if dtype == torch.uint8:
                # docs/API.md, Comparisons and casts: floats to uint8 "toward zero through int32,
                # the low 8 bits", as PyTorch's CPU conversion of a tensor (its fill_ wraps a Python
                # int itself but refuses some floats): the cast of the float64 value
                return torch.full(s, v, dtype=torch.float64).to(dtype)
            if dtype in (torch.float16, torch.bfloat16) and math.isfinite(v) and abs(v) > torch.finfo(dtype).max:
                # docs/API.md, the row of dt_fill_: v converted as dt_cast converts (inf beyond the
                # half dtype's range), where PyTorch's fill_ refuses it
                return torch.full(s, v, dtype=torch.float64).to(dtype)
            return torch.empty(s, dtype=dtype).fill_(v)
        c.run(op, [x], dtfn, ref, note="v=%r %s" % (v, str(dtype).replace("torch.", "")))
        return
    if op in ("add_scalar_", "mul_scalar_"):
        dtype = R.choice(FLOATS + [torch.int32, torch.int64, torch.uint8])
        x = c.values(s, dtype) if dtype.is_floating_point else torch.randint(-100 if dtype != torch.uint8 else 0, 100,
                                                                             s).to(dtype)
        sv = R.choice([2.0, -3.0, 0.5, 0.0, -1.25, 300.0, 2.0 ** 40, 1e10, math.inf])
        pv = int(sv) if math.isfinite(sv) and sv == int(sv) and abs(sv) <= 2 ** 53 else sv
        tf = (lambda t: t.add_(pv)) if op == "add_scalar_" else (lambda t: t.mul_(pv))

        def dtfn(A, p):
            if getattr(lib, "dt_" + op)(p[0], sv) != 0:
                return None
            return lib.dt_retain(p[0])

        def ref(ts):
            if dtype == torch.uint8:
                # docs/API.md, "What each dtype takes": the in-place scalar forms take I32 and I64
                # (whole numbers), not U8 (DT_ERR_DTYPE), where PyTorch's add_ and mul_ take it
                raise RuntimeError("uint8: refused by devtensor as documented")
            if dtype in (torch.float16, torch.bfloat16):
                # the scalar stays float32 and the result is rounded once (docs/API.md, "Half
                # precision"; PyTorch's CPU rounds the scalar to the half dtype first)
                return tf(x.float()).to(dtype)
            return tf(x.clone())
        c.run(op, [x], dtfn, ref, note="s=%r %s" % (sv, str(dtype).replace("torch.", "")))
        return
    if op == "axpy_":
        dtype = c.fdt()
        y, x = c.values(s, dtype), c.values(s, dtype)
        alpha = R.choice([1.0, -1.0, 0.5, 0.0, 3.0, -0.01])

        def dtfn(A, p):
            if lib.dt_axpy_(p[0], alpha, p[1]) != 0:
                return None
            return lib.dt_retain(p[0])
        c.run(op, [y, x], dtfn, lambda ts: ts[0].clone().add_(ts[1], alpha=alpha), note="alpha=%r" % alpha)
        return
    # copy_: src on the device or on the CPU, dst on the other or the same
    dtype = R.choice(kinds)
    x = c.values(s, dtype, special=0.1) if dtype.is_floating_point else torch.randint(0, 100, s).to(dtype)
    dst0 = torch.zeros(s, dtype=dtype)
    where = R.choice(["dev-dev", "cpu-dev", "dev-cpu"])

    def dtfn(A, p):
        cpu = Device()
        cpu.type, cpu.index = 0, 0
        src = p[0] if where != "cpu-dev" else A(lib.dt_to(p[0], cpu))
        dst = p[1] if where != "dev-cpu" else A(lib.dt_to(p[1], cpu))
        if lib.dt_copy_(dst, src) != 0:
            return None
        return lib.dt_to(dst, c.lib.device)

    def check(got):
        if dtype.is_floating_point and not torch.equal(torch.signbit(got.double()), torch.signbit(x.double())):
            return "the sign of a zero or NaN changed"
        return None
    c.run(op, [x, dst0], dtfn, lambda ts: x.clone(), note=where, check=check)


# name: (function, weight in the draw)
FAMILIES = {
    "binary": (f_binary, 3), "unary": (f_unary, 3), "matmul": (f_matmul, 2), "reduce": (f_reduce, 3),
    "softmax": (f_softmax, 2), "loss": (f_loss, 2), "conv": (f_conv, 2), "pool": (f_pool, 3), "norm": (f_norm, 2),
    "index": (f_index, 4), "compare": (f_compare, 2), "cast": (f_cast, 2), "inplace": (f_inplace, 2),
    "dropout": (f_dropout, 1), "scalar_int": (f_scalar_int, 2), "selfop": (f_selfop, 1), "optim": (f_optim, 2),
    "layers": (f_layers, 3), "autocast": (f_autocast, 1), "modules": (f_modules, 4),
    "init": (f_init, 1), "argreduce": (f_argreduce, 2), "print": (f_print, 1), "fill": (f_fill, 2),
}
