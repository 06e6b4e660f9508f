#include "lm/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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

