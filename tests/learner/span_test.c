/* span_test — learner_action_span against the shipped agent's tokenizer: the response
 * tokens algorithm.opd_tokens=action gives q - s to are exactly those whose bytes overlap
 * the text between <action> and </action>. Then learner_decision_mask (opd_tokens
 * decision): the action's tokens and the reasoning's tokens that spell it, and the
 * samples builder and loss that carry the mask (a real ScoredGroup, the group baseline
 * over the flagged tokens, q - s counted on them only).
 *
 *   span_test TOKENIZER_JSON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learner/samples.h"
/* the samples check reads what a failed step left: stop at the first failure */
#define CHECK_EXIT_ON_FAIL
#include "tests/check.h"

static tok *g_tk;

/* Encode text, find the span, and check the tokens in it decode to a string that holds
 * `inner` and that the tokens just outside it do not overlap the inner bytes. */
static void expect(const char *text, const char *inner) {
    tok_ids ids = {0};
    char err[512];
    CHECK(tok_encode(g_tk, NULL, text, strlen(text), 0, &ids, err, sizeof err) == 0, "%s", err);
    int lo = -1, hi = -1;
    learner_action_span(g_tk, ids.v, (int)ids.n, &lo, &hi);
    if (!inner) {
        CHECK(lo == hi, "'%s': expected no span, got [%d, %d)", text, lo, hi);
        tok_ids_free(&ids);
        return;
    }
    CHECK(lo >= 0 && lo < hi && hi <= (int)ids.n, "'%s': span [%d, %d) of %zu", text, lo, hi,
          ids.n);
    seed_sbuf in = {0}, before = {0};
    CHECK(tok_decode(g_tk, ids.v + lo, (size_t)(hi - lo), 0, &in, err, sizeof err) == 0, "%s", err);
    CHECK(strstr(in.p, inner) != NULL, "'%s': span decodes to '%s', not holding '%s'", text, in.p,
          inner);
    /* no more than the inner text and the tag bytes sharing its edge tokens */
    CHECK(in.n <= strlen(inner) + strlen("<action></action>"),
          "'%s': span decodes to '%s', more than the action text", text, in.p);
    /* the tokens before the span end before the inner text starts */
    if (lo > 0)
        CHECK(tok_decode(g_tk, ids.v, (size_t)lo, 0, &before, err, sizeof err) == 0, "%s", err);
    const char *at = strstr(text, "<action>") + strlen("<action>");
    CHECK(before.n <= (size_t)(at - text), "'%s': %zu bytes before the span, inner starts at %td",
          text, before.n, at - text);
    seed_sbuf_free(&in);
    seed_sbuf_free(&before);
    tok_ids_free(&ids);
}

/* The reasoning's flagged tokens (before the action span), decoded and joined by '|'. */
static void decision(const char *text, const char *want_think) {
    tok_ids ids = {0};
    char err[512];
    CHECK(tok_encode(g_tk, NULL, text, strlen(text), 0, &ids, err, sizeof err) == 0, "%s", err);
    int lo, hi;
    learner_action_span(g_tk, ids.v, (int)ids.n, &lo, &hi);
    unsigned char *m = malloc(ids.n + 1);
    tok_ws *ws = NULL;
    CHECK(m && tok_ws_new(g_tk, &ws, err, sizeof err) == 0, "workspace");
    memset(m, 7, ids.n + 1);
    CHECK(learner_decision_mask(g_tk, ws, ids.v, (int)ids.n, lo, hi, m, err, sizeof err) == 0, "%s",
          err);
    seed_sbuf got = {0};
    for (int t = 0; t < (int)ids.n; t++) {
        CHECK(m[t] == 0 || m[t] == 1, "'%s': flag %d of token %d", text, m[t], t);
        if (t >= lo && t < hi)
            CHECK(m[t] == 1, "'%s': action token %d not flagged", text, t);
        else if (t >= hi)
            CHECK(m[t] == 0, "'%s': token %d after the action flagged", text, t);
        else if (m[t]) {
            if (got.n) seed_sbuf_append(&got, "|", 1);
            CHECK(tok_decode(g_tk, ids.v + t, 1, 0, &got, err, sizeof err) == 0, "%s", err);
        }
    }
    CHECK(m[ids.n] == 7, "'%s': wrote past the reply", text);
    CHECK(!strcmp(got.p ? got.p : "", want_think), "'%s': reasoning flags '%s', expected '%s'",
          text, got.p ? got.p : "", want_think);
    seed_sbuf_free(&got);
    tok_ws_free(ws);
    free(m);
    tok_ids_free(&ids);
}

