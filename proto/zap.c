/* zap.c — see zap.h. */
#define _GNU_SOURCE
#include "proto/zap.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/util.h"

enum { ZAP_MAX_CTX = 4, ZAP_MAX_FRAMES = 8, ZAP_FRAME_MAX = 256, ZAP_LOGGED_MAX = 64 };

typedef struct zap_ep {
    zap *z;
    void *sock;
    pthread_t th;
    int started;
} zap_ep;

struct zap {
    uint8_t (*keys)[32];
    int n_keys;
    long uid;
    pthread_mutex_t mu;
    zap_stats st;
    /* peers already logged (a refused client retries every reconnect interval) */
    char logged[ZAP_LOGGED_MAX][64];
    int n_logged;
    zap_ep eps[ZAP_MAX_CTX];
    int n_eps;
};

static int zap_add_key(zap *z, const char *z85, const char *where, char *err, size_t errlen) {
    uint8_t k[32];
    if (strlen(z85) != 40 || !zmq_z85_decode(k, z85))
        return seed_errf(err, errlen,
                         "%s: expected a 40-character Z85 CURVE public key, got '%.60s'", where,
                         z85);
    void *grown = realloc(z->keys, (size_t)(z->n_keys + 1) * sizeof *z->keys);
    if (!grown) return seed_errf(err, errlen, "out of memory loading CURVE keys");
    z->keys = grown;
    memcpy(z->keys[z->n_keys++], k, 32);
    return 0;
}

static int zap_load_keys(zap *z, const char *path, char *err, size_t errlen) {
    char *text;
    if (seed_read_file(path, &text, NULL, err, errlen)) return -1;
    int line = 0, rc = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && !rc;
         l = strtok_r(NULL, "\n", &save)) {
        line++;
        while (*l == ' ' || *l == '\t') l++;
        size_t n = strlen(l);
        while (n && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r')) l[--n] = 0;
        if (!n || l[0] == '#') continue;
        char where[1100];
        snprintf(where, sizeof where, "endpoints.curve_allowed_keys: %s:%d", path, line);
        rc = zap_add_key(z, l, where, err, errlen);
    }
    free(text);
    return rc;
}

int zap_create(zap **out, const zap_policy *policy, char *err, size_t errlen) {
    *out = NULL;
    zap *z = calloc(1, sizeof *z);
    if (!z) return seed_errf(err, errlen, "out of memory");
    pthread_mutex_init(&z->mu, NULL);
    z->uid = policy->uid;
    if ((policy->self_key && policy->self_key[0] &&
         zap_add_key(z, policy->self_key, "endpoints.curve_public", err, errlen)) ||
        (policy->allowed_keys_path && policy->allowed_keys_path[0] &&
         zap_load_keys(z, policy->allowed_keys_path, err, errlen))) {
        zap_free(z);
        return -1;
    }
    z->st.n_keys = z->n_keys;
    *out = z;
    return 0;
}

/* ":uid:gid:pid" at the end of an ipc peer's address (libzmq appends SO_PEERCRED there);
 * -1 when it is not there. */
static long zap_peer_uid(const char *addr) {
    const char *p = addr + strlen(addr);
    const char *colons[3];
    for (int found = 0; found < 3;) {
        if (p == addr) return -1;
        if (*--p == ':') colons[found++] = p;
    }
    char *end;
    errno = 0;
    long uid = strtol(colons[2] + 1, &end, 10);
    if (errno || end != colons[1] || end == colons[2] + 1 || uid < 0) return -1;
    return uid;
}

/* Log a refusal once per peer identity (a refused client retries on every reconnect). */
static void zap_log_refusal(zap *z, const char *who, const char *why) {
    pthread_mutex_lock(&z->mu);
    int seen = 0;
    for (int i = 0; i < z->n_logged && !seen; i++) seen = !strcmp(z->logged[i], who);
    if (!seen && z->n_logged < ZAP_LOGGED_MAX)
        snprintf(z->logged[z->n_logged++], sizeof z->logged[0], "%s", who);
    pthread_mutex_unlock(&z->mu);
    if (!seen) seed_log(SEED_LOG_WARN, "ZAP: refused %s: %s (counted; logged once)", who, why);
}

/* One request's verdict: 1 admit; 0 refuse with *why. user_id: what the peer is known as. */
static int zap_decide(zap *z, char f[][ZAP_FRAME_MAX], const size_t *len, int n, char *user,
                      size_t userlen, const char **why) {
    const char *mech = f[5];
    if (n >= 7 && !strcmp(mech, "CURVE") && len[6] == 32) {
        char z85[41];
        zmq_z85_encode(z85, (const uint8_t *)f[6], 32);
        snprintf(user, userlen, "%s", z85);
        for (int i = 0; i < z->n_keys; i++)
            if (!memcmp(z->keys[i], f[6], 32)) return 1;
        *why = "CURVE key not in endpoints.curve_allowed_keys";
        return 0;
    }
    if (!strcmp(mech, "NULL")) {
        long uid = zap_peer_uid(f[3]);
        snprintf(user, userlen, "uid:%ld", uid);
        if (z->uid >= 0 && uid == z->uid) return 1;
        *why = uid < 0 ? "no peer credentials (only ipc:// carries them)" : "another user";
        return 0;
    }
    snprintf(user, userlen, "%.16s peer", mech);
    *why = "mechanism not accepted";
    return 0;
}

