/* bench_household.c — household env throughput, with textworld-express as reference.
 *
 * Usage: bench_household [SECONDS]   (default 3 per measurement)
 * Prints: levels generated per second (env_household_generate), resets per second (a
 * level plus its opening text and admissible list), env steps per second with random
 * admissible actions (feedback text and the sorted admissible list rebuilt every step;
 * resets excluded from the timing), then textworld-express cookingworld's resets/s and
 * steps/s measured in the same run and the ratios. Single thread on both sides. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/household_world.h"
#include "common/util.h"

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 3.0;
    if (secs <= 0) secs = 3.0;
    const env_vtable *vt = &env_household_vtable;
    char err[SEED_ERRLEN];
    static const env_split splits[3] = {ENV_SPLIT_TRAIN, ENV_SPLIT_SEEN, ENV_SPLIT_UNSEEN};

    /* Level generation alone. */
    hh_tables *tab = malloc(sizeof *tab);
    hh_level *lv = malloc(sizeof *lv);
    env_household_tables_init(tab);
    long n_gen = 0;
    unsigned sink = 0;
    double t0 = seed_now();
    while (seed_now() - t0 < secs) {
        for (int i = 0; i < 256; i++, n_gen++) {
            if (env_household_generate(tab, (1u << HF_COUNT) - 1, (uint64_t)n_gen,
                                       splits[n_gen % 3], lv, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            sink += (unsigned)lv->n_obj;
        }
    }
    double gen_rate = (double)n_gen / (seed_now() - t0);

    env *e = NULL;
    if (vt->create(&e, NULL, 0, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    env_obs o;
    long n_reset = 0;
    t0 = seed_now();
    while (seed_now() - t0 < secs)
        for (int i = 0; i < 256; i++, n_reset++)
            vt->reset(e, (uint64_t)n_reset, splits[n_reset % 3], &o, err, sizeof err);
    double reset_rate = (double)n_reset / (seed_now() - t0);

    /* Random admissible play; only the steps are timed. */
    seed_rng rng;
    seed_rng_init(&rng, 1);
    long steps = 0, n_adm = 0, won = 0, episodes = 0;
    double busy = 0, wall0 = seed_now();
    char cmd[128];
    while (seed_now() - wall0 < secs) {
        vt->reset(e, (uint64_t)episodes, splits[episodes % 3], &o, err, sizeof err);
        episodes++;
        double t1 = seed_now();
        while (!o.done) {
            n_adm += o.n_admissible;
            snprintf(cmd, sizeof cmd, "%s",
                     o.admissible[seed_rng_below(&rng, (uint64_t)o.n_admissible)]);
            vt->step(e, cmd, &o, err, sizeof err);
            steps++;
        }
        won += o.won;
        busy += seed_now() - t1;
    }
    double step_rate = (double)steps / busy;
    vt->destroy(e);
    printf("household: %.0f levels/s generated, %.0f resets/s (level + intro + admissible)\n",
           gen_rate, reset_rate);
    printf("household: %.0f env steps/s with random admissible actions (%ld episodes, %.1f "
           "admissible per step, "
           "random play won %.1f%%)\n",
           step_rate, episodes, (double)n_adm / (double)steps,
           100.0 * (double)won / (double)episodes);

    char line[512];
    snprintf(line, sizeof line, "'%s' '%s' %.1f 2>&1", HH_BENCH_PYTHON, HH_BENCH_TWX, secs * 1.5);
    FILE *p = popen(line, "r");
    double twx_reset = 0, twx_step = 0, twx_valid = 0;
    int got = 0;
    if (p) {
        while (fgets(line, sizeof line, p))
            if (sscanf(line, "twx resets_per_s %lf steps_per_s %lf mean_valid_actions %lf",
                       &twx_reset, &twx_step, &twx_valid) == 3)
                got = 1;
        pclose(p);
    }
    if (!got) {
        printf("textworld-express reference: not available (run from a build with SEED_PYTHON's "
               "venv)\n");
        return 0;
    }
    printf("textworld-express cookingworld: %.0f resets/s, %.0f env steps/s (%.1f valid actions "
           "per step)\n",
           twx_reset, twx_step, twx_valid);
    printf("ratio household/textworld-express: resets %.1fx, steps %.1fx\n", reset_rate / twx_reset,
           step_rate / twx_step);
    return sink == 0; /* keeps the generation loop from being optimized away */
}
