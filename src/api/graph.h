/* ---- api: graphs (torch.cuda.CUDAGraph) ----
   Record the work one step issues on a device once, then run it again as one launch:
     dt_graph_begin(d); ...the step's operations on d...; g = dt_graph_end(d);
     for each batch: dt_copy_(x, batch); dt_graph_replay(g); ...read the outputs...
     dt_graph_free(g);
   On a GPU this is CUDA stream capture on the device's stream and a cudaGraphExec. On the
   CPU the capture records each kernel call with its arguments and replay calls them again,
   in order: a program written for the GPU gives the same results on the CPU.
   - Captured work does not run during the capture (on either device): the captured tensors
     hold their values only after a replay. Warm up (run the step once or more) first.
   - Replay works on the same memory: copy new inputs into the tensors the capture read
     (dt_copy_), read outputs from the tensors it wrote. Host values of the capture are fixed:
     scalars, the learning rate, Adam's step count. Random draws on the captured device are
     drawn afresh by each replay: the generator's next numbers, as the eager calls would take.
   - Memory: every tensor made during the capture, and every tensor released during it,
     stays with the graph until dt_graph_free (its memory is never handed to anything else
     while the graph can still write it). A tensor that existed before the capture and is
     released after it makes later replays refuse: keep such tensors alive while the graph
     lives.
   - Refused during a capture, before anything is issued: anything that waits for the device
     or moves data between the host and the capturing device (dt_synchronize, dt_item,
     dt_to_host, printing, dt_from_data, dt_arange, dt_empty_cache, dt_one_hot,
     dt_clip_grad_norm_, DLPack export) and a
     copy between the capturing device and another. Such a call invalidates the capture:
     dt_graph_end then returns NULL with the reason. */
typedef struct dt_graph dt_graph;
DTDEF dt_status dt_graph_begin(dt_device d);    /* capture the work issued on d from here (any thread) */
DTDEF dt_graph *dt_graph_end(dt_device d);      /* what was captured, ready to replay; NULL with the reason */
DTDEF dt_status dt_graph_replay(dt_graph *g);   /* the same work again, on the same tensors (copy new inputs into them first) */
DTDEF void      dt_graph_free(dt_graph *g);     /* NULL is fine */
