#!/usr/bin/env python3
"""bench/compare_gpu.py - devtensor on the GPU against its peers, from the lines that
bench_gpu, bench_train and bench_torch.py print (bench/run_gpu.sh runs all three).

    (build/bench_gpu; build/bench_train; python3 bench/bench_torch.py) | python3 bench/compare_gpu.py
    python3 bench/compare_gpu.py out.txt [more.txt ...] [--strict]

Input lines look like `<library> <benchmark> key=value ...` (library: devtensor, torch,
cudamemcpy or cudalaunch); lines starting with `SKIP:` are repeated under the table, anything else is ignored.
Where a benchmark appears more than once for a library, the best line counts. Prints a Markdown
table: measurement, devtensor, peer, ratio, target, met. The ratio is always devtensor's value
over the peer's value of the same unit: for times lower is better, for rates higher is better.
--strict: exit status 1 when a target is not met or not measured. Standard library only.
"""
import sys

# measurement, devtensor benchmark, peer library, peer benchmark, key, unit, lower is better,
# target: ("ratio", "<=" or ">=", x) | ("abs", "<", seconds) | None (information only)
ROWS = (
    ("per-op overhead, 1000 async add 100x100 F32", "add_overhead_100x100", "torch", "add_overhead_100x100",
     "seconds_per_op", "s/op", True, ("ratio", "<=", 0.5)),
    ("  of which host enqueue (loop to the last launch)", "add_overhead_100x100", "torch", "add_overhead_100x100",
     "enqueue_seconds_per_op", "s/op", True, None),
    ("  GPU span (cudaEvents around the loop)", "add_overhead_100x100", "torch", "add_overhead_100x100",
     "gpu_span_seconds_per_op", "s/op", True, None),
    ("  beside bare <<<>>> launches of a 100x100 add (floor)", "add_overhead_100x100", "cudalaunch", "add_overhead_100x100",
     "seconds_per_op", "s/op", True, None),
    ("cached alloc, empty 1024x1024 F32 + release", "alloc_cached_1024x1024", "torch", "alloc_cached_1024x1024",
     "seconds_per_pair", "s/pair", True, ("abs", "<", 1e-6)),
    ("add 2^28 F32 (3 arrays) vs cudaMemcpy D2D (2 x bytes)", "add_f32_268435456", "cudamemcpy", "d2d_1gib",
     "gbps", "GB/s", False, ("ratio", ">=", 0.9)),
    ("add 2^28 F32 vs torch a + b", "add_f32_268435456", "torch", "add_f32_268435456",
     "gbps", "GB/s", False, None),
    ("matmul 4096^3 F32 (no TF32 on either side)", "matmul_f32_4096", "torch", "matmul_f32_4096",
     "gflops", "GFLOP/s", False, ("ratio", ">=", 0.97)),
    ("host to device 256 MiB, pinned", "h2d_pinned_256mib", "cudamemcpy", "h2d_pinned_256mib",
     "gbps", "GB/s", False, ("ratio", ">=", 0.9)),
    ("host to device 256 MiB, pageable", "h2d_pageable_256mib", "cudamemcpy", "h2d_pageable_256mib",
     "gbps", "GB/s", False, None),
    ("device to host 256 MiB, dt_to(x, cpu) vs x.cpu()", "d2h_to_cpu_256mib", "torch", "d2h_to_cpu_256mib",
     "gbps", "GB/s", False, None),
    ("device to host 256 MiB, into touched pageable memory", "d2h_pageable_256mib", "cudamemcpy", "d2h_pageable_256mib",
     "gbps", "GB/s", False, None),
    ("sum 2^28 F32, whole tensor (bytes read)", "sum_f32_268435456", "torch", "sum_f32_268435456",
     "gbps", "GB/s", False, ("ratio", ">=", 0.8)),
    ("sum_dim 0 of (8192, 8192) F32", "sum_dim0_f32_8192x8192", "torch", "sum_dim0_f32_8192x8192",
     "gbps", "GB/s", False, ("ratio", ">=", 0.8)),
    ("sum_dim 1 of (8192, 8192) F32", "sum_dim1_f32_8192x8192", "torch", "sum_dim1_f32_8192x8192",
     "gbps", "GB/s", False, ("ratio", ">=", 0.8)),
    ("sum_dim 0 of (10^6, 2) F32", "sum_dim0_f32_1000000x2", "torch", "sum_dim0_f32_1000000x2",
     "gbps", "GB/s", False, ("ratio", ">=", 0.8)),
    ("train step, MLP 784-256-10, batch 256", "train_step_mlp_784_256_10_b256", "torch",
     "train_step_mlp_784_256_10_b256", "seconds_per_step", "s/step", True, ("ratio", "<=", 0.7)),
)


