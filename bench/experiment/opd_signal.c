/* opd_signal.c — is SEED's distillation signal signal? The measurements of issue 8 item 6.
 *
 *   opd_signal MODEL_DIR [--env NAME] [--split train|seen|unseen] [--tasks N] [--seed S]
 *              [--temperature T] [--batch B] [--policy model|expert] [--no-self-skill]
 *              [--tokens FILE] [--json] [--job JOB.yaml] [key=value ...]
 *
 * The task set is `seedctl eval`'s (env, split, N, seed), read by the same parser
 * (roles/taskset.h): task i has the task seed rollout_task_seed(S, i), and the env's
 * options come from the job (embedded default, --job, key=value overrides such as
 * envs.0.options.search_depth=3). Every episode is played by the rollout engine
 * (roles/rollout.h) as the actor plays in training: sampled at T with the job's
 * top_p/top_k, seeded per task, so the conditions below draw with the same sampler seeds
 * and differ only by the skill in the prompt.
 *
 * 1. Skill following. Per task: the env's expert plays it, and the policy plays it with no
 *    skill; the env's hindsight oracle (env_hindsight, what the analyzer's skill_source
 *    oracle calls) writes a skill for each of the two episodes. Then the policy plays the
 *    task again with each of those skills in the acting prompt's two slots, as mode
 *    skill_prompt acts (the engine's skill library, here one entry per task). Success with
 *    no skill / the expert episode's skill / its own episode's skill, over all tasks and
 *    over the tasks it lost without a skill (there its own skill is a failure's).
 * 2. The sign of q - s on the policy's skill-free episodes. Every step is replayed in the
 *    env to ask the expert for its action at that state; the step is "expert" (the taken
 *    action is the expert's), "other" (a valid different action), "invalid" (no parsable
 *    action) or "no_expert" (the expert has none: a sokoban state that can no longer be
 *    solved). s = log pi(response | prompt), q = log pi(response | prompt with the
 *    episode's hindsight skill spliced into its slots) — the analyzer's splice
 *    (render_splice) and scoring code (analyzer_score_pairs) at temperature T —
 *    for the skill of the oracle and for the policy's self-written skill. Reported per
 *    (skill, tokens, outcome, step class): mean of sum(q - s) over the response, its
 *    per-token mean, the fraction of steps with sum(q - s) > 0, and the same over the
 *    action's tokens (those inside <action></action>). "tokens" is "taken" (the policy's
 *    own reply, what the learner's advantage multiplies) or "expert" (the expert's reply
 *    at that state, teacher-forced: render_expert_reply, what stage 0 teaches).
 *    If q - s is signal it is positive on expert actions and negative on others.
 *
 * The self-written skill: the analyzer daemon and this tool both write it with
 * analyzer_self_skills (analyzer/generate.h: the analysis prompt, the generation at
 * analyzer.skill_temperature, one rng per episode seeded from its sampler seed); the
 * daemon builds the trajectories from a wire message, this tool from its own episodes.
 * (Before December 7 this tool wrote them at --temperature: add
 * analyzer.skill_temperature=T to reproduce an older table.)
 *
 * --tokens FILE writes, for every step of the policy's skill-free episodes and each skill,
 * the taken reply token by token with its q - s, to see which tokens the skill moves.
 *
 * --policy expert (a test hook) makes the env's expert the policy: its replies are the
 * expert replies, every step is an expert step, and skills change nothing it does.
 * Prompts the engine played with are checked against a fresh rendering with the intended
 * skills (render_prompt), so a skill that did not reach the prompt is an error. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "roles/render.h"
#include "roles/rollout.h"
#include "analyzer/generate.h"
#include "analyzer/score.h"
#include "learner/samples.h"
#include "roles/skill.h"
#include "roles/taskset.h"
#include "roles/daemon.h"
#include "common/job.h"
#include "common/skill_library.h"
#include "common/util.h"
#include "model/model.h"
#include "model/tokenizer.h"

typedef struct opd_args {
    taskset_args set; /* MODEL_DIR, --env, --split, --tasks, --seed, ... (roles/taskset.h) */
    int expert_policy, json, self_skill;
    const char *tokens_path; /* --tokens FILE: q - s of every taken reply token */
} opd_args;

/* opd_signal's task set: 32 tasks sampled at T = 1, 16 at once */
static const taskset_spec opd_spec = {.count_flag = "--tasks",
                                      .count_default = 32,
                                      .count_max = 100000,
                                      .batch_default = 16,
                                      .batch_max = 64,
                                      .temperature_default = 1.0};

/* One step of a played episode (copied out of the rollout engine). */
typedef struct opd_step {
    int32_t *prompt, *resp;
    float *lp;
    int plen, rlen, slot_ep, slot_step, valid;
    char *action, *obs;
    float reward;
    char *expert;        /* the env's expert action at this state; NULL when it has none */
    char *expert_reason; /* the env's reasoning for it ("" when the env has none) */
} opd_step;

typedef struct opd_episode {
    uint64_t task, sample_seed;
    int won, n;
    float ret;
    char error[256];
    char *task_text;
    opd_step *st;
} opd_episode;

/* A skill as the analyzer parses it, and the same as a one-entry library for acting. */
typedef struct opd_skill {
    skill_parsed sk;
    skill_lib_entry entry;
} opd_skill;

typedef struct opd_ctx {
    opd_args a;
    job_config *job;
    int env_idx;
    const char *env_name;
    env_kv kv[JOB_MAX_ENV_OPTIONS + 1];
    char num[16];
    int nkv;
    env_split split;
    model *m;
    tok *tk;
    tok_ws *ws;
    render_ctx rr;
    env *e; /* the replay env */
    int max_seq, max_prompt, n_slots, vocab, end_id;
    float T;
    float *logits, *scratch;
    FILE *tokens; /* --tokens */
} opd_ctx;

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, "opd_signal: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: opd_signal MODEL_DIR [--env NAME] [--split train|seen|unseen] "
                    "[--tasks N] [--seed S]\n"
                    "                  [--temperature T] [--batch B] [--policy model|expert] "
                    "[--no-self-skill]\n"
                    "                  [--tokens FILE] [--json] [--job JOB.yaml] "
                    "[key=value ...]\n");
    return 2;
}

