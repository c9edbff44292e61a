/* actor_main.c — seed-actor: plays groups of G episodes per task against its envs with
 * the batched rollout engine (roles/rollout.h: one decode step across every episode that
 * is generating, KV-prefix reuse within a group), and sends each finished group,
 * token-in-token-out, with the oldest weights version its episodes were sampled with.
 * Weights arrive in the background (proto/weights.h) and are swapped in between groups,
 * whole. Heartbeats go to the learner's telemetry.
 *
 * Demand-driven: a group starts only against rollout credit the learner granted
 * (Control READY/GRANT on the groups-out socket, see seed.proto), and on weights at least
 * as new as the grant's version, so the actor produces only what the learner can train
 * within max_staleness versions. An actor waiting for credit asks again every 2 s (a
 * restarted learner has lost what it was asked).
 *
 * Mode skill_prompt (the Skill-Prompt baseline): every acting prompt carries the fixed
 * skill library's skills for the episode's env and task family (common/skill_library.h)
 * in its slots — the episode skill in the episode slot, step skill k in the step slot of
 * the k-th prompt — and those exact prompt ids are what the group ships and the learner
 * trains on, so the PPO ratio stays on-policy. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "roles/policy_weights.h"
#include "roles/render.h"
#include "roles/rollout.h"
#include "roles/taskpool.h"
#include "roles/telemetry.h"
#include "roles/daemon.h"
#include "common/skill_library.h"
#include "model/model.h"
#include "proto/validate.h"
#include "proto/weights.h"
#include "proto/wire.h"

typedef struct actor {
    daemon_args a;
    job_config *job;
    void *ctx, *push;
    void *credit_sock; /* DEALER on groups-out: READY out, GRANT in */
    wire_rx crx;
    int credit, asked;         /* groups granted and not started; count of the last READY */
    uint64_t credit_version;   /* the last grant's version: start groups on it or newer */
    double t_asked, t_granted; /* when the last READY went out, the last GRANT came */
    telemetry tel;
    wire_identity me;
    weights_rx *wrx;
    model *m;
    tok *tk;
    rollout *ro;
    int G, n_groups;
    uint64_t *group_id;           /* per group slot: the id of the group it plays */
    int *pool_task;               /* per group slot: its task's index in the env's pool, or -1 */
    taskpool pools[JOB_MAX_ENVS]; /* per env with a fixed pool (envs.N.tasks) */
    uint64_t version, group_counter;
    seed_rng task_rng;
    skill_lib lib; /* skill_prompt: the fixed library (empty otherwise) */
    /* counters for heartbeats */
    uint64_t episodes, groups_sent;
} actor;

static char g_err[SEED_ERRLEN];

/* Publish the counters the heartbeat thread sends. */
static void heartbeat(actor *A) {
    telemetry_counters c = {0};
    rollout_counters rc = rollout_counters_get(A->ro);
    c.weights_version = A->version;
    c.episodes = A->episodes;
    c.env_steps = rc.env_steps;
    c.tokens_generated = rc.tokens_generated;
    c.groups_sent = A->groups_sent;
    c.env_errors = rc.env_errors;
    c.episodes_in_flight = (uint64_t)rollout_episodes_in_flight(A->ro);
    weights_rx_stats ws;
    weights_rx_stats_get(A->wrx, &ws);
    c.malformed = ws.malformed;
    telemetry_update(&A->tel, &c);
}

/* Swap in a newer complete weights version, if one is ready. */
static int take_weights(actor *A, int wait_ms) {
    int rc = policy_weights_apply(A->wrx, A->m, wait_ms, &A->version);
    rollout_set_version(A->ro, A->version);
    return rc;
}

