/* kernels.cu — the CUDA backend's kernels (see kernels.cuh). Plain CUDA C++: one warp
 * per row for the row-wise layers, grid-stride loops for the elementwise ones, and
 * attention as tiles of SEEDCU_ATT_ROWS rows (one warp each) against keys staged in
 * shared memory SEEDCU_ATT_KEYS at a time, with the online softmax, so memory stays
 * O(T D) whatever the sequence length. Arithmetic is fp32 throughout; bf16 is only a
 * storage format. The formulas are those of model/cpu (same names, less cpu_). */
#include "model/cuda/kernels.cuh"

#include <math.h>

namespace seedcu {

static inline int blocks_for(long long n, int threads) {
    long long b = (n + threads - 1) / threads;
    return (int)(b > 65535LL * 16 ? 65535LL * 16 : (b < 1 ? 1 : b));
}

__device__ __forceinline__ float warp_sum(float x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}
__device__ __forceinline__ float warp_max(float x) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* ---- casts and copies ---- */

__global__ void cast_bf16_k(bf16 *out, const float *in, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = __float2bfloat16(in[i]);
}
void cast_bf16(bf16 *out, const float *in, long long n, cudaStream_t st) {
    if (n > 0) cast_bf16_k<<<blocks_for(n, 256), 256, 0, st>>>(out, in, n);
}

__global__ void rows_k(float *dst, const float *src, const int *idx, int R, int C, int scatter) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < (long long)R * C;
         e += (long long)gridDim.x * blockDim.x) {
        int r = (int)(e / C), c = (int)(e % C);
        if (scatter)
            dst[(long long)idx[r] * C + c] = src[e];
        else
            dst[e] = src[(long long)idx[r] * C + c];
    }
}
void gather_rows(float *dst, const float *src, const int *idx, int R, int C, cudaStream_t st) {
    if (R > 0) rows_k<<<blocks_for((long long)R * C, 256), 256, 0, st>>>(dst, src, idx, R, C, 0);
}
void scatter_rows(float *dst, const float *src, const int *idx, int R, int C, cudaStream_t st) {
    if (R > 0) rows_k<<<blocks_for((long long)R * C, 256), 256, 0, st>>>(dst, src, idx, R, C, 1);
}

/* ---- embedding ---- */

__global__ void encoder_forward_k(float *out, const int *tokens, const bf16 *wte, int T, int C) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < (long long)T * C;
         e += (long long)gridDim.x * blockDim.x) {
        int t = (int)(e / C), c = (int)(e % C);
        out[e] = __bfloat162float(wte[(long long)tokens[t] * C + c]);
    }
}
void encoder_forward(float *out, const int *tokens, const bf16 *wte, int T, int C,
                     cudaStream_t st) {
    encoder_forward_k<<<blocks_for((long long)T * C, 256), 256, 0, st>>>(out, tokens, wte, T, C);
}

__global__ void encoder_backward_k(float *dwte, const float *dout, const int *tokens, int T,
                                   int C) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < (long long)T * C;
         e += (long long)gridDim.x * blockDim.x) {
        int t = (int)(e / C), c = (int)(e % C);
        atomicAdd(&dwte[(long long)tokens[t] * C + c], dout[e]); /* tokens repeat */
    }
}
void encoder_backward(float *dwte, const float *dout, const int *tokens, int T, int C,
                      cudaStream_t st) {
    encoder_backward_k<<<blocks_for((long long)T * C, 256), 256, 0, st>>>(dwte, dout, tokens, T, C);
}

/* ---- RMSNorm: one warp per row ---- */

__global__ void rmsnorm_forward_k(bf16 *out, float *rstd, const float *inp, const bf16 *weight,
                                  int T, int C, float eps) {
    int t = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (t >= T) return;
    const float *x = inp + (long long)t * C;
    float ss = 0.0f;
    for (int c = lane; c < C; c += 32) ss += x[c] * x[c];
    ss = warp_sum(ss);
    float r = rsqrtf(ss / (float)C + eps);
    bf16 *o = out + (long long)t * C;
    for (int c = lane; c < C; c += 32)
        o[c] = __float2bfloat16(__bfloat162float(weight[c]) * (x[c] * r));
    if (rstd && lane == 0) rstd[t] = r;
}
void rmsnorm_forward(bf16 *out, float *rstd, const float *inp, const bf16 *weight, int T, int C,
                     float eps, cudaStream_t st) {
    if (T > 0) rmsnorm_forward_k<<<(T + 7) / 8, 256, 0, st>>>(out, rstd, inp, weight, T, C, eps);
}

