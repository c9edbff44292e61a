/* webshop_oracle.c — the webshop env's rule-based hindsight analyzer.
 *
 * Contract: webshop_hindsight rebuilds the catalogue and the task from (config, seed,
 * split), replays the episode's actions (NULL = a step without a valid action) until the
 * purchase or the last action, reads the privileged state (the target product, what
 * every search listed) and writes the skill text:
 *   line 1: the episode skill. A success starts "Success:" and gives the workflow that
 *           worked; a failure starts "Failure:" and names what was wrong — no purchase
 *           (never searched / the matching product never listed / listed but not opened
 *           / opened but not bought), or for a purchase: wrong product type, missing
 *           attributes, missing or wrong options, price over the limit — and the rule
 *           that avoids it, plus invalid and repeated actions.
 *   then up to 5 lines "step k: imperative sentence" (action i is step i + 1), in step
 *           order.
 * Deterministic: the same inputs give the same bytes. Fails when the config is bad, the
 * task cannot be built, or the text does not fit in skill_len. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/webshop.h"
#include "common/util.h"

enum { WS_MAX_REPLAY = 1000, WS_MAX_LINES = 5 };

typedef struct ws_rec {
    ws_event ev;
    int page_before, item_before;
    int target_rank; /* after a search: rank of the target in the results, -1 = absent */
    uint32_t hash;   /* of the action text, 0 for NULL */
} ws_rec;

typedef struct ws_oracle {
    ws_catalog cat;
    ws_search_scratch scratch;
    ws_goal goal;
    ws_state st;
    ws_rec rec[WS_MAX_REPLAY];
    int n;
    char lines[WS_MAX_LINES][200];
    int line_step[WS_MAX_LINES], n_lines;
} ws_oracle;

