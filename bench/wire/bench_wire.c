/* bench_wire.c — throughput of seed's wire layer and `remote` env (Release build).
 *
 *   bench_wire [PYTHON SERVER_PY PY_BENCH]   (defaults from CMake)
 *
 * 1. Envelope codec on a realistic EpisodeGroup (8 episodes x 10 steps x 400 prompt ids +
 *    60 response ids + log-probs): seed's wire_pack and wire_decode (parse + validation)
 *    vs Google's official Python protobuf runtime (upb) on the same bytes. MB/s of
 *    envelope bytes.
 * 2. Remote-env round trips per second over loopback TCP, one request in flight:
 *    seed's C `remote` env -> seed_envserver.py (echo env), the reference Python client
 *    (pyzmq + protobuf) -> the same server, and seed's C client -> a C echo ROUTER (the
 *    transport ceiling: decode, validate, encode on both ends, no Python).
 * Prints every figure and the ratios. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "envs/env.h"
#include "envs/remote.h"
#include "common/util.h"
#include "proto/wire.h"
#include "tests/wire/testproc.h"
#include "tests/wire/wire_fixtures.h"

#ifndef SEED_BENCH_PYTHON
#define SEED_BENCH_PYTHON "python3"
#endif
#ifndef SEED_BENCH_SERVER
#define SEED_BENCH_SERVER "seed_envserver.py"
#endif
#ifndef SEED_BENCH_PY
#define SEED_BENCH_PY "py_wire_bench.py"
#endif

static void die(const char *what, const char *err) {
    fprintf(stderr, "bench_wire: %s: %s\n", what, err);
    exit(1);
}

/* Run a Python helper and return the numbers after the first `n` labels of its output. */
static int run_py(char *const argv[], const char *prefix, double *vals, int n) {
    tproc p;
    if (tproc_start(&p, argv)) return -1;
    char line[512];
    int rc = tproc_expect(&p, prefix, line, sizeof line, 300000);
    tproc_stop(&p, 0, 60000);
    if (rc) return -1;
    /* "prefix label1 v1 label2 v2 ..." */
    char *s = line + strlen(prefix);
    for (int i = 0; i < n; i++) {
        char label[64];
        int used = 0;
        if (sscanf(s, " %63s %lf%n", label, &vals[i], &used) != 2) return -1;
        s += used;
    }
    return 0;
}

static void bench_codec(const char *py, const char *pyb) {
    wfx_group g;
    wfx_group_make(&g, 8, 10, 400, 60, 1);
    Seed__Envelope envl;
    wire_envelope_init(&envl, "actor-bench");
    envl.body_case = SEED__ENVELOPE__BODY_EPISODE_GROUP;
    envl.episode_group = &g.g;
    wire_buf b = {0};
    char err[SEED_ERRLEN];
    if (wire_pack(&envl, NULL, &b, err, sizeof err)) die("pack", err);
    /* Best of 4 interleaved 0.25 s rounds each: scheduling noise only slows rounds down. */
    wire_rx rx;
    wire_rx_init(&rx, "bench", WIRE_ACCEPT_ANY, 0, 0);
    double enc = 0, dec = 0, parse = 0;
    for (int round = 0; round < 4; round++) {
        for (int what = 0; what < 3; what++) {
            double t0 = seed_now();
            long n = 0;
            while (seed_now() - t0 < 0.25) {
                for (int i = 0; i < 10; i++) {
                    if (what == 0) {
                        wire_pack(&envl, NULL, &b, err, sizeof err);
                    } else if (what == 1) {
                        Seed__Envelope *out = NULL;
                        if (wire_decode(&rx, b.data, b.len, NULL, &out) != 1)
                            die("decode", "rejected");
                        wire_free(out);
                    } else { /* the validation's share: parse alone */
                        seed__envelope__free_unpacked(seed__envelope__unpack(NULL, b.len, b.data),
                                                      NULL);
                    }
                }
                n += 10;
            }
            double mbps = (double)n * (double)b.len / (seed_now() - t0) / 1e6;
            double *best = what == 0 ? &enc : what == 1 ? &dec : &parse;
            *best = SEED_MAX(*best, mbps);
        }
    }

    const char *path = "bench_wire_group.bin";
    if (seed_write_file_atomic(path, b.data, b.len, err, sizeof err)) die("write", err);
    double ref[2] = {0, 0};
    char *argv[] = {(char *)py, (char *)pyb, "codec", (char *)path, "1.0", NULL};
    int ok = run_py(argv, "codec", ref, 2) == 0;
    printf("\nEnvelope codec, EpisodeGroup 8x10x(400+60), %.1f KB per envelope\n", b.len / 1e3);
    printf("  %-34s %10s %10s %8s\n", "", "seed", "python", "ratio");
    printf("  %-34s %10.1f %10.1f %7.2fx\n", "encode MB/s (protobuf-c / upb)", enc, ref[0],
           ok ? enc / ref[0] : 0.0);
    printf("  %-34s %10.1f %10.1f %7.2fx\n", "decode MB/s (seed: parse+validate)", dec, ref[1],
           ok ? dec / ref[1] : 0.0);
    printf("  %-34s %10.1f %10s\n", "decode MB/s (protobuf-c parse only)", parse, "");
    printf("  envelopes/s: encode %.0f, decode %.0f\n", enc * 1e6 / (double)b.len,
           dec * 1e6 / (double)b.len);
    if (!ok) printf("  (the Python reference did not run)\n");
    remove(path);
    wire_buf_free(&b);
    wfx_group_free(&g);
}

