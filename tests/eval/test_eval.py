"""seedctl eval: a fixed, seeded task set, played without skills through the rollout engine.

- The expert through the same evaluation path wins every sokoban task (the generator's
  levels are solvable by construction and the expert solves them) and every task of the
  other built-in envs whose experts are exact; household is checked against its own
  expert's rate (>= 0.95).
- A fixed checkpoint (a small random Qwen2 saved by transformers, the shipped tiny
  tokenizer) gives byte-identical JSON twice, greedy and sampled (seeded per task); a
  different seed names a different task set.
- --trace writes every episode as a JSON line (prompt, reply, action per step) that
  agrees with the result; the expert's trace shows its winning moves.
- The table names every family; bad arguments (read by roles/taskset.c, which opd_signal
  shares; tests/eval/taskset_test.c tries each) and a bad model dir (a directory as its
  tokenizer.json, a file as the dir) are refused with a sentence.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SEEDCTL, REPO = sys.argv[1], sys.argv[2]
TOKENIZER = os.path.join(REPO, "deploy", "models", "tiny", "tokenizer.json")


def run(*args, ok=True):
    p = subprocess.run([SEEDCTL, "eval"] + list(args), capture_output=True, text=True,
                       timeout=600)
    if ok:
        assert p.returncode == 0, (args, p.returncode, p.stderr)
    return p


def evaluate(*args):
    return json.loads(run(*args, "--json").stdout)


# 1. the expert through the evaluation path
for env, split, n, floor in (("sokoban", "unseen", 60, 1.0), ("sokoban", "train", 60, 1.0),
                             ("ezpoints", "unseen", 40, 1.0), ("household", "unseen", 30, 0.95),
                             ("webshop", "unseen", 30, 0.95), ("searchqa", "unseen", 30, 0.95)):
    r = evaluate("--expert", "--env", env, "--split", split, "--episodes", str(n))
    assert r["episodes"] == n and r["errors"] == 0, r
    assert r["success"] >= floor, (env, split, r)
    assert sum(f["episodes"] for f in r["families"]) == n, r
    print("expert %-9s %-6s success %.3f return %.3f (%d families)" %
          (env, split, r["success"], r["return"], len(r["families"])))

# 2. a fixed checkpoint: the same numbers twice
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
    base = [d, "--env", "sokoban", "--split", "seen", "--episodes", "6", "--batch", "3",
            "model.threads=1", "sampling.max_new_tokens=12"]
    a, b = evaluate(*base), evaluate(*base)
    assert a == b, (a, b)
    s1 = evaluate(*base, "--temperature", "1.0")
    s2 = evaluate(*base, "--temperature", "1.0")
    assert s1 == s2, (s1, s2)
    assert s1["temperature"] == 1.0 and a["temperature"] == 0, (a, s1)
    # a random model writes no valid action: every step is invalid, nothing is won, and
    # each episode runs to max_steps collecting the invalid penalty
    assert a["success"] == 0 and a["return"] < 0, a
    # --skills: the shipped library's skills in every prompt (the skill-following
    # diagnostic), said in the JSON and the table; a missing library is named
    k = evaluate(*base, "--skills")
    assert k["skills"].endswith("skills") and k["episodes"] == 6, k
    assert "with the library's skills" in run(*base, "--skills").stdout
    p = run(*base, "--skills", "algorithm.mode=skill_prompt",
            "algorithm.skill_library=" + os.path.join(d, "nolib"), ok=False)
    assert p.returncode != 0 and "does not exist" in p.stderr, p.stderr
    table = run(*base).stdout
    assert "sokoban" in table and "greedy" in table and "all" in table, table
    # --trace: one JSON line per episode, its steps as played (the prompt the model saw,
    # its reply, the parsed action) and the same totals as the JSON result
    tr = os.path.join(d, "trace.jsonl")
    t = evaluate(*base, "--trace", tr)
    assert t == a, (t, a)
    eps = [json.loads(line) for line in open(tr)]
    assert len(eps) == 6 and all(e["error"] == "" for e in eps), eps
    assert sum(e["won"] for e in eps) == 0 and len({e["task_seed"] for e in eps}) == 6, eps
    mean = sum(e["return"] for e in eps) / len(eps)
    assert abs(mean - a["return"]) < 1e-6, (mean, a)
    for e in eps:
        assert isinstance(e["task_seed"], str) and e["task_seed"].isdigit(), e["task_seed"]
        assert e["family"] == "sokoban" and len(e["steps"]) >= 1, e
        for st in e["steps"]:
            assert st["prompt"].startswith("<|im_start|>system"), st["prompt"][:80]
            assert st["prompt"].endswith("<|im_start|>assistant\n"), st["prompt"][-80:]
            assert st["observation"] in st["prompt"], st
            assert st["valid"] == 0 and st["action"] == "" and st["reward"] < 0, st
    xt = os.path.join(d, "expert.jsonl")
    run("--expert", "--env", "sokoban", "--episodes", "3", "--trace", xt)
    xe = [json.loads(line) for line in open(xt)]
    assert len(xe) == 3 and all(e["won"] == 1 for e in xe), xe
    assert all(st["action"] in ("up", "down", "left", "right") and st["valid"] == 1
               for e in xe for st in e["steps"]), xe
    p = run(*base, "--trace", os.path.join(d, "no", "such", "dir", "t.jsonl"), ok=False)
    assert p.returncode != 0 and "--trace" in p.stderr and "No such file" in p.stderr, p.stderr
    print("checkpoint: the same result twice (greedy and sampled): %s" % json.dumps(a))

    # 3. errors name what is wrong; a directory where the model dir's tokenizer.json belongs
    # and a file given as MODEL_DIR are refused by name, not an abort
    tokdir = os.path.join(d, "tokdir")
    os.makedirs(os.path.join(tokdir, "tokenizer.json"))
    for f in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(d, f), os.path.join(tokdir, f))
    for args, want in (((), "expected a MODEL_DIR"),
                       ((tokdir,), os.path.join(tokdir, "tokenizer.json") + ": is a directory"),
                       ((os.path.join(d, "config.json"),), "config.json/config.json: Not a dir"),
                       ((d, "--split", "test"), "--split: expected train, seen or unseen"),
                       ((d, "--env", "nosuch"), "no env named 'nosuch'"),
                       ((d, "--episodes", "0"), "--episodes: expected an integer"),
                       ((os.path.join(d, "missing"),), "config.json"),
                       ((d, "--bogus", "1"), "unknown option '--bogus'")):
        p = run(*args, ok=False)
        assert p.returncode != 0 and want in p.stderr, (args, p.returncode, p.stderr)

# 4. the task set is named by its seed
x = evaluate("--expert", "--env", "sokoban", "--episodes", "5", "--seed", "1")
y = evaluate("--expert", "--env", "sokoban", "--episodes", "5", "--seed", "2")
assert x["seed"] == 1 and y["seed"] == 2 and x["return"] != y["return"], (x, y)
print("eval: expert path, determinism and errors checked")
