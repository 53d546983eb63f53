#!/bin/sh
# The CUDA builds of the examples (on a GPU when there is one, else on the CPU),
# the user's own-kernel example and the README's nvcc one-command build.
dir=build/cuda
p=0; f=0
run() {
  name=$1; shift
  if out=$("$@" 2>&1); then echo "PASS cuda example $name"; p=$((p + 1))
  else echo "FAIL cuda example $name:"; printf '%s\n' "$out" | tail -n 5; f=$((f + 1)); fi
}
run gpus "$dir/ex/gpus"
run devices "$dir/ex/devices"
run ex1_matmul_speed "$dir/ex/ex1_matmul_speed" 256
run ex2_params_io "$dir/ex/ex2_params_io"
run ex3_norm_log "$dir/ex/ex3_norm_log" 50
run ex4_two_gpus "$dir/ex/ex4_two_gpus" 256
run own_kernel "$dir/own_kernel"
run gpus_nvcc "$dir/gpus_nvcc"
echo "$p passed, $f failed, 0 skipped"
[ "$f" -eq 0 ]
