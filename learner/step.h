/* step.h — one optimizer step of the learner over a list of training samples.
 *
 * A sample is one step of one episode: the prompt the actor used (WITHOUT any skill:
 * the policy learns to act without one), the response tokens, and per response token
 * the actor's sampling log-prob (behav, the PPO ratio's old log-prob) and the analyzer's
 * s and q when a skill was scored, plus the outcome advantage. SFT samples (stages 0
 * and 1) set sft = 1 and use only prompt/response.
 *
 * learner_step_run packs samples into micro-batches of at most micro_batch_tokens,
 * runs the policy's forward, scores the RL samples under the reference policy for the
 * KL term, forms the per-token loss (learner/loss.h), backward, then one AdamW step.
 * The token mean is over every response token of the whole step.
 *
 * Shared prefixes (share_prefix, on a backend that takes model_batch.prefix): the
 * samples are sorted by prompt and form a prefix tree (a node wherever prompts branch and
 * sharing saves at least 16 tokens; every prompt keeps its last token as its own). A
 * micro-batch carries each node once, before the first sample under it, and each sample
 * continues its chain. Agent prompts repeat an instruction, a group's episodes start
 * from one prompt and steps repeat the history, so a step runs about a third of the
 * tokens (bench/learner); the result equals unshared packing up to fp32 summation
 * order. The reference then runs the same packed
 * micro-batch (model_train_forward, so it needs max_train_tokens); without sharing it
 * scores with model_score, and SFT samples never touch it.
 *
 * A sample longer than micro_batch_tokens (prompt + response) is dropped and counted,
 * never cut: a cut prompt is a context the actor never saw. A step whose loss or
 * gradient norm is not finite is skipped (no AdamW update, counted); the third such step
 * in a row is an error. Buffers are planned once in learner_step_create.
 *
 * Naming: a learner_stepper holds what steps run on (planned buffers, AdamW state); the
 * *trainer* is the thread that decides when to step and on what (learner_trainer_thread.c),
 * so "trainer" names the thread only. */
#ifndef SEED_LEARNER_STEP_H
#define SEED_LEARNER_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "learner/loss.h"
#include "model/model.h"

/* Non-finite steps in a row that stop training. */
#define LEARNER_MAX_NONFINITE_RUN 3

typedef struct learner_sample {
    const int32_t *prompt;
    int plen;
    const int32_t *resp;
    int rlen;
    const float *s; /* rlen values (analyzer, no skill), or NULL (no q, or SFT) */
    const float *q; /* rlen values (analyzer, with skill), or NULL */
    float adv_ep;   /* the episode's group advantage */
    int sft;
    const float *behav; /* rlen sampling log-probs; required unless sft */
    float adv_step;     /* gigpo_coef * GiGPO step advantage (0: off) */
    int q_lo, q_hi;     /* q - s counts on response tokens [q_lo, q_hi); q_hi 0: all */
    /* rlen flags: q - s counts where set, instead of [q_lo, q_hi) (algorithm.opd_tokens
     * decision); NULL: the span */
    const unsigned char *q_mask;
    float q_base; /* subtracted from q - s (algorithm.opd_baseline group); 0: none */
    /* the count its token losses are divided by: episodes in the step x response tokens
     * of its episode (algorithm.loss_agg episode-mean); 0: the step's response tokens */
    double agg;
} learner_sample;

typedef struct learner_step_stats {
    double loss, pg, opd, kl, entropy, sft_nll;
    double prompt_nll;  /* mean next-token NLL over SFT prompt tokens (prompt weight > 0) */
    double mean_abs_qs; /* mean |q - s| over the tokens that had a q, as scored */
    double mean_qs;     /* mean q - s over them: below 0, the skill lowers what was sampled */
    double opd_adv;     /* mean |w_opd * clip(q - s)| over the tokens that had a q */
    double ppo_kl;      /* mean (behav - logp) over the RL tokens */
    double clipfrac, mean_adv, grad_norm;
    int64_t tokens;        /* prompt + response tokens of the samples trained */
    int64_t packed_tokens; /* tokens the model ran: tokens less the shared prefixes */
    int64_t response_tokens, samples, micro_batches;
    int64_t q_tokens;
    int64_t dropped_overlong; /* samples longer than micro_batch_tokens, left out */
    int skipped_nonfinite;    /* 1: the loss or gradient norm was not finite, no update */
    int applied;              /* 1: AdamW stepped */
    double seconds;
} learner_step_stats;

typedef struct learner_stepper learner_stepper;

/* policy is trained in place; ref (may be NULL) gives log pi_ref for the KL term. With
 * share_prefix, prefixes are shared when both models' backends take them, and ref
 * must then have max_train_tokens >= micro_batch_tokens; otherwise inference-only is
 * enough. */
int learner_step_create(learner_stepper **out, model *policy, model *ref,
                        const learner_loss_cfg *loss, const model_adamw *opt,
                        int micro_batch_tokens, int share_prefix, char *err, size_t errlen);
/* 1 when this stepper shares prompt prefixes (share_prefix and both backends take them). */
int learner_step_shares_prefix(const learner_stepper *t);
void learner_step_free(learner_stepper *t);
void learner_step_set_lr(learner_stepper *t, float lr);
/* Weight w of the next-token loss on SFT samples' prompts (optim.sft_prompt_weight): the
 * step's loss becomes mean response NLL + w * mean prompt NLL, each over its own tokens.
 * 0 (the default) trains responses only. */
void learner_step_set_prompt_weight(learner_stepper *t, float w);
/* Zero AdamW's moments and step count (a fresh RL optimizer entering stage 2). */
int learner_step_reset_moments(learner_stepper *t, char *err, size_t errlen);

/* One optimizer step over n samples. Returns 0 with stats->applied = 0 when every
 * sample was dropped or the step was skipped as non-finite; an error when the input is
 * malformed, the model fails, or LEARNER_MAX_NONFINITE_RUN steps in a row were
 * non-finite. */
int learner_step_run(learner_stepper *t, const learner_sample *samples, int n,
                     learner_step_stats *stats, char *err, size_t errlen);

#endif
