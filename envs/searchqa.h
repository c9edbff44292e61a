/* searchqa.h — the searchqa env's parts, shared by its env, expert, hindsight oracle,
 * tests and benchmark: a generated knowledge corpus, a BM25 index over its passages,
 * the question generator, and Search-R1's action projection and answer normalisation.
 *
 * Contract:
 *  - The corpus is a pure function of (corpus_seed, corpus_entities): entities (people,
 *    cities, countries, companies, written works) with attributes and relations, one
 *    Wikipedia-style passage per entity ("title\ntext", as Search-R1's wiki-18 corpus
 *    stores `contents`); the passage of entity i is document i. Names are unique.
 *  - A task is a function of (config, seed, split): one question from a question
 *    template of an enabled family, its golden answer, and the chain of passages that
 *    answer it. Train and seen tasks use only the seen templates, unseen tasks only the
 *    unseen ones: the two sets share no template (each template is one relation path
 *    with one phrasing, and belongs to exactly one set).
 *  - sq_normalize_answer is Search-R1's normalize_answer (lower-case, drop ASCII
 *    punctuation, drop the words a/an/the, collapse whitespace) with Python's Unicode
 *    semantics; sq_project is verl-agent's search_projection on one action text.
 *  - Nothing here keeps global mutable state; the corpus and index are built once per
 *    env (or per oracle call) and only read afterwards. */
#ifndef SEED_SEARCHQA_H
#define SEED_SEARCHQA_H

#include <stddef.h>
#include <stdint.h>

#include "envs/env.h"

enum { SQ_PERSON, SQ_CITY, SQ_COUNTRY, SQ_COMPANY, SQ_WORK, SQ_KIND_COUNT };

/* Question families (the task families the status page reports). */
enum { SQ_SINGLE_HOP, SQ_TWO_HOP, SQ_THREE_HOP, SQ_COMPARISON, SQ_FAMILY_COUNT };

enum {
    SQ_NAME = 48,
    SQ_QUESTION = 256,
    SQ_MAX_HOPS = 3,        /* passages a question needs: up to 3 hops, or 2 for comparison */
    SQ_TOPK_MAX = 10,       /* the topk key's upper bound */
    SQ_QUERY_TERMS = 64,    /* query terms BM25 reads; the rest of a long query is ignored */
    SQ_MAX_RETRIEVED = 128, /* retrieved documents an episode remembers (expert, oracle) */
};

/* Relations, by kind: person (born_in city, works_for company); city (in_country);
 * country (capital city); company (founder person, hq city); work (author person). */
typedef struct sq_entity {
    uint8_t kind;
    int16_t year; /* person: born; city: founded; company: founded; work: published */
    int16_t attr; /* person: occupation; country: currency; company: industry; work: genre */
    int32_t rel[2];
    char name[SQ_NAME];
} sq_entity;

typedef struct sq_corpus {
    int n;                                          /* entities = documents */
    sq_entity *ent;                                 /* n entities */
    char **doc;                                     /* n passages "title\ntext" */
    int first[SQ_KIND_COUNT], count[SQ_KIND_COUNT]; /* entities of a kind are contiguous */
    char *arena;                                    /* the passages' storage */
} sq_corpus;

int sq_corpus_build(sq_corpus *c, uint64_t corpus_seed, int n_entities, char *err, size_t errlen);
void sq_corpus_free(sq_corpus *c);
const char *sq_kind_name(int kind);        /* "person", "city", ... */
const char *sq_attr_name(int kind, int a); /* occupation / currency / industry / genre */

/* ---- BM25 (Lucene's formula, pyserini's k1 = 0.9, b = 0.4) ---- */
typedef struct sq_index {
    int n_docs, n_terms;
    double avgdl, k1, b;
    int32_t *doc_len;
    uint32_t hcap;   /* vocabulary hash slots (power of two) */
    int32_t *hslot;  /* term id or -1 */
    uint64_t *thash; /* per term: its hash */
    uint32_t *toff;  /* per term: offset of its text in tpool */
    uint16_t *tlen;
    char *tpool;
    double *idf;
    uint32_t *post_off; /* n_terms + 1 */
    int32_t *post_doc;  /* postings: document ids ascending */
    uint16_t *post_tf;
    double *acc;      /* per-document score accumulator (search scratch) */
    int32_t *touched; /* documents with a non-zero accumulator */
} sq_index;

