# ci.mk — the builds CI runs besides make test (.ci/run), with the variables, variants and
# rules only they use; included at the end of the Makefile, whose header says what each target
# does and explains the templates used here (VARIANT, IMPL, LINKED). The rest is the Makefile's:
# the compilers and flags, the test and example lists, the CUDA settings and $(CU_OBJ), and
# make test's builds (valgrind runs build/c's tests, test-dist build/c/test_dist).
#   make asan test-emu fault fuzz fuzz-replay tsan tsan-omp mingw cxx-std cu-cxx20 valgrind
#        check-amalgamate test-dist; beside test-dist, whose MPI builds they share (not run by
#        CI: they need MPI ranks on GPUs, or measure): test-dist-gpu bench-dist bench-dist-gpu

# Debug information in CI's builds: -g1, line tables and functions (what sanitizer reports,
# valgrind and a backtrace print, inlined frames included), no local variables; a quarter less
# compile time than -g. DBG=-g for a build to step through in a debugger.
DBG     ?= -g1
# ASan + UBSan: make asan, make fault's and make fuzz-replay's sanitized builds
SAN     := -O1 $(DBG) -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_TESTS:= $(addprefix $(B)/asan/,$(TESTS))
FUZZ_TIME ?= 60
FUZZERS := safetensors device_parse print load_tensors

# distributed: Open MPI's compiler wrapper and launcher (apt-get install openmpi-bin libopenmpi-dev)
MPICC   ?= mpicc
MPIRUN  ?= mpirun

