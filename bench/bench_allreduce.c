/* bench/bench_allreduce.c — the all-reduce bandwidth a data-parallel user can expect:
   dt_all_reduce_(t, DT_REDUCE_SUM) of float32 tensors of 4 bytes to 64 MiB, doubling, on every
   rank of an mpirun job, printed as nccl-tests' all_reduce_perf prints it.

     make bench-dist       2 CPU ranks: build/dist/bench_allreduce (mpicc -DDEVTENSOR_MPI)
     make bench-dist-gpu   a rank per GPU, GPU tensors through NCCL: build/cuda/dist_bench_allreduce
     mpirun -np N <bin> [-d cpu|cuda] [-b MIN] [-e MAX] [-f FACTOR] [-w WARMUP] [-n ITERS]
       sizes in bytes (K, M, G suffixes: powers of 1024), rounded down to whole floats;
       defaults -d cpu -b 4 -e 64M -f 2 -w 5 -n 20

   -d cpu: every rank's tensors on the CPU, reduced by MPI_Allreduce (DT_DIST_DEVICE=cpu is set
   before dt_dist_init, so no NCCL communicator starts, GPUs or not). -d cuda: each rank's
   tensors on dt_dist_device() (cuda:(local rank mod GPUs), dt_dist's own rule), reduced by
   ncclAllReduce on the device's stream.

   For each size S (bytes) of count = S/4 elements:
   1. the check: rank r's element i is (i + 13 r) % 61; one dt_all_reduce_ on the tensor
      made from them, then every element is compared with the sum over the ranks (small
      integers: exact in float32). #wrong is the number of elements that differ, over all
      ranks; any wrong element fails the run.
   2. the timing: the same tensor set to zeros (adding zeros costs what adding other
      floats costs, and the values cannot overflow however many calls sum them), WARMUP
      calls, dt_synchronize, MPI_Barrier, then ITERS calls and dt_synchronize (a GPU
      collective is asynchronous: the time covers it to its end), wall clock. time is the
      mean per call of the slowest rank.
   3. on the CPU, the same for MPI_Allreduce alone on the same memory (the "MPI" columns):
      the difference is what dt_all_reduce_ adds per call (its agreement on size, dtype and
      op, one small MPI_Iallreduce; README "More than one GPU").

   algbw = S / time (GB = 1e9 bytes). busbw = algbw * 2(n-1)/n for n ranks: nccl-tests' bus
   bandwidth of an all-reduce (NVIDIA/nccl-tests, doc/PERFORMANCE.md: every element needs n-1
   additions and n assignments, 2(n-1) transfers done over n links, so at best a rank's link
   carries 2(n-1)/n * S bytes); it compares with one link's peak bandwidth (one way) whatever n.
   With one rank busbw is 0 by definition (nothing crosses a link) and dt_all_reduce_ returns
   at once.

   Only rank 0 prints. The run ends with "# check: OK ..." and exit status 0, or
   "# check: FAILED ..." and exit status 1; an error on any rank is printed by that rank (its
   dt_last_error()) and ends it with status 1 (mpirun then stops the others). */
#define _POSIX_C_SOURCE 200112L /* clock_gettime, setenv */
#define DEVTENSOR_IMPLEMENTATION
#include "../devtensor.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_rank;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* An error on this rank: say which call failed and why, and end this rank. */
static void die(const char *what) {
  fprintf(stderr, "bench_allreduce: rank %d: %s failed: %s\n", g_rank, what, dt_last_error());
  exit(1);
}

static void usage(const char *why) {
  if (g_rank == 0)
    fprintf(stderr, "bench_allreduce: %s\nusage: mpirun -np N bench_allreduce [-d cpu|cuda] [-b MIN] [-e MAX] [-f FACTOR] "
                    "[-w WARMUP] [-n ITERS] (sizes in bytes, K/M/G suffixes)\n", why);
  exit(2);
}

/* "64M" -> 67108864; -1 when not a size */
static long long parse_size(const char *s) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (end == s || v < 0) return -1;
  if (*end == 'K' || *end == 'k') { v <<= 10; end++; }
  else if (*end == 'M' || *end == 'm') { v <<= 20; end++; }
  else if (*end == 'G' || *end == 'g') { v <<= 30; end++; }
  return *end ? -1 : v;
}

static void barrier(void) {
#ifdef DEVTENSOR_MPI
  if (dt_dist_world_size() > 1) {
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "bench_allreduce: rank %d: MPI_Barrier failed (error %d)\n", g_rank, rc);
      exit(1);
    }
  }
#endif
}

/* v over all ranks (op MAX or SUM), through dt_all_reduce_ of a CPU tensor */
static double over_ranks(double v, dt_reduce_op op) {
  dt_tensor *t = dt_from_data(&v, dt_shape1(1), DT_F64, dt_cpu());
  if (!t) die("dt_from_data");
  if (dt_all_reduce_(t, op) != DT_OK) die("dt_all_reduce_ (of the timings)");
  v = *(const double *)dt_data_ptr(t);
  dt_release(t);
  return v;
}

