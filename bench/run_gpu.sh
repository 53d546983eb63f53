#!/bin/sh
# bench/run_gpu.sh — every GPU benchmark in one command, its output ready for bench/RESULTS.md.
#
#   make bench-gpu                          builds build/bench_gpu and build/bench_train, then runs this
#   sh bench/run_gpu.sh [BUILD_DIR] [--strict]
#
# Builds nothing. Prints the date, the GPU (nvidia-smi) and each command before its output, runs
# BUILD_DIR/bench_gpu (devtensor against cudaMemcpy), BUILD_DIR/bench_train and bench_torch.py
# (PyTorch; TORCH_PYTHON picks the interpreter, default python3), then compare_gpu.py's table of
# everything they printed. Without a GPU or PyTorch the programs print SKIP lines and exit 0.
# Exit status: 1 when a program failed or is missing (or, with --strict, a target was not met; or,
# with DT_REQUIRE_GPU=1, a program skipped).
set -u
cd "$(dirname "$0")/.." || exit 1
B=build
STRICT=
for a in "$@"; do
  case $a in
    --strict) STRICT=--strict ;;
    *) B=$a ;;
  esac
done
PY=${TORCH_PYTHON:-python3}
all=$(mktemp "${TMPDIR:-/tmp}/devtensor_bench_gpu.XXXXXX") || exit 1
one=$(mktemp "${TMPDIR:-/tmp}/devtensor_bench_gpu.XXXXXX") || exit 1
trap 'rm -f "$all" "$one"' EXIT
trap 'exit 130' INT TERM
status=0

# run CMD...: echo it, run it, show and keep its output
run() {
  echo "\$ $*"
  "$@" >"$one" 2>&1
  rc=$?
  cat "$one"
  cat "$one" >>"$all"
  if [ $rc -ne 0 ]; then echo "(exit status $rc)"; status=1; fi
  # DT_REQUIRE_GPU=1 (a run on a GPU machine): a benchmark that skips has failed
  if [ "${DT_REQUIRE_GPU:-}" = 1 ] && grep -q '^SKIP' "$one"; then echo "(skipped, and DT_REQUIRE_GPU=1)"; status=1; fi
}

echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "host: $(uname -srm), $(nproc 2>/dev/null || echo '?') CPUs"
if rev=${DT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}; then
  if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then rev="$rev, with uncommitted changes"; fi
  echo "commit: $rev"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  run nvidia-smi --query-gpu=name,driver_version --format=csv
else
  echo "nvidia-smi: not found"
fi
for p in "$B/bench_gpu" "$B/bench_train"; do
  if [ -x "$p" ]; then run "./$p"; else echo "missing: $p (make bench-gpu builds it)"; status=1; fi
done
# the bare launches beside the per-op row (information; nvcc builds it, the emulator has none)
if [ -x "$B/launch_floor" ]; then run "./$B/launch_floor"; else echo "no $B/launch_floor (make CUDA=1 bench-gpu builds it): no launch floor row"; fi
run "$PY" bench/bench_torch.py
echo
echo "\$ python3 bench/compare_gpu.py${STRICT:+ $STRICT}"
python3 bench/compare_gpu.py $STRICT "$all" || status=1
exit $status
