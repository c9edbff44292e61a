/* job.c — see job.h: the key table (job_internal.h) and what works on it key by key:
 * defaults, setting a key from text, a value as text, comparing and listing. Loading YAML
 * is job_yaml.c, resolving job_resolve.c, writing job_emit.c. */
#define _GNU_SOURCE
#include "job.h"
#include "job_internal.h"

#include "skill_library.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLD(f) offsetof(job_config, f), sizeof(((job_config *)0)->f)
#define EFLD(f) offsetof(job_env, f), sizeof(((job_env *)0)->f)
#define STR(n, f, doc)                                                                             \
    { n, JOB_K_STR, FLD(f), 0, 0, 0, NULL, doc }
#define NAME(n, f, doc)                                                                            \
    { n, JOB_K_NAME, FLD(f), 0, 0, 0, NULL, doc }
#define HOST(n, f, doc)                                                                            \
    { n, JOB_K_HOST, FLD(f), 0, 0, 0, NULL, doc }
#define INT(n, f, lo, hi, doc)                                                                     \
    { n, JOB_K_INT, FLD(f), lo, hi, 0, NULL, doc }
#define U64(n, f, doc)                                                                             \
    { n, JOB_K_U64, FLD(f), 0, 0, 0, NULL, doc }
#define DBL(n, f, lo, hi, fl, doc)                                                                 \
    { n, JOB_K_DBL, FLD(f), lo, hi, fl, NULL, doc }
#define DBL2(n, f, lo, hi, fl, doc)                                                                \
    { n, JOB_K_DBL2, FLD(f), lo, hi, fl, NULL, doc }
#define BOOL(n, f, doc)                                                                            \
    { n, JOB_K_BOOL, FLD(f), 0, 1, 0, NULL, doc }
#define ENUM(n, f, ch, doc)                                                                        \
    { n, JOB_K_ENUM, FLD(f), 0, 0, 0, ch, doc }
#define ENDP(n, f, doc)                                                                            \
    { n, JOB_K_ENDPOINT, FLD(f), 0, 0, 0, NULL, doc }
#define CURVE(n, f, doc)                                                                           \
    { n, JOB_K_CURVE, FLD(f), 0, 0, 0, NULL, doc }
#define BIG INT_MAX
#define INF HUGE_VAL

