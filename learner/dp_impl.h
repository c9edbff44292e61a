/* dp_impl.h — what dp.c shares with a collective backend (dp_nccl.c): the rank state
 * and the table a backend fills. Private to learner/dp*.c. */
#ifndef SEED_LEARNER_DP_IMPL_H
#define SEED_LEARNER_DP_IMPL_H

#include "learner/dp.h"

#define LEARNER_DP_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

typedef struct learner_coll_ops {
    const char *name;
    /* rank 0, before the welcome: make the id the welcome carries */
    int (*make_id)(learner_dp *dp, unsigned char id[LEARNER_DP_ID_BYTES], char *err, size_t errlen);
    /* every rank, after the welcome */
    int (*init)(learner_dp *dp, const unsigned char id[LEARNER_DP_ID_BYTES], char *err,
                size_t errlen);
    int (*allreduce)(learner_dp *dp, float *buf, size_t n, char *err, size_t errlen);
    int (*broadcast)(learner_dp *dp, void *buf, size_t bytes, char *err, size_t errlen);
    void (*fini)(learner_dp *dp, int aborting);
    /* optional: learner_dp_attach / arm / sync for device gradients (NULL: dp.c reduces
     * model_grads on the host with allreduce) */
    int (*attach)(learner_dp *dp, char *err, size_t errlen);
    void (*arm)(learner_dp *dp);
    int (*sync)(learner_dp *dp, char *err, size_t errlen);
} learner_coll_ops;

struct learner_dp {
    int rank, world;
    double timeout_s;
    size_t piece; /* bytes per wire piece */
    void *zctx, *sock;
    uint64_t seq;   /* collectives so far; every rank counts alike */
    int failed;     /* an error happened: only close is allowed */
    float *scratch; /* rank 0: (world - 1) pieces */
    const learner_coll_ops *ops;
    void *cs; /* the collective backend's state */
    model *m; /* learner_dp_attach */
    learner_dp_plan plan;
    int armed;
};

#ifdef SEED_HAVE_NCCL
extern const learner_coll_ops learner_dp_nccl_ops;
#endif

#endif
