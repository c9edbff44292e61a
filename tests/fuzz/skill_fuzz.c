/* skill_fuzz.c — libFuzzer target: the analyzer's skill parser (roles/skill.h,
 * skill_parse), which reads text the policy or an external chat endpoint wrote.
 * The first input byte sets max_steps (0..7: also past SKILL_LIB_MAX_STEPS), the rest is
 * the answer. Invariants: the parse points only into its own buffer with NUL-terminated
 * strings, step numbers are >= 1, at most min(max_steps, SKILL_LIB_MAX_STEPS) lines; the
 * text it writes back parses to the same skill (but for three ambiguities, below). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/skill.h"

static void fuzz_fail(const char *what) {
    fprintf(stderr, "skill_fuzz: invariant broken: %s\n", what);
    abort();
}

static int inside(const skill_parsed *s, const char *p) {
    return p >= s->buf && p < s->buf + sizeof s->buf &&
           memchr(p, 0, (size_t)(s->buf + sizeof s->buf - p));
}

static void check(const skill_parsed *s, int max_steps) {
    if (!inside(s, s->episode)) fuzz_fail("the episode skill is not a string in the buffer");
    int cap = max_steps < SKILL_LIB_MAX_STEPS ? max_steps : SKILL_LIB_MAX_STEPS;
    if (s->n_steps < 0 || s->n_steps > (cap > 0 ? cap : 0)) fuzz_fail("too many step lines");
    for (int i = 0; i < s->n_steps; i++) {
        if (!inside(s, s->step[i])) fuzz_fail("a step skill is not a string in the buffer");
        if (s->step_no[i] < 1) fuzz_fail("a step number below 1");
        if (skill_for_step(s, s->step_no[i]) == NULL)
            fuzz_fail("a parsed step is not found by its number");
    }
}

static int same(const skill_parsed *a, const skill_parsed *b) {
    if (strcmp(a->episode, b->episode) || a->n_steps != b->n_steps) return 0;
    for (int i = 0; i < a->n_steps; i++)
        if (a->step_no[i] != b->step_no[i] || strcmp(a->step[i], b->step[i])) return 0;
    return 1;
}

static size_t step_bytes(const skill_parsed *s) {
    size_t n = 0;
    for (int i = 0; i < s->n_steps; i++) n += strlen(s->step[i]) + 1;
    return n;
}

static size_t longest_line(const char *t) {
    size_t best = 0;
    for (const char *nl; t; t = nl ? nl + 1 : NULL) {
        nl = strchr(t, '\n');
        size_t n = nl ? (size_t)(nl - t) : strlen(t);
        if (n > best) best = n;
    }
    return best;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int max_steps = data[0] & 7;
    static skill_parsed s, t;
    static char text[8192];
    skill_parse((const char *)data + 1, size - 1, max_steps, &s);
    check(&s, max_steps);
    (void)skill_for_step(&s, 0);
    (void)skill_for_step(&s, 1 << 30);
    /* The episode's parse: only step numbers 1..n, each once, at most max_steps lines. */
    int n = data[0] >> 3;
    skill_parse_episode((const char *)data + 1, size - 1, max_steps, n, &t);
    check(&t, max_steps);
    for (int i = 0; i < t.n_steps; i++) {
        if (t.step_no[i] < 1 || t.step_no[i] > n) fuzz_fail("a kept step line names no step taken");
        if (skill_for_step(&t, t.step_no[i]) != t.step[i]) fuzz_fail("a step named twice");
    }
    /* Three texts re-parse differently by design, so the round trip skips them: one that
     * still holds "<skill>" (re-parsed from that tag on), an episode paragraph that reads
     * as a "step k:" line once its lines are joined ("step\n2: x"), and one cut by a
     * bound (a 511-byte line, the step lines' half of buf): cut again, it cuts elsewhere. */
    int k;
    const char *sent;
    if (skill_format(&s, text, sizeof text) == 0 && !strstr(text, "<skill>") &&
        !skill_lib_step_line(s.episode, &k, &sent) && longest_line(text) < 511 &&
        step_bytes(&s) < sizeof s.buf / 2) {
        skill_parse(text, strlen(text), max_steps, &t);
        check(&t, max_steps);
        if (!same(&s, &t)) fuzz_fail("the written skill parses to another skill");
    }
    return 0;
}