/* seconds per call of the slowest rank: warm-up calls, synchronize, barrier, then the timed calls
   to their end; mpi != 0 times MPI_Allreduce alone on t's memory (a CPU tensor) */
static double time_calls(dt_tensor *t, dt_device dev, int warmup, int iters, int mpi) {
  double t0 = 0, t1;
  int k;
  for (k = 0; k < warmup + iters; k++) {
    if (k == warmup) {
      if (dt_synchronize(dev) != DT_OK) die("dt_synchronize");
      barrier();
      t0 = now_s();
    }
    if (mpi) {
#ifdef DEVTENSOR_MPI
      int rc = MPI_Allreduce(MPI_IN_PLACE, dt_data_ptr(t), (int)dt_numel(t), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) {
        fprintf(stderr, "bench_allreduce: rank %d: MPI_Allreduce failed (error %d)\n", g_rank, rc);
        exit(1);
      }
#endif
    } else if (dt_all_reduce_(t, DT_REDUCE_SUM) != DT_OK) {
      die("dt_all_reduce_");
    }
  }
  if (dt_synchronize(dev) != DT_OK) die("dt_synchronize");
  t1 = now_s();
  return over_ranks((t1 - t0) / iters, DT_REDUCE_MAX);
}

int main(int argc, char **argv) {
  const char *devname = "cpu";
  long long min_b = 4, max_b = 64LL << 20, size;
  int factor = 2, warmup = 5, iters = 20, i, n, mpi_cols = 0;
  double best_at = 0, best_busbw = 0, wrong_total = 0;
  float *host;
  dt_device dev;
  char dstr[48];

  for (i = 1; i < argc; i += 2) { /* options come in pairs: -x value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) usage("the all-reduce bandwidth, nccl-tests' table");
    if (!v || a[0] != '-' || strlen(a) != 2) usage("bad arguments");
    switch (a[1]) {
      case 'd': devname = v; break;
      case 'b': min_b = parse_size(v); break;
      case 'e': max_b = parse_size(v); break;
      case 'f': factor = atoi(v); break;
      case 'w': warmup = atoi(v); break;
      case 'n': iters = atoi(v); break;
      default: usage("unknown option");
    }
  }
  if (strcmp(devname, "cpu") != 0 && strcmp(devname, "cuda") != 0) usage("-d is cpu or cuda");
  if (min_b < 4 || max_b < min_b || max_b > (1LL << 32)) usage("sizes: 4 <= MIN <= MAX <= 4G bytes");
  if (factor < 2 || warmup < 0 || iters < 1) usage("-f is 2 or more, -w 0 or more, -n 1 or more");

  /* CPU tensors need no NCCL: keep dt_dist_init from starting it (and from refusing more
     ranks than GPUs on a GPU machine) */
  if (strcmp(devname, "cpu") == 0 && setenv("DT_DIST_DEVICE", "cpu", 1) != 0) {
    fprintf(stderr, "bench_allreduce: setenv failed\n");
    return 1;
  }
  if (dt_dist_init() != DT_OK) die("dt_dist_init");
  g_rank = dt_dist_rank();
  n = dt_dist_world_size();
  dev = dt_cpu();
  if (strcmp(devname, "cuda") == 0) {
    dev = dt_dist_device();
    if (dev.type != DT_CUDA) {
      fprintf(stderr, "bench_allreduce: rank %d: -d cuda, but this rank's device is %s (%s)\n", g_rank,
              dt_device_str(dev, dstr, sizeof dstr),
#ifdef DEVTENSOR_CUDA
              "no GPU found"
#else
              "built without DEVTENSOR_CUDA: make bench-dist-gpu builds the GPU form"
#endif
      );
      dt_dist_finalize();
      return 1;
    }
  }
#ifdef DEVTENSOR_MPI
  mpi_cols = dev.type == DT_CPU;
#endif
  host = (float *)malloc((size_t)(max_b / 4) * sizeof(float));
  if (!host) {
    fprintf(stderr, "bench_allreduce: rank %d: no memory for %lld bytes\n", g_rank, max_b);
    return 1;
  }

  if (g_rank == 0) {
    dt_device_info info;
    printf("# devtensor all-reduce: dt_all_reduce_(t, DT_REDUCE_SUM), float32, in place, on %d rank%s\n", n, n == 1 ? "" : "s");
    if (dev.type == DT_CUDA && dt_device_get_info(dev, &info) == DT_OK)
      printf("# device: each rank on dt_dist_device() (rank 0: %s, %s), through ncclAllReduce\n",
             dt_device_str(dev, dstr, sizeof dstr), info.name);
    else
      printf("# device: cpu on every rank, through MPI_Allreduce\n");
#ifdef DEVTENSOR_MPI
    {
      char lib[MPI_MAX_LIBRARY_VERSION_STRING];
      int len = 0;
      if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
        lib[len < MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING - 1] = 0;
        lib[strcspn(lib, ",\n")] = 0;
        printf("# MPI: %s\n", lib);
      }
    }
#else
    printf("# built without DEVTENSOR_MPI: one rank\n");
#endif
    printf("# %d warm-up and %d timed calls per size; time: the slowest rank's mean per call, from a barrier to the end of the last call\n",
           warmup, iters);
    printf("# algbw = size / time; busbw = algbw * 2(n-1)/n (nccl-tests' all-reduce bus bandwidth, its doc/PERFORMANCE.md); GB = 1e9 bytes\n");
    if (n == 1) printf("# one rank: dt_all_reduce_ has nothing to reduce and returns at once; busbw is 0 by definition (2(n-1)/n = 0)\n");
    if (mpi_cols) printf("# MPI: MPI_Allreduce alone on the same memory (what dt_all_reduce_ adds is the difference)\n");
    printf("#\n#%12s %12s %10s %9s %9s %7s", "size", "count", "time", "algbw", "busbw", "#wrong");
    if (mpi_cols) printf(" %10s %9s %9s", "MPI time", "MPI algbw", "MPI busbw");
    printf("\n#%12s %12s %10s %9s %9s %7s", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "");
    if (mpi_cols) printf(" %10s %9s %9s", "(us)", "(GB/s)", "(GB/s)");
    printf("\n");
    fflush(stdout);
  }

  for (size = min_b; size <= max_b; size = size > max_b / factor ? max_b + 1 : size * factor) {
    int64_t count = size / 4, k;
    double wrong = 0, t_dt, t_mpi = 0, bus = 2.0 * (n - 1) / n;
    dt_tensor *t;
    /* 1. the check */
    for (k = 0; k < count; k++) host[k] = (float)((k + 13 * g_rank) % 61);
    t = dt_from_data(host, dt_shape1(count), DT_F32, dev);
    if (!t) die("dt_from_data");
    if (dt_all_reduce_(t, DT_REDUCE_SUM) != DT_OK) die("dt_all_reduce_ (the checked call)");
    if (dt_to_host(t, host, (size_t)count * sizeof(float)) != DT_OK) die("dt_to_host");
    for (k = 0; k < count; k++) {
      double want = 0;
      int r;
      for (r = 0; r < n; r++) want += (double)((k + 13 * r) % 61);
      if ((double)host[k] != want) {
        if (wrong < 3) /* the first few, by the rank that saw them */
          fprintf(stderr, "bench_allreduce: rank %d: size %lld: element %lld is %g, the sum over the ranks is %g\n", g_rank,
                  size, (long long)k, (double)host[k], want);
        wrong++;
      }
    }
    wrong = over_ranks(wrong, DT_REDUCE_SUM);
    wrong_total += wrong;
    /* 2. devtensor, timed; 3. MPI alone */
    if (dt_fill_(t, 0.0) != DT_OK) die("dt_fill_");
    t_dt = time_calls(t, dev, warmup, iters, 0);
    if (mpi_cols) t_mpi = time_calls(t, dev, warmup, iters, 1);
    dt_release(t);
    if (g_rank == 0) {
      double algbw = (double)count * 4 / t_dt / 1e9;
      printf(" %12lld %12lld %10.2f %9.4f %9.4f %7.0f", (long long)count * 4, (long long)count, t_dt * 1e6, algbw, algbw * bus, wrong);
      if (mpi_cols) {
        double malg = (double)count * 4 / t_mpi / 1e9;
        printf(" %10.2f %9.4f %9.4f", t_mpi * 1e6, malg, malg * bus);
      }
      printf("\n");
      fflush(stdout);
      if (algbw * bus > best_busbw) { best_busbw = algbw * bus; best_at = (double)count * 4; }
    }
  }
  free(host);

  if (g_rank == 0) {
    if (n > 1) printf("# largest busbw: %.4f GB/s (at %.0f bytes)\n", best_busbw, best_at);
    if (wrong_total == 0 && n == 1)
      printf("# check: OK: after one dt_all_reduce_ of every size, every element is the one rank's own value\n");
    else if (wrong_total == 0)
      printf("# check: OK: after one dt_all_reduce_ of every size, every element on every rank equals the sum of the %d ranks' values\n", n);
    else
      printf("# check: FAILED: %.0f elements over all sizes and ranks differ from the sum of the ranks' values (stderr names the first)\n",
             wrong_total);
    fflush(stdout);
  }
  if (dt_dist_finalize() != DT_OK) die("dt_dist_finalize");
  return wrong_total == 0 ? 0 : 1;
}
