/* webshop_reward.c — WebShop's reward (web_agent_site/engine/goal.py get_reward,
 * get_type_reward, get_attribute_reward, get_option_reward; normalize.py's
 * normalize_color) and thefuzz's fuzz.token_set_ratio, restated in C.
 *
 * Contract: same results as the Python for ASCII text (the catalogue is ASCII) and for
 * Latin-1 letters, which thefuzz's force_ascii drops; other code points are kept as
 * letters (rapidfuzz would keep letters and blank symbols) and compared bytewise. The
 * one part not restated is spaCy: get_type_reward's noun lists are inputs (the env gives
 * the title's brand and product noun phrase). token_set_ratio is computed exactly in
 * integers (Python rounds the double score half to even; the two agree for any string
 * shorter than 10^13 characters), so "score > 85" is exact. Nothing here keeps state. */
#include <stdlib.h>
#include <string.h>

#include "envs/webshop.h"
#include "common/util.h"

const char *webshop_normalize_color(const char *s) {
    for (int i = 0; webshop_color_set[i]; i++)
        if (strstr(s, webshop_color_set[i])) return webshop_color_set[i];
    return s;
}

/* thefuzz full_process(s, force_ascii=True): drop U+0080..U+00FF, blank what is not a
 * letter or digit, lower-case, strip. Returns a malloc'd string (NULL when out of memory). */
static char *ws_full_process(const char *s) {
    size_t n = strlen(s);
    char *o = malloc(n + 1);
    if (!o) return NULL;
    size_t k = 0;
    const unsigned char *q = (const unsigned char *)s;
    while (*q) {
        unsigned char c = *q;
        if (c < 0x80) {
            if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
                o[k++] = (char)c;
            else if (c >= 'A' && c <= 'Z')
                o[k++] = (char)(c + 32);
            else
                o[k++] = ' ';
            q++;
            continue;
        }
        size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        size_t have = 1;
        while (have < len && (q[have] & 0xc0) == 0x80) have++;
        if (len == 1 || have < len) { /* not UTF-8: a separator */
            o[k++] = ' ';
            q += have;
            continue;
        }
        if (c == 0xc2 || c == 0xc3) { /* U+0080..U+00FF: force_ascii drops it */
            q += 2;
            continue;
        }
        memcpy(o + k, q, len);
        k += len;
        q += len;
    }
    o[k] = '\0';
    return o;
}

static int ws_cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Splits a processed string into its sorted, distinct tokens (pointers into s, which is
 * cut at the blanks). Returns the count, or -1 when out of memory. */
static int ws_token_set(char *s, char ***out) {
    size_t n = strlen(s), cap = n / 2 + 1;
    char **t = malloc(cap * sizeof *t);
    if (!t) return -1;
    int k = 0;
    for (char *q = s; *q;) {
        while (*q == ' ') *q++ = '\0';
        if (!*q) break;
        t[k++] = q;
        while (*q && *q != ' ') q++;
    }
    qsort(t, (size_t)k, sizeof *t, ws_cmp_str);
    int m = 0;
    for (int i = 0; i < k; i++)
        if (m == 0 || strcmp(t[m - 1], t[i])) t[m++] = t[i];
    *out = t;
    return m;
}

/* Longest common subsequence of a and b (bytes). */
static long ws_lcs(const char *a, size_t na, const char *b, size_t nb) {
    if (!na || !nb) return 0;
    uint32_t stack[512], *row = nb + 1 <= 512 ? stack : malloc((nb + 1) * sizeof *row);
    if (!row) return -1;
    memset(row, 0, (nb + 1) * sizeof *row);
    for (size_t i = 0; i < na; i++) {
        uint32_t diag = 0;
        for (size_t j = 0; j < nb; j++) {
            uint32_t up = row[j + 1];
            row[j + 1] = a[i] == b[j] ? diag + 1 : (up > row[j] ? up : row[j]);
            diag = up;
        }
    }
    long r = row[nb];
    if (row != stack) free(row);
    return r;
}

static size_t ws_joined_len(char **t, int n) {
    size_t len = 0;
    for (int i = 0; i < n; i++) len += strlen(t[i]) + (i > 0);
    return len;
}

static char *ws_join(char **t, int n) {
    char *o = malloc(ws_joined_len(t, n) + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        if (i) o[k++] = ' ';
        size_t l = strlen(t[i]);
        memcpy(o + k, t[i], l);
        k += l;
    }
    o[k] = '\0';
    return o;
}

/* round(100 * (L - d) / L) with Python's half-to-even rounding. */
static int ws_round_ratio(long d, long L) {
    if (L <= 0) return 100;
    long num = 100 * (L - d), q = num / L, r = num % L;
    if (2 * r > L || (2 * r == L && (q & 1))) q++;
    return (int)q;
}

