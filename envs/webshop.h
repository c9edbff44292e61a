/* webshop.h — the built-in "webshop" env's parts, shared by the env, its expert, its
 * hindsight oracle, its tests and its benchmark: a generated catalogue, its BM25 index,
 * WebShop's reward (web_agent_site/engine/goal.py) and the page state machine of
 * WebShop's text env (web_agent_site/envs/web_agent_text_env.py).
 *
 * Contract:
 *  - webshop_catalog_build makes the catalogue of (catalog_seed, products): same inputs,
 *    same products, texts and index on every machine. Products are spread over WebShop's
 *    five categories (beauty, food, fashion, furniture, electronics: the task families);
 *    a quarter of them (by a hash of the index) are the unseen split's target pool, the
 *    rest the train/seen pool.
 *  - webshop_goal_make draws the task of (seed, split): a target product of the split's
 *    pool, 2-3 of its attributes, one value of each of its options, a price bound as
 *    goal.py draws it, and an instruction from the split's templates (train/seen use
 *    templates 0-4, unseen 5-7). So seen and unseen share no target product and no
 *    instruction template.
 *  - webshop_reward is goal.py's get_reward on plain strings (the env and the reference
 *    test tool both call it); webshop_token_set_ratio is thefuzz's fuzz.token_set_ratio.
 *  - webshop_exec runs one action with WebShop's text-env semantics; webshop_render
 *    writes the page as verl-agent shows it (WebShop's " [SEP] " text with each part
 *    quoted, the instruction left out) and the admissible actions. Nothing here prints;
 *    a catalogue owns its memory, a state borrows the catalogue and the goal. */
#ifndef SEED_WEBSHOP_H
#define SEED_WEBSHOP_H

#include <stddef.h>
#include <stdint.h>

#include "envs/env.h"

enum {
    WS_NCAT = 5,
    WS_MAX_ATTR = 5, /* attributes per product */
    WS_MAX_GOAL_ATTR = 3,
    WS_MAX_OPT = 2,      /* option kinds per product (size, color, ...) */
    WS_MAX_VALUES = 6,   /* values a product offers per option kind */
    WS_RESULTS_MAX = 50, /* SEARCH_RETURN_N */
    WS_PAGE_SIZE = 10,   /* PRODUCT_WINDOW */
    WS_TASK_CAP = 320,
    WS_QUERY_CAP = 512, /* longer search text is cut here (whole words) */
    WS_ACTION_MAX = 1024,
    WS_OBS_CAP = 8192,
    WS_MAX_ADM = 32,
    WS_ADM_ARENA = 2048,
    WS_PRODUCTS_DEFAULT = 5000,
    WS_PRICE_NONE = 1000000, /* goal.py's price_upper when no bound is given */
};

/* ---------------- static vocabulary (webshop_data.c) ---------------- */

typedef struct ws_optkind {
    const char *name;       /* "size", "color", "flavor", "scent", ... */
    const char *values[12]; /* NULL-terminated, lowercase */
} ws_optkind;

typedef struct ws_type {
    const char *name;  /* singular noun phrase, lowercase: "polo shirt" */
    const char *query; /* WebShop's product 'query' field */
    const char *path;  /* product_category below the category root */
    int cat;
    const char *attrs[10];  /* NULL-terminated: the attributes products of this type draw */
    int opt[WS_MAX_OPT];    /* option kinds (index into webshop_optkinds), -1 = none */
    int price_lo, price_hi; /* dollars */
} ws_type;

extern const char *const webshop_cat_names[WS_NCAT]; /* "beauty", ... (the families) */
extern const char *const webshop_cat_roots[WS_NCAT]; /* "Beauty & Personal Care", ... */
extern const ws_type webshop_types[];
extern const int webshop_n_types;
extern const ws_optkind webshop_optkinds[];
extern const int webshop_n_optkinds;
extern const char *const webshop_color_set[]; /* normalize.py's COLOR_SET, NULL-terminated */
int webshop_cat_parse(const char *name);      /* -1 when unknown */

