typedef struct dt_module dt_module;
DTDEF dt_module *dt_linear(int64_t in_features, int64_t out_features); /* y = x W^T + b; in_features 0: lazy */
/* A lazy layer takes in_features from its first input's columns; a first input of 0 columns is
   refused (DT_ERR_SHAPE) and the layer stays lazy (PyTorch's LazyLinear leaves its parameters
   uninitialised then; here the bias bound 1/sqrt(0) would make NaN). */
DTDEF dt_module *dt_relu_layer(void);
DTDEF dt_module *dt_sequential(void);
DTDEF dt_status  dt_sequential_add(dt_module *seq, dt_module *layer);   /* takes ownership, also on failure */
#define DT_MODULE_MAX_DEPTH 64 /* sequentials nest at most this deep (the outermost counts 1): deeper, dt_sequential_add refuses */
DTDEF dt_module *dt_sequential_get(dt_module *seq, int i);              /* net[i], borrowed */
DTDEF int        dt_sequential_len(const dt_module *seq);
DTDEF dt_status  dt_module_to(dt_module *m, dt_device d);               /* params and grads; all or nothing */
DTDEF dt_status  dt_module_to_dtype(dt_module *m, dt_dtype t);          /* F32, F64, F16, BF16: net.double(), net.half(), net.bfloat16() */
DTDEF dt_device  dt_module_device(const dt_module *m);
DTDEF dt_tensor *dt_forward(dt_module *m, const dt_tensor *x);          /* x: (n, in) on the module's device */
DTDEF dt_tensor *dt_linear_weight(dt_module *m);                        /* borrowed: net[0].weight, (out, in) */
DTDEF dt_tensor *dt_linear_bias(dt_module *m);                          /* borrowed: (out,) */
DTDEF int        dt_module_num_params(const dt_module *m);
DTDEF dt_tensor *dt_module_param(dt_module *m, int i, const char **name); /* borrowed; names as state_dict: "0.weight" */
DTDEF dt_tensor *dt_module_grad(dt_module *m, int i);                   /* borrowed */
DTDEF void       dt_module_free(dt_module *m);
DTDEF dt_status  dt_module_print(const dt_module *m);                   /* print(net): PyTorch's text, stdout, then newline */
DTDEF dt_status  dt_module_fprint(FILE *f, const dt_module *m);         /* f, then newline */
DTDEF int        dt_module_snprint(char *buf, size_t n, const dt_module *m); /* snprintf's contract; -1 on error */

DTDEF dt_tensor *dt_mse_loss(const dt_tensor *pred, const dt_tensor *target);      /* mean((pred - target)^2), 0-d */
DTDEF dt_tensor *dt_mse_loss_grad(const dt_tensor *pred, const dt_tensor *target); /* 2 (pred - target) / numel */
DTDEF dt_status  dt_zero_grad(dt_module *m);
DTDEF dt_tensor *dt_backward(dt_module *m, const dt_tensor *grad_output); /* after dt_forward; accumulates grads; returns grad wrt input */
DTDEF dt_status  dt_backward_params(dt_module *m, const dt_tensor *grad_output); /* dt_backward's grads, bit for bit, but no grad wrt input (x needs none): for training */
DTDEF dt_status  dt_sgd_step(dt_module *m, double lr);

DTDEF dt_status  dt_module_save(const dt_module *m, const char *path);   /* safetensors */
DTDEF dt_status  dt_module_load(dt_module *m, const char *path);         /* into params on the module's device */

/* The chapter's Trainer(max_epochs, num_gpus): keeps min(num_gpus, dt_num_gpus()) GPUs,
   moves the model and each minibatch to the first, sums the loss (and for classification
   the right answers) on the device and reads them once per epoch.
   Regression: loss_fn DT_LOSS_MSE, y (n, out) of X's dtype. Classification: loss_fn
   DT_LOSS_CROSS_ENTROPY, the model's output (n, classes) are logits, y holds int64 class
   labels (n,). X is (n, ...): minibatches along dim 0, e.g. (n, 1, 28, 28) images for a CNN.
   The model is put in training mode (dt_module_train(m, 1)) for each epoch and in evaluation
   mode (0) while evaluating, and left as it was when the call returns. A network of built-in
   linear and ReLU layers trains through their fused backward; any other (convolutions, modules
   made by dt_module_new) through autograd: dt_zero_grad, dt_forward, the loss,
   dt_autograd_backward, then the step. X on tr->device: minibatches are gathered there (dt_index_select of a
   shuffled order); X on the CPU while training on a GPU: gathered on the host, and the
   next minibatch is gathered and copied while the current step computes. */
