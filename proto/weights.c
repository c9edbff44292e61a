/* weights.c — the weight broadcast of weights.h: a publisher thread serving the latest
 * version from a ROUTER socket, and receiver threads pulling it over DEALER sockets.
 *
 * Publisher buffers. Each published version lives in a "snapshot": the blob cut into
 * buckets, each bucket preceded by WEIGHTS_HEADER_MAX reserved bytes where the serving
 * thread writes that bucket's Envelope header once, so a bucket goes out as one
 * zero-copy frame (zmq_msg_init_data) to any number of receivers. A snapshot is FREE,
 * WRITING (publish is copying into it), PENDING (complete, not yet served) or CURRENT
 * (served); `refs` counts frames ZeroMQ still holds, and only a FREE snapshot with no
 * refs is written again. So publish never waits for the network: it takes a free
 * snapshot (allocating one when every other is pinned by frames in flight) and copies.
 *
 * Receiver buffers. Three slots: staging (the thread assembles into it), ready (the
 * newest complete version), taken (the caller's). They change roles under a mutex, so a
 * taken view is never written while the caller holds it. */
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

#define WPUB_MAX_SNAPS 16
#define WPUB_MAX_KEEP 4
#define WPUB_FETCH_MAX ((int64_t)1 << 20)
#define WPUB_BATCH 256               /* messages handled before looking at the wake socket again */
#define WRX_CHUNK ((size_t)64 << 10) /* copy + CRC granularity: stays in L2 */
#define WRX_TICK_MS 50

/* ---- tensor tables ------------------------------------------------------------------ */

static size_t weights_dtype_size(weights_dtype d) {
    switch (d) {
    case WEIGHTS_F32:
        return 4;
    case WEIGHTS_BF16:
    case WEIGHTS_F16:
        return 2;
    }
    return 0;
}

static const char *weights_dtype_name(weights_dtype d) {
    switch (d) {
    case WEIGHTS_F32:
        return "F32";
    case WEIGHTS_BF16:
        return "BF16";
    case WEIGHTS_F16:
        return "F16";
    }
    return "?";
}

static void weights_shape_str(const weights_tensor *t, char *out, size_t n) {
    size_t k = (size_t)snprintf(out, n, "[");
    for (int d = 0; d < t->ndim && k < n; d++)
        k += (size_t)snprintf(out + k, n - k, "%s%" PRId64, d ? ", " : "", t->shape[d]);
    if (k < n) snprintf(out + k, n - k, "]");
}

int weights_table_validate(const weights_tensor *t, int n, uint64_t blob_bytes, char *err,
                           size_t errlen) {
    if (n < 0 || (n > 0 && !t))
        return seed_errf(err, errlen, "weights table: %d tensors and no table", n);
    for (int i = 0; i < n; i++) {
        const weights_tensor *x = &t[i];
        if (!memchr(x->name, 0, sizeof x->name) || !x->name[0])
            return seed_errf(err, errlen,
                             "weights table: tensor %d has an empty or unterminated "
                             "name",
                             i);
        size_t es = weights_dtype_size(x->dtype);
        if (!es)
            return seed_errf(err, errlen, "weights table: tensor %s has unknown dtype %d", x->name,
                             (int)x->dtype);
        if (x->ndim < 0 || x->ndim > WEIGHTS_MAX_DIMS)
            return seed_errf(err, errlen, "weights table: tensor %s has %d dims (at most %d)",
                             x->name, x->ndim, WEIGHTS_MAX_DIMS);
        uint64_t numel = 1;
        for (int d = 0; d < x->ndim; d++) {
            if (x->shape[d] < 0 ||
                (x->shape[d] > 0 && numel > UINT64_MAX / 8 / (uint64_t)x->shape[d]))
                return seed_errf(err, errlen,
                                 "weights table: tensor %s has a bad dimension %d "
                                 "(%" PRId64 ")",
                                 x->name, d, x->shape[d]);
            numel *= (uint64_t)x->shape[d];
        }
        if (x->nbytes != numel * es)
            return seed_errf(err, errlen,
                             "weights table: tensor %s has nbytes %" PRIu64 " but %" PRIu64
                             " %s elements take %" PRIu64,
                             x->name, x->nbytes, numel, weights_dtype_name(x->dtype), numel * es);
        if (x->offset > blob_bytes || x->nbytes > blob_bytes - x->offset)
            return seed_errf(err, errlen,
                             "weights table: tensor %s [%" PRIu64 ", +%" PRIu64
                             ") lies outside the %" PRIu64 "-byte blob",
                             x->name, x->offset, x->nbytes, blob_bytes);
    }
    return 0;
}

