#!/usr/bin/env python3
"""bench/compare.py - devtensor against its best CPU peer (NumPy, PyTorch), from the lines that
bench_cpu and bench_peers.py print (bench/run_cpu.sh feeds it several interleaved rounds).

    python3 bench/compare.py [--strict] FILE...      (- : standard input)

Input lines: `<library> <case> seconds=<s> [median=<s>] ... threads=<n> blas=<name>`; anything else
is ignored. Per library and case: the best `seconds` over all rounds counts, and the spread is
how much slower the worst round's best was (max/min - 1, over rounds). The peer is the faster
of NumPy and PyTorch (with all threads or with one) on that case; the ratio is devtensor's speed over the peer's (higher is
better: 1.00x same speed). A peer may also have run with another OpenBLAS core type than OpenBLAS's
own choice (lines `numpy[SkylakeX] ...`, `torch-1t[SkylakeX] ...`: run_cpu.sh): its column then
shows the faster of the two, with the core type that served in brackets (`[SkylakeX]`, or `[own
Cooperlake]` for OpenBLAS's own choice), and a line under the table counts them. Targets: the best peer's speed times
    add of 2^24, the 10x10 add                     1.0
    matmul 256..2048 (square)                      0.9
    matmul 32..128 and the skinny shapes           0.8
    every other case                               0.8
    the MLP epoch                                  1/0.6 (devtensor's epoch <= 0.6x PyTorch's time)
    the MLP steps through autograd                 1.0 (devtensor's step <= PyTorch's time)
Prints a Markdown table (for bench/RESULTS.md). --strict: exit status 1 when a target is missed.

    python3 bench/compare.py --loaded FILE

compares `devtensor-2t` with `devtensor-1t` lines (run_cpu.sh's run beside a spinning process):
the medians' middle over rounds, 2 threads over 1; the target is 2 threads at most 1.25x slower.
Standard library only.
"""
import re
import sys

PEERS = ("numpy", "torch", "torch-1t")  # torch-1t: PyTorch on one thread (run_cpu.sh)


def target(case):
    if case in ("add_f32_16777216", "add_f32_10x10"):
        return 1.0
    if case.startswith("mlp_epoch"):
        return 1 / 0.6
    if case.startswith("mlp_step"):
        return 1.0
    m = re.match(r"matmul_f32_(\d+)x(\d+)x(\d+)$", case)
    if m:
        a, b, c = (int(x) for x in m.groups())
        if a == b == c and 256 <= a <= 2048:
            return 0.9
        return 0.8
    return 0.8


def parse(lines):
    """{library: {case: {"runs": [seconds, ...], "threads": str, "blas": str}}}"""
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 3 or "=" in parts[0] or "=" in parts[1]:
            continue
        fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
        try:
            s = float(fields["seconds"])
        except (KeyError, ValueError):
            continue
        if s <= 0:
            continue
        e = out.setdefault(parts[0], {}).setdefault(parts[1], {"runs": [], "threads": "?", "blas": "?"})
        e["runs"].append(s)
        e["threads"], e["blas"] = fields.get("threads", "?"), fields.get("blas", "?")
    return out


def fmt_time(s):
    if s >= 1:
        return "%.3f s" % s
    if s >= 1e-3:
        return "%.3f ms" % (s * 1e3)
    return "%.2f us" % (s * 1e6)


def cell(e, tag=""):
    if not e:
        return "-"
    best, worst = min(e["runs"]), max(e["runs"])
    spread = "" if len(e["runs"]) < 2 else " (+%.0f%%)" % (100 * (worst / best - 1))
    return fmt_time(best) + spread + (" [%s]" % tag if tag else "")


def own_core(e):
    """the OpenBLAS core type in a line's blas= field (openblas/<core>), or ''"""
    parts = e["blas"].split("/")
    return parts[-1] if len(parts) >= 2 and parts[-2] == "openblas" else ""


def best_variant(res, peer, case):
    """(library label, entry, tag) of the fastest run of `peer` on `case` over its core types:
    `peer` itself (OpenBLAS's own choice) and `peer[<core>]` (OPENBLAS_CORETYPE=<core>); tag names
    the core type that served when there was a choice, else ''. (None, None, '') when none ran."""
    have = [(lib, res[lib][case]) for lib in res
            if (lib == peer or (lib.startswith(peer + "[") and lib.endswith("]"))) and case in res[lib]]
    if not have:
        return None, None, ""
    lib, e = min(have, key=lambda le: min(le[1]["runs"]))
    if len(have) < 2:
        return lib, e, ""
    return lib, e, lib[len(peer) + 1:-1] if lib != peer else ("own " + own_core(e)).strip()


