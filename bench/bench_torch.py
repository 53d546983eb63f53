#!/usr/bin/env python3
"""bench/bench_torch.py - the PyTorch peer of bench_gpu.c and bench_train.c, on cuda:0.

    python3 bench/bench_torch.py            (bench/run_gpu.sh runs it; compare_gpu.py reads it)

Same sizes, repetition counts, warm-ups and statistic (median of the timed repetitions, best= also
printed) as the C programs:
    add_overhead_100x100    1000 x `a + b` on F32 (100, 100), wall clock to torch.cuda.synchronize, per op;
                            also the host's enqueue time (to the last `a + b` returning) and the GPU
                            span between CUDA events around the loop, per op
    alloc_cached_1024x1024  torch.empty((1024, 1024)) dropped at once (caching allocator), per pair
    add_f32_268435456       a + b on 2^28 floats, CUDA events; GB/s counting 3 arrays (information)
    matmul_f32_4096         a @ b, F32 (4096, 4096), CUDA events; TF32 off (plain FP32, as devtensor)
    d2h_to_cpu_256mib       x.cpu() of 256 MiB of F32 (new pageable host memory each time), wall clock
    sum_f32_268435456       x.sum() of 2^28 F32 ones, CUDA events; GB/s counting the bytes read
    sum_dim0_f32_8192x8192, sum_dim1_f32_8192x8192, sum_dim0_f32_1000000x2: x.sum(0) / x.sum(1) of
                            F32 (8192, 8192) and x.sum(0) of F32 (10^6, 2), small integers (as
                            bench_gpu.c), every result checked against the exact sum after timing
    train_step_mlp_784_256_10_b256  nn.Sequential(Linear(784, 256), ReLU(), Linear(256, 10)), MSELoss,
                            SGD(lr=0.01): zero_grad, forward, loss, backward, step; batch 256 on the GPU;
                            20 warm-up steps, median of 5 runs of 200 steps, synchronized wall clock
Prints one `torch <benchmark> key=value ...` line each; without PyTorch or CUDA a SKIP line, exit 0.
"""
import statistics
import sys
import time

REPS = 20
OVH_OPS = 1000
ALLOC_PAIRS = 10000
BIG_N = 1 << 28
MM_N = 4096
SUM_N = 1 << 28
SQ_N = 8192
TALL_N = 1000000
D2H_BYTES = 256 << 20
D2H_REPS = 10
TRAIN = dict(batch=256, warmup=20, steps=200, reps=5, lr=0.01)


def skip(why):
    print("SKIP: torch: %s" % why)
    sys.exit(0)


try:
    import torch
    from torch import nn
except Exception as e:  # ImportError, or a broken install
    skip("PyTorch not importable (%s)" % e)
if not torch.cuda.is_available():
    skip("no GPU for PyTorch (torch %s, torch.cuda.is_available() is False)" % torch.__version__)

DEV = torch.device("cuda:0")
# plain FP32 cuBLAS, as devtensor: the newer setting where this PyTorch has it (2.9+
# deprecates the older ones), else the older ones
try:
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    NEW_TF32_API = torch.backends.cuda.matmul.fp32_precision == "ieee"
except Exception:
    NEW_TF32_API = False
if not NEW_TF32_API:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def check(what, ok):
    if not ok:
        sys.exit("bench_torch: wrong result from %s" % what)


