/* analyzer_main.c — seed-analyzer: takes episode groups from the learner's hub, writes
 * a hindsight skill for every episode (the policy itself in stage 2 — "self" — the
 * env's rule-based oracle, or an OpenAI-compatible endpoint — roles/http_skill.h),
 * scores every response token with the same frozen weights twice — s = log pi(y |
 * prompt) and q = log pi(y | prompt with the skill spliced into its slots) — and sends
 * the scored group to the learner. Only what is new is computed: when the group was
 * sampled with the weights version the analyzer holds, s is the actor's sampling
 * log-probs (s_from_actor), and the pairs left share their prompt prefixes in the KV
 * cache (analyzer/score.h). In grpo and skill_prompt
 * modes (no distillation term; skill_prompt's acting prompts already carry the library's
 * skills) it writes no skill and only provides s; in static_skills mode the skill is the
 * fixed library's for the episode's env and family (common/skill_library.h), source
 * SKILL_LIBRARY. Weights arrive in the background and are swapped in between groups. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "roles/policy_weights.h"
#include "roles/render.h"
#include "roles/telemetry.h"
#include "roles/http_skill.h"
#include "analyzer/generate.h"
#include "analyzer/score.h"
#include "roles/skill.h"
#include "roles/daemon.h"
#include "common/skill_library.h"
#include "model/model.h"
#include "proto/validate.h"
#include "proto/weights.h"
#include "proto/wire.h"

typedef struct analyzer {
    daemon_args a;
    job_config *job;
    void *ctx, *pull, *push;
    telemetry tel;
    wire_rx rx;
    wire_identity me;
    weights_rx *wrx;
    model *m;
    tok *tk;
    tok_ws *ws;
    render_ctx rr;
    uint64_t version;
    int vocab, end_id, max_seq, n_slots;
    float *logits, *scratch;
    uint64_t groups, tokens_scored, skills_written, errors;
    uint64_t tokens_score_full;                   /* prompt + response tokens of the pairs scored */
    uint64_t s_reused_steps, s_scored_steps;      /* s from the actor / scored here */
    http_skill *http;                             /* skill_source http */
    uint64_t skill_fallbacks, fallbacks_unlogged; /* http skills replaced by the fallback */
    double t_fallback_log;
    double t_asked; /* when the last READY went out */
    /* episodes of the group being scored (reported as in flight) and of dealt groups
     * dropped (invalid, failed, or unsendable at stop), both reported to the learner */
    uint64_t in_flight, dropped, rejected;
    skill_lib lib;       /* static_skills: the fixed library (empty otherwise) */
    int lib_miss_warned; /* a family without an entry was reported */
} analyzer;

static char g_err[SEED_ERRLEN];

/* Publish the counters the heartbeat thread sends. */
static void heartbeat(analyzer *A) {
    telemetry_counters c = {0};
    c.weights_version = A->version;
    c.tokens_scored = A->tokens_scored;
    c.groups_sent = A->groups;
    c.malformed =
        A->rx.c.malformed + A->rx.c.wrong_version + A->rx.c.oversized + A->rx.c.unexpected_type;
    c.malformed += A->rejected;
    c.env_errors = A->errors;
    c.episodes_in_flight = A->in_flight;
    c.episodes_dropped = A->dropped;
    c.skill_fallbacks = A->skill_fallbacks;
    c.tokens_score_full = A->tokens_score_full;
    c.s_reused_steps = A->s_reused_steps;
    c.s_scored_steps = A->s_scored_steps;
    telemetry_update(&A->tel, &c);
}

/* Ask the hub for one more episode group. */
static void ask_for_group(analyzer *A) {
    Seed__Control c = SEED__CONTROL__INIT;
    c.kind = SEED__CONTROL__KIND__READY;
    c.count = 1;
    c.role = "analyzer";
    Seed__Envelope e;
    wire_envelope_init(&e, A->me.id);
    e.body_case = SEED__ENVELOPE__BODY_CONTROL;
    e.control = &c;
    char err[SEED_ERRLEN];
    if (wire_send(A->pull, &e, ZMQ_DONTWAIT, err, sizeof err) < 0)
        seed_log(SEED_LOG_DEBUG, "asking for a group: %s", err);
    A->t_asked = seed_now();
}

