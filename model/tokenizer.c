/* tokenizer.c — tokenizer.json loading, added tokens, the encode pipeline, decoding and
 * streaming decoding (see tokenizer.h for the contract).
 *
 * Encode pipeline, in the order the `tokenizers` library applies it:
 *   invalid UTF-8 bytes cut the text into valid runs (each such byte: its byte token);
 *   per run: added tokens with normalized=false are matched on the raw text; the rest is
 *   NFC-normalized; added tokens with normalized=true are matched on that; the rest is
 *   pre-tokenized (pretok.c) and each word goes through the BPE (bpe.c). */
#include "tokenizer_internal.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <utf8proc.h>

#define TOK_MAX_IDS (1 << 24) /* refuse absurd ids rather than allocate for them */

/* ---------------- growable buffers ---------------- */

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

void tok_ids_free(tok_ids *ids) {
    free(ids->v);
    memset(ids, 0, sizeof *ids);
}
int tok_ids_push(tok_ids *ids, int id) {
    if (ids->n == ids->cap && grow((void **)&ids->v, &ids->cap, ids->n + 1, sizeof(int))) return -1;
    ids->v[ids->n++] = id;
    return 0;
}

/* ---------------- string pool and maps ---------------- */

static int pool_add(tok *t, const char *s, size_t n, uint32_t *off) {
    if (t->pool_n + n + 1 > UINT32_MAX) return -1;
    if (grow((void **)&t->pool, &t->pool_cap, t->pool_n + n + 1, 1)) return -1;
    memcpy(t->pool + t->pool_n, s, n);
    t->pool[t->pool_n + n] = 0;
    *off = (uint32_t)t->pool_n;
    t->pool_n += n + 1;
    return 0;
}

/* The maps store ids; a key is (koff[id], klen[id]) in the pool. */
int tok_idmap_find(const tok_idmap *m, const char *pool, const uint32_t *koff, const uint32_t *klen,
                   const char *key, size_t n) {
    if (!m->slot) return -1;
    uint32_t i = (uint32_t)tok_hash(key, n) & m->mask;
    for (;;) {
        int32_t id = m->slot[i];
        if (id < 0) return -1;
        if (klen[id] == n && memcmp(pool + koff[id], key, n) == 0) return id;
        i = (i + 1) & m->mask;
    }
}

/* Insert id under its key; an id already stored under the same key is replaced. */
static void idmap_put(tok_idmap *m, const char *pool, const uint32_t *koff, const uint32_t *klen,
                      int32_t id) {
    const char *key = pool + koff[id];
    size_t n = klen[id];
    uint32_t i = (uint32_t)tok_hash(key, n) & m->mask;
    for (;;) {
        int32_t o = m->slot[i];
        if (o < 0 || (klen[o] == n && memcmp(pool + koff[o], key, n) == 0)) {
            m->slot[i] = id;
            return;
        }
        i = (i + 1) & m->mask;
    }
}

static int idmap_init(tok_idmap *m, size_t n_keys) {
    size_t cap = 16;
    while (cap < 2 * n_keys + 16) cap *= 2;
    m->slot = malloc(cap * sizeof(int32_t));
    if (!m->slot) return -1;
    memset(m->slot, 0xff, cap * sizeof(int32_t));
    m->mask = (uint32_t)(cap - 1);
    return 0;
}

/* ---------------- byte-level alphabet (GPT-2's bytes_to_unicode) ---------------- */

typedef struct byte_alpha {
    int32_t cp_of[256];   /* byte -> code point */
    int16_t byte_of[512]; /* code point -> byte, -1 when the code point is not in it */
} byte_alpha;

static void byte_alpha_init(byte_alpha *a) {
    int extra = 0;
    for (int i = 0; i < 512; i++) a->byte_of[i] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        a->cp_of[b] = printable ? b : 256 + extra++;
        a->byte_of[a->cp_of[b]] = (int16_t)b;
    }
}

/* What the ByteLevel decoder makes of a token: the bytes of its characters when every
 * character is in the alphabet, else the token's own UTF-8 (tokenizers does the same). */
static int byte_level_decode(const byte_alpha *a, const char *s, size_t n, char *out,
                             size_t *out_n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, k = 0;
    while (i < n) {
        int l = tok_utf8_len(u + i, n - i);
        if (!l) break;
        int32_t c = tok_utf8_cp(u + i, l);
        if (c >= 512 || a->byte_of[c] < 0) break;
        out[k++] = (char)a->byte_of[c];
        i += (size_t)l;
    }
    if (i < n) {
        memcpy(out, s, n);
        k = n;
    }
    *out_n = k;
    return 0;
}

/* ---------------- JSON helpers ---------------- */

static const char *json_type_name(const cJSON *j) {
    if (!j) return "missing";
    if (cJSON_IsNull(j)) return "null";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsObject(j)) return "an object";
    return "invalid";
}

/* Optional boolean: absent or null gives def. */
static int json_bool(const cJSON *obj, const char *key, int def, int *out, const char *where,
                     char *err, size_t errlen) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!j || cJSON_IsNull(j)) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(j))
        return seed_errf(err, errlen, "tokenizer.json: %s.%s is %s, expected true or false", where,
                         key, json_type_name(j));
    *out = cJSON_IsTrue(j);
    return 0;
}

static const char *json_type_str(const cJSON *obj) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, "type");
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