/* Take the learner's GRANTs (without waiting longer than wait_ms for the first). */
static void credit_recv(actor *A, int wait_ms) {
    if (wait_ms > 0) {
        zmq_pollitem_t it = {A->credit_sock, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, wait_ms) <= 0) return;
    }
    for (int k = 0; k < 64; k++) {
        Seed__Envelope *e = NULL;
        char err[SEED_ERRLEN];
        uint64_t before = A->crx.c.received;
        int r = wire_recv(&A->crx, A->credit_sock, &e, ZMQ_DONTWAIT, err, sizeof err);
        if (r < 0 && r != WIRE_AGAIN) seed_log(SEED_LOG_WARN, "groups_out: %s", err);
        if (r != 1) {
            if (r == 0 && A->crx.c.received > before) continue; /* a bad one: dropped */
            return;
        }
        if (e->control->kind == SEED__CONTROL__KIND__GRANT) {
            A->credit += SEED_MIN(SEED_MAX(e->control->count, 0), WIRE_MAX_READY);
            A->credit_version = e->control->version;
            A->t_granted = seed_now();
            A->asked = 0; /* answered: what is still missing is asked for anew */
        }
        wire_free(e);
    }
}

/* Ask the learner for credit for the group slots that are free and not covered by credit
 * already held: when that number changed since the last READY, or 2 s after it (the
 * learner grants when its budget has room; one restarted meanwhile knows nothing). */
static void credit_ask(actor *A) {
    int free_slots = 0;
    for (int g = 0; g < A->n_groups; g++) free_slots += !rollout_group_at(A->ro, g)->active;
    /* Credit for weights that have not come 2 s after the grant is asked for anew: a
     * learner restarted from a checkpoint may never publish that version number again,
     * and its GRANT's version replaces the old one. (The learner's budget bounds what it
     * grants, whatever an actor asks.) */
    int usable = A->credit;
    if (A->version < A->credit_version && seed_now() - A->t_granted > 2.0) usable = 0;
    int want = SEED_MIN(SEED_MAX(free_slots - usable, 0), WIRE_MAX_READY);
    if (want == 0 || (want == A->asked && seed_now() - A->t_asked < 2.0)) return;
    Seed__Control c = SEED__CONTROL__INIT;
    c.kind = SEED__CONTROL__KIND__READY;
    c.count = want;
    c.role = "actor";
    c.incarnation = A->me.incarnation;
    Seed__Envelope e;
    wire_envelope_init(&e, A->me.id);
    e.body_case = SEED__ENVELOPE__BODY_CONTROL;
    e.control = &c;
    char err[SEED_ERRLEN];
    if (wire_send(A->credit_sock, &e, ZMQ_DONTWAIT, err, sizeof err) < 0)
        seed_log(SEED_LOG_DEBUG, "asking for credit: %s", err);
    A->asked = want;
    A->t_asked = seed_now();
}

static int pick_env(actor *A) {
    double tot = 0;
    for (int i = 0; i < A->job->n_envs; i++) tot += A->job->envs[i].weight;
    double u = seed_rng_uniform(&A->task_rng) * tot;
    for (int i = 0; i < A->job->n_envs; i++) {
        u -= A->job->envs[i].weight;
        if (u < 0) return i;
    }
    return A->job->n_envs - 1;
}

/* Start a new group in group slot g: a task (env, seed) from this actor's task stream,
 * or, when the env has a fixed pool (envs.N.tasks), one of the pool's tasks, picked as
 * actor.pool_sampling says (roles/taskpool.h): task k is the k-th task of the evaluation
 * set named by (split, job.seed), the formula rollout_eval uses, so `seedctl eval --split
 * S --seed job.seed --episodes tasks` plays the pool. */
static int start_group(actor *A, int g) {
    int env_idx = pick_env(A);
    uint64_t task_seed = seed_rng_next(&A->task_rng) >> 1;
    uint64_t draw = task_seed;
    int pool = A->job->envs[env_idx].tasks;
    A->pool_task[g] = -1;
    if (pool > 0) {
        A->pool_task[g] = taskpool_pick(&A->pools[env_idx], draw, &A->task_rng);
        task_seed = rollout_task_seed(A->job->job.seed, (uint64_t)A->pool_task[g]);
    }
    env_split split;
    if (env_split_parse(A->job->envs[env_idx].split, &split)) split = ENV_SPLIT_TRAIN;
    A->group_id[g] = ++A->group_counter;
    if (rollout_start_group(A->ro, g, env_idx, task_seed, split, g_err, sizeof g_err)) {
        seed_log(SEED_LOG_ERROR, "%s", g_err);
        return -1;
    }
    if (pool > 0) rollout_group_salt(A->ro, g, draw);
    return 0;
}

