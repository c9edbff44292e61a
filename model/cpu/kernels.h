/* kernels.h — the CPU backend's layer kernels, one plain function per layer and
 * direction (llm.c style). fp32 throughout; matrix products go to OpenBLAS
 * (cblas_sgemm), elementwise/norm/softmax/RoPE parts are OpenMP loops.
 *
 * Conventions: T rows (tokens), C hidden, V vocab, I intermediate, H query heads,
 * KVH key/value heads, D head_dim. A weight is row-major (out, in) as in a Hugging
 * Face nn.Linear, so y = x W^T + b. Backward functions ACCUMULATE into parameter
 * gradients (d<weight>) and, where noted, into input gradients. OpenBLAS always runs
 * single-threaded: big products are split over the OpenMP team by cpu_sgemm, and the
 * attention kernels call BLAS per work item inside their OpenMP loop. */
#ifndef SEED_MODEL_CPU_KERNELS_H
#define SEED_MODEL_CPU_KERNELS_H

#include <stdint.h>
#include <string.h>

#include "common/util.h"

/* exp(x) for fp32 in branch-free arithmetic the compiler vectorizes: Cephes' expf
 * polynomial on [-ln2/2, ln2/2] (relative error ~1e-7), 2^k by exponent bits; inputs
 * are clamped to [-87, 88] (so exp of a huge negative is ~1e-38, not 0). */
static inline float cpu_expf(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float magic = 12582912.0f; /* 1.5 * 2^23: rounds to nearest integer */
    float t = x * 1.44269504088896341f + magic;
    int32_t ki;
    memcpy(&ki, &t, sizeof ki);
    float k = t - magic;
    ki -= 0x4B400000; /* bits of magic: ki is now the integer k */
    float r = x - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t e = (ki + 127) << 23;
    float s;
    memcpy(&s, &e, sizeof s);
    return p * s;
}

/* OpenBLAS's own thread count (process-wide). The backend keeps it at 1 and gets its
 * parallelism from OpenMP alone, so OpenBLAS's pthread pool never competes with the
 * OpenMP team for the same cores (both spin while idle). */
void cpu_blas_threads(int n);
/* The OpenBLAS kernel set in use (e.g. "SkylakeX"). A process that OpenBLAS left on its
 * Prescott fallback on an AVX2/AVX-512 CPU executes itself again with OPENBLAS_CORETYPE
 * set, once, before main (matmul.c). */
const char *cpu_blas_core(void);

/* ---- matmul.c ---- */
/* C (M, N) = alpha op(A) op(B) + beta C, row-major (op = transpose when trans*), split
 * over the OpenMP team along the larger output dimension, each part one single-threaded
 * cblas_sgemm; one plain call when small or already inside a parallel region. */
void cpu_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc);
/* out (T, OC) = beta * out + inp (T, C) @ weight (OC, C)^T + bias (OC, may be NULL). */
void cpu_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int T,
                        int C, int OC, float beta);
/* dinp (T, C) = dinp_beta * dinp + dout (T, OC) @ weight (OC, C);
 * dweight (OC, C) += dout^T @ inp; dbias (OC, may be NULL) += column sums of dout.
 */
void cpu_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int T, int C, int OC,
                         float dinp_beta);

/* ---- layers.c ---- */
/* out (T, C) = wte[tokens[t]] (wte is (V, C)). */
void cpu_encoder_forward(float *out, const int *tokens, const float *wte, int T, int C);
/* dwte (V, C) += dout rows scattered by token. */
void cpu_encoder_backward(float *dwte, const float *dout, const int *tokens, int T, int C);
/* out (T, C) = inp * rsqrt(mean(inp^2) + eps) * weight (C); rstd (T, may be NULL). */
void cpu_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int T,
                         int C, float eps);
/* dinp (T, C) += d/dinp; dweight (C) += d/dweight, via partial (nthreads, C) scratch. */
void cpu_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                          const float *weight, const float *rstd, int T, int C, float *partial);
/* RoPE with Hugging Face's rotate_half layout on n_heads heads of D starting at column 0
 * of each row of x (T rows, row stride ld), row t at position pos[t]; in place.
 * cos/sin tables are (max_pos, D/2). inverse=1 rotates back (the backward). */
