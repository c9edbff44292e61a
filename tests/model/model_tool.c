/* model_tool — drives model.h for the Python reference tests (tests/model/test_NAME.py).
 *
 * Every subcommand reads little-endian int32/float32 files written by numpy and writes
 * float32/int32 arrays (or safetensors) back; errors go to stderr with exit status 1,
 * so a test can check both results and refusals. Limits are options key=value after
 * the positional arguments: slots=, maxlen=, train=, infer=, threads=; temp=T sets
 * model_set_temperature (scoring and training at softmax(logits / T)).
 *
 *   logits DIR TOKENS OUT            all-position logits of one sequence
 *   script DIR SCRIPT OUT            KV-cache script: ops FWD/COPY/CLEAR/SCORE (cmd_script)
 *   score  DIR SPEC OUT              log-probs of responses given prompts
 *   train  DIR BATCH OUTDIR          one forward+backward: logp, entropy, grads.safetensors
 *   adamw  DIR BATCH STEPS OUTDIR lr b1 b2 eps wd clip   repeated steps: losses, params
 *   adamwg DIR GRADS STEPS OUTDIR lr b1 b2 eps wd clip   AdamW on given gradients
 *   save   DIR OUTDIR f32|bf16       load then save
 *   sample LOGITS V T TOP_P TOP_K SEED N OUT   N draws from one rng
 *   gen    DIR PROMPT T TOP_P TOP_K SEED N OUT  N tokens sampled with the KV cache at
 *          temperature T: OUT (ids), OUT.logp (model_sample's logged log-probs) and
 *          OUT.score (model_score of the same tokens after model_set_temperature(T))
 *   bad    DIR                       every bad-input branch of the workloads
 *   blas                             the OpenBLAS kernel set in use (model_blas_core) */
#include "model/model.h"
#include "model/safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *err) {
    fprintf(stderr, "model_tool: %s: %s\n", what, err);
    exit(1);
}

static void *read_all(const char *path, size_t *n) {
    char err[SEED_ERRLEN];
    char *buf;
    if (seed_read_file(path, &buf, n, err, sizeof err)) die("read", err);
    return buf;
}

static void write_all(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) die("write", path);
}

static model_limits parse_limits(int argc, char **argv, int first) {
    model_limits lim = {.max_batch_seqs = 8, .max_seq_len = 512, .max_train_tokens = 0};
    for (int i = first; i < argc; i++) {
        int v;
        if (sscanf(argv[i], "slots=%d", &v) == 1)
            lim.max_batch_seqs = v;
        else if (sscanf(argv[i], "maxlen=%d", &v) == 1)
            lim.max_seq_len = v;
        else if (sscanf(argv[i], "train=%d", &v) == 1)
            lim.max_train_tokens = v;
        else if (sscanf(argv[i], "infer=%d", &v) == 1)
            lim.max_infer_tokens = v;
        else if (sscanf(argv[i], "threads=%d", &v) == 1)
            lim.threads = v;
    }
    return lim;
}

static model *load(const char *dir, const model_limits *lim) {
    char err[SEED_ERRLEN];
    model *m;
    if (model_load(&m, dir, lim, "cpu", err, sizeof err)) die("load", err);
    return m;
}

/* the temp=T option, if given */
static void apply_temp(model *m, int argc, char **argv, int first) {
    char err[SEED_ERRLEN];
    float T;
    for (int i = first; i < argc; i++)
        if (sscanf(argv[i], "temp=%f", &T) == 1 && model_set_temperature(m, T, err, sizeof err))
            die("temperature", err);
}

static int cmd_logits(int argc, char **argv) {
    model_limits lim = parse_limits(argc, argv, 5);
    model *m = load(argv[2], &lim);
    size_t nb;
    int *tok = read_all(argv[3], &nb);
    int n = (int)(nb / 4), V = model_get_config(m)->vocab_size;
    float *out = malloc((size_t)n * V * sizeof(float));
    char err[SEED_ERRLEN];
    if (model_forward_logits(m, tok, n, out, err, sizeof err)) die("logits", err);
    write_all(argv[4], out, (size_t)n * V * sizeof(float));
    free(out);
    free(tok);
    model_free(m);
    return 0;
}

