/* model.c — the backend-independent half of model.h: the tensor table and parameter
 * layout, create/load/save/free, argument validation for every workload, and dispatch
 * to the backend (backend.h).
 *
 * Contract: every public entry point checks its arguments (slot range, lengths
 * against the limits planned at create time, token ids in [0, vocab)) and returns a
 * sentence naming the bad value before any backend code runs; nothing here prints or
 * exits. Weight decay applies to the tensors of ndim 2 (embedding, projections, LM
 * head), never to biases or norm weights (see adamw.c). */
#define _GNU_SOURCE
#include "model/backend.h"
#include "model/safetensors.h"
#include "model/cpu/kernels.h"
#ifdef SEED_HAVE_CUDA
#include "model/cuda/cuda_backend.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_ALIGN 64

static void *aligned_zalloc(size_t bytes) {
    size_t n = (bytes + MODEL_ALIGN - 1) / MODEL_ALIGN * MODEL_ALIGN;
    if (n == 0) n = MODEL_ALIGN;
    void *p = aligned_alloc(MODEL_ALIGN, n);
    if (p) memset(p, 0, n);
    return p;
}

static int check_config(const model_config *c, char *err, size_t errlen) {
    if (c->vocab_size <= 0)
        return seed_errf(err, errlen, "config: vocab_size %d must be > 0", c->vocab_size);
    if (c->hidden_size <= 0)
        return seed_errf(err, errlen, "config: hidden_size %d must be > 0", c->hidden_size);
    if (c->intermediate_size <= 0)
        return seed_errf(err, errlen, "config: intermediate_size %d must be > 0",
                         c->intermediate_size);
    if (c->num_hidden_layers <= 0)
        return seed_errf(err, errlen, "config: num_hidden_layers %d must be > 0",
                         c->num_hidden_layers);
    if (c->num_attention_heads <= 0 || c->num_key_value_heads <= 0)
        return seed_errf(err, errlen,
                         "config: num_attention_heads %d and num_key_value_heads %d must be > 0",
                         c->num_attention_heads, c->num_key_value_heads);
    if (c->num_attention_heads % c->num_key_value_heads != 0)
        return seed_errf(err, errlen,
                         "config: num_attention_heads %d is not a multiple of "
                         "num_key_value_heads %d",
                         c->num_attention_heads, c->num_key_value_heads);
    if (c->head_dim <= 0 || c->head_dim % 2 != 0)
        return seed_errf(err, errlen, "config: head_dim %d must be even and > 0", c->head_dim);
    if (!(c->rms_norm_eps > 0) || !(c->rope_theta > 0))
        return seed_errf(err, errlen, "config: rms_norm_eps %g and rope_theta %g must be > 0",
                         (double)c->rms_norm_eps, (double)c->rope_theta);
    return 0;
}