/* The C echo server: decode + validate each request, answer with an EnvReply. */
typedef struct echo_srv {
    void *ctx;
    char ep[256];
    void *ready;
} echo_srv;

static void *echo_main(void *arg) {
    echo_srv *s = arg;
    char err[SEED_ERRLEN];
    void *sock = wire_socket(s->ctx, ZMQ_ROUTER, NULL, err, sizeof err);
    wire_check(wire_bind(sock, "tcp://127.0.0.1:*", s->ep, sizeof s->ep, err, sizeof err));
    wire_check(zmq_send(s->ready, "", 0, 0));
    wire_rx rx;
    wire_rx_init(&rx, "echo", WIRE_ACCEPT(SEED__ENVELOPE__BODY_ENV_REQUEST), 0, 1);
    char *adm[2] = {"a", "b"};
    char obs[256];
    for (;;) {
        Seed__Envelope *q = NULL;
        int rc = wire_recv(&rx, sock, &q, 0, err, sizeof err);
        if (rc < 0) break; /* context shut down */
        if (rc == 0) continue;
        Seed__EnvReply rep = SEED__ENV_REPLY__INIT;
        rep.session = q->env_request->session;
        rep.seq = q->env_request->seq;
        snprintf(obs, sizeof obs, "echo: %s", q->env_request->action);
        rep.observation = obs;
        rep.n_admissible = 2;
        rep.admissible = adm;
        rep.reward = strcmp(q->env_request->action, "a") == 0 ? 1.0f : 0.0f;
        Seed__Envelope out;
        wire_envelope_init(&out, "c-echo");
        out.body_case = SEED__ENVELOPE__BODY_ENV_REPLY;
        out.env_reply = &rep;
        if (q->env_request->kind != SEED__ENV_REQUEST__KIND__CLOSE)
            wire_send_to(sock, &rx.from, &out, 0, err, sizeof err);
        wire_free(q);
    }
    wire_close(sock);
    return NULL;
}

/* Round trips per second of env_step through the remote env at `ep`. */
static double remote_rate(const char *ep, int n) {
    char err[SEED_ERRLEN];
    env_kv kv[] = {{"endpoint", ep}, {"env", "echo"}, {"max_steps", "1000000"}};
    env *e = NULL;
    if (env_create(&e, "remote", kv, 3, err, sizeof err)) die("env_create", err);
    env_obs obs;
    if (env_reset(e, 1, ENV_SPLIT_TRAIN, &obs, err, sizeof err)) die("reset", err);
    for (int i = 0; i < 200; i++)
        if (env_step(e, "a", &obs, err, sizeof err)) die("step", err);
    double t0 = seed_now();
    for (int i = 0; i < n; i++) {
        if (env_step(e, "a", &obs, err, sizeof err)) die("step", err);
        if (strcmp(obs.observation, "echo: a") != 0) die("step", "wrong observation");
    }
    double rate = n / (seed_now() - t0);
    env_destroy(e);
    return rate;
}