static int take_weights(analyzer *A, int wait_ms) {
    return policy_weights_apply(A->wrx, A->m, wait_ms, &A->version);
}

/* Per-episode working data for one group. */
typedef struct ep_work {
    skill_parsed skill;
    char text[4096];
    tok_ids ep_ids;    /* tokens of the episode skill block */
    tok_ids *step_ids; /* per step: tokens of its step skill block */
    Seed__EpisodeAnalysis an;
    Seed__StepScores *sc, **scp;
    float *s_buf, *q_buf;
    int *qprompt_buf; /* concatenated skill-augmented prompts */
    int skip;         /* algorithm.opd_episodes lost: a won episode gets no skill and no q */
} ep_work;

/* The indices of g's episodes that get a skill (those not skipped) into idx; their count. */
static int analyzed(const Seed__EpisodeGroup *g, const ep_work *w, int *idx) {
    int m = 0;
    for (int e = 0; e < (int)g->n_episodes; e++)
        if (!w[e].skip) idx[m++] = e;
    return m;
}

/* Rebuild the task text from (env, seed, split): the analysis prompt shows it. */
static int task_text(analyzer *A, const Seed__EpisodeGroup *g, char *buf, size_t len) {
    const job_env *je = job_env_find(A->job, g->env);
    env_kv kv[JOB_MAX_ENV_OPTIONS + 1];
    char num[16];
    int nkv = je ? job_env_kv(je, kv, num) : 0;
    env *e;
    env_split sp;
    char err[SEED_ERRLEN];
    if (env_split_parse(g->split, &sp)) sp = ENV_SPLIT_TRAIN;
    if (env_create(&e, g->env, kv, nkv, err, sizeof err)) return -1;
    env_obs obs;
    int rc = env_reset(e, g->task_seed, sp, &obs, err, sizeof err);
    if (!rc) snprintf(buf, len, "%s", obs.task ? obs.task : "");
    env_destroy(e);
    return rc;
}

/* The env's rule-based oracle skill for episode e of g (it replays the actions). */
static int oracle_episode(analyzer *A, const Seed__EpisodeGroup *g, size_t e, char *out, size_t len,
                          char *err, size_t errlen) {
    const job_env *je = job_env_find(A->job, g->env);
    env_kv kv[JOB_MAX_ENV_OPTIONS + 1];
    char num[16];
    int nkv = je ? job_env_kv(je, kv, num) : 0;
    env_split sp;
    if (env_split_parse(g->split, &sp)) sp = ENV_SPLIT_TRAIN;
    Seed__Episode *ep = g->episodes[e];
    const char **acts = calloc(ep->n_steps + 1, sizeof *acts);
    if (!acts) return seed_errf(err, errlen, "out of memory");
    for (size_t k = 0; k < ep->n_steps; k++)
        acts[k] = ep->steps[k]->valid ? ep->steps[k]->action : NULL;
    int rc = env_hindsight(g->env, kv, nkv, g->task_seed, sp, acts, (int)ep->n_steps, out, len, err,
                           errlen);
    free(acts);
    if (rc) out[0] = 0;
    return rc;
}

/* static_skills: the library's skill for each episode's env and family is its teacher
 * context, in place of a hindsight skill. */
static int library_skills(analyzer *A, const Seed__EpisodeGroup *g, ep_work *w) {
    for (size_t e = 0; e < g->n_episodes; e++) {
        if (w[e].skip) continue;
        const char *fam = g->episodes[e]->family;
        const skill_lib_entry *x = skill_lib_find(&A->lib, g->env, fam);
        w[e].text[0] = 0;
        if (x && skill_lib_text(x, SKILL_LIB_MAX_STEPS, w[e].text, sizeof w[e].text) < 0)
            return seed_errf(g_err, sizeof g_err, "skill library entry %s/%s does not fit", g->env,
                             x->family);
        if (!x && !A->lib_miss_warned++)
            seed_log(SEED_LOG_WARN,
                     "skill library %s has no entry for env %s family '%s' (nor '*'): such "
                     "episodes get no q",
                     A->job->algorithm.skill_library, g->env, fam);
        w[e].an.source = SEED__SKILL_SOURCE__SKILL_LIBRARY;
    }
    return 0;
}

