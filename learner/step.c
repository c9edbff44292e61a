/* step.c — one optimizer step (step.h). */
#include "learner/step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

struct learner_stepper {
    model *policy, *ref;
    learner_loss_cfg loss;
    model_adamw opt;
    int cap;          /* micro_batch_tokens */
    int share_prefix; /* pack prompts' common prefixes once (model_batch.prefix) */
    float prompt_w;   /* weight of the next-token loss on SFT prompts (0: responses only) */
    int nonfinite_run;
    /* packed micro-batch, planned once */
    int *tokens, *targets, *cu, *prefix;
    float *logp, *ent, *dlogp, *dent, *ref_logp;
    /* per response position (compacted); SFT prompt positions with a target (ppos) */
    int *pos, *ppos, n_ppos;
    float *c_logp, *c_behav, *c_s, *c_q, *c_ref, *c_ent, *c_adv, *c_dlogp, *c_dent;
    /* reference scoring of one micro-batch's RL samples (at most cap / 2 sequences) */
    const int **r_prompt, **r_resp;
    int *r_plen, *r_rlen;
    float **r_out;
    /* per step, grown to the step's sample count (one block, ws): the samples that fit in
     * packing order (keep), and their prefix tree (see plan_tree) */
    int *ws;
    int ws_cap;
    int *keep, *sort_tmp, *lcp, *leaf_start, *leaf_parent, *chain;
    int *node_parent, *node_d0, *node_d1, *node_src, *node_mb, *node_seq;
    int n_nodes, mb_id;
};

/* A prefix node is kept when sharing it saves at least this many tokens over repeating
 * it in each of its children: a smaller one costs more (one more sequence, its keys
 * gathered) than it saves. */
#define STEP_MIN_SAVE 16

int learner_step_create(learner_stepper **out, model *policy, model *ref,
                        const learner_loss_cfg *loss, const model_adamw *opt,
                        int micro_batch_tokens, int share_prefix, char *err, size_t errlen) {
    if (micro_batch_tokens < 2)
        return seed_errf(err, errlen, "micro_batch_tokens must be at least 2, got %d",
                         micro_batch_tokens);
    learner_stepper *t = calloc(1, sizeof *t);
    if (!t) return seed_errf(err, errlen, "out of memory creating the stepper");
    t->policy = policy;
    t->ref = ref;
    t->loss = *loss;
    t->opt = *opt;
    t->cap = micro_batch_tokens;
    t->share_prefix = share_prefix && model_train_shares_prefix(policy) &&
                      (!ref || model_train_shares_prefix(ref));
    size_t n = (size_t)micro_batch_tokens;
    t->tokens = malloc(n * sizeof(int));
    t->targets = malloc(n * sizeof(int));
    t->cu = malloc((n + 1) * sizeof(int));
    t->prefix = malloc(n * sizeof(int));
    t->pos = malloc(n * sizeof(int));
    t->ppos = malloc(n * sizeof(int));
    t->r_prompt = malloc(n * sizeof *t->r_prompt);
    t->r_resp = malloc(n * sizeof *t->r_resp);
    t->r_plen = malloc(n * sizeof(int));
    t->r_rlen = malloc(n * sizeof(int));
    t->r_out = malloc(n * sizeof *t->r_out);
    float **fb[] = {&t->ref_logp, &t->logp,    &t->ent,     &t->dlogp, &t->dent,
                    &t->c_logp,   &t->c_behav, &t->c_s,     &t->c_q,   &t->c_ref,
                    &t->c_ent,    &t->c_adv,   &t->c_dlogp, &t->c_dent};
    int ok = t->tokens && t->targets && t->cu && t->prefix && t->pos && t->ppos && t->r_prompt &&
             t->r_resp && t->r_plen && t->r_rlen && t->r_out;
    for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
        *fb[i] = calloc(n, sizeof(float));
        ok = ok && *fb[i];
    }
    if (!ok) {
        learner_step_free(t);
        return seed_errf(err, errlen, "out of memory planning the step buffers (%d tokens)",
                         micro_batch_tokens);
    }
    *out = t;
    return 0;
}

