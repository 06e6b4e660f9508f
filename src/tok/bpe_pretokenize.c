/* BPE pre-tokenization: the text is cut into pieces by a split regex,
 * compiled with PCRE2 and its JIT; merges never cross a piece boundary. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "lm/ds.h"
#include "lm/bpe.h"

/* The split patterns of tiktoken's cl100k_base (GPT-4) and of GPT-2. */
static const struct {
    const char *name, *regex;
} patterns[] = {
    {"gpt4", "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|"
             "\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s"},
    {"gpt2", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
    {"none", ""},
};
#define N_PATTERNS (sizeof patterns / sizeof patterns[0])

const char *bpe_pattern_regex(const char *name) {
    for (size_t i = 0; i < N_PATTERNS; i++)
        if (strcmp(patterns[i].name, name) == 0) return patterns[i].regex;
    return NULL;
}

const char *bpe_pattern_names(void) { return "gpt4, gpt2, none"; }

int pretok_init(Pretokenizer *p, const char *regex, Error *err) {
    p->code = NULL;
    p->cuttable = strcmp(regex, patterns[0].regex) == 0 || strcmp(regex, patterns[1].regex) == 0;
    if (!regex[0]) return 0;
    int errcode;
    PCRE2_SIZE erroff;
    /* $ only at the very end, as in the Rust regex engines tiktoken and HF use. */
    uint32_t flags = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, flags, &errcode, &erroff, NULL);
    if (!code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(errcode, msg, sizeof msg);
        return err_set(err, "bad split regex at offset %zu: %s", (size_t)erroff, (char *)msg);
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* without JIT support pcre2_match interprets: slower, same pieces */
    p->code = code;
    return 0;
}

void pretok_free(Pretokenizer *p) {
    pcre2_code_free(p->code);
    p->code = NULL;
}

void pretok_split(const Pretokenizer *p, const char *text, size_t len, PieceFn fn, void *ctx) {
    if (len == 0) return;
    if (!p->code) {
        fn(text, len, ctx);
        return;
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->code, NULL);
    pcre2_jit_stack *stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, NULL);
    pcre2_match_context *mctx = pcre2_match_context_create(NULL);
    if (stack && mctx) pcre2_jit_stack_assign(mctx, NULL, stack);
    size_t pos = 0, gap = 0;
    while (pos < len) {
        int rc = pcre2_match(p->code, (PCRE2_SPTR)text, len, pos, 0, md, mctx);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[0], e = ov[1];
        if (e == s) { /* our patterns never match empty; a custom one might */
            pos = s + 1;
            continue;
        }
        if (s > gap) fn(text + gap, s - gap, ctx);
        fn(text + s, e - s, ctx);
        pos = gap = e;
    }
    if (gap < len) fn(text + gap, len - gap, ctx);
    pcre2_match_context_free(mctx);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(md);
}

/* No piece of gpt4 or gpt2 holds a newline followed by a letter: a letter
 * run may start with one other character, but never a newline, and every
 * other alternative is letter-free. */
size_t bpe_safe_cut(const char *text, size_t len, size_t at) {
    for (size_t i = at; i + 1 < len; i++) {
        unsigned char n = (unsigned char)text[i + 1];
        if (text[i] == '\n' && ((n | 0x20) >= 'a' && (n | 0x20) <= 'z')) return i + 1;
    }
    return len;
}

size_t *bpe_safe_cuts(const char *text, size_t len, size_t chunk) {
    size_t *cuts = NULL;
    arrput(cuts, 0);
    for (size_t at = 0; at < len;) {
        at = bpe_safe_cut(text, len, at + chunk);
        arrput(cuts, at);
    }
    return cuts;
}
