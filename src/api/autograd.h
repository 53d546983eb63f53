
/* ---- api: autograd ---- */

/* Reverse-mode automatic differentiation over tensor operations, as torch.autograd. With grad
   mode on (dt_set_grad_enabled), an operation with an input that requires grad records how it
   made its result, which then requires grad itself; dt_autograd_backward walks that record from
   a result to the leaves and adds each leaf's gradient (summed over every path, reduced over
   broadcast dims, in the leaf's dtype and on its device) into dt_grad(leaf). The backward frees
   what the operations saved (PyTorch's retain_graph=False): a second backward through the same
   results is refused. The record lives as long as the last result that reaches it. A tensor that
   an operation saved and that is then changed in place (dt_fill_, dt_axpy_, dt_copy_, any `_`
   function) makes the backward refuse; a leaf that requires grad cannot be changed in place
   while grad mode is on. The modules (dt_forward, dt_backward) keep their own backward. */
DTDEF dt_status  dt_requires_grad_(dt_tensor *t, int requires);  /* t.requires_grad_(); leaves only, float32/64 */
DTDEF int        dt_requires_grad(const dt_tensor *t);           /* t.requires_grad */
DTDEF dt_tensor *dt_grad(dt_tensor *t);                          /* borrowed: t.grad; NULL until a backward reaches t; replaced by the next backward or dt_zero_grad_ */
DTDEF dt_status  dt_autograd_backward(dt_tensor *out, const dt_tensor *grad_out); /* torch.autograd.backward(out, grad_out); grad_out NULL: out must have one element, seed 1 */
DTDEF dt_tensor *dt_detach(const dt_tensor *t);                  /* t.detach(): a new reference to the same memory, no history, requires_grad 0 */
DTDEF dt_status  dt_zero_grad_(dt_tensor *t);                    /* t.grad = None */
DTDEF int        dt_is_leaf(const dt_tensor *t);                 /* t.is_leaf: not a result of recorded operations */
