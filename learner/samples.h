/* samples.h — from scored groups to the learner's training samples (one per step with a
 * response): outcome advantages, GiGPO's step advantages and the per-token arrays the
 * loss reads.
 *
 * Contract:
 *  - Episodes with a non-empty Episode.error are left out of their group's advantage
 *    statistics and of training, counted by reason (learner_reasons).
 *  - A sample's behaviour log-probs (the PPO ratio's old log-prob) are the actor's own
 *    sampling log-probs (Step.sample_logprobs), never the analyzer's `s`; s and q are
 *    passed on only for q - s. A group scored with a weights version other than the one
 *    it was sampled with still has a coherent q - s (both from one frozen analyzer
 *    version): it is used and counted as scored_off_version.
 *  - adv_ep = the episode's group advantage (adv_norm); adv_step = gigpo_coef times
 *    GiGPO's step advantage: the step's discounted return (gigpo_gamma) normalised
 *    within its anchor group (the group's steps, over all its episodes, whose
 *    Step.observation text is identical).
 *  - Samples point into the groups, which must outlive them. Any group size works (the
 *    builder's scratch grows as needed). */
#ifndef SEED_LEARNER_SAMPLES_H
#define SEED_LEARNER_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "learner/loss.h"
#include "learner/stats.h"
#include "learner/step.h"
#include "model/tokenizer.h"
#include "proto/seed.pb-c.h"

typedef struct learner_samples_cfg {
    job_adv_norm adv_norm;
    int use_q;         /* hand q (and s) to the loss: w_opd != 0 or an explicit OPD term */
    float gigpo_coef;  /* weight of the step advantage; 0: off */
    float gigpo_gamma; /* discount of the step returns */
    /* algorithm.opd_tokens action: the tokenizer that finds each reply's action text (q - s
     * counts there only; a reply without one gets no q); NULL: every reply token */
    const tok *tk;
    /* algorithm.opd_tokens decision (with tk): also the reply's tokens before its action
     * that spell the action as running text does (learner_decision_mask) */
    int decision;
    int loss_agg;      /* job_loss_agg: episode-mean sets each sample's agg */
    int opd_baseline;  /* job_opd_baseline: group sets each sample's q_base */
    int opd_lost_only; /* algorithm.opd_episodes lost: a won episode's samples get no q */
} learner_samples_cfg;

typedef struct learner_samples_stats {
    int64_t groups, samples;
    int64_t scored_off_version; /* groups whose scored_version != policy_version */
    int64_t episodes_error;     /* episodes left out for an error */
    /* groups whose episodes all won / all lost: no success contrast for GRPO to learn
     * from (their advantages come from the return's shaping alone) */
    int64_t groups_all_won, groups_all_lost;
    learner_reasons errors; /* ... by reason */
} learner_samples_stats;

typedef struct learner_samples {
    learner_sample *v; /* the samples of the last build */
    int n, cap;
    /* scratch, grown on demand */
    float *ret, *adv;
    int ep_cap;
    float *sret, *sadv;
    int *anchor;
    struct learner_anchor_item *items;
    double *dscratch;
    int st_cap;
    unsigned char *mask; /* the samples' q_mask flags (opd_tokens decision) */
    size_t mask_cap;
    tok_ws *ws; /* encodes the action text for the decision masks */
} learner_samples;

void learner_samples_init(learner_samples *b);

/* The response tokens [*lo, *hi) whose bytes overlap the reply's action text: the bytes
 * between the first "<action>" and the first "</action>" after it (the span the envs'
 * parsers read the action from). *lo == *hi when the reply has no such span. */
void learner_action_span(const tok *tk, const int32_t *ids, int n, int *lo, int *hi);
/* algorithm.opd_tokens decision: where the reply makes its choice. mask[t] (n flags) is
 * set on the action's tokens [lo, hi) (learner_action_span) and on the tokens before lo
 * (the reasoning) that have a letter or digit and are among the action's own tokens or
 * those of " " + the action text (how running text spells it: the reasoning's "I look at
 * coffeetable 2" before "go to coffeetable 2", "I push it right" before "right"). A think
 * text that commits to the action leaves the skill nothing to change on the action's
 * tokens; this is where q - s moves. ws: the caller's workspace. Returns 0, or -1 with a
 * sentence in err (out of memory while re-encoding the action). Without an action
 * (lo == hi) no flag is set. */
int learner_decision_mask(const tok *tk, tok_ws *ws, const int32_t *ids, int n, int lo, int hi,
                          unsigned char *mask, char *err, size_t errlen);
void learner_samples_free(learner_samples *b);
/* Build the samples of ng scored groups into b->v (replacing the previous build); adds
 * into *st. Fails only when out of memory. */
int learner_samples_build(learner_samples *b, const learner_samples_cfg *cfg,
                          Seed__ScoredGroup *const *groups, int ng, learner_samples_stats *st,
                          char *err, size_t errlen);

#endif
