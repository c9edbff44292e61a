/* bench_step — one learner optimizer step over a realistic batch, with shared prompt
 * prefixes packed once (optim.share_prefix, the default) and without, in the same run.
 *
 * The batch: `tasks` sokoban groups of G episodes, at most `steps` steps each
 * (tests/analyzer/sokoban_group.h: the actor's renderer with history 2, the policy's
 * response shape), as RL samples with the KL term on (the reference runs too), on the
 * shipped agent's model shape and tokenizer (deploy/models/agent, random weights: the
 * work does not depend on them). Both ways start from the same weights and AdamW state;
 * their loss and gradient norm must agree to 1e-4 (fp32 summation order), or the bench
 * fails. Prints a table (tokens the model ran, best wall time of reps) and one JSON line
 * with the ratios. Options: tasks=2 G=8 steps=5 resp=48 micro=4096 threads=2 reps=2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/model/bench_common.h"
#include "learner/step.h"
#include "model/tokenizer.h"
#include "tests/analyzer/sokoban_group.h"

static void die(const char *what, const char *err) {
    fprintf(stderr, "bench_learner_step: %s: %s\n", what, err);
    exit(1);
}

int main(int argc, char **argv) {
    const int tasks = bench_arg(argc, argv, "tasks", 2), G = bench_arg(argc, argv, "G", 8);
    const int steps = bench_arg(argc, argv, "steps", 5), resp = bench_arg(argc, argv, "resp", 48);
    const int micro = bench_arg(argc, argv, "micro", 4096);
    const int threads = bench_arg(argc, argv, "threads", 2),
              reps = bench_arg(argc, argv, "reps", 2);
    char err[SEED_ERRLEN];
    tok *tk;
    if (tok_load(&tk, SEED_BENCH_AGENT "/tokenizer.json", err, sizeof err)) die("tokenizer", err);
    sokoban_group *g = calloc((size_t)tasks, sizeof *g);
    int n = 0;
    /* tasks from seed 11 on; a task whose random moves left it unsolvable before the
     * expert's turn (the group builder asks the expert) is passed over */
    for (int k = 0, tries = 0; k < tasks; tries++) {
        if (tries == 8 * tasks) die("group", err);
        if (sokoban_group_build(&g[k], tk, G, steps, resp, 11 + (uint64_t)tries, err, sizeof err)) {
            sokoban_group_free(&g[k]);
            continue;
        }
        n += g[k++].n_steps;
    }
    /* one RL sample per step (the s pair: the prompt without skills), with sampling
     * log-probs and a +-1 advantage */
    learner_sample *smp = calloc((size_t)n, sizeof *smp);
    float *behav = malloc(sizeof(float) * (size_t)n * (size_t)resp);
    int64_t tokens = 0;
    for (int k = 0, i = 0; k < tasks; k++)
        for (int p = 0; p < g[k].n_pairs; p += 2, i++) {
            const analyzer_score_pair *s = &g[k].pairs[p];
            float *b = behav + (size_t)i * (size_t)resp;
            for (int j = 0; j < s->rlen; j++) b[j] = -1.0f - 0.01f * (float)j;
            smp[i] = (learner_sample){.prompt = s->prompt,
                                      .plen = s->plen,
                                      .resp = s->resp,
                                      .rlen = s->rlen,
                                      .adv_ep = i % 3 ? 1.0f : -1.0f,
                                      .behav = b};
            tokens += s->plen + s->rlen;
        }
    model_config c;
    if (model_config_load(SEED_BENCH_AGENT "/config.json", &c, err, sizeof err)) die("config", err);
    model_limits lim = {
        .max_batch_seqs = 1, .max_seq_len = micro, .max_train_tokens = micro, .threads = threads};
    model *pol, *ref;
    if (model_create(&pol, &c, &lim, "cpu", err, sizeof err) ||
        model_create(&ref, &c, &lim, "cpu", err, sizeof err))
        die("model", err);
    model_init_random(pol, 1, 0.02f);
    memcpy(model_params(ref), model_params(pol), sizeof(float) * model_num_params(pol));
    float *init = malloc(sizeof(float) * model_num_params(pol));
    memcpy(init, model_params(pol), sizeof(float) * model_num_params(pol));
    learner_loss_cfg lc = {
        .w_opd = 1.0f, .c_opd = 2.0f, .clip_eps = 0.2f, .dual_clip = 3.0f, .kl_beta = 0.01f};
    model_adamw opt = {
        .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .max_grad_norm = 1.0f};
    const char *names[2] = {"each prompt whole (share_prefix false)",
                            "shared prefixes once (share_prefix true)"};
    double best[2] = {1e30, 1e30}, loss[2] = {0}, gn[2] = {0};
    int64_t ran[2] = {0};
    for (int rep = 0; rep < reps; rep++)
        for (int way = 0; way < 2; way++) {
            learner_stepper *t;
            if (learner_step_create(&t, pol, ref, &lc, &opt, micro, way, err, sizeof err))
                die("stepper", err);
            memcpy(model_params(pol), init, sizeof(float) * model_num_params(pol));
            learner_step_stats st;
            if (learner_step_run(t, smp, n, &st, err, sizeof err) || !st.applied) die("step", err);
            if (st.seconds < best[way]) best[way] = st.seconds;
            loss[way] = st.loss;
            gn[way] = st.grad_norm;
            ran[way] = st.packed_tokens;
            learner_step_free(t);
        }
    const double dl = fabs(loss[1] - loss[0]) / fmax(fabs(loss[0]), 1e-6),
                 dg = fabs(gn[1] - gn[0]) / fmax(gn[0], 1e-6);
    printf("batch: %d sokoban groups x %d episodes, %d samples, %lld tokens (%.0f a sample); "
           "model: %s shape (%zu parameters), %d threads, micro-batch %d\n",
           tasks, G, n, (long long)tokens, (double)tokens / n, SEED_BENCH_AGENT,
           model_num_params(pol), threads, micro);
    printf("%-44s %10s %9s %10s %10s\n", "way", "tokens run", "wall s", "tokens/s", "time/whole");
    for (int w = 0; w < 2; w++)
        printf("%-44s %10lld %9.3f %10.0f %10.3f\n", names[w], (long long)ran[w], best[w],
               (double)tokens / best[w], best[w] / best[0]);
    printf("agreement: loss rel diff %.2g, grad norm rel diff %.2g (bound 1e-4)\n", dl, dg);
    printf("{\"bench\":\"learner_step\",\"samples\":%d,\"tokens\":%lld,\"whole_tokens\":%lld,"
           "\"whole_s\":%.4f,\"shared_tokens\":%lld,\"shared_s\":%.4f,\"speedup\":%.3f,"
           "\"token_ratio\":%.4f}\n",
           n, (long long)tokens, (long long)ran[0], best[0], (long long)ran[1], best[1],
           best[0] / best[1], (double)ran[1] / (double)ran[0]);
    for (int k = 0; k < tasks; k++) sokoban_group_free(&g[k]);
    free(g);
    free(smp);
    free(behav);
    free(init);
    model_free(pol);
    model_free(ref);
    tok_free(tk);
    return dl > 1e-4 || dg > 1e-4;
}
