/* prompt.c — see prompt.h. One renderer serves every env; the differences between
 * verl-agent's per-env templates are data (env_prompt_style, named by each env's vtable),
 * not code. */
#include "envs/prompt.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "common/util.h"

const env_prompt_style env_prompt_style_default = {
    .task_sep = " ",
    .head_end = "\n",
    .step_header = "",
    .obs_sep = " ",
    .adm_prefix = "Your admissible actions of the current situation are: [",
    .adm_json = 0,
    .adm_suffix = "].\n",
    .final = "Now it's your turn to take an action.\n"
             "You should first reason step-by-step about the current situation. This "
             "reasoning process MUST be enclosed within <think> </think> tags.\n"
             "Once you've finished your reasoning, you should choose an admissible action for "
             "the current step and present it within <action> </action> tags.\n",
    .reject_cjk = 1,
};

const env_prompt_style env_prompt_style_sokoban = {
    .task_sep = "\n\n# Your Goal\n",
    .head_end = "\n\n",
    .step_header = "# Current Step\n",
    .obs_sep = "\n",
    .adm_prefix = "Your admissible actions are [",
    .adm_json = 1,
    .adm_suffix = "].\n",
    .final = "Now it's your turn to make a move (choose ONE action only for the current "
             "step).\n"
             "You should first reason step-by-step about the current situation: find the "
             "boxes and the targets, plan a path that pushes a box toward a target, and avoid "
             "traps such as corners and walls. This reasoning process MUST be enclosed within "
             "<think> </think> tags.\n"
             "Once you've finished your reasoning, you should choose an admissible action for "
             "the current step and present it within <action> </action> tags.\n",
    .reject_cjk = 0,
};

const env_prompt_style env_prompt_style_ezpoints = {
    .task_sep = " ",
    .head_end = "\n",
    .step_header = "",
    .obs_sep = " ",
    .adm_prefix = "Your admissible actions of the current situation are: [",
    .adm_json = 0,
    .adm_suffix = "].\n",
    .final = "Now it's your turn to append the next token.\n"
             "You should first reason step-by-step about the current situation. This "
             "reasoning process MUST be enclosed within <think> </think> tags.\n"
             "Once you've finished your reasoning, you should choose an admissible action for "
             "the current step and present it within <action> </action> tags.\n",
    .reject_cjk = 0,
};

/* verl-agent's search template (SEARCH_TEMPLATE): "Your question: ...", then Search-R1's
 * two actions, which seed's reply format carries inside the <action> tags. */
const env_prompt_style env_prompt_style_searchqa = {
    .task_sep = "\n",
    .task_prefix = "Your question: ",
    .head_end = "\n\n",
    .step_header = "",
    .obs_sep = " ",
    .adm_prefix = "Your admissible actions of the current situation are: [",
    .adm_json = 0,
    .adm_suffix = "].\n",
    .final = "Now it's your turn to respond for the current step.\n"
             "You should first conduct reasoning process. This process MUST be enclosed within "
             "<think> </think> tags.\n"
             "After completing your reasoning, choose only one of the following actions (do not "
             "perform both) and present it within <action> </action> tags:\n"
             "(1) If you find you lack some knowledge, you can call a search engine to get more "
             "external information using format: <action><search> your query </search></action>.\n"
             "(2) If you have enough knowledge to answer the question confidently, provide your "
             "final answer within <answer> </answer> tags, without detailed illustrations. For "
             "example, <action><answer>Beijing</answer></action>.\n",
    .reject_cjk = 1,
};

/* verl-agent's WEBSHOP_TEMPLATE (prompts/webshop.py). */
const env_prompt_style env_prompt_style_webshop = {
    .task_sep = "\n",
    .head_end = ".\n",
    .step_header = "",
    .obs_sep = " ",
    .obs_end = ".",
    .adm_prefix = "Your admissible actions of the current situation are:\n[\n",
    .adm_json = 2,
    .adm_suffix = "\n].\n",
    .final = "Now it's your turn to take one action for the current step.\n"
             "You should first reason step-by-step about the current situation, then think "
             "carefully which admissible action best advances the shopping goal. This reasoning "
             "process MUST be enclosed within <think> </think> tags.\n"
             "Once you've finished your reasoning, you should choose an admissible action for "
             "current step and present it within <action> </action> tags.\n",
    .reject_cjk = 1,
};