static void add_tensor(model *m, int *i, size_t *off, const char *name, int ndim, int64_t d0,
                       int64_t d1) {
    model_tensor_info *t = &m->tensors[(*i)++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = ndim == 2 ? d1 : 0;
    t->numel = (size_t)d0 * (size_t)(ndim == 2 ? d1 : 1);
    t->offset = *off;
    *off += t->numel;
}

/* Fill m->tensors in the layout backend.h describes; returns the parameter count. */
static size_t build_tensor_table(model *m) {
    const model_config *c = &m->cfg;
    int64_t C = c->hidden_size, V = c->vocab_size, I = c->intermediate_size;
    int64_t Q = (int64_t)c->num_attention_heads * c->head_dim;
    int64_t KVD = (int64_t)c->num_key_value_heads * c->head_dim;
    int i = 0;
    size_t off = 0;
    char nm[96];
    add_tensor(m, &i, &off, "model.embed_tokens.weight", 2, V, C);
    for (int l = 0; l < c->num_hidden_layers; l++) {
#define LNAME(s) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, s), nm)
        add_tensor(m, &i, &off, LNAME("input_layernorm.weight"), 1, C, 0);
        add_tensor(m, &i, &off, LNAME("self_attn.q_proj.weight"), 2, Q, C);
        add_tensor(m, &i, &off, LNAME("self_attn.k_proj.weight"), 2, KVD, C);
        add_tensor(m, &i, &off, LNAME("self_attn.v_proj.weight"), 2, KVD, C);
        add_tensor(m, &i, &off, LNAME("self_attn.q_proj.bias"), 1, Q, 0);
        add_tensor(m, &i, &off, LNAME("self_attn.k_proj.bias"), 1, KVD, 0);
        add_tensor(m, &i, &off, LNAME("self_attn.v_proj.bias"), 1, KVD, 0);
        add_tensor(m, &i, &off, LNAME("self_attn.o_proj.weight"), 2, C, Q);
        add_tensor(m, &i, &off, LNAME("post_attention_layernorm.weight"), 1, C, 0);
        add_tensor(m, &i, &off, LNAME("mlp.gate_proj.weight"), 2, I, C);
        add_tensor(m, &i, &off, LNAME("mlp.up_proj.weight"), 2, I, C);
        add_tensor(m, &i, &off, LNAME("mlp.down_proj.weight"), 2, C, I);
#undef LNAME
    }
    add_tensor(m, &i, &off, "model.norm.weight", 1, C, 0);
    if (!c->tie_word_embeddings) add_tensor(m, &i, &off, "lm_head.weight", 2, V, C);
    m->n_tensors = i;
    return off;
}

static int tensors_per_model(const model_config *c) {
    return 2 + 12 * c->num_hidden_layers + (c->tie_word_embeddings ? 0 : 1);
}

void model_weights_view(const model *m, float *base, model_weights *w) {
    const model_tensor_info *t = m->tensors;
    w->embed = base + t[0].offset;
    int k = 1;
    for (int l = 0; l < m->cfg.num_hidden_layers; l++, k += 12) {
        model_layer_weights *L = &w->layers[l];
        L->ln1 = base + t[k + 0].offset;
        L->wqkv = base + t[k + 1].offset;
        L->bqkv = base + t[k + 4].offset;
        L->wo = base + t[k + 7].offset;
        L->ln2 = base + t[k + 8].offset;
        L->wgu = base + t[k + 9].offset;
        L->wd = base + t[k + 11].offset;
    }
    w->norm = base + t[k].offset;
    w->head = m->cfg.tie_word_embeddings ? w->embed : base + t[k + 1].offset;
}

static const model_backend *find_backend(const char *name) {
    if (!name || !*name || strcmp(name, "cpu") == 0) return &model_cpu_backend;
#ifdef SEED_HAVE_CUDA
    if (strcmp(name, "cuda") == 0) return &model_cuda_backend;
#endif
    return NULL;
}

int model_create(model **out, const model_config *cfg, const model_limits *lim, const char *backend,
                 char *err, size_t errlen) {
    *out = NULL;
    if (check_config(cfg, err, errlen)) return -1;
    if (lim->max_batch_seqs < 0 || lim->max_seq_len <= 0 || lim->max_train_tokens < 0 ||
        lim->threads < 0 || lim->max_infer_tokens < 0)
        return seed_errf(err, errlen,
                         "model limits: max_batch_seqs %d, max_seq_len %d, max_train_tokens "
                         "%d, max_infer_tokens %d, threads %d: max_seq_len must be > 0 and "
                         "none negative",
                         lim->max_batch_seqs, lim->max_seq_len, lim->max_train_tokens,
                         lim->max_infer_tokens, lim->threads);
    const model_backend *be = find_backend(backend);
#ifndef SEED_HAVE_CUDA
    if (!be && strcmp(backend, "cuda") == 0)
        return seed_errf(err, errlen,
                         "model.backend cuda: this build has no CUDA backend (nvcc was not found "
                         "when it was configured; SEED_CUDA=ON makes that an error)");
#endif
    if (!be)
        return seed_errf(err, errlen, "unknown model backend \"%s\" (known: cpu%s)", backend,
#ifdef SEED_HAVE_CUDA
                         ", cuda"
#else
                         ""
#endif
        );
    model *m = calloc(1, sizeof *m);
    if (!m) return seed_errf(err, errlen, "out of memory creating the model");
    m->cfg = *cfg;
    m->lim = *lim;
    m->infer_tokens = lim->max_infer_tokens > 0 ? lim->max_infer_tokens : 512;
    if (m->infer_tokens < lim->max_seq_len) m->infer_tokens = lim->max_seq_len;
    m->be = be;
    m->fwd_tokens = -1;
    m->temperature = 1.0f;
    m->tensors = calloc((size_t)tensors_per_model(cfg), sizeof *m->tensors);
    int L = cfg->num_hidden_layers;
    m->w.layers = calloc((size_t)L, sizeof *m->w.layers);
    m->kv_len = calloc((size_t)(lim->max_batch_seqs > 0 ? lim->max_batch_seqs : 1), sizeof(int));
    if (!m->tensors || !m->w.layers || !m->kv_len) goto oom;
    m->n_params = build_tensor_table(m);
    m->params = aligned_zalloc(m->n_params * sizeof(float));
    m->decay = calloc((size_t)m->n_tensors, 1);
    if (!m->params || !m->decay) goto oom;
    for (int i = 0; i < m->n_tensors; i++) m->decay[i] = m->tensors[i].ndim == 2;
    model_weights_view(m, m->params, &m->w);
    if (lim->max_train_tokens > 0) {
        m->grads = aligned_zalloc(m->n_params * sizeof(float));
        m->adam_m = aligned_zalloc(m->n_params * sizeof(float));
        m->adam_v = aligned_zalloc(m->n_params * sizeof(float));
        m->g.layers = calloc((size_t)L, sizeof *m->g.layers);
        if (!m->grads || !m->adam_m || !m->adam_v || !m->g.layers) goto oom;
        model_weights_view(m, m->grads, &m->g);
    }
    /* norms start at one, as a freshly constructed transformers model */
    for (int i = 0; i < m->n_tensors; i++)
        if (strstr(m->tensors[i].name, "norm.weight"))
            for (size_t j = 0; j < m->tensors[i].numel; j++)
                m->params[m->tensors[i].offset + j] = 1.0f;
    if (be->create(m, err, errlen)) {
        model_free(m); /* destroy copes with a half-made backend state */
        return -1;
    }
    *out = m;
    return 0;
oom:
    model_free(m);
    return seed_errf(err, errlen, "out of memory allocating the model");
}

void model_free(model *m) {
    if (!m) return;
    if (m->be && m->be->destroy) m->be->destroy(m);
    free(m->tensors);
    free(m->w.layers);
    free(m->g.layers);
    free(m->kv_len);
    free(m->params);
    free(m->grads);
    free(m->adam_m);
    free(m->adam_v);
    free(m->decay);
    free(m);
}

void model_init_random(model *m, uint64_t seed, float std) {
    seed_rng r;
    seed_rng_init(&r, seed);
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor_info *t = &m->tensors[i];
        float *p = m->params + t->offset;
        if (t->ndim == 2)
            for (size_t j = 0; j < t->numel; j++) p[j] = std * seed_rng_normal(&r);
        else if (strstr(t->name, "norm.weight"))
            for (size_t j = 0; j < t->numel; j++) p[j] = 1.0f;
        else
            memset(p, 0, t->numel * sizeof(float));
    }
    if (m->be->params_changed) m->be->params_changed(m, NULL, 0);
}

