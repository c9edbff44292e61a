/* skills_test.c — skill libraries: the parser's errors (each names the file, the key and
 * what was expected), lookups with the "*" fallback, the skill text the analyzer parses,
 * the one step-skill limit (item: analyzer.max_step_skills and skill_parsed agree), the
 * step lines an episode can use (skill_parse_episode), a job's library (file or directory),
 * and the shipped deploy/skills files: they parse and give every family each built-in
 * env reports an entry of its own.
 *
 * Usage: skills_test SKILLS_DIR (deploy/skills). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "envs/env.h"
#include "roles/skill.h"
#include "common/job.h"
#include "common/skill_library.h"
#include "common/util.h"

#include "tests/check.h"

/* rc must be an error whose sentence holds every fragment (NULL-terminated). */
static void check_err(int line, int rc, const char *err, ...) {
    if (rc == 0) {
        fprintf(stderr, "skills_test.c:%d: FAILED: expected an error, got success\n", line);
        check_failures++;
        return;
    }
    va_list ap;
    va_start(ap, err);
    for (const char *f; (f = va_arg(ap, const char *)) != NULL;)
        if (!strstr(err, f)) {
            fprintf(stderr, "skills_test.c:%d: FAILED: error \"%s\" lacks \"%s\"\n", line, err, f);
            check_failures++;
        }
    va_end(ap);
    printf("  ok: %s\n", err);
}
#define ERR(rc, err, ...) check_err(__LINE__, rc, err, __VA_ARGS__, (const char *)NULL)

static int parse(skill_lib *lib, const char *text, char *err) {
    return skill_lib_parse(lib, text, strlen(text), "lib.json", err, SEED_ERRLEN);
}

/* One family entry around a steps list. */
static int parse_steps(const char *steps, char *err) {
    char doc[32768];
    snprintf(doc, sizeof doc,
             "{\"env\": \"e\", \"skills\": {\"f\": {\"episode\": \"x\", "
             "\"steps\": [%s]}}}",
             steps);
    skill_lib lib = {0};
    int rc = parse(&lib, doc, err);
    skill_lib_free(&lib);
    return rc;
}

