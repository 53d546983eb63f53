#!/bin/sh
# Runs test programs and adds up their "N passed, N failed, N skipped" lines.
# A program that crashes, or ends without its summary line, counts as one failure.
#
#   sh tests/run.sh PROGRAM... [-- PROGRAM...]
#
# JOBS programs run at a time (default: make's -jN when run from make, else 1). Each
# program's output is kept apart and printed whole, in the order of the arguments,
# so the log reads the same whatever the timing. Two programs of the same name
# (build/c/test_nn, build/cxx/test_nn: they write the same files) never run at
# the same time, and "--" waits for everything before it (a script that reads what
# an earlier program wrote). Each program's "== NAME (Ns)" line gives its wall time
# in seconds (what to look at when CI's 30 minutes get tight).
jobs=${JOBS:-$(printf '%s\n' "${MAKEFLAGS:-}" | sed -n 's/.*-j *\([0-9][0-9]*\).*/\1/p')}
case "$jobs" in '' | *[!0-9]* | 0) jobs=1 ;; esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/dt_run.XXXXXX") || exit 1
pids=
trap 'exec 3<&-; rm -rf "$dir"' EXIT
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; exit 130' INT TERM
summary='^[0-9]* passed, [0-9]* failed, [0-9]* skipped$'
# each program that ends writes a line here: the loop below sleeps until one does
mkfifo "$dir/ended" || exit 1
exec 3<>"$dir/ended"

# entry i: t_i its program, n_i its name, b_i the barrier it waits behind (the
# number of entries before the last "--" before it), s_i 1 once started;
# $dir/i.out its output and $dir/i.rc its exit status once it has ended
n=0; barrier=0
for t in "$@"; do
  if [ "$t" = "--" ]; then barrier=$n; continue; fi
  n=$((n + 1))
  eval "t_$n=\$t; n_$n=\${t##*/}; b_$n=$barrier; s_$n=0"
done

# can entry $1 start? everything before its barrier has ended, and no earlier
# entry of the same name is still running or waiting
ready() {
  eval "rb=\$b_$1; rn=\$n_$1"; rj=1
  while [ "$rj" -lt "$1" ]; do
    if [ ! -f "$dir/$rj.rc" ]; then
      [ "$rj" -le "$rb" ] && return 1
      eval "[ \"\$n_$rj\" = \"\$rn\" ]" && return 1
    fi
    rj=$((rj + 1))
  done
  return 0
}

passed=0; failed=0; skipped=0; status=0
report() { # the output and summary of entry $1
  eval "t=\$t_$1"; rc=$(cat "$dir/$1.rc")
  echo "== $t ($(cat "$dir/$1.sec" 2>/dev/null)s)"
  grep -v "$summary" "$dir/$1.out"
  line=$(grep "$summary" "$dir/$1.out" | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL $t: exited with status $rc before its summary line"
    failed=$((failed + 1)); status=1; return
  fi
  p=$(echo "$line" | cut -d' ' -f1); f=$(echo "$line" | cut -d' ' -f3); s=$(echo "$line" | cut -d' ' -f5)
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  if [ "$rc" -ne 0 ]; then
    status=1
    if [ "$f" -eq 0 ]; then echo "FAIL $t: exited with status $rc after its summary (a sanitizer report?)"; failed=$((failed + 1)); fi
  fi
}

printed=0
while [ "$printed" -lt "$n" ]; do
  # start what may start, in order, at most $jobs at a time
  running=0; i=$((printed + 1))
  while [ "$i" -le "$n" ]; do
    eval "st=\$s_$i"
    [ "$st" = 1 ] && [ ! -f "$dir/$i.rc" ] && running=$((running + 1))
    i=$((i + 1))
  done
  i=$((printed + 1))
  while [ "$i" -le "$n" ] && [ "$running" -lt "$jobs" ]; do
    eval "st=\$s_$i; t=\$t_$i"
    if [ "$st" = 0 ] && ready "$i"; then
      eval "s_$i=1"
      ( t0=$(date +%s); "$t" > "$dir/$i.out" 2>&1 3<&-; rc=$?; echo $(($(date +%s) - t0)) > "$dir/$i.sec"
        echo $rc > "$dir/$i.rc.part"; mv "$dir/$i.rc.part" "$dir/$i.rc"; echo "$i" >&3 ) &
      pids="$pids $!"; running=$((running + 1))
    fi
    i=$((i + 1))
  done
  # print what has ended, in order
  while [ "$printed" -lt "$n" ] && [ -f "$dir/$((printed + 1)).rc" ]; do
    printed=$((printed + 1)); report "$printed"
  done
  [ "$printed" -lt "$n" ] && read -r _ <&3
done
wait
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