const model_config *model_get_config(const model *m) {
    return &m->cfg;
}
int model_num_tensors(const model *m) {
    return m->n_tensors;
}
const model_tensor_info *model_tensor(const model *m, int i) {
    return i >= 0 && i < m->n_tensors ? &m->tensors[i] : NULL;
}
int model_find_tensor(const model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return i;
    return -1;
}
float *model_params(model *m) {
    return m->params;
}
size_t model_num_params(const model *m) {
    return m->n_params;
}
int model_params_changed(model *m, char *err, size_t errlen) {
    return m->be->params_changed ? m->be->params_changed(m, err, errlen) : 0;
}

/* ---- load / save ---- */

int model_load(model **out, const char *dir, const model_limits *lim, const char *backend,
               char *err, size_t errlen) {
    *out = NULL;
    char path[4096];
    model_config cfg;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (model_config_load(path, &cfg, err, errlen)) return -1;
    st_file *st = NULL;
    if (st_open(&st, dir, err, errlen)) return -1;
    model *m = NULL;
    if (model_create(&m, &cfg, lim, backend, err, errlen)) {
        st_close(st);
        return -1;
    }
    char e2[SEED_ERRLEN];
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor_info *t = &m->tensors[i];
        st_tensor info;
        if (st_find(st, t->name, &info) != 0) {
            seed_errf(err, errlen, "%s: tensor %s is missing (config.json asks for it)", dir,
                      t->name);
            goto fail;
        }
        if (st_read_f32(st, t->name, t->shape, t->ndim, m->params + t->offset, e2, sizeof e2)) {
            if (t->ndim == 2)
                seed_errf(err, errlen,
                          "%s: tensor %s: expected shape [%lld, %lld] from "
                          "config.json: %s",
                          dir, t->name, (long long)t->shape[0], (long long)t->shape[1], e2);
            else
                seed_errf(err, errlen, "%s: tensor %s: expected shape [%lld] from config.json: %s",
                          dir, t->name, (long long)t->shape[0], e2);
            goto fail;
        }
    }
    st_close(st);
    if (model_params_changed(m, err, errlen)) {
        model_free(m);
        return -1;
    }
    *out = m;
    return 0;
