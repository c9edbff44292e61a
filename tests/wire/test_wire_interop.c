/* test_wire_interop.c — seed's C wire layer against Google's official Python protobuf
 * runtime (interop.py, code generated from proto/seed.proto), over real ZeroMQ sockets.
 *
 *   test_wire_interop PYTHON INTEROP_PY
 *
 * C -> Python -> C: every body type plus a realistic EpisodeGroup (8 episodes x 10 steps x
 * 400 prompt + 60 response ids) goes to Python, which parses it and sends back its own
 * serialization; the bytes must equal what protobuf-c packed (both encoders write fields
 * in number order, packed scalars, proto3 defaults omitted), and decode to the same message.
 * Python -> C: an EpisodeGroup and a ScoredGroup built by Python, each followed by its JSON
 * description (json_format); every field C decoded is compared with the JSON. Exact
 * comparisons: float32 values print in JSON with the shortest repr that round-trips, and
 * float64 with repr, so parsing them back gives the same bits. A wrong-schema envelope from
 * Python must be counted and dropped. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/util.h"
#include "proto/wire.h"
#include "tests/wire/testproc.h"
#include "tests/wire/wire_fixtures.h"

#include "tests/check.h"

/* ---- JSON (json_format omits fields at their default value) ---- */

static const cJSON *j_get(const cJSON *o, const char *k) {
    return cJSON_GetObjectItemCaseSensitive(o, k);
}
static uint64_t j_u64(const cJSON *o, const char *k) { /* 64-bit ints are JSON strings */
    const cJSON *v = j_get(o, k);
    if (cJSON_IsString(v)) return strtoull(v->valuestring, NULL, 10);
    return cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
}
static double j_num(const cJSON *o, const char *k) {
    const cJSON *v = j_get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}
static const char *j_str(const cJSON *o, const char *k) {
    const cJSON *v = j_get(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}
static int j_bool(const cJSON *o, const char *k) {
    return cJSON_IsTrue(j_get(o, k));
}
static int j_len(const cJSON *o, const char *k) {
    const cJSON *v = j_get(o, k);
    return cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
}

static void cmp_ints(const cJSON *o, const char *k, const int32_t *v, size_t n, const char *at) {
    CHECK((size_t)j_len(o, k) == n, "%s.%s: %zu values, JSON has %d", at, k, n, j_len(o, k));
    size_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, j_get(o, k)) {
        if (i < n && (int32_t)x->valuedouble != v[i]) {
            CHECK(0, "%s.%s[%zu]: %d, JSON %g", at, k, i, v[i], x->valuedouble);
            return;
        }
        i++;
    }
}

static void cmp_floats(const cJSON *o, const char *k, const float *v, size_t n, const char *at) {
    CHECK((size_t)j_len(o, k) == n, "%s.%s: %zu values, JSON has %d", at, k, n, j_len(o, k));
    size_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, j_get(o, k)) {
        if (i < n && (float)x->valuedouble != v[i]) {
            CHECK(0, "%s.%s[%zu]: %.9g, JSON %.17g", at, k, i, v[i], x->valuedouble);
            return;
        }
        i++;
    }
}

static void cmp_group(const Seed__EpisodeGroup *g, const cJSON *j) {
    CHECK(strcmp(g->env, j_str(j, "env")) == 0, "env %s", g->env);
    CHECK(g->task_seed == j_u64(j, "task_seed"), "task_seed %llu",
          (unsigned long long)g->task_seed);
    CHECK(strcmp(g->split, j_str(j, "split")) == 0, "split");
    CHECK(g->policy_version == j_u64(j, "policy_version"), "policy_version");
    CHECK(strcmp(g->actor_id, j_str(j, "actor_id")) == 0, "actor_id %s", g->actor_id);
    CHECK(g->group_id == j_u64(j, "group_id"), "group_id");
    CHECK(g->created == j_num(j, "created"), "created %.17g", g->created);
    CHECK((int)g->n_episodes == j_len(j, "episodes"), "episodes %zu", g->n_episodes);
    int e = 0;
    const cJSON *je;
    cJSON_ArrayForEach(je, j_get(j, "episodes")) {
        if ((size_t)e >= g->n_episodes) break;
        const Seed__Episode *ep = g->episodes[e];
        char at[64];
        snprintf(at, sizeof at, "episode %d", e);
        CHECK(ep->episode_return == (float)j_num(je, "episode_return"), "%s return", at);
        CHECK(ep->won == j_bool(je, "won"), "%s won", at);
        CHECK(ep->sample_seed == j_u64(je, "sample_seed"), "%s sample_seed", at);
        CHECK(strcmp(ep->family, j_str(je, "family")) == 0, "%s family", at);
        CHECK(strcmp(ep->error, j_str(je, "error")) == 0, "%s error", at);
        CHECK((int)ep->n_steps == j_len(je, "steps"), "%s steps", at);
        int t = 0;
        const cJSON *js;
        cJSON_ArrayForEach(js, j_get(je, "steps")) {
            if ((size_t)t >= ep->n_steps) break;
            const Seed__Step *st = ep->steps[t];
            snprintf(at, sizeof at, "episode %d step %d", e, t);
            cmp_ints(js, "prompt_ids", st->prompt_ids, st->n_prompt_ids, at);
            cmp_ints(js, "response_ids", st->response_ids, st->n_response_ids, at);
            cmp_floats(js, "sample_logprobs", st->sample_logprobs, st->n_sample_logprobs, at);
            CHECK(st->skill_slot_episode == (uint32_t)j_num(js, "skill_slot_episode") &&
                      st->skill_slot_step == (uint32_t)j_num(js, "skill_slot_step"),
                  "%s skill slots", at);
            CHECK(strcmp(st->action, j_str(js, "action")) == 0, "%s action '%s'", at, st->action);
            CHECK(strcmp(st->observation, j_str(js, "observation")) == 0, "%s observation", at);
            CHECK(st->reward == (float)j_num(js, "reward"), "%s reward", at);
            CHECK(st->valid == j_bool(js, "valid"), "%s valid", at);
            t++;
        }
        e++;
    }
}