static int parse_args(int argc, char **argv, opd_args *a) {
    memset(a, 0, sizeof *a);
    taskset_init(&a->set, &opd_spec);
    a->self_skill = 1;
    char err[SEED_ERRLEN];
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--json")) {
            a->json = 1;
        } else if (!strcmp(k, "--no-self-skill")) {
            a->self_skill = 0;
        } else if (!strcmp(k, "--tokens")) {
            if (!(a->tokens_path = i + 1 < argc ? argv[++i] : NULL))
                return usage("%s needs a FILE", k);
        } else if (!strcmp(k, "--policy")) {
            const char *val = i + 1 < argc ? argv[++i] : NULL;
            if (!val) return usage("%s needs a value", k);
            if (strcmp(val, "model") && strcmp(val, "expert"))
                return usage("--policy: expected model or expert, got '%s'", val);
            a->expert_policy = !strcmp(val, "expert");
        } else if (taskset_arg(&a->set, &opd_spec, argc, argv, &i, err, sizeof err)) {
            return usage("%s", err);
        }
    }
    /* the model scores q and s even when the expert plays */
    if (!a->set.model_dir) return usage("%s", "expected a MODEL_DIR");
    return 0;
}

/* ---------------- episodes ---------------- */

static void step_free(opd_step *s) {
    free(s->prompt);
    free(s->resp);
    free(s->lp);
    free(s->action);
    free(s->obs);
    free(s->expert);
    free(s->expert_reason);
}

static void episode_free(opd_episode *ep) {
    for (int k = 0; k < ep->n; k++) step_free(&ep->st[k]);
    free(ep->st);
    free(ep->task_text);
    memset(ep, 0, sizeof *ep);
}

