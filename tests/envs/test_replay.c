/* test_replay.c — the shared replay behind every oracle (env_replay) and the skill builder.
 *
 *   replay   for every built-in env (remote needs a server), episodes played live with a
 *            mix of expert moves, random admissible actions, unparsable text and invalid
 *            steps (NULL) are replayed from (seed, split, actions): the trace must hold,
 *            step by step, what the live env returned (observation, info, reward, done,
 *            won) and the state the env's trace_record writes for the live env; actions
 *            after the end are not replayed.
 *   skill    env_skill_step's rules (one line per step, at most 5, steps 1..n, step order)
 *            and the overflow error, through a real oracle; env_hindsight serves every env
 *            with an .oracle and refuses one without (remote).
 *   records  what webshop's and searchqa's trace_record keep, on expert episodes: the
 *            events, the target's rank after a search, the retrieved count and the
 *            expert's next action (which the expert then plays).
 *   style    every built-in env names its prompt style in its vtable. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "envs/searchqa.h"
#include "envs/webshop.h"
#include "common/util.h"
#include "tests/check.h"

enum { MAX_T = 120 };

typedef struct live_step {
    char *observation, *info;
    float reward;
    int done, won;
    void *state;
} live_step;

static live_step keep(const env *e, const env_obs *o) {
    live_step s = {
        strdup(o->observation), strdup(o->info ? o->info : ""), o->reward, o->done, o->won, NULL};
    if (e->vt->trace_size) {
        s.state = calloc(1, e->vt->trace_size);
        e->vt->trace_record((env *)e, s.state);
    }
    return s;
}

static void test_replay(void) {
    static const char *junk[] = {"dance", "", "<answer>x</answer>", "still", "go to nowhere"};
    static char store[MAX_T][256];
    const char *acts[MAX_T + 2];
    live_step live[MAX_T + 1];
    char err[SEED_ERRLEN], buf[256];
    int n_envs = 0;
    for (int k = 0; k < env_count(); k++) {
        const env_vtable *vt = env_at(k);
        if (!strcmp(vt->name, "remote")) continue;
        env *e = NULL;
        CHECK(env_create(&e, vt->name, NULL, 0, err, sizeof err) == 0, "%s: %s", vt->name, err);
        if (!e) continue;
        seed_rng rng;
        seed_rng_init(&rng, 7 + (uint64_t)k);
        int n_eps = 0, n_steps = 0;
        for (int seed = 0; seed < 8; seed++) {
            env_split split = (env_split)(seed % 3);
            double noise = seed < 2 ? 0.0 : seed < 5 ? 0.3 : 0.9;
            env_obs o;
            CHECK(env_reset(e, (uint64_t)seed, split, &o, err, sizeof err) == 0, "%s", err);
            live[0] = keep(e, &o);
            int n = 0;
            while (!o.done && n < MAX_T) {
                const char *a = NULL;
                uint64_t r = seed_rng_below(&rng, 10);
                if (seed_rng_uniform(&rng) >= noise) {
                    if (vt->expert && env_expert(e, buf, sizeof buf, err, sizeof err) == 0) a = buf;
                } else if (r < 3) {
                    a = NULL; /* an invalid reply */
                } else if (r < 5 || o.n_admissible == 0) {
                    a = junk[seed_rng_below(&rng, 5)];
                } else {
                    a = o.admissible[seed_rng_below(&rng, (uint64_t)o.n_admissible)];
                }
                if (a) snprintf(store[n], sizeof store[n], "%s", a);
                acts[n] = a ? store[n] : NULL;
                CHECK(env_step(e, acts[n], &o, err, sizeof err) == 0, "%s", err);
                live[++n] = keep(e, &o);
            }
            /* actions past the end of the episode are not replayed */
            int given = n;
            if (o.done) acts[given++] = "up", acts[given++] = NULL;
            env_trace tr;
            CHECK(env_replay(vt, NULL, 0, (uint64_t)seed, split, acts, given, &tr, err,
                             sizeof err) == 0,
                  "%s replay: %s", vt->name, err);
            CHECK(tr.n == n, "%s seed %d: replayed %d steps, the live episode took %d", vt->name,
                  seed, tr.n, n);
            CHECK(tr.won == o.won && tr.e && tr.e->vt == vt, "%s seed %d: verdict", vt->name, seed);
            for (int t = 0; t <= n && t <= tr.n; t++) {
                const env_trace_step *a = &tr.step[t];
                const live_step *b = &live[t];
                CHECK(a->action == (t ? acts[t - 1] : NULL), "%s step %d: action", vt->name, t);
                CHECK(!strcmp(a->observation, b->observation), "%s seed %d step %d: observation",
                      vt->name, seed, t);
                CHECK(!strcmp(a->info, b->info), "%s step %d: info", vt->name, t);
                CHECK(a->reward == b->reward && a->done == b->done && a->won == b->won,
                      "%s seed %d step %d: reward %g/%g done %d/%d won %d/%d", vt->name, seed, t,
                      a->reward, b->reward, a->done, b->done, a->won, b->won);
                size_t at = 0;
                while (at < vt->trace_size &&
                       ((const char *)a->state)[at] == ((const char *)b->state)[at])
                    at++;
                CHECK(at == vt->trace_size,
                      "%s seed %d step %d: the recorded state differs at byte %zu of %zu", vt->name,
                      seed, t, at, vt->trace_size);
            }
            env_trace_free(&tr);
            for (int t = 0; t <= n; t++) {
                free(live[t].observation);
                free(live[t].info);
                free(live[t].state);
            }
            n_eps++;
            n_steps += n;
        }
        printf("replay %s: %d episodes, %d steps equal to the live run (%zu bytes of state a "
               "step)\n",
               vt->name, n_eps, n_steps, vt->trace_size);
        env_destroy(e);
        n_envs++;
    }
    CHECK(n_envs >= 5, "only %d built-in envs replayed", n_envs);
    /* every built-in oracle reads privileged per-step state, so the loop above compared it */
    static const char *const traced[] = {"sokoban", "ezpoints", "household", "webshop", "searchqa"};
    for (size_t i = 0; i < sizeof traced / sizeof traced[0]; i++) {
        const env_vtable *vt = env_lookup(traced[i]);
        CHECK(vt && vt->oracle && vt->trace_size > 0 && vt->trace_record,
              "%s: an oracle on the replay with a trace record", traced[i]);
    }
    /* errors name the env and what was wrong */
    env_trace tr;
    CHECK(env_replay(env_lookup("sokoban"), NULL, 0, 1, ENV_SPLIT_TRAIN, NULL, 3, &tr, err,
                     sizeof err) != 0 &&
              strstr(err, "sokoban") && strstr(err, "3 actions"),
          "NULL actions: %s", err);
    env_kv bad = {"boxes", "0"};
    CHECK(env_replay(env_lookup("sokoban"), &bad, 1, 1, ENV_SPLIT_TRAIN, NULL, 0, &tr, err,
                     sizeof err) != 0 &&
              strstr(err, "'boxes'"),
          "bad config: %s", err);
}

