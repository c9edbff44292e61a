/* weights_rx.c — the receiver of weights.h: a thread pulling the latest version over a
 * DEALER socket.
 *
 * Buffers. Three slots: staging (the thread assembles into it), ready (the newest complete
 * version), taken (the caller's). They change roles under a mutex, so a taken view is never
 * written while the caller holds it. */
#define _POSIX_C_SOURCE 200809L
#include "proto/weights.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <zmq.h>

#include "common/bf16.h"
#include "common/util.h"
#include "proto/weights_internal.h"

#define WRX_CHUNK ((size_t)64 << 10) /* copy + CRC granularity: stays in L2 */
#define WRX_TICK_MS 50

/* ---- receiver --------------------------------------------------------------------------- */

typedef struct wrx_slot {
    uint8_t *mem;
    size_t cap;
    uint64_t version, epoch;
    size_t nbytes;
    weights_tensor *tensors;
    int n_tensors, cap_tensors;
    char *config_json;
    size_t cap_json;
} wrx_slot;

struct weights_rx {
    weights_rx_config cfg;
    weights_tensor *expect;
    char endpoint[256];
    char id[WEIGHTS_ID_MAX];
    void *ctx, *sock;
    pthread_t thread;
    int started;
    atomic_int stop;

    pthread_mutex_t mu; /* slot roles, the error, the published stats */
    pthread_cond_t cv;
    wrx_slot slots[3];
    int staging, ready, taken; /* slot index or -1 */
    uint64_t taken_version;
    int has_error;
    char error[SEED_ERRLEN];
    weights_rx_stats st_pub;

    /* owned by the receiving thread */
    weights_rx_stats st;
    wire_rx wrx;
    uint64_t have_version, have_epoch, refused_version;
    double next_poll;
    /* the version being assembled (t_version 0: none) and its publisher's epoch */
    uint64_t t_version, t_epoch, t_total, t_transport;
    uint32_t t_bb, t_n, t_received, t_outstanding, t_cursor, t_cap;
    weights_dtype t_dtype;
    uint32_t *t_crc;
    uint8_t *t_got, *t_fail;
    double *t_req; /* when requested; 0: not outstanding */
    double t_start;
    weights_tensor *tmp;
    int cap_tmp;
    uint32_t *req;
};

void weights_rx_config_init(weights_rx_config *c) {
    memset(c, 0, sizeof *c);
    c->id = "receiver";
    c->window = 4;
    c->poll_ms = 200;
    c->rerequest_ms = 2000;
    c->max_bucket_failures = 8;
    c->max_msg_bytes = ((int64_t)64 << 20) + ((int64_t)1 << 20);
}

/* Copy the thread's counters for readers. Under rx->mu. */
static void wrx_publish_stats_locked(weights_rx *rx) {
    rx->st.malformed = rx->wrx.c.malformed + rx->wrx.c.wrong_version + rx->wrx.c.oversized +
                       rx->wrx.c.unexpected_type;
    rx->st.have_version = rx->have_version;
    rx->st.fetching_version = rx->t_version;
    rx->st.taken_version = rx->taken_version;
    rx->st_pub = rx->st;
}

static void wrx_publish_stats(weights_rx *rx) {
    pthread_mutex_lock(&rx->mu);
    wrx_publish_stats_locked(rx);
    pthread_mutex_unlock(&rx->mu);
}

static void wrx_set_error(weights_rx *rx, const char *msg) {
    pthread_mutex_lock(&rx->mu);
    snprintf(rx->error, sizeof rx->error, "%s", msg);
    rx->has_error = 1;
    wrx_publish_stats_locked(rx);
    pthread_cond_broadcast(&rx->cv);
    pthread_mutex_unlock(&rx->mu);
}

static void wrx_send_fetch(weights_rx *rx, uint64_t version, const uint32_t *idx, size_t n) {
    Seed__WeightFetch f;
    seed__weight_fetch__init(&f);
    f.version = version;
    f.n_buckets = n;
    f.buckets = (uint32_t *)idx;
    f.id = rx->id;
    f.have_version = rx->have_version;
    f.have_epoch = rx->have_epoch;
    Seed__Envelope env;
    wire_envelope_init(&env, rx->id);
    env.body_case = SEED__ENVELOPE__BODY_WEIGHT_FETCH;
    env.weight_fetch = &f;
    char err[SEED_ERRLEN];
    /* A refused send (queue full) is recovered by the re-request timer. */
    wire_send(rx->sock, &env, ZMQ_DONTWAIT, err, sizeof err);
}

