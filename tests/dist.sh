#!/bin/sh
# make test-dist: tests/test_dist.c built with DEVTENSOR_MPI ($1), on two ranks under
# mpirun, then the failure paths, each under a time limit (a hang fails):
#   - a straggler: rank 1 arrives 3 s late, rank 0 (DT_DIST_TIMEOUT=1) fails in ~1 s
#     and ends; mpirun then stops rank 1;
#   - a rank that fails to start: mpirun ends the job with an error, no hang;
#   - one rank without mpirun (MPI's singleton);
#   - the build without MPI ($2) under mpirun -np 2: dt_dist_init says DT_ERR_UNSUPPORTED;
#   - three ranks (DT_TEST_WORLD=1): the collectives, and a mismatch on each rank in turn;
#   - the all-reduce benchmark ($DIST_BENCH, bench/bench_allreduce.c, on $DIST_BENCH_DEV: cpu
#     or cuda) at its smallest sizes, 4 B to 4 KiB, two calls each: its rows and its check of
#     every element against the sum of the ranks' values.
# Prints PASS/FAIL lines and one "N passed, N failed, N skipped" line.
bin=${1:-$DIST_BIN}
plain=${2:-$DIST_PLAIN}
MPIRUN=${MPIRUN:-mpirun}
passed=0; failed=0; skipped=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed, $skipped skipped"; [ "$failed" = 0 ]; exit $?; }
if ! command -v "$MPIRUN" >/dev/null 2>&1; then
  fail "test-dist: $MPIRUN not found (apt-get install openmpi-bin libopenmpi-dev)"; finish
