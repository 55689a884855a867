#!/usr/bin/env bash
# Prints the folder of recorded spaces the simulation bench reads: $TUNE_SIM_DATA if set,
# else shared/data/tuning-caches/benchmark_hub beside the repository or, in a git worktree
# (whose folder may be anywhere), beside the main checkout. Fails, saying what to set,
# when there is none.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -n "${TUNE_SIM_DATA:-}" ]; then
  if [ ! -d "$TUNE_SIM_DATA" ]; then
    echo "TUNE_SIM_DATA=$TUNE_SIM_DATA is not a folder; point it at the recorded spaces" \
      "(shared/data/tuning-caches/benchmark_hub)" >&2
    exit 1
  fi
  echo "$TUNE_SIM_DATA"
  exit 0
fi
rel=shared/data/tuning-caches/benchmark_hub
tried=("$root/../$rel")
# The main checkout of a worktree: the folder holding the common git directory.
if common="$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)"; then
  tried+=("$(dirname "$common")/../$rel")
fi
for d in "${tried[@]}"; do
  if [ -d "$d" ]; then
    (cd "$d" && pwd)
    exit 0
  fi
done
echo "no recorded spaces at ${tried[*]}; set TUNE_SIM_DATA to the folder of Kernel Tuner" \
  "cache files (shared/data/tuning-caches/benchmark_hub)" >&2
exit 1
