#!/bin/sh
# The op, core, network, random, softmax, loss, indexing, in-place, autograd and half-optimizer
# tests again on the emulator, changed three ways:
# blocks and threads run last to first (DTEMU_ORDER=reverse: an order dependence between
# them would be a race on a GPU), the H100's 132 multiprocessors (DTEMU_SMS: the
# reductions split their rows and columns as they will there), and devtensor's cache off
# (DEVTENSOR_CUDA_NO_CACHE: every tensor its own allocation, so ASan sees an overrun past
# any tensor's end). Then the convolution tests without cuDNN (DEVTENSOR_NO_CUDNN: the
# emulator's build has it), through im2col + cuBLAS as a build without DEVTENSOR_CUDNN
# runs them. One summary line for both, their sum (a part without its own counts as a
# failure), like tests/run.sh's.
{
  DTEMU_ORDER=reverse DTEMU_SMS=132 DEVTENSOR_CUDA_NO_CACHE=1 sh tests/run.sh \
    build/emu/test_ops build/emu/test_core build/emu/test_nn build/emu/test_random build/emu/test_softmax build/emu/test_losses \
    build/emu/test_index build/emu/test_index2 build/emu/test_inplace build/emu/test_autograd build/emu/test_half_optim 2>&1 | sed 's/^\(PASS\|FAIL\|SKIP\) /\1 second pass: /'
  DEVTENSOR_NO_CUDNN=1 sh tests/run.sh build/emu/test_conv build/emu/test_cnn 2>&1 | sed 's/^\(PASS\|FAIL\|SKIP\) /\1 no cuDNN: /'
} | awk '/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $1; f += $3; s += $5; n++; next } { print }
         END { if (n < 2) { print "FAIL second_pass.sh: a part ended without its summary line"; f += 2 - n }
               printf "%d passed, %d failed, %d skipped\n", p, f, s }'
