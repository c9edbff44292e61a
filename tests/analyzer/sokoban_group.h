/* sokoban_group.h — a realistic episode group for the analyzer's scoring test and
 * benchmark (bench/analyzer), built by the real pieces: G sokoban episodes of one task
 * (6x6, one box), each step's prompt rendered by the actor's renderer (roles/render.h,
 * history 2) from the env's own observations, actions 10% the env's expert and 90%
 * random admissible ones (so episodes run about max_steps, as a learning policy's do),
 * responses shaped like the policy's
 * ("<think>...</think><action>...</action><|im_end|>", at most max_resp tokens), and for
 * q the sokoban oracle's hindsight skill of each episode (roles/skill.h) spliced into
 * both slots by render_splice, exactly as analyzer_main.c does.
 *
 * sokoban_group_pairs() gives the pairs an analyzer scores for the group: per step the
 * s pair (prompt, response) then the q pair (prompt with skills, response). Header-only
 * (static functions) so the test and the benchmark share it. */
#ifndef SEED_TESTS_SOKOBAN_GROUP_H
#define SEED_TESTS_SOKOBAN_GROUP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/render.h"
#include "analyzer/score.h"
#include "roles/skill.h"
#include "common/util.h"

typedef struct sokoban_group {
    int n_pairs;
    analyzer_score_pair *pairs; /* 2 per step: s then q */
    tok_ids *ids;               /* owned token arrays (3 per step) */
    int n_ids;
    float *out; /* rlen floats per pair */
    int n_steps, max_seq;
} sokoban_group;

static void sokoban_group_free(sokoban_group *g) {
    for (int i = 0; i < g->n_ids; i++) tok_ids_free(&g->ids[i]);
    free(g->ids);
    free(g->pairs);
    free(g->out);
    memset(g, 0, sizeof *g);
}

