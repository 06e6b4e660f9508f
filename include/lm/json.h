/* JSON: reading through jansson with this project's rules, and a string
 * builder for writing JSON text (numbers formatted by us, strings escaped by
 * jansson). */
#ifndef LM_JSON_H
#define LM_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "lm/error.h"

/* Parses exactly len bytes (no terminator needed: a safetensors header is
 * followed by tensor data) as one JSON value of any type. A duplicate key
 * is an error (two readers could take different values), and so are
 * integers beyond 64 bits, \u0000 in strings, invalid UTF-8 and nesting
 * deeper than jansson's 2048. NULL with "invalid JSON at byte N: ..." on
 * error; free with json_decref. */
json_t *json_parse(const char *text, size_t len, Error *err);

/* v as a size: a JSON integer (not 3.0, not 3e0) from 0 to max. Returns 0
 * and sets *out, or -1. */
int json_size(const json_t *v, size_t max, size_t *out);

/* String builder over an stb_ds char array; always NUL-terminated. */
void sb_appendf(char **sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string literal. Bytes that are not well-formed UTF-8 become
 * U+FFFD, so the text stays valid JSON whatever s holds. */
void sb_append_json_string(char **sb, const char *s);
/* s as a jansson string, those bytes likewise replaced (NULL: out of memory). */
json_t *json_string_lossy(const char *s);
void sb_free(char **sb);
/* v as compact JSON text for a terminal: every byte printable ASCII, as
 * JSON_ENSURE_ASCII gives plus DEL (U+007F), which jansson leaves raw,
 * written \u007f. flags are added to JSON_COMPACT | JSON_ENSURE_ASCII.
 * malloc'd; NULL when out of memory. */
char *json_dumps_ascii(const json_t *v, size_t flags);

/* v as a JSON number printed with fmt ("%.6f"), or null where JSON has no
 * number for it (NaN, infinities). Returns buf or "null". */
#define JSON_NUMBER_MAX 64
const char *json_number(char buf[JSON_NUMBER_MAX], const char *fmt, double v);

#endif