static int json_id(const cJSON *j, int *out) {
    if (!cJSON_IsNumber(j)) return -1;
    double d = j->valuedouble;
    if (!(d >= 0 && d < TOK_MAX_IDS) || d != (double)(int)d) return -1;
    *out = (int)d;
    return 0;
}

/* ---------------- loading: each section ---------------- */

static int load_normalizer(tok *t, const cJSON *n, char *err, size_t errlen) {
    if (!n || cJSON_IsNull(n)) return 0;
    const char *type = json_type_str(n);
    if (type && strcmp(type, "NFC") == 0) {
        t->nfc = 1;
        return 0;
    }
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(n, "normalizers");
        if (!cJSON_IsArray(arr))
            return seed_errf(err, errlen,
                             "tokenizer.json: normalizer.normalizers is %s, expected an array",
                             json_type_name(arr));
        const cJSON *e;
        cJSON_ArrayForEach(e, arr) {
            if (load_normalizer(t, e, err, errlen)) return -1;
        }
        return 0;
    }
    return seed_errf(err, errlen,
                     "tokenizer.json: normalizer type '%s' is not supported (seed reads NFC, a "
                     "Sequence of NFC, or null)",
                     type ? type : "(none)");
}

static int load_byte_level_pre(tok *t, const cJSON *p, int alone, char *err, size_t errlen) {
    int use_regex = 0, aps = 0;
    if (json_bool(p, "use_regex", 1, &use_regex, "pre_tokenizer", err, errlen) ||
        json_bool(p, "add_prefix_space", 1, &aps, "pre_tokenizer", err, errlen))
        return -1;
    if (!alone && (use_regex || aps))
        return seed_errf(err, errlen,
                         "tokenizer.json: a ByteLevel pre-tokenizer after a Split must have "
                         "use_regex and add_prefix_space false (found use_regex=%d, "
                         "add_prefix_space=%d)",
                         use_regex, aps);
    t->add_prefix_space = aps;
    if (alone && use_regex) {
        /* the GPT-2 pattern ByteLevel applies when use_regex is true */
        static const char gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
                                   "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
        t->pre_behavior = TOK_PRE_REGEX_ISOLATED;
        return tok_pretok_compile(t, gpt2, 0, err, errlen);
    }
    return 0;
}

static int load_split(tok *t, const cJSON *p, char *err, size_t errlen) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
    const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
    const cJSON *lit = cJSON_GetObjectItemCaseSensitive(pat, "String");
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
    int invert = 0;
    if (json_bool(p, "invert", 0, &invert, "pre_tokenizer Split", err, errlen)) return -1;
    if (invert)
        return seed_errf(err, errlen, "tokenizer.json: Split with invert=true is not supported");
    if (!cJSON_IsString(re) && !cJSON_IsString(lit))
        return seed_errf(err, errlen,
                         "tokenizer.json: Split.pattern must hold a \"Regex\" or \"String\" "
                         "string");
    if (!cJSON_IsString(beh))
        return seed_errf(err, errlen, "tokenizer.json: Split.behavior is %s, expected a string",
                         json_type_name(beh));
    if (strcmp(beh->valuestring, "Isolated") == 0)
        t->pre_behavior = TOK_PRE_REGEX_ISOLATED;
    else if (strcmp(beh->valuestring, "Removed") == 0)
        t->pre_behavior = TOK_PRE_REGEX_REMOVED;
    else
        return seed_errf(err, errlen,
                         "tokenizer.json: Split.behavior '%s' is not supported (seed reads "
                         "Isolated and Removed)",
                         beh->valuestring);
    if (cJSON_IsString(re)) return tok_pretok_compile(t, re->valuestring, 0, err, errlen);
    return tok_pretok_compile(t, lit->valuestring, 1, err, errlen);
}

static int load_pre_tokenizer(tok *t, const cJSON *p, char *err, size_t errlen) {
    const char *type = p ? json_type_str(p) : NULL;
    if (type && strcmp(type, "ByteLevel") == 0) return load_byte_level_pre(t, p, 1, err, errlen);
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
        int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
        const cJSON *a = n == 2 ? cJSON_GetArrayItem(arr, 0) : NULL;
        const cJSON *b = n == 2 ? cJSON_GetArrayItem(arr, 1) : NULL;
        const char *ta = a ? json_type_str(a) : NULL, *tb = b ? json_type_str(b) : NULL;
        if (n == 1) return load_pre_tokenizer(t, cJSON_GetArrayItem(arr, 0), err, errlen);
        if (!ta || !tb || strcmp(ta, "Split") != 0 || strcmp(tb, "ByteLevel") != 0)
            return seed_errf(err, errlen,
                             "tokenizer.json: pre_tokenizer Sequence must be [Split, ByteLevel] "
                             "(found %d steps: %s, %s)",
                             n, ta ? ta : "?", tb ? tb : "?");
        if (load_split(t, a, err, errlen)) return -1;
        return load_byte_level_pre(t, b, 0, err, errlen);
    }
    return seed_errf(err, errlen,
                     "tokenizer.json: pre_tokenizer type '%s' is not supported (seed reads "
                     "byte-level tokenizers: ByteLevel or Sequence[Split, ByteLevel])",
                     type ? type : (p && !cJSON_IsNull(p) ? "(none)" : "null"));
}

/* Decoder and post-processor must be ByteLevel (or absent): anything else changes ids or
 * text in ways seed does not reproduce. */