/* The style is the env's own (its vtable's prompt_style); the name only finds the env. */
static const env_prompt_style *env_style(const char *env_name) {
    const env_vtable *vt = env_lookup(env_name);
    return vt && vt->prompt_style ? vt->prompt_style : &env_prompt_style_default;
}

int env_parse_rejects_cjk(const char *env_name) {
    return env_style(env_name)->reject_cjk;
}

/* ---------------- rendering ---------------- */

void env_prompt_init(env_prompt *p) {
    memset(p, 0, sizeof *p);
}

void env_prompt_free(env_prompt *p) {
    free(p->buf);
    memset(p, 0, sizeof *p);
}

typedef struct env_sb {
    char *p;
    size_t cap, len;
    int oom;
} env_sb;

static void sb_reserve(env_sb *b, size_t extra) {
    if (b->oom || b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
        b->oom = 1;
        return;
    }
    b->p = q;
    b->cap = cap;
}

static void sb_add(env_sb *b, const char *s, size_t n) {
    sb_reserve(b, n);
    if (b->oom) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(env_sb *b, const char *s) {
    sb_add(b, s ? s : "", s ? strlen(s) : 0);
}

static void sb_fmt(env_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(env_sb *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_add(b, tmp, (size_t)SEED_MIN((size_t)n, sizeof tmp - 1));
}

static void sb_nul(env_sb *b) { /* a part ends: keep its NUL and start the next after it */
    sb_reserve(b, 1);
    if (b->oom) return;
    b->p[b->len] = 0;
    b->len++;
}

int env_prompt_render(env_prompt *p, const char *env_name, const char *instructions,
                      const env_obs *obs, const env_prompt_step *history, int n_steps,
                      int history_len, char *err, size_t errlen) {
    if (!p || !obs || n_steps < 0 || (n_steps > 0 && !history))
        return seed_errf(err, errlen,
                         "env_prompt_render: missing prompt, observation or "
                         "history");
    const env_prompt_style *st = env_style(env_name);
    env_sb b = {p->buf, p->cap, 0, 0};
    /* head */
    sb_str(&b, instructions);
    sb_str(&b, st->task_sep);
    sb_str(&b, st->task_prefix ? st->task_prefix : "Your task is to: ");
    sb_str(&b, obs->task);
    sb_str(&b, st->head_end);
    size_t head_len = b.len;
    sb_nul(&b);
    size_t mid_off = b.len;
    /* middle */
    sb_str(&b, st->step_header);
    if (n_steps == 0 || history_len <= 0) {
        sb_str(&b, "Your current observation is:");
    } else {
        int h = SEED_MIN(history_len, n_steps), start = n_steps - h;
        sb_fmt(&b,
               "Prior to this step, you have already taken %d step(s). Below are the most "
               "recent %d observations and the corresponding actions you took: ",
               n_steps, h);
        for (int i = start; i < n_steps; i++) {
            if (i > start) sb_str(&b, "\n");
            sb_fmt(&b, "[Observation %d: '", i + 1);
            sb_str(&b, history[i].observation);
            sb_fmt(&b, "', Action %d: '", i + 1);
            sb_str(&b, history[i].action);
            sb_str(&b, "']");
        }
        sb_fmt(&b, "\nYou are now at step %d and your current observation is:", n_steps + 1);
    }
    sb_str(&b, st->obs_sep);
    sb_str(&b, obs->observation);
    sb_str(&b, st->obs_end);
    sb_str(&b, "\n");
    if (obs->n_admissible > 0 && obs->admissible) {
        sb_str(&b, st->adm_prefix);
        for (int i = 0; i < obs->n_admissible; i++) {
            if (st->adm_json == 2) {
                sb_str(&b, i ? "\n'" : "'");
                sb_str(&b, obs->admissible[i]);
                sb_str(&b, "',");
            } else if (st->adm_json) {
                sb_str(&b, i ? ", \"" : "\"");
                sb_str(&b, obs->admissible[i]);
                sb_str(&b, "\"");
            } else {
                sb_str(&b, i ? "\n '" : "'");
                sb_str(&b, obs->admissible[i]);
                sb_str(&b, "'");
            }
        }
        sb_str(&b, st->adm_suffix);
    }
    sb_str(&b, "\n"); /* the blank line before the final instruction ends the middle */
    size_t mid_len = b.len - mid_off;
    sb_nul(&b);
    size_t tail_off = b.len;
    sb_str(&b, st->final);
    size_t tail_len = b.len - tail_off;
    sb_nul(&b);
    p->buf = b.p;
    p->cap = b.cap;
    if (b.oom) return seed_errf(err, errlen, "env_prompt_render: out of memory");
    p->head = p->buf;
    p->head_len = head_len;
    p->middle = p->buf + mid_off;
    p->middle_len = mid_len;
    p->tail = p->buf + tail_off;
    p->tail_len = tail_len;
    return 0;
}

size_t env_prompt_skill_block(int kind, const char *skill, char *buf, size_t buflen) {
    size_t n = skill ? strlen(skill) : 0;
    while (n && (skill[n - 1] == ' ' || skill[n - 1] == '\n' || skill[n - 1] == '\t' ||
                 skill[n - 1] == '\r'))
        n--;
    if (!n) {
        if (buf && buflen) buf[0] = 0;
        return 0;
    }
    const char *lead = kind == ENV_SKILL_EPISODE
                           ? "A skill learned in hindsight for this task: "
                           : "A skill learned in hindsight for the current step: ";
    int r = snprintf(buf, buf ? buflen : 0, "%s%.*s\n", lead, (int)n, skill);
    return r < 0 ? 0 : (size_t)r;
}

size_t env_prompt_join(const env_prompt *p, const char *episode_skill, const char *step_skill,
                       char *buf, size_t buflen) {
    size_t need = p->head_len + p->middle_len + p->tail_len;
    need += env_prompt_skill_block(ENV_SKILL_EPISODE, episode_skill, NULL, 0);
    need += env_prompt_skill_block(ENV_SKILL_STEP, step_skill, NULL, 0);
    if (!buf || buflen <= need) {
        if (buf && buflen) buf[0] = 0;
        return need;
    }
    size_t o = 0;
    memcpy(buf + o, p->head, p->head_len);
    o += p->head_len;
    o += env_prompt_skill_block(ENV_SKILL_EPISODE, episode_skill, buf + o, buflen - o);
    memcpy(buf + o, p->middle, p->middle_len);
    o += p->middle_len;
    o += env_prompt_skill_block(ENV_SKILL_STEP, step_skill, buf + o, buflen - o);
    memcpy(buf + o, p->tail, p->tail_len);
    o += p->tail_len;
    buf[o] = 0;
    return need;
}

/* ---------------- parsing ---------------- */

/* First occurrence of the ASCII tag at or after from; icase: ASCII case-insensitive. */
static const char *env_find_tag(const char *s, const char *end, const char *tag, int icase) {
    size_t n = strlen(tag);
    for (const char *q = s; q + n <= end; q++) {
        q = memchr(q, '<', (size_t)(end - q));
        if (!q || q + n > end) return NULL;
        size_t i = 1;
        for (; i < n; i++) {
            char c = q[i];
            if (icase && c >= 'A' && c <= 'Z') c = (char)(c + 32);
            if (c != tag[i]) break;
        }
        if (i == n) return q;
    }
    return NULL;
}

/* Python's str.isspace() set. */
static int env_is_space(int32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

static int env_has_cjk(const char *s, size_t len) {
    for (size_t i = 0; i + 2 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        /* U+4E00..U+9FFF encode as E4 B8 80 .. E9 BF BF */
        if (c >= 0xe4 && c <= 0xe9 && ((unsigned char)s[i + 1] & 0xc0) == 0x80 &&
            ((unsigned char)s[i + 2] & 0xc0) == 0x80) {
            int32_t cp = ((c & 0x0f) << 12) | (((unsigned char)s[i + 1] & 0x3f) << 6) |
                         ((unsigned char)s[i + 2] & 0x3f);
            if (cp >= 0x4e00 && cp <= 0x9fff) return 1;
        }
    }
    return 0;
}

void env_parse_response(const char *text, size_t len, int reject_cjk, char *action,
                        size_t action_cap, env_parsed *out) {
    out->valid = 0;
    out->reason = ENV_PARSE_OK;
    out->action_len = 0;
    if (action && action_cap) action[0] = 0;
    if (!text) len = 0;
    const char *end = text + len;
    const char *a0 = len ? env_find_tag(text, end, "<action>", 1) : NULL;
    const char *a1 = a0 ? env_find_tag(a0 + 8, end, "</action>", 1) : NULL;
    const char *t0 = len ? env_find_tag(text, end, "<think>", 0) : NULL;
    const char *t1 = t0 ? env_find_tag(t0 + 7, end, "</think>", 0) : NULL;
    int reason = ENV_PARSE_OK;
    if (!a1) reason = ENV_PARSE_NO_ACTION;
    if (a1 && action && action_cap) {
        /* lower-case and trim the content into action */
        const uint8_t *s = (const uint8_t *)a0 + 8, *e = (const uint8_t *)a1;
        size_t o = 0, last_non_space = 0;
        int started = 0;
        while (s < e) {
            utf8proc_int32_t cp;
            utf8proc_ssize_t k = utf8proc_iterate(s, e - s, &cp);
            /* a NUL would cut the C string the env gets short of action_len: bad text */
            if (k <= 0 || cp == 0) {
                reason = ENV_PARSE_BAD_UTF8;
                break;
            }
            s += k;
            if (!started && env_is_space(cp)) continue;
            started = 1;
            utf8proc_uint8_t enc[4];
            utf8proc_ssize_t m = utf8proc_encode_char(utf8proc_tolower(cp), enc);
            if (o + (size_t)m + 1 > action_cap) {
                reason = ENV_PARSE_TOO_LONG;
                break;
            }
            memcpy(action + o, enc, (size_t)m);
            o += (size_t)m;
            if (!env_is_space(cp)) last_non_space = o;
        }
        if (reason == ENV_PARSE_OK) {
            action[last_non_space] = 0;
            out->action_len = last_non_space;
            if (!last_non_space) reason = ENV_PARSE_EMPTY;
        } else
            action[0] = 0;
    }
    if (reason == ENV_PARSE_OK && !t1) reason = ENV_PARSE_NO_THINK;
    if (reason == ENV_PARSE_OK && reject_cjk && env_has_cjk(text, len)) reason = ENV_PARSE_CJK;
    if (reason != ENV_PARSE_OK && reason != ENV_PARSE_NO_THINK && reason != ENV_PARSE_CJK &&
        action && action_cap) {
        action[0] = 0;
        out->action_len = 0;
    }
    out->reason = reason;
    out->valid = reason == ENV_PARSE_OK;
}

const char *env_parse_reason(int reason) {
    switch (reason) {
    case ENV_PARSE_OK:
        return "ok";
    case ENV_PARSE_NO_ACTION:
        return "no <action>...</action> pair";
    case ENV_PARSE_NO_THINK:
        return "no <think>...</think> pair";
    case ENV_PARSE_EMPTY:
        return "empty action";
    case ENV_PARSE_BAD_UTF8:
        return "action is not valid UTF-8";
    case ENV_PARSE_TOO_LONG:
        return "action too long";
    case ENV_PARSE_CJK:
        return "reply contains CJK ideographs";
    }
    return "unknown";
}
