/* remote.c — the `remote` env (see remote.h): env_reset/env_step as EnvRequest/EnvReply
 * round trips to an env server, bounded by timeout_ms, never a hung actor.
 *
 * Each instance owns its ZeroMQ context (one I/O thread) and one DEALER socket, so
 * instances share nothing. The observation strings handed out in env_obs point into the
 * last reply, which is kept until the next call (env.h's lifetime rule). */
#define _POSIX_C_SOURCE 200809L
#include "envs/remote.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/util.h"

typedef struct remote_env {
    env base; /* first: the generic header */
    void *ctx;
    void *sock; /* NULL after a failed reconnect; the next call retries */
    wire_sockopts so;
    wire_rx rx;
    char endpoint[256];
    char env_name[64];
    char task[256];
    char params[512];
    const char *family; /* task family: the task, else the env name */
    int timeout_ms;
    char session[96];
    char sender[160];
    uint64_t seq;
    Seed__Envelope *reply; /* the last reply: env_obs points into it */
    char *task_text;       /* the task line of the current episode (from its reset reply) */
    size_t task_cap;
    env_remote_stats st;
} remote_env;

static const char *const remote_keys[] = {"endpoint",     "env",          "task",
                                          "params",       "timeout_ms",   "curve_server_key",
                                          "curve_public", "curve_secret", NULL};

/* CURVE: with curve_server_key, the socket encrypts and only talks to that server. The
 * client's own pair is curve_public/curve_secret, or a fresh one per instance. */
static int remote_curve(remote_env *r, const env_kv *kv, int n_kv, char *err, size_t errlen) {
    const char *server = env_kv_get(kv, n_kv, "curve_server_key");
    const char *pub = env_kv_get(kv, n_kv, "curve_public");
    const char *sec = env_kv_get(kv, n_kv, "curve_secret");
    if (!server) {
        if (pub || sec)
            return seed_errf(err, errlen,
                             "remote: curve_public/curve_secret need curve_server_key (the "
                             "server's public key)");
        return 0;
    }
    if (!pub != !sec)
        return seed_errf(err, errlen,
                         "remote: give both curve_public and curve_secret, or neither");
    char p[41], q[41];
    if (!pub) {
        if (wire_curve_keypair(p, q, err, errlen)) return -1;
        pub = p;
        sec = q;
    }
    if (wire_sockopts_curve_client(&r->so, pub, sec, server, err, errlen)) {
        char why[SEED_ERRLEN];
        snprintf(why, sizeof why, "%s", err ? err : "");
        return seed_errf(err, errlen, "remote: config keys curve_*: %s", why);
    }
    return 0;
}

static int remote_copy_key(const env_kv *kv, int n_kv, const char *key, char *dst, size_t cap,
                           char *err, size_t errlen) {
    const char *v = env_kv_get(kv, n_kv, key);
    if (!v) v = "";
    if (strlen(v) >= cap)
        return seed_errf(err, errlen, "remote: config key '%s' is longer than %zu characters", key,
                         cap - 1);
    snprintf(dst, cap, "%s", v);
    return 0;
}

static int remote_open(remote_env *r, char *err, size_t errlen) {
    r->sock = wire_socket(r->ctx, ZMQ_DEALER, &r->so, err, errlen);
    if (!r->sock) return -1;
    if (wire_connect(r->sock, r->endpoint, err, errlen)) {
        wire_close(r->sock);
        r->sock = NULL;
        return -1;
    }
    return 0;
}

/* A fresh socket drops whatever the old one queued and any reply still in flight. */
static void remote_reopen(remote_env *r) {
    wire_close(r->sock);
    r->sock = NULL;
    r->st.reconnects++;
    char err[SEED_ERRLEN];
    if (remote_open(r, err, sizeof err)) seed_log(SEED_LOG_WARN, "remote env: %s", err);
}

static void remote_destroy(env *e) {
    remote_env *r = (remote_env *)e;
    if (!r) return;
    if (r->sock) {
        /* Tell the server to free this session; do not wait for it. */
        Seed__EnvRequest req = SEED__ENV_REQUEST__INIT;
        req.kind = SEED__ENV_REQUEST__KIND__CLOSE;
        req.session = r->session;
        req.seq = ++r->seq;
        req.env = r->env_name;
        Seed__Envelope envl;
        wire_envelope_init(&envl, r->sender);
        envl.body_case = SEED__ENVELOPE__BODY_ENV_REQUEST;
        envl.env_request = &req;
        int linger = 100;
        zmq_setsockopt(r->sock, ZMQ_LINGER, &linger, sizeof linger);
        wire_send(r->sock, &envl, ZMQ_DONTWAIT, NULL, 0);
        wire_close(r->sock);
    }
    if (r->ctx) zmq_ctx_term(r->ctx);
    wire_free(r->reply);
    free(r->task_text);
    free(r);
}