/* Each block takes RMS_ROWS rows, one warp at a time, and sums its rows' dweight in
 * shared memory before one global atomic per column. */
#define RMS_ROWS 64
__global__ void rmsnorm_backward_k(float *dinp, float *dweight, const float *dout, const float *inp,
                                   const bf16 *weight, const float *rstd, int T, int C) {
    extern __shared__ float sdw[]; /* (C) */
    for (int c = threadIdx.x; c < C; c += blockDim.x) sdw[c] = 0.0f;
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    const int t0 = blockIdx.x * RMS_ROWS, t1 = min(t0 + RMS_ROWS, T);
    for (int t = t0 + warp; t < t1; t += nw) {
        const float *x = inp + (long long)t * C, *dy = dout + (long long)t * C;
        float *dx = dinp + (long long)t * C;
        const float r = rstd[t];
        float dot = 0.0f;
        for (int c = lane; c < C; c += 32) dot += dy[c] * __bfloat162float(weight[c]) * x[c];
        dot = warp_sum(dot);
        const float k = dot * r * r * r / (float)C;
        for (int c = lane; c < C; c += 32) {
            float w = __bfloat162float(weight[c]);
            dx[c] += dy[c] * w * r - k * x[c];
            atomicAdd(&sdw[c], dy[c] * x[c] * r);
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) atomicAdd(&dweight[c], sdw[c]);
}
void rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                      const bf16 *weight, const float *rstd, int T, int C, cudaStream_t st) {
    if (T > 0)
        rmsnorm_backward_k<<<(T + RMS_ROWS - 1) / RMS_ROWS, 256, sizeof(float) * C, st>>>(
            dinp, dweight, dout, inp, weight, rstd, T, C);
}

/* ---- bias + RoPE (+ KV cache write), and the backward rotation ---- */

/* One thread per (row, pair unit): units [0, (H+KVH) D/2) are rotated pairs (i, i+D/2)
 * of a q or k head, the rest are pairs of v columns. */
__global__ void bias_rope_k(bf16 *out, const float *qkv, const bf16 *bias, const int *pos, int T,
                            int H, int KVH, int D, const float *cos_t, const float *sin_t,
                            const long long *kvrow, bf16 *kc, bf16 *vc) {
    const int half = D / 2, Q = H * D, KVD = KVH * D, QKV = Q + 2 * KVD;
    const int rot = (H + KVH) * half, units = rot + KVD / 2;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < (long long)T * units;
         e += (long long)gridDim.x * blockDim.x) {
        const int t = (int)(e / units), u = (int)(e % units);
        const float *row = qkv + (long long)t * QKV;
        bf16 *orow = out + (long long)t * QKV;
        int c1, c2;
        float y1, y2;
        if (u < rot) {
            const int hd = u / half, i = u % half;
            c1 = hd * D + i;
            c2 = c1 + half;
            float x1 = row[c1] + __bfloat162float(bias[c1]);
            float x2 = row[c2] + __bfloat162float(bias[c2]);
            float cs = cos_t[(long long)pos[t] * half + i],
                  sn = sin_t[(long long)pos[t] * half + i];
            y1 = x1 * cs - x2 * sn;
            y2 = x2 * cs + x1 * sn;
        } else {
            c1 = Q + KVD + 2 * (u - rot);
            c2 = c1 + 1;
            y1 = row[c1] + __bfloat162float(bias[c1]);
            y2 = row[c2] + __bfloat162float(bias[c2]);
        }
        bf16 b1 = __float2bfloat16(y1), b2 = __float2bfloat16(y2);
        orow[c1] = b1;
        orow[c2] = b2;
        if (kvrow && c1 >= Q) { /* a k or v column: copy into the cache row */
            long long base = kvrow[t] * KVD;
            if (c1 < Q + KVD) {
                kc[base + c1 - Q] = b1;
                kc[base + c2 - Q] = b2;
            } else {
                vc[base + c1 - Q - KVD] = b1;
                vc[base + c2 - Q - KVD] = b2;
            }
        }
    }
}
void bias_rope_forward(bf16 *out, const float *qkv, const bf16 *bias, const int *pos, int T, int H,
                       int KVH, int D, const float *cos_t, const float *sin_t,
                       const long long *kvrow, bf16 *kc, bf16 *vc, cudaStream_t st) {
    long long units = (long long)T * ((H + KVH) * (D / 2) + KVH * D / 2);
    if (units > 0)
        bias_rope_k<<<blocks_for(units, 256), 256, 0, st>>>(out, qkv, bias, pos, T, H, KVH, D,
                                                            cos_t, sin_t, kvrow, kc, vc);
}

