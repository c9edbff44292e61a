/* taskset.h — the command-line arguments that name a fixed, seeded task set and the policy
 * that plays it, read alike by every program that plays one through the rollout engine
 * (`seedctl eval`, bench/experiment/opd_signal):
 *
 *   [MODEL_DIR] [--env NAME] [--split train|seen|unseen] [--COUNT N] [--seed S]
 *   [--temperature T] [--batch B] [--job JOB.yaml] [key=value ...]
 *
 * The set is (env, split, COUNT, seed): task i has the seed rollout_task_seed(S, i). The
 * job is the embedded default, --job, then the key=value overrides; an env the job does not
 * list is added with its defaults.
 *
 * Contract:
 *  - A program checks its own flags first and hands each other argument to taskset_arg,
 *    which refuses anything it does not know ("unknown option '--x'"), so the program's
 *    flags and these are the whole command line.
 *  - What differs between programs is a taskset_spec: the count's flag, its default and
 *    bound, the batch's default and bound, the default temperature.
 *  - Errors are one sentence naming the argument and what was expected, never printed
 *    here: the program prints it with its usage line (exit status 2).
 *  - The strings in taskset_args point into argv (no copy). */
#ifndef SEED_ROLES_TASKSET_H
#define SEED_ROLES_TASKSET_H

#include <stddef.h>
#include <stdint.h>

#include "common/job.h"
#include "envs/env.h"

enum { TASKSET_MAX_OVERRIDES = 256 };

typedef struct taskset_spec {
    const char *count_flag; /* "--episodes", "--tasks" */
    int count_default, count_max;
    int batch_default, batch_max;
    double temperature_default; /* 0: greedy */
} taskset_spec;

typedef struct taskset_args {
    const char *model_dir;  /* the one positional argument; NULL when none was given */
    const char *env;        /* NULL: the job's first env */
    const char *split_name; /* as given ("unseen" by default) */
    env_split split;
    const char *job_path; /* NULL: the embedded default job */
    int count, batch;
    uint64_t seed;
    double temperature;
    int n_over;
    char *over[TASKSET_MAX_OVERRIDES]; /* "a.b=value", in order */
} taskset_args;

/* The spec's defaults; no model dir, env or job. */
void taskset_init(taskset_args *a, const taskset_spec *spec);

/* Reads argv[*i] (and, for a flag with a value, argv[*i + 1]: *i then moves past it).
 * 0 when taken, -1 with err naming the argument when it is bad or unknown. */
int taskset_arg(taskset_args *a, const taskset_spec *spec, int argc, char **argv, int *i, char *err,
                size_t errlen);

/* Builds *job from a (job_build: defaults, a->job_path, the overrides) and sets *env_idx to
 * the entry of a->env (the job's first env when NULL). When the job does not list that
 * env, it becomes the job's only env (envs=NAME before the overrides), so envs.0.*
 * configures it. -1 with err: the job's error, "--env: no env named 'x' (built in: ...)",
 * or an override envs.N.* for an env other than the one evaluated (it would do nothing). */
int taskset_job(const taskset_args *a, job_config *job, int *env_idx, char *err, size_t errlen);

#endif
