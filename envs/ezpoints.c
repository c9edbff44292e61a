/* ezpoints.c — EZPoints from gym_cards (RL4VLM), as verl-agent plays it, in text.
 *
 * Contract:
 *  - Two cards; the agent builds a formula equal to 12 one token at a time from the
 *    tokens 1-10, '+', '*', '='. Cards are drawn as gym_cards' _generate_cards does after
 *    random.seed(s) (reproduced exactly, pyrandom.h): the first card 2..K, the second
 *    makes 12 by '+' or (half the time, when possible) by '*', so every level has a
 *    3-token solution. J/Q/K count 10, A counts 1.
 *  - Step rules follow gym_cards' EZPointEnv.step: if the formula already holds more than
 *    5 tokens the episode ends with reward -1; a number not on the cards (or used more
 *    often than it appears) is rejected with reward -1 and a blank joins the formula (as
 *    gym_cards does, so the formula still grows); '=' evaluates the formula as Python's
 *    eval would (tokens concatenated: "1","0" is 10, "**" is a power, a blank between
 *    digits is an error) and ends the episode: +10 when it equals 12 and both cards were
 *    used, else -1; '+', '*' and available numbers give 0.
 *  - An action text that names no single token (verl-agent's gym_projection rule) and an
 *    invalid step (NULL) change nothing (reward 0); the caller applies the invalid-step
 *    penalty. The observation names the cards, shows the formula and any feedback.
 *  - Expert: the first token of a shortest winning completion. Hindsight oracle: replays
 *    the episode and names the first token after which 12 became unreachable. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "envs/pyrandom.h"
#include "common/util.h"

enum { EZ_PLUS = 11, EZ_TIMES = 12, EZ_EQUALS = 13, EZ_BLANK = 14, EZ_TARGET = 12 };
enum { EZ_FORMULA_CAP = 64, EZ_MAX_LEN = 5 };

static const char *const ez_tokens[13] = {"1", "2", "3",  "4", "5", "6", "7",
                                          "8", "9", "10", "+", "*", "="};

extern const env_vtable env_ezpoints_vtable;

typedef struct ezpoints {
    env base;
    int num[2];   /* card numbers (1-10) */
    char rank[2]; /* 'A', '2'..'9', 'T', 'J', 'Q', 'K' */
    char suit[2]; /* 'H', 'S', 'D', 'C' */
    int formula[EZ_FORMULA_CAP];
    int nf;
    int used[11]; /* how often each number was appended */
    int nused;
    char feedback[320];
    char task[128];
    char obs_text[768];
} ezpoints;

/* ---------------- Python-eval of the formula ---------------- */

typedef struct ez_parser {
    const char *s;
    int err;
} ez_parser;

static void ez_skip(ez_parser *p) {
    while (*p->s == ' ') p->s++;
}

static long long ez_sat(long double x) {
    return x > 1e15L ? 1000000000000000LL : (long long)x;
}

static long long ez_factor(ez_parser *p);

static long long ez_power(ez_parser *p) {
    ez_skip(p);
    if (*p->s < '0' || *p->s > '9') {
        p->err = 1;
        return 0;
    }
    const char *start = p->s;
    long long v = 0;
    while (*p->s >= '0' && *p->s <= '9') {
        v = ez_sat((long double)v * 10 + (*p->s - '0'));
        p->s++;
    }
    if (start[0] == '0' && p->s - start > 1) /* leading zeros: a SyntaxError unless all 0 */
        for (const char *q = start; q < p->s; q++)
            if (*q != '0') p->err = 1;
    ez_skip(p);
    if (p->s[0] == '*' && p->s[1] == '*') {
        p->s += 2;
        long long ex = ez_factor(p);
        long double r = 1;
        for (long long i = 0; i < ex && r < 1e15L; i++) r *= (long double)v;
        v = ez_sat(r);
    }
    return v;
}

static long long ez_factor(ez_parser *p) {
    ez_skip(p);
    if (*p->s == '+') {
        p->s++;
        return ez_factor(p);
    }
    return ez_power(p);
}

static long long ez_term(ez_parser *p) {
    long long v = ez_factor(p);
    for (;;) {
        ez_skip(p);
        if (p->s[0] == '*' && p->s[1] != '*') {
            p->s++;
            v = ez_sat((long double)v * (long double)ez_factor(p));
        } else
            return v;
    }
}

