"""The learner's training signal through its real code: scored groups written with
Google's protobuf runtime, decoded by seed's wire layer, turned into samples by
learner/samples.c and trained by learner/step.c on a tiny random model (learner_tool).

Checks (each fails on the code before issue 7):
  - off-policy ratio: a group sampled at version v and scored at v+1 (s != the sampling
    log-probs) trains on pi_learner / pi_v: the PPO ratio's old log-prob is the actor's
    sampling log-prob, and the policy-gradient term equals a torch reference built on it;
    the group is counted as scored_off_version and its q - s is still used;
  - GiGPO: step advantages over anchor groups (identical observations) match a numpy
    transcription of verl-agent's step_norm_reward on discounted returns;
  - episodes with an error are left out of the group statistics and of training, counted
    by reason (text up to ':' or 48 characters);
  - a group of more than 1024 episodes is trained whole;
  - a sample longer than micro_batch_tokens is dropped and counted, never cut (this
    binary runs under ASan in the Sanitize build: the old packing overflowed);
  - splitting a step into micro-batches gives the same gradient as one batch, and so
    does packing the prompts' shared prefix once (optim.share_prefix);
  - the reference model holds no gradient or optimizer buffers and scores log pi_ref;
  - a non-finite loss skips the step without touching the weights; the third in a row
    is an error;
  - learner_step_reset_moments zeroes AdamW's moments and step count;
  - the job check refuses micro_batch_tokens < max_prompt_tokens + max_new_tokens;
  - a group whose finished episodes all won (all lost) counts in groups_all_won
    (groups_all_lost); an episode with an error does not decide it.
Usage: test_train.py LEARNER_TOOL PROJECT_ROOT [JOB_TOOL]
"""
import json, math, os, subprocess, sys, tempfile
from collections import defaultdict

import numpy as np
import torch

TOOL, ROOT = sys.argv[1], sys.argv[2]
JOB_TOOL = sys.argv[3] if len(sys.argv) > 3 else None
sys.path.insert(0, os.path.join(ROOT, "deploy", "envserver"))
import seedwire  # noqa: E402

pb2 = seedwire.load_pb2()
VOCAB = 128
TMP = tempfile.mkdtemp(prefix="learner_train_")
MODEL = os.path.join(TMP, "model")
os.makedirs(MODEL)
with open(os.path.join(MODEL, "config.json"), "w") as f:
    json.dump({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": VOCAB,
               "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2,
               "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
               "tie_word_embeddings": True, "hidden_act": "silu", "eos_token_id": 2,
               "torch_dtype": "float32"}, f)


def make_group(rng, n_ep, n_steps, *, policy_version=3, scored_version=3, obs_pool=3,
               plen=(6, 14), rlen=(3, 8), with_q=True, errors=None, heads=((),)):
    """A scored group; observations drawn from a small pool so anchors repeat. Every
    prompt starts with one of `heads`, in turn (an agent prompt's fixed instruction)."""
    g = pb2.EpisodeGroup(env="sokoban", task_seed=7, split="train",
                         policy_version=policy_version, actor_id="a0", group_id=1)
    sg = pb2.ScoredGroup(scored_version=scored_version, analyzer_id="z0")
    for e in range(n_ep):
        ep = g.episodes.add()
        an = sg.analyses.add()
        ns = n_steps if isinstance(n_steps, int) else int(rng.integers(*n_steps))
        total = 0.0
        for t in range(ns):
            st = ep.steps.add()
            p, r = int(rng.integers(*plen)), int(rng.integers(*rlen))
            head = list(heads[(e + t) % len(heads)])
            st.prompt_ids.extend(head + rng.integers(3, VOCAB, p).tolist())
            st.response_ids.extend(rng.integers(3, VOCAB, r).tolist())
            lp = rng.uniform(-6, -0.5, r)
            st.sample_logprobs.extend(lp.tolist())
            st.skill_slot_episode = 1
            st.skill_slot_step = len(head) + p - 1
            st.reward = float(rng.choice([-0.1, 0.0, 1.0, 10.0]))
            st.observation = "room %d" % int(rng.integers(0, obs_pool))
            st.valid = True
            total += st.reward
            sc = an.steps.add()
            sc.s.extend((lp + rng.normal(0.5, 0.3, r)).tolist())  # another weights version
            if with_q:
                sc.q.extend((lp + rng.normal(0, 1.5, r)).tolist())
        ep.episode_return = total
        if errors and e in errors:
            ep.error = errors[e]
    sg.group.CopyFrom(g)
    return sg


