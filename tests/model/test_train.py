"""Training: gradients and AdamW against torch.

(1) A packed batch of sequences of different lengths (positions restart per sequence,
no attention across boundaries), targets = next token with the last of each sequence
and random positions masked (-1), loss = sum_t w_t logp_t + e_t entropy_t with random
per-token weights: seed's logp, entropy and the gradient of EVERY parameter tensor
equal torch autograd's through transformers' model run on each sequence alone. Once
with the entropy term and once without (the head skips rows whose gradient is 0). The
large-vocabulary model recomputes the head's logits in the backward (too large to
keep), the others keep them from the forward: both paths are checked. Also at
temperature T = 0.7 (model_set_temperature; issue 7 item 8): logp and entropy are those of
softmax(logits / T) and the gradients flow through the division, as verl trains at the
rollout temperature; the torch reference divides the logits by T.
Tolerance: per tensor max |diff| <= 2e-4 x max |grad| (+1e-7): fp32 gradients
accumulated in different orders over ~100 tokens (GEMM blocking, a per-block
attention backward) differ by ~1e-6 relative; a wrong term would be off by O(1).

(2) 10 steps of forward/backward/AdamW on that batch track torch.optim.AdamW (same
lr, betas, eps, weight decay on the 2-D weights only, biases/norms undecayed, and
clip_grad_norm_ to 1.0, which is active): losses within 1e-4 and pre-clip grad norms
within 2e-3 of their scale; final parameters: at most 0.1% of elements off by more
than 1e-4 of scale. Adam divides by sqrt(v), so an element whose true gradient is
~0 moves by +-lr on the sign of fp32 noise; those few elements drift apart by up to
2 lr steps while the loss curve still agrees to 1e-5 relative. A wrong bias
correction, decay group or clipping rule moves the loss by percent.

(3) The optimizer alone, fed identical gradients (scaled and sign-flipped per step,
with clipping active from step 2), equals torch.optim.AdamW to 1e-6 of the
parameter scale, and its second moments too.

(4) Shared prompt prefixes (model_batch.prefix, a prefix tree up to three deep): logp,
entropy and every gradient equal torch on each sequence run after its whole chain of
prefixes, to the bounds of (1)."""
import json
import os
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfref

TOOL = sys.argv[1]
ok = True
rng = np.random.default_rng(9)


def make_batch(V, lens, use_ent):
    toks, tgts, cu = [], [], [0]
    for n in lens:
        s = rng.integers(0, V, size=n).tolist()
        t = s[1:] + [-1]
        for j in range(n):
            if rng.random() < 0.2:
                t[j] = -1
        toks += s
        tgts += t
        cu.append(cu[-1] + n)
    N = len(toks)
    w = rng.normal(size=N).astype(np.float32)
    e = (rng.normal(size=N) * 0.5).astype(np.float32) if use_ent else np.zeros(N, np.float32)
    return dict(tokens=toks, targets=tgts, cu=cu, w=w, e=e, use_ent=use_ent)


def make_prefix_batch(V, lens, prefix, use_ent):
    """make_batch's batch with shared prefixes: sequence k continues sequence prefix[k]."""
    b = make_batch(V, lens, use_ent)
    b["prefix"] = prefix
    return b


def write_batch(path, b):
    flags = int(b["use_ent"]) | (2 if "prefix" in b else 0)
    hdr = np.array([len(b["tokens"]), len(b["cu"]) - 1, flags] + b["cu"] + b.get("prefix", [])
                   + b["tokens"] + b["targets"], dtype="<i4")
    with open(path, "wb") as f:
        f.write(hdr.tobytes() + b["w"].astype("<f4").tobytes() + b["e"].astype("<f4").tobytes())