void cpu_rope_forward(float *x, int ld, const int *pos, int T, int n_heads, int D,
                      const float *cos_t, const float *sin_t, int inverse);
/* h (T, I) = silu(gu[:, :I]) * gu[:, I:], gu is (T, 2I). */
void cpu_swiglu_forward(float *h, const float *gu, int T, int I);
/* dgu (T, 2I) = the gradient of h wrt gate|up from dh (T, I). */
void cpu_swiglu_backward(float *dgu, const float *dh, const float *gu, int T, int I);

/* ---- attention.c ---- */
/* One sequence's queries in a packed batch: rows [tok0, tok0+len) of q hold positions
 * pos0.. pos0+len-1; its keys/values for positions [0, pos0+len) are rows of k and v
 * (row stride ldkv, KV head g at column g*D). */
typedef struct cpu_attn_chunk {
    int tok0, len, pos0;
    const float *k, *v;
    float *dk, *dv; /* backward only: gradients in the same layout as k, v */
    int ld;         /* row stride of k, v, dk, dv; 0: the call's ldkv (and lddkv) */
} cpu_attn_chunk;

/* Causal GQA attention: out (T, H*D) rows of each chunk = softmax(q k^T / sqrt(D)) v.
 * q is (T, ldq) with head h at column h*D. lse (T, H, may be NULL) receives each
 * row's log-sum-exp of the scaled scores for the backward. scratch holds
 * nthreads * CPU_ATTN_BLOCK * max_keys floats. */
#define CPU_ATTN_BLOCK 128
void cpu_attention_forward(float *out, float *lse, const float *q, int ldq,
                           const cpu_attn_chunk *ch, int n_chunks, int ldkv, int H, int KVH, int D,
                           int max_keys, float *scratch, int nthreads);
/* Backward of cpu_attention_forward given dout (T, H*D): dq (T, lddq) is written, dk/dv of
 * every chunk (row stride lddkv) ACCUMULATE, so zero them first. scratch holds
 * nthreads * 2 * CPU_ATTN_BLOCK * max_keys floats. */
void cpu_attention_backward(float *dq, int lddq, int lddkv, const float *dout, const float *out,
                            const float *lse, const float *q, int ldq, const cpu_attn_chunk *ch,
                            int n_chunks, int ldkv, int H, int KVH, int D, int max_keys,
                            float *scratch, int nthreads);

/* ---- head.c: LM head fused with log-softmax over the vocabulary ---- */
/* Rows the head processes per GEMM for a vocabulary of V (bounds the scratch). */
int cpu_head_block_rows(int V);
/* For R rows x (R, C) and head w (V, C): logp[r] = log softmax(x w^T / T)[targets[r]]
 * (0 when targets[r] < 0), entropy[r] (may be NULL), lse[r] saved for the backward;
 * inv_t = 1 / T (model_set_temperature; 1 for the plain softmax). scratch holds
 * cpu_head_block_rows(V) * V floats; keep (R, V, may be NULL) receives the scaled logits
 * x w^T / T for cpu_head_backward. */
void cpu_head_forward(float *logp, float *entropy, float *lse, const int *targets, const float *x,
                      const float *w, int R, int C, int V, float inv_t, float *scratch,
                      float *keep);
/* dx (R, C) = gradient of sum_r dlogp[r] logp[r] + dent[r] entropy[r] wrt x (written);
 * dw (V, C) += its gradient wrt w, both through the division by T (inv_t as in the
 * forward). dent and entropy may be NULL (no entropy term). Row r's scaled logits are
 * kept[kept_row[r]] when kept is non-NULL (cpu_head_forward's keep), otherwise they are
 * recomputed block by block. */
void cpu_head_backward(float *dx, float *dw, const float *dlogp, const float *dent,
                       const int *targets, const float *lse, const float *entropy, const float *x,
                       const float *w, int R, int C, int V, float inv_t, float *scratch,
                       const float *kept, const int *kept_row);

#endif
