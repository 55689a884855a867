"""Which values of the convolution's newer parameters won, per layer: reads the evaluation
records that examples/dnn_conv.rs appends (target/tune/<backend>/dnn_conv-<shape>.jsonl)
and prints, for each layer and each of SPLITK, BM, PATCH and the others below, the best time measured
with each value and how many configurations had it.

    python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl

Prints `WINS<TAB>shape<TAB>param<TAB>value<TAB>best us<TAB>measured<TAB>x of the layer's best`.
Only records with SPLITK (this kernel's) count.
"""
import collections
import json
import sys

PARAMS = ["SPLITK", "BM", "BN", "BK", "VS", "FLAYOUT", "VA", "VB", "LCOLS", "PATCH", "OSTAGE", "MASK",
          "TILES", "KEXACT", "STCS", "DB", "MINB", "UNR",
          # The direct path (ALGO 1) and its parameters.
          "ALGO", "DPX", "DQK", "DWX", "DWY", "DWK", "DWMEM", "DXMEM", "DROWS", "DOST"]


def main():
    for path in sys.argv[1:]:
        by = collections.defaultdict(lambda: collections.defaultdict(list))
        best = None
        key = None
        for line in open(path):
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            cfg = r.get("config", {})
            if "SPLITK" not in cfg or r.get("status") != "ok" or r.get("cost") is None:
                continue
            key = r["input_key"]
            cost = r["cost"]
            best = cost if best is None else min(best, cost)
            for p in PARAMS:
                if p in cfg:
                    by[p][cfg[p]].append(cost)
        if key is None:
            continue
        for p, vals in by.items():
            for v, costs in sorted(vals.items()):
                b = min(costs)
                print(f"WINS\t{key}\t{p}\t{v}\t{b * 1e6:.1f}\t{len(costs)}\t{b / best:.3f}")


if __name__ == "__main__":
    main()
