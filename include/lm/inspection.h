/* What a mixer tells about one of its layers when asked (the optional
 * `inspect` hook of lm/mixer.h, used by bin/inspect through
 * src/inspect/): its own measurements on a prompt, and the parts of its
 * output for the direct attribution of the last prediction. A mixer fills
 * what it has and leaves the rest zero; what is left zero is not reported.
 *
 *   maps: probs (n_head, T, T) attention maps, with heads (n_head) their
 *     statistics and the form's spectra (singular_values, qk_cosines); a mixer that has maps gives both (with MIXER_INSPECT_MAPS
 *     only probs: the induction scores read nothing else).
 *   gates: gate_mean (T), offset_norm (n_offsets) and offset_position_norm
 *     (n_offsets, T) for the layer's window offsets (offsets), and
 *     plucker_residual, as the Grassmann layer measures them.
 *   parts: n_parts vectors of C, each a share of the layer's output at the
 *     last position T - 1, with a short name ("H0", "attn bias"); the
 *     inspection shows them as "L<l> <name>" below the whole output, which
 *     it names "L<l> <label>". */
#ifndef LM_MIXERS_INSPECTION_H
#define LM_MIXERS_INSPECTION_H

#include <stddef.h>

typedef struct HeadStats {
    double entropy;   /* mean over rows of -sum p log p (nats) */
    double diagonal;  /* mean over rows of p[t][t] */
    double previous;  /* mean over rows t >= 1 of p[t][t-1] (NaN when T = 1) */
    /* projection geometry */
    double similarity_corr;  /* Pearson r of cos(x_i, x_j) and the scaled logit, pairs j <= i (NaN if undefined) */
    double sv_max, sv_min;   /* largest and d_head-th largest singular value of W_q^T W_k (C x C, rank <= d_head) */
    double effective_rank;   /* exp(entropy of the normalised singular values) */
    double antisym_share;    /* |A|_F^2 / |M|_F^2, A the antisymmetric part of M */
    double identity_dist;    /* |M - (tr M / C) I|_F / |M|_F */
} HeadStats;

#define MIXER_PART_NAME 24

typedef struct LayerInspection {
    const char *mixer;   /* the layer's mixer (its name), set by the inspection */
    const char *label;   /* the whole output in the attribution, "attn"; NULL: the mixer's name */
    /* maps */
    float *probs;        /* (H, T, T), row t: query position t; zero above the diagonal */
    HeadStats *heads;    /* H */
    size_t d_head;
    double *singular_values; /* (H, d_head): of W_q^T W_k, decreasing */
    double *qk_cosines;  /* (H, d_head): cosines of the principal angles between the query and key spaces, decreasing */
    /* gates */
    float *gate_mean;    /* T: the gate a_t averaged over channels */
    size_t n_offsets;
    size_t *offsets;     /* n_offsets: the layer's window offsets d, which the two below are of */
    double *offset_norm; /* n_offsets: mean over positions where offset d fits of |W_plu q_t^d| / |D_t| */
    float *offset_position_norm; /* (n_offsets, T): |W_plu q_t^d| / |D_t| at each position, NaN where d does not fit */
    double plucker_residual; /* max over t, d, i<j<k<l of |p_ij p_kl - p_ik p_jl + p_il p_jk| / |p|^2 (NaN: a pair map other than the wedge) */
    /* parts of the output at position T - 1, for the attribution */
    size_t n_parts;
    char (*part_name)[MIXER_PART_NAME]; /* n_parts: "H0", "attn bias" */
    float *part_out;                    /* (n_parts, C) */
} LayerInspection;

/* Frees what a mixer's inspect hook allocated and zeroes L. */
void layer_inspection_free(LayerInspection *L);

#endif
