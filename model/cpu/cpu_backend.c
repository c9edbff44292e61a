/* cpu_backend.c — the CPU backend (backend.h): workspaces planned once at create time
 * from model_limits, and the four workloads composed from the layer kernels.
 *
 * Contract: arguments arrive validated by model.c. Every buffer comes from one
 * allocation made in cpu_create; the workloads allocate nothing, except the gather
 * buffers of a training batch with shared prefixes (grown on demand, kept). Threads: each entry
 * point sets the calling thread's OpenMP team size to model_limits.threads (0:
 * OpenMP's default) and OpenBLAS's (process-wide) thread count to 1; products are
 * split over the OpenMP team by cpu_sgemm, so only one thread pool ever runs. The
 * head's logits are kept from the training forward to its backward when they fit in
 * CPU_HEAD_KEEP_BYTES; the backward consumes the forward's state (one backward per
 * forward).
 *
 * Memory plan. Inference (forward_cached, score_cached, score) runs in passes of at most P =
 * model->infer_tokens tokens through one set of per-token buffers reused by every
 * layer. Training keeps, per layer, the input x, q|k|v after RoPE, the attention
 * output, its log-sum-exp, the residual after attention, the gate|up
 * pre-activations and both RMSNorm reciprocal norms; the RMSNorm outputs and
 * silu(gate)*up are recomputed in the backward (cheap, and they are the largest
 * tensors after gate|up). The KV cache is (layers, slots, max_seq_len, KVH*D) for K
 * and for V. */
#include "model/backend.h"
#include "model/cpu/kernels.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Keep the training forward's logits for the backward when they fit in this many
 * bytes (saves recomputing the LM head; 128 MiB for 4096 tokens x 8192 vocab); larger
 * vocabularies recompute them block by block. */
#define CPU_HEAD_KEEP_BYTES ((size_t)256 << 20)

typedef struct cpu_layer_acts {
    float *x;     /* (T,C) layer input */
    float *rstd1; /* (T) */
    float *qkv;   /* (T,QKV) after bias and RoPE */
    float *att;   /* (T,Q) attention output, before o_proj */
    float *lse;   /* (T,H) */
    float *res2;  /* (T,C) x + o_proj(att) */
    float *rstd2; /* (T) */
    float *gu;    /* (T,2I) gate|up pre-activations */
} cpu_layer_acts;

typedef struct cpu_state {
    int nthreads;
    int C, V, I, H, KVH, D, Q, KVD, QKV, L, S, maxlen;
    float *block;               /* the one allocation */
    float *rope_cos, *rope_sin; /* (maxlen, D/2) */
    float *kcache, *vcache;     /* (L, S, maxlen, KVD) */
    float *attn_scratch;        /* nthreads * 2 * CPU_ATTN_BLOCK * maxlen */
    float *head_scratch;        /* cpu_head_block_rows(V) * V */
    float *partial;             /* (nthreads, C) */
    /* inference, P tokens */
    int P;
    float *ix, *iln, *iqkv, *iatt, *igu, *ih, *irows, *ilogp, *ilse; /* irows (P,C) */
    /* ilast: forward_cached's last row of each finished chunk, or score_cached's target
     * of each head row; irowtok: that head row's token row; idst: where its log-prob goes */
    int *ipos, *itgt, *icslot, *ilast, *irowtok;
    float **idst;
    cpu_attn_chunk *ichunks;
    /* training, T tokens */
    int T;
    cpu_layer_acts *acts;
    float *xf, *lnf, *rstdf, *hlse, *hent, *clogp, *cent, *cdlogp, *cdent;
    int *tpos, *trow, *ttgt, *krow;
    float *hkeep; /* (T,V) logits kept from forward to backward, NULL when too large */
    cpu_attn_chunk *tchunks;
    int fwd_entropy; /* the pending forward computed entropies */
    float fwd_inv_t; /* 1 / temperature of the pending forward */
    int fwd_rows;
    float *dx, *dln, *tln, *th, *dh, *dgu, *datt, *dqkv, *dlnf;
    /* shared prefixes (model_batch.prefix): per chunk its prefix chunk (-1: none) and the
     * first row of its keys in gkv/dgkv (rows of 2 KVD floats, K|V): the keys of its
     * whole context (the prefix chain) then its own, so the attention kernels see them
     * contiguous */
    int *tprefix, *tgrow;
    float *gkv, *dgkv;
    size_t g_rows, g_cap;
} cpu_state;

/* ---- workspace planning: one pass sizes, the second assigns ---- */

typedef struct planner {
    char *base;
    size_t off;
} planner;

