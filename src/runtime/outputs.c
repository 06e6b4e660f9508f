/* What a program writes: atomic writes through a temporary beside the
 * file, the one rule every output path is held to, the lock beside a
 * checkpoint, and the removal of temporaries and locks when a signal ends
 * the process (see lm/files.h). Reading and paths are files.c's. */
#include "lm/files.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the paths to remove if a signal ends the process ---------------------- */

/* A fixed table, so the signal handler reads it without locks or
 * allocation; a slot is taken by writing its path, then setting `used`. */
#define CLEANUP_SLOTS 16
static struct {
    volatile sig_atomic_t used, is_dir;
    char path[PATH_BUF];
} cleanup[CLEANUP_SLOTS];
static const char *cleanup_prog = "lm";

void cleanup_add(const char *path, int is_dir) {
    if (strlen(path) >= PATH_BUF) return;
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        if (cleanup[i].used) continue;
        memcpy(cleanup[i].path, path, strlen(path) + 1);
        cleanup[i].is_dir = is_dir;
        cleanup[i].used = 1;
        return;
    }
}

void cleanup_drop(const char *path) {
    for (int i = 0; i < CLEANUP_SLOTS; i++)
        if (cleanup[i].used && strcmp(cleanup[i].path, path) == 0) {
            cleanup[i].used = 0;
            return;
        }
}

/* The entries of a temporary directory (our exports are flat), then the
 * directory: getdents64, unlinkat and rmdir are system calls, safe in a
 * signal handler where opendir is not. */
static void remove_flat_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        char buf[4096];
        for (long n; (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
            for (long at = 0; at < n;) {
                /* struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, name */
                unsigned short reclen;
                memcpy(&reclen, buf + at + 16, sizeof reclen);
                const char *name = buf + at + 19;
                if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) unlinkat(fd, name, 0);
                at += reclen;
            }
        close(fd);
    }
    rmdir(path);
}

static void put_err(const char *s) {
    ssize_t ignored = write(STDERR_FILENO, s, strlen(s));
    (void)ignored;
}

static void on_fatal_signal(int sig) {
    int saved = errno;
    /* SIGPIPE is the reader going away (bin/sample | head): silent, as
     * every Unix tool; the others get one line. */
    if (sig != SIGPIPE) {
        put_err(cleanup_prog);
        put_err(sig == SIGINT ? ": stopped (SIGINT)" : sig == SIGTERM ? ": stopped (SIGTERM)"
                : sig == SIGHUP ? ": stopped (SIGHUP)" : ": stopped (SIGQUIT)");
        put_err(": nothing half-written is kept\n");
    }
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        if (!cleanup[i].used) continue;
        if (cleanup[i].is_dir) remove_flat_dir(cleanup[i].path);
        else unlink(cleanup[i].path);
    }
    errno = saved;
    signal(sig, SIG_DFL); /* then die of it, so the parent sees the signal */
    raise(sig);
}

void cleanup_catch(int sig, const struct sigaction *sa) {
    struct sigaction old;
    /* nohup's SIGHUP, ignored, stays ignored: the run outlives its terminal. */
    if (sig == SIGHUP && sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler == SIG_IGN) return;
    sigaction(sig, sa, NULL);
}

void cleanup_on_signals(const char *prog) {
    cleanup_prog = prog;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigfillset(&sa.sa_mask);
    /* SIGHUP: the terminal or the ssh connection closed; SIGQUIT: Ctrl-\\. */
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) cleanup_catch(sigs[i], &sa);
    /* Past a file-size limit a write fails (EFBIG), the writer reports it in
     * one line and removes its temporary: not a silent death. */
    signal(SIGXFSZ, SIG_IGN);
}

/* ---- atomic writes: a temporary beside the file, then a rename ------------- */

/* The directory holding path ("." or "/" for none) and its last part. */
static int split_path(const char *path, char *dir, size_t size, const char **base, Error *err) {
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash) return path_format(dir, size, err, ".");
    if (slash == path) return path_format(dir, size, err, "/");
    return path_format(dir, size, err, "%.*s", (int)(slash - path), path);
}

