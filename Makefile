# devtensor — plain GNU make (3.82 or newer).
#   make             build the examples and tests (CPU; CUDA variants too when nvcc is found)
#   make run         build and run examples/gpus.c (the chapter's first sections; the CPU build
#                    when no NVIDIA driver is installed, unless CUDA=1 is given)
#   make fashion     Fashion-MNIST: softmax regression and an MLP, 10 epochs (needs zlib1g-dev and
#                    dataset-fashion-mnist; bench/fashion_torch.py is the same in PyTorch)
#   make test        build and run every test; ends with "N passed, N failed, N skipped" (with
#                    CUDA, DT_REQUIRE_GPU=1 makes "no GPU" a failure, and gpu_check runs where a driver is)
#   make lenet, make resnet, make modern-cnn MODEL=M  D2L's CNNs on Fashion-MNIST (examples/lenet.c, resnet.c,
#                    modern_cnn.c; M: alexnet, vgg, nin, googlenet, bnlenet, densenet or regnet)
#   make bench       the CPU benchmarks against NumPy and PyTorch (CPU), one table (make bench-cblas: with DEVTENSOR_CBLAS)
#   make bench-gpu   the GPU benchmarks against cudaMemcpy and PyTorch (on a machine with a GPU)
#   make bench-fashion  make fashion's training beside the same in PyTorch (bench/fashion_torch.py): epoch times
#   make bench-lenet    make lenet's training beside the same in PyTorch (bench/lenet_torch.py): epoch times, accuracies
#   make lib         libdevtensor.so and .a; make install PREFIX=... adds devtensor.pc and a CMake package
#   make fuzz-torch  devtensor against PyTorch (float64, CPU) on CASES random cases from SEED, every op family
#                    (tools/fuzz; FUZZ_ARGS for more options); make fuzz-torch-emu: the same on cuda:0 of
#                    the emulator (make lib-emu: the CUDA backend on tests/emu as a shared library)
#   make fuzz-train  training end to end against torch.nn and torch.optim on CASES random networks from SEED
#                    (tools/fuzz/train.py); make fuzz-train-emu: the same on FUZZ_DEVICE of two emulated GPUs
#   make fuzz-graph  the graph calls (dt_graph_*) against eager runs on CASES random programs from SEED, on the
#                    CPU under ASan (tests/fuzz/graph_fuzz.c); make fuzz-graph-emu: on FUZZ_DEVICE of two
#                    emulated GPUs (make test-emu's build). Not part of make test or CI
#   make amalgamate  write devtensor.h and devtensor_cuda.cu from the parts in src/ (tools/amalgamate.py)
#   make clean       remove build/
#   make help        this list
# CI's builds (.ci/run runs them after make test) are in ci.mk, included at the end of this file:
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
#   make cu-cxx20    devtensor_cuda.cu checked as C++20 on the emulator's headers: the backend table's slot names and order
#   make check-amalgamate  fails when the committed devtensor.h / devtensor_cuda.cu differ from what src/ makes
#   make test-dist   tests/test_dist.c built with DEVTENSOR_MPI (mpicc) on two ranks under mpirun, and the failure paths
#   make test-dist-gpu  the same with CUDA and the real NCCL, each rank on its GPU (a machine with two GPUs;
#                    on one GPU: that two ranks are refused, saying why, and the rest skipped)
#   make bench-dist  all-reduce bandwidth (nccl-tests' algbw/busbw, 4 B to 64 MiB) on BENCH_NP=2 CPU ranks under mpirun
#   make bench-dist-gpu the same on a rank per GPU through NCCL (BENCH_NP: default the GPUs nvidia-smi lists)
#                    (CI runs neither these two nor test-dist-gpu: they live beside test-dist, whose
#                    MPI builds they share)
#   CUDA=0 / CUDA=1 forces the CUDA variants off / on; default: on when nvcc is found.
#   CUDNN=1: the CUDA variants with cuDNN (devtensor_cuda.cu compiled with -DDEVTENSOR_CUDNN, linked
#                    with -lcudnn): convolutions through cuDNN instead of im2col + cuBLAS
#   make cu-cudnn    nvcc compiles devtensor_cuda.cu with -DDEVTENSOR_CUDNN (where cudnn.h is installed; else skipped)
#   JOBS=N: test programs run N at a time (tests/run.sh; default: make's -j, else 1).
#
# How a program is built: a variant v is three variables, v_CMD (the compiler and its flags;
# the sources and objects follow it), v_LIBS (what the command ends with) and v_DEPS (further
# prerequisites of every program, such as the CUDA object). Three templates make the rules:
#   $(call VARIANT,v,target or pattern,sources and headers)   v_CMD sources objects -o target v_LIBS
#   $(call IMPL,v,folder,language)   folder/devtensor_impl.o: devtensor.h's implementation, by v_CMD
#   $(call LINKED,v,folder,source folder,programs,prerequisites,impl.o)   those programs compiled
#       with -DDEVTENSOR_IMPLEMENTATION_DONE and linked with impl.o instead of each compiling it
# Adding a variant: three variables and one $(eval $(call VARIANT,...)); ci.mk's use the same.

