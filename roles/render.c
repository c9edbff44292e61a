/* render.c — see render.h. */
#include "roles/render.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/job.h"
#include "common/util.h"

/* Two bytes that never occur in env text mark the slots inside the chat text, so the
 * template is rendered once and split, not re-implemented here. */
#define SLOT_EP '\x1e'
#define SLOT_STEP '\x1f'

int render_init(render_ctx *r, const tok *tk, int history, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    r->tk = tk;
    r->history = history;
    env_prompt_init(&r->p);
    return tok_ws_new(tk, &r->ws, err, errlen);
}

void render_free(render_ctx *r) {
    env_prompt_free(&r->p);
    seed_sbuf_free(&r->chat);
    seed_sbuf_free(&r->text);
    tok_ids_free(&r->seg);
    tok_ids_free(&r->ep_ids);
    tok_ids_free(&r->step_ids);
    tok_ws_free(r->ws);
    memset(r, 0, sizeof *r);
}

static int append_block(seed_sbuf *b, int kind, const char *skill) {
    if (!skill || !skill[0]) return 0;
    char small[1024];
    size_t need = env_prompt_skill_block(kind, skill, small, sizeof small);
    if (need < sizeof small) return seed_sbuf_append(b, small, need);
    char *big = malloc(need + 1);
    if (!big) return -1;
    env_prompt_skill_block(kind, skill, big, need + 1);
    int rc = seed_sbuf_append(b, big, need);
    free(big);
    return rc;
}

/* prompt.h's slot rule at a separator: the text before it ends with "\n" and the text
 * after it starts with a printable non-space ASCII byte. */
static int slot_on_boundary(const char *chat, const char *sep, const char *end) {
    unsigned char next = sep + 1 < end ? (unsigned char)sep[1] : 0;
    return sep > chat && sep[-1] == '\n' && next > 0x20 && next < 0x7f;
}

int render_prompt(render_ctx *r, const env *e, const env_obs *obs, const env_prompt_step *hist,
                  int n_steps, const char *episode_skill, const char *step_skill, tok_ids *out,
                  int *slot_ep, int *slot_step, char *err, size_t errlen) {
    if (env_prompt_render(&r->p, e->vt->name, e->vt->instructions, obs, hist, n_steps, r->history,
                          err, errlen))
        return -1;
    seed_sbuf *t = &r->text;
    t->n = 0;
    char sep1 = SLOT_EP, sep2 = SLOT_STEP;
    if (seed_sbuf_append(t, r->p.head, r->p.head_len) || seed_sbuf_append(t, &sep1, 1) ||
        seed_sbuf_append(t, r->p.middle, r->p.middle_len) || seed_sbuf_append(t, &sep2, 1) ||
        seed_sbuf_append(t, r->p.tail, r->p.tail_len))
        return seed_errf(err, errlen, "out of memory rendering a prompt");
    tok_chat_msg msg = {"user", t->p};
    r->chat.n = 0;
    if (tok_chat_render(&msg, 1, r->system, 1, &r->chat, err, errlen)) return -1;
    char *a = r->chat.p, *end = a + r->chat.n, *b = memchr(a, SLOT_EP, r->chat.n);
    char *c = b ? memchr(b + 1, SLOT_STEP, (size_t)(end - b - 1)) : NULL;
    if (!b || !c)
        return seed_errf(err, errlen, "env %s: the prompt text holds a reserved control byte",
                         e->vt->name);
    if (!slot_on_boundary(a, b, end) || !slot_on_boundary(a, c, end))
        return seed_errf(err, errlen,
                         "env %s: a skill slot of the prompt is not on a token boundary (the "
                         "part before it must end with a newline, the part after it start with "
                         "a printable non-space character; envs/prompt.h)",
                         e->vt->name);
    tok_ids *seg = &r->seg;
    seg->n = 0;
    if (tok_encode(r->tk, r->ws, a, (size_t)(b - a), 0, seg, err, errlen)) return -1;
    int s1 = (int)seg->n;
    if (tok_encode(r->tk, r->ws, b + 1, (size_t)(c - b - 1), 0, seg, err, errlen)) return -1;
    int s2 = (int)seg->n;
    if (tok_encode(r->tk, r->ws, c + 1, (size_t)(end - c - 1), 0, seg, err, errlen)) return -1;
    r->ep_ids.n = 0;
    r->step_ids.n = 0;
    if (render_skill(r, ENV_SKILL_EPISODE, episode_skill, &r->ep_ids, err, errlen) ||
        render_skill(r, ENV_SKILL_STEP, step_skill, &r->step_ids, err, errlen))
        return -1;
    size_t total = seg->n + r->ep_ids.n + r->step_ids.n;
    if (total > (size_t)INT32_MAX)
        return seed_errf(err, errlen, "env %s: prompt of %zu tokens", e->vt->name, total);
    out->n = 0;
    if (out->cap < total) {
        int *v = realloc(out->v, sizeof(int) * total);
        if (!v) return seed_errf(err, errlen, "out of memory");
        out->v = v;
        out->cap = total;
    }
    int n = render_splice(seg->v, (int)seg->n, s1, s2, r->ep_ids.v, (int)r->ep_ids.n, r->step_ids.v,
                          (int)r->step_ids.n, out->v, (int)out->cap, err, errlen);
    if (n < 0) return -1;
    out->n = (size_t)n;
    *slot_ep = s1;
    *slot_step = s2 + (int)r->ep_ids.n;
    return 0;
}

