/* bin/prepare: a text file -> train/val/test token files and the tokenizer. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "config.h"
#include "data.h"
#include "ds.h"
#include "tokenizer.h"

static const char *prog = "prepare";

static void usage(FILE *f) {
    fprintf(f,
            "usage: bin/prepare --input FILE --out DIR [options]\n"
            "Tokenizes a text file into DIR/train.bin, DIR/val.bin, DIR/test.bin and\n"
            "DIR/tokenizer.txt. The split is contiguous: train first, then val, then test.\n"
            "\n"
            "  -i, --input FILE         text file (UTF-8 for the char tokenizer)\n"
            "  -o, --out DIR            output directory (created if missing)\n"
            "  -t, --tokenizer KIND     char (characters of the training text + unknown;\n"
            "                           default) or byte (256 symbols)\n"
            "      --val-fraction F     share of the text for validation (default 0.05)\n"
            "      --test-fraction F    share of the text for test (default 0.05; 0 = none)\n"
            "  -h, --help               this help\n");
}

/* Moves a byte offset forward to the start of a UTF-8 character. */
static size_t char_boundary(const char *text, size_t len, size_t at) {
    while (at < len && ((unsigned char)text[at] & 0xC0) == 0x80) at++;
    return at;
}

int main(int argc, char **argv) {
    const char *input = NULL, *out = NULL, *kind = "char";
    float val_frac = 0.05f, test_frac = 0.05f;
    Error err;
    static const struct option opts[] = {
        {"input", required_argument, 0, 'i'},        {"out", required_argument, 0, 'o'},
        {"tokenizer", required_argument, 0, 't'},    {"val-fraction", required_argument, 0, 'v'},
        {"test-fraction", required_argument, 0, 'e'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":i:o:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': input = optarg; break;
        case 'o': out = optarg; break;
        case 't': kind = optarg; break;
        case 'v':
            if (parse_float(optarg, 0.0, 0.9, &val_frac, "--val-fraction", &err)) return cli_error(prog, "%s", err.msg);
            break;
        case 'e':
            if (parse_float(optarg, 0.0, 0.9, &test_frac, "--test-fraction", &err)) return cli_error(prog, "%s", err.msg);
            break;
        case 'h': usage(stdout); return 0;
        case ':': return cli_error(prog, "option '%s' needs a value (see --help)", argv[optind - 1]);
        default: return cli_error(prog, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_error(prog, "unexpected argument '%s' (see --help)", argv[optind]);
    if (!input || !out) return cli_error(prog, "--input and --out are required (see --help)");
    if (strcmp(kind, "char") && strcmp(kind, "byte"))
        return cli_error(prog, "unknown tokenizer '%s' (char or byte)", kind);
    if (val_frac <= 0.0f) return cli_error(prog, "--val-fraction must be positive: training needs validation data");
    if (val_frac + test_frac >= 0.5f) return cli_error(prog, "--val-fraction + --test-fraction must be below 0.5");

    size_t len;
    char *text = read_file(input, &len, &err);
    if (!text) return cli_error(prog, "%s", err.msg);
    if (len == 0) {
        free(text);
        return cli_error(prog, "'%s' is empty", input);
    }
    size_t val_at = char_boundary(text, len, (size_t)((double)len * (1.0 - val_frac - test_frac)));
    size_t test_at = char_boundary(text, len, (size_t)((double)len * (1.0 - test_frac)));
    Tokenizer tok;
    if (strcmp(kind, "char") == 0) {
        if (tokenizer_build_char(&tok, text, val_at, &err)) {
            free(text);
            return cli_error(prog, "'%s': %s", input, err.msg);
        }
    } else {
        tokenizer_init_byte(&tok);
    }
    if (mkdir(out, 0755) != 0) {
        struct stat st;
        if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
            free(text);
            tokenizer_free(&tok);
            return cli_error(prog, "cannot create directory '%s'", out);
        }
    }
    const char *names[] = {"train", "val", "test"};
    size_t bounds[] = {0, val_at, test_at, len}, counts[3] = {0, 0, 0};
    char path[4096];
    int rc = 0;
    for (int s = 0; s < 3 && rc == 0; s++) {
        if (s == 2 && test_frac == 0.0f) break;
        uint32_t *ids = NULL;
        tokenizer_encode(&tok, text + bounds[s], bounds[s + 1] - bounds[s], &ids);
        counts[s] = arrlenu(ids);
        snprintf(path, sizeof path, "%s/%s.bin", out, names[s]);
        if (counts[s] < 2) rc = cli_error(prog, "the %s split of '%s' is too small (%zu tokens)", names[s], input, counts[s]);
        else if (tokens_write(path, ids, counts[s], tok.vocab_size, &err)) rc = cli_error(prog, "%s", err.msg);
        arrfree(ids);
    }
    snprintf(path, sizeof path, "%s/tokenizer.txt", out);
    if (rc == 0 && tokenizer_save(&tok, path, &err)) rc = cli_error(prog, "%s", err.msg);
    if (rc == 0)
        printf("prepared %s: %s tokenizer, vocabulary %zu, hash %s; train %zu, val %zu, test %zu tokens\n", out,
               kind, tok.vocab_size, tok.hash, counts[0], counts[1], counts[2]);
    free(text);
    tokenizer_free(&tok);
    return rc;
}
