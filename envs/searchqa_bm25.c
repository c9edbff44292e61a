/* searchqa_bm25.c — the searchqa env's retriever: an own small BM25 inverted index.
 *
 * Why not a library: Search-R1's BM25 retriever is pyserini (Lucene, in a JVM), which
 * a C actor cannot embed; Xapian's BM25 weighting differs from Lucene's (its own idf
 * and length normalisation), and this corpus is a few thousand short passages that fit
 * in a few hundred kilobytes. Measured (bench_searchqa, Release, one core of a shared
 * 2-core machine, default 2,000-passage corpus, top 3): 1.4-2.3 us per entity-name query
 * and 12-23 us per whole-question query, against 0.36-0.57 ms and 2.2-2.9 ms for
 * rank_bm25's BM25Okapi on the same passages, tokens and queries (160-400x); the corpus
 * and index build in 10-20 ms; no service, no JVM, no per-query allocation.
 *
 * Contract (searchqa.h): Lucene's BM25 with pyserini's defaults (k1 = 0.9, b = 0.4),
 *   score(d, q) = sum over query terms t (repeats count) of
 *                 idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)),
 *   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),
 * over tokens from sq_tokenize (Lucene's lower-casing and English stop set; no
 * stemming: the generated corpus has no inflection to conflate). Exact document
 * lengths (Lucene rounds them to one byte). Deterministic order: score, then id. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "envs/searchqa.h"
#include "common/util.h"

enum { SQ_TOKEN_MAX = 64 };

/* Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (pyserini's default analyzer). */
static int sq_stopword(const char *t, size_t n) {
    static const char *const stop[] = {
        "a",   "an",    "and",  "are",   "as",    "at",   "be",   "but", "by",  "for",  "if",
        "in",  "into",  "is",   "it",    "no",    "not",  "of",   "on",  "or",  "such", "that",
        "the", "their", "then", "there", "these", "they", "this", "to",  "was", "will", "with"};
    if (n > 5) return 0;
    for (size_t i = 0; i < sizeof stop / sizeof stop[0]; i++)
        if (strlen(stop[i]) == n && memcmp(stop[i], t, n) == 0) return 1;
    return 0;
}

static int sq_tok_byte(unsigned char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch >= 0x80;
}

void sq_tokenize(const char *s, size_t len, int max_tokens,
                 void (*fn)(void *ctx, const char *tok, size_t n), void *ctx) {
    char tok[SQ_TOKEN_MAX];
    int emitted = 0;
    size_t i = 0;
    while (i < len && emitted < max_tokens) {
        while (i < len && !sq_tok_byte((unsigned char)s[i])) i++;
        size_t n = 0, full = 0;
        while (i < len && sq_tok_byte((unsigned char)s[i])) {
            unsigned char ch = (unsigned char)s[i++];
            if (ch >= 'A' && ch <= 'Z') ch = (unsigned char)(ch + 32);
            if (n < SQ_TOKEN_MAX) tok[n++] = (char)ch;
            full++;
        }
        /* a token longer than any indexed one cannot match: it still counts as a term */
        if (full == 0 || sq_stopword(tok, n)) continue;
        fn(ctx, tok, full > SQ_TOKEN_MAX ? SQ_TOKEN_MAX : n);
        emitted++;
    }
}

static uint64_t sq_term_hash(const char *t, size_t n) {
    return seed_fnv1a64(t, n) | 1;
}

/* Term id of t, or -1. */
static int32_t sq_term_find(const sq_index *ix, const char *t, size_t n, uint64_t h,
                            uint32_t *slot) {
    for (uint32_t i = (uint32_t)h & (ix->hcap - 1);; i = (i + 1) & (ix->hcap - 1)) {
        int32_t id = ix->hslot[i];
        if (id < 0) {
            if (slot) *slot = i;
            return -1;
        }
        if (ix->thash[id] == h && ix->tlen[id] == n && memcmp(ix->tpool + ix->toff[id], t, n) == 0)
            return id;
    }
}

typedef struct sq_build {
    sq_index *ix;
    uint32_t term_cap, pool_cap, pool_len;
    int doc;
    int32_t *last_doc; /* per term: the last document counted (df) */
    uint32_t *df;
    int oom, count_pass;
    uint32_t *fill; /* per term: postings written so far (second pass) */
} sq_build;

