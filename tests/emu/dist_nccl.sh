#!/bin/sh
# make test-emu: two ranks under mpirun whose GPUs are emulated (build/emu/dist_test_dist:
# DEVTENSOR_MPI, DEVTENSOR_CUDA and the emulator's NCCL). Each rank's emulator lives in its
# own process, so NCCL cannot start across them: rank 1's ncclCommInitRank fails at once,
# rank 0's gives up after DTEMU_NCCL_TIMEOUT; dt_dist_init must then fail on both ranks with
# NCCL's reason, and the job end, never hang. Then two ranks on a machine of one GPU: refused
# on both ranks before NCCL starts.
bin=build/emu/dist_test_dist
if ! command -v mpirun >/dev/null 2>&1 || [ ! -x "$bin" ]; then
  echo "SKIP emu dist: no mpirun or no $bin (apt-get install openmpi-bin libopenmpi-dev)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
p=0; f=0
# 1. a GPU per rank (two emulated GPUs, local ranks 0 and 1): NCCL starts, and fails across the processes
out=$(DTEMU_GPUS=2 DTEMU_NCCL_TIMEOUT=2 ASAN_OPTIONS=detect_leaks=0 timeout 60 mpirun -np 2 --oversubscribe "$bin" 2>&1); rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 124 ] &&
   printf '%s\n' "$out" | grep -q '^FAIL dt_dist_init: dt_dist_init: NCCL did not start on rank 0: ncclCommInitRank failed: remote process exited' &&
   printf '%s\n' "$out" | grep -q '^FAIL dt_dist_init: dt_dist_init: NCCL did not start on rank 1: ncclCommInitRank failed: unhandled system error'; then
  echo "PASS emu dist: NCCL failing to start on GPU ranks is an error on every rank (dt_dist_init), no hang"; p=$((p + 1))
else
  printf '%s\n' "$out" | tail -20
  echo "FAIL emu dist: NCCL failing to start (exit status $rc)"; f=$((f + 1))
fi
# 2. two ranks, one GPU: refused on both ranks before NCCL (which would say only "invalid usage")
out=$(DTEMU_GPUS=1 ASAN_OPTIONS=detect_leaks=0 timeout 60 mpirun -np 2 --oversubscribe "$bin" 2>&1); rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 124 ] &&
   printf '%s\n' "$out" | grep -q '^FAIL dt_dist_init: dt_dist_init: rank 1 is local rank 1 of a machine with 1 GPU, so it would share cuda:0 with another rank, and NCCL takes one GPU per rank' &&
   printf '%s\n' "$out" | grep -q '^FAIL dt_dist_init: dt_dist_init: another rank would share a GPU' &&
   ! printf '%s\n' "$out" | grep -q 'ncclCommInitRank'; then
  echo "PASS emu dist: two ranks on a one-GPU machine are refused on every rank before NCCL starts"; p=$((p + 1))
else
  printf '%s\n' "$out" | tail -20
  echo "FAIL emu dist: two ranks on one GPU (exit status $rc)"; f=$((f + 1))
fi
echo "$p passed, $f failed, 0 skipped"
[ "$f" = 0 ]
