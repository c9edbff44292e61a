/* test_wire.c — the wire layer through real ZeroMQ sockets on loopback TCP.
 *
 * Checks: every body type round-trips bit-exactly (packed bytes equal); each kind of bad
 * input (garbage, truncated, wrong schema, empty frame, no body, unexpected body type,
 * oversized, multi-frame, inconsistent packed lengths, skill slots outside the prompt,
 * scored group not parallel to its episodes, bad weight table) is counted in its own
 * counter and dropped while the good message sent right after it still arrives; the log
 * line is written once per peer; ROUTER routing (DEALER and REQ peers) and replies;
 * ZMQ_MAXMSGSIZE drops at the socket; CURVE refuses peers without the server key; setup
 * errors name the endpoint; a terminated context gives WIRE_TERM. Exact comparisons
 * everywhere: nothing here is numeric. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/util.h"
#include "proto/wire.h"
#include "tests/wire/wire_fixtures.h"

#include "tests/check.h"

static void *must_socket(void *ctx, int type, const wire_sockopts *o) {
    char err[SEED_ERRLEN];
    void *s = wire_socket(ctx, type, o, err, sizeof err);
    if (!s) {
        fprintf(stderr, "wire_socket: %s\n", err);
        exit(1);
    }
    int t = 5000; /* a lost message fails the test instead of hanging it */
    wire_check(zmq_setsockopt(s, ZMQ_RCVTIMEO, &t, sizeof t));
    return s;
}

