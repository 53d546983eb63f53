/* Graphs (torch.cuda.CUDAGraph): what a capture keeps, what makes a graph stale, and the
   calls refused while a device is captured. The backends capture and replay (graph_* slots:
   CUDA stream capture in src/cuda/graph.cu, the CPU's recording table in src/cpu/graph.c).

   The memory rule. Every storage has a serial number, in the order storages are made; a
   capture on device d takes the serials [serial_begin, serial_end) of the storages made
   during it. When a storage's last reference goes:
   - during a capture on its device: the capture keeps it (its memory is not given back);
     captured work may still write or read it, so nothing else may get that memory;
   - after the capture, a storage made during it: the graph keeps it (replays write it);
   - after the capture, a storage made before it: the captured work may use it, and its
     memory goes back; the graph is stale and refuses to replay.
   dt_graph_free gives back everything the graph kept. A storage made during a capture and
   still alive then is the caller's, as any other. Scratch memory a backend takes inside one
   call (the CUDA reductions' workspaces) is kept by the backend's graph the same way. */

struct dt_graph {
  dt_device device;
  int capturing;              /* 1 from dt_graph_begin to dt_graph_end */
  int invalid;                /* a capture that a refused call ended: dt_graph_end reports why */
  int stale;                  /* a storage from before the capture was released: replays refuse */
  char why[400];              /* what made it invalid or stale */
  dt_status status;           /* and the status dt_graph_end or dt_graph_replay reports for it */
  long long serial_begin, serial_end;
  dt__storage **kept;         /* storages released that captured work may use, given back by dt_graph_free */
  int nkept, capkept;
  void *be_graph;             /* the backend's captured work */
  uint64_t *gen;              /* 2 words on the device, the backend's own block (no storage, so no memory rule): the
                                 generator's seed and the first draw of a replay */
  uint64_t ndraws;            /* the random draws captured, numbered 0.. within the graph (dt__rng_at) */
  struct dt_graph *next;      /* every graph, capturing or captured, under dt__graph_lk */
  const void *owner;          /* the thread that began the capture: &dt__graph_thread there */
};

static volatile int dt__graph_lk;
/* Its address names the calling thread: a capture is ended on the thread that began it (CUDA's
   thread-local capture; the CPU keeps the same rule, so a program behaves alike on both). */
static DT__TLS char dt__graph_thread;
static struct dt_graph *dt__graph_list;

/* The capture in progress on d, or NULL. Call under dt__graph_lk. */
static dt_graph *dt__graph_capture_of(dt_device d) {
  dt_graph *g;
  for (g = dt__graph_list; g; g = g->next)
    if (g->capturing && dt_device_equal(g->device, d)) return g;
  return NULL;
}

/* Keeps st in g; 0 when there is no host memory for the list. Call under dt__graph_lk. */
static int dt__graph_keep(dt_graph *g, dt__storage *st) {
  if (g->nkept == g->capkept) {
    int cap = g->capkept ? 2 * g->capkept : 16;
    dt__storage **k = (dt__storage **)DT_MALLOC(sizeof(dt__storage *) * (size_t)cap);
    if (!k) return 0;
    if (g->nkept) memcpy(k, g->kept, sizeof(dt__storage *) * (size_t)g->nkept);
    DT_FREE(g->kept);
    g->kept = k;
    g->capkept = cap;
  }
  g->kept[g->nkept++] = st;
  return 1;
}

/* 1 when g's work may use st's memory: g is capturing on st's device, or st was made during
   g's capture. Call under dt__graph_lk. */
static int dt__graph_writes(const dt_graph *g, const dt__storage *st) {
  return dt_device_equal(g->device, st->device) &&
         (g->capturing || (st->serial >= g->serial_begin && st->serial < g->serial_end));
}

/* Keeps st in g (one that dt__graph_writes st); 0 when there is no host memory for that: then g
   must never run (st's memory goes back), and is marked so: a capture invalid (`what` during
   the capture), a graph stale. Call under dt__graph_lk. */
static int dt__graph_take(dt_graph *g, dt__storage *st, const char *what) {
  if (dt__graph_keep(g, st)) return 1;
  if (g->capturing && !g->invalid) {
    g->invalid = 1;
    g->status = DT_ERR_OUT_OF_MEMORY;
    snprintf(g->why, sizeof g->why, "out of memory on the host keeping %s during the capture", what);
  } else if (!g->capturing && !g->stale) {
    g->stale = 1;
    g->status = DT_ERR_OUT_OF_MEMORY;
    snprintf(g->why, sizeof g->why, "out of memory on the host keeping a released tensor that the graph writes");
  }
  return 0;
}

/* dt__storage_release's question for a storage (not a view) whose last reference went:
   1 when a graph keeps it. Marks graphs stale as the memory rule says. */
