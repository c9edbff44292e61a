/* evaluate.c — see evaluate.h. */
#include "learner/evaluate.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "roles/daemon.h"
#include "common/util.h"

struct learner_eval {
    const job_config *job;
    const tok *tk;
    model *m; /* inference copy of the policy, eval.batch KV slots */
};

int learner_eval_create(learner_eval **out, const job_config *job, model *policy, const tok *tk,
                        char *err, size_t errlen) {
    learner_eval *ev = calloc(1, sizeof *ev);
    if (!ev) return seed_errf(err, errlen, "out of memory for the evaluator");
    ev->job = job;
    ev->tk = tk;
    model_limits lim;
    int max_prompt;
    rollout_plan(job, model_get_config(policy), job->eval.batch, &lim, &max_prompt);
    if (model_create(&ev->m, model_get_config(policy), &lim, daemon_backend(job), err, errlen)) {
        free(ev);
        return -1;
    }
    *out = ev;
    return 0;
}

void learner_eval_free(learner_eval *ev) {
    if (!ev) return;
    model_free(ev->m);
    free(ev);
}

int learner_eval_run(learner_eval *ev, model *policy, int64_t step, learner_eval_report *rep,
                     char *err, size_t errlen) {
    const job_config *job = ev->job;
    memset(rep, 0, sizeof *rep);
    rep->step = step;
    double t0 = seed_now();
    memcpy(model_params(ev->m), model_params(policy), model_num_params(policy) * sizeof(float));
    if (model_params_changed(ev->m, err, errlen)) return -1;
    rollout_eval_cfg ec = {.job = job,
                           .m = ev->m,
                           .tk = ev->tk,
                           .n = job->eval.episodes,
                           .seed = job->eval.seed,
                           .temperature = (float)job->eval.temperature,
                           .batch = job->eval.batch,
                           .expert = 0};
    if (env_split_parse(job->eval.split, &ec.split))
        return seed_errf(err, errlen, "eval.split: expected train, seen or unseen, got '%s'",
                         job->eval.split);
    int won = 0, played = 0;
    double ret = 0;
    for (int i = 0; i < job->n_envs; i++) {
        ec.env_idx = i;
        rollout_eval_result *r = &rep->env[rep->n_envs];
        if (rollout_eval(&ec, r, err, errlen)) return -1;
        rep->n_envs++;
        rep->episodes += r->episodes;
        won += r->won;
        ret += r->ret;
        played += r->episodes - r->errors;
    }
    rep->success = rep->episodes ? (double)won / rep->episodes : 0.0;
    rep->ret = played ? ret / played : 0.0;
    /* the training pools: the k-th task of (env split, job.seed) is the actors' pool task k */
    int pool_won = 0;
    for (int i = 0; i < job->n_envs; i++) {
        if (job->envs[i].tasks <= 0) continue;
        ec.env_idx = i;
        ec.n = job->envs[i].tasks;
        ec.seed = job->job.seed;
        if (env_split_parse(job->envs[i].split, &ec.split))
            return seed_errf(err, errlen, "envs.%d.split: expected train, seen or unseen, got '%s'",
                             i, job->envs[i].split);
        rollout_eval_result *r = &rep->pool[i];
        if (rollout_eval(&ec, r, err, errlen)) return -1;
        rep->pool_episodes += r->episodes;
        pool_won += r->won;
    }
    rep->pool_success = rep->pool_episodes ? (double)pool_won / rep->pool_episodes : 0.0;
    rep->seconds = seed_now() - t0;
    return 0;
}

char *learner_eval_json(const learner_eval_report *rep, const job_config *job) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "step", (double)rep->step);
    cJSON_AddNumberToObject(j, "success", rep->success);
    cJSON_AddNumberToObject(j, "return", rep->ret);
    cJSON_AddNumberToObject(j, "episodes", rep->episodes);
    cJSON_AddNumberToObject(j, "seconds", rep->seconds);
    cJSON_AddStringToObject(j, "split", job->eval.split);
    cJSON *envs = cJSON_AddArrayToObject(j, "envs");
    for (int i = 0; envs && i < rep->n_envs; i++) {
        cJSON *x = rollout_eval_cjson(&rep->env[i], job->envs[i].name, job->eval.split,
                                      job->eval.seed, job->eval.temperature);
        if (x) cJSON_AddItemToArray(envs, x);
    }
    if (rep->pool_episodes > 0) {
        cJSON *pool = cJSON_AddObjectToObject(j, "pool");
        cJSON_AddNumberToObject(pool, "success", rep->pool_success);
        cJSON_AddNumberToObject(pool, "episodes", rep->pool_episodes);
        cJSON *penvs = cJSON_AddArrayToObject(pool, "envs");
        for (int i = 0; penvs && i < job->n_envs; i++) {
            if (job->envs[i].tasks <= 0) continue;
            cJSON *x = rollout_eval_cjson(&rep->pool[i], job->envs[i].name, job->envs[i].split,
                                          job->job.seed, job->eval.temperature);
            if (x) cJSON_AddItemToArray(penvs, x);
        }
    }
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return out;
}
