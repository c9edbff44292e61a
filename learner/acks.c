/* acks.c — see acks.h. */
#define _GNU_SOURCE /* getrandom */
#include "learner/acks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "proto/validate.h"

#define WORDS (LEARNER_ACKS_WINDOW / 64)
#define MAX_SEQ ((uint64_t)1 << 53) /* seqs and counts, as the validator bounds counters */

/* ---- one incarnation ---------------------------------------------------------------- */

static int bit(const learner_ack *e, uint64_t s) {
    uint64_t i = s - e->done - 1;
    return (int)((e->win[i / 64] >> (i % 64)) & 1u);
}

static int settled(const learner_ack *e, uint64_t s) {
    return s <= e->done || (s - e->done <= LEARNER_ACKS_WINDOW && bit(e, s));
}

/* The window moves k seqs on (the settled prefix grows by k). */
static void shift(learner_ack *e, uint64_t k) {
    e->done += k;
    if (k >= LEARNER_ACKS_WINDOW) {
        memset(e->win, 0, sizeof e->win);
        return;
    }
    unsigned w = (unsigned)(k / 64), b = (unsigned)(k % 64);
    for (unsigned i = 0; i < WORDS; i++) {
        uint64_t lo = i + w < WORDS ? e->win[i + w] : 0;
        uint64_t hi = i + w + 1 < WORDS ? e->win[i + w + 1] : 0;
        e->win[i] = b ? (lo >> b) | (hi << (64 - b)) : lo;
    }
}

/* Settle seq s (received, or counted lost); the prefix grows over what is settled. */
static void settle(learner_ack *e, uint64_t s) {
    uint64_t i = s - e->done - 1;
    e->win[i / 64] |= (uint64_t)1 << (i % 64);
    uint64_t k = 0;
    while (k < LEARNER_ACKS_WINDOW && ((e->win[k / 64] >> (k % 64)) & 1u)) k++;
    if (k) shift(e, k);
}

/* Seqs up to `upto` became known sent at t (the oldest evidence merges when full: its
 * seqs then wait longer, never less). Unanchored, the claim is kept as evidence and
 * nothing is pending yet (done follows known). */
static void know(learner_ack *e, uint64_t upto, double t) {
    if (upto <= e->known) return;
    e->known = upto;
    if (!e->anchored)
        e->done = upto;
    else if (upto <= e->done)
        return; /* all of it settled: nothing to wait for */
    if (e->n_ev == LEARNER_ACKS_EVIDENCE) {
        e->ev_upto[0] = e->ev_upto[1];
        e->ev_t[0] = e->ev_t[1];
        for (int k = 1; k + 1 < e->n_ev; k++) {
            e->ev_upto[k] = e->ev_upto[k + 1];
            e->ev_t[k] = e->ev_t[k + 1];
        }
        e->n_ev--;
    }
    e->ev_upto[e->n_ev] = upto;
    e->ev_t[e->n_ev++] = t;
}

/* An unanchored incarnation's first group is seq base + 1: the seqs up to base were sent
 * before this ledger heard of it and are settled without a count; its claims above base
 * (within the window) wait for their grace from when they were made. */
static void anchor(learner_ack *e, uint64_t base) {
    e->anchored = 1;
    e->done = e->known = base;
    memset(e->win, 0, sizeof e->win);
    int n = 0;
    for (int k = 0; k < e->n_ev; k++) {
        if (e->ev_upto[k] <= base || e->ev_upto[k] - base > LEARNER_ACKS_WINDOW) continue;
        e->ev_upto[n] = e->ev_upto[k];
        e->ev_t[n++] = e->ev_t[k];
        e->known = SEED_MAX(e->known, e->ev_upto[k]);
    }
    e->n_ev = n;
}

/* Every seq up to `upto` not settled is lost: how many. */
static uint64_t lose_upto(learner_ack *e, uint64_t upto) {
    uint64_t lost = 0;
    while (e->done < upto) {
        uint64_t s = e->done + 1;
        if (!bit(e, s)) lost++;
        shift(e, 1);
    }
    return lost;
}

static learner_ack *find(learner_acks *a, uint64_t inc) {
    for (int i = 0; i < a->n; i++)
        if (a->v[i].incarnation == inc) return &a->v[i];
    return NULL;
}

/* The open entry of inc: found, reopened from the closed ones, or new with `base`
 * settled (anchored, or when !anchored known only by claims). *created says whether it
 * is new to the ledger. NULL when the table is full (or out of memory). */
