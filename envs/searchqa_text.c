/* searchqa_text.c — Search-R1's answer normalisation and verl-agent's search action
 * projection, restated in C with Python's string semantics (searchqa.h).
 *
 * normalize_answer (Search-R1, verl/utils/reward_score/qa_em.py) is
 *   white_space_fix(remove_articles(remove_punc(lower(s)))):
 *   lower      str.lower(): Unicode full lower-case mapping, i.e. utf8proc's simple
 *              mapping except U+0130 -> "i\u0307" and Final_Sigma (U+03A3 -> U+03C2 at
 *              the end of a word, Python's handle_capital_sigma);
 *   remove_punc drops the 32 ASCII characters of string.punctuation;
 *   remove_articles re.sub(r"\b(a|an|the)\b", " "): a maximal run of word characters
 *              (Python's \w: letters, numbers, '_') equal to a/an/the becomes a space;
 *   white_space_fix " ".join(s.split()): runs of str.isspace() characters become one
 *              space, none at either end.
 * It runs as one streaming pass with a three-character look-behind, so it needs no
 * allocation and any input length costs O(n). */
#include <string.h>

#include <utf8proc.h>

#include "envs/searchqa.h"

/* Python's str.isspace() set. */
static int sq_is_space(int32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Python's \w for str patterns: str.isalnum() or '_'. Negative c: an invalid byte. */
static int sq_is_word(int32_t c) {
    if (c < 0) return 0;
    if (c < 0x80)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return 1;
    default:
        return 0;
    }
}

/* Unicode's Cased: Lu, Ll, Lt, Other_Lowercase, Other_Uppercase. */
static int sq_is_cased(int32_t c) {
    if (c < 0) return 0;
    int cat = utf8proc_category(c);
    if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT)
        return 1;
    static const int32_t other[][2] = {
        {0x00aa, 0x00aa},   {0x00ba, 0x00ba},   {0x02b0, 0x02b8},  {0x02c0, 0x02c1},
        {0x02e0, 0x02e4},   {0x0345, 0x0345},   {0x037a, 0x037a},  {0x1d2c, 0x1d6a},
        {0x1d78, 0x1d78},   {0x1d9b, 0x1dbf},   {0x2071, 0x2071},  {0x207f, 0x207f},
        {0x2090, 0x209c},   {0x2160, 0x217f},   {0x24b6, 0x24e9},  {0x2c7c, 0x2c7d},
        {0xa69c, 0xa69d},   {0xa770, 0xa770},   {0xa7f8, 0xa7f9},  {0xab5c, 0xab5f},
        {0x1f130, 0x1f149}, {0x1f150, 0x1f169}, {0x1f170, 0x1f189}};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (c >= other[i][0] && c <= other[i][1]) return 1;
    return 0;
}

/* Unicode's Case_Ignorable: Mn, Me, Cf, Lm, Sk, and Word_Break MidLetter, MidNumLet,
 * Single_Quote. */
static int sq_is_case_ignorable(int32_t c) {
    if (c < 0) return 0;
    switch (c) {
    case 0x27:
    case 0x2e:
    case 0x3a:
    case 0xb7:
    case 0x387:
    case 0x55f:
    case 0x5f4:
    case 0x2018:
    case 0x2019:
    case 0x2024:
    case 0x2027:
    case 0xfe13:
    case 0xfe52:
    case 0xfe55:
    case 0xff07:
    case 0xff0e:
    case 0xff1a:
        return 1;
    }
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
        return 1;
    default:
        return 0;
    }
}

/* Decodes the code point at s[i] (an invalid byte gives -(byte+1)); returns its size. */
static size_t sq_decode(const char *s, size_t len, size_t i, int32_t *cp) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k =
        utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(len - i), &c);
    if (k <= 0) {
        *cp = -(int32_t)(unsigned char)s[i] - 1;
        return 1;
    }
    *cp = c;
    return (size_t)k;
}

/* Start of the code point that ends right before s[i] (i > 0). */
static size_t sq_prev(const char *s, size_t len, size_t i) {
    size_t j = i - 1;
    while (j > 0 && i - j < 4 && ((unsigned char)s[j] & 0xc0) == 0x80) j--;
    int32_t cp;
    if (j + sq_decode(s, len, j, &cp) == i) return j;
    return i - 1;
}

