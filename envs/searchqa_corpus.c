/* searchqa_corpus.c — the searchqa env's generated knowledge corpus (searchqa.h).
 *
 * Contract: sq_corpus_build makes the same entities and passages for the same
 * (corpus_seed, n_entities) on every machine: countries, cities, people, companies and
 * written works, in that order, with invented names (syllables and word lists) that are
 * unique after Search-R1's answer normalisation, so an answer names exactly one entity.
 * Every relation a question follows is written in the passage of the entity it starts
 * from; passages also name related entities (people born in a city, a country's cities)
 * so that a search for a name returns distractors next to the right passage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/searchqa.h"
#include "common/util.h"

enum { SQ_DOC_CAP = 640 };

static const char *const sq_onset[] = {"b",  "br", "c",  "d", "dr", "f",  "g",  "gr",
                                       "h",  "k",  "l",  "m", "n",  "p",  "r",  "s",
                                       "st", "t",  "tr", "v", "z",  "th", "sh", "ch"};
static const char *const sq_vowel[] = {"a", "e", "i", "o", "u", "ai", "ea", "ou", "y"};
static const char *const sq_coda[] = {"", "", "n", "r", "l", "s", "th", "m", "nd", "rk", "x"};
static const char *const sq_city_suffix[] = {"port", "holm",  "ford", "bury", "stad",
                                             "vale", "mouth", "wick", "ton",  "field"};
static const char *const sq_country_suffix[] = {"ia", "land", "stan", "ora", "avia", "esh"};
static const char *const sq_company_suffix[] = {"Industries", "Systems", "Holdings", "Labs",
                                                "Group",      "Works",   "Dynamics", "Partners",
                                                "Motors",     "Trading"};
static const char *const sq_adj[] = {"Silent",    "Golden", "Hidden",    "Broken",   "Distant",
                                     "Crimson",   "Hollow", "Quiet",     "Burning",  "Frozen",
                                     "Wandering", "Last",   "Forgotten", "Endless",  "Pale",
                                     "Iron",      "Velvet", "Bitter",    "Northern", "Sleeping"};
static const char *const sq_noun[] = {"Orchard", "River",  "Harbor",  "Garden",  "Mirror",
                                      "Lantern", "Bridge", "Tower",   "Winter",  "Shore",
                                      "Forest",  "Crown",  "Letter",  "Voyage",  "Season",
                                      "Empire",  "Meadow", "Compass", "Archive", "Island"};
static const char *const sq_occupation[] = {
    "chemist",  "painter",       "architect",    "novelist",   "physicist", "engineer",
    "composer", "historian",     "economist",    "botanist",   "sculptor",  "journalist",
    "surgeon",  "mathematician", "photographer", "astronomer", "lawyer",    "geologist"};
static const char *const sq_currency[] = {"crown", "mark", "florin", "dinar", "real",  "peso",
                                          "franc", "lira", "rand",   "taler", "ducat", "shilling"};
static const char *const sq_industry[] = {
    "shipbuilding", "software", "textile", "mining",    "pharmaceutical",     "aerospace",
    "publishing",   "brewing",  "railway", "insurance", "telecommunications", "shipping"};
static const char *const sq_genre[] = {
    "novel", "play", "poetry collection", "memoir", "essay collection", "short story collection"};

#define SQ_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *sq_kind_name(int kind) {
    static const char *const n[SQ_KIND_COUNT] = {"person", "city", "country", "company", "work"};
    return kind >= 0 && kind < SQ_KIND_COUNT ? n[kind] : "?";
}

const char *sq_attr_name(int kind, int a) {
    switch (kind) {
    case SQ_PERSON:
        return a >= 0 && a < SQ_N(sq_occupation) ? sq_occupation[a] : "?";
    case SQ_COUNTRY:
        return a >= 0 && a < SQ_N(sq_currency) ? sq_currency[a] : "?";
    case SQ_COMPANY:
        return a >= 0 && a < SQ_N(sq_industry) ? sq_industry[a] : "?";
    case SQ_WORK:
        return a >= 0 && a < SQ_N(sq_genre) ? sq_genre[a] : "?";
    }
    return "";
}

/* A capitalised made-up word of n syllables. */
static void sq_word(seed_rng *r, int n, char *out, size_t cap) {
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        const char *parts[3] = {sq_onset[seed_rng_below(r, SQ_N(sq_onset))],
                                sq_vowel[seed_rng_below(r, SQ_N(sq_vowel))],
                                i == n - 1 ? sq_coda[seed_rng_below(r, SQ_N(sq_coda))] : ""};
        for (int p = 0; p < 3; p++) {
            size_t L = strlen(parts[p]);
            if (o + L + 1 > cap) return;
            memcpy(out + o, parts[p], L);
            o += L;
            out[o] = 0;
        }
    }
    if (out[0] >= 'a' && out[0] <= 'z') out[0] = (char)(out[0] - 32);
}

