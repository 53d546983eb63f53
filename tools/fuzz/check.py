"""One fuzz case: its random source, input generators, and the differential check of
one devtensor call (forward, dtype, device, autograd gradients) against PyTorch."""
import math
import random
from collections import defaultdict

import torch

from dtlib import Arena, DTError, to_torch

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
# (rtol, atol) per dtype; atol is scaled by the reference's magnitude (at least 1)
TOL = {torch.float64: (1e-9, 1e-9), torch.float32: (2e-4, 2e-5), torch.float16: (1e-2, 2e-3),
       torch.bfloat16: (3e-2, 1e-2)}
# inputs up to this many elements are printed in a mismatch's report
PRINT_MAX = 64


class Report:
    """Counts per family and the mismatches kept for printing."""

    def __init__(self):
        self.cases = defaultdict(int)
        self.checks = defaultdict(int)
        self.both_refuse = defaultdict(int)
        self.mismatches = defaultdict(int)
        self.harness = defaultdict(int)
        self.kept = []          # (family, case index, op, note, message, inputs, got, ref)


class Case:
    """Case number `index` of a run: everything random in it comes from (seed, index), so
    `--seed S --case I` replays it alone."""

    def __init__(self, lib, report, seed, index, big):
        self.lib = lib
        self.report = report
        self.index = index
        self.R = random.Random("%d/%d" % (seed, index))
        torch.manual_seed(self.R.randrange(1 << 62))
        self.big_allowed = big
        self.big = big and self.R.random() < 0.5
        self.family = None

    # ---------------------------------------------------------------- inputs

    def fdt(self, weights=(5, 4, 1, 1)):
        return self.R.choices(FLOATS, weights)[0]

    def rshape(self, nd=None, maxd=5, allow0=False):
        R = self.R
        if self.big:
            maxd = R.choice([5, 9, 17, 40, 70])
        if nd is None:
            nd = R.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        s = []
        for _ in range(nd):
            r = R.random()
            if allow0 and r < 0.05:
                s.append(0)
            elif r < 0.3:
                s.append(1)
            else:
                s.append(R.randint(1, maxd))
        return s

    def values(self, s, dtype, special=0.0, ties=False, scale=None):
        """Random values of shape s: normal of a random scale, or small integers (ties);
        `special` the share of NaN, +-inf and +-0 among them."""
        R = self.R
        if special and R.random() < 0.15:
            t = torch.full(s, -math.inf, dtype=torch.float64)
            m = torch.rand(s) < 0.2
            t[m] = torch.randint(-3, 4, s).double()[m]
            if R.random() < 0.3:
                t[torch.rand(s) < 0.1] = math.nan
            return t.to(dtype)
        if ties or R.random() < 0.15:
            t = torch.randint(-3, 4, s).double()
        else:
            t = torch.randn(s, dtype=torch.float64) * (scale if scale is not None else R.choice([1, 1, 1, 3, 0.1, 30]))
        if special > 0 and t.numel():
            m = torch.rand(s) < special
            sp = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0], dtype=torch.float64)
            t[m] = sp[torch.randint(0, 5, s)][m]
        return t.to(dtype)

    def bcast_pair(self, nd=None):
        R = self.R
        s = self.rshape(nd)
        a, b = list(s), list(s)
        for k in range(len(s)):
            r = R.random()
            if r < 0.25:
                a[k] = 1
            elif r < 0.5:
                b[k] = 1
        if R.random() < 0.3 and b:
            b = b[R.randint(0, len(b)):]
        if R.random() < 0.5:
            a, b = b, a
        return a, b

    # ---------------------------------------------------------------- checks

    def arena(self):
        return Arena(self.lib)

    def to_torch(self, p):
        return to_torch(self.lib, p)

    def record(self, op, inputs, note, msg, got=None, ref=None):
        rep = self.report
        rep.mismatches[self.family] += 1
        small = sum(t.numel() for t in inputs) <= PRINT_MAX
        rep.kept.append((self.family, self.index, op, note, msg, [t.clone() for t in inputs] if small else
                         [(tuple(t.shape), t.dtype) for t in inputs], got, ref))

    def count(self):
        self.report.checks[self.family] += 1

    def run(self, op, inputs, dtfn, reffn, grad=(), exact_dtype=True, scale_extra=1.0, note="", check=None):
        """inputs: CPU torch tensors of any dtype, copied to the device (those in `grad` requiring
        grad). dtfn(A, ps) -> devtensor result; reffn(ts) -> torch result, ts the inputs in float64
        (integer ones as they are). `check(got)`, where given, returns a further mismatch message."""
        self.count()
        lib = self.lib
        A = self.arena()
        lib.c.dt_clear_error()
        fdtype = next((t.dtype for t in inputs if t.is_floating_point()), None)
        try:
            try:
                ps = [A.t(t, k in grad) for k, t in enumerate(inputs)]
            except DTError as e:
                return self.record(op, inputs, note, "input creation failed: %s" % e)
            ts = []
            for k, t in enumerate(inputs):
                if t.is_floating_point():
                    t2 = t.detach().double().clone()
                    if k in grad:
                        t2.requires_grad_(True)
                    ts.append(t2)
                else:
                    ts.append(t.clone())
            terr = None
            try:
                ref = reffn(ts)
            except Exception as e:  # PyTorch refuses
                terr = str(e).split("\n")[0][:150]
                ref = None
            lib.c.dt_clear_error()
            got = None
            try:
                out = A(dtfn(A, ps))
                derr = None if out else lib.error()
                if out:
                    # on a GPU an index out of range is reported by the next synchronizing call
                    got = self.to_torch(out)
            except DTError as e:
                out, derr = None, str(e)
            if terr is not None and derr is not None:
                self.report.both_refuse[self.family] += 1
                return None
            if terr is not None:
                return self.record(op, inputs, note, "PyTorch refuses (%s) but devtensor gives a result" % terr)
            if derr is not None:
                return self.record(op, inputs, note, "devtensor refuses (%s) but PyTorch gives a result" % derr)
            if not lib.on_device(out):
                return self.record(op, inputs, note, "the result is not on %s" % lib.device_name)
            if isinstance(ref, tuple):
                ref = ref[0]
            m = tolcmp(got, ref, got.dtype if got.is_floating_point() else (fdtype or torch.float64), scale_extra)
            if m:
                return self.record(op, inputs, note, "forward " + m, got, ref)
            if exact_dtype:
                exp_dt = ref.dtype if fdtype is None else expected_dtype(inputs, reffn)
                if exp_dt is not None and exp_dt != got.dtype:
                    return self.record(op, inputs, note, "dtype %s, PyTorch's %s" % (got.dtype, exp_dt))
            if check is not None:
                m = check(got)
                if m:
                    return self.record(op, inputs, note, m, got, ref)
            if grad and got.is_floating_point() and ref.requires_grad:
                return self.check_grad(op, inputs, note, A, ps, ts, out, got, ref, grad, scale_extra)
            return None
        finally:
            A.free()

    def check_grad(self, op, inputs, note, A, ps, ts, out, got, ref, grad, scale_extra):
        lib = self.lib
        g = self.values(list(got.shape), got.dtype, scale=1.0)
        if lib.c.dt_autograd_backward(out, A.t(g)) != 0:
            return self.record(op, inputs, note, "backward failed: " + lib.error())
        grefs = torch.autograd.grad(ref, [ts[k] for k in grad], g.double(), allow_unused=True)
        for k, gr in zip(grad, grefs):
            if gr is None:
                gr = torch.zeros_like(ts[k])
            gp = lib.c.dt_grad(ps[k])
            if not gp:
                if gr.numel() and gr.abs().max().item():
                    return self.record(op, inputs, note, "no gradient for input %d" % k)
                continue
            if not lib.on_device(gp):
                return self.record(op, inputs, note, "input %d's gradient is not on %s" % (k, lib.device_name))
            gt = self.to_torch(gp)
            if gt.dtype != inputs[k].dtype:
                return self.record(op, inputs, note, "gradient %d's dtype %s, the input's %s"
                                   % (k, gt.dtype, inputs[k].dtype))
            gsc = max(1.0, g.abs().max().item() if g.numel() else 1.0)
            low = max([inputs[k].dtype, got.dtype], key=lambda q: torch.finfo(q).eps)
            if low in (torch.float16, torch.bfloat16):
                # half gradients: every intermediate rounded, the error grows with the inputs' size
                gsc *= max([1.0] + [t.abs().max().item() for t in inputs if t.numel() and t.dtype != torch.bool])
                if gr.numel() and gr.abs().max().item() > torch.finfo(low).max / 4:
                    continue
            m = tolcmp(gt, gr, low, scale_extra * gsc)
            if m:
                return self.record(op, inputs, note, "gradient %d %s" % (k, m), gt, gr)
        return None


