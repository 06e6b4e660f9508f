/* Bytes and words of the text that scored tokens stand for. */
#include "lm/text_units.h"

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

TextUnits text_units_scored(const Tokenizer *tok, const uint32_t *ids, size_t n) {
    TextUnits u = {0, 0};
    int prev_space = 1; /* a word starting the scored text counts unless token 0 ends inside it */
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const unsigned char *b = (const unsigned char *)tokenizer_token(tok, ids[i], &len);
        if (tokenizer_token_bytes(tok, ids[i]) == 0) { /* a separator: ends a word, is no text */
            prev_space = 1;
            continue;
        }
        for (size_t k = 0; k < len; k++) {
            int space = is_space(b[k]);
            if (i > 0 && !space && prev_space) u.words++;
            prev_space = space;
        }
        if (i > 0) u.bytes += len;
    }
    return u;
}