/* G episodes of sokoban task `seed`, at most max_steps steps each. */
static int sokoban_group_build(sokoban_group *g, const tok *tk, int G, int max_steps, int max_resp,
                               uint64_t seed, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    char num[16];
    snprintf(num, sizeof num, "%d", max_steps);
    env_kv kv[] = {{"room_size", "6"}, {"boxes", "1"}, {"max_steps", num}};
    render_ctx rr;
    if (render_init(&rr, tk, 2, err, errlen)) return -1;
    int cap = G * max_steps;
    g->ids = calloc((size_t)cap * 3, sizeof *g->ids);
    g->pairs = calloc((size_t)cap * 2, sizeof *g->pairs);
    int rc = g->ids && g->pairs ? 0 : seed_errf(err, errlen, "out of memory");
    char obs_txt[64][2048], act_txt[64][128];
    env_prompt_step hist[64];
    for (int e = 0; e < G && !rc; e++) {
        env *en = NULL;
        env_obs obs;
        seed_rng rng;
        seed_rng_init(&rng, seed * 1000 + (uint64_t)e);
        rc = env_create(&en, "sokoban", kv, 3, err, errlen);
        if (!rc) rc = env_reset(en, seed, ENV_SPLIT_TRAIN, &obs, err, errlen);
        int first = g->n_ids, n = 0;
        int slot_ep[64], slot_step[64];
        for (; n < max_steps && n < 64 && !rc && !obs.done; n++) {
            tok_ids *prompt = &g->ids[g->n_ids++], *resp = &g->ids[g->n_ids++];
            g->n_ids++; /* the q prompt, spliced once the episode's skill is known */
            rc = render_prompt(&rr, en, &obs, hist, n, NULL, NULL, prompt, &slot_ep[n],
                               &slot_step[n], err, errlen);
            snprintf(obs_txt[n], sizeof obs_txt[n], "%s", obs.observation);
            char act[128];
            if (!rc && (seed_rng_uniform(&rng) < 0.1 || obs.n_admissible == 0))
                rc = env_expert(en, act, sizeof act, err, errlen);
            else if (!rc)
                snprintf(act, sizeof act, "%s",
                         obs.admissible[seed_rng_below(&rng, (uint64_t)obs.n_admissible)]);
            if (rc) break;
            /* a response of the policy's shape: some thinking, then the action */
            char text[1024];
            int k = snprintf(text, sizeof text, "<think>");
            int reps = 1 + (int)seed_rng_below(&rng, 4);
            for (int r = 0; r < reps; r++)
                k += snprintf(text + k, sizeof text - (size_t)k,
                              "The box must reach the target; pushing it %s keeps it off the "
                              "walls. ",
                              act);
            snprintf(text + k, sizeof text - (size_t)k, "</think><action>%s</action>", act);
            rc = tok_encode(tk, rr.ws, text, strlen(text), TOK_ENCODE_SPLIT_SPECIAL, resp, err,
                            errlen);
            if (!rc && (int)resp->n > max_resp) resp->n = (size_t)max_resp;
            int end = render_end_token(tk);
            if (!rc && end >= 0) resp->v[resp->n - 1] = end;
            snprintf(act_txt[n], sizeof act_txt[n], "%s", act);
            hist[n] = (env_prompt_step){obs_txt[n], act_txt[n]};
            if (!rc) rc = env_step(en, act, &obs, err, errlen);
        }
        env_destroy(en);
        /* the oracle's hindsight skill of this episode, in both slots */
        const char *acts[64];
        for (int k = 0; k < n; k++) acts[k] = act_txt[k];
        char skill_txt[4096];
        if (!rc)
            rc = env_hindsight("sokoban", kv, 3, seed, ENV_SPLIT_TRAIN, acts, n, skill_txt,
                               sizeof skill_txt, err, errlen);
        skill_parsed sk;
        tok_ids ep_ids = {0}, st_ids = {0};
        if (!rc) {
            skill_parse(skill_txt, strlen(skill_txt), 5, &sk);
            rc = render_skill(&rr, ENV_SKILL_EPISODE, sk.episode, &ep_ids, err, errlen);
        }
        for (int k = 0; k < n && !rc; k++) {
            tok_ids *prompt = &g->ids[first + 3 * k], *resp = prompt + 1, *q = prompt + 2;
            st_ids.n = 0;
            rc =
                render_skill(&rr, ENV_SKILL_STEP, skill_for_step(&sk, k + 1), &st_ids, err, errlen);
            size_t qcap = prompt->n + ep_ids.n + st_ids.n;
            for (size_t j = 0; j < qcap && !rc; j++)
                if (tok_ids_push(q, 0)) rc = seed_errf(err, errlen, "out of memory");
            if (!rc && render_splice(prompt->v, (int)prompt->n, slot_ep[k], slot_step[k], ep_ids.v,
                                     (int)ep_ids.n, st_ids.v, (int)st_ids.n, q->v, (int)qcap, err,
                                     errlen) < 0)
                rc = -1;
            g->pairs[g->n_pairs++] =
                (analyzer_score_pair){prompt->v, (int)prompt->n, resp->v, (int)resp->n, NULL};
            g->pairs[g->n_pairs++] =
                (analyzer_score_pair){q->v, (int)q->n, resp->v, (int)resp->n, NULL};
            int len = (int)(q->n + resp->n);
            if (len > g->max_seq) g->max_seq = len;
            g->n_steps++;
        }
        tok_ids_free(&ep_ids);
        tok_ids_free(&st_ids);
    }
    render_free(&rr);
    size_t tot = 0;
    for (int i = 0; i < g->n_pairs; i++) tot += (size_t)g->pairs[i].rlen;
    g->out = rc ? NULL : calloc(tot + 1, sizeof(float));
    if (!rc && !g->out) rc = seed_errf(err, errlen, "out of memory");
    for (int i = 0, o = 0; i < g->n_pairs && !rc; o += g->pairs[i].rlen, i++)
        g->pairs[i].out = g->out + o;
    if (rc) sokoban_group_free(g);
    return rc;
}

#endif