def write_env(sg, name):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(seedwire.envelope(pb2, "test", scored_group=sg).SerializeToString())
    return path


def tool(*args):
    r = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("learner_tool %s failed:\n%s" % (" ".join(map(str, args)), r.stderr))
    return r


def samples(sg, name, *opts):
    out = os.path.join(TMP, name + ".json")
    tool("samples", write_env(sg, name), out, *opts)
    return json.load(open(out))


def step(sg, name, *opts):
    out = os.path.join(TMP, name + ".json")
    tool("step", MODEL, write_env(sg, name), out, *opts)
    return json.load(open(out))


def group_adv(r, norm):
    r = torch.tensor(r, dtype=torch.float64)
    a = r - r.mean()
    if norm == 0:
        std = r.std() if len(r) > 1 else torch.tensor(0.0, dtype=torch.float64)
        a = a / (std + 1e-6)
    return a.numpy()


def gigpo_reference(sg, gamma, norm):
    """verl-agent: compute_step_discounted_returns + build_step_group (exact match of the
    observation within the group) + step_norm_reward; returns {(episode, step): adv}."""
    rets, keys, obs = [], [], []
    for e, ep in enumerate(sg.group.episodes):
        if ep.error:
            continue
        running, rr = 0.0, []
        for st in reversed(ep.steps):
            running = st.reward + gamma * running
            rr.append(running)
        rr.reverse()
        for t, st in enumerate(ep.steps):
            rets.append(rr[t]), keys.append((e, t)), obs.append(st.observation)
    groups = defaultdict(list)
    for i, o in enumerate(obs):
        groups[o].append(rets[i])
    out = {}
    for i, o in enumerate(obs):
        g = torch.tensor(groups[o], dtype=torch.float64)
        mean = g.mean()
        std = g.std() if len(g) > 1 else torch.tensor(1.0, dtype=torch.float64)
        x = rets[i] - mean
        out[keys[i]] = (x if norm == 1 else x / (std + 1e-6)).item()
    return out


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(b))


def pg_reference(sg, smp, logps, w, c, eps, dual):
    """torch reference of the pg term on ratio = pi_learner / pi_v (the sampling policy):
    per sample its token sum, token count and episode; and the ppo_kl sums on behav / s."""
    rows, kl_b, kl_s = [], 0.0, 0.0
    for x, lp in zip(smp, logps):
        e, t = x["episode"], x["step"]
        stp = sg.group.episodes[e].steps[t]
        sc = sg.analyses[e].steps[t]
        logp = torch.tensor(lp, dtype=torch.float64)
        behav = torch.tensor(list(stp.sample_logprobs), dtype=torch.float64)
        s, q = (torch.tensor(list(v), dtype=torch.float64) for v in (sc.s, sc.q))
        assert torch.max(torch.abs(s - behav)) > 0.1  # the analyzer's s is another version's
        A = x["adv_ep"] + w * (q - s).clamp(-c, c)
        ratio = torch.exp((logp - behav).clamp(-20, 20))
        p = torch.maximum(-A * ratio, -A * ratio.clamp(1 - eps, 1 + eps))
        p = torch.where(A < 0, torch.minimum(p, -A * dual), p)
        rows.append((e, p.sum().item(), len(lp)))
        kl_b += (behav - logp).sum().item()
        kl_s += (s - logp).sum().item()
    return rows, kl_b, kl_s