static void *take(planner *p, size_t bytes) {
    size_t at = p->off;
    p->off += (bytes + 63) / 64 * 64;
    return p->base ? p->base + at : NULL;
}
#define TAKE_F(p, n) ((float *)take(p, (size_t)(n) * sizeof(float)))
#define TAKE_I(p, n) ((int *)take(p, (size_t)(n) * sizeof(int)))

static void plan(cpu_state *s, planner *p) {
    size_t P = (size_t)s->P, T = (size_t)s->T, C = (size_t)s->C;
    s->rope_cos = TAKE_F(p, (size_t)s->maxlen * s->D / 2);
    s->rope_sin = TAKE_F(p, (size_t)s->maxlen * s->D / 2);
    size_t kv = (size_t)s->L * s->S * s->maxlen * s->KVD;
    s->kcache = TAKE_F(p, kv);
    s->vcache = TAKE_F(p, kv);
    s->attn_scratch = TAKE_F(p, (size_t)s->nthreads * 2 * CPU_ATTN_BLOCK * s->maxlen);
    s->head_scratch = TAKE_F(p, (size_t)cpu_head_block_rows(s->V) * s->V);
    s->partial = TAKE_F(p, (size_t)s->nthreads * C);
    s->ix = TAKE_F(p, P * C);
    s->iln = TAKE_F(p, P * C);
    s->iqkv = TAKE_F(p, P * s->QKV);
    s->iatt = TAKE_F(p, P * s->Q);
    s->igu = TAKE_F(p, P * 2 * s->I);
    s->ih = TAKE_F(p, P * s->I);
    s->irows = TAKE_F(p, P * C);
    s->ilogp = TAKE_F(p, P);
    s->ilse = TAKE_F(p, P);
    s->ipos = TAKE_I(p, P);
    s->itgt = TAKE_I(p, P);
    s->icslot = TAKE_I(p, P);
    s->ilast = TAKE_I(p, P);
    s->irowtok = TAKE_I(p, P);
    s->idst = take(p, P * sizeof(float *));
    s->ichunks = take(p, P * sizeof(cpu_attn_chunk));
    if (T == 0) return;
    for (int l = 0; l < s->L; l++) {
        cpu_layer_acts *a = p->base ? &s->acts[l] : &(cpu_layer_acts){0};
        a->x = TAKE_F(p, T * C);
        a->rstd1 = TAKE_F(p, T);
        a->qkv = TAKE_F(p, T * s->QKV);
        a->att = TAKE_F(p, T * s->Q);
        a->lse = TAKE_F(p, T * s->H);
        a->res2 = TAKE_F(p, T * C);
        a->rstd2 = TAKE_F(p, T);
        a->gu = TAKE_F(p, T * 2 * s->I);
    }
    s->xf = TAKE_F(p, T * C);
    s->lnf = TAKE_F(p, T * C);
    s->rstdf = TAKE_F(p, T);
    s->hlse = TAKE_F(p, T);
    s->hent = TAKE_F(p, T);
    s->clogp = TAKE_F(p, T);
    s->cent = TAKE_F(p, T);
    s->cdlogp = TAKE_F(p, T);
    s->cdent = TAKE_F(p, T);
    s->tpos = TAKE_I(p, T);
    s->trow = TAKE_I(p, T);
    s->ttgt = TAKE_I(p, T);
    s->krow = TAKE_I(p, T);
    s->hkeep = T * s->V * sizeof(float) <= CPU_HEAD_KEEP_BYTES ? TAKE_F(p, T * s->V) : NULL;
    s->tchunks = take(p, T * sizeof(cpu_attn_chunk));
    s->tprefix = TAKE_I(p, T);
    s->tgrow = TAKE_I(p, T);
    s->dx = TAKE_F(p, T * C);
    s->dln = TAKE_F(p, T * C);
    s->tln = TAKE_F(p, T * C);
    s->th = TAKE_F(p, T * s->I);
    s->dh = TAKE_F(p, T * s->I);
    s->dgu = TAKE_F(p, T * 2 * s->I);
    s->datt = TAKE_F(p, T * s->Q);
    s->dqkv = TAKE_F(p, T * s->QKV);
    s->dlnf = TAKE_F(p, T * C);
}

static void cpu_destroy(model *m) {
    cpu_state *s = m->bs;
    if (!s) return;
    free(s->block);
    free(s->acts);
    free(s->gkv);
    free(s->dgkv);
    free(s);
    m->bs = NULL;
}

