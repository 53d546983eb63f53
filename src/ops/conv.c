/* dt_f_conv2d and its backward, and 2-d max, average and adaptive average pooling with
   theirs. A convolution is im2col and one gemm on any backend: a block of images is unfolded
   into col (c kh kw, images, oh ow) in one scratch tensor on the device (at most
   DT__CONV_COL_BYTES, one image at least), so each group's weights (oc / groups,
   c kh kw / groups) multiply its rows of col for every image of the block at once, the groups
   in one batched gemm; the product, (oc, images, oh ow), goes to y's layout with the bias in one
   strided pass. The weight gradient is one gemm per block (beta 1 after the first) against gy's
   block in that layout, the input gradient a gemm into col that col2im folds back (or, at unit
   strides, a convolution of gy: dt__conv_gx_as_conv), the bias gradient two sums. A backend
   with a convolution library (the CUDA backend built with DEVTENSOR_CUDNN: cuDNN) computes the
   forward and the input and weight gradients through it instead, wherever it takes the case; the
   bias stays a separate add, its gradient the same sums. */

#define DT__CONV_COL_BYTES ((int64_t)32 << 20)

/* x: a 4-d F32/F64 tensor (n, c, h, w) with c, h and w above 0 */
static dt_status dt__check_images(const char *op, const char *name, const dt_tensor *x) {
  char sb[200];
  if (x->shape.ndim != 4)
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s to be 4-d (n, c, h, w), got shape %s", op, name,
                    dt__shape_str(&x->shape, sb, sizeof sb));
  if (x->shape.dims[1] == 0 || x->shape.dims[2] == 0 || x->shape.dims[3] == 0)
    return dt__fail(DT_ERR_SHAPE, "%s: expected %s to have non-zero channels, height and width, got shape %s", op, name,
                    dt__shape_str(&x->shape, sb, sizeof sb));
  return DT_OK;
}

/* one output size, (in + 2 p - d (k - 1) - 1) / s + 1; -1 when below 1 (the input smaller than the kernel) */
static int64_t dt__conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  /* in is a tensor's dim, p and d ints, k a dim: compared in double first, so that d (k - 1) cannot wrap */
  if ((double)d * (double)(k - 1) >= (double)in + 2.0 * (double)p) return -1;
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* The checks every convolution call makes (gy: NULL for the forward), in their order: NULLs,
   devices, dtypes, the int arguments, shapes. Fills g. */
