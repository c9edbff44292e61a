"""The learner's objective against torch autograd on verl's formulas.

A torch reference implements the loss exactly as ARCHITECTURE section 1 states it
(verl's PPO dual clip on the ratio to the SAMPLING policy, k3 KL clamped to [-10, 10],
the SEED shift w_opd * clip(q - s) in the advantage, explicit OPD in both modes with the
importance mode's exp(logp - behav)); autograd gives d(loss)/d(logp) and
d(loss)/d(entropy). GiGPO's anchor-group step advantages are checked against a numpy
transcription of verl-agent's step_norm_reward. seed's loss_tool computes the same in C.
Tolerance: 1e-5 relative on loss terms and 1e-6 absolute on gradients — fp32 vs fp64
reference arithmetic on O(1) values divided by the token count.
"""
import os, struct, subprocess, sys, tempfile
from collections import defaultdict
import numpy as np
import torch

TOOL = sys.argv[1]
torch.set_default_dtype(torch.float64)


def reference(cfg, logp, behav, s, q, ref, ent, adv_ep, denom, span=None, base=0.0):
    w_opd, c_opd, eps, dual, beta, ent_coef, opd_mode, opd_coef = cfg
    logp = torch.tensor(logp, requires_grad=True)
    ent_t = torch.tensor(ent, requires_grad=True) if ent is not None else None
    behav = torch.tensor(behav)
    a = torch.tensor(adv_ep)
    # algorithm.opd_baseline group: the shift is q - s less the group's mean (base)
    scored = torch.zeros_like(behav) if q is None else torch.tensor(q) - torch.tensor(s)
    delta = scored - (0.0 if q is None else base)
    mask = torch.ones_like(behav)
    if span is not None:  # algorithm.opd_tokens action: q - s on the action's tokens only
        mask = torch.zeros_like(behav)
        mask[span[0]:span[1]] = 1
    delta, scored = delta * mask, scored * mask
    shift = w_opd * delta.clamp(-c_opd, c_opd)
    A = a + shift
    ratio = torch.exp((logp - behav).clamp(-20, 20))
    l1 = -A * ratio
    l2 = -A * ratio.clamp(1 - eps, 1 + eps)
    pg = torch.maximum(l1, l2)
    clipped = ((l2 > l1) & ((ratio < 1 - eps) | (ratio > 1 + eps))).sum().item()
    if dual > 1:
        pg = torch.where(A < 0, torch.minimum(pg, -A * dual), pg)
    loss = pg.clone()
    if ref is not None and beta != 0:
        d = (torch.tensor(ref) - logp).clamp(-20, 20)
        kl = (torch.exp(d) - d - 1).clamp(-10, 10)
        loss = loss + beta * kl
    opd = torch.zeros(())
    if opd_mode != 0 and opd_coef != 0 and q is not None:
        term = -delta * logp if opd_mode == 1 else -delta * ratio
        opd = term.sum() / denom
        loss = loss + opd_coef * term
    if ent_t is not None and ent_coef != 0:
        loss = loss - ent_coef * ent_t
    total = loss.sum() / denom
    total.backward()
    nq = 0 if q is None else int(mask.sum().item())
    stats = {
        "adv_sum": A.sum().item(),
        "abs_qs": scored.abs().sum().item(),  # the statistics are of q - s as scored
        "qs": scored.sum().item(),
        "opd_adv": shift.abs().sum().item() if q is not None else 0.0,
        "q_tokens": nq,
        "ppo_kl": (behav - logp.detach()).sum().item(),
        "clipfrac": clipped,
        "opd": opd.item(),
    }
    return (total.item(), pg.sum().item() / denom, logp.grad.numpy(),
            None if ent_t is None else ent_t.grad.numpy(), stats)


def group_adv(r, norm):
    r = torch.tensor(r)
    a = r - r.mean()
    if norm == 0:
        # torch's unbiased std of one value is NaN; seed treats it as 0 (advantage 0).
        std = r.std(unbiased=True) if len(r) > 1 else torch.tensor(0.0)
        a = a / (std + 1e-6)
    return a.numpy()


