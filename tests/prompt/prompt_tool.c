/* prompt_tool — the prompt tokens of every path, for test_prompt.py.
 *
 *   prompt_tool TOKENIZER_JSON OUT_JSONL
 *
 * For each built-in env (sokoban, ezpoints, household, webshop, searchqa), several seeds,
 * and every step of the expert's episode (up to 6), with four skill combinations (none,
 * episode only, step only, both), it writes one JSON line:
 *   text      the whole rendered chat string with the skills as text
 *             (tok_chat_render of env_prompt_join)
 *   whole     seed's tokenizer on that whole string
 *   acting    render_prompt with the skills: the actor's skill_prompt acting path
 *             and the warm start's demonstrations (learner/warmstart.c calls it so)
 *   spliced   the analyzer's q prompt: the skill-free prompt the actor sends (ids and
 *             slots) + render_skill blocks joined by render_splice, exactly
 *             as analyzer/analyzer_main.c score_group does
 *   plain     the skill-free ids, slot_ep0 / slot_step0 its slots, slot_ep / slot_step
 *             the slots acting reported
 * The Python side compares them with each other and with `tokenizers`. Before that,
 * render_splice's refusals are checked (exit 1 when one is not refused). */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "roles/render.h"
#include "common/util.h"
#include "model/tokenizer.h"

static void die(const char *what, const char *err) {
    fprintf(stderr, "prompt_tool: %s: %s\n", what, err);
    exit(1);
}

