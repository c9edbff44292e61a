/* webshop_index.c — the webshop env's search engine: BM25 over an in-memory inverted
 * index, ranking as WebShop's pyserini/Lucene searcher does (k1 = 0.9, b = 0.4, Lucene's
 * idf log(1 + (N - n + 0.5) / (n + 0.5)), score desc then doc id asc, top 50).
 *
 * Why our own index and not Xapian (allowed, but a new dependency): the catalogue is
 * generated in memory by every env (and again by every hindsight replay), a few thousand
 * short documents; an index of them is a few hundred lines, builds in milliseconds with
 * no files, and a query is one pass over a few posting lists into a score array — bench
 * /envs/bench_webshop measures it (tens of thousands of queries/s on one core). Xapian
 * would add a C++ library to every actor and analyzer, a database to write per env, and
 * its own BM25 variant (BM25+ with different defaults) rather than Lucene's.
 *
 * Differences from Lucene, on purpose: document lengths are exact (Lucene stores them
 * lossily in one byte), and terms are stemmed with Lucene's EnglishMinimalStemmer (plural
 * endings) instead of Porter. Contract: a function of the documents only; searches share
 * the index read-only, each with its own scratch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "envs/webshop.h"
#include "common/util.h"

#define WS_BM25_K1 0.9f
#define WS_BM25_B 0.4f
enum { WS_TERM_MAX = 63, WS_QUERY_TERMS = 64 };

/* Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET. */
static const char *const ws_stop[] = {
    "a",    "an",    "and",   "are",  "as",   "at", "be",  "but",  "by",   "for",  "if",  "in",
    "into", "is",    "it",    "no",   "not",  "of", "on",  "or",   "such", "that", "the", "their",
    "then", "there", "these", "they", "this", "to", "was", "will", "with", NULL};

static int ws_is_stop(const char *t, size_t n) {
    if (n > 5) return 0;
    for (int i = 0; ws_stop[i]; i++)
        if (ws_stop[i][0] == t[0] && strncmp(ws_stop[i], t, n) == 0 && ws_stop[i][n] == '\0')
            return 1;
    return 0;
}

/* Lucene's EnglishMinimalStemmer.stem. */
static size_t ws_stem(char *s, size_t len) {
    if (len < 3 || s[len - 1] != 's') return len;
    switch (s[len - 2]) {
    case 'u':
    case 's':
        return len;
    case 'e':
        if (len > 3 && s[len - 3] == 'i' && s[len - 4] != 'a' && s[len - 4] != 'e') {
            s[len - 3] = 'y';
            return len - 2;
        }
        if (s[len - 3] == 'i' || s[len - 3] == 'a' || s[len - 3] == 'o' || s[len - 3] == 'e')
            return len;
        return len - 1;
    default:
        return len - 1;
    }
}

