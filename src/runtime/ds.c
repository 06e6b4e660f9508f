/* The one translation unit that instantiates Debian's stb_ds. Its own code is
 * not held to our warning flags. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_DS_IMPLEMENTATION
#include "lm/ds.h"
#pragma GCC diagnostic pop
