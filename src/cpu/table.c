static const dt__backend *dt__cpu_backend(void) {
  static const dt__backend be = {
    DT__SLOT(name) "cpu",
    DT__SLOT(device_count) dt__cpu_device_count,
    DT__SLOT(device_info) dt__cpu_device_info,
    DT__SLOT(last_error) dt__cpu_last_error,
    DT__SLOT(alloc) dt__cpu_alloc,
    DT__SLOT(free) dt__cpu_free,
    DT__SLOT(memory_stats) dt__cpu_memory_stats,
    DT__SLOT(empty_cache) dt__cpu_empty_cache,
    DT__SLOT(copy) dt__cpu_copy,
    DT__SLOT(synchronize) dt__cpu_synchronize,
    DT__SLOT(stream) dt__cpu_stream,
    DT__SLOT(fill) dt__cpu_fill,
    DT__SLOT(unary) dt__cpu_unary,
    DT__SLOT(binary) dt__cpu_binary,
    DT__SLOT(cast) dt__cpu_cast,
    DT__SLOT(reduce) dt__cpu_reduce,
    DT__SLOT(gemm) dt__cpu_gemm,
    DT__SLOT(axpy) dt__cpu_axpy,
    DT__SLOT(random) dt__cpu_random,
    /* optimizers */
    DT__SLOT(optim_step) dt__cpu_optim_step,
    /* comparisons */
    DT__SLOT(compare) dt__cpu_compare,
    /* indexing */
    DT__SLOT(copy_strided) dt__cpu_copy_strided,
    DT__SLOT(index_select) dt__cpu_index_select,
    /* classification */
    DT__SLOT(arg_reduce) dt__cpu_arg_reduce,
    DT__SLOT(softmax) dt__cpu_softmax,
    DT__SLOT(cross_entropy) dt__cpu_cross_entropy,
    /* distributed: CPU tensors go through MPI in the core ("distributed") */
    DT__SLOT(dist_unique_id) NULL,
    DT__SLOT(dist_comm_init) NULL,
    DT__SLOT(dist_comm_init_all) NULL,
    DT__SLOT(dist_comm_free) NULL,
    DT__SLOT(dist_all_reduce) NULL,
    DT__SLOT(dist_broadcast) NULL,
    /* convolution and pooling */
    DT__SLOT(im2col) dt__cpu_im2col,
    DT__SLOT(col2im) dt__cpu_col2im,
    DT__SLOT(pool2d) dt__cpu_pool2d,
    DT__SLOT(pool2d_backward) dt__cpu_pool2d_backward,
    /* where, gather, scatter-add, index-add, random integers */
    DT__SLOT(where) dt__cpu_where,
    DT__SLOT(gather) dt__cpu_gather,
    DT__SLOT(scatter_add) dt__cpu_scatter_add,
    DT__SLOT(index_add) dt__cpu_index_add,
    DT__SLOT(random_int) dt__cpu_random_int,
    /* losses */
    DT__SLOT(nll_loss) dt__cpu_nll_loss,
    /* half precision: gemm takes F16 and BF16 (src/cpu/gemm/bf16.c); F32 one way */
    DT__SLOT(half_gemm) 1,
    DT__SLOT(set_matmul_precision) NULL,
    /* graphs */
    DT__SLOT(graph_begin) dt__cpu_graph_begin,
    DT__SLOT(graph_end) dt__cpu_graph_end,
    DT__SLOT(graph_replay) dt__cpu_graph_replay,
    DT__SLOT(graph_free) dt__cpu_graph_free,
    /* convolution through a vendor library: none (im2col + gemm) */
    DT__SLOT(conv2d_forward) NULL,
    DT__SLOT(conv2d_backward_data) NULL,
    DT__SLOT(conv2d_backward_filter) NULL,
    /* batch normalisation */
    DT__SLOT(batch_norm) dt__cpu_batch_norm,
    DT__SLOT(batch_norm_backward) dt__cpu_batch_norm_backward
  };
  return &be;
}