static int check_byte_level_step(const cJSON *p, const char *field, int null_ok, char *err,
                                 size_t errlen) {
    if (!p || cJSON_IsNull(p)) {
        if (null_ok) return 0;
        return seed_errf(err, errlen, "tokenizer.json: %s is null, expected ByteLevel", field);
    }
    const char *type = json_type_str(p);
    if (type && strcmp(type, "ByteLevel") == 0) return 0;
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(
            p, strcmp(field, "decoder") == 0 ? "decoders" : "processors");
        const cJSON *e;
        int n = 0;
        cJSON_ArrayForEach(e, arr) {
            if (check_byte_level_step(e, field, 0, err, errlen)) return -1;
            n++;
        }
        if (n) return 0;
    }
    return seed_errf(err, errlen,
                     "tokenizer.json: %s type '%s' is not supported (seed reads ByteLevel)", field,
                     type ? type : "(none)");
}

static int load_bpe_options(tok *t, const cJSON *m, char *err, size_t errlen) {
    const cJSON *j;
    int b = 0;
    j = cJSON_GetObjectItemCaseSensitive(m, "dropout");
    if (j && !cJSON_IsNull(j) && !(cJSON_IsNumber(j) && j->valuedouble == 0))
        return seed_errf(err, errlen,
                         "tokenizer.json: model.dropout must be null (BPE dropout "
                         "is a training-time option seed does not apply)");
    const char *strs[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        j = cJSON_GetObjectItemCaseSensitive(m, strs[i]);
        if (j && !cJSON_IsNull(j) && !(cJSON_IsString(j) && j->valuestring[0] == 0))
            return seed_errf(err, errlen,
                             "tokenizer.json: model.%s must be empty or null for a byte-level "
                             "BPE",
                             strs[i]);
    }
    if (json_bool(m, "byte_fallback", 0, &b, "model", err, errlen)) return -1;
    if (b)
        return seed_errf(err, errlen,
                         "tokenizer.json: model.byte_fallback=true is not supported (that is a "
                         "SentencePiece-style BPE, not byte-level)");
    return json_bool(m, "ignore_merges", 0, &t->ignore_merges, "model", err, errlen);
}

/* merges: ["a b", ...] or [["a", "b"], ...]; rank = position; a later duplicate wins. */
static int load_merges(tok *t, const cJSON *merges, char *err, size_t errlen) {
    int n = cJSON_GetArraySize(merges);
    size_t cap = 16;
    while (cap < (size_t)n + (size_t)n / 2 + 16) cap *= 2; /* load factor <= 2/3 */
    t->merge_key = calloc(cap, sizeof(uint64_t));
    t->merge_val = calloc(cap, sizeof(tok_merge));
    t->byte_pair = malloc(65536 * sizeof(tok_merge));
    if (!t->merge_key || !t->merge_val || !t->byte_pair)
        return seed_errf(err, errlen, "out of memory for %d merges", n);
    t->merges_mask = (uint32_t)(cap - 1);
    char *cat = NULL;
    size_t cat_cap = 0;
    int rank = 0, rc = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, merges) {
        const char *a, *b;
        size_t la, lb;
        if (cJSON_IsString(e)) {
            a = e->valuestring;
            const char *sp = strchr(a, ' ');
            if (!sp || strchr(sp + 1, ' ') || sp == a || sp[1] == 0) {
                rc = seed_errf(err, errlen,
                               "tokenizer.json: merge %d ('%.60s') is not two tokens separated "
                               "by one space",
                               rank, a);
                break;
            }
            la = (size_t)(sp - a);
            b = sp + 1;
            lb = strlen(b);
        } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
            a = cJSON_GetArrayItem(e, 0)->valuestring;
            b = cJSON_GetArrayItem(e, 1)->valuestring;
            la = strlen(a);
            lb = strlen(b);
        } else {
            rc = seed_errf(err, errlen,
                           "tokenizer.json: merge %d is %s, expected \"a b\" or [\"a\", \"b\"]",
                           rank, json_type_name(e));
            break;
        }
        int ia = tok_idmap_find(&t->by_str, t->pool, t->str_off, t->str_len, a, la);
        int ib = tok_idmap_find(&t->by_str, t->pool, t->str_off, t->str_len, b, lb);
        if (grow((void **)&cat, &cat_cap, la + lb + 1, 1)) {
            rc = seed_errf(err, errlen, "out of memory");
            break;
        }
        memcpy(cat, a, la);
        memcpy(cat + la, b, lb);
        int ic = tok_idmap_find(&t->by_str, t->pool, t->str_off, t->str_len, cat, la + lb);
        if (ia < 0 || ib < 0 || ic < 0) {
            rc = seed_errf(err, errlen,
                           "tokenizer.json: merge %d ('%.40s' + '%.40s') uses a token that is "
                           "not in model.vocab ('%.80s')",
                           rank, a, b,
                           ia < 0   ? a
                           : ib < 0 ? b
                                    : "merged result");
            break;
        }
        uint64_t key = tok_merge_key(ia, ib);
        uint32_t i = tok_merge_slot(key, t->merges_mask);
        while (t->merge_key[i] && t->merge_key[i] != key) i = (i + 1) & t->merges_mask;
        t->merge_key[i] = key;
        t->merge_val[i].rank = (uint32_t)rank;
        t->merge_val[i].id = ic;
        rank++;
    }
    free(cat);
    if (rc) return rc;
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) {
            tok_merge *m = &t->byte_pair[a << 8 | b];
            m->id = -1;
            m->rank = tok_merge_find(t, t->byte_id[a], t->byte_id[b], &m->id);
        }
    return 0;
}