def event_seconds(fn):
    """GPU seconds of fn() between two CUDA events on the current stream."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    fn()
    e1.record()
    e1.synchronize()
    return 1e-3 * e0.elapsed_time(e1)


def add_overhead():
    a, b = torch.rand(100, 100, device=DEV), torch.rand(100, 100, device=DEV)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, enq, gpu = [], [], []
    for r in range(-3, REPS):  # three warm-up rounds
        torch.cuda.synchronize()
        e0.record()  # outside the wall-clock interval
        t0 = time.perf_counter()
        for _ in range(OVH_OPS):
            a + b
        t1 = time.perf_counter()
        e1.record()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        if r >= 0:
            times.append((t2 - t0) / OVH_OPS)
            enq.append((t1 - t0) / OVH_OPS)
            gpu.append(1e-3 * e0.elapsed_time(e1) / OVH_OPS)
    print("torch add_overhead_100x100 seconds_per_op=%.9f best=%.9f enqueue_seconds_per_op=%.9f enqueue_best=%.9f "
          "gpu_span_seconds_per_op=%.9f ops=%d reps=%d stat=median"
          % (statistics.median(times), min(times), statistics.median(enq), min(enq), statistics.median(gpu), OVH_OPS, REPS))


def alloc():
    def loop():
        for _ in range(ALLOC_PAIRS):
            torch.empty((1024, 1024), dtype=torch.float32, device=DEV)
    loop()  # warm-up
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        loop()
        times.append((time.perf_counter() - t0) / ALLOC_PAIRS)
    print("torch alloc_cached_1024x1024 seconds_per_pair=%.9f best=%.9f pairs=%d reps=%d stat=median"
          % (statistics.median(times), min(times), ALLOC_PAIRS, REPS))


def add_bandwidth():
    a = torch.full((BIG_N,), 1.0, device=DEV)
    b = torch.full((BIG_N,), 2.0, device=DEV)
    times = []
    for r in range(-2, REPS):
        torch.cuda.synchronize()
        t = event_seconds(lambda: a + b)
        if r >= 0:
            times.append(t)
    check("a + b", float((a + b).sum(dtype=torch.float64)) == 3.0 * BIG_N)
    nbytes = BIG_N * 4
    med = statistics.median(times)
    print("torch add_f32_268435456 seconds=%.9f gbps=%.1f best_gbps=%.1f bytes_counted=3x%d reps=%d stat=median timer=cudaEvent"
          % (med, 3.0 * nbytes / med / 1e9, 3.0 * nbytes / min(times) / 1e9, nbytes, REPS))
    del a, b
    torch.cuda.empty_cache()


def to_cpu():
    """x.cpu() of 256 MiB of F32: new (pageable) host memory each time, as dt_to(x, cpu) takes."""
    n = D2H_BYTES // 4
    x = (torch.arange(n, device=DEV, dtype=torch.int64) & 1023).to(torch.float32)
    want = float(sum(range(1024))) * (n // 1024)
    times = []
    for r in range(-1, D2H_REPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = x.cpu()
        t = time.perf_counter() - t0
        if r == -1:
            check("x.cpu()", float(y.sum(dtype=torch.float64)) == want)
        else:
            times.append(t)
        del y
    med = statistics.median(times)
    print("torch d2h_to_cpu_256mib seconds=%.9f gbps=%.2f best_gbps=%.2f reps=%d stat=median timer=wall"
          % (med, D2H_BYTES / med / 1e9, D2H_BYTES / min(times) / 1e9, D2H_REPS))
    del x
    torch.cuda.empty_cache()


def matmul():
    n = MM_N
    a, b = torch.rand(n, n, device=DEV), torch.rand(n, n, device=DEV)
    times = []
    for r in range(-3, REPS):
        torch.cuda.synchronize()
        t = event_seconds(lambda: a @ b)
        if r >= 0:
            times.append(t)
    # TF32 check: on uniform [0, 1) data TF32's error hides below 1e-4 relative; on zero-mean
    # data FP32 stays near 1e-7 of the largest entry and TF32 lands near 1e-4, so 1e-5 tells them apart
    if NEW_TF32_API:
        check("TF32 setting", torch.backends.cuda.matmul.fp32_precision == "ieee")
    else:
        check("TF32 flags", not torch.backends.cuda.matmul.allow_tf32 and torch.get_float32_matmul_precision() == "highest")
    za, zb = torch.randn(512, n, device=DEV), torch.randn(n, 512, device=DEV)
    c = (za @ zb).double()
    ref = za.double() @ zb.double()
    check("a @ b (TF32 on?)", float((c - ref).abs().max() / ref.abs().max()) < 1e-5)
    flops = 2.0 * n ** 3
    med = statistics.median(times)
    print("torch matmul_f32_4096 seconds=%.9f gflops=%.1f best_gflops=%.1f reps=%d stat=median timer=cudaEvent tf32=off"
          % (med, flops / med / 1e9, flops / min(times) / 1e9, REPS))
    del a, b, c, ref
    torch.cuda.empty_cache()


def reduce_one(name, x, dim):
    """x.sum() (dim None) or x.sum(dim), CUDA events; checked against the exact sum in F64."""
    fn = (lambda: x.sum()) if dim is None else (lambda: x.sum(dim))
    times = []
    for r in range(-3, REPS):  # three warm-up rounds
        torch.cuda.synchronize()
        t = event_seconds(fn)
        if r >= 0:
            times.append(t)
    want = x.double().sum() if dim is None else x.double().sum(dim)  # small integers: exact in F64
    got = fn().double()
    if dim is None:  # 2^28 ones: torch adds in F32, where a sum past 2^24 may round
        check(name, float((got - want).abs()) <= 1e-6 * float(want))
    else:
        check(name, torch.equal(got, want))
    nbytes = x.numel() * 4
    med = statistics.median(times)
    print("torch %s seconds=%.9f gbps=%.1f best_gbps=%.1f bytes_counted=%d reps=%d stat=median timer=cudaEvent"
          % (name, med, nbytes / med / 1e9, nbytes / min(times) / 1e9, nbytes, REPS))
    sys.stdout.flush()


def pattern(rows, cols, tall):
    """x[i, j] = (i % 4) + 4 (j % 2), or (i % 3) + j when tall: as bench_gpu.c."""
    i = torch.arange(rows, device=DEV).view(rows, 1)
    j = torch.arange(cols, device=DEV).view(1, cols)
    return ((i % 3) + j if tall else (i % 4) + 4 * (j % 2)).float().contiguous()


def reductions():
    x = torch.ones(SUM_N, device=DEV)
    reduce_one("sum_f32_268435456", x, None)
    del x
    x = pattern(SQ_N, SQ_N, False)
    reduce_one("sum_dim0_f32_8192x8192", x, 0)
    reduce_one("sum_dim1_f32_8192x8192", x, 1)
    del x
    x = pattern(TALL_N, 2, True)
    reduce_one("sum_dim0_f32_1000000x2", x, 0)
    del x
    torch.cuda.empty_cache()


def train_step():
    p = TRAIN
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(DEV)
    loss_fn = nn.MSELoss()
    opt = torch.optim.SGD(net.parameters(), lr=p["lr"])
    X = torch.randn(p["batch"], 784, device=DEV)
    Y = torch.randn(p["batch"], 10, device=DEV)

    def step():
        opt.zero_grad()
        loss = loss_fn(net(X), Y)
        loss.backward()
        opt.step()

    with torch.no_grad():
        loss0 = float(loss_fn(net(X), Y))
    for _ in range(p["warmup"]):
        step()
    times = []
    for _ in range(p["reps"]):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(p["steps"]):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / p["steps"])
    with torch.no_grad():
        loss1 = float(loss_fn(net(X), Y))
    print("torch train_step_mlp_784_256_10_b256 seconds_per_step=%.9f best=%.9f steps=%d reps=%d warmup=%d stat=median "
          "loss_start=%.6f loss_end=%.6f"
          % (statistics.median(times), min(times), p["steps"], p["reps"], p["warmup"], loss0, loss1))


def main():
    print("# bench_torch: torch %s, CUDA %s, %s; TF32 off (allow_tf32=False, matmul precision 'highest'); "
          "median of the timed repetitions after warm-up"
          % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name(DEV)))
    sys.stdout.flush()
    for bench in (add_overhead, alloc, add_bandwidth, matmul, to_cpu, reductions, train_step):
        bench()
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
