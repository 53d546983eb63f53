#!/bin/sh
# Runs build/fault/oom_exhaust (tests/oom_exhaust.c, built with -fopenmp) with 300 MB of
# address space: it allocates until it fails and checks errors, not exits.
bin=${OOM_EXHAUST_BIN:-build/fault/oom_exhaust}
if [ ! -x "$bin" ]; then echo "FAIL oom_exhaust: $bin missing"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
ulimit -v 300000 2>/dev/null || { echo "SKIP oom_exhaust: ulimit -v not available"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
exec "$bin"