static void *dup_mem(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

/* Deep copy of a finished episode of the engine (its buffers are reused by the next). */
static int episode_copy(opd_episode *out, const rollout_ep *ep, uint64_t task) {
    memset(out, 0, sizeof *out);
    out->task = task;
    out->sample_seed = ep->sample_seed;
    out->won = ep->won;
    out->ret = ep->ret;
    snprintf(out->error, sizeof out->error, "%s", ep->error);
    out->st = calloc((size_t)ep->n_steps + 1, sizeof *out->st);
    if (!out->st) return -1;
    out->n = ep->n_steps;
    for (int k = 0; k < ep->n_steps; k++) {
        const rollout_step *s = &ep->steps[k];
        opd_step *d = &out->st[k];
        d->plen = s->plen;
        d->rlen = s->rlen;
        d->slot_ep = s->slot_ep;
        d->slot_step = s->slot_step;
        d->valid = s->valid;
        d->reward = s->reward;
        d->prompt = dup_mem(s->prompt, sizeof(int32_t) * (size_t)s->plen);
        d->resp = dup_mem(s->resp, sizeof(int32_t) * (size_t)s->rlen);
        d->lp = dup_mem(s->lp, sizeof(float) * (size_t)s->rlen);
        d->action = strdup(s->action ? s->action : "");
        d->obs = strdup(s->obs ? s->obs : "");
        if (!d->prompt || !d->resp || !d->lp || !d->action || !d->obs) return -1;
    }
    return 0;
}

/* Play every task once: the expert (expert != 0) or the policy; skills[i] (NULL: none) is
 * the skill in task i's acting prompts. The engine looks a library entry up when a group
 * starts, so a one-entry library view pointed at task i's skill gives each task its own. */
static int play(opd_ctx *C, int expert, opd_skill *skills, opd_episode *out, char *err,
                size_t errlen) {
    skill_lib view = {0};
    rollout_cfg rc = {.job = C->job,
                      .m = expert ? NULL : C->m,
                      .tk = expert ? NULL : C->tk,
                      .n_groups = C->a.set.batch,
                      .G = 1,
                      .sampler = {C->T, (float)C->job->sampling.top_p, C->job->sampling.top_k},
                      .max_new_tokens = C->job->sampling.max_new_tokens,
                      .max_prompt = C->max_prompt,
                      .lib = skills ? &view : NULL,
                      .expert = expert};
    rollout *r;
    if (rollout_create(&r, &rc, err, errlen)) return -1;
    rollout_set_version(r, 1);
    int *task_of = calloc((size_t)C->a.set.batch, sizeof(int));
    int next = 0, rc2 = task_of ? 0 : seed_errf(err, errlen, "out of memory");
    while (!rc2) {
        for (int g = 0; g < C->a.set.batch && next < C->a.set.count && !rc2; g++) {
            if (rollout_group_at(r, g)->active) continue;
            uint64_t task = rollout_task_seed(C->a.set.seed, (uint64_t)next);
            if (skills) {
                view.n = 1;
                view.e = &skills[next].entry;
            }
            task_of[g] = next++;
            rc2 = rollout_start_group(r, g, C->env_idx, task, C->split, err, errlen);
        }
        if (rc2) break;
        int busy = 0;
        for (int g = 0; g < C->a.set.batch; g++) busy += rollout_group_at(r, g)->active;
        if (!busy) break;
        if (rollout_iterate(r, err, errlen) < 0) {
            rc2 = -1;
            break;
        }
        for (int g = 0; g < C->a.set.batch && !rc2; g++) {
            if (!rollout_group_done(r, g)) continue;
            int i = task_of[g];
            if (episode_copy(&out[i], rollout_episode(r, g, 0), rollout_group_at(r, g)->task_seed))
                rc2 = seed_errf(err, errlen, "out of memory copying an episode");
            rollout_group_release(r, g);
        }
    }
    free(task_of);
    rollout_free(r);
    return rc2;
}

/* ---------------- skills ---------------- */

/* Parse the skill text of an episode of n_steps steps as the analyzer does, and make it a
 * one-entry library for acting. */
static void skill_set(opd_ctx *C, opd_skill *s, const char *text, int n_steps) {
    skill_parse_episode(text, strlen(text), C->job->analyzer.max_step_skills, n_steps, &s->sk);
    memset(&s->entry, 0, sizeof s->entry);
    snprintf(s->entry.env, sizeof s->entry.env, "%s", C->env_name);
    snprintf(s->entry.family, sizeof s->entry.family, "*");
    s->entry.episode = (char *)s->sk.episode;
    s->entry.n_steps = s->sk.n_steps;
    for (int k = 0; k < s->sk.n_steps; k++) {
        s->entry.step_no[k] = s->sk.step_no[k];
        s->entry.step[k] = (char *)s->sk.step[k];
    }
}

/* The env's hindsight oracle skill of an episode (the analyzer's skill_source oracle); on
 * failure the skill is empty and -1 is returned. */
static int oracle_skill(opd_ctx *C, const opd_episode *ep, opd_skill *out) {
    const char **acts = calloc((size_t)ep->n + 1, sizeof *acts);
    char text[4096], err[SEED_ERRLEN];
    int rc = -1;
    text[0] = 0;
    if (acts) {
        for (int k = 0; k < ep->n; k++) acts[k] = ep->st[k].valid ? ep->st[k].action : NULL;
        rc = env_hindsight(C->env_name, C->kv, C->nkv, ep->task, C->split, acts, ep->n, text,
                           sizeof text, err, sizeof err);
        if (rc) {
            seed_log(SEED_LOG_WARN, "oracle for %s task %llu: %s", C->env_name,
                     (unsigned long long)ep->task, err);
            text[0] = 0;
        }
    }
    free(acts);
    skill_set(C, out, text, ep->n);
    return rc;
}

/* The policy's own skills for episodes eps[0..n), written by the analyzer's own code
 * (analyzer_self_skills) at analyzer.skill_temperature. */
static int self_skills(opd_ctx *C, opd_episode *eps, int n, opd_skill *out, char *err,
                       size_t errlen) {
    skill_traj *t = calloc((size_t)n + 1, sizeof *t);
    uint64_t *seeds = calloc((size_t)n + 1, sizeof *seeds);
    seed_sbuf *text = calloc((size_t)n + 1, sizeof *text);
    int rc = (!t || !seeds || !text) ? seed_errf(err, errlen, "out of memory") : 0;
    for (int e = 0; e < n && !rc; e++) {
        const opd_episode *ep = &eps[e];
        skill_traj_step *ts = calloc((size_t)ep->n + 1, sizeof *ts);
        if (!ts) {
            rc = seed_errf(err, errlen, "out of memory");
            break;
        }
        for (int k = 0; k < ep->n; k++) {
            ts[k].observation = ep->st[k].obs;
            ts[k].action = ep->st[k].valid ? ep->st[k].action : "";
            ts[k].reward = ep->st[k].reward;
        }
        t[e] = (skill_traj){C->env_name, ep->task_text, ts, ep->n, ep->ret, ep->won};
        seeds[e] = ep->sample_seed;
    }
    const analyzer_gen gn = {C->m,
                             SEED_MIN(C->n_slots, ANALYZER_GEN_MAX_SLOTS),
                             C->max_seq,
                             C->job->analyzer.max_skill_tokens,
                             C->vocab,
                             C->end_id,
                             analyzer_skill_sampler(C->job),
                             C->logits,
                             C->scratch};
    if (!rc) rc = analyzer_self_skills(&gn, C->tk, C->ws, n, t, seeds, text, err, errlen);
    for (int e = 0; e < n && !rc; e++) skill_set(C, &out[e], text[e].p ? text[e].p : "", eps[e].n);
    for (int e = 0; t && e < n; e++) free((void *)t[e].steps);
    for (int e = 0; text && e < n; e++) seed_sbuf_free(&text[e]);
    free(t);
    free(seeds);
    free(text);
    return rc;
}

/* ---------------- replay ---------------- */

/* Replay ep in the env: at every state render the prompt with `skill` (NULL: none) and
 * check it is the prompt the engine played (a model's episode); with fill, also ask the
 * env's expert for its action there, keep the task text, and give an expert-played step
 * (no tokens) the skill-free prompt and the expert reply of its action. */
static int replay(opd_ctx *C, opd_episode *ep, const opd_skill *skill, int fill, char *err,
                  size_t errlen) {
    env_obs obs;
    tok_ids ids = {0};
    char act[1024];
    env_prompt_step *hist = calloc((size_t)ep->n + 1, sizeof *hist);
    if (!hist) return seed_errf(err, errlen, "out of memory");
    int rc = env_reset(C->e, ep->task, C->split, &obs, err, errlen);
    if (!rc && fill && !(ep->task_text = strdup(obs.task ? obs.task : "")))
        rc = seed_errf(err, errlen, "out of memory");
    for (int k = 0; k < ep->n && !rc; k++) {
        opd_step *s = &ep->st[k];
        const char *es = skill ? skill->sk.episode : NULL;
        const char *ss =
            skill ? skill_lib_step(&skill->entry, k + 1, C->job->analyzer.max_step_skills) : NULL;
        int sl_ep, sl_step;
        rc =
            render_prompt(&C->rr, C->e, &obs, hist, k, es, ss, &ids, &sl_ep, &sl_step, err, errlen);
        if (rc) break;
        if (s->plen > 0) {
            if (s->plen != (int)ids.n || s->slot_ep != sl_ep || s->slot_step != sl_step ||
                memcmp(s->prompt, ids.v, sizeof(int32_t) * (size_t)ids.n)) {
                rc = seed_errf(err, errlen,
                               "task %llu step %d: the prompt the rollout engine played (%d "
                               "tokens) is not the rendering with the intended skill (%zu "
                               "tokens)",
                               (unsigned long long)ep->task, k + 1, s->plen, ids.n);
                break;
            }
        } else if (fill) {
            free(s->prompt);
            free(s->resp);
            s->prompt = dup_mem(ids.v, sizeof(int32_t) * ids.n);
            s->plen = (int)ids.n;
            s->slot_ep = sl_ep;
            s->slot_step = sl_step;
            tok_ids reply = {0};
            char reason[1024];
            rc = env_expert_reason(C->e, s->action, reason, sizeof reason, err, errlen) < 0 ||
                 render_expert_reply(&C->rr, C->env_name, reason, s->action, &reply, err, errlen);
            s->resp = dup_mem(reply.v, sizeof(int32_t) * reply.n);
            s->rlen = (int)reply.n;
            tok_ids_free(&reply);
            if (!rc && (!s->prompt || !s->resp)) rc = seed_errf(err, errlen, "out of memory");
            if (rc) break;
        }
        if (fill) {
            char e2[SEED_ERRLEN];
            free(s->expert);
            free(s->expert_reason);
            s->expert = s->expert_reason = NULL;
            /* no expert action: a state the expert cannot finish from (sokoban deadlock) */
            if (!env_expert(C->e, act, sizeof act, e2, sizeof e2)) {
                char reason[1024];
                if (env_expert_reason(C->e, act, reason, sizeof reason, err, errlen) < 0) {
                    rc = -1;
                    break;
                }
                if (!(s->expert = strdup(act)) || !(s->expert_reason = strdup(reason))) {
                    rc = seed_errf(err, errlen, "out of memory");
                    break;
                }
            }
        }
        hist[k].observation = s->obs;
        hist[k].action = s->action;
        rc = env_step(C->e, s->valid ? s->action : NULL, &obs, err, errlen);
    }
    tok_ids_free(&ids);
    free(hist);
    return rc;
}

/* ---------------- q - s ---------------- */

enum { CLS_EXPERT, CLS_OTHER, CLS_INVALID, CLS_NO_EXPERT, N_CLS };
static const char *const cls_name[N_CLS] = {"expert", "other", "invalid", "no_expert"};
enum { SRC_ORACLE, SRC_SELF, N_SRC };
static const char *const src_name[N_SRC] = {"oracle", "self"};
enum { WHO_TAKEN, WHO_EXPERT, N_WHO };
static const char *const who_name[N_WHO] = {"taken", "expert"};
static const char *const out_name[2] = {"won", "lost"};

/* Sums over steps of sum(q - s) and its per-token mean, over the reply and over the
 * action's tokens; and sum(q - s) over the decision tokens (opd_tokens decision:
 * learner_decision_mask, the action's tokens and the think text's that spell it). */
typedef struct opd_acc {
    long n, pos, a_n, a_pos, d_pos;
    double sum, tok, a_sum, a_tok, d_sum;
} opd_acc;

typedef struct opd_stats {
    opd_acc acc[N_SRC][N_WHO][2][N_CLS];
    long steps[N_CLS], q_dropped;
    long oracle_failed;   /* oracle skills that could not be written (empty skill) */
    double s_vs_sampling; /* max |s - sampling log-prob| over the policy's tokens */
} opd_stats;

static int step_class(const opd_step *s) {
    if (!s->valid) return CLS_INVALID;
    if (!s->expert) return CLS_NO_EXPERT;
    return strcmp(s->action, s->expert) ? CLS_OTHER : CLS_EXPERT;
}

/* [*a0, *a1): the tokens of a reply whose bytes overlap the text inside its first
 * <action></action> (as env_parse_response reads it); empty when it has none. */
static int action_span(opd_ctx *C, const int32_t *ids, int n, int *a0, int *a1, char *err,
                       size_t errlen) {
    seed_sbuf txt = {0};
    size_t *end = calloc((size_t)n + 1, sizeof *end);
    tok_stream ts;
    tok_stream_init(&ts, 0);
    int rc = end ? 0 : seed_errf(err, errlen, "out of memory");
    for (int i = 0; i < n && !rc; i++) {
        rc = tok_stream_push(C->tk, &ts, ids[i], &txt, err, errlen);
        end[i] = txt.n;
    }
    if (!rc) rc = tok_stream_flush(&ts, &txt, err, errlen);
    *a0 = *a1 = 0;
    if (!rc && n > 0 && txt.p) {
        end[n - 1] = txt.n;
        const char *o = strcasestr(txt.p, "<action>");
        const char *c = o ? strcasestr(o + 8, "</action>") : NULL;
        if (c) {
            size_t A = (size_t)(o + 8 - txt.p), B = (size_t)(c - txt.p);
            int i0 = -1, i1 = -1;
            for (int i = 0; i < n; i++) {
                size_t b = i ? end[i - 1] : 0;
                if (b < B && end[i] > A) {
                    if (i0 < 0) i0 = i;
                    i1 = i + 1;
                }
            }
            if (i0 >= 0) *a0 = i0, *a1 = i1;
        }
    }
    seed_sbuf_free(&txt);
    free(end);
    return rc;
}

static void acc_add(opd_acc *a, const float *s, const float *q, int n, int a0, int a1,
                    const unsigned char *dmask) {
    double d = 0, da = 0, dd = 0;
    for (int j = 0; j < n; j++) d += (double)q[j] - (double)s[j];
    for (int j = 0; j < n; j++)
        if (dmask[j]) dd += (double)q[j] - (double)s[j];
    for (int j = a0; j < a1; j++) da += (double)q[j] - (double)s[j];
    a->n++;
    a->sum += d;
    a->tok += n ? d / n : 0;
    a->pos += d > 0;
    if (a1 > a0) {
        a->a_n++;
        a->a_sum += da;
        a->a_tok += da / (a1 - a0);
        a->a_pos += da > 0;
        a->d_sum += dd;
        a->d_pos += dd > 0;
    }
}

/* One scored reply: the prompt-free part of a pair set (s, and q per skill source). */
typedef struct opd_reply {
    const int32_t *ids;
    int n, a0, a1;
    float *s, *q[N_SRC];
    int has_q[N_SRC];
    unsigned char *dmask; /* the decision tokens (learner_decision_mask) */
} opd_reply;

/* Bytes to the --tokens file on one line, newlines shown as \n. */
static void dump_text(FILE *f, const char *p, size_t n) {
    for (size_t c = 0; c < n; c++)
        if (p[c] == '\n')
            fputs("\\n", f);
        else
            fputc(p[c], f);
}

/* --tokens: one line per episode and skill source with the episode's skill text, then one
 * line per taken reply and skill, every token as text{q - s} (2 decimals; the token's bytes
 * as the tokenizer decodes it alone, newlines shown as \n). */
static void dump_skill(opd_ctx *C, const opd_episode *ep, const char *src, const opd_skill *sk) {
    fprintf(C->tokens, "task %llu %s skill %s: ", (unsigned long long)ep->task,
            ep->won ? "won" : "lost", src);
    const char *e = sk->entry.episode ? sk->entry.episode : "";
    dump_text(C->tokens, e, strlen(e));
    for (int k = 0; k < sk->entry.n_steps; k++) {
        fprintf(C->tokens, " | step %d: ", sk->entry.step_no[k]);
        dump_text(C->tokens, sk->entry.step[k], strlen(sk->entry.step[k]));
    }
    fputc('\n', C->tokens);
}

static int dump_tokens(opd_ctx *C, const opd_episode *ep, int k, int cls, const char *src,
                       const opd_reply *r, const float *q, char *err, size_t errlen) {
    seed_sbuf b = {0};
    int rc = 0;
    fprintf(C->tokens, "task %llu step %d %s %s %s:", (unsigned long long)ep->task, k + 1,
            ep->won ? "won" : "lost", cls_name[cls], src);
    for (int j = 0; j < r->n && !rc; j++) {
        seed_sbuf_clear(&b);
        rc = tok_decode(C->tk, &r->ids[j], 1, 0, &b, err, errlen);
        fputc(' ', C->tokens);
        if (!rc) dump_text(C->tokens, b.p, b.n);
        if (!rc) fprintf(C->tokens, "{%+.2f}", (double)(q[j] - r->s[j]));
    }
    fputc('\n', C->tokens);
    seed_sbuf_free(&b);
    if (!rc && ferror(C->tokens)) rc = seed_errf(err, errlen, "--tokens: write failed");
    return rc;
}

/* Score the steps of one skill-free episode of the policy with and without its skills
 * (oracle, and self when given) and add them to st. */
static int score_episode(opd_ctx *C, const opd_episode *ep, const opd_skill *sk[N_SRC],
                         opd_stats *st, char *err, size_t errlen) {
    const int n = ep->n;
    opd_reply *rep = calloc((size_t)n * N_WHO + 1, sizeof *rep);
    tok_ids *xr = calloc((size_t)n + 1, sizeof *xr);
    analyzer_score_pair *pairs = calloc((size_t)n * N_WHO * (1 + N_SRC) + 1, sizeof *pairs);
    int **qp = calloc((size_t)n * N_WHO * N_SRC + 1, sizeof *qp);
    tok_ids blk_ep[N_SRC] = {{0}}, blk_step = {0};
    int np = 0, nq = 0,
        rc = (rep && xr && pairs && qp) ? 0 : seed_errf(err, errlen, "out of memory");
    for (int src = 0; src < N_SRC && !rc; src++)
        if (sk[src]) {
            rc = render_skill(&C->rr, ENV_SKILL_EPISODE, sk[src]->sk.episode, &blk_ep[src], err,
                              errlen);
            if (C->tokens && !rc) dump_skill(C, ep, src_name[src], sk[src]);
        }
    for (int k = 0; k < n && !rc; k++) {
        const opd_step *s = &ep->st[k];
        opd_reply *taken = &rep[k * N_WHO + WHO_TAKEN], *ex = &rep[k * N_WHO + WHO_EXPERT];
        taken->ids = s->resp;
        taken->n = s->rlen;
        if (s->expert) {
            rc = render_expert_reply(&C->rr, C->env_name, s->expert_reason, s->expert, &xr[k], err,
                                     errlen);
            ex->ids = xr[k].v;
            ex->n = (int)xr[k].n;
        }
        for (int w = 0; w < N_WHO && !rc; w++) {
            opd_reply *r = &rep[k * N_WHO + w];
            /* a reply that does not fit the context even without a skill is not scored */
            if (r->n == 0 || s->plen == 0 || s->plen + r->n - 1 > C->max_seq) continue;
            rc = action_span(C, r->ids, r->n, &r->a0, &r->a1, err, errlen);
            if (!rc && (!(r->s = calloc((size_t)r->n, sizeof(float))) ||
                        !(r->dmask = malloc((size_t)r->n))))
                rc = seed_errf(err, errlen, "out of memory");
            /* the decision tokens as the learner finds them (its span, not action_span's) */
            int lo = 0, hi = 0;
            if (!rc) learner_action_span(C->tk, r->ids, r->n, &lo, &hi);
            if (!rc)
                rc = learner_decision_mask(C->tk, C->ws, r->ids, r->n, lo, hi, r->dmask, err,
                                           errlen);
            if (rc) break;
            pairs[np++] = (analyzer_score_pair){s->prompt, s->plen, r->ids, r->n, r->s};
            for (int src = 0; src < N_SRC && !rc; src++) {
                if (!sk[src]) continue;
                const char *ss = skill_for_step(&sk[src]->sk, k + 1);
                blk_step.n = 0;
                rc = render_skill(&C->rr, ENV_SKILL_STEP, ss, &blk_step, err, errlen);
                int cap = s->plen + (int)blk_ep[src].n + (int)blk_step.n;
                int *q = rc ? NULL : malloc(sizeof(int) * (size_t)cap);
                r->q[src] = rc ? NULL : calloc((size_t)r->n, sizeof(float));
                qp[nq++] = q;
                if (!rc && (!q || !r->q[src])) rc = seed_errf(err, errlen, "out of memory");
                if (rc) break;
                /* the analyzer's splice: A + episode block + B + step block + C */
                int qn = render_splice(s->prompt, s->plen, s->slot_ep, s->slot_step, blk_ep[src].v,
                                       (int)blk_ep[src].n, blk_step.v, (int)blk_step.n, q, cap, err,
                                       errlen);
                if (qn < 0) {
                    rc = -1;
                    break;
                }
                if (qn + r->n - 1 > C->max_seq) { /* as the analyzer: no q when too long */
                    st->q_dropped++;
                    continue;
                }
                r->has_q[src] = 1;
                pairs[np++] = (analyzer_score_pair){q, qn, r->ids, r->n, r->q[src]};
            }
        }
    }
    if (!rc)
        rc = analyzer_score_pairs(C->m, C->n_slots, C->job->analyzer.batch_tokens, np, pairs, NULL,
                                  err, errlen);
    const int o = ep->won ? 0 : 1;
    for (int k = 0; k < n && !rc; k++) {
        const opd_step *s = &ep->st[k];
        int cls = step_class(s);
        st->steps[cls]++;
        const opd_reply *taken = &rep[k * N_WHO + WHO_TAKEN];
        if (taken->s && !C->a.expert_policy)
            for (int j = 0; j < taken->n; j++) {
                double d = taken->s[j] - s->lp[j];
                if (d < 0) d = -d;
                if (d > st->s_vs_sampling) st->s_vs_sampling = d;
            }
        for (int w = 0; w < N_WHO; w++) {
            const opd_reply *r = &rep[k * N_WHO + w];
            for (int src = 0; src < N_SRC && r->s; src++)
                if (r->has_q[src]) {
                    acc_add(&st->acc[src][w][o][cls], r->s, r->q[src], r->n, r->a0, r->a1,
                            r->dmask);
                    if (C->tokens && w == WHO_TAKEN && !rc)
                        rc = dump_tokens(C, ep, k, cls, src_name[src], r, r->q[src], err, errlen);
                }
        }
    }
    for (int i = 0; rep && i < n * N_WHO; i++) {
        free(rep[i].s);
        free(rep[i].dmask);
        for (int src = 0; src < N_SRC; src++) free(rep[i].q[src]);
    }
    for (int i = 0; qp && i < nq; i++) free(qp[i]);
    for (int k = 0; xr && k < n; k++) tok_ids_free(&xr[k]);
    for (int src = 0; src < N_SRC; src++) tok_ids_free(&blk_ep[src]);
    tok_ids_free(&blk_step);
    free(rep);
    free(xr);
    free(pairs);
    free(qp);
    return rc;
}

/* ---------------- report ---------------- */

typedef struct opd_success {
    int tasks, won, errors;
    double ret;
} opd_success;

static void success_add(opd_success *s, const opd_episode *ep) {
    s->tasks++;
    s->won += ep->won && !ep->error[0];
    s->errors += ep->error[0] != 0;
    s->ret += ep->error[0] ? 0 : ep->ret;
}

static cJSON *success_json(const opd_success *s) {
    cJSON *o = cJSON_CreateObject();
    int played = s->tasks - s->errors;
    cJSON_AddNumberToObject(o, "tasks", s->tasks);
    cJSON_AddNumberToObject(o, "success", s->tasks ? (double)s->won / s->tasks : 0.0);
    cJSON_AddNumberToObject(o, "return", played ? s->ret / played : 0.0);
    cJSON_AddNumberToObject(o, "errors", s->errors);
    return o;
}

enum { COND_NONE, COND_EXPERT_SKILL, COND_OWN_SKILL, N_COND };
static const char *const cond_key[N_COND] = {"no_skill", "expert_episode_oracle_skill",
                                             "own_episode_oracle_skill"};
static const char *const cond_label[N_COND] = {"no skill", "oracle skill of the expert's episode",
                                               "oracle skill of its own episode"};

static double safe_div(double a, double b) {
    return b ? a / b : 0.0;
}

static cJSON *acc_json(const opd_acc *a, const char *src, const char *who, const char *outc,
                       const char *cls) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "skill", src);
    cJSON_AddStringToObject(o, "tokens", who);
    cJSON_AddStringToObject(o, "outcome", outc);
    cJSON_AddStringToObject(o, "step", cls);
    cJSON_AddNumberToObject(o, "steps", (double)a->n);
    cJSON_AddNumberToObject(o, "mean", safe_div(a->sum, (double)a->n));
    cJSON_AddNumberToObject(o, "mean_per_token", safe_div(a->tok, (double)a->n));
    cJSON_AddNumberToObject(o, "frac_pos", safe_div((double)a->pos, (double)a->n));
    cJSON_AddNumberToObject(o, "action_steps", (double)a->a_n);
    cJSON_AddNumberToObject(o, "action_mean", safe_div(a->a_sum, (double)a->a_n));
    cJSON_AddNumberToObject(o, "action_mean_per_token", safe_div(a->a_tok, (double)a->a_n));
    cJSON_AddNumberToObject(o, "action_frac_pos", safe_div((double)a->a_pos, (double)a->a_n));
    cJSON_AddNumberToObject(o, "decision_mean", safe_div(a->d_sum, (double)a->a_n));
    cJSON_AddNumberToObject(o, "decision_frac_pos", safe_div((double)a->d_pos, (double)a->a_n));
    return o;
}

