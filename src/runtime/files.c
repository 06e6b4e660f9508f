#include "lm/files.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

const char *file_kind(unsigned mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO or pipe";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int input_refusal(const char *path, unsigned mode, Error *err) {
    if (S_ISREG((mode_t)mode)) return 0;
    if (S_ISDIR((mode_t)mode)) return err_set(err, "'%s' is a directory, expected a file", path);
    return err_set(err, "'%s' is not a regular file (it is %s): give a file", path, file_kind((mode_t)mode));
}

int open_input(const char *path, size_t *size, Error *err) {
    /* O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one
     * for ever; a regular file ignores it, and it is cleared below. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENXIO) /* a FIFO or socket nothing is at the other end of */
            return err_set(err, "'%s' is not a regular file: give a file", path);
        return err_set(err, "cannot open '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        err_set(err, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (input_refusal(path, st.st_mode, err) || fcntl(fd, F_SETFL, 0) != 0) {
        if (S_ISREG(st.st_mode)) err_set(err, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (size) *size = (size_t)st.st_size;
    return fd;
}

FILE *fopen_input(const char *path, size_t *size, Error *err) {
    int fd = open_input(path, size, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        err_set(err, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

char *read_file_head(const char *path, size_t max, size_t *len, size_t *file_size, Error *err) {
    size_t size;
    FILE *f = fopen_input(path, &size, err);
    if (!f) return NULL;
    size_t n = size < max ? size : max;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        err_set(err, "out of memory reading '%s' (%zu bytes)", path, n);
        return NULL;
    }
    size_t got = fread(buf, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != n) {
        free(buf);
        err_set(err, "cannot read '%s': %s", path, bad ? strerror(errno) : "short read");
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    if (file_size) *file_size = size;
    return buf;
}

char *read_file(const char *path, size_t *len, Error *err) { return read_file_head(path, SIZE_MAX, len, NULL, err); }

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

int write_file_atomic(const char *path, const void *data, size_t len, Error *err) {
    char tmp[PATH_BUF];
    FILE *f = temp_create(path, tmp, sizeof tmp, err);
    if (!f) return -1;
    errno = 0;
    return temp_commit(f, tmp, path, fwrite(data, 1, len, f) != len, err);
}

int remove_dead_temporaries(const char *path, Error *err) {
    char dir[PATH_BUF];
    const char *base;
    if (split_path(path, dir, sizeof dir, &base, err)) return -1;
    DIR *d = opendir(dir);
    if (!d) return 0; /* no directory yet: nothing left in it */
    size_t blen = strlen(base), infix = strlen(TEMP_INFIX);
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *name = e->d_name;
        if (strncmp(name, base, blen) != 0 || strncmp(name + blen, TEMP_INFIX, infix) != 0) continue;
        const char *digits = name + blen + infix;
        char *end;
        errno = 0;
        long pid = strtol(digits, &end, 10);
        if (!isdigit((unsigned char)*digits) || *end || errno || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
        char full[PATH_BUF];
        if (path_format(full, sizeof full, err, "%s/%s", dir, name)) continue;
        struct stat st;
        if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && unlink(full) == 0) removed++;
    }
    closedir(d);
    return removed;
}

int path_format(char *buf, size_t size, Error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size)
        return err_set(err, "path too long (%d bytes, the limit is %zu): '%.60s...'", n, size - 1, buf);
    return 0;
}

int dir_create(const char *path, unsigned mode, Error *err) {
    struct stat st;
    if (mkdir(path, (mode_t)mode) == 0 || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
    return err_set(err, "cannot create directory '%s'", path);
}

int dirs_create(const char *path, Error *err) {
    char buf[PATH_BUF];
    if (path_format(buf, sizeof buf, err, "%s", path)) return -1;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        struct stat st;
        if (stat(buf, &st) != 0) {
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return err_set(err, "cannot create output directory '%s': %s", buf, strerror(errno));
        } else if (!S_ISDIR(st.st_mode)) {
            return err_set(err, "'%s' is not a directory", buf);
        }
        *p = saved;
        if (!saved) break;
    }
    return 0;
}

int write_text_in(const char *dir, const char *name, const char *text, Error *err) {
    if (!text) return err_set(err, "out of memory");
    char path[PATH_BUF];
    if (path_format(path, sizeof path, err, "%s/%s", dir, name)) return -1;
    return write_file_atomic(path, text, strlen(text), err);
}