/* ---------------- the BM25 index (webshop_index.c) ---------------- */

typedef struct ws_index {
    int n_docs;
    uint32_t n_terms, hcap;
    uint32_t *slot;     /* hash slot -> term id + 1 (0 = empty) */
    uint32_t *term_off; /* term id -> offset of its text in terms */
    char *terms;        /* NUL-separated term texts */
    uint32_t *post_off; /* n_terms + 1: CSR offsets into post_doc / post_tf */
    uint32_t *post_doc;
    uint16_t *post_tf;
    float *idf;  /* per term: Lucene's log(1 + (N - n + 0.5) / (n + 0.5)) */
    float *norm; /* per doc: k1 * (1 - b + b * dl / avgdl) */
} ws_index;

/* Builds the index of n_docs texts (text(i, ctx) returns doc i). */
int webshop_index_build(ws_index *ix, int n_docs,
                        const char *(*text)(int doc, void *ctx, char *buf, size_t cap), void *ctx,
                        char *err, size_t errlen);
void webshop_index_free(ws_index *ix);
/* Scratch for searches: one float per doc plus a list of touched docs. */
typedef struct ws_search_scratch {
    float *score;
    int *touched;
} ws_search_scratch;
int webshop_scratch_init(ws_search_scratch *s, int n_docs);
void webshop_scratch_free(ws_search_scratch *s);
/* Top `max` docs for the query by BM25 (score desc, doc asc); returns their number. */
int webshop_search(const ws_index *ix, ws_search_scratch *s, const char *query, int *out, int max);
/* The analyzer: lower-cased ASCII letter/digit runs, Lucene's English stop words out,
 * Lucene's EnglishMinimalStemmer on each; calls fn for each term. Returns the count. */
int webshop_analyze(const char *text, void (*fn)(const char *term, size_t len, void *ctx),
                    void *ctx);

/* ---------------- the catalogue (webshop_catalog.c) ---------------- */

typedef struct ws_product {
    char asin[11]; /* "B0" + 8 upper-case letters/digits */
    uint16_t type, brand;
    uint8_t cat, unseen, n_attr, n_opt;
    uint8_t attr[WS_MAX_ATTR]; /* indices into the type's attrs */
    uint8_t n_val[WS_MAX_OPT];
    uint8_t val[WS_MAX_OPT][WS_MAX_VALUES]; /* indices into the option kind's values */
    int price_cents;
    uint32_t title, desc, bullets; /* offsets into the arena; bullets are '\n'-separated */
    uint8_t n_bullets;
} ws_product;

typedef struct ws_catalog {
    uint64_t seed;
    int n;
    ws_product *p;
    char *arena;
    size_t arena_len, arena_cap;
    char brands[256][16];
    int n_brands;
    int *pool[WS_NCAT]
             [2]; /* products of a category that are train/seen [0] or unseen [1] targets */
    int n_pool[WS_NCAT][2];
    ws_index idx;
} ws_catalog;

int webshop_catalog_build(ws_catalog *c, uint64_t seed, int n_products, char *err, size_t errlen);
void webshop_catalog_free(ws_catalog *c);
static inline const char *webshop_title(const ws_catalog *c, int i) {
    return c->arena + c->p[i].title;
}
static inline const char *webshop_desc(const ws_catalog *c, int i) {
    return c->arena + c->p[i].desc;
}
static inline const char *webshop_bullets(const ws_catalog *c, int i) {
    return c->arena + c->p[i].bullets;
}
const char *webshop_attr(const ws_catalog *c, int i, int k);             /* k-th attribute */
const char *webshop_opt_name(const ws_catalog *c, int i, int o);         /* o-th option kind */
const char *webshop_opt_value(const ws_catalog *c, int i, int o, int v); /* v-th value */
/* "Beauty & Personal Care › Hair Care › ..." into buf. */
void webshop_product_category(const ws_catalog *c, int i, char *buf, size_t cap);
/* The title's noun list (brand and product noun phrase: what spaCy's NOUN/PROPN tags give
 * for our vocabulary), lower-case, space-separated, into buf; returns the count. */
