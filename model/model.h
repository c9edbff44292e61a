/* model.h — the Qwen2 policy: configuration, parameters, and the four workloads
 * (batched generation with a KV cache, scoring, training forward/backward, AdamW).
 *
 * Contract:
 *  - Shapes come from a Hugging Face config.json; weights from/to model.safetensors
 *    with Hugging Face tensor names ("model.layers.3.self_attn.q_proj.weight", ...).
 *  - All parameters live in ONE contiguous fp32 buffer (model_params), laid out in the
 *    order of model_tensor(i); the weight broadcaster ships byte ranges of it.
 *  - The backend ("cpu" now, "cuda" later) sits behind model/backend.h; callers only
 *    see this header. Functions return 0 or a negative error with a sentence in err.
 *  - Nothing allocates in the hot loop: workspaces are planned at create time for the
 *    limits the caller gives (model_limits).
 *  - One temperature T (model_set_temperature, default 1) defines the policy that
 *    scoring and training see: pi_T = softmax(logits / T), as verl divides the logits
 *    by the rollout temperature before its log-probs and entropy. model_score,
 *    model_train_forward (logp and entropy) and model_train_backward (the gradient goes
 *    through the division) all use it, so the log-probs of one token agree with what
 *    model_sample logged at the same T. Logits themselves (model_forward_cached,
 *    model_forward_logits) are never scaled: the sampler divides them. */
#ifndef SEED_MODEL_H
#define SEED_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

typedef struct model_config {
    int vocab_size;
    int hidden_size;
    int intermediate_size;
    int num_hidden_layers;
    int num_attention_heads;
    int num_key_value_heads;
    int head_dim; /* hidden_size / num_attention_heads */
    int max_position_embeddings;
    float rms_norm_eps;
    float rope_theta;
    int tie_word_embeddings;
    int bos_token_id; /* -1 when absent */
    int eos_token_id; /* -1 when absent */
    char torch_dtype[16];
} model_config;

/* Parse config.json (Qwen2ForCausalLM / model_type "qwen2"); a missing or bad key is
 * an error that names it. */
int model_config_load(const char *path, model_config *cfg, char *err, size_t errlen);
/* The same from len bytes of JSON in memory (need not be NUL-terminated); name stands
 * for the file in error sentences. */
int model_config_parse(const char *json, size_t len, const char *name, model_config *cfg, char *err,
                       size_t errlen);
int model_config_save(const model_config *cfg, const char *path, char *err, size_t errlen);
size_t model_config_num_params(const model_config *cfg);

typedef enum { MODEL_F32 = 0, MODEL_BF16 = 1, MODEL_F16 = 2 } model_dtype;

/* One parameter tensor: a view into the contiguous parameter buffer. */
typedef struct model_tensor_info {
    char name[96]; /* Hugging Face name */
    int ndim;
    int64_t shape[2];
    size_t offset; /* in floats, into model_params() */
    size_t numel;
} model_tensor_info;

/* Workspace limits planned at create time. */
typedef struct model_limits {
    int max_batch_seqs;   /* sequences in one generation/scoring batch (KV cache slots) */
    int max_seq_len;      /* tokens per sequence in the KV cache */
    int max_train_tokens; /* packed tokens in one training micro-batch (0: no training) */
    /* OpenMP threads, 0: OpenMP's default. The CPU backend sets the calling thread's
     * OpenMP team size to it on every call and keeps OpenBLAS single-threaded
     * (process-wide): all parallelism is one OpenMP team. On a machine shared with
     * other busy processes run with OMP_WAIT_POLICY=passive. */
    int threads;
    /* tokens per internal inference pass (prefill chunks and scoring are split into
     * passes of at most this many tokens); 0: max(max_seq_len, 512). Sizes the
     * inference workspace. */
    int max_infer_tokens;
} model_limits;

typedef struct model model;

