/* cuda_backend.cu — the CUDA backend (cuda_backend.h): device state, cuBLAS GEMMs,
 * and the workloads of backend.h composed from kernels.cuh in the CPU backend's order
 * (model/cpu/cpu_backend.c is the reference; its comments on the passes apply here).
 *
 * Memory plan. Device buffers come from one cudaMalloc planned at create time (the
 * same two-pass planner as the CPU backend); per-call index arrays are built in pinned
 * host buffers and copied up, so the workloads allocate nothing. Training keeps per
 * layer the fp32 input x and residual res2, both RMSNorm reciprocal norms, q|k|v after
 * RoPE (bf16), the attention output (bf16) and its log-sum-exp, and gate|up (bf16);
 * the norms' outputs and silu(gate)*up are recomputed in the backward, as on the CPU.
 * The LM head runs over blocks of at most RB rows, (RB, V) logits at a time, so a
 * 152k vocabulary needs ~RB * 0.6 MB, never (T, V).
 *
 * Every workload ends with one stream synchronisation that also collects the first
 * cuBLAS failure, so a device error becomes an error sentence of that call. */
extern "C" {
#include "model/backend.h" /* C declarations (seed_errf, struct model) */
}
#include "model/cuda/cuda_backend.h"
#include "model/cuda/kernels.cuh"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

using seedcu::attn_chunk;
using seedcu::attn_tile;

/* ---- cuBLAS through dlopen ---- */

struct cu_blas {
    void *lib;
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    /* the C symbol's signature (C++ also sees a legacy overload taking cudaDataType) */
    cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const void *, const void *, cudaDataType, int, const void *,
                           cudaDataType, int, const void *, void *, cudaDataType, int,
                           cublasComputeType_t, cublasGemmAlgo_t);
    decltype(&cublasSetWorkspace_v2) set_workspace;
};

static int blas_load(cu_blas *b, char *err, size_t errlen) {
    char name[64];
    snprintf(name, sizeof name, "libcublas.so.%d", CUBLAS_VER_MAJOR);
    b->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!b->lib) b->lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!b->lib)
        return seed_errf(err, errlen, "model.backend cuda: cannot load %s: %s", name, dlerror());
#define LOAD(field, sym)                                                                           \
    if (!(*(void **)&b->field = dlsym(b->lib, sym)))                                               \
        return seed_errf(err, errlen, "model.backend cuda: %s has no %s", name, sym);
    LOAD(create, "cublasCreate_v2");
    LOAD(destroy, "cublasDestroy_v2");
    LOAD(set_stream, "cublasSetStream_v2");
    LOAD(gemm, "cublasGemmEx");
    LOAD(set_workspace, "cublasSetWorkspace_v2");
#undef LOAD
    return 0;
}

/* ---- state ---- */

struct cu_layer_acts {
    float *x, *rstd1, *lse, *res2, *rstd2;
    bf16 *qkv, *att, *gu;
};

/* Pinned host index arrays of one pass (inference or training), copied up per call. */
struct cu_index {
    int *tok, *pos, *tgt, *row;
    long long *kvrow;
    attn_chunk *ch;
    attn_tile *tiles;
    float *f0, *f1; /* per-row floats: log-probs down, dlogp/dentropy up */
};

struct cu_state {
    int dev;
    cudaStream_t st;
    cu_blas blas;
    cublasHandle_t h;
    int blas_status; /* first failing cuBLAS status since the last sync, 0: none */
    int C, V, I, H, KVH, D, Q, KVD, QKV, L, S, maxlen, P, T, RB;
    size_t n; /* parameters */
    void *block;
    size_t block_bytes;
    float *p32, *g, *m1, *m2; /* parameter layout */
    bf16 *pbf;
    float *rope_cos, *rope_sin;
    bf16 *kc, *vc; /* (L, S, maxlen, KVD) */
    double *dsum;
    void *blas_ws;
    /* the LM head's blocks */
    float *hz;
    bf16 *hdz;
    /* inference pass: P tokens */
    float *ix, *iqkv, *irows, *ilogp, *ilse;
    bf16 *iln, *iqkvb, *iatt, *igu, *ih;
    cu_index dI, hI; /* device and pinned-host index arrays, P-sized */
    float **idst;    /* P: where each scored row's log-prob goes (score_cached) */
    int max_tiles_P, max_tiles_T;
    /* training: T tokens */
    cu_layer_acts *acts;
    float *xf, *xrows, *rstdf, *hlse, *hent, *clogp, *dlogp, *dent, *dx, *dh, *dln, *dqkv, *delta;
    float *dxrows, *dlnf;
    bf16 *lnb, *hb, *dxb, *dgub, *dattb, *dqkvb, *lnfb;
    float *tqkv;
    cu_index dT, hT;
    int fwd_rows, fwd_entropy, fwd_tiles;
    float fwd_inv_t;
    int64_t dev_step; /* adam_step the device moments belong to */
    int registered;   /* host arrays pinned with cudaHostRegister */
    model_cuda_grad_hook hook;
    void *hook_ctx;
};

static cu_state *S_(model *m) {
    return (cu_state *)m->bs;
}

#define CU_TRY(x)                                                                                  \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess)                                                                     \
            return seed_errf(err, errlen, "cuda backend: %s failed: %s (%s:%d)", #x,               \
                             cudaGetErrorString(e_), __FILE__, __LINE__);                          \
    } while (0)

/* Wait for the stream; report a kernel or cuBLAS failure of the call as what. */
static int cu_sync(cu_state *s, const char *what, char *err, size_t errlen) {
    cudaError_t e = cudaStreamSynchronize(s->st);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess)
        return seed_errf(err, errlen, "cuda backend: %s: %s", what, cudaGetErrorString(e));
    if (s->blas_status) {
        int st = s->blas_status;
        s->blas_status = 0;
        return seed_errf(err, errlen, "cuda backend: %s: a cuBLAS GEMM failed with status %d", what,
                         st);
    }
    return 0;
}

/* Row-major C (M, N) = alpha op(A) op(B) + beta C as cpu_sgemm, bf16 A and B, fp32
 * accumulation, C fp32 or bf16: the column-major call computes C^T = op(B)^T op(A)^T. */
