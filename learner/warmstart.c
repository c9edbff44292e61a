/* warmstart.c — see warmstart.h. */
#define _GNU_SOURCE
#include "learner/warmstart.h"
#include "learner/warmstart_play.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/daemon.h"
#include "roles/render.h"
#include "roles/rollout.h"
#include "roles/http_skill.h"
#include "roles/skill.h"

/* Demonstrations of one optimizer step: token sequences owned here. */
typedef struct demo_set {
    learner_sample *s;
    int32_t **bufs;
    int n, cap;
    int64_t tokens;
} demo_set;

static void demo_clear(demo_set *d) {
    for (int i = 0; i < d->n; i++) free(d->bufs[i]);
    d->n = 0;
    d->tokens = 0;
}

static int demo_add(demo_set *d, const int *prompt, int plen, const int *resp, int rlen) {
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        learner_sample *s = realloc(d->s, sizeof *s * (size_t)cap);
        if (s) d->s = s;
        int32_t **b = realloc(d->bufs, sizeof *b * (size_t)cap);
        if (b) d->bufs = b;
        if (!s || !b) return -1;
        d->cap = cap;
    }
    int32_t *buf = malloc(sizeof(int32_t) * (size_t)(plen + rlen));
    if (!buf) return -1;
    memcpy(buf, prompt, sizeof(int32_t) * (size_t)plen);
    memcpy(buf + plen, resp, sizeof(int32_t) * (size_t)rlen);
    d->bufs[d->n] = buf;
    d->s[d->n] =
        (learner_sample){.prompt = buf, .plen = plen, .resp = buf + plen, .rlen = rlen, .sft = 1};
    d->n++;
    d->tokens += plen + rlen;
    return 0;
}

/* Stage 1's episodes when the policy plays them (algorithm.stage1_episodes policy): a
 * batch of eval.batch tasks, one episode each, played at once by an inference copy of
 * the policy through the actors' rollout engine; the samples take them in order, and
 * the next batch plays with the weights of that moment. */
typedef struct s1_batch {
    model *m;
    rollout *r;
    int n, next; /* episodes of this batch, the next one to label */
    uint64_t version, errors;
} s1_batch;

typedef struct ws_ctx {
    learner *l;
    s1_batch pb;
    uint64_t task; /* the next task of the stream seed_hash_mix(job.seed, task) */
    render_ctx rr;
    tok_ids prompt, reply;
    seed_sbuf chat;
    seed_rng rng;
    env *envs[JOB_MAX_ENVS];
    int n_expert;     /* envs with an expert */
    http_skill *http; /* skill_source http: stage-1 labels come from the endpoint */
    int off_path;     /* this step's stage-0 samples whose state the noise reached */
    /* this step's stage-0 samples with the oracle's skill; the step lines they could show
     * and those shown (algorithm.stage0_step_skill_keep) */
    int skilled, step_lines, step_shown;
    int informed; /* this step's stage-0 episodes the informed expert played */
    uint64_t fallbacks_unlogged;
    double t_logged;
} ws_ctx;

/* The rule-based oracle's skill for an episode of env i that played acts[0..n-1] (NULL:
 * a step without a valid action). */
static int oracle(ws_ctx *c, int i, uint64_t seed, const char *const *acts, int n, char *out,
                  size_t out_len, char *err, size_t errlen) {
    env_kv kv[JOB_MAX_ENV_OPTIONS + 1];
    char num[16];
    int nkv = job_env_kv(&c->l->job->envs[i], kv, num);
    return env_hindsight(c->envs[i]->vt->name, kv, nkv, seed, ENV_SPLIT_TRAIN, acts, n, out,
                         out_len, err, errlen);
}

/* The actions of a recorded episode, for the oracle. */
static void rec_actions(const warmstart_step *rec, int n, const char **acts) {
    for (int k = 0; k < n; k++) acts[k] = rec[k].action;
}