int model_create(model **out, const model_config *cfg, const model_limits *lim, const char *backend,
                 char *err, size_t errlen);
/* Load config.json + model.safetensors (or sharded index) from dir. */
int model_load(model **out, const char *dir, const model_limits *lim, const char *backend,
               char *err, size_t errlen);
/* Write config.json + model.safetensors (dtype F32 or BF16) into dir (created with its
 * missing parents). */
int model_save(const model *m, const char *dir, model_dtype dtype, char *err, size_t errlen);
void model_free(model *m);
void model_init_random(model *m, uint64_t seed, float std);

const model_config *model_get_config(const model *m);
int model_num_tensors(const model *m);
const model_tensor_info *model_tensor(const model *m, int i);
int model_find_tensor(const model *m, const char *name); /* index or -1 */
float *model_params(model *m);                           /* contiguous fp32 parameters */
size_t model_num_params(const model *m);
/* Call after writing into model_params() from outside (e.g. a weight swap), so a
 * backend with device copies refreshes them. */
int model_params_changed(model *m, char *err, size_t errlen);

/* ---- generation with a KV cache (actor, analyzer self-skill) ----
 * Slots 0..max_batch_seqs-1 each hold one sequence's cache. */
void model_kv_clear(model *m, int slot);
int model_kv_len(const model *m, int slot);
/* Make slot dst hold the first n cached positions of slot src (shared prompt prefix). */
int model_kv_copy_prefix(model *m, int dst, int src, int n, char *err, size_t errlen);
/* Append tokens to several slots at once (prefill chunks and/or single decode tokens)
 * and return the logits of each chunk's last token in logits_out (n_chunks x vocab). */
int model_forward_cached(model *m, int n_chunks, const int *slots, const int *const *tokens,
                         const int *lens, float *logits_out, char *err, size_t errlen);

/* Prefix-cached scoring: append chunk i (tokens[i], lens[i] > 0) to KV slot slots[i]
 * exactly as model_forward_cached does (slots distinct in one call, batched in passes
 * of max_infer_tokens), and write out[i][j] = log pi_T(targets[i][j] | the slot's
 * cached tokens + tokens[i][0..j]) at T = model_temperature (as model_score) for every
 * j with targets[i][j] >= 0; out[i][j] = 0 where targets[i][j] = -1 (that position
 * runs no LM head). targets[i] == NULL makes chunk i a pure prefill (out[i] unused).
 * To score a response y after a prompt x whose first k tokens the slot holds (e.g.
 * after model_kv_copy_prefix from a slot holding a shared prefix, k < |x|): tokens =
 * x[k..] + y[0..|y|-1), targets = -1 on x[k..|x|-1) then y. The result equals
 * model_score of (x, y) up to fp32 summation order; the slot is left holding x + y
 * minus y's last token. A refused call changes no slot. */
int model_score_cached(model *m, int n_chunks, const int *slots, const int *const *tokens,
                       const int *lens, const int *const *targets, float *const *out, char *err,
                       size_t errlen);

/* Logits at every position of one sequence (n <= max_seq_len tokens from position 0;
 * no KV slot is used) into logits_out (n x vocab): for tests, tools and debugging. */
int model_forward_logits(model *m, const int *tokens, int n, float *logits_out, char *err,
                         size_t errlen);

/* Set T for scoring and training: T > 0 gives softmax(logits / T); T <= 0 (greedy
 * sampling) scores at T = 1, as model_sample logs a greedy token. A non-finite T is an
 * error. It applies from the next model_score / model_train_forward; a pending
 * backward keeps the temperature of its forward. */
int model_set_temperature(model *m, float T, char *err, size_t errlen);
float model_temperature(const model *m); /* the T in use (> 0) */

/* ---- scoring (analyzer): log pi_T(response | prompt) per response token ----
 * Sequence i is prompt[i] (plen[i]) followed by resp[i] (rlen[i]); out[i][j] receives
 * the log-prob of resp[i][j]. Batched over sequences; uses no KV slots. */
