/* learner.h — seed-learner's state, shared by its I/O thread (learner_main.c: the hub,
 * telemetry, status socket) and its trainer thread (learner_trainer_thread.c: stages,
 * optimizer steps, weight publishing, checkpoints). Fields under `mu` are marked. */
#ifndef SEED_LEARNER_LEARNER_H
#define SEED_LEARNER_LEARNER_H

#include <pthread.h>
#include <stdint.h>

#include "roles/daemon.h"
#include "learner/acks.h"
#include "learner/checkpoint.h"
#include "learner/queue.h"
#include "learner/stats.h"
#include "learner/step.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "proto/weights.h"
#include "proto/wire.h"

/* An analyzer's credit on the hub: groups it asked for and has not been sent. */
typedef struct learner_credit {
    wire_peer who;
    char id[160]; /* the READY's sender: the analyzer's telemetry id, its ledger's key */
    int credit;
    double last; /* monotonic time of its last READY */
} learner_credit;

#define LEARNER_MAX_ANALYZERS 256
#define LEARNER_MAX_CREDIT 2 /* groups one analyzer may have asked for and not been sent */

/* An actor's rollout credit (learner_main.c grant_credit): groups it asked to start
 * (`want`, from its last READY) and groups granted to it that have not come back on
 * groups-in (`held`: being played, or granted and not started, or in transit). */
typedef struct learner_actor_credit {
    wire_peer who;
    char id[160];         /* the READY's sender: the actor's telemetry id */
    uint64_t incarnation; /* from its READY: a new one returns what the old one held */
    int want, held;
    double last; /* monotonic time of its last READY */
} learner_actor_credit;

#define LEARNER_MAX_ACTORS 1024

