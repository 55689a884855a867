#!/usr/bin/env python3
"""Runs Kernel Tuner 1.5.0's search strategies in simulation mode on recorded spaces
(Kernel Tuner cache files) and reports the mean fraction of the optimum reached (true best
time / best time found; 1.0 = optimum) after 50, 100, 200, 500 and 1000 evaluations, in the
same CSV format as tune's bench (`cargo bench -p tune-runtime --bench simulate`).

The space of each file is exactly the set of recorded configurations, failed ones included
(a failure counts as an evaluation), as in tune's simulation. Each strategy runs once per
budget with `max_fevals = budget`, with Python's and NumPy's random generators seeded.

usage: run_kernel_tuner.py DATA_DIR OUT.csv [--seeds N] [--slow-seeds N] [--slow-max-budget B]
                           [--jobs J] [--strategies a,b,...]

bayes_opt takes minutes per run at large budgets: it runs with --slow-seeds seeds and only
for budgets up to --slow-max-budget.
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
STRATEGIES = [
    "random_sample",
    "genetic_algorithm",
    "simulated_annealing",
    "pso",
    "firefly_algorithm",
    "greedy_ils",
    "mls",
    "diff_evo",
    "dual_annealing",
    "basinhopping",
    "bayes_opt",
]

_loaded = {}


def load(path):
    """The cache as a dict, a decompressed copy Kernel Tuner can read, and the optimum."""
    if path in _loaded:
        return _loaded[path]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    fd, copy = tempfile.mkstemp(suffix=".json", prefix="kt_sim_")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
    times = [r["time"] for r in doc["cache"].values() if isinstance(r.get("time"), (int, float))]
    keys = doc["tune_params_keys"]
    recorded = set(tuple(r[k] for k in keys) for r in doc["cache"].values())
    _loaded[path] = (doc, copy, min(times), recorded)
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
    path, strategy, budget, seed = job
    import numpy as np
    from constraint import FunctionConstraint
    from kernel_tuner import tune_kernel

    doc, copy, optimum, recorded = load(path)
    keys = doc["tune_params_keys"]
    patch_kernel_tuner()

    def member(*values):
        return values in recorded

    random.seed(seed)
    np.random.seed(seed)
    size = doc["problem_size"]
    size = tuple(size) if isinstance(size, list) else (size,)
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
                strategy_options={"max_fevals": budget},
                quiet=True,
                verbose=False,
            )
        except Exception as e:  # a strategy that crashes scores what it has (nothing)
            print(f"{strategy} on {path} (budget {budget}, seed {seed}) failed: {e!r}", file=sys.stderr)
            results = []
    secs = time.time() - t0
    seen = set()
    best = None
    for r in results:
        key = tuple(r.get(k) for k in keys)
        if key in seen:
            continue
        if len(seen) >= budget:
            break
        seen.add(key)
        t = r.get("time")
        if isinstance(t, (int, float)) and "__error__" not in r and (best is None or t < best):
            best = t
    frac = optimum / best if best else 0.0
    return (path, strategy, budget, seed, min(frac, 1.0), secs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--slow-seeds", type=int, default=None, help="seeds for bayes_opt")
    ap.add_argument("--slow-max-budget", type=int, default=100, help="largest budget for bayes_opt")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    args = ap.parse_args()
    files = []
    for root, _, names in os.walk(args.data):
        for n in sorted(names):
            if n.endswith(".json") or n.endswith(".json.gz"):
                p = os.path.join(root, n)
                opener = gzip.open if p.endswith(".gz") else open
                with opener(p, "rt") as f:
                    head = json.load(f)
                if "tune_params" in head and "cache" in head:
                    files.append(p)
                else:
                    print(f"skipping {p}: not a Kernel Tuner cache file", file=sys.stderr)
    files.sort()
    strategies = args.strategies.split(",")
    slow = args.slow_seeds if args.slow_seeds is not None else args.seeds
    jobs = [
        (f, s, b, seed)
        for f in files
        for s in strategies
        for b in BUDGETS
        for seed in range(slow if s == "bayes_opt" else args.seeds)
        if s != "bayes_opt" or b <= args.slow_max_budget
    ]
    # Longest first, for a better spread over the workers.
    jobs.sort(key=lambda j: -j[2])
    t0 = time.time()
    with mp.Pool(args.jobs) as pool:
        out = pool.map(run_one, jobs, chunksize=1)
    wall = time.time() - t0
    agg = {}
    for path, s, b, seed, frac, secs in out:
        a = agg.setdefault((path, s, b), [0.0, 0, 0.0])
        a[0] += frac
        a[1] += 1
        a[2] += secs
    with open(args.out, "w") as f:
        f.write("tool,technique,space,budget,mean_fraction,seeds,wall_s\n")
        for (path, s, b), (tot, n, secs) in sorted(agg.items()):
            rel = os.path.relpath(path, args.data)
            f.write(f"kernel_tuner,{s},{rel},{b},{tot / n:.6f},{n},{wall:.1f}\n")
    print(f"kernel_tuner: {len(jobs)} runs in {wall:.1f} s; wrote {args.out}", file=sys.stderr)
    for s in strategies:
        per = []
        for b in BUDGETS:
            v = [a[0] / a[1] for (p, s2, b2), a in agg.items() if s2 == s and b2 == b]
            per.append(f"{sum(v) / len(v):.3f}" if len(v) == len(files) else "-")
        print(s, " ".join(per), file=sys.stderr)


if __name__ == "__main__":
    main()
