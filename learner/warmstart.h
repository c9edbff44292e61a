/* warmstart.h — stages 0 and 1 of SEED inside the learner (ARCHITECTURE section 1).
 *
 * Stage 0 (warm start, for a model trained from scratch): behaviour cloning on the
 * built-in envs' expert solvers, rendered exactly as actors render prompts; a share of
 * the prompts carries the oracle's hindsight skill in its slots (the step slot only with
 * probability algorithm.stage0_step_skill_keep), so the model learns
 * the answer format and learns to use a skill in its context. With
 * algorithm.stage0_expert_noise the episodes stray from the expert's path and the replies
 * stay the expert's, so the model also sees how to recover (warmstart_play.h).
 * Stage 1 (hindsight-skill SFT): episodes of the policy being trained (algorithm.
 * stage1_episodes policy: eval.batch tasks at once, sampled as the actors sample, on an
 * inference copy of the current weights) or of the env's expert with noise 0.3 (expert),
 * the rule-based oracle writes each episode's skill (with analyzer.skill_source http the
 * endpoint writes it, and the oracle where the request fails, counted in
 * LEARNER_C_STAGE1_SKILL_FALLBACKS), and the model is trained on
 * (analyzer prompt with the rendered trajectory -> skill text), loss on the answer only.
 *
 * Both run algorithm.stage0_steps / stage1_steps optimizer steps (resuming from
 * l->sft_steps) and stop early when the learner is stopping; the caller publishes the
 * result as the first weights version. */
#ifndef SEED_LEARNER_WARMSTART_H
#define SEED_LEARNER_WARMSTART_H

#include <stddef.h>
#include <stdint.h>

#include "learner/learner.h"

int learner_warmstart(learner *l, char *err, size_t errlen);

#endif
