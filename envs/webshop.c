/* webshop.c — the built-in "webshop" env (env.h): WebShop's text env over a generated
 * catalogue, with its expert. Pages, clickables and transitions are WebShop's
 * (web_agent_text_env.py SimServer.receive); observations and admissible actions are what
 * verl-agent shows (the " [SEP] " page text after the instruction, each part quoted;
 * "search[<your query>]" where the page has a search bar, then "click[...]" for every
 * button, product link and option value, lower-cased).
 *
 * Contract: env_webshop_vtable. Config keys: max_steps (default 15), catalog_seed
 * (default 1), products (default 5000), categories ("all" or a comma list of beauty,
 * food, fashion, furniture, electronics), reward ("score": WebShop's score in [0, 1] on
 * Buy Now, the default; "win10": 10 on a win and 0 otherwise, as SEED's WebShop wrapper
 * trains). An episode ends on Buy Now or after max_steps; won = score 1. An action that
 * is not search[non-empty] or click[a clickable of this page] (webshop_action_valid), or
 * a NULL action, changes nothing and the observation says why; the actor counts it as an
 * invalid step (penalty). WebShop's own no-op click[search] is listed and valid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/prompt.h"
#include "envs/webshop.h"
#include "common/util.h"

/* ---------------- config ---------------- */

int webshop_config(const env_kv *kv, int n_kv, ws_config *cfg, char *err, size_t errlen) {
    static const char *const known[] = {"catalog_seed", "products", "categories", "reward", NULL};
    if (env_kv_check("webshop", kv, n_kv, known, err, errlen)) return -1;
    memset(cfg, 0, sizeof *cfg);
    if (env_kv_int("webshop", kv, n_kv, "catalog_seed", 1, 0, 2147483647, &cfg->catalog_seed, err,
                   errlen) ||
        env_kv_int("webshop", kv, n_kv, "products", WS_PRODUCTS_DEFAULT,
                   WS_NCAT * 2 * webshop_n_types, 100000, &cfg->products, err, errlen))
        return -1;
    const char *r = env_kv_get(kv, n_kv, "reward");
    if (r && strcmp(r, "score") && strcmp(r, "win10"))
        return seed_errf(err, errlen,
                         "webshop: config key 'reward' has value '%s'; expected score or win10", r);
    cfg->reward_win10 = r && strcmp(r, "win10") == 0;
    if (env_kv_mask("webshop", kv, n_kv, "categories", webshop_cat_parse, (1u << WS_NCAT) - 1,
                    "beauty, food, fashion, furniture, electronics", &cfg->cat_mask, err, errlen))
        return -1;
    return 0;
}

/* ---------------- actions ---------------- */

int webshop_parse_action(const char *action, char *name, size_t name_cap, char *arg,
                         size_t arg_cap) {
    /* re.match(r'(.+)\[(.+)\]'): '.' stops at a newline, group 1 is greedy (the last '['
     * that still has a ']' two or more bytes later), group 2 greedy (the last ']'). */
    size_t line = strcspn(action, "\n");
    long open = -1, close = -1;
    for (long i = (long)line - 1; i >= 1 && open < 0; i--) {
        if (action[i] != '[') continue;
        for (long j = (long)line - 1; j >= i + 2; j--)
            if (action[j] == ']') {
                open = i;
                close = j;
                break;
            }
    }
    if (open < 0) return 0;
    snprintf(name, name_cap, "%.*s", (int)open, action);
    snprintf(arg, arg_cap, "%.*s", (int)(close - open - 1), action + open + 1);
    return (size_t)open < name_cap && (size_t)(close - open - 1) < arg_cap;
}

static void ws_lower(char *s) {
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z') *s = (char)(*s + 32);
}

/* Splits s in place at sep into at most max pieces (no global state, unlike strtok). */
static int ws_split(char *s, char sep, const char **out, int max) {
    int n = 0;
    while (*s && n < max) {
        out[n++] = s;
        char *e = strchr(s, sep);
        if (!e) break;
        *e = '\0';
        s = e + 1;
    }
    return n;
}