int webshop_nouns(const ws_catalog *c, int i, char *buf, size_t cap);

/* ---------------- goals ---------------- */

enum { WS_TEMPLATES_SEEN = 5, WS_TEMPLATES = 8 };

typedef struct ws_goal {
    int target, tmpl;
    int n_attr;
    uint8_t attr[WS_MAX_GOAL_ATTR]; /* indices into the target type's attrs */
    int8_t opt_val[WS_MAX_OPT];     /* value index (into the option kind) per option kind */
    int price_upper;                /* dollars; WS_PRICE_NONE when unbounded */
    char text[WS_TASK_CAP];
} ws_goal;

/* cat_mask: bit c set for each allowed category. */
int webshop_goal_make(const ws_catalog *c, unsigned cat_mask, uint64_t seed, env_split split,
                      ws_goal *g, char *err, size_t errlen);
const char *webshop_goal_attr(const ws_catalog *c, const ws_goal *g, int k);
const char *webshop_goal_opt_value(const ws_catalog *c, const ws_goal *g, int o);
/* The goal's attributes as a list: "a", "a and b", "a, b and c". */
void webshop_put_goal_attrs(seed_sbuf *b, const ws_catalog *c, const ws_goal *g);

/* ---------------- the reward (webshop_reward.c) ---------------- */

typedef struct ws_rprod {
    const char *query, *product_category, *title, *description;
    const char *const *nouns;
    int n_nouns;
    const char *const *attrs;
    int n_attrs;
    const char *const *bullets;
    int n_bullets;
} ws_rprod;

typedef struct ws_rgoal {
    const char *query, *product_category;
    const char *const *nouns;
    int n_nouns;
    const char *const *attrs; /* at least one */
    int n_attrs;
    const char *const *options; /* goal option values */
    int n_options;
    double price_upper; /* > 0 */
} ws_rgoal;

typedef struct ws_score {
    double total, r_type, title_score;
    int query_match, category_match;
    int n_attr_match, n_opt_match, r_price;
    int n_goal_attrs, n_goal_opts;
} ws_score;

/* goal.py's get_reward(purchased, goal, price, options). opt_names/opt_values: the
 * purchased options (name -> value). Fails on a goal without attributes or a price bound
 * <= 0 (goal.py divides by zero / adds None there) and on a missing string. */
int webshop_reward(const ws_rprod *p, const ws_rgoal *g, double price, const char *const *opt_names,
                   const char *const *opt_values, int n_opts, ws_score *out, char *err,
                   size_t errlen);
/* thefuzz's fuzz.token_set_ratio(a, b) (full_process, force_ascii, rounded like Python). */
int webshop_token_set_ratio(const char *a, const char *b);
/* normalize.py's normalize_color: the first COLOR_SET entry found in s, else s itself. */
const char *webshop_normalize_color(const char *s);

/* ---------------- pages and actions (webshop.c) ---------------- */

enum { WS_PAGE_SEARCH, WS_PAGE_RESULTS, WS_PAGE_ITEM, WS_PAGE_SUB, WS_PAGE_DONE };
enum { WS_SUB_DESCRIPTION, WS_SUB_FEATURES, WS_SUB_REVIEWS };

/* What an action did (the oracle reads it). */
enum {
    WS_EV_INVALID, /* not search[...] / click[...] of this page: nothing happened */
    WS_EV_NOOP,    /* click[search]: listed by WebShop, does nothing */
    WS_EV_SEARCH,
    WS_EV_BACK, /* back to search */
    WS_EV_NEXT,
    WS_EV_PREV, /* < prev: results page back, item -> results, sub page -> item */
    WS_EV_ITEM, /* opened a product from the results */
    WS_EV_OPTION,
    WS_EV_SUB, /* description / features / reviews */
    WS_EV_BUY
};

