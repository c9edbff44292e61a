/* evaluate.h — the learner's periodic evaluation (eval.* keys): the current policy on a
 * fixed, seeded task set of every env of the job (eval.split, eval.episodes per env,
 * eval.seed, eval.temperature; no skills in the prompt), played through the actors' own
 * rollout engine (roles/rollout.h) on an inference copy of the policy, so training is not
 * disturbed and the numbers mean what `seedctl eval` means.
 *
 * Contract: learner_eval_run copies the policy's parameters into the evaluator's model,
 * plays every env's task set and fills a report: per env and overall success and mean
 * return, per family, and one JSON object (the `seedctl eval --json` form per env plus
 * the totals) for the status document, metrics.jsonl and RUN_DIR/eval.json.
 *
 * An env that trains on a fixed pool (envs.N.tasks > 0) is also played on that pool (its
 * split, job.seed, the pool's size: the tasks the actors draw from), with the same
 * temperature, so a run shows its success on the tasks it trains on beside the held-out
 * set: the "pool" part of the report. */
#ifndef SEED_LEARNER_EVALUATE_H
#define SEED_LEARNER_EVALUATE_H

#include <stddef.h>
#include <stdint.h>

#include "roles/rollout.h"
#include "common/job.h"
#include "model/model.h"
#include "model/tokenizer.h"

typedef struct learner_eval learner_eval;

typedef struct learner_eval_report {
    int64_t step;
    double success, ret, seconds; /* over every env's tasks */
    int episodes;
    int n_envs;
    rollout_eval_result env[JOB_MAX_ENVS];
    /* the training pools: pool[i] is env i's (played when envs[i].tasks > 0); pool_episodes
     * 0: no env has one */
    double pool_success;
    int pool_episodes;
    rollout_eval_result pool[JOB_MAX_ENVS];
} learner_eval_report;

int learner_eval_create(learner_eval **out, const job_config *job, model *policy, const tok *tk,
                        char *err, size_t errlen);
void learner_eval_free(learner_eval *ev);

/* Evaluate policy's current parameters; the report is filled on success. */
int learner_eval_run(learner_eval *ev, model *policy, int64_t step, learner_eval_report *rep,
                     char *err, size_t errlen);

/* The report as a JSON object (malloc'd text, NULL when out of memory): step, success,
 * return, episodes, seconds, split, envs[{env, success, return, episodes, families[...]}],
 * and with a training pool pool{success, episodes, envs[...]}. */
char *learner_eval_json(const learner_eval_report *rep, const job_config *job);

#endif
