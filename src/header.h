/* devtensor.h — tensors that live on a device (the CPU or a CUDA GPU), in one C header.

   USING IT
   In exactly one C or C++ file of your program:

       #define DEVTENSOR_IMPLEMENTATION
       #include "devtensor.h"

   Everywhere else just #include "devtensor.h".

   To get GPUs, also #define DEVTENSOR_CUDA before the include in that one file,
   compile devtensor_cuda.cu with nvcc and link -lcudart -lcublas:

       nvcc -I. -DDEVTENSOR_CUDA examples/gpus.c devtensor_cuda.cu -lcublas -o gpus

   Without DEVTENSOR_CUDA the same program builds and runs on the CPU and
   dt_num_gpus() is 0.

   OPTIONS (define before the implementation include)
     DEVTENSOR_STATIC        every function is static (DTDEF is `static`)
     DEVTENSOR_CUDA          use the CUDA backend from devtensor_cuda.cu
     DEVTENSOR_CBLAS         CPU matmul through cblas_sgemm/cblas_dgemm (link e.g. -lopenblas)
     DEVTENSOR_NO_CPU_DISPATCH  no AVX2/AVX-512 matmul kernels picked at run time: only what the
                             compiler flags allow (plain -O2 on x86-64 is SSE2: about 5x slower)
     DT_MALLOC(sz)/DT_FREE(p) host allocator (define both or neither)
     DT_ASSERT(c)            internal invariant checks (default: assert)
     -fopenmp                the CPU matmul and large elementwise ops use every core
     DEVTENSOR_MPI           dt_dist_* over MPI: more than one rank (compile with mpicc, run with mpirun)
     DEVTENSOR_NCCL          (compiling devtensor_cuda.cu) GPU collectives through NCCL: link -lnccl
     DEVTENSOR_CUDNN         (compiling devtensor_cuda.cu) GPU convolutions through cuDNN: link -lcudnn
                             (without it: im2col + cuBLAS)

   EXAMPLE
       dt_device dev = dt_try_gpu(0);               // cuda:0, or the CPU when there is none
       dt_tensor *x = dt_ones(dt_shape2(2, 3), dev);
       dt_tensor *y = dt_rand(dt_shape2(2, 3), dev);
       dt_tensor *z = dt_add(x, y);                 // runs where x and y are
       if (!z) fprintf(stderr, "%s\n", dt_last_error());
       dt_print(z);                                 // tensor([[...]], device='cuda:0')
       dt_release(x); dt_release(y); dt_release(z);

   ERRORS
   Nothing aborts, exits or prints. A function that makes a tensor or module
   returns NULL on failure; the others return a dt_status. dt_last_error()
   says why, per thread.

   CONTENTS
   This file is generated: tools/amalgamate.py joins the parts written in src/, in
   the order src/MANIFEST gives, each under a banner naming it ("---- src/nn/module.c").
   Edit the parts and run `make amalgamate`; CI fails when this file differs.
     src/header.h, api/      this text and the public declarations: errors, devices,
                             tensors, operations, printing, neural networks and
                             optimizers, autograd, convolution, interop, distributed
     src/backend/            the contract between the core and a device backend (the
                             dt__backend table, broadcast geometry, Philox, Box-Muller);
                             seen only by the implementation and devtensor_cuda.cu
     src/core/               errors, shapes and dtypes, devices, tensors and memory,
                             random numbers, copies
     src/ops/                arithmetic and reductions, comparisons, indexing,
                             classification (argmax, softmax, cross-entropy),
                             convolution and pooling (dt_f_conv2d, dt_f_max_pool2d, ...)
     src/autograd/           the graph that operations record, the backward of each
                             operation, the engine (dt_autograd_backward)
     src/nn/                 grad mode, modules, forward and backward, optimizers
     src/train/              the trainer: its data, its data-parallel replicas, its epochs
     src/io/                 printing, safetensors (modules and any named tensors, with
                             a strict JSON reader), DLPack
     src/dist/               dt_dist_*, dt_all_reduce_, dt_broadcast_ (MPI, NCCL)
     src/cpu/                the CPU backend: memory, threads, elementwise kernels,
                             reductions, random numbers, classification, optimizers,
                             indexing, and its table dt__cpu_backend()
     src/cpu/gemm/           the CPU matmul: packing, micro-kernels, blocked driver,
                             skinny shapes, cblas, entry points
     src/cuda/               devtensor_cuda.cu, the CUDA backend: the same table,
                             dt__cuda_backend()
   README.md's "Reading the code" follows dt_add and dt_cross_entropy through them.

   VERSION
   DEVTENSOR_VERSION_MAJOR/MINOR/PATCH below; DEVTENSOR_VERSION is
   MAJOR * 10000 + MINOR * 100 + PATCH, for #if checks. Changes:
     unreleased          DT_U8 and DT_BOOL (creation, casts, printing, safetensors, DLPack),
                         dt_eq/ne/lt/le/gt/ge, dt_sigmoid/tanh/abs, dt_*_like (dt_sum of bool
                         or uint8 is int64); dt_slice (dim 0 a view), dt_index_select, dt_cat,
                         dt_permute; dt_argmax/argmin, dt_max/min(_dim), dt_softmax,
                         dt_log_softmax, dt_cross_entropy(_grad); dt_set_grad_enabled;
                         autograd over tensor operations (dt_requires_grad_, dt_autograd_backward,
                         dt_grad, dt_detach, dt_zero_grad_, dt_is_leaf); dt_f_conv2d(_ex),
                         the 2-d max, average and adaptive average poolings, and their backward;
                         dt_sgd/dt_adam/dt_adamw; the trainer's classification (loss_fn,
                         optimizer, dt_trainer_fit_val, dt_trainer_evaluate); dt_dist_* over
                         MPI and NCCL, num_gpus > 1 replicas; CPU pool workers block signals;
                         fixes from running on an H100 (GCC 13 warnings, narrow column sums,
                         out-of-memory text splits in-use and cached, ranks sharing a GPU
                         refused before NCCL); gemm packs A on the pool; the pool spins briefly
     0.2.0               interop (DLPack 1.x and legacy, dt_from_blob, dt_save_tensors,
                         dt_load_tensors), libdevtensor.so/.a with pkg-config and CMake;
                         a caching CPU allocator, a CPU thread pool instead of OpenMP for
                         elementwise work, vector exp/log/add/sum chosen at run time;
                         strict safetensors JSON, nesting at most DT_MODULE_MAX_DEPTH,
                         parameter names of any length, saves through a temporary file
     0.1.0               the first numbered version: CPU and CUDA backends, the
                         chapter's API, modules, trainer, safetensors (before
                         it, see git log)

   LICENSE: MIT (see README.md). */

#ifndef DEVTENSOR_H
#define DEVTENSOR_H

#define DEVTENSOR_VERSION_MAJOR 0
#define DEVTENSOR_VERSION_MINOR 2
#define DEVTENSOR_VERSION_PATCH 0
#define DEVTENSOR_VERSION \
  (DEVTENSOR_VERSION_MAJOR * 10000 + DEVTENSOR_VERSION_MINOR * 100 + DEVTENSOR_VERSION_PATCH)

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>

#if defined(__GNUC__) || defined(__clang__)
#define DT__UNUSED __attribute__((unused))
#else
#define DT__UNUSED
#endif

#ifndef DTDEF
#ifdef DEVTENSOR_STATIC
#define DTDEF static DT__UNUSED
#else
#define DTDEF extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif
