/* tests/fuzz/nest_decode.h — builds a network from a few bytes, for fuzz_safetensors and its
   seeds (gen_corpus.c). An input "DTNN<program>\n<file>" loads <file> into the network that
   <program> describes:
     '('      a sequential, added to the current one, which it becomes
     ')'      back to the sequential before (the outermost stays)
     'L' a b  Linear(a % 4 + 1, b % 4 + 1) added to the current sequential
     'R'      ReLU added to the current sequential
     'D'      the whole network in float64 at the end
   anything else is skipped. Sequentials nest as deep as the program asks: past
   DT_MODULE_MAX_DEPTH dt_sequential_add must refuse (DT_ERR_INVALID_ARGUMENT), exactly there.
   The decoder records each parameter's name as PyTorch's state_dict would give it. */
#ifndef FUZZ_NEST_DECODE_H
#define FUZZ_NEST_DECODE_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEST_MAX_LAYERS 48        /* linear layers at most: runs stay fast */
#define NEST_MAX_OPEN 200         /* '(' deeper than this are skipped */

typedef struct nest_net {
  dt_module *net;
  int nparams, f64, refused;       /* refused: the '(' dt_sequential_add turned down for depth */
  char *names[2 * NEST_MAX_LAYERS];
  int64_t in_first;                /* in_features of the first linear layer, 0 when none */
} nest_net;

static void nest_free(nest_net *n) {
  int i;
  for (i = 0; i < n->nparams; i++) free(n->names[i]);
  dt_module_free(n->net);
  memset(n, 0, sizeof *n);
}

/* Decodes prog[0..len); returns 0 when a library call broke its contract (the fuzzer aborts). */
static int nest_build(nest_net *n, const unsigned char *prog, size_t len) {
  dt_module *stack[NEST_MAX_OPEN + 1];
  int index[NEST_MAX_OPEN + 1], depth = 0, skipped = 0, nlin = 0;
  char path[NEST_MAX_OPEN * 12 + 16];
  size_t plen[NEST_MAX_OPEN + 1], i;
  memset(n, 0, sizeof *n);
  if (!(n->net = dt_sequential())) return 0;
  stack[0] = n->net; index[0] = 0; plen[0] = 0; path[0] = 0;
  for (i = 0; i < len; i++) {
    unsigned char op = prog[i];
    dt_module *cur = stack[depth];
    if (op == '(') {
      dt_module *s;
      dt_status st;
      if (depth >= NEST_MAX_OPEN) { skipped++; continue; }
      if (!(s = dt_sequential())) return 0;
      st = dt_sequential_add(cur, s);
      if ((st != DT_OK) != (depth + 2 > DT_MODULE_MAX_DEPTH)) return 0; /* refused exactly past the limit */
      if (st != DT_OK) {
        if (st != DT_ERR_INVALID_ARGUMENT || strncmp(dt_last_error(), "dt_sequential_add: sequentials nest at most", 43) != 0) return 0;
        n->refused++; skipped++;
        continue;
      }
      plen[depth + 1] = plen[depth] + (size_t)sprintf(path + plen[depth], "%d.", index[depth]);
      index[depth]++;
      stack[++depth] = s; index[depth] = 0;
    } else if (op == ')') {
      if (skipped) skipped--;
      else if (depth > 0) depth--;
    } else if (op == 'R') {
      if (dt_sequential_add(cur, dt_relu_layer()) != DT_OK) return 0;
      index[depth]++;
    } else if (op == 'L' && i + 2 < len) {
      int64_t a = prog[i + 1] % 4 + 1, b = prog[i + 2] % 4 + 1;
      int k;
      i += 2;
      if (nlin == NEST_MAX_LAYERS) continue;
      if (dt_sequential_add(cur, dt_linear(a, b)) != DT_OK) return 0;
      if (!nlin) n->in_first = a;
      for (k = 0; k < 2; k++) {
        char *nm = (char *)malloc(plen[depth] + 24);
        if (!nm) return 0;
        sprintf(nm, "%.*s%d.%s", (int)plen[depth], path, index[depth], k ? "bias" : "weight");
        n->names[n->nparams++] = nm;
      }
      index[depth]++;
      nlin++;
    } else if (op == 'D') n->f64 = 1;
  }
  if (n->f64 && dt_module_to_dtype(n->net, DT_F64) != DT_OK) return 0;
  return 1;
}
#endif
