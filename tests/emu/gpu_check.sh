#!/bin/sh
# tests/cuda/gpu_check.cu (the CUDA backend against the CPU backend, op by op) on the emulator,
# without its timings (too slow there), through the same runner as on a GPU.
exec sh tests/cuda/gpu_check.sh build/emu/gpu_check --no-timings
