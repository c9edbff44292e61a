/* cuda_kernels — each CUDA kernel (model/cuda/kernels.cuh) against its CPU counterpart
 * (model/cpu/kernels.h) on fresh random inputs; device outputs are poisoned (NaN
 * bytes) before every launch so an element a kernel never writes fails. Exit 77
 * (ctest SKIP) with the reason when no GPU is present.
 *
 * Inputs that the GPU reads as bf16 are rounded to bf16 first and the CPU gets the same
 * values, so a difference is the kernel's own. Tolerances: kernels whose output is
 * stored in bf16 (rmsnorm, bias+RoPE, SwiGLU, attention output, dlogits) round it once:
 * 2^-9 relative per element, so TOL_BF16 = 1% relative L2; fp32-output kernels differ by
 * summation order only: TOL_F32 = 1e-4 relative L2 (attention's lse and gradients,
 * 2e-2: they accumulate over up to 300 keys with bf16-rounded P V products). */
extern "C" {
#include "model/cpu/kernels.h"
#include "model/model.h"
}
#include "model/cuda/cuda_backend.h"
#include "model/cuda/kernels.cuh"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

#define TOL_BF16 1e-2
#define TOL_F32 1e-4
#define TOL_ATT 2e-2

static int failures;
static seed_rng rng;
static cudaStream_t st;

static void check(double e, double tol, const char *what) {
    const int ok = e <= tol; /* NaN fails */
    printf("%-48s %-4s rel L2 %.3g (limit %.3g)\n", what, ok ? "ok" : "FAIL", e, tol);
    if (!ok) failures++;
}

static float bf(float x) {
    return __bfloat162float(__float2bfloat16(x));
}

typedef std::vector<float> vec;

static vec randv(size_t n, float scale, int round_bf16) {
    vec v(n);
    for (size_t i = 0; i < n; i++) {
        float x = scale * seed_rng_normal(&rng);
        v[i] = round_bf16 ? bf(x) : x;
    }
    return v;
}

static double rel(const vec &a, const vec &b) {
    double d = 0, r = 0;
    for (size_t i = 0; i < a.size(); i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        r += (double)b[i] * b[i];
    }
    return sqrt(d / (r > 0 ? r : 1e-30));
}

/* device buffers: fp32 or bf16 copies of host vectors, poisoned outputs */
template <typename T> static T *dalloc(size_t n) {
    T *p = NULL;
    if (cudaMalloc(&p, n * sizeof(T) + 16) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc failed\n");
        exit(1);
    }
    cudaMemset(p, 0xff, n * sizeof(T)); /* NaN in fp32 and bf16 */
    return p;
}
static float *up(const vec &v) {
    float *p = dalloc<float>(v.size());
    cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
    return p;
}
static bf16 *upb(const vec &v) {
    std::vector<bf16> b(v.size());
    for (size_t i = 0; i < v.size(); i++) b[i] = __float2bfloat16(v[i]);
    bf16 *p = dalloc<bf16>(v.size());
    cudaMemcpy(p, b.data(), b.size() * sizeof(bf16), cudaMemcpyHostToDevice);
    return p;
}
static vec down(const float *p, size_t n) {
    vec v(n);
    cudaStreamSynchronize(st);
    cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost);
    return v;
}
static vec downb(const bf16 *p, size_t n) {
    std::vector<bf16> b(n);
    cudaStreamSynchronize(st);
    cudaMemcpy(b.data(), p, n * sizeof(bf16), cudaMemcpyDeviceToHost);
    vec v(n);
    for (size_t i = 0; i < n; i++) v[i] = __bfloat162float(b[i]);
    return v;
}
template <typename T> static T *upi(const std::vector<T> &v) {
    T *p = dalloc<T>(v.size());
    cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
    return p;
}

