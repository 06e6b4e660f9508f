/* Debian's stb_ds, usable under -std=c11: the header spells GNU `typeof`,
 * which strict C11 only knows as `__typeof__`; and its macros leave unused
 * comma operands that -Wall reports in every caller. */
#ifndef LM_DS_H
#define LM_DS_H
#ifndef typeof
#define typeof __typeof__
#endif
#pragma GCC diagnostic ignored "-Wunused-value"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "stb_ds.h"
/* Empties an array, keeping its memory (arrsetlen(a, 0) warns under -Wextra). */
#define arrclear(a) ((a) ? (void)(stbds_header(a)->length = 0) : (void)0)
#endif
