/* learner_main.c — seed-learner: binds the hub's endpoints, runs the I/O loop (episode
 * groups in → analyzers out with the staleness filter, scored groups → the trainer's
 * queue, heartbeats → the peer table, status requests → one JSON reply) and starts the
 * trainer thread (learner_trainer_thread.c). SIGTERM: the trainer finishes its step and
 * checkpoints, including every group received but not yet trained on. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "learner/learner.h"
#include "learner/prometheus.h"
#include "learner/status.h"
#include "proto/zap.h"
#include "proto/validate.h"

static char g_err[SEED_ERRLEN];

/* Seconds between two log lines about the same peer's repeated failures. */
#define LEARNER_LOG_INTERVAL_S 60.0

static void *bind_socket(learner *l, int type, const char *name, wire_rx *rx, uint64_t accept,
                         int routed, int hwm) {
    wire_sockopts o; /* CURVE server keys when the job has a pair */
    if (daemon_sockopts(l->job, DAEMON_SERVER, &o, g_err, sizeof g_err)) return NULL;
    /* The transport cuts only what is far too large (2x); between the job's bound and
     * that, wire_recv counts the message as oversized, so it shows in the status. */
    o.max_msg_bytes = 2 * (int64_t)l->job->wire.max_msg_bytes;
    if (hwm > 0) o.sndhwm = o.rcvhwm = hwm;
    /* libzmq 4.3 never delivers a message to a CURVE server socket whose handshake went
     * through ZAP when its receive HWM is 1 (measured: tests/netns); 2 works */
    if (o.curve == WIRE_CURVE_SERVER && o.rcvhwm == 1) o.rcvhwm = 2;
    char ep[JOB_ENDPOINT_LEN];
    if (job_endpoint(l->job, name, 1, ep, sizeof ep, g_err, sizeof g_err)) return NULL;
    if (hwm == 1) {
        /* Back-pressure sockets: small kernel buffers, and no ZMTP heartbeat timeout: a
         * stream stalled on purpose carries no PONG either, the timeout would drop the
         * connection and every group queued in it. Liveness comes from telemetry. */
        o.sndbuf = o.rcvbuf = 64 << 10;
        o.heartbeat_ivl_ms = 0;
    }
    void *s = wire_socket(l->ctx, type, &o, g_err, sizeof g_err);
    if (!s) return NULL;
    if (type == ZMQ_ROUTER) {
        int one = 1; /* a send to a gone peer fails instead of vanishing */
        zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    }
    if (wire_bind(s, ep, NULL, 0, g_err, sizeof g_err)) {
        wire_close(s);
        return NULL;
    }
    if (rx) wire_rx_init(rx, name, accept, (size_t)l->job->wire.max_msg_bytes, routed);
    seed_log(SEED_LOG_INFO, "%s bound at %s", name, ep);
    return s;
}

/* ---- the I/O loop ------------------------------------------------------------------ */

/* What peers' messages are checked against now (caller holds mu): the job, and no policy
 * version past the newest published. */
static wire_limits limits_now(const learner *l) {
    wire_limits lim;
    wire_limits_init(&lim, l->job);
    lim.max_version = l->version;
    lim.vocab = l->vocab;
    return lim;
}

/* A peer's message the validator refused (caller holds mu): counted under its reason,
 * logged once per sender and reason per LEARNER_LOG_INTERVAL_S. */
static void reject_as(learner *l, const char *sock, const Seed__Envelope *e, const char *name,
                      const char *why) {
    learner_reasons_add(&l->st.rejected, name, 1);
    char who[64];
    snprintf(who, sizeof who, "%s", wire_name_ok(e->sender, WIRE_MAX_NAME, 0) ? e->sender : "?");
    uint64_t key = seed_hash_mix(seed_fnv1a64(who, strlen(who)), seed_fnv1a64(name, strlen(name)));
    uint64_t quiet;
    if (learner_stats_log_due(&l->st, key, seed_now(), LEARNER_LOG_INTERVAL_S, &quiet))
        seed_log(SEED_LOG_WARN, "%s: refused a %s from %s (%s): %s (%llu more since the last line)",
                 sock, wire_body_name(e->body_case), who, name, why, (unsigned long long)quiet);
}

static void reject(learner *l, const char *sock, const Seed__Envelope *e, wire_reject r,
                   const char *why) {
    reject_as(l, sock, e, wire_reject_name(r), why);
}

/* The groups-in ledger's answer to a group (caller holds mu): 0 to go on, 1 when the
 * group was refused here (late: its seq was already counted, lost in transit or
 * received; bad_seq; acks_full). A numbered group the validator refuses (r) is received
 * all the same: its episodes count as refused, not as lost in transit. */
static int ack_group(learner *l, const Seed__Envelope *e, wire_reject r) {
    const Seed__EpisodeGroup *g = e->episode_group;
    uint64_t base = l->acks_continuous ? 0 : (g->seq ? g->seq - 1 : 0);
    int ack = learner_acks_group(&l->acks,
                                 wire_name_ok(g->actor_id, WIRE_MAX_NAME, 0) ? g->actor_id : NULL,
                                 g->incarnation, g->seq, base, l->in_clock);
    uint64_t G = (uint64_t)SEED_MAX(l->job->algorithm.group_size, 1);
    char why[160];
    snprintf(why, sizeof why, "seq %llu of incarnation %016llx", (unsigned long long)g->seq,
             (unsigned long long)g->incarnation);
    if (ack == LEARNER_ACK_LATE) {
        reject_as(l, "groups_in", e, "late", why); /* counted once already */
        return 1;
    }
    if (ack == LEARNER_ACK_FAR || ack == LEARNER_ACK_FULL) {
        reject_as(l, "groups_in", e, ack == LEARNER_ACK_FAR ? "bad_seq" : "acks_full", why);
        l->episodes_refused += G;
        return 1;
    }
    if (r && ack == LEARNER_ACK_NEW) l->episodes_refused += G;
    return 0;
}

/* The actor credit entry of `id`, or NULL. */
static learner_actor_credit *actor_credit_find(learner *l, const char *id) {
    for (int i = 0; id && id[0] && i < l->n_actor_credits; i++)
        if (!strcmp(l->actor_credits[i].id, id)) return &l->actor_credits[i];
    return NULL;
}