static void gemm(cu_state *s, int ta, int tb, int M, int N, int K, float alpha, const bf16 *A,
                 int lda, const bf16 *B, int ldb, float beta, void *C, int c_bf16, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
    cublasStatus_t r = s->blas.gemm(
        s->h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B,
        CUDA_R_16BF, ldb, A, CUDA_R_16BF, lda, &beta, C, c_bf16 ? CUDA_R_16BF : CUDA_R_32F, ldc,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (r != CUBLAS_STATUS_SUCCESS && !s->blas_status) s->blas_status = (int)r;
}

/* Device views of a host parameter-layout pointer (into m->params or m->grads). */
static const bf16 *WB(const model *m, const float *host) {
    return S_((model *)m)->pbf + (host - m->params);
}
static float *GD(const model *m, const float *host_param) {
    return S_((model *)m)->g + (host_param - m->params);
}

/* ---- planning ---- */

struct planner {
    char *base;
    size_t off;
};
static void *take(planner *p, size_t bytes) {
    size_t at = p->off;
    p->off += (bytes + 255) / 256 * 256;
    return p->base ? p->base + at : NULL;
}
#define TK(p, type, n) ((type *)take(p, (size_t)(n) * sizeof(type)))

static void plan_index(planner *p, cu_index *x, size_t n, size_t tiles) {
    x->tok = TK(p, int, n);
    x->pos = TK(p, int, n);
    x->tgt = TK(p, int, n);
    x->row = TK(p, int, n);
    x->kvrow = TK(p, long long, n);
    x->ch = TK(p, attn_chunk, n);
    x->tiles = TK(p, attn_tile, tiles);
    x->f0 = TK(p, float, n);
    x->f1 = TK(p, float, n);
}

static void plan_device(cu_state *s, planner *p) {
    const size_t P = s->P, T = s->T, C = s->C, V = s->V, I = s->I;
    s->p32 = TK(p, float, s->n);
    s->pbf = TK(p, bf16, s->n);
    s->rope_cos = TK(p, float, (size_t)s->maxlen * s->D / 2);
    s->rope_sin = TK(p, float, (size_t)s->maxlen * s->D / 2);
    const size_t kv = (size_t)s->L * s->S * s->maxlen * s->KVD;
    s->kc = TK(p, bf16, kv);
    s->vc = TK(p, bf16, kv);
    s->dsum = TK(p, double, 1);
    s->blas_ws = take(p, (size_t)32 << 20);
    s->hz = TK(p, float, (size_t)s->RB *V);
    s->ix = TK(p, float, P *C);
    s->iqkv = TK(p, float, P * s->QKV);
    s->irows = TK(p, float, P *C);
    s->ilogp = TK(p, float, P);
    s->ilse = TK(p, float, P);
    s->iln = TK(p, bf16, P * C);
    s->iqkvb = TK(p, bf16, P * s->QKV);
    s->iatt = TK(p, bf16, P * s->Q);
    s->igu = TK(p, bf16, P * 2 * I);
    s->ih = TK(p, bf16, P * I);
    plan_index(p, &s->dI, P, s->max_tiles_P);
    if (T == 0) return;
    s->g = TK(p, float, s->n);
    s->m1 = TK(p, float, s->n);
    s->m2 = TK(p, float, s->n);
    s->hdz = TK(p, bf16, (size_t)s->RB * V);
    for (int l = 0; l < s->L; l++) {
        cu_layer_acts tmp, *a = p->base ? &s->acts[l] : &tmp;
        a->x = TK(p, float, T *C);
        a->rstd1 = TK(p, float, T);
        a->qkv = TK(p, bf16, T * s->QKV);
        a->att = TK(p, bf16, T * s->Q);
        a->lse = TK(p, float, T * s->H);
        a->res2 = TK(p, float, T *C);
        a->rstd2 = TK(p, float, T);
        a->gu = TK(p, bf16, T * 2 * I);
    }
    s->xf = TK(p, float, T *C);
    s->xrows = TK(p, float, T *C);
    s->rstdf = TK(p, float, T);
    s->hlse = TK(p, float, T);
    s->hent = TK(p, float, T);
    s->clogp = TK(p, float, T);
    s->dlogp = TK(p, float, T);
    s->dent = TK(p, float, T);
    s->dx = TK(p, float, T *C);
    s->dh = TK(p, float, T *I);
    s->dln = TK(p, float, T *C);
    s->dqkv = TK(p, float, T * s->QKV);
    s->delta = TK(p, float, T * s->H);
    s->dxrows = TK(p, float, T *C);
    s->dlnf = TK(p, float, T *C);
    s->tqkv = TK(p, float, T * s->QKV);
    s->lnb = TK(p, bf16, T * C);
    s->hb = TK(p, bf16, T * I);
    s->dxb = TK(p, bf16, T * C);
    s->dgub = TK(p, bf16, T * 2 * I);
    s->dattb = TK(p, bf16, T * s->Q);
    s->dqkvb = TK(p, bf16, T * s->QKV);
    s->lnfb = TK(p, bf16, T * C);
    plan_index(p, &s->dT, T, s->max_tiles_T);
}

static void plan_host(cu_state *s, planner *p) {
    plan_index(p, &s->hI, s->P, s->max_tiles_P);
    if (s->T > 0) plan_index(p, &s->hT, s->T, s->max_tiles_T);
}

static void *host_block(cu_state *s) {
    return s->hI.tok; /* plan_host's first array is the start of the pinned block */
}

static void cuda_destroy(model *m) {
    cu_state *s = S_(m);
    if (!s) return;
    cudaSetDevice(s->dev);
    if (s->st) cudaStreamSynchronize(s->st);
    if (s->registered) {
        cudaHostUnregister(m->params);
        if (m->grads) {
            cudaHostUnregister(m->grads);
            cudaHostUnregister(m->adam_m);
            cudaHostUnregister(m->adam_v);
        }
    }
    if (s->h) s->blas.destroy(s->h);
    if (s->block) cudaFree(s->block);
    if (s->hI.tok) cudaFreeHost(host_block(s));
    if (s->st) cudaStreamDestroy(s->st);
    if (s->blas.lib) dlclose(s->blas.lib);
    free(s->acts);
    free(s->idst);
    free(s);
    m->bs = NULL;
}

extern "C" int model_cuda_available(char *err, size_t errlen) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return seed_errf(err, errlen, "model.backend cuda: no CUDA device (cudaGetDeviceCount: %s)",
                         cudaGetErrorString(e));
    if (n == 0)
        return seed_errf(err, errlen,
                         "model.backend cuda: no CUDA device (cudaGetDeviceCount: 0 devices)");
    return 0;
}

