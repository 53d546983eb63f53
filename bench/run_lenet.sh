#!/bin/sh
# make bench-lenet: examples/lenet.c (D2L 7.6's LeNet) and bench/lenet_torch.py (the same training in
# PyTorch) side by side, interleaved: devtensor, torch, devtensor, torch... Prints every epoch line,
# then per library the final test accuracy and the median epoch time (over every epoch of every
# round), devtensor's epoch time as a fraction of the peer's and the difference of their accuracies.
#   bench/run_lenet.sh LENET_BIN PYTHON [rounds [epochs [--relu-max]]]
# The peer runs as in bench/run_fashion.sh: OpenBLAS at its best (OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE unset; on x86 also with the newest core type the CPU's flags allow, as
# torch-1t[SkylakeX]: bench/peer_blas.sh's peer_coretype) and torch.set_num_threads of 1 and of
# every core (OMP_NUM_THREADS when set); the faster median is the reference, and its label says which
# served. The goals: devtensor's epoch <= 1.0x the peer's, its final test accuracy within 1 point.
bin=${1:-build/ex/lenet}; py=${2:-/usr/bin/python3}; rounds=${3:-1}; epochs=${4:-10}; variant=${5:-}
case "$variant" in
  ""|--relu-max) ;;
  *) echo "run_lenet.sh: the fifth argument must be --relu-max or nothing, not '$variant'"; exit 2 ;;
esac
out=build/bench_lenet.txt
mkdir -p build && : > "$out" || exit 1
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
echo "commit: ${DT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}  load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)  threads: ${OMP_NUM_THREADS:-all cores}"
"$py" -c 'import torch' 2>/dev/null || { echo "SKIP bench-lenet: torch not importable with '$py'"; exit 0; }
. "$(dirname "$0")/peer_blas.sh" && peer_blas && peer_coretype "$py"
nt_all=${OMP_NUM_THREADS:-$(nproc)}
peer_threads=1; [ "$nt_all" -gt 1 ] && peer_threads="1 $nt_all"
i=1
while [ "$i" -le "$rounds" ]; do
  echo "== round $i of $rounds ${variant:+($variant)}"
  "$bin" --epochs "$epochs" --csv build/bench_lenet.csv $variant | sed "s/^/devtensor /" | tee -a "$out" || exit 1
  for ct in "" $peer_ct; do
    for nt in $peer_threads; do
      if [ -z "$ct" ]; then set -- -u OPENBLAS_CORETYPE; tag=; else set -- OPENBLAS_CORETYPE="$ct"; tag="[$ct]"; fi
      env -u OPENBLAS_L2_SIZE "$@" "$py" bench/lenet_torch.py --epochs "$epochs" --threads "$nt" $variant |
        sed "s/^/torch-${nt}t$tag /" | tee -a "$out" || exit 1
    done
  done
  i=$((i + 1))
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
# lines: "<lib> epoch  k/N  train loss L  train acc A  test acc T  S s"
awk -v goal=1.0 '
  $2 == "epoch" {
    key = $1; n[key]++; t[key, n[key]] = $(NF - 1)
    split($3, e, "/"); if (e[1] == e[2]) { fin[key] = fin[key] " " $(NF - 2); last[key] = $(NF - 2) }
  }
  function median(key,   i, j, k, m, a) {
    m = n[key]; for (i = 1; i <= m; i++) a[i] = t[key, i]
    for (i = 2; i <= m; i++) { k = a[i]; for (j = i - 1; j >= 1 && a[j] > k; j--) a[j + 1] = a[j]; a[j + 1] = k }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  function lo(key,   i, v) { v = t[key, 1]; for (i = 2; i <= n[key]; i++) if (t[key, i] < v) v = t[key, i]; return v }
  function hi(key,   i, v) { v = t[key, 1]; for (i = 2; i <= n[key]; i++) if (t[key, i] > v) v = t[key, i]; return v }
  END {
    printf "%-20s %-22s %-12s %s\n", "library", "final test acc (runs)", "epoch median", "spread"
    best = ""
    for (key in n) {
      printf "%-20s %-22s %8.3f s   %.3f-%.3f s\n", key, fin[key], median(key), lo(key), hi(key)
      if (key != "devtensor" && (best == "" || median(key) < median(best))) best = key
    }
    if (n["devtensor"] && best != "") {
      r = median("devtensor") / median(best); d = 100 * (last["devtensor"] - last[best])
      printf "devtensor epoch time / %s: %.2fx (goal <= %.1fx: %s)\n", best, r, goal, (r <= goal ? "met" : "NOT MET")
      printf "devtensor test accuracy - %s: %+.2f points (goal within 1: %s)\n", best, d, (d <= 1 && d >= -1 ? "met" : "NOT MET")
    }
  }' "$out"
