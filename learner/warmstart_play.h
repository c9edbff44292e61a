/* warmstart_play.h — the episodes the warm start learns from (learner/warmstart.c): the
 * env's expert plays, with noise when algorithm.stage0_expert_noise asks (stage 0) and
 * for stage 1's failures, and every step records the expert's action in the state the
 * played actions reached. Depends on the envs only, so tests link it alone. */
#ifndef SEED_LEARNER_WARMSTART_PLAY_H
#define SEED_LEARNER_WARMSTART_PLAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "envs/env.h"

/* One step of a played episode: the observation shown, the expert's action in that
 * state, and the action played (the expert's, or the noise's). */
typedef struct warmstart_step {
    char obs[2048];
    char expert[256];
    char action[256];
    float reward;
} warmstart_step;

/* Plays one episode of e (train split, task seed) for at most max_rec steps, recording
 * each step in rec. At every step the expert's action is recorded; with probability
 * noise the step plays another instead: the previous action again (half the time, when
 * repeats is set and there is one) or a random admissible action. Where the expert has
 * no plan, a noisy step is still played with an empty expert action; otherwise the
 * episode ends there (with noise > 0; without noise that is an error). Returns the
 * number of steps, or -1 with err set; *won, *ret and task (when given) describe the
 * episode. With informed the env's informed expert (env_expert_informed) plays and is
 * recorded instead. */
int warmstart_play(env *e, uint64_t seed, double noise, int repeats, int informed, seed_rng *rng,
                   warmstart_step *rec, int max_rec, char *task, size_t task_len, int *won,
                   float *ret, char *err, size_t errlen);

#endif
