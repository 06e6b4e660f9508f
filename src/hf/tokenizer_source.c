/* What reading and checking a Hugging Face tokenizer share (see
 * tokenizer_source.h). */
#include "hf/tokenizer_source.h"

#include <stdio.h>

int hf_prefix_error(Error *err, const char *origin, const char *what) {
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return err_set(err, "'%s': %s%s", origin, what, why);
}

const char *hf_shown(const char *s, char buf[48]) {
    size_t n = 0;
    for (; s[n] && n < 40; n++) buf[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
    snprintf(buf + n, 48 - n, "%s", s[n] ? "..." : "");
    return buf;
}

int hf_flag(const json_t *o, const char *field, int absent) {
    const json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v)) return absent;
    return json_is_boolean(v) ? json_is_true(v) : -1;
}
