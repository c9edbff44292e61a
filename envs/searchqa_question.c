/* searchqa_question.c — the searchqa env's config keys, question templates and task
 * generator (searchqa.h).
 *
 * Contract: a template is one relation path from a kind of named entity (or, for
 * comparisons, one attribute compared between two entities of a kind) with one
 * phrasing, and is either seen or unseen. sq_question_make draws, from (seed, split),
 * a family among the enabled ones, a template of that family from the split's set (seen
 * for train and seen, unseen for unseen), and the entities; the question lists the
 * passages that answer it in reading order (hop h's entity is named in hop h-1's
 * passage) and the golden answer. Every family has templates in both sets. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "envs/searchqa.h"
#include "common/util.h"

/* Relations a hop follows: (from kind, relation slot) -> to kind; R_YEAR reads the year. */
enum { R_BORN_IN, R_WORKS_FOR, R_IN_COUNTRY, R_CAPITAL, R_FOUNDER, R_HQ, R_AUTHOR, R_YEAR };

static const struct {
    int from, slot, to;
    const char *word;
} sq_rel[] = {
    [R_BORN_IN] = {SQ_PERSON, 0, SQ_CITY, "birthplace"},
    [R_WORKS_FOR] = {SQ_PERSON, 1, SQ_COMPANY, "employer"},
    [R_IN_COUNTRY] = {SQ_CITY, 0, SQ_COUNTRY, "country"},
    [R_CAPITAL] = {SQ_COUNTRY, 0, SQ_CITY, "capital"},
    [R_FOUNDER] = {SQ_COMPANY, 0, SQ_PERSON, "founder"},
    [R_HQ] = {SQ_COMPANY, 1, SQ_CITY, "headquarters"},
    [R_AUTHOR] = {SQ_WORK, 0, SQ_PERSON, "author"},
    [R_YEAR] = {-1, -1, -1, "year"},
};

typedef struct sq_template {
    int family, unseen, kind;
    int n_rel;
    int rel[SQ_MAX_HOPS];
    int later; /* comparison: 1 = the later year wins, 0 = the earlier */
    const char *fmt;
} sq_template;

#define T1(f, u, k, a, s)                                                                          \
    { f, u, k, 1, {a, 0, 0}, 0, s }
#define T2(f, u, k, a, b, s)                                                                       \
    { f, u, k, 2, {a, b, 0}, 0, s }
#define T3(f, u, k, a, b, c, s)                                                                    \
    { f, u, k, 3, {a, b, c}, 0, s }
#define TC(u, k, later, s)                                                                         \
    { SQ_COMPARISON, u, k, 0, {0, 0, 0}, later, s }