fi
# Open MPI refuses root unless told; CI runs as root in its container
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log=$(mktemp "${TMPDIR:-/tmp}/dt_dist.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT

# make test-dist-gpu (DIST_BENCH_DEV=cuda) needs a GPU per rank: NCCL takes one each. On a machine
# with one GPU, two ranks must be refused, each saying why; the runs below
# need the GPUs and are skipped. No GPU at all: a skip (a failure under DT_REQUIRE_GPU=1).
if [ "${DIST_BENCH_DEV:-cpu}" = cuda ]; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [ "$ngpu" -lt 2 ]; then
    if [ "$ngpu" = 1 ]; then
      timeout 60 "$MPIRUN" -np 2 --oversubscribe "$bin" >"$log" 2>&1; rc=$?
      if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q 'another rank would share a GPU' "$log" &&
         grep -q 'rank 1 is local rank 1 of a machine with 1 GPU, so it would share cuda:0' "$log"; then
        pass "dist-gpu: on 1 GPU, 2 ranks are refused, each saying that they would share cuda:0 and NCCL takes one GPU per rank"
      else
        cat "$log"; fail "dist-gpu: 2 ranks on 1 GPU were not refused as they should be (exit status $rc)"
      fi
    elif [ "${DT_REQUIRE_GPU:-}" = 1 ]; then
      fail "dist-gpu: no GPU (nvidia-smi lists none), and DT_REQUIRE_GPU=1"
    fi
    echo "SKIP dist-gpu's runs: they need a GPU per rank (2 and 3 ranks); this machine has $ngpu"
    skipped=$((skipped + 1))
    finish
  fi
fi

# 1. the tests on two ranks; the trainer's against one process's run, written by the build without MPI
ref=$(mktemp "${TMPDIR:-/tmp}/dt_dist_ref.XXXXXX") || exit 1
trap 'rm -f "$log" "$ref" "$ref.cls"' EXIT
if [ -n "$plain" ]; then
  if DT_TEST_TRAINER_REF="$ref" timeout 60 "$plain" >"$log" 2>&1 && grep -q '^PASS test_trainer_reference' "$log"; then
    export DT_TEST_TRAINER_REF="$ref"
  else
    cat "$log"; fail "dist: the one-process trainer run for the comparison"
  fi
fi
timeout 60 "$MPIRUN" -np 2 --oversubscribe "$bin" >"$log" 2>&1; rc=$?
unset DT_TEST_TRAINER_REF
grep -v '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' "$log" | grep '^\(PASS\|FAIL\|SKIP\|  \)'
sum=$(grep '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' "$log" | tail -1)
if [ -z "$sum" ]; then
  cat "$log"; fail "test_dist on 2 ranks: no summary (exit status $rc$( [ $rc = 124 ] && echo ': timed out after 60 s'))"
else
  set -- $sum
  passed=$((passed + $1)); failed=$((failed + $3)); skipped=$((skipped + $5))
  [ "$rc" = 0 ] || [ "$3" != 0 ] || fail "test_dist on 2 ranks: mpirun exited with $rc"
fi

# 2. a straggler
start=$(date +%s)
DT_TEST_STRAGGLER=1 DT_DIST_TIMEOUT=1 timeout 30 "$MPIRUN" -np 2 --oversubscribe "$bin" >"$log" 2>&1; rc=$?
took=$(($(date +%s) - start))
if grep -q '^PASS test_straggler_times_out' "$log" && [ "$rc" != 124 ] && [ "$took" -lt 20 ]; then
  pass "dist: a rank 3 s late makes rank 0 fail after DT_DIST_TIMEOUT=1 s, and the job ends (${took} s)"
else
  cat "$log"; fail "dist: straggler (exit status $rc after $took s)"
fi

# 3. a rank that fails to start
start=$(date +%s)
timeout 30 "$MPIRUN" -np 1 --oversubscribe "$bin" : -np 1 false >"$log" 2>&1; rc=$?
took=$(($(date +%s) - start))
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$took" -lt 20 ]; then
  pass "dist: a rank that fails to start ends the job with an error (status $rc, ${took} s)"
else
  cat "$log"; fail "dist: a rank that fails to start (exit status $rc after $took s)"
fi

# 4. one rank, no mpirun
if timeout 30 "$bin" >"$log" 2>&1 && grep -q '^PASS test_one_rank_world' "$log"; then
  pass "dist: the MPI build as one process without mpirun is a one-rank world"
else
  cat "$log"; fail "dist: the MPI build without mpirun"
fi

# 5. the build without MPI under a launcher
if [ -n "$plain" ]; then
  timeout 30 "$MPIRUN" -np 2 --oversubscribe "$plain" >"$log" 2>&1; rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q 'FAIL dt_dist_init: dt_dist_init: this process is one of 2 ranks (OMPI_COMM_WORLD_SIZE=2), but devtensor was built without DEVTENSOR_MPI' "$log"; then
    pass "dist: a build without DEVTENSOR_MPI under mpirun -np 2 says so (DT_ERR_UNSUPPORTED)"
  else
    cat "$log"; fail "dist: the build without MPI under mpirun (exit status $rc)"
  fi
fi

# 6. three ranks (a world that is not a power of two: the agreement's recursive doubling pairs
#    ranks 0 and 1 first): the collectives and a mismatch on each rank in turn
timeout 60 env DT_TEST_WORLD=1 "$MPIRUN" -np 3 --oversubscribe "$bin" >"$log" 2>&1; rc=$?
if [ "$rc" = 0 ] && grep -q '^PASS test_agreement_any_world' "$log" && grep -q '^[0-9]* passed, 0 failed, [0-9]* skipped$' "$log"; then
  pass "dist: 3 ranks: all-reduce, broadcast, and a mismatch on any one rank refused on every rank"
else
  cat "$log"; fail "dist: 3 ranks (exit status $rc$( [ $rc = 124 ] && echo ': timed out after 60 s'))"
fi

# 7. the benchmark's smallest sizes (make bench-dist runs it in full)
if [ -n "$DIST_BENCH" ]; then
  timeout 30 "$MPIRUN" -np 2 --oversubscribe "$DIST_BENCH" -d "${DIST_BENCH_DEV:-cpu}" -b 4 -e 4K -w 1 -n 2 >"$log" 2>&1; rc=$?
  # 11 rows (4, 8, ..., 4096 bytes), each with no wrong element, and the check's verdict
  rows=$(awk '$1 ~ /^[0-9]+$/ && $2 == $1 / 4 && $6 == 0' "$log" | wc -l)
  if [ "$rc" = 0 ] && [ "$rows" = 11 ] && grep -q '^# check: OK: .* sum of the 2 ranks' "$log"; then
    pass "dist: bench_allreduce ($DIST_BENCH_DEV) on 2 ranks, 4 B to 4 KiB: 11 sizes, every element the sum of the ranks' values"
  else
    cat "$log"; fail "dist: bench_allreduce at its smallest sizes (exit status $rc, $rows good rows of 11)"
  fi
fi
finish