def test_off_policy_ratio(rng):
    sg = make_group(rng, 4, 2, policy_version=5, scored_version=6, with_q=True)
    r = step(sg, "offpolicy", "w_opd=0.5", "c_opd=2", "clip=0.2", "dual=3", "micro=256",
             "agg=1")
    assert r["stats"]["scored_off_version"] == 1, r["stats"]
    smp = r["samples"]
    assert all(x["behav_is_sample_logprobs"] and x["has_q"] for x in smp), smp
    rows, kl_b, kl_s = pg_reference(sg, smp, r["logp"], 0.5, 2.0, 0.2, 3.0)
    pg, n = sum(p for _, p, _ in rows), sum(k for _, _, k in rows)
    st = r["steps"][0]
    assert st["applied"] and st["response_tokens"] == n, st
    # Tolerance 1e-4: log-probs from model_score vs the training forward (fp32, different
    # reduction order) differ in the last bits.
    assert close(st["pg"], pg / n, 1e-4), ("pg on pi/pi_v", st["pg"], pg / n)
    assert close(st["ppo_kl"], kl_b / n, 1e-4), ("ratio's old log-prob", st["ppo_kl"], kl_b / n)
    assert not close(st["ppo_kl"], kl_s / n, 1e-2), "the ratio used the analyzer's s"
    print("ok: off-policy group uses the sampling log-probs (ppo_kl %.4f, with s it would be "
          "%.4f)" % (st["ppo_kl"], kl_s / n))


def test_episode_mean(rng):
    """algorithm.loss_agg episode-mean (the default): the step's loss is the mean over
    episodes of each episode's token mean, so an episode of 9 steps weighs what one of 2
    does; token-mean weighs every response token alike (long, lost episodes dominate)."""
    sg = make_group(rng, 6, (1, 9), policy_version=5, scored_version=5, with_q=True)
    r = step(sg, "epmean", "w_opd=0.5", "c_opd=2", "clip=0.2", "dual=3", "micro=256", "agg=0")
    smp = r["samples"]
    rows, _, _ = pg_reference(sg, smp, r["logp"], 0.5, 2.0, 0.2, 3.0)
    per_ep = defaultdict(lambda: [0.0, 0])
    for e, p, k in rows:
        per_ep[e][0] += p
        per_ep[e][1] += k
    want = sum(p / k for p, k in per_ep.values()) / len(per_ep)
    tok = sum(p for _, p, _ in rows) / sum(k for _, _, k in rows)
    for x in smp:  # every sample is divided by episodes x its episode's tokens
        assert x["agg"] == len(per_ep) * per_ep[x["episode"]][1], (x["agg"], per_ep)
    st = r["steps"][0]
    assert close(st["pg"], want, 1e-4), ("episode-mean pg", st["pg"], want)
    assert not close(want, tok, 1e-2), ("the group does not tell the two apart", want, tok)
    r1 = step(sg, "epmean_tok", "w_opd=0.5", "c_opd=2", "clip=0.2", "dual=3", "micro=256",
              "agg=1")
    assert all(x["agg"] == 0 for x in r1["samples"])
    assert close(r1["steps"][0]["pg"], tok, 1e-4), ("token-mean pg", r1["steps"][0]["pg"], tok)
    print("ok: episode-mean pg %.4f (token-mean %.4f) over %d episodes of %s tokens" % (
        st["pg"], tok, len(per_ep), sorted(k for _, k in per_ep.values())))


def test_gigpo_and_errors(rng):
    long_reason = "x" * 60
    errors = {1: "env error: remote timeout after 3000 ms", 3: "env error: connection reset",
              4: long_reason}
    for norm in (0, 1):
        for trial in range(3):
            sg = make_group(rng, 7, (2, 6), obs_pool=4, errors=errors)
            coef, gamma = 0.7, 0.9
            r = samples(sg, "gigpo", "gigpo=%g" % coef, "gamma=%g" % gamma, "adv_norm=%d" % norm)
            ref = gigpo_reference(sg, gamma, norm)
            valid = [e for e, ep in enumerate(sg.group.episodes) if not ep.error]
            ga = dict(zip(valid, group_adv([sg.group.episodes[e].episode_return for e in valid],
                                           norm)))
            assert {x["episode"] for x in r["samples"]} == set(valid), "error episodes trained"
            assert len(r["samples"]) == len(ref)
            for x in r["samples"]:
                key = (x["episode"], x["step"])
                assert close(x["adv_step"], coef * ref[key], 1e-4), (key, x["adv_step"], ref[key])
                assert close(x["adv_ep"], ga[x["episode"]], 1e-4), (key, x["adv_ep"])
            assert any(abs(v) > 1e-3 for v in ref.values())  # anchors really repeat
            assert r["stats"]["episodes_error"] == 3, r["stats"]
            assert r["errors"] == {"env error": 2, "x" * 48: 1}, r["errors"]
    # gigpo off: no step advantage
    r = samples(sg, "gigpo_off")
    assert all(x["adv_step"] == 0 for x in r["samples"])
    # mode without distillation: no q handed to the loss
    r = samples(sg, "no_q", "use_q=0")
    assert not any(x["has_q"] or x["has_s"] for x in r["samples"])
    assert all(x["q_base"] == 0 for x in samples(sg, "no_base")["samples"])
    print("ok: GiGPO anchor advantages match verl-agent's step_norm_reward; error episodes "
          "excluded and counted by reason")


