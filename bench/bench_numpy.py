#!/usr/bin/env python3
"""bench/bench_numpy.py - the measurements of bench_cpu.c with NumPy (its BLAS: OpenBLAS here).

    /usr/bin/python3 bench/bench_numpy.py [reps] > numpy.txt    # any python that has numpy

Times, after one warm-up, the best of reps runs (default 10) of
    a @ b  for two float32 (1024, 1024) uniform [0, 1) arrays  -> GFLOP/s, counting 2 n^3
    a + b  for two float32 arrays of 2^24 elements              -> GB/s, counting 3 arrays of 4 bytes
and prints lines in bench_cpu's format:
    numpy matmul_f32_1024 seconds=0.017800 gflops=120.6 threads=2 blas=openblas
The BLAS uses OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) threads, all cores when unset; set it
to the thread count devtensor runs with (OMP_NUM_THREADS) to compare like with like.
"""
import os
import sys
import time

import numpy as np


def best_of(fn, reps):
    fn()  # warm-up
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def threads():
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var, "").strip().isdigit():
            return int(os.environ[var])
    return os.cpu_count() or 1


def blas_name():
    """Which BLAS numpy runs on: from the libraries mapped into this process (Linux), else numpy's config."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read().lower()
        for name in ("openblas", "mkl", "blis", "accelerate", "atlas"):
            if name in maps:
                return name
    except OSError:
        pass
    try:  # numpy >= 1.25
        return str(np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]).replace(" ", "_")
    except Exception:
        return "unknown"


def main():
    reps = max(1, int(sys.argv[1])) if len(sys.argv) > 1 else 10
    rng = np.random.default_rng(0)
    nt, blas = threads(), blas_name()

    n = 1024
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    s = best_of(lambda: a @ b, reps)
    print(f"numpy matmul_f32_{n} seconds={s:.6f} gflops={2.0 * n ** 3 / s * 1e-9:.1f} threads={nt} blas={blas}",
          flush=True)

    length = 1 << 24
    a = rng.random(length, dtype=np.float32)
    b = rng.random(length, dtype=np.float32)
    s = best_of(lambda: a + b, reps)
    print(f"numpy add_f32_{length} seconds={s:.6f} gbps={3.0 * 4.0 * length / s * 1e-9:.1f} threads={nt} blas={blas}",
          flush=True)


if __name__ == "__main__":
    main()
