/* policy_weights.c — see policy_weights.h. */
#include "roles/policy_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/telemetry.h"
#include "roles/daemon.h"
#include "common/job.h"
#include "common/util.h"

weights_tensor *policy_weights_table(const model *m, int *n) {
    *n = model_num_tensors(m);
    weights_tensor *t = calloc((size_t)*n + 1, sizeof *t);
    if (!t) return NULL;
    for (int i = 0; i < *n; i++) {
        const model_tensor_info *ti = model_tensor(m, i);
        snprintf(t[i].name, sizeof t[i].name, "%s", ti->name);
        t[i].dtype = WEIGHTS_F32;
        t[i].ndim = ti->ndim;
        for (int d = 0; d < ti->ndim; d++) t[i].shape[d] = ti->shape[d];
        t[i].offset = ti->offset * sizeof(float);
        t[i].nbytes = ti->numel * sizeof(float);
    }
    return t;
}

int policy_weights_apply(weights_rx *rx, model *m, int wait_ms, uint64_t *version) {
    char err[SEED_ERRLEN];
    int r = weights_rx_poll(rx, wait_ms, err, sizeof err);
    if (r < 0) {
        seed_log(SEED_LOG_ERROR, "weights refused: %s", err);
        return -1;
    }
    weights_view v;
    if (r == 0 || weights_rx_take(rx, &v, err, sizeof err) != 1) return 0;
    size_t need = model_num_params(m) * sizeof(float);
    if (v.nbytes != need) {
        seed_log(SEED_LOG_ERROR, "weights v%llu hold %zu bytes, the model needs %zu",
                 (unsigned long long)v.version, v.nbytes, need);
        weights_rx_release(rx);
        return -1;
    }
    memcpy(model_params(m), v.blob, need);
    uint64_t ver = v.version;
    weights_rx_release(rx);
    if (model_params_changed(m, err, sizeof err)) {
        seed_log(SEED_LOG_ERROR, "applying weights v%llu: %s", (unsigned long long)ver, err);
        return -1;
    }
    *version = ver;
    seed_log(SEED_LOG_DEBUG, "weights v%llu applied", (unsigned long long)ver);
    return 1;
}

int policy_weights_connect(weights_rx **out, const struct job_config *job, const model *m,
                           const char *id, char *err, size_t errlen) {
    weights_rx_config wc;
    weights_rx_config_init(&wc);
    char ep[JOB_ENDPOINT_LEN];
    if (job_endpoint(job, "weights", 0, ep, sizeof ep, err, errlen)) return -1;
    wc.endpoint = ep;
    wc.id = id;
    wire_sockopts o; /* the job's CURVE client keys: the learner serves weights over CURVE */
    if (daemon_sockopts(job, DAEMON_CLIENT, &o, err, errlen)) return -1;
    wc.sockopts = &o; /* the receiver sets its own max message size */
    int nt;
    weights_tensor *table = policy_weights_table(m, &nt);
    if (!table) return seed_errf(err, errlen, "out of memory for the tensor table");
    wc.expect = table; /* copied by the receiver */
    wc.n_expect = nt;
    int rc = weights_rx_create(out, &wc, err, errlen);
    free(table);
    return rc;
}
