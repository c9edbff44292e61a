/* The task-set arguments that seedctl eval and bench/experiment/opd_signal share
 * (roles/taskset.h): every value is read into its field, the defaults are each program's,
 * every bad argument is refused with a sentence naming it, and taskset_job finds the
 * env's entry or adds it. */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "roles/taskset.h"
#include "tests/check.h"

/* specs as the two programs set them (deploy/eval.c, bench/experiment/opd_signal.c) */
static const taskset_spec eval_spec = {.count_flag = "--episodes",
                                       .count_default = 100,
                                       .count_max = 1000000,
                                       .batch_default = 16,
                                       .batch_max = 1024,
                                       .temperature_default = 0};
static const taskset_spec opd_spec = {.count_flag = "--tasks",
                                      .count_default = 32,
                                      .count_max = 100000,
                                      .batch_default = 16,
                                      .batch_max = 64,
                                      .temperature_default = 1.0};

/* Parses argv[0..argc) as a program does once its own flags are taken out. */
static int parse(const taskset_spec *spec, taskset_args *a, int argc, char **argv, char *err) {
    taskset_init(a, spec);
    err[0] = 0;
    for (int i = 0; i < argc; i++)
        if (taskset_arg(a, spec, argc, argv, &i, err, SEED_ERRLEN)) return -1;
    return 0;
}

/* argc, argv of string literals */
#define ARGV(...) (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)), ((char *[]){__VA_ARGS__})

static void test_values(void) {
    taskset_args a;
    char err[SEED_ERRLEN];
    CHECK(parse(&eval_spec, &a, 0, NULL, err) == 0, "%s", err);
    CHECK(!a.model_dir && !a.env && !a.job_path && a.n_over == 0);
    CHECK(!strcmp(a.split_name, "unseen") && a.split == ENV_SPLIT_UNSEEN);
    CHECK(a.count == 100 && a.batch == 16 && a.seed == 0 && a.temperature == 0,
          "eval defaults: %d %d %g", a.count, a.batch, a.temperature);
    CHECK(parse(&opd_spec, &a, 0, NULL, err) == 0, "%s", err);
    CHECK(a.count == 32 && a.batch == 16 && a.temperature == 1.0, "opd_signal defaults");

    CHECK(parse(&eval_spec, &a,
                ARGV("ckpt/step-5", "--env", "household", "--split", "seen", "--episodes", "7",
                     "--seed", "18446744073709", "--temperature", "0.5", "--batch", "3", "--job",
                     "j.yaml", "model.threads=1", "envs.0.max_steps=4"),
                err) == 0,
          "%s", err);
    CHECK(a.model_dir && !strcmp(a.model_dir, "ckpt/step-5"));
    CHECK(a.env && !strcmp(a.env, "household"));
    CHECK(!strcmp(a.split_name, "seen") && a.split == ENV_SPLIT_SEEN);
    CHECK(a.count == 7 && a.batch == 3 && a.seed == 18446744073709ULL && a.temperature == 0.5,
          "%d %d %llu %g", a.count, a.batch, (unsigned long long)a.seed, a.temperature);
    CHECK(a.job_path && !strcmp(a.job_path, "j.yaml"));
    CHECK(a.n_over == 2 && !strcmp(a.over[0], "model.threads=1") &&
              !strcmp(a.over[1], "envs.0.max_steps=4"),
          "overrides in order: %d", a.n_over);
}

/* args must be refused with a message holding want. */
static void refused(const taskset_spec *spec, int argc, char **argv, const char *want) {
    taskset_args a;
    char err[SEED_ERRLEN];
    int rc = parse(spec, &a, argc, argv, err);
    CHECK(rc < 0 && strstr(err, want), "%s %s...: rc %d, '%s' (wanted '%s')", spec->count_flag,
          argv[0], rc, err, want);
}

static void test_refused(void) {
    refused(&eval_spec, ARGV("--split", "test"),
            "--split: expected train, seen or unseen, got 'test'");
    refused(&eval_spec, ARGV("--episodes", "0"),
            "--episodes: expected an integer in [1, 1000000], got '0'");
    refused(&eval_spec, ARGV("--episodes", "2.5"), "--episodes: expected an integer");
    refused(&eval_spec, ARGV("--episodes", "7x"), "got '7x'");
    refused(&eval_spec, ARGV("--episodes", ""), "--episodes: expected an integer");
    refused(&opd_spec, ARGV("--tasks", "100001"),
            "--tasks: expected an integer in [1, 100000], got '100001'");
    /* each program's count flag is its own: the other's is unknown */
    refused(&eval_spec, ARGV("--tasks", "5"), "unknown option '--tasks'");
    refused(&opd_spec, ARGV("--episodes", "5"), "unknown option '--episodes'");
    refused(&eval_spec, ARGV("--batch", "1025"), "--batch: expected an integer in [1, 1024]");
    refused(&opd_spec, ARGV("--batch", "65"), "--batch: expected an integer in [1, 64], got '65'");
    refused(&eval_spec, ARGV("--seed", "-1"), "--seed: expected a non-negative integer, got '-1'");
    refused(&eval_spec, ARGV("--seed", "1.5"), "--seed: expected a non-negative integer");
    refused(&eval_spec, ARGV("--seed", "1e20"), "--seed: expected a non-negative integer");
    refused(&eval_spec, ARGV("--temperature", "101"),
            "--temperature: expected a number in [0, 100], got '101'");
    refused(&eval_spec, ARGV("--temperature", "nan"), "--temperature: expected a number");
    refused(&eval_spec, ARGV("--temperature", "-0.1"), "--temperature");
    refused(&eval_spec, ARGV("dir", "--env"), "--env needs a value");
    refused(&eval_spec, ARGV("--bogus", "1"), "unknown option '--bogus'");
    refused(&eval_spec, ARGV("a", "b"), "one MODEL_DIR only, got 'b' too");

    char *many[TASKSET_MAX_OVERRIDES + 1];
    char buf[TASKSET_MAX_OVERRIDES + 1][32];
    for (int i = 0; i <= TASKSET_MAX_OVERRIDES; i++) {
        snprintf(buf[i], sizeof buf[i], "k%d=v", i);
        many[i] = buf[i];
    }
    refused(&eval_spec, TASKSET_MAX_OVERRIDES + 1, many, "too many overrides (k256=v)");
    taskset_args a;
    char err[SEED_ERRLEN];
    CHECK(parse(&eval_spec, &a, TASKSET_MAX_OVERRIDES, many, err) == 0, "256 overrides: %s", err);
}

