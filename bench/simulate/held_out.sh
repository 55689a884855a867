#!/usr/bin/env bash
# Held-out figures: tune's techniques (the default frozen as it is) and Kernel Tuner 1.5.0's
# strategies on recordings made after the default was chosen (bench/simulate/recordings,
# see its README), then the cross-validation over the training spaces and those together.
#
#   bench/simulate/held_out.sh run       # tune's and Kernel Tuner's runs on the recordings
#                                        # (out/held_out/*.jsonl; Kernel Tuner's resumable)
#   bench/simulate/held_out.sh report    # the tables: out/held_out/held_out.md (the
#                                        # recordings alone), out/held_out/all.md (training
#                                        # and held-out spaces: the cross-validation)
#   bench/simulate/held_out.sh pack      # the trajectories into data/held_out_*.csv.{gz,xz}
#   REPORT_ONLY=1 bench/simulate/held_out.sh report   # the tables from the committed data
#
# Environment: SEEDS (both tools, default 20), KT_JOBS (default 2), TUNE_HELD_OUT (the
# folder of held-out recordings, default bench/simulate/recordings), TUNE_SIM_DATA (the
# training spaces, see data_dir.sh), TUNE_SIM_TECHNIQUES (tune's techniques to run; default
# every candidate of the cross-validation).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
held="$(cd "${TUNE_HELD_OUT:-$here/recordings}" && pwd)"
train="$("$here/data_dir.sh")"
seeds="${SEEDS:-20}"
out="$here/out/held_out"
mkdir -p "$out"
bench() { (cd "$root" && cargo bench -p tune-runtime --bench simulate -- "$@"); }

# Every space, training and held out, under one folder (links), so that a space has the
# same name (its path below the folder) in every table and trajectory file.
all="$out/all_spaces"
rm -rf "$all"
for src in "$train" "$held"; do
  (cd "$src" && find -L . \( -name '*.json' -o -name '*.json.gz' \) -type f) | while read -r f; do
    if [ -e "$all/$f" ]; then
      echo "held_out: $f is in both $train and $held; rename the recording" >&2
      exit 1
    fi
    mkdir -p "$all/$(dirname "$f")"
    ln -s "$src/$f" "$all/$f"
  done
done

case "${1:-}" in
run)
  if [ ! -x "$here/.venv/bin/python" ]; then
    python3 -m venv "$here/.venv"
    "$here/.venv/bin/pip" install -q -r "$here/requirements.txt"
  fi
  # In the background: Kernel Tuner takes longer than tune.
  "$here/.venv/bin/python" "$here/run_kernel_tuner.py" "$held" "$out/kernel_tuner.jsonl" \
    --seeds "$seeds" --jobs "${KT_JOBS:-2}" &
  kt=$!
  rm -f "$out/tune.jsonl"  # `run` appends
  TUNE_SIM_DATA="$held" TUNE_SIM_SEEDS="$seeds" bench run "$out/tune.jsonl"
  wait "$kt"
  ;;
report)
  if [ "${REPORT_ONLY:-0}" = 1 ]; then
    python3 "$here/pack.py" unpack "$here/data/held_out_tune" "$out/tune.jsonl"
    python3 "$here/pack.py" unpack "$here/data/held_out_kernel_tuner" "$out/kernel_tuner.jsonl"
  fi
  # The recordings alone: nothing in them was seen when the default was chosen.
  TUNE_SIM_DATA="$held" TUNE_SIM_REPORT_SEEDS="$seeds" \
    bench report "$out/tune.jsonl" "$out/kernel_tuner.jsonl" "$out/held_out.md"
  # Training and held-out spaces together: the committed trajectories and the new ones.
  python3 "$here/pack.py" unpack "$here/data/tune" "$out/all_tune.jsonl"
  python3 "$here/pack.py" unpack "$here/data/kernel_tuner" "$out/all_kernel_tuner.jsonl"
  cat "$out/tune.jsonl" >> "$out/all_tune.jsonl"
  cat "$out/kernel_tuner.jsonl" >> "$out/all_kernel_tuner.jsonl"
  TUNE_SIM_DATA="$all" TUNE_SIM_REPORT_SEEDS="$seeds" \
    bench report "$out/all_tune.jsonl" "$out/all_kernel_tuner.jsonl" "$out/all.md"
  echo "held_out: tables in $out/held_out.md and $out/all.md" >&2
  ;;
pack)
  python3 "$here/pack.py" pack "$out/tune.jsonl" "$here/data/held_out_tune"
  python3 "$here/pack.py" pack "$out/kernel_tuner.jsonl" "$here/data/held_out_kernel_tuner"
  ;;
*)
  echo "usage: $0 run|report|pack (see the top of the script)" >&2
  exit 2
  ;;
esac
