/* A mixer's one declaration of its tensors (Mixer.layout, MIXER_TENSOR in
 * lm/mixer.h) walked for what each caller wants of it: the list of
 * TensorSpecs, the pointers into a layer's parameters, or the count. */
#include "lm/mixer.h"

#include <stdio.h>
#include <string.h>

/* The walk: what the declaration has given so far, and where it goes. */
struct MixerLayout {
    TensorSpec *specs;   /* NULL: no list wanted; room for MIXER_MAX_TENSORS */
    const float *params; /* with ptrs: the layer's first parameter */
    unsigned char *ptrs; /* NULL: no pointers wanted; else the struct of `size` bytes */
    size_t size;
    size_t n, floats; /* tensors and floats declared so far */
};

void mixer_layout_add(MixerLayout *L, size_t field, const char *name, size_t rows, size_t cols, InitKind init,
                      int output) {
    if (L->specs && L->n < MIXER_MAX_TENSORS) {
        TensorSpec *t = &L->specs[L->n];
        snprintf(t->name, sizeof t->name, "%s", name);
        t->rows = rows, t->cols = cols, t->init = init, t->output = output;
    }
    if (L->ptrs && field + sizeof(const float *) <= L->size) {
        const float *at = L->params + L->floats;
        memcpy(L->ptrs + field, &at, sizeof at);
    }
    L->n++;
    L->floats += rows * (cols ? cols : 1);
}

size_t mixer_tensors(const Mixer *mx, const MixerSpec *spec, TensorSpec *out) {
    MixerLayout L = {.specs = out};
    mx->layout(spec, &L);
    return L.n;
}

size_t mixer_param_count(const Mixer *mx, const MixerSpec *spec) {
    MixerLayout L = {0};
    mx->layout(spec, &L);
    return L.floats;
}

void mixer_params(MixerLayoutFn layout, const MixerSpec *spec, const float *params, void *ptrs, size_t size) {
    const float *none = NULL;
    for (size_t at = 0; at + sizeof none <= size; at += sizeof none) memcpy((unsigned char *)ptrs + at, &none, sizeof none);
    MixerLayout L = {.params = params, .ptrs = ptrs, .size = size};
    layout(spec, &L);
}
