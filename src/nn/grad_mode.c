/* torch.no_grad() per thread (dt__no_grad, in src/autograd/graph.c): with grad disabled dt_forward
   keeps nothing for a backward pass (no layer holds its input), dt_backward refuses and no
   operation records for autograd. */

DTDEF int dt_set_grad_enabled(int enabled) {
  int prev = !dt__no_grad;
  dt__no_grad = !enabled;
  return prev;
}
