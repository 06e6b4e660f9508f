/* How many threads each training step runs with, chosen by measuring.
 *
 * A machine shared with another busy process can make two threads slower than
 * one (they wait for each other at every barrier while the other process holds
 * a core). The tuner runs the steps at the run's full width, and now and then
 * a couple of steps at the next smaller or larger candidate count (width,
 * width/2, ..., 1); it moves to whichever is faster. A step that suddenly takes
 * much longer than the recent ones (load has arrived) brings the next probe
 * forward; probes that confirm the current choice come less and less often.
 *
 * Changing the thread count changes no result: every product is cut into
 * tiles by the run's parallel width, not by the threads that run (ops.h), and
 * every other loop computes each output the same way on any thread. */
#ifndef LM_THREADS_H
#define LM_THREADS_H

#include <stddef.h>

#define TUNER_MAX_CANDIDATES 16
#define TUNER_WINDOW 5 /* recent step times kept at the current count */

typedef struct ThreadTuner {
    int adaptive;                          /* 0: always cand[0] */
    size_t n_cand, cand[TUNER_MAX_CANDIDATES]; /* thread counts, largest first */
    size_t cur;                            /* index of the count in use */
    double window[TUNER_WINDOW];           /* its recent step times, a ring */
    size_t n_window, window_pos;
    double baseline;                       /* its mean when last confirmed (0: none yet) */
    size_t probe;                          /* index being probed, or n_cand for none */
    size_t probe_left;                     /* probe steps still to run */
    double probe_best;                     /* the fastest probe step so far */
    int probe_down;                        /* the direction of the next probe */
    size_t since_probe, interval;          /* steps since the last probe; steps between probes */
    size_t switches;                       /* how often the count changed */
} ThreadTuner;

/* width: the run's largest thread count; adaptive 0 pins it to width. */
void thread_tuner_init(ThreadTuner *t, size_t width, int adaptive);
/* Sets the OpenMP thread count for the next step and returns it. */
size_t thread_tuner_begin(const ThreadTuner *t);
/* That step's wall time. */
void thread_tuner_record(ThreadTuner *t, double seconds);

#endif
