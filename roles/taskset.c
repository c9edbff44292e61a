/* taskset.c — see taskset.h. */
#include "roles/taskset.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void taskset_init(taskset_args *a, const taskset_spec *spec) {
    memset(a, 0, sizeof *a);
    a->split_name = "unseen";
    a->split = ENV_SPLIT_UNSEEN;
    a->count = spec->count_default;
    a->batch = spec->batch_default;
    a->temperature = spec->temperature_default;
}

/* The whole of s as a number in [lo, hi]. */
static int parse_num(const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

/* A flag that takes a value: --NAME VALUE. */
static int flag_value(taskset_args *a, const taskset_spec *spec, const char *k, const char *val,
                      char *err, size_t errlen) {
    double v;
    if (!strcmp(k, "--env")) {
        a->env = val;
    } else if (!strcmp(k, "--split")) {
        if (env_split_parse(val, &a->split))
            return seed_errf(err, errlen, "--split: expected train, seen or unseen, got '%s'", val);
        a->split_name = val;
    } else if (!strcmp(k, "--job")) {
        a->job_path = val;
    } else if (!strcmp(k, spec->count_flag)) {
        if (parse_num(val, 1, spec->count_max, &v) || v != (int)v)
            return seed_errf(err, errlen, "%s: expected an integer in [1, %d], got '%s'", k,
                             spec->count_max, val);
        a->count = (int)v;
    } else if (!strcmp(k, "--batch")) {
        if (parse_num(val, 1, spec->batch_max, &v) || v != (int)v)
            return seed_errf(err, errlen, "--batch: expected an integer in [1, %d], got '%s'",
                             spec->batch_max, val);
        a->batch = (int)v;
    } else if (!strcmp(k, "--seed")) {
        /* 1.8e19 < 2^64: the cast below is defined, and the round trip refuses fractions */
        if (parse_num(val, 0, 1.8e19, &v) || v != (double)(uint64_t)v)
            return seed_errf(err, errlen, "--seed: expected a non-negative integer, got '%s'", val);
        a->seed = (uint64_t)v;
    } else if (!strcmp(k, "--temperature")) {
        if (parse_num(val, 0, 100, &v))
            return seed_errf(err, errlen, "--temperature: expected a number in [0, 100], got '%s'",
                             val);
        a->temperature = v;
    } else {
        return seed_errf(err, errlen, "unknown option '%s'", k);
    }
    return 0;
}

int taskset_arg(taskset_args *a, const taskset_spec *spec, int argc, char **argv, int *i, char *err,
                size_t errlen) {
    char *k = argv[*i];
    if (k[0] == '-' && k[1] == '-') {
        if (*i + 1 >= argc) return seed_errf(err, errlen, "%s needs a value", k);
        *i += 1;
        return flag_value(a, spec, k, argv[*i], err, errlen);
    }
    if (strchr(k, '=')) {
        if (a->n_over == TASKSET_MAX_OVERRIDES)
            return seed_errf(err, errlen, "too many overrides (%s)", k);
        a->over[a->n_over++] = k;
        return 0;
    }
    if (a->model_dir) return seed_errf(err, errlen, "one MODEL_DIR only, got '%s' too", k);
    a->model_dir = k;
    return 0;
}

/* The env index an override key "envs.N..." addresses, or -1 for any other key. */
static int override_env(const char *kv) {
    if (strncmp(kv, "envs.", 5) || !isdigit((unsigned char)kv[5])) return -1;
    return atoi(kv + 5);
}

int taskset_job(const taskset_args *a, job_config *job, int *env_idx, char *err, size_t errlen) {
    if (job_build(job, a->job_path, a->n_over, a->over, err, errlen)) return -1;
    const char *name = a->env ? a->env : job->envs[0].name;
    int idx = -1;
    for (int i = 0; i < job->n_envs && idx < 0; i++)
        if (!strcmp(job->envs[i].name, name)) idx = i;
    if (idx < 0) {
        if (!env_lookup(name))
            return seed_errf(err, errlen, "--env: no env named '%s' (built in: %s)", name,
                             env_names());
        /* the job does not list it: it becomes the job's one env, its defaults first, so
         * the overrides envs.0.* configure it */
        char envs_kv[64 + JOB_NAME_LEN];
        char *over[TASKSET_MAX_OVERRIDES + 1];
        snprintf(envs_kv, sizeof envs_kv, "envs=%s", name);
        over[0] = envs_kv;
        for (int i = 0; i < a->n_over; i++) over[i + 1] = a->over[i];
        if (job_build(job, a->job_path, a->n_over + 1, over, err, errlen)) return -1;
        idx = 0;
    }
    /* an override for another env of the job would configure an env nothing plays */
    for (int i = 0; i < a->n_over; i++) {
        int k = override_env(a->over[i]);
        if (k >= 0 && k != idx)
            return seed_errf(err, errlen,
                             "%s: envs.%d is not the env evaluated (%s is envs.%d of the job); "
                             "set envs.%d.* instead",
                             a->over[i], k, name, idx, idx);
    }
    *env_idx = idx;
    return 0;
}