static int ws_streq_lower(const char *a, const char *lower) {
    for (; *a && *lower; a++, lower++)
        if ((*a >= 'A' && *a <= 'Z' ? *a + 32 : *a) != *lower) return 0;
    return !*a && !*lower;
}

/* What the action would do on the current page (no change made). */
static int ws_classify(const ws_state *s, const char *action, ws_event *ev, char *query,
                       size_t query_cap) {
    memset(ev, 0, sizeof *ev);
    ev->item = ev->opt = ev->val = -1;
    ev->kind = WS_EV_INVALID;
    if (!action) {
        ev->why = "no action was given (expected search[...] or click[...])";
        return ev->kind;
    }
    if (s->done) {
        ev->why = "the purchase is done";
        return ev->kind;
    }
    if (strlen(action) > WS_ACTION_MAX) {
        ev->why = "the action is longer than 1024 characters";
        return ev->kind;
    }
    char name[WS_ACTION_MAX + 1], arg[WS_ACTION_MAX + 1];
    if (!webshop_parse_action(action, name, sizeof name, arg, sizeof arg)) {
        ev->why = "it is not of the form search[query] or click[button]";
        return ev->kind;
    }
    ws_lower(arg);
    if (strcmp(name, "search") == 0) {
        if (strspn(arg, " \t\r\f\v") == strlen(arg)) {
            ev->why = "the search query is empty";
            return ev->kind;
        }
        if (query) {
            /* keep whole words within the cap */
            size_t n = strlen(arg);
            if (n >= query_cap) {
                n = query_cap - 1;
                while (n > 0 && arg[n] != ' ') n--;
                if (n == 0) n = query_cap - 1;
            }
            memcpy(query, arg, n);
            query[n] = '\0';
        }
        ev->kind = WS_EV_SEARCH;
        return ev->kind;
    }
    if (strcmp(name, "click")) {
        ev->why = "only search[...] and click[...] actions exist";
        return ev->kind;
    }
    const ws_catalog *c = s->cat;
    switch (s->page) {
    case WS_PAGE_SEARCH:
        if (strcmp(arg, "search") == 0) ev->kind = WS_EV_NOOP;
        break;
    case WS_PAGE_RESULTS: {
        if (strcmp(arg, "back to search") == 0) {
            ev->kind = WS_EV_BACK;
        } else if (strcmp(arg, "< prev") == 0 && s->page_no > 1) {
            ev->kind = WS_EV_PREV;
        } else if (strcmp(arg, "next >") == 0 && s->page_no * WS_PAGE_SIZE < s->n_results) {
            ev->kind = WS_EV_NEXT;
        } else {
            int lo = (s->page_no - 1) * WS_PAGE_SIZE,
                hi = SEED_MIN(lo + WS_PAGE_SIZE, s->n_results);
            for (int k = lo; k < hi; k++)
                if (ws_streq_lower(c->p[s->results[k]].asin, arg)) {
                    ev->kind = WS_EV_ITEM;
                    ev->item = s->results[k];
                }
        }
        break;
    }
    case WS_PAGE_ITEM: {
        const ws_product *p = &c->p[s->item];
        if (strcmp(arg, "back to search") == 0) {
            ev->kind = WS_EV_BACK;
        } else if (strcmp(arg, "< prev") == 0) {
            ev->kind = WS_EV_PREV;
        } else if (strcmp(arg, "description") == 0 || strcmp(arg, "features") == 0 ||
                   strcmp(arg, "reviews") == 0) {
            ev->kind = WS_EV_SUB;
            ev->val = arg[0] == 'd'   ? WS_SUB_DESCRIPTION
                      : arg[0] == 'f' ? WS_SUB_FEATURES
                                      : WS_SUB_REVIEWS;
        } else if (strcmp(arg, "buy now") == 0) {
            ev->kind = WS_EV_BUY;
            ev->item = s->item;
        } else {
            /* radio inputs: text_to_clickable keeps the last input with that value */
            for (int o = 0; o < p->n_opt; o++)
                for (int v = 0; v < p->n_val[o]; v++)
                    if (strcmp(webshop_opt_value(c, s->item, o, p->val[o][v]), arg) == 0) {
                        ev->kind = WS_EV_OPTION;
                        ev->opt = o;
                        ev->val = p->val[o][v];
                    }
        }
        break;
    }
    case WS_PAGE_SUB:
        if (strcmp(arg, "back to search") == 0) ev->kind = WS_EV_BACK;
        if (strcmp(arg, "< prev") == 0) ev->kind = WS_EV_PREV;
        break;
    }
    if (ev->kind == WS_EV_INVALID) ev->why = "it is not a clickable of this page";
    return ev->kind;
}

