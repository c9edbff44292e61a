/* weights_pub.c — the publisher of weights.h: a thread serving the latest version from a
 * ROUTER socket.
 *
 * Buffers. Each published version lives in a "snapshot": the blob cut into buckets, each
 * bucket preceded by WEIGHTS_HEADER_MAX reserved bytes where the serving thread writes
 * that bucket's Envelope header once, so a bucket goes out as one zero-copy frame
 * (zmq_msg_init_data) to any number of receivers. A snapshot is FREE, WRITING (publish is
 * copying into it), PENDING (complete, not yet served) or CURRENT (served); `refs` counts
 * frames ZeroMQ still holds, and only a FREE snapshot with no refs is written again. So
 * publish never waits for the network: it takes a free snapshot (allocating one when every
 * other is pinned by frames in flight) and copies. */
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

#define WPUB_MAX_SNAPS 16
#define WPUB_MAX_KEEP 4
#define WPUB_FETCH_MAX ((int64_t)1 << 20)
#define WPUB_BATCH 256 /* messages handled before looking at the wake socket again */

/* ---- publisher -------------------------------------------------------------------------- */

enum { SNAP_FREE = 0, SNAP_WRITING, SNAP_PENDING, SNAP_SERVED };

typedef struct wpub_snap {
    uint8_t *mem; /* n_buckets strides of WEIGHTS_HEADER_MAX + bucket_bytes */
    size_t cap;
    atomic_int refs; /* zero-copy frames ZeroMQ still holds */
    int state;       /* under weights_pub.mu */
    uint64_t version;
    uint64_t total_bytes, transport_bytes;
    uint32_t n_buckets;
    weights_tensor *tensors;
    int n_tensors, cap_tensors;
    char *config_json;
    size_t cap_json;
    double t_publish;
    /* written by the serving thread when it starts serving the snapshot */
    uint32_t *crc;
    uint8_t *hdr_len;
    uint32_t cap_buckets;
    wire_buf announce; /* the packed Envelope{WeightAnnounce} */
} wpub_snap;

/* A receiver's bytes handed to ZeroMQ and not yet released by it (the zero-copy free
 * callback runs in ZeroMQ's I/O thread), shared by the peer entry and each frame in flight,
 * so a peer forgotten while frames are queued leaves the counter alive until they go. */
typedef struct wpub_flight {
    atomic_llong bytes;
    atomic_int refs;
} wpub_flight;

/* The hint of one zero-copy frame. */
typedef struct wpub_frame {
    struct wpub_snap *s;
    wpub_flight *f;
    size_t len;
} wpub_frame;

typedef struct wpub_peer {
    wire_peer rid;
    wpub_flight *flight;
    char id[WEIGHTS_ID_MAX];
    uint64_t have_version;
    double last_seen, complete_s;
    uint64_t buckets_sent, bytes_sent, buckets_resent;
    uint64_t sent_version; /* the version `sent` refers to */
    uint8_t *sent;         /* per bucket: times sent (saturates at 255) */
    uint32_t sent_cap;
} wpub_peer;

typedef struct wpub_peer_pub {
    weights_peer_info info;
    double last_seen;
} wpub_peer_pub;

struct weights_pub {
    weights_pub_config cfg;
    char endpoint[256];
    char sender[WEIGHTS_ID_MAX];
    size_t stride;
    void *ctx, *router, *wake_tx, *wake_rx;
    pthread_t thread;
    int started;
    atomic_int stop, corrupt;

    pthread_mutex_t mu; /* snapshot states, pending, and the published stats */
    wpub_snap *snaps[WPUB_MAX_SNAPS];
    int n_snaps;
    wpub_snap *pending;
    uint64_t last_version, n_published;
    uint64_t epoch; /* this publisher instance (WeightAnnounce.epoch) */
    weights_pub_stats st_pub;
    wpub_peer_pub *peers_pub;
    int n_peers_pub;

    /* owned by the serving thread (the states of the snapshots in it: under mu) */
    wpub_snap *held[WPUB_MAX_KEEP]; /* served versions, newest first */
    int n_held;
    wpub_snap *cur; /* = held[0], the latest */
    wpub_peer *peers;
    int n_peers, cap_peers;
    wire_rx rx;
    weights_pub_stats st;
    double last_expire;
};

