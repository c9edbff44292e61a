/* rollout.h — the batched rollout engine: groups of G episodes played against their envs
 * by the policy, one decode step across every episode that is generating. The actor
 * daemon, `seedctl eval` and the learner's periodic evaluation all play through it, so a
 * policy is measured exactly as it acts.
 *
 * Contract:
 *  - Slots 0..n_groups*G-1 are the model's KV slots; group g owns slots g*G .. g*G+G-1.
 *  - rollout_start_group resets G envs to one task (env entry, task seed, split); the
 *    episodes' sampler seeds derive from the task seed, so a replay draws the same tokens.
 *  - rollout_iterate renders due prompts (keeping the longest cached prefix of the slot
 *    or a slot of its group built with the current weights version), runs one batched
 *    forward, samples one token per generating episode and, at a reply's end, parses
 *    the action and steps the env. Every step is kept token-in-token-out: prompt ids
 *    with their skill slots, response ids, sampling log-probs, action, observation,
 *    reward.
 *  - With cfg.expert the env's expert acts instead of the model (no forward pass): the
 *    same bookkeeping, for tests and for measuring the evaluation path itself.
 *  - With cfg.lib, prompts carry the library's skills for the episode's env and family
 *    (the skill_prompt baseline); otherwise prompts carry no skill.
 *  - Weights may change only between groups: rollout_set_version tells the engine which
 *    version the model now holds (caches of older versions are not reused) and a group
 *    records the oldest version any of its episodes used. */
#ifndef SEED_ROLES_ROLLOUT_H
#define SEED_ROLES_ROLLOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "roles/render.h"
#include "common/job.h"
#include "common/skill_library.h"
#include "model/model.h"

typedef struct rollout_step {
    int32_t *prompt, *resp;
    float *lp;
    int plen, rlen, slot_ep, slot_step, valid;
    char *action, *obs;
    float reward;
} rollout_step;

enum { ROLLOUT_IDLE = 0, ROLLOUT_PROMPT, ROLLOUT_PREFILL, ROLLOUT_DECODE, ROLLOUT_DONE };

typedef struct rollout_ep {
    env *e;
    env_obs obs;
    seed_rng rng;
    uint64_t sample_seed;
    rollout_step *steps;
    int n_steps, cap_steps;
    env_prompt_step *hist;
    tok_ids prompt;
    int slot_ep, slot_step;
    int32_t *resp;
    float *lp;
    int rlen;
    int phase;   /* ROLLOUT_* */
    int pending; /* tokens of prompt still to prefill (from prompt.n - pending) */
    float ret;
    int won;
    char family[64];
    char error[256];
    const skill_lib_entry *skills; /* the library's skills for the task, or NULL */
} rollout_ep;

typedef struct rollout_group {
    int active, env_idx;
    uint64_t task_seed, min_version;
    env_split split;
} rollout_group;

typedef struct rollout_cfg {
    const job_config *job; /* envs, history, invalid_penalty, max_step_skills */
    model *m;              /* with at least n_groups * G KV slots (NULL with expert) */
    const tok *tk;
    int n_groups, G;
    model_sampler sampler;
    int max_new_tokens;
    int max_prompt;       /* a longer prompt ends its episode with an error */
    const skill_lib *lib; /* skills in acting prompts, or NULL */
    int expert;           /* the env's expert acts (no model) */
} rollout_cfg;

typedef struct rollout rollout;

int rollout_create(rollout **out, const rollout_cfg *cfg, char *err, size_t errlen);
void rollout_free(rollout *r);

/* The weights version the model holds from now on. */
void rollout_set_version(rollout *r, uint64_t version);

/* Group g plays task (job env env_idx, task_seed, split) from now on; episode i samples
 * with the seed seed_hash_mix(task_seed, i + 1). Env errors end an episode (its error
 * text says why); a failure here is only running out of memory or an env that cannot be
 * created. */
