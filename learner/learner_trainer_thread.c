/* learner_trainer_thread.c — the learner's trainer thread: load or resume the policy,
 * warm-start it (stage 0) when it starts from scratch, publish weights, then run stage-2
 * optimizer steps over scored groups as they arrive: staleness filter, GRPO episode
 * advantages, the SEED per-token signal, AdamW, a new weights version after each step,
 * a metrics line, and checkpoints (after each warm-start stage, every checkpoint.every steps
 * or checkpoint.every_minutes, whichever first, and on stop). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "roles/policy_weights.h"
#include "learner/checkpoint.h"
#include "learner/evaluate.h"
#include "learner/learner.h"
#include "learner/metrics.h"
#include "learner/samples.h"
#include "learner/warmstart.h"

static int fail(learner *l, const char *msg) {
    pthread_mutex_lock(&l->mu);
    snprintf(l->trainer_err, sizeof l->trainer_err, "%s", msg);
    l->trainer_rc = -1;
    l->trainer_done = 1;
    pthread_mutex_unlock(&l->mu);
    return -1;
}

int learner_publish(learner *l, uint64_t v, char *err, size_t errlen) {
    if (!l->table && !(l->table = policy_weights_table(l->policy, &l->n_table)))
        return seed_errf(err, errlen, "out of memory for the tensor table");
    if (weights_pub_publish(l->pub, v, model_params(l->policy),
                            model_num_params(l->policy) * sizeof(float), l->table, l->n_table,
                            l->config_json, err, errlen))
        return -1;
    pthread_mutex_lock(&l->mu);
    l->version = v;
    pthread_mutex_unlock(&l->mu);
    return 0;
}

static double lr_at(const job_config *job, int64_t step) {
    double lr = job->optim.lr;
    int64_t w = job->optim.warmup_steps, total = job->job.total_steps;
    if (w > 0 && step < w) return lr * (double)(step + 1) / (double)w;
    if (job->optim.schedule == JOB_SCHEDULE_COSINE && total > w) {
        double p = (double)(step - w) / (double)(total - w);
        return lr * 0.5 * (1.0 + cos(M_PI * (p > 1 ? 1 : p)));
    }
    return lr;
}

/* Save a checkpoint with every group not yet trained on (train and hub queues). */
static int checkpoint(learner *l, char *err, size_t errlen) {
    pthread_mutex_lock(&l->mu);
    int n = l->train_q.n + l->hub_q.n;
    void **blobs = calloc((size_t)n + 1, sizeof *blobs);
    size_t *lens = calloc((size_t)n + 1, sizeof *lens);
    int k = 0, rc = 0;
    for (int i = 0; blobs && lens && i < n; i++) {
        Seed__Envelope *e = i < l->train_q.n ? l->train_q.v[i] : l->hub_q.v[i - l->train_q.n];
        wire_buf b = {0};
        if (wire_pack(e, NULL, &b, err, errlen) == 0) {
            blobs[k] = b.data;
            lens[k++] = b.len;
        }
    }
    learner_ckpt_state st;
    memset(&st, 0, sizeof st);
    st.step = l->step;
    st.version = l->version;
    st.sft_steps = l->sft_steps;
    st.stage = l->stage;
    learner_counters_save(l, &st); /* the run's counters outlive a restart */
    pthread_mutex_unlock(&l->mu);
    if (!blobs || !lens) {
        rc = seed_errf(err, errlen, "out of memory packing %d pending groups", n);
    } else {
        char path[4096];
        double t0 = seed_now();
        rc = learner_ckpt_save(l->ckpt_dir, l->policy, l->job->model.dtype == JOB_DTYPE_BF16,
                               l->tokenizer_path, &st, (const void *const *)blobs, lens, k,
                               l->job->checkpoint.keep, path, sizeof path, err, errlen);
        if (!rc)
            seed_log(SEED_LOG_INFO, "checkpoint %s (%d pending groups, %.2f s)", path, k,
                     seed_now() - t0);
    }
    for (int i = 0; i < k; i++) free(blobs[i]);
    free(blobs);
    free(lens);
    learner_counters_done(l, &st, !rc);
    if (!rc) {
        l->ckpt_step = st.step;
        l->ckpt_t = seed_now();
    }
    return rc;
}

