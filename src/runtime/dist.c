/* Data-parallel communication over Open MPI (see lm/dist.h). MPI is
 * optional: the Makefile sets LM_HAVE_MPI to 1 where mpicc builds for its
 * compiler; without it (the end of this file) every program runs as one
 * process and refuses an mpirun job of more ranks. */
#include "lm/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if LM_HAVE_MPI
#include <mpi.h>

#include "lm/files.h"
#include "runtime/hash.h"

#define MESSAGE_BYTES 480 /* one rank's error message in dist_agree */

static int started_by_mpirun(void) {
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    return size && *size;
}

int dist_init(Dist *d, int *argc, char ***argv, Error *err) {
    memset(d, 0, sizeof *d);
    d->size = d->local_size = 1;
    if (!started_by_mpirun()) return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return err_set(err, "MPI_Init failed");
    d->mpi = 1;
    /* Errors come back as return codes, so a failure is reported, not fatal
     * in the middle of a message. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    d->local_size = local && atoi(local) > 0 ? atoi(local) : 1;
    d->requests = calloc(DIST_MAX_BUCKETS, sizeof(MPI_Request));
    if (!d->requests) return err_set(err, "out of memory");
    return 0;
}

void dist_finalize(Dist *d) {
    if (d->mpi) MPI_Finalize();
    free(d->requests);
    d->requests = NULL;
    d->mpi = 0;
}

static int mpi_failed(int rc, const char *what, Error *err) {
    if (rc == MPI_SUCCESS) return 0;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return err_set(err, "%s failed: %.*s", what, len, text);
}

int dist_sum_floats(Dist *d, float *buf, size_t n, Error *err) {
    if (!d->mpi || d->size == 1) return 0;
    for (size_t done = 0; done < n;) { /* MPI counts are ints */
        int part = n - done > (size_t)1 << 30 ? 1 << 30 : (int)(n - done);
        if (mpi_failed(MPI_Allreduce(MPI_IN_PLACE, buf + done, part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                       "MPI_Allreduce", err))
            return -1;
        done += (size_t)part;
    }
    return 0;
}

int dist_sum_doubles(Dist *d, double *buf, size_t n, Error *err) {
    if (!d->mpi || d->size == 1) return 0;
    return mpi_failed(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
                      "MPI_Allreduce", err);
}

int dist_any(Dist *d, int yes) {
    if (!d->mpi || d->size == 1) return yes != 0;
    int v = yes != 0, any = v;
    if (MPI_Allreduce(&v, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
    return any;
}

int dist_agree(Dist *d, int failed, Error *err) {
    if (!d->mpi || d->size == 1) return failed ? -1 : 0;
    char mine[MESSAGE_BYTES] = {0}; /* empty: this rank did not fail */
    if (failed) snprintf(mine, sizeof mine, "%s", err->msg[0] ? err->msg : "failed");
    char *all = calloc((size_t)d->size, MESSAGE_BYTES);
    if (!all) return err_set(err, "out of memory");
    int rc = MPI_Allgather(mine, MESSAGE_BYTES, MPI_CHAR, all, MESSAGE_BYTES, MPI_CHAR, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_failed(rc, "MPI_Allgather", err);
    }
    int first = -1;
    for (int r = 0; r < d->size && first < 0; r++)
        if (all[(size_t)r * MESSAGE_BYTES]) first = r;
    if (first >= 0) {
        char msg[MESSAGE_BYTES];
        memcpy(msg, all + (size_t)first * MESSAGE_BYTES, MESSAGE_BYTES);
        msg[MESSAGE_BYTES - 1] = '\0';
        if (first == 0) err_set(err, "%s", msg);
        else err_set(err, "rank %d: %s", first, msg);
    }
    free(all);
    return first >= 0 ? -1 : 0;
}

/* Lets started all-reduces move on while we compute: Open MPI progresses a
 * non-blocking collective only inside MPI calls. */
static void progress(Dist *d) {
    if (d->n_pending == 0) return;
    int done = 0;
    MPI_Testall((int)d->n_pending, (MPI_Request *)d->requests, &done, MPI_STATUSES_IGNORE);
}

void dist_bucket_start(Dist *d, float *grads, size_t offset, size_t count) {
    if (!d->mpi || d->size == 1 || count == 0) return;
    MPI_Request *req = (MPI_Request *)d->requests;
    if (d->n_pending == DIST_MAX_BUCKETS || count > (size_t)1 << 30) {
        /* No room (or too large for one call): sum it now, in order. */
        Error ignored;
        dist_sum_floats(d, grads + offset, count, &ignored);
    } else {
        MPI_Iallreduce(MPI_IN_PLACE, grads + offset, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                       &req[d->n_pending++]);
    }
    progress(d);
}

int dist_buckets_wait(Dist *d, Error *err) {
    if (!d->mpi || d->size == 1) return 0;
    double t0 = MPI_Wtime();
    int rc = d->n_pending ? MPI_Waitall((int)d->n_pending, (MPI_Request *)d->requests, MPI_STATUSES_IGNORE)
                          : MPI_SUCCESS;
    d->wait_seconds = MPI_Wtime() - t0;
    d->n_pending = 0;
    return mpi_failed(rc, "MPI_Iallreduce", err);
}

/* ---- start-up consistency ------------------------------------------------------ */

static uint64_t file_hash(const char *path, int *ok) {
    Error ignored;
    FILE *f = fopen_input(path, NULL, &ignored);
    uint64_t h = FNV_OFFSET;
    *ok = f != NULL;
    if (!f) return 0;
    static char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) h = fnv1a(h, buf, n);
    *ok = !ferror(f);
    fclose(f);
    return h;
}

/* argv joined with NULs; its length in *len. */
static char *join_args(int argc, char **argv, int *len) {
    size_t total = 0;
    for (int i = 0; i < argc; i++) total += strlen(argv[i]) + 1;
    char *s = malloc(total ? total : 1), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]) + 1;
        memcpy(p, argv[i], n);
        p += n;
    }
    *len = (int)total;
    return s;
}