/* Normalised names already taken: open addressing over their hashes. */
typedef struct sq_nameset {
    uint64_t *h;
    uint32_t cap;
} sq_nameset;

static int sq_name_take(sq_nameset *s, const char *name) {
    char norm[SQ_NAME * 2];
    long n = sq_normalize_answer(name, strlen(name), norm, sizeof norm);
    if (n <= 0) return 0;
    uint64_t h = seed_fnv1a64(norm, (size_t)n) | 1;
    for (uint32_t i = (uint32_t)h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->h[i] == h) return 0;
        if (!s->h[i]) {
            s->h[i] = h;
            return 1;
        }
    }
}

static int sq_person_name(seed_rng *r, char (*first)[SQ_NAME], int n_first, char (*last)[SQ_NAME],
                          int n_last, char *out) {
    snprintf(out, SQ_NAME, "%s %s", first[seed_rng_below(r, (uint64_t)n_first)],
             last[seed_rng_below(r, (uint64_t)n_last)]);
    return 0;
}

static void sq_name_of(seed_rng *r, int kind, char (*first)[SQ_NAME], int n_first,
                       char (*last)[SQ_NAME], int n_last, char *out) {
    char w[SQ_NAME];
    switch (kind) {
    case SQ_PERSON:
        sq_person_name(r, first, n_first, last, n_last, out);
        break;
    case SQ_CITY:
        sq_word(r, 1 + (int)seed_rng_below(r, 2), w, sizeof w);
        if (seed_rng_below(r, 6) == 0)
            snprintf(out, SQ_NAME, "New %s%s", w, sq_city_suffix[seed_rng_below(r, 10)]);
        else
            snprintf(out, SQ_NAME, "%s%s", w, sq_city_suffix[seed_rng_below(r, 10)]);
        break;
    case SQ_COUNTRY:
        sq_word(r, 2, w, sizeof w);
        snprintf(out, SQ_NAME, "%s%s", w,
                 sq_country_suffix[seed_rng_below(r, SQ_N(sq_country_suffix))]);
        break;
    case SQ_COMPANY:
        sq_word(r, 2, w, sizeof w);
        snprintf(out, SQ_NAME, "%s %s", w,
                 sq_company_suffix[seed_rng_below(r, SQ_N(sq_company_suffix))]);
        break;
    default: { /* works: four title patterns over shared word lists */
        const char *a = sq_adj[seed_rng_below(r, SQ_N(sq_adj))];
        const char *n1 = sq_noun[seed_rng_below(r, SQ_N(sq_noun))];
        const char *n2 = sq_noun[seed_rng_below(r, SQ_N(sq_noun))];
        switch (seed_rng_below(r, 4)) {
        case 0:
            snprintf(out, SQ_NAME, "The %s %s", a, n1);
            break;
        case 1:
            snprintf(out, SQ_NAME, "The %s of the %s %s", n1, a, n2);
            break;
        case 2:
            snprintf(out, SQ_NAME, "%s and %s", n1, n2);
            break;
        default:
            snprintf(out, SQ_NAME, "A %s %s of %s", a, n1, n2);
            break;
        }
    }
    }
}

void sq_corpus_free(sq_corpus *c) {
    if (!c) return;
    free(c->ent);
    free(c->doc);
    free(c->arena);
    memset(c, 0, sizeof *c);
}

static int sq_pick(seed_rng *r, const sq_corpus *c, int kind) {
    return c->first[kind] + (int)seed_rng_below(r, (uint64_t)c->count[kind]);
}

