#!/bin/sh
# bench/gpu_session.sh — everything a session with a GPU has to run, in as few
# device calls as possible (the device tool allows 10 minutes a command and 15
# minutes of device time in all, the machine's start included; a machine goes
# cold 30 s after a call, losing its builds).
#
#   sh bench/gpu_session.sh OUTDIR PHASE...
#
# PHASE is one or more of:
#   cudatest build the CUDA test programs, gpu_check and the benchmarks for the GPU's own
#           architecture only (GPU_ARCH, default 90: a quarter of nvcc's time), run the test
#           programs (DT_REQUIRE_GPU=1) eight at a time, then gpu_check without timings
#   test    build everything (make -j, CUDA=1), make test, then gpu_check (the CUDA
#           backend against the CPU backend, op by op, plus timings)
#   san     compute-sanitizer memcheck, racecheck, initcheck and
#           synccheck over the GPU test programs, each tool first shown
#           catching the error planted for it in tests/cuda/san_planted.cu
#   bench   make bench-gpu (devtensor against cudaMemcpy and PyTorch) and the
#           chapter's exercises at full size (ex1 writes a CSV, and an SVG where
#           gnuplot exists)
#   fashion Fashion-MNIST on cuda:0 beside PyTorch on the GPU (FASHION_MNIST_DIR), then the
#           MLP with --autocast bf16, --cuda-graph and both, on both sides
#   dist    the MPI + NCCL build on the GPU: one rank, then make test-dist(-gpu)
#   cnn     D2L's LeNet and ResNet-18 on cuda:0 beside PyTorch on the same GPU: eager, with
#           --cuda-graph, with --tf32 (PyTorch's cuDNN convolutions use TF32 by default; its
#           twins also run with --tf32 off); devtensor built without and with cuDNN (CUDNN=1,
#           the system's or PyTorch's wheel's); last, while the budget lasts, one epoch of
#           GoogLeNet and of DenseNet (examples/modern_cnn.c) beside PyTorch
#   fuzz    for the GPU's own architecture (GPU_ARCH): the graph fuzzer (tests/fuzz/graph_fuzz.c:
#           random programs captured on cuda:0 and replayed, against eager runs) for GRAPH_FUZZ_TIME
#           seconds (default 120) from GRAPH_FUZZ_SEED (default 1), then make lib CUDA=1 and the
#           differential fuzzer (tools/fuzz) on cuda:0 against PyTorch on the CPU: TORCH_FUZZ_TIME
#           seconds (default 240) of cases from TORCH_FUZZ_SEED (default 1); each less where the
#           call's budget ends first
# QUICK=1 shortens fashion and cnn to what fits beside cudatest in one call: fashion's MLP
# only, 3 epochs, eager and --cuda-graph; LeNet 3 epochs; ResNet-18 1 epoch.
# Each phase builds what it needs first (incremental), writes OUTDIR/<phase>.log
# and prints a short summary; the logs are what goes into bench/RESULTS.md.
# The 15-minute plan (device tool; one call right after the other so the machine stays
# warm and keeps its build; DT_COMMIT names the commit in the logs; .fashion: a copy of
# /usr/share/datasets/fashion-mnist, git-excluded, named in the call's carry):
#   1. timeout_s 480: QUICK=1 CALL_BUDGET=450 FASHION_MNIST_DIR=$PWD/.fashion DT_COMMIT=<sha> \
#        sh bench/gpu_session.sh $OUT cudatest cnn fashion
#   2. timeout_s 240: CALL_BUDGET=220 SAN_TOOLS=memcheck DT_COMMIT=<sha> sh bench/gpu_session.sh $OUT san bench
#      (the sanitizer's memcheck first; bench after it, where time is left)
# With more device time, the full phases one call each (timeout_s 600): test, bench, san
# (stops starting tools at 560 s), dist fashion, cnn (stops starting runs at 560 s), fuzz.
# The phases' times on an H100 are in bench/RESULTS.md.
set -u
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: gpu_session.sh OUTDIR PHASE...}
shift
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
jobs=$(nproc 2>/dev/null || echo 4)
# this script runs on a GPU machine: a test, check or benchmark that skips for want of a GPU fails
export DT_REQUIRE_GPU=1
# a GPU machine may have no clang: make test's clang builds then use cc
command -v "${CLANG:-clang}" >/dev/null 2>&1 || export CLANG=cc
status=0
# the device tool stops a command at 600 s: phases that can run long stop starting work
# before CALL_BUDGET seconds (default 560) have passed since this script began
deadline=$(( $(date +%s) + ${CALL_BUDGET:-560} ))

