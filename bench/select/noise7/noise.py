#!/usr/bin/env python3
"""How noisy are the performance matrix's cells? (select7, item 1)

No cell is measured twice within a GPU call (a later seed reads the first seed's cells),
but every call compiles the same pool (the pool is sampled with a fixed seed), so the
calls of one backend on the same H100 measured the same cells independently. This
compares them cell by cell:

  python3 bench/select/noise7/noise.py stats A B [A B ...]
      cell-to-cell log ratios between two calls (all cells, and the cells within 5% of a
      shape's best), hiccups (a cell > 20% slower in one call than in the other), and
      what the noise does to the per-shape optimum: call A's winner re-measured in call
      B, and as a share of B's optimum (a perfect label learnt from A, scored on B).

  python3 bench/select/noise7/noise.py reference A B C [D ...]
      on the cells every call measured: each call's per-shape winner as a share of the
      optimum of the others' per-cell median (a reference that no single call's noise
      moves much), and how many of its cells lie > 20% from that median.

  python3 bench/select/noise7/noise.py remeasured DIR [DIR ...]
      select7's runs re-measure each shape's best cells twice more, interleaved, within
      the call: each cell's first time against the median of its three, and the
      per-shape winner on first times as a share of the optimum on re-measured ones.

  python3 bench/select/noise7/noise.py clean A B OUT
      A's run.json.gz with every cell that B also measured replaced by the smaller of the
      two times (a slow hiccup in one call is removed; B's times otherwise unused), into
      OUT/run.json.gz, for `select_gemm analyse OUT`.

Paths are run directories (holding run.json.gz, or run.json before session 9), relative
to the repository root. Python's standard library only.
"""
import gzip
import json
import math
import os
import sys


def load(d):
    plain = os.path.join(d, "run.json")
    if os.path.exists(plain):
        with open(plain) as f:
            r = json.load(f)
    else:
        with gzip.open(os.path.join(d, "run.json.gz"), "rt") as f:
            r = json.load(f)
    m = r["matrix"]
    keys = [i["key"] for i in m["inputs"]]
    cfgs = [json.dumps(c, sort_keys=True) for c in m["configs"]]
    cells = {}
    for i, c, v in m["cells"]:
        cells[(keys[i], cfgs[c])] = v
    for i, c, v in r["scoring"]:
        cells[(keys[i], cfgs[c])] = v
    return r, keys, cfgs, cells


def quantile(sorted_values, q):
    return sorted_values[int(q * (len(sorted_values) - 1))]