static int cuda_params_changed(model *m, char *err, size_t errlen);

static int cuda_create(model *m, char *err, size_t errlen) {
    if (model_cuda_available(err, errlen)) return -1;
    const model_config *c = &m->cfg;
    if (c->head_dim > SEEDCU_MAX_D)
        return seed_errf(err, errlen, "model.backend cuda: head_dim %d exceeds the %d supported",
                         c->head_dim, SEEDCU_MAX_D);
    cu_state *s = (cu_state *)calloc(1, sizeof *s);
    if (!s) return seed_errf(err, errlen, "cuda backend: out of memory");
    m->bs = s;
    CU_TRY(cudaGetDevice(&s->dev));
    if (blas_load(&s->blas, err, errlen)) return -1;
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
    s->n = m->n_params;
    /* head rows per block: ~256 MiB of fp32 logits, 16..4096 rows (grid.y limit 65535) */
    s->RB = (int)SEED_MAX(16, SEED_MIN(4096, ((size_t)256 << 20) / ((size_t)s->V * 4)));
    /* a pass of n tokens in k chunks has at most n / ROWS + k tiles, k <= n */
    s->max_tiles_P = s->P / SEEDCU_ATT_ROWS + s->P + 1;
    s->max_tiles_T = s->T / SEEDCU_ATT_ROWS + s->T + 1;
    s->idst = (float **)calloc((size_t)s->P, sizeof(float *));
    if (!s->idst) return seed_errf(err, errlen, "cuda backend: out of memory");
    if (s->T > 0) {
        s->acts = (cu_layer_acts *)calloc((size_t)s->L, sizeof *s->acts);
        if (!s->acts) return seed_errf(err, errlen, "cuda backend: out of memory");
    }
    CU_TRY(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking));
    planner p = {NULL, 0};
    plan_device(s, &p);
    s->block_bytes = p.off;
    cudaError_t e = cudaMalloc(&s->block, p.off);
    if (e != cudaSuccess) {
        s->block = NULL;
        return seed_errf(err, errlen,
                         "model.backend cuda: cannot allocate %.2f GiB on the device for the "
                         "limits asked (%s); lower max_train_tokens, max_batch_seqs or "
                         "max_seq_len",
                         (double)p.off / (1 << 30), cudaGetErrorString(e));
    }
    p = (planner){(char *)s->block, 0};
    plan_device(s, &p);
    planner hp = {NULL, 0};
    plan_host(s, &hp);
    void *hb = NULL;
    CU_TRY(cudaMallocHost(&hb, hp.off));
    hp = (planner){(char *)hb, 0};
    plan_host(s, &hp);
    if (s->blas.create(&s->h) != CUBLAS_STATUS_SUCCESS) {
        s->h = NULL;
        return seed_errf(err, errlen, "model.backend cuda: cublasCreate failed");
    }
    if (s->blas.set_stream(s->h, s->st) != CUBLAS_STATUS_SUCCESS ||
        s->blas.set_workspace(s->h, s->blas_ws, (size_t)32 << 20) != CUBLAS_STATUS_SUCCESS)
        return seed_errf(err, errlen, "model.backend cuda: cuBLAS stream/workspace setup failed");
    CU_TRY(seedcu::attention_setup(s->D));
    /* RoPE tables exactly as the CPU backend computes them (fp32 inv_freq and angle) */
    const int half = s->D / 2;
    float *ct = (float *)malloc(sizeof(float) * (size_t)s->maxlen * half * 2);
    if (!ct) return seed_errf(err, errlen, "cuda backend: out of memory");
    float *stb = ct + (size_t)s->maxlen * half;
    for (int i = 0; i < half; i++) {
        float inv = 1.0f / powf(c->rope_theta, (float)(2 * i) / (float)s->D);
        for (int pos = 0; pos < s->maxlen; pos++) {
            float ang = (float)pos * inv;
            ct[(size_t)pos * half + i] = (float)cos((double)ang);
            stb[(size_t)pos * half + i] = (float)sin((double)ang);
        }
    }
    const size_t tb = sizeof(float) * (size_t)s->maxlen * half;
    e = cudaMemcpy(s->rope_cos, ct, tb, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(s->rope_sin, stb, tb, cudaMemcpyHostToDevice);
    free(ct);
    CU_TRY(e);
    /* pinning the host arrays makes the per-step copies run at full PCIe speed */
    if (cudaHostRegister(m->params, s->n * sizeof(float), cudaHostRegisterDefault) == cudaSuccess) {
        s->registered = 1;
        if (m->grads && (cudaHostRegister(m->grads, s->n * sizeof(float), 0) != cudaSuccess ||
                         cudaHostRegister(m->adam_m, s->n * sizeof(float), 0) != cudaSuccess ||
                         cudaHostRegister(m->adam_v, s->n * sizeof(float), 0) != cudaSuccess))
            return seed_errf(err, errlen, "cuda backend: cannot pin the host gradient arrays");
    } else {
        cudaGetLastError(); /* unpinned copies still work, only slower */
    }
    if (s->T > 0) {
        CU_TRY(cudaMemsetAsync(s->g, 0, s->n * sizeof(float), s->st));
        CU_TRY(cudaMemsetAsync(s->m1, 0, s->n * sizeof(float), s->st));
        CU_TRY(cudaMemsetAsync(s->m2, 0, s->n * sizeof(float), s->st));
    }
    return cuda_params_changed(m, err, errlen);
}

static int cuda_params_changed(model *m, char *err, size_t errlen) {
    cu_state *s = S_(m);
    CU_TRY(cudaSetDevice(s->dev));
    CU_TRY(cudaMemcpyAsync(s->p32, m->params, s->n * sizeof(float), cudaMemcpyHostToDevice, s->st));
    seedcu::cast_bf16(s->pbf, s->p32, (long long)s->n, s->st);
    if (s->T > 0) {
        CU_TRY(
            cudaMemcpyAsync(s->m1, m->adam_m, s->n * sizeof(float), cudaMemcpyHostToDevice, s->st));
        CU_TRY(
            cudaMemcpyAsync(s->m2, m->adam_v, s->n * sizeof(float), cudaMemcpyHostToDevice, s->st));
        s->dev_step = m->adam_step;
    }
    return cu_sync(s, "uploading the parameters", err, errlen);
}

/* ---- one layer forward ---- */

struct cu_io {
    float *x, *rstd1, *lse, *res2, *rstd2, *out, *qkvf;
    bf16 *qkv, *att, *gu, *h, *ln;
};

