/* searchqa_oracle.c — the searchqa env's rule-based hindsight analyzer (env_vtable.oracle).
 *
 * Contract: env_searchqa_oracle reads the replayed episode (env_replay: each action, and
 * after each step how many documents the searches had returned and what the expert would
 * do next; the env at the end holds the question's chain of passages, every retrieved
 * document and the golden answer) and writes the skill text through the skill builder:
 *   line 1: the episode skill. A success starts "Success:" and gives the search workflow
 *           that worked (search the named entity, read the relation, follow the hop,
 *           answer); a failure starts "Failure:" and names what went wrong — answered
 *           without searching, stopped before the last hop, answered with an
 *           intermediate entity, searched for the wrong entity, read the passages but
 *           answered something else, ran out of turns, or gave no valid action — and the
 *           rule that avoids it.
 *   then up to 5 lines "step k: imperative sentence" (action i is step i + 1): for a
 *           success the steps that read a hop and the answer; for a failure the steps
 *           where the expert would have done otherwise, saying what it would have done.
 * Deterministic: the same trace gives the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/searchqa.h"
#include "common/util.h"

enum { SQ_ORACLE_LINES = 5 };

typedef struct sq_rec {
    int kind;           /* SQ_ACT_* */
    int found_hop;      /* the first needed passage this search returned first, or -1 */
    char text[96];      /* the query or answer (cut) */
    const char *expert; /* what the expert would have done before this step */
} sq_rec;

static void sq_clip(char *dst, size_t cap, const char *s, size_t n) {
    if (n >= cap) n = cap - 1;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
    memcpy(dst, s, n);
    dst[n] = 0;
}

static int sq_name_is(const sq_corpus *c, int ent, const char *text) {
    return ent >= 0 && sq_exact_match(text, strlen(text), c->ent[ent].name);
}

