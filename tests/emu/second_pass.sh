#!/bin/sh
# The op, core, network and random tests again on the emulator, changed three ways:
# blocks and threads run last to first (DTEMU_ORDER=reverse: an order dependence between
# them would be a race on a GPU), the H100's 132 multiprocessors (DTEMU_SMS: the
# reductions split their rows and columns as they will there), and devtensor's cache off
# (DEVTENSOR_CUDA_NO_CACHE: every tensor its own allocation, so ASan sees an overrun past
# any tensor's end). Adds up the programs' summary lines like tests/run.sh.
DTEMU_ORDER=reverse DTEMU_SMS=132 DEVTENSOR_CUDA_NO_CACHE=1 sh tests/run.sh \
  build/emu/test_ops build/emu/test_core build/emu/test_nn build/emu/test_random 2>&1 | sed 's/^\(PASS\|FAIL\|SKIP\) /\1 second pass: /'
