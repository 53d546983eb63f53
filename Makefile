# devtensor — plain GNU make.
#   make          build the examples and tests (CPU; CUDA variants too when nvcc is found)
#   make run      build and run examples/gpus.c (the chapter's first sections)
#   make test     build and run every test; ends with "N passed, N failed, N skipped"
#   make asan     the test suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fault / fuzz / fuzz-replay / tsan / valgrind   the hardening runs (.ci/run runs them)
#   make bench    the CPU benchmarks against NumPy and PyTorch (CPU), one table (make bench-cblas: with DEVTENSOR_CBLAS)
#   make bench-gpu the GPU benchmarks against cudaMemcpy and PyTorch (on a machine with a GPU)
#   make lib      libdevtensor.so and .a; make install PREFIX=... adds devtensor.pc and a CMake package
#   make test-emu the CUDA backend on the CPU emulator (tests/emu): the suite's GPU cases without a GPU
#   CUDA=0 / CUDA=1 forces the CUDA variants off / on; default: on when nvcc is found.

CC      ?= cc
CXX     ?= g++
B       := build
WARN    := -Wall -Wextra -Werror
CSTD    := -std=c99 -pedantic
CXXSTD  := -std=c++17
OPT     ?= -O2
# OpenMP when the compiler has it (the CPU matmul and big elementwise ops use every core)
OPENMP  := $(shell printf 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
CFLAGS  ?=
LDLIBS  := -lm

NVCC    ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
ifeq ($(origin CUDA), undefined)
  CUDA := $(if $(and $(NVCC),$(wildcard devtensor_cuda.cu)),1,0)
endif

PYTHON  ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import numpy' 2>/dev/null && { echo $$p; break; }; done)

HDR      := devtensor.h
TESTS    := $(basename $(notdir $(wildcard tests/test_*.c)))
EXAMPLES := $(basename $(notdir $(wildcard examples/*.c)))

C_TESTS   := $(addprefix $(B)/c/,$(TESTS))
CXX_TESTS := $(addprefix $(B)/cxx/,$(TESTS))
ASAN_TESTS:= $(addprefix $(B)/asan/,$(TESTS))
EX_BINS   := $(addprefix $(B)/ex/,$(EXAMPLES))

# ---- CUDA variants (DEVTENSOR_CUDA + devtensor_cuda.cu), when CUDA=1 ----
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# machine code for sm_80 (A100; also runs on sm_86/sm_89: A10, L4, RTX 30/40) and
# sm_90 (H100, H200); PTX for compute_75 (T4, RTX 20: CUDA 13's oldest, compiled
# by the driver at first use) and compute_90 (GPUs newer than Hopper)
GENCODE    := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=compute_90
NVCCFLAGS  ?= -O2 -std=c++17 $(GENCODE) -Xcompiler -Wall,-Wextra
CUDA_LIBS  := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++ -lm
CU_OBJ     := $(B)/cuda/devtensor_cuda.o
CUDA_TESTS := $(addprefix $(B)/cuda/,$(TESTS))
CUDA_EX    := $(addprefix $(B)/cuda/ex/,$(EXAMPLES))
ifeq ($(CUDA),1)
  CUDA_ALL := $(CUDA_TESTS) $(B)/cuda/fault_gpu $(CUDA_EX) $(B)/cuda/own_kernel $(B)/cuda/gpus_nvcc
  RUN_GPUS := $(B)/cuda/ex/gpus
else
  CUDA_ALL :=
  RUN_GPUS := $(B)/ex/gpus
endif

$(CU_OBJ): devtensor_cuda.cu $(HDR)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -I. -c $< -o $@

$(B)/cuda/% : tests/%.c $(HDR) tests/harness.h $(wildcard tests/*.inc) $(CU_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -DDEVTENSOR_CUDA -I. $< $(CU_OBJ) -o $@ $(CUDA_LIBS)

$(B)/cuda/ex/% : examples/%.c $(HDR) examples/timing.h $(CU_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -DDEVTENSOR_CUDA -I. $< $(CU_OBJ) -o $@ $(CUDA_LIBS)

# a user's own .cu file: the implementation compiled by nvcc, its own kernel on dt_cuda_stream()
$(B)/cuda/own_kernel: examples/own_kernel.cu $(HDR) $(CU_OBJ)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -I. $< $(CU_OBJ) -lcublas -o $@

# the differential check of the CUDA backend against the CPU backend (tests/cuda/gpu_check.cu), for a GPU
$(B)/cuda/gpu_check: tests/cuda/gpu_check.cu $(HDR) $(CU_OBJ)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -DDEVTENSOR_CUDA -I. $< $(CU_OBJ) -lcublas -o $@

# the README's one-command nvcc build, as a user types it
$(B)/cuda/gpus_nvcc: examples/gpus.c devtensor_cuda.cu $(HDR)
	@mkdir -p $(@D)
	$(NVCC) -I. -DDEVTENSOR_CUDA examples/gpus.c devtensor_cuda.cu -lcublas -o $@

.PHONY: all run test asan bench bench-cblas clean
all: $(C_TESTS) $(CXX_TESTS) $(EX_BINS) $(B)/static_unit $(B)/two_units $(CUDA_ALL)

$(B)/c/% : tests/%.c $(HDR) tests/harness.h $(wildcard tests/*.inc)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

$(B)/cxx/% : tests/%.c $(HDR) tests/harness.h $(wildcard tests/*.inc)
	@mkdir -p $(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) $(OPT) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

$(B)/asan/% : tests/%.c $(HDR) tests/harness.h $(wildcard tests/*.inc)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	  $(CFLAGS) -I. $< -o $@ $(LDLIBS)

$(B)/ex/% : examples/%.c $(HDR) examples/timing.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

# DEVTENSOR_STATIC: every function static, unused ones must not warn
$(B)/static_unit: tests/static_unit.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

# the implementation in one unit, the declarations used from another
$(B)/two_units: tests/two_units_a.c tests/two_units_b.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -I. tests/two_units_a.c tests/two_units_b.c -o $@ $(LDLIBS)

run: $(RUN_GPUS)
	./$(RUN_GPUS)

test: all lib
	@DT_CUDA=$(CUDA) sh tests/run.sh $(C_TESTS) $(CXX_TESTS) $(B)/static_unit $(B)/two_units tests/safetensors_py.sh tests/examples_smoke.sh \
	  tests/interop_py.sh tests/packaging.sh \
	  $(if $(CUDA_ALL),$(CUDA_TESTS) $(B)/cuda/fault_gpu tests/cuda_examples.sh)

asan: $(ASAN_TESTS)
	@ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 sh tests/run.sh $(ASAN_TESTS)

bench: $(B)/bench_cpu
	@sh bench/run_cpu.sh ./$(B)/bench_cpu "$(PYTHON)"

# the same benchmark with DEVTENSOR_CBLAS linked to OpenBLAS (apt-get install libopenblas-dev)
bench-cblas: $(B)/bench_cpu_cblas
	@sh bench/run_cpu.sh ./$(B)/bench_cpu_cblas "$(PYTHON)"

$(B)/bench_cpu_cblas: bench/bench_cpu.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -DDEVTENSOR_CBLAS -I. $< -o $@ $(LDLIBS) -lopenblas

$(B)/bench_cpu: bench/bench_cpu.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

# ---- GPU benchmarks: devtensor on cuda:0 against cudaMemcpy and PyTorch (bench/run_gpu.sh) ----
$(B)/bench_gpu: bench/bench_gpu.c $(HDR) $(CU_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -DDEVTENSOR_CUDA -I. -isystem $(CUDA_HOME)/include $< $(CU_OBJ) -o $@ $(CUDA_LIBS)

$(B)/bench_train: bench/bench_train.c $(HDR) $(CU_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -DDEVTENSOR_CUDA -I. $< $(CU_OBJ) -o $@ $(CUDA_LIBS)

.PHONY: bench-gpu
ifeq ($(CUDA),1)
bench-gpu: $(B)/bench_gpu $(B)/bench_train
	@sh bench/run_gpu.sh $(B)
else
bench-gpu:
	@echo "SKIP: bench-gpu needs CUDA (nvcc not found; CUDA=1 forces it)"
endif

# ---- the CUDA backend on the CPU emulator (tests/emu): every GPU path of the suite
#      without a GPU. devtensor_cuda.cu is compiled by the host C++ compiler with
#      -DDTEMU against tests/emu's cuda_runtime.h / cublas_v2.h; streams are worker
#      threads, kernels run per thread (fibers where blocks synchronise); all of it
#      under ASan + UBSan. Two emulated GPUs, so peer copies and device switching run.
EMU_SAN    := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -U_FORTIFY_SOURCE
EMU_DIR    := $(B)/emu
EMU_LIB    := $(EMU_DIR)/libcudart_emu.so
EMU_OBJ    := $(EMU_DIR)/devtensor_cuda.o
EMU_LINK   := -L$(EMU_DIR) -lcudart_emu -Wl,-rpath,$(abspath $(EMU_DIR)) -lstdc++ -lm -pthread
EMU_TESTS  := $(addprefix $(EMU_DIR)/,$(TESTS))
EMU_EX     := $(addprefix $(EMU_DIR)/ex/,$(EXAMPLES))
EMU_HDRS   := $(wildcard tests/emu/*.h)
EMU_ENV    := DTEMU_GPUS=2 ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1

$(EMU_LIB): tests/emu/emu.cpp $(EMU_HDRS)
	@mkdir -p $(@D)
	$(CXX) $(CXXSTD) $(WARN) $(EMU_SAN) -fPIC -shared -Itests/emu $< -o $@ -pthread

$(EMU_OBJ): devtensor_cuda.cu $(HDR) $(EMU_HDRS)
	@mkdir -p $(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas $(EMU_SAN) -ffp-contract=off -DDTEMU -Itests/emu -I. -c $< -o $@

$(EMU_DIR)/% : tests/%.c $(HDR) tests/harness.h $(wildcard tests/*.inc) $(EMU_OBJ) $(EMU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(EMU_SAN) $(CFLAGS) -DDEVTENSOR_CUDA -I. $< $(EMU_OBJ) -o $@ $(EMU_LINK)

$(EMU_DIR)/ex/% : examples/%.c $(HDR) examples/timing.h $(EMU_OBJ) $(EMU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(EMU_SAN) $(CFLAGS) -DDEVTENSOR_CUDA -I. $< $(EMU_OBJ) -o $@ $(EMU_LINK)

$(EMU_DIR)/gpu_check: tests/cuda/gpu_check.cu $(HDR) $(EMU_OBJ) $(EMU_LIB)
	@mkdir -p $(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas $(EMU_SAN) -DDTEMU -DDEVTENSOR_CUDA -Itests/emu -I. $< -x none $(EMU_OBJ) -o $@ $(EMU_LINK)

# the GPU benchmarks with tiny sizes (BENCH_SMOKE): run end to end, timings meaningless
$(EMU_DIR)/bench/% : bench/%.c $(HDR) $(EMU_OBJ) $(EMU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(EMU_SAN) $(CFLAGS) -DBENCH_SMOKE -DDEVTENSOR_CUDA -I. -Itests/emu $< $(EMU_OBJ) -o $@ $(EMU_LINK)

.PHONY: test-emu
# which devices get a CUDA context (a program on cuda:1 alone makes none on cuda:0)
$(EMU_DIR)/ctx_check: tests/emu/ctx_check.c $(HDR) tests/harness.h $(EMU_OBJ) $(EMU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(EMU_SAN) $(CFLAGS) -DDEVTENSOR_CUDA -I. $< $(EMU_OBJ) -o $@ $(EMU_LINK)

test-emu: $(EMU_TESTS) $(EMU_DIR)/fault_gpu $(EMU_DIR)/ctx_check $(EMU_EX) $(EMU_DIR)/gpu_check $(EMU_DIR)/bench/bench_gpu $(EMU_DIR)/bench/bench_train
	@$(EMU_ENV) sh tests/run.sh $(EMU_TESTS) $(EMU_DIR)/fault_gpu $(EMU_DIR)/ctx_check tests/emu/gpu_check.sh tests/emu/examples.sh \
	  tests/emu/bench.sh tests/emu/second_pass.sh

# ---- hardening: fault injection, fuzzing, ThreadSanitizer, valgrind ----
CLANG     ?= clang
FUZZ_TIME ?= 60
SAN       := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZERS   := safetensors device_parse print load_tensors
.PHONY: fault fuzz fuzz-replay tsan valgrind

# test_threads uses pthreads (glibc >= 2.34 links them without -pthread; others need it)
$(B)/c/test_threads $(B)/cxx/test_threads $(B)/asan/test_threads: LDLIBS += -pthread
$(B)/cuda/test_threads: CUDA_LIBS += -pthread
# GPU fault injection (tests/fault_gpu.c defines cudaMalloc and finds the real one with dlsym)
$(B)/cuda/fault_gpu: CUDA_LIBS += -ldl
$(EMU_DIR)/fault_gpu: EMU_LINK += -ldl

$(B)/fault/fault_injection: tests/fault_injection.c $(HDR) tests/harness.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) -O1 -g $(CFLAGS) -I. $< -o $@ $(LDLIBS)
$(B)/fault/fault_injection_asan: tests/fault_injection.c $(HDR) tests/harness.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(SAN) $(CFLAGS) -I. $< -o $@ $(LDLIBS)
# the OpenMP build too: the same fault injection, and allocation until failure under ulimit -v
$(B)/fault/fault_injection_omp: tests/fault_injection.c $(HDR) tests/harness.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) -O1 -g $(OPENMP) $(CFLAGS) -I. $< -o $@ $(LDLIBS)
$(B)/fault/oom_exhaust: tests/oom_exhaust.c $(HDR) tests/harness.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) -O1 -g $(OPENMP) $(CFLAGS) -I. $< -o $@ $(LDLIBS)
fault: $(B)/fault/fault_injection $(B)/fault/fault_injection_asan $(B)/fault/fault_injection_omp $(B)/fault/oom_exhaust
	@ASAN_OPTIONS=detect_leaks=1 OOM_EXHAUST_BIN=$(B)/fault/oom_exhaust sh tests/run.sh $(filter-out %/oom_exhaust,$^) tests/oom_exhaust.sh

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.h $(HDR)
	@mkdir -p $(@D)
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DFUZZ_LIBFUZZER -I. $< -o $@ -lm
fuzz: $(addprefix $(B)/fuzz/fuzz_,$(FUZZERS))
	@sh tests/fuzz/run.sh $(B)/fuzz $(FUZZ_TIME)

$(B)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.h $(HDR)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(SAN) $(CFLAGS) -I. $< -o $@ $(LDLIBS)
$(B)/fuzz/fuzz_safetensors $(B)/fuzz/replay_safetensors: tests/fuzz/nest_decode.h
fuzz-replay: $(addprefix $(B)/fuzz/replay_,$(FUZZERS))
	@ASAN_OPTIONS=detect_leaks=1 sh tests/run.sh $^

$(B)/tsan/test_threads: tests/test_threads.c $(HDR) tests/harness.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) -O1 -g -fsanitize=thread -pthread -DTHREAD_ITERS=200 $(CFLAGS) -I. $< -o $@ $(LDLIBS)
# the same 8 threads on two emulated GPUs: the CUDA backend's host side (allocator,
# lazy init, staging buffers and their events) against the emulator's stream workers
TSAN_EMU := $(B)/tsan-emu
$(TSAN_EMU)/libcudart_emu.so: tests/emu/emu.cpp $(EMU_HDRS)
	@mkdir -p $(@D)
	$(CXX) $(CXXSTD) $(WARN) -O1 -g -fsanitize=thread -fPIC -shared -Itests/emu $< -o $@ -pthread
$(TSAN_EMU)/devtensor_cuda.o: devtensor_cuda.cu $(HDR) $(EMU_HDRS)
	@mkdir -p $(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas -O1 -g -fsanitize=thread -fPIC -ffp-contract=off -DDTEMU -Itests/emu -I. -c $< -o $@
$(TSAN_EMU)/test_threads: tests/test_threads.c $(HDR) tests/harness.h $(TSAN_EMU)/devtensor_cuda.o $(TSAN_EMU)/libcudart_emu.so
	$(CC) $(CSTD) $(WARN) -O1 -g -fsanitize=thread -DTHREAD_ITERS=60 $(CFLAGS) -DDEVTENSOR_CUDA -I. $< $(TSAN_EMU)/devtensor_cuda.o -o $@ \
	  -L$(TSAN_EMU) -lcudart_emu -Wl,-rpath,$(abspath $(TSAN_EMU)) -lstdc++ -lm -pthread

# setarch -R: gcc's TSan cannot start on kernels with wide mmap randomisation
tsan: $(B)/tsan/test_threads $(TSAN_EMU)/test_threads
	@TSAN_OPTIONS=halt_on_error=1 DTEMU_GPUS=2 setarch $$(uname -m) -R sh tests/run.sh $^

VALGRIND_BINS := $(filter-out %/test_gemm_kernel,$(C_TESTS) $(CXX_TESTS)) $(B)/static_unit $(B)/two_units $(B)/fault/fault_injection
valgrind: $(VALGRIND_BINS)
	@sh tests/valgrind.sh $^

# ---- library and install (issue 15): the implementation as libdevtensor.so / .a, with the
#      CUDA backend inside when CUDA=1; `make install PREFIX=... [DESTDIR=...]` puts the header,
#      the libraries, devtensor.pc and a CMake package (devtensor::devtensor) under PREFIX.
#      The single header is used as before: nothing here changes it.
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCDIR     ?= $(PREFIX)/include
DT_MAJOR   := $(shell sed -n 's/^\#define DEVTENSOR_VERSION_MAJOR \([0-9]*\).*/\1/p' $(HDR))
DT_MINOR   := $(shell sed -n 's/^\#define DEVTENSOR_VERSION_MINOR \([0-9]*\).*/\1/p' $(HDR))
DT_VERSION := $(DT_MAJOR).$(DT_MINOR).$(shell sed -n 's/^\#define DEVTENSOR_VERSION_PATCH \([0-9]*\).*/\1/p' $(HDR))
LIB_B      := $(B)/lib/$(if $(filter 1,$(CUDA)),cuda,cpu)
LIB_SO     := $(LIB_B)/libdevtensor.so
LIB_A      := $(LIB_B)/libdevtensor.a
LIB_OBJS   := $(LIB_B)/devtensor.o $(if $(filter 1,$(CUDA)),$(LIB_B)/devtensor_cuda.o)
LIB_PRIV   := $(OPENMP) $(if $(filter 1,$(CUDA)),-L$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++) -lm
.PHONY: lib install
lib: $(LIB_SO) $(LIB_A)
$(LIB_B)/devtensor.o: packaging/devtensor.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) -fPIC $(CFLAGS) $(if $(filter 1,$(CUDA)),-DDEVTENSOR_CUDA) -I. -c $< -o $@
$(LIB_B)/devtensor_cuda.o: devtensor_cuda.cu $(HDR)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -Xcompiler -fPIC -I. -c $< -o $@
$(LIB_SO): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libdevtensor.so.$(DT_MAJOR) $(OPENMP) $^ -o $@ \
	  $(if $(filter 1,$(CUDA)),$(CUDA_LIBS),-lm)
$(LIB_A): $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^
install: lib
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake/devtensor
	install -m 644 $(HDR) $(DESTDIR)$(INCDIR)/devtensor.h
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/libdevtensor.so.$(DT_VERSION)
	ln -sf libdevtensor.so.$(DT_VERSION) $(DESTDIR)$(LIBDIR)/libdevtensor.so.$(DT_MAJOR)
	ln -sf libdevtensor.so.$(DT_MAJOR) $(DESTDIR)$(LIBDIR)/libdevtensor.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libdevtensor.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(DT_VERSION)|' \
	  -e 's|@LIBS_PRIVATE@|$(strip $(LIB_PRIV))|' packaging/devtensor.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/devtensor.pc
	sed -e 's|@VERSION@|$(DT_VERSION)|g' -e 's|@MAJOR@|$(DT_MAJOR)|g' -e 's|@CUDA@|$(CUDA)|' \
	  -e 's|@INC_FROM_LIB@|$(shell realpath -m --relative-to=$(LIBDIR) $(INCDIR))|' \
	  -e 's|@LIBS_PRIVATE_CMAKE@|$(subst $() $(),;,$(strip $(LIB_PRIV)))|' \
	  packaging/devtensorConfig.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/devtensor/devtensorConfig.cmake
	sed -e 's|@VERSION@|$(DT_VERSION)|g' -e 's|@MAJOR@|$(DT_MAJOR)|g' -e 's|@MINOR@|$(DT_MINOR)|g' \
	  packaging/devtensorConfigVersion.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/devtensor/devtensorConfigVersion.cmake

clean:
	rm -rf $(B)
