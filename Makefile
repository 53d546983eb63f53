# devtensor — plain GNU make (3.82 or newer).
#   make             build the examples and tests (CPU; CUDA variants too when nvcc is found)
#   make run         build and run examples/gpus.c (the chapter's first sections; the CPU build
#                    when no NVIDIA driver is installed, unless CUDA=1 is given)
#   make fashion     Fashion-MNIST: softmax regression and an MLP, 10 epochs (needs zlib1g-dev and
#                    dataset-fashion-mnist; bench/fashion_torch.py is the same in PyTorch)
#   make test        build and run every test; ends with "N passed, N failed, N skipped" (with
#                    CUDA, DT_REQUIRE_GPU=1 makes "no GPU" a failure, and gpu_check runs where a driver is)
#   make asan        the test suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make test-emu    the CUDA backend on the CPU emulator (tests/emu): the suite's GPU cases without a GPU
#   make fault       every host allocation failing in turn (plain, ASan+UBSan, OpenMP), and memory exhausted under ulimit -v
#   make fuzz        libFuzzer on the parsers, FUZZ_TIME seconds each (clang)
#   make fuzz-replay the fuzz corpora replayed under ASan+UBSan (gcc)
#   make tsan        8 threads under ThreadSanitizer, on the CPU and on two emulated GPUs
#   make valgrind    memcheck over the CPU tests
#   make tsan-omp    test_threads with -fopenmp under TSan (clang, libomp, Archer)
#   make mingw       the tests cross-built for Windows (mingw-w64; MSVC's atomics path too), run under wine64
#   make cxx-std     the tests compiled as C++11, C++14, C++17 and C++20
#   make bench       the CPU benchmarks against NumPy and PyTorch (CPU), one table (make bench-cblas: with DEVTENSOR_CBLAS)
#   make bench-gpu   the GPU benchmarks against cudaMemcpy and PyTorch (on a machine with a GPU)
#   make lib         libdevtensor.so and .a; make install PREFIX=... adds devtensor.pc and a CMake package
#   make test-dist   tests/test_dist.c built with DEVTENSOR_MPI (mpicc) on two ranks under mpirun, and the failure paths
#   make test-dist-gpu  the same with CUDA and the real NCCL, each rank on its GPU (a machine with two GPUs;
#                    on one GPU: that two ranks are refused, saying why, and the rest skipped)
#   make bench-dist  all-reduce bandwidth (nccl-tests' algbw/busbw, 4 B to 64 MiB) on BENCH_NP=2 CPU ranks under mpirun
#   make bench-dist-gpu the same on a rank per GPU through NCCL (BENCH_NP: default the GPUs nvidia-smi lists)
#   make amalgamate  write devtensor.h and devtensor_cuda.cu from the parts in src/ (tools/amalgamate.py;
#                    make check-amalgamate fails when the committed files differ from what it writes)
#   make clean       remove build/
#   CUDA=0 / CUDA=1 forces the CUDA variants off / on; default: on when nvcc is found.
#   JOBS=N: test programs run N at a time (tests/run.sh; default: make's -j, else 1).
#
# Every program is built by one template (VARIANT, below) from a variant's compiler command
# (V_CMD), its libraries (V_LIBS) and what else it depends on (V_DEPS); the program's .c files
# and .o objects are its prerequisites. Adding a variant: three variables and one $(eval).

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
SAN     := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
CLANG   ?= clang
FUZZ_TIME ?= 60
FUZZERS := safetensors device_parse print load_tensors

# distributed: Open MPI's compiler wrapper and launcher (apt-get install openmpi-bin libopenmpi-dev)
MPICC   ?= mpicc
MPIRUN  ?= mpirun
NVCC    ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
ifeq ($(origin CUDA), undefined)
  CUDA := $(if $(and $(NVCC),$(wildcard devtensor_cuda.cu)),1,0)
endif

PYTHON  ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import numpy' 2>/dev/null && { echo $$p; break; }; done)

