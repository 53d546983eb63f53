# Sourced by bench/run_cpu.sh and bench/run_fashion.sh: peer_blas prints which BLAS the peers get.
# NumPy and PyTorch on Debian call the system's libblas.so.3: the reference BLAS unless OpenBLAS is
# installed (apt-get install libopenblas0-pthread), which makes their matmuls ~10x slower (torch's
# Fashion-MNIST MLP epoch ~30x), so a peer without it is not at its best: a warning, not a skip.
peer_blas() {
  blas=$(readlink -f /etc/alternatives/libblas.so.3-$(uname -m)-linux-gnu 2>/dev/null)
  case "$blas" in
    *openblas*) echo "peers' BLAS: $blas" ;;
    *) echo "WARNING: the peers' libblas.so.3 is ${blas:-unknown}, not OpenBLAS: their matmuls are not at their best (apt-get install libopenblas0-pthread)" ;;
  esac
}

# peer_coretype PYTHON: sets peer_ct to the OPENBLAS_CORETYPE the peers also run with, beside
# OpenBLAS's own choice (the faster counts, per row), or to nothing when one run is enough; prints
# why. OpenBLAS's own CPU detection is not always its best: 0.3.21 takes a Sapphire Rapids Xeon for
# a Prescott (SSE3 kernels, 5x slower than OPENBLAS_CORETYPE=SkylakeX). The candidate is the newest
# core type the CPU's flags allow: SkylakeX with avx512f, avx512bw, avx512vl and avx512dq; Haswell
# with avx2 and fma; none otherwise, and none off x86. No second run when OpenBLAS's own choice
# already has those kernels or newer (Cooperlake and SapphireRapids for SkylakeX; Zen, whose kernels
# are Haswell's, for Haswell), when the peers' BLAS is not OpenBLAS, or when this OpenBLAS does not
# take the candidate. PEER_CORETYPE=<name> tries that core type instead (even over an equal own
# choice), PEER_CORETYPE=none never a second one.
peer_coretype() {
  peer_ct=
  pc_py=$1
  pc_name() { env -u OPENBLAS_L2_SIZE "$@" "$pc_py" bench/bench_peers.py --corename 2>/dev/null; }
  pc_own=$(pc_name -u OPENBLAS_CORETYPE)
  if [ -z "$pc_own" ]; then
    echo "peers' OpenBLAS core type: one run (no OpenBLAS core name from '$pc_py' with NumPy or PyTorch)"
    return 0
  fi
  pc_want=${PEER_CORETYPE-}
  if [ "$pc_want" = none ]; then
    echo "peers' OpenBLAS core type: its own choice, $pc_own (PEER_CORETYPE=none)"
    return 0
  fi
  if [ -z "$pc_want" ]; then
    case $(uname -m) in
      x86_64|amd64|i?86) ;;
      *) echo "peers' OpenBLAS core type: its own choice, $pc_own (not x86: no second run)"; return 0 ;;
    esac
    pc_flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | sed 's/^[^:]*://') "
    pc_has() { for f in "$@"; do case "$pc_flags" in *" $f "*) ;; *) return 1 ;; esac; done; }
    if pc_has avx512f avx512bw avx512vl avx512dq; then pc_want=SkylakeX; pc_same="skylakex cooperlake sapphirerapids"
    elif pc_has avx2 fma; then pc_want=Haswell; pc_same="haswell zen skylakex cooperlake sapphirerapids"
    else
      echo "peers' OpenBLAS core type: its own choice, $pc_own (no AVX2 and FMA: nothing newer to try)"
      return 0
    fi
    pc_lown=$(echo "$pc_own" | tr 'A-Z' 'a-z')
    case " $pc_same " in
      *" $pc_lown "*)
        echo "peers' OpenBLAS core type: its own choice, $pc_own, has the $pc_want kernels or newer: one run"
        return 0 ;;
    esac
  fi
  pc_got=$(pc_name OPENBLAS_CORETYPE="$pc_want")
  if [ "$(echo "$pc_got" | tr 'A-Z' 'a-z')" != "$(echo "$pc_want" | tr 'A-Z' 'a-z')" ]; then
    echo "peers' OpenBLAS core type: its own choice, $pc_own (OPENBLAS_CORETYPE=$pc_want gave ${pc_got:-nothing}: not taken)"
    return 0
  fi
  peer_ct=$pc_got
  echo "peers' OpenBLAS core type: its own choice, $pc_own, and OPENBLAS_CORETYPE=$peer_ct (lines '<peer>[$peer_ct]'); the faster counts"
}
