#!/bin/sh
# make bench: devtensor's CPU benchmarks and its peers' (NumPy, PyTorch on the CPU), in interleaved
# rounds in one run, then one table of ratios against the faster peer (bench/compare.py); PyTorch
# runs twice, with all the threads and with one (torch-1t), and the faster counts.
#   bench/run_cpu.sh BENCH_CPU PYTHON [rounds [samples [case-prefix]]]
# The peers run with OpenBLAS at its best: this machine's environment may set OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE (which slow it down), so they are unset for them; and OpenBLAS's own choice of
# kernels is not always its best (a Sapphire Rapids Xeon gets Prescott's), so on x86 each peer also
# runs with the newest core type the CPU's flags allow (bench/peer_blas.sh's peer_coretype: SkylakeX
# or Haswell), as `numpy[SkylakeX]`, and compare.py keeps the faster per row and says which served.
# Every library gets the same threads: all cores, or OMP_NUM_THREADS when set. The raw lines go to
# build/bench_cpu.txt.
bin=${1:-build/bench_cpu}; py=${2:-/usr/bin/python3}; rounds=${3:-3}; samples=${4:-5}; only=${5:-}
out=build/bench_cpu.txt
mkdir -p build && : > "$out" || exit 1
# peer LIB [CORETYPE]: its lines, as LIB with OpenBLAS's own choice, as LIB[CORETYPE] with that one
peer() {
  if [ -z "${2:-}" ]; then env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$py" bench/bench_peers.py "$1" "$samples" "$only"
  else env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$2" "$py" bench/bench_peers.py "$1" "$samples" "$only" | sed "s/^$1 /$1[$2] /"
  fi
}
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null)  load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)  threads: ${OMP_NUM_THREADS:-all cores}"
. "$(dirname "$0")/peer_blas.sh" && peer_blas && peer_coretype "$py"
# two threads' round trip (bench_cpu.c's round_trip_ns): about 150 ns when the VM's vCPUs share an
# L3, about 450 when they do not, and then every 2-thread row is slower; printed again at the end
"$bin" --round-trip
peers=
for lib in numpy torch; do
  if [ -n "$py" ] && "$py" -c "import $lib" 2>/dev/null; then peers="$peers $lib"; else echo "SKIP: $lib not importable with '$py'"; fi
done
i=1
while [ "$i" -le "$rounds" ]; do
  echo "round $i of $rounds"
  "$bin" "$samples" "$only" | tee -a "$out" || exit 1
  for ct in "" $peer_ct; do
    for lib in $peers; do peer "$lib" "$ct" | tee -a "$out" || exit 1; done
    # PyTorch at its best: on a shared VM its OpenMP spin-waiting can make 1 thread faster than 2
    # (the MLP epoch: about 0.35 s against 0.9 s), so it also runs on one thread, as torch-1t
    case " $peers " in
      *" torch "*) OMP_NUM_THREADS=1 peer torch "$ct" | sed 's/^torch\([[ ]\)/torch-1t\1/' | tee -a "$out" || exit 1 ;;
    esac
  done
  i=$((i + 1))
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
"$bin" --round-trip
echo
python3 bench/compare.py "$out"

# Issue 13's loaded machine: another process spins on a core while devtensor runs a few cases with
# 1 thread and with 2, interleaved; a pool that waits well is not much slower with 2 threads than
# with 1 there (OpenMP's spin-waiting made it 10-30x slower). LOADED=0 skips this part.
if [ "${LOADED:-1}" != 0 ] && [ -z "$only" ]; then
  loaded=build/bench_cpu_loaded.txt
  : > "$loaded"
  sh -c 'while :; do :; done' &
  spinner=$!
  trap 'kill $spinner 2>/dev/null' EXIT INT TERM
  i=1
  while [ "$i" -le "$rounds" ]; do
    for c in add_f32_100000 exp_f32_1000000 sum_f32_16777216 matmul_f32_256x256x256 matmul_f32_256x784x256; do
      for t in 1 2; do
        OMP_NUM_THREADS=$t "$bin" "$samples" "$c" | sed "s/^devtensor /devtensor-${t}t /" >> "$loaded" || exit 1
      done
    done
    i=$((i + 1))
  done
  kill $spinner 2>/dev/null
  echo
  echo "With one core busy (a shell loop spinning beside it), devtensor with 2 threads against 1:"
  python3 bench/compare.py --loaded "$loaded"
fi
