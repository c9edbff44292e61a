/* test_peer_ledger.c — how the learner counts lost work (learner/stats.h) and keeps its
 * counters in a checkpoint (learner/checkpoint.h).
 *
 * Checks: a peer that comes back under the same id as another incarnation has its
 * predecessor's in-flight episodes counted lost ("peer_restarted") and starts over; an
 * analyzer's loss is what the hub dealt it and did not get back, when that is more than it
 * reported; a silent peer's episodes are lost as "peer_timeout"; repeated failures of one
 * peer are logged once per interval with the count of those not logged; the checkpoint's
 * counter table sets, replaces and bounds its entries. Exact comparisons throughout. */
#include <stdio.h>
#include <string.h>

#include "learner/checkpoint.h"
#include "learner/stats.h"

#include "tests/check.h"

static uint64_t reason(const learner_reasons *r, const char *name) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->reason[i], name)) return r->count[i];
    return 0;
}

static void test_incarnations(void) {
    static learner_stats s;
    learner_stats_init(&s, 10);
    learner_peer *p = learner_stats_peer(&s, "actor-a", 1.0);
    CHECK(p && s.peers_joined == 1, "a new peer");
    CHECK(learner_stats_incarnation(&s, p, 0x11, 1.0) == 0 && p->incarnation == 0x11,
          "the first incarnation is learned, not a restart");
    p->in_flight = 3;
    p->episodes = 50;
    CHECK(learner_stats_incarnation(&s, p, 0x11, 2.0) == 0 && s.episodes_lost == 0, "same one");
    CHECK(learner_stats_incarnation(&s, p, 0, 2.0) == 0 && s.episodes_lost == 0,
          "a peer that does not say (0) is not a restart");
    CHECK(learner_stats_incarnation(&s, p, 0x22, 3.0) == 1, "a new incarnation is a restart");
    CHECK(s.episodes_lost == 3 && reason(&s.lost, "peer_restarted") == 3 && s.peers_lost == 1,
          "lost %llu, peer_restarted %llu, peers_lost %llu", (unsigned long long)s.episodes_lost,
          (unsigned long long)reason(&s.lost, "peer_restarted"), (unsigned long long)s.peers_lost);
    CHECK(!strcmp(p->id, "actor-a") && p->incarnation == 0x22 && p->in_flight == 0 &&
              p->episodes == 0 && p->first_seen == 3.0,
          "the entry starts over under the same id");

    /* an analyzer: the ledger says 4 dealt and not back, it reported 1 */
    learner_peer *a = learner_stats_peer(&s, "analyzer-0", 3.0);
    a->outstanding = 4;
    a->in_flight = 1;
    CHECK(learner_peer_in_flight(a) == 4, "the larger of ledger and report");
    a->in_flight = 6;
    CHECK(learner_peer_in_flight(a) == 6, "the larger of ledger and report");
    a->in_flight = 1;
    p->last_seen = 20.0;
    CHECK(learner_stats_expire(&s, 20.0, 10.0) == 1, "the silent analyzer is dropped");
    CHECK(s.episodes_lost == 7 && reason(&s.lost, "peer_timeout") == 4 && s.n_peers == 1,
          "lost %llu", (unsigned long long)s.episodes_lost);
    learner_stats_lose(&s, "analyzer_dropped", 0);
    CHECK(s.lost.n == 2, "losing nothing adds no reason");
    learner_stats_free(&s);
}

static void test_log_due(void) {
    static learner_stats s;
    learner_stats_init(&s, 10);
    uint64_t q = 99;
    CHECK(learner_stats_log_due(&s, 7, 1.0, 60.0, &q) == 1 && q == 0, "the first failure");
    CHECK(learner_stats_log_due(&s, 7, 2.0, 60.0, &q) == 0, "within the interval");
    CHECK(learner_stats_log_due(&s, 7, 50.0, 60.0, &q) == 0, "within the interval");
    CHECK(learner_stats_log_due(&s, 8, 50.0, 60.0, &q) == 1, "another peer is logged");
    CHECK(learner_stats_log_due(&s, 7, 61.5, 60.0, &q) == 1 && q == 2,
          "after the interval, with the 2 not logged (got %llu)", (unsigned long long)q);
    int lines = 0;
    for (int k = 0; k < 1000; k++) lines += learner_stats_log_due(&s, 7, 62.0 + k * 0.01, 60, &q);
    CHECK(lines == 0, "1000 failures in a second logged %d lines", lines);
    for (uint64_t key = 100; key < 100 + 3 * LEARNER_LOG_SLOTS; key++)
        CHECK(learner_stats_log_due(&s, key, 70.0, 60.0, &q) == 1, "a table full of peers");
    learner_stats_free(&s);
}

static void test_ckpt_counters(void) {
    static learner_ckpt_state st;
    memset(&st, 0, sizeof st);
    learner_ckpt_counter_set(&st, "episodes_lost", 5);
    learner_ckpt_counter_set(&st, "rejected.bad_logprob", 2);
    learner_ckpt_counter_set(&st, "episodes_lost", 9);
    CHECK(st.n_counters == 2 && learner_ckpt_counter_get(&st, "episodes_lost") == 9 &&
              learner_ckpt_counter_get(&st, "rejected.bad_logprob") == 2 &&
              learner_ckpt_counter_get(&st, "absent") == 0,
          "set, replace, get");
    char name[80];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    learner_ckpt_counter_set(&st, name, 1);
    learner_ckpt_counter_set(&st, "", 1);
    CHECK(st.n_counters == 2, "names of 0 or 64+ bytes are not kept");
    for (int i = 0; i < 2 * LEARNER_CKPT_MAX_COUNTERS; i++) {
        snprintf(name, sizeof name, "c%d", i);
        learner_ckpt_counter_set(&st, name, (uint64_t)i);
    }
    CHECK(st.n_counters == LEARNER_CKPT_MAX_COUNTERS, "the table is bounded");
}

int main(void) {
    test_incarnations();
    test_log_due();
    test_ckpt_counters();
    if (check_failures) {
        fprintf(stderr, "peer_ledger: %d check(s) failed\n", check_failures);
        return 1;
    }
    printf("peer_ledger: restarts, dead analyzers and silent peers counted lost; failures "
           "logged once per interval; checkpoint counters bounded\n");
    return 0;
}
