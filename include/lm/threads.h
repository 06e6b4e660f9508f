/* How many threads each training step runs with, chosen by measuring.
 *
 * A machine shared with another busy process can make two threads far slower
 * than one: they meet at hundreds of barriers a step, and while the other
 * process holds a core, the thread that waits spins through OpenMP's spin
 * count and then sleeps until the scheduler gives its partner a time slice.
 * Measured on 2 cores beside other work: 34 ms/step alone at 2 threads,
 * 0.3-1.9 s under load, against ~100 ms at 1 thread.
 *
 * So the tuner reads two things. The machine's idle CPU time (/proc/stat;
 * niced processes' time counts as idle, since they yield to us):
 * a run starts with as many threads as there are idle cores (sampled for
 * 100 ms first), and it only tries more threads while the cores it would add
 * sat idle during its recent steps; trying them blind costs seconds a step.
 * And the step times: now and then it runs a step at the next smaller or
 * (when the idle time allows) larger candidate count (width, width/2, ..., 1)
 * and moves to whichever is faster. A step that suddenly takes much longer
 * than the recent ones (load has arrived) brings the next probe forward;
 * probes that confirm the current choice come less and less often.
 *
 * Changing the thread count changes no result: every product is cut into
 * tiles by the run's parallel width, not by the threads that run (below), and
 * every other loop computes each output the same way on any thread. */
#ifndef LM_THREADS_H
#define LM_THREADS_H

#include <stddef.h>

/* ---- the run's threads -------------------------------------------------------- */

/* Sets the OpenMP thread count (0 keeps the default: OMP_NUM_THREADS or all
 * cores) and fixes the run's parallel width to it; or to W when the
 * environment sets LM_PARALLEL_WIDTH=W (1..4096), a measurement hook: one
 * thread then does the same pieces of work as each of W threads would, which
 * shows on a small machine what a product cut W ways costs a core
 * (make bench's width section). Results are those of a W-thread run. */
void threads_use(size_t n);
/* The threads of one rank of a job: `requested` when given (non-zero), else
 * this machine's cores shared among its `local_ranks` ranks (0: the default
 * of a single process). */
size_t threads_per_rank(size_t requested, int local_ranks);
/* The OpenMP thread count: how many threads a parallel region gets now. */
size_t threads_max(void);
/* The run's parallel width: how many tiles a large product is cut into (and
 * so the most threads it can use; lm/gemm.h), set once per run to the
 * largest thread count the run may use. Results depend on it, never on the
 * number of threads that actually run; 0 (the default) means the current
 * OpenMP thread count. */
void threads_set_width(size_t width);
size_t threads_width(void);

/* ---- the adaptive count --------------------------------------------------------- */

#define TUNER_MAX_CANDIDATES 16
#define TUNER_WINDOW 5 /* recent step times kept at the current count */

typedef struct ThreadTuner {
    int adaptive;                          /* 0: always cand[0] */
    size_t n_cand, cand[TUNER_MAX_CANDIDATES]; /* thread counts, largest first */
    size_t cur;                            /* index of the count in use */
    double window[TUNER_WINDOW];           /* its recent step times, a ring */
    double idle[TUNER_WINDOW];             /* idle cores during those steps (< 0: unknown) */
    size_t n_window, window_pos;
    double baseline;                       /* its mean when last confirmed (0: none yet) */
    size_t probe;                          /* index being probed, or n_cand for none */
    size_t probe_left;                     /* probe steps still to run */
    double probe_best;                     /* the fastest probe step so far */
    int probe_down;                        /* the direction of the next probe */
    size_t since_probe, interval;          /* steps since the last probe; steps between probes */
    size_t switches;                       /* how often the count changed */
    double idle_mark;                      /* idle core-seconds when the step began (< 0: unknown) */
} ThreadTuner;

/* width: the run's largest thread count; adaptive 0 pins it to width. */
void thread_tuner_init(ThreadTuner *t, size_t width, int adaptive);
/* Adaptive: measures the idle cores for 100 ms and starts with the largest
 * candidate they can hold (thread_tuner_start_with); sets the OpenMP count
 * and returns it. */
size_t thread_tuner_start(ThreadTuner *t);
/* Sets the OpenMP thread count for the next step and returns it. */
size_t thread_tuner_begin(ThreadTuner *t);
/* That step's wall time; the idle CPU time since thread_tuner_begin is read
 * from the machine. */
void thread_tuner_record(ThreadTuner *t, double seconds);

/* ---- the parts, exposed for tests --------------------------------------------- */

/* CPU time of the whole machine since boot that a process of normal priority
 * could have had, in core-seconds (/proc/stat over all CPUs: idle, iowait,
 * and the time of niced processes); negative where it cannot be read. */
double machine_idle_seconds(void);
/* The start with a given count of idle cores (< 0: unknown, keep the width). */
void thread_tuner_start_with(ThreadTuner *t, double idle_cores);
/* thread_tuner_record with the step's mean idle cores given (< 0: unknown). */
void thread_tuner_record_idle(ThreadTuner *t, double seconds, double idle_cores);

#endif