typedef enum dt_loss_fn { DT_LOSS_MSE = 0, DT_LOSS_CROSS_ENTROPY = 1 } dt_loss_fn;
typedef struct dt_epoch_result {
  int    epoch;                  /* 1, 2, ... */
  double loss;                   /* mean training loss over the epoch (each minibatch before its step) */
  double train_acc;              /* fraction of the training examples classified right, likewise; NaN for MSE */
  double val_loss, val_acc;      /* on the validation set after the epoch; NaN without one (val_acc: also for MSE) */
  double seconds;                /* wall-clock time of the epoch, its validation included */
} dt_epoch_result;
typedef struct dt_trainer {
  int       max_epochs;
  int       num_gpus;            /* GPUs kept: min(asked, available) */
  dt_device gpus[8];
  dt_device device;              /* where training runs: gpus[0], or the CPU */
  int64_t   batch_size;          /* default 32 */
  double    lr;                  /* default 0.03 */
  int       quiet;               /* 0: one progress line per epoch on stdout */
  int       epochs_run;
  double    epoch_loss[64];      /* mean training loss of each epoch (the first 64) */
  double    last_loss;           /* mean training loss of the last epoch */
  /* classification, an optimizer, validation, per-epoch results */
  dt_loss_fn loss_fn;            /* DT_LOSS_MSE (default) or DT_LOSS_CROSS_ENTROPY */
  struct dt_optimizer *optimizer;/* borrowed, made on the same module (dt_sgd, dt_adam, ...); NULL: dt_sgd_step(m, lr) */
  void (*on_epoch)(const struct dt_trainer *tr, const dt_epoch_result *r, void *user); /* after each epoch; may be NULL */
  void     *user;                /* handed to on_epoch */
  dt_epoch_result last;          /* the last epoch's results */
  dt_epoch_result epochs[64];    /* each epoch's results (the first 64) */
  double    gradient_clip_val;   /* > 0: the gradients' total 2-norm clipped to it before each step (dt_clip_grad_norm_); 0 (default): off */
  dt_dtype  autocast;            /* DT_F32 (default): off; DT_BF16, DT_F16: each step's forward and loss, and evaluation, under
                                    dt_set_autocast(tr->device's type, autocast), through autograd; DT_F16 with a grad scaler */
  struct dt_grad_scaler *grad_scaler; /* autocast DT_F16: the scaler the first fit makes (init_scale 65536) and later ones
                                    go on with; dt_trainer_free frees it */
  int       cuda_graph;          /* 1: the first full minibatch runs eagerly (warm-up), the second's step is captured into a
                                    graph (dt_graph_begin) and replayed for it and every later full minibatch of the fit, each
                                    copied into the graph's input first; a smaller last one runs eagerly. With Adam or AdamW,
                                    gradient_clip_val > 0 or autocast DT_F16 the graph holds the forward and backward and the
                                    update runs eagerly after each replay. Dropout draws afresh at each replay. Refused with
                                    data parallel. 0 (default): off */
} dt_trainer;
DTDEF dt_status  dt_trainer_init(dt_trainer *tr, int max_epochs, int num_gpus);
DTDEF dt_status  dt_trainer_prepare_model(dt_trainer *tr, dt_module *m);
DTDEF dt_tensor *dt_trainer_prepare_batch(dt_trainer *tr, const dt_tensor *batch); /* on tr->device */
DTDEF dt_status  dt_trainer_fit(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y); /* no validation set */
DTDEF dt_status  dt_trainer_fit_val(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                    const dt_tensor *X_val, const dt_tensor *y_val); /* X_val, y_val: NULL for none */
DTDEF dt_status  dt_trainer_evaluate(dt_trainer *tr, dt_module *m, const dt_tensor *X, const dt_tensor *y,
                                     double *loss, double *accuracy); /* no grad, on tr->device, one read; either out may be NULL */
DTDEF void       dt_trainer_free(dt_trainer *tr);

/* ---- api: optimizers (and torch.no_grad) ---- */

/* Whether dt_forward keeps what a backward pass needs, for the calling thread: 1 (the default)
   yes, 0 no (torch.no_grad(): inference holds no activations, dt_backward refuses). Returns the
   previous setting. */
DTDEF int dt_set_grad_enabled(int enabled);

/* torch.optim's SGD (dampening 0, no Nesterov), Adam (L2 weight decay added to the gradient,
   no amsgrad) and AdamW (decoupled decay: p *= 1 - lr * weight_decay), same update rules. The
   optimizer borrows m (which must outlive it) and takes m's parameters at each step, in
   state_dict order, a lazy layer's once it has them. Its state (momentum buffers, exp_avg,
   exp_avg_sq) is made at the first step on the parameters' device, and follows dt_module_to
   and dt_module_to_dtype: a step moves (or converts) it to where the parameters are first. A
   step is all or nothing against failures of memory: it makes or moves every state first. */
typedef struct dt_optimizer dt_optimizer;
DTDEF dt_optimizer *dt_sgd(dt_module *m, double lr, double momentum, double weight_decay);
DTDEF dt_optimizer *dt_adam(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay);
DTDEF dt_optimizer *dt_adamw(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay);
DTDEF dt_status     dt_optimizer_step(dt_optimizer *o);
DTDEF dt_status     dt_optimizer_zero_grad(dt_optimizer *o);  /* dt_zero_grad of its module */
DTDEF void          dt_optimizer_free(dt_optimizer *o);

/* torch.amp.GradScaler (growth_factor 2, backoff_factor 0.5, growth_interval 2000, PyTorch's
   defaults): scale multiplies the loss by the scale (recorded); step divides the optimizer's
   parameters' gradients by it in place and, when any holds an inf or a NaN, skips the optimizer's
   step (the gradients left as they were); update halves the scale after a skipped step and
   doubles it after 2000 good steps in a row, and needs a step since the last update. */
typedef struct dt_grad_scaler dt_grad_scaler;
DTDEF dt_grad_scaler *dt_grad_scaler_new(double init_scale);                 /* init_scale > 0; PyTorch's default 65536 */
DTDEF dt_tensor      *dt_grad_scaler_scale(dt_grad_scaler *s, const dt_tensor *loss);
DTDEF dt_status       dt_grad_scaler_step(dt_grad_scaler *s, dt_optimizer *o);
DTDEF dt_status       dt_grad_scaler_update(dt_grad_scaler *s);
DTDEF double          dt_grad_scaler_get_scale(const dt_grad_scaler *s);     /* scaler.get_scale() */
DTDEF void            dt_grad_scaler_free(dt_grad_scaler *s);