static dt_status dt__conv_check(const char *op, const dt_tensor *gy, const dt_tensor *x, const dt_tensor *w, const dt_tensor *b,
                                int sh, int sw, int ph, int pw, int dh, int dw, int groups, dt__conv2d *g) {
  char sx[200], sw_[200], sy[200];
  int64_t kh, kw;
  if (dt__check_tensor(op, "x", x) != DT_OK || dt__check_tensor(op, "w", w) != DT_OK) return dt_last_status();
  if (dt__same_device(op, "x", x, "w", w) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (b && dt__same_device(op, "x", x, "b", b) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (gy && dt__same_device(op, "x", x, "grad_output", gy) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (dt__float_only(op, "x", x) != DT_OK || dt__same_dtype(op, "x", x, "w", w) != DT_OK) return DT_ERR_DTYPE;
  if (b && dt__same_dtype(op, "x", x, "b", b) != DT_OK) return DT_ERR_DTYPE;
  if (gy && dt__same_dtype(op, "x", x, "grad_output", gy) != DT_OK) return DT_ERR_DTYPE;
  if (sh < 1 || sw < 1)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: stride must be at least 1, got (%d, %d)", op, sh, sw);
  if (ph < 0 || pw < 0)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: padding must be non-negative, got (%d, %d)", op, ph, pw);
  if (dh < 1 || dw < 1)
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: dilation must be at least 1, got (%d, %d)", op, dh, dw);
  if (groups < 1) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: groups must be at least 1, got %d", op, groups);
  if (dt__check_images(op, "x", x) != DT_OK) return DT_ERR_SHAPE;
  dt__shape_str(&x->shape, sx, sizeof sx);
  dt__shape_str(&w->shape, sw_, sizeof sw_);
  if (w->shape.ndim != 4 || w->shape.dims[0] == 0 || w->shape.dims[2] == 0 || w->shape.dims[3] == 0)
    return dt__fail(DT_ERR_SHAPE, "%s: expected w to be 4-d (out_channels, in_channels / groups, kh, kw) with every size above 0, got shape %s",
                    op, sw_);
  if (x->shape.dims[1] % groups != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: groups %d does not divide x's %lld channels (x: %s)", op, groups,
                    (long long)x->shape.dims[1], sx);
  if (w->shape.dims[0] % groups != 0)
    return dt__fail(DT_ERR_SHAPE, "%s: groups %d does not divide w's %lld output channels (w: %s)", op, groups,
                    (long long)w->shape.dims[0], sw_);
  if (w->shape.dims[1] * groups != x->shape.dims[1])
    return dt__fail(DT_ERR_SHAPE, "%s: expected w's dim 1 to be x's channels / groups = %lld / %d = %lld, got w %s for x %s", op,
                    (long long)x->shape.dims[1], groups, (long long)(x->shape.dims[1] / groups), sw_, sx);
  if (b && (b->shape.ndim != 1 || b->shape.dims[0] != w->shape.dims[0]))
    return dt__fail(DT_ERR_SHAPE, "%s: expected b of shape (%lld,) (w's output channels), got %s", op, (long long)w->shape.dims[0],
                    dt__shape_str(&b->shape, sy, sizeof sy));
  memset(g, 0, sizeof *g);
  kh = w->shape.dims[2]; kw = w->shape.dims[3];
  g->n = x->shape.dims[0]; g->c = x->shape.dims[1]; g->h = x->shape.dims[2]; g->w = x->shape.dims[3];
  g->oc = w->shape.dims[0]; g->kh = kh; g->kw = kw;
  g->sh = sh; g->sw = sw; g->ph = ph; g->pw = pw; g->dh = dh; g->dw = dw; g->groups = groups;
  if ((g->oh = dt__conv_out(g->h, kh, sh, ph, dh)) < 1 || (g->ow = dt__conv_out(g->w, kw, sw, pw, dw)) < 1)
    return dt__fail(DT_ERR_SHAPE,
                    "%s: input smaller than the kernel: x %s padded by (%d, %d) against kernel (%lld, %lld) dilated by (%d, %d)",
                    op, sx, ph, pw, (long long)kh, (long long)kw, dh, dw);
  if (gy && (gy->shape.ndim != 4 || gy->shape.dims[0] != g->n || gy->shape.dims[1] != g->oc || gy->shape.dims[2] != g->oh ||
             gy->shape.dims[3] != g->ow))
    return dt__fail(DT_ERR_SHAPE, "%s: expected grad_output of shape (%lld, %lld, %lld, %lld) (the output's), got %s", op,
                    (long long)g->n, (long long)g->oc, (long long)g->oh, (long long)g->ow,
                    dt__shape_str(&gy->shape, sy, sizeof sy));
  return DT_OK;
}

/* The images per block, and two scratch tensors for a block: col (c kh kw, nb, oh ow) and
   tmp (oc, nb, oh ow), the product before it goes to y's layout (or gy in that layout). Each is
   at most DT__CONV_COL_BYTES, or one image's. */
static dt_status dt__conv_scratch(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, int64_t *nb, dt_tensor **col,
                                  dt_tensor **tmp) {
  const double ckk = (double)g->c * (double)g->kh * (double)g->kw, l = (double)g->oh * (double)g->ow;
  const double per = (ckk > (double)g->oc ? ckk : (double)g->oc) * l; /* the larger scratch's elements per image */
  const size_t es = dt__dtype_bytes(t);
  int64_t k;
  *col = *tmp = NULL;
  if (per * (double)es > 4e18)
    return dt__fail(DT_ERR_SHAPE, "%s: too large: one image unfolds into %.0f elements", op, per);
  k = (int64_t)per;
  *nb = k * (int64_t)es >= DT__CONV_COL_BYTES ? 1 : DT__CONV_COL_BYTES / (k * (int64_t)es);
  if (*nb > g->n) *nb = g->n;
  if (*nb < 1) *nb = 1;
  if (!(*col = dt__new(op, dt_shape1(*nb * (int64_t)ckk * g->oh * g->ow), t, d)) ||
      !(*tmp = dt__new(op, dt_shape1(*nb * g->oc * g->oh * g->ow), t, d))) {
    dt_release(*col);
    *col = NULL;
    return dt_last_status();
  }
  return DT_OK;
}

/* y (m, oc, l) = tp (oc, m, l), plus b[o] when b: one strided pass */
static dt_status dt__conv_to_y(const char *op, dt_device d, dt_dtype t, int64_t m, int64_t oc, int64_t l, const void *tp,
                               const void *b, void *y) {
  dt__bcast bc;
  memset(&bc, 0, sizeof bc);
  bc.ndim = 3; bc.numel = m * oc * l;
  bc.dims[0] = m; bc.dims[1] = oc; bc.dims[2] = l;
  bc.astride[0] = l; bc.astride[1] = m * l; bc.astride[2] = 1;
  bc.bstride[1] = b ? 1 : 0;
  return dt__run(op, d, dt__be(d)->binary(d.index, b ? DT__B_ADD : DT__B_COPY_A, t, &bc, tp, b ? b : tp, y));
}

/* Through the backend's convolution library (cuDNN, src/cuda/cudnn.cu), over the batch in blocks
   of images whose x and y each hold fewer than 2^31 elements (the library's int sizes), a multiple
   of 8 images where a block holds 8 or more (so that every block starts 16-byte aligned, as a
   library's vector loads want it, in every dtype); a first block it refuses is halved, down to
   one image. dir 0: y = conv(x = a, w = b); 1: gx from
   w = a and gy = b; 2: gw from x = a and gy = b, the blocks after the first adding to it (beta 1),
   as the im2col path's gemm does. DT_ERR_UNSUPPORTED, no error set, where the backend has no
   library or it refuses the case: the caller then takes im2col + gemm, which overwrites every
   output whatever a refused later block left. */
static dt_status dt__conv_lib(const char *op, int dir, const dt__conv2d *g, dt_dtype t, dt_device d, const void *a, const void *b,
                              void *out) {
  const dt__backend *be = dt__be(d);
  const size_t es = dt__dtype_bytes(t);
  const int64_t xi = g->c * g->h * g->w, yi = g->oc * g->oh * g->ow, big = xi > yi ? xi : yi;
  int64_t nb = big >= (int64_t)INT32_MAX ? 1 : (int64_t)INT32_MAX / big, n0 = 0;
  if (!(dir == 0 ? be->conv2d_forward != NULL : dir == 1 ? be->conv2d_backward_data != NULL : be->conv2d_backward_filter != NULL))
    return DT_ERR_UNSUPPORTED;
  if (nb > g->n) nb = g->n;
  if (nb >= 8 && nb < g->n) nb -= nb % 8;
  while (n0 < g->n) {
    dt__conv2d gb = *g;
    dt_status s;
    gb.n = g->n - n0 < nb ? g->n - n0 : nb;
    if (dir == 0)
      s = be->conv2d_forward(d.index, t, &gb, (const char *)a + (size_t)(n0 * xi) * es, b, (char *)out + (size_t)(n0 * yi) * es);
    else if (dir == 1)
      s = be->conv2d_backward_data(d.index, t, &gb, a, (const char *)b + (size_t)(n0 * yi) * es, (char *)out + (size_t)(n0 * xi) * es);
    else
      s = be->conv2d_backward_filter(d.index, t, &gb, (const char *)a + (size_t)(n0 * xi) * es, (const char *)b + (size_t)(n0 * yi) * es,
                                     n0 == 0 ? 0.0 : 1.0, out);
    if (s == DT_ERR_UNSUPPORTED && n0 == 0 && nb > 1) { /* smaller blocks */
      nb = (nb + 1) / 2;
      if (nb >= 8) nb -= nb % 8;
      continue;
    }
    if (s == DT_ERR_UNSUPPORTED) return s;
    if (s != DT_OK) return dt__run(op, d, s);
    n0 += gb.n;
  }
  return DT_OK;
}

/* y (n, oc, l) += b[o], in place */
static dt_status dt__conv_add_bias(const char *op, dt_device d, dt_dtype t, int64_t n, int64_t oc, int64_t l, const void *b, void *y) {
  dt__bcast bc;
  memset(&bc, 0, sizeof bc);
  bc.ndim = 3; bc.numel = n * oc * l;
  bc.dims[0] = n; bc.dims[1] = oc; bc.dims[2] = l;
  bc.astride[0] = oc * l; bc.astride[1] = l; bc.astride[2] = 1;
  bc.bstride[1] = 1;
  return dt__run(op, d, dt__be(d)->binary(d.index, DT__B_ADD, t, &bc, y, b, y));
}

/* y = conv(x, w) + b (b may be NULL); g->n > 0. Through the backend's convolution library where
   it has one and takes the case (then nothing is kept), else per block of m images: col = im2col(the block),
   tmp_g = w_g (ocg, kg) @ col_g (kg, m l) for every group g in one batched gemm, then y = tmp + b.
   keep (or NULL): where the whole batch was one block, col for the backward (else NULL). */
static dt_status dt__conv_forward(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, const void *x, const void *w,
                                  const void *b, void *y, dt_tensor **keep) {
  const dt__backend *be = dt__be(d);
  const size_t es = dt__dtype_bytes(t);
  const int64_t l = g->oh * g->ow, ocg = g->oc / g->groups, kg = g->c / g->groups * g->kh * g->kw;
  int64_t nb = 0, n0;
  dt_tensor *col = NULL, *tmp = NULL;
  dt_status s = dt__conv_lib(op, 0, g, t, d, x, w, y);
  if (s == DT_OK) return b ? dt__conv_add_bias(op, d, t, g->n, g->oc, l, b, y) : DT_OK;
  if (s != DT_ERR_UNSUPPORTED) return s;
  if ((s = dt__conv_scratch(op, g, t, d, &nb, &col, &tmp)) != DT_OK) return s;
  for (n0 = 0; n0 < g->n && s == DT_OK; n0 += nb) {
    const int64_t m = g->n - n0 < nb ? g->n - n0 : nb;
    s = dt__run(op, d, be->im2col(d.index, t, g, m, (const char *)x + (size_t)(n0 * g->c * g->h * g->w) * es, col->st->ptr));
    if (s == DT_OK)
      s = dt__run(op, d, be->gemm(d.index, t, 0, 0, g->groups, ocg, m * l, kg, 1.0, w, ocg * kg, col->st->ptr, kg * m * l, 0.0,
                                  tmp->st->ptr, ocg * m * l));
    if (s == DT_OK) s = dt__conv_to_y(op, d, t, m, g->oc, l, tmp->st->ptr, b, (char *)y + (size_t)(n0 * g->oc * l) * es);
  }
  if (keep && s == DT_OK && nb >= g->n) {
    *keep = col;
    col = NULL;
  }
  dt_release(col);
  dt_release(tmp);
  return s;
}

DTDEF dt_tensor *dt_f_conv2d_ex(const dt_tensor *x, const dt_tensor *w, const dt_tensor *b, int sh, int sw, int ph, int pw,
                                int dh, int dw, int groups) {
  const char *op = "dt_f_conv2d";
  dt__conv2d g;
  dt_tensor *y;
  dt_status s;
  dt_dtype at = dt__autocast_low(x, w, b);
  if (at != DT_F32) { /* autocast: in at */
    int failed = 0;
    dt_tensor *cx = dt__autocast_cast(x, at, &failed), *cw = dt__autocast_cast(w, at, &failed), *cb = dt__autocast_cast(b, at, &failed);
    y = failed ? NULL : dt_f_conv2d_ex(cx, cw, cb, sh, sw, ph, pw, dh, dw, groups);
    dt_release(cx); dt_release(cw); dt_release(cb);
    return y;
  }
  if (dt__conv_check(op, NULL, x, w, b, sh, sw, ph, pw, dh, dw, groups, &g) != DT_OK) return NULL;
  if (!(y = dt__new(op, dt_shape4(g.n, g.oc, g.oh, g.ow), x->dtype, x->st->device))) return NULL;
  {
    const int rec = !dt__no_grad && (x->requires_grad || w->requires_grad || (b && b->requires_grad));
    /* on the CPU a recorded convolution keeps its col for the weight gradient, which then need not
       unfold x again (a GPU unfolds faster than it would hold the memory) */
    dt_tensor *kept = NULL;
    if (g.n > 0) {
      s = dt__conv_forward(op, &g, x->dtype, x->st->device, x->st->ptr, w->st->ptr, b ? b->st->ptr : NULL, y->st->ptr,
                           rec && w->requires_grad && x->st->device.type == DT_CPU ? &kept : NULL);
      if (s != DT_OK) { dt_release(y); return NULL; }
    }
    if (rec) {
      /* autograd: a node of x, w (and b) whose backward is dt_f_conv2d_backward, its int arguments in perm */
      const dt_tensor *in[3];
      in[0] = x; in[1] = w; in[2] = b;
      if (!(y = dt__ag_record(y, DT__AG_CONV2D, op, b ? 3 : 2, in, NULL))) { dt_release(kept); return NULL; }
      y->node->perm[0] = sh; y->node->perm[1] = sw; y->node->perm[2] = ph; y->node->perm[3] = pw;
      y->node->perm[4] = dh; y->node->perm[5] = dw; y->node->perm[6] = groups;
      if (kept) { y->node->saved[2] = kept; y->node->saved_version[2] = *dt__version(kept); }
    } else
      dt_release(kept);
  }
  return y;
}

DTDEF dt_tensor *dt_f_conv2d(const dt_tensor *x, const dt_tensor *w, const dt_tensor *b, int stride, int padding) {
  return dt_f_conv2d_ex(x, w, b, stride, stride, padding, padding, 1, 1, 1);
}

/* gb (oc,) = the sums of gy (n, oc, l) over n and l, through tmp (n, oc) */
static dt_status dt__conv_bias_grad(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, const void *gy, void *tmp,
                                    void *gb) {
  const dt__backend *be = dt__be(d);
  dt_status s = dt__run(op, d, be->reduce(d.index, DT__R_SUM, t, g->n * g->oc, g->oh * g->ow, 1, gy, tmp));
  return s != DT_OK ? s : dt__run(op, d, be->reduce(d.index, DT__R_SUM, t, 1, g->n, g->oc, tmp, gb));
}

/* gx (like x) and gw (like w), either NULL, from gy; g->n > 0. Per block of m images, with gt =
   gy's block as (oc, m l) and col = im2col(x's block): gw_g (+)= gt_g @ col_g^T, one gemm over
   the block's images; gcol_g = w_g^T @ gt_g into col, which col2im folds into gx (a 1x1 kernel
   at unit strides without padding: col is gx transposed, one strided copy). */
static dt_status dt__conv_backward(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, const void *gy, const void *x,
                                   const void *w, const dt_tensor *kept, void *gx, void *gw) {
  const dt__backend *be = dt__be(d);
  const size_t es = dt__dtype_bytes(t);
  const int64_t l = g->oh * g->ow, ocg = g->oc / g->groups, kg = g->c / g->groups * g->kh * g->kw;
  const int64_t chw = g->c * g->h * g->w;
  int64_t nb = 0, n0;
  dt_tensor *col = NULL, *tmp = NULL;
  dt_status s;
  if ((s = dt__conv_scratch(op, g, t, d, &nb, &col, &tmp)) != DT_OK) return s;
  for (n0 = 0; n0 < g->n && s == DT_OK; n0 += nb) {
    const int64_t m = g->n - n0 < nb ? g->n - n0 : nb;
    const char *gyb = (const char *)gy + (size_t)(n0 * g->oc * l) * es;
    const void *gt = gyb; /* (oc, m, l): one image's block is already in that layout */
    if (m > 1) { /* gt[o, i, p] = gy[n0 + i, o, p] */
      dt__bcast bc;
      memset(&bc, 0, sizeof bc);
      bc.ndim = 3; bc.numel = m * g->oc * l;
      bc.dims[0] = g->oc; bc.dims[1] = m; bc.dims[2] = l;
      bc.astride[0] = l; bc.astride[1] = g->oc * l; bc.astride[2] = 1;
      s = dt__run(op, d, be->binary(d.index, DT__B_COPY_A, t, &bc, gyb, gyb, tmp->st->ptr));
      gt = tmp->st->ptr;
    }
    if (gw && s == DT_OK) { /* the forward's col when it kept the whole batch's */
      const void *cb = kept && m == g->n ? kept->st->ptr : col->st->ptr;
      if (cb == col->st->ptr)
        s = dt__run(op, d, be->im2col(d.index, t, g, m, (const char *)x + (size_t)(n0 * chw) * es, col->st->ptr));
      if (s == DT_OK)
        s = dt__run(op, d, be->gemm(d.index, t, 0, 1, g->groups, ocg, kg, m * l, 1.0, gt, ocg * m * l, cb, kg * m * l,
                                    n0 == 0 ? 0.0 : 1.0, gw, ocg * kg));
    }
    if (gx && s == DT_OK) {
      s = dt__run(op, d, be->gemm(d.index, t, 1, 0, g->groups, kg, m * l, ocg, 1.0, w, ocg * kg, gt, ocg * m * l, 0.0,
                                  col->st->ptr, kg * m * l));
      if (s == DT_OK && g->kh * g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0) /* col is gx transposed */
        s = dt__conv_to_y(op, d, t, m, g->c, l, col->st->ptr, NULL, (char *)gx + (size_t)(n0 * chw) * es);
      else if (s == DT_OK)
        s = dt__run(op, d, be->col2im(d.index, t, g, m, col->st->ptr, (char *)gx + (size_t)(n0 * chw) * es));
    }
  }
  dt_release(col);
  dt_release(tmp);
  return s;
}

/* The input gradient of a convolution at unit strides is itself a convolution: of gy, padded by
   (k - 1) d - p, with each group's weights transposed (c / groups, oc / groups kh kw) and the taps
   in reverse order (im2col's flip). Its im2col unfolds gy, oc kh kw rows, where the adjoint path
   multiplies into c kh kw rows of col that col2im folds back; with oc oh ow <= c h w that moves less
   memory, and its gemm is deeper (oc / groups kh kw against oc / groups). Not for a 1x1 kernel:
   there both are the one gemm. */
static int dt__conv_gx_as_conv(const dt__conv2d *g) {
  return g->sh == 1 && g->sw == 1 && g->kh * g->kw > 1 && g->ph <= (g->kh - 1) * g->dh && g->pw <= (g->kw - 1) * g->dw &&
         (double)g->oc * (double)g->h * (double)g->w <= (double)g->c * (double)g->oh * (double)g->ow;
}

/* gx = conv(gy, w transposed and flipped), as dt__conv_gx_as_conv takes it: per block of m images,
   col = im2col(gy's block), tmp_g (c / groups, m h w) = wt_g @ col_g, then gx = tmp in x's layout
   (one image: the gemm writes gx itself) */
static dt_status dt__conv_gx_conv(const char *op, const dt__conv2d *g, dt_dtype t, dt_device d, const void *gy, const void *w,
                                  void *gx) {
  const dt__backend *be = dt__be(d);
  const size_t es = dt__dtype_bytes(t);
  const int64_t kk = g->kh * g->kw, ocg = g->oc / g->groups, cg = g->c / g->groups, hw = g->h * g->w, l = g->oh * g->ow;
  dt__conv2d gt = *g; /* the convolution of gy: oc channels of oh x ow in, c of h x w out */
  dt_tensor *wt = NULL, *col = NULL, *tmp = NULL;
  int64_t nb = 0, n0;
  dt_status s;
  dt__bcast bc;
  gt.c = g->oc; gt.h = g->oh; gt.w = g->ow; gt.oc = g->c; gt.oh = g->h; gt.ow = g->w;
  gt.ph = (g->kh - 1) * g->dh - g->ph; gt.pw = (g->kw - 1) * g->dw - g->pw; gt.flip = 1;
  if (!(wt = dt__new(op, dt_shape1(g->oc * cg * kk), t, d))) return dt_last_status();
  /* wt (groups, cg, ocg, kk) = w (groups, ocg, cg, kk) */
  memset(&bc, 0, sizeof bc);
  bc.ndim = 4; bc.numel = g->oc * cg * kk;
  bc.dims[0] = g->groups; bc.dims[1] = cg; bc.dims[2] = ocg; bc.dims[3] = kk;
  bc.astride[0] = ocg * cg * kk; bc.astride[1] = kk; bc.astride[2] = cg * kk; bc.astride[3] = 1;
  s = dt__run(op, d, be->binary(d.index, DT__B_COPY_A, t, &bc, w, w, wt->st->ptr));
  if (s == DT_OK) s = dt__conv_scratch(op, &gt, t, d, &nb, &col, &tmp);
  for (n0 = 0; n0 < g->n && s == DT_OK; n0 += nb) {
    const int64_t m = g->n - n0 < nb ? g->n - n0 : nb;
    char *gxb = (char *)gx + (size_t)(n0 * g->c * hw) * es;
    void *out = m == 1 ? (void *)gxb : tmp->st->ptr;
    s = dt__run(op, d, be->im2col(d.index, t, &gt, m, (const char *)gy + (size_t)(n0 * g->oc * l) * es, col->st->ptr));
    if (s == DT_OK)
      s = dt__run(op, d, be->gemm(d.index, t, 0, 0, g->groups, cg, m * hw, ocg * kk, 1.0, wt->st->ptr, cg * ocg * kk, col->st->ptr,
                                  ocg * kk * m * hw, 0.0, out, cg * m * hw));
    if (s == DT_OK && m > 1) s = dt__conv_to_y(op, d, t, m, g->c, hw, tmp->st->ptr, NULL, gxb);
  }
  dt_release(wt);
  dt_release(col);
  dt_release(tmp);
  return s;
}

/* dt_f_conv2d_backward, with the col a recorded forward kept (or NULL) */
static dt_status dt__conv2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *w, const dt_tensor *kept,
                                     int sh, int sw, int ph, int pw, int dh, int dw, int groups, dt_tensor **grad_input,
                                     dt_tensor **grad_weight, dt_tensor **grad_bias) {
  const char *op = "dt_f_conv2d_backward";
  dt__conv2d g;
  dt_tensor *gx = NULL, *gw = NULL, *gb = NULL, *tmp = NULL;
  dt_device d;
  dt_dtype t;
  dt_status s = DT_OK;
  if (dt__check_tensor(op, "grad_output", grad_output) != DT_OK) return dt_last_status();
  if ((s = dt__conv_check(op, grad_output, x, w, NULL, sh, sw, ph, pw, dh, dw, groups, &g)) != DT_OK) return s;
  d = x->st->device; t = x->dtype;
  if ((grad_input && !(gx = dt__new(op, x->shape, t, d))) || (grad_weight && !(gw = dt__new(op, w->shape, t, d))) ||
      (grad_bias && (!(gb = dt__new(op, dt_shape1(g.oc), t, d)) || !(tmp = dt__new(op, dt_shape2(g.n, g.oc), t, d)))))
    s = dt_last_status();
  if (s == DT_OK && g.n == 0) { /* no images: the weight and bias gradients are zeros */
    if (gw) s = dt__run(op, d, dt__be(d)->fill(d.index, t, gw->numel, 0.0, gw->st->ptr));
    if (gb && s == DT_OK) s = dt__run(op, d, dt__be(d)->fill(d.index, t, gb->numel, 0.0, gb->st->ptr));
  } else if (s == DT_OK) {
    if (gb) s = dt__conv_bias_grad(op, &g, t, d, grad_output->st->ptr, tmp->st->ptr, gb->st->ptr);
    if (s == DT_OK && (gx || gw)) { /* each gradient through the convolution library where it takes it, else im2col + gemm */
      void *px = gx ? gx->st->ptr : NULL, *pw = gw ? gw->st->ptr : NULL;
      dt_status ls;
      if (pw && (ls = dt__conv_lib(op, 2, &g, t, d, x->st->ptr, grad_output->st->ptr, pw)) != DT_ERR_UNSUPPORTED) {
        s = ls;
        pw = NULL;
      }
      if (s == DT_OK && px && (ls = dt__conv_lib(op, 1, &g, t, d, w->st->ptr, grad_output->st->ptr, px)) != DT_ERR_UNSUPPORTED) {
        s = ls;
        px = NULL;
      }
      if (s == DT_OK && px && dt__conv_gx_as_conv(&g)) {
        s = dt__conv_gx_conv(op, &g, t, d, grad_output->st->ptr, w->st->ptr, px);
        px = NULL;
      }
      if (s == DT_OK && (px || pw)) s = dt__conv_backward(op, &g, t, d, grad_output->st->ptr, x->st->ptr, w->st->ptr, kept, px, pw);
    }
  }
  dt_release(tmp);
  if (s != DT_OK) {
    dt_release(gx); dt_release(gw); dt_release(gb);
    return s;
  }
  if (grad_input) *grad_input = gx;
  if (grad_weight) *grad_weight = gw;
  if (grad_bias) *grad_bias = gb;
  return DT_OK;
}

DTDEF dt_status dt_f_conv2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *w, int sh, int sw,
                                     int ph, int pw, int dh, int dw, int groups, dt_tensor **grad_input,
                                     dt_tensor **grad_weight, dt_tensor **grad_bias) {
  return dt__conv2d_backward(grad_output, x, w, NULL, sh, sw, ph, pw, dh, dw, groups, grad_input, grad_weight, grad_bias);
}

/* ---- pooling ---- */

/* The checks of a pooling call (gy: NULL for the forward; idx: max's backward), in their order:
   NULLs, devices, dtypes, the int arguments, shapes. Fills p (the output size from gy for an
   adaptive backward: out_h, out_w < 0). */
static dt_status dt__pool_check(const char *op, dt__pool2d_kind kind, const dt_tensor *gy, const dt_tensor *x, const dt_tensor *idx,
                                int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, dt__pool2d *p) {
  char sx[200], sy[200];
  if (gy && dt__check_tensor(op, "grad_output", gy) != DT_OK) return dt_last_status();
  if (dt__check_tensor(op, "x", x) != DT_OK) return dt_last_status();
  if (kind == DT__POOL2D_MAX && gy && dt__check_tensor(op, "indices", idx) != DT_OK) return dt_last_status();
  if (gy && dt__same_device(op, "x", x, "grad_output", gy) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (idx && dt__same_device(op, "x", x, "indices", idx) != DT_OK) return DT_ERR_DEVICE_MISMATCH;
  if (dt__float_only(op, "x", x) != DT_OK) return DT_ERR_DTYPE;
  if (gy && dt__same_dtype(op, "x", x, "grad_output", gy) != DT_OK) return DT_ERR_DTYPE;
  if (idx && idx->dtype != DT_I64)
    return dt__fail(DT_ERR_DTYPE, "%s: indices must be int64 (as dt_f_max_pool2d_ex makes them), got %s", op, dt_dtype_name(idx->dtype));
  memset(p, 0, sizeof *p);
  p->kind = kind;
  if (kind == DT__POOL2D_ADAPTIVE_AVG) {
    if (!gy && (kh < 1 || kw < 1))
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: output size must be at least 1, got (%lld, %lld)", op, (long long)kh, (long long)kw);
  } else {
    if (kh < 1 || kw < 1)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: kernel size must be at least 1, got (%lld, %lld)", op, (long long)kh, (long long)kw);
    if (sh == 0) sh = kh;
    if (sw == 0) sw = kw;
    if (sh < 0 || sw < 0)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: stride must be at least 1 (0: the kernel size), got (%lld, %lld)", op,
                      (long long)sh, (long long)sw);
    if (ph < 0 || pw < 0 || ph > kh / 2 || pw > kw / 2)
      return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: padding must be between 0 and half the kernel size, got (%lld, %lld) for kernel (%lld, %lld)",
                      op, (long long)ph, (long long)pw, (long long)kh, (long long)kw);
  }
  if (dt__check_images(op, "x", x) != DT_OK) return DT_ERR_SHAPE;
  dt__shape_str(&x->shape, sx, sizeof sx);
  p->n = x->shape.dims[0]; p->c = x->shape.dims[1]; p->h = x->shape.dims[2]; p->w = x->shape.dims[3];
  if (kind == DT__POOL2D_ADAPTIVE_AVG) {
    if (gy) {
      if (gy->shape.ndim != 4 || gy->shape.dims[0] != p->n || gy->shape.dims[1] != p->c || gy->shape.dims[2] < 1 || gy->shape.dims[3] < 1)
        return dt__fail(DT_ERR_SHAPE, "%s: expected grad_output of shape (%lld, %lld, out_h, out_w) (out_h, out_w >= 1), got %s", op,
                        (long long)p->n, (long long)p->c, dt__shape_str(&gy->shape, sy, sizeof sy));
      kh = gy->shape.dims[2]; kw = gy->shape.dims[3];
    }
    p->oh = kh; p->ow = kw;
    if ((double)kh * (double)p->h > 4e18 || (double)kw * (double)p->w > 4e18) /* the windows' bounds take o h and i out_h */
      return dt__fail(DT_ERR_SHAPE, "%s: too large: output size (%lld, %lld) for x %s", op, (long long)kh, (long long)kw, sx);
    return DT_OK;
  }
  p->kh = kh; p->kw = kw; p->sh = sh; p->sw = sw; p->ph = ph; p->pw = pw;
  p->oh = dt__conv_out(p->h, kh, sh, ph, 1);
  p->ow = dt__conv_out(p->w, kw, sw, pw, 1);
  if (p->oh < 1 || p->ow < 1)
    return dt__fail(DT_ERR_SHAPE, "%s: input smaller than the kernel: x %s padded by (%lld, %lld) against kernel (%lld, %lld)", op, sx,
                    (long long)ph, (long long)pw, (long long)kh, (long long)kw);
  if (gy && (gy->shape.ndim != 4 || gy->shape.dims[0] != p->n || gy->shape.dims[1] != p->c || gy->shape.dims[2] != p->oh ||
             gy->shape.dims[3] != p->ow))
    return dt__fail(DT_ERR_SHAPE, "%s: expected grad_output of shape (%lld, %lld, %lld, %lld) (the output's), got %s", op,
                    (long long)p->n, (long long)p->c, (long long)p->oh, (long long)p->ow, dt__shape_str(&gy->shape, sy, sizeof sy));
  if (idx && (idx->shape.ndim != 4 || idx->shape.dims[0] != p->n || idx->shape.dims[1] != p->c || idx->shape.dims[2] != p->oh ||
              idx->shape.dims[3] != p->ow))
    return dt__fail(DT_ERR_SHAPE, "%s: expected indices of shape (%lld, %lld, %lld, %lld) (the output's), got %s", op,
                    (long long)p->n, (long long)p->c, (long long)p->oh, (long long)p->ow, dt__shape_str(&idx->shape, sy, sizeof sy));
  return DT_OK;
}