/* What a finished group of a pool task says about that task (episodes with an error say
 * nothing). */
static void record_pool(actor *A, int g) {
    const int k = A->pool_task[g];
    if (k < 0) return;
    int won = 0, finished = 0;
    for (int i = 0; i < A->G; i++) {
        const rollout_ep *ep = rollout_episode(A->ro, g, i);
        if (ep->error[0]) continue;
        finished++;
        won += ep->won != 0;
    }
    taskpool_record(&A->pools[rollout_group_at(A->ro, g)->env_idx], k, won, finished);
}

static int send_group(actor *A, int g) {
    const rollout_group *gr = rollout_group_at(A->ro, g);
    Seed__EpisodeGroup eg = SEED__EPISODE_GROUP__INIT;
    eg.env = A->job->envs[gr->env_idx].name;
    eg.task_seed = gr->task_seed;
    eg.split = (char *)env_split_name(gr->split);
    eg.policy_version = gr->min_version;
    eg.actor_id = A->me.id;
    eg.group_id = A->group_id[g];
    eg.created = seed_wall();
    /* numbered among the groups this incarnation sent, so the learner can tell one lost in
     * transit (a number it never gets, below what the heartbeat's groups_sent says) */
    eg.incarnation = A->me.incarnation;
    eg.seq = A->groups_sent + 1;
    Seed__Episode **eps = calloc((size_t)A->G, sizeof *eps);
    Seed__Episode *epv = calloc((size_t)A->G, sizeof *epv);
    int total_steps = 0;
    for (int i = 0; i < A->G; i++) total_steps += rollout_episode(A->ro, g, i)->n_steps;
    Seed__Step **stp = calloc((size_t)total_steps + 1, sizeof *stp);
    Seed__Step *stv = calloc((size_t)total_steps + 1, sizeof *stv);
    if (!eps || !epv || !stp || !stv) {
        free(eps);
        free(epv);
        free(stp);
        free(stv);
        return -1;
    }
    int si = 0;
    for (int i = 0; i < A->G; i++) {
        const rollout_ep *ep = rollout_episode(A->ro, g, i);
        Seed__Episode *pe = &epv[i];
        seed__episode__init(pe);
        pe->episode_return = ep->ret;
        pe->won = ep->won;
        pe->sample_seed = ep->sample_seed;
        pe->family = (char *)ep->family;
        pe->error = (char *)ep->error;
        pe->steps = &stp[si];
        pe->n_steps = (size_t)ep->n_steps;
        for (int k = 0; k < ep->n_steps; k++, si++) {
            const rollout_step *s = &ep->steps[k];
            Seed__Step *ps = &stv[si];
            seed__step__init(ps);
            stp[si] = ps;
            ps->prompt_ids = s->prompt;
            ps->n_prompt_ids = (size_t)s->plen;
            ps->skill_slot_episode = (uint32_t)s->slot_ep;
            ps->skill_slot_step = (uint32_t)s->slot_step;
            ps->response_ids = s->resp;
            ps->n_response_ids = (size_t)s->rlen;
            ps->sample_logprobs = s->lp;
            ps->n_sample_logprobs = (size_t)s->rlen;
            ps->action = s->action;
            ps->reward = s->reward;
            ps->valid = s->valid;
            ps->observation = s->obs;
        }
        eps[i] = pe;
    }
    eg.episodes = eps;
    eg.n_episodes = (size_t)A->G;
    Seed__Envelope envl;
    wire_envelope_init(&envl, A->me.id);
    envl.body_case = SEED__ENVELOPE__BODY_EPISODE_GROUP;
    envl.episode_group = &eg;
    int rc;
    char err[SEED_ERRLEN];
    /* Blocks only while the learner's queue is full (back-pressure); keeps heartbeats.
     * A finished group no longer needs its weights: when no other group is being played,
     * a newer version is swapped in while waiting, so the next group starts on it. */
    int others = 0;
    for (int k = 0; k < A->n_groups; k++) others += k != g && rollout_group_at(A->ro, k)->active;
    while ((rc = wire_send(A->push, &envl, ZMQ_DONTWAIT, err, sizeof err)) == WIRE_AGAIN &&
           !daemon_stopping()) {
        heartbeat(A);
        if (!others) take_weights(A, 0); /* a failure shows in the main loop */
        usleep(20000);
    }
    if (rc < 0 && rc != WIRE_AGAIN) seed_log(SEED_LOG_ERROR, "sending group: %s", err);
    free(eps);
    free(epv);
    free(stp);
    free(stv);
    if (rc == 0) {
        A->groups_sent++;
        A->episodes += (uint64_t)A->G;
    }
    return rc;
}

