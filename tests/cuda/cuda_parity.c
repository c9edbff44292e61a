/* cuda_parity — the whole model on the CUDA backend against the CPU backend (the fp32
 * reference), through model.h only: forward logits, scores, KV-cache prefill / decode /
 * prefix copy / cached scoring, training log-probs, entropies and gradients at a
 * temperature, and 10 AdamW steps.
 *
 *   cuda_parity            run every check (exit 77, ctest's SKIP, when no GPU)
 *   cuda_parity nodevice   expect model.backend cuda to be refused with the sentence
 *                          naming the missing device (exit 77 when a GPU IS present)
 *
 * Inputs are fresh random each run (the seed is printed; SEED_PARITY_SEED=N replays
 * one), and every output buffer is poisoned with NaN first, so an element the backend
 * never wrote fails the comparison. Both backends get the same weights, rounded to
 * bf16 first, so the differences measured are those of bf16 activations alone.
 *
 * Tolerances, and why: a bf16 value carries 8 significant bits (relative rounding
 * 2^-9 = 0.2%); each layer rounds its GEMM inputs (norm outputs, attention output,
 * SwiGLU output) once, and errors add up over 2 layers and the head, so relative
 * L2 errors of ~1% are expected and TOL_REL = 3% leaves room; per-element log-probs
 * (values ~ -log V ~ -7) may differ by TOL_LOGP = 0.05 + 1% absolute. Gradients add
 * the bf16 rounding of the upstream gradient at every GEMM: TOL_GRAD = 5% relative L2
 * per tensor. After 10 AdamW steps the parameter changes are compared (cosine >= 0.95):
 * Adam divides by sqrt(v), so elements whose gradient is mostly rounding noise still
 * move by ~lr in a random direction; the bulk of the update must agree. */
#include "model/cuda/cuda_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOL_REL 0.03
#define TOL_LOGP_ABS 0.05
#define TOL_LOGP_REL 0.01
#define TOL_GRAD 0.05
#define TOL_ADAM_COS 0.95

static int failures;

static void check(int ok, const char *what, double got, double limit) {
    printf("%-44s %-4s %.5g (limit %.3g)\n", what, ok ? "ok" : "FAIL", got, limit);
    if (!ok) failures++;
}

static void poison(float *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = NAN;
}

/* ||a - b|| / ||b||; NaN anywhere makes it NaN (a failed check). */
static double rel_l2(const float *a, const float *b, size_t n) {
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        r += (double)b[i] * b[i];
        if (isnan(a[i]) || isnan(b[i])) return NAN;
    }
    return sqrt(d / (r > 0 ? r : 1e-30));
}

/* the largest |a - b| beyond the allowance abs + rel |b| (<= 0 passes) */
static double worst_excess(const float *a, const float *b, size_t n, double abs_tol,
                           double rel_tol) {
    double worst = -1e30;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]) - (abs_tol + rel_tol * fabs((double)b[i]));
        if (isnan(e)) return NAN;
        if (e > worst) worst = e;
    }
    return worst;
}

static float bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static void die(const char *what, const char *err) {
    fprintf(stderr, "cuda_parity: %s: %s\n", what, err);
    exit(1);
}

static void rand_tokens(seed_rng *r, int *t, int n, int V) {
    for (int i = 0; i < n; i++) t[i] = (int)seed_rng_below(r, (uint64_t)V);
}

