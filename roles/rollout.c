/* rollout.c — see rollout.h.
 *
 * Prompt reuse: each KV slot remembers the tokens it holds; a new prompt keeps the
 * longest common prefix with its own slot or with any slot of its group (the G episodes
 * of a task share their first prompt, and every step shares the system + task prefix)
 * and prefills only the rest. Reuse is limited to caches built with the current weights. */
#define _GNU_SOURCE
#include "roles/rollout.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

struct rollout {
    rollout_cfg cfg;
    render_ctx rr;
    int n_slots, vocab, end_id, eos_id;
    rollout_group *groups;
    rollout_ep *eps; /* n_slots, episode i of group g at g*G+i */
    int32_t **cache; /* tokens each KV slot holds */
    int *cache_n;
    uint64_t *cache_ver;
    uint64_t version;
    float *logits, *scratch;
    int *chunk_slot, *chunk_len;
    const int **chunk_tok;
    seed_sbuf text;
    char action[1024];
    int lib_miss_warned;
    rollout_counters c;
};

static void ep_clear(rollout_ep *ep) {
    for (int i = 0; i < ep->n_steps; i++) {
        rollout_step *s = &ep->steps[i];
        free(s->prompt);
        free(s->resp);
        free(s->lp);
        free(s->action);
        free(s->obs);
    }
    ep->n_steps = 0;
    ep->ret = 0;
    ep->won = 0;
    ep->error[0] = 0;
    ep->family[0] = 0;
    ep->rlen = 0;
    ep->pending = 0;
    ep->skills = NULL;
}

static void ep_fail(rollout *r, rollout_ep *ep, const char *msg) {
    snprintf(ep->error, sizeof ep->error, "%s", msg);
    ep->phase = ROLLOUT_DONE;
    r->c.env_errors++;
    seed_log(SEED_LOG_WARN, "episode ended by an error: %s", msg);
}

int rollout_create(rollout **out, const rollout_cfg *cfg, char *err, size_t errlen) {
    if (cfg->n_groups < 1 || cfg->G < 1 || (!cfg->expert && (!cfg->m || !cfg->tk)))
        return seed_errf(err, errlen, "rollout: needs groups, a group size and a model");
    rollout *r = calloc(1, sizeof *r);
    if (!r) return seed_errf(err, errlen, "out of memory for the rollout engine");
    r->cfg = *cfg;
    r->n_slots = cfg->n_groups * cfg->G;
    int max_seq = cfg->max_prompt + cfg->max_new_tokens;
    if (!cfg->expert) {
        r->vocab = model_get_config(cfg->m)->vocab_size;
        r->end_id = render_end_token(cfg->tk);
        int eos = model_get_config(cfg->m)->eos_token_id;
        r->eos_id = eos >= 0 ? eos : r->end_id;
        if (render_init(&r->rr, cfg->tk, cfg->job->algorithm.history, err, errlen)) {
            free(r);
            return -1;
        }
    }
    r->groups = calloc((size_t)cfg->n_groups, sizeof *r->groups);
    r->eps = calloc((size_t)r->n_slots, sizeof *r->eps);
    r->cache = calloc((size_t)r->n_slots, sizeof *r->cache);
    r->cache_n = calloc((size_t)r->n_slots, sizeof *r->cache_n);
    r->cache_ver = calloc((size_t)r->n_slots, sizeof *r->cache_ver);
    r->logits = malloc(sizeof(float) * (size_t)r->n_slots * (size_t)(r->vocab ? r->vocab : 1));
    r->scratch = malloc(sizeof(float) * (size_t)(r->vocab ? r->vocab : 1) * 2);
    r->chunk_slot = calloc((size_t)r->n_slots, sizeof(int));
    r->chunk_len = calloc((size_t)r->n_slots, sizeof(int));
    r->chunk_tok = calloc((size_t)r->n_slots, sizeof(int *));
    int ok = r->groups && r->eps && r->cache && r->cache_n && r->cache_ver && r->logits &&
             r->scratch && r->chunk_slot && r->chunk_len && r->chunk_tok;
    for (int s = 0; ok && s < r->n_slots; s++) {
        r->cache[s] = malloc(sizeof(int32_t) * (size_t)max_seq);
        r->eps[s].resp = malloc(sizeof(int32_t) * (size_t)cfg->max_new_tokens + 1);
        r->eps[s].lp = malloc(sizeof(float) * (size_t)cfg->max_new_tokens + 1);
        ok = r->cache[s] && r->eps[s].resp && r->eps[s].lp;
    }
    if (!ok) {
        rollout_free(r);
        return seed_errf(err, errlen, "out of memory for %d episode slots", r->n_slots);
    }
    *out = r;
    return 0;
}