/* Every key but the env list, in the order job_to_yaml writes them. */
const job_key_def job_key_table[] = {
    NAME("job.name", job.name, "names the run; run_dir defaults to runs/<name>"),
    STR("job.run_dir", job.run_dir, "checkpoints, metrics.jsonl, logs; empty: runs/<job.name>"),
    U64("job.seed", job.seed, "seeds tasks, sampling and init"),
    INT("job.total_steps", job.total_steps, 0, BIG,
        "learner optimizer steps in stage 2; 0: stop after the warm start (stages 0 and 1)"),
    U64("job.max_env_steps", job.max_env_steps,
        "stage 2's env-step budget: no rollout credit past it, and the groups it paid for are "
        "all trained before the learner stops "
        "(equal-budget comparisons); 0: off"),
    ENUM("job.log_level", job.log_level, "error|warn|info|debug", "log verbosity of every role"),

    STR("model.path", model.path,
        "HF model dir (config.json, tokenizer.json, model.safetensors); empty: the shipped "
        "agent (deploy/models/agent)"),
    ENUM("model.backend", model.backend, "cpu|cuda", "compute backend"),
    ENUM("model.init", model.init, "load|random",
         "load the weights, or start random (then warm-start: algorithm.stage0_steps)"),
    ENUM("model.dtype", model.dtype, "f32|bf16", "dtype of checkpoint weights"),
    INT("model.threads", model.threads, 0, 4096,
        "CPU threads per process; 0: all cores (seedctl launch: split by role demand)"),

    ENUM("algorithm.mode", algorithm.mode, "seed|grpo|skill_prompt|static_skills",
         "seed, or a baseline/ablation of the same code"),
    INT("algorithm.group_size", algorithm.group_size, 2, BIG, "episodes per task (GRPO group)"),
    INT("algorithm.history", algorithm.history, 0, 1000, "past steps shown in the prompt"),
    DBL("algorithm.invalid_penalty", algorithm.invalid_penalty, 0, INF, 0,
        "reward subtracted for a step without <think>/<action>"),
    ENUM("algorithm.adv_norm", algorithm.adv_norm, "std|mean",
         "episode advantage: (R-mean)/std or R-mean"),
    DBL("algorithm.w_opd", algorithm.w_opd, 0, INF, 0,
        "weight of clip(q-s) in the token advantage; grpo/skill_prompt: 0"),
    DBL("algorithm.c_opd", algorithm.c_opd, 0, INF, JOB_LO_EXCL, "clip bound of q-s"),
    DBL("algorithm.clip_eps", algorithm.clip_eps, 0, 1, JOB_LO_EXCL | JOB_HI_EXCL,
        "PPO ratio clip"),
    DBL("algorithm.dual_clip", algorithm.dual_clip, 0, INF, 0,
        "dual-clip constant for A<0; <= 1: off"),
    DBL("algorithm.kl_beta", algorithm.kl_beta, 0, INF, 0, "k3 KL weight to the reference policy"),
    DBL("algorithm.entropy_coef", algorithm.entropy_coef, 0, INF, 0, "entropy bonus weight"),
    ENUM("algorithm.opd_loss", algorithm.opd_loss, "none|delta|importance",
         "explicit OPD loss term"),
    ENUM("algorithm.opd_tokens", algorithm.opd_tokens, "action|response|decision",
         "tokens that carry q-s: the <action> text (action), every reply token (response), or "
         "the action and the think-text tokens that spell it (decision: where a reasoning "
         "reply makes its choice)"),
    ENUM("algorithm.opd_baseline", algorithm.opd_baseline, "none|group",
         "q-s as scored, or less its mean over the group's distilled tokens (removes the "
         "-KL(pi||q) drift every sampled token shares; keeps which tokens the skill favours)"),
    ENUM("algorithm.opd_episodes", algorithm.opd_episodes, "all|lost",
         "episodes that carry q-s: every one, or only those that lost (won episodes get no "
         "skill, no q and GRPO's advantage alone)"),
    ENUM("algorithm.loss_agg", algorithm.loss_agg, "episode-mean|token-mean",
         "loss average of a step: each episode's token mean, averaged over episodes (a long "
         "episode weighs as much as a short one), or the mean over every response token"),
    DBL("algorithm.opd_loss_coef", algorithm.opd_loss_coef, 0, INF, 0,
        "weight of the explicit OPD loss"),
    DBL("algorithm.gigpo_coef", algorithm.gigpo_coef, 0, INF, 0,
        "weight of GiGPO's step-level advantage; 0: off"),
    DBL("algorithm.gigpo_gamma", algorithm.gigpo_gamma, 0, 1, 0,
        "discount of GiGPO's step returns"),
    INT("algorithm.max_staleness", algorithm.max_staleness, 0, BIG,
        "drop samples more than this many versions old"),
    INT("algorithm.stage0_steps", algorithm.stage0_steps, 0, BIG,
        "warm-start (behaviour cloning) steps; 0: skip"),
    INT("algorithm.stage1_steps", algorithm.stage1_steps, 0, BIG,
        "hindsight skill SFT steps; 0: skip"),
    ENUM("algorithm.stage1_episodes", algorithm.stage1_episodes, "policy|expert",
         "who plays the episodes stage 1 labels: the policy being trained (sampled as the "
         "actors sample, eval.batch at once) or the env's expert with noise 0.3"),
    INT("algorithm.stage0_samples_per_episode", algorithm.stage0_samples_per_episode, 0, BIG,
        "steps of each expert episode stage 0 trains on, drawn at random (more tasks per "
        "step); 0: every step"),
    DBL("algorithm.stage0_expert_noise", algorithm.stage0_expert_noise, 0, 1, JOB_HI_EXCL,
        "share of warm-start steps that play a random admissible action or repeat the last; "
        "samples keep the expert's action in the state reached (recovery); 0: none"),
    DBL("algorithm.stage0_step_skill_keep", algorithm.stage0_step_skill_keep, 0, 1, 0,
        "chance that a stage-0 prompt carrying the oracle's skill also shows the step line "
        "of its step; 1: always (the demonstrations then take an object only when a step "
        "line says so)"),
    ENUM("algorithm.stage0_skill_demos", algorithm.stage0_skill_demos, "informed|expert",
         "who plays the stage-0 episodes whose prompts carry the oracle's skill: the env's "
         "informed expert, which acts on what the skill says (household: goes straight to "
         "where it says the object was), or the expert that plays the rest"),
    STR("algorithm.skill_library", algorithm.skill_library,
        "fixed skill library file or directory of <env>.json (skill_prompt, static_skills); "
        "empty: the shipped deploy/skills"),

    DBL("optim.lr", optim.lr, 0, INF, JOB_LO_EXCL, "AdamW learning rate in stage 2"),
    DBL("optim.sft_lr", optim.sft_lr, 0, INF, JOB_LO_EXCL, "learning rate in stages 0 and 1"),
    DBL("optim.sft_prompt_weight", optim.sft_prompt_weight, 0, INF, 0,
        "weight of the next-token loss on prompts in stages 0 and 1; 0: responses only"),
    DBL2("optim.betas", optim.betas, 0, 1, JOB_HI_EXCL, "AdamW betas"),
    DBL("optim.eps", optim.eps, 0, INF, JOB_LO_EXCL, "AdamW epsilon"),
    DBL("optim.weight_decay", optim.weight_decay, 0, INF, 0, "AdamW decoupled weight decay"),
    DBL("optim.max_grad_norm", optim.max_grad_norm, 0, INF, 0, "gradient clip norm; 0: off"),
    INT("optim.warmup_steps", optim.warmup_steps, 0, BIG, "linear learning-rate warmup steps"),
    ENUM("optim.schedule", optim.schedule, "constant|cosine",
         "learning-rate schedule after warmup"),
    INT("optim.tokens_per_step", optim.tokens_per_step, 1, BIG,
        "prompt + response tokens a warm-start step trains (stage 2: with groups_per_step 0)"),
    INT("optim.groups_per_step", optim.groups_per_step, 0, BIG,
        "groups (tasks) a stage-2 step trains, the oldest queued first; 0: by tokens_per_step"),
    INT("optim.micro_batch_tokens", optim.micro_batch_tokens, 1, BIG,
        "tokens per forward/backward pass; at least max prompt + max_new_tokens"),
    BOOL("optim.keep_sft_moments", optim.keep_sft_moments,
         "keep AdamW's stage 0/1 moments entering stage 2; false: reset them"),
    BOOL("optim.share_prefix", optim.share_prefix,
         "run prompts' common prefix once per micro-batch (exact; the cpu backend)"),

    DBL("sampling.temperature", sampling.temperature, 0, INF, 0, "0: greedy"),
    DBL("sampling.top_p", sampling.top_p, 0, 1, JOB_LO_EXCL, "nucleus sampling; 1: off"),
    INT("sampling.top_k", sampling.top_k, 0, BIG, "0: off"),
    INT("sampling.max_new_tokens", sampling.max_new_tokens, 1, BIG, "response tokens per step"),
    INT("sampling.max_prompt_tokens", sampling.max_prompt_tokens, 0, BIG,
        "prompt tokens per step; 0: the model's context length"),

    INT("actor.episodes_in_flight", actor.episodes_in_flight, 1, 65536,
        "concurrent episodes per actor (decode batch)"),
    INT("actor.groups_in_flight", actor.groups_in_flight, 1, 65536,
        "groups an actor plays at once"),
    ENUM("actor.pool_sampling", actor.pool_sampling, "uniform|frontier",
         "which task of a fixed pool (envs.N.tasks) a group plays: uniform, or frontier (by "
         "4p(1-p) of the task's recent success p, so env steps go to tasks with a GRPO signal)"),

    ENUM("analyzer.skill_source", analyzer.skill_source, "self|oracle|http",
         "who writes stage-2 skills"),
    STR("analyzer.http_endpoint", analyzer.http_endpoint,
        "OpenAI-compatible base URL (skill_source http)"),
    STR("analyzer.http_model", analyzer.http_model,
        "model name sent to the endpoint; empty: none (the server's default)"),
    STR("analyzer.http_api_key_env", analyzer.http_api_key_env,
        "environment variable that holds the API key"),
    INT("analyzer.http_timeout_ms", analyzer.http_timeout_ms, 1, BIG, "per HTTP request"),
    INT("analyzer.http_retries", analyzer.http_retries, 0, 100,
        "HTTP attempts after the first (failed requests then fall back to the oracle)"),
    INT("analyzer.http_backoff_ms", analyzer.http_backoff_ms, 0, BIG,
        "wait before the first HTTP retry; doubles per retry"),
    INT("analyzer.max_skill_tokens", analyzer.max_skill_tokens, 1, BIG, "skill length limit"),
    DBL("analyzer.skill_temperature", analyzer.skill_temperature, 0, INF, 0,
        "temperature the policy writes its self skills at (skill_source self); 0: greedy"),
    INT("analyzer.max_step_skills", analyzer.max_step_skills, 0, SKILL_LIB_MAX_STEPS,
        "step skills per episode"),
    INT("analyzer.batch_tokens", analyzer.batch_tokens, 1, BIG, "tokens per scoring pass"),

    HOST("endpoints.host", endpoints.host, "the learner's host, as peers reach it"),
    HOST("endpoints.bind_host", endpoints.bind_host,
         "interface the learner binds (* for all); empty: host"),
    INT("endpoints.base_port", endpoints.base_port, 1, 65530,
        "groups_in..status are base_port+0..5 unless set"),
    ENDP("endpoints.groups_in", endpoints.groups_in, "actors -> learner hub (PUSH/PULL)"),
    ENDP("endpoints.groups_out", endpoints.groups_out, "hub -> analyzers (PUSH/PULL)"),
    ENDP("endpoints.scored_in", endpoints.scored_in, "analyzers -> learner (PUSH/PULL)"),
    ENDP("endpoints.weights", endpoints.weights, "weight versions"),
    ENDP("endpoints.telemetry", endpoints.telemetry, "heartbeats and stats (PUSH/PULL)"),
    ENDP("endpoints.status", endpoints.status, "seedctl status (REQ/REP)"),
    CURVE("endpoints.curve_public", endpoints.curve_public, "this process's CURVE public key"),
    CURVE("endpoints.curve_secret", endpoints.curve_secret, "this process's CURVE secret key"),
    CURVE("endpoints.curve_server_key", endpoints.curve_server_key,
          "the learner's CURVE public key (clients); empty with a key pair: curve_public"),
    STR("endpoints.curve_allowed_keys", endpoints.curve_allowed_keys,
        "file of client CURVE public keys the learner admits (Z85, one a line); empty: only "
        "curve_public"),
    BOOL("endpoints.insecure", endpoints.insecure,
         "allow binding beyond loopback without CURVE keys (anyone reaching it joins the job)"),
    INT("endpoints.metrics_port", endpoints.metrics_port, 0, 65535,
        "learner's Prometheus /metrics HTTP port on its bind host; 0: off"),

    INT("roles.actors", roles.actors, 0, 1024, "actors seedctl launch starts"),
    INT("roles.analyzers", roles.analyzers, 0, 1024, "analyzers seedctl launch starts"),
    DBL("roles.restart_backoff_s", roles.restart_backoff_s, 0, INF, 0,
        "first restart delay of a crashed role; doubles per crash"),
    DBL("roles.restart_backoff_max_s", roles.restart_backoff_max_s, 0, INF, 0,
        "largest restart delay"),
    INT("roles.max_restarts", roles.max_restarts, 0, BIG, "restarts per role slot; 0: unlimited"),
    DBL("roles.stop_timeout_s", roles.stop_timeout_s, 0, INF, JOB_LO_EXCL,
        "wait after SIGTERM before SIGKILL"),

    INT("checkpoint.every", checkpoint.every, 0, BIG,
        "stage-2 steps between checkpoints; 0: no step rule"),
    DBL("checkpoint.every_minutes", checkpoint.every_minutes, 0, INF, 0,
        "minutes between checkpoints, whichever of the two comes first; 0: no time rule"),
    STR("checkpoint.dir", checkpoint.dir, "empty: <run_dir>/ckpt"),
    INT("checkpoint.keep", checkpoint.keep, 1, BIG, "checkpoints kept"),
    BOOL("checkpoint.resume", checkpoint.resume, "resume from the latest checkpoint in dir"),
    STR("checkpoint.resume_from", checkpoint.resume_from,
        "a checkpoint dir to resume from unless dir's latest is later; empty: latest"),

    DBL("status.interval_s", status.interval_s, 0, INF, JOB_LO_EXCL,
        "metrics line and seedctl progress period"),
    INT("status.window", status.window, 1, BIG, "episodes in rolling success/return"),

    INT("eval.every", eval.every, 0, BIG,
        "RL steps between evaluations of the policy (also before the first and after the "
        "last step); 0: off"),
    INT("eval.episodes", eval.episodes, 1, 100000, "tasks per env in each evaluation"),
    {"eval.split", JOB_K_WORD, FLD(eval.split), 0, 0, 0, "train|seen|unseen",
     "split of the evaluation tasks"},
    U64("eval.seed", eval.seed, "names the evaluation task set (the same tasks every time)"),
    DBL("eval.temperature", eval.temperature, 0, INF, 0,
        "sampling temperature of evaluation; 0: greedy"),
    INT("eval.batch", eval.batch, 1, 1024, "evaluation episodes played at once"),

    INT("wire.max_msg_bytes", wire.max_msg_bytes, 1024, BIG,
        "larger messages are dropped (ZMQ_MAXMSGSIZE)"),
    INT("wire.linger_ms", wire.linger_ms, 0, BIG, "ZMQ_LINGER on close"),
    INT("wire.hwm", wire.hwm, 1, BIG, "high-water mark in messages (back-pressure)"),
    INT("wire.hub_queue", wire.hub_queue, 1, BIG,
        "episode groups the learner holds for analyzers; past it, actors wait"),
    INT("wire.heartbeat_ms", wire.heartbeat_ms, 1, BIG, "heartbeat period"),
    INT("wire.heartbeat_timeout_ms", wire.heartbeat_timeout_ms, 1, BIG,
        "ZMTP heartbeat timeout of a connection"),
    INT("wire.peer_timeout_ms", wire.peer_timeout_ms, 1, BIG,
        "the learner forgets a peer silent this long"),
    INT("wire.request_timeout_ms", wire.request_timeout_ms, 1, BIG,
        "request/reply timeout (weight fetch, status)"),
};
const int job_key_table_n = (int)(sizeof job_key_table / sizeof job_key_table[0]);

