/* test_validate.c — the job-aware message validator (proto/validate.h), the one the
 * learner and the analyzer share.
 *
 * Checks: the fixtures' well-formed group, scored group, hello and heartbeat pass; then one
 * field at a time is made bad and the validator must name the right reason (and say what
 * was wrong): an env the job does not run or a forged name with quotes and a newline, a
 * split, a policy or scored version newer than the newest published, NaN, +inf and positive
 * log-probs, non-finite and huge rewards and returns, arrays that do not line up, an empty
 * prompt before a response, too many episodes, steps or tokens, names and texts past their
 * bounds, token ids outside the vocabulary, junk s and q, heartbeat counters past their
 * bounds (2.5e17 episodes in flight), and READY credit of INT_MAX or below 0. Exact
 * comparisons: the validator's answers are discrete. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/job.h"
#include "proto/validate.h"
#include "tests/wire/wire_fixtures.h"

#include "tests/check.h"

/* The validator's answer for g must be `want`, and the sentence must hold `word`. */
#define EXPECT_GROUP(g, lim, want, word)                                                           \
    do {                                                                                           \
        char why_[512] = "";                                                                       \
        wire_reject r_ = wire_check_group((g), (lim), why_, sizeof why_);                          \
        CHECK(r_ == (want) && (!(word)[0] || strstr(why_, (word))),                                \
              "got %s (%s), want %s with '%s'", wire_reject_name(r_), why_,                        \
              wire_reject_name(want), (word));                                                     \
    } while (0)

#define EXPECT_SCORED(sg, lim, want, word)                                                         \
    do {                                                                                           \
        char why_[512] = "";                                                                       \
        wire_reject r_ = wire_check_scored((sg), (lim), why_, sizeof why_);                        \
        CHECK(r_ == (want) && (!(word)[0] || strstr(why_, (word))),                                \
              "got %s (%s), want %s with '%s'", wire_reject_name(r_), why_,                        \
              wire_reject_name(want), (word));                                                     \
    } while (0)

static void make_job(job_config *job) {
    job_defaults(job);
    job->algorithm.group_size = 4;
    job->sampling.max_new_tokens = 16;
    job->envs[0].max_steps = 6;
}

static void test_names(void) {
    const char *seen[WIRE_REJ_N];
    for (int r = 0; r < WIRE_REJ_N; r++) {
        seen[r] = wire_reject_name((wire_reject)r);
        CHECK(seen[r] && seen[r][0] && strcmp(seen[r], "unknown"), "reason %d has no name", r);
        CHECK(wire_name_ok(seen[r], 47, 0), "reason name %s is not a plain name", seen[r]);
        for (int k = 0; k < r; k++)
            CHECK(strcmp(seen[k], seen[r]), "two reasons named %s", seen[r]);
    }
    CHECK(!strcmp(wire_reject_name(WIRE_REJ_N), "unknown"), "out of range");
    CHECK(wire_name_ok("actor-host.example-1234", WIRE_MAX_NAME, 0), "a peer id");
    CHECK(!wire_name_ok("", WIRE_MAX_NAME, 0) && wire_name_ok("", WIRE_MAX_NAME, 1), "empty");
    CHECK(!wire_name_ok("a\"b", WIRE_MAX_NAME, 0) && !wire_name_ok("a\nb", WIRE_MAX_NAME, 0) &&
              !wire_name_ok("a/b", WIRE_MAX_NAME, 0) && !wire_name_ok("a b", WIRE_MAX_NAME, 0),
          "quotes, newlines, slashes and spaces are not in names");
    CHECK(wire_name_ok("abcd", 4, 0) && !wire_name_ok("abcde", 4, 0), "length bound");
}

