/* weights_test.c — tests of proto/weights.[ch] over real ZeroMQ sockets on loopback TCP,
 * with real threads and a real child process. One binary, one mode per ctest entry:
 *
 *   parse       bucket header encoder and in-place parser against protobuf-c (round trip
 *               and a differential fuzz: whatever the fast parser accepts, protobuf-c
 *               decodes to the same fields)
 *   table       table validation/check errors name the tensor; config and publish errors;
 *               a receiver whose model does not match refuses the version with the name
 *   broadcast   a 24 MiB blob to 3 receivers over 12 versions, 9 of them published back to
 *               back: every take is one whole version (every word carries a
 *               version-specific pattern, and the blob's CRC-32C matches), the last is 12
 *   late        a receiver that connects after 3 versions gets version 3 whole, only it
 *   keep        the publisher keeps serving the previous version (keep_versions = 2) to a
 *               client midway through it, and announces the newest once it is dropped
 *   corrupt     two bucket sends with a flipped byte are caught by CRC, counted, fetched
 *               again, and the version is applied once, intact
 *   dead        a receiver process that grabs all buckets and then stops (SIGSTOP) and is
 *               killed (SIGKILL) neither blocks publish nor stalls the other receivers
 *   malformed   garbage, truncated, wrong-schema, wrong-body, multi-frame, empty and
 *               oversized messages to the publisher are counted and dropped; it keeps
 *               serving
 *   capture DIR (for test_contract.py) writes announce and bucket frames, blobs and what
 *               a receiver made of a bf16 transport, for the Python protobuf/torch checks
 *
 * Every comparison is exact, bit for bit (fp32 transport copies bytes; no tolerance is
 * needed or allowed). Every wait is bounded (30 s) and fails with a message rather than
 * hanging; nothing asserts on timing. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/util.h"
#include "proto/weights.h"

extern char **environ;

#define CHECK_EXIT_ON_FAIL
#include "tests/check.h"

#define WAIT_S 30.0
#define MIB ((size_t)1 << 20)

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- versions with a recognisable pattern ------------------------------------------- */

/* Word i of version v. Two versions differ in every word, so a mixed blob is caught. */
static uint32_t pattern(uint64_t v, size_t i) {
    return (uint32_t)((v * 0x9E3779B97F4A7C15ull) >> 32) + (uint32_t)i * 0x85EBCA6Bu;
}

static void fill(uint8_t *blob, size_t nbytes, uint64_t v) {
    for (size_t i = 0; i < nbytes / 4; i++) {
        uint32_t w = pattern(v, i);
        memcpy(blob + 4 * i, &w, 4);
    }
}

/* Index of the first word that is not version v's, or -1. */
static long first_bad_word(const uint8_t *blob, size_t nbytes, uint64_t v) {
    for (size_t i = 0; i < nbytes / 4; i++) {
        uint32_t w;
        memcpy(&w, blob + 4 * i, 4);
        if (w != pattern(v, i)) return (long)i;
    }
    return -1;
}

/* Three fp32 tensors covering `words` words exactly. */
static int make_table(weights_tensor *t, size_t words) {
    memset(t, 0, 3 * sizeof *t);
    size_t rows = (words - 1024) / 1024 - 1, w0 = rows * 1024;
    snprintf(t[0].name, sizeof t[0].name, "model.embed_tokens.weight");
    t[0].ndim = 2;
    t[0].shape[0] = (int64_t)rows;
    t[0].shape[1] = 1024;
    snprintf(t[1].name, sizeof t[1].name, "model.norm.weight");
    t[1].ndim = 1;
    t[1].shape[0] = 1024;
    snprintf(t[2].name, sizeof t[2].name, "lm_head.bias");
    t[2].ndim = 1;
    t[2].shape[0] = (int64_t)(words - w0 - 1024);
    uint64_t off = 0;
    for (int i = 0; i < 3; i++) {
        t[i].dtype = WEIGHTS_F32;
        t[i].offset = off;
        t[i].nbytes =
            4 * (uint64_t)(t[i].ndim == 2 ? t[i].shape[0] * t[i].shape[1] : t[i].shape[0]);
        off += t[i].nbytes;
    }
    return 3;
}

static void config_for(uint64_t v, char *out, size_t n) {
    snprintf(out, n, "{\"model_type\": \"qwen2\", \"seed_version\": %" PRIu64 "}", v);
}

static weights_pub *make_pub(uint32_t bucket_bytes, int peer_timeout_ms) {
    weights_pub_config c;
    weights_pub_config_init(&c);
    c.endpoint = "tcp://127.0.0.1:*";
    c.bucket_bytes = bucket_bytes;
    if (peer_timeout_ms) c.peer_timeout_ms = peer_timeout_ms;
    weights_pub *p;
    char err[SEED_ERRLEN];
    CHECK(weights_pub_create(&p, &c, err, sizeof err) == 0, "%s", err);
    return p;
}

static void publish(weights_pub *p, uint8_t *blob, size_t nbytes, uint64_t v,
                    const weights_tensor *t, int nt, uint32_t *crc_out) {
    char err[SEED_ERRLEN], cfg[128];
    fill(blob, nbytes, v);
    if (crc_out) *crc_out = seed_crc32c(0, blob, nbytes);
    config_for(v, cfg, sizeof cfg);
    CHECK(weights_pub_publish(p, v, blob, nbytes, t, nt, cfg, err, sizeof err) == 0, "%s", err);
}

static void wait_pub_latest(weights_pub *p, uint64_t v) {
    double t0 = seed_now();
    weights_pub_stats st;
    for (;;) {
        weights_pub_stats_get(p, &st);
        if (st.latest_version >= v) return;
        CHECK(seed_now() - t0 < WAIT_S, "publisher never served version %" PRIu64, v);
        sleep_ms(5);
    }
}

/* ---- receiver threads ---------------------------------------------------------------- */

#define MAX_VERSIONS 64

typedef struct rx_thread {
    int k;
    const char *endpoint;
    const weights_tensor *table;
    int n_tensors;
    size_t nbytes;
    const uint32_t *crc; /* expected blob CRC per version */
    int release;         /* release every view after checking it */
    pthread_t th;
    atomic_uint_fast64_t taken;
    atomic_int stop;
    int failed;
    char msg[SEED_ERRLEN + 64];
    uint64_t n_taken;
    weights_rx_stats stats;
} rx_thread;

