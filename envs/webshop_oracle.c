/* webshop_oracle.c — the webshop env's rule-based hindsight analyzer (env_vtable.oracle).
 *
 * Contract: webshop_oracle reads the replayed episode (env_replay: each step's event and,
 * after a search, the target's rank in the results; the env at the end holds the target,
 * the purchase and its score) and writes the skill text through the skill builder:
 *   line 1: the episode skill. A success starts "Success:" and gives the workflow that
 *           worked; a failure starts "Failure:" and names what was wrong — no purchase
 *           (never searched / the matching product never listed / listed but not opened
 *           / opened but not bought), or for a purchase: wrong product type, missing
 *           attributes, missing or wrong options, price over the limit — and the rule
 *           that avoids it, plus invalid and repeated actions.
 *   then up to 5 lines "step k: imperative sentence" (action i is step i + 1), in step
 *           order (env_skill_step).
 * Deterministic: the same trace gives the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/webshop.h"
#include "common/util.h"

/* What the replay says, gathered once: the facts every diagnosis below reads. */
typedef struct ws_facts {
    const env_trace *tr;
    const ws_state *st; /* the page state at the end of the episode */
    const ws_catalog *c;
    const ws_goal *g;
    int t;                                 /* the target product */
    int n_invalid, first_invalid;          /* invalid steps, the first one (0: none) */
    int first_search, last_search;         /* steps (0: none) */
    int listed_step, listed_rank;          /* the first search that listed the target */
    int opened_step;                       /* the first step that opened the target */
    int buy_step, bought;                  /* the purchase (bought -1: none) */
    int loop_len, loop_from;               /* the longest run (>= 3) of one action */
    char query[WS_QUERY_CAP];              /* what the expert searches */
    char tasin[11], tprice[32], price[32]; /* the target's asin (lower case), prices */
} ws_facts;

/* The trace record of step k (1..n). */
static const ws_trace_rec *ws_rec(const ws_facts *F, int step) {
    return F->tr->step[step].state;
}

static uint32_t ws_hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; s[i] && i < 256; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h ? h : 1;
}

static uint32_t ws_action_hash(const ws_facts *F, int step) {
    const char *a = F->tr->step[step].action;
    return a ? ws_hash_str(a) : 0;
}

static void ws_lower_copy(const char *s, char *out, size_t cap) {
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++) out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    out[i] = '\0';
}

/* goal.py's test of one goal attribute against a product. */
static int ws_attr_ok(const ws_catalog *c, int item, const char *g) {
    const ws_product *p = &c->p[item];
    for (int k = 0; k < p->n_attr; k++)
        if (webshop_token_set_ratio(webshop_attr(c, item, k), g) > 85) return 1;
    char t[1024];
    ws_lower_copy(webshop_title(c, item), t, sizeof t);
    if (strstr(t, g)) return 1;
    ws_lower_copy(webshop_desc(c, item), t, sizeof t);
    if (strstr(t, g)) return 1;
    ws_lower_copy(webshop_bullets(c, item), t, sizeof t);
    for (char *q = t; *q; q++)
        if (*q == '\n') *q = ' ';
    return strstr(t, g) != NULL;
}

/* Does the chosen value satisfy the goal value (goal.py's option test)? */
static int ws_opt_ok(const char *name, const char *chosen, const char *goal) {
    const char *a = webshop_normalize_color(chosen), *b = webshop_normalize_color(goal);
    if (strcmp(name, "size") == 0) return strcmp(a, b) == 0;
    return webshop_token_set_ratio(b, a) > 85;
}

static const char *ws_type_name(const ws_catalog *c, int i) {
    return webshop_types[c->p[i].type].name;
}

static void ws_price(const ws_catalog *c, int i, char *buf, size_t cap) {
    snprintf(buf, cap, "$%d.%02d", c->p[i].price_cents / 100, c->p[i].price_cents % 100);
}

/* The option clause of the goal: "size '8 fl oz' and scent 'citrus'". */
static void ws_goal_opts(const ws_facts *F, env_skill *sk) {
    for (int o = 0; o < F->c->p[F->t].n_opt; o++)
        env_skill_put(sk, "%s%s '%s'", o ? " and " : "", webshop_opt_name(F->c, F->t, o),
                      webshop_goal_opt_value(F->c, F->g, o));
}

