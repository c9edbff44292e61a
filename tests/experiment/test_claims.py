"""seed_vs_grpo.py's claims, on rows shaped as its results.jsonl holds them.

The 60% claim ("seed reaches grpo's final success with at most 60% of the env steps") is
tested seed by seed: a seed's run against the grpo run of the same job seed (the same
pool). A pool where grpo ended at or below the start has nothing to reach; before this
test such a seed counted as "reached" at the run's first evaluation (grpo's mean over
seeds against one seed's pool, which started above it).

usage: test_claims.py BENCH_EXPERIMENT_DIR
"""
import importlib.util
import os
import sys


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

    for f in fails:
        print("FAIL:", f)
    print("experiment_claims: %s" % ("%d failed" % len(fails) if fails else "all checks passed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
