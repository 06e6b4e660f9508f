/* Fuzzes the JSON reading (jansson with our rules, src/io/json.c) and the model config parsed from it (a
 * checkpoint's "config" metadata), then builds the layout the config
 * describes without allocating its weights. */
#include "lm/config.h"
#include "fuzz_input.h"
#include "lm/json.h"
#include "lm/model.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Error err;
    json_decref(json_parse((const char *)data, size, &err));
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    ModelConfig cfg;
    if (config_from_json(&cfg, text, &err) == 0 && model_check_config(&cfg, &err) == 0) (void)model_count_params(&cfg);
    free(text);
    return 0;
}