/* The fields of one env entry, relative to job_env; full keys are envs.N.<name>. */
const job_key_def job_env_key_table[] = {
    {"name", JOB_K_NAME, EFLD(name), 0, 0, 0, NULL, "env registry name"},
    {"weight", JOB_K_DBL, EFLD(weight), 0, INF, JOB_LO_EXCL, NULL, "share of tasks from this env"},
    {"split", JOB_K_WORD, EFLD(split), 0, 0, 0, "train|seen|unseen", "task split"},
    {"max_steps", JOB_K_INT, EFLD(max_steps), 0, BIG, 0, NULL, "steps per episode; 0: env default"},
    {"tasks", JOB_K_INT, EFLD(tasks), 0, BIG, 0, NULL,
     "a fixed pool of this many tasks (the eval task set of this split and job.seed); 0: a "
     "fresh task every group"},
};
const int job_env_key_table_n = (int)(sizeof job_env_key_table / sizeof job_env_key_table[0]);

/* ---------- small text helpers ---------- */

void job_copy_str(char *dst, size_t n, const char *src) {
    size_t l = strlen(src);
    if (l >= n) l = n - 1;
    memcpy(dst, src, l);
    memset(dst + l, 0, n - l); /* zero tail: two equal strings are equal bytes too */
}

/* A value quoted for an error sentence: at most 80 bytes. */
const char *job_shown(const char *v, char *buf, size_t n) {
    size_t l = strlen(v);
    if (l <= 80) return v;
    snprintf(buf, n, "%.77s...", v);
    return buf;
}

