/* zap.h — a ZAP handler (ZeroMQ's authentication protocol, RFC 27) that decides who may
 * finish a handshake with the sockets of the contexts it is attached to:
 *  - CURVE clients by public key: admitted when the key is on the allow-list (the file the
 *    job names in endpoints.curve_allowed_keys, plus the job's own curve_public);
 *  - NULL-mechanism peers on ipc:// by the uid of the connecting process, which the kernel
 *    reports (SO_PEERCRED) and libzmq 4.3 appends to the request's address as
 *    ":uid:gid:pid" (seedctl's control socket: only the launching user may stop or scale).
 * Every other request (PLAIN, a NULL peer without credentials, an unknown key) is refused.
 *
 * Contract:
 *  - zap_create loads the policy (the key file's errors name the file and line);
 *    zap_attach binds inproc://zeromq.zap.01 in a context and answers it from a thread of
 *    its own. Attach before any socket of that context binds: libzmq admits every CURVE
 *    client of a context that has no handler.
 *  - A NULL-mechanism socket asks the handler only when ZMQ_ZAP_DOMAIN is set on it.
 *  - Refusals are counted (zap_stats_get) and logged once per distinct key or uid.
 *  - zap_free only after every attached context was terminated (zmq_ctx_term ends the
 *    threads: their receive fails with ETERM). */
#ifndef SEED_PROTO_ZAP_H
#define SEED_PROTO_ZAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct zap zap;

typedef struct zap_policy {
    const char *allowed_keys_path; /* Z85 public keys, one a line, '#' comments; NULL/"": none */
    const char *self_key;          /* Z85 key always admitted (the job's own); NULL/"": none */
    long uid;                      /* >= 0: admit NULL-mechanism ipc peers of this uid; -1: none */
} zap_policy;

typedef struct zap_stats {
    uint64_t admitted;     /* handshakes answered 200 */
    uint64_t refused;      /* answered 400, all reasons */
    uint64_t refused_key;  /* CURVE key not on the list */
    uint64_t refused_uid;  /* NULL mechanism: another uid, or no credentials */
    uint64_t refused_mech; /* a mechanism the policy does not take (PLAIN, ...) */
    int n_keys;            /* keys on the allow-list */
} zap_stats;

int zap_create(zap **out, const zap_policy *policy, char *err, size_t errlen);
/* Serve ctx's ZAP requests (at most 4 contexts per handler). */
int zap_attach(zap *z, void *ctx, char *err, size_t errlen);
/* For weights_pub_config.ctx_init: arg is the zap. */
int zap_attach_hook(void *ctx, void *arg, char *err, size_t errlen);
void zap_stats_get(zap *z, zap_stats *out);
void zap_free(zap *z); /* NULL is fine */

#endif
