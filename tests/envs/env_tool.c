/* env_tool.c — prints env levels, traces and parses for the env tests' Python and shell
 * drivers (the Python side replays them in gym-sokoban, gym_cards' rules and Python's
 * str methods and compares).
 *
 *   env_tool dump ENV SPLIT N [key=value ...]     reset text + expert rollout, seeds 0..N-1
 *   env_tool sokoban-levels N [key=value ...]     one line per seed: seed rows cols fixed state
 *   env_tool sokoban-trace N STEPS [key=value ...] random actions on N levels, every step
 *   env_tool ezpoints-trace N STEPS               random tokens on N levels, every step
 *   env_tool parse CJK                            stdin: one hex reply per line; prints
 *                                                 "valid reason hex(action)" per line */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "envs/sokoban.h"
#include "common/util.h"

static int parse_kv(int argc, char **argv, env_kv *kv, char *store, size_t cap) {
    int n = 0;
    size_t off = 0;
    for (int i = 0; i < argc && n < 16; i++) {
        size_t len = strlen(argv[i]);
        if (off + len + 1 > cap) break;
        char *s = store + off;
        memcpy(s, argv[i], len + 1);
        off += len + 1;
        char *eq = strchr(s, '=');
        if (!eq) continue;
        *eq = 0;
        kv[n].key = s;
        kv[n].value = eq + 1;
        n++;
    }
    return n;
}

static void die(const char *what, const char *err) {
    fprintf(stderr, "env_tool: %s: %s\n", what, err);
    exit(2);
}

static void print_grid(const uint8_t *g, int n) {
    for (int i = 0; i < n; i++) putchar('0' + g[i]);
}

static int cmd_dump(int argc, char **argv) {
    if (argc < 3) return 2;
    env_split split;
    if (env_split_parse(argv[1], &split)) die("split", argv[1]);
    int n = atoi(argv[2]);
    env_kv kv[16];
    char store[4096], err[SEED_ERRLEN], act[64];
    int nkv = parse_kv(argc - 3, argv + 3, kv, store, sizeof store);
    env *e;
    if (env_create(&e, argv[0], kv, nkv, err, sizeof err)) die("create", err);
    for (int s = 0; s < n; s++) {
        env_obs obs;
        if (env_reset(e, (uint64_t)s, split, &obs, err, sizeof err)) die("reset", err);
        printf("seed %d task %s\n%s\n", s, obs.task, obs.observation);
        while (!obs.done) {
            if (env_expert(e, act, sizeof act, err, sizeof err)) die("expert", err);
            if (env_step(e, act, &obs, err, sizeof err)) die("step", err);
            printf("%s %.3f %d %d|%016llx\n", act, (double)obs.reward, obs.done, obs.won,
                   (unsigned long long)seed_fnv1a64(obs.observation, strlen(obs.observation)));
        }
    }
    env_destroy(e);
    return 0;
}

static int cmd_sokoban_levels(int argc, char **argv) {
    if (argc < 1) return 2;
    int n = atoi(argv[0]);
    env_kv kv[16];
    char store[4096], err[SEED_ERRLEN];
    int nkv = parse_kv(argc - 1, argv + 1, kv, store, sizeof store);
    env *e;
    if (env_create(&e, "sokoban", kv, nkv, err, sizeof err)) die("create", err);
    uint8_t fixed[ENV_SOKOBAN_MAX_CELLS], state[ENV_SOKOBAN_MAX_CELLS];
    for (int s = 0; s < n; s++) {
        env_obs obs;
        int rows, cols;
        if (env_reset(e, (uint64_t)s, ENV_SPLIT_TRAIN, &obs, err, sizeof err)) die("reset", err);
        env_sokoban_level(e, &rows, &cols, fixed, state);
        printf("%d %d %d ", s, rows, cols);
        print_grid(fixed, rows * cols);
        putchar(' ');
        print_grid(state, rows * cols);
        putchar('\n');
    }
    env_destroy(e);
    return 0;
}