int webshop_analyze(const char *text, void (*fn)(const char *term, size_t len, void *ctx),
                    void *ctx) {
    int n = 0;
    const unsigned char *q = (const unsigned char *)text;
    while (*q) {
        while (*q &&
               !((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')))
            q++;
        if (!*q) break;
        char t[WS_TERM_MAX + 1];
        size_t len = 0;
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')) {
            if (len < WS_TERM_MAX) t[len++] = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
            q++;
        }
        if (ws_is_stop(t, len)) continue;
        len = ws_stem(t, len);
        t[len] = '\0';
        fn(t, len, ctx);
        n++;
    }
    return n;
}

static uint32_t ws_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* Term id of (s, n), or UINT32_MAX when absent. */
static uint32_t ws_lookup(const ws_index *ix, const char *s, size_t n) {
    if (!ix->hcap) return UINT32_MAX;
    for (uint32_t h = ws_hash(s, n) & (ix->hcap - 1);; h = (h + 1) & (ix->hcap - 1)) {
        uint32_t id = ix->slot[h];
        if (!id) return UINT32_MAX;
        const char *t = ix->terms + ix->term_off[id - 1];
        if (strncmp(t, s, n) == 0 && t[n] == '\0') return id - 1;
    }
}

/* ---- building ---- */

typedef struct ws_builder {
    ws_index *ix;
    size_t terms_len, terms_cap, off_cap;
    uint32_t *doc_terms; /* term ids of the current doc */
    size_t n_doc_terms, doc_terms_cap;
    int oom;
} ws_builder;

static int ws_grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int ws_rehash(ws_index *ix, uint32_t cap) {
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    for (uint32_t id = 0; id < ix->n_terms; id++) {
        const char *t = ix->terms + ix->term_off[id];
        uint32_t h = ws_hash(t, strlen(t)) & (cap - 1);
        while (slot[h]) h = (h + 1) & (cap - 1);
        slot[h] = id + 1;
    }
    free(ix->slot);
    ix->slot = slot;
    ix->hcap = cap;
    return 0;
}

static void ws_build_term(const char *t, size_t n, void *ctx) {
    ws_builder *b = ctx;
    ws_index *ix = b->ix;
    if (b->oom) return;
    uint32_t id = ws_lookup(ix, t, n);
    if (id == UINT32_MAX) {
        if ((ix->n_terms + 1) * 2 > ix->hcap && ws_rehash(ix, ix->hcap ? ix->hcap * 2 : 4096)) {
            b->oom = 1;
            return;
        }
        if (ws_grow((void **)&ix->terms, &b->terms_cap, b->terms_len + n + 1, 1) ||
            ws_grow((void **)&ix->term_off, &b->off_cap, ix->n_terms + 1, sizeof(uint32_t))) {
            b->oom = 1;
            return;
        }
        memcpy(ix->terms + b->terms_len, t, n);
        ix->terms[b->terms_len + n] = '\0';
        id = ix->n_terms++;
        ix->term_off[id] = (uint32_t)b->terms_len;
        b->terms_len += n + 1;
        uint32_t h = ws_hash(t, n) & (ix->hcap - 1);
        while (ix->slot[h]) h = (h + 1) & (ix->hcap - 1);
        ix->slot[h] = id + 1;
    }
    if (ws_grow((void **)&b->doc_terms, &b->doc_terms_cap, b->n_doc_terms + 1, sizeof(uint32_t))) {
        b->oom = 1;
        return;
    }
    b->doc_terms[b->n_doc_terms++] = id;
}

void webshop_index_free(ws_index *ix) {
    if (!ix) return;
    free(ix->slot);
    free(ix->term_off);
    free(ix->terms);
    free(ix->post_off);
    free(ix->post_doc);
    free(ix->post_tf);
    free(ix->idf);
    free(ix->norm);
    memset(ix, 0, sizeof *ix);
}

int webshop_index_build(ws_index *ix, int n_docs,
                        const char *(*text)(int doc, void *ctx, char *buf, size_t cap), void *ctx,
                        char *err, size_t errlen) {
    memset(ix, 0, sizeof *ix);
    ix->n_docs = n_docs;
    ws_builder b = {.ix = ix};
    /* (term, doc, tf) triples in doc order */
    uint32_t *tt = NULL, *td = NULL, *last = NULL; /* last: term -> its latest posting */
    size_t cap_last = 0, n_last = 0;
    uint16_t *tf = NULL;
    size_t nt = 0, cap_t = 0, cap_d = 0, cap_f = 0;
    uint32_t *dl = calloc((size_t)n_docs, sizeof *dl);
    char *buf = malloc(4096);
    double total = 0;
    if (!dl || !buf) b.oom = 1;
    for (int d = 0; d < n_docs && !b.oom; d++) {
        b.n_doc_terms = 0;
        webshop_analyze(text(d, ctx, buf, 4096), ws_build_term, &b);
        if (b.oom) break;
        dl[d] = (uint32_t)b.n_doc_terms;
        total += (double)b.n_doc_terms;
        /* one posting per distinct term of the doc, found through the term's last posting
         * (no per-doc sort: sorting was most of the build time) */
        if (ws_grow((void **)&last, &cap_last, ix->n_terms, sizeof *last)) {
            b.oom = 1;
            break;
        }
        for (size_t k = 0; k < b.n_doc_terms; k++) {
            uint32_t term = b.doc_terms[k];
            if (term < n_last && last[term] < nt && td[last[term]] == (uint32_t)d) {
                if (tf[last[term]] < 65535) tf[last[term]]++;
                continue;
            }
            if (ws_grow((void **)&tt, &cap_t, nt + 1, sizeof *tt) ||
                ws_grow((void **)&td, &cap_d, nt + 1, sizeof *td) ||
                ws_grow((void **)&tf, &cap_f, nt + 1, sizeof *tf)) {
                b.oom = 1;
                break;
            }
            tt[nt] = term;
            td[nt] = (uint32_t)d;
            tf[nt] = 1;
            while (n_last <= term) last[n_last++] = UINT32_MAX;
            last[term] = (uint32_t)nt++;
        }
    }
    if (!b.oom) {
        ix->post_off = calloc((size_t)ix->n_terms + 1, sizeof *ix->post_off);
        ix->post_doc = malloc((nt ? nt : 1) * sizeof *ix->post_doc);
        ix->post_tf = malloc((nt ? nt : 1) * sizeof *ix->post_tf);
        ix->idf = malloc(((size_t)ix->n_terms + 1) * sizeof *ix->idf);
        ix->norm = malloc((size_t)(n_docs ? n_docs : 1) * sizeof *ix->norm);
        b.oom = !ix->post_off || !ix->post_doc || !ix->post_tf || !ix->idf || !ix->norm;
    }
    if (!b.oom) {
        for (size_t k = 0; k < nt; k++) ix->post_off[tt[k] + 1]++;
        for (uint32_t t = 0; t < ix->n_terms; t++) {
            uint32_t df = ix->post_off[t + 1];
            ix->idf[t] = (float)log(1.0 + ((double)n_docs - df + 0.5) / (df + 0.5));
            ix->post_off[t + 1] += ix->post_off[t];
        }
        uint32_t *fill = malloc(((size_t)ix->n_terms + 1) * sizeof *fill);
        if (!fill) {
            b.oom = 1;
        } else {
            memcpy(fill, ix->post_off, ((size_t)ix->n_terms + 1) * sizeof *fill);
            for (size_t k = 0; k < nt; k++) {
                uint32_t at = fill[tt[k]]++;
                ix->post_doc[at] = td[k];
                ix->post_tf[at] = tf[k];
            }
            free(fill);
            double avgdl = n_docs ? total / n_docs : 1.0;
            if (avgdl <= 0) avgdl = 1.0;
            for (int d = 0; d < n_docs; d++)
                ix->norm[d] =
                    (float)(WS_BM25_K1 * (1.0 - WS_BM25_B + WS_BM25_B * (double)dl[d] / avgdl));
        }
    }
    free(tt);
    free(td);
    free(last);
    free(tf);
    free(dl);
    free(buf);
    free(b.doc_terms);
    if (b.oom) {
        webshop_index_free(ix);
        return seed_errf(err, errlen, "webshop: out of memory building the search index");
    }
    return 0;
}

/* ---- searching ---- */

int webshop_scratch_init(ws_search_scratch *s, int n_docs) {
    s->score = calloc((size_t)(n_docs ? n_docs : 1), sizeof *s->score);
    s->touched = malloc((size_t)(n_docs ? n_docs : 1) * sizeof *s->touched);
    if (!s->score || !s->touched) {
        webshop_scratch_free(s);
        return -1;
    }
    return 0;
}

void webshop_scratch_free(ws_search_scratch *s) {
    if (!s) return;
    free(s->score);
    free(s->touched);
    s->score = NULL;
    s->touched = NULL;
}

typedef struct ws_qterms {
    const ws_index *ix;
    uint32_t id[WS_QUERY_TERMS];
    int n;
} ws_qterms;

static void ws_query_term(const char *t, size_t n, void *ctx) {
    ws_qterms *q = ctx;
    if (q->n >= WS_QUERY_TERMS) return;
    uint32_t id = ws_lookup(q->ix, t, n);
    if (id != UINT32_MAX) q->id[q->n++] = id;
}

int webshop_search(const ws_index *ix, ws_search_scratch *s, const char *query, int *out, int max) {
    ws_qterms q = {.ix = ix};
    webshop_analyze(query ? query : "", ws_query_term, &q);
    int nt = 0;
    /* Lucene sums one clause per query term (a repeated term counts again). */
    for (int k = 0; k < q.n; k++) {
        uint32_t t = q.id[k];
        float idf = ix->idf[t];
        for (uint32_t at = ix->post_off[t]; at < ix->post_off[t + 1]; at++) {
            uint32_t d = ix->post_doc[at];
            float f = (float)ix->post_tf[at];
            if (s->score[d] == 0.0f) s->touched[nt++] = (int)d;
            s->score[d] += idf * f / (f + ix->norm[d]);
        }
    }
    /* keep the best `max` in a sorted array (score desc, doc asc) */
    int n = 0;
    for (int k = 0; k < nt && max > 0; k++) {
        int d = s->touched[k];
        float sc = s->score[d];
        if (n == max) {
            int w = out[n - 1];
            if (sc < s->score[w] || (sc == s->score[w] && d > w)) continue;
            n--;
        }
        int j = n++;
        while (j > 0 &&
               (s->score[out[j - 1]] < sc || (s->score[out[j - 1]] == sc && out[j - 1] > d))) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = d;
    }
    for (int k = 0; k < nt; k++) s->score[s->touched[k]] = 0.0f;
    return n;
}
