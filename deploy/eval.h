/* eval.h — `seedctl eval`: a checkpoint on a fixed, seeded task set of one env and split,
 * without skills in the prompt, batched; success and mean return overall and per task
 * family, as a table or (--json) as one JSON object.
 *
 *   seedctl eval [MODEL_DIR] [--env NAME] [--split train|seen|unseen] [--episodes N]
 *                [--seed S] [--temperature T] [--batch B] [--expert] [--skills] [--json]
 *                [--job JOB.yaml] [key=value ...]
 *
 * MODEL_DIR holds config.json, model.safetensors and tokenizer.json (a checkpoint's
 * step-N directory, or a model folder); --expert plays the env's expert instead (no
 * model: it measures the evaluation path itself); --skills puts the skill library's
 * skills (algorithm.skill_library, else the shipped deploy/skills) into every acting
 * prompt — not an evaluation of the policy but the diagnostic of whether it follows a
 * skill (compare with the same run without --skills). The env's options come from the job
 * (the embedded default job, --job, key=value overrides); an env the job does not list
 * is evaluated with its defaults. The task set is named by (env, split, episodes, seed):
 * the same tasks every time, on every machine (rollout_eval). Those arguments are read by
 * roles/taskset.h, as bench/experiment/opd_signal reads them. */
#ifndef SEED_DEPLOY_EVAL_H
#define SEED_DEPLOY_EVAL_H

#include "roles/rollout.h"

/* argv after "eval"; returns the process exit code (0, 1 error, 2 usage). */
int seedctl_eval(int argc, char **argv);

/* Print the learner's last evaluation of a run (RUN_DIR/eval.json) as a table, and the
 * first and last eval success of RUN_DIR/metrics.jsonl; -1 when there is no eval.json. */
int seedctl_eval_print_run(const char *run_dir);

#endif