# make with no target: all (the rules $(eval) writes would otherwise make build/static_unit the first)
.DEFAULT_GOAL := all

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
CLANG   ?= clang
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
  EXAMPLES := $(filter-out fashion_mnist logistic_regression lenet resnet modern_cnn mlp_block,$(EXAMPLES))
endif
TEST_DEPS:= $(HDR) tests/harness.h $(wildcard tests/*.inc)
EX_DEPS  := $(HDR) examples/timing.h

C_TESTS   := $(addprefix $(B)/c/,$(TESTS))
CXX_TESTS := $(addprefix $(B)/cxx/,$(TESTS))
EX_BINS   := $(addprefix $(B)/ex/,$(EXAMPLES))

# ---- CUDA (DEVTENSOR_CUDA + devtensor_cuda.cu compiled by nvcc), when CUDA=1 ----
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# machine code for sm_80 (A100; also runs on sm_86/sm_89: A10, L4, RTX 30/40) and
# sm_90 (H100, H200); PTX for compute_75 (T4, RTX 20: CUDA 13's oldest, compiled
# by the driver at first use) and compute_90 (GPUs newer than Hopper)
GENCODE    := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=compute_90
NVCCFLAGS  ?= -O2 -std=c++17 $(GENCODE) -Xcompiler -Wall,-Wextra
# CUDNN=1: cuDNN's convolutions (src/cuda/cudnn.cu), in an object of its own name so that
# switching rebuilds it; CUDNN_LIB is what every CUDA program links for it
CUDNN      ?= 0
CUDNN_DEF  := $(if $(filter 1,$(CUDNN)),-DDEVTENSOR_CUDNN)
CUDNN_LIB  := $(if $(filter 1,$(CUDNN)),-lcudnn)
NVCCFLAGS  += $(CUDNN_DEF)
CUDA_LIBS  := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas $(CUDNN_LIB) -lstdc++ -lm -ldl
CU_OBJ     := $(B)/cuda/devtensor_cuda$(if $(filter 1,$(CUDNN)),_cudnn).o
# tests that touch no device (the CPU gemm's kernels, the vector math, number formatting, the
# CPU's BF16 gemm, the CPU allocator without its cache): the C and C++ builds run them, the CUDA
# build and the emulator's (ci.mk) leave them out, as they would test the same CPU code again
CPU_ONLY   := test_gemm_kernel test_vmath test_print_format test_gemm_bf16 test_cpu_nocache
CUDA_TESTS := $(addprefix $(B)/cuda/,$(filter-out $(CPU_ONLY),$(TESTS)))
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
  ifneq ($(filter run fashion lenet resnet modern-cnn,$(MAKECMDGOALS)),)
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
cblas_CMD    = $(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -DDEVTENSOR_CBLAS -I.
cblas_LIBS   = $(LDLIBS) -lopenblas
cuda_CMD     = $(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) $(CFLAGS) -DDEVTENSOR_CUDA -I.
cuda_LIBS    = $(CUDA_LIBS)
cuda_DEPS    = $(CU_OBJ)
gpubench_CMD = $(CC) $(CSTD) $(WARN) $(OPT) $(CFLAGS) -DDEVTENSOR_CUDA -I.
gpubench_LIBS= $(CUDA_LIBS)
gpubench_DEPS= $(CU_OBJ)

# $(call VARIANT,variant,target or pattern,sources and prerequisites): the rule that builds it,
# its folder made first (order-only: a newer folder rebuilds nothing)
.SECONDEXPANSION:
define VARIANT
$(2): $(3) $$($(1)_DEPS) | $$$$(@D)
	$$($(1)_CMD) $$(filter %.c %.o,$$^) -o $$@ $$($(1)_LIBS)
endef

$(eval $(call VARIANT,c,$(B)/c/%,tests/%.c $(TEST_DEPS)))
$(eval $(call VARIANT,cxx,$(B)/cxx/%,tests/%.c $(TEST_DEPS)))
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
# the graph fuzzer on a GPU (bench/gpu_session.sh's fuzz phase; tests/fuzz/graph_fuzz.c)
$(eval $(call VARIANT,cuda,$(B)/cuda/graph_fuzz,tests/fuzz/graph_fuzz.c $(TEST_DEPS)))
$(eval $(call VARIANT,cuda,$(B)/cuda/ex/%,examples/%.c $(EX_DEPS)))
$(eval $(call VARIANT,c,$(B)/bench_cpu,bench/bench_cpu.c $(HDR)))
$(eval $(call VARIANT,cblas,$(B)/bench_cpu_cblas,bench/bench_cpu.c $(HDR)))
$(eval $(call VARIANT,gpubench,$(B)/bench_train,bench/bench_train.c $(HDR)))
$(eval $(call VARIANT,gpubench,$(B)/bench_gpu,bench/bench_gpu.c $(HDR)))

# ---- the implementation compiled once per variant: a test that uses only the public API is
#      compiled with -DDEVTENSOR_IMPLEMENTATION_DONE (the header then leaves its implementation out
#      of that unit, as after an earlier #include with DEVTENSOR_IMPLEMENTATION) and linked with the
#      variant's devtensor_impl.o, instead of each compiling all of devtensor.h again (6-7 s a test
#      at -O2, 15 s under ASan: most of make test-emu's time). OWN_IMPL's tests reach the
#      implementation's internals or configure it with a macro before the #include: they keep their
#      own copy. The examples are linked the same way, but for gpus (make run's), which keeps its
#      copy as static_unit and two_units do: the ways a user builds.
OWN_IMPL   := test_cpu_nocache test_gemm_kernel test_print_format test_random test_threads test_vmath test_gemm_bf16
LINK_TESTS := $(filter-out $(OWN_IMPL),$(TESTS))
LINK_EX    := $(filter-out gpus,$(EXAMPLES))
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
$(foreach v,c cuda,$(eval $(call IMPL,$(v),$(B)/$(v),-x c)))
$(eval $(call IMPL,cxx,$(B)/cxx,))
$(foreach v,c cxx cuda,$(eval $(call LINKED,$(v),$(B)/$(v),tests,$(LINK_TESTS),$(TEST_DEPS),$(B)/$(v)/devtensor_impl.o)))
$(eval $(call LINKED,c,$(B)/ex,examples,$(LINK_EX),$(EX_DEPS),$(B)/c/devtensor_impl.o))
$(eval $(call LINKED,cuda,$(B)/cuda/ex,examples,$(LINK_EX),$(EX_DEPS),$(B)/cuda/devtensor_impl.o))
$(eval $(call LINKED,cuda,$(B)/cuda,tests,fault_gpu,$(TEST_DEPS),$(B)/cuda/devtensor_impl.o))

# programs that need more than their variant
# test_threads uses pthreads (glibc >= 2.34 links them without -pthread; others need it)
$(B)/c/test_threads $(B)/cxx/test_threads: LDLIBS += -pthread
$(B)/cuda/test_threads: CUDA_LIBS += -pthread
$(B)/c/test_optim $(B)/cxx/test_optim $(B)/clang/test_optim: LDLIBS += -pthread
$(B)/cuda/test_optim: CUDA_LIBS += -pthread
# examples/fashion_mnist.c reads the gzip'd data set with zlib (apt-get install zlib1g-dev)
FASHION_EX := $(B)/ex/fashion_mnist $(B)/cuda/ex/fashion_mnist $(B)/ex/logistic_regression $(B)/cuda/ex/logistic_regression \
              $(B)/ex/lenet $(B)/cuda/ex/lenet $(B)/ex/resnet $(B)/cuda/ex/resnet $(B)/ex/modern_cnn $(B)/cuda/ex/modern_cnn \
              $(B)/ex/mlp_block $(B)/cuda/ex/mlp_block
$(FASHION_EX): examples/fashion_data.h
$(filter %/lenet %/resnet %/modern_cnn,$(FASHION_EX)): examples/cnn_train.h
$(filter $(B)/ex/%,$(FASHION_EX)): LDLIBS += -lz
$(filter $(B)/cuda/%,$(FASHION_EX)): CUDA_LIBS += -lz
$(B)/bench_gpu: gpubench_CMD += -isystem $(CUDA_HOME)/include
# the bare <<<>>> launches under devtensor's per-op overhead (bench/launch_floor.cu; no devtensor)
$(B)/launch_floor: bench/launch_floor.cu | $(B)
	$(NVCC) $(NVCCFLAGS) $< -o $@
# devtensor's per-op time split against a bare launch (bench/op_overhead.cu; information)
$(B)/op_overhead: bench/op_overhead.cu $(HDR) $(CU_OBJ) | $(B)
	$(NVCC) $(NVCCFLAGS) -DDEVTENSOR_CUDA -I. $< $(CU_OBJ) -lcublas $(CUDNN_LIB) -o $@

# the folders programs are built in (ci.mk's are listed there)
BUILD_DIRS := $(B) $(addprefix $(B)/,c cxx clang clangomp ex cuda cuda/ex lib/cpu lib/cuda)
$(BUILD_DIRS):
	@mkdir -p $@

# ---- objects and programs compiled by nvcc (ci.mk: the emulator's, compiled as C++) ----
# position-independent, so that libdevtensor.so links this same object (one nvcc compile, not two)
$(CU_OBJ): devtensor_cuda.cu $(HDR) | $$(@D)
	$(NVCC) $(NVCCFLAGS) -Xcompiler -fPIC -I. -c $< -o $@

# a user's own .cu file: the implementation compiled by nvcc, its own kernel on dt_cuda_stream()
$(B)/cuda/own_kernel: examples/own_kernel.cu $(HDR) $(CU_OBJ) | $$(@D)
	$(NVCC) $(NVCCFLAGS) -I. $< $(CU_OBJ) -lcublas $(CUDNN_LIB) -o $@

# the differential check of the CUDA backend against the CPU backend (tests/cuda/gpu_check.cu), for a GPU
$(B)/cuda/gpu_check: tests/cuda/gpu_check.cu $(HDR) $(CU_OBJ) | $$(@D)
	$(NVCC) $(NVCCFLAGS) -DDEVTENSOR_CUDA -I. $< $(CU_OBJ) -lcublas $(CUDNN_LIB) -o $@

# compute-sanitizer's planted errors (tests/cuda/san_planted.cu), for bench/gpu_session.sh san on a GPU
$(B)/cuda/san_planted: tests/cuda/san_planted.cu | $$(@D)
	$(NVCC) $(NVCCFLAGS) -lineinfo $< -o $@

# the README's one-command nvcc build, as a user types it
$(B)/cuda/gpus_nvcc: examples/gpus.c devtensor_cuda.cu $(HDR) | $$(@D)
	$(NVCC) -I. -DDEVTENSOR_CUDA $(CUDNN_DEF) examples/gpus.c devtensor_cuda.cu -lcublas $(CUDNN_LIB) -o $@

# ---- what make runs ----
.PHONY: all run fashion lenet resnet modern-cnn test bench bench-cblas bench-gpu bench-fashion clean help
# $(CU_OBJ) first: nvcc takes a minute, and every CUDA program links it
all: $(if $(CUDA_ALL),$(CU_OBJ)) $(C_TESTS) $(CXX_TESTS) $(B)/clang/test_vmath $(CLANG_OMP_TESTS) $(EX_BINS) $(B)/static_unit $(B)/two_units $(CUDA_ALL)

run: $(RUN_GPUS)
	@$(if $(RUN_NOTE),echo "$(RUN_NOTE)")
	./$(RUN_GPUS)

# the scripts and the longest programs first, so that two run at a time to the end;
# safetensors_py.sh last, alone: it reads the file test_nn writes (c, cxx and cuda)
TEST_LONG := $(addsuffix /test_gemm_kernel,$(B)/c $(B)/cxx)
test: all lib
	@DT_CUDA=$(CUDA) sh tests/run.sh tests/doc_snippets.sh tests/examples_smoke.sh $(if $(CUDA_ALL),tests/cuda_examples.sh) \
	  tests/packaging.sh tests/interop_py.sh $(TEST_LONG) \
	  $(filter-out $(TEST_LONG),$(C_TESTS) $(CXX_TESTS) $(B)/clang/test_vmath $(CLANG_OMP_TESTS) $(B)/static_unit $(B)/two_units \
	  $(if $(CUDA_ALL),$(CUDA_TESTS) $(B)/cuda/fault_gpu $(GPU_CHECK))) -- tests/safetensors_py.sh

# Fashion-MNIST: softmax regression and the MLP, 10 epochs each, on cuda:0 or the CPU
# (the build make run picks); the data set: apt-get install dataset-fashion-mnist
FASHION_BIN := $(if $(filter $(B)/cuda/ex/gpus,$(RUN_GPUS)),$(B)/cuda/ex/fashion_mnist,$(B)/ex/fashion_mnist)
# what a fresh Debian machine lacks is installed when make runs as root with apt-get
FASHION_DATA := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
FASHION_NEED := $(if $(filter fashion lenet resnet modern-cnn,$(MAKECMDGOALS)),$(if $(HAVE_ZLIB),,zlib1g-dev) $(if $(FASHION_MNIST_DIR)$(wildcard $(FASHION_DATA)),,dataset-fashion-mnist))
ifneq ($(strip $(FASHION_NEED)),)
  $(shell [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && { apt-get update -qq && apt-get install -y -qq $(FASHION_NEED); } >/dev/null 2>&1)
  HAVE_ZLIB := $(shell printf '\043include <zlib.h>\nint main(void){return 0;}\n' | $(CC) -x c - -lz -o /dev/null 2>/dev/null && echo 1)
endif
ifeq ($(HAVE_ZLIB),1)
fashion: $(FASHION_BIN)
	@test -n "$$FASHION_MNIST_DIR" || test -f $(FASHION_DATA) || \
	  { echo "make fashion: Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist (or set FASHION_MNIST_DIR)"; exit 1; }
	./$(FASHION_BIN) --csv $(B)/fashion_mnist.csv
# D2L 7.6's LeNet (examples/lenet.c), 10 epochs; LENET_ARGS=--relu-max for ReLU and max pooling
lenet: $(subst fashion_mnist,lenet,$(FASHION_BIN))
	@test -n "$$FASHION_MNIST_DIR" || test -f $(FASHION_DATA) || \
	  { echo "make lenet: Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist (or set FASHION_MNIST_DIR)"; exit 1; }
	./$(subst fashion_mnist,lenet,$(FASHION_BIN)) --csv $(B)/lenet.csv $(LENET_ARGS)
# D2L 8.6's ResNet-18 (examples/resnet.c), 10 epochs at 96x96 as D2L; RESNET_ARGS="--size 28" for the
# 28x28 images as they are (about 12 times less work: what a CPU can train in reasonable time)
resnet: $(subst fashion_mnist,resnet,$(FASHION_BIN))
	@test -n "$$FASHION_MNIST_DIR" || test -f $(FASHION_DATA) || \
	  { echo "make resnet: Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist (or set FASHION_MNIST_DIR)"; exit 1; }
	./$(subst fashion_mnist,resnet,$(FASHION_BIN)) --csv $(B)/resnet.csv $(RESNET_ARGS)
# D2L chapter 8's networks (examples/modern_cnn.c): MODEL (default bnlenet) at D2L's size and learning rate;
# CNN_ARGS for more options (CNN_ARGS="--size 32" for what a CPU trains in reasonable time)
MODEL ?= bnlenet
modern-cnn: $(subst fashion_mnist,modern_cnn,$(FASHION_BIN))
	@test -n "$$FASHION_MNIST_DIR" || test -f $(FASHION_DATA) || \
	  { echo "make modern-cnn: Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist (or set FASHION_MNIST_DIR)"; exit 1; }
	./$(subst fashion_mnist,modern_cnn,$(FASHION_BIN)) --model $(MODEL) --csv $(B)/$(MODEL).csv $(CNN_ARGS)
else
fashion lenet resnet modern-cnn:
	@echo "make $@: zlib's header is missing: apt-get install zlib1g-dev"; exit 1
endif
# the same training in PyTorch beside it (bench/fashion_torch.py), interleaved; ratios of epoch times
bench-fashion: $(B)/ex/fashion_mnist
	@sh bench/run_fashion.sh ./$(B)/ex/fashion_mnist "$(PYTHON)"
# examples/lenet.c beside the same in PyTorch (bench/lenet_torch.py); LENET_ARGS=--relu-max for that variant
.PHONY: bench-lenet
bench-lenet: $(B)/ex/lenet
	@sh bench/run_lenet.sh ./$(B)/ex/lenet "$(PYTHON)" 1 10 $(LENET_ARGS)

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
LIB_PRIV   := $(OPENMP) $(if $(filter 1,$(CUDA)),-L$(CUDA_HOME)/lib64 -lcudart -lcublas $(CUDNN_LIB) -lstdc++) -lm
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
	sed -e 's|@VERSION@|$(DT_VERSION)|g' -e 's|@SOVER@|$(DT_SOVER)|g' -e 's|@CUDA@|$(CUDA)|' \
	  -e 's|@INC_FROM_LIB@|$(shell realpath -m --relative-to=$(LIBDIR) $(INCDIR))|' \
	  -e 's|@LIBS_PRIVATE_CMAKE@|$(subst $() $(),;,$(strip $(LIB_PRIV)))|' \
	  packaging/devtensorConfig.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/devtensor/devtensorConfig.cmake
	sed -e 's|@VERSION@|$(DT_VERSION)|g' -e 's|@MAJOR@|$(DT_MAJOR)|g' -e 's|@MINOR@|$(DT_MINOR)|g' \
	  packaging/devtensorConfigVersion.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/devtensor/devtensorConfigVersion.cmake

# ---- the differential fuzzer against PyTorch (tools/fuzz, see its README): devtensor through
#      ctypes against PyTorch on the CPU in float64, random cases of every op family. Not part of
#      make test, make test-emu or CI. FUZZ_PYTHON: a python3 with torch and numpy.
SEED       ?= 1
CASES      ?= 2000
FUZZ_ARGS  ?=
FUZZ_PYTHON ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import torch, numpy' 2>/dev/null && { echo $$p; break; }; done)
# the CUDA backend on the emulator as one shared library, optimized and without sanitizers:
# devtensor_cuda.cu compiled as C++ against tests/emu (-DDTEMU, the emulator's cuDNN), the
# implementation with DEVTENSOR_CUDA, linked with the emulator's runtime (also a shared library)
FUZZ_EMU   := $(B)/fuzz-emu
FUZZ_EMU_SO:= $(FUZZ_EMU)/libdevtensor.so
$(FUZZ_EMU):
	@mkdir -p $@
$(FUZZ_EMU)/libcudart_emu.so: tests/emu/emu.cpp $(wildcard tests/emu/*.h) | $(FUZZ_EMU)
	$(CXX) $(CXXSTD) $(WARN) $(OPT) -fPIC -shared -Itests/emu $< -o $@ -pthread
$(FUZZ_EMU)/devtensor_cuda.o: devtensor_cuda.cu $(HDR) $(wildcard tests/emu/*.h) | $(FUZZ_EMU)
	$(CXX) -x c++ $(CXXSTD) $(WARN) -Wno-unknown-pragmas $(OPT) -fPIC -ffp-contract=off -DDTEMU -DDEVTENSOR_CUDNN -Itests/emu -I. -c $< -o $@
$(FUZZ_EMU)/devtensor.o: packaging/devtensor.c $(HDR) | $(FUZZ_EMU)
	$(CC) $(CSTD) $(WARN) $(OPT) $(OPENMP) -fPIC $(CFLAGS) -DDEVTENSOR_CUDA -DDEVTENSOR_CUDNN -I. -c $< -o $@
$(FUZZ_EMU_SO): $(FUZZ_EMU)/devtensor.o $(FUZZ_EMU)/devtensor_cuda.o $(FUZZ_EMU)/libcudart_emu.so
	$(CC) -shared $(OPENMP) $(filter %.o,$^) -o $@ -L$(FUZZ_EMU) -lcudart_emu -Wl,-rpath,$(abspath $(FUZZ_EMU)) \
	  -lstdc++ -lm -pthread -ldl
.PHONY: lib-emu fuzz-torch fuzz-torch-emu fuzz-train fuzz-train-emu
lib-emu: $(FUZZ_EMU_SO)
# make fuzz-torch: CASES cases from SEED on the CPU (the library of make lib without CUDA)
fuzz-torch:
	$(MAKE) --no-print-directory lib CUDA=0
	$(FUZZ_PYTHON) tools/fuzz/fuzz.py --lib $(B)/lib/cpu/libdevtensor.so --device cpu --seed $(SEED) --cases $(CASES) $(FUZZ_ARGS)
# make fuzz-torch-emu: the same on cuda:0 of two emulated GPUs (FUZZ_DEVICE=cuda:1 for the second)
FUZZ_DEVICE ?= cuda:0
fuzz-torch-emu: $(FUZZ_EMU_SO)
	DTEMU_GPUS=2 $(FUZZ_PYTHON) tools/fuzz/fuzz.py --lib $< --device $(FUZZ_DEVICE) --seed $(SEED) --cases $(CASES) $(FUZZ_ARGS)
# make fuzz-train: small networks trained end to end against torch.nn (tools/fuzz/train.py), CASES from SEED
# on the CPU; make fuzz-train-emu: on FUZZ_DEVICE of two emulated GPUs. FUZZ_ARGS as above
fuzz-train:
	$(MAKE) --no-print-directory lib CUDA=0
	$(FUZZ_PYTHON) tools/fuzz/train.py --lib $(B)/lib/cpu/libdevtensor.so --device cpu --seed $(SEED) --cases $(CASES) $(FUZZ_ARGS)
fuzz-train-emu: $(FUZZ_EMU_SO)
	DTEMU_GPUS=2 $(FUZZ_PYTHON) tools/fuzz/train.py --lib $< --device $(FUZZ_DEVICE) --seed $(SEED) --cases $(CASES) $(FUZZ_ARGS)

# the shipped files are made from src/ (src/MANIFEST orders the parts) and committed
amalgamate:
	python3 tools/amalgamate.py
.PHONY: amalgamate

clean:
	rm -rf $(B)

# the opening comment's list of targets and settings, up to the paragraph on how programs are built
help:
	@awk '/^# How a program is built/ { exit } NR > 1 && /^#/ { sub(/^# ?/, ""); print }' Makefile

# CI's builds (the list at the top): their variables, variants and rules
include ci.mk