/* A pass's attention layout: chunks and tiles on the device; cached: k/v live in the
 * cache (kvrow names each token's cache row), else in the pass's own qkv rows. */
struct cu_pass {
    int T, n_ch, n_tiles, cached;
    const int *pos;
    const long long *kvrow;
    const attn_chunk *ch;
    const attn_tile *tiles;
};

static void layer_forward(cu_state *s, const model *m, int l, const cu_pass *ps, cu_io *io) {
    const model_layer_weights *w = &m->w.layers[l];
    const int T = ps->T, C = s->C, QKV = s->QKV;
    const float eps = m->cfg.rms_norm_eps;
    seedcu::rmsnorm_forward(io->ln, io->rstd1, io->x, WB(m, w->ln1), T, C, eps, s->st);
    gemm(s, 0, 1, T, QKV, C, 1.0f, io->ln, C, WB(m, w->wqkv), C, 0.0f, io->qkvf, 0, QKV);
    const size_t lay = (size_t)l * s->S * s->maxlen * s->KVD;
    seedcu::bias_rope_forward(io->qkv, io->qkvf, WB(m, w->bqkv), ps->pos, T, s->H, s->KVH, s->D,
                              s->rope_cos, s->rope_sin, ps->cached ? ps->kvrow : NULL, s->kc + lay,
                              s->vc + lay, s->st);
    if (ps->cached)
        seedcu::attention_forward(io->att, io->lse, io->qkv, QKV, s->kc + lay, s->vc + lay, s->KVD,
                                  ps->ch, ps->tiles, ps->n_tiles, s->H, s->KVH, s->D, s->st);
    else
        seedcu::attention_forward(io->att, io->lse, io->qkv, QKV, io->qkv + s->Q,
                                  io->qkv + s->Q + s->KVD, QKV, ps->ch, ps->tiles, ps->n_tiles,
                                  s->H, s->KVH, s->D, s->st);
    if (io->res2 != io->x)
        cudaMemcpyAsync(io->res2, io->x, sizeof(float) * T * C, cudaMemcpyDeviceToDevice, s->st);
    gemm(s, 0, 1, T, C, s->Q, 1.0f, io->att, s->Q, WB(m, w->wo), s->Q, 1.0f, io->res2, 0, C);
    seedcu::rmsnorm_forward(io->ln, io->rstd2, io->res2, WB(m, w->ln2), T, C, eps, s->st);
    gemm(s, 0, 1, T, 2 * s->I, C, 1.0f, io->ln, C, WB(m, w->wgu), C, 0.0f, io->gu, 1, 2 * s->I);
    seedcu::swiglu_forward(io->h, io->gu, T, s->I, s->st);
    if (io->out != io->res2)
        cudaMemcpyAsync(io->out, io->res2, sizeof(float) * T * C, cudaMemcpyDeviceToDevice, s->st);
    gemm(s, 0, 1, T, C, s->I, 1.0f, io->h, s->I, WB(m, w->wd), s->I, 1.0f, io->out, 0, C);
}

/* Append chunk i's tiles (rows in groups of SEEDCU_ATT_ROWS) to the tile list. */
static int add_tiles(attn_tile *t, int n, int chunk, int len) {
    for (int r0 = 0; r0 < len; r0 += SEEDCU_ATT_ROWS)
        t[n++] = attn_tile{chunk, r0, SEED_MIN(SEEDCU_ATT_ROWS, len - r0)};
    return n;
}

/* Copy the first n entries of each pass array up (the host arrays are pinned). */
static int upload_index(cu_state *s, const cu_index *h, const cu_index *d, int T, int n_ch,
                        int n_tiles, int R, char *err, size_t errlen) {
    const cudaMemcpyKind k = cudaMemcpyHostToDevice;
    CU_TRY(cudaMemcpyAsync(d->tok, h->tok, sizeof(int) * T, k, s->st));
    CU_TRY(cudaMemcpyAsync(d->pos, h->pos, sizeof(int) * T, k, s->st));
    CU_TRY(cudaMemcpyAsync(d->kvrow, h->kvrow, sizeof(long long) * T, k, s->st));
    CU_TRY(cudaMemcpyAsync(d->ch, h->ch, sizeof(attn_chunk) * n_ch, k, s->st));
    CU_TRY(cudaMemcpyAsync(d->tiles, h->tiles, sizeof(attn_tile) * n_tiles, k, s->st));
    if (R > 0) {
        CU_TRY(cudaMemcpyAsync(d->tgt, h->tgt, sizeof(int) * R, k, s->st));
        CU_TRY(cudaMemcpyAsync(d->row, h->row, sizeof(int) * R, k, s->st));
    }
    return 0;
}

static void infer_layers(cu_state *s, const model *m, const cu_pass *ps) {
    cu_io io = {};
    io.x = io.res2 = io.out = s->ix;
    io.qkvf = s->iqkv;
    io.qkv = s->iqkvb;
    io.att = s->iatt;
    io.gu = s->igu;
    io.h = s->ih;
    io.ln = s->iln;
    for (int l = 0; l < s->L; l++) layer_forward(s, m, l, ps, &io);
}

/* Head rows of the pass (final norm of rows idx[0..R) of ix): with logits, their
 * logits go to logits_out (R, V) on the host; otherwise log-probs of tgt into ilogp. */
static int head_rows(cu_state *s, const model *m, int R, float *logits_out, char *err,
                     size_t errlen) {
    const int C = s->C, V = s->V;
    seedcu::gather_rows(s->irows, s->ix, s->dI.row, R, C, s->st);
    seedcu::rmsnorm_forward(s->iln, NULL, s->irows, WB(m, m->w.norm), R, C, m->cfg.rms_norm_eps,
                            s->st);
    const float inv_t = logits_out ? 1.0f : 1.0f / m->temperature;
    for (int r0 = 0; r0 < R; r0 += s->RB) {
        const int M = SEED_MIN(s->RB, R - r0);
        gemm(s, 0, 1, M, V, C, inv_t, s->iln + (size_t)r0 * C, C, WB(m, m->w.head), C, 0.0f, s->hz,
             0, V);
        if (logits_out) {
            CU_TRY(cudaMemcpyAsync(logits_out + (size_t)r0 * V, s->hz, sizeof(float) * M * V,
                                   cudaMemcpyDeviceToHost, s->st));
            /* hz is reused by the next block: wait for this copy */
            if (cu_sync(s, "the LM head", err, errlen)) return -1;
        } else {
            seedcu::head_stats(s->ilogp + r0, NULL, s->ilse + r0, s->dI.tgt + r0, s->hz, M, V,
                               s->st);
        }
    }
    return 0;
}