int env_searchqa_oracle(const env_trace *tr, env_skill *sk, char *err, size_t errlen) {
    sq_state st;
    env_searchqa_state(tr->e, &st);
    const sq_corpus *c = st.corpus;
    const sq_question *q = st.q;
    const int steps = tr->n;
    sq_rec *rec = calloc((size_t)(steps ? steps : 1), sizeof *rec);
    if (!rec) return seed_errf(err, errlen, "searchqa: out of memory in the hindsight oracle");
    int hop_step[SQ_MAX_HOPS] = {0}; /* 1-based step that first returned need[h], 0 = never */
    int n_invalid = 0, n_search = 0, answered = 0;
    for (int i = 0; i < steps; i++) {
        sq_rec *r = &rec[i];
        const sq_trace_rec *before = tr->step[i].state, *after = tr->step[i + 1].state;
        const char *action = tr->step[i + 1].action;
        r->expert = before->expert;
        const char *content = "";
        size_t clen = 0;
        r->kind = action ? sq_project(action, strlen(action), &content, &clen) : SQ_ACT_INVALID;
        sq_clip(r->text, sizeof r->text, content, clen);
        r->found_hop = -1;
        for (int h = 0; h < q->n_need; h++)
            for (int k = before->n_retrieved; k < after->n_retrieved && !hop_step[h]; k++)
                if (st.retrieved[k] == q->need[h]) {
                    hop_step[h] = i + 1;
                    if (r->found_hop < 0) r->found_hop = h;
                }
        n_invalid += r->kind == SQ_ACT_INVALID;
        n_search += r->kind == SQ_ACT_SEARCH;
        answered |= r->kind == SQ_ACT_ANSWER;
    }
    int won = tr->won;
    int last_need = q->need[q->n_need - 1];
    int cmp = q->family == SQ_COMPARISON;
    const char *final_rel = sq_template_relation(q->tmpl, q->n_need - 1);
    char ans[96] = "";
    if (answered) snprintf(ans, sizeof ans, "%s", rec[steps - 1].text);
    int n_read = 0; /* needed passages read, in order, before the end */
    while (n_read < q->n_need && hop_step[n_read]) n_read++;
    int all_read = 1;
    for (int h = 0; h < q->n_need; h++) all_read &= hop_step[h] > 0;

    if (won) {
        if (cmp)
            env_skill_put(sk,
                          "Success: searched for each of the two names in the question (%s, then "
                          "%s), read the year in each passage, and answered with the name whose "
                          "year is the %s.",
                          c->ent[q->need[0]].name, c->ent[q->need[1]].name, final_rel);
        else {
            env_skill_put(sk, "Success: searched for %s, the entity named in the question",
                          c->ent[q->need[0]].name);
            for (int h = 0; h + 1 < q->n_need; h++)
                env_skill_put(sk, ", read its %s (%s) and searched for it",
                              sq_template_relation(q->tmpl, h), c->ent[q->need[h + 1]].name);
            env_skill_put(sk,
                          ", then read the %s in the last passage and answered with it alone "
                          "(%s): one search per hop, the answer copied from the passage.",
                          final_rel, q->answer);
        }
    } else if (!answered && n_invalid * 2 >= SEED_MAX(steps, 1)) {
        env_skill_put(sk,
                      "Failure: %d of %d replies had no valid action, so no search ran and no "
                      "answer was given. Rule: put exactly one <search> query </search> or one "
                      "<answer> answer </answer> inside the action tags, never both.",
                      n_invalid, steps);
    } else if (!answered) {
        env_skill_put(sk, "Failure: ran out of turns after %d searches without answering",
                      n_search);
        int by = 0;
        for (int h = 0; h < q->n_need; h++) by = SEED_MAX(by, hop_step[h]);
        if (all_read)
            env_skill_put(sk, ", although every passage needed had been found by step %d", by);
        else
            env_skill_put(sk, "; the passage of %s was never found", c->ent[q->need[n_read]].name);
        env_skill_put(sk,
                      ". Rule: there are only %d turns: search once per hop, each time for the "
                      "exact name the last passage gave, and answer as soon as the %s is read.",
                      tr->e->max_steps, final_rel);
    } else if (n_search == 0) {
        env_skill_put(sk,
                      "Failure: answered '%s' without searching (the answer is %s). Rule: never "
                      "answer from memory; first search for %s, the entity named in the question, "
                      "and read the answer from the retrieved passages.",
                      ans, q->answer, c->ent[q->need[0]].name);
    } else if (!hop_step[0] && !cmp) {
        env_skill_put(sk,
                      "Failure: searched for the wrong entity: no search returned the passage of "
                      "%s, the entity named in the question, so the answer '%s' was a guess (the "
                      "answer is %s). Rule: search with the exact name from the question.",
                      c->ent[q->need[0]].name, ans, q->answer);
    } else if (!all_read) {
        int inter = -1;
        for (int h = 1; h < q->n_need && inter < 0; h++)
            if (sq_name_is(c, q->need[h], ans)) inter = h;
        if (cmp)
            env_skill_put(sk,
                          "Failure: compared without reading both passages: the passage of %s was "
                          "never retrieved, so '%s' was a guess (the answer is %s). Rule: search "
                          "for each of the two names and compare their years before answering.",
                          c->ent[q->need[n_read]].name, ans, q->answer);
        else if (inter >= 0)
            env_skill_put(sk,
                          "Failure: stopped after %d of %d hops and answered with the intermediate "
                          "entity %s (the %s) instead of following it to the %s (%s). Rule: the "
                          "question asks for the %s; search for each entity a passage names until "
                          "the passage that states it.",
                          n_read, q->n_need, c->ent[q->need[inter]].name,
                          sq_template_relation(q->tmpl, inter - 1), final_rel, q->answer,
                          final_rel);
        else
            env_skill_put(
                sk,
                "Failure: stopped after %d of %d hops: answered '%s' after reading the "
                "passage of %s without searching for %s (its %s), whose passage gives the "
                "answer %s. Rule: follow every hop with a new search before answering.",
                n_read, q->n_need, ans, c->ent[q->need[n_read - 1]].name,
                c->ent[q->need[n_read]].name, sq_template_relation(q->tmpl, n_read - 1), q->answer);
    } else {
        int inter = -1;
        for (int h = 0; h < q->n_need && inter < 0; h++)
            if (sq_name_is(c, q->need[h], ans)) inter = h;
        if (inter >= 0 && !cmp)
            env_skill_put(sk,
                          "Failure: read every passage but answered with %s, an entity on the way, "
                          "instead of its %s (%s). Rule: answer with what the question asks for, "
                          "the %s, not an entity named in it or on the way.",
                          c->ent[q->need[inter]].name, final_rel, q->answer, final_rel);
        else
            env_skill_put(sk,
                          "Failure: read the right passages but answered '%s' instead of %s, the "
                          "%s that the passage of %s gives. Rule: copy the answer exactly as the "
                          "passage writes it, and %s.",
                          ans, q->answer, final_rel, c->ent[last_need].name,
                          cmp ? "compare the two years before naming the winner"
                              : "answer only with the entity or year asked for");
    }
    /* step lines */
    int lines = 0;
    for (int i = 0; i < steps && lines < SQ_ORACLE_LINES; i++) {
        const sq_rec *r = &rec[i];
        if (won) {
            if (r->kind == SQ_ACT_SEARCH && r->found_hop >= 0) {
                env_skill_put(sk, "\nstep %d: search for '%s' to read its %s.", i + 1,
                              c->ent[q->need[r->found_hop]].name,
                              cmp ? "year" : sq_template_relation(q->tmpl, r->found_hop));
                lines++;
            } else if (r->kind == SQ_ACT_ANSWER) {
                if (cmp)
                    env_skill_put(sk, "\nstep %d: answer with the name whose year is the %s: %s.",
                                  i + 1, final_rel, q->answer);
                else
                    env_skill_put(sk,
                                  "\nstep %d: answer with the %s exactly as the passage gives it: "
                                  "%s.",
                                  i + 1, final_rel, q->answer);
                lines++;
            }
            continue;
        }
        int same = 0;
        const char *ec = "";
        size_t en = 0;
        int ek = sq_project(r->expert, strlen(r->expert), &ec, &en);
        if (ek == r->kind && ek == SQ_ACT_SEARCH)
            same = r->found_hop >= 0; /* a search that opened a new hop */
        else if (ek == r->kind && ek == SQ_ACT_ANSWER)
            same = sq_exact_match(r->text, strlen(r->text), q->answer);
        /* the expert itself could only guess here (a hop was never found): no rule */
        if (same || (ek == SQ_ACT_ANSWER && !sq_exact_match(ec, en, q->answer))) continue;
        char what[96];
        sq_clip(what, sizeof what, ec, en);
        if (ek == SQ_ACT_SEARCH)
            env_skill_put(sk, "\nstep %d: search for '%s'%s.", i + 1, what,
                          r->kind == SQ_ACT_ANSWER   ? " instead of answering"
                          : r->kind == SQ_ACT_SEARCH ? " by its exact name"
                                                     : " inside <search> </search>");
        else
            env_skill_put(sk, "\nstep %d: answer '%s'%s.", i + 1, what,
                          r->kind == SQ_ACT_SEARCH ? ": the passages already give it"
                                                   : ", copied from the passage");
        lines++;
    }
    env_skill_put(sk, "\n");
    free(rec);
    return 0;
}
