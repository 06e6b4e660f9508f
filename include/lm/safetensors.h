/* safetensors files: this project's own, and those other programs write.
 *
 * Layout: u64 little-endian header length, JSON header (padded with spaces
 * to 8 bytes), raw little-endian tensor data. Ours (st_write, st_open) hold
 * a "checksum" in the header's __metadata__: its kind, "xxh3-64:" (XXH3's
 * 64-bit hash, what st_write writes) or "fnv1a64:" (64-bit FNV-1a, what
 * files written before XXH3 hold, still read), then 16 hex digits of that
 * hash of the whole file with those 16 digits read as '0', so one flipped
 * byte anywhere is detected. Files written by other programs (Hugging Face's
 * save_pretrained) have none: st_open_foreign reads them, checking every
 * tensor entry instead, and st_to_f32 turns their F32, F16 and BF16 tensors
 * into floats. What the tensors and the other metadata mean is the caller's
 * business (lm/checkpoint.h, lm/hf.h). */
#ifndef LM_SAFETENSORS_H
#define LM_SAFETENSORS_H

#include <stddef.h>

#include "lm/json.h"
#include "lm/error.h"

typedef enum { ST_F32, ST_I32, ST_F16, ST_BF16 } StDtype;

/* A tensor to write: F32 or I32, 1-D or 2-D. */
typedef struct StTensor {
    const char *name;
    StDtype dtype;
    size_t ndim, shape[2];
    const void *data;
    /* Written transposed: data holds the [shape[1], shape[0]] matrix, and the
     * file gets its transpose, of the shape above (2-D only): for a format
     * that stores matrices the other way round (Hugging Face's Conv1D). */
    int transpose;
} StTensor;

typedef struct StMeta {
    const char *key, *value;
} StMeta;

/* Our file: the checksum first in the metadata, then meta. Atomic (lm/files.h). */
int st_write(const char *path, const StTensor *tensors, size_t n, const StMeta *meta, size_t n_meta, Error *err);
/* A file for other programs: no checksum, the metadata exactly meta (none
 * when n_meta is 0). Atomic too. */
int st_write_foreign(const char *path, const StTensor *tensors, size_t n, const StMeta *meta, size_t n_meta,
                     Error *err);

typedef struct StFile {
    const char *buf; /* the file (st_open, st_open_foreign: mapped) or its head */
    size_t len, data_start;
    int mapped;
    json_t *header;
} StFile;

/* The largest header st_open parses (the limit of the safetensors format's
 * own reader): ours are a few hundred bytes per tensor plus the tokenizer. */
#define ST_HEADER_MAX 100000000

/* Every whole file read, ours or another program's, is held to the format's
 * own rules (those of its reference reader): __metadata__, if there, maps
 * strings to strings, and the tensors tile the data exactly, each beginning
 * where the one before it in the file ends, the first at the data's start and
 * the last at the file's end: no two share bytes, no byte belongs to none. */

/* Reads and verifies the whole file (structure, offsets, layout, checksum). */
int st_open(StFile *f, const char *path, Error *err);
/* Reads only the header (no data, no checksum, no layout: those need the whole file),
 * for a look before loading; *file_len gets the file's size. */
int st_open_header(StFile *f, const char *path, size_t *file_len, Error *err);
/* Reads a whole file another program wrote: no checksum is looked for, but
 * every tensor entry must be well formed (a dtype, a shape of sizes, data
 * offsets inside the file that fit the shape for the dtypes whose size is
 * known), whatever its dtype or rank: a caller skips what it does not want. */
int st_open_foreign(StFile *f, const char *path, Error *err);
const char *st_meta(const StFile *f, const char *key);
/* Copies tensor `name` into dst after checking dtype and shape. */
int st_read(const StFile *f, const char *name, StDtype dtype, size_t ndim, const size_t *shape, void *dst, Error *err);
int st_has(const StFile *f, const char *name);
void st_close(StFile *f);

/* ---- any tensor, as the header describes it ---------------------------------- */

#define ST_MAX_RANK 8

typedef struct StInfo {
    const char *dtype;         /* as the header spells it: "F32", "BF16", "BOOL", ... */
    size_t ndim;
    size_t shape[ST_MAX_RANK]; /* the first ST_MAX_RANK dimensions */
    size_t count;              /* elements */
    const void *data;          /* in the file's buffer: not aligned */
    size_t bytes;
} StInfo;

/* The names of the file's tensors (the metadata left out), in the header's
 * order: a malloc'd array of *n pointers into the header; NULL with err set
 * when memory runs out. */
const char **st_names(const StFile *f, size_t *n, Error *err);
/* Tensor `name` as the header describes it, its entry checked (the checks
 * of st_open_foreign). */
int st_info(const StFile *f, const char *name, StInfo *info, Error *err);
/* Values first .. first + count - 1 (row-major; first + count <= t->count)
 * of a F32, F16 or BF16 tensor as floats, exactly (every F16 and BF16 value
 * is a float: infinities and NaN payloads kept); -1 with err naming the
 * tensor for any other dtype. */
int st_to_f32(const StInfo *t, const char *name, size_t first, size_t count, float *dst, Error *err);
/* The float of one IEEE half (F16) and of one bfloat16 (BF16), given as their bits. */
float st_f16_value(unsigned short bits);
float st_bf16_value(unsigned short bits);

#endif
