#!/bin/sh
# make bench: devtensor's CPU benchmarks and NumPy's, interleaved in one run, then the ratio table.
#   bench/run_cpu.sh BENCH_CPU PYTHON [rounds]
bin=${1:-build/bench_cpu}; py=${2:-python3}; rounds=${3:-3}
out=$(mktemp); trap 'rm -f "$out"' EXIT
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(uname -m), $(nproc) cores  commit: $(git rev-parse --short HEAD 2>/dev/null)"
if [ -z "$py" ] || ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: NumPy not found (apt-get install python3-numpy; or PYTHON=...); devtensor alone:"
  "$bin"; exit $?
fi
i=0
while [ "$i" -lt "$rounds" ]; do
  "$bin" | tee -a "$out" || exit 1
  "$py" bench/bench_numpy.py | tee -a "$out" || exit 1
  i=$((i + 1))
done
python3 bench/compare.py "$out"
