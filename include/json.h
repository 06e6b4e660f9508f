/* A small JSON reader (for safetensors headers and the config) and a string
 * builder for writing. Strings are UTF-8; \uXXXX escapes are decoded. */
#ifndef LM_JSON_H
#define LM_JSON_H

#include <stddef.h>

#include "common.h"

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } JsonType;

typedef struct Json {
    JsonType type;
    double num;          /* NUMBER, BOOL */
    char *str;           /* STRING */
    struct Json *items;  /* ARRAY, OBJECT values (stb_ds array) */
    char **keys;         /* OBJECT keys (stb_ds array, parallel to items) */
} Json;

/* Returns a heap tree or NULL with a message (position included). */
Json *json_parse(const char *text, size_t len, Error *err);
void json_free(Json *j);
size_t json_len(const Json *j);                 /* items of an array or object */
const Json *json_get(const Json *obj, const char *key);

/* String builder over an stb_ds char array; always NUL-terminated. */
void sb_appendf(char **sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_append_json_string(char **sb, const char *s);
void sb_free(char **sb);

#endif