static void wrx_send_poll(weights_rx *rx) {
    wrx_send_fetch(rx, 0, NULL, 0);
    rx->next_poll = seed_now() + rx->cfg.poll_ms / 1000.0;
}

/* Keep `window` buckets requested. */
static void wrx_request_more(weights_rx *rx) {
    size_t n = 0;
    double now = seed_now();
    while (rx->t_outstanding < (uint32_t)rx->cfg.window && rx->t_cursor < rx->t_n) {
        uint32_t i = rx->t_cursor++;
        if (rx->t_got[i] || rx->t_req[i] > 0) continue;
        rx->t_req[i] = now;
        rx->t_outstanding++;
        rx->req[n++] = i;
    }
    if (n) wrx_send_fetch(rx, rx->t_version, rx->req, n);
}

static void wrx_rerequest(weights_rx *rx, uint32_t i) {
    rx->t_req[i] = seed_now();
    rx->st.rerequests++;
    wrx_send_fetch(rx, rx->t_version, &i, 1);
}

static void wrx_abandon(weights_rx *rx) {
    rx->t_version = 0;
    rx->t_outstanding = 0;
}

/* Requested buckets that never came (dropped on a full queue, lost with a connection). */
static void wrx_check_timeouts(weights_rx *rx) {
    double now = seed_now(), limit = rx->cfg.rerequest_ms / 1000.0;
    size_t n = 0;
    for (uint32_t i = 0; i < rx->t_n; i++) {
        if (rx->t_got[i] || rx->t_req[i] <= 0 || now - rx->t_req[i] < limit) continue;
        rx->t_req[i] = now;
        rx->req[n++] = i;
    }
    if (!n) return;
    rx->st.rerequests += n;
    wrx_send_fetch(rx, rx->t_version, rx->req, n);
}

/* The slot to assemble into: neither ready nor taken, the one with most memory. */
static int wrx_pick_staging(weights_rx *rx) {
    int best = -1;
    for (int k = 0; k < 3; k++) {
        if (k == rx->ready || k == rx->taken) continue;
        if (best < 0 || rx->slots[k].cap > rx->slots[best].cap) best = k;
    }
    return best;
}

/* Validate an announce and convert its table into rx->tmp. */
static int wrx_check_announce(weights_rx *rx, const Seed__WeightAnnounce *a, char *why,
                              size_t whylen) {
    int n = 0;
    if (weights_announce_parse(a, rx->cfg.max_msg_bytes, &rx->tmp, &rx->cap_tmp, &n, why, whylen))
        return -1;
    if (rx->expect && weights_table_check(rx->expect, rx->cfg.n_expect, rx->tmp, n, why, whylen))
        return -1;
    return 0;
}

static int wrx_same_layout(const weights_rx *rx, const Seed__WeightAnnounce *a) {
    return a->total_bytes == rx->t_total && a->bucket_bytes == rx->t_bb &&
           (weights_dtype)a->transport_dtype == rx->t_dtype && a->n_buckets == rx->t_n &&
           memcmp(a->bucket_crc32c, rx->t_crc, (size_t)rx->t_n * sizeof *rx->t_crc) == 0;
}

