/* A Grassmann layer seen from outside (its Mixer's inspect hook, for
 * bin/inspect): its gate per position, each offset's share of the geometric
 * path, and the Plücker relations of its coordinates. Recomputed from the
 * layer's weights and input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixers/grassmann.h"
#include "mixers/grassmann_loops.h"
#include "lm/matmul.h"

/* Coordinates are checked on the first PLUCKER_MAX_RANK indices: r^4/24
 * quadruples per pair of positions grow fast. */
#define PLUCKER_MAX_RANK 48

static size_t pair_index(size_t i, size_t j, size_t r) { return i * (2 * r - i - 1) / 2 + (j - i - 1); }

double plucker_residual(const float *p, size_t r) {
    double norm2 = 0.0, worst = 0.0;
    for (size_t i = 0; i < r * (r - 1) / 2; i++) norm2 += (double)p[i] * p[i];
    if (norm2 == 0.0) return 0.0;
    size_t rr = r < PLUCKER_MAX_RANK ? r : PLUCKER_MAX_RANK;
    for (size_t i = 0; i < rr; i++)
        for (size_t j = i + 1; j < rr; j++)
            for (size_t k = j + 1; k < rr; k++)
                for (size_t l = k + 1; l < rr; l++) {
                    double v = (double)p[pair_index(i, j, r)] * p[pair_index(k, l, r)] -
                               (double)p[pair_index(i, k, r)] * p[pair_index(j, l, r)] +
                               (double)p[pair_index(i, l, r)] * p[pair_index(j, k, r)];
                    worst = fabs(v) > worst ? fabs(v) : worst;
                }
    return worst / norm2;
}

int grassmann_inspect(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                      MixerInspectWhat what, LayerInspection *L, Error *err) {
    const GrassmannLayer *gl = grassmann_layer(spec);
    size_t C = spec->n_embd, r = gl->rank, P = grassmann_n_features(gl->pair, r), nw = gl->n_windows;
    const size_t *windows = gl->windows;
    (void)rt; /* no rope here, and the inspection's own products are fp32 */
    L->label = "grassmann";
    if (what == MIXER_INSPECT_MAPS) return 0; /* no maps */
    GrParams p = gr_params(params, spec);
    Exhibit *gate = exhibit_add(L, EXHIBIT_SERIES, "gates",
                                "Grassmann gate a_t, mean over channels (1: keeps x, 0: takes the geometric path g)", 1,
                                T, NULL, err);
    Exhibit *norms = gate ? exhibit_add(L, EXHIBIT_SERIES, "offset_norms",
                                        "each offset's contribution |W_plu q_t^d| / |D_t| to g by position (none "
                                        "where d does not fit)",
                                        nw, T, NULL, err)
                          : NULL;
    Exhibit *plucker = norms && gl->pair == GRASSMANN_PAIR_WEDGE
                           ? exhibit_add(L, EXHIBIT_SCALAR, "plucker_residual",
                                         "largest Plücker-relation residual |p_ij p_kl - p_ik p_jl + p_il p_jk| / |p|^2 "
                                         "of the coordinates p = z_t ^ z_{t-d}",
                                         1, 1, NULL, err)
                           : NULL;
    float *z = norms && (plucker || gl->pair != GRASSMANN_PAIR_WEDGE) ? lm_calloc(T * r, sizeof(float), err) : NULL;
    float *qbar = z ? lm_calloc(T * P, sizeof(float), err) : NULL;
    float *g = qbar ? lm_calloc(T * C, sizeof(float), err) : NULL;
    float *apre = g ? lm_calloc(T * C, sizeof(float), err) : NULL;
    float *q = apre ? lm_calloc(P, sizeof(float), err) : NULL;
    float *contrib = q ? lm_calloc(C, sizeof(float), err) : NULL;
    int rc = contrib ? 0 : -1;
    if (rc) goto done;
    gate->lo = norms->lo = 0.0f;
    gate->hi = 1.0f;
    snprintf(gate->row_names[0], sizeof gate->row_names[0], "a");
    for (size_t k = 0; k < nw; k++) snprintf(norms->row_names[k], sizeof norms->row_names[k], "d=%zu", windows[k]);
    /* The layer's forward, as in grassmann.c: z, the mixed coordinates, g, the gate. */
    matmul_forward(NULL, z, x, p.red_w, p.red_b, T, C, r);
    grassmann_mix_forward(gl->pair, qbar, z, windows, nw, spec->muted, 1, T, r, GRASSMANN_EPS);
    matmul_forward(NULL, g, qbar, p.plu_w, p.plu_b, T, P, C);
    for (size_t t = 0; t < T; t++) {
        size_t cnt = 0;
        for (size_t k = 0; k < nw; k++) cnt += windows[k] <= t;
        if (cnt == 0) memset(g + t * C, 0, C * sizeof(float)); /* no offset fits: g = 0 */
    }
    matmul_forward_strided(NULL, apre, x, p.gate_w, 2 * C, p.gate_b, T, C, C);
    gemm(0, 1, T, C, C, 1.0f, g, C, p.gate_w + C, 2 * C, 1.0f, apre, C);
    for (size_t t = 0; t < T; t++) {
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += 1.0 / (1.0 + exp(-(double)apre[t * C + c]));
        gate->values[t] = (float)(s / (double)C);
    }
    /* Each offset's contribution to g_t is W_plu q_t^d / |D_t|; and its
     * un-normalised coordinates must satisfy the Plücker relations. */
    double residual = 0.0;
    for (size_t k = 0; k < nw; k++) {
        size_t d = windows[k];
        for (size_t t = 0; t < d && t < T; t++) norms->values[k * T + t] = NAN;
        for (size_t t = d; t < T; t++) {
            size_t cnt = 0;
            for (size_t w = 0; w < nw; w++) cnt += windows[w] <= t;
            memset(q, 0, P * sizeof(float));
            if (gl->pair == GRASSMANN_PAIR_WEDGE) {
                grassmann_pair_forward(q, z + t * r, z + (t - d) * r, 1.0f / (float)cnt, GRASSMANN_EPS, r);
            } else { /* the map's own row with every other offset muted: this offset's term of the mean */
                const float *past[GRASSMANN_MAX_WINDOWS];
                for (size_t w = 0; w < nw; w++) past[w] = windows[w] <= t ? z + (t - windows[w]) * r : NULL;
                grassmann_loops()->map[gl->pair].mix_row(q, z + t * r, past, windows, nw, ~(1u << k), t,
                                                         GRASSMANN_EPS, r);
            }
            matmul_forward(NULL, contrib, q, p.plu_w, NULL, 1, P, C);
            double n2 = 0.0;
            for (size_t c = 0; c < C; c++) n2 += (double)contrib[c] * contrib[c];
            norms->values[k * T + t] = (float)sqrt(n2);
            if (!plucker) continue; /* the Plücker relations hold for the wedge alone */
            grassmann_wedge(q, z + t * r, z + (t - d) * r, r);
            double res = plucker_residual(q, r);
            residual = res > residual ? res : residual;
        }
    }
    if (plucker) plucker->values[0] = (float)residual;
done:
    free(z);
    free(qbar);
    free(g);
    free(apre);
    free(q);
    free(contrib);
    return rc;
}
