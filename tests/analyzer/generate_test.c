/* generate_test — the analyzer's batched generation (analyzer/generate.h) on a random
 * model of the tiny config:
 *  - greedy replies of 5 prompts in waves of 2 slots are the argmax continuations of an
 *    uncached full forward at every position (a different argmax only where the two
 *    logits agree to 1e-3: the cached and uncached sums differ in the last bits);
 *  - the reply stops at end_id (kept) or at max_new tokens;
 *  - a prompt longer than max_seq - max_new keeps its end: its reply is the reply of
 *    that end alone, token for token;
 *  - sampled replies (T 0.9) depend on the episode's seed only: the same with 1 slot or
 *    3, and different seeds give different replies;
 *  - no room for a reply, too many slots and an empty prompt are errors that say so.
 * Usage: analyzer_generate_test MODEL_CONFIG_JSON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/generate.h"
#include "model/model.h"

static int n_fail;

static void check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) n_fail++;
}

static void die(const char *what, const char *err) {
    fprintf(stderr, "analyzer_generate_test: %s: %s\n", what, err);
    exit(1);
}

enum { N = 5, MAX_NEW = 12, MAX_SEQ = 96 };

/* Whether reply r (n tokens) of prompt p follows the uncached argmax at every position. */
static int greedy_matches(model *m, int V, const tok_ids *p, const int *r, int n, int end_id) {
    int *seq = malloc(sizeof(int) * (p->n + (size_t)n));
    float *lg = malloc(sizeof(float) * (p->n + (size_t)n) * (size_t)V);
    char err[SEED_ERRLEN];
    int ok = seq && lg;
    if (ok) memcpy(seq, p->v, sizeof(int) * p->n);
    for (int k = 0; k < n && ok; k++) {
        const int len = (int)p->n + k;
        if (model_forward_logits(m, seq, len, lg, err, sizeof err)) die("forward", err);
        const float *z = lg + (size_t)(len - 1) * (size_t)V;
        int best = 0;
        for (int j = 1; j < V; j++)
            if (z[j] > z[best]) best = j;
        if (best != r[k] && fabsf(z[best] - z[r[k]]) > 1e-3f) ok = 0;
        seq[len] = r[k];
    }
    /* it stopped at end_id or at the limit, nowhere else */
    for (int k = 0; k < n - 1 && ok; k++) ok = r[k] != end_id;
    if (ok) ok = n == MAX_NEW || r[n - 1] == end_id;
    free(seq);
    free(lg);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: analyzer_generate_test MODEL_CONFIG_JSON\n");
        return 2;
    }
    char err[SEED_ERRLEN];
    model_config cfg;
    if (model_config_load(argv[1], &cfg, err, sizeof err)) die("config", err);
    model_limits lim = {.max_batch_seqs = 3, .max_seq_len = MAX_SEQ, .threads = 0};
    model *m;
    if (model_create(&m, &cfg, &lim, "cpu", err, sizeof err)) die("model", err);
    model_init_random(m, 11, 0.2f);
    const int V = cfg.vocab_size;
    float *logits = malloc(sizeof(float) * 3 * (size_t)V),
          *scratch = malloc(sizeof(float) * 2 * (size_t)V);
    int *out = malloc(sizeof(int) * N * MAX_NEW), *out2 = malloc(sizeof(int) * N * MAX_NEW);
    int nout[N], nout2[N];
    tok_ids prompts[N];
    seed_rng rng[N], rng2[N], r;
    seed_rng_init(&r, 3);
    memset(prompts, 0, sizeof prompts);
    const int lens[N] = {7, 30, 1, 19, 120}; /* the last is longer than MAX_SEQ - MAX_NEW */
    for (int e = 0; e < N; e++)
        for (int i = 0; i < lens[e]; i++)
            if (tok_ids_push(&prompts[e], (int)seed_rng_below(&r, (uint64_t)V)))
                die("prompt", "out of memory");
    /* end_id: the greedy reply's third token of prompt 1, so one reply ends early */
    analyzer_gen g = {m, 2, MAX_SEQ, MAX_NEW, V, -1, {0.0f, 1.0f, 0}, logits, scratch};
    if (analyzer_generate(&g, N, prompts, rng, out, nout, err, sizeof err)) die("greedy", err);
    g.end_id = out[1 * MAX_NEW + 2];
    if (analyzer_generate(&g, N, prompts, rng, out, nout, err, sizeof err)) die("greedy", err);
    check(nout[1] == 3 && out[1 * MAX_NEW + 2] == g.end_id, "a reply ends at end_id, kept");
    int ok = 1;
    for (int e = 0; e < N - 1; e++)
        ok &= greedy_matches(m, V, &prompts[e], out + e * MAX_NEW, nout[e], g.end_id);
    check(ok, "greedy replies in waves of 2 slots follow the uncached argmax");
    /* the long prompt keeps its last MAX_SEQ - MAX_NEW tokens */
    tok_ids tail = {0};
    const int keep = MAX_SEQ - MAX_NEW;
    for (int i = lens[N - 1] - keep; i < lens[N - 1]; i++) tok_ids_push(&tail, prompts[N - 1].v[i]);
    int t_out[MAX_NEW], t_n;
    if (analyzer_generate(&g, 1, &tail, rng, t_out, &t_n, err, sizeof err)) die("tail", err);
    check(t_n == nout[N - 1] && !memcmp(t_out, out + (N - 1) * MAX_NEW, sizeof(int) * (size_t)t_n),
          "a prompt over max_seq - max_new is generated from its end");
    check(greedy_matches(m, V, &tail, t_out, t_n, g.end_id), "... and that end's reply is greedy");
    /* sampling: each reply is its seed's, whatever the wave size */
    g.sp.temperature = 0.9f;
    g.end_id = -1;
    for (int e = 0; e < N; e++) {
        seed_rng_init(&rng[e], 100 + (uint64_t)e);
        seed_rng_init(&rng2[e], 100 + (uint64_t)e);
    }
    g.n_slots = 1;
    if (analyzer_generate(&g, N, prompts, rng, out, nout, err, sizeof err)) die("sampled", err);
    g.n_slots = 3;
    if (analyzer_generate(&g, N, prompts, rng2, out2, nout2, err, sizeof err)) die("sampled", err);
    ok = 1;
    for (int e = 0; e < N; e++)
        ok &= nout[e] == MAX_NEW && nout2[e] == MAX_NEW &&
              !memcmp(out + e * MAX_NEW, out2 + e * MAX_NEW, sizeof(int) * MAX_NEW);
    check(ok, "sampled replies are their seeds', in waves of 1 slot or 3");
    tok_ids same[2] = {prompts[0], prompts[0]};
    seed_rng_init(&rng[0], 1);
    seed_rng_init(&rng[1], 2);
    if (analyzer_generate(&g, 2, same, rng, out, nout, err, sizeof err)) die("seeds", err);
    check(memcmp(out, out + MAX_NEW, sizeof(int) * MAX_NEW) != 0,
          "two seeds sample two replies of one prompt");
    /* errors */
    g.max_new = MAX_SEQ;
    check(analyzer_generate(&g, 1, prompts, rng, out, nout, err, sizeof err) == -1 &&
              strstr(err, "no room for a 96-token reply"),
          "no room for the reply is an error");
    g.max_new = MAX_NEW;
    g.n_slots = 65;
    check(analyzer_generate(&g, 1, prompts, rng, out, nout, err, sizeof err) == -1 &&
              strstr(err, "slots 65"),
          "too many slots is an error");
    g.n_slots = 2;
    tok_ids empty = {0};
    check(analyzer_generate(&g, 1, &empty, rng, out, nout, err, sizeof err) == -1 &&
              strstr(err, "prompt 0 is empty"),
          "an empty prompt is an error");
    for (int e = 0; e < N; e++) tok_ids_free(&prompts[e]);
    tok_ids_free(&tail);
    free(logits);
    free(scratch);
    free(out);
    free(out2);
    model_free(m);
    if (n_fail) fprintf(stderr, "analyzer_generate_test: %d check(s) failed\n", n_fail);
    return n_fail ? 1 : 0;
}