/* Two one-step episodes of one group through learner_samples_build with opd_tokens
 * decision and the group baseline, then learner_loss_tokens on each sample: the baseline
 * is the mean q - s over the flagged tokens of both, and q - s counts on those only. */
static void decision_samples(void) {
    static const char *const reply[2] = {
        "<think>I need a mug. First I look at countertop 2.</think><action>go to countertop "
        "2</action><|im_end|>",
        "<think>I need a mug. First I look at cabinet 1.</think><action>go to cabinet "
        "1</action><|im_end|>"};
    char err[512];
    tok_ids ids[2] = {{0}}, prompt = {0};
    CHECK(tok_encode(g_tk, NULL, "task: put a mug in the sinkbasin", 32, 0, &prompt, err,
                     sizeof err) == 0,
          "%s", err);
    Seed__Step st[2];
    Seed__Step *stp[2];
    Seed__Episode ep[2];
    Seed__Episode *epp[2];
    Seed__StepScores sc[2];
    Seed__StepScores *scp[2];
    Seed__EpisodeAnalysis an[2];
    Seed__EpisodeAnalysis *anp[2];
    float *s[2], *q[2], *behav[2];
    double want_sum = 0;
    int want_n = 0;
    for (int e = 0; e < 2; e++) {
        CHECK(tok_encode(g_tk, NULL, reply[e], strlen(reply[e]), 0, &ids[e], err, sizeof err) == 0,
              "%s", err);
        const int n = (int)ids[e].n;
        s[e] = malloc(sizeof(float) * (size_t)n);
        q[e] = malloc(sizeof(float) * (size_t)n);
        behav[e] = malloc(sizeof(float) * (size_t)n);
        for (int t = 0; t < n; t++) {
            s[e][t] = behav[e][t] = -0.5f - 0.01f * (float)t;
            q[e][t] = s[e][t] + (e ? -0.3f : 0.2f) + 0.001f * (float)t;
        }
        seed__step__init(&st[e]);
        st[e].prompt_ids = prompt.v;
        st[e].n_prompt_ids = prompt.n;
        st[e].response_ids = ids[e].v;
        st[e].n_response_ids = ids[e].n;
        st[e].sample_logprobs = behav[e];
        st[e].n_sample_logprobs = ids[e].n;
        stp[e] = &st[e];
        seed__episode__init(&ep[e]);
        ep[e].steps = &stp[e];
        ep[e].n_steps = 1;
        ep[e].won = e == 0;
        ep[e].episode_return = e == 0 ? 1.0f : 0.0f;
        seed__step_scores__init(&sc[e]);
        sc[e].s = s[e];
        sc[e].n_s = ids[e].n;
        sc[e].q = q[e];
        sc[e].n_q = ids[e].n;
        scp[e] = &sc[e];
        seed__episode_analysis__init(&an[e]);
        an[e].steps = &scp[e];
        an[e].n_steps = 1;
        anp[e] = &an[e];
        epp[e] = &ep[e];
    }
    Seed__EpisodeGroup g;
    seed__episode_group__init(&g);
    g.episodes = epp;
    g.n_episodes = 2;
    Seed__ScoredGroup sg;
    seed__scored_group__init(&sg);
    sg.group = &g;
    sg.analyses = anp;
    sg.n_analyses = 2;
    Seed__ScoredGroup *const groups[1] = {&sg};
    learner_samples b;
    learner_samples_init(&b);
    learner_samples_cfg cfg = {.adv_norm = JOB_ADV_STD,
                               .use_q = 1,
                               .tk = g_tk,
                               .decision = 1,
                               .opd_baseline = JOB_OPD_BASELINE_GROUP};
    learner_samples_stats ss;
    memset(&ss, 0, sizeof ss);
    CHECK(learner_samples_build(&b, &cfg, groups, 1, &ss, err, sizeof err) == 0, "%s", err);
    CHECK(b.n == 2, "%d samples, expected 2", b.n);
    int flagged[2] = {0, 0};
    for (int e = 0; e < 2; e++) {
        const learner_sample *v = &b.v[e];
        CHECK(v->q && v->q_mask, "sample %d has no q or no decision mask", e);
        unsigned char *m = malloc(ids[e].n);
        tok_ws *ws = NULL;
        CHECK(m && tok_ws_new(g_tk, &ws, err, sizeof err) == 0, "workspace");
        CHECK(learner_decision_mask(g_tk, ws, ids[e].v, (int)ids[e].n, v->q_lo, v->q_hi, m, err,
                                    sizeof err) == 0,
              "%s", err);
        CHECK(!memcmp(m, v->q_mask, ids[e].n), "sample %d: the builder's mask differs", e);
        for (size_t t = 0; t < ids[e].n; t++)
            if (m[t]) {
                flagged[e]++;
                want_sum += (double)q[e][t] - s[e][t];
                want_n++;
            }
        CHECK(flagged[e] > v->q_hi - v->q_lo, "sample %d: no reasoning token flagged", e);
        tok_ws_free(ws);
        free(m);
    }
    const double base = want_sum / want_n;
    for (int e = 0; e < 2; e++) {
        const learner_sample *v = &b.v[e];
        CHECK(fabs(v->q_base - base) < 1e-6, "sample %d: baseline %g, expected %g", e,
              (double)v->q_base, base);
        const int n = v->rlen;
        float *adv = malloc(sizeof(float) * (size_t)n), *dl = malloc(sizeof(float) * (size_t)n),
              *de = malloc(sizeof(float) * (size_t)n);
        for (int t = 0; t < n; t++) adv[t] = v->adv_ep;
        learner_loss_cfg lc = {.w_opd = 1.0f, .c_opd = 2.0f, .clip_eps = 0.2f};
        learner_loss_in in = {n,    v->behav, v->behav, v->s,    v->q,      NULL,
                              NULL, adv,      v->q_lo,  v->q_hi, v->q_mask, v->q_base};
        learner_loss_out out = {0};
        learner_loss_tokens(&lc, &in, n, dl, de, &out);
        CHECK((int)out.q_tokens == flagged[e], "sample %d: q - s on %g tokens, %d flagged", e,
              out.q_tokens, flagged[e]);
        double shift = 0;
        for (int t = 0; t < n; t++)
            if (v->q_mask[t]) shift += (double)v->q[t] - v->s[t] - v->q_base;
        CHECK(fabs(out.adv - (n * (double)v->adv_ep + shift)) < 1e-4,
              "sample %d: advantage sum %g, expected %g", e, out.adv,
              n * (double)v->adv_ep + shift);
        free(adv);
        free(dl);
        free(de);
    }
    /* opd_episodes lost: the won episode (0) carries no q; the lost one keeps its q, its
     * mask, and a group baseline over its own tokens only */
    cfg.opd_lost_only = 1;
    CHECK(learner_samples_build(&b, &cfg, groups, 1, &ss, err, sizeof err) == 0, "%s", err);
    CHECK(b.n == 2 && !b.v[0].q && !b.v[0].s && b.v[0].q_base == 0.0f,
          "opd_episodes lost: the won episode still carries q");
    CHECK(b.v[1].q && b.v[1].q_mask && b.v[1].adv_ep < 0.0f,
          "opd_episodes lost: the lost episode lost its q");
    double lost_sum = 0;
    int lost_n = 0;
    for (int t = 0; t < b.v[1].rlen; t++)
        if (b.v[1].q_mask[t]) {
            lost_sum += (double)q[1][t] - s[1][t];
            lost_n++;
        }
    CHECK(lost_n == flagged[1] && fabs(b.v[1].q_base - lost_sum / lost_n) < 1e-6,
          "opd_episodes lost: baseline %g, expected %g", (double)b.v[1].q_base, lost_sum / lost_n);
    learner_samples_free(&b);
    for (int e = 0; e < 2; e++) {
        free(s[e]);
        free(q[e]);
        free(behav[e]);
        tok_ids_free(&ids[e]);
    }
    tok_ids_free(&prompt);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: span_test TOKENIZER_JSON\n");
        return 2;
    }
    char err[512];
    CHECK(tok_load(&g_tk, argv[1], err, sizeof err) == 0, "%s", err);
    expect("<think>the box is left of me</think><action>left</action>", "left");
    expect("<think>go</think>\n<action>push up</action><|im_end|>", "push up");
    expect("<action>take mug 1 from countertop 2</action>", "take mug 1 from countertop 2");
    /* the first action tag pair counts, as the envs' parsers read it */
    expect("<think>x</think><action>down</action><action>up</action>", "down");
    expect("<think>no action here</think>", NULL);
    expect("<think>x</think><action>left", NULL);      /* never closed */
    expect("<think>x</think><action></action>", NULL); /* empty */
    expect("", NULL);
    /* the reasoning names the receptacle the action goes to; "I", "need" and "a mug" do
     * not spell the action */
    decision("<think>I need a mug. I have looked nowhere yet; first I look at coffeetable "
             "1.</think><action>go to coffeetable 1</action><|im_end|>",
             " coffee|table|1");
    decision("<think>I am at (2, 3). I push it right.</think><action>right</action>", " right");
    decision("<think>I see the mug 1 here: I take it.</think><action>take mug 1 from "
             "countertop 2</action>",
             " mug|1| take");
    decision("<think>no action here</think>", "");
    decision("<think>x</think><action></action>", "");
    decision_samples();
    tok_free(g_tk);
    puts("span_test: ok");
    return 0;
}
