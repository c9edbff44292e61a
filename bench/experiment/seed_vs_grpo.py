"""SEED against its baselines at an equal budget of env steps, from one warm-started agent.

usage: seed_vs_grpo.py BUILD_DIR --agent MODEL_DIR [--envs sokoban[,ENV:key=value:...]]
                       [--modes grpo,skill_prompt,static_skills,seed] [--seeds 3]
                       [--pool 8] [--env-steps 1200] [--eval-episodes 24] [--eval-every 2]
                       [--runs DIR] [--out docs/RESULTS.md] [--timeout-min 20] [key=value ...]

For every (env, mode, seed) it launches the job with `seedctl launch` (all roles on this
machine) from the agent at MODEL_DIR (no warm start: stage0_steps=stage1_steps=0), stops
it at job.max_env_steps, then evaluates the final checkpoint with `seedctl eval` (greedy,
no skill in the prompt: what a policy does at inference) on its training pool and on the
seen and unseen splits. With --pool K (the default job's 8) every run trains on a fixed
pool of K levels (envs.0.tasks), the K tasks of the train split named by its job seed, so
a seed is also a pool; "pool" success is `seedctl eval --split train --seed SEED
--episodes K`, the same levels it trained on; "seen" is new levels of the training
distribution and "unseen" new layouts (on household also object-receptacle pairs that
training never placed), --eval-episodes of each, the same tasks for every run. With
--pool 0 every group is a fresh level and there is no pool column. Periodic evaluation
during training (eval.every: the pool and eval.episodes unseen levels) gives success
against env steps. Rows of a --runs dir written before a split was evaluated (the seen
split of a pooled run, before December 7) get it on the next run that is not
--report-only, from the run's final checkpoint.
The sampling temperature and lr are the default job's (T 0.7, lr 1e-4), with a constant
lr: a run stops at an env-step budget, not at job.total_steps, which the cosine schedule
decays over.
Results are appended to RUNS/results.jsonl as runs finish (a re-run skips what is done;
a run that fails is reported, left out of the table and rerun by the next invocation,
and the others go on; the script then exits non-zero),
then the report is written: the table of mean +- std over seeds per (env, mode, split),
the paper's three claims tested on these numbers (the first also paired by job seed: a
seed's grpo and seed runs share its pool and the unseen tasks, so the per-seed difference
gets a 95% t interval), and one PNG of curves per env
(`seedctl plot`) beside the report. The report replaces only its own section of --out
(between the seed_vs_grpo markers of its --envs), so the file's other measurements and
the experiments on other envs stay.

Sizing: the defaults are the 90-minute size on 2 cores (docs/RESULTS.md gives the time
measured): sokoban x 4 modes x 3 seeds, 1200 env steps a run (8-12 RL steps of 2 groups,
as the agent's episodes are longer or shorter), pool and periodic evaluation every 2
steps, each final checkpoint evaluated on its pool and 24 unseen tasks. Household is
left out by default: the shipped agent wins 9% of its six families greedily, and one RL
step of 2 household groups is already about 1,500 env steps; on its simplest family (the
--envs entry in docs/RESULTS.md) grpo and seed left it where it started (December 6). On
a bigger machine add --envs sokoban,household, raise --env-steps (20000 or more), --pool
(64, or 0 for fresh levels), --eval-episodes (100) and the job's roles.actors /
roles.analyzers, and run several experiments side by side with different --runs dirs and
--base-port values (each run takes 8 ports from base + 8 * (run index % 100); keep them
below 32768, where the kernel hands out no ephemeral ports). A --runs dir holds one
--pool: its results.jsonl records it and a rerun with another is refused.

Per env: an --envs entry ENV:key=value:... adds job overrides to that env's runs and
evaluations, e.g. `household:envs.0.max_steps=30:job.max_env_steps=2400` (its own step
limit and env-step budget). Every row records the sha256 of the agent's weights; a rerun
into a --runs dir whose rows of that env came from other weights is refused, and the
report names the weights of each env's rows.

Variants: a --modes entry NAME=MODE:key=value:... runs MODE with those job overrides
under its own name, e.g. `--modes grpo,seed,seed-w10=seed:algorithm.w_opd=10`; every
variant of seed is held against grpo in the claims. Each row of results.jsonl records the
overrides it ran with (the command line's and the variant's), and a rerun that would give
a done row other overrides is refused. --report-only writes the report of what RUNS holds,
running nothing.
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PLOT_MAX = 16  # runs one `seedctl plot` overlays


def mean_std(xs):
    if not xs:
        return float("nan"), float("nan")
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, 0.0
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def overrides_of(flag, spec, parts):
    """The key=value job overrides after the first ':' of a --envs or --modes entry."""
    bad = [x for x in parts if "=" not in x]
    if bad:
        sys.exit("seed_vs_grpo: %s entry %r: %r is not key=value" % (flag, spec, bad[0]))
    return parts


def parse_env(spec):
    """'sokoban' or 'household:key=value:...' -> (env, [key=value, ...]): job overrides of
    that env's runs and evaluations (envs.0.max_steps=30, job.max_env_steps=N)."""
    parts = spec.split(":")
    if not parts[0]:
        sys.exit("seed_vs_grpo: --envs entry %r: expected NAME or NAME:key=value:..." % spec)
    extra = overrides_of("--envs", spec, parts[1:])
    for x in extra:
        if x.startswith("job.max_env_steps=") and not x.split("=", 1)[1].isdigit():
            sys.exit("seed_vs_grpo: --envs entry %r: job.max_env_steps must be a whole number "
                     "of env steps, got %r" % (spec, x.split("=", 1)[1]))
    return parts[0], extra


