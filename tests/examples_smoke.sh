#!/bin/sh
# Runs every example once with small sizes (a smoke test: each must exit 0; one
# that exits 77 did not run what it shows on this machine, e.g. own_kernel
# without a GPU, and counts as skipped), then checks gpus's transcript.
#   tests/examples_smoke.sh [DIR [LABEL [EXTRA_BINARY ...]]]
# DIR holds the example binaries (build/ex); LABEL prefixes the names
# ("cuda " for the CUDA builds); each EXTRA_BINARY runs without arguments.
# GPUS_GOLDEN: space-separated VAR=VALUE:FILE; for each, gpus runs with VAR=VALUE
# in its environment and its output (stdout and stderr) must equal FILE.
# For build/ex it defaults to the CPU transcript under one and two threads.
dir=${1:-build/ex}; label=${2:-}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
if [ -z "${GPUS_GOLDEN+set}" ] && [ "$dir" = build/ex ]; then
  GPUS_GOLDEN="OMP_NUM_THREADS=1:tests/golden/gpus_cpu.txt OMP_NUM_THREADS=2:tests/golden/gpus_cpu.txt"
fi
p=0; f=0; s=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS ${label}example $1"; p=$((p + 1)); }
fail() { echo "FAIL ${label}example $1"; f=$((f + 1)); }
run() {
  name=$1; shift
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -eq 0 ]; then pass "$name"
  elif [ "$rc" -eq 77 ] && [ "${DT_REQUIRE_GPU:-}" = 1 ] && printf '%s\n' "$out" | grep -q '^no GPU'; then
    fail "$name: $(printf '%s\n' "$out" | grep -m 1 '^no GPU'), and DT_REQUIRE_GPU=1"
  elif [ "$rc" -eq 77 ]; then
    echo "SKIP ${label}example $name: $(printf '%s\n' "$out" | grep -m 1 '^no GPU' || echo 'exit status 77')"; s=$((s + 1))
  else fail "$name: exit status $rc"; printf '%s\n' "$out" | tail -n 5; fi
}
# expect_fail NAME TEXT CMD...: CMD must exit non-zero and say TEXT, and must not say "wrote"
expect_fail() {
  name=$1; text=$2; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne 0 ] && printf '%s\n' "$out" | grep -qF "$text" && ! printf '%s\n' "$out" | grep -q '^wrote'; then pass "$name"
  else fail "$name: exit status $rc, output:"; printf '%s\n' "$out" | tail -n 5; fi
}
run gpus "$dir/gpus"
run devices "$dir/devices"
run ex1_matmul_speed "$dir/ex1_matmul_speed" 128 "$tmp/ex1.csv"
expect_fail "ex1_matmul_speed reports an unwritable CSV" "$tmp/no/ex1.csv" "$dir/ex1_matmul_speed" 32 "$tmp/no/ex1.csv"
run ex2_params_io "$dir/ex2_params_io" "$tmp/ex2.safetensors"
expect_fail "ex2_params_io reports an unwritable path" "$tmp/no/ex2.safetensors" "$dir/ex2_params_io" "$tmp/no/ex2.safetensors"
run ex3_norm_log "$dir/ex3_norm_log" 50
run ex4_two_gpus "$dir/ex4_two_gpus" 128
# Fashion-MNIST: two short epochs of both models must learn (loss below ln 10 and
# falling, test accuracy well above chance); emulated GPUs: softmax regression on fewer examples (8 s)
if [ -x "$dir/fashion_mnist" ]; then
  case "$label" in emu*) fm="--model softmax --train 256 --test 128 --batch 64";; *) fm="--train 2000 --test 1000";; esac
  # shellcheck disable=SC2086
  run fashion_mnist "$dir/fashion_mnist" --epochs 2 $fm --min-acc 0.3 --csv "$tmp/fashion.csv"
  # the MLP under autocast BF16, and under the trainer's graph (captured once, replayed); emulated
  # GPUs: both at once, one epoch of softmax regression on a few examples
  case "$label" in
    emu*)
      run "fashion_mnist --autocast bf16 --cuda-graph" "$dir/fashion_mnist" --epochs 1 --model softmax --train 256 --test 128 \
        --batch 64 --autocast bf16 --cuda-graph --min-acc 0.3 --csv "$tmp/fashion.csv" ;;
    *)
      run "fashion_mnist --autocast bf16" "$dir/fashion_mnist" --epochs 2 --model mlp --train 2000 --test 1000 --autocast bf16 \
        --min-acc 0.3 --csv "$tmp/fashion.csv"
      run "fashion_mnist --cuda-graph" "$dir/fashion_mnist" --epochs 2 --model mlp --train 2000 --test 1000 --cuda-graph \
        --min-acc 0.3 --csv "$tmp/fashion.csv" ;;
  esac
  # autocast F16 under the graph: the gradients captured, the grad scaler's check and the step eager
  run "fashion_mnist --autocast f16 --cuda-graph" "$dir/fashion_mnist" --epochs 1 --model softmax --train 256 --test 128 --batch 64 \
    --autocast f16 --cuda-graph --min-acc 0.3 --csv "$tmp/fashion.csv"
  mkdir "$tmp/fm"
  # a header promising 2 images of 28 x 28, and 100 bytes of them
  { printf '\000\000\010\003\000\000\000\002\000\000\000\034\000\000\000\034'; head -c 100 /dev/zero; } | gzip > "$tmp/fm/train-images-idx3-ubyte.gz"
  expect_fail "fashion_mnist reports a truncated data file" "train-images-idx3-ubyte.gz: truncated" "$dir/fashion_mnist" --data "$tmp/fm"
