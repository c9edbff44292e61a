/* env.h — one interface for every text environment seed plays.
 *
 * Contract:
 *  - A task is fully determined by (env name, config, seed, split): the same level on
 *    every machine and run. No global mutable state: many instances per process.
 *  - env_reset / env_step fill an env_obs owned by the env (valid until the next call).
 *  - Built-in envs also provide an expert action (stage 0 behaviour cloning) and a
 *    rule-based hindsight oracle (stage 1): given the actions of a finished episode,
 *    env_replay rebuilds the task from (seed, split) and replays them once through the
 *    env's own calls, recording every step and the privileged state the env exposes
 *    (trace_record); the env's oracle reads that trace and writes the skill text
 *    (episode skill + up to 5 "step k: ..." lines) through the shared skill builder.
 *  - Envs are looked up by name in a registry (the table in env.c).
 *  - The generic calls below own what every env shares: the `max_steps` config key
 *    (an episode ends with done=1, won=0 after that many env_step calls, invalid steps
 *    included), the step counter, and refusing a step after the episode ended. */
#ifndef SEED_ENV_H
#define SEED_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "common/sbuf.h"

typedef enum { ENV_SPLIT_TRAIN = 0, ENV_SPLIT_SEEN = 1, ENV_SPLIT_UNSEEN = 2 } env_split;

/* Key/value settings from the job file's env section ("room_size" -> "6", ...). An
 * unknown key or a bad value makes env_create fail with a sentence naming it. */
typedef struct env_kv {
    const char *key;
    const char *value;
} env_kv;

typedef struct env_obs {
    const char *task;        /* the task line, e.g. "put a clean mug in cabinet." */
    const char *observation; /* current observation text */
    int n_admissible;
    const char *const *admissible; /* admissible actions (may be 0 for free-form envs) */
    float reward;                  /* reward of the last step (0 after reset) */
    int done;
    int won;
    const char *family; /* task family, e.g. "pick_and_place" or the env name */
    const char *info;   /* optional extra text, "" when none */
} env_obs;

typedef struct env env;
typedef struct env_trace env_trace;
typedef struct env_skill env_skill;
struct env_prompt_style; /* prompt.h */

typedef struct env_vtable {
    const char *name;
    const char *instructions; /* the env's fixed instruction paragraph for prompts */
    int (*create)(env **out, const env_kv *kv, int n_kv, char *err, size_t errlen);
    void (*destroy)(env *e);
    int (*reset)(env *e, uint64_t seed, env_split split, env_obs *obs, char *err, size_t errlen);
    /* action is the parsed action text; an invalid step is passed as NULL (no-op). */
    int (*step)(env *e, const char *action, env_obs *obs, char *err, size_t errlen);
    /* Optional (NULL when not built in): */
    int (*expert)(env *e, char *buf, size_t buflen, char *err, size_t errlen);
    /* Optional, with expert: the expert's reasoning for taking `action` (its own move) at
     * the current state, in the words of the env's prompt; stage 0 teaches it as the
     * reply's think text. NULL: a plain template names the action. */
    int (*expert_reason)(env *e, const char *action, char *buf, size_t buflen, char *err,
                         size_t errlen);
    /* Optional, with expert and oracle: the expert told what the hindsight skill of the
     * episode it plays will say (household: where the object it takes was), and its
     * reasoning, which cites the skill. Stage 0 plays it for the episodes whose prompts
     * carry the oracle's skill (algorithm.stage0_skill_demos informed), so those
     * demonstrations act on the skill. NULL: the expert already sees all a skill could
     * tell (sokoban's board); env_expert_informed is then env_expert. */
    int (*expert_informed)(env *e, char *buf, size_t buflen, char *err, size_t errlen);
    int (*expert_informed_reason)(env *e, const char *action, char *buf, size_t buflen, char *err,
                                  size_t errlen);
    int max_steps_default;
    /* Optional: does the env understand this action text? verl-agent's projection counts
     * an action it cannot map (sokoban: no direction word) as an invalid step. NULL means
     * every action text is valid (ALFWorld style: the env answers "Nothing happens."). */
    int (*action_valid)(const env *e, const char *action);
    /* Optional: the hindsight oracle on the shared replay (env_hindsight_replay). After the
     * reset and after every replayed step, trace_record writes the privileged state the
     * oracle needs (trace_size bytes; 0 and NULL when the end state is enough) into the
     * trace; oracle then reads the trace and writes the skill through the builder. An env
     * has a hindsight oracle exactly when .oracle is set. */
    size_t trace_size;
    void (*trace_record)(env *e, void *state);
    int (*oracle)(const env_trace *tr, env_skill *sk, char *err, size_t errlen);
    /* The wording of this env's prompts (prompt.h); NULL: the ALFWorld-like default. */
    const struct env_prompt_style *prompt_style;
} env_vtable;

/* Every env struct starts with this header so the generic calls can dispatch. */
struct env {
    const env_vtable *vt;
    int max_steps;
    int steps; /* env_step calls since the last reset (kept by env.c) */
    int done;  /* the episode has ended (kept by env.c) */
};

const env_vtable *env_lookup(const char *name); /* NULL when unknown */
const char *env_names(void);                    /* "sokoban, ezpoints, ..." */

int env_create(env **out, const char *name, const env_kv *kv, int n_kv, char *err, size_t errlen);
void env_destroy(env *e);
int env_reset(env *e, uint64_t seed, env_split split, env_obs *obs, char *err, size_t errlen);
int env_step(env *e, const char *action, env_obs *obs, char *err, size_t errlen);
int env_expert(env *e, char *buf, size_t buflen, char *err, size_t errlen);
/* The expert's reasoning for `action` at the current state into buf; 1 (buf empty) when
 * the env has none, 0 when written, -1 on error. */