__global__ void rope_backward_k(float *dqkv, const int *pos, int T, int H, int KVH, int D,
                                const float *cos_t, const float *sin_t) {
    const int half = D / 2, QKV = (H + 2 * KVH) * D, units = (H + KVH) * half;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < (long long)T * units;
         e += (long long)gridDim.x * blockDim.x) {
        const int t = (int)(e / units), u = (int)(e % units), hd = u / half, i = u % half;
        float *a = dqkv + (long long)t * QKV + hd * D + i, *b = a + half;
        float cs = cos_t[(long long)pos[t] * half + i], sn = -sin_t[(long long)pos[t] * half + i];
        float x1 = *a, x2 = *b;
        *a = x1 * cs - x2 * sn;
        *b = x2 * cs + x1 * sn;
    }
}
void rope_backward(float *dqkv, const int *pos, int T, int H, int KVH, int D, const float *cos_t,
                   const float *sin_t, cudaStream_t st) {
    long long units = (long long)T * (H + KVH) * (D / 2);
    if (units > 0)
        rope_backward_k<<<blocks_for(units, 256), 256, 0, st>>>(dqkv, pos, T, H, KVH, D, cos_t,
                                                                sin_t);
}

/* Column sums: block (32, 8) takes 32 columns and strides over rows. */
__global__ void bias_backward_k(float *dbias, const float *dout, int T, int OC) {
    __shared__ float part[8][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < OC)
        for (int t = threadIdx.y; t < T; t += 8) s += dout[(long long)t * OC + c];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < OC) {
        for (int k = 1; k < 8; k++) s += part[k][threadIdx.x];
        dbias[c] += s;
    }
}
void bias_backward(float *dbias, const float *dout, int T, int OC, cudaStream_t st) {
    if (T > 0) bias_backward_k<<<(OC + 31) / 32, dim3(32, 8), 0, st>>>(dbias, dout, T, OC);
}

/* ---- SwiGLU ---- */

__global__ void swiglu_forward_k(bf16 *h, const bf16 *gu, int T, int I) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < (long long)T * I;
         e += (long long)gridDim.x * blockDim.x) {
        const long long t = e / I, i = e % I;
        float g = __bfloat162float(gu[t * 2 * I + i]), u = __bfloat162float(gu[t * 2 * I + I + i]);
        h[e] = __float2bfloat16(g / (1.0f + expf(-g)) * u);
    }
}
void swiglu_forward(bf16 *h, const bf16 *gu, int T, int I, cudaStream_t st) {
    if (T > 0) swiglu_forward_k<<<blocks_for((long long)T * I, 256), 256, 0, st>>>(h, gu, T, I);
}

__global__ void swiglu_backward_k(bf16 *dgu, const float *dh, const bf16 *gu, int T, int I) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < (long long)T * I;
         e += (long long)gridDim.x * blockDim.x) {
        const long long t = e / I, i = e % I;
        float g = __bfloat162float(gu[t * 2 * I + i]), u = __bfloat162float(gu[t * 2 * I + I + i]);
        float s = 1.0f / (1.0f + expf(-g)), silu = g * s, d = dh[e];
        dgu[t * 2 * I + I + i] = __float2bfloat16(d * silu);
        dgu[t * 2 * I + i] = __float2bfloat16(d * u * (s + silu * (1.0f - s)));
    }
}
void swiglu_backward(bf16 *dgu, const float *dh, const bf16 *gu, int T, int I, cudaStream_t st) {
    if (T > 0)
        swiglu_backward_k<<<blocks_for((long long)T * I, 256), 256, 0, st>>>(dgu, dh, gu, T, I);
}

/* ---- attention ---- */

#define AR SEEDCU_ATT_ROWS
#define AK SEEDCU_ATT_KEYS
#define MAXU (SEEDCU_MAX_D / 32)

