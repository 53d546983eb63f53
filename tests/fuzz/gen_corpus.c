/* Writes the fuzzers' seed corpora (run from the repository root):
     cc -std=c99 -I. tests/fuzz/gen_corpus.c -o build/gen_corpus -lm && build/gen_corpus
   tests/fuzz/corpus_safetensors/: files dt_module_save writes for the
   fuzzer's two networks (float32, float64), and broken variants of them;
   tests/fuzz/corpus_device/: device names, good and bad. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../../devtensor.h"

#define ST "tests/fuzz/corpus_safetensors/"
#define DV "tests/fuzz/corpus_device/"

static void put(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) { fprintf(stderr, "cannot write %s\n", path); exit(1); }
}

static unsigned char *get(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  unsigned char *p;
  long len;
  if (!f) exit(1);
  fseek(f, 0, SEEK_END); len = ftell(f); fseek(f, 0, SEEK_SET);
  p = (unsigned char *)malloc((size_t)len + 1);
  if (!p || fread(p, 1, (size_t)len, f) != (size_t)len) exit(1);
  fclose(f);
  *n = (size_t)len;
  return p;
}

/* A file with header text h (padded to 8) and n data bytes of value v. */
static void file_with(const char *path, const char *h, size_t ndata) {
  size_t hl = strlen(h), pad = (8 - hl % 8) % 8, i, total = 8 + hl + pad + ndata;
  unsigned char *p = (unsigned char *)calloc(total, 1);
  uint64_t len = hl + pad;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(len >> (8 * i));
  memcpy(p + 8, h, hl);
  memset(p + 8 + hl, ' ', pad);
  for (i = 0; i < ndata; i++) p[8 + hl + pad + i] = (unsigned char)(i * 37);
  put(path, p, total);
  free(p);
}

/* The valid file with the first `from` in its header replaced by `to` (same length or not). */
static void edit(const char *valid, size_t vn, const char *path, const char *from, const char *to) {
  uint64_t hl = 0;
  size_t i;
  char *h, *at, *out;
  for (i = 0; i < 8; i++) hl |= (uint64_t)valid[i] << (8 * i) & ((uint64_t)0xff << (8 * i));
  h = (char *)malloc(hl + 1);
  memcpy(h, valid + 8, hl); h[hl] = 0;
  at = strstr(h, from);
  if (!at) { fprintf(stderr, "no %s\n", from); exit(1); }
  out = (char *)malloc(hl + strlen(to) + 1);
  memcpy(out, h, (size_t)(at - h));
  strcpy(out + (at - h), to);
  strcat(out, at + strlen(from));
  {
    size_t ol = strlen(out), total = 8 + ol + (vn - 8 - hl);
    unsigned char *p = (unsigned char *)malloc(total);
    for (i = 0; i < 8; i++) p[i] = (unsigned char)((uint64_t)ol >> (8 * i));
    memcpy(p + 8, out, ol);
    memcpy(p + 8 + ol, valid + 8 + hl, vn - 8 - hl);
    put(path, p, total);
    free(p);
  }
  free(h); free(out);
}

