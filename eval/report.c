/* bin/inspect's output: inspect_write, which writes every file into the
 * output directory; the pictures are report_png.c's, the tables and the
 * printed summary report_text.c's, the JSON report_json.c's, the page for a
 * browser report_html.c's, and what they
 * share report_parts.c's.
 * Every file draws a layer's exhibits (lm/inspection.h) by their kind, never
 * by the mixer that showed them.
 * Sized to stay readable up to GPT-2 small's 12 x 12 heads, 50,257 BPE tokens
 * and prompts of its 1,024-token block: long maps are pooled, a layer's heads
 * drawn in a grid, every head also as one cell of heads.png, the largest head
 * parts of the attribution kept in its picture, and heads ranked in the
 * summary; the JSON keeps long maps as each row's strongest keys. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "lm/json.h"
#include "lm/plot_png.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/files.h"

int inspect_write(const char *dir, const Inspection *in, const Induction *ind, const Tokenizer *tok,
                  const char *prompt, Error *err) {
    if (dirs_create(dir, err)) return -1;
    size_t T = in->T;
    int rc = report_pictures(dir, in, ind, tok, err);
    if (!rc) {
        char *text = report_lens_table(in, tok);
        rc = write_text_in(dir, "lens.txt", text, err);
        sb_free(&text);
    }
    if (!rc) {
        char *text = NULL, lab[TOKEN_LABEL_MAX];
        sb_appendf(&text, "# position, token id, token (space shown as \xE2\x90\xA3, newline as \\n; in the PNGs space is _, "
                          "newline $ and anything else outside ASCII ?)\n");
        for (size_t t = 0; t < T; t++) {
            token_label(tok, (uint32_t)in->tokens[t], 0, lab, sizeof lab);
            sb_appendf(&text, "%zu\t%d\t%s\n", t, (int)in->tokens[t], lab);
        }
        rc = write_text_in(dir, "tokens.txt", text, err);
        sb_free(&text);
    }
    char *heads = rc ? NULL : report_heads_text(in, ind);
    if (heads) rc = write_text_in(dir, "heads.txt", heads, err);
    sb_free(&heads);
    if (!rc) {
        char *json = report_json(in, ind, tok, prompt);
        rc = write_text_in(dir, "inspect.json", json, err);
        sb_free(&json);
    }
    if (!rc) {
        char *page = report_page(in, ind, tok);
        rc = page ? write_text_in(dir, "inspect.html", page, err) : err_set(err, "inspect.html: out of memory");
        sb_free(&page);
    }
    return rc;
}
