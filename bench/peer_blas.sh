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