static cJSON *ids_json(const int *v, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

/* Skills that stress the slots: trailing blank lines (trimmed), leading spaces, a
 * contraction and a digit at the start, several lines, non-ASCII text. */
static const char *const ep_skills[] = {
    "Push each box toward its target before walking around it.\n\n",
    "step 1: go up\nstep 2: push the box right\n  keep the corridor free",
    "'s rule: 3 moves, then check the corners \xc3\x9c\xc3\xa4 \xe2\x80\x94 done.",
};
static const char *const step_skills[] = {
    "Move up now.",
    "   leading spaces, then text \t",
    "42 is not the answer; \xf0\x9f\xa7\xb1 avoid walls!\n",
};

static int check_refusals(void) {
    int ids[4] = {1, 2, 3, 4}, e[2] = {7, 8}, s[1] = {9}, out[8];
    char err[SEED_ERRLEN];
    struct {
        int s1, s2, cap;
        const char *needle;
    } bad[] = {{3, 2, 8, "slots 3 and 2"},
               {-1, 2, 8, "slots -1"},
               {1, 5, 8, "4 tokens"},
               {1, 2, 6, "6-token buffer"}};
    int fails = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        int r = render_splice(ids, 4, bad[i].s1, bad[i].s2, e, 2, s, 1, out, bad[i].cap, err,
                              sizeof err);
        if (r >= 0 || !strstr(err, bad[i].needle)) {
            fprintf(stderr, "FAIL splice refusal %zu: rc %d, error \"%s\"\n", i, r, err);
            fails++;
        }
    }
    int want[7] = {1, 7, 8, 2, 3, 9, 4};
    int r = render_splice(ids, 4, 1, 3, e, 2, s, 1, out, 7, err, sizeof err);
    if (r != 7 || memcmp(out, want, sizeof want)) {
        fprintf(stderr, "FAIL splice of [1 2 3 4] at 1, 3: rc %d\n", r);
        fails++;
    }
    /* an empty prompt (ids NULL, as protobuf-c decodes a step without prompt_ids): only the
     * skill blocks, and no memcpy from NULL (UBSan's nonnull check; a fuzzer find) */
    int want_empty[3] = {7, 8, 9};
    r = render_splice(NULL, 0, 0, 0, e, 2, s, 1, out, 3, err, sizeof err);
    if (r != 3 || memcmp(out, want_empty, sizeof want_empty)) {
        fprintf(stderr, "FAIL splice of an empty prompt: rc %d\n", r);
        fails++;
    }
    return fails;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: prompt_tool TOKENIZER_JSON OUT_JSONL\n");
        return 2;
    }
    if (check_refusals()) return 1;
    char err[SEED_ERRLEN];
    tok *tk;
    if (tok_load(&tk, argv[1], err, sizeof err)) die("tokenizer", err);
    render_ctx rr;
    if (render_init(&rr, tk, ENV_PROMPT_HISTORY_DEFAULT, err, sizeof err)) die("init", err);
    tok_ws *ws;
    if (tok_ws_new(tk, &ws, err, sizeof err)) die("workspace", err);
    FILE *f = fopen(argv[2], "w");
    if (!f) die("open", argv[2]);
    static const char *const envs[] = {"sokoban", "ezpoints", "household", "webshop", "searchqa"};
    static const uint64_t seeds[] = {1, 7, 123, 4242};
    tok_ids plain = {0}, acting = {0}, whole = {0}, epb = {0}, stb = {0};
    seed_sbuf chat = {0};
    int *spliced = NULL;
    size_t spliced_cap = 0;
    env_prompt jp;
    env_prompt_init(&jp);
    int records = 0;
    for (size_t ei = 0; ei < sizeof envs / sizeof envs[0]; ei++) {
        env *e;
        if (env_create(&e, envs[ei], NULL, 0, err, sizeof err)) die("env", err);
        for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
            env_obs obs;
            if (env_reset(e, seeds[si], ENV_SPLIT_TRAIN, &obs, err, sizeof err)) die("reset", err);
            env_prompt_step hist[8];
            char *hobs[8], *hact[8];
            int k = 0;
            for (; k < 6; k++) {
                for (int combo = 0; combo < 4; combo++) {
                    const char *es = combo & 1 ? ep_skills[(si + k) % 3] : NULL;
                    const char *ss = combo & 2 ? step_skills[(si + 2 * k) % 3] : NULL;
                    int s1, s2, p1, p2;
                    if (render_prompt(&rr, e, &obs, hist, k, NULL, NULL, &plain, &p1, &p2, err,
                                      sizeof err) ||
                        render_prompt(&rr, e, &obs, hist, k, es, ss, &acting, &s1, &s2, err,
                                      sizeof err))
                        die("render", err);
                    /* the analyzer: blocks once, then the splice */
                    epb.n = stb.n = 0;
                    if (render_skill(&rr, ENV_SKILL_EPISODE, es, &epb, err, sizeof err) ||
                        render_skill(&rr, ENV_SKILL_STEP, ss, &stb, err, sizeof err))
                        die("skill", err);
                    size_t need = plain.n + epb.n + stb.n;
                    if (need > spliced_cap) {
                        spliced = realloc(spliced, need * sizeof(int));
                        spliced_cap = need;
                    }
                    int n = render_splice(plain.v, (int)plain.n, p1, p2, epb.v, (int)epb.n, stb.v,
                                          (int)stb.n, spliced, (int)spliced_cap, err, sizeof err);
                    if (n < 0) die("splice", err);
                    /* the whole text, rendered independently of the segments */
                    if (env_prompt_render(&jp, e->vt->name, e->vt->instructions, &obs, hist, k,
                                          ENV_PROMPT_HISTORY_DEFAULT, err, sizeof err))
                        die("prompt", err);
                    size_t tl = env_prompt_join(&jp, es, ss, NULL, 0);
                    char *text = malloc(tl + 1);
                    env_prompt_join(&jp, es, ss, text, tl + 1);
                    tok_chat_msg msg = {"user", text};
                    chat.n = 0;
                    whole.n = 0;
                    if (tok_chat_render(&msg, 1, NULL, 1, &chat, err, sizeof err) ||
                        tok_encode(tk, ws, chat.p, chat.n, 0, &whole, err, sizeof err))
                        die("whole", err);
                    free(text);
                    cJSON *o = cJSON_CreateObject();
                    cJSON_AddStringToObject(o, "env", envs[ei]);
                    cJSON_AddNumberToObject(o, "seed", (double)seeds[si]);
                    cJSON_AddNumberToObject(o, "step", k);
                    cJSON_AddStringToObject(o, "episode_skill", es ? es : "");
                    cJSON_AddStringToObject(o, "step_skill", ss ? ss : "");
                    cJSON_AddStringToObject(o, "text", chat.p);
                    cJSON_AddItemToObject(o, "whole", ids_json(whole.v, whole.n));
                    cJSON_AddItemToObject(o, "acting", ids_json(acting.v, acting.n));
                    cJSON_AddItemToObject(o, "spliced", ids_json(spliced, (size_t)n));
                    cJSON_AddItemToObject(o, "plain", ids_json(plain.v, plain.n));
                    cJSON_AddNumberToObject(o, "slot_ep", s1);
                    cJSON_AddNumberToObject(o, "slot_step", s2);
                    cJSON_AddNumberToObject(o, "slot_ep0", p1);
                    cJSON_AddNumberToObject(o, "slot_step0", p2);
                    char *js = cJSON_PrintUnformatted(o);
                    fprintf(f, "%s\n", js);
                    free(js);
                    cJSON_Delete(o);
                    records++;
                }
                char act[256];
                if (obs.done || env_expert(e, act, sizeof act, err, sizeof err)) break;
                hobs[k] = strdup(obs.observation);
                hact[k] = strdup(act);
                hist[k].observation = hobs[k];
                hist[k].action = hact[k];
                if (env_step(e, act, &obs, err, sizeof err)) die("step", err);
                if (obs.done) {
                    k++;
                    break;
                }
            }
            for (int i = 0; i < k && i < 6; i++) {
                free(hobs[i]);
                free(hact[i]);
            }
        }
        env_destroy(e);
    }
    fclose(f);
    printf("prompt_tool: %d prompts written\n", records);
    env_prompt_free(&jp);
    free(spliced);
    tok_ids_free(&plain);
    tok_ids_free(&acting);
    tok_ids_free(&whole);
    tok_ids_free(&epb);
    tok_ids_free(&stb);
    seed_sbuf_free(&chat);
    tok_ws_free(ws);
    render_free(&rr);
    tok_free(tk);
    return 0;
}
