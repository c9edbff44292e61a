/* bench_searchqa.c — searchqa throughput on one core: corpus + BM25 index build time,
 * BM25 search queries/s (entity-name queries, as the expert issues, and whole-question
 * queries), and env steps/s (expert episodes: reset, then search steps with observation
 * formatting and the answer step; only env_step is timed). The reference, measured in
 * the same run when installed, is rank_bm25's BM25Okapi (PyPI rank-bm25) over the same
 * passages and queries (bench_searchqa_ref.py). Search-R1's own retriever (a pyserini or
 * FAISS HTTP server over wiki-18) cannot run here, so it is not timed.
 *
 *   bench_searchqa [episodes] [entities]   (defaults 20,000 and 2,000) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "envs/env.h"
#include "envs/searchqa.h"
#include "common/util.h"

static void die(const char *err) {
    fprintf(stderr, "bench_searchqa: %s\n", err);
    exit(1);
}

int main(int argc, char **argv) {
    long episodes = argc > 1 ? atol(argv[1]) : 20000;
    const char *entities = argc > 2 ? argv[2] : "2000";
    char err[SEED_ERRLEN];
    env_kv kv[1] = {{"corpus_entities", entities}};
    double t0 = seed_now();
    env *e;
    if (env_create(&e, "searchqa", kv, 1, err, sizeof err)) die(err);
    double build_ms = 1e3 * (seed_now() - t0);
    sq_state st;
    env_searchqa_state(e, &st);
    const sq_corpus *c = st.corpus;

    /* env steps: expert episodes */
    double step_time = 0;
    long steps = 0, won = 0;
    uint64_t sink = 0;
    for (long s = 0; s < episodes; s++) {
        env_obs o;
        if (env_reset(e, (uint64_t)s, ENV_SPLIT_TRAIN, &o, err, sizeof err)) die(err);
        while (!o.done) {
            char act[160];
            if (env_expert(e, act, sizeof act, err, sizeof err)) die(err);
            double t = seed_now();
            env_step(e, act, &o, err, sizeof err);
            step_time += seed_now() - t;
            sink += (uint64_t)o.observation[0];
            steps++;
        }
        won += o.won;
    }

    /* queries: every entity name, and the questions of the first episodes */
    int nq = c->n + 2000;
    char(*queries)[SQ_QUESTION] = malloc((size_t)nq * SQ_QUESTION);
    if (!queries) die("out of memory");
    for (int i = 0; i < c->n; i++) snprintf(queries[i], SQ_QUESTION, "%s", c->ent[i].name);
    for (int i = 0; i < 2000; i++) {
        env_obs o;
        if (env_reset(e, (uint64_t)i, ENV_SPLIT_TRAIN, &o, err, sizeof err)) die(err);
        snprintf(queries[c->n + i], SQ_QUESTION, "%s", o.task);
    }
    sq_index ix;
    if (sq_index_build(&ix, (const char *const *)c->doc, c->n, err, sizeof err)) die(err);
    double qps[2];
    for (int kind = 0; kind < 2; kind++) {
        int from = kind ? c->n : 0, n = kind ? 2000 : c->n;
        long rounds = 0;
        double t = seed_now();
        do {
            for (int i = from; i < from + n; i++) {
                int docs[3];
                double sc[3];
                sink += (uint64_t)sq_index_search(&ix, queries[i], strlen(queries[i]), 3, docs, sc);
            }
            rounds++;
        } while (seed_now() - t < 1.0);
        qps[kind] = (double)rounds * n / (seed_now() - t);
    }

    /* the reference: rank_bm25 over the same passages and queries */
    char dir[] = "/tmp/bench_searchqa_XXXXXX";
    double py_qps[2] = {0, 0};
    if (mkdtemp(dir)) {
        char path[256];
        snprintf(path, sizeof path, "%s/data.txt", dir);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%d %d\n", c->n, nq);
            for (int i = 0; i < c->n; i++) {
                const char *d = c->doc[i];
                for (; *d; d++) fputc(*d == '\n' ? ' ' : *d, f);
                fputc('\n', f);
            }
            for (int i = 0; i < nq; i++) fprintf(f, "%s\n", queries[i]);
            fclose(f);
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' 2>&1", SEED_BENCH_PYTHON, SEED_BENCH_REF,
                     path);
            FILE *p = popen(cmd, "r");
            char line[512];
            while (p && fgets(line, sizeof line, p)) {
                if (sscanf(line, "rank_bm25_name_queries_per_s %lf", &py_qps[0]) == 1) continue;
                if (sscanf(line, "rank_bm25_question_queries_per_s %lf", &py_qps[1]) == 1) continue;
                fputs(line, stdout);
            }
            if (p) pclose(p);
            remove(path);
        }
        rmdir(dir);
    }
    printf("searchqa corpus %d passages, %d terms: corpus + index build %.1f ms\n", c->n,
           ix.n_terms, build_ms);
    printf("searchqa env steps/s (expert episodes, search + answer steps, one core): %.0f "
           "(%ld steps, expert won %ld/%ld)\n",
           steps / step_time, steps, won, episodes);
    static const char *const what[2] = {"entity-name queries", "whole-question queries"};
    for (int k = 0; k < 2; k++) {
        printf("BM25 %s/s (top 3): seed %.0f", what[k], qps[k]);
        if (py_qps[k] > 0)
            printf("  rank_bm25 BM25Okapi %.1f  ratio %.0fx\n", py_qps[k], qps[k] / py_qps[k]);
        else
            printf("  (rank_bm25 not installed in %s: no reference)\n", SEED_BENCH_PYTHON);
    }
    if (sink == 1) printf(" ");
    sq_index_free(&ix);
    free(queries);
    env_destroy(e);
    return 0;
}