static void print_success(const char *label, const opd_success *s) {
    printf("  %-40s %6d %8.3f %8.3f\n", label, s->tasks, safe_div(s->won, s->tasks),
           safe_div(s->ret, s->tasks - s->errors));
}

static void print_report(const opd_ctx *C, const opd_success succ[N_COND],
                         const opd_success lost[N_COND], const opd_stats *st, int n_src) {
    const taskset_args *a = &C->a.set;
    printf("opd_signal  %s/%s  %d tasks (seed %llu)  temperature %g  skill temperature %g  "
           "policy %s\n",
           C->env_name, a->split_name, a->count, (unsigned long long)a->seed, a->temperature,
           C->job->analyzer.skill_temperature,
           C->a.expert_policy ? "expert (test hook)" : a->model_dir);
    printf("\n1. skill following: the policy with no skill and with the env oracle's hindsight "
           "skill in the acting prompt\n");
    printf("  %-40s %6s %8s %8s\n", "condition", "tasks", "success", "return");
    for (int c = 0; c < N_COND; c++) print_success(cond_label[c], &succ[c]);
    printf("  on the %d task(s) it lost without a skill:\n", lost[0].tasks);
    for (int c = 1; c < N_COND; c++)
        print_success(c == COND_OWN_SKILL ? "oracle skill of its own failed episode"
                                          : cond_label[c],
                      &lost[c]);
    long total = 0;
    for (int c = 0; c < N_CLS; c++) total += st->steps[c];
    printf("\n2. q - s on the policy's %ld skill-free step(s): expert %ld, other %ld, invalid "
           "%ld, no_expert %ld\n",
           total, st->steps[CLS_EXPERT], st->steps[CLS_OTHER], st->steps[CLS_INVALID],
           st->steps[CLS_NO_EXPERT]);
    printf("  reply: sum of q - s over the reply's tokens; action: over the tokens inside "
           "<action></action>; decision: over the action's tokens and the think text's that "
           "spell it (opd_tokens decision); /tok: per-token mean; >0: fraction of steps with a "
           "positive sum\n");
    printf("  tokens taken: the policy's reply; tokens expert: the expert's reply at that state "
           "(teacher-forced)\n");
    printf("  %-6s %-6s %-5s %-9s %6s %9s %9s %6s %9s %9s %6s %9s %6s\n", "skill", "tokens", "ep",
           "step", "steps", "reply", "/tok", ">0", "action", "/tok", ">0", "decision", ">0");
    for (int src = 0; src < n_src; src++)
        for (int w = 0; w < N_WHO; w++)
            for (int o = 0; o < 2; o++)
                for (int c = 0; c < N_CLS; c++) {
                    const opd_acc *x = &st->acc[src][w][o][c];
                    if (!x->n) continue;
                    printf("  %-6s %-6s %-5s %-9s %6ld %9.3f %9.4f %6.2f %9.3f %9.4f %6.2f "
                           "%9.3f %6.2f\n",
                           src_name[src], who_name[w], out_name[o], cls_name[c], x->n,
                           safe_div(x->sum, x->n), safe_div(x->tok, x->n), safe_div(x->pos, x->n),
                           safe_div(x->a_sum, x->a_n), safe_div(x->a_tok, x->a_n),
                           safe_div(x->a_pos, x->a_n), safe_div(x->d_sum, x->a_n),
                           safe_div(x->d_pos, x->a_n));
                }
    if (st->oracle_failed)
        printf("  %ld oracle skill(s) could not be written (used as no skill)\n",
               st->oracle_failed);
    if (st->q_dropped)
        printf("  %ld q score(s) dropped: prompt with the skill too long\n", st->q_dropped);
    if (!C->a.expert_policy)
        printf("  max |s - sampling log-prob| over the policy's tokens: %.2e (the analyzer "
               "reuses them as s)\n",
               st->s_vs_sampling);
}

