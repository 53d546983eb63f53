#!/bin/sh
# make test-emu: two ranks under mpirun whose GPUs are emulated (build/emu/dist_test_dist:
# DEVTENSOR_MPI, DEVTENSOR_CUDA and the emulator's NCCL). Each rank's emulator lives in its
# own process, so NCCL cannot start across them: rank 1's ncclCommInitRank fails at once,
# rank 0's gives up after DTEMU_NCCL_TIMEOUT; dt_dist_init must then fail on both ranks with
# NCCL's reason, and the job end, never hang.
bin=build/emu/dist_test_dist
if ! command -v mpirun >/dev/null 2>&1 || [ ! -x "$bin" ]; then
  echo "SKIP emu dist: no mpirun or no $bin (apt-get install openmpi-bin libopenmpi-dev)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(DTEMU_GPUS=1 DTEMU_NCCL_TIMEOUT=2 ASAN_OPTIONS=detect_leaks=0 timeout 60 mpirun -np 2 --oversubscribe "$bin" 2>&1); rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 124 ] &&
   printf '%s\n' "$out" | grep -q '^FAIL dt_dist_init: dt_dist_init: NCCL did not start on rank 0: ncclCommInitRank failed: remote process exited' &&
   printf '%s\n' "$out" | grep -q '^FAIL dt_dist_init: dt_dist_init: NCCL did not start on rank 1: ncclCommInitRank failed: unhandled system error'; then
  echo "PASS emu dist: NCCL failing to start on GPU ranks is an error on every rank (dt_dist_init), no hang"
  echo "1 passed, 0 failed, 0 skipped"
else
  printf '%s\n' "$out" | tail -20
  echo "FAIL emu dist: NCCL failing to start (exit status $rc)"
  echo "0 passed, 1 failed, 0 skipped"; exit 1
fi
