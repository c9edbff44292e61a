/* test_acks.c — the learner's groups-in acknowledgement ledger (learner/acks.h).
 *
 * Checks, with the caller's clock passed in (no sleeps): a hole in an incarnation's seqs
 * and a heartbeat's groups_sent above what arrived are counted lost only once the grace
 * has passed, a group arriving for a seq already counted (lost or received) is late, seqs
 * received out of order across the window's words settle the prefix, a claim or a seq too
 * far ahead is refused, the table is bounded, a silent incarnation is closed and resumes
 * where it was, the checkpoint bytes round-trip and malformed ones are refused, and the
 * journal: a learner restarted from a snapshot counts what its predecessor received after
 * the snapshot as lost, and a seq of it arriving again is late. Exact comparisons. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "learner/acks.h"

#include "tests/check.h"

#define GRACE 4.0

static void test_hole(void) {
    learner_acks a;
    learner_acks_init(&a);
    CHECK(learner_acks_group(&a, "actor-0", 0x11, 1, 0, 1.0) == LEARNER_ACK_NEW, "seq 1");
    CHECK(learner_acks_group(&a, "actor-0", 0x11, 3, 0, 2.0) == LEARNER_ACK_NEW, "seq 3");
    CHECK(learner_acks_sent(&a, "actor-0", 0x11, 3, 0, 2.5) == LEARNER_ACK_NEW, "sent 3");
    CHECK(learner_acks_pending(&a) == 1, "seq 2 pending: %llu",
          (unsigned long long)learner_acks_pending(&a));
    CHECK(learner_acks_tick(&a, 2.0 + GRACE - 0.01, GRACE, 100.0) == 0, "within the grace");
    CHECK(learner_acks_tick(&a, 2.0 + GRACE, GRACE, 100.0) == 1, "seq 2 lost after the grace");
    CHECK(a.lost == 1 && a.received == 2 && learner_acks_pending(&a) == 0, "lost %llu",
          (unsigned long long)a.lost);
    CHECK(learner_acks_group(&a, "actor-0", 0x11, 2, 0, 7.0) == LEARNER_ACK_LATE,
          "seq 2 after it was counted lost is late");
    CHECK(learner_acks_group(&a, "actor-0", 0x11, 3, 0, 7.0) == LEARNER_ACK_LATE,
          "seq 3 twice is refused too");
    CHECK(a.received == 2, "the late ones are not received");

    /* a claim above what arrived: seqs 4 and 5 lost; 6 arrives in time */
    CHECK(learner_acks_sent(&a, "actor-0", 0x11, 6, 0, 10.0) == LEARNER_ACK_NEW, "sent 6");
    CHECK(learner_acks_group(&a, "actor-0", 0x11, 6, 0, 11.0) == LEARNER_ACK_NEW, "seq 6");
    CHECK(learner_acks_tick(&a, 10.0 + GRACE, GRACE, 100.0) == 2, "4 and 5 lost");
    CHECK(learner_acks_group(&a, "actor-0", 0x11, 7, 0, 15.0) == LEARNER_ACK_NEW, "seq 7");
    CHECK(learner_acks_tick(&a, 30.0, GRACE, 100.0) == 0, "nothing more");
    CHECK(a.v[0].done == 7, "settled up to 7: %llu", (unsigned long long)a.v[0].done);

    /* not numbered: not tracked */
    CHECK(learner_acks_group(&a, "x", 0, 5, 0, 1.0) == LEARNER_ACK_UNTRACKED, "no incarnation");
    CHECK(learner_acks_group(&a, "x", 0x12, 0, 0, 1.0) == LEARNER_ACK_UNTRACKED, "no seq");
    CHECK(learner_acks_sent(&a, "x", 0, 9, 0, 1.0) == LEARNER_ACK_UNTRACKED, "no incarnation");
    learner_acks_free(&a);
}