static int print_json(const opd_ctx *C, const opd_success succ[N_COND],
                      const opd_success lost[N_COND], const opd_stats *st, int n_src) {
    const taskset_args *a = &C->a.set;
    cJSON *j = cJSON_CreateObject();
    if (!j) return -1;
    cJSON_AddStringToObject(j, "env", C->env_name);
    cJSON_AddStringToObject(j, "split", a->split_name);
    cJSON_AddNumberToObject(j, "tasks", a->count);
    cJSON_AddNumberToObject(j, "seed", (double)a->seed);
    cJSON_AddNumberToObject(j, "temperature", a->temperature);
    cJSON_AddNumberToObject(j, "skill_temperature", C->job->analyzer.skill_temperature);
    cJSON_AddStringToObject(j, "policy", C->a.expert_policy ? "expert" : "model");
    cJSON_AddStringToObject(j, "model", a->model_dir);
    cJSON *sf = cJSON_AddObjectToObject(j, "skill_following");
    for (int c = 0; sf && c < N_COND; c++)
        cJSON_AddItemToObject(sf, cond_key[c], success_json(&succ[c]));
    cJSON *lw = cJSON_AddObjectToObject(sf, "lost_without_skill");
    for (int c = 0; lw && c < N_COND; c++)
        cJSON_AddItemToObject(lw, cond_key[c], success_json(&lost[c]));
    cJSON *qs = cJSON_AddObjectToObject(j, "q_minus_s");
    cJSON *steps = cJSON_AddObjectToObject(qs, "steps");
    long total = 0;
    for (int c = 0; steps && c < N_CLS; c++) {
        cJSON_AddNumberToObject(steps, cls_name[c], (double)st->steps[c]);
        total += st->steps[c];
    }
    cJSON_AddNumberToObject(steps, "total", (double)total);
    cJSON *srcs = cJSON_AddArrayToObject(qs, "skills");
    for (int src = 0; srcs && src < n_src; src++)
        cJSON_AddItemToArray(srcs, cJSON_CreateString(src_name[src]));
    cJSON_AddNumberToObject(qs, "q_dropped", (double)st->q_dropped);
    cJSON_AddNumberToObject(j, "oracle_failed", (double)st->oracle_failed);
    if (!C->a.expert_policy)
        cJSON_AddNumberToObject(qs, "s_vs_sampling_max_abs", st->s_vs_sampling);
    cJSON *rows = cJSON_AddArrayToObject(qs, "rows");
    for (int src = 0; rows && src < n_src; src++)
        for (int w = 0; w < N_WHO; w++)
            for (int o = 0; o < 2; o++)
                for (int c = 0; c < N_CLS; c++)
                    if (st->acc[src][w][o][c].n)
                        cJSON_AddItemToArray(rows, acc_json(&st->acc[src][w][o][c], src_name[src],
                                                            who_name[w], out_name[o], cls_name[c]));
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) return -1;
    printf("%s\n", s);
    free(s);
    return 0;
}