/* ---- generation with the KV cache ---- */

static void cuda_kv_copy_prefix(model *m, int dst, int src, int n) {
    cu_state *s = S_(m);
    cudaSetDevice(s->dev);
    const size_t pitch = (size_t)s->S * s->maxlen * s->KVD * sizeof(bf16);
    const size_t width = (size_t)n * s->KVD * sizeof(bf16);
    const size_t od = (size_t)dst * s->maxlen * s->KVD, os = (size_t)src * s->maxlen * s->KVD;
    /* one 2D copy per cache: L rows (layers) of n positions */
    cudaMemcpy2DAsync(s->kc + od, pitch, s->kc + os, pitch, width, s->L, cudaMemcpyDeviceToDevice,
                      s->st);
    cudaMemcpy2DAsync(s->vc + od, pitch, s->vc + os, pitch, width, s->L, cudaMemcpyDeviceToDevice,
                      s->st);
    /* backend.h gives this entry no error path: a failure shows at the next call's sync */
}

/* cpu_backend.c's cached_passes on the device: chunks in passes of at most P tokens. */
static int cached_passes(model *m, int n_chunks, const int *slots, const int *const *tokens,
                         const int *lens, float *logits_out, const int *const *targets,
                         float *const *out, char *err, size_t errlen) {
    cu_state *s = S_(m);
    CU_TRY(cudaSetDevice(s->dev));
    cu_index *h = &s->hI;
    float **dst = s->idst;
    int rc = 0, ci = 0, off = 0;
    while (ci < n_chunks && rc == 0) {
        int T = 0, n_ch = 0, n_tiles = 0, first_done = -1, ndone = 0, R = 0;
        while (ci < n_chunks && T < s->P) {
            const int n = SEED_MIN(lens[ci] - off, s->P - T), slot = slots[ci];
            const int pos0 = m->kv_len[slot] + off;
            h->ch[n_ch] = attn_chunk{T, n, pos0, (long long)slot * s->maxlen * s->KVD};
            n_tiles = add_tiles(h->tiles, n_tiles, n_ch, n);
            n_ch++;
            const int *tg = targets ? targets[ci] : NULL;
            for (int j = 0; j < n; j++) {
                h->pos[T + j] = pos0 + j;
                h->tok[T + j] = tokens[ci][off + j];
                h->kvrow[T + j] = (long long)slot * s->maxlen + pos0 + j;
                if (!tg) continue;
                if (tg[off + j] < 0) {
                    out[ci][off + j] = 0.0f;
                    continue;
                }
                h->row[R] = T + j;
                h->tgt[R] = tg[off + j];
                dst[R++] = &out[ci][off + j];
            }
            T += n;
            off += n;
            if (off == lens[ci]) {
                if (first_done < 0) first_done = ci;
                if (logits_out) h->row[ndone] = T - 1;
                ndone++;
                ci++;
                off = 0;
            }
        }
        const int nrows = logits_out ? ndone : R;
        if ((rc = upload_index(s, h, &s->dI, T, n_ch, n_tiles, nrows, err, errlen))) break;
        seedcu::encoder_forward(s->ix, s->dI.tok, WB(m, m->w.embed), T, s->C, s->st);
        cu_pass ps = {T, n_ch, n_tiles, 1, s->dI.pos, s->dI.kvrow, s->dI.ch, s->dI.tiles};
        infer_layers(s, m, &ps);
        if (logits_out && ndone > 0)
            rc = head_rows(s, m, ndone, logits_out + (size_t)first_done * s->V, err, errlen);
        if (!rc && R > 0) {
            rc = head_rows(s, m, R, NULL, err, errlen);
            if (!rc && cudaMemcpyAsync(h->f0, s->ilogp, sizeof(float) * R, cudaMemcpyDeviceToHost,
                                       s->st) != cudaSuccess)
                rc = seed_errf(err, errlen, "cuda backend: copying log-probs down failed");
        }
        if (!rc)
            rc = cu_sync(s, targets ? "model_score_cached" : "model_forward_cached", err, errlen);
        for (int r = 0; !rc && r < R; r++) *dst[r] = h->f0[r];
    }
    return rc;
}

static int cuda_forward_cached(model *m, int n_chunks, const int *slots, const int *const *tokens,
                               const int *lens, float *logits_out, char *err, size_t errlen) {
    return cached_passes(m, n_chunks, slots, tokens, lens, logits_out, NULL, NULL, err, errlen);
}

static int cuda_score_cached(model *m, int n_chunks, const int *slots, const int *const *tokens,
                             const int *lens, const int *const *targets, float *const *out,
                             char *err, size_t errlen) {
    return cached_passes(m, n_chunks, slots, tokens, lens, NULL, targets, out, err, errlen);
}

static int cuda_forward_logits(model *m, const int *tokens, int n, float *logits_out, char *err,
                               size_t errlen) {
    cu_state *s = S_(m);
    CU_TRY(cudaSetDevice(s->dev));
    cu_index *h = &s->hI;
    h->ch[0] = attn_chunk{0, n, 0, 0};
    const int n_tiles = add_tiles(h->tiles, 0, 0, n);
    for (int j = 0; j < n; j++) {
        h->tok[j] = tokens[j];
        h->pos[j] = j;
        h->kvrow[j] = 0;
        h->row[j] = j;
    }
    if (upload_index(s, h, &s->dI, n, 1, n_tiles, n, err, errlen)) return -1;
    seedcu::encoder_forward(s->ix, s->dI.tok, WB(m, m->w.embed), n, s->C, s->st);
    cu_pass ps = {n, 1, n_tiles, 0, s->dI.pos, NULL, s->dI.ch, s->dI.tiles};
    infer_layers(s, m, &ps);
    if (head_rows(s, m, n, logits_out, err, errlen)) return -1;
    return cu_sync(s, "model_forward_logits", err, errlen);
}

/* ---- scoring ---- */