void weights_pub_config_init(weights_pub_config *c) {
    memset(c, 0, sizeof *c);
    c->sender = "learner";
    c->bucket_bytes = (uint32_t)8 << 20;
    c->transport_dtype = WEIGHTS_F32;
    c->io_threads = 1;
    c->keep_versions = 2;
    c->peer_timeout_ms = 10000;
    c->max_peers = 1024;
    c->max_fetch_buckets = 16;
    c->max_bucket_sends = 10;
    c->max_inflight_bytes = 0;
}

static inline uint8_t *wpub_data(const weights_pub *p, const wpub_snap *s, uint32_t i) {
    return s->mem + (size_t)i * p->stride + WEIGHTS_HEADER_MAX;
}

static inline size_t wpub_len(const weights_pub *p, const wpub_snap *s, uint32_t i) {
    uint64_t off = (uint64_t)i * p->cfg.bucket_bytes;
    return (size_t)SEED_MIN((uint64_t)p->cfg.bucket_bytes, s->transport_bytes - off);
}

static void wpub_flight_put(wpub_flight *f) {
    if (f && atomic_fetch_sub(&f->refs, 1) == 1) free(f);
}

static void wpub_zc_free(void *data, void *hint) {
    (void)data;
    wpub_frame *fr = hint;
    atomic_fetch_sub(&fr->s->refs, 1);
    if (fr->f) {
        atomic_fetch_sub(&fr->f->bytes, (long long)fr->len);
        wpub_flight_put(fr->f);
    }
    free(fr);
}

static void wpub_snap_free(wpub_snap *s) {
    if (!s) return;
    free(s->mem);
    free(s->tensors);
    free(s->config_json);
    free(s->crc);
    free(s->hdr_len);
    wire_buf_free(&s->announce);
    free(s);
}