static int load_added(tok *t, const cJSON *arr, char *err, size_t errlen) {
    int n = cJSON_GetArraySize(arr);
    t->added = calloc((size_t)n + 1, sizeof(tok_added));
    if (!t->added) return seed_errf(err, errlen, "out of memory");
    const cJSON *e;
    int k = 0;
    cJSON_ArrayForEach(e, arr) {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        tok_added *a = &t->added[k];
        int sp = 0, ls = 0, rs = 0, sw = 0, nm = 0;
        if (json_id(cJSON_GetObjectItemCaseSensitive(e, "id"), &a->id) || !cJSON_IsString(content))
            return seed_errf(err, errlen,
                             "tokenizer.json: added_tokens[%d] needs an integer \"id\" in [0, "
                             "%d) and a string \"content\"",
                             k, TOK_MAX_IDS);
        char where[48];
        snprintf(where, sizeof where, "added_tokens[%d]", k);
        if (json_bool(e, "special", 0, &sp, where, err, errlen) ||
            json_bool(e, "lstrip", 0, &ls, where, err, errlen) ||
            json_bool(e, "rstrip", 0, &rs, where, err, errlen) ||
            json_bool(e, "single_word", 0, &sw, where, err, errlen) ||
            json_bool(e, "normalized", !sp, &nm, where, err, errlen))
            return -1;
        size_t len = strlen(content->valuestring);
        if (len == 0) continue; /* tokenizers ignores empty added tokens */
        if (pool_add(t, content->valuestring, len, &a->off))
            return seed_errf(err, errlen, "out of memory");
        a->len = (uint32_t)len;
        a->special = (uint8_t)sp;
        a->lstrip = (uint8_t)ls;
        a->rstrip = (uint8_t)rs;
        a->single_word = (uint8_t)sw;
        a->normalized = (uint8_t)nm;
        k++;
    }
    t->n_added = k;
    return 0;
}

/* Index one subset of the added tokens by first byte, longest first within a byte. */
typedef struct added_key {
    const tok *t;
    int i;
} added_key;
static int added_cmp(const void *pa, const void *pb) {
    const added_key *x = pa, *y = pb;
    const tok_added *a = &x->t->added[x->i], *b = &y->t->added[y->i];
    unsigned char fa = (unsigned char)x->t->pool[a->off], fb = (unsigned char)y->t->pool[b->off];
    if (fa != fb) return fa < fb ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return x->i - y->i;
}
static int build_added_set(tok *t, tok_added_set *s, int normalized, int with_special) {
    added_key *keys = malloc(((size_t)t->n_added + 1) * sizeof *keys);
    s->idx = malloc(((size_t)t->n_added + 1) * sizeof(int));
    if (!keys || !s->idx) {
        free(keys);
        return -1;
    }
    int n = 0;
    for (int i = 0; i < t->n_added; i++) {
        const tok_added *a = &t->added[i];
        if (a->normalized != normalized || (a->special && !with_special)) continue;
        keys[n].t = t;
        keys[n].i = i;
        n++;
    }
    qsort(keys, (size_t)n, sizeof *keys, added_cmp);
    for (int i = 0; i < n; i++) s->idx[i] = keys[i].i;
    s->n = n;
    int j = 0;
    for (int b = 0; b <= 256; b++) {
        while (j < n && (unsigned char)t->pool[t->added[s->idx[j]].off] < b) j++;
        s->first[b] = j;
    }
    free(keys);
    return 0;
}

/* The top level's shape: an object whose model is a byte-level BPE with a vocab object
 * and a merges array, and no truncation. */
static int check_root(const cJSON *root, const cJSON **model, const cJSON **vocab,
                      const cJSON **merges, char *err, size_t errlen) {
    if (!cJSON_IsObject(root))
        return seed_errf(err, errlen, "tokenizer.json: the top level is %s, expected an object",
                         json_type_name(root));
    *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(*model))
        return seed_errf(err, errlen, "tokenizer.json: \"model\" is %s, expected an object",
                         json_type_name(*model));
    const char *mtype = json_type_str(*model);
    if (mtype && strcmp(mtype, "BPE") != 0)
        return seed_errf(err, errlen,
                         "tokenizer.json: model type '%s' is not supported (seed reads "
                         "byte-level BPE)",
                         mtype);
    *vocab = cJSON_GetObjectItemCaseSensitive(*model, "vocab");
    *merges = cJSON_GetObjectItemCaseSensitive(*model, "merges");
    if (!cJSON_IsObject(*vocab))
        return seed_errf(err, errlen, "tokenizer.json: model.vocab is %s, expected an object",
                         json_type_name(*vocab));
    if (!cJSON_IsArray(*merges))
        return seed_errf(err, errlen, "tokenizer.json: model.merges is %s, expected an array",
                         json_type_name(*merges));
    const cJSON *trunc = cJSON_GetObjectItemCaseSensitive(root, "truncation");
    if (trunc && !cJSON_IsNull(trunc))
        return seed_errf(err, errlen,
                         "tokenizer.json: truncation is set; seed encodes whole texts, set it to "
                         "null");
    return 0;
}

/* The pipeline around the model (BPE options, normalizer, pre-tokenizer, decoder,
 * post-processor) and the added tokens. */