static void test_job(void) {
    static job_config job;
    taskset_args a;
    char err[SEED_ERRLEN];
    int idx = -1;
    /* no --env: the job's first env */
    CHECK(parse(&eval_spec, &a, 0, NULL, err) == 0, "%s", err);
    CHECK(taskset_job(&a, &job, &idx, err, sizeof err) == 0, "%s", err);
    CHECK(idx == 0 && job.n_envs >= 1, "idx %d", idx);
    /* an env the job does not list becomes its one env, with its defaults */
    CHECK(parse(&eval_spec, &a, ARGV("--env", "ezpoints"), err) == 0, "%s", err);
    CHECK(taskset_job(&a, &job, &idx, err, sizeof err) == 0, "%s", err);
    CHECK(idx == 0 && job.n_envs == 1 && !strcmp(job.envs[0].name, "ezpoints"), "idx %d of %d", idx,
          job.n_envs);
    /* and envs.0.* configures it: before, envs.0 stayed the default job's sokoban, which
     * nothing played, and household ran all six families at its default step limit */
    CHECK(parse(&eval_spec, &a,
                ARGV("--env", "household", "envs.0.options.families=pick_and_place_simple",
                     "envs.0.max_steps=20"),
                err) == 0,
          "%s", err);
    CHECK(taskset_job(&a, &job, &idx, err, sizeof err) == 0, "%s", err);
    CHECK(idx == 0 && job.n_envs == 1 && !strcmp(job.envs[0].name, "household") &&
              job.envs[0].max_steps == 20 && job.envs[0].n_options == 1 &&
              !strcmp(job.envs[0].options[0].key, "families") &&
              !strcmp(job.envs[0].options[0].value, "pick_and_place_simple"),
          "idx %d name %s max_steps %d options %d", idx, job.envs[0].name, job.envs[0].max_steps,
          job.envs[0].n_options);
    /* an override for an env the evaluation does not play is refused, naming both */
    CHECK(parse(&eval_spec, &a,
                ARGV("--env", "sokoban", "envs=sokoban,household", "envs.1.max_steps=3"), err) == 0,
          "%s", err);
    CHECK(taskset_job(&a, &job, &idx, err, sizeof err) < 0 &&
              strstr(err, "envs.1.max_steps=3: envs.1 is not the env evaluated") &&
              strstr(err, "sokoban is envs.0"),
          "'%s'", err);
    /* one it does list is found, with the overrides applied */
    CHECK(parse(&eval_spec, &a, ARGV("--env", "sokoban", "envs.0.max_steps=4"), err) == 0, "%s",
          err);
    CHECK(taskset_job(&a, &job, &idx, err, sizeof err) == 0, "%s", err);
    CHECK(idx == 0 && job.envs[0].max_steps == 4, "idx %d max_steps %d", idx,
          job.envs[0].max_steps);
    /* refusals name what was wrong */
    CHECK(parse(&eval_spec, &a, ARGV("--env", "nosuch"), err) == 0, "%s", err);
    CHECK(taskset_job(&a, &job, &idx, err, sizeof err) < 0 &&
              strstr(err, "--env: no env named 'nosuch'") && strstr(err, "sokoban"),
          "'%s'", err);
    CHECK(parse(&eval_spec, &a, ARGV("nosuch.key=1"), err) == 0, "%s", err);
    CHECK(taskset_job(&a, &job, &idx, err, sizeof err) < 0 && strstr(err, "nosuch"), "'%s'", err);
    CHECK(parse(&eval_spec, &a, ARGV("--job", "/nonexistent/job.yaml"), err) == 0, "%s", err);
    CHECK(taskset_job(&a, &job, &idx, err, sizeof err) < 0 && strstr(err, "/nonexistent/job.yaml"),
          "'%s'", err);
}

int main(void) {
    test_values();
    test_refused();
    test_job();
    if (check_failures) fprintf(stderr, "taskset_test: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
