#!/bin/sh
# The CPU backend at another commit against this one, on the same benchmark source: bench/bench_cpu.c
# of the working tree built against devtensor.h at REV and against the working tree's, run in
# interleaved rounds; prints a table of best and median times and old/new ratios (above 1: faster now).
#   sh bench/ab_cpu.sh REV [rounds [samples [case-prefix]]]
rev=${1:?usage: bench/ab_cpu.sh REV [rounds [samples [case-prefix]]]}; rounds=${2:-5}; samples=${3:-5}; only=${4:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/dt_ab.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
git show "$rev:devtensor.h" > "$dir/devtensor.h" || exit 1
mkdir -p "$dir/bench" build && cp bench/bench_cpu.c "$dir/bench/" || exit 1
cc=${CC:-cc}
$cc -std=c99 -O2 -fopenmp -I"$dir" "$dir/bench/bench_cpu.c" -o "$dir/old" -lm || exit 1
$cc -std=c99 -O2 -fopenmp -I. bench/bench_cpu.c -o "$dir/new" -lm || exit 1
echo "old: $rev ($(git rev-parse --short "$rev")), new: the working tree at $(git rev-parse --short HEAD); load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
i=1
while [ "$i" -le "$rounds" ]; do
  "$dir/old" "$samples" "$only" >> "$dir/old.txt" || exit 1
  "$dir/new" "$samples" "$only" >> "$dir/new.txt" || exit 1
  i=$((i + 1))
done
awk -v OLD="$dir/old.txt" '
  function med(s,   a, n, i, j, k) { n = split(s, a, " "); for (i = 2; i <= n; i++) { k = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > k; j--) a[j + 1] = a[j]; a[j + 1] = k }
                                   return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function best(s,   a, n, i, b) { n = split(s, a, " "); b = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 < b) b = a[i] + 0; return b }
  $1 == "devtensor" { split($3, v, "="); if (FILENAME == OLD) { o[$2] = o[$2] " " v[2]; if (!($2 in seen)) { seen[$2] = 1; order[++nk] = $2 } } else nw[$2] = nw[$2] " " v[2] }
  END {
    printf "| case | old best | new best | old/new, best | old/new, median |\n|---|---|---|---|---|\n"
    for (i = 1; i <= nk; i++) { k = order[i]; if (!(k in nw)) continue
      printf "| %s | %.4f ms | %.4f ms | %.2fx | %.2fx |\n", k, best(o[k]) * 1e3, best(nw[k]) * 1e3, best(o[k]) / best(nw[k]), med(o[k]) / med(nw[k]) }
  }' "$dir/old.txt" "$dir/new.txt"
