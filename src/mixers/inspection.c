#include "lm/inspection.h"

#include <stdlib.h>
#include <string.h>

void layer_inspection_free(LayerInspection *L) {
    free(L->probs);
    free(L->heads);
    free(L->singular_values);
    free(L->qk_cosines);
    free(L->gate_mean);
    free(L->offset_norm);
    free(L->offset_position_norm);
    free(L->offsets);
    free(L->part_name);
    free(L->part_out);
    memset(L, 0, sizeof *L);
}