int webshop_action_valid(const ws_state *s, const char *action) {
    ws_event ev;
    return ws_classify(s, action, &ev, NULL, 0) != WS_EV_INVALID;
}

void webshop_state_reset(ws_state *s, const ws_catalog *c, const ws_goal *g,
                         ws_search_scratch *scratch) {
    memset(s, 0, sizeof *s);
    s->cat = c;
    s->goal = g;
    s->scratch = scratch;
    s->page = WS_PAGE_SEARCH;
    s->item = -1;
    s->chosen[0] = s->chosen[1] = -1;
}

static void ws_clear_options(ws_state *s) {
    s->chosen[0] = s->chosen[1] = -1;
    s->n_chosen = 0;
}

void webshop_score_purchase(const ws_catalog *c, const ws_goal *g, int item, const int8_t *chosen,
                            const uint8_t *order, int n_chosen, ws_score *out) {
    const ws_product *p = &c->p[item], *t = &c->p[g->target];
    char pcat[256], gcat[256], pn[128], gn[128];
    webshop_product_category(c, item, pcat, sizeof pcat);
    webshop_product_category(c, g->target, gcat, sizeof gcat);
    webshop_nouns(c, item, pn, sizeof pn);
    webshop_nouns(c, g->target, gn, sizeof gn);
    const char *pnl[8], *gnl[8];
    int npn = ws_split(pn, ' ', pnl, 8), ngn = ws_split(gn, ' ', gnl, 8);
    const char *attrs[WS_MAX_ATTR], *gattrs[WS_MAX_GOAL_ATTR], *gopts[WS_MAX_OPT];
    for (int k = 0; k < p->n_attr; k++) attrs[k] = webshop_attr(c, item, k);
    for (int k = 0; k < g->n_attr; k++) gattrs[k] = webshop_goal_attr(c, g, k);
    for (int o = 0; o < t->n_opt; o++) gopts[o] = webshop_goal_opt_value(c, g, o);
    /* bullets are stored '\n'-separated */
    char bul[1024];
    snprintf(bul, sizeof bul, "%s", webshop_bullets(c, item));
    const char *bl[WS_MAX_ATTR + 1];
    int nb = ws_split(bul, '\n', bl, WS_MAX_ATTR + 1);
    const char *on[WS_MAX_OPT], *ov[WS_MAX_OPT];
    int no = 0;
    for (int k = 0; k < n_chosen; k++) {
        int o = order[k];
        if (chosen[o] < 0) continue;
        on[no] = webshop_opt_name(c, item, o);
        ov[no++] = webshop_opt_value(c, item, o, chosen[o]);
    }
    const ws_type *pt = &webshop_types[p->type], *gt = &webshop_types[t->type];
    ws_rprod rp = {
        pt->query, pcat, webshop_title(c, item), webshop_desc(c, item), pnl, npn, attrs, p->n_attr,
        bl,        nb};
    ws_rgoal rg = {
        gt->query, gcat, gnl, ngn, gattrs, g->n_attr, gopts, t->n_opt, (double)g->price_upper};
    char err[SEED_ERRLEN];
    if (webshop_reward(&rp, &rg, p->price_cents / 100.0, on, ov, no, out, err, sizeof err))
        memset(out, 0, sizeof *out); /* cannot happen: a goal has attributes and a bound */
}