/* Run every check on one configuration. */
static void run_config(const model_config *cfg, uint64_t seed, const char *name) {
    char err[SEED_ERRLEN];
    printf("-- %s (V %d, C %d, L %d, H %d, KVH %d, D %d, tied %d)\n", name, cfg->vocab_size,
           cfg->hidden_size, cfg->num_hidden_layers, cfg->num_attention_heads,
           cfg->num_key_value_heads, cfg->head_dim, cfg->tie_word_embeddings);
    model_limits lim = {
        .max_batch_seqs = 4, .max_seq_len = 320, .max_train_tokens = 512, .max_infer_tokens = 256};
    model *c, *g;
    if (model_create(&c, cfg, &lim, "cpu", err, sizeof err)) die("cpu model", err);
    if (model_create(&g, cfg, &lim, "cuda", err, sizeof err)) die("cuda model", err);
    model_init_random(c, seed, 0.08f);
    float *p = model_params(c);
    const size_t np = model_num_params(c);
    for (size_t i = 0; i < np; i++) p[i] = bf16_round(p[i]);
    memcpy(model_params(g), p, np * sizeof(float));
    if (model_params_changed(g, err, sizeof err)) die("params_changed", err);
    const int V = cfg->vocab_size;
    seed_rng r;
    seed_rng_init(&r, seed ^ 0x5eed);
    char what[96];

    /* forward logits over one sequence longer than a KV tile and an attention block */
    const int n = 300;
    int tok[512];
    rand_tokens(&r, tok, n, V);
    float *lc = malloc(sizeof(float) * n * V), *lg = malloc(sizeof(float) * n * V);
    poison(lg, (size_t)n * V);
    if (model_forward_logits(c, tok, n, lc, err, sizeof err) ||
        model_forward_logits(g, tok, n, lg, err, sizeof err))
        die("forward_logits", err);
    double e = rel_l2(lg, lc, (size_t)n * V);
    check(e <= TOL_REL, "forward_logits rel L2", e, TOL_REL);

    /* scoring: three prompt/response pairs at temperature 0.7 */
    model_set_temperature(c, 0.7f, err, sizeof err);
    model_set_temperature(g, 0.7f, err, sizeof err);
    int pl[3] = {17, 120, 5}, rl[3] = {40, 1, 90};
    int pt[3][256], rt[3][256];
    const int *pp[3], *rp[3];
    float sc[3][256], sg[3][256];
    float *oc[3], *og[3];
    for (int i = 0; i < 3; i++) {
        rand_tokens(&r, pt[i], pl[i], V);
        rand_tokens(&r, rt[i], rl[i], V);
        pp[i] = pt[i];
        rp[i] = rt[i];
        oc[i] = sc[i];
        og[i] = sg[i];
        poison(sg[i], 256);
    }
    if (model_score(c, 3, pp, pl, rp, rl, oc, err, sizeof err) ||
        model_score(g, 3, pp, pl, rp, rl, og, err, sizeof err))
        die("score", err);
    for (int i = 0; i < 3; i++) {
        snprintf(what, sizeof what, "score seq %d: |d| beyond 0.05+1%%", i);
        e = worst_excess(sg[i], sc[i], (size_t)rl[i], TOL_LOGP_ABS, TOL_LOGP_REL);
        check(e <= 0, what, e, 0);
    }

    /* KV cache: prefill two slots in one call (the second longer than a pass), copy a
     * prefix, decode steps, then cached scoring */
    int t0[300], t1[40];
    rand_tokens(&r, t0, 300, V);
    rand_tokens(&r, t1, 40, V);
    int slots[2] = {0, 1}, lens[2] = {40, 300};
    const int *tk[2] = {t1, t0};
    float *kc = malloc(sizeof(float) * 4 * V), *kg = malloc(sizeof(float) * 4 * V);
    poison(kg, (size_t)4 * V);
    if (model_forward_cached(c, 2, slots, tk, lens, kc, err, sizeof err) ||
        model_forward_cached(g, 2, slots, tk, lens, kg, err, sizeof err))
        die("forward_cached prefill", err);
    e = rel_l2(kg, kc, (size_t)2 * V);
    check(e <= TOL_REL, "forward_cached prefill logits rel L2", e, TOL_REL);
    if (model_kv_copy_prefix(c, 2, 1, 200, err, sizeof err) ||
        model_kv_copy_prefix(g, 2, 1, 200, err, sizeof err))
        die("kv_copy_prefix", err);
    for (int step = 0; step < 5; step++) {
        int ds[3] = {0, 1, 2}, dl[3] = {1, 1, 1}, dt[3];
        rand_tokens(&r, dt, 3, V);
        const int *dp[3] = {&dt[0], &dt[1], &dt[2]};
        poison(kg, (size_t)3 * V);
        if (model_forward_cached(c, 3, ds, dp, dl, kc, err, sizeof err) ||
            model_forward_cached(g, 3, ds, dp, dl, kg, err, sizeof err))
            die("forward_cached decode", err);
        e = rel_l2(kg, kc, (size_t)3 * V);
        snprintf(what, sizeof what, "decode step %d logits rel L2", step);
        check(e <= TOL_REL, what, e, TOL_REL);
    }
    {
        int st[30], tg[30];
        rand_tokens(&r, st, 30, V);
        for (int j = 0; j < 30; j++) tg[j] = j % 4 == 0 ? -1 : (int)seed_rng_below(&r, V);
        int ss[1] = {2}, sl[1] = {30};
        const int *sp[1] = {st}, *sgp[1] = {tg};
        float oc1[30], og1[30];
        float *ocp[1] = {oc1}, *ogp[1] = {og1};
        poison(og1, 30);
        if (model_score_cached(c, 1, ss, sp, sl, sgp, ocp, err, sizeof err) ||
            model_score_cached(g, 1, ss, sp, sl, sgp, ogp, err, sizeof err))
            die("score_cached", err);
        e = worst_excess(og1, oc1, 30, TOL_LOGP_ABS, TOL_LOGP_REL);
        check(e <= 0, "score_cached (copied prefix): |d| beyond 0.05+1%", e, 0);
    }

    /* training: 3 packed sequences, some targets -1, entropy on, temperature 0.7 */
    int cu[4] = {0, 150, 151, 400};
    int btok[400], btg[400];
    rand_tokens(&r, btok, 400, V);
    for (int t = 0; t < 400; t++) btg[t] = (t % 7 == 3) ? -1 : (int)seed_rng_below(&r, V);
    model_batch b = {
        .n_tokens = 400, .n_seqs = 3, .tokens = btok, .cu_seqlens = cu, .targets = btg};
    float lpc[400], lpg[400], enc[400], eng[400], dl[400], de[400];
    poison(lpg, 400);
    poison(eng, 400);
    for (int t = 0; t < 400; t++) {
        dl[t] = (float)(seed_rng_uniform(&r) - 0.5) / 400.0f;
        de[t] = (float)(seed_rng_uniform(&r) - 0.5) / 4000.0f;
    }
    model_zero_grad(c);
    model_zero_grad(g);
    if (model_train_forward(c, &b, lpc, enc, err, sizeof err) ||
        model_train_forward(g, &b, lpg, eng, err, sizeof err))
        die("train_forward", err);
    e = worst_excess(lpg, lpc, 400, TOL_LOGP_ABS, TOL_LOGP_REL);
    check(e <= 0, "train logp: |d| beyond 0.05+1%", e, 0);
    e = worst_excess(eng, enc, 400, TOL_LOGP_ABS, TOL_LOGP_REL);
    check(e <= 0, "train entropy: |d| beyond 0.05+1%", e, 0);
    if (model_train_backward(c, &b, dl, de, err, sizeof err) ||
        model_train_backward(g, &b, dl, de, err, sizeof err))
        die("train_backward", err);
    poison(model_grads(g), np);
    if (model_cuda_grads_to_host(g, err, sizeof err)) die("grads", err);
    double worst = 0;
    int worst_t = 0;
    for (int k = 0; k < model_num_tensors(c); k++) {
        const model_tensor_info *ti = model_tensor(c, k);
        double t = rel_l2(model_grads(g) + ti->offset, model_grads(c) + ti->offset, ti->numel);
        if (!(t <= worst)) {
            worst = t;
            worst_t = k;
        }
    }
    snprintf(what, sizeof what, "gradients: worst tensor (%s) rel L2",
             model_tensor(c, worst_t)->name);
    check(worst <= TOL_GRAD, what, worst, TOL_GRAD);
    double gn_c = model_grad_norm(c), gn_g = model_grad_norm(g);
    e = fabs(gn_g - gn_c) / gn_c;
    check(e <= TOL_GRAD, "gradient norm rel diff", e, TOL_GRAD);

    /* 10 AdamW steps on the same batch */
    float *p0 = malloc(np * sizeof(float));
    memcpy(p0, model_params(c), np * sizeof(float));
    model_adamw opt = {.lr = 1e-3f,
                       .beta1 = 0.9f,
                       .beta2 = 0.999f,
                       .eps = 1e-8f,
                       .weight_decay = 0.01f,
                       .max_grad_norm = 1.0f};
    for (int s = 0; s < 10; s++) {
        model *ms[2] = {c, g};
        for (int k = 0; k < 2; k++) {
            float gn;
            model_zero_grad(ms[k]);
            if (model_train_forward(ms[k], &b, lpc, NULL, err, sizeof err) ||
                model_train_backward(ms[k], &b, dl, NULL, err, sizeof err) ||
                model_adamw_step(ms[k], &opt, &gn, err, sizeof err))
                die("adamw", err);
        }
    }
    double dot = 0, nc = 0, ng = 0;
    for (size_t i = 0; i < np; i++) {
        double a = (double)model_params(c)[i] - p0[i], q = (double)model_params(g)[i] - p0[i];
        dot += a * q;
        nc += a * a;
        ng += q * q;
    }
    e = dot / sqrt(nc * ng + 1e-300);
    check(e >= TOL_ADAM_COS, "10 AdamW steps: cosine of the updates", e, TOL_ADAM_COS);
    check(model_adamw_steps(g) == 10, "10 AdamW steps: step count", (double)model_adamw_steps(g),
          10);
    free(p0);
    free(lc);
    free(lg);
    free(kc);
    free(kg);
    model_free(c);
    model_free(g);
}