def budget(a, env):
    """The env-step budget of env's runs: its job.max_env_steps override, or --env-steps."""
    over = [x for x in a.env_extra[env] if x.startswith("job.max_env_steps=")]
    return int(over[-1].split("=", 1)[1]) if over else a.env_steps


def agent_sha(path):
    """sha256 of the agent's weights: which agent a row started from."""
    h = hashlib.sha256()
    with open(os.path.join(path, "model.safetensors"), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def parse_mode(spec):
    """'grpo' or 'NAME=MODE:key=value:...' -> (name, mode, [key=value, ...])."""
    if "=" not in spec.split(":")[0]:
        return spec, spec, []
    name, rest = spec.split("=", 1)
    parts = rest.split(":")
    if not name or not all(c.isalnum() or c in "-_" for c in name) or not parts[0]:
        sys.exit("seed_vs_grpo: --modes entry %r: expected NAME=MODE:key=value:... with NAME "
                 "of letters, digits, - and _" % spec)
    return name, parts[0], overrides_of("--modes", spec, parts[1:])


def first_split(a):
    """The first column of the table: the training pool, or the seen split without one."""
    return "pool" if a.pool > 0 else "seen"


def splits(a):
    """Every evaluation a run gets, in the table's order. With a pool: the pool (the levels
    it trained on), the seen split (new levels of the training distribution: the rooms,
    layouts and object-receptacle pairs of the train split) and the unseen split (new
    layouts and, on household, pairs never placed in training). Without one: seen, unseen."""
    return ["pool", "seen", "unseen"] if a.pool > 0 else ["seen", "unseen"]


def evaluate(a, model_dir, env, seed, overrides, names=None):
    """seedctl eval of model_dir, greedy and without a skill, on each split of splits(a)
    (or those of `names`): {split: its JSON}. The pool is the K train tasks of the job
    seed, the levels it trained on; the seen and unseen tasks are the same for every run
    (eval seed 0). `overrides` are the run's job overrides, all of them."""
    res = {}
    sets = {"pool": ("train", seed, a.pool), "seen": ("seen", 0, a.eval_episodes),
            "unseen": ("unseen", 0, a.eval_episodes)}
    for name in splits(a) if names is None else names:
        split, eval_seed, n = sets[name]
        out = subprocess.run([os.path.join(a.build, "bin", "seedctl"), "eval", model_dir,
                              "--env", env, "--split", split, "--seed", str(eval_seed),
                              "--episodes", str(n), "--json", "envs=" + env] + list(overrides),
                             check=True, capture_output=True, text=True).stdout
        res[name] = json.loads(out)
    return res


def final_checkpoint(run_dir):
    latest = os.path.join(run_dir, "ckpt", "latest")
    if not os.path.exists(latest):
        raise RuntimeError("%s: no final checkpoint (%s is missing)" % (run_dir, latest))
    return os.path.join(run_dir, "ckpt", open(latest).read().strip())


def successes(r, names):
    return " ".join("%s %.3f" % (x, r[x]["success"]) for x in names)


def backfill(a, results, done_path):
    """Rows written before a split was evaluated (the seen split of a pooled experiment,
    added December 7) get it now, from the run's final checkpoint (the agent for a start
    row) with the overrides the row records; results.jsonl is rewritten after each row, so
    a stopped backfill keeps what it did."""
    for r in results:
        if r["env"] not in a.env_extra or r["mode"] not in ["start"] + a.labels:
            continue
        missing = [x for x in splits(a) if x not in r]
        if not missing:
            continue
        if "overrides" not in r:
            raise RuntimeError("%s: the %s %s seed %d row records no overrides, so its %s "
                               "evaluation cannot be made as its others were; use another "
                               "--runs dir" % (done_path, r["env"], r["mode"], r["seed"],
                                               ", ".join(missing)))
        model = a.agent if r["mode"] == "start" else final_checkpoint(r["run_dir"])
        r.update(evaluate(a, model, r["env"], r["seed"], r["overrides"], missing))
        tmp = done_path + ".tmp"
        with open(tmp, "w") as f:
            for x in results:
                f.write(json.dumps(x) + "\n")
        os.replace(tmp, done_path)
        print("%-10s %-14s seed %d: added %s" % (r["env"], r["mode"], r["seed"],
                                                  successes(r, missing)), flush=True)


def run_one(a, env, spec, seed, port):
    label, mode, extra = spec
    name = "exp-%s-%s-s%d" % (env, label, seed)
    run_dir = os.path.join(a.runs, name)
    over = ["job.name=" + name, "job.run_dir=" + run_dir, "job.seed=%d" % seed,
            "job.total_steps=100000", "job.max_env_steps=%d" % a.env_steps,
            "model.path=" + os.path.abspath(a.agent), "model.init=load",
            "algorithm.mode=" + mode, "algorithm.stage0_steps=0", "algorithm.stage1_steps=0",
            "envs=" + env, "envs.0.tasks=%d" % a.pool, "optim.schedule=constant",
            "eval.every=%d" % a.eval_every,
            "eval.episodes=%d" % a.eval_episodes_train, "eval.seed=%d" % 1000,
            "endpoints.base_port=%d" % port] + a.overrides + a.env_extra[env] + extra
    if mode in ("grpo", "skill_prompt", "static_skills"):
        over.append("analyzer.skill_source=self")
    os.makedirs(run_dir, exist_ok=True)
    t0 = time.time()
    with open(os.path.join(run_dir, "launch.log"), "w") as log:
        p = subprocess.run([os.path.join(a.build, "bin", "seedctl"), "launch", "--quiet"] + over,
                           stdout=log, stderr=subprocess.STDOUT, timeout=a.timeout_min * 60)
    wall = time.time() - t0
    if p.returncode != 0:
        raise RuntimeError("%s: seedctl launch exited %d (see %s/launch.log)" %
                           (name, p.returncode, run_dir))
    ckpt = final_checkpoint(run_dir)
    res = {"env": env, "mode": label, "base_mode": mode,
           "overrides": a.overrides + a.env_extra[env] + extra, "seed": seed,
           "pool_size": a.pool, "run_dir": run_dir, "wall_s": wall, "budget": budget(a, env),
           "agent_sha256": a.agent_sha}
    res.update(evaluate(a, ckpt, env, seed, res["overrides"]))
    curve = []
    key = "eval_pool_success" if a.pool > 0 else "eval_success"
    for line in open(os.path.join(run_dir, "metrics.jsonl")):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if key in rec:
            curve.append((rec["env_steps_seen"], rec[key]))
        if rec.get("stage") == 2 and "loss" in rec:
            res["steps"] = rec["step"]
            res["env_steps"] = rec["env_steps_seen"]
    res["curve"] = curve
    return res


def run_all(a, results, done, done_path, run=None):
    """Every (env, seed, mode) run not in `done`, modes interleaved so a cut-short
    experiment stays fair; each finished row is appended to results and done_path. A run
    that fails (its launch exits non-zero or times out, no final checkpoint, an evaluation
    fails) is reported and the others go on: returns the failures, one line each."""
    run = run or run_one
    failed, k = [], 0
    for env in a.envs:
        for seed in range(a.seeds):
            for spec in a.specs:
                mode = spec[0]
                k += 1
                if (env, mode, seed) in done:
                    continue
                t0 = time.time()
                try:
                    r = run(a, env, spec, seed, a.base_port + 8 * (k % 100))
                except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as ex:
                    failed.append("%s %s seed %d: %s" % (env, mode, seed, ex))
                    print("%-10s %-14s seed %d: FAILED: %s" % (env, mode, seed, ex), flush=True)
                    continue
                results.append(r)
                with open(done_path, "a") as f:
                    f.write(json.dumps(r) + "\n")
                print("%-10s %-14s seed %d: %s (%.1f min)" % (
                    env, mode, seed, successes(r, splits(a)), (time.time() - t0) / 60),
                    flush=True)
    return failed


def eval_start(a, env, seed):
    """The agent itself before any RL, on the pool of job seed `seed`: the row every mode
    starts from."""
    res = {"env": env, "mode": "start", "seed": seed, "pool_size": a.pool, "run_dir": None,
           "wall_s": 0.0, "curve": [], "overrides": a.overrides + a.env_extra[env],
           "agent_sha256": a.agent_sha}
    res.update(evaluate(a, a.agent, env, seed, res["overrides"]))
    return res


def steps_to_reach(curve, target):
    for steps, succ in curve:
        if succ >= target:
            return steps
    return None


def reach_claim(grpo, runs, start, first, default_budget):
    """The 60% claim, seed by seed: each seed's run against the grpo run of the same job
    seed (the same pool), at the first periodic evaluation whose success reaches that grpo
    run's final success. A seed where grpo ended at or below the start row's success has
    nothing to reach (the run's first evaluation would "reach" it), and is counted apart."""
    g_by = {r["seed"]: r for r in grpo}
    st_by = {r["seed"]: r for r in start}
    reached, missed, nothing = [], [], []
    for r in sorted(runs, key=lambda x: x["seed"]):
        g = g_by.get(r["seed"])
        if g is None:
            continue
        target = g[first]["success"]
        st = st_by.get(r["seed"])
        if st is not None and target <= st[first]["success"]:
            nothing.append(r["seed"])
            continue
        k = steps_to_reach(r["curve"], target)
        if k is None:
            missed.append(r["seed"])
        else:
            reached.append((r["seed"], k / r.get("budget", default_budget)))
    gained = len(reached) + len(missed)
    if gained:
        out = "on the %d seed%s where grpo gained on its pool, reached by %d%s" % (
            gained, "" if gained == 1 else "s", len(reached),
            " (%s)" % ", ".join("seed %d at %.0f%% of the budget" % (sd, 100 * f)
                                for sd, f in reached) if reached else "")
    else:
        out = "not testable: grpo gained on no seed's pool"
    if nothing:
        out += "; grpo ended at or below the start on seed%s %s, nothing to reach" % (
            "" if len(nothing) == 1 else "s", ", ".join(str(x) for x in nothing))
    return out


def verdict(sm, ss, gm, gs):
    if sm - ss > gm + gs:
        return "yes"
    if gm - gs > sm + ss:
        return "no: grpo is higher"
    return "no clear difference"


# two-sided 95% quantiles of Student's t, by degrees of freedom (1..10; 1.96 beyond)
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]


