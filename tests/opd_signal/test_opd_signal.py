"""bench/experiment/opd_signal: the diagnostic of SEED's distillation signal keeps working.

- With the env's expert as the policy (--policy expert, the test hook) every step of its
  episodes is expert-matching, it wins every sokoban task with or without a skill, and the
  q - s of its own replies equals that of the teacher-forced expert replies (they are the
  same tokens at the same prompts): the classification and the pairing are right.
- A small random Qwen2 as the policy writes no valid action: every step is invalid, nothing
  is won, and q - s is still measured (a skill in the prompt changes a random model's
  log-probs) for the oracle's and the self-written skill.
- --tokens writes one line per taken reply and skill, every token with its q - s, and one
  line per episode and skill source with the skill's text; the decision column (the action's tokens and the think text's that spell it) is there, and
  with the expert as the policy it is the same for its replies and the teacher-forced ones.
- The table names both parts; bad arguments are refused with a sentence naming them.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOOL, REPO = sys.argv[1], sys.argv[2]
TOKENIZER = os.path.join(REPO, "deploy", "models", "tiny", "tokenizer.json")
SMALL = ["model.threads=1", "sampling.max_new_tokens=12", "analyzer.max_skill_tokens=16"]


def run(*args, ok=True):
    p = subprocess.run([TOOL] + list(args), capture_output=True, text=True, timeout=600)
    if ok:
        assert p.returncode == 0, (args, p.returncode, p.stderr)
    return p


def report(*args):
    return json.loads(run(*args, "--json").stdout)


def check_structure(r, tasks):
    assert r["tasks"] == tasks, r
    sf = r["skill_following"]
    for cond in ("no_skill", "expert_episode_oracle_skill", "own_episode_oracle_skill"):
        assert sf[cond]["tasks"] == tasks and 0 <= sf[cond]["success"] <= 1, sf
        assert cond in sf["lost_without_skill"], sf
    q = r["q_minus_s"]
    st = q["steps"]
    assert st["total"] == st["expert"] + st["other"] + st["invalid"] + st["no_expert"] > 0, st
    for row in q["rows"]:
        assert row["skill"] in q["skills"] and row["tokens"] in ("taken", "expert"), row
        assert row["outcome"] in ("won", "lost") and row["steps"] > 0, row
        assert 0 <= row["frac_pos"] <= 1 and 0 <= row["action_frac_pos"] <= 1, row
        assert 0 <= row["decision_frac_pos"] <= 1 and "decision_mean" in row, row
    return q


os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
import torch  # noqa: E402
from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: E402

with tempfile.TemporaryDirectory() as d:
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=4096, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=2048, tie_word_embeddings=True, eos_token_id=2)
    Qwen2ForCausalLM(cfg).save_pretrained(d, safe_serialization=True)
    shutil.copy(TOKENIZER, os.path.join(d, "tokenizer.json"))

    # 1. the expert as the policy: every step expert-matching, every task won
    for env, n, extra in (("sokoban", 2, []), ("household", 1, ["--no-self-skill"])):
        tokens = os.path.join(d, "tokens-%s.txt" % env)
        r = report(d, "--env", env, "--tasks", str(n), "--batch", "2", "--policy", "expert",
                   "--tokens", tokens, *extra, *SMALL)
        q = check_structure(r, n)
        assert r["policy"] == "expert", r
        st = q["steps"]
        assert st["expert"] == st["total"], (env, st)
        assert q["skills"] == (["oracle"] if extra else ["oracle", "self"]), q
        sf = r["skill_following"]
        if env == "sokoban":
            for cond in ("no_skill", "expert_episode_oracle_skill", "own_episode_oracle_skill"):
                assert sf[cond]["success"] == 1.0, (cond, sf)
            assert sf["lost_without_skill"]["no_skill"]["tasks"] == 0, sf
        rows = {(x["skill"], x["tokens"], x["outcome"], x["step"]): x for x in q["rows"]}
        assert all(k[3] == "expert" for k in rows), rows.keys()
        for (src, who, outc, cls), x in rows.items():
            if who != "taken":
                continue
            y = rows[(src, "expert", outc, cls)]
            # the same tokens at the same prompts, scored in other waves of the prefix
            # cache: equal up to fp32 summation order (a wrong pairing differs by far more)
            assert x["steps"] == y["steps"] and abs(x["mean"] - y["mean"]) < 1e-4, (x, y)
            assert x["action_steps"] == x["steps"], x  # every expert reply has an action
            assert abs(x["decision_mean"] - y["decision_mean"]) < 1e-4, (x, y)
        assert any(abs(x["mean"]) > 0 for x in rows.values()), rows
        # --tokens: a line per taken reply and skill, each token followed by {q - s}, and
        # a line per episode and skill source with the skill's text
        with open(tokens) as f:
            lines = f.read().splitlines()
        assert r["skill_temperature"] == 0.7, r.get("skill_temperature")  # the analyzer's
        skill_line = re.compile(r"^task (\d+) (won|lost) skill (oracle|self): (.*)$")
        skills = [skill_line.match(x) for x in lines if skill_line.match(x)]
        lines = [x for x in lines if not skill_line.match(x)]
        taken = sum(x["steps"] for k, x in rows.items() if k[1] == "taken")
        assert len(lines) == taken > 0, (len(lines), taken)
        by_src = {}
        for m in skills:
            by_src.setdefault(m.group(3), []).append(m.group(1))
        assert "oracle" in by_src and by_src["oracle"], by_src.keys()
        for src, tasks in by_src.items():  # once per episode, each source the same episodes
            assert len(set(tasks)) == len(tasks) and sorted(tasks) == sorted(by_src["oracle"]), \
                by_src
        assert all(m.group(4) for m in skills if m.group(3) == "oracle"), skills
        head = re.compile(r"^task \d+ step \d+ (won|lost) expert (oracle|self):"
                          r"( .*?\{[+-]\d+\.\d\d\})+$")
        for line in lines:
            assert head.match(line), line
        print("expert policy, %s: %d steps, all expert-matching" % (env, st["total"]))

    # 2. a random model as the policy: no valid action, q - s still measured
    r = report(d, "--env", "sokoban", "--tasks", "2", "--batch", "2", "envs.0.max_steps=4",
               *SMALL)
    q = check_structure(r, 2)
    st = q["steps"]
    assert st["invalid"] == st["total"], st
    assert r["skill_following"]["no_skill"]["success"] == 0, r
    assert r["skill_following"]["lost_without_skill"]["no_skill"]["tasks"] == 2, r
    assert q["s_vs_sampling_max_abs"] < 1e-3, q  # s re-scored equals the sampling log-probs
    srcs = {(x["skill"], x["tokens"]) for x in q["rows"]}
    assert {("oracle", "taken"), ("self", "taken")} <= srcs, srcs
    print("random policy: %d steps, all invalid; rows %s" % (st["total"], sorted(srcs)))

    table = run(d, "--env", "sokoban", "--tasks", "2", "--batch", "2", "--policy", "expert",
                *SMALL).stdout
    for want in ("1. skill following", "oracle skill of the expert's episode",
                 "2. q - s", "expert"):
        assert want in table, (want, table)

    # 3. bad arguments name what was wrong (the task-set ones read by roles/taskset.c, as
    # seedctl eval reads them, with this tool's bounds)
    for args, want in ((["--policy", "oracle"], "--policy"), (["--env", "nosuch"], "nosuch"),
                       (["--tasks", "0"], "--tasks"), ([], "MODEL_DIR"),
                       (["--batch", "65"], "--batch: expected an integer in [1, 64], got '65'"),
                       (["--episodes", "3"], "unknown option '--episodes'"),
                       (["--split", "test"], "--split: expected train, seen or unseen")):
        p = run(*([d] if args else []), *args, *SMALL, ok=False)
        assert p.returncode != 0 and want in p.stderr, (args, p.returncode, p.stderr)
print("ok")
