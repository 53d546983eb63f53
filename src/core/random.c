/* The generator's state: one seed and the number of draws since it was set,
   read and changed together under a lock (PyTorch's default generator is one
   locked state too): every draw gets its own (seed, draw) pair, the n-th
   after dt_manual_seed(s) is (s, n), whatever the threads do. */
static uint64_t dt__seed = 67280421310721ull; /* PyTorch's default seed */
static uint64_t dt__draw;                     /* draws since dt_manual_seed */
static volatile int dt__rng_lock;

DTDEF void dt_manual_seed(uint64_t seed) {
  dt__lock(&dt__rng_lock);
  dt__seed = seed;
  dt__draw = 0;
  dt__unlock(&dt__rng_lock);
}

/* The next draw: its seed and its number. */
static void dt__rng_next(uint64_t *seed, uint64_t *draw) {
  dt__lock(&dt__rng_lock);
  *seed = dt__seed;
  *draw = dt__draw++;
  dt__unlock(&dt__rng_lock);
}

static dt_tensor *dt__random(const char *op, dt_shape s, dt_device d, int normal) {
  dt_tensor *y = dt__new(op, s, DT_F32, d);
  uint64_t draw, seed;
  if (!y) return NULL;
  dt__rng_next(&seed, &draw);
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(d)->random(d.index, normal, seed, draw, y->numel, (float *)y->st->ptr));
}
DTDEF dt_tensor *dt_rand(dt_shape s, dt_device d) { return dt__random("dt_rand", s, d, 0); }
DTDEF dt_tensor *dt_randn(dt_shape s, dt_device d) { return dt__random("dt_randn", s, d, 1); }