/* Stage rows [j0, j0 + n) of a (rows, ld) bf16 matrix's D columns at col into shared
 * s (AK x (D+1)), zero-filling rows n..AK-1. The +1 keeps lanes reading one column of
 * different rows on different banks. */
__device__ __forceinline__ void stage(float *s, const bf16 *base, long long ld, int col, int j0,
                                      int n, int D) {
    for (int e = threadIdx.x + threadIdx.y * 32; e < AK * D; e += 32 * AR) {
        int j = e / D, d = e % D;
        s[j * (D + 1) + d] =
            j < n ? __bfloat162float(base[(long long)(j0 + j) * ld + col + d]) : 0.0f;
    }
}

/* grid (n_tiles, H), block (32, AR): warp w takes query row r0 + w of the tile. */
__global__ void attention_forward_k(bf16 *out, float *lse, const bf16 *q, int ldq, const bf16 *k,
                                    const bf16 *v, int ldkv, const attn_chunk *ch,
                                    const attn_tile *tiles, int H, int KVH, int D) {
    extern __shared__ float sm[];
    float *sK = sm, *sV = sK + AK * (D + 1), *sQ = sV + AK * (D + 1); /* sQ: AR x D */
    const attn_tile tl = tiles[blockIdx.x];
    const attn_chunk c = ch[tl.chunk];
    const int h = blockIdx.y, g = h / (H / KVH), w = threadIdx.y, lane = threadIdx.x;
    const float scale = rsqrtf((float)D);
    const int row = c.tok0 + tl.r0 + w, p = c.pos0 + tl.r0 + w; /* this warp's row, position */
    const int active = w < tl.n;
    for (int d = lane; d < D; d += 32)
        sQ[w * D + d] = active ? __bfloat162float(q[(long long)row * ldq + h * D + d]) : 0.0f;
    float acc[MAXU];
    for (int u = 0; u < MAXU; u++) acc[u] = 0.0f;
    float mx = -INFINITY, l = 0.0f;
    const int nk = c.pos0 + tl.r0 + tl.n;
    for (int k0 = 0; k0 < nk; k0 += AK) {
        const int n = min(AK, nk - k0);
        __syncthreads();
        stage(sK, k + c.kvoff, ldkv, g * D, k0, n, D);
        stage(sV, v + c.kvoff, ldkv, g * D, k0, n, D);
        __syncthreads();
        if (!active) continue;
        const int key = k0 + lane;
        float s = -INFINITY;
        if (key <= p && lane < n) {
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += sQ[w * D + d] * sK[lane * (D + 1) + d];
            s = dot * scale;
        }
        const float mnew = fmaxf(mx, warp_max(s));
        const float corr = expf(mx - mnew); /* exp(-inf) = 0 on the first tile */
        const float pj = s == -INFINITY ? 0.0f : expf(s - mnew);
        l = l * corr + warp_sum(pj);
        for (int u = 0; u < MAXU; u++) acc[u] *= corr;
        for (int j = 0; j < n; j++) {
            const float pb = __shfl_sync(0xffffffffu, pj, j);
            for (int u = 0; u < MAXU; u++) {
                const int d = lane + 32 * u;
                if (d < D) acc[u] += pb * sV[j * (D + 1) + d];
            }
        }
        mx = mnew;
    }
    if (!active) return;
    const float inv = 1.0f / l;
    for (int u = 0; u < MAXU; u++) {
        const int d = lane + 32 * u;
        if (d < D) out[(long long)row * H * D + h * D + d] = __float2bfloat16(acc[u] * inv);
    }
    if (lse && lane == 0) lse[(long long)row * H + h] = mx + logf(l);
}

static size_t fwd_smem(int D) {
    return sizeof(float) * (2 * AK * (D + 1) + AR * D);
}
static size_t dq_smem(int D) {
    return sizeof(float) * (2 * AK * (D + 1) + 2 * AR * D);
}
static size_t dkv_smem(int D) {
    return sizeof(float) * (2 * AK * (D + 1) + 2 * AR * D + 2 * AK);
}

void attention_forward(bf16 *out, float *lse, const bf16 *q, int ldq, const bf16 *k, const bf16 *v,
                       int ldkv, const attn_chunk *ch, const attn_tile *tiles, int n_tiles, int H,
                       int KVH, int D, cudaStream_t st) {
    if (n_tiles > 0)
        attention_forward_k<<<dim3(n_tiles, H), dim3(32, AR), fwd_smem(D), st>>>(
            out, lse, q, ldq, k, v, ldkv, ch, tiles, H, KVH, D);
}