else
  echo "SKIP ${label}example fashion_mnist: not built (zlib's header is missing: apt-get install zlib1g-dev)"; s=$((s + 1))
fi
# LeNet through autograd: one short epoch on a thousand examples must learn
if [ -x "$dir/lenet" ]; then
  run lenet "$dir/lenet" --epochs 1 --train 1024 --test 256 --batch 32 --lr 0.1 --relu-max --min-acc 0.3 --csv "$tmp/lenet.csv"
else
  echo "SKIP ${label}example lenet: not built (zlib's header is missing: apt-get install zlib1g-dev)"; s=$((s + 1))
fi
# logistic regression from raw operations and autograd: two short epochs must learn
if [ -x "$dir/logistic_regression" ]; then
  case "$label" in emu*) lr="--train 256 --test 128 --batch 64";; *) lr="--train 2000 --test 1000";; esac
  # shellcheck disable=SC2086
  run logistic_regression "$dir/logistic_regression" --epochs 2 $lr --min-acc 0.3
fi
# ResNet-18 (batch norm, residual blocks written as modules) at 28x28: a few steps must run; two
# short epochs on the CPU must learn
if [ -x "$dir/resnet" ]; then
  case "$label" in emu*) rn="--epochs 1 --train 16 --test 8 --batch 8 --min-acc 0";; *) rn="--epochs 2 --train 256 --test 128 --batch 32 --lr 0.05 --min-acc 0.1";; esac
  # shellcheck disable=SC2086
  run resnet "$dir/resnet" --size 28 $rn --csv "$tmp/resnet.csv"
fi
# D2L chapter 8's networks: each one's layer summary against PyTorch's (tests/golden/modern_cnn_summary.txt,
# printed by bench/modern_cnn_torch.py --summary), then short trainings at small sizes: batch norm's LeNet
# must learn; GoogLeNet (Inception's concatenations), DenseNet and RegNet (grouped convolutions; under
# autocast F16, whose first steps overflow) must run (emulated GPUs: DenseNet on a few images)
if [ -x "$dir/modern_cnn" ]; then
  for m in alexnet vgg nin googlenet bnlenet densenet regnet; do
    name="modern_cnn --model $m --summary prints PyTorch's shapes"
    sed -n "/^== $m\$/,/^==/p" tests/golden/modern_cnn_summary.txt | grep -v '^==' > "$tmp/want.txt"
    "$dir/modern_cnn" --model "$m" --summary > "$tmp/got.txt" 2>&1; rc=$?
    if [ "$rc" -eq 0 ] && [ -s "$tmp/want.txt" ] && diff -u "$tmp/want.txt" "$tmp/got.txt" > "$tmp/summary.diff"; then pass "$name"
    else fail "$name: exit status $rc, the difference (- PyTorch, + devtensor):"; cat "$tmp/summary.diff"; fi
  done
  expect_fail "modern_cnn refuses a size too small for AlexNet" "input smaller than the kernel" \
    "$dir/modern_cnn" --model alexnet --size 60 --summary
  case "$label" in
    emu*)
      run "modern_cnn --model densenet" "$dir/modern_cnn" --model densenet --size 32 --epochs 1 --train 8 --test 4 --batch 4 \
        --min-acc 0 --csv "$tmp/cnn.csv" ;;
    *)
      run "modern_cnn --model bnlenet" "$dir/modern_cnn" --model bnlenet --epochs 2 --train 1024 --test 256 --batch 32 \
        --min-acc 0.3 --csv "$tmp/cnn.csv"
      for m in googlenet densenet "regnet --autocast f16"; do
        # shellcheck disable=SC2086
        run "modern_cnn --model $m" "$dir/modern_cnn" --model $m --size 32 --epochs 1 --train 64 --test 32 --batch 16 \
          --min-acc 0 --csv "$tmp/cnn.csv"
      done ;;
  esac