static void test_errors(void) {
    char err[SEED_ERRLEN], doc[65536];
    skill_lib lib = {0};
    ERR(parse(&lib, "{\"env\": \"e\",\n \"skills\": {,}}", err), err,
        "lib.json:2:", "expected JSON");
    ERR(parse(&lib, "[1, 2]", err), err, "lib.json: expected an object");
    ERR(parse(&lib, "{\"env\": \"e\", \"skils\": {}}", err), err, "lib.json: skils: unknown key",
        "env and skills");
    ERR(parse(&lib, "{\"env\": \"e\", \"env\": \"f\", \"skills\": {}}", err), err,
        "env: set twice");
    ERR(parse(&lib, "{\"format\": \"v2\", \"env\": \"e\", \"skills\": {}}", err), err,
        "format: expected \"seed-skill-library/1\", got 'v2'");
    ERR(parse(&lib, "{\"skills\": {\"f\": {\"episode\": \"x\"}}}", err), err,
        "env: expected the env's name");
    ERR(parse(&lib, "{\"env\": \"\", \"skills\": {\"f\": {\"episode\": \"x\"}}}", err), err,
        "env: expected the env's name");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {}}", err), err,
        "skills: expected an object with one entry per task family");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": [1]}", err), err, "skills: expected an object");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {\"f\": \"text\"}}", err), err,
        "skills.f: expected an object");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {\"f\": {\"steps\": []}}}", err), err,
        "skills.f.episode: expected a non-empty string, got nothing");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {\"f\": {\"episode\": \"\"}}}", err), err,
        "skills.f.episode: expected a non-empty string");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {\"f\": {\"episode\": 3}}}", err), err,
        "skills.f.episode: expected a non-empty string");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {\"f\": {\"episode\": \"a\\nstep 1: b\"}}}", err),
        err, "skills.f.episode: expected one line of text");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {\"f\": {\"episode\": \"a\", \"step\": []}}}",
              err),
        err, "skills.f.step: unknown key");
    ERR(parse(&lib,
              "{\"env\": \"e\", \"skills\": {\"f\": {\"episode\": \"a\"}, \"f\": "
              "{\"episode\": \"b\"}}}",
              err),
        err, "skills.f: set twice");
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {\"f\": {\"episode\": \"a\", \"steps\": \"x\"}}}",
              err),
        err, "skills.f.steps: expected a list");
    ERR(parse_steps("\"do the thing\"", err), err,
        "lib.json: skills.f.steps[0]: expected one line \"step k: sentence\"", "'do the thing'");
    ERR(parse_steps("\"step 0: x\"", err), err, "skills.f.steps[0]", "k >= 1");
    ERR(parse_steps("\"step 2:\"", err), err, "skills.f.steps[0]");
    ERR(parse_steps("\"step 1: a\", 7", err), err, "skills.f.steps[1]: expected a string");
    ERR(parse_steps("\"step 1: a\", \"step 3: b\\nstep 4: c\"", err), err, "skills.f.steps[1]");
    ERR(parse_steps("\"step 2: a\", \"step 2: b\"", err), err,
        "skills.f.steps[1]: expected a step number above 2 (the previous line's), got 2");
    size_t o = 0;
    for (int k = 1; k <= SKILL_LIB_MAX_STEPS + 1; k++)
        o += (size_t)snprintf(doc + o, sizeof doc - o, "%s\"step %d: x\"", k > 1 ? ", " : "", k);
    ERR(parse_steps(doc, err), err, "skills.f.steps: expected at most 16 step skills, got 17");
    char line[SKILL_LIB_LINE_MAX + 64];
    memset(line, 'a', sizeof line);
    memcpy(line, "\"step 1: ", 9);
    snprintf(line + SKILL_LIB_LINE_MAX + 2, 4, "\"");
    ERR(parse_steps(line, err), err, "skills.f.steps[0]: expected at most 500 bytes, got 501");
    o = 0;
    for (int k = 1; k <= 6; k++) { /* 6 lines of ~400 bytes: past the text bound */
        o += (size_t)snprintf(doc + o, sizeof doc - o, "%s\"step %d: ", k > 1 ? ", " : "", k);
        for (int i = 0; i < 400; i++) doc[o++] = 'b';
        doc[o++] = '"';
        doc[o] = 0;
    }
    ERR(parse_steps(doc, err), err, "skills.f: expected a skill text", "at most 2000 bytes");
    o = (size_t)snprintf(doc, sizeof doc, "{\"env\": \"e\", \"skills\": {");
    for (int f = 0; f <= SKILL_LIB_MAX_FAMILIES; f++)
        o += (size_t)snprintf(doc + o, sizeof doc - o, "%s\"f%d\": {\"episode\": \"x\"}",
                              f ? ", " : "", f);
    snprintf(doc + o, sizeof doc - o, "}}");
    ERR(parse(&lib, doc, err), err, "skills: expected at most 64 families, got 65");
    char *big = malloc(SKILL_LIB_MAX_FILE + 2);
    memset(big, ' ', SKILL_LIB_MAX_FILE + 1);
    big[SKILL_LIB_MAX_FILE + 1] = 0;
    ERR(skill_lib_parse(&lib, big, SKILL_LIB_MAX_FILE + 1, "big.json", err, sizeof err), err,
        "big.json: expected a skill library of at most 1048576 bytes");
    free(big);
    ERR(skill_lib_load_file(&lib, "/nonexistent/lib.json", err, sizeof err), err,
        "/nonexistent/lib.json");
    CHECK(lib.n == 0 && lib.n_files == 0); /* every failure left it unchanged */
    /* a second library for the same env */
    CHECK(parse(&lib, "{\"env\": \"e\", \"skills\": {\"*\": {\"episode\": \"x\"}}}", err) == 0);
    ERR(parse(&lib, "{\"env\": \"e\", \"skills\": {\"f\": {\"episode\": \"y\"}}}", err), err,
        "env: a library for env e is already loaded");
    CHECK(lib.n == 1);
    skill_lib_free(&lib);
}

