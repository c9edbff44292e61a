/* wire_fixtures.h — seeded example envelopes of every body type, for the wire tests and
 * benchmarks (header-only: each test program includes it once).
 *
 * Contract: wfx_group_make builds an EpisodeGroup of E episodes x T steps with P prompt
 * ids and R response ids per step from a seed; wfx_scored_make wraps one in a ScoredGroup
 * with a skill and s/q scores per token; wfx_envelope fills an Envelope of any body case
 * from a wfx_all (which owns every buffer). Everything is freed by the matching _free.
 * Equality of two envelopes is checked by packing both (protobuf-c packs deterministically,
 * fields in number order). */
#ifndef SEED_WIRE_FIXTURES_H
#define SEED_WIRE_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/wire.h"

typedef struct wfx_group {
    Seed__EpisodeGroup g;
    Seed__Episode *eps;
    Seed__Episode **epp;
    Seed__Step *steps;
    Seed__Step **stepp;
    int32_t *ids;
    float *lps;
    char *text; /* action and observation strings, 64 bytes each */
} wfx_group;

static inline void *wfx_alloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "wire fixtures: out of memory\n");
        exit(2);
    }
    return p;
}

static inline void wfx_group_make(wfx_group *f, int E, int T, int P, int R, uint64_t seed) {
    seed_rng rng;
    seed_rng_init(&rng, seed);
    memset(f, 0, sizeof *f);
    seed__episode_group__init(&f->g);
    f->eps = wfx_alloc(sizeof *f->eps * (size_t)E);
    f->epp = wfx_alloc(sizeof *f->epp * (size_t)E);
    f->steps = wfx_alloc(sizeof *f->steps * (size_t)(E * T));
    f->stepp = wfx_alloc(sizeof *f->stepp * (size_t)(E * T));
    f->ids = wfx_alloc(sizeof *f->ids * (size_t)(E * T * (P + R)));
    f->lps = wfx_alloc(sizeof *f->lps * (size_t)(E * T * R));
    f->text = wfx_alloc((size_t)(E * T * 2 * 64));
    f->g.env = "sokoban";
    f->g.task_seed = seed;
    f->g.split = "train";
    f->g.policy_version = 7;
    f->g.actor_id = "actor-test-1";
    f->g.group_id = seed * 3 + 1;
    f->g.created = 1.7e9 + (double)(seed % 1000);
    f->g.n_episodes = (size_t)E;
    f->g.episodes = f->epp;
    for (int e = 0; e < E; e++) {
        Seed__Episode *ep = &f->eps[e];
        seed__episode__init(ep);
        f->epp[e] = ep;
        ep->n_steps = (size_t)T;
        ep->steps = &f->stepp[e * T];
        ep->episode_return = (float)seed_rng_normal(&rng);
        ep->won = (int)(seed_rng_below(&rng, 2));
        ep->sample_seed = seed_rng_next(&rng);
        ep->family = "pick_and_place";
        ep->error = e == 1 ? "remote env tcp://127.0.0.1:5599 did not answer within 10000 ms" : "";
        for (int t = 0; t < T; t++) {
            int k = e * T + t;
            Seed__Step *st = &f->steps[k];
            seed__step__init(st);
            f->stepp[k] = st;
            st->n_prompt_ids = (size_t)P;
            st->prompt_ids = &f->ids[(size_t)k * (size_t)(P + R)];
            st->n_response_ids = (size_t)R;
            st->response_ids = st->prompt_ids + P;
            for (int i = 0; i < P + R; i++)
                st->prompt_ids[i] = (int32_t)seed_rng_below(&rng, 151665);
            st->skill_slot_episode = (uint32_t)(P / 4);
            st->skill_slot_step = (uint32_t)(P - P / 8);
            st->n_sample_logprobs = (size_t)R;
            st->sample_logprobs = &f->lps[(size_t)k * (size_t)R];
            for (int i = 0; i < R; i++)
                st->sample_logprobs[i] = -(float)seed_rng_uniform(&rng) * 6.0f;
            char *a = &f->text[(size_t)k * 128], *o = a + 64;
            snprintf(a, 64, "go to cabinet %d", (int)seed_rng_below(&rng, 9));
            snprintf(o, 64, "You arrive at loc %d. √ ünïcode", t);
            st->action = a;
            st->observation = o;
            st->reward = t == T - 1 ? 10.0f : -0.1f;
            st->valid = (t % 3) != 2;
        }
    }
}