/* delta (T, H) = rowsum(dout * out) per head: the softmax backward's D_i. */
__global__ void attention_delta_k(float *delta, const bf16 *dout, const bf16 *out, int T, int H,
                                  int D) {
    const long long r = blockIdx.x * (long long)(blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (r >= (long long)T * H) return;
    float s = 0.0f;
    for (int d = lane; d < D; d += 32)
        s += __bfloat162float(dout[r * D + d]) * __bfloat162float(out[r * D + d]);
    s = warp_sum(s);
    if (lane == 0) delta[r] = s;
}

/* dq: grid (n_tiles, H), block (32, AR), warp w = query row; keys streamed as forward. */
__global__ void attention_dq_k(float *dq, int lddq, const float *delta, const bf16 *dout,
                               const float *lse, const bf16 *qkv, int ldq, const attn_chunk *ch,
                               const attn_tile *tiles, int H, int KVH, int D) {
    extern __shared__ float sm[];
    float *sK = sm, *sV = sK + AK * (D + 1), *sQ = sV + AK * (D + 1), *sO = sQ + AR * D;
    const attn_tile tl = tiles[blockIdx.x];
    const attn_chunk c = ch[tl.chunk];
    const int h = blockIdx.y, g = h / (H / KVH), w = threadIdx.y, lane = threadIdx.x;
    const int Q = H * D, KVD = KVH * D;
    const float scale = rsqrtf((float)D);
    const int row = c.tok0 + tl.r0 + w, p = tl.r0 + w;
    const int active = w < tl.n;
    for (int d = lane; d < D; d += 32) {
        sQ[w * D + d] = active ? __bfloat162float(qkv[(long long)row * ldq + h * D + d]) : 0.0f;
        sO[w * D + d] = active ? __bfloat162float(dout[(long long)row * Q + h * D + d]) : 0.0f;
    }
    const float L = active ? lse[(long long)row * H + h] : 0.0f;
    const float Di = active ? delta[(long long)row * H + h] : 0.0f;
    float acc[MAXU];
    for (int u = 0; u < MAXU; u++) acc[u] = 0.0f;
    const int nk = tl.r0 + tl.n;
    const bf16 *kb = qkv + (long long)c.tok0 * ldq + Q, *vb = kb + KVD;
    for (int k0 = 0; k0 < nk; k0 += AK) {
        const int n = min(AK, nk - k0);
        __syncthreads();
        stage(sK, kb, ldq, g * D, k0, n, D);
        stage(sV, vb, ldq, g * D, k0, n, D);
        __syncthreads();
        if (!active) continue;
        const int key = k0 + lane;
        float ds = 0.0f;
        if (key <= p && lane < n) {
            float s = 0.0f, dp = 0.0f;
            for (int d = 0; d < D; d++) {
                s += sQ[w * D + d] * sK[lane * (D + 1) + d];
                dp += sO[w * D + d] * sV[lane * (D + 1) + d];
            }
            const float pj = expf(s * scale - L);
            ds = pj * (dp - Di);
        }
        for (int j = 0; j < n; j++) {
            const float b = __shfl_sync(0xffffffffu, ds, j);
            for (int u = 0; u < MAXU; u++) {
                const int d = lane + 32 * u;
                if (d < D) acc[u] += b * sK[j * (D + 1) + d];
            }
        }
    }
    if (!active) return;
    for (int u = 0; u < MAXU; u++) {
        const int d = lane + 32 * u;
        if (d < D) dq[(long long)row * lddq + h * D + d] = acc[u] * scale;
    }
}

/* dk, dv: grid (n_tiles, KVH), block (32, AR), warp w = key row r0 + w; the queries of
 * every head of the group at rows >= the key's are streamed through shared memory. */
__global__ void attention_dkv_k(float *dqkv, int lddq, const float *delta, const bf16 *dout,
                                const float *lse, const bf16 *qkv, int ldq, const attn_chunk *ch,
                                const attn_tile *tiles, int H, int KVH, int D) {
    extern __shared__ float sm[];
    float *sQ = sm, *sO = sQ + AK * (D + 1), *sK = sO + AK * (D + 1), *sV = sK + AR * D;
    float *sL = sV + AR * D, *sD = sL + AK;
    const attn_tile tl = tiles[blockIdx.x];
    const attn_chunk c = ch[tl.chunk];
    const int g = blockIdx.y, grp = H / KVH, w = threadIdx.y, lane = threadIdx.x;
    const int Q = H * D, KVD = KVH * D;
    const float scale = rsqrtf((float)D);
    const int kr = tl.r0 + w; /* key row inside the chunk (= its position) */
    const int active = w < tl.n;
    const long long krow = c.tok0 + kr;
    for (int d = lane; d < D; d += 32) {
        sK[w * D + d] = active ? __bfloat162float(qkv[krow * ldq + Q + g * D + d]) : 0.0f;
        sV[w * D + d] = active ? __bfloat162float(qkv[krow * ldq + Q + KVD + g * D + d]) : 0.0f;
    }
    float dk[MAXU], dv[MAXU];
    for (int u = 0; u < MAXU; u++) dk[u] = dv[u] = 0.0f;
    const bf16 *qb = qkv + (long long)c.tok0 * ldq, *ob = dout + (long long)c.tok0 * Q;
    for (int h = g * grp; h < (g + 1) * grp; h++) {
        for (int q0 = tl.r0; q0 < c.len; q0 += AK) {
            const int n = min(AK, c.len - q0);
            __syncthreads();
            stage(sQ, qb, ldq, h * D, q0, n, D);
            stage(sO, ob, Q, h * D, q0, n, D);
            for (int e = threadIdx.x + threadIdx.y * 32; e < AK; e += 32 * AR) {
                sL[e] = e < n ? lse[(long long)(c.tok0 + q0 + e) * H + h] : 0.0f;
                sD[e] = e < n ? delta[(long long)(c.tok0 + q0 + e) * H + h] : 0.0f;
            }
            __syncthreads();
            if (!active) continue;
            const int qr = q0 + lane;
            float pj = 0.0f, ds = 0.0f;
            if (lane < n && qr >= kr) {
                float s = 0.0f, dp = 0.0f;
                for (int d = 0; d < D; d++) {
                    s += sQ[lane * (D + 1) + d] * sK[w * D + d];
                    dp += sO[lane * (D + 1) + d] * sV[w * D + d];
                }
                pj = expf(s * scale - sL[lane]);
                ds = pj * (dp - sD[lane]);
            }
            for (int j = 0; j < n; j++) {
                const float pb = __shfl_sync(0xffffffffu, pj, j);
                const float db = __shfl_sync(0xffffffffu, ds, j);
                for (int u = 0; u < MAXU; u++) {
                    const int d = lane + 32 * u;
                    if (d < D) {
                        dv[u] += pb * sO[j * (D + 1) + d];
                        dk[u] += db * sQ[j * (D + 1) + d];
                    }
                }
            }
        }
    }
    if (!active) return;
    for (int u = 0; u < MAXU; u++) {
        const int d = lane + 32 * u;
        if (d < D) {
            dqkv[krow * lddq + Q + g * D + d] = dk[u] * scale;
            dqkv[krow * lddq + Q + KVD + g * D + d] = dv[u];
        }
    }
}

void attention_backward(float *dqkv, int lddq, float *delta, const bf16 *dout, const bf16 *out,
                        const float *lse, const bf16 *qkv, int ldq, const attn_chunk *ch,
                        const attn_tile *tiles, int n_tiles, int T, int H, int KVH, int D,
                        cudaStream_t st) {
    if (n_tiles <= 0) return;
    const long long rows = (long long)T * H;
    attention_delta_k<<<(unsigned)((rows + 7) / 8), 256, 0, st>>>(delta, dout, out, T, H, D);
    attention_dq_k<<<dim3(n_tiles, H), dim3(32, AR), dq_smem(D), st>>>(
        dqkv, lddq, delta, dout, lse, qkv, ldq, ch, tiles, H, KVH, D);
    attention_dkv_k<<<dim3(n_tiles, KVH), dim3(32, AR), dkv_smem(D), st>>>(
        dqkv, lddq, delta, dout, lse, qkv, ldq, ch, tiles, H, KVH, D);
}

cudaError_t attention_setup(int D) {
    cudaError_t e;
    if ((e = cudaFuncSetAttribute(attention_forward_k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)fwd_smem(D))) != cudaSuccess)
        return e;
    if ((e = cudaFuncSetAttribute(attention_dq_k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)dq_smem(D))) != cudaSuccess)
        return e;
    return cudaFuncSetAttribute(attention_dkv_k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)dkv_smem(D));
}