static void test_lookup(void) {
    char err[SEED_ERRLEN];
    skill_lib lib = {0};
    const char *doc = "{\"format\": \"seed-skill-library/1\", \"env\": \"ez\", \"skills\": {"
                      "\"heat\": {\"episode\": \"Heat it first.\", \"steps\": [\"step 1: Go to the "
                      "microwave.\", \"Step 3 : Heat the mug.\", \"step 7: Put it down.\"]},"
                      "\"*\": {\"episode\": \"Read the task.\"}}}";
    int rc = parse(&lib, doc, err);
    if (rc) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0 && lib.n == 2);
    const skill_lib_entry *h = skill_lib_find(&lib, "ez", "heat");
    CHECK(h && !strcmp(h->family, "heat") && !strcmp(h->episode, "Heat it first."));
    CHECK(h && h->n_steps == 3 && h->step_no[1] == 3 && !strcmp(h->step[1], "Heat the mug."));
    const skill_lib_entry *any = skill_lib_find(&lib, "ez", "cool");
    CHECK(any && !strcmp(any->family, "*") && any->n_steps == 0);
    CHECK(skill_lib_find(&lib, "other", "heat") == NULL);
    CHECK(h && skill_lib_step(h, 3, 16) && !strcmp(skill_lib_step(h, 3, 16), "Heat the mug."));
    CHECK(h && skill_lib_step(h, 2, 16) == NULL && skill_lib_step(h, 3, 1) == NULL);
    /* the skill text is what skill_parse reads back as the same skill */
    char text[SKILL_LIB_TEXT_MAX + 1];
    CHECK(h && skill_lib_text(h, 16, text, sizeof text) > 0);
    CHECK(!strcmp(text, "Heat it first.\nstep 1: Go to the microwave.\nstep 3: Heat the mug.\n"
                        "step 7: Put it down."));
    skill_parsed sk;
    skill_parse(text, strlen(text), 16, &sk);
    CHECK(!strcmp(sk.episode, "Heat it first.") && sk.n_steps == 3 && sk.step_no[2] == 7 &&
          !strcmp(sk.step[2], "Put it down."));
    CHECK(h && skill_lib_text(h, 2, text, sizeof text) > 0 && !strstr(text, "step 7"));
    CHECK(h && skill_lib_text(h, 16, text, 10) == -1);
    skill_lib_free(&lib);
}

/* analyzer.max_step_skills and skill_parsed keep the same number of step lines. */
static void test_step_limit(void) {
    char text[8192], err[SEED_ERRLEN];
    size_t o = (size_t)snprintf(text, sizeof text, "Episode skill.");
    for (int k = 1; k <= 40; k++)
        o += (size_t)snprintf(text + o, sizeof text - o, "\nstep %d: Do thing %d.", k, k);
    job_config *j = malloc(sizeof *j);
    job_defaults(j);
    char v[16];
    snprintf(v, sizeof v, "%d", SKILL_LIB_MAX_STEPS);
    CHECK(job_set(j, "analyzer.max_step_skills", v, err, sizeof err) == 0);
    skill_parsed sk;
    skill_parse(text, o, j->analyzer.max_step_skills, &sk);
    CHECK(sk.n_steps == j->analyzer.max_step_skills && sk.step_no[15] == 16);
    snprintf(v, sizeof v, "%d", SKILL_LIB_MAX_STEPS + 1);
    CHECK(job_set(j, "analyzer.max_step_skills", v, err, sizeof err) != 0);
    skill_parse(text, o, 100, &sk); /* a caller past the limit still gets the limit */
    CHECK(sk.n_steps == SKILL_LIB_MAX_STEPS);
    free(j);
}

/* A policy-written skill for a 2-step episode: step 1 twice, a step 7, a step 3 and a
 * step 2. skill_parse_episode keeps the first step 1 and the step 2, in order, and every
 * step's lookup is what it was; the dropped lines do not count against max_steps (with a
 * limit of 2, parse-then-filter would have kept "step 1" twice and lost step 2). */