/* The builder's rules seen through a real oracle: household's looping failure names loop
 * and search steps; sorted, unique, in range, at most 5. */
static void test_skill(void) {
    const char *looks[50];
    for (int i = 0; i < 50; i++) looks[i] = i % 2 ? "look" : "inventory";
    char skill[4096], err[SEED_ERRLEN];
    CHECK(env_hindsight("household", NULL, 0, 3, ENV_SPLIT_TRAIN, looks, 50, skill, sizeof skill,
                        err, sizeof err) == 0,
          "%s", err);
    int last = 0, lines = 0;
    for (const char *p = strchr(skill, '\n'); p; p = strchr(p + 1, '\n')) {
        int k = 0;
        CHECK(sscanf(p + 1, "step %d:", &k) == 1 && k > last && k <= 50, "line: %.60s", p + 1);
        last = k;
        lines++;
    }
    CHECK(lines >= 1 && lines <= ENV_SKILL_LINES, "%d step lines:\n%s", lines, skill);
    /* a buffer one byte short of the text: an error naming the env, and no partial text */
    size_t need = strlen(skill) + 1;
    CHECK(env_hindsight("household", NULL, 0, 3, ENV_SPLIT_TRAIN, looks, 50, skill, need - 1, err,
                        sizeof err) != 0 &&
              strstr(err, "household") && strstr(err, "does not fit") && skill[0] == 0,
          "short buffer: %s", err);
    CHECK(env_hindsight("household", NULL, 0, 3, ENV_SPLIT_TRAIN, looks, 50, skill, need, err,
                        sizeof err) == 0,
          "exact buffer: %s", err);
    printf("skill builder: %d step lines in order; a short buffer is an error\n", lines);
    /* env_hindsight: the replay for every env with an oracle, an error for one without */
    int n_oracles = 0;
    for (int k = 0; k < env_count(); k++) {
        const env_vtable *vt = env_at(k);
        const char *none[1] = {NULL};
        int rc = env_hindsight(vt->name, NULL, 0, 1, ENV_SPLIT_TRAIN, none, 1, skill, sizeof skill,
                               err, sizeof err);
        if (vt->oracle) {
            CHECK(rc == 0 && !strncmp(skill, "Failure", 7), "%s: %s", vt->name, rc ? err : skill);
            char again[4096];
            CHECK(env_hindsight_replay(vt, NULL, 0, 1, ENV_SPLIT_TRAIN, none, 1, again,
                                       sizeof again, err, sizeof err) == 0 &&
                      !strcmp(skill, again),
                  "%s: env_hindsight is env_hindsight_replay with the env's vtable", vt->name);
            n_oracles++;
        } else {
            CHECK(rc != 0 && strstr(err, vt->name) && strstr(err, "no hindsight oracle"),
                  "%s without an oracle: %s", vt->name, err);
        }
    }
    CHECK(n_oracles == 5, "%d envs have an oracle", n_oracles);
    printf("env_hindsight: %d envs through the replay, remote refused\n", n_oracles);
}