void learner_step_free(learner_stepper *t) {
    if (!t) return;
    void *p[] = {t->tokens,         t->targets,  t->cu,
                 t->prefix,         t->pos,      t->ppos,
                 t->logp,           t->ref_logp, t->ent,
                 t->dlogp,          t->dent,     t->c_logp,
                 t->c_behav,        t->c_s,      t->c_q,
                 t->c_ref,          t->c_ent,    t->c_adv,
                 t->c_dlogp,        t->c_dent,   (void *)t->r_prompt,
                 (void *)t->r_resp, t->r_plen,   t->r_rlen,
                 t->r_out,          t->ws};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    free(t);
}

void learner_step_set_lr(learner_stepper *t, float lr) {
    t->opt.lr = lr;
}

void learner_step_set_prompt_weight(learner_stepper *t, float w) {
    t->prompt_w = w;
}

int learner_step_reset_moments(learner_stepper *t, char *err, size_t errlen) {
    float *m1, *m2;
    int64_t *step;
    if (model_adamw_state(t->policy, &m1, &m2, &step))
        return seed_errf(err, errlen, "the policy has no optimizer state to reset");
    memset(m1, 0, sizeof(float) * model_num_params(t->policy));
    memset(m2, 0, sizeof(float) * model_num_params(t->policy));
    *step = 0;
    return 0;
}

static int sample_len(const learner_sample *s) {
    return s->plen + s->rlen;
}

/* ---- shared prefixes: a prefix tree of the step's prompts ---- */

static int prompt_cmp(const learner_sample *a, const learner_sample *b) {
    int n = SEED_MIN(a->plen, b->plen);
    for (int k = 0; k < n; k++)
        if (a->prompt[k] != b->prompt[k]) return a->prompt[k] < b->prompt[k] ? -1 : 1;
    return (a->plen > b->plen) - (a->plen < b->plen);
}

/* Stable merge sort of idx[0..n) by prompt (tmp holds n). */
static void sort_by_prompt(const learner_sample *smp, int *idx, int *tmp, int n) {
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = SEED_MIN(lo + w, n), hi = SEED_MIN(lo + 2 * w, n), a = lo, c = mid, o = lo;
            while (a < mid && c < hi)
                tmp[o++] = prompt_cmp(&smp[idx[c]], &smp[idx[a]]) < 0 ? idx[c++] : idx[a++];
            while (a < mid) tmp[o++] = idx[a++];
            while (c < hi) tmp[o++] = idx[c++];
        }
        memcpy(idx, tmp, sizeof(int) * (size_t)n);
    }
}

/* The shareable part of a prompt: all but its last token, so the row that predicts the
 * first response token is always the sample's own. */
static int shareable(const learner_sample *s) {
    return s->plen - 1;
}

/* The samples keep[a..b) (sorted) share their first L tokens, L = the least lcp of
 * neighbours; their own parts start at d, under node `parent`. The range splits into its
 * children, the maximal runs whose neighbours share more than L. A node holding tokens
 * [d, L) is made when sharing it saves STEP_MIN_SAVE tokens; otherwise each child repeats
 * them. A single sample is a leaf. */
static void tree_build(learner_stepper *t, int a, int b, int d, int parent) {
    if (b - a == 1) {
        t->leaf_start[a] = d;
        t->leaf_parent[a] = parent;
        return;
    }
    int L = t->lcp[a + 1], children = 1;
    for (int k = a + 2; k < b; k++) L = SEED_MIN(L, t->lcp[k]);
    for (int k = a + 1; k < b; k++) children += t->lcp[k] <= L;
    if ((int64_t)(children - 1) * (L - d) >= STEP_MIN_SAVE) {
        int u = t->n_nodes++;
        t->node_parent[u] = parent;
        t->node_d0[u] = d;
        t->node_d1[u] = L;
        t->node_src[u] = t->keep[a];
        t->node_mb[u] = -1;
        parent = u;
        d = L;
    }
    for (int k = a; k < b;) {
        int e = k + 1;
        while (e < b && t->lcp[e] > L) e++;
        tree_build(t, k, e, d, parent);
        k = e;
    }
}