static void test_window(void) {
    learner_acks a;
    learner_acks_init(&a);
    /* 1..200 without 70 and 130, out of order across the window's 64-bit words */
    for (uint64_t s = 200; s >= 1; s--)
        if (s != 70 && s != 130)
            CHECK(learner_acks_group(&a, "a", 7, s, 0, 1.0) == LEARNER_ACK_NEW, "seq %llu",
                  (unsigned long long)s);
    CHECK(a.v[0].done == 69 && learner_acks_pending(&a) == 2, "done %llu pending %llu",
          (unsigned long long)a.v[0].done, (unsigned long long)learner_acks_pending(&a));
    CHECK(learner_acks_group(&a, "a", 7, 70, 0, 2.0) == LEARNER_ACK_NEW, "seq 70");
    CHECK(a.v[0].done == 129, "done %llu", (unsigned long long)a.v[0].done);
    CHECK(learner_acks_group(&a, "a", 7, 130, 0, 2.0) == LEARNER_ACK_NEW, "seq 130");
    CHECK(a.v[0].done == 200 && learner_acks_pending(&a) == 0, "done %llu",
          (unsigned long long)a.v[0].done);
    CHECK(learner_acks_tick(&a, 100.0, GRACE, 1000.0) == 0, "nothing lost");
    /* too far ahead of the settled prefix: refused, nothing counted */
    CHECK(learner_acks_group(&a, "a", 7, 200 + LEARNER_ACKS_WINDOW + 1, 0, 3.0) == LEARNER_ACK_FAR,
          "a seq past the window");
    CHECK(learner_acks_sent(&a, "a", 7, 200 + LEARNER_ACKS_WINDOW + 1, 0, 3.0) == LEARNER_ACK_FAR,
          "a claim past the window");
    CHECK(learner_acks_sent(&a, "a", 7, (uint64_t)1 << 60, 0, 3.0) == LEARNER_ACK_FAR,
          "a claim of 2^60 groups");
    CHECK(learner_acks_sent(&a, "a", 7, 200 + LEARNER_ACKS_WINDOW, 0, 3.0) == LEARNER_ACK_NEW,
          "the window's last seq is taken");
    CHECK(learner_acks_tick(&a, 3.0 + GRACE, GRACE, 1000.0) == LEARNER_ACKS_WINDOW,
          "the whole window lost");
    learner_acks_free(&a);
}

static void test_base_close_bound(void) {
    learner_acks a;
    learner_acks_init(&a);
    /* an incarnation first heard of at 5 sent (another run's): 1..5 are not ours */
    CHECK(learner_acks_sent(&a, "b", 9, 5, 5, 1.0) == LEARNER_ACK_NEW, "first heard at 5");
    CHECK(learner_acks_group(&a, "b", 9, 3, 0, 1.0) == LEARNER_ACK_LATE, "seq 3 is before it");
    CHECK(learner_acks_group(&a, "b", 9, 6, 0, 1.0) == LEARNER_ACK_NEW, "seq 6");
    CHECK(learner_acks_tick(&a, 50.0, GRACE, 100.0) == 0 && a.n == 1, "nothing lost, open");
    /* silent for the idle time with nothing pending: closed, and back where it was */
    CHECK(learner_acks_tick(&a, 101.0, GRACE, 100.0) == 0 && a.n == 0 && a.n_closed == 1, "closed");
    CHECK(learner_acks_group(&a, "b", 9, 6, 0, 102.0) == LEARNER_ACK_LATE, "6 still counted");
    CHECK(learner_acks_group(&a, "b", 9, 7, 0, 102.0) == LEARNER_ACK_NEW && a.n == 1 &&
              a.n_closed == 0,
          "reopened at 7");
    /* pending evidence keeps an idle one open until it is settled */
    CHECK(learner_acks_sent(&a, "b", 9, 9, 0, 103.0) == LEARNER_ACK_NEW, "sent 9");
    CHECK(learner_acks_tick(&a, 103.0 + GRACE - 1, GRACE, 1.0) == 0 && a.n == 1,
          "open while 8 and 9 wait for the grace");
    CHECK(learner_acks_tick(&a, 103.0 + GRACE, GRACE, 1.0) == 2 && a.n == 0, "lost, closed");
    /* bounded: LEARNER_ACKS_MAX open incarnations */
    for (uint64_t i = 0; i < LEARNER_ACKS_MAX; i++)
        CHECK(learner_acks_group(&a, "c", 1000 + i, 1, 0, 200.0) == LEARNER_ACK_NEW, "inc %llu",
              (unsigned long long)i);
    CHECK(learner_acks_group(&a, "c", 5000, 1, 0, 200.0) == LEARNER_ACK_FULL, "full");
    CHECK(learner_acks_group(&a, "c", 1000, 2, 0, 200.0) == LEARNER_ACK_NEW, "open ones go on");
    learner_acks_free(&a);
}

