/* JSON through jansson: parsing with our rules and error lines, sizes as
 * integers, and the string builder the JSON writers use. */
#include "lm/json.h"

#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/utf8.h"
#include "lm/ds.h"

json_t *json_parse(const char *text, size_t len, Error *err) {
    json_error_t e;
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
    if (!j) err_set(err, "invalid JSON at byte %d: %s", e.position, e.text);
    return j;
}

int json_size(const json_t *v, size_t max, size_t *out) {
    if (!json_is_integer(v)) return -1;
    json_int_t n = json_integer_value(v);
    if (n < 0 || (unsigned long long)n > max) return -1;
    *out = (size_t)n;
    return 0;
}

void sb_appendf(char **sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t old = arrlenu(*sb);
    if (old) old--; /* overwrite the terminator */
    arrsetlen(*sb, old + (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(*sb + old, (size_t)n + 1, fmt, ap);
    va_end(ap);
}

json_t *json_string_lossy(const char *s) {
    /* jansson refuses strings that are not UTF-8: replace those bytes first. */
    char *valid = NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        uint32_t cp;
        size_t n = utf8_decode(p, left, &cp);
        if (n) memcpy(arraddnptr(valid, n), p, n);
        else memcpy(arraddnptr(valid, 3), "\xEF\xBF\xBD", 3);
        p += n ? n : 1;
        left -= n ? n : 1;
    }
    json_t *str = json_stringn(valid ? valid : "", arrlenu(valid));
    arrfree(valid);
    return str;
}

void sb_append_json_string(char **sb, const char *s) {
    json_t *str = json_string_lossy(s);
    char *quoted = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
    /* Only out of memory gets here without text: null keeps the JSON valid. */
    sb_appendf(sb, "%s", quoted ? quoted : "null");
    free(quoted);
    json_decref(str);
}

char *json_dumps_ascii(const json_t *v, size_t flags) {
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII | flags);
    if (!text) return NULL;
    size_t dels = 0, len = 0;
    for (; text[len]; len++) dels += text[len] == 0x7f;
    if (!dels) return text;
    /* DEL only appears inside strings: the rest of JSON's syntax is printable. */
    char *out = malloc(len + 5 * dels + 1), *o = out;
    if (out)
        for (const char *t = text; *t; t++) {
            if (*t == 0x7f) o += sprintf(o, "\\u007f");
            else *o++ = *t;
        }
    if (out) *o = 0;
    free(text);
    return out;
}

void sb_free(char **sb) {
    arrfree(*sb);
    *sb = NULL;
}

const char *json_number(char buf[JSON_NUMBER_MAX], const char *fmt, double v) {
    if (!isfinite(v)) return "null";
    snprintf(buf, JSON_NUMBER_MAX, fmt, v);
    return buf;
}