int webshop_exec(ws_state *s, const char *action, ws_event *ev) {
    char query[WS_QUERY_CAP];
    s->note[0] = '\0';
    switch (ws_classify(s, action, ev, query, sizeof query)) {
    case WS_EV_INVALID: {
        char shown[64];
        size_t n = action ? strcspn(action, "\n") : 0;
        snprintf(shown, sizeof shown, "%.*s%s", (int)SEED_MIN(n, 48), action ? action : "",
                 n > 48 ? "..." : "");
        if (action)
            snprintf(s->note, sizeof s->note, "Invalid action '%s': %s.", shown, ev->why);
        else
            snprintf(s->note, sizeof s->note, "Invalid action: %s.", ev->why);
        break;
    }
    case WS_EV_NOOP:
        break;
    case WS_EV_SEARCH:
        snprintf(s->keywords, sizeof s->keywords, "%s", query);
        s->n_results =
            webshop_search(&s->cat->idx, s->scratch, s->keywords, s->results, WS_RESULTS_MAX);
        s->page_no = 1;
        s->page = WS_PAGE_RESULTS;
        s->item = -1;
        ws_clear_options(s);
        break;
    case WS_EV_BACK:
        s->page = WS_PAGE_SEARCH;
        s->keywords[0] = '\0';
        s->n_results = 0;
        s->page_no = 0;
        s->item = -1;
        ws_clear_options(s);
        break;
    case WS_EV_NEXT:
        s->page_no++;
        break;
    case WS_EV_PREV:
        if (s->page == WS_PAGE_RESULTS) {
            s->page_no--;
        } else if (s->page == WS_PAGE_ITEM) { /* back to the results: search_results again */
            s->page = WS_PAGE_RESULTS;
            s->item = -1;
            ws_clear_options(s);
        } else {
            s->page = WS_PAGE_ITEM;
        }
        break;
    case WS_EV_ITEM:
        s->page = WS_PAGE_ITEM;
        s->item = ev->item;
        break;
    case WS_EV_OPTION:
        if (s->chosen[ev->opt] < 0) s->chosen_order[s->n_chosen++] = (uint8_t)ev->opt;
        s->chosen[ev->opt] = (int8_t)ev->val;
        break;
    case WS_EV_SUB:
        s->page = WS_PAGE_SUB;
        s->sub = ev->val;
        break;
    case WS_EV_BUY:
        webshop_score_purchase(s->cat, s->goal, s->item, s->chosen, s->chosen_order, s->n_chosen,
                               &s->score);
        s->page = WS_PAGE_DONE;
        s->done = 1;
        break;
    }
    return ev->kind;
}

/* ---------------- rendering ---------------- */

typedef struct ws_adm {
    char *arena;
    size_t cap, len;
    const char **adm;
    int n;
} ws_adm;

static void ws_adm_add(ws_adm *a, const char *fmt, const char *s) {
    if (a->n >= WS_MAX_ADM) return;
    int n = snprintf(a->arena + a->len, a->cap - a->len, fmt, s);
    if (n < 0 || (size_t)n >= a->cap - a->len) return;
    a->adm[a->n++] = a->arena + a->len;
    for (char *q = a->arena + a->len; *q; q++)
        if (*q >= 'A' && *q <= 'Z') *q = (char)(*q + 32);
    a->len += (size_t)n + 1;
}

static void ws_part(seed_sbuf *b, int *first, const char *s) {
    seed_sbuf_appendf(b, "%s'%s'", *first ? "" : " [SEP] ", s);
    *first = 0;
}

