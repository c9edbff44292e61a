/* job.h — the job configuration every seed process reads: one YAML file on top of
 * built-in defaults, then `a.b=value` overrides from the command line.
 *
 * Contract:
 *  - job_defaults() is the embedded default job (the shipped agent, CPU, sokoban 6x6 with
 *    one box); deploy/jobs/default.yaml is the same job written out.
 *  - job_set() is the one place that knows every key: the YAML loader calls it for
 *    every scalar it reads, the command line calls it for every override. An unknown
 *    key, a bad value or a wrong type fails with one sentence that names the key, the
 *    value and what was expected; the YAML loader prefixes "FILE:LINE: ".
 *  - job_resolve() fills the derived fields (run_dir, checkpoint.dir, the six
 *    endpoints, model.path when the shipped agent is found, algorithm.skill_library
 *    in the modes that read one when the shipped deploy/skills is found), applies what a
 *    mode implies and checks the rules that span keys: a key the mode cannot honour, set
 *    to anything but its default (or the neutral value the mode writes, w_opd 0 in grpo),
 *    is an error naming the key, the mode and why. It is idempotent, so the effective
 *    config it leaves, written by job_to_yaml and loaded again, resolves to itself.
 *  - A job_config is plain data (fixed-size strings, no pointers): copy it with `=`,
 *    compare it with job_equal(). No function here keeps state between calls. */
#ifndef SEED_JOB_H
#define SEED_JOB_H

#include <stddef.h>
#include <stdint.h>

enum {
    JOB_NAME_LEN = 128,
    JOB_PATH_LEN = 1024,
    JOB_ENDPOINT_LEN = 256,
    JOB_MAX_ENVS = 16,
    JOB_MAX_ENV_OPTIONS = 16,
    JOB_OPTION_KEY_LEN = 64,
    JOB_OPTION_VALUE_LEN = 256,
};

/* Enum values are the positions of the names in the key table ("cpu|cuda" ...). */
typedef enum { JOB_BACKEND_CPU = 0, JOB_BACKEND_CUDA = 1 } job_backend;
typedef enum { JOB_INIT_LOAD = 0, JOB_INIT_RANDOM = 1 } job_init;
typedef enum { JOB_DTYPE_F32 = 0, JOB_DTYPE_BF16 = 1 } job_dtype;
typedef enum {
    JOB_MODE_SEED = 0,
    JOB_MODE_GRPO = 1,
    JOB_MODE_SKILL_PROMPT = 2,
    JOB_MODE_STATIC_SKILLS = 3
} job_mode;
/* Also the learner loss's own types (learner/loss.h): one definition for both. */
typedef enum { JOB_ADV_STD = 0, JOB_ADV_MEAN = 1 } job_adv_norm;
typedef enum { JOB_OPD_NONE = 0, JOB_OPD_DELTA = 1, JOB_OPD_IMPORTANCE = 2 } job_opd_loss;
/* Which response tokens carry q - s: the action text only, or every token of the reply. */
typedef enum {
    JOB_OPD_TOKENS_ACTION = 0,
    JOB_OPD_TOKENS_RESPONSE = 1,
    JOB_OPD_TOKENS_DECISION = 2
} job_opd_tokens;
/* What q - s is measured from: zero, or the mean q - s over the group's distilled tokens. */
typedef enum { JOB_OPD_BASELINE_NONE = 0, JOB_OPD_BASELINE_GROUP = 1 } job_opd_baseline;
typedef enum { JOB_OPD_EPISODES_ALL = 0, JOB_OPD_EPISODES_LOST = 1 } job_opd_episodes;
typedef enum { JOB_POOL_UNIFORM = 0, JOB_POOL_FRONTIER = 1 } job_pool_sampling;
/* How a step averages its per-token losses: over all its response tokens, or per episode
 * first (every episode weighs the same, however many steps and tokens it took). */
