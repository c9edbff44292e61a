/* status.c — the learner's status document (status.h), one function per section. */
#define _GNU_SOURCE
#include "learner/status.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/zap.h"

/* Seconds of history behind the rates of "throughput". */
#define STATUS_RATE_WINDOW_S 30

const char *learner_role_name(int r) {
    static const char *const names[] = {[SEED__ROLE__ROLE_LEARNER] = "learner",
                                        [SEED__ROLE__ROLE_ACTOR] = "actor",
                                        [SEED__ROLE__ROLE_ANALYZER] = "analyzer",
                                        [SEED__ROLE__ROLE_CTL] = "ctl",
                                        [SEED__ROLE__ROLE_ENV_SERVER] = "env_server"};
    return r >= 0 && r < (int)(sizeof names / sizeof names[0]) && names[r] ? names[r] : "unknown";
}

static uint64_t bad_total(const wire_counters *c) {
    return c->malformed + c->wrong_version + c->oversized + c->unexpected_type;
}

uint64_t learner_malformed(const learner *l) {
    return bad_total(&l->rx_in.c) + bad_total(&l->rx_scored.c) + bad_total(&l->rx_tel.c) +
           bad_total(&l->rx_status.c) + bad_total(&l->rx_out.c) + l->malformed_groups +
           l->malformed_base;
}

/* A bounded reason -> count table as a JSON object. */
static void add_reasons(cJSON *o, const learner_reasons *r) {
    for (int i = 0; i < r->n; i++) cJSON_AddNumberToObject(o, r->reason[i], (double)r->count[i]);
    if (r->other) cJSON_AddNumberToObject(o, "other", (double)r->other);
}

static uint64_t reasons_total(const learner_reasons *r) {
    uint64_t sum = r->other;
    for (int i = 0; i < r->n; i++) sum += r->count[i];
    return sum;
}

/* What the job is and where the run stands: name, mode, stage, step, version, uptime. */
static void status_identity(cJSON *j, const learner *l, double now) {
    static const char *stage_names[] = {"warm_start", "skill_sft", "rl"};
    cJSON_AddStringToObject(j, "job", l->job->job.name);
    char mode[32];
    cJSON_AddStringToObject(
        j, "mode", job_enum_name("algorithm.mode", l->job->algorithm.mode, mode, sizeof mode));
    cJSON_AddStringToObject(j, "stage", stage_names[l->stage < 0 || l->stage > 2 ? 2 : l->stage]);
    cJSON_AddNumberToObject(j, "step", (double)l->step);
    cJSON_AddNumberToObject(j, "total_steps", l->job->job.total_steps);
    cJSON_AddNumberToObject(j, "sft_steps", (double)l->sft_steps);
    cJSON_AddNumberToObject(j, "version", (double)l->version);
    cJSON_AddNumberToObject(j, "uptime_s", now - l->t_start);
    cJSON_AddStringToObject(j, "run_dir", l->job->job.run_dir);
    cJSON_AddStringToObject(j, "learner_id", l->a.id);
    /* the last periodic evaluation (learner/evaluate.h), when there has been one */
    cJSON *ev = l->eval_json ? cJSON_Parse(l->eval_json) : NULL;
    if (ev) cJSON_AddItemToObject(j, "eval", ev);
}

static void status_throughput(cJSON *j, const learner_stats *st) {
    const int w = STATUS_RATE_WINDOW_S;
    cJSON *tp = cJSON_AddObjectToObject(j, "throughput");
    cJSON_AddNumberToObject(tp, "samples_per_s", learner_stats_rate(st, LEARNER_C_SAMPLES, w));
    cJSON_AddNumberToObject(tp, "episodes_per_s", learner_stats_rate(st, LEARNER_C_EPISODES, w));
    cJSON_AddNumberToObject(tp, "env_steps_per_s", learner_stats_rate(st, LEARNER_C_ENV_STEPS, w));
    cJSON *tps = cJSON_AddObjectToObject(tp, "tokens_per_s");
    cJSON_AddNumberToObject(tps, "rollout", learner_stats_rate(st, LEARNER_C_ROLLOUT_TOKENS, w));
    cJSON_AddNumberToObject(tps, "scoring", learner_stats_rate(st, LEARNER_C_SCORED_TOKENS, w));
    cJSON_AddNumberToObject(tps, "training", learner_stats_rate(st, LEARNER_C_TRAIN_TOKENS, w));
}

