#include "lm/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

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

/* Transparent huge pages' size on x86-64 and ARM64 (4 KB base pages). */
#define HUGE_PAGE ((size_t)2 << 20)

void *lm_calloc_large(size_t count, size_t size, Error *err) {
    void *p = lm_calloc(count, size, err);
#if defined(MADV_HUGEPAGE)
    size_t bytes = count * size;
    if (p && bytes >= 2 * HUGE_PAGE) {
        uintptr_t from = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        uintptr_t to = ((uintptr_t)p + bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
        if (to > from) (void)madvise((void *)from, to - from, MADV_HUGEPAGE); /* advice: nothing to do if refused */
    }
#endif
    return p;
}