static void test_parse_episode(void) {
    const char *t = "Episode skill.\nstep 1: First one.\nstep 1: Again.\nstep 7: Far past.\n"
                    "step 3: Past the end.\nstep 2: Second.";
    skill_parsed sk;
    skill_parse(t, strlen(t), SKILL_LIB_MAX_STEPS, &sk);
    CHECK(sk.n_steps == 5);
    for (int max = 2; max <= SKILL_LIB_MAX_STEPS; max += SKILL_LIB_MAX_STEPS - 2) {
        skill_parse_episode(t, strlen(t), max, 2, &sk);
        CHECK(sk.n_steps == 2 && sk.step_no[0] == 1 && sk.step_no[1] == 2);
        CHECK(!strcmp(sk.step[0], "First one.") && !strcmp(sk.step[1], "Second."));
        CHECK(!strcmp(skill_for_step(&sk, 1), "First one.") && !skill_for_step(&sk, 3));
        CHECK(!strcmp(sk.episode, "Episode skill."));
    }
    skill_parse_episode(t, strlen(t), 1, 2, &sk); /* the limit still holds */
    CHECK(sk.n_steps == 1 && sk.step_no[0] == 1);
    skill_parse_episode(t, strlen(t), SKILL_LIB_MAX_STEPS, 1, &sk); /* a 1-step episode */
    CHECK(sk.n_steps == 1 && sk.step_no[0] == 1 && !strcmp(sk.episode, "Episode skill."));
    skill_parse_episode(t, strlen(t), SKILL_LIB_MAX_STEPS, 0, &sk);
    CHECK(sk.n_steps == 0 && !skill_for_step(&sk, 1));
}

/* A job's library: a directory of <env>.json, or one file for a one-env job. */
static void test_job_library(const char *dir) {
    char err[SEED_ERRLEN], path[4096];
    job_config *j = malloc(sizeof *j);
    skill_lib lib = {0};
    job_defaults(j);
    CHECK(job_set(j, "envs", "sokoban,household,ezpoints", err, sizeof err) == 0);
    snprintf(j->algorithm.skill_library, sizeof j->algorithm.skill_library, "%s", dir);
    int rc = skill_lib_load_job(&lib, j, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0 && lib.n_files == 3);
    skill_lib_free(&lib);
    CHECK(job_set(j, "envs", "webshop,searchqa", err, sizeof err) == 0);
    rc = skill_lib_load_job(&lib, j, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0 && lib.n_files == 2);
    skill_lib_free(&lib);
    /* remote serves any env: no library ships for it */
    CHECK(job_set(j, "envs", "sokoban,remote", err, sizeof err) == 0);
    ERR(skill_lib_load_job(&lib, j, err, sizeof err), err,
        "algorithm.skill_library:", "has no remote.json (the library of env remote");
    skill_lib_free(&lib);
    snprintf(path, sizeof path, "%s/sokoban.json", dir);
    snprintf(j->algorithm.skill_library, sizeof j->algorithm.skill_library, "%s", path);
    ERR(skill_lib_load_job(&lib, j, err, sizeof err), err, "holds only env sokoban",
        "also plays remote", "directory");
    skill_lib_free(&lib);
    CHECK(job_set(j, "envs", "sokoban", err, sizeof err) == 0);
    CHECK(skill_lib_load_job(&lib, j, err, sizeof err) == 0 && lib.n_files == 1);
    skill_lib_free(&lib);
    CHECK(job_set(j, "envs", "ezpoints", err, sizeof err) == 0);
    ERR(skill_lib_load_job(&lib, j, err, sizeof err), err,
        "holds the library of env sokoban, which the job does not play");
    skill_lib_free(&lib);
    snprintf(j->algorithm.skill_library, sizeof j->algorithm.skill_library, "/nonexistent/x");
    ERR(skill_lib_load_job(&lib, j, err, sizeof err), err,
        "algorithm.skill_library: '/nonexistent/x' does not exist");
    j->algorithm.skill_library[0] = 0;
    ERR(skill_lib_load_job(&lib, j, err, sizeof err), err, "algorithm.skill_library: not set");
    /* a directory whose <env>.json is broken: the error names the file and key */
    char tmp[] = "/tmp/skills_test_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(path, sizeof path, "%s/ezpoints.json", tmp);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"env\": \"ezpoints\", \"skills\": {\"ezpoints\": {\"episode\": 1}}}", f);
        fclose(f);
    }
    snprintf(j->algorithm.skill_library, sizeof j->algorithm.skill_library, "%s", tmp);
    ERR(skill_lib_load_job(&lib, j, err, sizeof err), err, "algorithm.skill_library:", path,
        "skills.ezpoints.episode: expected a non-empty string");
    skill_lib_free(&lib);
    unlink(path);
    rmdir(tmp);
    free(j);
}