static void ws_line(ws_oracle *O, int step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ws_line(ws_oracle *O, int step, const char *fmt, ...) {
    /* a line names a step of this episode: the analyzer splices it into that step */
    if (O->n_lines >= WS_MAX_LINES || step < 1 || step > O->n) return;
    for (int i = 0; i < O->n_lines; i++)
        if (O->line_step[i] == step) return; /* one line per step */
    char body[180];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(O->lines[O->n_lines], sizeof O->lines[0], "step %d: %s", step, body);
    O->line_step[O->n_lines++] = step;
}

static uint32_t ws_hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; s[i] && i < 256; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h ? h : 1;
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

static void ws_lower_asin(const ws_catalog *c, int i, char *buf) {
    ws_lower_copy(c->p[i].asin, buf, 11);
}

/* The option clause of the goal: "size '8 fl oz' and scent 'citrus'". */
static void ws_goal_opts(const ws_oracle *O, env_text *b) {
    const ws_catalog *c = &O->cat;
    int t = O->goal.target;
    for (int o = 0; o < c->p[t].n_opt; o++)
        env_text_put(b, "%s%s '%s'", o ? " and " : "", webshop_opt_name(c, t, o),
                     webshop_goal_opt_value(c, &O->goal, o));
}

static void ws_goal_attrs(const ws_oracle *O, env_text *b) {
    for (int k = 0; k < O->goal.n_attr; k++)
        env_text_put(b, "%s%s",
                     k == 0                    ? ""
                     : k + 1 == O->goal.n_attr ? " and "
                                               : ", ",
                     webshop_goal_attr(&O->cat, &O->goal, k));
}

int webshop_hindsight(const env_kv *kv, int n_kv, uint64_t seed, env_split split,
                      const char *const *actions, int n_actions, char *skill, size_t skill_len,
                      char *err, size_t errlen) {
    if (!skill || skill_len == 0) return seed_errf(err, errlen, "webshop: no skill buffer");
    if (n_actions < 0 || (n_actions > 0 && !actions))
        return seed_errf(err, errlen, "webshop: hindsight needs the episode's actions");
    ws_config cfg;
    int max_steps;
    if (webshop_config(kv, n_kv, &cfg, err, errlen) ||
        env_kv_int("webshop", kv, n_kv, "max_steps", env_webshop_vtable.max_steps_default, 1,
                   1000000, &max_steps, err, errlen))
        return -1;
    ws_oracle *O = calloc(1, sizeof *O);
    if (!O) return seed_errf(err, errlen, "webshop: out of memory");
    int rc = -1;
    if (webshop_catalog_build(&O->cat, (uint64_t)cfg.catalog_seed, cfg.products, err, errlen)) {
        free(O);
        return -1;
    }
    if (webshop_scratch_init(&O->scratch, O->cat.n)) {
        seed_errf(err, errlen, "webshop: out of memory");
        goto out;
    }
    if (webshop_goal_make(&O->cat, cfg.cat_mask, seed, split, &O->goal, err, errlen)) goto out;
    webshop_state_reset(&O->st, &O->cat, &O->goal, &O->scratch);
    const ws_catalog *c = &O->cat;
    const ws_goal *g = &O->goal;
    int t = g->target;

    /* replay */
    int n_invalid = 0, first_invalid = 0, listed_step = 0, listed_rank = -1, opened_step = 0;
    int last_search = 0, buy_step = 0, bought = -1, first_search = 0;
    for (int i = 0; i < n_actions && i < WS_MAX_REPLAY && !O->st.done; i++) {
        ws_rec *r = &O->rec[O->n++];
        r->page_before = O->st.page;
        r->item_before = O->st.item;
        r->target_rank = -1;
        r->hash = actions[i] ? ws_hash_str(actions[i]) : 0;
        webshop_exec(&O->st, actions[i], &r->ev);
        int step = i + 1;
        switch (r->ev.kind) {
        case WS_EV_INVALID:
            if (!n_invalid++) first_invalid = step;
            break;
        case WS_EV_SEARCH:
            for (int k = 0; k < O->st.n_results; k++)
                if (O->st.results[k] == t) r->target_rank = k;
            if (!first_search) first_search = step;
            last_search = step;
            if (r->target_rank >= 0 && !listed_step) {
                listed_step = step;
                listed_rank = r->target_rank;
            }
            break;
        case WS_EV_ITEM:
            if (r->ev.item == t && !opened_step) opened_step = step;
            break;
        case WS_EV_BUY:
            buy_step = step;
            bought = r->ev.item;
            break;
        default:
            break;
        }
    }
    /* the longest run of one repeated action */
    int loop_len = 0, loop_from = 0;
    for (int i = 0; i < O->n;) {
        int j = i;
        while (j < O->n && O->rec[j].hash == O->rec[i].hash && O->rec[i].hash) j++;
        if (j - i > loop_len && j - i >= 3) {
            loop_len = j - i;
            loop_from = i + 1;
        }
        i = j > i ? j : i + 1;
    }

    char query[WS_QUERY_CAP], asin[11], tasin[11], price[32], tprice[32];
    {
        ws_state probe;
        webshop_state_reset(&probe, c, g, &O->scratch);
        webshop_expert_search(&probe, query, sizeof query);
    }
    ws_lower_asin(c, t, tasin);
    ws_price(c, t, tprice, sizeof tprice);
    char *head = malloc(4096);
    if (!head) {
        seed_errf(err, errlen, "webshop: out of memory");
        goto out;
    }
    env_text h = {head, 4096, 0, 0};
    int won = O->st.done && O->st.score.total == 1.0;
    if (won) {
        env_text_put(&h, "Success: you searched for the %s with the task's key words, opened %s, ",
                     ws_type_name(c, bought), c->p[bought].asin);
        int n_opt = c->p[bought].n_opt;
        if (n_opt) {
            env_text_put(&h, "selected ");
            for (int k = 0; k < O->st.n_chosen; k++) {
                int o = O->st.chosen_order[k];
                env_text_put(&h, "%s%s '%s'", k ? " and " : "", webshop_opt_name(c, bought, o),
                             webshop_opt_value(c, bought, o, O->st.chosen[o]));
            }
            env_text_put(&h, ", ");
        }
        ws_price(c, bought, price, sizeof price);
        env_text_put(&h,
                     "and bought it for %s in %d steps. Workflow: search[<product type> "
                     "<required attributes>], open the result whose title names the type and "
                     "attributes and whose price is under the limit, click every option the "
                     "task names, then click[buy now].",
                     price, buy_step);
        if (n_invalid || loop_len)
            env_text_put(&h,
                         " %d of your steps were wasted (invalid or repeated actions); go "
                         "straight from the search to the item.",
                         n_invalid + (loop_len ? loop_len - 1 : 0));
        ws_line(O, last_search, "search for the product type and its required attributes.");
        for (int i = last_search; i < O->n; i++) {
            const ws_rec *r = &O->rec[i];
            if (r->ev.kind == WS_EV_ITEM && r->ev.item == bought)
                ws_line(O, i + 1, "open %s, the %s whose title shows the required attributes.",
                        c->p[bought].asin, ws_type_name(c, bought));
            if (r->ev.kind == WS_EV_OPTION)
                ws_line(O, i + 1, "select %s '%s' as the task asks.",
                        webshop_opt_name(c, bought, r->ev.opt),
                        webshop_optkinds[webshop_types[c->p[bought].type].opt[r->ev.opt]]
                            .values[r->ev.val]);
        }
        ws_line(O, buy_step, "click buy now once every required option is selected.");
    } else if (bought < 0) {
        env_text_put(&h,
                     "Failure: you bought nothing in %d step%s (the episode ends after %d "
                     "steps or at buy now). ",
                     O->n, O->n == 1 ? "" : "s", max_steps);
        if (!first_search) {
            env_text_put(&h,
                         "You never searched. Rule: start with search[<product type> "
                         "<required attributes>], e.g. search[%s].",
                         query);
            ws_line(O, 1, "search[%s].", query);
        } else if (!listed_step) {
            env_text_put(&h, "No search of yours listed a product that matches the task. Rule: "
                             "search with the product type and the required attributes (");
            ws_goal_attrs(O, &h);
            env_text_put(&h, "), e.g. search[%s].", query);
            ws_line(O, first_search, "search[%s] instead.", query);
        } else if (!opened_step) {
            env_text_put(&h,
                         "The matching product %s (%s) was listed on result page %d after "
                         "step %d, but you never opened it. Rule: open the result whose title "
                         "names a %s with ",
                         c->p[t].asin, tprice, listed_rank / WS_PAGE_SIZE + 1, listed_step,
                         ws_type_name(c, t));
            ws_goal_attrs(O, &h);
            env_text_put(&h, ", then choose its options and buy it.");
            if (listed_rank < WS_PAGE_SIZE)
                ws_line(O, listed_step + 1, "click[%s] to open the matching product.", tasin);
            else
                ws_line(O, listed_step + 1, "click[next >] until %s is shown, then open it.",
                        c->p[t].asin);
        } else {
            env_text_put(&h,
                         "You opened the matching product %s at step %d but never clicked buy "
                         "now. Rule: on the right item page select ",
                         c->p[t].asin, opened_step);
            ws_goal_opts(O, &h);
            env_text_put(&h, ", then click[buy now] at once; do not keep browsing.");
            int o0 = c->p[t].n_opt ? 0 : -1;
            if (o0 >= 0)
                ws_line(O, opened_step + 1, "click[%s] to select the %s the task asks for.",
                        webshop_goal_opt_value(c, g, 0), webshop_opt_name(c, t, 0));
            else
                ws_line(O, opened_step + 1, "click[buy now].");
        }
    } else {
        ws_price(c, bought, price, sizeof price);
        ws_lower_asin(c, bought, asin);
        const ws_score *sc = &O->st.score;
        env_text_put(&h, "Failure: you bought %s (%s) for %s and scored %.2f, not 1.",
                     c->p[bought].asin, webshop_title(c, bought), price, sc->total);
        env_text_put(&h, " What was wrong:");
        int problems = 0;
        int wrong_item = bought != t;
        /* type */
        if (sc->r_type < 1.0) {
            env_text_put(&h, " it is a %s, but the task asks for a %s (wrong product type);",
                         ws_type_name(c, bought), ws_type_name(c, t));
            problems++;
        }
        /* attributes */
        int missing = 0, lacks[WS_MAX_GOAL_ATTR];
        for (int k = 0; k < g->n_attr; k++)
            if (!ws_attr_ok(c, bought, webshop_goal_attr(c, g, k))) lacks[missing++] = k;
        for (int k = 0; k < missing; k++)
            env_text_put(
                &h, "%s'%s'",
                k ? (k + 1 == missing ? " and " : ", ")
                  : (missing > 1 ? " it lacks the attributes " : " it lacks the attribute "),
                webshop_goal_attr(c, g, lacks[k]));
        if (missing) env_text_put(&h, ";");
        problems += missing > 0;
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
                    if (O->st.chosen[q] >= 0)
                        chosen = webshop_opt_value(c, bought, q, O->st.chosen[q]);
                }
            if (!has_kind) {
                env_text_put(&h, " it has no %s option, so %s '%s' cannot be met;", n, n, v);
                problems++;
                no_kind = 1;
            } else if (!chosen) {
                env_text_put(&h, " you never selected %s '%s' (missing option);", n, v);
                problems++;
                if (opt_fix_value < 0) opt_fix_value = o;
            } else if (!ws_opt_ok(n, chosen, v)) {
                env_text_put(&h, " you selected %s '%s' instead of '%s' (wrong option);", n, chosen,
                             v);
                problems++;
                if (opt_fix_value < 0) opt_fix_value = o;
            }
        }
        if (!sc->r_price) {
            env_text_put(&h, " its price %s is over the %d.00 dollars limit;", price,
                         g->price_upper);
            problems++;
        }
        if (!problems) env_text_put(&h, " the score lost points to goal.py's fuzzy matching;");
        if (h.len && head[h.len - 1] == ';') head[--h.len] = '\0';
        env_text_put(&h, ". Rule: before buying, check that the title names a %s with ",
                     ws_type_name(c, t));
        ws_goal_attrs(O, &h);
        if (g->price_upper != WS_PRICE_NONE)
            env_text_put(&h, " and a price under %d.00 dollars", g->price_upper);
        if (c->p[t].n_opt) {
            env_text_put(&h, ", and click ");
            ws_goal_opts(O, &h);
            env_text_put(&h, " before buy now");
        }
        env_text_put(&h, ".");
        int item_bad = sc->r_type < 1.0 || missing || !sc->r_price || no_kind;
        if (wrong_item && item_bad)
            env_text_put(&h, " A product that matches is %s (%s, %s)%s.", c->p[t].asin,
                         webshop_title(c, t), tprice,
                         listed_step ? ", which your search listed" : "");
        /* step lines: where it went wrong */
        if (wrong_item && item_bad) {
            int open_step = 0, src_search = 0;
            for (int i = 0; i < buy_step; i++) {
                if (O->rec[i].ev.kind == WS_EV_ITEM && O->rec[i].ev.item == bought)
                    open_step = i + 1;
                if (O->rec[i].ev.kind == WS_EV_SEARCH &&
                    i + 1 <= (open_step ? open_step : buy_step))
                    src_search = i + 1;
            }
            if (src_search && O->rec[src_search - 1].target_rank < 0)
                ws_line(O, src_search, "search[%s] so the matching product is listed.", query);
            else if (open_step)
                ws_line(O, open_step, "open %s instead of %s; its title does not match the task.",
                        c->p[t].asin, c->p[bought].asin);
        } else if (opt_fix_value >= 0) {
            ws_line(O, buy_step, "do not buy yet: click[%s] first.",
                    webshop_goal_opt_value(c, g, opt_fix_value));
        }
        ws_line(O, buy_step,
                "click buy now only after the title, price and every option match "
                "the task.");
    }
    if (!won && n_invalid)
        env_text_put(&h,
                     " %d of your actions were invalid (not search[...] or a click of the "
                     "page).",
                     n_invalid);
    if (!won && loop_len)
        env_text_put(&h,
                     " You repeated the same action %d times from step %d; when an action "
                     "does not help, try another.",
                     loop_len, loop_from);
    if (!won && first_invalid)
        ws_line(O, first_invalid,
                "give one action from the admissible list, such as "
                "search[<query>] or click[<button>].");
    if (!won && loop_len)
        ws_line(O, loop_from + 1, "stop repeating that action; do something else.");

    /* assemble: the episode line, then the step lines in step order */
    for (int i = 1; i < O->n_lines; i++)
        for (int j = i; j > 0 && O->line_step[j - 1] > O->line_step[j]; j--) {
            char tmp[200];
            memcpy(tmp, O->lines[j], sizeof tmp);
            memcpy(O->lines[j], O->lines[j - 1], sizeof tmp);
            memcpy(O->lines[j - 1], tmp, sizeof tmp);
            int s = O->line_step[j];
            O->line_step[j] = O->line_step[j - 1];
            O->line_step[j - 1] = s;
        }
    env_text out = {skill, skill_len, 0, 0};
    env_text_put(&out, "%s", head);
    for (int i = 0; i < O->n_lines; i++) env_text_put(&out, "\n%s", O->lines[i]);
    int overflow = out.overflow || h.overflow;
    free(head);
    if (overflow) {
        skill[0] = '\0';
        seed_errf(err, errlen, "webshop: the skill text did not fit in %zu bytes", skill_len);
        goto out;
    }
    rc = 0;
out:
    webshop_scratch_free(&O->scratch);
    webshop_catalog_free(&O->cat);
    free(O);
    return rc;
}
