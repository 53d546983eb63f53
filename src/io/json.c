/* It takes what serde_json (the reader of the format's reference implementation) takes and
   refuses what it refuses (RFC 8259): whitespace is space, tab, CR and LF; literals are
   exactly true, false, null; numbers have no '+', no leading zeros, digits on both sides of
   a '.', and must be finite as doubles; strings have no control characters, only the escapes
   \" \\ \/ \b \f \n \r \t \uXXXX (four hex digits, surrogates in pairs); containers have no
   trailing commas and nest at most 127 deep (serde_json's limit). UTF-8 is checked over the
   whole header first, as the reference does. A failure leaves its reason in `why`. */

#define DT__JSON_MAX_DEPTH 127

typedef struct dt__json { const char *p, *begin, *end; int depth; const char *why, *at; } dt__json;

static int dt__json_bad(dt__json *j, const char *why) {
  if (!j->why) { j->why = why; j->at = j->p; }
  return 0;
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF); returns the offset of
   the first bad byte, or n. */
static size_t dt__utf8_check(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i], need, cp, k;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { need = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { need = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { need = 3; cp = c & 0x07; }
    else return i;
    if (n - i <= need) return i;
    for (k = 1; k <= need; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((need == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff))) return i;
    i += need + 1;
  }
  return n;
}

static void dt__json_ws(dt__json *j) { while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++; }
static int dt__json_eat(dt__json *j, char c) { dt__json_ws(j); if (j->p < j->end && *j->p == c) { j->p++; return 1; } return 0; }
static int dt__json_peek(dt__json *j, char c) { dt__json_ws(j); return j->p < j->end && *j->p == c; }

static int dt__json_hex4(dt__json *j, unsigned *v) {
  int k;
  *v = 0;
  for (k = 0; k < 4; k++) {
    char h = j->p < j->end ? *j->p : 0;
    unsigned d = h >= '0' && h <= '9' ? (unsigned)(h - '0') : h >= 'a' && h <= 'f' ? (unsigned)(h - 'a' + 10) : h >= 'A' && h <= 'F' ? (unsigned)(h - 'A' + 10) : 16;
    if (d == 16) return dt__json_bad(j, "a \\u escape needs four hex digits");
    *v = *v * 16 + d;
    j->p++;
  }
  return 1;
}

/* A string: its bytes, escapes decoded (as UTF-8), into out when out is not NULL: at most
   cap - 1 of them, then a NUL; *len gets its whole length (a longer one fits no name here). */
static int dt__json_string(dt__json *j, char *out, size_t cap, size_t *len) {
  size_t n = 0;
  if (!dt__json_eat(j, '"')) return dt__json_bad(j, "expected a string");
  for (;;) {
    unsigned char c;
    unsigned cp;
    char u[4];
    int k, nu = 1;
    if (j->p >= j->end) return dt__json_bad(j, "an unterminated string");
    c = (unsigned char)*j->p;
    if (c == '"') break;
    if (c < 0x20) return dt__json_bad(j, "a control character in a string (escape it)");
    j->p++;
    u[0] = (char)c;
    if (c == '\\') {
      char e = j->p < j->end ? *j->p : 0;
      j->p++;
      switch (e) {
        case '"': case '\\': case '/': u[0] = e; break;
        case 'b': u[0] = '\b'; break; case 'f': u[0] = '\f'; break; case 'n': u[0] = '\n'; break;
        case 'r': u[0] = '\r'; break; case 't': u[0] = '\t'; break;
        case 'u':
          if (!dt__json_hex4(j, &cp)) return 0;
          if (cp >= 0xdc00 && cp <= 0xdfff) return dt__json_bad(j, "a lone low surrogate in a \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned lo;
            if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') return dt__json_bad(j, "a lone high surrogate in a \\u escape");
            j->p += 2;
            if (!dt__json_hex4(j, &lo)) return 0;
            if (lo < 0xdc00 || lo > 0xdfff) return dt__json_bad(j, "a high surrogate not followed by a low one");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          if (cp < 0x80) u[0] = (char)cp;
          else if (cp < 0x800) { u[0] = (char)(0xc0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3f)); nu = 2; }
          else if (cp < 0x10000) { u[0] = (char)(0xe0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); u[2] = (char)(0x80 | (cp & 0x3f)); nu = 3; }
          else { u[0] = (char)(0xf0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 0x3f)); u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); u[3] = (char)(0x80 | (cp & 0x3f)); nu = 4; }
          break;
        default: j->p--; return dt__json_bad(j, "an unknown escape in a string");
      }
    }
    for (k = 0; k < nu; k++, n++) if (out && n + 1 < cap) out[n] = u[k];
  }
  j->p++;
  if (out && cap) out[n < cap ? n : cap - 1] = 0;
  if (len) *len = n;
  return 1;
}

static int dt__json_digit(const dt__json *j) { return j->p < j->end && *j->p >= '0' && *j->p <= '9'; }

