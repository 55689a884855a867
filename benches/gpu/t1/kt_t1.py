"""Kernel Tuner's own T1 runner (kernel_tuner.interface.tune_kernel_T1, what `kernel_tuner
<T1.json>` calls) on a T1 file, timed, with a summary line as JSON.

Usage: python3 kt_t1.py T1.json STRATEGY BUDGET SEED OUT.json

The T1 files of benchmark_hub name no Device and no Search, which `kernel_tuner <T1.json>`
requires; they are passed here (device 0, the strategy and `max_fevals`). Kernel Tuner maps
the T1 Language `CUDA` to its PyCUDA backend; KT_LANG (default `cupy`) picks the backend
instead, for machines without PyCUDA. Nothing else is changed. KT_SIMULATE_CACHE=cache.json
replays a Kernel Tuner cache instead of running (to check this script without a GPU)."""
import json, os, sys, time
from pathlib import Path

import numpy as np
import kernel_tuner.interface as kti

t1, strategy, budget, seed, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
lang = os.environ.get("KT_LANG", "cupy")
original = kti.tune_kernel


def tune_kernel(*args, **kw):
    if str(kw.get("lang", "")).upper() == "CUDA":
        kw["lang"] = lang
    return original(*args, **kw)


kti.tune_kernel = tune_kernel
np.random.seed(seed)
t0 = time.perf_counter()
sim = os.environ.get("KT_SIMULATE_CACHE")
results, env = kti.tune_kernel_T1(
    Path(t1), device=0, strategy=strategy, strategy_options={"max_fevals": budget}, output_T4=False,
    **({"simulation_mode": True, "cache_filepath": Path(sim)} if sim else {}),
)
wall = time.perf_counter() - t0
valid = [r for r in results if isinstance(r.get("time"), (int, float))]


def total(k):
    return sum(float(r.get(k, 0.0) or 0.0) for r in results) / 1000.0


best = min(valid, key=lambda r: r["time"]) if valid else None
names = [p["Name"] for p in json.load(open(t1))["ConfigurationSpace"]["TuningParameters"]]
summary = {
    "tool": "kernel_tuner", "backend": lang, "strategy": strategy, "budget": budget, "seed": seed,
    "evaluated": len(results), "valid": len(valid), "wall_s": wall,
    "evals_per_s": len(results) / wall if wall > 0 else None,
    "compile_s": total("compile_time"), "benchmark_s": total("benchmark_time"),
    "verification_s": total("verification_time"), "framework_s": total("framework_time"),
    "strategy_s": total("strategy_time"),
    "best_ms": best["time"] if best else None,
    "best": {k: best.get(k) for k in names} if best else None,
    "device": env.get("device_name"),
}
print(json.dumps(summary))
with open(out, "w") as f:
    json.dump({"summary": summary, "results": results}, f, default=str)
