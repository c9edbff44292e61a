/* eval.c — see eval.h. */
#define _GNU_SOURCE
#include "deploy/eval.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/daemon.h"
#include "common/job.h"
#include "common/skill_library.h"
#include "common/util.h"
#include "deploy/seedctl.h"
#include "model/tokenizer.h"

enum { EVAL_MAX_OVERRIDES = 256 };

typedef struct eval_args {
    const char *model_dir, *env, *split, *job_path;
    int episodes, batch, expert, json, skills;
    uint64_t seed;
    double temperature;
    int n_over;
    char *over[EVAL_MAX_OVERRIDES];
} eval_args;

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, "seedctl eval: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: seedctl eval [MODEL_DIR] [--env NAME] [--split train|seen|unseen] "
                    "[--episodes N] [--seed S]\n"
                    "                    [--temperature T] [--batch B] [--expert] [--json] "
                    "[--job JOB.yaml] [key=value ...]\n");
    return 2;
}

static int parse_num(const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, eval_args *a) {
    memset(a, 0, sizeof *a);
    a->split = "unseen";
    a->episodes = 100;
    a->batch = 16;
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i];
        double v;
        if (!strcmp(k, "--expert")) {
            a->expert = 1;
        } else if (!strcmp(k, "--json")) {
            a->json = 1;
        } else if (!strcmp(k, "--skills")) {
            a->skills = 1;
        } else if (k[0] == '-' && k[1] == '-') {
            if (i + 1 >= argc) return usage("%s needs a value", k);
            const char *val = argv[++i];
            if (!strcmp(k, "--env")) {
                a->env = val;
            } else if (!strcmp(k, "--split")) {
                env_split sp;
                if (env_split_parse(val, &sp))
                    return usage("--split: expected train, seen or unseen, got '%s'", val);
                a->split = val;
            } else if (!strcmp(k, "--job")) {
                a->job_path = val;
            } else if (!strcmp(k, "--episodes")) {
                if (parse_num(val, 1, 1e6, &v) || v != (int)v)
                    return usage("--episodes: expected an integer in [1, 1000000], got '%s'", val);
                a->episodes = (int)v;
            } else if (!strcmp(k, "--batch")) {
                if (parse_num(val, 1, 1024, &v) || v != (int)v)
                    return usage("--batch: expected an integer in [1, 1024], got '%s'", val);
                a->batch = (int)v;
            } else if (!strcmp(k, "--seed")) {
                if (parse_num(val, 0, 1.8e19, &v) || v != (double)(uint64_t)v)
                    return usage("--seed: expected a non-negative integer, got '%s'", val);
                a->seed = (uint64_t)v;
            } else if (!strcmp(k, "--temperature")) {
                if (parse_num(val, 0, 100, &v))
                    return usage("--temperature: expected a number in [0, 100], got '%s'", val);
                a->temperature = v;
            } else {
                return usage("unknown option '%s'", k);
            }
        } else if (strchr(k, '=')) {
            if (a->n_over == EVAL_MAX_OVERRIDES) return usage("too many overrides (%s)", k);
            a->over[a->n_over++] = argv[i];
        } else if (!a->model_dir) {
            a->model_dir = k;
        } else {
            return usage("one MODEL_DIR only, got '%s' too", k);
        }
    }
    if (!a->model_dir && !a->expert) return usage("%s", "expected a MODEL_DIR (or --expert)");
    return 0;
}

/* The job's entry for env (appended with defaults when the job has none). */
static int env_entry(job_config *job, const char *env_name, char *err, size_t errlen) {
    for (int i = 0; i < job->n_envs; i++)
        if (!strcmp(job->envs[i].name, env_name)) return i;
    if (!env_lookup(env_name))
        return seed_errf(err, errlen, "--env: no env named '%s' (built in: %s)", env_name,
                         env_names());
    char key[64];
    snprintf(key, sizeof key, "envs.%d.name", job->n_envs);
    if (job_set(job, key, env_name, err, errlen)) return -1;
    return job->n_envs - 1;
}

static void print_table(const rollout_eval_result *r, const eval_args *a, const char *env_name) {
    printf("eval  %s/%s  %d tasks (seed %llu)  %s  %s%s\n", env_name, a->split, a->episodes,
           (unsigned long long)a->seed, a->temperature > 0 ? "sampled" : "greedy",
           a->expert ? "expert" : a->model_dir,
           a->skills ? "  with the library's skills in the prompt" : "");
    if (a->temperature > 0) printf("temperature %g\n", a->temperature);
    printf("%-12s %-24s %9s %9s %9s\n", "env", "family", "episodes", "success", "return");
    for (int i = 0; i < r->n_families; i++) {
        const rollout_eval_family *f = &r->families[i];
        printf("%-12s %-24s %9d %9.3f %9.3f\n", f->env, f->family, f->episodes,
               f->episodes ? (double)f->won / f->episodes : 0.0,
               f->episodes ? f->ret / f->episodes : 0.0);
    }
    int played = r->episodes - r->errors;
    printf("%-12s %-24s %9d %9.3f %9.3f\n", "all", "", r->episodes,
           r->episodes ? (double)r->won / r->episodes : 0.0, played ? r->ret / played : 0.0);
    if (r->errors) printf("%d episode(s) ended by an error (counted as failures)\n", r->errors);
}