static void on_group(learner *l, Seed__Envelope *e) {
    Seed__EpisodeGroup *g = e->episode_group;
    /* back from the actor, whatever it holds: one group off the credit it was granted */
    learner_actor_credit *ac = actor_credit_find(l, g->actor_id);
    if (ac && ac->held > 0) ac->held--;
    pthread_mutex_lock(&l->mu);
    wire_limits lim = limits_now(l);
    char why[256];
    wire_reject r = wire_check_group(g, &lim, why, sizeof why);
    if (ack_group(l, e, r)) {
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    if (r) {
        reject(l, "groups_in", e, r, why);
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    l->groups_in_n++;
    int64_t resp = 0, steps = 0;
    for (size_t i = 0; i < g->n_episodes; i++) {
        Seed__Episode *ep = g->episodes[i];
        learner_stats_episode(&l->st, g->env, ep->family, ep->episode_return, ep->won);
        steps += (int64_t)ep->n_steps;
        for (size_t s = 0; s < ep->n_steps; s++) resp += (int64_t)ep->steps[s]->n_response_ids;
    }
    l->st.counters[LEARNER_C_EPISODES] += g->n_episodes;
    l->st.counters[LEARNER_C_ENV_STEPS] += (uint64_t)steps;
    l->st.counters[LEARNER_C_ROLLOUT_TOKENS] += (uint64_t)resp;
    /* the size of a group, for the credit budget (a moving average over ~8 groups) */
    double gt = (double)learner_group_tokens(g);
    l->tokens_per_group = l->tokens_per_group > 0 ? 0.875 * l->tokens_per_group + 0.125 * gt : gt;
    l->env_steps_per_group = l->env_steps_per_group > 0
                                 ? 0.875 * l->env_steps_per_group + 0.125 * (double)steps
                                 : (double)steps;
    if (l->stage == 2 && job_version_stale(l->job, g->policy_version, l->version)) {
        l->stale_hub += g->n_episodes;
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    if (learner_q_push(&l->hub_q, e, 0)) {
        pthread_mutex_unlock(&l->mu);
        seed_log(SEED_LOG_ERROR, "out of memory queueing a group; dropped");
        wire_free(e);
        return;
    }
    pthread_mutex_unlock(&l->mu);
}

/* An actor asks for rollout credit (Control READY, role "actor"): `count` is how many
 * more groups it would start now, besides those it holds (its last READY replaces the
 * one before). grant_credit deals what the budget allows. A new incarnation returns the
 * credit the old one held. An unnamed actor cannot be told from another: refused. */
static void on_actor_ready(learner *l, Seed__Envelope *e) {
    const char *id = wire_name_ok(e->sender, WIRE_MAX_NAME, 0) ? e->sender : "";
    learner_actor_credit *c = actor_credit_find(l, id);
    if (!c && id[0] && l->n_actor_credits < LEARNER_MAX_ACTORS) {
        c = &l->actor_credits[l->n_actor_credits++];
        memset(c, 0, sizeof *c);
        snprintf(c->id, sizeof c->id, "%s", id);
        c->incarnation = e->control->incarnation;
    }
    if (!c) {
        pthread_mutex_lock(&l->mu);
        reject(l, "groups_out", e, WIRE_REJ_CREDIT,
               id[0] ? "more actors ask for credit than the hub tracks"
                     : "an actor's READY without a sender name");
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    if (c->incarnation != e->control->incarnation) {
        c->incarnation = e->control->incarnation; /* restarted: the old one's credit is void */
        c->held = 0;
    }
    c->who = l->rx_out.from; /* a reconnected actor has a new routing id */
    c->want = e->control->count;
    c->last = seed_now();
    wire_free(e);
}

/* An analyzer asks for more groups (Control READY). Credit is capped so that repeated
 * asks (an analyzer re-asks while idle, e.g. after a learner restart) do not pile up. */
static void on_ready(learner *l, Seed__Envelope *e) {
    if (e->control->kind != SEED__CONTROL__KIND__READY) {
        wire_free(e);
        return;
    }
    wire_limits lim;
    wire_limits_init(&lim, l->job);
    char why[256];
    wire_reject r = wire_check_control(e->control, &lim, why, sizeof why);
    if (r) {
        pthread_mutex_lock(&l->mu);
        reject(l, "groups_out", e, r, why);
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    if (e->control->role && !strcmp(e->control->role, "actor")) {
        on_actor_ready(l, e);
        return;
    }
    if (!wire_name_ok(e->sender, WIRE_MAX_NAME, 0)) {
        /* the hub keeps a ledger per analyzer name: one it cannot name gets nothing */
        pthread_mutex_lock(&l->mu);
        reject(l, "groups_out", e, WIRE_REJ_CREDIT, "an analyzer's READY without a sender name");
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    const wire_peer *from = &l->rx_out.from;
    learner_credit *c = NULL;
    for (int i = 0; i < l->n_credits && !c; i++)
        if (l->credits[i].who.id_len == from->id_len &&
            !memcmp(l->credits[i].who.id, from->id, from->id_len))
            c = &l->credits[i];
    if (!c && l->n_credits < LEARNER_MAX_ANALYZERS) {
        c = &l->credits[l->n_credits++];
        memset(c, 0, sizeof *c);
        c->who = *from;
    }
    if (c) {
        /* at most LEARNER_MAX_CREDIT per analyzer, however much one READY claims (the
         * validator bounds the count; the sum cannot overflow) */
        int want = SEED_MIN(SEED_MAX(e->control->count, 1), LEARNER_MAX_CREDIT);
        c->credit = SEED_MIN(c->credit + want, LEARNER_MAX_CREDIT);
        c->last = seed_now();
        snprintf(c->id, sizeof c->id, "%s", e->sender);
    }
    wire_free(e);
}

/* Deal queued groups to analyzers that asked for them, round robin, without blocking.
 * An analyzer whose connection is gone is forgotten and the group goes to another. */
static void flush_hub(learner *l) {
    for (;;) {
        pthread_mutex_lock(&l->mu);
        if (l->hub_q.n == 0) {
            pthread_mutex_unlock(&l->mu);
            return;
        }
        Seed__Envelope *e = l->hub_q.v[0];
        Seed__EpisodeGroup *g = e->episode_group;
        if (l->stage == 2 && job_version_stale(l->job, g->policy_version, l->version)) {
            l->stale_hub += g->n_episodes; /* went stale while it waited */
            learner_q_take(&l->hub_q, (const int[]){0}, 1, &e);
            pthread_mutex_unlock(&l->mu);
            wire_free(e);
            continue;
        }
        pthread_mutex_unlock(&l->mu);
        int k = -1;
        for (int i = 0; i < l->n_credits && k < 0; i++) {
            int j = (l->next_credit + i) % l->n_credits;
            if (l->credits[j].credit > 0) k = j;
        }
        if (k < 0) return; /* nobody asked: the group waits here */
        /* the ledger of what this analyzer holds (lost with it if it dies): a group goes
         * only where it is kept, also to an analyzer not heard on telemetry yet */
        pthread_mutex_lock(&l->mu);
        int room =
            learner_stats_find(&l->st, l->credits[k].id) || l->st.n_peers < LEARNER_MAX_PEERS;
        pthread_mutex_unlock(&l->mu);
        if (!room) {
            seed_log(SEED_LOG_WARN, "analyzer %s: the peer table is full (%d), dropping its credit",
                     l->credits[k].id, LEARNER_MAX_PEERS);
            l->credits[k] = l->credits[--l->n_credits];
            continue;
        }
        char err[SEED_ERRLEN];
        int rc = wire_send_to(l->groups_out, &l->credits[k].who, e, ZMQ_DONTWAIT, err, sizeof err);
        if (rc < 0) {
            /* gone (EHOSTUNREACH) or its queue is full: forget it; the group stays */
            seed_log(SEED_LOG_WARN, "analyzer connection gone, dropping its credit: %s", err);
            l->credits[k] = l->credits[--l->n_credits];
            continue;
        }
        l->credits[k].credit--;
        l->next_credit = (k + 1) % SEED_MAX(l->n_credits, 1);
        pthread_mutex_lock(&l->mu);
        /* only this thread adds or drops peers: the room checked above is still there */
        learner_peer *p = learner_stats_peer(&l->st, l->credits[k].id, seed_now());
        if (p) p->outstanding += g->n_episodes;
        learner_q_take(&l->hub_q, (const int[]){0}, 1, &e);
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
    }
}

/* ---- rollout credit (demand-driven actors) ------------------------------------------ */

/* Groups somewhere between a grant and the end of the step that trains them (caller holds
 * mu): held by actors (granted, being played, or on their way), in the hub, at analyzers
 * (their ledger, in episodes), queued for a step or in the step being trained. */
int learner_credit_outstanding(const learner *l) {
    int n = l->hub_q.n + l->train_q.n + l->training_groups;
    for (int i = 0; i < l->n_actor_credits; i++) n += l->actor_credits[i].held;
    uint64_t eps = learner_stats_dealt(&l->st);
    const uint64_t G = (uint64_t)SEED_MAX(l->job->algorithm.group_size, 1);
    return n + (int)SEED_MIN((eps + G - 1) / G, (uint64_t)1 << 20);
}

int learner_step_short(const learner *l) {
    const job_config *job = l->job;
    if (job->optim.groups_per_step > 0) {
        int fresh = 0;
        for (int i = 0; i < l->train_q.n; i++)
            if (!job_version_stale(job, l->train_q.v[i]->scored_group->group->policy_version,
                                   l->version))
                fresh++;
        return SEED_MAX(job->optim.groups_per_step - fresh, 0);
    }
    if (l->train_q.tokens_total >= job->optim.tokens_per_step) return 0;
    double short_tok = (double)(job->optim.tokens_per_step - l->train_q.tokens_total);
    return l->tokens_per_group > 0 ? SEED_MAX((int)ceil(short_tok / l->tokens_per_group), 1) : 1;
}

/* The most groups that may be outstanding (caller holds mu): (max_staleness + 1) steps'
 * worth, a step's worth being the moving average of groups trained per version (before
 * the first step: optim.groups_per_step, or tokens_per_step over the measured group size;
 * before any group: one). A group granted at version v starts on v or later; the steps
 * before it take the outstanding groups oldest version first, and the step in training
 * counts, so it is trained by version v + max_staleness. Between steps the budget never
 * stops the next step from filling (no deadlock when groups grow larger than the average
 * said, or queued groups went stale). */
int learner_credit_budget(const learner *l) {
    const job_config *job = l->job;
    double g = l->groups_per_version;
    if (g <= 0 && job->optim.groups_per_step > 0) g = job->optim.groups_per_step;
    if (g <= 0 && l->tokens_per_group > 0)
        g = ceil((double)job->optim.tokens_per_step / l->tokens_per_group);
    if (g < 1) g = 1;
    int b = (int)SEED_MIN(ceil((job->algorithm.max_staleness + 1.0) * g), 1e6);
    int need = learner_step_short(l);
    if (l->training_groups == 0 && need > 0) b = SEED_MAX(b, l->train_q.n + need);
    return SEED_MAX(b, 1);
}

/* job.max_env_steps (I/O thread; caller holds mu): the env steps received, and those the
 * groups actors hold credit for will bring, each at the moving average per group. */
static double budget_projected(const learner *l) {
    int held = 0;
    for (int i = 0; i < l->n_actor_credits; i++) held += l->actor_credits[i].held;
    return (double)l->st.counters[LEARNER_C_ENV_STEPS] + held * l->env_steps_per_group;
}

/* Credit that keeps the projection within job.max_env_steps (caller holds mu): none once
 * it is reached, else the groups that fit (one at least; all of room before the first
 * group has said what a group costs). */
static int budget_room(const learner *l, int room) {
    const uint64_t max = l->job->job.max_env_steps;
    if (max == 0 || room <= 0) return room;
    const double left = (double)max - budget_projected(l);
    if (left <= 0) return 0;
    if (l->env_steps_per_group <= 0) return room;
    return SEED_MIN(room, SEED_MAX((int)ceil(left / l->env_steps_per_group), 1));
}

/* job.max_env_steps (I/O thread): closed once the projection reached the budget (with
 * nothing held it is the env steps received, so a closed budget was spent); dry once,
 * closed, no group is left at an actor, in the hub or at an analyzer. The trainer waits
 * on dry to train a last, smaller step and stop. */
static void budget_update(learner *l) {
    const uint64_t max = l->job->job.max_env_steps;
    if (max == 0) return;
    pthread_mutex_lock(&l->mu);
    int held = 0;
    for (int i = 0; i < l->n_actor_credits; i++) held += l->actor_credits[i].held;
    uint64_t at_analyzers = l->orphan_dealt + learner_stats_dealt(&l->st);
    const int closed = l->stage == 2 && budget_projected(l) >= (double)max;
    const int dry = closed && held == 0 && l->hub_q.n == 0 && at_analyzers == 0;
    if (dry && !l->budget_dry) pthread_cond_broadcast(&l->cv);
    l->budget_closed = closed;
    l->budget_dry = dry;
    pthread_mutex_unlock(&l->mu);
}

/* Deal rollout credit to the actors that asked, one group at a time round robin, while
 * the budget has room; one GRANT per actor per call. Only in stage 2 (nothing is
 * published before it). An actor whose GRANT cannot be sent is forgotten until it asks
 * again (it re-asks every 2 s while it waits). */
static void grant_credit(learner *l) {
    int any = 0;
    for (int i = 0; i < l->n_actor_credits && !any; i++) any = l->actor_credits[i].want > 0;
    pthread_mutex_lock(&l->mu);
    int out = learner_credit_outstanding(l), budget = learner_credit_budget(l);
    if (out > l->outstanding_max) {
        l->outstanding_max = out;
        l->budget_at_max = budget;
    }
    int room = budget_room(l, budget - out), stage = l->stage;
    const uint64_t version = l->version;
    pthread_mutex_unlock(&l->mu);
    if (!any || stage != 2 || room <= 0) return;
    int give[LEARNER_MAX_ACTORS] = {0};
    const int n = l->n_actor_credits;
    for (int dealt = 1; room > 0 && dealt;) {
        dealt = 0;
        for (int i = 0; i < n && room > 0; i++) {
            int k = (l->next_actor_credit + i) % n;
            if (l->actor_credits[k].want > give[k]) {
                give[k]++;
                room--;
                dealt = 1;
            }
        }
    }
    l->next_actor_credit = (l->next_actor_credit + 1) % n;
    for (int k = 0; k < n; k++) {
        if (!give[k]) continue;
        learner_actor_credit *c = &l->actor_credits[k];
        Seed__Control ctl = SEED__CONTROL__INIT;
        ctl.kind = SEED__CONTROL__KIND__GRANT;
        ctl.role = "learner";
        ctl.count = give[k];
        ctl.version = version;
        Seed__Envelope out_e;
        wire_envelope_init(&out_e, l->a.id);
        out_e.body_case = SEED__ENVELOPE__BODY_CONTROL;
        out_e.control = &ctl;
        char err[SEED_ERRLEN];
        if (wire_send_to(l->groups_out, &c->who, &out_e, ZMQ_DONTWAIT, err, sizeof err) < 0) {
            seed_log(SEED_LOG_DEBUG, "credit for actor %s not sent: %s", c->id, err);
            c->want = 0;
            continue;
        }
        c->want -= give[k];
        c->held += give[k];
        pthread_mutex_lock(&l->mu);
        l->credit_granted += (uint64_t)give[k];
        pthread_mutex_unlock(&l->mu);
    }
}

/* Forget the credit of actors the peer table forgot (silent for wire.peer_timeout_ms) or
 * saw restart, and of those that never said hello and have not asked for that long:
 * what they held is not coming back. */
static void expire_actor_credit(learner *l, double now, double peer_timeout) {
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->n_actor_credits;) {
        learner_actor_credit *c = &l->actor_credits[i];
        const learner_peer *p = learner_stats_find(&l->st, c->id);
        int gone = p ? p->incarnation && c->incarnation && p->incarnation != c->incarnation
                     : now - c->last > peer_timeout;
        if (gone) {
            l->actor_credits[i] = l->actor_credits[--l->n_actor_credits];
            continue;
        }
        i++;
    }
    pthread_mutex_unlock(&l->mu);
}

static void on_scored(learner *l, Seed__Envelope *e) {
    Seed__ScoredGroup *sg = e->scored_group;
    if (!sg->group) {
        l->malformed_groups++;
        wire_free(e);
        return;
    }
    pthread_mutex_lock(&l->mu);
    /* back from the analyzer: off that analyzer's ledger, or off the orphan ledger of a run
     * before a restart. A group neither holds was already counted (lost when its analyzer
     * was forgotten, lost or requeued from the checkpoint with a restart, or received by a
     * learner killed after its last checkpoint): training it would count it twice. */
    uint64_t n = sg->group->n_episodes;
    learner_peer *p = sg->analyzer_id ? learner_stats_find(&l->st, sg->analyzer_id) : NULL;
    int held = 1;
    if (p && p->outstanding >= n)
        p->outstanding -= n;
    else if (l->orphan_dealt >= n)
        l->orphan_dealt -= n;
    else
        held = 0;
    wire_limits lim = limits_now(l);
    char why[256];
    wire_reject r = wire_check_scored(sg, &lim, why, sizeof why);
    if (r) {
        reject(l, "scored_in", e, r, why);
        if (held) { /* a group the hub had dealt, refused: lost */
            learner_stats_lose(&l->st, "scored_refused", n);
            l->st.episodes_lost_received += n;
        }
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    if (!held) {
        learner_reasons_add(&l->st.rejected, "not_dealt", 1);
        seed_log(SEED_LOG_DEBUG, "scored_in: a group from %s that no ledger holds: dropped",
                 sg->analyzer_id);
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    int64_t tokens = learner_group_tokens(sg->group);
    l->groups_scored_n++;
    l->st.counters[LEARNER_C_SCORED_TOKENS] +=
        (uint64_t)tokens * (l->job->algorithm.mode == JOB_MODE_GRPO ? 1 : 2);
    if (learner_q_push(&l->train_q, e, tokens) == 0) {
        pthread_cond_broadcast(&l->cv);
    } else {
        seed_log(SEED_LOG_ERROR, "out of memory queueing a scored group; dropped");
        wire_free(e);
    }
    pthread_mutex_unlock(&l->mu);
}

static void on_heartbeat(learner *l, Seed__Envelope *e) {
    double now = seed_now();
    pthread_mutex_lock(&l->mu);
    wire_limits lim = limits_now(l);
    char why[256];
    wire_reject r = e->body_case == SEED__ENVELOPE__BODY_HEARTBEAT
                        ? wire_check_heartbeat(e->heartbeat, &lim, why, sizeof why)
                        : wire_check_hello(e->hello, &lim, why, sizeof why);
    if (r) { /* nothing of it reaches the peer table or the status document */
        reject(l, "telemetry", e, r, why);
        pthread_mutex_unlock(&l->mu);
        wire_free(e);
        return;
    }
    if (e->body_case == SEED__ENVELOPE__BODY_HEARTBEAT) {
        Seed__Heartbeat *h = e->heartbeat;
        learner_peer *p = learner_stats_peer(&l->st, h->id, now);
        if (p && learner_stats_incarnation(&l->st, p, h->incarnation, now))
            seed_log(SEED_LOG_WARN,
                     "peer %s restarted (a new incarnation): what it held is lost (%llu "
                     "episodes lost in all)",
                     h->id, (unsigned long long)l->st.episodes_lost);
        /* an actor's count of groups sent: each not received within the grace is lost */
        int ack = h->role == SEED__ROLE__ROLE_ACTOR
                      ? learner_acks_sent(&l->acks, h->id, h->incarnation, h->groups_sent,
                                          l->acks_continuous, l->in_clock)
                      : LEARNER_ACK_UNTRACKED;
        if (ack == LEARNER_ACK_FAR || ack == LEARNER_ACK_FULL) {
            snprintf(why, sizeof why, "groups_sent %llu of incarnation %016llx",
                     (unsigned long long)h->groups_sent, (unsigned long long)h->incarnation);
            reject_as(l, "telemetry", e, ack == LEARNER_ACK_FAR ? "bad_seq" : "acks_full", why);
        }
        if (p) {
            /* an analyzer's groups it could not score: lost, as far as they were dealt
             * to it by this learner */
            if (h->episodes_dropped > p->dropped_seen) {
                uint64_t d = SEED_MIN(h->episodes_dropped - p->dropped_seen, p->outstanding);
                p->outstanding -= d;
                learner_stats_lose(&l->st, "analyzer_dropped", d);
                l->st.episodes_lost_received += d;
            }
            p->dropped_seen = h->episodes_dropped;
            p->role = h->role;
            snprintf(p->host, sizeof p->host, "%s", h->host);
            p->pid = h->pid;
            p->version = h->weights_version;
            p->last_seen = now;
            p->episodes = h->episodes;
            p->env_steps = h->env_steps;
            p->tokens_generated = h->tokens_generated;
            p->tokens_scored = h->tokens_scored;
            p->groups_sent = h->groups_sent;
            p->malformed = h->malformed;
            p->in_flight = h->episodes_in_flight;
            p->env_errors = h->env_errors;
            p->skill_fallbacks = h->skill_fallbacks;
        }
    } else if (e->body_case == SEED__ENVELOPE__BODY_HELLO) {
        Seed__Hello *h = e->hello;
        learner_peer *p = learner_stats_peer(&l->st, h->id, now);
        if (p && learner_stats_incarnation(&l->st, p, h->incarnation, now))
            seed_log(SEED_LOG_WARN,
                     "peer %s restarted (a new incarnation): what it held is lost (%llu "
                     "episodes lost in all)",
                     h->id, (unsigned long long)l->st.episodes_lost);
        if (p) {
            p->role = h->role;
            snprintf(p->host, sizeof p->host, "%s", h->host);
            p->pid = h->pid;
            p->version = h->weights_version;
            p->last_seen = now;
            seed_log(SEED_LOG_INFO, "peer %s (%s) joined", h->id, learner_role_name(h->role));
        }
    }
    pthread_mutex_unlock(&l->mu);
    wire_free(e);
}

static void on_status(learner *l, Seed__Envelope *e) {
    wire_peer to = l->rx_status.from;
    char who[64]; /* the client's sender name: the log-once key of its failures */
    snprintf(who, sizeof who, "%s", wire_name_ok(e->sender, sizeof who - 1, 0) ? e->sender : "?");
    wire_free(e);
    char *json = learner_status_json(l);
    if (!json) return;
    Seed__Envelope out;
    wire_envelope_init(&out, l->a.id);
    Seed__StatusReply rep = SEED__STATUS_REPLY__INIT;
    rep.json = json;
    out.body_case = SEED__ENVELOPE__BODY_STATUS_REPLY;
    out.status_reply = &rep;
    char err[SEED_ERRLEN];
    if (wire_send_to(l->status, &to, &out, ZMQ_DONTWAIT, err, sizeof err) < 0) {
        /* a client that asks and goes away fails every reply: one line per interval */
        uint64_t quiet;
        pthread_mutex_lock(&l->mu);
        int due = learner_stats_log_due(&l->st, seed_fnv1a64(who, strlen(who)) ^ 0x5747u,
                                        seed_now(), LEARNER_LOG_INTERVAL_S, &quiet);
        pthread_mutex_unlock(&l->mu);
        if (due)
            seed_log(SEED_LOG_WARN,
                     "status reply to '%s' failed: %s (%llu more failures of it since the last "
                     "line)",
                     who, err, (unsigned long long)quiet);
    }
    free(json);
}

/* Take what a socket holds (at most 256 messages a turn), while room(l) says yes when
 * given: the hub stops reading groups-in when it is full, which holds actors back. */
static int drain(learner *l, void *sock, wire_rx *rx, void (*fn)(learner *, Seed__Envelope *),
                 int (*room)(learner *)) {
    for (int k = 0; k < 256 && (!room || room(l)); k++) {
        Seed__Envelope *e = NULL;
        char err[SEED_ERRLEN];
        uint64_t before = rx->c.received;
        int rc = wire_recv(rx, sock, &e, ZMQ_DONTWAIT, err, sizeof err);
        if (rc == 1) {
            fn(l, e);
            continue;
        }
        if (rc < 0 && rc != WIRE_AGAIN) {
            seed_log(SEED_LOG_ERROR, "%s: %s", rx->name, err);
            return -1;
        }
        if (rc == 0 && rx->c.received > before) continue; /* a bad one was dropped: go on */
        return 0;
    }
    return 0;
}

/* The groups-in ledger, once a second (caller holds mu): a seq known sent for a
 * peer_timeout of reading groups-in and not received is lost in transit; the journal
 * keeps what the newest checkpoint does not hold. */
static void tick_acks(learner *l, double peer_timeout) {
    uint64_t lost = learner_acks_tick(&l->acks, l->in_clock, peer_timeout, peer_timeout);
    uint64_t G = (uint64_t)SEED_MAX(l->job->algorithm.group_size, 1);
    learner_stats_lose(&l->st, "transit", lost * G);
    char err[SEED_ERRLEN];
    int failed = learner_acks_journal_compact(&l->acks, l->acks_ckpt_n, 4096, err, sizeof err);
    if (failed || l->acks.journal_errno) {
        if (!failed)
            snprintf(err, sizeof err, "%s: %s", l->acks.path, strerror(l->acks.journal_errno));
        l->acks.journal_errno = 0;
        uint64_t quiet;
        if (learner_stats_log_due(&l->st, 0x4a524e4cu, seed_now(), LEARNER_LOG_INTERVAL_S, &quiet))
            seed_log(SEED_LOG_WARN,
                     "groups-in journal: %s; a learner restarted from the last checkpoint "
                     "will not know what this one received since",
                     err);
    }
}

/* Room in the hub for one more episode group. */
static int hub_has_room(learner *l) {
    pthread_mutex_lock(&l->mu);
    int room = l->hub_q.n < l->job->wire.hub_queue;
    pthread_mutex_unlock(&l->mu);
    return room;
}

/* ---- counters kept across restarts (trainer_state.json "counters") ------------------- */

#define LEARNER_KEPT_MAX 16

/* The plain counters kept, by their name in the checkpoint (and in the status). */
static int kept_counters(learner *l, const char **name, uint64_t **v) {
    int n = 0;
#define KEEP(nm, field) (name[n] = (nm), v[n] = &(field), n++)
    KEEP("groups_received", l->groups_in_n);
    KEEP("groups_scored", l->groups_scored_n);
    KEEP("groups_trained", l->groups_trained_n);
    KEEP("episodes_trained", l->episodes_trained_n);
    KEEP("dropped_stale_hub", l->stale_hub);
    KEEP("dropped_stale_train", l->stale_train);
    KEEP("scored_off_version", l->scored_off_version);
    KEEP("episodes_error", l->episodes_error);
    KEEP("dropped_overlong", l->dropped_overlong);
    KEEP("skipped_nonfinite", l->skipped_nonfinite);
    KEEP("episodes_lost", l->st.episodes_lost);
    KEEP("episodes_lost_received", l->st.episodes_lost_received);
    KEEP("peers_joined", l->st.peers_joined);
    KEEP("peers_lost", l->st.peers_lost);
    KEEP("episodes_refused", l->episodes_refused);
#undef KEEP
    return n;
}

/* The reason tables kept, each under a name prefix. */
static const struct {
    const char *prefix;
    size_t off;
} KEPT_REASONS[] = {{"rejected.", offsetof(learner_stats, rejected)},
                    {"lost.", offsetof(learner_stats, lost)},
                    {"episode_errors.", offsetof(learner_stats, episode_errors)}};

void learner_counters_save(learner *l, learner_ckpt_state *st) {
    const char *name[LEARNER_KEPT_MAX];
    uint64_t *v[LEARNER_KEPT_MAX];
    int n = kept_counters(l, name, v);
    for (int i = 0; i < n; i++) learner_ckpt_counter_set(st, name[i], *v[i]);
    weights_pub_stats ws;
    weights_pub_stats_get(l->pub, &ws);
    learner_ckpt_counter_set(st, "malformed", learner_malformed(l) + ws.malformed);
    /* what analyzers hold: received, not in pending.bin, and maybe never coming back */
    uint64_t dealt = l->orphan_dealt + learner_stats_dealt(&l->st);
    learner_ckpt_counter_set(st, "dealt_outstanding", dealt);
    for (size_t k = 0; k < sizeof KEPT_REASONS / sizeof KEPT_REASONS[0]; k++) {
        const learner_reasons *r = (const learner_reasons *)((char *)&l->st + KEPT_REASONS[k].off);
        char key[LEARNER_CKPT_COUNTER_NAME];
        for (int i = 0; i < r->n; i++) {
            snprintf(key, sizeof key, "%s%s", KEPT_REASONS[k].prefix, r->reason[i]);
            learner_ckpt_counter_set(st, key, r->count[i]);
        }
        snprintf(key, sizeof key, "%sother", KEPT_REASONS[k].prefix);
        if (r->other) learner_ckpt_counter_set(st, key, r->other);
    }
    /* the groups-in ledger, at the same moment as the counters (out of memory: none, and
     * a restart takes what live actors send next as the start of their books) */
    if (learner_acks_pack(&l->acks, &st->acks, &st->acks_len)) st->acks_len = 0;
    l->acks_snap_n = l->acks.journal_n;
}

void learner_counters_done(learner *l, learner_ckpt_state *st, int saved) {
    free(st->acks);
    st->acks = NULL;
    st->acks_len = 0;
    pthread_mutex_lock(&l->mu);
    if (saved) l->acks_ckpt_n = l->acks_snap_n;
    pthread_mutex_unlock(&l->mu);
}

/* The groups-in ledger of the checkpoint being resumed, and its journal: groups the run
 * received after that checkpoint died with the learner that received them and are lost
 * in transit now (before the status socket binds). */
static int restore_acks(learner *l) {
    learner_acks_init(&l->acks);
    if (l->resume_found) {
        void *buf = NULL;
        size_t len = 0;
        char err[SEED_ERRLEN];
        if (learner_ckpt_acks(l->resume_path, &buf, &len, err, sizeof err) ||
            (len && learner_acks_unpack(&l->acks, buf, len, 0.0, err, sizeof err))) {
            free(buf);
            return seed_errf(g_err, sizeof g_err, "checkpoint %s: %s", l->resume_path, err);
        }
        free(buf);
        l->acks_continuous = len > 0;
        l->acks_ckpt_n = l->acks.journal_n;
    }
    const char *dir = l->job->checkpoint.dir;
    if (!dir[0]) return 0;
    char path[1100];
    snprintf(path, sizeof path, "%s/groups_in.journal", dir);
    uint64_t lost = 0;
    if (seed_mkdir_p(dir, g_err, sizeof g_err) ||
        learner_acks_journal_open(&l->acks, path, 0.0, &lost, g_err, sizeof g_err))
        return -1;
    uint64_t G = (uint64_t)SEED_MAX(l->job->algorithm.group_size, 1);
    learner_stats_lose(&l->st, "transit", lost * G);
    if (lost)
        seed_log(SEED_LOG_WARN,
                 "%llu groups the learner before this one received after its last checkpoint "
                 "died with it: counted lost in transit",
                 (unsigned long long)lost);
    return 0;
}

/* The counters of the checkpoint being resumed (before the status socket binds). */
static void restore_counters(learner *l) {
    if (!l->resume_found) return;
    const learner_ckpt_state *rs = &l->resume;
    const char *name[LEARNER_KEPT_MAX];
    uint64_t *v[LEARNER_KEPT_MAX];
    int n = kept_counters(l, name, v);
    for (int i = 0; i < n; i++) *v[i] = learner_ckpt_counter_get(rs, name[i]);
    l->malformed_base = learner_ckpt_counter_get(rs, "malformed");
    /* analyzers alive through the restart return what they held within a few heartbeat
     * timeouts; the rest died with theirs */
    l->orphan_dealt = learner_ckpt_counter_get(rs, "dealt_outstanding");
    l->orphan_until = seed_now() + 3.0 * l->job->wire.peer_timeout_ms / 1000.0;
    for (size_t k = 0; k < sizeof KEPT_REASONS / sizeof KEPT_REASONS[0]; k++) {
        learner_reasons *r = (learner_reasons *)((char *)&l->st + KEPT_REASONS[k].off);
        size_t pn = strlen(KEPT_REASONS[k].prefix);
        for (int i = 0; i < rs->n_counters; i++)
            if (!strncmp(rs->counters[i].name, KEPT_REASONS[k].prefix, pn)) {
                const char *reason = rs->counters[i].name + pn;
                if (!strcmp(reason, "other"))
                    r->other += rs->counters[i].value;
                else
                    learner_reasons_add(r, reason, rs->counters[i].value);
            }
    }
}

/* The checkpoint to resume, if the job asks for one: its step, stage and version are the
 * learner's state from the first status reply on (the trainer thread loads the weights
 * and publishes that same version). */
static int find_resume(learner *l) {
    const char *from = l->job->checkpoint.resume_from;
    if (!l->job->checkpoint.resume && !from[0]) return 0;
    int found = learner_ckpt_find(l->job->checkpoint.dir, from, l->resume_path,
                                  sizeof l->resume_path, &l->resume, g_err, sizeof g_err);
    if (found < 0) return -1;
    l->resume_found = found;
    if (found) {
        l->step = l->resume.step;
        l->sft_steps = l->resume.sft_steps;
        l->stage = l->resume.stage;
        l->version = l->resume.version;
    }
    return 0;
}

/* A PAIR socket that receives sock's ZMQ_EVENT_DISCONNECTED events (drain_monitors). */
static void *monitor_socket(void *ctx, void *sock, int i) {
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://seed-learner-monitor-%d", i);
    void *m = NULL;
    if (zmq_socket_monitor(sock, ep, ZMQ_EVENT_DISCONNECTED) != 0 ||
        !(m = zmq_socket(ctx, ZMQ_PAIR)) || zmq_connect(m, ep) != 0) {
        seed_errf(g_err, sizeof g_err, "cannot monitor a hub socket: %s", zmq_strerror(errno));
        if (m) zmq_close(m);
        return NULL;
    }
    return m;
}

/* Count the connections that ended on each hub socket since the last call. Each event is
 * two frames: 2 bytes of event id and 4 of value, then the endpoint. */
static void drain_monitors(learner *l) {
    for (int i = 0; i < 5; i++) {
        for (int k = 0; k < 256; k++) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, l->mon[i], ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&m);
                break;
            }
            uint16_t ev = 0;
            if (zmq_msg_more(&m) && zmq_msg_size(&m) == 6) {
                memcpy(&ev, zmq_msg_data(&m), 2);
                if (ev == ZMQ_EVENT_DISCONNECTED) l->disconnects[i]++;
            }
            zmq_msg_close(&m);
        }
    }
}

static int setup(learner *l) {
    job_config *job = l->job;
    l->t_start = seed_now();
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    learner_stats_init(&l->st, job->status.window);
    restore_counters(l);
    if (restore_acks(l)) return -1;
    /* token ids from peers are checked against the vocabulary (a bad one would stop the
     * trainer); when config.json cannot be read here the trainer thread says why */
    char cfgpath[JOB_PATH_LEN + 16], cerr[SEED_ERRLEN];
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", job->model.path);
    model_config mc;
    if (model_config_load(cfgpath, &mc, cerr, sizeof cerr) == 0) l->vocab = mc.vocab_size;
    l->ctx = zmq_ctx_new();
    if (!l->ctx) return seed_errf(g_err, sizeof g_err, "zmq_ctx_new failed");
    if (job->endpoints.curve_secret[0]) { /* the allow-list, before any socket binds */
        zap_policy zp = {job->endpoints.curve_allowed_keys, job->endpoints.curve_public, -1};
        if (zap_create(&l->zap, &zp, g_err, sizeof g_err) ||
            zap_attach(l->zap, l->ctx, g_err, sizeof g_err))
            return -1;
    }
    const uint64_t hb =
        WIRE_ACCEPT(SEED__ENVELOPE__BODY_HEARTBEAT) | WIRE_ACCEPT(SEED__ENVELOPE__BODY_HELLO);
    /* Back-pressure: the hub holds at most wire.hub_queue groups and groups_in buffers
     * little per connection, so actors wait instead of outrunning the analyzers (their
     * groups would only go stale); groups_out deals a group only to an analyzer that
     * asked for one (READY credit). */
    if (!(l->groups_in = bind_socket(l, ZMQ_PULL, "groups_in", &l->rx_in,
                                     WIRE_ACCEPT(SEED__ENVELOPE__BODY_EPISODE_GROUP), 0, 1)) ||
        !(l->groups_out = bind_socket(l, ZMQ_ROUTER, "groups_out", &l->rx_out,
                                      WIRE_ACCEPT(SEED__ENVELOPE__BODY_CONTROL), 1, 1)) ||
        !(l->scored_in = bind_socket(l, ZMQ_PULL, "scored_in", &l->rx_scored,
                                     WIRE_ACCEPT(SEED__ENVELOPE__BODY_SCORED_GROUP), 0, 0)) ||
        !(l->telemetry = bind_socket(l, ZMQ_PULL, "telemetry", &l->rx_tel, hb, 0, 0)) ||
        !(l->status = bind_socket(l, ZMQ_ROUTER, "status", &l->rx_status,
                                  WIRE_ACCEPT(SEED__ENVELOPE__BODY_STATUS_REQUEST), 1, 0)))
        return -1;
    void *socks[5] = {l->groups_in, l->scored_in, l->telemetry, l->status, l->groups_out};
    for (int i = 0; i < 5; i++)
        if (!(l->mon[i] = monitor_socket(l->ctx, socks[i], i))) return -1;
    weights_pub_config wc;
    weights_pub_config_init(&wc);
    char wep[JOB_ENDPOINT_LEN];
    if (job_endpoint(job, "weights", 1, wep, sizeof wep, g_err, sizeof g_err)) return -1;
    wc.endpoint = wep;
    wc.sender = "learner";
    wc.peer_timeout_ms = job->wire.peer_timeout_ms;
    wire_sockopts wo;
    if (daemon_sockopts(job, DAEMON_SERVER, &wo, g_err, sizeof g_err)) return -1;
    wo.max_msg_bytes = 1 << 20; /* fetch requests are small */
    wc.sockopts = &wo;
    wc.ctx_init = l->zap ? zap_attach_hook : NULL;
    wc.ctx_arg = l->zap;
    if (weights_pub_create(&l->pub, &wc, g_err, sizeof g_err)) return -1;
    seed_log(SEED_LOG_INFO, "weights served at %s", weights_pub_endpoint(l->pub));
    return 0;
}

int main(int argc, char **argv) {
    static learner L; /* large; lives for the whole process */
    learner *l = &L;
    int rc = daemon_init(&l->a, "learner", argc, argv, NULL, g_err, sizeof g_err);
    if (rc) {
        if (rc > 0) return 0;
        fprintf(stderr, "seed-learner: %s\n", g_err);
        return 2;
    }
    l->job = &l->a.job;
    if (find_resume(l) || setup(l)) {
        seed_log(SEED_LOG_ERROR, "%s", g_err);
        return 1;
    }
    /* /metrics (learner/prometheus.h): the I/O loop hands it the status document each tick */
    learner_prom *prom = NULL;
    const char *mhost =
        l->job->endpoints.bind_host[0] ? l->job->endpoints.bind_host : l->job->endpoints.host;
    if (l->job->endpoints.metrics_port > 0 &&
        learner_prom_start(&prom, mhost, l->job->endpoints.metrics_port, 30.0 /* s: 30 ticks */,
                           g_err, sizeof g_err)) {
        seed_log(SEED_LOG_ERROR, "%s", g_err);
        return 1;
    }
    if (prom)
        seed_log(SEED_LOG_INFO, "metrics served at http://%s:%d/metrics", mhost,
                 learner_prom_port(prom));
    if (pthread_create(&l->trainer, NULL, learner_trainer_main, l) != 0) {
        seed_log(SEED_LOG_ERROR, "cannot start the trainer thread");
        return 1;
    }
    zmq_pollitem_t items[5] = {{l->groups_in, 0, ZMQ_POLLIN, 0},
                               {l->scored_in, 0, ZMQ_POLLIN, 0},
                               {l->telemetry, 0, ZMQ_POLLIN, 0},
                               {l->status, 0, ZMQ_POLLIN, 0},
                               {l->groups_out, 0, ZMQ_POLLIN, 0}};
    double last_tick = 0, last_poll = seed_now();
    const double peer_timeout = l->job->wire.peer_timeout_ms / 1000.0;
    for (;;) {
        items[0].events = hub_has_room(l) ? ZMQ_POLLIN : 0;
        int n = zmq_poll(items, 5, 50);
        /* the acks' grace runs only while groups-in is read: a group held back in the
         * socket by a full hub is not in transit for longer than the grace */
        double polled = seed_now();
        if (items[0].events) l->in_clock += polled - last_poll;
        last_poll = polled;
        if (n < 0 && zmq_errno() != EINTR) {
            seed_log(SEED_LOG_ERROR, "zmq_poll: %s", zmq_strerror(zmq_errno()));
            break;
        }
        if (n > 0) {
            if (items[0].revents & ZMQ_POLLIN)
                drain(l, l->groups_in, &l->rx_in, on_group, hub_has_room);
            if (items[1].revents & ZMQ_POLLIN)
                drain(l, l->scored_in, &l->rx_scored, on_scored, NULL);
            if (items[2].revents & ZMQ_POLLIN)
                drain(l, l->telemetry, &l->rx_tel, on_heartbeat, NULL);
            if (items[3].revents & ZMQ_POLLIN) drain(l, l->status, &l->rx_status, on_status, NULL);
            if (items[4].revents & ZMQ_POLLIN) drain(l, l->groups_out, &l->rx_out, on_ready, NULL);
        }
        flush_hub(l);
        grant_credit(l);
        budget_update(l);
        drain_monitors(l);
        double now = seed_now();
        if (now - last_tick >= 1.0) {
            last_tick = now;
            pthread_mutex_lock(&l->mu);
            learner_stats_snapshot(&l->st, now);
            int gone = learner_stats_expire(&l->st, now, peer_timeout);
            if (l->orphan_dealt && now > l->orphan_until) {
                learner_stats_lose(&l->st, "learner_restart", l->orphan_dealt);
                l->st.episodes_lost_received += l->orphan_dealt;
                l->orphan_dealt = 0;
            }
            tick_acks(l, peer_timeout);
            pthread_mutex_unlock(&l->mu);
            expire_actor_credit(l, now, peer_timeout);
            if (gone)
                seed_log(SEED_LOG_WARN, "%d peer(s) silent for %.0f s: forgotten", gone,
                         peer_timeout);
            char *json = prom ? learner_status_json(l) : NULL;
            if (json && learner_prom_publish(prom, json))
                seed_log(SEED_LOG_WARN, "out of memory handing /metrics the status");
            free(json);
        }
        pthread_mutex_lock(&l->mu);
        if (daemon_stopping() && !l->stopping) {
            l->stopping = 1;
            pthread_cond_broadcast(&l->cv);
            seed_log(SEED_LOG_INFO, "stopping: the trainer finishes its step and checkpoints");
        }
        int done = l->trainer_done;
        pthread_mutex_unlock(&l->mu);
        if (done) break;
    }
    pthread_join(l->trainer, NULL);
    int trc = l->trainer_rc;
    if (trc) seed_log(SEED_LOG_ERROR, "trainer: %s", l->trainer_err);
    learner_q_free(&l->hub_q);
    learner_q_free(&l->train_q);
    free(l->eval_json);
    learner_prom_stop(prom);
    weights_pub_free(l->pub);
    wire_close(l->groups_in);
    wire_close(l->groups_out);
    wire_close(l->scored_in);
    wire_close(l->telemetry);
    wire_close(l->status);
    for (int i = 0; i < 5; i++) wire_close(l->mon[i]);
    zmq_ctx_term(l->ctx);
    zap_free(l->zap); /* its threads ended with the contexts */
    learner_stats_free(&l->st);
    learner_acks_free(&l->acks);
    seed_log(SEED_LOG_INFO, "stopped at step %lld, version %llu", (long long)l->step,
             (unsigned long long)l->version);
    return trc ? 1 : 0;
}