/* The stage-1 label for an episode of env i (trajectory t, its actions acts): the http
 * analyzer's skill when skill_source is http, else — or when that request fails,
 * counted — the oracle's. */
static int label(ws_ctx *c, int i, uint64_t seed, const char *const *acts, const skill_traj *t,
                 char *out, size_t out_len, char *err, size_t errlen) {
    if (c->http) {
        learner *l = c->l;
        http_skill_result r;
        memset(&r, 0, sizeof r);
        int failed = http_skill_ask(c->http, 1, t, 400, &r);
        if (!failed) {
            skill_parsed sk;
            skill_parse(r.content.p, r.content.n, l->job->analyzer.max_step_skills, &sk);
            skill_format(&sk, out, out_len);
            if (!out[0]) {
                failed = 1;
                snprintf(r.err, sizeof r.err, "http analyzer %s: the answer holds no skill text",
                         http_skill_url(c->http));
            }
        }
        seed_sbuf_free(&r.content);
        pthread_mutex_lock(&l->mu);
        l->st.counters[failed ? LEARNER_C_STAGE1_SKILL_FALLBACKS : LEARNER_C_STAGE1_HTTP_LABELS]++;
        pthread_mutex_unlock(&l->mu);
        if (!failed) return 0;
        /* one line per status interval, not one per episode, while the endpoint is down */
        c->fallbacks_unlogged++;
        double now = seed_now();
        if (now - c->t_logged >= l->job->status.interval_s) {
            seed_log(SEED_LOG_WARN, "stage 1: %llu skill label(s) fell back to the oracle: %s",
                     (unsigned long long)c->fallbacks_unlogged, r.err);
            c->fallbacks_unlogged = 0;
            c->t_logged = now;
        }
    }
    return oracle(c, i, seed, acts, t->n_steps, out, out_len, err, errlen);
}

static int stopping(void *arg) {
    return ((learner *)arg)->stopping;
}

/* Stage 0: the steps of an expert episode as (prompt -> expert reply) (all, or
 * stage0_samples_per_episode of them at random); with probability 1/2 the prompts carry
 * the oracle's skill for the episode, and then (stage0_skill_demos informed) the env's
 * informed expert plays it, so the replies act on what the skill says. With
 * stage0_expert_noise the episode is played off the expert's path now and then: the
 * prompt's history holds the actions played, the reply is the expert's action (and its
 * reasoning) in the state they reached. */
