/* Chooses the fastest kernels of the linked BLAS library this CPU runs correctly (see lm/blas_setup.h). */
#include "lm/blas_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blas/backend.h"
#include "blas/kernel_check.h"

extern char **environ;

/* Private markers between this process and the copies of it it starts. */
#define ENV_PROBE "LM_BLAS_PROBE"       /* =<core>: be the probe for <core>, then exit */
#define ENV_SELECTED "LM_BLAS_SELECTED" /* =<core>: the selecting variable was set by us; <core> is what the library chose */
/* Test hooks, documented in the header. */
#define ENV_TEST_CORENAME "LM_TEST_BLAS_CORENAME"
#define ENV_TEST_PROBE "LM_TEST_BLAS_PROBE"

/* The probe takes well under a second (most of it the reference products);
 * the bound is generous for a loaded machine or a sanitizer build. */
#define PROBE_TIMEOUT_S 10.0

/* ---- the probe process ---------------------------------------------------------- */

/* Exit statuses of the probe; it reports details on its stdout (a pipe). */
enum { PROBE_PASSED = 0, PROBE_UNKNOWN_CORE = 3, PROBE_WRONG_RESULTS = 4, PROBE_EXEC_FAILED = 127 };

static void write_all(int fd, const char *s) {
    size_t len = strlen(s);
    while (len > 0) {
        ssize_t w = write(fd, s, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w, len -= (size_t)w;
    }
}

/* This program's file, for restarting it: the target of /proc/self/exe
 * rather than the link itself, so that the restarted process keeps its name
 * (ps, pgrep and top show "train", not "exe"). */
static const char *self_path(void) {
    static char path[4096];
    ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
    if (len <= 0 || (size_t)len >= sizeof path - 1) return "/proc/self/exe";
    path[len] = '\0';
    return path;
}

/* Runs in the child started with the selecting variable set for `candidate`. */
static int run_probe(const char *candidate) {
    char line[128];
    const char *hook = getenv(ENV_TEST_PROBE);
    if (hook && strcmp(hook, "crash") == 0) { /* as an instruction this CPU lacks would */
        signal(SIGILL, SIG_DFL);
        raise(SIGILL);
    }
    const char *core = blas_backend_core();
    if (!core || strcasecmp(core, candidate) != 0) {
        snprintf(line, sizeof line, "core %s\n", core ? core : "(none)");
        write_all(STDOUT_FILENO, line);
        return PROBE_UNKNOWN_CORE;
    }
    double worst;
    int rc = blas_probe_gemm(hook && strcmp(hook, "fail") == 0, &worst);
    snprintf(line, sizeof line, "error %.3g\n", worst);
    write_all(STDOUT_FILENO, line);
    return rc == 0 ? PROBE_PASSED : PROBE_WRONG_RESULTS;
}

static double monotonic_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The environment of the probe: ours without the selecting variable and
 * the markers, plus that variable set for the candidate and the probe marker. */
static char **probe_environment(const char *candidate, char *coretype, size_t coretype_len, char *marker,
                                size_t marker_len) {
    const char *var = blas_backend_cores()->env_var;
    size_t var_len = strlen(var);
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **env = malloc((n + 3) * sizeof *env);
    if (!env) return NULL;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = environ[i];
        if ((strncmp(v, var, var_len) == 0 && v[var_len] == '=') || strncmp(v, ENV_PROBE "=", sizeof ENV_PROBE) == 0 ||
            strncmp(v, ENV_SELECTED "=", sizeof ENV_SELECTED) == 0)
            continue;
        env[out++] = environ[i];
    }
    char value[64] = "";
    blas_backend_select_value(candidate, value, sizeof value);
    snprintf(coretype, coretype_len, "%s=%s", var, value);
    snprintf(marker, marker_len, ENV_PROBE "=%s", candidate);
    env[out++] = coretype;
    env[out++] = marker;
    env[out] = NULL;
    return env;
}

/* Reads the probe's report from fd until it closes the pipe (exits) or the
 * deadline passes; returns 1 if time ran out. */