/* The passage of entity i: Search-R1's `contents`, "title\ntext". */
static void sq_passage(const sq_corpus *c, int i, const int *born_here, int n_born,
                       const int *cities, int n_cities, char *out, size_t cap) {
    const sq_entity *e = &c->ent[i];
    const sq_entity *ent = c->ent;
    switch (e->kind) {
    case SQ_PERSON: {
        const char *last = strrchr(e->name, ' ');
        last = last ? last + 1 : e->name;
        const char *occ = sq_occupation[e->attr];
        snprintf(out, cap,
                 "%s\n%s (born %d) is a%s %s from %s. %s was born in %s in %d and works for "
                 "%s.",
                 e->name, e->name, e->year, strchr("aeiou", occ[0]) ? "n" : "", occ,
                 ent[e->rel[0]].name, last, ent[e->rel[0]].name, e->year, ent[e->rel[1]].name);
        break;
    }
    case SQ_CITY: {
        int o = snprintf(out, cap, "%s\n%s is a city in %s. It was founded in %d.", e->name,
                         e->name, ent[e->rel[0]].name, e->year);
        if (n_born > 0 && o > 0 && (size_t)o < cap)
            o += snprintf(out + o, cap - (size_t)o, " Notable people born in %s include %s%s%s.",
                          e->name, ent[born_here[0]].name, n_born > 1 ? " and " : "",
                          n_born > 1 ? ent[born_here[1]].name : "");
        break;
    }
    case SQ_COUNTRY: {
        int o =
            snprintf(out, cap, "%s\n%s is a country whose capital is %s. Its currency is the %s.",
                     e->name, e->name, ent[e->rel[0]].name, sq_currency[e->attr]);
        if (n_cities > 0 && o > 0 && (size_t)o < cap)
            o += snprintf(out + o, cap - (size_t)o, " Other cities in %s include %s%s%s.", e->name,
                          ent[cities[0]].name, n_cities > 1 ? " and " : "",
                          n_cities > 1 ? ent[cities[1]].name : "");
        break;
    }
    case SQ_COMPANY: {
        const char *ind = sq_industry[e->attr];
        snprintf(out, cap,
                 "%s\n%s is a%s %s company founded in %d by %s. It is headquartered in %s.",
                 e->name, e->name, strchr("aeiou", ind[0]) ? "n" : "", ind, e->year,
                 ent[e->rel[0]].name, ent[e->rel[1]].name);
        break;
    }
    default:
        snprintf(out, cap, "%s\n%s is a %s by %s, first published in %d.", e->name, e->name,
                 sq_genre[e->attr], ent[e->rel[0]].name, e->year);
        break;
    }
}

