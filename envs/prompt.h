/* prompt.h — verl-agent-style step prompts with two skill slots, and the parsing of the
 * policy's answer into an env action.
 *
 * Prompt contract (shared by every env; the env's vtable supplies the instructions):
 *   HEAD   = instructions + the task line ("Your task is to: ...")
 *   [episode skill block]                          <- slot 1, right after the task line
 *   MIDDLE = (first step) "Your current observation is: ..." or (later steps)
 *            "Prior to this step, you have already taken N step(s). Below are the most
 *            recent H observations and the corresponding actions you took:
 *            [Observation n: '...', Action n: '...'] ...
 *            You are now at step N+1 and your current observation is: ..."
 *            + "Your admissible actions of the current situation are: [...]."
 *   [step skill block]                             <- slot 2, before the final instruction
 *   TAIL   = the final instruction: reason inside <think> </think>, then give the action
 *            inside <action> </action>.
 * The prompt without skills is exactly HEAD+MIDDLE+TAIL; with skills it is
 * HEAD + env_prompt_skill_block(EPISODE) + MIDDLE + env_prompt_skill_block(STEP) + TAIL,
 * so an analyzer splices the same text (or its tokens) in. The wording follows
 * verl-agent's templates per env family (sokoban, ALFWorld-like default).
 *
 * Slot rule (what makes splicing tokens exact): HEAD, MIDDLE and every skill block END
 * with "\n", and MIDDLE, TAIL and every skill block BEGIN with a printable non-space
 * ASCII byte. A blank line between parts belongs to the end of the part before it
 * (sokoban's HEAD ends "\n\n"; MIDDLE always ends "\n\n"). Under Qwen2's split regex
 * (model/pretok.c) no pre-token then crosses a slot: the alternatives that can take a
 * "\n" ( ?[^\s\p{L}\p{N}]+[\r\n]*, \s*[\r\n]+, \s+(?!\S), \s+) extend past it only
 * over more whitespace, and [^\r\n\p{L}\p{N}]?\p{L}+ never starts with one; an ASCII
 * starter is also an NFC boundary. So tokenizing the parts one by one gives the ids of
 * the whole text, with or without skills (tests/prompt checks it against `tokenizers`).
 *
 * Parse contract (env_parse_response): the action is the text between the FIRST
 * "<action>" and the first "</action>" after it (tags matched case-insensitively, as
 * verl-agent lower-cases the whole reply before searching), lower-cased (Unicode simple
 * case mapping) and trimmed (Python's str.strip whitespace set). A step is valid only
 * with a "<think>" followed later by "</think>" (case-sensitive, as verl-agent checks
 * the original text), a complete action pair, a non-empty action of valid UTF-8 that
 * fits the caller's buffer, and — for styles that ask for it (ALFWorld's projection) —
 * no CJK ideograph (U+4E00..U+9FFF) anywhere in the reply.
 * Where the penalty lives: parsing only reports validity. The caller (the actor) passes
 * an invalid step to the env as NULL (a no-op) — also when env_action_valid() says the
 * env cannot map the action (verl-agent's sokoban/gym_cards projections) — and adds
 * env_parse_step_reward(reward, valid, invalid_penalty) to the episode, invalid_penalty
 * being the actor's config key (default ENV_INVALID_PENALTY_DEFAULT). */
#ifndef SEED_ENV_PROMPT_H
#define SEED_ENV_PROMPT_H

#include <stddef.h>

#include "envs/env.h"

#define ENV_INVALID_PENALTY_DEFAULT 0.1f
enum { ENV_PROMPT_HISTORY_DEFAULT = 2 };

/* One past step as verl-agent's memory keeps it: the observation the agent saw and the
 * action text it took (the parsed action; "" for an invalid step). */
typedef struct env_prompt_step {
    const char *observation;
    const char *action;
} env_prompt_step;

/* A rendered prompt: three NUL-terminated parts in one buffer owned by the struct and
 * reused across renders (it only grows). */
typedef struct env_prompt {
    char *buf;
    size_t cap;
    const char *head, *middle, *tail;
    size_t head_len, middle_len, tail_len;
} env_prompt;

/* How an env's prompts are worded (verl-agent's per-env templates as data); an env
 * names its style in its vtable (env_vtable.prompt_style). */
