#!/bin/sh
# The examples built against the emulator (build/emu/ex), each once with small
# sizes; gpus's transcript on two and on one emulated GPU against tests/golden/
# (the emulator is deterministic: same values, same order, no timings printed).
GPUS_GOLDEN="DTEMU_GPUS=2:tests/golden/gpus_emu2.txt DTEMU_GPUS=1:tests/golden/gpus_emu1.txt" \
  exec sh tests/examples_smoke.sh build/emu/ex "emu "