static int zap_send(void *s, const void *data, size_t n, int more) {
    return zmq_send(s, data, n, more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
}

static void *zap_main(void *arg) {
    zap_ep *ep = arg;
    zap *z = ep->z;
    for (;;) {
        char f[ZAP_MAX_FRAMES][ZAP_FRAME_MAX];
        size_t len[ZAP_MAX_FRAMES];
        int n = 0, more = 1, term = 0;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, ep->sock, 0) < 0) {
                zmq_msg_close(&m);
                if (errno == EINTR) continue;
                term = 1; /* ETERM: the context is going away */
                break;
            }
            if (n < ZAP_MAX_FRAMES) {
                size_t l = zmq_msg_size(&m);
                len[n] = l;
                l = l < ZAP_FRAME_MAX - 1 ? l : ZAP_FRAME_MAX - 1;
                memcpy(f[n], zmq_msg_data(&m), l);
                f[n][l] = 0;
                n++;
            }
            more = zmq_msg_more(&m);
            zmq_msg_close(&m);
        }
        if (term) break;
        if (n < 6 || strcmp(f[0], "1.0")) continue; /* not a ZAP request: libzmq never sends one */
        char user[64] = "";
        const char *why = "";
        int ok = zap_decide(z, f, len, n, user, sizeof user, &why);
        pthread_mutex_lock(&z->mu);
        if (ok) {
            z->st.admitted++;
        } else {
            z->st.refused++;
            if (!strcmp(f[5], "CURVE"))
                z->st.refused_key++;
            else if (!strcmp(f[5], "NULL"))
                z->st.refused_uid++;
            else
                z->st.refused_mech++;
        }
        pthread_mutex_unlock(&z->mu);
        if (!ok) {
            char who[64];
            snprintf(who, sizeof who, "%.8s %.48s", f[5], user);
            zap_log_refusal(z, who, why);
        }
        const char *code = ok ? "200" : "400";
        if (zap_send(ep->sock, "1.0", 3, 1) || zap_send(ep->sock, f[1], len[1], 1) ||
            zap_send(ep->sock, code, 3, 1) ||
            zap_send(ep->sock, ok ? "OK" : why, strlen(ok ? "OK" : why), 1) ||
            zap_send(ep->sock, ok ? user : "", ok ? strlen(user) : 0, 1) ||
            zap_send(ep->sock, "", 0, 0)) {
            if (errno == ETERM) break;
        }
    }
    zmq_close(ep->sock);
    return NULL;
}

int zap_attach(zap *z, void *ctx, char *err, size_t errlen) {
    if (z->n_eps == ZAP_MAX_CTX)
        return seed_errf(err, errlen, "ZAP handler: at most %d contexts", ZAP_MAX_CTX);
    zap_ep *ep = &z->eps[z->n_eps];
    ep->z = z;
    ep->sock = zmq_socket(ctx, ZMQ_REP);
    int zero = 0;
    if (!ep->sock || zmq_setsockopt(ep->sock, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
        zmq_bind(ep->sock, "inproc://zeromq.zap.01") != 0) {
        int e = errno;
        if (ep->sock) zmq_close(ep->sock);
        ep->sock = NULL;
        return seed_errf(err, errlen, "ZAP handler: cannot bind inproc://zeromq.zap.01: %s",
                         zmq_strerror(e));
    }
    if (pthread_create(&ep->th, NULL, zap_main, ep) != 0) {
        zmq_close(ep->sock);
        ep->sock = NULL;
        return seed_errf(err, errlen, "ZAP handler: cannot start its thread");
    }
    ep->started = 1;
    z->n_eps++;
    return 0;
}

int zap_attach_hook(void *ctx, void *arg, char *err, size_t errlen) {
    return zap_attach((zap *)arg, ctx, err, errlen);
}

void zap_stats_get(zap *z, zap_stats *out) {
    pthread_mutex_lock(&z->mu);
    *out = z->st;
    pthread_mutex_unlock(&z->mu);
}

void zap_free(zap *z) {
    if (!z) return;
    for (int i = 0; i < z->n_eps; i++)
        if (z->eps[i].started) pthread_join(z->eps[i].th, NULL);
    pthread_mutex_destroy(&z->mu);
    free(z->keys);
    free(z);
}
