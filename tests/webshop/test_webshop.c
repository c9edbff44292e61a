/* test_webshop.c — tests of the webshop env through env.c's registry and generic calls
 * (as the actor and the analyzer use it) and through its parts (webshop.h).
 *
 * Usage: test_webshop config|pages|determinism|splits|expert|actions|hindsight|vocab|search
 *        test_webshop digest SPLIT FIRST COUNT   (a hash per expert episode, for the
 *                                                 two-process determinism test)
 * Each check prints what it found and exits non-zero on the first failure. Comparisons
 * are exact: the env is deterministic text logic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "envs/webshop.h"
#include "common/util.h"

#define CHECK_EXIT_ON_FAIL
#include "tests/check.h"

static const env_split SPLITS[3] = {ENV_SPLIT_TRAIN, ENV_SPLIT_SEEN, ENV_SPLIT_UNSEEN};

static env *make(const env_kv *kv, int n) {
    env *e = NULL;
    char err[SEED_ERRLEN];
    CHECK(env_create(&e, "webshop", kv, n, err, sizeof err) == 0, "create: %s", err);
    return e;
}

static int in_list(const env_obs *o, const char *a) {
    for (int i = 0; i < o->n_admissible; i++)
        if (strcmp(o->admissible[i], a) == 0) return 1;
    return 0;
}

/* Plays the expert to the end; returns the number of steps; optional hash of every page. */
static int play_expert(env *e, uint64_t seed, env_split split, env_obs *o, uint64_t *hash,
                       char acts[][WS_ACTION_MAX + 1], int max_acts) {
    char err[SEED_ERRLEN];
    CHECK(env_reset(e, seed, split, o, err, sizeof err) == 0, "reset: %s", err);
    uint64_t h = seed_fnv1a64(o->task, strlen(o->task));
    int n = 0;
    while (!o->done) {
        char a[WS_ACTION_MAX + 1];
        CHECK(env_expert(e, a, sizeof a, err, sizeof err) == 0, "expert: %s", err);
        CHECK(env_action_valid(e, a), "the expert's action '%s' is not valid", a);
        if (a[0] == 'c') CHECK(in_list(o, a), "expert action '%s' not admissible", a);
        if (acts && n < max_acts) snprintf(acts[n], WS_ACTION_MAX + 1, "%s", a);
        CHECK(env_step(e, a, o, err, sizeof err) == 0, "step: %s", err);
        n++;
        h = seed_hash_mix(h, seed_fnv1a64(o->observation, strlen(o->observation)));
        for (int i = 0; i < o->n_admissible; i++)
            h = seed_hash_mix(h, seed_fnv1a64(o->admissible[i], strlen(o->admissible[i])));
    }
    if (hash) *hash = h;
    return n;
}

/* ---- config: keys, values and their errors ---- */