static long long ez_expr(ez_parser *p) {
    long long v = ez_term(p);
    for (;;) {
        ez_skip(p);
        if (*p->s == '+') {
            p->s++;
            v = ez_sat((long double)v + (long double)ez_term(p));
        } else
            return v;
    }
}

/* The formula as gym_cards joins it (''.join(map(str, formula))). */
static void ez_formula_text(const int *f, int nf, char *out, size_t cap) {
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < nf && o + 3 < cap; i++) {
        const char *t = f[i] == EZ_BLANK ? " " : ez_tokens[f[i] - 1];
        size_t n = strlen(t);
        memcpy(out + o, t, n);
        o += n;
    }
    out[o] = 0;
}

/* eval(formula): 1 with *value on success, 0 on a syntax error. */
static int ez_eval(const int *f, int nf, long long *value) {
    char text[EZ_FORMULA_CAP * 3];
    ez_formula_text(f, nf, text, sizeof text);
    ez_parser p = {text, 0};
    *value = ez_expr(&p);
    ez_skip(&p);
    return !p.err && *p.s == 0;
}

/* ---------------- tokens ---------------- */

/* verl-agent's gym_projection for EZPoints: "10" first (then removed), then every other
 * token contained in the text; exactly one distinct token maps, else -1. Returns 1..13. */
static int ez_token(const char *a) {
    if (!a) return -1;
    /* Python's str.replace("10", ""): drop non-overlapping "10"s, left to right */
    size_t n = strlen(a);
    char small[256], *low = n < sizeof small ? small : malloc(n + 1);
    if (!low) return -1;
    int found[14] = {0}, count = 0, tok = -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (a[i] == '1' && a[i + 1] == '0') {
            found[10] = 1;
            i++;
        } else
            low[o++] = a[i];
    }
    low[o] = 0;
    for (int t = 1; t <= 13; t++)
        if (t != 10 && strstr(low, ez_tokens[t - 1])) found[t] = 1;
    for (int t = 1; t <= 13; t++)
        if (found[t]) {
            count++;
            tok = t;
        }
    if (low != small) free(low);
    return count == 1 ? tok : -1;
}

static int ez_action_valid(const env *e, const char *action) {
    (void)e;
    return ez_token(action) > 0;
}

static int ez_available(const ezpoints *z, int number) {
    int have = (z->num[0] == number) + (z->num[1] == number);
    return z->used[number] < have;
}

/* ---------------- expert search ---------------- */

/* Is there a completion of (formula, used) of at most `left` more tokens, then '=', that
 * wins? Writes the first token (or EZ_EQUALS) to *first. */
static int ez_completes(ezpoints *z, int left, int *first) {
    long long v;
    if (z->nf <= EZ_MAX_LEN && z->nused == 2 && ez_eval(z->formula, z->nf, &v) && v == EZ_TARGET) {
        *first = EZ_EQUALS;
        return 1;
    }
    if (left <= 0 || z->nf >= EZ_MAX_LEN) return 0;
    static const int order[4] = {0, 1, EZ_PLUS, EZ_TIMES};
    for (int i = 0; i < 4; i++) {
        int t = order[i] < 2 ? z->num[order[i]] : order[i];
        if (t <= 10 && !ez_available(z, t)) continue;
        z->formula[z->nf++] = t;
        if (t <= 10) z->used[t]++, z->nused++;
        int dummy, ok = ez_completes(z, left - 1, &dummy);
        if (t <= 10) z->used[t]--, z->nused--;
        z->nf--;
        if (ok) {
            *first = t;
            return 1;
        }
    }
    return 0;
}

/* The first token of a shortest winning completion, or -1 when 12 is out of reach. */
static int ez_best(ezpoints *z) {
    if (z->nf > EZ_MAX_LEN) return -1;
    for (int left = 0; left <= EZ_MAX_LEN - z->nf; left++) {
        int first;
        if (ez_completes(z, left, &first)) return first;
    }
    return -1;
}

/* ---------------- env interface ---------------- */

static const char *ez_rank_word(char r) {
    switch (r) {
    case 'A':
        return "ace";
    case 'T':
        return "10";
    case 'J':
        return "jack";
    case 'Q':
        return "queen";
    case 'K':
        return "king";
    }
    return NULL;
}