/* ---- LM head statistics: one block per row ---- */

__device__ float block_reduce(float x, int is_max) {
    __shared__ float part[32];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, nw = blockDim.x / 32;
    x = is_max ? warp_max(x) : warp_sum(x);
    __syncthreads(); /* part may still be read by a previous call */
    if (lane == 0) part[w] = x;
    __syncthreads();
    x = lane < nw ? part[lane] : (is_max ? -INFINITY : 0.0f);
    return is_max ? warp_max(x) : warp_sum(x);
}

__global__ void head_stats_k(float *logp, float *entropy, float *lse, const int *targets,
                             const float *z, int V) {
    const long long r = blockIdx.x;
    const float *zr = z + r * V;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, zr[j]);
    mx = block_reduce(mx, 1);
    float sum = 0.0f, sz = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float e = expf(zr[j] - mx);
        sum += e;
        sz += e * (zr[j] - mx);
    }
    sum = block_reduce(sum, 0);
    sz = block_reduce(sz, 0);
    if (threadIdx.x == 0) {
        const float l = mx + logf(sum);
        lse[r] = l;
        logp[r] = targets[r] >= 0 ? zr[targets[r]] - l : 0.0f;
        if (entropy) entropy[r] = logf(sum) - sz / sum;
    }
}
void head_stats(float *logp, float *entropy, float *lse, const int *targets, const float *z, int R,
                int V, cudaStream_t st) {
    if (R > 0) head_stats_k<<<R, 512, 0, st>>>(logp, entropy, lse, targets, z, V);
}

