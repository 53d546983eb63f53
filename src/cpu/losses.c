/* Losses: nll_loss's per-row values (the core checks the labels first and reduces). */

/* y (n,) = -logp[i, target[i]] of logp (n, c); a label outside [0, c) gives NaN (never read with) */
static dt_status dt__cpu_nll_loss(int dev, dt_dtype t, int64_t n, int64_t c, const void *logp, const int64_t *target, void *y) {
  int64_t i;
  (void)dev;
  for (i = 0; i < n; i++) {
    int ok = target[i] >= 0 && target[i] < c;
    if (t == DT_F32) ((float *)y)[i] = ok ? -((const float *)logp)[i * c + target[i]] : NAN;
    else if (t == DT_F64) ((double *)y)[i] = ok ? -((const double *)logp)[i * c + target[i]] : NAN;
    else return DT_ERR_DTYPE;
  }
  return DT_OK;
}
