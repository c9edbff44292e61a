/* head.c — the LM head fused with log-softmax (see kernels.h). The forward keeps per
 * row the log-sum-exp (and entropy); the backward needs the logits again to form
 * dlogits = f(logits, lse, dlogp, dentropy), then two GEMMs (dx = dz W, dW += dz^T x).
 * When the caller can afford (rows x V) floats it passes `keep`, and the backward reads
 * the stored logits instead of recomputing them (one GEMM of the head saved); otherwise
 * logits exist one block of rows at a time (cpu_head_block_rows(V) x V, ~8 MiB) and the
 * backward recomputes each block, so memory stays bounded for a 150k vocabulary. */
#include "model/cpu/kernels.h"

#include <math.h>

int cpu_head_block_rows(int V) {
    /* about 8 MiB of logits per block: large GEMMs, still cache-friendly stats passes */
    int rb = (int)((2u << 20) / (unsigned)V);
    return rb < 16 ? 16 : rb > 256 ? 256 : rb;
}

/* lse and entropy of one row of logits z (V); returns lse. */
static float row_stats(const float *z, int V, float *entropy) {
    float mx = -INFINITY;
    for (int j = 0; j < V; j++) mx = z[j] > mx ? z[j] : mx;
    float sum = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sum, sz)
    for (int j = 0; j < V; j++) {
        float e = cpu_expf(z[j] - mx);
        sum += e;
        sz += e * (z[j] - mx);
    }
    float lse = mx + logf(sum);
    /* H = lse - sum p z = log(sum) - sum e (z - mx) / sum */
    if (entropy) *entropy = logf(sum) - sz / sum;
    return lse;
}

void cpu_head_forward(float *logp, float *entropy, float *lse, const int *targets, const float *x,
                      const float *w, int R, int C, int V, float inv_t, float *scratch,
                      float *keep) {
    // x is (R,C), w is (V,C); scratch holds RB x V logits; keep (R,V) or NULL
    const int RB = cpu_head_block_rows(V);
    for (int r0 = 0; r0 < R; r0 += RB) {
        const int M = SEED_MIN(RB, R - r0);
        float *z0 = keep ? keep + (size_t)r0 * V : scratch;
        /* z = x w^T / T: the temperature folds into the GEMM's alpha */
        cpu_sgemm(0, 1, M, V, C, inv_t, x + (size_t)r0 * C, C, w, C, 0.0f, z0, V);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < M; i++) {
            const float *z = z0 + (size_t)i * V;
            const int r = r0 + i;
            float l = row_stats(z, V, entropy ? &entropy[r] : NULL);
            lse[r] = l;
            logp[r] = targets[r] >= 0 ? z[targets[r]] - l : 0.0f;
        }
    }
}

void cpu_head_backward(float *dx, float *dw, const float *dlogp, const float *dent,
                       const int *targets, const float *lse, const float *entropy, const float *x,
                       const float *w, int R, int C, int V, float inv_t, float *scratch,
                       const float *kept, const int *kept_row) {
    // dx, x are (R,C); dw, w are (V,C); scratch holds RB x V; kept rows are (.., V)
    const int RB = cpu_head_block_rows(V);
    for (int r0 = 0; r0 < R; r0 += RB) {
        const int M = SEED_MIN(RB, R - r0);
        const float *xb = x + (size_t)r0 * C;
        if (!kept) cpu_sgemm(0, 1, M, V, C, inv_t, xb, C, w, C, 0.0f, scratch, V);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < M; i++) {
            float *dz = scratch + (size_t)i * V;
            const int r = r0 + i;
            const float *z = kept ? kept + (size_t)kept_row[r] * V : dz;
            const float l = lse[r], a = targets[r] >= 0 ? dlogp[r] : 0.0f;
            const float b = dent ? dent[r] : 0.0f, H = (dent && entropy) ? entropy[r] : 0.0f;
            /* dz_j = a (1[j = target] - p_j) - b p_j (log p_j + H) */
#pragma omp simd
            for (int j = 0; j < V; j++) {
                float lp = z[j] - l, p = cpu_expf(lp);
                dz[j] = -a * p - b * p * (lp + H);
            }
            if (targets[r] >= 0) dz[targets[r]] += a;
        }
        /* dz is wrt the scaled logits z / T: the chain rule's 1/T is the GEMMs' alpha */
        cpu_sgemm(0, 0, M, C, V, inv_t, scratch, V, w, C, 0.0f, dx + (size_t)r0 * C, C);
        cpu_sgemm(1, 0, V, C, M, inv_t, scratch, V, xb, C, 1.0f, dw, C);
    }
}
