/* queue.h — the learner's group queues: the hub's (episode groups waiting for an
 * analyzer) and the trainer's (scored groups waiting for an optimizer step).
 *
 * Contract: a queue keeps its envelopes in arrival order with each one's token count
 * (as pushed) and their sum. The queue owns what it holds; learner_q_take hands entries
 * back to the caller, learner_q_free frees whatever is still queued. Not locked: the
 * learner guards both queues with its mutex. */
#ifndef SEED_LEARNER_QUEUE_H
#define SEED_LEARNER_QUEUE_H

#include <stdint.h>

#include "proto/wire.h"

typedef struct learner_q {
    Seed__Envelope **v; /* oldest first */
    int64_t *tokens;    /* tokens[i]: what v[i] was pushed with */
    int n, cap;
    int64_t tokens_total; /* the sum of tokens[0..n) */
} learner_q;

/* Append e (the queue owns it on success). 0, or -1 when out of memory (e stays the
 * caller's). */
int learner_q_push(learner_q *q, Seed__Envelope *e, int64_t tokens);
/* Remove the k distinct entries at indices idx[0..k) (any order) in one pass: out[j]
 * gets the entry that was at idx[j] (the caller owns it now); the rest keep their order.
 * Taking index 0 alone pops the oldest. */
void learner_q_take(learner_q *q, const int *idx, int k, Seed__Envelope **out);
/* Free every queued envelope and the queue's arrays; the queue ends empty. */
void learner_q_free(learner_q *q);

/* Response/prompt tokens of a scored group (for token budgets). */
int64_t learner_group_tokens(const Seed__EpisodeGroup *g);

#endif