static void test_config(void) {
    char err[SEED_ERRLEN];
    env *e = NULL;
    struct {
        env_kv kv;
        const char *want;
    } bad[] = {
        {{"colour", "1"}, "unknown config key 'colour'"},
        {{"products", "10"}, "'products' has value '10'"},
        {{"products", "lots"}, "expected an integer"},
        {{"catalog_seed", "-1"}, "catalog_seed"},
        {{"categories", "toys"}, "'categories' has value 'toys'"},
        {{"categories", "beauty,,food"}, "categories"},
        {{"reward", "dense"}, "expected score or win10"},
        {{"max_steps", "0"}, "max_steps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(env_create(&e, "webshop", &bad[i].kv, 1, err, sizeof err) != 0, "accepted %s=%s",
              bad[i].kv.key, bad[i].kv.value);
        CHECK(strstr(err, bad[i].want), "error for %s=%s: '%s'", bad[i].kv.key, bad[i].kv.value,
              err);
    }
    /* every key does something */
    env_kv kv[4] = {{"categories", "food, electronics"},
                    {"max_steps", "9"},
                    {"products", "2000"},
                    {"catalog_seed", "7"}};
    e = make(kv, 4);
    CHECK(e->max_steps == 9, "max_steps %d", e->max_steps);
    env_obs o;
    for (uint64_t s = 0; s < 60; s++) {
        CHECK(env_reset(e, s, SPLITS[s % 3], &o, err, sizeof err) == 0, "reset: %s", err);
        CHECK(!strcmp(o.family, "food") || !strcmp(o.family, "electronics"), "family %s", o.family);
    }
    /* max_steps: the 9th step ends the episode */
    CHECK(env_reset(e, 1, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "reset: %s", err);
    for (int i = 0; i < 9; i++) {
        CHECK(!o.done, "done after %d steps", i);
        CHECK(env_step(e, "click[search]", &o, err, sizeof err) == 0, "step: %s", err);
    }
    CHECK(o.done && !o.won && o.reward == 0.0f, "max_steps did not end the episode");
    env_destroy(e);
    /* products and catalog_seed change the catalogue */
    env_kv a = {"catalog_seed", "1"}, b = {"catalog_seed", "2"};
    env *ea = make(&a, 1), *eb = make(&b, 1);
    env_obs oa, ob;
    int same = 0;
    for (uint64_t s = 0; s < 20; s++) {
        env_reset(ea, s, ENV_SPLIT_TRAIN, &oa, err, sizeof err);
        env_reset(eb, s, ENV_SPLIT_TRAIN, &ob, err, sizeof err);
        same += strcmp(oa.task, ob.task) == 0;
    }
    CHECK(same < 3, "catalog_seed 1 and 2 gave %d equal tasks of 20", same);
    env_destroy(ea);
    env_destroy(eb);
    /* reward: score vs win10 on the same expert episode */
    env_kv w = {"reward", "win10"};
    env *es = make(NULL, 0), *ew = make(&w, 1);
    play_expert(es, 3, ENV_SPLIT_TRAIN, &oa, NULL, NULL, 0);
    play_expert(ew, 3, ENV_SPLIT_TRAIN, &ob, NULL, NULL, 0);
    CHECK(oa.won && ob.won && oa.reward == 1.0f && ob.reward == 10.0f, "rewards %g %g", oa.reward,
          ob.reward);
    CHECK(strstr(oa.info, "score=1.0000") && strstr(ob.info, "score=1.0000"), "info %s", oa.info);
    env_destroy(es);
    env_destroy(ew);
    printf("config: bad keys rejected with their names; categories, max_steps, catalog_seed, "
           "products and reward all take effect\n");
}

/* ---- pages: WebShop's text pages and clickables, step by step ---- */

static void test_pages(void) {
    char err[SEED_ERRLEN], a[WS_ACTION_MAX + 1];
    env *e = make(NULL, 0);
    env_obs o;
    CHECK(env_reset(e, 11, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "reset: %s", err);
    CHECK(strcmp(o.observation, "'Search'") == 0, "search page: %s", o.observation);
    CHECK(o.n_admissible == 2 && !strcmp(o.admissible[0], "search[<your query>]") &&
              !strcmp(o.admissible[1], "click[search]"),
          "search page admissible");
    CHECK(strstr(o.task, "price lower than ") && strstr(o.task, ".00 dollars"), "task: %s", o.task);
    CHECK(o.reward == 0 && !o.done && !o.won && o.info[0] == '\0', "reset obs");
    /* click[search] is WebShop's no-op */
    CHECK(env_step(e, "click[search]", &o, err, sizeof err) == 0 &&
              !strcmp(o.observation, "'Search'"),
          "click[search]: %s", o.observation);
    /* results: 10 per page, Next >, < Prev, back to search */
    CHECK(env_step(e, "search[shirt black]", &o, err, sizeof err) == 0, "%s", err);
    CHECK(!strncmp(o.observation,
                   "'Back to Search' [SEP] 'Page 1 (Total results: 50)' [SEP] 'Next >' [SEP] 'B0",
                   76),
          "results page: %.120s", o.observation);
    CHECK(o.n_admissible == 12 && !strcmp(o.admissible[0], "click[back to search]") &&
              !strcmp(o.admissible[1], "click[next >]") && !strncmp(o.admissible[2], "click[b0", 8),
          "results admissible (%d)", o.n_admissible);
    CHECK(!env_action_valid(e, "click[< prev]"), "< prev on page 1");
    CHECK(env_step(e, "click[next >]", &o, err, sizeof err) == 0 &&
              strstr(o.observation, "'Page 2 (Total results: 50)' [SEP] '< Prev' [SEP] 'Next >'"),
          "page 2: %.120s", o.observation);
    for (int p = 3; p <= 5; p++)
        CHECK(env_step(e, "click[next >]", &o, err, sizeof err) == 0, "next");
    CHECK(strstr(o.observation, "'Page 5 (Total results: 50)' [SEP] '< Prev' [SEP] 'B0"),
          "page 5: %.120s", o.observation);
    CHECK(!env_action_valid(e, "click[next >]"), "next > on the last page");
    CHECK(env_step(e, "click[< prev]", &o, err, sizeof err) == 0 &&
              strstr(o.observation, "'Page 4"),
          "prev");
    /* an item page: options, title, price, buttons */
    snprintf(a, sizeof a, "%s", o.admissible[3]); /* back, prev, next, then products */
    CHECK(env_step(e, a, &o, err, sizeof err) == 0, "%s", err);
    CHECK(!strncmp(o.observation, "'Back to Search' [SEP] '< Prev' [SEP] ", 36) &&
              strstr(o.observation, "[SEP] 'Price: $") &&
              strstr(o.observation, "'Rating: N.A.' [SEP] 'Description' [SEP] 'Features' [SEP] "
                                    "'Reviews' [SEP] 'Buy Now'"),
          "item page: %s", o.observation);
    static const char *const btn[] = {"click[back to search]", "click[< prev]",
                                      "click[description]",    "click[features]",
                                      "click[reviews]",        "click[buy now]"};
    for (int i = 0; i < 6; i++) CHECK(!strcmp(o.admissible[i], btn[i]), "item admissible %d", i);
    CHECK(o.n_admissible > 6, "no option values on the item page");
    /* sub pages and back */
    CHECK(env_step(e, "click[features]", &o, err, sizeof err) == 0 &&
              !strncmp(o.observation, "'Back to Search' [SEP] '< Prev' [SEP] '", 38) &&
              o.n_admissible == 2,
          "features: %s", o.observation);
    CHECK(env_step(e, "click[< prev]", &o, err, sizeof err) == 0 &&
              strstr(o.observation, "'Buy Now'"),
          "back to the item");
    CHECK(env_step(e, "click[description]", &o, err, sizeof err) == 0 &&
              strstr(o.observation, "Features: "),
          "description: %s", o.observation);
    CHECK(env_step(e, "click[< prev]", &o, err, sizeof err) == 0, "prev");
    CHECK(env_step(e, "click[< prev]", &o, err, sizeof err) == 0 &&
              strstr(o.observation, "'Page 4"),
          "item -> results keeps the page: %.80s", o.observation);
    CHECK(env_step(e, "click[back to search]", &o, err, sizeof err) == 0 &&
              !strcmp(o.observation, "'Search'"),
          "back to search");
    CHECK(!o.done, "done early");
    env_destroy(e);
    printf("pages: search, results (10 a page, Next >/< Prev), item, description, features and "
           "back, as WebShop's text env\n");
}

/* ---- determinism: same (seed, split), same pages; different seeds differ ---- */

static void test_determinism(void) {
    env *a = make(NULL, 0), *b = make(NULL, 0);
    env_obs oa, ob;
    for (int s = 0; s < 3; s++) {
        uint64_t hashes[60];
        for (uint64_t seed = 0; seed < 60; seed++) {
            uint64_t ha, hb;
            play_expert(a, seed, SPLITS[s], &oa, &ha, NULL, 0);
            play_expert(b, seed, SPLITS[s], &ob, &hb, NULL, 0);
            CHECK(ha == hb, "split %d seed %llu: two envs rendered different episodes", s,
                  (unsigned long long)seed);
            hashes[seed] = ha;
        }
        int dup = 0;
        for (int i = 0; i < 60; i++)
            for (int j = 0; j < i; j++) dup += hashes[i] == hashes[j];
        CHECK(dup == 0, "split %d: %d equal episodes among 60 seeds", s, dup);
    }
    env_destroy(a);
    env_destroy(b);
    printf("determinism: 180 expert episodes identical in two envs, all distinct across seeds\n");
}

static void digest(env_split split, uint64_t first, int count) {
    env *e = make(NULL, 0);
    env_obs o;
    for (int i = 0; i < count; i++) {
        uint64_t h;
        play_expert(e, first + (uint64_t)i, split, &o, &h, NULL, 0);
        printf("%llu %016llx\n", (unsigned long long)(first + (uint64_t)i), (unsigned long long)h);
    }
    env_destroy(e);
}

/* ---- splits: seen and unseen share no target product and no template ---- */

static void test_splits(void) {
    char err[SEED_ERRLEN];
    ws_catalog c;
    CHECK(webshop_catalog_build(&c, 1, WS_PRODUCTS_DEFAULT, err, sizeof err) == 0, "%s", err);
    unsigned char *used = calloc((size_t)c.n, 1);
    int tmpl[3][WS_TEMPLATES] = {{0}}, cats[3][WS_NCAT] = {{0}};
    for (int s = 0; s < 3; s++)
        for (uint64_t seed = 0; seed < 2000; seed++) {
            ws_goal g;
            CHECK(webshop_goal_make(&c, (1u << WS_NCAT) - 1, seed, SPLITS[s], &g, err,
                                    sizeof err) == 0,
                  "%s", err);
            used[g.target] |= (unsigned char)(1u << s);
            tmpl[s][g.tmpl]++;
            cats[s][c.p[g.target].cat]++;
            CHECK(c.p[g.target].unseen == (SPLITS[s] == ENV_SPLIT_UNSEEN), "target pool");
            CHECK(g.n_attr >= 2 && g.n_attr <= 3, "goal attributes %d", g.n_attr);
        }
    int shared = 0, train_seen = 0;
    for (int i = 0; i < c.n; i++) {
        shared += (used[i] & 4) && (used[i] & 3);
        train_seen += (used[i] & 1) && (used[i] & 2);
    }
    CHECK(shared == 0, "%d target products in both seen/train and unseen", shared);
    for (int t = 0; t < WS_TEMPLATES; t++) {
        int unseen_t = t >= WS_TEMPLATES_SEEN;
        CHECK(unseen_t ? (tmpl[0][t] == 0 && tmpl[1][t] == 0 && tmpl[2][t] > 0)
                       : (tmpl[2][t] == 0 && tmpl[0][t] > 0 && tmpl[1][t] > 0),
              "template %d used by %d/%d/%d", t, tmpl[0][t], tmpl[1][t], tmpl[2][t]);
    }
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < WS_NCAT; k++)
            CHECK(cats[s][k] > 2000 / WS_NCAT / 2, "split %d category %d drawn %d times", s, k,
                  cats[s][k]);
    free(used);
    webshop_catalog_free(&c);
    printf("splits: 6000 tasks; no target product or template shared between seen and unseen "
           "(train and seen share %d products, by design); every category drawn\n",
           train_seen);
}

/* ---- expert: >= 95%% success on 200 tasks of each split ---- */

static void test_expert(void) {
    env *e = make(NULL, 0);
    env_obs o;
    int total_steps = 0;
    for (int s = 0; s < 3; s++) {
        int won = 0;
        for (uint64_t seed = 0; seed < 200; seed++) {
            total_steps += play_expert(e, seed, SPLITS[s], &o, NULL, NULL, 0);
            won += o.won;
            CHECK(o.won == (o.reward == 1.0f), "won %d with reward %g", o.won, o.reward);
        }
        printf("expert %s: %d/200 won\n", env_split_name(SPLITS[s]), won);
        CHECK(won >= 190, "expert success %d/200 on %s is below 95%%", won,
              env_split_name(SPLITS[s]));
    }
    printf("expert: %.2f steps per episode\n", total_steps / 600.0);
    env_destroy(e);
}

/* ---- malformed, long and adversarial actions ---- */

static void test_actions(void) {
    char err[SEED_ERRLEN];
    env *e = make(NULL, 0);
    env_obs o;
    CHECK(env_reset(e, 5, ENV_SPLIT_SEEN, &o, err, sizeof err) == 0, "%s", err);
    static char huge[200000];
    memset(huge, 'x', sizeof huge - 1);
    memcpy(huge, "search[", 7);
    huge[sizeof huge - 2] = ']';
    static char longq[WS_ACTION_MAX];
    memset(longq, 0, sizeof longq);
    strcpy(longq, "search[");
    while (strlen(longq) < WS_ACTION_MAX - 20) strcat(longq, "shirt black ");
    strcat(longq, "]");
    const char *bad[] = {
        "",
        "search",
        "search[]",
        "search[   ]",
        "click[]",
        "click",
        "[x]",
        "buy now",
        "click[buy now]",
        "click[b0zzzzzzzz]",
        "click[next >]",
        "Click[search]",
        "search[a]\n",
        "\nsearch[shoe]",
        "search[\xff\xfe]x",
        "click[search",
        "click[<script>]",
        "jump[high]",
        huge,
        "search\n[shoe]",
        "click[search ]",
    };
    int n_bad = (int)(sizeof bad / sizeof bad[0]);
    for (int i = 0; i < n_bad; i++) {
        int valid = env_action_valid(e, bad[i]);
        /* "search[a]\n" and "search[\xff\xfe]x" are valid searches (re.match ignores the rest) */
        int want = i == 12 || i == 14;
        CHECK(valid == want, "action %d ('%.30s') valid=%d", i, bad[i], valid);
        CHECK(env_step(e, bad[i], &o, err, sizeof err) == 0, "step %d: %s", i, err);
        if (!want) {
            CHECK(!strncmp(o.observation, "Invalid action", 14) &&
                      strstr(o.observation, "the page is unchanged: 'Search'"),
                  "action %d observation: %.200s", i, o.observation);
            CHECK(strlen(o.observation) < 400, "observation of a long action not bounded");
        } else {
            CHECK(!strncmp(o.observation, "'Back to Search'", 16), "search %d: %.80s", i,
                  o.observation);
            CHECK(env_step(e, "click[back to search]", &o, err, sizeof err) == 0, "back");
        }
        CHECK(!o.done, "done after a bad action");
        CHECK(env_reset(e, 5, ENV_SPLIT_SEEN, &o, err, sizeof err) == 0, "%s", err);
    }
    /* NULL: the actor's invalid step */
    CHECK(env_step(e, NULL, &o, err, sizeof err) == 0 &&
              !strncmp(o.observation, "Invalid action: no action was given", 35),
          "NULL: %s", o.observation);
    /* a query longer than the cap: searched on its first words, no crash */
    CHECK(env_action_valid(e, longq), "long query");
    CHECK(env_step(e, longq, &o, err, sizeof err) == 0 &&
              strstr(o.observation, "Total results: 50"),
          "long query: %.100s", o.observation);
    /* WebShop's parse: the last '[' with a ']' after it names the action */
    char name[64], arg[64];
    CHECK(webshop_parse_action("search[red [big] shirt]", name, sizeof name, arg, sizeof arg) &&
              !strcmp(name, "search[red ") && !strcmp(arg, "big] shirt"),
          "greedy parse: %s | %s", name, arg);
    CHECK(!webshop_parse_action("[x]", name, sizeof name, arg, sizeof arg), "empty name");
    CHECK(webshop_parse_action("click[buy now] please", name, sizeof name, arg, sizeof arg) &&
              !strcmp(arg, "buy now"),
          "trailing text");
    /* upper case in the argument is lower-cased as WebShop does */
    CHECK(env_action_valid(e, "click[Back to Search]"), "case of the argument");
    /* stepping after the end is an error, not a crash */
    env_obs end;
    play_expert(e, 2, ENV_SPLIT_TRAIN, &end, NULL, NULL, 0);
    CHECK(env_step(e, "click[buy now]", &end, err, sizeof err) != 0, "step after buy accepted");
    env_destroy(e);
    printf("actions: %d malformed, long and adversarial actions answered with an invalid-action "
           "observation or a bounded search, never a crash\n",
           n_bad + 1);
}

/* ---- hindsight ---- */

static void skill_of(uint64_t seed, env_split split, const char *const *acts, int n, char *skill,
                     size_t cap) {
    char err[SEED_ERRLEN];
    CHECK(env_hindsight("webshop", NULL, 0, seed, split, acts, n, skill, cap, err, sizeof err) == 0,
          "hindsight: %s", err);
    /* format: one episode line, then at most 5 "step k: " lines in order */
    int lines = 0, last = 0;
    for (const char *q = strchr(skill, '\n'); q; q = strchr(q + 1, '\n')) {
        int k = 0;
        CHECK(sscanf(q + 1, "step %d:", &k) == 1 && k >= 1 && k <= n && k > last,
              "bad step line in:\n%s", skill);
        last = k;
        lines++;
    }
    CHECK(lines <= 5, "%d step lines", lines);
}

static void test_hindsight(void) {
    char err[SEED_ERRLEN], skill[4096], again[4096];
    env *e = make(NULL, 0);
    env_obs o;
    char acts[16][WS_ACTION_MAX + 1];
    const char *ap[16];
    /* success */
    int n = play_expert(e, 8, ENV_SPLIT_TRAIN, &o, NULL, acts, 16);
    CHECK(o.won, "expert lost");
    for (int i = 0; i < n; i++) ap[i] = acts[i];
    skill_of(8, ENV_SPLIT_TRAIN, ap, n, skill, sizeof skill);
    CHECK(!strncmp(skill, "Success:", 8) && strstr(skill, "step 1: search for the product type"),
          "success skill:\n%s", skill);
    skill_of(8, ENV_SPLIT_TRAIN, ap, n, again, sizeof again);
    CHECK(!strcmp(skill, again), "hindsight is not deterministic");
    printf("hindsight success:\n%s\n", skill);
    /* missing option: the expert's episode without its option clicks */
    int m = 0;
    const char *ap2[16];
    for (int i = 0; i < n; i++)
        if (!strncmp(acts[i], "search[", 7) || !strcmp(acts[i], "click[buy now]") ||
            (!strncmp(acts[i], "click[b0", 8) && strlen(acts[i]) == 17) ||
            !strcmp(acts[i], "click[next >]"))
            ap2[m++] = acts[i];
    skill_of(8, ENV_SPLIT_TRAIN, ap2, m, skill, sizeof skill);
    CHECK(!strncmp(skill, "Failure:", 8) && strstr(skill, "(missing option)") &&
              strstr(skill, "do not buy yet: click["),
          "missing-option skill:\n%s", skill);
    printf("hindsight missing option:\n%s\n", skill);
    /* wrong product: another type's search, then its first result */
    CHECK(env_reset(e, 8, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    const char *w[3] = {strstr(o.task, "shampoo") ? "search[hdmi cable]" : "search[shampoo]", NULL,
                        "click[buy now]"};
    CHECK(env_step(e, w[0], &o, err, sizeof err) == 0, "%s", err);
    w[1] = o.admissible[2];
    CHECK(!strncmp(w[1], "click[b0", 8), "no product listed");
    skill_of(8, ENV_SPLIT_TRAIN, w, 3, skill, sizeof skill);
    CHECK(!strncmp(skill, "Failure: you bought ", 20) && strstr(skill, "What was wrong:") &&
              strstr(skill, "(wrong product type)") && strstr(skill, "Rule: before buying") &&
              strstr(skill, "A product that matches is") && strstr(skill, "step 1: search["),
          "wrong-product skill:\n%s", skill);
    printf("hindsight wrong product:\n%s\n", skill);
    /* no purchase: never searched, invalid and repeated actions */
    const char *idle[6] = {
        NULL, "click[search]", "click[search]", "click[search]", "click[search]", "jump"};
    skill_of(8, ENV_SPLIT_TRAIN, idle, 6, skill, sizeof skill);
    CHECK(strstr(skill, "Failure: you bought nothing") && strstr(skill, "You never searched") &&
              strstr(skill, "were invalid") && strstr(skill, "repeated the same action") &&
              strstr(skill, "step 1: search["),
          "idle skill:\n%s", skill);
    printf("hindsight no purchase:\n%s\n", skill);
    /* listed but not opened */
    CHECK(env_reset(e, 8, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    const char *l[1] = {acts[0]};
    skill_of(8, ENV_SPLIT_TRAIN, l, 1, skill, sizeof skill);
    CHECK(strstr(skill, "was listed on result page") && strstr(skill, "never opened it"),
          "listed skill:\n%s", skill);
    /* over price: a search listing expensive products of the type, buying one over the bound */
    int over = 0;
    for (uint64_t seed = 0; seed < 60 && !over; seed++) {
        CHECK(env_reset(e, seed, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
        char q[WS_ACTION_MAX + 1];
        CHECK(env_expert(e, q, sizeof q, err, sizeof err) == 0, "%s", err);
        CHECK(env_step(e, q, &o, err, sizeof err) == 0, "%s", err);
        const char *bound = strstr(o.task, "lower than ");
        double upper = bound ? atof(bound + 11) : 1e9;
        /* find a listed product priced over the bound */
        const char *p = o.observation;
        for (int i = 0; i < o.n_admissible && !over; i++) {
            if (strncmp(o.admissible[i], "click[b0", 8)) continue;
            char asin[16];
            snprintf(asin, sizeof asin, "%.10s", o.admissible[i] + 6);
            for (char *c = asin; *c; c++)
                if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 32);
            const char *at = strstr(p, asin);
            const char *price = at ? strstr(at, "[SEP] '$") : NULL;
            if (price && atof(price + 8) > upper) {
                const char *seq[3] = {q, o.admissible[i], "click[buy now]"};
                skill_of(seed, ENV_SPLIT_TRAIN, seq, 3, skill, sizeof skill);
                CHECK(strstr(skill, "is over the") && strstr(skill, "dollars limit"),
                      "over-price skill:\n%s", skill);
                over = 1;
            }
        }
    }
    CHECK(over, "no over-price case found in 60 tasks");
    /* a buffer too small is an error */
    CHECK(env_hindsight("webshop", NULL, 0, 8, ENV_SPLIT_TRAIN, ap, n, skill, 40, err,
                        sizeof err) != 0 &&
              strstr(err, "did not fit"),
          "small buffer: %s", err);
    env_destroy(e);
    printf("hindsight: success, missing option, wrong product, no purchase, listed-not-opened and "
           "over-price skills, deterministic\n");
}

/* ---- the generated vocabulary keeps goal.py's tests meaningful ---- */

static void test_vocab(void) {
    char err[SEED_ERRLEN];
    ws_catalog c;
    CHECK(webshop_catalog_build(&c, 1, WS_PRODUCTS_DEFAULT, err, sizeof err) == 0, "%s", err);
    /* within a type, no two attributes match each other (token_set_ratio > 85 or substring) */
    for (int t = 0; t < webshop_n_types; t++)
        for (int i = 0; webshop_types[t].attrs[i]; i++)
            for (int j = 0; j < i; j++) {
                const char *a = webshop_types[t].attrs[i], *b = webshop_types[t].attrs[j];
                CHECK(webshop_token_set_ratio(a, b) <= 85 && !strstr(a, b) && !strstr(b, a),
                      "type %s: '%s' ~ '%s' (%d)", webshop_types[t].name, a, b,
                      webshop_token_set_ratio(a, b));
            }
    /* within an option kind, no two values match each other */
    for (int k = 0; k < webshop_n_optkinds; k++)
        for (int i = 0; webshop_optkinds[k].values[i]; i++)
            for (int j = 0; j < i; j++) {
                const char *a = webshop_normalize_color(webshop_optkinds[k].values[i]);
                const char *b = webshop_normalize_color(webshop_optkinds[k].values[j]);
                int same = !strcmp(webshop_optkinds[k].name, "size")
                               ? !strcmp(a, b)
                               : webshop_token_set_ratio(a, b) > 85;
                CHECK(!same, "option %s: '%s' ~ '%s'", webshop_optkinds[k].name,
                      webshop_optkinds[k].values[i], webshop_optkinds[k].values[j]);
            }
    /* no product text contains an option value of its kinds or an attribute it lacks */
    for (int i = 0; i < c.n; i++) {
        const ws_product *p = &c.p[i];
        const ws_type *t = &webshop_types[p->type];
        char text[2048];
        snprintf(text, sizeof text, "%s %s %s", webshop_title(&c, i), webshop_bullets(&c, i),
                 webshop_desc(&c, i));
        for (char *q = text; *q; q++)
            if (*q >= 'A' && *q <= 'Z') *q = (char)(*q + 32);
        for (int o = 0; o < p->n_opt; o++)
            for (int v = 0; webshop_optkinds[t->opt[o]].values[v]; v++) {
                const char *val = webshop_normalize_color(webshop_optkinds[t->opt[o]].values[v]);
                CHECK(!strstr(text, val), "product %d (%s) text contains option value '%s': %s", i,
                      t->name, val, text);
            }
        for (int a = 0; t->attrs[a]; a++) {
            int has = 0;
            for (int k = 0; k < p->n_attr; k++) has |= p->attr[k] == a;
            CHECK(has || !strstr(text, t->attrs[a]), "product %d text contains '%s' it lacks", i,
                  t->attrs[a]);
        }
        CHECK(strlen(c.p[i].asin) == 10 && !strncmp(c.p[i].asin, "B0", 2), "asin %s", c.p[i].asin);
        for (int j = 0; j < i && i < 1000; j++) CHECK(strcmp(c.p[i].asin, c.p[j].asin), "asin dup");
    }
    webshop_catalog_free(&c);
    printf("vocab: attributes and option values separable by goal.py's tests; no product text "
           "leaks an option value or a missing attribute (%d products)\n",
           WS_PRODUCTS_DEFAULT);
}

/* ---- search: BM25 ranking facts ---- */

static void test_search(void) {
    char err[SEED_ERRLEN];
    ws_catalog c;
    ws_search_scratch s;
    CHECK(webshop_catalog_build(&c, 1, WS_PRODUCTS_DEFAULT, err, sizeof err) == 0, "%s", err);
    CHECK(webshop_scratch_init(&s, c.n) == 0, "scratch");
    int res[WS_RESULTS_MAX], res2[WS_RESULTS_MAX];
    /* an exact title ranks its product first */
    int hits = 0;
    for (int i = 0; i < 200; i++) {
        char q[512];
        snprintf(q, sizeof q, "%s", webshop_title(&c, i * 7));
        int n = webshop_search(&c.idx, &s, q, res, WS_RESULTS_MAX);
        CHECK(n > 0, "no result for a title");
        hits += res[0] == i * 7 || !strcmp(webshop_title(&c, res[0]), webshop_title(&c, i * 7));
    }
    CHECK(hits == 200, "%d of 200 titles rank their product first", hits);
    /* results are ordered, capped at 50, repeatable; stop words and unknown words match nothing */
    int n = webshop_search(&c.idx, &s, "black polo shirt", res, WS_RESULTS_MAX);
    int n2 = webshop_search(&c.idx, &s, "BLACK Polo-Shirts!", res2, WS_RESULTS_MAX);
    CHECK(n == WS_RESULTS_MAX && n2 == n && !memcmp(res, res2, sizeof res), "case/plural");
    CHECK(webshop_search(&c.idx, &s, "the and of with", res, WS_RESULTS_MAX) == 0, "stop words");
    CHECK(webshop_search(&c.idx, &s, "zzzqqq", res, WS_RESULTS_MAX) == 0, "unknown word");
    CHECK(webshop_search(&c.idx, &s, "", res, WS_RESULTS_MAX) == 0, "empty");
    /* the expert's key words find the target in the top 50 for most tasks */
    int found = 0;
    for (uint64_t seed = 0; seed < 300; seed++) {
        ws_goal g;
        char q[WS_QUERY_CAP];
        CHECK(webshop_goal_make(&c, 31, seed, SPLITS[seed % 3], &g, err, sizeof err) == 0, "%s",
              err);
        webshop_expert_query(&c, &g, q, sizeof q);
        n = webshop_search(&c.idx, &s, q, res, WS_RESULTS_MAX);
        for (int k = 0; k < n; k++) found += res[k] == g.target;
    }
    printf("search: titles rank first; the instruction's key words list the target in the top 50 "
           "for %d of 300 tasks\n",
           found);
    CHECK(found >= 240, "key-word search found only %d of 300 targets", found);
    webshop_scratch_free(&s);
    webshop_catalog_free(&c);
}

/* ---- prompt: verl-agent's WEBSHOP_TEMPLATE with the two skill slots ---- */

static void test_prompt(void) {
    char err[SEED_ERRLEN];
    env *e = make(NULL, 0);
    env_obs o;
    CHECK(env_reset(e, 4, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    env_prompt p;
    env_prompt_init(&p);
    CHECK(env_prompt_render(&p, "webshop", e->vt->instructions, &o, NULL, 0, 2, err, sizeof err) ==
              0,
          "%s", err);
    char want[2048];
    snprintf(want, sizeof want,
             "You are an expert autonomous agent operating in the WebShop e\xe2\x80\x91"
             "commerce environment.\nYour task is to: %s.\n",
             o.task);
    CHECK(p.head_len == strlen(want) && !memcmp(p.head, want, p.head_len), "head: %.*s",
          (int)p.head_len, p.head);
    const char *mid = "Your current observation is: 'Search'.\nYour admissible actions of the "
                      "current situation are:\n[\n'search[<your query>]',\n'click[search]',\n]."
                      "\n\n";
    CHECK(p.middle_len == strlen(mid) && !memcmp(p.middle, mid, p.middle_len), "middle: %.*s",
          (int)p.middle_len, p.middle);
    CHECK(!strncmp(p.tail, "Now it's your turn to take one action for the current step.\n", 60) &&
              strstr(p.tail, "best advances the shopping goal"),
          "tail: %s", p.tail);
    /* with history: verl-agent's "Prior to this step ..." and the same list format */
    CHECK(env_step(e, "search[shirt]", &o, err, sizeof err) == 0, "%s", err);
    env_prompt_step h = {"'Search'", "search[shirt]"};
    CHECK(env_prompt_render(&p, "webshop", e->vt->instructions, &o, &h, 1, 2, err, sizeof err) == 0,
          "%s", err);
    CHECK(!strncmp(p.middle, "Prior to this step, you have already taken 1 step(s).", 53) &&
              strstr(p.middle, "You are now at step 2 and your current observation is: 'Back to "
                               "Search'") &&
              strstr(p.middle,
                     ".\nYour admissible actions of the current situation are:\n[\n'click["
                     "back to search]',\n'click[next >]',\n'click[b0"),
          "middle: %.*s", (int)p.middle_len, p.middle);
    CHECK(env_parse_rejects_cjk("webshop"), "webshop_projection rejects CJK replies");
    env_prompt_free(&p);
    env_destroy(e);
    printf("prompt: verl-agent's WebShop template (task line, quoted observation, admissible "
           "list, final instruction)\n");
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    int all = strcmp(what, "all") == 0;
    if (!strcmp(what, "digest") && argc == 5) {
        env_split sp;
        CHECK(env_split_parse(argv[2], &sp) == 0, "split %s", argv[2]);
        digest(sp, strtoull(argv[3], NULL, 10), atoi(argv[4]));
        return 0;
    }
    if (all || !strcmp(what, "config")) test_config();
    if (all || !strcmp(what, "pages")) test_pages();
    if (all || !strcmp(what, "determinism")) test_determinism();
    if (all || !strcmp(what, "splits")) test_splits();
    if (all || !strcmp(what, "expert")) test_expert();
    if (all || !strcmp(what, "actions")) test_actions();
    if (all || !strcmp(what, "hindsight")) test_hindsight();
    if (all || !strcmp(what, "vocab")) test_vocab();
    if (all || !strcmp(what, "search")) test_search();
    if (all || !strcmp(what, "prompt")) test_prompt();
    return 0;
}