int learner_checkpoint_due(learner *l, int force, char *err, size_t errlen) {
    const job_config *job = l->job;
    /* the step rule counts stage-2 steps; the warm start has only its stage ends and
     * the time rule */
    int due = force || learner_ckpt_due(l->stage == 2 ? job->checkpoint.every : 0,
                                        job->checkpoint.every_minutes * 60.0, l->step, l->ckpt_step,
                                        seed_now(), l->ckpt_t);
    return due ? checkpoint(l, err, errlen) : 0;
}

static void requeue_pending(void *ctx, const void *buf, size_t len) {
    learner *l = ctx;
    wire_rx rx;
    wire_rx_init(&rx, "pending",
                 WIRE_ACCEPT(SEED__ENVELOPE__BODY_SCORED_GROUP) |
                     WIRE_ACCEPT(SEED__ENVELOPE__BODY_EPISODE_GROUP),
                 0, 0);
    Seed__Envelope *e = NULL;
    if (wire_decode(&rx, buf, len, "checkpoint", &e) != 1) return;
    pthread_mutex_lock(&l->mu);
    if (e->body_case == SEED__ENVELOPE__BODY_SCORED_GROUP) {
        if (learner_q_push(&l->train_q, e, learner_group_tokens(e->scored_group->group)))
            wire_free(e);
    } else if (learner_q_push(&l->hub_q, e, 0)) {
        wire_free(e);
    }
    pthread_mutex_unlock(&l->mu);
}

static int load_models(learner *l, char *err, size_t errlen) {
    job_config *job = l->job;
    snprintf(l->model_dir, sizeof l->model_dir, "%s", job->model.path);
    snprintf(l->tokenizer_path, sizeof l->tokenizer_path, "%s/tokenizer.json", l->model_dir);
    snprintf(l->ckpt_dir, sizeof l->ckpt_dir, "%s", job->checkpoint.dir);
    snprintf(l->metrics_path, sizeof l->metrics_path, "%s/metrics.jsonl", job->job.run_dir);
    if (tok_load(&l->tk, l->tokenizer_path, err, errlen)) return -1;
    model_limits lim = {.max_batch_seqs = 1,
                        .max_seq_len = job->optim.micro_batch_tokens,
                        .max_train_tokens = job->optim.micro_batch_tokens,
                        .threads = job->model.threads};
    const char *backend = daemon_backend(job);
    char cfgpath[1100];
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", l->model_dir);
    model_config cfg;
    if (job->model.init == JOB_INIT_RANDOM) {
        if (model_config_load(cfgpath, &cfg, err, errlen) ||
            model_create(&l->policy, &cfg, &lim, backend, err, errlen))
            return -1;
        model_init_random(l->policy, job->job.seed, 0.02f);
    } else if (model_load(&l->policy, l->model_dir, &lim, backend, err, errlen)) {
        return -1;
    }
    if (seed_read_file(cfgpath, &l->config_json, NULL, err, errlen)) return -1;
    if (!strcmp(backend, "cpu"))
        seed_log(SEED_LOG_INFO, "cpu backend: OpenBLAS kernels %s", model_blas_core());
    if (job->algorithm.kl_beta != 0.0) {
        /* no KV cache; log pi_ref comes from model_score, or with shared prefixes from a
         * forward over the packed micro-batch, which needs the training buffers */
        model_limits rl = lim;
        rl.max_batch_seqs = 0;
        if (!job->optim.share_prefix || !model_train_shares_prefix(l->policy))
            rl.max_train_tokens = 0;
        if (model_create(&l->ref, model_get_config(l->policy), &rl, backend, err, errlen))
            return -1;
    }
    /* Samples longer than a micro-batch are dropped: make sure the job's longest one fits
     * (job_resolve checked this already when sampling.max_prompt_tokens is set). */
    const int ctx = model_get_config(l->policy)->max_position_embeddings;
    if (job->sampling.max_prompt_tokens == 0 && job->optim.micro_batch_tokens < ctx)
        return seed_errf(err, errlen,
                         "optim.micro_batch_tokens: expected at least the model's context "
                         "length %d (max_position_embeddings; sampling.max_prompt_tokens is 0, "
                         "so a step may be that long), got %d: raise it or set "
                         "sampling.max_prompt_tokens",
                         ctx, job->optim.micro_batch_tokens);
    return 0;
}

