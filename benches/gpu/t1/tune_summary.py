"""The summary line (JSON) of one `tune run`, from its JSON-lines log and the wall time run.sh
measured around the process, with where the time went:

- setup_s: before the tuner started and after it ended (process start, opening the device,
  filling the arguments, writing the T4 file): wall - the log's last elapsed_s;
- search_s: the search (the last search record's elapsed_s);
- remeasure_s: the finalists measured again after the search;
- compile_s / benchmark_s: the sums of the records' prepare_s (compiling, on several threads
  at once) and run_s (on the GPU, one at a time), over the search's records;
- compiled: search records whose preparation took over 20 ms (NVRTC ran: it takes a tenth
  of a second and more here; loading a kernel from the compile cache takes a few ms, and a
  configuration rejected before compiling less).

Usage: python3 tune_summary.py LOG T0 T1 RC NAME BUDGET SEED"""
import json, sys

log, t0, t1, rc, name, budget, seed = sys.argv[1:]
recs = [json.loads(l) for l in open(log)] if log else []
search = [r for r in recs if r.get("remeasured") is None]
ok = [r for r in search if r["status"] == "ok"]
wall = float(t1) - float(t0)
end = max((r["elapsed_s"] for r in recs), default=0.0)
search_end = max((r["elapsed_s"] for r in search), default=0.0)
best = min(ok, key=lambda r: r["cost"]) if ok else None
print(json.dumps({
    "tool": "tune", "strategy": name, "technique": search[0]["technique"] if search else None,
    "budget": int(budget), "seed": int(seed), "rc": int(rc),
    "evaluated": len(search), "valid": len(ok), "wall_s": wall,
    "evals_per_s": len(search) / wall if wall > 0 else None,
    "search_evals_per_s": len(search) / search_end if search_end > 0 else None,
    "setup_s": wall - end, "search_s": search_end, "remeasure_s": end - search_end,
    "compile_s": sum(r["prepare_s"] for r in search),
    "benchmark_s": sum(r["run_s"] for r in search),
    "compiled": sum(1 for r in search if r["prepare_s"] > 0.02),
    "best_ms": best["cost"] * 1e3 if best else None, "best": best["config"] if best else None}))
