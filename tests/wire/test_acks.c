/* test_acks.c — the learner's groups-in acknowledgement ledger (learner/acks.h).
 *
 * Checks, with the caller's clock passed in (no sleeps): a hole in an incarnation's seqs
 * and a heartbeat's groups_sent above what arrived are counted lost only once the grace
 * has passed, a group arriving for a seq already counted (lost or received) is late, seqs
 * received out of order across the window's words settle the prefix, a claim or a seq too
 * far ahead is refused, the table is bounded, a silent incarnation is closed and resumes
 * where it was, the checkpoint bytes round-trip and malformed ones are refused, and the
 * journal: a learner restarted from a snapshot counts what its predecessor received after
 * the snapshot as lost, and a seq of it arriving again is late. A new run's ledger that
 * hears of an incarnation by a claim first leaves it unanchored until its first group,
 * which is received (not late), in the live ledger, its checkpoint bytes (and the older
 * layout) and its journal's replay. Exact comparisons. */
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
    /* a new run's ledger first hears of an incarnation by its claim of 5 sent: which of
     * them were this run's it cannot tell yet; nothing pending, nothing lost */
    CHECK(learner_acks_sent(&a, "b", 9, 5, 0, 1.0) == LEARNER_ACK_NEW &&
              learner_acks_pending(&a) == 0,
          "first heard at 5: unanchored");
    CHECK(learner_acks_tick(&a, 1.0 + GRACE, GRACE, 100.0) == 0, "nothing lost before a group");
    /* its first group, seq 3, was in flight behind the claim: received, not late; 1 and 2
     * were sent before (another run's); 4 and 5 count from the claim */
    CHECK(learner_acks_group(&a, "b", 9, 3, 2, 5.0) == LEARNER_ACK_NEW, "seq 3 received");
    CHECK(learner_acks_pending(&a) == 2, "4 and 5 pending");
    CHECK(learner_acks_group(&a, "b", 9, 2, 1, 5.0) == LEARNER_ACK_LATE, "seq 2 is before it");
    CHECK(learner_acks_tick(&a, 5.0, GRACE, 100.0) == 2, "4 and 5, claimed at 1.0, lost");
    CHECK(learner_acks_group(&a, "b", 9, 6, 5, 5.0) == LEARNER_ACK_NEW, "seq 6");
    CHECK(learner_acks_tick(&a, 50.0, GRACE, 100.0) == 0 && a.n == 1, "nothing lost, open");
    /* silent for the idle time with nothing pending: closed, and back where it was */
    CHECK(learner_acks_tick(&a, 105.0, GRACE, 100.0) == 0 && a.n == 0 && a.n_closed == 1, "closed");
    CHECK(learner_acks_group(&a, "b", 9, 6, 0, 106.0) == LEARNER_ACK_LATE, "6 still counted");
    CHECK(learner_acks_group(&a, "b", 9, 7, 0, 106.0) == LEARNER_ACK_NEW && a.n == 1 &&
              a.n_closed == 0,
          "reopened at 7");
    /* pending evidence keeps an idle one open until it is settled */
    CHECK(learner_acks_sent(&a, "b", 9, 9, 0, 107.0) == LEARNER_ACK_NEW, "sent 9");
    CHECK(learner_acks_tick(&a, 107.0 + GRACE - 1, GRACE, 1.0) == 0 && a.n == 1,
          "open while 8 and 9 wait for the grace");
    CHECK(learner_acks_tick(&a, 107.0 + GRACE, GRACE, 1.0) == 2 && a.n == 0, "lost, closed");
    /* a claim of 0 sent anchors at once: everything it sends is this run's */
    CHECK(learner_acks_sent(&a, "d", 10, 0, 0, 110.0) == LEARNER_ACK_NEW, "sent 0");
    CHECK(learner_acks_sent(&a, "d", 10, 2, 0, 111.0) == LEARNER_ACK_NEW &&
              learner_acks_pending(&a) == 2,
          "sent 2: pending");
    CHECK(learner_acks_tick(&a, 111.0 + GRACE, GRACE, 1000.0) == 2, "1 and 2 lost");
    /* a new run's first group of an incarnation, seq 4: what came before is not ours */
    CHECK(learner_acks_group(&a, "e", 11, 4, 3, 120.0) == LEARNER_ACK_NEW, "seq 4");
    CHECK(learner_acks_group(&a, "e", 11, 2, 1, 120.0) == LEARNER_ACK_LATE, "seq 2 before it");
    CHECK(learner_acks_tick(&a, 120.0 + GRACE, GRACE, 1000.0) == 0, "nothing lost");
    /* a claim far past what the first group shows is dropped, not a loop of losses */
    CHECK(learner_acks_sent(&a, "f", 12, 5000, 0, 130.0) == LEARNER_ACK_NEW, "sent 5000");
    CHECK(learner_acks_group(&a, "f", 12, 1, 0, 131.0) == LEARNER_ACK_NEW &&
              learner_acks_pending(&a) == 0,
          "seq 1: the claim is past the window");
    learner_acks_free(&a);
    learner_acks_init(&a);
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
    learner_acks_tick(&a, 200.0, 1000.0, 100.0);         /* 0x22 closed (nothing pending) */
    learner_acks_sent(&a, "actor-3", 0x23, 7, 0, 200.0); /* unanchored: known by a claim */
    CHECK(a.n == 2 && a.n_closed == 1, "two open, one closed");
    void *buf = NULL;
    size_t len = 0;
    char err[512];
    CHECK(learner_acks_pack(&a, &buf, &len) == 0, "pack");
    CHECK(learner_acks_unpack(&b, buf, len, 50.0, err, sizeof err) == 0, "unpack: %s", err);
    CHECK(b.n == 2 && b.n_closed == 1 && b.received == 3 && !strcmp(b.v[0].actor, "actor-1") &&
              b.v[0].done == 1 && b.v[0].known == 4 && b.v[0].anchored && !b.v[1].anchored &&
              b.v[1].known == 7 && learner_acks_pending(&b) == 2,
          "the same ledger back");
    CHECK(learner_acks_tick(&b, 50.0 + GRACE - 1, GRACE, 1000.0) == 0,
          "what was pending waits its grace anew");
    CHECK(learner_acks_tick(&b, 50.0 + GRACE, GRACE, 1000.0) == 2, "2 and 4 lost");
    CHECK(learner_acks_group(&b, "actor-3", 0x23, 6, 5, 60.0) == LEARNER_ACK_NEW &&
              learner_acks_pending(&b) == 1,
          "the unanchored one anchors at its first group, its claim of 7 kept");
    CHECK(learner_acks_tick(&b, 50.0 + GRACE, GRACE, 1000.0) == 1, "7 lost, claimed at 50.0");
    /* the older layout (SEEDACK1: no flags word) reads as anchored entries */
    learner_acks c;
    learner_acks_init(&c);
    void *b1 = NULL;
    size_t len1 = 0;
    learner_acks_free(&a);
    learner_acks_init(&a);
    learner_acks_group(&a, "actor-1", 0x21, 2, 0, 1.0);
    CHECK(learner_acks_pack(&a, &b1, &len1) == 0, "pack one entry");
    unsigned char *v1 = b1;
    memcpy(v1, "SEEDACK1", 8);
    memmove(v1 + 56 + 32, v1 + 56 + 40, len1 - 56 - 40); /* drop the flags word */
    CHECK(learner_acks_unpack(&c, v1, len1 - 8, 0, err, sizeof err) == 0 && c.n == 1 &&
              c.v[0].anchored && c.v[0].done == 0 && c.v[0].known == 2 &&
              learner_acks_pending(&c) == 1,
          "SEEDACK1 read: %s", err);
    free(b1);
    learner_acks_free(&c);
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
    memcpy(bad, buf, len);
    bad[56 + 32] = 2; /* the first entry's flags: no such flag */
    CHECK(learner_acks_unpack(&b, bad, len, 0, err, sizeof err) < 0 &&
              strstr(err, "not a valid ledger entry"),
          "unknown flag: %s", err);
    free(bad);
    free(buf);
    learner_acks_free(&a);
    learner_acks_free(&b);
}