static void copy_params(model *dst, model *src) {
    memcpy(model_params(dst), model_params(src), model_num_params(src) * sizeof(float));
    char err[SEED_ERRLEN];
    if (model_params_changed(dst, err, sizeof err))
        seed_log(SEED_LOG_ERROR, "reference refresh: %s", err);
}

/* One line of metrics.jsonl, built with cJSON: env and family names come from peers'
 * messages (validated against the job, proto/validate.h), and whatever they hold is
 * escaped, so a name cannot forge a record. */
static void append_metrics(learner *l, const learner_step_stats *s, double lr) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return;
    pthread_mutex_lock(&l->mu);
    const struct {
        const char *key;
        double v;
    } num[] = {{"time", seed_wall()},
               {"stage", l->stage},
               {"step", (double)l->step},
               {"version", (double)l->version},
               {"lr", lr},
               {"loss", s->loss},
               {"pg", s->pg},
               {"opd", s->opd},
               {"kl", s->kl},
               {"entropy", s->entropy},
               {"sft_nll", s->sft_nll},
               {"prompt_nll", s->prompt_nll},
               {"grad_norm", s->grad_norm},
               {"clipfrac", s->clipfrac},
               {"mean_abs_q_minus_s", s->mean_abs_qs},
               {"mean_q_minus_s", s->mean_qs},
               {"opd_adv", s->opd_adv},
               {"ppo_kl", s->ppo_kl},
               {"tokens", (double)s->tokens},
               {"packed_tokens", (double)s->packed_tokens},
               {"response_tokens", (double)s->response_tokens},
               {"q_tokens", (double)s->q_tokens},
               {"samples", (double)s->samples},
               {"groups", (double)l->step_groups},
               {"groups_all_won", (double)l->step_all_won},
               {"groups_all_lost", (double)l->step_all_lost},
               {"step_seconds", s->seconds},
               {"episodes_seen", (double)l->st.counters[LEARNER_C_EPISODES]},
               {"env_steps_seen", (double)l->st.counters[LEARNER_C_ENV_STEPS]},
               {"skipped_nonfinite", (double)l->skipped_nonfinite},
               {"dropped_overlong", (double)l->dropped_overlong},
               {"scored_off_version", (double)l->scored_off_version},
               {"episodes_error", (double)l->episodes_error}};
    for (size_t i = 0; i < sizeof num / sizeof num[0]; i++) {
        /* JSON has no NaN or inf: a non-finite value (a skipped step's loss) is null */
        if (isfinite(num[i].v))
            cJSON_AddNumberToObject(j, num[i].key, num[i].v);
        else
            cJSON_AddNullToObject(j, num[i].key);
        if (!strcmp(num[i].key, "samples"))
            cJSON_AddBoolToObject(j, "skipped", s->skipped_nonfinite != 0);
    }
    for (int i = 0; i < l->st.n_rolls; i++) {
        learner_roll *r = &l->st.rolls[i];
        double won = 0;
        for (int k = 0; k < r->n; k++) won += r->won[k];
        char key[128];
        snprintf(key, sizeof key, "success/%s", r->key);
        cJSON_AddNumberToObject(j, key, r->n ? won / r->n : 0.0);
    }
    pthread_mutex_unlock(&l->mu);
    learner_metrics_write(l, j);
    cJSON_Delete(j);
}