static void *rx_main(void *arg) {
    rx_thread *t = arg;
    char err[SEED_ERRLEN], id[32];
    snprintf(id, sizeof id, "rx-%d", t->k);
    weights_rx_config c;
    weights_rx_config_init(&c);
    c.endpoint = t->endpoint;
    c.id = id;
    c.expect = t->table;
    c.n_expect = t->n_tensors;
    weights_rx *rx;
    if (weights_rx_create(&rx, &c, err, sizeof err)) {
        snprintf(t->msg, sizeof t->msg, "create: %s", err);
        t->failed = 1;
        return NULL;
    }
    uint64_t prev = 0;
    while (!atomic_load(&t->stop) && !t->failed) {
        int r = weights_rx_poll(rx, 100, err, sizeof err);
        if (r < 0) {
            snprintf(t->msg, sizeof t->msg, "poll: %s", err);
            t->failed = 1;
            break;
        }
        if (r == 0) continue;
        weights_view v;
        if (weights_rx_take(rx, &v, err, sizeof err) != 1) {
            snprintf(t->msg, sizeof t->msg, "poll said ready but take gave nothing");
            t->failed = 1;
            break;
        }
        char cfg[128];
        config_for(v.version, cfg, sizeof cfg);
        long bad = v.nbytes == t->nbytes ? first_bad_word(v.blob, v.nbytes, v.version) : -2;
        if (v.version <= prev || v.version >= MAX_VERSIONS || bad != -1 ||
            seed_crc32c(0, v.blob, v.nbytes) != t->crc[v.version] ||
            strcmp(v.config_json, cfg) != 0 || v.n_tensors != t->n_tensors ||
            weights_table_check(t->table, t->n_tensors, v.tensors, v.n_tensors, err, sizeof err) ||
            ((uintptr_t)v.blob & 63)) {
            snprintf(t->msg, sizeof t->msg,
                     "take of version %" PRIu64 " (after %" PRIu64 ", %zu bytes) is not that "
                     "version whole: first bad word %ld",
                     v.version, prev, v.nbytes, bad);
            t->failed = 1;
            break;
        }
        prev = v.version;
        t->n_taken++;
        if (t->release) weights_rx_release(rx);
        atomic_store(&t->taken, v.version);
    }
    weights_rx_stats_get(rx, &t->stats);
    weights_rx_free(rx);
    return NULL;
}

static void rx_start(rx_thread *t, int k, const char *ep, const weights_tensor *tab, int nt,
                     size_t nbytes, const uint32_t *crc) {
    memset(t, 0, sizeof *t);
    t->k = k;
    t->endpoint = ep;
    t->table = tab;
    t->n_tensors = nt;
    t->nbytes = nbytes;
    t->crc = crc;
    t->release = k % 2;
    CHECK(pthread_create(&t->th, NULL, rx_main, t) == 0, "pthread_create");
}

static void rx_wait(rx_thread *t, int n, uint64_t v) {
    double t0 = seed_now();
    for (int k = 0; k < n; k++) {
        while (atomic_load(&t[k].taken) < v) {
            CHECK(!t[k].failed, "receiver %d: %s", k, t[k].msg);
            CHECK(seed_now() - t0 < WAIT_S,
                  "receiver %d never took version %" PRIu64 " (it has %" PRIu64 ")", k, v,
                  (uint64_t)atomic_load(&t[k].taken));
            sleep_ms(5);
        }
    }
}

static void rx_stop(rx_thread *t, int n) {
    for (int k = 0; k < n; k++) atomic_store(&t[k].stop, 1);
    for (int k = 0; k < n; k++) {
        pthread_join(t[k].th, NULL);
        CHECK(!t[k].failed, "receiver %d: %s", k, t[k].msg);
    }
}

/* Wait until the publisher sees n receivers, all holding its latest version. */
static void wait_all_current(weights_pub *p, int n, weights_pub_stats *st) {
    double t0 = seed_now();
    for (;;) {
        weights_pub_stats_get(p, st);
        if (st->n_peers == n && st->peers_current == n && st->publish_to_all_s >= 0) return;
        CHECK(seed_now() - t0 < WAIT_S, "publisher sees %d peers, %d current (want %d)",
              st->n_peers, st->peers_current, n);
        sleep_ms(10);
    }
}

/* ---- a raw client speaking the protocol by hand ------------------------------------- */

static void *raw_dealer(void *ctx, const char *ep) {
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0, to = 20000;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &to, sizeof to);
    CHECK(zmq_connect(s, ep) == 0, "connect %s: %s", ep, zmq_strerror(errno));
    return s;
}

static void raw_fetch(void *s, uint64_t version, const uint32_t *b, size_t n, uint64_t have,
                      const char *id) {
    Seed__WeightFetch f;
    seed__weight_fetch__init(&f);
    f.version = version;
    f.buckets = (uint32_t *)b;
    f.n_buckets = n;
    f.have_version = have;
    f.id = (char *)id;
    Seed__Envelope env;
    wire_envelope_init(&env, id);
    env.body_case = SEED__ENVELOPE__BODY_WEIGHT_FETCH;
    env.weight_fetch = &f;
    char err[SEED_ERRLEN];
    CHECK(wire_send(s, &env, 0, err, sizeof err) == 0, "%s", err);
}

/* Receive one frame into a malloc'd buffer. */
static size_t raw_recv(void *s, uint8_t **out) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    CHECK(zmq_msg_recv(&m, s, 0) >= 0, "raw receive: %s", zmq_strerror(errno));
    size_t n = zmq_msg_size(&m);
    *out = malloc(n ? n : 1);
    memcpy(*out, zmq_msg_data(&m), n);
    zmq_msg_close(&m);
    return n;
}

static Seed__Envelope *unpack(const uint8_t *b, size_t n) {
    Seed__Envelope *e = seed__envelope__unpack(NULL, n, b);
    CHECK(e, "protobuf-c cannot unpack a %zu-byte frame", n);
    return e;
}

/* ---- parse ------------------------------------------------------------------------------ */

static int bucket_equal(const weights_bucket_ref *r, const Seed__Envelope *e) {
    const Seed__WeightBucket *b = e->weight_bucket;
    return e->body_case == SEED__ENVELOPE__BODY_WEIGHT_BUCKET && r->schema == e->schema &&
           r->version == b->version && r->index == b->index && r->offset == b->offset &&
           r->crc32c == b->crc32c && r->len == b->data.len &&
           (r->len == 0 || memcmp(r->data, b->data.data, r->len) == 0);
}

