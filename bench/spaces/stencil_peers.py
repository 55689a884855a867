#!/usr/bin/env python3
"""Builds tune's own stencil-shaped spaces (stencil-spaces.json, same format as the shared
peers' spaces.json) with pyATF, Kernel Tuner and brute force, through the shared peers'
construction code (../shared/bench/peers/peers.py), and with tune's bench binary; every
construction in a fresh process. Prints one JSON line per run and writes a markdown table.

    python3 stencil_peers.py --tune BIN [--reps 3] [--timeout 600] [--out stencil-results]
    python3 stencil_peers.py --worker PEER SPACE      (one construction; used by the above)
    python3 stencil_peers.py --table stencil-results.json  (the table again, from the runs)
"""
import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_DIR = os.environ.get("PEERS_DIR", os.path.join(HERE, "..", "..", "..", "shared", "bench", "peers"))
SPACES = os.path.join(HERE, "stencil-spaces.json")
PY_PEERS = ["pyatf", "kerneltuner", "bruteforce"]


def load():
    with open(SPACES) as f:
        return {s["name"]: s for s in json.load(f)["spaces"]}


def worker(peer, name):
    sys.path.insert(0, PEERS_DIR)
    import peers  # noqa: E402  (the shared peers' construction code)

    space = load()[name]
    construct, count = peers.PEERS[peer](space)
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    obj = construct()
    secs = time.perf_counter() - t0
    print(json.dumps({"peer": peer, "space": name, "count": int(count(obj)), "seconds": secs,
                      "rss_before_kib": before,
                      "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def unconstrained(space):
    n = 1
    for p in space["params"]:
        if "values" in p:
            n *= len(p["values"])
        else:
            a, b, s = p["interval"]
            n *= len(range(a, b + 1, s))
    return n


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if not lines:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-200:]}"}
    return json.loads(lines[-1])


def fmt(s):
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def table(results, py_peers):
    """Markdown: each peer's median wall time, tune's wall and CPU time (every thread),
    and tune's speedup over the fastest peer."""
    peers = ["tune"] + py_peers
    lines = ["| space | valid | tune time | tune CPU | ns/valid (CPU) | "
             + " | ".join(f"{p} time" for p in py_peers)
             + " | fastest peer | ×fastest peer | ×fastest peer (CPU) |",
             "|" + "---|" * (len(py_peers) + 8)]
    for name, res in results.items():
        counts = {r["count"] for r in res.values() if r.get("count") is not None}
        t = res["tune"]
        ok = [r for r in t.get("runs", []) if "error" not in r]
        tune_s = t.get("median_s")
        cpu = [r["cpu_seconds"] for r in ok if "cpu_seconds" in r]
        tune_cpu = statistics.median(cpu) if cpu else None
        peer_times = [(res[p]["median_s"], p) for p in py_peers if res[p].get("median_s")]
        fastest = min(peer_times) if peer_times else None
        cells = [fmt(res[p].get("median_s")) if res[p].get("median_s") else (res[p].get("status") or "—")
                 for p in py_peers]
        ratio = f"{fastest[0] / tune_s:,.0f}×" if fastest and tune_s else "—"
        ratio_cpu = f"{fastest[0] / tune_cpu:,.0f}×" if fastest and tune_cpu else "—"
        nsv = f"{tune_cpu * 1e9 / t['count']:.1f}" if tune_cpu and t.get("count") else "—"
        valid = ", ".join(f"{c:,}" for c in sorted(counts)) + (" ✓ (all agree)" if len(counts) == 1 else " (DISAGREE)")
        lines.append(f"| {name} | {valid} | {fmt(tune_s)} | {fmt(tune_cpu)} | {nsv} | " + " | ".join(cells)
                     + f" | {fastest[1] if fastest else '—'} | {ratio} | {ratio_cpu} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=2)
    ap.add_argument("--table")
    ap.add_argument("--tune")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--bf-max-unconstrained", type=float, default=2e8)
    ap.add_argument("--peers", nargs="*", default=PY_PEERS)
    ap.add_argument("--out", default=os.path.join(HERE, "stencil-results"))
    a = ap.parse_args()
    if a.worker:
        worker(*a.worker)
        return
    if a.table:
        with open(a.table) as f:
            results = json.load(f)["spaces"]
        print(table(results, [p for p in next(iter(results.values())) if p != "tune"]))
        return
    spaces = load()
    py = os.path.join(os.environ.get("VENV", os.path.join(HERE, ".venv")), "bin", "python")
    results = {}
    for name, sp in spaces.items():
        results[name] = {}
        for peer in ["tune"] + a.peers:
            if peer == "bruteforce" and unconstrained(sp) > a.bf_max_unconstrained:
                results[name][peer] = {"status": "not run (Cartesian product too large)"}
                continue
            runs = []
            for _ in range(a.reps if peer == "tune" else 1):
                cmd = [a.tune, name] if peer == "tune" else [py, __file__, "--worker", peer, name]
                r = run(cmd, a.timeout)
                print(json.dumps(r), flush=True)
                runs.append(r)
                if "error" in r:
                    break
            ok = [r for r in runs if "error" not in r]
            results[name][peer] = {
                "runs": runs,
                "count": ok[0]["count"] if ok else None,
                "median_s": statistics.median(r["seconds"] for r in ok) if ok else None,
                "status": runs[-1].get("error") if not ok else None,
            }
    with open(a.out + ".json", "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "reps_tune": a.reps,
                   "spaces": results}, f, indent=1)
    text = table(results, a.peers)
    with open(a.out + ".md", "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
