#!/bin/sh
# make bench-fashion: examples/fashion_mnist.c and bench/fashion_torch.py (the same training in
# PyTorch) side by side, each model in turn, interleaved: devtensor, torch, devtensor, torch...
# Prints every epoch line, then per model and library the final test accuracy and the median
# epoch time (over every epoch of every round), and devtensor's time as a fraction of torch's.
#   bench/run_fashion.sh FASHION_BIN PYTHON [rounds [epochs [device [options]]]]
# options: given to both programs, e.g. "--autocast bf16" or "--autocast bf16 --cuda-graph" (each
# takes the same; fashion_torch.py ignores --cuda-graph on the CPU, where PyTorch has no graphs).
# FASHION_MODELS: the models, in turn (default "softmax mlp").
# The peer runs with OpenBLAS at its best (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset; on x86 also
# with the newest core type the CPU's flags allow, as torch-1t[SkylakeX]: bench/peer_blas.sh's
# peer_coretype) and the torch.set_num_threads of 1 and of every core (OMP_NUM_THREADS when set); the
# faster is the reference, and its label says which served.
bin=${1:-build/ex/fashion_mnist}; py=${2:-/usr/bin/python3}; rounds=${3:-2}; epochs=${4:-10}; dev=${5:-cpu}; opts=${6:-}
models=${FASHION_MODELS:-softmax mlp}
out=build/bench_fashion.txt
mkdir -p build && : > "$out" || exit 1
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
echo "commit: ${DT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}  load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)  threads: ${OMP_NUM_THREADS:-all cores}  options: ${opts:-none}"
"$py" -c 'import torch' 2>/dev/null || { echo "SKIP bench-fashion: torch not importable with '$py'"; exit 0; }
# on the CPU, the peer's BLAS and its core types (on a GPU it is cuBLAS)
peer_ct=
[ "$dev" != cpu ] || { . "$(dirname "$0")/peer_blas.sh" && peer_blas && peer_coretype "$py"; }
# the peer at its best: with one thread and with every core (a busy machine makes OpenMP's
# spin-waiting costly, so one thread can be the faster); the faster median is the reference
nt_all=${OMP_NUM_THREADS:-$(nproc)}
peer_threads=1; [ "$nt_all" -gt 1 ] && peer_threads="1 $nt_all"
# on a GPU the peer puts the whole data set there first (fashion_torch.py: xtr.to(dev)) and gathers
# each minibatch there: devtensor does the same (--data-on-device); DT_FASHION_HOST=1 keeps its
# data on the host instead (each minibatch gathered there and copied while the previous step runs)
dt_where=
[ "$dev" != cpu ] && [ "${DT_FASHION_HOST:-0}" != 1 ] && dt_where=--data-on-device
i=1
while [ "$i" -le "$rounds" ]; do
  for model in $models; do
    echo "== round $i, $model"
    # shellcheck disable=SC2086
    "$bin" --model $model --epochs "$epochs" $dt_where $opts | sed "s/^/devtensor /" | tee -a "$out" || exit 1
    for ct in "" $peer_ct; do
      for nt in $peer_threads; do
        if [ -z "$ct" ]; then set -- -u OPENBLAS_CORETYPE; tag=; else set -- OPENBLAS_CORETYPE="$ct"; tag="[$ct]"; fi
        # shellcheck disable=SC2086
        env -u OPENBLAS_L2_SIZE "$@" "$py" bench/fashion_torch.py --model $model --epochs "$epochs" --device "$dev" \
          --threads "$nt" $opts | sed "s/^/torch-${nt}t$tag /" | tee -a "$out" || exit 1
      done
    done
  done
  i=$((i + 1))
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
# lines: "<lib> <model> epoch  k/N  train loss L  train acc A  test acc T  S s"
# the goals: devtensor's epoch <= 0.6x the peer's on the CPU, <= 0.5x on a GPU, <= 0.1x on a GPU
# with --cuda-graph
goal=0.6; [ "$dev" != cpu ] && goal=0.5
case " $opts " in *" --cuda-graph "*) [ "$dev" != cpu ] && goal=0.1 ;; esac
awk -v goal="$goal" '
  $3 == "epoch" {
    key = $1 " " $2; n[key]++; t[key, n[key]] = $(NF - 1); acc[key] = $(NF - 2)
    split($4, e, "/"); if (e[1] == e[2]) { fin[key] = fin[key] " " $(NF - 2) }
  }
  function median(key,   i, j, k, m, a) {
    m = n[key]; for (i = 1; i <= m; i++) a[i] = t[key, i]
    for (i = 2; i <= m; i++) { k = a[i]; for (j = i - 1; j >= 1 && a[j] > k; j--) a[j + 1] = a[j]; a[j + 1] = k }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  function lo(key,   i, v) { v = t[key, 1]; for (i = 2; i <= n[key]; i++) if (t[key, i] < v) v = t[key, i]; return v }
  function hi(key,   i, v) { v = t[key, 1]; for (i = 2; i <= n[key]; i++) if (t[key, i] > v) v = t[key, i]; return v }
  END {
    printf "%-8s %-20s %-22s %-12s %s\n", "model", "library", "final test acc (runs)", "epoch median", "spread"
    split("softmax mlp", models, " ")
    for (mi = 1; mi <= 2; mi++) {
      best = ""
      for (key in n) {
        split(key, kk, " ")
        if (kk[2] != models[mi]) continue
        printf "%-8s %-20s %-22s %8.3f s   %.3f-%.3f s\n", models[mi], kk[1], fin[key], median(key), lo(key), hi(key)
        if (kk[1] != "devtensor" && (best == "" || median(key) < median(best))) best = key
      }
      kd = "devtensor " models[mi]
      if (n[kd] && best != "") printf "%-8s devtensor epoch time / %s: %.2fx (goal <= %sx)\n", models[mi], best, median(kd) / median(best), goal
    }
  }' "$out"
