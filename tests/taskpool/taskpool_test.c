/* taskpool_test.c — roles/taskpool.[ch]: uniform picks draw mod n whatever was recorded;
 * frontier weighs a task by 4p(1-p) of its recent success (floored at TASKPOOL_FLOOR, 1 for
 * a task not yet played), updates p as an exponential mean, ignores groups with no finished
 * episode, and draws tasks in proportion to their weights, the same sequence for the same
 * rng seed. */
#include <math.h>

#include "roles/taskpool.h"
#include "tests/check.h"

static int near(double a, double b) {
    return fabs(a - b) < 1e-12;
}

int main(void) {
    char err[SEED_ERRLEN];
    taskpool u, f;
    CHECK(taskpool_init(&u, 5, 0, err, sizeof err) == 0, "%s", err);
    CHECK(taskpool_init(&f, 4, 1, err, sizeof err) == 0, "%s", err);

    /* uniform: draw mod n, records change nothing */
    seed_rng rng;
    seed_rng_init(&rng, 3);
    taskpool_record(&u, 2, 8, 8);
    for (uint64_t d = 0; d < 50; d++)
        CHECK(taskpool_pick(&u, d * 7919u, &rng) == (int)(d * 7919u % 5), "draw %llu",
              (unsigned long long)(d * 7919u));

    /* frontier: unplayed tasks weigh 1; all won / all lost sit at the floor; half won is 1 */
    for (int k = 0; k < 4; k++) CHECK(near(taskpool_weight(&f, k), 1.0), "task %d", k);
    taskpool_record(&f, 0, 8, 8);
    taskpool_record(&f, 1, 0, 8);
    taskpool_record(&f, 2, 3, 6); /* two episodes ended in an error: 3 of 6 finished */
    CHECK(near(taskpool_weight(&f, 0), TASKPOOL_FLOOR), "%g", taskpool_weight(&f, 0));
    CHECK(near(taskpool_weight(&f, 1), TASKPOOL_FLOOR), "%g", taskpool_weight(&f, 1));
    CHECK(near(taskpool_weight(&f, 2), 1.0), "%g", taskpool_weight(&f, 2));
    CHECK(near(taskpool_weight(&f, 3), 1.0), "unplayed: %g", taskpool_weight(&f, 3));

    /* p is an exponential mean: 0.5 then 1.0 gives 0.75, weight 4 * 0.75 * 0.25 */
    taskpool_record(&f, 2, 4, 4);
    CHECK(near(f.p_won[2], 0.75) && near(taskpool_weight(&f, 2), 0.75), "p %g weight %g",
          f.p_won[2], taskpool_weight(&f, 2));
    /* nothing finished, or no such task: nothing recorded */
    taskpool_record(&f, 3, 0, 0);
    taskpool_record(&f, 4, 1, 2);
    taskpool_record(&f, -1, 1, 2);
    CHECK(f.played[3] == 0 && near(taskpool_weight(&f, 3), 1.0), "played %d", f.played[3]);

    /* draws follow the weights (0.1, 0.1, 0.75, 1): a fixed seed, so a fixed count */
    const int N = 40000;
    int count[4] = {0};
    seed_rng_init(&rng, 11);
    for (int i = 0; i < N; i++) {
        int k = taskpool_pick(&f, 0, &rng);
        CHECK(k >= 0 && k < 4, "picked %d", k);
        if (k >= 0 && k < 4) count[k]++;
    }
    const double w[4] = {0.1, 0.1, 0.75, 1.0}, tot = 1.95;
    for (int k = 0; k < 4; k++)
        CHECK(fabs((double)count[k] / N - w[k] / tot) < 0.01, "task %d: %d of %d, expected %.3f", k,
              count[k], N, w[k] / tot);

    /* the same rng seed, the same sequence */
    seed_rng a, b;
    seed_rng_init(&a, 99);
    seed_rng_init(&b, 99);
    for (int i = 0; i < 100; i++) CHECK(taskpool_pick(&f, 0, &a) == taskpool_pick(&f, 0, &b));

    taskpool_free(&u);
    taskpool_free(&f);
    return check_failures != 0;
}