static int remote_create(env **out, const env_kv *kv, int n_kv, char *err, size_t errlen) {
    if (env_kv_check("remote", kv, n_kv, remote_keys, err, errlen)) return -1;
    if (!env_kv_get(kv, n_kv, "endpoint"))
        return seed_errf(err, errlen,
                         "remote: config key 'endpoint' is required (e.g. tcp://127.0.0.1:5599)");
    remote_env *r = calloc(1, sizeof *r);
    if (!r) return seed_errf(err, errlen, "remote: out of memory");
    if (remote_copy_key(kv, n_kv, "endpoint", r->endpoint, sizeof r->endpoint, err, errlen) ||
        remote_copy_key(kv, n_kv, "env", r->env_name, sizeof r->env_name, err, errlen) ||
        remote_copy_key(kv, n_kv, "task", r->task, sizeof r->task, err, errlen) ||
        remote_copy_key(kv, n_kv, "params", r->params, sizeof r->params, err, errlen) ||
        env_kv_int("remote", kv, n_kv, "timeout_ms", 10000, 1, 3600000, &r->timeout_ms, err,
                   errlen))
        goto fail;
    r->family = r->task[0] ? r->task : r->env_name[0] ? r->env_name : "remote";

    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    uint64_t nonce = seed_hash_mix(seed_hash_mix((uint64_t)(seed_wall() * 1e9), (uint64_t)getpid()),
                                   (uint64_t)(uintptr_t)r);
    snprintf(r->session, sizeof r->session, "%s-%d-%016llx", host, (int)getpid(),
             (unsigned long long)nonce);
    snprintf(r->sender, sizeof r->sender, "remote-env-%s-%d", host, (int)getpid());

    wire_sockopts_init(&r->so);
    r->so.max_msg_bytes = 16 << 20;
    r->so.linger_ms = 0;
    r->so.reconnect_ivl_ms = 100;
    r->so.reconnect_ivl_max_ms = 1000;
    if (remote_curve(r, kv, n_kv, err, errlen)) goto fail;
    wire_rx_init(&r->rx, "remote-env", WIRE_ACCEPT(SEED__ENVELOPE__BODY_ENV_REPLY),
                 (size_t)r->so.max_msg_bytes, 0);
    r->ctx = zmq_ctx_new();
    if (!r->ctx) {
        seed_errf(err, errlen, "remote: cannot create a ZeroMQ context: %s", zmq_strerror(errno));
        goto fail;
    }
    if (remote_open(r, err, errlen)) goto fail;
    *out = &r->base;
    return 0;
fail:
    remote_destroy(&r->base);
    return -1;
}

/* One request/reply within timeout_ms. On success r->reply holds the matching reply. */
static int remote_call(remote_env *r, Seed__EnvRequest *req, char *err, size_t errlen) {
    if (!r->sock) {
        remote_reopen(r);
        if (!r->sock)
            return seed_errf(err, errlen, "remote env %s: no socket (see the log)", r->endpoint);
    }
    req->session = r->session;
    req->seq = ++r->seq;
    req->env = r->env_name;
    Seed__Envelope envl;
    wire_envelope_init(&envl, r->sender);
    envl.body_case = SEED__ENVELOPE__BODY_ENV_REQUEST;
    envl.env_request = req;
    r->st.requests++;
    double deadline = seed_now() + r->timeout_ms / 1000.0;
    int rc = wire_send(r->sock, &envl, ZMQ_DONTWAIT, err, errlen);
    if (rc == WIRE_AGAIN) goto timeout; /* send queue full: the server has been gone a while */
    if (rc < 0) return -1;
    for (;;) {
        int left = (int)((deadline - seed_now()) * 1000.0 + 0.999);
        if (left <= 0) goto timeout;
        zmq_pollitem_t it = {r->sock, 0, ZMQ_POLLIN, 0};
        int n = zmq_poll(&it, 1, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            return seed_errf(err, errlen, "remote env %s: poll failed: %s", r->endpoint,
                             zmq_strerror(errno));
        }
        if (n == 0) continue;
        Seed__Envelope *got = NULL;
        int k = wire_recv(&r->rx, r->sock, &got, ZMQ_DONTWAIT, err, errlen);
        if (k < 0) return -1;
        if (k == 0) continue; /* a bad message was counted and dropped */
        const Seed__EnvReply *rep = got->env_reply;
        if (rep->seq != r->seq || strcmp(rep->session, r->session) != 0) {
            r->st.late_replies++;
            wire_free(got);
            continue;
        }
        wire_free(r->reply);
        r->reply = got;
        if (rep->error[0]) {
            r->st.server_errors++;
            return seed_errf(
                err, errlen, "remote env %s: the server failed the %s: %s", r->endpoint,
                req->kind == SEED__ENV_REQUEST__KIND__RESET ? "reset" : "step", rep->error);
        }
        return 0;
    }
timeout:
    r->st.timeouts++;
    remote_reopen(r);
    return seed_errf(err, errlen, "remote env %s did not answer within %d ms", r->endpoint,
                     r->timeout_ms);
}

