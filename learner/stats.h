/* stats.h — the learner's rolling view of the job for the status socket and the
 * metrics log: success and return by env and task family over the last W episodes,
 * rates over a sliding window of counter snapshots, and the peer table (every actor
 * and analyzer with its last heartbeat). Plain data; the caller holds the lock. */
#ifndef SEED_LEARNER_STATS_H
#define SEED_LEARNER_STATS_H

#include <stdint.h>

#define LEARNER_MAX_KEYS 64
#define LEARNER_MAX_PEERS 256
#define LEARNER_RATE_SLOTS 64
#define LEARNER_MAX_REASONS 16 /* distinct episode-error reasons kept; the rest: "other" */
#define LEARNER_REASON_LEN 48  /* a reason is the error text up to its first ':' */

/* Counts by reason: a small bounded table (a flood of distinct texts cannot grow it). */
typedef struct learner_reasons {
    int n;
    char reason[LEARNER_MAX_REASONS][LEARNER_REASON_LEN + 1];
    uint64_t count[LEARNER_MAX_REASONS];
    uint64_t other; /* reasons that found the table full */
} learner_reasons;

/* Count n occurrences of the reason of error text `text` (its text up to the first ':',
 * at most LEARNER_REASON_LEN characters). */
void learner_reasons_add(learner_reasons *r, const char *text, uint64_t n);
/* Add every count of src into dst. */
void learner_reasons_merge(learner_reasons *dst, const learner_reasons *src);

typedef struct learner_roll {
    char key[96]; /* "sokoban" or "household/pick_and_place" */
    int cap, n, head;
    float *ret;
    unsigned char *won;
    uint64_t total;
} learner_roll;

typedef struct learner_peer {
    char id[160], host[96];
    int role; /* Seed__Role */
    uint32_t pid;
    uint64_t version;
    double first_seen, last_seen; /* monotonic */
    uint64_t episodes, env_steps, tokens_generated, tokens_scored, groups_sent, malformed,
        in_flight, env_errors;
    uint64_t groups_trained;  /* this actor's groups the learner trained on */
    uint64_t skill_fallbacks; /* analyzer: http skills replaced by the fallback */
    uint64_t incarnation;     /* the process behind the id (Hello/Heartbeat); 0: not told */
    /* analyzer: episodes the hub dealt to it and has not had back (scored or reported
     * dropped), and its last reported episodes_dropped */
    uint64_t outstanding, dropped_seen;
    int alive;
} learner_peer;

/* Counters that rates are computed from. */
enum {
    LEARNER_C_EPISODES,
    LEARNER_C_ENV_STEPS,
    LEARNER_C_ROLLOUT_TOKENS,
    LEARNER_C_SCORED_TOKENS,
    LEARNER_C_TRAIN_TOKENS,
    LEARNER_C_SAMPLES,
    LEARNER_C_STAGE1_HTTP_LABELS,     /* stage-1 skill labels the http analyzer wrote */
    LEARNER_C_STAGE1_SKILL_FALLBACKS, /* ... that fell back to the oracle */
    LEARNER_C_N
};

#define LEARNER_LOG_SLOTS 32 /* peers whose repeated failures are logged once per interval */

typedef struct learner_log_slot {
    uint64_t key;
    double t;
    uint64_t suppressed;
} learner_log_slot;

typedef struct learner_stats {
    int window;
    int n_rolls;
    learner_roll rolls[LEARNER_MAX_KEYS];
    int n_peers;
    learner_peer peers[LEARNER_MAX_PEERS];
    uint64_t peers_joined, peers_lost, episodes_lost;
    /* of episodes_lost, those the hub had received and dealt to an analyzer (the rest
     * were in flight at actors, never received): what closes the conservation of
     * received episodes (trained + stale + lost_received + queued) */
    uint64_t episodes_lost_received;
    learner_reasons episode_errors; /* episodes left out of training, by error reason */
    learner_reasons lost;           /* episodes_lost by reason */
    learner_reasons rejected;       /* peer messages refused by the validator, by reason */
    learner_log_slot log[LEARNER_LOG_SLOTS];
    uint64_t counters[LEARNER_C_N];
    double snap_t[LEARNER_RATE_SLOTS];
    uint64_t snap_c[LEARNER_RATE_SLOTS][LEARNER_C_N];
    int snap_n, snap_head;
} learner_stats;

int learner_stats_init(learner_stats *s, int window);
void learner_stats_free(learner_stats *s);
/* One finished episode of env/family. */
void learner_stats_episode(learner_stats *s, const char *env, const char *family, float ret,
                           int won);
/* Record a snapshot of the counters at time now (call about once a second). */
void learner_stats_snapshot(learner_stats *s, double now);
/* Rate of counter c per second over the last `seconds` of snapshots (0 when unknown). */
double learner_stats_rate(const learner_stats *s, int c, double seconds);
/* The peer with this id; NULL when the table has none. */
learner_peer *learner_stats_find(learner_stats *s, const char *id);
/* Find or add the peer with this id; NULL when the table is full. */
learner_peer *learner_stats_peer(learner_stats *s, const char *id, double now);
/* Mark peers silent for longer than timeout_s dead (counting their in-flight episodes
 * as lost, reason "peer_timeout") and drop them from the table. Returns how many were
 * dropped. */
int learner_stats_expire(learner_stats *s, double now, double timeout_s);
/* What a peer holds that dies with it: its reported in-flight episodes, or for an
 * analyzer the episodes dealt to it and not yet back, whichever is more. */
uint64_t learner_peer_in_flight(const learner_peer *p);

/* Episodes the hub dealt to analyzers and has not had back: every peer's ledger, also of
 * one whose READY came before its first heartbeat (its role not known yet). */
uint64_t learner_stats_dealt(const learner_stats *s);
/* Count n episodes lost for `reason`. */
void learner_stats_lose(learner_stats *s, const char *reason, uint64_t n);
/* Count what peer p held as lost for `reason`: an actor's in-flight episodes, an
 * analyzer's ledger (also counted as lost_received). */
void learner_stats_lose_peer(learner_stats *s, const char *reason, const learner_peer *p);
/* The peer p says it is incarnation inc: when it was another one before, that process
 * is gone and what it held is lost ("peer_restarted"); the entry starts over (id kept).
 * Returns 1 when a restart was counted. */
int learner_stats_incarnation(learner_stats *s, learner_peer *p, uint64_t inc, double now);
/* Rate-limited logging of repeated failures of one peer (key: a hash of it): 1 when a
 * line is due (the first, or interval_s after the last), with the count of failures not
 * logged since in *suppressed; 0 when this one is only counted. */
int learner_stats_log_due(learner_stats *s, uint64_t key, double now, double interval_s,
                          uint64_t *suppressed);

#endif