static void ws_collect(const env_trace *tr, ws_facts *F) {
    memset(F, 0, sizeof *F);
    F->tr = tr;
    F->st = webshop_env_state(tr->e);
    F->c = F->st->cat;
    F->g = F->st->goal;
    F->t = F->g->target;
    F->listed_rank = F->bought = -1;
    for (int step = 1; step <= tr->n; step++) {
        const ws_trace_rec *r = ws_rec(F, step);
        switch (r->kind) {
        case WS_EV_INVALID:
            if (!F->n_invalid++) F->first_invalid = step;
            break;
        case WS_EV_SEARCH:
            if (!F->first_search) F->first_search = step;
            F->last_search = step;
            if (r->target_rank >= 0 && !F->listed_step) {
                F->listed_step = step;
                F->listed_rank = r->target_rank;
            }
            break;
        case WS_EV_ITEM:
            if (r->item == F->t && !F->opened_step) F->opened_step = step;
            break;
        case WS_EV_BUY:
            F->buy_step = step;
            F->bought = r->item;
            break;
        default:
            break;
        }
    }
    /* the longest run of one repeated action */
    for (int i = 1; i <= tr->n;) {
        int j = i;
        uint32_t h = ws_action_hash(F, i);
        while (j <= tr->n && h && ws_action_hash(F, j) == h) j++;
        if (j - i > F->loop_len && j - i >= 3) {
            F->loop_len = j - i;
            F->loop_from = i;
        }
        i = j > i ? j : i + 1;
    }
    ws_state probe;
    webshop_state_reset(&probe, F->c, F->g, F->st->scratch);
    webshop_expert_search(&probe, F->query, sizeof F->query);
    ws_lower_copy(F->c->p[F->t].asin, F->tasin, sizeof F->tasin);
    ws_price(F->c, F->t, F->tprice, sizeof F->tprice);
    if (F->bought >= 0) ws_price(F->c, F->bought, F->price, sizeof F->price);
}

static void ws_success(const ws_facts *F, env_skill *sk) {
    const ws_catalog *c = F->c;
    const ws_state *st = F->st;
    int bought = F->bought;
    env_skill_put(sk, "Success: you searched for the %s with the task's key words, opened %s, ",
                  ws_type_name(c, bought), c->p[bought].asin);
    if (c->p[bought].n_opt) {
        env_skill_put(sk, "selected ");
        for (int k = 0; k < st->n_chosen; k++) {
            int o = st->chosen_order[k];
            env_skill_put(sk, "%s%s '%s'", k ? " and " : "", webshop_opt_name(c, bought, o),
                          webshop_opt_value(c, bought, o, st->chosen[o]));
        }
        env_skill_put(sk, ", ");
    }
    env_skill_put(sk,
                  "and bought it for %s in %d steps. Workflow: search[<product type> "
                  "<required attributes>], open the result whose title names the type and "
                  "attributes and whose price is under the limit, click every option the "
                  "task names, then click[buy now].",
                  F->price, F->buy_step);
    if (F->n_invalid || F->loop_len)
        env_skill_put(sk,
                      " %d of your steps were wasted (invalid or repeated actions); go "
                      "straight from the search to the item.",
                      F->n_invalid + (F->loop_len ? F->loop_len - 1 : 0));
    env_skill_step(sk, F->last_search, "search for the product type and its required attributes.");
    for (int step = F->last_search + 1; step <= F->tr->n; step++) {
        const ws_trace_rec *r = ws_rec(F, step);
        if (r->kind == WS_EV_ITEM && r->item == bought)
            env_skill_step(sk, step, "open %s, the %s whose title shows the required attributes.",
                           c->p[bought].asin, ws_type_name(c, bought));
        if (r->kind == WS_EV_OPTION)
            env_skill_step(
                sk, step, "select %s '%s' as the task asks.", webshop_opt_name(c, bought, r->opt),
                webshop_optkinds[webshop_types[c->p[bought].type].opt[r->opt]].values[r->val]);
    }
    env_skill_step(sk, F->buy_step, "click buy now once every required option is selected.");
}

/* No purchase: never searched, the target never listed, listed but not opened, or
 * opened but not bought. */
