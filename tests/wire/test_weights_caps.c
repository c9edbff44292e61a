/* test_weights_caps.c — what one receiver can claim from the weights publisher
 * (proto/weights.h: max_fetch_buckets, max_bucket_sends, max_inflight_bytes).
 *
 * Checks, with a raw DEALER client on loopback TCP:
 *  - one WeightFetch listing every bucket 2000 times is answered with each bucket once
 *    (duplicates and entries past the per-request bound are refused and counted);
 *  - asked again and again, a receiver gets each bucket of a version at most
 *    max_bucket_sends times, then nothing more of that version;
 *  - a receiver that does not read is handed at most max_inflight_bytes of buckets: 50
 *    requests for everything leave at most a few buckets queued for it, not 200.
 * Before these bounds a one-window request returned gigabytes. Counts are exact where the
 * client reads each reply before asking again; the non-reading case allows the frames the
 * kernel and the client's own queue absorb (a few), against 200 without the bound. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/util.h"
#include "proto/weights.h"
#include "proto/wire.h"

#include "tests/check.h"

#define BUCKET ((uint32_t)4 << 20)
#define NBUCKETS 4

static uint8_t *g_blob;
static size_t g_nbytes;

static weights_pub *make_pub(int max_sends, uint64_t max_inflight, const wire_sockopts *o) {
    weights_pub_config c;
    weights_pub_config_init(&c);
    c.endpoint = "tcp://127.0.0.1:*";
    c.bucket_bytes = BUCKET;
    c.max_bucket_sends = max_sends;
    c.max_inflight_bytes = max_inflight;
    c.sockopts = o;
    weights_pub *p = NULL;
    char err[SEED_ERRLEN];
    if (weights_pub_create(&p, &c, err, sizeof err)) {
        fprintf(stderr, "weights_pub_create: %s\n", err);
        exit(1);
    }
    weights_tensor t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "model.embed_tokens.weight");
    t.dtype = WEIGHTS_F32;
    t.ndim = 1;
    t.shape[0] = (int64_t)(g_nbytes / 4);
    t.nbytes = g_nbytes;
    if (weights_pub_publish(p, 1, g_blob, g_nbytes, &t, 1, "{}", err, sizeof err)) {
        fprintf(stderr, "weights_pub_publish: %s\n", err);
        exit(1);
    }
    weights_pub_stats st;
    double t0 = seed_now();
    do {
        weights_pub_stats_get(p, &st);
        if (st.latest_version == 1) break;
        zmq_poll(NULL, 0, 10);
    } while (seed_now() - t0 < 30);
    CHECK(st.latest_version == 1, "the publisher never served version 1");
    return p;
}

static void *client(void *ctx, weights_pub *p, int rcvhwm, int rcvbuf) {
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (rcvhwm) zmq_setsockopt(s, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm);
    if (rcvbuf) zmq_setsockopt(s, ZMQ_RCVBUF, &rcvbuf, sizeof rcvbuf);
    wire_check(zmq_connect(s, weights_pub_endpoint(p)));
    return s;
}

/* One WeightFetch for version 1 listing every bucket `repeat` times. */
static void ask_all(void *s, int repeat) {
    uint32_t *b = malloc(sizeof *b * (size_t)repeat * NBUCKETS);
    for (int i = 0; i < repeat * NBUCKETS; i++) b[i] = (uint32_t)(i % NBUCKETS);
    Seed__WeightFetch f = SEED__WEIGHT_FETCH__INIT;
    f.version = 1;
    f.buckets = b;
    f.n_buckets = (size_t)repeat * NBUCKETS;
    f.id = "greedy";
    f.have_version = 0;
    Seed__Envelope env;
    wire_envelope_init(&env, "greedy");
    env.body_case = SEED__ENVELOPE__BODY_WEIGHT_FETCH;
    env.weight_fetch = &f;
    char err[SEED_ERRLEN];
    CHECK(wire_send(s, &env, 0, err, sizeof err) == 0, "%s", err);
    free(b);
}

/* Bucket replies received until `want` came or none came for quiet_ms. */
static int take_buckets(void *s, int want, int quiet_ms) {
    int n = 0;
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (n < want) {
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, quiet_ms) <= 0) break;
        if (zmq_msg_recv(&m, s, 0) < 0) break;
        weights_bucket_ref ref;
        if (weights_bucket_parse(zmq_msg_data(&m), zmq_msg_size(&m), &ref) == 1 && ref.version == 1)
            n++;
    }
    zmq_msg_close(&m);
    return n;
}

