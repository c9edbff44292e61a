"""The training pipeline moves success: seedctl launch, mode grpo, from the shipped agent.

The task is one fixed sokoban level (envs.0.tasks = 1: task 0 of the task set named by
job.seed, split train) whose box is one push from its target with the player beside it,
and an episode is one step (max_steps 1): a decision the agent makes right about half
the time (sampled) and that RL makes it take almost always within a
dozen steps. Checked:

- the task: the expert wins it in one step through seedctl eval (the same task set), and
  bad values of envs.N.tasks are refused with a sentence;
- learning: over 24 RL steps of two groups each the rolling training success
  (metrics.jsonl, the episodes that reached the learner) of the last 8 steps is at least
  0.2 above the first record (the first 16 episodes, the first step's) and at least 0.7.
  Measured with the shipped agent that reasons before it acts (its replies need the
  default 64 new tokens), on job seed 20's level, two groups a step at lr 1e-4, in 6
  runs beside a loaded CI: 0.44-0.56 at the start, 0.98-1.00 over the last 8 steps, the
  lowest step 0.44.
  Not one group a step at lr 2e-4, as before: success dipped to 0.12-0.25 within most
  runs, and once, with CI beside an experiment on both cores, it fell 1.00 -> 0.00 at
  step 8 and stayed there (a group that loses every episode carries no GRPO signal to
  climb back with). Two groups at 2e-4 still dipped to 0.06 and ended one run at 0.74.

Mode grpo, not seed: on this task seed's distillation term pulls success down (0.19 ->
0.06 with self-written skills, -> 0.00 with the oracle's), the open finding of issue 8
recorded in docs/RESULTS.md; this test guards the loop every mode shares (rollout, the
outcome advantage, the update, the weights reaching the actors).

The numbers are outcomes of RL, not of timing: the step count is fixed, the task and the
sampling streams are seeded; scheduling only changes which version plays which group.
"""
import json
import os
import subprocess
import sys
import tempfile

BIN, REPO = sys.argv[1], sys.argv[2]
SEEDCTL = os.path.join(BIN, "seedctl")
AGENT = os.path.join(REPO, "deploy", "models", "agent")
JOB_SEED = 20  # task 0 of this set is a one-push level (checked below)
LEVEL = ["envs.0.options.search_depth=3", "envs.0.max_steps=1"]
sys.path.insert(0, os.path.join(REPO, "tests"))
import looptools  # noqa: E402


# 1. the task: the expert wins it in one step; bad pool sizes are refused
p = subprocess.run([SEEDCTL, "eval", "--expert", "--env", "sokoban", "--split", "train",
                    "--seed", str(JOB_SEED), "--episodes", "1", "--json"] + LEVEL,
                   capture_output=True, text=True, timeout=300)
assert p.returncode == 0, p.stderr
assert json.loads(p.stdout)["success"] == 1, p.stdout
for bad, word in (("-1", "'-1'"), ("two", "'two'")):
    p = subprocess.run([SEEDCTL, "config", "envs.0.tasks=" + bad], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode != 0 and "envs.0.tasks" in p.stderr and word in p.stderr, p.stderr

# 2. learning
with tempfile.TemporaryDirectory() as d:
    job = {
        "job": {"name": "learning", "run_dir": os.path.join(d, "run"), "total_steps": 24,
                "seed": JOB_SEED},
        "model": {"path": AGENT, "init": "load"},
        "envs": [{"name": "sokoban", "weight": 1, "split": "train", "max_steps": 1, "tasks": 1,
                  "options": {"room_size": "6", "boxes": "1", "search_depth": "3"}}],
        "algorithm": {"mode": "grpo", "group_size": 8, "stage0_steps": 0, "stage1_steps": 0},
        "optim": {"lr": 1e-4, "schedule": "constant", "groups_per_step": 0, "tokens_per_step": 7000,
                  "micro_batch_tokens": 3500},
        "sampling": {"max_new_tokens": 64},  # the agent reasons before it acts
        "eval": {"every": 0},
        "endpoints": {"base_port": looptools.free_base_port()},
        "checkpoint": {"every": 0, "every_minutes": 0},
        "status": {"window": 16},
        "roles": {"actors": 2, "analyzers": 1},
    }
    path = os.path.join(d, "job.yaml")
    with open(path, "w") as f:
        json.dump(job, f)  # JSON is YAML
    p = subprocess.run([SEEDCTL, "launch", path, "--bin-dir", BIN, "--quiet"],
                       capture_output=True, text=True, timeout=1100)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-4000:]
    steps = []
    with open(os.path.join(d, "run", "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("stage") == 2 and "pg" in r and "success/sokoban" in r:
                steps.append((r["step"], r["success/sokoban"]))
    print("rolling success by step:", " ".join("%d:%.2f" % s for s in steps))
    assert [s for s, _ in steps] == list(range(1, 25)), steps
    first = steps[0][1]
    last = sum(v for _, v in steps[-8:]) / 8
    assert first <= 0.75, ("the agent already solves the task; pick another", first)
    assert last >= first + 0.2 and last >= 0.7, ("success did not rise", first, last)
    print("learning: success %.2f at the start -> %.2f over the last 8 steps" % (first, last))