static int test_parse(void) {
    seed_rng rng;
    seed_rng_init(&rng, 7);
    uint8_t msg[WEIGHTS_HEADER_MAX + 300], mut[sizeof msg + 8];
    int accepted = 0, rejected = 0;
    for (int it = 0; it < 3000; it++) {
        /* A valid frame with random field values (varints of every length). */
        uint64_t version = seed_rng_next(&rng) >> (seed_rng_next(&rng) % 64);
        uint32_t index = (uint32_t)(seed_rng_next(&rng) >> (32 + seed_rng_next(&rng) % 32));
        uint64_t offset = seed_rng_next(&rng) >> (seed_rng_next(&rng) % 64);
        uint32_t crc = (uint32_t)seed_rng_next(&rng);
        size_t dlen = (size_t)seed_rng_below(&rng, 300);
        char sender[WEIGHTS_ID_MAX];
        size_t sl = (size_t)seed_rng_below(&rng, WEIGHTS_ID_MAX);
        for (size_t k = 0; k < sl; k++) sender[k] = (char)('a' + seed_rng_below(&rng, 26));
        sender[sl] = 0;
        size_t h = weights_bucket_header(msg, WEIGHTS_HEADER_MAX, sender, version, index, offset,
                                         crc, dlen);
        CHECK(h > 0 && h <= WEIGHTS_HEADER_MAX, "header of %zu bytes", h);
        for (size_t k = 0; k < dlen; k++) msg[h + k] = (uint8_t)seed_rng_next(&rng);
        size_t n = h + dlen;
        weights_bucket_ref r;
        CHECK(weights_bucket_parse(msg, n, &r) == 1, "a valid frame was not parsed");
        Seed__Envelope *e = unpack(msg, n);
        CHECK(bucket_equal(&r, e) && r.schema == SEED_SCHEMA_VERSION && r.version == version &&
                  r.index == index && r.offset == offset && r.crc32c == crc && r.len == dlen &&
                  strcmp(e->sender, sender) == 0,
              "round trip differs from protobuf-c at iteration %d", it);
        seed__envelope__free_unpacked(e, NULL);

        /* Mutations: flip, truncate, insert, replace a byte. Whatever the fast parser takes
         * must decode the same with protobuf-c. */
        for (int m = 0; m < 8; m++) {
            size_t mn = n;
            memcpy(mut, msg, n);
            size_t at = (size_t)seed_rng_below(&rng, h + 2 < n ? h + 2 : n);
            switch (seed_rng_below(&rng, 4)) {
            case 0:
                mut[at] ^= (uint8_t)(1u << seed_rng_below(&rng, 8));
                break;
            case 1:
                mn = at;
                break;
            case 2:
                memmove(mut + at + 1, mut + at, n - at);
                mut[at] = (uint8_t)seed_rng_next(&rng);
                mn = n + 1;
                break;
            default:
                mut[at] = (uint8_t)seed_rng_next(&rng);
            }
            weights_bucket_ref q;
            int ok = weights_bucket_parse(mut, mn, &q);
            if (!ok) {
                rejected++;
                continue;
            }
            accepted++;
            Seed__Envelope *f = seed__envelope__unpack(NULL, mn, mut);
            CHECK(f && bucket_equal(&q, f),
                  "fast parser accepted a frame protobuf-c reads differently (iteration %d)", it);
            seed__envelope__free_unpacked(f, NULL);
        }
    }
    /* Other bodies are left to protobuf-c. */
    Seed__WeightFetch fe;
    seed__weight_fetch__init(&fe);
    fe.version = 3;
    Seed__Envelope env;
    wire_envelope_init(&env, "x");
    env.body_case = SEED__ENVELOPE__BODY_WEIGHT_FETCH;
    env.weight_fetch = &fe;
    wire_buf b = {0};
    char err[SEED_ERRLEN];
    CHECK(wire_pack(&env, "x", &b, err, sizeof err) == 0, "%s", err);
    weights_bucket_ref q;
    CHECK(weights_bucket_parse(b.data, b.len, &q) == 0, "a fetch was taken for a bucket");
    /* protobuf-c's own packing of a bucket (fields in number order) parses the same. */
    Seed__WeightBucket wb;
    seed__weight_bucket__init(&wb);
    wb.version = 9;
    wb.index = 2;
    wb.offset = 8 * MIB;
    wb.crc32c = 0xdeadbeef;
    uint8_t data[5] = {1, 2, 3, 4, 5};
    wb.data.data = data;
    wb.data.len = 5;
    env.body_case = SEED__ENVELOPE__BODY_WEIGHT_BUCKET;
    env.weight_bucket = &wb;
    CHECK(wire_pack(&env, "learner", &b, err, sizeof err) == 0, "%s", err);
    CHECK(weights_bucket_parse(b.data, b.len, &q) == 1 && q.version == 9 && q.index == 2 &&
              q.offset == 8 * MIB && q.crc32c == 0xdeadbeef && q.len == 5 &&
              memcmp(q.data, data, 5) == 0,
          "protobuf-c's bucket encoding did not parse in place");
    wire_buf_free(&b);
    CHECK(weights_bucket_header(msg, 10, "learner", 1, 1, 1, 1, 1) == 0,
          "a header that does not fit was written");
    printf("parse: 3000 round trips; fuzz: %d mutants taken (all equal to protobuf-c), %d left "
           "to protobuf-c\n",
           accepted, rejected);
    return 0;
}

/* ---- table ------------------------------------------------------------------------------ */

