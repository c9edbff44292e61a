/* validate.h — the job-aware checks on what a peer sends, one validator shared by the
 * learner (groups_in, scored_in, telemetry, groups_out) and the analyzer (the groups it
 * is dealt), so both call the same message valid or invalid for the same reason.
 *
 * Contract:
 *  - wire_validate (wire.h) runs first, on every received envelope: it checks shape only
 *    (parallel arrays, slots inside the prompt) and counts failures as malformed. The
 *    checks here need the job and the learner's state: env names the job runs, splits,
 *    policy versions not newer than the newest published one, values in range, bounded
 *    counts and strings. A caller drops what they reject and counts it under
 *    wire_reject_name(reason); nothing rejected reaches training or the status document.
 *  - The bounds (documented at each constant) are env-independent and generous: an
 *    honest peer of this job never reaches one. Rewards: finite and |r| <= 1e4 (every
 *    built-in env pays within [-10, 11]; a remote env's reward is a float of the same
 *    scale). Log-probs: finite and <= WIRE_LOGPROB_SLACK (a log-softmax is <= 0; the
 *    slack absorbs a backend's rounding).
 *  - An empty prompt with a non-empty response is invalid for both roles (no model can
 *    score a response without a prompt token before it); a step with no response is
 *    valid and carries no scores.
 *  - Pure functions: no allocation, no global state; `why` gets one sentence naming the
 *    episode, step and value. */
#ifndef SEED_PROTO_VALIDATE_H
#define SEED_PROTO_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/job.h"
#include "proto/seed.pb-c.h"

#define WIRE_MAX_ABS_REWARD 1e4f             /* |reward| and |episode_return| */
#define WIRE_LOGPROB_SLACK 1e-3f             /* log-probs (sample, s, q) must be <= this */
#define WIRE_MAX_NAME 128                    /* env, split, family, peer ids, hosts, roles */
#define WIRE_MAX_TEXT (256u << 10)           /* action, observation, error, skill texts */
#define WIRE_MAX_STEPS 4096                  /* steps per episode when the env sets no max_steps */
#define WIRE_MAX_PROMPT_TOKENS (1 << 20)     /* prompt tokens of a step, when the job sets none */
#define WIRE_MAX_SKILL_TOKENS 65536          /* spliced skill tokens of an analysis */
#define WIRE_MAX_COUNTER (UINT64_C(1) << 53) /* heartbeat counters (exact in JSON) */
#define WIRE_MAX_READY 64                    /* groups one READY may ask for */

/* Why a peer's message was refused. Names (wire_reject_name) are the keys of the
 * learner's status "rejected" object. */
typedef enum {
    WIRE_REJ_NONE = 0,
    WIRE_REJ_ENV,            /* "unknown_env": not one of the job's envs */
    WIRE_REJ_SPLIT,          /* "bad_split": not train, seen or unseen */
    WIRE_REJ_FUTURE_VERSION, /* "future_version": newer than the newest published */
    WIRE_REJ_LOGPROB,        /* "bad_logprob": a sample log-prob not finite or > 0 */
    WIRE_REJ_REWARD,         /* "bad_reward": a reward or return not finite or too large */
    WIRE_REJ_LENGTHS,        /* "bad_lengths": arrays that do not line up */
    WIRE_REJ_EMPTY_PROMPT,   /* "empty_prompt": a response with no prompt before it */
    WIRE_REJ_COUNTS,         /* "too_many": episodes, steps or tokens past the job's bound */
    WIRE_REJ_STRING,         /* "bad_string": a name or text too long or with odd bytes */
    WIRE_REJ_TOKEN,          /* "bad_token": a token id outside the vocabulary */
    WIRE_REJ_SCORES,         /* "bad_scores": s or q not finite or > 0 */
    WIRE_REJ_TELEMETRY,      /* "bad_telemetry": heartbeat counters past their bounds */
    WIRE_REJ_CREDIT,         /* "bad_credit": a READY without a name or asking < 0 / too many */
    WIRE_REJ_N
} wire_reject;

const char *wire_reject_name(wire_reject r); /* "unknown_env", ...; "none" for 0 */

/* What a message is checked against. */
typedef struct wire_limits {
    const job_config *job; /* env names, group size, max_new_tokens, ...; required */
    uint64_t max_version;  /* newest weights version published; UINT64_MAX: not checked */
    int vocab;             /* token ids must be below this (0: only >= 0 is checked) */
} wire_limits;

/* max_version UINT64_MAX, vocab 0. */
void wire_limits_init(wire_limits *lim, const job_config *job);

/* An in-flight count a peer of this job can honestly report: every episode of every
 * group an actor may hold (or the one group an analyzer scores), with room to spare. */
uint64_t wire_max_in_flight(const job_config *job);

/* 1 when s is a name: 1..max bytes of [A-Za-z0-9_.:@+-] ("" is allowed when optional). */
int wire_name_ok(const char *s, size_t max, int optional);

wire_reject wire_check_group(const Seed__EpisodeGroup *g, const wire_limits *lim, char *why,
                             size_t whylen);
/* The group inside (wire_check_group), then the analyses: texts and skill tokens bounded,
 * s and q finite and <= WIRE_LOGPROB_SLACK, scored_version not in the future. */
wire_reject wire_check_scored(const Seed__ScoredGroup *sg, const wire_limits *lim, char *why,
                              size_t whylen);
/* Hello or Heartbeat: names, a known role, counters <= WIRE_MAX_COUNTER and the in-flight
 * count <= wire_max_in_flight. */
wire_reject wire_check_hello(const Seed__Hello *h, const wire_limits *lim, char *why,
                             size_t whylen);
wire_reject wire_check_heartbeat(const Seed__Heartbeat *h, const wire_limits *lim, char *why,
                                 size_t whylen);
/* A Control from a peer: READY counts in [0, WIRE_MAX_READY], role a name. */
wire_reject wire_check_control(const Seed__Control *c, const wire_limits *lim, char *why,
                               size_t whylen);

#endif