struct env_prompt_style {
    const char *task_sep;    /* between the instructions and "Your task is to: " */
    const char *task_prefix; /* the task line's opening; NULL: "Your task is to: " */
    const char *head_end;    /* ends the head after the task: "\n", or "\n\n" for a blank line */
    const char *step_header; /* opens the middle part (never with whitespace: prompt.h) */
    const char *obs_sep;     /* after "... your current observation is:" */
    const char *obs_end;     /* right after the observation ("." for webshop); NULL: none */
    const char *adm_prefix;  /* before the admissible list */
    int adm_json; /* 1: ["a", "b"]; 0: ['a'\n 'b'] as verl-agent's ALFWorld; 2: 'a',\n'b', */
    const char *adm_suffix;
    const char *final; /* the tail */
    int reject_cjk;
};
typedef struct env_prompt_style env_prompt_style;
/* The built-in styles: the ALFWorld-like default (household, and any env without one),
 * and verl-agent's sokoban, gym_cards (ezpoints), search and webshop templates. */
extern const env_prompt_style env_prompt_style_default, env_prompt_style_sokoban,
    env_prompt_style_ezpoints, env_prompt_style_searchqa, env_prompt_style_webshop;

void env_prompt_init(env_prompt *p);
void env_prompt_free(env_prompt *p);

/* Render the prompt for the current observation. history holds every step taken so far
 * in this episode, oldest first (n_steps of them; the step count in the prompt); the
 * last history_len of them are shown (<= 0: none, the first-step wording is used for
 * step 0 and whenever history_len <= 0). env_name finds the env whose vtable names the wording
 * (NULL or an env without a style: the default). */
int env_prompt_render(env_prompt *p, const char *env_name, const char *instructions,
                      const env_obs *obs, const env_prompt_step *history, int n_steps,
                      int history_len, char *err, size_t errlen);

enum { ENV_SKILL_EPISODE = 0, ENV_SKILL_STEP = 1 };
/* The exact text inserted for a skill (trailing whitespace of the skill dropped), like
 * snprintf: returns the length it needs, writes at most buflen-1 bytes plus NUL. An
 * empty or NULL skill gives "". */
size_t env_prompt_skill_block(int kind, const char *skill, char *buf, size_t buflen);
/* The whole prompt with the skills in their slots (NULL/"" skill: slot left empty);
 * returns the length it needs, like snprintf. */
size_t env_prompt_join(const env_prompt *p, const char *episode_skill, const char *step_skill,
                       char *buf, size_t buflen);

/* verl-agent's projection for env_name rejects replies with CJK ideographs (ALFWorld-style
 * envs do; sokoban and gym_cards do not). */
int env_parse_rejects_cjk(const char *env_name);

enum {
    ENV_PARSE_OK = 0,
    ENV_PARSE_NO_ACTION = 1, /* no complete <action>...</action> pair */
    ENV_PARSE_NO_THINK = 2,  /* no complete <think>...</think> pair */
    ENV_PARSE_EMPTY = 3,     /* the action is empty after trimming */
    ENV_PARSE_BAD_UTF8 = 4,  /* the action is not valid UTF-8 */
    ENV_PARSE_TOO_LONG = 5,  /* the action does not fit the caller's buffer */
    ENV_PARSE_CJK = 6,       /* the reply contains CJK ideographs (reject_cjk) */
};

typedef struct env_parsed {
    int valid;         /* 1: pass `action` to the env; 0: pass NULL and apply the penalty */
    int reason;        /* ENV_PARSE_*: the first rule the reply broke */
    size_t action_len; /* bytes in action (0 when there is no usable action) */
} env_parsed;

/* Parse a reply of len bytes (need not be NUL-terminated; may hold any bytes). action
 * receives the lower-cased, trimmed action text (always NUL-terminated, "" when none);
 * action_cap must be >= 1. Never fails; the result says why a step is invalid. */
void env_parse_response(const char *text, size_t len, int reject_cjk, char *action,
                        size_t action_cap, env_parsed *out);
const char *env_parse_reason(int reason); /* "ok", "no action tags", ... */

/* The step's reward as the trainer sees it: env reward, minus invalid_penalty when the
 * step was invalid. */
static inline float env_parse_step_reward(float env_reward, int valid, float invalid_penalty) {
    return valid ? env_reward : env_reward - invalid_penalty;
}

#endif