static int oracle_skills(analyzer *A, const Seed__EpisodeGroup *g, ep_work *w) {
    for (size_t e = 0; e < g->n_episodes; e++) {
        if (w[e].skip) continue;
        char err[SEED_ERRLEN];
        if (oracle_episode(A, g, e, w[e].text, sizeof w[e].text, err, sizeof err)) {
            seed_log(SEED_LOG_WARN, "oracle for %s seed %llu: %s", g->env,
                     (unsigned long long)g->task_seed, err);
            A->errors++;
        }
        w[e].an.source = SEED__SKILL_SOURCE__SKILL_ORACLE;
    }
    return 0;
}

/* The trajectory steps of an episode, as the analysis prompt shows them (free()). */
static skill_traj_step *episode_steps(const Seed__Episode *ep) {
    skill_traj_step *ts = calloc(ep->n_steps + 1, sizeof *ts);
    for (size_t k = 0; ts && k < ep->n_steps; k++) {
        ts[k].observation = ep->steps[k]->observation;
        ts[k].action = ep->steps[k]->valid ? ep->steps[k]->action : "";
        ts[k].reward = ep->steps[k]->reward;
    }
    return ts;
}

/* The http analyzer writes each episode's skill, the group's requests in flight together.
 * An episode whose request failed (after the retries) falls back, counted, to the env's
 * oracle skill, or to no skill (no q) where the env has no oracle. */
static int http_skills(analyzer *A, const Seed__EpisodeGroup *g, ep_work *w) {
    char task[2048];
    if (task_text(A, g, task, sizeof task)) task[0] = 0;
    int n = (int)g->n_episodes;
    skill_traj *t = calloc((size_t)n + 1, sizeof *t);
    http_skill_result *r = calloc((size_t)n + 1, sizeof *r);
    int *idx = calloc((size_t)n + 1, sizeof *idx);
    int rc = t && r && idx ? 0 : -1;
    const int m = rc ? 0 : analyzed(g, w, idx); /* request j asks for episode idx[j] */
    for (int j = 0; j < m && !rc; j++) {
        const Seed__Episode *ep = g->episodes[idx[j]];
        t[j] = (skill_traj){g->env, task, episode_steps(ep), (int)ep->n_steps, ep->episode_return,
                            ep->won};
        if (!t[j].steps) rc = -1;
    }
    if (!rc && m > 0) http_skill_ask(A->http, m, t, ANALYZER_SKILL_OBS_CHARS, r);
    const char *why = NULL;
    int no_oracle = 0;
    for (int j = 0; j < m && !rc; j++) {
        const int e = idx[j];
        skill_parsed sk;
        if (r[j].status == 0) {
            skill_parse(r[j].content.p, r[j].content.n, A->job->analyzer.max_step_skills, &sk);
            if (sk.episode[0] || sk.n_steps > 0) {
                snprintf(w[e].text, sizeof w[e].text, "%s", r[j].content.p);
                w[e].an.source = SEED__SKILL_SOURCE__SKILL_HTTP;
                continue;
            }
            snprintf(r[j].err, sizeof r[j].err, "http analyzer %s: the answer holds no skill text",
                     http_skill_url(A->http));
        }
        why = r[j].err;
        A->skill_fallbacks++;
        A->fallbacks_unlogged++;
        char err[SEED_ERRLEN];
        int bad = oracle_episode(A, g, (size_t)e, w[e].text, sizeof w[e].text, err, sizeof err);
        w[e].an.source = bad ? SEED__SKILL_SOURCE__SKILL_NONE : SEED__SKILL_SOURCE__SKILL_ORACLE;
        no_oracle += bad;
    }
    /* one line per status interval, not one per episode, while the endpoint is down */
    double now = seed_now();
    if (why && now - A->t_fallback_log >= A->job->status.interval_s) {
        char none[128] = "";
        if (no_oracle)
            snprintf(none, sizeof none, " (%d of this group to no skill: no oracle skill for %s)",
                     no_oracle, g->env);
        seed_log(SEED_LOG_WARN, "%llu skill(s) fell back to the env's oracle%s: %s",
                 (unsigned long long)A->fallbacks_unlogged, none, why);
        A->fallbacks_unlogged = 0;
        A->t_fallback_log = now;
    }
    if (rc) seed_errf(g_err, sizeof g_err, "out of memory asking the http analyzer");
    for (int j = 0; j < m && t; j++) free((void *)t[j].steps);
    for (int j = 0; j < m && r; j++) seed_sbuf_free(&r[j].content);
    free(t);
    free(r);
    free(idx);
    return rc;
}

