/* step.c — one optimizer step (step.h). */
#include "learner/step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

struct learner_stepper {
    model *policy, *ref;
    learner_loss_cfg loss;
    model_adamw opt;
    int cap; /* micro_batch_tokens */
    int nonfinite_run;
    /* packed micro-batch, planned once */
    int *tokens, *targets, *cu;
    float *logp, *ent, *dlogp, *dent;
    /* per response position (compacted) */
    int *pos;
    float *c_logp, *c_behav, *c_s, *c_q, *c_ref, *c_ent, *c_adv, *c_dlogp, *c_dent;
    /* reference scoring of one micro-batch's RL samples (at most cap / 2 sequences) */
    const int **r_prompt, **r_resp;
    int *r_plen, *r_rlen;
    float **r_out;
    /* indices of the step's samples that fit, grown per step */
    int *keep;
    int keep_cap;
};

int learner_step_create(learner_stepper **out, model *policy, model *ref,
                        const learner_loss_cfg *loss, const model_adamw *opt,
                        int micro_batch_tokens, char *err, size_t errlen) {
    if (micro_batch_tokens < 2)
        return seed_errf(err, errlen, "micro_batch_tokens must be at least 2, got %d",
                         micro_batch_tokens);
    learner_stepper *t = calloc(1, sizeof *t);
    if (!t) return seed_errf(err, errlen, "out of memory creating the stepper");
    t->policy = policy;
    t->ref = ref;
    t->loss = *loss;
    t->opt = *opt;
    t->cap = micro_batch_tokens;
    size_t n = (size_t)micro_batch_tokens;
    t->tokens = malloc(n * sizeof(int));
    t->targets = malloc(n * sizeof(int));
    t->cu = malloc((n + 1) * sizeof(int));
    t->pos = malloc(n * sizeof(int));
    t->r_prompt = malloc(n * sizeof *t->r_prompt);
    t->r_resp = malloc(n * sizeof *t->r_resp);
    t->r_plen = malloc(n * sizeof(int));
    t->r_rlen = malloc(n * sizeof(int));
    t->r_out = malloc(n * sizeof *t->r_out);
    float **fb[] = {&t->logp, &t->ent,   &t->dlogp, &t->dent,  &t->c_logp,  &t->c_behav, &t->c_s,
                    &t->c_q,  &t->c_ref, &t->c_ent, &t->c_adv, &t->c_dlogp, &t->c_dent};
    int ok = t->tokens && t->targets && t->cu && t->pos && t->r_prompt && t->r_resp && t->r_plen &&
             t->r_rlen && t->r_out;
    for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
        *fb[i] = calloc(n, sizeof(float));
        ok = ok && *fb[i];
    }
    if (!ok) {
        learner_step_free(t);
        return seed_errf(err, errlen, "out of memory planning the step buffers (%d tokens)",
                         micro_batch_tokens);
    }
    *out = t;
    return 0;
}

void learner_step_free(learner_stepper *t) {
    if (!t) return;
    void *p[] = {
        t->tokens,         t->targets, t->cu,     t->pos,     t->logp,   t->ent,
        t->dlogp,          t->dent,    t->c_logp, t->c_behav, t->c_s,    t->c_q,
        t->c_ref,          t->c_ent,   t->c_adv,  t->c_dlogp, t->c_dent, (void *)t->r_prompt,
        (void *)t->r_resp, t->r_plen,  t->r_rlen, t->r_out,   t->keep};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    free(t);
}

void learner_step_set_lr(learner_stepper *t, float lr) {
    t->opt.lr = lr;
}

int learner_step_reset_moments(learner_stepper *t, char *err, size_t errlen) {
    float *m1, *m2;
    int64_t *step;
    if (model_adamw_state(t->policy, &m1, &m2, &step))
        return seed_errf(err, errlen, "the policy has no optimizer state to reset");
    memset(m1, 0, sizeof(float) * model_num_params(t->policy));
    memset(m2, 0, sizeof(float) * model_num_params(t->policy));
    *step = 0;
    return 0;
}

static int sample_len(const learner_sample *s) {
    return s->plen + s->rlen;
}

