/* torch.no_grad() per thread: with grad disabled dt_forward keeps nothing for a backward pass
   (no layer holds its input) and dt_backward refuses. */

static DT__TLS int dt__no_grad; /* 0 (the default): grad enabled */

DTDEF int dt_set_grad_enabled(int enabled) {
  int prev = !dt__no_grad;
  dt__no_grad = !enabled;
  return prev;
}