fail:
    st_close(st);
    model_free(m);
    return -1;
}

int model_save(const model *m, const char *dir, model_dtype dtype, char *err, size_t errlen) {
    if (dtype != MODEL_F32 && dtype != MODEL_BF16)
        return seed_errf(err, errlen, "model_save: dtype %d unsupported (F32 or BF16)", (int)dtype);
    char why[SEED_ERRLEN];
    if (seed_mkdir_p(dir, why, sizeof why)) return seed_errf(err, errlen, "model_save: %s", why);
    st_write_tensor *t = calloc((size_t)m->n_tensors, sizeof *t);
    if (!t) return seed_errf(err, errlen, "model_save: out of memory");
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor_info *ti = &m->tensors[i];
        t[i].name = ti->name;
        t[i].data = m->params + ti->offset;
        t[i].ndim = ti->ndim;
        t[i].shape[0] = ti->shape[0];
        t[i].shape[1] = ti->shape[1];
        t[i].dtype = dtype == MODEL_BF16 ? ST_BF16 : ST_F32;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = st_write(path, t, m->n_tensors, "{\"format\":\"pt\"}", err, errlen);
    free(t);
    if (rc) return -1;
    model_config c = m->cfg;
    snprintf(c.torch_dtype, sizeof c.torch_dtype, "%s",
             dtype == MODEL_BF16 ? "bfloat16" : "float32");
    snprintf(path, sizeof path, "%s/config.json", dir);
    return model_config_save(&c, path, err, errlen);
}

/* ---- validation shared by the workloads ---- */

/* Index of the first token id outside [0, vocab), or -1. */
static int bad_token(const model *m, const int *tok, int n) {
    for (int j = 0; j < n; j++)
        if (tok[j] < 0 || tok[j] >= m->cfg.vocab_size) return j;
    return -1;
}

/* what names the sequence ("model_score: prompt 3"); formats the error for a bad id. */
static int check_tokens(const model *m, const int *tok, int n, const char *what, int idx, char *err,
                        size_t errlen) {
    int j = bad_token(m, tok, n);
    if (j < 0) return 0;
    if (idx < 0)
        return seed_errf(err, errlen, "%s: token id %d at position %d is outside [0, %d)", what,
                         tok[j], j, m->cfg.vocab_size);
    return seed_errf(err, errlen, "%s %d: token id %d at position %d is outside [0, %d)", what, idx,
                     tok[j], j, m->cfg.vocab_size);
}

