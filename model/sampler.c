/* sampler.c — model_sample: greedy, temperature, top-k and top-p (nucleus) sampling
 * with the semantics of transformers' logits warpers (temperature, then top-k, then
 * top-p on the renormalized survivors; the token that crosses top_p is kept, and at
 * least one token always survives).
 *
 * Contract: deterministic given the rng state: a sampled draw consumes exactly one
 * seed_rng_uniform, greedy consumes none, so replaying an episode with the same seed
 * replays its tokens. Ties order by token id. No allocation: candidates live in the
 * caller's scratch (vocab floats; token ids are stored as floats, exact below 2^24).
 * Cost: one vectorized fp32 exp per vocabulary entry (summed in fp64), plus
 * O(k log k) for the k candidates that are sorted: top-p sorts only the tokens above
 * a probability threshold whose mass already exceeds top_p.
 * The logged log-prob is log softmax(logits / T) over the full vocabulary (T = 1 for
 * greedy), the behaviour log-prob of the loss: model_score and model_train_forward give
 * the same value after model_set_temperature(T) (tests/model/test_score.py). */
#include "model/model.h"
#include "model/cpu/kernels.h" /* cpu_expf: a vectorizable fp32 exp */

#include <math.h>

/* a ranks before b: larger logit, then smaller id */
static int before(const float *z, int a, int b) {
    return z[a] > z[b] || (z[a] == z[b] && a < b);
}

/* Heap over ids (stored as floats) keyed by rank: `worst_on_top` keeps the worst id at
 * the root (a bounded best-k heap); otherwise the best is at the root. */
static void sift_down(float *h, int n, int i, const float *z, int worst_on_top) {
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) return;
        int a = (int)h[c], b;
        if (c + 1 < n) {
            b = (int)h[c + 1];
            if (worst_on_top ? before(z, a, b) : before(z, b, a)) c++;
        }
        int x = (int)h[i], y = (int)h[c];
        if (worst_on_top ? before(z, y, x) : before(z, x, y)) return;
        h[i] = (float)y;
        h[c] = (float)x;
        i = c;
    }
}

/* Sort ids h[0..n) best first (heapsort: worst-on-top heap, pop to the back). */
static void sort_best_first(float *h, int n, const float *z) {
    for (int i = n / 2 - 1; i >= 0; i--) sift_down(h, n, i, z, 1);
    for (int end = n - 1; end > 0; end--) {
        float t = h[0];
        h[0] = h[end];
        h[end] = t;
        sift_down(h, end, 0, z, 1);
    }
    /* the worst-on-top heap pops worst ids to the back, leaving best first */
}

/* Sum of n <= 256 floats (a vectorized fp32 reduction; callers add blocks in fp64). */
static double block_sum(const float *e, int n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int k = 0; k < n; k++) s += e[k];
    return s;
}

static int argmax(const float *z, int V) {
    float mx = z[0];
#pragma omp simd reduction(max : mx)
    for (int j = 1; j < V; j++) mx = z[j] > mx ? z[j] : mx;
    for (int j = 0; j < V; j++)
        if (z[j] == mx) return j;
    return 0; /* NaN logits */
}