static const char *ez_suit_word(char s) {
    return s == 'H' ? "hearts" : s == 'S' ? "spades" : s == 'D' ? "diamonds" : "clubs";
}

static void ez_card_name(const ezpoints *z, int i, char *out, size_t n) {
    const char *w = ez_rank_word(z->rank[i]);
    if (w)
        snprintf(out, n, "%s of %s", w, ez_suit_word(z->suit[i]));
    else
        snprintf(out, n, "%c of %s", z->rank[i], ez_suit_word(z->suit[i]));
}

static void ez_fill_obs(ezpoints *z, env_obs *obs, float reward, int done, int won) {
    char c0[32], c1[32], f[EZ_FORMULA_CAP * 3];
    ez_card_name(z, 0, c0, sizeof c0);
    ez_card_name(z, 1, c1, sizeof c1);
    ez_formula_text(z->formula, z->nf, f, sizeof f);
    snprintf(z->obs_text, sizeof z->obs_text,
             "Your cards are the %s and the %s, so your numbers are %d and %d. The current "
             "formula is: '%s'%s%s",
             c0, c1, z->num[0], z->num[1], f, z->feedback[0] ? "\n" : "", z->feedback);
    obs->task = z->task;
    obs->observation = z->obs_text;
    obs->n_admissible = 13;
    obs->admissible = ez_tokens;
    obs->reward = reward;
    obs->done = done;
    obs->won = won;
    obs->family = "ezpoints";
    obs->info = "";
}

static int ez_create(env **out, const env_kv *kv, int n_kv, char *err, size_t errlen) {
    static const char *const known[] = {NULL};
    if (env_kv_check("ezpoints", kv, n_kv, known, err, errlen)) return -1;
    ezpoints *z = calloc(1, sizeof *z);
    if (!z) return seed_errf(err, errlen, "ezpoints: out of memory");
    snprintf(z->task, sizeof z->task,
             "build a formula that equals %d from the numbers on your two cards, one token "
             "at a time",
             EZ_TARGET);
    *out = &z->base;
    return 0;
}

static void ez_destroy(env *e) {
    free(e);
}

static char ez_rank_char(int x) {
    return x == 1    ? 'A'
           : x == 10 ? 'T'
           : x == 11 ? 'J'
           : x == 12 ? 'Q'
           : x == 13 ? 'K'
                     : (char)('0' + x);
}

static int ez_reset(env *e, uint64_t seed, env_split split, env_obs *obs, char *err,
                    size_t errlen) {
    static const char suits[4] = {'H', 'S', 'D', 'C'};
    ezpoints *z = (ezpoints *)e;
    env_mt19937 py;
    env_pyrandom_seed(&py, env_level_seed(seed, split));
    /* gym_cards EZPointEnv._generate_cards */
    int c0 = 2 + (int)env_pyrandom_below(&py, 12);
    z->suit[0] = suits[env_pyrandom_below(&py, 4)];
    z->rank[0] = ez_rank_char(c0);
    z->num[0] = SEED_MIN(c0, 10);
    int n0 = z->num[0], divisible = n0 == 1 || n0 == 2 || n0 == 3 || n0 == 4 || n0 == 6;
    z->num[1] = divisible && env_pyrandom_random(&py) <= 0.5 ? EZ_TARGET / n0 : EZ_TARGET - n0;
    z->suit[1] = suits[env_pyrandom_below(&py, 4)];
    z->rank[1] = ez_rank_char(z->num[1]);
    if (env_pyrandom_random(&py) <= 0.5) {
        int t = z->num[0];
        z->num[0] = z->num[1];
        z->num[1] = t;
        char c = z->rank[0];
        z->rank[0] = z->rank[1];
        z->rank[1] = c;
        c = z->suit[0];
        z->suit[0] = z->suit[1];
        z->suit[1] = c;
    }
    z->nf = 0;
    z->nused = 0;
    memset(z->used, 0, sizeof z->used);
    z->feedback[0] = 0;
    ez_fill_obs(z, obs, 0.0f, 0, 0);
    return 0;
}