say() { echo "$*"; }
header() {
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: ${DT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '? (set DT_COMMIT)')}"
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2 | head -n 1
}
# run LOG CMD...: the command and its output into LOG (and its tail on stdout)
run() {
  log=$1; shift
  echo "\$ $*" >>"$log"
  t0=$(date +%s)
  "$@" >>"$log" 2>&1
  rc=$?
  echo "(exit status $rc, $(( $(date +%s) - t0 )) s)" >>"$log"
  [ $rc -eq 0 ] || status=1
  return $rc
}

phase_test() {
  log=$out/test.log
  header >"$log"
  # the peer's versions (torch, its cuBLAS); gpu_check below prints devtensor's cuBLAS
  run "$log" python3 bench/gpu_versions.py
  run "$log" make -k -j"$jobs" CUDA=1 all build/cuda/gpu_check build/bench_gpu build/bench_train
  # make test runs gpu_check too where the driver is; DT_REQUIRE_GPU=1: a "no GPU" skip fails
  run "$log" make CUDA=1 test
  say "test: $(grep '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' "$log" | tail -n 1)"
  say "gpu_check: $(grep '^[0-9]* checks, [0-9]* failed$' "$log" | tail -n 1)"
}

phase_cudatest() {
  log=$out/cudatest.log
  header >"$log"
  arch=${GPU_ARCH:-90}
  # every test but the Makefile's CPU_ONLY (they touch no device: the CUDA build leaves them out)
  cpu_only=" $(sed -n 's/^CPU_ONLY *:= *//p' Makefile) "
  progs=$(for t in tests/test_*.c; do t=$(basename "$t" .c); case $cpu_only in *" $t "*) ;; *) printf 'build/cuda/%s ' "$t" ;; esac; done)
  run "$log" python3 bench/gpu_versions.py
  # shellcheck disable=SC2086
  run "$log" make -k -j"$jobs" CUDA=1 GENCODE="-gencode arch=compute_$arch,code=sm_$arch" $progs build/cuda/fault_gpu \
    build/cuda/gpu_check build/bench_gpu build/bench_train build/cuda/ex/fashion_mnist build/cuda/ex/lenet build/cuda/ex/resnet
  # shellcheck disable=SC2086
  run "$log" env JOBS=8 sh tests/run.sh $progs build/cuda/fault_gpu
  say "cudatest: $(grep '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' "$log" | tail -n 1)"
  run "$log" ./build/cuda/gpu_check --no-timings
  say "gpu_check: $(grep '^[0-9]* checks, [0-9]* failed$' "$log" | tail -n 1)"
}

