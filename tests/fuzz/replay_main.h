/* tests/fuzz/replay_main.h — a plain main for a libFuzzer target, so that its
   corpus replays in an ordinary build (gcc, -fsanitize=address,undefined,
   valgrind) without libFuzzer. Include it after LLVMFuzzerTestOneInput, under
   #ifndef FUZZ_LIBFUZZER, with FUZZ_NAME and FUZZ_DEFAULT_DIR defined.

   Usage: ./replay [FILE_OR_DIR ...]   (default: FUZZ_DEFAULT_DIR, from the repository root)
   Prints "PASS <name>: N inputs" and the harness's summary line; a failed
   invariant aborts inside the target (a crash counts as a failure). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static long replay_count;

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long n;
  if (!f) { printf("FAIL %s: cannot open %s\n", FUZZ_NAME, path); return 1; }
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return 1; }
  buf = (unsigned char *)malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); fclose(f); printf("FAIL %s: cannot read %s\n", FUZZ_NAME, path); return 1; }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  replay_count++;
  return 0;
}

static int replay_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) { printf("FAIL %s: no such file or directory %s\n", FUZZ_NAME, path); return 1; }
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    int bad = 0;
    if (!d) { printf("FAIL %s: cannot open %s\n", FUZZ_NAME, path); return 1; }
    while ((e = readdir(d)) != NULL) {
      char sub[4096];
      struct stat es;
      if (e->d_name[0] == '.') continue;
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      if (stat(sub, &es) == 0 && S_ISREG(es.st_mode)) bad |= replay_file(sub);
    }
    closedir(d);
    return bad;
  }
  return replay_file(path);
}

int main(int argc, char **argv) {
  int i, bad = 0;
  if (argc < 2) bad |= replay_path(FUZZ_DEFAULT_DIR);
  for (i = 1; i < argc; i++) bad |= replay_path(argv[i]);
  if (!bad && replay_count == 0) { printf("FAIL %s: no inputs\n", FUZZ_NAME); bad = 1; }
  if (!bad) printf("PASS %s: %ld inputs\n", FUZZ_NAME, replay_count);
  printf("%d passed, %d failed, 0 skipped\n", bad ? 0 : 1, bad ? 1 : 0);
  return bad;
}