/* seedctl's JSON readers with the value printed when a field is missing */
static double jnum_or(const cJSON *o, const char *key, double dflt) {
    double v = dflt;
    seedctl_jnum(o, key, &v);
    return v;
}

static const char *jstr_or(const cJSON *o, const char *key, const char *dflt) {
    const char *v = seedctl_jstr(o, key);
    return v ? v : dflt;
}

/* The first and the last "eval_success" records of RUN/metrics.jsonl. */
static int eval_ends(const char *run_dir, double first[2], double last[2]) {
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *r = cJSON_Parse(line);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "eval_success");
        if (cJSON_IsNumber(s)) {
            double v[2] = {jnum_or(r, "step", 0), s->valuedouble};
            if (!n++) memcpy(first, v, sizeof v);
            memcpy(last, v, sizeof v);
        }
        cJSON_Delete(r);
    }
    free(line);
    fclose(f);
    return n;
}

int seedctl_eval_print_run(const char *run_dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/eval.json", run_dir);
    size_t len = 0;
    char *text = NULL, err[SEED_ERRLEN];
    if (seed_read_file(path, &text, &len, err, sizeof err)) return -1;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j) return -1;
    printf("final evaluation: step %.0f, %s split, %.0f episodes\n", jnum_or(j, "step", 0),
           jstr_or(j, "split", "?"), jnum_or(j, "episodes", 0));
    printf("%-12s %-30s %9s %9s %9s\n", "env", "family", "episodes", "success", "return");
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "envs")) {
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(e, "families")) {
            printf("%-12s %-30s %9.0f %9.3f %9.3f\n", jstr_or(f, "env", "?"),
                   jstr_or(f, "family", "?"), jnum_or(f, "episodes", 0), jnum_or(f, "success", 0),
                   jnum_or(f, "return", 0));
        }
    }
    printf("%-12s %-30s %9.0f %9.3f %9.3f\n", "all", "", jnum_or(j, "episodes", 0),
           jnum_or(j, "success", 0), jnum_or(j, "return", 0));
    cJSON_Delete(j);
    double first[2], last[2];
    if (eval_ends(run_dir, first, last) > 1)
        printf("eval success %.3f at step %.0f -> %.3f at step %.0f\n", first[1], first[0], last[1],
               last[0]);
    return 0;
}

int seedctl_eval(int argc, char **argv) {
    eval_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    static job_config job;
    char err[SEED_ERRLEN];
    if (job_build(&job, a.job_path, a.n_over, a.over, err, sizeof err)) {
        fprintf(stderr, "seedctl eval: %s\n", err);
        return 2;
    }
    const char *env_name = a.env ? a.env : job.envs[0].name;
    int idx = env_entry(&job, env_name, err, sizeof err);
    if (idx < 0) {
        fprintf(stderr, "seedctl eval: %s\n", err);
        return 2;
    }
    seed_log_set_level(SEED_LOG_ERROR);
    model *m = NULL;
    tok *tk = NULL;
    static skill_lib lib;
    memset(&lib, 0, sizeof lib);
    if (a.skills) {
        job_default_skill_library(&job);
        if (skill_lib_load_job(&lib, &job, err, sizeof err)) goto fail;
    }
    if (!a.expert) {
        char path[4200];
        model_config cfg;
        model_limits lim;
        int max_prompt;
        snprintf(path, sizeof path, "%s/config.json", a.model_dir);
        if (model_config_load(path, &cfg, err, sizeof err)) goto fail;
        rollout_plan(&job, &cfg, a.batch, &lim, &max_prompt);
        if (model_load(&m, a.model_dir, &lim, daemon_backend(&job), err, sizeof err)) goto fail;
        snprintf(path, sizeof path, "%s/tokenizer.json", a.model_dir);
        if (tok_load(&tk, path, err, sizeof err)) goto fail;
    }
    rollout_eval_cfg ec = {.job = &job,
                           .m = m,
                           .tk = tk,
                           .env_idx = idx,
                           .n = a.episodes,
                           .seed = a.seed,
                           .temperature = (float)a.temperature,
                           .batch = a.batch,
                           .expert = a.expert,
                           .lib = a.skills ? &lib : NULL};
    env_split_parse(a.split, &ec.split);
    rollout_eval_result res;
    if (rollout_eval(&ec, &res, err, sizeof err)) goto fail;
    if (a.json) {
        cJSON *o = rollout_eval_cjson(&res, env_name, a.split, a.seed, a.temperature);
        if (o && a.skills) cJSON_AddStringToObject(o, "skills", job.algorithm.skill_library);
        char *j = o ? cJSON_PrintUnformatted(o) : NULL;
        cJSON_Delete(o);
        if (!j) {
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
        printf("%s\n", j);
        free(j);
    } else {
        print_table(&res, &a, env_name);
    }
    model_free(m);
    tok_free(tk);
    skill_lib_free(&lib);
    return 0;
fail:
    fprintf(stderr, "seedctl eval: %s\n", err);
    model_free(m);
    tok_free(tk);
    skill_lib_free(&lib);
    return 1;
}