int rollout_start_group(rollout *r, int g, int env_idx, uint64_t task_seed, env_split split,
                        char *err, size_t errlen);

/* One iteration; 0 when nothing was generating. Fails only when the model fails. */
int rollout_iterate(rollout *r, char *err, size_t errlen);

/* 1 when every episode of the active group g has ended. */
int rollout_group_done(const rollout *r, int g);
/* Free group g's slots for a new group. */
void rollout_group_release(rollout *r, int g);

const rollout_group *rollout_group_at(const rollout *r, int g);
const rollout_ep *rollout_episode(const rollout *r, int g, int i);
int rollout_episodes_in_flight(const rollout *r);

/* Counters since creation. */
typedef struct rollout_counters {
    uint64_t env_steps, tokens_generated, env_errors;
} rollout_counters;
rollout_counters rollout_counters_get(const rollout *r);

/* ---- evaluation: a fixed, seeded task set, played without skills ----
 * Task i of the set (env, split, n, seed) has task seed seed_hash_mix(seed, i) >> 1:
 * the same tasks every time on every machine. One episode per task. */
typedef struct rollout_eval_family {
    char env[64], family[64];
    int episodes, won;
    double ret;
} rollout_eval_family;

typedef struct rollout_eval_result {
    int episodes, won, errors;
    double ret;
    int n_families;
    rollout_eval_family families[64];
} rollout_eval_result;

typedef struct rollout_eval_cfg {
    const job_config *job;
    model *m;      /* KV slots >= batch; NULL with expert */
    const tok *tk; /* NULL with expert */
    int env_idx;   /* the job's env entry to evaluate */
    env_split split;
    int n;             /* tasks */
    uint64_t seed;     /* names the task set */
    float temperature; /* 0: greedy */
    int batch;         /* episodes played at once (the model's KV slots) */
    int expert;        /* measure the env's expert through the same path */
    /* NULL (evaluation proper): no skill in the prompt. A library: its skills for the
     * task's env and family in every acting prompt, as mode skill_prompt acts — the
     * diagnostic of whether the policy follows a skill (seedctl eval --skills). */
    const skill_lib *lib;
    /* NULL, or a file that gets one JSON line per episode as it ends: task_seed, family,
     * won, return, error, steps[{observation, prompt, reply, action, valid, reward}]
     * (prompt and reply decoded with their special tokens; empty action when the reply was
     * invalid). */
    FILE *trace;
} rollout_eval_cfg;

int rollout_eval(const rollout_eval_cfg *cfg, rollout_eval_result *res, char *err, size_t errlen);

/* Gives the episodes of group g (just started, nothing sampled yet) sampling streams of
 * their own: seed_hash_mix(their seed, salt). A fixed task pool plays one task many times,
 * and without a salt every group of that task would replay the same streams. */
void rollout_group_salt(rollout *r, int g, uint64_t salt);

/* The k-th task seed of the task set named by set_seed: what rollout_eval plays, and what
 * an actor trains on when its env has a fixed pool (envs.N.tasks, set_seed = job.seed). */
uint64_t rollout_task_seed(uint64_t set_seed, uint64_t k);

/* An evaluation's result as a JSON object (NULL when out of memory; the caller
 * cJSON_Delete()s it): env, split, episodes, seed, temperature, success, return (mean
 * over the episodes that ran to their end), errors, families[{env, family, episodes,
 * success, return}]. Episodes that ended in an error count as failures. */
struct cJSON;
struct cJSON *rollout_eval_cjson(const rollout_eval_result *r, const char *env_name,
                                 const char *split, uint64_t seed, double temperature);

/* The model limits an engine with `slots` KV slots needs for the job's sampling keys and
 * the model's context (max_train_tokens 0, max_infer_tokens 0), and the longest prompt it
 * can then play (*max_prompt). */
void rollout_plan(const job_config *job, const model_config *cfg, int slots, model_limits *lim,
                  int *max_prompt);

#endif
