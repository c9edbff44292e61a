"""seed_vs_grpo.py's claims, on rows shaped as its results.jsonl holds them.

The 60% claim ("seed reaches grpo's final success with at most 60% of the env steps") is
tested seed by seed: a seed's run against the grpo run of the same job seed (the same
pool). A pool where grpo ended at or below the start has nothing to reach; before this
test such a seed counted as "reached" at the run's first evaluation (grpo's mean over
seeds against one seed's pool, which started above it).

The first claim is also tested paired by job seed (paired): the difference seed - grpo per
seed, its 95% t interval and the count of seeds higher, lower and equal.

The report's table has a column per split (pool, seen, unseen with a pool); rows written
before the seen split was evaluated show "—" there, or the count of runs that have it.

usage: test_claims.py BENCH_EXPERIMENT_DIR
"""
import importlib.util
import json
import os
import sys
import tempfile


def load(d):
    spec = importlib.util.spec_from_file_location("seed_vs_grpo",
                                                  os.path.join(d, "seed_vs_grpo.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def row(mode, seed, pool, curve=(), budget=1000):
    return {"mode": mode, "seed": seed, "pool": {"success": pool}, "curve": list(curve),
            "budget": budget}


def main():
    m = load(sys.argv[1])
    fails = []

    def check(cond, what):
        if not cond:
            fails.append(what)

    start = [row("start", 0, 0.75), row("start", 1, 0.5), row("start", 2, 0.5)]
    grpo = [row("grpo", 0, 0.75), row("grpo", 1, 0.75), row("grpo", 2, 0.625)]
    # seed 0: its pool starts at grpo's final (nothing to reach);
    # seed 1: reaches 0.75 at 500 of 1000 env steps; seed 2: never reaches 0.625
    seed = [row("seed", 0, 0.75, [(50, 0.75), (1000, 0.75)]),
            row("seed", 1, 0.75, [(0, 0.5), (300, 0.625), (500, 0.75), (1000, 0.75)]),
            row("seed", 2, 0.5, [(0, 0.5), (500, 0.5), (1000, 0.5)])]
    out = m.reach_claim(grpo, seed, start, "pool", 1000)
    check("on the 2 seeds where grpo gained on its pool, reached by 1 (seed 1 at 50% of the "
          "budget)" in out, "seed 1 reached at 50%, seed 2 missed: " + out)
    check("grpo ended at or below the start on seed 0, nothing to reach" in out,
          "seed 0 counted apart: " + out)
    check("seed 0 at" not in out, "a pool that started at grpo's final is not 'reached': " + out)

    # grpo gained nowhere: the claim cannot be tested
    flat = [row("grpo", 0, 0.75), row("grpo", 1, 0.5), row("grpo", 2, 0.375)]
    out = m.reach_claim(flat, seed, start, "pool", 1000)
    check(out.startswith("not testable: grpo gained on no seed's pool"), out)
    check("seeds 0, 1, 2, nothing to reach" in out, out)

    # without a start row (an older runs dir) every seed is held to its grpo run; the
    # run's own budget is the denominator
    seed_b = [row("seed", 1, 0.75, [(0, 0.5), (600, 0.75)], budget=2000)]
    out = m.reach_claim(grpo, seed_b, [], "pool", 1000)
    check(out == "on the 1 seed where grpo gained on its pool, reached by 1 (seed 1 at 30% of "
          "the budget)", out)
    # a seed with no grpo run of its own is left out
    out = m.reach_claim(grpo[:1], seed[1:2], start, "pool", 1000)
    check(out == "not testable: grpo gained on no seed's pool", out)

    # paired by seed: seed 2's grpo run is missing, so 2 pairs of 3 seed runs count
    g2 = [row("grpo", 0, 0.25), row("grpo", 1, 0.5)]
    s3 = [row("seed", 0, 0.5), row("seed", 1, 0.625), row("seed", 2, 0.0)]
    out = m.paired(g2, s3, "pool", "seed-x")
    # differences +0.25, +0.125: mean 0.1875, sd 0.0884, t(1) 12.706 -> half 0.794
    check(out.startswith("paired by seed over 2 seeds: difference +0.188, 95% interval "
                         "[-0.607, +0.982], higher on 2, lower on 0, equal on 0: no clear "
                         "difference"), out)
    # six seeds all ahead by about 0.1: the interval leaves out 0
    g6 = [row("grpo", k, 0.25) for k in range(6)]
    s6 = [row("seed", k, 0.25 + 0.1 + 0.01 * k) for k in range(6)]
    out = m.paired(g6, s6, "pool", "seed-x")
    check(out.endswith("higher on 6, lower on 0, equal on 0: seed-x higher"), out)
    out = m.paired(s6, g6, "pool", "seed-x")  # the other way round
    check(out.endswith("higher on 0, lower on 6, equal on 0: grpo higher"), out)
    # a tie is counted as equal, and one pair is too few for an interval
    out = m.paired(g6[:1], [row("seed", 0, 0.25)], "pool")
    check(out == "paired by seed: 1 pair(s), too few", out)
    out = m.paired(g6[:3], [row("seed", k, 0.25 + 0.125 * (k - 1)) for k in range(3)], "pool")
    check("higher on 1, lower on 1, equal on 1: no clear difference" in out, out)

    # the report: a column per split; a mode none of whose rows has the seen split gets
    # "—", one where some do names how many; the claims skip a split a side lacks
    import argparse
    a = argparse.Namespace(pool=8, envs=["household"], env_extra={"household": []},
                           labels=["grpo", "seed"], specs=[("grpo", "grpo", []),
                                                          ("seed", "seed", [])],
                           seeds=2, eval_episodes=24, agent="AGENT", env_steps=1600,
                           eval_every=2, pngs={})

    def full(mode, seed, pool, seen, unseen):
        r = {"env": "household", "mode": mode, "seed": seed, "wall_s": 60.0, "curve": [],
             "pool": {"success": pool}, "unseen": {"success": unseen}, "budget": 1600}
        if seen is not None:
            r["seen"] = {"success": seen}
        return r
    rows = [full("start", 0, 0.25, None, 0.0), full("start", 1, 0.0, None, 0.0),
            full("grpo", 0, 0.5, 0.25, 0.125), full("grpo", 1, 0.25, None, 0.125),
            full("seed", 0, 0.5, 0.375, 0.25), full("seed", 1, 0.375, 0.25, 0.125)]
    text = m.report(a, rows)
    check("| env | mode | pool success | seen success | unseen success | runs |" in text,
          "the table's header has a column per split:\n" + text)
    check("| household | start (the agent, no RL) | 0.125 ± 0.177 | — | 0.000 ± 0.000 | 2 |"
          in text, "start has no seen split:\n" + text)
    check("| household | grpo | 0.375 ± 0.177 | 0.250 ± 0.000 (1 runs) | 0.125 ± 0.000 | 2 |"
          in text, "grpo's seen split from one run of two:\n" + text)
    check("- household, seed 1: start 0.000 / — / 0.000, grpo 0.250 / — / 0.125, seed 0.375 / "
          "0.250 / 0.125" in text, "per-seed line:\n" + text)
    check("seen success 0.312 ± 0.088 vs 0.250 ± 0.000" in text and
          "paired by seed: 1 pair(s), too few" in text, "the seen claim pairs seed 0 only:\n"
          + text)

    # a failed run is reported and the others go on (it stopped the whole experiment)
    tmp = tempfile.TemporaryDirectory(prefix="claims_")
    done_path = os.path.join(tmp.name, "results.jsonl")
    a.base_port = 20000
    ran = []

    def run(a_, env, spec, seed, port):
        ran.append((spec[0], seed))
        if (spec[0], seed) == ("grpo", 0):
            raise RuntimeError("exp-household-grpo-s0: seedctl launch exited 1")
        return full(spec[0], seed, 0.5, 0.25, 0.125)
    got, done = [], {("household", "seed", 1)}
    failed = m.run_all(a, got, done, done_path, run)
    check(ran == [("grpo", 0), ("seed", 0), ("grpo", 1)], "runs after a failure: %s" % ran)
    check(failed == ["household grpo seed 0: exp-household-grpo-s0: seedctl launch exited 1"],
          "the failure reported: %s" % failed)
    kept = [(r["mode"], r["seed"]) for r in map(json.loads, open(done_path))]
    check(kept == [("seed", 0), ("grpo", 1)] and len(got) == 2,
          "results.jsonl holds the runs that finished: %s" % kept)
    tmp.cleanup()

    for f in fails:
        print("FAIL:", f)
    print("experiment_claims: %s" % ("%d failed" % len(fails) if fails else "all checks passed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
