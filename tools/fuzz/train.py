#!/usr/bin/env python3
"""End-to-end differential check of training: small networks built from devtensor's modules
(libdevtensor.so through ctypes, on the CPU or cuda:N) trained against the same torch.nn
networks on the CPU. See README.md here.

Each case draws a network (an MLP, a small CNN, an embedding network), a dtype, a loss, an
optimizer with its hyperparameters, gradient clipping and the data; the initial parameters go
from one side to the other through a safetensors file (dt_module_save read by torch, or a file
written from torch's state_dict read by dt_module_load); both train on the same minibatches,
by hand or (devtensor) by dt_trainer_fit; then every parameter and buffer, each step's loss,
and the outputs in evaluation mode are compared, and the trained state is saved and loaded
back on both sides, where it must be exact.

    python3 tools/fuzz/train.py --device cpu --seed 1 --cases 100
    python3 tools/fuzz/train.py --lib build/fuzz-emu/libdevtensor.so --device cuda:1 --seed 2 --cases 50
    python3 tools/fuzz/train.py ... --seed S --case I       (replays case I of seed S alone)

Ends with status 0 when every case agreed, 1 on a mismatch or an error of the checker itself.
"""
import argparse
import ctypes as C
import json
import math
import os
import random
import struct
import sys
import tempfile
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from dtlib import BF16, F16, F32, F64, Device, DTError, Lib, from_torch, to_torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
P, I, D, I64 = C.c_void_p, C.c_int, C.c_double, C.c_int64

_SIGS = [
    ("dt_linear", P, [I64, I64]), ("dt_relu_layer", P, []), ("dt_gelu_layer", P, []), ("dt_tanh_layer", P, []),
    ("dt_sigmoid_layer", P, []), ("dt_sequential", P, []), ("dt_sequential_add", I, [P, P]),
    ("dt_conv2d_ex", P, [I64, I64, I, I, I, I, I, I, I, I]), ("dt_max_pool2d", P, [I, I, I]),
    ("dt_avg_pool2d", P, [I, I, I]), ("dt_adaptive_avg_pool2d", P, [I, I]), ("dt_flatten_layer", P, []),
    ("dt_batch_norm", P, [I64]), ("dt_layer_norm", P, [I64]), ("dt_embedding", P, [I64, I64]),
    ("dt_module_to", I, [P, Device]), ("dt_module_device", Device, [P]), ("dt_module_to_dtype", I, [P, I]), ("dt_forward", P, [P, P]),
    ("dt_module_num_params", I, [P]), ("dt_module_param", P, [P, I, C.POINTER(C.c_char_p)]),
    ("dt_module_grad", P, [P, I]), ("dt_module_free", None, [P]), ("dt_zero_grad", I, [P]),
    ("dt_sgd_step", I, [P, D]), ("dt_module_save", I, [P, C.c_char_p]), ("dt_module_load", I, [P, C.c_char_p]),
    ("dt_module_train", I, [P, I]), ("dt_module_get_buffer", P, [P, C.c_char_p]),
    ("dt_sgd", P, [P, D, D, D]), ("dt_adam", P, [P, D, D, D, D, D]), ("dt_adamw", P, [P, D, D, D, D, D]),
    ("dt_manual_seed", None, [C.c_uint64]), ("dt_randperm", P, [I64, Device]),
    ("dt_trainer_init", I, [P, I, I]), ("dt_trainer_fit", I, [P, P, P, P]), ("dt_trainer_free", None, [P]),
]


class EpochResult(C.Structure):
    _fields_ = [("epoch", I), ("loss", D), ("train_acc", D), ("val_loss", D), ("val_acc", D), ("seconds", D)]


class Trainer(C.Structure):
    """dt_trainer, field for field (devtensor.h)."""
    _fields_ = [("max_epochs", I), ("num_gpus", I), ("gpus", Device * 8), ("device", Device), ("batch_size", I64),
                ("lr", D), ("quiet", I), ("epochs_run", I), ("epoch_loss", D * 64), ("last_loss", D),
                ("loss_fn", I), ("optimizer", P), ("on_epoch", P), ("user", P), ("last", EpochResult),
                ("epochs", EpochResult * 64), ("gradient_clip_val", D), ("autocast", I), ("grad_scaler", P),
                ("cuda_graph", I)]


DT_DTYPE = {torch.float32: F32, torch.float64: F64, torch.float16: F16, torch.bfloat16: BF16}
EPS = {torch.float32: 2.0 ** -23, torch.float64: 2.0 ** -52, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}
# the smallest tolerance, relative to a tensor's largest magnitude (at least 1), per step made.
# float32: about 25 ulp a step, as the CPU's float32 batch norm sums each run of 64 values in
# float (docs/API.md, "Dropout, normalisation, embedding, GELU") where PyTorch's sums in double,
# which a batch of two rows (a gradient that is mostly cancellation) shows
FLOOR = {torch.float32: 3e-6, torch.float64: 1e-13, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
# how many times the reference's own rounding error (measured against its other runs) a
# difference may be. float32: 32, for the same reason as its floor: where a gradient is mostly
# cancellation (a 1x1 convolution into batch norm, whose output does not depend on the weight's
# scale) the float runs' sums lose more than PyTorch's double ones
K_NOISE = {torch.float32: 32.0, torch.float64: 16.0, torch.float16: 8.0, torch.bfloat16: 8.0}
# PyTorch's runs on the rows in other orders, on a mismatch, before calling it one (Case.run)
TIP_RUNS = 8
# PyTorch's runs from initial parameters one rounding away, on a mismatch no row order explains
PERTURB_RUNS = 6


# ------------------------------------------------------------------ safetensors on the torch side

ST_NAME = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
           torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}
ST_DTYPE = {v: k for k, v in ST_NAME.items()}


def st_save(path, tensors):
    """safetensors.torch.save_file(tensors, path) for the dtypes above (the package itself is not
    needed): the header, then each tensor's bytes in order."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = (t.view(torch.int16) if t.dtype in (torch.float16, torch.bfloat16) else t).numpy().tobytes()
        header[name] = {"dtype": ST_NAME[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def st_load(path):
    """safetensors.torch.load_file(path): {name: CPU tensor} in the header's order."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        dt = ST_DTYPE[e["dtype"]]
        a, b = e["data_offsets"]
        raw = bytearray(data[base + a:base + b])
        if dt in (torch.float16, torch.bfloat16):
            t = torch.frombuffer(raw, dtype=torch.int16).view(dt) if raw else torch.empty(0, dtype=dt)
        else:
            t = torch.frombuffer(raw, dtype=dt) if raw else torch.empty(0, dtype=dt)
        out[name] = t.reshape(e["shape"]).clone()
    return out


# ------------------------------------------------------------------ the networks