static learner_ack *entry(learner_acks *a, const char *actor, uint64_t inc, uint64_t base,
                          int anchored, double t, int *created) {
    learner_ack *e = find(a, inc);
    *created = 0;
    if (!e) {
        if (a->n == LEARNER_ACKS_MAX) return NULL;
        if (a->n == a->cap) {
            int cap = a->cap ? 2 * a->cap : 16;
            learner_ack *v = realloc(a->v, (size_t)cap * sizeof *v);
            if (!v) return NULL;
            a->v = v;
            a->cap = cap;
        }
        e = &a->v[a->n++];
        memset(e, 0, sizeof *e);
        e->incarnation = inc;
        e->done = e->known = base;
        e->anchored = anchored;
        *created = 1;
        for (int k = 0; k < a->n_closed; k++) {
            learner_ack_closed *c = &a->closed[k];
            if (c->incarnation == inc) { /* back after it was closed: where it was */
                e->done = e->known = c->done;
                e->anchored = 1;
                *created = 0;
                *c = a->closed[--a->n_closed];
                break;
            }
        }
    }
    if (actor && actor[0]) snprintf(e->actor, sizeof e->actor, "%s", actor);
    e->last = t;
    return e;
}

/* ---- the journal ------------------------------------------------------------------- */

#define JOURNAL_MAGIC "SEEDJRN1"
#define JOURNAL_HEADER 16
#define JOURNAL_RECORD 32

static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t record_check(const unsigned char *r) {
    return (uint32_t)seed_fnv1a64(r, JOURNAL_RECORD - 4);
}

/* A record: number, incarnation, seq, kind, check. Kinds: 'R' seq received, 'S' seq
 * claimed sent, 'U' a new incarnation known only by its claim of seq, 'A' an incarnation
 * anchored with seq settled before it (only where that is not 0 for a new one). A journal
 * without 'U' and 'A' records (older) replays every incarnation anchored at 0. */
static void journal_add(learner_acks *a, int kind, uint64_t inc, uint64_t seq) {
    if (a->fd < 0) return;
    unsigned char r[JOURNAL_RECORD];
    put64(r, a->journal_n + 1);
    put64(r + 8, inc);
    put64(r + 16, seq);
    r[24] = (unsigned char)kind;
    r[25] = r[26] = r[27] = 0;
    uint32_t c = record_check(r);
    for (int i = 0; i < 4; i++) r[28 + i] = (unsigned char)(c >> (8 * i));
    ssize_t w = write(a->fd, r, sizeof r);
    if (w != (ssize_t)sizeof r) { /* a journal with a hole is worse than none */
        a->journal_errno = w < 0 ? errno : ENOSPC;
        close(a->fd);
        a->fd = -1;
        return;
    }
    a->journal_n++;
}

/* ---- the ledger -------------------------------------------------------------------- */

void learner_acks_init(learner_acks *a) {
    memset(a, 0, sizeof *a);
    a->fd = -1;
}

void learner_acks_free(learner_acks *a) {
    if (a->fd >= 0) close(a->fd);
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
    a->fd = -1;
}

int learner_acks_group(learner_acks *a, const char *actor, uint64_t inc, uint64_t seq,
                       uint64_t base, double t) {
    if (!inc || !seq) return LEARNER_ACK_UNTRACKED;
    if (seq > MAX_SEQ) return LEARNER_ACK_FAR;
    int created;
    base = SEED_MIN(base, seq - 1);
    learner_ack *e = entry(a, actor, inc, base, 1, t, &created);
    if (!e) return LEARNER_ACK_FULL;
    if (!e->anchored) {
        anchor(e, seq - 1);
        journal_add(a, 'A', inc, seq - 1);
    } else if (created && base) {
        journal_add(a, 'A', inc, base);
    }
    if (settled(e, seq)) return LEARNER_ACK_LATE;
    if (seq - e->done > LEARNER_ACKS_WINDOW) return LEARNER_ACK_FAR;
    settle(e, seq);
    know(e, seq, t); /* a seq past the known: those below it are known sent now */
    a->received++;
    journal_add(a, 'R', inc, seq);
    return LEARNER_ACK_NEW;
}

int learner_acks_sent(learner_acks *a, const char *actor, uint64_t inc, uint64_t sent,
                      int anchor_new, double t) {
    if (!inc) return LEARNER_ACK_UNTRACKED;
    if (sent > MAX_SEQ) return LEARNER_ACK_FAR;
    int created;
    learner_ack *e = entry(a, actor, inc, 0, anchor_new, t, &created);
    if (!e) return LEARNER_ACK_FULL;
    if (created && !sent) e->anchored = 1; /* it has sent nothing yet: all it sends is ours */
    if (sent <= e->known) return LEARNER_ACK_NEW;
    if (e->anchored && sent - e->done > LEARNER_ACKS_WINDOW) return LEARNER_ACK_FAR;
    know(e, sent, t);
    journal_add(a, created && !e->anchored ? 'U' : 'S', inc, sent);
    return LEARNER_ACK_NEW;
}

