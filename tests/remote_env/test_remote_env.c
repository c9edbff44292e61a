/* test_remote_env.c — the `remote` env against real servers on loopback.
 *
 *   test_remote_env faults
 *       No Python: a server that takes requests and never answers (a ROUTER that only
 *       reads), a TCP port that accepts but never speaks ZMTP, a closed port, and a fake
 *       server that sends a stale reply, another session's reply and garbage before the
 *       right one, then a reply with `error` set. Timeouts must come back as the
 *       documented sentence within the configured bound; late replies and garbage are
 *       counted and skipped. Config errors name the key.
 *   test_remote_env sokoban PYTHON SERVER_PY CHECK_PY
 *       Episodes against seed_envserver.py wrapping gym-sokoban: levels solved by a BFS
 *       planner on the text grid (won), random and invalid actions to the step limit;
 *       the transcript is replayed in gym_sokoban itself by CHECK_PY and must match
 *       exactly. Then garbage to the server, an env-name mismatch, a server killed
 *       mid-episode (timeout error), and recovery once a server is back on the port.
 *   test_remote_env curve PYTHON SERVER_PY
 *       The server with a CURVE key: a client given the server's public key is served; a
 *       plain client and one trusting another key time out; bad curve config is refused.
 *   test_remote_env twx PYTHON SERVER_PY CHECK_PY
 *       TextWorldExpress cookingworld: the gold path (from the library) played through
 *       the server wins; random admissible actions to the limit; transcript replayed in
 *       TextWorldExpressEnv by CHECK_PY.
 *   test_remote_env searchr1 PYTHON SERVER_PY RETRIEVER_PY DATA_DIR
 *       Search-R1 episodes through the server's search-r1 adapter and a loopback
 *       retriever speaking Search-R1's API (RETRIEVER_PY over DATA_DIR/corpus.jsonl): every
 *       question of DATA_DIR/qa.jsonl searched and answered right (won, reward 1); a wrong
 *       answer (done, reward 0); invalid steps (Search-R1's invalid-action text, the
 *       episode goes on); the step limit.
 * Exact comparisons only (the checker compares float32 rewards bit for bit). */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <zmq.h>

#include "envs/env.h"
#include "envs/remote.h"
#include "common/util.h"
#include "proto/wire.h"
#include "tests/wire/testproc.h"

#include "tests/check.h"

static env *make_env(const char *endpoint, const char *envname, const char *task,
                     const char *params, int timeout_ms, int max_steps) {
    char t[32], m[32], err[SEED_ERRLEN];
    snprintf(t, sizeof t, "%d", timeout_ms);
    snprintf(m, sizeof m, "%d", max_steps);
    env_kv kv[6] = {{"endpoint", endpoint}, {"timeout_ms", t}, {"max_steps", m}};
    int n = 3;
    if (envname) kv[n++] = (env_kv){"env", envname};
    if (task) kv[n++] = (env_kv){"task", task};
    if (params) kv[n++] = (env_kv){"params", params};
    env *e = NULL;
    if (env_create(&e, "remote", kv, n, err, sizeof err)) {
        fprintf(stderr, "env_create: %s\n", err);
        exit(1);
    }
    return e;
}

static env_remote_stats stats(const env *e) {
    env_remote_stats s;
    memset(&s, 0, sizeof s);
    CHECK(env_remote_stats_get(e, &s) == 0, "not a remote env");
    return s;
}

/* Expect env_reset to fail with the timeout sentence, and report how long it took. */
static void expect_timeout(env *e, const char *endpoint, int timeout_ms, const char *what) {
    env_obs obs;
    char err[SEED_ERRLEN] = "", want[512];
    double t0 = seed_now();
    int rc = env_reset(e, 1, ENV_SPLIT_TRAIN, &obs, err, sizeof err);
    double dt = seed_now() - t0;
    snprintf(want, sizeof want, "remote env %s did not answer within %d ms", endpoint, timeout_ms);
    CHECK(rc < 0 && strcmp(err, want) == 0, "%s: rc %d, error '%s', expected '%s'", what, rc, err,
          want);
    printf("%s: timed out after %.0f ms (bound %d ms)\n", what, dt * 1000, timeout_ms);
}

/* ---- faults -------------------------------------------------------------------------- */

static void test_config_errors(void) {
    char err[SEED_ERRLEN];
    env *e = NULL;
    CHECK(env_create(&e, "remote", NULL, 0, err, sizeof err) < 0 && strstr(err, "'endpoint'"),
          "missing endpoint: %s", err);
    env_kv bad_t[] = {{"endpoint", "tcp://127.0.0.1:1"}, {"timeout_ms", "soon"}};
    CHECK(env_create(&e, "remote", bad_t, 2, err, sizeof err) < 0 && strstr(err, "timeout_ms") &&
              strstr(err, "soon"),
          "bad timeout: %s", err);
    env_kv bad_k[] = {{"endpoint", "tcp://127.0.0.1:1"}, {"timout_ms", "5"}};
    CHECK(env_create(&e, "remote", bad_k, 2, err, sizeof err) < 0 && strstr(err, "timout_ms"),
          "unknown key: %s", err);
    env_kv bad_ep[] = {{"endpoint", "nonsense"}};
    CHECK(env_create(&e, "remote", bad_ep, 1, err, sizeof err) < 0 && strstr(err, "nonsense"),
          "bad endpoint: %s", err);
}