def draw_net(R):
    """A network as a list of layer specs, the input's shape (without the batch) and kind, and the
    number of outputs."""
    kind = R.choice(["mlp", "mlp", "cnn", "cnn", "emb"])
    L = []
    acts = ["relu", "gelu", "tanh", "sigmoid"]
    if kind == "mlp":
        d = R.randint(2, 12)
        inp = ("float", [d])
        for _ in range(R.randint(1, 3)):
            h = R.randint(2, 16)
            L.append(("linear", d, h))
            if R.random() < 0.25 and h >= 4:  # over 2 features layer norm gives +-1: a sign, no value
                L.append(("ln", h))
            L.append((R.choice(acts),))
            if R.random() < 0.3:  # after the activation: a bias right before batch norm has no gradient
                L.append(("bn", h))
            d = h
        out = R.randint(1, 6)
        L.append(("linear", d, out))
    elif kind == "cnn":
        c, h, w = R.randint(1, 3), R.randint(5, 10), R.randint(5, 10)
        inp = ("float", [c, h, w])
        for _ in range(R.randint(1, 2)):
            g = R.choice([g for g in (1, 2, 3) if c % g == 0])
            oc = g * R.randint(1, 3)
            kh, kw = R.randint(1, 3), R.randint(1, 3)
            sh, sw = R.randint(1, 2), R.randint(1, 2)
            ph, pw = R.randint(0, kh // 2 + 1), R.randint(0, kw // 2 + 1)
            oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
            if oh < 2 or ow < 2:
                sh = sw = 1
                ph, pw = kh // 2, kw // 2
                oh, ow = h + 2 * ph - kh + 1, w + 2 * pw - kw + 1
            bn = R.random() < 0.5
            L.append(("conv", c, oc, kh, kw, sh, sw, ph, pw, g, 0 if bn else 1))
            if bn:
                L.append(("bn", oc))
            L.append((R.choice(acts),))
            c, h, w = oc, oh, ow
            r = R.random()
            if r < 0.6 and min(h, w) >= 2:
                k = R.randint(2, min(3, h, w))
                s = R.choice([0, 1, 2])
                p = R.randint(0, k // 2)
                st = s or k
                nh, nw = (h + 2 * p - k) // st + 1, (w + 2 * p - k) // st + 1
                if nh >= 1 and nw >= 1:
                    L.append(("maxpool" if r < 0.35 else "avgpool", k, s, p))
                    h, w = nh, nw
        if R.random() < 0.6:
            oh, ow = R.randint(1, 3), R.randint(1, 3)
            L.append(("adapt", oh, ow))
            h, w = oh, ow
        L.append(("flatten",))
        out = R.randint(1, 6)
        L.append(("linear", c * h * w, out))
    else:
        num, dim = R.randint(3, 20), R.randint(2, 8)
        seq = R.choice([0, 0, 2, 3])
        inp = ("index", [seq] if seq else [], num)
        L.append(("emb", num, dim))
        if R.random() < 0.4 and dim >= 4:
            L.append(("ln", dim))
        if seq and R.random() < 0.3:
            L.append(("bn", seq))  # BatchNorm1d over (n, seq, dim)
        d = dim
        if seq:
            L.append(("flatten",))
            d = seq * dim
        h = R.randint(2, 12)
        L += [("linear", d, h), (R.choice(acts),)]
        out = R.randint(1, 6)
        L.append(("linear", h, out))
    return kind, L, inp, out


def dt_layer(lib, s, lazy=False):
    """The layer of spec s; lazy: LazyLinear, LazyConv2d (groups 1) and LazyBatchNorm, sized by the
    first forward."""
    k = s[0]
    if k == "linear":
        return lib.dt_linear(0 if lazy else s[1], s[2])
    if k == "conv":
        return lib.dt_conv2d_ex(0 if lazy and s[9] == 1 else s[1], *s[2:])
    if k == "bn":
        return lib.dt_batch_norm(0 if lazy else s[1])
    if k == "ln":
        return lib.dt_layer_norm(s[1])
    if k == "emb":
        return lib.dt_embedding(s[1], s[2])
    if k == "maxpool":
        return lib.dt_max_pool2d(*s[1:])
    if k == "avgpool":
        return lib.dt_avg_pool2d(*s[1:])
    if k == "adapt":
        return lib.dt_adaptive_avg_pool2d(*s[1:])
    if k == "flatten":
        return lib.dt_flatten_layer()
    return {"relu": lib.dt_relu_layer, "gelu": lib.dt_gelu_layer, "tanh": lib.dt_tanh_layer,
            "sigmoid": lib.dt_sigmoid_layer}[k]()


class CastLayerNorm(nn.LayerNorm):
    """nn.LayerNorm as torch.autocast's float32 list runs it (docs/API.md, "Autocast and the gradient
    scaler": dt_f_layer_norm casts half inputs up). PyTorch 1.13's CPU autocast leaves layer_norm
    out of that list and refuses a bfloat16 input with float32 parameters."""

    def forward(self, x):
        if torch.is_autocast_cpu_enabled() and x.dtype != self.weight.dtype:
            x = x.to(self.weight.dtype)
        return super().forward(x)


def torch_net(L, inp, nest=0):
    """The torch.nn network of specs L; nest > 0: its first `nest` layers in a Sequential of their
    own (state_dict names "0.0.weight", ...)."""
    mods = []
    rank = 1 + len(inp[1]) + (1 if inp[0] == "index" else 0)  # with the batch dim
    for s in L:
        k = s[0]
        if k == "linear":
            mods.append(nn.Linear(s[1], s[2]))
        elif k == "conv":
            mods.append(nn.Conv2d(s[1], s[2], (s[3], s[4]), (s[5], s[6]), (s[7], s[8]), groups=s[9], bias=bool(s[10])))
        elif k == "bn":
            mods.append(nn.BatchNorm2d(s[1]) if rank == 4 else nn.BatchNorm1d(s[1]))
        elif k == "ln":
            mods.append(CastLayerNorm(s[1]))
        elif k == "emb":
            mods.append(nn.Embedding(s[1], s[2]))
        elif k == "maxpool":
            mods.append(nn.MaxPool2d(s[1], s[2] or s[1], s[3]))
        elif k == "avgpool":
            mods.append(nn.AvgPool2d(s[1], s[2] or s[1], s[3]))
        elif k == "adapt":
            mods.append(nn.AdaptiveAvgPool2d((s[1], s[2])))
        elif k == "flatten":
            mods.append(nn.Flatten())
            rank = 2
        else:
            mods.append({"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}[k]())
    if nest:
        mods = [nn.Sequential(*mods[:nest])] + mods[nest:]
    return nn.Sequential(*mods)


def describe_net(L):
    return " ".join("%s(%s)" % (s[0], ",".join(str(v) for v in s[1:])) if len(s) > 1 else s[0] for s in L)


# ------------------------------------------------------------------ comparisons

class Mismatch(Exception):
    pass


def rel_noise(checks, dtype, ref_dtype, others):
    """The rounding error of training in dtype, relative to each tensor's scale (its largest
    magnitude, at least 1), estimated from PyTorch's runs: the reference's largest difference
    from another run (another precision, or the same one on the minibatches' rows in another
    order) over every compared tensor is the coarser run's error, scaled by the ratio of the
    epsilons to dtype's. One figure for the whole network, so that a small tensor whose runs
    happen to agree closely gets no tighter a tolerance than the rest; the largest over the
    other runs, so that a trajectory that rounding can send either way (Adam on a gradient
    near 0) shows when one of them goes the other way."""
    worst = 0.0
    for j, other_dtype in enumerate(others):
        scale = min(1.0, EPS[dtype] / max(EPS[ref_dtype], EPS[other_dtype]))
        for check in checks:
            ref, alt = check[2], check[3 + j]
            if not ref.is_floating_point():
                continue
            r, a = ref.double(), alt.double()
            fin = torch.isfinite(r) & torch.isfinite(a)
            if fin.any():
                worst = max(worst, scale * (r[fin] - a[fin]).abs().max().item() / max(1.0, r[fin].abs().max().item()))
    return worst


def close(what, got, ref, alt, dtype, noise, steps, names, flips=None):
    """Raises Mismatch unless devtensor's `got` is within tolerance of `ref`: the larger of
    FLOOR[dtype] and K_NOISE times the reference's relative error `noise`, times the tensor's
    scale (its largest magnitude, at least 1). flips: (bound, count): up to count elements may
    differ by up to bound more (Adam's parameters, below)."""
    if tuple(got.shape) != tuple(ref.shape):
        raise Mismatch("%s: shape %s, PyTorch's %s" % (what, tuple(got.shape), tuple(ref.shape)))
    if not got.is_floating_point():
        if not torch.equal(got, ref.to(got.dtype)):
            raise Mismatch("%s: %s, PyTorch's %s" % (what, got.tolist(), ref.tolist()))
        return 0.0
    g, r = got.double(), ref.double()
    if not torch.equal(torch.isnan(g), torch.isnan(r)):
        raise Mismatch("%s: NaN where PyTorch has none, or the reverse" % what)
    fin = torch.isfinite(r) & torch.isfinite(g)
    if not torch.equal(torch.isfinite(g), torch.isfinite(r)) or not torch.equal(g[~fin & ~torch.isnan(g)],
                                                                                  r[~fin & ~torch.isnan(r)]):
        raise Mismatch("%s: infinities differ" % what)
    if not fin.any():
        return 0.0
    scale = max(1.0, r[fin].abs().max().item())
    tol = max(FLOOR[dtype] * (steps + 1), K_NOISE[dtype] * noise) * scale
    diff = (g[fin] - r[fin]).abs()
    if flips is not None:
        over = diff > tol
        if 0 < int(over.sum()) <= flips[1] and diff.max().item() <= tol + flips[0]:
            diff = torch.where(over, torch.zeros_like(diff), diff)
    err = diff.max().item()
    if err > tol:
        k = diff.argmax().item()
        a = alt.double()[fin]
        raise Mismatch("%s: differs by %.3g (tolerance %.3g; devtensor %r, PyTorch %r at flat index %d); from "
                       "PyTorch's %s run devtensor differs by %.3g, PyTorch's %s run by %.3g"
                       % (what, err, tol, g[fin][k].item(), r[fin][k].item(), k, names[1],
                          (g[fin] - a).abs().max().item(), names[0], (r[fin] - a).abs().max().item()))
    return err / tol if tol else 0.0


def exact(what, got, ref):
    if got.dtype != ref.dtype or tuple(got.shape) != tuple(ref.shape):
        raise Mismatch("%s: %s %s, expected %s %s" % (what, got.dtype, tuple(got.shape), ref.dtype, tuple(ref.shape)))
    a = got.view(torch.int16) if got.dtype in (torch.float16, torch.bfloat16) else got
    b = ref.view(torch.int16) if ref.dtype in (torch.float16, torch.bfloat16) else ref
    if a.dtype.is_floating_point:
        same = torch.equal(a.view(torch.int64 if a.dtype == torch.float64 else torch.int32),
                           b.view(torch.int64 if b.dtype == torch.float64 else torch.int32)) if a.numel() else True
    else:
        same = torch.equal(a, b)
    if not same:
        raise Mismatch("%s: not bit for bit" % what)


# ------------------------------------------------------------------ one case

class Case:
    def __init__(self, lib, seed, index, tmp, trainer_share):
        self.lib = lib
        self.c = lib.c
        self.index = index
        self.R = random.Random("train/%d/%d" % (seed, index))
        torch.manual_seed(self.R.randrange(1 << 62))
        self.dt_seed = self.R.randrange(1 << 62)
        self.tmp = tmp
        self.trainer = self.R.random() < trainer_share
        self.handles = []   # devtensor tensors to release
        self.modules = []
        self.opts = []
        self.worst = 0.0
        self.diverged = False
        self.tipped = False  # devtensor agreed with one of PyTorch's runs on other row orders only
        self.ill_cond = False  # PyTorch from one rounding away differs as much (Case.ill_conditioned)
        self.eval_by_state = False  # lockstep: the eval outputs agree with PyTorch's from devtensor's state only
        self.dt_steps = []  # lockstep: devtensor's parameters before each step

    def fail(self, msg):
        raise DTError("%s: %s" % (msg, self.lib.error()))

    def keep(self, p):
        if p:
            self.handles.append(p)
        return p

    def cleanup(self):
        for o in self.opts:
            self.c.dt_optimizer_free(o)
        for p in reversed(self.handles):
            self.c.dt_release(p)
        for m in self.modules:
            self.c.dt_module_free(m)
        self.handles, self.modules, self.opts = [], [], []

    def path(self, name):
        return os.path.join(self.tmp, "%d-%s.safetensors" % (self.index, name))

    # -------------------------------------------------- drawing
    def draw(self):
        R = self.R
        self.kind, self.L, self.inp, self.out = draw_net(R)
        while self.trainer and self.kind == "emb":
            # the trainer takes a float X only (docs/API.md, "The trainer"): no embedding networks
            self.kind, self.L, self.inp, self.out = draw_net(R)
        if self.trainer:
            # the trainer: float32 (with autocast bfloat16 or without), float64, or a bfloat16 module
            self.mode = R.choices(["f32", "f64", "bf16", "autocast"], [4, 1, 1, 3])[0]
        else:
            self.mode = R.choices(["f32", "f64", "bf16", "f16", "autocast"], [5, 2, 2, 1, 1])[0]
        self.dtype = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "f16": torch.float16,
                      "autocast": torch.float32}[self.mode]
        self.loss = "ce" if self.out >= 2 and (R.random() < 0.5) else "mse"
        half = self.dtype in (torch.float16, torch.bfloat16) or self.mode == "autocast"
        self.steps = R.randint(2, 5) if half else R.randint(5, 30)
        # batch norm over two rows gives +-1 whatever its input: every gradient before it is
        # rounding (mathematically 0 but for eps), which no two implementations round alike
        bn1d = any(s[0] == "bn" for s in self.L) and self.kind == "mlp"
        self.n = R.randint(3 if bn1d else 2, 12)
        self.opt = R.choice(["plain", "sgd", "sgd", "adam", "adamw"])
        if self.dtype == torch.float16:
            # float16's v = (1 - beta2) g^2 in Adam underflows to 0 for |g| below about 1e-2.5, and
            # the step is then lr g / eps, as in PyTorch's float16 Adam: a float64 (or bfloat16)
            # run is no reference for it (tests/test_half_optim.c holds its steps bit for bit)
            self.opt = R.choice(["plain", "sgd", "sgd"])
        if self.trainer and half and self.opt in ("adam", "adamw"):
            # see `lockstep` below: the trainer's steps cannot be followed one by one
            self.opt = "sgd"
        # in half precision, by hand: PyTorch's runs take devtensor's parameters before each step
        self.lockstep = half and not self.trainer
        self.form = R.choice(["module", "tensors"]) if self.opt != "plain" and not self.trainer else "module"
        self.lr = R.choice([0.1, 0.03, 0.01, 1e-3] if not half else [0.03, 0.01, 1e-3])
        if self.opt == "sgd":
            self.hp = dict(momentum=R.choice([0.0, 0.5, 0.9]), weight_decay=R.choice([0.0, 0.0, 1e-2, 0.1]))
        elif self.opt in ("adam", "adamw"):
            self.hp = dict(betas=(R.choice([0.9, 0.8, 0.5]), R.choice([0.999, 0.99, 0.9])),
                           eps=R.choice([1e-8, 1e-6, 1e-3]), weight_decay=R.choice([0.0, 1e-2, 0.1]))
        else:
            self.hp = {}
        self.clip = R.choice([0.1, 0.5, 1.0, 10.0]) if R.random() < 0.4 else 0.0
        self.direction = R.choice(["dt->torch", "torch->dt"])
        self.convert_first = R.random() < 0.5  # dtype conversion before the weights cross (else after)
        self.lazy = R.random() < 0.25
        # the first layers in a sequential of their own, within the network
        self.nest = R.randint(1, len(self.L)) if R.random() < 0.25 else 0
        # on a GPU, by hand: the module starts on the CPU and moves to the GPU before this step
        self.move_at = R.randint(1, self.steps - 1) if self.lib.device.type == 1 and not self.trainer and \
            R.random() < 0.3 else None
        if self.trainer:
            self.epochs = R.randint(1, 4)
            self.batch = R.randint(3 if bn1d else 2, 8)
            self.rows = R.randint(self.batch, 3 * self.batch)
            # a last minibatch of one row would fail batch norm's training check on both sides
            while any(s[0] == "bn" for s in self.L) and self.rows % self.batch in ((1, 2) if bn1d else (1,)):
                self.rows += 1
            self.x_on_device = R.random() < 0.5
            self.cuda_graph = 1 if R.random() < 0.25 else 0
            self.steps = self.epochs * ((self.rows + self.batch - 1) // self.batch)
        # now and then an MLP f times as wide on f times the rows: the sizes where the CPU's gemm
        # splits its work by rows over threads and sums a linear layer's bias gradient as it packs,
        # which the small networks never reach. Drawn last, so a seed's other draws stay as they were.
        self.wide = R.choice([8, 16, 24]) if self.kind == "mlp" and R.random() < 0.05 else 0
        if self.wide:
            f, L, nlin = self.wide, [], sum(1 for s_ in self.L if s_[0] == "linear")
            k = 0
            for s_ in self.L:
                if s_[0] == "linear":
                    k += 1
                    s_ = ("linear", s_[1] if k == 1 else s_[1] * f, s_[2] if k == nlin else s_[2] * f)
                elif s_[0] in ("ln", "bn"):
                    s_ = (s_[0], s_[1] * f)
                L.append(s_)
            self.L = L
            if self.trainer:
                self.batch, self.rows = self.batch * f, self.rows * f
            else:
                self.n *= f

    def describe(self):
        s = "%s [%s] in=%s %s mode=%s loss=%s opt=%s%s lr=%g %s clip=%g %s%s" % (
            self.kind, describe_net(self.L), self.inp[1], "" if self.inp[0] == "float" else "index<%d" % self.inp[2],
            self.mode, self.loss, self.opt, "(%s)" % self.form if self.opt != "plain" else "", self.lr,
            " ".join("%s=%s" % kv for kv in self.hp.items()), self.clip, self.direction,
            " convert-first" if self.convert_first else "")
        s += "%s%s%s%s%s" % (" nested(%d)" % self.nest if self.nest else "", " lazy" if self.lazy else "", " moved-at-step-%d" % self.move_at if self.move_at is not None else "",
                           " lockstep" if self.lockstep else "", " wide(x%d)" % self.wide if self.wide else "")
        if self.trainer:
            s += " trainer epochs=%d batch=%d rows=%d x_on_device=%d cuda_graph=%d" % (
                self.epochs, self.batch, self.rows, self.x_on_device, self.cuda_graph)
        else:
            s += " steps=%d n=%d" % (self.steps, self.n)
        return s

    # -------------------------------------------------- data
    def inputs(self, rows, dtype):
        if self.inp[0] == "index":
            return torch.randint(0, self.inp[2], [rows] + self.inp[1])
        return torch.randn([rows] + self.inp[1], dtype=torch.float64).to(dtype)

    def targets(self, rows, dtype):
        if self.loss == "ce":
            return torch.randint(0, self.out, [rows])
        return torch.randn(rows, self.out, dtype=torch.float64).to(dtype)

    # -------------------------------------------------- devtensor side
    def dt_build(self):
        c = self.c
        m = c.dt_sequential()
        if not m:
            self.fail("dt_sequential")
        self.modules.append(m)
        inner = m
        if self.nest:
            inner = c.dt_sequential()
            if not inner or c.dt_sequential_add(m, inner) != 0:
                self.fail("dt_sequential_add of a sequential")
        for k, s in enumerate(self.L):
            if c.dt_sequential_add(inner if k < self.nest else m, dt_layer(c, s, self.lazy)) != 0:
                self.fail("dt_sequential_add %s" % (s,))
        return m

    def dt_materialize(self, m, dtype):
        """A lazy network's first forward, in evaluation mode without gradients (batch norm's
        statistics untouched), on two rows: its layers get their parameters."""
        if self.lazy:
            x = self.inputs(2, dtype)
            saved = self.lib.device
            self.lib.device = self.c.dt_module_device(m)
            try:
                self.dt_eval(m, x, False)
            finally:
                self.lib.device = saved

    def dt_params(self, m):
        c = self.c
        n = c.dt_module_num_params(m)
        ps = []
        for i in range(n):
            p = c.dt_module_param(m, i, None)
            if not p:
                self.fail("dt_module_param")
            ps.append(p)
        return ps

    def dt_optimizer(self, m):
        c = self.c
        if self.opt == "plain":
            return None
        hp = self.hp
        if self.form == "tensors":
            ps = self.dt_params(m)
            arr = (C.c_void_p * len(ps))(*ps)
            if self.opt == "sgd":
                o = c.dt_sgd_tensors(arr, len(ps), self.lr, hp["momentum"], hp["weight_decay"])
            else:
                f = c.dt_adam_tensors if self.opt == "adam" else c.dt_adamw_tensors
                o = f(arr, len(ps), self.lr, hp["betas"][0], hp["betas"][1], hp["eps"], hp["weight_decay"])
        elif self.opt == "sgd":
            o = c.dt_sgd(m, self.lr, hp["momentum"], hp["weight_decay"])
        else:
            f = c.dt_adam if self.opt == "adam" else c.dt_adamw
            o = f(m, self.lr, hp["betas"][0], hp["betas"][1], hp["eps"], hp["weight_decay"])
        if not o:
            self.fail("making the optimizer")
        self.opts.append(o)
        return o

    def dt_state(self, m, name):
        """dt_module_save's file, read back: the module's state_dict."""
        p = self.path(name)
        if self.c.dt_module_save(m, p.encode()) != 0:
            self.fail("dt_module_save")
        return st_load(p)

    # -------------------------------------------------- torch side
    def torch_optimizer(self, net, lr):
        hp = self.hp
        if self.opt in ("plain", "sgd"):
            return torch.optim.SGD(net.parameters(), lr=lr, foreach=False, **hp)
        T = torch.optim.Adam if self.opt == "adam" else torch.optim.AdamW
        return T(net.parameters(), lr=lr, foreach=False, **hp)

    def torch_loss(self, pred, y):
        if self.loss == "ce":
            if pred.dtype == torch.float16:
                return F.cross_entropy(pred.float(), y).to(pred.dtype)
            return F.cross_entropy(pred, y)
        if pred.dtype in (torch.float16, torch.bfloat16):
            # PyTorch 1.13 has no half mse_loss on the CPU: in float32, rounded once, as devtensor's
            # half operations (docs/API.md, Half precision)
            return F.mse_loss(pred.float(), y.float()).to(pred.dtype)
        return F.mse_loss(pred, y.to(pred.dtype))

    def torch_train(self, net, dtype, batches, autocast, sync=None):
        """Trains a copy of net in dtype on batches [(X, y)]: the losses, the trained network.
        sync: devtensor's parameters before each step, taken over before PyTorch's step."""
        net = net.to(dtype)
        net.train()
        opt = self.torch_optimizer(net, self.lr)
        losses = []
        for k, (X, y) in enumerate(batches):
            if sync is not None:
                with torch.no_grad():
                    for name, p in net.named_parameters():
                        p.copy_(sync[k][name].to(dtype))
            X = X.to(dtype) if X.is_floating_point() else X
            y = y.to(dtype) if y.is_floating_point() else y
            opt.zero_grad()
            if autocast:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    pred = net(X)
                    loss = self.torch_loss(pred.float(), y)
            else:
                loss = self.torch_loss(net(X), y)
            loss.backward()
            if self.clip:
                torch.nn.utils.clip_grad_norm_(net.parameters(), self.clip)
            opt.step()
            losses.append(loss.detach().double())
        return losses, net

    # -------------------------------------------------- the check
    def run(self):
        c, lib = self.c, self.lib
        self.draw()
        dtype, dtn = self.dtype, DT_DTYPE[self.dtype]
        # PyTorch trains three times: in the reference dtype, in another precision, and in the reference
        # dtype (float16: bfloat16) on each minibatch's rows in reverse order; the last two measure
        # the reference's rounding error
        if self.mode == "f16":
            ref_dtype, alt_dtype = torch.float64, torch.bfloat16  # PyTorch 1.13's CPU has no float16 layers
        elif self.mode in ("f32", "autocast"):
            ref_dtype, alt_dtype = torch.float32, torch.float64
        elif self.mode == "f64":
            ref_dtype, alt_dtype = torch.float64, torch.float32
        else:
            ref_dtype, alt_dtype = torch.bfloat16, torch.float64
        autocast = self.mode == "autocast"

        # the initial parameters, through a file, one way or the other
        c.dt_manual_seed(self.dt_seed)
        m = self.dt_build()
        tnet = torch_net(self.L, self.inp, self.nest)
        tnet.train()
        if self.convert_first and dtype != torch.float32:
            if c.dt_module_to_dtype(m, dtn) != 0:
                self.fail("dt_module_to_dtype")
            tnet = tnet.to(dtype)
        self.dt_materialize(m, dtype if self.convert_first else torch.float32)
        if self.direction == "dt->torch":
            st = self.dt_state(m, "init")
            sd = tnet.state_dict()
            if sorted(st) != sorted(sd):
                raise Mismatch("dt_module_save's names %s, PyTorch's state_dict %s" % (list(st), list(sd)))
            for k in sd:
                if st[k].dtype != sd[k].dtype:
                    raise Mismatch("dt_module_save's %s is %s, PyTorch's %s" % (k, st[k].dtype, sd[k].dtype))
            tnet.load_state_dict(st)
        else:
            p = self.path("torch-init")
            st_save(p, tnet.state_dict())
            if c.dt_module_load(m, p.encode()) != 0:
                self.fail("dt_module_load of PyTorch's initial state_dict")
            st = self.dt_state(m, "init")
            for k, v in tnet.state_dict().items():
                exact("the loaded %s" % k, st[k], v)
        if not self.convert_first and dtype != torch.float32:
            if c.dt_module_to_dtype(m, dtn) != 0:
                self.fail("dt_module_to_dtype")
        tnet = tnet.double()  # the master copy: every precision starts from the same values
        if self.move_at is None and c.dt_module_to(m, lib.device) != 0:
            self.fail("dt_module_to")

        in_dtype = torch.float32 if autocast else dtype
        if self.trainer:
            batches, dt_losses = self.dt_fit(m, in_dtype)
        else:
            batches = [(self.inputs(self.n, in_dtype), self.targets(self.n, in_dtype)) for _ in range(self.steps)]
            dt_losses = self.dt_train(m, batches)

        # Half precision rounds so coarsely that a gradient within rounding of 0 takes Adam's step
        # (about lr whatever the gradient's size) either way, and the trajectories part: there
        # PyTorch's runs follow devtensor's parameters step by step (lockstep), each step compared
        # as it is taken, the optimizers' states each their own
        sync = self.dt_steps if self.lockstep else None
        ref_losses, ref_net = self.torch_train(torch_net_copy(tnet, self.L, self.inp, self.nest), ref_dtype, batches, autocast, sync)
        alt_losses, alt_net = self.torch_train(torch_net_copy(tnet, self.L, self.inp, self.nest), alt_dtype, batches, autocast, sync)
        # the same training on each minibatch's rows in reverse order: the same sums, rounded otherwise
        perm_dtype = torch.bfloat16 if self.mode == "f16" else ref_dtype
        rbatches = [(X.flip(0), y.flip(0)) for X, y in batches]
        perm_losses, perm_net = self.torch_train(torch_net_copy(tnet, self.L, self.inp, self.nest), perm_dtype, rbatches, autocast,
                                                 sync)
        if not all(math.isfinite(float(v)) and abs(float(v)) < 1e6 for v in ref_losses + alt_losses + perm_losses):
            self.diverged = True  # the training diverges: nothing to compare
            return

        # devtensor's trained state, and its names, dtypes and parameters as dt_module_param has them
        st = self.dt_state(m, "trained")
        rsd = ref_net.state_dict()
        if sorted(st) != sorted(rsd):
            raise Mismatch("trained names %s, PyTorch's %s" % (list(st), list(rsd)))
        for k in rsd:
            if st[k].dtype != (torch.int64 if k.endswith("num_batches_tracked") else dtype):
                raise Mismatch("%s is %s after training" % (k, st[k].dtype))
        names = C.c_char_p()
        for i in range(c.dt_module_num_params(m)):
            p = c.dt_module_param(m, i, C.byref(names))
            exact("dt_module_param(%d) against the file" % i, to_torch(lib, p), st[names.value.decode()])
        # evaluation mode
        Xe = self.inputs(self.n + 1, in_dtype)
        got = self.dt_eval(m, Xe, autocast)

        def compared(losses, net, dt_):
            """What is compared, from one of PyTorch's runs: [(what, tensor, dtype for the floor)],
            each step's loss (per epoch with the trainer), every parameter and buffer, and the
            outputs in evaluation mode."""
            if self.trainer:
                losses = self.epoch_means(losses, batches)
            out = [("loss %d" % k, torch.as_tensor(v), dtype) for k, v in enumerate(losses)]
            out += [(k, v, dtype) for k, v in net.state_dict().items()]
            out.append(("eval output", torch_eval(net, Xe, dt_, autocast), torch.bfloat16 if autocast else dtype))
            return out

        mine = [torch.tensor(float(v), dtype=torch.float64) for v in dt_losses] + [st[k] for k in rsd] + [got]
        ref = compared(ref_losses, ref_net, ref_dtype)
        alt = compared(alt_losses, alt_net, alt_dtype)
        perm = compared(perm_losses, perm_net, perm_dtype)
        # (what, devtensor's, PyTorch's: in ref_dtype, in alt_dtype, on reversed rows; dtype for the floor)
        checks = [(w, g, r, a[1], q[1], fdt) for g, (w, r, fdt), a, q in zip(mine, ref, alt, perm)]

        # under autocast devtensor's dtype is float32 but its rounding bfloat16's, as PyTorch's
        self.noise = rel_noise(checks, dtype, ref_dtype, (alt_dtype, perm_dtype))
        tags = (str(ref_dtype)[6:] + (" autocast" if autocast else ""), str(alt_dtype)[6:])
        # Adam's step is about lr in size whatever the gradient's: an element whose gradient is
        # within rounding of 0 may step either way on either side, and in half precision that
        # happens to an element now and then, where PyTorch's runs all happen to go one way
        flips = None
        if self.opt in ("adam", "adamw") and (autocast or dtype in (torch.float16, torch.bfloat16)):
            flips = 3.0 * self.lr * self.steps

        def check_one(g, what, r, fdt, a):
            fl = (flips, max(2, g.numel() // 10)) if flips and what in rsd and what.endswith(("weight", "bias")) else None
            return close(what, g, r, a, torch.bfloat16 if autocast else fdt, self.noise, self.steps, tags, fl)

        def check_all(ref):
            worst = 0.0
            for g, (what, r, fdt), (_, a, _) in zip(mine, ref, alt):
                worst = max(worst, check_one(g, what, r, fdt, a))
            return worst

        try:
            self.note(check_all(ref))
        except Mismatch as first:
            # A trajectory can pass within rounding of a point where the gradient jumps (a max
            # pool's two largest inputs crossing, Adam on a gradient near 0): which side a run
            # takes is then its rounding's choice, and PyTorch's three runs may all take one.
            # Before calling it a mismatch, PyTorch trains again in ref_dtype on each minibatch's
            # rows in other orders (the same sums, rounded otherwise): devtensor agrees if it
            # is within tolerance of one of them, on everything compared.
            if self.lockstep:
                # PyTorch followed devtensor's parameters step by step: only the outputs in
                # evaluation mode, after the last step, may be too sensitive to the parameters
                if not self.eval_follows_state(st, ref_dtype, Xe, autocast, mine, ref, check_one):
                    raise first
                self.eval_by_state = True
                return
            g = torch.Generator().manual_seed(self.R.randrange(1 << 62))
            for _ in range(TIP_RUNS):
                orders = [torch.randperm(len(X), generator=g) for X, _ in batches]
                sb = [(X[o], y[o]) for (X, y), o in zip(batches, orders)]
                o_losses, o_net = self.torch_train(torch_net_copy(tnet, self.L, self.inp, self.nest), ref_dtype, sb, autocast)
                try:
                    self.note(check_all(compared(o_losses, o_net, ref_dtype)))
                    self.tipped = True
                    break
                except Mismatch:
                    pass
            else:
                if not self.ill_conditioned(tnet, batches, autocast, ref_dtype, compared, ref, mine, check_one):
                    raise first
                self.ill_cond = True

        # the trained state saved and loaded back: exact on both sides
        m2 = self.dt_build()
        if dtype != torch.float32 and c.dt_module_to_dtype(m2, dtn) != 0:
            self.fail("dt_module_to_dtype")
        self.dt_materialize(m2, dtype)
        if c.dt_module_to(m2, lib.device) != 0:
            self.fail("dt_module_to")
        if c.dt_module_load(m2, self.path("trained").encode()) != 0:
            self.fail("dt_module_load of the trained state")
        st2 = self.dt_state(m2, "reloaded")
        for k in st:
            exact("%s saved, loaded and saved again" % k, st2[k], st[k])
        exact("eval output of the reloaded module", self.dt_eval(m2, Xe, autocast), got)
        tl = torch_net(self.L, self.inp, self.nest).to(dtype)
        tl.load_state_dict(st)
        for k, v in tl.state_dict().items():
            exact("%s loaded into PyTorch" % k, v, st[k])
        # PyTorch's trained state into devtensor
        p = self.path("torch-trained")
        rd = {k: v.to(dtype) if v.is_floating_point() else v for k, v in rsd.items()}
        st_save(p, rd)
        if c.dt_module_load(m2, p.encode()) != 0:
            self.fail("dt_module_load of PyTorch's trained state")
        st3 = self.dt_state(m2, "torch-reloaded")
        for k in rd:
            exact("PyTorch's trained %s loaded into devtensor" % k, st3[k], rd[k])

    def note(self, r):
        self.worst = max(self.worst, r)

    def eval_follows_state(self, st, ref_dtype, Xe, autocast, mine, ref, check_one):
        """In lockstep, after a mismatch: True where the outputs in evaluation mode are all that
        fail and they agree with PyTorch's forward from devtensor's own trained state (exact, in
        the file): the parameters, each within its tolerance (Adam's last steps may leave an
        element a step apart), moved outputs that are sensitive to them (batch norm's running
        variance near 0) by more than the outputs' tolerance."""
        net = torch_net(self.L, self.inp, self.nest).to(ref_dtype)
        net.load_state_dict({k: v.to(ref_dtype) if v.is_floating_point() else v for k, v in st.items()})
        y = torch_eval(net, Xe, ref_dtype, autocast)
        for gv, (what, r, fdt) in zip(mine, ref):
            try:
                check_one(gv, what, r, fdt, r)
            except Mismatch:
                if what != "eval output":
                    return False
                try:
                    check_one(gv, what, y, fdt, y)
                except Mismatch:
                    return False
        return True

    def ill_conditioned(self, tnet, batches, autocast, ref_dtype, compared, ref, mine, check_one):
        """After a mismatch no other row order explains: PyTorch trains PERTURB_RUNS more times in
        ref_dtype from initial parameters one rounding away (each element times 1 + e, e one of
        -eps, 0, +eps of ref_dtype; under autocast, of bfloat16). True where that moves PyTorch's
        own result by at least half as much as devtensor differs, on every tensor out of its
        tolerance: the training is too ill-conditioned to compare (batch norm over three rows of
        nearly equal values), counted but not a mismatch."""
        g = torch.Generator().manual_seed(self.R.randrange(1 << 62))
        eps = EPS[torch.bfloat16 if autocast else ref_dtype]  # autocast rounds products as bfloat16
        spread = [0.0] * len(ref)
        for _ in range(PERTURB_RUNS):
            net = torch_net_copy(tnet, self.L, self.inp, self.nest)
            with torch.no_grad():
                for p in net.parameters():
                    p.mul_(1 + eps * torch.randint(-1, 2, p.shape, generator=g).double())
            o_losses, o_net = self.torch_train(net, ref_dtype, batches, autocast)
            for i, ((_, r0, _), (_, r1, _)) in enumerate(zip(ref, compared(o_losses, o_net, ref_dtype))):
                if r0.is_floating_point():
                    fin = torch.isfinite(r0) & torch.isfinite(r1)
                    if fin.any():
                        spread[i] = max(spread[i], (r0.double()[fin] - r1.double()[fin]).abs().max().item())
        for gv, (what, r, fdt), sp in zip(mine, ref, spread):
            try:
                check_one(gv, what, r, fdt, r)
            except Mismatch:
                fin = torch.isfinite(r) & torch.isfinite(gv) if gv.is_floating_point() else None
                if fin is None or not fin.any() or (gv.double()[fin] - r.double()[fin]).abs().max().item() > 2.0 * sp:
                    return False
        return True

    def dt_train(self, m, batches):
        c, lib = self.c, self.lib
        o = self.dt_optimizer(m)
        c.dt_module_train(m, 1)
        losses = []
        for k, (X, y) in enumerate(batches):
            if k == self.move_at and c.dt_module_to(m, lib.device) != 0:
                self.fail("dt_module_to before step %d" % k)  # the optimizer's state follows at its next step
            if (c.dt_optimizer_zero_grad(o) if o else c.dt_zero_grad(m)) != 0:
                self.fail("zero_grad")
            dev = lib.device if self.move_at is None or k >= self.move_at else Device(0, 0)
            x = self.keep(from_torch_on(lib, X, dev))
            t = self.keep(from_torch_on(lib, y, dev))
            ac = c.dt_set_autocast(dev.type, BF16) if self.mode == "autocast" else None
            pred = self.keep(c.dt_forward(m, x))
            loss = self.keep(c.dt_cross_entropy(pred, t) if self.loss == "ce" else c.dt_mse_loss(pred, t)) if pred else None
            if ac is not None:
                c.dt_set_autocast(dev.type, ac)
            if not pred:
                self.fail("dt_forward at step %d" % k)
            if not loss:
                self.fail("the loss at step %d" % k)
            if c.dt_autograd_backward(loss, None) != 0:
                self.fail("dt_autograd_backward at step %d" % k)
            if self.clip:
                ps = self.dt_params(m)
                if c.dt_clip_grad_norm_((C.c_void_p * len(ps))(*ps), len(ps), self.clip, None) != 0:
                    self.fail("dt_clip_grad_norm_ at step %d" % k)
            if self.lockstep:
                names = C.c_char_p()
                self.dt_steps.append({})
                for i in range(c.dt_module_num_params(m)):
                    p = c.dt_module_param(m, i, C.byref(names))
                    self.dt_steps[-1][names.value.decode()] = to_torch(lib, p)
            if (c.dt_optimizer_step(o) if o else c.dt_sgd_step(m, self.lr)) != 0:
                self.fail("the step %d" % k)
            losses.append(to_torch(lib, loss).double().item())
            for h in (loss, pred, t, x):
                self.handles.remove(h)
                c.dt_release(h)
        return losses

    def dt_fit(self, m, in_dtype):
        """dt_trainer_fit on rows drawn here; the minibatches it trained on, as (X, y) pairs (its
        shuffle is dt_randperm's draw, docs/API.md "Semantics worth knowing"), and its epoch losses."""
        c, lib = self.c, self.lib
        X = self.inputs(self.rows, in_dtype)
        y = self.targets(self.rows, in_dtype)
        o = self.dt_optimizer(m)
        tr = Trainer()
        if c.dt_trainer_init(C.byref(tr), self.epochs, 1 if lib.device.type == 1 else 0) != 0:
            self.fail("dt_trainer_init")
        try:
            if lib.device.type == 1:
                tr.gpus[0] = lib.device
                tr.device = lib.device
            tr.batch_size = self.batch
            tr.lr = self.lr
            tr.quiet = 1
            tr.loss_fn = 1 if self.loss == "ce" else 0
            tr.optimizer = o
            tr.gradient_clip_val = self.clip
            tr.autocast = BF16 if self.mode == "autocast" else F32
            tr.cuda_graph = self.cuda_graph
            dev = lib.device if self.x_on_device else Device(0, 0)
            xs = self.keep(from_torch_on(lib, X, dev))
            ys = self.keep(from_torch_on(lib, y, dev))
            c.dt_manual_seed(self.dt_seed)
            if c.dt_trainer_fit(C.byref(tr), m, xs, ys) != 0:
                self.fail("dt_trainer_fit")
            losses = [tr.epoch_loss[e] for e in range(self.epochs)]
        finally:
            c.dt_trainer_free(C.byref(tr))
        c.dt_manual_seed(self.dt_seed)
        batches = []
        for _ in range(self.epochs):
            perm = self.keep(c.dt_randperm(self.rows, Device(0, 0)))
            order = to_torch(lib, perm)
            for b in range(0, self.rows, self.batch):
                idx = order[b:b + self.batch]
                batches.append((X[idx], y[idx]))
        return batches, losses

    def epoch_means(self, losses, batches):
        """The trainer's epoch loss: each minibatch's loss times its rows, over the epoch's rows."""
        per = len(batches) // self.epochs
        out = []
        for e in range(self.epochs):
            part = list(zip(losses[e * per:(e + 1) * per], batches[e * per:(e + 1) * per]))
            out.append(sum(l * len(b[0]) for l, b in part) / self.rows)
        return out

    def dt_eval(self, m, X, autocast):
        c, lib = self.c, self.lib
        c.dt_module_train(m, 0)
        prev = c.dt_set_grad_enabled(0)
        ac = c.dt_set_autocast(lib.device.type, BF16) if autocast else None
        try:
            x = self.keep(from_torch(lib, X))
            out = self.keep(c.dt_forward(m, x))
            if not out:
                self.fail("dt_forward in evaluation mode")
            return to_torch(lib, out)
        finally:
            if autocast:
                c.dt_set_autocast(lib.device.type, ac)
            c.dt_set_grad_enabled(prev)
            c.dt_module_train(m, 1)


def torch_net_copy(master, L, inp, nest):
    net = torch_net(L, inp, nest).double()
    net.load_state_dict(master.state_dict())
    return net


def torch_eval(net, X, dtype, autocast):
    """net's outputs in evaluation mode on X (a float X in dtype), under CPU autocast to bfloat16
    where autocast."""
    net.eval()
    with torch.no_grad():
        x = X.to(dtype) if X.is_floating_point() else X
        if autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return net(x)
        return net(x)


def from_torch_on(lib, t, dev):
    saved = lib.device
    lib.device = dev
    try:
        return from_torch(lib, t)
    finally:
        lib.device = saved


# ------------------------------------------------------------------ main

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", help="cpu or cuda:N (default cpu)")
    ap.add_argument("--lib", help="libdevtensor.so to load (default: build/lib/cpu/ for cpu, build/lib/cuda/ for "
                                  "cuda:N, as make lib builds them)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=100, help="cases to run (default 100)")
    ap.add_argument("--case", type=int, help="run only this case of --seed")
    ap.add_argument("--trainer", type=float, default=0.3, help="share of the cases trained by dt_trainer_fit (0.3)")
    ap.add_argument("--time", type=float, help="stop starting cases after this many seconds")
    a = ap.parse_args()
    if a.lib is None:
        a.lib = os.path.join(ROOT, "build", "lib", "cpu" if a.device == "cpu" else "cuda", "libdevtensor.so")
    return a


def replay_command(a, index):
    env = "DTEMU_GPUS=%s " % os.environ["DTEMU_GPUS"] if "DTEMU_GPUS" in os.environ else ""
    return "%s%s tools/fuzz/train.py --lib %s --device %s --seed %d --trainer %g --case %d" % (
        env, sys.executable, a.lib, a.device, a.seed, a.trainer, index)


def main():
    a = parse_args()
    warnings.filterwarnings("ignore")
    try:
        lib = Lib(a.lib, a.device)
    except (OSError, DTError) as e:
        print("train.py: %s" % e, file=sys.stderr)
        return 2
    for name, res, args in _SIGS:
        f = getattr(lib.c, name)
        f.restype = res
        f.argtypes = args
    indices = [a.case] if a.case is not None else range(a.cases)
    t0 = time.monotonic()
    done = bad = errors = 0
    worst = 0.0
    kinds = {}
    with tempfile.TemporaryDirectory(prefix="dt-train-") as tmp:
        for index in indices:
            if a.time is not None and time.monotonic() - t0 > a.time:
                break
            case = Case(lib, a.seed, index, tmp, a.trainer)
            done += 1
            try:
                case.run()
                worst = max(worst, case.worst)
                key = "%s/%s%s" % (case.kind, case.mode, "/trainer" if case.trainer else "")
                if case.diverged:
                    key = "diverged (not compared)"
                elif case.tipped:
                    key = "agreeing with PyTorch on other row orders"
                elif case.ill_cond:
                    key = "ill-conditioned (not compared)"
                elif case.eval_by_state:
                    key = "eval outputs from devtensor's own state"
                kinds[key] = kinds.get(key, 0) + 1
                if a.case is not None:
                    print("case %d: %s\n  agrees%s (largest difference %.2g of its tolerance)"
                          % (index, case.describe(), " with a PyTorch run on other row orders" if case.tipped else "",
                             case.worst))
            except Mismatch as e:
                bad += 1
                print("\nMISMATCH case %d: %s\n  %s\n  replay: %s" % (index, case.describe(), e,
                                                                    replay_command(a, index)))
            except Exception:
                errors += 1
                print("\nERROR case %d: %s" % (index, case.describe() if hasattr(case, "mode") else ""))
                traceback.print_exc(file=sys.stdout)
                print("  replay: %s" % replay_command(a, index))
            finally:
                case.cleanup()
    print("\ndevtensor on %s (%s) against PyTorch %s, seed %d: %d cases in %.0f s, %d mismatches, %d errors"
          % (a.device, a.lib, torch.__version__, a.seed, done, time.monotonic() - t0, bad, errors))
    print("agreeing cases by network/mode: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    print("largest difference, as a share of its tolerance: %.3g" % worst)
    return 1 if bad or errors else 0


if __name__ == "__main__":
    sys.exit(main())
