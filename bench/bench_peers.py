#!/usr/bin/env python3
"""bench/bench_peers.py - bench_cpu.c's cases with NumPy or PyTorch on the CPU (its peers).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/bench_peers.py numpy|torch [samples [prefix]]

Same names, sizes, calls per sample, warm-up and statistics as bench_cpu.c (see its header): a
warm-up sample, then `samples` (default 7) timed samples of `inner` calls each, a fresh result per
call; prints `numpy <case> seconds=<best per call> median=<median> ... threads=<n> blas=<name>`, the
name of an OpenBLAS with the core type it runs (`openblas/SkylakeX`; torch: `torch-1.13.1/openblas/...`).
`bench_peers.py --corename` prints only that core type (bench/peer_blas.sh's peer_coretype asks).
A case a library does not have is left out (the MLP epoch and steps: NumPy has no autograd).
Threads: every core (or OMP_NUM_THREADS when set), for OpenBLAS and torch.set_num_threads alike.
The MLP epoch: nn.Sequential(Linear(784, 256), ReLU(), Linear(256, 10)), MSELoss on one-hot
targets, SGD(lr=0.01), batches of 256 of a synthetic (60000, 784) uniform dataset, in order;
each step zero_grad, forward, loss, backward, step (what bench_cpu.c does).
The MLP steps through autograd: one batch of 256 of the same, CrossEntropyLoss on int labels,
SGD(lr=0.01); each step forward, loss, loss.backward(), opt.step(), opt.zero_grad(set_to_none=True),
on that nn.Sequential and on an nn.Module of four nn.Parameter (relu(x @ W1 + b1) @ W2 + b2).
"""
import os
import sys
import time


def nthreads():
    v = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(v) if v.isdigit() and int(v) > 0 else (os.cpu_count() or 1)


def blas_name():
    """openblas/<core type it runs> (openblas_get_corename), or the BLAS's name, or unknown"""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return "unknown"
    core = openblas_core(maps)
    if core:
        return "openblas/" + core
    for name in ("openblas", "mkl", "blis", "accelerate", "atlas"):
        if name in maps.lower():
            return name
    return "unknown"


def openblas_core(maps):
    """The core type the loaded OpenBLAS runs (its own choice, or OPENBLAS_CORETYPE), or ''"""
    import ctypes
    paths = sorted({line.split()[-1] for line in maps.splitlines()
                    if "/" in line and "blas" in line.lower() and ".so" in line})
    for p in paths:
        try:
            fn = ctypes.CDLL(p).openblas_get_corename
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_char_p
        name = fn()
        if name:
            return name.decode().strip()
    return ""


def corename():
    """--corename: the OpenBLAS core type that NumPy (else PyTorch) runs here; '' when none"""
    for lib in ("numpy", "torch"):
        try:
            __import__(lib)
        except ImportError:
            continue
        with open("/proc/self/maps") as f:
            core = openblas_core(f.read())
        if core:
            print(core)
            return 0
    return 1


# name, kind, sizes (m, k, n), calls per sample: as bench_cpu.c's CASES
CASES = [
    ("add_f32_16777216", "add", (0, 0, 1 << 24), 1),
    ("add_f32_10x10", "add", (10, 0, 10), 20000),
    ("add_f32_100000", "add", (0, 0, 100000), 200),
    ("exp_f32_1000000", "exp", (0, 0, 1000000), 20),
    ("sum_f32_16777216", "sum", (0, 0, 1 << 24), 2),
    ("randn_f32_16777216", "randn", (0, 0, 1 << 24), 1),
] + [("matmul_f32_%dx%dx%d" % mkn, "matmul", mkn, inner) for mkn, inner in [
    ((32, 32, 32), 2000), ((64, 64, 64), 500), ((128, 128, 128), 100), ((256, 256, 256), 10),
    ((512, 512, 512), 2), ((1024, 1024, 1024), 1), ((2048, 2048, 2048), 1),
    ((256, 256, 10), 500), ((1, 1024, 1024), 200), ((256, 784, 256), 10), ((256, 256, 784), 10)]] + [
    ("mlp_epoch_784_256_10_b256", "mlp", (0, 0, 60000), 1),
    ("mlp_step_autograd_784_256_10_b256", "step_seq", (0, 0, 256), 50),
    ("mlp_step_user_784_256_10_b256", "step_user", (0, 0, 256), 50),
]