/* Pack samples idx[0..m) into the micro-batch buffers; returns response positions. */
static int pack(learner_stepper *t, const learner_sample *smp, const int *idx, int m,
                model_batch *b) {
    int n = 0, np = 0;
    t->cu[0] = 0;
    for (int k = 0; k < m; k++) {
        const learner_sample *s = &smp[idx[k]];
        const int pl = s->plen, rl = s->rlen;
        memcpy(t->tokens + n, s->prompt, sizeof(int) * (size_t)pl);
        memcpy(t->tokens + n + pl, s->resp, sizeof(int) * (size_t)rl);
        for (int j = 0; j < pl + rl; j++) t->targets[n + j] = -1;
        /* position pl-1+j predicts response token j */
        for (int j = 0; j < rl; j++) {
            int p = n + pl - 1 + j;
            t->targets[p] = s->resp[j];
            t->pos[np] = p;
            t->c_behav[np] = s->behav ? s->behav[j] : 0.0f;
            t->c_s[np] = s->s ? s->s[j] : 0.0f;
            t->c_q[np] = s->q ? s->q[j] : 0.0f;
            t->c_adv[np] = s->adv_ep + s->adv_step;
            t->c_ref[np] = 0.0f;
            np++;
        }
        n += pl + rl;
        t->cu[k + 1] = n;
    }
    b->n_tokens = n;
    b->n_seqs = m;
    b->tokens = t->tokens;
    b->cu_seqlens = t->cu;
    b->targets = t->targets;
    return np;
}

/* log pi_ref of the RL samples idx[0..m) into c_ref (packed order), batched. */
static int score_ref(learner_stepper *t, const learner_sample *smp, const int *idx, int m,
                     char *err, size_t errlen) {
    int nr = 0, off = 0;
    for (int k = 0; k < m; k++) {
        const learner_sample *s = &smp[idx[k]];
        if (!s->sft) {
            t->r_prompt[nr] = s->prompt;
            t->r_plen[nr] = s->plen;
            t->r_resp[nr] = s->resp;
            t->r_rlen[nr] = s->rlen;
            t->r_out[nr] = t->c_ref + off;
            nr++;
        }
        off += s->rlen;
    }
    if (nr == 0) return 0;
    return model_score(t->ref, nr, t->r_prompt, t->r_plen, t->r_resp, t->r_rlen, t->r_out, err,
                       errlen);
}

static int check_samples(const learner_sample *smp, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        if (smp[i].plen < 1 || smp[i].rlen < 1)
            return seed_errf(err, errlen,
                             "training sample %d has a %d-token prompt and a %d-token response "
                             "(both need at least one token)",
                             i, smp[i].plen, smp[i].rlen);
        if (!smp[i].sft && !smp[i].behav)
            return seed_errf(err, errlen,
                             "training sample %d is an RL sample without sampling log-probs", i);
    }
    return 0;
}

/* Leave the step without an update: no gradient reaches the weights. */
static int skip_nonfinite(learner_stepper *t, learner_step_stats *st, double loss, double gn,
                          char *err, size_t errlen) {
    model_zero_grad(t->policy);
    st->grad_norm = 0.0; /* the offending values go into the message, not the metrics */
    st->skipped_nonfinite = 1;
    st->applied = 0;
    t->nonfinite_run++;
    if (t->nonfinite_run >= LEARNER_MAX_NONFINITE_RUN)
        return seed_errf(err, errlen,
                         "%d optimizer steps in a row had a non-finite loss or gradient norm "
                         "(last: loss %g, gradient norm %g); stopping instead of training on "
                         "garbage",
                         t->nonfinite_run, loss, gn);
    return 0;
}