/* The object of one rolling window: an env's, or a family's inside its env's
 * "families"; NULL for a family whose env has no object. */
static cJSON *roll_object(cJSON *envs, const learner_roll *r) {
    const char *slash = strchr(r->key, '/');
    if (!slash) return cJSON_AddObjectToObject(envs, r->key);
    char env[96];
    snprintf(env, sizeof env, "%.*s", (int)(slash - r->key), r->key);
    cJSON *parent = cJSON_GetObjectItemCaseSensitive(envs, env);
    if (!parent) return NULL;
    cJSON *fam = cJSON_GetObjectItemCaseSensitive(parent, "families");
    if (!fam) fam = cJSON_AddObjectToObject(parent, "families");
    return cJSON_AddObjectToObject(fam, slash + 1);
}

/* Success and return by env, and by task family inside each env (rolling windows), and
 * the success over all envs. */
static void status_envs(cJSON *j, const learner_stats *st) {
    cJSON *envs = cJSON_AddObjectToObject(j, "envs");
    double all_won = 0, all_n = 0;
    for (int pass = 0; pass < 2; pass++) /* envs first, so each family finds its env */
        for (int i = 0; i < st->n_rolls; i++) {
            const learner_roll *r = &st->rolls[i];
            int is_env = strchr(r->key, '/') == NULL;
            if ((pass == 0) != is_env) continue;
            double won = 0, ret = 0;
            for (int k = 0; k < r->n; k++) {
                won += r->won[k];
                ret += r->ret[k];
            }
            cJSON *e = roll_object(envs, r);
            if (!e) continue;
            if (is_env) {
                all_won += won;
                all_n += r->n;
            }
            cJSON_AddNumberToObject(e, "success", r->n ? won / r->n : 0.0);
            cJSON_AddNumberToObject(e, "return", r->n ? ret / r->n : 0.0);
            cJSON_AddNumberToObject(e, "window", r->n);
            cJSON_AddNumberToObject(e, "episodes", (double)r->total);
        }
    cJSON_AddNumberToObject(j, "success", all_n > 0 ? all_won / all_n : 0.0);
}

/* The last optimizer step's loss terms. */
static void status_loss(cJSON *j, const learner_step_stats *s) {
    cJSON *loss = cJSON_AddObjectToObject(j, "loss");
    cJSON_AddNumberToObject(loss, "total", s->loss);
    cJSON_AddNumberToObject(loss, "pg", s->pg);
    cJSON_AddNumberToObject(loss, "opd", s->opd);
    cJSON_AddNumberToObject(loss, "kl", s->kl);
    cJSON_AddNumberToObject(loss, "entropy", s->entropy);
    cJSON_AddNumberToObject(loss, "sft_nll", s->sft_nll);
    cJSON_AddNumberToObject(loss, "grad_norm", s->grad_norm);
    cJSON_AddNumberToObject(loss, "clipfrac", s->clipfrac);
    cJSON_AddNumberToObject(loss, "abs_qs", s->mean_abs_qs);
    cJSON_AddNumberToObject(loss, "opd_adv", s->opd_adv);
    cJSON_AddNumberToObject(loss, "ppo_kl", s->ppo_kl);
    cJSON_AddNumberToObject(j, "mean_abs_q_minus_s", s->mean_abs_qs);
    cJSON_AddNumberToObject(j, "mean_q_minus_s", s->mean_qs);
    cJSON_AddNumberToObject(j, "opd_adv", s->opd_adv);
}