/* Python's Final_Sigma test for the U+03A3 at s[i..i+2). */
static int sq_final_sigma(const char *s, size_t len, size_t i) {
    int32_t c = 0;
    size_t j = i;
    int found = 0;
    while (j > 0) {
        j = sq_prev(s, len, j);
        sq_decode(s, len, j, &c);
        if (!sq_is_case_ignorable(c)) {
            found = 1;
            break;
        }
    }
    if (!found || !sq_is_cased(c)) return 0;
    for (j = i + 2; j < len;) {
        j += sq_decode(s, len, j, &c);
        if (!sq_is_case_ignorable(c)) return !sq_is_cased(c);
    }
    return 1;
}

typedef struct sq_norm {
    char *out;
    size_t cap, len;
    int overflow, pending_space;
    int32_t run[3];
    int run_len, run_long; /* word run held back (it may be an article), or passed on */
} sq_norm;

static void sq_emit(sq_norm *N, int32_t c) {
    if (N->overflow) return;
    if (sq_is_space(c)) {
        N->pending_space = N->len > 0;
        return;
    }
    unsigned char buf[5];
    size_t n;
    if (c < 0) {
        buf[0] = (unsigned char)(-c - 1);
        n = 1;
    } else {
        n = (size_t)utf8proc_encode_char(c, buf);
    }
    size_t need = n + (N->pending_space ? 1 : 0);
    if (N->len + need + 1 > N->cap) {
        N->overflow = 1;
        return;
    }
    if (N->pending_space) N->out[N->len++] = ' ';
    N->pending_space = 0;
    memcpy(N->out + N->len, buf, n);
    N->len += n;
    N->out[N->len] = 0;
}

static int sq_run_is_article(const sq_norm *N) {
    if (N->run_long) return 0;
    const int32_t *r = N->run;
    return (N->run_len == 1 && r[0] == 'a') || (N->run_len == 2 && r[0] == 'a' && r[1] == 'n') ||
           (N->run_len == 3 && r[0] == 't' && r[1] == 'h' && r[2] == 'e');
}

static void sq_run_end(sq_norm *N) {
    if (sq_run_is_article(N))
        sq_emit(N, ' ');
    else if (!N->run_long)
        for (int i = 0; i < N->run_len; i++) sq_emit(N, N->run[i]);
    N->run_len = N->run_long = 0;
}

