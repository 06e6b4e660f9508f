#include "lm/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *read_file_head(const char *path, size_t max, size_t *len, size_t *file_size, Error *err) {
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
    size_t n = (size_t)st.st_size < max ? (size_t)st.st_size : max;
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
    if (file_size) *file_size = (size_t)st.st_size;
    return buf;
}

char *read_file(const char *path, size_t *len, Error *err) { return read_file_head(path, SIZE_MAX, len, NULL, err); }

int fsync_parent_dir(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int write_file_atomic(const char *path, const void *data, size_t len, Error *err) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (!tmp) return err_set(err, "out of memory");
    snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
    /* The data reaches the disk (fsync) before the rename makes it the file,
     * and the rename reaches it (fsync of the directory) before we return:
     * a crash, a kill or a power cut at any moment leaves the old file or
     * the new one, whole. */
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        err_set(err, "cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    int saved = 0;
    if (fwrite(data, 1, len, f) != len || fflush(f) != 0 || fsync(fileno(f)) != 0) saved = errno ? errno : EIO;
    if (fclose(f) != 0 && !saved) saved = errno ? errno : EIO;
    if (!saved && rename(tmp, path) != 0) {
        err_set(err, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        remove(tmp);
        free(tmp);
        return -1;
    }
    if (saved) {
        err_set(err, "cannot write '%s': %s (the previous file, if any, is unchanged)", path, strerror(saved));
        remove(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    if (fsync_parent_dir(path) != 0) return err_set(err, "cannot sync the directory of '%s': %s", path, strerror(errno));
    return 0;
}


int dir_create(const char *path, unsigned mode, Error *err) {
    struct stat st;
    if (mkdir(path, (mode_t)mode) == 0 || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
    return err_set(err, "cannot create directory '%s'", path);
}

int dirs_create(const char *path, Error *err) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return err_set(err, "output path too long");
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
    char path[4200];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return err_set(err, "output path too long: '%s/%s'", dir, name);
    return write_file_atomic(path, text, strlen(text), err);
}