/* Control bytes in a server's text become spaces (tab and newline stay): the prompt
 * renderer marks the skill slots with bytes 0x1e/0x1f that env text never holds, and a
 * remote server's text is outside bytes (found by tests/fuzz/remote_fuzz). */
static void scrub(char *s) {
    for (; s && *s; s++)
        if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t') *s = ' ';
}

void env_remote_reply_obs(Seed__EnvReply *rep, const char *task, const char *family, env_obs *obs) {
    scrub(rep->task);
    scrub(rep->observation);
    scrub(rep->info);
    for (size_t i = 0; i < rep->n_admissible; i++) scrub(rep->admissible[i]);
    memset(obs, 0, sizeof *obs);
    obs->task = task ? task : "";
    obs->observation = rep->observation;
    obs->n_admissible = (int)rep->n_admissible;
    obs->admissible = (const char *const *)rep->admissible;
    obs->reward = rep->reward;
    obs->done = rep->done;
    obs->won = rep->won;
    obs->family = family;
    obs->info = rep->info;
}

static void remote_fill(remote_env *r, env_obs *obs) {
    env_remote_reply_obs(r->reply->env_reply, r->task_text, r->family, obs);
}

static int remote_reset(env *e, uint64_t seed, env_split split, env_obs *obs, char *err,
                        size_t errlen) {
    remote_env *r = (remote_env *)e;
    Seed__EnvRequest req = SEED__ENV_REQUEST__INIT;
    req.kind = SEED__ENV_REQUEST__KIND__RESET;
    req.task = r->task;
    req.seed = seed;
    req.split = (char *)env_split_name(split);
    req.params = r->params;
    req.max_steps = (uint32_t)e->max_steps;
    if (remote_call(r, &req, err, errlen)) return -1;
    remote_fill(r, obs); /* scrubs the reply's text, the task among it */
    const char *task = r->reply->env_reply->task;
    size_t n = strlen(task) + 1;
    if (n > r->task_cap) {
        char *t = realloc(r->task_text, n);
        if (!t) return seed_errf(err, errlen, "remote: out of memory");
        r->task_text = t;
        r->task_cap = n;
    }
    memcpy(r->task_text, task, n);
    obs->task = r->task_text;
    obs->reward = 0;
    return 0;
}

static int remote_step(env *e, const char *action, env_obs *obs, char *err, size_t errlen) {
    remote_env *r = (remote_env *)e;
    Seed__EnvRequest req = SEED__ENV_REQUEST__INIT;
    req.kind = SEED__ENV_REQUEST__KIND__STEP;
    req.action = (char *)(action ? action : ""); /* "" = invalid step: the server's no-op */
    if (remote_call(r, &req, err, errlen)) return -1;
    remote_fill(r, obs);
    return 0;
}

int env_remote_stats_get(const env *e, env_remote_stats *out) {
    if (!e || e->vt != &env_remote_vtable) return -1;
    const remote_env *r = (const remote_env *)e;
    *out = r->st;
    out->wire = r->rx.c;
    return 0;
}

const env_vtable env_remote_vtable = {
    .name = "remote",
    .instructions = "You are playing an environment served over the network. Read the task "
                    "and the current observation, then answer with exactly one of the "
                    "admissible actions.",
    .create = remote_create,
    .destroy = remote_destroy,
    .reset = remote_reset,
    .step = remote_step,
    .expert = NULL,
    .oracle = NULL, /* no hindsight: the task and its privileged state live on the server */
    .max_steps_default = 50,
    .action_valid = NULL,
};
