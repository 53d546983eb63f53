#!/bin/sh
# Runs test programs under valgrind memcheck through tests/run.sh (same
# "N passed, N failed, N skipped" summary): any memcheck error, or a leak
# (definite, indirect or possible), makes the program fail.
#   sh tests/valgrind.sh build/c/test_core build/cxx/test_core ...
# tests/valgrind.supp hides libgomp's thread pool, which lives until exit.
command -v valgrind >/dev/null 2>&1 || { echo "SKIP valgrind: not installed"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/dt_valgrind.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
list=
for t in "$@"; do
  case "$t" in /*) abs=$t ;; *) abs=$(pwd)/$t ;; esac
  w="$dir/valgrind/${t#/}"
  mkdir -p "$(dirname "$w")"
  printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --show-leak-kinds=definite,indirect,possible --suppressions=%s/valgrind.supp %s "$@"\n' "$here" "$abs" > "$w"
  chmod +x "$w"
  list="$list $w"
done
# shellcheck disable=SC2086
sh "$here/run.sh" $list
