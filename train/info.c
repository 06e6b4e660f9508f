/* bin/info: a checkpoint or run folder read back (train/run_info.h), or
 * the runs of a folder listed; this file parses and prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/cli.h"
#include "lm/options.h"
#include "info_mixers.h"
#include "run_info.h"

static const CliProgram program = {
    .name = "info",
    .usage = "bin/info CKPT_OR_RUN [--json]\nbin/info --list DIR [--sort val|name|step] [--json]\n"
             "bin/info --mixers [CKPT_OR_RUN | - | model options] [--json]",
    .about = "Shows what a checkpoint or a run folder (bin/train --run) holds: the step, tokens seen,\n"
             "the last and best validation loss, the model and recipe, the optimizer, the tokenizer,\n"
             "the data and its hash, the run's options; or lists the runs in DIR, one line each, grouped\n"
             "by data and tokenizer (only their losses compare);\n"
             "or describes the registered mixers (--mixers).\n",
    .column = 29,
    .positional = 1,
};

int main(int argc, char **argv) {
    const char *list = NULL, *sort = "val";
    int json = 0, first;
    OptionRow own[] = {
        CLI_FLAG("json", 0, &json, "one JSON object (with --list, a JSON array of them)"),
        CLI_TEXT("list", 0, &list, "DIR",
                 "one line per run folder in DIR and per checkpoint (*.ckpt) in\n"
                 "it or in its other folders (bin/train --out's), grouped by\n"
                 "data and tokenizer, each group under a line naming them"),
        CLI_TEXT("sort", 0, &sort, "KEY",
                 "with --list, within each group: val (the best validation\n"
                 "loss, lowest first), name or step (most first) (val)"),
    };
    enum { N_OWN = sizeof own / sizeof own[0] };
    static OptionRow opts[N_OWN + INFO_MIXERS_ROWS]; /* then --mixers and the model's options (info_mixers.h) */
    static InfoMixers mixers;
    memcpy(opts, own, sizeof own);
    size_t n = N_OWN + info_mixers_rows(&mixers, opts + N_OWN, N_OWN);
    int rc = cli_parse(&program, opts, n, argc, argv, &first);
    if (rc != CLI_CONTINUE) return rc;
    if (mixers.wanted && (list || first < argc - 1))
        return cli_error(program.name, "--mixers takes at most one checkpoint, run folder or - (see --help)");
    if (mixers.wanted) return info_mixers_print(&mixers, opts, program.name, first < argc ? argv[first] : NULL, json);
    if (info_mixers_given(&mixers, opts))
        return cli_error(program.name, "--%s describes the model of --mixers (see --help)", info_mixers_given(&mixers, opts));
    int by = run_sort_parse(sort);
    if (by < 0) return cli_error(program.name, "--sort must be val, name or step (got '%s')", sort);
    if (list ? first != argc : first != argc - 1)
        return cli_error(program.name, list ? "--list DIR takes no other argument (see --help)"
                                            : "give one checkpoint or run folder (see --help)");
    Error err;
    if (list) {
        RunInfo *infos;
        size_t n;
        if (run_info_list(list, (RunSort)by, &infos, &n, &err)) return cli_error(program.name, "%s", err.msg);
        if (json) printf("[");
        for (size_t i = 0; json && i < n; i++) {
            char *text = run_info_json(&infos[i]);
            printf("%s%s", i ? ",\n" : "", text ? text : "null");
            free(text);
        }
        if (json) printf("]\n");
        else if (n) run_info_list_print(stdout, infos, n);
        else printf("no runs in %s (a run folder holds a checkpoint named ckpt: bin/train --run; a checkpoint of "
                    "bin/train --out is listed when its name ends in .ckpt)\n", list);
        run_infos_free(infos, n);
        return 0;
    }
    RunInfo info;
    if (run_info_read(argv[first], &info, &err)) return cli_error(program.name, "%s", err.msg);
    if (json) {
        char *text = run_info_json(&info);
        printf("%s\n", text ? text : "null");
        free(text);
    } else {
        run_info_print(stdout, &info);
    }
    run_info_free(&info);
    return 0;
}