static int setup(actor *A) {
    job_config *job = A->job;
    A->G = job->algorithm.group_size;
    A->n_groups = SEED_MAX(1, SEED_MIN(job->actor.groups_in_flight,
                                       SEED_MAX(1, job->actor.episodes_in_flight / A->G)));
    char path[2048];
    snprintf(path, sizeof path, "%s/tokenizer.json", job->model.path);
    if (tok_load(&A->tk, path, g_err, sizeof g_err)) return -1;
    snprintf(path, sizeof path, "%s/config.json", job->model.path);
    model_config cfg;
    if (model_config_load(path, &cfg, g_err, sizeof g_err)) return -1;
    model_limits lim;
    int max_prompt;
    rollout_plan(job, &cfg, A->n_groups * A->G, &lim, &max_prompt);
    if (model_create(&A->m, &cfg, &lim, daemon_backend(job), g_err, sizeof g_err)) return -1;
    if (job->algorithm.mode == JOB_MODE_SKILL_PROMPT) {
        if (skill_lib_load_job(&A->lib, job, g_err, sizeof g_err)) return -1;
        seed_log(SEED_LOG_INFO, "skill_prompt: acting prompts carry the skills of %s (%d entries)",
                 job->algorithm.skill_library, A->lib.n);
    }
    rollout_cfg rc = {.job = job,
                      .m = A->m,
                      .tk = A->tk,
                      .n_groups = A->n_groups,
                      .G = A->G,
                      .sampler = {(float)job->sampling.temperature, (float)job->sampling.top_p,
                                  job->sampling.top_k},
                      .max_new_tokens = job->sampling.max_new_tokens,
                      .max_prompt = max_prompt,
                      .lib = job->algorithm.mode == JOB_MODE_SKILL_PROMPT ? &A->lib : NULL,
                      .expert = 0};
    if (rollout_create(&A->ro, &rc, g_err, sizeof g_err)) return -1;
    A->group_id = calloc((size_t)A->n_groups, sizeof *A->group_id);
    A->pool_task = calloc((size_t)A->n_groups, sizeof *A->pool_task);
    if (!A->group_id || !A->pool_task) return seed_errf(g_err, sizeof g_err, "out of memory");
    for (int i = 0; i < job->n_envs; i++)
        if (job->envs[i].tasks > 0 &&
            taskpool_init(&A->pools[i], job->envs[i].tasks,
                          job->actor.pool_sampling == JOB_POOL_FRONTIER, g_err, sizeof g_err))
            return -1;
    seed_rng_init(&A->task_rng,
                  seed_hash_mix(job->job.seed, seed_fnv1a64(A->a.id, strlen(A->a.id))));

    A->ctx = zmq_ctx_new();
    wire_identity_init(&A->me, SEED__ROLE__ROLE_ACTOR, "actor");
    snprintf(A->me.id, sizeof A->me.id, "%s", A->a.id);
    /* one finished group queued at most: past that the actor waits (back-pressure) */
    if (!(A->push = daemon_connect(A->ctx, job, ZMQ_PUSH, "groups_in", 1, g_err, sizeof g_err)) ||
        telemetry_start(&A->tel, A->ctx, job, &A->me, g_err, sizeof g_err))
        return -1;
    /* rollout credit rides on the hub's groups-out ROUTER, where analyzers ask for groups:
     * the learner stays the only one binding, and no new endpoint is needed */
    if (!(A->credit_sock =
              daemon_connect(A->ctx, job, ZMQ_DEALER, "groups_out", 1, g_err, sizeof g_err)))
        return -1;
    wire_rx_init(&A->crx, "groups_out", WIRE_ACCEPT(SEED__ENVELOPE__BODY_CONTROL),
                 (size_t)job->wire.max_msg_bytes, 0);
    if (policy_weights_connect(&A->wrx, job, A->m, A->me.id, g_err, sizeof g_err)) return -1;
    return 0;
}