int render_skill(render_ctx *r, int kind, const char *skill, tok_ids *out, char *err,
                 size_t errlen) {
    seed_sbuf *t = &r->text;
    t->n = 0;
    if (append_block(t, kind, skill)) return seed_errf(err, errlen, "out of memory");
    if (t->n == 0) return 0;
    return tok_encode(r->tk, r->ws, t->p, t->n, TOK_ENCODE_SPLIT_SPECIAL, out, err, errlen);
}

int render_splice(const int *ids, int n, int slot_ep, int slot_step, const int *ep, int n_ep,
                  const int *step, int n_step, int *out, int cap, char *err, size_t errlen) {
    if (n < 0 || n_ep < 0 || n_step < 0 || slot_ep < 0 || slot_ep > slot_step || slot_step > n)
        return seed_errf(err, errlen,
                         "prompt splice: skill slots %d and %d do not fit a prompt of %d tokens "
                         "(need 0 <= slot_ep <= slot_step <= n)",
                         slot_ep, slot_step, n);
    if ((int64_t)n + n_ep + n_step > (int64_t)cap)
        return seed_errf(err, errlen,
                         "prompt splice: %d + %d + %d tokens do not fit the %d-token buffer", n,
                         n_ep, n_step, cap);
    int o = 0;
    /* memcpy wants valid pointers even for zero bytes, and an empty prompt's ids may be NULL */
    if (slot_ep) memcpy(out + o, ids, sizeof(int) * (size_t)slot_ep);
    o += slot_ep;
    if (n_ep) memcpy(out + o, ep, sizeof(int) * (size_t)n_ep);
    o += n_ep;
    if (slot_step > slot_ep)
        memcpy(out + o, ids + slot_ep, sizeof(int) * (size_t)(slot_step - slot_ep));
    o += slot_step - slot_ep;
    if (n_step) memcpy(out + o, step, sizeof(int) * (size_t)n_step);
    o += n_step;
    if (n > slot_step) memcpy(out + o, ids + slot_step, sizeof(int) * (size_t)(n - slot_step));
    return o + n - slot_step;
}

int render_expert_reply(render_ctx *r, const char *env_name, const char *reason, const char *action,
                        tok_ids *out, char *err, size_t errlen) {
    seed_sbuf *t = &r->text;
    t->n = 0;
    char buf[2048];
    int n = reason && reason[0]
                ? snprintf(buf, sizeof buf, "<think>%s</think><action>%s</action>", reason, action)
                : snprintf(buf, sizeof buf,
                           "<think>The best next step toward the goal is to %s.</think>"
                           "<action>%s</action>",
                           action, action);
    if (n < 0 || (size_t)n >= sizeof buf)
        return seed_errf(err, errlen, "env %s: expert reply too long (%zu + %zu bytes)", env_name,
                         strlen(action), reason ? strlen(reason) : (size_t)0);
    out->n = 0;
    if (tok_encode(r->tk, r->ws, buf, (size_t)n, TOK_ENCODE_SPLIT_SPECIAL, out, err, errlen))
        return -1;
    int end = render_end_token(r->tk);
    if (end >= 0 && tok_ids_push(out, end)) return seed_errf(err, errlen, "out of memory");
    return 0;
}

int render_end_token(const tok *tk) {
    int id = tok_token_to_id(tk, "<|im_end|>");
    return id >= 0 ? id : tok_token_to_id(tk, "<|endoftext|>");
}
