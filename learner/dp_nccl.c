/* dp_nccl.c — the "nccl" collectives of dp.h: device buffers, the communicator made
 * from the unique id rank 0 sends in its welcome, NCCL's non-blocking mode so every wait
 * is a poll against the timeout (ncclCommAbort on expiry, never a hang), and bucketed
 * gradient all-reduce overlapped with the CUDA backend's backward.
 *
 * Overlap: the backend calls grad_ready after enqueuing the kernels that finish some
 * tensors; each bucket that became ready records an event on the model's stream and
 * its all-reduce is enqueued on the communication stream behind that event, so it
 * runs while the backward continues. sync makes the model's stream wait for the
 * communication stream (the optimizer then reads summed gradients).
 *
 * libnccl is loaded with dlopen when this backend is opened (only the header is needed
 * to build). Built only with CUDA and nccl.h (SEED_HAVE_NCCL). */
#ifdef SEED_HAVE_NCCL
#define _GNU_SOURCE
#include "learner/dp_impl.h"
#include "model/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

typedef struct nccl_fns {
    void *lib;
    __typeof__(&ncclGetUniqueId) get_id;
    __typeof__(&ncclCommInitRankConfig) init;
    __typeof__(&ncclCommGetAsyncError) async_error;
    __typeof__(&ncclAllReduce) allreduce;
    __typeof__(&ncclBroadcast) broadcast;
    __typeof__(&ncclCommAbort) abort_;
    __typeof__(&ncclCommFinalize) finalize;
    __typeof__(&ncclCommDestroy) destroy;
    __typeof__(&ncclGetErrorString) str;
} nccl_fns;

typedef struct nccl_state {
    nccl_fns f;
    ncclComm_t comm;
    cudaStream_t comm_st, model_st;
    cudaEvent_t ev_ready, ev_done;
    float *grads;          /* the model's device gradients */
    int *ready;            /* plan scratch */
    unsigned char *issued; /* per bucket, in this step */
} nccl_state;

static int load(nccl_fns *f, char *err, size_t errlen) {
    f->lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!f->lib) f->lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!f->lib)
        return seed_errf(err, errlen, "learner dp nccl: cannot load libnccl.so.2: %s", dlerror());
#define SYM(field, name)                                                                           \
    if (!(*(void **)&f->field = dlsym(f->lib, name)))                                              \
        return seed_errf(err, errlen, "learner dp nccl: libnccl has no %s", name);
    SYM(get_id, "ncclGetUniqueId");
    SYM(init, "ncclCommInitRankConfig");
    SYM(async_error, "ncclCommGetAsyncError");
    SYM(allreduce, "ncclAllReduce");
    SYM(broadcast, "ncclBroadcast");
    SYM(abort_, "ncclCommAbort");
    SYM(finalize, "ncclCommFinalize");
    SYM(destroy, "ncclCommDestroy");
    SYM(str, "ncclGetErrorString");
#undef SYM
    return 0;
}

static nccl_state *ST(learner_dp *dp) {
    return dp->cs;
}

/* Poll until the communicator has no operation in progress (what: the operation). */
static int wait_comm(learner_dp *dp, const char *what, char *err, size_t errlen) {
    nccl_state *s = ST(dp);
    const double deadline = seed_now() + dp->timeout_s;
    for (;;) {
        ncclResult_t r = ncclSuccess;
        s->f.async_error(s->comm, &r);
        if (r == ncclSuccess) return 0;
        if (r != ncclInProgress) {
            s->f.abort_(s->comm);
            s->comm = NULL;
            return seed_errf(err, errlen, "learner dp nccl: %s failed: %s", what, s->f.str(r));
        }
        if (seed_now() > deadline) {
            s->f.abort_(s->comm);
            s->comm = NULL;
            return seed_errf(err, errlen,
                             "learner dp nccl: %s did not complete within %g s (a rank failed "
                             "or stalled); communicator aborted",
                             what, dp->timeout_s);
        }
    }
}

