/* webshop_tool.c — the webshop env's parts on the command line, for the Python tests
 * and for people.
 *
 *   webshop_tool products N [CATALOG_SEED]  one JSON line per product (the fields goal.py
 *                                           reads: asin, query, product_category, nouns,
 *                                           Attributes, Title, BulletPoints, Description,
 *                                           options, price)
 *   webshop_tool reward                     reads JSON cases from stdin, one per line:
 *                                           {"product": {...}, "goal": {...}, "price": x,
 *                                           "options": [[name, value], ...]}; prints one
 *                                           JSON line of webshop_reward's components each
 *   webshop_tool ratio                      reads [a, b] JSON lines; prints
 *                                           token_set_ratio(a, b) and normalize_color(a)
 *   webshop_tool play SEED SPLIT [ACTION...] an episode: the task, then each page with its
 *                                           admissible actions; no ACTION: the expert plays
 *   webshop_tool hindsight SEED SPLIT ACTION...  the oracle's skill for those actions
 * Errors go to stderr with exit status 1. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/webshop.h"
#include "common/util.h"

static void die(const char *msg) {
    fprintf(stderr, "webshop_tool: %s\n", msg);
    exit(1);
}

static cJSON *str_array(const char *const *s, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(s[i]));
    return a;
}

static int cmd_products(int n, uint64_t seed) {
    char err[SEED_ERRLEN];
    ws_catalog c;
    if (webshop_catalog_build(&c, seed, WS_PRODUCTS_DEFAULT, err, sizeof err)) die(err);
    for (int i = 0; i < n && i < c.n; i++) {
        const ws_product *p = &c.p[i];
        cJSON *o = cJSON_CreateObject();
        char buf[1024];
        cJSON_AddStringToObject(o, "asin", p->asin);
        cJSON_AddStringToObject(o, "query", webshop_types[p->type].query);
        webshop_product_category(&c, i, buf, sizeof buf);
        cJSON_AddStringToObject(o, "product_category", buf);
        webshop_nouns(&c, i, buf, sizeof buf);
        cJSON *nouns = cJSON_CreateArray();
        for (char *q = buf; *q;) {
            size_t l = strcspn(q, " ");
            char w[64];
            snprintf(w, sizeof w, "%.*s", (int)l, q);
            cJSON_AddItemToArray(nouns, cJSON_CreateString(w));
            q += l + (q[l] == ' ');
        }
        cJSON_AddItemToObject(o, "nouns", nouns);
        const char *attrs[WS_MAX_ATTR];
        for (int k = 0; k < p->n_attr; k++) attrs[k] = webshop_attr(&c, i, k);
        cJSON_AddItemToObject(o, "Attributes", str_array(attrs, p->n_attr));
        cJSON_AddStringToObject(o, "Title", webshop_title(&c, i));
        cJSON *bul = cJSON_CreateArray();
        for (const char *q = webshop_bullets(&c, i); *q;) {
            size_t l = strcspn(q, "\n");
            snprintf(buf, sizeof buf, "%.*s", (int)l, q);
            cJSON_AddItemToArray(bul, cJSON_CreateString(buf));
            q += l + (q[l] == '\n');
        }
        cJSON_AddItemToObject(o, "BulletPoints", bul);
        cJSON_AddStringToObject(o, "Description", webshop_desc(&c, i));
        cJSON *opts = cJSON_CreateObject();
        for (int k = 0; k < p->n_opt; k++) {
            const char *vals[WS_MAX_VALUES];
            for (int v = 0; v < p->n_val[k]; v++)
                vals[v] = webshop_opt_value(&c, i, k, p->val[k][v]);
            cJSON_AddItemToObject(opts, webshop_opt_name(&c, i, k), str_array(vals, p->n_val[k]));
        }
        cJSON_AddItemToObject(o, "options", opts);
        cJSON_AddNumberToObject(o, "price", p->price_cents / 100.0);
        char *s = cJSON_PrintUnformatted(o);
        puts(s);
        free(s);
        cJSON_Delete(o);
    }
    webshop_catalog_free(&c);
    return 0;
}

/* A JSON array of strings as a C array (pointers into the JSON); n = -1 when malformed. */
static const char **strings(const cJSON *a, int *n) {
    *n = -1;
    if (!cJSON_IsArray(a) && !cJSON_IsObject(a)) return NULL; /* an object: its values */
    int k = cJSON_GetArraySize(a);
    const char **s = calloc((size_t)k + 1, sizeof *s);
    for (int i = 0; i < k; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsString(x)) {
            free(s);
            return NULL;
        }
        s[i] = x->valuestring;
    }
    *n = k;
    return s;
}

