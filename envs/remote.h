/* remote.h — the `remote` env: an env served by another process (any language) over
 * ZeroMQ, speaking EnvRequest/EnvReply envelopes (proto/seed.proto).
 *
 * Contract: a DEALER socket talks to the server's ROUTER; each request carries this env's
 * session id and a sequence number the reply echoes, so a late reply to an earlier request
 * is recognised and dropped. A server that is dead or slower than `timeout_ms` makes
 * env_reset/env_step fail within that bound with "remote env <endpoint> did not answer
 * within <n> ms"; the socket is then recreated so the next episode goes through once the
 * server is back. Config keys: endpoint (required), env, task, params, timeout_ms (default
 * 10000), max_steps, and for CURVE encryption curve_server_key (the server's Z85 public
 * key) with optionally curve_public/curve_secret (else a fresh client pair). Counters are
 * read with env_remote_stats_get. */
#ifndef SEED_ENV_REMOTE_H
#define SEED_ENV_REMOTE_H

#include <stdint.h>

#include "envs/env.h"
#include "proto/wire.h"

extern const env_vtable env_remote_vtable;

typedef struct env_remote_stats {
    uint64_t requests;      /* requests sent */
    uint64_t timeouts;      /* requests the server did not answer in time */
    uint64_t late_replies;  /* replies to an earlier request (or another session), dropped */
    uint64_t server_errors; /* replies with `error` set */
    uint64_t reconnects;    /* sockets recreated after a timeout */
    wire_counters wire;     /* the reply socket's receive counters */
} env_remote_stats;

/* Fill out with e's counters; -1 when e is not a remote env. */
int env_remote_stats_get(const env *e, env_remote_stats *out);

/* The observation the actor takes from an accepted reply (one wire_decode let through:
 * a socket accepting only EnvReply), as env_reset/env_step return it: its strings point
 * into rep, whose text it scrubs first (control bytes but tab and newline become spaces:
 * the prompt renderer reserves 0x1e/0x1f); task is the episode's task line (NULL: ""),
 * family the env's task family. */
void env_remote_reply_obs(Seed__EnvReply *rep, const char *task, const char *family, env_obs *obs);

#endif
