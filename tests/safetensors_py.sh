#!/bin/sh
# Reads build/hand_saved.safetensors (written by test_nn) from Python.
f=build/hand_saved.safetensors
if [ ! -f "$f" ]; then echo "FAIL safetensors_python: $f missing (test_nn did not run?)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1; then exec "$p" tests/check_safetensors.py "$f"; fi
done
echo "SKIP safetensors_python: no python3 on this machine"
echo "0 passed, 0 failed, 1 skipped"
