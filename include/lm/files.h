/* Files: read whole or by their head, and written atomically. */
#ifndef LM_FILES_H
#define LM_FILES_H

#include <stddef.h>

#include "lm/error.h"

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

/* mkdir that is content with a directory already there: "cannot create
 * directory" when path is something else or cannot be made. */
int dir_create(const char *path, unsigned mode, Error *err);
/* mkdir -p: creates every missing directory of path (mode 0777 less the
 * umask); "'X' is not a directory" when a part of it is something else. */
int dirs_create(const char *path, Error *err);

/* Writes dir/name holding text (NUL-terminated) atomically, as
 * write_file_atomic; text NULL (a failed allocation) is "out of memory". */
int write_text_in(const char *dir, const char *name, const char *text, Error *err);

#endif