typedef enum { JOB_LOSS_AGG_EPISODE = 0, JOB_LOSS_AGG_TOKEN = 1 } job_loss_agg;
typedef enum { JOB_SKILL_SELF = 0, JOB_SKILL_ORACLE = 1, JOB_SKILL_HTTP = 2 } job_skill_source;
/* Who plays the episodes stage 1 labels (algorithm.stage1_episodes). */
typedef enum { JOB_S1_POLICY = 0, JOB_S1_EXPERT = 1 } job_stage1_episodes;
/* Who plays stage 0's episodes whose prompts carry the oracle's skill
 * (algorithm.stage0_skill_demos): the env's informed expert, which acts on what the skill
 * says (env_vtable.expert_informed), or the expert every episode plays. */
typedef enum { JOB_SKILL_DEMOS_INFORMED = 0, JOB_SKILL_DEMOS_EXPERT = 1 } job_skill_demos;
typedef enum { JOB_SCHEDULE_CONSTANT = 0, JOB_SCHEDULE_COSINE = 1 } job_schedule;
/* Same values as SEED_LOG_* (common/util.h). */
typedef enum {
    JOB_LOG_ERROR = 0,
    JOB_LOG_WARN = 1,
    JOB_LOG_INFO = 2,
    JOB_LOG_DEBUG = 3
} job_log_level;

/* One env-specific option, passed through to env_create as text. */
typedef struct job_option {
    char key[JOB_OPTION_KEY_LEN];
    char value[JOB_OPTION_VALUE_LEN];
} job_option;

typedef struct job_env {
    char name[JOB_NAME_LEN]; /* registry name: sokoban, ezpoints, household, ... */
    double weight;           /* share of the tasks sampled from this env (> 0) */
    char split[16];          /* train | seen | unseen */
    int max_steps;           /* 0: the env's default */
    int tasks;               /* > 0: a fixed pool of this many training tasks; 0: fresh ones */
    int n_options;
    job_option options[JOB_MAX_ENV_OPTIONS];
} job_env;