static void test_layers(void) {
    const int T = 77, C = 200, I = 96;
    /* rmsnorm forward and backward */
    vec x = randv((size_t)T * C, 1.0f, 0), w = randv(C, 1.0f, 1);
    vec out((size_t)T * C), rstd(T);
    cpu_rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), T, C, 1e-6f);
    float *dx_ = up(x), *drstd = dalloc<float>(T);
    bf16 *dw = upb(w), *dout = dalloc<bf16>((size_t)T * C);
    seedcu::rmsnorm_forward(dout, drstd, dx_, dw, T, C, 1e-6f, st);
    check(rel(downb(dout, (size_t)T * C), out), TOL_BF16, "rmsnorm_forward out");
    check(rel(down(drstd, T), rstd), TOL_F32, "rmsnorm_forward rstd");
    vec dy = randv((size_t)T * C, 1.0f, 0), dinp((size_t)T * C, 0.5f), dwt(C, 0.25f);
    vec partial((size_t)omp_get_max_threads() * C);
    vec dinp0 = dinp, dwt0 = dwt;
    cpu_rmsnorm_backward(dinp.data(), dwt.data(), dy.data(), x.data(), w.data(), rstd.data(), T, C,
                         partial.data());
    float *ddinp = up(dinp0), *ddw = up(dwt0), *ddy = up(dy), *drs = up(rstd);
    seedcu::rmsnorm_backward(ddinp, ddw, ddy, dx_, dw, drs, T, C, st);
    check(rel(down(ddinp, (size_t)T * C), dinp), TOL_F32, "rmsnorm_backward dinp (+=)");
    check(rel(down(ddw, C), dwt), TOL_F32, "rmsnorm_backward dweight (+=)");

    /* swiglu forward and backward */
    vec gu = randv((size_t)T * 2 * I, 2.0f, 1), h((size_t)T * I), dh = randv((size_t)T * I, 1, 0);
    vec dgu((size_t)T * 2 * I);
    cpu_swiglu_forward(h.data(), gu.data(), T, I);
    cpu_swiglu_backward(dgu.data(), dh.data(), gu.data(), T, I);
    bf16 *dgu_in = upb(gu), *dh_out = dalloc<bf16>((size_t)T * I),
         *ddgu = dalloc<bf16>((size_t)T * 2 * I);
    float *ddh = up(dh);
    seedcu::swiglu_forward(dh_out, dgu_in, T, I, st);
    seedcu::swiglu_backward(ddgu, ddh, dgu_in, T, I, st);
    check(rel(downb(dh_out, (size_t)T * I), h), TOL_BF16, "swiglu_forward");
    check(rel(downb(ddgu, (size_t)T * 2 * I), dgu), TOL_BF16, "swiglu_backward");

    /* embedding forward and backward (tokens repeat) */
    const int V = 50;
    vec wte = randv((size_t)V * C, 1.0f, 1), eo((size_t)T * C), dwte((size_t)V * C, 0.0f);
    std::vector<int> tok(T);
    for (int t = 0; t < T; t++) tok[t] = (int)seed_rng_below(&rng, V);
    cpu_encoder_forward(eo.data(), tok.data(), wte.data(), T, C);
    cpu_encoder_backward(dwte.data(), dy.data(), tok.data(), T, C);
    int *dtok = upi(tok);
    bf16 *dwte_b = upb(wte);
    float *deo = dalloc<float>((size_t)T * C), *ddwte = up(vec((size_t)V * C, 0.0f));
    seedcu::encoder_forward(deo, dtok, dwte_b, T, C, st);
    seedcu::encoder_backward(ddwte, ddy, dtok, T, C, st);
    check(rel(down(deo, (size_t)T * C), eo), TOL_F32, "encoder_forward");
    check(rel(down(ddwte, (size_t)V * C), dwte), TOL_F32, "encoder_backward (+=)");
}

