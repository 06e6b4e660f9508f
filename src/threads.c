/* The adaptive thread count of training steps (see include/threads.h). */
#include "threads.h"

#include <omp.h>

/* A probe must beat the current count by this factor to replace it: step
 * times wobble by a few percent on a quiet machine. */
#define SWITCH_GAIN 0.93
/* A step this much slower than the baseline, twice in a row, means the
 * machine changed: probe at once. */
#define JUMP 1.3
#define FIRST_INTERVAL 4
#define MAX_INTERVAL 256
#define PROBE_STEPS 1

void thread_tuner_init(ThreadTuner *t, size_t width, int adaptive) {
    *t = (ThreadTuner){0};
    if (width == 0) width = 1;
    for (size_t c = width; t->n_cand < TUNER_MAX_CANDIDATES; c = (c + 1) / 2) {
        t->cand[t->n_cand++] = c;
        if (c == 1) break;
    }
    t->adaptive = adaptive && t->n_cand > 1;
    t->probe = t->n_cand;
    t->probe_down = 1;
    t->interval = FIRST_INTERVAL;
}

size_t thread_tuner_begin(const ThreadTuner *t) {
    size_t n = t->cand[t->probe < t->n_cand ? t->probe : t->cur];
    omp_set_num_threads((int)n);
    return n;
}

/* The mean, not the median: under load, two threads are often as fast as
 * one but now and then stall for a whole time slice at a barrier (a step of
 * 3x), and it is the mean that a run pays. */
static double window_mean(const ThreadTuner *t) {
    double s = 0.0;
    for (size_t i = 0; i < t->n_window; i++) s += t->window[i];
    return s / (double)t->n_window;
}

static void window_reset(ThreadTuner *t) {
    t->n_window = 0;
    t->window_pos = 0;
    t->baseline = 0.0;
}

static void window_push(ThreadTuner *t, double s) {
    t->window[t->window_pos] = s;
    t->window_pos = (t->window_pos + 1) % TUNER_WINDOW;
    if (t->n_window < TUNER_WINDOW) t->n_window++;
}

/* The neighbouring candidate to try next: alternately fewer and more threads,
 * where both exist. */
static size_t next_probe(ThreadTuner *t) {
    int can_down = t->cur + 1 < t->n_cand, can_up = t->cur > 0;
    int down = can_down && (t->probe_down || !can_up);
    t->probe_down = !down;
    return down ? t->cur + 1 : t->cur - 1;
}

static void finish_probe(ThreadTuner *t) {
    double current = window_mean(t);
    if (t->probe_best < SWITCH_GAIN * current) {
        t->cur = t->probe;
        t->switches++;
        window_reset(t);
        window_push(t, t->probe_best);
        t->interval = FIRST_INTERVAL; /* look again soon: the machine is changing */
    } else {
        t->interval = t->interval * 2 < MAX_INTERVAL ? t->interval * 2 : MAX_INTERVAL;
    }
    t->probe = t->n_cand;
    t->since_probe = 0;
}

void thread_tuner_record(ThreadTuner *t, double seconds) {
    if (!t->adaptive) return;
    if (t->probe < t->n_cand) {
        if (seconds < t->probe_best) t->probe_best = seconds;
        if (--t->probe_left == 0) finish_probe(t);
        return;
    }
    window_push(t, seconds);
    t->since_probe++;
    if (t->n_window < 3) return;
    if (t->baseline == 0.0) t->baseline = window_mean(t);
    const double prev = t->window[(t->window_pos + TUNER_WINDOW - 2) % TUNER_WINDOW];
    int jumped = seconds > JUMP * t->baseline && prev > JUMP * t->baseline;
    if (jumped) { /* judge the new conditions by themselves */
        window_reset(t);
        window_push(t, prev);
        window_push(t, seconds);
        t->interval = FIRST_INTERVAL;
        t->since_probe = t->interval; /* probe as soon as the window refills */
        return;
    }
    if (t->since_probe >= t->interval) {
        t->baseline = window_mean(t);
        t->probe = next_probe(t);
        t->probe_left = PROBE_STEPS;
        t->probe_best = 1e300;
    }
}
