/* webshop_catalog.c — the webshop env's generated catalogue and its tasks (webshop.h).
 *
 * Contract: product i is a pure function of (catalog seed, i): its type (i mod the type
 * count, so every type has products), brand, attributes, offered option values, price,
 * ASIN (an affine bijection of i, so ASINs never collide) and texts. Texts are built like
 * WebShop's scraped products: a title naming brand, type and some attributes, one
 * feature bullet per attribute, a description. The BM25 index covers what WebShop's
 * Lucene index covers: title, description, first bullet and the option text. A task
 * (webshop_goal_make) is a function of (catalogue, categories, seed, split). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/webshop.h"
#include "common/util.h"

static const char *const ws_descriptors[WS_NCAT][8] = {
    {"Professional", "Premium", "Luxury", "Classic", "Daily", "Advanced", "Pure", "Gentle"},
    {"Gourmet", "Premium", "Classic", "Artisan", "Authentic", "Farmhouse", "Select", "Signature"},
    {"Classic", "Essential", "Everyday", "Athletic", "Casual", "Vintage", "Modern", "Urban"},
    {"Modern", "Rustic", "Industrial", "Contemporary", "Farmhouse", "Scandinavian", "Minimalist",
     "Vintage"},
    {"Portable", "Smart", "Ultra", "Pro", "Premium", "Advanced", "Digital", "Elite"},
};

static const char *const ws_sentences[WS_NCAT][6] = {
    {"gentle formula for everyday use", "leaves a clean and fresh feel",
     "packed in a recyclable bottle", "made for all hair and skin types",
     "loved by customers around the world", "an easy routine at home or on the go"},
    {"a tasty choice for snacks and meals", "packed fresh in a resealable bag",
     "great for the office, school or travel", "made with care by our kitchen team",
     "a pantry favorite for the whole family", "enjoy it at home or on the road"},
    {"soft feel that lasts wash after wash", "designed for comfort all day long",
     "a versatile piece for work or weekend", "easy to pair with jeans or shorts",
     "great gift for friends and family", "holds its shape after many wears"},
    {"sturdy build for years of use", "clean lines that suit any decor",
     "clear instructions and all tools included", "a stylish and practical addition to your home",
     "smooth surface that wipes clean", "fits well in bedrooms, offices and dorms"},
    {"works with phones, tablets and laptops", "a sleek body that fits in a bag",
     "backed by a friendly support team", "simple setup in minutes", "durable shell for daily use",
     "tested for safety and reliability"},
};

static const char *const ws_syllables[20] = {"ka", "lo", "mi", "ra", "ve", "zu", "to",
                                             "ne", "pa", "si", "do", "fe", "lu", "ba",
                                             "ri", "no", "xa", "ti", "mo", "qui"};

/* ---- small text helpers ---- */

static int ws_arena_put(ws_catalog *c, const char *s, size_t n) {
    if (c->arena_len + n + 1 > c->arena_cap) {
        size_t cap = c->arena_cap ? c->arena_cap : 1 << 20;
        while (c->arena_len + n + 1 > cap) cap *= 2;
        char *q = realloc(c->arena, cap);
        if (!q) return -1;
        c->arena = q;
        c->arena_cap = cap;
    }
    memcpy(c->arena + c->arena_len, s, n);
    c->arena_len += n;
    c->arena[c->arena_len] = '\0';
    return 0;
}

/* Catalogue texts are built with seed_sbuf_cats, printf-free: printf dominated the build
 * time. */

/* Appends s with the first letter of each word upper-cased ("paraben free" -> "Paraben Free"). */
static void ws_put_title_case(seed_sbuf *b, const char *s) {
    size_t at = b->n;
    seed_sbuf_puts(b, s);
    for (int start = 1; at < b->n; at++) {
        char ch = b->p[at];
        if (start && ch >= 'a' && ch <= 'z') b->p[at] = (char)(ch - 32);
        start = ch == ' ';
    }
}