/* The policy writes each episode's skill: one batched generation over the group
 * (analyzer_self_skills), at analyzer.skill_temperature. */
static int self_skills(analyzer *A, const Seed__EpisodeGroup *g, ep_work *w) {
    char task[2048];
    if (task_text(A, g, task, sizeof task)) task[0] = 0;
    int n = (int)g->n_episodes;
    skill_traj *t = calloc((size_t)n + 1, sizeof *t);
    uint64_t *seeds = calloc((size_t)n + 1, sizeof *seeds);
    seed_sbuf *text = calloc((size_t)n + 1, sizeof *text);
    int *idx = calloc((size_t)n + 1, sizeof *idx);
    char err[SEED_ERRLEN];
    int rc = (!t || !seeds || !text || !idx) ? seed_errf(err, sizeof err, "out of memory") : 0;
    const int m = rc ? 0 : analyzed(g, w, idx); /* trajectory j is episode idx[j]'s */
    for (int j = 0; j < m && !rc; j++) {
        const Seed__Episode *ep = g->episodes[idx[j]];
        t[j] = (skill_traj){g->env, task, episode_steps(ep), (int)ep->n_steps, ep->episode_return,
                            ep->won};
        seeds[j] = ep->sample_seed;
        if (!t[j].steps) rc = seed_errf(err, sizeof err, "out of memory");
        w[idx[j]].an.source = SEED__SKILL_SOURCE__SKILL_SELF;
    }
    const analyzer_gen gn = {A->m,
                             A->n_slots,
                             A->max_seq,
                             A->job->analyzer.max_skill_tokens,
                             A->vocab,
                             A->end_id,
                             analyzer_skill_sampler(A->job),
                             A->logits,
                             A->scratch};
    if (!rc) rc = analyzer_self_skills(&gn, A->tk, A->ws, m, t, seeds, text, err, sizeof err);
    for (int j = 0; j < m && !rc; j++)
        snprintf(w[idx[j]].text, sizeof w[idx[j]].text, "%s", text[j].p ? text[j].p : "");
    if (rc) seed_log(SEED_LOG_ERROR, "self skill: %s", err);
    for (int j = 0; j < m && t; j++) free((void *)t[j].steps);
    for (int j = 0; j < n && text; j++) seed_sbuf_free(&text[j]);
    free(t);
    free(seeds);
    free(text);
    free(idx);
    return rc;
}

/* s is the actor's own sampling log-probs when the group was sampled with the weights
 * this analyzer holds: the sampler logs log softmax(z / T) over the full vocabulary
 * (before top-k/top-p) at the job's sampling.temperature, the T this analyzer scores at
 * (model_set_temperature in setup), so scoring s again would only reproduce them up to
 * fp32 rounding. The actor labels a group with the one version all its episodes were
 * sampled with (actor_main.c swaps weights only between groups). Otherwise s is scored
 * here, so q - s always comes from one frozen policy. */
static int s_from_actor(const analyzer *A, const Seed__EpisodeGroup *g) {
    return g->policy_version == A->version;
}

/* Score every step of the group: q where the episode has a skill, s where the actor's
 * sampling log-probs are not s already; all pairs in one prefix-reusing pass. */