static void test_group(const job_config *job) {
    wire_limits lim;
    wire_limits_init(&lim, job);
    lim.max_version = 7;
    wfx_group f;
    wfx_group_make(&f, 4, 3, 40, 8, 11);
    Seed__EpisodeGroup *g = &f.g;
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");

    /* env and split */
    g->env = "household";
    EXPECT_GROUP(g, &lim, WIRE_REJ_ENV, "household");
    g->env = "sokoban\"},\n{\"forged\":1,\"x\":\"";
    EXPECT_GROUP(g, &lim, WIRE_REJ_STRING, "env name");
    g->env = "sokoban";
    g->split = "test";
    EXPECT_GROUP(g, &lim, WIRE_REJ_SPLIT, "test");
    g->split = "unseen";
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    g->split = "train";

    /* versions: the newest published is 7 */
    g->policy_version = 8;
    EXPECT_GROUP(g, &lim, WIRE_REJ_FUTURE_VERSION, "8");
    lim.max_version = UINT64_MAX;
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    lim.max_version = 7;
    g->policy_version = 7;

    /* log-probs */
    Seed__Step *st = g->episodes[2]->steps[1];
    float lp = st->sample_logprobs[3];
    st->sample_logprobs[3] = NAN;
    EXPECT_GROUP(g, &lim, WIRE_REJ_LOGPROB, "episode 2 step 1");
    st->sample_logprobs[3] = -INFINITY;
    EXPECT_GROUP(g, &lim, WIRE_REJ_LOGPROB, "");
    st->sample_logprobs[3] = 0.5f;
    EXPECT_GROUP(g, &lim, WIRE_REJ_LOGPROB, "0.5");
    st->sample_logprobs[3] = 1e-5f; /* rounding above 0 is tolerated */
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    st->sample_logprobs[3] = lp;

    /* rewards and returns */
    float rw = st->reward;
    st->reward = INFINITY;
    EXPECT_GROUP(g, &lim, WIRE_REJ_REWARD, "reward");
    st->reward = 3e38f;
    EXPECT_GROUP(g, &lim, WIRE_REJ_REWARD, "reward");
    st->reward = -1e4f;
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    st->reward = rw;
    float ret = g->episodes[1]->episode_return;
    g->episodes[1]->episode_return = NAN;
    EXPECT_GROUP(g, &lim, WIRE_REJ_REWARD, "return");
    g->episodes[1]->episode_return = ret;

    /* lengths, empty prompt */
    st->n_sample_logprobs--;
    EXPECT_GROUP(g, &lim, WIRE_REJ_LENGTHS, "sample log-probs");
    st->n_sample_logprobs++;
    uint32_t slot = st->skill_slot_step;
    st->skill_slot_step = 41;
    EXPECT_GROUP(g, &lim, WIRE_REJ_LENGTHS, "skill slots");
    st->skill_slot_step = slot;
    size_t np = st->n_prompt_ids;
    uint32_t s0 = st->skill_slot_episode, s1 = st->skill_slot_step;
    st->n_prompt_ids = 0;
    st->skill_slot_episode = st->skill_slot_step = 0;
    EXPECT_GROUP(g, &lim, WIRE_REJ_EMPTY_PROMPT, "empty prompt");
    size_t nr = st->n_response_ids;
    st->n_response_ids = st->n_sample_logprobs = 0; /* no response: nothing to score */
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    st->n_response_ids = st->n_sample_logprobs = nr;
    st->n_prompt_ids = np;
    st->skill_slot_episode = s0;
    st->skill_slot_step = s1;

    /* counts: the job's group_size 4, max_steps 6, max_new_tokens 16 */
    g->n_episodes = 5;
    Seed__Episode *extra[5] = {g->episodes[0], g->episodes[1], g->episodes[2], g->episodes[3],
                               g->episodes[0]};
    Seed__Episode **keep = g->episodes;
    g->episodes = extra;
    EXPECT_GROUP(g, &lim, WIRE_REJ_COUNTS, "group_size");
    g->episodes = keep;
    g->n_episodes = 4;
    Seed__Episode *ep = g->episodes[0];
    Seed__Step *many[7];
    for (int i = 0; i < 7; i++) many[i] = ep->steps[0];
    Seed__Step **ksteps = ep->steps;
    size_t kn = ep->n_steps;
    ep->steps = many;
    ep->n_steps = 7;
    EXPECT_GROUP(g, &lim, WIRE_REJ_COUNTS, "7 steps");
    ep->n_steps = 6;
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    ep->steps = ksteps;
    ep->n_steps = kn;
    job_config j2 = *job;
    j2.sampling.max_new_tokens = 7;
    wire_limits lim2 = lim;
    lim2.job = &j2;
    EXPECT_GROUP(g, &lim2, WIRE_REJ_COUNTS, "response tokens");

    /* strings */
    char *fam = ep->family;
    ep->family = "pick\"}\n{\"forged\":true";
    EXPECT_GROUP(g, &lim, WIRE_REJ_STRING, "family");
    ep->family = "";
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    ep->family = fam;
    char *big = malloc(WIRE_MAX_TEXT + 2);
    memset(big, 'a', WIRE_MAX_TEXT + 1);
    big[WIRE_MAX_TEXT + 1] = 0;
    char *act = st->action;
    st->action = big;
    EXPECT_GROUP(g, &lim, WIRE_REJ_STRING, "action");
    st->action = act;
    char *obs = st->observation;
    st->observation = big;
    EXPECT_GROUP(g, &lim, WIRE_REJ_STRING, "observation");
    big[WIRE_MAX_TEXT] = 0; /* exactly the bound */
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    st->observation = obs;
    free(big);
    char longid[WIRE_MAX_NAME + 2];
    memset(longid, 'x', sizeof longid - 1);
    longid[sizeof longid - 1] = 0;
    g->actor_id = longid;
    EXPECT_GROUP(g, &lim, WIRE_REJ_STRING, "actor id");
    g->actor_id = "actor-1";

    /* tokens */
    int32_t tk = st->response_ids[0];
    st->response_ids[0] = -3;
    EXPECT_GROUP(g, &lim, WIRE_REJ_TOKEN, "-3");
    st->response_ids[0] = 151664;
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, ""); /* no vocabulary known: only >= 0 */
    for (int e = 0; e < 4; e++)               /* the fixture draws ids up to 151665 */
        for (size_t t = 0; t < g->episodes[e]->n_steps; t++) {
            Seed__Step *x = g->episodes[e]->steps[t];
            for (size_t i = 0; i < x->n_prompt_ids; i++) x->prompt_ids[i] %= 4096;
            for (size_t i = 0; i < x->n_response_ids; i++) x->response_ids[i] %= 4096;
        }
    st->response_ids[0] = 151664;
    lim.vocab = 4096;
    EXPECT_GROUP(g, &lim, WIRE_REJ_TOKEN, "151664");
    st->response_ids[0] = tk % 4096;
    EXPECT_GROUP(g, &lim, WIRE_REJ_NONE, "");
    wfx_group_free(&f);
}