static void wrx_on_announce(weights_rx *rx, const Seed__WeightAnnounce *a) {
    uint64_t v = a->version;
    rx->st.announces++;
    /* Versions compare within one publisher epoch; a new epoch (a restarted learner)
     * is taken whatever its numbers. */
    const int same_have = a->epoch == rx->have_epoch,
              same_t = rx->t_version && a->epoch == rx->t_epoch;
    if ((same_have && v <= rx->have_version) || (same_t && v < rx->t_version)) return;
    if (same_t && rx->t_version == v && wrx_same_layout(rx, a)) return;
    /* Midway through an older version the publisher still serves: finish it first (the
     * poll after completing it brings the newest announce again). Abandoning instead would
     * never complete anything while versions come faster than one transfer. */
    if (same_t && v > rx->t_version && a->oldest_served && a->oldest_served <= rx->t_version)
        return;
    if (v == rx->refused_version) return;
    char why[SEED_ERRLEN];
    if (wrx_check_announce(rx, a, why, sizeof why)) {
        rx->refused_version = v;
        rx->st.refused_versions++;
        seed_log(SEED_LOG_ERROR, "weights: refusing version %" PRIu64 " from %s: %s", v,
                 rx->endpoint, why);
        wrx_set_error(rx, why);
        if (rx->t_version) rx->st.versions_abandoned++;
        wrx_abandon(rx);
        return;
    }
    if (rx->t_version) {
        rx->st.versions_abandoned++;
        seed_log(SEED_LOG_DEBUG, "weights: version %" PRIu64 " supersedes %" PRIu64 " midway", v,
                 rx->t_version);
    }
    wrx_abandon(rx);
    uint32_t n = a->n_buckets;
    if (n > rx->t_cap) {
        free(rx->t_crc);
        free(rx->t_got);
        free(rx->t_fail);
        free(rx->t_req);
        free(rx->req);
        rx->t_crc = malloc((size_t)n * sizeof *rx->t_crc);
        rx->t_got = malloc(n);
        rx->t_fail = malloc(n);
        rx->t_req = malloc((size_t)n * sizeof *rx->t_req);
        rx->req = malloc((size_t)n * sizeof *rx->req);
        rx->t_cap = (rx->t_crc && rx->t_got && rx->t_fail && rx->t_req && rx->req) ? n : 0;
    }
    pthread_mutex_lock(&rx->mu);
    if (rx->staging < 0) rx->staging = wrx_pick_staging(rx);
    wrx_slot *s = &rx->slots[rx->staging];
    pthread_mutex_unlock(&rx->mu);
    if (rx->t_cap && s->cap < a->total_bytes) {
        free(s->mem);
        s->mem = weights_alloc(a->total_bytes);
        s->cap = s->mem ? a->total_bytes : 0;
    }
    if (!rx->t_cap || !s->mem ||
        weights_copy_table(&s->tensors, &s->cap_tensors, rx->tmp, (int)a->n_tensors) ||
        weights_copy_str(&s->config_json, &s->cap_json, a->config_json)) {
        snprintf(why, sizeof why, "version %" PRIu64 ": out of memory for %" PRIu64 " bytes", v,
                 a->total_bytes);
        seed_log(SEED_LOG_ERROR, "weights: %s", why);
        rx->refused_version = v;
        rx->st.refused_versions++;
        wrx_set_error(rx, why);
        return;
    }
    s->n_tensors = (int)a->n_tensors;
    s->nbytes = a->total_bytes;
    s->version = 0; /* not complete */
    rx->t_version = v;
    rx->t_epoch = a->epoch;
    rx->t_total = a->total_bytes;
    rx->t_dtype = (weights_dtype)a->transport_dtype;
    rx->t_transport = rx->t_dtype == WEIGHTS_BF16 ? a->total_bytes / 2 : a->total_bytes;
    rx->t_bb = a->bucket_bytes;
    rx->t_n = n;
    rx->t_received = rx->t_outstanding = rx->t_cursor = 0;
    memcpy(rx->t_crc, a->bucket_crc32c, (size_t)n * sizeof *rx->t_crc);
    memset(rx->t_got, 0, n);
    memset(rx->t_fail, 0, n);
    for (uint32_t i = 0; i < n; i++) rx->t_req[i] = 0;
    rx->t_start = seed_now();
    wrx_request_more(rx);
}

static void wrx_complete(weights_rx *rx) {
    double now = seed_now();
    uint64_t v = rx->t_version;
    rx->have_version = v;
    rx->have_epoch = rx->t_epoch;
    rx->st.versions_completed++;
    rx->st.last_fetch_s = now - rx->t_start;
    wrx_abandon(rx);
    pthread_mutex_lock(&rx->mu);
    wrx_slot *s = &rx->slots[rx->staging];
    s->version = v;
    s->epoch = rx->have_epoch;
    rx->ready = rx->staging; /* an older, untaken ready slot becomes free */
    rx->staging = -1;
    rx->has_error = 0;
    wrx_publish_stats_locked(rx);
    pthread_cond_broadcast(&rx->cv);
    pthread_mutex_unlock(&rx->mu);
    wrx_send_poll(rx); /* tells the publisher what we hold, and asks for anything newer */
}