static int choice_index(const char *choices, const char *v) {
    int i = 0;
    size_t vl = strlen(v);
    for (const char *p = choices; *p; i++) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == vl && strncmp(p, v, l) == 0) return i;
        p += l + (bar ? 1 : 0);
    }
    return -1;
}

const char *job_choice_name(const char *choices, int idx, char *buf, size_t n) {
    const char *p = choices;
    for (int i = 0; *p; i++) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (i == idx) {
            snprintf(buf, n, "%.*s", (int)l, p);
            return buf;
        }
        p += l + (bar ? 1 : 0);
    }
    snprintf(buf, n, "%d", idx);
    return buf;
}

/* Shortest decimal text that reads back as the same double, always with a '.' so
 * that YAML 1.1 readers (PyYAML) see a float: "1.0", "1.0e-05", "0.999". */
static void fmt_double(char *buf, size_t n, double v) {
    char t[40];
    /* start from the integer digits so 30 prints as "30", not "3e+01" */
    double a = fabs(v);
    int prec = a >= 1 && a < 1e15 ? (int)floor(log10(a)) + 1 : 1;
    for (; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (strtod(t, NULL) == v) break;
    }
    char *e = strchr(t, 'e');
    if (strchr(t, '.') || strchr(t, 'n') /* inf, nan */)
        snprintf(buf, n, "%s", t);
    else if (e)
        snprintf(buf, n, "%.*s.0%s", (int)(e - t), t, e);
    else
        snprintf(buf, n, "%s.0", t);
}

static void bound_text(char *buf, size_t n, const job_key_def *k, int integer) {
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, "%g", k->lo);
    snprintf(hi, sizeof hi, "%g", k->hi);
    const char *what = integer ? "an integer" : "a number";
    int has_hi = integer ? k->hi < (double)INT_MAX : isfinite(k->hi);
    int has_lo = isfinite(k->lo);
    if (has_lo && has_hi)
        snprintf(buf, n, "%s in %s%s, %s%s", what, (k->flags & JOB_LO_EXCL) ? "(" : "[", lo, hi,
                 (k->flags & JOB_HI_EXCL) ? ")" : "]");
    else if (has_lo)
        snprintf(buf, n, "%s %s %s", what, (k->flags & JOB_LO_EXCL) ? ">" : "\u2265", lo);
    else
        snprintf(buf, n, "%s", what);
}

/* "what was expected" for a key, as the error sentences and `--keys` show it. */
void job_expected_text(const job_key_def *k, char *buf, size_t n) {
    switch (k->type) {
    case JOB_K_STR:
        snprintf(buf, n, "a string of at most %zu bytes", k->size - 1);
        break;
    case JOB_K_NAME:
        snprintf(buf, n, "a non-empty name of letters, digits, '.', '_' or '-' (at most %zu bytes)",
                 k->size - 1);
        break;
    case JOB_K_HOST:
        snprintf(buf, n, "a host name or IP address (or * to bind all)");
        break;
    case JOB_K_WORD:
    case JOB_K_ENUM:
        snprintf(buf, n, "one of %s", k->choices);
        break;
    case JOB_K_INT:
        bound_text(buf, n, k, 1);
        break;
    case JOB_K_U64:
        snprintf(buf, n, "an integer in [0, 18446744073709551615]");
        break;
    case JOB_K_DBL:
        bound_text(buf, n, k, 0);
        break;
    case JOB_K_DBL2: {
        char one[96];
        bound_text(one, sizeof one, k, 0);
        snprintf(buf, n, "two numbers like 0.9,0.999, each %s", one + 9 /* after "a number " */);
        break;
    }
    case JOB_K_BOOL:
        snprintf(buf, n, "true or false");
        break;
    case JOB_K_ENDPOINT:
        snprintf(buf, n,
                 "an endpoint tcp://HOST:PORT, ipc://PATH or inproc://NAME (empty: derived)");
        break;
    case JOB_K_CURVE:
        snprintf(buf, n, "a Z85 CURVE key of 40 characters (or empty)");
        break;
    }
}

static const char *trim(const char *s, char *buf, size_t n) {
    while (isspace((unsigned char)*s)) s++;
    size_t l = strlen(s);
    while (l && isspace((unsigned char)s[l - 1])) l--;
    if (l >= n) l = n - 1;
    memcpy(buf, s, l);
    buf[l] = 0;
    return buf;
}

