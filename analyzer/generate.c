/* generate.c — see generate.h. */
#include "analyzer/generate.h"

#include "common/util.h"

#define GEN_MAX_SLOTS 64

int analyzer_generate(const analyzer_gen *g, int n, const tok_ids *prompts, seed_rng *rng, int *out,
                      int *nout, char *err, size_t errlen) {
    const int cap = g->max_seq - g->max_new;
    if (cap < 1 || g->max_new < 1)
        return seed_errf(err, errlen, "no room for a %d-token reply in a %d-token context",
                         g->max_new, g->max_seq);
    if (g->n_slots < 1 || g->n_slots > GEN_MAX_SLOTS)
        return seed_errf(err, errlen, "generation slots %d outside [1, %d]", g->n_slots,
                         GEN_MAX_SLOTS);
    int cs[GEN_MAX_SLOTS], cl[GEN_MAX_SLOTS];
    const int *ct[GEN_MAX_SLOTS];
    for (int e = 0; e < n; e++) nout[e] = 0;
    for (int base = 0; base < n; base += g->n_slots) {
        int m = SEED_MIN(g->n_slots, n - base), nc = 0;
        for (int i = 0; i < m; i++) {
            const tok_ids *p = &prompts[base + i];
            if (p->n < 1) return seed_errf(err, errlen, "prompt %d is empty", base + i);
            int skip = (int)p->n > cap ? (int)p->n - cap : 0; /* keep the prompt's end */
            model_kv_clear(g->m, i);
            cs[nc] = i;
            ct[nc] = p->v + skip;
            cl[nc++] = (int)p->n - skip;
        }
        while (nc > 0) {
            if (model_forward_cached(g->m, nc, cs, ct, cl, g->logits, err, errlen)) return -1;
            int nn = 0;
            for (int c = 0; c < nc; c++) {
                int e = base + cs[c];
                int t = model_sample(g->logits + (size_t)c * (size_t)g->vocab, g->vocab, &g->sp,
                                     &rng[e], NULL, g->scratch);
                int *o = out + (size_t)e * (size_t)g->max_new;
                o[nout[e]++] = t;
                if (t == g->end_id || nout[e] >= g->max_new) continue;
                cs[nn] = cs[c];
                ct[nn] = &o[nout[e] - 1];
                cl[nn++] = 1;
            }
            nc = nn;
        }
    }
    return 0;
}