static int check_slot(const model *m, int slot, const char *fn, char *err, size_t errlen) {
    if (slot < 0 || slot >= m->lim.max_batch_seqs)
        return seed_errf(err, errlen, "%s: slot %d is outside [0, %d) (max_batch_seqs)", fn, slot,
                         m->lim.max_batch_seqs);
    return 0;
}

void model_kv_clear(model *m, int slot) {
    if (slot >= 0 && slot < m->lim.max_batch_seqs) m->kv_len[slot] = 0;
}

int model_kv_len(const model *m, int slot) {
    return slot >= 0 && slot < m->lim.max_batch_seqs ? m->kv_len[slot] : -1;
}

int model_kv_copy_prefix(model *m, int dst, int src, int n, char *err, size_t errlen) {
    if (check_slot(m, dst, "model_kv_copy_prefix", err, errlen) ||
        check_slot(m, src, "model_kv_copy_prefix", err, errlen))
        return -1;
    if (n < 0 || n > m->kv_len[src])
        return seed_errf(err, errlen,
                         "model_kv_copy_prefix: n %d is outside [0, %d] (slot %d holds %d tokens)",
                         n, m->kv_len[src], src, m->kv_len[src]);
    if (dst != src && n > 0) m->be->kv_copy_prefix(m, dst, src, n);
    m->kv_len[dst] = n;
    return 0;
}

/* The checks model_forward_cached and model_score_cached share: chunk count, distinct
 * slots in range, non-empty chunks that fit the cache, token ids (and targets: -1 or
 * an id) in range. fn names the entry point in the sentence. */
static int check_chunks(const model *m, int n_chunks, const int *slots, const int *const *tokens,
                        const int *lens, const int *const *targets, const char *fn, char *err,
                        size_t errlen) {
    if (n_chunks <= 0 || n_chunks > m->lim.max_batch_seqs)
        return seed_errf(err, errlen, "%s: %d chunks, expected 1..%d", fn, n_chunks,
                         m->lim.max_batch_seqs);
    char what[64];
    snprintf(what, sizeof what, "%s: chunk", fn);
    for (int i = 0; i < n_chunks; i++) {
        int s = slots[i];
        if (check_slot(m, s, fn, err, errlen)) return -1;
        for (int j = 0; j < i; j++)
            if (slots[j] == s)
                return seed_errf(err, errlen, "%s: slot %d appears twice in one call", fn, s);
        if (lens[i] <= 0)
            return seed_errf(err, errlen, "%s: chunk %d has length %d", fn, i, lens[i]);
        if (lens[i] > m->lim.max_seq_len - m->kv_len[s])
            return seed_errf(err, errlen,
                             "%s: slot %d holds %d tokens; %d more exceed max_seq_len %d", fn, s,
                             m->kv_len[s], lens[i], m->lim.max_seq_len);
        if (check_tokens(m, tokens[i], lens[i], what, i, err, errlen)) return -1;
        for (int j = 0; targets && targets[i] && j < lens[i]; j++)
            if (targets[i][j] < -1 || targets[i][j] >= m->cfg.vocab_size)
                return seed_errf(err, errlen,
                                 "%s: chunk %d: target %d at position %d is outside [0, %d) "
                                 "(or -1 for none)",
                                 fn, i, targets[i][j], j, m->cfg.vocab_size);
    }
    return 0;
}

int model_forward_cached(model *m, int n_chunks, const int *slots, const int *const *tokens,
                         const int *lens, float *logits_out, char *err, size_t errlen) {
    if (check_chunks(m, n_chunks, slots, tokens, lens, NULL, "model_forward_cached", err, errlen))
        return -1;
    if (m->be->forward_cached(m, n_chunks, slots, tokens, lens, logits_out, err, errlen)) return -1;
    for (int i = 0; i < n_chunks; i++) m->kv_len[slots[i]] += lens[i];
    return 0;
}

