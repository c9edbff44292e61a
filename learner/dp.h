/* dp.h — data parallelism for the learner: N ranks (one process each, one GPU each on
 * CUDA), a rank-0 hub over the learner's own ZeroMQ endpoint, and behind one small
 * interface the collectives the ranks need (sum all-reduce, broadcast from rank 0):
 *  - "zmq": over the hub's sockets, on the host (CPU ranks; the stand-in that tests
 *    the multi-rank logic on machines without GPUs): rank 0 sums the ranks' buffers in
 *    rank order and sends the sum back, so every rank holds bit-identical results;
 *  - "nccl" (built when CUDA and nccl.h are): device buffers, the communicator
 *    bootstrapped through the hub (rank 0 makes the unique id and sends it in its
 *    welcome; no shared file system), NCCL's non-blocking mode polled against the
 *    timeout, ncclCommAbort on expiry.
 *
 * Contract:
 *  - Every wait is bounded by timeout_s: a rank that fails, exits or stalls makes the
 *    others' next collective return an error naming it (and the collective), never a
 *    hang. A rank that fails sends an abort to the others on the way out, so they stop
 *    at once instead of waiting for the timeout. After an error the learner_dp is
 *    unusable (learner_dp_close only): the caller stops the job with a checkpoint of its
 *    last completed step (the parameters before the failed step's update).
 *  - Collectives are matched by a sequence number every rank counts alike; a message of
 *    another sequence, size or kind is a protocol error, not silently mixed in.
 *  - Rank 0 deals: learner_dp_deal sends each rank its micro-batch bytes, the ranks
 *    receive them with learner_dp_take.
 *  - Gradient buckets (learner_dp_plan): contiguous runs of whole tensors in parameter
 *    layout order, each at least bucket_bytes unless it is the last; a bucket is
 *    reduced as soon as the backward has finished all of its tensors
 *    (learner_dp_plan_mark), in an order every rank computes alike.
 *  - ZeRO-1 (learner_dp_shard): the slice of the parameter layout whose AdamW state a
 *    rank owns: contiguous, balanced, aligned, together covering every parameter once.
 *
 * Wire: raw frames (a fixed little-endian header + payload) between ranks of one build,
 * not protobuf envelopes: they carry megabytes of floats and never leave the job. */
#ifndef SEED_LEARNER_DP_H
#define SEED_LEARNER_DP_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* ---- gradient buckets ---- */

typedef struct learner_dp_bucket {
    size_t offset, numel; /* floats, into the parameter layout */
    int first, end;       /* tensors [first, end) of model_tensor */
} learner_dp_bucket;

typedef struct learner_dp_plan {
    int n_buckets;
    learner_dp_bucket *b;
    int n_tensors;
    int *bucket_of; /* per tensor */
    int *pending;   /* per bucket: tensors not yet marked in this backward */
    unsigned char *done;
} learner_dp_plan;

/* Buckets of at least bucket_bytes (> 0) of fp32 gradients over m's tensors. */
int learner_dp_plan_make(learner_dp_plan *p, const model *m, size_t bucket_bytes, char *err,
                         size_t errlen);
void learner_dp_plan_free(learner_dp_plan *p);
/* Start a backward: no tensor is final. */
void learner_dp_plan_reset(learner_dp_plan *p);
/* Tensors [first, end) are final. Writes the buckets that became ready by it into
 * ready (room for n_buckets), highest index first (the backward runs from the end of
 * the layout), and returns their count. Marking a tensor twice is ignored. */
int learner_dp_plan_mark(learner_dp_plan *p, int first, int end, int *ready);

/* ---- ZeRO-1 ---- */

/* Rank's slice [*lo, *hi) of n parameters among world ranks, boundaries multiples of
 * align (> 0) except at n; empty (lo = hi = n) for ranks past the end. */
void learner_dp_shard(size_t n, int world, int rank, size_t align, size_t *lo, size_t *hi);

/* ---- ranks and collectives ---- */

typedef struct learner_dp learner_dp;

typedef struct learner_dp_config {
    int rank, world;
    const char *endpoint; /* rank 0 binds it (tcp://HOST:PORT, ipc://PATH), others connect */
    const char *connect;  /* what ranks > 0 connect to; NULL: endpoint */
    double timeout_s;     /* bound on every wait (bootstrap, collectives, deals) */
    size_t bucket_bytes;  /* all-reduce piece size on the wire; 0: 4 MiB */
    const char *backend;  /* "zmq" (host buffers) or "nccl" (device buffers) */
    size_t n_params;      /* every rank must agree (a mismatch fails the bootstrap) */
} learner_dp_config;

/* Bootstrap: rank 0 binds and waits for every rank's hello, checks world size and
 * n_params, then welcomes them (with the NCCL unique id for "nccl"). */
int learner_dp_open(learner_dp **out, const learner_dp_config *cfg, char *err, size_t errlen);
/* Best effort: tells the other ranks this one stops (they fail at once). */
void learner_dp_close(learner_dp *dp, int aborting);
int learner_dp_rank(const learner_dp *dp);
int learner_dp_world(const learner_dp *dp);
const char *learner_dp_backend(const learner_dp *dp);

/* In-place sum over ranks of n floats (host memory for zmq, device for nccl). */
int learner_dp_allreduce(learner_dp *dp, float *buf, size_t n, char *err, size_t errlen);
/* Rank 0's bytes into every rank's buf (host memory for zmq, device for nccl). */
int learner_dp_broadcast(learner_dp *dp, void *buf, size_t bytes, char *err, size_t errlen);
/* Rank 0: send part k (bytes[k], len[k]) to rank k for k >= 1 (part 0 stays). */
int learner_dp_deal(learner_dp *dp, const void *const *parts, const size_t *lens, char *err,
                    size_t errlen);
/* Ranks >= 1: receive this step's part into a malloc'd *out (*len bytes). */
int learner_dp_take(learner_dp *dp, void **out, size_t *len, char *err, size_t errlen);

/* Reduce host gradients over the ranks bucket by bucket, last bucket first (the order a
 * backward finishes them). Sums: the caller scales its loss by the GLOBAL token count,
 * so the sum is the full batch's gradient. */
int learner_dp_reduce_grads(learner_dp *dp, const learner_dp_plan *plan, float *grads, char *err,
                            size_t errlen);

/* The model whose gradients the ranks reduce, bucketed by bucket_bytes (0: 4 MiB):
 * "zmq" reduces model_grads (a CPU model); "nccl" reduces the CUDA backend's device
 * gradients and hooks its backward (model_cuda_set_grad_hook) so each bucket's
 * all-reduce starts, on a stream of its own, as soon as the backward has finished it. */
int learner_dp_attach(learner_dp *dp, model *m, size_t bucket_bytes, char *err, size_t errlen);
/* The next backward is the step's last (gradient accumulation ends with it): its
 * finished buckets are reduced while it runs (nccl; zmq reduces in learner_dp_sync). */
void learner_dp_arm(learner_dp *dp);
/* After the step's last backward: every bucket reduced (those the backward did not
 * start are started now) and finished, within the timeout. */
int learner_dp_sync(learner_dp *dp, char *err, size_t errlen);

#endif