static int cpu_create(model *m, char *err, size_t errlen) {
    const model_config *c = &m->cfg;
    cpu_state *s = calloc(1, sizeof *s);
    if (!s) return seed_errf(err, errlen, "cpu backend: out of memory");
    m->bs = s;
    s->nthreads = m->lim.threads > 0 ? m->lim.threads : omp_get_max_threads();
    s->C = c->hidden_size;
    s->V = c->vocab_size;
    s->I = c->intermediate_size;
    s->H = c->num_attention_heads;
    s->KVH = c->num_key_value_heads;
    s->D = c->head_dim;
    s->Q = s->H * s->D;
    s->KVD = s->KVH * s->D;
    s->QKV = s->Q + 2 * s->KVD;
    s->L = c->num_hidden_layers;
    s->S = m->lim.max_batch_seqs;
    s->maxlen = m->lim.max_seq_len;
    s->P = m->infer_tokens;
    s->T = m->lim.max_train_tokens;
    if (s->T > 0) {
        s->acts = calloc((size_t)s->L, sizeof *s->acts);
        if (!s->acts) return seed_errf(err, errlen, "cpu backend: out of memory");
    }
    planner p = {0};
    plan(s, &p);
    s->block = aligned_alloc(64, p.off);
    if (!s->block)
        return seed_errf(err, errlen,
                         "cpu backend: cannot allocate %.1f MiB of workspace (max_seq_len %d, "
                         "max_batch_seqs %d, max_train_tokens %d)",
                         (double)p.off / 1048576.0, s->maxlen, s->S, s->T);
    p = (planner){.base = (char *)s->block};
    plan(s, &p);
    /* RoPE tables in transformers' fp32 arithmetic: inv_freq = 1 / theta^(2i/D),
     * angle = float(pos) * inv_freq */
    const int half = s->D / 2;
    for (int i = 0; i < half; i++) {
        float inv = 1.0f / powf(c->rope_theta, (float)(2 * i) / (float)s->D);
        for (int pos = 0; pos < s->maxlen; pos++) {
            float ang = (float)pos * inv;
            s->rope_cos[(size_t)pos * half + i] = (float)cos((double)ang);
            s->rope_sin[(size_t)pos * half + i] = (float)sin((double)ang);
        }
    }
    return 0;
}

static void set_threads(cpu_state *s) {
    omp_set_num_threads(s->nthreads);
    cpu_blas_threads(1); /* parallelism comes from OpenMP alone (cpu_sgemm splits) */
}

/* ---- one transformer layer, forward ---- */

typedef struct layer_io {
    float *x;     /* (T,C) input; equal to res2 and out for in-place inference */
    float *rstd1; /* (T) or NULL */
    float *qkv, *att;
    float *lse; /* (T,H) or NULL */
    float *res2;
    float *rstd2;
    float *gu, *h, *ln; /* (T,2I), (T,I) and (T,C) temporaries */
    float *out;
    int gather; /* training with shared prefixes: children's keys come from gkv */
} layer_io;

/* Point each chunk that has a prefix at its gathered keys: rows tgrow[k].. of gkv hold
 * the K|V rows of its context, which are its prefix's gathered rows (or, for a prefix
 * without one, its rows of qkv) followed by the prefix's own, then the chunk's own rows.
 * Chunks come after their prefixes, so a prefix is gathered first. With dqkv (the
 * backward), dk/dv point at the same rows of dgkv, zeroed. */
static void gather_prefix_kv(cpu_state *s, const float *qkv, cpu_attn_chunk *ch, int n_ch,
                             float *dqkv) {
    const int QKV = s->QKV, W = 2 * s->KVD;
    const size_t kvb = sizeof(float) * (size_t)W;
    for (int k = 0; k < n_ch; k++) {
        const int p = s->tprefix[k];
        if (p < 0) continue;
        cpu_attn_chunk *c = &ch[k];
        const cpu_attn_chunk *pc = &ch[p];
        float *g = s->gkv + (size_t)s->tgrow[k] * W;
        if (s->tprefix[p] >= 0) /* the prefix's whole context and its own rows, gathered */
            memcpy(g, s->gkv + (size_t)s->tgrow[p] * W, kvb * (size_t)(pc->pos0 + pc->len));
        else
            for (int r = 0; r < pc->len; r++)
                memcpy(g + (size_t)r * W, qkv + (size_t)(pc->tok0 + r) * QKV + s->Q, kvb);
        for (int r = 0; r < c->len; r++)
            memcpy(g + (size_t)(c->pos0 + r) * W, qkv + (size_t)(c->tok0 + r) * QKV + s->Q, kvb);
        c->k = g;
        c->v = g + s->KVD;
        c->ld = W;
        if (!dqkv) continue;
        float *dg = s->dgkv + (size_t)s->tgrow[k] * W;
        memset(dg, 0, kvb * (size_t)(c->pos0 + c->len));
        c->dk = dg;
        c->dv = dg + s->KVD;
    }
}