int model_score(model *m, int n, const int *const *prompt, const int *plen, const int *const *resp,
                const int *rlen, float *const *out, char *err, size_t errlen);

/* ---- training (learner) ----
 * A packed batch: tokens[0..n_tokens), sequence k spans [cu_seqlens[k], cu_seqlens[k+1]).
 * targets[t] is the token predicted at position t (usually tokens[t+1] of the same
 * sequence) or -1 where no loss applies.
 *
 * Shared prompt prefixes (prefix != NULL, on a backend where model_train_shares_prefix):
 * prefix[k] is -1, or the index p < k of a sequence that stands before sequence k as its
 * prompt prefix. Sequence k's context is then p's context followed by p's tokens: it
 * attends to them and its positions continue after them, exactly as if they were
 * repeated at its start. Prefixes chain (a prefix tree of prompts), and the chain with
 * the sequence is at most max_seq_len tokens. So prompts that share their first L tokens
 * carry those L tokens once. Gradients reach a prefix's tokens from every sequence whose
 * context holds them. */
typedef struct model_batch {
    int n_tokens;
    int n_seqs;
    const int *tokens;
    const int *cu_seqlens; /* n_seqs + 1 */
    const int *targets;
    const int *prefix; /* n_seqs entries, or NULL: every sequence stands alone */
} model_batch;

/* The OpenBLAS kernel set the CPU backend runs on (e.g. "SkylakeX", "Haswell"); see
 * model/cpu/matmul.c for why a process may execute itself again to get it. */
const char *model_blas_core(void);

/* 1 when this model's backend takes model_batch.prefix (the CPU backend does). */
int model_train_shares_prefix(const model *m);

/* Forward: logp[t] = log softmax(logits_t / T)[targets[t]] (0 where targets[t] < 0);
 * entropy[t] (optional, may be NULL) = entropy of that distribution at t. Keeps the
 * activations for model_train_backward. */
int model_train_forward(model *m, const model_batch *b, float *logp, float *entropy, char *err,
                        size_t errlen);
/* Backward from dL/dlogp[t] and optional dL/dentropy[t]; ACCUMULATES into grads. It
 * must follow model_train_forward on the same batch, once (dentropy needs the forward
 * to have computed entropy). */
int model_train_backward(model *m, const model_batch *b, const float *dlogp, const float *dentropy,
                         char *err, size_t errlen);
void model_zero_grad(model *m);
float *model_grads(model *m); /* same layout as model_params */
float model_grad_norm(model *m);

typedef struct model_adamw {
    float lr, beta1, beta2, eps, weight_decay;
    float max_grad_norm; /* <= 0: no clipping */
} model_adamw;
/* One AdamW step (fp32 moments, bias correction, decoupled weight decay on every
 * tensor of ndim 2) after global grad-norm clipping; returns the pre-clip norm. */
int model_adamw_step(model *m, const model_adamw *opt, float *grad_norm_out, char *err,
                     size_t errlen);
/* Optimizer state for checkpoints: m, v and the step count. */
int64_t model_adamw_steps(const model *m);
int model_adamw_state(model *m, float **mom1, float **mom2, int64_t **step);

/* ---- sampling ----
 * Seeded per sequence: the caller keeps one seed_rng per episode so a replay with the
 * same seed draws the same tokens. Returns the token id; *logp (if non-NULL) receives
 * log softmax(logits / T)[token] over the full vocabulary (before top-k/top-p
 * truncation; with T = 0, greedy, the T = 1 log-prob). */
typedef struct model_sampler {
    float temperature; /* 0: greedy */
    float top_p;       /* 1: off */
    int top_k;         /* 0: off */
} model_sampler;
int model_sample(const float *logits, int vocab, const model_sampler *s, seed_rng *rng, float *logp,
                 float *scratch /* vocab floats */);

#endif