/* Copy one bucket into the staging blob (widening bf16) and return the CRC-32C of its
 * transport bytes, chunk by chunk so the data is checksummed while in cache. */
static uint32_t wrx_copy_crc(weights_rx *rx, const weights_bucket_ref *b) {
    uint8_t *blob = rx->slots[rx->staging].mem;
    uint32_t crc = 0;
    for (size_t k = 0; k < b->len; k += WRX_CHUNK) {
        size_t n = SEED_MIN(WRX_CHUNK, b->len - k);
        if (rx->t_dtype == WEIGHTS_BF16)
            weights_widen(blob + 2 * (b->offset + k), b->data + k, n / 2);
        else
            memcpy(blob + b->offset + k, b->data + k, n);
        crc = seed_crc32c(crc, b->data + k, n);
    }
    return crc;
}

static void wrx_on_bucket(weights_rx *rx, const weights_bucket_ref *b) {
    if (!rx->t_version || b->version != rx->t_version) {
        rx->st.stale_buckets++;
        return;
    }
    uint32_t i = b->index;
    if (i >= rx->t_n) {
        rx->st.corrupt_buckets++;
        seed_log(SEED_LOG_WARN,
                 "weights: bucket index %" PRIu32 " of version %" PRIu64
                 " is out of range (%" PRIu32 " buckets)",
                 i, rx->t_version, rx->t_n);
        return;
    }
    if (rx->t_got[i]) {
        rx->st.duplicate_buckets++;
        return;
    }
    uint64_t off = (uint64_t)i * rx->t_bb;
    size_t want = (size_t)SEED_MIN((uint64_t)rx->t_bb, rx->t_transport - off);
    uint32_t crc = 0;
    int ok = b->offset == off && b->len == want && (crc = wrx_copy_crc(rx, b)) == b->crc32c &&
             crc == rx->t_crc[i];
    if (!ok) {
        rx->st.corrupt_buckets++;
        uint64_t c = rx->st.corrupt_buckets;
        if (c <= 16 || (c & (c - 1)) == 0)
            seed_log(SEED_LOG_WARN,
                     "weights: bucket %" PRIu32 " of version %" PRIu64
                     " is corrupt (offset %" PRIu64 "/%" PRIu64 ", %zu/%zu bytes, crc %08" PRIx32
                     ", sent %08" PRIx32 ", announced %08" PRIx32 "); fetching it again",
                     i, rx->t_version, b->offset, off, b->len, want, crc, b->crc32c, rx->t_crc[i]);
        if (++rx->t_fail[i] > rx->cfg.max_bucket_failures) {
            /* The publisher's layout may have changed under the same version: ask again. */
            seed_log(SEED_LOG_WARN, "weights: bucket %" PRIu32 " failed %d times; re-announcing", i,
                     rx->cfg.max_bucket_failures);
            rx->st.versions_abandoned++;
            wrx_abandon(rx);
            wrx_send_poll(rx);
            return;
        }
        wrx_rerequest(rx, i);
        return;
    }
    rx->t_got[i] = 1;
    rx->t_received++;
    if (rx->t_req[i] > 0 && rx->t_outstanding) rx->t_outstanding--;
    rx->t_req[i] = 0;
    rx->st.buckets_received++;
    rx->st.bytes_received += b->len;
    if (rx->t_received == rx->t_n)
        wrx_complete(rx);
    else
        wrx_request_more(rx);
}

static void wrx_on_message(weights_rx *rx, const uint8_t *data, size_t len) {
    weights_bucket_ref b;
    if (weights_bucket_parse(data, len, &b) == 1 && b.schema == SEED_SCHEMA_VERSION) {
        rx->wrx.c.received++;
        rx->wrx.c.bytes += len;
        wrx_on_bucket(rx, &b);
        return;
    }
    Seed__Envelope *env = NULL;
    if (wire_decode(&rx->wrx, data, len, rx->endpoint, &env) != 1) return;
    if (env->body_case == SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE) {
        wrx_on_announce(rx, env->weight_announce);
    } else if (env->body_case == SEED__ENVELOPE__BODY_WEIGHT_BUCKET) {
        const Seed__WeightBucket *w = env->weight_bucket;
        weights_bucket_ref r = {env->schema, w->version,   w->index,   w->offset,
                                w->crc32c,   w->data.data, w->data.len};
        wrx_on_bucket(rx, &r);
    }
    wire_free(env);
}

