#!/usr/bin/env python3
"""Differential fuzzer: devtensor (libdevtensor.so through ctypes, on the CPU or cuda:N) against
PyTorch on the CPU in float64, on random cases of every op family. See README.md here.

    python3 tools/fuzz/fuzz.py --device cpu --seed 1 --cases 2000
    python3 tools/fuzz/fuzz.py --lib build/fuzz-emu/libdevtensor.so --device cuda:0 --seed 2 --cases 500
    python3 tools/fuzz/fuzz.py ... --seed S --case I       (replays case I of seed S alone)

Ends with status 0 when every check agreed, 1 on a mismatch or an error of the fuzzer itself.
"""
import argparse
import os
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from check import Case, Report  # noqa: E402
from dtlib import DTError, Lib  # noqa: E402
from families import FAMILIES  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
# tracebacks of the fuzzer's own errors printed per family
TRACEBACKS = 2


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", help="cpu or cuda:N (default cpu)")
    ap.add_argument("--lib", help="libdevtensor.so to load (default: build/lib/cpu/ for cpu, "
                                  "build/lib/cuda/ for cuda:N, as make lib builds them)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=1000, help="cases to run (default 1000)")
    ap.add_argument("--families", help="comma-separated subset of: " + ",".join(FAMILIES))
    ap.add_argument("--big", action="store_true", help="larger shapes in half of the cases")
    ap.add_argument("--case", type=int, help="run only this case (of --seed, with the same --families and --big)")
    ap.add_argument("--time", type=float, help="stop starting cases after this many seconds")
    ap.add_argument("--keep", type=int, default=3, help="mismatches printed per family and op (default 3)")
    a = ap.parse_args()
    if a.families:
        a.families = a.families.split(",")
        unknown = [f for f in a.families if f not in FAMILIES]
        if unknown:
            ap.error("unknown families: %s (known: %s)" % (",".join(unknown), ",".join(FAMILIES)))
    if a.lib is None:
        a.lib = os.path.join(ROOT, "build", "lib", "cpu" if a.device == "cpu" else "cuda", "libdevtensor.so")
    return a


def replay_command(a, index):
    cmd = [sys.executable, "tools/fuzz/fuzz.py", "--lib", a.lib, "--device", a.device, "--seed", str(a.seed),
           "--case", str(index)]
    if a.families:
        cmd += ["--families", ",".join(a.families)]
    if a.big:
        cmd.append("--big")
    env = "DTEMU_GPUS=%s " % os.environ["DTEMU_GPUS"] if "DTEMU_GPUS" in os.environ else ""
    return env + " ".join(cmd)


def describe(t):
    if isinstance(t, tuple):  # (shape, dtype) of an input too large to keep
        return "%s %s" % (str(t[1]).replace("torch.", ""), list(t[0]))
    return "%s %s = %s" % (str(t.dtype).replace("torch.", ""), list(t.shape), t.tolist())


def print_mismatches(a, report):
    shown = {}
    for family, index, op, note, msg, inputs, got, ref in report.kept:
        key = (family, op)
        shown[key] = shown.get(key, 0) + 1
        if shown[key] > a.keep:
            continue
        print("\nMISMATCH %s/%s, case %d%s: %s" % (family, op, index, " (%s)" % note if note else "", msg))
        for k, t in enumerate(inputs):
            print("  input %d: %s" % (k, describe(t)))
        if got is not None and ref is not None and (a.case is not None or got.numel() <= 64):
            print("  devtensor: %s" % describe(got))
            print("  PyTorch:   %s" % describe(ref.detach()))
        print("  replay: %s" % replay_command(a, index))
    for key, n in sorted(shown.items()):
        if n > a.keep:
            print("(%s/%s: %d more not shown)" % (key[0], key[1], n - a.keep))


def main():
    a = parse_args()
    # PyTorch's notes on slow half kernels and the like
    warnings.filterwarnings("ignore")
    try:
        lib = Lib(a.lib, a.device)
    except (OSError, DTError) as e:
        print("fuzz.py: %s" % e, file=sys.stderr)
        return 2
    if a.case is not None:
        torch.set_printoptions(profile="full")
    names = a.families or list(FAMILIES)
    weights = [FAMILIES[n][1] for n in names]
    report = Report()
    indices = [a.case] if a.case is not None else range(a.cases)
    t0 = time.monotonic()
    done = 0
    for index in indices:
        if a.time is not None and time.monotonic() - t0 > a.time:
            break
        case = Case(lib, report, a.seed, index, a.big)
        name = case.R.choices(names, weights)[0]
        case.family = name
        report.cases[name] += 1
        done += 1
        try:
            FAMILIES[name][0](case)
        except Exception:
            report.harness[name] += 1
            if report.harness[name] <= TRACEBACKS or a.case is not None:
                print("\nFUZZER ERROR in %s, case %d:" % (name, index))
                traceback.print_exc(file=sys.stdout)
                print("  replay: %s" % replay_command(a, index))

    print("devtensor on %s (%s) against PyTorch %s, seed %d, %d cases%s"
          % (a.device, a.lib, torch.__version__, a.seed, done, " (big shapes)" if a.big else ""))
    print("%-12s %7s %7s %9s %10s" % ("family", "cases", "checks", "refused", "mismatches"))
    for n in names:
        extra = "  (%d fuzzer errors)" % report.harness[n] if report.harness[n] else ""
        print("%-12s %7d %7d %9d %10d%s" % (n, report.cases[n], report.checks[n], report.both_refuse[n],
                                            report.mismatches[n], extra))
    total = sum(report.mismatches.values())
    errors = sum(report.harness.values())
    print("%-12s %7d %7d %9d %10d" % ("all", done, sum(report.checks.values()), sum(report.both_refuse.values()),
                                     total))
    print_mismatches(a, report)
    if total or errors:
        print("\nFAILED: %d mismatches, %d fuzzer errors" % (total, errors))
        return 1
    print("\nOK: no mismatch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