/* Script: [n_ops] then ops. FWD: 0, n_chunks, then per chunk slot, len, tokens[len]
 * (appends n_chunks x V logits to OUT); COPY: 1, dst, src, n; CLEAR: 2, slot; SCORE
 * (model_score_cached): 3, n_chunks, then per chunk slot, len, has_targets,
 * tokens[len], targets[len] when has_targets (appends len floats per chunk that has
 * targets). The temp=T option applies to SCORE. */
static int cmd_script(int argc, char **argv) {
    model_limits lim = parse_limits(argc, argv, 5);
    model *m = load(argv[2], &lim);
    apply_temp(m, argc, argv, 5);
    size_t nb;
    int *sc = read_all(argv[3], &nb), *p = sc;
    int V = model_get_config(m)->vocab_size;
    FILE *f = fopen(argv[4], "wb");
    if (!f) die("open", argv[4]);
    int n_ops = *p++;
    int slots[256], lens[256];
    const int *toks[256], *tgts[256];
    float *outs[256];
    float *logits = malloc((size_t)256 * V * sizeof(float));
    char err[SEED_ERRLEN];
    for (int op = 0; op < n_ops; op++) {
        int code = *p++;
        if (code == 0) {
            int nc = *p++;
            for (int i = 0; i < nc; i++) {
                slots[i] = *p++;
                lens[i] = *p++;
                toks[i] = p;
                p += lens[i];
            }
            if (model_forward_cached(m, nc, slots, toks, lens, logits, err, sizeof err))
                die("forward_cached", err);
            fwrite(logits, sizeof(float), (size_t)nc * V, f);
        } else if (code == 3) {
            int nc = *p++;
            for (int i = 0; i < nc; i++) {
                slots[i] = *p++;
                lens[i] = *p++;
                int has = *p++;
                toks[i] = p;
                p += lens[i];
                tgts[i] = has ? p : NULL;
                p += has ? lens[i] : 0;
                outs[i] = has ? malloc(sizeof(float) * (size_t)lens[i]) : NULL;
            }
            if (model_score_cached(m, nc, slots, toks, lens, tgts, outs, err, sizeof err))
                die("score_cached", err);
            for (int i = 0; i < nc; i++)
                if (outs[i]) fwrite(outs[i], sizeof(float), (size_t)lens[i], f);
            for (int i = 0; i < nc; i++) free(outs[i]);
        } else if (code == 1) {
            int dst = p[0], src = p[1], n = p[2];
            p += 3;
            if (model_kv_copy_prefix(m, dst, src, n, err, sizeof err)) die("kv_copy_prefix", err);
        } else {
            model_kv_clear(m, *p++);
        }
    }
    fclose(f);
    free(logits);
    free(sc);
    model_free(m);
    return 0;
}

/* Spec: [n] then per sequence plen, rlen, prompt[plen], resp[rlen]; OUT gets the
 * concatenated response log-probs. */
static int cmd_score(int argc, char **argv) {
    model_limits lim = parse_limits(argc, argv, 5);
    model *m = load(argv[2], &lim);
    apply_temp(m, argc, argv, 5);
    size_t nb;
    int *sp = read_all(argv[3], &nb), *p = sp;
    int n = *p++;
    const int **pr = calloc((size_t)n, sizeof *pr), **rs = calloc((size_t)n, sizeof *rs);
    int *pl = calloc((size_t)n, sizeof(int)), *rl = calloc((size_t)n, sizeof(int)), tot = 0;
    float **out = calloc((size_t)n, sizeof *out);
    for (int i = 0; i < n; i++) {
        pl[i] = *p++;
        rl[i] = *p++;
        pr[i] = p;
        p += pl[i];
        rs[i] = p;
        p += rl[i];
        tot += rl[i];
    }
    float *buf = calloc((size_t)tot + 1, sizeof(float));
    for (int i = 0, o = 0; i < n; o += rl[i], i++) out[i] = buf + o;
    char err[SEED_ERRLEN];
    if (model_score(m, n, pr, pl, rs, rl, out, err, sizeof err)) die("score", err);
    write_all(argv[4], buf, (size_t)tot * sizeof(float));
    free(buf);
    free(out);
    free(pl);
    free(rl);
    free(pr);
    free(rs);
    free(sp);
    model_free(m);
    return 0;
}

