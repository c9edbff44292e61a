/* learner_tool — drives the learner's real sample building (learner/samples.h) and
 * optimizer step (learner/step.h) for tests/learner/test_train.py.
 *
 * Scored groups come in as a packed Envelope (written by Python's protobuf runtime) and
 * go through wire_decode, like the learner's scored-in socket. Results are JSON. Options
 * key=value after the positional arguments (see opts_parse).
 *
 *   samples ENVELOPE OUT            build samples; per sample its episode, step,
 *                                   advantages and which arrays it carries
 *   step DIR ENVELOPE OUT           random model from DIR/config.json; build samples, run
 *                                   `steps` optimizer steps; stats per step, the policy's
 *                                   log-probs before training, grads (grads=PATH), the
 *                                   largest parameter change, the reference model's buffers
 *   moments DIR OUT                 one SFT step, then learner_step_reset_moments
 *   prompt DIR OUT                  one SFT step with the prompt loss against the model run
 *                                   by hand (cmd_prompt) */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learner/samples.h"
#include "learner/step.h"
#include "model/model.h"
#include "proto/wire.h"

static void die(const char *what, const char *err) {
    fprintf(stderr, "learner_tool: %s: %s\n", what, err);
    exit(1);
}

typedef struct opts {
    learner_samples_cfg sc;
    learner_loss_cfg lc;
    int micro, steps, ref, share, ref_other;
    float lr, max_grad_norm;
    unsigned long seed;
    const char *grads;
} opts;

static opts opts_parse(int argc, char **argv, int first) {
    opts o = {.sc = {.adv_norm = JOB_ADV_STD, .use_q = 1, .gigpo_gamma = 0.95f},
              .lc = {.w_opd = 1.0f,
                     .c_opd = 2.0f,
                     .clip_eps = 0.2f,
                     .dual_clip = 3.0f,
                     .opd_mode = JOB_OPD_NONE},
              .micro = 512,
              .steps = 1,
              .lr = 1e-3f,
              .max_grad_norm = 0.0f,
              .seed = 1};
    for (int i = first; i < argc; i++) {
        char key[32];
        double v;
        if (!strncmp(argv[i], "grads=", 6)) {
            o.grads = argv[i] + 6;
            continue;
        }
        if (sscanf(argv[i], "%31[^=]=%lf", key, &v) != 2) die("option", argv[i]);
        if (!strcmp(key, "adv_norm"))
            o.sc.adv_norm = (job_adv_norm)(int)v;
        else if (!strcmp(key, "use_q"))
            o.sc.use_q = (int)v;
        else if (!strcmp(key, "baseline"))
            o.sc.opd_baseline = (int)v; /* job_opd_baseline: 0 none, 1 group */
        else if (!strcmp(key, "agg"))
            o.sc.loss_agg = (int)v; /* job_loss_agg: 0 episode-mean, 1 token-mean */
        else if (!strcmp(key, "gigpo"))
            o.sc.gigpo_coef = (float)v;
        else if (!strcmp(key, "gamma"))
            o.sc.gigpo_gamma = (float)v;
        else if (!strcmp(key, "w_opd"))
            o.lc.w_opd = (float)v;
        else if (!strcmp(key, "c_opd"))
            o.lc.c_opd = (float)v;
        else if (!strcmp(key, "clip"))
            o.lc.clip_eps = (float)v;
        else if (!strcmp(key, "dual"))
            o.lc.dual_clip = (float)v;
        else if (!strcmp(key, "kl"))
            o.lc.kl_beta = (float)v;
        else if (!strcmp(key, "ent"))
            o.lc.entropy_coef = (float)v;
        else if (!strcmp(key, "opd_mode"))
            o.lc.opd_mode = (job_opd_loss)(int)v;
        else if (!strcmp(key, "opd_coef"))
            o.lc.opd_loss_coef = (float)v;
        else if (!strcmp(key, "micro"))
            o.micro = (int)v;
        else if (!strcmp(key, "steps"))
            o.steps = (int)v;
        else if (!strcmp(key, "ref"))
            o.ref = (int)v;
        else if (!strcmp(key, "share"))
            o.share = (int)v;
        else if (!strcmp(key, "ref_other"))
            o.ref_other = (int)v;
        else if (!strcmp(key, "lr"))
            o.lr = (float)v;
        else if (!strcmp(key, "clip_norm"))
            o.max_grad_norm = (float)v;
        else if (!strcmp(key, "seed"))
            o.seed = (unsigned long)v;
        else
            die("unknown option", argv[i]);
    }
    return o;
}