void rollout_free(rollout *r) {
    if (!r) return;
    for (int s = 0; s < r->n_slots && r->eps; s++) {
        rollout_ep *ep = &r->eps[s];
        ep_clear(ep);
        free(ep->steps);
        free(ep->hist);
        tok_ids_free(&ep->prompt);
        free(ep->resp);
        free(ep->lp);
        env_destroy(ep->e);
        if (r->cache) free(r->cache[s]);
    }
    free(r->eps);
    free(r->groups);
    free(r->cache);
    free(r->cache_n);
    free(r->cache_ver);
    free(r->logits);
    free(r->scratch);
    free(r->chunk_slot);
    free(r->chunk_len);
    free(r->chunk_tok);
    seed_sbuf_free(&r->text);
    if (!r->cfg.expert) render_free(&r->rr);
    free(r);
}

void rollout_set_version(rollout *r, uint64_t version) {
    r->version = version;
}

int rollout_start_group(rollout *r, int g, int env_idx, uint64_t task_seed, env_split split,
                        char *err, size_t errlen) {
    rollout_group *gr = &r->groups[g];
    const job_env *je = &r->cfg.job->envs[env_idx];
    gr->env_idx = env_idx;
    gr->task_seed = task_seed;
    gr->split = split;
    gr->min_version = r->version;
    gr->active = 1;
    env_kv kv[JOB_MAX_ENV_OPTIONS + 1];
    char num[16];
    int nkv = job_env_kv(je, kv, num);
    for (int i = 0; i < r->cfg.G; i++) {
        rollout_ep *ep = &r->eps[g * r->cfg.G + i];
        ep_clear(ep);
        if (ep->e && strcmp(ep->e->vt->name, je->name)) {
            env_destroy(ep->e);
            ep->e = NULL;
        }
        if (!ep->e && env_create(&ep->e, je->name, kv, nkv, err, errlen)) return -1;
        ep->sample_seed = seed_hash_mix(task_seed, (uint64_t)i + 1);
        seed_rng_init(&ep->rng, ep->sample_seed);
        char e2[SEED_ERRLEN];
        if (env_reset(ep->e, task_seed, split, &ep->obs, e2, sizeof e2)) {
            ep_fail(r, ep, e2);
            continue;
        }
        snprintf(ep->family, sizeof ep->family, "%s", ep->obs.family ? ep->obs.family : "");
        if (r->cfg.lib) {
            ep->skills = skill_lib_find(r->cfg.lib, je->name, ep->family);
            if (!ep->skills && !r->lib_miss_warned++)
                seed_log(SEED_LOG_WARN,
                         "the skill library has no entry for env %s family '%s' (nor '*'): "
                         "such episodes act without skills",
                         je->name, ep->family);
        }
        ep->phase = ROLLOUT_PROMPT;
    }
    return 0;
}