int main(void) {
  dt_module *net = dt_sequential();
  unsigned char *v;
  size_t vn;
  char deep[512];
  int i;
  mkdir("tests/fuzz/corpus_safetensors", 0777);
  mkdir("tests/fuzz/corpus_device", 0777);
  dt_manual_seed(7);
  dt_sequential_add(net, dt_linear(2, 3));
  dt_sequential_add(net, dt_relu_layer());
  dt_sequential_add(net, dt_linear(3, 1));
  if (dt_module_save(net, ST "valid_f32.safetensors") != DT_OK) return 1;
  dt_module_to_dtype(net, DT_F64);
  if (dt_module_save(net, ST "valid_f64.safetensors") != DT_OK) return 1;
  dt_module_free(net);
  v = get(ST "valid_f32.safetensors", &vn);
  put(ST "empty.bin", "", 0);
  put(ST "seven_bytes.bin", v, 7);
  put(ST "truncated_data.bin", v, vn - 3);
  put(ST "truncated_header.bin", v, 40);
  { unsigned char b[16]; memcpy(b, v, 16); for (i = 0; i < 8; i++) b[i] = 0xff; put(ST "huge_header_len.bin", b, 16); }
  { unsigned char b[16]; memcpy(b, v, 16); b[0] = 1; for (i = 1; i < 8; i++) b[i] = 0; put(ST "header_len_1.bin", b, 16); }
  edit((const char *)v, vn, ST "dtype_f16.bin", "\"F32\"", "\"F16\"");
  edit((const char *)v, vn, ST "dtype_long.bin", "\"F32\"", "\"F32F32F32F32F32F32F32F32F32\"");
  edit((const char *)v, vn, ST "shape_swapped.bin", "[3,2]", "[2,3]");
  edit((const char *)v, vn, ST "shape_9d.bin", "[3,2]", "[1,1,1,1,1,1,1,3,2]");
  edit((const char *)v, vn, ST "shape_huge.bin", "[3,2]", "[9007199254740993,2]");
  edit((const char *)v, vn, ST "offsets_past_end.bin", "[0,24]", "[1000,1024]");
  edit((const char *)v, vn, ST "offsets_reversed.bin", "[0,24]", "[24,0]");
  edit((const char *)v, vn, ST "offsets_overlap.bin", "[24,36]", "[0,12]");
  edit((const char *)v, vn, ST "offsets_big.bin", "[0,24]", "[9007199254740991,9007199254741015]");
  edit((const char *)v, vn, ST "missing_bias.bin", "\"0.bias\"", "\"0.bia\"");
  edit((const char *)v, vn, ST "duplicate.bin", "\"0.bias\"", "\"0.weight\"");
  edit((const char *)v, vn, ST "escaped_name.bin", "\"0.weight\"", "\"0.w\\u0065ight\"");
  edit((const char *)v, vn, ST "bad_escape.bin", "\"0.weight\"", "\"0.w\\u00zzight\"");
  edit((const char *)v, vn, ST "trailing_garbage.bin", "\"format\":\"pt\"}}", "\"format\":\"pt\"}}x");
  edit((const char *)v, vn, ST "unterminated.bin", "\"format\":\"pt\"}}", "\"format\":\"pt\"");
  strcpy(deep, "\"__metadata__\":");
  for (i = 0; i < 40; i++) strcat(deep, "[");
  for (i = 0; i < 40; i++) strcat(deep, "]");
  edit((const char *)v, vn, ST "deep_metadata.bin", "\"__metadata__\":{\"format\":\"pt\"}", deep);
  edit((const char *)v, vn, ST "metadata_values.bin", "{\"format\":\"pt\"}", "{\"a\":[1,-2.5e3,true,false,null,{\"b\":\"\\n\\t\\\"\"}]}");
  file_with(ST "not_object.bin", "[]", 0);
  file_with(ST "empty_object.bin", "{}", 0);
  file_with(ST "only_metadata.bin", "{\"__metadata__\":{}}", 0);
  file_with(ST "unknown_tensor.bin", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
  /* the data layout: the tensors, sorted by offset, fill the data exactly (any order of names) */
#define FZ_T(n, sh, b, e) "\"" n "\":{\"dtype\":\"F32\",\"shape\":" sh ",\"data_offsets\":[" b "," e "]}"
  file_with(ST "offsets_permuted.safetensors",
            "{" FZ_T("2.bias", "[1]", "0", "4") "," FZ_T("2.weight", "[1,3]", "4", "16") ","
                FZ_T("0.bias", "[3]", "16", "28") "," FZ_T("0.weight", "[3,2]", "28", "52") "}", 52);
  file_with(ST "offsets_gap.bin",
            "{" FZ_T("2.bias", "[1]", "0", "4") "," FZ_T("2.weight", "[1,3]", "8", "20") ","
                FZ_T("0.bias", "[3]", "20", "32") "," FZ_T("0.weight", "[3,2]", "32", "56") "}", 56);
  file_with(ST "offsets_not_at_zero.bin",
            "{" FZ_T("2.bias", "[1]", "4", "8") "," FZ_T("2.weight", "[1,3]", "8", "20") ","
                FZ_T("0.bias", "[3]", "20", "32") "," FZ_T("0.weight", "[3,2]", "32", "56") "}", 56);
  file_with(ST "trailing_data.bin",
            "{" FZ_T("0.weight", "[3,2]", "0", "24") "," FZ_T("0.bias", "[3]", "24", "36") ","
                FZ_T("2.weight", "[1,3]", "36", "48") "," FZ_T("2.bias", "[1]", "48", "52") "}", 56);
#undef FZ_T
  free(v);
  /* device names */
  {
    static const char *names[] = {"cpu", "cpu:0", "cuda", "cuda:0", "cuda:7", "gpu", "gpu:1", "cuda:2147483647",
                                  "cuda:2147483648", "cuda:99999999999999999999", "cuda:", "cpu:1", "tpu", "",
                                  "cuda:007", "cuda:1x", "cuda:-1", " cpu", "CPU", "cuda::1"};
    char path[256];
    for (i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
      snprintf(path, sizeof path, DV "name_%02d", i);
      put(path, names[i], strlen(names[i]));
    }
    put(DV "binary_device", "\x01\x00\x00\x00\xff\xff\xff\x7f", 8);
    put(DV "binary_negative", "\x00\x00\x00\x00\x00\x00\x00\x80", 8);
  }
  printf("corpora written\n");
  return 0;
}