static int parse_int64(const char *s, long long *out) {
    char t[64];
    if (strlen(s) >= sizeof t) return -1;
    trim(s, t, sizeof t);
    if (!t[0]) return -1;
    errno = 0;
    char *end;
    long long v = strtoll(t, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    char t[64];
    if (strlen(s) >= sizeof t) return -1;
    trim(s, t, sizeof t);
    if (!t[0]) return -1;
    errno = 0;
    char *end;
    double v = strtod(t, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int in_bounds(const job_key_def *k, double v) {
    if (k->flags & JOB_LO_EXCL ? !(v > k->lo) : !(v >= k->lo)) return 0;
    if (k->flags & JOB_HI_EXCL ? !(v < k->hi) : !(v <= k->hi)) return 0;
    return 1;
}

static int valid_name(const char *v) {
    if (!*v) return 0;
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-') return 0;
    return 1;
}

static int valid_host(const char *v) {
    if (!strcmp(v, "*")) return 1;
    if (!*v) return 0;
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-_:[]%", *p)) return 0;
    return 1;
}

static int valid_endpoint(const char *v) {
    if (!*v) return 1;
    if (!strncmp(v, "ipc://", 6)) return v[6] != 0;
    if (!strncmp(v, "inproc://", 9)) return v[9] != 0;
    if (strncmp(v, "tcp://", 6)) return 0;
    const char *hp = v + 6, *colon = strrchr(hp, ':');
    if (!colon || colon == hp) return 0;
    if (!strcmp(colon + 1, "*")) return 1;
    long long port;
    if (parse_int64(colon + 1, &port) || port < 1 || port > 65535) return 0;
    char host[JOB_ENDPOINT_LEN];
    snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
    return valid_host(host);
}

static int valid_curve(const char *v) {
    static const char z85[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              ".-:+=^!/*?&<>()[]{}@%$#";
    if (!*v) return 1;
    if (strlen(v) != 40) return 0;
    for (const char *p = v; *p; p++)
        if (!strchr(z85, *p)) return 0;
    return 1;
}

static int parse_bool(const char *s, int *out) {
    static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};
    char t[16];
    if (strlen(s) >= sizeof t) return -1;
    trim(s, t, sizeof t);
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(t, yes[i])) return *out = 1, 0;
        if (!strcasecmp(t, no[i])) return *out = 0, 0;
    }
    return -1;
}

/* ---------- setting one field ---------- */

static int bad_value(const job_key_def *k, const char *key, const char *value, char *err,
                     size_t errlen) {
    char exp[256], sbuf[96];
    job_expected_text(k, exp, sizeof exp);
    return seed_errf(err, errlen, "%s: expected %s, got '%s'", key, exp,
                     job_shown(value, sbuf, sizeof sbuf));
}

/* Parse value for key definition k into the struct at base. */
int job_field_set(const job_key_def *k, void *base, const char *key, const char *value, char *err,
                  size_t errlen) {
    char *p = (char *)base + k->off;
    switch (k->type) {
    case JOB_K_STR:
    case JOB_K_NAME:
    case JOB_K_HOST:
    case JOB_K_WORD:
    case JOB_K_ENDPOINT:
    case JOB_K_CURVE: {
        if (strlen(value) >= k->size) {
            char exp[256];
            job_expected_text(k, exp, sizeof exp);
            return seed_errf(err, errlen, "%s: expected %s, got %zu bytes", key, exp,
                             strlen(value));
        }
        int ok = k->type == JOB_K_STR        ? 1
                 : k->type == JOB_K_NAME     ? valid_name(value)
                 : k->type == JOB_K_HOST     ? valid_host(value) || !*value
                 : k->type == JOB_K_WORD     ? choice_index(k->choices, value) >= 0
                 : k->type == JOB_K_ENDPOINT ? valid_endpoint(value)
                                             : valid_curve(value);
        /* endpoints.host may not be empty: peers need somewhere to connect */
        if (k->type == JOB_K_HOST && !*value && !strcmp(key, "endpoints.host")) ok = 0;
        if (!ok) return bad_value(k, key, value, err, errlen);
        job_copy_str(p, k->size, value);
        return 0;
    }
    case JOB_K_INT: {
        long long v;
        if (parse_int64(value, &v) || v < (long long)k->lo || v > (long long)k->hi)
            return bad_value(k, key, value, err, errlen);
        *(int *)p = (int)v;
        return 0;
    }
    case JOB_K_U64: {
        char t[64];
        if (strlen(value) >= sizeof t) return bad_value(k, key, value, err, errlen);
        trim(value, t, sizeof t);
        errno = 0;
        char *end;
        unsigned long long v = strtoull(t, &end, 10);
        if (!t[0] || t[0] == '-' || errno || *end) return bad_value(k, key, value, err, errlen);
        *(uint64_t *)p = (uint64_t)v;
        return 0;
    }
    case JOB_K_DBL: {
        double v;
        if (parse_double(value, &v) || !in_bounds(k, v))
            return bad_value(k, key, value, err, errlen);
        *(double *)p = v;
        return 0;
    }
    case JOB_K_DBL2: {
        char t[128];
        if (strlen(value) >= sizeof t) return bad_value(k, key, value, err, errlen);
        trim(value, t, sizeof t);
        char *s = t;
        size_t l = strlen(s);
        if (l >= 2 && s[0] == '[' && s[l - 1] == ']') s[l - 1] = 0, s++;
        char *comma = strchr(s, ',');
        if (!comma) return bad_value(k, key, value, err, errlen);
        *comma = 0;
        double a, b;
        if (parse_double(s, &a) || parse_double(comma + 1, &b) || !in_bounds(k, a) ||
            !in_bounds(k, b))
            return bad_value(k, key, value, err, errlen);
        ((double *)p)[0] = a;
        ((double *)p)[1] = b;
        return 0;
    }
    case JOB_K_BOOL: {
        int v;
        if (parse_bool(value, &v)) return bad_value(k, key, value, err, errlen);
        *(int *)p = v;
        return 0;
    }
    case JOB_K_ENUM: {
        char t[64];
        int i = strlen(value) < sizeof t ? choice_index(k->choices, trim(value, t, sizeof t)) : -1;
        if (i < 0) return bad_value(k, key, value, err, errlen);
        *(int *)p = i;
        return 0;
    }
    }
    return seed_errf(err, errlen, "%s: internal error: unknown key type", key);
}

/* ---------- key lookup and "did you mean" ---------- */

const job_key_def *job_key_find(const char *name) {
    for (int i = 0; i < job_key_table_n; i++)
        if (!strcmp(job_key_table[i].name, name)) return &job_key_table[i];
    return NULL;
}

static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            int del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = SEED_MIN(sub, SEED_MIN(del, ins));
            prev = cur;
        }
    }
    return row[lb];
}

