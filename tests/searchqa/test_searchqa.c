/* test_searchqa.c — tests of the searchqa env (Search-R1-style QA over a generated
 * corpus), and the tool its Python test drives.
 *
 * Usage: test_searchqa config|determinism|expert|splits|malformed|hindsight|format|prompt
 *        test_searchqa normalize        stdin: one hex string per line; prints the hex of
 *                                       sq_normalize_answer per line ("-" when it overflows)
 *        test_searchqa project          stdin: hex action per line; prints "KIND hex(content)"
 *        test_searchqa corpus SEED N    prints every passage, hex, one per line
 *        test_searchqa search SEED N K  stdin: hex query per line; prints "doc:score ..."
 *        test_searchqa dump SPLIT FIRST COUNT   one hash per expert episode
 * Each check prints what it found and exits non-zero on the first failure. The env is
 * deterministic integer/text logic, so comparisons are exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "envs/searchqa.h"
#include "common/util.h"

#define CHECK_EXIT_ON_FAIL
#include "tests/check.h"

static const env_split SPLITS[3] = {ENV_SPLIT_TRAIN, ENV_SPLIT_SEEN, ENV_SPLIT_UNSEEN};

static env *make(int n_kv, const env_kv *kv) {
    env *e = NULL;
    char err[SEED_ERRLEN];
    CHECK(env_create(&e, "searchqa", kv, n_kv, err, sizeof err) == 0, "create: %s", err);
    return e;
}

typedef struct episode {
    char actions[16][160];
    int n, won;
    float ret;
    uint64_t hash;
} episode;

/* The expert plays (seed, split); every text the env shows goes into the hash. */
static void play_expert(env *e, uint64_t seed, env_split split, episode *ep) {
    char err[SEED_ERRLEN];
    env_obs o;
    CHECK(env_reset(e, seed, split, &o, err, sizeof err) == 0, "reset: %s", err);
    uint64_t h = seed_fnv1a64(o.task, strlen(o.task));
    h = seed_hash_mix(h, seed_fnv1a64(o.observation, strlen(o.observation)));
    ep->n = 0;
    ep->ret = 0;
    while (!o.done) {
        CHECK(ep->n < 16, "episode too long");
        char *a = ep->actions[ep->n++];
        CHECK(env_expert(e, a, 160, err, sizeof err) == 0, "expert: %s", err);
        CHECK(env_action_valid(e, a), "the expert's action '%s' does not project", a);
        CHECK(env_step(e, a, &o, err, sizeof err) == 0, "step: %s", err);
        ep->ret += o.reward;
        h = seed_hash_mix(h, seed_fnv1a64(o.observation, strlen(o.observation)));
        h = seed_hash_mix(h, (uint64_t)(o.reward * 1000) + 7 * (uint64_t)o.done);
    }
    ep->won = o.won;
    ep->hash = h;
}

/* ---- config ---- */

static void expect_error(const char *k, const char *v, const char *must) {
    env_kv kv[1] = {{k, v}};
    env *e = NULL;
    char err[SEED_ERRLEN] = "";
    CHECK(env_create(&e, "searchqa", kv, 1, err, sizeof err) != 0, "%s=%s was accepted", k, v);
    CHECK(strstr(err, must), "error for %s=%s does not name '%s': %s", k, v, must, err);
}