static int stage0_episode(ws_ctx *c, int i, uint64_t seed, demo_set *d, char *err, size_t errlen) {
    static const int max_rec = 64;
    warmstart_step *rec = calloc(max_rec, sizeof *rec);
    if (!rec) return seed_errf(err, errlen, "out of memory");
    char task[1024];
    int won;
    float ret;
    env *e = c->envs[i];
    /* informed: the coin is drawn before the episode is played (expert: after, as the
     * shipped agent's recipe drew it) */
    int informed_mode = c->l->job->algorithm.stage0_skill_demos == JOB_SKILL_DEMOS_INFORMED;
    int skilled = informed_mode && seed_rng_uniform(&c->rng) < 0.5;
    int informed = skilled && e->vt->expert_informed;
    int n = warmstart_play(e, seed, c->l->job->algorithm.stage0_expert_noise, 1, informed, &c->rng,
                           rec, max_rec, task, sizeof task, &won, &ret, err, errlen);
    int rc = n < 0 ? -1 : 0;
    char skill_text[4096] = "";
    skill_parsed sk;
    memset(&sk, 0, sizeof sk);
    sk.episode = "";
    const char *acts[64];
    if (!rc) rec_actions(rec, n, acts);
    if (!rc && !informed_mode) skilled = seed_rng_uniform(&c->rng) < 0.5;
    if (!rc && skilled) {
        if (oracle(c, i, seed, acts, n, skill_text, sizeof skill_text, err, errlen) == 0)
            skill_parse(skill_text, strlen(skill_text), 5, &sk);
        /* the informed expert's route without its skill would teach the skill-free prompt
         * what only the skill tells */
        else if (informed)
            rc = -1;
    }
    c->informed += informed && !rc;
    /* replay to render each step's prompt with the right history */
    env_obs obs;
    if (!rc) rc = env_reset(e, seed, ENV_SPLIT_TRAIN, &obs, err, errlen);
    env_prompt_step hist[64];
    /* at most per_ep of the episode's steps become samples, drawn without replacement */
    unsigned char pick[64];
    int per_ep = c->l->job->algorithm.stage0_samples_per_episode, labelled = 0;
    int first_off = n; /* the first step that played another action than the expert's */
    for (int k = 0; k < n; k++) {
        labelled += rec[k].expert[0] != '\0';
        if (first_off == n && strcmp(rec[k].action, rec[k].expert)) first_off = k;
    }
    memset(pick, per_ep > 0 && per_ep < labelled ? 0 : 1, sizeof pick);
    for (int left = per_ep; per_ep > 0 && per_ep < labelled && left > 0;) {
        int k = (int)(seed_rng_uniform(&c->rng) * n);
        if (k < n && !pick[k] && rec[k].expert[0]) pick[k] = 1, left--;
    }
    for (int k = 0; k < n && !rc; k++) {
        int se, ss;
        char reason[1024];
        if (!pick[k] || !rec[k].expert[0]) { /* unlabelled: the expert had no plan */
            hist[k].observation = rec[k].obs;
            hist[k].action = rec[k].action;
            rc = env_step(e, rec[k].action, &obs, err, errlen);
            continue;
        }
        /* A step line is the hindsight of this very episode: shown with every skilled
         * prompt, it would be the only cue the demonstrations act on where it names the
         * step (household's "take the mug", so a skill without one never takes). */
        const char *step_skill = skill_for_step(&sk, k + 1);
        c->skilled += sk.episode[0] != '\0' || sk.n_steps > 0;
        if (step_skill) {
            c->step_lines++;
            double keep = c->l->job->algorithm.stage0_step_skill_keep;
            if (keep < 1.0 && seed_rng_uniform(&c->rng) >= keep) step_skill = NULL;
            c->step_shown += step_skill != NULL;
        }
        rc =
            render_prompt(&c->rr, e, &obs, hist, k, sk.episode, step_skill, &c->prompt, &se, &ss,
                          err, errlen) ||
            (informed ? env_expert_informed_reason : env_expert_reason)(
                e, rec[k].expert, reason, sizeof reason, err, errlen) < 0 ||
            render_expert_reply(&c->rr, e->vt->name, reason, rec[k].expert, &c->reply, err, errlen);
        if (!rc && demo_add(d, c->prompt.v, (int)c->prompt.n, c->reply.v, (int)c->reply.n))
            rc = seed_errf(err, errlen, "out of memory");
        c->off_path += k > first_off;
        hist[k].observation = rec[k].obs;
        hist[k].action = rec[k].action;
        if (!rc) rc = env_step(e, rec[k].action, &obs, err, errlen);
    }
    free(rec);
    return rc;
}

/* Stage 1's sample for the episode of env i behind trajectory t: (analysis prompt with
 * the rendered trajectory -> its label), kept when it fits a micro-batch. */
static int stage1_sample(ws_ctx *c, int i, uint64_t seed, const char *const *acts,
                         const skill_traj *t, demo_set *d, char *err, size_t errlen) {
    char skill_text[4096];
    int rc = label(c, i, seed, acts, t, skill_text, sizeof skill_text, err, errlen);
    c->chat.n = 0;
    if (!rc) rc = skill_request_chat(t, 400, &c->chat, err, errlen);
    c->prompt.n = 0;
    if (!rc) rc = tok_encode(c->l->tk, c->rr.ws, c->chat.p, c->chat.n, 0, &c->prompt, err, errlen);
    c->chat.n = 0;
    if (!rc && skill_answer(skill_text, &c->chat)) rc = seed_errf(err, errlen, "out of memory");
    c->reply.n = 0;
    if (!rc)
        rc = tok_encode(c->l->tk, c->rr.ws, c->chat.p, c->chat.n, TOK_ENCODE_SPLIT_SPECIAL,
                        &c->reply, err, errlen);
    int end = render_end_token(c->l->tk);
    if (!rc && end >= 0) tok_ids_push(&c->reply, end);
    int cap = c->l->job->optim.micro_batch_tokens;
    if (!rc && (int)(c->prompt.n + c->reply.n) <= cap &&
        demo_add(d, c->prompt.v, (int)c->prompt.n, c->reply.v, (int)c->reply.n))
        rc = seed_errf(err, errlen, "out of memory");
    return rc;
}