static int dt__graph_on_release(dt__storage *st) {
  dt_graph *g;
  int kept = 0;
  char db[48];
  dt__lock(&dt__graph_lk);
  for (g = dt__graph_list; g; g = g->next) {
    if (!dt_device_equal(g->device, st->device)) continue;
    if (dt__graph_writes(g, st)) {
      if (!kept) kept = dt__graph_take(g, st, "a released tensor");
    } else if (st->serial < g->serial_begin && !g->stale) {
      g->stale = 1;
      g->status = DT_ERR_INVALID_ARGUMENT;
      snprintf(g->why, sizeof g->why,
               "a tensor on %s that existed when the capture began was released after it (%llu bytes at %p), and the "
               "captured work may use it: keep every such tensor alive until dt_graph_free",
               dt_device_str(st->device, db, sizeof db), (unsigned long long)st->nbytes, st->ptr);
    }
  }
  dt__unlock(&dt__graph_lk);
  return kept;
}

/* Refuses `what`, which would wait for d or move its data to or from the host or another
   device, while d is being captured; the capture is then invalid (dt_graph_end says why). */
static dt_status dt__graph_forbid(const char *op, dt_device d, const char *what) {
  dt_graph *g;
  char db[48];
  if (DT__ATOMIC_LOAD(&dt__graphs_live) == 0) return DT_OK;
  dt__lock(&dt__graph_lk);
  g = dt__graph_capture_of(d);
  if (g && !g->invalid) {
    g->invalid = 1;
    g->status = DT_ERR_UNSUPPORTED;
    snprintf(g->why, sizeof g->why, "%s (%s) was refused during the capture", op, what);
  }
  dt__unlock(&dt__graph_lk);
  if (!g) return DT_OK;
  return dt__fail(DT_ERR_UNSUPPORTED,
                  "%s: %s is not allowed while %s is being captured into a graph (nothing was issued); the capture is "
                  "invalid now: end it with dt_graph_end, which returns NULL",
                  op, what, dt_device_str(d, db, sizeof db));
}

/* Gives back what g kept and g itself; g is out of the list. */
static void dt__graph_destroy(dt_graph *g) {
  int i;
  if (g->be_graph) dt__be(g->device)->graph_free(g->device.index, g->be_graph);
  for (i = 0; i < g->nkept; i++) dt__storage_free(g->kept[i]);
  DT_FREE(g->kept);
  if (g->gen) dt__be(g->device)->free(g->device.index, g->gen, 2 * sizeof(uint64_t)); /* after replays queued before */
  DT_FREE(g);
}

/* Before g (out of the list) gives back what it kept: each storage that another graph on the
   device may still use goes to that graph instead: to a capture in progress (its work may use
   that memory now), or to the graph whose capture made it (its replays write it; g may hold it
   because it was released during g's capture). What no graph can take goes back, which is safe:
   a capture that could not keep it is invalid and a graph that could not is stale, and neither
   ever runs. */
static void dt__graph_hand_over(dt_graph *g) {
  dt_graph *c;
  int i, j = 0;
  dt__lock(&dt__graph_lk);
  for (i = 0; i < g->nkept; i++) {
    for (c = dt__graph_list; c && !dt__graph_writes(c, g->kept[i]); c = c->next) {}
    if (c && dt__graph_take(c, g->kept[i], "a freed graph's memory")) g->kept[i] = NULL;
  }
  dt__unlock(&dt__graph_lk);
  for (i = 0; i < g->nkept; i++)
    if (g->kept[i]) g->kept[j++] = g->kept[i];
  g->nkept = j;
}

/* While d is being captured: the capture's next draw, numbered within the graph, and in *gen
   where each replay puts the generator's seed and the graph's first draw; 0 when d is not
   being captured. */
static int dt__graph_draw(dt_device d, uint64_t *draw, const uint64_t **gen) {
  dt_graph *g;
  if (DT__ATOMIC_LOAD(&dt__graphs_live) == 0) return 0;
  dt__lock(&dt__graph_lk);
  g = dt__graph_capture_of(d);
  if (g) {
    *draw = g->ndraws++;
    *gen = g->gen;
  }
  dt__unlock(&dt__graph_lk);
  return g != NULL;
}

/* Takes g out of the list. */
static void dt__graph_unlink(dt_graph *g) {
  dt_graph **p;
  dt__lock(&dt__graph_lk);
  for (p = &dt__graph_list; *p; p = &(*p)->next)
    if (*p == g) { *p = g->next; break; }
  dt__unlock(&dt__graph_lk);
  DT__ATOMIC_ADD(&dt__graphs_live, -1);
}