static int push_step(rollout_ep *ep) {
    if (ep->n_steps == ep->cap_steps) {
        int cap = ep->cap_steps ? ep->cap_steps * 2 : 16;
        rollout_step *s = realloc(ep->steps, sizeof *s * (size_t)cap);
        if (s) ep->steps = s;
        env_prompt_step *h = realloc(ep->hist, sizeof *h * (size_t)cap);
        if (h) ep->hist = h;
        if (!s || !h) return -1;
        ep->cap_steps = cap;
    }
    memset(&ep->steps[ep->n_steps], 0, sizeof ep->steps[0]);
    return ep->n_steps++;
}

/* Render the next prompt and plan its prefill: keep the longest prefix already cached
 * in this slot or another slot of the same group (same weights), prefill the rest. */
static void plan_prompt(rollout *r, int slot) {
    rollout_ep *ep = &r->eps[slot];
    const int G = r->cfg.G;
    char err[SEED_ERRLEN];
    for (int k = 0; k < ep->n_steps; k++) {
        ep->hist[k].observation = ep->steps[k].obs;
        ep->hist[k].action = ep->steps[k].action;
    }
    const char *ep_skill = ep->skills ? ep->skills->episode : NULL;
    const char *step_skill = ep->skills ? skill_lib_step(ep->skills, ep->n_steps + 1,
                                                         r->cfg.job->analyzer.max_step_skills)
                                        : NULL;
    if (render_prompt(&r->rr, ep->e, &ep->obs, ep->hist, ep->n_steps, ep_skill, step_skill,
                      &ep->prompt, &ep->slot_ep, &ep->slot_step, err, sizeof err)) {
        ep_fail(r, ep, err);
        return;
    }
    int plen = (int)ep->prompt.n;
    if (plen > r->cfg.max_prompt) {
        snprintf(err, sizeof err,
                 "prompt of %d tokens exceeds the limit of %d (sampling.max_prompt_tokens)", plen,
                 r->cfg.max_prompt);
        ep_fail(r, ep, err);
        return;
    }
    int g = slot / G;
    int best = 0, best_src = slot;
    for (int i = 0; i < G; i++) {
        int s = g * G + i;
        if (r->cache_ver[s] != r->version) continue;
        int n = SEED_MIN(r->cache_n[s], plen - 1), k = 0;
        while (k < n && r->cache[s][k] == ep->prompt.v[k]) k++;
        if (k > best || (k == best && s == slot)) {
            best = k;
            best_src = s;
        }
    }
    /* A slot of the same group about to prefill a prompt that shares more: wait one
     * iteration and copy its cache instead of computing the same prefix twice. */
    for (int i = 0; i < G; i++) {
        int s = g * G + i;
        rollout_ep *o = &r->eps[s];
        if (s == slot || o->phase != ROLLOUT_PREFILL) continue;
        int n = SEED_MIN((int)o->prompt.n, plen - 1), k = 0;
        while (k < n && o->prompt.v[k] == ep->prompt.v[k]) k++;
        if (k > best + 16) {
            ep->phase = ROLLOUT_PROMPT;
            return;
        }
    }
    if (model_kv_copy_prefix(r->cfg.m, slot, best_src, best, err, sizeof err)) {
        best = 0;
        model_kv_clear(r->cfg.m, slot);
    }
    if (best_src != slot)
        memcpy(r->cache[slot], r->cache[best_src], sizeof(int32_t) * (size_t)best);
    r->cache_n[slot] = best;
    r->cache_ver[slot] = r->version;
    ep->pending = plen - best;
    seed_log(SEED_LOG_DEBUG, "slot %d step %d: prompt %d tokens, %d reused from slot %d", slot,
             ep->n_steps, plen, best, best_src);
    ep->rlen = 0;
    ep->phase = ROLLOUT_PREFILL;
}