static int load_pipeline(tok *t, const cJSON *root, const cJSON *model, char *err, size_t errlen) {
    if (load_bpe_options(t, model, err, errlen) ||
        load_normalizer(t, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), err, errlen) ||
        load_pre_tokenizer(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), err,
                           errlen) ||
        check_byte_level_step(cJSON_GetObjectItemCaseSensitive(root, "decoder"), "decoder", 0, err,
                              errlen) ||
        check_byte_level_step(cJSON_GetObjectItemCaseSensitive(root, "post_processor"),
                              "post_processor", 1, err, errlen))
        return -1;
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        return seed_errf(err, errlen, "tokenizer.json: added_tokens is %s, expected an array",
                         json_type_name(added));
    if (cJSON_IsArray(added) && load_added(t, added, err, errlen)) return -1;
    return 0;
}

/* Size the per-id tables: ids run to the largest of the vocabulary's and the added
 * tokens'. *n_vocab: the vocabulary's entries. */
static int alloc_ids(tok *t, const cJSON *vocab, int *n_vocab, char *err, size_t errlen) {
    int max_id = -1;
    *n_vocab = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        int id;
        if (json_id(e, &id))
            return seed_errf(err, errlen,
                             "tokenizer.json: model.vocab['%.80s'] is not an integer id in [0, "
                             "%d)",
                             e->string, TOK_MAX_IDS);
        if (id > max_id) max_id = id;
        (*n_vocab)++;
    }
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id > max_id) max_id = t->added[i].id;
    if (*n_vocab == 0) return seed_errf(err, errlen, "tokenizer.json: model.vocab is empty");
    t->n_ids = max_id + 1;
    size_t n = (size_t)t->n_ids;
    t->str_off = malloc(n * sizeof(uint32_t));
    t->str_len = calloc(n, sizeof(uint32_t));
    t->dec_off = malloc(n * sizeof(uint32_t));
    t->dec_len = calloc(n, sizeof(uint32_t));
    t->id_flags = calloc(n, 1);
    if (!t->str_off || !t->str_len || !t->dec_off || !t->dec_len || !t->id_flags ||
        idmap_init(&t->by_str, (size_t)*n_vocab + (size_t)t->n_added))
        return seed_errf(err, errlen, "out of memory for %d ids", t->n_ids);
    for (size_t i = 0; i < n; i++) t->str_off[i] = t->dec_off[i] = TOK_NONE;
    return 0;
}

/* Each vocabulary token's text into the pool and the text -> id map; an id given twice
 * is an error. */
static int load_vocab(tok *t, const cJSON *vocab, char *err, size_t errlen) {
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        int id = (int)e->valuedouble;
        if (t->str_off[id] != TOK_NONE)
            return seed_errf(err, errlen,
                             "tokenizer.json: model.vocab gives id %d to both '%.60s' and "
                             "'%.60s'",
                             id, t->pool + t->str_off[id], e->string);
        size_t len = strlen(e->string);
        if (pool_add(t, e->string, len, &t->str_off[id]))
            return seed_errf(err, errlen, "out of memory");
        t->str_len[id] = (uint32_t)len;
        idmap_put(&t->by_str, t->pool, t->str_off, t->str_len, id);
    }
    return 0;
}

/* The id of each of the 256 bytes' tokens: a byte-level vocabulary has them all. */
static int map_bytes(tok *t, const byte_alpha *alpha, char *err, size_t errlen) {
    for (int b = 0; b < 256; b++) {
        char ch[4];
        utf8proc_ssize_t l = utf8proc_encode_char(alpha->cp_of[b], (utf8proc_uint8_t *)ch);
        t->byte_id[b] = tok_idmap_find(&t->by_str, t->pool, t->str_off, t->str_len, ch, (size_t)l);
        if (t->byte_id[b] < 0)
            return seed_errf(err, errlen,
                             "tokenizer.json: model.vocab has no token for byte 0x%02x ('%.*s'): "
                             "not a complete byte-level vocabulary",
                             b, (int)l, ch);
    }
    return 0;
}

/* Added tokens override the vocabulary's text for their id and their text's id; then
 * the sets the encoder splits added tokens out with. */
static int apply_added(tok *t, char *err, size_t errlen) {
    for (int i = 0; i < t->n_added; i++) {
        const tok_added *a = &t->added[i];
        t->str_off[a->id] = a->off;
        t->str_len[a->id] = a->len;
        t->id_flags[a->id] |= TOK_ID_ADDED | (a->special ? TOK_ID_SPECIAL : 0);
        idmap_put(&t->by_str, t->pool, t->str_off, t->str_len, a->id);
    }
    if (build_added_set(t, &t->raw_set, 0, 1) || build_added_set(t, &t->norm_set, 1, 1) ||
        build_added_set(t, &t->raw_set_ns, 0, 0) || build_added_set(t, &t->norm_set_ns, 1, 0))
        return seed_errf(err, errlen, "out of memory");
    return 0;
}

/* The decoded bytes of every id into the pool: an added token decodes to its content,
 * a vocabulary token through the byte-level alphabet. */
