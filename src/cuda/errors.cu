constexpr int kMaxDevices = 64;
thread_local char g_err[512];

__attribute__((format(printf, 1, 2))) void set_err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
}

/* Errors that poison the process's CUDA context: a kernel faulted earlier, and
   every later call on that context returns the same error, whichever it is. */
const char *sticky_note(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction: case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc: case cudaErrorAssert: case cudaErrorLaunchTimeout: case cudaErrorECCUncorrectable:
      return " (an earlier GPU kernel faulted asynchronously; the CUDA context is unusable and every later GPU "
             "call fails: restart the process, and run it under compute-sanitizer to find the kernel)";
    default: return "";
  }
}

/* A CUDA runtime failure: "what failed: CUDA's reason". Clears the runtime's
   last-error state so a non-sticky error is not blamed on the next launch. */
dt_status cuda_fail(const char *what, cudaError_t e) {
  (void)cudaGetLastError();
  set_err("%s failed: %s%s", what, cudaGetErrorString(e), sticky_note(e));
  return DT_ERR_BACKEND;
}

dt_status blas_fail(const char *what, cublasStatus_t s) {
  (void)cudaGetLastError();
  set_err("%s failed: %s", what, cublasGetStatusName(s));
  return DT_ERR_BACKEND;
}

/* After a kernel launch: the launch's own error, cleared. */
dt_status launched(const char *kernel) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return DT_OK;
  set_err("kernel launch failed (%s): %s%s", kernel, cudaGetErrorString(e), sticky_note(e));
  return DT_ERR_BACKEND;
}

/* dt__dtype_str, dt__dtype_bytes and dt__bytes_str come from devtensor.h,
   shared with the core (whose own functions may be static in a user's file). */