int webshop_token_set_ratio(const char *a, const char *b) {
    if (!a || !b) return 0;
    char *pa = ws_full_process(a), *pb = ws_full_process(b);
    char **ta = NULL, **tb = NULL;
    int result = 0;
    int na = pa ? ws_token_set(pa, &ta) : -1, nb = pb ? ws_token_set(pb, &tb) : -1;
    if (na <= 0 || nb <= 0) goto done;
    /* set decomposition by merging the two sorted lists */
    char **inter = malloc((size_t)(na + nb) * sizeof *inter);
    char **dab = malloc((size_t)na * sizeof *dab), **dba = malloc((size_t)nb * sizeof *dba);
    int ni = 0, nab = 0, nba = 0;
    if (!inter || !dab || !dba) goto done2;
    for (int i = 0, j = 0; i < na || j < nb;) {
        int c = i == na ? 1 : j == nb ? -1 : strcmp(ta[i], tb[j]);
        if (c == 0) {
            inter[ni++] = ta[i++];
            j++;
        } else if (c < 0) {
            dab[nab++] = ta[i++];
        } else {
            dba[nba++] = tb[j++];
        }
    }
    if (ni && (!nab || !nba)) {
        result = 100;
        goto done2;
    }
    {
        char *ab = ws_join(dab, nab), *ba = ws_join(dba, nba);
        if (ab && ba) {
            long ab_len = (long)strlen(ab), ba_len = (long)strlen(ba);
            long sect = (long)ws_joined_len(inter, ni);
            long sect_ab = sect + (sect != 0) + ab_len, sect_ba = sect + (sect != 0) + ba_len;
            long lcs = ws_lcs(ab, (size_t)ab_len, ba, (size_t)ba_len);
            long dist = ab_len + ba_len - 2 * (lcs < 0 ? 0 : lcs);
            /* best of the three ratios, compared exactly as fractions (L - d) / L */
            long bd = dist, bl = sect_ab + sect_ba;
            if (sect) {
                long cand[2][2] = {{(sect != 0) + ab_len, sect + sect_ab},
                                   {(sect != 0) + ba_len, sect + sect_ba}};
                for (int k = 0; k < 2; k++)
                    if ((cand[k][1] - cand[k][0]) * bl > (bl - bd) * cand[k][1]) {
                        bd = cand[k][0];
                        bl = cand[k][1];
                    }
            }
            result = ws_round_ratio(bd, bl);
        }
        free(ab);
        free(ba);
    }
done2:
    free(inter);
    free(dab);
    free(dba);
done:
    free(ta);
    free(tb);
    free(pa);
    free(pb);
    return result;
}

/* ---- goal.py ---- */