int weights_table_check(const weights_tensor *expect, int n_expect, const weights_tensor *got,
                        int n_got, char *err, size_t errlen) {
    for (int i = 0; i < n_expect && i < n_got; i++) {
        const weights_tensor *e = &expect[i], *g = &got[i];
        if (strcmp(e->name, g->name) != 0)
            return seed_errf(err, errlen,
                             "weights table mismatch: tensor %d is %s on the publisher but %s in "
                             "this model",
                             i, g->name, e->name);
        int same_shape = e->ndim == g->ndim;
        for (int d = 0; same_shape && d < e->ndim; d++) same_shape = e->shape[d] == g->shape[d];
        if (!same_shape) {
            char a[160], b[160];
            weights_shape_str(g, a, sizeof a);
            weights_shape_str(e, b, sizeof b);
            return seed_errf(err, errlen,
                             "weights table mismatch: tensor %s has shape %s on the publisher but "
                             "%s in this model",
                             e->name, a, b);
        }
        if (e->dtype != g->dtype)
            return seed_errf(err, errlen,
                             "weights table mismatch: tensor %s is %s on the publisher but %s in "
                             "this model",
                             e->name, weights_dtype_name(g->dtype), weights_dtype_name(e->dtype));
        if (e->offset != g->offset || e->nbytes != g->nbytes)
            return seed_errf(err, errlen,
                             "weights table mismatch: tensor %s is at [%" PRIu64 ", +%" PRIu64
                             ") on the publisher but [%" PRIu64 ", +%" PRIu64 ") in this model",
                             e->name, g->offset, g->nbytes, e->offset, e->nbytes);
    }
    if (n_expect != n_got)
        return seed_errf(err, errlen,
                         "weights table mismatch: the publisher has %d tensors, this model %d "
                         "(first unmatched: %s)",
                         n_got, n_expect,
                         n_got > n_expect ? got[n_expect].name : expect[n_got].name);
    return 0;
}

/* ---- bucket wire format --------------------------------------------------------------- */

static size_t wb_put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static size_t wb_varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t weights_bucket_header(uint8_t *out, size_t cap, const char *sender, uint64_t version,
                             uint32_t index, uint64_t offset, uint32_t crc32c, size_t data_len) {
    size_t sl = sender ? strlen(sender) : 0;
    if (sl >= WEIGHTS_ID_MAX) return 0;
    /* WeightBucket fields before the data: version 1, index 2, offset 3, crc32c 5, data 4. */
    uint8_t body[64];
    size_t bn = 0;
    body[bn++] = 0x08;
    bn += wb_put_varint(body + bn, version);
    body[bn++] = 0x10;
    bn += wb_put_varint(body + bn, index);
    body[bn++] = 0x18;
    bn += wb_put_varint(body + bn, offset);
    body[bn++] = 0x28;
    bn += wb_put_varint(body + bn, crc32c);
    body[bn++] = 0x22;
    bn += wb_put_varint(body + bn, data_len);
    uint64_t body_len = bn + data_len;
    size_t need = 1 + wb_varint_len(SEED_SCHEMA_VERSION) + (sl ? 1 + wb_varint_len(sl) + sl : 0) +
                  1 + wb_varint_len(body_len) + bn;
    if (need > cap) return 0;
    size_t k = 0;
    out[k++] = 0x08; /* Envelope.schema */
    k += wb_put_varint(out + k, SEED_SCHEMA_VERSION);
    if (sl) {
        out[k++] = 0x12; /* Envelope.sender */
        k += wb_put_varint(out + k, sl);
        memcpy(out + k, sender, sl);
        k += sl;
    }
    out[k++] = 0x7a; /* Envelope.weight_bucket = 15, length-delimited */
    k += wb_put_varint(out + k, body_len);
    memcpy(out + k, body, bn);
    return k + bn;
}

