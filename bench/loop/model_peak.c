/* model_peak — the policy model's isolated throughput on this machine: batched prefill
 * and decode (the actor's workload) and training steps (the learner's), for the model in
 * a config.json, printed as one JSON line. bench_loop.py compares the running job's rates
 * with these. usage: loop_model_peak CONFIG.json BATCH PROMPT_LEN DECODE_STEPS TRAIN_TOKENS */
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "model/model.h"

static int die(const char *e) {
    fprintf(stderr, "loop_model_peak: %s\n", e);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 6) return die("usage: loop_model_peak CONFIG B P D T");
    char err[SEED_ERRLEN];
    model_config cfg;
    if (model_config_load(argv[1], &cfg, err, sizeof err)) return die(err);
    int B = atoi(argv[2]), P = atoi(argv[3]), D = atoi(argv[4]), T = atoi(argv[5]);
    if (B < 1 || B > 256 || P < 1 || D < 1 || T < 2) return die("bad sizes");
    model_limits lim = {
        .max_batch_seqs = B, .max_seq_len = SEED_MAX(P + D + 1, T), .max_train_tokens = T};
    model *m;
    if (model_create(&m, &cfg, &lim, "cpu", err, sizeof err)) return die(err);
    model_init_random(m, 1, 0.02f);
    int *toks = malloc(sizeof(int) * (size_t)(P * B + T)), *tg = malloc(sizeof(int) * (size_t)T);
    float *logits = malloc(sizeof(float) * (size_t)B * (size_t)cfg.vocab_size);
    float *lp = malloc(sizeof(float) * (size_t)T), *dl = malloc(sizeof(float) * (size_t)T);
    int *slots = malloc(sizeof(int) * (size_t)B), *lens = malloc(sizeof(int) * (size_t)B);
    const int **tp = malloc(sizeof(int *) * (size_t)B);
    if (!toks || !tg || !logits || !lp || !dl || !slots || !lens || !tp)
        return die("out of memory");
    for (int i = 0; i < P * B + T; i++) toks[i] = 3 + i % (cfg.vocab_size - 3);
    for (int b = 0; b < B; b++) {
        slots[b] = b;
        lens[b] = P;
        tp[b] = toks + b * P;
    }
    double t0 = seed_now();
    if (model_forward_cached(m, B, slots, tp, lens, logits, err, sizeof err)) return die(err);
    double t1 = seed_now();
    for (int d = 0; d < D; d++) {
        for (int b = 0; b < B; b++) {
            lens[b] = 1;
            tp[b] = toks + d;
        }
        if (model_forward_cached(m, B, slots, tp, lens, logits, err, sizeof err)) return die(err);
    }
    double t2 = seed_now();
    /* sequences of 512 tokens, about what one step of an episode is */
    int nseq = (T + 511) / 512, *cu = malloc(sizeof(int) * (size_t)(nseq + 1));
    if (!cu) return die("out of memory");
    for (int k = 0; k <= nseq; k++) cu[k] = SEED_MIN(k * 512, T);
    for (int i = 0; i < T; i++) {
        tg[i] = toks[i + 1];
        dl[i] = -1.0f / (float)T;
    }
    model_batch bt = {
        .n_tokens = T, .n_seqs = nseq, .tokens = toks, .cu_seqlens = cu, .targets = tg};
    model_adamw opt = {1e-4f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f};
    double t3 = seed_now();
    const int steps = 3;
    for (int r = 0; r < steps; r++) {
        float gn;
        model_zero_grad(m);
        if (model_train_forward(m, &bt, lp, NULL, err, sizeof err) ||
            model_train_backward(m, &bt, dl, NULL, err, sizeof err) ||
            model_adamw_step(m, &opt, &gn, err, sizeof err))
            return die(err);
    }
    double t4 = seed_now();
    printf("{\"prefill_tok_s\": %.1f, \"decode_tok_s\": %.1f, \"train_tok_s\": %.1f}\n",
           B * P / (t1 - t0), (double)B * D / (t2 - t1), (double)steps * T / (t4 - t3));
    model_free(m);
    free(toks);
    free(tg);
    free(logits);
    free(lp);
    free(dl);
    free(slots);
    free(lens);
    free(tp);
    free(cu);
    return 0;
}