/* The step's prefix tree over keep[0..n): sort by prompt, the lcp of neighbours'
 * shareable parts, then tree_build. Without sharing every sample is a leaf of its own. */
static void plan_tree(learner_stepper *t, const learner_sample *smp, int n) {
    t->n_nodes = 0;
    if (!t->share_prefix || n == 0) {
        for (int k = 0; k < n; k++) {
            t->leaf_start[k] = 0;
            t->leaf_parent[k] = -1;
        }
        return;
    }
    sort_by_prompt(smp, t->keep, t->sort_tmp, n);
    for (int k = 1; k < n; k++) {
        const learner_sample *x = &smp[t->keep[k - 1]], *y = &smp[t->keep[k]];
        int m = SEED_MIN(shareable(x), shareable(y)), l = 0;
        while (l < m && x->prompt[l] == y->prompt[l]) l++;
        t->lcp[k] = l;
    }
    tree_build(t, 0, n, 0, -1);
}

/* Append one sequence: tok[0..n), then s's response when s is given (its token j is
 * predicted at position n - 1 + j, and its per-token inputs go to the response arrays).
 * With lm, each of tok's positions but the last also predicts the next token of tok (the
 * prompt loss; positions in t->ppos). */
static void pack_seq(learner_stepper *t, model_batch *b, int *np, const int32_t *tok, int n,
                     const learner_sample *s, int prefix, int lm) {
    int at = b->n_tokens, rl = s ? s->rlen : 0;
    memcpy(t->tokens + at, tok, sizeof(int) * (size_t)n);
    if (rl) memcpy(t->tokens + at + n, s->resp, sizeof(int) * (size_t)rl);
    for (int j = 0; j < n + rl; j++) t->targets[at + j] = -1;
    for (int j = 0; lm && j + 1 < n; j++) {
        t->targets[at + j] = tok[j + 1];
        t->ppos[t->n_ppos++] = at + j;
    }
    for (int j = 0; j < rl; j++) {
        int p = at + n - 1 + j, k = (*np)++;
        t->targets[p] = s->resp[j];
        t->pos[k] = p;
        t->c_behav[k] = s->behav ? s->behav[j] : 0.0f;
        t->c_s[k] = s->s ? s->s[j] : 0.0f;
        t->c_q[k] = s->q ? s->q[j] : 0.0f;
        t->c_adv[k] = s->adv_ep + s->adv_step;
        t->c_ref[k] = 0.0f;
    }
    t->prefix[b->n_seqs] = prefix;
    b->n_tokens += n + rl;
    t->cu[++b->n_seqs] = b->n_tokens;
}

/* Tokens sample keep[k] adds to the micro-batch being packed: its own part and those of
 * its ancestors not in the micro-batch yet (listed nearest first in t->chain, *depth of
 * them). */
static int leaf_cost(learner_stepper *t, const learner_sample *smp, int k, int *depth) {
    const learner_sample *s = &smp[t->keep[k]];
    int cost = s->plen - t->leaf_start[k] + s->rlen, n = 0;
    for (int u = t->leaf_parent[k]; u >= 0 && t->node_mb[u] != t->mb_id; u = t->node_parent[u]) {
        cost += t->node_d1[u] - t->node_d0[u];
        t->chain[n++] = u;
    }
    *depth = n;
    return cost;
}

/* Pack keep[i..kept) into one micro-batch of at most cap tokens (at least one sample);
 * *j receives the end. A sample's missing ancestors are packed before it, outermost
 * first, each continuing its parent (model_batch.prefix). Returns response positions. */
