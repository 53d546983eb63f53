#!/bin/sh
# Compiles every C snippet of the documentation, so that none can go stale.
#   tests/doc_snippets.sh [FILE.md ...]        (default: README.md docs/*.md)
# Run from the repository root (make test does); CC (default cc) compiles, NVCC
# (default: nvcc on the PATH or /usr/local/cuda/bin/nvcc) the ```cuda blocks.
#
# Each ```c block is one snippet, compiled as C99 with -pedantic -Wall -Wextra -Werror
# against ./devtensor.h; errors name the Markdown file and line (#line). What it is
# compiled as depends on the block and on an HTML comment on the line just before its
# fence (invisible when the Markdown is rendered):
#   a block with a main()        a whole program: compiled and linked with devtensor.h
#                                (-DDEVTENSOR_IMPLEMENTATION added unless the block defines it)
#   <!-- snippet: run -->         such a program is also run (in an empty folder), and its
#                                output (stdout and stderr) must equal the next unlabelled
#                                (or ```text) fenced block of the file
#   a block that starts with #   file-scope code (e.g. the #define/#include pair): compiled
#                                as a unit of its own, not linked
#   any other block              a fragment: the body of a function, compiled (not linked)
#                                after #include "devtensor.h", <stdio.h>, <stdlib.h>, <string.h>
#   <!-- snippet: DECLS -->       before a fragment: C declarations put at file scope before
#                                that function, for the names the fragment uses but does not
#                                declare, e.g. <!-- snippet: dt_module *net; dt_tensor *X, *y; -->
#                                (zero-initialised; the fragment may declare the same names)
#   <!-- snippet: skip REASON --> not compiled: one SKIP line with the reason
# Fragments are compiled with -fsyntax-only and without warnings for unused variables.
# ```cuda blocks are fragments of a .cu file (the same DECLS marker), compiled with
# nvcc -c where nvcc is found (cheap: no device code is generated for a fragment without
# kernels of its own) and a SKIP where not. ```sh, ```python,
# ```cmake and unlabelled blocks are not compiled and not counted.
# Then, when docs/API.md is among the files: every function declared DTDEF in src/api/*.h
# must appear in it as `name( (one FAIL line lists those missing).
# Ends with "N passed, N failed, N skipped"; exits non-zero when one failed.
cc=${CC:-cc}
nvcc=${NVCC:-$(command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })}
[ $# -gt 0 ] || set -- README.md docs/*.md
p=0; f=0; s=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt_snip.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS doc snippet $1"; p=$((p + 1)); }
fail() { echo "FAIL doc snippet $1"; f=$((f + 1)); }
skip() { echo "SKIP doc snippet $1"; s=$((s + 1)); }
WARN="-std=c99 -pedantic -Wall -Wextra -Werror"
FRAG_WARN="-Wno-unused-variable -Wno-unused-but-set-variable"
HDRS='#include "devtensor.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>'

for md in "$@"; do
  [ -f "$md" ] || { fail "$md: no such file"; continue; }
  rm -f "$tmp"/snip.*
  # split: snip.K.body (the block), snip.K.info ("LANG LINE", then the marker)
  awk -v dir="$tmp" '
    /^```/ {
      if (!infence) {
        infence = 1; lang = substr($0, 4); sub(/[ \t].*$/, "", lang); n++
        start = NR + 1; body = dir "/snip." n ".body"; printf "" > body
        info = dir "/snip." n ".info"
        marker = ""
        if (prev ~ /^<!-- snippet:.*-->[ \t]*$/) { marker = prev; sub(/^<!-- snippet:[ \t]*/, "", marker); sub(/[ \t]*-->[ \t]*$/, "", marker) }
        printf "%s %d\n%s\n", (lang == "" ? "-" : lang), start, marker > info
        close(info)
        next
      } else { infence = 0; close(body); prev = $0; next }
    }
    infence { print >> body; next }
    /[^ \t]/ { prev = $0 }
  ' "$md"
  k=1
  while [ -f "$tmp/snip.$k.info" ]; do
    read -r lang line < "$tmp/snip.$k.info"
    marker=$(sed -n 2p "$tmp/snip.$k.info")
    body="$tmp/snip.$k.body"; where="$md:$line"; src="$tmp/s$k"
    k=$((k + 1))
    case "$lang" in c|cuda) ;; *) continue ;; esac
    case "$marker" in skip*) skip "$where: ${marker#skip}"; continue ;; esac
    if [ "$lang" = cuda ]; then
      if [ -z "$nvcc" ]; then skip "$where (cuda): no nvcc here"; continue; fi
      { echo '#include <cuda_runtime.h>'; echo "$HDRS"; echo "$marker"; echo 'void dt_doc_snippet(void);'
        echo 'void dt_doc_snippet(void) {'; echo "#line $line \"$md\""; cat "$body"; echo '}'; } > "$src.cu"
      if "$nvcc" -std=c++17 -I. -Xcompiler -Wall,-Wextra,-Werror,-Wno-unused-variable -c "$src.cu" -o "$src.o" > "$src.log" 2>&1
      then pass "$where (cuda fragment, nvcc)"; else fail "$where (cuda fragment, nvcc):"; cat "$src.log"; fi
      continue
    fi
    if grep -Eq '(^|[^A-Za-z0-9_])main *\(' "$body"; then
      impl=-DDEVTENSOR_IMPLEMENTATION; grep -q '^#define DEVTENSOR_IMPLEMENTATION' "$body" && impl=
      { echo "#line $line \"$md\""; cat "$body"; } > "$src.c"
      # shellcheck disable=SC2086
      if ! $cc $WARN -O2 -I. $impl "$src.c" -o "$src" -lm > "$src.log" 2>&1; then
        fail "$where (program): does not build:"; cat "$src.log"; continue
      fi
      if [ "$marker" != run ]; then pass "$where (program, built)"; continue; fi
      # the output shown: the next unlabelled (or ```text) fenced block of the file
      j=$k; want=
      while [ -f "$tmp/snip.$j.info" ]; do
        read -r l2 _ < "$tmp/snip.$j.info"
        case "$l2" in -|text) want="$tmp/snip.$j.body"; break ;; esac
        j=$((j + 1))
      done
      if [ -z "$want" ]; then fail "$where (program, run): no unlabelled fenced block after it shows its output"; continue; fi
      (cd "$tmp" && "$src") > "$src.out" 2>&1; rc=$?
      if [ "$rc" -ne 0 ]; then fail "$where (program, run): exit status $rc"; tail -n 5 "$src.out"; continue; fi
      if diff -u "$want" "$src.out" > "$src.diff"; then pass "$where (program, run: its output is the one shown)"
      else fail "$where (program, run): the output differs from the one shown (- shown, + got):"; cat "$src.diff"; fi
    elif head -n 1 "$body" | grep -q '^#'; then
      { echo "#line $line \"$md\""; cat "$body"; } > "$src.c"
      # shellcheck disable=SC2086
      if $cc $WARN -O0 -I. -c "$src.c" -o "$src.o" > "$src.log" 2>&1; then pass "$where (file scope)"
      else fail "$where (file scope):"; cat "$src.log"; fi
    else
      { echo "$HDRS"; echo "$marker"; echo 'void dt_doc_snippet(void);'
        echo 'void dt_doc_snippet(void) {'; echo "#line $line \"$md\""; cat "$body"; echo '}'; } > "$src.c"
      # shellcheck disable=SC2086
      if $cc $WARN $FRAG_WARN -I. -fsyntax-only "$src.c" > "$src.log" 2>&1; then pass "$where (fragment)"
      else fail "$where (fragment):"; cat "$src.log"; fi
    fi
  done
done
case " $* " in *" docs/API.md "*)
  names=$(sed -n 's/^DTDEF[^(]*[ *]\(dt_[a-z0-9_]*\)(.*/\1/p' src/api/*.h | sort -u)
  total=$(printf '%s\n' "$names" | grep -c .); missing=
  for n in $names; do grep -qF "\`$n(" docs/API.md || missing="$missing $n"; done
  if [ -z "$missing" ] && [ "$total" -gt 0 ]; then pass "docs/API.md names all $total public functions of src/api/*.h"
  else fail "docs/API.md lacks these public functions of src/api/*.h:$missing"; fi ;;
esac
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
