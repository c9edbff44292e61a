/* attention.c — causal grouped-query attention over packed chunks, forward and
 * backward, as GEMMs per (chunk, KV head, query head, block of query rows).
 *
 * A block of B query rows ending at chunk row r1 needs keys [0, pos0 + r1): the
 * scores S = Q K^T / sqrt(D) (B x nkeys) and O = softmax(S) V are two GEMMs, so the
 * upper triangle beyond the block is never computed. Decode chunks (one query row)
 * batch the query heads that share a KV head into the rows of one GEMM. The
 * backward recomputes P from the saved log-sum-exp (nothing of size T x T is kept):
 * dP = dO V^T, dS = P (dP - rowsum(dO O)), dQ = dS K / sqrt(D), dK += dS^T Q / sqrt(D),
 * dV += P^T dO. Work items (chunk, KV head) run in an OpenMP loop, each with
 * single-threaded BLAS; an item owns its rows of out/dq and its KV head's dk/dv. */
#include "model/cpu/kernels.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>

/* Softmax of each row of S (M x nk; row i sees keys [0, nvis[i])) in place; masked keys
 * get probability 0. Writes each row's log-sum-exp when lse_row is non-NULL. */
static void softmax_rows(float *S, int M, int nk, const int *nvis, float *lse_row) {
    for (int i = 0; i < M; i++) {
        float *s = S + (size_t)i * nk;
        int n = nvis[i];
        float mx = -INFINITY;
        for (int j = 0; j < n; j++) mx = s[j] > mx ? s[j] : mx;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < n; j++) {
            float e = cpu_expf(s[j] - mx);
            s[j] = e;
            sum += e;
        }
        float inv = 1.0f / sum;
        for (int j = 0; j < n; j++) s[j] *= inv;
        for (int j = n; j < nk; j++) s[j] = 0.0f;
        if (lse_row) lse_row[i] = mx + logf(sum);
    }
}

void cpu_attention_forward(float *out, float *lse, const float *q, int ldq,
                           const cpu_attn_chunk *ch, int n_chunks, int ldkv, int H, int KVH, int D,
                           int max_keys, float *scratch, int nthreads) {
    // out is (T,H*D), q is (T,ldq), lse is (T,H); per chunk k, v are (pos0+len, ldkv)
    const int grp = H / KVH, ldo = H * D;
    const float scale = 1.0f / sqrtf((float)D);
    const int items = n_chunks * KVH;
#pragma omp parallel num_threads(nthreads)
    {
        float *S = scratch + (size_t)omp_get_thread_num() * CPU_ATTN_BLOCK * max_keys;
        int nvis[CPU_ATTN_BLOCK];
        float lrow[CPU_ATTN_BLOCK];
#pragma omp for schedule(dynamic, 1)
        for (int it = 0; it < items; it++) {
            const cpu_attn_chunk *c = &ch[it / KVH];
            const int g = it % KVH, ldk = c->ld ? c->ld : ldkv;
            const float *K = c->k + g * D, *Vv = c->v + g * D;
            if (c->len == 1 && grp <= CPU_ATTN_BLOCK) {
                /* decode: the grp query heads of KV head g are grp rows at stride D */
                const int nk = c->pos0 + 1;
                const float *Q = q + (size_t)c->tok0 * ldq + (size_t)g * grp * D;
                float *O = out + (size_t)c->tok0 * ldo + (size_t)g * grp * D;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, grp, nk, D, scale, Q, D, K,
                            ldk, 0.0f, S, nk);
                for (int i = 0; i < grp; i++) nvis[i] = nk;
                softmax_rows(S, grp, nk, nvis, lse ? lrow : NULL);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, grp, D, nk, 1.0f, S, nk, Vv,
                            ldk, 0.0f, O, D);
                if (lse)
                    for (int i = 0; i < grp; i++) lse[(size_t)c->tok0 * H + g * grp + i] = lrow[i];
                continue;
            }
            for (int h = g * grp; h < (g + 1) * grp; h++) {
                for (int r0 = 0; r0 < c->len; r0 += CPU_ATTN_BLOCK) {
                    const int M = SEED_MIN(CPU_ATTN_BLOCK, c->len - r0);
                    const int nk = c->pos0 + r0 + M;
                    const float *Q = q + (size_t)(c->tok0 + r0) * ldq + h * D;
                    float *O = out + (size_t)(c->tok0 + r0) * ldo + h * D;
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nk, D, scale, Q, ldq, K,
                                ldk, 0.0f, S, nk);
                    for (int i = 0; i < M; i++) nvis[i] = c->pos0 + r0 + i + 1;
                    softmax_rows(S, M, nk, nvis, lse ? lrow : NULL);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, D, nk, 1.0f, S, nk,
                                Vv, ldk, 0.0f, O, ldo);
                    if (lse)
                        for (int i = 0; i < M; i++)
                            lse[(size_t)(c->tok0 + r0 + i) * H + h] = lrow[i];
                }
            }
        }
    }
}

