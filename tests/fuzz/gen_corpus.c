/* Writes the fuzzers' seed corpora (run from the repository root):
     cc -std=c99 -I. tests/fuzz/gen_corpus.c -o build/gen_corpus -lm && build/gen_corpus
   tests/fuzz/corpus_safetensors/: files dt_module_save writes for the
   fuzzer's two networks (float32, float64), and broken variants of them;
   nested_*: "DTNN<program>\n<file>" inputs (tests/fuzz/nest_decode.h), networks of nested
   sequentials with the files they save, and broken variants;
   tests/fuzz/corpus_device/: device names, good and bad. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#define DEVTENSOR_IMPLEMENTATION
#include "../../devtensor.h"
#include "nest_decode.h"

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

/* "DTNN" prog "\n", then the file the network of prog saves (edited: `from` to `to`, when given). */
static void nested(const char *path, const char *prog, size_t plen, const char *from, const char *to) {
  nest_net n;
  unsigned char *v, *p;
  size_t vn;
  if (!nest_build(&n, (const unsigned char *)prog, plen) || dt_module_save(n.net, "tests/fuzz/nested.tmp") != DT_OK) {
    fprintf(stderr, "cannot build %s: %s\n", path, dt_last_error()); exit(1);
  }
  nest_free(&n);
  v = get("tests/fuzz/nested.tmp", &vn);
  remove("tests/fuzz/nested.tmp");
  if (from) {
    edit((const char *)v, vn, "tests/fuzz/nested.tmp", from, to);
    free(v);
    v = get("tests/fuzz/nested.tmp", &vn);
    remove("tests/fuzz/nested.tmp");
  }
  p = (unsigned char *)malloc(4 + plen + 1 + vn);
  memcpy(p, "DTNN", 4); memcpy(p + 4, prog, plen); p[4 + plen] = '\n'; memcpy(p + 5 + plen, v, vn);
  put(path, p, 5 + plen + vn);
  free(p); free(v);
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
  /* huge dims in empty shapes, and dims past 2^64 - 1 */
  edit((const char *)v, vn, ST "shape_huge_empty.bin", "[3,2]", "[0,18446744073709551615]");
  edit((const char *)v, vn, ST "shape_huge_empty3.bin", "[3,2]", "[4294967296,4294967296,0]");
  edit((const char *)v, vn, ST "shape_past_u64.bin", "[3,2]", "[18446744073709551616,2]");
  /* JSON that serde_json, the format's reference reader, refuses; and some it takes */
  edit((const char *)v, vn, ST "json_bad_hex.bin", "\"pt\"", "\"p\\u12g4\"");
  edit((const char *)v, vn, ST "json_lone_surrogate.bin", "\"pt\"", "\"\\ud800\"");
  edit((const char *)v, vn, ST "json_pair.safetensors", "\"pt\"", "\"\\ud83d\\ude00\"");
  edit((const char *)v, vn, ST "json_bare_word.bin", "\"F32\",", "\"F32\",\"x\":trueish,");
  edit((const char *)v, vn, ST "json_leading_zero.bin", "[3,2]", "[03,2]");
  edit((const char *)v, vn, ST "json_plus.bin", "\"F32\",", "\"F32\",\"x\":+1,");
  edit((const char *)v, vn, ST "json_nan.bin", "\"F32\",", "\"F32\",\"x\":NaN,");
  edit((const char *)v, vn, ST "json_number_ok.safetensors", "\"F32\",", "\"F32\",\"x\":[-0.5e-3,1E2,0],");
  edit((const char *)v, vn, ST "json_trailing_comma.bin", "[3,2]", "[3,2,]");
  edit((const char *)v, vn, ST "json_dup_dtype.bin", "\"F32\",", "\"F32\",\"dtype\":\"F32\",");
  edit((const char *)v, vn, ST "json_dup_metadata.bin", "\"__metadata__\":{\"format\":\"pt\"}", "\"__metadata__\":{},\"__metadata__\":{}");
  edit((const char *)v, vn, ST "json_metadata_array.bin", "{\"format\":\"pt\"}", "[]");
  edit((const char *)v, vn, ST "json_metadata_null.safetensors", "{\"format\":\"pt\"}", "null");
  edit((const char *)v, vn, ST "json_bad_utf8.bin", "\"pt\"", "\"\xc0\xaf\"");
  edit((const char *)v, vn, ST "json_dtype_unknown.bin", "\"F32\"", "\"X32\"");
  free(v);
  /* nested networks */
  {
    static const char two[] = "(L\x01\x02R(L\x02\x00))L\x00\x01";
    char deep[256], cut[512], full[512];
    size_t k;
    nested(ST "nested_valid.safetensors", two, sizeof two - 1, NULL, NULL);
    nested(ST "nested_f64.safetensors", "D(RL\x01\x01)", 10, NULL, NULL);
    nested(ST "nested_wrong_name.bin", two, sizeof two - 1, "\"0.2.0.weight\"", "\"0.2.1.weight\"");
    nested(ST "nested_empty.bin", "((()))R", 7, NULL, NULL);
    /* 63 levels down: the longest names there are */
    for (k = 0; k < 63; k++) deep[k] = '(';
    memcpy(deep + 63, "L\x01\x02RL\x02\x00", 7);
    nested(ST "nested_depth_64.safetensors", deep, 70, NULL, NULL);
    /* 70 levels asked: refused past 64, the layers go in at 64 */
    for (k = 0; k < 70; k++) deep[k] = '(';
    memcpy(deep + 70, "L\x01\x02)RL\x02\x00", 8);
    nested(ST "nested_too_deep.safetensors", deep, 78, NULL, NULL);
    /* 40 levels and two layers: the names the old 63-byte cut made the same */
    for (k = 0; k < 40; k++) deep[k] = '(';
    memcpy(deep + 40, "L\x01\x01L\x01\x01", 6);
    strcpy(full, "\"");
    for (k = 0; k < 40; k++) strcat(full, "0.");
    strcat(full, "1.weight\"");
    memcpy(cut, full, 64); cut[64] = '"'; cut[65] = 0;
    nested(ST "nested_long_names.safetensors", deep, 46, NULL, NULL);
    nested(ST "nested_cut_names.bin", deep, 46, full, cut);
  }
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