# ---- the CUDA backend on the CPU emulator (tests/emu, see its README): devtensor_cuda.cu
#      compiled by the host C++ compiler with -DDTEMU against tests/emu's cuda_runtime.h /
#      cublas_v2.h, all of it under ASan + UBSan; two emulated GPUs.
EMU_SAN    := -O1 $(DBG) -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -U_FORTIFY_SOURCE
EMU_DIR    := $(B)/emu
# EMU_FMA=1 (with EMU_DIR=build/emu-fma, so that the usual build stays): the backend compiled with
# FMA contraction, as nvcc compiles it for a GPU, where the emulator's usual build has none; a
# result that should not depend on fused multiply-adds (the CPU's bits, a half kernel's against
# the float32 one's) then shows it does. x86 with FMA only.
EMU_FP     := $(if $(filter 1,$(EMU_FMA)),-O2 -mfma -ffp-contract=fast -DDTEMU_FMA,-ffp-contract=off)
EMU_LIB    := $(EMU_DIR)/libcudart_emu.so
EMU_OBJ    := $(EMU_DIR)/devtensor_cuda.o
EMU_LINK   := -L$(EMU_DIR) -lcudart_emu -Wl,-rpath,$(abspath $(EMU_DIR)) -lstdc++ -lm -pthread -ldl
# all tests but those that touch no device (the Makefile's CPU_ONLY): make asan runs those under
# the same sanitizers, and CI's 30 minutes are tight
EMU_TESTS  := $(addprefix $(EMU_DIR)/,$(filter-out $(CPU_ONLY),$(TESTS)))
EMU_EX     := $(addprefix $(EMU_DIR)/ex/,$(EXAMPLES))
EMU_HDRS   := $(wildcard tests/emu/*.h)
EMU_ENV    := DTEMU_GPUS=2 ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
TSAN_EMU   := $(B)/tsan-emu

# ---- CI's variants (V_CMD, V_LIBS, V_DEPS: the Makefile's variants explain them) ----
asan_CMD     = $(CC) $(CSTD) $(WARN) $(SAN) $(CFLAGS) -I.
asan_LIBS    = $(LDLIBS)
fault_CMD    = $(CC) $(CSTD) $(WARN) -O1 $(DBG) $(CFLAGS) -I.
fault_LIBS   = $(LDLIBS)
faultomp_CMD = $(CC) $(CSTD) $(WARN) -O1 $(DBG) $(OPENMP) $(CFLAGS) -I.
faultomp_LIBS= $(LDLIBS)
tsan_CMD     = $(CC) $(CSTD) $(WARN) -O1 $(DBG) -fsanitize=thread -pthread -DTHREAD_ITERS=200 $(CFLAGS) -I.
tsan_LIBS    = $(LDLIBS)
fuzz_CMD     = $(CLANG) $(DBG) -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DFUZZ_LIBFUZZER -I.
fuzz_LIBS    = -lm
dist_CMD     = $(MPICC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -DDEVTENSOR_MPI -I.
dist_LIBS    = $(LDLIBS)
emu_CMD      = $(CC) $(CSTD) $(WARN) $(EMU_SAN) $(CFLAGS) -DDEVTENSOR_CUDA -DDEVTENSOR_CUDNN -I.
emu_LIBS     = $(EMU_LINK)
emu_DEPS     = $(EMU_OBJ) $(EMU_LIB)
emubench_CMD = $(CC) $(CSTD) $(WARN) $(EMU_SAN) $(CFLAGS) -DBENCH_SMOKE -DDEVTENSOR_CUDA -I. -Itests/emu
emubench_LIBS= $(EMU_LINK)
emubench_DEPS= $(EMU_OBJ) $(EMU_LIB)
tsanemu_CMD  = $(CC) $(CSTD) $(WARN) -O1 $(DBG) -fsanitize=thread -DTHREAD_ITERS=60 $(CFLAGS) -DDEVTENSOR_CUDA -I.
tsanemu_LIBS = -L$(TSAN_EMU) -lcudart_emu -Wl,-rpath,$(abspath $(TSAN_EMU)) -lstdc++ -lm -pthread -ldl
tsanemu_DEPS = $(TSAN_EMU)/devtensor_cuda.o $(TSAN_EMU)/libcudart_emu.so

$(eval $(call VARIANT,asan,$(B)/asan/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,emu,$(EMU_DIR)/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,dist,$(B)/dist/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,dist,$(B)/dist/ex/%,examples/%.c $(EX_DEPS)))
$(eval $(call VARIANT,dist,$(B)/dist/bench_allreduce,bench/bench_allreduce.c $(HDR)))
$(eval $(call VARIANT,emu,$(EMU_DIR)/ex/%,examples/%.c $(EX_DEPS)))
# emulator-only programs (tests/emu/*.c): which devices get a CUDA context, the reason given without a driver
$(eval $(call VARIANT,emu,$(EMU_DIR)/%,tests/emu/%.c $(HDR) tests/harness.h))
# the GPU benchmarks with tiny sizes (BENCH_SMOKE): run end to end, timings meaningless
$(eval $(call VARIANT,emubench,$(EMU_DIR)/bench/%,bench/%.c $(HDR)))
$(eval $(call VARIANT,fault,$(B)/fault/fault_injection,tests/fault_injection.c $(HDR) tests/harness.h))
$(eval $(call VARIANT,asan,$(B)/fault/fault_injection_asan,tests/fault_injection.c $(HDR) tests/harness.h))
$(eval $(call VARIANT,faultomp,$(B)/fault/fault_injection_omp,tests/fault_injection.c $(HDR) tests/harness.h))
$(eval $(call VARIANT,faultomp,$(B)/fault/oom_exhaust,tests/oom_exhaust.c $(HDR) tests/harness.h))
$(eval $(call VARIANT,fuzz,$(B)/fuzz/fuzz_%,tests/fuzz/fuzz_%.c tests/fuzz/replay_main.h $(HDR)))
$(eval $(call VARIANT,asan,$(B)/fuzz/replay_%,tests/fuzz/fuzz_%.c tests/fuzz/replay_main.h $(HDR)))
# the fuzz targets use only the public API: linked with the implementation compiled once, the
# libFuzzer build's (instrumented alike) and make asan's (the replays are make asan's variant)
$(eval $(call IMPL,fuzz,$(B)/fuzz,-x c))
$(addprefix $(B)/fuzz/fuzz_,$(FUZZERS)): $(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.h $(HDR) $(B)/fuzz/devtensor_impl.o | $$(@D)
	$(fuzz_CMD) -DDEVTENSOR_IMPLEMENTATION_DONE $< -x none $(B)/fuzz/devtensor_impl.o -o $@ $(fuzz_LIBS)
$(addprefix $(B)/fuzz/replay_,$(FUZZERS)): $(B)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.h $(HDR) $(B)/asan/devtensor_impl.o | $$(@D)
	$(asan_CMD) -DDEVTENSOR_IMPLEMENTATION_DONE $< -x none $(B)/asan/devtensor_impl.o -o $@ $(asan_LIBS)
$(eval $(call VARIANT,tsan,$(B)/tsan/test_threads,tests/test_threads.c $(HDR) tests/harness.h))
# the same 8 threads on two emulated GPUs: the CUDA backend's host side (allocator,
# lazy init, staging buffers and their events) against the emulator's stream workers
# ($(TSAN_EMU)/test_threads: SPLIT below)

# the implementation compiled once per variant (the Makefile's IMPL and LINKED)
$(eval $(call IMPL,asan,$(B)/asan,-x c))
$(eval $(call IMPL,emu,$(EMU_DIR),-x c))
$(eval $(call LINKED,asan,$(B)/asan,tests,$(LINK_TESTS),$(TEST_DEPS),$(B)/asan/devtensor_impl.o))
EMU_IMPL := $(EMU_DIR)/devtensor_impl.o
$(eval $(call LINKED,emu,$(EMU_DIR),tests,$(filter-out $(CPU_ONLY),$(LINK_TESTS)),$(TEST_DEPS),$(EMU_IMPL)))
$(eval $(call LINKED,emu,$(EMU_DIR)/ex,examples,$(EXAMPLES),$(EX_DEPS),$(EMU_IMPL)))
$(eval $(call LINKED,emu,$(EMU_DIR),tests,fault_gpu,$(TEST_DEPS),$(EMU_IMPL)))
$(eval $(call LINKED,emu,$(EMU_DIR),tests/emu,ctx_check no_driver,$(HDR) tests/harness.h,$(EMU_IMPL)))
$(eval $(call LINKED,emubench,$(EMU_DIR)/bench,bench,bench_gpu bench_train,$(HDR),$(EMU_IMPL)))
# $(call SPLIT,variant,folder,source folder,programs,prerequisites): programs that compile the
# implementation in their unit, compiled to folder/obj/NAME.o without waiting for the variant's
# V_DEPS, then linked with them: the emulator's backend object (about 2 minutes of one core)
# compiles while the other core compiles these
define SPLIT
$(addprefix $(2)/obj/,$(addsuffix .o,$(4))): $(2)/obj/%.o: $(3)/%.c $(5) | $$$$(@D)
	$$($(1)_CMD) -c $$< -o $$@
$(addprefix $(2)/,$(4)): $(2)/%: $(2)/obj/%.o $$($(1)_DEPS) | $$$$(@D)
	$$($(1)_CMD) $$(filter %.o,$$^) -o $$@ $$($(1)_LIBS)
endef
EMU_OWN := $(filter-out $(CPU_ONLY) $(LINK_TESTS),$(TESTS))
$(eval $(call SPLIT,emu,$(EMU_DIR),tests,$(EMU_OWN),$(TEST_DEPS)))
$(eval $(call SPLIT,tsanemu,$(TSAN_EMU),tests,test_threads,$(HDR) tests/harness.h))

# programs that need more than their variant (as in the Makefile)
$(B)/asan/test_threads $(B)/asan/test_optim: LDLIBS += -pthread
EMU_FASHION_EX := $(addprefix $(EMU_DIR)/ex/,fashion_mnist logistic_regression lenet resnet modern_cnn mlp_block)
$(EMU_FASHION_EX): examples/fashion_data.h
$(filter %/lenet %/resnet %/modern_cnn,$(EMU_FASHION_EX)): examples/cnn_train.h
$(EMU_FASHION_EX): EMU_LINK += -lz
$(B)/fuzz/fuzz_safetensors $(B)/fuzz/replay_safetensors: tests/fuzz/nest_decode.h

# the folders CI's programs are built in
CI_DIRS := $(addprefix $(B)/,asan fault fuzz tsan tsan-emu tsan-emu/obj dist dist/ex \
           tsan-omp mingw/gcc mingw/interlocked mingw/cxx $(addprefix cxxstd/,c++11 c++14 c++17 c++20)) \
           $(EMU_DIR) $(addprefix $(EMU_DIR)/,ex bench obj)
$(CI_DIRS):
	@mkdir -p $@

# the emulator (a shared library standing in for libcudart and libcublas) and the backend built on it
# -ftls-model=initial-exec: the library is linked, not opened later, so its thread-locals (threadIdx and
# the rest, read at every emulated thread's step) need no __tls_get_addr call (which ASan intercepts)
$(EMU_LIB): tests/emu/emu.cpp $(EMU_HDRS) | $$(@D)
	$(CXX) $(CXXSTD) $(WARN) $(EMU_SAN) -ftls-model=initial-exec -fPIC -shared -Itests/emu $< -o $@ -pthread

# with the emulator's NCCL and cuDNN (DEVTENSOR_CUDNN: convolutions through tests/emu/cudnn.h); the
# build without cuDNN is $(TSAN_EMU)'s below and make cu-cxx20's
$(EMU_OBJ): devtensor_cuda.cu $(HDR) $(EMU_HDRS) | $$(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas $(EMU_SAN) $(EMU_FP) -DDTEMU -DDEVTENSOR_NCCL -DDEVTENSOR_CUDNN -Itests/emu -I. -c $< -o $@

# distributed over ranks with emulated GPUs (tests/emu/dist_nccl.sh): MPI and the emulator's NCCL
# (each compiled first, then linked, as SPLIT's programs)
$(EMU_DIR)/obj/dist_test_dist.o: tests/test_dist.c $(TEST_DEPS) | $$(@D)
	$(MPICC) $(CSTD) $(WARN) $(EMU_SAN) -DDEVTENSOR_MPI -DDEVTENSOR_CUDA -I. -c $< -o $@
$(EMU_DIR)/dist_test_dist: $(EMU_DIR)/obj/dist_test_dist.o $(EMU_OBJ) $(EMU_LIB) | $$(@D)
	$(MPICC) $(EMU_SAN) $< $(EMU_OBJ) -o $@ $(EMU_LINK)

$(EMU_DIR)/obj/gpu_check.o: tests/cuda/gpu_check.cu $(HDR) $(EMU_HDRS) | $$(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas $(EMU_SAN) -DDTEMU -DDEVTENSOR_CUDA -Itests/emu -I. -c $< -o $@
$(EMU_DIR)/gpu_check: $(EMU_DIR)/obj/gpu_check.o $(EMU_OBJ) $(EMU_LIB) | $$(@D)
	$(CXX) $(EMU_SAN) $< $(EMU_OBJ) -o $@ $(EMU_LINK)

$(TSAN_EMU)/libcudart_emu.so: tests/emu/emu.cpp $(EMU_HDRS) | $$(@D)
	$(CXX) $(CXXSTD) $(WARN) -O1 $(DBG) -fsanitize=thread -ftls-model=initial-exec -fPIC -shared -Itests/emu $< -o $@ -pthread
$(TSAN_EMU)/devtensor_cuda.o: devtensor_cuda.cu $(HDR) $(EMU_HDRS) | $$(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas -O1 $(DBG) -fsanitize=thread -fPIC -ffp-contract=off -DDTEMU -DDEVTENSOR_NCCL -Itests/emu -I. -c $< -o $@

# ---- what CI runs ----
.PHONY: asan test-emu fault fuzz fuzz-replay tsan valgrind check-amalgamate
# test_gemm_kernel first: the longest run (about a minute), while the others share the second job
ASAN_LONG := $(B)/asan/test_gemm_kernel
asan: $(ASAN_TESTS)
	@ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 sh tests/run.sh $(ASAN_LONG) $(filter-out $(ASAN_LONG),$(ASAN_TESTS))

# the longest runs first (the examples, gpu_check, fault_gpu: 20 to 50 s each), started while the
# others share the second job; $(EMU_OBJ) first, the longest compile
test-emu: $(EMU_OBJ) $(EMU_TESTS) $(EMU_DIR)/fault_gpu $(EMU_DIR)/ctx_check $(EMU_DIR)/no_driver $(EMU_EX) $(EMU_DIR)/gpu_check $(EMU_DIR)/bench/bench_gpu $(EMU_DIR)/bench/bench_train \
          $(if $(shell command -v $(MPICC)),$(EMU_DIR)/dist_test_dist)
	@$(EMU_ENV) sh tests/run.sh tests/emu/examples.sh tests/emu/gpu_check.sh $(EMU_DIR)/fault_gpu $(EMU_TESTS) $(EMU_DIR)/ctx_check $(EMU_DIR)/no_driver \
	  tests/emu/dist_nccl.sh \
	  tests/emu/bench.sh -- tests/emu/second_pass.sh

# the OpenMP build too: the same fault injection, and allocation until failure under ulimit -v
fault: $(B)/fault/fault_injection_asan $(B)/fault/fault_injection $(B)/fault/fault_injection_omp $(B)/fault/oom_exhaust
	@ASAN_OPTIONS=detect_leaks=1 OOM_EXHAUST_BIN=$(B)/fault/oom_exhaust sh tests/run.sh $(filter-out %/oom_exhaust,$^) tests/oom_exhaust.sh

fuzz: $(addprefix $(B)/fuzz/fuzz_,$(FUZZERS))
	@sh tests/fuzz/run.sh $(B)/fuzz $(FUZZ_TIME)

fuzz-replay: $(addprefix $(B)/fuzz/replay_,$(FUZZERS))
	@ASAN_OPTIONS=detect_leaks=1 sh tests/run.sh $^

# the graph calls against eager runs (tests/fuzz/graph_fuzz.c; not run by make test or CI):
# CASES random programs from SEED, under ASan+UBSan with leak detection, on the CPU (make
# asan's implementation) or on FUZZ_DEVICE of two emulated GPUs (make test-emu's build)
$(B)/asan/graph_fuzz: tests/fuzz/graph_fuzz.c $(HDR) $(B)/asan/devtensor_impl.o | $$(@D)
	$(asan_CMD) -DDEVTENSOR_IMPLEMENTATION_DONE $< -x none $(B)/asan/devtensor_impl.o -o $@ $(asan_LIBS)
$(EMU_DIR)/graph_fuzz: tests/fuzz/graph_fuzz.c $(HDR) $(EMU_IMPL) $(EMU_OBJ) $(EMU_LIB) | $$(@D)
	$(emu_CMD) -DDEVTENSOR_IMPLEMENTATION_DONE $< -x none $(EMU_IMPL) $(EMU_OBJ) -o $@ $(emu_LIBS)
.PHONY: fuzz-graph fuzz-graph-emu
fuzz-graph: $(B)/asan/graph_fuzz
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 $< --device cpu --seed $(SEED) --cases $(CASES)
fuzz-graph-emu: $(EMU_DIR)/graph_fuzz
	$(EMU_ENV) $< --device $(FUZZ_DEVICE) --seed $(SEED) --cases $(CASES)

# two ranks under mpirun (tests/dist.sh: the tests, a straggler, a rank that fails to start, the build without MPI)
.PHONY: test-dist
test-dist: $(B)/dist/test_dist $(B)/c/test_dist $(B)/dist/bench_allreduce
	@MPIRUN=$(MPIRUN) DIST_BIN=$(B)/dist/test_dist DIST_PLAIN=$(B)/c/test_dist DIST_BENCH=$(B)/dist/bench_allreduce DIST_BENCH_DEV=cpu \
	  sh tests/run.sh tests/dist.sh

# on a machine with two or more GPUs: the same, each rank on its GPU, GPU tensors through the real NCCL
# (devtensor_cuda.cu with -DDEVTENSOR_NCCL, linked with -lnccl)
CU_NCCL_OBJ := $(B)/cuda/devtensor_cuda_nccl.o
$(CU_NCCL_OBJ): devtensor_cuda.cu $(HDR) | $$(@D)
	$(NVCC) $(NVCCFLAGS) -DDEVTENSOR_NCCL -I. -c $< -o $@
$(B)/cuda/dist_test_dist: tests/test_dist.c $(TEST_DEPS) $(CU_NCCL_OBJ) | $$(@D)
	$(MPICC) $(CSTD) $(WARN) $(OPT) -DDEVTENSOR_MPI -DDEVTENSOR_CUDA -I. $< $(CU_NCCL_OBJ) -o $@ $(CUDA_LIBS) -lnccl
.PHONY: test-dist-gpu
test-dist-gpu: $(B)/cuda/dist_test_dist $(B)/c/test_dist $(B)/cuda/dist_bench_allreduce
	@MPIRUN=$(MPIRUN) DIST_BIN=$(B)/cuda/dist_test_dist DIST_PLAIN=$(B)/c/test_dist DIST_BENCH=$(B)/cuda/dist_bench_allreduce DIST_BENCH_DEV=cuda \
	  sh tests/run.sh tests/dist.sh

# the all-reduce bandwidth a data-parallel run can expect (bench/bench_allreduce.c; figures in bench/SCALING.md):
# dt_all_reduce_ of 4 B to 64 MiB on BENCH_NP ranks, nccl-tests' table (time, algbw, busbw), every size checked;
# BENCH_ARGS passes its options (-b MIN -e MAX -f FACTOR -w WARMUP -n ITERS). Not part of make test.
BENCH_NP   ?= 2
BENCH_ARGS ?=
BENCH_MPI  := OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 $(MPIRUN) --oversubscribe
.PHONY: bench-dist bench-dist-gpu
bench-dist: $(B)/dist/bench_allreduce
	$(BENCH_MPI) -np $(BENCH_NP) $< -d cpu $(BENCH_ARGS)
# a rank per GPU (dt_dist_device()), GPU tensors through the real NCCL; the GPUs of this machine unless BENCH_NP is given
$(B)/cuda/dist_bench_allreduce: bench/bench_allreduce.c $(HDR) $(CU_NCCL_OBJ) | $$(@D)
	$(MPICC) $(CSTD) $(WARN) $(OPT) -DDEVTENSOR_MPI -DDEVTENSOR_CUDA -I. $< $(CU_NCCL_OBJ) -o $@ $(CUDA_LIBS) -lnccl
GPU_NP = $(if $(filter command line environment,$(origin BENCH_NP)),$(BENCH_NP),$(or $(filter-out 0,$(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU')),2))
bench-dist-gpu: $(B)/cuda/dist_bench_allreduce
	$(BENCH_MPI) -np $(GPU_NP) $< -d cuda $(BENCH_ARGS)

# setarch -R: gcc's TSan cannot start on kernels with wide mmap randomisation
# (the emulator's backend object first: the longest compile, the other job compiles the rest)
tsan: $(TSAN_EMU)/devtensor_cuda.o $(B)/tsan/test_threads $(TSAN_EMU)/test_threads
	@TSAN_OPTIONS=halt_on_error=1 DTEMU_GPUS=2 setarch $$(uname -m) -R sh tests/run.sh $(filter-out %.o,$^)

# ---- portability: Windows (mingw-w64 cross build; MSVC's atomics path forced with
#      DT__FORCE_INTERLOCKED), C++11 to C++20, and TSan over the OpenMP build ----
# make mingw: every test but test_threads (POSIX threads and signals) three ways: C99
# with GCC's __atomic builtins, C99 and C++11 with the Interlocked intrinsics MSVC
# uses; run under wine64 where it is installed, else compiled and linked only.
MINGW_CC   ?= x86_64-w64-mingw32-gcc
MINGW_CXX  ?= x86_64-w64-mingw32-g++
WINE       ?= $(shell command -v wine64 2>/dev/null || command -v wine 2>/dev/null || { test -x /usr/lib/wine/wine64 && echo /usr/lib/wine/wine64; })
# msvcrt's printf has no %zu: mingw-w64's own C99 printf (a UCRT toolchain or MSVC needs nothing)
MINGW_STDIO := -D__USE_MINGW_ANSI_STDIO=1
MINGW_T    := $(filter-out test_threads,$(TESTS))
# the Interlocked variants (C99 and C++11) run the tests that lean on the atomics (reference
# counts, the allocator's and the generator's locks, the error state): the rest of the code is
# the same as in the gcc variant, which runs every test
MINGW_IL_T := test_core test_ops test_nn test_interop test_cpu_nocache test_random
# the longest under wine first (test_gemm_kernel about a minute), so that the rest share the other job
MINGW_LONG := $(B)/mingw/gcc/test_gemm_kernel.exe
MINGW_EXES := $(MINGW_LONG) $(filter-out $(MINGW_LONG),$(addprefix $(B)/mingw/gcc/,$(addsuffix .exe,$(MINGW_T)))) \
              $(foreach v,interlocked cxx,$(addprefix $(B)/mingw/$(v)/,$(addsuffix .exe,$(MINGW_IL_T))))
MINGW_DEPS := $(HDR) tests/harness.h $(wildcard tests/*.inc)
mingwgcc_CMD  = $(MINGW_CC) $(CSTD) $(WARN) -O1 $(MINGW_STDIO) -I.
mingwgcc_LIBS = -static -lm
mingwil_CMD   = $(MINGW_CC) $(CSTD) $(WARN) -O1 $(MINGW_STDIO) -DDT__FORCE_INTERLOCKED -I.
mingwil_LIBS  = -static -lm
mingwcxx_CMD  = $(MINGW_CXX) -x c++ -std=c++11 $(WARN) -O1 $(MINGW_STDIO) -DDT__FORCE_INTERLOCKED -I.
mingwcxx_LIBS = -static
$(eval $(call VARIANT,mingwgcc,$(B)/mingw/gcc/%.exe,tests/%.c $(MINGW_DEPS)))
$(eval $(call VARIANT,mingwil,$(B)/mingw/interlocked/%.exe,tests/%.c $(MINGW_DEPS)))
$(eval $(call VARIANT,mingwcxx,$(B)/mingw/cxx/%.exe,tests/%.c $(MINGW_DEPS)))
# the implementation compiled once per variant and LINK_TESTS linked with it (the Makefile's IMPL;
# LINKED's rule with .exe names): 14 compiles of the implementation, not 41
define MINGW_LINKED
$(addprefix $(2)/,$(addsuffix .exe,$(filter $(LINK_TESTS),$(3)))): $(2)/%.exe: tests/%.c $(MINGW_DEPS) $(2)/devtensor_impl.o | $$$$(@D)
	$$($(1)_CMD) -DDEVTENSOR_IMPLEMENTATION_DONE $$< -x none $(2)/devtensor_impl.o -o $$@ $$($(1)_LIBS)
endef
$(eval $(call IMPL,mingwgcc,$(B)/mingw/gcc,-x c))
$(eval $(call IMPL,mingwil,$(B)/mingw/interlocked,-x c))
$(eval $(call IMPL,mingwcxx,$(B)/mingw/cxx,))
$(eval $(call MINGW_LINKED,mingwgcc,$(B)/mingw/gcc,$(MINGW_T)))
$(eval $(call MINGW_LINKED,mingwil,$(B)/mingw/interlocked,$(MINGW_IL_T)))
$(eval $(call MINGW_LINKED,mingwcxx,$(B)/mingw/cxx,$(MINGW_IL_T)))
.PHONY: mingw cxx-std tsan-omp
mingw: $(MINGW_EXES)
ifneq ($(WINE),)
	@for e in $^; do printf '#!/bin/sh\n# Windows writes CR LF: the summary line loses its CR\nout=$$(WINEDEBUG=-all WINEPREFIX=$(abspath $(B))/wine $(WINE) %s 2>&1); rc=$$?\nprintf "%%s\\n" "$$out" | tr -d "\\r"; exit $$rc\n' "$$e" > "$$e.sh"; chmod +x "$$e.sh"; done
	@# the prefix made once, before programs start two at a time (two first starts race: "wine: chdir to /tmp/wine-...")
	@WINEDEBUG=-all WINEPREFIX=$(abspath $(B))/wine $(WINE) wineboot --init >/dev/null 2>&1 || true
	@sh tests/run.sh $(addsuffix .sh,$^)
else
	@echo "SKIP mingw: no wine64 to run them; $(words $^) .exe files compiled and linked"
endif

# make cxx-std: every test compiled as C++11, C++14, C++17 and C++20 (CXX), warnings as errors
CXX_STDS := c++11 c++14 c++17 c++20
CXX_STD_OBJS := $(foreach s,$(CXX_STDS),$(addprefix $(B)/cxxstd/$(s)/,$(addsuffix .o,$(TESTS) devtensor_impl)))
# one variant per standard: checked, not compiled (-fsyntax-only: about 6x faster; the C++17
# build of make test compiles with -O2, where the warnings that need optimisation show), warnings
# as errors; the .o left is an empty stamp. C++11 checks each test whole, the implementation in
# its unit, as a user compiles a test alone, and that the unit does hold the implementation (it
# links alone: make test, make asan and make mingw link most tests with devtensor_impl.o). C++14,
# 17 and 20 check LINK_TESTS with -DDEVTENSOR_IMPLEMENTATION_DONE and the implementation once
# (devtensor_impl.o), not once per test (three quarters of each test's check).
CXX_STD_WHOLE := c++11
define cxx_std_variant
cxxstd$(1)_CMD = $(CXX) -x c++ -std=$(1) $(WARN) -fsyntax-only -I.
cxxstd$(1)_LIBS = && touch $$@
$$(eval $$(call VARIANT,cxxstd$(1),$(B)/cxxstd/$(1)/%.o,tests/%.c $(MINGW_DEPS)))
$(B)/cxxstd/$(1)/devtensor_impl.o: $(HDR) | $$$$(@D)
	$$(cxxstd$(1)_CMD) -DDEVTENSOR_IMPLEMENTATION $(HDR) && touch $$@
ifeq ($(1),$(CXX_STD_WHOLE))
$(addprefix $(B)/cxxstd/$(1)/,$(addsuffix .o,$(LINK_TESTS))): $(B)/cxxstd/$(1)/%.o: tests/%.c $(MINGW_DEPS) | $$$$(@D)
	$$(cxxstd$(1)_CMD) $$< && { $(CXX) -x c++ -std=$(1) -I. -E -dM $$< | grep -q ' DEVTENSOR_IMPLEMENTATION_DONE' || \
	  { echo "$$<: compiled alone, its unit has no implementation (#define DEVTENSOR_IMPLEMENTATION before the #include)"; exit 1; }; } && touch $$@
else
$(addprefix $(B)/cxxstd/$(1)/,$(addsuffix .o,$(LINK_TESTS))): $(B)/cxxstd/$(1)/%.o: tests/%.c $(MINGW_DEPS) | $$$$(@D)
	$$(cxxstd$(1)_CMD) -DDEVTENSOR_IMPLEMENTATION_DONE $$< && touch $$@
endif
endef
$(foreach s,$(CXX_STDS),$(eval $(call cxx_std_variant,$(s))))
# the other programs make links with a devtensor_impl.o: each one's unit, compiled alone, holds the
# implementation too (it links alone, as a user builds it)
ALONE_SRCS := $(addprefix examples/,$(addsuffix .c,$(LINK_EX))) tests/fault_gpu.c tests/emu/ctx_check.c tests/emu/no_driver.c \
              $(addprefix tests/fuzz/fuzz_,$(addsuffix .c,$(FUZZERS)))
$(B)/cxxstd/alone.stamp: $(ALONE_SRCS) $(HDR) | $(B)/cxxstd/c++11
	@for f in $(ALONE_SRCS); do $(CC) $(CSTD) -I. -E -dM $$f | grep -q ' DEVTENSOR_IMPLEMENTATION_DONE' || \
	  { echo "$$f: compiled alone, its unit has no implementation (#define DEVTENSOR_IMPLEMENTATION before the #include)"; exit 1; }; done
	@touch $@
cxx-std: $(CXX_STD_OBJS) $(B)/cxxstd/alone.stamp
	@echo "PASS cxx-std: $(words $^) files checked ($(CXX_STDS)) clean"

# make cu-cxx20: devtensor_cuda.cu checked as C++20 against the emulator's headers, as $(EMU_OBJ)
# compiles it (-DDTEMU -DDEVTENSOR_NCCL -Itests/emu), warnings as errors; the .o left is an empty
# stamp. Under C++20, DT__SLOT (src/backend/backend.h) makes each entry of the CUDA backend's
# table (src/cuda/table.cu) a designated initializer, .name = fn, so the compiler checks every
# slot's name and order; nvcc and the emulator's build compile C++17, where the entries are
# positional and two slots of one type swapped still compile. The CPU backend's table is in
# devtensor.h: make cxx-std's C++20 pass checks it the same way.
CU_CXX20 := $(B)/cxxstd/c++20/devtensor_cuda.o
$(CU_CXX20): devtensor_cuda.cu $(HDR) $(EMU_HDRS) | $$(@D)
	$(CXX) -x c++ -std=c++20 $(WARN) -Wno-unknown-pragmas -fsyntax-only -DDTEMU -DDEVTENSOR_NCCL -Itests/emu -I. $< && touch $@
.PHONY: cu-cxx20
cu-cxx20: $(CU_CXX20)
	@echo "PASS cu-cxx20: devtensor_cuda.cu checked as C++20 (the backend table's slots by name and order) clean"

# make cu-cudnn: nvcc compiles devtensor_cuda.cu with -DDEVTENSOR_CUDNN (the cuDNN convolutions,
# src/cuda/cudnn.cu) against the installed cudnn.h, for one architecture (a compile check; make
# CUDNN=1 builds the variant itself). A machine without cuDNN's header skips it, saying so.
CUDNN_H := $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/local/cuda/include/cudnn.h /usr/include/cudnn.h))
CU_CUDNN_CHECK := $(B)/cuda/cudnn_check.o
$(CU_CUDNN_CHECK): devtensor_cuda.cu $(HDR) | $$(@D)
	$(NVCC) -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Werror -DDEVTENSOR_CUDNN \
	  $(addprefix -I,$(dir $(CUDNN_H))) -I. -c $< -o $@
.PHONY: cu-cudnn
ifneq ($(and $(NVCC),$(CUDNN_H)),)
cu-cudnn: $(CU_CUDNN_CHECK)
	@echo "PASS cu-cudnn: nvcc compiled devtensor_cuda.cu with -DDEVTENSOR_CUDNN against $(CUDNN_H)"
else
CUDNN_WHY := no cudnn.h in $(CUDA_HOME)/include, /usr/local/cuda/include or /usr/include (install cuDNN to check the cuDNN build)
ifeq ($(NVCC),)
CUDNN_WHY := no nvcc
endif
cu-cudnn:
	@echo "SKIP cu-cudnn: $(CUDNN_WHY)"
endif

# make tsan-omp: test_threads with -fopenmp under TSan. clang with LLVM's libomp (apt-get
# install clang libomp-dev) and its Archer tool, which tells TSan about OpenMP's barriers
# and tasks; gcc's libgomp is not instrumented, so TSan reports races inside every
# parallel loop that are not there (tried: a report in dt__cpu_fill's first region).
ARCHER ?= $(firstword $(wildcard $(shell $(CLANG) -print-resource-dir 2>/dev/null)/../../libarcher.so) $(wildcard /usr/lib/llvm-*/lib/libarcher.so))
tsanomp_CMD  = $(CLANG) $(CSTD) $(WARN) -O1 $(DBG) -fsanitize=thread -fopenmp -pthread -DTHREAD_ITERS=100 $(CFLAGS) -I.
tsanomp_LIBS = $(LDLIBS)
$(eval $(call VARIANT,tsanomp,$(B)/tsan-omp/test_threads,tests/test_threads.c $(HDR) tests/harness.h))
tsan-omp: $(B)/tsan-omp/test_threads
	@test -n "$(ARCHER)" || { echo "FAIL tsan-omp: libarcher.so not found (apt-get install libomp-dev)"; exit 1; }
	@OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" OMP_NUM_THREADS=4 \
	  setarch $$(uname -m) -R sh tests/run.sh $^

# the C builds (the C++ builds run the same code: make test runs them plainly); the longest
# under memcheck first, so that the rest share the other job. fault_injection fails every
# third allocation number here (FAULT_EVERY; make fault's three builds fail every one)
VALGRIND_LONG := $(B)/fault/fault_injection $(B)/c/test_threads $(B)/c/test_interop $(B)/c/test_conv
VALGRIND_BINS := $(VALGRIND_LONG) $(filter-out %/test_gemm_kernel $(VALGRIND_LONG),$(C_TESTS)) $(B)/static_unit $(B)/two_units
valgrind: $(VALGRIND_BINS)
	@FAULT_EVERY=3 sh tests/valgrind.sh $^

# the shipped files are made from src/ by make amalgamate: fails when the committed ones differ
check-amalgamate:
	python3 tools/amalgamate.py --check
