/* skill_gen.c — writes the shipped skill libraries (deploy/skills/<env>.json, format in
 * common/skill_library.h) from each built-in env's hindsight oracle, and checks that the
 * committed files are what it writes.
 *
 *   skill_gen DIR [ENV ...]          write DIR/<env>.json (default: every env with an
 *                                    expert and an oracle: sokoban, ezpoints, household,
 *                                    webshop, searchqa)
 *   skill_gen --check DIR [ENV ...]  exit 1 when a file in DIR differs from what it writes
 *
 * How: for seeds 0..N_SEEDS-1 of the train split and each noise level, a noisy expert
 * plays an episode (the expert's action, or with probability eps a random admissible
 * action or an invalid reply — the mistakes a policy makes; at the highest level most
 * episodes fail), and the env's oracle (env_hindsight) writes its skill. The oracle
 * writes about one level; to count what levels share, parenthesised details are
 * dropped, and for household the level's names are replaced by what they stand for
 * ("cabinet 4" -> "cabinet", the task's object -> "[object]", its receptacle ->
 * "[receptacle]", the lamp -> "[lamp]"), with a sentence saying so at the start of the
 * episode skill. Per task family, the library keeps
 *  - episode skill: of the sentences that say what to do (not the outcome line, a count
 *    or a narration: "Success: ...", "Failure: ...", "The episode ...", "15 steps ..."),
 *    those at least half of the family's successes share (the success workflow;
 *    sentences about one level — cells, numbers — are rarely shared), then those half
 *    its failures share (the rule that avoids the mistake); when none reaches half, the
 *    most frequent one;
 *  - step skill k: the most frequent "step k:" sentence of the noise-free expert's
 *    successes in the family, kept when at least two thirds of them share it (a step
 *    the winning route takes on nearly every level: ezpoints' operator, '+' or '*' about
 *    equally often, is not one; noisy routes shift the step numbers);
 * and "*" is the same over every family of the env. Deterministic: the same envs give
 * byte-identical files. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/household_world.h"
#include "common/skill_library.h"
#include "common/util.h"

enum { N_SEEDS = 300, MAX_FAM = 16, MAX_K = 64, SKILL_CAP = 8192 };
static const double NOISE[] = {0.0, 0.2, 0.4, 0.9};

/* A counted set of texts, in first-seen order. */
typedef struct counter {
    int n, cap;
    char **text;
    int *count;
} counter;

static int counter_add(counter *c, const char *s, size_t len) {
    for (int i = 0; i < c->n; i++)
        if (strlen(c->text[i]) == len && !strncmp(c->text[i], s, len)) return c->count[i]++, 0;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        char **t = realloc(c->text, sizeof *t * (size_t)cap);
        if (t) c->text = t;
        int *k = realloc(c->count, sizeof *k * (size_t)cap);
        if (k) c->count = k;
        if (!t || !k) return -1;
        c->cap = cap;
    }
    if (!(c->text[c->n] = strndup(s, len))) return -1;
    c->count[c->n++] = 1;
    return 0;
}

static void counter_free(counter *c) {
    for (int i = 0; i < c->n; i++) free(c->text[i]);
    free(c->text);
    free(c->count);
    memset(c, 0, sizeof *c);
}

/* What the oracles said about one family (or, for "*", about every family). */
typedef struct family_stats {
    char name[SKILL_LIB_NAME_LEN];
    int episodes[2];     /* failures, successes */
    int expert_wins;     /* successes of the noise-free expert: where step skills come from */
    counter sentence[2]; /* paragraph sentences, per outcome; counted once per episode */
    counter step[MAX_K]; /* step k+1's sentences */
} family_stats;

static void stats_free(family_stats *f) {
    counter_free(&f->sentence[0]);
    counter_free(&f->sentence[1]);
    for (int k = 0; k < MAX_K; k++) counter_free(&f->step[k]);
}

/* Add one oracle skill text to f. Sentences end at ". " before a capital letter. */
static int stats_add(family_stats *f, const char *skill, int won, int expert) {
    f->episodes[won]++;
    f->expert_wins += won && expert;
    counter seen = {0}; /* this episode's sentences, so each counts once */
    int rc = 0;
    for (const char *line = skill; *line && !rc;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)SEED_MIN(len, sizeof buf - 1), line);
        int k;
        const char *sent;
        if (skill_lib_step_line(buf, &k, &sent)) {
            if (k <= MAX_K && won && expert) {
                rc = counter_add(&f->step[k - 1], sent, strlen(sent));
            }
        } else {
            for (const char *s = buf; *s && !rc;) {
                while (*s == ' ') s++;
                const char *e = s;
                while (*e && !(e[0] == '.' && e[1] == ' ' &&
                               (isupper((unsigned char)e[2]) || isdigit((unsigned char)e[2]))))
                    e++;
                size_t sl = (size_t)(e - s) + (*e == '.');
                if (sl > 0) {
                    int before = seen.n;
                    rc = counter_add(&seen, s, sl);
                    if (!rc && seen.n > before) rc = counter_add(&f->sentence[won], s, sl);
                }
                s = *e ? e + 1 : e;
            }
        }
        line = nl ? nl + 1 : line + len;
    }
    counter_free(&seen);
    return rc;
}

