/* loss.c — see loss.h. Follows verl's conventions where the paper is silent:
 * dual clip as in verl's compute_policy_loss, KL as the k3 ("low_var_kl") estimator
 * clamped to [-10, 10], group std as the unbiased sample std like verl's GRPO, GiGPO's
 * anchor groups as verl-agent's step_norm_reward. */
#include "learner/loss.h"

#include <math.h>
#include <string.h>

static float clampf(float x, float lo, float hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

void learner_loss_tokens(const learner_loss_cfg *cfg, const learner_loss_in *in, double denom,
                         float *dlogp, float *dentropy, learner_loss_out *out) {
    const float inv = denom > 0 ? (float)(1.0 / denom) : 0.0f;
    for (int t = 0; t < in->n; t++) {
        const float logp = in->logp[t];
        float delta = 0.0f; /* q - s, the hindsight shift */
        if (in->q && learner_q_counts(in->q_mask, in->q_lo, in->q_hi, t)) {
            const float scored = in->q[t] - in->s[t];
            delta = scored - in->q_base;
            const float shift = cfg->w_opd * clampf(delta, -cfg->c_opd, cfg->c_opd);
            out->abs_qs += fabsf(scored);
            out->qs += scored;
            out->opd_adv += fabsf(shift);
            out->q_tokens += 1.0;
        }
        const float a = in->adv_ep[t] + cfg->w_opd * clampf(delta, -cfg->c_opd, cfg->c_opd);
        out->adv += a;
        out->tokens += 1.0;
        out->ppo_kl += in->behav[t] - logp;

        /* PPO-clip with dual clip on the ratio to the sampling policy: the gradient
         * flows through ratio only where the selected branch is the unclipped one. */
        const float log_ratio = clampf(logp - in->behav[t], -20.0f, 20.0f);
        const float ratio = expf(log_ratio);
        const float lo = 1.0f - cfg->clip_eps, hi = 1.0f + cfg->clip_eps;
        const float l1 = -a * ratio;
        const float l2 = -a * clampf(ratio, lo, hi);
        float pg = l1, dpg = -a * ratio; /* d l1 / d logp */
        if (l2 > l1) {
            pg = l2;
            dpg = (ratio < lo || ratio > hi) ? 0.0f : -a * ratio;
            out->clipfrac += (ratio < lo || ratio > hi) ? 1.0 : 0.0;
        }
        if (a < 0.0f && cfg->dual_clip > 1.0f) {
            const float l3 = -a * cfg->dual_clip;
            if (l3 < pg) {
                pg = l3;
                dpg = 0.0f;
            }
        }
        float loss = pg, g = dpg;
        out->pg += pg * inv;

        if (in->ref && cfg->kl_beta != 0.0f) {
            /* k3: exp(ref - logp) - (ref - logp) - 1; d/dlogp = 1 - exp(ref - logp). */
            const float d = clampf(in->ref[t] - logp, -20.0f, 20.0f);
            const float kl_raw = expf(d) - d - 1.0f;
            const float kl = clampf(kl_raw, -10.0f, 10.0f);
            const float dkl = (kl_raw > 10.0f) ? 0.0f : 1.0f - expf(d);
            loss += cfg->kl_beta * kl;
            g += cfg->kl_beta * dkl;
            out->kl += kl * inv;
        }
        if (cfg->opd_mode != JOB_OPD_NONE && cfg->opd_loss_coef != 0.0f && in->q) {
            float term, dterm;
            if (cfg->opd_mode == JOB_OPD_DELTA) {
                term = -delta * logp;
                dterm = -delta;
            } else { /* importance: -sg(q - s) * exp(logp - behav) */
                term = -delta * ratio;
                dterm = -delta * ratio;
            }
            loss += cfg->opd_loss_coef * term;
            g += cfg->opd_loss_coef * dterm;
            out->opd += term * inv;
        }
        if (dentropy) dentropy[t] = 0.0f;
        if (in->entropy && cfg->entropy_coef != 0.0f) {
            loss -= cfg->entropy_coef * in->entropy[t];
            if (dentropy) dentropy[t] = -cfg->entropy_coef * inv;
            out->entropy += in->entropy[t] * inv;
        }
        out->loss += loss * inv;
        dlogp[t] = g * inv;
    }
}

void learner_group_advantages(const float *returns, int n, job_adv_norm norm, float *adv) {
    if (n <= 0) return;
    double mean = 0.0;
    for (int i = 0; i < n; i++) mean += returns[i];
    mean /= n;
    double var = 0.0;
    for (int i = 0; i < n; i++) var += (returns[i] - mean) * (returns[i] - mean);
    const double std = n > 1 ? sqrt(var / (n - 1)) : 0.0;
    for (int i = 0; i < n; i++) {
        double a = returns[i] - mean;
        if (norm == JOB_ADV_STD) a /= (std + 1e-6);
        adv[i] = (float)a;
    }
}

void learner_anchor_advantages(const float *returns, const int *anchor, int n, job_adv_norm norm,
                               float *adv, double *scratch) {
    if (n <= 0) return;
    double *cnt = scratch, *mean = scratch + n, *var = scratch + 2 * (size_t)n;
    memset(scratch, 0, sizeof(double) * 3 * (size_t)n);
    for (int i = 0; i < n; i++) {
        cnt[anchor[i]] += 1.0;
        mean[anchor[i]] += returns[i];
    }
    for (int k = 0; k < n; k++)
        if (cnt[k] > 0) mean[k] /= cnt[k];
    for (int i = 0; i < n; i++) {
        const double d = returns[i] - mean[anchor[i]];
        var[anchor[i]] += d * d;
    }
    for (int i = 0; i < n; i++) {
        const int k = anchor[i];
        double a = returns[i] - mean[k];
        if (cnt[k] < 2)
            a = 0.0; /* a state no other episode reached: no comparison */
        else if (norm == JOB_ADV_STD)
            a /= sqrt(var[k] / (cnt[k] - 1.0)) + 1e-6;
        adv[i] = (float)a;
    }
}
