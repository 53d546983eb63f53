#!/bin/sh
# tests/cuda/gpu_check.cu on this machine's GPU (make test runs it where the NVIDIA driver is
# installed): the CUDA backend against the CPU backend, op by op, then a few timings; reported in
# the "N passed, N failed, N skipped" form. No GPU: a skip, or a failure under DT_REQUIRE_GPU=1.
out=$(build/cuda/gpu_check 2>&1); rc=$?
printf '%s\n' "$out"
line=$(printf '%s\n' "$out" | grep '^[0-9]* checks, [0-9]* failed$' | tail -n 1)
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q '^no GPU'; then
  if [ "${DT_REQUIRE_GPU:-}" = 1 ]; then echo "FAIL gpu_check: no GPU, and DT_REQUIRE_GPU=1"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
  echo "SKIP gpu_check: $(printf '%s\n' "$out" | grep -m 1 '^no GPU')"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
if [ "$rc" -ne 0 ] || [ -z "$line" ]; then echo "FAIL gpu_check (exit status $rc)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
echo "PASS gpu_check: $line"
echo "1 passed, 0 failed, 0 skipped"