static const char *field(const cJSON *o, const char *k) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static int cmd_reward(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int ln = 0;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        ln++;
        cJSON *j = cJSON_Parse(line);
        if (!j) die("a case line is not JSON");
        const cJSON *P = cJSON_GetObjectItem(j, "product"), *G = cJSON_GetObjectItem(j, "goal");
        ws_rprod p = {0};
        ws_rgoal g = {0};
        p.query = field(P, "query");
        p.product_category = field(P, "product_category");
        p.title = field(P, "Title");
        p.description = field(P, "Description");
        g.query = field(G, "query");
        g.product_category = field(G, "product_category");
        p.nouns = strings(cJSON_GetObjectItem(P, "nouns"), &p.n_nouns);
        p.attrs = strings(cJSON_GetObjectItem(P, "Attributes"), &p.n_attrs);
        p.bullets = strings(cJSON_GetObjectItem(P, "BulletPoints"), &p.n_bullets);
        g.nouns = strings(cJSON_GetObjectItem(G, "nouns"), &g.n_nouns);
        g.attrs = strings(cJSON_GetObjectItem(G, "attributes"), &g.n_attrs);
        g.options = strings(cJSON_GetObjectItem(G, "goal_options"), &g.n_options);
        const cJSON *pu = cJSON_GetObjectItem(G, "price_upper"),
                    *pr = cJSON_GetObjectItem(j, "price");
        if (!cJSON_IsNumber(pu) || !cJSON_IsNumber(pr)) die("price or price_upper missing");
        g.price_upper = pu->valuedouble;
        const cJSON *O = cJSON_GetObjectItem(j, "options");
        int no = cJSON_IsArray(O) ? cJSON_GetArraySize(O) : 0;
        const char **on = calloc((size_t)no + 1, sizeof *on),
                   **ov = calloc((size_t)no + 1, sizeof *ov);
        for (int i = 0; i < no; i++) {
            const cJSON *kv = cJSON_GetArrayItem(O, i);
            on[i] = cJSON_GetArrayItem(kv, 0)->valuestring;
            ov[i] = cJSON_GetArrayItem(kv, 1)->valuestring;
        }
        ws_score s;
        char err[SEED_ERRLEN];
        if (webshop_reward(&p, &g, pr->valuedouble, on, ov, no, &s, err, sizeof err)) {
            printf("{\"error\": \"line %d\"}\n", ln);
        } else {
            printf("{\"total\": %.17g, \"r_type\": %.17g, \"title_score\": %.17g, "
                   "\"query_match\": %d, \"category_match\": %d, \"num_attr_matches\": %d, "
                   "\"num_option_matches\": %d, \"r_price\": %d}\n",
                   s.total, s.r_type, s.title_score, s.query_match, s.category_match,
                   s.n_attr_match, s.n_opt_match, s.r_price);
        }
        free((void *)p.nouns), free((void *)p.attrs), free((void *)p.bullets);
        free((void *)g.nouns), free((void *)g.attrs), free((void *)g.options);
        free(on), free(ov);
        cJSON_Delete(j);
    }
    free(line);
    return 0;
}

static int cmd_ratio(void) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        cJSON *j = cJSON_Parse(line);
        if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != 2) die("a ratio line is not [a, b]");
        const char *a = cJSON_GetArrayItem(j, 0)->valuestring,
                   *b = cJSON_GetArrayItem(j, 1)->valuestring;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "ratio", webshop_token_set_ratio(a, b));
        cJSON_AddStringToObject(o, "color", webshop_normalize_color(a));
        char *s = cJSON_PrintUnformatted(o);
        puts(s);
        free(s);
        cJSON_Delete(o);
        cJSON_Delete(j);
    }
    free(line);
    return 0;
}

static void show(const env_obs *o) {
    printf("observation: %s\nadmissible:", o->observation);
    for (int i = 0; i < o->n_admissible; i++)
        printf(" %s%s", o->admissible[i], i + 1 < o->n_admissible ? "," : "");
    printf("\nreward=%g done=%d won=%d info=%s\n", o->reward, o->done, o->won, o->info);
}

static int cmd_play(uint64_t seed, env_split split, int n, char **acts) {
    char err[SEED_ERRLEN];
    env *e;
    if (env_create(&e, "webshop", NULL, 0, err, sizeof err)) die(err);
    env_obs o;
    if (env_reset(e, seed, split, &o, err, sizeof err)) die(err);
    printf("task: %s\nfamily: %s\n", o.task, o.family);
    show(&o);
    for (int i = 0; !o.done && (n ? i < n : i < 100); i++) {
        char a[WS_ACTION_MAX + 1];
        if (n)
            snprintf(a, sizeof a, "%s", acts[i]);
        else if (env_expert(e, a, sizeof a, err, sizeof err))
            die(err);
        printf("> %s\n", a);
        const char *act = env_action_valid(e, a) ? a : NULL;
        if (env_step(e, act, &o, err, sizeof err)) die(err);
        show(&o);
    }
    env_destroy(e);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) die("usage: webshop_tool products|reward|ratio|play|hindsight ...");
    if (strcmp(argv[1], "products") == 0 && argc >= 3)
        return cmd_products(atoi(argv[2]), argc > 3 ? strtoull(argv[3], NULL, 10) : 1);
    if (strcmp(argv[1], "reward") == 0) return cmd_reward();
    if (strcmp(argv[1], "ratio") == 0) return cmd_ratio();
    env_split sp;
    if (argc >= 4 && env_split_parse(argv[3], &sp) == 0) {
        uint64_t seed = strtoull(argv[2], NULL, 10);
        if (strcmp(argv[1], "play") == 0) return cmd_play(seed, sp, argc - 4, argv + 4);
        if (strcmp(argv[1], "hindsight") == 0) {
            char skill[4096], err[SEED_ERRLEN];
            if (env_hindsight("webshop", NULL, 0, seed, sp, (const char *const *)argv + 4, argc - 4,
                              skill, sizeof skill, err, sizeof err))
                die(err);
            puts(skill);
            return 0;
        }
    }
    die("usage: webshop_tool products N [SEED] | reward | ratio | play SEED SPLIT [ACTION...] | "
        "hindsight SEED SPLIT ACTION...");
    return 1;
}
