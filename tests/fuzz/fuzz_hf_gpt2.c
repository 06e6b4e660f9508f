/* Fuzzes bin/convert --from-hf's reading of the weights (hf_gpt2_import): the
 * input is model.safetensors in a directory whose config.json and tokenizer
 * are fixed (a tiny GPT-2: 2 layers, 2 heads, n_embd 4, n_positions 4, the
 * 256 bytes as its vocabulary; the seeds are such models, from
 * tests/parity/gpt2_convert.py --write-fuzz-seeds), so each tensor the header names is
 * matched, checked, converted and transposed as a real conversion does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "lm/hf.h"
#include "lm/bpe.h"

static char dir[64];

static int write_text(const char *name, const void *text, size_t len) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t put = fwrite(text, 1, len, f);
    return fclose(f) != 0 || put != len ? -1 : 0;
}

static const char *files[] = {"config.json", "tokenizer.json", "model.safetensors"};

static void clean_up(void) {
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* The directory, once (removed at exit): config.json as tests/parity/gpt2_convert.py writes it at TINY, and
 * a byte-level BPE without merges as tokenizer.json (our own export). */
static int set_up(void) {
    snprintf(dir, sizeof dir, "/tmp/fuzz_hf_gpt2_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    atexit(clean_up);
    const char *config = "{\"model_type\": \"gpt2\", \"activation_function\": \"gelu_new\", \"n_layer\": 2, "
                         "\"n_head\": 2, \"n_embd\": 4, \"n_positions\": 4, \"vocab_size\": 256, "
                         "\"layer_norm_epsilon\": 1e-05}";
    Bpe b;
    Error err;
    if (bpe_init(&b, "gpt2", bpe_pattern_regex("gpt2"), &err)) return -1;
    bpe_index(&b);
    char *json = bpe_export_hf_json(&b, &err);
    bpe_free(&b);
    int rc = !json || write_text("config.json", config, strlen(config)) || write_text("tokenizer.json", json, strlen(json));
    free(json);
    return rc ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0] && set_up()) abort(); /* the harness itself failed, not the code under test */
    if (write_text("model.safetensors", data, size)) return 0;
    Model m;
    Tokenizer tok;
    HfGpt2Import info;
    Error err;
    if (hf_gpt2_import(dir, &m, &tok, &info, &err) == 0) {
        model_free(&m);
        tokenizer_free(&tok);
    }
    return 0;
}