/* The hub's backlog, analyzer and rollout credit against the budget, the train queue. */
static void status_queues(cJSON *j, const learner *l) {
    cJSON *q = cJSON_AddObjectToObject(j, "queues");
    cJSON_AddNumberToObject(q, "hub_backlog", l->hub_q.n);
    int credit = 0;
    for (int i = 0; i < l->n_credits; i++) credit += l->credits[i].credit;
    cJSON_AddNumberToObject(q, "analyzer_credit", credit);
    /* rollout credit: groups held by actors, all groups outstanding against the budget,
     * and the most ever outstanding with the budget in force then */
    int held = 0;
    for (int i = 0; i < l->n_actor_credits; i++) held += l->actor_credits[i].held;
    cJSON_AddNumberToObject(q, "actor_credit", held);
    cJSON_AddNumberToObject(q, "outstanding", learner_credit_outstanding(l));
    cJSON_AddNumberToObject(q, "credit_budget", learner_credit_budget(l));
    cJSON_AddNumberToObject(q, "outstanding_max", l->outstanding_max);
    cJSON_AddNumberToObject(q, "budget_at_max", l->budget_at_max);
    cJSON_AddNumberToObject(q, "groups_per_version", l->groups_per_version);
    cJSON_AddNumberToObject(q, "training_groups", l->training_groups);
    cJSON_AddNumberToObject(q, "orphan_dealt", (double)l->orphan_dealt);
    /* groups-in ledger: groups known sent, not received and not yet counted lost */
    cJSON_AddNumberToObject(q, "acks_pending", (double)learner_acks_pending(&l->acks));
    cJSON_AddNumberToObject(q, "acks_open", l->acks.n);
    cJSON_AddNumberToObject(q, "train_groups", l->train_q.n);
    cJSON_AddNumberToObject(q, "train_tokens", (double)l->train_q.tokens_total);
    cJSON_AddNumberToObject(q, "tokens_per_step", l->job->optim.tokens_per_step);
    cJSON_AddNumberToObject(q, "groups_per_step", l->job->optim.groups_per_step);
    /* job.max_env_steps: the env steps a group brings (moving average), whether credit
     * stopped at the budget, and whether the learner is training its last groups */
    cJSON_AddNumberToObject(q, "env_steps_per_group", l->env_steps_per_group);
    cJSON_AddBoolToObject(q, "env_budget_closed", l->budget_closed != 0);
    cJSON_AddBoolToObject(q, "env_budget_dry", l->budget_dry != 0);
}

/* The run's counters ("counts"), then the reason tables behind three of them. */
static void status_counts(cJSON *j, const learner *l, const weights_pub_stats *ws) {
    const learner_stats *st = &l->st;
    cJSON *c = cJSON_AddObjectToObject(j, "counts");
    cJSON_AddNumberToObject(c, "groups_received", (double)l->groups_in_n);
    cJSON_AddNumberToObject(c, "groups_scored", (double)l->groups_scored_n);
    cJSON_AddNumberToObject(c, "groups_trained", (double)l->groups_trained_n);
    cJSON_AddNumberToObject(c, "credit_granted", (double)l->credit_granted);
    cJSON_AddNumberToObject(c, "train_tokens", (double)st->counters[LEARNER_C_TRAIN_TOKENS]);
    cJSON_AddNumberToObject(c, "episodes_trained", (double)l->episodes_trained_n);
    cJSON_AddNumberToObject(c, "dropped_stale", (double)(l->stale_hub + l->stale_train));
    cJSON_AddNumberToObject(c, "dropped_stale_hub", (double)l->stale_hub);
    cJSON_AddNumberToObject(c, "dropped_stale_train", (double)l->stale_train);
    cJSON_AddNumberToObject(c, "episodes_lost", (double)st->episodes_lost);
    cJSON_AddNumberToObject(c, "episodes_lost_received", (double)st->episodes_lost_received);
    cJSON_AddNumberToObject(c, "episodes_refused", (double)l->episodes_refused);
    cJSON_AddNumberToObject(c, "scored_off_version", (double)l->scored_off_version);
    cJSON_AddNumberToObject(c, "skipped_nonfinite", (double)l->skipped_nonfinite);
    cJSON_AddNumberToObject(c, "dropped_overlong", (double)l->dropped_overlong);
    cJSON_AddNumberToObject(c, "episodes_error", (double)l->episodes_error);
    cJSON_AddNumberToObject(c, "peers_joined", (double)st->peers_joined);
    cJSON_AddNumberToObject(c, "peers_lost", (double)st->peers_lost);
    cJSON_AddNumberToObject(c, "stage1_http_labels",
                            (double)st->counters[LEARNER_C_STAGE1_HTTP_LABELS]);
    cJSON_AddNumberToObject(c, "stage1_skill_fallbacks",
                            (double)st->counters[LEARNER_C_STAGE1_SKILL_FALLBACKS]);
    cJSON_AddNumberToObject(c, "malformed", (double)(learner_malformed(l) + ws->malformed));
    cJSON_AddNumberToObject(c, "rejected", (double)reasons_total(&st->rejected));

    add_reasons(cJSON_AddObjectToObject(j, "episode_errors"), &st->episode_errors);
    add_reasons(cJSON_AddObjectToObject(j, "rejected"), &st->rejected); /* validator's */
    add_reasons(cJSON_AddObjectToObject(j, "episodes_lost_by_reason"), &st->lost);
}

