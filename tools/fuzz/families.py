"""The op families: each draws one random case and checks it with Case.run."""
import ctypes as C
import math

import torch
import torch.nn.functional as F

from check import FLOATS, tolcmp
from dtlib import DT_OF


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


# name: (function, weight in the draw)
FAMILIES = {
    "binary": (f_binary, 3), "unary": (f_unary, 3), "matmul": (f_matmul, 2), "reduce": (f_reduce, 3),
    "softmax": (f_softmax, 2), "loss": (f_loss, 2), "conv": (f_conv, 2), "pool": (f_pool, 3), "norm": (f_norm, 2),
    "index": (f_index, 4), "compare": (f_compare, 2), "cast": (f_cast, 2), "inplace": (f_inplace, 2),
    "dropout": (f_dropout, 1), "scalar_int": (f_scalar_int, 2), "selfop": (f_selfop, 1), "optim": (f_optim, 2),
    "layers": (f_layers, 3), "autocast": (f_autocast, 1),
}
