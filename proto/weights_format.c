/* weights_format.c — what weights.h's publisher and receiver agree on: tensor tables and
 * their checks, the bucket frame (a hand-packed Envelope header before the payload, parsed
 * without copying), the bf16 transport (common/bf16.h's rounding), the announce's checks,
 * and the small allocation and timing helpers both threads use (weights_internal.h). */
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

const char *weights_dtype_name(weights_dtype d) {
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
void weights_narrow(uint8_t *dst, const uint8_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + 4 * i, 4);
        uint16_t h = seed_bf16_from_bits(u);
        dst[2 * i] = (uint8_t)h;
        dst[2 * i + 1] = (uint8_t)(h >> 8);
    }
}

void weights_widen(uint8_t *dst, const uint8_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = ((uint32_t)src[2 * i] | (uint32_t)src[2 * i + 1] << 8) << 16;
        memcpy(dst + 4 * i, &u, 4);
    }
}

/* ---- small helpers ---------------------------------------------------------------------- */

void *weights_alloc(size_t n) {
    size_t r = (n + 63) & ~(size_t)63;
    return aligned_alloc(64, r ? r : 64);
}

/* Copy a table and a config string into growable storage. */
int weights_copy_table(weights_tensor **dst, int *cap, const weights_tensor *src, int n) {
    if (n > *cap) {
        weights_tensor *t = realloc(*dst, (size_t)n * sizeof *t);
        if (!t) return -1;
        *dst = t;
        *cap = n;
    }
    if (n) memcpy(*dst, src, (size_t)n * sizeof *src);
    return 0;
}

int weights_copy_str(char **dst, size_t *cap, const char *s) {
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

void weights_deadline(struct timespec *ts, int ms) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int weights_cond_init(pthread_cond_t *cv) {
    pthread_condattr_t a;
    if (pthread_condattr_init(&a)) return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc ? -1 : 0;
}

/* ---- announce ---------------------------------------------------------------------- */

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