static void must_bind(void *s, char *bound, size_t n) {
    char err[SEED_ERRLEN];
    if (wire_bind(s, "tcp://127.0.0.1:*", bound, n, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
}

static void must_connect(void *s, const char *ep) {
    char err[SEED_ERRLEN];
    if (wire_connect(s, ep, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
}

/* Receive one message and require it to be a copy of `want`. */
static void expect_same(wire_rx *rx, void *sock, const Seed__Envelope *want, const char *what) {
    char err[SEED_ERRLEN] = "";
    Seed__Envelope *got = NULL;
    int rc = wire_recv(rx, sock, &got, 0, err, sizeof err);
    CHECK(rc == 1, "%s: wire_recv returned %d (%s)", what, rc, err);
    if (rc == 1) {
        CHECK(got->schema == SEED_SCHEMA_VERSION, "%s: schema %u", what, got->schema);
        CHECK(got->body_case == want->body_case, "%s: body %s", what,
              wire_body_name(got->body_case));
        CHECK(wfx_same(got, want), "%s: the received envelope differs from the sent one", what);
    }
    wire_free(got);
}

/* Receive one message and require it to be dropped (counted in a reason). */
static void expect_dropped(wire_rx *rx, void *sock, const char *what) {
    char err[SEED_ERRLEN] = "";
    Seed__Envelope *got = NULL;
    wire_counters before = rx->c;
    int rc = wire_recv(rx, sock, &got, 0, err, sizeof err);
    uint64_t bad_before =
        before.malformed + before.wrong_version + before.oversized + before.unexpected_type;
    uint64_t bad_after =
        rx->c.malformed + rx->c.wrong_version + rx->c.oversized + rx->c.unexpected_type;
    CHECK(rc == 0 && !got && bad_after == bad_before + 1 && rx->c.received == before.received + 1,
          "%s: the bad message was not dropped and counted once (rc %d)", what, rc);
    wire_free(got);
}

static void send_raw(void *s, const void *data, size_t n) {
    wire_check(zmq_send(s, data, n, 0));
}

static void send_env(void *s, Seed__Envelope *env) {
    char err[SEED_ERRLEN];
    int rc = wire_send(s, env, 0, err, sizeof err);
    CHECK(rc == 0, "wire_send: %s", err);
}

static size_t pack_env(Seed__Envelope *env, uint8_t **out) {
    size_t n = seed__envelope__get_packed_size(env);
    *out = wfx_alloc(n);
    seed__envelope__pack(env, *out);
    return n;
}

static void test_round_trip(void *ctx) {
    char ep[256];
    void *pull = must_socket(ctx, ZMQ_PULL, NULL);
    must_bind(pull, ep, sizeof ep);
    void *push = must_socket(ctx, ZMQ_PUSH, NULL);
    must_connect(push, ep);
    wire_rx rx;
    wire_rx_init(&rx, "round-trip", WIRE_ACCEPT_ANY, 0, 0);
    wfx_all a;
    wfx_all_make(&a, 11);
    for (int i = 0; i < WFX_NCASES; i++) {
        Seed__Envelope env;
        wfx_envelope(&env, &a, wfx_cases[i], "tester-1");
        env.schema = 0; /* wire_send stamps it */
        send_env(push, &env);
        expect_same(&rx, pull, &env, wire_body_name(wfx_cases[i]));
    }
    CHECK(rx.c.received == (uint64_t)WFX_NCASES, "received %llu",
          (unsigned long long)rx.c.received);
    CHECK(rx.c.malformed + rx.c.wrong_version + rx.c.oversized + rx.c.unexpected_type == 0,
          "a good message was dropped");

    /* Nothing waiting: DONTWAIT gives "no message", not an error. */
    Seed__Envelope *none = NULL;
    char err[SEED_ERRLEN];
    CHECK(wire_recv(&rx, pull, &none, ZMQ_DONTWAIT, err, sizeof err) == 0 && !none,
          "DONTWAIT on an empty socket");

    /* wire_pack reuses its buffer and produces the bytes wire_send sent. */
    wire_buf b = {0};
    Seed__Envelope env;
    wfx_envelope(&env, &a, SEED__ENVELOPE__BODY_SCORED_GROUP, NULL);
    CHECK(wire_pack(&env, "packer", &b, err, sizeof err) == 0, "wire_pack: %s", err);
    Seed__Envelope *back = seed__envelope__unpack(NULL, b.len, b.data);
    CHECK(back && strcmp(back->sender, "packer") == 0 && wfx_same(back, &env), "wire_pack bytes");
    wire_free(back);
    uint8_t *first = b.data;
    CHECK(wire_pack(&env, NULL, &b, err, sizeof err) == 0 && b.data == first,
          "wire_pack grew a buffer that was large enough");
    wire_buf_free(&b);
    wfx_all_free(&a);
    wire_close(push);
    wire_close(pull);
}

/* Every kind of bad message, each followed by a good one that must still arrive. */
static void test_bad_inputs(void *ctx) {
    char ep[256], err[SEED_ERRLEN];
    wire_sockopts o;
    wire_sockopts_init(&o);
    o.max_msg_bytes = -1; /* the explicit bound in wire_rx is under test here */
    void *pull = must_socket(ctx, ZMQ_PULL, &o);
    must_bind(pull, ep, sizeof ep);
    void *push = must_socket(ctx, ZMQ_PUSH, NULL);
    must_connect(push, ep);
    wire_rx rx;
    const size_t bound = 1u << 20;
    wire_rx_init(&rx, "bad-inputs",
                 WIRE_ACCEPT_ANY & ~WIRE_ACCEPT(SEED__ENVELOPE__BODY_STATUS_REQUEST), bound, 0);
    wfx_all a;
    wfx_all_make(&a, 5);
    Seed__Envelope good;
    wfx_envelope(&good, &a, SEED__ENVELOPE__BODY_EPISODE_GROUP, "good-peer");
    uint64_t n_sent = 0;
#define GOOD_AFTER(what)                                                                           \
    do {                                                                                           \
        send_env(push, &good);                                                                     \
        n_sent += 2;                                                                               \
        expect_dropped(&rx, pull, what);                                                           \
        expect_same(&rx, pull, &good, what);                                                       \
    } while (0)

    /* 1. garbage: 0xff bytes are an overlong varint tag */
    uint8_t junk[100];
    memset(junk, 0xff, sizeof junk);
    send_raw(push, junk, sizeof junk);
    GOOD_AFTER("after garbage");
    CHECK(rx.c.malformed == 1, "garbage: malformed %llu", (unsigned long long)rx.c.malformed);
    CHECK(rx.c.logs == 1, "garbage logged %llu times", (unsigned long long)rx.c.logs);

    /* 2. truncated: cut inside the group's packed arrays */
    uint8_t *bytes;
    size_t n = pack_env(&good, &bytes);
    send_raw(push, bytes, n * 6 / 10);
    GOOD_AFTER("after truncated");
    CHECK(rx.c.malformed == 2, "truncated: malformed %llu", (unsigned long long)rx.c.malformed);
    CHECK(rx.c.logs == 1, "same peer, no sender: still one log line, have %llu",
          (unsigned long long)rx.c.logs);

    /* 3. multi-frame: a good envelope followed by another frame */
    wire_check(zmq_send(push, bytes, n, ZMQ_SNDMORE));
    wire_check(zmq_send(push, junk, 10, 0));
    GOOD_AFTER("after multi-frame");
    CHECK(rx.c.malformed == 3, "multi-frame: malformed %llu", (unsigned long long)rx.c.malformed);
    free(bytes);

    /* 4. wrong schema version, from a named sender: a new peer key, one more log line */
    Seed__Envelope bad;
    wfx_envelope(&bad, &a, SEED__ENVELOPE__BODY_HELLO, "bad-1");
    bad.schema = 2;
    n = pack_env(&bad, &bytes);
    send_raw(push, bytes, n);
    free(bytes);
    GOOD_AFTER("after wrong schema");
    CHECK(rx.c.wrong_version == 1, "wrong schema: %llu", (unsigned long long)rx.c.wrong_version);
    CHECK(rx.c.logs == 2, "a named sender is a new peer: logs %llu", (unsigned long long)rx.c.logs);

    /* 5. an empty frame parses as an all-default Envelope: schema 0 */
    send_raw(push, "", 0);
    GOOD_AFTER("after empty frame");
    CHECK(rx.c.wrong_version == 2, "empty frame: wrong_version %llu",
          (unsigned long long)rx.c.wrong_version);

    /* 6. no body, 7. a body this socket does not accept */
    wire_envelope_init(&bad, "bad-1");
    send_env(push, &bad);
    GOOD_AFTER("after no body");
    wfx_envelope(&bad, &a, SEED__ENVELOPE__BODY_STATUS_REQUEST, "bad-1");
    send_env(push, &bad);
    GOOD_AFTER("after unexpected type");
    CHECK(rx.c.unexpected_type == 2, "unexpected: %llu", (unsigned long long)rx.c.unexpected_type);

    /* 8. oversized: a valid group larger than the 1 MiB bound */
    wfx_group big;
    wfx_group_make(&big, 8, 10, 5000, 100, 9);
    Seed__Envelope benv;
    wire_envelope_init(&benv, "bad-1");
    benv.body_case = SEED__ENVELOPE__BODY_EPISODE_GROUP;
    benv.episode_group = &big.g;
    CHECK(seed__envelope__get_packed_size(&benv) > bound, "the big group is not big");
    send_env(push, &benv);
    GOOD_AFTER("after oversized");
    CHECK(rx.c.oversized == 1, "oversized: %llu", (unsigned long long)rx.c.oversized);
    /* 8b. oversized in total over several frames, each under the bound */
    wfx_group_free(&big);
    wfx_group_make(&big, 4, 10, 5000, 100, 9);
    n = pack_env(&benv, &bytes);
    CHECK(n < bound && 2 * n > bound, "frame sizes for the multi-frame oversize case");
    wire_check(zmq_send(push, bytes, n, ZMQ_SNDMORE));
    wire_check(zmq_send(push, bytes, n, 0));
    free(bytes);
    GOOD_AFTER("after multi-frame oversized");
    CHECK(rx.c.oversized == 2, "multi-frame oversized: %llu", (unsigned long long)rx.c.oversized);
    wfx_group_free(&big);

    /* 9. inconsistent packed lengths: one step with a log-prob short */
    Seed__Step *st = a.grp.g.episodes[1]->steps[2];
    st->n_sample_logprobs--;
    send_env(push, &good);
    st->n_sample_logprobs++;
    GOOD_AFTER("after inconsistent lengths");
    /* 10. skill slot past the prompt */
    uint32_t slot = st->skill_slot_step;
    st->skill_slot_step = (uint32_t)st->n_prompt_ids + 1;
    send_env(push, &good);
    st->skill_slot_step = slot;
    GOOD_AFTER("after skill slot outside the prompt");
    /* 10b. episode slot after the step slot */
    slot = st->skill_slot_episode;
    st->skill_slot_episode = st->skill_slot_step + 1;
    send_env(push, &good);
    st->skill_slot_episode = slot;
    GOOD_AFTER("after skill slots out of order");
    /* 11. a scored group with one analysis missing, 12. with s shorter than the response */
    Seed__Envelope sc;
    wfx_envelope(&sc, &a, SEED__ENVELOPE__BODY_SCORED_GROUP, "good-peer");
    a.scored.sg.n_analyses--;
    send_env(push, &sc);
    a.scored.sg.n_analyses++;
    GOOD_AFTER("after scored group missing an analysis");
    a.scored.sg.analyses[1]->steps[0]->n_q--;
    send_env(push, &sc);
    a.scored.sg.analyses[1]->steps[0]->n_q++;
    GOOD_AFTER("after q shorter than the response");
    /* 13. a weight table that points past the blob */
    Seed__Envelope wa;
    wfx_envelope(&wa, &a, SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE, "good-peer");
    a.ti[1].nbytes = 1001;
    send_env(push, &wa);
    a.ti[1].nbytes = 1000;
    GOOD_AFTER("after tensor outside the blob");
    CHECK(rx.c.malformed == 9, "semantic checks: malformed %llu",
          (unsigned long long)rx.c.malformed);

    /* A second named peer gets its own single log line. */
    void *push2 = must_socket(ctx, ZMQ_PUSH, NULL);
    must_connect(push2, ep);
    wfx_envelope(&bad, &a, SEED__ENVELOPE__BODY_STATUS_REQUEST, "bad-2");
    send_env(push2, &bad);
    send_env(push2, &bad);
    send_env(push2, &good);
    n_sent += 3;
    expect_dropped(&rx, pull, "bad-2 first");
    expect_dropped(&rx, pull, "bad-2 second");
    expect_same(&rx, pull, &good, "after bad-2");
    CHECK(rx.c.unexpected_type == 4, "bad-2: unexpected %llu",
          (unsigned long long)rx.c.unexpected_type);

    CHECK(rx.c.received == n_sent, "received %llu, sent %llu", (unsigned long long)rx.c.received,
          (unsigned long long)n_sent);
    /* Peers: 127.0.0.1 without sender, +bad-1, +good-peer (its semantic failures), +bad-2 */
    CHECK(rx.c.logs == 4, "log lines %llu, expected one per peer (4)",
          (unsigned long long)rx.c.logs);
    CHECK(rx.c.logs_suppressed == 0, "suppressed %llu", (unsigned long long)rx.c.logs_suppressed);

    /* wire_decode on bytes the caller owns counts the same way. */
    Seed__Envelope *out = NULL;
    CHECK(wire_decode(&rx, junk, sizeof junk, "direct", &out) == 0 && !out, "wire_decode junk");
    CHECK(rx.c.malformed == 10 && rx.c.logs == 5, "wire_decode counting: malformed %llu logs %llu",
          (unsigned long long)rx.c.malformed, (unsigned long long)rx.c.logs);
    /* wire_validate names what is wrong. */
    char why[256];
    st->n_sample_logprobs--;
    CHECK(wire_validate(&good, WIRE_ACCEPT_ANY, why, sizeof why) == WIRE_BAD_MALFORMED &&
              strstr(why, "sample log-probs"),
          "wire_validate sentence: %s", why);
    st->n_sample_logprobs++;
    (void)err;
    wfx_all_free(&a);
    wire_close(push2);
    wire_close(push);
    wire_close(pull);
#undef GOOD_AFTER
}

/* The log-once table stops growing (and counts) when many peers misbehave. */
static void test_log_table_full(void) {
    wire_rx rx;
    wire_rx_init(&rx, "many-peers", WIRE_ACCEPT_ANY, 0, 0);
    uint8_t junk[4] = {0xff, 0xff, 0xff, 0xff};
    char peer[32];
    seed_log_set_level(SEED_LOG_ERROR); /* 192 warnings are the point, not worth reading */
    for (int i = 0; i < 3 * WIRE_LOG_PEERS; i++) {
        snprintf(peer, sizeof peer, "10.0.%d.%d", i / 250, i % 250);
        Seed__Envelope *out;
        wire_decode(&rx, junk, sizeof junk, peer, &out);
    }
    seed_log_set_level(SEED_LOG_INFO);
    CHECK(rx.c.malformed == 3 * WIRE_LOG_PEERS, "malformed %llu",
          (unsigned long long)rx.c.malformed);
    CHECK(rx.c.logs == WIRE_LOG_PEERS * 3 / 4 && rx.c.logs + rx.c.logs_suppressed == rx.c.malformed,
          "logs %llu suppressed %llu", (unsigned long long)rx.c.logs,
          (unsigned long long)rx.c.logs_suppressed);
}

static void test_router(void *ctx) {
    char ep[256], err[SEED_ERRLEN];
    void *router = must_socket(ctx, ZMQ_ROUTER, NULL);
    must_bind(router, ep, sizeof ep);
    void *dealer = must_socket(ctx, ZMQ_DEALER, NULL);
    must_connect(dealer, ep);
    void *req = must_socket(ctx, ZMQ_REQ, NULL);
    must_connect(req, ep);
    wire_rx srx, crx;
    wire_rx_init(&srx, "router", WIRE_ACCEPT(SEED__ENVELOPE__BODY_ENV_REQUEST), 0, 1);
    wire_rx_init(&crx, "dealer", WIRE_ACCEPT(SEED__ENVELOPE__BODY_ENV_REPLY), 0, 0);
    wfx_all a;
    wfx_all_make(&a, 3);
    Seed__Envelope q, r;
    wfx_envelope(&q, &a, SEED__ENVELOPE__BODY_ENV_REQUEST, "client");
    wfx_envelope(&r, &a, SEED__ENVELOPE__BODY_ENV_REPLY, "server");
    void *clients[2] = {dealer, req};
    for (int i = 0; i < 2; i++) {
        send_env(clients[i], &q);
        expect_same(&srx, router, &q, i ? "REQ -> ROUTER" : "DEALER -> ROUTER");
        CHECK(srx.from.id_len > 0 && srx.from.delimiter == i, "peer %d: id_len %zu delimiter %d", i,
              srx.from.id_len, srx.from.delimiter);
        CHECK(wire_send_to(router, &srx.from, &r, 0, err, sizeof err) == 0, "send_to: %s", err);
        expect_same(&crx, clients[i], &r, i ? "ROUTER -> REQ" : "ROUTER -> DEALER");
    }
    /* DEALER sending two frames: [id][a][b] with a non-empty, not a valid shape. */
    wire_check(zmq_send(dealer, "x", 1, ZMQ_SNDMORE));
    wire_check(zmq_send(dealer, "y", 1, 0));
    send_env(dealer, &q);
    expect_dropped(&srx, router, "3-frame message");
    expect_same(&srx, router, &q, "after a 3-frame message");
    CHECK(srx.c.malformed == 1, "routed multi-frame: malformed %llu",
          (unsigned long long)srx.c.malformed);
    /* A reply the client does not accept (a request echoed back) is counted, not returned. */
    CHECK(wire_send_to(router, &srx.from, &q, 0, err, sizeof err) == 0, "send_to: %s", err);
    CHECK(wire_send_to(router, &srx.from, &r, 0, err, sizeof err) == 0, "send_to: %s", err);
    expect_dropped(&crx, dealer, "an echoed request");
    expect_same(&crx, dealer, &r, "reply after an unexpected one");
    CHECK(crx.c.unexpected_type == 1, "dealer unexpected %llu",
          (unsigned long long)crx.c.unexpected_type);
    wfx_all_free(&a);
    wire_close(req);
    wire_close(dealer);
    wire_close(router);
}

/* ZMQ_MAXMSGSIZE: libzmq drops an oversized message (and the connection) before wire_recv
 * sees it; the sender reconnects and later messages arrive. */
static void test_socket_maxmsgsize(void *ctx) {
    char ep[256], err[SEED_ERRLEN];
    wire_sockopts o;
    wire_sockopts_init(&o);
    o.max_msg_bytes = 4096;
    void *pull = must_socket(ctx, ZMQ_PULL, &o);
    must_bind(pull, ep, sizeof ep);
    int t = 100;
    wire_check(zmq_setsockopt(pull, ZMQ_RCVTIMEO, &t, sizeof t));
    void *push = must_socket(ctx, ZMQ_PUSH, NULL);
    must_connect(push, ep);
    wire_rx rx;
    wire_rx_init(&rx, "maxmsg", WIRE_ACCEPT_ANY, 0, 0);
    wfx_group big;
    wfx_group_make(&big, 2, 2, 1000, 50, 1);
    Seed__Envelope benv, small;
    wire_envelope_init(&benv, "big");
    benv.body_case = SEED__ENVELOPE__BODY_EPISODE_GROUP;
    benv.episode_group = &big.g;
    Seed__Control ctl = SEED__CONTROL__INIT;
    ctl.kind = SEED__CONTROL__KIND__PAUSE;
    wire_envelope_init(&small, "small");
    small.body_case = SEED__ENVELOPE__BODY_CONTROL;
    small.control = &ctl;
    send_env(push, &benv);
    Seed__Envelope *got = NULL;
    int rc = 0;
    /* Keep offering small messages: the first may be lost with the dropped connection. */
    for (int i = 0; i < 100 && rc != 1; i++) {
        send_env(push, &small);
        rc = wire_recv(&rx, pull, &got, 0, err, sizeof err);
    }
    CHECK(rc == 1 && got && got->body_case == SEED__ENVELOPE__BODY_CONTROL,
          "after an oversized message the socket did not deliver a small one (rc %d)", rc);
    CHECK(rx.c.received == 1 && rx.c.oversized == 0,
          "the oversized message reached wire_recv (received %llu)",
          (unsigned long long)rx.c.received);
    wire_free(got);
    wfx_group_free(&big);
    wire_close(push);
    wire_close(pull);
}

/* CURVE: a client with the server's key gets through, one without it or with a wrong key
 * does not (the handshake fails, nothing is delivered). */
static void test_curve(void *ctx) {
    char err[SEED_ERRLEN], ep[256];
    if (!zmq_has("curve")) {
        printf("curve: libzmq without CURVE, skipped\n");
        return;
    }
    char spub[41], ssec[41], cpub[41], csec[41], opub[41], osec[41];
    CHECK(wire_curve_keypair(spub, ssec, err, sizeof err) == 0, "%s", err);
    CHECK(wire_curve_keypair(cpub, csec, err, sizeof err) == 0, "%s", err);
    CHECK(wire_curve_keypair(opub, osec, err, sizeof err) == 0, "%s", err);
    wire_sockopts so, co, wo;
    wire_sockopts_init(&so);
    CHECK(wire_sockopts_curve_server(&so, spub, ssec, err, sizeof err) == 0, "%s", err);
    wire_sockopts_init(&co);
    CHECK(wire_sockopts_curve_client(&co, cpub, csec, spub, err, sizeof err) == 0, "%s", err);
    wire_sockopts_init(&wo);
    CHECK(wire_sockopts_curve_client(&wo, cpub, csec, opub, err, sizeof err) == 0, "%s", err);
    CHECK(wire_sockopts_curve_server(&so, "short", ssec, err, sizeof err) < 0 && strstr(err, "Z85"),
          "a bad key is refused with a sentence: %s", err);
    wire_sockopts_curve_server(&so, spub, ssec, err, sizeof err);

    void *pull = must_socket(ctx, ZMQ_PULL, &so);
    must_bind(pull, ep, sizeof ep);
    int t = 300;
    wire_check(zmq_setsockopt(pull, ZMQ_RCVTIMEO, &t, sizeof t));
    wire_rx rx;
    wire_rx_init(&rx, "curve", WIRE_ACCEPT_ANY, 0, 0);
    Seed__StatusRequest sr = SEED__STATUS_REQUEST__INIT;
    Seed__Envelope env;
    Seed__Envelope *got = NULL;
    const char *names[3] = {"no key", "wrong server key", "right key"};
    void *cl[3] = {must_socket(ctx, ZMQ_PUSH, NULL), must_socket(ctx, ZMQ_PUSH, &wo),
                   must_socket(ctx, ZMQ_PUSH, &co)};
    for (int i = 0; i < 3; i++) {
        must_connect(cl[i], ep);
        wire_envelope_init(&env, names[i]);
        env.body_case = SEED__ENVELOPE__BODY_STATUS_REQUEST;
        env.status_request = &sr;
        send_env(cl[i], &env);
        int rc = wire_recv(&rx, pull, &got, 0, err, sizeof err);
        if (i < 2)
            CHECK(rc == 0 && !got, "a client with %s got through", names[i]);
        else
            CHECK(rc == 1 && got && strcmp(got->sender, names[i]) == 0,
                  "a client with the right key did not get through (rc %d)", rc);
        wire_free(got);
        got = NULL;
    }
    CHECK(rx.c.received == 1, "received %llu", (unsigned long long)rx.c.received);
    for (int i = 0; i < 3; i++) wire_close(cl[i]);
    wire_close(pull);
}

static void test_hello_heartbeat(void *ctx) {
    char ep[256], err[SEED_ERRLEN];
    void *pull = must_socket(ctx, ZMQ_PULL, NULL);
    must_bind(pull, ep, sizeof ep);
    void *push = must_socket(ctx, ZMQ_PUSH, NULL);
    must_connect(push, ep);
    wire_identity me;
    wire_identity_init(&me, SEED__ROLE__ROLE_ACTOR, "actor");
    CHECK(strncmp(me.id, "actor-", 6) == 0 && me.pid == (uint32_t)getpid(), "identity %s", me.id);
    CHECK(wire_send_hello(push, &me, 5, 0, err, sizeof err) == 0, "%s", err);
    Seed__Heartbeat hb = SEED__HEARTBEAT__INIT;
    hb.episodes = 12;
    hb.env_errors = 1;
    CHECK(wire_send_heartbeat(push, &me, &hb, 0, err, sizeof err) == 0, "%s", err);
    wire_rx rx;
    wire_rx_init(&rx, "telemetry",
                 WIRE_ACCEPT(SEED__ENVELOPE__BODY_HELLO) |
                     WIRE_ACCEPT(SEED__ENVELOPE__BODY_HEARTBEAT),
                 0, 0);
    Seed__Envelope *h = NULL, *b = NULL;
    CHECK(wire_recv(&rx, pull, &h, 0, err, sizeof err) == 1, "hello: %s", err);
    CHECK(wire_recv(&rx, pull, &b, 0, err, sizeof err) == 1, "heartbeat: %s", err);
    if (h && b) {
        CHECK(h->body_case == SEED__ENVELOPE__BODY_HELLO && strcmp(h->sender, me.id) == 0 &&
                  strcmp(h->hello->id, me.id) == 0 && h->hello->weights_version == 5 &&
                  h->hello->role == SEED__ROLE__ROLE_ACTOR && h->hello->pid == me.pid,
              "hello fields");
        CHECK(b->body_case == SEED__ENVELOPE__BODY_HEARTBEAT && b->heartbeat->episodes == 12 &&
                  b->heartbeat->env_errors == 1 && b->heartbeat->time > 1e9 &&
                  strcmp(b->heartbeat->host, me.host) == 0,
              "heartbeat fields");
    }
    wire_free(h);
    wire_free(b);
    wire_close(push);
    wire_close(pull);
}

static void test_setup_errors(void *ctx) {
    char err[SEED_ERRLEN];
    void *s = must_socket(ctx, ZMQ_PULL, NULL);
    CHECK(wire_bind(s, "tcp://127.0.0.1:notaport", NULL, 0, err, sizeof err) < 0 &&
              strstr(err, "tcp://127.0.0.1:notaport"),
          "bind error names the endpoint: %s", err);
    CHECK(wire_connect(s, "nonsense", err, sizeof err) < 0 && strstr(err, "nonsense"),
          "connect error names the endpoint: %s", err);
    wire_sockopts o;
    wire_sockopts_init(&o);
    o.sndhwm = -5;
    CHECK(wire_socket(ctx, ZMQ_PUSH, &o, err, sizeof err) == NULL && strstr(err, "ZMQ_SNDHWM"),
          "a bad option is named: %s", err);
    wire_close(s);
}

static void test_term(void) {
    void *ctx = zmq_ctx_new();
    char err[SEED_ERRLEN] = "";
    void *s = must_socket(ctx, ZMQ_PULL, NULL);
    zmq_ctx_shutdown(ctx);
    wire_rx rx;
    wire_rx_init(&rx, "term", WIRE_ACCEPT_ANY, 0, 0);
    Seed__Envelope *out = NULL;
    int rc = wire_recv(&rx, s, &out, 0, err, sizeof err);
    CHECK(rc == WIRE_TERM && strstr(err, "terminated"), "rc %d: %s", rc, err);
    wire_close(s);
    zmq_ctx_term(ctx);
}

int main(void) {
    void *ctx = zmq_ctx_new();
    test_round_trip(ctx);
    test_bad_inputs(ctx);
    test_log_table_full();
    test_router(ctx);
    test_socket_maxmsgsize(ctx);
    test_curve(ctx);
    test_hello_heartbeat(ctx);
    test_setup_errors(ctx);
    zmq_ctx_term(ctx);
    test_term();
    if (check_failures) {
        fprintf(stderr, "test_wire: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_wire: all checks passed\n");
    return 0;
}
