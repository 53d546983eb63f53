/* torch.set_float32_matmul_precision: one setting for the process, handed to every backend
   that computes F32 matmuls more than one way (cuBLAS: CUBLAS_COMPUTE_32F, _FAST_TF32,
   _FAST_16BF). */
static volatile int dt__f32_precision; /* 0 highest, 1 high, 2 medium */

DTDEF dt_status dt_set_float32_matmul_precision(const char *precision) {
  static const char *const names[3] = {"highest", "high", "medium"};
  int i;
  if (!precision) return dt__fail(DT_ERR_INVALID_ARGUMENT, "dt_set_float32_matmul_precision: precision is NULL");
  for (i = 0; i < 3; i++)
    if (strcmp(precision, names[i]) == 0) break;
  if (i == 3)
    return dt__fail(DT_ERR_INVALID_ARGUMENT,
                    "dt_set_float32_matmul_precision: expected \"highest\", \"high\" or \"medium\", got \"%.64s\"", precision);
  DT__ATOMIC_STORE(&dt__f32_precision, i);
#ifdef DEVTENSOR_CUDA
  if (dt__cuda_backend()->set_matmul_precision) dt__cuda_backend()->set_matmul_precision(i);
#endif
  return DT_OK;
}

DTDEF const char *dt_get_float32_matmul_precision(void) {
  int i = DT__ATOMIC_LOAD(&dt__f32_precision);
  return i == 2 ? "medium" : i == 1 ? "high" : "highest";
}
