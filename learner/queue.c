/* queue.c — the learner's group queues (queue.h). */
#include "learner/queue.h"

#include <stdlib.h>

int learner_q_push(learner_q *q, Seed__Envelope *e, int64_t tokens) {
    if (q->n == q->cap) {
        int cap = q->cap ? q->cap * 2 : 64;
        Seed__Envelope **v = realloc(q->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        q->v = v;
        int64_t *t = realloc(q->tokens, sizeof *t * (size_t)cap);
        if (!t) return -1;
        q->tokens = t;
        q->cap = cap;
    }
    q->v[q->n] = e;
    q->tokens[q->n] = tokens;
    q->n++;
    q->tokens_total += tokens;
    return 0;
}

void learner_q_take(learner_q *q, const int *idx, int k, Seed__Envelope **out) {
    for (int j = 0; j < k; j++) {
        out[j] = q->v[idx[j]];
        q->tokens_total -= q->tokens[idx[j]];
        q->v[idx[j]] = NULL; /* taken: the pass below closes the gap */
    }
    int kept = 0;
    for (int i = 0; i < q->n; i++)
        if (q->v[i]) {
            q->v[kept] = q->v[i];
            q->tokens[kept++] = q->tokens[i];
        }
    q->n = kept;
}

void learner_q_free(learner_q *q) {
    for (int i = 0; i < q->n; i++) wire_free(q->v[i]);
    free(q->v);
    free(q->tokens);
    *q = (learner_q){0};
}

int64_t learner_group_tokens(const Seed__EpisodeGroup *g) {
    int64_t n = 0;
    for (size_t e = 0; e < g->n_episodes; e++)
        for (size_t s = 0; s < g->episodes[e]->n_steps; s++)
            n += (int64_t)(g->episodes[e]->steps[s]->n_prompt_ids +
                           g->episodes[e]->steps[s]->n_response_ids);
    return n;
}
