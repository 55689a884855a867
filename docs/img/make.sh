#!/usr/bin/env bash
# Regenerates the plots shown in the README from recorded data: three techniques replayed
# on the brute-forced convolution_milo space of an A100 (shared/data beside the repository),
# with the median best-so-far of random search on the same space as the baseline.
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${TUNE_SHARED_DATA:-../shared/data}
cache=$data/tuning-caches/benchmark_hub/convolution_milo/A100.json.gz
tmp=$(mktemp -d)
cargo run -q --release -p tune-cli -- sim "$cache" --technique random,genetic,bandit --budget 300 --log "$tmp/sim.jsonl"
cargo run -q --release -p tune-cli -- plot "$tmp/sim.jsonl" --baseline "$cache" --out "$tmp/plots" --format png
for f in best_so_far_evaluations best_so_far_time costs cost_vs_block_size_x; do
  cp "$tmp/plots/$f.png" docs/img/
done
(cd "$tmp" && "$OLDPWD/target/release/tune" watch --once --width 92 sim.jsonl) > docs/img/watch.txt
rm -rf "$tmp"