int model_score_cached(model *m, int n_chunks, const int *slots, const int *const *tokens,
                       const int *lens, const int *const *targets, float *const *out, char *err,
                       size_t errlen) {
    if (check_chunks(m, n_chunks, slots, tokens, lens, targets, "model_score_cached", err, errlen))
        return -1;
    if (m->be->score_cached(m, n_chunks, slots, tokens, lens, targets, out, err, errlen)) return -1;
    for (int i = 0; i < n_chunks; i++) m->kv_len[slots[i]] += lens[i];
    return 0;
}

int model_forward_logits(model *m, const int *tokens, int n, float *logits_out, char *err,
                         size_t errlen) {
    if (n <= 0 || n > m->lim.max_seq_len)
        return seed_errf(err, errlen,
                         "model_forward_logits: %d tokens, expected 1..%d "
                         "(max_seq_len)",
                         n, m->lim.max_seq_len);
    if (check_tokens(m, tokens, n, "model_forward_logits", -1, err, errlen)) return -1;
    return m->be->forward_logits(m, tokens, n, logits_out, err, errlen);
}

int model_score(model *m, int n, const int *const *prompt, const int *plen, const int *const *resp,
                const int *rlen, float *const *out, char *err, size_t errlen) {
    if (n < 0) return seed_errf(err, errlen, "model_score: %d sequences", n);
    for (int i = 0; i < n; i++) {
        if (plen[i] < 1 || rlen[i] < 0)
            return seed_errf(err, errlen,
                             "model_score: sequence %d has prompt length %d and response "
                             "length %d (the prompt needs at least one token)",
                             i, plen[i], rlen[i]);
        if (plen[i] > m->lim.max_seq_len - rlen[i])
            return seed_errf(err, errlen,
                             "model_score: sequence %d has %d + %d tokens, more than "
                             "max_seq_len %d",
                             i, plen[i], rlen[i], m->lim.max_seq_len);
        if (check_tokens(m, prompt[i], plen[i], "model_score: prompt", i, err, errlen) ||
            check_tokens(m, resp[i], rlen[i], "model_score: response", i, err, errlen))
            return -1;
    }
    if (n == 0) return 0;
    return m->be->score(m, n, prompt, plen, resp, rlen, out, err, errlen);
}

int model_set_temperature(model *m, float T, char *err, size_t errlen) {
    if (!isfinite(T))
        return seed_errf(err, errlen,
                         "model_set_temperature: temperature %g is not a finite number (> 0: "
                         "softmax(logits / T); <= 0: greedy, scored at 1)",
                         (double)T);
    m->temperature = T > 0.0f ? T : 1.0f; /* greedy sampling logs the T = 1 log-prob */
    return 0;
}

float model_temperature(const model *m) {
    return m->temperature;
}

const char *model_blas_core(void) {
    return cpu_blas_core();
}

int model_train_shares_prefix(const model *m) {
    return m->be->train_prefix;
}

static int seq_len(const model_batch *b, int k) {
    return b->cu_seqlens[k + 1] - b->cu_seqlens[k];
}

/* model_batch.prefix: an earlier sequence, and the chain of prefixes with the sequence
 * within max_seq_len (called after the lengths are checked). */