def test_uniform_groups(rng):
    """groups_all_won / groups_all_lost: the groups with no success contrast."""
    cases = {"all_won": ([1, 1, 0, 1], (1, 0)), "mixed": ([1, 0, 0, 1], (0, 0)),
             "all_lost": ([0, 0, 1, 0], (0, 1))}
    for name, (won, want) in cases.items():
        sg = make_group(rng, 4, 2, errors={2: "env error: reset"})  # episode 2 is left out
        for e, w in enumerate(won):
            sg.group.episodes[e].won = bool(w)
        st = samples(sg, "uniform_" + name)["stats"]
        assert (st["groups_all_won"], st["groups_all_lost"]) == want, (name, st)
    print("ok: groups_all_won / groups_all_lost count groups by their finished episodes")


def test_opd_baseline(rng):
    """algorithm.opd_baseline group: every sample of a group carries the mean q - s over
    the group's tokens that have a q (the learner_tool distils on every reply token), error
    episodes left out; each group its own mean."""
    sgs = [make_group(rng, 6, (1, 5), errors={2: "env error"}) for _ in range(2)]
    for i, sg in enumerate(sgs):
        r = samples(sg, "baseline%d" % i, "baseline=1")
        qs = []
        for e, ep in enumerate(sg.group.episodes):
            if ep.error:
                continue
            for sc in sg.analyses[e].steps:
                qs.extend(np.array(sc.q, np.float64) - np.array(sc.s, np.float64))
        want = float(np.mean(qs))
        assert abs(want) > 0.05, want  # q - s of these groups is not centred already
        for x in r["samples"]:
            assert x["has_q"] and close(x["q_base"], want, 1e-5), (x["q_base"], want)
    r = samples(make_group(rng, 4, 2, with_q=False), "baseline_noq", "baseline=1")
    assert all(x["q_base"] == 0 and not x["has_q"] for x in r["samples"])
    print("ok: opd_baseline group: each sample carries its group's mean q - s")


def test_big_group(rng):
    sg = make_group(rng, 1100, 1, plen=(3, 4), rlen=(1, 2), with_q=False)
    r = samples(sg, "big")
    assert len(r["samples"]) == 1100, len(r["samples"])
    ga = group_adv([ep.episode_return for ep in sg.group.episodes], 0)
    got = np.array([x["adv_ep"] for x in sorted(r["samples"], key=lambda x: x["episode"])])
    assert np.max(np.abs(got - ga)) <= 1e-4 * max(1.0, np.max(np.abs(ga))), "group > 1024"
    print("ok: a group of 1100 episodes is trained whole")


def test_overlong(rng):
    sg = make_group(rng, 4, 2, plen=(6, 10), rlen=(3, 6))
    # one sample whose prompt + response overflows, one whose response alone does
    st = sg.group.episodes[0].steps[0]
    st.prompt_ids.extend(rng.integers(3, VOCAB, 60).tolist())
    st = sg.group.episodes[1].steps[1]
    extra = 80
    st.response_ids.extend(rng.integers(3, VOCAB, extra).tolist())
    st.sample_logprobs.extend([-1.0] * extra)
    sg.analyses[1].steps[1].s.extend([-1.0] * extra)
    sg.analyses[1].steps[1].q.extend([-1.0] * extra)
    r = step(sg, "overlong", "micro=64")
    s = r["steps"][0]
    assert s["rc"] == 0 and s["applied"], s
    assert s["dropped_overlong"] == 2 and s["samples"] == 6, s
    print("ok: two over-long samples dropped and counted, the step trained on the rest")