/* A sentence that reports what happened rather than what to do: the outcome line
 * ("Success: ...", "Failure: ..."), a count ("15 steps had ..."), or a narration. */
static int narrative(const char *s) {
    static const char *const open[] = {"Success:", "Failure:", "The ", "At ", "It ", "You "};
    if (isdigit((unsigned char)s[0])) return 1;
    for (size_t i = 0; i < sizeof open / sizeof open[0]; i++)
        if (!strncmp(s, open[i], strlen(open[i]))) return 1;
    return 0;
}

/* Of the sentences that say what to do, those at least half of n episodes share
 * (first-seen order), else the most frequent one, appended to out. */
static void pick_sentences(const counter *c, int n, char *out, size_t cap) {
    int best = -1, any = 0;
    for (int i = 0; i < c->n; i++) {
        if (narrative(c->text[i])) continue;
        if (best < 0 || c->count[i] > c->count[best]) best = i;
        if (2 * c->count[i] >= n) {
            size_t l = strlen(out);
            snprintf(out + l, cap - l, "%s%s", l ? " " : "", c->text[i]);
            any = 1;
        }
    }
    if (!any && best >= 0) {
        size_t l = strlen(out);
        snprintf(out + l, cap - l, "%s%s", l ? " " : "", c->text[best]);
    }
}

static cJSON *family_json(const family_stats *f) {
    char body[SKILL_CAP] = "", ep[SKILL_CAP] = "";
    pick_sentences(&f->sentence[1], f->episodes[1], body, sizeof body);
    pick_sentences(&f->sentence[0], f->episodes[0], body, sizeof body);
    /* say what the placeholders stand for */
    static const char *const ph[][2] = {{"[object]", "the object the task names"},
                                        {"[receptacle]", "the receptacle it names"},
                                        {"[lamp]", "the lamp it names"},
                                        {"[lamp's receptacle]", "where that lamp stands"}};
    for (size_t i = 0; i < sizeof ph / sizeof ph[0]; i++) {
        if (!strstr(body, ph[i][0])) continue;
        size_t l = strlen(ep);
        snprintf(ep + l, sizeof ep - l, "%s%s is %s", l ? ", " : "Here ", ph[i][0], ph[i][1]);
    }
    size_t l = strlen(ep);
    snprintf(ep + l, sizeof ep - l, "%s%s", l ? ". " : "", body);
    cJSON *o = cJSON_CreateObject(), *steps = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "episode", ep);
    size_t total = strlen(ep);
    int n_steps = 0;
    for (int k = 0; k < MAX_K && n_steps < SKILL_LIB_MAX_STEPS; k++) {
        const counter *c = &f->step[k];
        int best = -1;
        for (int i = 0; i < c->n; i++)
            if (best < 0 || c->count[i] > c->count[best]) best = i;
        if (best < 0 || 3 * c->count[best] < 2 * f->expert_wins) continue;
        char line[SKILL_LIB_LINE_MAX + 1];
        int w = snprintf(line, sizeof line, "step %d: %s", k + 1, c->text[best]);
        if (w < 0 || (size_t)w >= sizeof line || total + 1 + (size_t)w > SKILL_LIB_TEXT_MAX)
            continue;
        total += 1 + (size_t)w;
        cJSON_AddItemToArray(steps, cJSON_CreateString(line));
        n_steps++;
    }
    cJSON_AddItemToObject(o, "steps", steps);
    return o;
}

static int cmp_family(const void *a, const void *b) {
    return strcmp(((const family_stats *)a)->name, ((const family_stats *)b)->name);
}

/* Replace whole-word occurrences of `from` in s (cap bytes) by `to`. With plural set, a
 * word that starts with `from` counts too ("potatoes"), and becomes `to` + "s". */