static void test_pack(void) {
    learner_acks a, b;
    learner_acks_init(&a);
    learner_acks_init(&b);
    learner_acks_group(&a, "actor-1", 0x21, 1, 0, 1.0);
    learner_acks_group(&a, "actor-1", 0x21, 3, 0, 1.0);
    learner_acks_sent(&a, "actor-1", 0x21, 4, 0, 1.0);
    learner_acks_group(&a, "actor-2", 0x22, 1, 0, 1.0);
    learner_acks_tick(&a, 200.0, 1000.0, 100.0); /* 0x22 closed (nothing pending) */
    CHECK(a.n == 1 && a.n_closed == 1, "one open, one closed");
    void *buf = NULL;
    size_t len = 0;
    char err[512];
    CHECK(learner_acks_pack(&a, &buf, &len) == 0, "pack");
    CHECK(learner_acks_unpack(&b, buf, len, 50.0, err, sizeof err) == 0, "unpack: %s", err);
    CHECK(b.n == 1 && b.n_closed == 1 && b.received == 3 && !strcmp(b.v[0].actor, "actor-1") &&
              b.v[0].done == 1 && b.v[0].known == 4 && learner_acks_pending(&b) == 2,
          "the same ledger back");
    CHECK(learner_acks_tick(&b, 50.0 + GRACE - 1, GRACE, 1000.0) == 0,
          "what was pending waits its grace anew");
    CHECK(learner_acks_tick(&b, 50.0 + GRACE, GRACE, 1000.0) == 2, "2 and 4 lost");
    CHECK(learner_acks_group(&b, "actor-2", 0x22, 1, 0, 60.0) == LEARNER_ACK_LATE,
          "the closed one is remembered");
    /* malformed bytes are refused, naming the problem */
    unsigned char *bad = malloc(len);
    memcpy(bad, buf, len);
    CHECK(learner_acks_unpack(&b, bad, len - 3, 0, err, sizeof err) < 0 && strstr(err, "acks.bin"),
          "truncated: %s", err);
    bad[0] = 'X';
    CHECK(learner_acks_unpack(&b, bad, len, 0, err, sizeof err) < 0 &&
              strstr(err, "not a groups-in ledger"),
          "bad magic: %s", err);
    memcpy(bad, buf, len);
    bad[56 + 8] = 9; /* the first entry's settled prefix past its known */
    CHECK(learner_acks_unpack(&b, bad, len, 0, err, sizeof err) < 0 &&
              strstr(err, "not a valid ledger entry"),
          "done > known: %s", err);
    free(bad);
    free(buf);
    learner_acks_free(&a);
    learner_acks_free(&b);
}

