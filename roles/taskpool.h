/* taskpool.h — which task of an env's fixed training pool (envs.N.tasks) an actor plays
 * next (actor.pool_sampling).
 *
 *  - uniform: every task alike, k = draw mod n (the draw is the actor's task stream).
 *  - frontier: tasks the policy sometimes wins and sometimes loses first. A group of G
 *    episodes on one task carries a GRPO signal only when its episodes differ in outcome;
 *    a task every episode wins (or every one loses) spends env steps on none. Each task's
 *    weight is 4 p (1 - p), p the share of episodes won over its last groups (an
 *    exponential mean, half the weight on the newest group), floored at
 *    TASKPOOL_FLOOR so a task solved or out of reach is still revisited as the policy
 *    changes; a task not yet played weighs 1, the most any task does. This is level
 *    replay by learnability (Jiang et al., Prioritized Level Replay, 2021; the
 *    p (1 - p) score of online difficulty filtering for LLM RL).
 *
 * Each actor keeps the statistics of the groups it played itself: no message carries
 * them, and an actor that restarts starts over from "not yet played". */
#ifndef SEED_ROLES_TASKPOOL_H
#define SEED_ROLES_TASKPOOL_H

#include <stdint.h>

#include "common/util.h"

#define TASKPOOL_FLOOR 0.1

typedef struct taskpool {
    int n;
    int frontier;  /* 0: uniform */
    int *played;   /* groups recorded per task */
    double *p_won; /* per task: the exponential mean of its groups' share of episodes won */
} taskpool;

/* 0, or -1 with err when out of memory (n >= 1). */
int taskpool_init(taskpool *tp, int n, int frontier, char *err, size_t errlen);
void taskpool_free(taskpool *tp);

/* The task to play next, in [0, n): uniform takes draw mod n; frontier draws by weight
 * from rng (draw unused). */
int taskpool_pick(const taskpool *tp, uint64_t draw, seed_rng *rng);

/* Task k's weight under frontier sampling (1 for a task not yet played). */
double taskpool_weight(const taskpool *tp, int k);

/* A group of task k ended with won of finished episodes won (finished 0: nothing known,
 * nothing recorded). */
void taskpool_record(taskpool *tp, int k, int won, int finished);

#endif
