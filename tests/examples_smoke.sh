#!/bin/sh
# Runs every example once with small sizes (a smoke test: each must exit 0).
# $1: the folder holding the example binaries (build/ex).
dir=${1:-build/ex}
p=0; f=0
run() {
  name=$1; shift
  if out=$("$@" 2>&1); then echo "PASS example $name"; p=$((p + 1))
  else echo "FAIL example $name:"; printf '%s\n' "$out" | tail -n 5; f=$((f + 1)); fi
}
run gpus "$dir/gpus"
run devices "$dir/devices"
run ex1_matmul_speed "$dir/ex1_matmul_speed" 128
run ex2_params_io "$dir/ex2_params_io"
run ex3_norm_log "$dir/ex3_norm_log" 50
run ex4_two_gpus "$dir/ex4_two_gpus" 128
echo "$p passed, $f failed, 0 skipped"
[ "$f" -eq 0 ]
