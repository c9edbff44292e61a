/* telemetry.c — see telemetry.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "roles/telemetry.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "roles/daemon.h"
#include "common/util.h"

static void send_one(telemetry *t) {
    Seed__Heartbeat hb = SEED__HEARTBEAT__INIT;
    pthread_mutex_lock(&t->mu);
    telemetry_counters c = t->c;
    pthread_mutex_unlock(&t->mu);
    hb.weights_version = c.weights_version;
    hb.episodes = c.episodes;
    hb.env_steps = c.env_steps;
    hb.tokens_generated = c.tokens_generated;
    hb.tokens_scored = c.tokens_scored;
    hb.groups_sent = c.groups_sent;
    hb.malformed = c.malformed;
    hb.episodes_in_flight = c.episodes_in_flight;
    hb.env_errors = c.env_errors;
    hb.skill_fallbacks = c.skill_fallbacks;
    hb.episodes_dropped = c.episodes_dropped;
    hb.s_reused_steps = c.s_reused_steps;
    hb.s_scored_steps = c.s_scored_steps;
    hb.tokens_score_full = c.tokens_score_full;
    char err[SEED_ERRLEN];
    if (wire_send_heartbeat(t->sock, &t->me, &hb, ZMQ_DONTWAIT, err, sizeof err) < 0 &&
        zmq_errno() != EAGAIN)
        seed_log(SEED_LOG_DEBUG, "heartbeat: %s", err);
}

static void *run(void *arg) {
    telemetry *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        pthread_mutex_unlock(&t->mu);
        send_one(t);
        pthread_mutex_lock(&t->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += t->interval_ms / 1000;
        ts.tv_nsec += (long)(t->interval_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &ts) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&t->mu);
    send_one(t); /* the last word: final counters */
    return NULL;
}

int telemetry_start(telemetry *t, void *ctx, const job_config *job, const wire_identity *me,
                    char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    t->me = *me;
    t->interval_ms = 1000;
    wire_sockopts o;
    if (daemon_sockopts(job, DAEMON_CLIENT, &o, err, errlen)) return -1;
    char ep[JOB_ENDPOINT_LEN];
    if (job_endpoint(job, "telemetry", 0, ep, sizeof ep, err, errlen)) return -1;
    t->sock = wire_socket(ctx, ZMQ_PUSH, &o, err, errlen);
    if (!t->sock) return -1;
    if (wire_connect(t->sock, ep, err, errlen)) {
        wire_close(t->sock);
        t->sock = NULL;
        return -1;
    }
    wire_send_hello(t->sock, &t->me, 0, ZMQ_DONTWAIT, err, errlen);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (pthread_create(&t->th, NULL, run, t) != 0) {
        wire_close(t->sock);
        t->sock = NULL;
        return seed_errf(err, errlen, "cannot start the heartbeat thread");
    }
    t->started = 1;
    return 0;
}

void telemetry_update(telemetry *t, const telemetry_counters *c) {
    if (!t->started) return;
    pthread_mutex_lock(&t->mu);
    t->c = *c;
    pthread_mutex_unlock(&t->mu);
}

void telemetry_stop(telemetry *t) {
    if (t->started) {
        pthread_mutex_lock(&t->mu);
        t->stop = 1;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->th, NULL);
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        t->started = 0;
    }
    wire_close(t->sock);
    t->sock = NULL;
}
