/* Files: read whole or by their head, and written atomically. */
#ifndef LM_FILES_H
#define LM_FILES_H

#include <stddef.h>
#include <stdio.h>

#include "lm/error.h"

/* The size of the buffers paths are built in; a longer path is refused
 * ("path too long"), never cut. */
#define PATH_BUF 4096

/* snprintf into a path buffer: -1 with "path too long" when the result does
 * not fit, instead of a silently shortened path. */
int path_format(char *buf, size_t size, Error *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* An input file opened for reading, which must be a regular file: a
 * directory, a FIFO or pipe, a device or a socket is refused in one line
 * ("not a regular file"), without waiting for a FIFO's writer. Returns the
 * descriptor (or the FILE) with *size (if not NULL) its size; -1 (NULL) with
 * err set. Every program's inputs are opened through these. */
int open_input(const char *path, size_t *size, Error *err);
FILE *fopen_input(const char *path, size_t *size, Error *err);
/* What a path that is not a regular file is ("a directory", "a FIFO or
 * pipe", "a socket", ...), from its st_mode, for the message refusing it. */
const char *file_kind(unsigned mode);
/* 0 for a regular file's st_mode; -1 with the refusal open_input gives. */
int input_refusal(const char *path, unsigned mode, Error *err);

/* Reads a whole file into a malloc'd buffer (NUL-terminated for text use). */
char *read_file(const char *path, size_t *len, Error *err);
/* A text file whole (a prompt from a file: raw text as a tokenizer takes it,
 * newlines and all); NULL with one line in err if it cannot be read or
 * holds a NUL byte, which no text does. what: the option that named it. */
char *read_text_file(const char *path, const char *what, Error *err);
/* The first min(max, size) bytes of a file (NUL-terminated); *file_size
 * gets its whole size (if not NULL). */
char *read_file_head(const char *path, size_t max, size_t *len, size_t *file_size, Error *err);

/* The temporaries written beside a file: path + TEMP_INFIX + the writer's pid. */
#define TEMP_INFIX ".tmp."
/* This process's temporary for path, into buf. */
int temp_path(char *buf, size_t size, const char *path, Error *err);
/* Removes the temporaries of path (regular files named as temp_path names
 * them) whose process is gone: what a killed run left. Returns how many. */
int remove_dead_temporaries(const char *path, Error *err);
/* The same for every file in dir whose name starts with prefix ("": every
 * file in it): the temporaries of a run folder's files, or of CKPT.step-N. */
int remove_dead_temporaries_like(const char *dir, const char *prefix, Error *err);

/* The two halves of an atomic write, for a writer that streams: temp_create
 * creates path's temporary (its name into tmp) new, never through a link
 * (O_EXCL | O_NOFOLLOW), with the mode the umask gives; temp_commit flushes
 * and syncs it, renames it over path and syncs the directory, or (failed
 * non-zero: the caller's writes failed, errno saying why) removes it,
 * closing f either way. */
FILE *temp_create(const char *path, char *tmp, size_t size, Error *err);
int temp_commit(FILE *f, const char *tmp, const char *path, int failed, Error *err);
/* temp_commit's rename for a writer that goes on writing: f (flushed and
 * synced) becomes path, and stays open, now writing path's file; on failure
 * the temporary is removed and f left for the caller to close. */
int temp_publish(FILE *f, const char *tmp, const char *path, Error *err);
/* path's temporary as a new directory (mkdir: never through a link), for a
 * directory written whole and then renamed into place. */
int temp_dir_create(const char *path, char *tmp, size_t size, Error *err);

/* Writes `len` bytes to path via its temporary (created new, never through a
 * link: O_EXCL | O_NOFOLLOW) + fsync + rename + fsync of the
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

/* ---- what a program writes (src/runtime/outputs.c) ---------------------------
 * The one rule for every path a program writes, checked before any work: a
 * regular file or a path that does not exist yet, in a folder that exists;
 * never a device, FIFO, socket or folder (renaming a new file over /dev/null
 * would replace the device), and never one of the run's own inputs. Written
 * through a temporary beside it (created O_EXCL | O_NOFOLLOW) and renamed;
 * the temporaries and the lock are removed on every way out, signals
 * included (cleanup_on_signals). */
typedef enum { OUTPUT_FILE, OUTPUT_DIR } OutputKind;
/* An input of the run, for the check that no output is one of them. */
typedef struct NamedPath {
    const char *what; /* "--resume", "the training data" */
    const char *path;
} NamedPath;
/* 0 when path may be written as `kind` (OUTPUT_DIR: a folder that is
 * absent or there; its files are checked as they are written); else -1
 * with one line naming `what` (the option: "--out") and why. */
int output_check(const char *path, const char *what, OutputKind kind, const NamedPath *inputs, size_t n_inputs,
                 Error *err);
/* Whether a and b name one file, there or not yet: the same file, or the
 * same name in the same folder (--log X --out X, both new). */
int output_same_path(const char *a, const char *b);
/* 0 when nothing is at path, or a regular file (or a link to one): what a
 * rename may replace; -1 with the refusal for anything else. temp_create
 * and temp_commit ask it, so no writer replaces a device or a folder. */
int output_replaceable(const char *path, const char *what, Error *err);

/* An advisory lock (flock) on path.lock, so that two runs writing the same
 * output refuse instead of overwriting each other: the second gets "being
 * written by another run (pid N)". The lock file is created new or reused
 * only when it is a small regular file of one name (never a link to
 * another file, which would be truncated), holds this process's pid, and
 * is removed by output_unlock (and by a signal's cleanup). */
typedef struct OutputLock {
    int fd; /* -1: none held */
    char path[PATH_BUF];
} OutputLock;
int output_lock(const char *path, OutputLock *lock, Error *err);
void output_unlock(OutputLock *lock);

/* The paths removed if SIGINT, SIGTERM, SIGHUP, SIGQUIT or SIGPIPE ends the process (a
 * fixed table of 16: temporaries and locks; is_dir: a flat folder, removed
 * with its files). temp_create, temp_dir_create and output_lock add theirs,
 * commits and unlocks drop them. */
void cleanup_add(const char *path, int is_dir);
void cleanup_drop(const char *path);
/* Every program's first call: the handlers that remove those paths and say
 * so in one line (SIGPIPE silently), then end the process by the signal;
 * SIGXFSZ ignored, so a write past a file-size limit fails (EFBIG) and is
 * reported, not a silent death. */
void cleanup_on_signals(const char *prog);
/* sigaction(sig, sa) as every handler of ours installs it: a SIGHUP that
 * nohup ignores stays ignored. */
struct sigaction;
void cleanup_catch(int sig, const struct sigaction *sa);

#endif