static void test_silent_servers(void *ctx) {
    char err[SEED_ERRLEN], ep[256];
    /* A ROUTER that reads requests and never answers. */
    void *hole = wire_socket(ctx, ZMQ_ROUTER, NULL, err, sizeof err);
    if (!hole || wire_bind(hole, "tcp://127.0.0.1:*", ep, sizeof ep, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    env *e = make_env(ep, "x", NULL, NULL, 500, 10);
    expect_timeout(e, ep, 500, "a server that never answers");
    expect_timeout(e, ep, 500, "the same server, again");
    env_remote_stats s = stats(e);
    CHECK(s.requests == 2 && s.timeouts == 2 && s.reconnects == 2, "stats %llu %llu %llu",
          (unsigned long long)s.requests, (unsigned long long)s.timeouts,
          (unsigned long long)s.reconnects);
    wire_rx rx;
    wire_rx_init(&rx, "hole", WIRE_ACCEPT(SEED__ENVELOPE__BODY_ENV_REQUEST), 0, 1);
    Seed__Envelope *m = NULL;
    int got = 0;
    while (wire_recv(&rx, hole, &m, ZMQ_DONTWAIT, err, sizeof err) == 1) {
        got++;
        CHECK(m->env_request->kind == SEED__ENV_REQUEST__KIND__RESET &&
                  strcmp(m->env_request->env, "x") == 0 && m->env_request->max_steps == 10,
              "request fields");
        wire_free(m);
    }
    CHECK(got == 2, "the silent server saw %d requests, expected 2", got);
    env_destroy(e);
    wire_close(hole);

    /* A TCP port that accepts connections but never speaks ZMTP. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 8) == 0 &&
              getsockname(fd, (struct sockaddr *)&sa, &sl) == 0,
          "raw listener");
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", ntohs(sa.sin_port));
    e = make_env(ep, NULL, NULL, NULL, 400, 10);
    expect_timeout(e, ep, 400, "a port that accepts but never speaks");
    env_destroy(e);
    close(fd);
    /* The same port, now closed: connection refused, the request just waits. */
    e = make_env(ep, NULL, NULL, NULL, 300, 10);
    expect_timeout(e, ep, 300, "a closed port");
    env_destroy(e);
}

typedef struct fake_server {
    void *ctx;
    char ep[256];
    void *ready; /* PAIR: tells the test the socket is bound */
} fake_server;

/* Answers the first request with: a stale reply (previous seq), another session's reply,
 * a garbage frame, then the right reply; the second request with an error reply. */
static void *fake_server_main(void *arg) {
    fake_server *f = arg;
    char err[SEED_ERRLEN];
    void *s = wire_socket(f->ctx, ZMQ_ROUTER, NULL, err, sizeof err);
    wire_check(wire_bind(s, "tcp://127.0.0.1:*", f->ep, sizeof f->ep, err, sizeof err));
    int t = 20000;
    wire_check(zmq_setsockopt(s, ZMQ_RCVTIMEO, &t, sizeof t));
    wire_check(zmq_send(f->ready, "", 0, 0));
    wire_rx rx;
    wire_rx_init(&rx, "fake", WIRE_ACCEPT(SEED__ENVELOPE__BODY_ENV_REQUEST), 0, 1);
    for (int i = 0; i < 2; i++) {
        Seed__Envelope *q = NULL;
        if (wire_recv(&rx, s, &q, 0, err, sizeof err) != 1) break;
        Seed__EnvReply rep = SEED__ENV_REPLY__INIT;
        Seed__Envelope out;
        wire_envelope_init(&out, "fake-server");
        out.body_case = SEED__ENVELOPE__BODY_ENV_REPLY;
        out.env_reply = &rep;
        rep.session = q->env_request->session;
        if (i == 0) {
            rep.seq = q->env_request->seq - 1;
            rep.observation = "stale";
            wire_send_to(s, &rx.from, &out, 0, err, sizeof err);
            rep.seq = q->env_request->seq;
            rep.session = "someone-else";
            rep.observation = "not yours";
            wire_send_to(s, &rx.from, &out, 0, err, sizeof err);
            zmq_send(s, rx.from.id, rx.from.id_len, ZMQ_SNDMORE);
            zmq_send(s, "\xff\xff\xff", 3, 0);
            rep.session = q->env_request->session;
            rep.observation = "fresh";
            rep.task = "the task";
            char *adm[2] = {"north", "south"};
            rep.n_admissible = 2;
            rep.admissible = adm;
            wire_send_to(s, &rx.from, &out, 0, err, sizeof err);
        } else {
            rep.seq = q->env_request->seq;
            rep.error = "ValueError: boom";
            wire_send_to(s, &rx.from, &out, 0, err, sizeof err);
        }
        wire_free(q);
    }
    wire_close(s);
    return NULL;
}

static void test_fake_server(void *ctx) {
    fake_server f = {ctx, "", NULL};
    void *ready_rx = zmq_socket(ctx, ZMQ_PAIR);
    wire_check(zmq_bind(ready_rx, "inproc://fake-ready"));
    f.ready = zmq_socket(ctx, ZMQ_PAIR);
    wire_check(zmq_connect(f.ready, "inproc://fake-ready"));
    pthread_t th;
    pthread_create(&th, NULL, fake_server_main, &f);
    char buf[8];
    wire_check(zmq_recv(ready_rx, buf, sizeof buf, 0));
    env *e = make_env(f.ep, NULL, NULL, NULL, 20000, 10);
    env_obs obs;
    char err[SEED_ERRLEN] = "";
    CHECK(env_reset(e, 3, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s", err);
    CHECK(strcmp(obs.observation, "fresh") == 0 && strcmp(obs.task, "the task") == 0 &&
              obs.n_admissible == 2 && strcmp(obs.admissible[1], "south") == 0 && !obs.done,
          "reset observation '%s'", obs.observation);
    CHECK(env_step(e, "north", &obs, err, sizeof err) < 0 &&
              strstr(err, "the server failed the step: ValueError: boom") && strstr(err, f.ep),
          "error reply: %s", err);
    env_remote_stats s = stats(e);
    CHECK(s.late_replies == 2 && s.wire.malformed == 1 && s.server_errors == 1 && s.timeouts == 0,
          "late %llu malformed %llu server errors %llu", (unsigned long long)s.late_replies,
          (unsigned long long)s.wire.malformed, (unsigned long long)s.server_errors);
    pthread_join(th, NULL);
    env_destroy(e);
    zmq_close(f.ready);
    zmq_close(ready_rx);
}

/* ---- transcripts ------------------------------------------------------------------------ */

static cJSON *obs_json(const env_obs *o, const char *action, int is_step) {
    cJSON *j = cJSON_CreateObject();
    if (is_step) {
        cJSON_AddItemToObject(j, "action",
                              action ? cJSON_CreateString(action) : cJSON_CreateNull());
        cJSON_AddNumberToObject(j, "reward", o->reward);
        cJSON_AddBoolToObject(j, "done", o->done);
        cJSON_AddBoolToObject(j, "won", o->won);
    } else {
        cJSON_AddStringToObject(j, "task", o->task);
    }
    cJSON_AddStringToObject(j, "observation", o->observation);
    cJSON *adm = cJSON_AddArrayToObject(j, "admissible");
    for (int i = 0; i < o->n_admissible; i++)
        cJSON_AddItemToArray(adm, cJSON_CreateString(o->admissible[i]));
    return j;
}

static cJSON *episode_json(uint64_t seed, int max_steps, const char *task, const char *params,
                           const env_obs *o) {
    cJSON *ep = cJSON_CreateObject();
    cJSON_AddNumberToObject(ep, "seed", (double)seed);
    cJSON_AddStringToObject(ep, "split", "train");
    cJSON_AddNumberToObject(ep, "max_steps", max_steps);
    cJSON_AddStringToObject(ep, "task", task ? task : "");
    cJSON_AddStringToObject(ep, "params", params ? params : "");
    cJSON_AddItemToObject(ep, "reset", obs_json(o, NULL, 0));
    cJSON_AddArrayToObject(ep, "steps");
    return ep;
}

/* Run CHECK_PY on the transcript; 0 when the library agrees. */
static int run_checker(const char *py, const char *check, cJSON *t, const char *path) {
    char *text = cJSON_Print(t);
    char err[SEED_ERRLEN];
    int rc = seed_write_file_atomic(path, text, strlen(text), err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    char *argv[] = {(char *)py, (char *)check, "check", (char *)path, NULL};
    tproc p;
    if (tproc_start(&p, argv)) return -1;
    char line[1024];
    while (tproc_readline(&p, line, sizeof line, 180000) == 1) printf("%s\n", line);
    return tproc_stop(&p, 0, 60000);
}

static int server_start(tproc *p, const char *py, const char *server, const char *envname,
                        const char *bind, char *ep, size_t n) {
    char *argv[] = {(char *)py, (char *)server,  "--bind",        (char *)bind,
                    "--env",    (char *)envname, "--watch-stdin", NULL};
    if (tproc_start(p, argv)) return -1;
    char line[512];
    const char *prefix = "seed_envserver: listening on ";
    if (tproc_expect(p, prefix, line, sizeof line, 180000)) {
        fprintf(stderr, "the env server did not start\n");
        tproc_stop(p, SIGKILL, 1000);
        return -1;
    }
    snprintf(ep, n, "%s", line + strlen(prefix));
    char *sp = strchr(ep, ' ');
    if (sp) *sp = 0;
    printf("env server %s on %s\n", envname, ep);
    return 0;
}

/* ---- sokoban ------------------------------------------------------------------------------- */

typedef struct sgrid {
    int h, w;
    char c[16][16]; /* '#', '_', 'O', 'X', 'P', 'V' (box on target), 'S' */
} sgrid;

/* verl-agent's grid: cells " # \t" (√ is 3 bytes of UTF-8), rows joined by '\n'. */
static int sgrid_parse(const char *text, sgrid *g) {
    memset(g, 0, sizeof *g);
    int r = 0, col = 0;
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            if (g->w && col != g->w) return -1;
            g->w = col;
            col = 0;
            r++;
            p++;
            continue;
        }
        const char *tab = strchr(p, '\t');
        if (!tab || r >= 16 || col >= 16) return -1;
        char cell = '?';
        for (const char *q = p; q < tab; q++) {
            if (*q == ' ') continue;
            cell = (unsigned char)*q == 0xe2 ? 'V' : *q; /* √ = e2 88 9a */
            break;
        }
        g->c[r][col++] = cell;
        p = tab + 1;
    }
    if (col) {
        if (g->w && col != g->w) return -1;
        g->w = col;
        r++;
    }
    g->h = r;
    return g->h > 0 && g->w > 0 ? 0 : -1;
}

/* BFS over (player, box) for one-box levels with gym_sokoban's push rule. Returns the plan
 * length (actions in plan[]), or -1. */
static int sokoban_solve(const sgrid *g, const char **plan, int max_len) {
    static const char *names[4] = {"up", "down", "left", "right"};
    static const int dr[4] = {-1, 1, 0, 0}, dc[4] = {0, 0, -1, 1};
    int n = g->h * g->w, player = -1, box = -1;
    for (int i = 0; i < n; i++) {
        char ch = g->c[i / g->w][i % g->w];
        if (ch == 'P' || ch == 'S') player = i;
        if (ch == 'X' || ch == 'V') {
            if (box >= 0) return -1; /* one box only */
            box = i;
        }
    }
    if (player < 0 || box < 0) return -1;
    int *prev = malloc(sizeof(int) * (size_t)(n * n)),
        *queue = malloc(sizeof(int) * (size_t)(n * n));
    signed char *how = malloc((size_t)(n * n));
    for (int i = 0; i < n * n; i++) prev[i] = -2;
    int head = 0, tail = 0, start = player * n + box, goal = -1;
    prev[start] = -1;
    queue[tail++] = start;
    while (head < tail && goal < 0) {
        int s = queue[head++], p = s / n, b = s % n;
        char bc = g->c[b / g->w][b % g->w];
        if (bc == 'O' || bc == 'V' || bc == 'S') {
            goal = s;
            break;
        }
        for (int d = 0; d < 4; d++) {
            int pr = p / g->w + dr[d], pc = p % g->w + dc[d];
            if (pr < 0 || pc < 0 || pr >= g->h || pc >= g->w || g->c[pr][pc] == '#') continue;
            int np = pr * g->w + pc, nb = b;
            if (np == b) {
                int br = pr + dr[d], bc2 = pc + dc[d];
                if (br < 0 || bc2 < 0 || br >= g->h || bc2 >= g->w || g->c[br][bc2] == '#')
                    continue;
                nb = br * g->w + bc2;
            }
            int ns = np * n + nb;
            if (prev[ns] != -2) continue;
            prev[ns] = s;
            how[ns] = (signed char)d;
            queue[tail++] = ns;
        }
    }
    int len = -1;
    if (goal >= 0) {
        len = 0;
        for (int s = goal; prev[s] != -1; s = prev[s]) len++;
        if (len > max_len) {
            len = -1;
        } else {
            int k = len;
            for (int s = goal; prev[s] != -1; s = prev[s]) plan[--k] = names[(int)how[s]];
        }
    }
    free(prev);
    free(queue);
    free(how);
    return len;
}

static int play_step(env *e, const char *action, cJSON *steps, env_obs *obs) {
    char err[SEED_ERRLEN];
    if (env_step(e, action, obs, err, sizeof err)) {
        CHECK(0, "step '%s': %s", action ? action : "(invalid)", err);
        return -1;
    }
    cJSON_AddItemToArray(steps, obs_json(obs, action, 1));
    return 0;
}

static void test_sokoban(const char *py, const char *server, const char *check) {
    tproc srv;
    char ep[256], err[SEED_ERRLEN];
    if (server_start(&srv, py, server, "gym-sokoban", "tcp://127.0.0.1:*", ep, sizeof ep)) {
        check_failures++;
        return;
    }
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "env", "gym-sokoban");
    cJSON *eps = cJSON_AddArrayToObject(t, "episodes");
    env_obs obs;

    /* Solved levels: the planner reads only the text the server sent. */
    const int max_steps = 30;
    env *e = make_env(ep, "gym-sokoban", NULL, NULL, 60000, max_steps);
    int solved = 0;
    for (uint64_t seed = 1; seed < 40 && solved < 3; seed++) {
        CHECK(env_reset(e, seed, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s", err);
        sgrid g;
        const char *plan[64];
        CHECK(sgrid_parse(obs.observation, &g) == 0 && g.h == 6 && g.w == 6,
              "seed %llu: grid does not parse:\n%s", (unsigned long long)seed, obs.observation);
        int len = sokoban_solve(&g, plan, max_steps);
        if (len <= 0) continue; /* unsolvable within the limit (or solved at start): next */
        cJSON *ep_j = episode_json(seed, max_steps, NULL, NULL, &obs);
        cJSON_AddItemToArray(eps, ep_j);
        cJSON *steps = cJSON_GetObjectItem(ep_j, "steps");
        for (int i = 0; i < len; i++)
            if (play_step(e, plan[i], steps, &obs)) break;
        CHECK(obs.done && obs.won, "seed %llu: the %d-step plan did not win",
              (unsigned long long)seed, len);
        printf("sokoban seed %llu: won in %d steps through the server\n", (unsigned long long)seed,
               len);
        solved++;
    }
    CHECK(solved == 3, "solved %d levels", solved);
    /* Random admissible actions, an invalid step and an unknown action, to the limit. */
    env *r = make_env(ep, "gym-sokoban", NULL, NULL, 60000, 6);
    seed_rng rng;
    seed_rng_init(&rng, 99);
    for (uint64_t seed = 100; seed < 102; seed++) {
        CHECK(env_reset(r, seed, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s", err);
        cJSON *ep_j = episode_json(seed, 6, NULL, NULL, &obs);
        cJSON_AddItemToArray(eps, ep_j);
        cJSON *steps = cJSON_GetObjectItem(ep_j, "steps");
        for (int i = 0; !obs.done; i++) {
            /* Copied: obs's strings are only valid until the next call. */
            char a[64];
            snprintf(a, sizeof a, "%s",
                     i == 2 ? "jump"
                            : obs.admissible[seed_rng_below(&rng, (uint64_t)obs.n_admissible)]);
            if (play_step(r, i == 1 ? NULL : a, steps, &obs)) break;
        }
    }
    env_remote_stats s = stats(e);
    CHECK(s.timeouts == 0 && s.late_replies == 0 && s.wire.malformed == 0, "clean run stats");
    CHECK(run_checker(py, check, t, "remote_env_sokoban.json") == 0,
          "gym_sokoban replay disagrees (see above)");
    cJSON_Delete(t);

    /* Garbage and a wrong schema to the server: counted there, and it keeps serving. */
    void *ctx = zmq_ctx_new();
    void *raw = wire_socket(ctx, ZMQ_DEALER, NULL, err, sizeof err);
    wire_check(wire_connect(raw, ep, err, sizeof err));
    wire_check(zmq_send(raw, "\xff\xfe garbage", 10, 0));
    Seed__Envelope bad;
    Seed__EnvRequest bq = SEED__ENV_REQUEST__INIT;
    wire_envelope_init(&bad, "bad-client");
    bad.body_case = SEED__ENVELOPE__BODY_ENV_REQUEST;
    bad.env_request = &bq;
    bad.schema = 7;
    size_t n = seed__envelope__get_packed_size(&bad);
    uint8_t buf[256];
    seed__envelope__pack(&bad, buf);
    wire_check(zmq_send(raw, buf, n, 0));
    CHECK(env_reset(e, 1, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0,
          "the server stopped serving after garbage: %s", err);
    wire_close(raw);
    zmq_ctx_term(ctx);

    /* The server runs another env than the client asked for. */
    env *m = make_env(ep, "twx", NULL, NULL, 60000, 10);
    CHECK(env_reset(m, 1, ENV_SPLIT_TRAIN, &obs, err, sizeof err) < 0 &&
              strstr(err, "this server runs gym-sokoban, not twx"),
          "env mismatch: %s", err);
    env_destroy(m);

    /* Kill the server mid-episode. */
    const int tmo = 2000;
    env *k = make_env(ep, "gym-sokoban", NULL, NULL, tmo, 30);
    env *other = make_env(ep, "gym-sokoban", NULL, NULL, 60000, 30);
    CHECK(env_reset(k, 5, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s", err);
    CHECK(env_reset(other, 6, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s", err);
    CHECK(env_step(k, "up", &obs, err, sizeof err) == 0, "step: %s", err);
    tproc_stop(&srv, SIGKILL, 10000);
    char want[512];
    snprintf(want, sizeof want, "remote env %s did not answer within %d ms", ep, tmo);
    double t0 = seed_now();
    int rc = env_step(k, "down", &obs, err, sizeof err);
    printf("killed server: step failed after %.0f ms (bound %d ms): %s\n", (seed_now() - t0) * 1000,
           tmo, err);
    CHECK(rc < 0 && strcmp(err, want) == 0, "killed server: '%s'", err);
    /* The next episode fails the same way while nobody listens... */
    expect_timeout(k, ep, tmo, "no server");
    /* ...and goes through once a server is back on the same port. */
    if (server_start(&srv, py, server, "gym-sokoban", ep, ep, sizeof ep) == 0) {
        int tries = 0;
        do {
            rc = env_reset(k, 5, ENV_SPLIT_TRAIN, &obs, err, sizeof err);
            tries++;
        } while (rc < 0 && tries < 10);
        CHECK(rc == 0 && env_step(k, "up", &obs, err, sizeof err) == 0,
              "no recovery after the server came back (%d tries): %s", tries, err);
        printf("recovered after the restart in %d reset(s)\n", tries);
        /* A session the new server never saw: a clear error, not a hang. */
        CHECK(env_step(other, "left", &obs, err, sizeof err) < 0 && strstr(err, "unknown session"),
              "old session on a new server: %s", err);
        env_remote_stats ks = stats(k);
        CHECK(ks.timeouts >= 2 && ks.reconnects == ks.timeouts, "timeouts %llu reconnects %llu",
              (unsigned long long)ks.timeouts, (unsigned long long)ks.reconnects);
        int st = tproc_stop(&srv, SIGTERM, 30000);
        CHECK(st == 0, "the server did not exit cleanly on SIGTERM (status %d)", st);
    } else {
        check_failures++;
    }
    env_destroy(k);
    env_destroy(other);
    env_destroy(e);
    env_destroy(r);
}

/* ---- TextWorldExpress ------------------------------------------------------------------ */

static void test_twx(const char *py, const char *server, const char *check) {
    const char *game = "cookingworld";
    const char *params = "numLocations=1,numIngredients=2,numDistractorItems=1,includeDoors=0,"
                         "limitInventorySize=0";
    const uint64_t gold_seed = 4;
    const int max_steps = 40;
    /* The library's own gold path for the level. */
    char ms[16], sd[32];
    snprintf(ms, sizeof ms, "%d", max_steps);
    snprintf(sd, sizeof sd, "%llu", (unsigned long long)gold_seed);
    char *gargv[] = {(char *)py, (char *)check, "gold", (char *)game, sd, (char *)params, ms, NULL};
    tproc gp;
    char gold[64][256];
    int n_gold = 0;
    if (tproc_start(&gp, gargv) == 0) {
        char line[256];
        while (tproc_readline(&gp, line, sizeof line, 180000) == 1 && strcmp(line, "END") != 0 &&
               n_gold < 64)
            snprintf(gold[n_gold++], sizeof gold[0], "%s", line);
        tproc_stop(&gp, 0, 60000);
    }
    CHECK(n_gold > 0 && n_gold < max_steps, "gold path of %d steps", n_gold);

    tproc srv;
    char ep[256], err[SEED_ERRLEN];
    if (server_start(&srv, py, server, "twx", "tcp://127.0.0.1:*", ep, sizeof ep)) {
        check_failures++;
        return;
    }
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "env", "twx");
    cJSON *eps = cJSON_AddArrayToObject(t, "episodes");
    env_obs obs;
    env *e = make_env(ep, "twx", game, params, 60000, max_steps);
    CHECK(env_reset(e, gold_seed, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s", err);
    CHECK(strstr(obs.task, "cook") != NULL && strcmp(obs.family, game) == 0,
          "task '%s' family '%s'", obs.task, obs.family);
    cJSON *ep_j = episode_json(gold_seed, max_steps, game, params, &obs);
    cJSON_AddItemToArray(eps, ep_j);
    for (int i = 0; i < n_gold && !obs.done; i++)
        if (play_step(e, gold[i], cJSON_GetObjectItem(ep_j, "steps"), &obs)) break;
    CHECK(obs.done && obs.won, "the gold path did not win through the server");
    printf("twx %s seed %llu: won in %d steps through the server\n", game,
           (unsigned long long)gold_seed, n_gold);

    env *r = make_env(ep, "twx", game, params, 60000, 8);
    seed_rng rng;
    seed_rng_init(&rng, 7);
    for (uint64_t seed = 11; seed < 13; seed++) {
        CHECK(env_reset(r, seed, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s", err);
        ep_j = episode_json(seed, 8, game, params, &obs);
        cJSON_AddItemToArray(eps, ep_j);
        while (!obs.done && obs.n_admissible > 0) {
            char a[256]; /* copied: obs's strings are only valid until the next call */
            snprintf(a, sizeof a, "%s",
                     obs.admissible[seed_rng_below(&rng, (uint64_t)obs.n_admissible)]);
            if (play_step(r, a, cJSON_GetObjectItem(ep_j, "steps"), &obs)) break;
        }
    }
    int st = tproc_stop(&srv, SIGTERM, 30000);
    CHECK(st == 0, "the server did not exit cleanly on SIGTERM (status %d)", st);
    CHECK(run_checker(py, check, t, "remote_env_twx.json") == 0,
          "TextWorldExpress replay disagrees (see above)");
    cJSON_Delete(t);
    env_destroy(e);
    env_destroy(r);
}

/* ---- search-r1 ------------------------------------------------------------------------- */

static const char sr1_invalid[] =
    "My previous action is invalid. If I want to search, I should put the query between "
    "<search> and </search>. If I want to give the final answer, I should put the answer "
    "between <answer> and </answer>. Let me try again.";

static void test_searchr1(const char *py, const char *server, const char *retriever,
                          const char *data) {
    char corpus[4096], qa[4096], line[512], params[8192], ep[256], err[SEED_ERRLEN];
    snprintf(corpus, sizeof corpus, "%s/corpus.jsonl", data);
    snprintf(qa, sizeof qa, "%s/qa.jsonl", data);
    char *rargv[] = {(char *)py, (char *)retriever, corpus, NULL};
    const char *rpre = "bm25_retriever: listening on ", *spre = "seed_envserver: listening on ";
    tproc rp, srv;
    if (tproc_start(&rp, rargv) || tproc_expect(&rp, rpre, line, sizeof line, 120000)) {
        CHECK(0, "the retriever did not start");
        return;
    }
    snprintf(params, sizeof params, "retriever=%s/retrieve,data=%s", line + strlen(rpre), qa);
    char *sargv[] = {(char *)py,  (char *)server, "--bind", "tcp://127.0.0.1:*", "--env",
                     "search-r1", "--env-params", params,   "--watch-stdin",     NULL};
    if (tproc_start(&srv, sargv) || tproc_expect(&srv, spre, line, sizeof line, 180000)) {
        CHECK(0, "the env server did not start");
        tproc_stop(&rp, SIGTERM, 10000);
        return;
    }
    sscanf(line + strlen(spre), "%255s", ep);
    /* The questions and their first golden answer, as the data set holds them. */
    char *text = NULL;
    size_t len = 0;
    CHECK(seed_read_file(qa, &text, &len, err, sizeof err) == 0, "%s", err);
    env *e = make_env(ep, "search-r1", NULL, NULL, 60000, 4);
    env_obs obs;
    int n = 0, won = 0;
    for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL, n++) {
        nl = strchr(p, '\n');
        if (nl) *nl = 0;
        cJSON *row = cJSON_Parse(p);
        const char *q = cJSON_GetStringValue(cJSON_GetObjectItem(row, "question"));
        const char *gold =
            cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(row, "golden_answers"), 0));
        if (!q || !gold) {
            CHECK(0, "qa.jsonl line %d", n + 1);
            cJSON_Delete(row);
            break;
        }
        char want_q[1024], act[1200];
        snprintf(want_q, sizeof want_q, "%s%s", q, q[strlen(q) - 1] == '?' ? "" : "?");
        CHECK(env_reset(e, (uint64_t)n, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s",
              err);
        CHECK(strcmp(obs.observation, want_q) == 0 && strcmp(obs.task, want_q) == 0 &&
                  obs.n_admissible == 0,
              "question %d: '%s'", n, obs.observation);
        snprintf(act, sizeof act, "<search> %s </search>", want_q);
        CHECK(env_step(e, act, &obs, err, sizeof err) == 0, "search: %s", err);
        size_t ol = strlen(obs.observation);
        CHECK(!strncmp(obs.observation, "<information>Doc 1(Title: ", 26) && ol > 14 &&
                  !strcmp(obs.observation + ol - 14, "</information>") && !obs.done,
              "search result '%s'", obs.observation);
        snprintf(act, sizeof act, "<answer>%s</answer>", gold);
        CHECK(env_step(e, act, &obs, err, sizeof err) == 0, "answer: %s", err);
        CHECK(obs.done && obs.won && obs.reward == 1.0f, "answer '%s' to '%s'", gold, q);
        won += obs.won;
        cJSON_Delete(row);
    }
    free(text);
    CHECK(n >= 5 && won == n, "%d of %d questions answered right", won, n);
    printf("search-r1: %d of %d questions searched and answered through the C client\n", won, n);
    /* A wrong answer, invalid steps, the step limit (4). */
    CHECK(env_reset(e, 0, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0 &&
              env_step(e, "<answer>Larry Wall</answer>", &obs, err, sizeof err) == 0 && obs.done &&
              !obs.won && obs.reward == 0.0f,
          "a wrong answer: %s", err);
    CHECK(env_reset(e, 1, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "reset: %s", err);
    const char *bad[] = {NULL, "Dodoma", "<search>a</search><answer>b</answer>"};
    for (int i = 0; i < 3; i++) {
        CHECK(env_step(e, bad[i], &obs, err, sizeof err) == 0, "invalid step: %s", err);
        CHECK(strcmp(obs.observation, sr1_invalid) == 0 && !obs.done && obs.reward == 0.0f,
              "invalid step %d: '%s' done %d", i, obs.observation, obs.done);
    }
    CHECK(env_step(e, "<search>Tanzania</search>", &obs, err, sizeof err) == 0 && obs.done &&
              !obs.won,
          "the fourth step ends the episode at the limit");
    env_destroy(e);
    int st = tproc_stop(&srv, SIGTERM, 30000);
    CHECK(st == 0, "the server did not exit cleanly on SIGTERM (status %d)", st);
    tproc_stop(&rp, SIGTERM, 30000);
}

/* ---- CURVE ----------------------------------------------------------------------------- */

/* The C client against seed_envserver.py with --curve-secret-file (echo env). */
static void test_curve(const char *py, const char *server) {
    char err[SEED_ERRLEN], spub[41], ssec[41], opub[41], osec[41];
    if (!zmq_has("curve")) {
        printf("curve: libzmq without CURVE, skipped\n");
        return;
    }
    CHECK(wire_curve_keypair(spub, ssec, err, sizeof err) == 0, "%s", err);
    CHECK(wire_curve_keypair(opub, osec, err, sizeof err) == 0, "%s", err);
    const char *keyfile = "remote_env_curve.key";
    CHECK(seed_write_file_atomic(keyfile, ssec, 40, err, sizeof err) == 0, "%s", err);
    char *argv[] = {
        (char *)py, (char *)server,        "--bind",        "tcp://127.0.0.1:*", "--env",
        "echo",     "--curve-secret-file", (char *)keyfile, "--watch-stdin",     NULL};
    tproc srv;
    char line[512], ep[256];
    const char *prefix = "seed_envserver: listening on ";
    if (tproc_start(&srv, argv) || tproc_expect(&srv, prefix, line, sizeof line, 120000)) {
        CHECK(0, "the curve server did not start");
        return;
    }
    remove(keyfile);
    sscanf(line + strlen(prefix), "%255s", ep);
    CHECK(strstr(line, spub) != NULL, "the server announces another key: %s", line);

    env_obs obs;
    env_kv ok_kv[] = {{"endpoint", ep}, {"curve_server_key", spub}, {"timeout_ms", "20000"}};
    env *e = NULL;
    CHECK(env_create(&e, "remote", ok_kv, 3, err, sizeof err) == 0, "%s", err);
    if (e) {
        CHECK(env_reset(e, 1, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0 &&
                  env_step(e, "a", &obs, err, sizeof err) == 0 &&
                  strcmp(obs.observation, "echo: a") == 0,
              "a client with the server key: %s", err);
        env_destroy(e);
    }
    /* Without the key, or trusting another server's key: the handshake never completes. */
    env *plain = make_env(ep, NULL, NULL, NULL, 800, 10);
    expect_timeout(plain, ep, 800, "curve server, plain client");
    env_destroy(plain);
    env_kv wrong_kv[] = {{"endpoint", ep}, {"curve_server_key", opub}, {"timeout_ms", "800"}};
    CHECK(env_create(&e, "remote", wrong_kv, 3, err, sizeof err) == 0, "%s", err);
    if (e) {
        expect_timeout(e, ep, 800, "curve server, wrong server key");
        env_destroy(e);
    }
    /* Config errors name the keys. */
    env_kv half[] = {{"endpoint", ep}, {"curve_public", opub}};
    CHECK(env_create(&e, "remote", half, 2, err, sizeof err) < 0 && strstr(err, "curve_server_key"),
          "a client key without the server key: %s", err);
    env_kv bad[] = {{"endpoint", ep}, {"curve_server_key", "not-a-key"}};
    CHECK(env_create(&e, "remote", bad, 2, err, sizeof err) < 0 && strstr(err, "curve_"),
          "a malformed key: %s", err);
    int st = tproc_stop(&srv, SIGTERM, 30000);
    CHECK(st == 0, "the curve server exit status %d", st);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "faults") == 0) {
        void *ctx = zmq_ctx_new();
        test_config_errors();
        test_silent_servers(ctx);
        test_fake_server(ctx);
        zmq_ctx_term(ctx);
    } else if (argc == 5 && strcmp(argv[1], "sokoban") == 0) {
        test_sokoban(argv[2], argv[3], argv[4]);
    } else if (argc == 4 && strcmp(argv[1], "curve") == 0) {
        test_curve(argv[2], argv[3]);
    } else if (argc == 5 && strcmp(argv[1], "twx") == 0) {
        test_twx(argv[2], argv[3], argv[4]);
    } else if (argc == 6 && strcmp(argv[1], "searchr1") == 0) {
        test_searchr1(argv[2], argv[3], argv[4], argv[5]);
    } else {
        fprintf(
            stderr,
            "usage: %s faults | curve PYTHON SERVER_PY | sokoban|twx PYTHON SERVER_PY CHECK_PY | "
            "searchr1 PYTHON SERVER_PY RETRIEVER_PY DATA_DIR\n",
            argv[0]);
        return 2;
    }
    if (check_failures) {
        fprintf(stderr, "test_remote_env %s: %d checks failed\n", argv[1], check_failures);
        return 1;
    }
    printf("test_remote_env %s: all checks passed\n", argv[1]);
    return 0;
}
