#!/usr/bin/env python3
"""bench/compare.py - devtensor against NumPy, from the lines bench_cpu and bench_numpy.py print.

    ./bench_cpu > dt.txt; python3 bench/bench_numpy.py > np.txt
    python3 bench/compare.py dt.txt np.txt
    (./bench_cpu; python3 bench/bench_numpy.py) | python3 bench/compare.py
    python3 bench/compare.py --strict ...           # exit status 1 when a target is not met

Input lines look like `<library> <benchmark> seconds=<s> gflops=<x> threads=<n> blas=<name>`;
anything else is ignored. Where a benchmark appears more than once for a library the fastest
line counts (so several interleaved runs of both programs give a fair best-of-all). Each
devtensor build (blas=builtin or cblas, thread count) is a row, compared with the NumPy line
of the same thread count when there is one, else with NumPy's run on the most threads.
The ratio is devtensor's speed over NumPy's (higher is better). Targets:
    matmul_*  >= 0.50 with the built-in kernel, >= 0.95 with blas=cblas
    add_*     >= 0.80
Standard library only.
"""
import sys

TARGETS = (("matmul", 0.50, 0.95), ("add", 0.80, 0.80))  # prefix, built-in, cblas


def parse(lines):
    """{library: {benchmark: fields}}, fields keeping the fastest run; a speed is 1 / seconds."""
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 3 or "=" in parts[0] or "=" in parts[1]:
            continue
        fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
        try:
            fields["_speed"] = 1.0 / float(fields["seconds"])
        except (KeyError, ValueError, ZeroDivisionError):
            continue
        lib, bench = parts[0], parts[1]
        if lib == "devtensor":  # builds (built-in or CBLAS, thread counts) are kept apart
            bench += "@%s@%s" % (fields.get("blas", "builtin"), fields.get("threads", "?"))
        else:
            bench += "@%s" % fields.get("threads", "?")
        old = out.setdefault(lib, {}).get(bench)
        if old is None or fields["_speed"] > old["_speed"]:
            out[lib][bench] = fields
    return out


def rate(fields):
    for key, unit in (("gflops", "GFLOP/s"), ("gbps", "GB/s")):
        if key in fields:
            return "%s %s" % (fields[key], unit)
    return "%.6f s" % float(fields["seconds"])


def target(bench, blas):
    for prefix, builtin, cblas in TARGETS:
        if bench.startswith(prefix):
            return cblas if blas == "cblas" else builtin
    return None


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
    res = parse(lines)
    dt, ref = res.get("devtensor", {}), res.get("numpy", {})
    if not dt or not ref:
        print("compare.py: need both devtensor and numpy lines (got: %s)" % (", ".join(sorted(res)) or "none"))
        return 2
    head = ("benchmark", "devtensor", "numpy", "ratio", "target", "")
    rows, missed = [], 0
    by_bench = {}  # numpy lines per benchmark: {threads: fields}
    for key, fields in ref.items():
        bench, threads = key.split("@")
        by_bench.setdefault(bench, {})[threads] = fields
    for key in sorted(dt):
        bench, blas, threads = key.split("@")
        d, runs = dt[key], by_bench.get(bench, {})
        # numpy with the same thread count when there is such a line, else its most threads
        r = runs.get(threads) or (runs[max(runs, key=lambda t: int(t) if t.isdigit() else 0)] if runs else None)
        name = "%s (%s, %s thread%s)" % (bench, blas, threads, "" if threads == "1" else "s")
        if not r:
            rows.append((name, rate(d), "-", "-", "-", "(no numpy line)"))
            continue
        ratio = d["_speed"] / r["_speed"]
        t = target(bench, blas)
        verdict = "" if t is None else ("met" if ratio >= t else "NOT MET")
        missed += verdict == "NOT MET"
        note = "numpy on %s thread%s" % (r.get("threads", "?"), "" if r.get("threads") == "1" else "s")
        rows.append((name, rate(d), rate(r), "%.2fx" % ratio, ">= %.2fx" % t if t else "-",
                     "%s (%s)" % (verdict, note) if verdict else note))
    for bench in sorted(set(by_bench) - set(k.split("@", 1)[0] for k in dt)):
        for threads, r in sorted(by_bench[bench].items()):
            rows.append(("%s (%s threads)" % (bench, threads), "-", rate(r), "-", "-", "(no devtensor line)"))
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    return 1 if strict and missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