/* The closest known key (or section, when section != 0), or NULL. */
const char *job_suggest(const char *name, int section, char *buf, size_t n) {
    int best = 99;
    const char *dot = strrchr(name, '.');
    const char *last = dot ? dot + 1 : name;
    buf[0] = 0;
    for (int i = 0; i < job_key_table_n; i++) {
        char cand[128];
        if (section) {
            snprintf(cand, sizeof cand, "%.*s",
                     (int)(strchr(job_key_table[i].name, '.') - job_key_table[i].name),
                     job_key_table[i].name);
        } else {
            snprintf(cand, sizeof cand, "%s", job_key_table[i].name);
        }
        int d = edit_distance(name, cand);
        /* the same leaf under another section ("algorithm.lr" -> "optim.lr") */
        const char *cl = strrchr(cand, '.');
        if (!section && dot && cl && !strcmp(cl + 1, last)) d = SEED_MIN(d, 2);
        if (d < best) best = d, snprintf(buf, n, "%s", cand);
    }
    {
        int d = edit_distance(name, "envs");
        if (d < best) best = d, snprintf(buf, n, "envs");
    }
    int limit = SEED_MAX(2, (int)strlen(name) / 4);
    return best <= limit ? buf : NULL;
}

int job_unknown_key(const char *key, char *err, size_t errlen) {
    char sug[128];
    const char *s = job_suggest(key, 0, sug, sizeof sug);
    if (s) return seed_errf(err, errlen, "%s: unknown key (did you mean %s?)", key, s);
    return seed_errf(err, errlen, "%s: unknown key (`seedctl config --keys` lists them)", key);
}

/* ---------- env entries ---------- */

static void env_entry_defaults(job_env *e, const char *name) {
    memset(e, 0, sizeof *e);
    job_copy_str(e->name, sizeof e->name, name);
    e->weight = 1.0;
    job_copy_str(e->split, sizeof e->split, "train");
    e->max_steps = 0;
}

static int env_option_set(job_env *e, const char *key, const char *okey, const char *value,
                          char *err, size_t errlen) {
    char sbuf[96];
    if (!valid_name(okey) || strchr(okey, '.') || strlen(okey) >= JOB_OPTION_KEY_LEN)
        return seed_errf(err, errlen,
                         "%s: expected an option name of letters, digits, '_' or '-' (at most %d "
                         "bytes), got '%s'",
                         key, JOB_OPTION_KEY_LEN - 1, job_shown(okey, sbuf, sizeof sbuf));
    if (strlen(value) >= JOB_OPTION_VALUE_LEN)
        return seed_errf(err, errlen, "%s: expected a value of at most %d bytes, got %zu bytes",
                         key, JOB_OPTION_VALUE_LEN - 1, strlen(value));
    for (int i = 0; i < e->n_options; i++)
        if (!strcmp(e->options[i].key, okey)) {
            job_copy_str(e->options[i].value, JOB_OPTION_VALUE_LEN, value);
            return 0;
        }
    if (e->n_options >= JOB_MAX_ENV_OPTIONS)
        return seed_errf(err, errlen, "%s: too many options for env '%s' (at most %d)", key,
                         e->name, JOB_MAX_ENV_OPTIONS);
    job_option *o = &e->options[e->n_options++];
    job_copy_str(o->key, JOB_OPTION_KEY_LEN, okey);
    job_copy_str(o->value, JOB_OPTION_VALUE_LEN, value);
    return 0;
}

/* "envs" (a comma list of names) or "envs.N.field" / "envs.N.options.KEY". */
static int env_set(job_config *job, const char *key, const char *value, char *err, size_t errlen) {
    char sbuf[96];
    if (!strcmp(key, "envs")) {
        job_config tmp = *job;
        tmp.n_envs = 0;
        char list[1024];
        if (strlen(value) >= sizeof list)
            return seed_errf(err, errlen,
                             "envs: expected a comma-separated list of env names, "
                             "got %zu bytes",
                             strlen(value));
        snprintf(list, sizeof list, "%s", value);
        char *save = NULL;
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char name[JOB_NAME_LEN + 1];
            trim(tok, name, sizeof name);
            if (!valid_name(name) || strlen(name) >= JOB_NAME_LEN)
                return seed_errf(err, errlen,
                                 "envs: expected a comma-separated list of env names, got '%s'",
                                 job_shown(value, sbuf, sizeof sbuf));
            if (tmp.n_envs >= JOB_MAX_ENVS)
                return seed_errf(err, errlen, "envs: at most %d envs, got more in '%s'",
                                 JOB_MAX_ENVS, job_shown(value, sbuf, sizeof sbuf));
            env_entry_defaults(&tmp.envs[tmp.n_envs++], name);
        }
        if (tmp.n_envs == 0)
            return seed_errf(err, errlen,
                             "envs: expected a comma-separated list of env names, got '%s'",
                             job_shown(value, sbuf, sizeof sbuf));
        memcpy(job->envs, tmp.envs, sizeof job->envs);
        job->n_envs = tmp.n_envs;
        return 0;
    }
    /* envs.N.rest */
    const char *p = key + 5;
    char *end;
    errno = 0;
    long idx = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
    if (idx < 0 || errno || (*end != '.' && *end != 0))
        return seed_errf(err, errlen,
                         "%s: unknown key (env keys are envs.N.name, envs.N.weight, "
                         "envs.N.split, envs.N.max_steps, envs.N.tasks, envs.N.options.KEY)",
                         key);
    if (idx > job->n_envs || idx >= JOB_MAX_ENVS)
        return seed_errf(err, errlen,
                         "%s: expected an env index in [0, %d] (there are %d entries; the next "
                         "index appends one), got %ld",
                         key, SEED_MIN(job->n_envs, JOB_MAX_ENVS - 1), job->n_envs, idx);
    if (*end == 0)
        return seed_errf(err, errlen,
                         "%s: expected a field: envs.%ld.name, .weight, .split, "
                         ".max_steps, .tasks or .options.KEY",
                         key, idx);
    const char *field = end + 1;
    job_env *e = &job->envs[idx];
    int appending = idx == job->n_envs;
    job_env fresh;
    if (appending) {
        env_entry_defaults(&fresh, "");
        e = &fresh;
    }
    int rc;
    if (!strncmp(field, "options.", 8)) {
        rc = env_option_set(e, key, field + 8, value, err, errlen);
    } else {
        const job_key_def *k = NULL;
        for (int i = 0; i < job_env_key_table_n; i++)
            if (!strcmp(job_env_key_table[i].name, field)) k = &job_env_key_table[i];
        if (!k)
            return seed_errf(err, errlen,
                             "%s: unknown key (env keys are envs.N.name, "
                             "envs.N.weight, envs.N.split, envs.N.max_steps, "
                             "envs.N.tasks, envs.N.options.KEY)",
                             key);
        char old_name[JOB_NAME_LEN];
        job_copy_str(old_name, sizeof old_name, e->name);
        rc = job_field_set(k, e, key, value, err, errlen);
        /* options and max_steps belong to the old env: a new name starts clean */
        if (!rc && k->off == offsetof(job_env, name) && old_name[0] && strcmp(old_name, e->name))
            env_entry_defaults(e, value);
    }
    if (rc) return rc;
    if (appending) {
        job->envs[job->n_envs++] = fresh;
    }
    return 0;
}