def torch_loss(model, b, T=1.0):
    """loss, logp, entropy over the packed batch, each sequence run alone, at
    temperature T (verl: logits / T before log_softmax and entropy)."""
    loss, lps, ents = 0.0, [], []
    for k in range(len(b["cu"]) - 1):
        a, z = b["cu"][k], b["cu"][k + 1]
        pre, p = [], b["prefix"][k] if "prefix" in b else -1
        while p >= 0:  # the chain of prefixes, nearest last
            pre = b["tokens"][b["cu"][p]:b["cu"][p + 1]] + pre
            p = b["prefix"][p]
        # a sequence with a prefix runs as prefix + itself; its own rows are the last z - a
        logits = model(torch.tensor([pre + b["tokens"][a:z]])).logits[0, len(pre):].float() / T
        ls = torch.log_softmax(logits, -1)
        tg = torch.tensor(b["targets"][a:z])
        lp = torch.where(tg >= 0, ls.gather(1, tg.clamp(min=0)[:, None])[:, 0], torch.zeros(()))
        ent = -(ls.exp() * ls).sum(-1)
        loss = loss + (torch.tensor(b["w"][a:z]) * lp).sum()
        if b["use_ent"]:
            loss = loss + (torch.tensor(b["e"][a:z]) * ent).sum()
        lps.append(lp)
        ents.append(ent)
    return loss, torch.cat(lps), torch.cat(ents)


def hf_name_grads(model):
    out = {}
    for n, p in model.named_parameters():
        out[n] = p.grad.detach().numpy()
    return out