static void test_rope_attention(int H, int KVH, int D) {
    char what[96];
    const int lens[3] = {70, 1, 131}, n_ch = 3;
    int T = 0;
    for (int k = 0; k < n_ch; k++) T += lens[k];
    const int Q = H * D, KVD = KVH * D, QKV = Q + 2 * KVD, half = D / 2, maxpos = 256;
    /* RoPE tables as the backends make them */
    vec ct((size_t)maxpos * half), stb((size_t)maxpos * half);
    for (int i = 0; i < half; i++) {
        float inv = 1.0f / powf(10000.0f, (float)(2 * i) / (float)D);
        for (int p = 0; p < maxpos; p++) {
            ct[(size_t)p * half + i] = (float)cos((double)((float)p * inv));
            stb[(size_t)p * half + i] = (float)sin((double)((float)p * inv));
        }
    }
    std::vector<int> pos(T);
    for (int k = 0, t = 0; k < n_ch; k++)
        for (int j = 0; j < lens[k]; j++) pos[t++] = j;
    vec qkv = randv((size_t)T * QKV, 1.0f, 0), bias = randv(QKV, 0.5f, 1);
    vec ref = qkv;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < QKV; c++) ref[(size_t)t * QKV + c] += bias[c];
    cpu_rope_forward(ref.data(), QKV, pos.data(), T, H + KVH, D, ct.data(), stb.data(), 0);
    float *dq = up(qkv), *dct = up(ct), *dst = up(stb);
    bf16 *db = upb(bias), *dout = dalloc<bf16>((size_t)T * QKV);
    int *dpos = upi(pos);
    seedcu::bias_rope_forward(dout, dq, db, dpos, T, H, KVH, D, dct, dst, NULL, NULL, NULL, st);
    vec rot = downb(dout, (size_t)T * QKV);
    snprintf(what, sizeof what, "bias_rope_forward (D %d)", D);
    check(rel(rot, ref), TOL_BF16, what);
    vec back = qkv, bref = qkv;
    cpu_rope_forward(bref.data(), QKV, pos.data(), T, H + KVH, D, ct.data(), stb.data(), 1);
    float *dback = up(back);
    seedcu::rope_backward(dback, dpos, T, H, KVH, D, dct, dst, st);
    snprintf(what, sizeof what, "rope_backward (D %d)", D);
    check(rel(down(dback, (size_t)T * QKV), bref), TOL_F32, what);

    /* attention over the packed chunks, both backends on the same bf16 q|k|v */
    vec att((size_t)T * Q), lse((size_t)T * H);
    std::vector<cpu_attn_chunk> cc(n_ch);
    std::vector<seedcu::attn_chunk> gc(n_ch);
    std::vector<seedcu::attn_tile> tiles;
    for (int k = 0, t0 = 0; k < n_ch; k++) {
        cc[k].tok0 = t0;
        cc[k].len = lens[k];
        cc[k].pos0 = 0;
        cc[k].k = rot.data() + (size_t)t0 * QKV + Q;
        cc[k].v = cc[k].k + KVD;
        gc[k] = seedcu::attn_chunk{t0, lens[k], 0, (long long)t0 * QKV};
        for (int r0 = 0; r0 < lens[k]; r0 += SEEDCU_ATT_ROWS)
            tiles.push_back(seedcu::attn_tile{k, r0, SEED_MIN(SEEDCU_ATT_ROWS, lens[k] - r0)});
        t0 += lens[k];
    }
    const int nt = omp_get_max_threads();
    vec scratch((size_t)nt * 2 * CPU_ATTN_BLOCK * maxpos);
    cpu_attention_forward(att.data(), lse.data(), rot.data(), QKV, cc.data(), n_ch, QKV, H, KVH, D,
                          maxpos, scratch.data(), nt);
    seedcu::attn_chunk *dch = upi(gc);
    seedcu::attn_tile *dtl = upi(tiles);
    bf16 *datt = dalloc<bf16>((size_t)T * Q);
    float *dlse = dalloc<float>((size_t)T * H);
    seedcu::attention_setup(D);
    seedcu::attention_forward(datt, dlse, dout, QKV, dout + Q, dout + Q + KVD, QKV, dch, dtl,
                              (int)tiles.size(), H, KVH, D, st);
    snprintf(what, sizeof what, "attention_forward out (H %d KVH %d D %d)", H, KVH, D);
    check(rel(downb(datt, (size_t)T * Q), att), TOL_BF16, what);
    snprintf(what, sizeof what, "attention_forward lse (H %d KVH %d D %d)", H, KVH, D);
    check(rel(down(dlse, (size_t)T * H), lse), TOL_ATT, what);

    /* backward: same bf16 out and dout on both sides */
    vec attb = downb(datt, (size_t)T * Q), dO = randv((size_t)T * Q, 1.0f, 1);
    vec dqkv((size_t)T * QKV, 0.0f);
    for (int k = 0; k < n_ch; k++) {
        cc[k].dk = dqkv.data() + (size_t)cc[k].tok0 * QKV + Q;
        cc[k].dv = cc[k].dk + KVD;
    }
    cpu_attention_backward(dqkv.data(), QKV, QKV, dO.data(), attb.data(), lse.data(), rot.data(),
                           QKV, cc.data(), n_ch, QKV, H, KVH, D, maxpos, scratch.data(), nt);
    float *ddqkv = dalloc<float>((size_t)T * QKV), *ddelta = dalloc<float>((size_t)T * H);
    bf16 *ddO = upb(dO), *dattb = upb(attb);
    float *dlse_ref = up(lse);
    seedcu::attention_backward(ddqkv, QKV, ddelta, ddO, dattb, dlse_ref, dout, QKV, dch, dtl,
                               (int)tiles.size(), T, H, KVH, D, st);
    snprintf(what, sizeof what, "attention_backward dq|dk|dv (H %d KVH %d D %d)", H, KVH, D);
    check(rel(down(ddqkv, (size_t)T * QKV), dqkv), TOL_ATT, what);

    /* decode against a cache: 2 one-token chunks at positions 40 and 150, keys in a
     * separate (slots, maxpos, KVD) buffer */
    const int S = 2, p0[2] = {40, 150};
    vec kc = randv((size_t)S * maxpos * KVD, 1.0f, 1), vc = randv((size_t)S * maxpos * KVD, 1, 1);
    vec q2 = randv((size_t)2 * QKV, 1.0f, 1), o2((size_t)2 * Q);
    cpu_attn_chunk c2[2] = {};
    std::vector<seedcu::attn_chunk> g2(2);
    std::vector<seedcu::attn_tile> t2;
    for (int k = 0; k < 2; k++) {
        c2[k].tok0 = k;
        c2[k].len = 1;
        c2[k].pos0 = p0[k];
        c2[k].k = kc.data() + (size_t)k * maxpos * KVD;
        c2[k].v = vc.data() + (size_t)k * maxpos * KVD;
        g2[k] = seedcu::attn_chunk{k, 1, p0[k], (long long)k * maxpos * KVD};
        t2.push_back(seedcu::attn_tile{k, 0, 1});
    }
    cpu_attention_forward(o2.data(), NULL, q2.data(), QKV, c2, 2, KVD, H, KVH, D, maxpos,
                          scratch.data(), nt);
    bf16 *dq2 = upb(q2), *dkc = upb(kc), *dvc = upb(vc), *do2 = dalloc<bf16>((size_t)2 * Q);
    seedcu::attn_chunk *dg2 = upi(g2);
    seedcu::attn_tile *dt2 = upi(t2);
    seedcu::attention_forward(do2, NULL, dq2, QKV, dkc, dvc, KVD, dg2, dt2, 2, H, KVH, D, st);
    snprintf(what, sizeof what, "attention_forward decode from a cache (D %d)", D);
    check(rel(downb(do2, (size_t)2 * Q), o2), TOL_BF16, what);
}