int sq_index_build(sq_index *ix, const char *const *docs, int n_docs, char *err, size_t errlen);
void sq_index_free(sq_index *ix);
/* The k best documents for query (len bytes, any bytes): docs/scores receive at most k
 * entries, best first, ties by lower document id; returns their number (documents with
 * score 0 are never returned). Not thread-safe per index (uses its scratch). */
int sq_index_search(sq_index *ix, const char *query, size_t len, int k, int *docs, double *scores);
/* Query/document tokenizer: lower-cased runs of ASCII letters and digits (other bytes
 * >= 0x80 join a run), Lucene's English stop words dropped. Calls fn per token. */
void sq_tokenize(const char *s, size_t len, int max_tokens,
                 void (*fn)(void *ctx, const char *tok, size_t n), void *ctx);

/* ---- questions ---- */
typedef struct sq_question {
    int family, tmpl;
    int n_need;            /* passages the answer needs, in the order to read them */
    int need[SQ_MAX_HOPS]; /* entity ids */
    int answer_entity;     /* the entity the answer names, -1 for a year */
    char text[SQ_QUESTION];
    char answer[SQ_NAME]; /* the golden answer */
} sq_question;

typedef struct sq_config {
    uint64_t corpus_seed;
    int entities, topk, obs_max_chars, max_steps;
    unsigned family_mask;
} sq_config;

int sq_config_parse(const env_kv *kv, int n_kv, sq_config *cfg, char *err, size_t errlen);
const char *sq_family_name(int family);
int sq_family_parse(const char *s); /* -1 when unknown */
int sq_template_count(void);
int sq_template_family(int tmpl);
int sq_template_unseen(int tmpl);
/* The relation each hop reads, for people: "founder", "birthplace", ... (hop < n_need) */
const char *sq_template_relation(int tmpl, int hop);
int sq_question_make(const sq_corpus *c, unsigned family_mask, uint64_t seed, env_split split,
                     sq_question *q, char *err, size_t errlen);

/* ---- actions and answers ---- */
enum { SQ_ACT_INVALID = 0, SQ_ACT_SEARCH = 1, SQ_ACT_ANSWER = 2 };
/* verl-agent's search_projection of one action text: cut after the first "</search>"
 * (else the first "</answer>"), take the first <search>...</search> block, else the first
 * <answer>...</answer> block (tags case-insensitive), content stripped of Python
 * whitespace; invalid when there is no block, when the text has both a <search> and an
 * <answer> tag, or more than one of either. content/clen point into action. */
int sq_project(const char *action, size_t len, const char **content, size_t *clen);
/* Search-R1's normalize_answer into out (cap bytes, NUL-terminated). Returns the
 * normalised length, or -1 when it does not fit (then it equals no golden answer
 * shorter than cap). Any bytes: invalid UTF-8 bytes pass through as non-word symbols. */
long sq_normalize_answer(const char *s, size_t len, char *out, size_t cap);
/* Search-R1's em_check against one golden answer: 1 when the normalised texts agree. */
int sq_exact_match(const char *pred, size_t len, const char *golden);

/* ---- the env's privileged state (tests, oracle) ---- */
typedef struct sq_state {
    const sq_corpus *corpus;
    const sq_question *q;
    const int *retrieved; /* documents returned by this episode's searches so far */
    int n_retrieved;
    int searches;
} sq_state;
void env_searchqa_state(env *e, sq_state *out);
/* The expert's next action for a state (privileged: it knows the question's chain, but
 * only follows a hop whose passage a search has returned). */
int sq_expert_action(const sq_state *st, int steps_left, char *buf, size_t buflen);
/* What the trace keeps of each replayed step (env_vtable.trace_record): the documents
 * retrieved so far (env_searchqa_state's n_retrieved; the end state holds the list) and
 * the expert's next action from this state. */
typedef struct sq_trace_rec {
    int n_retrieved;
    char expert[128];
} sq_trace_rec;
/* The oracle (env_vtable.oracle): the skill text searchqa_oracle.c's header describes. */
int env_searchqa_oracle(const env_trace *tr, env_skill *sk, char *err, size_t errlen);
extern const env_vtable env_searchqa_vtable;

#endif