static Seed__Envelope *read_group(const char *path) {
    char err[SEED_ERRLEN], *buf;
    size_t n;
    if (seed_read_file(path, &buf, &n, err, sizeof err)) die("read", err);
    wire_rx rx;
    wire_rx_init(&rx, "test", WIRE_ACCEPT(SEED__ENVELOPE__BODY_SCORED_GROUP), 0, 0);
    Seed__Envelope *e = NULL;
    if (wire_decode(&rx, buf, n, "test", &e) != 1) die("decode", "not a valid scored group");
    free(buf);
    return e;
}

static void write_json(const char *path, cJSON *j) {
    char *s = cJSON_PrintUnformatted(j);
    FILE *f = fopen(path, "w");
    if (!s || !f || fputs(s, f) < 0 || fclose(f) != 0) die("write", path);
    free(s);
    cJSON_Delete(j);
}

static cJSON *floats(const float *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

/* Which episode/step of the group a sample came from (its behav array is the step's). */
static void locate(const Seed__EpisodeGroup *g, const learner_sample *s, int *ep, int *st) {
    for (size_t e = 0; e < g->n_episodes; e++)
        for (size_t t = 0; t < g->episodes[e]->n_steps; t++)
            if (g->episodes[e]->steps[t]->response_ids == s->resp) {
                *ep = (int)e;
                *st = (int)t;
                return;
            }
    die("locate", "a sample points at no step of the group");
}

static cJSON *build(Seed__Envelope *e, const opts *o, learner_samples *b) {
    learner_samples_stats st;
    memset(&st, 0, sizeof st);
    char err[SEED_ERRLEN];
    Seed__ScoredGroup *sg = e->scored_group;
    if (learner_samples_build(b, &o->sc, &sg, 1, &st, err, sizeof err)) die("build", err);
    cJSON *j = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(j, "samples");
    for (int i = 0; i < b->n; i++) {
        const learner_sample *s = &b->v[i];
        int ep, stp;
        locate(sg->group, s, &ep, &stp);
        const Seed__Step *sp = sg->group->episodes[ep]->steps[stp];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "episode", ep);
        cJSON_AddNumberToObject(x, "step", stp);
        cJSON_AddNumberToObject(x, "adv_ep", s->adv_ep);
        cJSON_AddNumberToObject(x, "adv_step", s->adv_step);
        cJSON_AddNumberToObject(x, "agg", s->agg);
        cJSON_AddBoolToObject(x, "behav_is_sample_logprobs", s->behav == sp->sample_logprobs);
        cJSON_AddItemToObject(x, "behav", floats(s->behav, s->rlen));
        cJSON_AddBoolToObject(x, "has_q", s->q != NULL);
        cJSON_AddBoolToObject(x, "has_s", s->s != NULL);
        cJSON_AddNumberToObject(x, "q_base", s->q_base);
        cJSON_AddItemToArray(arr, x);
    }
    cJSON *c = cJSON_AddObjectToObject(j, "stats");
    cJSON_AddNumberToObject(c, "groups", (double)st.groups);
    cJSON_AddNumberToObject(c, "samples", (double)st.samples);
    cJSON_AddNumberToObject(c, "scored_off_version", (double)st.scored_off_version);
    cJSON_AddNumberToObject(c, "episodes_error", (double)st.episodes_error);
    cJSON_AddNumberToObject(c, "groups_all_won", (double)st.groups_all_won);
    cJSON_AddNumberToObject(c, "groups_all_lost", (double)st.groups_all_lost);
    cJSON *r = cJSON_AddObjectToObject(j, "errors");
    for (int i = 0; i < st.errors.n; i++)
        cJSON_AddNumberToObject(r, st.errors.reason[i], (double)st.errors.count[i]);
    if (st.errors.other) cJSON_AddNumberToObject(r, "other", (double)st.errors.other);
    return j;
}

static int cmd_samples(int argc, char **argv) {
    opts o = opts_parse(argc, argv, 4);
    Seed__Envelope *e = read_group(argv[2]);
    learner_samples b;
    learner_samples_init(&b);
    write_json(argv[3], build(e, &o, &b));
    learner_samples_free(&b);
    wire_free(e);
    return 0;
}