static void replace_word(char *s, size_t cap, const char *from, const char *to, int plural) {
    size_t fl = strlen(from);
    if (!fl) return;
    char *out = malloc(cap), *o = out;
    if (!out) return;
    const char *p = s;
    size_t room = cap - 1;
    while (*p) {
        int at_start = p == s || !isalnum((unsigned char)p[-1]);
        if (at_start && !strncmp(p, from, fl)) {
            const char *e = p + fl;
            int more = 0;
            while (plural && isalpha((unsigned char)e[more])) more++;
            if (!isalnum((unsigned char)e[more])) {
                int w = snprintf(o, room + 1, "%s%s", to, more ? "s" : "");
                if (w < 0 || (size_t)w > room) break;
                o += w;
                room -= (size_t)w;
                p = e + more;
                continue;
            }
        }
        if (!room) break;
        *o++ = *p++;
        room--;
    }
    *o = 0;
    memcpy(s, out, (size_t)(o - out) + 1);
    free(out);
}

/* Drop " (...)" asides: they hold the level's particulars. */
static void drop_asides(char *s) {
    char *o = s;
    int depth = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '(') {
            if (depth++ == 0 && o > s && o[-1] == ' ') o--;
        } else if (*p == ')' && depth > 0) {
            depth--;
        } else if (!depth) {
            *o++ = *p;
        }
    }
    *o = 0;
}

/* household: the level's names -> what they stand for (see the top of this file). */
static int household_delex(uint64_t seed, char *skill, size_t cap, char *err, size_t errlen) {
    static hh_tables tab;
    static int ready;
    static hh_level lv;
    if (!ready) env_household_tables_init(&tab), ready = 1;
    if (env_household_generate(&tab, (1u << HF_COUNT) - 1, seed, ENV_SPLIT_TRAIN, &lv, err, errlen))
        return -1;
    for (int i = 0; i < lv.n_recep; i++)
        replace_word(skill, cap, lv.recep[i].name, env_household_recep_name(lv.recep[i].type), 0);
    for (int i = 0; i < lv.n_obj; i++)
        replace_word(skill, cap, lv.obj[i].name, env_household_obj_name(lv.obj[i].type), 0);
    if (lv.goal_recep >= 0)
        replace_word(skill, cap, env_household_recep_name(lv.goal_recep), "[receptacle]", 1);
    for (int i = 0; i < lv.n_obj && lv.lamp_type >= 0; i++)
        if (lv.obj[i].type == lv.lamp_type) {
            replace_word(skill, cap, env_household_recep_name(lv.recep[lv.obj[i].loc].type),
                         "[lamp's receptacle]", 0);
            break;
        }
    if (lv.lamp_type >= 0)
        replace_word(skill, cap, env_household_obj_name(lv.lamp_type), "[lamp]", 0);
    replace_word(skill, cap, env_household_obj_name(lv.goal_obj), "[object]", 1);
    return 0;
}

/* Play one noisy-expert episode and ask the oracle; *family and *won describe it. */
static int episode(const char *name, env *e, uint64_t seed, double eps, seed_rng *rng, char *skill,
                   char *family, int *won, char *err, size_t errlen) {
    env_obs obs;
    if (env_reset(e, seed, ENV_SPLIT_TRAIN, &obs, err, errlen)) return -1;
    snprintf(family, SKILL_LIB_NAME_LEN, "%s", obs.family ? obs.family : name);
    static char acts[1024][256];
    const char *ap[1024];
    int n = 0;
    while (!obs.done && n < 1024) {
        double u = seed_rng_uniform(rng);
        ap[n] = acts[n];
        if (u < eps / 3) {
            ap[n] = NULL; /* an invalid reply: the env gets no action */
        } else if (u < eps && obs.n_admissible > 0) {
            snprintf(acts[n], sizeof acts[n], "%s",
                     obs.admissible[seed_rng_below(rng, (uint64_t)obs.n_admissible)]);
        } else if (env_expert(e, acts[n], sizeof acts[n], err, errlen)) {
            break; /* a noisy step made the task unsolvable: the failure the oracle explains */
        }
        if (env_step(e, ap[n], &obs, err, errlen)) return -1;
        n++;
    }
    *won = obs.won;
    if (env_hindsight(name, NULL, 0, seed, ENV_SPLIT_TRAIN, ap, n, skill, SKILL_CAP, err, errlen))
        return -1;
    drop_asides(skill);
    return strcmp(name, "household") ? 0 : household_delex(seed, skill, SKILL_CAP, err, errlen);
}

