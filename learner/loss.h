/* loss.h — the learner's per-token objective: GRPO episode advantages, GiGPO's step
 * advantages, the SEED on-policy distillation term, PPO-clip with dual clip, k3 KL to a
 * reference policy, entropy bonus and the optional explicit OPD loss (ARCHITECTURE
 * section 1).
 *
 * Contract: pure functions over arrays. learner_loss_tokens computes, for n response
 * tokens, the loss terms and dL/dlogp (and dL/dentropy), already divided by the
 * batch's token count so summing over micro-batches gives the token mean. Nothing
 * here touches the model: the caller runs model_train_forward, calls this, then
 * model_train_backward with the gradients.
 *
 * Two old log-probs, never mixed up: `behav` is the log-prob of the policy that
 * SAMPLED the token (the actor's own sampling log-prob): the PPO ratio and the
 * importance-mode OPD term use exp(logp - behav). `s` and `q` are the analyzer's
 * paired scores (without / with the skill, one frozen weights version): they are used
 * only as the hindsight shift q - s. */
#ifndef SEED_LEARNER_LOSS_H
#define SEED_LEARNER_LOSS_H

#include <stddef.h>

/* The advantage normalisation (job_adv_norm) and the explicit OPD term (job_opd_loss) are
 * the job's own enums, defined once in common/job.h. */
#include "common/job.h"

typedef struct learner_loss_cfg {
    float w_opd;        /* weight of clip(q - s) in the advantage (0: plain GRPO) */
    float c_opd;        /* clip bound of q - s */
    float clip_eps;     /* PPO ratio clip */
    float dual_clip;    /* dual-clip constant for A < 0 (<= 1: off) */
    float kl_beta;      /* k3 KL weight to the reference policy (0: off) */
    float entropy_coef; /* entropy bonus weight (0: off) */
    job_opd_loss opd_mode;
    float opd_loss_coef;
} learner_loss_cfg;

/* Per-token inputs for n tokens. q and ref may be NULL (no skill / no KL); s may be
 * NULL when q is; entropy may be NULL when entropy_coef is 0. adv_ep is the outcome
 * advantage of each token (episode advantage, plus GiGPO's weighted step advantage). */
typedef struct learner_loss_in {
    int n;
    const float *logp;    /* log pi_theta(y_t), current policy */
    const float *behav;   /* log pi_behaviour(y_t): the actor's sampling log-prob */
    const float *s;       /* log pi_analyzer(y_t | prompt) (analyzer's score, no skill) */
    const float *q;       /* log pi_analyzer(y_t | prompt with skill) or NULL */
    const float *ref;     /* log pi_ref(y_t) or NULL */
    const float *entropy; /* entropy of pi_theta at t or NULL */
    const float *adv_ep;  /* outcome advantage per token */
    /* q - s counts on tokens [q_lo, q_hi) only (algorithm.opd_tokens action: the action
     * text); q_hi 0: on every token */
    int q_lo, q_hi;
    const unsigned char *q_mask; /* n flags that replace the span when not NULL */
    /* the shift is q - s - q_base: algorithm.opd_baseline group's mean over the group's
     * distilled tokens, or 0 */
    float q_base;
} learner_loss_in;

/* 1 when q - s counts on token t: mask[t] when there is a mask, else t in [lo, hi), every
 * token when hi is 0. */
static inline int learner_q_counts(const unsigned char *mask, int lo, int hi, int t) {
    return mask ? mask[t] != 0 : hi <= 0 || (t >= lo && t < hi);
}

/* Sums of the loss terms over the tokens given (each already divided by denom). */
typedef struct learner_loss_out {
    double loss, pg, opd, kl, entropy;
    double tokens;   /* tokens seen (count, not divided) */
    double q_tokens; /* tokens that had a q (count, not divided) */
    double abs_qs;   /* sum |q - s| over the q tokens, as scored (not divided) */
    double qs;       /* sum q - s over the q tokens, as scored (not divided) */
    double opd_adv;  /* sum |w_opd * clip(q - s, +-c_opd)| over the q tokens (not divided) */
    double ppo_kl;   /* sum (behav - logp), verl's ppo_kl (not divided) */
    double clipfrac; /* tokens whose ratio was clipped (count, not divided) */
    double adv;      /* sum of the final per-token advantage (not divided) */
} learner_loss_out;

/* Accumulate the loss over in->n tokens, dividing by denom (the batch's token count);
 * writes dlogp[t] (and dentropy[t] if non-NULL) and adds into *out. */
void learner_loss_tokens(const learner_loss_cfg *cfg, const learner_loss_in *in, double denom,
                         float *dlogp, float *dentropy, learner_loss_out *out);

/* Group-normalized advantages: adv[i] = (R_i - mean R) / (std R + 1e-6) with the
 * unbiased (n - 1) std as torch.std / verl (or mean-only), over the n returns of one
 * group; a group of one gets 0. */
void learner_group_advantages(const float *returns, int n, job_adv_norm norm, float *adv);

/* GiGPO's step advantages (verl-agent's step_norm_reward): the n step returns are
 * normalised like learner_group_advantages within each anchor group (the steps with
 * the same anchor[i], ids in [0, n)); a singleton anchor group gets 0. scratch holds
 * 3n doubles. */
void learner_anchor_advantages(const float *returns, const int *anchor, int n, job_adv_norm norm,
                               float *adv, double *scratch);

#endif