/* After the attention backward: hand each chunk's key/value gradients in dgkv back to the
 * rows they came from, its own in dqkv and its context's to its prefix (the prefix's
 * dgkv rows, or its dqkv rows when it has no prefix). Last chunk first, so a prefix has
 * received all of its descendants' gradients before it hands them on; deterministic. */
static void scatter_prefix_dkv(cpu_state *s, const cpu_attn_chunk *ch, int n_ch, float *dqkv) {
    const int QKV = s->QKV, W = 2 * s->KVD;
    for (int k = n_ch - 1; k >= 0; k--) {
        const int p = s->tprefix[k];
        if (p < 0) continue;
        const cpu_attn_chunk *c = &ch[k], *pc = &ch[p];
        const float *dg = s->dgkv + (size_t)s->tgrow[k] * W;
        for (int r = 0; r < c->pos0 + c->len; r++) {
            float *d;
            if (r >= c->pos0)
                d = dqkv + (size_t)(c->tok0 + r - c->pos0) * QKV + s->Q;
            else if (s->tprefix[p] >= 0)
                d = s->dgkv + ((size_t)s->tgrow[p] + (size_t)r) * W;
            else
                d = dqkv + (size_t)(pc->tok0 + r) * QKV + s->Q;
            const float *g = dg + (size_t)r * W;
#pragma omp simd
            for (int j = 0; j < W; j++) d[j] += g[j];
        }
    }
}

/* kc/vc: this layer's cache base (NULL: keys and values stay in qkv), cslot: each
 * chunk's slot when cached. */
static void layer_forward(cpu_state *s, const model *m, int l, int T, const int *pos, layer_io *io,
                          cpu_attn_chunk *ch, int n_ch, float *kc, float *vc, const int *cslot) {
    const model_layer_weights *w = &m->w.layers[l];
    const int C = s->C, QKV = s->QKV;
    const float eps = m->cfg.rms_norm_eps;
    cpu_rmsnorm_forward(io->ln, io->rstd1, io->x, w->ln1, T, C, eps);
    cpu_matmul_forward(io->qkv, io->ln, w->wqkv, w->bqkv, T, C, QKV, 0.0f);
    cpu_rope_forward(io->qkv, QKV, pos, T, s->H + s->KVH, s->D, s->rope_cos, s->rope_sin, 0);
    int ldkv = QKV;
    for (int i = 0; i < n_ch; i++) {
        cpu_attn_chunk *c = &ch[i];
        const float *src = io->qkv + (size_t)c->tok0 * QKV + s->Q;
        if (kc) {
            size_t base = ((size_t)l * s->S + cslot[i]) * s->maxlen * s->KVD;
            float *kd = kc + base, *vd = vc + base;
            for (int j = 0; j < c->len; j++) {
                memcpy(kd + (size_t)(c->pos0 + j) * s->KVD, src + (size_t)j * QKV,
                       sizeof(float) * s->KVD);
                memcpy(vd + (size_t)(c->pos0 + j) * s->KVD, src + (size_t)j * QKV + s->KVD,
                       sizeof(float) * s->KVD);
            }
            c->k = kd;
            c->v = vd;
            ldkv = s->KVD;
        } else {
            c->k = src;
            c->v = src + s->KVD;
        }
    }
    if (io->gather) gather_prefix_kv(s, io->qkv, ch, n_ch, NULL);
    cpu_attention_forward(io->att, io->lse, io->qkv, QKV, ch, n_ch, ldkv, s->H, s->KVH, s->D,
                          s->maxlen, s->attn_scratch, s->nthreads);
    if (io->res2 != io->x) memcpy(io->res2, io->x, sizeof(float) * T * C);
    cpu_matmul_forward(io->res2, io->att, w->wo, NULL, T, s->Q, C, 1.0f);
    cpu_rmsnorm_forward(io->ln, io->rstd2, io->res2, w->ln2, T, C, eps);
    cpu_matmul_forward(io->gu, io->ln, w->wgu, NULL, T, C, 2 * s->I, 0.0f);
    cpu_swiglu_forward(io->h, io->gu, T, s->I);
    if (io->out != io->res2) memcpy(io->out, io->res2, sizeof(float) * T * C);
    cpu_matmul_forward(io->out, io->h, w->wd, NULL, T, s->I, C, 1.0f);
}