static int decode_ids(tok *t, const byte_alpha *alpha, char *err, size_t errlen) {
    seed_sbuf text = {0}; /* the pool may move in pool_add: the text is copied out first */
    char *dec = NULL;
    int rc = 0;
    for (size_t id = 0; id < (size_t)t->n_ids && !rc; id++) {
        if (t->str_off[id] == TOK_NONE) continue;
        size_t len = t->str_len[id], dn;
        seed_sbuf_clear(&text);
        if (seed_sbuf_append(&text, t->pool + t->str_off[id], len) || !(dec = malloc(len + 1))) {
            rc = -1;
            break;
        }
        if (t->id_flags[id] & TOK_ID_ADDED) {
            memcpy(dec, text.p, len);
            dn = len;
        } else {
            byte_level_decode(alpha, text.p, len, dec, &dn);
        }
        rc = pool_add(t, dec, dn, &t->dec_off[id]);
        free(dec);
        dec = NULL;
        t->dec_len[id] = (uint32_t)dn;
    }
    seed_sbuf_free(&text);
    return rc ? seed_errf(err, errlen, "out of memory") : 0;
}

static int load_root(tok *t, const cJSON *root, char *err, size_t errlen) {
    const cJSON *model = NULL, *vocab = NULL, *merges = NULL; /* set by check_root */
    int n_vocab;
    if (check_root(root, &model, &vocab, &merges, err, errlen) ||
        load_pipeline(t, root, model, err, errlen) || alloc_ids(t, vocab, &n_vocab, err, errlen) ||
        load_vocab(t, vocab, err, errlen))
        return -1;
    byte_alpha alpha;
    byte_alpha_init(&alpha);
    if (map_bytes(t, &alpha, err, errlen) || load_merges(t, merges, err, errlen) ||
        apply_added(t, err, errlen) || decode_ids(t, &alpha, err, errlen))
        return -1;
    if (t->ignore_merges) { /* whole-word lookups by decoded bytes */
        if (idmap_init(&t->by_bytes, (size_t)n_vocab))
            return seed_errf(err, errlen, "out of memory");
        const cJSON *e;
        cJSON_ArrayForEach(e, vocab) {
            idmap_put(&t->by_bytes, t->pool, t->dec_off, t->dec_len, (int)e->valuedouble);
        }
    }
    return 0;
}

int tok_load_json(tok **out, const char *json, size_t len, char *err, size_t errlen) {
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        return seed_errf(err, errlen,
                         "tokenizer.json is not valid JSON (parse error at byte %zu of %zu)", at,
                         len);
    }
    tok *t = calloc(1, sizeof *t);
    if (!t) {
        cJSON_Delete(root);
        return seed_errf(err, errlen, "out of memory");
    }
    int rc = load_root(t, root, err, errlen);
    cJSON_Delete(root);
    if (rc) {
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int tok_load(tok **out, const char *path, char *err, size_t errlen) {
    char *buf = NULL;
    size_t len = 0;
    *out = NULL;
    if (seed_read_file(path, &buf, &len, err, errlen)) return -1;
    int rc = tok_load_json(out, buf, len, err, errlen);
    free(buf);
    if (rc && err && errlen) {
        /* name the file: "PATH: sentence" */
        char tmp[SEED_ERRLEN];
        snprintf(tmp, sizeof tmp, "%s", err);
        snprintf(err, errlen, "%s: %s", path, tmp);
    }
    return rc;
}

static void added_set_free(tok_added_set *s) {
    free(s->idx);
}

void tok_free(tok *t) {
    if (!t) return;
    free(t->pool);
    free(t->str_off);
    free(t->str_len);
    free(t->dec_off);
    free(t->dec_len);
    free(t->id_flags);
    free(t->by_str.slot);
    free(t->by_bytes.slot);
    free(t->merge_key);
    free(t->merge_val);
    free(t->byte_pair);
    free(t->added);
    added_set_free(&t->raw_set);
    added_set_free(&t->norm_set);
    added_set_free(&t->raw_set_ns);
    added_set_free(&t->norm_set_ns);
    if (t->re) pcre2_code_free(t->re);
    free(t);
}

/* ---------------- lookups ---------------- */

int tok_vocab_size(const tok *t) {
    return t->n_ids;
}

int tok_token_to_id(const tok *t, const char *token) {
    return tok_idmap_find(&t->by_str, t->pool, t->str_off, t->str_len, token, strlen(token));
}

const char *tok_id_to_token(const tok *t, int id) {
    if (id < 0 || id >= t->n_ids || t->str_off[id] == TOK_NONE) return NULL;
    return t->pool + t->str_off[id];
}

const char *tok_id_to_bytes(const tok *t, int id, size_t *len) {
    if (id < 0 || id >= t->n_ids || t->str_off[id] == TOK_NONE) return NULL;
    *len = t->dec_len[id];
    return t->pool + t->dec_off[id];
}

int tok_is_special(const tok *t, int id) {
    return id >= 0 && id < t->n_ids && (t->id_flags[id] & TOK_ID_SPECIAL) != 0;
}

/* ---------------- workspace ---------------- */

int tok_ws_new(const tok *t, tok_ws **out, char *err, size_t errlen) {
    tok_ws *ws = calloc(1, sizeof *ws);
    *out = NULL;
    if (!ws) return seed_errf(err, errlen, "out of memory for a tokenizer workspace");
    ws->t = t;
    if (t->re) {
        ws->md = pcre2_match_data_create_from_pattern(t->re, NULL);
        ws->mctx = pcre2_match_context_create(NULL);
        /* the default 32 KiB JIT stack can run out on very long runs of one class */
        ws->jit = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
        if (!ws->md || !ws->mctx) {
            tok_ws_free(ws);
            return seed_errf(err, errlen, "out of memory for regex match data");
        }
        if (ws->jit) pcre2_jit_stack_assign(ws->mctx, NULL, ws->jit);
    }
    *out = ws;
    return 0;
}

void tok_ws_free(tok_ws *ws) {
    if (!ws) return;
    if (ws->md) pcre2_match_data_free(ws->md);
    if (ws->mctx) pcre2_match_context_free(ws->mctx);
    if (ws->jit) pcre2_jit_stack_free(ws->jit);
    free(ws->u32);
    free(ws->nbuf);
    free(ws->buf);
    free(ws->sym);
    free(ws->heap);
    free(ws->cache);
    free(ws->ckeys);
    free(ws->cids);
    free(ws);
}

/* ---------------- encoding ---------------- */

/* Start of the character that ends at s[pos) (s valid UTF-8, pos > 0). */
static size_t prev_char(const char *s, size_t pos) {
    do pos--;
    while (pos > 0 && ((unsigned char)s[pos] & 0xC0) == 0x80);
    return pos;
}

/* Rust regex's \w: alphabetic, marks, decimal digits, connector punctuation, joiners.
 * (Approximated by general category; Other_Alphabetic symbols like Ⓐ are not covered.) */
static int is_word_char(int32_t c) {
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    if (c == 0x200C || c == 0x200D) return 1;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
        return 1;
    default:
        return 0;
    }
}

