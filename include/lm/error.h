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
/* lm_calloc for a large buffer that will be touched all over (the
 * activations): the kernel is asked to back it with transparent huge pages
 * (madvise; THP's "madvise" mode is the usual default), so that its first
 * touch takes one fault per 2 MB instead of one per 4 KB. Not for a buffer
 * touched sparsely (the sampling caches): each touch would zero 2 MB.
 * Freed with free(). */
void *lm_calloc_large(size_t count, size_t size, Error *err);

#endif