static int wb_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t r = 0;
    for (int s = 0; s < 64; s += 7) {
        if (*p >= end) return 0;
        uint8_t b = *(*p)++;
        if (s == 63 && b > 1) return 0;
        r |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

/* A length-delimited field's length, checked against what is left. */
static int wb_get_len(const uint8_t **p, const uint8_t *end, uint64_t *l) {
    return wb_get_varint(p, end, l) && *l <= (uint64_t)(end - *p);
}

int weights_bucket_parse(const void *msg, size_t len, weights_bucket_ref *out) {
    memset(out, 0, sizeof *out);
    const uint8_t *p = msg, *end = p + len, *body = NULL;
    uint64_t v, l, blen = 0;
    unsigned seen = 0;
    while (p < end) {
        uint64_t key;
        if (!wb_get_varint(&p, end, &key)) return 0;
        if (key == 0x08) { /* schema */
            if ((seen & 1) || !wb_get_varint(&p, end, &v) || v > UINT32_MAX) return 0;
            out->schema = (uint32_t)v;
            seen |= 1;
        } else if (key == 0x12) { /* sender */
            if ((seen & 2) || !wb_get_len(&p, end, &l)) return 0;
            p += l;
            seen |= 2;
        } else if (key == 0x7a) { /* weight_bucket */
            if ((seen & 4) || !wb_get_len(&p, end, &blen)) return 0;
            body = p;
            p += blen;
            seen |= 4;
        } else {
            return 0;
        }
    }
    if (!body) return 0;
    p = body;
    end = body + blen;
    seen = 0;
    while (p < end) {
        uint64_t key;
        if (!wb_get_varint(&p, end, &key) || key > 0x28) return 0;
        unsigned bit = 1u << (key >> 3);
        if (seen & bit) return 0;
        seen |= bit;
        if (key == 0x22) { /* data */
            if (!wb_get_len(&p, end, &l)) return 0;
            out->data = p;
            out->len = (size_t)l;
            p += l;
            continue;
        }
        if ((key & 7) != 0 || !wb_get_varint(&p, end, &v)) return 0;
        switch (key >> 3) {
        case 1:
            out->version = v;
            break;
        case 2:
            if (v > UINT32_MAX) return 0;
            out->index = (uint32_t)v;
            break;
        case 3:
            out->offset = v;
            break;
        case 5:
            if (v > UINT32_MAX) return 0;
            out->crc32c = (uint32_t)v;
            break;
        default:
            return 0;
        }
    }
    return 1;
}

/* ---- bf16 transport -------------------------------------------------------------------- */

/* n fp32 words at src -> n little-endian bf16 at dst. */
static void wb_narrow(uint8_t *dst, const uint8_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + 4 * i, 4);
        uint16_t h = seed_bf16_from_bits(u);
        dst[2 * i] = (uint8_t)h;
        dst[2 * i + 1] = (uint8_t)(h >> 8);
    }
}

static void wb_widen(uint8_t *dst, const uint8_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = ((uint32_t)src[2 * i] | (uint32_t)src[2 * i + 1] << 8) << 16;
        memcpy(dst + 4 * i, &u, 4);
    }
}

/* ---- small helpers ---------------------------------------------------------------------- */

static void *wb_alloc(size_t n) {
    size_t r = (n + 63) & ~(size_t)63;
    return aligned_alloc(64, r ? r : 64);
}

/* Copy a table and a config string into growable storage. */
static int wb_copy_table(weights_tensor **dst, int *cap, const weights_tensor *src, int n) {
    if (n > *cap) {
        weights_tensor *t = realloc(*dst, (size_t)n * sizeof *t);
        if (!t) return -1;
        *dst = t;
        *cap = n;
    }
    if (n) memcpy(*dst, src, (size_t)n * sizeof *src);
    return 0;
}

static int wb_copy_str(char **dst, size_t *cap, const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    if (n > *cap) {
        char *d = realloc(*dst, n);
        if (!d) return -1;
        *dst = d;
        *cap = n;
    }
    memcpy(*dst, s ? s : "", n);
    return 0;
}

