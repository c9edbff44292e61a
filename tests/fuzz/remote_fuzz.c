/* remote_fuzz.c — libFuzzer target: the remote-env protocol (envs/remote.c), what an
 * actor does with a reply from an env server: wire_decode on a receiver configured as the
 * remote env's (EnvReply only, 16 MiB), env_remote_reply_obs (the observation handed to
 * the actor), then the actor's prompt for it (render_prompt with the tiny model's
 * tokenizer, the reply's first admissible action as the previous step's action).
 * Invariant: the prompt's ids are exactly the tokenization of the whole rendered chat
 * text (roles/render.h), whatever text the server sent; the splice of skills at the
 * returned slots gives the ids of the text with the skills. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/remote.h"
#include "roles/render.h"
#include "common/util.h"
#include "model/tokenizer.h"

static void fuzz_fail(const char *what, const char *err) {
    fprintf(stderr, "remote_fuzz: invariant broken: %s%s%s\n", what, err ? ": " : "",
            err ? err : "");
    abort();
}

typedef struct fuzz_state {
    tok *tk;
    tok_ws *ws;
    render_ctx r;
    tok_ids ids, whole;
    seed_sbuf chat;
    char *text;
    size_t text_cap;
} fuzz_state;

static fuzz_state *state(void) {
    static fuzz_state s;
    static int ready;
    if (ready) return &s;
    char err[SEED_ERRLEN];
    seed_log_set_level(-1);
    if (tok_load(&s.tk, SEED_FUZZ_TINY_MODEL "/tokenizer.json", err, sizeof err) ||
        tok_ws_new(s.tk, &s.ws, err, sizeof err) ||
        render_init(&s.r, s.tk, ENV_PROMPT_HISTORY_DEFAULT, err, sizeof err))
        fuzz_fail("set-up", err);
    ready = 1;
    return &s;
}

/* The ids of the whole prompt text with these skills, tokenized in one piece. */
static void whole_ids(fuzz_state *s, const char *ep, const char *st) {
    char err[SEED_ERRLEN];
    size_t need = env_prompt_join(&s->r.p, ep, st, NULL, 0) + 1;
    if (need > s->text_cap) {
        free(s->text);
        s->text = malloc(need);
        s->text_cap = s->text ? need : 0;
        if (!s->text) fuzz_fail("out of memory", NULL);
    }
    env_prompt_join(&s->r.p, ep, st, s->text, need);
    tok_chat_msg msg = {"user", s->text};
    s->chat.n = 0;
    if (tok_chat_render(&msg, 1, s->r.system, 1, &s->chat, err, sizeof err))
        fuzz_fail("the rendered prompt does not render as chat", err);
    s->whole.n = 0;
    if (tok_encode(s->tk, s->ws, s->chat.p, s->chat.n, 0, &s->whole, err, sizeof err))
        fuzz_fail("the whole prompt does not encode", err);
}

static int same_ids(const tok_ids *a, const tok_ids *b) {
    return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * sizeof *a->v) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_state *s = state();
    static wire_rx rx;
    wire_rx_init(&rx, "remote-env", WIRE_ACCEPT(SEED__ENVELOPE__BODY_ENV_REPLY), 16 << 20, 0);
    Seed__Envelope *msg = NULL;
    if (wire_decode(&rx, data, size, "fuzz", &msg) != 1) return 0;
    Seed__EnvReply *rep = msg->env_reply;
    env_obs obs;
    env_remote_reply_obs(rep, rep->task, "remote", &obs);
    /* the env header as remote.c's instances carry it: its vtable names the prompt */
    env e = {&env_remote_vtable, 50, 1, 0};
    env_prompt_step hist[1] = {{rep->observation, rep->n_admissible ? rep->admissible[0] : ""}};
    char err[SEED_ERRLEN];
    int slot_ep = -1, slot_step = -1;
    if (render_prompt(&s->r, &e, &obs, hist, 1, NULL, NULL, &s->ids, &slot_ep, &slot_step, err,
                      sizeof err) == 0) {
        if (slot_ep < 0 || slot_ep > slot_step || slot_step > (int)s->ids.n)
            fuzz_fail("the prompt's skill slots are outside it", NULL);
        whole_ids(s, NULL, NULL);
        if (!same_ids(&s->ids, &s->whole))
            fuzz_fail("the segmented prompt ids differ from the whole text's", NULL);
        const char *skill = "Push the box along the wall first.";
        if (render_prompt(&s->r, &e, &obs, hist, 1, skill, skill, &s->ids, &slot_ep, &slot_step,
                          err, sizeof err) != 0)
            fuzz_fail("the prompt with skills fails where the one without renders", err);
        whole_ids(s, skill, skill);
        if (!same_ids(&s->ids, &s->whole))
            fuzz_fail("the spliced prompt ids differ from the whole text's", NULL);
    }
    wire_free(msg);
    return 0;
}
