/* telemetry.h — the heartbeat thread of an actor or analyzer. Heartbeats must keep
 * flowing while the main loop is busy (a long generation or scoring pass), or the
 * learner would take a working peer for dead; so a small thread with its own PUSH
 * socket sends one every interval, carrying the counters the main loop publishes with
 * telemetry_update(). */
#ifndef SEED_ROLES_TELEMETRY_H
#define SEED_ROLES_TELEMETRY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/job.h"
#include "proto/wire.h"

typedef struct telemetry_counters {
    uint64_t weights_version, episodes, env_steps, tokens_generated, tokens_scored, groups_sent,
        malformed, episodes_in_flight, env_errors;
    uint64_t skill_fallbacks;  /* analyzer: http skills replaced by the fallback */
    uint64_t episodes_dropped; /* analyzer: episodes of dealt groups it dropped */
    uint64_t s_reused_steps, s_scored_steps, tokens_score_full; /* analyzer (seed.proto) */
} telemetry_counters;

typedef struct telemetry {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, started;
    void *sock;
    wire_identity me;
    telemetry_counters c;
    int interval_ms;
} telemetry;

/* Connect a PUSH socket to the job's telemetry endpoint (sockopts from the job), say
 * Hello, and start the thread. */
int telemetry_start(telemetry *t, void *ctx, const job_config *job, const wire_identity *me,
                    char *err, size_t errlen);
void telemetry_update(telemetry *t, const telemetry_counters *c);
/* Send a last heartbeat, stop the thread, close the socket. */
void telemetry_stop(telemetry *t);

#endif