static char *ws_lower_dup(const char *s) {
    size_t n = strlen(s);
    char *o = malloc(n + 1);
    if (!o) return NULL;
    for (size_t i = 0; i <= n; i++) o[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    return o;
}

static char *ws_join_lower(const char *const *parts, int n) {
    size_t len = 0;
    for (int i = 0; i < n; i++) len += strlen(parts[i]) + 1;
    char *o = malloc(len + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        if (i) o[k++] = ' ';
        for (const char *q = parts[i]; *q; q++)
            o[k++] = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
    }
    o[k] = '\0';
    return o;
}

static int ws_py_space(unsigned char c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
}

/* The stripped '›'-separated parts of a product_category (pointer and length each). */
typedef struct ws_part {
    const char *p;
    size_t n;
} ws_part;

static int ws_category_parts(const char *s, ws_part **out) {
    int cap = 1;
    for (const char *q = s; (q = strstr(q, "\xe2\x80\xba")); q += 3) cap++;
    ws_part *parts = malloc((size_t)cap * sizeof *parts);
    if (!parts) return -1;
    int n = 0;
    for (const char *q = s;;) {
        const char *e = strstr(q, "\xe2\x80\xba"); /* › */
        size_t len = e ? (size_t)(e - q) : strlen(q);
        const char *a = q;
        while (len && ws_py_space((unsigned char)*a)) a++, len--;
        while (len && ws_py_space((unsigned char)a[len - 1])) len--;
        parts[n++] = (ws_part){a, len};
        if (!e) break;
        q = e + 3;
    }
    *out = parts;
    return n;
}

/* len(set(a) & set(b)) for two part lists. */
static int ws_common_parts(const ws_part *a, int na, const ws_part *b, int nb) {
    int common = 0;
    for (int i = 0; i < na; i++) {
        int dup = 0;
        for (int k = 0; k < i && !dup; k++)
            dup = a[k].n == a[i].n && memcmp(a[k].p, a[i].p, a[i].n) == 0;
        if (dup) continue;
        for (int j = 0; j < nb; j++)
            if (b[j].n == a[i].n && memcmp(b[j].p, a[i].p, a[i].n) == 0) {
                common++;
                break;
            }
    }
    return common;
}

static int ws_in_list_lower(const char *const *list, int n, const char *lower_word) {
    for (int i = 0; i < n; i++) {
        const char *a = list[i], *b = lower_word;
        while (*a && *b && (*a >= 'A' && *a <= 'Z' ? *a + 32 : *a) == *b) a++, b++;
        if (!*a && !*b) return 1;
    }
    return 0;
}

int webshop_reward(const ws_rprod *p, const ws_rgoal *g, double price, const char *const *opt_names,
                   const char *const *opt_values, int n_opts, ws_score *out, char *err,
                   size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!p || !g || !p->title || !p->description || !p->query || !p->product_category ||
        !g->query || !g->product_category)
        return seed_errf(err, errlen, "webshop_reward: a product or goal string is missing");
    if (g->n_attrs < 1 || !g->attrs)
        return seed_errf(err, errlen,
                         "webshop_reward: the goal has no attributes (goal.py "
                         "divides by their count)");
    if (!(g->price_upper > 0))
        return seed_errf(err, errlen, "webshop_reward: price_upper must be > 0");
    if (n_opts < 0 || (n_opts && (!opt_names || !opt_values)) || g->n_options < 0 ||
        (g->n_options && !g->options) || p->n_attrs < 0 || p->n_bullets < 0 || p->n_nouns < 0 ||
        g->n_nouns < 0)
        return seed_errf(err, errlen, "webshop_reward: a list is malformed");
    /* get_type_reward */
    out->query_match = strcmp(p->query, g->query) == 0;
    ws_part *pc = NULL, *gc = NULL;
    int npc = ws_category_parts(p->product_category, &pc);
    int ngc = ws_category_parts(g->product_category, &gc);
    if (npc < 0 || ngc < 0) {
        free(pc), free(gc);
        return seed_errf(err, errlen, "webshop_reward: out of memory");
    }
    out->category_match = ws_common_parts(pc, npc, gc, ngc) >= 2;
    free(pc);
    free(gc);
    if (g->n_nouns == 0) {
        out->title_score = 0.2;
    } else {
        int inter = 0;
        for (int j = 0; j < g->n_nouns; j++) {
            char *w = ws_lower_dup(g->nouns[j]);
            if (!w) return seed_errf(err, errlen, "webshop_reward: out of memory");
            int seen_before = 0;
            for (int k = 0; k < j && !seen_before; k++) {
                char *v = ws_lower_dup(g->nouns[k]);
                seen_before = v && strcmp(v, w) == 0;
                free(v);
            }
            if (!seen_before && ws_in_list_lower(p->nouns, p->n_nouns, w)) inter++;
            free(w);
        }
        out->title_score = (double)inter / (double)g->n_nouns;
    }
    out->r_type = 1.0;
    int match = out->query_match || out->category_match || out->title_score > 0.2;
    if (!match) out->r_type = 0.5;
    if (out->title_score < 0.1) out->r_type = 0.1;
    if (out->title_score == 0.0) out->r_type = 0.0;
    /* r_price */
    out->r_price = price <= g->price_upper;
    /* texts for the substring tests */
    char *title = ws_lower_dup(p->title), *desc = ws_lower_dup(p->description);
    char *bul = ws_join_lower(p->bullets, p->n_bullets);
    if (!title || !desc || !bul) {
        free(title), free(desc), free(bul);
        return seed_errf(err, errlen, "webshop_reward: out of memory");
    }
    /* get_attribute_reward */
    for (int j = 0; j < g->n_attrs; j++) {
        int matched = 0;
        for (int i = 0; i < p->n_attrs && !matched; i++)
            matched = webshop_token_set_ratio(p->attrs[i], g->attrs[j]) > 85;
        if (!matched)
            matched =
                strstr(title, g->attrs[j]) || strstr(bul, g->attrs[j]) || strstr(desc, g->attrs[j]);
        out->n_attr_match += matched;
    }
    /* get_option_reward */
    for (int i = 0; i < n_opts; i++) {
        const char *v = webshop_normalize_color(opt_values[i]);
        char *k = ws_lower_dup(opt_names[i]);
        if (!k) {
            free(title), free(desc), free(bul);
            return seed_errf(err, errlen, "webshop_reward: out of memory");
        }
        int matched = 0;
        if (strcmp(k, "size") == 0) {
            for (int j = 0; j < g->n_options && !matched; j++)
                matched = strcmp(v, webshop_normalize_color(g->options[j])) == 0;
        } else {
            for (int j = 0; j < g->n_options && !matched; j++)
                matched = webshop_token_set_ratio(webshop_normalize_color(g->options[j]), v) > 85;
        }
        free(k);
        if (!matched) matched = strstr(title, v) || strstr(bul, v) || strstr(desc, v);
        out->n_opt_match += matched;
    }
    free(title);
    free(desc);
    free(bul);
    out->n_goal_attrs = g->n_attrs;
    out->n_goal_opts = g->n_options;
    out->total = (double)(out->n_attr_match + out->n_opt_match + out->r_price) /
                 (double)(g->n_attrs + g->n_options + 1);
    out->total *= out->r_type;
    return 0;
}