static void ws_no_purchase(const ws_facts *F, env_skill *sk) {
    const ws_catalog *c = F->c;
    int t = F->t, n = F->tr->n;
    env_skill_put(sk,
                  "Failure: you bought nothing in %d step%s (the episode ends after %d "
                  "steps or at buy now). ",
                  n, n == 1 ? "" : "s", F->tr->e->max_steps);
    if (!F->first_search) {
        env_skill_put(sk,
                      "You never searched. Rule: start with search[<product type> "
                      "<required attributes>], e.g. search[%s].",
                      F->query);
        env_skill_step(sk, 1, "search[%s].", F->query);
    } else if (!F->listed_step) {
        env_skill_put(sk, "No search of yours listed a product that matches the task. Rule: "
                          "search with the product type and the required attributes (");
        webshop_put_goal_attrs(&sk->text, c, F->g);
        env_skill_put(sk, "), e.g. search[%s].", F->query);
        env_skill_step(sk, F->first_search, "search[%s] instead.", F->query);
    } else if (!F->opened_step) {
        env_skill_put(sk,
                      "The matching product %s (%s) was listed on result page %d after "
                      "step %d, but you never opened it. Rule: open the result whose title "
                      "names a %s with ",
                      c->p[t].asin, F->tprice, F->listed_rank / WS_PAGE_SIZE + 1, F->listed_step,
                      ws_type_name(c, t));
        webshop_put_goal_attrs(&sk->text, c, F->g);
        env_skill_put(sk, ", then choose its options and buy it.");
        if (F->listed_rank < WS_PAGE_SIZE)
            env_skill_step(sk, F->listed_step + 1, "click[%s] to open the matching product.",
                           F->tasin);
        else
            env_skill_step(sk, F->listed_step + 1, "click[next >] until %s is shown, then open it.",
                           c->p[t].asin);
    } else {
        env_skill_put(sk,
                      "You opened the matching product %s at step %d but never clicked buy "
                      "now. Rule: on the right item page select ",
                      c->p[t].asin, F->opened_step);
        ws_goal_opts(F, sk);
        env_skill_put(sk, ", then click[buy now] at once; do not keep browsing.");
        if (c->p[t].n_opt)
            env_skill_step(sk, F->opened_step + 1, "click[%s] to select the %s the task asks for.",
                           webshop_goal_opt_value(c, F->g, 0), webshop_opt_name(c, t, 0));
        else
            env_skill_step(sk, F->opened_step + 1, "click[buy now].");
    }
}

/* A purchase that scored below 1: what was wrong with it (type, attributes, options,
 * price), the rule, and the step where it went wrong. */