static void test_head(void) {
    const int R = 37, C = 64, V = 3001;
    vec x = randv((size_t)R * C, 1.0f, 1), w = randv((size_t)V * C, 0.2f, 1);
    std::vector<int> tg(R);
    for (int r = 0; r < R; r++) tg[r] = r % 5 == 0 ? -1 : (int)seed_rng_below(&rng, V);
    vec logp(R), ent(R), lse(R), keep((size_t)R * V), scratch((size_t)cpu_head_block_rows(V) * V);
    cpu_head_forward(logp.data(), ent.data(), lse.data(), tg.data(), x.data(), w.data(), R, C, V,
                     1.0f, scratch.data(), keep.data());
    float *dz = up(keep), *dl = dalloc<float>(R), *de = dalloc<float>(R), *dls = dalloc<float>(R);
    int *dtg = upi(tg);
    seedcu::head_stats(dl, de, dls, dtg, dz, R, V, st);
    check(rel(down(dl, R), logp), TOL_F32, "head_stats logp (-1 targets give 0)");
    check(rel(down(de, R), ent), TOL_F32, "head_stats entropy");
    check(rel(down(dls, R), lse), TOL_F32, "head_stats lse");
    /* dlogits, checked through dx = dz w (what the backend's next GEMM makes) */
    vec dlp = randv(R, 1.0f, 0), dent = randv(R, 0.1f, 0), dx((size_t)R * C), dw((size_t)V * C, 0);
    cpu_head_backward(dx.data(), dw.data(), dlp.data(), dent.data(), tg.data(), lse.data(),
                      ent.data(), x.data(), w.data(), R, C, V, 1.0f, scratch.data(), keep.data(),
                      NULL);
    bf16 *ddz = dalloc<bf16>((size_t)R * V);
    float *ddlp = up(dlp), *ddent = up(dent), *dlse = up(lse), *dentr = up(ent);
    seedcu::head_dlogits(ddz, dz, dlse, dentr, dtg, ddlp, ddent, R, V, st);
    vec z = downb(ddz, (size_t)R * V), gx((size_t)R * C, 0.0f);
    for (int r = 0; r < R; r++)
        for (int j = 0; j < V; j++)
            for (int c = 0; c < C; c++)
                gx[(size_t)r * C + c] += z[(size_t)r * V + j] * w[(size_t)j * C + c];
    check(rel(gx, dx), TOL_BF16, "head_dlogits (through dx = dz w)");
}

