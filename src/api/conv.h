/* ---- api: convolution and pooling (torch.nn.functional) ----
   Batched images x: (n, c, h, w), F32 or F64, every tensor of a call on one device and of one
   dtype. Output sizes as PyTorch's (ceil_mode off): oh = (h + 2 ph - dh (kh - 1) - 1) / sh + 1,
   and so ow; an input smaller than the kernel (oh or ow below 1) is refused, as are c, h or w
   of 0 (n may be 0). Each backward takes what its forward took and the gradient of the loss
   with respect to its output, grad_output, shaped like that output, and returns the gradients
   of its inputs; the backwards are separate calls so that autograd and modules can use them. */

/* F.conv2d(x, w, b, stride, padding): square stride and padding, no dilation, groups 1.
   w: (oc, c, kh, kw), b: (oc,) or NULL (no bias) -> (n, oc, oh, ow) */
DTDEF dt_tensor *dt_f_conv2d(const dt_tensor *x, const dt_tensor *w, const dt_tensor *b, int stride, int padding);
/* F.conv2d(x, w, b, (sh, sw), (ph, pw), (dh, dw), groups): w: (oc, c / groups, kh, kw); groups
   divides c and oc; stride and dilation >= 1, padding >= 0. */
DTDEF dt_tensor *dt_f_conv2d_ex(const dt_tensor *x, const dt_tensor *w, const dt_tensor *b, int sh, int sw, int ph, int pw,
                                int dh, int dw, int groups);
/* The gradients of dt_f_conv2d_ex(x, w, b, ...) given grad_output (n, oc, oh, ow): *grad_input
   (like x), *grad_weight (like w), *grad_bias ((oc,)); pass NULL for one not wanted. New tensors
   the caller releases; on failure none is made and the pointers are left as they were. */
DTDEF dt_status  dt_f_conv2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *w, int sh, int sw,
                                      int ph, int pw, int dh, int dw, int groups, dt_tensor **grad_input,
                                      dt_tensor **grad_weight, dt_tensor **grad_bias);

/* F.max_pool2d(x, kernel_size, stride, padding): stride 0 means kernel_size (PyTorch's default);
   the padding (at most half the kernel) is -inf; NaN is the max of any window that holds one. */
DTDEF dt_tensor *dt_f_max_pool2d(const dt_tensor *x, int kernel_size, int stride, int padding);
/* F.max_pool2d(x, (kh, kw), (sh, sw), (ph, pw), return_indices=True): *indices (NULL: not wanted)
   gets an I64 tensor shaped like the output: where in its (h, w) plane each max is (row * w +
   column): the first max of its window, or the last NaN. sh, sw 0: kh, kw. */
DTDEF dt_tensor *dt_f_max_pool2d_ex(const dt_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, dt_tensor **indices);
/* grad_input (like x): each grad_output entry goes to the position its index names; an index
   outside its window is never followed. */
DTDEF dt_tensor *dt_f_max_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *indices, int kh,
                                          int kw, int sh, int sw, int ph, int pw);

/* F.avg_pool2d(x, kernel_size, stride, padding) with count_include_pad (PyTorch's default): each
   window's sum over the kernel's size, but for the padding beyond h + ph, w + pw. stride 0: kernel_size. */
DTDEF dt_tensor *dt_f_avg_pool2d(const dt_tensor *x, int kernel_size, int stride, int padding);
DTDEF dt_tensor *dt_f_avg_pool2d_ex(const dt_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw);
DTDEF dt_tensor *dt_f_avg_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x, int kh, int kw, int sh, int sw,
                                          int ph, int pw);

/* F.adaptive_avg_pool2d(x, (out_h, out_w)), out_h, out_w >= 1: output row i averages input rows
   floor(i h / out_h) to ceil((i + 1) h / out_h) - 1, and so the columns. */
DTDEF dt_tensor *dt_f_adaptive_avg_pool2d(const dt_tensor *x, int64_t out_h, int64_t out_w);
DTDEF dt_tensor *dt_f_adaptive_avg_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x);

/* The modules (torch.nn's Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten, Sigmoid,
   Tanh): modules of dt_module_new's kind, so they go back with dt_autograd_backward (not
   dt_backward) and every dt_module_* function works on them. A convolution's parameters are
   "weight" (out, in / groups, kh, kw) and "bias" (out,), initialised as PyTorch's: uniform in
   +-1/sqrt(fan_in), fan_in = in / groups * kh * kw (kaiming_uniform with a = sqrt(5)), drawn
   from the generator dt_manual_seed seeds; in_channels 0: LazyConv2d, the parameters made at the
   first forward from its input's channels, on its device in its dtype. Pooling: stride 0 means
   kernel_size; padding at most half the kernel. */
DTDEF dt_module *dt_conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, int stride, int padding); /* bias on */
DTDEF dt_module *dt_conv2d_ex(int64_t in_channels, int64_t out_channels, int kh, int kw, int sh, int sw, int ph, int pw,
                              int groups, int bias);
DTDEF dt_module *dt_max_pool2d(int kernel_size, int stride, int padding);
DTDEF dt_module *dt_avg_pool2d(int kernel_size, int stride, int padding);   /* count_include_pad */
DTDEF dt_module *dt_adaptive_avg_pool2d(int out_h, int out_w);
DTDEF dt_module *dt_flatten_layer(void);  /* nn.Flatten(): (n, ...) -> (n, rest) */
DTDEF dt_module *dt_sigmoid_layer(void);  /* nn.Sigmoid() */
DTDEF dt_module *dt_tanh_layer(void);     /* nn.Tanh() */
