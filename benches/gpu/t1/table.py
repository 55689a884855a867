"""The tables of run.sh from the summary lines (JSON files) of tune_summary.py and kt_t1.py:
one row per run, then per tool, strategy and budget the mean and standard error (of the
mean, over the runs) of the evaluations per second and the best time found.

Usage: python3 table.py SUMMARY.json..."""
import json, math, sys

runs = []
print("| tool | strategy | budget | seed | evaluated (valid) | wall s | evaluations/s | setup s | search s | remeasure s | compile s (sum) | benchmark s | best ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for p in sys.argv[1:]:
    try:
        s = json.load(open(p))
    except Exception as e:
        print(f"| {p} | failed to read: {e} |||||||||||")
        continue
    f = lambda k, fmt: (fmt.format(s[k]) if isinstance(s.get(k), (int, float)) else "-")
    strategy = s["strategy"] + (f" ({s['technique']})" if s.get("technique") and s["technique"] != s["strategy"] else "")
    print(f"| {s['tool']} | {strategy} | {s['budget']} | {s['seed']} | {s['evaluated']} ({s['valid']}) | "
          f"{f('wall_s', '{:.1f}')} | {f('evals_per_s', '{:.2f}')} | {f('setup_s', '{:.1f}')} | {f('search_s', '{:.1f}')} | "
          f"{f('remeasure_s', '{:.1f}')} | {f('compile_s', '{:.1f}')} | {f('benchmark_s', '{:.2f}')} | {f('best_ms', '{:.4f}')} |")
    runs.append(s)


def mean_se(v):
    if not v:
        return "-"
    m = sum(v) / len(v)
    if len(v) < 2:
        return f"{m:.4g}"
    se = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v))
    return f"{m:.4g} ± {se:.2g}"


print()
print("| tool | strategy | budget | runs | evaluations/s (mean ± s.e.) | best ms (mean ± s.e.) |")
print("|---|---|---|---|---|---|")
groups = {}
for s in runs:
    groups.setdefault((s["tool"], s["strategy"], s["budget"]), []).append(s)
for (tool, strategy, budget), ss in sorted(groups.items()):
    eps = [s["evals_per_s"] for s in ss if isinstance(s.get("evals_per_s"), (int, float))]
    best = [s["best_ms"] for s in ss if isinstance(s.get("best_ms"), (int, float))]
    print(f"| {tool} | {strategy} | {budget} | {len(ss)} | {mean_se(eps)} | {mean_se(best)} |")