/* A new temp dir (dir: a "/tmp/seed-acks-XXXXXX" buffer) and the journal's path in it. */
static void journal_tmp(char *dir, char *path, size_t len) {
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(path, len, "%s/groups_in.journal", dir);
}

static void test_journal(void) {
    char dir[] = "/tmp/seed-acks-XXXXXX", path[256], err[512];
    journal_tmp(dir, path, sizeof path);
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

/* The journal of a new run's ledger replays what it learnt before its first group: an
 * incarnation known by a claim, then anchored by a group in flight behind that claim. */
static void test_journal_anchor(void) {
    char dir[] = "/tmp/seed-acks-XXXXXX", path[256], err[512];
    journal_tmp(dir, path, sizeof path);
    uint64_t lost = 9;
    learner_acks a;
    learner_acks_init(&a);
    CHECK(learner_acks_journal_open(&a, path, 0, &lost, err, sizeof err) == 0, "open: %s", err);
    learner_acks_group(&a, "actor-0", 0x41, 1, 0, 1.0); /* the ledger has a snapshot */
    void *snap = NULL;
    size_t len = 0;
    learner_acks_pack(&a, &snap, &len);
    /* after it: 0x42 claims 5 (its seqs 1..2 went to another run), seq 3 and 4 arrive;
     * 0x43 first shows by its seq 7 */
    learner_acks_sent(&a, "actor-1", 0x42, 5, 0, 2.0);
    learner_acks_group(&a, "actor-1", 0x42, 3, 2, 2.0);
    learner_acks_group(&a, "actor-1", 0x42, 4, 3, 2.0);
    learner_acks_group(&a, "actor-2", 0x43, 7, 6, 2.0);
    CHECK(a.journal_n == 1 + 6, "U, A, R, R, A, R after the snapshot: %llu",
          (unsigned long long)a.journal_n);
    learner_acks_free(&a); /* killed */

    learner_acks b;
    learner_acks_init(&b);
    CHECK(learner_acks_unpack(&b, snap, len, 0, err, sizeof err) == 0, "restore: %s", err);
    CHECK(learner_acks_journal_open(&b, path, 10.0, &lost, err, sizeof err) == 0 && lost == 3,
          "3 received after the checkpoint died with the learner: %llu (%s)",
          (unsigned long long)lost, err);
    CHECK(learner_acks_group(&b, "actor-1", 0x42, 2, 1, 11.0) == LEARNER_ACK_LATE &&
              learner_acks_group(&b, "actor-2", 0x43, 6, 5, 11.0) == LEARNER_ACK_LATE,
          "what came before the first groups is not counted");
    CHECK(learner_acks_pending(&b) == 1, "seq 5 of 0x42 pending");
    CHECK(learner_acks_tick(&b, 10.0 + GRACE, GRACE, 1000.0) == 1, "seq 5 lost after the grace");
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
    test_journal_anchor();
    if (!check_failures) printf("acks: all checks passed\n");
    return check_failures != 0;
}