/* Plays the expert from the reset until the episode ends (acts: its actions) and replays
 * that episode into tr. 0, or -1 (a failed check) with tr empty. */
static int replay_expert(env *e, uint64_t seed, env_split split, const char **acts, env_trace *tr) {
    static char store[MAX_T][256];
    char err[SEED_ERRLEN];
    env_obs o;
    memset(tr, 0, sizeof *tr);
    CHECK(env_reset(e, seed, split, &o, err, sizeof err) == 0, "%s", err);
    int n = 0;
    while (!o.done && n < MAX_T) {
        CHECK(env_expert(e, store[n], sizeof store[n], err, sizeof err) == 0, "%s", err);
        acts[n] = store[n];
        CHECK(env_step(e, acts[n], &o, err, sizeof err) == 0, "%s", err);
        n++;
    }
    CHECK(o.won, "%s seed %llu: the expert lost", e->vt->name, (unsigned long long)seed);
    CHECK(env_replay(e->vt, NULL, 0, seed, split, acts, n, tr, err, sizeof err) == 0 && tr->n == n,
          "%s replay: %s", e->vt->name, err);
    return tr->step ? 0 : -1;
}

static void test_records(void) {
    const char *acts[MAX_T];
    char err[SEED_ERRLEN];
    env *e = NULL;
    int n_ws = 0, n_sq = 0;
    /* webshop: the expert searches (the target listed), opens the target, clicks its
     * options and buys it; the record holds each step's event */
    CHECK(env_create(&e, "webshop", NULL, 0, err, sizeof err) == 0, "%s", err);
    for (int seed = 0; e && seed < 6; seed++) {
        env_trace tr;
        if (replay_expert(e, (uint64_t)seed, (env_split)(seed % 3), acts, &tr)) continue;
        const ws_state *st = webshop_env_state(tr.e);
        int target = st->goal->target;
        const ws_trace_rec *r0 = tr.step[0].state;
        CHECK(r0->kind == WS_EV_NOOP && r0->item == -1 && r0->target_rank == -1,
              "webshop reset record");
        int searched = 0, opened = 0, options = 0;
        for (int t = 1; t <= tr.n; t++) {
            const ws_trace_rec *r = tr.step[t].state;
            if (!strncmp(acts[t - 1], "search[", 7)) {
                CHECK(r->kind == WS_EV_SEARCH && r->target_rank >= 0 &&
                          r->target_rank < st->n_results && st->results[r->target_rank] == target,
                      "webshop seed %d step %d: a search listing the target at its rank", seed, t);
                searched++;
            } else {
                CHECK(r->target_rank == -1, "webshop step %d: a rank only after a search", t);
            }
            opened += r->kind == WS_EV_ITEM && r->item == target;
            if (r->kind == WS_EV_OPTION) {
                CHECK(r->val == st->goal->opt_val[r->opt], "webshop step %d: the goal's option", t);
                options++;
            }
        }
        const ws_trace_rec *last = tr.step[tr.n].state;
        CHECK(searched >= 1 && opened == 1 && options == st->n_chosen && last->kind == WS_EV_BUY &&
                  last->item == target,
              "webshop seed %d: searched %d opened %d options %d, last event %d", seed, searched,
              opened, options, last->kind);
        env_trace_free(&tr);
        n_ws++;
    }
    env_destroy(e);
    /* searchqa: the record after step t holds the expert's next action, which the expert
     * episode then plays; the retrieved count only grows */
    e = NULL;
    CHECK(env_create(&e, "searchqa", NULL, 0, err, sizeof err) == 0, "%s", err);
    for (int seed = 0; e && seed < 9; seed++) {
        env_trace tr;
        if (replay_expert(e, (uint64_t)seed, (env_split)(seed % 3), acts, &tr)) continue;
        sq_state st;
        env_searchqa_state(tr.e, &st);
        int prev = 0;
        for (int t = 0; t <= tr.n; t++) {
            const sq_trace_rec *r = tr.step[t].state;
            if (t < tr.n)
                CHECK(!strcmp(r->expert, acts[t]),
                      "searchqa seed %d step %d: expert '%s', played '%s'", seed, t + 1, r->expert,
                      acts[t]);
            CHECK(r->n_retrieved >= prev && r->n_retrieved <= st.n_retrieved,
                  "searchqa step %d: retrieved %d after %d", t, r->n_retrieved, prev);
            if (t == 0) CHECK(r->n_retrieved == 0, "searchqa: nothing retrieved at the reset");
            prev = r->n_retrieved;
        }
        CHECK(prev == st.n_retrieved && st.n_retrieved > 0, "searchqa seed %d: retrieved", seed);
        env_trace_free(&tr);
        n_sq++;
    }
    env_destroy(e);
    printf("trace records: %d webshop and %d searchqa expert episodes\n", n_ws, n_sq);
}