void webshop_render(const ws_state *s, char *obs, size_t cap, char *arena, size_t arena_cap,
                    const char **adm, int *n_adm) {
    seed_sbuf b;
    seed_sbuf_init_fixed(&b, obs, cap);
    ws_adm a = {arena, arena_cap, 0, adm, 0};
    const ws_catalog *c = s->cat;
    int first = 1;
    char tmp[256];
    if (s->note[0]) seed_sbuf_appendf(&b, "%s Nothing happened; the page is unchanged: ", s->note);
    switch (s->page) {
    case WS_PAGE_SEARCH:
        ws_part(&b, &first, "Search");
        ws_adm_add(&a, "%s", "search[<your query>]");
        ws_adm_add(&a, "click[%s]", "search");
        break;
    case WS_PAGE_RESULTS: {
        ws_part(&b, &first, "Back to Search");
        snprintf(tmp, sizeof tmp, "Page %d (Total results: %d)", s->page_no, s->n_results);
        ws_part(&b, &first, tmp);
        ws_adm_add(&a, "click[%s]", "Back to Search");
        if (s->page_no > 1) {
            ws_part(&b, &first, "< Prev");
            ws_adm_add(&a, "click[%s]", "< Prev");
        }
        if (s->page_no * WS_PAGE_SIZE < s->n_results) {
            ws_part(&b, &first, "Next >");
            ws_adm_add(&a, "click[%s]", "Next >");
        }
        int lo = (s->page_no - 1) * WS_PAGE_SIZE, hi = SEED_MIN(lo + WS_PAGE_SIZE, s->n_results);
        for (int k = lo; k < hi; k++) {
            int d = s->results[k];
            ws_part(&b, &first, c->p[d].asin);
            ws_part(&b, &first, webshop_title(c, d));
            snprintf(tmp, sizeof tmp, "$%d.%02d", c->p[d].price_cents / 100,
                     c->p[d].price_cents % 100);
            ws_part(&b, &first, tmp);
            ws_adm_add(&a, "click[%s]", c->p[d].asin);
        }
        break;
    }
    case WS_PAGE_ITEM: {
        const ws_product *p = &c->p[s->item];
        ws_part(&b, &first, "Back to Search");
        ws_part(&b, &first, "< Prev");
        for (int o = 0; o < p->n_opt; o++) {
            ws_part(&b, &first, webshop_opt_name(c, s->item, o));
            for (int v = 0; v < p->n_val[o]; v++)
                ws_part(&b, &first, webshop_opt_value(c, s->item, o, p->val[o][v]));
        }
        ws_part(&b, &first, webshop_title(c, s->item));
        snprintf(tmp, sizeof tmp, "Price: $%d.%02d", p->price_cents / 100, p->price_cents % 100);
        ws_part(&b, &first, tmp);
        ws_part(&b, &first, "Rating: N.A.");
        static const char *const buttons[] = {"Description", "Features", "Reviews", "Buy Now"};
        for (int k = 0; k < 4; k++) ws_part(&b, &first, buttons[k]);
        ws_adm_add(&a, "click[%s]", "Back to Search");
        ws_adm_add(&a, "click[%s]", "< Prev");
        for (int k = 0; k < 4; k++) ws_adm_add(&a, "click[%s]", buttons[k]);
        for (int o = 0; o < p->n_opt; o++)
            for (int v = 0; v < p->n_val[o]; v++)
                ws_adm_add(&a, "click[%s]", webshop_opt_value(c, s->item, o, p->val[o][v]));
        break;
    }
    case WS_PAGE_SUB: {
        ws_part(&b, &first, "Back to Search");
        ws_part(&b, &first, "< Prev");
        if (s->sub == WS_SUB_DESCRIPTION) {
            ws_part(&b, &first, webshop_desc(c, s->item));
        } else if (s->sub == WS_SUB_FEATURES) {
            const char *q = webshop_bullets(c, s->item);
            while (*q) {
                size_t n = strcspn(q, "\n");
                snprintf(tmp, sizeof tmp, "%.*s", (int)n, q);
                ws_part(&b, &first, tmp);
                q += n + (q[n] == '\n');
            }
        }
        ws_adm_add(&a, "click[%s]", "Back to Search");
        ws_adm_add(&a, "click[%s]", "< Prev");
        break;
    }
    case WS_PAGE_DONE:
        ws_part(&b, &first, "Thank you for shopping with us!");
        ws_part(&b, &first, "Purchased");
        ws_part(&b, &first, c->p[s->item].asin);
        snprintf(tmp, sizeof tmp, "%.2f", s->score.total);
        ws_part(&b, &first, "Your score (min 0.0, max 1.0)");
        ws_part(&b, &first, tmp);
        break;
    }
    *n_adm = a.n;
}

/* ---------------- expert ---------------- */

void webshop_expert_query(const ws_catalog *c, const ws_goal *g, char *buf, size_t cap) {
    seed_sbuf b;
    seed_sbuf_init_fixed(&b, buf, cap);
    seed_sbuf_puts(&b, webshop_types[c->p[g->target].type].name);
    for (int k = 0; k < g->n_attr; k++) seed_sbuf_cats(&b, " ", webshop_goal_attr(c, g, k), NULL);
    for (int o = 0; o < c->p[g->target].n_opt; o++)
        seed_sbuf_cats(&b, " ", webshop_goal_opt_value(c, g, o), NULL);
}