static void wait_fetches(weights_pub *p, uint64_t n, weights_pub_stats *st) {
    double t0 = seed_now();
    do {
        weights_pub_stats_get(p, st);
        if (st->fetches >= n) return;
        zmq_poll(NULL, 0, 20);
    } while (seed_now() - t0 < 30);
    CHECK(0, "the publisher handled %" PRIu64 " of %" PRIu64 " requests in 30 s", st->fetches, n);
}

static void test_window_and_resends(void *ctx) {
    weights_pub *p = make_pub(10, 0, NULL);
    void *s = client(ctx, p, 0, 0);
    ask_all(s, 2000); /* 8000 entries: every bucket 2000 times */
    int got = take_buckets(s, 1000, 3000);
    CHECK(got == NBUCKETS, "one request for everything x2000 brought %d buckets, want %d", got,
          NBUCKETS);
    weights_pub_stats st;
    wait_fetches(p, 1, &st);
    CHECK(st.fetch_capped == 2000 * NBUCKETS - NBUCKETS, "%" PRIu64 " requests refused, want %d",
          st.fetch_capped, 2000 * NBUCKETS - NBUCKETS);
    /* again and again: each bucket goes out at most 10 times for this version */
    int total = got;
    for (int round = 1; round < 12; round++) {
        ask_all(s, 1);
        total += take_buckets(s, NBUCKETS, round < 10 ? 3000 : 500);
    }
    wait_fetches(p, 12, &st);
    CHECK(total == 10 * NBUCKETS, "12 requests brought %d buckets, want %d (10 sends each)", total,
          10 * NBUCKETS);
    CHECK(st.buckets_sent == 10 * NBUCKETS, "the publisher sent %" PRIu64 " buckets",
          st.buckets_sent);
    zmq_close(s);
    weights_pub_free(p);
}

static void test_inflight(void *ctx) {
    wire_sockopts o;
    wire_sockopts_init(&o);
    o.max_msg_bytes = 1 << 20;
    o.sndbuf = 64 << 10; /* what the kernel absorbs stays small */
    weights_pub *p = make_pub(255, 2 * (uint64_t)(BUCKET + WEIGHTS_HEADER_MAX), &o);
    void *s = client(ctx, p, 1, 4096); /* never reads */
    for (int i = 0; i < 50; i++) ask_all(s, 1);
    weights_pub_stats st;
    wait_fetches(p, 50, &st);
    CHECK(st.buckets_sent <= 8,
          "a receiver that does not read was handed %" PRIu64 " buckets (bound: 2 in flight)",
          st.buckets_sent);
    CHECK(st.buckets_sent + st.fetch_capped == 50 * NBUCKETS,
          "%" PRIu64 " sent + %" PRIu64 " refused != %d asked", st.buckets_sent, st.fetch_capped,
          50 * NBUCKETS);
    zmq_close(s);
    weights_pub_free(p);
}

static void test_config_errors(void) {
    weights_pub_config c;
    weights_pub_config_init(&c);
    c.endpoint = "tcp://127.0.0.1:*";
    char err[SEED_ERRLEN];
    weights_pub *p = NULL;
    c.max_fetch_buckets = 0;
    CHECK(weights_pub_create(&p, &c, err, sizeof err) < 0 && strstr(err, "max_fetch_buckets"),
          "max_fetch_buckets 0 accepted: %s", err);
    c.max_fetch_buckets = 16;
    c.max_inflight_bytes = 1000;
    CHECK(weights_pub_create(&p, &c, err, sizeof err) < 0 && strstr(err, "max_inflight_bytes"),
          "max_inflight_bytes below a bucket accepted: %s", err);
}

int main(void) {
    g_nbytes = (size_t)NBUCKETS * BUCKET - 4096; /* the last bucket is short */
    g_blob = malloc(g_nbytes);
    for (size_t i = 0; i < g_nbytes; i++) g_blob[i] = (uint8_t)(i * 2654435761u >> 13);
    void *ctx = zmq_ctx_new();
    test_config_errors();
    test_window_and_resends(ctx);
    test_inflight(ctx);
    zmq_ctx_term(ctx);
    free(g_blob);
    if (check_failures) {
        fprintf(stderr, "weights_caps: %d check(s) failed\n", check_failures);
        return 1;
    }
    printf("weights_caps: one request for everything gets each bucket once; each bucket at "
           "most 10 times a version; a non-reading receiver holds at most 2 in flight\n");
    return 0;
}