typedef struct job_config {
    struct {
        char name[JOB_NAME_LEN];
        char run_dir[JOB_PATH_LEN]; /* "" until resolved: runs/<name> */
        uint64_t seed;
        int total_steps;        /* learner optimizer steps in stage 2 */
        uint64_t max_env_steps; /* stop stage 2 once this many env steps were played; 0: off */
        int log_level;          /* job_log_level */
    } job;
    struct {
        char path[JOB_PATH_LEN]; /* "" until resolved: the shipped agent */
        int backend;             /* job_backend */
        int init;                /* job_init */
        int dtype;               /* job_dtype, of checkpoints */
        int threads;             /* 0: all cores */
    } model;
    int n_envs;
    job_env envs[JOB_MAX_ENVS];
    struct {
        int mode; /* job_mode */
        int group_size;
        int history;
        double invalid_penalty;
        int adv_norm; /* job_adv_norm */
        double w_opd;
        double c_opd;
        double clip_eps;
        double dual_clip; /* <= 1: off */
        double kl_beta;
        double entropy_coef;
        int opd_loss;     /* job_opd_loss */
        int opd_tokens;   /* job_opd_tokens */
        int opd_baseline; /* job_opd_baseline */
        int opd_episodes; /* job_opd_episodes */
        int loss_agg;     /* job_loss_agg */
        double opd_loss_coef;
        double gigpo_coef;  /* weight of GiGPO's step-level advantage (0: off) */
        double gigpo_gamma; /* discount of GiGPO's step returns */
        int max_staleness;
        int stage0_steps;                 /* warm start (behaviour cloning) steps; 0: skip */
        int stage1_steps;                 /* hindsight skill SFT steps; 0: skip */
        int stage1_episodes;              /* job_stage1_episodes */
        int stage0_samples_per_episode;   /* 0: every step of an expert episode */
        double stage0_expert_noise;       /* share of warm-start steps played off the expert */
        double stage0_step_skill_keep;    /* chance a skilled stage-0 prompt shows its step line */
        int stage0_skill_demos;           /* job_skill_demos */
        char skill_library[JOB_PATH_LEN]; /* skill_prompt / static_skills modes */
    } algorithm;
    struct {
        double lr;
        double sft_lr;            /* stages 0 and 1 */
        double sft_prompt_weight; /* stages 0 and 1: next-token loss on prompts (step.h) */
        double betas[2];
        double eps;
        double weight_decay;
        double max_grad_norm; /* 0: no clipping */
        int warmup_steps;
        int schedule;        /* job_schedule */
        int tokens_per_step; /* prompt + response tokens queued before a step starts */
        int groups_per_step; /* stage 2: scored groups a step trains; 0: tokens_per_step */
        int micro_batch_tokens;
        int keep_sft_moments; /* bool: keep the stage 0/1 AdamW moments in stage 2 */
        int share_prefix;     /* bool: pack shared prompt prefixes once (learner/step.h) */
    } optim;
    struct {
        double temperature;
        double top_p;
        int top_k; /* 0: off */
        int max_new_tokens;
        int max_prompt_tokens; /* 0: the model's context length */
    } sampling;
    struct {
        int episodes_in_flight;
        int groups_in_flight;
        int pool_sampling; /* job_pool_sampling: which task of a fixed pool is played next */
    } actor;
    struct {
        int skill_source; /* job_skill_source */
        char http_endpoint[JOB_ENDPOINT_LEN];
        char http_model[JOB_NAME_LEN];
        char http_api_key_env[JOB_NAME_LEN]; /* name of the env variable with the key */
        int http_timeout_ms;
        int http_retries;    /* attempts after the first */
        int http_backoff_ms; /* wait before the first retry; doubles per retry */
        int max_skill_tokens;
        double skill_temperature; /* the policy writing its self skills; 0: greedy */
        int max_step_skills;
        int batch_tokens;
    } analyzer;
    struct {
        char host[JOB_NAME_LEN];
        char bind_host[JOB_NAME_LEN]; /* "" : host */
        int base_port;
        /* "" until resolved: tcp://host:base_port+0..5 */
        char groups_in[JOB_ENDPOINT_LEN];
        char groups_out[JOB_ENDPOINT_LEN];
        char scored_in[JOB_ENDPOINT_LEN];
        char weights[JOB_ENDPOINT_LEN];
        char telemetry[JOB_ENDPOINT_LEN];
        char status[JOB_ENDPOINT_LEN];
        char curve_public[41]; /* Z85, 40 characters, or "" */
        char curve_secret[41];
        char curve_server_key[41];
        /* file of client public keys (Z85, one a line) the learner's ZAP handler admits
         * besides curve_public; "": curve_public only */
        char curve_allowed_keys[JOB_PATH_LEN];
        int insecure;     /* bind beyond loopback without CURVE keys anyway */
        int metrics_port; /* the learner's Prometheus /metrics (HTTP); 0: off */
    } endpoints;
    struct {
        int actors;
        int analyzers;
        double restart_backoff_s;
        double restart_backoff_max_s;
        int max_restarts; /* per child; 0: unlimited */
        double stop_timeout_s;
    } roles;
    struct {
        int every;
        double every_minutes;   /* 0: no time rule */
        char dir[JOB_PATH_LEN]; /* "" until resolved: <run_dir>/ckpt */
        int keep;
        int resume;                     /* bool */
        char resume_from[JOB_PATH_LEN]; /* "" or a checkpoint directory */
    } checkpoint;
    struct {
        double interval_s;
        int window;
    } status;
    struct {
        int every;          /* RL steps between periodic evaluations; 0: off */
        int episodes;       /* tasks per env per evaluation */
        char split[16];     /* train | seen | unseen */
        uint64_t seed;      /* names the task set */
        double temperature; /* 0: greedy */
        int batch;          /* episodes played at once */
    } eval;
    struct {
        int max_msg_bytes;
        int linger_ms;
        int hwm;
        int hub_queue; /* groups waiting for an analyzer before actors are held back */
        int heartbeat_ms;
        int heartbeat_timeout_ms;
        int peer_timeout_ms;
        int request_timeout_ms;
    } wire;
} job_config;

/* The embedded default job. */
void job_defaults(job_config *job);