static void test_journal(void) {
    char dir[] = "/tmp/seed-acks-XXXXXX", path[256], err[512];
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(path, sizeof path, "%s/groups_in.journal", dir);
    learner_acks a, b;
    learner_acks_init(&a);
    learner_acks_init(&b);
    uint64_t lost = 9;
    CHECK(learner_acks_journal_open(&a, path, 0, &lost, err, sizeof err) == 0 && lost == 0,
          "a new journal: %s", err);
    learner_acks_group(&a, "actor-0", 0x31, 1, 0, 1.0);
    learner_acks_group(&a, "actor-0", 0x31, 2, 0, 1.0);
    learner_acks_sent(&a, "actor-0", 0x31, 3, 0, 1.0);
    CHECK(a.journal_n == 3, "3 records: %llu", (unsigned long long)a.journal_n);
    void *snap = NULL;
    size_t len = 0;
    learner_acks_pack(&a, &snap, &len); /* the checkpoint */
    learner_acks_group(&a, "actor-0", 0x31, 3, 0, 2.0);
    learner_acks_group(&a, "actor-0", 0x31, 4, 0, 2.0);
    learner_acks_group(&a, "actor-9", 0x39, 1, 0, 2.0); /* an incarnation new since then */
    learner_acks_sent(&a, "actor-0", 0x31, 6, 0, 2.0);
    learner_acks_free(&a); /* killed: what came after the checkpoint is only in the journal */

    CHECK(learner_acks_unpack(&b, snap, len, 0, err, sizeof err) == 0, "restore: %s", err);
    CHECK(learner_acks_journal_open(&b, path, 10.0, &lost, err, sizeof err) == 0, "replay: %s",
          err);
    CHECK(lost == 3, "3 received after the checkpoint died with the learner: %llu",
          (unsigned long long)lost);
    CHECK(learner_acks_group(&b, "actor-0", 0x31, 4, 0, 11.0) == LEARNER_ACK_LATE,
          "seq 4 again is late");
    CHECK(learner_acks_group(&b, "actor-9", 0x39, 1, 0, 11.0) == LEARNER_ACK_LATE,
          "the new incarnation's seq 1 too");
    CHECK(learner_acks_tick(&b, 10.0 + GRACE, GRACE, 1000.0) == 2,
          "5 and 6, claimed after the checkpoint, lost after the grace");
    CHECK(b.journal_n == 7, "numbering goes on: %llu", (unsigned long long)b.journal_n);
    learner_acks_group(&b, "actor-0", 0x31, 7, 0, 20.0);
    CHECK(b.journal_n == 8, "appended: %llu", (unsigned long long)b.journal_n);

    /* a second restart from the same checkpoint replays everything after it again */
    learner_acks_free(&b);
    learner_acks_init(&b);
    learner_acks_unpack(&b, snap, len, 0, err, sizeof err);
    CHECK(learner_acks_journal_open(&b, path, 30.0, &lost, err, sizeof err) == 0 && lost == 4,
          "4 received after the checkpoint: %llu", (unsigned long long)lost);
    /* compaction drops what the newest checkpoint holds, past `keep` records */
    CHECK(learner_acks_journal_compact(&b, 3, 100, err, sizeof err) == 0 && b.journal_upto == 0,
          "under keep: nothing");
    CHECK(learner_acks_journal_compact(&b, 3, 2, err, sizeof err) == 0 && b.journal_upto == 3,
          "compacted: %s", err);
    learner_acks_free(&b);
    learner_acks_init(&b);
    learner_acks_unpack(&b, snap, len, 0, err, sizeof err);
    CHECK(learner_acks_journal_open(&b, path, 30.0, &lost, err, sizeof err) == 0 && lost == 4,
          "the records after the checkpoint survive compaction: %llu", (unsigned long long)lost);

    /* a journal of another run (or none) starts over: nothing replayed */
    learner_acks c;
    learner_acks_init(&c);
    CHECK(learner_acks_journal_open(&c, path, 0, &lost, err, sizeof err) == 0 && lost == 0 &&
              c.journal_id != b.journal_id,
          "a fresh ledger starts a new journal");
    learner_acks_free(&c);
    learner_acks_free(&b);
    free(snap);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    test_hole();
    test_window();
    test_base_close_bound();
    test_pack();
    test_journal();
    if (!check_failures) printf("acks: all checks passed\n");
    return check_failures != 0;
}