static void test_config(void) {
    expect_error("topk", "0", "'topk'");
    expect_error("topk", "11", "1 to 10");
    expect_error("corpus_entities", "50", "'corpus_entities'");
    expect_error("corpus_seed", "-1", "'corpus_seed'");
    expect_error("obs_max_chars", "10", "'obs_max_chars'");
    expect_error("families", "two_hop,nope", "'families'");
    expect_error("families", "", "'families'");
    expect_error("max_steps", "0", "'max_steps'");
    expect_error("top_k", "3", "'top_k'");
    /* every key does something */
    env_kv one[1] = {{"families", "comparison"}};
    env *e = make(1, one);
    char err[SEED_ERRLEN];
    env_obs o;
    for (uint64_t s = 0; s < 50; s++) {
        CHECK(env_reset(e, s, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
        CHECK(strcmp(o.family, "comparison") == 0, "families=comparison gave %s", o.family);
    }
    env_destroy(e);
    env_kv k1[1] = {{"topk", "1"}}, k5[1] = {{"topk", "5"}};
    env *a = make(1, k1), *b = make(1, k5);
    CHECK(env_reset(a, 3, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    CHECK(env_step(a, "<search>river</search>", &o, err, sizeof err) == 0, "%s", err);
    CHECK(strstr(o.observation, "Doc 1(") && !strstr(o.observation, "Doc 2("), "topk=1: %s",
          o.observation);
    CHECK(env_reset(b, 3, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    CHECK(env_step(b, "<search>river</search>", &o, err, sizeof err) == 0, "%s", err);
    CHECK(strstr(o.observation, "Doc 5(") && !strstr(o.observation, "Doc 6("), "topk=5: %s",
          o.observation);
    env_destroy(a);
    env_destroy(b);
    env_kv small[1] = {{"obs_max_chars", "300"}};
    e = make(1, small);
    CHECK(env_reset(e, 3, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    CHECK(env_step(e, "<search>river orchard city company</search>", &o, err, sizeof err) == 0,
          "%s", err);
    size_t L = strlen(o.observation);
    CHECK(L <= 300 && L > 250, "obs_max_chars=300 gave %zu chars", L);
    CHECK(strcmp(o.observation + L - 14, "</information>") == 0, "cut observation lost its close");
    env_destroy(e);
    env_kv c1[1] = {{"corpus_seed", "1"}}, c2[1] = {{"corpus_entities", "500"}};
    env *d0 = make(0, NULL), *d1 = make(1, c1), *d2 = make(1, c2);
    sq_state s0, s1, s2;
    env_searchqa_state(d0, &s0);
    env_searchqa_state(d1, &s1);
    env_searchqa_state(d2, &s2);
    CHECK(s0.corpus->n == 2000 && s2.corpus->n == 500, "corpus_entities: %d %d", s0.corpus->n,
          s2.corpus->n);
    CHECK(strcmp(s0.corpus->doc[10], s1.corpus->doc[10]) != 0, "corpus_seed changed nothing");
    env_destroy(d0);
    env_destroy(d1);
    env_destroy(d2);
    env_kv ms[1] = {{"max_steps", "2"}};
    e = make(1, ms);
    CHECK(env_reset(e, 1, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    env_step(e, "<search>x</search>", &o, err, sizeof err);
    CHECK(!o.done, "done after one step");
    env_step(e, "<search>x</search>", &o, err, sizeof err);
    CHECK(o.done && !o.won, "max_steps=2 did not end the episode");
    env_destroy(e);
    printf("config: ok\n");
}

/* ---- determinism: two envs, same tasks, same bytes ---- */

static void test_determinism(void) {
    env *a = make(0, NULL), *b = make(0, NULL);
    sq_state sa, sb;
    env_searchqa_state(a, &sa);
    env_searchqa_state(b, &sb);
    for (int i = 0; i < sa.corpus->n; i++)
        CHECK(strcmp(sa.corpus->doc[i], sb.corpus->doc[i]) == 0, "passage %d differs", i);
    int distinct = 0;
    uint64_t prev = 0;
    for (int si = 0; si < 3; si++)
        for (uint64_t s = 0; s < 100; s++) {
            episode ea, eb;
            play_expert(a, s, SPLITS[si], &ea);
            play_expert(b, s, SPLITS[si], &eb);
            CHECK(ea.hash == eb.hash, "seed %llu split %d differs", (unsigned long long)s, si);
            distinct += ea.hash != prev;
            prev = ea.hash;
        }
    CHECK(distinct > 250, "only %d of 300 episodes differ from the one before", distinct);
    /* train, seen and unseen differ for the same seed */
    env_obs o;
    char err[SEED_ERRLEN], q[3][SQ_QUESTION];
    int same = 0;
    for (uint64_t s = 0; s < 50; s++) {
        for (int si = 0; si < 3; si++) {
            CHECK(env_reset(a, s, SPLITS[si], &o, err, sizeof err) == 0, "%s", err);
            snprintf(q[si], sizeof q[si], "%s", o.task);
        }
        same += strcmp(q[0], q[1]) == 0 || strcmp(q[1], q[2]) == 0;
    }
    CHECK(same < 3, "%d seeds give the same question in two splits", same);
    env_destroy(a);
    env_destroy(b);
    printf("determinism: ok (%d distinct)\n", distinct);
}

/* ---- expert: >= 95% success on each split, each family reached ---- */

static void expert_run(int n, int n_kv, const env_kv *kv) {
    env *e = make(n_kv, kv);
    for (int si = 0; si < 3; si++) {
        int won = 0, fam_n[SQ_FAMILY_COUNT] = {0}, fam_won[SQ_FAMILY_COUNT] = {0};
        for (int s = 0; s < n; s++) {
            episode ep;
            play_expert(e, (uint64_t)s, SPLITS[si], &ep);
            sq_state st;
            env_searchqa_state(e, &st);
            fam_n[st.q->family]++;
            fam_won[st.q->family] += ep.won;
            won += ep.won;
            CHECK(ep.won == (ep.ret == 1.0f), "return %g with won=%d", ep.ret, ep.won);
        }
        printf("expert %s%s%s: %d/%d won (", env_split_name(SPLITS[si]), n_kv ? " " : "",
               n_kv ? kv[n_kv - 1].value : "", won, n);
        for (int f = 0; f < SQ_FAMILY_COUNT; f++) {
            printf("%s%s %d/%d", f ? ", " : "", sq_family_name(f), fam_won[f], fam_n[f]);
            CHECK(fam_n[f] > 0, "family %s never drawn", sq_family_name(f));
        }
        printf(")\n");
        CHECK(won * 100 >= 95 * n, "expert success %d/%d is below 95%%", won, n);
    }
    env_destroy(e);
}

/* >= 95% success on each split, on the default corpus and on the smallest and largest
 * corpora of other seeds (more same-named distractors per passage). */
static void test_expert(int n) {
    /* the policy only follows a hop whose passage a search returned */
    env *e = make(0, NULL);
    env_obs o;
    char err[SEED_ERRLEN], act[160], want[160];
    uint64_t s3 = 0;
    sq_state st;
    for (;; s3++) {
        CHECK(env_reset(e, s3, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
        env_searchqa_state(e, &st);
        if (st.q->family == SQ_THREE_HOP) break;
    }
    const sq_entity *ent = st.corpus->ent;
    int got[3] = {st.q->need[0], st.q->need[1], st.q->need[2]};
    for (int k = 0; k <= 3; k++) {
        sq_state v = st;
        v.retrieved = got;
        v.n_retrieved = k;
        sq_expert_action(&v, 4, act, sizeof act);
        if (k < 3)
            snprintf(want, sizeof want, "<search>%s</search>", ent[st.q->need[k]].name);
        else
            snprintf(want, sizeof want, "<answer>%s</answer>", st.q->answer);
        CHECK(strcmp(act, want) == 0, "after %d hops: %s, expected %s", k, act, want);
    }
    sq_state v = st;
    v.retrieved = got + 1; /* hops 2 and 3 seen but not the first: search the first */
    v.n_retrieved = 2;
    sq_expert_action(&v, 2, act, sizeof act);
    snprintf(want, sizeof want, "<search>%s</search>", ent[st.q->need[0]].name);
    CHECK(strcmp(act, want) == 0, "%s", act);
    sq_expert_action(&v, 1, act, sizeof act);
    CHECK(strcmp(act, "<answer>unknown</answer>") == 0, "last turn, hops unread: %s", act);
    env_destroy(e);
    expert_run(n, 0, NULL);
    env_kv small[2] = {{"corpus_seed", "7"}, {"corpus_entities", "100"}};
    expert_run(n, 2, small);
    env_kv big[2] = {{"corpus_seed", "9"}, {"corpus_entities", "20000"}};
    expert_run(n / 2, 2, big);
}

/* ---- splits: seen and unseen share no question template ---- */

/* The question with its entity names replaced by "#": the template's phrasing. */
static void shape_of(const sq_state *st, char *out, size_t cap) {
    const sq_question *q = st->q;
    snprintf(out, cap, "%s", q->text);
    int n = q->family == SQ_COMPARISON ? 2 : 1;
    for (int i = 0; i < n; i++) {
        const char *name = st->corpus->ent[q->need[i]].name;
        char *p = strstr(out, name);
        CHECK(p, "question '%s' does not name %s", q->text, name);
        memmove(p + 1, p + strlen(name), strlen(p + strlen(name)) + 1);
        *p = '#';
    }
}

static void test_splits(int n) {
    env *e = make(0, NULL);
    enum { MAXS = 64 };
    char shapes[2][MAXS][SQ_QUESTION];
    int n_shapes[2] = {0, 0}, tmpl_used[2][64];
    memset(tmpl_used, 0, sizeof tmpl_used);
    env_obs o;
    char err[SEED_ERRLEN];
    for (int si = 0; si < 3; si++)
        for (int s = 0; s < n; s++) {
            CHECK(env_reset(e, (uint64_t)s, SPLITS[si], &o, err, sizeof err) == 0, "%s", err);
            sq_state st;
            env_searchqa_state(e, &st);
            int unseen = SPLITS[si] == ENV_SPLIT_UNSEEN;
            CHECK(sq_template_unseen(st.q->tmpl) == unseen,
                  "split %d drew template %d of the "
                  "other set",
                  si, st.q->tmpl);
            tmpl_used[unseen][st.q->tmpl] = 1;
            char sh[SQ_QUESTION];
            shape_of(&st, sh, sizeof sh);
            int found = 0;
            for (int i = 0; i < n_shapes[unseen]; i++) found |= strcmp(shapes[unseen][i], sh) == 0;
            if (!found && n_shapes[unseen] < MAXS)
                snprintf(shapes[unseen][n_shapes[unseen]++], SQ_QUESTION, "%s", sh);
            /* the golden answer is written in the last passage the question needs */
            const char *last = st.corpus->doc[st.q->need[st.q->n_need - 1]];
            if (st.q->family != SQ_COMPARISON)
                CHECK(strstr(last, st.q->answer), "answer %s is not in the passage '%s'",
                      st.q->answer, last);
            for (int h = 1; h < st.q->n_need && st.q->family != SQ_COMPARISON; h++)
                CHECK(strstr(st.corpus->doc[st.q->need[h - 1]], st.corpus->ent[st.q->need[h]].name),
                      "hop %d of '%s' is not named in the passage before it", h, st.q->text);
        }
    for (int i = 0; i < n_shapes[0]; i++)
        for (int j = 0; j < n_shapes[1]; j++)
            CHECK(strcmp(shapes[0][i], shapes[1][j]) != 0, "seen and unseen share '%s'",
                  shapes[0][i]);
    int used[2] = {0, 0};
    for (int t = 0; t < sq_template_count(); t++)
        used[sq_template_unseen(t)] += tmpl_used[sq_template_unseen(t)][t];
    for (int t = 0; t < sq_template_count(); t++)
        CHECK(tmpl_used[sq_template_unseen(t)][t], "template %d never drawn", t);
    for (int f = 0; f < SQ_FAMILY_COUNT; f++) {
        int has[2] = {0, 0};
        for (int t = 0; t < sq_template_count(); t++)
            if (sq_template_family(t) == f) has[sq_template_unseen(t)] = 1;
        CHECK(has[0] && has[1], "family %s lacks a template in one split", sq_family_name(f));
    }
    env_destroy(e);
    printf("splits: ok (%d seen, %d unseen phrasings; %d+%d templates)\n", n_shapes[0], n_shapes[1],
           used[0], used[1]);
}

/* ---- malformed, long and adversarial actions ---- */

static void expect_invalid(env *e, const char *action) {
    env_obs o;
    char err[SEED_ERRLEN];
    CHECK(env_reset(e, 11, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    CHECK(!action || !env_action_valid(e, action), "'%.60s' is valid", action);
    CHECK(env_step(e, action, &o, err, sizeof err) == 0, "step failed: %s", err);
    CHECK(!o.done && o.reward == 0.0f, "invalid action ended the episode or paid");
    CHECK(strstr(o.observation, "My previous action is invalid."), "observation: %s",
          o.observation);
}

static void test_malformed(void) {
    env *e = make(0, NULL);
    static const char *const bad[] = {
        NULL,
        "",
        "search for the river",
        "search[river]",
        "<search>river",
        "river</search>",
        "<search>a</search><answer>b</answer>",
        "<answer>b</answer><search>a</search>",
        "<search>a</search><search>b</search>",
        "<answer>a</answer> <answer>b</answer>",
        "<search>a</answer>",
        "<answer>x</search>",
        "<ans wer>x</answer>",
        "\xff\xfe<search\x80>x</search>",
        "<search>x</search><SEARCH>",
        "<answer>x</answer><Answer>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_invalid(e, bad[i]);
    /* a huge action without tags, and one with unbalanced tags */
    size_t big = 1u << 20;
    char *s = malloc(big + 64);
    CHECK(s, "oom");
    memset(s, '<', big);
    s[big] = 0;
    expect_invalid(e, s);
    for (size_t i = 0; i < big; i++) s[i] = "<search>"[i % 8];
    s[big] = 0;
    expect_invalid(e, s);
    /* valid: case-insensitive tags, text around the block, an empty query */
    env_obs o;
    char err[SEED_ERRLEN];
    static const char *const good[] = {"<SEARCH> river </Search>", "i will <search>x</search> now",
                                       "<search></search>",
                                       "<search>\xc3\xa9\xe2\x80\x83</search>"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK(env_reset(e, 11, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
        CHECK(env_action_valid(e, good[i]), "'%s' is invalid", good[i]);
        CHECK(env_step(e, good[i], &o, err, sizeof err) == 0, "%s", err);
        CHECK(strncmp(o.observation, "<information>", 13) == 0, "'%s' gave %s", good[i],
              o.observation);
    }
    /* a 1 MiB query: bounded work and a bounded observation */
    strcpy(s, "<search>");
    size_t off = 8;
    while (off + 32 < big) off += (size_t)sprintf(s + off, "river orchard %zu ", off);
    strcpy(s + off, "</search>");
    CHECK(env_reset(e, 11, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    double t0 = seed_now();
    CHECK(env_step(e, s, &o, err, sizeof err) == 0, "%s", err);
    CHECK(strlen(o.observation) <= 2000, "observation of %zu chars", strlen(o.observation));
    printf("malformed: 1 MiB query answered in %.1f ms\n", 1e3 * (seed_now() - t0));
    /* a 1 MiB answer that normalises to the golden one: articles, punctuation, spaces */
    CHECK(env_reset(e, 11, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    sq_state st;
    env_searchqa_state(e, &st);
    off = (size_t)sprintf(s, "<answer>");
    while (off + 16 < big) off += (size_t)sprintf(s + off, "The a, an! \t");
    off += (size_t)sprintf(s + off, "%s ...</answer>", st.q->answer);
    CHECK(env_step(e, s, &o, err, sizeof err) == 0, "%s", err);
    CHECK(o.done && o.won && o.reward == 1.0f, "padded golden answer not matched");
    /* and one that does not: extra word */
    CHECK(env_reset(e, 11, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    snprintf(s, 256, "<answer>%s x</answer>", st.q->answer);
    CHECK(env_step(e, s, &o, err, sizeof err) == 0, "%s", err);
    CHECK(o.done && !o.won && o.reward == 0.0f, "'%s' matched", s);
    /* a step after the end is an error, not a crash */
    CHECK(env_step(e, "<search>x</search>", &o, err, sizeof err) != 0, "step after the end");
    free(s);
    env_destroy(e);
    printf("malformed: ok\n");
}

/* ---- observation format: Search-R1's passages2string inside <information> ---- */

static void test_format(void) {
    env *e = make(0, NULL);
    env_obs o;
    char err[SEED_ERRLEN];
    CHECK(env_reset(e, 5, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(o.observation, o.task) == 0 && o.n_admissible == 0, "reset observation");
    sq_state st;
    env_searchqa_state(e, &st);
    const char *name = st.corpus->ent[st.q->need[0]].name;
    char act[128];
    snprintf(act, sizeof act, "<search>%s</search>", name);
    CHECK(env_step(e, act, &o, err, sizeof err) == 0, "%s", err);
    const char *d = st.corpus->doc[st.q->need[0]];
    char want[1024];
    const char *nl = strchr(d, '\n');
    snprintf(want, sizeof want, "<information>Doc 1(Title: %.*s) %s\nDoc 2(Title: ", (int)(nl - d),
             d, nl + 1);
    CHECK(strncmp(o.observation, want, strlen(want)) == 0, "observation\n%s\nexpected to start\n%s",
          o.observation, want);
    CHECK(strstr(o.observation, "\nDoc 3(Title: ") && !strstr(o.observation, "Doc 4("),
          "topk 3: %s", o.observation);
    CHECK(o.reward == 0.0f && !o.done, "a search paid or ended");
    snprintf(act, sizeof act, "<answer> %s </answer>", st.q->answer);
    CHECK(env_step(e, act, &o, err, sizeof err) == 0, "%s", err);
    CHECK(o.done && o.won && o.reward == 1.0f && o.observation[0] == 0, "answer step");
    env_destroy(e);
    printf("format: ok\n%s\n", want);
}

/* ---- prompt: verl-agent's search template, the slot rule of prompt.h ---- */

static void check_slots(const env_prompt *p) {
    CHECK(p->head_len && p->head[p->head_len - 1] == '\n', "head does not end with a newline");
    CHECK(p->middle[p->middle_len - 1] == '\n', "middle does not end with a newline");
    CHECK(p->middle[0] > ' ' && p->middle[0] < 127 && p->tail[0] > ' ' && p->tail[0] < 127,
          "middle or tail starts with whitespace");
}

static void test_prompt(void) {
    env *e = make(0, NULL);
    env_obs o;
    char err[SEED_ERRLEN];
    CHECK(env_reset(e, 2, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    env_prompt p;
    env_prompt_init(&p);
    const char *instr = env_lookup("searchqa")->instructions;
    CHECK(env_prompt_render(&p, "searchqa", instr, &o, NULL, 0, 2, err, sizeof err) == 0, "%s",
          err);
    check_slots(&p);
    char want[2048];
    snprintf(want, sizeof want,
             "You are an expert agent tasked with answering the given question step-by-step.\n"
             "Your question: %s\n\n",
             o.task);
    CHECK(strcmp(p.head, want) == 0, "head:\n%s", p.head);
    snprintf(want, sizeof want, "Your current observation is: %s\n\n", o.task);
    CHECK(strcmp(p.middle, want) == 0, "middle:\n%s", p.middle);
    CHECK(strstr(p.tail, "<action><search> your query </search></action>") &&
              strstr(p.tail, "<action><answer>Beijing</answer></action>"),
          "tail:\n%s", p.tail);
    CHECK(env_parse_rejects_cjk("searchqa"), "searchqa should reject CJK replies as verl-agent");
    /* a reply in the advertised format parses to an action the env projects */
    static const char reply[] = "<think>search it</think><action><search> Who </search></action>";
    char act[128];
    env_parsed pr;
    env_parse_response(reply, sizeof reply - 1, 1, act, sizeof act, &pr);
    CHECK(pr.valid && env_action_valid(e, act), "'%s' did not parse to a valid action", act);
    env_prompt_step hist[1] = {{o.task, act}};
    char q[SQ_QUESTION];
    snprintf(q, sizeof q, "%s", o.task);
    CHECK(env_step(e, act, &o, err, sizeof err) == 0, "%s", err);
    CHECK(env_prompt_render(&p, "searchqa", instr, &o, hist, 1, 2, err, sizeof err) == 0, "%s",
          err);
    check_slots(&p);
    snprintf(want, sizeof want, "[Observation 1: '%s', Action 1: '<search> who </search>']", q);
    CHECK(strstr(p.middle, want) && strstr(p.middle, "observation is: <information>"),
          "middle:\n%s", p.middle);
    env_prompt_free(&p);
    env_destroy(e);
    printf("prompt: ok\n");
}

/* ---- hindsight ---- */

static void skill_of(uint64_t seed, const char *const *acts, int n, char *skill, size_t cap) {
    char err[SEED_ERRLEN];
    CHECK(env_hindsight("searchqa", NULL, 0, seed, ENV_SPLIT_TRAIN, acts, n, skill, cap, err,
                        sizeof err) == 0,
          "hindsight: %s", err);
    char again[4096];
    CHECK(env_hindsight("searchqa", NULL, 0, seed, ENV_SPLIT_TRAIN, acts, n, again, sizeof again,
                        err, sizeof err) == 0 &&
              strcmp(skill, again) == 0,
          "hindsight is not deterministic");
    int lines = 0;
    for (const char *p = strchr(skill, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
        CHECK(strncmp(p + 1, "step ", 5) == 0, "line '%.40s' is not a step line", p + 1);
        lines++;
    }
    CHECK(lines <= 5, "%d step lines", lines);
}

/* A seed whose question is of the given family (train split). */
static uint64_t seed_of(env *e, int family, uint64_t from) {
    env_obs o;
    char err[SEED_ERRLEN];
    for (uint64_t s = from;; s++) {
        CHECK(env_reset(e, s, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
        sq_state st;
        env_searchqa_state(e, &st);
        if (st.q->family == family) return s;
    }
}

static void test_hindsight(void) {
    env *e = make(0, NULL);
    char skill[4096], a[6][160];
    const char *acts[6];
    for (int i = 0; i < 6; i++) acts[i] = a[i];
    /* success: the expert's own episode */
    uint64_t s2 = seed_of(e, SQ_TWO_HOP, 0);
    episode ep;
    play_expert(e, s2, ENV_SPLIT_TRAIN, &ep);
    CHECK(ep.won, "expert lost seed %llu", (unsigned long long)s2);
    for (int i = 0; i < ep.n; i++) snprintf(a[i], sizeof a[i], "%s", ep.actions[i]);
    skill_of(s2, acts, ep.n, skill, sizeof skill);
    printf("--- success ---\n%s", skill);
    CHECK(strncmp(skill, "Success:", 8) == 0 && strstr(skill, "step 1: search for"), "%s", skill);
    sq_state st;
    env_obs o;
    char err[SEED_ERRLEN];
    CHECK(env_reset(e, s2, ENV_SPLIT_TRAIN, &o, err, sizeof err) == 0, "%s", err);
    env_searchqa_state(e, &st);
    const char *bridge = st.corpus->ent[st.q->need[1]].name;
    /* answered without searching */
    snprintf(a[0], sizeof a[0], "<answer>somewhere</answer>");
    skill_of(s2, acts, 1, skill, sizeof skill);
    printf("--- no search ---\n%s", skill);
    CHECK(strstr(skill, "Failure: answered 'somewhere' without searching"), "%s", skill);
    /* stopped after one hop with the bridge entity as the answer */
    snprintf(a[0], sizeof a[0], "%s", ep.actions[0]);
    snprintf(a[1], sizeof a[1], "<answer>%s</answer>", bridge);
    skill_of(s2, acts, 2, skill, sizeof skill);
    printf("--- intermediate ---\n%s", skill);
    CHECK(strstr(skill, "stopped after 1 of 2 hops and answered with the intermediate"), "%s",
          skill);
    /* stopped after one hop with a guess */
    snprintf(a[1], sizeof a[1], "<answer>nowhere</answer>");
    skill_of(s2, acts, 2, skill, sizeof skill);
    printf("--- one hop ---\n%s", skill);
    CHECK(strstr(skill, "stopped after 1 of 2 hops: answered 'nowhere'") &&
              strstr(skill, "step 2: search for"),
          "%s", skill);
    /* wrong entity */
    snprintf(a[0], sizeof a[0], "<search>zzzz qqqq</search>");
    skill_of(s2, acts, 2, skill, sizeof skill);
    printf("--- wrong entity ---\n%s", skill);
    CHECK(strstr(skill, "searched for the wrong entity"), "%s", skill);
    /* read everything, answered wrongly */
    snprintf(a[0], sizeof a[0], "%s", ep.actions[0]);
    snprintf(a[1], sizeof a[1], "%s", ep.actions[1]);
    snprintf(a[2], sizeof a[2], "<answer>%s</answer>", bridge);
    skill_of(s2, acts, 3, skill, sizeof skill);
    printf("--- read all, answered the bridge ---\n%s", skill);
    CHECK(strstr(skill, "read every passage but answered with"), "%s", skill);
    snprintf(a[2], sizeof a[2], "<answer>elsewhere</answer>");
    skill_of(s2, acts, 3, skill, sizeof skill);
    CHECK(strstr(skill, "read the right passages but answered 'elsewhere'"), "%s", skill);
    /* out of turns, and invalid replies */
    for (int i = 0; i < 4; i++) snprintf(a[i], sizeof a[i], "%s", ep.actions[0]);
    skill_of(s2, acts, 4, skill, sizeof skill);
    printf("--- out of turns ---\n%s", skill);
    CHECK(strstr(skill, "ran out of turns after 4 searches"), "%s", skill);
    const char *none[4] = {NULL, NULL, "nonsense", NULL};
    skill_of(s2, none, 4, skill, sizeof skill);
    printf("--- invalid ---\n%s", skill);
    CHECK(strstr(skill, "4 of 4 replies had no valid action"), "%s", skill);
    /* comparison success, and the buffer-too-small error */
    uint64_t sc = seed_of(e, SQ_COMPARISON, 0);
    play_expert(e, sc, ENV_SPLIT_TRAIN, &ep);
    for (int i = 0; i < ep.n; i++) snprintf(a[i], sizeof a[i], "%s", ep.actions[i]);
    skill_of(sc, acts, ep.n, skill, sizeof skill);
    printf("--- comparison ---\n%s", skill);
    CHECK(strncmp(skill, "Success: searched for each of the two names", 43) == 0, "%s", skill);
    char tiny[16];
    CHECK(env_hindsight("searchqa", NULL, 0, sc, ENV_SPLIT_TRAIN, acts, ep.n, tiny, sizeof tiny,
                        err, sizeof err) != 0 &&
              strstr(err, "bytes"),
          "a tiny buffer was accepted");
    env_destroy(e);
    printf("hindsight: ok\n");
}

/* ---- tool modes for the Python test ---- */

static int unhex(const char *line, char *out, size_t cap, size_t *n) {
    size_t L = strcspn(line, "\r\n");
    if (L % 2 || L / 2 >= cap) return -1;
    for (size_t i = 0; i < L; i += 2) {
        unsigned v;
        if (sscanf(line + i, "%2x", &v) != 1) return -1;
        out[i / 2] = (char)v;
    }
    *n = L / 2;
    out[*n] = 0;
    return 0;
}

static void put_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) printf("%02x", (unsigned char)s[i]);
}

static void tool_lines(int mode, sq_index *ix, int k) {
    size_t cap = 1 << 20;
    char *line = malloc(2 * cap + 4), *buf = malloc(cap), *out = malloc(4 * cap);
    CHECK(line && buf && out, "oom");
    while (fgets(line, (int)(2 * cap + 4), stdin)) {
        size_t n;
        CHECK(unhex(line, buf, cap, &n) == 0, "bad hex line");
        if (mode == 0) {
            long r = sq_normalize_answer(buf, n, out, 4 * cap);
            if (r < 0)
                printf("-");
            else
                put_hex(out, (size_t)r);
        } else if (mode == 1) {
            const char *c;
            size_t cl;
            int kind = sq_project(buf, n, &c, &cl);
            printf("%d ", kind);
            put_hex(c, kind ? cl : 0);
        } else {
            int docs[SQ_TOPK_MAX];
            double sc[SQ_TOPK_MAX];
            int m = sq_index_search(ix, buf, n, k, docs, sc);
            for (int i = 0; i < m; i++) printf("%s%d:%.17g", i ? " " : "", docs[i], sc[i]);
        }
        printf("\n");
    }
    free(line);
    free(buf);
    free(out);
}

static void tool_dump(env_split split, int first, int count) {
    env *e = make(0, NULL);
    for (int s = first; s < first + count; s++) {
        episode ep;
        play_expert(e, (uint64_t)s, split, &ep);
        printf("%d %016llx %d\n", s, (unsigned long long)ep.hash, ep.won);
    }
    env_destroy(e);
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    char err[SEED_ERRLEN];
    if (strcmp(what, "normalize") == 0) {
        tool_lines(0, NULL, 0);
        return 0;
    }
    if (strcmp(what, "project") == 0) {
        tool_lines(1, NULL, 0);
        return 0;
    }
    if ((strcmp(what, "corpus") == 0 && argc == 4) || (strcmp(what, "search") == 0 && argc == 5)) {
        sq_corpus c;
        CHECK(sq_corpus_build(&c, strtoull(argv[2], NULL, 10), atoi(argv[3]), err, sizeof err) == 0,
              "%s", err);
        if (what[0] == 'c') {
            for (int i = 0; i < c.n; i++) {
                put_hex(c.doc[i], strlen(c.doc[i]));
                printf("\n");
            }
        } else {
            sq_index ix;
            CHECK(sq_index_build(&ix, (const char *const *)c.doc, c.n, err, sizeof err) == 0, "%s",
                  err);
            tool_lines(2, &ix, atoi(argv[4]));
            sq_index_free(&ix);
        }
        sq_corpus_free(&c);
        return 0;
    }
    if (strcmp(what, "dump") == 0 && argc == 5) {
        env_split split;
        CHECK(env_split_parse(argv[2], &split) == 0, "bad split %s", argv[2]);
        tool_dump(split, atoi(argv[3]), atoi(argv[4]));
        return 0;
    }
    int all = strcmp(what, "all") == 0, ran = 0;
    if (all || strcmp(what, "config") == 0) test_config(), ran = 1;
    if (all || strcmp(what, "determinism") == 0) test_determinism(), ran = 1;
    if (all || strcmp(what, "expert") == 0) test_expert(200), ran = 1;
    if (all || strcmp(what, "splits") == 0) test_splits(300), ran = 1;
    if (all || strcmp(what, "malformed") == 0) test_malformed(), ran = 1;
    if (all || strcmp(what, "format") == 0) test_format(), ran = 1;
    if (all || strcmp(what, "hindsight") == 0) test_hindsight(), ran = 1;
    if (all || strcmp(what, "prompt") == 0) test_prompt(), ran = 1;
    if (!ran) {
        fprintf(stderr,
                "usage: test_searchqa config|determinism|expert|splits|malformed|format|"
                "hindsight|prompt|all | normalize | project | corpus SEED N | search SEED N K | "
                "dump SPLIT FIRST COUNT\n");
        return 2;
    }
    return 0;
}
