#!/bin/sh
# tests/cuda/gpu_check.cu, the CUDA backend against the CPU backend op by op, reported in the
# "N passed, N failed, N skipped" form:
#   sh tests/cuda/gpu_check.sh                      on this machine's GPU (make test runs it where the
#                                                   NVIDIA driver is installed), with its timings
#   sh tests/cuda/gpu_check.sh BIN [ARGS...]        another build, e.g. the emulator's (tests/emu/gpu_check.sh)
# No GPU: a skip, or a failure under DT_REQUIRE_GPU=1.
bin=${1:-build/cuda/gpu_check}
[ $# -gt 0 ] && shift
case $bin in */emu/*) name="emu gpu_check" ;; *) name=gpu_check ;; esac
out=$("$bin" "$@" 2>&1); rc=$?
printf '%s\n' "$out" | grep -v "ASan doesn't fully support makecontext"
line=$(printf '%s\n' "$out" | grep '^[0-9]* checks, [0-9]* failed$' | tail -n 1)
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q '^no GPU'; then
  if [ "${DT_REQUIRE_GPU:-}" = 1 ]; then echo "FAIL $name: no GPU, and DT_REQUIRE_GPU=1"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
  echo "SKIP $name: $(printf '%s\n' "$out" | grep -m 1 '^no GPU')"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
if [ "$rc" -ne 0 ] || [ -z "$line" ]; then echo "FAIL $name (exit status $rc)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
echo "PASS $name: $line"
echo "1 passed, 0 failed, 0 skipped"
