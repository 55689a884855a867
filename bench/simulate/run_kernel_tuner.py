#!/usr/bin/env python3
"""Runs Kernel Tuner's search strategies in simulation mode on recorded spaces (Kernel Tuner
cache files) and writes one trajectory per run as JSON lines, the format tune's bench
writes (`cargo bench -p tune-runtime --bench simulate -- trajectories ...`):

    {"tool": "kernel_tuner", "technique": S, "space": REL_PATH, "seed": N, "budget": B,
     "evals": [[time_ms or null, charged_ms], ...]}

`evals` lists the distinct configurations in the order they were first evaluated (failures
included, as `null`), with the recorded `compile_time + verification_time + benchmark_time`
each one costs on the simulated clock (what Kernel Tuner's simulation runner charges).
`budget` is the `max_fevals` the run was given.

Strategies whose behaviour does not depend on the budget run once per seed with the largest
budget; every smaller budget is read from the start of that trajectory. Budget-aware ones
(`simulated_annealing` scales its schedule to `max_fevals`) run once per budget.

usage: run_kernel_tuner.py DATA_DIR OUT.jsonl [--seeds N] [--first-seed S] [--jobs J]
                           [--strategies a,b,...] [--budgets 50,100,...] [--files a,b]

The output is appended to, so seeds can be added by later calls (--first-seed).
"""

import argparse
import gzip
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
import warnings

BUDGETS = [50, 100, 200, 500, 1000]
# Every strategy of Kernel Tuner 1.5.0 that needs no optional package (skopt and
# pyatf_strategies need scikit-optimize / pyatf) and is a search (not brute_force).
STRATEGIES = [
    "random_sample",
    "genetic_algorithm",
    "simulated_annealing",
    "pso",
    "firefly_algorithm",
    "greedy_ils",
    "greedy_mls",
    "ordered_greedy_mls",
    "mls",
    "diff_evo",
    "dual_annealing",
    "basinhopping",
    "minimize",
    "hybrid_vndx",
    "adaptive_tabu_greywolf",
    "bayes_opt",
]
# Strategies that plan with `max_fevals`: one run per budget.
BUDGET_AWARE = {"simulated_annealing"}
# Seconds to minutes per run at large budgets (a model refitted on every evaluation): only
# up to this budget.
SLOW = {"bayes_opt": 100, "hybrid_vndx": 200}

_loaded = {}


def load(path):
    """The cache as a dict, a decompressed copy Kernel Tuner can read, and the recorded set."""
    if path in _loaded:
        return _loaded[path]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    fd, copy = tempfile.mkstemp(suffix=".json", prefix="kt_sim_")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
    keys = doc["tune_params_keys"]
    recorded = {}
    for r in doc["cache"].values():
        charged = sum(
            float(r.get(k) or 0.0) if isinstance(r.get(k), (int, float)) else 0.0
            for k in ("compile_time", "verification_time", "benchmark_time")
        )
        t = r.get("time")
        recorded[tuple(r[k] for k in keys)] = (t if isinstance(t, (int, float)) else None, charged)
    _loaded[path] = (doc, copy, recorded)
    return _loaded[path]


def patch_kernel_tuner():
    """Memoises, per worker process, the parsed cache file, which Kernel Tuner re-reads on
    every call (seconds for the larger files). The search space is not shared between runs:
    strategies keep state in it."""
    import kernel_tuner.interface as kti
    import kernel_tuner.util as ktu

    if getattr(kti, "_tune_sim_patched", False):
        return
    kti._tune_sim_patched = True
    read_cache = ktu.read_cache
    caches = {}

    def cached_read(cachefile, open_cache=True):
        if cachefile not in caches:
            caches[cachefile] = read_cache(cachefile, open_cache=False)
        return caches[cachefile]

    ktu.read_cache = cached_read


def run_one(job):
    path, rel, strategy, budget, seed = job
    import numpy as np
    from constraint import FunctionConstraint
    from kernel_tuner import tune_kernel

    doc, copy, recorded = load(path)
    keys = doc["tune_params_keys"]
    patch_kernel_tuner()

    def member(*values):
        return values in recorded

    random.seed(seed)
    np.random.seed(seed)
    size = doc.get("problem_size", 1)
    size = tuple(size) if isinstance(size, list) else (size,)
    # Every strategy with its default options, stopped by Kernel Tuner's own criterion
    # (`max_fevals`: distinct configurations). The two generated strategies' `budget` option
    # counts repeated proposals too and stays at its default (5000), as a user runs them.
    options = {"max_fevals": budget}
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            results, _ = tune_kernel(
                doc["kernel_name"],
                "",
                size,
                [],
                {k: doc["tune_params"][k] for k in keys},
                restrictions=[FunctionConstraint(member)],
                cache=copy,
                simulation_mode=True,
                strategy=strategy,
                strategy_options=options,
                quiet=True,
                verbose=False,
            )
        except Exception as e:  # a strategy that crashes scores what it has (nothing)
            print(f"{strategy} on {rel} (budget {budget}, seed {seed}) failed: {e!r}", file=sys.stderr)
            results = []
    secs = time.time() - t0
    seen = set()
    evals = []
    for r in results:
        key = tuple(r.get(k) for k in keys)
        if key in seen or key not in recorded:
            continue
        if len(seen) >= budget:
            break
        seen.add(key)
        evals.append(list(recorded[key]))
    return {
        "tool": "kernel_tuner",
        "technique": strategy,
        "space": rel,
        "seed": seed,
        "budget": budget,
        "wall_s": round(secs, 3),
        "evals": evals,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--files", default="", help="comma-separated paths relative to DATA")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    files = []
    for root, _, names in os.walk(args.data):
        for n in sorted(names):
            if n.endswith(".json") or n.endswith(".json.gz"):
                p = os.path.join(root, n)
                opener = gzip.open if p.endswith(".gz") else open
                with opener(p, "rt") as f:
                    head = json.load(f)
                if "tune_params" in head and "cache" in head:
                    files.append((p, os.path.relpath(p, args.data)))
                else:
                    print(f"skipping {p}: not a Kernel Tuner cache file", file=sys.stderr)
    if args.files:
        wanted = set(args.files.split(","))
        files = [f for f in files if f[1] in wanted]
    files.sort()
    strategies = args.strategies.split(",")
    jobs = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for p, rel in files:
            for s in strategies:
                if s in BUDGET_AWARE:
                    runs = budgets
                elif s in SLOW:
                    runs = [min(max(budgets), SLOW[s])]
                else:
                    runs = [max(budgets)]
                jobs.extend((p, rel, s, b, seed) for b in runs)
    # Runs already in the output (an interrupted run is resumed, not repeated).
    if os.path.exists(args.out):
        have = set()
        with open(args.out) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a line cut short by the interruption
                have.add((r["space"], r["technique"], r["budget"], r["seed"]))
        jobs = [j for j in jobs if (j[1], j[2], j[3], j[4]) not in have]
        print(f"kernel_tuner: {len(have)} runs already in {args.out}", file=sys.stderr)
    t0 = time.time()
    done = 0
    # Seeds in order, so that an interrupted run leaves complete seeds behind.
    with mp.Pool(args.jobs) as pool, open(args.out, "a") as out:
        for r in pool.imap(run_one, jobs, chunksize=1):
            out.write(json.dumps(r, separators=(",", ":")) + "\n")
            out.flush()
            done += 1
            if done % 50 == 0:
                print(f"kernel_tuner: {done}/{len(jobs)} runs, {time.time() - t0:.0f} s", file=sys.stderr)
    print(f"kernel_tuner: {len(jobs)} runs in {time.time() - t0:.1f} s; wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
