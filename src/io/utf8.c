/* UTF-8 encoding and decoding of single code points. */
#include "lm/utf8.h"

size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp) {
    if (!len) return 0; /* s[0] may be a string's terminator: not a character */
    unsigned char c = s[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) { *cp = c; return 1; }
    if ((c & 0xE0) == 0xC0) { n = 2; v = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 3; v = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (n > len) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return n;
}

size_t utf8_invalid_at(const char *s, size_t len) {
    uint32_t cp;
    for (size_t at = 0; at < len;) {
        size_t n = utf8_decode((const unsigned char *)s + at, len - at, &cp);
        if (!n) return at;
        at += n;
    }
    return len;
}

size_t utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t utf8_complete_prefix(const unsigned char *s, size_t len) {
    /* Look back at most 3 bytes for the lead byte of the last sequence. */
    for (size_t back = 1; back <= 4 && back <= len; back++) {
        unsigned char c = s[len - back];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte */
        size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return need > back ? len - back : len;
    }
    return len;
}

size_t utf8_boundary(const char *text, size_t len, size_t at) {
    while (at < len && ((unsigned char)text[at] & 0xC0) == 0x80) at++;
    return at;
}