static int score_group(analyzer *A, const Seed__EpisodeGroup *g, ep_work *w, int with_q) {
    int total = 0;
    for (size_t e = 0; e < g->n_episodes; e++) total += (int)g->episodes[e]->n_steps;
    int cap = total * 2 + 1, n = 0;
    analyzer_score_pair *pairs = calloc((size_t)cap, sizeof *pairs);
    if (!pairs) return seed_errf(g_err, sizeof g_err, "out of memory");
    const int reuse_s = s_from_actor(A, g);
    uint64_t s_reused = 0, s_scored = 0;
    char err[SEED_ERRLEN];
    int rc = 0;
    for (size_t e = 0; e < g->n_episodes && !rc; e++) {
        Seed__Episode *ep = g->episodes[e];
        ep_work *ww = &w[e];
        size_t ns = ep->n_steps;
        ww->sc = calloc(ns + 1, sizeof *ww->sc);
        ww->scp = calloc(ns + 1, sizeof *ww->scp);
        size_t rtot = 0, qtot = 0;
        for (size_t k = 0; k < ns; k++) rtot += ep->steps[k]->n_response_ids;
        ww->s_buf = calloc(rtot + 1, sizeof(float));
        ww->q_buf = calloc(rtot + 1, sizeof(float));
        int has_skill = with_q && (ww->skill.episode[0] || ww->skill.n_steps > 0);
        if (has_skill) {
            ww->step_ids = calloc(ns + 1, sizeof *ww->step_ids);
            rc = render_skill(&A->rr, ENV_SKILL_EPISODE, ww->skill.episode, &ww->ep_ids, err,
                              sizeof err);
            for (size_t k = 0; k < ns && !rc; k++) {
                const char *ss = skill_for_step(&ww->skill, (int)k + 1);
                rc = render_skill(&A->rr, ENV_SKILL_STEP, ss, &ww->step_ids[k], err, sizeof err);
                qtot += ep->steps[k]->n_prompt_ids + ww->ep_ids.n + ww->step_ids[k].n;
            }
            ww->qprompt_buf = calloc(qtot + 1, sizeof(int));
        }
        if (!ww->sc || !ww->scp || !ww->s_buf || !ww->q_buf || (has_skill && !ww->qprompt_buf)) {
            rc = seed_errf(err, sizeof err, "out of memory");
            break;
        }
        size_t ro = 0, qo = 0;
        for (size_t k = 0; k < ns && !rc; k++) {
            Seed__Step *st = ep->steps[k];
            Seed__StepScores *sc = &ww->sc[k];
            seed__step_scores__init(sc);
            ww->scp[k] = sc;
            if (st->n_response_ids == 0 || st->n_prompt_ids == 0) continue;
            sc->s = ww->s_buf + ro;
            sc->n_s = st->n_response_ids;
            if (reuse_s && st->n_sample_logprobs == st->n_response_ids) {
                memcpy(sc->s, st->sample_logprobs, sizeof(float) * st->n_response_ids);
                s_reused++;
            } else {
                pairs[n++] =
                    (analyzer_score_pair){st->prompt_ids, (int)st->n_prompt_ids, st->response_ids,
                                          (int)st->n_response_ids, sc->s};
                s_scored++;
            }
            if (has_skill) {
                /* prompt with skills = A + episode block + B + step block + C, spliced
                 * exactly as the actor and the warm start build it (roles/render.h) */
                int *q = ww->qprompt_buf + qo;
                int qn = render_splice(
                    st->prompt_ids, (int)st->n_prompt_ids, (int)st->skill_slot_episode,
                    (int)st->skill_slot_step, ww->ep_ids.v, (int)ww->ep_ids.n, ww->step_ids[k].v,
                    (int)ww->step_ids[k].n, q, (int)(qtot - qo), err, sizeof err);
                if (qn < 0) {
                    rc = -1;
                    break;
                }
                qo += (size_t)qn;
                sc->q = ww->q_buf + ro;
                sc->n_q = st->n_response_ids;
                if (qn + (int)st->n_response_ids <= A->max_seq) {
                    pairs[n++] = (analyzer_score_pair){q, qn, st->response_ids,
                                                       (int)st->n_response_ids, sc->q};
                } else {
                    sc->q = NULL; /* too long with the skill: no distillation signal here */
                    sc->n_q = 0;
                }
            }
            ro += st->n_response_ids;
        }
        ww->an.steps = ww->scp;
        ww->an.n_steps = ns;
    }
    if (!rc) {
        /* shared prompt prefixes (system + task, + the episode skill for q) once */
        analyzer_score_stats ss = {0};
        rc = analyzer_score_pairs(A->m, A->n_slots, A->job->analyzer.batch_tokens, n, pairs, &ss,
                                  err, sizeof err);
        if (!rc) {
            A->tokens_scored += ss.tokens_computed;
            A->tokens_score_full += ss.tokens_full;
            A->s_reused_steps += s_reused;
            A->s_scored_steps += s_scored;
        }
    }
    if (rc) snprintf(g_err, sizeof g_err, "%s", err);
    free(pairs);
    return rc;
}