with hfref.tmpdir() as d:
    for name in ("gqa", "tied", "bigvocab"):
        path = os.path.join(d, name)
        hfref.make_model(path, name, seed=31)
        V = hfref.CONFIGS[name]["vocab_size"]
        limit = "train=1100" if name == "bigvocab" else "train=0"
        cases = [(True, 1.0), (True, 0.7)] if name == "bigvocab" else \
            [(True, 1.0), (False, 1.0), (True, 0.7)]
        # (4) shared prefixes (model_batch.prefix, a prefix tree): sequences 1, 2, 3 and 8
        # continue 0, 7 continues 6, 4 continues 1 (so 0 then 1), 9 continues 4 (0, 1, 4);
        # each must equal torch on its whole context + itself
        cases.append((True, 1.0, "prefix"))
        for use_ent, T, *shape in cases:
            if shape:
                b = make_prefix_batch(V, [20, 13, 1, 7, 6, 9, 5, 30, 4, 3],
                                      [-1, 0, 0, 0, 1, -1, -1, 6, 0, 4], use_ent)
            else:
                b = make_batch(V, [13, 40, 1, 7, 25], use_ent)
            write_batch(os.path.join(d, "batch"), b)
            out = os.path.join(d, "out")
            os.makedirs(out, exist_ok=True)
            hfref.run(TOOL, "train", path, os.path.join(d, "batch"), out, "maxlen=64", limit,
                      f"temp={T}")
            model = hfref.load_model(path)
            model.zero_grad()
            loss, lp, ent = torch_loss(model, b, T)
            loss.backward()
            tag = f"{name} {'with' if use_ent else 'without'} entropy, T={T}" + \
                (", shared prefixes" if shape else "")
            ok &= hfref.report(f"{tag}: logp", hfref.read_f32(os.path.join(out, "logp.f32")),
                               lp.detach().numpy(), 1e-4)
            if use_ent:
                ok &= hfref.report(f"{tag}: entropy",
                                   hfref.read_f32(os.path.join(out, "entropy.f32")),
                                   ent.detach().numpy(), 1e-4)
            got = load_file(os.path.join(out, "grads.safetensors"))
            want = hf_name_grads(model)
            if set(got) != set(want):
                print(f"FAIL {tag}: grad names differ: {set(got) ^ set(want)}")
                ok = False
            worst, worst_name = 0.0, ""
            for n, g in want.items():
                err = np.abs(got[n] - g).max() / (np.abs(g).max() + 1e-7)
                if err > worst:
                    worst, worst_name = err, n
            good = worst <= 2e-4
            print(f"{'ok  ' if good else 'FAIL'} {tag}: all {len(want)} grad tensors, worst "
                  f"relative diff {worst:.3g} ({worst_name}), bound 2e-4")
            ok &= good

        if name == "bigvocab":
            continue
        # (2) AdamW steps
        steps, lr, b1, b2, eps, wd, clip = 10, 1e-2, 0.9, 0.95, 1e-8, 0.1, 1.0
        b = make_batch(V, [13, 40, 7, 25], True)
        write_batch(os.path.join(d, "batch"), b)
        hfref.run(TOOL, "adamw", path, os.path.join(d, "batch"), steps, out, lr, b1, b2, eps, wd,
                  clip, "maxlen=64")
        res = hfref.read_f32(os.path.join(out, "losses.f32")).reshape(steps, 2)
        model = hfref.load_model(path)
        params = [p for p in model.parameters()]
        groups = [{"params": [p for p in params if p.ndim == 2], "weight_decay": wd},
                  {"params": [p for p in params if p.ndim != 2], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=lr, betas=(b1, b2), eps=eps)
        ref = []
        for s in range(steps):
            opt.zero_grad()
            loss, _, _ = torch_loss(model, b)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            ref.append((loss.item(), gn.item()))
        ref = np.array(ref)
        print("   step  seed loss   torch loss   seed |g|   torch |g|")
        for s in range(steps):
            print(f"   {s:4d} {res[s, 0]:11.5f} {ref[s, 0]:11.5f} {res[s, 1]:10.4f} {ref[s, 1]:10.4f}")
        ok &= hfref.report(f"{name}: 10 AdamW steps, losses", res[:, 0], ref[:, 0], 1e-4)
        ok &= hfref.report(f"{name}: 10 AdamW steps, pre-clip grad norms", res[:, 1], ref[:, 1],
                           2e-3)
        final = load_file(os.path.join(out, "params.safetensors"))
        diffs = np.concatenate([(np.abs(final[n] - p.detach().numpy()) /
                                 max(1.0, np.abs(p.detach().numpy()).max())).ravel()
                                for n, p in model.named_parameters()])
        frac = float((diffs > 1e-4).mean())
        good = frac <= 1e-3 and diffs.max() <= 2 * lr * steps
        print(f"{'ok  ' if good else 'FAIL'} {name}: final parameters after 10 steps: "
              f"{frac:.2%} of elements differ by > 1e-4 of scale (bound 0.1%), max "
              f"{diffs.max():.3g} (bound 2 lr steps = {2 * lr * steps:.3g})")
        ok &= good

        # (3) the optimizer alone on identical gradients: exact agreement expected
        # (1e-6 of scale: the same fp32 formula, pow and sqrt rounding only).
        gpath = os.path.join(d, "grads.safetensors")
        model = hfref.load_model(path)
        model.zero_grad()
        torch_loss(model, b)[0].backward()
        g0 = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        from safetensors.torch import save_file
        save_file({n: g.contiguous() for n, g in g0.items()}, gpath)
        clip = 300.0  # active at steps 2..: |g| grows with the step factor
        hfref.run(TOOL, "adamwg", path, gpath, steps, out, lr, b1, b2, eps, wd, clip, "maxlen=64")
        model = hfref.load_model(path)
        named = dict(model.named_parameters())
        groups = [{"params": [p for p in named.values() if p.ndim == 2], "weight_decay": wd},
                  {"params": [p for p in named.values() if p.ndim != 2], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=lr, betas=(b1, b2), eps=eps)
        norms = []
        for s in range(steps):
            k = (s + 1) * (-1 if s % 2 else 1)
            for n, p in named.items():
                p.grad = g0[n] * k
            norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), clip).item())
            opt.step()
        ok &= hfref.report(f"{name}: AdamW on given grads, pre-clip norms",
                           hfref.read_f32(os.path.join(out, "norms.f32")), np.array(norms), 1e-6)
        final = load_file(os.path.join(out, "params.safetensors"))
        v = load_file(os.path.join(out, "exp_avg_sq.safetensors"))
        worst = max(np.abs(final[n] - p.detach().numpy()).max() /
                    max(1.0, np.abs(p.detach().numpy()).max()) for n, p in named.items())
        worst_v = max(np.abs(v[n] - opt.state[p]["exp_avg_sq"].numpy()).max() /
                      max(1e-30, np.abs(opt.state[p]["exp_avg_sq"].numpy()).max())
                      for n, p in named.items())
        good = worst <= 1e-6 and worst_v <= 1e-5
        print(f"{'ok  ' if good else 'FAIL'} {name}: AdamW on given grads, {steps} steps: params "
              f"worst diff {worst:.3g} of scale (bound 1e-6), exp_avg_sq {worst_v:.3g} (1e-5)")
        ok &= good
sys.exit(0 if ok else 1)