int model_sample(const float *logits, int vocab, const model_sampler *s, seed_rng *rng, float *logp,
                 float *scratch) {
    const float T = s->temperature;
    const int V = vocab;
    int best = argmax(logits, V);
    const float mx = logits[best];
    if (!(T > 0.0f) || s->top_k == 1) {
        if (logp) {
            const float inv = T > 0.0f ? 1.0f / T : 1.0f;
            double sum = 0.0;
#pragma omp simd reduction(+ : sum)
            for (int j = 0; j < V; j++) sum += cpu_expf((logits[j] - mx) * inv);
            *logp = (float)(-log(sum));
        }
        return best;
    }
    /* e_j = exp((z_j - max) / T) in fp32, summed in fp64: the unnormalized distribution */
    const float invT = 1.0f / T;
#define EXPW(j) cpu_expf((logits[(j)] - mx) * invT)
    const int use_k = s->top_k > 0 && s->top_k < V;
    const int use_p = s->top_p > 0.0f && s->top_p < 1.0f;
    /* e into scratch (a plain map the compiler vectorizes), then summed in blocks; with
     * top-k, scratch holds the candidate heap, so the exps are summed block by block */
    double sum = 0.0;
    for (int j0 = 0; j0 < V; j0 += 256) {
        const int n = SEED_MIN(256, V - j0);
        float blk[256];
        float *e = use_k ? blk : scratch + j0;
        for (int k = 0; k < n; k++) e[k] = EXPW(j0 + k);
        sum += block_sum(e, n);
    }
#define PROB(j) ((double)EXPW(j) / sum)
    int tok = -1;
    double u = seed_rng_uniform(rng);
    if (!use_k && !use_p) {
        /* inverse CDF: whole blocks first (vectorized sums), then within the block */
        double target = u * sum, c = 0.0;
        int j0 = 0;
        for (; j0 + 256 <= V; j0 += 256) {
            double bs = block_sum(scratch + j0, 256);
            if (c + bs > target) break;
            c += bs;
        }
        for (int j = j0; j < V; j++) {
            c += scratch[j];
            if (c > target) {
                tok = j;
                break;
            }
        }
        if (tok < 0) tok = best; /* rounding left target at the very end */
    } else {
        int n = 0;
        if (use_k) {
            const int k = s->top_k;
            for (int j = 0; j < V; j++) {
                if (n < k) {
                    scratch[n++] = (float)j;
                    if (n == k)
                        for (int i = k / 2 - 1; i >= 0; i--) sift_down(scratch, k, i, logits, 1);
                } else if (before(logits, j, (int)scratch[0])) {
                    scratch[0] = (float)j;
                    sift_down(scratch, k, 0, logits, 1);
                }
            }
        } else {
            /* The tokens with e >= t are a prefix of the sorted order; once their mass
             * reaches top_p the nucleus lies inside them. t = (1 - top_p) / V always
             * qualifies (the rest weighs less than 1 - top_p); larger t, tried first,
             * usually qualify too and leave far fewer candidates to sort. */
            const double need = (double)s->top_p * sum;
            float thr = (float)((1.0 - (double)s->top_p) / (double)V * sum);
            for (float t = 1e-2f; t > thr; t *= 1e-2f) {
                double mass = 0.0;
                for (int j0 = 0; j0 < V; j0 += 256) {
                    const int chunk = SEED_MIN(256, V - j0);
                    float ms = 0.0f;
#pragma omp simd reduction(+ : ms)
                    for (int k = 0; k < chunk; k++)
                        ms += scratch[j0 + k] >= t ? scratch[j0 + k] : 0.0f;
                    mass += ms;
                }
                if (mass >= need) {
                    thr = t;
                    break;
                }
            }
            /* compact the candidates' ids in place (n <= j) */
            for (int j = 0; j < V; j++)
                if (scratch[j] >= thr) scratch[n++] = (float)j;
        }
        sort_best_first(scratch, n, logits);
        /* mass the top-p threshold refers to: the survivors of top-k, else everything */
        double total = 0.0;
        if (use_k)
            for (int i = 0; i < n; i++) total += PROB((int)scratch[i]);
        else
            total = 1.0;
        int keep = n;
        if (use_p) {
            double c = 0.0;
            for (int i = 0; i < n; i++) {
                if (c >= (double)s->top_p * total) {
                    keep = i;
                    break;
                }
                c += PROB((int)scratch[i]);
            }
            if (keep < 1) keep = 1;
        }
        double kept = 0.0;
        for (int i = 0; i < keep; i++) kept += PROB((int)scratch[i]);
        double target = u * kept, c = 0.0;
        tok = (int)scratch[keep - 1];
        for (int i = 0; i < keep; i++) {
            c += PROB((int)scratch[i]);
            if (c > target) {
                tok = (int)scratch[i];
                break;
            }
        }
    }
    if (logp) *logp = (float)((double)((logits[tok] - mx) * invT) - log(sum));
#undef PROB
#undef EXPW
    return tok;
}