uint64_t learner_acks_tick(learner_acks *a, double t, double grace, double idle) {
    uint64_t lost = 0;
    for (int i = 0; i < a->n;) {
        learner_ack *e = &a->v[i];
        while (e->anchored && e->n_ev && t - e->ev_t[0] >= grace) {
            lost += lose_upto(e, e->ev_upto[0]);
            for (int k = 0; k + 1 < e->n_ev; k++) {
                e->ev_upto[k] = e->ev_upto[k + 1];
                e->ev_t[k] = e->ev_t[k + 1];
            }
            e->n_ev--;
        }
        if (e->done >= e->known && t - e->last >= idle) {
            learner_ack_closed c = {e->incarnation, e->done};
            if (a->n_closed < LEARNER_ACKS_CLOSED) {
                a->closed[a->n_closed++] = c;
            } else { /* the ring: the oldest closed is forgotten */
                a->closed[a->closed_head] = c;
                a->closed_head = (a->closed_head + 1) % LEARNER_ACKS_CLOSED;
            }
            a->v[i] = a->v[--a->n];
            continue;
        }
        i++;
    }
    a->lost += lost;
    return lost;
}

uint64_t learner_acks_pending(const learner_acks *a) {
    uint64_t n = 0;
    for (int i = 0; i < a->n; i++) {
        const learner_ack *e = &a->v[i];
        if (e->known <= e->done) continue;
        uint64_t set = 0;
        for (int k = 0; k < WORDS; k++) set += (uint64_t)__builtin_popcountll(e->win[k]);
        n += e->known - e->done - set;
    }
    return n;
}

/* ---- checkpoint bytes -------------------------------------------------------------- */

/* SEEDACK2; SEEDACK1 (read only) lacks the flags word: every entry anchored */
#define PACK_MAGIC "SEEDACK2"
#define PACK_MAGIC_V1 "SEEDACK1"
#define PACK_ENTRY (8 * (5 + WORDS)) /* incarnation, done, known, actor length, flags, window */
#define PACK_UNANCHORED 1u           /* flags: known only by its claims */

int learner_acks_pack(const learner_acks *a, void **buf, size_t *len) {
    size_t n = 8 + 8 * 6 + (size_t)a->n_closed * 16;
    for (int i = 0; i < a->n; i++) n += PACK_ENTRY + strlen(a->v[i].actor);
    unsigned char *p = malloc(n), *q = p;
    if (!p) return -1;
    memcpy(q, PACK_MAGIC, 8);
    q += 8;
    uint64_t head[6] = {a->journal_id, a->journal_n,   a->received,
                        a->lost,       (uint64_t)a->n, (uint64_t)a->n_closed};
    for (int i = 0; i < 6; i++, q += 8) put64(q, head[i]);
    for (int i = 0; i < a->n; i++) {
        const learner_ack *e = &a->v[i];
        size_t al = strlen(e->actor);
        uint64_t f[5] = {e->incarnation, e->done, e->known, al, e->anchored ? 0 : PACK_UNANCHORED};
        for (int k = 0; k < 5; k++, q += 8) put64(q, f[k]);
        for (int k = 0; k < WORDS; k++, q += 8) put64(q, e->win[k]);
        memcpy(q, e->actor, al);
        q += al;
    }
    for (int k = 0; k < a->n_closed; k++, q += 16) {
        put64(q, a->closed[k].incarnation);
        put64(q + 8, a->closed[k].done);
    }
    *buf = p;
    *len = n;
    return 0;
}

