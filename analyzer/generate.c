/* generate.c — see generate.h. */
#include "analyzer/generate.h"

#include <stdlib.h>

#include "common/util.h"

int analyzer_generate(const analyzer_gen *g, int n, const tok_ids *prompts, seed_rng *rng, int *out,
                      int *nout, char *err, size_t errlen) {
    const int cap = g->max_seq - g->max_new;
    if (cap < 1 || g->max_new < 1)
        return seed_errf(err, errlen, "no room for a %d-token reply in a %d-token context",
                         g->max_new, g->max_seq);
    if (g->n_slots < 1 || g->n_slots > ANALYZER_GEN_MAX_SLOTS)
        return seed_errf(err, errlen, "generation slots %d outside [1, %d]", g->n_slots,
                         ANALYZER_GEN_MAX_SLOTS);
    int cs[ANALYZER_GEN_MAX_SLOTS], cl[ANALYZER_GEN_MAX_SLOTS];
    const int *ct[ANALYZER_GEN_MAX_SLOTS];
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

model_sampler analyzer_skill_sampler(const job_config *job) {
    return (model_sampler){(float)job->analyzer.skill_temperature, (float)job->sampling.top_p,
                           job->sampling.top_k};
}

int analyzer_self_skills(const analyzer_gen *g, tok *tk, tok_ws *ws, int n, const skill_traj *t,
                         const uint64_t *sample_seed, seed_sbuf *text, char *err, size_t errlen) {
    tok_ids *prompts = calloc((size_t)n + 1, sizeof *prompts);
    int *gen = calloc((size_t)n * (size_t)g->max_new + 1, sizeof(int));
    int *ng = calloc((size_t)n + 1, sizeof(int));
    seed_rng *rng = calloc((size_t)n + 1, sizeof *rng);
    seed_sbuf chat = {0};
    int rc = (!prompts || !gen || !ng || !rng)
                 ? seed_errf(err, errlen, "out of memory for %d self skills", n)
                 : 0;
    for (int i = 0; i < n && !rc; i++) {
        chat.n = 0;
        rc = skill_request_chat(&t[i], ANALYZER_SKILL_OBS_CHARS, &chat, err, errlen);
        if (!rc) rc = tok_encode(tk, ws, chat.p, chat.n, 0, &prompts[i], err, errlen);
        seed_rng_init(&rng[i], seed_hash_mix(sample_seed[i], 0x5ce11ULL));
    }
    if (!rc && n > 0) rc = analyzer_generate(g, n, prompts, rng, gen, ng, err, errlen);
    for (int i = 0; i < n && !rc; i++)
        rc = tok_decode(tk, gen + (size_t)i * (size_t)g->max_new, (size_t)ng[i],
                        TOK_DECODE_SKIP_SPECIAL, &text[i], err, errlen);
    for (int i = 0; prompts && i < n; i++) tok_ids_free(&prompts[i]);
    seed_sbuf_free(&chat);
    free(prompts);
    free(gen);
    free(ng);
    free(rng);
    return rc;
}