static void process(analyzer *A, Seed__Envelope *in) {
    Seed__EpisodeGroup *g = in->episode_group;
    int n = (int)g->n_episodes;
    ep_work *w = calloc((size_t)n + 1, sizeof *w);
    Seed__EpisodeAnalysis **anp = calloc((size_t)n + 1, sizeof *anp);
    if (!w || !anp) {
        free(w);
        free(anp);
        seed_log(SEED_LOG_ERROR, "out of memory analyzing a group");
        return;
    }
    const int mode = A->job->algorithm.mode;
    int with_q = mode == JOB_MODE_SEED || mode == JOB_MODE_STATIC_SKILLS;
    int rc = 0;
    for (int e = 0; e < n; e++) {
        seed__episode_analysis__init(&w[e].an);
        w[e].skip = with_q && A->job->algorithm.opd_episodes == JOB_OPD_EPISODES_LOST &&
                    g->episodes[e]->won;
    }
    if (with_q) {
        rc = mode == JOB_MODE_STATIC_SKILLS                      ? library_skills(A, g, w)
             : A->job->analyzer.skill_source == JOB_SKILL_ORACLE ? oracle_skills(A, g, w)
             : A->job->analyzer.skill_source == JOB_SKILL_HTTP   ? http_skills(A, g, w)
                                                                 : self_skills(A, g, w);
        for (int e = 0; e < n && !rc; e++) {
            /* only the lines of steps this episode took: the learner refuses a group
             * whose analysis has more step skills than its episode has steps */
            skill_parse_episode(w[e].text, strlen(w[e].text), A->job->analyzer.max_step_skills,
                                (int)g->episodes[e]->n_steps, &w[e].skill);
            w[e].an.skill = (char *)w[e].skill.episode;
            w[e].an.n_step_skills = (size_t)w[e].skill.n_steps;
            w[e].an.step_skills = calloc((size_t)w[e].skill.n_steps + 1, sizeof(char *));
            for (int k = 0; k < w[e].skill.n_steps && w[e].an.step_skills; k++) {
                char *line = malloc(600);
                if (line)
                    snprintf(line, 600, "step %d: %s", w[e].skill.step_no[k], w[e].skill.step[k]);
                w[e].an.step_skills[k] = line ? line : (char *)"";
            }
            A->skills_written += !w[e].skip;
        }
    } else {
        for (int e = 0; e < n; e++) skill_parse("", 0, 0, &w[e].skill);
    }
    if (!rc) rc = score_group(A, g, w, with_q);
    if (!rc) {
        for (int e = 0; e < n; e++) {
            w[e].an.skill_ids = w[e].ep_ids.v;
            w[e].an.n_skill_ids = w[e].ep_ids.n;
            anp[e] = &w[e].an;
        }
        Seed__ScoredGroup sg = SEED__SCORED_GROUP__INIT;
        sg.group = g;
        sg.analyses = anp;
        sg.n_analyses = (size_t)n;
        sg.scored_version = A->version;
        sg.analyzer_id = A->me.id;
        Seed__Envelope out;
        wire_envelope_init(&out, A->me.id);
        out.body_case = SEED__ENVELOPE__BODY_SCORED_GROUP;
        out.scored_group = &sg;
        char err[SEED_ERRLEN];
        int s;
        while ((s = wire_send(A->push, &out, ZMQ_DONTWAIT, err, sizeof err)) == WIRE_AGAIN &&
               !daemon_stopping()) {
            heartbeat(A);
            zmq_poll(NULL, 0, 20);
        }
        if (s < 0 && s != WIRE_AGAIN) seed_log(SEED_LOG_ERROR, "sending a scored group: %s", err);
        if (s == 0) A->groups++;
        if (s != 0) A->dropped += (uint64_t)n;
        size_t n_steps = 0, n_q = 0;
        for (int e = 0; e < n; e++)
            for (size_t k = 0; k < w[e].an.n_steps; k++) {
                n_steps++;
                n_q += w[e].an.steps[k]->n_q > 0;
            }
        char src[32] = "none";
        int first = 0; /* the first episode with a skill (won ones may have none) */
        while (first < n - 1 && w[first].an.source == SEED__SKILL_SOURCE__SKILL_NONE) first++;
        if (n > 0 && w[first].an.source != SEED__SKILL_SOURCE__SKILL_NONE) {
            const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
                &seed__skill_source__descriptor, (int)w[first].an.source);
            if (v) snprintf(src, sizeof src, "%s", v->name);
        }
        seed_log(SEED_LOG_DEBUG,
                 "group %llu of %s (%s): skill source %s, q on %zu of %zu steps, s %s",
                 (unsigned long long)g->group_id, g->actor_id, g->env, src, n_q, n_steps,
                 s_from_actor(A, g) ? "from the actor" : "scored (other version)");
    } else {
        A->errors++;
        A->dropped += (uint64_t)n;
        seed_log(SEED_LOG_ERROR, "group %llu of %s dropped: %s", (unsigned long long)g->group_id,
                 g->actor_id, g_err);
    }
    for (int e = 0; e < n; e++) {
        ep_work *ww = &w[e];
        for (size_t k = 0; k < ww->an.n_step_skills && ww->an.step_skills; k++)
            if (ww->an.step_skills[k][0]) free(ww->an.step_skills[k]);
        free(ww->an.step_skills);
        tok_ids_free(&ww->ep_ids);
        for (size_t k = 0; ww->step_ids && k < g->episodes[e]->n_steps; k++)
            tok_ids_free(&ww->step_ids[k]);
        free(ww->step_ids);
        free(ww->sc);
        free(ww->scp);
        free(ww->s_buf);
        free(ww->q_buf);
        free(ww->qprompt_buf);
    }
    free(w);
    free(anp);
}