static void test_style(void) {
    static const struct {
        const char *env;
        const env_prompt_style *style;
    } want[] = {{"sokoban", &env_prompt_style_sokoban},   {"ezpoints", &env_prompt_style_ezpoints},
                {"household", &env_prompt_style_default}, {"webshop", &env_prompt_style_webshop},
                {"searchqa", &env_prompt_style_searchqa}, {"remote", NULL}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const env_vtable *vt = env_lookup(want[i].env);
        CHECK(vt && vt->prompt_style == want[i].style, "%s: prompt style", want[i].env);
    }
    /* the env's style decides: sokoban's rejects no CJK, household's default does */
    CHECK(!env_parse_rejects_cjk("sokoban") && env_parse_rejects_cjk("household") &&
              env_parse_rejects_cjk("remote") && env_parse_rejects_cjk(NULL),
          "cjk by style");
    printf("prompt styles: named by each env's vtable\n");
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all";
    if (!strcmp(which, "all") || !strcmp(which, "replay")) test_replay();
    if (!strcmp(which, "all") || !strcmp(which, "skill")) test_skill();
    if (!strcmp(which, "all") || !strcmp(which, "style")) test_style();
    if (!strcmp(which, "all") || !strcmp(which, "records")) test_records();
    return check_failures != 0;
}