static void add_socket(cJSON *o, const char *name, const wire_counters *c, uint64_t disconnects) {
    cJSON *x = cJSON_AddObjectToObject(o, name);
    cJSON_AddNumberToObject(x, "disconnects", (double)disconnects);
    cJSON_AddNumberToObject(x, "received", (double)c->received);
    cJSON_AddNumberToObject(x, "malformed", (double)c->malformed);
    cJSON_AddNumberToObject(x, "wrong_version", (double)c->wrong_version);
    cJSON_AddNumberToObject(x, "oversized", (double)c->oversized);
    cJSON_AddNumberToObject(x, "unexpected_type", (double)c->unexpected_type);
}

/* Each socket's wire counters and disconnects (the weights socket: its publisher's). */
static void status_sockets(cJSON *j, const learner *l, const weights_pub_stats *ws) {
    cJSON *sock = cJSON_AddObjectToObject(j, "sockets");
    add_socket(sock, "groups_in", &l->rx_in.c, l->disconnects[0]);
    add_socket(sock, "scored_in", &l->rx_scored.c, l->disconnects[1]);
    add_socket(sock, "telemetry", &l->rx_tel.c, l->disconnects[2]);
    add_socket(sock, "status", &l->rx_status.c, l->disconnects[3]);
    add_socket(sock, "groups_out", &l->rx_out.c, l->disconnects[4]);
    cJSON *wsock = cJSON_AddObjectToObject(sock, "weights");
    cJSON_AddNumberToObject(wsock, "malformed", (double)ws->malformed);
    cJSON_AddNumberToObject(wsock, "fetch_capped", (double)ws->fetch_capped);
}

static void status_weights(cJSON *j, const weights_pub_stats *ws) {
    cJSON *w = cJSON_AddObjectToObject(j, "weights");
    cJSON_AddNumberToObject(w, "latest_version", (double)ws->latest_version);
    cJSON_AddNumberToObject(w, "versions_published", (double)ws->versions_published);
    cJSON_AddNumberToObject(w, "bytes_sent", (double)ws->bytes_sent);
    cJSON_AddNumberToObject(w, "buckets_resent", (double)ws->buckets_resent);
    cJSON_AddNumberToObject(w, "receivers", ws->n_peers);
    cJSON_AddNumberToObject(w, "receivers_current", ws->peers_current);
    cJSON_AddNumberToObject(w, "publish_to_all_s", ws->publish_to_all_s);
}

