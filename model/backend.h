/* backend.h — what model.c shares with a compute backend (cpu/, cuda/).
 *
 * Contract:
 *  - struct model holds everything backend-independent: the config, the limits, the
 *    tensor table, the host fp32 parameters (one buffer), grads and AdamW moments in
 *    the same layout, per-slot KV lengths, and views (model_weights) that name each
 *    layer's pieces inside a buffer.
 *  - model.c validates every argument (slots, lengths, token ids, limits) BEFORE it
 *    calls a backend, so a backend may assume well-formed input; a backend returns an
 *    error only for conditions it alone can see (device failures).
 *  - A backend fills the model_backend table; the CPU one is model_cpu_backend. A CUDA
 *    backend implements the same entries (same names, model/cuda/).
 *
 * Parameter layout (the order of model_tensor(i)): embed_tokens; per layer
 * input_layernorm, q_proj.weight, k_proj.weight, v_proj.weight (contiguous, so one
 * GEMM computes q|k|v), q/k/v biases (contiguous), o_proj, post_attention_layernorm,
 * gate_proj.weight, up_proj.weight (contiguous: one GEMM computes gate|up),
 * down_proj; model.norm; lm_head.weight unless tied. */
#ifndef SEED_MODEL_BACKEND_H
#define SEED_MODEL_BACKEND_H

#include "model/model.h"

/* One layer's parameters (or gradients) inside a parameter-layout buffer. */
typedef struct model_layer_weights {
    float *ln1;  /* (C)        input_layernorm.weight */
    float *wqkv; /* (QKV, C)   q_proj|k_proj|v_proj weights, QKV = (H + 2 KVH) D */
    float *bqkv; /* (QKV)      q|k|v biases */
    float *wo;   /* (C, H D)   o_proj.weight */
    float *ln2;  /* (C)        post_attention_layernorm.weight */
    float *wgu;  /* (2 I, C)   gate_proj|up_proj weights */
    float *wd;   /* (C, I)     down_proj.weight */
} model_layer_weights;

typedef struct model_weights {
    float *embed;                /* (V, C) */
    model_layer_weights *layers; /* num_hidden_layers entries */
    float *norm;                 /* (C) model.norm.weight */
    float *head;                 /* (V, C) lm_head.weight, or embed when tied */
} model_weights;

typedef struct model_backend model_backend;

struct model {
    model_config cfg;
    model_limits lim;
    int infer_tokens; /* tokens per internal inference pass (>= max_seq_len) */
    int n_tensors;
    model_tensor_info *tensors;
    size_t n_params;
    float *params;        /* host fp32 parameters */
    float *grads;         /* NULL unless max_train_tokens > 0 */
    float *adam_m;        /* AdamW first moment, same layout; NULL without training */
    float *adam_v;        /* AdamW second moment */
    unsigned char *decay; /* per tensor: 1 when weight decay applies (ndim 2) */
    int64_t adam_step;
    model_weights w;   /* views into params */
    model_weights g;   /* views into grads (g.layers NULL without training) */
    int *kv_len;       /* per KV slot */
    float temperature; /* > 0: score and train_* use softmax(logits / temperature) */
    int fwd_tokens;    /* n_tokens of the last train_forward, -1 when none is pending */
    int fwd_seqs;
    const model_backend *be;
    void *bs; /* backend state */
};

struct model_backend {
    const char *name;
    /* Allocate the workspaces model->lim asks for (after params/grads exist). */
    int (*create)(model *m, char *err, size_t errlen);
    void (*destroy)(model *m);
    int (*params_changed)(model *m, char *err, size_t errlen);
    void (*kv_copy_prefix)(model *m, int dst, int src, int n);
    int (*forward_cached)(model *m, int n_chunks, const int *slots, const int *const *tokens,
                          const int *lens, float *logits_out, char *err, size_t errlen);
    /* forward_cached's appends, with log-probs at the targeted positions (model.h) */
    int (*score_cached)(model *m, int n_chunks, const int *slots, const int *const *tokens,
                        const int *lens, const int *const *targets, float *const *out, char *err,
                        size_t errlen);
    int (*forward_logits)(model *m, const int *tokens, int n, float *logits_out, char *err,
                          size_t errlen);
    int (*score)(model *m, int n, const int *const *prompt, const int *plen, const int *const *resp,
                 const int *rlen, float *const *out, char *err, size_t errlen);
    int (*train_forward)(model *m, const model_batch *b, float *logp, float *entropy, char *err,
                         size_t errlen);
    int (*train_backward)(model *m, const model_batch *b, const float *dlogp, const float *dentropy,
                          char *err, size_t errlen);
    /* Optional (NULL: model.c works on the host arrays): a device backend keeps its
     * own grads and moments and implements these instead. */
    void (*zero_grad)(model *m);
    float (*grad_norm)(model *m);
    int (*adamw_step)(model *m, const model_adamw *opt, float *grad_norm_out, char *err,
                      size_t errlen);
    /* 1: train_forward/train_backward honour model_batch.prefix; 0: model.c refuses it */
    int train_prefix;
};

extern const model_backend model_cpu_backend;

/* Point w's members into base (params or grads layout); w->layers must hold L entries. */
void model_weights_view(const model *m, float *base, model_weights *w);

#endif