/* Record the step just decided (action text, valid or not), then step the env. */
static void take_action(rollout *r, int slot, const char *action, int valid) {
    rollout_ep *ep = &r->eps[slot];
    rollout_group *gr = &r->groups[slot / r->cfg.G];
    char err[SEED_ERRLEN];
    int k = push_step(ep);
    if (k < 0) {
        ep_fail(r, ep, "out of memory recording a step");
        return;
    }
    rollout_step *st = &ep->steps[k];
    st->plen = (int)ep->prompt.n;
    st->rlen = ep->rlen;
    st->prompt = malloc(sizeof(int32_t) * (size_t)(st->plen ? st->plen : 1));
    st->resp = malloc(sizeof(int32_t) * (size_t)(st->rlen ? st->rlen : 1));
    st->lp = malloc(sizeof(float) * (size_t)(st->rlen ? st->rlen : 1));
    st->obs = strdup(ep->obs.observation ? ep->obs.observation : "");
    st->action = strdup(valid ? action : "");
    if (!st->prompt || !st->resp || !st->lp || !st->obs || !st->action) {
        ep_fail(r, ep, "out of memory recording a step");
        return;
    }
    if (st->plen) memcpy(st->prompt, ep->prompt.v, sizeof(int32_t) * (size_t)st->plen);
    if (st->rlen) {
        memcpy(st->resp, ep->resp, sizeof(int32_t) * (size_t)st->rlen);
        memcpy(st->lp, ep->lp, sizeof(float) * (size_t)st->rlen);
    }
    st->slot_ep = ep->slot_ep;
    st->slot_step = ep->slot_step;
    st->valid = valid;
    if (env_step(ep->e, valid ? action : NULL, &ep->obs, err, sizeof err)) {
        ep_fail(r, ep, err);
        return;
    }
    r->c.env_steps++;
    st->reward =
        env_parse_step_reward(ep->obs.reward, valid, (float)r->cfg.job->algorithm.invalid_penalty);
    ep->ret += st->reward;
    if (ep->obs.done) {
        ep->won = ep->obs.won;
        ep->phase = ROLLOUT_DONE;
    } else {
        ep->phase = ROLLOUT_PROMPT;
    }
    if (r->version < gr->min_version) gr->min_version = r->version;
}

static void finish_turn(rollout *r, int slot) {
    rollout_ep *ep = &r->eps[slot];
    char err[SEED_ERRLEN];
    r->text.n = 0;
    if (tok_decode(r->cfg.tk, ep->resp, (size_t)ep->rlen, TOK_DECODE_SKIP_SPECIAL, &r->text, err,
                   sizeof err)) {
        ep_fail(r, ep, err);
        return;
    }
    env_parsed pr;
    env_parse_response(r->text.p, r->text.n, env_parse_rejects_cjk(ep->e->vt->name), r->action,
                       sizeof r->action, &pr);
    int valid = pr.valid && env_action_valid(ep->e, r->action);
    seed_log(SEED_LOG_DEBUG, "slot %d reply (%d tokens, %s): %.200s", slot, ep->rlen,
             valid ? "valid" : env_parse_reason(pr.reason), r->text.p);
    take_action(r, slot, r->action, valid);
}

/* The expert's turn for every episode waiting for one: no tokens, same bookkeeping. */
static int expert_iteration(rollout *r) {
    int n = 0;
    for (int s = 0; s < r->n_slots; s++) {
        rollout_ep *ep = &r->eps[s];
        if (ep->phase != ROLLOUT_PROMPT) continue;
        char err[SEED_ERRLEN];
        ep->prompt.n = 0;
        ep->rlen = 0;
        if (env_expert(ep->e, r->action, sizeof r->action, err, sizeof err)) {
            ep_fail(r, ep, err);
            continue;
        }
        take_action(r, s, r->action, 1);
        n++;
    }
    return n;
}