static void *wrx_main(void *arg) {
    weights_rx *rx = arg;
    zmq_pollitem_t it = {rx->sock, 0, ZMQ_POLLIN, 0};
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (!atomic_load(&rx->stop)) {
        double now = seed_now();
        if (!rx->t_version && now >= rx->next_poll) wrx_send_poll(rx);
        if (rx->t_version) wrx_check_timeouts(rx);
        if (zmq_poll(&it, 1, WRX_TICK_MS) < 0) {
            if (errno == ETERM) break;
            continue;
        }
        for (int k = 0; k < 64; k++) {
            if (zmq_msg_recv(&m, rx->sock, ZMQ_DONTWAIT) < 0) {
                if (errno == ETERM) goto out;
                break;
            }
            if (zmq_msg_more(&m)) { /* the publisher never sends several frames: drop them */
                rx->wrx.c.received++;
                rx->wrx.c.malformed++;
                while (zmq_msg_more(&m) && zmq_msg_recv(&m, rx->sock, 0) >= 0) {
                }
                continue;
            }
            wrx_on_message(rx, zmq_msg_data(&m), zmq_msg_size(&m));
        }
        wrx_publish_stats(rx);
    }
out:
    zmq_msg_close(&m);
    wrx_publish_stats(rx);
    return NULL;
}

int weights_rx_create(weights_rx **out, const weights_rx_config *cfg, char *err, size_t errlen) {
    *out = NULL;
    if (!cfg || !cfg->endpoint || !cfg->endpoint[0])
        return seed_errf(err, errlen, "weights receiver: no endpoint to connect to");
    const char *id = cfg->id ? cfg->id : ""; /* only a name in stats: cut to fit */
    if (cfg->window < 1 || cfg->window > 1024)
        return seed_errf(err, errlen, "weights receiver: window = %d, expected 1..1024",
                         cfg->window);
    if (cfg->poll_ms <= 0 || cfg->rerequest_ms <= 0 || cfg->max_bucket_failures < 1)
        return seed_errf(err, errlen,
                         "weights receiver: poll_ms = %d, rerequest_ms = %d and "
                         "max_bucket_failures = %d must be > 0",
                         cfg->poll_ms, cfg->rerequest_ms, cfg->max_bucket_failures);
    if (cfg->max_msg_bytes < (int64_t)WEIGHTS_MIN_BUCKET_BYTES + WEIGHTS_HEADER_MAX)
        return seed_errf(err, errlen,
                         "weights receiver: max_msg_bytes = %" PRId64
                         " cannot hold a minimal bucket (%" PRIu32 " bytes + header)",
                         cfg->max_msg_bytes, WEIGHTS_MIN_BUCKET_BYTES);
    if (cfg->n_expect < 0 || (cfg->n_expect > 0 && !cfg->expect))
        return seed_errf(err, errlen, "weights receiver: n_expect = %d without a table",
                         cfg->n_expect);
    weights_rx *rx = calloc(1, sizeof *rx);
    if (!rx) return seed_errf(err, errlen, "weights receiver: out of memory");
    rx->cfg = *cfg;
    rx->cfg.sockopts = NULL;
    snprintf(rx->id, sizeof rx->id, "%s", id);
    snprintf(rx->endpoint, sizeof rx->endpoint, "%s", cfg->endpoint);
    rx->staging = rx->ready = rx->taken = -1;
    pthread_mutex_init(&rx->mu, NULL);
    if (weights_cond_init(&rx->cv)) {
        pthread_mutex_destroy(&rx->mu);
        free(rx);
        return seed_errf(err, errlen, "weights receiver: cannot create a condition variable");
    }
    if (cfg->n_expect > 0) {
        rx->expect = malloc((size_t)cfg->n_expect * sizeof *rx->expect);
        if (!rx->expect) {
            seed_errf(err, errlen, "weights receiver: out of memory");
            goto fail;
        }
        memcpy(rx->expect, cfg->expect, (size_t)cfg->n_expect * sizeof *rx->expect);
    }
    seed_crc32c(0, "", 0);
    rx->ctx = zmq_ctx_new();
    if (!rx->ctx) {
        seed_errf(err, errlen, "weights receiver: cannot create a ZeroMQ context: %s",
                  zmq_strerror(errno));
        goto fail;
    }
    wire_sockopts o;
    if (cfg->sockopts)
        o = *cfg->sockopts;
    else
        wire_sockopts_init(&o);
    o.max_msg_bytes = cfg->max_msg_bytes;
    rx->sock = wire_socket(rx->ctx, ZMQ_DEALER, &o, err, errlen);
    if (!rx->sock) goto fail;
    if (wire_connect(rx->sock, cfg->endpoint, err, errlen)) goto fail;
    wire_rx_init(&rx->wrx, "weights",
                 WIRE_ACCEPT(SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE) |
                     WIRE_ACCEPT(SEED__ENVELOPE__BODY_WEIGHT_BUCKET),
                 (size_t)cfg->max_msg_bytes, 0);
    rx->st.last_fetch_s = -1;
    rx->st_pub.last_fetch_s = -1;
    if (pthread_create(&rx->thread, NULL, wrx_main, rx) != 0) {
        seed_errf(err, errlen, "weights receiver: cannot start its thread");
        goto fail;
    }
    rx->started = 1;
    *out = rx;
    return 0;
fail:
    weights_rx_free(rx);
    return -1;
}