typedef struct learner {
    daemon_args a;
    job_config *job;
    void *ctx;
    void *groups_in, *groups_out, *scored_in, *telemetry, *status;
    wire_rx rx_in, rx_scored, rx_tel, rx_status, rx_out;
    /* socket monitors of the five sockets above (same order): connections that ended,
     * which is also how a message over the transport's ZMQ_MAXMSGSIZE shows (libzmq
     * closes the connection without another word) */
    void *mon[5];
    uint64_t disconnects[5];
    learner_credit credits[LEARNER_MAX_ANALYZERS]; /* I/O thread only */
    int n_credits, next_credit;
    learner_actor_credit actor_credits[LEARNER_MAX_ACTORS]; /* I/O thread only */
    int n_actor_credits, next_actor_credit;
    weights_pub *pub;
    struct zap *zap; /* the CURVE allow-list (proto/zap.h); NULL without CURVE */
    model *policy, *ref;
    tok *tk;
    learner_stepper *stepper; /* the optimizer step (learner/step.h) */
    char model_dir[1024], tokenizer_path[1100], ckpt_dir[1024], metrics_path[1100];
    char *config_json;
    weights_tensor *table;
    int n_table;
    /* trainer thread only: */
    struct learner_eval *ev; /* periodic evaluation (eval.every > 0) */
    int64_t eval_step;       /* step of the last evaluation, -1: none yet */
    struct tfevents *tb;     /* TensorBoard event file (learner/metrics.h) */
    int tb_failed, metrics_failed;
    /* The checkpoint to resume (found in main before any socket binds, so the status
     * socket never shows a step of one moment with a version of another). */
    int resume_found;
    char resume_path[4096];
    learner_ckpt_state resume;
    /* trainer thread only: when the last checkpoint was written (its step and seed_now()),
     * for checkpoint.every / checkpoint.every_minutes */
    int64_t ckpt_step;
    double ckpt_t;
    double t_start;

    pthread_t trainer;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu: */
    learner_q train_q; /* scored groups waiting for an optimizer step */
    learner_q hub_q;   /* episode groups waiting for an analyzer */
    uint64_t version;
    int64_t step, sft_steps;
    int stage;
    int stopping, trainer_done, trainer_rc;
    char trainer_err[SEED_ERRLEN];
    learner_step_stats last;
    char *eval_json; /* the last evaluation's report (learner/evaluate.h), or NULL */
    double wait_s, busy_s;
    /* Rollout credit (demand-driven actors): groups the step being trained took (0
     * between steps), the moving average of groups trained per version and of tokens
     * per group (0: none measured yet), steps whose batch was already queued when the
     * previous one ended, the credit granted to actors in total and the largest number
     * of groups ever outstanding (at actors, in the hub, at analyzers, queued or in
     * training) against the budget in force then */
    int training_groups;
    double groups_per_version, tokens_per_group;
    /* job.max_env_steps (the I/O thread sets them; under mu): the moving average of env
     * steps per received group, whether the env steps received plus those the actors'
     * credit will bring reached the budget (no more credit is granted), and whether, with
     * it reached, nothing is left at actors, in the hub or at analyzers: the trainer then
     * trains what is queued and stops, so every group the budget paid for is trained. */
    double env_steps_per_group;
    int budget_closed, budget_dry;
    uint64_t steps_ready, credit_granted;
    int outstanding_max, budget_at_max;
    uint64_t groups_in_n, groups_scored_n, groups_trained_n, episodes_trained_n;
    int step_groups; /* groups the last stage-2 step trained (metrics.jsonl "groups") */
    /* of those, the groups whose episodes all won / all lost (metrics.jsonl
     * "groups_all_won", "groups_all_lost") */
    int step_all_won, step_all_lost;
    uint64_t stale_hub, stale_train, malformed_groups;
    uint64_t malformed_base; /* malformed messages counted before a restart (checkpoint) */
    /* Episodes the run before a restart had dealt to analyzers and not had back (the
     * checkpoint's "dealt_outstanding"): scored groups no analyzer's ledger holds are taken
     * against it, and what is left when orphan_until (monotonic) passes is lost
     * ("learner_restart"). Under mu. */
    uint64_t orphan_dealt;
    double orphan_until;
    /* The groups-in acknowledgement ledger (learner/acks.h; under mu), whether it goes on
     * from a checkpoint's (then every seq an incarnation sent counts; else what it sent
     * before its first group reached this learner was another run's), the episodes of numbered
     * groups the validator refused (received, so not lost in transit; under mu), the journal
     * records the newest checkpoint holds (under mu) and the one being written (trainer
     * thread), and the ledger's grace clock: seconds the I/O thread spent reading
     * groups-in (a hub that holds actors back stops it; I/O thread only). */
    learner_acks acks;
    int acks_continuous;
    uint64_t episodes_refused;
    uint64_t acks_ckpt_n, acks_snap_n;
    double in_clock;
    int vocab; /* the model's vocab_size: token ids from peers must be below it (0: unknown) */
    /* training-signal counts (learner/samples.h, learner/step.h) */
    uint64_t scored_off_version, episodes_error, dropped_overlong, skipped_nonfinite;
    learner_stats st;
} learner;

/* The run's counters into st->counters and the groups-in ledger into st->acks, for the
 * checkpoint (caller holds mu). */
void learner_counters_save(learner *l, learner_ckpt_state *st);
/* After the checkpoint's save (saved: it succeeded): frees st->acks; the journal's
 * records the checkpoint now holds may be dropped. */
void learner_counters_done(learner *l, learner_ckpt_state *st, int saved);

/* Trainer thread entry (learner_trainer_thread.c). */
void *learner_trainer_main(void *arg);
/* Publish the policy's current parameters as version v (trainer thread only). */
int learner_publish(learner *l, uint64_t v, char *err, size_t errlen);
/* Checkpoint (trainer thread only) when `force` (a warm-start stage ended) or when the
 * cadence says so: checkpoint.every stage-2 steps or checkpoint.every_minutes, whichever
 * comes first, since the last one. */
int learner_checkpoint_due(learner *l, int force, char *err, size_t errlen);
/* Rollout credit (learner_main.c, caller holds mu): groups outstanding between a grant
 * and the end of the step that trains them, and the most that may be outstanding. */
int learner_credit_outstanding(const learner *l);
int learner_credit_budget(const learner *l);
/* Groups the train queue still lacks for the next step (caller holds mu; 0: a step can
 * start): with optim.groups_per_step, that many groups not stale at the current version;
 * without, enough groups for optim.tokens_per_step tokens (one unless the group size is
 * measured). */
int learner_step_short(const learner *l);

#endif
