/* Fuzzes the readers of bin/eval's task files (eval/downstream_read.c):
 * the same bytes as minimal pairs (BLiMP's JSON lines), cloze passages
 * (LAMBADA's plain text) and multiple choice (HellaSwag's JSON lines). */
#include "eval/downstream.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int k = 0; k < N_TASKS; k++) {
        DsTask t;
        Error err;
        if (ds_parse((TaskKind)k, "fuzz", (const char *)data, size, &t, &err) == 0) ds_task_free(&t);
    }
    return 0;
}
