#!/usr/bin/env python3
"""Computes the performance score of AutoTuningAssociation's autotuning_methodology (the
Python package, 1.1.0) on the same traces as tune's `score` module, to check that the two
agree.

The package's own objects do the computing: `SearchspaceStatistics` (cut-offs, time per
evaluation), `RandomSearchCalculatedBaseline` (the calculated random-search baseline) and
`StochasticOptimizationAlgorithm.get_curve_over_time` (the bagged isotonic fit of a
technique's runs), then `get_standardised_curves` and the mean, as in
`report_experiments.get_strategy_scores`. Only the loading is bypassed: the statistics and
the runs' arrays are filled from our inputs instead of T4 files, with the evaluation time of
a configuration being `compile_time + verification_time + benchmark_time` (seconds), the
same time the simulated clock charges.

usage:
  score_check.py fixed                      # the small fixed case of tune's unit test
  score_check.py traces DATA TRAJ.jsonl... [--csv OUT.csv] [--bagging-seeds N]
      # every (technique, space) of the trajectory files (tune's and Kernel Tuner's)
"""

import argparse
import gzip
import json
import os
import sys
import warnings
from collections import defaultdict

import numpy as np

warnings.simplefilter("ignore")

from autotuning_methodology.baseline import RandomSearchCalculatedBaseline  # noqa: E402
from autotuning_methodology.curves import StochasticOptimizationAlgorithm  # noqa: E402
from autotuning_methodology.searchspace_statistics import SearchspaceStatistics  # noqa: E402

CUTOFF_START, CUTOFF_END, RESOLUTION, CONFIDENCE = 0.01, 0.95, 1000, 0.95


def stats_of(configs):
    """SearchspaceStatistics from [(cost or None, seconds)], as `_load` would fill it."""
    s = object.__new__(SearchspaceStatistics)
    s.minimization = True
    s.size = len(configs)
    perf = np.array([np.nan if c is None else c for c, _ in configs], dtype=float)
    times = np.array([t for _, t in configs], dtype=float)
    s.objective_performances_total = perf
    s.objective_times_total = times
    s.objective_times = {}
    s.objective_times_total_sorted = np.sort(times[~np.isnan(times)])
    mask = np.isnan(perf)
    s.objective_performances_total_sorted = np.sort(perf[~mask])
    s.objective_performances_total_sorted_nan = np.concatenate(
        (s.objective_performances_total_sorted, [np.nan] * int(np.count_nonzero(mask)))
    )
    return s


def curve_of(runs):
    """A StochasticOptimizationAlgorithm whose arrays hold the runs, as `runner` fills them:
    cumulative time and best-so-far per evaluation (NaN until the first valid one)."""
    c = object.__new__(StochasticOptimizationAlgorithm)
    c.name = c.display_name = c.device_name = c.application_name = "x"
    c.stochastic = True
    c.minimization = True
    n = max(len(r) for r in runs)
    x_time = np.full((n, len(runs)), np.nan)
    y = np.full((n, len(runs)), np.nan)
    for j, run in enumerate(runs):
        best = np.nan
        for i, (t, cost) in enumerate(run):
            x_time[i, j] = t
            if cost is not None:
                best = cost if np.isnan(best) else min(best, cost)
            y[i, j] = best
    c._x_time = x_time
    c._y = y
    return c


def package_score(configs, runs, bagging_seed=0):
    stats = stats_of(configs)
    fs, fe, ts, te = stats.cutoff_point_fevals_time_start_end(CUTOFF_START, CUTOFF_END)
    time_range = np.linspace(start=ts, stop=te, num=RESOLUTION)
    baseline = RandomSearchCalculatedBaseline(stats)
    np.random.seed(bagging_seed)
    parts = curve_of(runs).get_curve_over_time(
        time_range, dist=stats.objective_performances_total_sorted, confidence_level=CONFIDENCE
    )
    real, fictional = parts[2], parts[6]
    curve = np.concatenate([real, fictional]) if parts[5].ndim > 0 else real
    (p,) = baseline.get_standardised_curves(time_range, [curve], x_type="time")
    return float(np.mean(p))


