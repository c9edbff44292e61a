/* checkpoint.h — the learner's checkpoints: a directory a person can load in
 * transformers (model.safetensors + config.json + tokenizer.json) plus what an exact
 * resume needs (optimizer.safetensors with fp32 master weights and AdamW's moments,
 * trainer_state.json with the step, weights version, optimizer step count and a size and
 * CRC-32C of every other file, pending.bin with the scored groups received but not
 * yet trained on, so a clean stop loses no episode, and acks.bin with the groups-in
 * ledger of learner/acks.h).
 *
 * Layout: <ckpt_dir>/step-<N>/ (stage 2, N optimizer steps) and <ckpt_dir>/sft-<N>/
 * (stages 0 and 1, N warm-start steps); <ckpt_dir>/latest holds the name of the newest.
 * The reference policy for the KL term is kept once in <ckpt_dir>/ref/.
 *
 * Contract:
 *  - A save writes every file into a temp dir, fsyncs each file and the dir, renames it
 *    into place (atomically exchanging an older dir of the same name), fsyncs ckpt_dir,
 *    and only then switches `latest` (temp file, fsync, rename, fsync of ckpt_dir). A crash
 *    at any point leaves `latest` naming a complete checkpoint; leftovers of a crashed save
 *    are removed by the next one.
 *  - Nothing in a checkpoint is trusted on load: `latest` must name a step-N or sft-N
 *    directory right inside ckpt_dir; trainer_state.json must hold whole numbers in range
 *    (stage 0..2, step, sft_steps and version >= 0, a warm-start checkpoint at step 0 and
 *    version 0, a stage-2 one with version >= step; "counters", when present, an object of
 *    at most LEARNER_CKPT_MAX_COUNTERS names of 1..63 bytes with whole numbers in
 *    [0, 2^53]); every file must have the size and
 *    CRC-32C recorded at save; the optimizer's master weights and moments must be finite
 *    (second moments >= 0); pending.bin must be whole records. A refusal names the file and
 *    the problem, and the newest other checkpoint of ckpt_dir that validates, with how to
 *    resume from it.
 *  - Test hook: with SEED_CKPT_CRASH=files|rename|latest in the environment a save aborts
 *    at that point (files written / checkpoint renamed into place / new `latest` written
 *    but not yet renamed), as a crash would, so tests can check what it leaves behind. */
#ifndef SEED_LEARNER_CHECKPOINT_H
#define SEED_LEARNER_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

#define LEARNER_CKPT_MAX_COUNTERS 64
#define LEARNER_CKPT_COUNTER_NAME 64

/* One of the learner's run counters (episodes lost, groups trained, rejections by reason,
 * ...), kept across restarts: trainer_state.json "counters": {name: whole number}. */
typedef struct learner_ckpt_counter {
    char name[LEARNER_CKPT_COUNTER_NAME]; /* 1..63 bytes */
    uint64_t value;                       /* < 2^53 */
} learner_ckpt_counter;

typedef struct learner_ckpt_state {
    int64_t step;      /* stage-2 optimizer steps done */
    uint64_t version;  /* weights version of these parameters */
    int64_t sft_steps; /* stage 0/1 steps done */
    int stage;         /* 0, 1 or 2: the stage to continue in */
    /* the run's counters (0 of them in a checkpoint written before they were kept: such
     * a checkpoint still loads, and the counters start at 0) */
    int n_counters;
    learner_ckpt_counter counters[LEARNER_CKPT_MAX_COUNTERS];
    /* A save's input only: the groups-in ledger (learner/acks.h) packed, written as
     * acks.bin when acks_len > 0 (the caller owns it); learner_ckpt_acks reads it back. */
    void *acks;
    size_t acks_len;
} learner_ckpt_state;

/* Set counter `name` of st (added when absent; ignored when the table is full). */
void learner_ckpt_counter_set(learner_ckpt_state *st, const char *name, uint64_t value);
/* The value of counter `name` (0 when absent). */
uint64_t learner_ckpt_counter_get(const learner_ckpt_state *st, const char *name);

/* Save policy (dtype for model.safetensors; the optimizer state is always fp32; a
 * bf16 checkpoint still resumes from fp32 master weights kept in optimizer.safetensors)
 * and the pending groups (n blobs of packed Envelopes, may be 0). keep: how many
 * checkpoint directories to keep (older ones are removed). tokenizer_json may be NULL. */
int learner_ckpt_save(const char *ckpt_dir, model *policy, int bf16, const char *tokenizer_json,
                      const learner_ckpt_state *st, const void *const *pending,
                      const size_t *pending_len, int n_pending, int keep, char *out_path,
                      size_t out_len, char *err, size_t errlen);

/* The checkpoint to resume: the one ckpt_dir/latest names, or resume_from (a checkpoint
 * directory anywhere; NULL or "" for none) unless latest is a valid checkpoint later than
 * it (so a learner restarted with the same job continues where the run got to instead of
 * going back). 1 with *st and path_out filled when there is one and it validates, 0 when
 * there is none, negative when it is refused (the error says why and offers the previous
 * good checkpoint). */
int learner_ckpt_find(const char *ckpt_dir, const char *resume_from, char *path_out,
                      size_t path_len, learner_ckpt_state *st, char *err, size_t errlen);

/* Every check of the contract on the checkpoint directory at path (all but the name of
 * `latest`); *st filled when it passes. Reads every file once. */
int learner_ckpt_validate(const char *path, learner_ckpt_state *st, char *err, size_t errlen);

/* Load parameters and optimizer state of the checkpoint at path into policy (whose
 * config must match). */
int learner_ckpt_load(const char *path, model *policy, char *err, size_t errlen);

/* Pending groups of the checkpoint at path: calls fn for each packed Envelope. */
int learner_ckpt_pending(const char *path, void (*fn)(void *ctx, const void *buf, size_t len),
                         void *ctx, char *err, size_t errlen);

/* The groups-in ledger of the checkpoint at path (acks.bin, checked by the caller's
 * learner_acks_unpack): *buf malloc'd, *len 0 when the checkpoint has none. */
int learner_ckpt_acks(const char *path, void **buf, size_t *len, char *err, size_t errlen);

/* Whether a checkpoint is due: `every` steps (0: no step rule) or `every_s` seconds (0: no
 * time rule) after the last one (at last_step, last_t), whichever comes first. now and
 * last_t come from one monotonic clock the caller reads, so a test can pass its own. */
int learner_ckpt_due(int every, double every_s, int64_t step, int64_t last_step, double now,
                     double last_t);

/* The reference policy: save once (when absent) / load into ref. */
int learner_ckpt_save_ref(const char *ckpt_dir, model *ref, char *err, size_t errlen);
int learner_ckpt_load_ref(const char *ckpt_dir, model *ref, char *err, size_t errlen); /* 1 found */

#endif
