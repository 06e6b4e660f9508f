/* bin/eval: loss, perplexity and bits per character (or byte) of a model
 * over a whole held-out token file. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blas/blas_setup.h"
#include "model/checkpoint.h"
#include "cli/cli.h"
#include "model/config.h"
#include "data/tokens.h"
#include "model/evaluate.h"
#include "io/json.h"
#include "tok/text_units.h"
#include "data/token_mask.h"

static const char *prog = "eval";

static void usage(FILE *f) {
    fprintf(f,
            "usage: bin/eval --model CKPT --data DIR|FILE [options]\n"
            "Scores every token of a held-out token file once and reports the loss in\n"
            "nats, the perplexity, and bits per character (char tokenizer) or byte.\n"
            "\n"
            "  -m, --model CKPT      checkpoint from bin/train\n"
            "  -d, --data DIR|FILE   a prepared directory (uses --split) or a token file\n"
            "      --split NAME      val or test, with a directory (default val)\n"
            "      --stride S        slide windows by S tokens so every scored token after the\n"
            "                        first window has at least block_size - S of context\n"
            "                        (default block_size: disjoint windows)\n"
            "      --batch-size B    windows per forward pass (default 16)\n"
            "      --threads N       OpenMP/OpenBLAS threads (default: all cores)\n"
            "      --word-ppl        also perplexity per whitespace-separated word\n"
            "      --json            print one JSON object instead of text\n"
            "      --by-position     also the mean loss at each position of the window\n"
            "      --split-recall N  also the loss on tokens that complete an N-gram seen earlier in\n"
            "                        their window (recallable from context) and on all others\n"
            "      --mask FILE       score only the tokens FILE marks (default: the token file's\n"
            "                        name with .mask for .bin, when that file exists)\n"
            "  -h, --help            this help\n");
}

static int quiet = 0;
static void progress(size_t done, size_t total) {
    if (quiet || !isatty(2)) return;
    fprintf(stderr, "\reval: %zu/%zu windows", done, total);
    if (done == total) fprintf(stderr, "\r%*s\r", 40, "");
}

int main(int argc, char **argv) {
    blas_setup(argc, argv); /* first: it may restart the program with faster BLIS kernels */
    const char *model_path = NULL, *data = NULL, *split = "val";
    size_t stride = 0, batch = 16, threads = 0;
    int json = 0, word_ppl = 0;
    Error err;
    EvalDetail detail = {0}; /* --by-position, --split-recall, --mask */
    const char *mask_arg = NULL;
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},  {"data", required_argument, 0, 'd'},
        {"split", required_argument, 0, 's'},  {"stride", required_argument, 0, 'S'},
        {"batch-size", required_argument, 0, 'b'}, {"threads", required_argument, 0, 't'},
        {"json", no_argument, 0, 'j'},         {"help", no_argument, 0, 'h'},
        {"word-ppl", no_argument, 0, 'W'},
        {"by-position", no_argument, 0, 'P'},  {"split-recall", required_argument, 0, 'R'},
        {"mask", required_argument, 0, 'M'},
        {0, 0, 0, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":m:d:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model_path = optarg; break;
        case 'd': data = optarg; break;
        case 's': split = optarg; break;
        case 'S':
            if (parse_size(optarg, 1u << 20, &stride, "--stride", &err)) return cli_error(prog, "%s", err.msg);
            if (stride == 0) return cli_error(prog, "--stride must be positive");
            break;
        case 'b':
            if (parse_size(optarg, 4096, &batch, "--batch-size", &err)) return cli_error(prog, "%s", err.msg);
            if (batch == 0) return cli_error(prog, "--batch-size must be positive");
            break;
        case 't':
            if (parse_size(optarg, 1024, &threads, "--threads", &err)) return cli_error(prog, "%s", err.msg);
            break;
        case 'j': json = 1; break;
        case 'W': word_ppl = 1; break;
        case 'P': detail.by_position = 1; break;
        case 'R':
            if (parse_size(optarg, 1u << 16, &detail.recall_n, "--split-recall", &err)) return cli_error(prog, "%s", err.msg);
            if (detail.recall_n == 0) return cli_error(prog, "--split-recall needs an n-gram length of at least 1");
            break;
        case 'M': mask_arg = optarg; break;
        case 'h': usage(stdout); return 0;
        case ':': return cli_error(prog, "option '%s' needs a value (see --help)", argv[optind - 1]);
        default: return cli_error(prog, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_error(prog, "unexpected argument '%s' (see --help)", argv[optind]);
    if (!model_path || !data) return cli_error(prog, "--model and --data are required (see --help)");
    if (strcmp(split, "val") && strcmp(split, "test")) return cli_error(prog, "--split must be val or test (got '%s')", split);
    cli_set_threads(threads);
    quiet = json;

    /* A directory means DIR/<split>.bin with DIR/tokenizer.txt beside it. */
    char path[4096], tok_path[4096];
    struct stat st;
    int is_dir = stat(data, &st) == 0 && S_ISDIR(st.st_mode);
    if (is_dir) {
        snprintf(path, sizeof path, "%s/%s.bin", data, split);
        snprintf(tok_path, sizeof tok_path, "%s/tokenizer.txt", data);
    } else {
        snprintf(path, sizeof path, "%s", data);
        const char *slash = strrchr(data, '/');
        snprintf(tok_path, sizeof tok_path, "%.*stokenizer.txt", slash ? (int)(slash - data + 1) : 0, data);
    }
    TokenFile tf;
    if (tokens_read(path, &tf, &err)) return cli_error(prog, "%s", err.msg);
    char mask_path[4096];
    TokenMask mask = {0};
    if (mask_arg) snprintf(mask_path, sizeof mask_path, "%s", mask_arg);
    else mask_path_for(path, mask_path, sizeof mask_path);
    if (mask_arg || access(mask_path, F_OK) == 0) {
        if (mask_read(mask_path, &mask, &err) || mask.n != tf.n) {
            if (mask.marked) err_set(&err, "mask '%s' has %zu entries but '%s' has %zu tokens", mask_path, mask.n, path, tf.n);
            mask_free(&mask);
            tokens_free(&tf);
            return cli_error(prog, "%s", err.msg);
        }
        detail.mask = mask.marked;
    }
    Model m;
    Tokenizer tok;
    ModelConfig cfg; /* the memory it will take, said before taking it */
    size_t file_bytes;
    if (ckpt_read_config(model_path, &cfg, &file_bytes, &err) ||
        ckpt_check_memory(model_path, &cfg, file_bytes, batch, tf.n * sizeof(uint32_t), "the tokens as 32-bit ids", &err) ||
        model_open(model_path, &m, &tok, &err)) {
        tokens_free(&tf);
        mask_free(&mask);
        return cli_error(prog, "%s", err.msg);
    }
    int rc = 0;
    Tokenizer data_tok;
    if (access(tok_path, F_OK) == 0) {
        if (tokenizer_load(&data_tok, tok_path, &err)) {
            rc = cli_error(prog, "%s", err.msg);
        } else {
            if (strcmp(data_tok.hash, tok.hash) != 0)
                rc = cli_error(prog, "the model's tokenizer (%s) does not match '%s' (%s)", tok.hash, tok_path,
                               data_tok.hash);
            tokenizer_free(&data_tok);
        }
    } else if (tf.vocab_size != m.cfg.vocab_size) {
        rc = cli_error(prog, "'%s' has vocabulary %zu but the model has %zu", path, tf.vocab_size, m.cfg.vocab_size);
    }
    EvalResult r;
    uint32_t *ids = rc == 0 ? tokens_copy_u32(&tf, 0, tf.n, &err) : NULL;
    if (rc == 0 && !ids) rc = cli_error(prog, "%s", err.msg);
    if (rc == 0 && evaluate_tokens_detail(&m, ids, tf.n, stride, batch, progress, &detail, &r, &err))
        rc = cli_error(prog, "%s", err.msg);
    /* Tokenizer-independent: the nats of all scored tokens over the bytes
     * (and words) of the text they stand for. */
    TextUnits units = rc == 0 && !detail.mask ? text_units_scored(&tok, ids, tf.n) : (TextUnits){0, 0}; /* masked: not the text's */
    double total_nats = rc == 0 ? r.loss * (double)r.scored : 0.0;
    double bits_per_byte = units.bytes ? total_nats / log(2.0) / (double)units.bytes : NAN;
    double word_perplexity = units.words ? exp(total_nats / (double)units.words) : NAN;
    free(ids);
    if (rc == 0) {
        double ppl = exp(r.loss), bits = r.loss / log(2.0);
        size_t used_stride = stride && stride < m.cfg.block_size ? stride : m.cfg.block_size;
        if (json) {
            char *file = NULL;
            sb_append_json_string(&file, path);
            printf("{\"file\":%s,\"tokens\":%zu,\"scored\":%zu,\"windows\":%zu,\"block_size\":%zu,\"stride\":%zu,"
                   "\"loss\":%.6f,\"perplexity\":%.6f,\"bits_per_%s\":%.6f",
                   file, tf.n, r.scored, r.windows, m.cfg.block_size, used_stride, r.loss, ppl, tokenizer_unit(&tok), bits);
            if (strcmp(tokenizer_unit(&tok), "byte") != 0 && units.bytes)
                printf(",\"bytes\":%zu,\"bits_per_byte\":%.6f", units.bytes, bits_per_byte);
            if (word_ppl && units.words) printf(",\"words\":%zu,\"word_perplexity\":%.6f", units.words, word_perplexity);
            sb_free(&file);
            eval_detail_print(stdout, &detail, &r, mask.marked ? mask_path : NULL, 1);
            printf("}\n");
        } else {
            printf("%s: %zu tokens scored in %zu windows (block %zu, stride %zu)\n"
                   "loss %.4f nats | perplexity %.4f | %.4f bits per %s\n",
                   path, r.scored, r.windows, m.cfg.block_size, used_stride, r.loss, ppl, bits, tokenizer_unit(&tok));
            if (strcmp(tokenizer_unit(&tok), "byte") != 0 && units.bytes)
                printf("%.4f bits per byte (%zu bytes of text)\n", bits_per_byte, units.bytes);
            if (word_ppl && units.words) printf("word perplexity %.4f (%zu words)\n", word_perplexity, units.words);
            eval_detail_print(stdout, &detail, &r, mask.marked ? mask_path : NULL, 0);
        }
    }
    eval_detail_free(&detail);
    mask_free(&mask);
    tokenizer_free(&tok);
    model_free(&m);
    tokens_free(&tf);
    return rc;
}
