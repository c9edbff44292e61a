/* taskpool.c — see taskpool.h. */
#include "roles/taskpool.h"

#include <stdlib.h>

int taskpool_init(taskpool *tp, int n, int frontier, char *err, size_t errlen) {
    tp->n = n;
    tp->frontier = frontier;
    tp->played = calloc((size_t)n, sizeof *tp->played);
    tp->p_won = calloc((size_t)n, sizeof *tp->p_won);
    if (!tp->played || !tp->p_won) {
        taskpool_free(tp);
        return seed_errf(err, errlen, "out of memory for a task pool of %d tasks", n);
    }
    return 0;
}

void taskpool_free(taskpool *tp) {
    free(tp->played);
    free(tp->p_won);
    tp->played = NULL;
    tp->p_won = NULL;
}

double taskpool_weight(const taskpool *tp, int k) {
    if (tp->played[k] == 0) return 1.0;
    const double p = tp->p_won[k], w = 4.0 * p * (1.0 - p);
    return w > TASKPOOL_FLOOR ? w : TASKPOOL_FLOOR;
}

int taskpool_pick(const taskpool *tp, uint64_t draw, seed_rng *rng) {
    if (!tp->frontier) return (int)(draw % (uint64_t)tp->n);
    double tot = 0.0;
    for (int k = 0; k < tp->n; k++) tot += taskpool_weight(tp, k);
    double u = seed_rng_uniform(rng) * tot;
    for (int k = 0; k < tp->n; k++) {
        u -= taskpool_weight(tp, k);
        if (u < 0) return k;
    }
    return tp->n - 1;
}

void taskpool_record(taskpool *tp, int k, int won, int finished) {
    if (k < 0 || k >= tp->n || finished <= 0) return;
    const double p = (double)won / finished;
    tp->p_won[k] = tp->played[k] ? 0.5 * tp->p_won[k] + 0.5 * p : p;
    tp->played[k]++;
}