/* Run all layers in place over the inference buffers (T <= P tokens in ix). */
static void infer_layers(cpu_state *s, const model *m, int T, int n_ch, int cached) {
    layer_io io = {.x = s->ix,
                   .qkv = s->iqkv,
                   .att = s->iatt,
                   .res2 = s->ix,
                   .gu = s->igu,
                   .h = s->ih,
                   .ln = s->iln,
                   .out = s->ix};
    for (int l = 0; l < s->L; l++)
        layer_forward(s, m, l, T, s->ipos, &io, s->ichunks, n_ch, cached ? s->kcache : NULL,
                      cached ? s->vcache : NULL, s->icslot);
}

/* ---- generation with the KV cache ---- */

static void cpu_kv_copy_prefix(model *m, int dst, int src, int n) {
    cpu_state *s = m->bs;
    for (int l = 0; l < s->L; l++) {
        size_t bs = ((size_t)l * s->S + src) * s->maxlen * s->KVD;
        size_t bd = ((size_t)l * s->S + dst) * s->maxlen * s->KVD;
        memcpy(s->kcache + bd, s->kcache + bs, sizeof(float) * n * s->KVD);
        memcpy(s->vcache + bd, s->vcache + bs, sizeof(float) * n * s->KVD);
    }
}

/* Append chunks to their slots in passes of at most P tokens. With logits_out: the
 * logits of each chunk's last token (forward_cached). With targets: the log-prob at T
 * of targets[i][j] at every position j that has one, into out[i][j] (score_cached). */
static void cached_passes(model *m, int n_chunks, const int *slots, const int *const *tokens,
                          const int *lens, float *logits_out, const int *const *targets,
                          float *const *out) {
    cpu_state *s = m->bs;
    set_threads(s);
    const int C = s->C, V = s->V;
    int ci = 0, off = 0; /* next chunk and offset inside it */
    while (ci < n_chunks) {
        /* fill one pass with chunk pieces in order; chunks that end in this pass form
         * the contiguous range [first_done, ci) */
        int T = 0, n_ch = 0, first_done = -1, ndone = 0, R = 0;
        while (ci < n_chunks && T < s->P) {
            int n = SEED_MIN(lens[ci] - off, s->P - T);
            cpu_attn_chunk *c = &s->ichunks[n_ch];
            c->tok0 = T;
            c->len = n;
            c->pos0 = m->kv_len[slots[ci]] + off;
            c->ld = 0;
            s->icslot[n_ch++] = slots[ci];
            const int *tg = targets ? targets[ci] : NULL;
            for (int j = 0; j < n; j++) {
                s->ipos[T + j] = c->pos0 + j;
                s->itgt[T + j] = tokens[ci][off + j];
                if (!tg) continue;
                if (tg[off + j] < 0) {
                    out[ci][off + j] = 0.0f;
                    continue;
                }
                s->irowtok[R] = T + j; /* this position's row predicts the target */
                s->ilast[R] = tg[off + j];
                s->idst[R++] = &out[ci][off + j];
            }
            T += n;
            off += n;
            if (off == lens[ci]) {
                if (first_done < 0) first_done = ci;
                if (logits_out) s->ilast[ndone] = T - 1;
                ndone++;
                ci++;
                off = 0;
            }
        }
        cpu_encoder_forward(s->ix, s->itgt, m->w.embed, T, C);
        infer_layers(s, m, T, n_ch, 1);
        if (logits_out && ndone > 0) {
            for (int k = 0; k < ndone; k++)
                memcpy(s->irows + (size_t)k * C, s->ix + (size_t)s->ilast[k] * C,
                       sizeof(float) * C);
            cpu_rmsnorm_forward(s->iln, NULL, s->irows, m->w.norm, ndone, C, m->cfg.rms_norm_eps);
            cpu_matmul_forward(logits_out + (size_t)first_done * V, s->iln, m->w.head, NULL, ndone,
                               C, V, 0.0f);
        }
        if (R > 0) {
            for (int r = 0; r < R; r++)
                memcpy(s->irows + (size_t)r * C, s->ix + (size_t)s->irowtok[r] * C,
                       sizeof(float) * C);
            cpu_rmsnorm_forward(s->iln, NULL, s->irows, m->w.norm, R, C, m->cfg.rms_norm_eps);
            cpu_head_forward(s->ilogp, NULL, s->ilse, s->ilast, s->iln, m->w.head, R, C, V,
                             1.0f / m->temperature, s->head_scratch, NULL);
            for (int r = 0; r < R; r++) *s->idst[r] = s->ilogp[r];
        }
    }
}

static int cpu_forward_cached(model *m, int n_chunks, const int *slots, const int *const *tokens,
                              const int *lens, float *logits_out, char *err, size_t errlen) {
    cached_passes(m, n_chunks, slots, tokens, lens, logits_out, NULL, NULL);
    (void)err;
    (void)errlen;
    return 0;
}

