/* job.c — see job.h. One key table drives setting, printing, comparing and listing;
 * the YAML loader walks the document and hands every scalar to job_set. */
#define _GNU_SOURCE
#include "job.h"

#include "envs/env.h"

#include "skill_library.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

typedef enum {
    K_STR,      /* any text that fits */
    K_NAME,     /* letters, digits, '.', '_', '-'; not empty */
    K_HOST,     /* host name, IPv4/IPv6 address or '*' */
    K_WORD,     /* text that must be one of `choices` (stored as text) */
    K_INT,      /* int in [lo, hi] */
    K_U64,      /* uint64_t */
    K_DBL,      /* double, bounds per flags */
    K_DBL2,     /* double[2], each in bounds */
    K_BOOL,     /* int 0/1 */
    K_ENUM,     /* int: index into `choices` */
    K_ENDPOINT, /* "" or a ZeroMQ endpoint */
    K_CURVE,    /* "" or a Z85 key of 40 characters */
} key_type;

enum { LO_EXCL = 1, HI_EXCL = 2 };

typedef struct key_def {
    const char *name;
    key_type type;
    size_t off, size;
    double lo, hi;
    unsigned flags;
    const char *choices; /* "a|b|c" for K_ENUM and K_WORD */
    const char *doc;
} key_def;

#define FLD(f) offsetof(job_config, f), sizeof(((job_config *)0)->f)
#define EFLD(f) offsetof(job_env, f), sizeof(((job_env *)0)->f)
#define STR(n, f, doc)                                                                             \
    { n, K_STR, FLD(f), 0, 0, 0, NULL, doc }
#define NAME(n, f, doc)                                                                            \
    { n, K_NAME, FLD(f), 0, 0, 0, NULL, doc }
#define HOST(n, f, doc)                                                                            \
    { n, K_HOST, FLD(f), 0, 0, 0, NULL, doc }
#define INT(n, f, lo, hi, doc)                                                                     \
    { n, K_INT, FLD(f), lo, hi, 0, NULL, doc }
#define U64(n, f, doc)                                                                             \
    { n, K_U64, FLD(f), 0, 0, 0, NULL, doc }
#define DBL(n, f, lo, hi, fl, doc)                                                                 \
    { n, K_DBL, FLD(f), lo, hi, fl, NULL, doc }
#define DBL2(n, f, lo, hi, fl, doc)                                                                \
    { n, K_DBL2, FLD(f), lo, hi, fl, NULL, doc }
#define BOOL(n, f, doc)                                                                            \
    { n, K_BOOL, FLD(f), 0, 1, 0, NULL, doc }
#define ENUM(n, f, ch, doc)                                                                        \
    { n, K_ENUM, FLD(f), 0, 0, 0, ch, doc }
#define ENDP(n, f, doc)                                                                            \
    { n, K_ENDPOINT, FLD(f), 0, 0, 0, NULL, doc }
#define CURVE(n, f, doc)                                                                           \
    { n, K_CURVE, FLD(f), 0, 0, 0, NULL, doc }
#define BIG INT_MAX
#define INF HUGE_VAL