def test_micro_batches(rng):
    sg = make_group(rng, 6, 3, plen=(6, 14), rlen=(3, 8))
    g1, g2 = os.path.join(TMP, "g1.bin"), os.path.join(TMP, "g2.bin")
    common = ("w_opd=1", "kl=0.05", "ref=1", "opd_mode=2", "opd_coef=0.3", "ent=0.01")
    one = step(sg, "mb_one", "micro=512", "grads=" + g1, *common)
    many = step(sg, "mb_many", "micro=40", "grads=" + g2, *common)
    a, b = one["steps"][0], many["steps"][0]
    assert a["micro_batches"] == 1 and b["micro_batches"] >= 4, (a, b)
    ga, gb = np.fromfile(g1, np.float32), np.fromfile(g2, np.float32)
    # Tolerance: the same fp32 gradient summed in another order, relative to its scale.
    err = np.max(np.abs(ga - gb)) / np.max(np.abs(ga))
    assert err <= 1e-4, ("micro-batch gradient differs", err)
    assert np.max(np.abs(ga)) > 0
    for k in ("loss", "pg", "opd", "kl", "entropy", "ppo_kl", "abs_qs", "opd_adv"):
        assert close(a[k], b[k], 1e-4), (k, a[k], b[k])
    # the reference: inference only, and equal to the policy before the step -> KL ~ 0
    assert one["ref"] == {"grads": False, "optimizer": False}, one["ref"]
    assert abs(a["kl"]) <= 1e-6, ("reference log-probs misaligned", a["kl"])
    assert a["q_tokens"] == a["response_tokens"] and a["opd_adv"] > 0, a
    print("ok: %d micro-batches give the one-batch gradient (max rel diff %.2g)" %
          (b["micro_batches"], err))


def test_shared_prefix(rng):
    """Prompts that share a 40-token head, then one of two 20-token middles (a prefix
    tree two deep), packed once per micro-batch give the unshared step's gradient and
    statistics, the reference aligned, while the model runs fewer tokens."""
    head = rng.integers(3, VOCAB, 40).tolist()
    mids = [rng.integers(3, VOCAB, 20).tolist() for _ in range(2)]
    sg = make_group(rng, 6, 3, plen=(2, 14), rlen=(3, 8), heads=[head + m for m in mids])
    # the reference has its own weights: its log-probs and the policy's must not mix
    common = ("w_opd=1", "kl=0.05", "ref=1", "ref_other=1", "opd_mode=2", "opd_coef=0.3",
              "ent=0.01")
    g0, g1, g2 = (os.path.join(TMP, "sp%d.bin" % i) for i in range(3))
    plain = step(sg, "sp_plain", "micro=512", "share=0", "grads=" + g0, *common)
    one = step(sg, "sp_one", "micro=512", "share=1", "grads=" + g1, *common)
    many = step(sg, "sp_many", "micro=120", "share=1", "grads=" + g2, *common)
    a, b, c = plain["steps"][0], one["steps"][0], many["steps"][0]
    assert not plain["shares_prefix"] and one["shares_prefix"], (plain, one)
    assert a["packed_tokens"] == a["tokens"], a
    assert b["tokens"] == a["tokens"] and b["samples"] == a["samples"] == 18, (a, b)
    # one micro-batch: the head runs once instead of 18 times, each middle once for its 9
    assert b["packed_tokens"] <= a["tokens"] - 17 * 40 - 2 * 8 * 20, (a, b)
    assert c["micro_batches"] >= 3 and b["packed_tokens"] < c["packed_tokens"] < a["tokens"], c
    ga = np.fromfile(g0, np.float32)
    assert np.max(np.abs(ga)) > 0
    for name, g in (("one micro-batch", g1), ("%d micro-batches" % c["micro_batches"], g2)):
        err = np.max(np.abs(np.fromfile(g, np.float32) - ga)) / np.max(np.abs(ga))
        assert err <= 1e-4, ("shared-prefix gradient differs", name, err)
    for k in ("loss", "pg", "opd", "kl", "entropy", "ppo_kl", "abs_qs", "opd_adv"):
        assert close(a[k], b[k], 1e-4) and close(a[k], c[k], 1e-4), (k, a[k], b[k], c[k])
    assert abs(a["kl"]) > 1e-3, ("the reference should differ from the policy", a)
    print("ok: shared prefixes give the unshared gradient; %d of %d tokens run in one "
          "micro-batch, %d in %d" % (b["packed_tokens"], a["tokens"], c["packed_tokens"],
                                      c["micro_batches"]))


