/* Hugging Face byte-level BPE tokenizers (tokenizer.json, or vocab.json +
 * merges.txt) read into our Bpe. Both forms come down to the same three
 * things, checked the same way (tokenizer_layout.c): the vocabulary (byte-level
 * spelling -> id), the merges as pairs of spellings in rank order, and the
 * special tokens. */
#include "hf/tokenizer_import.h"
#include "lm/hf.h"
#include "hf/tokenizer_source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/json.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "lm/bpe.h"

static void add_merge(HfSource *s, const char *left, size_t left_len, const char *right, size_t right_len) {
    arrput(s->part_at, arrlenu(s->parts));
    memcpy(arraddnptr(s->parts, left_len), left, left_len);
    arrput(s->parts, '\0');
    arrput(s->part_at, arrlenu(s->parts));
    memcpy(arraddnptr(s->parts, right_len), right, right_len);
    arrput(s->parts, '\0');
}

/* "left right": exactly one space, both sides non-empty (the byte-level
 * spelling has no space: byte 0x20 is spelled U+0120). */
static int add_merge_line(HfSource *s, const char *line, size_t len) {
    const char *space = memchr(line, ' ', len);
    if (!space || space == line || space + 1 == line + len || memchr(space + 1, ' ', (size_t)(line + len - space - 1)))
        return -1;
    add_merge(s, line, (size_t)(space - line), space + 1, (size_t)(line + len - space - 1));
    return 0;
}

static const char *type_of(const json_t *o) {
    const json_t *t = json_object_get(o, "type");
    return json_is_string(t) ? json_string_value(t) : "(no type)";
}

static int is_type(const json_t *o, const char *type) { return strcmp(type_of(o), type) == 0; }

/* A field that must be null, absent or "" (a string option our BPE has no use for). */
static int empty_text(const json_t *o, const char *field) {
    const json_t *v = json_object_get(o, field);
    return !v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0);
}

/* ByteLevel: maps bytes to their spelling; with use_regex it splits by
 * GPT-2's regex first. A prefix space changes the text, so is refused. */
static int read_byte_level(const json_t *o, int *use_regex, const char *origin, Error *err) {
    int prefix = hf_flag(o, "add_prefix_space", 1);
    *use_regex = hf_flag(o, "use_regex", 1);
    if (prefix != 0)
        return err_set(err, "'%s': the ByteLevel pre-tokenizer %s (add_prefix_space): not supported", origin,
                       prefix > 0 ? "puts a space before the text" : "has a bad add_prefix_space");
    if (*use_regex < 0) return err_set(err, "'%s': the ByteLevel pre-tokenizer's use_regex is not a boolean", origin);
    return 0;
}

/* Split with a regex, each match its own piece (Isolated): our pre-tokenizer. */
static int read_split(const json_t *o, const char **regex, const char *origin, Error *err) {
    const json_t *re = json_object_get(json_object_get(o, "pattern"), "Regex"),
                 *behavior = json_object_get(o, "behavior");
    if (!json_is_string(re))
        return err_set(err, "'%s': the Split pre-tokenizer's pattern is not a regex ({\"Regex\": ...}): not supported", origin);
    if (!json_is_string(behavior) || strcmp(json_string_value(behavior), "Isolated") != 0)
        return err_set(err, "'%s': the Split pre-tokenizer's behavior is %s, not Isolated: not supported", origin,
                       json_is_string(behavior) ? json_string_value(behavior) : "missing");
    if (hf_flag(o, "invert", 0) != 0) return err_set(err, "'%s': the Split pre-tokenizer is inverted: not supported", origin);
    *regex = json_string_value(re);
    return 0;
}

/* ByteLevel alone, or a Sequence of an optional Split then ByteLevel
 * without its own regex (what bpe_export_hf_json writes). */
static int read_pre_tokenizer(const json_t *pre, HfSource *s, Error *err) {
    const char *o = s->origin, *regex = NULL;
    int use_regex;
    if (is_type(pre, "ByteLevel")) {
        if (read_byte_level(pre, &use_regex, o, err)) return -1;
    } else if (is_type(pre, "Sequence")) {
        const json_t *list = json_object_get(pre, "pretokenizers");
        size_t n = json_array_size(list);
        if (n < 1 || n > 2 || !is_type(json_array_get(list, n - 1), "ByteLevel") ||
            (n == 2 && !is_type(json_array_get(list, 0), "Split")))
            return err_set(err, "'%s': the pre-tokenizer Sequence is not [Split,] ByteLevel: not supported", o);
        if (read_byte_level(json_array_get(list, n - 1), &use_regex, o, err)) return -1;
        if (n == 2 && read_split(json_array_get(list, 0), &regex, o, err)) return -1;
        if (regex && use_regex)
            return err_set(err, "'%s': the pre-tokenizer splits twice (a Split, then ByteLevel's own regex): not supported", o);
    } else if (!pre || json_is_null(pre)) {
        return err_set(err, "'%s' has no pre-tokenizer, so it is not byte-level BPE (that needs ByteLevel)", o);
    } else {
        return err_set(err, "'%s': pre-tokenizer %s is not supported (byte-level BPE needs ByteLevel, alone or after a Split)",
                       o, type_of(pre));
    }
    if (!regex) regex = use_regex ? bpe_pattern_regex("gpt2") : bpe_pattern_regex("none");
    s->regex = regex;
    const char *name = "custom";
    static const char *const named[] = {"gpt4", "gpt2", "none"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(regex, bpe_pattern_regex(named[i])) == 0) name = named[i];
    snprintf(s->pattern, sizeof s->pattern, "%s", name);
    return 0;
}

