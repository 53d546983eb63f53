/* ---- api: dropout, normalisation, embedding (torch.nn.functional and torch.nn) ----
   Each is written with the recorded operations, so it runs wherever its input is (the CPU or a
   GPU) and goes back with dt_autograd_backward; every tensor of a call on one device, the float
   ones of one dtype (F32, F64, F16 or BF16). */

/* F.dropout(x, p, training): inverted dropout, each element kept with probability 1 - p and then
   scaled by 1 / (1 - p); the mask comes from one draw of the generator dt_manual_seed seeds (the
   same elements drop on the CPU and on a GPU for the same seed and draw). training 0 or p 0: x
   itself (a new reference, no draw); p 1: zeros. p outside [0, 1] is refused. The backward is the
   same mask times the same scale. */
DTDEF dt_tensor *dt_f_dropout(const dt_tensor *x, double p, int training);

/* F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps): x (n, c),
   (n, c, l) or (n, c, h, w), normalised per channel c. training: by the batch's mean and biased
   variance; running_mean and running_var (c,), when given, are updated in place to
   (1 - momentum) r + momentum s, with the unbiased variance for running_var (as PyTorch); one
   value per channel (n * h * w == 1) is refused; none (an empty batch) gives an empty result and
   leaves running_* as they are (as PyTorch). Not training: by running_mean and running_var
   (both needed). weight, bias (c,) or NULL (no affine). Returns x's shape. */
DTDEF dt_tensor *dt_f_batch_norm(const dt_tensor *x, dt_tensor *running_mean, dt_tensor *running_var, const dt_tensor *weight,
                                 const dt_tensor *bias, int training, double momentum, double eps);

/* F.layer_norm(x, (normalized_shape,), weight, bias, eps): x (..., d) with d == normalized_shape,
   normalised over its last dim by its mean and biased variance; weight, bias (d,) or NULL. Under
   autocast (dt_set_autocast on x's device type) half tensors are cast up and the result is F32,
   as torch.autocast's layer_norm. */
DTDEF dt_tensor *dt_f_layer_norm(const dt_tensor *x, int64_t normalized_shape, const dt_tensor *weight, const dt_tensor *bias,
                                 double eps);

/* F.embedding(idx, weight): idx I64 of any shape (at most 7 dims), each in [0, num), weight
   (num, dim) -> (*idx.shape, dim), weight's rows (dt_index_select); the gradient flows to weight. */
DTDEF dt_tensor *dt_f_embedding(const dt_tensor *idx, const dt_tensor *weight);

/* The modules (torch.nn's Dropout, BatchNorm1d/BatchNorm2d, LayerNorm, Embedding, GELU), of
   dt_module_new's kind. dt_dropout: training mode (dt_module_train(m, 1), the default) drops,
   evaluation passes x through. dt_batch_norm(num_features): BatchNorm1d on (n, c) or (n, c, l),
   BatchNorm2d on (n, c, h, w); eps 1e-5, momentum 0.1; parameters "weight" (ones) and "bias"
   (zeros); buffers "running_mean" (zeros), "running_var" (ones) and "num_batches_tracked" (I64,
   0-d, 0), which save, load and move with the module; training normalises by the batch and
   updates the buffers, evaluation normalises by the running statistics; num_features 0: lazy,
   made at the first forward from x's channels, on its device in its dtype. dt_layer_norm(d):
   over the last dim, eps 1e-5, "weight" ones and "bias" zeros. dt_embedding(num, dim): "weight"
   (num, dim) drawn from N(0, 1) (the generator dt_manual_seed seeds), input I64 indices. */
DTDEF dt_module *dt_dropout(double p);
DTDEF dt_module *dt_batch_norm(int64_t num_features);
DTDEF dt_module *dt_layer_norm(int64_t normalized_shape);
DTDEF dt_module *dt_embedding(int64_t num_embeddings, int64_t embedding_dim);
DTDEF dt_module *dt_gelu_layer(void);     /* nn.GELU() */

/* self.register_buffer(name, t): state of a module made by dt_module_new that is no parameter (no
   gradient, the optimizers skip it) but joins its state_dict (after its own parameters, named as
   PyTorch's: "bn.running_mean"), dt_module_save / dt_module_load, dt_module_to and
   dt_module_to_dtype (an integer buffer keeps its dtype). Holds one more reference to t, which
   must not require grad. Names as parameters', unique among m's parameters, buffers and children. */
DTDEF dt_status  dt_module_add_buffer(dt_module *m, const char *name, dt_tensor *t);
DTDEF dt_tensor *dt_module_get_buffer(dt_module *m, const char *name);  /* borrowed; "child.name" too */
