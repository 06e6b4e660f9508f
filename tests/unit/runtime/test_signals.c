/* The cleanup when a signal ends a program (lm/files.h, cleanup_on_signals),
 * in a test program of its own: it forks, which qemu-user (the ARM64 tests)
 * cannot do in a process whose OpenMP threads have started, as test_units'
 * have. */
#include "testutil.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lm/files.h"

/* A signal that ends a writer removes its temporary, its temporary folder
 * and its lock, says so in one line, and the process dies of that signal;
 * SIGPIPE silently. Forked, so the signal ends the child alone. */
static void check_signal_cleanup(int sig) {
    char dir[] = "/tmp/lm-cleanup-XXXXXX", out[PATH_BUF], lock_path[PATH_BUF], err_path[PATH_BUF];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/out.ckpt", dir);
    snprintf(lock_path, sizeof lock_path, "%s.lock", out);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    Error err;
    /* The raw system call, not fork(): under qemu-user (the ARM64 tests)
     * glibc's fork never returned in the child. This process has one
     * thread (no OpenMP region has run), so the child inherits no lock. */
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(err_path, "w", stderr)) _exit(3);
        cleanup_on_signals("child");
        char export_dir[PATH_BUF], file[PATH_BUF], tmp[PATH_BUF], tmp_dir[PATH_BUF];
        snprintf(export_dir, sizeof export_dir, "%s/hf", dir);
        OutputLock lock;
        FILE *f = temp_create(out, tmp, sizeof tmp, &err);
        if (!f || output_lock(out, &lock, &err) || temp_dir_create(export_dir, tmp_dir, sizeof tmp_dir, &err)) _exit(4);
        snprintf(file, sizeof file, "%s/config.json", tmp_dir);
        if (write_file_atomic(file, "{}", 2, &err)) _exit(5);
        fputs("half", f);
        fflush(f);
        raise(sig);
        _exit(6); /* not reached */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != sig) fail_msg("the child did not die of signal %d (status %d)", sig, status);
    struct stat st;
    assert_int_not_equal(lstat(lock_path, &st), 0);
    size_t len = 0;
    char *said = read_file(err_path, &len, &err);
    assert_non_null(said);
    if (sig == SIGPIPE) assert_int_equal(len, 0);
    else assert_non_null(strstr(said, "child: stopped"));
    free(said);
    unlink(err_path);
    assert_int_equal(rmdir(dir), 0); /* empty: the temporary, the temporary folder and the lock went */
}
static void test_signal_cleanup(void **s) {
    (void)s;
    check_signal_cleanup(SIGTERM);
    check_signal_cleanup(SIGINT);
    check_signal_cleanup(SIGPIPE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_cleanup),
    };
    return cmocka_run_group_tests_name("signals", tests, NULL, NULL);
}
