/* y: (n,); thread j makes Philox block j of the draw: y[4j + q] = word q mapped
   to a uniform, or the Box-Muller normals of words (0, 1) and (2, 3), in
   double, exactly as the CPU backend (dt__cpu_random). */
template <bool Normal>
__global__ void k_random(float *y, int64_t n, uint64_t seed, uint64_t draw, const uint64_t *gen) {
  int64_t nb = (n + 3) / 4;
  dt__rng_at(gen, &seed, &draw);
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < nb; j += (int64_t)gridDim.x * blockDim.x) {
    uint32_t w[4];
    float z[4];
    dt__philox_block(seed, draw, (uint64_t)j, w);
    if (Normal) {
      dt__box_muller(w[0], w[1], &z[0], &z[1]);
      dt__box_muller(w[2], w[3], &z[2], &z[3]);
    } else {
#pragma unroll
      for (int q = 0; q < 4; q++) z[q] = dt__u32_to_uniform(w[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; q++)
      if (j * 4 + q < n) y[j * 4 + q] = z[q];
  }
}

dt_status cu_random(int dev, int normal, uint64_t seed, uint64_t draw, const uint64_t *gen, int64_t n, float *y) {
  Entered in(dev);
  if (!in.ok()) return in.status();
  if (n <= 0) return DT_OK;
  unsigned grid = grid_for((n + 3) / 4, kBlock);
  if (normal) DT_LAUNCH(grid, kBlock, in.s->stream, k_random<true>)(y, n, seed, draw, gen);
  else DT_LAUNCH(grid, kBlock, in.s->stream, k_random<false>)(y, n, seed, draw, gen);
  return launched("random");
}