int rollout_iterate(rollout *r, char *err, size_t errlen) {
    if (r->cfg.expert) return expert_iteration(r);
    int nc = 0;
    for (int s = 0; s < r->n_slots; s++)
        if (r->eps[s].phase == ROLLOUT_PROMPT) plan_prompt(r, s);
    for (int s = 0; s < r->n_slots; s++) {
        rollout_ep *ep = &r->eps[s];
        if (ep->phase == ROLLOUT_PREFILL) {
            int from = (int)ep->prompt.n - ep->pending;
            r->chunk_tok[nc] = ep->prompt.v + from;
            r->chunk_len[nc] = ep->pending;
            r->chunk_slot[nc++] = s;
        } else if (ep->phase == ROLLOUT_DECODE) {
            r->chunk_tok[nc] = &ep->resp[ep->rlen - 1];
            r->chunk_len[nc] = 1;
            r->chunk_slot[nc++] = s;
        }
    }
    if (nc == 0) return 0;
    if (model_forward_cached(r->cfg.m, nc, r->chunk_slot, r->chunk_tok, r->chunk_len, r->logits,
                             err, errlen))
        return -1;
    for (int c = 0; c < nc; c++) {
        int s = r->chunk_slot[c];
        rollout_ep *ep = &r->eps[s];
        /* the slot's cache now also holds this chunk */
        int n0 = r->cache_n[s];
        for (int k = 0; k < r->chunk_len[c]; k++) r->cache[s][n0 + k] = r->chunk_tok[c][k];
        r->cache_n[s] = n0 + r->chunk_len[c];
        ep->phase = ROLLOUT_DECODE;
        ep->pending = 0;
        float lp = 0.0f;
        int t = model_sample(r->logits + (size_t)c * (size_t)r->vocab, r->vocab, &r->cfg.sampler,
                             &ep->rng, &lp, r->scratch);
        ep->resp[ep->rlen] = t;
        ep->lp[ep->rlen] = lp;
        ep->rlen++;
        r->c.tokens_generated++;
        if (t == r->end_id || t == r->eos_id || ep->rlen >= r->cfg.max_new_tokens)
            finish_turn(r, s);
    }
    return nc;
}

int rollout_group_done(const rollout *r, int g) {
    if (!r->groups[g].active) return 0;
    for (int i = 0; i < r->cfg.G; i++)
        if (r->eps[g * r->cfg.G + i].phase != ROLLOUT_DONE) return 0;
    return 1;
}

void rollout_group_release(rollout *r, int g) {
    r->groups[g].active = 0;
    for (int i = 0; i < r->cfg.G; i++) r->eps[g * r->cfg.G + i].phase = ROLLOUT_IDLE;
}

const rollout_group *rollout_group_at(const rollout *r, int g) {
    return &r->groups[g];
}

const rollout_ep *rollout_episode(const rollout *r, int g, int i) {
    return &r->eps[g * r->cfg.G + i];
}

int rollout_episodes_in_flight(const rollout *r) {
    int n = 0;
    for (int i = 0; i < r->n_slots; i++) n += r->eps[i].phase != ROLLOUT_IDLE;
    return n;
}

rollout_counters rollout_counters_get(const rollout *r) {
    return r->c;
}

void rollout_plan(const job_config *job, const model_config *cfg, int slots, model_limits *lim,
                  int *max_prompt) {
    int want = job->sampling.max_prompt_tokens > 0 ? job->sampling.max_prompt_tokens
                                                   : cfg->max_position_embeddings;
    int max_seq = SEED_MIN(want + job->sampling.max_new_tokens, cfg->max_position_embeddings);
    memset(lim, 0, sizeof *lim);
    lim->max_batch_seqs = slots;
    lim->max_seq_len = max_seq;
    lim->threads = job->model.threads;
    *max_prompt = max_seq - job->sampling.max_new_tokens;
}

/* ---- evaluation ---- */