__global__ void head_dlogits_k(bf16 *dz, const float *z, const float *lse, const float *entropy,
                               const int *targets, const float *dlogp, const float *dent, int V) {
    const long long r = blockIdx.y;
    const float l = lse[r], a = targets[r] >= 0 ? dlogp[r] : 0.0f;
    const float b = dent ? dent[r] : 0.0f, Hh = (dent && entropy) ? entropy[r] : 0.0f;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < V; j += gridDim.x * blockDim.x) {
        /* dz_j = a (1[j = target] - p_j) - b p_j (log p_j + H), as head.c */
        const float lp = z[r * V + j] - l, p = expf(lp);
        float d = -a * p - b * p * (lp + Hh);
        if (j == targets[r]) d += a;
        dz[r * V + j] = __float2bfloat16(d);
    }
}
void head_dlogits(bf16 *dz, const float *z, const float *lse, const float *entropy,
                  const int *targets, const float *dlogp, const float *dent, int R, int V,
                  cudaStream_t st) {
    if (R > 0)
        head_dlogits_k<<<dim3((V + 1023) / 1024, R), 1024, 0, st>>>(dz, z, lse, entropy, targets,
                                                                    dlogp, dent, V);
}

/* ---- optimizer ---- */

__global__ void sumsq_k(double *out, const float *g, long long n) {
    double s = 0.0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        s += (double)g[i] * g[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) atomicAdd(out, s);
}
void sumsq(double *out, const float *g, long long n, cudaStream_t st) {
    cudaMemsetAsync(out, 0, sizeof(double), st);
    if (n > 0) sumsq_k<<<min(blocks_for(n, 256), 1024), 256, 0, st>>>(out, g, n);
}

__global__ void adamw_k(float *p, bf16 *pb, const float *g, float *m, float *v, long long n,
                        float clip, float decay, float b1, float b2, float step_size,
                        float bc2_sqrt, float eps) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const float gi = g[i] * clip, pi = p[i] * decay;
        const float mi = m[i] + (1.0f - b1) * (gi - m[i]);
        const float vi = v[i] * b2 + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        const float np = pi - step_size * (mi / (sqrtf(vi) / bc2_sqrt + eps));
        p[i] = np;
        pb[i] = __float2bfloat16(np);
    }
}
void adamw_update(float *p, bf16 *pb, const float *g, float *m, float *v, long long n, float clip,
                  float decay, float b1, float b2, float step_size, float bc2_sqrt, float eps,
                  cudaStream_t st) {
    if (n > 0)
        adamw_k<<<blocks_for(n, 256), 256, 0, st>>>(p, pb, g, m, v, n, clip, decay, b1, b2,
                                                    step_size, bc2_sqrt, eps);
}

} // namespace seedcu