int weights_rx_poll(weights_rx *rx, int timeout_ms, char *err, size_t errlen) {
    struct timespec dl;
    weights_deadline(&dl, SEED_MAX(timeout_ms, 0));
    pthread_mutex_lock(&rx->mu);
    while (rx->ready < 0 && !rx->has_error && timeout_ms > 0)
        if (pthread_cond_timedwait(&rx->cv, &rx->mu, &dl) == ETIMEDOUT) break;
    int r = rx->ready >= 0 ? 1 : rx->has_error ? -1 : 0;
    if (r < 0) seed_errf(err, errlen, "%s", rx->error);
    pthread_mutex_unlock(&rx->mu);
    return r;
}

int weights_rx_take(weights_rx *rx, weights_view *out, char *err, size_t errlen) {
    pthread_mutex_lock(&rx->mu);
    int r = 0;
    if (rx->ready >= 0) {
        rx->taken = rx->ready;
        rx->ready = -1;
        const wrx_slot *s = &rx->slots[rx->taken];
        rx->taken_version = s->version;
        rx->st_pub.taken_version = s->version;
        out->version = s->version;
        out->blob = s->mem;
        out->nbytes = s->nbytes;
        out->tensors = s->tensors;
        out->n_tensors = s->n_tensors;
        out->config_json = s->config_json;
        r = 1;
    } else if (rx->has_error) {
        seed_errf(err, errlen, "%s", rx->error);
        r = -1;
    }
    pthread_mutex_unlock(&rx->mu);
    return r;
}

void weights_rx_release(weights_rx *rx) {
    pthread_mutex_lock(&rx->mu);
    rx->taken = -1;
    pthread_mutex_unlock(&rx->mu);
}

void weights_rx_stats_get(weights_rx *rx, weights_rx_stats *out) {
    pthread_mutex_lock(&rx->mu);
    *out = rx->st_pub;
    pthread_mutex_unlock(&rx->mu);
}

void weights_rx_free(weights_rx *rx) {
    if (!rx) return;
    if (rx->started) {
        atomic_store(&rx->stop, 1);
        zmq_ctx_shutdown(rx->ctx); /* wakes the thread out of zmq_poll with ETERM */
        pthread_join(rx->thread, NULL);
    }
    if (rx->sock) wire_close(rx->sock);
    if (rx->ctx) zmq_ctx_term(rx->ctx);
    for (int k = 0; k < 3; k++) {
        free(rx->slots[k].mem);
        free(rx->slots[k].tensors);
        free(rx->slots[k].config_json);
    }
    free(rx->expect);
    free(rx->t_crc);
    free(rx->t_got);
    free(rx->t_fail);
    free(rx->t_req);
    free(rx->req);
    free(rx->tmp);
    pthread_cond_destroy(&rx->cv);
    pthread_mutex_destroy(&rx->mu);
    free(rx);
}