static int test_table(void) {
    char err[SEED_ERRLEN];
    size_t words = 2 * MIB + 1500, nbytes = 4 * words;
    weights_tensor t[3], u[3];
    int nt = make_table(t, words);
    CHECK(weights_table_validate(t, nt, nbytes, err, sizeof err) == 0, "%s", err);
    memcpy(u, t, sizeof t);
    u[1].nbytes += 4;
    CHECK(weights_table_validate(u, nt, nbytes, err, sizeof err) < 0 &&
              strstr(err, "model.norm.weight"),
          "nbytes mismatch not reported by name: %s", err);
    memcpy(u, t, sizeof t);
    u[2].offset += 8;
    CHECK(weights_table_validate(u, nt, nbytes, err, sizeof err) < 0 &&
              strstr(err, "lm_head.bias") && strstr(err, "outside"),
          "range outside the blob not reported: %s", err);
    memcpy(u, t, sizeof t);
    u[0].name[0] = 0;
    CHECK(weights_table_validate(u, nt, nbytes, err, sizeof err) < 0 && strstr(err, "tensor 0"),
          "empty name not reported: %s", err);
    memcpy(u, t, sizeof t);
    u[1].shape[0] = 512;
    u[1].nbytes = 2048;
    CHECK(weights_table_check(t, nt, u, nt, err, sizeof err) < 0 &&
              strstr(err, "model.norm.weight") && strstr(err, "[512]") && strstr(err, "[1024]"),
          "shape mismatch not reported by name and shapes: %s", err);
    CHECK(weights_table_check(t, nt, t, 2, err, sizeof err) < 0 && strstr(err, "lm_head.bias"),
          "missing tensor not named: %s", err);

    /* Bad configurations name the key and the value. */
    weights_pub_config pc;
    weights_pub_config_init(&pc);
    pc.endpoint = "tcp://127.0.0.1:*";
    pc.bucket_bytes = 1 << 20;
    weights_pub *p;
    CHECK(weights_pub_create(&p, &pc, err, sizeof err) < 0 && strstr(err, "bucket_bytes"),
          "a 1 MiB bucket was accepted: %s", err);
    pc.bucket_bytes = 4 << 20;
    pc.endpoint = "tcp://no-such-host-for-seed.invalid:1";
    CHECK(weights_pub_create(&p, &pc, err, sizeof err) < 0, "binding a bad endpoint worked");
    printf("table: bad endpoint says: %s\n", err);
    weights_rx_config rc;
    weights_rx_config_init(&rc);
    rc.endpoint = "tcp://127.0.0.1:1";
    rc.window = 0;
    weights_rx *rx;
    CHECK(weights_rx_create(&rx, &rc, err, sizeof err) < 0 && strstr(err, "window"),
          "window 0 accepted: %s", err);

    /* Publish errors. */
    p = make_pub(4 << 20, 0);
    uint8_t *blob = malloc(nbytes);
    fill(blob, nbytes, 1);
    CHECK(weights_pub_publish(p, 0, blob, nbytes, t, nt, NULL, err, sizeof err) < 0 &&
              strstr(err, "version 0"),
          "version 0 accepted: %s", err);
    CHECK(weights_pub_publish(p, 1, blob, nbytes - 4, t, nt, NULL, err, sizeof err) < 0 &&
              strstr(err, "lm_head.bias"),
          "a table past the blob accepted: %s", err);
    CHECK(weights_pub_publish(p, 2, blob, nbytes, t, nt, "{}", err, sizeof err) == 0, "%s", err);
    CHECK(weights_pub_publish(p, 2, blob, nbytes, t, nt, "{}", err, sizeof err) < 0 &&
              strstr(err, "not above"),
          "a repeated version accepted: %s", err);

    /* A receiver whose model has another shape refuses the version, naming the tensor;
     * a later matching version is accepted. */
    memcpy(u, t, sizeof t);
    u[0].shape[0] -= 1;
    u[0].nbytes -= 4096;
    u[1].offset -= 4096;
    u[2].offset -= 4096;
    weights_rx_config_init(&rc);
    rc.endpoint = weights_pub_endpoint(p);
    rc.expect = u;
    rc.n_expect = nt;
    CHECK(weights_rx_create(&rx, &rc, err, sizeof err) == 0, "%s", err);
    int r = weights_rx_poll(rx, (int)(WAIT_S * 1000), err, sizeof err);
    CHECK(r < 0 && strstr(err, "model.embed_tokens.weight") && strstr(err, "shape"),
          "mismatching table: poll gave %d: %s", r, err);
    printf("table: mismatch says: %s\n", err);
    weights_view v;
    CHECK(weights_rx_take(rx, &v, err, sizeof err) < 0 && strstr(err, "model.embed_tokens"),
          "take after a refused version: %s", err);
    weights_rx_stats rs;
    weights_rx_stats_get(rx, &rs);
    CHECK(rs.refused_versions == 1 && rs.versions_completed == 0, "refused %" PRIu64,
          rs.refused_versions);
    fill(blob, nbytes - 4096, 3);
    CHECK(weights_pub_publish(p, 3, blob, nbytes - 4096, u, nt, "{}", err, sizeof err) == 0, "%s",
          err);
    double t0 = seed_now();
    while ((r = weights_rx_take(rx, &v, err, sizeof err)) != 1) {
        CHECK(seed_now() - t0 < WAIT_S, "matching version 3 never arrived");
        sleep_ms(5);
    }
    CHECK(v.version == 3 && first_bad_word(v.blob, v.nbytes, 3) == -1, "version 3 not whole");
    weights_rx_free(rx);

    /* A receiver whose max_msg_bytes cannot take the publisher's buckets says so. */
    weights_pub *p8 = make_pub(8 << 20, 0);
    CHECK(weights_pub_publish(p8, 1, blob, nbytes, t, nt, "{}", err, sizeof err) == 0, "%s", err);
    weights_rx_config_init(&rc);
    rc.endpoint = weights_pub_endpoint(p8);
    rc.max_msg_bytes = (5 << 20);
    CHECK(weights_rx_create(&rx, &rc, err, sizeof err) == 0, "%s", err);
    r = weights_rx_poll(rx, (int)(WAIT_S * 1000), err, sizeof err);
    CHECK(r < 0 && strstr(err, "max_msg_bytes"), "oversized buckets: poll gave %d: %s", r, err);
    weights_rx_free(rx);
    weights_pub_free(p8);

    /* bf16 transport needs fp32 tensors. */
    weights_pub_config_init(&pc);
    pc.endpoint = "tcp://127.0.0.1:*";
    pc.bucket_bytes = 4 << 20;
    pc.transport_dtype = WEIGHTS_BF16;
    weights_pub *pb;
    CHECK(weights_pub_create(&pb, &pc, err, sizeof err) == 0, "%s", err);
    memcpy(u, t, sizeof t);
    u[1].dtype = WEIGHTS_BF16;
    u[1].nbytes = 2048;
    CHECK(weights_pub_publish(pb, 1, blob, nbytes, u, nt, "{}", err, sizeof err) < 0 &&
              strstr(err, "model.norm.weight"),
          "bf16 transport of a bf16 tensor accepted: %s", err);
    weights_pub_free(pb);
    weights_pub_free(p);
    free(blob);
    printf("table: ok\n");
    return 0;
}

/* ---- broadcast ------------------------------------------------------------------------- */

