"""Tables the JSON lines of bench/spaces/quiet.sh against cppATF's published times (the
`cppATF (pub.)` column of RESULTS.md's first table). Usage: quiet_table.py RESULTS.md RUNS"""
import json, re, statistics, sys

pub = {}
for line in open(sys.argv[1]).read().splitlines():
    c = [x.strip() for x in line.split("|")]
    if len(c) > 15 and c[1].startswith("S") and c[1] not in pub:
        m = re.match(r"([\d.]+) (µs|ms|s)", c[14])
        if m:
            pub[c[1]] = float(m.group(1)) * {"µs": 1e-6, "ms": 1e-3, "s": 1}[m.group(2)]
runs = {}
for line in open(sys.argv[2]):
    if line.startswith("{"):
        d = json.loads(line)
        runs.setdefault(d["space"], []).append(d)


def f(t):
    return f"{t * 1e6:.0f} µs" if t < 1e-3 else (f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.2f} s")


print("| space | valid | first process | median of 3 processes | CPU (median) | bytes/config | cppATF (published) | vs cppATF (median) | goal (10× or < 1 ms) |")
print("|---|---|---|---|---|---|---|---|---|")
for s in sorted(runs):
    r = runs[s]
    w = [x["seconds"] for x in r]
    med = statistics.median(w)
    cpu = statistics.median(x["cpu_seconds"] for x in r)
    p = pub.get(s)
    ok = med < 1e-3 or (p is not None and p / med >= 10)
    print(f"| {s} | {r[0]['count']:,} | {f(w[0])} | {f(med)} | {f(cpu)} | "
          f"{r[0]['bytes'] / max(r[0]['count'], 1):.2f} | {f(p) if p else '—'} | "
          f"{f'{p / med:.1f}×' if p else '—'} | {'met' if ok else 'see stencil-results.md' if not p else 'not met'} |")