static int pack(learner_stepper *t, const learner_sample *smp, int i, int kept, int *j,
                model_batch *b) {
    int np = 0, k = i;
    *b = (model_batch){.tokens = t->tokens, .cu_seqlens = t->cu, .targets = t->targets};
    t->cu[0] = 0;
    t->n_ppos = 0;
    t->mb_id++;
    for (; k < kept; k++) {
        int depth, cost = leaf_cost(t, smp, k, &depth);
        if (k > i && b->n_tokens + cost > t->cap) break;
        for (int c = depth - 1; c >= 0; c--) {
            int u = t->chain[c], pu = t->node_parent[u];
            pack_seq(t, b, &np, smp[t->node_src[u]].prompt + t->node_d0[u],
                     t->node_d1[u] - t->node_d0[u], NULL, pu >= 0 ? t->node_seq[pu] : -1,
                     t->prompt_w > 0 && smp[t->node_src[u]].sft);
            t->node_mb[u] = t->mb_id;
            t->node_seq[u] = b->n_seqs - 1;
        }
        const learner_sample *s = &smp[t->keep[k]];
        const int u = t->leaf_parent[k];
        pack_seq(t, b, &np, s->prompt + t->leaf_start[k], s->plen - t->leaf_start[k], s,
                 u >= 0 ? t->node_seq[u] : -1, t->prompt_w > 0 && s->sft);
    }
    *j = k;
    b->prefix = t->n_nodes > 0 ? t->prefix : NULL;
    return np;
}

/* log pi_ref of the RL samples idx[0..m) into c_ref (packed order), batched. With shared
 * prefixes the reference runs the packed micro-batch b itself (forward only). */
static int score_ref(learner_stepper *t, const learner_sample *smp, const int *idx, int m,
                     const model_batch *b, int np, char *err, size_t errlen) {
    if (t->share_prefix) {
        if (model_train_forward(t->ref, b, t->ref_logp, NULL, err, errlen)) return -1;
        for (int k = 0; k < np; k++) t->c_ref[k] = t->ref_logp[t->pos[k]];
        return 0;
    }
    int nr = 0, off = 0;
    for (int k = 0; k < m; k++) {
        const learner_sample *s = &smp[idx[k]];
        if (!s->sft) {
            t->r_prompt[nr] = s->prompt;
            t->r_plen[nr] = s->plen;
            t->r_resp[nr] = s->resp;
            t->r_rlen[nr] = s->rlen;
            t->r_out[nr] = t->c_ref + off;
            nr++;
        }
        off += s->rlen;
    }
    if (nr == 0) return 0;
    return model_score(t->ref, nr, t->r_prompt, t->r_plen, t->r_resp, t->r_rlen, t->r_out, err,
                       errlen);
}

static int check_samples(const learner_sample *smp, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        if (smp[i].plen < 1 || smp[i].rlen < 1)
            return seed_errf(err, errlen,
                             "training sample %d has a %d-token prompt and a %d-token response "
                             "(both need at least one token)",
                             i, smp[i].plen, smp[i].rlen);
        if (!smp[i].sft && !smp[i].behav)
            return seed_errf(err, errlen,
                             "training sample %d is an RL sample without sampling log-probs", i);
    }
    return 0;
}

/* Leave the step without an update: no gradient reaches the weights. */
static int skip_nonfinite(learner_stepper *t, learner_step_stats *st, double loss, double gn,
                          char *err, size_t errlen) {
    model_zero_grad(t->policy);
    st->grad_norm = 0.0; /* the offending values go into the message, not the metrics */
    st->skipped_nonfinite = 1;
    st->applied = 0;
    t->nonfinite_run++;
    if (t->nonfinite_run >= LEARNER_MAX_NONFINITE_RUN)
        return seed_errf(err, errlen,
                         "%d optimizer steps in a row had a non-finite loss or gradient norm "
                         "(last: loss %g, gradient norm %g); stopping instead of training on "
                         "garbage",
                         t->nonfinite_run, loss, gn);
    return 0;
}

