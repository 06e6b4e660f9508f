/* The training loss mask (see loss_mask.h): reading it, applying it to a window. */
#include "lm/loss_mask.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>


static int open_one(TokenMask *m, const char *dir, const char *split, const TokenFile *tf, Error *err) {
    char bin[4096], path[4096];
    snprintf(bin, sizeof bin, "%s/%s.bin", dir, split);
    mask_path_for(bin, path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0) return 0; /* no mask: every target counts */
    if (mask_read(path, m, err)) return -1;
    if (m->n != tf->n) {
        err_set(err, "'%s' covers %zu tokens but '%s' has %zu", path, m->n, bin, tf->n);
        mask_free(m);
        return -1;
    }
    return 0;
}

int loss_masks_open(LossMasks *lm, const char *dir, const Dataset *ds, Error *err) {
    memset(lm, 0, sizeof *lm);
    if (open_one(&lm->train, dir, "train", &ds->train, err) || open_one(&lm->val, dir, "val", &ds->val, err)) {
        loss_masks_free(lm);
        return -1;
    }
    return 0;
}

void loss_masks_free(LossMasks *lm) {
    mask_free(&lm->train);
    mask_free(&lm->val);
}
