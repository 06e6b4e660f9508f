/* The fuzzers' input as a file: the loaders take paths, so each input is
 * put in an anonymous in-memory file (memfd) and opened through
 * /proc/self/fd. */
#ifndef LM_FUZZ_INPUT_H
#define LM_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Huge allocations a hostile header asks for fail (NULL) instead of
 * aborting, so the loader's own handling is what is tested. */
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

/* Writes data to a fresh memfd and its path to path; returns the fd or -1. */
static int fuzz_input_file(const uint8_t *data, size_t size, char *path, size_t len) {
    int fd = memfd_create("fuzz-input", 0);
    if (fd < 0) return -1;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return -1;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
