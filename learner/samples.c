/* samples.c — see samples.h. */
#include "learner/samples.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* One step of a group, for grouping identical observations (anchor states). */
typedef struct learner_anchor_item {
    uint64_t hash;
    const char *obs;
    int idx; /* step index within the group's flattened steps */
} learner_anchor_item;

void learner_samples_init(learner_samples *b) {
    memset(b, 0, sizeof *b);
}

void learner_samples_free(learner_samples *b) {
    free(b->v);
    free(b->ret);
    free(b->adv);
    free(b->sret);
    free(b->sadv);
    free(b->anchor);
    free(b->items);
    free(b->dscratch);
    free(b->mask);
    tok_ws_free(b->ws);
    memset(b, 0, sizeof *b);
}

static int grow(void **p, size_t elem, int n) {
    void *q = realloc(*p, elem * (size_t)n);
    if (!q) return -1;
    *p = q;
    return 0;
}

static int reserve_episodes(learner_samples *b, int n) {
    if (n <= b->ep_cap) return 0;
    if (grow((void **)&b->ret, sizeof(float), n) || grow((void **)&b->adv, sizeof(float), n))
        return -1;
    b->ep_cap = n;
    return 0;
}

static int reserve_steps(learner_samples *b, int n) {
    if (n <= b->st_cap) return 0;
    if (grow((void **)&b->sret, sizeof(float), n) || grow((void **)&b->sadv, sizeof(float), n) ||
        grow((void **)&b->anchor, sizeof(int), n) ||
        grow((void **)&b->items, sizeof(learner_anchor_item), n) ||
        grow((void **)&b->dscratch, 3 * sizeof(double), n))
        return -1;
    b->st_cap = n;
    return 0;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int item_cmp(const void *pa, const void *pb) {
    const learner_anchor_item *a = pa, *b = pb;
    if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
    int c = strcmp(a->obs, b->obs);
    if (c) return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int is_error(const Seed__Episode *ep) {
    return ep->error && ep->error[0];
}

/* GiGPO over the n steps of one group's usable episodes (flattened in episode order):
 * discounted returns, anchor ids by identical observation, normalised step advantages
 * into b->sadv. */
static void step_advantages(learner_samples *b, const learner_samples_cfg *cfg,
                            const Seed__EpisodeGroup *g, int n) {
    int k = 0;
    for (size_t e = 0; e < g->n_episodes; e++) {
        const Seed__Episode *ep = g->episodes[e];
        if (is_error(ep)) continue;
        double running = 0.0;
        for (size_t t = ep->n_steps; t-- > 0;) {
            running = ep->steps[t]->reward + cfg->gigpo_gamma * running;
            b->sret[k + (int)t] = (float)running;
        }
        for (size_t t = 0; t < ep->n_steps; t++) {
            const char *o = ep->steps[t]->observation ? ep->steps[t]->observation : "";
            b->items[k] = (learner_anchor_item){fnv1a(o), o, k};
            k++;
        }
    }
    qsort(b->items, (size_t)n, sizeof *b->items, item_cmp);
    int id = -1;
    for (int i = 0; i < n; i++) {
        if (i == 0 || b->items[i].hash != b->items[i - 1].hash ||
            strcmp(b->items[i].obs, b->items[i - 1].obs))
            id++;
        b->anchor[b->items[i].idx] = id;
    }
    learner_anchor_advantages(b->sret, b->anchor, n, cfg->adv_norm, b->sadv, b->dscratch);
}

/* The byte offsets [*a, *b) of the reply's action text: between the first "<action>" and
 * the first "</action>" after it; *a = -1 when there is none. */
static void action_bytes(const tok *tk, const int32_t *ids, int n, long *a, long *b) {
    static const char open_tag[] = "<action>", close_tag[] = "</action>";
    const size_t ol = sizeof open_tag - 1, cl = sizeof close_tag - 1;
    char win[sizeof close_tag] = {0}; /* the last bytes seen: tags may span tokens */
    size_t wl = 0;
    long pos = 0;
    *a = *b = -1;
    for (int j = 0; j < n && *b < 0; j++) {
        size_t len = 0;
        const char *p = tok_id_to_bytes(tk, ids[j], &len);
        for (size_t k = 0; p && k < len && *b < 0; k++, pos++) {
            if (wl == sizeof win) memmove(win, win + 1, --wl);
            win[wl++] = p[k];
            if (*a < 0 && wl >= ol && !memcmp(win + wl - ol, open_tag, ol))
                *a = pos + 1;
            else if (*a >= 0 && wl >= cl && !memcmp(win + wl - cl, close_tag, cl))
                *b = pos + 1 - (long)cl;
        }
    }
    if (*b <= *a) *a = -1;
}

void learner_action_span(const tok *tk, const int32_t *ids, int n, int *lo, int *hi) {
    long a, b;
    *lo = *hi = 0;
    action_bytes(tk, ids, n, &a, &b);
    if (a < 0) return;
    /* token j covers bytes [s0, e0): it carries the action when that overlaps [a, b) */
    long pos = 0;
    for (int j = 0; j < n && pos < b; j++) {
        size_t len = 0;
        tok_id_to_bytes(tk, ids[j], &len);
        const long s0 = pos, e0 = pos + (long)len;
        pos = e0;
        if (e0 > a && s0 < b) {
            if (*hi == 0) *lo = j;
            *hi = j + 1;
        }
    }
}

static int has_word_byte(const char *p, size_t len) {
    for (size_t k = 0; p && k < len; k++) {
        const unsigned char c = (unsigned char)p[k];
        if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c >= 0x80)
            return 1;
    }
    return 0;
}

static int id_in(const int32_t *v, size_t n, int32_t id) {
    for (size_t i = 0; i < n; i++)
        if (v[i] == id) return 1;
    return 0;
}

int learner_decision_mask(const tok *tk, tok_ws *ws, const int32_t *ids, int n, int lo, int hi,
                          unsigned char *mask, char *err, size_t errlen) {
    memset(mask, 0, (size_t)n);
    if (hi <= lo) return 0;
    for (int t = lo; t < hi; t++) mask[t] = 1;
    long a, b;
    action_bytes(tk, ids, n, &a, &b);
    if (a < 0) return 0;
    /* " " + the action text, re-encoded: the ids the reasoning spells it with */
    seed_sbuf txt = {0};
    seed_sbuf_append(&txt, " ", 1);
    long pos = 0;
    for (int j = 0; j < n && pos < b; j++) {
        size_t len = 0;
        const char *p = tok_id_to_bytes(tk, ids[j], &len);
        for (size_t k = 0; p && k < len; k++, pos++)
            if (pos >= a && pos < b) seed_sbuf_append(&txt, p + k, 1);
    }
    tok_ids run = {0};
    int rc = seed_sbuf_failed(&txt) ? seed_errf(err, errlen, "out of memory") : 0;
    if (!rc) rc = tok_encode(tk, ws, txt.p, txt.n, TOK_ENCODE_SPLIT_SPECIAL, &run, err, errlen);
    for (int t = 0; t < lo && !rc; t++) {
        size_t len = 0;
        const char *p = tok_id_to_bytes(tk, ids[t], &len);
        if (has_word_byte(p, len) &&
            (id_in(ids + lo, (size_t)(hi - lo), ids[t]) || id_in(run.v, run.n, ids[t])))
            mask[t] = 1;
    }
    tok_ids_free(&run);
    seed_sbuf_free(&txt);
    return rc;
}

/* algorithm.opd_baseline group: the mean q - s over the tokens of a group's samples that
 * carry it, which every sample of the group then subtracts. In expectation q - s on a
 * sampled token is -KL(pi || q) whatever the token; the group's mean takes that common
 * part out and leaves how the skill ranks one sampled token against the others. */
static void group_opd_baseline(learner_sample *v, int n) {
    double sum = 0.0;
    long count = 0;
    for (int i = 0; i < n; i++) {
        if (!v[i].q) continue;
        const int lo = v[i].q_lo, hi = v[i].q_hi;
        for (int t = 0; t < v[i].rlen; t++)
            if (learner_q_counts(v[i].q_mask, lo, hi, t)) {
                sum += (double)v[i].q[t] - v[i].s[t];
                count++;
            }
    }
    const float base = count > 0 ? (float)(sum / (double)count) : 0.0f;
    for (int i = 0; i < n; i++) v[i].q_base = v[i].q ? base : 0.0f;
}

int learner_samples_build(learner_samples *b, const learner_samples_cfg *cfg,
                          Seed__ScoredGroup *const *groups, int ng, learner_samples_stats *st,
                          char *err, size_t errlen) {
    b->n = 0;
    /* opd_tokens decision: one flag per response token of every step, sized up front so
     * the samples' q_mask pointers stay put */
    const int decision = cfg->decision && cfg->tk && cfg->use_q;
    size_t mask_used = 0;
    if (decision) {
        size_t need = 0;
        for (int gi = 0; gi < ng; gi++)
            for (size_t e = 0; groups[gi]->group && e < groups[gi]->group->n_episodes; e++)
                for (size_t t = 0; t < groups[gi]->group->episodes[e]->n_steps; t++)
                    need += groups[gi]->group->episodes[e]->steps[t]->n_response_ids;
        if (need > b->mask_cap) {
            unsigned char *m = realloc(b->mask, need);
            if (!m) return seed_errf(err, errlen, "out of memory for %zu token flags", need);
            b->mask = m;
            b->mask_cap = need;
        }
        if (!b->ws && tok_ws_new(cfg->tk, &b->ws, err, errlen)) return -1;
    }
    /* algorithm.loss_agg episode-mean: each sample's agg = episodes x its episode's tokens */
    const int per_episode = cfg->loss_agg == JOB_LOSS_AGG_EPISODE;
    int first = 0, episodes = 0; /* the current episode's first sample; episodes trained */
    for (int gi = 0; gi < ng; gi++) {
        const Seed__ScoredGroup *sg = groups[gi];
        const Seed__EpisodeGroup *g = sg->group;
        st->groups++;
        if (sg->scored_version != g->policy_version) st->scored_off_version++;
        if (reserve_episodes(b, (int)g->n_episodes))
            return seed_errf(err, errlen, "out of memory for a group of %zu episodes",
                             g->n_episodes);
        /* the group's statistics cover the episodes that ran to their end */
        int ne = 0, nsteps = 0, nwon = 0;
        for (size_t e = 0; e < g->n_episodes; e++) {
            const Seed__Episode *ep = g->episodes[e];
            if (is_error(ep)) {
                st->episodes_error++;
                learner_reasons_add(&st->errors, ep->error, 1);
                continue;
            }
            b->ret[ne++] = ep->episode_return;
            nwon += ep->won != 0;
            nsteps += (int)ep->n_steps;
        }
        if (ne > 0 && nwon == ne) st->groups_all_won++;
        if (ne > 0 && nwon == 0) st->groups_all_lost++;
        learner_group_advantages(b->ret, ne, cfg->adv_norm, b->adv);
        const int gigpo = cfg->gigpo_coef != 0.0f && nsteps > 0;
        if (gigpo) {
            if (reserve_steps(b, nsteps))
                return seed_errf(err, errlen, "out of memory for a group of %d steps", nsteps);
            step_advantages(b, cfg, g, nsteps);
        }
        int ei = 0, k = 0;
        const int gfirst = b->n; /* the group's first sample */
        for (size_t e = 0; e < g->n_episodes; e++) {
            const Seed__Episode *ep = g->episodes[e];
            if (is_error(ep)) continue;
            const Seed__EpisodeAnalysis *an = e < sg->n_analyses ? sg->analyses[e] : NULL;
            for (size_t t = 0; t < ep->n_steps; t++, k++) {
                const Seed__Step *sp = ep->steps[t];
                if (sp->n_response_ids == 0 || sp->n_sample_logprobs != sp->n_response_ids)
                    continue; /* nothing to train (wire_validate refuses the mismatch) */
                const Seed__StepScores *sc = an && t < an->n_steps ? an->steps[t] : NULL;
                const float *s = sc && sc->n_s == sp->n_response_ids ? sc->s : NULL;
                const float *q = sc && sc->n_q == sp->n_response_ids ? sc->q : NULL;
                if (b->n == b->cap) {
                    int cap = b->cap ? b->cap * 2 : 256;
                    if (grow((void **)&b->v, sizeof *b->v, cap))
                        return seed_errf(err, errlen, "out of memory for %d samples", cap);
                    b->cap = cap;
                }
                learner_sample *smp = &b->v[b->n++];
                memset(smp, 0, sizeof *smp);
                smp->prompt = sp->prompt_ids;
                smp->plen = (int)sp->n_prompt_ids;
                smp->resp = sp->response_ids;
                smp->rlen = (int)sp->n_response_ids;
                smp->behav = sp->sample_logprobs;
                smp->q = cfg->use_q && s && !(cfg->opd_lost_only && ep->won) ? q : NULL;
                if (smp->q && cfg->tk) {
                    learner_action_span(cfg->tk, smp->resp, smp->rlen, &smp->q_lo, &smp->q_hi);
                    if (smp->q_hi == 0) smp->q = NULL; /* no action text: nothing to distil */
                }
                if (smp->q && decision) {
                    unsigned char *m = b->mask + mask_used;
                    mask_used += (size_t)smp->rlen;
                    if (learner_decision_mask(cfg->tk, b->ws, smp->resp, smp->rlen, smp->q_lo,
                                              smp->q_hi, m, err, errlen))
                        return -1;
                    smp->q_mask = m;
                }
                smp->s = smp->q ? s : NULL;
                smp->adv_ep = b->adv[ei];
                smp->adv_step = gigpo ? cfg->gigpo_coef * b->sadv[k] : 0.0f;
                smp->sft = 0;
                smp->agg = 0;
                st->samples++;
            }
            if (per_episode) { /* the episode's response tokens; x episodes below */
                double ep_tokens = 0;
                for (int i = first; i < b->n; i++) ep_tokens += b->v[i].rlen;
                for (int i = first; i < b->n; i++) b->v[i].agg = ep_tokens;
                episodes += b->n > first;
                first = b->n;
            }
            ei++;
        }
        if (cfg->opd_baseline == JOB_OPD_BASELINE_GROUP)
            group_opd_baseline(b->v + gfirst, b->n - gfirst);
    }
    for (int i = 0; per_episode && i < b->n; i++) b->v[i].agg *= episodes;
    return 0;
}
