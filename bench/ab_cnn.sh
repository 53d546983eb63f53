#!/bin/sh
# D2L chapter 8's networks and ResNet-18 on the CPU, devtensor at another commit against the working
# tree, with PyTorch on 1 and on 2 threads in the same rounds: examples/modern_cnn.c and resnet.c of
# the working tree built against devtensor.h at REV and against the working tree's. Per network,
# `rounds` rounds of old, new, torch-1t, torch-2t, each 3 epochs (1024 training and 256 test images;
# ResNet 1280), the faster of epochs 2 and 3 taken. Prints medians (range), the median of new/old
# within a round ("paired"), and old and new against the faster PyTorch.
#   sh bench/ab_cnn.sh REV [rounds [networks]]     (networks: e.g. "densenet 32,resnet 28")
rev=${1:?usage: bench/ab_cnn.sh REV [rounds [networks]]}; rounds=${2:-3}
nets=${3:-"alexnet 67,vgg 32,nin 67,googlenet 32,densenet 32,regnet 32,bnlenet 28,resnet 28"}
py=${PYTHON:-/usr/bin/python3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/dt_abcnn.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
git show "$rev:devtensor.h" > "$dir/devtensor.h" || exit 1
mkdir -p "$dir/examples" && cp examples/modern_cnn.c examples/resnet.c examples/*.h "$dir/examples/" || exit 1
cc=${CC:-cc}
for e in modern_cnn resnet; do
  $cc -std=c99 -O2 -fopenmp -I"$dir" "$dir/examples/$e.c" -o "$dir/old_$e" -lm -lz || exit 1
  $cc -std=c99 -O2 -fopenmp -I. "examples/$e.c" -o "$dir/new_$e" -lm -lz || exit 1
done
echo "old: $rev ($(git rev-parse --short "$rev")), new: the working tree at $(git rev-parse --short HEAD); $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'); load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
best() { grep -E "epoch  [23]" | awk '{print $(NF-1)}' | sort -n | head -1; }
echo "$nets" | tr ',' '\n' | while read -r m s; do
  [ -n "$m" ] || continue
  if [ "$m" = resnet ]; then a="--size $s --train 1280 --test 256 --epochs 3 --lr 0.01 --batch 128"; b=resnet; p=bench/resnet_torch.py
  else a="--model $m --size $s --epochs 3 --train 1024 --test 256"; b=modern_cnn; p=bench/modern_cnn_torch.py; fi
  r=1
  while [ "$r" -le "$rounds" ]; do
    o=$("$dir/old_$b" $a 2>&1 | best); n=$("$dir/new_$b" $a 2>&1 | best)
    t1=$("$py" $p $a --threads 1 2>&1 | best); t2=$("$py" $p $a --threads 2 2>&1 | best)
    echo "$m ($s) $o $n $t1 $t2"
    r=$((r + 1))
  done
done > "$dir/runs.txt"
awk '
  function med(s,   a, n, i, j, k) { n = split(s, a, " "); for (i = 2; i <= n; i++) { k = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > k; j--) a[j + 1] = a[j]; a[j + 1] = k }
                                   return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function lo(s,   a, n, i, b) { n = split(s, a, " "); b = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 < b) b = a[i] + 0; return b }
  function hi(s,   a, n, i, b) { n = split(s, a, " "); b = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 > b) b = a[i] + 0; return b }
  { k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
    o[k] = o[k] " " $3; n[k] = n[k] " " $4; t1[k] = t1[k] " " $5; t2[k] = t2[k] " " $6; if ($3 > 0) pr[k] = pr[k] " " $4 / $3 }
  END {
    printf "| network (size) | old | new | paired | torch-1t | torch-2t | old | new |\n|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= nk; i++) { k = order[i]; b = med(t1[k]) < med(t2[k]) ? med(t1[k]) : med(t2[k])
      printf "| %s | %.2f s (%.2f-%.2f) | %.2f s (%.2f-%.2f) | %.2f | %.2f s | %.2f s | %.2fx | %.2fx |\n", k, med(o[k]), lo(o[k]), hi(o[k]),
             med(n[k]), lo(n[k]), hi(n[k]), med(pr[k]), med(t1[k]), med(t2[k]), med(o[k]) / b, med(n[k]) / b }
  }' "$dir/runs.txt"