static int test_broadcast(void) {
    size_t words = 6 * MIB + 3000, nbytes = 4 * words; /* 7 buckets of 4 MiB, last partial */
    weights_tensor t[3];
    int nt = make_table(t, words);
    uint32_t crc[MAX_VERSIONS] = {0};
    uint8_t *blob = malloc(nbytes);
    weights_pub *p = make_pub(4 << 20, 0);
    const char *ep = weights_pub_endpoint(p);
    rx_thread rx[3];
    for (int k = 0; k < 3; k++) rx_start(&rx[k], k, ep, t, nt, nbytes, crc);
    /* Three versions one at a time: everybody takes each. */
    for (uint64_t v = 1; v <= 3; v++) {
        publish(p, blob, nbytes, v, t, nt, &crc[v]);
        rx_wait(rx, 3, v);
    }
    /* Nine more back to back, faster than receivers take them. */
    for (uint64_t v = 4; v <= 12; v++) publish(p, blob, nbytes, v, t, nt, &crc[v]);
    rx_wait(rx, 3, 12);
    weights_pub_stats st;
    wait_all_current(p, 3, &st);
    rx_stop(rx, 3);
    uint64_t corrupt = 0, abandoned = 0;
    for (int k = 0; k < 3; k++) {
        printf("broadcast: rx-%d took %" PRIu64 " versions, completed %" PRIu64
               ", abandoned %" PRIu64 ", stale %" PRIu64 ", last fetch %.3f s\n",
               k, rx[k].n_taken, rx[k].stats.versions_completed, rx[k].stats.versions_abandoned,
               rx[k].stats.stale_buckets, rx[k].stats.last_fetch_s);
        corrupt += rx[k].stats.corrupt_buckets;
        abandoned += rx[k].stats.versions_abandoned;
        CHECK(rx[k].n_taken >= 4 && rx[k].stats.have_version == 12, "rx-%d", k);
    }
    CHECK(corrupt == 0, "%" PRIu64 " corrupt buckets on a clean link", corrupt);
    weights_peer_info peers[8];
    int np = weights_pub_peers(p, peers, 8);
    CHECK(np == 3, "%d peers", np);
    for (int k = 0; k < np; k++) {
        CHECK(strncmp(peers[k].id, "rx-", 3) == 0 && peers[k].have_version == 12 &&
                  peers[k].complete_s >= 0,
              "peer %s has version %" PRIu64, peers[k].id, peers[k].have_version);
    }
    printf("broadcast: published %" PRIu64 ", served %" PRIu64 ", buckets sent %" PRIu64
           " (%.1f MiB), resent %" PRIu64 ", announces %" PRIu64 ", stale fetches %" PRIu64
           ", abandoned midway %" PRIu64 ", publish->all %.3f s\n",
           st.versions_published, st.versions_served, st.buckets_sent,
           (double)st.bytes_sent / (double)MIB, st.buckets_resent, st.announces_sent,
           st.stale_fetches, abandoned, st.publish_to_all_s);
    CHECK(st.versions_published == 12 && st.latest_version == 12 && st.malformed == 0,
          "publisher stats");
    weights_pub_free(p);
    free(blob);
    return 0;
}

/* ---- late joiner ----------------------------------------------------------------------- */

static int test_late(void) {
    size_t words = 3 * MIB + 77, nbytes = 4 * words;
    weights_tensor t[3];
    int nt = make_table(t, words);
    uint32_t crc[MAX_VERSIONS] = {0};
    uint8_t *blob = malloc(nbytes);
    weights_pub *p = make_pub(4 << 20, 0);
    for (uint64_t v = 1; v <= 3; v++) publish(p, blob, nbytes, v, t, nt, &crc[v]);
    wait_pub_latest(p, 3);
    rx_thread rx;
    rx_start(&rx, 1, weights_pub_endpoint(p), t, nt, nbytes, crc); /* k = 1: releases */
    rx_wait(&rx, 1, 3);
    publish(p, blob, nbytes, 4, t, nt, &crc[4]);
    rx_wait(&rx, 1, 4);
    rx_stop(&rx, 1);
    CHECK(rx.n_taken == 2 && rx.stats.versions_completed == 2 && rx.stats.corrupt_buckets == 0,
          "late joiner took %" PRIu64 " versions, completed %" PRIu64, rx.n_taken,
          rx.stats.versions_completed);
    printf("late: the late joiner fetched version 3 whole (only it), then version 4\n");
    weights_pub_free(p);
    free(blob);
    return 0;
}

/* ---- a restarted publisher ----------------------------------------------------------- */

/* Take from rx until version v arrives (WAIT_S bound); returns the blob's CRC. */
static uint32_t take_until(weights_rx *rx, uint64_t v) {
    char err[SEED_ERRLEN];
    double t0 = seed_now();
    for (;;) {
        CHECK(seed_now() - t0 < WAIT_S, "version %" PRIu64 " never arrived", v);
        if (weights_rx_poll(rx, 100, err, sizeof err) != 1) continue;
        weights_view w;
        if (weights_rx_take(rx, &w, err, sizeof err) != 1) continue;
        uint32_t crc = seed_crc32c(0, w.blob, w.nbytes);
        uint64_t got = w.version;
        weights_rx_release(rx);
        if (got == v) return crc;
    }
}

/* A learner restarted from a checkpoint serves lower version numbers than a receiver
 * already holds (the versions after the checkpoint were lost with it): under its new
 * epoch the receiver takes them anyway. */
static int test_restart(void) {
    size_t words = 1 * MIB + 3, nbytes = 4 * words;
    weights_tensor t[3];
    int nt = make_table(t, words);
    uint8_t *blob = malloc(nbytes);
    uint32_t crc5, crc3;
    weights_pub *p = make_pub(4 << 20, 0);
    char ep[256], err[SEED_ERRLEN];
    snprintf(ep, sizeof ep, "%s", weights_pub_endpoint(p));
    publish(p, blob, nbytes, 5, t, nt, &crc5);
    weights_rx_config rc;
    weights_rx_config_init(&rc);
    rc.endpoint = ep;
    rc.id = "restart-rx";
    weights_rx *rx;
    CHECK(weights_rx_create(&rx, &rc, err, sizeof err) == 0, "%s", err);
    CHECK(take_until(rx, 5) == crc5, "version 5 arrived corrupted");
    weights_pub_free(p);
    weights_pub_config c;
    weights_pub_config_init(&c);
    c.endpoint = ep; /* the same port, as a restarted learner binds it */
    c.bucket_bytes = 4 << 20;
    CHECK(weights_pub_create(&p, &c, err, sizeof err) == 0, "%s", err);
    publish(p, blob, nbytes, 3, t, nt, &crc3);
    CHECK(take_until(rx, 3) == crc3, "version 3 of the new epoch arrived corrupted");
    printf("restart: after the publisher restarted, version 3 of its new epoch replaced "
           "version 5 of the old one, whole\n");
    weights_rx_free(rx);
    weights_pub_free(p);
    free(blob);
    return 0;
}

/* ---- corrupt bucket -------------------------------------------------------------------- */

