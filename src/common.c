#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int err_set(Error *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void *lm_calloc(size_t count, size_t size, Error *err) {
    void *p = (count && size) ? calloc(count, size) : calloc(1, 1);
    if (!p) err_set(err, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *read_file(const char *path, size_t *len, Error *err) {
    struct stat st;
    if (stat(path, &st) != 0) {
        err_set(err, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        err_set(err, "'%s' is a directory, expected a file", path);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t n = (size_t)st.st_size;
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
    return buf;
}

int write_file_atomic(const char *path, const void *data, size_t len, Error *err) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) return err_set(err, "out of memory");
    snprintf(tmp, plen + 16, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        err_set(err, "cannot write '%s': %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    size_t put = fwrite(data, 1, len, f);
    int bad = (put != len) || fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad) {
        err_set(err, "cannot write '%s': %s", tmp, strerror(errno));
        remove(tmp);
        free(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        err_set(err, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        remove(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
