/* layers.c — the elementwise and normalization layers (see kernels.h): embedding,
 * RMSNorm, RoPE, SwiGLU, each forward and backward, OpenMP over rows. RMSNorm keeps
 * transformers' fp32 arithmetic order: x * rsqrt(mean(x^2) + eps), then * weight. */
#include "model/cpu/kernels.h"

#include <math.h>
#include <omp.h>

void cpu_encoder_forward(float *out, const int *tokens, const float *wte, int T, int C) {
    // out is (T,C), wte is (V,C)
#pragma omp parallel for schedule(static) if (T > 64)
    for (int t = 0; t < T; t++)
        memcpy(out + (size_t)t * C, wte + (size_t)tokens[t] * C, sizeof(float) * C);
}

void cpu_encoder_backward(float *dwte, const float *dout, const int *tokens, int T, int C) {
    // dwte is (V,C), dout is (T,C); tokens repeat, so columns split the work
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int c0 = (int)((long)C * id / nt), c1 = (int)((long)C * (id + 1) / nt);
        for (int t = 0; t < T; t++) {
            float *d = dwte + (size_t)tokens[t] * C;
            const float *s = dout + (size_t)t * C;
            for (int c = c0; c < c1; c++) d[c] += s[c];
        }
    }
}

void cpu_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int T,
                         int C, float eps) {
    // out, inp are (T,C), weight is (C), rstd is (T)
#pragma omp parallel for schedule(static) if (T > 16)
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C;
        float *o = out + (size_t)t * C;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        float r = 1.0f / sqrtf(ss / (float)C + eps);
        for (int c = 0; c < C; c++) o[c] = weight[c] * (x[c] * r);
        if (rstd) rstd[t] = r;
    }
}

void cpu_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                          const float *weight, const float *rstd, int T, int C, float *partial) {
    // dinp, dout, inp are (T,C); partial is (nthreads,C)
    int nthr = 1;
#pragma omp parallel
    {
        int id = omp_get_thread_num();
#pragma omp single
        nthr = omp_get_num_threads();
        float *dw = partial + (size_t)id * C;
        memset(dw, 0, sizeof(float) * C);
#pragma omp for schedule(static)
        for (int t = 0; t < T; t++) {
            const float *x = inp + (size_t)t * C, *dy = dout + (size_t)t * C;
            float *dx = dinp + (size_t)t * C;
            float r = rstd[t], dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int c = 0; c < C; c++) dot += dy[c] * weight[c] * x[c];
            float k = dot * r * r * r / (float)C;
            for (int c = 0; c < C; c++) {
                dx[c] += dy[c] * weight[c] * r - k * x[c];
                dw[c] += dy[c] * x[c] * r;
            }
        }
    }
    for (int i = 0; i < nthr; i++)
        for (int c = 0; c < C; c++) dweight[c] += partial[(size_t)i * C + c];
}

void cpu_rope_forward(float *x, int ld, const int *pos, int T, int n_heads, int D,
                      const float *cos_t, const float *sin_t, int inverse) {
    // x is (T,ld) with heads at columns h*D; cos_t, sin_t are (max_pos, D/2)
    int half = D / 2;
    float sg = inverse ? -1.0f : 1.0f;
#pragma omp parallel for schedule(static) if (T > 16)
    for (int t = 0; t < T; t++) {
        const float *cs = cos_t + (size_t)pos[t] * half, *sn = sin_t + (size_t)pos[t] * half;
        for (int h = 0; h < n_heads; h++) {
            float *a = x + (size_t)t * ld + h * D, *b = a + half;
            for (int i = 0; i < half; i++) {
                float x1 = a[i], x2 = b[i], s = sg * sn[i];
                a[i] = x1 * cs[i] - x2 * s;
                b[i] = x2 * cs[i] + x1 * s;
            }
        }
    }
}

void cpu_swiglu_forward(float *h, const float *gu, int T, int I) {
    // h is (T,I), gu is (T,2I): gate then up
#pragma omp parallel for schedule(static) if (T > 4)
    for (int t = 0; t < T; t++) {
        const float *g = gu + (size_t)t * 2 * I, *u = g + I;
        float *o = h + (size_t)t * I;
        for (int i = 0; i < I; i++) o[i] = g[i] / (1.0f + cpu_expf(-g[i])) * u[i];
    }
}

void cpu_swiglu_backward(float *dgu, const float *dh, const float *gu, int T, int I) {
    // dgu is (T,2I), dh is (T,I), gu is (T,2I)
#pragma omp parallel for schedule(static) if (T > 4)
    for (int t = 0; t < T; t++) {
        const float *g = gu + (size_t)t * 2 * I, *u = g + I, *d = dh + (size_t)t * I;
        float *dg = dgu + (size_t)t * 2 * I, *du = dg + I;
        for (int i = 0; i < I; i++) {
            float s = 1.0f / (1.0f + cpu_expf(-g[i]));
            float silu = g[i] * s;
            du[i] = d[i] * silu;
            dg[i] = d[i] * u[i] * (s + silu * (1.0f - s));
        }
    }
}