static model *make_model(const char *dir, int micro, int train, unsigned long seed) {
    char err[SEED_ERRLEN], path[2048];
    snprintf(path, sizeof path, "%s/config.json", dir);
    model_config cfg;
    if (model_config_load(path, &cfg, err, sizeof err)) die("config", err);
    model_limits lim = {.max_batch_seqs = train ? 1 : 0,
                        .max_seq_len = micro,
                        .max_train_tokens = train ? micro : 0,
                        .threads = 1};
    model *m;
    if (model_create(&m, &cfg, &lim, "cpu", err, sizeof err)) die("model", err);
    model_init_random(m, seed, 0.02f);
    return m;
}

static cJSON *step_json(int rc, const char *err, const learner_step_stats *s) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "rc", rc);
    cJSON_AddStringToObject(x, "err", rc ? err : "");
    cJSON_AddBoolToObject(x, "applied", s->applied);
    cJSON_AddBoolToObject(x, "skipped_nonfinite", s->skipped_nonfinite);
    cJSON_AddNumberToObject(x, "dropped_overlong", (double)s->dropped_overlong);
    cJSON_AddNumberToObject(x, "samples", (double)s->samples);
    cJSON_AddNumberToObject(x, "micro_batches", (double)s->micro_batches);
    cJSON_AddNumberToObject(x, "tokens", (double)s->tokens);
    cJSON_AddNumberToObject(x, "packed_tokens", (double)s->packed_tokens);
    cJSON_AddNumberToObject(x, "response_tokens", (double)s->response_tokens);
    cJSON_AddNumberToObject(x, "q_tokens", (double)s->q_tokens);
    const double v[] = {s->loss,     s->pg,       s->opd,         s->kl,
                        s->entropy,  s->ppo_kl,   s->mean_abs_qs, s->opd_adv,
                        s->clipfrac, s->mean_adv, s->grad_norm};
    const char *k[] = {"loss",   "pg",      "opd",      "kl",       "entropy",  "ppo_kl",
                       "abs_qs", "opd_adv", "clipfrac", "mean_adv", "grad_norm"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        cJSON_AddNumberToObject(x, k[i], isfinite(v[i]) ? v[i] : 1e308);
    return x;
}

static int cmd_step(int argc, char **argv) {
    opts o = opts_parse(argc, argv, 5);
    char err[SEED_ERRLEN];
    Seed__Envelope *e = read_group(argv[3]);
    learner_samples b;
    learner_samples_init(&b);
    cJSON *j = build(e, &o, &b);
    model *pol = make_model(argv[2], o.micro, 1, o.seed), *ref = NULL;
    if (o.ref) {
        /* shared prefixes: the reference runs the packed batch; ref_other: other weights
         * than the policy's (so a mix-up of the two log-probs shows) */
        ref = make_model(argv[2], o.micro, o.share, o.ref_other ? o.seed + 7 : o.seed);
        if (!o.ref_other)
            memcpy(model_params(ref), model_params(pol), sizeof(float) * model_num_params(pol));
        if (model_params_changed(ref, err, sizeof err)) die("ref", err);
        float *m1, *m2;
        int64_t *stp;
        cJSON *r = cJSON_AddObjectToObject(j, "ref");
        cJSON_AddBoolToObject(r, "grads", model_grads(ref) != NULL);
        cJSON_AddBoolToObject(r, "optimizer", model_adamw_state(ref, &m1, &m2, &stp) == 0);
    }
    /* the policy's log-probs before training (for the ratio the step sees) */
    cJSON *lp = cJSON_AddArrayToObject(j, "logp");
    for (int i = 0; i < b.n; i++) {
        const learner_sample *s = &b.v[i];
        if (s->plen + s->rlen > o.micro) {
            cJSON_AddItemToArray(lp, cJSON_CreateNull());
            continue;
        }
        float *out = malloc(sizeof(float) * (size_t)s->rlen);
        const int *p = s->prompt, *r = s->resp;
        if (!out || model_score(pol, 1, &p, &s->plen, &r, &s->rlen, &out, err, sizeof err))
            die("score", err);
        cJSON_AddItemToArray(lp, floats(out, s->rlen));
        free(out);
    }
    size_t np = model_num_params(pol);
    float *before = malloc(sizeof(float) * np);
    if (!before) die("alloc", "params");
    memcpy(before, model_params(pol), sizeof(float) * np);
    model_adamw opt = {
        .lr = o.lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .max_grad_norm = o.max_grad_norm};
    learner_stepper *t;
    if (learner_step_create(&t, pol, ref, &o.lc, &opt, o.micro, o.share, err, sizeof err))
        die("trainer", err);
    cJSON_AddBoolToObject(j, "shares_prefix", learner_step_shares_prefix(t));
    cJSON *steps = cJSON_AddArrayToObject(j, "steps");
    for (int k = 0; k < o.steps; k++) {
        learner_step_stats s;
        int rc = learner_step_run(t, b.v, b.n, &s, err, sizeof err);
        cJSON_AddItemToArray(steps, step_json(rc, err, &s));
        if (k == 0 && o.grads) {
            FILE *f = fopen(o.grads, "wb");
            if (!f || fwrite(model_grads(pol), sizeof(float), np, f) != np || fclose(f) != 0)
                die("write", o.grads);
        }
        if (rc) break;
    }
    double change = 0.0;
    for (size_t i = 0; i < np; i++) change = fmax(change, fabs(model_params(pol)[i] - before[i]));
    cJSON_AddNumberToObject(j, "param_change", change);
    write_json(argv[4], j);
    free(before);
    learner_step_free(t);
    model_free(pol);
    model_free(ref);
    learner_samples_free(&b);
    wire_free(e);
    return 0;
}