static int ws_rank(const int *res, int n, int target) {
    for (int k = 0; k < n; k++)
        if (res[k] == target) return k;
    return -1;
}

/* The query the expert uses: the instruction's key words when they find the target in
 * the top 50, else the target's title. */
void webshop_expert_search(const ws_state *s, char *q, size_t cap) {
    int res[WS_RESULTS_MAX];
    webshop_expert_query(s->cat, s->goal, q, cap);
    int n = webshop_search(&s->cat->idx, s->scratch, q, res, WS_RESULTS_MAX);
    if (ws_rank(res, n, s->goal->target) >= 0) return;
    snprintf(q, cap, "%s", webshop_title(s->cat, s->goal->target));
    ws_lower(q);
}

int webshop_expert_action(const ws_state *s, char *buf, size_t cap) {
    const ws_catalog *c = s->cat;
    const ws_goal *g = s->goal;
    char q[WS_QUERY_CAP];
    int t = g->target;
    if (s->done) return -1;
    switch (s->page) {
    case WS_PAGE_SEARCH:
        webshop_expert_search(s, q, sizeof q);
        snprintf(buf, cap, "search[%s]", q);
        return 0;
    case WS_PAGE_RESULTS: {
        int pos = ws_rank(s->results, s->n_results, t);
        if (pos < 0) {
            webshop_expert_search(s, q, sizeof q);
            snprintf(buf, cap, "search[%s]", q);
        } else if (pos / WS_PAGE_SIZE + 1 == s->page_no) {
            snprintf(buf, cap, "click[%s]", c->p[t].asin);
            ws_lower(buf);
        } else {
            snprintf(buf, cap, "click[%s]",
                     pos / WS_PAGE_SIZE + 1 > s->page_no ? "next >" : "< prev");
        }
        return 0;
    }
    case WS_PAGE_ITEM:
        if (s->item != t) {
            if (ws_rank(s->results, s->n_results, t) >= 0) {
                snprintf(buf, cap, "click[< prev]");
            } else {
                webshop_expert_search(s, q, sizeof q);
                snprintf(buf, cap, "search[%s]", q);
            }
            return 0;
        }
        for (int o = 0; o < c->p[t].n_opt; o++)
            if (s->chosen[o] != g->opt_val[o]) {
                snprintf(buf, cap, "click[%s]", webshop_goal_opt_value(c, g, o));
                return 0;
            }
        snprintf(buf, cap, "click[buy now]");
        return 0;
    case WS_PAGE_SUB:
        snprintf(buf, cap, "click[< prev]");
        return 0;
    }
    return -1;
}

/* ---------------- the env ---------------- */

typedef struct ws_env {
    env base;
    ws_config cfg;
    ws_catalog cat;
    ws_search_scratch scratch;
    ws_goal goal;
    ws_state st;
    char obs[WS_OBS_CAP];
    char adm_arena[WS_ADM_ARENA];
    const char *adm[WS_MAX_ADM];
    int n_adm;
    char info[192];
    ws_event ev; /* what the last step did (the hindsight trace reads it) */
} ws_env;

static int ws_create(env **out, const env_kv *kv, int n_kv, char *err, size_t errlen) {
    ws_config cfg;
    if (webshop_config(kv, n_kv, &cfg, err, errlen)) return -1;
    ws_env *e = calloc(1, sizeof *e);
    if (!e) return seed_errf(err, errlen, "webshop: out of memory");
    e->cfg = cfg;
    if (webshop_catalog_build(&e->cat, (uint64_t)cfg.catalog_seed, cfg.products, err, errlen)) {
        free(e);
        return -1;
    }
    if (webshop_scratch_init(&e->scratch, e->cat.n)) {
        webshop_catalog_free(&e->cat);
        free(e);
        return seed_errf(err, errlen, "webshop: out of memory");
    }
    e->base.vt = &env_webshop_vtable;
    *out = &e->base;
    return 0;
}

