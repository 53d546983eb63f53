#!/bin/sh
# tests/cuda/gpu_check.cu (the CUDA backend against the CPU backend, op by op) on
# the emulator, without its timings; reports in the "N passed, N failed, N skipped" form.
out=$(build/emu/gpu_check --no-timings 2>&1); rc=$?
printf '%s\n' "$out" | grep -v "ASan doesn't fully support makecontext"
line=$(printf '%s\n' "$out" | grep '^[0-9]* checks, [0-9]* failed$' | tail -n 1)
if [ "$rc" -ne 0 ] || [ -z "$line" ]; then echo "FAIL emu gpu_check (exit status $rc)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
echo "PASS emu gpu_check: $line"
echo "1 passed, 0 failed, 0 skipped"