/* Whether CURVE is on and who was let in or refused; never the keys. */
static void status_security(cJSON *j, const learner *l) {
    cJSON *sec = cJSON_AddObjectToObject(j, "security");
    cJSON_AddBoolToObject(sec, "curve", l->zap != NULL);
    if (!l->zap) return;
    zap_stats zs;
    zap_stats_get(l->zap, &zs);
    cJSON_AddNumberToObject(sec, "allowed_keys", zs.n_keys);
    cJSON_AddNumberToObject(sec, "handshakes_admitted", (double)zs.admitted);
    cJSON_AddNumberToObject(sec, "handshakes_refused", (double)zs.refused);
}

/* Where the trainer's time goes: waiting for data or stepping. */
static void status_timing(cJSON *j, const learner *l) {
    cJSON *lt = cJSON_AddObjectToObject(j, "learner");
    double tot = l->wait_s + l->busy_s;
    cJSON_AddNumberToObject(lt, "wait_fraction", tot > 0 ? l->wait_s / tot : 0.0);
    cJSON_AddNumberToObject(lt, "wait_s", l->wait_s); /* for a fraction over a window */
    cJSON_AddNumberToObject(lt, "busy_s", l->busy_s);
    cJSON_AddNumberToObject(lt, "step_seconds", l->last.seconds);
    cJSON_AddNumberToObject(lt, "step_tokens", (double)l->last.tokens);
    /* steps whose batch was already queued when the step before ended (back to back) */
    cJSON_AddNumberToObject(lt, "steps_ready", (double)l->steps_ready);
}

static cJSON *peer_object(const learner_peer *p, double now) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "id", p->id);
    cJSON_AddStringToObject(x, "role", learner_role_name(p->role));
    cJSON_AddStringToObject(x, "host", p->host);
    cJSON_AddNumberToObject(x, "pid", p->pid);
    cJSON_AddNumberToObject(x, "version", (double)p->version);
    cJSON_AddNumberToObject(x, "heartbeat_age_s", now - p->last_seen);
    cJSON_AddNumberToObject(x, "episodes", (double)p->episodes);
    cJSON_AddNumberToObject(x, "env_steps", (double)p->env_steps);
    cJSON_AddNumberToObject(x, "tokens_generated", (double)p->tokens_generated);
    cJSON_AddNumberToObject(x, "tokens_scored", (double)p->tokens_scored);
    cJSON_AddNumberToObject(x, "groups_sent", (double)p->groups_sent);
    cJSON_AddNumberToObject(x, "groups_trained", (double)p->groups_trained);
    cJSON_AddNumberToObject(x, "in_flight", (double)p->in_flight);
    if (p->role != SEED__ROLE__ROLE_ACTOR) /* also an analyzer not heard on telemetry yet */
        cJSON_AddNumberToObject(x, "outstanding", (double)p->outstanding);
    char inc[24];
    snprintf(inc, sizeof inc, "%016llx", (unsigned long long)p->incarnation);
    cJSON_AddStringToObject(x, "incarnation", inc);
    cJSON_AddNumberToObject(x, "env_errors", (double)p->env_errors);
    if (p->role == SEED__ROLE__ROLE_ANALYZER)
        cJSON_AddNumberToObject(x, "skill_fallbacks", (double)p->skill_fallbacks);
    cJSON_AddNumberToObject(x, "malformed", (double)p->malformed);
    return x;
}

static void status_peers(cJSON *j, const learner_stats *st, double now) {
    cJSON *peers = cJSON_AddArrayToObject(j, "peers");
    for (int i = 0; i < st->n_peers; i++)
        cJSON_AddItemToArray(peers, peer_object(&st->peers[i], now));
}

char *learner_status_json(learner *l) {
    double now = seed_now();
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    pthread_mutex_lock(&l->mu);
    weights_pub_stats ws;
    weights_pub_stats_get(l->pub, &ws);
    status_identity(j, l, now);
    status_throughput(j, &l->st);
    status_envs(j, &l->st);
    status_loss(j, &l->last);
    status_queues(j, l);
    status_counts(j, l, &ws);
    status_sockets(j, l, &ws);
    status_weights(j, &ws);
    status_security(j, l);
    status_timing(j, l);
    status_peers(j, &l->st, now);
    pthread_mutex_unlock(&l->mu);
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return out;
}