HDR      := devtensor.h
TESTS    := $(basename $(notdir $(wildcard tests/test_*.c)))
EXAMPLES := $(basename $(notdir $(wildcard examples/*.c)))
# examples/fashion_mnist.c needs zlib's header (apt-get install zlib1g-dev): without it, it is left out
HAVE_ZLIB := $(shell printf '\043include <zlib.h>\nint main(void){return 0;}\n' | $(CC) -x c - -lz -o /dev/null 2>/dev/null && echo 1)
ifneq ($(HAVE_ZLIB),1)
  EXAMPLES := $(filter-out fashion_mnist,$(EXAMPLES))
endif
TEST_DEPS:= $(HDR) tests/harness.h $(wildcard tests/*.inc)
EX_DEPS  := $(HDR) examples/timing.h

C_TESTS   := $(addprefix $(B)/c/,$(TESTS))
CXX_TESTS := $(addprefix $(B)/cxx/,$(TESTS))
ASAN_TESTS:= $(addprefix $(B)/asan/,$(TESTS))
EX_BINS   := $(addprefix $(B)/ex/,$(EXAMPLES))

# ---- CUDA (DEVTENSOR_CUDA + devtensor_cuda.cu compiled by nvcc), when CUDA=1 ----
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# machine code for sm_80 (A100; also runs on sm_86/sm_89: A10, L4, RTX 30/40) and
# sm_90 (H100, H200); PTX for compute_75 (T4, RTX 20: CUDA 13's oldest, compiled
# by the driver at first use) and compute_90 (GPUs newer than Hopper)
GENCODE    := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=compute_90
NVCCFLAGS  ?= -O2 -std=c++17 $(GENCODE) -Xcompiler -Wall,-Wextra
CUDA_LIBS  := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++ -lm -ldl
CU_OBJ     := $(B)/cuda/devtensor_cuda.o
CUDA_TESTS := $(addprefix $(B)/cuda/,$(TESTS))
CUDA_EX    := $(addprefix $(B)/cuda/ex/,$(EXAMPLES))
ifeq ($(CUDA),1)
  CUDA_ALL := $(CUDA_TESTS) $(B)/cuda/fault_gpu $(CUDA_EX) $(B)/cuda/own_kernel $(B)/cuda/gpus_nvcc
  RUN_GPUS := $(B)/cuda/ex/gpus
  # where the NVIDIA driver is installed, make test also runs gpu_check (the CUDA backend against the CPU one)
  ifneq ($(filter test,$(MAKECMDGOALS)),)
    ifneq ($(shell test -e /proc/driver/nvidia/version && echo yes),)
      CUDA_ALL += $(B)/cuda/gpu_check
      GPU_CHECK := tests/cuda/gpu_check.sh
    endif
  endif
  # make run without the NVIDIA driver: the CUDA build would only say "no GPU", after minutes
  # of nvcc; the CPU build runs instead (CUDA=1 on the command line builds the CUDA one anyway)
  ifneq ($(filter run fashion,$(MAKECMDGOALS)),)
    ifneq ($(origin CUDA),command line)
      NVIDIA_DRIVER := $(shell { test -e /proc/driver/nvidia/version || \
        { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q 'libcuda\.so\.1'; } && echo yes)
      ifneq ($(NVIDIA_DRIVER),yes)
        RUN_GPUS := $(B)/ex/gpus
        RUN_NOTE := make run: no NVIDIA driver found (no /proc/driver/nvidia/version, no libcuda.so.1): running the CPU build; CUDA=1 make run runs the CUDA one
      endif
    endif
  endif
else
  CUDA_ALL :=
  RUN_GPUS := $(B)/ex/gpus
endif

# ---- the CUDA backend on the CPU emulator (tests/emu, see its README): devtensor_cuda.cu
#      compiled by the host C++ compiler with -DDTEMU against tests/emu's cuda_runtime.h /
#      cublas_v2.h, all of it under ASan + UBSan; two emulated GPUs.
EMU_SAN    := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -U_FORTIFY_SOURCE
EMU_DIR    := $(B)/emu
EMU_LIB    := $(EMU_DIR)/libcudart_emu.so
EMU_OBJ    := $(EMU_DIR)/devtensor_cuda.o
EMU_LINK   := -L$(EMU_DIR) -lcudart_emu -Wl,-rpath,$(abspath $(EMU_DIR)) -lstdc++ -lm -pthread -ldl
# all tests but the three that touch no device (the CPU gemm's kernels, the vector math, number
# formatting): make asan runs those under the same sanitizers, and CI's 30 minutes are tight
EMU_CPU_ONLY := test_gemm_kernel test_vmath test_print_format
EMU_TESTS  := $(addprefix $(EMU_DIR)/,$(filter-out $(EMU_CPU_ONLY),$(TESTS)))
EMU_EX     := $(addprefix $(EMU_DIR)/ex/,$(EXAMPLES))
EMU_HDRS   := $(wildcard tests/emu/*.h)
EMU_ENV    := DTEMU_GPUS=2 ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
TSAN_EMU   := $(B)/tsan-emu

# ---- the variants: V_CMD compiles and links (the sources and objects follow it),
#      V_LIBS comes last, V_DEPS are further prerequisites of every program ----
c_CMD        = $(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -I.
c_LIBS       = $(LDLIBS)
cxx_CMD      = $(CXX) -x c++ $(CXXSTD) $(WARN) $(OPT) $(CFLAGS) -I.
cxx_LIBS     = $(LDLIBS)
serial_CMD   = $(CC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -I.
serial_LIBS  = $(LDLIBS)
clang_CMD    = $(CLANG) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -I.
clang_LIBS   = $(LDLIBS)
clangomp_CMD = $(CLANG) $(CSTD) $(WARN) $(OPT) -fopenmp $(CFLAGS) -I.
clangomp_LIBS= $(LDLIBS)
asan_CMD     = $(CC) $(CSTD) $(WARN) $(SAN) $(CFLAGS) -I.
asan_LIBS    = $(LDLIBS)
cblas_CMD    = $(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -DDEVTENSOR_CBLAS -I.
cblas_LIBS   = $(LDLIBS) -lopenblas
fault_CMD    = $(CC) $(CSTD) $(WARN) -O1 -g $(CFLAGS) -I.
fault_LIBS   = $(LDLIBS)
faultomp_CMD = $(CC) $(CSTD) $(WARN) -O1 -g $(OPENMP) $(CFLAGS) -I.
faultomp_LIBS= $(LDLIBS)
tsan_CMD     = $(CC) $(CSTD) $(WARN) -O1 -g -fsanitize=thread -pthread -DTHREAD_ITERS=200 $(CFLAGS) -I.
tsan_LIBS    = $(LDLIBS)
fuzz_CMD     = $(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DFUZZ_LIBFUZZER -I.
fuzz_LIBS    = -lm
cuda_CMD     = $(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -DDEVTENSOR_CUDA -I.
cuda_LIBS    = $(CUDA_LIBS)
cuda_DEPS    = $(CU_OBJ)
gpubench_CMD = $(CC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -DDEVTENSOR_CUDA -I.
gpubench_LIBS= $(CUDA_LIBS)
gpubench_DEPS= $(CU_OBJ)
dist_CMD     = $(MPICC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -DDEVTENSOR_MPI -I.
dist_LIBS    = $(LDLIBS)
emu_CMD      = $(CC) $(CSTD) $(WARN) $(EMU_SAN) $(CFLAGS) -DDEVTENSOR_CUDA -I.
emu_LIBS     = $(EMU_LINK)
emu_DEPS     = $(EMU_OBJ) $(EMU_LIB)
emubench_CMD = $(CC) $(CSTD) $(WARN) $(EMU_SAN) $(CFLAGS) -DBENCH_SMOKE -DDEVTENSOR_CUDA -I. -Itests/emu
emubench_LIBS= $(EMU_LINK)
emubench_DEPS= $(EMU_OBJ) $(EMU_LIB)
tsanemu_CMD  = $(CC) $(CSTD) $(WARN) -O1 -g -fsanitize=thread -DTHREAD_ITERS=60 $(CFLAGS) -DDEVTENSOR_CUDA -I.
tsanemu_LIBS = -L$(TSAN_EMU) -lcudart_emu -Wl,-rpath,$(abspath $(TSAN_EMU)) -lstdc++ -lm -pthread -ldl
tsanemu_DEPS = $(TSAN_EMU)/devtensor_cuda.o $(TSAN_EMU)/libcudart_emu.so

# $(call VARIANT,variant,target or pattern,sources and prerequisites): the rule that builds it,
# its folder made first (order-only: a newer folder rebuilds nothing)
.SECONDEXPANSION:
define VARIANT
$(2): $(3) $$($(1)_DEPS) | $$$$(@D)
	$$($(1)_CMD) $$(filter %.c %.o,$$^) -o $$@ $$($(1)_LIBS)
endef

$(eval $(call VARIANT,c,$(B)/c/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,cxx,$(B)/cxx/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,asan,$(B)/asan/%,tests/%.c $(TEST_DEPS)))
# the vector kernels built by clang too (it contracts into FMA by default: every variant must still give the same bits)
$(eval $(call VARIANT,clang,$(B)/clang/%,tests/%.c $(TEST_DEPS)))
# the thread pool built by clang with OpenMP in strict C99 (where no POSIX signal mask is declared),
# and the gemm on two threads built by clang, whose contraction into FMA must not make an element's
# bits depend on how the work is split; where clang can link OpenMP (libomp)
CLANG_OMP := $(shell echo 'int main(void){return 0;}' | $(CLANG) -fopenmp -x c - -o /dev/null 2>/dev/null && echo yes)
CLANG_OMP_TESTS := $(if $(CLANG_OMP),$(B)/clangomp/test_threads $(B)/clangomp/test_gemm_kernel)
$(eval $(call VARIANT,clangomp,$(B)/clangomp/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,c,$(B)/ex/%,examples/%.c $(EX_DEPS)))
# DEVTENSOR_STATIC: every function static, unused ones must not warn
$(eval $(call VARIANT,serial,$(B)/static_unit,tests/static_unit.c $(HDR)))
# the implementation in one unit, the declarations used from another
$(eval $(call VARIANT,serial,$(B)/two_units,tests/two_units_a.c tests/two_units_b.c $(HDR)))
$(eval $(call VARIANT,cuda,$(B)/cuda/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,cuda,$(B)/cuda/ex/%,examples/%.c $(EX_DEPS)))
$(eval $(call VARIANT,emu,$(EMU_DIR)/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,dist,$(B)/dist/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,dist,$(B)/dist/ex/%,examples/%.c $(EX_DEPS)))
$(eval $(call VARIANT,dist,$(B)/dist/bench_allreduce,bench/bench_allreduce.c $(HDR)))
$(eval $(call VARIANT,emu,$(EMU_DIR)/ex/%,examples/%.c $(EX_DEPS)))
# emulator-only programs (tests/emu/*.c): which devices get a CUDA context, the reason given without a driver
$(eval $(call VARIANT,emu,$(EMU_DIR)/%,tests/emu/%.c $(HDR) tests/harness.h))
# the GPU benchmarks with tiny sizes (BENCH_SMOKE): run end to end, timings meaningless
$(eval $(call VARIANT,emubench,$(EMU_DIR)/bench/%,bench/%.c $(HDR)))
$(eval $(call VARIANT,c,$(B)/bench_cpu,bench/bench_cpu.c $(HDR)))
$(eval $(call VARIANT,cblas,$(B)/bench_cpu_cblas,bench/bench_cpu.c $(HDR)))
$(eval $(call VARIANT,gpubench,$(B)/bench_train,bench/bench_train.c $(HDR)))
$(eval $(call VARIANT,gpubench,$(B)/bench_gpu,bench/bench_gpu.c $(HDR)))
$(eval $(call VARIANT,fault,$(B)/fault/fault_injection,tests/fault_injection.c $(HDR) tests/harness.h))
$(eval $(call VARIANT,asan,$(B)/fault/fault_injection_asan,tests/fault_injection.c $(HDR) tests/harness.h))
$(eval $(call VARIANT,faultomp,$(B)/fault/fault_injection_omp,tests/fault_injection.c $(HDR) tests/harness.h))
$(eval $(call VARIANT,faultomp,$(B)/fault/oom_exhaust,tests/oom_exhaust.c $(HDR) tests/harness.h))
$(eval $(call VARIANT,fuzz,$(B)/fuzz/fuzz_%,tests/fuzz/fuzz_%.c tests/fuzz/replay_main.h $(HDR)))
$(eval $(call VARIANT,asan,$(B)/fuzz/replay_%,tests/fuzz/fuzz_%.c tests/fuzz/replay_main.h $(HDR)))
$(eval $(call VARIANT,tsan,$(B)/tsan/test_threads,tests/test_threads.c $(HDR) tests/harness.h))
# the same 8 threads on two emulated GPUs: the CUDA backend's host side (allocator,
# lazy init, staging buffers and their events) against the emulator's stream workers
$(eval $(call VARIANT,tsanemu,$(TSAN_EMU)/test_threads,tests/test_threads.c $(HDR) tests/harness.h))

# ---- the implementation compiled once per variant: a test that uses only the public API is
#      compiled with -DDEVTENSOR_IMPLEMENTATION_DONE (the header then leaves its implementation out
#      of that unit, as after an earlier #include with DEVTENSOR_IMPLEMENTATION) and linked with the
#      variant's devtensor_impl.o, instead of each compiling all of devtensor.h again (6-7 s a test
#      at -O2, 15 s under ASan: most of make test-emu's time). OWN_IMPL's tests reach the
#      implementation's internals or configure it with a macro before the #include: they keep their
#      own copy, as do build/ex, build/cuda/ex, static_unit and two_units, the ways a user builds.
OWN_IMPL   := test_cpu_nocache test_gemm_kernel test_print_format test_random test_threads test_vmath
LINK_TESTS := $(filter-out $(OWN_IMPL),$(TESTS))
# $(call IMPL,variant,folder,language): folder/devtensor_impl.o, by the variant's command
define IMPL
$(2)/devtensor_impl.o: $(HDR) | $$$$(@D)
	$$($(1)_CMD) $(3) -DDEVTENSOR_IMPLEMENTATION -c $(HDR) -o $$@
endef
# $(call LINKED,variant,folder,source folder,programs,prerequisites,implementation object): those
# programs, linked with it (-x none: the objects are not C++ sources where the command says -x c++)
define LINKED
$(addprefix $(2)/,$(4)): $(2)/%: $(3)/%.c $(5) $(6) $$($(1)_DEPS) | $$$$(@D)
	$$($(1)_CMD) -DDEVTENSOR_IMPLEMENTATION_DONE $$(filter %.c,$$^) -x none $$(filter %.o,$$^) -o $$@ $$($(1)_LIBS)
endef
$(foreach v,c asan cuda,$(eval $(call IMPL,$(v),$(B)/$(v),-x c)))
$(eval $(call IMPL,cxx,$(B)/cxx,))
$(eval $(call IMPL,emu,$(EMU_DIR),-x c))
$(foreach v,c cxx asan cuda,$(eval $(call LINKED,$(v),$(B)/$(v),tests,$(LINK_TESTS),$(TEST_DEPS),$(B)/$(v)/devtensor_impl.o)))
EMU_IMPL := $(EMU_DIR)/devtensor_impl.o
$(eval $(call LINKED,emu,$(EMU_DIR),tests,$(filter-out $(EMU_CPU_ONLY),$(LINK_TESTS)),$(TEST_DEPS),$(EMU_IMPL)))
$(eval $(call LINKED,emu,$(EMU_DIR)/ex,examples,$(EXAMPLES),$(EX_DEPS),$(EMU_IMPL)))
$(eval $(call LINKED,emubench,$(EMU_DIR)/bench,bench,bench_gpu bench_train,$(HDR),$(EMU_IMPL)))

# programs that need more than their variant
# test_threads uses pthreads (glibc >= 2.34 links them without -pthread; others need it)
$(B)/c/test_threads $(B)/cxx/test_threads $(B)/asan/test_threads: LDLIBS += -pthread
$(B)/cuda/test_threads: CUDA_LIBS += -pthread
$(B)/c/test_optim $(B)/cxx/test_optim $(B)/asan/test_optim $(B)/clang/test_optim: LDLIBS += -pthread
$(B)/cuda/test_optim: CUDA_LIBS += -pthread
# examples/fashion_mnist.c reads the gzip'd data set with zlib (apt-get install zlib1g-dev)
FASHION_EX := $(B)/ex/fashion_mnist $(B)/cuda/ex/fashion_mnist $(EMU_DIR)/ex/fashion_mnist
$(FASHION_EX): examples/fashion_data.h
$(B)/ex/fashion_mnist: LDLIBS += -lz
$(B)/cuda/ex/fashion_mnist: CUDA_LIBS += -lz
$(EMU_DIR)/ex/fashion_mnist: EMU_LINK += -lz
# GPU fault injection (tests/fault_gpu.c defines cudaMalloc and finds the real one with dlsym)
$(B)/bench_gpu: gpubench_CMD += -isystem $(CUDA_HOME)/include
# the bare <<<>>> launches under devtensor's per-op overhead (bench/launch_floor.cu; no devtensor)
$(B)/launch_floor: bench/launch_floor.cu | $(B)
	$(NVCC) $(NVCCFLAGS) $< -o $@
# devtensor's per-op time split against a bare launch (bench/op_overhead.cu; information)
$(B)/op_overhead: bench/op_overhead.cu $(HDR) $(CU_OBJ) | $(B)
	$(NVCC) $(NVCCFLAGS) -DDEVTENSOR_CUDA -I. $< $(CU_OBJ) -lcublas -o $@
$(B)/fuzz/fuzz_safetensors $(B)/fuzz/replay_safetensors: tests/fuzz/nest_decode.h

# the folders programs are built in
BUILD_DIRS := $(B) $(addprefix $(B)/,c cxx asan clang clangomp ex cuda cuda/ex emu emu/ex emu/bench fault fuzz tsan tsan-emu lib/cpu lib/cuda dist dist/ex \
              tsan-omp mingw/gcc mingw/interlocked mingw/cxx $(addprefix cxxstd/,c++11 c++14 c++17 c++20))
$(BUILD_DIRS):
	@mkdir -p $@

# ---- objects and programs compiled by nvcc or as C++ ----
# position-independent, so that libdevtensor.so links this same object (one nvcc compile, not two)
$(CU_OBJ): devtensor_cuda.cu $(HDR) | $$(@D)
	$(NVCC) $(NVCCFLAGS) -Xcompiler -fPIC -I. -c $< -o $@

# a user's own .cu file: the implementation compiled by nvcc, its own kernel on dt_cuda_stream()
$(B)/cuda/own_kernel: examples/own_kernel.cu $(HDR) $(CU_OBJ) | $$(@D)
	$(NVCC) $(NVCCFLAGS) -I. $< $(CU_OBJ) -lcublas -o $@

# the differential check of the CUDA backend against the CPU backend (tests/cuda/gpu_check.cu), for a GPU
$(B)/cuda/gpu_check: tests/cuda/gpu_check.cu $(HDR) $(CU_OBJ) | $$(@D)
	$(NVCC) $(NVCCFLAGS) -DDEVTENSOR_CUDA -I. $< $(CU_OBJ) -lcublas -o $@

# compute-sanitizer's planted errors (tests/cuda/san_planted.cu), for bench/gpu_session.sh san on a GPU
$(B)/cuda/san_planted: tests/cuda/san_planted.cu | $$(@D)
	$(NVCC) $(NVCCFLAGS) -lineinfo $< -o $@

# the README's one-command nvcc build, as a user types it
$(B)/cuda/gpus_nvcc: examples/gpus.c devtensor_cuda.cu $(HDR) | $$(@D)
	$(NVCC) -I. -DDEVTENSOR_CUDA examples/gpus.c devtensor_cuda.cu -lcublas -o $@

# the emulator (a shared library standing in for libcudart and libcublas) and the backend built on it
$(EMU_LIB): tests/emu/emu.cpp $(EMU_HDRS) | $$(@D)
	$(CXX) $(CXXSTD) $(WARN) $(EMU_SAN) -fPIC -shared -Itests/emu $< -o $@ -pthread

$(EMU_OBJ): devtensor_cuda.cu $(HDR) $(EMU_HDRS) | $$(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas $(EMU_SAN) -ffp-contract=off -DDTEMU -DDEVTENSOR_NCCL -Itests/emu -I. -c $< -o $@

# distributed over ranks with emulated GPUs (tests/emu/dist_nccl.sh): MPI and the emulator's NCCL
$(EMU_DIR)/dist_test_dist: tests/test_dist.c $(TEST_DEPS) $(EMU_OBJ) $(EMU_LIB) | $$(@D)
	$(MPICC) $(CSTD) $(WARN) $(EMU_SAN) -DDEVTENSOR_MPI -DDEVTENSOR_CUDA -I. $< $(EMU_OBJ) -o $@ $(EMU_LINK)

$(EMU_DIR)/gpu_check: tests/cuda/gpu_check.cu $(HDR) $(EMU_OBJ) $(EMU_LIB) | $$(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas $(EMU_SAN) -DDTEMU -DDEVTENSOR_CUDA -Itests/emu -I. $< -x none $(EMU_OBJ) -o $@ $(EMU_LINK)

$(TSAN_EMU)/libcudart_emu.so: tests/emu/emu.cpp $(EMU_HDRS) | $$(@D)
	$(CXX) $(CXXSTD) $(WARN) -O1 -g -fsanitize=thread -fPIC -shared -Itests/emu $< -o $@ -pthread
$(TSAN_EMU)/devtensor_cuda.o: devtensor_cuda.cu $(HDR) $(EMU_HDRS) | $$(@D)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas -O1 -g -fsanitize=thread -fPIC -ffp-contract=off -DDTEMU -DDEVTENSOR_NCCL -Itests/emu -I. -c $< -o $@

# ---- what make runs ----
.PHONY: all run fashion test asan test-emu bench bench-cblas bench-gpu bench-fashion fault fuzz fuzz-replay tsan valgrind clean
all: $(C_TESTS) $(CXX_TESTS) $(B)/clang/test_vmath $(CLANG_OMP_TESTS) $(EX_BINS) $(B)/static_unit $(B)/two_units $(CUDA_ALL)

run: $(RUN_GPUS)
	@$(if $(RUN_NOTE),echo "$(RUN_NOTE)")
	./$(RUN_GPUS)

test: all lib
	@DT_CUDA=$(CUDA) sh tests/run.sh $(C_TESTS) $(CXX_TESTS) $(B)/clang/test_vmath $(CLANG_OMP_TESTS) $(B)/static_unit $(B)/two_units -- tests/safetensors_py.sh -- tests/examples_smoke.sh tests/doc_snippets.sh \
	  tests/interop_py.sh tests/packaging.sh \
	  $(if $(CUDA_ALL),$(CUDA_TESTS) $(B)/cuda/fault_gpu tests/cuda_examples.sh $(GPU_CHECK))

asan: $(ASAN_TESTS)
	@ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 sh tests/run.sh $(ASAN_TESTS)

# Fashion-MNIST: softmax regression and the MLP, 10 epochs each, on cuda:0 or the CPU
# (the build make run picks); the data set: apt-get install dataset-fashion-mnist
FASHION_BIN := $(if $(filter $(B)/cuda/ex/gpus,$(RUN_GPUS)),$(B)/cuda/ex/fashion_mnist,$(B)/ex/fashion_mnist)
# what a fresh Debian machine lacks is installed when make runs as root with apt-get
FASHION_DATA := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
FASHION_NEED := $(if $(filter fashion,$(MAKECMDGOALS)),$(if $(HAVE_ZLIB),,zlib1g-dev) $(if $(FASHION_MNIST_DIR)$(wildcard $(FASHION_DATA)),,dataset-fashion-mnist))
ifneq ($(strip $(FASHION_NEED)),)
  $(shell [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && { apt-get update -qq && apt-get install -y -qq $(FASHION_NEED); } >/dev/null 2>&1)
  HAVE_ZLIB := $(shell printf '\043include <zlib.h>\nint main(void){return 0;}\n' | $(CC) -x c - -lz -o /dev/null 2>/dev/null && echo 1)
endif
ifeq ($(HAVE_ZLIB),1)
fashion: $(FASHION_BIN)
	@test -n "$$FASHION_MNIST_DIR" || test -f $(FASHION_DATA) || \
	  { echo "make fashion: Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist (or set FASHION_MNIST_DIR)"; exit 1; }
	./$(FASHION_BIN) --csv $(B)/fashion_mnist.csv
else
fashion:
	@echo "make fashion: zlib's header is missing: apt-get install zlib1g-dev"; exit 1
endif
# the same training in PyTorch beside it (bench/fashion_torch.py), interleaved; ratios of epoch times
bench-fashion: $(B)/ex/fashion_mnist
	@sh bench/run_fashion.sh ./$(B)/ex/fashion_mnist "$(PYTHON)"

# fault_gpu first: the longest program, started while the others share the second job
test-emu: $(EMU_TESTS) $(EMU_DIR)/fault_gpu $(EMU_DIR)/ctx_check $(EMU_DIR)/no_driver $(EMU_EX) $(EMU_DIR)/gpu_check $(EMU_DIR)/bench/bench_gpu $(EMU_DIR)/bench/bench_train \
          $(if $(shell command -v $(MPICC)),$(EMU_DIR)/dist_test_dist)
	@$(EMU_ENV) sh tests/run.sh $(EMU_DIR)/fault_gpu $(EMU_TESTS) $(EMU_DIR)/ctx_check $(EMU_DIR)/no_driver tests/emu/gpu_check.sh tests/emu/examples.sh \
	  tests/emu/dist_nccl.sh \
	  tests/emu/bench.sh -- tests/emu/second_pass.sh

bench: $(B)/bench_cpu
	@sh bench/run_cpu.sh ./$(B)/bench_cpu "$(PYTHON)"

# the same benchmark with DEVTENSOR_CBLAS linked to OpenBLAS (apt-get install libopenblas-dev)
bench-cblas: $(B)/bench_cpu_cblas
	@sh bench/run_cpu.sh ./$(B)/bench_cpu_cblas "$(PYTHON)"

# GPU benchmarks: devtensor on cuda:0 against cudaMemcpy and PyTorch (bench/run_gpu.sh)
ifeq ($(CUDA),1)
bench-gpu: $(B)/bench_gpu $(B)/bench_train $(B)/launch_floor
	@sh bench/run_gpu.sh $(B)
else
bench-gpu:
	@echo "SKIP: bench-gpu needs CUDA (nvcc not found; CUDA=1 forces it)"
endif

# the OpenMP build too: the same fault injection, and allocation until failure under ulimit -v
fault: $(B)/fault/fault_injection $(B)/fault/fault_injection_asan $(B)/fault/fault_injection_omp $(B)/fault/oom_exhaust
	@ASAN_OPTIONS=detect_leaks=1 OOM_EXHAUST_BIN=$(B)/fault/oom_exhaust sh tests/run.sh $(filter-out %/oom_exhaust,$^) tests/oom_exhaust.sh

fuzz: $(addprefix $(B)/fuzz/fuzz_,$(FUZZERS))
	@sh tests/fuzz/run.sh $(B)/fuzz $(FUZZ_TIME)

fuzz-replay: $(addprefix $(B)/fuzz/replay_,$(FUZZERS))
	@ASAN_OPTIONS=detect_leaks=1 sh tests/run.sh $^

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
tsan: $(B)/tsan/test_threads $(TSAN_EMU)/test_threads
	@TSAN_OPTIONS=halt_on_error=1 DTEMU_GPUS=2 setarch $$(uname -m) -R sh tests/run.sh $^

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
MINGW_EXES := $(addprefix $(B)/mingw/gcc/,$(addsuffix .exe,$(MINGW_T))) \
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
CXX_STD_OBJS := $(foreach s,$(CXX_STDS),$(addprefix $(B)/cxxstd/$(s)/,$(addsuffix .o,$(TESTS))))
# one variant per standard: checked, not compiled (-fsyntax-only: about 6x faster; the C++17
# build of make test compiles with -O2, where the warnings that need optimisation show), warnings
# as errors; the .o left is an empty stamp
define cxx_std_variant
cxxstd$(1)_CMD = $(CXX) -x c++ -std=$(1) $(WARN) -fsyntax-only -I.
cxxstd$(1)_LIBS = && touch $$@
$$(eval $$(call VARIANT,cxxstd$(1),$(B)/cxxstd/$(1)/%.o,tests/%.c $(MINGW_DEPS)))
endef
$(foreach s,$(CXX_STDS),$(eval $(call cxx_std_variant,$(s))))
cxx-std: $(CXX_STD_OBJS)
	@echo "PASS cxx-std: $(words $^) files checked ($(CXX_STDS)) clean"

# make tsan-omp: test_threads with -fopenmp under TSan. clang with LLVM's libomp (apt-get
# install clang libomp-dev) and its Archer tool, which tells TSan about OpenMP's barriers
# and tasks; gcc's libgomp is not instrumented, so TSan reports races inside every
# parallel loop that are not there (tried: a report in dt__cpu_fill's first region).
ARCHER ?= $(firstword $(wildcard $(shell $(CLANG) -print-resource-dir 2>/dev/null)/../../libarcher.so) $(wildcard /usr/lib/llvm-*/lib/libarcher.so))
tsanomp_CMD  = $(CLANG) $(CSTD) $(WARN) -O1 -g -fsanitize=thread -fopenmp -pthread -DTHREAD_ITERS=100 $(CFLAGS) -I.
tsanomp_LIBS = $(LDLIBS)
$(eval $(call VARIANT,tsanomp,$(B)/tsan-omp/test_threads,tests/test_threads.c $(HDR) tests/harness.h))
tsan-omp: $(B)/tsan-omp/test_threads
	@test -n "$(ARCHER)" || { echo "FAIL tsan-omp: libarcher.so not found (apt-get install libomp-dev)"; exit 1; }
	@OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" OMP_NUM_THREADS=4 \
	  setarch $$(uname -m) -R sh tests/run.sh $^

# the C builds (the C++ builds run the same code; they run plainly and under ASan in make test)
VALGRIND_BINS := $(filter-out %/test_gemm_kernel,$(C_TESTS)) $(B)/static_unit $(B)/two_units $(B)/fault/fault_injection
valgrind: $(VALGRIND_BINS)
	@sh tests/valgrind.sh $^

# ---- library and install: the implementation as libdevtensor.so / .a, with the
#      CUDA backend inside when CUDA=1; `make install PREFIX=... [DESTDIR=...]` puts the header,
#      the libraries, devtensor.pc and a CMake package (devtensor::devtensor) under PREFIX.
#      The single header is used as before: nothing here changes it.
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCDIR     ?= $(PREFIX)/include
DT_MAJOR   := $(shell sed -n 's/^\#define DEVTENSOR_VERSION_MAJOR \([0-9]*\).*/\1/p' $(HDR))
DT_MINOR   := $(shell sed -n 's/^\#define DEVTENSOR_VERSION_MINOR \([0-9]*\).*/\1/p' $(HDR))
DT_VERSION := $(DT_MAJOR).$(DT_MINOR).$(shell sed -n 's/^\#define DEVTENSOR_VERSION_PATCH \([0-9]*\).*/\1/p' $(HDR))
# the soname: while the major is 0, each minor is its own ABI (as devtensorConfigVersion.cmake says)
DT_SOVER   := $(if $(filter 0,$(DT_MAJOR)),$(DT_MAJOR).$(DT_MINOR),$(DT_MAJOR))
LIB_B      := $(B)/lib/$(if $(filter 1,$(CUDA)),cuda,cpu)
LIB_SO     := $(LIB_B)/libdevtensor.so
LIB_A      := $(LIB_B)/libdevtensor.a
LIB_OBJS   := $(LIB_B)/devtensor.o $(if $(filter 1,$(CUDA)),$(CU_OBJ))
LIB_PRIV   := $(OPENMP) $(if $(filter 1,$(CUDA)),-L$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++) -lm
.PHONY: lib install
lib: $(LIB_SO) $(LIB_A)
$(LIB_B)/devtensor.o: packaging/devtensor.c $(HDR) | $$(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) -fPIC $(CFLAGS) $(if $(filter 1,$(CUDA)),-DDEVTENSOR_CUDA) -I. -c $< -o $@
$(LIB_SO): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libdevtensor.so.$(DT_SOVER) $(OPENMP) $^ -o $@ \
	  $(if $(filter 1,$(CUDA)),$(CUDA_LIBS),-lm)
$(LIB_A): $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^
install: lib
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake/devtensor
	install -m 644 $(HDR) $(DESTDIR)$(INCDIR)/devtensor.h
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/libdevtensor.so.$(DT_VERSION)
	ln -sf libdevtensor.so.$(DT_VERSION) $(DESTDIR)$(LIBDIR)/libdevtensor.so.$(DT_SOVER)
	ln -sf libdevtensor.so.$(DT_SOVER) $(DESTDIR)$(LIBDIR)/libdevtensor.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libdevtensor.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(DT_VERSION)|' \
	  -e 's|@LIBS_PRIVATE@|$(strip $(LIB_PRIV))|' packaging/devtensor.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/devtensor.pc
	sed -e 's|@VERSION@|$(DT_VERSION)|g' -e 's|@MAJOR@|$(DT_MAJOR)|g' -e 's|@CUDA@|$(CUDA)|' \
	  -e 's|@INC_FROM_LIB@|$(shell realpath -m --relative-to=$(LIBDIR) $(INCDIR))|' \
	  -e 's|@LIBS_PRIVATE_CMAKE@|$(subst $() $(),;,$(strip $(LIB_PRIV)))|' \
	  packaging/devtensorConfig.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/devtensor/devtensorConfig.cmake
	sed -e 's|@VERSION@|$(DT_VERSION)|g' -e 's|@MAJOR@|$(DT_MAJOR)|g' -e 's|@MINOR@|$(DT_MINOR)|g' \
	  packaging/devtensorConfigVersion.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/devtensor/devtensorConfigVersion.cmake

# the shipped files are made from src/ (src/MANIFEST orders the parts) and committed
amalgamate:
	python3 tools/amalgamate.py
check-amalgamate:
	python3 tools/amalgamate.py --check
.PHONY: amalgamate check-amalgamate

clean:
	rm -rf $(B)
