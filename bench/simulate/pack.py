#!/usr/bin/env python3
"""Packs trajectories (the JSON lines of `run_kernel_tuner.py` and of tune's
`cargo bench -p tune-runtime --bench simulate -- run`) into two compressed CSV files, and back.

A configuration costs the same in every run on a space (its recorded time and charged
time), so each distinct `(time_ms, charged_ms)` pair of a space is stored once and the runs
list ids into that table:

    PREFIX.evals.csv.gz   space,id,time_ms,charged_ms        (time_ms empty: a failure)
    PREFIX.runs.csv.xz    tool,technique,space,seed,budget,wall_s,ids   (ids space-separated,
                          in evaluation order)

The runs are xz-compressed: they are most of the bytes (millions of ids), and xz keeps them
at two thirds of gzip's size, which keeps the repository small enough to travel to the GPU
machine. Packs written before session 9 (PREFIX.runs.csv.gz) are still read.

Values are written with Python's shortest round-trip representation, so unpacking gives
back the same numbers.

usage: pack.py pack IN.jsonl PREFIX       # writes PREFIX.evals.csv.gz, PREFIX.runs.csv.xz
       pack.py unpack PREFIX OUT.jsonl
"""

import csv
import gzip
import io
import json
import lzma
import os
import sys
import tempfile


def _write(path, rows, header):
    # Atomically: a temporary file beside the target, then renamed.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o644)
    # gzip with mtime=0, or xz: the same input gives the same bytes.
    if path.endswith(".xz"):
        compressed = lambda raw: lzma.LZMAFile(raw, mode="wb", preset=6)
    else:
        compressed = lambda raw: gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0)
    with open(tmp, "wb") as raw, compressed(raw) as gz:
        text = io.TextIOWrapper(gz, encoding="utf-8", newline="")
        w = csv.writer(text, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        text.flush()
        text.detach()
    os.replace(tmp, path)


def _num(x):
    return "" if x is None else repr(float(x))


def pack(src, prefix):
    tables = {}  # space -> {(time, charged): id}
    runs = []
    with open(src) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a line cut short by an interrupted run
            table = tables.setdefault(r["space"], {})
            ids = []
            for t, c in r["evals"]:
                key = (None if t is None else float(t), float(c))
                ids.append(table.setdefault(key, len(table)))
            runs.append((r["tool"], r["technique"], r["space"], r["seed"], r["budget"],
                         "" if r.get("wall_s") is None else repr(float(r["wall_s"])),
                         " ".join(map(str, ids))))
    evals = [(space, i, _num(t), _num(c))
             for space, table in sorted(tables.items())
             for (t, c), i in sorted(table.items(), key=lambda kv: kv[1])]
    _write(prefix + ".evals.csv.gz", evals, ["space", "id", "time_ms", "charged_ms"])
    _write(prefix + ".runs.csv.xz", runs,
           ["tool", "technique", "space", "seed", "budget", "wall_s", "ids"])
    old = prefix + ".runs.csv.gz"
    if os.path.exists(old):
        os.remove(old)  # an older pack's runs, which _open_runs would otherwise read first
    print(f"pack: {len(runs)} runs, {len(evals)} distinct evaluations -> {prefix}.*.csv.{{gz,xz}}",
          file=sys.stderr)


def _open_runs(prefix):
    old = prefix + ".runs.csv.gz"
    if os.path.exists(old):
        return gzip.open(old, "rt", newline="")
    return lzma.open(prefix + ".runs.csv.xz", "rt", newline="")


def unpack(prefix, dst):
    tables = {}
    with gzip.open(prefix + ".evals.csv.gz", "rt", newline="") as f:
        for row in csv.DictReader(f):
            t = None if row["time_ms"] == "" else float(row["time_ms"])
            tables.setdefault(row["space"], {})[int(row["id"])] = [t, float(row["charged_ms"])]
    n = 0
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(dst)), suffix=".tmp")
    os.chmod(tmp, 0o644)
    with os.fdopen(fd, "w") as out, _open_runs(prefix) as f:
        for row in csv.DictReader(f):
            table = tables[row["space"]]
            r = {"tool": row["tool"], "technique": row["technique"], "space": row["space"],
                 "seed": int(row["seed"]), "budget": int(row["budget"])}
            if row["wall_s"] != "":
                r["wall_s"] = float(row["wall_s"])
            r["evals"] = [table[int(i)] for i in row["ids"].split()]
            out.write(json.dumps(r, separators=(",", ":")) + "\n")
            n += 1
    os.replace(tmp, dst)
    print(f"unpack: {n} runs -> {dst}", file=sys.stderr)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("pack", "unpack"):
        sys.exit(__doc__)
    (pack if sys.argv[1] == "pack" else unpack)(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
