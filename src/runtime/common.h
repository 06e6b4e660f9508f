/* Error reporting shared by the whole library.
 *
 * The library never exits or asserts on user input: a function that can fail
 * takes an Error* and returns -1 (or NULL) with a one-line message in it; the
 * program that called it prints the message and chooses the exit status. */
#ifndef LM_COMMON_H
#define LM_COMMON_H

#include <stddef.h>
#include <stdint.h>

typedef struct Error {
    char msg[512];
} Error;

/* printf-style; always returns -1 so callers can write `return err_set(...)`. */
int err_set(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* calloc that reports failure through err instead of aborting. */
void *lm_calloc(size_t count, size_t size, Error *err);

/* 64-bit FNV-1a; `h` is the running hash (start with FNV_OFFSET). */
#define FNV_OFFSET 0xcbf29ce484222325ULL
uint64_t fnv1a(uint64_t h, const void *data, size_t len);

/* Monotonic wall-clock seconds (for rates and profiles, never for results). */
double wall_seconds(void);

/* Reads a whole file into a malloc'd buffer (NUL-terminated for text use). */
char *read_file(const char *path, size_t *len, Error *err);
/* The first min(max, size) bytes of a file (NUL-terminated); *file_size
 * gets its whole size (if not NULL). */
char *read_file_head(const char *path, size_t max, size_t *len, size_t *file_size, Error *err);

/* Writes `len` bytes to path via path.tmp + fsync + rename + fsync of the
 * directory, so a failure, a kill or a power cut never leaves a half-written
 * file where a good one was. */
int write_file_atomic(const char *path, const void *data, size_t len, Error *err);
/* fsync of the directory holding path, so that a rename in it survives a
 * power cut; -1 with errno on failure. */
int fsync_parent_dir(const char *path);

/* Memory this process could still allocate and touch without swapping or
 * being killed: MemAvailable, or a cgroup's limit if lower; 0 if unknown. */
size_t memory_available_bytes(void);
/* Says, before allocating, that `need` bytes (for `what`) will not fit:
 * "<who> needs X GiB (<what>) but Y GiB are available[: <advice>]", -1;
 * 0 when they fit or the available memory is unknown. */
int memory_check(size_t need, const char *who, const char *what, const char *advice, Error *err);

#endif