/* ---------------- main ---------------- */

static int setup(opd_ctx *C, char *err, size_t errlen) {
    job_config *job = C->job;
    C->env_name = job->envs[C->env_idx].name;
    const env_vtable *vt = env_lookup(C->env_name);
    if (!vt || !vt->expert || !vt->oracle)
        return seed_errf(err, errlen,
                         "env %s has no expert or no hindsight oracle: this tool needs both",
                         C->env_name);
    C->nkv = job_env_kv(&job->envs[C->env_idx], C->kv, C->num);
    C->split = C->a.set.split;
    if (env_create(&C->e, C->env_name, C->kv, C->nkv, err, errlen)) return -1;
    C->T = (float)C->a.set.temperature;
    char path[4200];
    model_config cfg;
    model_limits lim;
    snprintf(path, sizeof path, "%s/config.json", C->a.set.model_dir);
    if (model_config_load(path, &cfg, err, errlen)) return -1;
    /* the engine's limits for B episodes; the q prompts (skills spliced in) and the
     * analysis prompts may use the model's whole context, as in the analyzer */
    rollout_plan(job, &cfg, C->a.set.batch, &lim, &C->max_prompt);
    C->max_seq = cfg.max_position_embeddings;
    C->n_slots = SEED_MAX(C->a.set.batch, 3);
    lim.max_batch_seqs = C->n_slots;
    lim.max_seq_len = C->max_seq;
    lim.max_infer_tokens = SEED_MAX(job->analyzer.batch_tokens, C->max_seq);
    if (model_load(&C->m, C->a.set.model_dir, &lim, daemon_backend(job), err, errlen)) return -1;
    /* s and q are log-probs of the policy that samples at T, as the analyzer scores */
    if (model_set_temperature(C->m, C->T, err, errlen)) return -1;
    snprintf(path, sizeof path, "%s/tokenizer.json", C->a.set.model_dir);
    if (tok_load(&C->tk, path, err, errlen) || tok_ws_new(C->tk, &C->ws, err, errlen)) return -1;
    if (render_init(&C->rr, C->tk, job->algorithm.history, err, errlen)) return -1;
    C->vocab = cfg.vocab_size;
    C->end_id = render_end_token(C->tk);
    C->logits = malloc(sizeof(float) * (size_t)C->n_slots * (size_t)C->vocab);
    C->scratch = malloc(sizeof(float) * (size_t)C->vocab * 2);
    if (!C->logits || !C->scratch) return seed_errf(err, errlen, "out of memory");
    if (C->a.tokens_path && !(C->tokens = fopen(C->a.tokens_path, "w")))
        return seed_errf(err, errlen, "--tokens %s: %s", C->a.tokens_path, strerror(errno));
    return 0;
}

