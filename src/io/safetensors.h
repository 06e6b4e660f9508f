/* safetensors files, as this project writes and checks them.
 *
 * Layout: u64 little-endian header length, JSON header (padded with spaces
 * to 8 bytes), raw little-endian tensor data. The header's __metadata__
 * holds a "checksum" ("fnv1a64:" + 16 hex digits) over the whole file with
 * those 16 digits read as '0', so one flipped byte anywhere is detected.
 * What the tensors and the other metadata mean is the caller's business
 * (model/checkpoint.h). */
#ifndef LM_SAFETENSORS_H
#define LM_SAFETENSORS_H

#include <stddef.h>

#include "io/json.h"
#include "runtime/error.h"

typedef enum { ST_F32, ST_I32 } StDtype;

typedef struct StTensor {
    const char *name;
    StDtype dtype;
    size_t ndim, shape[2];
    const void *data;
} StTensor;

typedef struct StMeta {
    const char *key, *value;
} StMeta;

int st_write(const char *path, const StTensor *tensors, size_t n, const StMeta *meta, size_t n_meta, Error *err);

typedef struct StFile {
    char *buf;
    size_t len, data_start;
    json_t *header;
} StFile;

/* The largest header st_open parses (the limit of the safetensors format's
 * own reader): ours are a few hundred bytes per tensor plus the tokenizer. */
#define ST_HEADER_MAX 100000000

/* Reads and verifies the whole file (structure, offsets, checksum). */
int st_open(StFile *f, const char *path, Error *err);
/* Reads only the header (no data, no checksum: that needs the whole file),
 * for a look before loading; *file_len gets the file's size. */
int st_open_header(StFile *f, const char *path, size_t *file_len, Error *err);
const char *st_meta(const StFile *f, const char *key);
/* Copies tensor `name` into dst after checking dtype and shape. */
int st_read(const StFile *f, const char *name, StDtype dtype, size_t ndim, const size_t *shape, void *dst, Error *err);
int st_has(const StFile *f, const char *name);
void st_close(StFile *f);

#endif
