/* cuda_bench — the CUDA backend's throughput on Qwen2.5-shaped models with random
 * weights, against the CPU backend on the same shapes; one line of figures per case.
 *
 *   cuda_bench train SHAPE BACKEND TOKENS STEPS   training step: forward + backward +
 *                                                  AdamW over TOKENS packed tokens
 *                                                  (sequences of 1024): tokens/s, model
 *                                                  TFLOP/s (6 N T + attention)
 *   cuda_bench decode SHAPE BACKEND BATCH STEPS   BATCH 512-token prompts prefilled, then
 *                                                  STEPS decode steps: decode tokens/s
 *   cuda_bench score SHAPE BACKEND SEQS           paired scoring (model_score) of SEQS
 *                                                  512 + 128-token sequences: tokens/s
 * SHAPE: 0.5b or 1.5b (Qwen2.5-0.5B / 1.5B: vocab 151936, tied embeddings).
 * Exit 77 when BACKEND is cuda and no GPU is present. */
#include "model/cuda/cuda_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static model_config shape(const char *s) {
    model_config c = {.vocab_size = 151936,
                      .max_position_embeddings = 32768,
                      .rms_norm_eps = 1e-6f,
                      .rope_theta = 1000000.0f,
                      .tie_word_embeddings = 1,
                      .bos_token_id = -1,
                      .eos_token_id = -1};
    if (strcmp(s, "1.5b") == 0) {
        c.hidden_size = 1536;
        c.intermediate_size = 8960;
        c.num_hidden_layers = 28;
        c.num_attention_heads = 12;
        c.num_key_value_heads = 2;
        c.head_dim = 128;
    } else {
        c.hidden_size = 896;
        c.intermediate_size = 4864;
        c.num_hidden_layers = 24;
        c.num_attention_heads = 14;
        c.num_key_value_heads = 2;
        c.head_dim = 64;
    }
    return c;
}

static model *make(const model_config *c, const model_limits *lim, const char *be) {
    char err[SEED_ERRLEN];
    model *m;
    if (model_create(&m, c, lim, be, err, sizeof err)) {
        fprintf(stderr, "cuda_bench: %s\n", err);
        exit(1);
    }
    model_init_random(m, 1, 0.02f);
    return m;
}