/* y = pool(x), and for max the indices when `indices` is not NULL */
static dt_tensor *dt__pool_forward(const char *op, dt__pool2d_kind kind, const dt_tensor *x, int64_t kh, int64_t kw, int64_t sh,
                                   int64_t sw, int64_t ph, int64_t pw, dt_tensor **indices) {
  dt__pool2d p;
  dt_tensor *y, *idx = NULL, *saved = NULL;
  dt_status s;
  int rec; /* autograd: a node whose backward is the pooling's backward function */
  if (dt__pool_check(op, kind, NULL, x, NULL, kh, kw, sh, sw, ph, pw, &p) != DT_OK) return NULL;
  rec = DT__AG_ON(x);
  if (!(y = dt__new(op, dt_shape4(p.n, p.c, p.oh, p.ow), x->dtype, x->st->device))) return NULL;
  if ((indices || (rec && kind == DT__POOL2D_MAX)) && !(idx = dt__new(op, y->shape, DT_I64, x->st->device))) {
    dt_release(y);
    return NULL;
  }
  s = y->numel == 0 ? DT_OK
                    : dt__run(op, x->st->device, dt__be(x->st->device)->pool2d(x->st->device.index, x->dtype, &p, x->st->ptr, y->st->ptr,
                                                                               idx ? (int64_t *)idx->st->ptr : NULL));
  if (s == DT_OK && rec && idx && !(saved = indices ? dt_detach(idx) : dt_retain(idx))) s = dt_last_status();
  if (s != DT_OK) { dt_release(y); dt_release(idx); return NULL; }
  if (rec) {
    if (!(y = dt__ag_record(y, kind == DT__POOL2D_MAX ? DT__AG_MAX_POOL2D : kind == DT__POOL2D_AVG ? DT__AG_AVG_POOL2D
                                                                                                  : DT__AG_ADAPTIVE_AVG_POOL2D,
                            op, 1, &x, NULL))) {
      dt_release(saved);
      dt_release(idx);
      return NULL;
    }
    y->node->perm[0] = (int)kh; y->node->perm[1] = (int)kw; y->node->perm[2] = (int)sh; y->node->perm[3] = (int)sw;
    y->node->perm[4] = (int)ph; y->node->perm[5] = (int)pw;
    if (saved) { y->node->saved[2] = saved; y->node->saved_version[2] = *dt__version(saved); }
  }
  if (indices) *indices = idx;
  else dt_release(idx); /* only the node's */
  return y;
}

