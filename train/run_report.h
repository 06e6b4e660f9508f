/* What bin/train prints about a run besides its progress: the start-up
 * lines (the model, the data and batch, the threads and BLAS, the precision
 * with its start-up check, the optimizer and the memory), and the closing
 * --json object that make bench reads. */
#ifndef LM_TRAIN_RUN_REPORT_H
#define LM_TRAIN_RUN_REPORT_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/profile.h"
#include "lm/threads.h"
#include "run.h"

/* The start-up lines; the tuner says how many threads the run starts with
 * (start_threads) and whether it tunes them. */
void run_print_start(const Run *r, const ThreadTuner *tuner, size_t start_threads);
/* The start-up check of the bf16 products (lm/bf16.h) at the model's
 * shapes: each weight matrix's forward product over the batch's tokens
 * (checked in all three forms, so backward's too), and the kernel that runs
 * the widest one, for the start-up line (r->bf16_worst, r->bf16_impl). */
int run_check_bf16(Run *r, Error *err);
/* The end of a run as one JSON object on stdout (--json). */
void run_print_json(const Run *r, size_t threads, size_t step, float loss, float val_loss, double seconds,
                    const Profile *prof, double prof_seconds);

#endif
