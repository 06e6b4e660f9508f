/* The run's thread count and parallel width, and the adaptive thread count of training steps (see lm/threads.h). */
#include "lm/threads.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "lm/error.h"
#include "lm/machine.h"

/* A probe must beat the current count by this factor to replace it: step
 * times wobble by a few percent on a quiet machine. */
#define SWITCH_GAIN 0.93
/* A step this much slower than the baseline, twice in a row, means the
 * machine changed: probe at once. */
#define JUMP 1.3
#define FIRST_INTERVAL 4
#define MAX_INTERVAL 256
#define PROBE_STEPS 1
/* More threads are tried only while at least this share of each added
 * thread's core sat idle during the recent steps. */
#define UP_IDLE_SHARE 0.6
/* The start: how long the idle cores are measured, and the slack that lets a
 * core that was idle nearly all that time count (clock ticks are 10 ms). */
#define START_SAMPLE_S 0.1
#define START_SLACK 0.3

static size_t parallel_width = 0; /* 0: the current OpenMP thread count */

/* LM_PARALLEL_WIDTH=W (a measurement hook, see threads.h): cut the work as W
 * threads would, whatever number runs it. */
static size_t width_from_environment(void) {
    const char *v = getenv("LM_PARALLEL_WIDTH");
    if (!v || !*v) return 0;
    char *end;
    unsigned long w = strtoul(v, &end, 10);
    return *end == '\0' && w > 0 && w <= 4096 ? (size_t)w : 0;
}

void threads_use(size_t n) {
    if (n > 0) omp_set_num_threads((int)n);
    size_t forced = width_from_environment();
    threads_set_width(forced ? forced : (size_t)omp_get_max_threads()); /* fixed for the run */
}

size_t threads_per_rank(size_t requested, int local_ranks) {
    if (requested || local_ranks <= 1) return requested;
    int share = omp_get_num_procs() / local_ranks;
    size_t n = share > 1 ? (size_t)share : 1;
    return n > (size_t)omp_get_max_threads() ? (size_t)omp_get_max_threads() : n;
}

size_t threads_max(void) { return (size_t)omp_get_max_threads(); }

void threads_set_width(size_t width) { parallel_width = width; }

size_t threads_width(void) { return parallel_width ? parallel_width : (size_t)omp_get_max_threads(); }

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
    t->idle_mark = -1.0;
}

double machine_idle_seconds(void) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1.0;
    unsigned long long user, nice, sys, idle, iowait;
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle, &iowait);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    /* Niced processes (a background job at nice 19) yield their cores to us:
     * their time counts as free. */
    return got == 5 && hz > 0 ? (double)(idle + iowait + nice) / (double)hz : -1.0;
}

void thread_tuner_start_with(ThreadTuner *t, double idle_cores) {
    if (!t->adaptive || idle_cores < 0.0) return;
    t->cur = t->n_cand - 1; /* 1 thread, unless a larger count fits */
    for (size_t i = 0; i < t->n_cand; i++)
        if ((double)t->cand[i] <= idle_cores + START_SLACK) {
            t->cur = i;
            break;
        }
}

size_t thread_tuner_start(ThreadTuner *t) {
    if (t->adaptive) {
        double i0 = machine_idle_seconds(), w0 = wall_seconds();
        struct timespec pause = {0, (long)(START_SAMPLE_S * 1e9)};
        nanosleep(&pause, NULL);
        double i1 = machine_idle_seconds(), w1 = wall_seconds();
        thread_tuner_start_with(t, i0 >= 0.0 && i1 >= i0 && w1 > w0 ? (i1 - i0) / (w1 - w0) : -1.0);
    }
    size_t n = t->cand[t->cur];
    omp_set_num_threads((int)n);
    return n;
}

size_t thread_tuner_begin(ThreadTuner *t) {
    size_t n = t->cand[t->probe < t->n_cand ? t->probe : t->cur];
    omp_set_num_threads((int)n);
    t->idle_mark = t->adaptive ? machine_idle_seconds() : -1.0;
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

static void window_push(ThreadTuner *t, double s, double idle_cores) {
    t->window[t->window_pos] = s;
    t->idle[t->window_pos] = idle_cores;
    t->window_pos = (t->window_pos + 1) % TUNER_WINDOW;
    if (t->n_window < TUNER_WINDOW) t->n_window++;
}

/* Whether the cores that more threads would use sat idle during the recent
 * steps (time-weighted; unknown counts as yes). */
static int room_for_more(const ThreadTuner *t) {
    double idle = 0.0, secs = 0.0;
    for (size_t i = 0; i < t->n_window; i++)
        if (t->idle[i] >= 0.0) idle += t->idle[i] * t->window[i], secs += t->window[i];
    if (secs <= 0.0) return 1;
    return idle / secs >= UP_IDLE_SHARE * (double)(t->cand[t->cur - 1] - t->cand[t->cur]);
}

/* The neighbouring candidate to try next: alternately fewer and more threads,
 * where both exist and more have room; n_cand for none. */
static size_t next_probe(ThreadTuner *t) {
    int can_down = t->cur + 1 < t->n_cand, can_up = t->cur > 0 && room_for_more(t);
    if (!can_down && !can_up) return t->n_cand;
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
        window_push(t, t->probe_best, -1.0);
        t->interval = FIRST_INTERVAL; /* look again soon: the machine is changing */
    } else {
        t->interval = t->interval * 2 < MAX_INTERVAL ? t->interval * 2 : MAX_INTERVAL;
    }
    t->probe = t->n_cand;
    t->since_probe = 0;
}

void thread_tuner_record(ThreadTuner *t, double seconds) {
    double now = t->idle_mark >= 0.0 ? machine_idle_seconds() : -1.0;
    thread_tuner_record_idle(t, seconds, now >= t->idle_mark && seconds > 0.0 ? (now - t->idle_mark) / seconds : -1.0);
}

void thread_tuner_record_idle(ThreadTuner *t, double seconds, double idle_cores) {
    if (!t->adaptive) return;
    if (t->probe < t->n_cand) {
        if (seconds < t->probe_best) t->probe_best = seconds;
        if (--t->probe_left == 0) finish_probe(t);
        return;
    }
    window_push(t, seconds, idle_cores);
    t->since_probe++;
    if (t->n_window < 3) return;
    if (t->baseline == 0.0) t->baseline = window_mean(t);
    const double prev = t->window[(t->window_pos + TUNER_WINDOW - 2) % TUNER_WINDOW];
    int jumped = seconds > JUMP * t->baseline && prev > JUMP * t->baseline;
    if (jumped) { /* judge the new conditions by themselves */
        double prev_idle = t->idle[(t->window_pos + TUNER_WINDOW - 2) % TUNER_WINDOW];
        window_reset(t);
        window_push(t, prev, prev_idle);
        window_push(t, seconds, idle_cores);
        t->interval = FIRST_INTERVAL;
        t->since_probe = t->interval; /* probe as soon as the window refills */
        return;
    }
    if (t->since_probe >= t->interval) {
        t->baseline = window_mean(t);
        size_t next = next_probe(t);
        t->since_probe = 0;
        if (next == t->n_cand) return; /* nothing worth trying: look again after the interval */
        t->probe = next;
        t->probe_left = PROBE_STEPS;
        t->probe_best = 1e300;
    }
}