static void eval_count(rollout_eval_result *res, const char *env_name, const rollout_ep *ep) {
    res->episodes++;
    if (ep->error[0]) {
        res->errors++;
        return;
    }
    res->won += ep->won;
    res->ret += ep->ret;
    rollout_eval_family *f = NULL;
    for (int i = 0; i < res->n_families && !f; i++)
        if (!strcmp(res->families[i].env, env_name) && !strcmp(res->families[i].family, ep->family))
            f = &res->families[i];
    if (!f && res->n_families < (int)(sizeof res->families / sizeof res->families[0])) {
        f = &res->families[res->n_families++];
        memset(f, 0, sizeof *f);
        snprintf(f->env, sizeof f->env, "%s", env_name);
        snprintf(f->family, sizeof f->family, "%s", ep->family[0] ? ep->family : env_name);
    }
    if (!f) return; /* more families than the table holds: counted in the totals only */
    f->episodes++;
    f->won += ep->won;
    f->ret += ep->ret;
}

/* One episode of an evaluation as a JSON line (rollout_eval_cfg.trace). */
static int eval_trace(FILE *f, const rollout *r, const rollout_group *gr, const rollout_ep *ep,
                      char *err, size_t errlen) {
    cJSON *o = cJSON_CreateObject();
    cJSON *steps = o ? cJSON_AddArrayToObject(o, "steps") : NULL;
    seed_sbuf prompt = {0}, reply = {0};
    char task[24];
    snprintf(task, sizeof task, "%llu", (unsigned long long)gr->task_seed);
    int ok = steps != NULL;
    if (ok) {
        cJSON_AddStringToObject(o, "task_seed", task); /* a string: JSON numbers lose bits */
        cJSON_AddStringToObject(o, "family", ep->family);
        cJSON_AddNumberToObject(o, "won", ep->won);
        cJSON_AddNumberToObject(o, "return", ep->ret);
        cJSON_AddStringToObject(o, "error", ep->error);
    }
    for (int i = 0; ok && i < ep->n_steps; i++) {
        const rollout_step *st = &ep->steps[i];
        cJSON *x = cJSON_CreateObject();
        prompt.n = reply.n = 0;
        if (!x || (r->cfg.tk &&
                   (tok_decode(r->cfg.tk, st->prompt, (size_t)st->plen, 0, &prompt, err, errlen) ||
                    tok_decode(r->cfg.tk, st->resp, (size_t)st->rlen, 0, &reply, err, errlen)))) {
            cJSON_Delete(x);
            ok = 0;
            break;
        }
        cJSON_AddStringToObject(x, "observation", st->obs);
        if (r->cfg.tk) cJSON_AddStringToObject(x, "prompt", prompt.p ? prompt.p : "");
        cJSON_AddStringToObject(x, "reply", reply.p ? reply.p : "");
        cJSON_AddStringToObject(x, "action", st->action);
        cJSON_AddNumberToObject(x, "valid", st->valid);
        cJSON_AddNumberToObject(x, "reward", st->reward);
        cJSON_AddItemToArray(steps, x);
    }
    char *line = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    seed_sbuf_free(&prompt);
    seed_sbuf_free(&reply);
    if (!line) return err[0] ? -1 : seed_errf(err, errlen, "out of memory writing the trace");
    int bad = fprintf(f, "%s\n", line) < 0;
    free(line);
    if (bad) return seed_errf(err, errlen, "writing the evaluation trace failed");
    return 0;
}

void rollout_group_salt(rollout *r, int g, uint64_t salt) {
    for (int i = 0; i < r->cfg.G; i++) {
        rollout_ep *ep = &r->eps[g * r->cfg.G + i];
        ep->sample_seed = seed_hash_mix(ep->sample_seed, salt);
        seed_rng_init(&ep->rng, ep->sample_seed);
    }
}

uint64_t rollout_task_seed(uint64_t set_seed, uint64_t k) {
    return seed_hash_mix(set_seed, k) >> 1;
}