/* Stage 1 on an episode of the env's expert with noise 0.3 (stage1_episodes expert). */
static int stage1_expert(ws_ctx *c, int i, uint64_t seed, demo_set *d, char *err, size_t errlen) {
    static const int max_rec = 64;
    warmstart_step *rec = calloc(max_rec, sizeof *rec);
    if (!rec) return seed_errf(err, errlen, "out of memory");
    char task[1024];
    int won;
    float ret;
    int n = warmstart_play(c->envs[i], seed, 0.3, 0, 0, &c->rng, rec, max_rec, task, sizeof task,
                           &won, &ret, err, errlen);
    int rc = n < 0 ? -1 : 0;
    if (!rc) {
        skill_traj_step ts[64];
        const char *acts[64];
        rec_actions(rec, n, acts);
        for (int k = 0; k < n; k++)
            ts[k] = (skill_traj_step){rec[k].obs, rec[k].action, rec[k].reward};
        skill_traj t = {c->envs[i]->vt->name, task, ts, n, ret, won};
        rc = stage1_sample(c, i, seed, acts, &t, d, err, errlen);
    }
    free(rec);
    return rc;
}

/* The env entry of the next warm-start episode, drawn by weight among the envs with an
 * expert and an oracle. */
static int pick_env(ws_ctx *c, double wsum) {
    const job_config *job = c->l->job;
    double u = seed_rng_uniform(&c->rng) * wsum;
    int i = 0;
    for (; i < job->n_envs; i++) {
        if (!(c->envs[i]->vt->expert && c->envs[i]->vt->oracle)) continue;
        u -= job->envs[i].weight;
        if (u < 0) break;
    }
    if (i == job->n_envs) i--;
    while (i > 0 && !(c->envs[i]->vt->expert && c->envs[i]->vt->oracle)) i--;
    return i;
}

static uint64_t next_task(ws_ctx *c) {
    return seed_hash_mix(c->l->job->job.seed, c->task++) >> 1;
}

/* Plays the next batch of stage 1's policy episodes with the policy's current weights. */
static int policy_batch(ws_ctx *c, double wsum, char *err, size_t errlen) {
    learner *l = c->l;
    const job_config *job = l->job;
    s1_batch *b = &c->pb;
    int batch = job->eval.batch;
    if (!b->r) {
        model_limits lim;
        int max_prompt;
        rollout_plan(job, model_get_config(l->policy), batch, &lim, &max_prompt);
        if (model_create(&b->m, model_get_config(l->policy), &lim, daemon_backend(job), err,
                         errlen))
            return -1;
        rollout_cfg rc = {.job = job,
                          .m = b->m,
                          .tk = l->tk,
                          .n_groups = batch,
                          .G = 1,
                          .sampler = {(float)job->sampling.temperature, (float)job->sampling.top_p,
                                      job->sampling.top_k},
                          .max_new_tokens = job->sampling.max_new_tokens,
                          .max_prompt = max_prompt};
        if (rollout_create(&b->r, &rc, err, errlen)) return -1;
    }
    for (int g = 0; g < b->n; g++) rollout_group_release(b->r, g);
    memcpy(model_params(b->m), model_params(l->policy),
           model_num_params(l->policy) * sizeof(float));
    if (model_params_changed(b->m, err, errlen)) return -1;
    rollout_set_version(b->r, ++b->version);
    for (int g = 0; g < batch; g++)
        if (rollout_start_group(b->r, g, pick_env(c, wsum), next_task(c), ENV_SPLIT_TRAIN, err,
                                errlen))
            return -1;
    for (int left = batch; left > 0 && !l->stopping;) {
        if (rollout_iterate(b->r, err, errlen) < 0) return -1;
        left = 0;
        for (int g = 0; g < batch; g++) left += !rollout_group_done(b->r, g);
    }
    b->n = batch;
    b->next = 0;
    int failed = 0;
    for (int g = 0; g < batch; g++) failed += rollout_episode(b->r, g, 0)->error[0] != 0;
    if (failed == batch && !l->stopping)
        return seed_errf(err, errlen,
                         "stage 1: every episode of a batch of %d the policy played ended in an "
                         "error, so there is nothing to label: %s",
                         batch, rollout_episode(b->r, 0, 0)->error);
    return 0;
}