static int test_corrupt(void) {
    size_t words = 5 * MIB + 5, nbytes = 4 * words;
    weights_tensor t[3];
    int nt = make_table(t, words);
    uint32_t crc[MAX_VERSIONS] = {0};
    uint8_t *blob = malloc(nbytes);
    weights_pub *p = make_pub(4 << 20, 0);
    weights_pub_test_corrupt(p, 2);
    publish(p, blob, nbytes, 1, t, nt, &crc[1]);
    rx_thread rx;
    rx_start(&rx, 0, weights_pub_endpoint(p), t, nt, nbytes, crc);
    rx_wait(&rx, 1, 1);
    rx_stop(&rx, 1);
    weights_pub_stats st;
    double t0 = seed_now();
    do { /* the counters are published after the sends went out */
        weights_pub_stats_get(p, &st);
        CHECK(seed_now() - t0 < WAIT_S, "injected %" PRIu64 ", resent %" PRIu64,
              st.corrupt_injected, st.buckets_resent);
    } while (st.corrupt_injected < 2 || st.buckets_resent < 2);
    CHECK(st.corrupt_injected == 2, "injected %" PRIu64, st.corrupt_injected);
    CHECK(rx.stats.corrupt_buckets == 2 && rx.stats.rerequests >= 2 &&
              rx.stats.versions_completed == 1 && rx.n_taken == 1,
          "corrupt %" PRIu64 ", rerequests %" PRIu64 ", completed %" PRIu64,
          rx.stats.corrupt_buckets, rx.stats.rerequests, rx.stats.versions_completed);
    CHECK(st.buckets_resent >= 2, "resent %" PRIu64, st.buckets_resent);
    printf("corrupt: 2 corrupted sends -> %" PRIu64 " caught, %" PRIu64 " re-requested, %" PRIu64
           " resent; version 1 applied once, intact\n",
           rx.stats.corrupt_buckets, rx.stats.rerequests, st.buckets_resent);
    weights_pub_free(p);
    free(blob);
    return 0;
}

/* ---- dead receiver --------------------------------------------------------------------- */

/* Child: grab every bucket of the latest version at once, read one, then stop itself. */
static int child_stall(const char *ep) {
    alarm(60);
    void *ctx = zmq_ctx_new();
    void *s = raw_dealer(ctx, ep);
    raw_fetch(s, 0, NULL, 0, 0, "stalled");
    uint8_t *m;
    size_t n = raw_recv(s, &m);
    Seed__Envelope *e = unpack(m, n);
    CHECK(e->body_case == SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE, "child: no announce");
    uint32_t nb = e->weight_announce->n_buckets, all[64];
    for (uint32_t i = 0; i < nb && i < 64; i++) all[i] = i;
    raw_fetch(s, e->weight_announce->version, all, nb < 64 ? nb : 64, 0, "stalled");
    seed__envelope__free_unpacked(e, NULL);
    free(m);
    n = raw_recv(s, &m);
    free(m);
    raise(SIGSTOP); /* the whole process, ZeroMQ's I/O thread included, stops reading */
    sleep(60);
    return 0;
}

static int test_dead(void) {
    size_t words = 6 * MIB + 12, nbytes = 4 * words;
    weights_tensor t[3];
    int nt = make_table(t, words);
    uint32_t crc[MAX_VERSIONS] = {0};
    uint8_t *blob = malloc(nbytes);
    weights_pub *p = make_pub(4 << 20, 1500);
    const char *ep = weights_pub_endpoint(p);
    publish(p, blob, nbytes, 1, t, nt, &crc[1]);

    pid_t pid;
    char *argv[] = {"weights_test", "child-stall", (char *)ep, NULL};
    CHECK(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) == 0, "spawn");
    int status;
    CHECK(waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status),
          "the child did not stop midway");
    weights_peer_info peers[8];
    int np;
    double t0 = seed_now();
    while (!((np = weights_pub_peers(p, peers, 8)) == 1 && strcmp(peers[0].id, "stalled") == 0 &&
             peers[0].buckets_sent >= 1))
        CHECK(seed_now() - t0 < WAIT_S, "the stalled child was not served (%d peers)", np);
    printf("dead: the stalled child was sent %" PRIu64 " buckets, then stopped\n",
           peers[0].buckets_sent);

    rx_thread rx[2];
    for (int k = 0; k < 2; k++) rx_start(&rx[k], k, ep, t, nt, nbytes, crc);
    rx_wait(rx, 2, 1);
    publish(p, blob, nbytes, 2, t, nt, &crc[2]);
    publish(p, blob, nbytes, 3, t, nt, &crc[3]);
    rx_wait(rx, 2, 3);
    kill(pid, SIGKILL);
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    publish(p, blob, nbytes, 4, t, nt, &crc[4]);
    rx_wait(rx, 2, 4);
    weights_pub_stats st;
    wait_all_current(p, 2, &st); /* the dead one is forgotten after peer_timeout_ms */
    rx_stop(rx, 2);
    printf("dead: others took versions 1..4 while it hung and after it died; publisher now "
           "sees %d peers, dropped sends %" PRIu64 ", publish->all %.3f s\n",
           st.n_peers, st.send_dropped, st.publish_to_all_s);
    weights_pub_free(p);
    free(blob);
    return 0;
}

/* ---- malformed input -------------------------------------------------------------------- */

