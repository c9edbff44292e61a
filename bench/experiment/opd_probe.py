"""Does SEED's distillation term help or hurt learning? A small, fast probe.

usage: opd_probe.py BIN_DIR [--seeds 9,12,31] [--modes grpo,seed,...] [--steps 16]
                   [--runs DIR] [--json] [key=value ...]

The task is the learning test's (tests/learning): one fixed sokoban level (envs.0.tasks=1,
task 0 of the set named by job.seed) whose box is one push from its target with the player
beside it, one step per episode, one group of 8 a step, from the shipped agent. Each job
seed names a different level (9, 12 and 31: levels the expert wins in one step). For every
seed it trains
  grpo                  the outcome advantage only,
  seed                  + clip(q - s) on the action text's tokens, the policy's own
                        hindsight skills (the product's default),
  seed-oracle           the same with the env's rule-based oracle skills (the best skills),
  seed-response         + clip(q - s) on every reply token (think text too), own skills,
  seed-oracle-response  the same with the oracle's skills
for the same number of steps and prints, per run, the rolling training success at the
start (first 16 episodes) and over the last 6 steps, the mean |q - s| and the final KL,
then mean +- std per mode. About 2 minutes a run on 2 cores.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
MODES = (("grpo", "grpo", "self", "action"), ("seed", "seed", "self", "action"),
         ("seed-oracle", "seed", "oracle", "action"), ("seed-response", "seed", "self", "response"),
         ("seed-oracle-response", "seed", "oracle", "response"))


def job(run_dir, seed, mode, source, opd_tokens, steps, port):
    return {
        "job": {"name": "probe", "run_dir": run_dir, "total_steps": steps, "seed": seed},
        "model": {"path": os.path.join(REPO, "deploy", "models", "agent"), "init": "load"},
        "envs": [{"name": "sokoban", "weight": 1, "split": "train", "max_steps": 1, "tasks": 1,
                  "options": {"room_size": "6", "boxes": "1", "search_depth": "3"}}],
        "algorithm": dict({"mode": mode, "group_size": 8, "stage0_steps": 0, "stage1_steps": 0},
                          **({"opd_tokens": opd_tokens} if mode != "grpo" else {})),
        "analyzer": {"skill_source": source},
        "optim": {"lr": 2e-4, "schedule": "constant", "groups_per_step": 0, "tokens_per_step": 3500,
                  "micro_batch_tokens": 3500},
        "sampling": {"max_new_tokens": 48},
        "eval": {"every": 0},
        "endpoints": {"base_port": port},
        "checkpoint": {"every": 0, "every_minutes": 0},
        "status": {"window": 16},
        "roles": {"actors": 2, "analyzers": 1},
    }


def run(bin_dir, runs, seed, name, mode, source, opd_tokens, steps, port, overrides):
    d = os.path.join(runs, "%s-%d" % (name, seed))
    metrics = os.path.join(d, "run", "metrics.jsonl")
    if not os.path.exists(metrics):
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "job.yaml")
        with open(path, "w") as f:
            json.dump(job(os.path.join(d, "run"), seed, mode, source, opd_tokens, steps, port), f)
        p = subprocess.run([os.path.join(bin_dir, "seedctl"), "launch", path] + overrides +
                           ["--bin-dir", bin_dir, "--quiet"], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("%s seed %d failed:\n%s" % (name, seed, (p.stdout + p.stderr)[-3000:]))
    rows = [json.loads(line) for line in open(metrics)]
    rows = [r for r in rows if r.get("stage") == 2 and "pg" in r]
    succ = [r.get("success/sokoban", 0.0) for r in rows]
    q = [r["mean_abs_q_minus_s"] for r in rows if r.get("q_tokens", 0) > 0]
    return {"mode": name, "seed": seed, "steps": len(rows), "start": succ[0],
            "last6": sum(succ[-6:]) / 6, "curve": succ,
            "abs_q_minus_s": sum(q) / len(q) if q else 0.0, "kl_final": rows[-1]["kl"]}


def mean_std(xs):
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin_dir")
    ap.add_argument("--seeds", default="9,12,31")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--runs", default="runs/opd_probe")
    ap.add_argument("--port", type=int, default=47700)
    ap.add_argument("--modes", default=",".join(m[0] for m in MODES))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("overrides", nargs="*", help="job keys for every run (key=value)")
    a = ap.parse_args()
    res = []
    for seed in [int(s) for s in a.seeds.split(",")]:
        for name, mode, source, opd_tokens in [m for m in MODES if m[0] in a.modes.split(",")]:
            r = run(a.bin_dir, a.runs, seed, name, mode, source, opd_tokens, a.steps, a.port,
                    a.overrides)
            res.append(r)
            print("%-22s seed %-3d start %.2f  last-6 %.2f  |q-s| %.3f  kl %.3f  curve %s" %
                  (name, seed, r["start"], r["last6"], r["abs_q_minus_s"], r["kl_final"],
                   " ".join("%.2f" % x for x in r["curve"])), flush=True)
    print("\n%-22s %14s %14s %14s" % ("mode", "start", "last 6 steps", "gain"))
    for name, _, _, _ in MODES:
        rs = [r for r in res if r["mode"] == name]
        if not rs:
            continue
        s = mean_std([r["start"] for r in rs])
        l = mean_std([r["last6"] for r in rs])
        g = mean_std([r["last6"] - r["start"] for r in rs])
        print("%-22s %7.2f ± %.2f %7.2f ± %.2f %+7.2f ± %.2f" % (name, *s, *l, *g))
    if a.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