/* Send raw bytes (copied) to a peer. 0 sent; -1 dropped (queue full or peer gone). */
static int wpub_send_copy(weights_pub *p, const wire_peer *to, const void *data, size_t len) {
    if (zmq_send(p->router, to->id, to->id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) return -1;
    if (to->delimiter) zmq_send(p->router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    return zmq_send(p->router, data, len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

/* A send was refused: ROUTER_MANDATORY says EHOSTUNREACH once the peer's connection is
 * gone, so it is forgotten at the next sweep instead of after peer_timeout_ms. */
static void wpub_refused(weights_pub *p, wpub_peer *peer) {
    p->st.send_dropped++;
    if (peer && errno == EHOSTUNREACH) peer->last_seen = -1e30;
}

static void wpub_send_announce(weights_pub *p, wpub_peer *peer, const wire_peer *to) {
    const wpub_snap *s = p->cur;
    if (wpub_send_copy(p, to, s->announce.data, s->announce.len) == 0)
        p->st.announces_sent++;
    else
        wpub_refused(p, peer);
}

static void wpub_send_bucket(weights_pub *p, wpub_peer *peer, const wire_peer *to, wpub_snap *s,
                             uint32_t i) {
    size_t len = wpub_len(p, s, i), h = s->hdr_len[i];
    uint8_t *frame = wpub_data(p, s, i) - h;
    zmq_msg_t m;
    int corrupt = atomic_load(&p->corrupt) > 0;
    if (corrupt) {
        atomic_fetch_sub(&p->corrupt, 1);
        if (zmq_msg_init_size(&m, h + len) != 0) return;
        uint8_t *c = zmq_msg_data(&m);
        memcpy(c, frame, h + len);
        c[h + len / 2] ^= 0x5a;
        p->st.corrupt_injected++;
    } else {
        wpub_frame *fr = malloc(sizeof *fr);
        if (!fr) return;
        fr->s = s;
        fr->f = peer ? peer->flight : NULL;
        fr->len = h + len;
        atomic_fetch_add(&s->refs, 1);
        if (fr->f) {
            atomic_fetch_add(&fr->f->refs, 1);
            atomic_fetch_add(&fr->f->bytes, (long long)fr->len);
        }
        if (zmq_msg_init_data(&m, frame, h + len, wpub_zc_free, fr) != 0) {
            wpub_zc_free(frame, fr);
            return;
        }
    }
    int ok = zmq_send(p->router, to->id, to->id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) == (int)to->id_len;
    if (ok && to->delimiter) zmq_send(p->router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    /* Once the routing frame is accepted the rest of the message is too (atomic parts). */
    if (!ok || zmq_msg_send(&m, p->router, ZMQ_DONTWAIT) < 0) {
        int e = errno;
        zmq_msg_close(&m); /* releases the ref through wpub_zc_free */
        errno = e;
        wpub_refused(p, peer);
        return;
    }
    p->st.buckets_sent++;
    p->st.bytes_sent += len;
    if (!peer) return;
    peer->buckets_sent++;
    peer->bytes_sent += len;
    if (peer->sent_version != s->version) {
        if (peer->sent_cap < s->n_buckets) {
            uint8_t *b = realloc(peer->sent, s->n_buckets);
            if (!b) return;
            peer->sent = b;
            peer->sent_cap = s->n_buckets;
        }
        memset(peer->sent, 0, s->n_buckets);
        peer->sent_version = s->version;
    }
    if (peer->sent[i]) {
        peer->buckets_resent++;
        p->st.buckets_resent++;
    }
    if (peer->sent[i] < 255) peer->sent[i]++;
}

/* Times bucket i of version v went to this peer. */
static int wpub_sends(const wpub_peer *peer, uint64_t v, uint32_t i) {
    return peer->sent_version == v && i < peer->sent_cap ? peer->sent[i] : 0;
}

static wpub_peer *wpub_peer_find(weights_pub *p, const wire_peer *rid, double now) {
    for (int k = 0; k < p->n_peers; k++) {
        wpub_peer *q = &p->peers[k];
        if (q->rid.id_len == rid->id_len && memcmp(q->rid.id, rid->id, rid->id_len) == 0) return q;
    }
    if (p->n_peers >= p->cfg.max_peers) return NULL;
    if (p->n_peers == p->cap_peers) {
        int cap = p->cap_peers ? 2 * p->cap_peers : 16;
        wpub_peer *q = realloc(p->peers, (size_t)cap * sizeof *q);
        if (!q) return NULL;
        p->peers = q;
        p->cap_peers = cap;
    }
    wpub_flight *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    atomic_init(&f->refs, 1);
    wpub_peer *q = &p->peers[p->n_peers++];
    memset(q, 0, sizeof *q);
    q->flight = f;
    q->rid = *rid;
    q->last_seen = now;
    q->complete_s = -1;
    return q;
}

/* Recount who holds the latest version; publish_to_all_s once everybody does. */
static void wpub_progress(weights_pub *p) {
    int current = 0;
    double worst = -1;
    for (int k = 0; k < p->n_peers; k++) {
        const wpub_peer *q = &p->peers[k];
        if (p->cur && q->have_version >= p->cur->version) {
            current++;
            worst = SEED_MAX(worst, q->complete_s);
        }
    }
    p->st.n_peers = p->n_peers;
    p->st.peers_current = current;
    p->st.publish_to_all_s = (p->cur && p->n_peers > 0 && current == p->n_peers) ? worst : -1;
}

static void wpub_expire(weights_pub *p, double now) {
    int w = 0;
    for (int k = 0; k < p->n_peers; k++) {
        wpub_peer *q = &p->peers[k];
        if ((now - q->last_seen) * 1000.0 > p->cfg.peer_timeout_ms) {
            /* last_seen < 0 marks a peer whose connection is gone (EHOSTUNREACH) */
            if (q->last_seen < 0)
                seed_log(SEED_LOG_INFO, "weights: receiver %s disconnected, forgotten",
                         q->id[0] ? q->id : "?");
            else
                seed_log(SEED_LOG_INFO, "weights: receiver %s silent for %.1f s, forgotten",
                         q->id[0] ? q->id : "?", now - q->last_seen);
            free(q->sent);
            wpub_flight_put(q->flight);
            continue;
        }
        p->peers[w++] = *q;
    }
    p->n_peers = w;
}

static void wpub_on_fetch(weights_pub *p, const wire_peer *from, const Seed__WeightFetch *f) {
    double now = seed_now();
    p->st.fetches++;
    wpub_peer *peer = wpub_peer_find(p, from, now);
    if (peer) {
        peer->last_seen = now;
        if (f->id && f->id[0]) snprintf(peer->id, sizeof peer->id, "%s", f->id);
    }
    const wpub_snap *s = p->cur;
    if (f->n_buckets == 0) { /* a poll: also how a receiver reports what it holds */
        if (peer && f->have_version != peer->have_version) {
            peer->have_version = f->have_version;
            peer->complete_s = (s && f->have_version == s->version) ? now - s->t_publish : -1;
        }
        if (s && (s->version > f->have_version || f->have_epoch != p->epoch))
            wpub_send_announce(p, peer, from);
        return;
    }
    if (!s) return;
    wpub_snap *h = NULL;
    for (int k = 0; k < p->n_held && !h; k++)
        if (p->held[k]->version == f->version) h = p->held[k];
    if (!h) { /* no longer served: tell it what is */
        p->st.stale_fetches++;
        wpub_send_announce(p, peer, from);
        return;
    }
    /* Per-receiver bounds (weights_pub_config): a receiver that asks for more than
     * honest flow control would is refused the excess, which it may ask for again. */
    const size_t max_req = (size_t)p->cfg.max_fetch_buckets;
    const long long max_flight = (long long)p->cfg.max_inflight_bytes;
    for (size_t k = 0; k < f->n_buckets; k++) {
        uint32_t b = f->buckets[k];
        if (b >= h->n_buckets) {
            p->st.bad_requests++;
            continue;
        }
        int dup = 0;
        for (size_t j = 0; j < k && j < max_req && !dup; j++) dup = f->buckets[j] == b;
        if (!peer || k >= max_req || dup ||
            wpub_sends(peer, h->version, b) >= p->cfg.max_bucket_sends ||
            atomic_load(&peer->flight->bytes) + (long long)wpub_len(p, h, b) > max_flight) {
            p->st.fetch_capped++;
            continue;
        }
        wpub_send_bucket(p, peer, from, h, b);
    }
}

/* Pack the announce of snapshot s (once per version). */
static int wpub_pack_announce(weights_pub *p, wpub_snap *s, char *err, size_t errlen) {
    Seed__TensorInfo *ti = calloc((size_t)s->n_tensors + 1, sizeof *ti);
    Seed__TensorInfo **tp = calloc((size_t)s->n_tensors + 1, sizeof *tp);
    if (!ti || !tp) {
        free(ti);
        free(tp);
        return seed_errf(err, errlen, "out of memory packing a weights announce");
    }
    for (int i = 0; i < s->n_tensors; i++) {
        const weights_tensor *t = &s->tensors[i];
        seed__tensor_info__init(&ti[i]);
        ti[i].name = (char *)t->name;
        ti[i].dtype = (Seed__DType)t->dtype;
        ti[i].n_shape = (size_t)t->ndim;
        ti[i].shape = (int64_t *)t->shape;
        ti[i].offset = t->offset;
        ti[i].nbytes = t->nbytes;
        tp[i] = &ti[i];
    }
    Seed__WeightAnnounce a;
    seed__weight_announce__init(&a);
    a.version = s->version;
    a.total_bytes = s->total_bytes;
    a.bucket_bytes = p->cfg.bucket_bytes;
    a.n_buckets = s->n_buckets;
    a.n_tensors = (size_t)s->n_tensors;
    a.tensors = tp;
    a.n_bucket_crc32c = s->n_buckets;
    a.bucket_crc32c = s->crc;
    a.config_json = s->config_json ? s->config_json : "";
    a.transport_dtype = (Seed__DType)p->cfg.transport_dtype;
    a.oldest_served = p->held[p->n_held - 1]->version;
    a.epoch = p->epoch;
    Seed__Envelope env;
    wire_envelope_init(&env, p->sender);
    env.body_case = SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE;
    env.weight_announce = &a;
    int rc = wire_pack(&env, p->sender, &s->announce, err, errlen);
    free(ti);
    free(tp);
    return rc;
}

/* Start serving the pending snapshot, if any: checksums and headers (older versions are
 * served meanwhile), then it joins the served list, the oldest leaves it beyond
 * keep_versions, and everyone hears the announce. */
static void wpub_adopt(weights_pub *p) {
    pthread_mutex_lock(&p->mu);
    wpub_snap *s = p->pending;
    if (s) {
        p->pending = NULL;
        s->state = SNAP_SERVED;
    }
    pthread_mutex_unlock(&p->mu);
    if (!s) return;
    if (s->cap_buckets < s->n_buckets) {
        free(s->crc);
        free(s->hdr_len);
        s->crc = malloc((size_t)s->n_buckets * sizeof *s->crc);
        s->hdr_len = malloc(s->n_buckets);
        s->cap_buckets = (s->crc && s->hdr_len) ? s->n_buckets : 0;
    }
    char err[SEED_ERRLEN];
    if (!s->cap_buckets) {
        seed_log(SEED_LOG_ERROR, "weights: out of memory starting version %" PRIu64, s->version);
        pthread_mutex_lock(&p->mu);
        s->state = SNAP_FREE;
        pthread_mutex_unlock(&p->mu);
        return;
    }
    for (uint32_t i = 0; i < s->n_buckets; i++) {
        uint8_t *d = wpub_data(p, s, i);
        size_t len = wpub_len(p, s, i);
        s->crc[i] = seed_crc32c(0, d, len);
        uint8_t h[WEIGHTS_HEADER_MAX];
        size_t hn = weights_bucket_header(h, sizeof h, p->sender, s->version, i,
                                          (uint64_t)i * p->cfg.bucket_bytes, s->crc[i], len);
        memcpy(d - hn, h, hn);
        s->hdr_len[i] = (uint8_t)hn;
    }
    pthread_mutex_lock(&p->mu);
    if (p->n_held == p->cfg.keep_versions) p->held[--p->n_held]->state = SNAP_FREE;
    memmove(p->held + 1, p->held, (size_t)p->n_held * sizeof *p->held);
    p->held[0] = s;
    p->n_held++;
    p->cur = s;
    pthread_mutex_unlock(&p->mu);
    if (wpub_pack_announce(p, s, err, sizeof err)) {
        seed_log(SEED_LOG_ERROR, "weights: version %" PRIu64 ": %s", s->version, err);
        s->announce.len = 0;
    }
    p->st.latest_version = s->version;
    p->st.versions_served++;
    for (int k = 0; k < p->n_peers; k++) {
        p->peers[k].complete_s = -1;
        wpub_send_announce(p, &p->peers[k], &p->peers[k].rid);
    }
    wpub_progress(p);
}

static void wpub_publish_stats(weights_pub *p) {
    pthread_mutex_lock(&p->mu);
    p->st.malformed =
        p->rx.c.malformed + p->rx.c.wrong_version + p->rx.c.oversized + p->rx.c.unexpected_type;
    p->st_pub = p->st;
    if (p->n_peers > p->n_peers_pub || !p->peers_pub) {
        wpub_peer_pub *q = realloc(p->peers_pub, (size_t)SEED_MAX(p->n_peers, 1) * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&p->mu);
            return;
        }
        p->peers_pub = q;
    }
    for (int k = 0; k < p->n_peers; k++) {
        const wpub_peer *s = &p->peers[k];
        weights_peer_info *d = &p->peers_pub[k].info;
        memcpy(d->id, s->id, sizeof d->id);
        d->have_version = s->have_version;
        d->buckets_sent = s->buckets_sent;
        d->bytes_sent = s->bytes_sent;
        d->buckets_resent = s->buckets_resent;
        d->complete_s = s->complete_s;
        p->peers_pub[k].last_seen = s->last_seen;
    }
    p->n_peers_pub = p->n_peers;
    pthread_mutex_unlock(&p->mu);
}

static void *wpub_main(void *arg) {
    weights_pub *p = arg;
    zmq_pollitem_t items[2] = {{p->router, 0, ZMQ_POLLIN, 0}, {p->wake_rx, 0, ZMQ_POLLIN, 0}};
    char err[SEED_ERRLEN];
    while (!atomic_load(&p->stop)) {
        if (zmq_poll(items, 2, 200) < 0) {
            if (errno == ETERM) break;
            continue;
        }
        if (items[1].revents & ZMQ_POLLIN) {
            char b[8];
            while (zmq_recv(p->wake_rx, b, sizeof b, ZMQ_DONTWAIT) >= 0) {
            }
        }
        wpub_adopt(p);
        for (int k = 0; k < WPUB_BATCH; k++) {
            Seed__Envelope *env = NULL;
            int rc = wire_recv(&p->rx, p->router, &env, ZMQ_DONTWAIT, err, sizeof err);
            if (rc < 0) {
                if (rc == WIRE_TERM) goto out;
                break;
            }
            if (rc == 1) {
                if (env->body_case == SEED__ENVELOPE__BODY_WEIGHT_FETCH)
                    wpub_on_fetch(p, &p->rx.from, env->weight_fetch);
                wire_free(env);
            }
            int ev = 0;
            size_t evn = sizeof ev;
            if (zmq_getsockopt(p->router, ZMQ_EVENTS, &ev, &evn) != 0 || !(ev & ZMQ_POLLIN)) break;
        }
        double now = seed_now();
        if (now - p->last_expire > 0.5) {
            wpub_expire(p, now);
            p->last_expire = now;
        }
        wpub_progress(p);
        wpub_publish_stats(p);
    }
out:
    return NULL;
}

int weights_pub_create(weights_pub **out, const weights_pub_config *cfg, char *err, size_t errlen) {
    *out = NULL;
    if (!cfg || !cfg->endpoint || !cfg->endpoint[0])
        return seed_errf(err, errlen, "weights publisher: no endpoint to bind");
    const char *sender = cfg->sender ? cfg->sender : "";
    if (strlen(sender) >= WEIGHTS_ID_MAX)
        return seed_errf(err, errlen, "weights publisher: sender \"%s\" is longer than %d bytes",
                         sender, WEIGHTS_ID_MAX - 1);
    if (cfg->bucket_bytes < WEIGHTS_MIN_BUCKET_BYTES || cfg->bucket_bytes % 64 ||
        cfg->bucket_bytes > ((uint32_t)1 << 30))
        return seed_errf(err, errlen,
                         "weights publisher: bucket_bytes = %" PRIu32
                         ", expected a multiple of 64 in [%" PRIu32 ", 1 GiB]",
                         cfg->bucket_bytes, WEIGHTS_MIN_BUCKET_BYTES);
    if (cfg->transport_dtype != WEIGHTS_F32 && cfg->transport_dtype != WEIGHTS_BF16)
        return seed_errf(err, errlen,
                         "weights publisher: transport_dtype = %d, expected F32 (0) or BF16 (1)",
                         (int)cfg->transport_dtype);
    if (cfg->io_threads < 1 || cfg->io_threads > 64)
        return seed_errf(err, errlen, "weights publisher: io_threads = %d, expected 1..64",
                         cfg->io_threads);
    if (cfg->keep_versions < 1 || cfg->keep_versions > WPUB_MAX_KEEP)
        return seed_errf(err, errlen, "weights publisher: keep_versions = %d, expected 1..%d",
                         cfg->keep_versions, WPUB_MAX_KEEP);
    if (cfg->peer_timeout_ms <= 0 || cfg->max_peers <= 0)
        return seed_errf(err, errlen,
                         "weights publisher: peer_timeout_ms = %d and max_peers = %d must be > 0",
                         cfg->peer_timeout_ms, cfg->max_peers);
    if (cfg->max_fetch_buckets < 1 || cfg->max_bucket_sends < 1 ||
        (cfg->max_inflight_bytes && cfg->max_inflight_bytes < cfg->bucket_bytes))
        return seed_errf(err, errlen,
                         "weights publisher: max_fetch_buckets = %d and max_bucket_sends = %d "
                         "must be >= 1, max_inflight_bytes = %" PRIu64
                         " 0 or at least one bucket (%" PRIu32 ")",
                         cfg->max_fetch_buckets, cfg->max_bucket_sends, cfg->max_inflight_bytes,
                         cfg->bucket_bytes);
    weights_pub *p = calloc(1, sizeof *p);
    if (!p) return seed_errf(err, errlen, "weights publisher: out of memory");
    p->cfg = *cfg;
    p->cfg.sockopts = NULL;
    if (!p->cfg.max_inflight_bytes)
        p->cfg.max_inflight_bytes = 16 * (uint64_t)(WEIGHTS_HEADER_MAX + cfg->bucket_bytes);
    snprintf(p->sender, sizeof p->sender, "%s", sender);
    p->stride = WEIGHTS_HEADER_MAX + (size_t)cfg->bucket_bytes;
    /* a fresh epoch per publisher instance: wall time and pid, never 0 */
    p->epoch = seed_hash_mix((uint64_t)(seed_wall() * 1e9), (uint64_t)getpid()) | 1u;
    pthread_mutex_init(&p->mu, NULL);
    seed_crc32c(0, "", 0); /* build the CRC table before any thread races to */
    p->ctx = zmq_ctx_new();
    if (!p->ctx || zmq_ctx_set(p->ctx, ZMQ_IO_THREADS, cfg->io_threads) != 0) {
        seed_errf(err, errlen, "weights publisher: cannot create a ZeroMQ context: %s",
                  zmq_strerror(errno));
        goto fail;
    }
    if (cfg->ctx_init && cfg->ctx_init(p->ctx, cfg->ctx_arg, err, errlen)) goto fail;
    wire_sockopts o;
    if (cfg->sockopts)
        o = *cfg->sockopts;
    else {
        wire_sockopts_init(&o);
        o.max_msg_bytes = WPUB_FETCH_MAX;
    }
    p->router = wire_socket(p->ctx, ZMQ_ROUTER, &o, err, errlen);
    if (!p->router) goto fail;
    int one = 1;
    if (zmq_setsockopt(p->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one) != 0) {
        seed_errf(err, errlen, "weights publisher: ZMQ_ROUTER_MANDATORY: %s", zmq_strerror(errno));
        goto fail;
    }
    if (wire_bind(p->router, cfg->endpoint, p->endpoint, sizeof p->endpoint, err, errlen))
        goto fail;
    char wake[64];
    snprintf(wake, sizeof wake, "inproc://seed-weights-wake-%p", (void *)p);
    p->wake_rx = zmq_socket(p->ctx, ZMQ_PAIR);
    p->wake_tx = zmq_socket(p->ctx, ZMQ_PAIR);
    if (!p->wake_rx || !p->wake_tx || zmq_bind(p->wake_rx, wake) != 0 ||
        zmq_connect(p->wake_tx, wake) != 0) {
        seed_errf(err, errlen, "weights publisher: inproc wake socket: %s", zmq_strerror(errno));
        goto fail;
    }
    int zero = 0;
    zmq_setsockopt(p->wake_tx, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(p->wake_rx, ZMQ_LINGER, &zero, sizeof zero);
    size_t maxb = o.max_msg_bytes > 0 ? (size_t)o.max_msg_bytes : (size_t)WPUB_FETCH_MAX;
    wire_rx_init(&p->rx, "weights", WIRE_ACCEPT(SEED__ENVELOPE__BODY_WEIGHT_FETCH), maxb, 1);
    p->st.publish_to_all_s = -1;
    p->st_pub.publish_to_all_s = -1;
    p->last_expire = seed_now();
    if (pthread_create(&p->thread, NULL, wpub_main, p) != 0) {
        seed_errf(err, errlen, "weights publisher: cannot start its thread");
        goto fail;
    }
    p->started = 1;
    *out = p;
    return 0;
fail:
    weights_pub_free(p);
    return -1;
}

const char *weights_pub_endpoint(const weights_pub *p) {
    return p->endpoint;
}

/* A FREE snapshot no frame references, preferring one big enough; NULL when all are busy.
 * Memory of surplus free snapshots is returned. Under p->mu. */
static wpub_snap *wpub_take_snap(weights_pub *p, size_t need) {
    wpub_snap *best = NULL;
    for (int k = 0; k < p->n_snaps; k++) {
        wpub_snap *s = p->snaps[k];
        if (s->state != SNAP_FREE || atomic_load(&s->refs) != 0) continue;
        if (!best || (s->cap >= need && best->cap < need)) best = s;
    }
    if (!best && p->n_snaps < WPUB_MAX_SNAPS) {
        best = calloc(1, sizeof *best);
        if (best) p->snaps[p->n_snaps++] = best;
    }
    if (best) best->state = SNAP_WRITING;
    int kept = 0;
    for (int k = 0; k < p->n_snaps; k++) {
        wpub_snap *s = p->snaps[k];
        if (!s->mem) continue;
        if (++kept > p->cfg.keep_versions + 1 && s->state == SNAP_FREE &&
            atomic_load(&s->refs) == 0) {
            free(s->mem);
            s->mem = NULL;
            s->cap = 0;
            kept--;
        }
    }
    return best;
}

int weights_pub_publish(weights_pub *p, uint64_t version, const void *blob, size_t nbytes,
                        const weights_tensor *tensors, int n_tensors, const char *config_json,
                        char *err, size_t errlen) {
    double t0 = seed_now();
    if (version == 0 || version <= p->last_version)
        return seed_errf(err, errlen,
                         "weights publish: version %" PRIu64 " is not above the last one (%" PRIu64
                         ")",
                         version, p->last_version);
    if (!blob || nbytes == 0)
        return seed_errf(err, errlen, "weights publish: version %" PRIu64 " has an empty blob",
                         version);
    if (weights_table_validate(tensors, n_tensors, nbytes, err, errlen)) return -1;
    int bf16 = p->cfg.transport_dtype == WEIGHTS_BF16;
    if (bf16) {
        if (nbytes % 4)
            return seed_errf(err, errlen,
                             "weights publish: bf16 transport needs an fp32 blob, but %zu bytes "
                             "is not a whole number of floats",
                             nbytes);
        for (int i = 0; i < n_tensors; i++)
            if (tensors[i].dtype != WEIGHTS_F32)
                return seed_errf(err, errlen,
                                 "weights publish: bf16 transport needs fp32 tensors, but %s is %s",
                                 tensors[i].name, weights_dtype_name(tensors[i].dtype));
    }
    uint64_t transport = bf16 ? nbytes / 2 : nbytes;
    uint64_t nb = (transport + p->cfg.bucket_bytes - 1) / p->cfg.bucket_bytes;
    if (nb > UINT32_MAX / 2)
        return seed_errf(err, errlen, "weights publish: %zu bytes make too many buckets", nbytes);
    size_t need = (size_t)nb * p->stride;

    pthread_mutex_lock(&p->mu);
    wpub_snap *s = wpub_take_snap(p, need);
    pthread_mutex_unlock(&p->mu);
    if (!s)
        return seed_errf(err, errlen,
                         "weights publish: all %d buffers are still held by sends in flight; "
                         "version %" PRIu64 " not published",
                         WPUB_MAX_SNAPS, version);
    if (s->cap < need) {
        free(s->mem);
        s->mem = weights_alloc(need);
        s->cap = s->mem ? need : 0;
    }
    if (!s->mem || weights_copy_table(&s->tensors, &s->cap_tensors, tensors, n_tensors) ||
        weights_copy_str(&s->config_json, &s->cap_json, config_json)) {
        pthread_mutex_lock(&p->mu);
        s->state = SNAP_FREE;
        pthread_mutex_unlock(&p->mu);
        return seed_errf(err, errlen, "weights publish: out of memory for %zu bytes", need);
    }
    s->version = version;
    s->total_bytes = nbytes;
    s->transport_bytes = transport;
    s->n_buckets = (uint32_t)nb;
    s->n_tensors = n_tensors;
    s->t_publish = t0;
    const uint8_t *src = blob;
    for (uint32_t i = 0; i < s->n_buckets; i++) {
        size_t len = wpub_len(p, s, i);
        if (bf16)
            weights_narrow(wpub_data(p, s, i), src + (size_t)i * p->cfg.bucket_bytes * 2, len / 2);
        else
            memcpy(wpub_data(p, s, i), src + (size_t)i * p->cfg.bucket_bytes, len);
    }
    pthread_mutex_lock(&p->mu);
    if (p->pending) p->pending->state = SNAP_FREE; /* superseded before it was served */
    p->pending = s;
    s->state = SNAP_PENDING;
    p->last_version = version;
    p->n_published++;
    pthread_mutex_unlock(&p->mu);
    zmq_send(p->wake_tx, "", 0, ZMQ_DONTWAIT);
    return 0;
}

void weights_pub_stats_get(weights_pub *p, weights_pub_stats *out) {
    pthread_mutex_lock(&p->mu);
    *out = p->st_pub;
    out->versions_published = p->n_published;
    pthread_mutex_unlock(&p->mu);
}

int weights_pub_peers(weights_pub *p, weights_peer_info *out, int max) {
    double now = seed_now();
    pthread_mutex_lock(&p->mu);
    int n = SEED_MIN(max, p->n_peers_pub);
    for (int k = 0; k < n; k++) {
        out[k] = p->peers_pub[k].info;
        out[k].idle_s = now - p->peers_pub[k].last_seen;
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

void weights_pub_test_corrupt(weights_pub *p, int n) {
    atomic_fetch_add(&p->corrupt, n);
}

void weights_pub_free(weights_pub *p) {
    if (!p) return;
    if (p->started) {
        atomic_store(&p->stop, 1);
        if (p->wake_tx) zmq_send(p->wake_tx, "", 0, ZMQ_DONTWAIT);
        pthread_join(p->thread, NULL);
    }
    if (p->router) wire_close(p->router);
    if (p->wake_tx) zmq_close(p->wake_tx);
    if (p->wake_rx) zmq_close(p->wake_rx);
    if (p->ctx) zmq_ctx_term(p->ctx); /* frees every frame still queued: refs drop to 0 */
    for (int k = 0; k < p->n_snaps; k++) wpub_snap_free(p->snaps[k]);
    for (int k = 0; k < p->n_peers; k++) {
        free(p->peers[k].sent);
        wpub_flight_put(p->peers[k].flight); /* after zmq_ctx_term: no frame holds it now */
    }
    free(p->peers);
    free(p->peers_pub);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