int main(int argc, char **argv) {
    char err[SEED_ERRLEN];
    const int avail = model_cuda_available(err, sizeof err) == 0;
    if (argc > 1 && strcmp(argv[1], "nodevice") == 0) {
        if (avail) {
            printf("SKIP: a CUDA device is present; the no-device refusal cannot be seen\n");
            return 77;
        }
        model_config cfg = {.vocab_size = 64,
                            .hidden_size = 32,
                            .intermediate_size = 64,
                            .num_hidden_layers = 1,
                            .num_attention_heads = 2,
                            .num_key_value_heads = 1,
                            .head_dim = 16,
                            .rms_norm_eps = 1e-6f,
                            .rope_theta = 10000.0f};
        model_limits lim = {.max_batch_seqs = 1, .max_seq_len = 16};
        model *m = NULL;
        if (model_create(&m, &cfg, &lim, "cuda", err, sizeof err) == 0) {
            printf("FAIL: model.backend cuda was accepted without a device\n");
            return 1;
        }
        printf("refused: %s\n", err);
        if (!strstr(err, "model.backend cuda: no CUDA device (cudaGetDeviceCount: ")) {
            printf("FAIL: the sentence does not name the missing device\n");
            return 1;
        }
        return 0;
    }
    if (!avail) {
        printf("SKIP: %s\n", err);
        return 77;
    }
    uint64_t seed = (uint64_t)time(NULL);
    if (getenv("SEED_PARITY_SEED")) seed = strtoull(getenv("SEED_PARITY_SEED"), NULL, 10);
    printf("seed %llu (SEED_PARITY_SEED=%llu replays it)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    model_config a = {.vocab_size = 3001,
                      .hidden_size = 128,
                      .intermediate_size = 320,
                      .num_hidden_layers = 2,
                      .num_attention_heads = 4,
                      .num_key_value_heads = 2,
                      .head_dim = 32,
                      .max_position_embeddings = 512,
                      .rms_norm_eps = 1e-6f,
                      .rope_theta = 10000.0f,
                      .tie_word_embeddings = 1};
    run_config(&a, seed, "tied, head_dim 32, GQA 2");
    model_config q = a;
    q.hidden_size = 256;
    q.num_attention_heads = 2;
    q.num_key_value_heads = 1;
    q.head_dim = 128;
    q.intermediate_size = 704;
    q.tie_word_embeddings = 0;
    q.vocab_size = 5003;
    run_config(&q, seed + 1, "untied, head_dim 128 (Qwen2.5's), 2 heads on 1 KV head");
    printf("%s: %d check(s) failed\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
