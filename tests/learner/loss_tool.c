/* loss_tool — reads a loss problem (binary, from test_loss.py), runs learner_loss_tokens,
 * learner_group_advantages and learner_anchor_advantages, writes the results for
 * comparison with torch autograd.
 * Input: int32 n, int32 group_n, int32 adv_norm, float cfg[8]
 *        (w_opd c_opd clip_eps dual_clip kl_beta entropy_coef opd_mode opd_coef),
 *        int32 has_q, has_ref, has_ent,
 *        float logp[n] behav[n] s[n] q[n] ref[n] ent[n] adv[n],
 *        float returns[group_n], double denom,
 *        int32 anchor_n, float step_returns[anchor_n], int32 anchor_ids[anchor_n].
 * Arguments after IN OUT: Q_LO Q_HI (q - s on those tokens only; 0 0: all) and
 * optionally Q_BASE (subtracted from q - s, algorithm.opd_baseline group).
 * Output: double loss pg opd kl entropy adv_sum abs_qs opd_adv q_tokens ppo_kl clipfrac
 *         tokens qs, float dlogp[n] dent[n] group_adv[group_n] anchor_adv[anchor_n]. */
#include "learner/loss.h"

#include <stdio.h>
#include <stdlib.h>

static void rd(void *p, size_t sz, size_t n, FILE *f) {
    if (fread(p, sz, n, f) != n) {
        fprintf(stderr, "loss_tool: short input\n");
        exit(2);
    }
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "loss_tool: out of memory\n");
        exit(2);
    }
    return p;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 5 && argc != 6) {
        fprintf(stderr, "usage: loss_tool IN OUT [Q_LO Q_HI [Q_BASE]]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    int hdr[3];
    float c[8];
    int has[3];
    rd(hdr, 4, 3, f);
    rd(c, 4, 8, f);
    rd(has, 4, 3, f);
    int n = hdr[0], gn = hdr[1];
    float *a[7];
    for (int i = 0; i < 7; i++) {
        a[i] = xmalloc(sizeof(float) * (size_t)n);
        rd(a[i], 4, (size_t)n, f);
    }
    float *ret = xmalloc(sizeof(float) * (size_t)gn), *gadv = xmalloc(sizeof(float) * (size_t)gn);
    rd(ret, 4, (size_t)gn, f);
    double denom;
    rd(&denom, 8, 1, f);
    int an;
    rd(&an, 4, 1, f);
    float *aret = xmalloc(sizeof(float) * (size_t)an), *aadv = xmalloc(sizeof(float) * (size_t)an);
    int *aid = xmalloc(sizeof(int) * (size_t)an);
    double *scratch = xmalloc(sizeof(double) * 3 * (size_t)an);
    rd(aret, 4, (size_t)an, f);
    rd(aid, 4, (size_t)an, f);
    fclose(f);
    learner_loss_cfg cfg = {.w_opd = c[0],
                            .c_opd = c[1],
                            .clip_eps = c[2],
                            .dual_clip = c[3],
                            .kl_beta = c[4],
                            .entropy_coef = c[5],
                            .opd_mode = (job_opd_loss)(int)c[6],
                            .opd_loss_coef = c[7]};
    learner_loss_in in = {n,
                          a[0],
                          a[1],
                          has[0] ? a[2] : NULL,
                          has[0] ? a[3] : NULL,
                          has[1] ? a[4] : NULL,
                          has[2] ? a[5] : NULL,
                          a[6],
                          argc > 4 ? atoi(argv[3]) : 0,
                          argc > 4 ? atoi(argv[4]) : 0,
                          NULL,
                          argc > 5 ? (float)atof(argv[5]) : 0.0f};
    float *dl = xmalloc(sizeof(float) * (size_t)n), *de = xmalloc(sizeof(float) * (size_t)n);
    learner_loss_out out = {0};
    learner_loss_tokens(&cfg, &in, denom, dl, de, &out);
    learner_group_advantages(ret, gn, (job_adv_norm)hdr[2], gadv);
    learner_anchor_advantages(aret, aid, an, (job_adv_norm)hdr[2], aadv, scratch);
    FILE *o = fopen(argv[2], "wb");
    if (!o) return 2;
    double terms[13] = {out.loss,     out.pg,     out.opd,     out.kl,       out.entropy,
                        out.adv,      out.abs_qs, out.opd_adv, out.q_tokens, out.ppo_kl,
                        out.clipfrac, out.tokens, out.qs};
    fwrite(terms, 8, 13, o);
    fwrite(dl, 4, (size_t)n, o);
    fwrite(de, 4, (size_t)n, o);
    fwrite(gadv, 4, (size_t)gn, o);
    fwrite(aadv, 4, (size_t)an, o);
    fclose(o);
    for (int i = 0; i < 7; i++) free(a[i]);
    free(ret);
    free(gadv);
    free(aret);
    free(aadv);
    free(aid);
    free(scratch);
    free(dl);
    free(de);
    return 0;
}