static int cpu_score_cached(model *m, int n_chunks, const int *slots, const int *const *tokens,
                            const int *lens, const int *const *targets, float *const *out,
                            char *err, size_t errlen) {
    cached_passes(m, n_chunks, slots, tokens, lens, NULL, targets, out);
    (void)err;
    (void)errlen;
    return 0;
}

static int cpu_forward_logits(model *m, const int *tokens, int n, float *logits_out, char *err,
                              size_t errlen) {
    cpu_state *s = m->bs;
    set_threads(s);
    cpu_attn_chunk *c = &s->ichunks[0];
    c->tok0 = 0;
    c->len = n;
    c->pos0 = 0;
    c->ld = 0;
    for (int j = 0; j < n; j++) s->ipos[j] = j;
    cpu_encoder_forward(s->ix, tokens, m->w.embed, n, s->C);
    infer_layers(s, m, n, 1, 0);
    cpu_rmsnorm_forward(s->iln, NULL, s->ix, m->w.norm, n, s->C, m->cfg.rms_norm_eps);
    cpu_matmul_forward(logits_out, s->iln, m->w.head, NULL, n, s->C, s->V, 0.0f);
    (void)err;
    (void)errlen;
    return 0;
}

/* ---- scoring ---- */

static int cpu_score(model *m, int n, const int *const *prompt, const int *plen,
                     const int *const *resp, const int *rlen, float *const *out, char *err,
                     size_t errlen) {
    cpu_state *s = m->bs;
    set_threads(s);
    const int C = s->C;
    int i = 0;
    while (i < n) {
        int T = 0, n_ch = 0, first = i;
        while (i < n && (rlen[i] == 0 || T + plen[i] + rlen[i] <= s->P)) {
            if (rlen[i] > 0) {
                cpu_attn_chunk *c = &s->ichunks[n_ch++];
                c->tok0 = T;
                c->len = plen[i] + rlen[i];
                c->pos0 = 0;
                c->ld = 0;
                memcpy(s->itgt + T, prompt[i], sizeof(int) * plen[i]);
                memcpy(s->itgt + T + plen[i], resp[i], sizeof(int) * rlen[i]);
                for (int j = 0; j < c->len; j++) s->ipos[T + j] = j;
                T += c->len;
            }
            i++;
        }
        if (T == 0) continue;
        cpu_encoder_forward(s->ix, s->itgt, m->w.embed, T, C);
        infer_layers(s, m, T, n_ch, 0);
        /* gather the rows predicting response tokens: position plen-1+j predicts resp[j] */
        int R = 0, t0 = 0;
        for (int k = first; k < i; k++) {
            if (rlen[k] == 0) continue;
            for (int j = 0; j < rlen[k]; j++, R++) {
                memcpy(s->irows + (size_t)R * C, s->ix + (size_t)(t0 + plen[k] - 1 + j) * C,
                       sizeof(float) * C);
                s->icslot[R] = resp[k][j];
            }
            t0 += plen[k] + rlen[k];
        }
        cpu_rmsnorm_forward(s->iln, NULL, s->irows, m->w.norm, R, C, m->cfg.rms_norm_eps);
        cpu_head_forward(s->ilogp, NULL, s->ilse, s->icslot, s->iln, m->w.head, R, C, s->V,
                         1.0f / m->temperature, s->head_scratch, NULL);
        R = 0;
        for (int k = first; k < i; k++)
            for (int j = 0; j < rlen[k]; j++) out[k][j] = s->ilogp[R++];
    }
    (void)err;
    (void)errlen;
    return 0;
}

/* ---- training ---- */

/* The batch's chunks; a chunk with a prefix continues the prefix's positions and gets
 * rows in the gather buffers (grown here). Returns 1 when some chunk has a prefix. */
static int train_chunks(cpu_state *s, const model_batch *b, char *err, size_t errlen) {
    size_t rows = 0;
    for (int k = 0; k < b->n_seqs; k++) {
        cpu_attn_chunk *c = &s->tchunks[k];
        const int p = b->prefix ? b->prefix[k] : -1;
        c->tok0 = b->cu_seqlens[k];
        c->len = b->cu_seqlens[k + 1] - b->cu_seqlens[k];
        c->pos0 = p < 0 ? 0 : s->tchunks[p].pos0 + s->tchunks[p].len;
        c->ld = 0;
        for (int j = 0; j < c->len; j++) s->tpos[c->tok0 + j] = c->pos0 + j;
        s->tprefix[k] = p;
        s->tgrow[k] = p < 0 ? -1 : (int)rows;
        if (p >= 0) rows += (size_t)(c->pos0 + c->len);
    }
    s->g_rows = rows;
    if (rows > s->g_cap) {
        size_t bytes = rows * 2 * (size_t)s->KVD * sizeof(float);
        float *g = realloc(s->gkv, bytes), *dg = g ? realloc(s->dgkv, bytes) : NULL;
        if (g) s->gkv = g;
        if (!g || !dg)
            return seed_errf(err, errlen,
                             "cpu backend: cannot allocate %.1f MiB to gather %zu rows of "
                             "shared-prefix keys",
                             2.0 * (double)bytes / 1048576.0, rows);
        s->dgkv = dg;
        s->g_cap = rows;
    }
    return rows > 0;
}

