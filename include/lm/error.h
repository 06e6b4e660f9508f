/* Error reporting shared by the whole library.
 *
 * The library never exits or asserts on user input: a function that can fail
 * takes an Error* and returns -1 (or NULL) with a one-line message in it; the
 * program that called it prints the message and chooses the exit status. */
#ifndef LM_ERROR_H
#define LM_ERROR_H

#include <stddef.h>

typedef struct Error {
    char msg[512];
} Error;

/* printf-style; always returns -1 so callers can write `return err_set(...)`. */
int err_set(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* calloc that reports failure through err instead of aborting. */
void *lm_calloc(size_t count, size_t size, Error *err);

#endif