int env_expert_reason(env *e, const char *action, char *buf, size_t buflen, char *err,
                      size_t errlen);
/* The informed expert's action and reasoning (env_vtable.expert_informed); the expert's
 * own where the env has none. */
int env_expert_informed(env *e, char *buf, size_t buflen, char *err, size_t errlen);
int env_expert_informed_reason(env *e, const char *action, char *buf, size_t buflen, char *err,
                               size_t errlen);
int env_split_parse(const char *s, env_split *out);
const char *env_split_name(env_split s);

/* --- additions used by the built-in envs and their callers --- */
int env_count(void);             /* number of registered envs */
const env_vtable *env_at(int i); /* i-th registered env, NULL when out of range */
/* 1 when the env would map this (parsed) action text to an action, else 0 (NULL: 0). */
int env_action_valid(const env *e, const char *action);
/* Rule-based hindsight oracle of env `name`: env_hindsight_replay with its vtable (see
 * env_vtable.oracle); actions[i] may be NULL for an invalid step. Fails when the env has
 * no oracle. */
int env_hindsight(const char *name, const env_kv *kv, int n_kv, uint64_t seed, env_split split,
                  const char *const *actions, int n_actions, char *skill, size_t skill_len,
                  char *err, size_t errlen);
/* The 32-bit seed a level generator uses for (seed, split): the train split uses the seed
 * itself (seeds below 2^32), so train level s is the Python generator's level for s; the
 * seen/unseen splits hash into [2^16, 2^32), the range verl-agent draws test seeds from. */
uint32_t env_level_seed(uint64_t seed, env_split split);

/* ---- hindsight: the episode replayed once, then the env's oracle ----
 * env_replay rebuilds the task of env `vt` from (config, seed, split), resets it and steps
 * each action in turn (NULL = an invalid step) until the episode ends or the actions run
 * out, recording what every call returned. step[0] is the reset, step[t] (t = 1..n) the
 * t-th action, so step[t - 1].state is the state before step t. The env stays alive, at
 * the end of the episode, for the oracle to read (its solver, its goal). */
typedef struct env_trace_step {
    const char *action; /* the action given (NULL: an invalid step, and for the reset) */
    char *observation;  /* copies of what env_reset / env_step returned */
    char *info;
    float reward;
    int done, won;
    void *state; /* vt->trace_size bytes from vt->trace_record; NULL when trace_size is 0 */
} env_trace_step;

struct env_trace {
    env *e; /* the replayed env at the end of the episode (privileged state) */
    uint64_t seed;
    env_split split;
    int n;                /* actions replayed */
    int won;              /* step[n].won */
    env_trace_step *step; /* n + 1 entries */
};

int env_replay(const env_vtable *vt, const env_kv *kv, int n_kv, uint64_t seed, env_split split,
               const char *const *actions, int n_actions, env_trace *tr, char *err, size_t errlen);
void env_trace_free(env_trace *tr);

/* The skill builder an oracle writes into: the episode skill (env_skill_put, appended as
 * is) and the step lines. env_skill_step collects "step k: ..." lines to be written after
 * the episode skill, one per line, in step order: at most ENV_SKILL_LINES, the first one
 * given for a step is kept, a step outside 1..n (the trace's) is dropped. An oracle that
 * writes its lines in order itself may env_skill_put them instead. */
enum { ENV_SKILL_LINES = 5, ENV_SKILL_LINE_CAP = 256 };
struct env_skill {
    seed_sbuf text; /* over the caller's skill buffer */
    int n_steps;    /* the trace's n */
    int n_lines;
    int line_step[ENV_SKILL_LINES];
    char line[ENV_SKILL_LINES][ENV_SKILL_LINE_CAP];
};
void env_skill_put(env_skill *sk, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void env_skill_step(env_skill *sk, int step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What env_hindsight does for an env with an oracle: env_replay, vt->oracle, the step
 * lines appended, and an error (skill[0] = 0) when the text does not fit in skill_len. */
int env_hindsight_replay(const env_vtable *vt, const env_kv *kv, int n_kv, uint64_t seed,
                         env_split split, const char *const *actions, int n_actions, char *skill,
                         size_t skill_len, char *err, size_t errlen);

/* Config helpers: the value of key (NULL when absent); a check that every key is one of
 * `known` (NULL-terminated; "max_steps" is always allowed) and appears once; and an
 * integer in [lo, hi] (def when absent). Errors name the env, key, value and what was
 * expected. */
const char *env_kv_get(const env_kv *kv, int n_kv, const char *key);
int env_kv_check(const char *env_name, const env_kv *kv, int n_kv, const char *const *known,
                 char *err, size_t errlen);
int env_kv_int(const char *env_name, const env_kv *kv, int n_kv, const char *key, int def, int lo,
               int hi, int *out, char *err, size_t errlen);
/* A set of names as a bit mask: the value of key is "all" (or absent: every bit of
 * `all`) or a comma list of names, each mapped to its bit by parse (-1: unknown, an
 * error naming the env, key, value and `expected`). */
int env_kv_mask(const char *env_name, const env_kv *kv, int n_kv, const char *key,
                int (*parse)(const char *name), unsigned all, const char *expected, unsigned *out,
                char *err, size_t errlen);

#endif
