static DT__TLS char dt__cpu_err[256];

static const char *dt__cpu_last_error(void) { return dt__cpu_err; }

static int dt__cpu_device_count(char *why, size_t n) { (void)why; (void)n; return 1; }

/* Name, memory and cores from /proc on Linux; zeros elsewhere. */
static dt_status dt__cpu_device_info(int dev, dt_device_info *out) {
  (void)dev;
  snprintf(out->name, sizeof out->name, "cpu");
#ifdef __linux__
  {
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
      int named = 0;
      while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "processor", 9) == 0) out->multiprocessors++;
        if (!named && strncmp(line, "model name", 10) == 0) {
          const char *p = strchr(line, ':');
          size_t l;
          if (p) {
            for (p++; *p == ' ' || *p == '\t'; p++) {}
            l = strcspn(p, "\n");
            if (l >= sizeof out->name) l = sizeof out->name - 1;
            memcpy(out->name, p, l);
            out->name[l] = 0;
            named = 1;
          }
        }
      }
      fclose(f);
    }
    f = fopen("/proc/meminfo", "r");
    if (f) {
      while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) out->total_memory = (size_t)kb * 1024;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) out->free_memory = (size_t)kb * 1024;
      }
      fclose(f);
    }
  }
#endif
  return DT_OK;
}
