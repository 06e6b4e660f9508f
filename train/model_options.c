/* bin/train's model options as command-line rows (see train/model_options.h). */
#include "model_options.h"

#include <stdio.h>
#include <string.h>

#include "lm/model.h"

size_t model_text_rows(RunOptions *o, OptionRow *rows, char *help) {
    help[0] = '\0';
    for (size_t i = 0; i < mixer_count(); i++)
        snprintf(help + strlen(help), MODEL_MIXER_HELP - strlen(help), "%s | ", mixer_at(i)->name);
    snprintf(help + strlen(help), MODEL_MIXER_HELP - strlen(help), "a comma list, one per layer (%s)",
             mixer_at(0)->name);
    const OptionRow own[] = {
        CLI_TEXT("mixer", 0, &o->mixer, "M", help),
        CLI_TEXT("pos", 0, &o->pos, "P", "learned | sinusoidal | rope positions (learned)"),
        CLI_TEXT("norm", 0, &o->norm, "N", "pre | post: LayerNorm before each branch (GPT-2) or\nafter each residual sum (the paper's; pre)"),
        CLI_TEXT("norm-type", 0, &o->norm_type, "N", "layernorm | rmsnorm: every block norm and LN_f (layernorm)"),
        CLI_TEXT("mlp-act", 0, &o->mlp_act, "A", "gelu | relu2: the MLP's activation, relu2 = max(x, 0)^2 (gelu)"),
    };
    memcpy(rows, own, sizeof own);
    return sizeof own / sizeof own[0];
}

size_t model_mixer_text_rows(RunOptions *o, OptionRow *rows) {
    size_t n;
    const OptionRow *texts = run_mixer_texts(&n);
    for (size_t j = 0; j < n; j++) rows[j] = option_row_for(&texts[j], o);
    return n;
}

int model_config_from_options(RunOptions *o, Error *err) {
    if (o->pos && pos_parse(o->pos, &o->cfg.pos))
        return err_set(err, "--pos must be learned, sinusoidal or rope (got '%s')", o->pos);
    if (o->norm && norm_parse(o->norm, &o->cfg.norm))
        return err_set(err, "--norm must be pre or post (got '%s')", o->norm);
    if (o->norm_type && norm_type_parse(o->norm_type, &o->cfg.norm_type))
        return err_set(err, "--norm-type must be layernorm or rmsnorm (got '%s')", o->norm_type);
    if (o->mlp_act && mlp_act_parse(o->mlp_act, &o->cfg.mlp_act))
        return err_set(err, "--mlp-act must be gelu or relu2 (got '%s')", o->mlp_act);
    if (o->mixer && config_set_mixers(&o->cfg, o->mixer, err)) return -1;
    size_t n;
    const OptionRow *texts = run_mixer_texts(&n);
    for (size_t j = 0; j < n; j++)
        if (o->mixer_text[j] && config_set_option(&o->cfg, texts[j].name, o->mixer_text[j], err)) return -1;
    return model_check_config(&o->cfg, err);
}
