#!/bin/sh
# Runs each libFuzzer target for SECONDS (default 60) on a copy of its seed
# corpus, from the repository root:
#   sh tests/fuzz/run.sh build/fuzz 60
# Prints one PASS/FAIL line per target and "N passed, N failed, 0 skipped".
# A crash, leak or failed invariant leaves its input in BUILD_DIR
# (crash-*, leak-*, ...) and the fuzzer's log in BUILD_DIR/<target>.log;
# replay it with the target's plain build: build/fuzz/replay_<target> FILE.
# JOBS targets run at a time (default: make's -jN when run from make, else 1),
# each for SECONDS; the lines come in the order of the list.
bin=${1:-build/fuzz}; secs=${2:-60}
jobs=${JOBS:-$(printf '%s\n' "${MAKEFLAGS:-}" | sed -n 's/.*-j *\([0-9][0-9]*\).*/\1/p')}
case "$jobs" in '' | *[!0-9]* | 0) jobs=1 ;; esac
targets="safetensors device_parse print load_tensors"
# fuzz TARGET: runs it, its status in $bin/fuzz_TARGET.rc
fuzz() {
  f=$1
  case $f in device_parse) corpus=tests/fuzz/corpus_device ;; load_tensors) corpus=tests/fuzz/corpus_safetensors ;; *) corpus=tests/fuzz/corpus_$f ;; esac
  exe=$bin/fuzz_$f; work=$bin/work_$f; log=$bin/fuzz_$f.log
  if [ ! -x "$exe" ]; then echo 127 > "$bin/fuzz_$f.rc"; return; fi
  mkdir -p "$work"
  dict=; [ -f "tests/fuzz/$f.dict" ] && dict="-dict=tests/fuzz/$f.dict"
  [ $f = load_tensors ] && dict="-dict=tests/fuzz/safetensors.dict"
  # shellcheck disable=SC2086
  "$exe" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$bin/" $dict "$work" "$corpus" > "$log" 2>&1
  echo $? > "$bin/fuzz_$f.rc"
}
passed=0; failed=0
report() {
  f=$1; exe=$bin/fuzz_$f; work=$bin/work_$f; log=$bin/fuzz_$f.log; rc=$(cat "$bin/fuzz_$f.rc")
  if [ "$rc" = 127 ] && [ ! -x "$exe" ]; then echo "FAIL fuzz_$f: $exe not built"; failed=$((failed + 1)); return; fi
  runs=$(grep 'stat::number_of_executed_units' "$log" | awk '{print $2}')
  if [ "$rc" -eq 0 ]; then
    echo "PASS fuzz_$f: ${runs:-?} inputs in ${secs} s, corpus $(ls "$work" | wc -l) files"; passed=$((passed + 1))
  else
    echo "FAIL fuzz_$f: exit status $rc; the end of $log:"; tail -n 30 "$log"; failed=$((failed + 1))
  fi
}
# the targets in groups of $jobs, each group's lines once all of it has ended
set -- $targets
while [ $# -gt 0 ]; do
  group=; n=0
  while [ $# -gt 0 ] && [ "$n" -lt "$jobs" ]; do group="$group $1"; n=$((n + 1)); shift; done
  for f in $group; do rm -f "$bin/fuzz_$f.rc"; fuzz "$f" & done
  wait
  for f in $group; do report "$f"; done
done
echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