/* The shipped libraries parse and give every family the env reports its own entry. */
static void test_shipped(const char *dir) {
    static const char *const envs[] = {"sokoban", "ezpoints", "household", "webshop", "searchqa"};
    char err[SEED_ERRLEN], path[4096];
    for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
        skill_lib lib = {0};
        snprintf(path, sizeof path, "%s/%s.json", dir, envs[i]);
        int rc = skill_lib_load_file(&lib, path, err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        CHECK(rc == 0 && lib.n_files == 1 && !strcmp(lib.env_of_file[0], envs[i]));
        const skill_lib_entry *any = skill_lib_find(&lib, envs[i], NULL);
        CHECK(any && !strcmp(any->family, "*"));
        env *e = NULL;
        CHECK(env_create(&e, envs[i], NULL, 0, err, sizeof err) == 0);
        char seen[16][64];
        int n_seen = 0;
        for (int split = 0; split < 3 && e; split++)
            for (uint64_t seed = 0; seed < 200; seed++) {
                env_obs obs;
                if (env_reset(e, seed, (env_split)split, &obs, err, sizeof err)) {
                    fprintf(stderr, "%s\n", err);
                    check_failures++;
                    break;
                }
                const skill_lib_entry *x = skill_lib_find(&lib, envs[i], obs.family);
                int own = x && !strcmp(x->family, obs.family);
                if (!own) fprintf(stderr, "%s: no entry for family %s\n", path, obs.family);
                CHECK(own);
                int k = 0;
                while (k < n_seen && strcmp(seen[k], obs.family)) k++;
                if (k == n_seen && n_seen < 16) snprintf(seen[n_seen++], 64, "%s", obs.family);
            }
        env_destroy(e);
        printf("  %s: %d families reported, each with its own entry (%d entries)\n", envs[i],
               n_seen, lib.n);
        CHECK(lib.n == n_seen + 1); /* the families plus "*" */
        if (!strcmp(envs[i], "household")) CHECK(n_seen == 6);
        if (!strcmp(envs[i], "webshop")) CHECK(n_seen == 5);  /* the five categories */
        if (!strcmp(envs[i], "searchqa")) CHECK(n_seen == 4); /* single/two/three-hop, comparison */
        /* each entry's skill text reads back through the analyzer's parser unchanged */
        for (int k = 0; k < lib.n; k++) {
            char text[SKILL_LIB_TEXT_MAX + 1];
            const skill_lib_entry *x = &lib.e[k];
            CHECK(skill_lib_text(x, SKILL_LIB_MAX_STEPS, text, sizeof text) > 0);
            skill_parsed sk;
            skill_parse(text, strlen(text), SKILL_LIB_MAX_STEPS, &sk);
            CHECK(!strcmp(sk.episode, x->episode) && sk.n_steps == x->n_steps);
            for (int s = 0; s < sk.n_steps && s < x->n_steps; s++)
                CHECK(sk.step_no[s] == x->step_no[s] && !strcmp(sk.step[s], x->step[s]));
        }
        skill_lib_free(&lib);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: skills_test SKILLS_DIR\n");
        return 2;
    }
    test_errors();
    test_lookup();
    test_step_limit();
    test_parse_episode();
    test_job_library(argv[1]);
    test_shipped(argv[1]);
    if (check_failures) {
        fprintf(stderr, "skills_test: %d checks failed\n", check_failures);
        return 1;
    }
    printf("skills_test: all checks passed\n");
    return 0;
}
