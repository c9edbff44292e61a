/* generate.h — batched generation of one reply per prompt: how the analyzer's policy
 * writes its self skills (analyzer_main.c) and how bench/experiment/opd_signal writes
 * the same skills to measure them.
 *
 * Contract:
 *  - Prompts are generated in waves of n_slots (at most ANALYZER_GEN_MAX_SLOTS, at most the model's
 *    max_batch_seqs); each wave clears and uses KV slots [0, n_slots).
 *  - A prompt longer than max_seq - max_new tokens keeps its end (the trajectory's
 *    latest steps and the analysis request), so the reply always fits.
 *  - Prompt e's reply is sampled with sp and rng[e] (sp->temperature 0: greedy, rng
 *    unused) until end_id (kept as the reply's last token) or max_new tokens; it is
 *    written to out + e * max_new and its length to nout[e].
 *  - logits holds n_slots x vocab floats, scratch 2 x vocab (model_sample's). */
#ifndef SEED_ANALYZER_GENERATE_H
#define SEED_ANALYZER_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/job.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "roles/skill.h"

/* The most KV slots one generation wave uses (analyzer_generate refuses more). */
#define ANALYZER_GEN_MAX_SLOTS 64

/* The analysis prompt cuts each observation to this many characters (skill_request_chat). */
#define ANALYZER_SKILL_OBS_CHARS 400

typedef struct analyzer_gen {
    model *m;
    int n_slots, max_seq, max_new, vocab, end_id;
    model_sampler sp;
    float *logits, *scratch;
} analyzer_gen;

/* Returns 0, or -1 with a sentence in err (no room for a reply, a model error). */
int analyzer_generate(const analyzer_gen *g, int n, const tok_ids *prompts, seed_rng *rng, int *out,
                      int *nout, char *err, size_t errlen);

/* The sampler self skills are written with: analyzer.skill_temperature and the job's
 * top-p and top-k. */
model_sampler analyzer_skill_sampler(const job_config *job);

/* The policy's own skills for n trajectories, as the analyzer writes them: each
 * trajectory's analysis prompt (skill_request_chat, observations cut to
 * ANALYZER_SKILL_OBS_CHARS) generated with g, trajectory i's reply sampled with an rng
 * seeded from sample_seed[i] (the episode's sampler seed); text[i] (n zeroed buffers, the
 * caller frees them) gets the reply decoded without special tokens. Returns 0, or -1 with
 * a sentence in err. */
int analyzer_self_skills(const analyzer_gen *g, tok *tk, tok_ws *ws, int n, const skill_traj *t,
                         const uint64_t *sample_seed, seed_sbuf *text, char *err, size_t errlen);

#endif