/* Poll the communication stream to completion, watching the communicator's errors. */
static int wait_stream(learner_dp *dp, const char *what, char *err, size_t errlen) {
    nccl_state *s = ST(dp);
    const double deadline = seed_now() + dp->timeout_s;
    for (;;) {
        cudaError_t e = cudaStreamQuery(s->comm_st);
        if (e == cudaSuccess) return 0;
        if (e != cudaErrorNotReady)
            return seed_errf(err, errlen, "learner dp nccl: %s: %s", what, cudaGetErrorString(e));
        ncclResult_t r = ncclSuccess;
        s->f.async_error(s->comm, &r);
        if ((r != ncclSuccess && r != ncclInProgress) || seed_now() > deadline) {
            s->f.abort_(s->comm); /* unblocks the stream's pending kernels */
            s->comm = NULL;
            if (r != ncclSuccess && r != ncclInProgress)
                return seed_errf(err, errlen, "learner dp nccl: %s failed: %s", what, s->f.str(r));
            return seed_errf(err, errlen,
                             "learner dp nccl: %s did not complete within %g s (a rank failed "
                             "or stalled); communicator aborted",
                             what, dp->timeout_s);
        }
    }
}

static int n_make_id(learner_dp *dp, unsigned char id[LEARNER_DP_ID_BYTES], char *err,
                     size_t errlen) {
    nccl_state *s = calloc(1, sizeof *s);
    if (!s) return seed_errf(err, errlen, "learner dp nccl: out of memory");
    dp->cs = s;
    if (load(&s->f, err, errlen)) return -1;
    ncclUniqueId uid;
    ncclResult_t r = s->f.get_id(&uid);
    if (r != ncclSuccess)
        return seed_errf(err, errlen, "learner dp nccl: ncclGetUniqueId: %s", s->f.str(r));
    memcpy(id, &uid, sizeof uid);
    return 0;
}

static int n_init(learner_dp *dp, const unsigned char id[LEARNER_DP_ID_BYTES], char *err,
                  size_t errlen) {
    unsigned char own[LEARNER_DP_ID_BYTES];
    if (!dp->cs) { /* ranks > 0, and a world of one (which makes its own id) */
        if (dp->world == 1) {
            if (n_make_id(dp, own, err, errlen)) return -1;
            id = own;
        } else {
            nccl_state *s = calloc(1, sizeof *s);
            if (!s) return seed_errf(err, errlen, "learner dp nccl: out of memory");
            dp->cs = s;
            if (load(&s->f, err, errlen)) return -1;
        }
    }
    nccl_state *s = ST(dp);
    if (model_cuda_available(err, errlen)) return -1;
    if (cudaStreamCreateWithFlags(&s->comm_st, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&s->ev_ready, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&s->ev_done, cudaEventDisableTiming) != cudaSuccess)
        return seed_errf(err, errlen, "learner dp nccl: cannot create the stream and events");
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0; /* every call returns at once; wait_comm polls against the timeout */
    ncclResult_t r = s->f.init(&s->comm, dp->world, uid, dp->rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress)
        return seed_errf(err, errlen, "learner dp nccl: ncclCommInitRankConfig (rank %d of %d): %s",
                         dp->rank, dp->world, s->f.str(r));
    return wait_comm(dp, "creating the communicator", err, errlen);
}

static int n_allreduce(learner_dp *dp, float *buf, size_t n, char *err, size_t errlen) {
    nccl_state *s = ST(dp);
    ncclResult_t r = s->f.allreduce(buf, buf, n, ncclFloat, ncclSum, s->comm, s->comm_st);
    if (r != ncclSuccess && r != ncclInProgress)
        return seed_errf(err, errlen, "learner dp nccl: ncclAllReduce: %s", s->f.str(r));
    return wait_stream(dp, "all-reduce", err, errlen);
}

static int n_broadcast(learner_dp *dp, void *buf, size_t bytes, char *err, size_t errlen) {
    nccl_state *s = ST(dp);
    ncclResult_t r = s->f.broadcast(buf, buf, bytes, ncclChar, 0, s->comm, s->comm_st);
    if (r != ncclSuccess && r != ncclInProgress)
        return seed_errf(err, errlen, "learner dp nccl: ncclBroadcast: %s", s->f.str(r));
    return wait_stream(dp, "broadcast", err, errlen);
}

