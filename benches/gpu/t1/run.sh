#!/usr/bin/env bash
# tune run vs Kernel Tuner's T1 runner on the same T1 file, GPU, strategy and budget:
# evaluations per second and best kernel time found. Prints a Markdown table and keeps the
# raw outputs (tune's log and T4, Kernel Tuner's results) in OUT.
#
#   TUNE=path/to/tune bash benches/gpu/t1/run.sh OUT [T1.json]
#
# Needs: a `tune` built with the `cuda` feature (cargo build --release -p tune-cli), CUDA's
# libnvrtc on LD_LIBRARY_PATH, and Python with kernel_tuner (1.5), numpy and the backend in
# KT_LANG (default cupy). Defaults: the convolution_milo T1 file of shared/data (the only one
# of the three whose kernel and arguments run as given), budgets BUDGETS (default 100),
# seeds SEEDS (default "0 1 2"), strategies random_sample (both tools: the same work) and
# each tool's default (tune: bandit; Kernel Tuner: its T1 default is the file's Search, here
# genetic_algorithm as in bench/gpu).
set -uo pipefail
out=${1:?usage: TUNE=... bash benches/gpu/t1/run.sh OUT [T1.json]}
here=$(cd "$(dirname "$0")" && pwd)
t1=${2:-$here/../../../../shared/data/t1/convolution_milo.json}
tune=${TUNE:-target/release/tune}
budgets=${BUDGETS:-100}
seeds=${SEEDS:-0 1 2}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$out/gpu.txt"
"$tune" devices | tee "$out/devices.txt"
"$tune" space "$t1" | tee "$out/space.txt"
rows=()
for budget in $budgets; do
  for seed in $seeds; do
    for pair in "random random_sample" "bandit genetic_algorithm"; do
      set -- $pair
      ours=$1 theirs=$2
      d="$out/tune_${ours}_b${budget}_s${seed}"
      t0=$(date +%s.%N)
      "$tune" run "$t1" --technique "$ours" --budget "$budget" --seed "$seed" --out "$d" > "$d.txt" 2>&1
      rc=$?
      t1w=$(date +%s.%N)
      log=$(ls "$d"/*.jsonl 2>/dev/null | head -1)
      python3 - "$log" "$t0" "$t1w" "$rc" "$ours" "$budget" "$seed" > "$d.json" <<'PY'
import json, sys
log, t0, t1, rc, tech, budget, seed = sys.argv[1:]
recs = [json.loads(l) for l in open(log)] if log else []
ok = [r for r in recs if r["status"] == "ok"]
run_s = max((r["elapsed_s"] for r in recs), default=0.0)
wall = float(t1) - float(t0)
best = min(ok, key=lambda r: r["cost"]) if ok else None
print(json.dumps({"tool": "tune", "strategy": tech, "budget": int(budget), "seed": int(seed), "rc": int(rc),
  "evaluated": len(recs), "valid": len(ok), "wall_s": wall, "run_s": run_s,
  "evals_per_s": len(recs) / wall if wall > 0 else None,
  "compile_s": sum(r["prepare_s"] for r in recs), "benchmark_s": sum(r["run_s"] for r in recs),
  "best_ms": best["cost"] * 1e3 if best else None, "best": best["config"] if best else None}))
PY
      k="$out/kt_${theirs}_b${budget}_s${seed}"
      python3 "$here/kt_t1.py" "$t1" "$theirs" "$budget" "$seed" "$k.results.json" > "$k.txt" 2>&1
      tail -1 "$k.txt" > "$k.json"
      rows+=("$d.json" "$k.json")
    done
  done
done
python3 - "${rows[@]}" <<'PY' | tee "$out/summary.md"
import json, sys
print("| tool | strategy | budget | seed | evaluated (valid) | wall s | evaluations/s | compile s | benchmark s | best ms |")
print("|---|---|---|---|---|---|---|---|---|---|")
by = {}
for p in sys.argv[1:]:
    try:
        s = json.load(open(p))
    except Exception as e:
        print(f"| {p} | failed to read: {e} |||||||||"); continue
    fmt = lambda v, f: (f.format(v) if isinstance(v, (int, float)) else "-")
    print(f"| {s['tool']} | {s['strategy']} | {s['budget']} | {s['seed']} | {s['evaluated']} ({s['valid']}) | "
          f"{fmt(s['wall_s'], '{:.1f}')} | {fmt(s['evals_per_s'], '{:.2f}')} | {fmt(s.get('compile_s'), '{:.1f}')} | "
          f"{fmt(s.get('benchmark_s'), '{:.1f}')} | {fmt(s['best_ms'], '{:.4f}')} |")
    by.setdefault((s["tool"], s["strategy"], s["budget"]), []).append(s)
print()
print("| tool | strategy | budget | mean evaluations/s | mean best ms | runs |")
print("|---|---|---|---|---|---|")
for (tool, strat, b), ss in sorted(by.items()):
    eps = [s["evals_per_s"] for s in ss if s.get("evals_per_s")]
    best = [s["best_ms"] for s in ss if s.get("best_ms")]
    m = lambda v: sum(v) / len(v) if v else float("nan")
    print(f"| {tool} | {strat} | {b} | {m(eps):.2f} | {m(best):.4f} | {len(ss)} |")
PY
