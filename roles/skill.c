#define _GNU_SOURCE
/* skill.c — see skill.h. */
#include "roles/skill.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

static int app(seed_sbuf *b, const char *s) {
    return seed_sbuf_append(b, s, strlen(s));
}

static int app_cut(seed_sbuf *b, const char *s, int max_chars) {
    size_t n = strlen(s);
    if (max_chars > 0 && n > (size_t)max_chars) {
        const char *p = s + n - (size_t)max_chars;
        while (*p && ((unsigned char)*p & 0xC0) == 0x80) p++; /* start on a character */
        return app(b, "...") || app(b, p);
    }
    return seed_sbuf_append(b, s, n);
}

int skill_request(const skill_traj *t, int max_obs_chars, seed_sbuf *out, char *err,
                  size_t errlen) {
    seed_sbuf *u = out;
    char line[256];
    int bad = app(u, "You are reviewing a finished episode of an agent in the ") ||
              app(u, t->env) || app(u, " environment.\nTask: ") || app(u, t->task ? t->task : "") ||
              app(u, "\nTrajectory:\n");
    for (int i = 0; i < t->n_steps && !bad; i++) {
        const skill_traj_step *s = &t->steps[i];
        int valid = s->action && s->action[0];
        snprintf(line, sizeof line, "Step %d observation: ", i + 1);
        bad = app(u, line) || app_cut(u, s->observation ? s->observation : "", max_obs_chars);
        snprintf(line, sizeof line, "\nStep %d action: ", i + 1);
        if (!bad) bad = app(u, line) || app(u, valid ? s->action : "(invalid reply)");
        snprintf(line, sizeof line, " (reward %.2f)\n", s->reward);
        if (!bad) bad = app(u, line);
    }
    snprintf(line, sizeof line, "Outcome: %s, return %.2f.\n", t->won ? "success" : "failure",
             t->episode_return);
    if (!bad)
        bad = app(u, line) ||
              app(u, t->won ? "Write the hindsight skill: the reusable workflow that made this "
                              "episode succeed."
                            : "Write the hindsight skill: the mistake that made this episode "
                              "fail and the rule that avoids it.") ||
              app(u, " Then add up to 5 lines 'step k: <imperative sentence>' for the steps "
                     "that matter. Answer inside <skill> </skill>.");
    if (bad) return seed_errf(err, errlen, "out of memory rendering an analysis prompt");
    return 0;
}

int skill_request_chat(const skill_traj *t, int max_obs_chars, seed_sbuf *out, char *err,
                       size_t errlen) {
    seed_sbuf u = {0};
    if (skill_request(t, max_obs_chars, &u, err, errlen)) {
        seed_sbuf_free(&u);
        return -1;
    }
    tok_chat_msg msg = {"user", u.p};
    int rc = tok_chat_render(&msg, 1, NULL, 1, out, err, errlen);
    seed_sbuf_free(&u);
    return rc;
}

int skill_answer(const char *skill, seed_sbuf *out) {
    return app(out, "<skill>") || app(out, skill) || app(out, "</skill>");
}

/* Append src (n bytes) plus a NUL to a fixed buffer at *pos; returns its start. */
static const char *put(char *buf, size_t cap, size_t *pos, const char *src, size_t n) {
    /* full: the last string's NUL serves as an empty one (writing at buf + *pos would
     * run past the buffer into the struct's other fields) */
    if (*pos >= cap) return buf + cap - 1;
    if (*pos + n + 1 > cap) n = cap - *pos - 1;
    char *dst = buf + *pos;
    memcpy(dst, src, n);
    dst[n] = 0;
    *pos += n + 1;
    return dst;
}

/* n_steps < 0: every step number is kept (up to max_steps lines). */
static void parse(const char *text, size_t len, int max_steps, int n_steps, skill_parsed *out) {
    memset(out, 0, sizeof *out);
    if (max_steps > SKILL_LIB_MAX_STEPS) max_steps = SKILL_LIB_MAX_STEPS;
    const char *a = text, *end = text + len;
    const char *o = memmem(text, len, "<skill>", 7);
    if (o) {
        a = o + 7;
        const char *c = memmem(a, (size_t)(end - a), "</skill>", 8);
        if (c) end = c;
    }
    /* Lines "step k: ..." become step skills; the other lines, joined with spaces, are
     * the episode skill. */
    char ep[sizeof out->buf / 2];
    size_t ep_n = 0, pos = 0;
    const char *line = a;
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        /* a NUL counts as space: one at a line's start would hide a "step k:" line */
        while (line < le && (!*line || isspace((unsigned char)*line))) line++;
        const char *te = le;
        while (te > line && (!te[-1] || isspace((unsigned char)te[-1]))) te--;
        char tmp[512];
        size_t tl = SEED_MIN((size_t)(te - line), sizeof tmp - 1);
        memcpy(tmp, line, tl);
        for (size_t i = 0; i < tl; i++)
            if (!tmp[i]) tmp[i] = ' '; /* read the line as the episode text below keeps it */
        tmp[tl] = 0;
        int k = 0;
        const char *sent = NULL;
        if (skill_lib_step_line(tmp, &k, &sent)) { /* the one "step k:" rule */
            /* a line for a step the episode never took, or a step already named, is
             * dropped before it counts against max_steps */
            int usable = n_steps < 0 || (k >= 1 && k <= n_steps && !skill_for_step(out, k));
            if (usable && out->n_steps < max_steps) {
                /* a NUL inside the line ended tmp early: trim what it left at the end */
                size_t sl = strlen(sent);
                while (sl && isspace((unsigned char)sent[sl - 1])) sl--;
                out->step_no[out->n_steps] = k;
                out->step[out->n_steps++] =
                    put(out->buf + sizeof out->buf / 2, sizeof out->buf / 2, &pos, sent, sl);
            }
        } else if (tl > 0 && ep_n + tl + 2 < sizeof ep) {
            if (ep_n) ep[ep_n++] = ' ';
            memcpy(ep + ep_n, line, (size_t)(te - line) < tl ? (size_t)(te - line) : tl);
            ep_n += tl;
        }
        line = nl ? nl + 1 : end;
    }
    for (size_t i = 0; i < ep_n; i++)
        if (ep[i] == 0) ep[i] = ' '; /* a stray NUL would cut the text */
    /* NULs that ended a line are spaces now: trim them as the line's other whitespace */
    while (ep_n && isspace((unsigned char)ep[ep_n - 1])) ep_n--;
    size_t e0 = 0;
    while (e0 < ep_n && isspace((unsigned char)ep[e0])) e0++;
    size_t p0 = 0;
    out->episode = put(out->buf, sizeof out->buf / 2, &p0, ep + e0, ep_n - e0);
}

int skill_format(const skill_parsed *s, char *out, size_t len) {
    size_t n = (size_t)snprintf(out, len, "%s", s->episode ? s->episode : "");
    for (int i = 0; i < s->n_steps && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%sstep %d: %s", n ? "\n" : "", s->step_no[i],
                              s->step[i]);
    return n < len ? 0 : -1;
}

void skill_parse(const char *text, size_t len, int max_steps, skill_parsed *out) {
    parse(text, len, max_steps, -1, out);
}

void skill_parse_episode(const char *text, size_t len, int max_steps, int n_steps,
                         skill_parsed *out) {
    parse(text, len, max_steps, n_steps < 0 ? 0 : n_steps, out);
}

const char *skill_for_step(const skill_parsed *s, int k) {
    for (int i = 0; i < s->n_steps; i++)
        if (s->step_no[i] == k) return s->step[i];
    return NULL;
}