def paired(g, s, split, label="seed"):
    """seed against grpo run by run of the same job seed: both trained on the same pool
    and are evaluated on the same unseen tasks, so their difference leaves out how much
    the seeds' pools differ. Returns the clause for the claim line."""
    grpo_of = {r["seed"]: r[split]["success"] for r in g}
    ds = [r[split]["success"] - grpo_of[r["seed"]] for r in sorted(s, key=lambda r: r["seed"])
          if r["seed"] in grpo_of]
    if len(ds) < 2:
        return "paired by seed: %d pair(s), too few" % len(ds)
    m, sd = mean_std(ds)
    half = (T95[len(ds) - 2] if len(ds) - 1 <= len(T95) else 1.96) * sd / math.sqrt(len(ds))
    up = sum(1 for d in ds if d > 1e-9)
    down = sum(1 for d in ds if d < -1e-9)
    word = ("%s higher" % label if m - half > 0 else "grpo higher" if m + half < 0 else
            "no clear difference")
    return ("paired by seed over %d seeds: difference %+.3f, 95%% interval [%+.3f, %+.3f], "
            "higher on %d, lower on %d, equal on %d: %s" % (
                len(ds), m, m - half, m + half, up, down, len(ds) - up - down, word))


def split_cell(rs, split):
    xs = [r[split]["success"] for r in rs if split in r]
    if not xs:
        return "—"
    m, s = mean_std(xs)
    return "%.3f ± %.3f" % (m, s) + ("" if len(xs) == len(rs) else " (%d runs)" % len(xs))


