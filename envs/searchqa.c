/* searchqa.c — the built-in "searchqa" env: Search-R1-style question answering over a
 * generated knowledge corpus with a BM25 search engine (env.h, searchqa.h).
 *
 * Contract: env_searchqa_vtable. The corpus and its index are built once in create from
 * (corpus_seed, corpus_entities); a task is (config, seed, split). The observation after
 * reset is the question (verl-agent's search env starts from it). The action text is
 * what verl-agent's search projection reads: "<search> query </search>" runs BM25 and
 * answers Search-R1's "<information>Doc 1(Title: ...) ...\nDoc 2(...) ...</information>"
 * with the top `topk` passages, cut to `obs_max_chars` characters (Search-R1 cuts the
 * observation at max_obs_length tokens); "<answer> ... </answer>" ends the episode with
 * reward 1 and won when the answer exactly matches the golden one after Search-R1's
 * normalisation, else reward 0. A NULL or unprojectable action costs a step and answers
 * Search-R1's invalid-action text; the actor adds the invalid penalty (action_valid says
 * which actions project). Config keys: corpus_seed (0), corpus_entities (2000), topk
 * (3), obs_max_chars (2000), families (all), max_steps (4: a three-hop question takes
 * three searches and the answer). Reset and step allocate nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/prompt.h"
#include "envs/searchqa.h"
#include "common/util.h"

/* Search-R1's observation for a step with neither a search nor an answer. */
static const char sq_invalid_text[] =
    "My previous action is invalid. If I want to search, I should put the query between "
    "<search> and </search>. If I want to give the final answer, I should put the answer "
    "between <answer> and </answer>. Let me try again.";

typedef struct sq_env {
    env base;
    sq_config cfg;
    sq_corpus corpus;
    sq_index ix;
    sq_question q;
    int retrieved[SQ_MAX_RETRIEVED];
    int n_retrieved, searches, done, won;
    char *obs; /* obs_max_chars + 1 bytes */
} sq_env;

static void sq_destroy(env *base) {
    sq_env *e = (sq_env *)base;
    if (!e) return;
    sq_index_free(&e->ix);
    sq_corpus_free(&e->corpus);
    free(e->obs);
    free(e);
}

static int sq_create(env **out, const env_kv *kv, int n_kv, char *err, size_t errlen) {
    sq_config cfg;
    if (sq_config_parse(kv, n_kv, &cfg, err, errlen)) return -1;
    sq_env *e = calloc(1, sizeof *e);
    if (!e) return seed_errf(err, errlen, "searchqa: out of memory");
    e->cfg = cfg;
    e->obs = malloc((size_t)cfg.obs_max_chars + 1);
    if (!e->obs) {
        free(e);
        return seed_errf(err, errlen, "searchqa: out of memory");
    }
    if (sq_corpus_build(&e->corpus, cfg.corpus_seed, cfg.entities, err, errlen) ||
        sq_index_build(&e->ix, (const char *const *)e->corpus.doc, e->corpus.n, err, errlen)) {
        sq_destroy(&e->base);
        return -1;
    }
    e->base.vt = &env_searchqa_vtable;
    e->base.max_steps = cfg.max_steps;
    e->done = 1;
    *out = &e->base;
    return 0;
}

static void sq_fill(sq_env *e, env_obs *obs, float reward) {
    obs->task = e->q.text;
    obs->observation = e->obs;
    obs->n_admissible = 0;
    obs->admissible = NULL;
    obs->reward = reward;
    obs->done = e->done;
    obs->won = e->won;
    obs->family = sq_family_name(e->q.family);
    obs->info = "";
}

static int sq_reset(env *base, uint64_t seed, env_split split, env_obs *obs, char *err,
                    size_t errlen) {
    sq_env *e = (sq_env *)base;
    if (sq_question_make(&e->corpus, e->cfg.family_mask, seed, split, &e->q, err, errlen))
        return -1;
    e->n_retrieved = e->searches = e->done = e->won = 0;
    snprintf(e->obs, (size_t)e->cfg.obs_max_chars + 1, "%s", e->q.text);
    sq_fill(e, obs, 0.0f);
    return 0;
}

/* Bounded writer for the observation; cuts at a UTF-8 character boundary. */
typedef struct sq_out {
    char *p;
    size_t cap, len; /* cap excludes the NUL */
    int full;
} sq_out;