/* The parts of a tokenizer.json that would change the ids or the text
 * around the model are refused; truncation and padding are left alone (they
 * shape batches, not the ids of one text). */
static int read_surroundings(const json_t *root, const char *o, Error *err) {
    const json_t *norm = json_object_get(root, "normalizer"), *dec = json_object_get(root, "decoder"),
                 *post = json_object_get(root, "post_processor");
    int no_norm = !norm || json_is_null(norm) ||
                  (is_type(norm, "Sequence") && json_array_size(json_object_get(norm, "normalizers")) == 0);
    if (!no_norm) return err_set(err, "'%s': normalizer %s changes the text before encoding: not supported", o, type_of(norm));
    if (dec && !json_is_null(dec) && !is_type(dec, "ByteLevel"))
        return err_set(err, "'%s': decoder %s is not byte-level: not supported", o, type_of(dec));
    if (post && !json_is_null(post) && !is_type(post, "ByteLevel"))
        return err_set(err, "'%s': post-processor %s adds or changes tokens: not supported", o, type_of(post));
    return 0;
}

static int read_model(const json_t *model, HfSource *s, Error *err) {
    const char *o = s->origin;
    const json_t *type = json_object_get(model, "type"), *dropout = json_object_get(model, "dropout");
    if (type && !is_type(model, "BPE"))
        return err_set(err, "'%s': the model is %s, not BPE: only byte-level BPE tokenizers are read", o, type_of(model));
    if (dropout && !json_is_null(dropout) && !(json_is_number(dropout) && json_number_value(dropout) == 0.0))
        return err_set(err, "'%s': the BPE model has dropout (random merges): not supported", o);
    if (!empty_text(model, "continuing_subword_prefix") || !empty_text(model, "end_of_word_suffix"))
        return err_set(err, "'%s': the BPE model marks word pieces (continuing_subword_prefix or end_of_word_suffix): "
                            "not byte-level BPE", o);
    if (hf_flag(model, "byte_fallback", 0) != 0 || hf_flag(model, "ignore_merges", 0) != 0)
        return err_set(err, "'%s': the BPE model has byte_fallback or ignore_merges: not supported", o);
    s->vocab = json_object_get(model, "vocab");
    const json_t *merges = json_object_get(model, "merges");
    if (!json_is_object(s->vocab) || !json_is_array(merges))
        return err_set(err, "'%s': the BPE model needs a vocab object and a merges list", o);
    for (size_t k = 0; k < json_array_size(merges); k++) {
        const json_t *m = json_array_get(merges, k), *l = json_array_get(m, 0), *r = json_array_get(m, 1);
        int ok = json_is_string(m) ? add_merge_line(s, json_string_value(m), json_string_length(m)) == 0
                                   : json_array_size(m) == 2 && json_is_string(l) && json_is_string(r) &&
                                         json_string_length(l) && json_string_length(r);
        if (ok && !json_is_string(m)) add_merge(s, json_string_value(l), json_string_length(l), json_string_value(r),
                                               json_string_length(r));
        if (!ok) return err_set(err, "'%s': merge %zu is neither \"a b\" nor [\"a\", \"b\"]", o, k);
    }
    return 0;
}

static void source_free(HfSource *s) {
    arrfree(s->parts);
    arrfree(s->part_at);
}

int tokenizer_import_hf_json(Tokenizer *tok, const char *text, size_t len, const char *origin, Error *err) {
    memset(tok, 0, sizeof *tok);
    HfSource s = {.origin = origin};
    json_t *root = json_parse(text, len, err);
    if (!root) return hf_prefix_error(err, origin, "");
    int rc = -1;
    const json_t *model = json_object_get(root, "model"), *added = json_object_get(root, "added_tokens");
    if (!json_is_object(model)) {
        err_set(err, "'%s' is not a tokenizer.json: it has no model%s", origin,
                json_is_object(root) && json_object_size(root) > 0 && !json_object_get(root, "version")
                    ? " (for vocab.json + merges.txt, give the directory holding both)" : "");
        goto out;
    }
    if (added && !json_is_null(added) && !json_is_array(added)) {
        err_set(err, "'%s': added_tokens is not a list", origin);
        goto out;
    }
    s.added = json_is_array(added) ? added : NULL;
    if (read_surroundings(root, origin, err) || read_pre_tokenizer(json_object_get(root, "pre_tokenizer"), &s, err) ||
        read_model(model, &s, err))
        goto out;
    rc = hf_tokenizer_build(tok, &s, err);
out:
    source_free(&s);
    json_decref(root);
    return rc;
}