/* A number, checked: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, finite as a double. */
static int dt__json_number(dt__json *j) {
  const char *ip, *ie, *fp = NULL, *fe = NULL, *d;
  long e10 = 0, lead = -1, at = 0;
  int eneg = 0;
  static const char dmax[] = "1797693134862315807937289714053034150799"; /* DBL_MAX rounds up to infinity from here */
  if (j->p < j->end && *j->p == '-') j->p++;
  if (!dt__json_digit(j)) return dt__json_bad(j, "expected a value");
  ip = j->p;
  if (*j->p == '0') j->p++;
  else while (dt__json_digit(j)) j->p++;
  ie = j->p;
  if (j->p < j->end && *j->p == '.') {
    j->p++;
    if (!dt__json_digit(j)) return dt__json_bad(j, "a number with no digit after its '.'");
    fp = j->p;
    while (dt__json_digit(j)) j->p++;
    fe = j->p;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-')) eneg = *j->p++ == '-';
    if (!dt__json_digit(j)) return dt__json_bad(j, "a number with no digit in its exponent");
    while (dt__json_digit(j)) { if (e10 < 100000000L) e10 = e10 * 10 + (*j->p - '0'); j->p++; }
    if (eneg) e10 = -e10;
  }
  /* the power of ten of the first nonzero digit, against DBL_MAX's 308 */
  for (d = ip; d < ie && lead < 0; d++, at++) if (*d != '0') lead = at;
  for (d = fp; fp && d < fe && lead < 0; d++, at++) if (*d != '0') lead = at;
  if (lead < 0) return 1; /* zero */
  e10 += (long)(ie - ip) - 1 - lead;
  if (e10 < 308) return 1;
  if (e10 == 308) { /* compare the digits with DBL_MAX's rounding boundary */
    int k = 0, cmp = 0;
    for (d = ip; d < ie && cmp == 0; d++) if (d - ip >= lead) cmp = k < 40 ? *d - dmax[k++] : (*d != '0');
    for (d = fp; fp && d < fe && cmp == 0; d++) if ((ie - ip) + (d - fp) >= lead) cmp = k < 40 ? *d - dmax[k++] : (*d != '0');
    if (cmp < 0 || (cmp == 0 && k <= 40)) return 1;
  }
  return dt__json_bad(j, "a number out of a double's range");
}

/* An unsigned integer that serde_json reads as a usize: digits only (no sign, '.', exponent,
   leading zero), at most 2^64 - 1. */
static int dt__json_uint(dt__json *j, uint64_t *v) {
  dt__json_ws(j);
  *v = 0;
  if (!dt__json_digit(j)) return dt__json_bad(j, "expected a non-negative integer");
  if (*j->p == '0') j->p++;
  else
    while (dt__json_digit(j)) {
      unsigned dg = (unsigned)(*j->p - '0');
      if (*v > (UINT64_MAX - dg) / 10) return dt__json_bad(j, "an integer past 2^64 - 1");
      *v = *v * 10 + dg;
      j->p++;
    }
  if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')) return dt__json_bad(j, "expected an integer, not a fraction");
  return 1;
}

static int dt__json_open(dt__json *j, char c) {
  if (!dt__json_eat(j, c)) return dt__json_bad(j, c == '{' ? "expected an object" : "expected an array");
  if (++j->depth > DT__JSON_MAX_DEPTH) return dt__json_bad(j, "containers nested more than 127 deep");
  return 1;
}

/* Between the members of an object or array: 1 for another, 0 at its end (closed), -1 on an error. */
static int dt__json_next(dt__json *j, char close, int first) {
  if (dt__json_eat(j, close)) { j->depth--; return 0; }
  if (!first && !dt__json_eat(j, ',')) { dt__json_bad(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'"); return -1; }
  if (!first && dt__json_peek(j, close)) { dt__json_bad(j, "a trailing comma"); return -1; }
  return 1;
}

/* Any value, checked and skipped. */
static int dt__json_skip(dt__json *j) {
  int first, r;
  dt__json_ws(j);
  if (j->p >= j->end) return dt__json_bad(j, "expected a value");
  switch (*j->p) {
    case '"': return dt__json_string(j, NULL, 0, NULL);
    case '{': case '[': {
      char close = *j->p == '{' ? '}' : ']';
      if (!dt__json_open(j, *j->p)) return 0;
      for (first = 1; (r = dt__json_next(j, close, first)) > 0; first = 0) {
        if (close == '}' && (!dt__json_string(j, NULL, 0, NULL) || !dt__json_eat(j, ':'))) return dt__json_bad(j, "expected \"key\": value");
        if (!dt__json_skip(j)) return 0;
      }
      return r == 0;
    }
    case 't': case 'f': case 'n': {
      const char *lit = *j->p == 't' ? "true" : *j->p == 'f' ? "false" : "null";
      size_t n = strlen(lit);
      if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) return dt__json_bad(j, "an unknown word (JSON has true, false and null)");
      j->p += n;
      return 1;
    }
    default: return dt__json_number(j);
  }
}
