#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ds.h"

typedef struct Parser {
    const char *s;
    size_t len, pos;
    int depth;
    Error *err;
} Parser;

static void skip_ws(Parser *p) {
    while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos]) p->pos++;
}

static int fail(Parser *p, const char *what) {
    return err_set(p->err, "invalid JSON at byte %zu: %s", p->pos, what);
}

static void put_utf8(char **out, unsigned cp) {
    if (cp < 0x80) {
        arrput(*out, (char)cp);
    } else if (cp < 0x800) {
        arrput(*out, (char)(0xC0 | (cp >> 6)));
        arrput(*out, (char)(0x80 | (cp & 0x3F)));
    } else {
        arrput(*out, (char)(0xE0 | (cp >> 12)));
        arrput(*out, (char)(0x80 | ((cp >> 6) & 0x3F)));
        arrput(*out, (char)(0x80 | (cp & 0x3F)));
    }
}

static int parse_string(Parser *p, char **result) {
    char *out = NULL;
    p->pos++; /* opening quote */
    while (p->pos < p->len && p->s[p->pos] != '"') {
        unsigned char c = (unsigned char)p->s[p->pos++];
        if (c < 0x20) {
            arrfree(out);
            return fail(p, "control character in string");
        }
        if (c != '\\') {
            arrput(out, (char)c);
            continue;
        }
        if (p->pos >= p->len) break;
        char e = p->s[p->pos++];
        switch (e) {
        case '"': arrput(out, '"'); break;
        case '\\': arrput(out, '\\'); break;
        case '/': arrput(out, '/'); break;
        case 'b': arrput(out, '\b'); break;
        case 'f': arrput(out, '\f'); break;
        case 'n': arrput(out, '\n'); break;
        case 'r': arrput(out, '\r'); break;
        case 't': arrput(out, '\t'); break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 0; i < 4; i++) {
                char h = p->pos < p->len ? p->s[p->pos++] : 0;
                cp <<= 4;
                if (h >= '0' && h <= '9') cp |= (unsigned)(h - '0');
                else if (h >= 'a' && h <= 'f') cp |= (unsigned)(h - 'a' + 10);
                else if (h >= 'A' && h <= 'F') cp |= (unsigned)(h - 'A' + 10);
                else {
                    arrfree(out);
                    return fail(p, "bad \\u escape");
                }
            }
            put_utf8(&out, cp);
            break;
        }
        default: arrfree(out); return fail(p, "bad escape");
        }
    }
    if (p->pos >= p->len) {
        arrfree(out);
        return fail(p, "unterminated string");
    }
    p->pos++; /* closing quote */
    size_t n = arrlenu(out);
    *result = malloc(n + 1);
    if (!*result) {
        arrfree(out);
        return fail(p, "out of memory");
    }
    if (n) memcpy(*result, out, n);
    (*result)[n] = '\0';
    arrfree(out);
    return 0;
}

static void json_clear(Json *j);

/* Whether the text at the current position is `word`, within the length
 * (the text need not be NUL-terminated: a safetensors header is followed by
 * tensor data). */
static int literal(const Parser *p, const char *word) {
    size_t n = strlen(word);
    return p->len - p->pos >= n && memcmp(p->s + p->pos, word, n) == 0;
}

static int parse_value(Parser *p, Json *out) {
    memset(out, 0, sizeof *out);
    skip_ws(p);
    if (p->pos >= p->len) return fail(p, "unexpected end");
    if (++p->depth > 64) return fail(p, "nested too deeply");
    char c = p->s[p->pos];
    int rc = 0;
    if (c == '"') {
        out->type = JSON_STRING;
        rc = parse_string(p, &out->str);
    } else if (c == '{' || c == '[') {
        int obj = c == '{';
        out->type = obj ? JSON_OBJECT : JSON_ARRAY;
        p->pos++;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) {
            p->pos++;
        } else {
            for (;;) {
                char *key = NULL;
                if (obj) {
                    skip_ws(p);
                    if (p->pos >= p->len || p->s[p->pos] != '"') { rc = fail(p, "expected a key"); break; }
                    if ((rc = parse_string(p, &key))) break;
                    skip_ws(p);
                    if (p->pos >= p->len || p->s[p->pos] != ':') { free(key); rc = fail(p, "expected ':'"); break; }
                    p->pos++;
                }
                Json item;
                if ((rc = parse_value(p, &item))) { free(key); json_clear(&item); break; }
                arrput(out->items, item);
                if (obj) arrput(out->keys, key);
                skip_ws(p);
                if (p->pos < p->len && p->s[p->pos] == ',') { p->pos++; continue; }
                if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) { p->pos++; break; }
                rc = fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
                break;
            }
        }
    } else if (literal(p, "true") || literal(p, "false")) {
        out->type = JSON_BOOL;
        out->num = c == 't';
        p->pos += c == 't' ? 4 : 5;
    } else if (literal(p, "null")) {
        out->type = JSON_NULL;
        p->pos += 4;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t n = 0;
        while (p->pos < p->len && n < sizeof buf - 1 && strchr("+-0123456789.eE", p->s[p->pos]) && p->s[p->pos])
            buf[n++] = p->s[p->pos++];
        buf[n] = '\0';
        char *end;
        out->type = JSON_NUMBER;
        out->num = strtod(buf, &end);
        if (*end) rc = fail(p, "bad number");
    } else {
        rc = fail(p, "unexpected character");
    }
    p->depth--;
    return rc;
}

Json *json_parse(const char *text, size_t len, Error *err) {
    Parser p = {text, len, 0, 0, err};
    Json *j = calloc(1, sizeof *j);
    if (!j) {
        err_set(err, "out of memory");
        return NULL;
    }
    if (parse_value(&p, j) == 0) {
        skip_ws(&p);
        if (p.pos == p.len) return j;
        fail(&p, "trailing characters");
    }
    json_free(j);
    return NULL;
}

static void json_clear(Json *j) {
    for (size_t i = 0; i < arrlenu(j->items); i++) json_clear(&j->items[i]);
    for (size_t i = 0; i < arrlenu(j->keys); i++) free(j->keys[i]);
    arrfree(j->items);
    arrfree(j->keys);
    free(j->str);
}

void json_free(Json *j) {
    if (!j) return;
    json_clear(j);
    free(j);
}

size_t json_len(const Json *j) { return j ? arrlenu(j->items) : 0; }

const Json *json_get(const Json *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < arrlenu(obj->keys); i++)
        if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
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

void sb_append_json_string(char **sb, const char *s) {
    sb_appendf(sb, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') sb_appendf(sb, "\\%c", c);
        else if (c < 0x20) sb_appendf(sb, "\\u%04x", c);
        else sb_appendf(sb, "%c", c);
    }
    sb_appendf(sb, "\"");
}

void sb_free(char **sb) {
    arrfree(*sb);
    *sb = NULL;
}
