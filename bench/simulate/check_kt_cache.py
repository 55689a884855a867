#!/usr/bin/env python3
"""Checks that Kernel Tuner 1.5.0's simulation mode replays a cache file as written (by
`tune export LOG --kt-cache FILE`): the file is given to `tune_kernel(...,
simulation_mode=True)` unchanged (decompressed if gzipped: Kernel Tuner reads plain JSON),
Kernel Tuner's own reader (`read_cache`, no patch) parses it, and a brute-force run over
every recorded configuration returns each configuration's recorded time or failure, and the
simulated time is the sum of the recorded compile, verification and benchmark times.

usage: check_kt_cache.py FILE [--strategy random_sample --budget 100 --seed 0]

Prints what it compared and exits 1 on a mismatch.
"""

import argparse
import gzip
import json
import math
import os
import random
import shutil
import sys
import tempfile
import warnings


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--strategy", default="brute_force")
    ap.add_argument("--budget", type=int, default=0, help="max_fevals (0: the whole space)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import kernel_tuner
    import numpy as np
    from constraint import FunctionConstraint
    from kernel_tuner import tune_kernel

    opener = gzip.open if args.file.endswith(".gz") else open
    with opener(args.file, "rt") as f:
        text = f.read()
    doc = json.loads(text)
    keys = doc["tune_params_keys"]
    recorded = {k: v for k, v in doc["cache"].items()}
    members = {tuple(e[k] for k in keys) for e in recorded.values()}

    tmp = tempfile.mkdtemp(prefix="kt_check_")
    copy = os.path.join(tmp, "cache.json")
    with open(copy, "w") as f:
        f.write(text)  # the text as written, not re-serialised
    random.seed(args.seed)
    np.random.seed(args.seed)
    size = doc.get("problem_size", 1)
    size = tuple(size) if isinstance(size, list) else size
    options = {"max_fevals": args.budget} if args.budget else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, env = tune_kernel(
            doc["kernel_name"],
            "",
            size,
            [],
            {k: doc["tune_params"][k] for k in keys},
            # Only the recorded configurations (a brute force records every valid one).
            restrictions=[FunctionConstraint(lambda *v: v in members)],
            cache=copy,
            simulation_mode=True,
            strategy=args.strategy,
            strategy_options=options,
            quiet=True,
        )
    shutil.rmtree(tmp)

    bad = 0
    seen = set()
    charged = 0.0
    for r in results:
        key = ",".join(str(r[k]) for k in keys)
        if key in seen:
            continue
        seen.add(key)
        e = recorded.get(key)
        if e is None:
            print(f"not in the file: {key}")
            bad += 1
            continue
        charged += sum(float(e.get(k) or 0.0) for k in ("compile_time", "verification_time", "benchmark_time"))
        error = r.get("__error__")
        if isinstance(e["time"], str):
            if error is None or str(error) != e["time"]:
                print(f"{key}: recorded {e['time']}, Kernel Tuner gave {error!r} / {r.get('time')!r}")
                bad += 1
        elif error is not None or not math.isclose(r["time"], e["time"], rel_tol=1e-12):
            print(f"{key}: recorded {e['time']} ms, Kernel Tuner gave {r.get('time')!r} ({error!r})")
            bad += 1
    failed = sum(1 for k in seen if isinstance(recorded[k]["time"], str))
    sim = env.get("simulated_time")
    print(
        f"{args.file}: Kernel Tuner {kernel_tuner.__version__} ({args.strategy}) evaluated "
        f"{len(seen)} of {len(recorded)} configurations ({failed} failures) on "
        f"'{env.get('device_name')}'; {bad} mismatches; simulated time {sim} ms, recorded sum {charged:.3f} ms"
    )
    if sim is not None and not math.isclose(sim, charged, rel_tol=1e-9):
        print("the simulated time is not the sum of the recorded times")
        bad += 1
    if args.strategy == "brute_force" and len(seen) != len(recorded):
        print("a brute force did not visit every recorded configuration")
        bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