int fsync_parent_dir(const char *path) {
    char dir[PATH_BUF];
    const char *base;
    Error ignored;
    if (split_path(path, dir, sizeof dir, &base, &ignored)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int temp_path(char *buf, size_t size, const char *path, Error *err) {
    return path_format(buf, size, err, "%s" TEMP_INFIX "%ld", path, (long)getpid());
}

/* Unlinks what is at our temporary's name (a link or file planted there or
 * left by a dead run of our pid), never following it; a directory stays, and
 * the create that follows fails on it. */
static int clear_temp(const char *tmp, Error *err) {
    struct stat st;
    if (lstat(tmp, &st) != 0 || S_ISDIR(st.st_mode)) return 0;
    if (unlink(tmp) != 0 && errno != ENOENT) return err_set(err, "cannot remove '%s': %s", tmp, strerror(errno));
    return 0;
}

int temp_dir_create(const char *path, char *tmp, size_t size, Error *err) {
    if (temp_path(tmp, size, path, err) || clear_temp(tmp, err)) return -1;
    if (mkdir(tmp, 0777) == 0) { /* mkdir never follows a link; the mode is the umask's */
        cleanup_add(tmp, 1);
        return 0;
    }
    return err_set(err, "cannot create '%s'%s: %s", tmp, errno == EEXIST ? " (left by an interrupted run? remove it)" : "",
                   strerror(errno));
}

FILE *temp_create(const char *path, char *tmp, size_t size, Error *err) {
    if (temp_path(tmp, size, path, err)) return NULL;
    /* Our pid's name, so nothing of ours is there: whatever is (a planted
     * link, a dead run's file of the same pid) is unlinked, never followed,
     * and the file is created new (O_EXCL | O_NOFOLLOW: if anything appears
     * there meanwhile, the open fails instead of writing through it), with
     * the mode the umask gives. */
    if (output_replaceable(path, "the output", err) || clear_temp(tmp, err)) return NULL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        err_set(err, "cannot write '%s': %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return NULL;
    }
    cleanup_add(tmp, 0); /* removed if a signal ends the process before the commit */
    return f;
}

int temp_commit(FILE *f, const char *tmp, const char *path, int failed, Error *err) {
    /* The data reaches the disk (fsync) before the rename makes it the file,
     * and the rename reaches it (fsync of the directory) before we return:
     * a crash, a kill or a power cut at any moment leaves the old file or
     * the new one, whole. */
    int saved = failed ? (errno ? errno : EIO) : 0;
    if (!saved && (fflush(f) != 0 || fsync(fileno(f)) != 0)) saved = errno ? errno : EIO;
    if (fclose(f) != 0 && !saved) saved = errno ? errno : EIO;
    /* What appeared at path since the start (a device, a FIFO, a folder) is
     * never replaced. */
    if (!saved && output_replaceable(path, "the output", err)) {
        unlink(tmp);
        cleanup_drop(tmp);
        return -1;
    }
    if (!saved && rename(tmp, path) != 0) {
        err_set(err, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        unlink(tmp);
        cleanup_drop(tmp);
        return -1;
    }
    cleanup_drop(tmp);
    if (saved) {
        err_set(err, "cannot write '%s': %s (the previous file, if any, is unchanged)", path, strerror(saved));
        unlink(tmp);
        return -1;
    }
    if (fsync_parent_dir(path) != 0) return err_set(err, "cannot sync the directory of '%s': %s", path, strerror(errno));
    return 0;
}

int temp_publish(FILE *f, const char *tmp, const char *path, Error *err) {
    int saved = fflush(f) != 0 || fsync(fileno(f)) != 0 ? (errno ? errno : EIO) : 0;
    if (!saved && output_replaceable(path, "the output", err)) {
        unlink(tmp);
        cleanup_drop(tmp);
        return -1;
    }
    if (saved || rename(tmp, path) != 0) {
        err_set(err, "cannot write '%s': %s (the previous file, if any, is unchanged)", path,
                strerror(saved ? saved : errno));
        unlink(tmp);
        cleanup_drop(tmp);
        return -1;
    }
    cleanup_drop(tmp);
    if (fsync_parent_dir(path) != 0) return err_set(err, "cannot sync the directory of '%s': %s", path, strerror(errno));
    return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, Error *err) {
    char tmp[PATH_BUF];
    FILE *f = temp_create(path, tmp, sizeof tmp, err);
    if (!f) return -1;
    errno = 0;
    return temp_commit(f, tmp, path, fwrite(data, 1, len, f) != len, err);
}

/* Whether name is prefix...TEMP_INFIX PID (whole: exactly prefix TEMP_INFIX
 * PID) and PID's process is gone; not our own. */
static int dead_temporary(const char *name, const char *prefix, int whole) {
    size_t plen = strlen(prefix);
    if (strncmp(name, prefix, plen) != 0) return 0;
    const char *infix = whole ? name + plen : NULL;
    for (const char *at = name + plen; !whole && (at = strstr(at, TEMP_INFIX)); at++) infix = at; /* the last */
    if (!infix || strncmp(infix, TEMP_INFIX, strlen(TEMP_INFIX)) != 0) return 0;
    const char *digits = infix + strlen(TEMP_INFIX);
    char *end;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    if (!isdigit((unsigned char)*digits) || *end || errno || pid <= 0 || pid == (long)getpid()) return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH; /* alive, or not ours to judge: kept */
}

/* The dead temporaries in dir of the files named prefix (whole) or
 * starting with it; how many were removed. */
static int remove_dead_in(const char *dir, const char *prefix, int whole, Error *err) {
    DIR *d = opendir(dir);
    if (!d) return 0; /* no directory yet: nothing left in it */
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!dead_temporary(e->d_name, prefix, whole)) continue;
        char full[PATH_BUF];
        if (path_format(full, sizeof full, err, "%s/%s", dir, e->d_name)) continue;
        struct stat st;
        if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && unlink(full) == 0) removed++;
    }
    closedir(d);
    return removed;
}