static int read_report(int fd, double deadline, char *report, size_t size, size_t *report_len) {
    *report_len = 0;
    report[0] = '\0';
    for (;;) {
        double left = deadline - monotonic_seconds();
        if (left <= 0) return 1;
        struct pollfd p = {fd, POLLIN, 0};
        int ready = poll(&p, 1, (int)(left * 1000.0) + 1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue; /* the deadline check ends the loop */
        char chunk[128];
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0; /* end of file: the probe is done */
        size_t keep = (size_t)got < size - 1 - *report_len ? (size_t)got : size - 1 - *report_len;
        memcpy(report + *report_len, chunk, keep);
        *report_len += keep;
        report[*report_len] = '\0';
    }
}

/* Reaps the probe, which may still be exiting after closing its pipe; kills
 * it once the deadline has passed. Returns waitpid's result (pid, or -1 with
 * *wait_errno), or 0 when it was killed for running out of time. */
static pid_t reap_probe(pid_t pid, double deadline, int timed_out, int *status, int *wait_errno) {
    pid_t waited = 0;
    while (!timed_out) {
        waited = waitpid(pid, status, WNOHANG);
        *wait_errno = errno;
        if (waited == pid || (waited < 0 && *wait_errno != EINTR)) return waited;
        if (monotonic_seconds() > deadline) timed_out = 1;
        else {
            struct timespec pause = {0, 2000000};
            nanosleep(&pause, NULL);
        }
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {}
    return 0;
}

/* Why a finished probe failed, into why; 0 if it passed. */
static int probe_verdict(const char *candidate, const char *exe, int timed_out, pid_t waited, int wait_errno,
                         int status, const char *report, size_t report_len, char *why, size_t why_len) {
    char reported_core[64];
    double error;
    if (timed_out)
        snprintf(why, why_len, "the %s probe did not finish within %.0f s", candidate, PROBE_TIMEOUT_S);
    else if (waited < 0)
        snprintf(why, why_len, "could not wait for the %s probe (%s)", candidate, strerror(wait_errno));
    else if (WIFSIGNALED(status))
        snprintf(why, why_len, "the %s probe crashed (signal %d, %s)", candidate, WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (WEXITSTATUS(status) == PROBE_PASSED && sscanf(report, "error %lf", &error) == 1)
        return 0;
    else if (WEXITSTATUS(status) == PROBE_WRONG_RESULTS && sscanf(report, "error %lf", &error) == 1)
        snprintf(why, why_len, "the %s probe computed wrong results (max relative error %.1e)", candidate, error);
    else if (WEXITSTATUS(status) == PROBE_UNKNOWN_CORE && sscanf(report, "core %63s", reported_core) == 1)
        snprintf(why, why_len, "this %s does not run %s (asked for it, it ran %s)", blas_backend_cores()->library,
                 candidate, reported_core);
    else if (WEXITSTATUS(status) == PROBE_EXEC_FAILED)
        snprintf(why, why_len, "could not run %s for the %s probe", exe, candidate);
    else if (report_len == 0) /* the program printed or exited before calling blas_setup */
        snprintf(why, why_len, "the %s probe gave no report (exit status %d)", candidate, WEXITSTATUS(status));
    else
        snprintf(why, why_len, "the %s probe failed (exit status %d)", candidate, WEXITSTATUS(status));
    return -1;
}

/* Starts the probe for `candidate` and waits for it, at most PROBE_TIMEOUT_S.
 * Returns 0 if it passed; otherwise -1 with why in `why`. */
static int probe_candidate(const char *candidate, char **argv, char *why, size_t why_len) {
    char coretype[96], marker[64];
    char **env = probe_environment(candidate, coretype, sizeof coretype, marker, sizeof marker);
    int pipe_fds[2] = {-1, -1};
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (!env || devnull < 0 || pipe2(pipe_fds, O_CLOEXEC) != 0) {
        snprintf(why, why_len, "could not start the %s probe (%s)", candidate, strerror(errno));
        free(env);
        if (devnull >= 0) close(devnull);
        return -1;
    }
    /* If our parent left SIGCHLD ignored, children are reaped automatically
     * and waitpid could not report the probe's status. */
    struct sigaction default_chld = {0}, old_chld;
    default_chld.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &default_chld, &old_chld);

    const char *exe = self_path();
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid == 0) {
        /* The child: only async-signal-safe calls until exec. Its output goes
         * to the pipe (stdout) or nowhere; a crash leaves no core file. */
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        dup2(devnull, STDIN_FILENO);
        dup2(pipe_fds[1], STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
        execve(exe, argv, env);
        _exit(PROBE_EXEC_FAILED);
    }
    int fork_errno = errno;
    close(pipe_fds[1]);
    close(devnull);
    free(env);
    if (pid < 0) {
        close(pipe_fds[0]);
        sigaction(SIGCHLD, &old_chld, NULL);
        snprintf(why, why_len, "could not start the %s probe (fork: %s)", candidate, strerror(fork_errno));
        return -1;
    }
    double deadline = monotonic_seconds() + PROBE_TIMEOUT_S;
    char report[128];
    size_t report_len;
    int timed_out = read_report(pipe_fds[0], deadline, report, sizeof report, &report_len);
    close(pipe_fds[0]);
    int status = 0, wait_errno = 0;
    pid_t waited = reap_probe(pid, deadline, timed_out, &status, &wait_errno);
    if (waited == 0) timed_out = 1;
    sigaction(SIGCHLD, &old_chld, NULL);
    return probe_verdict(candidate, exe, timed_out, waited, wait_errno, status, report, report_len, why, why_len);
}

/* ---- start-up ----------------------------------------------------------------- */

/* How the kernels in use came to be. */
typedef enum { ORIGIN_UNSET, ORIGIN_LIBRARY, ORIGIN_SELECTED, ORIGIN_ENVIRONMENT, ORIGIN_KEPT } BlasOrigin;

static struct {
    BlasOrigin origin;
    char library_core[64]; /* the library's own choice (as the test hook pretends, if set) */
    char rejected[64];     /* ORIGIN_KEPT: the candidate that failed */
    char could_run[64];    /* ORIGIN_ENVIRONMENT: a faster core the CPU supports ("" if none) */
    int pretended;         /* library_core came from LM_TEST_BLAS_CORENAME */
} blas_state;

static void copy_name(char *dst, size_t len, const char *src) { snprintf(dst, len, "%s", src ? src : "(none)"); }

static const char *env_value(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int blas_setup(int argc, char **argv, Error *err) {
    if (cpu_isa_check(err)) return -1;
    const char *probe_for = env_value(ENV_PROBE);
    if (probe_for) _exit(run_probe(probe_for)); /* we are a probe: never run the program */

    /* An empty selecting variable, or one naming nothing of the library,
     * counts as unset: blas_backend_environment_core removes it. A library
     * that read it before main already runs whatever it made of it (OpenBLAS
     * 0.3.21 falls back to Haswell on a Zen, whose own choice is Zen), so
     * the program restarts without it and the library makes its own choice,
     * the one the start-up line then names. */
    int variable_given = getenv(blas_backend_cores()->env_var) != NULL;
    const char *env_core = blas_backend_environment_core();
    if (variable_given && !env_core && blas_backend_reads_variable_at_load() && argc >= 1 && argv && argv[0]) {
        fflush(NULL);
        execv(self_path(), argv); /* returns only on failure: the line still names what runs */
    }
    const char *selected_over = env_value(ENV_SELECTED);
    const char *pretend = env_value(ENV_TEST_CORENAME);
    CpuFeatures cpu;
    cpu_features_detect(&cpu);

    if (env_core && selected_over) { /* restarted by us with our choice: report, never select again */
        blas_state.origin = ORIGIN_SELECTED;
        copy_name(blas_state.library_core, sizeof blas_state.library_core, selected_over);
        blas_state.pretended = pretend != NULL;
        return 0;
    }
    if (env_core) { /* the environment's choice stands, right or wrong */
        blas_state.origin = ORIGIN_ENVIRONMENT;
        const char *best = blas_best_core(blas_backend_cores(), &cpu);
        BlasLevel in_use = blas_core_level(blas_backend_cores(), env_core);
        /* Said in the start-up line (blas_describe), not on stderr: every
         * program runs on such a machine, and its errors stay one line. */
        if (best && in_use != BLAS_LEVEL_UNKNOWN && in_use < blas_core_level(blas_backend_cores(), best))
            copy_name(blas_state.could_run, sizeof blas_state.could_run, best);
        return 0;
    }

    blas_state.origin = ORIGIN_LIBRARY;
    blas_state.pretended = pretend != NULL;
    copy_name(blas_state.library_core, sizeof blas_state.library_core, pretend ? pretend : blas_backend_core());
    BlasDecision decision = blas_decide(blas_backend_cores(), blas_state.library_core, &cpu);
    if (!decision.switch_to) return 0;

    char why[256], value[64];
    int selectable = blas_backend_select_value(decision.switch_to, value, sizeof value) == 0;
    if (argc < 1 || !argv || !argv[0])
        snprintf(why, sizeof why, "no argv to restart the program with %s", decision.switch_to);
    else if (!selectable)
        snprintf(why, sizeof why, "this %s was built without %s", blas_backend_cores()->library, decision.switch_to);
    else if (probe_candidate(decision.switch_to, argv, why, sizeof why) == 0) {
        fflush(NULL);
        if (setenv(blas_backend_cores()->env_var, value, 1) == 0 &&
            setenv(ENV_SELECTED, blas_state.library_core, 1) == 0)
            execv(self_path(), argv); /* returns only on failure */
        snprintf(why, sizeof why, "could not restart with %s (execv %s: %s)", decision.switch_to, self_path(),
                 strerror(errno));
        unsetenv(blas_backend_cores()->env_var);
        unsetenv(ENV_SELECTED);
    }
    blas_state.origin = ORIGIN_KEPT;
    copy_name(blas_state.rejected, sizeof blas_state.rejected, decision.switch_to);
    fprintf(stderr, "blas: kept %s's %s kernels: %s\n", blas_backend_cores()->library, blas_state.library_core, why);
    return 0;
}

const char *blas_kernel(void) { return blas_backend_core(); }

const char *blas_best_kernel(void) {
    CpuFeatures cpu;
    cpu_features_detect(&cpu);
    return blas_best_core(blas_backend_cores(), &cpu);
}

const char *blas_describe(void) {
    static char text[320];
    const char *version = blas_backend_version(), *var = blas_backend_cores()->env_var;
    const char *in_use = blas_backend_core();
    const char *test_note = blas_state.pretended ? " [" ENV_TEST_CORENAME "]" : "";
    switch (blas_state.origin) {
    case ORIGIN_SELECTED:
        snprintf(text, sizeof text, "%s, kernel %s (selected: the library chose %s on this CPU)%s", version, in_use,
                 blas_state.library_core, test_note);
        break;
    case ORIGIN_ENVIRONMENT:
        if (blas_state.could_run[0])
            snprintf(text, sizeof text, "%s, kernel %s (set by %s, kept; this CPU could run %s)", version, in_use, var,
                     blas_state.could_run);
        else snprintf(text, sizeof text, "%s, kernel %s (set by %s)", version, in_use, var);
        break;
    case ORIGIN_KEPT:
        snprintf(text, sizeof text, "%s, kernel %s (the library's choice; %s failed its check)%s", version,
                 blas_state.library_core, blas_state.rejected, test_note);
        break;
    case ORIGIN_LIBRARY:
        snprintf(text, sizeof text, "%s, kernel %s (the library's choice)%s", version, blas_state.library_core,
                 test_note);
        break;
    case ORIGIN_UNSET: /* blas_setup was not called */
        if (env_value(var)) snprintf(text, sizeof text, "%s, kernel %s (set by %s)", version, in_use, var);
        else snprintf(text, sizeof text, "%s, kernel %s", version, in_use);
        break;
    }
    return text;
}
