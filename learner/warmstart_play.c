/* warmstart_play.c — see warmstart_play.h. */
#include "learner/warmstart_play.h"

#include <stdio.h>
#include <string.h>

int warmstart_play(env *e, uint64_t seed, double noise, int repeats, int informed, seed_rng *rng,
                   warmstart_step *rec, int max_rec, char *task, size_t task_len, int *won,
                   float *ret, char *err, size_t errlen) {
    env_obs obs;
    if (env_reset(e, seed, ENV_SPLIT_TRAIN, &obs, err, errlen)) return -1;
    if (task) snprintf(task, task_len, "%s", obs.task ? obs.task : "");
    int n = 0;
    *ret = 0;
    *won = 0;
    while (!obs.done && n < max_rec) {
        warmstart_step *r = &rec[n];
        snprintf(r->obs, sizeof r->obs, "%s", obs.observation ? obs.observation : "");
        /* one draw a step, before the expert is asked: the warm start's random stream
         * (and so the shipped agent's recipe) is the same as before noise existed */
        int off = seed_rng_uniform(rng) < noise && obs.n_admissible > 0;
        if ((informed ? env_expert_informed : env_expert)(e, r->expert, sizeof r->expert, err,
                                                          errlen)) {
            /* no plan from here (a sokoban deadlock after a noisy step): a noisy step may
             * still be played, unlabelled; else the episode ends here, a failure for
             * stage 1 to explain */
            r->expert[0] = '\0';
            if (!off && noise > 0.0) break;
            if (!off) return -1;
        }
        snprintf(r->action, sizeof r->action, "%s", r->expert);
        if (off && repeats && n > 0 && seed_rng_uniform(rng) < 0.5)
            /* another element of rec (n - 1 < n): a memcpy, since snprintf made gcc -O0
             * warn of an overlap (-Wrestrict) */
            memcpy(r->action, rec[n - 1].action, sizeof r->action);
        else if (off)
            snprintf(r->action, sizeof r->action, "%s",
                     obs.admissible[seed_rng_below(rng, (uint64_t)obs.n_admissible)]);
        if (env_step(e, r->action, &obs, err, errlen)) return -1;
        r->reward = obs.reward;
        *ret += obs.reward;
        n++;
    }
    *won = obs.won;
    return n;
}