/* Random actions: mostly directions, sometimes a no-op (NULL, "still", or junk). */
static int cmd_sokoban_trace(int argc, char **argv) {
    if (argc < 2) return 2;
    int n = atoi(argv[0]), steps = atoi(argv[1]);
    env_kv kv[16];
    char store[4096], err[SEED_ERRLEN];
    int nkv = parse_kv(argc - 2, argv + 2, kv, store, sizeof store);
    static const char *const acts[8] = {"up",    "Down", " left ",  "RIGHT",
                                        "still", "jump", "move up", NULL};
    seed_rng rng;
    seed_rng_init(&rng, 1234);
    env *e;
    if (env_create(&e, "sokoban", kv, nkv, err, sizeof err)) die("create", err);
    uint8_t fixed[ENV_SOKOBAN_MAX_CELLS], state[ENV_SOKOBAN_MAX_CELLS];
    for (int s = 0; s < n; s++) {
        env_obs obs;
        int rows, cols;
        if (env_reset(e, (uint64_t)s, ENV_SPLIT_TRAIN, &obs, err, sizeof err)) die("reset", err);
        env_sokoban_level(e, &rows, &cols, fixed, state);
        printf("L %d %d ", rows, cols);
        print_grid(fixed, rows * cols);
        putchar(' ');
        print_grid(state, rows * cols);
        putchar('\n');
        for (int t = 0; t < steps && !obs.done; t++) {
            uint64_t u = seed_rng_below(&rng, 20);
            int a = u < 16 ? (int)(u % 4) : (int)(u - 12); /* 0-3 mostly, 4-7 rarely */
            if (env_step(e, acts[a], &obs, err, sizeof err)) die("step", err);
            env_sokoban_level(e, NULL, NULL, NULL, state);
            printf("S %d %.6f %d %d ", a, (double)obs.reward, obs.done, obs.won);
            print_grid(state, rows * cols);
            putchar(' ');
            for (const char *c = obs.observation; *c; c++) printf("%02x", (unsigned char)*c);
            putchar('\n');
        }
    }
    env_destroy(e);
    return 0;
}

static int cmd_ezpoints_trace(int argc, char **argv) {
    if (argc < 2) return 2;
    int n = atoi(argv[0]), steps = atoi(argv[1]);
    static const char *const toks[16] = {"1", "2",  "3", "4", "5", "6", "7",   "8",
                                         "9", "10", "+", "*", "=", "x", "5+5", NULL};
    char err[SEED_ERRLEN];
    env_kv kv[1] = {{"max_steps", "1000"}};
    seed_rng rng;
    seed_rng_init(&rng, 99);
    env *e;
    if (env_create(&e, "ezpoints", kv, 1, err, sizeof err)) die("create", err);
    for (int s = 0; s < n; s++) {
        env_obs obs;
        if (env_reset(e, (uint64_t)s, ENV_SPLIT_TRAIN, &obs, err, sizeof err)) die("reset", err);
        printf("L %s\n", obs.observation);
        for (int t = 0; t < steps && !obs.done; t++) {
            int a = (int)seed_rng_below(&rng, 16);
            /* favour the cards' own numbers and the operators so formulas get evaluated */
            if (a < 10 && seed_rng_below(&rng, 3)) a = 10 + (int)seed_rng_below(&rng, 3);
            if (env_step(e, toks[a], &obs, err, sizeof err)) die("step", err);
            printf("S %s %.6f %d %d\n", toks[a] ? toks[a] : "NULL", (double)obs.reward, obs.done,
                   obs.won);
        }
    }
    env_destroy(e);
    return 0;
}

static int hexval(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int cmd_parse(int argc, char **argv) {
    int cjk = argc > 0 ? atoi(argv[0]) : 0;
    size_t cap = 1 << 16;
    char *line = malloc(2 * cap + 2), *text = malloc(cap), action[4096];
    while (fgets(line, (int)(2 * cap + 2), stdin)) {
        size_t n = 0;
        for (char *p = line; hexval(p[0]) >= 0 && hexval(p[1]) >= 0 && n < cap; p += 2)
            text[n++] = (char)(hexval(p[0]) * 16 + hexval(p[1]));
        env_parsed r;
        env_parse_response(text, n, cjk, action, sizeof action, &r);
        printf("%d %d ", r.valid, r.reason);
        for (size_t i = 0; i < r.action_len; i++) printf("%02x", (unsigned char)action[i]);
        printf("\n");
    }
    free(line);
    free(text);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: env_tool dump|sokoban-levels|sokoban-trace|ezpoints-trace|parse\n");
        return 2;
    }
    const char *c = argv[1];
    int r = 2;
    if (!strcmp(c, "dump"))
        r = cmd_dump(argc - 2, argv + 2);
    else if (!strcmp(c, "sokoban-levels"))
        r = cmd_sokoban_levels(argc - 2, argv + 2);
    else if (!strcmp(c, "sokoban-trace"))
        r = cmd_sokoban_trace(argc - 2, argv + 2);
    else if (!strcmp(c, "ezpoints-trace"))
        r = cmd_ezpoints_trace(argc - 2, argv + 2);
    else if (!strcmp(c, "parse"))
        r = cmd_parse(argc - 2, argv + 2);
    if (r == 2) fprintf(stderr, "env_tool: bad arguments for %s\n", c);
    return r;
}