/* Every key but the env list, in the order job_to_yaml writes them. */
static const key_def KEYS[] = {
    NAME("job.name", job.name, "names the run; run_dir defaults to runs/<name>"),
    STR("job.run_dir", job.run_dir, "checkpoints, metrics.jsonl, logs; empty: runs/<job.name>"),
    U64("job.seed", job.seed, "seeds tasks, sampling and init"),
    INT("job.total_steps", job.total_steps, 0, BIG,
        "learner optimizer steps in stage 2; 0: stop after the warm start (stages 0 and 1)"),
    U64("job.max_env_steps", job.max_env_steps,
        "stop stage 2 once this many env steps of episodes have reached the learner "
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
    DBL("algorithm.c_opd", algorithm.c_opd, 0, INF, LO_EXCL, "clip bound of q-s"),
    DBL("algorithm.clip_eps", algorithm.clip_eps, 0, 1, LO_EXCL | HI_EXCL, "PPO ratio clip"),
    DBL("algorithm.dual_clip", algorithm.dual_clip, 0, INF, 0,
        "dual-clip constant for A<0; <= 1: off"),
    DBL("algorithm.kl_beta", algorithm.kl_beta, 0, INF, 0, "k3 KL weight to the reference policy"),
    DBL("algorithm.entropy_coef", algorithm.entropy_coef, 0, INF, 0, "entropy bonus weight"),
    ENUM("algorithm.opd_loss", algorithm.opd_loss, "none|delta|importance",
         "explicit OPD loss term"),
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
    STR("algorithm.skill_library", algorithm.skill_library,
        "fixed skill library file or directory of <env>.json (skill_prompt, static_skills); "
        "empty: the shipped deploy/skills"),

    DBL("optim.lr", optim.lr, 0, INF, LO_EXCL, "AdamW learning rate in stage 2"),
    DBL("optim.sft_lr", optim.sft_lr, 0, INF, LO_EXCL, "learning rate in stages 0 and 1"),
    DBL2("optim.betas", optim.betas, 0, 1, HI_EXCL, "AdamW betas"),
    DBL("optim.eps", optim.eps, 0, INF, LO_EXCL, "AdamW epsilon"),
    DBL("optim.weight_decay", optim.weight_decay, 0, INF, 0, "AdamW decoupled weight decay"),
    DBL("optim.max_grad_norm", optim.max_grad_norm, 0, INF, 0, "gradient clip norm; 0: off"),
    INT("optim.warmup_steps", optim.warmup_steps, 0, BIG, "linear learning-rate warmup steps"),
    ENUM("optim.schedule", optim.schedule, "constant|cosine",
         "learning-rate schedule after warmup"),
    INT("optim.tokens_per_step", optim.tokens_per_step, 1, BIG,
        "prompt + response tokens a step trains (the oldest queued groups until they reach it)"),
    INT("optim.micro_batch_tokens", optim.micro_batch_tokens, 1, BIG,
        "tokens per forward/backward pass; at least max prompt + max_new_tokens"),
    BOOL("optim.keep_sft_moments", optim.keep_sft_moments,
         "keep AdamW's stage 0/1 moments entering stage 2; false: reset them"),

    DBL("sampling.temperature", sampling.temperature, 0, INF, 0, "0: greedy"),
    DBL("sampling.top_p", sampling.top_p, 0, 1, LO_EXCL, "nucleus sampling; 1: off"),
    INT("sampling.top_k", sampling.top_k, 0, BIG, "0: off"),
    INT("sampling.max_new_tokens", sampling.max_new_tokens, 1, BIG, "response tokens per step"),
    INT("sampling.max_prompt_tokens", sampling.max_prompt_tokens, 0, BIG,
        "prompt tokens per step; 0: the model's context length"),

    INT("actor.episodes_in_flight", actor.episodes_in_flight, 1, 65536,
        "concurrent episodes per actor (decode batch)"),
    INT("actor.groups_in_flight", actor.groups_in_flight, 1, 65536,
        "groups an actor plays at once"),

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
    DBL("roles.stop_timeout_s", roles.stop_timeout_s, 0, INF, LO_EXCL,
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

    DBL("status.interval_s", status.interval_s, 0, INF, LO_EXCL,
        "metrics line and seedctl progress period"),
    INT("status.window", status.window, 1, BIG, "episodes in rolling success/return"),

    INT("eval.every", eval.every, 0, BIG,
        "RL steps between evaluations of the policy (also before the first and after the "
        "last step); 0: off"),
    INT("eval.episodes", eval.episodes, 1, 100000, "tasks per env in each evaluation"),
    {"eval.split", K_WORD, FLD(eval.split), 0, 0, 0, "train|seen|unseen",
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
enum { N_KEYS = (int)(sizeof KEYS / sizeof KEYS[0]) };

/* The fields of one env entry, relative to job_env; full keys are envs.N.<name>. */
static const key_def ENV_KEYS[] = {
    {"name", K_NAME, EFLD(name), 0, 0, 0, NULL, "env registry name"},
    {"weight", K_DBL, EFLD(weight), 0, INF, LO_EXCL, NULL, "share of tasks from this env"},
    {"split", K_WORD, EFLD(split), 0, 0, 0, "train|seen|unseen", "task split"},
    {"max_steps", K_INT, EFLD(max_steps), 0, BIG, 0, NULL, "steps per episode; 0: env default"},
};
enum { N_ENV_KEYS = (int)(sizeof ENV_KEYS / sizeof ENV_KEYS[0]) };

static const char *ENDPOINT_NAMES[6] = {"groups_in", "groups_out", "scored_in",
                                        "weights",   "telemetry",  "status"};

/* ---------- small text helpers ---------- */

static void copy_str(char *dst, size_t n, const char *src) {
    size_t l = strlen(src);
    if (l >= n) l = n - 1;
    memcpy(dst, src, l);
    memset(dst + l, 0, n - l); /* zero tail: two equal strings are equal bytes too */
}

/* A value quoted for an error sentence: at most 80 bytes. */
static const char *shown(const char *v, char *buf, size_t n) {
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

static const char *choice_name(const char *choices, int idx, char *buf, size_t n) {
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

static void bound_text(char *buf, size_t n, const key_def *k, int integer) {
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, "%g", k->lo);
    snprintf(hi, sizeof hi, "%g", k->hi);
    const char *what = integer ? "an integer" : "a number";
    int has_hi = integer ? k->hi < (double)INT_MAX : isfinite(k->hi);
    int has_lo = isfinite(k->lo);
    if (has_lo && has_hi)
        snprintf(buf, n, "%s in %s%s, %s%s", what, (k->flags & LO_EXCL) ? "(" : "[", lo, hi,
                 (k->flags & HI_EXCL) ? ")" : "]");
    else if (has_lo)
        snprintf(buf, n, "%s %s %s", what, (k->flags & LO_EXCL) ? ">" : "\u2265", lo);
    else
        snprintf(buf, n, "%s", what);
}

/* "what was expected" for a key, as the error sentences and `--keys` show it. */
static void expected_text(const key_def *k, char *buf, size_t n) {
    switch (k->type) {
    case K_STR:
        snprintf(buf, n, "a string of at most %zu bytes", k->size - 1);
        break;
    case K_NAME:
        snprintf(buf, n, "a non-empty name of letters, digits, '.', '_' or '-' (at most %zu bytes)",
                 k->size - 1);
        break;
    case K_HOST:
        snprintf(buf, n, "a host name or IP address (or * to bind all)");
        break;
    case K_WORD:
    case K_ENUM:
        snprintf(buf, n, "one of %s", k->choices);
        break;
    case K_INT:
        bound_text(buf, n, k, 1);
        break;
    case K_U64:
        snprintf(buf, n, "an integer in [0, 18446744073709551615]");
        break;
    case K_DBL:
        bound_text(buf, n, k, 0);
        break;
    case K_DBL2: {
        char one[96];
        bound_text(one, sizeof one, k, 0);
        snprintf(buf, n, "two numbers like 0.9,0.999, each %s", one + 9 /* after "a number " */);
        break;
    }
    case K_BOOL:
        snprintf(buf, n, "true or false");
        break;
    case K_ENDPOINT:
        snprintf(buf, n,
                 "an endpoint tcp://HOST:PORT, ipc://PATH or inproc://NAME (empty: derived)");
        break;
    case K_CURVE:
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

static int in_bounds(const key_def *k, double v) {
    if (k->flags & LO_EXCL ? !(v > k->lo) : !(v >= k->lo)) return 0;
    if (k->flags & HI_EXCL ? !(v < k->hi) : !(v <= k->hi)) return 0;
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

static int bad_value(const key_def *k, const char *key, const char *value, char *err,
                     size_t errlen) {
    char exp[256], sbuf[96];
    expected_text(k, exp, sizeof exp);
    return seed_errf(err, errlen, "%s: expected %s, got '%s'", key, exp,
                     shown(value, sbuf, sizeof sbuf));
}

/* Parse value for key definition k into the struct at base. */
static int set_field(const key_def *k, void *base, const char *key, const char *value, char *err,
                     size_t errlen) {
    char *p = (char *)base + k->off;
    switch (k->type) {
    case K_STR:
    case K_NAME:
    case K_HOST:
    case K_WORD:
    case K_ENDPOINT:
    case K_CURVE: {
        if (strlen(value) >= k->size) {
            char exp[256];
            expected_text(k, exp, sizeof exp);
            return seed_errf(err, errlen, "%s: expected %s, got %zu bytes", key, exp,
                             strlen(value));
        }
        int ok = k->type == K_STR        ? 1
                 : k->type == K_NAME     ? valid_name(value)
                 : k->type == K_HOST     ? valid_host(value) || !*value
                 : k->type == K_WORD     ? choice_index(k->choices, value) >= 0
                 : k->type == K_ENDPOINT ? valid_endpoint(value)
                                         : valid_curve(value);
        /* endpoints.host may not be empty: peers need somewhere to connect */
        if (k->type == K_HOST && !*value && !strcmp(key, "endpoints.host")) ok = 0;
        if (!ok) return bad_value(k, key, value, err, errlen);
        copy_str(p, k->size, value);
        return 0;
    }
    case K_INT: {
        long long v;
        if (parse_int64(value, &v) || v < (long long)k->lo || v > (long long)k->hi)
            return bad_value(k, key, value, err, errlen);
        *(int *)p = (int)v;
        return 0;
    }
    case K_U64: {
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
    case K_DBL: {
        double v;
        if (parse_double(value, &v) || !in_bounds(k, v))
            return bad_value(k, key, value, err, errlen);
        *(double *)p = v;
        return 0;
    }
    case K_DBL2: {
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
    case K_BOOL: {
        int v;
        if (parse_bool(value, &v)) return bad_value(k, key, value, err, errlen);
        *(int *)p = v;
        return 0;
    }
    case K_ENUM: {
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

static const key_def *find_key(const char *name) {
    for (int i = 0; i < N_KEYS; i++)
        if (!strcmp(KEYS[i].name, name)) return &KEYS[i];
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
static const char *suggest(const char *name, int section, char *buf, size_t n) {
    int best = 99;
    const char *dot = strrchr(name, '.');
    const char *last = dot ? dot + 1 : name;
    buf[0] = 0;
    for (int i = 0; i < N_KEYS; i++) {
        char cand[128];
        if (section) {
            snprintf(cand, sizeof cand, "%.*s", (int)(strchr(KEYS[i].name, '.') - KEYS[i].name),
                     KEYS[i].name);
        } else {
            snprintf(cand, sizeof cand, "%s", KEYS[i].name);
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

static int unknown_key(const char *key, char *err, size_t errlen) {
    char sug[128];
    const char *s = suggest(key, 0, sug, sizeof sug);
    if (s) return seed_errf(err, errlen, "%s: unknown key (did you mean %s?)", key, s);
    return seed_errf(err, errlen, "%s: unknown key (`seedctl config --keys` lists them)", key);
}

/* ---------- env entries ---------- */

static void env_entry_defaults(job_env *e, const char *name) {
    memset(e, 0, sizeof *e);
    copy_str(e->name, sizeof e->name, name);
    e->weight = 1.0;
    copy_str(e->split, sizeof e->split, "train");
    e->max_steps = 0;
}

static int env_option_set(job_env *e, const char *key, const char *okey, const char *value,
                          char *err, size_t errlen) {
    char sbuf[96];
    if (!valid_name(okey) || strchr(okey, '.') || strlen(okey) >= JOB_OPTION_KEY_LEN)
        return seed_errf(err, errlen,
                         "%s: expected an option name of letters, digits, '_' or '-' (at most %d "
                         "bytes), got '%s'",
                         key, JOB_OPTION_KEY_LEN - 1, shown(okey, sbuf, sizeof sbuf));
    if (strlen(value) >= JOB_OPTION_VALUE_LEN)
        return seed_errf(err, errlen, "%s: expected a value of at most %d bytes, got %zu bytes",
                         key, JOB_OPTION_VALUE_LEN - 1, strlen(value));
    for (int i = 0; i < e->n_options; i++)
        if (!strcmp(e->options[i].key, okey)) {
            copy_str(e->options[i].value, JOB_OPTION_VALUE_LEN, value);
            return 0;
        }
    if (e->n_options >= JOB_MAX_ENV_OPTIONS)
        return seed_errf(err, errlen, "%s: too many options for env '%s' (at most %d)", key,
                         e->name, JOB_MAX_ENV_OPTIONS);
    job_option *o = &e->options[e->n_options++];
    copy_str(o->key, JOB_OPTION_KEY_LEN, okey);
    copy_str(o->value, JOB_OPTION_VALUE_LEN, value);
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
                                 shown(value, sbuf, sizeof sbuf));
            if (tmp.n_envs >= JOB_MAX_ENVS)
                return seed_errf(err, errlen, "envs: at most %d envs, got more in '%s'",
                                 JOB_MAX_ENVS, shown(value, sbuf, sizeof sbuf));
            env_entry_defaults(&tmp.envs[tmp.n_envs++], name);
        }
        if (tmp.n_envs == 0)
            return seed_errf(err, errlen,
                             "envs: expected a comma-separated list of env names, got '%s'",
                             shown(value, sbuf, sizeof sbuf));
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
                         "envs.N.split, envs.N.max_steps, envs.N.options.KEY)",
                         key);
    if (idx > job->n_envs || idx >= JOB_MAX_ENVS)
        return seed_errf(err, errlen,
                         "%s: expected an env index in [0, %d] (there are %d entries; the next "
                         "index appends one), got %ld",
                         key, SEED_MIN(job->n_envs, JOB_MAX_ENVS - 1), job->n_envs, idx);
    if (*end == 0)
        return seed_errf(err, errlen,
                         "%s: expected a field: envs.%ld.name, .weight, .split, "
                         ".max_steps or .options.KEY",
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
        const key_def *k = NULL;
        for (int i = 0; i < N_ENV_KEYS; i++)
            if (!strcmp(ENV_KEYS[i].name, field)) k = &ENV_KEYS[i];
        if (!k)
            return seed_errf(err, errlen,
                             "%s: unknown key (env keys are envs.N.name, "
                             "envs.N.weight, envs.N.split, envs.N.max_steps, "
                             "envs.N.options.KEY)",
                             key);
        char old_name[JOB_NAME_LEN];
        copy_str(old_name, sizeof old_name, e->name);
        rc = set_field(k, e, key, value, err, errlen);
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
    copy_str(job->job.name, sizeof job->job.name, "seed-default");
    job->job.seed = 1;
    job->job.total_steps = 40;
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
    job->algorithm.gigpo_coef = 0.0;
    job->algorithm.gigpo_gamma = 0.95;
    job->algorithm.max_staleness = 1;
    job->algorithm.stage0_steps = 0; /* the shipped agent is warm-started already */
    job->algorithm.stage1_steps = 0;

    job->optim.lr = 5e-5;
    job->optim.sft_lr = 1e-3;
    job->optim.betas[0] = 0.9;
    job->optim.betas[1] = 0.999;
    job->optim.eps = 1e-8;
    job->optim.weight_decay = 0.0;
    job->optim.max_grad_norm = 1.0;
    job->optim.warmup_steps = 0;
    job->optim.schedule = JOB_SCHEDULE_CONSTANT;
    job->optim.tokens_per_step = 8192;
    job->optim.micro_batch_tokens = 4096;
    job->optim.keep_sft_moments = 0;

    job->sampling.temperature = 1.0;
    job->sampling.top_p = 1.0;
    job->sampling.top_k = 0;
    job->sampling.max_new_tokens = 64;
    job->sampling.max_prompt_tokens = 0;

    job->actor.episodes_in_flight = 16;
    job->actor.groups_in_flight = 2;

    job->analyzer.skill_source = JOB_SKILL_SELF;
    copy_str(job->analyzer.http_api_key_env, sizeof job->analyzer.http_api_key_env,
             "OPENAI_API_KEY");
    job->analyzer.http_timeout_ms = 60000;
    job->analyzer.http_retries = 3;
    job->analyzer.http_backoff_ms = 500;
    job->analyzer.max_skill_tokens = 128;
    job->analyzer.max_step_skills = 5;
    job->analyzer.batch_tokens = 8192;

    copy_str(job->endpoints.host, sizeof job->endpoints.host, "127.0.0.1");
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
    job->status.window = 256;
    job->eval.every = 10;
    job->eval.episodes = 32;
    copy_str(job->eval.split, sizeof job->eval.split, "unseen");
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
    const key_def *k = find_key(key);
    if (!k) return unknown_key(key, err, errlen);
    return set_field(k, job, key, value, err, errlen);
}

int job_set_arg(job_config *job, const char *arg, char *err, size_t errlen) {
    const char *eq = strchr(arg, '=');
    char sbuf[96];
    if (!eq || eq == arg)
        return seed_errf(err, errlen,
                         "'%s': expected an override key=value, like "
                         "algorithm.group_size=8",
                         shown(arg, sbuf, sizeof sbuf));
    char key[256];
    if ((size_t)(eq - arg) >= sizeof key)
        return seed_errf(err, errlen, "'%s': key too long", shown(arg, sbuf, sizeof sbuf));
    snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
    return job_set(job, key, eq + 1, err, errlen);
}

/* ---------- YAML loading ---------- */

typedef struct yaml_ctx {
    yaml_document_t *doc;
    job_config *job;
    const char *name; /* file name for messages */
    char *err;
    size_t errlen;
} yaml_ctx;

static const char *node_kind(yaml_node_t *n) {
    return n->type == YAML_MAPPING_NODE    ? "a mapping"
           : n->type == YAML_SEQUENCE_NODE ? "a list"
                                           : "a scalar";
}

/* Prefix "FILE:LINE: " to the sentence job_set left in err. */
static int at_line(yaml_ctx *c, yaml_node_t *n, int rc) {
    if (rc && c->err && c->errlen) {
        char tmp[SEED_ERRLEN];
        snprintf(tmp, sizeof tmp, "%s", c->err);
        snprintf(c->err, c->errlen, "%s:%zu: %s", c->name, n->start_mark.line + 1, tmp);
    }
    return rc;
}

static const char *scalar_text(yaml_node_t *n) {
    const char *v = (const char *)n->data.scalar.value;
    /* plain null spellings mean "empty" (a string key set to nothing) */
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL")))
        return "";
    return v;
}

/* Is `prefix` a section that holds keys ("algorithm", "envs.0", "envs.0.options")? */
static int is_section(const char *prefix) {
    size_t l = strlen(prefix);
    for (int i = 0; i < N_KEYS; i++)
        if (!strncmp(KEYS[i].name, prefix, l) && KEYS[i].name[l] == '.') return 1;
    if (!strncmp(prefix, "envs.", 5)) {
        const char *p = prefix + 5;
        if (!isdigit((unsigned char)*p)) return 0;
        while (isdigit((unsigned char)*p)) p++;
        return *p == 0 || !strcmp(p, ".options");
    }
    return 0;
}

static int load_value(yaml_ctx *c, const char *full, yaml_node_t *v);

static int load_mapping(yaml_ctx *c, yaml_node_t *map, const char *prefix) {
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(c->doc, pr->value);
        if (k->type != YAML_SCALAR_NODE)
            return at_line(c, k,
                           seed_errf(c->err, c->errlen, "%s%sexpected a key name, got %s", prefix,
                                     *prefix ? ": " : "", node_kind(k)));
        const char *kt = (const char *)k->data.scalar.value;
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < pr; q++) {
            yaml_node_t *qk = yaml_document_get_node(c->doc, q->key);
            if (qk->type == YAML_SCALAR_NODE && !strcmp((const char *)qk->data.scalar.value, kt))
                return at_line(c, k,
                               seed_errf(c->err, c->errlen, "%s%s%s: set twice (first on line %zu)",
                                         prefix, *prefix ? "." : "", kt, qk->start_mark.line + 1));
        }
        char full[512];
        if (snprintf(full, sizeof full, "%s%s%s", prefix, *prefix ? "." : "", kt) >=
            (int)sizeof full)
            return at_line(c, k, seed_errf(c->err, c->errlen, "%.64s...: key too long", full));
        int rc = load_value(c, full, v);
        if (rc) return rc;
    }
    return 0;
}

static int load_value(yaml_ctx *c, const char *full, yaml_node_t *v) {
    const key_def *k = find_key(full);
    if (v->type == YAML_SCALAR_NODE) {
        if (!k && is_section(full) && !*scalar_text(v)) return 0; /* "algorithm:" alone */
        /* a list in a file ("envs: 5" is not one; "envs=a,b" is the command line's form) */
        char sbuf[96];
        if (!strcmp(full, "envs") && *scalar_text(v))
            return at_line(c, v,
                           seed_errf(c->err, c->errlen,
                                     "envs: expected a list of env entries (- name: sokoban "
                                     "...), got '%s'",
                                     shown(scalar_text(v), sbuf, sizeof sbuf)));
        if (!k && is_section(full))
            return at_line(c, v,
                           seed_errf(c->err, c->errlen,
                                     "%s: expected a mapping of %s.* keys, got '%s'", full, full,
                                     scalar_text(v)));
        return at_line(c, v, job_set(c->job, full, scalar_text(v), c->err, c->errlen)) ? -1 : 0;
    }
    if (v->type == YAML_MAPPING_NODE) {
        if (!strcmp(full, "envs"))
            return at_line(c, v,
                           seed_errf(c->err, c->errlen,
                                     "envs: expected a list of env entries (- name: "
                                     "sokoban ...), got a mapping"));
        if (k) {
            char exp[256];
            expected_text(k, exp, sizeof exp);
            return at_line(
                c, v, seed_errf(c->err, c->errlen, "%s: expected %s, got a mapping", full, exp));
        }
        if (!strncmp(full, "envs.", 5) && strstr(full, ".options."))
            return at_line(c, v,
                           seed_errf(c->err, c->errlen,
                                     "%s: expected a text value (options reach the env as "
                                     "text), got a mapping",
                                     full));
        if (!is_section(full)) {
            if (!strchr(full, '.')) {
                char sug[128];
                const char *s = suggest(full, 1, sug, sizeof sug);
                return at_line(c, v,
                               seed_errf(c->err, c->errlen, "%s: unknown section%s%s%s", full,
                                         s ? " (did you mean " : "", s ? s : "", s ? "?)" : ""));
            }
            return at_line(c, v, unknown_key(full, c->err, c->errlen));
        }
        return load_mapping(c, v, full);
    }
    /* a list */
    int n = (int)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (!strncmp(full, "envs.", 5) && strstr(full, ".options."))
        return at_line(c, v,
                       seed_errf(c->err, c->errlen,
                                 "%s: expected a text value (options reach the env as text), "
                                 "got a list",
                                 full));
    if (!strcmp(full, "envs")) {
        c->job->n_envs = 0; /* a list in the file replaces the list */
        for (int i = 0; i < n; i++) {
            yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
            char pre[32];
            snprintf(pre, sizeof pre, "envs.%d", i);
            int rc;
            if (it->type == YAML_SCALAR_NODE) { /* "- sokoban": a name alone */
                char key[48];
                snprintf(key, sizeof key, "%s.name", pre);
                rc = at_line(c, it, job_set(c->job, key, scalar_text(it), c->err, c->errlen));
            } else if (it->type == YAML_MAPPING_NODE) {
                rc = load_mapping(c, it, pre);
            } else {
                rc = at_line(c, it,
                             seed_errf(c->err, c->errlen,
                                       "%s: expected an env entry (a mapping), got a list", pre));
            }
            if (rc) return rc;
            if (c->job->n_envs != i + 1 || !c->job->envs[i].name[0])
                return at_line(
                    c, it, seed_errf(c->err, c->errlen, "%s.name: an env entry needs a name", pre));
        }
        return 0;
    }
    if (k && k->type == K_DBL2) {
        char joined[256] = "";
        for (int i = 0; i < n; i++) {
            yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
            if (it->type != YAML_SCALAR_NODE)
                return at_line(c, it,
                               seed_errf(c->err, c->errlen, "%s: expected numbers, got %s", full,
                                         node_kind(it)));
            size_t l = strlen(joined);
            snprintf(joined + l, sizeof joined - l, "%s%s", i ? "," : "", scalar_text(it));
        }
        return at_line(c, v, job_set(c->job, full, joined, c->err, c->errlen)) ? -1 : 0;
    }
    if (k) {
        char exp[256];
        expected_text(k, exp, sizeof exp);
        return at_line(c, v,
                       seed_errf(c->err, c->errlen, "%s: expected %s, got a list", full, exp));
    }
    if (is_section(full))
        return at_line(c, v,
                       seed_errf(c->err, c->errlen,
                                 "%s: expected a mapping of %s.* keys, got a list", full, full));
    return at_line(c, v, unknown_key(full, c->err, c->errlen));
}

int job_load_string(job_config *job, const char *text, size_t len, const char *name, char *err,
                    size_t errlen) {
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return seed_errf(err, errlen, "%s: cannot initialize the YAML parser", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = seed_errf(err, errlen, "%s:%zu: YAML syntax error: %s%s%s (column %zu)", name,
                           parser.problem_mark.line + 1, parser.problem ? parser.problem : "?",
                           parser.context ? ", " : "", parser.context ? parser.context : "",
                           parser.problem_mark.column + 1);
        yaml_parser_delete(&parser);
        return rc;
    }
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) {                 /* an empty file changes nothing */
        job_config work = *job; /* all or nothing: a failing file leaves *job as it was */
        yaml_ctx c = {&doc, &work, name, err, errlen};
        if (root->type != YAML_MAPPING_NODE)
            rc = at_line(&c, root,
                         seed_errf(err, errlen,
                                   "expected a mapping of sections (job:, model:, "
                                   "...) at the top, got %s",
                                   node_kind(root)));
        else
            rc = load_mapping(&c, root, "");
        if (!rc) {
            yaml_document_t more;
            if (!yaml_parser_load(&parser, &more)) {
                rc = seed_errf(err, errlen, "%s:%zu: YAML syntax error: %s (column %zu)", name,
                               parser.problem_mark.line + 1, parser.problem ? parser.problem : "?",
                               parser.problem_mark.column + 1);
            } else {
                if (yaml_document_get_root_node(&more))
                    rc = seed_errf(err, errlen,
                                   "%s:%zu: expected one YAML document, found a second one", name,
                                   more.start_mark.line + 1);
                yaml_document_delete(&more);
            }
        }
        if (!rc) *job = work;
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

int job_load_file(job_config *job, const char *path, char *err, size_t errlen) {
    char *text;
    size_t len;
    if (seed_read_file(path, &text, &len, err, errlen)) return -1;
    int rc = job_load_string(job, text, len, path, err, errlen);
    free(text);
    return rc;
}

/* ---------- resolve ---------- */

int job_endpoint(const job_config *job, const char *name, int bind, char *buf, size_t buflen,
                 char *err, size_t errlen) {
    int idx = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(ENDPOINT_NAMES[i], name)) idx = i;
    if (idx < 0)
        return seed_errf(err, errlen,
                         "unknown endpoint '%s' (expected groups_in, groups_out, scored_in, "
                         "weights, telemetry or status)",
                         name);
    const char *set = (const char *)job + offsetof(job_config, endpoints.groups_in) +
                      (size_t)idx * JOB_ENDPOINT_LEN;
    char ep[JOB_ENDPOINT_LEN + 32];
    if (set[0])
        snprintf(ep, sizeof ep, "%s", set);
    else
        snprintf(ep, sizeof ep, "tcp://%s:%d", job->endpoints.host, job->endpoints.base_port + idx);
    if (bind && job->endpoints.bind_host[0] && !strncmp(ep, "tcp://", 6)) {
        const char *colon = strrchr(ep + 6, ':');
        char port[16];
        snprintf(port, sizeof port, "%s", colon ? colon + 1 : "*");
        snprintf(ep, sizeof ep, "tcp://%s:%s", job->endpoints.bind_host, port);
    }
    if (strlen(ep) >= buflen)
        return seed_errf(err, errlen, "endpoints.%s: '%s' does not fit in %zu bytes", name, ep,
                         buflen);
    snprintf(buf, buflen, "%s", ep);
    return 0;
}

static int field_equal(const key_def *k, const void *a, const void *b);
static void fmt_value(const key_def *k, const void *base, char *buf, size_t n);

/* Keys a mode cannot honour (shared/ARCHITECTURE.md section 1). Set to anything but the
 * built-in default, or the neutral value resolution itself writes, they are an error:
 * a baseline must not silently run a different configuration than the one asked for. */
typedef struct mode_rule {
    const char *key;
    unsigned modes;      /* bit (1 << job_mode) for each mode that ignores the key */
    const char *neutral; /* what resolution writes in those modes, or NULL */
    const char *why;
    int (*honoured)(const job_config *job); /* NULL, or 1 where the key is read anyway */
} mode_rule;

/* Stage 1 takes its skill labels from the endpoint in every mode (learner/warmstart.c). */
static int http_labels_stage1(const job_config *job) {
    return job->analyzer.skill_source == JOB_SKILL_HTTP && job->algorithm.stage1_steps > 0;
}

#define MODE_BIT(m) (1u << JOB_MODE_##m)
static const mode_rule MODE_RULES[] = {
    {"algorithm.w_opd", MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT), "0",
     "the mode has no distillation term", NULL},
    {"algorithm.c_opd", MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT), NULL,
     "the mode has no distillation term", NULL},
    {"algorithm.opd_loss", MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT), "none",
     "the mode has no distillation term", NULL},
    {"algorithm.opd_loss_coef", MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT), "0",
     "the mode has no distillation term", NULL},
    {"algorithm.skill_library", MODE_BIT(SEED) | MODE_BIT(GRPO), NULL,
     "only skill_prompt and static_skills read a skill library", NULL},
    {"analyzer.skill_source", MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT), NULL,
     "the analyzer writes no skills in this mode (stage 1 reads only http)", http_labels_stage1},
    {"analyzer.skill_source", MODE_BIT(STATIC_SKILLS), NULL,
     "the skill library takes the place of written skills (stage 1 reads only http)",
     http_labels_stage1},
    {"analyzer.max_step_skills", MODE_BIT(GRPO), NULL, "the mode uses no skills", NULL},
};

static int check_mode_keys(job_config *job, char *err, size_t errlen) {
    job_config *def = malloc(sizeof *def), *neu = malloc(sizeof *neu);
    if (!def || !neu) {
        free(def);
        free(neu);
        return seed_errf(err, errlen, "out of memory checking the job");
    }
    job_defaults(def);
    char mode[32], val[JOB_PATH_LEN + 8], dval[64];
    choice_name(find_key("algorithm.mode")->choices, job->algorithm.mode, mode, sizeof mode);
    int rc = 0;
    for (size_t i = 0; i < sizeof MODE_RULES / sizeof MODE_RULES[0] && !rc; i++) {
        const mode_rule *r = &MODE_RULES[i];
        if (!(r->modes & (1u << job->algorithm.mode)) || (r->honoured && r->honoured(job)))
            continue;
        const key_def *k = find_key(r->key);
        if (field_equal(k, job, def)) continue;
        *neu = *def;
        if (r->neutral && set_field(k, neu, r->key, r->neutral, NULL, 0) == 0 &&
            field_equal(k, job, neu))
            continue;
        fmt_value(k, job, val, sizeof val);
        fmt_value(k, def, dval, sizeof dval);
        rc = seed_errf(err, errlen,
                       "%s: '%s' cannot be honoured in algorithm.mode %s: %s (expected the "
                       "default%s%s%s%s)",
                       r->key, val, mode, r->why, dval[0] ? " " : ", empty", dval,
                       r->neutral ? " or " : "", r->neutral ? r->neutral : "");
    }
    if (!rc && job->algorithm.opd_loss == JOB_OPD_NONE && job->algorithm.opd_loss_coef != 0.0) {
        fmt_value(find_key("algorithm.opd_loss_coef"), job, val, sizeof val);
        rc = seed_errf(err, errlen,
                       "algorithm.opd_loss_coef: '%s' cannot be honoured with algorithm.opd_loss "
                       "none (expected 0, or opd_loss delta or importance)",
                       val);
    }
    free(def);
    free(neu);
    return rc;
}

/* Hosts only this machine reaches: 127.0.0.0/8, ::1, localhost and the loopback device. */
static int loopback_host(const char *h) {
    return !strncmp(h, "127.", 4) || !strcmp(h, "localhost") || !strcmp(h, "::1") ||
           !strcmp(h, "[::1]") || !strcmp(h, "lo");
}

/* Safe network defaults (docs/DESIGN.md, "Threat model"): an endpoint bound beyond loopback
 * without CURVE keys lets anyone who reaches it read the weights and feed the training, so
 * it is refused unless endpoints.insecure says so. A job with a key pair and no server key
 * is one key pair shared by every role: its clients trust curve_public. */
static int check_bind_security(job_config *job, char *err, size_t errlen) {
    int curve = job->endpoints.curve_secret[0] != 0;
    if (job->endpoints.curve_allowed_keys[0] && !curve)
        return seed_errf(err, errlen,
                         "endpoints.curve_allowed_keys: '%s' needs the learner's key pair "
                         "(endpoints.curve_public and endpoints.curve_secret): without CURVE no "
                         "key is checked",
                         job->endpoints.curve_allowed_keys);
    if (curve && !job->endpoints.curve_server_key[0])
        copy_str(job->endpoints.curve_server_key, sizeof job->endpoints.curve_server_key,
                 job->endpoints.curve_public);
    if (curve || job->endpoints.insecure) return 0;
    for (int i = 0; i < 6; i++) {
        char ep[JOB_ENDPOINT_LEN], derived[JOB_ENDPOINT_LEN + 32], host[JOB_ENDPOINT_LEN];
        if (job_endpoint(job, ENDPOINT_NAMES[i], 1, ep, sizeof ep, err, errlen)) return -1;
        if (strncmp(ep, "tcp://", 6)) continue; /* ipc, inproc: this machine only */
        const char *hp = ep + 6, *colon = strrchr(hp, ':');
        snprintf(host, sizeof host, "%.*s", (int)(colon ? (size_t)(colon - hp) : strlen(hp)), hp);
        if (loopback_host(host)) continue;
        /* name the key the operator wrote */
        snprintf(derived, sizeof derived, "tcp://%s:%d", job->endpoints.host,
                 job->endpoints.base_port + i);
        const char *slot =
            (char *)job + offsetof(job_config, endpoints.groups_in) + (size_t)i * JOB_ENDPOINT_LEN;
        char key[64];
        if (job->endpoints.bind_host[0])
            snprintf(key, sizeof key, "endpoints.bind_host");
        else if (!slot[0] || !strcmp(slot, derived))
            snprintf(key, sizeof key, "endpoints.host");
        else
            snprintf(key, sizeof key, "endpoints.%s", ENDPOINT_NAMES[i]);
        return seed_errf(err, errlen,
                         "%s: binding '%s' (%s) beyond loopback without CURVE keys is refused: "
                         "anyone who reaches it could read the weights and feed the training. "
                         "Set endpoints.curve_public and endpoints.curve_secret (`seedctl keygen "
                         "NAME` writes a pair), or endpoints.insecure: true to accept the risk",
                         key, host, ep);
    }
    return 0;
}

int job_resolve(job_config *job, char *err, size_t errlen) {
    char tmp[JOB_PATH_LEN + 64];
    if (!job->job.run_dir[0]) {
        snprintf(tmp, sizeof tmp, "runs/%s", job->job.name);
        if (strlen(tmp) >= sizeof job->job.run_dir)
            return seed_errf(err, errlen, "job.run_dir: 'runs/%s' is too long", job->job.name);
        copy_str(job->job.run_dir, sizeof job->job.run_dir, tmp);
    }
    if (!job->checkpoint.dir[0]) {
        snprintf(tmp, sizeof tmp, "%s/ckpt", job->job.run_dir);
        if (strlen(tmp) >= sizeof job->checkpoint.dir)
            return seed_errf(err, errlen, "checkpoint.dir: '%s' is too long", tmp);
        copy_str(job->checkpoint.dir, sizeof job->checkpoint.dir, tmp);
    }
    if (!job->model.path[0]) {
        /* not found stays empty; job_find_default_model names where it looked */
        char p[JOB_PATH_LEN];
        if (job_find_default_model(p, sizeof p, NULL, 0) == 0)
            copy_str(job->model.path, sizeof job->model.path, p);
    }
    for (int i = 0; i < 6; i++) {
        char *slot =
            (char *)job + offsetof(job_config, endpoints.groups_in) + (size_t)i * JOB_ENDPOINT_LEN;
        if (!slot[0] &&
            job_endpoint(job, ENDPOINT_NAMES[i], 0, slot, JOB_ENDPOINT_LEN, err, errlen))
            return -1;
    }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < i; j++) {
            const char *a = (char *)job + offsetof(job_config, endpoints.groups_in) +
                            (size_t)i * JOB_ENDPOINT_LEN;
            const char *b = (char *)job + offsetof(job_config, endpoints.groups_in) +
                            (size_t)j * JOB_ENDPOINT_LEN;
            if (!strcmp(a, b))
                return seed_errf(err, errlen,
                                 "endpoints.%s: expected an endpoint of its own, got "
                                 "'%s', the same as endpoints.%s",
                                 ENDPOINT_NAMES[i], a, ENDPOINT_NAMES[j]);
        }
    /* the learner binds /metrics on the same host as its tcp endpoints */
    for (int i = 0; i < 6 && job->endpoints.metrics_port > 0; i++) {
        const char *ep =
            (char *)job + offsetof(job_config, endpoints.groups_in) + (size_t)i * JOB_ENDPOINT_LEN;
        const char *colon = strrchr(ep, ':');
        if (!strncmp(ep, "tcp://", 6) && colon && atoi(colon + 1) == job->endpoints.metrics_port)
            return seed_errf(err, errlen,
                             "endpoints.metrics_port: expected a port of its own, got %d, the "
                             "port of endpoints.%s (%s)",
                             job->endpoints.metrics_port, ENDPOINT_NAMES[i], ep);
    }
    if (check_mode_keys(job, err, errlen)) return -1;
    if ((job->algorithm.mode == JOB_MODE_SKILL_PROMPT ||
         job->algorithm.mode == JOB_MODE_STATIC_SKILLS))
        job_default_skill_library(job);
    if (job->algorithm.mode == JOB_MODE_GRPO || job->algorithm.mode == JOB_MODE_SKILL_PROMPT) {
        /* these modes have no distillation signal: say so in the effective config */
        job->algorithm.w_opd = 0.0;
        job->algorithm.opd_loss = JOB_OPD_NONE;
        job->algorithm.opd_loss_coef = 0.0;
    }
    if (job->n_envs < 1) return seed_errf(err, errlen, "envs: expected at least one env, got none");
    for (int i = 0; i < job->n_envs; i++) {
        if (!job->envs[i].name[0])
            return seed_errf(err, errlen, "envs.%d.name: an env entry needs a name", i);
        char sbuf[96];
        if (!env_lookup(job->envs[i].name))
            return seed_errf(err, errlen, "envs.%d.name: unknown env '%s' (known: %s)", i,
                             shown(job->envs[i].name, sbuf, sizeof sbuf), env_names());
    }
    if (job->optim.micro_batch_tokens > job->optim.tokens_per_step)
        return seed_errf(err, errlen,
                         "optim.micro_batch_tokens: expected at most optim.tokens_per_step (%d), "
                         "got %d",
                         job->optim.tokens_per_step, job->optim.micro_batch_tokens);
    /* a sample longer than a micro-batch is dropped, never cut: the longest step the
     * actor can send must fit (with max_prompt_tokens 0 the learner checks the model's
     * context length at start) */
    if (job->sampling.max_prompt_tokens > 0 &&
        job->optim.micro_batch_tokens <
            (int64_t)job->sampling.max_prompt_tokens + job->sampling.max_new_tokens)
        return seed_errf(err, errlen,
                         "optim.micro_batch_tokens: expected at least sampling.max_prompt_tokens "
                         "+ sampling.max_new_tokens (%d + %d), got %d",
                         job->sampling.max_prompt_tokens, job->sampling.max_new_tokens,
                         job->optim.micro_batch_tokens);
    if (job->analyzer.skill_source == JOB_SKILL_HTTP && !job->analyzer.http_endpoint[0])
        return seed_errf(err, errlen,
                         "analyzer.http_endpoint: expected a URL because "
                         "analyzer.skill_source is http, got ''");
    if (job->analyzer.skill_source == JOB_SKILL_HTTP &&
        strncmp(job->analyzer.http_endpoint, "http://", 7) != 0 &&
        strncmp(job->analyzer.http_endpoint, "https://", 8) != 0)
        return seed_errf(err, errlen,
                         "analyzer.http_endpoint: expected an http:// or https:// base URL "
                         "(e.g. http://127.0.0.1:8000/v1), got '%s'",
                         job->analyzer.http_endpoint);
    if (!job->endpoints.curve_public[0] != !job->endpoints.curve_secret[0])
        return seed_errf(err, errlen,
                         "endpoints.curve_%s: expected a key because "
                         "endpoints.curve_%s is set, got ''",
                         job->endpoints.curve_public[0] ? "secret" : "public",
                         job->endpoints.curve_public[0] ? "public" : "secret");
    if (check_bind_security(job, err, errlen)) return -1;
    if (job->roles.restart_backoff_max_s < job->roles.restart_backoff_s)
        return seed_errf(err, errlen,
                         "roles.restart_backoff_max_s: expected at least roles.restart_backoff_s "
                         "(%g), got %g",
                         job->roles.restart_backoff_s, job->roles.restart_backoff_max_s);
    if (job->wire.heartbeat_timeout_ms <= job->wire.heartbeat_ms)
        return seed_errf(err, errlen,
                         "wire.heartbeat_timeout_ms: expected more than wire.heartbeat_ms (%d), "
                         "got %d",
                         job->wire.heartbeat_ms, job->wire.heartbeat_timeout_ms);
    return 0;
}

int job_build(job_config *job, const char *path, int n_overrides, char *const *overrides, char *err,
              size_t errlen) {
    job_defaults(job);
    if (path && job_load_file(job, path, err, errlen)) return -1;
    for (int i = 0; i < n_overrides; i++) {
        if (job_set_arg(job, overrides[i], err, errlen)) {
            char tmp[SEED_ERRLEN];
            snprintf(tmp, sizeof tmp, "%s", err ? err : "");
            return seed_errf(err, errlen, "command line: %s", tmp);
        }
    }
    return job_resolve(job, err, errlen);
}

/* ---------- writing ---------- */

/* Plain text of a field's value (strings unquoted). */
static void fmt_value(const key_def *k, const void *base, char *buf, size_t n) {
    const char *p = (const char *)base + k->off;
    switch (k->type) {
    case K_STR:
    case K_NAME:
    case K_HOST:
    case K_WORD:
    case K_ENDPOINT:
    case K_CURVE:
        snprintf(buf, n, "%s", p);
        break;
    case K_INT:
        snprintf(buf, n, "%d", *(const int *)p);
        break;
    case K_U64:
        snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)p);
        break;
    case K_DBL:
        fmt_double(buf, n, *(const double *)p);
        break;
    case K_DBL2: {
        char a[32], b[32];
        fmt_double(a, sizeof a, ((const double *)p)[0]);
        fmt_double(b, sizeof b, ((const double *)p)[1]);
        snprintf(buf, n, "[%s, %s]", a, b);
        break;
    }
    case K_BOOL:
        snprintf(buf, n, "%s", *(const int *)p ? "true" : "false");
        break;
    case K_ENUM:
        choice_name(k->choices, *(const int *)p, buf, n);
        break;
    }
}

static int is_text(const key_def *k) {
    return k->type == K_STR || k->type == K_NAME || k->type == K_HOST || k->type == K_WORD ||
           k->type == K_ENDPOINT || k->type == K_CURVE;
}

/* A YAML double-quoted scalar. */
static void yaml_quoted(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void yaml_line(FILE *f, const char *lead, const char *leaf, const key_def *k,
                      const void *base, int comments) {
    char v[JOB_PATH_LEN + 64];
    fmt_value(k, base, v, sizeof v);
    char *line = NULL;
    size_t len = 0;
    FILE *lf = open_memstream(&line, &len);
    if (!lf) return;
    fprintf(lf, "%s%s: ", lead, leaf);
    if (is_text(k))
        yaml_quoted(lf, v);
    else
        fputs(v, lf);
    fclose(lf);
    if (comments && k->doc)
        fprintf(f, "%-44s # %s\n", line, k->doc);
    else
        fprintf(f, "%s\n", line);
    free(line);
}

static void yaml_envs(FILE *f, const job_config *job, int comments) {
    if (comments)
        fprintf(f, "%-44s # %s\n", "envs:", "one entry per env; options go to the env as text");
    else
        fprintf(f, "envs:\n");
    if (job->n_envs == 0) fprintf(f, "  []\n");
    for (int e = 0; e < job->n_envs; e++) {
        const job_env *ev = &job->envs[e];
        for (int j = 0; j < N_ENV_KEYS; j++)
            yaml_line(f, j == 0 ? "  - " : "    ", ENV_KEYS[j].name, &ENV_KEYS[j], ev,
                      comments && e == 0);
        fprintf(f, "    options:%s\n", ev->n_options ? "" : " {}");
        for (int o = 0; o < ev->n_options; o++) {
            fprintf(f, "      %s: ", ev->options[o].key);
            yaml_quoted(f, ev->options[o].value);
            fputc('\n', f);
        }
    }
}

char *job_to_yaml(const job_config *job, int flags) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    int comments = flags & JOB_YAML_COMMENTS;
    if (comments)
        fprintf(f, "# A seed job. Every key can be overridden on the command line as\n"
                   "# section.key=value (envs: envs.N.key=value); `seedctl config --keys` lists\n"
                   "# them with what each accepts, `seedctl config JOB.yaml` prints the\n"
                   "# effective config.\n");
    char section[64] = "";
    for (int i = 0; i < N_KEYS; i++) {
        const key_def *k = &KEYS[i];
        const char *dot = strchr(k->name, '.');
        size_t sl = (size_t)(dot - k->name);
        if (strlen(section) != sl || strncmp(section, k->name, sl)) {
            snprintf(section, sizeof section, "%.*s", (int)sl, k->name);
            if (!strcmp(section, "algorithm")) yaml_envs(f, job, comments); /* after model */
            fprintf(f, "%s:\n", section);
        }
        yaml_line(f, "  ", dot + 1, k, job, comments);
    }
    fclose(f);
    return out;
}

static void cjson_add(cJSON *obj, const char *leaf, const key_def *k, const void *base) {
    const char *p = (const char *)base + k->off;
    char v[JOB_PATH_LEN + 64];
    switch (k->type) {
    case K_INT:
        cJSON_AddNumberToObject(obj, leaf, *(const int *)p);
        break;
    case K_U64: {
        uint64_t u = *(const uint64_t *)p;
        if (u <= (1ull << 53)) {
            cJSON_AddNumberToObject(obj, leaf, (double)u);
        } else {
            fmt_value(k, base, v, sizeof v);
            cJSON_AddStringToObject(obj, leaf, v);
        }
        break;
    }
    case K_DBL:
        cJSON_AddNumberToObject(obj, leaf, *(const double *)p);
        break;
    case K_DBL2: {
        cJSON *a = cJSON_AddArrayToObject(obj, leaf);
        cJSON_AddItemToArray(a, cJSON_CreateNumber(((const double *)p)[0]));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(((const double *)p)[1]));
        break;
    }
    case K_BOOL:
        cJSON_AddBoolToObject(obj, leaf, *(const int *)p);
        break;
    case K_CURVE:
        /* status is readable by anyone who reaches the socket: never show a secret */
        if (!strcmp(leaf, "curve_secret") && *p)
            cJSON_AddStringToObject(obj, leaf, "(set)");
        else
            cJSON_AddStringToObject(obj, leaf, p);
        break;
    default:
        fmt_value(k, base, v, sizeof v);
        cJSON_AddStringToObject(obj, leaf, v);
    }
}

cJSON *job_to_cjson(const job_config *job) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    for (int i = 0; i < N_KEYS; i++) {
        const key_def *k = &KEYS[i];
        const char *dot = strchr(k->name, '.');
        char sec[64];
        snprintf(sec, sizeof sec, "%.*s", (int)(dot - k->name), k->name);
        cJSON *s = cJSON_GetObjectItemCaseSensitive(root, sec);
        if (!s) {
            if (!strcmp(sec, "algorithm")) {
                cJSON *arr = cJSON_AddArrayToObject(root, "envs");
                for (int e = 0; e < job->n_envs; e++) {
                    cJSON *eo = cJSON_CreateObject();
                    for (int j = 0; j < N_ENV_KEYS; j++)
                        cjson_add(eo, ENV_KEYS[j].name, &ENV_KEYS[j], &job->envs[e]);
                    cJSON *opts = cJSON_AddObjectToObject(eo, "options");
                    for (int o = 0; o < job->envs[e].n_options; o++)
                        cJSON_AddStringToObject(opts, job->envs[e].options[o].key,
                                                job->envs[e].options[o].value);
                    cJSON_AddItemToArray(arr, eo);
                }
            }
            s = cJSON_AddObjectToObject(root, sec);
        }
        cjson_add(s, dot + 1, k, job);
    }
    return root;
}

char *job_to_json(const job_config *job, int pretty) {
    cJSON *j = job_to_cjson(job);
    if (!j) return NULL;
    char *s = pretty ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* ---------- compare, list ---------- */

static int field_equal(const key_def *k, const void *a, const void *b) {
    const char *pa = (const char *)a + k->off, *pb = (const char *)b + k->off;
    if (is_text(k)) return strcmp(pa, pb) == 0;
    return memcmp(pa, pb, k->size) == 0;
}

int job_equal(const job_config *a, const job_config *b) {
    for (int i = 0; i < N_KEYS; i++)
        if (!field_equal(&KEYS[i], a, b)) return 0;
    if (a->n_envs != b->n_envs) return 0;
    for (int e = 0; e < a->n_envs; e++) {
        const job_env *x = &a->envs[e], *y = &b->envs[e];
        for (int j = 0; j < N_ENV_KEYS; j++)
            if (!field_equal(&ENV_KEYS[j], x, y)) return 0;
        if (x->n_options != y->n_options) return 0;
        for (int o = 0; o < x->n_options; o++)
            if (strcmp(x->options[o].key, y->options[o].key) ||
                strcmp(x->options[o].value, y->options[o].value))
                return 0;
    }
    return 1;
}

int job_key_count(void) {
    return N_KEYS + N_ENV_KEYS + 1;
}

int job_key_info(int i, const char **name, char *expected, size_t n, const char **doc) {
    static const char *const env_names[] = {"envs.N.name", "envs.N.weight", "envs.N.split",
                                            "envs.N.max_steps"};
    if (i < 0 || i >= job_key_count()) return -1;
    if (i < N_KEYS) {
        expected_text(&KEYS[i], expected, n);
        *name = KEYS[i].name;
        *doc = KEYS[i].doc;
    } else if (i < N_KEYS + N_ENV_KEYS) {
        const key_def *k = &ENV_KEYS[i - N_KEYS];
        expected_text(k, expected, n);
        *name = env_names[i - N_KEYS];
        *doc = k->doc;
    } else {
        snprintf(expected, n, "text (at most %d bytes)", JOB_OPTION_VALUE_LEN - 1);
        *name = "envs.N.options.KEY";
        *doc = "env-specific option, passed to the env as text";
    }
    return 0;
}

const char *job_enum_name(const char *key, int value, char *buf, size_t n) {
    const key_def *k = find_key(key);
    if (!k || k->type != K_ENUM || value < 0 || !n) return NULL;
    choice_name(k->choices, value, buf, n);
    return choice_index(k->choices, buf) == value ? buf : NULL;
}

/* ---------- finding the shipped agent ---------- */

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int job_find_default_model(char *buf, size_t buflen, char *err, size_t errlen) {
    char tmp[SEED_ERRLEN];
    if (job_find_shipped("models/agent", buf, buflen, tmp, sizeof tmp) == 0) return 0;
    return seed_errf(err, errlen, "model.path: %s; set model.path=DIR", tmp);
}

void job_default_skill_library(job_config *job) {
    if (job->algorithm.skill_library[0]) return;
    /* not found stays empty and the roles that read it say so (skill_lib_load_job) */
    char p[JOB_PATH_LEN];
    if (job_find_shipped("skills", p, sizeof p, NULL, 0) == 0)
        copy_str(job->algorithm.skill_library, sizeof job->algorithm.skill_library, p);
}

int job_find_shipped(const char *what, char *buf, size_t buflen, char *err, size_t errlen) {
    char cand[PATH_MAX + 64], dir[PATH_MAX];
    const char *home = getenv("SEED_HOME");
    if (home && *home) {
        snprintf(cand, sizeof cand, "%s/deploy/%s", home, what);
        if (is_dir(cand) && realpath(cand, dir)) goto found;
    }
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0)
        return seed_errf(err, errlen, "cannot find the executable's directory: %s",
                         strerror(errno));
    dir[n] = 0;
    char exe_dir[PATH_MAX];
    snprintf(exe_dir, sizeof exe_dir, "%s", dir);
    char *slash = strrchr(exe_dir, '/');
    if (slash) *slash = 0;
    char up[PATH_MAX];
    snprintf(up, sizeof up, "%s", exe_dir);
    for (;;) {
        static const char *subs[] = {"deploy", "share/seed"};
        for (int i = 0; i < 2; i++) {
            snprintf(cand, sizeof cand, "%s/%s/%s", up, subs[i], what);
            if (is_dir(cand) && realpath(cand, dir)) goto found;
        }
        slash = strrchr(up, '/');
        if (!slash) break;
        if (slash == up) {
            if (!up[1]) break;
            up[1] = 0; /* try "/" last */
        } else {
            *slash = 0;
        }
    }
    return seed_errf(err, errlen,
                     "nothing found (looked for deploy/%s and share/seed/%s above %s, and in "
                     "$SEED_HOME)",
                     what, what, exe_dir);
found:
    if (strlen(dir) >= buflen)
        return seed_errf(err, errlen, "'%s' does not fit in %zu bytes", dir, buflen);
    snprintf(buf, buflen, "%s", dir);
    return 0;
}

int job_env_kv(const job_env *je, env_kv *kv, char *num) {
    int n = 0;
    for (int i = 0; i < je->n_options; i++) {
        kv[n].key = je->options[i].key;
        kv[n].value = je->options[i].value;
        n++;
    }
    if (je->max_steps > 0) {
        snprintf(num, 16, "%d", je->max_steps);
        kv[n].key = "max_steps";
        kv[n].value = num;
        n++;
    }
    return n;
}

const job_env *job_env_find(const job_config *job, const char *name) {
    for (int i = 0; i < job->n_envs; i++)
        if (!strcmp(job->envs[i].name, name)) return &job->envs[i];
    return NULL;
}
