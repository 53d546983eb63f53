} /* namespace */

extern "C" const dt__backend *dt__cuda_backend(void) {
  static const dt__backend be = {
    DT__SLOT(name) "cuda",
    DT__SLOT(device_count) cu_device_count,
    DT__SLOT(device_info) cu_device_info,
    DT__SLOT(last_error) cu_last_error,
    DT__SLOT(alloc) cu_alloc,
    DT__SLOT(free) cu_free,
    DT__SLOT(memory_stats) cu_memory_stats,
    DT__SLOT(empty_cache) cu_empty_cache,
    DT__SLOT(copy) cu_copy,
    DT__SLOT(synchronize) cu_synchronize,
    DT__SLOT(stream) cu_stream,
    DT__SLOT(fill) cu_fill,
    DT__SLOT(unary) cu_unary,
    DT__SLOT(binary) cu_binary,
    DT__SLOT(cast) cu_cast,
    DT__SLOT(reduce) cu_reduce,
    DT__SLOT(gemm) cu_gemm,
    DT__SLOT(axpy) cu_axpy,
    DT__SLOT(random) cu_random,
    /* optimizers */
    DT__SLOT(optim_step) cu_optim_step,
    /* comparisons */
    DT__SLOT(compare) cu_compare,
    /* indexing */
    DT__SLOT(copy_strided) cu_copy_strided,
    DT__SLOT(index_select) cu_index_select,
    /* classification */
    DT__SLOT(arg_reduce) cu_arg_reduce,
    DT__SLOT(softmax) cu_softmax,
    DT__SLOT(cross_entropy) cu_cross_entropy,
    /* distributed */
    DT__SLOT(dist_unique_id) cu_dist_unique_id,
    DT__SLOT(dist_comm_init) cu_dist_comm_init,
    DT__SLOT(dist_comm_init_all) cu_dist_comm_init_all,
    DT__SLOT(dist_comm_free) cu_dist_comm_free,
    DT__SLOT(dist_all_reduce) cu_dist_all_reduce,
    DT__SLOT(dist_broadcast) cu_dist_broadcast,
    /* convolution and pooling */
    DT__SLOT(im2col) cu_im2col,
    DT__SLOT(col2im) cu_col2im,
    DT__SLOT(pool2d) cu_pool2d,
    DT__SLOT(pool2d_backward) cu_pool2d_backward,
    /* where, gather, scatter-add, index-add, random integers */
    DT__SLOT(where) cu_where,
    DT__SLOT(gather) cu_gather,
    DT__SLOT(scatter_add) cu_scatter_add,
    DT__SLOT(index_add) cu_index_add,
    DT__SLOT(random_int) cu_random_int,
    /* losses */
    DT__SLOT(nll_loss) cu_nll_loss,
    /* half precision: cublasGemmEx with F32 accumulation; F32 matmul precision */
    DT__SLOT(half_gemm) 1,
    DT__SLOT(set_matmul_precision) cu_set_matmul_precision,
    /* graphs */
    DT__SLOT(graph_begin) cu_graph_begin,
    DT__SLOT(graph_end) cu_graph_end,
    DT__SLOT(graph_replay) cu_graph_replay,
    DT__SLOT(graph_free) cu_graph_free,
    /* convolution through cuDNN (DEVTENSOR_CUDNN; else none: im2col + cuBLAS) */
#ifdef DEVTENSOR_CUDNN
    DT__SLOT(conv2d_forward) cu_conv2d_forward,
    DT__SLOT(conv2d_backward_data) cu_conv2d_backward_data,
    DT__SLOT(conv2d_backward_filter) cu_conv2d_backward_filter,
#else
    DT__SLOT(conv2d_forward) nullptr,
    DT__SLOT(conv2d_backward_data) nullptr,
    DT__SLOT(conv2d_backward_filter) nullptr,
#endif
    /* batch normalisation */
    DT__SLOT(batch_norm) cu_batch_norm,
    DT__SLOT(batch_norm_backward) cu_batch_norm_backward
  };
  return &be;
}