static void bench_remote(const char *py, const char *server, const char *pyb) {
    tproc srv;
    char *sargv[] = {(char *)py, (char *)server,  "--bind",      "tcp://127.0.0.1:*", "--env",
                     "echo",     "--watch-stdin", "--log-level", "WARNING",           NULL};
    if (tproc_start(&srv, sargv)) die("server", "cannot start");
    char line[512], ep[256];
    const char *prefix = "seed_envserver: listening on ";
    if (tproc_expect(&srv, prefix, line, sizeof line, 120000)) die("server", "did not start");
    snprintf(ep, sizeof ep, "%s", line + strlen(prefix));
    char *sp = strchr(ep, ' ');
    if (sp) *sp = 0;

    /* Best of 3 interleaved rounds: the figures are latency-bound, and a shared machine
     * adds scheduling noise that only ever slows a round down. */
    const int n_py = 5000, rounds = 3;
    double c_py = 0, ref = 0;
    int ok = 1;
    char n_str[16];
    snprintf(n_str, sizeof n_str, "%d", n_py);
    char *cargv[] = {(char *)py, (char *)pyb, "client", ep, n_str, NULL};
    for (int r = 0; r < rounds; r++) {
        c_py = SEED_MAX(c_py, remote_rate(ep, n_py));
        double x = 0;
        ok = ok && run_py(cargv, "client", &x, 1) == 0;
        ref = SEED_MAX(ref, x);
    }
    tproc_stop(&srv, SIGTERM, 30000);

    void *ctx = zmq_ctx_new();
    echo_srv es = {ctx, "", NULL};
    void *ready = zmq_socket(ctx, ZMQ_PAIR);
    wire_check(zmq_bind(ready, "inproc://echo-ready"));
    es.ready = zmq_socket(ctx, ZMQ_PAIR);
    wire_check(zmq_connect(es.ready, "inproc://echo-ready"));
    pthread_t th;
    pthread_create(&th, NULL, echo_main, &es);
    char b[4];
    wire_check(zmq_recv(ready, b, sizeof b, 0));
    double c_c = 0;
    for (int r = 0; r < rounds; r++) c_c = SEED_MAX(c_c, remote_rate(es.ep, 10000));
    zmq_close(ready);
    zmq_close(es.ready);
    zmq_ctx_shutdown(ctx);
    pthread_join(th, NULL);
    zmq_ctx_term(ctx);

    printf("\nRemote env round trips/s over loopback TCP (one request in flight, best of %d)\n",
           rounds);
    printf("  %-48s %10.0f\n", "seed C remote env -> Python server (echo env)", c_py);
    printf("  %-48s %10.0f\n", "Python client (pyzmq+protobuf) -> same server", ref);
    printf("  %-48s %10.0f\n", "seed C remote env -> C echo ROUTER (ceiling)", c_c);
    if (ok) printf("  ratio seed/Python client against the Python server: %.2fx\n", c_py / ref);
    printf("  ratio C echo ceiling / Python server: %.2fx (the server is the bottleneck)\n",
           c_c / c_py);
    printf("  mean round trip: %.1f us (Python server), %.1f us (C echo)\n", 1e6 / c_py, 1e6 / c_c);
}

int main(int argc, char **argv) {
    const char *py = argc > 1 ? argv[1] : SEED_BENCH_PYTHON;
    const char *server = argc > 2 ? argv[2] : SEED_BENCH_SERVER;
    const char *pyb = argc > 3 ? argv[3] : SEED_BENCH_PY;
    seed_log_set_level(SEED_LOG_ERROR);
    bench_codec(py, pyb);
    bench_remote(py, server, pyb);
    return 0;
}