/* The library of env `name` as JSON text (malloc'd), or NULL. */
static char *build(const char *name) {
    char err[SEED_ERRLEN], family[SKILL_LIB_NAME_LEN];
    static family_stats fam[MAX_FAM + 1]; /* the last one: "*" */
    memset(fam, 0, sizeof fam);
    int nf = 0;
    env *e = NULL;
    if (env_create(&e, name, NULL, 0, err, sizeof err)) {
        fprintf(stderr, "skill_gen: %s\n", err);
        return NULL;
    }
    char *skill = malloc(SKILL_CAP);
    seed_rng rng;
    seed_rng_init(&rng, seed_fnv1a64(name, strlen(name)));
    int rc = skill ? 0 : -1;
    snprintf(fam[MAX_FAM].name, sizeof fam[MAX_FAM].name, "*");
    for (size_t v = 0; v < sizeof NOISE / sizeof NOISE[0] && !rc; v++)
        for (uint64_t seed = 0; seed < N_SEEDS && !rc; seed++) {
            int won = 0;
            if (episode(name, e, seed, NOISE[v], &rng, skill, family, &won, err, sizeof err)) {
                fprintf(stderr, "skill_gen: %s seed %llu: %s\n", name, (unsigned long long)seed,
                        err);
                rc = -1;
                break;
            }
            int f = 0;
            while (f < nf && strcmp(fam[f].name, family)) f++;
            if (f == nf) {
                if (nf == MAX_FAM) {
                    fprintf(stderr, "skill_gen: %s: more than %d families\n", name, MAX_FAM);
                    rc = -1;
                    break;
                }
                snprintf(fam[nf++].name, SKILL_LIB_NAME_LEN, "%s", family);
            }
            int expert = NOISE[v] == 0.0;
            rc = stats_add(&fam[f], skill, won != 0, expert) ||
                 stats_add(&fam[MAX_FAM], skill, won != 0, expert);
        }
    env_destroy(e);
    free(skill);
    char *out = NULL;
    if (!rc) {
        qsort(fam, (size_t)nf, sizeof fam[0], cmp_family);
        cJSON *root = cJSON_CreateObject(), *skills = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "format", "seed-skill-library/1");
        cJSON_AddStringToObject(root, "env", name);
        for (int f = 0; f < nf; f++) {
            cJSON_AddItemToObject(skills, fam[f].name, family_json(&fam[f]));
            fprintf(stderr, "skill_gen: %s/%s: %d successes, %d failures\n", name, fam[f].name,
                    fam[f].episodes[1], fam[f].episodes[0]);
        }
        cJSON_AddItemToObject(skills, "*", family_json(&fam[MAX_FAM]));
        cJSON_AddItemToObject(root, "skills", skills);
        char *txt = cJSON_Print(root);
        cJSON_Delete(root);
        if (txt && (out = malloc(strlen(txt) + 2))) sprintf(out, "%s\n", txt);
        cJSON_free(txt);
    }
    for (int f = 0; f <= MAX_FAM; f++) stats_free(&fam[f]);
    return out;
}

int main(int argc, char **argv) {
    int check = argc > 1 && !strcmp(argv[1], "--check");
    if (argc < 2 + check) {
        fprintf(stderr, "usage: skill_gen [--check] DIR [ENV ...]\n");
        return 2;
    }
    const char *dir = argv[1 + check];
    static const char *const builtin[] = {"sokoban", "ezpoints", "household", "webshop",
                                          "searchqa"};
    int n = argc - 2 - check;
    const char *const *envs = n > 0 ? (const char *const *)argv + 2 + check : builtin;
    if (n == 0) n = (int)(sizeof builtin / sizeof builtin[0]);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        char *txt = build(envs[i]);
        if (!txt) return 1;
        char path[4096], err[SEED_ERRLEN];
        snprintf(path, sizeof path, "%s/%s.json", dir, envs[i]);
        /* what it writes must parse as a library */
        skill_lib lib = {0};
        if (skill_lib_parse(&lib, txt, strlen(txt), path, err, sizeof err)) {
            fprintf(stderr, "skill_gen: generated an invalid library: %s\n", err);
            free(txt);
            return 1;
        }
        skill_lib_free(&lib);
        if (check) {
            char *have = NULL;
            size_t len = 0;
            if (seed_read_file(path, &have, &len, err, sizeof err) || strcmp(have, txt)) {
                fprintf(stderr,
                        "skill_gen: %s is not what the oracles give now; regenerate it with "
                        "`skill_gen %s`\n",
                        path, dir);
                bad = 1;
            }
            free(have);
        } else if (seed_write_file_atomic(path, txt, strlen(txt), err, sizeof err)) {
            fprintf(stderr, "skill_gen: %s\n", err);
            free(txt);
            return 1;
        }
        free(txt);
    }
    return bad;
}