/* gx = the pooling's backward from gy (and idx for max) */
static dt_tensor *dt__pool_backward(const char *op, dt__pool2d_kind kind, const dt_tensor *gy, const dt_tensor *x, const dt_tensor *idx,
                                    int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
  dt__pool2d p;
  dt_tensor *gx;
  if (dt__check_tensor(op, "grad_output", gy) != DT_OK) return NULL;
  if (dt__pool_check(op, kind, gy, x, idx, kh, kw, sh, sw, ph, pw, &p) != DT_OK) return NULL;
  if (!(gx = dt__new(op, x->shape, x->dtype, x->st->device))) return NULL;
  if (gx->numel == 0) return gx;
  return dt__done(op, gx, dt__be(x->st->device)->pool2d_backward(x->st->device.index, x->dtype, &p, gy->st->ptr,
                                                                 idx ? (const int64_t *)idx->st->ptr : NULL, gx->st->ptr));
}

DTDEF dt_tensor *dt_f_max_pool2d(const dt_tensor *x, int kernel_size, int stride, int padding) {
  return dt__pool_forward("dt_f_max_pool2d", DT__POOL2D_MAX, x, kernel_size, kernel_size, stride, stride, padding, padding, NULL);
}
DTDEF dt_tensor *dt_f_max_pool2d_ex(const dt_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, dt_tensor **indices) {
  return dt__pool_forward("dt_f_max_pool2d", DT__POOL2D_MAX, x, kh, kw, sh, sw, ph, pw, indices);
}
DTDEF dt_tensor *dt_f_max_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x, const dt_tensor *indices, int kh,
                                          int kw, int sh, int sw, int ph, int pw) {
  return dt__pool_backward("dt_f_max_pool2d_backward", DT__POOL2D_MAX, grad_output, x, indices, kh, kw, sh, sw, ph, pw);
}
DTDEF dt_tensor *dt_f_avg_pool2d(const dt_tensor *x, int kernel_size, int stride, int padding) {
  return dt__pool_forward("dt_f_avg_pool2d", DT__POOL2D_AVG, x, kernel_size, kernel_size, stride, stride, padding, padding, NULL);
}
DTDEF dt_tensor *dt_f_avg_pool2d_ex(const dt_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw) {
  return dt__pool_forward("dt_f_avg_pool2d", DT__POOL2D_AVG, x, kh, kw, sh, sw, ph, pw, NULL);
}
DTDEF dt_tensor *dt_f_avg_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x, int kh, int kw, int sh, int sw,
                                          int ph, int pw) {
  return dt__pool_backward("dt_f_avg_pool2d_backward", DT__POOL2D_AVG, grad_output, x, NULL, kh, kw, sh, sw, ph, pw);
}
DTDEF dt_tensor *dt_f_adaptive_avg_pool2d(const dt_tensor *x, int64_t out_h, int64_t out_w) {
  return dt__pool_forward("dt_f_adaptive_avg_pool2d", DT__POOL2D_ADAPTIVE_AVG, x, out_h, out_w, 0, 0, 0, 0, NULL);
}
DTDEF dt_tensor *dt_f_adaptive_avg_pool2d_backward(const dt_tensor *grad_output, const dt_tensor *x) {
  return dt__pool_backward("dt_f_adaptive_avg_pool2d_backward", DT__POOL2D_ADAPTIVE_AVG, grad_output, x, NULL, 0, 0, 0, 0, 0, 0);
}