static int stopping(void *arg) {
    return daemon_stopping();
}

static int setup(analyzer *A) {
    job_config *job = A->job;
    char path[2048];
    snprintf(path, sizeof path, "%s/tokenizer.json", job->model.path);
    if (tok_load(&A->tk, path, g_err, sizeof g_err)) return -1;
    if (tok_ws_new(A->tk, &A->ws, g_err, sizeof g_err)) return -1;
    snprintf(path, sizeof path, "%s/config.json", job->model.path);
    model_config cfg;
    if (model_config_load(path, &cfg, g_err, sizeof g_err)) return -1;
    A->max_seq = cfg.max_position_embeddings;
    if (job->sampling.max_prompt_tokens > 0)
        A->max_seq =
            SEED_MIN(A->max_seq, job->sampling.max_prompt_tokens + job->sampling.max_new_tokens +
                                     job->analyzer.max_skill_tokens * 2);
    /* one KV slot per episode for the self-skill generation; scoring (analyzer/score.h)
     * pins up to two more for the group's shared prompt prefixes and needs at least 3 */
    A->n_slots = SEED_MIN(SEED_MAX(job->algorithm.group_size + 2, 3), ANALYZER_GEN_MAX_SLOTS);
    model_limits lim = {.max_batch_seqs = A->n_slots,
                        .max_seq_len = A->max_seq,
                        .max_train_tokens = 0,
                        .threads = job->model.threads,
                        .max_infer_tokens = SEED_MAX(job->analyzer.batch_tokens, A->max_seq)};
    if (model_create(&A->m, &cfg, &lim, daemon_backend(job), g_err, sizeof g_err)) return -1;
    /* s and q are log-probs of the policy the actor sampled from: softmax(z / T) */
    if (model_set_temperature(A->m, (float)job->sampling.temperature, g_err, sizeof g_err))
        return -1;
    A->vocab = cfg.vocab_size;
    A->end_id = render_end_token(A->tk);
    A->logits = malloc(sizeof(float) * (size_t)A->n_slots * (size_t)A->vocab);
    A->scratch = malloc(sizeof(float) * (size_t)A->vocab * 2);
    if (!A->logits || !A->scratch) return seed_errf(g_err, sizeof g_err, "out of memory");
    if (render_init(&A->rr, A->tk, job->algorithm.history, g_err, sizeof g_err)) return -1;
    if (job->algorithm.mode == JOB_MODE_STATIC_SKILLS) {
        if (skill_lib_load_job(&A->lib, job, g_err, sizeof g_err)) return -1;
        seed_log(SEED_LOG_INFO, "static_skills: teacher context from the skills of %s (%d entries)",
                 job->algorithm.skill_library, A->lib.n);
    }
    A->ctx = zmq_ctx_new();
    wire_identity_init(&A->me, SEED__ROLE__ROLE_ANALYZER, "analyzer");
    snprintf(A->me.id, sizeof A->me.id, "%s", A->a.id);
    /* the hub deals a group only when asked (READY): the rest go to other analyzers */
    if (!(A->pull =
              daemon_connect(A->ctx, job, ZMQ_DEALER, "groups_out", 1, g_err, sizeof g_err)) ||
        !(A->push = daemon_connect(A->ctx, job, ZMQ_PUSH, "scored_in", 0, g_err, sizeof g_err)) ||
        telemetry_start(&A->tel, A->ctx, job, &A->me, g_err, sizeof g_err))
        return -1;
    wire_rx_init(&A->rx, "groups_out", WIRE_ACCEPT(SEED__ENVELOPE__BODY_EPISODE_GROUP),
                 (size_t)job->wire.max_msg_bytes, 0);
    if (policy_weights_connect(&A->wrx, job, A->m, A->me.id, g_err, sizeof g_err)) return -1;
    if (job->analyzer.skill_source == JOB_SKILL_HTTP) {
        if (http_skill_new(&A->http, job, g_err, sizeof g_err)) return -1;
        http_skill_set_cancel(A->http, stopping, NULL);
    }
    return 0;
}

