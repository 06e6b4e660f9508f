/* Fuzzes the checkpoint loader: bin/eval's and bin/sample's model_open
 * (weights and the stored tokenizer) and bin/train --resume's reading
 * (ckpt_read_model, then ckpt_read_optim: an AdamW run's state), and
 * ckpt_read_config (the header alone, read before those for the memory
 * estimate). The file's checksum is not checked in fuzzing
 * builds, so mutations reach the parsing behind it. */
#include "lm/checkpoint.h"
#include "lm/optim.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    Model m;
    Tokenizer tok;
    Error err;
    ModelConfig cfg; /* the header alone, as the programs read it for their memory estimate */
    size_t file_bytes;
    if (ckpt_read_config(path, &cfg, &file_bytes, &err) == 0 && file_bytes != size) __builtin_trap();
    if (model_open(path, &m, &tok, &err) == 0) {
        tokenizer_free(&tok);
        model_free(&m);
    }
    CkptState st;
    CkptFile f;
    if (ckpt_open(&f, path, &err) == 0) {
        if (ckpt_read_model(&f, &m, &st, 1, &err) == 0) {
            OptimizerState os;
            ParamView p = params_view(&m);
            if (optim_state_init(&os, optimizer_at(0), &p, &err) == 0) {
                ckpt_read_optim(&f, &m, &os.buffers, &err);
                optim_state_free(&os);
            }
            ckpt_state_free(&st);
            model_free(&m);
        }
        ckpt_close(&f);
    }
    close(fd);
    return 0;
}