static layer_io train_io(cpu_state *s, int l, int gather) {
    cpu_layer_acts *a = &s->acts[l];
    return (layer_io){.x = a->x,
                      .rstd1 = a->rstd1,
                      .qkv = a->qkv,
                      .att = a->att,
                      .lse = a->lse,
                      .res2 = a->res2,
                      .rstd2 = a->rstd2,
                      .gu = a->gu,
                      .h = s->th,
                      .ln = s->tln,
                      .out = l + 1 < s->L ? s->acts[l + 1].x : s->xf,
                      .gather = gather};
}

static int cpu_train_forward(model *m, const model_batch *b, float *logp, float *entropy, char *err,
                             size_t errlen) {
    cpu_state *s = m->bs;
    set_threads(s);
    const int T = b->n_tokens, C = s->C;
    const int gather = train_chunks(s, b, err, errlen);
    if (gather < 0) return -1;
    cpu_encoder_forward(s->acts[0].x, b->tokens, m->w.embed, T, C);
    for (int l = 0; l < s->L; l++) {
        layer_io io = train_io(s, l, gather);
        layer_forward(s, m, l, T, s->tpos, &io, s->tchunks, b->n_seqs, NULL, NULL, NULL);
    }
    /* the head runs on the rows that have a target (all rows when entropy is asked) */
    int R = 0;
    for (int t = 0; t < T; t++)
        if (entropy || b->targets[t] >= 0) {
            memcpy(s->dlnf + (size_t)R * C, s->xf + (size_t)t * C, sizeof(float) * C);
            s->trow[R] = t;
            s->ttgt[R++] = b->targets[t];
        }
    cpu_rmsnorm_forward(s->lnf, s->rstdf, s->dlnf, m->w.norm, R, C, m->cfg.rms_norm_eps);
    s->fwd_inv_t = 1.0f / m->temperature; /* the backward differentiates this forward */
    cpu_head_forward(s->clogp, entropy ? s->cent : NULL, s->hlse, s->ttgt, s->lnf, m->w.head, R, C,
                     s->V, s->fwd_inv_t, s->head_scratch, s->hkeep);
    memset(logp, 0, sizeof(float) * T);
    if (entropy) memset(entropy, 0, sizeof(float) * T);
    for (int r = 0; r < R; r++) {
        logp[s->trow[r]] = s->clogp[r];
        if (entropy) entropy[s->trow[r]] = s->cent[r];
    }
    s->fwd_entropy = entropy != NULL;
    s->fwd_rows = R;
    (void)err;
    (void)errlen;
    return 0;
}

