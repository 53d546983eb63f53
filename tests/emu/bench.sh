#!/bin/sh
# The GPU benchmark programs (built with BENCH_SMOKE: tiny sizes) and bench/run_gpu.sh, the
# script that runs them and compares, end to end on the emulator: they must run and parse,
# so the first session with a GPU does not lose its minutes to a broken script. No timing
# here means anything.
out=$(sh bench/run_gpu.sh build/emu/bench 2>&1); rc=$?
printf '%s\n' "$out" | grep -v "ASan doesn't fully support makecontext"
if [ "$rc" -ne 0 ]; then echo "FAIL emu bench (bench/run_gpu.sh exit status $rc)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
echo "PASS emu bench: bench/run_gpu.sh ran bench_gpu, bench_train and compare_gpu.py"
echo "1 passed, 0 failed, 0 skipped"
