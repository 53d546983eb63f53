/* Losses: nll_loss's per-row values (the core reduces them). The labels are checked as
   cross_entropy's (k_check_labels, the device's label record, tag 2: reported as dt_nll_loss's). */

/* y (n,) = -logp[i, target[i]] of logp (n, c); a label outside [0, c) is never read with: NaN. T:
   float, double or a half type (half.cu). */
template <typename T>
struct NllRow {
  const T *logp; const int64_t *target; int64_t c; T *y;
  template <typename I> __device__ void operator()(I i) const {
    int64_t lab = target[i];
    y[i] = sto<T>(lab >= 0 && lab < c ? -ld(logp[(int64_t)i * c + lab]) : (typename Calc<T>::type)CUDART_NAN);
  }
};

dt_status cu_nll_loss(int dev, dt_dtype t, int64_t n, int64_t c, const void *logp, const int64_t *target, void *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (n <= 0) return DT_OK;
  int64_t *rec;
  dt_status rc = label_record(dev, *in.s, &rec);
  if (rc != DT_OK) return rc;
  DT_LAUNCH_COOP(1, small_block(n), in.s->stream, k_check_labels)(target, n, c, 2, rec);
  if ((rc = launched("nll_loss (labels)")) != DT_OK) return rc;
  in.s->label_pending.store(true, std::memory_order_release);
  return by_float_half(t, "nll_loss", [&](auto z) {
    using T = decltype(z);
    return run_map("nll_loss", in.s->stream, n, NllRow<T>{static_cast<const T *>(logp), target, c, static_cast<T *>(y)});
  });
}