/* Rank 0: the first argument where `other` differs from `mine`, in err. */
static int compare_args(const char *mine, int mine_len, const char *other, int other_len, int rank, Error *err) {
    int i = 0, a = 0, b = 0;
    while (a < mine_len || b < other_len) {
        const char *x = a < mine_len ? mine + a : NULL, *y = b < other_len ? other + b : NULL;
        if (!x || !y || strcmp(x, y) != 0)
            return err_set(err, "rank %d was started with a different command line: argument %d is '%s' there, '%s' on rank 0",
                           rank, i, y ? y : "(none)", x ? x : "(none)");
        a += (int)strlen(x) + 1;
        b += (int)strlen(y) + 1;
        i++;
    }
    return 0;
}

int dist_check_args(Dist *d, int argc, char **argv, Error *err) {
    if (!d->mpi || d->size == 1) return 0;
    int failed = 0;
    /* The command line, gathered on rank 0. */
    int len = 0;
    char *mine = join_args(argc, argv, &len);
    int *lens = calloc((size_t)d->size, sizeof(int)), *offs = calloc((size_t)d->size, sizeof(int));
    if (!mine || !lens || !offs) failed = err_set(err, "out of memory"), len = 0;
    MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = NULL;
    if (d->rank == 0 && lens && offs) {
        size_t total = 0;
        for (int r = 0; r < d->size; r++) offs[r] = (int)total, total += (size_t)lens[r];
        all = malloc(total ? total : 1);
        if (!all) failed = err_set(err, "out of memory");
    }
    MPI_Gatherv(mine, len, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (d->rank == 0 && all && !failed)
        for (int r = 1; r < d->size && !failed; r++)
            failed = compare_args(mine, len, all + offs[r], lens[r], r, err) != 0;
    free(all);
    free(mine);
    free(lens);
    free(offs);
    return dist_agree(d, failed, err);
}

int dist_check_files(Dist *d, const char *const *paths, Error *err) {
    if (!d->mpi || d->size == 1) return 0;
    for (size_t i = 0; paths[i]; i++) {
        int ok, failed = 0;
        uint64_t h = file_hash(paths[i], &ok), h0 = h;
        MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        if (!ok) failed = err_set(err, "cannot read '%s'", paths[i]);
        else if (h != h0)
            failed = err_set(err, "'%s' differs from rank 0's (hash %016llx there, %016llx on rank 0)", paths[i],
                             (unsigned long long)h, (unsigned long long)h0);
        if (dist_agree(d, failed, err)) return -1;
    }
    return 0;
}
#else
int dist_init(Dist *d, int *argc, char ***argv, Error *err) {
    (void)argc, (void)argv;
    memset(d, 0, sizeof *d);
    d->size = d->local_size = 1;
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    if (size && atoi(size) > 1)
        return err_set(err, "started as one of %s ranks, but this build has no MPI (libopenmpi-dev): it runs one process",
                       size);
    return 0;
}

void dist_finalize(Dist *d) { d->mpi = 0; }

/* One rank: every sum is the rank's own, every check passes. */
int dist_sum_floats(Dist *d, float *buf, size_t n, Error *err) { return (void)d, (void)buf, (void)n, (void)err, 0; }
int dist_sum_doubles(Dist *d, double *buf, size_t n, Error *err) { return (void)d, (void)buf, (void)n, (void)err, 0; }
int dist_any(Dist *d, int yes) { return (void)d, yes != 0; }
int dist_agree(Dist *d, int failed, Error *err) { return (void)d, (void)err, failed ? -1 : 0; }
void dist_bucket_start(Dist *d, float *grads, size_t offset, size_t count) {
    (void)d, (void)grads, (void)offset, (void)count;
}
int dist_buckets_wait(Dist *d, Error *err) { return (void)err, d->wait_seconds = 0.0, 0; }
int dist_check_args(Dist *d, int argc, char **argv, Error *err) { return (void)d, (void)argc, (void)argv, (void)err, 0; }
int dist_check_files(Dist *d, const char *const *paths, Error *err) { return (void)d, (void)paths, (void)err, 0; }
#endif
