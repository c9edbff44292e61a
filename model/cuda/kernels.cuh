/* kernels.cuh — the CUDA backend's layer kernels: the CPU backend's functions
 * (model/cpu/kernels.h) with the same names less the cpu_ prefix and the same argument
 * order, in namespace seedcu, for bf16 weights and activations with fp32 accumulation.
 *
 * Conventions (as kernels.h): T rows, C hidden, V vocab, I intermediate, H query heads,
 * KVH key/value heads, D head_dim (D <= SEEDCU_MAX_D). Weights are row-major (out, in).
 * The residual stream, norms' statistics, gradients and AdamW state are fp32; GEMM
 * inputs are bf16. Backward functions ACCUMULATE into parameter gradients. Every
 * launcher enqueues on the given stream and returns at once; a launch error surfaces
 * at the backend's next synchronisation (cuda_backend.cu checks it there). */
#ifndef SEED_MODEL_CUDA_KERNELS_CUH
#define SEED_MODEL_CUDA_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

#define SEEDCU_MAX_D 256   /* head_dim the attention kernels support */
#define SEEDCU_ATT_ROWS 8  /* query (or key) rows per attention block: one warp each */
#define SEEDCU_ATT_KEYS 32 /* keys (or queries) staged in shared memory per step */

namespace seedcu {

/* One sequence piece of a packed pass, as attn_chunk (kernels.h): rows [tok0, tok0+len)
 * of q hold positions pos0..pos0+len-1; key/value row j (position j) of this chunk is
 * at element kvoff + j * ldkv of the k and v bases. */
struct attn_chunk {
    int tok0, len, pos0;
    long long kvoff;
};
/* A block's work: rows [r0, r0 + n) of chunk (n <= SEEDCU_ATT_ROWS). */
struct attn_tile {
    int chunk, r0, n;
};

/* ---- casts and copies ---- */
void cast_bf16(bf16 *out, const float *in, long long n, cudaStream_t st);
/* dst (R, C) = src rows idx[r] (gather); scatter: dst rows idx[r] = src (R, C). */
void gather_rows(float *dst, const float *src, const int *idx, int R, int C, cudaStream_t st);
void scatter_rows(float *dst, const float *src, const int *idx, int R, int C, cudaStream_t st);

/* ---- layers ---- */
/* out (T, C) = wte[tokens[t]] (wte (V, C) bf16). */
void encoder_forward(float *out, const int *tokens, const bf16 *wte, int T, int C, cudaStream_t st);
/* dwte (V, C) += dout rows scattered by token. */
void encoder_backward(float *dwte, const float *dout, const int *tokens, int T, int C,
                      cudaStream_t st);
/* out (T, C) bf16 = inp * rsqrt(mean(inp^2) + eps) * weight; rstd (T, may be NULL). */
void rmsnorm_forward(bf16 *out, float *rstd, const float *inp, const bf16 *weight, int T, int C,
                     float eps, cudaStream_t st);
/* dinp (T, C) += d/dinp; dweight (C) += d/dweight. */
void rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                      const bf16 *weight, const float *rstd, int T, int C, cudaStream_t st);
/* out (T, QKV) bf16 = RoPE(qkv + bias) on the n_rot = H + KVH heads of D (rotate_half
 * layout), row t at position pos[t]; the v part gets the bias only. With kvrow (not
 * NULL): row t's k and v (KVH D columns each) also go to row kvrow[t] of kc and vc. */
void bias_rope_forward(bf16 *out, const float *qkv, const bf16 *bias, const int *pos, int T, int H,
                       int KVH, int D, const float *cos_t, const float *sin_t,
                       const long long *kvrow, bf16 *kc, bf16 *vc, cudaStream_t st);
/* The inverse rotation of the q and k heads of dqkv (T, QKV) in place (the backward). */
void rope_backward(float *dqkv, const int *pos, int T, int H, int KVH, int D, const float *cos_t,
                   const float *sin_t, cudaStream_t st);
/* dbias (OC) += column sums of dout (T, OC). */
void bias_backward(float *dbias, const float *dout, int T, int OC, cudaStream_t st);
/* h (T, I) = silu(gu[:, :I]) * gu[:, I:]. */
void swiglu_forward(bf16 *h, const bf16 *gu, int T, int I, cudaStream_t st);
/* dgu (T, 2I) from dh (T, I). */
void swiglu_backward(bf16 *dgu, const float *dh, const bf16 *gu, int T, int I, cudaStream_t st);

/* ---- attention: tiled, online softmax, nothing of size T x T ---- */
/* out (T, H D) = softmax(q k^T / sqrt(D)) v per chunk, causal; lse (T, H, may be NULL). */
void attention_forward(bf16 *out, float *lse, const bf16 *q, int ldq, const bf16 *k, const bf16 *v,
                       int ldkv, const attn_chunk *ch, const attn_tile *tiles, int n_tiles, int H,
                       int KVH, int D, cudaStream_t st);
/* The backward over training chunks (pos0 = 0, keys in the chunk's own rows of k, v):
 * dq (written) and dk, dv (written: each key row is owned by one block) into dqkv
 * (T, lddq) at the q, k and v columns (0, H D, H D + KVH D). delta (T, H) is scratch.
 * tiles cover every chunk's rows (the forward's tiles); T is the pass's row count. */
void attention_backward(float *dqkv, int lddq, float *delta, const bf16 *dout, const bf16 *out,
                        const float *lse, const bf16 *qkv, int ldq, const attn_chunk *ch,
                        const attn_tile *tiles, int n_tiles, int T, int H, int KVH, int D,
                        cudaStream_t st);
/* Opt the attention kernels into the shared memory head_dim D needs (once). */
cudaError_t attention_setup(int D);

/* ---- LM head statistics over a block of R rows of logits z (R, V) fp32 ---- */
/* logp[r] = z[targets[r]] - lse[r] (0 when targets[r] < 0); entropy (may be NULL). */
void head_stats(float *logp, float *entropy, float *lse, const int *targets, const float *z, int R,
                int V, cudaStream_t st);
/* dz (R, V) bf16 = gradient wrt z of dlogp[r] logp[r] + dent[r] entropy[r] (dent,
 * entropy may be NULL). */
void head_dlogits(bf16 *dz, const float *z, const float *lse, const float *entropy,
                  const int *targets, const float *dlogp, const float *dent, int R, int V,
                  cudaStream_t st);

/* ---- optimizer ---- */
/* *out (one double, zeroed here) = sum of g^2 over n. */
void sumsq(double *out, const float *g, long long n, cudaStream_t st);
/* One AdamW element update (adamw.c's arithmetic) over n elements; the new parameter
 * goes to p (fp32 master) and pb (bf16 copy). */
void adamw_update(float *p, bf16 *pb, const float *g, float *m, float *v, long long n, float clip,
                  float decay, float b1, float b2, float step_size, float bc2_sqrt, float eps,
                  cudaStream_t st);

} // namespace seedcu

#endif