static int check_prefix(const model *m, const model_batch *b, const char *fn, char *err,
                        size_t errlen) {
    if (!m->be->train_prefix)
        return seed_errf(err, errlen,
                         "%s: the %s backend does not share prompt prefixes "
                         "(model_batch.prefix must be NULL; see model_train_shares_prefix)",
                         fn, m->be->name);
    for (int k = 0; k < b->n_seqs; k++) {
        int p = b->prefix[k];
        if (p == -1) continue;
        if (p < 0 || p >= k)
            return seed_errf(err, errlen,
                             "%s: sequence %d names sequence %d as its prefix; a prefix must "
                             "be an earlier sequence (0..%d) or -1",
                             fn, k, p, k - 1);
        int total = seq_len(b, k);
        for (int q = p; q >= 0; q = b->prefix[q]) total += seq_len(b, q);
        if (total > m->lim.max_seq_len)
            return seed_errf(err, errlen,
                             "%s: sequence %d with its prefixes (%d, ...) is %d tokens, over "
                             "max_seq_len %d",
                             fn, k, p, total, m->lim.max_seq_len);
    }
    return 0;
}

static int check_batch(const model *m, const model_batch *b, const char *fn, char *err,
                       size_t errlen) {
    if (m->lim.max_train_tokens <= 0)
        return seed_errf(err, errlen,
                         "%s: the model was created without training "
                         "(max_train_tokens 0)",
                         fn);
    if (b->n_tokens <= 0 || b->n_tokens > m->lim.max_train_tokens)
        return seed_errf(err, errlen, "%s: %d tokens, expected 1..%d (max_train_tokens)", fn,
                         b->n_tokens, m->lim.max_train_tokens);
    if (b->n_seqs <= 0 || b->n_seqs > b->n_tokens)
        return seed_errf(err, errlen, "%s: %d sequences for %d tokens", fn, b->n_seqs, b->n_tokens);
    if (b->cu_seqlens[0] != 0 || b->cu_seqlens[b->n_seqs] != b->n_tokens)
        return seed_errf(err, errlen, "%s: cu_seqlens must run from 0 to n_tokens %d (got %d..%d)",
                         fn, b->n_tokens, b->cu_seqlens[0], b->cu_seqlens[b->n_seqs]);
    for (int k = 0; k < b->n_seqs; k++) {
        int len = seq_len(b, k);
        if (len <= 0 || len > m->lim.max_seq_len)
            return seed_errf(err, errlen,
                             "%s: sequence %d has length %d, expected 1..%d "
                             "(max_seq_len)",
                             fn, k, len, m->lim.max_seq_len);
    }
    if (b->prefix && check_prefix(m, b, fn, err, errlen)) return -1;
    if (check_tokens(m, b->tokens, b->n_tokens, fn, -1, err, errlen)) return -1;
    for (int t = 0; t < b->n_tokens; t++)
        if (b->targets[t] < -1 || b->targets[t] >= m->cfg.vocab_size)
            return seed_errf(err, errlen,
                             "%s: target %d at position %d is outside [0, %d) "
                             "(or -1 for no loss)",
                             fn, b->targets[t], t, m->cfg.vocab_size);
    return 0;
}

int model_train_forward(model *m, const model_batch *b, float *logp, float *entropy, char *err,
                        size_t errlen) {
    m->fwd_tokens = -1;
    if (check_batch(m, b, "model_train_forward", err, errlen)) return -1;
    if (m->be->train_forward(m, b, logp, entropy, err, errlen)) return -1;
    m->fwd_tokens = b->n_tokens;
    m->fwd_seqs = b->n_seqs;
    return 0;
}

int model_train_backward(model *m, const model_batch *b, const float *dlogp, const float *dentropy,
                         char *err, size_t errlen) {
    if (check_batch(m, b, "model_train_backward", err, errlen)) return -1;
    if (m->fwd_tokens != b->n_tokens || m->fwd_seqs != b->n_seqs)
        return seed_errf(err, errlen,
                         "model_train_backward: the last model_train_forward was "
                         "not on this batch (%d tokens, %d sequences)",
                         b->n_tokens, b->n_seqs);
    for (int t = 0; t < b->n_tokens; t++)
        if (!isfinite(dlogp[t]) || (dentropy && !isfinite(dentropy[t])))
            return seed_errf(err, errlen,
                             "model_train_backward: non-finite gradient at "
                             "position %d",
                             t);
    return m->be->train_backward(m, b, dlogp, dentropy, err, errlen);
}