/* Set one key from text ("algorithm.group_size", "8"). Env keys: "envs.N.name",
 * "envs.N.weight", "envs.N.split", "envs.N.max_steps", "envs.N.options.KEY"; N may be
 * n_envs to append an entry. "envs" = "sokoban,ezpoints" replaces the list. Renaming
 * an existing env entry resets its other fields (they are env-specific). */
int job_set(job_config *job, const char *key, const char *value, char *err, size_t errlen);
/* Same, from "key=value". */
int job_set_arg(job_config *job, const char *arg, char *err, size_t errlen);

/* Merge a YAML job file onto *job. A list (envs) in the file replaces the list. */
int job_load_file(job_config *job, const char *path, char *err, size_t errlen);
int job_load_string(job_config *job, const char *yaml, size_t len, const char *name, char *err,
                    size_t errlen);

/* Fill derived fields and check cross-key rules (see the contract above). */
int job_resolve(job_config *job, char *err, size_t errlen);

/* What every daemon does: defaults, then the file (path may be NULL: the embedded
 * default), then the overrides ("a.b=value" each), then job_resolve. */
int job_build(job_config *job, const char *path, int n_overrides, char *const *overrides, char *err,
              size_t errlen);

/* The effective config as YAML (comments: each key's meaning) or JSON; malloc'd
 * strings the caller frees, NULL when out of memory. */
enum { JOB_YAML_COMMENTS = 1 };
char *job_to_yaml(const job_config *job, int flags);
char *job_to_json(const job_config *job, int pretty);
struct cJSON;
struct cJSON *job_to_cjson(const job_config *job); /* caller cJSON_Delete()s */

/* 1 when every key (and every env entry) holds the same value. */
int job_equal(const job_config *a, const job_config *b);

/* One of "groups_in", "groups_out", "scored_in", "weights", "telemetry", "status":
 * the endpoint peers connect to, or (bind != 0) the one the learner binds, which has
 * endpoints.bind_host in place of the host when that is set. */
int job_endpoint(const job_config *job, const char *name, int bind, char *buf, size_t buflen,
                 char *err, size_t errlen);

/* The shipped agent's directory (deploy/models/agent, the default model.path):
 * $SEED_HOME/deploy/models/agent, then each directory above the running executable
 * (deploy/models/agent or share/seed/models/agent below it). Absolute path into buf. */
int job_find_default_model(char *buf, size_t buflen, char *err, size_t errlen);
/* algorithm.skill_library, when empty: the shipped library of every built-in env
 * (deploy/skills); left empty when none is found. */
void job_default_skill_library(job_config *job);
/* The same search for any shipped directory `what` below deploy/ (or share/seed/ when
 * installed): "models/agent", "skills" (the skill libraries, algorithm.skill_library). */
int job_find_shipped(const char *what, char *buf, size_t buflen, char *err, size_t errlen);

/* The key table, for listings (`seedctl config --keys`): for i in [0, job_key_count()),
 * the key's name and meaning (static strings) and what it accepts (into expected). */
int job_key_count(void);
int job_key_info(int i, const char **name, char *expected, size_t n, const char **doc);

/* The name of an enum key's value into buf ("cpu" for "model.backend", 0); NULL when
 * the key is not an enum or the value is out of range. */
const char *job_enum_name(const char *key, int value, char *buf, size_t n);

/* The staleness rule (algorithm.max_staleness): work made with the policy of
 * policy_version is too old for training once the learner's version is more than
 * max_staleness versions ahead of it. */
static inline int job_version_stale(const job_config *job, uint64_t policy_version,
                                    uint64_t version) {
    return policy_version + (uint64_t)job->algorithm.max_staleness < version;
}

/* The job's env entry named name, or NULL. */
const job_env *job_env_find(const job_config *job, const char *name);
/* The key/values env_create takes for an env entry (its options, plus max_steps when set);
 * kv needs JOB_MAX_ENV_OPTIONS + 1 entries and points into je and num (16 bytes). Returns
 * the count. */
struct env_kv;
int job_env_kv(const job_env *je, struct env_kv *kv, char *num);

#endif
