/* Fuzzes the reading of a Hugging Face GPT-2 config.json (hf_gpt2_config_parse:
 * what bin/convert --from-hf accepts and refuses), then builds the layout the
 * config describes without allocating its weights. */
#include "fuzz_input.h"
#include "lm/hf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Error err;
    ModelConfig cfg;
    int tied;
    if (hf_gpt2_config_parse((const char *)data, size, "config.json", &cfg, &tied, &err) == 0)
        (void)model_count_params(&cfg);
    return 0;
}