static int cmd_moments(int argc, char **argv) {
    char err[SEED_ERRLEN];
    model *pol = make_model(argv[2], 64, 1, 3);
    learner_loss_cfg lc = {0};
    model_adamw opt = {
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .max_grad_norm = 1.0f};
    learner_stepper *t;
    if (learner_step_create(&t, pol, NULL, &lc, &opt, 64, 0, err, sizeof err)) die("trainer", err);
    int32_t toks[24];
    for (int i = 0; i < 24; i++) toks[i] = (i * 37 + 5) % model_get_config(pol)->vocab_size;
    learner_sample s = {.prompt = toks, .plen = 16, .resp = toks + 16, .rlen = 8, .sft = 1};
    learner_step_stats st;
    if (learner_step_run(t, &s, 1, &st, err, sizeof err)) die("step", err);
    float *m1, *m2;
    int64_t *step;
    if (model_adamw_state(pol, &m1, &m2, &step)) die("state", "no optimizer state");
    size_t np = model_num_params(pol);
    double a1 = 0, a2 = 0;
    for (size_t i = 0; i < np; i++) a1 += fabs(m1[i]), a2 += fabs(m2[i]);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "before_step", (double)*step);
    cJSON_AddNumberToObject(j, "before_m", a1);
    cJSON_AddNumberToObject(j, "before_v", a2);
    if (learner_step_reset_moments(t, err, sizeof err)) die("reset", err);
    a1 = a2 = 0;
    for (size_t i = 0; i < np; i++) a1 += fabs(m1[i]), a2 += fabs(m2[i]);
    cJSON_AddNumberToObject(j, "after_step", (double)*step);
    cJSON_AddNumberToObject(j, "after_m", a1);
    cJSON_AddNumberToObject(j, "after_v", a2);
    write_json(argv[3], j);
    learner_step_free(t);
    model_free(pol);
    return 0;
}

/* The prompt loss (learner_step_set_prompt_weight) against a model run by hand: n SFT
 * samples whose prompts share their first P tokens, one step with weight w, sharing on
 * or off (share=). The hand computation runs every sample alone with every position
 * predicting its next token and weights the rows as the step defines the loss: mean
 * response NLL + w * mean prompt NLL over the prompt rows the step runs (a shared row
 * once; the row that ends a shared part predicts nothing). JSON: the step's and the
 * hand's sft_nll, prompt_nll and loss, and the largest gradient difference. */
