#!/bin/sh
# The CUDA builds of the examples (on a GPU when there is one, else on the CPU),
# the user's own-kernel example and the README's nvcc one-command build.
exec sh tests/examples_smoke.sh build/cuda/ex "cuda " build/cuda/own_kernel build/cuda/gpus_nvcc
