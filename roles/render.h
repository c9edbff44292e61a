/* render.h — turning an env's state into the exact prompt tokens the policy sees, and
 * the policy's reply into an env action. Shared by the actor (acting), the analyzer
 * (splicing skills into the same tokens) and the learner (stage 0/1 demonstrations), so
 * all three see identical prompt ids.
 *
 * A prompt is the env's verl-agent-style text (envs/prompt.h) wrapped in the
 * model's ChatML template (system turn, user turn, generation prompt) and tokenized in
 * three segments split at the two skill slots: ids = A + B + C with slot_ep = |A| (after
 * the task line) and slot_step = |A| + |B| (before the final instruction). A prompt
 * with skills is ALWAYS built by one rule, on every path: A + E + B + S + C, where E and
 * S are the tokens of the skill blocks (render_skill) and the splice is
 * render_splice. Because every slot sits on a pre-token boundary (prompt.h's slot
 * rule, checked here on every render), these ids also equal the tokenization of the
 * whole rendered text (tok_chat_render of env_prompt_join), as tests/prompt verifies
 * against `tokenizers`. One deliberate difference: skill text is encoded with
 * TOK_ENCODE_SPLIT_SPECIAL, so a skill that writes "<|im_end|>" cannot end the turn. */
#ifndef SEED_ROLES_RENDER_H
#define SEED_ROLES_RENDER_H

#include <stddef.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "model/tokenizer.h"

typedef struct render_ctx {
    const tok *tk;
    tok_ws *ws;
    env_prompt p;
    seed_sbuf chat, text;
    tok_ids seg, ep_ids, step_ids; /* scratch: the segments and the two skill blocks */
    int history;
    const char *system; /* NULL: the Qwen2.5 default system prompt */
} render_ctx;

int render_init(render_ctx *r, const tok *tk, int history, char *err, size_t errlen);
void render_free(render_ctx *r);

/* Tokens of the prompt for obs after n_steps past steps, with the skills (NULL or "":
 * none) spliced in at their slots as A + E + B + S + C. *slot_ep and *slot_step receive
 * the slots: where E starts and where S starts (so with no skills they are the splice
 * points an analyzer uses). out is overwritten. Fails, naming the env, when the env's
 * text breaks the slot rule. */
int render_prompt(render_ctx *r, const env *e, const env_obs *obs, const env_prompt_step *hist,
                  int n_steps, const char *episode_skill, const char *step_skill, tok_ids *out,
                  int *slot_ep, int *slot_step, char *err, size_t errlen);

/* Tokens of a skill block (env_prompt_skill_block text) for splicing at a slot;
 * appended to out. An empty skill appends nothing. */
int render_skill(render_ctx *r, int kind, const char *skill, tok_ids *out, char *err,
                 size_t errlen);

/* The splice: out[0..) = ids[0:slot_ep] + ep[0:n_ep] + ids[slot_ep:slot_step] +
 * step[0:n_step] + ids[slot_step:n]. out holds cap ints. Returns the length, or -1 with
 * err when the slots are not 0 <= slot_ep <= slot_step <= n or cap is too small. */
int render_splice(const int *ids, int n, int slot_ep, int slot_step, const int *ep, int n_ep,
                  const int *step, int n_step, int *out, int cap, char *err, size_t errlen);

/* The reply text of an expert action, as stage 0 teaches it, with the end-of-turn token
 * appended to the ids: "<think>REASON</think><action>ACTION</action>" + <|im_end|>.
 * REASON is the env's expert reasoning (env_expert_reason at the state); NULL or empty:
 * "The best next step toward the goal is to ACTION." */
int render_expert_reply(render_ctx *r, const char *env_name, const char *reason, const char *action,
                        tok_ids *out, char *err, size_t errlen);

/* The token that ends a reply (<|im_end|>), or the tokenizer's eos; -1 when neither. */
int render_end_token(const tok *tk);

#endif