static const sq_template sq_templates[] = {
    /* seen */
    T1(SQ_SINGLE_HOP, 0, SQ_PERSON, R_BORN_IN, "In which city was %s born?"),
    T1(SQ_SINGLE_HOP, 0, SQ_WORK, R_AUTHOR, "Who wrote %s?"),
    T1(SQ_SINGLE_HOP, 0, SQ_COMPANY, R_FOUNDER, "Who founded %s?"),
    T1(SQ_SINGLE_HOP, 0, SQ_COUNTRY, R_CAPITAL, "What is the capital of %s?"),
    T2(SQ_TWO_HOP, 0, SQ_COMPANY, R_FOUNDER, R_BORN_IN,
       "In which city was the founder of %s born?"),
    T2(SQ_TWO_HOP, 0, SQ_WORK, R_AUTHOR, R_WORKS_FOR,
       "Which company does the author of %s work for?"),
    T2(SQ_TWO_HOP, 0, SQ_COMPANY, R_HQ, R_IN_COUNTRY, "In which country is %s headquartered?"),
    T2(SQ_TWO_HOP, 0, SQ_PERSON, R_BORN_IN, R_IN_COUNTRY, "In which country was %s born?"),
    T3(SQ_THREE_HOP, 0, SQ_WORK, R_AUTHOR, R_BORN_IN, R_IN_COUNTRY,
       "In which country was the author of %s born?"),
    T3(SQ_THREE_HOP, 0, SQ_PERSON, R_WORKS_FOR, R_FOUNDER, R_BORN_IN,
       "In which city was the founder of the company %s works for born?"),
    TC(0, SQ_COMPANY, 0, "Which company was founded earlier, %s or %s?"),
    TC(0, SQ_PERSON, 0, "Who was born first, %s or %s?"),
    /* unseen */
    T1(SQ_SINGLE_HOP, 1, SQ_COMPANY, R_HQ, "Where is %s headquartered?"),
    T1(SQ_SINGLE_HOP, 1, SQ_CITY, R_IN_COUNTRY, "In which country is %s located?"),
    T1(SQ_SINGLE_HOP, 1, SQ_PERSON, R_YEAR, "In what year was %s born?"),
    T2(SQ_TWO_HOP, 1, SQ_WORK, R_AUTHOR, R_BORN_IN, "What is the birthplace of the author of %s?"),
    T2(SQ_TWO_HOP, 1, SQ_COMPANY, R_FOUNDER, R_YEAR, "In what year was the founder of %s born?"),
    T2(SQ_TWO_HOP, 1, SQ_COUNTRY, R_CAPITAL, R_YEAR, "When was the capital of %s founded?"),
    T3(SQ_THREE_HOP, 1, SQ_COMPANY, R_FOUNDER, R_BORN_IN, R_IN_COUNTRY,
       "What country is the founder of %s from?"),
    T3(SQ_THREE_HOP, 1, SQ_WORK, R_AUTHOR, R_WORKS_FOR, R_HQ,
       "In which city is the employer of the author of %s headquartered?"),
    TC(1, SQ_WORK, 1, "Which was published more recently, %s or %s?"),
    TC(1, SQ_CITY, 0, "Which city is older, %s or %s?"),
};

enum { SQ_N_TEMPLATES = (int)(sizeof sq_templates / sizeof sq_templates[0]) };

int sq_template_count(void) {
    return SQ_N_TEMPLATES;
}

int sq_template_family(int t) {
    return t >= 0 && t < SQ_N_TEMPLATES ? sq_templates[t].family : -1;
}

int sq_template_unseen(int t) {
    return t >= 0 && t < SQ_N_TEMPLATES ? sq_templates[t].unseen : -1;
}

const char *sq_template_relation(int t, int hop) {
    if (t < 0 || t >= SQ_N_TEMPLATES) return "?";
    const sq_template *T = &sq_templates[t];
    if (T->family == SQ_COMPARISON) return T->later ? "later year" : "earlier year";
    return hop >= 0 && hop < T->n_rel ? sq_rel[T->rel[hop]].word : "?";
}

static const char *const sq_family_names[SQ_FAMILY_COUNT] = {"single_hop", "two_hop", "three_hop",
                                                             "comparison"};

const char *sq_family_name(int f) {
    return f >= 0 && f < SQ_FAMILY_COUNT ? sq_family_names[f] : "?";
}

int sq_family_parse(const char *s) {
    for (int f = 0; s && f < SQ_FAMILY_COUNT; f++)
        if (strcmp(s, sq_family_names[f]) == 0) return f;
    return -1;
}

int sq_config_parse(const env_kv *kv, int n_kv, sq_config *cfg, char *err, size_t errlen) {
    static const char *const known[] = {"corpus_seed",   "corpus_entities", "topk",
                                        "obs_max_chars", "families",        NULL};
    if (env_kv_check("searchqa", kv, n_kv, known, err, errlen)) return -1;
    int seed = 0;
    if (env_kv_int("searchqa", kv, n_kv, "corpus_seed", 0, 0, INT_MAX, &seed, err, errlen) ||
        env_kv_int("searchqa", kv, n_kv, "corpus_entities", 2000, 100, 20000, &cfg->entities, err,
                   errlen) ||
        env_kv_int("searchqa", kv, n_kv, "topk", 3, 1, SQ_TOPK_MAX, &cfg->topk, err, errlen) ||
        env_kv_int("searchqa", kv, n_kv, "obs_max_chars", 2000, 256, 1 << 20, &cfg->obs_max_chars,
                   err, errlen) ||
        env_kv_int("searchqa", kv, n_kv, "max_steps", 4, 1, 1000000, &cfg->max_steps, err, errlen))
        return -1;
    cfg->corpus_seed = (uint64_t)seed;
    if (env_kv_mask("searchqa", kv, n_kv, "families", sq_family_parse, (1u << SQ_FAMILY_COUNT) - 1,
                    "single_hop, two_hop, three_hop, comparison", &cfg->family_mask, err, errlen))
        return -1;
    return 0;
}