static void die(const char *e) {
    fprintf(stderr, "cuda_bench: %s\n", e);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: cuda_bench train|decode|score SHAPE BACKEND N [STEPS]\n");
        return 2;
    }
    const char *what = argv[1], *be = argv[3];
    model_config c = shape(argv[2]);
    const int n = atoi(argv[4]), steps = argc > 5 ? atoi(argv[5]) : 3;
    char err[SEED_ERRLEN];
    /* before model_create allocates gigabytes of host arrays for nothing */
    if (strcmp(be, "cuda") == 0 && model_cuda_available(err, sizeof err)) {
        printf("SKIP: %s\n", err);
        return 77;
    }
    seed_rng r;
    seed_rng_init(&r, 3);
    if (strcmp(what, "train") == 0) {
        const int seq = n < 1024 ? n : 1024, nseq = n / seq, T = nseq * seq;
        model_limits lim = {.max_batch_seqs = 1, .max_seq_len = seq, .max_train_tokens = T};
        model *m = make(&c, &lim, be);
        int *tok = malloc(sizeof(int) * T), *tg = malloc(sizeof(int) * T);
        int *cu = malloc(sizeof(int) * (nseq + 1));
        float *lp = malloc(sizeof(float) * T), *dl = malloc(sizeof(float) * T);
        for (int t = 0; t < T; t++) {
            tok[t] = (int)seed_rng_below(&r, c.vocab_size);
            tg[t] = t % seq == seq - 1 ? -1 : (int)seed_rng_below(&r, c.vocab_size);
            dl[t] = -1.0f / T;
        }
        for (int k = 0; k <= nseq; k++) cu[k] = k * seq;
        model_batch b = {
            .n_tokens = T, .n_seqs = nseq, .tokens = tok, .cu_seqlens = cu, .targets = tg};
        model_adamw opt = {1e-5f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f};
        double t0 = 0;
        for (int s = 0; s <= steps; s++) {
            if (s == 1) t0 = seed_now(); /* step 0 warms up */
            float gn;
            model_zero_grad(m);
            if (model_train_forward(m, &b, lp, NULL, err, sizeof err) ||
                model_train_backward(m, &b, dl, NULL, err, sizeof err) ||
                model_adamw_step(m, &opt, &gn, err, sizeof err))
                die(err);
        }
        const double dt = (seed_now() - t0) / (steps > 0 ? steps : 1);
        /* 6 N per token for the matmuls (N without the embedding lookup, with the head) +
         * attention's 12 L H D (seq/2) per token (causal) */
        const double N = (double)model_num_params(m);
        const double flops = 6.0 * N * T + 12.0 * c.num_hidden_layers * c.num_attention_heads *
                                               c.head_dim * (seq / 2.0) * T;
        printf("train %s %s tokens=%d step_s=%.3f tokens_per_s=%.0f model_tflops=%.2f\n", argv[2],
               be, T, dt, T / dt, flops / dt / 1e12);
        model_free(m);
        return 0;
    }
    if (strcmp(what, "decode") == 0) {
        const int B = n, P = 512;
        model_limits lim = {
            .max_batch_seqs = B, .max_seq_len = P + steps + 1, .max_infer_tokens = 8192};
        model *m = make(&c, &lim, be);
        int *slots = malloc(sizeof(int) * B), *lens = malloc(sizeof(int) * B);
        int **tok = malloc(sizeof(int *) * B);
        float *logits = malloc(sizeof(float) * (size_t)B * c.vocab_size);
        for (int i = 0; i < B; i++) {
            slots[i] = i;
            lens[i] = P;
            tok[i] = malloc(sizeof(int) * P);
            for (int j = 0; j < P; j++) tok[i][j] = (int)seed_rng_below(&r, c.vocab_size);
        }
        double t0 = seed_now();
        if (model_forward_cached(m, B, slots, (const int *const *)tok, lens, logits, err,
                                 sizeof err))
            die(err);
        const double prefill = seed_now() - t0;
        for (int i = 0; i < B; i++) lens[i] = 1;
        t0 = seed_now();
        for (int s = 0; s < steps; s++)
            if (model_forward_cached(m, B, slots, (const int *const *)tok, lens, logits, err,
                                     sizeof err))
                die(err);
        const double dt = seed_now() - t0;
        printf("decode %s %s batch=%d prompt=%d prefill_tokens_per_s=%.0f "
               "decode_tokens_per_s=%.0f\n",
               argv[2], be, B, P, B * P / prefill, B * (double)steps / dt);
        model_free(m);
        return 0;
    }
    if (strcmp(what, "score") == 0) {
        const int N = n, PL = 512, RL = 128;
        model_limits lim = {.max_batch_seqs = 1, .max_seq_len = PL + RL, .max_infer_tokens = 8192};
        model *m = make(&c, &lim, be);
        int **p = malloc(sizeof(int *) * N), **rs = malloc(sizeof(int *) * N);
        int *pl = malloc(sizeof(int) * N), *rl = malloc(sizeof(int) * N);
        float **out = malloc(sizeof(float *) * N);
        for (int i = 0; i < N; i++) {
            pl[i] = PL;
            rl[i] = RL;
            p[i] = malloc(sizeof(int) * PL);
            rs[i] = malloc(sizeof(int) * RL);
            out[i] = malloc(sizeof(float) * RL);
            for (int j = 0; j < PL; j++) p[i][j] = (int)seed_rng_below(&r, c.vocab_size);
            for (int j = 0; j < RL; j++) rs[i][j] = (int)seed_rng_below(&r, c.vocab_size);
        }
        double t0 = seed_now();
        if (model_score(m, N, (const int *const *)p, pl, (const int *const *)rs, rl, out, err,
                        sizeof err))
            die(err);
        const double dt = seed_now() - t0;
        printf("score %s %s seqs=%d tokens_per_s=%.0f\n", argv[2], be, N,
               N * (double)(PL + RL) / dt);
        model_free(m);
        return 0;
    }
    fprintf(stderr, "cuda_bench: unknown case %s\n", what);
    return 2;
}