static int ez_step(env *e, const char *action, env_obs *obs, char *err, size_t errlen) {
    ezpoints *z = (ezpoints *)e;
    int tok = ez_token(action), done = 0, won = 0;
    float reward = 0.0f;
    char f[EZ_FORMULA_CAP * 3];
    z->feedback[0] = 0;
    if (tok < 0) {
        snprintf(z->feedback, sizeof z->feedback,
                 action ? "That action names no single token; nothing happens."
                        : "That reply was not a valid action; nothing happens.");
    } else if (z->nf > EZ_MAX_LEN) {
        reward = -1.0f;
        done = 1;
        snprintf(z->feedback, sizeof z->feedback,
                 "The formula is longer than %d tokens; the game is over.", EZ_MAX_LEN);
    } else if (tok <= 10 && !ez_available(z, tok)) {
        z->formula[z->nf++] = EZ_BLANK;
        reward = -1.0f;
        snprintf(z->feedback, sizeof z->feedback,
                 "The number %d is not on your cards or is already used; it was rejected.", tok);
    } else if (tok == EZ_EQUALS) {
        long long v = 0;
        int ok = ez_eval(z->formula, z->nf, &v);
        done = 1;
        won = ok && v == EZ_TARGET && z->nused == 2;
        reward = won ? 10.0f : -1.0f;
        ez_formula_text(z->formula, z->nf, f, sizeof f);
        if (won)
            snprintf(z->feedback, sizeof z->feedback,
                     "'%s' equals %d and uses both cards: you win.", f, EZ_TARGET);
        else if (!ok)
            snprintf(z->feedback, sizeof z->feedback, "'%s' is not a valid formula.", f);
        else if (z->nused != 2)
            snprintf(z->feedback, sizeof z->feedback, "'%s' does not use both cards.", f);
        else
            snprintf(z->feedback, sizeof z->feedback, "'%s' equals %lld, not %d.", f, v, EZ_TARGET);
    } else {
        if (tok <= 10) z->used[tok]++, z->nused++;
        z->formula[z->nf++] = tok;
    }
    ez_fill_obs(z, obs, reward, done, won);
    return 0;
}

static int ez_expert(env *e, char *buf, size_t buflen, char *err, size_t errlen) {
    int t = ez_best((ezpoints *)e);
    snprintf(buf, buflen, "%s", ez_tokens[(t < 0 ? EZ_EQUALS : t) - 1]);
    return 0;
}

/* ---------------- hindsight oracle ---------------- */

enum { EZ_S_NOOP, EZ_S_REJECT, EZ_S_OK, EZ_S_END };

/* What the replay keeps after each step: the expert's next token from here (-1: 12 can
 * no longer be reached), the formula's length and its last token. */
typedef struct ez_trace_rec {
    int best, nf, last;
} ez_trace_rec;

static void ez_trace_record(env *e, void *state) {
    ezpoints *z = (ezpoints *)e;
    ez_trace_rec *r = state;
    r->best = ez_best(z);
    r->nf = z->nf;
    r->last = z->nf > 0 ? z->formula[z->nf - 1] : 0;
}