/* Stage 1 on the next episode the policy played (stage1_episodes policy). An episode that
 * ended in an error (its prompt outgrew the context) gives no sample; the first is logged. */
static int stage1_policy(ws_ctx *c, double wsum, demo_set *d, char *err, size_t errlen) {
    s1_batch *b = &c->pb;
    if (b->next == b->n && policy_batch(c, wsum, err, errlen)) return -1;
    if (c->l->stopping) return 0;
    int g = b->next++;
    const rollout_group *grp = rollout_group_at(b->r, g);
    int i = grp->env_idx;
    const rollout_ep *ep = rollout_episode(b->r, g, 0);
    if (ep->error[0]) {
        if (!b->errors++)
            seed_log(SEED_LOG_WARN, "stage 1: a policy episode of %s ended in an error: %s",
                     c->envs[i]->vt->name, ep->error);
        return 0;
    }
    int n = ep->n_steps;
    const char **acts = calloc((size_t)n + 1, sizeof *acts);
    skill_traj_step *ts = calloc((size_t)n + 1, sizeof *ts);
    int rc = !acts || !ts ? seed_errf(err, errlen, "out of memory") : 0;
    for (int k = 0; !rc && k < n; k++) {
        const rollout_step *st = &ep->steps[k];
        acts[k] = st->valid ? st->action : NULL;
        ts[k] = (skill_traj_step){st->obs, st->valid ? st->action : "", st->reward};
    }
    skill_traj t = {
        c->envs[i]->vt->name, ep->obs.task ? ep->obs.task : "", ts, n, ep->ret, ep->won};
    if (!rc) rc = stage1_sample(c, i, grp->task_seed, acts, &t, d, err, errlen);
    free(acts);
    free(ts);
    return rc;
}

