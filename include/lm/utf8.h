/* UTF-8 encoding and decoding of single code points. */
#ifndef LM_UTF8_H
#define LM_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes one sequence at s (len bytes available); returns its length, or 0
 * for an empty, invalid or truncated one (the caller then consumes one byte). */
size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);
/* The offset of the first byte of s that is not valid UTF-8 (len: none). */
size_t utf8_invalid_at(const char *s, size_t len);
/* Writes cp (at most 4 bytes) to out; returns the length. */
size_t utf8_encode(uint32_t cp, char *out);
/* Length of the longest prefix of s[0..len) that ends on a character
 * boundary, given that s may stop inside a character: an incomplete final
 * sequence is left out (for streaming decoded text). Invalid bytes count as
 * complete. */
size_t utf8_complete_prefix(const unsigned char *s, size_t len);
/* `at` moved forward to the start of a character (past continuation bytes), at most to len. */
size_t utf8_boundary(const char *text, size_t len, size_t at);

#endif