/* ---------- public: defaults, set ---------- */

void job_defaults(job_config *job) {
    memset(job, 0, sizeof *job);
    job_copy_str(job->job.name, sizeof job->job.name, "seed-default");
    job->job.seed = 1;
    job->job.total_steps = 16; /* from the shipped agent, under 15 minutes on 2 cores */
    job->job.log_level = JOB_LOG_INFO;

    job->model.backend = JOB_BACKEND_CPU;
    job->model.init = JOB_INIT_LOAD; /* the shipped agent (deploy/models/agent) */
    job->model.dtype = JOB_DTYPE_F32;
    job->model.threads = 0;

    job->n_envs = 1;
    env_entry_defaults(&job->envs[0], "sokoban");
    job->envs[0].max_steps = 15;
    env_option_set(&job->envs[0], "", "room_size", "6", NULL, 0);
    env_option_set(&job->envs[0], "", "boxes", "1", NULL, 0);
    /* a fixed training set of 8 levels, as an RL dataset: within 15 minutes on 2 cores the
     * policy gets better on the levels it trains on (eval_pool_success), not yet on new ones */
    job->envs[0].tasks = 8;

    job->algorithm.mode = JOB_MODE_SEED;
    job->algorithm.group_size = 8;
    job->algorithm.history = 2;
    job->algorithm.invalid_penalty = 0.1;
    job->algorithm.adv_norm = JOB_ADV_STD;
    job->algorithm.w_opd = 1.0;
    job->algorithm.c_opd = 2.0;
    job->algorithm.clip_eps = 0.2;
    job->algorithm.dual_clip = 3.0;
    job->algorithm.kl_beta = 0.01;
    job->algorithm.entropy_coef = 0.0;
    job->algorithm.opd_loss = JOB_OPD_NONE;
    job->algorithm.opd_loss_coef = 0.0;
    job->algorithm.opd_tokens = JOB_OPD_TOKENS_ACTION;
    job->algorithm.opd_baseline = JOB_OPD_BASELINE_NONE;
    job->algorithm.opd_episodes = JOB_OPD_EPISODES_ALL;
    job->algorithm.loss_agg = JOB_LOSS_AGG_EPISODE;
    job->algorithm.gigpo_coef = 0.0;
    job->algorithm.gigpo_gamma = 0.95;
    job->algorithm.max_staleness = 1;
    job->algorithm.stage0_steps = 0; /* the shipped agent is warm-started already */
    job->algorithm.stage1_steps = 0;
    job->algorithm.stage1_episodes = JOB_S1_POLICY;
    job->algorithm.stage0_samples_per_episode = 0;
    job->algorithm.stage0_expert_noise = 0.0;
    job->algorithm.stage0_step_skill_keep = 0.5;
    job->algorithm.stage0_skill_demos = JOB_SKILL_DEMOS_INFORMED;

    job->optim.lr = 1e-4;
    job->optim.sft_lr = 1e-3;
    job->optim.sft_prompt_weight = 0.0;
    job->optim.betas[0] = 0.9;
    job->optim.betas[1] = 0.999;
    job->optim.eps = 1e-8;
    job->optim.weight_decay = 0.0;
    job->optim.max_grad_norm = 1.0;
    job->optim.warmup_steps = 0;
    job->optim.schedule = JOB_SCHEDULE_COSINE; /* keeps what the default job learns (RESULTS) */
    job->optim.tokens_per_step = 8192;
    job->optim.groups_per_step = 2;
    job->optim.micro_batch_tokens = 4096;
    job->optim.keep_sft_moments = 0;
    job->optim.share_prefix = 1;

    job->sampling.temperature = 0.7; /* the shipped agent's T = 1 replies garble 15% of steps */
    job->sampling.top_p = 1.0;
    job->sampling.top_k = 0;
    job->sampling.max_new_tokens = 64;
    job->sampling.max_prompt_tokens = 0;

    job->actor.episodes_in_flight = 16;
    job->actor.groups_in_flight = 2;

    job->analyzer.skill_source = JOB_SKILL_SELF;
    job_copy_str(job->analyzer.http_api_key_env, sizeof job->analyzer.http_api_key_env,
                 "OPENAI_API_KEY");
    job->analyzer.http_timeout_ms = 60000;
    job->analyzer.http_retries = 3;
    job->analyzer.http_backoff_ms = 500;
    job->analyzer.max_skill_tokens = 128;
    /* the actors' default T: greedy skills of the 4M agent collapse onto its priors (wrong
     * objects and step counts; docs/RESULTS.md, December 7) */
    job->analyzer.skill_temperature = 0.7;
    job->analyzer.max_step_skills = 5;
    job->analyzer.batch_tokens = 8192;

    job_copy_str(job->endpoints.host, sizeof job->endpoints.host, "127.0.0.1");
    job->endpoints.base_port = 5550;

    job->roles.actors = 2;
    job->roles.analyzers = 1;
    job->roles.restart_backoff_s = 1.0;
    job->roles.restart_backoff_max_s = 30.0;
    job->roles.max_restarts = 0;
    job->roles.stop_timeout_s = 30.0;

    job->checkpoint.every = 10;
    job->checkpoint.every_minutes = 5.0;
    job->checkpoint.keep = 3;
    job->checkpoint.resume = 1;

    job->status.interval_s = 5.0;
    job->status.window = 64; /* 8 groups: the default job plays about 300 episodes */
    job->eval.every = 8;     /* the default job: before, halfway and after */
    job->eval.episodes = 32;
    job_copy_str(job->eval.split, sizeof job->eval.split, "unseen");
    job->eval.seed = 0;
    job->eval.temperature = 0.0;
    job->eval.batch = 16;

    job->wire.max_msg_bytes = 256 << 20;
    job->wire.linger_ms = 1000;
    job->wire.hwm = 64;
    job->wire.hub_queue = 2;
    job->wire.heartbeat_ms = 2000;
    job->wire.heartbeat_timeout_ms = 10000;
    job->wire.peer_timeout_ms = 30000;
    job->wire.request_timeout_ms = 3000;
}