static int ez_oracle(const env_trace *tr, env_skill *b, char *err, size_t errlen) {
    const ezpoints *z = (const ezpoints *)tr->e;
    const int steps = tr->n;
    int *kind = calloc((size_t)steps + 1, 3 * sizeof *kind), fatal = -1;
    if (!kind) return seed_errf(err, errlen, "ezpoints: out of memory in hindsight");
    int *tok = kind + steps + 1, *best = tok + steps + 1;
    for (int t = 0; t < steps; t++) {
        const ez_trace_rec *before = tr->step[t].state, *after = tr->step[t + 1].state;
        const env_trace_step *st = &tr->step[t + 1];
        best[t] = before->best;
        tok[t] = ez_token(st->action);
        kind[t] = tok[t] < 0                                          ? EZ_S_NOOP
                  : st->done                                          ? EZ_S_END
                  : after->nf > before->nf && after->last == EZ_BLANK ? EZ_S_REJECT
                                                                      : EZ_S_OK;
        /* a step without a token loses nothing, even the last one of the episode */
        if (fatal < 0 && tok[t] > 0 && best[t] >= 0 && (st->done ? !st->won : after->best < 0))
            fatal = t;
    }
    char c0[32], c1[32], f[EZ_FORMULA_CAP * 3], sol[32];
    ez_card_name(z, 0, c0, sizeof c0);
    ez_card_name(z, 1, c1, sizeof c1);
    int a = z->num[0], b2 = z->num[1];
    if (a + b2 == EZ_TARGET)
        snprintf(sol, sizeof sol, "%d+%d", a, b2);
    else
        snprintf(sol, sizeof sol, "%d*%d", a, b2);
    ez_formula_text(z->formula, z->nf, f, sizeof f);
    if (tr->won) {
        env_skill_put(
            b,
            "Success: with the %s and the %s (numbers %d and %d) the formula '%s' equals %d. "
            "Workflow that worked: check whether the two card numbers add up or multiply "
            "to %d, then append the first number, the operator, the second number, and "
            "finally '='.\n",
            c0, c1, a, b2, f, EZ_TARGET, EZ_TARGET);
        int nl = 0;
        for (int t = 0; t < steps && nl < 5; t++) {
            if (kind[t] == EZ_S_OK || kind[t] == EZ_S_END) {
                const char *why = tok[t] == EZ_EQUALS ? "to evaluate the finished formula"
                                  : tok[t] <= 10      ? "a card number"
                                                      : "the operator that reaches 12";
                env_skill_put(b, "step %d: Append '%s', %s.\n", t + 1, ez_tokens[tok[t] - 1], why);
                nl++;
            }
        }
    } else if (fatal >= 0) {
        int x = tok[fatal], bt = best[fatal];
        const char *what = kind[fatal] == EZ_S_REJECT ? "a number that is not on the cards (or was "
                                                        "already used), which was rejected"
                           : x == EZ_EQUALS           ? "'=' before the formula was finished"
                                                      : "a token after which 12 could no longer "
                                                        "be reached";
        env_skill_put(
            b,
            "Failure: the cards were the %s and the %s (numbers %d and %d), and '%s' = %d. At "
            "step %d the agent appended %s. Rule: use each card number exactly once, put "
            "'+' or '*' between them so the result is %d, and append '=' only when the "
            "formula is complete.\n",
            c0, c1, a, b2, sol, EZ_TARGET, fatal + 1, what, EZ_TARGET);
        int nl = 0;
        for (int t = 0; t < fatal && nl < 4; t++)
            if (kind[t] == EZ_S_NOOP) {
                env_skill_put(b,
                              "step %d: Answer with exactly one token: %d, %d, '+', '*' or '='.\n",
                              t + 1, a, b2);
                nl++;
            }
        env_skill_put(b, "step %d: Append '%s' instead of '%s'; the formula should become '%s'.\n",
                      fatal + 1, ez_tokens[bt - 1], ez_tokens[x - 1], sol);
    } else {
        env_skill_put(
            b,
            "Failure: the cards were the %s and the %s (numbers %d and %d), and '%s' = %d, "
            "but the episode ended after %d steps before '=' was appended. Rule: every "
            "step must append exactly one token; finish the formula and append '='.\n",
            c0, c1, a, b2, sol, EZ_TARGET, steps);
        int nl = 0;
        for (int t = 0; t < steps && nl < 5; t++)
            if (kind[t] == EZ_S_NOOP) {
                env_skill_put(b, "step %d: Answer with exactly one token; append '%s' here.\n",
                              t + 1, best[t] > 0 ? ez_tokens[best[t] - 1] : "=");
                nl++;
            }
    }
    free(kind);
    return 0;
}

const env_vtable env_ezpoints_vtable = {
    .name = "ezpoints",
    .instructions =
        "You are an expert card game player. You build a math formula that evaluates to 12 "
        "from the numbers on two playing cards, appending one token at a time.\n"
        "Card rules: number cards 2-10 count their face value; jack, queen and king count 10; "
        "an ace counts 1. Use each card's number exactly once and no other numbers.\n"
        "Formula rules: each step appends one token: a card number, '+', '*' or '='. "
        "Appending '=' evaluates the formula and ends the game; a formula longer than 5 "
        "tokens ends the game without reward.\n"
        "Rewards: +10 when the formula equals 12 and uses both cards; -1 for a number you do "
        "not have (it is rejected) and for a final formula that is wrong.",
    .create = ez_create,
    .destroy = ez_destroy,
    .reset = ez_reset,
    .step = ez_step,
    .expert = ez_expert,
    .trace_size = sizeof(ez_trace_rec),
    .trace_record = ez_trace_record,
    .oracle = ez_oracle,
    .max_steps_default = 10,
    .prompt_style = &env_prompt_style_ezpoints,
    .action_valid = ez_action_valid,
};