int rollout_eval(const rollout_eval_cfg *cfg, rollout_eval_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    if (cfg->n < 1 || cfg->batch < 1)
        return seed_errf(err, errlen, "evaluation: expected at least one task and a batch");
    if (cfg->env_idx < 0 || cfg->env_idx >= cfg->job->n_envs)
        return seed_errf(err, errlen, "evaluation: env entry %d is not in the job", cfg->env_idx);
    int max_prompt = 0;
    if (!cfg->expert) {
        model_limits lim;
        rollout_plan(cfg->job, model_get_config(cfg->m), cfg->batch, &lim, &max_prompt);
    }
    rollout_cfg rc = {.job = cfg->job,
                      .m = cfg->m,
                      .tk = cfg->tk,
                      .n_groups = cfg->batch,
                      .G = 1,
                      .sampler = {cfg->temperature, 1.0f, 0},
                      .max_new_tokens = cfg->job->sampling.max_new_tokens,
                      .max_prompt = max_prompt,
                      .lib = cfg->lib,
                      .expert = cfg->expert};
    rollout *r;
    if (rollout_create(&r, &rc, err, errlen)) return -1;
    const char *env_name = cfg->job->envs[cfg->env_idx].name;
    int next = 0, rc2 = 0;
    /* every slot of the model starts from a clear cache: a new engine, a new version */
    rollout_set_version(r, 1);
    for (;;) {
        for (int g = 0; g < cfg->batch && next < cfg->n; g++) {
            if (r->groups[g].active) continue;
            uint64_t task = rollout_task_seed(cfg->seed, (uint64_t)next);
            if ((rc2 = rollout_start_group(r, g, cfg->env_idx, task, cfg->split, err, errlen)))
                break;
            next++;
        }
        if (rc2) break;
        int busy = 0;
        for (int g = 0; g < cfg->batch; g++) busy += r->groups[g].active;
        if (!busy) break;
        if ((rc2 = rollout_iterate(r, err, errlen)) < 0) break;
        rc2 = 0;
        for (int g = 0; g < cfg->batch && !rc2; g++) {
            if (!rollout_group_done(r, g)) continue;
            eval_count(res, env_name, rollout_episode(r, g, 0));
            err[0] = 0;
            if (cfg->trace && (rc2 = eval_trace(cfg->trace, r, &r->groups[g],
                                                rollout_episode(r, g, 0), err, errlen)))
                break;
            rollout_group_release(r, g);
        }
        if (rc2) break;
    }
    rollout_free(r);
    return rc2 ? -1 : 0;
}

cJSON *rollout_eval_cjson(const rollout_eval_result *r, const char *env_name, const char *split,
                          uint64_t seed, double temperature) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    int played = r->episodes - r->errors;
    cJSON_AddStringToObject(j, "env", env_name);
    cJSON_AddStringToObject(j, "split", split);
    cJSON_AddNumberToObject(j, "episodes", r->episodes);
    cJSON_AddNumberToObject(j, "seed", (double)seed);
    cJSON_AddNumberToObject(j, "temperature", temperature);
    cJSON_AddNumberToObject(j, "success", r->episodes ? (double)r->won / r->episodes : 0.0);
    cJSON_AddNumberToObject(j, "return", played ? r->ret / played : 0.0);
    cJSON_AddNumberToObject(j, "errors", r->errors);
    cJSON *fs = cJSON_AddArrayToObject(j, "families");
    for (int i = 0; fs && i < r->n_families; i++) {
        const rollout_eval_family *f = &r->families[i];
        cJSON *x = cJSON_CreateObject();
        if (!x) break;
        cJSON_AddStringToObject(x, "env", f->env);
        cJSON_AddStringToObject(x, "family", f->family);
        cJSON_AddNumberToObject(x, "episodes", f->episodes);
        cJSON_AddNumberToObject(x, "success", f->episodes ? (double)f->won / f->episodes : 0.0);
        cJSON_AddNumberToObject(x, "return", f->episodes ? f->ret / f->episodes : 0.0);
        cJSON_AddItemToArray(fs, x);
    }
    return j;
}