def parse(lines):
    """({(library, benchmark): {key: value}}, [SKIP lines]); every value kept as text."""
    out, skips = {}, []
    for line in lines:
        line = line.strip()
        if line.startswith("SKIP"):
            if line not in skips:  # bench_gpu and bench_train give the same reason
                skips.append(line)
            continue
        parts = line.split()
        if len(parts) < 3 or line.startswith("#") or "=" in parts[0] or "=" in parts[1]:
            continue
        fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
        if fields:
            out.setdefault((parts[0], parts[1]), []).append(fields)
    return out, skips


def value(runs, key, lower):
    """The best value of `key` over the runs of one benchmark, or None."""
    vals = []
    for fields in runs or ():
        try:
            vals.append(float(fields[key]))
        except (KeyError, ValueError):
            pass
    if not vals:
        return None
    return min(vals) if lower else max(vals)


def fmt(v, unit):
    if v is None:
        return "-"
    if unit.startswith("s/"):
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
            if v >= scale or scale == 1e-9:
                return "%.3g %s%s" % (v / scale, name, unit[1:])
    return "%.1f %s" % (v, unit)


def target_text(target, unit):
    if target is None:
        return "(information)"
    kind, op, x = target
    if kind == "ratio":
        return "%s %g" % (op, x)
    return "devtensor %s %s" % (op, fmt(x, unit))


def met(target, dt, ratio):
    """True, False, or None (nothing to judge)."""
    if target is None:
        return None
    kind, op, x = target
    v = ratio if kind == "ratio" else dt
    if v is None:
        return False
    return {"<=": v <= x, ">=": v >= x, "<": v < x}[op]


def main(argv):
    strict = "--strict" in argv
    paths = [a for a in argv if a != "--strict"] or ["-"]
    lines = []
    for p in paths:
        if p == "-":
            lines += sys.stdin.read().splitlines()
        else:
            with open(p) as f:
                lines += f.read().splitlines()
    res, skips = parse(lines)
    head = ("measurement", "devtensor", "peer", "ratio", "target", "met")
    rows, failed, unmeasured = [], 0, 0
    for label, bench, peer_lib, peer_bench, key, unit, lower, target in ROWS:
        dt = value(res.get(("devtensor", bench)), key, lower)
        peer = value(res.get((peer_lib, peer_bench)), key, lower)
        ratio = dt / peer if dt is not None and peer else None
        ok = met(target, dt, ratio)
        measured = dt is not None and (peer is not None or (target and target[0] == "abs"))
        if target is None:
            verdict = "-"
        elif not measured:
            verdict = "not measured"
            unmeasured += 1
        else:
            verdict = "met" if ok else "NOT MET"
        if target is not None and not ok:
            failed += 1
        rows.append((label, fmt(dt, unit), "%s %s" % (peer_lib, fmt(peer, unit)) if peer is not None else "%s -" % peer_lib,
                     "%.3f" % ratio if ratio is not None else "-", target_text(target, unit), verdict))
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    out = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    print(out(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(out(r))
    print()
    print("ratio = devtensor / peer in the row's unit (times: lower is better; rates: higher is better);")
    print("each value is the median of its program's timed repetitions (best line if given twice).")
    for s in skips:
        print(s)
    n = sum(1 for r in ROWS if r[7] is not None)
    print("%d of %d targets met%s" % (n - failed, n, " (%d not measured)" % unmeasured if unmeasured else ""))
    return 1 if strict and failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
