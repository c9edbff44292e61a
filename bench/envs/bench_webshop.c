/* bench_webshop.c — webshop env throughput on one core: catalogue build (env create),
 * resets/s, env steps/s (expert episodes, and random admissible actions whose searches
 * use the task's words), and BM25 search queries/s on the expert's queries.
 *
 *   bench_webshop [SECONDS]   (default 2 per measurement)
 *
 * No reference is timed: WebShop's Python env cannot run here (the PyPI package
 * "webshop" 0.1.0 ships only the Flask app and imports web_agent_site, which it does not
 * contain; the env needs pyserini with a Java runtime, spaCy's en_core_web_lg and the
 * product data from Google Drive, none installable from PyPI). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/webshop.h"
#include "common/util.h"

static void die(const char *err) {
    fprintf(stderr, "bench_webshop: %s\n", err);
    exit(1);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    if (secs <= 0) secs = 2.0;
    char err[SEED_ERRLEN], a[WS_ACTION_MAX + 1];
    /* catalogue build: what env_create (and every hindsight replay) costs */
    int n_build = 0;
    double t0 = seed_now(), build = 0;
    while (seed_now() - t0 < secs || n_build < 3) {
        double t = seed_now();
        env *e;
        if (env_create(&e, "webshop", NULL, 0, err, sizeof err)) die(err);
        build += seed_now() - t;
        env_destroy(e);
        n_build++;
    }
    printf("env create (catalogue of %d products + index): %.1f ms\n", WS_PRODUCTS_DEFAULT,
           1e3 * build / n_build);

    env *e;
    if (env_create(&e, "webshop", NULL, 0, err, sizeof err)) die(err);
    env_obs o;
    /* resets */
    long n = 0;
    t0 = seed_now();
    while (seed_now() - t0 < secs)
        for (int i = 0; i < 256; i++, n++)
            if (env_reset(e, (uint64_t)n, (env_split)(n % 3), &o, err, sizeof err)) die(err);
    printf("resets/s: %.0f\n", n / (seed_now() - t0));

    /* expert episodes: search, page, item, options, buy */
    long steps = 0, eps = 0, won = 0;
    double dt = 0;
    for (uint64_t seed = 0; dt < secs; seed++) {
        if (env_reset(e, seed, ENV_SPLIT_TRAIN, &o, err, sizeof err)) die(err);
        while (!o.done) {
            if (env_expert(e, a, sizeof a, err, sizeof err)) die(err);
            double t = seed_now();
            if (env_step(e, a, &o, err, sizeof err)) die(err);
            dt += seed_now() - t;
            steps++;
        }
        eps++;
        won += o.won;
    }
    printf("steps/s, expert episodes: %.0f (%ld episodes, %.1f%% won)\n", steps / dt, eps,
           100.0 * won / eps);

    /* random admissible actions; "search[<your query>]" searches two words of the task */
    seed_rng r;
    seed_rng_init(&r, 7);
    steps = 0;
    dt = 0;
    for (uint64_t seed = 0; dt < secs; seed++) {
        if (env_reset(e, seed, ENV_SPLIT_TRAIN, &o, err, sizeof err)) die(err);
        while (!o.done) {
            const char *pick = o.admissible[seed_rng_below(&r, (uint64_t)o.n_admissible)];
            if (!strcmp(pick, "search[<your query>]")) {
                char w1[64] = "", w2[64] = "";
                sscanf(o.task + seed_rng_below(&r, strlen(o.task) / 2), "%*s %63s %63s", w1, w2);
                snprintf(a, sizeof a, "search[%s %s]", w1, w2);
            } else {
                snprintf(a, sizeof a, "%s", pick);
            }
            double t = seed_now();
            if (env_step(e, a, &o, err, sizeof err)) die(err);
            dt += seed_now() - t;
            steps++;
        }
    }
    printf("steps/s, random admissible actions: %.0f\n", steps / dt);
    env_destroy(e);

    /* search queries on their own */
    ws_catalog c;
    ws_search_scratch s;
    if (webshop_catalog_build(&c, 1, WS_PRODUCTS_DEFAULT, err, sizeof err) ||
        webshop_scratch_init(&s, c.n))
        die("catalogue");
    enum { NQ = 1000 };
    static char q[NQ][WS_QUERY_CAP];
    for (int i = 0; i < NQ; i++) {
        ws_goal g;
        if (webshop_goal_make(&c, 31, (uint64_t)i, ENV_SPLIT_TRAIN, &g, err, sizeof err)) die(err);
        webshop_expert_query(&c, &g, q[i], sizeof q[i]);
    }
    int res[WS_RESULTS_MAX];
    long nq = 0, sink = 0;
    t0 = seed_now();
    while (seed_now() - t0 < secs)
        for (int i = 0; i < NQ; i++, nq++)
            sink += webshop_search(&c.idx, &s, q[i], res, WS_RESULTS_MAX);
    printf("search queries/s (BM25, top 50 of %d): %.0f\n", c.n, nq / (seed_now() - t0));
    if (sink == 1) printf(" ");
    webshop_scratch_free(&s);
    webshop_catalog_free(&c);
    printf("reference: not run (WebShop's Python env is not installable here; see the header)\n");
    return 0;
}
