"""The Python tests' harness (tests/interop.py, tests/check_safetensors.py): PASS/FAIL/SKIP
lines and the "N passed, N failed, N skipped" summary, as tests/harness.h prints them."""
import sys

counts = {"passed": 0, "failed": 0, "skipped": 0}


def check(name, ok, why=""):
    if ok:
        counts["passed"] += 1
        print("PASS " + name)
    else:
        counts["failed"] += 1
        print("FAIL " + name + (": " + str(why) if why else ""))


def skip(name, why):
    counts["skipped"] += 1
    print("SKIP " + name + ": " + why)


def finish():
    print("%d passed, %d failed, %d skipped" % (counts["passed"], counts["failed"], counts["skipped"]))
    sys.exit(1 if counts["failed"] else 0)