static void test_adamw(void) {
    const long long n = 100003;
    vec p = randv(n, 1, 0), g = randv(n, 1, 0), m = randv(n, 0.1f, 0), v(n);
    for (long long i = 0; i < n; i++) v[i] = fabsf(seed_rng_normal(&rng)) * 0.01f;
    float *dp = up(p), *dg = up(g), *dm = up(m), *dv = up(v);
    bf16 *dpb = dalloc<bf16>(n);
    const float clip = 0.7f, decay = 1 - 1e-3f * 0.01f, b1 = 0.9f, b2 = 0.999f,
                ss = 1e-3f / (1 - 0.9f * 0.9f);
    const float bc2 = sqrtf(1 - 0.999f * 0.999f), eps = 1e-8f;
    seedcu::adamw_update(dp, dpb, dg, dm, dv, n, clip, decay, b1, b2, ss, bc2, eps, st);
    /* adamw.c's arithmetic, element by element */
    for (long long i = 0; i < n; i++) {
        float gi = g[i] * clip, pi = p[i] * decay;
        float mi = m[i] + (1 - b1) * (gi - m[i]), vi = v[i] * b2 + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - ss * (mi / (sqrtf(vi) / bc2 + eps));
    }
    check(rel(down(dp, n), p), 1e-6, "adamw_update params");
    check(rel(down(dm, n), m), 1e-6, "adamw_update first moment");
    check(rel(down(dv, n), v), 1e-6, "adamw_update second moment");
    check(rel(downb(dpb, n), p), TOL_BF16, "adamw_update bf16 copy");
    double *ds = dalloc<double>(1), ss_h = 0, ref = 0;
    seedcu::sumsq(ds, dg, n, st);
    cudaStreamSynchronize(st);
    cudaMemcpy(&ss_h, ds, sizeof ss_h, cudaMemcpyDeviceToHost);
    for (long long i = 0; i < n; i++) ref += (double)g[i] * g[i];
    check(fabs(ss_h - ref) / ref, 1e-9, "sumsq (gradient norm^2)");
}

int main(void) {
    char err[SEED_ERRLEN];
    if (model_cuda_available(err, sizeof err)) {
        printf("SKIP: %s\n", err);
        return 77;
    }
    uint64_t seed = (uint64_t)time(NULL);
    if (getenv("SEED_PARITY_SEED")) seed = strtoull(getenv("SEED_PARITY_SEED"), NULL, 10);
    printf("seed %llu (SEED_PARITY_SEED=%llu replays it)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    seed_rng_init(&rng, seed);
    cudaStreamCreate(&st);
    test_layers();
    test_rope_attention(4, 2, 32);
    test_rope_attention(2, 1, 128);
    test_rope_attention(6, 2, 64);
    test_head();
    test_adamw();
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        printf("FAIL: a kernel failed: %s\n", cudaGetErrorString(e));
        return 1;
    }
    printf("%s: %d check(s) failed\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
