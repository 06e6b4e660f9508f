/* Data-parallel training over processes (Open MPI): one job of N ranks, or
 * one process that never touches MPI.
 *
 * A program started by mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE) joins the
 * job; started alone it runs as a single rank with no MPI call at all, so
 * every program works without mpirun exactly as before.
 *
 * How a step is shared: the job draws its micro-batches from one data
 * stream; micro-batch i of a step goes to rank i mod N, so N ranks with
 * --grad-accum A draw exactly the micro-batches of one process with
 * --grad-accum N*A. Each rank sums its gradients (scaled by 1/(N*A)); while
 * backward goes on, each part of the model whose gradients are final is
 * summed over the ranks with a non-blocking all-reduce (MPI_Iallreduce on
 * that contiguous part of the gradient buffer: the layout keeps a layer's
 * tensors together), and the step waits for them all before clipping, so
 * every rank clips and steps identically. */
#ifndef LM_DIST_H
#define LM_DIST_H

#include <stddef.h>

#include "lm/error.h"

#define DIST_MAX_BUCKETS 64

typedef struct Dist {
    int rank, size;  /* 0 and 1 without MPI */
    int mpi;         /* MPI_Init was called */
    int local_size;  /* ranks on this machine */
    /* The all-reduces under way (dist_bucket_start .. dist_buckets_wait). */
    void *requests;  /* MPI_Request[DIST_MAX_BUCKETS] */
    size_t n_pending;
    double wait_seconds; /* spent waiting for them in the last step */
} Dist;

/* Joins the job if started by mpirun, else a single rank. */
int dist_init(Dist *d, int *argc, char ***argv, Error *err);
/* Leaves it (MPI_Finalize). */
void dist_finalize(Dist *d);

/* In-place sums over the ranks (no-ops for a single rank). */
int dist_sum_floats(Dist *d, float *buf, size_t n, Error *err);
int dist_sum_doubles(Dist *d, double *buf, size_t n, Error *err);
/* Whether any rank says yes. */
int dist_any(Dist *d, int yes);

/* Every rank calls this at the same point with its own outcome; returns -1 on
 * every rank if any rank failed, with the lowest failing rank's message in
 * err (prefixed by its rank when there are several), else 0. */
int dist_agree(Dist *d, int failed, Error *err);

/* Starts the sum over the ranks of grads[offset .. offset + count), in
 * place, without waiting (and lets those already started progress). */
void dist_bucket_start(Dist *d, float *grads, size_t offset, size_t count);
/* Waits for every started sum; the time spent and bytes go to d. */
int dist_buckets_wait(Dist *d, Error *err);

/* Start-up checks that every rank runs the same job: rank r's argv against
 * rank 0's, naming the first argument that differs (before the options are
 * parsed, so every rank parses the same), and a hash of each file in `paths`
 * (NULL-terminated) against rank 0's. Failures as dist_agree. */
int dist_check_args(Dist *d, int argc, char **argv, Error *err);
int dist_check_files(Dist *d, const char *const *paths, Error *err);

#endif