def fixed_case():
    """The fixed case of tune-runtime/src/score/tests.rs (keep the two in step)."""
    # 401 configurations: cost 1 + ((7919 k) mod 401) / 10 ms, every ninth one failed;
    # evaluation time 0.5 + (k mod 5) / 10 s.
    n = 401
    configs = []
    for k in range(n):
        cost = None if k % 9 == 4 else 1.0 + ((7919 * k) % n) / 10.0
        configs.append((cost, 0.5 + (k % 5) / 10.0))
    # 25 runs of 150 evaluations, run r visiting k = (13 r + i (r + 2)) mod 401.
    runs = []
    for r in range(25):
        t, run = 0.0, []
        for i in range(150):
            cost, secs = configs[(13 * r + i * (r + 2)) % n]
            t += secs
            run.append((t, cost))
        runs.append(run)
    return configs, runs


def load_space(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    configs = []
    for r in doc["cache"].values():
        t = r.get("time")
        secs = sum(
            float(r[k]) for k in ("compile_time", "verification_time", "benchmark_time")
            if isinstance(r.get(k), (int, float))
        ) / 1000.0
        configs.append((float(t) if isinstance(t, (int, float)) else None, secs))
    return configs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["fixed", "traces"])
    ap.add_argument("data", nargs="?")
    ap.add_argument("trajectories", nargs="*")
    ap.add_argument("--csv")
    ap.add_argument("--bagging-seeds", type=int, default=3)
    ap.add_argument("--compare", help="tune's scores (report's .scores.csv) to compare with")
    ap.add_argument("--max-budget-only", action="store_true", default=True)
    ap.add_argument("--reuse", help="the package's scores from an earlier --csv, instead of computing them")
    args = ap.parse_args()
    if args.mode == "fixed":
        configs, runs = fixed_case()
        vals = [package_score(configs, runs, seed) for seed in range(args.bagging_seeds)]
        for seed, v in enumerate(vals):
            print(f"bagging seed {seed}: score {v:.6f}")
        print(f"mean over {len(vals)} bagging seeds: {np.mean(vals):.6f} (sd {np.std(vals):.6f})")
        return
    runs = defaultdict(list)
    for path in args.trajectories:
        for line in open(path):
            r = json.loads(line)
            steps, t = [], 0.0
            for cost, charged_ms in r["evals"]:
                t += charged_ms / 1000.0
                steps.append((t, cost))
            runs[(r["tool"], r["technique"], r["space"], r.get("budget"))].append(steps)
    # As tune's report: per (tool, technique, space) the runs of the largest budget.
    top = defaultdict(int)
    for (tool, tech, space, budget) in runs:
        top[(tool, tech, space)] = max(top[(tool, tech, space)], budget)
    runs = {k: v for k, v in runs.items() if k[3] == top[k[:3]]}
    spaces = {}
    rows = ["tool,technique,space,budget,runs,score_python,score_python_spread"]
    if args.reuse:
        rows = [line.rstrip("\n") for line in open(args.reuse)]
        runs = {}
    for (tool, tech, space, budget), rs in sorted(runs.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if space not in spaces:
            spaces[space] = load_space(os.path.join(args.data, space))
        vals = []
        try:
            for seed in range(args.bagging_seeds):
                vals.append(package_score(spaces[space], rs, seed))
        except Exception as e:  # the package refuses some run sets (e.g. too short)
            print(f"{tool} {tech} {space}: {e!r}"[:300], file=sys.stderr)
            continue
        rows.append(f"{tool},{tech},{space},{budget},{len(rs)},{np.mean(vals):.6f},{np.ptp(vals):.6f}")
        print(rows[-1], file=sys.stderr)
    text = "\n".join(rows) + "\n"
    if args.csv:
        open(args.csv, "w").write(text)
    else:
        print(text)
    if args.compare:
        import csv
        # Technique names may hold commas (`surrogate>bandit(1.0,100)`): split from both ends.
        def fields(line, tail):
            tool, rest = line.split(",", 1)
            parts = rest.rsplit(",", tail + 1)
            return [tool] + parts

        rust = {}
        for line in list(open(args.compare))[1:]:
            tool, tech, space, score = fields(line.rstrip("\n"), 1)
            rust[(tool, tech, space)] = float(score)
        diffs = []
        for line in rows[1:]:
            tool, tech, space, _, _, py, spread = fields(line, 4)
            if (tool, tech, space) in rust:
                diffs.append((abs(rust[(tool, tech, space)] - float(py)), tool, tech, space, rust[(tool, tech, space)], float(py), float(spread)))
        diffs.sort(reverse=True)
        d = np.array([x[0] for x in diffs])
        print(f"{len(d)} (technique, space) pairs: |tune - python| mean {d.mean():.4f}, median {np.median(d):.4f}, "
              f"max {d.max():.4f}; within 0.01: {np.mean(d < 0.01):.0%}; within 0.02: {np.mean(d < 0.02):.0%}")
        for x in diffs[:5]:
            print(f"  largest: {x[1]} {x[2]} {x[3]}: tune {x[4]:.4f}, python {x[5]:.4f} (python's own spread {x[6]:.4f})")
        per_space = defaultdict(list)
        for x in diffs:
            per_space[x[3]].append((x[0], x[6]))
        for space, v in sorted(per_space.items()):
            dv = np.array([a for a, _ in v])
            print(f"  {space}: |tune - python| mean {dv.mean():.4f}, max {dv.max():.4f}; "
                  f"python's own spread over bagging seeds: mean {np.mean([b for _, b in v]):.4f}")
        # The table of RESULTS.md: by kind of run. The MI50 space (a score range about one
        # evaluation long) and runs that stop long before the range ends are where the
        # package's bagged fit and tune's isotonic fit part; they are shown apart.
        budget = {}
        for line in rows[1:]:
            tool, tech, space, b, _, _, _ = fields(line, 4)
            budget[(tool, tech, space)] = int(b)
        mi50 = "convolution_milo_legacy/mi50.json.gz"
        by_key = {(x[1], x[2], x[3]): x for x in diffs}
        short = {k for k in by_key if budget.get(k, 0) < 1000 or k[1] == "minimize"}
        full = [k for k in by_key if k[2] != mi50 and k not in short]
        print("| check | pairs | mean | median | max | within 0.01 |")
        print("|---|---|---|---|---|---|")

        def row(name, keys):
            d = np.array([by_key[k][0] for k in keys])
            if len(d):
                print(f"| {name} | {len(d)} | {d.mean():.4f} | {np.median(d):.4f} | {d.max():.3f} | "
                      f"{np.mean(d < 0.01):.0%} ({np.mean(d < 0.02):.0%} within 0.02) |")

        row("tune's techniques that run to 1000 evaluations, 7 spaces", [k for k in full if k[0] == "tune"])
        row("Kernel Tuner's strategies that run to 1000 evaluations, 7 spaces", [k for k in full if k[0] != "tune"])
        row("the default and `bandit(4 arms)`, 7 spaces", [k for k in full if k[1] in ("hybrid", "bandit(4 arms)")])
        row("runs that stop early, 7 spaces", [k for k in short if k[2] != mi50])
        row("every pair on the MI50 space", [k for k in by_key if k[2] == mi50])
        # Aggregated per technique (mean over the 7 spaces), as the score is reported.
        agg = defaultdict(lambda: [[], []])
        for k in full:
            agg[k[:2]][0].append(by_key[k][4])
            agg[k[:2]][1].append(by_key[k][5])
        da = np.array([abs(np.mean(a) - np.mean(b)) for a, b in agg.values()])
        print(f"aggregated per technique over 7 spaces ({len(da)} full-budget techniques): "
              f"|tune - python| mean {da.mean():.4f}, max {da.max():.4f}, within 0.01: {np.sum(da < 0.01)}")


if __name__ == "__main__":
    main()