static void teardown(actor *A) {
    rollout_free(A->ro);
    free(A->group_id);
    free(A->pool_task);
    for (int i = 0; i < JOB_MAX_ENVS; i++) taskpool_free(&A->pools[i]);
    skill_lib_free(&A->lib);
    weights_rx_free(A->wrx);
    telemetry_stop(&A->tel);
    wire_close(A->push);
    wire_close(A->credit_sock);
    if (A->ctx) zmq_ctx_term(A->ctx);
    model_free(A->m);
    tok_free(A->tk);
}

int main(int argc, char **argv) {
    static actor S;
    actor *A = &S;
    int rc = daemon_init(&A->a, "actor", argc, argv, NULL, g_err, sizeof g_err);
    if (rc) {
        if (rc > 0) return 0;
        fprintf(stderr, "seed-actor: %s\n", g_err);
        return 2;
    }
    A->job = &A->a.job;
    if (setup(A)) {
        seed_log(SEED_LOG_ERROR, "%s", g_err);
        teardown(A);
        return 1;
    }
    seed_log(SEED_LOG_INFO, "%d groups x %d episodes in flight; waiting for weights", A->n_groups,
             A->G);
    while (!daemon_stopping() && A->version == 0) {
        heartbeat(A);
        if (take_weights(A, 200) < 0) break;
    }
    rc = 0;
    while (!daemon_stopping() && A->version > 0) {
        /* Weights change only between groups: when a newer version is in, no new group
         * starts, and once the groups in flight are sent the version is swapped in. So
         * every group is sampled with one version, the one it is labelled with. */
        char werr[SEED_ERRLEN];
        int newer = weights_rx_poll(A->wrx, 0, werr, sizeof werr);
        int active = 0;
        for (int g = 0; g < A->n_groups; g++) active += rollout_group_at(A->ro, g)->active;
        if (newer != 0 && active == 0 && take_weights(A, 0) < 0) {
            rc = 1;
            break;
        }
        /* a group starts only against credit, on weights at least as new as the grant's */
        credit_recv(A, 0);
        for (int g = 0; g < A->n_groups && newer == 0; g++) {
            if (rollout_group_at(A->ro, g)->active || A->credit <= 0 ||
                A->version < A->credit_version)
                continue;
            if (start_group(A, g)) {
                rc = 1;
                break;
            }
            A->credit--;
            active++;
        }
        credit_ask(A);
        heartbeat(A); /* the new groups count as in flight from now on */
        if (rc) break;
        if (active == 0 && newer != 0) continue;
        if (active == 0) { /* idle: wait for credit (or, holding it, for newer weights) */
            credit_recv(A, 50);
            continue;
        }
        if (rollout_iterate(A->ro, g_err, sizeof g_err) < 0) {
            seed_log(SEED_LOG_ERROR, "generation: %s", g_err);
            rc = 1;
            break;
        }
        for (int g = 0; g < A->n_groups; g++) {
            if (!rollout_group_done(A->ro, g)) continue;
            record_pool(A, g);
            send_group(A, g);
            rollout_group_release(A->ro, g);
        }
        heartbeat(A);
    }
    heartbeat(A);
    seed_log(SEED_LOG_INFO, "stopping: %llu groups sent", (unsigned long long)A->groups_sent);
    teardown(A);
    return rc;
}