static void ws_put_capitalized(seed_sbuf *b, const char *s) {
    size_t at = b->n;
    seed_sbuf_puts(b, s);
    if (at < b->n && b->p[at] >= 'a' && b->p[at] <= 'z') b->p[at] = (char)(b->p[at] - 32);
}

const char *webshop_attr(const ws_catalog *c, int i, int k) {
    return webshop_types[c->p[i].type].attrs[c->p[i].attr[k]];
}

const char *webshop_opt_name(const ws_catalog *c, int i, int o) {
    return webshop_optkinds[webshop_types[c->p[i].type].opt[o]].name;
}

const char *webshop_opt_value(const ws_catalog *c, int i, int o, int v) {
    return webshop_optkinds[webshop_types[c->p[i].type].opt[o]].values[v];
}

void webshop_product_category(const ws_catalog *c, int i, char *buf, size_t cap) {
    const ws_type *t = &webshop_types[c->p[i].type];
    snprintf(buf, cap, "%s › %s", webshop_cat_roots[t->cat], t->path);
}

int webshop_nouns(const ws_catalog *c, int i, char *buf, size_t cap) {
    seed_sbuf b;
    seed_sbuf_init_fixed(&b, buf, cap);
    int n = 1;
    for (const char *q = c->brands[c->p[i].brand]; *q; q++)
        seed_sbuf_appendf(&b, "%c", *q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
    const char *t = webshop_types[c->p[i].type].name;
    seed_sbuf_appendf(&b, " %s", t);
    for (const char *q = t; *q; q++) n += *q == ' ';
    return n + 1;
}

static int ws_count(const char *const *list) {
    int n = 0;
    while (list[n]) n++;
    return n;
}

/* k distinct indices of [0, n) into out, in increasing order. */
static void ws_pick(seed_rng *r, int n, int k, uint8_t *out) {
    uint8_t idx[16];
    for (int i = 0; i < n; i++) idx[i] = (uint8_t)i;
    for (int i = 0; i < k; i++) {
        int j = i + (int)seed_rng_below(r, (uint64_t)(n - i));
        uint8_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    for (int i = 0; i < k; i++) out[i] = idx[i];
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            uint8_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
}

/* Brands: pronounceable made-up names that contain no option value (so a title never
 * matches a wrong option by goal.py's substring test). */
static void ws_make_brands(ws_catalog *c) {
    seed_rng r;
    seed_rng_init(&r, seed_hash_mix(c->seed, 0xb4a4d5ULL));
    c->n_brands = 0;
    for (int tries = 0; c->n_brands < 256 && tries < 100000; tries++) {
        char name[16];
        int syl = 2 + (int)seed_rng_below(&r, 2);
        size_t len = 0;
        for (int s = 0; s < syl; s++) {
            const char *y = ws_syllables[seed_rng_below(&r, 20)];
            size_t n = strlen(y);
            memcpy(name + len, y, n);
            len += n;
        }
        name[len] = '\0';
        int bad = 0;
        for (int k = 0; !bad && k < webshop_n_optkinds; k++)
            for (int v = 0; !bad && webshop_optkinds[k].values[v]; v++)
                bad = strstr(name, webshop_optkinds[k].values[v]) != NULL;
        for (int b = 0; !bad && b < c->n_brands; b++)
            bad = c->brands[b][0] == name[0] - 32 && strcmp(c->brands[b] + 1, name + 1) == 0;
        if (bad) continue;
        name[0] = (char)(name[0] - 32);
        memcpy(c->brands[c->n_brands++], name, len + 1);
    }
}

/* ---- one product ---- */

static int ws_make_product(ws_catalog *c, int i, char *tmp, size_t tmp_cap) {
    ws_product *p = &c->p[i];
    memset(p, 0, sizeof *p);
    seed_rng r;
    seed_rng_init(&r, seed_hash_mix(c->seed, (uint64_t)i + 1));
    p->type = (uint16_t)(i % webshop_n_types);
    const ws_type *t = &webshop_types[p->type];
    p->cat = (uint8_t)t->cat;
    p->unseen = (seed_hash_mix(c->seed ^ 0x5ee5eeULL, (uint64_t)i) & 3) == 0;
    p->brand = (uint16_t)seed_rng_below(&r, (uint64_t)c->n_brands);
    int desc = (int)seed_rng_below(&r, 8);
    int n_attrs = ws_count(t->attrs);
    int want = 3 + (int)seed_rng_below(&r, 3); /* drawn once: SEED_MIN evaluates twice */
    p->n_attr = (uint8_t)SEED_MIN(n_attrs, want);
    ws_pick(&r, n_attrs, p->n_attr, p->attr);
    /* shuffle the attribute order too: the title names the first ones */
    for (int k = p->n_attr - 1; k > 0; k--) {
        int j = (int)seed_rng_below(&r, (uint64_t)k + 1);
        uint8_t x = p->attr[k];
        p->attr[k] = p->attr[j];
        p->attr[j] = x;
    }
    for (int o = 0; o < WS_MAX_OPT && t->opt[o] >= 0; o++) {
        int nv = ws_count(webshop_optkinds[t->opt[o]].values);
        int nw = 3 + (int)seed_rng_below(&r, 3);
        p->n_val[o] = (uint8_t)SEED_MIN(nv, nw);
        ws_pick(&r, nv, p->n_val[o], p->val[o]);
        p->n_opt++;
    }
    p->price_cents =
        t->price_lo * 100 + (int)seed_rng_below(&r, (uint64_t)(t->price_hi - t->price_lo) * 100);
    /* ASIN: an affine bijection of i modulo 36^8 (multiplier coprime to 36). */
    uint64_t m = 2821109907456ULL; /* 36^8 */
    uint64_t off = seed_hash_mix(c->seed, 0xa51ULL) % m;
    uint64_t code = ((uint64_t)i * 1500450271ULL + off) % m;
    p->asin[0] = 'B';
    p->asin[1] = '0';
    for (int k = 9; k >= 2; k--) {
        int d = (int)(code % 36);
        code /= 36;
        p->asin[k] = (char)(d < 10 ? '0' + d : 'A' + d - 10);
    }
    p->asin[10] = '\0';

    const char *brand = c->brands[p->brand];
    const char *dsc = ws_descriptors[t->cat][desc];
    /* title */
    seed_sbuf b;
    seed_sbuf_init_fixed(&b, tmp, tmp_cap);
    int form = (int)seed_rng_below(&r, 4);
    if (form == 3) {
        seed_sbuf_cats(&b, brand, " ", NULL);
        ws_put_title_case(&b, webshop_attr(c, i, 0));
        seed_sbuf_puts(&b, " ");
        ws_put_title_case(&b, t->name);
    } else {
        seed_sbuf_cats(&b, brand, " ", NULL);
        if (form != 1) seed_sbuf_cats(&b, dsc, " ", NULL);
        ws_put_title_case(&b, t->name);
        seed_sbuf_puts(&b, form == 0 ? ", " : form == 1 ? " - " : " with ");
        ws_put_title_case(&b, webshop_attr(c, i, 0));
        if (form != 0) {
            seed_sbuf_puts(&b, form == 1 ? ", " : " and ");
            ws_put_title_case(&b, webshop_attr(c, i, 1));
        }
    }
    p->title = (uint32_t)c->arena_len;
    if (ws_arena_put(c, tmp, b.n)) return -1;
    c->arena_len++; /* keep the NUL */
    /* bullets: one per attribute */
    seed_sbuf_init_fixed(&b, tmp, tmp_cap);
    for (int k = 0; k < p->n_attr; k++) {
        if (k) seed_sbuf_puts(&b, "\n");
        ws_put_title_case(&b, webshop_attr(c, i, k));
        seed_sbuf_cats(&b, ": ", ws_sentences[t->cat][seed_rng_below(&r, 6)], NULL);
    }
    p->n_bullets = p->n_attr;
    p->bullets = (uint32_t)c->arena_len;
    if (ws_arena_put(c, tmp, b.n)) return -1;
    c->arena_len++;
    /* description */
    seed_sbuf_init_fixed(&b, tmp, tmp_cap);
    seed_sbuf_cats(&b, brand, " ", dsc, " ", t->name, ", ", NULL);
    seed_sbuf_cats(&b, ws_sentences[t->cat][seed_rng_below(&r, 6)], ". Features: ", NULL);
    for (int k = 0; k < p->n_attr; k++)
        seed_sbuf_cats(&b,
                       k == 0               ? ""
                       : k + 1 == p->n_attr ? " and "
                                            : ", ",
                       webshop_attr(c, i, k), NULL);
    seed_sbuf_puts(&b, ". ");
    ws_put_capitalized(&b, ws_sentences[t->cat][seed_rng_below(&r, 6)]);
    seed_sbuf_puts(&b, ".");
    p->desc = (uint32_t)c->arena_len;
    if (ws_arena_put(c, tmp, b.n)) return -1;
    c->arena_len++;
    return b.overflow ? -1 : 0;
}

/* WebShop's Lucene document: title, description, first bullet and the option text. */
static const char *ws_doc_text(int i, void *ctx, char *buf, size_t cap) {
    const ws_catalog *c = ctx;
    const ws_product *p = &c->p[i];
    seed_sbuf b;
    seed_sbuf_init_fixed(&b, buf, cap);
    const char *bul = webshop_bullets(c, i);
    const char *nl = strchr(bul, '\n');
    seed_sbuf_cats(&b, webshop_title(c, i), " ", webshop_desc(c, i), " ", NULL);
    size_t first = nl ? (size_t)(nl - bul) : strlen(bul);
    if (b.n + first + 2 < b.cap) seed_sbuf_append(&b, bul, first);
    seed_sbuf_puts(&b, " ");
    for (int o = 0; o < p->n_opt; o++) {
        seed_sbuf_cats(&b, o ? ", and " : "", webshop_opt_name(c, i, o), ": ", NULL);
        for (int v = 0; v < p->n_val[o]; v++)
            seed_sbuf_cats(&b, v ? ", " : "", webshop_opt_value(c, i, o, p->val[o][v]), NULL);
    }
    return buf;
}

void webshop_catalog_free(ws_catalog *c) {
    if (!c) return;
    free(c->p);
    free(c->arena);
    for (int k = 0; k < WS_NCAT; k++) free(c->pool[k][0]), free(c->pool[k][1]);
    webshop_index_free(&c->idx);
    memset(c, 0, sizeof *c);
}

int webshop_catalog_build(ws_catalog *c, uint64_t seed, int n_products, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    if (n_products < WS_NCAT * 2 * webshop_n_types || n_products > 1000000)
        return seed_errf(err, errlen, "webshop: products must be from %d to 1000000, got %d",
                         WS_NCAT * 2 * webshop_n_types, n_products);
    c->seed = seed;
    c->n = n_products;
    c->p = calloc((size_t)n_products, sizeof *c->p);
    for (int k = 0; k < WS_NCAT; k++)
        for (int u = 0; u < 2; u++) c->pool[k][u] = malloc((size_t)n_products * sizeof(int));
    int oom = !c->p;
    for (int k = 0; k < WS_NCAT; k++) oom |= !c->pool[k][0] || !c->pool[k][1];
    if (oom) {
        webshop_catalog_free(c);
        return seed_errf(err, errlen, "webshop: out of memory for %d products", n_products);
    }
    ws_make_brands(c);
    char tmp[1024];
    for (int i = 0; i < n_products; i++) {
        if (ws_make_product(c, i, tmp, sizeof tmp)) {
            webshop_catalog_free(c);
            return seed_errf(err, errlen, "webshop: out of memory building product %d", i);
        }
        const ws_product *p = &c->p[i];
        c->pool[p->cat][p->unseen][c->n_pool[p->cat][p->unseen]++] = i;
    }
    if (webshop_index_build(&c->idx, n_products, ws_doc_text, c, err, errlen)) {
        webshop_catalog_free(c);
        return -1;
    }
    return 0;
}

/* ---------------- goals ---------------- */

const char *webshop_goal_attr(const ws_catalog *c, const ws_goal *g, int k) {
    return webshop_types[c->p[g->target].type].attrs[g->attr[k]];
}

const char *webshop_goal_opt_value(const ws_catalog *c, const ws_goal *g, int o) {
    const ws_type *t = &webshop_types[c->p[g->target].type];
    return g->opt_val[o] < 0 ? NULL : webshop_optkinds[t->opt[o]].values[g->opt_val[o]];
}

static const char *ws_article(const char *word) {
    return strchr("aeiou", word[0]) && word[0] ? "an " : "a ";
}

/* Option clause in one of three styles: WebShop's synthetic goals (" with size: 8 fl oz,
 * and scent: citrus"), a short list (", size 8 fl oz and scent citrus"), or values first
 * (" in 8 fl oz size, citrus scent"). */
static void ws_put_options(seed_sbuf *b, const ws_catalog *c, const ws_goal *g, int style) {
    const ws_product *p = &c->p[g->target];
    for (int o = 0; o < p->n_opt; o++) {
        const char *n = webshop_opt_name(c, g->target, o), *v = webshop_goal_opt_value(c, g, o);
        if (style == 0)
            seed_sbuf_appendf(b, "%s%s: %s", o ? ", and " : " with ", n, v);
        else if (style == 1)
            seed_sbuf_appendf(b, "%s%s %s", o ? " and " : ", ", n, v);
        else
            seed_sbuf_appendf(b, "%s%s %s", o ? ", " : " in ", v, n);
    }
}

void webshop_put_goal_attrs(seed_sbuf *b, const ws_catalog *c, const ws_goal *g) {
    for (int k = 0; k < g->n_attr; k++)
        seed_sbuf_appendf(b, "%s%s",
                          k == 0               ? ""
                          : k + 1 == g->n_attr ? " and "
                                               : ", ",
                          webshop_goal_attr(c, g, k));
}

/* The instruction: templates 0-4 serve train and seen, 5-7 unseen. */
static void ws_goal_text(const ws_catalog *c, ws_goal *g) {
    seed_sbuf b;
    seed_sbuf_init_fixed(&b, g->text, sizeof g->text);
    const char *type = webshop_types[c->p[g->target].type].name;
    const char *a0 = webshop_goal_attr(c, g, 0);
    switch (g->tmpl) {
    case 0:
        seed_sbuf_appendf(&b, "i need %s", ws_article(a0));
        webshop_put_goal_attrs(&b, c, g);
        seed_sbuf_appendf(&b, " %s", type);
        ws_put_options(&b, c, g, 0);
        break;
    case 1:
        seed_sbuf_appendf(&b, "i'm looking for %s%s that is ", ws_article(type), type);
        webshop_put_goal_attrs(&b, c, g);
        ws_put_options(&b, c, g, 1);
        break;
    case 2:
        seed_sbuf_appendf(&b, "i want to buy %s", ws_article(a0));
        webshop_put_goal_attrs(&b, c, g);
        seed_sbuf_appendf(&b, " %s", type);
        ws_put_options(&b, c, g, 1);
        break;
    case 3:
        seed_sbuf_appendf(&b, "find me %s%s which is ", ws_article(type), type);
        webshop_put_goal_attrs(&b, c, g);
        ws_put_options(&b, c, g, 0);
        break;
    case 4:
        seed_sbuf_appendf(&b, "i am searching for %s", ws_article(a0));
        webshop_put_goal_attrs(&b, c, g);
        seed_sbuf_appendf(&b, " %s", type);
        ws_put_options(&b, c, g, 2);
        break;
    case 5:
        seed_sbuf_appendf(&b, "can you get me %s%s with ", ws_article(type), type);
        webshop_put_goal_attrs(&b, c, g);
        ws_put_options(&b, c, g, 2);
        break;
    case 6:
        seed_sbuf_appendf(&b, "i'd like %s", ws_article(a0));
        webshop_put_goal_attrs(&b, c, g);
        seed_sbuf_appendf(&b, " %s", type);
        ws_put_options(&b, c, g, 0);
        break;
    default:
        seed_sbuf_appendf(&b, "please order %s%s that is ", ws_article(type), type);
        webshop_put_goal_attrs(&b, c, g);
        ws_put_options(&b, c, g, 1);
        break;
    }
    if (g->price_upper != WS_PRICE_NONE)
        seed_sbuf_appendf(&b, ", and price lower than %d.00 dollars", g->price_upper);
}

int webshop_goal_make(const ws_catalog *c, unsigned cat_mask, uint64_t seed, env_split split,
                      ws_goal *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    int cats[WS_NCAT], nc = 0;
    for (int k = 0; k < WS_NCAT; k++)
        if (cat_mask & (1u << k)) cats[nc++] = k;
    if (!nc) return seed_errf(err, errlen, "webshop: no category selected");
    int unseen = split == ENV_SPLIT_UNSEEN;
    seed_rng r;
    seed_rng_init(&r, seed_hash_mix(seed_hash_mix(c->seed, 0x90a1ULL + (uint64_t)split),
                                    env_level_seed(seed, split)));
    int cat = cats[seed_rng_below(&r, (uint64_t)nc)];
    if (c->n_pool[cat][unseen] == 0)
        return seed_errf(err, errlen, "webshop: category %s has no %s target products",
                         webshop_cat_names[cat], unseen ? "unseen" : "seen");
    g->target = c->pool[cat][unseen][seed_rng_below(&r, (uint64_t)c->n_pool[cat][unseen])];
    const ws_product *p = &c->p[g->target];
    int want = 2 + (seed_rng_below(&r, 3) == 0);
    g->n_attr = SEED_MIN((int)p->n_attr, want);
    uint8_t pick[WS_MAX_GOAL_ATTR];
    ws_pick(&r, p->n_attr, g->n_attr, pick);
    for (int k = 0; k < g->n_attr; k++) g->attr[k] = p->attr[pick[k]];
    for (int o = 0; o < WS_MAX_OPT; o++)
        g->opt_val[o] = o < p->n_opt ? (int8_t)p->val[o][seed_rng_below(&r, p->n_val[o])] : -1;
    /* goal.py: price_range = [p for p in PRICE_RANGE if p > price][:4]; two of them
     * sampled, the larger is the bound. */
    int range[4], nr = 0;
    for (int k = 1; k < 100 && nr < 4; k++)
        if (k * 1000 > p->price_cents) range[nr++] = k * 10;
    if (nr >= 2) {
        int a = (int)seed_rng_below(&r, (uint64_t)nr),
            b2 = (int)seed_rng_below(&r, (uint64_t)nr - 1);
        if (b2 >= a) b2++;
        g->price_upper = SEED_MAX(range[a], range[b2]);
    } else {
        g->price_upper = WS_PRICE_NONE;
    }
    g->tmpl = unseen ? WS_TEMPLATES_SEEN + (int)seed_rng_below(&r, WS_TEMPLATES - WS_TEMPLATES_SEEN)
                     : (int)seed_rng_below(&r, WS_TEMPLATES_SEEN);
    ws_goal_text(c, g);
    return 0;
}