static void wb_deadline(struct timespec *ts, int ms) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int wb_cond_init(pthread_cond_t *cv) {
    pthread_condattr_t a;
    if (pthread_condattr_init(&a)) return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc ? -1 : 0;
}

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
        s->mem = wb_alloc(need);
        s->cap = s->mem ? need : 0;
    }
    if (!s->mem || wb_copy_table(&s->tensors, &s->cap_tensors, tensors, n_tensors) ||
        wb_copy_str(&s->config_json, &s->cap_json, config_json)) {
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
            wb_narrow(wpub_data(p, s, i), src + (size_t)i * p->cfg.bucket_bytes * 2, len / 2);
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

int weights_announce_parse(const Seed__WeightAnnounce *a, int64_t max_msg_bytes,
                           weights_tensor **table, int *cap, int *n_out, char *why, size_t whylen) {
    uint64_t v = a->version;
    if (a->transport_dtype != SEED__DTYPE__DTYPE_F32 &&
        a->transport_dtype != SEED__DTYPE__DTYPE_BF16)
        return seed_errf(why, whylen, "version %" PRIu64 ": unsupported transport dtype %d", v,
                         (int)a->transport_dtype);
    int bf16 = a->transport_dtype == SEED__DTYPE__DTYPE_BF16;
    if (a->total_bytes == 0 || a->bucket_bytes == 0 ||
        (bf16 && (a->total_bytes % 4 || a->bucket_bytes % 2)))
        return seed_errf(why, whylen,
                         "version %" PRIu64 ": bad layout (total_bytes %" PRIu64
                         ", bucket_bytes %" PRIu32 ")",
                         v, a->total_bytes, a->bucket_bytes);
    uint64_t transport = bf16 ? a->total_bytes / 2 : a->total_bytes;
    uint64_t nb = (transport + a->bucket_bytes - 1) / a->bucket_bytes;
    if (nb != a->n_buckets || a->n_bucket_crc32c != nb)
        return seed_errf(why, whylen,
                         "version %" PRIu64 ": %" PRIu64 " transport bytes in buckets of %" PRIu32
                         " make %" PRIu64 " buckets, the announce says %" PRIu32
                         " with %zu checksums",
                         v, transport, a->bucket_bytes, nb, a->n_buckets, a->n_bucket_crc32c);
    if ((int64_t)a->bucket_bytes + WEIGHTS_HEADER_MAX > max_msg_bytes)
        return seed_errf(why, whylen,
                         "version %" PRIu64 ": buckets of %" PRIu32
                         " bytes exceed this receiver's max_msg_bytes (%" PRId64 ")",
                         v, a->bucket_bytes, max_msg_bytes);
    if (a->n_tensors > (size_t)INT32_MAX / 2)
        return seed_errf(why, whylen, "version %" PRIu64 ": too many tensors", v);
    int n = (int)a->n_tensors;
    if (n > *cap) {
        weights_tensor *t = realloc(*table, (size_t)n * sizeof *t);
        if (!t) return seed_errf(why, whylen, "out of memory for %d tensors", n);
        *table = t;
        *cap = n;
    }
    for (int i = 0; i < n; i++) {
        const Seed__TensorInfo *ti = a->tensors[i];
        weights_tensor *t = &(*table)[i];
        memset(t, 0, sizeof *t);
        const char *name = ti->name ? ti->name : "";
        if (strlen(name) >= WEIGHTS_NAME_MAX)
            return seed_errf(why, whylen, "version %" PRIu64 ": tensor name %.60s... is too long",
                             v, name);
        if (ti->n_shape > WEIGHTS_MAX_DIMS)
            return seed_errf(why, whylen, "version %" PRIu64 ": tensor %s has %zu dims", v, name,
                             ti->n_shape);
        snprintf(t->name, sizeof t->name, "%s", name);
        t->dtype = (weights_dtype)ti->dtype;
        t->ndim = (int)ti->n_shape;
        for (size_t d = 0; d < ti->n_shape; d++) t->shape[d] = ti->shape[d];
        t->offset = ti->offset;
        t->nbytes = ti->nbytes;
    }
    if (weights_table_validate(*table, n, a->total_bytes, why, whylen)) return -1;
    *n_out = n;
    return 0;
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
        s->mem = wb_alloc(a->total_bytes);
        s->cap = s->mem ? a->total_bytes : 0;
    }
    if (!rx->t_cap || !s->mem ||
        wb_copy_table(&s->tensors, &s->cap_tensors, rx->tmp, (int)a->n_tensors) ||
        wb_copy_str(&s->config_json, &s->cap_json, a->config_json)) {
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
            wb_widen(blob + 2 * (b->offset + k), b->data + k, n / 2);
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
    if (wb_cond_init(&rx->cv)) {
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
    wb_deadline(&dl, SEED_MAX(timeout_ms, 0));
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