def step_norm_reward(step_returns, anchor, norm):
    """verl-agent gigpo/core_gigpo.py step_norm_reward: per anchor group mean (and
    torch.std, unbiased); a group of one has mean = its value, std 1, so 0."""
    groups = defaultdict(list)
    for i, k in enumerate(anchor):
        groups[k].append(step_returns[i])
    out = np.zeros(len(step_returns))
    for i, k in enumerate(anchor):
        g = torch.tensor(groups[k])
        mean = g.mean()
        std = g.std() if len(g) > 1 else torch.tensor(1.0)
        x = step_returns[i] - mean
        out[i] = (x if norm == 1 else x / (std + 1e-6)).item()
    return out


def run_case(rng, cfg, n, has_q, has_ref, has_ent, norm, gn, an=64, span=None, base=None):
    logp = rng.uniform(-6, -0.01, n).astype(np.float32)
    behav = (logp + rng.normal(0, 0.4, n)).astype(np.float32)  # ratios on both sides of the clip
    s = (behav + rng.normal(0, 0.7, n)).astype(np.float32)     # the analyzer's score: NOT behav
    q = (s + rng.normal(0, 1.5, n)).astype(np.float32)         # |q - s| sometimes past c_opd
    ref = (logp + rng.normal(0, 0.5, n)).astype(np.float32)
    ent = rng.uniform(0, 3, n).astype(np.float32)
    adv = rng.normal(0, 1, n).astype(np.float32)
    rets = rng.choice([0.0, 10.0, -1.5, 8.7], gn).astype(np.float32)
    denom = float(n + 17)
    aret = rng.normal(0, 3, an).astype(np.float32)
    aid = rng.integers(0, max(1, an // 3), an).astype(np.int32)  # repeated anchors + singletons
    with tempfile.TemporaryDirectory() as d:
        fin, fout = os.path.join(d, "in"), os.path.join(d, "out")
        with open(fin, "wb") as f:
            f.write(struct.pack("3i", n, gn, norm))
            f.write(struct.pack("8f", *cfg))
            f.write(struct.pack("3i", has_q, has_ref, has_ent))
            for arr in (logp, behav, s, q, ref, ent, adv):
                f.write(arr.tobytes())
            f.write(rets.tobytes())
            f.write(struct.pack("d", denom))
            f.write(struct.pack("i", an))
            f.write(aret.tobytes())
            f.write(aid.tobytes())
        args = [str(x) for x in span] if span else []
        if base is not None:
            args = (args or ["0", "0"]) + [repr(float(np.float32(base)))]
        subprocess.run([TOOL, fin, fout] + args, check=True)
        raw = open(fout, "rb").read()
    terms = struct.unpack("13d", raw[:104])
    o = 104
    dl = np.frombuffer(raw[o:o + 4 * n], np.float32)
    de = np.frombuffer(raw[o + 4 * n:o + 8 * n], np.float32)
    gadv = np.frombuffer(raw[o + 8 * n:o + 8 * n + 4 * gn], np.float32)
    aadv = np.frombuffer(raw[o + 8 * n + 4 * gn:], np.float32)
    c = [float(np.float32(x)) for x in cfg]
    f64 = lambda x: x.astype(np.float64)
    tot, pg, g_ref, ge_ref, st = reference(c, f64(logp), f64(behav), f64(s),
                                           f64(q) if has_q else None,
                                           f64(ref) if has_ref else None,
                                           f64(ent) if has_ent else None, f64(adv), denom,
                                           span, float(np.float32(base or 0.0)))
    close = lambda a, b, tol=1e-5: abs(a - b) <= tol * max(1.0, abs(b))
    assert close(terms[0], tot), (cfg, "loss", terms[0], tot)
    assert close(terms[1], pg), (cfg, "pg", terms[1], pg)
    assert close(terms[2], st["opd"]), (cfg, "opd", terms[2], st["opd"])
    assert close(terms[5], st["adv_sum"], 1e-4), (cfg, "token advantage sum", terms[5], st["adv_sum"])
    assert close(terms[6], st["abs_qs"], 1e-4), (cfg, "|q-s|", terms[6], st["abs_qs"])
    assert close(terms[7], st["opd_adv"], 1e-4), (cfg, "opd_adv", terms[7], st["opd_adv"])
    assert terms[8] == st["q_tokens"], (cfg, "q tokens", terms[8], st["q_tokens"])
    assert close(terms[9], st["ppo_kl"], 1e-4), (cfg, "ppo_kl", terms[9], st["ppo_kl"])
    assert abs(terms[10] - st["clipfrac"]) <= 2, (cfg, "clipped tokens", terms[10], st["clipfrac"])
    assert terms[11] == n
    assert close(terms[12], st["qs"], 1e-4), (cfg, "q-s", terms[12], st["qs"])
    err = np.max(np.abs(dl - g_ref))
    assert err <= 1e-6, (cfg, "dlogp", err)
    if has_ent and cfg[5] != 0:
        assert np.max(np.abs(de - ge_ref)) <= 1e-7, (cfg, "dentropy")
    ga = group_adv(f64(rets), norm)
    assert np.max(np.abs(gadv - ga)) <= 1e-4 * max(1.0, np.max(np.abs(ga))), ("group adv", gadv, ga)
    sa = step_norm_reward(f64(aret), aid.tolist(), norm)
    assert np.max(np.abs(aadv - sa)) <= 1e-4 * max(1.0, np.max(np.abs(sa))), ("anchor adv", aadv, sa)


def main():
    rng = np.random.default_rng(7)
    cases = [
        # name: w_opd c_opd eps dual beta ent opd_mode opd_coef, has q, ref, ent
        ("grpo / skill_prompt", (0.0, 2.0, 0.2, 3.0, 0.0, 0.0, 0, 0.0), 0, 0, 0),
        ("grpo + k3 KL", (0.0, 2.0, 0.2, 3.0, 0.01, 0.0, 0, 0.0), 0, 1, 0),
        ("seed / static_skills: OPD fused in A + KL", (1.0, 2.0, 0.2, 3.0, 0.01, 0.0, 0, 0.0), 1, 1, 0),
        ("seed + entropy + explicit OPD delta", (0.5, 1.0, 0.2, 3.0, 0.01, 0.001, 1, 0.3), 1, 1, 1),
        ("explicit OPD importance, no dual clip", (1.0, 0.5, 0.1, 0.0, 0.1, 0.01, 2, 1.0), 1, 1, 1),
        ("importance OPD only (w_opd 0)", (0.0, 2.0, 0.2, 3.0, 0.0, 0.0, 2, 1.0), 1, 0, 0),
    ]
    for name, cfg, hq, hr, he in cases:
        for norm in (0, 1):
            run_case(rng, cfg, 4096, hq, hr, he, norm, 8)
        print("ok:", name)
    run_case(rng, cases[2][1], 1, 1, 1, 0, 0, 1, an=1)  # single token, group of one
    # algorithm.opd_tokens action: q - s only on the action text's tokens [q_lo, q_hi)
    for name, cfg, hq, hr, he in cases[2:5]:
        run_case(rng, cfg, 4096, hq, hr, he, 0, 8, span=(1000, 1012))
    print("ok: q - s on an action span only")
    # algorithm.opd_baseline group: q - s less the group's mean shift, in the advantage and
    # the explicit term, on every token or on the span
    for name, cfg, hq, hr, he in cases[2:6]:
        run_case(rng, cfg, 4096, hq, hr, he, 0, 8, base=-0.83)
        run_case(rng, cfg, 4096, hq, hr, he, 0, 8, span=(100, 140), base=0.41)
    print("ok: q - s measured from a baseline")
    print("loss: all cases match torch autograd")


main()
