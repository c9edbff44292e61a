/* wire_fuzz.c — libFuzzer target: the envelope decoder (wire_decode, a wire_rx that
 * accepts every body type) and, for each body that gets through, what the learner and
 * the analyzer do with it next through their public functions:
 *  - EpisodeGroup: learner_group_tokens (the hub's queue accounting), the analyzer's skill
 *    splice at each step's slots (render_splice), learner_stats_episode;
 *  - ScoredGroup: learner_samples_build (advantages, GiGPO anchors, the loss arrays),
 *    whose every array read must be covered by wire_validate's consistency checks;
 *  - Heartbeat / Hello: the learner's peer table (learner_stats_peer, expiry);
 *  - Control / StatusRequest / the rest: wire_validate's kind checks.
 * Invariants checked beyond "no crash": a message that decodes packs again and decodes
 * to the same bytes (protobuf-c is deterministic), and wire_validate accepts it again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/render.h"
#include "learner/learner.h"
#include "learner/samples.h"
#include "learner/stats.h"
#include "proto/wire.h"

static void fuzz_fail(const char *what) {
    fprintf(stderr, "wire_fuzz: invariant broken: %s\n", what);
    abort();
}

static void check_group(const Seed__EpisodeGroup *g, learner_stats *st) {
    int64_t tokens = learner_group_tokens(g);
    if (tokens < 0) fuzz_fail("negative token count");
    int ep[3] = {11, 12, 13}, sp[2] = {21, 22};
    for (size_t e = 0; e < g->n_episodes; e++) {
        const Seed__Episode *x = g->episodes[e];
        learner_stats_episode(st, g->env, x->family, x->episode_return, x->won);
        for (size_t k = 0; k < x->n_steps; k++) {
            const Seed__Step *s = x->steps[k];
            size_t cap = s->n_prompt_ids + 5;
            int *out = malloc(cap * sizeof *out);
            if (!out) return;
            char err[256];
            int n = render_splice(s->prompt_ids, (int)s->n_prompt_ids, (int)s->skill_slot_episode,
                                  (int)s->skill_slot_step, ep, 3, sp, 2, out, (int)cap, err,
                                  sizeof err);
            /* wire_validate promises the slots are ordered and inside the prompt */
            if (n != (int)cap) fuzz_fail("a validated step's skill slots do not splice");
            free(out);
        }
    }
}

static void check_scored(Seed__ScoredGroup *sg, learner_stats *st) {
    if (sg->group) check_group(sg->group, st);
    learner_samples b;
    learner_samples_init(&b);
    learner_samples_cfg cfg = {
        .adv_norm = JOB_ADV_STD, .use_q = 1, .gigpo_coef = 0.5f, .gigpo_gamma = 0.95f};
    learner_samples_stats ss;
    memset(&ss, 0, sizeof ss);
    char err[256];
    Seed__ScoredGroup *const groups[1] = {sg};
    if (sg->group) {
        learner_samples_build(&b, &cfg, groups, 1, &ss, err, sizeof err);
        cfg.adv_norm = JOB_ADV_MEAN;
        cfg.use_q = 0;
        cfg.gigpo_coef = 0;
        learner_samples_build(&b, &cfg, groups, 1, &ss, err, sizeof err);
    }
    learner_samples_free(&b);
}

static void check_peer(learner_stats *st, const char *id, double now) {
    learner_peer *p = learner_stats_peer(st, id, now);
    if (p) p->last_seen = now;
    learner_stats_expire(st, now, 1.0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static wire_rx rx;
    static learner_stats st;
    static int ready;
    if (!ready) {
        seed_log_set_level(-1); /* the drop log lines would drown the fuzzer's output */
        learner_stats_init(&st, 16);
        ready = 1;
    }
    wire_rx_init(&rx, "fuzz", WIRE_ACCEPT_ANY, 0, 0);
    Seed__Envelope *env = NULL;
    int rc = wire_decode(&rx, data, size, "fuzz", &env);
    if (rc != 1) {
        if (rc != 0 || env) fuzz_fail("a dropped message returned an envelope");
        if (rx.c.received != 1 ||
            rx.c.malformed + rx.c.wrong_version + rx.c.oversized + rx.c.unexpected_type != 1)
            fuzz_fail("a dropped message is not counted in exactly one reason");
        return 0;
    }
    char why[256];
    if (wire_validate(env, WIRE_ACCEPT_ANY, why, sizeof why) != WIRE_BAD_NONE)
        fuzz_fail("a decoded envelope fails wire_validate");
    static double now = 1000.0;
    now += 0.5;
    switch (env->body_case) {
    case SEED__ENVELOPE__BODY_EPISODE_GROUP:
        check_group(env->episode_group, &st);
        break;
    case SEED__ENVELOPE__BODY_SCORED_GROUP:
        check_scored(env->scored_group, &st);
        break;
    case SEED__ENVELOPE__BODY_HEARTBEAT:
        check_peer(&st, env->heartbeat->id, now);
        break;
    case SEED__ENVELOPE__BODY_HELLO:
        check_peer(&st, env->hello->id, now);
        break;
    default:
        (void)wire_body_name(env->body_case);
        break;
    }
    /* re-pack, decode again: the same bytes */
    wire_buf b1 = {0}, b2 = {0};
    char err[256];
    if (wire_pack(env, NULL, &b1, err, sizeof err) != 0)
        fuzz_fail("a decoded envelope fails to pack");
    Seed__Envelope *again = NULL;
    if (wire_decode(&rx, b1.data, b1.len, "fuzz", &again) != 1)
        fuzz_fail("a packed envelope does not decode");
    if (wire_pack(again, NULL, &b2, err, sizeof err) != 0 || b1.len != b2.len ||
        memcmp(b1.data, b2.data, b1.len) != 0)
        fuzz_fail("pack(decode(pack(x))) differs from pack(x)");
    wire_free(again);
    wire_buf_free(&b1);
    wire_buf_free(&b2);
    wire_free(env);
    return 0;
}
