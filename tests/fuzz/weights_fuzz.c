/* weights_fuzz.c — libFuzzer target: what a weights receiver does with a message from the
 * publisher's socket (proto/weights_rx.c, wrx_on_message): the in-place bucket parser
 * (weights_bucket_parse) first, protobuf-c otherwise (wire_decode), and for an announce
 * the receiver's check and table conversion (weights_announce_parse).
 * Invariants: a bucket the in-place parser takes points inside the message and agrees
 * field by field with protobuf-c's decoding of the same bytes; an accepted announce has
 * a bucket layout that covers its transport bytes exactly and a table inside the blob. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/weights.h"
#include "proto/wire.h"

static void fuzz_fail(const char *what) {
    fprintf(stderr, "weights_fuzz: invariant broken: %s\n", what);
    abort();
}

static void check_announce(const Seed__WeightAnnounce *a) {
    static weights_tensor *table;
    static int cap;
    int n = -1;
    char why[256];
    /* the receiver's default max_msg_bytes (weights_rx_config_init) */
    const int64_t max_msg = ((int64_t)64 << 20) + ((int64_t)1 << 20);
    if (weights_announce_parse(a, max_msg, &table, &cap, &n, why, sizeof why) != 0) return;
    uint64_t transport =
        a->transport_dtype == SEED__DTYPE__DTYPE_BF16 ? a->total_bytes / 2 : a->total_bytes;
    if (a->n_buckets == 0 || a->n_bucket_crc32c != a->n_buckets)
        fuzz_fail("an accepted announce has no buckets or not one checksum per bucket");
    /* bucket i covers [i * bb, min((i + 1) * bb, transport)): the last one is not empty */
    if ((uint64_t)(a->n_buckets - 1) * a->bucket_bytes >= transport ||
        (uint64_t)a->n_buckets * a->bucket_bytes < transport)
        fuzz_fail("an accepted announce's buckets do not cover its transport bytes");
    if (n != (int)a->n_tensors) fuzz_fail("the table count differs from the announce's");
    for (int i = 0; i < n; i++)
        if (table[i].offset > a->total_bytes || table[i].nbytes > a->total_bytes - table[i].offset)
            fuzz_fail("an accepted tensor lies outside the blob");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static wire_rx rx;
    static int ready;
    if (!ready) {
        seed_log_set_level(-1);
        ready = 1;
    }
    /* as the receiver's socket: every body type is decoded, only these are used */
    wire_rx_init(&rx, "weights",
                 WIRE_ACCEPT(SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE) |
                     WIRE_ACCEPT(SEED__ENVELOPE__BODY_WEIGHT_BUCKET),
                 0, 0);
    weights_bucket_ref b;
    int plain = weights_bucket_parse(data, size, &b);
    Seed__Envelope *env = NULL;
    int rc = wire_decode(&rx, data, size, "fuzz", &env);
    if (plain == 1) {
        /* an empty data field leaves data NULL: nothing is read through it */
        if (b.len > size || (b.len && (b.data < data || b.data + b.len > data + size)))
            fuzz_fail("a parsed bucket's data lies outside the message");
        /* the in-place parser takes only the plain shape: protobuf-c reads it the same */
        if (b.schema == SEED_SCHEMA_VERSION) {
            if (rc != 1 || env->body_case != SEED__ENVELOPE__BODY_WEIGHT_BUCKET)
                fuzz_fail("a bucket the in-place parser takes does not decode with protobuf-c");
            const Seed__WeightBucket *w = env->weight_bucket;
            if (w->version != b.version || w->index != b.index || w->offset != b.offset ||
                w->crc32c != b.crc32c || w->data.len != b.len ||
                (b.len && memcmp(w->data.data, b.data, b.len) != 0))
                fuzz_fail("the in-place bucket parser and protobuf-c disagree");
        }
    }
    if (rc == 1 && env->body_case == SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE)
        check_announce(env->weight_announce);
    wire_free(env);
    return 0;
}
