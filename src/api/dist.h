/* ---- api: distributed (data parallel over ranks; NCCL for GPU tensors, MPI for
   launching, bootstrapping NCCL and CPU tensors) ----
   Build with DEVTENSOR_MPI (compile with mpicc, run under mpirun -np N) for more than one
   rank, and DEVTENSOR_NCCL with DEVTENSOR_CUDA (compile devtensor_cuda.cu with
   -DDEVTENSOR_NCCL, link -lnccl) for GPU tensors across ranks. Without DEVTENSOR_MPI the
   world is this one process: dt_dist_init succeeds as rank 0 of 1 (and reports
   DT_ERR_UNSUPPORTED when the environment says the process is one of several ranks:
   WORLD_SIZE, OMPI_COMM_WORLD_SIZE or PMI_SIZE above 1), and a collective over one rank
   is the identity, so the same program runs unchanged. Every rank calls each collective
   in the same order with the same element count, dtype and op (and root); when they
   disagree every rank gets DT_ERR_SHAPE, and a rank that does not arrive within
   DT_DIST_TIMEOUT seconds (environment; default 300) makes the others fail with
   DT_ERR_BACKEND instead of hanging. */
typedef enum dt_reduce_op { DT_REDUCE_SUM = 0, DT_REDUCE_AVG, DT_REDUCE_MAX, DT_REDUCE_MIN } dt_reduce_op;
DTDEF dt_status dt_dist_init(void);          /* under mpirun (or torchrun-style RANK, WORLD_SIZE, LOCAL_RANK) */
DTDEF int       dt_dist_rank(void);          /* 0 before dt_dist_init */
DTDEF int       dt_dist_world_size(void);    /* 1 before dt_dist_init */
DTDEF dt_device dt_dist_device(void);        /* this rank's GPU (local rank modulo the GPUs), or the CPU */
DTDEF dt_status dt_all_reduce_(dt_tensor *t, dt_reduce_op op); /* in place, every rank; AVG: float dtypes only */
DTDEF dt_status dt_broadcast_(dt_tensor *t, int root);         /* root's values into every rank's t */
DTDEF dt_status dt_dist_finalize(void);      /* frees the communicators; MPI_Finalize if dt_dist_init started MPI (MPI cannot start twice) */

#ifdef __cplusplus
}
#endif

#endif /* DEVTENSOR_H */