/* The step's samples from scored groups (learner/samples.h); the counts go to the
 * learner's totals. Sample pointers go into the envelopes, which stay alive until the
 * step is done. */
static int build_samples(learner *l, learner_samples *b, Seed__Envelope **groups, int ng,
                         Seed__ScoredGroup **sgs, char *err, size_t errlen) {
    const job_config *job = l->job;
    for (int i = 0; i < ng; i++) sgs[i] = groups[i]->scored_group;
    learner_samples_cfg cfg = {
        .adv_norm = job->algorithm.adv_norm,
        .loss_agg = job->algorithm.loss_agg,
        .use_q = job->algorithm.w_opd != 0.0 || job->algorithm.opd_loss != JOB_OPD_NONE,
        .gigpo_coef = (float)job->algorithm.gigpo_coef,
        .gigpo_gamma = (float)job->algorithm.gigpo_gamma,
        .tk = job->algorithm.opd_tokens != JOB_OPD_TOKENS_RESPONSE ? l->tk : NULL,
        .decision = job->algorithm.opd_tokens == JOB_OPD_TOKENS_DECISION,
        .opd_baseline = job->algorithm.opd_baseline,
        .opd_lost_only = job->algorithm.opd_episodes == JOB_OPD_EPISODES_LOST,
    };
    learner_samples_stats st;
    memset(&st, 0, sizeof st);
    int rc = learner_samples_build(b, &cfg, sgs, ng, &st, err, errlen);
    pthread_mutex_lock(&l->mu);
    l->scored_off_version += (uint64_t)st.scored_off_version;
    l->episodes_error += (uint64_t)st.episodes_error;
    l->step_all_won = (int)st.groups_all_won;
    l->step_all_lost = (int)st.groups_all_lost;
    learner_reasons_merge(&l->st.episode_errors, &st.errors);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* Periodic evaluation (learner/evaluate.h): the report goes to metrics.jsonl (one record
 * with eval_success, eval_return and per env/family values; eval_pool_success and per env
 * with a training pool), RUN_DIR/eval.json and the status document. An evaluation that fails is
 * logged; training goes on. */
static void evaluate(learner *l) {
    char err[SEED_ERRLEN];
    learner_eval_report rep;
    if (!l->ev) return;
    if (learner_eval_run(l->ev, l->policy, l->step, &rep, err, sizeof err)) {
        seed_log(SEED_LOG_ERROR, "evaluation at step %lld: %s", (long long)l->step, err);
        return;
    }
    char *js = learner_eval_json(&rep, l->job);
    cJSON *rec = cJSON_CreateObject();
    if (!js || !rec) {
        free(js);
        cJSON_Delete(rec);
        seed_log(SEED_LOG_ERROR, "evaluation at step %lld: out of memory", (long long)l->step);
        return;
    }
    pthread_mutex_lock(&l->mu);
    cJSON_AddNumberToObject(rec, "time", seed_wall());
    cJSON_AddNumberToObject(rec, "stage", l->stage);
    cJSON_AddNumberToObject(rec, "step", (double)l->step);
    cJSON_AddNumberToObject(rec, "version", (double)l->version);
    cJSON_AddNumberToObject(rec, "episodes_seen", (double)l->st.counters[LEARNER_C_EPISODES]);
    cJSON_AddNumberToObject(rec, "env_steps_seen", (double)l->st.counters[LEARNER_C_ENV_STEPS]);
    free(l->eval_json);
    l->eval_json = js;
    pthread_mutex_unlock(&l->mu);
    cJSON_AddNumberToObject(rec, "eval_success", rep.success);
    cJSON_AddNumberToObject(rec, "eval_return", rep.ret);
    cJSON_AddNumberToObject(rec, "eval_episodes", rep.episodes);
    cJSON_AddNumberToObject(rec, "eval_seconds", rep.seconds);
    for (int i = 0; i < rep.n_envs; i++) {
        const rollout_eval_result *r = &rep.env[i];
        const char *env_name = l->job->envs[i].name;
        char key[200];
        snprintf(key, sizeof key, "eval/success/%s", env_name);
        cJSON_AddNumberToObject(rec, key, r->episodes ? (double)r->won / r->episodes : 0.0);
        for (int k = 0; k < r->n_families; k++) {
            const rollout_eval_family *f = &r->families[k];
            snprintf(key, sizeof key, "eval/success/%s/%s", env_name, f->family);
            cJSON_AddNumberToObject(rec, key, f->episodes ? (double)f->won / f->episodes : 0.0);
        }
    }
    if (rep.pool_episodes > 0) cJSON_AddNumberToObject(rec, "eval_pool_success", rep.pool_success);
    for (int i = 0; i < l->job->n_envs; i++) {
        const rollout_eval_result *r = &rep.pool[i];
        if (l->job->envs[i].tasks <= 0) continue;
        char key[200];
        snprintf(key, sizeof key, "eval_pool/success/%s", l->job->envs[i].name);
        cJSON_AddNumberToObject(rec, key, r->episodes ? (double)r->won / r->episodes : 0.0);
    }
    learner_metrics_write(l, rec);
    cJSON_Delete(rec);
    char path[1200];
    snprintf(path, sizeof path, "%s/eval.json", l->job->job.run_dir);
    if (seed_write_file_atomic(path, js, strlen(js), err, sizeof err))
        seed_log(SEED_LOG_WARN, "%s", err);
    l->eval_step = l->step;
    seed_log(SEED_LOG_INFO, "eval step %lld: success %.3f return %.3f (%d %s tasks, %.1f s)",
             (long long)l->step, rep.success, rep.ret, rep.episodes, l->job->eval.split,
             rep.seconds);
    if (rep.pool_episodes > 0)
        seed_log(SEED_LOG_INFO, "eval step %lld: success %.3f on the %d training-pool tasks",
                 (long long)l->step, rep.pool_success, rep.pool_episodes);
}

/* job.max_env_steps: the budget is spent, nothing it paid for is still coming (the I/O
 * thread's budget_dry), and the trainer has trained or dropped (stale) what was queued. */
static int env_budget_done(learner *l) {
    pthread_mutex_lock(&l->mu);
    int done = l->job->job.max_env_steps > 0 && l->budget_dry && l->train_q.n == 0;
    pthread_mutex_unlock(&l->mu);
    return done;
}

/* Evaluate before the first step, every eval.every steps and (final) after the last. */
static void maybe_evaluate(learner *l, int final) {
    int every = l->job->eval.every;
    if (!l->ev || every <= 0 || l->eval_step == l->step) return;
    if (final || l->step % every == 0) evaluate(l);
}

static int rl_loop(learner *l, char *err, size_t errlen) {
    job_config *job = l->job;
    learner_samples samples;
    learner_samples_init(&samples);
    Seed__Envelope **batch = NULL;
    Seed__ScoredGroup **sgs = NULL;
    int *order = NULL;
    int bcap = 0, stepped = 0;
    int rc = 0;
    maybe_evaluate(l, 0);
    while (l->step < job->job.total_steps && !env_budget_done(l)) {
        double tw = seed_now();
        pthread_mutex_lock(&l->mu);
        int waited = 0;
        /* a spent env-step budget with nothing more coming: train what is queued */
        while (!l->stopping && learner_step_short(l) > 0 && !l->budget_dry) {
            waited = 1;
            pthread_cond_wait(&l->cv, &l->mu);
        }
        if (l->stopping) {
            pthread_mutex_unlock(&l->mu);
            break;
        }
        if (stepped && !waited) l->steps_ready++; /* back to back: the batch was queued */
        /* A step trains optim.groups_per_step groups (or, with it 0, tokens_per_step
         * tokens): the queued groups, oldest weights version first (arrival order within
         * one), until the fresh ones reach it; the rest wait for the next step. Taking
         * every queued group made a step as large as the backlog (minutes) while versions
         * stood still. Stale groups are dropped. */
        const int n = l->train_q.n;
        if (n > bcap) {
            Seed__Envelope **nb = realloc(batch, sizeof *batch * (size_t)n * 2);
            if (nb) batch = nb;
            Seed__ScoredGroup **ns = realloc(sgs, sizeof *sgs * (size_t)n * 2);
            if (ns) sgs = ns;
            int *no = realloc(order, sizeof *order * (size_t)n * 2);
            if (no) order = no;
            if (!nb || !ns || !no) {
                pthread_mutex_unlock(&l->mu);
                rc = seed_errf(err, errlen, "out of memory taking %d groups", n);
                break;
            }
            bcap = n * 2;
        }
        for (int i = 0; i < n; i++) { /* stable insertion sort by policy version */
            int k = i;
            uint64_t v = l->train_q.v[i]->scored_group->group->policy_version;
            while (k > 0 && l->train_q.v[order[k - 1]]->scored_group->group->policy_version > v) {
                order[k] = order[k - 1];
                k--;
            }
            order[k] = i;
        }
        /* take groups in that order until the fresh ones reach the step's size; the
         * stale ones taken on the way are dropped */
        const int by_groups = job->optim.groups_per_step > 0;
        int m = 0, fresh = 0;
        int64_t tokens = 0;
        for (; m < n && (by_groups ? fresh < job->optim.groups_per_step
                                   : tokens < job->optim.tokens_per_step);
             m++) {
            const Seed__EpisodeGroup *g = l->train_q.v[order[m]]->scored_group->group;
            if (!job_version_stale(job, g->policy_version, l->version)) {
                tokens += l->train_q.tokens[order[m]];
                fresh++;
            }
        }
        learner_q_take(&l->train_q, order, m, batch);
        int nb = 0;
        for (int j = 0; j < m; j++) {
            Seed__EpisodeGroup *g = batch[j]->scored_group->group;
            if (job_version_stale(job, g->policy_version, l->version)) {
                l->stale_train += g->n_episodes;
                wire_free(batch[j]);
            } else {
                batch[nb++] = batch[j];
            }
        }
        l->training_groups = nb; /* outstanding until the new version is out */
        l->step_groups = nb;
        l->wait_s += seed_now() - tw;
        pthread_mutex_unlock(&l->mu);
        if (nb == 0) continue;

        double tb = seed_now();
        rc = build_samples(l, &samples, batch, nb, sgs, err, errlen);
        const int ns = samples.n;
        double lr = lr_at(job, l->step);
        learner_step_set_lr(l->stepper, (float)lr);
        learner_step_stats s;
        memset(&s, 0, sizeof s);
        if (!rc && ns > 0) rc = learner_step_run(l->stepper, samples.v, ns, &s, err, errlen);
        uint64_t episodes = 0;
        pthread_mutex_lock(&l->mu);
        for (int i = 0; i < nb; i++) {
            Seed__EpisodeGroup *g = batch[i]->scored_group->group;
            episodes += g->n_episodes;
            for (int k = 0; s.applied && k < l->st.n_peers; k++)
                if (g->actor_id && !strcmp(l->st.peers[k].id, g->actor_id))
                    l->st.peers[k].groups_trained++;
            wire_free(batch[i]);
        }
        l->dropped_overlong += (uint64_t)s.dropped_overlong;
        l->skipped_nonfinite += (uint64_t)s.skipped_nonfinite;
        if (!s.applied) {
            /* a step without an update (a non-finite loss or gradient, no response token
             * to train, a failed step) used its groups up untrained: received, lost */
            l->training_groups = 0;
            learner_stats_lose(&l->st,
                               rc                    ? "step_failed"
                               : s.skipped_nonfinite ? "step_nonfinite"
                                                     : "step_empty",
                               episodes);
            l->st.episodes_lost_received += episodes;
        }
        pthread_mutex_unlock(&l->mu);
        if (s.skipped_nonfinite) {
            append_metrics(l, &s, lr);
            seed_log(SEED_LOG_WARN,
                     "step %lld skipped: non-finite loss or gradient norm, no update (%llu "
                     "skipped so far)",
                     (long long)l->step + 1, (unsigned long long)l->skipped_nonfinite);
        }
        if (rc) break;
        if (!s.applied) continue;
        pthread_mutex_lock(&l->mu);
        l->step++;
        l->last = s;
        l->groups_trained_n += (uint64_t)nb;
        l->episodes_trained_n += episodes;
        l->st.counters[LEARNER_C_TRAIN_TOKENS] += (uint64_t)s.tokens;
        l->st.counters[LEARNER_C_SAMPLES] += episodes;
        uint64_t v = l->version + 1;
        pthread_mutex_unlock(&l->mu);
        rc = learner_publish(l, v, err, errlen);
        pthread_mutex_lock(&l->mu);
        /* the version is out: what the step took is no longer outstanding, and the rate
         * the credit budget follows (groups trained per version) moves */
        l->training_groups = 0;
        l->groups_per_version =
            l->groups_per_version > 0 ? 0.75 * l->groups_per_version + 0.25 * nb : nb;
        l->busy_s += seed_now() - tb;
        pthread_mutex_unlock(&l->mu);
        if (rc) break;
        stepped = 1;
        append_metrics(l, &s, lr);
        seed_log(SEED_LOG_INFO,
                 "step %lld v%llu loss %.4f pg %.4f kl %.4f |q-s| %.3f gn %.3f tokens %lld (%lld "
                 "run) %.2fs",
                 (long long)l->step, (unsigned long long)v, s.loss, s.pg, s.kl, s.mean_abs_qs,
                 s.grad_norm, (long long)s.tokens, (long long)s.packed_tokens, s.seconds);
        if ((rc = learner_checkpoint_due(l, 0, err, errlen))) break;
        maybe_evaluate(l, 0);
    }
    if (!rc && !l->stopping && (l->step >= job->job.total_steps || env_budget_done(l)))
        maybe_evaluate(l, 1);
    learner_samples_free(&samples);
    free(batch);
    free(sgs);
    free(order);
    return rc;
}

void *learner_trainer_main(void *arg) {
    learner *l = arg;
    job_config *job = l->job;
    char err[SEED_ERRLEN];
    if (seed_mkdir_p(job->job.run_dir, err, sizeof err) || load_models(l, err, sizeof err)) {
        fail(l, err);
        return NULL;
    }
    l->eval_step = -1;
    if (job->eval.every > 0 &&
        learner_eval_create(&l->ev, job, l->policy, l->tk, err, sizeof err)) {
        fail(l, err);
        return NULL;
    }
    const learner_ckpt_state cs = l->resume;
    const char *cpath = l->resume_path;
    const int found = l->resume_found;
    l->ckpt_step = l->step; /* the cadence counts from the start (or the resumed step) */
    l->ckpt_t = seed_now();
    if (found > 0) {
        if (learner_ckpt_load(cpath, l->policy, err, sizeof err)) {
            fail(l, err);
            return NULL;
        }
        int np = learner_ckpt_pending(cpath, requeue_pending, l, err, sizeof err);
        if (np < 0) {
            fail(l, err);
            return NULL;
        }
        seed_log(SEED_LOG_INFO, "resumed from %s: stage %d, step %lld, version %llu, %d pending",
                 cpath, cs.stage, (long long)cs.step, (unsigned long long)cs.version, np);
    }

    learner_loss_cfg lc = {
        .w_opd = (float)job->algorithm.w_opd,
        .c_opd = (float)job->algorithm.c_opd,
        .clip_eps = (float)job->algorithm.clip_eps,
        .dual_clip = (float)job->algorithm.dual_clip,
        .kl_beta = (float)job->algorithm.kl_beta,
        .entropy_coef = (float)job->algorithm.entropy_coef,
        .opd_mode = job->algorithm.opd_loss,
        .opd_loss_coef = (float)job->algorithm.opd_loss_coef,
    };
    model_adamw opt = {
        .lr = (float)job->optim.lr,
        .beta1 = (float)job->optim.betas[0],
        .beta2 = (float)job->optim.betas[1],
        .eps = (float)job->optim.eps,
        .weight_decay = (float)job->optim.weight_decay,
        .max_grad_norm = (float)job->optim.max_grad_norm,
    };
    if (learner_step_create(&l->stepper, l->policy, l->ref, &lc, &opt,
                            job->optim.micro_batch_tokens, job->optim.share_prefix, err,
                            sizeof err)) {
        fail(l, err);
        return NULL;
    }
    int rc = 0;
    /* Versions: 1 is the first weights actors run (the policy entering stage 2); a
     * resumed run serves exactly the version it checkpointed, so peers see the same step
     * and version as before the restart. During the warm start nothing is published:
     * actors and analyzers wait instead of taking the learner's cores for rollouts of
     * an untrained model. */
    uint64_t v = found > 0 ? cs.version : 0;
    if (l->stage < 2) {
        rc = learner_warmstart(l, err, sizeof err);
        if (!rc && !l->stopping) {
            pthread_mutex_lock(&l->mu);
            l->stage = 2;
            pthread_mutex_unlock(&l->mu);
            v++;
            /* entering stage 2 (never on a resume already there): a fresh RL optimizer,
             * as verl starts one, unless the job keeps the SFT moments */
            if (!job->optim.keep_sft_moments)
                rc = learner_step_reset_moments(l->stepper, err, sizeof err);
        }
    } else if (v == 0) {
        v = 1;
    }
    if (!rc && l->ref) {
        int have = learner_ckpt_load_ref(l->ckpt_dir, l->ref, err, sizeof err);
        if (have < 0) rc = -1;
        if (have == 0) {
            copy_params(l->ref, l->policy); /* pi_ref = the policy entering stage 2 */
            if (learner_ckpt_save_ref(l->ckpt_dir, l->ref, err, sizeof err)) rc = -1;
        }
    }
    if (!rc && l->stage == 2) rc = learner_publish(l, v, err, sizeof err);
    /* Stage 2 trains pi_T = softmax(z / T) at the actors' sampling temperature (verl's
     * rule), so log pi_theta, the behaviour log-probs and the analyzer's s/q are one
     * distribution; the KL reference is scored at the same T. Stages 0/1 (SFT) ran at
     * the default T = 1. */
    const float T = (float)job->sampling.temperature;
    if (!rc && l->stage == 2 &&
        (model_set_temperature(l->policy, T, err, sizeof err) ||
         (l->ref && model_set_temperature(l->ref, T, err, sizeof err))))
        rc = -1;
    if (!rc && !l->stopping && l->stage == 2) rc = rl_loop(l, err, sizeof err);
    char err2[SEED_ERRLEN];
    if (checkpoint(l, err2, sizeof err2)) {
        seed_log(SEED_LOG_ERROR, "final checkpoint failed: %s", err2);
        if (!rc) {
            rc = -1;
            snprintf(err, sizeof err, "%s", err2);
        }
    }
    if (l->step >= job->job.total_steps)
        seed_log(SEED_LOG_INFO, "reached total_steps %d", job->job.total_steps);
    else if (!rc && env_budget_done(l))
        seed_log(SEED_LOG_INFO, "reached max_env_steps %llu at step %lld",
                 (unsigned long long)job->job.max_env_steps, (long long)l->step);
    learner_step_free(l->stepper);
    learner_eval_free(l->ev);
    learner_metrics_close(l);
    model_free(l->policy);
    model_free(l->ref);
    tok_free(l->tk);
    free(l->config_json);
    free(l->table);
    pthread_mutex_lock(&l->mu);
    if (rc) {
        snprintf(l->trainer_err, sizeof l->trainer_err, "%s", err);
        l->trainer_rc = -1;
    }
    l->trainer_done = 1;
    pthread_mutex_unlock(&l->mu);
    return NULL;
}
