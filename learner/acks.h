/* acks.h — the learner's end-to-end acknowledgement of groups-in: which EpisodeGroups each
 * actor incarnation sent and the learner never got (lost in transit: a cut link, a
 * learner killed holding them in its socket or after its last checkpoint).
 *
 * An actor numbers the groups it sends 1, 2, 3, ... per incarnation (EpisodeGroup.seq)
 * and its heartbeat says how many it sent (groups_sent). Per incarnation the ledger keeps
 * the settled prefix (every seq <= done was received or counted lost), the received seqs
 * past it (a window of LEARNER_ACKS_WINDOW), and the highest seq known sent. A seq known
 * sent is counted lost once that knowledge is `grace` old on the caller's clock (the
 * learner's clock runs only while it reads groups-in, so a group held back by a full hub
 * is not taken for lost) and it has not come. A group whose seq is already settled is
 * late (or a duplicate) and must be refused: it was counted once already.
 *
 * A ledger that starts a new run cannot tell which of an incarnation's seqs were sent to
 * it and which to another run's learner (an actor can outlive a learner). An incarnation
 * it hears of first by a claim stays unanchored: its claims are kept, nothing of it is
 * pending or settled, until its first group arrives, seq s. Groups on one connection
 * arrive in order, so seqs below s were sent before this ledger heard of it (another
 * run's, or lost before it began) and are settled without a count; the claims above s-1
 * then count from when they were made. A group in flight behind its actor's first
 * heartbeat is therefore received, not refused as late.
 *
 * Contract:
 *  - Plain data; the caller holds the lock. Clocks are the caller's (seconds).
 *  - Bounded: at most LEARNER_ACKS_MAX open incarnations; one silent for `idle` with
 *    nothing pending is closed, and its settled prefix kept among the last
 *    LEARNER_ACKS_CLOSED closed ones (one that comes back resumes from it). A group or a
 *    claim more than LEARNER_ACKS_WINDOW past the settled prefix is refused (FAR).
 *  - Persisted in a checkpoint (pack / unpack, with the journal's id and record count at
 *    the moment of the snapshot) and between checkpoints in a journal, an append-only
 *    file of what was received, claimed and anchored: a learner restarted from the checkpoint
 *    replays the records written after the snapshot, counting the groups the dead learner
 *    had received as lost in transit (they died with it: the checkpoint does not hold
 *    them). The journal survives the death of the process, not of the machine (no fsync
 *    per record). */
#ifndef SEED_LEARNER_ACKS_H
#define SEED_LEARNER_ACKS_H

#include <stddef.h>
#include <stdint.h>

#define LEARNER_ACKS_WINDOW 1024 /* seqs past the settled prefix one incarnation may be */
#define LEARNER_ACKS_EVIDENCE 16 /* times kept of when seqs became known sent */
#define LEARNER_ACKS_MAX 1024    /* open incarnations */
#define LEARNER_ACKS_CLOSED 4096 /* closed incarnations remembered (16 bytes each) */

typedef struct learner_ack {
    uint64_t incarnation;
    char actor[129];
    uint64_t done;  /* every seq <= done is settled: received or counted lost */
    uint64_t known; /* the highest seq known sent (received, or a heartbeat's count) */
    uint64_t win[LEARNER_ACKS_WINDOW / 64]; /* bit i: seq done + 1 + i received */
    /* seqs up to ev_upto[k] became known sent at ev_t[k] (oldest first) */
    int n_ev;
    uint64_t ev_upto[LEARNER_ACKS_EVIDENCE];
    double ev_t[LEARNER_ACKS_EVIDENCE];
    double last;  /* clock of its last group or claim */
    int anchored; /* 0: known only by claims so far (done == known, nothing pending) */
} learner_ack;

typedef struct learner_ack_closed {
    uint64_t incarnation, done;
} learner_ack_closed;

typedef struct learner_acks {
    int n, cap;
    learner_ack *v;
    int n_closed, closed_head;
    learner_ack_closed closed[LEARNER_ACKS_CLOSED];
    uint64_t received, lost; /* groups, since the ledger began (kept in the checkpoint) */
    /* the journal: its file, its id (random, in its header), the number of the last
     * record written (records are numbered on from the snapshot a learner resumed) */
    int fd;
    char path[1100];
    uint64_t journal_id, journal_n;
    uint64_t journal_upto; /* records up to it were dropped (compact) */
    int journal_errno;     /* set when a record could not be written (the journal is closed) */
} learner_acks;

enum {
    LEARNER_ACK_NEW = 0,   /* a group received for the first time */
    LEARNER_ACK_UNTRACKED, /* no incarnation or no seq: not numbered, not tracked */
    LEARNER_ACK_LATE = -1, /* its seq is settled already (counted lost, or a duplicate) */
    LEARNER_ACK_FAR = -2,  /* more than LEARNER_ACKS_WINDOW past the settled prefix */
    LEARNER_ACK_FULL = -3  /* a new incarnation with LEARNER_ACKS_MAX open */
};

void learner_acks_init(learner_acks *a);
void learner_acks_free(learner_acks *a); /* closes the journal */

/* Group `seq` of incarnation `inc` (sent by `actor`, may be NULL) arrived at time t.
 * `base`: for an incarnation the ledger has never seen, the seqs taken as settled before
 * it (0, or in a new run's ledger seq - 1: what it sent before its first group here).
 * Returns LEARNER_ACK_*. */
int learner_acks_group(learner_acks *a, const char *actor, uint64_t inc, uint64_t seq,
                       uint64_t base, double t);
/* A heartbeat of incarnation inc says it sent `sent` groups (at time t); as above
 * (LEARNER_ACK_NEW when taken, whether or not it told anything new). `anchor`: an
 * incarnation the ledger has never seen is anchored at 0 (every group it sent was meant
 * for this ledger: one continued from a checkpoint), or when 0 left unanchored until its
 * first group arrives. */
int learner_acks_sent(learner_acks *a, const char *actor, uint64_t inc, uint64_t sent, int anchor,
                      double t);
/* Count lost every seq known sent for at least `grace` and not received; close
 * incarnations silent for `idle` with nothing pending. Returns the groups counted lost. */
uint64_t learner_acks_tick(learner_acks *a, double t, double grace, double idle);
/* Seqs known sent and not settled (in transit, or waiting for the grace). */
uint64_t learner_acks_pending(const learner_acks *a);

/* The ledger as bytes (malloc'd) for a checkpoint, with the journal's id and count. */
int learner_acks_pack(const learner_acks *a, void **buf, size_t *len);
/* The ledger of a checkpoint (a's journal stays closed; evidence is dated t). Refuses
 * anything malformed, naming what. */
int learner_acks_unpack(learner_acks *a, const void *buf, size_t len, double t, char *err,
                        size_t errlen);

/* Open the journal at path. When it is the one the ledger's snapshot was taken against
 * (same id), the records written after the snapshot are replayed (received groups
 * counted lost into *lost, claims raising what is known sent, dated t) and kept; else a
 * new journal is started. */
int learner_acks_journal_open(learner_acks *a, const char *path, double t, uint64_t *lost,
                              char *err, size_t errlen);
/* Drop the journal's records up to number `upto` (the newest checkpoint's snapshot), when
 * more than `keep` records are held: a rewrite into a temp file renamed over it. */
int learner_acks_journal_compact(learner_acks *a, uint64_t upto, uint64_t keep, char *err,
                                 size_t errlen);

#endif
