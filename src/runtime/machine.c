#include "lm/machine.h"

#include <stdio.h>
#include <time.h>

double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int memory_check(size_t need, const char *who, const char *what, const char *advice, Error *err) {
    size_t avail = memory_available_bytes();
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (avail && need > avail)
        return err_set(err, "%s needs %.2f GiB (%s) but %.2f GiB are available%s%s", who, (double)need / gib, what,
                       (double)avail / gib, advice ? ": " : "", advice ? advice : "");
    return 0;
}

/* The smaller of MemAvailable and the cgroup's limit less its usage. */
size_t memory_available_bytes(void) {
    size_t avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = (size_t)kb * 1024;
        fclose(f);
    }
    unsigned long long max = 0, cur = 0;
    f = fopen("/sys/fs/cgroup/memory.max", "r");
    int limited = f && fscanf(f, "%llu", &max) == 1; /* "max" (no limit) does not scan */
    if (f) fclose(f);
    f = limited ? fopen("/sys/fs/cgroup/memory.current", "r") : NULL;
    if (f && fscanf(f, "%llu", &cur) == 1 && cur < max && (avail == 0 || max - cur < avail)) avail = (size_t)(max - cur);
    if (f) fclose(f);
    return avail;
}
