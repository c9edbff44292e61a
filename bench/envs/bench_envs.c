/* bench_envs.c — env throughput on one core: sokoban steps/s (step + verl-agent text
 * rendering) and level generation rates, each against the Python reference measured in
 * the same run (bench_envs_ref.py: gym-sokoban's step with the same text rendering, and
 * gym-sokoban's generate_room), and the ratios.
 *
 *   bench_envs [steps] [levels]     (defaults 2,000,000 and 20,000; the reference runs
 *                                    1/40 of each) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "common/util.h"

static void die(const char *err) {
    fprintf(stderr, "bench_envs: %s\n", err);
    exit(1);
}

/* Episodes of at most 15 random moves on fresh levels; only the steps are timed. */
static double sokoban_steps_per_s(long steps) {
    static const char *const dirs[4] = {"up", "down", "left", "right"};
    char err[SEED_ERRLEN];
    env_kv kv[1] = {{"max_steps", "15"}};
    env *e;
    if (env_create(&e, "sokoban", kv, 1, err, sizeof err)) die(err);
    seed_rng rng;
    seed_rng_init(&rng, 1);
    double elapsed = 0;
    long done_steps = 0;
    uint64_t seed = 0, sink = 0;
    int acts[15];
    while (done_steps < steps) {
        env_obs obs;
        if (env_reset(e, seed++, ENV_SPLIT_TRAIN, &obs, err, sizeof err)) die(err);
        for (int i = 0; i < 15; i++) acts[i] = (int)seed_rng_below(&rng, 4);
        double t0 = seed_now();
        for (int i = 0; i < 15 && !obs.done; i++) {
            env_step(e, dirs[acts[i]], &obs, err, sizeof err);
            sink += (uint64_t)obs.observation[7];
            done_steps++;
        }
        elapsed += seed_now() - t0;
    }
    env_destroy(e);
    if (sink == 1) printf(" ");
    return (double)done_steps / elapsed;
}

static double levels_per_s(const char *name, const char *key, const char *value, long n) {
    char err[SEED_ERRLEN];
    env_kv kv[1] = {{key, value}};
    env *e;
    if (env_create(&e, name, kv, key ? 1 : 0, err, sizeof err)) die(err);
    double t0 = seed_now();
    for (long s = 0; s < n; s++) {
        env_obs obs;
        if (env_reset(e, (uint64_t)s, ENV_SPLIT_TRAIN, &obs, err, sizeof err)) die(err);
    }
    double dt = seed_now() - t0;
    env_destroy(e);
    return (double)n / dt;
}

int main(int argc, char **argv) {
    long steps = argc > 1 ? atol(argv[1]) : 2000000, levels = argc > 2 ? atol(argv[2]) : 20000;
    double c_steps = sokoban_steps_per_s(steps);
    double c_gym = levels_per_s("sokoban", "generator", "gym-sokoban", levels);
    double c_verl = levels_per_s("sokoban", NULL, NULL, levels);
    double c_ez = levels_per_s("ezpoints", NULL, NULL, levels * 10);

    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %ld %ld 2>/dev/null", SEED_BENCH_PYTHON, SEED_BENCH_REF,
             SEED_MAX(steps / 40, 1000L), SEED_MAX(levels / 40, 100L));
    double py_steps = 0, py_gym = 0;
    FILE *f = popen(cmd, "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "sokoban_steps_per_s %lf", &py_steps);
        sscanf(line, "sokoban_gym_levels_per_s %lf", &py_gym);
    }
    if (f) pclose(f);

    printf("sokoban steps/s (step + text render, one core): seed %.0f  gym-sokoban+text %.0f  "
           "ratio %.0fx\n",
           c_steps, py_steps, py_steps > 0 ? c_steps / py_steps : 0);
    printf("sokoban levels/s, generator=gym-sokoban: seed %.0f  gym-sokoban %.1f  ratio %.0fx\n",
           c_gym, py_gym, py_gym > 0 ? c_gym / py_gym : 0);
    printf("sokoban levels/s, generator=verl-agent (default, depth 30): seed %.0f\n", c_verl);
    printf("ezpoints levels/s: seed %.0f\n", c_ez);
    return py_steps > 0 && py_gym > 0 ? 0 : 1;
}