static int test_malformed(void) {
    size_t words = 2 * MIB + 9, nbytes = 4 * words;
    weights_tensor t[3];
    int nt = make_table(t, words);
    uint32_t crc[MAX_VERSIONS] = {0};
    uint8_t *blob = malloc(nbytes);
    weights_pub *p = make_pub(4 << 20, 0);
    const char *ep = weights_pub_endpoint(p);
    publish(p, blob, nbytes, 1, t, nt, &crc[1]);
    wait_pub_latest(p, 1);

    void *ctx = zmq_ctx_new();
    void *s = raw_dealer(ctx, ep);
    seed_rng rng;
    seed_rng_init(&rng, 11);
    uint8_t junk[100];
    for (size_t k = 0; k < sizeof junk; k++) junk[k] = (uint8_t)seed_rng_next(&rng);
    junk[0] = 0xff;                    /* field 31, wire type 7: not protobuf */
    zmq_send(s, junk, sizeof junk, 0); /* 1: garbage */
    Seed__WeightFetch f;
    seed__weight_fetch__init(&f);
    uint32_t idx[3] = {0, 1, 2};
    f.version = 1;
    f.buckets = idx;
    f.n_buckets = 3;
    f.id = "evil";
    Seed__Envelope env;
    wire_envelope_init(&env, "evil");
    env.body_case = SEED__ENVELOPE__BODY_WEIGHT_FETCH;
    env.weight_fetch = &f;
    wire_buf b = {0};
    char err[SEED_ERRLEN];
    CHECK(wire_pack(&env, "evil", &b, err, sizeof err) == 0, "%s", err);
    zmq_send(s, b.data, b.len - 3, 0); /* 2: truncated */
    env.schema = 999;
    size_t n = seed__envelope__pack(&env, b.data);
    zmq_send(s, b.data, n, 0); /* 3: another schema */
    Seed__Hello h;
    seed__hello__init(&h);
    env.schema = SEED_SCHEMA_VERSION;
    env.body_case = SEED__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    CHECK(wire_pack(&env, "evil", &b, err, sizeof err) == 0, "%s", err);
    zmq_send(s, b.data, b.len, 0); /* 4: a body the weights socket does not take */
    zmq_send(s, "ab", 2, ZMQ_SNDMORE);
    zmq_send(s, "cd", 2, 0); /* 5: two frames */
    zmq_send(s, "", 0, 0);   /* 6: empty: an Envelope of schema 0 */
    const int n_bad = 6;
    /* 7: a bucket index past the end is answered with nothing, counted */
    uint32_t far = 1000;
    raw_fetch(s, 1, &far, 1, 0, "evil");
    /* 8: larger than the socket's 1 MiB bound: ZeroMQ drops that connection */
    void *big = raw_dealer(ctx, ep);
    uint8_t *huge = calloc(1, 2 * MIB);
    zmq_send(big, huge, 2 * MIB, 0);
    free(huge);

    weights_pub_stats st;
    double t0 = seed_now();
    for (;;) {
        weights_pub_stats_get(p, &st);
        if (st.malformed >= (uint64_t)n_bad && st.bad_requests >= 1) break;
        CHECK(seed_now() - t0 < WAIT_S,
              "publisher counted %" PRIu64 " malformed, %" PRIu64 " bad requests", st.malformed,
              st.bad_requests);
        sleep_ms(10);
    }
    CHECK(st.malformed == (uint64_t)n_bad && st.bad_requests == 1,
          "malformed %" PRIu64 " (want %d), bad requests %" PRIu64, st.malformed, n_bad,
          st.bad_requests);
    /* It still serves: the same socket, and a real receiver. */
    raw_fetch(s, 0, NULL, 0, 0, "evil");
    uint8_t *m;
    n = raw_recv(s, &m);
    Seed__Envelope *e = unpack(m, n);
    CHECK(e->body_case == SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE && e->weight_announce->version == 1,
          "no announce after the garbage");
    seed__envelope__free_unpacked(e, NULL);
    free(m);
    rx_thread rx;
    rx_start(&rx, 0, ep, t, nt, nbytes, crc);
    rx_wait(&rx, 1, 1);
    rx_stop(&rx, 1);
    printf("malformed: %" PRIu64 " bad messages counted and dropped, %" PRIu64
           " out-of-range request; still serving\n",
           st.malformed, st.bad_requests);
    wire_buf_free(&b);
    zmq_close(s);
    zmq_close(big);
    zmq_ctx_term(ctx);
    weights_pub_free(p);
    free(blob);
    return 0;
}

/* ---- keep_versions ------------------------------------------------------------------- */

/* Next frame on a raw socket, decoded. */
static Seed__Envelope *raw_next(void *s) {
    uint8_t *m;
    size_t n = raw_recv(s, &m);
    Seed__Envelope *e = unpack(m, n);
    free(m);
    return e;
}

static void expect_announce(Seed__Envelope *e, uint64_t v, uint64_t oldest) {
    CHECK(e->body_case == SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE, "got a %s, want an announce",
          wire_body_name(e->body_case));
    CHECK(e->weight_announce->version == v && e->weight_announce->oldest_served == oldest,
          "announce of version %" PRIu64 " (oldest served %" PRIu64 "), want %" PRIu64 " (%" PRIu64
          ")",
          e->weight_announce->version, e->weight_announce->oldest_served, v, oldest);
    seed__envelope__free_unpacked(e, NULL);
}

static void expect_bucket(Seed__Envelope *e, uint64_t v, uint32_t i) {
    CHECK(e->body_case == SEED__ENVELOPE__BODY_WEIGHT_BUCKET && e->weight_bucket->version == v &&
              e->weight_bucket->index == i,
          "want bucket %u of version %" PRIu64, i, v);
    seed__envelope__free_unpacked(e, NULL);
}

/* With keep_versions = 2, a client midway through version 1 still gets its buckets after
 * version 2 is out, and is told about version 3 once version 1 is no longer served. */
static int test_keep(void) {
    size_t words = 3 * MIB, nbytes = 4 * words;
    weights_tensor t[3];
    int nt = make_table(t, words);
    uint8_t *blob = malloc(nbytes);
    weights_pub *p = make_pub(4 << 20, 0);
    publish(p, blob, nbytes, 1, t, nt, NULL);
    wait_pub_latest(p, 1);
    void *ctx = zmq_ctx_new();
    void *s = raw_dealer(ctx, weights_pub_endpoint(p));
    raw_fetch(s, 0, NULL, 0, 0, "keep");
    expect_announce(raw_next(s), 1, 1);
    uint32_t i = 0;
    raw_fetch(s, 1, &i, 1, 0, "keep");
    expect_bucket(raw_next(s), 1, 0);
    publish(p, blob, nbytes, 2, t, nt, NULL);
    expect_announce(raw_next(s), 2, 1); /* pushed to every known receiver */
    i = 1;
    raw_fetch(s, 1, &i, 1, 0, "keep");
    expect_bucket(raw_next(s), 1, 1);
    publish(p, blob, nbytes, 3, t, nt, NULL);
    expect_announce(raw_next(s), 3, 2);
    i = 2;
    raw_fetch(s, 1, &i, 1, 0, "keep");
    expect_announce(raw_next(s), 3, 2); /* version 1 is gone: start over */
    weights_pub_stats st;
    double t0 = seed_now();
    do { /* the counters are published after the reply went out */
        weights_pub_stats_get(p, &st);
        CHECK(seed_now() - t0 < WAIT_S, "stale %" PRIu64 ", sent %" PRIu64, st.stale_fetches,
              st.buckets_sent);
    } while (!(st.stale_fetches == 1 && st.buckets_sent == 2));
    printf("keep: version 1 kept serving after version 2, dropped after version 3\n");
    zmq_close(s);
    zmq_ctx_term(ctx);
    weights_pub_free(p);
    free(blob);
    return 0;
}

/* ---- capture for the Python contract test ---------------------------------------------- */

static void write_file(const char *dir, const char *name, const void *d, size_t n) {
    char path[1024], err[SEED_ERRLEN];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(seed_write_file_atomic(path, d, n, err, sizeof err) == 0, "%s", err);
}