int learner_step_run(learner_stepper *t, const learner_sample *smp, int n, learner_step_stats *st,
                     char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    double t0 = seed_now();
    if (check_samples(smp, n, err, errlen)) return -1;
    if (n > t->keep_cap) {
        int *k = realloc(t->keep, sizeof(int) * (size_t)n);
        if (!k) return seed_errf(err, errlen, "out of memory for %d samples", n);
        t->keep = k;
        t->keep_cap = n;
    }
    /* A sample that does not fit one micro-batch is left out whole: cutting its prompt
     * would train a context the actor never saw. */
    int kept = 0;
    int64_t resp_total = 0;
    for (int i = 0; i < n; i++) {
        if (sample_len(&smp[i]) > t->cap) {
            st->dropped_overlong++;
            continue;
        }
        t->keep[kept++] = i;
        resp_total += smp[i].rlen;
    }
    st->samples = kept;
    if (resp_total == 0) {
        st->seconds = seed_now() - t0;
        return 0;
    }
    const double denom = (double)resp_total;
    const int want_ref = t->loss.kl_beta != 0.0f && t->ref != NULL;
    const int want_ent = t->loss.entropy_coef != 0.0f;
    learner_loss_out lo = {0};
    model_zero_grad(t->policy);

    for (int i = 0; i < kept;) {
        int j = i, used = 0;
        while (j < kept && used + sample_len(&smp[t->keep[j]]) <= t->cap)
            used += sample_len(&smp[t->keep[j++]]);
        model_batch b;
        const int np = pack(t, smp, t->keep + i, j - i, &b);
        if (model_train_forward(t->policy, &b, t->logp, want_ent ? t->ent : NULL, err, errlen))
            return -1;
        if (want_ref && score_ref(t, smp, t->keep + i, j - i, err, errlen)) return -1;
        for (int k = 0; k < np; k++) {
            t->c_logp[k] = t->logp[t->pos[k]];
            t->c_ent[k] = want_ent ? t->ent[t->pos[k]] : 0.0f;
        }
        memset(t->dlogp, 0, sizeof(float) * (size_t)b.n_tokens);
        memset(t->dent, 0, sizeof(float) * (size_t)b.n_tokens);
        /* SFT samples and RL samples share a micro-batch: split by sample kind. */
        int k0 = 0;
        for (int s = i; s < j; s++) {
            const learner_sample *sp = &smp[t->keep[s]];
            const int cnt = sp->rlen;
            if (sp->sft) {
                for (int k = k0; k < k0 + cnt; k++) {
                    t->c_dlogp[k] = (float)(-1.0 / denom);
                    t->c_dent[k] = 0.0f;
                    st->sft_nll -= t->c_logp[k] / denom;
                }
            } else {
                learner_loss_in in = {cnt,
                                      t->c_logp + k0,
                                      t->c_behav + k0,
                                      sp->q ? t->c_s + k0 : NULL,
                                      sp->q ? t->c_q + k0 : NULL,
                                      want_ref ? t->c_ref + k0 : NULL,
                                      want_ent ? t->c_ent + k0 : NULL,
                                      t->c_adv + k0};
                learner_loss_tokens(&t->loss, &in, denom, t->c_dlogp + k0, t->c_dent + k0, &lo);
            }
            k0 += cnt;
        }
        int finite = isfinite(lo.loss + st->sft_nll);
        for (int k = 0; finite && k < np; k++)
            finite = isfinite(t->c_dlogp[k]) && isfinite(t->c_dent[k]);
        if (!finite) {
            st->seconds = seed_now() - t0;
            return skip_nonfinite(t, st, lo.loss + st->sft_nll, NAN, err, errlen);
        }
        for (int k = 0; k < np; k++) {
            t->dlogp[t->pos[k]] = t->c_dlogp[k];
            t->dent[t->pos[k]] = want_ent ? t->c_dent[k] : 0.0f;
        }
        if (model_train_backward(t->policy, &b, t->dlogp, want_ent ? t->dent : NULL, err, errlen))
            return -1;
        st->tokens += b.n_tokens;
        st->micro_batches++;
        i = j;
    }
    /* The norm before the step, so a non-finite gradient never reaches the weights. */
    float gn = model_grad_norm(t->policy);
    st->grad_norm = gn;
    if (!isfinite(gn)) {
        st->seconds = seed_now() - t0;
        return skip_nonfinite(t, st, lo.loss + st->sft_nll, gn, err, errlen);
    }
    if (model_adamw_step(t->policy, &t->opt, &gn, err, errlen)) return -1;
    t->nonfinite_run = 0;
    st->applied = 1;
    st->loss = lo.loss + st->sft_nll;
    st->pg = lo.pg;
    st->opd = lo.opd;
    st->kl = lo.kl;
    st->entropy = lo.entropy;
    st->q_tokens = (int64_t)lo.q_tokens;
    st->mean_abs_qs = lo.q_tokens > 0 ? lo.abs_qs / lo.q_tokens : 0.0;
    st->opd_adv = lo.q_tokens > 0 ? lo.opd_adv / lo.q_tokens : 0.0;
    st->ppo_kl = lo.tokens > 0 ? lo.ppo_kl / lo.tokens : 0.0;
    st->clipfrac = lo.tokens > 0 ? lo.clipfrac / lo.tokens : 0.0;
    st->mean_adv = lo.tokens > 0 ? lo.adv / lo.tokens : 0.0;
    st->grad_norm = gn;
    st->response_tokens = resp_total;
    st->seconds = seed_now() - t0;
    return 0;
}
