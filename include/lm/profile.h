/* Where a training step's time goes: wall seconds per part of the model,
 * forward and backward apart, for `bin/train --profile` and make bench.
 *
 * A Profile is switched on by handing one to a pass (PassOptions.prof,
 * train_step); with prof == NULL
 * every call here is a no-op that reads no clock. Parts are named by static
 * strings ("layernorm", "mlp", a mixer's name, ...), compared by content. */
#ifndef LM_PROFILE_H
#define LM_PROFILE_H

#include <stddef.h>
#include <stdio.h>

#define PROFILE_MAX_PARTS 16

typedef enum { PASS_FORWARD = 0, PASS_BACKWARD = 1 } Pass;

typedef struct Profile {
    size_t n_parts;
    const char *name[PROFILE_MAX_PARTS];
    double seconds[PROFILE_MAX_PARTS][2]; /* [part][pass] */
    size_t steps;                          /* training steps measured */
} Profile;

/* The clock to pass back to profile_stop; 0 when prof is NULL. */
double profile_start(const Profile *prof);
/* Adds the wall time since `start` to (part, pass). */
void profile_stop(Profile *prof, const char *part, Pass pass, double start);

/* The table `bin/train --profile` prints: ms per step for each part, forward,
 * backward and total, its share of `step_seconds` (the measured steps' wall
 * time), and what no part accounts for. */
void profile_print(FILE *f, const Profile *prof, double step_seconds);

/* The same as a JSON object on f:
 * {"steps", "step_ms", "parts": {name: {forward_ms, backward_ms, total_ms,
 * share}}, "other": {total_ms, share}}, shares in percent; null when no step
 * was measured. */
void profile_json(FILE *f, const Profile *prof, double step_seconds);

/* Runs `call` (a statement) and charges its wall time to (part, pass). */
#define PROFILED(prof, part, pass, call)              \
    do {                                              \
        double profile_t0_ = profile_start(prof);     \
        call;                                         \
        profile_stop(prof, part, pass, profile_t0_); \
    } while (0)

#endif