def stats(a, b):
    _, _, _, A = load(a)
    _, _, _, B = load(b)
    common = [k for k in A if k in B and A[k] > 0 and B[k] > 0]
    d = [math.log(B[k] / A[k]) for k in common]
    med = sorted(d)[len(d) // 2]
    dev = sorted(abs(x - med) for x in d)
    slow_b = sum(1 for x in d if x > math.log(1.2))
    slow_a = sum(1 for x in d if x < -math.log(1.2))
    shapes = {}
    for k in common:
        shapes.setdefault(k[0], []).append((A[k], B[k], k[1]))
    bias, cross, same, near = [], [], 0, []
    for rows in shapes.values():
        wa = min(rows)
        wb = min(rows, key=lambda x: x[1])
        bias.append(math.log(wa[1] / wa[0]))
        cross.append(math.log(wb[1] / wa[1]))
        same += wa[2] == wb[2]
        near += [math.log(y / x) - med for x, y, _ in rows if x <= 1.05 * wa[0]]
    near = sorted(abs(x) for x in near)
    n = len(shapes)
    print(f"{a} -> {b}: {len(common)} cells in both, {n} shapes")
    print(
        f"  all cells: median shift {100 * med:+.2f}%, |deviation| median {100 * quantile(dev, .5):.2f}%"
        f" p90 {100 * quantile(dev, .9):.2f}% p99 {100 * quantile(dev, .99):.2f}%;"
        f" > 20% slower in B {slow_b} ({100 * slow_b / len(d):.2f}%), in A {slow_a} ({100 * slow_a / len(d):.2f}%)"
    )
    print(
        f"  cells within 5% of the shape's best in A ({len(near)}): |deviation| median"
        f" {100 * quantile(near, .5):.2f}% p90 {100 * quantile(near, .9):.2f}% p99 {100 * quantile(near, .99):.2f}%"
    )
    print(
        f"  A's winner re-measured in B: {100 * (math.exp(sorted(bias)[n // 2]) - 1):+.2f}% median,"
        f" {100 * (math.exp(sum(bias) / n) - 1):+.2f}% geometric mean; same winner on {same} of {n} shapes;"
        f" A's winner as a share of B's optimum: {100 * math.exp(sum(cross) / n):.2f}% (geometric mean),"
        f" below 90% on {sum(1 for x in cross if x < math.log(0.9))} shapes"
    )


def reference(dirs):
    runs = [load(d)[3] for d in dirs]
    common = set.intersection(*[set(r) for r in runs])
    shapes = {}
    for k in common:
        shapes.setdefault(k[0], []).append(k)
    print(f"{len(common)} cells measured by all {len(dirs)} calls, {len(shapes)} shapes")
    for n, d in enumerate(dirs):
        own = runs[n]
        others = [r for j, r in enumerate(runs) if j != n]
        ref = {k: sorted(r[k] for r in others)[(len(others) - 1) // 2] for k in common}
        share = []
        for ks in shapes.values():
            win = min(ks, key=lambda k: own[k])
            share.append(math.log(min(ref[k] for k in ks) / ref[win]))
        slow = sum(1 for k in common if own[k] > 1.2 * ref[k])
        fast = sum(1 for k in common if own[k] < ref[k] / 1.2)
        print(
            f"  {d}: its winner at {100 * math.exp(sum(share) / len(share)):.2f}% of the reference optimum"
            f" (below 90% on {sum(1 for x in share if x < math.log(0.9))} shapes); cells > 20% slower than"
            f" the reference {100 * slow / len(common):.2f}%, > 20% faster {100 * fast / len(common):.2f}%"
        )


def remeasured(d):
    r, _, _, _ = load(d)
    first = {(i, c): v for i, c, v in r["matrix"]["cells"]}
    first.update({(i, c): v for i, c, v in r["scoring"]})
    again = {(i, c): v for i, c, v in r.get("rescore", [])}
    keys = [k for k in again if k in first and first[k] > 0]
    dev = sorted(abs(math.log(again[k] / first[k])) for k in keys)
    fast = sum(1 for k in keys if first[k] < again[k] / 1.2)
    slow = sum(1 for k in keys if first[k] > 1.2 * again[k])
    rows = {}
    for (i, c), v in first.items():
        rows.setdefault(i, {})[c] = v
    changed, share = 0, []
    for i, row in rows.items():
        new = {c: again.get((i, c), v) for c, v in row.items()}
        a, b = min(row, key=row.get), min(new, key=new.get)
        changed += a != b
        share.append(math.log(new[b] / new[a]))
    print(
        f"{d}: {len(keys)} cells re-measured; first time against the median of three: |deviation| median"
        f" {100 * quantile(dev, .5):.2f}% p90 {100 * quantile(dev, .9):.2f}% p99 {100 * quantile(dev, .99):.2f}%"
        f" max {100 * (math.exp(dev[-1]) - 1):.0f}%; first > 20% faster {fast}, > 20% slower {slow};"
        f" winner changed on {changed} of {len(rows)} shapes; the first-time winner at"
        f" {100 * math.exp(sum(share) / len(share)):.2f}% of the re-measured optimum (worst {100 * math.exp(min(share)):.1f}%)"
    )


def clean(a, b, out):
    r, keys, cfgs, _ = load(a)
    _, _, _, B = load(b)
    replaced = 0

    def fix(i, c, v):
        nonlocal replaced
        w = B.get((keys[i], cfgs[c]))
        if w is not None and 0 < w < v:
            replaced += 1
            return w
        return v

    r["matrix"]["cells"] = [[i, c, fix(i, c, v)] for i, c, v in r["matrix"]["cells"]]
    r["scoring"] = [[i, c, fix(i, c, v)] for i, c, v in r["scoring"]]
    os.makedirs(out, exist_ok=True)
    with gzip.GzipFile(os.path.join(out, "run.json.gz"), "wb", mtime=0) as f:
        f.write(json.dumps(r).encode())
    print(f"{out}/run.json.gz: {replaced} cells of {a} replaced by {b}'s smaller time")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["stats"] and len(args) >= 3 and len(args) % 2 == 1:
        for i in range(1, len(args), 2):
            stats(args[i], args[i + 1])
    elif args[:1] == ["reference"] and len(args) >= 4:
        reference(args[1:])
    elif args[:1] == ["remeasured"] and len(args) >= 2:
        for d in args[1:]:
            remeasured(d)
    elif args[:1] == ["clean"] and len(args) == 4:
        clean(*args[1:])
    else:
        sys.exit(__doc__)