static void ws_wrong_purchase(const ws_facts *F, env_skill *sk) {
    const ws_catalog *c = F->c;
    const ws_goal *g = F->g;
    const ws_state *st = F->st;
    const ws_score *sc = &st->score;
    int t = F->t, bought = F->bought;
    env_skill_put(sk, "Failure: you bought %s (%s) for %s and scored %.2f, not 1.",
                  c->p[bought].asin, webshop_title(c, bought), F->price, sc->total);
    env_skill_put(sk, " What was wrong:");
    int problems = 0; /* each problem after the first is set off by ';' */
    int wrong_item = bought != t;
    if (sc->r_type < 1.0)
        env_skill_put(sk, "%s it is a %s, but the task asks for a %s (wrong product type)",
                      problems++ ? ";" : "", ws_type_name(c, bought), ws_type_name(c, t));
    int missing = 0, lacks[WS_MAX_GOAL_ATTR];
    for (int k = 0; k < g->n_attr; k++)
        if (!ws_attr_ok(c, bought, webshop_goal_attr(c, g, k))) lacks[missing++] = k;
    if (missing)
        env_skill_put(sk, "%s it lacks the attribute%s ", problems++ ? ";" : "",
                      missing > 1 ? "s" : "");
    for (int k = 0; k < missing; k++)
        env_skill_put(sk, "%s'%s'", k ? (k + 1 == missing ? " and " : ", ") : "",
                      webshop_goal_attr(c, g, lacks[k]));
    /* options, by the goal's option names */
    int opt_fix_value = -1; /* goal option slot to click first */
    int no_kind = 0;        /* the item lacks one of the goal's option kinds */
    for (int o = 0; o < c->p[t].n_opt; o++) {
        const char *n = webshop_opt_name(c, t, o), *v = webshop_goal_opt_value(c, g, o);
        const char *chosen = NULL;
        int has_kind = 0;
        for (int q = 0; q < c->p[bought].n_opt; q++)
            if (strcmp(webshop_opt_name(c, bought, q), n) == 0) {
                has_kind = 1;
                if (st->chosen[q] >= 0) chosen = webshop_opt_value(c, bought, q, st->chosen[q]);
            }
        if (!has_kind) {
            env_skill_put(sk, "%s it has no %s option, so %s '%s' cannot be met",
                          problems++ ? ";" : "", n, n, v);
            no_kind = 1;
        } else if (!chosen) {
            env_skill_put(sk, "%s you never selected %s '%s' (missing option)",
                          problems++ ? ";" : "", n, v);
            if (opt_fix_value < 0) opt_fix_value = o;
        } else if (!ws_opt_ok(n, chosen, v)) {
            env_skill_put(sk, "%s you selected %s '%s' instead of '%s' (wrong option)",
                          problems++ ? ";" : "", n, chosen, v);
            if (opt_fix_value < 0) opt_fix_value = o;
        }
    }
    if (!sc->r_price)
        env_skill_put(sk, "%s its price %s is over the %d.00 dollars limit", problems++ ? ";" : "",
                      F->price, g->price_upper);
    if (!problems) env_skill_put(sk, " the score lost points to goal.py's fuzzy matching");
    env_skill_put(sk, ". Rule: before buying, check that the title names a %s with ",
                  ws_type_name(c, t));
    webshop_put_goal_attrs(&sk->text, c, g);
    if (g->price_upper != WS_PRICE_NONE)
        env_skill_put(sk, " and a price under %d.00 dollars", g->price_upper);
    if (c->p[t].n_opt) {
        env_skill_put(sk, ", and click ");
        ws_goal_opts(F, sk);
        env_skill_put(sk, " before buy now");
    }
    env_skill_put(sk, ".");
    int item_bad = sc->r_type < 1.0 || missing || !sc->r_price || no_kind;
    if (wrong_item && item_bad)
        env_skill_put(sk, " A product that matches is %s (%s, %s)%s.", c->p[t].asin,
                      webshop_title(c, t), F->tprice,
                      F->listed_step ? ", which your search listed" : "");
    /* step lines: where it went wrong */
    if (wrong_item && item_bad) {
        int open_step = 0, src_search = 0;
        for (int step = 1; step <= F->buy_step; step++) {
            const ws_trace_rec *r = ws_rec(F, step);
            if (r->kind == WS_EV_ITEM && r->item == bought) open_step = step;
            if (r->kind == WS_EV_SEARCH && step <= (open_step ? open_step : F->buy_step))
                src_search = step;
        }
        if (src_search && ws_rec(F, src_search)->target_rank < 0)
            env_skill_step(sk, src_search, "search[%s] so the matching product is listed.",
                           F->query);
        else if (open_step)
            env_skill_step(sk, open_step,
                           "open %s instead of %s; its title does not match the task.",
                           c->p[t].asin, c->p[bought].asin);
    } else if (opt_fix_value >= 0) {
        env_skill_step(sk, F->buy_step, "do not buy yet: click[%s] first.",
                       webshop_goal_opt_value(c, g, opt_fix_value));
    }
    env_skill_step(sk, F->buy_step,
                   "click buy now only after the title, price and every option match "
                   "the task.");
}

int webshop_oracle(const env_trace *tr, env_skill *sk, char *err, size_t errlen) {
    ws_facts *F = malloc(sizeof *F);
    if (!F) return seed_errf(err, errlen, "webshop: out of memory in hindsight");
    ws_collect(tr, F);
    if (tr->won)
        ws_success(F, sk);
    else if (F->bought < 0)
        ws_no_purchase(F, sk);
    else
        ws_wrong_purchase(F, sk);
    if (!tr->won && F->n_invalid)
        env_skill_put(sk,
                      " %d of your actions were invalid (not search[...] or a click of the "
                      "page).",
                      F->n_invalid);
    if (!tr->won && F->loop_len)
        env_skill_put(sk,
                      " You repeated the same action %d times from step %d; when an action "
                      "does not help, try another.",
                      F->loop_len, F->loop_from);
    if (!tr->won && F->first_invalid)
        env_skill_step(sk, F->first_invalid,
                       "give one action from the admissible list, such as "
                       "search[<query>] or click[<button>].");
    if (!tr->won && F->loop_len)
        env_skill_step(sk, F->loop_from + 1, "stop repeating that action; do something else.");
    free(F);
    return 0;
}