static int32_t cp_at(const char *s, size_t n, size_t pos) {
    const unsigned char *u = (const unsigned char *)s + pos;
    return tok_utf8_cp(u, tok_utf8_len(u, n - pos));
}

/* The longest added token of set that matches at s[p..n), or -1. */
static int added_at(const tok *t, const tok_added_set *set, const char *s, size_t n, size_t p) {
    unsigned char b = (unsigned char)s[p];
    for (int j = set->first[b]; j < set->first[b + 1]; j++) {
        const tok_added *a = &t->added[set->idx[j]];
        if (a->len <= n - p && memcmp(s + p, t->pool + a->off, a->len) == 0) return set->idx[j];
    }
    return -1;
}

typedef int (*seg_fn)(const tok *t, tok_ws *ws, const char *s, size_t n, int flags, tok_ids *out,
                      char *err, size_t errlen);

/* Split s by the added tokens of set, as tokenizers' find_matches does: leftmost-longest
 * matches, each search resuming at the end of the previous match (not of its rstrip
 * extension, so a match may overlap the whitespace that rstrip took, as there);
 * single_word rejects a match next to a word character; lstrip / rstrip widen the match
 * over White_Space. Token ids go to out, the text between matches goes to seg. */
static int split_added(const tok *t, tok_ws *ws, const tok_added_set *set, const char *s, size_t n,
                       int flags, seg_fn seg, tok_ids *out, char *err, size_t errlen) {
    size_t done = 0, p = 0;
    if (set->n == 0) return n ? seg(t, ws, s, n, flags, out, err, errlen) : 0;
    while (p < n) {
        unsigned char b = (unsigned char)s[p];
        if (set->first[b] == set->first[b + 1]) {
            p++;
            continue;
        }
        int k = added_at(t, set, s, n, p);
        if (k < 0) {
            p++;
            continue;
        }
        const tok_added *a = &t->added[k];
        size_t start = p, stop = p + a->len;
        p = stop;
        if (a->single_word) {
            int left_ok = start == 0 || !is_word_char(cp_at(s, n, prev_char(s, start)));
            int right_ok = stop == n || !is_word_char(cp_at(s, n, stop));
            if (!left_ok || !right_ok) continue;
        }
        if (a->lstrip) {
            size_t q = start;
            while (q > 0) {
                size_t c = prev_char(s, q);
                if (!tok_is_white_space(cp_at(s, n, c))) break;
                q = c;
            }
            start = q > done ? q : done;
        }
        if (a->rstrip) {
            while (stop < n) {
                if (!tok_is_white_space(cp_at(s, n, stop))) break;
                stop += (size_t)tok_utf8_len((const unsigned char *)s + stop, n - stop);
            }
        }
        if (start > done && seg(t, ws, s + done, start - done, flags, out, err, errlen)) return -1;
        if (tok_ids_push(out, a->id)) return seed_errf(err, errlen, "out of memory");
        done = stop;
    }
    if (done < n) return seg(t, ws, s + done, n - done, flags, out, err, errlen);
    return 0;
}

/* Text after both added-token passes: ByteLevel's add_prefix_space, then pre-tokenize. */
static int seg_pretok(const tok *t, tok_ws *ws, const char *s, size_t n, int flags, tok_ids *out,
                      char *err, size_t errlen) {
    if (t->add_prefix_space && s[0] != ' ') {
        if (grow((void **)&ws->buf, &ws->buf_cap, n + 1, 1))
            return seed_errf(err, errlen, "out of memory");
        ws->buf[0] = ' ';
        memcpy(ws->buf + 1, s, n);
        return tok_pretok_encode(t, ws, ws->buf, n + 1, out, err, errlen);
    }
    return tok_pretok_encode(t, ws, s, n, out, err, errlen);
}

/* Text between raw added tokens: normalize, then match the normalized added tokens. */
static int seg_normalize(const tok *t, tok_ws *ws, const char *s, size_t n, int flags, tok_ids *out,
                         char *err, size_t errlen) {
    const char *ns = s;
    size_t nn = n;
    if (t->nfc && tok_nfc(ws, s, n, &ns, &nn, err, errlen)) return -1;
    const tok_added_set *set = (flags & TOK_ENCODE_SPLIT_SPECIAL) ? &t->norm_set_ns : &t->norm_set;
    return split_added(t, ws, set, ns, nn, flags, seg_pretok, out, err, errlen);
}