static void teardown(analyzer *A) {
    http_skill_free(A->http);
    weights_rx_free(A->wrx);
    wire_close(A->pull);
    telemetry_stop(&A->tel);
    wire_close(A->push);
    if (A->ctx) zmq_ctx_term(A->ctx);
    render_free(&A->rr);
    skill_lib_free(&A->lib);
    model_free(A->m);
    tok_ws_free(A->ws);
    tok_free(A->tk);
    free(A->logits);
    free(A->scratch);
}

int main(int argc, char **argv) {
    static analyzer S;
    analyzer *A = &S;
    int rc = daemon_init(&A->a, "analyzer", argc, argv, NULL, g_err, sizeof g_err);
    if (rc) {
        if (rc > 0) return 0;
        fprintf(stderr, "seed-analyzer: %s\n", g_err);
        return 2;
    }
    A->job = &A->a.job;
    if (setup(A)) {
        seed_log(SEED_LOG_ERROR, "%s", g_err);
        teardown(A);
        return 1;
    }
    while (!daemon_stopping() && A->version == 0) {
        heartbeat(A);
        if (take_weights(A, 200) < 0) break;
    }
    rc = 0;
    while (!daemon_stopping() && A->version > 0) {
        if (take_weights(A, 0) < 0) {
            rc = 1;
            break;
        }
        heartbeat(A);
        /* idle for a while: ask again (the hub may have restarted and lost our credit;
         * it caps credit, so asking twice costs nothing) */
        if (seed_now() - A->t_asked > 2.0) ask_for_group(A);
        zmq_pollitem_t it = {A->pull, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, 200) <= 0) continue;
        Seed__Envelope *e = NULL;
        char err[SEED_ERRLEN];
        int r = wire_recv(&A->rx, A->pull, &e, ZMQ_DONTWAIT, err, sizeof err);
        if (r < 0 && r != WIRE_AGAIN) {
            seed_log(SEED_LOG_ERROR, "%s", err);
            rc = 1;
            break;
        }
        if (r == 1) {
            /* the learner's own check (proto/validate.h): what it would refuse is not
             * scored here either */
            wire_limits lim;
            wire_limits_init(&lim, A->job);
            lim.vocab = A->vocab;
            wire_reject why = wire_check_group(e->episode_group, &lim, err, sizeof err);
            A->in_flight = e->episode_group->n_episodes;
            if (why) {
                A->rejected++;
                A->dropped += A->in_flight;
                seed_log(SEED_LOG_WARN, "group from the hub refused (%s): %s",
                         wire_reject_name(why), err);
            } else {
                heartbeat(A); /* in flight now, until it is sent or dropped */
                process(A, e);
            }
            A->in_flight = 0;
            wire_free(e);
            ask_for_group(A);
        }
    }
    heartbeat(A);
    seed_log(SEED_LOG_INFO,
             "stopping: %llu groups scored; s from the actor on %llu steps, scored on %llu; "
             "%llu tokens computed for %llu prompt + response tokens",
             (unsigned long long)A->groups, (unsigned long long)A->s_reused_steps,
             (unsigned long long)A->s_scored_steps, (unsigned long long)A->tokens_scored,
             (unsigned long long)A->tokens_score_full);
    teardown(A);
    return rc;
}