static void test_scored(const job_config *job) {
    wire_limits lim;
    wire_limits_init(&lim, job);
    lim.max_version = 7;
    wfx_scored f;
    wfx_scored_make(&f, 4, 2, 30, 6, 5);
    Seed__ScoredGroup *sg = &f.sg;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_NONE, "");
    /* the group inside is checked the same way */
    sg->group->env = "ezpoints";
    EXPECT_SCORED(sg, &lim, WIRE_REJ_ENV, "ezpoints");
    sg->group->env = "sokoban";
    sg->scored_version = 9;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_FUTURE_VERSION, "scored with version 9");
    sg->scored_version = 7;
    Seed__StepScores *sc = sg->analyses[2]->steps[1];
    float q = sc->q[2];
    sc->q[2] = 1e30f;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_SCORES, "q[2]");
    sc->q[2] = NAN;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_SCORES, "q[2]");
    sc->q[2] = q;
    float s = sc->s[0];
    sc->s[0] = INFINITY;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_SCORES, "s[0]");
    sc->s[0] = s;
    sc->n_q = 3;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_LENGTHS, "q scores");
    sc->n_q = 6;
    sg->analyses[1]->n_steps = 1; /* a partial set of scores */
    EXPECT_SCORED(sg, &lim, WIRE_REJ_LENGTHS, "scores 1 steps of 2");
    sg->analyses[1]->n_steps = 0; /* none (a failed episode) is fine */
    EXPECT_SCORED(sg, &lim, WIRE_REJ_NONE, "");
    sg->analyses[1]->n_steps = 2;
    sg->n_analyses = 3;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_LENGTHS, "3 analyses");
    sg->n_analyses = 4;
    sg->analyses[0]->skill_ids[4] = -1;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_TOKEN, "skill");
    sg->analyses[0]->skill_ids[4] = 5;
    sg->analyses[3]->source = (Seed__SkillSource)77;
    EXPECT_SCORED(sg, &lim, WIRE_REJ_LENGTHS, "skill source");
    sg->analyses[3]->source = SEED__SKILL_SOURCE__SKILL_SELF;
    sg->analyzer_id = "analyzer\n0";
    EXPECT_SCORED(sg, &lim, WIRE_REJ_STRING, "analyzer id");
    sg->analyzer_id = "analyzer-0";
    EXPECT_SCORED(sg, &lim, WIRE_REJ_NONE, "");
    Seed__ScoredGroup none = *sg;
    none.group = NULL;
    EXPECT_SCORED(&none, &lim, WIRE_REJ_LENGTHS, "without its episode group");
    wfx_scored_free(&f);
}