/* Batch file: int32 n_tokens, n_seqs, flags (1: entropy, 2: shared prefixes),
 * cu_seqlens[n_seqs+1], prefix[n_seqs] (flag 2 only), tokens[n], targets[n]; then float32
 * dlogp[n], dentropy[n]. */
typedef struct tbatch {
    model_batch b;
    int use_ent;
    const float *w, *e;
    void *buf;
} tbatch;

static tbatch read_batch(const char *path) {
    tbatch t = {0};
    size_t nb;
    int *p = read_all(path, &nb);
    t.buf = p;
    t.b.n_tokens = p[0];
    t.b.n_seqs = p[1];
    t.use_ent = p[2] & 1;
    const int has_prefix = p[2] & 2;
    p += 3;
    t.b.cu_seqlens = p;
    p += t.b.n_seqs + 1;
    if (has_prefix) {
        t.b.prefix = p;
        p += t.b.n_seqs;
    }
    t.b.tokens = p;
    p += t.b.n_tokens;
    t.b.targets = p;
    p += t.b.n_tokens;
    t.w = (const float *)p;
    t.e = t.w + t.b.n_tokens;
    return t;
}

static void write_tensors(model *m, const float *base, const char *path) {
    int n = model_num_tensors(m);
    st_write_tensor *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i < n; i++) {
        const model_tensor_info *ti = model_tensor(m, i);
        t[i] = (st_write_tensor){
            .name = ti->name, .data = base + ti->offset, .ndim = ti->ndim, .dtype = ST_F32};
        t[i].shape[0] = ti->shape[0];
        t[i].shape[1] = ti->shape[1];
    }
    char err[SEED_ERRLEN];
    if (st_write(path, t, n, NULL, err, sizeof err)) die("st_write", err);
    free(t);
}

/* loss = sum_t w_t logp_t + e_t entropy_t (the test's per-token weights) */
static double run_fwd_bwd(model *m, tbatch *t, float *logp, float *ent) {
    char err[SEED_ERRLEN];
    if (model_train_forward(m, &t->b, logp, t->use_ent ? ent : NULL, err, sizeof err))
        die("train_forward", err);
    double loss = 0;
    for (int i = 0; i < t->b.n_tokens; i++)
        loss += (double)t->w[i] * logp[i] + (t->use_ent ? (double)t->e[i] * ent[i] : 0.0);
    if (model_train_backward(m, &t->b, t->w, t->use_ent ? t->e : NULL, err, sizeof err))
        die("train_backward", err);
    return loss;
}

static int cmd_train(int argc, char **argv) {
    model_limits lim = parse_limits(argc, argv, 5);
    tbatch t = read_batch(argv[3]);
    if (lim.max_train_tokens == 0) lim.max_train_tokens = t.b.n_tokens;
    model *m = load(argv[2], &lim);
    apply_temp(m, argc, argv, 5);
    int n = t.b.n_tokens;
    float *logp = calloc((size_t)n, 4), *ent = calloc((size_t)n, 4);
    model_zero_grad(m);
    run_fwd_bwd(m, &t, logp, ent);
    char path[4096];
    snprintf(path, sizeof path, "%s/logp.f32", argv[4]);
    write_all(path, logp, (size_t)n * 4);
    snprintf(path, sizeof path, "%s/entropy.f32", argv[4]);
    write_all(path, ent, (size_t)n * 4);
    snprintf(path, sizeof path, "%s/grads.safetensors", argv[4]);
    write_tensors(m, model_grads(m), path);
    free(logp);
    free(ent);
    free(t.buf);
    model_free(m);
    return 0;
}