def test_nonfinite(rng):
    sg = make_group(rng, 4, 2)
    del sg.group.episodes[2].steps[1].sample_logprobs[:]
    n = len(sg.group.episodes[2].steps[1].response_ids)
    sg.group.episodes[2].steps[1].sample_logprobs.extend([float("nan")] * n)
    r = step(sg, "nan", "steps=3")
    s = r["steps"]
    assert len(s) == 3, s
    for k in (0, 1):
        assert s[k]["rc"] == 0 and s[k]["skipped_nonfinite"] and not s[k]["applied"], s[k]
    assert s[2]["rc"] != 0 and "in a row" in s[2]["err"], s[2]
    assert r["param_change"] == 0.0, "a non-finite step reached the weights"
    # a finite group trains
    r = step(make_group(rng, 4, 2), "finite", "steps=2")
    assert all(x["applied"] for x in r["steps"]) and r["param_change"] > 0
    print("ok: non-finite steps skipped (no update); the third in a row stops: %s" % s[2]["err"])


def test_moments():
    out = os.path.join(TMP, "moments.json")
    tool("moments", MODEL, out)
    m = json.load(open(out))
    assert m["before_step"] == 1 and m["before_m"] > 0 and m["before_v"] > 0, m
    assert m["after_step"] == 0 and m["after_m"] == 0 and m["after_v"] == 0, m
    print("ok: AdamW moments and step count reset")


def test_prompt_loss():
    # SFT with the prompt loss (optim.sft_prompt_weight) against the model run by hand,
    # whole prompts and shared prefixes: the step's numbers and its gradient
    for share in (0, 1):
        out = os.path.join(TMP, "prompt%d.json" % share)
        tool("prompt", MODEL, out, "share=%d" % share)
        r = json.load(open(out))
        assert r["shares_prefix"] == bool(share), r
        for k in ("sft_nll", "prompt_nll", "loss"):
            assert close(r[k], r["hand_" + k], 1e-4), (share, k, r)
        assert r["prompt_nll"] > 1.0 and r["grad_max"] > 0, r
        assert r["grad_diff"] <= 1e-4 * r["grad_max"], (share, r)
        print("ok: prompt loss share=%d: prompt nll %.4f, sft nll %.4f, grad diff %.2g of %.2g"
              % (share, r["prompt_nll"], r["sft_nll"], r["grad_diff"], r["grad_max"]))


def test_job_check():
    if not JOB_TOOL:
        return
    r = subprocess.run([JOB_TOOL, "json", "-", "optim.micro_batch_tokens=1024",
                        "sampling.max_prompt_tokens=1000", "sampling.max_new_tokens=64"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "optim.micro_batch_tokens: expected at least" in r.stderr, r
    r = subprocess.run([JOB_TOOL, "json", "-", "optim.micro_batch_tokens=1064",
                        "sampling.max_prompt_tokens=1000", "sampling.max_new_tokens=64",
                        "optim.keep_sft_moments=true", "algorithm.gigpo_gamma=0.5"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["optim"]["keep_sft_moments"] is True and j["algorithm"]["gigpo_gamma"] == 0.5
    print("ok: job check: micro_batch_tokens >= max_prompt_tokens + max_new_tokens")


rng = np.random.default_rng(11)
test_off_policy_ratio(rng)
test_gigpo_and_errors(rng)
test_opd_baseline(rng)
test_big_group(rng)
test_overlong(rng)
test_micro_batches(rng)
test_shared_prefix(rng)
test_nonfinite(rng)
test_episode_mean(rng)
test_moments()
test_prompt_loss()
test_job_check()
test_uniform_groups(rng)
print("learner train: all checks passed")