int job_set(job_config *job, const char *key, const char *value, char *err, size_t errlen) {
    if (!strncmp(key, "envs", 4) && (key[4] == 0 || key[4] == '.'))
        return env_set(job, key, value, err, errlen);
    const job_key_def *k = job_key_find(key);
    if (!k) return job_unknown_key(key, err, errlen);
    return job_field_set(k, job, key, value, err, errlen);
}

int job_set_arg(job_config *job, const char *arg, char *err, size_t errlen) {
    const char *eq = strchr(arg, '=');
    char sbuf[96];
    if (!eq || eq == arg)
        return seed_errf(err, errlen,
                         "'%s': expected an override key=value, like "
                         "algorithm.group_size=8",
                         job_shown(arg, sbuf, sizeof sbuf));
    char key[256];
    if ((size_t)(eq - arg) >= sizeof key)
        return seed_errf(err, errlen, "'%s': key too long", job_shown(arg, sbuf, sizeof sbuf));
    snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
    return job_set(job, key, eq + 1, err, errlen);
}

/* ---------- a value as text ---------- */

/* Plain text of a field's value (strings unquoted). */
void job_field_text(const job_key_def *k, const void *base, char *buf, size_t n) {
    const char *p = (const char *)base + k->off;
    switch (k->type) {
    case JOB_K_STR:
    case JOB_K_NAME:
    case JOB_K_HOST:
    case JOB_K_WORD:
    case JOB_K_ENDPOINT:
    case JOB_K_CURVE:
        snprintf(buf, n, "%s", p);
        break;
    case JOB_K_INT:
        snprintf(buf, n, "%d", *(const int *)p);
        break;
    case JOB_K_U64:
        snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)p);
        break;
    case JOB_K_DBL:
        fmt_double(buf, n, *(const double *)p);
        break;
    case JOB_K_DBL2: {
        char a[32], b[32];
        fmt_double(a, sizeof a, ((const double *)p)[0]);
        fmt_double(b, sizeof b, ((const double *)p)[1]);
        snprintf(buf, n, "[%s, %s]", a, b);
        break;
    }
    case JOB_K_BOOL:
        snprintf(buf, n, "%s", *(const int *)p ? "true" : "false");
        break;
    case JOB_K_ENUM:
        job_choice_name(k->choices, *(const int *)p, buf, n);
        break;
    }
}

int job_key_is_text(const job_key_def *k) {
    return k->type == JOB_K_STR || k->type == JOB_K_NAME || k->type == JOB_K_HOST ||
           k->type == JOB_K_WORD || k->type == JOB_K_ENDPOINT || k->type == JOB_K_CURVE;
}

/* ---------- compare, list ---------- */

int job_field_equal(const job_key_def *k, const void *a, const void *b) {
    const char *pa = (const char *)a + k->off, *pb = (const char *)b + k->off;
    if (job_key_is_text(k)) return strcmp(pa, pb) == 0;
    return memcmp(pa, pb, k->size) == 0;
}

int job_equal(const job_config *a, const job_config *b) {
    for (int i = 0; i < job_key_table_n; i++)
        if (!job_field_equal(&job_key_table[i], a, b)) return 0;
    if (a->n_envs != b->n_envs) return 0;
    for (int e = 0; e < a->n_envs; e++) {
        const job_env *x = &a->envs[e], *y = &b->envs[e];
        for (int j = 0; j < job_env_key_table_n; j++)
            if (!job_field_equal(&job_env_key_table[j], x, y)) return 0;
        if (x->n_options != y->n_options) return 0;
        for (int o = 0; o < x->n_options; o++)
            if (strcmp(x->options[o].key, y->options[o].key) ||
                strcmp(x->options[o].value, y->options[o].value))
                return 0;
    }
    return 1;
}

int job_key_count(void) {
    return job_key_table_n + job_env_key_table_n + 1;
}

int job_key_info(int i, const char **name, char *expected, size_t n, const char **doc) {
    static const char *const env_names[] = {"envs.N.name", "envs.N.weight", "envs.N.split",
                                            "envs.N.max_steps", "envs.N.tasks"};
    if (i < 0 || i >= job_key_count()) return -1;
    if (i < job_key_table_n) {
        job_expected_text(&job_key_table[i], expected, n);
        *name = job_key_table[i].name;
        *doc = job_key_table[i].doc;
    } else if (i < job_key_table_n + job_env_key_table_n) {
        const job_key_def *k = &job_env_key_table[i - job_key_table_n];
        job_expected_text(k, expected, n);
        *name = env_names[i - job_key_table_n];
        *doc = k->doc;
    } else {
        snprintf(expected, n, "text (at most %d bytes)", JOB_OPTION_VALUE_LEN - 1);
        *name = "envs.N.options.KEY";
        *doc = "env-specific option, passed to the env as text";
    }
    return 0;
}

const char *job_enum_name(const char *key, int value, char *buf, size_t n) {
    const job_key_def *k = job_key_find(key);
    if (!k || k->type != JOB_K_ENUM || value < 0 || !n) return NULL;
    job_choice_name(k->choices, value, buf, n);
    return choice_index(k->choices, buf) == value ? buf : NULL;
}
