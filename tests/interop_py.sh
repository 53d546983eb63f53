#!/bin/sh
# Tensors between libdevtensor.so and PyTorch / NumPy (tests/interop.py, with ctypes).
# Needs python3 with numpy and torch (Debian: python3-numpy python3-torch; .ci/run
# installs them); without them this is one SKIP. Run from `make test` (after `make lib`).
case "${DT_CUDA:-}" in
  1) lib=build/lib/cuda/libdevtensor.so ;;
  0) lib=build/lib/cpu/libdevtensor.so ;;
  *) lib=build/lib/cuda/libdevtensor.so; [ -f "$lib" ] || lib=build/lib/cpu/libdevtensor.so ;;
esac
if [ ! -f "$lib" ]; then echo "FAIL interop_python: $lib missing (run make lib)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy, torch' >/dev/null 2>&1; then
    exec "$p" tests/interop.py "$lib"
  fi
done
echo "SKIP interop_python: no python3 with numpy and torch here (apt-get install python3-numpy python3-torch)"
echo "0 passed, 0 failed, 1 skipped"