static int encode_run(const tok *t, tok_ws *ws, const char *s, size_t n, int flags, tok_ids *out,
                      char *err, size_t errlen) {
    if (n == 0) return 0;
    const tok_added_set *set = (flags & TOK_ENCODE_SPLIT_SPECIAL) ? &t->raw_set_ns : &t->raw_set;
    return split_added(t, ws, set, s, n, flags, seg_normalize, out, err, errlen);
}

int tok_encode(const tok *t, tok_ws *ws, const char *text, size_t len, int flags, tok_ids *out,
               char *err, size_t errlen) {
    tok_ws *tmp = NULL;
    if (!ws) {
        if (tok_ws_new(t, &tmp, err, errlen)) return -1;
        ws = tmp;
    }
    if (ws->t != t) {
        tok_ws_free(tmp);
        return seed_errf(err, errlen, "tok_encode: the workspace belongs to another tokenizer");
    }
    const unsigned char *u = (const unsigned char *)text;
    size_t run = 0, i = 0;
    int rc = 0;
    while (i < len && rc == 0) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        int l = tok_utf8_len(u + i, len - i);
        if (l) {
            i += (size_t)l;
            continue;
        }
        /* a byte outside valid UTF-8: encode the run before it, then the byte alone */
        rc = encode_run(t, ws, text + run, i - run, flags, out, err, errlen);
        if (rc == 0 && tok_ids_push(out, t->byte_id[u[i]]))
            rc = seed_errf(err, errlen, "out of memory");
        run = ++i;
    }
    if (rc == 0) rc = encode_run(t, ws, text + run, len - run, flags, out, err, errlen);
    tok_ws_free(tmp);
    return rc;
}

/* ---------------- decoding ---------------- */

static int check_id(const tok *t, int id, char *err, size_t errlen) {
    if (id < 0 || id >= t->n_ids)
        return seed_errf(err, errlen, "token id %d is out of range [0, %d)", id, t->n_ids);
    if (t->str_off[id] == TOK_NONE)
        return seed_errf(err, errlen, "token id %d has no token in this vocabulary", id);
    return 0;
}

int tok_decode(const tok *t, const int *ids, size_t n, int flags, seed_sbuf *out, char *err,
               size_t errlen) {
    for (size_t i = 0; i < n; i++) {
        int id = ids[i];
        if (check_id(t, id, err, errlen)) return -1;
        if ((flags & TOK_DECODE_SKIP_SPECIAL) && (t->id_flags[id] & TOK_ID_SPECIAL)) continue;
        if (seed_sbuf_append(out, t->pool + t->dec_off[id], t->dec_len[id]))
            return seed_errf(err, errlen, "out of memory");
    }
    if (!out->p && seed_sbuf_append(out, "", 0)) return seed_errf(err, errlen, "out of memory");
    return 0;
}

void tok_stream_init(tok_stream *s, int flags) {
    memset(s, 0, sizeof *s);
    s->flags = flags;
}

/* How many bytes at the end of b[0..n) are a proper prefix of a valid UTF-8 character
 * (0 when the end is complete or cannot become valid). */
static int incomplete_tail(const unsigned char *b, size_t n) {
    for (int back = 1; back <= 3 && (size_t)back <= n; back++) {
        unsigned c = b[n - (size_t)back];
        if ((c & 0xC0) == 0x80) continue; /* continuation: keep looking for the lead */
        int need = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
        if (c >= 0xF5) return 0;
        if (need <= back) return 0;
        if (back >= 2) { /* the second byte's range depends on the lead */
            unsigned c1 = b[n - (size_t)back + 1];
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
                (c == 0xF4 && c1 > 0x8F))
                return 0;
        }
        return back;
    }
    return 0;
}

int tok_stream_push(const tok *t, tok_stream *s, int id, seed_sbuf *out, char *err, size_t errlen) {
    if (check_id(t, id, err, errlen)) return -1;
    if ((s->flags & TOK_DECODE_SKIP_SPECIAL) && (t->id_flags[id] & TOK_ID_SPECIAL)) return 0;
    const unsigned char *p = (const unsigned char *)t->pool + t->dec_off[id];
    size_t n = t->dec_len[id];
    /* the tail to hold lies within the last 3 bytes of held + p */
    unsigned char last[7];
    size_t nl = 0, from_p = n < 3 ? n : 3;
    for (int i = 0; i < s->nheld; i++) last[nl++] = s->held[i];
    memcpy(last + nl, p + n - from_p, from_p);
    nl += from_p;
    int keep = incomplete_tail(last, nl);
    size_t total = (size_t)s->nheld + n, emit = total - (size_t)keep;
    size_t emit_held = emit < (size_t)s->nheld ? emit : (size_t)s->nheld;
    if (seed_sbuf_append(out, s->held, emit_held) || seed_sbuf_append(out, p, emit - emit_held))
        return seed_errf(err, errlen, "out of memory");
    memcpy(s->held, last + nl - (size_t)keep, (size_t)keep);
    s->nheld = keep;
    return 0;
}

int tok_stream_flush(tok_stream *s, seed_sbuf *out, char *err, size_t errlen) {
    if (seed_sbuf_append(out, s->held, (size_t)s->nheld))
        return seed_errf(err, errlen, "out of memory");
    s->nheld = 0;
    return 0;
}