static void teardown(opd_ctx *C) {
    if (C->tk) render_free(&C->rr);
    env_destroy(C->e);
    model_free(C->m);
    tok_ws_free(C->ws);
    tok_free(C->tk);
    free(C->logits);
    free(C->scratch);
    if (C->tokens) fclose(C->tokens);
}

int main(int argc, char **argv) {
    static opd_ctx C;
    static job_config job;
    char err[SEED_ERRLEN];
    int rc = parse_args(argc, argv, &C.a);
    if (rc) return rc;
    if (taskset_job(&C.a.set, &job, &C.env_idx, err, sizeof err)) {
        fprintf(stderr, "opd_signal: %s\n", err);
        return 2;
    }
    C.job = &job;
    seed_log_set_level(SEED_LOG_ERROR);
    const int n = C.a.set.count, n_src = C.a.self_skill ? N_SRC : 1;
    opd_episode *ex = calloc((size_t)n, sizeof *ex), *own = calloc((size_t)n, sizeof *own);
    opd_episode *with[N_COND] = {NULL, calloc((size_t)n, sizeof *ex),
                                 calloc((size_t)n, sizeof *ex)};
    opd_skill *sk_ex = calloc((size_t)n, sizeof *sk_ex),
              *sk_own = calloc((size_t)n, sizeof *sk_own);
    opd_skill *sk_self = calloc((size_t)n, sizeof *sk_self);
    opd_stats *st = calloc(1, sizeof *st);
    opd_success succ[N_COND] = {{0}}, lost[N_COND] = {{0}};
    rc = (!ex || !own || !with[1] || !with[2] || !sk_ex || !sk_own || !sk_self || !st)
             ? seed_errf(err, sizeof err, "out of memory for %d tasks", n)
             : setup(&C, err, sizeof err);
    const int pol = C.a.expert_policy;
    /* 1. the expert's and the policy's skill-free episodes, their oracle skills */
    if (!rc) rc = play(&C, 1, NULL, ex, err, sizeof err);
    if (!rc) rc = play(&C, pol, NULL, own, err, sizeof err);
    for (int i = 0; i < n && !rc; i++) {
        /* an episode an error ended (its env could not go on) is a failure in part 1 and
         * left out of part 2; an oracle that fails gives no skill, as in the analyzer */
        if (!own[i].error[0]) rc = replay(&C, &own[i], NULL, 1, err, sizeof err);
        st->oracle_failed += oracle_skill(&C, &ex[i], &sk_ex[i]) != 0;
        st->oracle_failed += oracle_skill(&C, &own[i], &sk_own[i]) != 0;
    }
    /* the policy again with each skill in its acting prompts (same sampler seeds) */
    if (!rc) rc = play(&C, pol, sk_ex, with[COND_EXPERT_SKILL], err, sizeof err);
    if (!rc) rc = play(&C, pol, sk_own, with[COND_OWN_SKILL], err, sizeof err);
    for (int i = 0; i < n && !rc; i++)
        for (int c = 1; c < N_COND && !rc; c++)
            if (!with[c][i].error[0])
                rc = replay(&C, &with[c][i], c == COND_EXPERT_SKILL ? &sk_ex[i] : &sk_own[i], 0,
                            err, sizeof err);
    with[COND_NONE] = own;
    for (int i = 0; i < n && !rc; i++)
        for (int c = 0; c < N_COND; c++) {
            success_add(&succ[c], &with[c][i]);
            if (!own[i].won || own[i].error[0]) success_add(&lost[c], &with[c][i]);
        }
    /* 2. q - s on the policy's skill-free episodes */
    if (!rc && C.a.self_skill) rc = self_skills(&C, own, n, sk_self, err, sizeof err);
    for (int i = 0; i < n && !rc; i++) {
        if (own[i].error[0]) continue; /* ended by an error: counted in part 1 only */
        const opd_skill *sk[N_SRC] = {&sk_own[i], C.a.self_skill ? &sk_self[i] : NULL};
        rc = score_episode(&C, &own[i], sk, st, err, sizeof err);
    }
    if (!rc) {
        if (C.a.json)
            rc = print_json(&C, succ, lost, st, n_src) ? seed_errf(err, sizeof err, "out of memory")
                                                       : 0;
        else
            print_report(&C, succ, lost, st, n_src);
    }
    if (rc) fprintf(stderr, "opd_signal: %s\n", err);
    for (int i = 0; i < n; i++) {
        if (ex) episode_free(&ex[i]);
        if (own) episode_free(&own[i]);
        for (int c = 1; c < N_COND; c++)
            if (with[c]) episode_free(&with[c][i]);
    }
    free(ex);
    free(own);
    free(with[1]);
    free(with[2]);
    free(sk_ex);
    free(sk_own);
    free(sk_self);
    free(st);
    teardown(&C);
    return rc ? 1 : 0;
}