static void n_fini(learner_dp *dp, int aborting) {
    nccl_state *s = ST(dp);
    if (!s) return;
    if (s->comm) {
        if (aborting || dp->failed) {
            s->f.abort_(s->comm);
        } else {
            char e[SEED_ERRLEN];
            s->f.finalize(s->comm); /* flushes pending work; aborts on the timeout */
            wait_comm(dp, "finalize", e, sizeof e);
            if (s->comm) s->f.destroy(s->comm);
        }
    }
    if (dp->m) model_cuda_set_grad_hook(dp->m, NULL, NULL);
    if (s->comm_st) cudaStreamDestroy(s->comm_st);
    if (s->ev_ready) cudaEventDestroy(s->ev_ready);
    if (s->ev_done) cudaEventDestroy(s->ev_done);
    if (s->f.lib) dlclose(s->f.lib);
    free(s->ready);
    free(s->issued);
    free(s);
    dp->cs = NULL;
}

/* Enqueue bucket k's all-reduce behind everything the model's stream holds now. */
static int issue(learner_dp *dp, int k) {
    nccl_state *s = ST(dp);
    if (s->issued[k] || !s->comm) return 0;
    s->issued[k] = 1;
    const learner_dp_bucket *b = &dp->plan.b[k];
    if (cudaEventRecord(s->ev_ready, s->model_st) != cudaSuccess ||
        cudaStreamWaitEvent(s->comm_st, s->ev_ready, 0) != cudaSuccess)
        return -1;
    ncclResult_t r = s->f.allreduce(s->grads + b->offset, s->grads + b->offset, b->numel, ncclFloat,
                                    ncclSum, s->comm, s->comm_st);
    return r == ncclSuccess || r == ncclInProgress ? 0 : -1;
}

static void grad_ready(void *ctx, int first, int end) {
    learner_dp *dp = ctx;
    nccl_state *s = ST(dp);
    if (!dp->armed || dp->world == 1) return;
    const int n = learner_dp_plan_mark(&dp->plan, first, end, s->ready);
    for (int i = 0; i < n; i++)
        if (issue(dp, s->ready[i])) dp->failed = 1; /* sync reports it */
}

static int n_attach(learner_dp *dp, char *err, size_t errlen) {
    nccl_state *s = ST(dp);
    s->grads = model_cuda_device_grads(dp->m);
    s->model_st = (cudaStream_t)model_cuda_stream(dp->m);
    if (!s->grads)
        return seed_errf(err, errlen,
                         "learner dp nccl: the model is not a training model on the cuda "
                         "backend (model.backend cuda with max_train_tokens > 0)");
    free(s->ready);
    free(s->issued);
    s->ready = calloc((size_t)dp->plan.n_buckets, sizeof(int));
    s->issued = calloc((size_t)dp->plan.n_buckets, 1);
    if (!s->ready || !s->issued) return seed_errf(err, errlen, "learner dp nccl: out of memory");
    model_cuda_set_grad_hook(dp->m, grad_ready, dp);
    return 0;
}

static void n_arm(learner_dp *dp) {
    nccl_state *s = ST(dp);
    memset(s->issued, 0, (size_t)dp->plan.n_buckets);
}

static int n_sync(learner_dp *dp, char *err, size_t errlen) {
    nccl_state *s = ST(dp);
    if (dp->failed)
        return seed_errf(err, errlen, "learner dp nccl: enqueuing a bucket's all-reduce failed");
    if (dp->world > 1)
        for (int k = dp->plan.n_buckets - 1; k >= 0; k--)
            if (issue(dp, k))
                return seed_errf(err, errlen, "learner dp nccl: enqueuing bucket %d failed", k);
    if (wait_stream(dp, "gradient all-reduce", err, errlen)) return -1;
    /* the optimizer's kernels on the model's stream read the sums */
    if (cudaEventRecord(s->ev_done, s->comm_st) != cudaSuccess ||
        cudaStreamWaitEvent(s->model_st, s->ev_done, 0) != cudaSuccess)
        return seed_errf(err, errlen, "learner dp nccl: ordering the optimizer after the sums");
    return 0;
}

const learner_coll_ops learner_dp_nccl_ops = {
    "nccl", n_make_id, n_init, n_allreduce, n_broadcast, n_fini, n_attach, n_arm, n_sync,
};
#endif