static void layer_backward(cpu_state *s, model *m, int l, int T, const model_batch *b) {
    const model_layer_weights *w = &m->w.layers[l];
    model_layer_weights *g = &m->g.layers[l];
    cpu_layer_acts *a = &s->acts[l];
    const int C = s->C, I = s->I, Q = s->Q, QKV = s->QKV;
    const float eps = m->cfg.rms_norm_eps;
    float *dx = s->dx; /* (T,C): gradient wrt the layer output, becomes wrt its input */
    /* MLP: out = res2 + down(silu(gate) * up) */
    cpu_rmsnorm_forward(s->tln, NULL, a->res2, w->ln2, T, C, eps);
    cpu_swiglu_forward(s->th, a->gu, T, I);
    cpu_matmul_backward(s->dh, g->wd, NULL, dx, s->th, w->wd, T, I, C, 0.0f);
    cpu_swiglu_backward(s->dgu, s->dh, a->gu, T, I);
    cpu_matmul_backward(s->dln, g->wgu, NULL, s->dgu, s->tln, w->wgu, T, C, 2 * I, 0.0f);
    cpu_rmsnorm_backward(dx, g->ln2, s->dln, a->res2, w->ln2, a->rstd2, T, C, s->partial);
    /* attention: res2 = x + o_proj(att) */
    cpu_matmul_backward(s->datt, g->wo, NULL, dx, a->att, w->wo, T, Q, C, 0.0f);
    memset(s->dqkv, 0, sizeof(float) * T * QKV);
    for (int k = 0; k < b->n_seqs; k++) {
        cpu_attn_chunk *c = &s->tchunks[k];
        c->k = a->qkv + (size_t)c->tok0 * QKV + Q;
        c->v = c->k + s->KVD;
        c->dk = s->dqkv + (size_t)c->tok0 * QKV + Q;
        c->dv = c->dk + s->KVD;
    }
    if (s->g_rows > 0) gather_prefix_kv(s, a->qkv, s->tchunks, b->n_seqs, s->dqkv);
    cpu_attention_backward(s->dqkv, QKV, QKV, s->datt, a->att, a->lse, a->qkv, QKV, s->tchunks,
                           b->n_seqs, QKV, s->H, s->KVH, s->D, s->maxlen, s->attn_scratch,
                           s->nthreads);
    if (s->g_rows > 0) scatter_prefix_dkv(s, s->tchunks, b->n_seqs, s->dqkv);
    cpu_rope_forward(s->dqkv, QKV, s->tpos, T, s->H + s->KVH, s->D, s->rope_cos, s->rope_sin, 1);
    cpu_rmsnorm_forward(s->tln, NULL, a->x, w->ln1, T, C, eps);
    cpu_matmul_backward(s->dln, g->wqkv, g->bqkv, s->dqkv, s->tln, w->wqkv, T, C, QKV, 0.0f);
    cpu_rmsnorm_backward(dx, g->ln1, s->dln, a->x, w->ln1, a->rstd1, T, C, s->partial);
}

static int cpu_train_backward(model *m, const model_batch *b, const float *dlogp,
                              const float *dentropy, char *err, size_t errlen) {
    cpu_state *s = m->bs;
    if (dentropy && !s->fwd_entropy)
        return seed_errf(err, errlen,
                         "model_train_backward: dentropy given but the forward "
                         "computed no entropy (pass an entropy array to model_train_forward)");
    set_threads(s);
    const int T = b->n_tokens, C = s->C;
    /* keep the head rows whose loss gradient is non-zero; compact in place */
    int R = 0;
    for (int r = 0; r < s->fwd_rows; r++) {
        int t = s->trow[r];
        float a = s->ttgt[r] >= 0 ? dlogp[t] : 0.0f, e = dentropy ? dentropy[t] : 0.0f;
        if (a == 0.0f && e == 0.0f) continue;
        s->trow[R] = t;
        s->ttgt[R] = s->ttgt[r];
        s->hlse[R] = s->hlse[r];
        s->rstdf[R] = s->rstdf[r];
        s->cent[R] = s->fwd_entropy ? s->cent[r] : 0.0f;
        s->cdlogp[R] = a;
        s->cdent[R] = e;
        s->krow[R] = r;
        memcpy(s->tln + (size_t)R * C, s->xf + (size_t)t * C, sizeof(float) * C);
        R++;
    }
    s->fwd_rows = 0; /* the compaction consumed the forward's head state */
    m->fwd_tokens = -1;
    memset(s->dx, 0, sizeof(float) * T * C);
    if (R > 0) {
        cpu_rmsnorm_forward(s->lnf, NULL, s->tln, m->w.norm, R, C, m->cfg.rms_norm_eps);
        cpu_head_backward(s->dlnf, m->g.head, s->cdlogp, dentropy ? s->cdent : NULL, s->ttgt,
                          s->hlse, s->cent, s->lnf, m->w.head, R, C, s->V, s->fwd_inv_t,
                          s->head_scratch, s->hkeep, s->krow);
        /* final norm backward on the compact rows, scattered into dx */
        memset(s->dln, 0, sizeof(float) * R * C);
        cpu_rmsnorm_backward(s->dln, m->g.norm, s->dlnf, s->tln, m->w.norm, s->rstdf, R, C,
                             s->partial);
        for (int r = 0; r < R; r++)
            memcpy(s->dx + (size_t)s->trow[r] * C, s->dln + (size_t)r * C, sizeof(float) * C);
    }
    for (int l = s->L - 1; l >= 0; l--) layer_backward(s, m, l, T, b);
    cpu_encoder_backward(m->g.embed, s->dx, b->tokens, T, C);
    return 0;
}

const model_backend model_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .params_changed = NULL,
    .kv_copy_prefix = cpu_kv_copy_prefix,
    .forward_cached = cpu_forward_cached,
    .score_cached = cpu_score_cached,
    .forward_logits = cpu_forward_logits,
    .score = cpu_score,
    .train_forward = cpu_train_forward,
    .train_backward = cpu_train_backward,
    .train_prefix = 1,
};