int learner_warmstart(learner *l, char *err, size_t errlen) {
    job_config *job = l->job;
    int s0 = job->algorithm.stage0_steps, s1 = job->algorithm.stage1_steps;
    if (l->sft_steps >= s0 + s1) return 0;
    ws_ctx c;
    memset(&c, 0, sizeof c);
    c.l = l;
    seed_rng_init(&c.rng, seed_hash_mix(job->job.seed, 0x57a9e0ULL + (uint64_t)l->sft_steps));
    int rc = render_init(&c.rr, l->tk, job->algorithm.history, err, errlen);
    double wsum = 0;
    for (int i = 0; i < job->n_envs && !rc; i++) {
        env_kv kv[JOB_MAX_ENV_OPTIONS + 1];
        char num[16];
        int nkv = job_env_kv(&job->envs[i], kv, num);
        rc = env_create(&c.envs[i], job->envs[i].name, kv, nkv, err, errlen);
        if (!rc && c.envs[i]->vt->expert && c.envs[i]->vt->oracle) {
            c.n_expert++;
            wsum += job->envs[i].weight;
        }
    }
    if (!rc && c.n_expert == 0)
        rc = seed_errf(err, errlen,
                       "algorithm.stage0_steps/stage1_steps: no env of this job has an expert "
                       "and a hindsight oracle (built-in envs do); set both to 0");
    if (!rc && s1 > 0 && job->analyzer.skill_source == JOB_SKILL_HTTP) {
        rc = http_skill_new(&c.http, job, err, errlen);
        if (!rc) http_skill_set_cancel(c.http, stopping, l);
    }
    learner_step_set_lr(l->stepper, (float)job->optim.sft_lr);
    learner_step_set_prompt_weight(l->stepper, (float)job->optim.sft_prompt_weight);
    demo_set d;
    memset(&d, 0, sizeof d);
    c.task = (uint64_t)l->sft_steps * 1000003ULL;
    while (!rc && l->sft_steps < s0 + s1 && !l->stopping) {
        int stage = l->sft_steps < s0 ? 0 : 1;
        pthread_mutex_lock(&l->mu);
        l->stage = stage;
        pthread_mutex_unlock(&l->mu);
        demo_clear(&d);
        c.off_path = c.skilled = c.step_lines = c.step_shown = c.informed = 0;
        int episodes = 0;
        while (!rc && d.tokens < job->optim.tokens_per_step) {
            episodes++;
            int i = pick_env(&c, wsum);
            uint64_t seed = next_task(&c);
            /* stage 1 keeps acting demonstrations in the mix so acting is not forgotten */
            if (stage == 1 && seed_rng_uniform(&c.rng) < 0.5)
                rc = job->algorithm.stage1_episodes == JOB_S1_POLICY
                         ? stage1_policy(&c, wsum, &d, err, errlen)
                         : stage1_expert(&c, i, seed, &d, err, errlen);
            else
                rc = stage0_episode(&c, i, seed, &d, err, errlen);
            if (l->stopping) break;
        }
        if (!rc && l->stopping) break; /* no step on a part of a batch */
        learner_step_stats st;
        if (!rc) rc = learner_step_run(l->stepper, d.s, d.n, &st, err, errlen);
        if (rc) break;
        pthread_mutex_lock(&l->mu);
        l->sft_steps++;
        l->last = st;
        l->st.counters[LEARNER_C_TRAIN_TOKENS] += (uint64_t)st.tokens;
        pthread_mutex_unlock(&l->mu);
        if (l->sft_steps % 10 == 0 || l->sft_steps == s0 + s1)
            seed_log(SEED_LOG_INFO,
                     "stage %d step %lld/%d: sft nll %.4f (prompt %.4f), %lld tokens (%lld run) "
                     "in %lld samples of %d episodes (%d off the expert's path; %d with a "
                     "skill, %d of their %d step lines shown; %d episodes by the informed "
                     "expert), %.2f s",
                     stage, (long long)l->sft_steps, s0 + s1, st.sft_nll, st.prompt_nll,
                     (long long)st.tokens, (long long)st.packed_tokens, (long long)st.samples,
                     episodes, c.off_path, c.skilled, c.step_shown, c.step_lines, c.informed,
                     st.seconds);
        /* A checkpoint when a stage ends, and by the time rule inside a long one, so a
         * learner killed in the warm start continues from its last sft_steps. */
        rc = learner_checkpoint_due(l, l->sft_steps == s0 || l->sft_steps == s0 + s1, err, errlen);
    }
    demo_clear(&d);
    free(d.s);
    free(d.bufs);
    for (int i = 0; i < job->n_envs; i++) env_destroy(c.envs[i]);
    rollout_free(c.pb.r);
    model_free(c.pb.m);
    http_skill_free(c.http);
    tok_ids_free(&c.prompt);
    tok_ids_free(&c.reply);
    seed_sbuf_free(&c.chat);
    render_free(&c.rr);
    learner_step_set_lr(l->stepper, (float)job->optim.lr);
    learner_step_set_prompt_weight(l->stepper, 0.0f);
    return rc;
}
