#!/bin/sh
# Runs test programs and adds up their "N passed, N failed, N skipped" lines.
# A program that crashes, or ends without its summary line, counts as one failure.
passed=0; failed=0; skipped=0; status=0
for t in "$@"; do
  echo "== $t"
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -v '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$'
  line=$(printf '%s\n' "$out" | grep '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL $t: exited with status $rc before its summary line"
    failed=$((failed + 1)); status=1; continue
  fi
  p=$(echo "$line" | cut -d' ' -f1); f=$(echo "$line" | cut -d' ' -f3); s=$(echo "$line" | cut -d' ' -f5)
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  if [ "$rc" -ne 0 ]; then
    status=1
    if [ "$f" -eq 0 ]; then echo "FAIL $t: exited with status $rc after its summary (a sanitizer report?)"; failed=$((failed + 1)); fi
  fi
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
