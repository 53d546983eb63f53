#!/bin/sh
# Runs every example once with small sizes (a smoke test: each must exit 0).
#   tests/examples_smoke.sh [DIR [LABEL [EXTRA_BINARY ...]]]
# DIR holds the example binaries (build/ex); LABEL prefixes the names
# ("cuda " for the CUDA builds); each EXTRA_BINARY runs without arguments.
dir=${1:-build/ex}; label=${2:-}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
p=0; f=0
run() {
  name=$1; shift
  if out=$("$@" 2>&1); then echo "PASS ${label}example $name"; p=$((p + 1))
  else echo "FAIL ${label}example $name:"; printf '%s\n' "$out" | tail -n 5; f=$((f + 1)); fi
}
run gpus "$dir/gpus"
run devices "$dir/devices"
run ex1_matmul_speed "$dir/ex1_matmul_speed" 128
run ex2_params_io "$dir/ex2_params_io"
run ex3_norm_log "$dir/ex3_norm_log" 50
run ex4_two_gpus "$dir/ex4_two_gpus" 128
for extra in "$@"; do run "$(basename "$extra")" "$extra"; done
echo "$p passed, $f failed, 0 skipped"
[ "$f" -eq 0 ]