void cpu_attention_backward(float *dq, int lddq, int lddkv, const float *dout, const float *out,
                            const float *lse, const float *q, int ldq, const cpu_attn_chunk *ch,
                            int n_chunks, int ldkv, int H, int KVH, int D, int max_keys,
                            float *scratch, int nthreads) {
    // dq is (T,lddq), dout/out are (T,H*D), lse is (T,H); per chunk dk, dv are (.., lddkv)
    const int grp = H / KVH, ldo = H * D;
    const float scale = 1.0f / sqrtf((float)D);
    const int items = n_chunks * KVH;
#pragma omp parallel num_threads(nthreads)
    {
        float *P = scratch + (size_t)omp_get_thread_num() * 2 * CPU_ATTN_BLOCK * max_keys;
        float *dP = P + (size_t)CPU_ATTN_BLOCK * max_keys;
        float di[CPU_ATTN_BLOCK];
#pragma omp for schedule(dynamic, 1)
        for (int it = 0; it < items; it++) {
            const cpu_attn_chunk *c = &ch[it / KVH];
            const int g = it % KVH, ldk = c->ld ? c->ld : ldkv, ldd = c->ld ? c->ld : lddkv;
            const float *K = c->k + g * D, *Vv = c->v + g * D;
            float *dK = c->dk + g * D, *dV = c->dv + g * D;
            for (int h = g * grp; h < (g + 1) * grp; h++) {
                for (int r0 = 0; r0 < c->len; r0 += CPU_ATTN_BLOCK) {
                    const int M = SEED_MIN(CPU_ATTN_BLOCK, c->len - r0);
                    const int nk = c->pos0 + r0 + M;
                    const size_t row0 = (size_t)(c->tok0 + r0);
                    const float *Q = q + row0 * ldq + h * D;
                    const float *dO = dout + row0 * ldo + h * D, *O = out + row0 * ldo + h * D;
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nk, D, scale, Q, ldq, K,
                                ldk, 0.0f, P, nk);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nk, D, 1.0f, dO, ldo,
                                Vv, ldk, 0.0f, dP, nk);
                    for (int i = 0; i < M; i++) {
                        float s = 0.0f;
                        for (int d = 0; d < D; d++)
                            s += dO[(size_t)i * ldo + d] * O[(size_t)i * ldo + d];
                        di[i] = s;
                    }
                    for (int i = 0; i < M; i++) {
                        float *p = P + (size_t)i * nk, *dp = dP + (size_t)i * nk;
                        const int n = c->pos0 + r0 + i + 1;
                        const float l = lse[(row0 + i) * H + h], d0 = di[i];
#pragma omp simd
                        for (int j = 0; j < n; j++) {
                            float pj = cpu_expf(p[j] - l);
                            p[j] = pj;
                            dp[j] = pj * (dp[j] - d0);
                        }
                        for (int j = n; j < nk; j++) p[j] = dp[j] = 0.0f;
                    }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, D, nk, scale, dP, nk,
                                K, ldk, 0.0f, dq + row0 * lddq + h * D, lddq);
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, D, M, scale, dP, nk, Q,
                                ldq, 1.0f, dK, ldd);
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, D, M, 1.0f, P, nk, dO,
                                ldo, 1.0f, dV, ldd);
                }
            }
        }
    }
}