static inline void wfx_group_free(wfx_group *f) {
    free(f->eps);
    free(f->epp);
    free(f->steps);
    free(f->stepp);
    free(f->ids);
    free(f->lps);
    free(f->text);
    memset(f, 0, sizeof *f);
}

typedef struct wfx_scored {
    wfx_group grp;
    Seed__ScoredGroup sg;
    Seed__EpisodeAnalysis *an;
    Seed__EpisodeAnalysis **anp;
    Seed__StepScores *sc;
    Seed__StepScores **scp;
    float *sq;
    int32_t *skill_ids;
    char **step_skills;
} wfx_scored;

__attribute__((unused)) static char *wfx_step_skill_text[2] = {
    "step 1: open the fridge before taking the egg", "step 3: push the box left first"};

static inline void wfx_scored_make(wfx_scored *f, int E, int T, int P, int R, uint64_t seed) {
    memset(f, 0, sizeof *f);
    wfx_group_make(&f->grp, E, T, P, R, seed);
    seed_rng rng;
    seed_rng_init(&rng, seed ^ 0x5eedu);
    seed__scored_group__init(&f->sg);
    f->sg.group = &f->grp.g;
    f->sg.scored_version = 7;
    f->sg.analyzer_id = "analyzer-test-1";
    f->an = wfx_alloc(sizeof *f->an * (size_t)E);
    f->anp = wfx_alloc(sizeof *f->anp * (size_t)E);
    f->sc = wfx_alloc(sizeof *f->sc * (size_t)(E * T));
    f->scp = wfx_alloc(sizeof *f->scp * (size_t)(E * T));
    f->sq = wfx_alloc(sizeof *f->sq * (size_t)(E * T * 2 * R));
    f->skill_ids = wfx_alloc(sizeof *f->skill_ids * 12);
    for (int i = 0; i < 12; i++) f->skill_ids[i] = (int32_t)seed_rng_below(&rng, 151665);
    f->sg.n_analyses = (size_t)E;
    f->sg.analyses = f->anp;
    for (int e = 0; e < E; e++) {
        Seed__EpisodeAnalysis *a = &f->an[e];
        seed__episode_analysis__init(a);
        f->anp[e] = a;
        a->skill = e % 2 ? "Mistake: walked past the box. Rule: plan the push first."
                         : "Workflow: take the knife, slice, then cook.";
        a->source = e % 2 ? SEED__SKILL_SOURCE__SKILL_SELF : SEED__SKILL_SOURCE__SKILL_ORACLE;
        a->n_step_skills = 2;
        a->step_skills = wfx_step_skill_text;
        a->n_skill_ids = 12;
        a->skill_ids = f->skill_ids;
        a->n_steps = (size_t)T;
        a->steps = &f->scp[e * T];
        for (int t = 0; t < T; t++) {
            int k = e * T + t;
            Seed__StepScores *s = &f->sc[k];
            seed__step_scores__init(s);
            f->scp[k] = s;
            s->n_s = (size_t)R;
            s->s = &f->sq[(size_t)k * 2 * (size_t)R];
            s->n_q = e == 0 ? 0 : (size_t)R; /* episode 0: no skill, no q */
            s->q = s->s + R;
            for (int i = 0; i < 2 * R; i++) s->s[i] = -(float)seed_rng_uniform(&rng) * 5.0f;
        }
    }
}

static inline void wfx_scored_free(wfx_scored *f) {
    wfx_group_free(&f->grp);
    free(f->an);
    free(f->anp);
    free(f->sc);
    free(f->scp);
    free(f->sq);
    free(f->skill_ids);
    memset(f, 0, sizeof *f);
}

/* One example of every body type. */
typedef struct wfx_all {
    Seed__Hello hello;
    Seed__Heartbeat hb;
    wfx_group grp;
    wfx_scored scored;
    Seed__WeightAnnounce ann;
    Seed__TensorInfo ti[2];
    Seed__TensorInfo *tip[2];
    int64_t shape0[2], shape1[1];
    uint32_t crcs[3];
    Seed__WeightBucket bucket;
    uint8_t blob[3000];
    Seed__WeightFetch fetch;
    uint32_t fetch_buckets[2];
    Seed__StatusRequest sreq;
    Seed__StatusReply srep;
    Seed__Control ctl;
    Seed__EnvRequest ereq;
    Seed__EnvReply erep;
    char *adm[3];
} wfx_all;