DTDEF dt_status dt_graph_begin(dt_device d) {
  const char *op = "dt_graph_begin";
  dt_graph *g;
  dt_status s;
  void *gen = NULL;
  char db[48];
  if ((s = dt__check_device(op, d)) != DT_OK) return s;
  if (!(g = (dt_graph *)DT_MALLOC(sizeof(dt_graph))))
    return dt__fail(DT_ERR_OUT_OF_MEMORY, "%s: out of memory on the host allocating a graph", op);
  memset(g, 0, sizeof *g);
  g->device = d;
  g->capturing = 1;
  g->serial_end = LLONG_MAX;
  g->owner = &dt__graph_thread;
  if ((s = dt__be(d)->alloc(d.index, 2 * sizeof(uint64_t), &gen)) != DT_OK) {
    DT_FREE(g);
    return dt__backend_fail(op, d, s);
  }
  g->gen = (uint64_t *)gen;
  dt__lock(&dt__graph_lk);
  if (dt__graph_capture_of(d)) {
    dt__unlock(&dt__graph_lk);
    dt__be(d)->free(d.index, gen, 2 * sizeof(uint64_t));
    DT_FREE(g);
    return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is already being captured (end that capture with dt_graph_end first)", op,
                    dt_device_str(d, db, sizeof db));
  }
  /* listed first, so that every storage released from here on is kept */
  g->serial_begin = DT__ATOMIC_ADD(&dt__storage_serial, 1);
  g->next = dt__graph_list;
  dt__graph_list = g;
  DT__ATOMIC_ADD(&dt__graphs_live, 1);
  dt__unlock(&dt__graph_lk);
  if ((s = dt__be(d)->graph_begin(d.index)) != DT_OK) {
    dt__backend_fail(op, d, s);
    dt__graph_unlink(g);
    dt__graph_destroy(g);
    return dt_last_status();
  }
  return DT_OK;
}

DTDEF dt_graph *dt_graph_end(dt_device d) {
  const char *op = "dt_graph_end";
  dt_graph *g;
  dt_status s;
  void *bg = NULL;
  char db[48];
  if (dt__check_device(op, d) != DT_OK) return NULL;
  dt__lock(&dt__graph_lk);
  g = dt__graph_capture_of(d);
  dt__unlock(&dt__graph_lk);
  if (!g) {
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: %s is not being captured (start a capture with dt_graph_begin)", op,
             dt_device_str(d, db, sizeof db));
    return NULL;
  }
  if (g->owner != (const void *)&dt__graph_thread) { /* the capture goes on: its own thread may end it */
    dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: the capture on %s was begun on another thread; end it on that thread", op,
             dt_device_str(d, db, sizeof db));
    return NULL;
  }
  s = dt__be(d)->graph_end(d.index, &bg);
  if (s != DT_OK) dt__backend_fail(op, d, s);
  dt__lock(&dt__graph_lk);
  g->capturing = 0;
  g->serial_end = DT__ATOMIC_ADD(&dt__storage_serial, 1);
  g->be_graph = bg;
  dt__unlock(&dt__graph_lk);
  if (s != DT_OK || g->invalid) {
    if (s == DT_OK) dt__fail(g->status, "%s: the capture on %s is invalid: %s", op, dt_device_str(d, db, sizeof db), g->why);
    dt__graph_unlink(g);
    dt__graph_hand_over(g); /* what another graph writes stays with it */
    dt__graph_destroy(g);   /* nothing ran: the rest goes back */
    return NULL;
  }
  return g;
}

DTDEF dt_status dt_graph_replay(dt_graph *g) {
  const char *op = "dt_graph_replay";
  dt_status s;
  int stale, busy;
  uint64_t seed, draw;
  dt_status why_status;
  char why[400], db[48];
  if (!g) return dt__fail(DT_ERR_INVALID_ARGUMENT, "%s: g is NULL", op);
  dt__lock(&dt__graph_lk);
  stale = g->stale;
  if (stale) memcpy(why, g->why, sizeof why);
  why_status = g->status;
  busy = dt__graph_capture_of(g->device) != NULL;
  dt__unlock(&dt__graph_lk);
  if (stale) return dt__fail(why_status, "%s: the graph cannot run: %s", op, why);
  if (busy)
    return dt__fail(DT_ERR_UNSUPPORTED, "%s: %s is being captured; replay its graphs after dt_graph_end", op,
                    dt_device_str(g->device, db, sizeof db));
  if (g->ndraws == 0) {
    if ((s = dt__be(g->device)->graph_replay(g->device.index, g->be_graph, NULL, 0, 0)) != DT_OK) return dt__backend_fail(op, g->device, s);
    return DT_OK;
  }
  /* the replay's draws are the generator's next g->ndraws, as eager calls would have taken */
  dt__lock(&dt__rng_lock);
  seed = dt__seed;
  draw = dt__draw;
  dt__draw += g->ndraws;
  dt__unlock(&dt__rng_lock);
  if ((s = dt__be(g->device)->graph_replay(g->device.index, g->be_graph, g->gen, seed, draw)) != DT_OK) {
    dt__lock(&dt__rng_lock); /* nothing ran: the draws go back unless another thread drew since */
    if (dt__seed == seed && dt__draw == draw + g->ndraws) dt__draw = draw;
    dt__unlock(&dt__rng_lock);
    return dt__backend_fail(op, g->device, s);
  }
  return DT_OK;
}

DTDEF void dt_graph_free(dt_graph *g) {
  if (!g) return;
  dt__graph_unlink(g);
  dt__graph_hand_over(g);
  dt__graph_destroy(g);
}