int sq_corpus_build(sq_corpus *c, uint64_t corpus_seed, int n, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    if (n < 100 || n > 20000)
        return seed_errf(err, errlen, "searchqa: corpus_entities %d is outside 100..20000", n);
    int count[SQ_KIND_COUNT];
    count[SQ_COUNTRY] = SEED_MAX(4, n * 2 / 100);
    count[SQ_CITY] = SEED_MAX(2 * count[SQ_COUNTRY], n * 13 / 100);
    count[SQ_PERSON] = n * 45 / 100;
    count[SQ_COMPANY] = n * 20 / 100;
    count[SQ_WORK] = n - count[SQ_COUNTRY] - count[SQ_CITY] - count[SQ_PERSON] - count[SQ_COMPANY];
    static const int order[SQ_KIND_COUNT] = {SQ_COUNTRY, SQ_CITY, SQ_PERSON, SQ_COMPANY, SQ_WORK};
    int at = 0;
    for (int k = 0; k < SQ_KIND_COUNT; k++) {
        c->first[order[k]] = at;
        c->count[order[k]] = count[order[k]];
        at += count[order[k]];
    }
    c->n = n;
    c->ent = calloc((size_t)n, sizeof *c->ent);
    c->doc = calloc((size_t)n, sizeof *c->doc);
    c->arena = malloc((size_t)n * SQ_DOC_CAP);
    int n_first = 150, n_last = SEED_MAX(60, count[SQ_PERSON] / 3);
    char(*first)[SQ_NAME] = calloc((size_t)(n_first + n_last), SQ_NAME);
    char(*last)[SQ_NAME] = first ? first + n_first : NULL;
    sq_nameset names = {NULL, 1};
    while (names.cap < (uint32_t)(4 * (n + n_first + n_last))) names.cap <<= 1;
    names.h = calloc(names.cap, sizeof *names.h);
    int *born = calloc((size_t)n * 2, sizeof *born); /* per city: 2 people born there */
    int *nborn = calloc((size_t)n, sizeof *nborn);
    int *cities = calloc((size_t)n * 2, sizeof *cities); /* per country: 2 non-capitals */
    int *ncities = calloc((size_t)n, sizeof *ncities);
    int rc = 0;
    if (!c->ent || !c->doc || !c->arena || !first || !names.h || !born || !nborn || !cities ||
        !ncities) {
        rc = seed_errf(err, errlen, "searchqa: out of memory building a corpus of %d entities", n);
        goto out;
    }
    seed_rng r;
    seed_rng_init(&r, seed_hash_mix(0x5ea7c4a11ULL, corpus_seed));
    /* name pools: first names recur across people, surnames across families */
    for (int i = 0; i < n_first + n_last; i++) {
        int tries = 0;
        do {
            sq_word(&r, i < n_first ? 2 : 2 + (int)seed_rng_below(&r, 2), first[i], SQ_NAME);
        } while (!sq_name_take(&names, first[i]) && ++tries < 1000);
        if (tries >= 1000) {
            rc = seed_errf(err, errlen, "searchqa: could not invent %d distinct names",
                           n_first + n_last);
            goto out;
        }
    }
    for (int i = 0; i < n; i++) {
        sq_entity *e = &c->ent[i];
        for (int k = 0; k < SQ_KIND_COUNT; k++)
            if (i >= c->first[k] && i < c->first[k] + c->count[k]) e->kind = (uint8_t)k;
        int tries = 0;
        do {
            sq_name_of(&r, e->kind, first, n_first, last, n_last, e->name);
        } while (!sq_name_take(&names, e->name) && ++tries < 2000);
        if (tries >= 2000) {
            rc = seed_errf(err, errlen,
                           "searchqa: ran out of distinct %s names at corpus_entities %d",
                           sq_kind_name(e->kind), n);
            goto out;
        }
        e->rel[0] = e->rel[1] = -1;
    }
    /* relations and attributes, in an order where every target already exists */
    for (int i = c->first[SQ_CITY]; i < c->first[SQ_CITY] + c->count[SQ_CITY]; i++) {
        int j = i - c->first[SQ_CITY];
        sq_entity *e = &c->ent[i];
        e->rel[0] = j < count[SQ_COUNTRY] ? c->first[SQ_COUNTRY] + j : sq_pick(&r, c, SQ_COUNTRY);
        e->year = (int16_t)(800 + seed_rng_below(&r, 1100));
        if (j < count[SQ_COUNTRY]) {
            c->ent[e->rel[0]].rel[0] = i; /* the country's first city is its capital */
        } else if (ncities[e->rel[0]] < 2) {
            cities[2 * e->rel[0] + ncities[e->rel[0]]++] = i;
        }
    }
    for (int i = c->first[SQ_COUNTRY]; i < c->first[SQ_COUNTRY] + count[SQ_COUNTRY]; i++)
        c->ent[i].attr = (int16_t)seed_rng_below(&r, SQ_N(sq_currency));
    for (int i = c->first[SQ_PERSON]; i < c->first[SQ_PERSON] + count[SQ_PERSON]; i++) {
        sq_entity *e = &c->ent[i];
        e->rel[0] = sq_pick(&r, c, SQ_CITY);
        e->year = (int16_t)(1900 + seed_rng_below(&r, 96));
        e->attr = (int16_t)seed_rng_below(&r, SQ_N(sq_occupation));
        if (nborn[e->rel[0]] < 2) born[2 * e->rel[0] + nborn[e->rel[0]]++] = i;
    }
    for (int i = c->first[SQ_COMPANY]; i < c->first[SQ_COMPANY] + count[SQ_COMPANY]; i++) {
        sq_entity *e = &c->ent[i];
        e->rel[0] = sq_pick(&r, c, SQ_PERSON);
        e->rel[1] = sq_pick(&r, c, SQ_CITY);
        e->year =
            (int16_t)SEED_MIN(2024, c->ent[e->rel[0]].year + 22 + (int)seed_rng_below(&r, 40));
        e->attr = (int16_t)seed_rng_below(&r, SQ_N(sq_industry));
    }
    for (int i = c->first[SQ_WORK]; i < c->first[SQ_WORK] + count[SQ_WORK]; i++) {
        sq_entity *e = &c->ent[i];
        e->rel[0] = sq_pick(&r, c, SQ_PERSON);
        e->year =
            (int16_t)SEED_MIN(2024, c->ent[e->rel[0]].year + 20 + (int)seed_rng_below(&r, 50));
        e->attr = (int16_t)seed_rng_below(&r, SQ_N(sq_genre));
    }
    for (int i = c->first[SQ_PERSON]; i < c->first[SQ_PERSON] + count[SQ_PERSON]; i++)
        c->ent[i].rel[1] = sq_pick(&r, c, SQ_COMPANY);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        char *d = c->arena + off;
        sq_passage(c, i, born + 2 * i, nborn[i], cities + 2 * i, ncities[i], d, SQ_DOC_CAP);
        c->doc[i] = d;
        off += strlen(d) + 1;
    }
out:
    free(first);
    free(names.h);
    free(born);
    free(nborn);
    free(cities);
    free(ncities);
    if (rc) sq_corpus_free(c);
    return rc;
}