LOADED_MAX = 1.25  # 2 threads at most this much slower than 1 with a core busy


def loaded(lines):
    """The --loaded table: per case, 2-thread time over 1-thread time, medians, beside a spinner."""
    med = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 3 or parts[0] not in ("devtensor-1t", "devtensor-2t"):
            continue
        fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
        try:
            m = float(fields.get("median", fields["seconds"]))
        except (KeyError, ValueError):
            continue
        med.setdefault(parts[1], {}).setdefault(parts[0][-2:], []).append(m)
    if not med:
        print("compare.py: no devtensor-1t/2t lines")
        return 2
    mid = lambda v: sorted(v)[len(v) // 2]
    print("Median per call (the middle round's median), 2 threads over 1 thread (lower is better).\n")
    print("| case | 1 thread | 2 threads | 2t / 1t | target | verdict |")
    print("|---|---|---|---|---|---|")
    missed = 0
    for case, v in med.items():
        if "1t" not in v or "2t" not in v:
            continue
        r = mid(v["2t"]) / mid(v["1t"])
        missed += r > LOADED_MAX
        print("| %s | %s | %s | %.2fx | <= %.2fx | %s |" % (case, fmt_time(mid(v["1t"])), fmt_time(mid(v["2t"])), r,
                                                       LOADED_MAX, "met" if r <= LOADED_MAX else "NOT MET"))
    print("%d of %d targets missed." % (missed, len(med)))
    return 0


def main(argv):
    if argv[:1] == ["--loaded"]:
        with open(argv[1]) as f:
            return loaded(f.read().splitlines())
    strict = "--strict" in argv
    paths = [a for a in argv if a != "--strict"] or ["-"]
    lines = []
    for p in paths:
        if p == "-":
            lines += sys.stdin.read().splitlines()
        else:
            with open(p) as f:
                lines += f.read().splitlines()
    res = parse(lines)
    dt = res.get("devtensor", {})
    if not dt:
        print("compare.py: no devtensor lines")
        return 2
    rounds = max(len(e["runs"]) for e in dt.values())
    print("Best per call over %d round%s (in brackets: the spread, how much slower the slowest round's best was)."
          % (rounds, "" if rounds == 1 else "s"))
    print("Ratio: devtensor's speed over the faster peer's (higher is better).\n")
    head = ["case", "devtensor"] + list(PEERS) + ["ratio vs best peer", "target", "verdict"]
    rows, missed, served = [], 0, {}
    for case in sorted(dt, key=lambda c: list(dt).index(c)):  # the order bench_cpu printed
        d = dt[case]
        best = {p: best_variant(res, p, case) for p in PEERS}
        peers = {best[p][0]: best[p][1] for p in PEERS if best[p][1]}
        have = {p: min(e["runs"]) for p, e in peers.items()}
        for p in PEERS:
            if best[p][2]:
                served.setdefault(p, {}).setdefault(best[p][2], []).append(case)
        row = [case, cell(d)] + [cell(best[p][1], best[p][2]) for p in PEERS]
        if have:
            bp = min(have, key=have.get)
            ratio = have[bp] / min(d["runs"])
            t = target(case)
            ok = ratio >= t
            missed += not ok
            row += ["%.2fx (%s)" % (ratio, bp), ">= %.2fx" % t, "met" if ok else "NOT MET"]
        else:
            row += ["-", "-", "no peer line"]
        rows.append(row)
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    th = {lib: next(iter(v.values()))["threads"] for lib, v in res.items() if v}
    bl = {lib: next(iter(v.values()))["blas"] for lib, v in res.items() if v}
    print("\nThreads: " + ", ".join("%s %s (%s)" % (lib, th[lib], bl[lib]) for lib in sorted(th)))
    for p in PEERS:
        if p in served:
            print("OpenBLAS core type that served %s: %s." % (p, ", ".join(
                "%s in %d of %d rows" % (t, len(c), sum(len(v) for v in served[p].values()))
                for t, c in sorted(served[p].items(), key=lambda tc: -len(tc[1])))))
    print("%d of %d targets missed." % (missed, len(rows)))
    return 1 if strict and missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
