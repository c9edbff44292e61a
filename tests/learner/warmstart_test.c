/* warmstart_test — warmstart_play, the episodes stage 0 and 1 learn from, on sokoban and
 * household:
 *   - without noise every step plays the expert's action and the episode is won;
 *   - with algorithm.stage0_expert_noise's noise some steps play another action (random
 *     admissible ones and repeats of the last), and every step's recorded expert action
 *     is the expert's in the state the played actions reached: a second env of the same
 *     task, replaying the played actions from a fresh reset, shows the same observation
 *     and gives the same expert action there;
 *   - the same seeds give the same episode.
 *
 *   warmstart_test */
#include <stdio.h>
#include <string.h>

#include "learner/warmstart_play.h"
#include "tests/check.h"

enum { MAX_REC = 64, EPISODES = 12 };

typedef struct tally {
    int steps, off, repeats, won;
} tally;

/* Replays the played actions of rec in a fresh env and checks each step's observation
 * and expert action. */
static void replay_check(env *e, uint64_t seed, const warmstart_step *rec, int n) {
    char err[512], act[256];
    env_obs obs;
    CHECK(env_reset(e, seed, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "%s", err);
    for (int k = 0; k < n; k++) {
        CHECK(!strcmp(obs.observation ? obs.observation : "", rec[k].obs),
              "%s seed %llu step %d: the replay shows another observation", e->vt->name,
              (unsigned long long)seed, k);
        int none = env_expert(e, act, sizeof act, err, sizeof err) != 0;
        if (none) act[0] = '\0';
        CHECK(!strcmp(act, rec[k].expert),
              "%s seed %llu step %d: expert action '%s' recorded, '%s' in the replayed state",
              e->vt->name, (unsigned long long)seed, k, rec[k].expert, act);
        CHECK(env_step(e, rec[k].action, &obs, err, sizeof err) == 0, "%s", err);
    }
}

static tally play_many(const char *name, const env_kv *kv, int nkv, double noise) {
    char err[512];
    env *a = NULL, *b = NULL;
    CHECK(env_create(&a, name, kv, nkv, err, sizeof err) == 0, "%s", err);
    CHECK(env_create(&b, name, kv, nkv, err, sizeof err) == 0, "%s", err);
    static warmstart_step rec[MAX_REC], again[MAX_REC];
    tally t = {0};
    seed_rng rng, rng2;
    seed_rng_init(&rng, 42);
    for (uint64_t seed = 0; seed < EPISODES && a && b; seed++) {
        int won = 0, won2 = 0;
        float ret = 0, ret2 = 0;
        char task[512];
        seed_rng saved = rng;
        int n = warmstart_play(a, seed, noise, 1, 0, &rng, rec, MAX_REC, task, sizeof task, &won,
                               &ret, err, sizeof err);
        CHECK(n > 0, "%s seed %llu: %d steps: %s", name, (unsigned long long)seed, n, err);
        if (n <= 0) continue;
        CHECK(task[0], "%s seed %llu: no task text", name, (unsigned long long)seed);
        rng2 = saved;
        int n2 = warmstart_play(b, seed, noise, 1, 0, &rng2, again, MAX_REC, NULL, 0, &won2, &ret2,
                                err, sizeof err);
        int same = n2 == n && won2 == won && ret2 == ret;
        for (int k = 0; same && k < n; k++)
            same = !strcmp(rec[k].obs, again[k].obs) && !strcmp(rec[k].expert, again[k].expert) &&
                   !strcmp(rec[k].action, again[k].action) && rec[k].reward == again[k].reward;
        CHECK(same, "%s seed %llu: the same seeds played another episode", name,
              (unsigned long long)seed);
        replay_check(b, seed, rec, n);
        for (int k = 0; k < n; k++) {
            t.steps++;
            if (strcmp(rec[k].action, rec[k].expert)) {
                t.off++;
                if (k > 0 && !strcmp(rec[k].action, rec[k - 1].action)) t.repeats++;
            }
        }
        t.won += won;
    }
    env_destroy(a);
    env_destroy(b);
    return t;
}

static void check_env(const char *name, const env_kv *kv, int nkv) {
    tally clean = play_many(name, kv, nkv, 0.0);
    CHECK(clean.off == 0 && clean.won == EPISODES,
          "%s without noise: %d of %d steps off the expert, %d of %d won", name, clean.off,
          clean.steps, clean.won, EPISODES);
    tally noisy = play_many(name, kv, nkv, 0.3);
    CHECK(noisy.off > 0 && noisy.repeats > 0 && noisy.off < noisy.steps,
          "%s with noise 0.3: %d of %d steps off the expert, %d of them repeats", name, noisy.off,
          noisy.steps, noisy.repeats);
    printf("%s: without noise %d steps, all the expert's, %d/%d won; with noise 0.3 %d of %d "
           "steps off the expert (%d repeats), %d/%d won\n",
           name, clean.steps, clean.won, EPISODES, noisy.off, noisy.steps, noisy.repeats, noisy.won,
           EPISODES);
}

int main(void) {
    env_kv sok[] = {{"room_size", "6"}, {"boxes", "1"}};
    check_env("sokoban", sok, 2);
    env_kv hh[] = {{"max_steps", "30"}};
    check_env("household", hh, 1);
    return check_failures != 0;
}