static int cuda_score(model *m, int n, const int *const *prompt, const int *plen,
                      const int *const *resp, const int *rlen, float *const *out, char *err,
                      size_t errlen) {
    cu_state *s = S_(m);
    CU_TRY(cudaSetDevice(s->dev));
    cu_index *h = &s->hI;
    int i = 0;
    while (i < n) {
        int T = 0, n_ch = 0, n_tiles = 0, first = i, R = 0;
        while (i < n && (rlen[i] == 0 || T + plen[i] + rlen[i] <= s->P)) {
            if (rlen[i] > 0) {
                const int len = plen[i] + rlen[i];
                h->ch[n_ch] = attn_chunk{T, len, 0, (long long)T * s->QKV};
                n_tiles = add_tiles(h->tiles, n_tiles, n_ch, len);
                n_ch++;
                memcpy(h->tok + T, prompt[i], sizeof(int) * plen[i]);
                memcpy(h->tok + T + plen[i], resp[i], sizeof(int) * rlen[i]);
                for (int j = 0; j < len; j++) {
                    h->pos[T + j] = j;
                    h->kvrow[T + j] = 0;
                }
                /* position plen-1+j predicts resp[j] */
                for (int j = 0; j < rlen[i]; j++, R++) {
                    h->row[R] = T + plen[i] - 1 + j;
                    h->tgt[R] = resp[i][j];
                }
                T += len;
            }
            i++;
        }
        if (T == 0) continue;
        if (upload_index(s, h, &s->dI, T, n_ch, n_tiles, R, err, errlen)) return -1;
        seedcu::encoder_forward(s->ix, s->dI.tok, WB(m, m->w.embed), T, s->C, s->st);
        cu_pass ps = {T, n_ch, n_tiles, 0, s->dI.pos, NULL, s->dI.ch, s->dI.tiles};
        infer_layers(s, m, &ps);
        if (head_rows(s, m, R, NULL, err, errlen)) return -1;
        CU_TRY(cudaMemcpyAsync(h->f0, s->ilogp, sizeof(float) * R, cudaMemcpyDeviceToHost, s->st));
        if (cu_sync(s, "model_score", err, errlen)) return -1;
        R = 0;
        for (int k = first; k < i; k++)
            for (int j = 0; j < rlen[k]; j++) out[k][j] = h->f0[R++];
    }
    return 0;
}

/* ---- training ---- */

static cu_io train_io(cu_state *s, int l) {
    cu_layer_acts *a = &s->acts[l];
    cu_io io = {};
    io.x = a->x;
    io.rstd1 = a->rstd1;
    io.qkv = a->qkv;
    io.att = a->att;
    io.lse = a->lse;
    io.res2 = a->res2;
    io.rstd2 = a->rstd2;
    io.gu = a->gu;
    io.h = s->hb;
    io.ln = s->lnb;
    io.qkvf = s->tqkv;
    io.out = l + 1 < s->L ? s->acts[l + 1].x : s->xf;
    return io;
}

static cu_pass train_pass(cu_state *s, const model_batch *b) {
    cu_pass ps = {b->n_tokens, b->n_seqs, s->fwd_tiles, 0, s->dT.pos, NULL, s->dT.ch, s->dT.tiles};
    return ps;
}

static int cuda_train_forward(model *m, const model_batch *b, float *logp, float *entropy,
                              char *err, size_t errlen) {
    cu_state *s = S_(m);
    CU_TRY(cudaSetDevice(s->dev));
    cu_index *h = &s->hT;
    const int T = b->n_tokens, C = s->C, V = s->V;
    int n_tiles = 0;
    for (int k = 0; k < b->n_seqs; k++) {
        const int t0 = b->cu_seqlens[k], len = b->cu_seqlens[k + 1] - t0;
        h->ch[k] = attn_chunk{t0, len, 0, (long long)t0 * s->QKV};
        n_tiles = add_tiles(h->tiles, n_tiles, k, len);
        for (int j = 0; j < len; j++) {
            h->pos[t0 + j] = j;
            h->kvrow[t0 + j] = 0;
        }
    }
    memcpy(h->tok, b->tokens, sizeof(int) * T);
    /* the head runs on the rows that have a target (all rows when entropy is asked) */
    int R = 0;
    for (int t = 0; t < T; t++)
        if (entropy || b->targets[t] >= 0) {
            h->row[R] = t;
            h->tgt[R++] = b->targets[t];
        }
    s->fwd_tiles = n_tiles;
    if (upload_index(s, h, &s->dT, T, b->n_seqs, n_tiles, R, err, errlen)) return -1;
    seedcu::encoder_forward(s->acts[0].x, s->dT.tok, WB(m, m->w.embed), T, C, s->st);
    cu_pass ps = train_pass(s, b);
    for (int l = 0; l < s->L; l++) {
        cu_io io = train_io(s, l);
        layer_forward(s, m, l, &ps, &io);
    }
    s->fwd_inv_t = 1.0f / m->temperature; /* the backward differentiates this forward */
    seedcu::gather_rows(s->xrows, s->xf, s->dT.row, R, C, s->st);
    seedcu::rmsnorm_forward(s->lnfb, s->rstdf, s->xrows, WB(m, m->w.norm), R, C,
                            m->cfg.rms_norm_eps, s->st);
    for (int r0 = 0; r0 < R; r0 += s->RB) {
        const int M = SEED_MIN(s->RB, R - r0);
        gemm(s, 0, 1, M, V, C, s->fwd_inv_t, s->lnfb + (size_t)r0 * C, C, WB(m, m->w.head), C, 0.0f,
             s->hz, 0, V);
        seedcu::head_stats(s->clogp + r0, entropy ? s->hent + r0 : NULL, s->hlse + r0,
                           s->dT.tgt + r0, s->hz, M, V, s->st);
    }
    if (R > 0) {
        CU_TRY(cudaMemcpyAsync(h->f0, s->clogp, sizeof(float) * R, cudaMemcpyDeviceToHost, s->st));
        if (entropy)
            CU_TRY(
                cudaMemcpyAsync(h->f1, s->hent, sizeof(float) * R, cudaMemcpyDeviceToHost, s->st));
    }
    if (cu_sync(s, "model_train_forward", err, errlen)) return -1;
    memset(logp, 0, sizeof(float) * T);
    if (entropy) memset(entropy, 0, sizeof(float) * T);
    for (int r = 0; r < R; r++) {
        logp[h->row[r]] = h->tgt[r] >= 0 ? h->f0[r] : 0.0f;
        if (entropy) entropy[h->row[r]] = h->f1[r];
    }
    s->fwd_entropy = entropy != NULL;
    s->fwd_rows = R;
    return 0;
}

