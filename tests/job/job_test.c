/* job_test.c — the job config: defaults, a file with every section, overrides, the
 * error sentences (each must name the key, the value and what was expected), and the
 * round trip of the effective config through YAML.
 *
 * Usage: job_test TESTS_DIR DEFAULT_YAML (tests/job with full.yaml; deploy/jobs/default.yaml).
 * Exact comparisons throughout: a config value is text parsed once, nothing is computed. */
#define _GNU_SOURCE
#include "common/job.h"
#include "common/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/check.h"

/* The sentence must contain every fragment given (NULL-terminated). */
static void check_err(int line, int rc, const char *err, ...) {
    va_list ap;
    if (rc == 0) {
        fprintf(stderr, "job_test.c:%d: FAILED: expected an error, got success\n", line);
        check_failures++;
        return;
    }
    va_start(ap, err);
    for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;) {
        if (!strstr(err, frag)) {
            fprintf(stderr, "job_test.c:%d: FAILED: error \"%s\" lacks \"%s\"\n", line, err, frag);
            check_failures++;
        }
    }
    va_end(ap);
    printf("  ok: %s\n", err);
}
#define ERR(rc, err, ...) check_err(__LINE__, rc, err, __VA_ARGS__, (const char *)NULL)

static int load_text(job_config *job, const char *text, char *err) {
    return job_load_string(job, text, strlen(text), "job.yaml", err, SEED_ERRLEN);
}

static void test_defaults(void) {
    job_config *j = malloc(sizeof *j);
    char err[SEED_ERRLEN], ep[256];
    job_defaults(j);
    CHECK(!strcmp(j->job.name, "seed-default"));
    CHECK(j->job.seed == 1 && j->job.total_steps == 16 && j->job.log_level == JOB_LOG_INFO);
    CHECK(j->model.backend == JOB_BACKEND_CPU && j->model.init == JOB_INIT_LOAD);
    CHECK(j->algorithm.stage0_steps == 0 && j->algorithm.stage1_steps == 0);
    CHECK(j->n_envs == 1 && !strcmp(j->envs[0].name, "sokoban") && j->envs[0].max_steps == 15);
    CHECK(j->envs[0].tasks == 8);
    CHECK(j->envs[0].n_options == 2 && !strcmp(j->envs[0].options[0].key, "room_size") &&
          !strcmp(j->envs[0].options[0].value, "6"));
    CHECK(j->algorithm.mode == JOB_MODE_SEED && j->algorithm.group_size == 8);
    CHECK(j->algorithm.history == 2 && j->algorithm.invalid_penalty == 0.1);
    CHECK(j->algorithm.clip_eps == 0.2 && j->algorithm.dual_clip == 3.0);
    CHECK(j->algorithm.kl_beta == 0.01 && j->algorithm.max_staleness == 1);
    CHECK(j->optim.betas[0] == 0.9 && j->optim.betas[1] == 0.999 && j->optim.lr == 1e-4);
    CHECK(j->optim.groups_per_step == 2 && j->optim.tokens_per_step == 8192);
    CHECK(j->optim.schedule == JOB_SCHEDULE_COSINE);
    CHECK(j->sampling.temperature == 0.7 && j->sampling.max_new_tokens == 64);
    CHECK(j->roles.actors == 2 && j->roles.analyzers == 1);
    CHECK(j->endpoints.base_port == 5550 && !strcmp(j->endpoints.host, "127.0.0.1"));
    CHECK(j->job.run_dir[0] == 0 && j->endpoints.status[0] == 0);
    /* derived values */
    CHECK(job_endpoint(j, "status", 0, ep, sizeof ep, err, sizeof err) == 0);
    CHECK(!strcmp(ep, "tcp://127.0.0.1:5555"));
    CHECK(job_resolve(j, err, sizeof err) == 0);
    CHECK(!strcmp(j->job.run_dir, "runs/seed-default"));
    CHECK(!strcmp(j->checkpoint.dir, "runs/seed-default/ckpt"));
    CHECK(!strcmp(j->endpoints.groups_in, "tcp://127.0.0.1:5550"));
    CHECK(!strcmp(j->endpoints.telemetry, "tcp://127.0.0.1:5554"));
    CHECK(!strcmp(j->endpoints.status, "tcp://127.0.0.1:5555"));
    job_config *k = malloc(sizeof *k);
    *k = *j;
    CHECK(job_resolve(k, err, sizeof err) == 0 && job_equal(j, k)); /* idempotent */
    /* binding side */
    CHECK(job_set(j, "endpoints.bind_host", "*", err, sizeof err) == 0);
    CHECK(job_endpoint(j, "weights", 1, ep, sizeof ep, err, sizeof err) == 0);
    CHECK(!strcmp(ep, "tcp://*:5553"));
    CHECK(job_endpoint(j, "weights", 0, ep, sizeof ep, err, sizeof err) == 0);
    CHECK(!strcmp(ep, "tcp://127.0.0.1:5553"));
    ERR(job_endpoint(j, "control", 0, ep, sizeof ep, err, sizeof err), err, "unknown endpoint",
        "'control'", "status");
    /* run_dir follows the name when not set */
    job_defaults(j);
    CHECK(job_set(j, "job.name", "exp-7", err, sizeof err) == 0);
    CHECK(job_resolve(j, err, sizeof err) == 0 && !strcmp(j->job.run_dir, "runs/exp-7"));
    char buf[32];
    CHECK(job_enum_name("model.backend", 1, buf, sizeof buf) &&
          !strcmp(job_enum_name("model.backend", 1, buf, sizeof buf), "cuda"));
    CHECK(job_enum_name("model.backend", 2, buf, sizeof buf) == NULL);
    CHECK(job_enum_name("job.seed", 0, buf, sizeof buf) == NULL);
    /* the key listing covers every key with a meaning */
    int n = job_key_count();
    CHECK(n > 80);
    for (int i = 0; i < n; i++) {
        const char *name, *doc;
        char exp[256];
        CHECK(job_key_info(i, &name, exp, sizeof exp, &doc) == 0 && name && doc && exp[0]);
    }
    free(j);
    free(k);
}

