/* job_resolve.c — what a job leaves to defaults, filled in (run_dir, checkpoint dir, the
 * shipped model and skills, endpoints), and the checks of keys against each other (modes,
 * CURVE and binding, ports); job_build is defaults + file + overrides + resolve; and the
 * lookups every role makes in a resolved job (job_env_find, job_env_kv). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "envs/env.h"
#include "common/job.h"
#include "common/job_internal.h"
#include "common/util.h"

/* The six endpoints in the order of their ports (base_port + index). */
static const char *ENDPOINT_NAMES[6] = {"groups_in", "groups_out", "scored_in",
                                        "weights",   "telemetry",  "status"};

/* The job's field of endpoint idx (ENDPOINT_NAMES order), each named, not found by
 * layout. */
static const char *endpoint_slot(const job_config *job, int idx) {
    const char *slots[6] = {job->endpoints.groups_in, job->endpoints.groups_out,
                            job->endpoints.scored_in, job->endpoints.weights,
                            job->endpoints.telemetry, job->endpoints.status};
    return slots[idx];
}

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
    const char *set = endpoint_slot(job, idx);
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
    {"algorithm.opd_tokens", MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT), NULL,
     "the mode has no distillation term", NULL},
    {"algorithm.opd_baseline", MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT), NULL,
     "the mode has no distillation term", NULL},
    {"algorithm.opd_episodes", MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT), NULL,
     "the mode has no distillation term", NULL},
    {"analyzer.skill_temperature",
     MODE_BIT(GRPO) | MODE_BIT(SKILL_PROMPT) | MODE_BIT(STATIC_SKILLS), NULL,
     "the policy writes no skills in this mode", NULL},
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
    job_choice_name(job_key_find("algorithm.mode")->choices, job->algorithm.mode, mode,
                    sizeof mode);
    int rc = 0;
    for (size_t i = 0; i < sizeof MODE_RULES / sizeof MODE_RULES[0] && !rc; i++) {
        const mode_rule *r = &MODE_RULES[i];
        if (!(r->modes & (1u << job->algorithm.mode)) || (r->honoured && r->honoured(job)))
            continue;
        const job_key_def *k = job_key_find(r->key);
        if (job_field_equal(k, job, def)) continue;
        *neu = *def;
        if (r->neutral && job_field_set(k, neu, r->key, r->neutral, NULL, 0) == 0 &&
            job_field_equal(k, job, neu))
            continue;
        job_field_text(k, job, val, sizeof val);
        job_field_text(k, def, dval, sizeof dval);
        rc = seed_errf(err, errlen,
                       "%s: '%s' cannot be honoured in algorithm.mode %s: %s (expected the "
                       "default%s%s%s%s)",
                       r->key, val, mode, r->why, dval[0] ? " " : ", empty", dval,
                       r->neutral ? " or " : "", r->neutral ? r->neutral : "");
    }
    if (!rc && job->algorithm.opd_loss == JOB_OPD_NONE && job->algorithm.opd_loss_coef != 0.0) {
        job_field_text(job_key_find("algorithm.opd_loss_coef"), job, val, sizeof val);
        rc = seed_errf(err, errlen,
                       "algorithm.opd_loss_coef: '%s' cannot be honoured with algorithm.opd_loss "
                       "none (expected 0, or opd_loss delta or importance)",
                       val);
    }
    if (!rc && job->algorithm.opd_baseline != JOB_OPD_BASELINE_NONE &&
        job->algorithm.w_opd == 0.0 && job->algorithm.opd_loss == JOB_OPD_NONE)
        rc = seed_errf(err, errlen,
                       "algorithm.opd_baseline: 'group' cannot be honoured with algorithm.w_opd "
                       "0 and opd_loss none: nothing uses q-s (expected none, or w_opd > 0)");
    if (!rc && job->analyzer.skill_source != JOB_SKILL_SELF &&
        job->analyzer.skill_temperature != def->analyzer.skill_temperature) {
        job_field_text(job_key_find("analyzer.skill_temperature"), job, val, sizeof val);
        job_field_text(job_key_find("analyzer.skill_source"), job, dval, sizeof dval);
        rc = seed_errf(err, errlen,
                       "analyzer.skill_temperature: '%s' cannot be honoured with "
                       "analyzer.skill_source %s: only the policy's own skills are sampled "
                       "(expected the default, or skill_source self)",
                       val, dval);
    }
    if (!rc && job->actor.pool_sampling == JOB_POOL_FRONTIER) {
        int pools = 0;
        for (int i = 0; i < job->n_envs; i++) pools += job->envs[i].tasks > 0;
        if (!pools)
            rc = seed_errf(err, errlen,
                           "actor.pool_sampling: 'frontier' cannot be honoured: no env has a "
                           "fixed pool to choose from (expected uniform, or envs.N.tasks > 0)");
    }
    /* the warm start's keys act only in the stages that read them */
    static const struct {
        const char *key, *when;
        int stage1_only;
    } warm[] = {
        {"algorithm.stage0_expert_noise", "algorithm.stage0_steps and stage1_steps 0", 0},
        {"algorithm.stage0_step_skill_keep", "algorithm.stage0_steps and stage1_steps 0", 0},
        {"algorithm.stage0_skill_demos", "algorithm.stage0_steps and stage1_steps 0", 0},
        {"algorithm.stage1_episodes", "algorithm.stage1_steps 0", 1},
    };
    int s0 = job->algorithm.stage0_steps, s1 = job->algorithm.stage1_steps;
    for (size_t i = 0; i < sizeof warm / sizeof warm[0] && !rc; i++) {
        const job_key_def *k = job_key_find(warm[i].key);
        if (s1 > 0 || (s0 > 0 && !warm[i].stage1_only) || job_field_equal(k, job, def)) continue;
        job_field_text(k, job, val, sizeof val);
        job_field_text(k, def, dval, sizeof dval);
        rc = seed_errf(err, errlen,
                       "%s: '%s' cannot be honoured with %s: there is no warm start stage that "
                       "reads it (expected %s)",
                       warm[i].key, val, warm[i].when, dval);
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
        job_copy_str(job->endpoints.curve_server_key, sizeof job->endpoints.curve_server_key,
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
        const char *slot = endpoint_slot(job, i);
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
        job_copy_str(job->job.run_dir, sizeof job->job.run_dir, tmp);
    }
    if (!job->checkpoint.dir[0]) {
        snprintf(tmp, sizeof tmp, "%s/ckpt", job->job.run_dir);
        if (strlen(tmp) >= sizeof job->checkpoint.dir)
            return seed_errf(err, errlen, "checkpoint.dir: '%s' is too long", tmp);
        job_copy_str(job->checkpoint.dir, sizeof job->checkpoint.dir, tmp);
    }
    if (!job->model.path[0]) {
        /* not found stays empty; job_find_default_model names where it looked */
        char p[JOB_PATH_LEN];
        if (job_find_default_model(p, sizeof p, NULL, 0) == 0)
            job_copy_str(job->model.path, sizeof job->model.path, p);
    }
    for (int i = 0; i < 6; i++) {
        char *slot = (char *)endpoint_slot(job, i); /* job is ours to fill */
        if (!slot[0] &&
            job_endpoint(job, ENDPOINT_NAMES[i], 0, slot, JOB_ENDPOINT_LEN, err, errlen))
            return -1;
    }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < i; j++) {
            const char *a = endpoint_slot(job, i), *b = endpoint_slot(job, j);
            if (!strcmp(a, b))
                return seed_errf(err, errlen,
                                 "endpoints.%s: expected an endpoint of its own, got "
                                 "'%s', the same as endpoints.%s",
                                 ENDPOINT_NAMES[i], a, ENDPOINT_NAMES[j]);
        }
    /* the learner binds /metrics on the same host as its tcp endpoints */
    for (int i = 0; i < 6 && job->endpoints.metrics_port > 0; i++) {
        const char *ep = endpoint_slot(job, i);
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
                             job_shown(job->envs[i].name, sbuf, sizeof sbuf), env_names());
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
        job_copy_str(job->algorithm.skill_library, sizeof job->algorithm.skill_library, p);
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

/* ---------- a job's env entries, as the roles read them ---------- */

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