int learner_step_run(learner_stepper *t, const learner_sample *smp, int n, learner_step_stats *st,
                     char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    double t0 = seed_now();
    if (check_samples(smp, n, err, errlen)) return -1;
    if (n > t->ws_cap) {
        int **bufs[] = {&t->keep,        &t->sort_tmp, &t->lcp,         &t->leaf_start,
                        &t->leaf_parent, &t->chain,    &t->node_parent, &t->node_d0,
                        &t->node_d1,     &t->node_src, &t->node_mb,     &t->node_seq};
        const size_t nb = sizeof bufs / sizeof bufs[0];
        int *ws = realloc(t->ws, sizeof(int) * (size_t)n * nb);
        if (!ws) return seed_errf(err, errlen, "out of memory for %d samples", n);
        t->ws = ws;
        t->ws_cap = n;
        for (size_t b = 0; b < nb; b++) *bufs[b] = ws + b * (size_t)n;
    }
    /* A sample that does not fit one micro-batch is left out whole: cutting its prompt
     * would train a context the actor never saw. */
    int kept = 0;
    int64_t resp_total = 0;
    for (int i = 0; i < n; i++) {
        if (sample_len(&smp[i]) > t->cap) {
            st->dropped_overlong++;
            continue;
        }
        t->keep[kept++] = i;
        resp_total += smp[i].rlen;
    }
    st->samples = kept;
    plan_tree(t, smp, kept);
    /* The prompt loss's targets: every SFT prompt token after the first, except the first
     * token of a part that continues a shared node (the node's last row is shared by
     * children that go on differently, so it predicts nothing). */
    int64_t prompt_total = 0;
    for (int k = 0; t->prompt_w > 0 && k < kept; k++) {
        const learner_sample *s = &smp[t->keep[k]];
        if (s->sft) prompt_total += s->plen - t->leaf_start[k] - 1;
    }
    for (int u = 0; t->prompt_w > 0 && u < t->n_nodes; u++)
        if (smp[t->node_src[u]].sft) prompt_total += t->node_d1[u] - t->node_d0[u] - 1;
    if (resp_total == 0) {
        st->seconds = seed_now() - t0;
        return 0;
    }
    const double denom = (double)resp_total;
    const int want_ref = t->loss.kl_beta != 0.0f && t->ref != NULL;
    const int want_ent = t->loss.entropy_coef != 0.0f;
    learner_loss_out lo = {0};
    model_zero_grad(t->policy);

    for (int i = 0; i < kept;) {
        int j;
        model_batch b;
        const int np = pack(t, smp, i, kept, &j, &b);
        if (model_train_forward(t->policy, &b, t->logp, want_ent ? t->ent : NULL, err, errlen))
            return -1;
        if (want_ref && score_ref(t, smp, t->keep + i, j - i, &b, np, err, errlen)) return -1;
        for (int k = 0; k < np; k++) {
            t->c_logp[k] = t->logp[t->pos[k]];
            t->c_ent[k] = want_ent ? t->ent[t->pos[k]] : 0.0f;
        }
        memset(t->dlogp, 0, sizeof(float) * (size_t)b.n_tokens);
        memset(t->dent, 0, sizeof(float) * (size_t)b.n_tokens);
        /* SFT samples and RL samples share a micro-batch: split by sample kind. */
        int k0 = 0;
        for (int s = i; s < j; s++) {
            const learner_sample *sp = &smp[t->keep[s]];
            const int cnt = sp->rlen;
            if (sp->sft) {
                for (int k = k0; k < k0 + cnt; k++) {
                    t->c_dlogp[k] = (float)(-1.0 / denom);
                    t->c_dent[k] = 0.0f;
                    st->sft_nll -= t->c_logp[k] / denom;
                }
            } else {
                learner_loss_in in = {cnt,
                                      t->c_logp + k0,
                                      t->c_behav + k0,
                                      sp->q ? t->c_s + k0 : NULL,
                                      sp->q ? t->c_q + k0 : NULL,
                                      want_ref ? t->c_ref + k0 : NULL,
                                      want_ent ? t->c_ent + k0 : NULL,
                                      t->c_adv + k0,
                                      sp->q_lo,
                                      sp->q_hi,
                                      sp->q ? sp->q_mask : NULL,
                                      sp->q_base};
                learner_loss_tokens(&t->loss, &in, sp->agg > 0 ? sp->agg : denom, t->c_dlogp + k0,
                                    t->c_dent + k0, &lo);
            }
            k0 += cnt;
        }
        int finite = isfinite(lo.loss + st->sft_nll);
        for (int k = 0; finite && k < np; k++)
            finite = isfinite(t->c_dlogp[k]) && isfinite(t->c_dent[k]);
        if (!finite) {
            st->seconds = seed_now() - t0;
            return skip_nonfinite(t, st, lo.loss + st->sft_nll, NAN, err, errlen);
        }
        for (int k = 0; k < np; k++) {
            t->dlogp[t->pos[k]] = t->c_dlogp[k];
            t->dent[t->pos[k]] = want_ent ? t->c_dent[k] : 0.0f;
        }
        if (prompt_total > 0) {
            const float g = (float)(-(double)t->prompt_w / (double)prompt_total);
            double nll = 0.0;
            for (int k = 0; k < t->n_ppos; k++) {
                nll -= t->logp[t->ppos[k]];
                t->dlogp[t->ppos[k]] = g;
            }
            st->prompt_nll += nll / (double)prompt_total;
            if (!isfinite(st->prompt_nll)) {
                st->seconds = seed_now() - t0;
                return skip_nonfinite(t, st, st->prompt_nll, NAN, err, errlen);
            }
        }
        if (model_train_backward(t->policy, &b, t->dlogp, want_ent ? t->dent : NULL, err, errlen))
            return -1;
        for (int s = i; s < j; s++) st->tokens += sample_len(&smp[t->keep[s]]);
        st->packed_tokens += b.n_tokens;
        st->micro_batches++;
        i = j;
    }
    /* The norm before the step, so a non-finite gradient never reaches the weights. */
    float gn = model_grad_norm(t->policy);
    st->grad_norm = gn;
    if (!isfinite(gn)) {
        st->seconds = seed_now() - t0;
        return skip_nonfinite(t, st, lo.loss + st->sft_nll, gn, err, errlen);
    }
    if (model_adamw_step(t->policy, &t->opt, &gn, err, errlen)) return -1;
    t->nonfinite_run = 0;
    st->applied = 1;
    st->loss = lo.loss + st->sft_nll + t->prompt_w * st->prompt_nll;
    st->pg = lo.pg;
    st->opd = lo.opd;
    st->kl = lo.kl;
    st->entropy = lo.entropy;
    st->q_tokens = (int64_t)lo.q_tokens;
    st->mean_abs_qs = lo.q_tokens > 0 ? lo.abs_qs / lo.q_tokens : 0.0;
    st->mean_qs = lo.q_tokens > 0 ? lo.qs / lo.q_tokens : 0.0;
    st->opd_adv = lo.q_tokens > 0 ? lo.opd_adv / lo.q_tokens : 0.0;
    st->ppo_kl = lo.tokens > 0 ? lo.ppo_kl / lo.tokens : 0.0;
    st->clipfrac = lo.tokens > 0 ? lo.clipfrac / lo.tokens : 0.0;
    st->mean_adv = lo.tokens > 0 ? lo.adv / lo.tokens : 0.0;
    st->grad_norm = gn;
    st->response_tokens = resp_total;
    st->seconds = seed_now() - t0;
    return 0;
}

int learner_step_shares_prefix(const learner_stepper *t) {
    return t->share_prefix;
}
