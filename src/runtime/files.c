/* Files read whole or by their head, inputs refused unless regular, and
 * path building (see lm/files.h); what a program writes is outputs.c's. */
#include "lm/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
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

char *read_text_file(const char *path, const char *what, Error *err) {
    size_t len;
    char *text = read_file(path, &len, err);
    if (text && memchr(text, 0, len)) {
        free(text);
        err_set(err, "%s '%s' holds a NUL byte: not a text", what, path);
        return NULL;
    }
    return text;
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