static int cmd_prompt(int argc, char **argv) {
    opts o = opts_parse(argc, argv, 4);
    enum { N = 6, PL = 40, RL = 6, P = 24 };
    const float w = 0.5f;
    char err[SEED_ERRLEN];
    model *pol = make_model(argv[2], 512, 1, o.seed), *hand = make_model(argv[2], 512, 1, o.seed);
    const int vocab = model_get_config(pol)->vocab_size;
    static int32_t toks[N][PL + RL];
    unsigned long x = o.seed * 2654435761UL + 1;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < PL + RL; k++) {
            x = x * 6364136223846793005UL + 1442695040888963407UL;
            toks[i][k] = k < P ? toks[0][k] : (int32_t)((x >> 33) % (unsigned long)vocab);
            if (i == 0 && k < P) toks[i][k] = (int32_t)((x >> 33) % (unsigned long)vocab);
        }
    learner_sample smp[N];
    for (int i = 0; i < N; i++)
        smp[i] = (learner_sample){
            .prompt = toks[i], .plen = PL, .resp = toks[i] + PL, .rlen = RL, .sft = 1};
    model_adamw opt = {.lr = 0.0f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
    learner_stepper *t;
    if (learner_step_create(&t, pol, NULL, &o.lc, &opt, 512, o.share, err, sizeof err))
        die("trainer", err);
    learner_step_set_prompt_weight(t, w);
    learner_step_stats st;
    if (learner_step_run(t, smp, N, &st, err, sizeof err)) die("step", err);
    const int shared = learner_step_shares_prefix(t);
    /* by hand: which rows carry which weight */
    const int n_prompt_rows = shared ? (P - 1) + N * (PL - P - 1) : N * (PL - 1);
    double sft = 0, pr = 0;
    model_zero_grad(hand);
    static int tgt[PL + RL], cu[2];
    static float logp[PL + RL], dlogp[PL + RL];
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < PL + RL; k++) tgt[k] = k + 1 < PL + RL ? toks[i][k + 1] : -1;
        cu[0] = 0;
        cu[1] = PL + RL;
        model_batch b = {
            .n_tokens = PL + RL, .n_seqs = 1, .tokens = toks[i], .cu_seqlens = cu, .targets = tgt};
        if (model_train_forward(hand, &b, logp, NULL, err, sizeof err)) die("forward", err);
        for (int k = 0; k < PL + RL; k++) {
            dlogp[k] = 0;
            if (k >= PL - 1 && k < PL + RL - 1) { /* response row */
                dlogp[k] = -1.0f / (N * RL);
                sft -= logp[k] / (N * RL);
                continue;
            }
            if (k >= PL - 1) continue;
            /* prompt row k predicts prompt token k + 1 */
            int counted = !shared || (k >= P && k < PL - 1) || (i == 0 && k < P - 1);
            if (!counted) continue;
            dlogp[k] = -w / n_prompt_rows;
            pr -= logp[k] / n_prompt_rows;
        }
        if (model_train_backward(hand, &b, dlogp, NULL, err, sizeof err)) die("backward", err);
    }
    size_t np = model_num_params(pol);
    double gd = 0, gmax = 0;
    for (size_t i = 0; i < np; i++) {
        gd = fmax(gd, fabs(model_grads(pol)[i] - model_grads(hand)[i]));
        gmax = fmax(gmax, fabs(model_grads(hand)[i]));
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "shares_prefix", shared);
    cJSON_AddNumberToObject(j, "packed_tokens", (double)st.packed_tokens);
    cJSON_AddNumberToObject(j, "sft_nll", st.sft_nll);
    cJSON_AddNumberToObject(j, "prompt_nll", st.prompt_nll);
    cJSON_AddNumberToObject(j, "loss", st.loss);
    cJSON_AddNumberToObject(j, "hand_sft_nll", sft);
    cJSON_AddNumberToObject(j, "hand_prompt_nll", pr);
    cJSON_AddNumberToObject(j, "hand_loss", sft + w * pr);
    cJSON_AddNumberToObject(j, "grad_diff", gd);
    cJSON_AddNumberToObject(j, "grad_max", gmax);
    write_json(argv[3], j);
    learner_step_free(t);
    model_free(pol);
    model_free(hand);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "samples")) return cmd_samples(argc, argv);
    if (argc >= 5 && !strcmp(argv[1], "step")) return cmd_step(argc, argv);
    if (argc >= 4 && !strcmp(argv[1], "moments")) return cmd_moments(argc, argv);
    if (argc >= 4 && !strcmp(argv[1], "prompt")) return cmd_prompt(argc, argv);
    fprintf(stderr, "usage: learner_tool samples ENVELOPE OUT [k=v...] | step DIR ENVELOPE OUT "
                    "[k=v...] | moments DIR OUT | prompt DIR OUT [share=0|1]\n");
    return 2;
}