def expected_dtype(inputs, reffn):
    """The dtype PyTorch gives for the inputs as they are (not in float64)."""
    try:
        with torch.no_grad():
            r = reffn([t.clone() for t in inputs])
        return (r[0] if isinstance(r, tuple) else r).dtype
    except Exception:
        return None


def tolcmp(got, ref, dtype, scale_extra=1.0):
    """None when got (devtensor's result) matches ref (PyTorch's, float64 for floating results)
    within dtype's tolerance; else what differs. Integer and bool results compare exactly."""
    if tuple(got.shape) != tuple(ref.shape):
        return "shape %s, PyTorch's %s" % (tuple(got.shape), tuple(ref.shape))
    if not got.is_floating_point() and not ref.is_floating_point():
        if not torch.equal(got.long(), ref.long()):
            k = (got.long() != ref.long()).nonzero()[0].tolist()
            return "values differ at %s: %s, PyTorch's %s" % (k, got[tuple(k)].item(), ref[tuple(k)].item())
        return None
    g = got.double()
    r = ref.double().detach()
    gn, rn = torch.isnan(g), torch.isnan(r)
    if not torch.equal(gn, rn):
        k = (gn != rn).nonzero()[0].tolist()
        return "NaN differs at %s: %s, PyTorch's %s" % (k, g[tuple(k)].item(), r[tuple(k)].item())
    if dtype != torch.float64:
        # a reference beyond the dtype's range is its rounding (inf)
        r = torch.where(r.abs() > torch.finfo(dtype).max, r.to(dtype).double(), r)
    gi, ri = torch.isinf(g), torch.isinf(r)
    pos = (gi & (g > 0)) != (ri & (r > 0))
    neg = (gi & (g < 0)) != (ri & (r < 0))
    if pos.any() or neg.any():
        if dtype in (torch.float16, torch.bfloat16) and torch.equal(torch.isinf(r.to(dtype).double()), gi):
            pass  # a huge finite value that rounds to inf in the half dtype
        else:
            k = (pos | neg).nonzero()[0].tolist()
            return "inf differs at %s: %s, PyTorch's %s" % (k, g[tuple(k)].item(), r[tuple(k)].item())
    fin = ~rn & ~ri & ~gi
    if (r[fin].abs() > torch.finfo(dtype).max * 0.5).any():
        return None  # near the dtype's range: intermediate steps may overflow
    if fin.any():
        rtol, atol = TOL[dtype]
        sc = max(1.0, r[fin].abs().max().item()) * scale_extra
        diff = (g[fin] - r[fin]).abs()
        bad = diff > atol * sc + rtol * r[fin].abs()
        if bad.any():
            k = bad.nonzero()[0].item()
            return "value %r, PyTorch's %r (largest difference %.3g)" % (g[fin][k].item(), r[fin][k].item(),
                                                                         diff.max().item())
    return None