static void cmp_scored(const Seed__ScoredGroup *sg, const cJSON *j) {
    CHECK(sg->group != NULL, "scored group without group");
    if (sg->group) cmp_group(sg->group, j_get(j, "group"));
    CHECK(sg->scored_version == j_u64(j, "scored_version"), "scored_version");
    CHECK(strcmp(sg->analyzer_id, j_str(j, "analyzer_id")) == 0, "analyzer_id");
    CHECK((int)sg->n_analyses == j_len(j, "analyses"), "analyses %zu", sg->n_analyses);
    int e = 0;
    const cJSON *ja;
    cJSON_ArrayForEach(ja, j_get(j, "analyses")) {
        if ((size_t)e >= sg->n_analyses) break;
        const Seed__EpisodeAnalysis *a = sg->analyses[e];
        char at[64];
        snprintf(at, sizeof at, "analysis %d", e);
        CHECK(strcmp(a->skill, j_str(ja, "skill")) == 0, "%s skill", at);
        const ProtobufCEnumValue *src =
            protobuf_c_enum_descriptor_get_value(&seed__skill_source__descriptor, a->source);
        const char *jsrc = j_str(ja, "source");
        CHECK(src && strcmp(src->name, jsrc[0] ? jsrc : "SKILL_NONE") == 0, "%s source %s", at,
              jsrc);
        CHECK((int)a->n_step_skills == j_len(ja, "step_skills"), "%s step_skills", at);
        for (size_t i = 0; i < a->n_step_skills && (int)i < j_len(ja, "step_skills"); i++)
            CHECK(strcmp(a->step_skills[i],
                         cJSON_GetArrayItem(j_get(ja, "step_skills"), (int)i)->valuestring) == 0,
                  "%s step skill %zu", at, i);
        cmp_ints(ja, "skill_ids", a->skill_ids, a->n_skill_ids, at);
        CHECK((int)a->n_steps == j_len(ja, "steps"), "%s steps", at);
        int t = 0;
        const cJSON *js;
        cJSON_ArrayForEach(js, j_get(ja, "steps")) {
            if ((size_t)t >= a->n_steps) break;
            snprintf(at, sizeof at, "analysis %d step %d", e, t);
            cmp_floats(js, "s", a->steps[t]->s, a->steps[t]->n_s, at);
            cmp_floats(js, "q", a->steps[t]->q, a->steps[t]->n_q, at);
            t++;
        }
        e++;
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PYTHON INTEROP_PY\n", argv[0]);
        return 2;
    }
    char err[SEED_ERRLEN], ep_out[256], ep_in[256];
    void *ctx = zmq_ctx_new();
    void *out = wire_socket(ctx, ZMQ_PUSH, NULL, err, sizeof err);
    void *in = wire_socket(ctx, ZMQ_PULL, NULL, err, sizeof err);
    if (!out || !in ||
        wire_bind(out, "tcp://127.0.0.1:*", ep_out, sizeof ep_out, err, sizeof err) ||
        wire_bind(in, "tcp://127.0.0.1:*", ep_in, sizeof ep_in, err, sizeof err)) {
        fprintf(stderr, "setup: %s\n", err);
        return 1;
    }
    int t = 60000; /* Python starts in a few seconds; a lost message fails, never hangs */
    wire_check(zmq_setsockopt(in, ZMQ_RCVTIMEO, &t, sizeof t));
    wire_check(zmq_setsockopt(out, ZMQ_SNDTIMEO, &t, sizeof t));

    /* The C side's messages: every body type, plus a realistic group. */
    wfx_all a;
    wfx_all_make(&a, 77);
    wfx_group big;
    wfx_group_make(&big, 8, 10, 400, 60, 78);
    enum { N = WFX_NCASES + 1 };
    Seed__Envelope envs[N];
    for (int i = 0; i < WFX_NCASES; i++) wfx_envelope(&envs[i], &a, wfx_cases[i], "c-interop");
    wire_envelope_init(&envs[N - 1], "c-interop");
    envs[N - 1].body_case = SEED__ENVELOPE__BODY_EPISODE_GROUP;
    envs[N - 1].episode_group = &big.g;

    char n_str[16];
    snprintf(n_str, sizeof n_str, "%d", N);
    char *args[] = {argv[1], argv[2], ep_out, ep_in, n_str, NULL};
    tproc py;
    if (tproc_start(&py, args)) return 1;

    for (int i = 0; i < N; i++)
        CHECK(wire_send(out, &envs[i], 0, err, sizeof err) == 0, "send %d: %s", i, err);
    wire_rx rx;
    wire_rx_init(&rx, "interop", WIRE_ACCEPT_ANY, 0, 0);
    for (int i = 0; i < N; i++) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, in, 0) < 0) {
            CHECK(0, "no echo of message %d from Python: %s", i, zmq_strerror(errno));
            zmq_msg_close(&m);
            break;
        }
        uint8_t *mine;
        size_t n = seed__envelope__get_packed_size(&envs[i]);
        mine = wfx_alloc(n);
        seed__envelope__pack(&envs[i], mine);
        const char *name = wire_body_name(envs[i].body_case);
        CHECK(zmq_msg_size(&m) == n && memcmp(zmq_msg_data(&m), mine, n) == 0,
              "%s: Python's serialization (%zu bytes) differs from protobuf-c's (%zu bytes)", name,
              zmq_msg_size(&m), n);
        Seed__Envelope *back = NULL;
        CHECK(wire_decode(&rx, zmq_msg_data(&m), zmq_msg_size(&m), "python", &back) == 1,
              "%s: C rejected Python's re-serialization", name);
        if (back) CHECK(wfx_same(back, &envs[i]), "%s: decoded message differs", name);
        wire_free(back);
        free(mine);
        zmq_msg_close(&m);
    }
    printf("C -> Python -> C: %d envelopes byte-identical\n", N);

    /* Python's own messages, each followed by its JSON description. */
    for (int k = 0; k < 2; k++) {
        Seed__Envelope *msg = NULL, *desc = NULL;
        int r1 = wire_recv(&rx, in, &msg, 0, err, sizeof err);
        int r2 = wire_recv(&rx, in, &desc, 0, err, sizeof err);
        CHECK(r1 == 1 && r2 == 1 && desc->body_case == SEED__ENVELOPE__BODY_STATUS_REPLY,
              "Python message %d: rc %d %d (%s)", k, r1, r2, err);
        if (r1 == 1 && r2 == 1) {
            cJSON *j = cJSON_Parse(desc->status_reply->json);
            CHECK(j != NULL, "Python's JSON does not parse");
            if (j && k == 0) {
                CHECK(msg->body_case == SEED__ENVELOPE__BODY_EPISODE_GROUP, "expected a group");
                if (msg->body_case == SEED__ENVELOPE__BODY_EPISODE_GROUP)
                    cmp_group(msg->episode_group, j);
            } else if (j) {
                CHECK(msg->body_case == SEED__ENVELOPE__BODY_SCORED_GROUP, "expected scored");
                if (msg->body_case == SEED__ENVELOPE__BODY_SCORED_GROUP)
                    cmp_scored(msg->scored_group, j);
            }
            cJSON_Delete(j);
        }
        wire_free(msg);
        wire_free(desc);
    }
    printf("Python -> C: EpisodeGroup and ScoredGroup match their JSON descriptions\n");

    Seed__Envelope *m = NULL;
    CHECK(wire_recv(&rx, in, &m, 0, err, sizeof err) == 0 && !m && rx.c.wrong_version == 1,
          "Python's wrong-schema envelope was not dropped (wrong_version %llu)",
          (unsigned long long)rx.c.wrong_version);
    wire_free(m);
    m = NULL;
    CHECK(wire_recv(&rx, in, &m, 0, err, sizeof err) == 1 &&
              m->body_case == SEED__ENVELOPE__BODY_CONTROL &&
              m->control->kind == SEED__CONTROL__KIND__STOP,
          "no STOP from Python");
    wire_free(m);

    int status = tproc_stop(&py, 0, 30000);
    CHECK(status == 0, "interop.py exited with status %d", status);
    wfx_all_free(&a);
    wfx_group_free(&big);
    wire_close(out);
    wire_close(in);
    zmq_ctx_term(ctx);
    if (check_failures) {
        fprintf(stderr, "test_wire_interop: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_wire_interop: all checks passed\n");
    return 0;
}
