
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
DTDEF dt_status  dt_requires_grad_(dt_tensor *t, int on);  /* t.requires_grad_(); leaves only, float dtypes (float16, bfloat16 too) */
DTDEF int        dt_requires_grad(const dt_tensor *t);           /* t.requires_grad */
DTDEF dt_tensor *dt_grad(dt_tensor *t);                          /* borrowed: t.grad; NULL until a backward reaches t; a later backward adds into it in place (into a new tensor where another reference holds it); dt_zero_grad_ releases it */
DTDEF dt_status  dt_autograd_backward(dt_tensor *out, const dt_tensor *grad_out); /* torch.autograd.backward(out, grad_out); grad_out NULL: out must have one element, seed 1 */
DTDEF dt_tensor *dt_detach(const dt_tensor *t);                  /* t.detach(): a new reference to the same memory, no history, requires_grad 0 */
DTDEF dt_status  dt_zero_grad_(dt_tensor *t);                    /* t.grad = None */
DTDEF int        dt_is_leaf(const dt_tensor *t);                 /* t.is_leaf: not a result of recorded operations */

/* Layers a user writes (an nn.Module subclass): dt_module_new makes a module whose dt_forward calls
   forward(self, x, user), written with any recorded operations and dt_forward of its children;
   its parameters (leaves that require grad, on one device in one dtype with the rest of the
   network) and children are registered by name, and name the state_dict as PyTorch's
   ("features.0.weight": the module's own parameters first, in the order added, then each child's),
   so that dt_module_save / dt_module_load, dt_module_to, dt_module_param / dt_module_grad and the
   optimizers work on it as on the built-in modules. It goes back with dt_autograd_backward (not
   dt_backward). Names: 1..DT_MODULE_NAME_MAX characters without '.', unique within a module. */
#define DT_MODULE_NAME_MAX 64
typedef dt_tensor *(*dt_forward_fn)(dt_module *self, const dt_tensor *x, void *user);
DTDEF dt_module *dt_module_new(const char *name, dt_forward_fn forward, void *user, void (*free_user)(void *user)); /* name: the class name print(net) shows (NULL: "Module"); free_user(user) when the module is freed; may be NULL */
DTDEF dt_status  dt_module_add_param(dt_module *m, const char *name, dt_tensor *t);   /* registers t (one more reference); makes it require grad */
DTDEF dt_status  dt_module_add_child(dt_module *m, const char *name, dt_module *child); /* takes ownership, also on failure */
DTDEF dt_tensor *dt_module_get_param(dt_module *m, const char *name);                 /* borrowed: self.weight inside forward; "child.weight" too */
DTDEF dt_module *dt_module_get_child(dt_module *m, const char *name);                 /* borrowed */
DTDEF dt_status  dt_module_train(dt_module *m, int training);                          /* net.train() / net.eval(), for m and every module under it */
DTDEF int        dt_module_is_training(const dt_module *m);                            /* self.training */

/* Optimizers on any tensors (torch.optim.SGD([w, b], ...)): the same update rules and kernels as
   dt_sgd / dt_adam / dt_adamw on a module, over float leaves given once each (the optimizer holds
   a reference to each). A step uses each dt_grad and skips a parameter whose gradient is NULL,
   as torch.optim does; dt_optimizer_zero_grad sets the gradients to NULL (set_to_none). */
DTDEF dt_optimizer *dt_sgd_tensors(dt_tensor *const *params, int n, double lr, double momentum, double weight_decay);
DTDEF dt_optimizer *dt_adam_tensors(dt_tensor *const *params, int n, double lr, double beta1, double beta2, double eps, double weight_decay);
DTDEF dt_optimizer *dt_adamw_tensors(dt_tensor *const *params, int n, double lr, double beta1, double beta2, double eps, double weight_decay);
/* torch.nn.utils.clip_grad_norm_(params, max_norm): the 2-norm of all the gradients together (in
   float64) into *total_norm (may be NULL); above max_norm (finite, > 0) each gradient is scaled in
   place by max_norm / (total + 1e-6). Parameters without a gradient are skipped. */
DTDEF dt_status     dt_clip_grad_norm_(dt_tensor *const *params, int n, double max_norm, double *total_norm);