def report(a, results):
    first = first_split(a)
    cols = splits(a)
    what = ("its training pool (the %d levels of the train split its job seed names: "
            "`seedctl eval --split train --seed SEED --episodes %d`), %d seen and %d unseen "
            "tasks" % (a.pool, a.pool, a.eval_episodes, a.eval_episodes) if a.pool > 0 else
            "%d seen and %d unseen tasks" % (a.eval_episodes, a.eval_episodes))
    per_env = []
    for env in a.envs:
        shas = sorted({r.get("agent_sha256", "?")[:12] for r in results if r["env"] == env})
        extra = " ".join(a.env_extra[env])
        per_env.append("%s: %d env steps, agent weights sha256 %s%s" % (
            env, budget(a, env), "/".join(shas), ", with `%s`" % extra if extra else ""))
    lines = ["## The experiment: SEED against its baselines (%s)" % ", ".join(a.envs), "",
             "Generated by `bench/experiment/seed_vs_grpo.py` (%s); every run starts from the "
             "agent `%s`, trains every group of its env-step budget, and its "
             "final checkpoint is evaluated greedily, with no skill in the prompt, on %s. "
             "Seeds are job seeds %s%s. Per env: %s." % (
                 time.strftime("%Y-%m-%d"), a.agent, what,
                 ", ".join(str(k) for k in range(a.seeds)),
                 " (each its own pool, so the start row is per seed too)" if a.pool else "",
                 "; ".join(per_env)),
             "",
             "| env | mode | %s | runs | RL steps/run | env steps/run | minutes/run |" %
             " | ".join("%s success" % x for x in cols),
             "|---|---|%s---|---|---|---|" % ("---|" * len(cols))]
    by = {}
    for r in results:
        by.setdefault((r["env"], r["mode"]), []).append(r)
    for env in a.envs:
        for mode in ["start"] + a.labels:
            rs = by.get((env, mode), [])
            if not rs:
                continue
            wall = sum(r["wall_s"] for r in rs) / len(rs) / 60
            steps = sum(r.get("steps", 0) for r in rs) / len(rs)
            env_steps = sum(r.get("env_steps", 0) for r in rs) / len(rs)
            lines.append("| %s | %s | %s | %d | %.1f | %.0f | %.1f |" % (
                env, mode if mode != "start" else "start (the agent, no RL)",
                " | ".join(split_cell(rs, x) for x in cols), len(rs), steps, env_steps, wall))
    lines += ["", "Per seed (%s success, start → each mode):" % " / ".join(cols), ""]
    for env in a.envs:
        for seed in range(a.seeds):
            row = []
            for mode in ["start"] + a.labels:
                r = [x for x in by.get((env, mode), []) if x["seed"] == seed]
                if r:
                    row.append("%s %s" % (mode, " / ".join(
                        "%.3f" % r[0][x]["success"] if x in r[0] else "—" for x in cols)))
            if row:
                lines.append("- %s, seed %d: %s" % (env, seed, ", ".join(row)))
    lines += ["", "## The paper's claims on these numbers (%s)" % ", ".join(a.envs), ""]
    seeds = [label for label, mode, _ in a.specs if mode == "seed"]
    for env, label in [(e, x) for e in a.envs for x in seeds]:
        g, s = by.get((env, "grpo"), []), by.get((env, label), [])
        if not g or not s:
            continue
        parts = []
        for split in cols:
            gx, sx = [r for r in g if split in r], [r for r in s if split in r]
            if not gx or not sx:
                continue
            gm, gs = mean_std([r[split]["success"] for r in gx])
            sm, ss = mean_std([r[split]["success"] for r in sx])
            parts.append("%s success %.3f ± %.3f vs %.3f ± %.3f (%s; %s)" % (
                split, sm, ss, gm, gs, verdict(sm, ss, gm, gs), paired(gx, sx, split, label)))
        lines.append("- **%s, %s beats grpo at equal env steps:** %s." % (env, label,
                                                                         "; ".join(parts)))
        if not any(r["curve"] for r in s):
            lines.append("- **%s, %s reaches grpo's final success with at most 60%% of the "
                         "env steps:** not measured (no periodic evaluation: --eval-every 0)."
                         % (env, label))
        else:
            lines.append("- **%s, %s reaches grpo's final %s success with at most 60%% of the "
                         "env steps:** %s (periodic evaluation every %d RL steps)." % (
                             env, label, first,
                             reach_claim(g, s, by.get((env, "start"), []), first,
                                         budget(a, env)),
                             a.eval_every))
    for env in a.envs:
        if by.get((env, "grpo")) and any(by.get((env, x)) for x in seeds):
            lines.append("- **%s, no skill at inference:** every number above is measured "
                         "without a skill in the prompt (`seedctl eval`)." % env)
    lines += ["", "Curves (periodic evaluation and rolling training success against env "
              "steps and wall time): " + ", ".join("`%s`" % p for e in a.envs
                                                   for p in a.pngs.get(e, [])), ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--envs", default="sokoban")
    ap.add_argument("--modes", default="grpo,skill_prompt,static_skills,seed")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--pool", type=int, default=8)
    ap.add_argument("--env-steps", type=int, default=1200)
    ap.add_argument("--eval-episodes", type=int, default=24)
    ap.add_argument("--eval-episodes-train", type=int, default=8)
    ap.add_argument("--eval-every", type=int, default=2)
    ap.add_argument("--runs", default=os.path.join(REPO, "runs", "experiment"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "RESULTS.md"))
    ap.add_argument("--timeout-min", type=float, default=20)
    # below Linux's ephemeral range (32768-60999): a port there can be taken by any
    # outgoing connection, and a run's launch then fails to bind
    ap.add_argument("--base-port", type=int, default=26000)
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: write the report of the runs RUNS/results.jsonl holds")
    ap.add_argument("overrides", nargs="*")
    a = ap.parse_intermixed_args()
    env_specs = [parse_env(x) for x in a.envs.split(",")]
    a.envs = [e for e, _ in env_specs]
    a.env_extra = dict(env_specs)
    if len(set(a.envs)) != len(a.envs):
        sys.exit("seed_vs_grpo: --envs names an env twice: %s" % ",".join(a.envs))
    a.agent_sha = agent_sha(a.agent)
    a.specs = [parse_mode(x) for x in a.modes.split(",")]
    a.labels = [x[0] for x in a.specs]
    if len(set(a.labels)) != len(a.labels):
        sys.exit("seed_vs_grpo: --modes names a mode twice: %s" % a.modes)
    os.makedirs(a.runs, exist_ok=True)
    done_path = os.path.join(a.runs, "results.jsonl")
    results = []
    if os.path.exists(done_path):
        results = [json.loads(x) for x in open(done_path) if x.strip()]
    for r in results:  # one pool size per runs dir: its rows would not share columns
        if r.get("pool_size", 0) != a.pool:
            sys.exit("seed_vs_grpo: %s holds %s %s seed %d run with --pool %d, not %d; use "
                     "another --runs dir" % (done_path, r["env"], r["mode"], r["seed"],
                                             r.get("pool_size", 0), a.pool))
        if r["env"] not in a.env_extra:
            continue
        spec = [x for x in a.specs if x[0] == r["mode"]]
        want = a.overrides + a.env_extra[r["env"]] + (spec[0][2] if spec else [])
        if (spec or r["mode"] == "start") and "overrides" in r and r["overrides"] != want:
            sys.exit("seed_vs_grpo: %s holds %s %s seed %d run with overrides %s, not %s; use "
                     "another --runs dir or another mode name" % (
                         done_path, r["env"], r["mode"], r["seed"], " ".join(r["overrides"]),
                         " ".join(want)))
        if not a.report_only and r.get("agent_sha256", a.agent_sha) != a.agent_sha:
            sys.exit("seed_vs_grpo: %s holds %s %s seed %d run from another agent (weights "
                     "sha256 %s, not %s's %s); use another --runs dir" % (
                         done_path, r["env"], r["mode"], r["seed"], r["agent_sha256"][:12],
                         a.agent, a.agent_sha[:12]))
    done = {(r["env"], r["mode"], r["seed"]) for r in results}
    if not a.report_only:
        backfill(a, results, done_path)
    for env in a.envs:  # the agent before RL, evaluated the same way (each seed's pool)
        for seed in range(a.seeds if a.pool > 0 else 1):
            if (env, "start", seed) in done or a.report_only:
                continue
            r = eval_start(a, env, seed)
            results.append(r)
            with open(done_path, "a") as f:
                f.write(json.dumps(r) + "\n")
            print("%-10s %-14s seed %d: %s" % (env, "start (no RL)", seed,
                                               successes(r, splits(a))), flush=True)
    failed = [] if a.report_only else run_all(a, results, done, done_path)
    out_dir = os.path.dirname(os.path.abspath(a.out))
    a.pngs = {}
    for env in a.envs:  # the modes asked for; seedctl plot overlays at most PLOT_MAX runs
        runs = [r["run_dir"] for r in results
                if r["env"] == env and r["run_dir"] and r["mode"] in a.labels]
        for i in range(0, len(runs), PLOT_MAX):
            png = "results_%s%s.png" % (env, "_%d" % (i // PLOT_MAX + 1) if i else "")
            subprocess.run([os.path.join(a.build, "bin", "seedctl"), "plot"] +
                           runs[i:i + PLOT_MAX] + ["-o", os.path.join(out_dir, png)], check=True)
            a.pngs.setdefault(env, []).append(png)
    text = report(a, results)
    if failed:
        text += ("\n\nRuns that failed (not in the table; the same command reruns them):\n" +
                 "".join("- %s\n" % x for x in failed))
    write_section(a.out, a.envs, text)
    print(text)
    if failed:
        sys.exit("seed_vs_grpo: %d run(s) failed" % len(failed))


def write_section(path, envs, text):
    """Put the report between the markers of this set of envs in path (appended when they
    are missing), so the rest of the file (the other measurements, the experiments on
    other envs) stays as it is."""
    tag = "seed_vs_grpo %s" % ",".join(envs)
    begin, end = "<!-- %s: begin -->" % tag, "<!-- %s: end -->" % tag
    old = open(path).read() if os.path.exists(path) else ""
    block = begin + "\n" + text.rstrip("\n") + "\n" + end + "\n"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + block + rest.split(end, 1)[1].lstrip("\n")
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + block
    with open(path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    sys.exit(main())