__attribute__((unused)) static char *wfx_admissible_text[3] = {
    "go to fridge 1", "take egg 2 from countertop 1", "look"};

static inline void wfx_all_make(wfx_all *a, uint64_t seed) {
    memset(a, 0, sizeof *a);
    seed__hello__init(&a->hello);
    a->hello.role = SEED__ROLE__ROLE_ACTOR;
    a->hello.id = "actor-host-1234";
    a->hello.host = "host";
    a->hello.pid = 1234;
    a->hello.weights_version = 3;
    seed__heartbeat__init(&a->hb);
    a->hb.role = SEED__ROLE__ROLE_ANALYZER;
    a->hb.id = "analyzer-host-77";
    a->hb.host = "host";
    a->hb.time = 1.75e9 + 0.125;
    a->hb.episodes = 120;
    a->hb.env_steps = 4567;
    a->hb.tokens_generated = 1u << 30;
    a->hb.tokens_scored = 5;
    a->hb.groups_sent = 15;
    a->hb.malformed = 2;
    a->hb.episodes_in_flight = 8;
    a->hb.env_errors = 1;
    a->hb.pid = 77;
    wfx_group_make(&a->grp, 3, 4, 40, 12, seed);
    wfx_scored_make(&a->scored, 2, 3, 30, 9, seed + 1);
    seed__weight_announce__init(&a->ann);
    a->ann.version = 9;
    a->ann.total_bytes = 3000;
    a->ann.bucket_bytes = 1024;
    a->ann.n_buckets = 3;
    for (int i = 0; i < 2; i++) {
        seed__tensor_info__init(&a->ti[i]);
        a->tip[i] = &a->ti[i];
    }
    a->shape0[0] = 10;
    a->shape0[1] = 50;
    a->shape1[0] = 250;
    a->ti[0].name = "model.embed_tokens.weight";
    a->ti[0].dtype = SEED__DTYPE__DTYPE_F32;
    a->ti[0].n_shape = 2;
    a->ti[0].shape = a->shape0;
    a->ti[0].offset = 0;
    a->ti[0].nbytes = 2000;
    a->ti[1].name = "model.norm.weight";
    a->ti[1].dtype = SEED__DTYPE__DTYPE_F32;
    a->ti[1].n_shape = 1;
    a->ti[1].shape = a->shape1;
    a->ti[1].offset = 2000;
    a->ti[1].nbytes = 1000;
    a->ann.n_tensors = 2;
    a->ann.tensors = a->tip;
    for (int i = 0; i < 3000; i++) a->blob[i] = (uint8_t)(i * 7 + 3);
    for (int i = 0; i < 3; i++)
        a->crcs[i] = seed_crc32c(0, a->blob + i * 1024, (size_t)SEED_MIN(1024, 3000 - i * 1024));
    a->ann.n_bucket_crc32c = 3;
    a->ann.bucket_crc32c = a->crcs;
    a->ann.config_json = "{\"hidden_size\": 64}";
    seed__weight_bucket__init(&a->bucket);
    a->bucket.version = 9;
    a->bucket.index = 1;
    a->bucket.offset = 1024;
    a->bucket.data.len = 1024;
    a->bucket.data.data = a->blob + 1024;
    a->bucket.crc32c = a->crcs[1];
    seed__weight_fetch__init(&a->fetch);
    a->fetch.version = 9;
    a->fetch_buckets[0] = 0;
    a->fetch_buckets[1] = 2;
    a->fetch.n_buckets = 2;
    a->fetch.buckets = a->fetch_buckets;
    a->fetch.id = "actor-host-1234";
    seed__status_request__init(&a->sreq);
    a->sreq.what = "learner";
    seed__status_reply__init(&a->srep);
    a->srep.json = "{\"step\": 12, \"policy_version\": 3}";
    seed__control__init(&a->ctl);
    a->ctl.kind = SEED__CONTROL__KIND__SCALE;
    a->ctl.role = "actor";
    a->ctl.count = -2;
    seed__env_request__init(&a->ereq);
    a->ereq.kind = SEED__ENV_REQUEST__KIND__STEP;
    a->ereq.env = "twx";
    a->ereq.task = "cookingworld";
    a->ereq.seed = 42;
    a->ereq.split = "train";
    a->ereq.action = "open fridge";
    a->ereq.session = "host-1-abcdef";
    a->ereq.seq = 17;
    a->ereq.params = "numLocations=1";
    a->ereq.max_steps = 20;
    seed__env_reply__init(&a->erep);
    a->erep.observation = "You open the fridge.";
    a->erep.n_admissible = 3;
    a->erep.admissible = wfx_admissible_text;
    a->erep.reward = 0.25f;
    a->erep.done = 1;
    a->erep.won = 1;
    a->erep.info = "score 1.0";
    a->erep.task = "cook a meal";
    a->erep.session = "host-1-abcdef";
    a->erep.seq = 17;
}