static void hook(cu_state *s, int first, int end) {
    if (s->hook) s->hook(s->hook_ctx, first, end);
}

static void layer_backward(cu_state *s, const model *m, int l, const model_batch *b) {
    const model_layer_weights *w = &m->w.layers[l];
    const cu_layer_acts *a = &s->acts[l];
    const int T = b->n_tokens, C = s->C, I = s->I, Q = s->Q, QKV = s->QKV;
    const float eps = m->cfg.rms_norm_eps;
    cudaStream_t st = s->st;
    /* MLP: out = res2 + down(silu(gate) * up) */
    seedcu::rmsnorm_forward(s->lnb, NULL, a->res2, WB(m, w->ln2), T, C, eps, st);
    seedcu::swiglu_forward(s->hb, a->gu, T, I, st);
    seedcu::cast_bf16(s->dxb, s->dx, (long long)T * C, st);
    gemm(s, 1, 0, C, I, T, 1.0f, s->dxb, C, s->hb, I, 1.0f, GD(m, w->wd), 0, I);
    gemm(s, 0, 0, T, I, C, 1.0f, s->dxb, C, WB(m, w->wd), I, 0.0f, s->dh, 0, I);
    seedcu::swiglu_backward(s->dgub, s->dh, a->gu, T, I, st);
    gemm(s, 1, 0, 2 * I, C, T, 1.0f, s->dgub, 2 * I, s->lnb, C, 1.0f, GD(m, w->wgu), 0, C);
    gemm(s, 0, 0, T, C, 2 * I, 1.0f, s->dgub, 2 * I, WB(m, w->wgu), C, 0.0f, s->dln, 0, C);
    seedcu::rmsnorm_backward(s->dx, GD(m, w->ln2), s->dln, a->res2, WB(m, w->ln2), a->rstd2, T, C,
                             st);
    /* attention: res2 = x + o_proj(att) */
    seedcu::cast_bf16(s->dxb, s->dx, (long long)T * C, st);
    gemm(s, 1, 0, C, Q, T, 1.0f, s->dxb, C, a->att, Q, 1.0f, GD(m, w->wo), 0, Q);
    gemm(s, 0, 0, T, Q, C, 1.0f, s->dxb, C, WB(m, w->wo), Q, 0.0f, s->dattb, 1, Q);
    seedcu::attention_backward(s->dqkv, QKV, s->delta, s->dattb, a->att, a->lse, a->qkv, QKV,
                               s->dT.ch, s->dT.tiles, s->fwd_tiles, T, s->H, s->KVH, s->D, st);
    seedcu::rope_backward(s->dqkv, s->dT.pos, T, s->H, s->KVH, s->D, s->rope_cos, s->rope_sin, st);
    seedcu::bias_backward(GD(m, w->bqkv), s->dqkv, T, QKV, st);
    seedcu::cast_bf16(s->dqkvb, s->dqkv, (long long)T * QKV, st);
    seedcu::rmsnorm_forward(s->lnb, NULL, a->x, WB(m, w->ln1), T, C, eps, st);
    gemm(s, 1, 0, QKV, C, T, 1.0f, s->dqkvb, QKV, s->lnb, C, 1.0f, GD(m, w->wqkv), 0, C);
    gemm(s, 0, 0, T, C, QKV, 1.0f, s->dqkvb, QKV, WB(m, w->wqkv), C, 0.0f, s->dln, 0, C);
    seedcu::rmsnorm_backward(s->dx, GD(m, w->ln1), s->dln, a->x, WB(m, w->ln1), a->rstd1, T, C, st);
}

static int cuda_train_backward(model *m, const model_batch *b, const float *dlogp,
                               const float *dentropy, char *err, size_t errlen) {
    cu_state *s = S_(m);
    if (dentropy && !s->fwd_entropy)
        return seed_errf(err, errlen,
                         "model_train_backward: dentropy given but the forward "
                         "computed no entropy (pass an entropy array to model_train_forward)");
    CU_TRY(cudaSetDevice(s->dev));
    const int T = b->n_tokens, C = s->C, V = s->V, R = s->fwd_rows;
    cu_index *h = &s->hT;
    for (int r = 0; r < R; r++) {
        const int t = h->row[r];
        h->f0[r] = h->tgt[r] >= 0 ? dlogp[t] : 0.0f;
        h->f1[r] = dentropy ? dentropy[t] : 0.0f;
    }
    s->fwd_rows = 0; /* one backward per forward */
    m->fwd_tokens = -1;
    if (R > 0) {
        CU_TRY(cudaMemcpyAsync(s->dlogp, h->f0, sizeof(float) * R, cudaMemcpyHostToDevice, s->st));
        CU_TRY(cudaMemcpyAsync(s->dent, h->f1, sizeof(float) * R, cudaMemcpyHostToDevice, s->st));
    }
    CU_TRY(cudaMemsetAsync(s->dx, 0, sizeof(float) * T * C, s->st));
    float *ghead = GD(m, m->w.head);
    for (int r0 = 0; r0 < R; r0 += s->RB) {
        const int M = SEED_MIN(s->RB, R - r0);
        const bf16 *xb = s->lnfb + (size_t)r0 * C;
        gemm(s, 0, 1, M, V, C, s->fwd_inv_t, xb, C, WB(m, m->w.head), C, 0.0f, s->hz, 0, V);
        seedcu::head_dlogits(s->hdz, s->hz, s->hlse + r0, dentropy ? s->hent + r0 : NULL,
                             s->dT.tgt + r0, s->dlogp + r0, dentropy ? s->dent + r0 : NULL, M, V,
                             s->st);
        /* dz is wrt the scaled logits: the chain rule's 1/T is the GEMMs' alpha */
        gemm(s, 0, 0, M, C, V, s->fwd_inv_t, s->hdz, V, WB(m, m->w.head), C, 0.0f,
             s->dlnf + (size_t)r0 * C, 0, C);
        gemm(s, 1, 0, V, C, M, s->fwd_inv_t, s->hdz, V, xb, C, 1.0f, ghead, 0, C);
    }
    if (R > 0) {
        CU_TRY(cudaMemsetAsync(s->dxrows, 0, sizeof(float) * R * C, s->st));
        seedcu::rmsnorm_backward(s->dxrows, GD(m, m->w.norm), s->dlnf, s->xrows, WB(m, m->w.norm),
                                 s->rstdf, R, C, s->st);
        seedcu::scatter_rows(s->dx, s->dxrows, s->dT.row, R, C, s->st);
    }
    const int nt = m->n_tensors, L = s->L;
    /* final norm (and an untied head) are done; a tied head's gradient is the embedding's */
    hook(s, 1 + 12 * L, nt);
    for (int l = L - 1; l >= 0; l--) {
        layer_backward(s, m, l, b);
        hook(s, 1 + 12 * l, 13 + 12 * l);
    }
    seedcu::encoder_backward(GD(m, m->w.embed), s->dx, s->dT.tok, T, C, s->st);
    hook(s, 0, 1);
    return cu_sync(s, "model_train_backward", err, errlen);
}