int tokenizer_import_hf_vocab_merges(Tokenizer *tok, const char *vocab_json, size_t vocab_len, const char *merges_txt,
                                     size_t merges_len, const char *origin, Error *err) {
    memset(tok, 0, sizeof *tok);
    HfSource s = {.origin = origin};
    json_t *vocab = json_parse(vocab_json, vocab_len, err);
    if (!vocab) return hf_prefix_error(err, origin, "vocab.json: ");
    int rc = -1;
    if (!json_is_object(vocab)) {
        err_set(err, "'%s': vocab.json is not an object of tokens and their ids", origin);
        goto out;
    }
    s.vocab = vocab;
    /* GPT2Tokenizer's defaults: byte-level with GPT-2's regex, no prefix space. */
    s.regex = bpe_pattern_regex("gpt2");
    snprintf(s.pattern, sizeof s.pattern, "gpt2");
    const char *at = merges_txt, *end = merges_txt + merges_len;
    size_t line_no = 0, blank_from = 0;
    while (at < end) {
        const char *nl = memchr(at, '\n', (size_t)(end - at)), *stop = nl ? nl : end;
        size_t len = (size_t)(stop - at);
        line_no++;
        if (len && at[len - 1] == '\r') len--;
        if (memchr(at, '\0', len)) {
            err_set(err, "'%s': merges.txt line %zu holds a NUL byte", origin, line_no);
            goto out;
        }
        if (line_no == 1 && len >= 8 && memcmp(at, "#version", 8) == 0) {
        } else if (len == 0) {
            if (!blank_from) blank_from = line_no;
        } else if (blank_from) {
            err_set(err, "'%s': merges.txt line %zu is empty", origin, blank_from);
            goto out;
        } else if (add_merge_line(&s, at, len)) {
            err_set(err, "'%s': merges.txt line %zu is not two tokens separated by one space", origin, line_no);
            goto out;
        }
        at = nl ? nl + 1 : end;
    }
    rc = hf_tokenizer_build(tok, &s, err);
out:
    source_free(&s);
    json_decref(vocab);
    return rc;
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int tokenizer_import_hf(Tokenizer *tok, const char *path, Error *err) {
    memset(tok, 0, sizeof *tok);
    struct stat st;
    if (stat(path, &st) != 0) return err_set(err, "cannot open '%s': %s", path, strerror(errno));
    char json_path[PATH_BUF], vocab_path[PATH_BUF], merges_path[PATH_BUF];
    const char *file = path;
    if (S_ISDIR(st.st_mode)) {
        if (path_format(json_path, sizeof json_path, err, "%s/tokenizer.json", path) ||
            path_format(vocab_path, sizeof vocab_path, err, "%s/vocab.json", path) ||
            path_format(merges_path, sizeof merges_path, err, "%s/merges.txt", path))
            return -1;
        if (is_file(json_path)) file = json_path;
        else if (!is_file(vocab_path) || !is_file(merges_path))
            return err_set(err, "'%s' holds no tokenizer: no tokenizer.json, nor vocab.json and merges.txt", path);
        else {
            size_t vocab_len, merges_len;
            char *vocab = read_file(vocab_path, &vocab_len, err), *merges = vocab ? read_file(merges_path, &merges_len, err) : NULL;
            int rc = merges ? tokenizer_import_hf_vocab_merges(tok, vocab, vocab_len, merges, merges_len, path, err) : -1;
            free(vocab);
            free(merges);
            return rc;
        }
    }
    size_t len;
    char *text = read_file(file, &len, err);
    if (!text) return -1;
    int rc = tokenizer_import_hf_json(tok, text, len, file, err);
    free(text);
    return rc;
}

/* ---- any saved tokenizer, ours or Hugging Face's (lm/hf.h) ---- */

int tokenizer_open(Tokenizer *tok, const char *path, Error *err) {
    memset(tok, 0, sizeof *tok);
    struct stat st;
    if (stat(path, &st) != 0) return err_set(err, "cannot open '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        char saved[PATH_BUF];
        if (path_format(saved, sizeof saved, err, "%s/tokenizer.txt", path)) return -1;
        return stat(saved, &st) == 0 ? tokenizer_load(tok, saved, err) : tokenizer_import_hf(tok, path, err);
    }
    size_t len;
    char *text = read_file(path, &len, err);
    if (!text) return -1;
    size_t lead = strspn(text, " \t\r\n");
    int rc;
    if (strncmp(text, TOKENIZER_MAGIC "\n", strlen(TOKENIZER_MAGIC) + 1) == 0) rc = tokenizer_from_text(tok, text, path, err);
    else if (text[lead] == '{') rc = tokenizer_import_hf_json(tok, text, len, path, err);
    else rc = err_set(err, "'%s' is neither a tokenizer.txt nor a tokenizer.json", path);
    free(text);
    return rc;
}