typedef struct ws_event {
    int kind;
    int item;        /* WS_EV_ITEM / WS_EV_BUY: product; else -1 */
    int opt, val;    /* WS_EV_OPTION: option kind slot and value index */
    const char *why; /* WS_EV_INVALID: the reason, a static sentence */
} ws_event;

typedef struct ws_state {
    const ws_catalog *cat;
    const ws_goal *goal;
    ws_search_scratch *scratch;
    int page, sub;
    char keywords[WS_QUERY_CAP];
    int results[WS_RESULTS_MAX], n_results, page_no;
    int item;
    int8_t chosen[WS_MAX_OPT]; /* value index chosen per option slot of item, -1 = none */
    uint8_t chosen_order[WS_MAX_OPT], n_chosen; /* the session's options dict order */
    int done;
    ws_score score;
    char note[192]; /* why the last action was invalid ("" when it was not) */
} ws_state;

void webshop_state_reset(ws_state *s, const ws_catalog *c, const ws_goal *g,
                         ws_search_scratch *scratch);
/* Parses WebShop's `(.+)\[(.+)\]` (re.match): name and argument into the buffers.
 * Returns 0 when the text does not match. */
int webshop_parse_action(const char *action, char *name, size_t name_cap, char *arg,
                         size_t arg_cap);
/* Would webshop_exec do something with this action on the current page? */
int webshop_action_valid(const ws_state *s, const char *action);
/* Runs one action (NULL: an invalid step). Returns ev->kind. */
int webshop_exec(ws_state *s, const char *action, ws_event *ev);
/* The page text (verl-agent's format) into obs and the admissible actions. */
void webshop_render(const ws_state *s, char *obs, size_t cap, char *arena, size_t arena_cap,
                    const char **adm, int *n_adm);
/* Scores buying product `item` with the given option choices (slot -> value, -1 none). */
void webshop_score_purchase(const ws_catalog *c, const ws_goal *g, int item, const int8_t *chosen,
                            const uint8_t *order, int n_chosen, ws_score *out);
/* The expert's next action from the state (privileged: it knows the target). */
int webshop_expert_action(const ws_state *s, char *buf, size_t cap);
/* The words the expert searches first: the product type, the goal's attributes and
 * option values. */
void webshop_expert_query(const ws_catalog *c, const ws_goal *g, char *buf, size_t cap);
/* The query the expert searches: the expert query when it lists the target in the top
 * 50, else the target's title (lower-cased). */
void webshop_expert_search(const ws_state *s, char *q, size_t cap);

/* Config shared by the env and its oracle. */
typedef struct ws_config {
    int catalog_seed, products;
    unsigned cat_mask;
    int reward_win10; /* reward: win10 (10 on a win, else 0, as SEED's WebShop wrapper) */
} ws_config;
int webshop_config(const env_kv *kv, int n_kv, ws_config *cfg, char *err, size_t errlen);

/* ---------------- hindsight (webshop_oracle.c) ---------------- */

/* The env's page state (privileged: the oracle reads the end of the replayed episode). */
const ws_state *webshop_env_state(const env *e);
/* What the trace keeps of each replayed step (env_vtable.trace_record): the step's
 * ws_event (after the reset: WS_EV_NOOP, -1s) and, after a search, the target's rank in
 * its results (-1: not listed, and for every other step). */
typedef struct ws_trace_rec {
    int kind, item, opt, val;
    int target_rank;
} ws_trace_rec;
/* The oracle (env_vtable.oracle): the skill text webshop_oracle.c's header describes. */
int webshop_oracle(const env_trace *tr, env_skill *sk, char *err, size_t errlen);
extern const env_vtable env_webshop_vtable;

#endif