int learner_acks_unpack(learner_acks *a, const void *buf, size_t len, double t, char *err,
                        size_t errlen) {
    const unsigned char *p = buf, *end = p + len;
    learner_acks_free(a);
    learner_acks_init(a);
    int v1 = len >= 8 && !memcmp(p, PACK_MAGIC_V1, 8);
    size_t entry_len = PACK_ENTRY - (v1 ? 8 : 0);
    if (len < 56 || (!v1 && memcmp(p, PACK_MAGIC, 8)))
        return seed_errf(err, errlen, "acks.bin: not a groups-in ledger (%zu bytes)", len);
    p += 8;
    uint64_t head[6];
    for (int i = 0; i < 6; i++, p += 8) head[i] = get64(p);
    if (head[4] > LEARNER_ACKS_MAX || head[5] > LEARNER_ACKS_CLOSED || head[1] > MAX_SEQ ||
        head[2] > MAX_SEQ || head[3] > MAX_SEQ)
        return seed_errf(err, errlen,
                         "acks.bin: %llu open and %llu closed incarnations, journal record "
                         "%llu, counts %llu/%llu: past the bounds (%d, %d, 2^53)",
                         (unsigned long long)head[4], (unsigned long long)head[5],
                         (unsigned long long)head[1], (unsigned long long)head[2],
                         (unsigned long long)head[3], LEARNER_ACKS_MAX, LEARNER_ACKS_CLOSED);
    a->journal_id = head[0];
    a->journal_n = head[1];
    a->received = head[2];
    a->lost = head[3];
    for (uint64_t i = 0; i < head[4]; i++) {
        if ((size_t)(end - p) < entry_len) goto short_;
        uint64_t inc = get64(p), done = get64(p + 8), known = get64(p + 16), al = get64(p + 24);
        uint64_t flags = v1 ? 0 : get64(p + 32);
        p += v1 ? 32 : 40;
        uint64_t win[WORDS];
        for (int k = 0; k < WORDS; k++, p += 8) win[k] = get64(p);
        if (al > 128 || (size_t)(end - p) < al) goto short_;
        char actor[129];
        memcpy(actor, p, al);
        actor[al] = '\0';
        p += al;
        if (!inc || known > MAX_SEQ || done > known || known - done > LEARNER_ACKS_WINDOW ||
            (al && !wire_name_ok(actor, 128, 0)) || find(a, inc) || flags > PACK_UNANCHORED ||
            (flags && done != known))
            return seed_errf(err, errlen,
                             "acks.bin: incarnation %llu (entry %llu): settled %llu, known "
                             "sent %llu, flags %llu, actor '%s': not a valid ledger entry",
                             (unsigned long long)inc, (unsigned long long)i,
                             (unsigned long long)done, (unsigned long long)known,
                             (unsigned long long)flags,
                             al && wire_name_ok(actor, 128, 0) ? actor : "?");
        for (uint64_t b = known - done; b < LEARNER_ACKS_WINDOW; b++)
            if ((win[b / 64] >> (b % 64)) & 1u)
                return seed_errf(err, errlen,
                                 "acks.bin: incarnation %llu has seq %llu received, past the "
                                 "%llu known sent",
                                 (unsigned long long)inc, (unsigned long long)(done + b + 1),
                                 (unsigned long long)known);
        int created;
        learner_ack *e = entry(a, actor, inc, done, !flags, t, &created);
        if (!e) return seed_errf(err, errlen, "out of memory reading acks.bin");
        e->known = known;
        memcpy(e->win, win, sizeof win);
        if (known > done || (flags && known)) { /* what was pending (or claimed) waits its
                                                 * grace anew */
            e->ev_upto[0] = known;
            e->ev_t[0] = t;
            e->n_ev = 1;
        }
    }
    if ((size_t)(end - p) != head[5] * 16) goto short_;
    for (uint64_t k = 0; k < head[5]; k++, p += 16) {
        a->closed[k].incarnation = get64(p);
        a->closed[k].done = get64(p + 8);
    }
    a->n_closed = (int)head[5];
    return 0;
short_:
    learner_acks_free(a);
    learner_acks_init(a);
    return seed_errf(err, errlen,
                     "acks.bin: %zu bytes do not hold the %llu + %llu entries "
                     "its header counts",
                     len, (unsigned long long)head[4], (unsigned long long)head[5]);
}

/* ---- journal files ----------------------------------------------------------------- */

/* Write header + the records of `recs` numbered above `after` to path (temp + rename),
 * then open it for appending. */