else
  echo "SKIP ${label}example modern_cnn: not built (zlib's header is missing: apt-get install zlib1g-dev)"; s=$((s + 1))
fi
# an MLP of user-written GELU-dropout blocks: two short epochs must learn (emulated GPUs: run)
if [ -x "$dir/mlp_block" ]; then
  case "$label" in emu*) mb="--train 256 --test 128 --batch 64 --min-acc 0";; *) mb="--train 2000 --test 1000 --batch 64 --min-acc 0.3";; esac
  # shellcheck disable=SC2086
  run mlp_block "$dir/mlp_block" --epochs 2 $mb
fi
run ddp "$dir/ddp"
for extra in "$@"; do run "$(basename "$extra")" "$extra"; done

# --help: the usage on stdout, exit status 0, nothing run or written (no file named --help);
# an unknown option: a non-zero exit that names it
absdir=$(cd "$dir" && pwd)
for e in ex1_matmul_speed ex2_params_io ex3_norm_log ex4_two_gpus fashion_mnist lenet logistic_regression resnet modern_cnn mlp_block; do
  [ -x "$dir/$e" ] || continue
  (cd "$tmp" && "$absdir/$e" --help > help.out 2> help.err); rc=$?
  if [ "$rc" -eq 0 ] && grep -q "^usage: $e" "$tmp/help.out" && [ ! -s "$tmp/help.err" ] && [ ! -e "$tmp/--help" ]; then pass "$e --help"
  else fail "$e --help: exit status $rc"; cat "$tmp/help.out" "$tmp/help.err" | tail -n 5; fi
  rm -f "$tmp/--help" "$tmp/help.out" "$tmp/help.err"
done
for e in fashion_mnist lenet logistic_regression resnet modern_cnn mlp_block; do
  [ -x "$dir/$e" ] && expect_fail "$e names an unknown option" "unknown option --epoch" "$dir/$e" --epoch 1
done
# the exercises' positional arguments out of range: the usage, a non-zero exit
expect_fail "ex1_matmul_speed refuses a size below 16" "usage: ex1_matmul_speed" "$dir/ex1_matmul_speed" 8
expect_fail "ex3_norm_log refuses 0 steps" "usage: ex3_norm_log" "$dir/ex3_norm_log" 0
expect_fail "ex4_two_gpus refuses a negative size" "usage: ex4_two_gpus" "$dir/ex4_two_gpus" -5

# gpus's whole transcript against a golden file
for g in ${GPUS_GOLDEN:-}; do
  setting=${g%%:*}; file=${g#*:}
  name="gpus ($setting) prints $file"
  if [ ! -f "$file" ]; then fail "$name: $file is missing"; continue; fi
  env "$setting" "$dir/gpus" > "$tmp/gpus.txt" 2>&1; rc=$?
  if [ "$rc" -ne 0 ]; then fail "$name: exit status $rc"; tail -n 5 "$tmp/gpus.txt"; continue; fi
  if diff -u "$file" "$tmp/gpus.txt" > "$tmp/gpus.diff"; then pass "$name"
  else fail "$name: the output differs (- expected, + got):"; cat "$tmp/gpus.diff"; fi
  # On one GPU dt_add refuses X + Y; without a GPU gpus quotes that refusal: the
  # same words (tests/golden/gpus_cpu.txt holds what the CPU build prints).
  q=$(sed -n 's/^refused: \(.* b is on cpu and a is on cuda:0 .*\)$/\1/p' "$tmp/gpus.txt")
  if [ -n "$q" ]; then
    if grep -qxF " \"$q\")" tests/golden/gpus_cpu.txt; then pass "gpus without a GPU quotes this refusal word for word"
    else fail "gpus without a GPU quotes this refusal differently: the library says"; echo "  $q"; fi
  fi
done
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
