#!/usr/bin/env bash
# Round 10's cross-validation over 11 spaces (RESULTS.md, "Choosing the default without
# peeking", round 10): the 8 Kernel Tuner caches of the training data, the H200 and H100
# convolutions and the H200 matmul (bench/simulate/recordings); the default, `local` and
# round 10's eight candidates; Kernel Tuner's 16 strategies beside them.
#
#   bench/simulate/cv10.sh           # runs what the committed trajectories lack, then the report
#
# Writes under bench/simulate/out/cv10/: train/ (the spaces, links), the runs, cv10.md.
# Environment: SEEDS (default 20), TUNE_SIM_DATA (the training spaces, see data_dir.sh).
# About 20 minutes of tune's runs and 3 of Kernel Tuner's on the shared 2-core machine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
hub="$("$here/data_dir.sh")"
seeds="${SEEDS:-20}"
out="$here/out/cv10"
train="$out/train"
bench() { (cd "$root" && cargo bench -p tune-runtime --bench simulate -- "$@"); }

# The 11 spaces under one folder, at the names the committed trajectories use.
rm -rf "$train" "$out/h100"
hub_spaces="convolution_milo/A100.json.gz convolution_milo/A4000.json.gz
  convolution_milo_legacy/mi50.json.gz dedispersion_milo/A100.json.gz
  legacy/convolution/RTX_2080_Ti.json.gz legacy/gemm/RTX_2080_Ti.json.gz
  legacy/pnpoly/RTX_2080_Ti.json.gz legacy/pnpoly/RTX_Titan.json.gz"
for f in $hub_spaces; do
  mkdir -p "$train/$(dirname "$f")" && ln -s "$hub/$f" "$train/$f"
done
for f in convolution_milo/H200.json.gz convolution_milo/H100.json.gz kt_matmul/H200.json.gz; do
  mkdir -p "$train/$(dirname "$f")" && ln -s "$here/recordings/$f" "$train/$f"
done
mkdir -p "$out/h100/convolution_milo"
ln -s "$here/recordings/convolution_milo/H100.json.gz" "$out/h100/convolution_milo/"

s='surrogate[init=10;spread=2;design=2;align=1]'
cands="$s>bandit(1.0,100,20),$s>local0(1.0,100),$s>local0(1.0,100,20),$s>local0(1.0,100,10)"
cands="$cands,$s>local0(0.5,100),$s>local0(1.0,30),$s|local0(0.25)>bandit(1.0,100),$s|local0(0.5)>bandit(1.0,100)"
TUNE_SIM_DATA="$train" TUNE_SIM_SEEDS="$seeds" TUNE_SIM_TECHNIQUES="$cands" bench run "$out/cand.jsonl"
# The default and `local` on the H100 (the committed trajectories have the other 10 spaces).
TUNE_SIM_DATA="$out/h100" TUNE_SIM_SEEDS="$seeds" TUNE_SIM_TECHNIQUES='hybrid,local' bench run "$out/h100_tune.jsonl"
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install -q -r "$here/requirements.txt"
fi
"$here/.venv/bin/python" "$here/run_kernel_tuner.py" "$out/h100" "$out/h100_kt.jsonl" --seeds "$seeds" --jobs 1

for p in tune kernel_tuner held_out_tune held_out_kernel_tuner; do
  python3 "$here/pack.py" unpack "$here/data/$p" "$out/$p.jsonl"
done
# Keep the 11 spaces; of tune's techniques the default, `local` and the candidates.
python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
spaces = {
    "convolution_milo/A100.json.gz", "convolution_milo/A4000.json.gz",
    "convolution_milo_legacy/mi50.json.gz", "dedispersion_milo/A100.json.gz",
    "legacy/convolution/RTX_2080_Ti.json.gz", "legacy/gemm/RTX_2080_Ti.json.gz",
    "legacy/pnpoly/RTX_2080_Ti.json.gz", "legacy/pnpoly/RTX_Titan.json.gz",
    "convolution_milo/H200.json.gz", "convolution_milo/H100.json.gz", "kt_matmul/H200.json.gz",
}
def copy(ins, dst, techs):
    with open(dst, "w") as o:
        for f in ins:
            for l in open(f"{out}/{f}.jsonl"):
                r = json.loads(l)
                if r["space"] in spaces and (techs is None or r["technique"] in techs):
                    o.write(l)
# The default and `local` from the committed runs and the H100 run, the candidates from this
# script's runs.
copy(["tune", "held_out_tune", "h100_tune"], f"{out}/tune11.jsonl", {"hybrid", "local"})
with open(f"{out}/tune11.jsonl", "a") as o:
    o.write(open(f"{out}/cand.jsonl").read())
copy(["kernel_tuner", "held_out_kernel_tuner", "h100_kt"], f"{out}/kt11.jsonl", None)
EOF
TUNE_SIM_DATA="$train" TUNE_SIM_REPORT_SEEDS="$seeds" bench report "$out/tune11.jsonl" "$out/kt11.jsonl" "$out/cv10.md"
echo "cv10: the tables in $out/cv10.md" >&2
