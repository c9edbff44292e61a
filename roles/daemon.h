/* daemon.h — what every seed role process does at start: parse its command line
 * (--job FILE, --id NAME, key=value overrides), build the job config, set logging, and
 * turn SIGTERM/SIGINT into a stop flag the main loop checks; and the job -> socket
 * builder every role and seedctl open their sockets with (daemon_sockopts, daemon_connect).
 *
 * Contract: daemon_init returns 0 to run, 1 when --help was printed, negative with a
 * sentence in err on a bad command line or config. The stop flag is the one piece of
 * process-wide state (a signal handler can reach nothing else). */
#ifndef SEED_ROLES_DAEMON_H
#define SEED_ROLES_DAEMON_H

#include <signal.h>
#include <stddef.h>

#include "common/job.h"
#include "proto/wire.h"

typedef struct daemon_args {
    const char *role; /* "learner", "actor", "analyzer" */
    char id[128];     /* --id, default "<role>-<host>-<pid>" */
    char job_path[1024];
    job_config job;
} daemon_args;

int daemon_init(daemon_args *a, const char *role, int argc, char **argv, const char *usage_extra,
                char *err, size_t errlen);
/* The model backend's name for model_create ("cpu", "cuda"). */
static inline const char *daemon_backend(const job_config *job) {
    return job->model.backend == JOB_BACKEND_CUDA ? "cuda" : "cpu";
}
/* The options every socket of a job starts from, the one translation of the job's wire.*
 * and endpoints.curve_* keys: linger, HWM, ZMTP heartbeats, max message size, and CURVE.
 * DAEMON_SERVER (the learner's bound sockets, the weights socket too: a plaintext one would
 * hand the model to anyone): server keys when the job has a key pair. DAEMON_CLIENT
 * (actors, analyzers, seedctl): when the job names a server key, CURVE with the job's own
 * key pair, or with a fresh one when the job has none (a learner with an allow-list
 * refuses that key; one without lets it in, as for seedctl). */
typedef enum { DAEMON_SERVER, DAEMON_CLIENT } daemon_side;
int daemon_sockopts(const job_config *job, daemon_side side, wire_sockopts *o, char *err,
                    size_t errlen);
/* A socket of `type` connected to the job's endpoint `name` ("groups_in", ...) with the
 * job's options; hwm > 0 makes it a back-pressure socket: both high-water marks hwm,
 * small kernel buffers, no ZMTP heartbeat timeout (a deliberately stalled stream must
 * not be dropped with the messages queued in it). */
void *daemon_connect(void *ctx, const job_config *job, int type, const char *name, int hwm,
                     char *err, size_t errlen);
/* Non-zero once SIGTERM or SIGINT arrived. */
int daemon_stopping(void);
/* Ask the loop to stop from inside (e.g. total_steps reached). */
void daemon_request_stop(void);

#endif