static void ws_destroy(env *base) {
    ws_env *e = (ws_env *)base;
    webshop_scratch_free(&e->scratch);
    webshop_catalog_free(&e->cat);
    free(e);
}

static void ws_fill(ws_env *e, env_obs *obs, float reward) {
    webshop_render(&e->st, e->obs, sizeof e->obs, e->adm_arena, sizeof e->adm_arena, e->adm,
                   &e->n_adm);
    obs->task = e->goal.text;
    obs->observation = e->obs;
    obs->n_admissible = e->n_adm;
    obs->admissible = e->adm;
    obs->reward = reward;
    obs->done = e->st.done;
    obs->won = e->st.done && e->st.score.total == 1.0;
    obs->family = webshop_cat_names[e->cat.p[e->goal.target].cat];
    obs->info = e->info;
}

static int ws_reset(env *base, uint64_t seed, env_split split, env_obs *obs, char *err,
                    size_t errlen) {
    ws_env *e = (ws_env *)base;
    if (webshop_goal_make(&e->cat, e->cfg.cat_mask, seed, split, &e->goal, err, errlen)) return -1;
    webshop_state_reset(&e->st, &e->cat, &e->goal, &e->scratch);
    e->ev = (ws_event){.kind = WS_EV_NOOP, .item = -1, .opt = -1, .val = -1};
    e->info[0] = '\0';
    ws_fill(e, obs, 0.0f);
    return 0;
}

static int ws_step(env *base, const char *action, env_obs *obs, char *err, size_t errlen) {
    ws_env *e = (ws_env *)base;
    if (e->st.done)
        return seed_errf(err, errlen, "webshop: step after the purchase; call reset first");
    float reward = 0.0f;
    if (webshop_exec(&e->st, action, &e->ev) == WS_EV_BUY) {
        const ws_score *sc = &e->st.score;
        int won = sc->total == 1.0;
        reward = e->cfg.reward_win10 ? (won ? 10.0f : 0.0f) : (float)sc->total;
        snprintf(e->info, sizeof e->info,
                 "score=%.4f r_type=%.2f attributes=%d/%d options=%d/%d price=%d", sc->total,
                 sc->r_type, sc->n_attr_match, sc->n_goal_attrs, sc->n_opt_match, sc->n_goal_opts,
                 sc->r_price);
    }
    ws_fill(e, obs, reward);
    return 0;
}

static int ws_expert(env *base, char *buf, size_t buflen, char *err, size_t errlen) {
    ws_env *e = (ws_env *)base;
    if (webshop_expert_action(&e->st, buf, buflen))
        return seed_errf(err, errlen, "webshop: no expert action, the episode has ended");
    return 0;
}

static int ws_action_valid(const env *base, const char *action) {
    return webshop_action_valid(&((const ws_env *)base)->st, action);
}

const ws_state *webshop_env_state(const env *base) {
    return &((const ws_env *)base)->st;
}

/* After each replayed step: what the step did and, after a search, where the target
 * ranks in its results (the oracle's "listed" facts). */
static void ws_trace_record(env *base, void *state) {
    const ws_env *e = (const ws_env *)base;
    ws_trace_rec *r = state;
    r->kind = e->ev.kind;
    r->item = e->ev.item;
    r->opt = e->ev.opt;
    r->val = e->ev.val;
    r->target_rank =
        e->ev.kind == WS_EV_SEARCH ? ws_rank(e->st.results, e->st.n_results, e->goal.target) : -1;
}

const env_vtable env_webshop_vtable = {
    .name = "webshop",
    .instructions = "You are an expert autonomous agent operating in the WebShop e\xe2\x80\x91"
                    "commerce "
                    "environment.",
    .create = ws_create,
    .destroy = ws_destroy,
    .reset = ws_reset,
    .step = ws_step,
    .expert = ws_expert,
    .max_steps_default = 15,
    .prompt_style = &env_prompt_style_webshop,
    .action_valid = ws_action_valid,
    .trace_size = sizeof(ws_trace_rec),
    .trace_record = ws_trace_record,
    .oracle = webshop_oracle,
};