static int sq_pick_kind(seed_rng *r, const sq_corpus *c, int kind) {
    return c->first[kind] + (int)seed_rng_below(r, (uint64_t)c->count[kind]);
}

int sq_question_make(const sq_corpus *c, unsigned family_mask, uint64_t seed, env_split split,
                     sq_question *q, char *err, size_t errlen) {
    memset(q, 0, sizeof *q);
    seed_rng r;
    seed_rng_init(&r, seed_hash_mix(0x5ea7c4a1b0ULL, env_level_seed(seed, split)));
    int fams[SQ_FAMILY_COUNT], nf = 0;
    for (int f = 0; f < SQ_FAMILY_COUNT; f++)
        if (family_mask & (1u << f)) fams[nf++] = f;
    if (!nf) return seed_errf(err, errlen, "searchqa: no question family is enabled");
    int unseen = split == ENV_SPLIT_UNSEEN;
    int family = fams[seed_rng_below(&r, (uint64_t)nf)];
    int cand[SQ_N_TEMPLATES], nc = 0;
    for (int t = 0; t < SQ_N_TEMPLATES; t++)
        if (sq_templates[t].family == family && sq_templates[t].unseen == unseen) cand[nc++] = t;
    int t = cand[seed_rng_below(&r, (uint64_t)nc)];
    const sq_template *T = &sq_templates[t];
    q->family = family;
    q->tmpl = t;
    for (int tries = 0; tries < 1000; tries++) {
        if (family == SQ_COMPARISON) {
            int a = sq_pick_kind(&r, c, T->kind), b = sq_pick_kind(&r, c, T->kind);
            if (a == b || c->ent[a].year == c->ent[b].year) continue;
            int win = (c->ent[a].year > c->ent[b].year) == T->later ? a : b;
            snprintf(q->text, sizeof q->text, T->fmt, c->ent[a].name, c->ent[b].name);
            q->n_need = 2;
            q->need[0] = a;
            q->need[1] = b;
            q->answer_entity = win;
            snprintf(q->answer, sizeof q->answer, "%s", c->ent[win].name);
            return 0;
        }
        int cur = sq_pick_kind(&r, c, T->kind), ok = 1;
        q->n_need = 0;
        for (int h = 0; h < T->n_rel && ok; h++) {
            for (int j = 0; j < q->n_need; j++) ok &= q->need[j] != cur;
            q->need[q->n_need++] = cur;
            if (T->rel[h] != R_YEAR) cur = c->ent[cur].rel[sq_rel[T->rel[h]].slot];
        }
        int last = T->rel[T->n_rel - 1];
        for (int j = 0; j < q->n_need && last != R_YEAR; j++) ok &= q->need[j] != cur;
        if (!ok) continue; /* a chain that revisits an entity is a shorter question */
        snprintf(q->text, sizeof q->text, T->fmt, c->ent[q->need[0]].name);
        if (last == R_YEAR) {
            q->answer_entity = -1;
            snprintf(q->answer, sizeof q->answer, "%d", c->ent[q->need[q->n_need - 1]].year);
        } else {
            q->answer_entity = cur;
            snprintf(q->answer, sizeof q->answer, "%s", c->ent[cur].name);
        }
        return 0;
    }
    return seed_errf(err, errlen, "searchqa: found no question for template %d (corpus too small)",
                     t);
}
