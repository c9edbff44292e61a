/* eval.c — see eval.h. */
#define _GNU_SOURCE
#include "deploy/eval.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/daemon.h"
#include "roles/taskset.h"
#include "common/job.h"
#include "common/skill_library.h"
#include "common/util.h"
#include "deploy/seedctl.h"
#include "model/tokenizer.h"

typedef struct eval_args {
    taskset_args set; /* MODEL_DIR, --env, --split, --episodes, --seed, ... (roles/taskset.h) */
    int expert, json, skills;
    const char *trace; /* --trace FILE: every episode as a JSON line */
} eval_args;

/* seedctl eval's task set: 100 episodes, greedy, 16 at once */
static const taskset_spec eval_spec = {.count_flag = "--episodes",
                                       .count_default = 100,
                                       .count_max = 1000000,
                                       .batch_default = 16,
                                       .batch_max = 1024,
                                       .temperature_default = 0};

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, "seedctl eval: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: seedctl eval [MODEL_DIR] [--env NAME] [--split train|seen|unseen] "
                    "[--episodes N] [--seed S]\n"
                    "                    [--temperature T] [--batch B] [--expert] [--skills] "
                    "[--json] [--trace FILE] [--job JOB.yaml] [key=value ...]\n");
    return 2;
}

static int parse_args(int argc, char **argv, eval_args *a) {
    memset(a, 0, sizeof *a);
    taskset_init(&a->set, &eval_spec);
    char err[SEED_ERRLEN];
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--expert"))
            a->expert = 1;
        else if (!strcmp(k, "--json"))
            a->json = 1;
        else if (!strcmp(k, "--skills"))
            a->skills = 1;
        else if (!strcmp(k, "--trace")) {
            if (i + 1 >= argc) return usage("%s", "--trace: expected a FILE");
            a->trace = argv[++i];
        } else if (taskset_arg(&a->set, &eval_spec, argc, argv, &i, err, sizeof err))
            return usage("%s", err);
    }
    if (!a->set.model_dir && !a->expert) return usage("%s", "expected a MODEL_DIR (or --expert)");
    return 0;
}

static void print_table(const rollout_eval_result *r, const eval_args *a, const char *env_name) {
    const taskset_args *t = &a->set;
    printf("eval  %s/%s  %d tasks (seed %llu)  %s  %s%s\n", env_name, t->split_name, t->count,
           (unsigned long long)t->seed, t->temperature > 0 ? "sampled" : "greedy",
           a->expert ? "expert" : t->model_dir,
           a->skills ? "  with the library's skills in the prompt" : "");
    if (t->temperature > 0) printf("temperature %g\n", t->temperature);
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

/* The first and the last records of RUN/metrics.jsonl with a number at key (eval_success,
 * eval_pool_success): {step, value} each. */
static int eval_ends(const char *run_dir, const char *key, double first[2], double last[2]) {
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *r = cJSON_Parse(line);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, key);
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
    if (eval_ends(run_dir, "eval_success", first, last) > 1)
        printf("eval success %.3f at step %.0f -> %.3f at step %.0f\n", first[1], first[0], last[1],
               last[0]);
    if (eval_ends(run_dir, "eval_pool_success", first, last) > 1)
        printf("training-pool success %.3f at step %.0f -> %.3f at step %.0f\n", first[1], first[0],
               last[1], last[0]);
    return 0;
}

int seedctl_eval(int argc, char **argv) {
    eval_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    static job_config job;
    char err[SEED_ERRLEN];
    const taskset_args *t = &a.set;
    int idx;
    if (taskset_job(t, &job, &idx, err, sizeof err)) {
        fprintf(stderr, "seedctl eval: %s\n", err);
        return 2;
    }
    const char *env_name = job.envs[idx].name;
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
        snprintf(path, sizeof path, "%s/config.json", t->model_dir);
        if (model_config_load(path, &cfg, err, sizeof err)) goto fail;
        rollout_plan(&job, &cfg, t->batch, &lim, &max_prompt);
        if (model_load(&m, t->model_dir, &lim, daemon_backend(&job), err, sizeof err)) goto fail;
        snprintf(path, sizeof path, "%s/tokenizer.json", t->model_dir);
        if (tok_load(&tk, path, err, sizeof err)) goto fail;
    }
    rollout_eval_cfg ec = {.job = &job,
                           .m = m,
                           .tk = tk,
                           .env_idx = idx,
                           .split = t->split,
                           .n = t->count,
                           .seed = t->seed,
                           .temperature = (float)t->temperature,
                           .batch = t->batch,
                           .expert = a.expert,
                           .lib = a.skills ? &lib : NULL};
    FILE *trace = NULL;
    if (a.trace && !(trace = fopen(a.trace, "w"))) {
        snprintf(err, sizeof err, "--trace %s: %s", a.trace, strerror(errno));
        goto fail;
    }
    ec.trace = trace;
    rollout_eval_result res;
    int erc = rollout_eval(&ec, &res, err, sizeof err);
    if (trace && fclose(trace) && !erc) {
        snprintf(err, sizeof err, "--trace %s: %s", a.trace, strerror(errno));
        erc = -1;
    }
    if (erc) goto fail;
    if (a.json) {
        cJSON *o = rollout_eval_cjson(&res, env_name, t->split_name, t->seed, t->temperature);
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