# san_errors LOG: the errors a compute-sanitizer log reports (its ERROR SUMMARY lines, and
# the errors of racecheck's RACECHECK SUMMARY: "N hazards displayed (E errors, W warnings)"),
# "none" when it has no summary line at all (the tool did not get to the end)
san_errors() {
  sed -n -e 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' \
         -e 's/.*RACECHECK SUMMARY: .*(\([0-9][0-9]*\) error.*/\1/p' "$1" |
    awk '{ n += $1; c++ } END { if (c) print n; else print "none" }'
}
# san_exit LOG: the exit status the wrapper line "(exit status N, S s)" records
san_exit() { sed -n 's/^(exit status \([0-9]*\),.*/\1/p' "$1" | tail -n 1; }

phase_san() {
  log=$out/san.log
  header >"$log"
  # SAN_PROGS: the GPU test programs the tools run over (all at once: the tools are mostly host-bound)
  progs=${SAN_PROGS:-test_random test_core test_ops test_nn test_softmax test_index test_optim test_dtypes test_trainer test_bad_input test_interop}
  # shellcheck disable=SC2046
  run "$log" make -j"$jobs" CUDA=1 build/cuda/san_planted $(for t in $progs; do printf 'build/cuda/%s ' "$t"; done)
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ ! -x "$cs" ]; then echo "compute-sanitizer not found" | tee -a "$log"; status=1; return; fi
  "$cs" --version 2>&1 | tail -n 1 >>"$log"
  help=$("$cs" --help 2>&1)
  # every option is checked against the installed tool's --help; the exit status 99 tells
  # the tool's findings from the program's own failures
  common="--error-exitcode 99"
  # test_core asks cudaMalloc for 1 EiB on purpose: API errors are not findings
  # (--report-api-errors takes all, explicit or no)
  case $help in *report-api-errors*) common="$common --report-api-errors no" ;; esac
  # racecheck and synccheck only over devtensor's kernels (its only shared memory and
  # barriers are in the reductions); cuBLAS's kernels would take all the time.
  # devtensor_cuda.cu's kernels are in an anonymous namespace: _GLOBAL__N_ in their names
  ours=
  case $help in *kernel-name*) ours="--kernel-name kns=_GLOBAL__N_" ;; esac
  # SAN_TOOLS: a subset, e.g. to rerun one tool after a fix
  for tool in ${SAN_TOOLS:-memcheck racecheck initcheck synccheck}; do
    t_start=$(date +%s)
    extra=
    case $tool in racecheck|synccheck) extra=$ours ;; esac
    # memcheck: 1 KiB of padding after each allocation (the tool's --padding). Without it an
    # overrun that lands in the next cudaMalloc block is a valid address to the tool: the first
    # H100 run (13286d7) missed the planted a[256] of a 256-float block that way
    case $tool/$help in memcheck/*--padding*) extra="--padding 1024" ;; esac
    # memcheck and initcheck without devtensor's cache (DEVTENSOR_CUDA_NO_CACHE): every block
    # is its own cudaMalloc, so overruns past a tensor and reads of unwritten memory show
    nc=0
    case $tool in memcheck|initcheck) nc=1 ;; esac
    case $tool in memcheck) plant=oob ;; racecheck) plant=race ;; initcheck) plant=uninit ;; synccheck) plant=sync ;; esac
    left=$((deadline - $(date +%s) - 15))
    if [ $left -lt 60 ]; then echo "$tool: skipped, the call's time is up" | tee -a "$log"; status=1; continue; fi
    # the proof first: the same tool, options, filter and environment over tests/cuda/san_planted.cu,
    # which must report the error planted for this tool (a filter matching nothing, a tool
    # that does not run, would report nothing) and nothing on the clean run
    for m in $plant none; do
      # shellcheck disable=SC2086 # $common and $extra are lists of options
      ( echo "\$ DEVTENSOR_CUDA_NO_CACHE=$nc timeout -k 10 60 $cs --tool $tool $common $extra build/cuda/san_planted $m"
        t0=$(date +%s)
        DEVTENSOR_CUDA_NO_CACHE=$nc timeout -k 10 60 "$cs" --tool $tool $common $extra build/cuda/san_planted "$m" 2>&1
        echo "(exit status $?, $(( $(date +%s) - t0 )) s)" ) >"$out/.san_planted_$m.log" 2>&1 &
    done
    wait
    p_err=$(san_errors "$out/.san_planted_$plant.log"); p_rc=$(san_exit "$out/.san_planted_$plant.log")
    n_err=$(san_errors "$out/.san_planted_none.log"); n_rc=$(san_exit "$out/.san_planted_none.log")
    cat "$out/.san_planted_$plant.log" "$out/.san_planted_none.log" >>"$log"
    rm -f "$out/.san_planted_$plant.log" "$out/.san_planted_none.log"
    proven=yes
    case $p_err in none|0) proven=no ;; esac
    [ "$p_rc" = 99 ] || proven=no
    clean=yes
    [ "$n_err" = 0 ] && [ "$n_rc" = 0 ] || clean=no
    if [ $proven = no ] || [ $clean = no ]; then
      echo "san $tool: NOT PROVEN: planted $plant reported ${p_err} errors, exit ${p_rc:-?} (errors and exit 99 needed); none reported ${n_err} errors, exit ${n_rc:-?} (0 and 0 needed): this tool's clean runs below do not count" | tee -a "$log"
      status=1
    fi
    left=$((deadline - $(date +%s) - 15))
    if [ $left -lt 30 ]; then echo "$tool: real runs skipped, the call's time is up" | tee -a "$log"; status=1; continue; fi
    lim=$left
    [ $lim -gt 240 ] && lim=240
    # the programs at once (16 cores; the tools are mostly host-bound), each its own log
    for t in $progs; do
      # shellcheck disable=SC2086 # $common and $extra are lists of options
      ( echo "\$ DEVTENSOR_CUDA_NO_CACHE=$nc timeout -k 10 $lim $cs --tool $tool $common $extra build/cuda/$t"
        t0=$(date +%s)
        DEVTENSOR_CUDA_NO_CACHE=$nc timeout -k 10 $lim "$cs" --tool $tool $common $extra build/cuda/$t 2>&1
        echo "(exit status $?, $(( $(date +%s) - t0 )) s)" ) >"$out/.san_$t.log" 2>&1 &
    done
    wait
    runs=
    for t in $progs; do
      # the program's PASS lines are in the tests' own logs; keep the tool's lines and the end
      grep -v '^PASS ' "$out/.san_$t.log" >>"$log"
      grep -q '^(exit status 0,' "$out/.san_$t.log" || status=1
      runs="$runs; $t $(san_errors "$out/.san_$t.log") errors, exit $(san_exit "$out/.san_$t.log")"
      rm -f "$out/.san_$t.log"
    done
    line="san $tool: planted $plant caught: $proven ($p_err errors, exit $p_rc), none clean: $clean$runs; $(( $(date +%s) - t_start )) s"
    echo "$line" >>"$log"
    say "$line"
  done
  grep 'ERROR SUMMARY\|RACECHECK SUMMARY\|^(exit status\|NOT PROVEN\|time is up' "$log" | sed 's/, [0-9]* s)$/)/' | sort | uniq -c
}

phase_bench() {
  log=$out/bench.log
  header >"$log"
  run "$log" make -j"$jobs" CUDA=1 build/bench_gpu build/bench_train build/launch_floor build/cuda/ex/ex1_matmul_speed build/cuda/ex/ex2_params_io \
    build/cuda/ex/ex3_norm_log build/cuda/ex/ex4_two_gpus build/cuda/ex/devices build/cuda/ex/gpus
  run "$log" sh bench/run_gpu.sh build
  sed -n '/compare_gpu.py/,$p' "$log"
  elog=$out/exercises.log
  header >"$elog"
  run "$elog" ./build/cuda/ex/devices
  run "$elog" ./build/cuda/ex/gpus
  run "$elog" ./build/cuda/ex/ex1_matmul_speed
  cp build/ex1_matmul_speed.csv build/ex1_matmul_speed.svg "$out/" 2>/dev/null
  run "$elog" ./build/cuda/ex/ex2_params_io
  run "$elog" ./build/cuda/ex/ex3_norm_log
  run "$elog" ./build/cuda/ex/ex4_two_gpus
  say "exercises: $(grep -c 'exit status 0,' "$elog") of 6 ran"
}

# Fashion-MNIST on cuda:0 beside PyTorch on the same GPU: softmax regression and the MLP,
# 10 epochs, ROUNDS rounds (default 1), the data set on the GPU on both sides; then devtensor alone
# with the data on the host; the data from FASHION_MNIST_DIR (carried: no network there)
phase_fashion() {
  log=$out/fashion.log
  header >"$log"
  run "$log" make -j"$jobs" CUDA=1 build/cuda/ex/fashion_mnist
  fe=10 variants="--autocast bf16|--cuda-graph|--autocast bf16 --cuda-graph"
  [ "${QUICK:-0}" = 1 ] && fe=3 variants="|--cuda-graph"
  if [ "${QUICK:-0}" != 1 ]; then
    run "$log" sh bench/run_fashion.sh build/cuda/ex/fashion_mnist python3 "${ROUNDS:-1}" $fe cuda
    cp build/bench_fashion.txt "$out/fashion_epochs.txt" 2>/dev/null
    # for information: devtensor with the data on the host (its default), each minibatch gathered
    # there and copied to the GPU while the previous step runs
    run "$log" ./build/cuda/ex/fashion_mnist --model both --epochs $fe
    tail -n 8 "$log"
  fi
  # the MLP with the example's options against fashion_torch.py with the same: autocast BF16
  # (torch.autocast), the step captured in a graph (tr.cuda_graph against torch.cuda.graphs'
  # whole-network capture; goal: devtensor's epoch <= 0.1x PyTorch's), and both; each variant's
  # epochs in OUTDIR/fashion_epochs-<variant>.txt
  old_ifs=$IFS; IFS='|'
  # shellcheck disable=SC2086
  set -- $variants
  IFS=$old_ifs
  for v in "$@"; do
    if [ "$(date +%s)" -gt $((deadline - 60)) ]; then
      echo "fashion $v: not started (the call's budget is nearly spent)" | tee -a "$log"; status=1; continue
    fi
    tag=$(echo "${v:-eager}" | sed 's/--//g; s/ /-/g')
    run "$log" env FASHION_MODELS=mlp sh bench/run_fashion.sh build/cuda/ex/fashion_mnist python3 "${ROUNDS:-1}" $fe cuda "$v"
    cp build/bench_fashion.txt "$out/fashion_epochs-$tag.txt" 2>/dev/null
    say "fashion mlp ${v:-eager}: $(grep 'devtensor epoch time' "$log" | tail -n 1)"
  done
}

# distributed with the GPU: the MPI + real-NCCL build; one rank on cuda:0, then
# make test-dist-gpu's two ranks (one GPU: rank 1's cuda:1 does not exist, which must be a clear error)
phase_dist() {
  log=$out/dist.log
  header >"$log"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  run "$log" make -j"$jobs" CUDA=1 build/cuda/dist_test_dist build/c/test_dist build/dist/test_dist
  run "$log" timeout 120 mpirun -np 1 build/cuda/dist_test_dist
  say "dist, one rank with NCCL: $(grep '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' "$log" | tail -n 1)"
  run "$log" timeout 200 make CUDA=1 test-dist
  run "$log" timeout 200 make CUDA=1 test-dist-gpu
  say "dist: $(grep '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' "$log" | tail -n 3 | tr '\n' ' ')"
}

# the median epoch time of the "epoch k/N ... S s" lines of the run of CMD (its "$ CMD" line) in LOG,
# and its last test accuracy: epoch_median LOG CMD
epoch_median() {
  awk -v cmd="$2" 'index($0, "$ ") == 1 { on = $0 == "$ " cmd; if (on) n = 0 }
    on && /^epoch / { t[++n] = $(NF - 1); acc = $(NF - 2) }
    END { if (n == 0) { print "no epochs"; exit }
          for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (t[j] < t[i]) { x = t[i]; t[i] = t[j]; t[j] = x }
          printf "median epoch %s s over %d, last test acc %s\n", t[int((n + 1) / 2)], n, acc }' "$1"
}

# D2L's LeNet (7.6: 10 epochs, lr 0.1, batch 128) and ResNet-18 (8.6 at 96x96, lr 0.05, batch 256;
# EPOCHS_RESNET, default 2), then (where the budget leaves time) one epoch of GoogLeNet and DenseNet
# (examples/modern_cnn.c, D2L's sizes and learning rates) on cuda:0, each devtensor variant and each PyTorch run once, the data on
# the host on both sides. Goals: LeNet's epoch <= 0.5x PyTorch's, ResNet's <= 0.8x, test accuracy
# within 1 point. Every run's epochs are in OUTDIR/cnn.log.
phase_cnn() {
  log=$out/cnn.log
  header >"$log"
  run "$log" make -j"$jobs" CUDA=1 build/cuda/ex/lenet build/cuda/ex/resnet build/cuda/ex/modern_cnn
  # the cuDNN build (make CUDNN=1) in build/cudnn: the system's cuDNN, or the one PyTorch's wheel
  # carries (nvidia-cudnn: its include/ and lib/)
  dn=./build/cudnn/cuda/ex
  arch=${GPU_ARCH:-90}
  if [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cudnn.h" ] || [ -f /usr/include/cudnn.h ]; then
    run "$log" make -j"$jobs" CUDA=1 CUDNN=1 B=build/cudnn GENCODE="-gencode arch=compute_$arch,code=sm_$arch" $dn/lenet $dn/resnet
  else
    d=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)
    lib=$(ls "$d"/lib/libcudnn.so* 2>/dev/null | head -n 1)
    if [ -n "$d" ] && [ -f "$d/include/cudnn.h" ] && [ -n "$lib" ]; then
      run "$log" make -j"$jobs" CUDA=1 CUDNN=1 B=build/cudnn GENCODE="-gencode arch=compute_$arch,code=sm_$arch" \
        CUDNN_DEF="-DDEVTENSOR_CUDNN -I$d/include" CUDNN_LIB="-L$d/lib -Wl,-rpath,$d/lib -l:$(basename "$lib")" $dn/lenet $dn/resnet
    else
      echo "no cuDNN found (cudnn.h, or python3's nvidia.cudnn): the cuDNN runs are left out" | tee -a "$log"
    fi
  fi
  re=${EPOCHS_RESNET:-2} le=10
  [ "${QUICK:-0}" = 1 ] && re=1 le=3
  rn="--epochs $re --lr 0.05 --batch 256"
  # the most telling first: the call's budget may end the list
  for cmd in "./build/cuda/ex/lenet --epochs $le --cuda-graph" "python3 bench/lenet_torch.py --epochs $le --device cuda" \
             "./build/cuda/ex/lenet --epochs $le" \
             "./build/cuda/ex/resnet $rn --tf32 --cuda-graph" "$dn/resnet $rn --tf32 --cuda-graph" \
             "python3 bench/resnet_torch.py $rn --device cuda" \
             "$dn/lenet --epochs $le --cuda-graph" "./build/cuda/ex/resnet $rn --tf32" "$dn/resnet $rn --tf32" \
             "./build/cuda/ex/lenet --epochs $le --tf32 --cuda-graph" "./build/cuda/ex/lenet --epochs $le --tf32" \
             "./build/cuda/ex/resnet $rn" "$dn/resnet $rn" \
             "python3 bench/lenet_torch.py --epochs $le --device cuda --tf32 off" \
             "python3 bench/resnet_torch.py $rn --device cuda --tf32 off" \
             "./build/cuda/ex/modern_cnn --model googlenet --epochs 1 --tf32 --cuda-graph" \
             "python3 bench/modern_cnn_torch.py --model googlenet --epochs 1 --device cuda" \
             "./build/cuda/ex/modern_cnn --model densenet --epochs 1 --tf32 --cuda-graph" \
             "python3 bench/modern_cnn_torch.py --model densenet --epochs 1 --device cuda"; do
    case $cmd in "$dn"/*) [ -x "${cmd%% *}" ] || continue ;; esac
    if [ "$(date +%s)" -gt $((deadline - 90)) ]; then
      echo "cnn $cmd: not started (the call's budget is nearly spent)" | tee -a "$log"; status=1; continue
    fi
    # shellcheck disable=SC2086
    run "$log" $cmd
    say "$cmd: $(epoch_median "$log" "$cmd")"
  done
}

phase_fuzz() {
  log=$out/fuzz.log
  header >"$log"
  arch=${GPU_ARCH:-90}
  if run "$log" make -j"$jobs" build/cuda/graph_fuzz GENCODE="-gencode arch=compute_$arch,code=sm_$arch"; then
    t=${GRAPH_FUZZ_TIME:-120}
    left=$((deadline - $(date +%s) - 60))
    [ "$left" -lt "$t" ] && t=$left
    if [ "$t" -ge 20 ]; then
      run "$log" build/cuda/graph_fuzz --device cuda:0 --seed "${GRAPH_FUZZ_SEED:-1}" --cases 100000000 --time "$t"
      say "fuzz: $(grep '^graph_fuzz: ' "$log" | tail -n 1)"
    else
      say "fuzz: the graph fuzzer not started (the call's budget is nearly spent)"; status=1
    fi
  else
    say "fuzz: the graph fuzzer's build failed"
  fi
  run "$log" make -j"$jobs" lib CUDA=1 GENCODE="-gencode arch=compute_$arch,code=sm_$arch" || { say "fuzz: the build failed"; return; }
  # TORCH_FUZZ_TIME seconds, or what the call's budget leaves (a case is short: the fuzzer stops
  # starting cases at that time)
  t=${TORCH_FUZZ_TIME:-240}
  left=$((deadline - $(date +%s) - 30))
  [ "$left" -lt "$t" ] && t=$left
  if [ "$t" -lt 30 ]; then
    say "fuzz: not started (the call's budget is nearly spent)"; status=1; return
  fi
  run "$log" python3 tools/fuzz/fuzz.py --lib build/lib/cuda/libdevtensor.so --device cuda:0 \
    --seed "${TORCH_FUZZ_SEED:-1}" --cases 100000000 --time "$t"
  say "fuzz: $(grep '^all ' "$log" | tail -n 1) (family, cases, checks, refused by both, mismatches)"
}

for p in "$@"; do
  case $p in
    cudatest) phase_cudatest ;;
    test) phase_test ;;
    san) phase_san ;;
    bench) phase_bench ;;
    fashion) phase_fashion ;;
    dist) phase_dist ;;
    cnn) phase_cnn ;;
    fuzz) phase_fuzz ;;
    *) echo "unknown phase $p"; status=2 ;;
  esac
done
exit $status