static void sq_put(sq_out *o, const char *s, size_t n) {
    if (o->full) return;
    if (o->len + n > o->cap) {
        n = o->cap - o->len;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--; /* s[n] starts the cut */
        o->full = 1;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = 0;
}

/* Search-R1's _passages2string inside <information>, within obs_max_chars. */
static void sq_format_results(sq_env *e, const int *docs, int n) {
    static const char open[] = "<information>", close[] = "</information>";
    sq_out o = {e->obs, (size_t)e->cfg.obs_max_chars - (sizeof close - 1), 0, 0};
    e->obs[0] = 0;
    sq_put(&o, open, sizeof open - 1);
    for (int i = 0; i < n; i++) {
        const char *d = e->corpus.doc[docs[i]];
        const char *nl = strchr(d, '\n');
        size_t tl = nl ? (size_t)(nl - d) : strlen(d);
        char head[SQ_NAME + 32];
        int hn =
            snprintf(head, sizeof head, "%sDoc %d(Title: %.*s) ", i ? "\n" : "", i + 1, (int)tl, d);
        sq_put(&o, head, (size_t)SEED_MIN(hn, (int)sizeof head - 1));
        const char *text = nl ? nl + 1 : "";
        sq_put(&o, text, strlen(text));
    }
    o.cap += sizeof close - 1;
    o.full = 0;
    sq_put(&o, close, sizeof close - 1);
}

static int sq_step(env *base, const char *action, env_obs *obs, char *err, size_t errlen) {
    sq_env *e = (sq_env *)base;
    (void)err;
    (void)errlen;
    const char *content = NULL;
    size_t clen = 0;
    int kind = action ? sq_project(action, strlen(action), &content, &clen) : SQ_ACT_INVALID;
    float reward = 0.0f;
    if (kind == SQ_ACT_SEARCH) {
        int docs[SQ_TOPK_MAX];
        double scores[SQ_TOPK_MAX];
        int n = sq_index_search(&e->ix, content, clen, e->cfg.topk, docs, scores);
        for (int i = 0; i < n && e->n_retrieved < SQ_MAX_RETRIEVED; i++)
            e->retrieved[e->n_retrieved++] = docs[i];
        e->searches++;
        sq_format_results(e, docs, n);
    } else if (kind == SQ_ACT_ANSWER) {
        e->won = sq_exact_match(content, clen, e->q.answer);
        e->done = 1;
        reward = e->won ? 1.0f : 0.0f;
        e->obs[0] = 0;
    } else {
        snprintf(e->obs, (size_t)e->cfg.obs_max_chars + 1, "%s", sq_invalid_text);
    }
    sq_fill(e, obs, reward);
    return 0;
}

static int sq_action_valid(const env *base, const char *action) {
    (void)base;
    const char *c;
    size_t n;
    return sq_project(action, strlen(action), &c, &n) != SQ_ACT_INVALID;
}

void env_searchqa_state(env *base, sq_state *out) {
    sq_env *e = (sq_env *)base;
    out->corpus = &e->corpus;
    out->q = &e->q;
    out->retrieved = e->retrieved;
    out->n_retrieved = e->n_retrieved;
    out->searches = e->searches;
}

static int sq_was_retrieved(const sq_state *st, int doc) {
    for (int i = 0; i < st->n_retrieved; i++)
        if (st->retrieved[i] == doc) return 1;
    return 0;
}

int sq_expert_action(const sq_state *st, int steps_left, char *buf, size_t buflen) {
    const sq_question *q = st->q;
    int all_read = 1;
    for (int i = 0; i < q->n_need && all_read; i++) {
        if (sq_was_retrieved(st, q->need[i])) continue;
        all_read = 0;
        if (steps_left > 1) {
            snprintf(buf, buflen, "<search>%s</search>", st->corpus->ent[q->need[i]].name);
            return 0;
        }
    }
    /* the last step, or every passage read: answer what the passages say */
    snprintf(buf, buflen, "<answer>%s</answer>", all_read ? q->answer : "unknown");
    return 0;
}

static int sq_expert(env *base, char *buf, size_t buflen, char *err, size_t errlen) {
    sq_env *e = (sq_env *)base;
    if (e->done) return seed_errf(err, errlen, "searchqa: no expert action, the episode has ended");
    sq_state st;
    env_searchqa_state(base, &st);
    return sq_expert_action(&st, base->max_steps - base->steps, buf, buflen);
}

static void sq_trace_record(env *base, void *state) {
    sq_trace_rec *r = state;
    sq_state st;
    env_searchqa_state(base, &st);
    r->n_retrieved = st.n_retrieved;
    sq_expert_action(&st, base->max_steps - base->steps, r->expert, sizeof r->expert);
}

const env_vtable env_searchqa_vtable = {
    .name = "searchqa",
    .instructions = "You are an expert agent tasked with answering the given question "
                    "step-by-step.",
    .create = sq_create,
    .destroy = sq_destroy,
    .reset = sq_reset,
    .step = sq_step,
    .expert = sq_expert,
    .max_steps_default = 4,
    .prompt_style = &env_prompt_style_searchqa,
    .action_valid = sq_action_valid,
    .trace_size = sizeof(sq_trace_rec),
    .trace_record = sq_trace_record,
    .oracle = env_searchqa_oracle,
};