static int journal_rewrite(learner_acks *a, const unsigned char *recs, size_t n_recs,
                           uint64_t after, char *err, size_t errlen) {
    size_t cap = JOURNAL_HEADER + n_recs * JOURNAL_RECORD, len = JOURNAL_HEADER;
    unsigned char *b = malloc(cap);
    if (!b) return seed_errf(err, errlen, "out of memory rewriting %s", a->path);
    memcpy(b, JOURNAL_MAGIC, 8);
    put64(b + 8, a->journal_id);
    for (size_t i = 0; i < n_recs; i++) {
        const unsigned char *r = recs + i * JOURNAL_RECORD;
        if (get64(r) <= after) continue;
        memcpy(b + len, r, JOURNAL_RECORD);
        len += JOURNAL_RECORD;
    }
    if (a->fd >= 0) close(a->fd);
    a->fd = -1;
    int rc = seed_write_file_atomic(a->path, b, len, err, errlen);
    free(b);
    if (rc) return -1;
    a->fd = open(a->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (a->fd < 0) return seed_errf(err, errlen, "cannot open %s: %s", a->path, strerror(errno));
    a->journal_errno = 0;
    return 0;
}

/* The whole records of a journal file whose header is `id` (NULL when it is not). */
static unsigned char *journal_read(const char *path, uint64_t id, size_t *n_recs) {
    char *text = NULL, err[SEED_ERRLEN];
    size_t len = 0;
    *n_recs = 0;
    if (seed_read_file(path, &text, &len, err, sizeof err)) return NULL;
    const unsigned char *b = (const unsigned char *)text;
    if (len < JOURNAL_HEADER || memcmp(b, JOURNAL_MAGIC, 8) || get64(b + 8) != id) {
        free(text);
        return NULL;
    }
    size_t n = (len - JOURNAL_HEADER) / JOURNAL_RECORD, good = 0;
    unsigned char *recs = malloc(n * JOURNAL_RECORD + 1);
    for (size_t i = 0; recs && i < n; i++) {
        const unsigned char *r = b + JOURNAL_HEADER + i * JOURNAL_RECORD;
        uint32_t c = 0;
        for (int k = 0; k < 4; k++) c |= (uint32_t)r[28 + k] << (8 * k);
        if (c != record_check(r)) break; /* a torn last record: what follows is not ours */
        memcpy(recs + good++ * JOURNAL_RECORD, r, JOURNAL_RECORD);
    }
    free(text);
    *n_recs = good;
    return recs;
}

int learner_acks_journal_open(learner_acks *a, const char *path, double t, uint64_t *lost,
                              char *err, size_t errlen) {
    *lost = 0;
    snprintf(a->path, sizeof a->path, "%s", path);
    size_t n = 0;
    unsigned char *recs = a->journal_id ? journal_read(path, a->journal_id, &n) : NULL;
    uint64_t after = a->journal_n;
    if (!recs) { /* a new journal, numbered on from the snapshot */
        uint64_t id = 0;
        if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
            id = seed_hash_mix((uint64_t)(seed_wall() * 1e9), (uint64_t)getpid());
        a->journal_id = id ? id : 1;
        return journal_rewrite(a, NULL, 0, 0, err, errlen);
    }
    for (size_t i = 0; i < n; i++) { /* replay what came after the snapshot */
        const unsigned char *r = recs + i * JOURNAL_RECORD;
        uint64_t num = get64(r), inc = get64(r + 8), seq = get64(r + 16);
        if (num <= after) continue;
        if (num > a->journal_n) a->journal_n = num;
        int created;
        if (r[24] == 'S' || r[24] == 'U') {
            learner_acks_sent(a, NULL, inc, seq, r[24] == 'S', t);
        } else if (r[24] == 'A' && inc && seq <= MAX_SEQ) {
            learner_ack *e = entry(a, NULL, inc, seq, 1, t, &created);
            if (e && !e->anchored) anchor(e, seq);
        } else if (r[24] == 'R' && inc && seq && seq <= MAX_SEQ) {
            /* received by a learner that died before checkpointing it: lost with it */
            learner_ack *e = entry(a, NULL, inc, 0, 1, t, &created);
            if (e && !e->anchored) anchor(e, seq - 1);
            if (e && !settled(e, seq) && seq - e->done <= LEARNER_ACKS_WINDOW) {
                settle(e, seq);
                know(e, seq, t);
                (*lost)++;
            }
        }
    }
    a->lost += *lost;
    int rc = journal_rewrite(a, recs, n, after, err, errlen);
    free(recs);
    return rc;
}

int learner_acks_journal_compact(learner_acks *a, uint64_t upto, uint64_t keep, char *err,
                                 size_t errlen) {
    struct stat sb;
    if (a->fd < 0 || upto <= a->journal_upto || fstat(a->fd, &sb) != 0) return 0;
    size_t n_file =
        sb.st_size > JOURNAL_HEADER ? (size_t)(sb.st_size - JOURNAL_HEADER) / JOURNAL_RECORD : 0;
    if (n_file <= keep) return 0;
    size_t n = 0;
    unsigned char *recs = journal_read(a->path, a->journal_id, &n);
    if (!recs) return seed_errf(err, errlen, "%s: cannot read it back to compact it", a->path);
    int rc = journal_rewrite(a, recs, n, upto, err, errlen);
    free(recs);
    if (!rc) a->journal_upto = upto;
    return rc;
}
