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

static int dt__graph_draw(dt_device d, uint64_t *draw, const uint64_t **gen);

/* The next draw for work on device d: the generator's, or while d is being captured into a
   graph, the graph's next one (*gen set: see dt__rng_at), which its replays draw afresh. */
static void dt__rng_next_on(dt_device d, uint64_t *seed, uint64_t *draw, const uint64_t **gen) {
  *gen = NULL;
  if (dt__graph_draw(d, draw, gen)) { *seed = 0; return; }
  dt__rng_next(seed, draw);
}

static dt_tensor *dt__random(const char *op, dt_shape s, dt_device d, int normal) {
  dt_tensor *y = dt__new(op, s, DT_F32, d);
  uint64_t draw, seed;
  const uint64_t *gen;
  if (!y) return NULL;
  dt__rng_next_on(d, &seed, &draw, &gen);
  if (y->numel == 0) return y;
  return dt__done(op, y, dt__be(d)->random(d.index, normal, seed, draw, gen, y->numel, (float *)y->st->ptr));
}
DTDEF dt_tensor *dt_rand(dt_shape s, dt_device d) { return dt__random("dt_rand", s, d, 0); }
DTDEF dt_tensor *dt_randn(dt_shape s, dt_device d) { return dt__random("dt_randn", s, d, 1); }