static void test_telemetry(const job_config *job) {
    wire_limits lim;
    wire_limits_init(&lim, job);
    lim.max_version = 7;
    char why[512];
    Seed__Heartbeat hb = SEED__HEARTBEAT__INIT;
    hb.role = SEED__ROLE__ROLE_ACTOR;
    hb.id = "actor-0";
    hb.host = "host-1";
    hb.weights_version = 7;
    hb.episodes = 1000;
    hb.episodes_in_flight = 8;
    hb.incarnation = 0x1234;
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_NONE, "%s", why);
    hb.episodes_in_flight = 251000000000000000ull; /* the claim */
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_TELEMETRY &&
              strstr(why, "in flight"),
          "%s", why);
    hb.episodes_in_flight = wire_max_in_flight(job);
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_NONE, "%s", why);
    CHECK(wire_max_in_flight(job) >=
              (uint64_t)(job->actor.groups_in_flight + 1) * (uint64_t)job->algorithm.group_size,
          "the bound is below what an honest actor holds");
    hb.episodes_in_flight = 8;
    hb.tokens_generated = (UINT64_C(1) << 53) + 1;
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_TELEMETRY &&
              strstr(why, "tokens_generated"),
          "%s", why);
    hb.tokens_generated = 5;
    hb.episodes_dropped = UINT64_MAX;
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_TELEMETRY, "%s", why);
    hb.episodes_dropped = 0;
    hb.weights_version = 8;
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_FUTURE_VERSION, "%s", why);
    hb.weights_version = 7;
    hb.time = NAN;
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_TELEMETRY, "%s", why);
    hb.time = 0;
    hb.role = (Seed__Role)42;
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_STRING, "%s", why);
    hb.role = SEED__ROLE__ROLE_ANALYZER;
    hb.id = "";
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_STRING, "%s", why);
    hb.id = "a\"b";
    CHECK(wire_check_heartbeat(&hb, &lim, why, sizeof why) == WIRE_REJ_STRING, "%s", why);

    Seed__Hello h = SEED__HELLO__INIT;
    h.role = SEED__ROLE__ROLE_ANALYZER;
    h.id = "analyzer-0";
    h.host = "";
    CHECK(wire_check_hello(&h, &lim, why, sizeof why) == WIRE_REJ_NONE, "%s", why);
    h.weights_version = 99;
    CHECK(wire_check_hello(&h, &lim, why, sizeof why) == WIRE_REJ_FUTURE_VERSION, "%s", why);
    h.weights_version = 0;
    h.host = "evil\nhost";
    CHECK(wire_check_hello(&h, &lim, why, sizeof why) == WIRE_REJ_STRING, "%s", why);
}

static void test_control(const job_config *job) {
    wire_limits lim;
    wire_limits_init(&lim, job);
    char why[512];
    Seed__Control c = SEED__CONTROL__INIT;
    c.kind = SEED__CONTROL__KIND__READY;
    c.role = "analyzer";
    c.count = 1;
    CHECK(wire_check_control(&c, &lim, why, sizeof why) == WIRE_REJ_NONE, "%s", why);
    c.count = 0;
    CHECK(wire_check_control(&c, &lim, why, sizeof why) == WIRE_REJ_NONE, "%s", why);
    c.count = INT_MAX;
    CHECK(wire_check_control(&c, &lim, why, sizeof why) == WIRE_REJ_CREDIT && strstr(why, "READY"),
          "%s", why);
    c.count = -1;
    CHECK(wire_check_control(&c, &lim, why, sizeof why) == WIRE_REJ_CREDIT, "%s", why);
    c.count = WIRE_MAX_READY;
    CHECK(wire_check_control(&c, &lim, why, sizeof why) == WIRE_REJ_NONE, "%s", why);
    c.role = "ana lyzer";
    CHECK(wire_check_control(&c, &lim, why, sizeof why) == WIRE_REJ_STRING, "%s", why);
}

/* The job check (common/job.c) is where the validator's env list comes from: it refuses
 * env names the registry does not know and an env list that is not a list. */
static void test_job_envs(void) {
    job_config j;
    char err[SEED_ERRLEN];
    job_defaults(&j);
    CHECK(job_load_string(&j, "envs: 5\n", 8, "t.yaml", err, sizeof err) < 0 &&
              strstr(err, "expected a list"),
          "'envs: 5' accepted: %s", err);
    char *bad[] = {"envs.0.name=nosuch"};
    CHECK(job_build(&j, NULL, 1, bad, err, sizeof err) < 0 && strstr(err, "unknown env 'nosuch'") &&
              strstr(err, "sokoban"),
          "an unknown env accepted: %s", err);
    char *good[] = {"envs=sokoban,ezpoints"};
    CHECK(job_build(&j, NULL, 1, good, err, sizeof err) == 0 && j.n_envs == 2, "%s", err);
}

int main(void) {
    job_config job;
    make_job(&job);
    test_names();
    test_job_envs();
    test_group(&job);
    test_scored(&job);
    test_telemetry(&job);
    test_control(&job);
    if (check_failures) {
        fprintf(stderr, "validate: %d check(s) failed\n", check_failures);
        return 1;
    }
    printf("validate: every reason named, every bad field refused for its reason\n");
    return 0;
}