/* One lower-cased code point after remove_punc. */
static void sq_feed(sq_norm *N, int32_t c) {
    if (c > 0 && c < 0x80 && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", (int)c)) return;
    if (!sq_is_word(c)) {
        sq_run_end(N);
        sq_emit(N, c);
        return;
    }
    if (N->run_long) {
        sq_emit(N, c);
    } else if (N->run_len < 3) {
        N->run[N->run_len++] = c;
    } else {
        for (int i = 0; i < N->run_len; i++) sq_emit(N, N->run[i]);
        N->run_long = 1;
        sq_emit(N, c);
    }
}

long sq_normalize_answer(const char *s, size_t len, char *out, size_t cap) {
    if (!out || cap == 0) return -1;
    out[0] = 0;
    sq_norm N = {.out = out, .cap = cap};
    for (size_t i = 0; s && i < len && !N.overflow;) {
        int32_t c;
        size_t k = sq_decode(s, len, i, &c);
        if (c == 0x130) {
            sq_feed(&N, 'i');
            sq_feed(&N, 0x307);
        } else if (c == 0x3a3) {
            sq_feed(&N, sq_final_sigma(s, len, i) ? 0x3c2 : 0x3c3);
        } else {
            sq_feed(&N, c < 0 ? c : utf8proc_tolower(c));
        }
        i += k;
    }
    sq_run_end(&N);
    if (N.overflow) {
        out[0] = 0;
        return -1;
    }
    return (long)N.len;
}

int sq_exact_match(const char *pred, size_t len, const char *golden) {
    char a[512], b[512];
    long nb = sq_normalize_answer(golden, strlen(golden), b, sizeof b);
    long na = sq_normalize_answer(pred, len, a, sizeof a);
    return na >= 0 && nb >= 0 && na == nb && memcmp(a, b, (size_t)na) == 0;
}

/* ---- verl-agent's search_projection ---- */

/* Does s[i..] start with the ASCII tag under re.IGNORECASE? Returns the matched length
 * (Python's case folding also lets U+017F LONG S match 's'), 0 when not. */
static size_t sq_tag_at(const char *s, size_t len, size_t i, const char *tag) {
    size_t j = i;
    for (const char *t = tag; *t; t++) {
        if (j >= len) return 0;
        unsigned char ch = (unsigned char)s[j];
        if (ch >= 'A' && ch <= 'Z') ch = (unsigned char)(ch + 32);
        if (ch == (unsigned char)*t) {
            j++;
        } else if (*t == 's' && ch == 0xc5 && j + 1 < len && (unsigned char)s[j + 1] == 0xbf) {
            j += 2;
        } else {
            return 0;
        }
    }
    return j - i;
}

/* First position >= from where tag matches (icase), or len; *mlen = its length. */
static size_t sq_find_tag(const char *s, size_t len, size_t from, const char *tag, size_t *mlen) {
    for (size_t i = from; i < len; i++) {
        if (s[i] != '<') continue;
        size_t m = sq_tag_at(s, len, i, tag);
        if (m) {
            if (mlen) *mlen = m;
            return i;
        }
    }
    return len;
}

static size_t sq_count_tag(const char *s, size_t len, const char *tag) {
    size_t n = 0, m = 0;
    for (size_t i = sq_find_tag(s, len, 0, tag, &m); i < len;
         i = sq_find_tag(s, len, i + m, tag, &m))
        n++;
    return n;
}

/* First exact (case-sensitive) occurrence of lit, or NULL. */
static const char *sq_find_lit(const char *s, size_t len, const char *lit) {
    size_t n = strlen(lit);
    for (size_t i = 0; i + n <= len; i++)
        if (s[i] == lit[0] && memcmp(s + i, lit, n) == 0) return s + i;
    return NULL;
}

/* The first <open>(.*?)</close> block in s[0..len): content bounds, or 0. */
static int sq_block(const char *s, size_t len, const char *open, const char *close, size_t *c0,
                    size_t *c1) {
    size_t mo = 0, mc = 0;
    size_t o = sq_find_tag(s, len, 0, open, &mo);
    if (o >= len) return 0;
    size_t e = sq_find_tag(s, len, o + mo, close, &mc);
    if (e >= len) return 0;
    *c0 = o + mo;
    *c1 = e;
    return 1;
}

int sq_project(const char *action, size_t len, const char **content, size_t *clen) {
    *content = action;
    *clen = 0;
    if (!action) return SQ_ACT_INVALID;
    /* _postprocess_action: Python's `in` and split are case-sensitive */
    size_t trimmed = len;
    const char *cut = sq_find_lit(action, len, "</search>");
    if (cut)
        trimmed = (size_t)(cut - action) + 9;
    else if ((cut = sq_find_lit(action, len, "</answer>")))
        trimmed = (size_t)(cut - action) + 9;
    size_t c0 = 0, c1 = 0;
    int kind = SQ_ACT_INVALID;
    if (sq_block(action, trimmed, "<search>", "</search>", &c0, &c1))
        kind = SQ_ACT_SEARCH;
    else if (sq_block(action, trimmed, "<answer>", "</answer>", &c0, &c1))
        kind = SQ_ACT_ANSWER;
    if (kind != SQ_ACT_INVALID) {
        /* str.strip() */
        while (c0 < c1) {
            int32_t c;
            size_t k = sq_decode(action, c1, c0, &c);
            if (!sq_is_space(c)) break;
            c0 += k;
        }
        while (c1 > c0) {
            size_t p = sq_prev(action, c1, c1);
            int32_t c;
            sq_decode(action, c1, p, &c);
            if (!sq_is_space(c)) break;
            c1 = p;
        }
        *content = action + c0;
        *clen = c1 - c0;
    }
    size_t ns = sq_count_tag(action, len, "<search>"), na = sq_count_tag(action, len, "<answer>");
    if ((ns && na) || ns > 1 || na > 1) return SQ_ACT_INVALID;
    return kind;
}
