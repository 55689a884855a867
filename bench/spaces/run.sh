#!/usr/bin/env bash
# Builds every space of ../shared/bench/spaces.md with tune and with the Python peers (pyATF,
# Kernel Tuner, brute force), side by side in one invocation, and writes RESULTS.md here.
#
#   bash bench/spaces/run.sh                      # all spaces, 3 repetitions
#   bash bench/spaces/run.sh --reps 1 --timeout 120 --spaces S1_saxpy_N1024 S5_cltune_gemm
#
# Extra arguments go to the peers' driver (../shared/bench/peers/bench.py). The peers'
# virtual environment is created beside this script (.venv, git-ignored) on first use.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
peers=${PEERS_DIR:-$repo/../shared/bench/peers}
[ -f "$peers/bench.py" ] || { echo "peers not found at $peers (set PEERS_DIR)"; exit 1; }
cargo build --release --manifest-path "$repo/Cargo.toml" --bench spaces >&2
bin=$(ls -t "$repo"/target/release/deps/spaces-* | grep -v '\.d$' | head -n 1)
export VENV=${VENV:-$here/.venv}
bash "$peers/run_all.sh" --extra-peer "tune=$bin" --out "$here/peers-results" "$@"
python3 "$here/report.py" "$peers/../spaces.md" "$here/peers-results.json" > "$here/RESULTS.md"
cat "$here/RESULTS.md"
