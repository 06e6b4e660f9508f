/* A Gated DeltaNet layer seen from outside (its Mixer's inspect hook, for
 * bin/inspect): how fast each head forgets and how strongly it writes
 * along the prompt, how much its state holds, and each head's share of the
 * output. Recomputed from the layer's weights and input by stepping the
 * recurrence itself (the sampling step's, not forward's chunks):
 * O(T C hs), no T x T map. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm/matmul.h"
#include "mixers/deltanet.h"
#include "mixers/head_parts.h"
#include "nn/rmsnorm.h"

int deltanet_inspect(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                     MixerInspectWhat what, LayerInspection *L, Error *err) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H;
    (void)rt; /* no rope here, and the inspection's own products are fp32 */
    L->label = "deltanet";
    if (what == MIXER_INSPECT_MAPS) return 0; /* no maps */
    DeltaParams p = deltanet_params(params, spec);
    Exhibit *decay = exhibit_add(L, EXHIBIT_SERIES, "decay",
                                 "each head's decay alpha_t at each position (1: keeps its state, 0: forgets it)", H, T,
                                 NULL, err);
    Exhibit *write = decay ? exhibit_add(L, EXHIBIT_SERIES, "write_strength",
                                         "each head's write strength beta_t at each position (1: replaces what its "
                                         "state recalls at k_t by v_t, 0: writes nothing)",
                                         H, T, NULL, err)
                           : NULL;
    Exhibit *norm = write ? exhibit_add(L, EXHIBIT_SERIES, "state_norm",
                                        "the norm |S_t|_F of each head's state after each position", H, T, NULL, err)
                          : NULL;
    float *qkv = norm ? lm_calloc(T * 3 * C + 2 * T * H + hs * hs + C, sizeof(float), err) : NULL;
    if (!qkv) return -1;
    float *alpha = qkv + T * 3 * C, *beta = alpha + T * H, *S = beta + T * H, *y = S + hs * hs;
    decay->lo = write->lo = norm->lo = 0.0f;
    decay->hi = write->hi = 1.0f;
    exhibit_name_rows(decay, "H");
    exhibit_name_rows(write, "H");
    exhibit_name_rows(norm, "H");
    matmul_forward(NULL, qkv, x, p.qkv_w, p.qkv_b, T, C, 3 * C);
    rmsnorm_heads_forward(qkv, NULL, T, 3 * C, 2 * H, hs); /* q's and k's 2H runs, as forward */
    deltanet_gates(alpha, beta, &p, x, T, C, H);
    for (size_t h = 0; h < H; h++) {
        memset(S, 0, hs * hs * sizeof(float));
        for (size_t t = 0; t < T; t++) {
            float *row = qkv + t * 3 * C + h * hs;
            deltanet_state_step(S, row, row + C, row + 2 * C, alpha[t * H + h], beta[t * H + h], y + h * hs, hs);
            double n2 = 0.0;
            for (size_t i = 0; i < hs * hs; i++) n2 += (double)S[i] * S[i];
            decay->values[h * T + t] = alpha[t * H + h];
            write->values[h * T + t] = beta[t * H + h];
            norm->values[h * T + t] = (float)sqrt(n2);
        }
    }
    rmsnorm_heads_forward(y, NULL, 1, C, H, hs); /* y: o at T - 1, as forward normalises it */
    int rc = head_shares(L, p.proj_w, p.proj_b, y, C, H, "deltanet bias", err);
    free(qkv);
    return rc;
}