static int sq_realloc(void **p, uint32_t n, size_t elem) {
    void *q = realloc(*p, (size_t)n * elem);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* Doubles the vocabulary hash (kept at most half full). */
static int sq_rehash(sq_index *ix) {
    uint32_t cap = ix->hcap * 2;
    int32_t *h = malloc((size_t)cap * sizeof *h);
    if (!h) return -1;
    memset(h, 0xff, (size_t)cap * sizeof *h);
    for (int32_t id = 0; id < ix->n_terms; id++) {
        uint32_t i = (uint32_t)ix->thash[id] & (cap - 1);
        while (h[i] >= 0) i = (i + 1) & (cap - 1);
        h[i] = id;
    }
    free(ix->hslot);
    ix->hslot = h;
    ix->hcap = cap;
    return 0;
}

static void sq_build_token(void *ctx, const char *t, size_t n) {
    sq_build *B = ctx;
    sq_index *ix = B->ix;
    if (B->oom) return;
    if (B->count_pass && 2 * ((uint32_t)ix->n_terms + 1) > ix->hcap && sq_rehash(ix)) {
        B->oom = 1;
        return;
    }
    uint64_t h = sq_term_hash(t, n);
    uint32_t slot = 0;
    int32_t id = sq_term_find(ix, t, n, h, &slot);
    if (B->count_pass) {
        ix->doc_len[B->doc]++;
        if (id < 0) {
            if ((uint32_t)ix->n_terms + 1 > B->term_cap) {
                uint32_t c = B->term_cap ? 2 * B->term_cap : 1024;
                if (sq_realloc((void **)&ix->thash, c, sizeof *ix->thash) ||
                    sq_realloc((void **)&ix->toff, c, sizeof *ix->toff) ||
                    sq_realloc((void **)&ix->tlen, c, sizeof *ix->tlen) ||
                    sq_realloc((void **)&B->last_doc, c, sizeof *B->last_doc) ||
                    sq_realloc((void **)&B->df, c, sizeof *B->df)) {
                    B->oom = 1;
                    return;
                }
                B->term_cap = c;
            }
            if (B->pool_len + n > B->pool_cap) {
                uint32_t c = B->pool_cap ? 2 * B->pool_cap : 16384;
                while (c < B->pool_len + n) c *= 2;
                if (sq_realloc((void **)&ix->tpool, c, 1)) {
                    B->oom = 1;
                    return;
                }
                B->pool_cap = c;
            }
            id = ix->n_terms++;
            ix->thash[id] = h;
            ix->toff[id] = B->pool_len;
            ix->tlen[id] = (uint16_t)n;
            memcpy(ix->tpool + B->pool_len, t, n);
            B->pool_len += (uint32_t)n;
            B->last_doc[id] = -1;
            B->df[id] = 0;
            ix->hslot[slot] = id;
        }
        if (B->last_doc[id] != B->doc) {
            B->last_doc[id] = B->doc;
            B->df[id]++;
        }
        return;
    }
    /* second pass: postings in document order; repeated terms add to the last posting */
    uint32_t at = ix->post_off[id] + B->fill[id];
    if (B->fill[id] > 0 && ix->post_doc[at - 1] == B->doc) {
        if (ix->post_tf[at - 1] < UINT16_MAX) ix->post_tf[at - 1]++;
    } else {
        ix->post_doc[at] = B->doc;
        ix->post_tf[at] = 1;
        B->fill[id]++;
    }
}

void sq_index_free(sq_index *ix) {
    if (!ix) return;
    free(ix->doc_len);
    free(ix->hslot);
    free(ix->thash);
    free(ix->toff);
    free(ix->tlen);
    free(ix->tpool);
    free(ix->idf);
    free(ix->post_off);
    free(ix->post_doc);
    free(ix->post_tf);
    free(ix->acc);
    free(ix->touched);
    memset(ix, 0, sizeof *ix);
}

int sq_index_build(sq_index *ix, const char *const *docs, int n_docs, char *err, size_t errlen) {
    memset(ix, 0, sizeof *ix);
    if (n_docs <= 0) return seed_errf(err, errlen, "searchqa: the BM25 index needs documents");
    ix->n_docs = n_docs;
    ix->k1 = 0.9;
    ix->b = 0.4;
    ix->hcap = 4096;
    ix->hslot = malloc((size_t)ix->hcap * sizeof *ix->hslot);
    ix->doc_len = calloc((size_t)n_docs, sizeof *ix->doc_len);
    ix->acc = calloc((size_t)n_docs, sizeof *ix->acc);
    ix->touched = malloc((size_t)n_docs * sizeof *ix->touched);
    sq_build B = {.ix = ix, .count_pass = 1};
    if (!ix->hslot || !ix->doc_len || !ix->acc || !ix->touched) B.oom = 1;
    if (!B.oom) memset(ix->hslot, 0xff, (size_t)ix->hcap * sizeof *ix->hslot);
    for (int d = 0; d < n_docs && !B.oom; d++) {
        B.doc = d;
        sq_tokenize(docs[d], strlen(docs[d]), 1 << 30, sq_build_token, &B);
    }
    if (!B.oom) {
        ix->idf = malloc((size_t)(ix->n_terms + 1) * sizeof *ix->idf);
        ix->post_off = malloc((size_t)(ix->n_terms + 1) * sizeof *ix->post_off);
        B.fill = calloc((size_t)ix->n_terms + 1, sizeof *B.fill);
        if (!ix->idf || !ix->post_off || !B.fill) B.oom = 1;
    }
    if (!B.oom) {
        uint32_t off = 0;
        for (int t = 0; t < ix->n_terms; t++) {
            ix->post_off[t] = off;
            off += B.df[t];
            double N = n_docs, df = B.df[t];
            ix->idf[t] = log(1.0 + (N - df + 0.5) / (df + 0.5));
        }
        ix->post_off[ix->n_terms] = off;
        ix->post_doc = malloc((size_t)(off + 1) * sizeof *ix->post_doc);
        ix->post_tf = malloc((size_t)(off + 1) * sizeof *ix->post_tf);
        if (!ix->post_doc || !ix->post_tf) B.oom = 1;
        long sum = 0;
        for (int d = 0; d < n_docs; d++) sum += ix->doc_len[d];
        ix->avgdl = (double)sum / n_docs;
    }
    B.count_pass = 0;
    for (int d = 0; d < n_docs && !B.oom; d++) {
        B.doc = d;
        sq_tokenize(docs[d], strlen(docs[d]), 1 << 30, sq_build_token, &B);
    }
    free(B.last_doc);
    free(B.df);
    free(B.fill);
    if (B.oom) {
        sq_index_free(ix);
        return seed_errf(err, errlen, "searchqa: out of memory building the BM25 index");
    }
    return 0;
}

typedef struct sq_query {
    sq_index *ix;
    int n_touched;
} sq_query;

static void sq_query_token(void *ctx, const char *t, size_t n) {
    sq_query *Q = ctx;
    sq_index *ix = Q->ix;
    int32_t id = sq_term_find(ix, t, n, sq_term_hash(t, n), NULL);
    if (id < 0) return;
    double idf = ix->idf[id], k1 = ix->k1, b = ix->b;
    for (uint32_t p = ix->post_off[id]; p < ix->post_off[id + 1]; p++) {
        int32_t d = ix->post_doc[p];
        double tf = ix->post_tf[p];
        double norm = k1 * (1.0 - b + b * ix->doc_len[d] / ix->avgdl);
        if (ix->acc[d] == 0.0) ix->touched[Q->n_touched++] = d;
        ix->acc[d] += idf * tf * (k1 + 1.0) / (tf + norm);
    }
}

int sq_index_search(sq_index *ix, const char *query, size_t len, int k, int *docs, double *scores) {
    if (!ix || !ix->n_docs || k <= 0 || !query) return 0;
    sq_query Q = {ix, 0};
    sq_tokenize(query, len, SQ_QUERY_TERMS, sq_query_token, &Q);
    int n = 0;
    for (int i = 0; i < Q.n_touched; i++) {
        int d = ix->touched[i];
        double s = ix->acc[d];
        ix->acc[d] = 0.0;
        if (!(s > 0.0)) continue;
        /* insertion into the k best, ordered by score then id */
        int j = n < k ? n++ : k;
        while (j > 0 && (scores[j - 1] < s || (scores[j - 1] == s && docs[j - 1] > d))) {
            if (j < k) {
                scores[j] = scores[j - 1];
                docs[j] = docs[j - 1];
            }
            j--;
        }
        if (j < k) {
            scores[j] = s;
            docs[j] = d;
        }
    }
    return n;
}
