/* test_household_registry.c — the household env through env.c's registry and generic
 * calls (env_create/env_reset/env_step/env_expert/env_hindsight), as the actor and
 * the analyzer use it. Exits non-zero on the first failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "common/util.h"

#define CHECK_EXIT_ON_FAIL
#include "tests/check.h"

int main(void) {
    char err[SEED_ERRLEN];
    CHECK(env_lookup("household") != NULL, "household is not registered (known: %s)", env_names());
    CHECK(strstr(env_names(), "household"), "env_names: %s", env_names());
    env_kv kv[2] = {{"families", "heat,clean"}, {"max_steps", "40"}};
    env *e = NULL;
    CHECK(env_create(&e, "household", kv, 2, err, sizeof err) == 0, "create: %s", err);
    CHECK(e->max_steps == 40, "max_steps %d", e->max_steps);
    env_kv bad = {"max_steps", "zero"};
    env *e2 = NULL;
    CHECK(env_create(&e2, "household", &bad, 1, err, sizeof err) != 0 && strstr(err, "max_steps"),
          "bad: %s", err);
    int won = 0;
    for (uint64_t seed = 0; seed < 100; seed++) {
        env_split split = (env_split)(seed % 3);
        env_obs o;
        CHECK(env_reset(e, seed, split, &o, err, sizeof err) == 0, "reset: %s", err);
        const char *acts[64];
        static char store[64][128];
        int n = 0;
        while (!o.done) {
            CHECK(env_expert(e, store[n], sizeof store[n], err, sizeof err) == 0, "expert: %s",
                  err);
            CHECK(env_action_valid(e, store[n]), "action_valid");
            acts[n] = store[n];
            CHECK(env_step(e, acts[n], &o, err, sizeof err) == 0, "step: %s", err);
            n++;
        }
        won += o.won;
        CHECK(env_step(e, "look", &o, err, sizeof err) != 0, "step after the end accepted");
        char skill[4096];
        CHECK(env_hindsight("household", kv, 2, seed, split, acts, n, skill, sizeof skill, err,
                            sizeof err) == 0,
              "hindsight: %s", err);
        CHECK(strncmp(skill, "Success: ", 9) == 0, "%s", skill);
    }
    CHECK(won == 100, "expert won %d/100 through the generic calls", won);
    /* The step limit is enforced by env.c as well. */
    env_obs o;
    CHECK(env_reset(e, 1, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "reset: %s", err);
    for (int i = 0; i < 40; i++)
        CHECK(env_step(e, NULL, &o, err, sizeof err) == 0, "step: %s", err);
    CHECK(o.done && !o.won, "max_steps");
    env_destroy(e);
    printf(
        "registry: household created, played by its expert (100/100) and analyzed through env.c\n");
    return 0;
}