static void test_full_file(const char *dir) {
    job_config *j = malloc(sizeof *j);
    char err[SEED_ERRLEN], path[1024];
    snprintf(path, sizeof path, "%s/full.yaml", dir);
    job_defaults(j);
    int rc = job_load_file(j, path, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    CHECK(!strcmp(j->job.name, "full-test") && j->job.seed == 12345678901234ull);
    CHECK(j->job.total_steps == 77 && j->job.log_level == JOB_LOG_DEBUG);
    CHECK(j->model.backend == JOB_BACKEND_CUDA && j->model.init == JOB_INIT_LOAD &&
          j->model.dtype == JOB_DTYPE_BF16 && j->model.threads == 3);
    CHECK(j->n_envs == 3);
    CHECK(!strcmp(j->envs[0].name, "sokoban") && j->envs[0].weight == 2.0 &&
          j->envs[0].max_steps == 20 && j->envs[0].n_options == 2 &&
          !strcmp(j->envs[0].options[0].value, "7"));
    CHECK(!strcmp(j->envs[1].name, "household") && !strcmp(j->envs[1].split, "unseen") &&
          j->envs[1].n_options == 2 && !strcmp(j->envs[1].options[0].key, "families") &&
          !strcmp(j->envs[1].options[0].value, "pick_and_place,clean") &&
          !strcmp(j->envs[1].options[1].value, "yes"));
    CHECK(!strcmp(j->envs[2].name, "ezpoints") && j->envs[2].weight == 1.0 &&
          !strcmp(j->envs[2].split, "train") && j->envs[2].n_options == 0);
    CHECK(j->algorithm.mode == JOB_MODE_STATIC_SKILLS && j->algorithm.group_size == 16);
    CHECK(j->algorithm.adv_norm == JOB_ADV_MEAN && j->algorithm.opd_loss == JOB_OPD_IMPORTANCE);
    CHECK(j->algorithm.clip_eps == 0.28 && j->algorithm.gigpo_coef == 0.3);
    CHECK(!strcmp(j->algorithm.skill_library, "skills/library.json"));
    CHECK(j->optim.lr == 3e-6 && j->optim.betas[1] == 0.95 && j->optim.schedule == 1);
    CHECK(j->optim.groups_per_step == 16 && j->optim.tokens_per_step == 65536);
    CHECK(j->sampling.top_k == 50 && j->sampling.top_p == 0.95);
    CHECK(j->actor.episodes_in_flight == 32 && j->actor.groups_in_flight == 4);
    CHECK(j->analyzer.skill_source == JOB_SKILL_SELF &&
          !strcmp(j->analyzer.http_endpoint, "http://127.0.0.1:8000/v1"));
    CHECK(j->analyzer.max_skill_tokens == 200);
    CHECK(!strcmp(j->endpoints.bind_host, "*") && j->endpoints.base_port == 6000);
    CHECK(!strcmp(j->endpoints.curve_secret, "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"));
    CHECK(j->roles.actors == 4 && j->roles.max_restarts == 5 && j->roles.stop_timeout_s == 15);
    CHECK(j->checkpoint.every == 25 && j->checkpoint.resume == 0);
    CHECK(j->status.interval_s == 2.5 && j->wire.hwm == 32 && j->wire.request_timeout_ms == 4000);
    CHECK(job_resolve(j, err, sizeof err) == 0);
    CHECK(!strcmp(j->endpoints.status, "tcp://learner-0.learner:7000"));
    CHECK(!strcmp(j->endpoints.groups_in, "tcp://learner-0.learner:6000"));
    CHECK(!strcmp(j->endpoints.telemetry, "ipc:///tmp/seed-telemetry"));
    CHECK(!strcmp(j->checkpoint.dir, "/tmp/seed-full-test/checkpoints"));
    char ep[256];
    CHECK(job_endpoint(j, "status", 1, ep, sizeof ep, err, sizeof err) == 0 &&
          !strcmp(ep, "tcp://*:7000"));
    CHECK(job_endpoint(j, "telemetry", 1, ep, sizeof ep, err, sizeof err) == 0 &&
          !strcmp(ep, "ipc:///tmp/seed-telemetry"));
    free(j);
}

static void test_overrides(void) {
    job_config *j = malloc(sizeof *j);
    char err[SEED_ERRLEN];
    job_defaults(j);
    CHECK(job_set_arg(j, "algorithm.group_size=16", err, sizeof err) == 0);
    CHECK(j->algorithm.group_size == 16);
    CHECK(job_set_arg(j, "optim.betas=0.8,0.95", err, sizeof err) == 0);
    CHECK(j->optim.betas[0] == 0.8 && j->optim.betas[1] == 0.95);
    CHECK(job_set_arg(j, "optim.betas=[0.7, 0.9]", err, sizeof err) == 0);
    CHECK(j->optim.betas[0] == 0.7 && j->optim.betas[1] == 0.9);
    CHECK(job_set_arg(j, "checkpoint.resume=off", err, sizeof err) == 0 && !j->checkpoint.resume);
    CHECK(job_set_arg(j, "analyzer.http_model=a=b", err, sizeof err) == 0);
    CHECK(!strcmp(j->analyzer.http_model, "a=b")); /* splits at the first '=' only */
    CHECK(job_set_arg(j, "envs.0.options.room_size=8", err, sizeof err) == 0);
    CHECK(j->envs[0].n_options == 2 && !strcmp(j->envs[0].options[0].value, "8"));
    CHECK(job_set_arg(j, "envs.0.options.seed_offset=3", err, sizeof err) == 0);
    CHECK(j->envs[0].n_options == 3);
    CHECK(job_set_arg(j, "envs.1.name=ezpoints", err, sizeof err) == 0 && j->n_envs == 2);
    CHECK(job_set_arg(j, "envs.1.weight=0.25", err, sizeof err) == 0);
    CHECK(j->envs[1].weight == 0.25 && j->envs[1].n_options == 0);
    /* renaming an entry drops the old env's options and step limit */
    CHECK(job_set_arg(j, "envs.0.name=household", err, sizeof err) == 0);
    CHECK(!strcmp(j->envs[0].name, "household") && j->envs[0].n_options == 0 &&
          j->envs[0].max_steps == 0);
    CHECK(job_set_arg(j, "envs=webshop, searchqa", err, sizeof err) == 0);
    CHECK(j->n_envs == 2 && !strcmp(j->envs[0].name, "webshop") &&
          !strcmp(j->envs[1].name, "searchqa"));
    CHECK(job_set_arg(j, "endpoints.status=tcp://10.0.0.1:7000", err, sizeof err) == 0);
    CHECK(job_set_arg(j, "job.seed=18446744073709551615", err, sizeof err) == 0);
    CHECK(j->job.seed == UINT64_MAX);
    CHECK(job_set_arg(j, "analyzer.http_model=", err, sizeof err) == 0 &&
          j->analyzer.http_model[0] == 0);
    /* overrides on top of a file, through job_build */
    char *args[] = {"algorithm.mode=grpo", "roles.actors=0", "job.name=ov"};
    CHECK(job_build(j, NULL, 3, args, err, sizeof err) == 0);
    CHECK(j->algorithm.mode == JOB_MODE_GRPO && j->roles.actors == 0);
    CHECK(j->algorithm.w_opd == 0.0); /* grpo has no distillation term */
    CHECK(!strcmp(j->job.run_dir, "runs/ov"));
    char *bad[] = {"roles.actors=3", "algorithm.group_size=eight"};
    ERR(job_build(j, NULL, 2, bad, err, sizeof err), err,
        "command line: algorithm.group_size: expected an integer \u2265 2, got 'eight'");
    free(j);
}

static void test_errors(void) {
    job_config *j = malloc(sizeof *j), *before = malloc(sizeof *before);
    char err[SEED_ERRLEN];
    job_defaults(j);
    ERR(job_set(j, "algorithm.group_size", "eight", err, sizeof err), err,
        "algorithm.group_size: expected an integer \u2265 2, got 'eight'");
    ERR(job_set(j, "algorithm.group_size", "1", err, sizeof err), err, "algorithm.group_size",
        "\u2265 2", "'1'");
    ERR(job_set(j, "algorithm.group_size", "8.5", err, sizeof err), err, "got '8.5'");
    ERR(job_set(j, "algorithm.group_size", "99999999999", err, sizeof err), err,
        "got '99999999999'");
    ERR(job_set(j, "algorithm.grup_size", "8", err, sizeof err), err,
        "algorithm.grup_size: unknown key", "did you mean algorithm.group_size?");
    ERR(job_set(j, "algorithm.lr", "1e-5", err, sizeof err), err, "did you mean optim.lr?");
    ERR(job_set(j, "zzzzzz", "1", err, sizeof err), err, "zzzzzz: unknown key",
        "seedctl config --keys");
    ERR(job_set(j, "model.backend", "gpu", err, sizeof err), err,
        "model.backend: expected one of cpu|cuda, got 'gpu'");
    ERR(job_set(j, "sampling.top_p", "0", err, sizeof err), err,
        "sampling.top_p: expected a number in (0, 1], got '0'");
    ERR(job_set(j, "algorithm.clip_eps", "1", err, sizeof err), err, "(0, 1)", "'1'");
    ERR(job_set(j, "optim.lr", "-1", err, sizeof err), err, "optim.lr: expected a number > 0");
    ERR(job_set(j, "optim.lr", "nan", err, sizeof err), err, "got 'nan'");
    ERR(job_set(j, "optim.betas", "0.9", err, sizeof err), err,
        "optim.betas: expected two numbers");
    ERR(job_set(j, "optim.betas", "0.9,1.5", err, sizeof err), err, "[0, 1)", "'0.9,1.5'");
    ERR(job_set(j, "checkpoint.resume", "maybe", err, sizeof err), err,
        "checkpoint.resume: expected true or false, got 'maybe'");
    ERR(job_set(j, "job.seed", "-3", err, sizeof err), err, "job.seed", "'-3'");
    ERR(job_set(j, "job.name", "my run", err, sizeof err), err,
        "job.name: expected a non-empty "
        "name",
        "'my run'");
    ERR(job_set(j, "job.name", "", err, sizeof err), err, "job.name", "got ''");
    ERR(job_set(j, "endpoints.status", "localhost:5555", err, sizeof err), err,
        "endpoints.status: expected an endpoint tcp://HOST:PORT", "'localhost:5555'");
    ERR(job_set(j, "endpoints.status", "tcp://h:70000", err, sizeof err), err, "'tcp://h:70000'");
    ERR(job_set(j, "endpoints.host", "", err, sizeof err), err, "endpoints.host", "got ''");
    ERR(job_set(j, "endpoints.base_port", "65533", err, sizeof err), err,
        "endpoints.base_port: expected an integer in [1, 65530], got '65533'");
    ERR(job_set(j, "endpoints.curve_public", "short", err, sizeof err), err,
        "endpoints.curve_public: expected a Z85 CURVE key of 40 characters", "'short'");
    char longv[2000];
    memset(longv, 'a', sizeof longv - 1);
    longv[sizeof longv - 1] = 0;
    ERR(job_set(j, "model.path", longv, err, sizeof err), err,
        "model.path: expected a string of at most 1023 bytes, got 1999 bytes");
    ERR(job_set(j, "envs.3.name", "x", err, sizeof err), err, "envs.3.name",
        "expected an env index in [0, 1]", "got 3");
    ERR(job_set(j, "envs.0.colour", "red", err, sizeof err), err, "envs.0.colour: unknown key");
    ERR(job_set(j, "envs.x.name", "a", err, sizeof err), err, "envs.x.name: unknown key");
    ERR(job_set(j, "envs.0.split", "test", err, sizeof err), err,
        "envs.0.split: expected one of train|seen|unseen, got 'test'");
    ERR(job_set(j, "envs.0.weight", "0", err, sizeof err), err,
        "envs.0.weight: expected a number > 0");
    ERR(job_set(j, "envs.0.options.bad key", "1", err, sizeof err), err,
        "envs.0.options.bad key: expected an option name", "'bad key'");
    ERR(job_set(j, "envs", "", err, sizeof err), err, "envs: expected a comma-separated list");
    ERR(job_set_arg(j, "algorithm.group_size", err, sizeof err), err,
        "'algorithm.group_size': expected an override key=value");
    ERR(job_set_arg(j, "=3", err, sizeof err), err, "expected an override key=value");
    /* a failed set leaves the value as it was */
    CHECK(j->algorithm.group_size == 8 && j->sampling.top_p == 1.0 && j->n_envs == 1);

    /* YAML: the message starts with file:line, then names key, value and expectation */
    *before = *j;
    ERR(load_text(j, "job:\n  name: x\nalgorithm:\n  history: 2\n  group_size: eight\n", err), err,
        "job.yaml:5: algorithm.group_size: expected an integer \u2265 2, got 'eight'");
    CHECK(job_equal(j, before)); /* all or nothing: job.name was not applied */
    ERR(load_text(j, "algorithm: 5\n", err), err,
        "job.yaml:1: algorithm: expected a mapping of algorithm.* keys, got '5'");
    ERR(load_text(j, "algorithm:\n  group_size: [1, 2]\n", err), err,
        "job.yaml:2: algorithm.group_size: expected an integer \u2265 2, got a list");
    ERR(load_text(j, "model:\n  backend:\n    kind: cuda\n", err), err,
        "job.yaml:3: model.backend: expected one of cpu|cuda, got a mapping");
    ERR(load_text(j, "algorithm:\n  group_size: 8\n   history: 2\n", err), err,
        "job.yaml:3:", "YAML syntax error");
    ERR(load_text(j, "job:\n  name: \"unterminated\n", err), err, "job.yaml:", "YAML syntax error");
    ERR(load_text(j, "algoritm:\n  group_size: 8\n", err), err,
        "job.yaml:2: algoritm: unknown section (did you mean algorithm?)");
    ERR(load_text(j, "algorithm:\n  group_size: 8\n  group_size: 9\n", err), err,
        "job.yaml:3: algorithm.group_size: set twice (first on line 2)");
    ERR(load_text(j, "- a\n- b\n", err), err, "job.yaml:1: expected a mapping of sections");
    ERR(load_text(j, "envs:\n  sokoban: {}\n", err), err, "job.yaml:2: envs: expected a list");
    ERR(load_text(j, "envs:\n  - weight: 2\n", err), err,
        "job.yaml:2: envs.0.name: an env entry "
        "needs a name");
    ERR(load_text(j, "envs:\n  - name: sokoban\n    options:\n      room: [6, 6]\n", err), err,
        "job.yaml:4: envs.0.options.room: expected a text value", "got a list");
    ERR(load_text(j, "optim:\n  betas: [0.9, [1]]\n", err), err,
        "optim.betas: expected numbers, "
        "got a list");
    ERR(load_text(j, "job:\n  name: a\n---\njob:\n  name: b\n", err), err,
        "expected one YAML document");
    ERR(job_load_file(j, "/nonexistent/job.yaml", err, sizeof err), err,
        "cannot open /nonexistent/job.yaml");
    CHECK(job_equal(j, before));
    /* nulls and empty sections */
    CHECK(load_text(j, "analyzer:\n  http_model: ~\nstatus:\n", err) == 0);
    CHECK(j->analyzer.http_model[0] == 0);
    CHECK(load_text(j, "", err) == 0 && job_equal(j, before));

    /* rules across keys, checked by job_resolve */
    job_defaults(j);
    CHECK(job_set(j, "optim.micro_batch_tokens", "99999", err, sizeof err) == 0);
    ERR(job_resolve(j, err, sizeof err), err,
        "optim.micro_batch_tokens: expected at most optim.tokens_per_step (8192), got 99999");
    job_defaults(j);
    CHECK(job_set(j, "analyzer.skill_source", "http", err, sizeof err) == 0);
    ERR(job_resolve(j, err, sizeof err), err, "analyzer.http_endpoint", "skill_source is http");
    job_defaults(j);
    CHECK(job_set(j, "endpoints.curve_public", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", err,
                  sizeof err) == 0);
    ERR(job_resolve(j, err, sizeof err), err, "endpoints.curve_secret: expected a key");
    job_defaults(j);
    CHECK(job_set(j, "endpoints.status", "tcp://127.0.0.1:5550", err, sizeof err) == 0);
    ERR(job_resolve(j, err, sizeof err), err, "endpoints.status", "same as endpoints.groups_in");
    job_defaults(j);
    CHECK(job_set(j, "roles.restart_backoff_max_s", "0.1", err, sizeof err) == 0);
    ERR(job_resolve(j, err, sizeof err), err, "roles.restart_backoff_max_s");
    free(j);
    free(before);
}

/* Effective config -> YAML -> load onto defaults -> resolve: the same struct. */
static void round_trip(const job_config *src, int flags) {
    job_config *back = malloc(sizeof *back);
    char err[SEED_ERRLEN];
    char *y = job_to_yaml(src, flags);
    CHECK(y != NULL);
    job_defaults(back);
    int rc = load_text(back, y, err);
    if (rc) fprintf(stderr, "%s\n--- yaml ---\n%s\n", err, y);
    CHECK(rc == 0);
    CHECK(job_resolve(back, err, sizeof err) == 0);
    CHECK(job_equal(src, back));
    if (!job_equal(src, back)) fprintf(stderr, "--- yaml ---\n%s\n", y);
    /* and a second trip writes the same text */
    char *y2 = job_to_yaml(back, flags);
    CHECK(y2 && !strcmp(y, y2));
    free(y);
    free(y2);
    free(back);
}

static void test_round_trip(const char *dir, const char *default_yaml) {
    job_config *j = malloc(sizeof *j), *d = malloc(sizeof *d);
    char err[SEED_ERRLEN], path[1024];
    CHECK(job_build(j, NULL, 0, NULL, err, sizeof err) == 0);
    round_trip(j, 0);
    round_trip(j, JOB_YAML_COMMENTS);
    snprintf(path, sizeof path, "%s/full.yaml", dir);
    char *args[] = {"envs.1.options.note=quote \" back\\slash\ttab",
                    "job.seed=18446744073709551615", "optim.lr=1.2345678901234567e-7",
                    "analyzer.http_model=colon: hash #"};
    int rc = job_build(j, path, 4, args, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    round_trip(j, 0);
    round_trip(j, JOB_YAML_COMMENTS);
    /* job_equal sees a difference in a key and in an env option */
    *d = *j;
    d->algorithm.kl_beta += 1e-9;
    CHECK(!job_equal(j, d));
    *d = *j;
    d->envs[1].options[0].value[0] ^= 1;
    CHECK(!job_equal(j, d));
    /* JSON: a secret key never shows */
    char *js = job_to_json(j, 0);
    CHECK(js && !strstr(js, "JTKVSB") && strstr(js, "\"curve_secret\":\"(set)\""));
    free(js);
    /* deploy/jobs/default.yaml is the embedded default job written out */
    job_defaults(j);
    job_defaults(d);
    rc = job_load_file(d, default_yaml, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0 && job_equal(j, d));
    free(j);
    free(d);
}

static void test_default_model(void) {
    char p[4096], err[SEED_ERRLEN];
    char tmp[] = "/tmp/job_test_home_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/deploy", tmp);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/deploy/models", tmp);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/deploy/models/agent", tmp);
    mkdir(sub, 0755);
    setenv("SEED_HOME", tmp, 1);
    CHECK(job_find_default_model(p, sizeof p, err, sizeof err) == 0 && !strcmp(p, sub));
    job_config *j = malloc(sizeof *j);
    CHECK(job_build(j, NULL, 0, NULL, err, sizeof err) == 0 && !strcmp(j->model.path, sub));
    CHECK(job_build(j, NULL, 1, (char *[]){"model.path=/m"}, err, sizeof err) == 0 &&
          !strcmp(j->model.path, "/m"));
    ERR(job_find_default_model(p, 8, err, sizeof err), err, "does not fit");
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/deploy/models", tmp);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/deploy", tmp);
    rmdir(sub);
    rmdir(tmp);
    free(j);
    unsetenv("SEED_HOME");
}