int remove_dead_temporaries(const char *path, Error *err) {
    char dir[PATH_BUF];
    const char *base;
    if (split_path(path, dir, sizeof dir, &base, err)) return -1;
    return remove_dead_in(dir, base, 1, err);
}

int remove_dead_temporaries_like(const char *dir, const char *prefix, Error *err) {
    return remove_dead_in(dir, prefix, 0, err);
}

int write_text_in(const char *dir, const char *name, const char *text, Error *err) {
    if (!text) return err_set(err, "out of memory");
    char path[PATH_BUF];
    if (path_format(path, sizeof path, err, "%s/%s", dir, name)) return -1;
    return write_file_atomic(path, text, strlen(text), err);
}

/* ---- the one rule for an output path ---------------------------------------- */

int output_replaceable(const char *path, const char *what, Error *err) {
    struct stat st;
    if (lstat(path, &st) != 0) return 0;                     /* nothing there yet */
    if (S_ISLNK(st.st_mode) && stat(path, &st) != 0) return 0; /* a dangling link: the rename replaces the link */
    if (S_ISREG(st.st_mode)) return 0;
    if (S_ISDIR(st.st_mode))
        return err_set(err, "%s '%s' is a directory: give the path of a file (in it, or beside it)", what, path);
    return err_set(err, "%s '%s' is %s, not a file: it is never written or replaced; give the path of a file", what,
                   path, file_kind(st.st_mode));
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int output_same_path(const char *a, const char *b) {
    if (same_file(a, b)) return 1;
    char da[PATH_BUF], db[PATH_BUF], ra[PATH_MAX], rb[PATH_MAX];
    const char *ba, *bb;
    Error ignored;
    if (split_path(a, da, sizeof da, &ba, &ignored) || split_path(b, db, sizeof db, &bb, &ignored)) return 0;
    return strcmp(ba, bb) == 0 && realpath(da, ra) && realpath(db, rb) && strcmp(ra, rb) == 0;
}

int output_check(const char *path, const char *what, OutputKind kind, const NamedPath *inputs, size_t n_inputs,
                 Error *err) {
    if (!path || !*path) return err_set(err, "%s is empty: give the path of a %s", what, kind == OUTPUT_DIR ? "folder" : "file");
    size_t len = strlen(path);
    if (len + 32 >= PATH_BUF) return err_set(err, "%s is too long (%zu bytes, the limit is %d)", what, len, PATH_BUF - 33);
    struct stat st;
    if (kind == OUTPUT_DIR) {
        if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
            return err_set(err, "%s '%s' is %s, not a folder: give a new or existing folder", what, path,
                           S_ISREG(st.st_mode) ? "a file" : file_kind(st.st_mode));
        return 0; /* created if missing; its files are each held to this rule as they are written */
    }
    if (path[len - 1] == '/' || strcmp(path, ".") == 0 || strcmp(path, "..") == 0 ||
        (len >= 3 && strcmp(path + len - 3, "/..") == 0) || (len >= 2 && strcmp(path + len - 2, "/.") == 0))
        return err_set(err, "%s '%s' names a folder: give the path of a file", what, path);
    if (output_replaceable(path, what, err)) return -1;
    char dir[PATH_BUF], tmp[PATH_BUF];
    const char *base;
    if (split_path(path, dir, sizeof dir, &base, err)) return -1;
    int found = stat(dir, &st) == 0;
    if (!found || !S_ISDIR(st.st_mode))
        return err_set(err, "%s '%s': the folder '%s' %s", what, path, dir,
                       !found && errno == ENOENT ? "does not exist (create it first)" : "is not a folder");
    if (access(dir, W_OK | X_OK) != 0)
        return err_set(err, "%s '%s': cannot write in the folder '%s': %s", what, path, dir, strerror(errno));
    if (temp_path(tmp, sizeof tmp, path, err)) return -1;
    if (lstat(tmp, &st) == 0 && S_ISDIR(st.st_mode))
        return err_set(err, "%s '%s': a folder is in the way at its temporary '%s': remove it", what, path, tmp);
    for (size_t i = 0; i < n_inputs; i++)
        if (inputs[i].path && same_file(path, inputs[i].path))
            return err_set(err, "%s '%s' is %s '%s', which this run reads: writing it would destroy it; "
                                "give another path", what, path, inputs[i].what, inputs[i].path);
    return 0;
}

/* ---- the lock beside an output -------------------------------------------- */

/* A lock file holds our pid and a newline: anything larger is not one. */
#define LOCK_MAX_BYTES 32

int output_lock(const char *path, OutputLock *lock, Error *err) {
    lock->fd = -1;
    if (path_format(lock->path, sizeof lock->path, err, "%s.lock", path)) return -1;
    const char *name = lock->path;
    /* A holder unlinks the lock as it lets go: the file we opened may be
     * gone from the folder by the time our flock succeeds, and a third run
     * would create a new one. Locking, then checking that the name still
     * leads to the file locked, closes that race; a few tries suffice. */
    for (int tries = 0; tries < 16; tries++) {
        int fd = open(name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
        if (fd < 0)
            return err_set(err, "cannot create the lock file '%s': %s", name,
                           errno == ELOOP ? "it is a symbolic link (remove it)" : strerror(errno));
        struct stat st, now;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_size > LOCK_MAX_BYTES) {
            int reg = S_ISREG(st.st_mode);
            close(fd);
            if (!reg) return err_set(err, "the lock file '%s' is %s: remove it", name, file_kind(st.st_mode));
            if (st.st_nlink != 1)
                return err_set(err, "the lock file '%s' is another file's link too (%ld names): remove it; it is "
                                    "never written through", name, (long)st.st_nlink);
            return err_set(err, "'%s' is not a lock file (%lld bytes): remove it or choose another output", name,
                           (long long)st.st_size);
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int busy = errno == EWOULDBLOCK;
            char pid[LOCK_MAX_BYTES + 1] = "";
            ssize_t n = busy ? pread(fd, pid, LOCK_MAX_BYTES, 0) : 0;
            pid[n > 0 ? n : 0] = '\0';
            pid[strspn(pid, "0123456789")] = '\0';
            close(fd);
            if (!busy) return err_set(err, "cannot lock '%s': %s", name, strerror(errno));
            return err_set(err, "'%s' is being written by another run (pid %s): wait for it or choose another output",
                           path, *pid ? pid : "unknown");
        }
        if (lstat(name, &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
            close(fd); /* the holder we waited on removed it: lock the new one */
            continue;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
            err_set(err, "cannot write the lock file '%s': %s", name, strerror(errno));
            close(fd);
            unlink(name);
            return -1;
        }
        lock->fd = fd;
        cleanup_add(name, 0);
        return 0;
    }
    return err_set(err, "cannot lock '%s': its lock file keeps changing", path);
}

void output_unlock(OutputLock *lock) {
    if (lock->fd < 0) return;
    /* Unlinked while still held, so no other run can lock this file
     * between the two steps; a run that opened it meanwhile sees it gone
     * after its flock, and retries. */
    unlink(lock->path);
    cleanup_drop(lock->path);
    close(lock->fd);
    lock->fd = -1;
}
