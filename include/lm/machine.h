/* What the machine gives this process: wall-clock time and memory. */
#ifndef LM_MACHINE_H
#define LM_MACHINE_H

#include <stddef.h>

#include "lm/error.h"

/* Monotonic wall-clock seconds (for rates and profiles, never for results). */
double wall_seconds(void);

/* Memory this process could still allocate and touch without swapping or
 * being killed: MemAvailable, or a cgroup's limit if lower; 0 if unknown. */
size_t memory_available_bytes(void);
/* Says, before allocating, that `need` bytes (for `what`) will not fit:
 * "<who> needs X GiB (<what>) but Y GiB are available[: <advice>]", -1;
 * 0 when they fit or the available memory is unknown. */
int memory_check(size_t need, const char *who, const char *what, const char *advice, Error *err);

#endif