/* Build the default job with overrides; 0 on success. */
static int build(job_config *j, char *err, int n, char **args) {
    return job_build(j, NULL, n, args, err, SEED_ERRLEN);
}
#define BUILD(j, err, ...)                                                                         \
    build(j, err, (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)), (char *[]){__VA_ARGS__})

/* A key a mode cannot honour is an error naming the key, the value, the mode and why;
 * the neutral values a mode writes, and the defaults, are accepted and resolve again. */
static void test_mode_keys(void) {
    job_config *j = malloc(sizeof *j), *k = malloc(sizeof *k);
    char err[SEED_ERRLEN];
    /* refused */
    ERR(BUILD(j, err, "algorithm.mode=grpo", "algorithm.w_opd=0.5"), err,
        "algorithm.w_opd: '0.5' cannot be honoured in algorithm.mode grpo", "no distillation term",
        "expected the default 1.0 or 0");
    ERR(BUILD(j, err, "algorithm.mode=skill_prompt", "algorithm.w_opd=2"), err, "algorithm.w_opd",
        "algorithm.mode skill_prompt");
    ERR(BUILD(j, err, "algorithm.mode=skill_prompt", "algorithm.c_opd=1.5"), err,
        "algorithm.c_opd: '1.5'", "algorithm.mode skill_prompt", "no distillation term");
    ERR(BUILD(j, err, "algorithm.mode=grpo", "algorithm.opd_loss=delta"), err,
        "algorithm.opd_loss: 'delta'", "algorithm.mode grpo", "or none");
    ERR(BUILD(j, err, "algorithm.mode=grpo", "algorithm.opd_loss=importance",
              "algorithm.opd_loss_coef=0.1"),
        err, "algorithm.opd_loss", "algorithm.mode grpo");
    ERR(BUILD(j, err, "algorithm.mode=skill_prompt", "algorithm.opd_loss_coef=0.1"), err,
        "algorithm.opd_loss_coef: '0.1'", "algorithm.mode skill_prompt");
    ERR(BUILD(j, err, "algorithm.mode=seed", "algorithm.skill_library=lib.json"), err,
        "algorithm.skill_library: 'lib.json' cannot be honoured in algorithm.mode seed",
        "only skill_prompt and static_skills read a skill library", "default, empty");
    ERR(BUILD(j, err, "algorithm.mode=grpo", "algorithm.skill_library=skills"), err,
        "algorithm.skill_library", "algorithm.mode grpo");
    ERR(BUILD(j, err, "algorithm.mode=grpo", "analyzer.skill_source=oracle"), err,
        "analyzer.skill_source: 'oracle' cannot be honoured in algorithm.mode grpo",
        "the analyzer writes no skills", "expected the default self");
    ERR(BUILD(j, err, "algorithm.mode=skill_prompt", "analyzer.skill_source=http",
              "analyzer.http_endpoint=http://127.0.0.1:1/v1", "algorithm.stage1_steps=0"),
        err, "analyzer.skill_source: 'http'", "algorithm.mode skill_prompt");
    ERR(BUILD(j, err, "algorithm.mode=static_skills", "analyzer.skill_source=oracle"), err,
        "analyzer.skill_source: 'oracle'", "algorithm.mode static_skills",
        "the skill library takes the place of written skills");
    ERR(BUILD(j, err, "algorithm.mode=grpo", "analyzer.max_step_skills=3"), err,
        "analyzer.max_step_skills: '3'", "algorithm.mode grpo", "the mode uses no skills");
    ERR(BUILD(j, err, "algorithm.opd_loss_coef=0.1"), err,
        "algorithm.opd_loss_coef: '0.1' cannot be honoured with algorithm.opd_loss none");
    ERR(BUILD(j, err, "algorithm.mode=grpo", "algorithm.opd_baseline=group"), err,
        "algorithm.opd_baseline: 'group' cannot be honoured in algorithm.mode grpo");
    ERR(BUILD(j, err, "algorithm.opd_baseline=group", "algorithm.w_opd=0"), err,
        "algorithm.opd_baseline: 'group' cannot be honoured with algorithm.w_opd 0",
        "nothing uses q-s");
    CHECK(BUILD(j, err, "algorithm.opd_baseline=group") == 0 &&
          j->algorithm.opd_baseline == JOB_OPD_BASELINE_GROUP);
    /* actor.pool_sampling frontier chooses among a fixed pool's tasks: without one, refused */
    CHECK(BUILD(j, err, "actor.pool_sampling=frontier") == 0 &&
          j->actor.pool_sampling == JOB_POOL_FRONTIER);
    ERR(BUILD(j, err, "actor.pool_sampling=frontier", "envs.0.tasks=0"), err,
        "actor.pool_sampling: 'frontier' cannot be honoured", "no env has a fixed pool");
    ERR(BUILD(j, err, "actor.pool_sampling=hardest"), err, "actor.pool_sampling",
        "uniform|frontier");
    CHECK(BUILD(j, err, "algorithm.opd_baseline=group", "algorithm.w_opd=0",
                "algorithm.opd_loss=delta", "algorithm.opd_loss_coef=0.1") == 0);
    /* stage0_expert_noise acts only in a warm start */
    ERR(BUILD(j, err, "algorithm.stage0_expert_noise=0.3"), err,
        "algorithm.stage0_expert_noise: '0.3' cannot be honoured with algorithm.stage0_steps "
        "and stage1_steps 0");
    ERR(BUILD(j, err, "algorithm.stage0_steps=5", "algorithm.stage0_expert_noise=1"), err,
        "algorithm.stage0_expert_noise");
    CHECK(BUILD(j, err, "algorithm.stage0_steps=5", "algorithm.stage0_expert_noise=0.3") == 0 &&
          j->algorithm.stage0_expert_noise == 0.3);
    CHECK(BUILD(j, err, "algorithm.stage1_steps=5", "algorithm.stage0_expert_noise=0.3") == 0);
    /* so do stage0_step_skill_keep (stage 1 mixes stage-0 samples in) and stage1_episodes */
    ERR(BUILD(j, err, "algorithm.stage0_step_skill_keep=1"), err,
        "algorithm.stage0_step_skill_keep: '1.0' cannot be honoured with algorithm.stage0_steps "
        "and stage1_steps 0",
        "(expected 0.5)");
    CHECK(BUILD(j, err, "algorithm.stage1_steps=5", "algorithm.stage0_step_skill_keep=1") == 0 &&
          j->algorithm.stage0_step_skill_keep == 1.0);
    ERR(BUILD(j, err, "algorithm.stage0_step_skill_keep=1.5"), err,
        "algorithm.stage0_step_skill_keep");
    ERR(BUILD(j, err, "algorithm.stage0_steps=5", "algorithm.stage1_episodes=expert"), err,
        "algorithm.stage1_episodes: 'expert' cannot be honoured with algorithm.stage1_steps 0",
        "(expected policy)");
    CHECK(BUILD(j, err, "algorithm.stage1_steps=5", "algorithm.stage1_episodes=expert") == 0 &&
          j->algorithm.stage1_episodes == JOB_S1_EXPERT);
    ERR(BUILD(j, err, "algorithm.stage1_steps=5", "algorithm.stage1_episodes=oracle"), err,
        "algorithm.stage1_episodes", "policy|expert");
    /* opd_episodes: only a mode with a distillation term reads it */
    CHECK(BUILD(j, err, "algorithm.opd_episodes=lost") == 0 &&
          j->algorithm.opd_episodes == JOB_OPD_EPISODES_LOST);
    ERR(BUILD(j, err, "algorithm.mode=grpo", "algorithm.opd_episodes=lost"), err,
        "algorithm.opd_episodes: 'lost' cannot be honoured in algorithm.mode grpo");
    ERR(BUILD(j, err, "algorithm.opd_episodes=won"), err, "algorithm.opd_episodes", "all|lost");
    /* skill_temperature: only the policy's own skills are sampled */
    CHECK(BUILD(j, err, "analyzer.skill_temperature=0") == 0 &&
          j->analyzer.skill_temperature == 0.0);
    ERR(BUILD(j, err, "analyzer.skill_source=oracle", "analyzer.skill_temperature=1"), err,
        "analyzer.skill_temperature: '1.0' cannot be honoured with analyzer.skill_source oracle");
    ERR(BUILD(j, err, "algorithm.mode=static_skills", "algorithm.skill_library=x.json",
              "analyzer.skill_temperature=1"),
        err,
        "analyzer.skill_temperature: '1.0' cannot be honoured in algorithm.mode static_skills");
    ERR(BUILD(j, err, "analyzer.skill_temperature=-1"), err, "analyzer.skill_temperature");
    /* stage0_skill_demos: stage 0 and stage 1's acting half read it */
    ERR(BUILD(j, err, "algorithm.stage0_skill_demos=expert"), err,
        "algorithm.stage0_skill_demos: 'expert' cannot be honoured with algorithm.stage0_steps "
        "and stage1_steps 0",
        "(expected informed)");
    CHECK(BUILD(j, err, "algorithm.stage0_steps=5", "algorithm.stage0_skill_demos=expert") == 0 &&
          j->algorithm.stage0_skill_demos == JOB_SKILL_DEMOS_EXPERT);
    CHECK(BUILD(j, err, "algorithm.stage1_steps=5") == 0 &&
          j->algorithm.stage0_skill_demos == JOB_SKILL_DEMOS_INFORMED);
    ERR(BUILD(j, err, "algorithm.stage0_steps=5", "algorithm.stage0_skill_demos=omniscient"), err,
        "algorithm.stage0_skill_demos", "informed|expert");
    /* analyzer.max_step_skills: one limit with the skill parser (SKILL_LIB_MAX_STEPS) */
    job_defaults(j);
    ERR(job_set(j, "analyzer.max_step_skills", "17", err, sizeof err), err,
        "analyzer.max_step_skills: expected an integer in [0, 16], got '17'");
    CHECK(job_set(j, "analyzer.max_step_skills", "16", err, sizeof err) == 0);

    /* accepted: defaults, the neutral values, and what each mode honours */
    CHECK(BUILD(j, err, "algorithm.mode=grpo") == 0 && j->algorithm.w_opd == 0.0 &&
          j->algorithm.opd_loss == JOB_OPD_NONE && j->algorithm.skill_library[0] == 0);
    *k = *j;
    CHECK(job_resolve(k, err, sizeof err) == 0 && job_equal(j, k)); /* idempotent */
    round_trip(j, JOB_YAML_COMMENTS);
    CHECK(BUILD(j, err, "algorithm.mode=grpo", "algorithm.w_opd=0", "algorithm.opd_loss=none",
                "algorithm.opd_loss_coef=0", "analyzer.skill_source=self") == 0);
    /* http also writes the stage-1 labels, in every mode (with a stage 1 to label) */
    CHECK(BUILD(j, err, "algorithm.mode=grpo", "analyzer.skill_source=http",
                "analyzer.http_endpoint=http://127.0.0.1:1/v1", "algorithm.stage1_steps=3") == 0);
    CHECK(BUILD(j, err, "algorithm.mode=grpo", "analyzer.skill_source=http",
                "analyzer.http_endpoint=http://127.0.0.1:1/v1") != 0);
    CHECK(BUILD(j, err, "algorithm.mode=static_skills", "analyzer.skill_source=http",
                "analyzer.http_endpoint=http://127.0.0.1:1/v1", "algorithm.stage1_steps=3") == 0);
    CHECK(BUILD(j, err, "algorithm.mode=skill_prompt", "analyzer.max_step_skills=3") == 0 &&
          j->algorithm.w_opd == 0.0);
    CHECK(BUILD(j, err, "algorithm.mode=skill_prompt", "algorithm.skill_library=/lib") == 0 &&
          !strcmp(j->algorithm.skill_library, "/lib"));
    round_trip(j, 0);
    CHECK(BUILD(j, err, "algorithm.mode=static_skills", "algorithm.skill_library=/lib",
                "algorithm.w_opd=0.5", "algorithm.c_opd=1", "algorithm.opd_loss=delta",
                "algorithm.opd_loss_coef=0.2", "analyzer.max_step_skills=16") == 0 &&
          j->algorithm.w_opd == 0.5 && j->algorithm.opd_loss == JOB_OPD_DELTA);
    round_trip(j, 0);
    CHECK(BUILD(j, err, "algorithm.mode=seed", "analyzer.skill_source=oracle",
                "algorithm.opd_loss=importance", "algorithm.opd_loss_coef=0.1") == 0);
    round_trip(j, 0);

    /* the modes that read a library default to the shipped one, found like the tiny model */
    char tmp[] = "/tmp/job_test_skills_XXXXXX", sub[4200], p[4096];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(sub, sizeof sub, "%s/deploy", tmp);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/deploy/skills", tmp);
    mkdir(sub, 0755);
    setenv("SEED_HOME", tmp, 1);
    CHECK(job_find_shipped("skills", p, sizeof p, err, sizeof err) == 0 && !strcmp(p, sub));
    CHECK(BUILD(j, err, "algorithm.mode=skill_prompt") == 0 &&
          !strcmp(j->algorithm.skill_library, sub));
    *k = *j;
    CHECK(job_resolve(k, err, sizeof err) == 0 && job_equal(j, k));
    round_trip(j, JOB_YAML_COMMENTS);
    CHECK(BUILD(j, err, "algorithm.mode=static_skills") == 0 &&
          !strcmp(j->algorithm.skill_library, sub));
    CHECK(BUILD(j, err, "algorithm.mode=seed") == 0 && j->algorithm.skill_library[0] == 0);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/deploy", tmp);
    rmdir(sub);
    rmdir(tmp);
    unsetenv("SEED_HOME");
    free(j);
    free(k);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: job_test TESTS_DIR DEFAULT_YAML\n");
        return 2;
    }
    test_defaults();
    test_full_file(argv[1]);
    test_overrides();
    test_errors();
    test_round_trip(argv[1], argv[2]);
    test_default_model();
    test_mode_keys();
    if (check_failures) {
        fprintf(stderr, "job_test: %d checks failed\n", check_failures);
        return 1;
    }
    printf("job_test: all checks passed\n");
    return 0;
}