/* ---- gradients and AdamW on the device ---- */

static void cuda_zero_grad(model *m) {
    cu_state *s = S_(m);
    if (!s->g) return;
    cudaSetDevice(s->dev);
    cudaMemsetAsync(s->g, 0, s->n * sizeof(float), s->st);
}

static float cuda_grad_norm(model *m) {
    cu_state *s = S_(m);
    if (!s->g) return 0.0f;
    cudaSetDevice(s->dev);
    seedcu::sumsq(s->dsum, s->g, (long long)s->n, s->st);
    double ss = 0.0;
    if (cudaMemcpyAsync(&ss, s->dsum, sizeof ss, cudaMemcpyDeviceToHost, s->st) != cudaSuccess ||
        cudaStreamSynchronize(s->st) != cudaSuccess)
        return NAN; /* the caller treats a non-finite norm as a failed step */
    return (float)sqrt(ss);
}

static int cuda_adamw_step(model *m, const model_adamw *opt, float *grad_norm_out, char *err,
                           size_t errlen) {
    cu_state *s = S_(m);
    if (!s->g)
        return seed_errf(err, errlen,
                         "model_adamw_step: the model was created without training "
                         "(max_train_tokens 0)");
    if (!(opt->lr >= 0) || !(opt->beta1 >= 0 && opt->beta1 < 1) ||
        !(opt->beta2 >= 0 && opt->beta2 < 1) || !(opt->eps > 0) || !(opt->weight_decay >= 0))
        return seed_errf(err, errlen,
                         "model_adamw_step: lr %g, betas (%g, %g), eps %g, weight_decay %g: "
                         "expected lr >= 0, betas in [0, 1), eps > 0, weight_decay >= 0",
                         (double)opt->lr, (double)opt->beta1, (double)opt->beta2, (double)opt->eps,
                         (double)opt->weight_decay);
    CU_TRY(cudaSetDevice(s->dev));
    if (m->adam_step != s->dev_step) { /* the host moments were reset or restored */
        CU_TRY(
            cudaMemcpyAsync(s->m1, m->adam_m, s->n * sizeof(float), cudaMemcpyHostToDevice, s->st));
        CU_TRY(
            cudaMemcpyAsync(s->m2, m->adam_v, s->n * sizeof(float), cudaMemcpyHostToDevice, s->st));
    }
    const float norm = cuda_grad_norm(m);
    if (grad_norm_out) *grad_norm_out = norm;
    if (!isfinite(norm))
        return seed_errf(err, errlen, "model_adamw_step: gradient norm is %g; step skipped",
                         (double)norm);
    float clip = 1.0f;
    if (opt->max_grad_norm > 0) clip = SEED_MIN(1.0f, opt->max_grad_norm / (norm + 1e-6f));
    m->adam_step++;
    const double t = (double)m->adam_step;
    const float step_size = (float)(opt->lr / (1.0 - pow(opt->beta1, t)));
    const float bc2_sqrt = (float)sqrt(1.0 - pow(opt->beta2, t));
    for (int k = 0; k < m->n_tensors; k++) {
        const model_tensor_info *ti = &m->tensors[k];
        const size_t o = ti->offset;
        const float decay = m->decay[k] ? 1.0f - opt->lr * opt->weight_decay : 1.0f;
        seedcu::adamw_update(s->p32 + o, s->pbf + o, s->g + o, s->m1 + o, s->m2 + o,
                             (long long)ti->numel, clip, decay, opt->beta1, opt->beta2, step_size,
                             bc2_sqrt, opt->eps, s->st);
    }
    /* the host arrays stay the truth for checkpoints and the weight publisher */
    const size_t bytes = s->n * sizeof(float);
    CU_TRY(cudaMemcpyAsync(m->params, s->p32, bytes, cudaMemcpyDeviceToHost, s->st));
    CU_TRY(cudaMemcpyAsync(m->adam_m, s->m1, bytes, cudaMemcpyDeviceToHost, s->st));
    CU_TRY(cudaMemcpyAsync(m->adam_v, s->m2, bytes, cudaMemcpyDeviceToHost, s->st));
    s->dev_step = m->adam_step;
    return cu_sync(s, "model_adamw_step", err, errlen);
}

/* ---- the extra entry points ---- */

extern "C" int model_cuda_grads_to_host(model *m, char *err, size_t errlen) {
    cu_state *s = S_(m);
    if (m->be != &model_cuda_backend || !s->g)
        return seed_errf(err, errlen,
                         "model_cuda_grads_to_host: the model is not a training cuda model");
    CU_TRY(cudaSetDevice(s->dev));
    CU_TRY(cudaMemcpyAsync(m->grads, s->g, s->n * sizeof(float), cudaMemcpyDeviceToHost, s->st));
    return cu_sync(s, "copying the gradients down", err, errlen);
}

extern "C" float *model_cuda_device_grads(model *m) {
    return m->be == &model_cuda_backend ? S_(m)->g : NULL;
}

extern "C" void *model_cuda_stream(model *m) {
    return m->be == &model_cuda_backend ? (void *)S_(m)->st : NULL;
}

extern "C" void model_cuda_set_grad_hook(model *m, model_cuda_grad_hook fn, void *ctx) {
    if (m->be != &model_cuda_backend) return;
    S_(m)->hook = fn;
    S_(m)->hook_ctx = ctx;
}

extern "C" const model_backend model_cuda_backend = {
    "cuda",
    cuda_create,
    cuda_destroy,
    cuda_params_changed,
    cuda_kv_copy_prefix,
    cuda_forward_cached,
    cuda_score_cached,
    cuda_forward_logits,
    cuda_score,
    cuda_train_forward,
    cuda_train_backward,
    cuda_zero_grad,
    cuda_grad_norm,
    cuda_adamw_step,
    0, /* train_prefix: model_batch.prefix is refused (model.c); the learner packs whole */
};