static int cmd_adamw(int argc, char **argv) {
    model_limits lim = parse_limits(argc, argv, 12);
    tbatch t = read_batch(argv[3]);
    if (lim.max_train_tokens == 0) lim.max_train_tokens = t.b.n_tokens;
    model *m = load(argv[2], &lim);
    int steps = atoi(argv[4]), n = t.b.n_tokens;
    model_adamw o = {.lr = strtof(argv[6], NULL),
                     .beta1 = strtof(argv[7], NULL),
                     .beta2 = strtof(argv[8], NULL),
                     .eps = strtof(argv[9], NULL),
                     .weight_decay = strtof(argv[10], NULL),
                     .max_grad_norm = strtof(argv[11], NULL)};
    float *logp = calloc((size_t)n, 4), *ent = calloc((size_t)n, 4);
    float *res = calloc((size_t)steps * 2, 4);
    char err[SEED_ERRLEN];
    for (int s = 0; s < steps; s++) {
        model_zero_grad(m);
        res[2 * s] = (float)run_fwd_bwd(m, &t, logp, ent);
        if (model_adamw_step(m, &o, &res[2 * s + 1], err, sizeof err)) die("adamw", err);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/losses.f32", argv[5]);
    write_all(path, res, (size_t)steps * 2 * 4);
    snprintf(path, sizeof path, "%s/params.safetensors", argv[5]);
    write_tensors(m, model_params(m), path);
    free(res);
    free(logp);
    free(ent);
    free(t.buf);
    model_free(m);
    return 0;
}

/* AdamW on given gradients: step s uses grads.safetensors scaled by (s + 1) and
 * (s % 2 ? -1 : 1), so moments, bias correction and clipping all matter. */
static int cmd_adamwg(int argc, char **argv) {
    model_limits lim = parse_limits(argc, argv, 12);
    lim.max_train_tokens = 1;
    model *m = load(argv[2], &lim);
    char err[SEED_ERRLEN];
    st_file *st;
    if (st_open(&st, argv[3], err, sizeof err)) die("grads", err);
    float *g0 = calloc(model_num_params(m), sizeof(float)), *g = model_grads(m);
    for (int i = 0; i < model_num_tensors(m); i++) {
        const model_tensor_info *ti = model_tensor(m, i);
        if (st_read_f32(st, ti->name, ti->shape, ti->ndim, g0 + ti->offset, err, sizeof err))
            die("grads", err);
    }
    st_close(st);
    int steps = atoi(argv[4]);
    model_adamw o = {.lr = strtof(argv[6], NULL),
                     .beta1 = strtof(argv[7], NULL),
                     .beta2 = strtof(argv[8], NULL),
                     .eps = strtof(argv[9], NULL),
                     .weight_decay = strtof(argv[10], NULL),
                     .max_grad_norm = strtof(argv[11], NULL)};
    float *norms = calloc((size_t)steps, sizeof(float));
    for (int s = 0; s < steps; s++) {
        float k = (float)(s + 1) * (s % 2 ? -1.0f : 1.0f);
        for (size_t j = 0; j < model_num_params(m); j++) g[j] = g0[j] * k;
        if (model_adamw_step(m, &o, &norms[s], err, sizeof err)) die("adamw", err);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/norms.f32", argv[5]);
    write_all(path, norms, (size_t)steps * 4);
    snprintf(path, sizeof path, "%s/params.safetensors", argv[5]);
    write_tensors(m, model_params(m), path);
    int64_t *stp;
    float *m1, *m2;
    if (model_adamw_state(m, &m1, &m2, &stp) || *stp != steps) die("adamw", "state step count");
    snprintf(path, sizeof path, "%s/exp_avg_sq.safetensors", argv[5]);
    write_tensors(m, m2, path);
    free(norms);
    free(g0);
    model_free(m);
    return 0;
}

static int cmd_save(int argc, char **argv) {
    model_limits lim = parse_limits(argc, argv, 5);
    model *m = load(argv[2], &lim);
    char err[SEED_ERRLEN];
    if (model_save(m, argv[3], strcmp(argv[4], "bf16") == 0 ? MODEL_BF16 : MODEL_F32, err,
                   sizeof err))
        die("save", err);
    model_free(m);
    return 0;
}

static int cmd_sample(int argc, char **argv) {
    (void)argc;
    size_t nb;
    float *logits = read_all(argv[2], &nb);
    int V = atoi(argv[3]);
    model_sampler s = {.temperature = strtof(argv[4], NULL),
                       .top_p = strtof(argv[5], NULL),
                       .top_k = atoi(argv[6])};
    seed_rng rng;
    seed_rng_init(&rng, strtoull(argv[7], NULL, 10));
    int n = atoi(argv[8]);
    int *tok = calloc((size_t)n, sizeof(int));
    float *lp = calloc((size_t)n, sizeof(float)), *scratch = calloc((size_t)V, sizeof(float));
    for (int i = 0; i < n; i++) tok[i] = model_sample(logits, V, &s, &rng, &lp[i], scratch);
    write_all(argv[9], tok, (size_t)n * 4);
    char path[4096];
    snprintf(path, sizeof path, "%s.logp", argv[9]);
    write_all(path, lp, (size_t)n * 4);
    free(tok);
    free(lp);
    free(scratch);
    free(logits);
    return 0;
}

/* Generation as the actor does it (prefill, then one token at a time through the KV
 * cache, model_sample on each step's logits), then the analyzer's scoring of the same
 * tokens at the same temperature. */
static int cmd_gen(int argc, char **argv) {
    model_limits lim = parse_limits(argc, argv, 10);
    model *m = load(argv[2], &lim);
    size_t nb;
    int *prompt = read_all(argv[3], &nb);
    int plen = (int)(nb / 4), V = model_get_config(m)->vocab_size, n = atoi(argv[8]);
    model_sampler s = {.temperature = strtof(argv[4], NULL),
                       .top_p = strtof(argv[5], NULL),
                       .top_k = atoi(argv[6])};
    seed_rng rng;
    seed_rng_init(&rng, strtoull(argv[7], NULL, 10));
    int *tok = calloc((size_t)n, sizeof(int));
    float *lp = calloc((size_t)n, sizeof(float)), *sc = calloc((size_t)n, sizeof(float));
    float *logits = calloc((size_t)V, sizeof(float)), *scratch = calloc((size_t)V, sizeof(float));
    char err[SEED_ERRLEN];
    int slot = 0, len = plen;
    const int *chunk = prompt;
    for (int i = 0; i < n; i++) {
        if (model_forward_cached(m, 1, &slot, &chunk, &len, logits, err, sizeof err))
            die("forward_cached", err);
        tok[i] = model_sample(logits, V, &s, &rng, &lp[i], scratch);
        chunk = &tok[i];
        len = 1;
    }
    if (model_set_temperature(m, s.temperature, err, sizeof err)) die("temperature", err);
    const int *pr = prompt, *rs = tok;
    if (model_score(m, 1, &pr, &plen, &rs, &n, &sc, err, sizeof err)) die("score", err);
    write_all(argv[9], tok, (size_t)n * 4);
    char path[4096];
    snprintf(path, sizeof path, "%s.logp", argv[9]);
    write_all(path, lp, (size_t)n * 4);
    snprintf(path, sizeof path, "%s.score", argv[9]);
    write_all(path, sc, (size_t)n * 4);
    free(tok);
    free(lp);
    free(sc);
    free(logits);
    free(scratch);
    free(prompt);
    model_free(m);
    return 0;
}

/* ---- bad input: every case must fail with a sentence containing `needle` ---- */

static int n_bad_fail;

static void expect_fail(int rc, const char *err, const char *what, const char *needle) {
    if (rc == 0 || !strstr(err, needle)) {
        fprintf(stderr, "FAIL %s: rc %d, error \"%s\" (expected one naming \"%s\")\n", what, rc,
                err, needle);
        n_bad_fail++;
    } else {
        printf("ok %s: %s\n", what, err);
    }
}

static int cmd_blas(void) {
    printf("%s\n", model_blas_core());
    return 0;
}

static int cmd_bad(int argc, char **argv) {
    model_limits lim = {.max_batch_seqs = 2, .max_seq_len = 16, .max_train_tokens = 24};
    (void)argc;
    model *m = load(argv[2], &lim);
    const int V = model_get_config(m)->vocab_size;
    char err[SEED_ERRLEN];
    float *logits = calloc((size_t)4 * V * 17, sizeof(float));
    int good[17] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 1};
    int neg[3] = {1, -1, 2}, big[3] = {1, 2, V};
    /* forward_cached */
    int slot0 = 0, slot2 = 2, slotm = -1, len3 = 3, len17 = 17, len0 = 0;
    const int *tg = good, *tn = neg, *tb = big;
#define FC(n, sl, tk, ln)                                                                          \
    (err[0] = 0, model_forward_cached(m, n, sl, tk, ln, logits, err, sizeof err))
    expect_fail(FC(1, &slot0, &tn, &len3), err, "forward_cached negative token", "-1");
    expect_fail(FC(1, &slot0, &tb, &len3), err, "forward_cached token = vocab", "outside");
    expect_fail(FC(1, &slot2, &tg, &len3), err, "forward_cached slot 2 of 2", "slot 2");
    expect_fail(FC(1, &slotm, &tg, &len3), err, "forward_cached slot -1", "slot -1");
    expect_fail(FC(1, &slot0, &tg, &len17), err, "forward_cached 17 > max_seq_len", "max_seq_len");
    expect_fail(FC(1, &slot0, &tg, &len0), err, "forward_cached empty chunk", "length 0");
    int twice[2] = {1, 1}, l33[2] = {3, 3};
    const int *tt[2] = {good, good};
    expect_fail(FC(2, twice, tt, l33), err, "forward_cached same slot twice", "twice");
    expect_fail(FC(3, twice, tt, l33), err, "forward_cached more chunks than slots", "chunks");
    /* score_cached: the same chunk checks, plus the targets */
    int tgt_big[3] = {2, 3, V}, tgt_m2[3] = {2, -2, 3}, tgt_ok[3] = {2, -1, 3};
    float o3[3], *o3p[2] = {o3, o3};
    const int *tgb = tgt_big, *tgm = tgt_m2, *tgo = tgt_ok, *tt2[2] = {tgt_ok, tgt_ok};
#define SCC(n, sl, tk, ln, tgt)                                                                    \
    (err[0] = 0, model_score_cached(m, n, sl, tk, ln, tgt, o3p, err, sizeof err))
    expect_fail(SCC(1, &slot0, &tg, &len3, &tgb), err, "score_cached target = vocab", "target");
    expect_fail(SCC(1, &slot0, &tg, &len3, &tgm), err, "score_cached target -2", "target -2");
    expect_fail(SCC(1, &slot0, &tn, &len3, &tgo), err, "score_cached negative token", "-1");
    expect_fail(SCC(1, &slot2, &tg, &len3, &tgo), err, "score_cached slot 2 of 2", "slot 2");
    expect_fail(SCC(1, &slot0, &tg, &len0, &tgo), err, "score_cached empty chunk", "length 0");
    expect_fail(SCC(1, &slot0, &tg, &len17, &tgo), err, "score_cached 17 > max_seq_len",
                "max_seq_len");
    expect_fail(SCC(2, twice, tt, l33, tt2), err, "score_cached same slot twice", "twice");
    expect_fail(SCC(0, twice, tt, l33, tt2), err, "score_cached no chunks", "0 chunks");
    if (model_kv_len(m, 0) != 0) {
        fprintf(stderr, "FAIL kv_len changed by a refused score_cached\n");
        n_bad_fail++;
    }
    /* fill slot 0 to 10 tokens, then 7 more must fail and leave the slot unchanged */
    int len10 = 10, len7 = 7;
    if (FC(1, &slot0, &tg, &len10)) die("forward_cached", err);
    expect_fail(FC(1, &slot0, &tg, &len7), err, "forward_cached past max_seq_len", "max_seq_len");
    expect_fail(SCC(1, &slot0, &tg, &len7, &tgo), err, "score_cached past max_seq_len",
                "max_seq_len");
    if (model_kv_len(m, 0) != 10) {
        fprintf(stderr, "FAIL kv_len changed by a refused call\n");
        n_bad_fail++;
    }
    expect_fail(model_kv_copy_prefix(m, 1, 0, 11, err, sizeof err), err,
                "kv_copy_prefix beyond source", "n 11");
    expect_fail(model_kv_copy_prefix(m, 5, 0, 1, err, sizeof err), err, "kv_copy_prefix bad slot",
                "slot 5");
    /* forward_logits */
    expect_fail(model_forward_logits(m, neg, 3, logits, err, sizeof err), err,
                "forward_logits negative token", "-1");
    expect_fail(model_forward_logits(m, good, 17, logits, err, sizeof err), err,
                "forward_logits 17 > max_seq_len", "max_seq_len");
    /* score */
    int pl = 2, rl = 2, rl3 = 3, rl15 = 15, pl0 = 0;
    float lp[20], *out = lp;
#define SC(pt, p, rt, r)                                                                           \
    (err[0] = 0, model_score(m, 1, &(pt), &(p), &(rt), &(r), &out, err, sizeof err))
    expect_fail(SC(tn, pl, tg, rl), err, "score negative prompt token", "-1");
    expect_fail(SC(tg, pl, tb, rl3), err, "score response token = vocab", "outside");
    expect_fail(SC(tg, pl, tg, rl15), err, "score 17 tokens > max_seq_len", "max_seq_len");
    expect_fail(SC(tg, pl0, tg, rl), err, "score empty prompt", "prompt length 0");
    /* training */
    int cu[3] = {0, 3, 5}, tok5[5] = {1, 2, 3, 4, 5}, tgt5[5] = {2, 3, -1, 5, -1};
    float w5[5] = {1, 1, 1, 1, 1}, lp5[5];
    model_batch b = {.n_tokens = 5, .n_seqs = 2, .tokens = tok5, .cu_seqlens = cu, .targets = tgt5};
    expect_fail(model_train_backward(m, &b, w5, NULL, err, sizeof err), err,
                "train_backward before forward", "forward");
    tok5[1] = -3;
    expect_fail(model_train_forward(m, &b, lp5, NULL, err, sizeof err), err,
                "train_forward negative token", "-3");
    tok5[1] = V;
    expect_fail(model_train_forward(m, &b, lp5, NULL, err, sizeof err), err,
                "train_forward token = vocab", "outside");
    tok5[1] = 2;
    tgt5[0] = V;
    expect_fail(model_train_forward(m, &b, lp5, NULL, err, sizeof err), err,
                "train_forward target = vocab", "target");
    tgt5[0] = -2;
    expect_fail(model_train_forward(m, &b, lp5, NULL, err, sizeof err), err,
                "train_forward target -2", "target");
    tgt5[0] = 2;
    cu[1] = 6;
    expect_fail(model_train_forward(m, &b, lp5, NULL, err, sizeof err), err,
                "train_forward cu_seqlens not increasing", "length");
    cu[1] = 3;
    /* shared prefixes: an earlier sequence without a prefix, within max_seq_len */
    int pre_fwd[2] = {-1, 1}, pre_self[2] = {-1, -1}, pre_neg[2] = {-1, -2};
    b.prefix = pre_fwd;
    expect_fail(model_train_forward(m, &b, lp5, NULL, err, sizeof err), err,
                "train_forward prefix names itself", "earlier sequence");
    pre_self[0] = 0;
    b.prefix = pre_self;
    expect_fail(model_train_forward(m, &b, lp5, NULL, err, sizeof err), err,
                "train_forward prefix of sequence 0 is 0", "earlier sequence");
    b.prefix = pre_neg;
    expect_fail(model_train_forward(m, &b, lp5, NULL, err, sizeof err), err,
                "train_forward prefix -2", "earlier sequence");
    b.prefix = NULL;
    int tok25[25] = {0}, tgt25[25] = {0}, cu25[2] = {0, 25}, cu2[3] = {0, 8, 25};
    model_batch big_b = {
        .n_tokens = 25, .n_seqs = 2, .tokens = tok25, .cu_seqlens = cu2, .targets = tgt25};
    expect_fail(model_train_forward(m, &big_b, lp5, NULL, err, sizeof err), err,
                "train_forward 25 tokens > max_train_tokens", "max_train_tokens");
    model_batch long_b = {
        .n_tokens = 20, .n_seqs = 1, .tokens = tok25, .cu_seqlens = cu25, .targets = tgt25};
    cu25[1] = 20;
    expect_fail(model_train_forward(m, &long_b, lp5, NULL, err, sizeof err), err,
                "train_forward sequence 20 > max_seq_len", "max_seq_len");
    /* 10 + 10 tokens through a prefix: each fits, the two together exceed 16 */
    int cu3[4] = {0, 10, 20, 22}, pre3[3] = {-1, 0, 0};
    model_batch pre_b = {
        .n_tokens = 22, .n_seqs = 3, .tokens = tok25, .cu_seqlens = cu3, .targets = tgt25};
    pre_b.prefix = pre3;
    expect_fail(model_train_forward(m, &pre_b, lp5, NULL, err, sizeof err), err,
                "train_forward prefix + sequence 20 > max_seq_len", "max_seq_len");
    /* a chain within max_seq_len trains */
    cu3[1] = 5;
    cu3[2] = 10;
    cu3[3] = pre_b.n_tokens = 15;
    int pre_ok[3] = {-1, 0, 1};
    pre_b.prefix = pre_ok;
    float lp15[15];
    if (model_train_forward(m, &pre_b, lp15, NULL, err, sizeof err)) die("prefix chain", err);
    int pre3n[3] = {-1, 0, 1};
    cu3[1] = 6;
    cu3[2] = 12;
    cu3[3] = pre_b.n_tokens = 17; /* 6 + 6 + 5: each pair fits, the chain does not */
    pre_b.prefix = pre3n;
    expect_fail(model_train_forward(m, &pre_b, lp5, NULL, err, sizeof err), err,
                "train_forward prefix chain 17 > max_seq_len", "max_seq_len");
    if (model_train_forward(m, &b, lp5, NULL, err, sizeof err)) die("train_forward", err);
    expect_fail(model_train_backward(m, &b, w5, w5, err, sizeof err), err,
                "train_backward dentropy without forward entropy", "entropy");
    w5[2] = NAN;
    if (model_train_forward(m, &b, lp5, NULL, err, sizeof err)) die("train_forward", err);
    expect_fail(model_train_backward(m, &b, w5, NULL, err, sizeof err), err,
                "train_backward NaN gradient", "non-finite");
    model_adamw o = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 1.5f, .eps = 1e-8f};
    expect_fail(model_adamw_step(m, &o, NULL, err, sizeof err), err, "adamw beta2 1.5", "betas");
    expect_fail(model_set_temperature(m, NAN, err, sizeof err), err, "temperature NaN",
                "temperature");
    expect_fail(model_set_temperature(m, INFINITY, err, sizeof err), err, "temperature inf",
                "temperature");
    if (model_set_temperature(m, 0.0f, err, sizeof err) || model_temperature(m) != 1.0f ||
        model_set_temperature(m, 0.7f, err, sizeof err) || model_temperature(m) != 0.7f) {
        fprintf(stderr, "FAIL temperature 0 must score at 1, 0.7 at 0.7\n");
        n_bad_fail++;
    }
    free(logits);
    model_free(m);
    /* limits and backend */
    model_config c = *model_get_config(m = load(argv[2], &lim));
    model_free(m);
    model *m2 = NULL;
    model_limits badlim = {.max_batch_seqs = 1, .max_seq_len = 0};
    expect_fail(model_create(&m2, &c, &badlim, "cpu", err, sizeof err), err, "create max_seq_len 0",
                "max_seq_len");
    expect_fail(model_create(&m2, &c, &lim, "tpu", err, sizeof err), err, "create backend tpu",
                "tpu");
    model_limits nolim = {.max_batch_seqs = 1, .max_seq_len = 8};
    if (model_create(&m2, &c, &nolim, "cpu", err, sizeof err)) die("create", err);
    expect_fail(model_train_forward(m2, &b, lp5, NULL, err, sizeof err), err,
                "train_forward without training limits", "max_train_tokens 0");
    expect_fail(model_adamw_step(m2, &o, NULL, err, sizeof err), err,
                "adamw without training limits", "max_train_tokens 0");
    model_free(m2);
    c.num_key_value_heads = 5;
    expect_fail(model_create(&m2, &c, &lim, "cpu", err, sizeof err), err,
                "create heads not a multiple of kv heads", "num_key_value_heads");
    printf("%s\n", n_bad_fail ? "FAILED" : "all bad inputs refused");
    return n_bad_fail ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "blas")) return cmd_blas();
    if (argc < 3) {
        fprintf(stderr, "usage: model_tool logits|script|score|train|adamw|save|sample|bad ...\n");
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "logits") && argc >= 5) return cmd_logits(argc, argv);
    if (!strcmp(c, "script") && argc >= 5) return cmd_script(argc, argv);
    if (!strcmp(c, "score") && argc >= 5) return cmd_score(argc, argv);
    if (!strcmp(c, "train") && argc >= 5) return cmd_train(argc, argv);
    if (!strcmp(c, "adamw") && argc >= 12) return cmd_adamw(argc, argv);
    if (!strcmp(c, "adamwg") && argc >= 12) return cmd_adamwg(argc, argv);
    if (!strcmp(c, "save") && argc >= 5) return cmd_save(argc, argv);
    if (!strcmp(c, "sample") && argc >= 10) return cmd_sample(argc, argv);
    if (!strcmp(c, "gen") && argc >= 10) return cmd_gen(argc, argv);
    if (!strcmp(c, "bad")) return cmd_bad(argc, argv);
    fprintf(stderr, "model_tool: unknown or incomplete command %s\n", c);
    return 2;
}