/* Announce + every bucket of the publisher's latest version, as raw frames. */
static void capture_frames(const char *dir, const char *tag, const char *ep) {
    void *ctx = zmq_ctx_new();
    void *s = raw_dealer(ctx, ep);
    raw_fetch(s, 0, NULL, 0, 0, "capture");
    uint8_t *m;
    size_t n = raw_recv(s, &m);
    char name[64];
    snprintf(name, sizeof name, "%s_announce.bin", tag);
    write_file(dir, name, m, n);
    Seed__Envelope *e = unpack(m, n);
    free(m);
    uint32_t nb = e->weight_announce->n_buckets, all[64];
    for (uint32_t i = 0; i < nb; i++) all[i] = i;
    raw_fetch(s, e->weight_announce->version, all, nb, 0, "capture");
    for (uint32_t i = 0; i < nb; i++) {
        n = raw_recv(s, &m);
        Seed__Envelope *bk = unpack(m, n);
        snprintf(name, sizeof name, "%s_bucket_%u.bin", tag, bk->weight_bucket->index);
        write_file(dir, name, m, n);
        seed__envelope__free_unpacked(bk, NULL);
        free(m);
    }
    seed__envelope__free_unpacked(e, NULL);
    zmq_close(s);
    zmq_ctx_term(ctx);
}

static int capture(const char *dir) {
    size_t words = 2 * MIB + 1000 + 3, nbytes = 4 * words; /* 3 f32 buckets, last partial */
    weights_tensor t[3];
    int nt = make_table(t, words);
    uint8_t *blob = malloc(nbytes);
    seed_rng rng;
    seed_rng_init(&rng, 5);
    float *f = (float *)blob;
    for (size_t i = 0; i < words; i++) f[i] = seed_rng_normal(&rng) * 0.02f;
    /* Edge cases for bf16 rounding: ties, NaNs, infinities, zeros, denormals, extremes. */
    static const uint32_t edge[] = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u, 0x7fc00000u,
                                    0x7f800001u, 0xffc12345u, 0x7f800000u, 0xff800000u, 0x00000000u,
                                    0x80000000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu,
                                    0x7f7f8000u, 0x00008000u, 0x3effff80u};
    for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++) memcpy(&f[k], &edge[k], 4);
    char err[SEED_ERRLEN];
    const char *cfg = "{\"model_type\": \"qwen2\", \"hidden_size\": 1024}";
    write_file(dir, "blob.bin", blob, nbytes);
    char tj[2048];
    size_t k = (size_t)snprintf(tj, sizeof tj, "[");
    for (int i = 0; i < nt; i++) {
        k += (size_t)snprintf(tj + k, sizeof tj - k, "%s{\"name\": \"%s\", \"shape\": [",
                              i ? ", " : "", t[i].name);
        for (int d = 0; d < t[i].ndim; d++)
            k +=
                (size_t)snprintf(tj + k, sizeof tj - k, "%s%" PRId64, d ? ", " : "", t[i].shape[d]);
        k += (size_t)snprintf(tj + k, sizeof tj - k,
                              "], \"offset\": %" PRIu64 ", \"nbytes\": %" PRIu64 "}", t[i].offset,
                              t[i].nbytes);
    }
    snprintf(tj + k, sizeof tj - k, "]");
    write_file(dir, "table.json", tj, strlen(tj));
    write_file(dir, "config.json", cfg, strlen(cfg));
    /* seed_crc32c over odd offsets and lengths (alignment prologues, tails, chaining). */
    char cases[8192];
    size_t ck = 0;
    for (int i = 0; i < 100; i++) {
        size_t off = (size_t)seed_rng_below(&rng, 4096);
        size_t len = i < 20 ? (size_t)i : (size_t)seed_rng_below(&rng, i < 60 ? 100 : 70000);
        size_t cut = len ? (size_t)seed_rng_below(&rng, len + 1) : 0;
        uint32_t c = seed_crc32c(seed_crc32c(0, blob + off, cut), blob + off + cut, len - cut);
        ck += (size_t)snprintf(cases + ck, sizeof cases - ck, "%zu %zu %u\n", off, len, c);
    }
    write_file(dir, "crc_cases.txt", cases, ck);

    for (int bf = 0; bf < 2; bf++) {
        weights_pub_config c;
        weights_pub_config_init(&c);
        c.endpoint = "tcp://127.0.0.1:*";
        c.bucket_bytes = 4 << 20;
        c.transport_dtype = bf ? WEIGHTS_BF16 : WEIGHTS_F32;
        weights_pub *p;
        CHECK(weights_pub_create(&p, &c, err, sizeof err) == 0, "%s", err);
        uint64_t version = bf ? 3 : 7;
        CHECK(weights_pub_publish(p, version, blob, nbytes, t, nt, cfg, err, sizeof err) == 0, "%s",
              err);
        wait_pub_latest(p, version);
        capture_frames(dir, bf ? "bf16" : "f32", weights_pub_endpoint(p));
        /* What a real receiver makes of it. */
        weights_rx_config rc;
        weights_rx_config_init(&rc);
        rc.endpoint = weights_pub_endpoint(p);
        weights_rx *rx;
        CHECK(weights_rx_create(&rx, &rc, err, sizeof err) == 0, "%s", err);
        CHECK(weights_rx_poll(rx, (int)(WAIT_S * 1000), err, sizeof err) == 1, "no version");
        weights_view v;
        CHECK(weights_rx_take(rx, &v, err, sizeof err) == 1 && v.nbytes == nbytes, "take");
        write_file(dir, bf ? "bf16_received.bin" : "f32_received.bin", v.blob, v.nbytes);
        weights_rx_free(rx);
        weights_pub_free(p);
    }
    free(blob);
    return 0;
}

int main(int argc, char **argv) {
    seed_log_set_level(SEED_LOG_WARN);
    seed_log_set_tag("weights_test");
    if (argc >= 2 && strcmp(argv[1], "parse") == 0) return test_parse();
    if (argc >= 2 && strcmp(argv[1], "table") == 0) return test_table();
    if (argc >= 2 && strcmp(argv[1], "broadcast") == 0) return test_broadcast();
    if (argc >= 2 && strcmp(argv[1], "late") == 0) return test_late();
    if (argc >= 2 && strcmp(argv[1], "restart") == 0) return test_restart();
    if (argc >= 2 && strcmp(argv[1], "keep") == 0) return test_keep();
    if (argc >= 2 && strcmp(argv[1], "corrupt") == 0) return test_corrupt();
    if (argc >= 2 && strcmp(argv[1], "dead") == 0) return test_dead();
    if (argc >= 2 && strcmp(argv[1], "malformed") == 0) return test_malformed();
    if (argc >= 3 && strcmp(argv[1], "capture") == 0) return capture(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "child-stall") == 0) return child_stall(argv[2]);
    fprintf(stderr,
            "usage: %s parse|table|broadcast|late|keep|corrupt|dead|malformed|capture "
            "DIR|child-stall ENDPOINT\n",
            argv[0]);
    return 2;
}