static inline void wfx_all_free(wfx_all *a) {
    wfx_group_free(&a->grp);
    wfx_scored_free(&a->scored);
}

/* Point env's body at a's example of body case c. */
static inline void wfx_envelope(Seed__Envelope *envl, wfx_all *a, Seed__Envelope__BodyCase c,
                                const char *sender) {
    wire_envelope_init(envl, sender);
    envl->body_case = c;
    switch (c) {
    case SEED__ENVELOPE__BODY_HELLO:
        envl->hello = &a->hello;
        break;
    case SEED__ENVELOPE__BODY_HEARTBEAT:
        envl->heartbeat = &a->hb;
        break;
    case SEED__ENVELOPE__BODY_EPISODE_GROUP:
        envl->episode_group = &a->grp.g;
        break;
    case SEED__ENVELOPE__BODY_SCORED_GROUP:
        envl->scored_group = &a->scored.sg;
        break;
    case SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE:
        envl->weight_announce = &a->ann;
        break;
    case SEED__ENVELOPE__BODY_WEIGHT_BUCKET:
        envl->weight_bucket = &a->bucket;
        break;
    case SEED__ENVELOPE__BODY_WEIGHT_FETCH:
        envl->weight_fetch = &a->fetch;
        break;
    case SEED__ENVELOPE__BODY_STATUS_REQUEST:
        envl->status_request = &a->sreq;
        break;
    case SEED__ENVELOPE__BODY_STATUS_REPLY:
        envl->status_reply = &a->srep;
        break;
    case SEED__ENVELOPE__BODY_CONTROL:
        envl->control = &a->ctl;
        break;
    case SEED__ENVELOPE__BODY_ENV_REQUEST:
        envl->env_request = &a->ereq;
        break;
    case SEED__ENVELOPE__BODY_ENV_REPLY:
        envl->env_reply = &a->erep;
        break;
    default:
        envl->body_case = SEED__ENVELOPE__BODY__NOT_SET;
        break;
    }
}

__attribute__((unused)) static const Seed__Envelope__BodyCase wfx_cases[] = {
    SEED__ENVELOPE__BODY_HELLO,           SEED__ENVELOPE__BODY_HEARTBEAT,
    SEED__ENVELOPE__BODY_EPISODE_GROUP,   SEED__ENVELOPE__BODY_SCORED_GROUP,
    SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE, SEED__ENVELOPE__BODY_WEIGHT_BUCKET,
    SEED__ENVELOPE__BODY_WEIGHT_FETCH,    SEED__ENVELOPE__BODY_STATUS_REQUEST,
    SEED__ENVELOPE__BODY_STATUS_REPLY,    SEED__ENVELOPE__BODY_CONTROL,
    SEED__ENVELOPE__BODY_ENV_REQUEST,     SEED__ENVELOPE__BODY_ENV_REPLY};
#define WFX_NCASES ((int)(sizeof wfx_cases / sizeof wfx_cases[0]))

/* 1 when a and b pack to the same bytes. */
static inline int wfx_same(const Seed__Envelope *a, const Seed__Envelope *b) {
    size_t na = seed__envelope__get_packed_size(a), nb = seed__envelope__get_packed_size(b);
    if (na != nb) return 0;
    uint8_t *pa = wfx_alloc(na), *pb = wfx_alloc(nb);
    seed__envelope__pack(a, pa);
    seed__envelope__pack(b, pb);
    int same = memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

#endif