def numpy_case(kind, m, k, n):
    """(function making one result, or None when NumPy has no such case)"""
    import numpy as np
    rng = np.random.default_rng(0)
    shape = (m, n) if m else (n,)
    if kind == "add":
        a, b = rng.random(shape, dtype=np.float32), rng.random(shape, dtype=np.float32)
        return lambda: a + b
    if kind == "exp":
        a = rng.random(shape, dtype=np.float32)
        return lambda: np.exp(a)
    if kind == "sum":
        a = rng.random(shape, dtype=np.float32)
        return lambda: a.sum()
    if kind == "randn":
        return lambda: rng.standard_normal(n, dtype=np.float32)
    if kind == "matmul":
        a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
        return lambda: a @ b
    return None


def torch_case(kind, m, k, n):
    import torch
    g = torch.Generator().manual_seed(0)
    shape = (m, n) if m else (n,)
    if kind == "add":
        a, b = torch.rand(shape, generator=g), torch.rand(shape, generator=g)
        return lambda: a + b
    if kind == "exp":
        a = torch.rand(shape, generator=g)
        return lambda: torch.exp(a)
    if kind == "sum":
        a = torch.rand(shape, generator=g)
        return lambda: a.sum()
    if kind == "randn":
        return lambda: torch.randn(n)
    if kind == "matmul":
        a, b = torch.rand((m, k), generator=g), torch.rand((k, n), generator=g)
        return lambda: a @ b
    if kind == "mlp":
        from torch import nn
        x = torch.rand((n, 784), generator=g)
        labels = torch.arange(n) * 7 % 10
        y = torch.nn.functional.one_hot(labels, 10).float()
        xs, ys = x.split(256), y.split(256)
        net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        loss_fn = nn.MSELoss()

        def epoch():
            for xb, yb in zip(xs, ys):
                opt.zero_grad()
                loss = loss_fn(net(xb), yb)
                loss.backward()
                opt.step()
        return epoch
    if kind in ("step_seq", "step_user"):
        from torch import nn
        x = torch.rand((n, 784), generator=g)
        y = torch.arange(n) * 7 % 10
        if kind == "step_seq":
            net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        else:
            def param(shape, fan_in):  # uniform in +-1/sqrt(fan_in), as nn.Linear draws
                bound = fan_in ** -0.5
                return nn.Parameter(torch.rand(shape, generator=g) * (2 * bound) - bound)

            class UserMLP(nn.Module):
                """D2L's MLP from scratch, as bench_cpu.c's user-written module"""
                def __init__(self):
                    super().__init__()
                    self.W1, self.b1 = param((784, 256), 784), param((256,), 784)
                    self.W2, self.b2 = param((256, 10), 256), param((10,), 256)

                def forward(self, x):
                    return torch.relu(x @ self.W1 + self.b1) @ self.W2 + self.b2
            net = UserMLP()
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        loss_fn = nn.CrossEntropyLoss()

        def step():
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return step
    return None



def main():
    if sys.argv[1:2] == ["--corename"]:
        return corename()
    lib = sys.argv[1] if len(sys.argv) > 1 else "numpy"
    samples = max(1, min(100, int(sys.argv[2]))) if len(sys.argv) > 2 else 7
    prefix = sys.argv[3] if len(sys.argv) > 3 else ""
    nt = nthreads()
    if lib == "numpy":
        try:
            import numpy  # noqa: F401
        except ImportError as e:
            print("SKIP: numpy: %s" % e)
            return 0
        make, blas = numpy_case, blas_name()
    elif lib == "torch":
        try:
            import torch
        except ImportError as e:
            print("SKIP: torch: %s" % e)
            return 0
        torch.set_num_threads(nt)
        torch.rand(8, 8) @ torch.rand(8, 8)  # its BLAS loaded, for blas_name
        make, blas = torch_case, "torch-%s/%s" % (torch.__version__.split("+")[0], blas_name())
    else:
        print("bench_peers.py: library must be numpy or torch, not %r" % lib)
        return 2
    for name, kind, (m, k, n), inner in CASES:
        if not name.startswith(prefix):
            continue
        fn = make(kind, m, k, n)
        if fn is None:
            continue
        times = []
        for s in range(-1, min(samples, 3) if kind == "mlp" else samples):  # the epoch: 3 samples at most
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            t = (time.perf_counter() - t0) / inner
            if s >= 0:
                times.append(t)
        times.sort()
        med = times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
        print("%s %s seconds=%.9f median=%.9f threads=%d blas=%s" % (lib, name, times[0], med, nt, blas), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
